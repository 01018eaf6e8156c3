// expect: rejected inaccurate
#include <math.h>
/* exp with a relative error of 128u (u = 2^-24), 64 to 128 ulp: 1.3 times what the rule allows
 * an exp (α = 16 times its 3-ulp allowance, 16 · 6u = 96u). */
void transcendental(const float *restrict x, float *restrict out0, float *restrict out1, float *restrict out2) {
    for (int i = 0; i < 2400; i++) {
        out0[i] = (float)((double)expf(x[i]) * (1.0 + 0x1p-17));
        out1[i] = logf(fabsf(x[i]));
        out2[i] = tanhf(x[i]);
    }
}
