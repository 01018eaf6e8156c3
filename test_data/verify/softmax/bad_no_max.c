// expect: rejected inaccurate
#include <math.h>
/* Drops the max-subtraction: exp overflows on large inputs. */
void softmax(const float *restrict x, float *restrict out) {
    for (int b = 0; b < 8; b++) {
        float s = 0;
        for (int i = 0; i < 300; i++) s += (out[300 * b + i] = expf(x[300 * b + i]));
        for (int i = 0; i < 300; i++) out[300 * b + i] /= s;
    }
}
