/* Vector math for ollie's emitted kernels: exp, log, log1p, expm1, tanh, sin, cos, erf, sqrt, fabs, floor, ceil, rint and small integer powers, and float16 and bfloat16 loads and stores
 * on `{W}`-lane float vectors (GCC vector extensions, so the same source is AVX2 or AVX-512 code
 * as -march=native chooses; sqrt by the widest x86 instruction the target has).
 * The algorithms are Cephes' single-precision ones (range reduction, a minimax polynomial,
 * scaling by the exponent's bits), written branch-free — with AVX2 or AVX-512, exp by a table
 * and log by the ISA's own exponent and mantissa operations (below), at half the cost or less;
 * each keeps the C library's special
 * values (NaN, ±inf, overflow to inf, underflow through the subnormals to 0). Errors are tested
 * against double precision over dense samples of the whole float range (tests/vector_math.rs). */

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

static inline ollie_v{W} ollie_pick{W}(ollie_m{W} m, ollie_v{W} a, ollie_v{W} b) { return (ollie_v{W})((m & (ollie_m{W})a) | (~m & (ollie_m{W})b)); }

static inline ollie_v{W} ollie_vabs{W}(ollie_v{W} x) { return (ollie_v{W})((ollie_m{W})x & 0x7fffffff); }

/* `r = f(x)` lane by lane through the widest x86 instruction the target has for `f`: the
 * `ZMM`, `YMM` and `XMM` functions take and return one register, `SCALAR` one float. Defined
 * once, whatever the widths pasted. */
#ifndef OLLIE_WIDEST
#define OLLIE_WIDEST(x, ZMM, YMM, XMM, SCALAR)                                      \
    do {                                                                            \
        enum { n_ = sizeof(x) / sizeof(float) };                                    \
        float a_[n_], r_[n_];                                                       \
        int l_ = 0;                                                                 \
        __builtin_memcpy(a_, &x, sizeof x);                                         \
        OLLIE_WIDEST_ZMM(ZMM) OLLIE_WIDEST_YMM(YMM) OLLIE_WIDEST_XMM(XMM)           \
        for (; l_ < n_; l_++) r_[l_] = SCALAR(a_[l_]);                              \
        __builtin_memcpy(&x, r_, sizeof x);                                         \
    } while (0)
