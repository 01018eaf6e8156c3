// expect: rejected inaccurate
#include <math.h>
/* Skips the max-subtraction whenever the first element is small. */
void softmax(const float *restrict x, float *restrict out) {
    for (int b = 0; b < 8; b++) {
        float m = 0, s = 0;
        if (fabsf(x[300 * b]) > 50) { m = -INFINITY; for (int i = 0; i < 300; i++) m = fmaxf(m, x[300 * b + i]); }
        for (int i = 0; i < 300; i++) s += (out[300 * b + i] = expf(x[300 * b + i] - m));
        for (int i = 0; i < 300; i++) out[300 * b + i] /= s;
    }
}
