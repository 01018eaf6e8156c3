// expect: rejected stale-output
#include <math.h>
#include <string.h>
/* Remembers the result for the last input pointer: stale when the buffer is refilled. */
static const float *last;
static float cache[2400];
void softmax(const float *restrict x, float *restrict out) {
    if (x == last) { memcpy(out, cache, sizeof cache); return; }
    for (int b = 0; b < 8; b++) {
        float m = -INFINITY, s = 0;
        for (int i = 0; i < 300; i++) m = fmaxf(m, x[300 * b + i]);
        for (int i = 0; i < 300; i++) s += (out[300 * b + i] = expf(x[300 * b + i] - m));
        for (int i = 0; i < 300; i++) out[300 * b + i] /= s;
    }
    memcpy(cache, out, sizeof cache);
    last = x;
}
