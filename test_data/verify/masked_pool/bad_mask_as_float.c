// expect: rejected inaccurate out-of-bounds crashed
// The mask read as float32 (the ABI passes numpy's bool: a byte per element): four bytes per
// element, past the end of the buffer, and nonzero wherever one of four bytes is.
#include <stdint.h>

void masked_pool(const float *restrict h, const float *restrict mask, float *restrict out) {
    for (int b = 0; b < 4; b++) {
        float count = 0.0f;
        for (int t = 0; t < 33; t++) count += mask[b * 33 + t] != 0.0f;
        float n = count > 1.0f ? count : 1.0f;
        for (int d = 0; d < 40; d++) {
            float s = 0.0f;
            for (int t = 0; t < 33; t++)
                if (mask[b * 33 + t] != 0.0f) s += h[(b * 33 + t) * 40 + d];
            out[b * 40 + d] = s / n;
        }
    }
}
