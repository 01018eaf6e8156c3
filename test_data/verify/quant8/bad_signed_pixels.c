// expect: rejected inaccurate
/* Reads the pixels as int8: 200 becomes -56. */
#include <math.h>
#include <stdint.h>
void quant8(const int8_t *restrict img, const float *restrict x, float *restrict out0, float *restrict out1) {
    for (int i = 0; i < 256; i++) {
        out0[i] = (float)img[i] / 255.0f;
        out1[i] = fminf(fmaxf(nearbyintf(x[i] * 10.0f), -127.0f), 127.0f);
    }
}
