// expect: rejected inaccurate
#include <math.h>
/* log treats every |x| below 1e-30 as zero (-inf): flushing normal numbers, not subnormal ones. */
void transcendental(const float *restrict x, float *restrict out0, float *restrict out1, float *restrict out2) {
    for (int i = 0; i < 2400; i++) {
        float a = fabsf(x[i]);
        out0[i] = expf(x[i]);
        out1[i] = a < 1e-30f ? -INFINITY : logf(a);
        out2[i] = tanhf(x[i]);
    }
}
