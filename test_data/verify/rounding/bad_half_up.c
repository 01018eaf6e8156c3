// expect: rejected inaccurate
/* floor(x + 0.5): rounds half up, so 2.5 gives 3 (numpy: 2) and -2.5 gives -2. */
#include <math.h>
void rounding(const float *restrict x, const float *restrict s, float *restrict out0, float *restrict out1, float *restrict out2) {
    for (int r = 0; r < 16; r++) {
        for (int c = 0; c < 64; c++) {
            int i = 64 * r + c;
            out0[i] = floorf(x[i] + 0.5f);
            out1[i] = floorf(x[i] * s[r]);
            out2[i] = fminf(fmaxf(rintf(x[i] * 0.5f), -8.0f), 8.0f);
        }
    }
}
