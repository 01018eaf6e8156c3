// expect: rejected inaccurate
#include <math.h>
/* Abramowitz and Stegun's 7.1.26: 1.5e-7 absolute, so near zero the error function itself is far off
 * (GELU, which multiplies it by x, would pass). */
static float erf_as(float v) {
    float a = fabsf(v), t = 1.0f / (1.0f + 0.3275911f * a);
    float y = 1.0f - (((((1.061405429f * t - 1.453152027f) * t) + 1.421413741f) * t - 0.284496736f) * t + 0.254829592f) * t * expf(-a * a);
    return v < 0 ? -y : y;
}
void gelu(const float *restrict x, float *restrict out0, float *restrict out1) {
    for (int i = 0; i < 8 * 128; i++) { out1[i] = erf_as(x[i] * 0.70710678f); out0[i] = 0.5f * x[i] * (1.0f + out1[i]); }
}
