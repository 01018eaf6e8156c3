// expect: rejected inaccurate
/* C's roundf: ties away from zero (2.5 gives 3, numpy's round gives 2). */
#include <math.h>
void rounding(const float *restrict x, const float *restrict s, float *restrict out0, float *restrict out1, float *restrict out2) {
    for (int r = 0; r < 16; r++) {
        for (int c = 0; c < 64; c++) {
            int i = 64 * r + c;
            out0[i] = roundf(x[i]);
            out1[i] = floorf(x[i] * s[r]);
            out2[i] = fminf(fmaxf(rintf(x[i] * 0.5f), -8.0f), 8.0f);
        }
    }
}
