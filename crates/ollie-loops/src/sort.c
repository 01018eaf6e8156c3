/* Sorting for ollie's emitted kernels: the lanes of `sort` and `argsort` loops (whole, or a selection of the first or last k).
 * Each element becomes one item, its value's bits made to order as unsigned integers (negative
 * values' bits flipped, positive values' sign bit set; -0 read as +0, every NaN as the largest
 * key, so NaNs sort last as numpy's do) with its index below them: items are distinct, so any
 * correct sort gives the one order numpy's stable sort gives. The value is read back from the
 * key. The tests of NaN and zero look at bits, so no floating-point flag changes them.
 * Items of a double kernel are pairs; of a float kernel, one 64-bit word: the emitter keeps
 * the variant the kernel needs. */
#if {WIDE}
typedef struct { uint64_t key; long index; } ollie_sort_item;
#define OLLIE_SORT_LESS(a, b) ((a).key < (b).key || ((a).key == (b).key && (a).index < (b).index))
static inline ollie_sort_item ollie_sort_item_of(double v, long i) {
    uint64_t b; __builtin_memcpy(&b, &v, 8);
    if (b == 0x8000000000000000ull) b = 0;
    uint64_t k = (b & 0x7FFFFFFFFFFFFFFFull) > 0x7FF0000000000000ull ? ~0ull : b ^ ((b >> 63) ? ~0ull : 0x8000000000000000ull);
    ollie_sort_item t = { k, i };
    return t;
}
static inline double ollie_sort_value(ollie_sort_item t) {
    uint64_t b = t.key ^ ((t.key >> 63) ? 0x8000000000000000ull : ~0ull);
    double v; __builtin_memcpy(&v, &b, 8);
    return v;
}
static inline long ollie_sort_index(ollie_sort_item t) { return t.index; }
#else
typedef uint64_t ollie_sort_item;
#define OLLIE_SORT_LESS(a, b) ((a) < (b))
static inline ollie_sort_item ollie_sort_item_of(float v, long i) {
    uint32_t b; __builtin_memcpy(&b, &v, 4);
    if (b == 0x80000000u) b = 0;
    uint32_t k = (b & 0x7FFFFFFFu) > 0x7F800000u ? 0xFFFFFFFFu : b ^ ((b >> 31) ? 0xFFFFFFFFu : 0x80000000u);
    return (uint64_t)k << 32 | (uint64_t)(uint32_t)i;
}
static inline float ollie_sort_value(ollie_sort_item t) {
    uint32_t k = (uint32_t)(t >> 32);
    uint32_t b = k ^ ((k >> 31) ? 0x80000000u : 0xFFFFFFFFu);
    float v; __builtin_memcpy(&v, &b, 4);
    return v;
}
static inline long ollie_sort_index(ollie_sort_item t) { return (long)(uint32_t)t; }
#endif

/* Sorts `a[0..n)` ascending: insertion sort of runs of 16, then bottom-up merges through
 * `spare` (n items). */
__attribute__((unused)) static void ollie_sort(ollie_sort_item *a, ollie_sort_item *spare, long n) {
    const long run = 16;
    for (long s = 0; s < n; s += run) {
        long e = s + run < n ? s + run : n;
        for (long i = s + 1; i < e; i++) {
            ollie_sort_item x = a[i];
            long j = i;
            while (j > s && OLLIE_SORT_LESS(x, a[j - 1])) {
                a[j] = a[j - 1];
                j--;
            }
            a[j] = x;
        }
    }
    ollie_sort_item *from = a, *to = spare;
    for (long w = run; w < n; w *= 2) {
        for (long s = 0; s < n; s += 2 * w) {
            long m = s + w < n ? s + w : n, e = s + 2 * w < n ? s + 2 * w : n;
            long i = s, j = m, k = s;
            while (i < m && j < e) to[k++] = OLLIE_SORT_LESS(from[j], from[i]) ? from[j++] : from[i++];
            while (i < m) to[k++] = from[i++];
            while (j < e) to[k++] = from[j++];
        }
        ollie_sort_item *t = from;
        from = to;
        to = t;
    }
    if (from != a) __builtin_memcpy(a, from, (size_t)n * sizeof *a);
}


/* Selection for top-k: `a[0..*m)` holds the lowest (highest) items seen so far in ascending
 * order, at most `k`; `x` joins them if there is room or it beats the worst kept, which then
 * leaves. Items are distinct, so the k kept are the k numpy's stable order puts first (last). */
static inline void ollie_keep_low(ollie_sort_item *a, long *m, long k, ollie_sort_item x) {
    long j = *m;
    if (j == k) {
        if (!OLLIE_SORT_LESS(x, a[k - 1])) return;
        j = k - 1;
    } else {
        (*m)++;
    }
    while (j > 0 && OLLIE_SORT_LESS(x, a[j - 1])) {
        a[j] = a[j - 1];
        j--;
    }
    a[j] = x;
}

static inline void ollie_keep_high(ollie_sort_item *a, long *m, long k, ollie_sort_item x) {
    long j = *m;
    if (j == k) {
        if (!OLLIE_SORT_LESS(a[0], x)) return;
        j = 0;
        while (j + 1 < k && OLLIE_SORT_LESS(a[j + 1], x)) {
            a[j] = a[j + 1];
            j++;
        }
        a[j] = x;
        return;
    }
    (*m)++;
    while (j > 0 && OLLIE_SORT_LESS(x, a[j - 1])) {
        a[j] = a[j - 1];
        j--;
    }
    a[j] = x;
}
