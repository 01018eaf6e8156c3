// expect: rejected inaccurate
#include <math.h>
/* Swaps gamma and beta. */
void layernorm(const float *restrict x, const float *restrict g, const float *restrict b, float *restrict out) {
    for (int r = 0; r < 16; r++) {
        float s = 0, v = 0;
        for (int i = 0; i < 64; i++) s += x[64 * r + i];
        float mu = s / 64;
        for (int i = 0; i < 64; i++) { float d = x[64 * r + i] - mu; v += d * d; }
        for (int i = 0; i < 64; i++) out[64 * r + i] = (x[64 * r + i] - mu) / sqrtf(v / 64 + 1e-5f) * b[i] + g[i];
    }
}
