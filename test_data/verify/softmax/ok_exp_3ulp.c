// expect: accepted
#include <math.h>
#include <string.h>
/* An exp accurate to 3 ulp, OpenCL's single-precision allowance: libm's expf (within 1 ulp)
 * moved a further 2 ulp, up on even elements and down on odd ones. */
static float exp_3ulp(float v, int i) {
    float e = expf(v);
    if (!isnormal(e)) return e; /* zero, subnormal or infinite: left as they are */
    int bits;
    memcpy(&bits, &e, 4);
    bits += (i & 1) ? -2 : 2;
    memcpy(&e, &bits, 4);
    return e;
}
void softmax(const float *restrict x, float *restrict out) {
    for (int b = 0; b < 8; b++) {
        const float *row = x + 300 * b;
        float m = -INFINITY, s = 0;
        for (int i = 0; i < 300; i++) m = fmaxf(m, row[i]);
        for (int i = 0; i < 300; i++) s += (out[300 * b + i] = exp_3ulp(row[i] - m, i));
        for (int i = 0; i < 300; i++) out[300 * b + i] /= s;
    }
}
