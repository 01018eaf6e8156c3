// expect: accepted
/* One pass per row, written by hand: the first smallest (largest) element, or the first NaN. */
#include <math.h>
void assign(const float *restrict distances, const float *restrict scores, float *restrict out0, float *restrict out1) {
    for (int k = 0; k < 200; k++) {
        const float *d = distances + 37 * k;
        int at = 0;
        for (int c = 1; c < 37; c++) {
            if (isnan(d[at])) break;
            if (isnan(d[c]) || d[c] < d[at]) at = c;
        }
        out0[k] = (float)at;
        const float *s = scores + 37 * k;
        int best = 0;
        float top = s[0] * 0.5f;
        for (int c = 1; c < 37 && !isnan(top); c++) {
            float v = s[c] * 0.5f;
            if (isnan(v) || v > top) { best = c; top = v; }
        }
        out1[k] = (float)best;
    }
}
