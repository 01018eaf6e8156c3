// expect: accepted
#include <stdint.h>

void masked_pool(const float *restrict h, const uint8_t *restrict mask, float *restrict out) {
    for (int b = 0; b < 4; b++) {
        float count = 0.0f;
        for (int t = 0; t < 33; t++) count += mask[b * 33 + t];
        float n = count > 1.0f ? count : 1.0f;
        for (int d = 0; d < 40; d++) {
            float s = 0.0f;
            for (int t = 0; t < 33; t++)
                if (mask[b * 33 + t]) s += h[(b * 33 + t) * 40 + d];
            out[b * 40 + d] = s / n;
        }
    }
}
