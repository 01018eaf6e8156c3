// expect: rejected input-modified
#include <math.h>
#include <stdint.h>
#include <sys/mman.h>
/* Makes its read-only input writable, then uses it as scratch space. */
void softmax(float *restrict x, float *restrict out) {
    uintptr_t page = (uintptr_t)x & ~(uintptr_t)4095;
    mprotect((void *)page, ((uintptr_t)(x + 2400) - page + 4095) & ~(uintptr_t)4095, PROT_READ | PROT_WRITE);
    for (int b = 0; b < 8; b++) {
        float m = -INFINITY, s = 0;
        for (int i = 0; i < 300; i++) m = fmaxf(m, x[300 * b + i]);
        for (int i = 0; i < 300; i++) s += (x[300 * b + i] = expf(x[300 * b + i] - m));
        for (int i = 0; i < 300; i++) out[300 * b + i] = x[300 * b + i] / s;
    }
}
