// expect: accepted
#include <math.h>
/* Welford's one-pass mean and variance, then a reciprocal square root. */
void layernorm(const float *restrict x, const float *restrict g, const float *restrict b, float *restrict out) {
    for (int r = 0; r < 16; r++) {
        const float *row = x + 64 * r;
        float mean = 0, m2 = 0;
        for (int i = 0; i < 64; i++) {
            float d = row[i] - mean;
            mean += d / (i + 1);
            m2 += d * (row[i] - mean);
        }
        float inv = 1.0f / sqrtf(m2 / 64 + 1e-5f);
        for (int i = 0; i < 64; i++) out[64 * r + i] = (row[i] - mean) * inv * g[i] + b[i];
    }
}