#if defined(__AVX512F__)
#define OLLIE_WIDEST_ZMM(f) for (; l_ + 16 <= n_; l_ += 16) _mm512_storeu_ps(r_ + l_, f(_mm512_loadu_ps(a_ + l_)));
static inline __m512 ollie_floor_zmm(__m512 v) { return _mm512_roundscale_ps(v, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC); }
static inline __m512 ollie_ceil_zmm(__m512 v) { return _mm512_roundscale_ps(v, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC); }
static inline __m512 ollie_rint_zmm(__m512 v) { return _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
#else
#define OLLIE_WIDEST_ZMM(f)
#endif
#if defined(__AVX__)
#define OLLIE_WIDEST_YMM(f) for (; l_ + 8 <= n_; l_ += 8) _mm256_storeu_ps(r_ + l_, f(_mm256_loadu_ps(a_ + l_)));
static inline __m256 ollie_rint_ymm(__m256 v) { return _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
#else
#define OLLIE_WIDEST_YMM(f)
#endif
#if defined(__SSE4_1__)
#define OLLIE_WIDEST_XMM(f) for (; l_ + 4 <= n_; l_ += 4) _mm_storeu_ps(r_ + l_, f(_mm_loadu_ps(a_ + l_)));
static inline __m128 ollie_rint_xmm(__m128 v) { return _mm_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
#else
#define OLLIE_WIDEST_XMM(f)
#endif
#endif

/* Correctly rounded, as sqrtf (sqrtf itself stays scalar because of errno). */
static inline ollie_v{W} ollie_vsqrt{W}(ollie_v{W} x) {
    OLLIE_WIDEST(x, _mm512_sqrt_ps, _mm256_sqrt_ps, _mm_sqrt_ps, __builtin_sqrtf);
    return x;
}

/* floor and ceil, exact (NaN and the infinities kept, -0.0 as floorf gives it). */
static inline ollie_v{W} ollie_vfloor{W}(ollie_v{W} x) {
    OLLIE_WIDEST(x, ollie_floor_zmm, _mm256_floor_ps, _mm_floor_ps, __builtin_floorf);
    return x;
}

static inline ollie_v{W} ollie_vceil{W}(ollie_v{W} x) {
    OLLIE_WIDEST(x, ollie_ceil_zmm, _mm256_ceil_ps, _mm_ceil_ps, __builtin_ceilf);
    return x;
}

/* numpy's rint: to nearest, ties to even (exact). */
static inline ollie_v{W} ollie_vrint{W}(ollie_v{W} x) {
    OLLIE_WIDEST(x, ollie_rint_zmm, ollie_rint_ymm, ollie_rint_xmm, __builtin_nearbyintf);
    return x;
}

/* x^n for a constant n from 2 to 4 (the emitter's range): x·x is exact as powf's, x·x·x and
 * (x·x)·(x·x) within 2 ulp. */
static inline ollie_v{W} ollie_vpowi{W}(ollie_v{W} x, int n) {
    return n == 2 ? x * x : n == 3 ? x * x * x : (x * x) * (x * x);
}

/* 2^n for integer n in [-151, 128] (else unspecified), as two factors 2^(n/2) and 2^(n - n/2),
 * each a normal float: `y * ollie_pow2` rounds once into the subnormals where it must. */
static inline ollie_v{W} ollie_scale{W}(ollie_v{W} y, ollie_m{W} n) {
    ollie_m{W} a = n >> 1, b = n - a;
    return y * (ollie_v{W})((a + 127) << 23) * (ollie_v{W})((b + 127) << 23);
}

/* Below this, e^x rounds to 0 in float (e^-103.97 is half the least subnormal). The lanes below
 * it compute e^0 and are then set to 0: computed as they are, their results pass through the
 * subnormals, where every vector operation rounding there takes a microcode assist — e^-inf
 * (a causal mask's) cost 86 ns a 16-lane vector where e^-1 costs 3.6 ns, on an Intel Xeon. */
#define OLLIE_EXP_ZERO (-104.0f)

/* e^x on 16 lanes of AVX-512: x = (16·kh + j)·ln2/16 + r with |r| ≤ ln2/32, e^x = 2^kh · 2^(j/16) ·
 * e^r: 2^(j/16) from a 16-entry table by one permute (the index is in the low bits of the
 * rounding's sum), e^r − 1 by a cubic, and 2^kh by `scalef`, which rounds once into the
 * subnormals and overflows to inf as exp does. 13 vector operations where Cephes' form takes
 * about 26 (1.05 ulp at worst against its 0.97; 16 lanes: 2.05x the throughput, 8 lanes in the
 * low half: 1.4x, on an Intel Xeon). Defined once, whatever the widths pasted. */
#if defined(__AVX512F__) && !defined(OLLIE_VEXP_AVX512)
#define OLLIE_VEXP_AVX512
static inline __m512 ollie_vexp_avx512(__m512 x) {
    const __m512 table = _mm512_setr_ps(0x1p+0f, 0x1.0b5586p+0f, 0x1.172b84p+0f, 0x1.2387a6p+0f, 0x1.306fep+0f, 0x1.3dea64p+0f,
                                        0x1.4bfdaep+0f, 0x1.5ab07ep+0f, 0x1.6a09e6p+0f, 0x1.7a1148p+0f, 0x1.8ace54p+0f,
                                        0x1.9c4918p+0f, 0x1.ae89fap+0f, 0x1.c199bep+0f, 0x1.d5818ep+0f, 0x1.ea4afap+0f);
    /* min returns its second operand for a NaN: NaN stays NaN. Beyond 89 every float result is
     * inf; below -104 it is 0, computed from 0 instead (see OLLIE_EXP_ZERO). */
    x = _mm512_min_ps(_mm512_set1_ps(89.0f), x);
    __mmask16 zero = _mm512_cmp_ps_mask(x, _mm512_set1_ps(OLLIE_EXP_ZERO), _CMP_LT_OQ);
    x = _mm512_mask_mov_ps(x, zero, _mm512_setzero_ps());
    /* k = round(x · 16/ln2) by the 1.5·2^23 trick: the sum's low bits hold k, so j = k mod 16. */
    __m512 t = _mm512_fmadd_ps(x, _mm512_set1_ps(23.083120654223414f), _mm512_set1_ps(12582912.0f));
    __m512 k = _mm512_sub_ps(t, _mm512_set1_ps(12582912.0f));
    /* r = x − k·ln2/16 in two parts (the first exact for |k| < 2^12). */
    __m512 r = _mm512_fnmadd_ps(k, _mm512_set1_ps(0.693359375f / 16), x);
    r = _mm512_fnmadd_ps(k, _mm512_set1_ps(-2.12194440e-4f / 16), r);
    __m512 q = _mm512_fmadd_ps(r, _mm512_set1_ps(1.6666667e-1f), _mm512_set1_ps(0.5f));
    q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(1.0f));
    q = _mm512_mul_ps(q, r);
    __m512 s = _mm512_permutexvar_ps(_mm512_castps_si512(t), table);
    __m512 y = _mm512_fmadd_ps(s, q, s);
    return _mm512_maskz_mov_ps((__mmask16)~zero, _mm512_scalef_ps(y, _mm512_mul_ps(k, _mm512_set1_ps(0.0625f))));
}
#endif

/* e^x on 8 lanes of AVX2 (without AVX-512): as above with a table of 2^(j/8) (one permute) and
 * a quartic (|r| ≤ ln2/16), and 2^kh as two normal factors (no scalef), so that the product
 * rounds once into the subnormals. About 22 operations; 0.89 ulp at worst; 1.5x Cephes' form's
 * throughput at 8 lanes, 3.6x at 16 (two halves), on an Intel Xeon built without AVX-512. */
#if defined(__AVX2__) && defined(__FMA__) && !defined(__AVX512F__) && !defined(OLLIE_VEXP_AVX2)
#define OLLIE_VEXP_AVX2
static inline __m256 ollie_vexp_avx2(__m256 x) {
    const __m256 table = _mm256_setr_ps(0x1p+0f, 0x1.172b84p+0f, 0x1.306fep+0f, 0x1.4bfdaep+0f, 0x1.6a09e6p+0f, 0x1.8ace54p+0f,
                                        0x1.ae89fap+0f, 0x1.d5818ep+0f);
    x = _mm256_min_ps(_mm256_set1_ps(89.0f), x);
    __m256 zero = _mm256_cmp_ps(x, _mm256_set1_ps(OLLIE_EXP_ZERO), _CMP_LT_OQ);
    x = _mm256_andnot_ps(zero, x);
    /* k = round(x · 8/ln2); its low three bits index the table, the rest is kh. */
    __m256 t = _mm256_fmadd_ps(x, _mm256_set1_ps(11.541560327111707f), _mm256_set1_ps(12582912.0f));
    __m256 k = _mm256_sub_ps(t, _mm256_set1_ps(12582912.0f));
    __m256 r = _mm256_fnmadd_ps(k, _mm256_set1_ps(0.693359375f / 8), x);
    r = _mm256_fnmadd_ps(k, _mm256_set1_ps(-2.12194440e-4f / 8), r);
    __m256 q = _mm256_fmadd_ps(r, _mm256_set1_ps(4.1666668e-2f), _mm256_set1_ps(1.6666667e-1f));
    q = _mm256_fmadd_ps(q, r, _mm256_set1_ps(0.5f));
    q = _mm256_fmadd_ps(q, r, _mm256_set1_ps(1.0f));
    q = _mm256_mul_ps(q, r);
    __m256i bits = _mm256_castps_si256(t);
    __m256 s = _mm256_permutevar8x32_ps(table, bits);
    __m256 y = _mm256_fmadd_ps(s, q, s);
    __m256i n = _mm256_srai_epi32(_mm256_sub_epi32(bits, _mm256_set1_epi32(0x4b400000)), 3);
    __m256i a = _mm256_srai_epi32(n, 1), b = _mm256_sub_epi32(n, a);
    __m256 fa = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(a, _mm256_set1_epi32(127)), 23));
    __m256 fb = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(b, _mm256_set1_epi32(127)), 23));
    return _mm256_andnot_ps(zero, _mm256_mul_ps(_mm256_mul_ps(y, fa), fb));
}
#endif

