// expect: rejected out-of-bounds
#include <math.h>
#include <stdint.h>
#include <sys/mman.h>
/* Makes the guard page after its output writable and spills scratch data there. */
void softmax(const float *restrict x, float *restrict out) {
    uintptr_t end = ((uintptr_t)(out + 2400) + 4095) & ~(uintptr_t)4095;
    mprotect((void *)end, 4096, PROT_READ | PROT_WRITE);
    float *scratch = (float *)end;
    for (int b = 0; b < 8; b++) {
        float m = -INFINITY, s = 0;
        for (int i = 0; i < 300; i++) m = fmaxf(m, x[300 * b + i]);
        for (int i = 0; i < 300; i++) s += (out[300 * b + i] = expf(x[300 * b + i] - m));
        scratch[b] = s;
        for (int i = 0; i < 300; i++) out[300 * b + i] /= scratch[b];
    }
}
