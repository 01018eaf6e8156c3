// expect: accepted
#include <math.h>
#include <string.h>
/* Each function at its float32 allowance (OpenCL's single-precision figures, which SLEEF's
 * u10/u35 variants meet): exp and log 3 ulp, tanh 5 ulp. libm's results (exp and log within
 * 1 ulp, tanh within 2) are moved a further 2, 2 and 3 ulp, alternately up and down. */
static float ulps(float v, int n) {
    if (!isnormal(v)) return v; /* zero, subnormal, infinite or NaN: left as they are */
    int bits;
    memcpy(&bits, &v, 4);
    bits += n;
    memcpy(&v, &bits, 4);
    return v;
}
void transcendental(const float *restrict x, float *restrict out0, float *restrict out1, float *restrict out2) {
    for (int i = 0; i < 2400; i++) {
        int sign = (i & 1) ? -1 : 1;
        out0[i] = ulps(expf(x[i]), 2 * sign);
        out1[i] = ulps(logf(fabsf(x[i])), 2 * sign);
        out2[i] = ulps(tanhf(x[i]), 3 * sign);
    }
}