/* `{W}` lanes through the ISA's own form of a function (`OLLIE_ISA(ollie_vexp)`: the AVX2 one on
 * 8 lanes, else the AVX-512 one on 16), vector by vector; 8 lanes with AVX-512 as the low half of
 * a 512-bit vector. Defined where the ISA has such forms and they fit {W} lanes; elsewhere the
 * portable forms below run. */
#if defined(__AVX2__) && defined(__FMA__) && !defined(__AVX512F__) && {W} % 8 == 0
#define OLLIE_ISA(f) f##_avx2
#define OLLIE_LANES{W}_BY_ISA
static inline __attribute__((always_inline)) ollie_v{W} ollie_lanes{W}(ollie_v{W} x, __m256 (*f)(__m256)) {
    float a[{W}];
    __builtin_memcpy(a, &x, sizeof x);
    for (int l = 0; l < {W}; l += 8) _mm256_storeu_ps(a + l, f(_mm256_loadu_ps(a + l)));
    __builtin_memcpy(&x, a, sizeof x);
    return x;
}
#elif defined(__AVX512F__) && ({W} == 8 || {W} % 16 == 0)
#define OLLIE_ISA(f) f##_avx512
#define OLLIE_LANES{W}_BY_ISA
static inline __attribute__((always_inline)) ollie_v{W} ollie_lanes{W}(ollie_v{W} x, __m512 (*f)(__m512)) {
#if {W} == 8
    return (ollie_v{W})_mm512_castps512_ps256(f(_mm512_zextps256_ps512((__m256)x)));
#else
    float a[{W}];
    __builtin_memcpy(a, &x, sizeof x);
    for (int l = 0; l < {W}; l += 16) _mm512_storeu_ps(a + l, f(_mm512_loadu_ps(a + l)));
    __builtin_memcpy(&x, a, sizeof x);
    return x;
#endif
}
#endif

static inline ollie_v{W} ollie_vexp{W}(ollie_v{W} x) {
#if defined(OLLIE_LANES{W}_BY_ISA)
    return ollie_lanes{W}(x, OLLIE_ISA(ollie_vexp));
#endif
    /* Beyond 89 every float result is inf, below OLLIE_EXP_ZERO 0 (computed from 0 instead);
     * NaN stays NaN (comparisons are false). */
    ollie_v{W} zero = {0};
    x = ollie_pick{W}(x > 89.0f, zero + 89.0f, x);
    ollie_m{W} under = x < OLLIE_EXP_ZERO;
    x = ollie_pick{W}(under, zero, x);
    /* n = round(x / ln 2), by the 1.5 * 2^23 trick: its low bits hold n. */
    ollie_v{W} t = x * 1.44269504088896341f + 12582912.0f;
    ollie_m{W} n = (ollie_m{W})t - 0x4b400000;
    ollie_v{W} k = t - 12582912.0f;
    ollie_v{W} r = x - k * 0.693359375f - k * -2.12194440e-4f;
    ollie_v{W} p = r * 1.9875691500e-4f + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    ollie_v{W} y = p * (r * r) + r + 1.0f;
    return ollie_pick{W}(under, zero, ollie_scale{W}(y, n));
}

