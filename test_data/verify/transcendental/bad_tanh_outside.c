// expect: rejected inaccurate
#include <math.h>
/* tanh with a relative error of 256u: 1.6 times the rule's 16 · 10u for a 5-ulp tanh. */
void transcendental(const float *restrict x, float *restrict out0, float *restrict out1, float *restrict out2) {
    for (int i = 0; i < 2400; i++) {
        out0[i] = expf(x[i]);
        out1[i] = logf(fabsf(x[i]));
        out2[i] = (float)((double)tanhf(x[i]) * (1.0 - 0x1p-16));
    }
}
