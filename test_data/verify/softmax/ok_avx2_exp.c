// expect: accepted
#include <immintrin.h>
#include <math.h>
/* AVX2 with a Cephes-style exp: range reduction by ln 2 in two parts, degree-6 polynomial. */
__attribute__((target("avx2,fma"))) static __m256 exp8(__m256 x) {
    x = _mm256_max_ps(_mm256_min_ps(x, _mm256_set1_ps(88.3762626647949f)), _mm256_set1_ps(-88.3762626647949f));
    __m256 fx = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(0.693359375f), x);
    x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(-2.12194440e-4f), x);
    __m256 y = _mm256_set1_ps(1.9875691500E-4f);
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.3981999507E-3f));
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(8.3334519073E-3f));
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(4.1665795894E-2f));
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.6666665459E-1f));
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(5.0000001201E-1f));
    y = _mm256_fmadd_ps(y, _mm256_mul_ps(x, x), _mm256_add_ps(x, _mm256_set1_ps(1.0f)));
    __m256i n = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(fx), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(y, _mm256_castsi256_ps(n));
}
__attribute__((target("avx2,fma"))) void softmax(const float *restrict x, float *restrict out) {
    for (int b = 0; b < 8; b++) {
        const float *row = x + 300 * b;
        float *o = out + 300 * b;
        float m = -INFINITY;
        for (int i = 0; i < 300; i++) m = row[i] > m ? row[i] : m;
        __m256 vm = _mm256_set1_ps(m), acc = _mm256_setzero_ps();
        int i = 0;
        for (; i + 8 <= 300; i += 8) {
            __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(row + i), vm));
            _mm256_storeu_ps(o + i, e);
            acc = _mm256_add_ps(acc, e);
        }
        float lanes[8], s = 0;
        _mm256_storeu_ps(lanes, acc);
        for (int k = 0; k < 8; k++) s += lanes[k];
        for (; i < 300; i++) s += (o[i] = expf(row[i] - m));
        __m256 inv = _mm256_set1_ps(1.0f / s);
        for (i = 0; i + 8 <= 300; i += 8) _mm256_storeu_ps(o + i, _mm256_mul_ps(_mm256_loadu_ps(o + i), inv));
        for (; i < 300; i++) o[i] *= 1.0f / s;
    }
}
