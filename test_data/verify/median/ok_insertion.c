// expect: accepted
/* An insertion sort per row, NaN last. */
#include <math.h>
static int before(float a, float b) { return !isnan(a) && (isnan(b) || a < b); }
void median(const float *restrict x, float *restrict out0, float *restrict out1) {
    float s[31];
    for (int r = 0; r < 64; r++) {
        for (int i = 0; i < 31; i++) {
            float v = x[31 * r + i];
            int j = i;
            while (j > 0 && before(v, s[j - 1])) { s[j] = s[j - 1]; j--; }
            s[j] = v;
        }
        out0[r] = s[15];
        for (int k = 0; k < 3; k++) out1[3 * r + k] = s[28 + k];
    }
}
