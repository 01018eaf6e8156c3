// expect: accepted
#include <math.h>
#include <xmmintrin.h>
/* Runs with flush-to-zero and denormals-are-zero set (as -ffast-math's startup code or a
 * library may leave them): subnormal results become 0 and subnormal inputs read as 0. The
 * control register is restored before returning: no state carries over between calls. */
void softmax(const float *restrict x, float *restrict out) {
    unsigned csr = _mm_getcsr();
    _mm_setcsr(csr | 0x8040); /* FTZ (bit 15) | DAZ (bit 6) */
    for (int b = 0; b < 8; b++) {
        const float *row = x + 300 * b;
        float m = -INFINITY, s = 0;
        for (int i = 0; i < 300; i++) m = fmaxf(m, row[i]);
        for (int i = 0; i < 300; i++) s += (out[300 * b + i] = expf(row[i] - m));
        float inv = 1.0f / s;
        for (int i = 0; i < 300; i++) out[300 * b + i] *= inv;
    }
    _mm_setcsr(csr);
}
