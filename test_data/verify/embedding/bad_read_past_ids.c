// expect: rejected out-of-bounds
/* Prefetches the next id on every step, the last one past the end of `ids`. */
#include <stdint.h>
#include <string.h>
void embedding(const float *restrict table, const int64_t *restrict ids, float *restrict out) {
    int64_t next = ids[0];
    for (int i = 0; i < 200; i++) {
        int64_t id = next;
        next = ids[i + 1];
        int64_t r = id < 0 ? id + 3000 : id;
        memcpy(out + 96 * i, table + 96 * r, 96 * sizeof(float));
    }
    (void)next;
}
