// expect: rejected inaccurate
#include <math.h>
/* Normalizes by the row's range first: 0/0 when a row is constant. */
void softmax(const float *restrict x, float *restrict out) {
    for (int b = 0; b < 8; b++) {
        float m = -INFINITY, lo = INFINITY, s = 0;
        for (int i = 0; i < 300; i++) { m = fmaxf(m, x[300 * b + i]); lo = fminf(lo, x[300 * b + i]); }
        float range = m - lo, scale = range / range;
        for (int i = 0; i < 300; i++) s += (out[300 * b + i] = expf((x[300 * b + i] - m) * scale));
        for (int i = 0; i < 300; i++) out[300 * b + i] /= s;
    }
}
