// expect: accepted
#include <math.h>
/* The C library's erff. */
void gelu(const float *restrict x, float *restrict out0, float *restrict out1) {
    for (int i = 0; i < 8 * 128; i++) { out1[i] = erff(x[i] * 0.70710678f); out0[i] = 0.5f * x[i] * (1.0f + out1[i]); }
}
