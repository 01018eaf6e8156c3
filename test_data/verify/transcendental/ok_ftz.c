// expect: accepted
#include <math.h>
#include <xmmintrin.h>
/* Flush-to-zero: subnormal results (exp far below 0, tanh of a subnormal input) come back as 0.
 * Denormals-are-zero stays off here: log of a subnormal input would then be -inf where the
 * reference is finite, which the contract rejects (softmax/ok_ftz_daz.c sets both). */
void transcendental(const float *restrict x, float *restrict out0, float *restrict out1, float *restrict out2) {
    unsigned csr = _mm_getcsr();
    _mm_setcsr(csr | 0x8000);
    for (int i = 0; i < 2400; i++) {
        out0[i] = expf(x[i]);
        out1[i] = logf(fabsf(x[i]));
        out2[i] = tanhf(x[i]);
    }
    _mm_setcsr(csr);
}
