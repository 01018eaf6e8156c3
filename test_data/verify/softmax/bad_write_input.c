// expect: rejected input-modified
#include <math.h>
/* Uses its input as scratch space. */
void softmax(float *restrict x, float *restrict out) {
    for (int b = 0; b < 8; b++) {
        float m = -INFINITY, s = 0;
        for (int i = 0; i < 300; i++) m = fmaxf(m, x[300 * b + i]);
        for (int i = 0; i < 300; i++) s += (x[300 * b + i] = expf(x[300 * b + i] - m));
        for (int i = 0; i < 300; i++) out[300 * b + i] = x[300 * b + i] / s;
    }
}
