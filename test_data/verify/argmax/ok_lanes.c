// expect: accepted
/* Four interleaved lanes per row, each keeping its first smallest element (or first NaN) and
 * its index; the lanes are merged by value, then by the smaller index on ties, a NaN first. */
#include <math.h>
static int before(float v, int i, float w, int j) {
    /* Whether (v, i) comes before (w, j) in numpy's argmin order. */
    if (isnan(v) || isnan(w)) return isnan(v) && (!isnan(w) || i < j);
    return v < w || (v == w && i < j);
}
void assign(const float *restrict distances, const float *restrict scores, float *restrict out0, float *restrict out1) {
    for (int k = 0; k < 200; k++) {
        const float *d = distances + 37 * k;
        float v[4];
        int at[4];
        for (int l = 0; l < 4; l++) { v[l] = d[l]; at[l] = l; }
        for (int c = 4; c < 37; c++) {
            int l = c % 4;
            if (before(d[c], c, v[l], at[l])) { v[l] = d[c]; at[l] = c; }
        }
        int best = 0;
        for (int l = 1; l < 4; l++) if (before(v[l], at[l], v[best], at[best])) best = l;
        out0[k] = (float)at[best];
        int m = 0;
        for (int c = 1; c < 37; c++) {
            float a = -scores[37 * k + c] * 0.5f, b = -scores[37 * k + m] * 0.5f;
            if (before(a, c, b, m)) m = c;
        }
        out1[k] = (float)m;
    }
}