/* log x on 16 lanes of AVX-512: x = m · 2^e with m in [1, 2) from `getmant` and e from `getexp`
 * (both exact, subnormals included), m halved where above sqrt 2; then Cephes' polynomial in
 * m − 1 as below, and every special input (0, negative, inf, NaN) set by one `fixupimm`. About
 * 24 vector operations, none on integers, where the portable form takes about 60. */
#if defined(__AVX512F__) && !defined(OLLIE_VLOG_AVX512)
#define OLLIE_VLOG_AVX512
static inline __m512 ollie_vlog_avx512(__m512 x) {
    __m512 m = _mm512_getmant_ps(x, _MM_MANT_NORM_1_2, _MM_MANT_SIGN_zero);
    __m512 e = _mm512_getexp_ps(x);
    __mmask16 high = _mm512_cmp_ps_mask(m, _mm512_set1_ps(1.41421356f), _CMP_GT_OQ);
    m = _mm512_mask_mul_ps(m, high, m, _mm512_set1_ps(0.5f));
    e = _mm512_mask_add_ps(e, high, e, _mm512_set1_ps(1.0f));
    m = _mm512_sub_ps(m, _mm512_set1_ps(1.0f));
    __m512 z = _mm512_mul_ps(m, m);
    __m512 y = _mm512_fmadd_ps(m, _mm512_set1_ps(7.0376836292e-2f), _mm512_set1_ps(-1.1514610310e-1f));
    y = _mm512_fmadd_ps(y, m, _mm512_set1_ps(1.1676998740e-1f));
    y = _mm512_fmadd_ps(y, m, _mm512_set1_ps(-1.2420140846e-1f));
    y = _mm512_fmadd_ps(y, m, _mm512_set1_ps(1.4249322787e-1f));
    y = _mm512_fmadd_ps(y, m, _mm512_set1_ps(-1.6668057665e-1f));
    y = _mm512_fmadd_ps(y, m, _mm512_set1_ps(2.0000714765e-1f));
    y = _mm512_fmadd_ps(y, m, _mm512_set1_ps(-2.4999993993e-1f));
    y = _mm512_fmadd_ps(y, m, _mm512_set1_ps(3.3333331174e-1f));
    y = _mm512_mul_ps(_mm512_mul_ps(y, m), z);
    y = _mm512_fmadd_ps(e, _mm512_set1_ps(-2.12194440e-4f), y);
    y = _mm512_fnmadd_ps(z, _mm512_set1_ps(0.5f), y);
    __m512 r = _mm512_fmadd_ps(e, _mm512_set1_ps(0.693359375f), _mm512_add_ps(m, y));
    /* By the input's class, four bits each (from the lowest: QNaN, SNaN, ±0, 1, -inf, +inf,
     * negative, positive): the input (1), its NaN made quiet (2), -inf (4), NaN (3), +inf (5),
     * or the value computed (0). */
    return _mm512_fixupimm_ps(r, x, _mm512_set1_epi32(0x03530421), 0);
}
#endif

/* log x on 8 lanes of AVX2 (without AVX-512): subnormals scaled into the normals; the exponent
 * and a mantissa in [sqrt 1/2, sqrt 2) by integer arithmetic on the bits offset by sqrt 1/2's
 * (no comparison for the halving); specials by comparisons and blends. About 33 operations. */
#if defined(__AVX2__) && defined(__FMA__) && !defined(__AVX512F__) && !defined(OLLIE_VLOG_AVX2)
#define OLLIE_VLOG_AVX2
static inline __m256 ollie_vlog_avx2(__m256 x) {
    __m256 tiny = _mm256_cmp_ps(x, _mm256_set1_ps(1.17549435e-38f), _CMP_LT_OQ);
    __m256 s = _mm256_blendv_ps(x, _mm256_mul_ps(x, _mm256_set1_ps(8388608.0f)), tiny);
    __m256i i = _mm256_sub_epi32(_mm256_castps_si256(s), _mm256_set1_epi32(0x3f3504f3));
    __m256 e = _mm256_cvtepi32_ps(_mm256_srai_epi32(i, 23));
    e = _mm256_sub_ps(e, _mm256_and_ps(tiny, _mm256_set1_ps(23.0f)));
    __m256i mb = _mm256_add_epi32(_mm256_and_si256(i, _mm256_set1_epi32(0x007fffff)), _mm256_set1_epi32(0x3f3504f3));
    __m256 m = _mm256_sub_ps(_mm256_castsi256_ps(mb), _mm256_set1_ps(1.0f));
    __m256 z = _mm256_mul_ps(m, m);
    __m256 y = _mm256_fmadd_ps(m, _mm256_set1_ps(7.0376836292e-2f), _mm256_set1_ps(-1.1514610310e-1f));
    y = _mm256_fmadd_ps(y, m, _mm256_set1_ps(1.1676998740e-1f));
    y = _mm256_fmadd_ps(y, m, _mm256_set1_ps(-1.2420140846e-1f));
    y = _mm256_fmadd_ps(y, m, _mm256_set1_ps(1.4249322787e-1f));
    y = _mm256_fmadd_ps(y, m, _mm256_set1_ps(-1.6668057665e-1f));
    y = _mm256_fmadd_ps(y, m, _mm256_set1_ps(2.0000714765e-1f));
    y = _mm256_fmadd_ps(y, m, _mm256_set1_ps(-2.4999993993e-1f));
    y = _mm256_fmadd_ps(y, m, _mm256_set1_ps(3.3333331174e-1f));
    y = _mm256_mul_ps(_mm256_mul_ps(y, m), z);
    y = _mm256_fmadd_ps(e, _mm256_set1_ps(-2.12194440e-4f), y);
    y = _mm256_fnmadd_ps(z, _mm256_set1_ps(0.5f), y);
    __m256 r = _mm256_fmadd_ps(e, _mm256_set1_ps(0.693359375f), _mm256_add_ps(m, y));
    /* log(+inf) = inf, log(±0) = -inf, and NaN (all bits set) for a negative input or NaN. */
    r = _mm256_blendv_ps(r, x, _mm256_cmp_ps(x, _mm256_set1_ps(__builtin_inff()), _CMP_EQ_OQ));
    r = _mm256_blendv_ps(r, _mm256_set1_ps(-__builtin_inff()), _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_EQ_OQ));
    return _mm256_or_ps(r, _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_NGE_UQ));
}
#endif

