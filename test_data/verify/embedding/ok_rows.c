// expect: accepted
/* Row copies with memcpy; a negative id counts from the end, as numpy's does. */
#include <stdint.h>
#include <string.h>
void embedding(const float *restrict table, const int64_t *restrict ids, float *restrict out) {
    for (int i = 0; i < 200; i++) {
        int64_t r = ids[i] < 0 ? ids[i] + 3000 : ids[i];
        memcpy(out + 96 * i, table + 96 * r, 96 * sizeof(float));
    }
}
