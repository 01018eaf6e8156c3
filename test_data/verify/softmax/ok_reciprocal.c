// expect: accepted
#include <math.h>
void softmax(const float *restrict x, float *restrict out) {
    for (int b = 0; b < 8; b++) {
        float m = -INFINITY, acc[4] = {0, 0, 0, 0};
        for (int i = 0; i < 300; i++) m = fmaxf(m, x[300 * b + i]);
        for (int i = 0; i < 300; i++) {
            out[300 * b + i] = expf(x[300 * b + i] - m);
            acc[i % 4] += out[300 * b + i];
        }
        float inv = 1.0f / ((acc[0] + acc[1]) + (acc[2] + acc[3]));
        for (int i = 0; i < 300; i++) out[300 * b + i] *= inv;
    }
}
