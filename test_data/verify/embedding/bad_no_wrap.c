// expect: rejected inaccurate crashed out-of-bounds
/* Takes ids as offsets, negative ones too: reads before the table instead of from its end. */
#include <stdint.h>
#include <string.h>
void embedding(const float *restrict table, const int64_t *restrict ids, float *restrict out) {
    for (int i = 0; i < 200; i++) memcpy(out + 96 * i, table + 96 * ids[i], 96 * sizeof(float));
}
