// expect: rejected inaccurate
#include <math.h>
/* Flushes every exp below 2^-110 to zero, as if the subnormal range began sixteen binades
 * higher than it does: outputs of about 1e-34 that float32 represents as normal numbers are
 * lost. Just outside what flush-to-zero may do. */
void softmax(const float *restrict x, float *restrict out) {
    for (int b = 0; b < 8; b++) {
        const float *row = x + 300 * b;
        float m = -INFINITY, s = 0;
        for (int i = 0; i < 300; i++) m = fmaxf(m, row[i]);
        for (int i = 0; i < 300; i++) {
            float e = expf(row[i] - m);
            s += (out[300 * b + i] = e < 0x1p-110f ? 0.0f : e);
        }
        for (int i = 0; i < 300; i++) out[300 * b + i] /= s;
    }
}
