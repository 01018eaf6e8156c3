// expect: rejected input-modified
#include <math.h>
#include <stdint.h>
#include <sys/mman.h>
/* Correct, but from its second call on it makes its input writable and changes one element after
   reading it: the second call is on the copy with one element changed, which the verifier writes
   into the buffers the first call left (only that element), so it must still notice. */
void softmax(float *restrict x, float *restrict out) {
    static int calls = 0;
    for (int b = 0; b < 8; b++) {
        float m = -INFINITY, s = 0;
        for (int i = 0; i < 300; i++) m = fmaxf(m, x[300 * b + i]);
        for (int i = 0; i < 300; i++) s += expf(x[300 * b + i] - m);
        for (int i = 0; i < 300; i++) out[300 * b + i] = expf(x[300 * b + i] - m) / s;
    }
    if (++calls >= 2) {
        uintptr_t page = (uintptr_t)(x + 1000) & ~(uintptr_t)4095;
        mprotect((void *)page, 4096, PROT_READ | PROT_WRITE);
        x[1000] += 1.0f;
    }
}