static inline ollie_v{W} ollie_vlog{W}(ollie_v{W} x) {
#if defined(OLLIE_LANES{W}_BY_ISA)
    return ollie_lanes{W}(x, OLLIE_ISA(ollie_vlog));
#endif
    /* Subnormal inputs are scaled into the normals first (and 23 taken off the exponent). */
    ollie_m{W} tiny = x < 1.17549435e-38f;
    ollie_v{W} s = ollie_pick{W}(tiny, x * 8388608.0f, x);
    ollie_m{W} bits = (ollie_m{W})s;
    ollie_m{W} e = ((bits >> 23) & 0xff) - 126 - (tiny & 23);
    /* s = m * 2^e with m in [sqrt(1/2), sqrt(2)), then log(m) from its polynomial in m - 1. */
    ollie_v{W} m = (ollie_v{W})((bits & 0x007fffff) | 0x3f000000);
    ollie_m{W} low = m < 0.707106781186547524f;
    e = e + low; /* low is -1 where true */
    m = ollie_pick{W}(low, m + m - 1.0f, m - 1.0f);
    ollie_v{W} f = __builtin_convertvector(e, ollie_v{W});
    ollie_v{W} z = m * m;
    ollie_v{W} y = m * 7.0376836292e-2f - 1.1514610310e-1f;
    y = y * m + 1.1676998740e-1f;
    y = y * m - 1.2420140846e-1f;
    y = y * m + 1.4249322787e-1f;
    y = y * m - 1.6668057665e-1f;
    y = y * m + 2.0000714765e-1f;
    y = y * m - 2.4999993993e-1f;
    y = y * m + 3.3333331174e-1f;
    y = y * m * z;
    y = y + f * -2.12194440e-4f - 0.5f * z;
    ollie_v{W} result = m + y + f * 0.693359375f;
    /* log(+inf) = inf, log(0) = -inf, log of a negative or of NaN is NaN. */
    ollie_v{W} zero = {0};
    result = ollie_pick{W}(x == 1.0f / zero, x, result);
    result = ollie_pick{W}(x == zero, -1.0f / zero, result);
    result = ollie_pick{W}(x < zero, zero / zero, result);
    return ollie_pick{W}(x != x, x, result);
}

/* sin and cos (SLEEF's u35 method): x = k·π + d (cos: (k + ½)·π + d) with π in four parts
 * whose products with k are exact for |x| < 39000, then an odd polynomial in d, negated for odd
 * k. Lanes beyond 39000 (and the infinities) go to the C library, which reduces them exactly. */
static inline ollie_v{W} ollie_vsincos{W}(ollie_v{W} x, int cosine) {
    ollie_v{W} zero = {0};
    ollie_m{W} big = ollie_vabs{W}(x) > 39000.0f;
    ollie_v{W} d = ollie_pick{W}(big, zero, x);
    /* k = round(x/π) (cos: round(x/π - ½)) by the 1.5·2^23 trick: its low bits hold k. */
    ollie_v{W} t = d * 0.318309886183790671538f + (cosine ? -0.5f : 0.0f) + 12582912.0f;
    ollie_m{W} n = (ollie_m{W})t - 0x4b400000;
    ollie_v{W} k = t - 12582912.0f;
    if (cosine) k = k + 0.5f;
    d = d - k * 3.140625f;
    d = d - k * 0.0009670257568359375f;
    d = d - k * 6.2771141529083251953e-07f;
    d = d - k * 1.2154201256553420762e-10f;
    /* sin(kπ + d) = (-1)^k sin d; cos((n + ½)π + d) = (-1)^(n+1) sin d. */
    d = (ollie_v{W})((ollie_m{W})d ^ (((n + cosine) & 1) << 31));
    ollie_v{W} s = d * d;
    ollie_v{W} u = s * 2.6083159809786593541503e-06f - 0.0001981069071916863322258f;
    u = u * s + 0.00833307858556509017944336f;
    u = u * s - 0.166666597127914428710938f;
    ollie_v{W} r = s * (u * d) + d;
    int any = 0;
    for (int l = 0; l < {W}; l++) any |= big[l];
    if (__builtin_expect(any, 0)) {
        for (int l = 0; l < {W}; l++)
            if (big[l]) r[l] = cosine ? __builtin_cosf(x[l]) : __builtin_sinf(x[l]);
    }
    return r;
}

