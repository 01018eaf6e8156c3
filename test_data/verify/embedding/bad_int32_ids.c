// expect: rejected inaccurate crashed out-of-bounds
/* Reads the int64 ids as int32: the high halves of the ids become ids of their own. */
#include <stdint.h>
#include <string.h>
void embedding(const float *restrict table, const int32_t *restrict ids, float *restrict out) {
    for (int i = 0; i < 200; i++) {
        int32_t r = ids[i] < 0 ? ids[i] + 3000 : ids[i];
        memcpy(out + 96 * i, table + 96 * r, 96 * sizeof(float));
    }
}
