// expect: rejected inaccurate
/* Rounds the normalized value to bfloat16, then the scaled one again: two roundings where the
 * spec has one. Each element is off by up to an ulp, not half of one. */
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
        for (int i = 0; i < 256; i++) { float v = widen(x[256 * r + i]); s += v * v; }
        float inv = 1.0f / sqrtf(s / 256.0f + 1e-6f);
        for (int i = 0; i < 256; i++) out[256 * r + i] = narrow(widen(narrow(widen(x[256 * r + i]) * inv)) * widen(weight[i]));
    }
}