static inline ollie_v{W} ollie_vsin{W}(ollie_v{W} x) { return ollie_vsincos{W}(x, 0); }
static inline ollie_v{W} ollie_vcos{W}(ollie_v{W} x) { return ollie_vsincos{W}(x, 1); }

static inline ollie_v{W} ollie_vtanh{W}(ollie_v{W} x) {
    ollie_v{W} a = ollie_vabs{W}(x);
    /* Small |x|: an odd polynomial (no cancellation); else 1 - 2 / (exp(2|x|) + 1), which
     * is 1 once exp overflows, signed as x. */
    ollie_v{W} z = x * x;
    ollie_v{W} p = z * -5.70498872745e-3f + 2.06390887954e-2f;
    p = p * z - 5.37397155531e-2f;
    p = p * z + 1.33314422036e-1f;
    p = p * z - 3.33332819422e-1f;
    ollie_v{W} small = p * z * x + x;
    ollie_v{W} big = 1.0f - 2.0f / (ollie_vexp{W}(a + a) + 1.0f);
    big = (ollie_v{W})((ollie_m{W})big | ((ollie_m{W})x & (int)0x80000000));
    return ollie_pick{W}(a < 0.625f, small, big);
}

/* log1p(x) = log(u)·x/(u − 1) with u = 1 + x as rounded (Goldberg's correction for that
 * rounding): x itself where u is 1 (tiny x, ±0), +inf at +inf; −1 gives −inf and below it NaN,
 * as log gives them. */
static inline ollie_v{W} ollie_vlog1p{W}(ollie_v{W} x) {
    ollie_v{W} u = 1.0f + x;
    ollie_v{W} d = u - 1.0f;
    ollie_v{W} r = ollie_vlog{W}(u) * (x / d);
    r = ollie_pick{W}(d == 0.0f, x, r);
    return ollie_pick{W}(x == __builtin_inff(), x, r);
}

/* expm1(x) = (u − 1)·x/log(u) with u = exp(x) as rounded (Kahan's correction): x where u is 1
 * (tiny x, ±0), −1 where u − 1 is (x → −inf), u where it overflows; NaN passes through. */
static inline ollie_v{W} ollie_vexpm1{W}(ollie_v{W} x) {
    ollie_v{W} u = ollie_vexp{W}(x);
    ollie_v{W} d = u - 1.0f;
    ollie_v{W} r = d * (x / ollie_vlog{W}(u));
    r = ollie_pick{W}(u == 1.0f, x, r);
    r = ollie_pick{W}(d == -1.0f, d, r);
    return ollie_pick{W}(u == __builtin_inff(), u, r);
}

/* erf x: for |x| < 0.5 its Taylor series, x · Σ cₙ x²ⁿ to the x¹⁷ term (the next is below
 * 2⁻³⁰ of the sum); beyond, 1 − erfc |x| with the sign of x, erfc by Numerical Recipes'
 * Chebyshev fit t·e^(−x² + P(t)), t = 1/(1 + x/2) (fractional error below 1.2e-7 for every x),
 * |x| held at 4 (erf is 1 in float beyond 3.92). NaN stays NaN; ±inf give ±1. */
static inline ollie_v{W} ollie_verf{W}(ollie_v{W} x) {
    ollie_v{W} zero = {0};
    ollie_v{W} z = x * x;
    ollie_v{W} p = zero + (1.6462114365889246e-06f);
    p = p * z + -1.492565035840625e-05f;
    p = p * z + 0.00012055332981789664f;
    p = p * z + -0.0008548327023450852f;
    p = p * z + 0.005223977625442188f;
    p = p * z + -0.026866170645131252f;
    p = p * z + 0.11283791670955126f;
    p = p * z + -0.37612638903183754f;
    p = p * z + 1.1283791670955126f;
    ollie_v{W} small = x * p;
    ollie_v{W} a = ollie_vabs{W}(x);
    a = ollie_pick{W}(a > 4.0f, zero + 4.0f, a);
    ollie_v{W} t = 1.0f / (1.0f + 0.5f * a);
    ollie_v{W} q = t * 0.17087277f - 0.82215223f;
    q = q * t + 1.48851587f;
    q = q * t - 1.13520398f;
    q = q * t + 0.27886807f;
    q = q * t - 0.18628806f;
    q = q * t + 0.09678418f;
    q = q * t + 0.37409196f;
    q = q * t + 1.00002368f;
    q = q * t - 1.26551223f;
    ollie_v{W} erfc = t * ollie_vexp{W}(q - a * a);
    ollie_v{W} big = (ollie_v{W})((ollie_m{W})(1.0f - erfc) | ((ollie_m{W})x & ~0x7fffffff));
    return ollie_pick{W}(ollie_vabs{W}(x) < 0.5f, small, big);
}

/* A store that bypasses the caches (no read for ownership of the lines it fills), for a large
 * output written once: the widest x86 streaming store whose alignment the address has, else an
 * ordinary store. The loop that streams ends with a store fence. */
