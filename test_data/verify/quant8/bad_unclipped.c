// expect: rejected inaccurate
/* Forgets the clip: large values wrap around in int8. */
#include <math.h>
#include <stdint.h>
void quant8(const uint8_t *restrict img, const float *restrict x, float *restrict out0, float *restrict out1) {
    for (int i = 0; i < 256; i++) {
        out0[i] = (float)img[i] / 255.0f;
        out1[i] = (float)(int8_t)(int32_t)nearbyintf(x[i] * 10.0f);
    }
}
