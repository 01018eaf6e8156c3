// expect: rejected inaccurate
#include <math.h>
/* Accumulates the row sum in half precision (_Float16): about three decimal digits. */
void softmax(const float *restrict x, float *restrict out) {
    for (int b = 0; b < 8; b++) {
        const float *row = x + 300 * b;
        float m = -INFINITY;
        _Float16 s = 0;
        for (int i = 0; i < 300; i++) m = fmaxf(m, row[i]);
        for (int i = 0; i < 300; i++) s += (_Float16)(out[300 * b + i] = expf(row[i] - m));
        for (int i = 0; i < 300; i++) out[300 * b + i] /= (float)s;
    }
}