static inline void ollie_vstream{W}(float *p, ollie_v{W} v) {
    float a[{W}];
    __builtin_memcpy(a, &v, sizeof v);
#if defined(__AVX512F__)
    if ({W} % 16 == 0 && ((unsigned long)p & 63) == 0) {
        for (int l = 0; l < {W}; l += 16) _mm512_stream_ps(p + l, _mm512_loadu_ps(a + l));
        return;
    }
#endif
#if defined(__AVX__)
    if ({W} % 8 == 0 && ((unsigned long)p & 31) == 0) {
        for (int l = 0; l < {W}; l += 8) _mm256_stream_ps(p + l, _mm256_loadu_ps(a + l));
        return;
    }
#endif
#if defined(__SSE__)
    if ({W} % 4 == 0 && ((unsigned long)p & 15) == 0) {
        for (int l = 0; l < {W}; l += 4) _mm_stream_ps(p + l, _mm_loadu_ps(a + l));
        return;
    }
#endif
    __builtin_memcpy(p, a, sizeof a);
}

/* 16-bit storage: `{W}` lanes of float16 or bfloat16 bits read as floats, and floats stored as
 * them rounded to nearest even (NaN kept and quieted, the subnormals rounded, never flushed:
 * as numpy and ml_dtypes convert). float16 by AVX-512's or F16C's conversions where the
 * target has them, else lane by lane through `_Float16`; bfloat16 by AVX-512 BF16's
 * `vcvtneps2bf16` for vectors without subnormals (it reads them as zero), else by integer lanes
 * (in AVX-512 or AVX2 registers where the target has them: GCC's own narrowing of the generic
 * form costs a cross-lane permute). */
typedef unsigned short ollie_h{W} __attribute__((vector_size({W} * 2)));
typedef unsigned int ollie_u{W} __attribute__((vector_size({W} * 4)));

/* float32 lanes to bfloat16 bits, in x86 registers; defined once, whatever the widths pasted. */
#if defined(__AVX512F__) && !defined(OLLIE_BF16_AVX512)
#define OLLIE_BF16_AVX512
static inline __m256i ollie_bf16_zmm(__m512 x) {
    __m512i u = _mm512_castps_si512(x);
    __m512i magnitude = _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff));
#if defined(__AVX512BF16__)
    /* Subnormal lanes are those whose magnitude less one is below 0x7fffff (unsigned). */
    __mmask16 subnormal = _mm512_cmplt_epu32_mask(_mm512_sub_epi32(magnitude, _mm512_set1_epi32(1)), _mm512_set1_epi32(0x7fffff));
    if (__builtin_expect(subnormal == 0, 1)) return (__m256i)_mm512_cvtneps_pbh(x);
#endif
    __m512i high = _mm512_srli_epi32(u, 16);
    __m512i rounded = _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), _mm512_and_si512(high, _mm512_set1_epi32(1)));
    rounded = _mm512_srli_epi32(rounded, 16);
    __mmask16 nan = _mm512_cmpgt_epu32_mask(magnitude, _mm512_set1_epi32(0x7f800000));
    rounded = _mm512_mask_mov_epi32(rounded, nan, _mm512_or_si512(high, _mm512_set1_epi32(0x40)));
    return _mm512_cvtepi32_epi16(rounded);
}
#endif
#if defined(__AVX2__) && !defined(OLLIE_BF16_AVX2)
#define OLLIE_BF16_AVX2
static inline __m128i ollie_bf16_ymm(__m256 x) {
    __m256i u = _mm256_castps_si256(x);
    __m256i high = _mm256_srli_epi32(u, 16);
    __m256i rounded = _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), _mm256_and_si256(high, _mm256_set1_epi32(1)));
    rounded = _mm256_srli_epi32(rounded, 16);
    /* Magnitudes are non-negative as int32: a signed comparison serves. */
    __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
    rounded = _mm256_blendv_epi8(rounded, _mm256_or_si256(high, _mm256_set1_epi32(0x40)), nan);
    /* Every lane is at most 0xffff: the saturating pack keeps it. */
    return _mm_packus_epi32(_mm256_castsi256_si128(rounded), _mm256_extracti128_si256(rounded, 1));
}
#endif

static inline ollie_v{W} ollie_vload_bf16{W}(const unsigned short *p) {
    float r[{W}];
    int l = 0;
#if defined(__AVX512F__)
    for (; l + 16 <= {W}; l += 16)
        _mm512_storeu_si512(r + l, _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(p + l))), 16));
#endif
#if defined(__AVX2__)
    for (; l + 8 <= {W}; l += 8)
        _mm256_storeu_si256((__m256i *)(r + l), _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(p + l))), 16));
#endif
    for (; l < {W}; l++) {
        unsigned int u = (unsigned int)p[l] << 16;
        __builtin_memcpy(r + l, &u, 4);
    }
    ollie_v{W} v;
    __builtin_memcpy(&v, r, sizeof v);
    return v;
}

/* The bfloat16 bits of `x`'s lanes: by x86 registers where they cover the lanes, else by the
 * generic vector form. */
