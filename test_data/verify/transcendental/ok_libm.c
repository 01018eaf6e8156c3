// expect: accepted
#include <math.h>
/* The C library's functions, as the naive kernel calls them. */
void transcendental(const float *restrict x, float *restrict out0, float *restrict out1, float *restrict out2) {
    for (int i = 0; i < 2400; i++) {
        out0[i] = expf(x[i]);
        out1[i] = logf(fabsf(x[i]));
        out2[i] = tanhf(x[i]);
    }
}
