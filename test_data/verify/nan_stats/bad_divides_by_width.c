// expect: rejected inaccurate
/* The sum of the values over the row's width, gaps counted as zeros. */
#include <math.h>
void nan_stats(const float *restrict x, float *restrict mean, float *restrict peak) {
    for (int r = 0; r < 64; r++) {
        float sum = 0.0f, m = -INFINITY;
        int n = 0;
        for (int i = 0; i < 48; i++) {
            float v = x[48 * r + i];
            if (!(v > 1.0f)) { sum += v; n++; m = v > m ? v : m; }
        }
        mean[r] = n ? sum / 48 : NAN;
        peak[r] = n ? m : NAN;
    }
}
