// expect: rejected inaccurate
/* C's %: the remainder takes the dividend's sign, so -7 % 5 is -2. */
#include <stdint.h>
void buckets(const int64_t *restrict ids, const float *restrict x, float *restrict out0, float *restrict out1) {
    for (int i = 0; i < 200; i++) {
        out0[i] = (float)((ids[i] * 3 - 50) % 7);
        int64_t q = ids[i] / 5 - (ids[i] % 5 != 0 && ids[i] < 0);
        out1[i] = x[i] * (float)(q + 1);
    }
}
