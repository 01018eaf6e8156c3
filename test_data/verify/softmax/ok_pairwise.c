// expect: accepted
#include <math.h>
static float pairwise(const float *v, int n) {
    if (n <= 8) { float s = 0; for (int i = 0; i < n; i++) s += v[i]; return s; }
    return pairwise(v, n / 2) + pairwise(v + n / 2, n - n / 2);
}
void softmax(const float *restrict x, float *restrict out) {
    for (int b = 0; b < 8; b++) {
        const float *row = x + 300 * b;
        float *o = out + 300 * b;
        float m = row[0];
        for (int i = 1; i < 300; i++) m = row[i] > m ? row[i] : m;
        for (int i = 0; i < 300; i++) o[i] = expf(row[i] - m);
        float s = pairwise(o, 300);
        for (int i = 0; i < 300; i++) o[i] /= s;
    }
}
