// expect: rejected inaccurate
#include <math.h>
/* Sine and cosine in each other's columns. */
void posenc(const float *restrict x, float *restrict out) {
    for (int l = 0; l < 32; l++) {
        for (int j = 0; j < 8; j++) {
            float angle = (float)l * expf((float)(2 * j) * -(logf(10000.0f) / 16.0f));
            float even = cosf(angle), odd = sinf(angle);
            for (int b = 0; b < 2; b++) {
                out[(b * 32 + l) * 16 + 2 * j] = x[(b * 32 + l) * 16 + 2 * j] + even;
                out[(b * 32 + l) * 16 + 2 * j + 1] = x[(b * 32 + l) * 16 + 2 * j + 1] + odd;
            }
        }
    }
}
