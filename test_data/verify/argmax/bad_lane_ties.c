// expect: rejected inaccurate
/* Four interleaved lanes merged by value alone: on a tie the first lane wins, whatever its
 * index (8 before 5). */
#include <math.h>
void assign(const float *restrict distances, const float *restrict scores, float *restrict out0, float *restrict out1) {
    for (int k = 0; k < 200; k++) {
        const float *d = distances + 37 * k;
        float v[4];
        int at[4];
        for (int l = 0; l < 4; l++) { v[l] = d[l]; at[l] = l; }
        for (int c = 4; c < 37; c++) {
            int l = c % 4;
            if (!isnan(v[l]) && (isnan(d[c]) || d[c] < v[l])) { v[l] = d[c]; at[l] = c; }
        }
        int best = 0;
        for (int l = 1; l < 4; l++) {
            if (isnan(v[best])) break;
            if (isnan(v[l]) || v[l] < v[best]) best = l;
        }
        out0[k] = (float)at[best];
        int m = 0;
        for (int c = 1; c < 37; c++) {
            float a = scores[37 * k + c] * 0.5f, b = scores[37 * k + m] * 0.5f;
            if (isnan(b)) break;
            if (isnan(a) || a > b) m = c;
        }
        out1[k] = (float)m;
    }
}
