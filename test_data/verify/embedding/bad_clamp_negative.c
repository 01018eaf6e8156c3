// expect: rejected inaccurate
/* Clamps a negative id to row 0, memory-safe but not numpy's meaning (row V + id). */
#include <stdint.h>
#include <string.h>
void embedding(const float *restrict table, const int64_t *restrict ids, float *restrict out) {
    for (int i = 0; i < 200; i++) {
        int64_t r = ids[i] < 0 ? 0 : ids[i];
        memcpy(out + 96 * i, table + 96 * r, 96 * sizeof(float));
    }
}
