// expect: rejected inaccurate
/* The stable ranks with ties in descending index order: kind="stable" asks for index order. */
#include <math.h>
static int before(float a, int i, float b, int j) {
    if (isnan(a) || isnan(b)) return isnan(b) && (!isnan(a) || i < j);
    return a < b || (a == b && i < j);
}
static int before_score(float a, int i, float b, int j) {
    if (isnan(a) || isnan(b)) return isnan(b) && (!isnan(a) || i > j);
    return a < b || (a == b && i > j);
}
static void order(const float *v, int n, int *idx, int (*less)(float, int, float, int)) {
    for (int i = 0; i < n; i++) {
        int j = i;
        while (j > 0 && less(v[i], i, v[idx[j - 1]], idx[j - 1])) { idx[j] = idx[j - 1]; j--; }
        idx[j] = i;
    }
}
void topk(const float *restrict logits, const float *restrict scores, float *restrict out0, float *restrict out1) {
    int idx[300];
    float s[300];
    for (int b = 0; b < 16; b++) {
        order(logits + 300 * b, 300, idx, before);
        for (int k = 0; k < 4; k++) out0[4 * b + k] = (float)idx[299 - k];
        for (int c = 0; c < 300; c++) s[c] = scores[300 * b + c] * 0.5f + 1.0f;
        order(s, 300, idx, before_score);
        for (int c = 0; c < 300; c++) out1[300 * b + c] = (float)idx[c];
    }
}
