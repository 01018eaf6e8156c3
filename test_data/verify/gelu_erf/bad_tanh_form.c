// expect: rejected inaccurate
#include <math.h>
/* GELU's tanh approximation: another function (about 1e-3 off near |x| = 2). */
void gelu(const float *restrict x, float *restrict out0, float *restrict out1) {
    for (int i = 0; i < 8 * 128; i++) {
        float v = x[i];
        out1[i] = tanhf(0.7978845608f * (v + 0.044715f * v * v * v));
        out0[i] = 0.5f * v * (1.0f + out1[i]);
    }
}