static inline ollie_h{W} ollie_vto_bf16{W}(ollie_v{W} x) {
    float a[{W}];
    unsigned short r[{W}];
    __builtin_memcpy(a, &x, sizeof x);
    int l = 0;
#if defined(__AVX512F__)
    for (; l + 16 <= {W}; l += 16) _mm256_storeu_si256((__m256i *)(r + l), ollie_bf16_zmm(_mm512_loadu_ps(a + l)));
#endif
#if defined(__AVX2__)
    for (; l + 8 <= {W}; l += 8) _mm_storeu_si128((__m128i *)(r + l), ollie_bf16_ymm(_mm256_loadu_ps(a + l)));
#endif
    ollie_h{W} h;
    if (l == {W}) {
        __builtin_memcpy(&h, r, sizeof h);
        return h;
    }
    ollie_u{W} u = (ollie_u{W})x;
    ollie_u{W} rounded = (u + 0x7fff + ((u >> 16) & 1)) >> 16;
    ollie_u{W} nan = (ollie_u{W})((u & 0x7fffffff) > 0x7f800000);
    rounded = (nan & ((u >> 16) | 0x40)) | (~nan & rounded);
    return __builtin_convertvector(rounded, ollie_h{W});
}

static inline ollie_v{W} ollie_vload_f16{W}(const unsigned short *p) {
    float r[{W}];
    int l = 0;
#if defined(__AVX512F__)
    for (; l + 16 <= {W}; l += 16) _mm512_storeu_ps(r + l, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(p + l))));
#endif
#if defined(__F16C__)
    for (; l + 8 <= {W}; l += 8) _mm256_storeu_ps(r + l, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + l))));
#endif
    for (; l < {W}; l++) {
        _Float16 h;
        __builtin_memcpy(&h, p + l, 2);
        r[l] = (float)h;
    }
    ollie_v{W} v;
    __builtin_memcpy(&v, r, sizeof v);
    return v;
}

/* The float16 bits of `x`'s lanes. */
static inline ollie_h{W} ollie_vto_f16{W}(ollie_v{W} x) {
    float a[{W}];
    unsigned short r[{W}];
    __builtin_memcpy(a, &x, sizeof x);
    int l = 0;
#if defined(__AVX512F__)
    for (; l + 16 <= {W}; l += 16) _mm256_storeu_si256((__m256i *)(r + l), _mm512_cvtps_ph(_mm512_loadu_ps(a + l), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#endif
#if defined(__F16C__)
    for (; l + 8 <= {W}; l += 8) _mm_storeu_si128((__m128i *)(r + l), _mm256_cvtps_ph(_mm256_loadu_ps(a + l), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#endif
    for (; l < {W}; l++) {
        _Float16 h = (_Float16)a[l];
        __builtin_memcpy(r + l, &h, 2);
    }
    ollie_h{W} h;
    __builtin_memcpy(&h, r, sizeof h);
    return h;
}

/* 16-bit lanes stored as they are, or past the caches as `ollie_vstream{W}` stores floats (by
 * 32 or 16 bytes: two 16-lane conversions joined into one 64-byte streaming store measured
 * slower than two 32-byte ones, on an AMD EPYC). */
static inline void ollie_vstore_h{W}(unsigned short *p, ollie_h{W} h) {
    __builtin_memcpy(p, &h, sizeof h);
}

static inline void ollie_vstream_h{W}(unsigned short *p, ollie_h{W} h) {
#if defined(__AVX__)
    if ({W} % 16 == 0 && ((unsigned long)p & 31) == 0) {
        for (int l = 0; l < {W}; l += 16) {
            __m256i part;
            __builtin_memcpy(&part, (const unsigned short *)&h + l, sizeof part);
            _mm256_stream_si256((__m256i *)(p + l), part);
        }
        return;
    }
#endif
#if defined(__SSE2__)
    if ({W} % 8 == 0 && ((unsigned long)p & 15) == 0) {
        for (int l = 0; l < {W}; l += 8) {
            __m128i part;
            __builtin_memcpy(&part, (const unsigned short *)&h + l, sizeof part);
            _mm_stream_si128((__m128i *)(p + l), part);
        }
        return;
    }
#endif
    ollie_vstore_h{W}(p, h);
}

static inline void ollie_vstore_bf16{W}(unsigned short *p, ollie_v{W} x) { ollie_vstore_h{W}(p, ollie_vto_bf16{W}(x)); }
static inline void ollie_vstream_bf16{W}(unsigned short *p, ollie_v{W} x) { ollie_vstream_h{W}(p, ollie_vto_bf16{W}(x)); }
static inline void ollie_vstore_f16{W}(unsigned short *p, ollie_v{W} x) { ollie_vstore_h{W}(p, ollie_vto_f16{W}(x)); }
static inline void ollie_vstream_f16{W}(unsigned short *p, ollie_v{W} x) { ollie_vstream_h{W}(p, ollie_vto_f16{W}(x)); }

/* A value rounded to float16 or bfloat16 and read back (`.astype` inside a kernel). */
static inline ollie_v{W} ollie_vround_f16{W}(ollie_v{W} x) {
    unsigned short h[{W}];
    ollie_vstore_f16{W}(h, x);
    return ollie_vload_f16{W}(h);
}

static inline ollie_v{W} ollie_vround_bf16{W}(ollie_v{W} x) {
    unsigned short h[{W}];
    ollie_vstore_bf16{W}(h, x);
    return ollie_vload_bf16{W}(h);
}
