// expect: rejected inaccurate
/* C's /: the quotient rounds toward zero, so -7 / 5 is -1. */
#include <stdint.h>
void buckets(const int64_t *restrict ids, const float *restrict x, float *restrict out0, float *restrict out1) {
    for (int i = 0; i < 200; i++) {
        int64_t a = ids[i] * 3 - 50, r = a % 7;
        out0[i] = (float)(r < 0 ? r + 7 : r);
        out1[i] = x[i] * (float)(ids[i] / 5 + 1);
    }
}
