// expect: rejected inaccurate
#include <stdint.h>
#include <string.h>
/* Rounds both operands to bfloat16 (8 significant bits) before multiplying, as a kernel using
 * bf16 dot-product instructions would; accumulates in float32. */
static float bf16(float v) {
    uint32_t bits;
    memcpy(&bits, &v, 4);
    bits = (bits + 0x7fff + ((bits >> 16) & 1)) & 0xffff0000u;
    memcpy(&v, &bits, 4);
    return v;
}
void matmul(const float *restrict a, const float *restrict b, float *restrict out) {
    for (int i = 0; i < 32; i++)
        for (int j = 0; j < 40; j++) {
            float s = 0;
            for (int k = 0; k < 48; k++) s += bf16(a[48 * i + k]) * bf16(b[40 * k + j]);
            out[40 * i + j] = s;
        }
}
