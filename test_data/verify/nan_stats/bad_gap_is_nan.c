// expect: rejected inaccurate
/* numpy's plain mean and maximum: one gap makes the row NaN. */
#include <math.h>
void nan_stats(const float *restrict x, float *restrict mean, float *restrict peak) {
    for (int r = 0; r < 64; r++) {
        float sum = 0.0f, m = -INFINITY;
        for (int i = 0; i < 48; i++) {
            float v = x[48 * r + i];
            float g = v > 1.0f ? NAN : v;
            sum += g;
            m = (isnan(g) || g > m) ? g : m;
            if (isnan(m)) m = NAN;
        }
        mean[r] = sum / 48;
        peak[r] = m;
    }
}
