// expect: accepted
#include <math.h>
/* Online softmax: one pass keeps a running max and a rescaled running sum. */
void softmax(const float *restrict x, float *restrict out) {
    for (int b = 0; b < 8; b++) {
        const float *row = x + 300 * b;
        float m = -INFINITY, s = 0;
        for (int i = 0; i < 300; i++) {
            float v = row[i];
            if (v > m) { s = s * expf(m - v) + 1.0f; m = v; }
            else s += expf(v - m);
        }
        for (int i = 0; i < 300; i++) out[300 * b + i] = expf(row[i] - m) / s;
    }
}
