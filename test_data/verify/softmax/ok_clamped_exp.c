// expect: accepted
// flags: -O3 -march=native
// flags: -O3 -mavx2 -mfma
// flags: -O3
#include <math.h>
#include <string.h>
/* Softmax with the classic Cephes-style polynomial exp used by hand-written SIMD code: the
 * argument is clamped to [-87.336544, 88.7228], so an exact result below FLT_MIN comes back as
 * FLT_MIN (≈ 1.1755e-38) instead of a subnormal or zero. The vector width is chosen at compile
 * time: AVX-512 (16 lanes), AVX2 + FMA (8 lanes), or the same algorithm in scalar code. */
#define EXP_HI 88.72283935546875f
#define EXP_LO -87.33654479980469f
#define LOG2E 1.44269504088896341f
#define LN2_HI 0.693359375f
#define LN2_LO -2.12194440e-4f
#define P0 1.9875691500e-4f
#define P1 1.3981999507e-3f
#define P2 8.3334519073e-3f
#define P3 4.1665795894e-2f
#define P4 1.6666665459e-1f
#define P5 5.0000001201e-1f

static float exp1(float x) {
    x = fminf(fmaxf(x, EXP_LO), EXP_HI);
    float n = rintf(x * LOG2E);
    float r = fmaf(-n, LN2_LO, fmaf(-n, LN2_HI, x));
    float p = P0;
    p = fmaf(p, r, P1); p = fmaf(p, r, P2); p = fmaf(p, r, P3); p = fmaf(p, r, P4); p = fmaf(p, r, P5);
    p = fmaf(p, r * r, r + 1.0f);
    /* p ∈ [0.7, 1.42]: scale by 2^n in two steps so that n = 128 does not overflow the bits. */
    int k = (int)n, k1 = k / 2, k2 = k - k1;
    unsigned b1 = (unsigned)(k1 + 127) << 23, b2 = (unsigned)(k2 + 127) << 23;
    float s1, s2;
    memcpy(&s1, &b1, 4); memcpy(&s2, &b2, 4);
    return p * s1 * s2;
}

#if defined(__AVX512F__)
#include <immintrin.h>
#define W 16
typedef __m512 vf;
static inline vf vload(const float *p) { return _mm512_loadu_ps(p); }
static inline void vstore(float *p, vf v) { _mm512_storeu_ps(p, v); }
static inline vf vset(float a) { return _mm512_set1_ps(a); }
static inline vf vexp(vf x) {
    x = _mm512_max_ps(_mm512_min_ps(x, vset(EXP_HI)), vset(EXP_LO));
    vf n = _mm512_roundscale_ps(_mm512_mul_ps(x, vset(LOG2E)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    vf r = _mm512_fnmadd_ps(n, vset(LN2_LO), _mm512_fnmadd_ps(n, vset(LN2_HI), x));
    vf p = vset(P0);
    p = _mm512_fmadd_ps(p, r, vset(P1)); p = _mm512_fmadd_ps(p, r, vset(P2)); p = _mm512_fmadd_ps(p, r, vset(P3));
    p = _mm512_fmadd_ps(p, r, vset(P4)); p = _mm512_fmadd_ps(p, r, vset(P5));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, vset(1.0f)));
    return _mm512_scalef_ps(p, n); /* p · 2^n, exact, no overflow of the exponent field */
}
static inline float vsum(vf v) { return _mm512_reduce_add_ps(v); }
static inline vf vadd(vf a, vf b) { return _mm512_add_ps(a, b); }
static inline vf vsub(vf a, vf b) { return _mm512_sub_ps(a, b); }
static inline vf vmul(vf a, vf b) { return _mm512_mul_ps(a, b); }
static inline vf vzero(void) { return _mm512_setzero_ps(); }
#elif defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define W 8
typedef __m256 vf;
static inline vf vload(const float *p) { return _mm256_loadu_ps(p); }
static inline void vstore(float *p, vf v) { _mm256_storeu_ps(p, v); }
static inline vf vset(float a) { return _mm256_set1_ps(a); }
static inline vf vexp(vf x) {
    x = _mm256_max_ps(_mm256_min_ps(x, vset(EXP_HI)), vset(EXP_LO));
    vf n = _mm256_round_ps(_mm256_mul_ps(x, vset(LOG2E)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    vf r = _mm256_fnmadd_ps(n, vset(LN2_LO), _mm256_fnmadd_ps(n, vset(LN2_HI), x));
    vf p = vset(P0);
    p = _mm256_fmadd_ps(p, r, vset(P1)); p = _mm256_fmadd_ps(p, r, vset(P2)); p = _mm256_fmadd_ps(p, r, vset(P3));
    p = _mm256_fmadd_ps(p, r, vset(P4)); p = _mm256_fmadd_ps(p, r, vset(P5));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, vset(1.0f)));
    /* 2^n in two halves: n = 128 (x near EXP_HI) would not fit the exponent field at once. */
    __m256i k = _mm256_cvtps_epi32(n), k1 = _mm256_srai_epi32(k, 1), k2 = _mm256_sub_epi32(k, k1);
    __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k1, _mm256_set1_epi32(127)), 23));
    __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k2, _mm256_set1_epi32(127)), 23));
    return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}
static inline float vsum(vf v) {
    float lanes[8], s = 0;
    _mm256_storeu_ps(lanes, v);
    for (int k = 0; k < 8; k++) s += lanes[k];
    return s;
}
static inline vf vadd(vf a, vf b) { return _mm256_add_ps(a, b); }
static inline vf vsub(vf a, vf b) { return _mm256_sub_ps(a, b); }
static inline vf vmul(vf a, vf b) { return _mm256_mul_ps(a, b); }
static inline vf vzero(void) { return _mm256_setzero_ps(); }
#endif

void softmax(const float *restrict x, float *restrict out) {
    for (int b = 0; b < 8; b++) {
        const float *row = x + 300 * b;
        float *o = out + 300 * b;
        float m = -INFINITY, s = 0;
        for (int i = 0; i < 300; i++) m = row[i] > m ? row[i] : m;
        int i = 0;
#ifdef W
        vf vm = vset(m), acc = vzero();
        for (; i + W <= 300; i += W) {
            vf e = vexp(vsub(vload(row + i), vm));
            vstore(o + i, e);
            acc = vadd(acc, e);
        }
        s = vsum(acc);
#endif
        for (; i < 300; i++) s += (o[i] = exp1(row[i] - m));
        float inv = 1.0f / s;
        i = 0;
#ifdef W
        for (; i + W <= 300; i += W) vstore(o + i, vmul(vload(o + i), vset(inv)));
#endif
        for (; i < 300; i++) o[i] *= inv;
    }
}
