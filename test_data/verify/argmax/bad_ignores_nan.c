// expect: rejected inaccurate
/* fminf's rule, not numpy's: a NaN is passed over instead of being the answer. */
#include <math.h>
void assign(const float *restrict distances, const float *restrict scores, float *restrict out0, float *restrict out1) {
    for (int k = 0; k < 200; k++) {
        const float *d = distances + 37 * k;
        int at = 0;
        float low = d[0];
        for (int c = 1; c < 37; c++) {
            if (d[c] < low || isnan(low)) { low = d[c]; at = c; }
        }
        out0[k] = (float)at;
        int best = 0;
        for (int c = 1; c < 37; c++) {
            float v = scores[37 * k + c] * 0.5f, top = scores[37 * k + best] * 0.5f;
            if (isnan(top)) break;
            if (isnan(v) || v > top) best = c;
        }
        out1[k] = (float)best;
    }
}
