// expect: rejected out-of-bounds
/* Sums one element past each row: in the last row, one bfloat16 past the input. */
#include <math.h>
#include <stdint.h>
#include <string.h>
static float widen(uint16_t h) { uint32_t u = (uint32_t)h << 16; float f; memcpy(&f, &u, 4); return f; }
static uint16_t narrow(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}
void rmsnorm_bf16(const uint16_t *restrict x, const uint16_t *restrict weight, uint16_t *restrict out) {
    for (int r = 0; r < 32; r++) {
        float s = 0;
        for (int i = 0; i <= 256; i++) { float v = widen(x[256 * r + i]); s += i < 256 ? v * v : 0.0f * v; }
        float inv = 1.0f / sqrtf(s / 256.0f + 1e-6f);
        for (int i = 0; i < 256; i++) out[256 * r + i] = narrow(widen(x[256 * r + i]) * inv * widen(weight[i]));
    }
}
