// expect: rejected compile-error
/* Calls a helper it never defines (C89's implicit declaration): linked with every symbol
 * required defined, it is a compile error, not a library that fails to load in the sandbox. */
#include <math.h>

void softmax(const float *restrict x, float *restrict out) {
    for (int b = 0; b < 8; b++) {
        float m = -INFINITY, s = 0.0f;
        for (int i = 0; i < 300; i++) m = fmaxf(m, x[b * 300 + i]);
        for (int i = 0; i < 300; i++) s += expf(x[b * 300 + i] - m);
        for (int i = 0; i < 300; i++) out[b * 300 + i] = ollie_fast_exp(x[b * 300 + i] - m) / s;
    }
}
