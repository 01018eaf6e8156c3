// expect: rejected inaccurate
/* Off by one row: reads the row after the one indexed (clamped, so never outside the table). */
#include <stdint.h>
#include <string.h>
void embedding(const float *restrict table, const int64_t *restrict ids, float *restrict out) {
    for (int i = 0; i < 200; i++) {
        int64_t r = ids[i] < 0 ? ids[i] + 3000 : ids[i];
        r = r + 1 < 3000 ? r + 1 : r;
        memcpy(out + 96 * i, table + 96 * r, 96 * sizeof(float));
    }
}
