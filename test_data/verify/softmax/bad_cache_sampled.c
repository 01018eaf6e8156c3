// expect: rejected stale-output
#include <math.h>
#include <string.h>
/* Remembers the result keyed on three sampled inputs: stale when another element changes. */
static float key[3] = {NAN, NAN, NAN};
static float cache[2400];
void softmax(const float *restrict x, float *restrict out) {
    if (x[0] == key[0] && x[1111] == key[1] && x[2399] == key[2]) { memcpy(out, cache, sizeof cache); return; }
    for (int b = 0; b < 8; b++) {
        float m = -INFINITY, s = 0;
        for (int i = 0; i < 300; i++) m = fmaxf(m, x[300 * b + i]);
        for (int i = 0; i < 300; i++) s += (out[300 * b + i] = expf(x[300 * b + i] - m));
        for (int i = 0; i < 300; i++) out[300 * b + i] /= s;
    }
    memcpy(cache, out, sizeof cache);
    key[0] = x[0]; key[1] = x[1111]; key[2] = x[2399];
}
