// expect: rejected inaccurate
// The mean over every token, padding included.
#include <stdint.h>

void masked_pool(const float *restrict h, const uint8_t *restrict mask, float *restrict out) {
    (void)mask;
    for (int b = 0; b < 4; b++)
        for (int d = 0; d < 40; d++) {
            float s = 0.0f;
            for (int t = 0; t < 33; t++) s += h[(b * 33 + t) * 40 + d];
            out[b * 40 + d] = s / 33.0f;
        }
}
