// expect: rejected inaccurate
#include <math.h>
/* A fast exp by bit manipulation (Schraudolph): a few percent off. */
static float fast_exp(float v) {
    union { float f; int i; } u;
    u.i = (int)(12102203.0f * v) + 1064866805;
    return v < -87.0f ? 0.0f : u.f;
}
void softmax(const float *restrict x, float *restrict out) {
    for (int b = 0; b < 8; b++) {
        float m = -INFINITY, s = 0;
        for (int i = 0; i < 300; i++) m = fmaxf(m, x[300 * b + i]);
        for (int i = 0; i < 300; i++) s += (out[300 * b + i] = fast_exp(x[300 * b + i] - m));
        for (int i = 0; i < 300; i++) out[300 * b + i] /= s;
    }
}
