// expect: rejected inaccurate crashed out-of-bounds
/* Writes float32 results where the ABI has bfloat16: twice the bytes, past the output. */
#include <math.h>
#include <stdint.h>
#include <string.h>
static float widen(uint16_t h) { uint32_t u = (uint32_t)h << 16; float f; memcpy(&f, &u, 4); return f; }
void rmsnorm_bf16(const uint16_t *restrict x, const uint16_t *restrict weight, float *restrict out) {
    for (int r = 0; r < 32; r++) {
        float s = 0;
        for (int i = 0; i < 256; i++) { float v = widen(x[256 * r + i]); s += v * v; }
        float inv = 1.0f / sqrtf(s / 256.0f + 1e-6f);
        for (int i = 0; i < 256; i++) out[256 * r + i] = widen(x[256 * r + i]) * inv * widen(weight[i]);
    }
}
