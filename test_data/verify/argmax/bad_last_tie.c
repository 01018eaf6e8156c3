// expect: rejected inaccurate
/* The last smallest element, not the first: right wherever the inputs have no ties. */
#include <math.h>
void assign(const float *restrict distances, const float *restrict scores, float *restrict out0, float *restrict out1) {
    for (int k = 0; k < 200; k++) {
        const float *d = distances + 37 * k;
        int at = 0;
        for (int c = 1; c < 37; c++) {
            if (isnan(d[at])) break;
            if (isnan(d[c]) || d[c] <= d[at]) at = c;
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
