// expect: rejected unwritten
#include <math.h>
void softmax(const float *restrict x, float *restrict out) {
    for (int b = 0; b < 7; b++) {
        float m = -INFINITY, s = 0;
        for (int i = 0; i < 300; i++) m = fmaxf(m, x[300 * b + i]);
        for (int i = 0; i < 300; i++) s += (out[300 * b + i] = expf(x[300 * b + i] - m));
        for (int i = 0; i < 300; i++) out[300 * b + i] /= s;
    }
}
