#include "internal.h"
/* ---- CPU backend ---- */

static pf__cpu_rank *pf__cpu(pf__rank *r) { return (pf__cpu_rank *)r->backend_state; }
static int pf__cpu_rank_begin(pf__rank *r) {
    r->backend_state = calloc(1, sizeof(pf__cpu_rank));
    return r->backend_state ? 0 : -1;
}
static void pf__cpu_rank_end(pf__rank *r) {
    if (r->backend_state) free(pf__cpu(r)->matmul_scratch), free(pf__cpu(r)->parts_out), free(pf__cpu(r)->ordered_x);
    free(r->backend_state);
    r->backend_state = NULL;
}
/* Cache-line aligned: malloc's large blocks start 16 bytes into a page, which splits every
   512-bit load of weights and activations over two cache lines. */
#define PF__CPU_ALIGN 64
static void *pf__cpu_alloc(pf__rank *r, size_t bytes) {
    (void)r;
#ifdef _WIN32 /* no posix_memalign; its blocks go back through _aligned_free */
    return _aligned_malloc(bytes ? bytes : 1, PF__CPU_ALIGN);
#else
    void *ptr = NULL;
    return posix_memalign(&ptr, PF__CPU_ALIGN, bytes) == 0 ? ptr : NULL;
#endif
}
static void pf__cpu_free(pf__rank *r, void *ptr) {
    (void)r;
#ifdef _WIN32
    _aligned_free(ptr);
#else
    free(ptr);
#endif
}
static void pf__cpu_copy(pf__rank *r, void *dst, const void *src, size_t bytes) {
    (void)r;
    if (bytes) memcpy(dst, src, bytes);
}

#if defined(__GNUC__) || defined(__clang__)
#define PF__UNROLL _Pragma("GCC unroll 8")
#define PF__UNROLL16 _Pragma("GCC unroll 16") /* an array of 16 vectors indexed by constants stays in registers */
#else
#define PF__UNROLL
#define PF__UNROLL16
#endif

static void pf__cpu_embed(pf__rank *r, float *out, const pf__weight *tokens, const pf__step *s, float scale,
                          int first) {
    (void)r;
    size_t d = tokens->cols, n = (size_t)s->batch * s->seq_len;
    for (size_t row = 0; row < n; row++) {
        size_t id = (size_t)(s->ids[row] - first); /* wraps for ids below first */
        for (size_t i = 0; i < d; i++) out[row * d + i] = id < tokens->rows ? pf__weight_value(tokens->data, id * d + i, tokens->dtype) * scale : 0.0f;
    }
}

static void pf__cpu_download_rows(pf__rank *r, void *host, size_t host_stride, const void *src, size_t src_stride,
                                  size_t row_bytes, size_t rows) {
    (void)r;
    for (size_t i = 0; i < rows && row_bytes; i++)
        memcpy((char *)host + i * host_stride, (const char *)src + i * src_stride, row_bytes);
}

static void pf__cpu_add_positions(pf__rank *r, float *x, const pf__weight *table, const pf__step *s, int offset) {
    (void)r;
    size_t d = table->cols;
    for (int b = 0; b < s->batch; b++)
        for (int t = 0; t < s->seq_len; t++) {
            float *row = x + ((size_t)b * s->seq_len + t) * d;
            int position = s->past + t - (s->pad ? s->pad[b] : 0);
            size_t first = (size_t)(offset + (position > 0 ? position : 0)) * d;
            for (size_t i = 0; i < d; i++) row[i] += pf__weight_value(table->data, first + i, table->dtype);
        }
}

/* x[i] += (y[i] or 0) + (b[i] or 0), as written: the residual add (y or b may be NULL). */
static void pf__add_rows_portable(float *x, const float *y, const float *b, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] += (y ? y[i] : 0.0f) + (b ? b[i] : 0.0f);
}

/* out[i] = (float)(x[i] - mean) * inv * (g[i] + g_offset) (+ b[i]): a norm's row once its
   moments are known (g_offset 1: Gemma's 1 + w, else 0, which leaves g[i] as it is). */
static void pf__normalize_portable(float *out, const float *x, size_t n, double mean, float inv, const float *g,
                                   float g_offset, const float *b) {
    if (b)
        for (size_t i = 0; i < n; i++) out[i] = (float)(x[i] - mean) * inv * (g[i] + g_offset) + b[i];
    else
        for (size_t i = 0; i < n; i++) out[i] = (float)(x[i] - mean) * inv * (g[i] + g_offset);
}

/* sum plus x[i] - shift (squared where `squares`) for i = from..n - 1, in order. */
static double pf__sum_shifted_tail(double sum, const float *x, size_t from, size_t n, double shift, int squares) {
    for (size_t i = from; i < n; i++) sum += squares ? (x[i] - shift) * (x[i] - shift) : x[i] - shift;
    return sum;
}

/* The sum of x[i] - shift over n values (squared where `squares`), in double: sixteen chains
   (chain c takes the values i = c mod 16 of the whole sixteens), added pairwise (chain c + 8 into
   c, then c + 4, c + 2, c + 1), then the last n mod 16 values in order. Every kernel set computes
   exactly this (the AVX-512 one a chain a lane), so norms and softmax give the same bits on each;
   one chain of dependent double adds had made norms 3 % of a GPT-2 prefill. */
static double pf__sum_shifted_portable(const float *x, size_t n, double shift, int squares) {
    double s[16] = {0};
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int c = 0; c < 16; c++) {
            double d = x[i + c] - shift;
            s[c] += squares ? d * d : d;
        }
    for (int w = 8; w >= 1; w /= 2)
        for (int c = 0; c < w; c++) s[c] += s[c + w];
    return pf__sum_shifted_tail(s[0], x, i, n, shift, squares);
}

/* Attention's dot product where AVX2 is missing: in double with four independent sums, which
   the compiler can vectorise without -ffast-math. */
static float pf__dot(const float *a, const float *b, size_t n) {
    double s[4] = {0, 0, 0, 0};
    size_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (int k = 0; k < 4; k++) s[k] += (double)a[i + k] * b[i + k];
    double sum = (s[0] + s[1]) + (s[2] + s[3]);
    for (; i < n; i++) sum += (double)a[i] * b[i];
    return (float)sum;
}

/* The CPU matrix product, out[r][o] = sum_i x[r][i] w[o][i] + bias[o]. Products are summed in
   fp32 over chunks of PF__CHUNK inputs, and the chunk sums in double. Chunk boundaries are fixed
   in the whole tensor's columns (w->col_begin), so a rank holding columns a..b sums the very chunks
   one rank sums there (except the one a boundary cuts), in the same lanes when the boundary is a
   multiple of 8, and in the same order: a split sum then differs from the whole by
   little more than each rank's rounding of its partial to fp32, which the 1e-5 bound between rank
   counts needs; one fp32 sum per dot product missed it. Tiles of PF__TILE_ROWS rows of x by
   PF__TILE_OUTS weight rows keep 12 accumulators in registers (the AVX-512 tiles: 16 lanes, 24
   accumulators, chunks of PF__CHUNK_AVX512); blocks of PF__KBLOCK inputs, PF__OBLOCK weight rows
   and PF__RBLOCK rows of x keep what a tile reads in cache. */
#define PF__CHUNK 256
#define PF__KBLOCK (4 * PF__CHUNK)
#define PF__OBLOCK 96
#define PF__RBLOCK 48 /* whole tiles of 4, 6 or 8 rows */
#define PF__TILE_ROWS 4
#define PF__TILE_OUTS 3
#define PF__ROW_OUTS_AVX2 8     /* one row of x (decode): more weight rows in flight, 10% faster */
#define PF__ROW_OUTS_PORTABLE 4 /* its double lanes spill beyond 4 */
#define PF__ROW_OUTS_NEON 4     /* 32 vector registers: 8 weight rows' lanes and sums would spill */
#define PF__MAX_OUTS 8
#define PF__MAX_ROWS 8

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__) && !defined(PF_NO_AVX2)
#define PF__AVX2_TARGET __attribute__((target("avx2,fma,f16c")))

/* Lanes of a vector below `count`, as a maskload mask. */
PF__AVX2_TARGET static __m256i pf__lanes_below(size_t count) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(count < 8 ? count : 8)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
#else
#define PF__AVX2_TARGET
#endif

/* A tile adds sum over inputs [begin, end) of x[i][.] w[j][.] to acc[i * ld + j], for mr rows of x
   (stride k) and nr weight rows (stride k) stored in one dtype; chunks end at first_end, then
   every PF__CHUNK. */
typedef void (*pf__tile_fn)(double *acc, size_t ld, const float *x, const void *w, size_t k, size_t begin,
                            size_t end, size_t first_end);

/* Without AVX2 and FMA, the products are rounded to fp32 before an fp32 add, which makes the sums
   across a split chunk drift further apart (1.2e-5 between rank counts on OPT-350m's shape):
   this version sums exact products in double instead, so it needs no chunks. */
static PF__INLINE void pf__tile_portable(double *acc, size_t ld, const float *x, const void *w, size_t k,
                                         size_t begin, size_t end, size_t first_end, const int mr, const int nr,
                                         const int wt) {
    double lanes[PF__TILE_ROWS][PF__MAX_OUTS][4] = {{{0}}};
    (void)first_end;
    size_t p = begin;
    for (; p + 4 <= end; p += 4)
        PF__UNROLL for (int i = 0; i < mr; i++)
            PF__UNROLL for (int j = 0; j < nr; j++)
                PF__UNROLL for (int l = 0; l < 4; l++)
                    lanes[i][j][l] += (double)x[i * k + p + l] * pf__weight_value(w, j * k + p + l, wt);
    for (int i = 0; i < mr; i++)
        for (int j = 0; j < nr; j++) {
            double sum = (lanes[i][j][0] + lanes[i][j][1]) + (lanes[i][j][2] + lanes[i][j][3]);
            for (size_t q = p; q < end; q++) sum += (double)x[i * k + q] * pf__weight_value(w, j * k + q, wt);
            acc[i * ld + j] += sum;
        }
}

#ifdef PF__AVX2
/* The same sums with AVX2 and FMA: lane l of a chunk holds the products of inputs l, l + 8, ... */
/* Where weight i of w, stored as wt, is (for prefetching: it may be past the end). */
static PF__INLINE const char *pf__weight_address(const void *w, size_t i, const int wt) {
    return (const char *)w + i * (wt == PF__DTYPE_F32 ? sizeof(float) : sizeof(uint16_t));
}

/* Weights i.. of w, stored as wt, as eight fp32 lanes; with count < 8, lanes from count on are 0. */
PF__AVX2_TARGET static PF__INLINE __m256 pf__load_weights_avx2(const void *w, size_t i, size_t count, const int wt) {
    __m128i half;
    if (wt == PF__DTYPE_F32)
        return count >= 8 ? _mm256_loadu_ps((const float *)w + i) : _mm256_maskload_ps((const float *)w + i, pf__lanes_below(count));
    if (count >= 8) {
        half = _mm_loadu_si128((const __m128i *)((const uint16_t *)w + i));
    } else {
        uint16_t part[8] = {0};
        memcpy(part, (const uint16_t *)w + i, count * sizeof(uint16_t));
        half = _mm_loadu_si128((const __m128i *)part);
    }
    if (wt == PF__DTYPE_BF16) return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(half), 16));
    return _mm256_cvtph_ps(half);
}

PF__AVX2_TARGET static PF__INLINE void pf__tile_avx2(double *acc, size_t ld, const float *x, const void *w, size_t k,
                                                     size_t begin, size_t end, size_t first_end, const int mr,
                                                     const int nr, const int wt) {
    __m256d sums[PF__MAX_ROWS][PF__MAX_OUTS];
    PF__UNROLL for (int i = 0; i < mr; i++)
        PF__UNROLL for (int j = 0; j < nr; j++) sums[i][j] = _mm256_setzero_pd();
    for (size_t c0 = begin; c0 < end;) {
        size_t c1 = c0 < first_end ? first_end : c0 + PF__CHUNK;
        if (c1 > end) c1 = end;
        __m256 lanes[PF__MAX_ROWS][PF__MAX_OUTS];
        PF__UNROLL for (int i = 0; i < mr; i++)
            PF__UNROLL for (int j = 0; j < nr; j++) lanes[i][j] = _mm256_setzero_ps();
        size_t p = c0;
        /* One row of x against 16-bit weights (decode): one 32-byte load gives 16 inputs of a row
           (two steps of 8, in the same order per lane as the loop below), half the loads per byte
           streamed. With more rows of x, their registers would not fit. */
        for (; wt != PF__DTYPE_F32 && mr == 1 && p + 16 <= c1; p += 16) {
            __m256 x_low[PF__MAX_ROWS], x_high[PF__MAX_ROWS];
            PF__UNROLL for (int i = 0; i < mr; i++) {
                x_low[i] = _mm256_loadu_ps(x + i * k + p);
                x_high[i] = _mm256_loadu_ps(x + i * k + p + 8);
            }
            PF__UNROLL for (int j = 0; j < nr; j++) {
                _mm_prefetch(pf__weight_address(w, (size_t)(j + nr) * k + p, wt), _MM_HINT_T0);
                __m256i both = _mm256_loadu_si256((const __m256i *)((const uint16_t *)w + j * k + p));
                __m256 low, high;
                if (wt == PF__DTYPE_BF16) {
                    low = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm256_castsi256_si128(both)), 16));
                    high = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm256_extracti128_si256(both, 1)), 16));
                } else {
                    low = _mm256_cvtph_ps(_mm256_castsi256_si128(both));
                    high = _mm256_cvtph_ps(_mm256_extracti128_si256(both, 1));
                }
                PF__UNROLL for (int i = 0; i < mr; i++) {
                    lanes[i][j] = _mm256_fmadd_ps(x_low[i], low, lanes[i][j]);
                    lanes[i][j] = _mm256_fmadd_ps(x_high[i], high, lanes[i][j]);
                }
            }
        }
        for (; p + 8 <= c1; p += 8) {
            __m256 wv[PF__MAX_OUTS];
            if (mr == 1) /* decode streams the weights: fetch the next tile's rows meanwhile */
                PF__UNROLL for (int j = 0; j < nr; j++)
                    _mm_prefetch(pf__weight_address(w, (size_t)(j + nr) * k + p, wt), _MM_HINT_T0);
            PF__UNROLL for (int j = 0; j < nr; j++) wv[j] = pf__load_weights_avx2(w, j * k + p, 8, wt);
            PF__UNROLL for (int i = 0; i < mr; i++) {
                __m256 xv = _mm256_loadu_ps(x + i * k + p);
                PF__UNROLL for (int j = 0; j < nr; j++) lanes[i][j] = _mm256_fmadd_ps(xv, wv[j], lanes[i][j]);
            }
        }
        if (p < c1) { /* the chunk's last few inputs: the lanes past them load zeros */
            __m256 wv[PF__MAX_OUTS];
            __m256i mask = pf__lanes_below(c1 - p);
            PF__UNROLL for (int j = 0; j < nr; j++) wv[j] = pf__load_weights_avx2(w, j * k + p, c1 - p, wt);
            PF__UNROLL for (int i = 0; i < mr; i++) {
                __m256 xv = _mm256_maskload_ps(x + i * k + p, mask);
                PF__UNROLL for (int j = 0; j < nr; j++) lanes[i][j] = _mm256_fmadd_ps(xv, wv[j], lanes[i][j]);
            }
        }
        PF__UNROLL for (int i = 0; i < mr; i++)
            PF__UNROLL for (int j = 0; j < nr; j++) {
                __m256d low = _mm256_cvtps_pd(_mm256_castps256_ps128(lanes[i][j]));
                __m256d high = _mm256_cvtps_pd(_mm256_extractf128_ps(lanes[i][j], 1));
                sums[i][j] = _mm256_add_pd(sums[i][j], _mm256_add_pd(low, high));
            }
        c0 = c1;
    }
    for (int i = 0; i < mr; i++)
        for (int j = 0; j < nr; j++) {
            double d[4];
            _mm256_storeu_pd(d, sums[i][j]);
            acc[i * ld + j] += (d[0] + d[1]) + (d[2] + d[3]);
        }
}
#endif

/* The tile shapes the blocked loop needs, for one instruction set and weight dtype: full tiles
   (`rows` rows of x by `cols` weight rows), then the weight rows left at a panel's end, then
   single rows of x (all of decode) against `outs` weight rows. */
#define PF__TILE_SHAPES_OF(isa, target, rows, cols, outs, dt, wt)                                                      \
    target static void pf__tile_##isa##_##dt##_full(double *a, size_t ld, const float *x, const void *w, size_t k,    \
                                                    size_t b, size_t e, size_t f) {                                   \
        pf__tile_##isa(a, ld, x, w, k, b, e, f, rows, cols, wt);                                                       \
    }                                                                                                                  \
    target static void pf__tile_##isa##_##dt##_rows(double *a, size_t ld, const float *x, const void *w, size_t k,    \
                                                    size_t b, size_t e, size_t f) {                                   \
        pf__tile_##isa(a, ld, x, w, k, b, e, f, rows, 1, wt);                                                          \
    }                                                                                                                  \
    target static void pf__tile_##isa##_##dt##_outs(double *a, size_t ld, const float *x, const void *w, size_t k,    \
                                                    size_t b, size_t e, size_t f) {                                   \
        pf__tile_##isa(a, ld, x, w, k, b, e, f, 1, outs, wt);                                                         \
    }                                                                                                                  \
    target static void pf__tile_##isa##_##dt##_one(double *a, size_t ld, const float *x, const void *w, size_t k,     \
                                                   size_t b, size_t e, size_t f) {                                    \
        pf__tile_##isa(a, ld, x, w, k, b, e, f, 1, 1, wt);                                                            \
    }                                                                                                                  \
    static const pf__tile_fn pf__tiles_##isa##_##dt[4] = {pf__tile_##isa##_##dt##_full, pf__tile_##isa##_##dt##_rows, \
                                                          pf__tile_##isa##_##dt##_outs, pf__tile_##isa##_##dt##_one};
/* ... for each weight dtype, indexed by pf__dtype. */
#define PF__TILE_SHAPES(isa, target, rows, cols, outs)                                                                 \
    PF__TILE_SHAPES_OF(isa, target, rows, cols, outs, f32, PF__DTYPE_F32)                                              \
    PF__TILE_SHAPES_OF(isa, target, rows, cols, outs, f16, PF__DTYPE_F16)                                              \
    PF__TILE_SHAPES_OF(isa, target, rows, cols, outs, bf16, PF__DTYPE_BF16)                                            \
    static const pf__tile_fn *const pf__tiles_##isa[3] = {pf__tiles_##isa##_f32, pf__tiles_##isa##_f16,               \
                                                          pf__tiles_##isa##_bf16};
PF__TILE_SHAPES(portable, , PF__TILE_ROWS, PF__TILE_OUTS, PF__ROW_OUTS_PORTABLE)
#ifdef PF__AVX2
PF__TILE_SHAPES(avx2, PF__AVX2_TARGET, PF__TILE_ROWS, PF__TILE_OUTS, PF__ROW_OUTS_AVX2)
#endif
#ifdef PF__NEON
/* The portable tile's sums on ARM64's NEON, lane for lane: exact products summed in 4 double
   lanes (lane l holds inputs l, l + 4, ...; a double FMA of two fp32 values rounds as the
   portable product-then-add does, the product being exact), added up as ((0 + 1) + (2 + 3)),
   then the last few inputs in order: the portable kernels' bits. The AVX2 tile's fp32 chunks,
   lane for lane on NEON beside the portable attention and activations, put Gemma 2's fixture
   1.2e-5 apart between rank counts, past the 1e-5 bound.
   16-bit weights are widened to fp32 (exact) and take these tiles. FEAT_FP16's fmla would round
   each product and sum to fp16, and FEAT_BF16's bfdot / bfmmla sum pairs of products with their
   own rounding (round-to-odd, denormals flushed, without FEAT_EBF16) and round x to bf16: neither
   gives these sums' bits, so neither is used. */

/* Weights i..i+3 of w, stored as wt, as fp32 lanes. */
static PF__INLINE float32x4_t pf__load4_weights_neon(const void *w, size_t i, const int wt) {
    if (wt == PF__DTYPE_F32) return vld1q_f32((const float *)w + i);
    uint16x4_t h = vld1_u16((const uint16_t *)w + i);
    if (wt == PF__DTYPE_BF16) return vreinterpretq_f32_u32(vshll_n_u16(h, 16));
    return vcvt_f32_f16(vreinterpret_f16_u16(h));
}

/* Adds 4 inputs' products from p to the lanes of mr rows of x by nr weight rows. */
static PF__INLINE void pf__tile_step4_neon(float64x2_t lanes[][PF__MAX_OUTS][2], const float *x, const void *w,
                                           size_t k, size_t p, const int mr, const int nr, const int wt) {
    float64x2_t wd[PF__MAX_OUTS][2];
    PF__UNROLL for (int j = 0; j < nr; j++) {
        float32x4_t v = pf__load4_weights_neon(w, j * k + p, wt);
        wd[j][0] = vcvt_f64_f32(vget_low_f32(v)), wd[j][1] = vcvt_high_f64_f32(v);
    }
    PF__UNROLL for (int i = 0; i < mr; i++) {
        float32x4_t xv = vld1q_f32(x + i * k + p);
        float64x2_t x_low = vcvt_f64_f32(vget_low_f32(xv)), x_high = vcvt_high_f64_f32(xv);
        PF__UNROLL for (int j = 0; j < nr; j++) {
            lanes[i][j][0] = vfmaq_f64(lanes[i][j][0], x_low, wd[j][0]);
            lanes[i][j][1] = vfmaq_f64(lanes[i][j][1], x_high, wd[j][1]);
        }
    }
}

static PF__INLINE void pf__tile_neon(double *acc, size_t ld, const float *x, const void *w, size_t k, size_t begin,
                                     size_t end, size_t first_end, const int mr, const int nr, const int wt) {
    float64x2_t lanes[PF__TILE_ROWS][PF__MAX_OUTS][2]; /* double lanes 0-1, 2-3 */
    (void)first_end;
    PF__UNROLL for (int i = 0; i < mr; i++)
        PF__UNROLL for (int j = 0; j < nr; j++) lanes[i][j][0] = lanes[i][j][1] = vdupq_n_f64(0);
    size_t p = begin;
    for (; p + 4 <= end; p += 4) pf__tile_step4_neon(lanes, x, w, k, p, mr, nr, wt);
    for (int i = 0; i < mr; i++)
        for (int j = 0; j < nr; j++) {
            double sum = (vgetq_lane_f64(lanes[i][j][0], 0) + vgetq_lane_f64(lanes[i][j][0], 1)) +
                         (vgetq_lane_f64(lanes[i][j][1], 0) + vgetq_lane_f64(lanes[i][j][1], 1));
            for (size_t q = p; q < end; q++) sum += (double)x[i * k + q] * pf__weight_value(w, j * k + q, wt);
            acc[i * ld + j] += sum;
        }
}
PF__TILE_SHAPES(neon, , PF__TILE_ROWS, PF__TILE_OUTS, PF__ROW_OUTS_NEON)

static void pf__widen_neon(float *out, const void *w, int wt, size_t count) {
    size_t i = 0;
    for (; i + 4 <= count; i += 4) vst1q_f32(out + i, pf__load4_weights_neon(w, i, wt));
    for (; i < count; i++) out[i] = pf__weight_value(w, i, wt);
}
#endif

/* count fp16 or bf16 weights (wt) of w as fp32 in out. The conversion is exact, so the fp32 tiles
   over the copy sum exactly what the 16-bit tiles sum over w. */
static void pf__widen_portable(float *out, const void *w, int wt, size_t count) {
    for (size_t i = 0; i < count; i++) out[i] = pf__weight_value(w, i, wt);
}
#ifdef PF__AVX2
PF__AVX2_TARGET static void pf__widen_avx2(float *out, const void *w, int wt, size_t count) {
    size_t i = 0;
    for (; i + 8 <= count; i += 8) _mm256_storeu_ps(out + i, pf__load_weights_avx2(w, i, 8, wt));
    for (; i < count; i++) out[i] = pf__weight_value(w, i, wt);
}
#endif

/* A product's outputs from its double sums: out[i] = acc[i] rounded to fp32, plus bias[i] (bias
   may be NULL). In vectors where there are: one output at a time was 4 % of a GPT-2 prefill. */
static void pf__store_sums_portable(float *out, const double *acc, const float *bias, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = (float)acc[i] + (bias ? bias[i] : 0.0f);
}
#ifdef PF__AVX2
PF__AVX2_TARGET static void pf__store_sums_avx2(float *out, const double *acc, const float *bias, size_t n) {
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        __m128 v = _mm256_cvtpd_ps(_mm256_loadu_pd(acc + i));
        _mm_storeu_ps(out + i, bias ? _mm_add_ps(v, _mm_loadu_ps(bias + i)) : v);
    }
    pf__store_sums_portable(out + i, acc + i, bias ? bias + i : NULL, n - i);
}
#endif

/* The activations' blocks as the Q8 products take them: block b of x (32 values) as int8 values
   qx (the value over d, rounded), its scale d = max |v| / 127 in dx[b] and the sum of its int8
   values in sx[b] (Q4's products take 8 times it away). Every kernel set gives the same bits. */
typedef void pf__quantize_x_fn(int8_t *qx, float *dx, int32_t *sx, const float *x, size_t blocks);

static void pf__quantize_x_portable(int8_t *qx, float *dx, int32_t *sx, const float *x, size_t blocks) {
    for (size_t b = 0; b < blocks; b++) {
        const float *v = x + b * PF__Q8_BLOCK;
        float largest = 0;
        for (int i = 0; i < PF__Q8_BLOCK; i++) largest = fabsf(v[i]) > largest ? fabsf(v[i]) : largest;
        float d = largest / 127.0f, inverse = d > 0 ? 1.0f / d : 0.0f;
        int32_t sum = 0;
        for (int i = 0; i < PF__Q8_BLOCK; i++) sum += qx[b * PF__Q8_BLOCK + i] = pf__round_to_int8(v[i] * inverse);
        dx[b] = d;
        sx[b] = sum;
    }
}

#ifdef PF__AVX2
/* The portable kernels above in 8 lanes, every element through the same operations in the same
   order (tails by the portable code), so the AVX2 set gives their bits. On AVX2-only processors
   they ran portable: quantizing activations was 6 % of a q4 prefill there. */
PF__AVX2_TARGET static void pf__quantize_x_avx2(int8_t *qx, float *dx, int32_t *sx, const float *x, size_t blocks) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (size_t b = 0; b < blocks; b++) {
        const float *v = x + b * PF__Q8_BLOCK;
        __m256 part[4], largest = _mm256_setzero_ps();
        for (int k = 0; k < 4; k++) { /* vmaxps returns its second operand for a NaN: passed over */
            part[k] = _mm256_loadu_ps(v + 8 * k);
            largest = _mm256_max_ps(_mm256_andnot_ps(sign, part[k]), largest);
        }
        __m128 m = _mm_max_ps(_mm256_castps256_ps128(largest), _mm256_extractf128_ps(largest, 1));
        m = _mm_max_ps(m, _mm_movehl_ps(m, m));
        m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
        float d = _mm_cvtss_f32(m) / 127.0f, inverse = d > 0 ? 1.0f / d : 0.0f;
        __m256i sum = _mm256_setzero_si256();
        for (int k = 0; k < 4; k++) { /* pf__round_to_int8 lane by lane */
            __m256 y = _mm256_mul_ps(part[k], _mm256_set1_ps(inverse));
            __m256i t = _mm256_cvttps_epi32(y);
            __m256 rest = _mm256_sub_ps(y, _mm256_cvtepi32_ps(t));
            t = _mm256_sub_epi32(t, _mm256_castps_si256(_mm256_cmp_ps(rest, _mm256_set1_ps(0.5f), _CMP_GE_OQ)));
            t = _mm256_add_epi32(t, _mm256_castps_si256(_mm256_cmp_ps(rest, _mm256_set1_ps(-0.5f), _CMP_LE_OQ)));
            t = _mm256_blendv_epi8(t, _mm256_set1_epi32(-127),
                                   _mm256_castps_si256(_mm256_cmp_ps(y, _mm256_set1_ps(-127.5f), _CMP_NGT_UQ)));
            t = _mm256_blendv_epi8(t, _mm256_setzero_si256(), _mm256_castps_si256(_mm256_cmp_ps(y, y, _CMP_UNORD_Q)));
            t = _mm256_blendv_epi8(t, _mm256_set1_epi32(127),
                                   _mm256_castps_si256(_mm256_cmp_ps(y, _mm256_set1_ps(127.5f), _CMP_GE_OQ)));
            sum = _mm256_add_epi32(sum, t);
            __m128i words = _mm_packs_epi32(_mm256_castsi256_si128(t), _mm256_extracti128_si256(t, 1));
            _mm_storel_epi64((__m128i *)(qx + b * PF__Q8_BLOCK + 8 * k), _mm_packs_epi16(words, words));
        }
        __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(sum), _mm256_extracti128_si256(sum, 1));
        s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4e));
        s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xb1));
        dx[b] = d;
        sx[b] = _mm_cvtsi128_si32(s4);
    }
}

/* pf__sum_shifted_portable with chains 0-15 in four vectors' lanes, added up as there. */
PF__AVX2_TARGET static double pf__sum_shifted_avx2(const float *x, size_t n, double shift, int squares) {
    __m256d c[4] = {_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd()};
    __m256d by = _mm256_set1_pd(shift);
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int k = 0; k < 4; k++) {
            __m256d d = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + i + 4 * k)), by);
            c[k] = _mm256_add_pd(c[k], squares ? _mm256_mul_pd(d, d) : d);
        }
    __m256d four = _mm256_add_pd(_mm256_add_pd(c[0], c[2]), _mm256_add_pd(c[1], c[3]));
    __m128d two = _mm_add_pd(_mm256_castpd256_pd128(four), _mm256_extractf128_pd(four, 1));
    return pf__sum_shifted_tail(_mm_cvtsd_f64(_mm_add_sd(two, _mm_unpackhi_pd(two, two))), x, i, n, shift, squares);
}

PF__AVX2_TARGET static void pf__add_rows_avx2(float *x, const float *y, const float *b, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 t = _mm256_add_ps(y ? _mm256_loadu_ps(y + i) : _mm256_setzero_ps(), b ? _mm256_loadu_ps(b + i) : _mm256_setzero_ps());
        _mm256_storeu_ps(x + i, _mm256_add_ps(_mm256_loadu_ps(x + i), t));
    }
    pf__add_rows_portable(x + i, y ? y + i : NULL, b ? b + i : NULL, n - i);
}

PF__AVX2_TARGET static void pf__normalize_avx2(float *out, const float *x, size_t n, double mean, float inv, const float *g,
                                               float g_offset, const float *b) {
    __m256d m = _mm256_set1_pd(mean);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128 low = _mm256_cvtpd_ps(_mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + i)), m));
        __m128 high = _mm256_cvtpd_ps(_mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + i + 4)), m));
        __m256 gain = _mm256_add_ps(_mm256_loadu_ps(g + i), _mm256_set1_ps(g_offset));
        __m256 v = _mm256_mul_ps(_mm256_mul_ps(_mm256_set_m128(high, low), _mm256_set1_ps(inv)), gain);
        if (b) v = _mm256_add_ps(v, _mm256_loadu_ps(b + i));
        _mm256_storeu_ps(out + i, v);
    }
    pf__normalize_portable(out + i, x + i, n - i, mean, inv, g + i, g_offset, b ? b + i : NULL);
}
#endif

/* Q8 matrix products. The activations are quantized like the weights, per block of PF__Q8_BLOCK
   inputs (an fp32 scale dx and int8 values in -127..127), so each block's product is an exact
   integer dot of 32 int8 pairs. out[r][o] is then defined as one fp32 chain over the blocks in
   order: sum = fma((float)dot_b, dx[r][b] * d_o[b], sum), from 0. Every kernel set and tile shape
   computes exactly that (the dots are integers, so any order of adding their products gives
   them), hence the same bits: a row's outputs do not depend on its batch or on the processor's
   kernels, and an AMX tile (whole-block dots) can stand in for the vector ones. A
   pf__q8_rows_fn computes it for `rows` rows of x (qx [rows][nb * 32], dx [rows][nb]) against
   n_out weight rows, into out (rows ld apart). Q4 weights take the same form: their blocks' dot
   is sum q x - 8 sum x, sx [rows][nb] holding each block's sum of x's int8 values. */
typedef void pf__q8_rows_fn(float *out, size_t ld, const int8_t *qx, const float *dx, const int32_t *sx, size_t rows,
                            const unsigned char *w, size_t nb, size_t n_out);
/* A matrix engine's form (AMX): whole tiles of 16 weight rows (n_out a multiple of 16) against
   PF__Q8_TILES_ROWS rows of x or more, the bias added, in scratch past the activations' blocks
   (pf__quantized_x_bytes counts it). */
#define PF__Q8_TILES_ROWS 16
typedef void pf__q8_tiles_fn(float *out, size_t ld, const int8_t *qx, const float *dx, const int32_t *sx, size_t rows,
                             const unsigned char *w, size_t nb, size_t n_out, const float *bias, void *scratch);

/* A bf16 product on a matrix engine (AMX-BF16, for pf_parallel_options.bf16_products):
   out[rows][n_out] (rows ld apart) = x rounded to bf16 times bf16 weights w[n_out][k] transposed,
   plus bias; k a multiple of 32; scratch of pf__bf16_tiles_bytes. */
typedef void pf__bf16_tiles_fn(float *out, size_t ld, const float *x, size_t rows, const void *w, size_t k,
                               size_t n_out, const float *bias, void *scratch);

/* out[r][o] += bias[o] for `rows` rows of `count` outputs, ld apart (nothing without a bias). */
static void pf__add_bias(float *out, size_t ld, const float *bias, size_t rows, size_t count) {
    if (bias)
        for (size_t r = 0; r < rows; r++)
            for (size_t o = 0; o < count; o++) out[r * ld + o] += bias[o];
}

/* A block's exact dot with 32 int8 values of x: Q8's int8 weights, or Q4's nibbles less 8. */
static int32_t pf__block_dot_portable(const unsigned char *block, const int8_t *x, int32_t x_sum, int q4) {
    /* summed in 64 bits: GCC 12 with AVX-VNNI (-march=native) compiles a signed-char dot summed in
       32 bits to vpdpbusd, which reads one operand as unsigned */
    int64_t dot = 0;
    if (!q4)
        for (int i = 0; i < PF__Q8_BLOCK; i++) dot += (int64_t)x[i] * (int8_t)block[2 + i];
    else {
        for (int i = 0; i < PF__Q8_BLOCK / 2; i++)
            dot += (int64_t)(block[2 + i] & 15) * x[i] + (int64_t)(block[2 + i] >> 4) * x[i + PF__Q8_BLOCK / 2];
        dot -= 8 * (int64_t)x_sum;
    }
    return (int32_t)dot;
}

static PF__INLINE void pf__quantized_rows_portable(float *out, size_t ld, const int8_t *qx, const float *dx,
                                                   const int32_t *sx, size_t rows, const unsigned char *w, size_t nb,
                                                   size_t n_out, int q4) {
    size_t row_bytes = nb * (q4 ? PF__Q4_BYTES : PF__Q8_BYTES), k = nb * PF__Q8_BLOCK;
    for (size_t r = 0; r < rows; r++)
        for (size_t o = 0; o < n_out; o++) {
            const unsigned char *row = w + o * row_bytes;
            float sum = 0;
            for (size_t b = 0; b < nb; b++) {
                const unsigned char *block = row + b * (q4 ? PF__Q4_BYTES : PF__Q8_BYTES);
                int32_t dot = pf__block_dot_portable(block, qx + r * k + b * PF__Q8_BLOCK, sx[r * nb + b], q4);
                float scale = dx[r * nb + b] * pf__q8_scale(block);
                sum = fmaf((float)dot, scale, sum);
            }
            out[r * ld + o] = sum;
        }
}

static void pf__q8_rows_portable(float *out, size_t ld, const int8_t *qx, const float *dx, const int32_t *sx,
                                 size_t rows, const unsigned char *w, size_t nb, size_t n_out) {
    pf__quantized_rows_portable(out, ld, qx, dx, sx, rows, w, nb, n_out, 0);
}

static void pf__q4_rows_portable(float *out, size_t ld, const int8_t *qx, const float *dx, const int32_t *sx,
                                 size_t rows, const unsigned char *w, size_t nb, size_t n_out) {
    pf__quantized_rows_portable(out, ld, qx, dx, sx, rows, w, nb, n_out, 1);
}

#ifdef PF__AVX2
/* Eight int32 sums of products of 32 int8 pairs: maddubs wants one unsigned operand, so w's sign
   moves onto x. That way round a weight of -128 (a GGUF file may hold one; our quantizers never
   write it) is exact: |w| <= 128 fits the unsigned byte, and x (-127..127, the activations'
   quantizer) negates without overflow, so no pair sum passes 2 * 128 * 127 < 2^15. */
PF__AVX2_TARGET static PF__INLINE __m256i pf__q8_dot_avx2(__m256i x, __m256i w) {
    __m256i pairs = _mm256_maddubs_epi16(_mm256_abs_epi8(w), _mm256_sign_epi8(x, w));
    return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
}

PF__AVX2_TARGET static float pf__hsum_avx2(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

/* The exact dots of 8 weight rows' blocks, one row's 8 int32 partial sums in each of d[0..7], as
   one vector of the 8 rows' dots (in row order). */
PF__AVX2_TARGET static PF__INLINE __m256i pf__sum_lanes8_avx2(const __m256i d[8]) {
    __m256i low = _mm256_hadd_epi32(_mm256_hadd_epi32(d[0], d[1]), _mm256_hadd_epi32(d[2], d[3]));
    __m256i high = _mm256_hadd_epi32(_mm256_hadd_epi32(d[4], d[5]), _mm256_hadd_epi32(d[6], d[7]));
    /* low: rows 0-3's sums of lanes 0-3, then of lanes 4-7; high: rows 4-7's */
    return _mm256_add_epi32(_mm256_permute2x128_si256(low, high, 0x20), _mm256_permute2x128_si256(low, high, 0x31));
}

/* The fp16 scales of 8 blocks, at byte offsets `at` from base, as fp32 lanes (the gather reads a
   block's first 4 bytes: its scale and 2 bytes of its values). */
PF__AVX2_TARGET static PF__INLINE __m256 pf__block_scales_avx2(const unsigned char *base, __m256i at) {
    __m256i words = _mm256_and_si256(_mm256_i32gather_epi32((const int *)base, at, 1), _mm256_set1_epi32(0xffff));
    __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(words, words), 0x08); /* the 8 halves first */
    return _mm256_cvtph_ps(_mm256_castsi256_si128(packed));
}

/* Byte offsets of weight rows o.. (ones past n_out repeat row o) from w, as gather indices. */
#define PF__ROW_OFFSETS(at, count, o, n_out, row_bytes)                                                              \
    int32_t at[count];                                                                                               \
    for (size_t i_ = 0; i_ < (count); i_++) at[i_] = (int32_t)(((o) + ((o) + i_ < (n_out) ? i_ : 0)) * (row_bytes))

/* The tile of the AVX2 kernels: R rows of x by 8 weight rows, each weight block loaded once for
   the R rows; dot() gives a block's 8 int32 partial sums (maddubs and madd), which add up to its
   exact dot plus 2^shift sum x (Q4's to sum q x: shift 3; Q8's to the dot itself: shift 0). R is
   a constant where it is inlined. */
/* Prefetching a tile's weights. A tile reads its 8 or 16 rows side by side, as many short
   streams (a row of 2048 inputs is 2 KiB of Q8), which the hardware prefetchers follow badly: each
   row a few bytes ahead only (PF__Q8_NEAR, into L1), and the next tile's rows, which lie right
   after this tile's, one linear stream into L2 at the pace this tile consumes its own
   (pf__prefetch_next_tile). Decode's Q8 product read 21-24 GB/s of weights so, against 12-13
   with each row 8.5 KiB ahead into L1 (more than L1 holds for 16 rows), and Q4's 16-20 against 9
   (Zen 4, harness over 140 MB, rows of 1024 to 8192 inputs). */
#define PF__Q8_NEAR 544 /* bytes ahead in each row: 16 Q8 blocks */

/* The next tile's bytes (from next) that block b's step prefetches: as many as the step reads of
   its own tile (step bytes: a block of each row), so that the next tile is in L2 when it starts. */
static PF__INLINE void pf__prefetch_next_tile(const unsigned char *next, size_t step, size_t b) {
    for (size_t c = (b * step + 63) & ~(size_t)63; c < (b + 1) * step; c += 64) _mm_prefetch((const char *)(next + c), _MM_HINT_T2);
}

#define PF__Q8_TILE(name, target, R, BYTES, load, dot, shift)                                                          \
    target static void name(float *out, size_t ld, const int8_t *qx, const float *dx, const int32_t *sx, size_t rows,\
                            const unsigned char *w, size_t nb, size_t n_out) {                                       \
        size_t row_bytes = nb * BYTES, k = nb * PF__Q8_BLOCK;                                                       \
        for (size_t r0 = 0; r0 < rows; r0 += R) {                                                                   \
            size_t nr = rows - r0 < R ? rows - r0 : R;                                                              \
            for (size_t o = 0; o < n_out; o += 8) {                                                                 \
                size_t no = n_out - o < 8 ? n_out - o : 8;                                                          \
                PF__ROW_OFFSETS(at, 8, o, n_out, row_bytes);                                                        \
                __m256i offsets = _mm256_loadu_si256((const __m256i *)at);                                          \
                __m256 acc[R];                                                                                      \
                PF__UNROLL for (int r = 0; r < R; r++) acc[r] = _mm256_setzero_ps();                                \
                for (size_t b = 0; b < nb; b++) {                                                                   \
                    const unsigned char *blocks = w + b * BYTES;                                                    \
                    __m256i wv[8];                                                                                  \
                    pf__prefetch_next_tile(w + (o + 8) * row_bytes, 8 * BYTES, b);                          \
                    PF__UNROLL for (int j = 0; j < 8; j++) {                                                        \
                        _mm_prefetch((const char *)(blocks + at[j] + PF__Q8_NEAR), _MM_HINT_T0);                   \
                        wv[j] = load(blocks + at[j] + 2);                                                           \
                    }                                                                                               \
                    __m256 dw = pf__block_scales_avx2(blocks, offsets);                                             \
                    PF__UNROLL for (int r = 0; r < R; r++) {                                                        \
                        size_t rr = r0 + ((size_t)r < nr ? (size_t)r : 0);                                          \
                        __m256i xv = _mm256_loadu_si256((const __m256i *)(qx + rr * k + b * PF__Q8_BLOCK)), d[8];   \
                        PF__UNROLL for (int j = 0; j < 8; j++) d[j] = dot(xv, wv[j]);                               \
                        int32_t beyond = shift ? sx[rr * nb + b] * (1 << shift) : 0;                                 \
                        __m256i dots = _mm256_sub_epi32(pf__sum_lanes8_avx2(d), _mm256_set1_epi32(beyond));         \
                        acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dots), _mm256_mul_ps(_mm256_set1_ps(dx[rr * nb + b]), dw), \
                                                 acc[r]);                                                           \
                    }                                                                                               \
                }                                                                                                   \
                for (size_t r = 0; r < nr; r++) {                                                                   \
                    float lanes[8];                                                                                 \
                    _mm256_storeu_ps(lanes, acc[r]);                                                                \
                    memcpy(out + (r0 + r) * ld + o, lanes, no * sizeof(float));                                     \
                }                                                                                                   \
            }                                                                                                       \
        }                                                                                                           \
    }

/* A Q8 block's 32 values; a Q4 block's, unpacked to 0..15 (low nibbles first, as the layout). */
PF__AVX2_TARGET static PF__INLINE __m256i pf__q8_load(const unsigned char *q) { return _mm256_loadu_si256((const __m256i *)q); }
PF__AVX2_TARGET static PF__INLINE __m256i pf__q4_load(const unsigned char *q) {
    __m128i packed = _mm_loadu_si128((const __m128i *)q);
    __m256i both = _mm256_set_m128i(_mm_srli_epi16(packed, 4), packed);
    return _mm256_and_si256(both, _mm256_set1_epi8(15));
}

/* q (0..15) is maddubs' unsigned operand as it is: the lanes add up to sum q x, and the tile takes
   8 sum x away from the total. */
PF__AVX2_TARGET static PF__INLINE __m256i pf__q4_dot_avx2(__m256i x, __m256i q) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(q, x), _mm256_set1_epi16(1));
}

PF__Q8_TILE(pf__q8_rows_avx2, PF__AVX2_TARGET, 2, PF__Q8_BYTES, pf__q8_load, pf__q8_dot_avx2, 0)
PF__Q8_TILE(pf__q8_row_avx2, PF__AVX2_TARGET, 1, PF__Q8_BYTES, pf__q8_load, pf__q8_dot_avx2, 0) /* decode: one row */
PF__Q8_TILE(pf__q4_rows_avx2, PF__AVX2_TARGET, 2, PF__Q4_BYTES, pf__q4_load, pf__q4_dot_avx2, 3)
/* Decode's Q4 product (one row of x): two weight rows' 16 packed bytes share one vector, so each
   maddubs multiplies two rows' nibbles by x's 16 values repeated in both halves; a row's 8 int16
   pair sums of its low and high nibbles (at most 2 * 2 * 15 * 127) add in int16, and three hadds
   leave the 8 rows' dots in one vector: a third of the tile's instructions per block, which
   otherwise held decode below the memory's speed. */
PF__AVX2_TARGET static void pf__q4_row_pairs_avx2(float *out, size_t ld, const int8_t *qx, const float *dx,
                                                  const int32_t *sx, size_t rows, const unsigned char *w, size_t nb,
                                                  size_t n_out) {
    size_t row_bytes = nb * PF__Q4_BYTES, k = nb * PF__Q8_BLOCK;
    const __m256i nibble = _mm256_set1_epi8(15), ones = _mm256_set1_epi16(1);
    const __m256i row_order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7); /* the hadds leave rows 0 2 4 6 1 3 5 7 */
    for (size_t r = 0; r < rows; r++)
        for (size_t o = 0; o < n_out; o += 8) {
            size_t no = n_out - o < 8 ? n_out - o : 8;
            PF__ROW_OFFSETS(at, 8, o, n_out, row_bytes);
            __m256i offsets = _mm256_loadu_si256((const __m256i *)at);
            __m256 acc = _mm256_setzero_ps();
            for (size_t b = 0; b < nb; b++) {
                const unsigned char *blocks = w + b * PF__Q4_BYTES;
                const int8_t *xb = qx + r * k + b * PF__Q8_BLOCK;
                __m256i x_low = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)xb));
                __m256i x_high = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(xb + 16)));
                __m256i pair[4];
                pf__prefetch_next_tile(w + (o + 8) * row_bytes, 8 * PF__Q4_BYTES, b);
                PF__UNROLL for (int p = 0; p < 4; p++) {
                    _mm_prefetch((const char *)(blocks + at[2 * p] + PF__Q8_NEAR), _MM_HINT_T0);
                    _mm_prefetch((const char *)(blocks + at[2 * p + 1] + PF__Q8_NEAR), _MM_HINT_T0);
                    __m256i both = _mm256_set_m128i(_mm_loadu_si128((const __m128i *)(blocks + at[2 * p + 1] + 2)),
                                                    _mm_loadu_si128((const __m128i *)(blocks + at[2 * p] + 2)));
                    __m256i low = _mm256_and_si256(both, nibble);
                    __m256i high = _mm256_and_si256(_mm256_srli_epi16(both, 4), nibble);
                    __m256i sums = _mm256_add_epi16(_mm256_maddubs_epi16(low, x_low), _mm256_maddubs_epi16(high, x_high));
                    pair[p] = _mm256_madd_epi16(sums, ones);
                }
                __m256i dots = _mm256_hadd_epi32(_mm256_hadd_epi32(pair[0], pair[1]), _mm256_hadd_epi32(pair[2], pair[3]));
                dots = _mm256_sub_epi32(_mm256_permutevar8x32_epi32(dots, row_order),
                                        _mm256_set1_epi32(sx[r * nb + b] * 8));
                __m256 dw = pf__block_scales_avx2(blocks, offsets);
                acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dots), _mm256_mul_ps(_mm256_set1_ps(dx[r * nb + b]), dw), acc);
            }
            float lanes[8];
            _mm256_storeu_ps(lanes, acc);
            memcpy(out + r * ld + o, lanes, no * sizeof(float));
        }
}

/* Prefill's AVX2 products (many rows of x): the tile above sums each block's 32 products across
   the lanes of a vector, a horizontal sum per row of x and weight row that costs more than the
   products. Here a panel of 8 weight rows is first repacked for a run of blocks, so that lane j of
   the panel's vector v holds values 4v..4v+3 of weight row j's block: maddubs against values
   4v..4v+3 of x broadcast to every lane then adds up, in lane j, weight row j's products, and the
   8 vectors of a block give the 8 rows' exact dots with no horizontal sum. The panel is repacked
   once and read by every row of x. The dots are the same integers, so the chain of block products
   (and every output's bits) is the tile's. */
#define PF__PANEL_BLOCKS 32 /* blocks a repacked panel holds: 9 KiB, beside 4 rows of x in L1 */
#define PF__PANEL_ROWS 4    /* rows of x per pass over a panel: their sums stay in registers */

typedef struct {
    __m256i values[PF__PANEL_BLOCKS][8]; /* Q8's int8 values; Q4's 0..15 */
    float scales[PF__PANEL_BLOCKS][8];   /* the 8 weight rows' scales, as fp32 */
} pf__q8_panel;

/* The 8x8 transpose of 32-bit elements: rows[j] lane v becomes rows[v] lane j. */
PF__AVX2_TARGET static PF__INLINE void pf__transpose8_avx2(__m256i r[8]) {
    __m256i a0 = _mm256_unpacklo_epi32(r[0], r[1]), a1 = _mm256_unpackhi_epi32(r[0], r[1]);
    __m256i a2 = _mm256_unpacklo_epi32(r[2], r[3]), a3 = _mm256_unpackhi_epi32(r[2], r[3]);
    __m256i a4 = _mm256_unpacklo_epi32(r[4], r[5]), a5 = _mm256_unpackhi_epi32(r[4], r[5]);
    __m256i a6 = _mm256_unpacklo_epi32(r[6], r[7]), a7 = _mm256_unpackhi_epi32(r[6], r[7]);
    __m256i b0 = _mm256_unpacklo_epi64(a0, a2), b1 = _mm256_unpackhi_epi64(a0, a2);
    __m256i b2 = _mm256_unpacklo_epi64(a1, a3), b3 = _mm256_unpackhi_epi64(a1, a3);
    __m256i b4 = _mm256_unpacklo_epi64(a4, a6), b5 = _mm256_unpackhi_epi64(a4, a6);
    __m256i b6 = _mm256_unpacklo_epi64(a5, a7), b7 = _mm256_unpackhi_epi64(a5, a7);
    r[0] = _mm256_permute2x128_si256(b0, b4, 0x20), r[4] = _mm256_permute2x128_si256(b0, b4, 0x31);
    r[1] = _mm256_permute2x128_si256(b1, b5, 0x20), r[5] = _mm256_permute2x128_si256(b1, b5, 0x31);
    r[2] = _mm256_permute2x128_si256(b2, b6, 0x20), r[6] = _mm256_permute2x128_si256(b2, b6, 0x31);
    r[3] = _mm256_permute2x128_si256(b3, b7, 0x20), r[7] = _mm256_permute2x128_si256(b3, b7, 0x31);
}

/* Repacks blocks b0..b0+count of weight rows `at` (8 byte offsets from w; rows past the product's
   end repeat a real one) into p. */
PF__AVX2_TARGET static PF__INLINE void pf__pack_panel_avx2(pf__q8_panel *p, const unsigned char *w, const int32_t *at,
                                                           size_t b0, size_t count, size_t bytes, int q4) {
    for (size_t b = 0; b < count; b++) {
        __m256i r[8];
        uint16_t halves[8];
        PF__UNROLL for (int j = 0; j < 8; j++) {
            const unsigned char *block = w + at[j] + (b0 + b) * bytes;
            memcpy(&halves[j], block, 2);
            r[j] = q4 ? pf__q4_load(block + 2) : pf__q8_load(block + 2);
        }
        pf__transpose8_avx2(r);
        PF__UNROLL for (int v = 0; v < 8; v++) _mm256_store_si256(&p->values[b][v], r[v]);
        _mm256_store_ps(p->scales[b], _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)halves)));
    }
}

/* R rows of x (from row r0; rows past `rows` repeat row r0) against a repacked panel, for its
   `count` blocks from b0: acc[r] holds the 8 weight rows' running sums. */
#define PF__PANEL_PASS(name, R, q4)                                                                                   \
    PF__AVX2_TARGET static PF__INLINE void name(__m256 *acc, const pf__q8_panel *p, const int8_t *qx,                 \
                                                const float *dx, const int32_t *sx, size_t rows, size_t r0, size_t k, \
                                                size_t nb, size_t b0, size_t count) {                                 \
        const __m256i ones = _mm256_set1_epi16(1);                                                                    \
        const int8_t *xr[R];                                                                                          \
        size_t row[R];                                                                                                \
        PF__UNROLL for (int r = 0; r < R; r++) {                                                                      \
            row[r] = r0 + (r0 + r < rows ? (size_t)r : 0);                                                             \
            xr[r] = qx + row[r] * k;                                                                                  \
        }                                                                                                             \
        for (size_t b = 0; b < count; b++) {                                                                          \
            size_t bb = b0 + b;                                                                                       \
            __m256i dots[R];                                                                                          \
            PF__UNROLL for (int r = 0; r < R; r++) dots[r] = _mm256_setzero_si256();                                  \
            PF__UNROLL for (int v = 0; v < 8; v++) {                                                                  \
                __m256i wv = _mm256_load_si256(&p->values[b][v]);                                                     \
                if (q4) { /* Q4: pair sums below 2 * 15 * 127, so 8 of them still fit int16 */                         \
                    PF__UNROLL for (int r = 0; r < R; r++) {                                                          \
                        int32_t four;                                                                                 \
                        memcpy(&four, xr[r] + bb * PF__Q8_BLOCK + 4 * v, 4);                                          \
                        dots[r] = _mm256_add_epi16(dots[r], _mm256_maddubs_epi16(wv, _mm256_set1_epi32(four)));       \
                    }                                                                                                 \
                } else { /* Q8: w's sign onto x (pf__q8_dot_avx2), each pair sum to int32 at once */                 \
                    __m256i magnitude = _mm256_abs_epi8(wv);                                                          \
                    PF__UNROLL for (int r = 0; r < R; r++) {                                                          \
                        int32_t four;                                                                                 \
                        memcpy(&four, xr[r] + bb * PF__Q8_BLOCK + 4 * v, 4);                                          \
                        __m256i signed_x = _mm256_sign_epi8(_mm256_set1_epi32(four), wv);                             \
                        dots[r] = _mm256_add_epi32(                                                                   \
                            dots[r], _mm256_madd_epi16(_mm256_maddubs_epi16(magnitude, signed_x), ones));             \
                    }                                                                                                 \
                }                                                                                                     \
            }                                                                                                         \
            __m256 dw = _mm256_load_ps(p->scales[b]);                                                                 \
            PF__UNROLL for (int r = 0; r < R; r++) {                                                                  \
                __m256i d = dots[r];                                                                                  \
                if (q4) d = _mm256_sub_epi32(_mm256_madd_epi16(d, ones), _mm256_set1_epi32(sx[row[r] * nb + bb] * 8)); \
                acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d), _mm256_mul_ps(_mm256_set1_ps(dx[row[r] * nb + bb]), dw), \
                                         acc[r]);                                                                     \
            }                                                                                                         \
        }                                                                                                             \
    }
PF__PANEL_PASS(pf__q8_panel_pass_avx2, PF__PANEL_ROWS, 0)
PF__PANEL_PASS(pf__q4_panel_pass_avx2, PF__PANEL_ROWS, 1)

PF__AVX2_TARGET static PF__INLINE void pf__quantized_panels_avx2(float *out, size_t ld, const int8_t *qx,
                                                                 const float *dx, const int32_t *sx, size_t rows,
                                                                 const unsigned char *w, size_t nb, size_t n_out,
                                                                 int q4) {
    size_t bytes = q4 ? PF__Q4_BYTES : PF__Q8_BYTES, row_bytes = nb * bytes, k = nb * PF__Q8_BLOCK;
    pf__q8_panel panel __attribute__((aligned(32)));
    for (size_t o = 0; o < n_out; o += 8) {
        size_t no = n_out - o < 8 ? n_out - o : 8;
        PF__ROW_OFFSETS(at, 8, o, n_out, row_bytes);
        for (size_t b0 = 0; b0 < nb; b0 += PF__PANEL_BLOCKS) {
            size_t count = nb - b0 < PF__PANEL_BLOCKS ? nb - b0 : PF__PANEL_BLOCKS;
            pf__pack_panel_avx2(&panel, w, at, b0, count, bytes, q4);
            for (size_t r0 = 0; r0 < rows; r0 += PF__PANEL_ROWS) {
                size_t nr = rows - r0 < PF__PANEL_ROWS ? rows - r0 : PF__PANEL_ROWS;
                __m256 acc[PF__PANEL_ROWS];
                float lanes[8] = {0};
                /* a run after the first goes on from the sums in out: fp32 there as in a register */
                PF__UNROLL for (int r = 0; r < PF__PANEL_ROWS; r++) {
                    if (b0 && (size_t)r < nr) memcpy(lanes, out + (r0 + r) * ld + o, no * sizeof(float));
                    acc[r] = _mm256_loadu_ps(lanes);
                }
                if (q4) pf__q4_panel_pass_avx2(acc, &panel, qx, dx, sx, rows, r0, k, nb, b0, count);
                else pf__q8_panel_pass_avx2(acc, &panel, qx, dx, sx, rows, r0, k, nb, b0, count);
                for (size_t r = 0; r < nr; r++) {
                    _mm256_storeu_ps(lanes, acc[r]);
                    memcpy(out + (r0 + r) * ld + o, lanes, no * sizeof(float));
                }
            }
        }
    }
}

/* From this many rows of x on, the repacked panels; fewer rows do not repay the repacking. */
#define PF__PANEL_FROM_ROWS 4

PF__AVX2_TARGET static void pf__q8_panels_avx2(float *out, size_t ld, const int8_t *qx, const float *dx,
                                               const int32_t *sx, size_t rows, const unsigned char *w, size_t nb,
                                               size_t n_out) {
    if (rows < PF__PANEL_FROM_ROWS) pf__q8_rows_avx2(out, ld, qx, dx, sx, rows, w, nb, n_out);
    else pf__quantized_panels_avx2(out, ld, qx, dx, sx, rows, w, nb, n_out, 0);
}

PF__AVX2_TARGET static void pf__q4_panels_avx2(float *out, size_t ld, const int8_t *qx, const float *dx,
                                               const int32_t *sx, size_t rows, const unsigned char *w, size_t nb,
                                               size_t n_out) {
    if (rows < PF__PANEL_FROM_ROWS) pf__q4_rows_avx2(out, ld, qx, dx, sx, rows, w, nb, n_out);
    else pf__quantized_panels_avx2(out, ld, qx, dx, sx, rows, w, nb, n_out, 1);
}
#endif

#ifdef PF__NEON
/* Q8/Q4 products on ARM64, the defined chain of block products (pf__q8_rows_fn) for 1 row of x by
   4 weight rows at a time (4 chains in flight). A block's exact dot: with NEON alone, int8
   products widened to int16 (two of them, at most 2 * 128 * 127, fit) and pairwise added into
   int32 lanes; with FEAT_DotProd, sdot. Q4's nibbles (0..15) multiply as they are, and 8 sum x is
   taken away from the dot. */
static PF__INLINE int32x4_t pf__block_dot_neon(int8x16_t w0, int8x16_t w1, const int8_t *x) {
    int8x16_t x0 = vld1q_s8(x), x1 = vld1q_s8(x + 16);
    int16x8_t low = vmlal_high_s8(vmull_s8(vget_low_s8(w0), vget_low_s8(x0)), w0, x0);
    int16x8_t high = vmlal_high_s8(vmull_s8(vget_low_s8(w1), vget_low_s8(x1)), w1, x1);
    return vpadalq_s16(vpaddlq_s16(low), high);
}

/* GCC's arm_neon.h declares sdot's intrinsic for this function target; clang's (14, the one here)
   only where the whole file is compiled for it, so clang builds take the NEON products alone.
   Asked of Linux (getauxval); other systems take them alone too, unchecked here. */
#if !defined(__clang__) && __GNUC__ >= 10 && defined(__linux__)
#define PF__DOTPROD 1
/* A function's target must hold what the build's own flags give (the helpers it inlines are
   compiled for those) and Armv8.2 (arm_neon.h's sdot and smmla are declared for it): the build's
   flags plus the features where they are Armv8.2 or later already (FEAT_DotProd says so), else
   Armv8.2 itself with the optional features the flags name (-march=armv8-a+crypto failed). */
#if defined(__ARM_FEATURE_DOTPROD)
#define PF__DOTPROD_TARGET
#define PF__I8MM_TARGET __attribute__((target("+i8mm")))
#else
#ifdef __ARM_FEATURE_FP16_VECTOR_ARITHMETIC
#define PF__ARCH_FP16 "+fp16"
#else
#define PF__ARCH_FP16 ""
#endif
#ifdef __ARM_FEATURE_CRYPTO
#define PF__ARCH_CRYPTO "+crypto"
#else
#define PF__ARCH_CRYPTO ""
#endif
#define PF__DOTPROD_TARGET __attribute__((target("arch=armv8.2-a+dotprod" PF__ARCH_FP16 PF__ARCH_CRYPTO)))
#define PF__I8MM_TARGET __attribute__((target("arch=armv8.2-a+dotprod+i8mm" PF__ARCH_FP16 PF__ARCH_CRYPTO)))
#endif
PF__DOTPROD_TARGET static PF__INLINE int32x4_t pf__block_dot_sdot(int8x16_t w0, int8x16_t w1, const int8_t *x) {
    return vdotq_s32(vdotq_s32(vdupq_n_s32(0), w0, vld1q_s8(x)), w1, vld1q_s8(x + 16));
}
#endif

/* A block's fp16 scale as fp32 (exact, as pf__q8_scale). */
static PF__INLINE float pf__block_scale_neon(const unsigned char *block) {
    uint16_t bits;
    memcpy(&bits, block, 2);
    return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(bits))), 0);
}

/* A weight block's 32 values as two int8 vectors: Q8's bytes, or Q4's nibbles 0..15 (inputs 0..15
   then 16..31). */
static PF__INLINE void pf__block_values_neon(int8x16_t *v0, int8x16_t *v1, const unsigned char *block, int q4) {
    if (q4) {
        uint8x16_t packed = vld1q_u8(block + 2);
        *v0 = vreinterpretq_s8_u8(vandq_u8(packed, vdupq_n_u8(15)));
        *v1 = vreinterpretq_s8_u8(vshrq_n_u8(packed, 4));
    } else {
        *v0 = vld1q_s8((const int8_t *)block + 2), *v1 = vld1q_s8((const int8_t *)block + 18);
    }
}

/* The 4 weight rows' lanes of block dots folded to one exact dot a row (pairwise adds, integers),
   so the 4 chains of block products run in one vector's lanes: lane j's fma is fmaf's. */
#define PF__Q8_ROWS_NEON(name, target, BYTES, q4, dot)                                                                \
    target static void name(float *out, size_t ld, const int8_t *qx, const float *dx, const int32_t *sx, size_t rows,\
                            const unsigned char *w, size_t nb, size_t n_out) {                                       \
        size_t row_bytes = nb * BYTES, k = nb * PF__Q8_BLOCK;                                                       \
        for (size_t r = 0; r < rows; r++)                                                                           \
            for (size_t o = 0; o < n_out; o += 4) {                                                                 \
                size_t no = n_out - o < 4 ? n_out - o : 4;                                                          \
                const unsigned char *row[4];                                                                        \
                float32x4_t sum = vdupq_n_f32(0);                                                                   \
                for (size_t j = 0; j < 4; j++) row[j] = w + (o + (j < no ? j : 0)) * row_bytes;                      \
                for (size_t b = 0; b < nb; b++) {                                                                   \
                    const int8_t *xb = qx + r * k + b * PF__Q8_BLOCK;                                               \
                    int32x4_t lanes[4];                                                                             \
                    float scales[4];                                                                                \
                    PF__UNROLL for (size_t j = 0; j < 4; j++) {                                                     \
                        const unsigned char *block = row[j] + b * BYTES;                                            \
                        int8x16_t w0, w1;                                                                           \
                        pf__block_values_neon(&w0, &w1, block, q4);                                                 \
                        lanes[j] = dot(w0, w1, xb);                                                                 \
                        scales[j] = pf__block_scale_neon(block);                                                    \
                    }                                                                                               \
                    int32x4_t exact = vpaddq_s32(vpaddq_s32(lanes[0], lanes[1]), vpaddq_s32(lanes[2], lanes[3]));   \
                    if (q4) exact = vsubq_s32(exact, vdupq_n_s32(8 * sx[r * nb + b]));                              \
                    float32x4_t scale = vmulq_n_f32(vld1q_f32(scales), dx[r * nb + b]);                             \
                    sum = vfmaq_f32(sum, vcvtq_f32_s32(exact), scale);                                              \
                }                                                                                                   \
                float lanes_out[4];                                                                                 \
                vst1q_f32(lanes_out, sum);                                                                          \
                memcpy(out + r * ld + o, lanes_out, no * sizeof(float));                                            \
            }                                                                                                       \
    }
PF__Q8_ROWS_NEON(pf__q8_rows_neon, , PF__Q8_BYTES, 0, pf__block_dot_neon)
PF__Q8_ROWS_NEON(pf__q4_rows_neon, , PF__Q4_BYTES, 1, pf__block_dot_neon)
#ifdef PF__DOTPROD
PF__Q8_ROWS_NEON(pf__q8_rows_sdot, PF__DOTPROD_TARGET, PF__Q8_BYTES, 0, pf__block_dot_sdot)
PF__Q8_ROWS_NEON(pf__q4_rows_sdot, PF__DOTPROD_TARGET, PF__Q4_BYTES, 1, pf__block_dot_sdot)
#endif

/* Prompts' Q8/Q4 products with FEAT_I8MM's smmla (vmmlaq_s32): a 2x8 by 8x2 int8 product into a
   2x2 int32 tile, the lanes (row 0, weight row 0), (0, 1), (1, 0), (1, 1). A tile of 4 rows of x by
   4 weight rows takes 16 smmla a block (4 sub-tiles of 2x2, 4 steps of 8 inputs) for its 16 exact
   dots, against 16 sdot and 16 horizontal sums in the rows above. The dots are the same
   integers, and each output's chain of block products (fmaf, block order, from 0) runs in its own
   lane, so the bits are the portable ones. Rows and weight rows past the ends repeat a real one
   and are not stored. */
#if !defined(__clang__) && __GNUC__ >= 10 && defined(__linux__)
#define PF__I8MM 1

/* Two rows' 16 int8 values a and b as smmla's operands: (a 0..7, b 0..7) and (a 8..15, b 8..15). */
static PF__INLINE void pf__pair_rows_neon(int8x16_t *low, int8x16_t *high, int8x16_t a, int8x16_t b) {
    int64x2_t a64 = vreinterpretq_s64_s8(a), b64 = vreinterpretq_s64_s8(b);
    *low = vreinterpretq_s8_s64(vzip1q_s64(a64, b64));
    *high = vreinterpretq_s8_s64(vzip2q_s64(a64, b64));
}

#define PF__MMLA_ROWS 4 /* rows of x a tile takes */
#define PF__MMLA_OUTS 4 /* weight rows */

#define PF__Q8_ROWS_MMLA(name, BYTES, q4)                                                                             \
    PF__I8MM_TARGET static void name(float *out, size_t ld, const int8_t *qx, const float *dx, const int32_t *sx,   \
                                     size_t rows, const unsigned char *w, size_t nb, size_t n_out) {                 \
        size_t row_bytes = nb * BYTES, k = nb * PF__Q8_BLOCK;                                                        \
        for (size_t o = 0; o < n_out; o += PF__MMLA_OUTS) {                                                          \
            size_t no = n_out - o < PF__MMLA_OUTS ? n_out - o : PF__MMLA_OUTS;                                       \
            const unsigned char *wrow[PF__MMLA_OUTS];                                                                \
            for (size_t j = 0; j < PF__MMLA_OUTS; j++) wrow[j] = w + (o + (j < no ? j : 0)) * row_bytes;              \
            for (size_t r0 = 0; r0 < rows; r0 += PF__MMLA_ROWS) {                                                    \
                size_t nr = rows - r0 < PF__MMLA_ROWS ? rows - r0 : PF__MMLA_ROWS, row[PF__MMLA_ROWS];               \
                for (size_t i = 0; i < PF__MMLA_ROWS; i++) row[i] = r0 + (i < nr ? i : 0);                           \
                /* sums[2 p + q]: rows 2p, 2p + 1 by weight rows 2q, 2q + 1, in smmla's lane order */                \
                float32x4_t sums[4] = {vdupq_n_f32(0), vdupq_n_f32(0), vdupq_n_f32(0), vdupq_n_f32(0)};             \
                for (size_t b = 0; b < nb; b++) {                                                                    \
                    int8x16_t xs[2][4], ws[2][4]; /* [pair][step of 8 inputs] */                                    \
                    PF__UNROLL for (int p = 0; p < 2; p++) {                                                         \
                        const int8_t *a = qx + row[2 * p] * k + b * PF__Q8_BLOCK;                                    \
                        const int8_t *c = qx + row[2 * p + 1] * k + b * PF__Q8_BLOCK;                                \
                        pf__pair_rows_neon(&xs[p][0], &xs[p][1], vld1q_s8(a), vld1q_s8(c));                          \
                        pf__pair_rows_neon(&xs[p][2], &xs[p][3], vld1q_s8(a + 16), vld1q_s8(c + 16));                \
                        int8x16_t a0, a1, c0, c1;                                                                    \
                        pf__block_values_neon(&a0, &a1, wrow[2 * p] + b * BYTES, q4);                                \
                        pf__block_values_neon(&c0, &c1, wrow[2 * p + 1] + b * BYTES, q4);                            \
                        pf__pair_rows_neon(&ws[p][0], &ws[p][1], a0, c0);                                            \
                        pf__pair_rows_neon(&ws[p][2], &ws[p][3], a1, c1);                                            \
                    }                                                                                                \
                    float d[PF__MMLA_OUTS];                                                                          \
                    PF__UNROLL for (int j = 0; j < PF__MMLA_OUTS; j++) d[j] = pf__block_scale_neon(wrow[j] + b * BYTES); \
                    PF__UNROLL for (int p = 0; p < 2; p++) {                                                         \
                        size_t x0 = row[2 * p] * nb + b, x1 = row[2 * p + 1] * nb + b;                               \
                        float32x4_t dxs = {dx[x0], dx[x0], dx[x1], dx[x1]};                                          \
                        int32x4_t beyond = {8 * sx[x0], 8 * sx[x0], 8 * sx[x1], 8 * sx[x1]};                         \
                        PF__UNROLL for (int q = 0; q < 2; q++) {                                                     \
                            int32x4_t dot = vdupq_n_s32(0);                                                          \
                            PF__UNROLL for (int s = 0; s < 4; s++) dot = vmmlaq_s32(dot, xs[p][s], ws[q][s]);        \
                            if (q4) dot = vsubq_s32(dot, beyond);                                                    \
                            float32x4_t dws = {d[2 * q], d[2 * q + 1], d[2 * q], d[2 * q + 1]};                      \
                            sums[2 * p + q] = vfmaq_f32(sums[2 * p + q], vcvtq_f32_s32(dot), vmulq_f32(dxs, dws));   \
                        }                                                                                            \
                    }                                                                                                \
                }                                                                                                    \
                float tile[4][4]; /* [row][weight row] */                                                            \
                PF__UNROLL for (int p = 0; p < 2; p++) PF__UNROLL for (int q = 0; q < 2; q++) {                      \
                    float lanes[4];                                                                                  \
                    vst1q_f32(lanes, sums[2 * p + q]);                                                               \
                    tile[2 * p][2 * q] = lanes[0], tile[2 * p][2 * q + 1] = lanes[1];                                \
                    tile[2 * p + 1][2 * q] = lanes[2], tile[2 * p + 1][2 * q + 1] = lanes[3];                        \
                }                                                                                                    \
                for (size_t i = 0; i < nr; i++) memcpy(out + (r0 + i) * ld + o, tile[i], no * sizeof(float));       \
            }                                                                                                        \
        }                                                                                                            \
    }
PF__Q8_ROWS_MMLA(pf__q8_rows_mmla, PF__Q8_BYTES, 0)
PF__Q8_ROWS_MMLA(pf__q4_rows_mmla, PF__Q4_BYTES, 1)
#endif
#endif

/* GGUF's other block formats (Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, Q3_K, IQ4_NL, IQ4_XS, Q2_K, MXFP4) and Q4_G, multiplied in
   their blocks. Each 32-weight sub-block is integers v with factors (pf__sub_block: weight =
   dw s v + mw m) and meets x's block of the same 32 inputs (int8 qx, scale dx, sum sx:
   pf__quantize_x_fn), so its product is dx (dw dot + mw mdot), dot = sum s v qx and mdot =
   sum m qx exact (mdot is sx where m is 1: all but Q2_K). out[r][o] is one fp32 chain over the
   sub-blocks in order, sum = fmaf((float)dot, dx * dw, sum), then, for the formats with a
   minimum, sum = fmaf((float)mdot, dx * mw, sum), from 0: every kernel set gives those bits. The
   only rounding beyond fp32's is x's to int8 (llama.cpp's vec_dot rounds x the same way, to
   q8_0 or q8_K blocks): within max|x of a block| / 254 an input. */
typedef void pf__blocks_rows_fn(float *out, size_t ld, const int8_t *qx, const float *dx, const int32_t *sx,
                                size_t rows, const unsigned char *w, size_t k, size_t n_out, pf__dtype t);

static void pf__blocks_rows_portable(float *out, size_t ld, const int8_t *qx, const float *dx, const int32_t *sx,
                                     size_t rows, const unsigned char *w, size_t k, size_t n_out, pf__dtype t) {
    size_t values = pf__block_values(t), bytes = pf__block_bytes(t), subs = values / 32, nx = k / 32;
    size_t row_bytes = k / values * bytes;
    int has_min = pf__block_has_min(t);
    for (size_t o = 0; o < n_out; o++) {
        for (size_t r = 0; r < rows; r++) out[r * ld + o] = 0.0f;
        for (size_t b = 0; b < k / values; b++) {
            pf__sub_block sb[8];
            for (size_t j = 0; j < subs; j++) pf__sub_block_decode(t, w + o * row_bytes + b * bytes, (int)j, &sb[j]);
            for (size_t r = 0; r < rows; r++) {
                float sum = out[r * ld + o];
                for (size_t j = 0; j < subs; j++) {
                    size_t xb = r * nx + b * subs + j;
                    const int8_t *x = qx + xb * 32;
                    int64_t dot = 0, mdot = sx[xb]; /* 64 bits: see pf__block_dot_portable */
                    for (int i = 0; i < 32; i++) dot += (int64_t)sb[j].scales16[i / 16] * sb[j].v[i] * x[i];
                    if (t == PF__DTYPE_Q2_K)
                        for (int i = mdot = 0; i < 32; i++) mdot += (int64_t)sb[j].mins16[i / 16] * x[i];
                    sum = fmaf((float)dot, dx[xb] * sb[j].dw, sum);
                    if (has_min) sum = fmaf((float)mdot, dx[xb] * sb[j].mw, sum);
                }
                out[r * ld + o] = sum;
            }
        }
    }
}

#ifdef PF__AVX2
/* src/blocks.c's sizes and minimum flag again, as constants where t is one (the kernels unroll). */
static PF__INLINE size_t pf__values_of(const pf__dtype t) {
    return (t >= PF__DTYPE_Q4_K && t <= PF__DTYPE_Q3_K) || t == PF__DTYPE_IQ4_XS || t == PF__DTYPE_Q2_K ? 256 : 32;
}
static PF__INLINE size_t pf__bytes_of(const pf__dtype t) {
    return t == PF__DTYPE_Q8 ? 34 : t == PF__DTYPE_Q4 || t == PF__DTYPE_IQ4_NL ? 18 : t == PF__DTYPE_MXFP4 ? 17
           : t == PF__DTYPE_Q4_G ? 19 : t == PF__DTYPE_E4M3 ? 36 : t == PF__DTYPE_Q8_G ? 37 : t == PF__DTYPE_Q4_1 ? 20
           : t == PF__DTYPE_Q5_0 ? 22 : t == PF__DTYPE_Q5_1 ? 24 : t == PF__DTYPE_Q4_K ? 144 : t == PF__DTYPE_Q5_K ? 176
           : t == PF__DTYPE_Q3_K ? 110 : t == PF__DTYPE_IQ4_XS ? 136 : t == PF__DTYPE_Q2_K ? 84 : 210;
}
/* The formats whose sub-blocks have a scale per 16 weights (pf__sub_block's scales16), and a
   minimum per 16 (mins16). */
static PF__INLINE int pf__scales16_of(const pf__dtype t) {
    return t == PF__DTYPE_Q6_K || t == PF__DTYPE_Q3_K || t == PF__DTYPE_Q2_K;
}
static PF__INLINE int pf__mins16_of(const pf__dtype t) { return t == PF__DTYPE_Q2_K; }
static PF__INLINE int pf__has_min_of(const pf__dtype t) {
    return t == PF__DTYPE_Q4_1 || t == PF__DTYPE_Q5_1 || t == PF__DTYPE_Q4_K || t == PF__DTYPE_Q5_K || t == PF__DTYPE_Q2_K;
}

/* 32 bytes: 0xff where bit i of the 4 bytes at p is set (Q5's fifth bits). */
PF__AVX2_TARGET static PF__INLINE __m256i pf__bits_to_bytes_avx2(const unsigned char *p) {
    uint32_t bits;
    memcpy(&bits, p, 4);
    __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32((int)bits), _mm256_setr_epi64x(0, 0x0101010101010101LL,
                                         0x0202020202020202LL, 0x0303030303030303LL)); /* byte i: the byte of bit i */
    spread = _mm256_or_si256(spread, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfeLL)); /* all but bit i % 8 */
    return _mm256_cmpeq_epi8(spread, _mm256_set1_epi64x(-1));
}

/* The fp16 number at p, converted by the F16C instruction (exact, as pf__f16_to_f32). */
PF__AVX2_TARGET static PF__INLINE float pf__f16_at_f16c(const unsigned char *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

/* Sub-block j of block b as 32 int8 values v, its factors dw and mw, (Q6_K, Q3_K, Q2_K) the int16
   scales of its two halves and (Q2_K) their int16 minimums; t a constant where it is inlined. */
PF__AVX2_TARGET static PF__INLINE __m256i pf__sub_block_avx2(pf__dtype t, const unsigned char *b, int j, float *dw,
                                                            float *mw, __m256i *scales, __m256i *mins) {
    const __m256i low4 = _mm256_set1_epi8(15);
    __m128i shift4 = _mm_cvtsi32_si128(j % 2 * 4);
    switch (t) {
    case PF__DTYPE_Q4_1:
        *dw = pf__f16_at_f16c(b), *mw = pf__f16_at_f16c(b + 2);
        return pf__q4_load(b + 4);
    case PF__DTYPE_Q5_0:
    case PF__DTYPE_Q5_1: {
        const unsigned char *qh = b + (t == PF__DTYPE_Q5_0 ? 2 : 4);
        __m256i v = _mm256_or_si256(pf__q4_load(qh + 4), _mm256_and_si256(pf__bits_to_bytes_avx2(qh), _mm256_set1_epi8(16)));
        *dw = pf__f16_at_f16c(b);
        if (t == PF__DTYPE_Q5_1) *mw = pf__f16_at_f16c(b + 2);
        return t == PF__DTYPE_Q5_0 ? _mm256_sub_epi8(v, _mm256_set1_epi8(16)) : v;
    }
    case PF__DTYPE_Q4_K:
    case PF__DTYPE_Q5_K: {
        int scale, min;
        const unsigned char *sc = b + 4;
        if (j < 4) scale = sc[j] & 63, min = sc[j + 4] & 63;
        else scale = (sc[j + 4] & 15) | (sc[j - 4] >> 6) << 4, min = (sc[j + 4] >> 4) | (sc[j] >> 6) << 4;
        *dw = pf__f16_at_f16c(b) * (float)scale;
        *mw = -(pf__f16_at_f16c(b + 2) * (float)min);
        const unsigned char *qs = b + (t == PF__DTYPE_Q4_K ? 16 : 48) + j / 2 * 32;
        __m256i v = _mm256_and_si256(_mm256_srl_epi16(_mm256_loadu_si256((const __m256i *)qs), shift4), low4);
        if (t == PF__DTYPE_Q4_K) return v;
        __m256i high = _mm256_and_si256(_mm256_srl_epi16(_mm256_loadu_si256((const __m256i *)(b + 16)), _mm_cvtsi32_si128(j)),
                                        _mm256_set1_epi8(1));
        return _mm256_or_si256(v, _mm256_slli_epi16(high, 4));
    }
    case PF__DTYPE_IQ4_NL:
    case PF__DTYPE_IQ4_XS: { /* Q4_0's nibbles, each the index of one of pf__iq4_levels */
        const __m256i levels = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)pf__iq4_levels));
        if (t == PF__DTYPE_IQ4_NL) {
            *dw = pf__f16_at_f16c(b);
            return _mm256_shuffle_epi8(levels, pf__q4_load(b + 2));
        }
        *dw = pf__f16_at_f16c(b) * (float)(pf__iq4_xs_scale(b, j) - 32);
        return _mm256_shuffle_epi8(levels, pf__q4_load(b + 8 + j * 16));
    }
    case PF__DTYPE_MXFP4: { /* the E8M0 byte, then Q4_0's nibbles, each the index of one of pf__mxfp4_levels */
        const __m256i levels = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)pf__mxfp4_levels));
        *dw = pf__e8m0_half(b[0]);
        return _mm256_shuffle_epi8(levels, pf__q4_load(b + 1));
    }
    case PF__DTYPE_Q4_G: /* the scale, the zero byte, then Q4_0's nibbles less the zero */
        *dw = pf__f16_at_f16c(b);
        return _mm256_sub_epi8(pf__q4_load(b + 3), _mm256_set1_epi8((char)b[2]));
    case PF__DTYPE_Q3_K: { /* as pf__sub_block_values: 2-bit lows by 2k, the high bit 4 half + k, less 4 */
        int half = j / 4, k = j % 4;
        *dw = pf__f16_at_f16c(b + 108);
        *scales = _mm256_set_m128i(_mm_set1_epi16((short)pf__q3_k_scale(b + 96, 2 * j + 1)),
                                   _mm_set1_epi16((short)pf__q3_k_scale(b + 96, 2 * j)));
        __m256i low = _mm256_and_si256(_mm256_srl_epi16(_mm256_loadu_si256((const __m256i *)(b + 32 + half * 32)),
                                                        _mm_cvtsi32_si128(2 * k)), _mm256_set1_epi8(3));
        __m256i high = _mm256_and_si256(_mm256_srl_epi16(_mm256_loadu_si256((const __m256i *)b), _mm_cvtsi32_si128(4 * half + k)),
                                        _mm256_set1_epi8(1));
        return _mm256_sub_epi8(_mm256_or_si256(low, _mm256_slli_epi16(high, 2)), _mm256_set1_epi8(4));
    }
    case PF__DTYPE_Q2_K: { /* as pf__sub_block_values: 2-bit values by 2k; a scale and minimum byte per 16 */
        *dw = pf__f16_at_f16c(b + 80), *mw = -pf__f16_at_f16c(b + 82);
        *scales = _mm256_set_m128i(_mm_set1_epi16(b[2 * j + 1] & 15), _mm_set1_epi16(b[2 * j] & 15));
        *mins = _mm256_set_m128i(_mm_set1_epi16(b[2 * j + 1] >> 4), _mm_set1_epi16(b[2 * j] >> 4));
        return _mm256_and_si256(_mm256_srl_epi16(_mm256_loadu_si256((const __m256i *)(b + 16 + j / 4 * 32)),
                                                 _mm_cvtsi32_si128(2 * (j % 4))), _mm256_set1_epi8(3));
    }
    default: { /* Q6_K */
        int half = j / 4, k = j % 4;
        const int8_t *sc = (const int8_t *)(b + 192) + half * 8 + k * 2;
        *dw = pf__f16_at_f16c(b + 208);
        *scales = _mm256_set_m128i(_mm_set1_epi16(sc[1]), _mm_set1_epi16(sc[0]));
        __m256i ql = _mm256_loadu_si256((const __m256i *)(b + half * 64 + k % 2 * 32));
        __m256i qh = _mm256_loadu_si256((const __m256i *)(b + 128 + half * 32));
        __m256i v = _mm256_and_si256(_mm256_srl_epi16(ql, _mm_cvtsi32_si128(k / 2 * 4)), low4);
        __m256i high = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * k)), _mm256_set1_epi8(3));
        return _mm256_sub_epi8(_mm256_or_si256(v, _mm256_slli_epi16(high, 4)), _mm256_set1_epi8(32));
    }
    }
}

/* 8 weight rows (lanes) by up to R rows of x: each sub-block of the 8 rows decoded once for the R
   rows; a lane's chain is pf__blocks_rows_portable's. */
#define PF__BLOCKS_R 4
PF__AVX2_TARGET static PF__INLINE void pf__blocks_rows_avx2_as(float *out, size_t ld, const int8_t *qx, const float *dx,
                                                               const int32_t *sx, size_t rows, const unsigned char *w,
                                                               size_t k, size_t n_out, const pf__dtype t) {
    size_t values = pf__values_of(t), bytes = pf__bytes_of(t), subs = values / 32, nx = k / 32;
    size_t row_bytes = k / values * bytes;
    int has_min = pf__has_min_of(t);
    for (size_t r0 = 0; r0 < rows; r0 += PF__BLOCKS_R) {
        size_t nr = rows - r0 < PF__BLOCKS_R ? rows - r0 : PF__BLOCKS_R;
        for (size_t o = 0; o < n_out; o += 8) {
            size_t no = n_out - o < 8 ? n_out - o : 8;
            const unsigned char *row[8];
            for (size_t i = 0; i < 8; i++) row[i] = w + (o + (i < no ? i : 0)) * row_bytes;
            __m256 acc[PF__BLOCKS_R];
            for (int r = 0; r < PF__BLOCKS_R; r++) acc[r] = _mm256_setzero_ps();
            for (size_t b = 0; b < k / values; b++)
                for (size_t j = 0; j < subs; j++) {
                    __m256i wv[8], scales[8], mins[8];
                    float dw[8], mw[8] = {0};
                    if (j == 0) pf__prefetch_next_tile(w + (o + 8) * row_bytes, 8 * bytes, b);
                    PF__UNROLL for (int i = 0; i < 8; i++) {
                        _mm_prefetch((const char *)(row[i] + b * bytes + 4 * bytes), _MM_HINT_T0);
                        wv[i] = pf__sub_block_avx2(t, row[i] + b * bytes, (int)j, &dw[i], &mw[i], &scales[i], &mins[i]);
                    }
                    __m256 dwv = _mm256_loadu_ps(dw), mwv = _mm256_loadu_ps(mw);
                    for (size_t r = 0; r < nr; r++) {
                        size_t xb = (r0 + r) * nx + b * subs + j;
                        __m256i xv = _mm256_loadu_si256((const __m256i *)(qx + xb * 32)), d[8];
                        PF__UNROLL for (int i = 0; i < 8; i++) {
                            __m256i pairs = _mm256_maddubs_epi16(_mm256_abs_epi8(wv[i]), _mm256_sign_epi8(xv, wv[i]));
                            d[i] = _mm256_madd_epi16(pairs, pf__scales16_of(t) ? scales[i] : _mm256_set1_epi16(1));
                        }
                        __m256 scale = _mm256_set1_ps(dx[xb]), mdot = _mm256_set1_ps((float)sx[xb]);
                        acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(pf__sum_lanes8_avx2(d)), _mm256_mul_ps(scale, dwv), acc[r]);
                        if (pf__mins16_of(t)) { /* each row's sum m qx: x's pairs weighed by its minimums */
                            __m256i x_pairs = _mm256_maddubs_epi16(_mm256_set1_epi8(1), xv);
                            PF__UNROLL for (int i = 0; i < 8; i++) d[i] = _mm256_madd_epi16(x_pairs, mins[i]);
                            mdot = _mm256_cvtepi32_ps(pf__sum_lanes8_avx2(d));
                        }
                        if (has_min) acc[r] = _mm256_fmadd_ps(mdot, _mm256_mul_ps(scale, mwv), acc[r]);
                    }
                }
            for (size_t r = 0; r < nr; r++) {
                float lanes[8];
                _mm256_storeu_ps(lanes, acc[r]);
                memcpy(out + (r0 + r) * ld + o, lanes, no * sizeof(float));
            }
        }
    }
}

PF__AVX2_TARGET static void pf__blocks_rows_avx2(float *out, size_t ld, const int8_t *qx, const float *dx,
                                                 const int32_t *sx, size_t rows, const unsigned char *w, size_t k,
                                                 size_t n_out, pf__dtype t) {
    switch (t) { /* each format its own copy, its decoding inlined */
    case PF__DTYPE_Q4_1: pf__blocks_rows_avx2_as(out, ld, qx, dx, sx, rows, w, k, n_out, PF__DTYPE_Q4_1); break;
    case PF__DTYPE_Q5_0: pf__blocks_rows_avx2_as(out, ld, qx, dx, sx, rows, w, k, n_out, PF__DTYPE_Q5_0); break;
    case PF__DTYPE_Q5_1: pf__blocks_rows_avx2_as(out, ld, qx, dx, sx, rows, w, k, n_out, PF__DTYPE_Q5_1); break;
    case PF__DTYPE_Q4_K: pf__blocks_rows_avx2_as(out, ld, qx, dx, sx, rows, w, k, n_out, PF__DTYPE_Q4_K); break;
    case PF__DTYPE_Q5_K: pf__blocks_rows_avx2_as(out, ld, qx, dx, sx, rows, w, k, n_out, PF__DTYPE_Q5_K); break;
    case PF__DTYPE_Q3_K: pf__blocks_rows_avx2_as(out, ld, qx, dx, sx, rows, w, k, n_out, PF__DTYPE_Q3_K); break;
    case PF__DTYPE_IQ4_NL: pf__blocks_rows_avx2_as(out, ld, qx, dx, sx, rows, w, k, n_out, PF__DTYPE_IQ4_NL); break;
    case PF__DTYPE_IQ4_XS: pf__blocks_rows_avx2_as(out, ld, qx, dx, sx, rows, w, k, n_out, PF__DTYPE_IQ4_XS); break;
    case PF__DTYPE_Q2_K: pf__blocks_rows_avx2_as(out, ld, qx, dx, sx, rows, w, k, n_out, PF__DTYPE_Q2_K); break;
    case PF__DTYPE_MXFP4: pf__blocks_rows_avx2_as(out, ld, qx, dx, sx, rows, w, k, n_out, PF__DTYPE_MXFP4); break;
    case PF__DTYPE_Q4_G: pf__blocks_rows_avx2_as(out, ld, qx, dx, sx, rows, w, k, n_out, PF__DTYPE_Q4_G); break;
    default: pf__blocks_rows_avx2_as(out, ld, qx, dx, sx, rows, w, k, n_out, PF__DTYPE_Q6_K);
    }
}
#endif

/* The file's blocks against fp32 activations (what the ranks compute on blocks they keep; the
   int8 products above are the speed choice of dtype q8/q4): each sub-block's integers, scaled by
   Q6_K's and Q3_K's 16-weight scales, as fp32 (exact: below 2^12; E4M3's e4m3 values and Q8_G's
   q - zero, exact too, dw their scale), times x in 8 lanes (lane l: inputs l,
   l + 8, l + 16, l + 24, fused in that order from 0), the lanes then scaled into the row's 8
   accumulators, acc_l = fmaf(dw, p_l, acc_l), and the minimum's share into lane 0,
   acc_0 = fmaf(mw, sum of the 32 inputs, acc_0), or where the minimum is per 16 weights (Q2_K)
   into every lane as the values' share, acc_l = fmaf(mw, pm_l, acc_l), pm_l being x's inputs
   times their minimums fused as p_l is; the output is the accumulators added as
   pf__hsum_avx2 adds them ((l + l4), then pairs). Every kernel set gives those bits; a weight's
   value is the gguf package's dequantization, and the sum is fp32's, so a product is within
   fp32's rounding of the exact product of the file's weights. x_sums: each 32-input block's sum
   (pf__block_x_sums). */
typedef void pf__blocks_f32_fn(float *out, size_t ld, const float *x, const float *x_sums, size_t rows,
                               const unsigned char *w, size_t k, size_t n_out, pf__dtype t);

/* Each 32-input block's sum of x, in lane order (as the products take them). */
static void pf__block_x_sums(float *sums, const float *x, size_t blocks) {
    for (size_t b = 0; b < blocks; b++) {
        float lane[8] = {0};
        for (int q = 0; q < 4; q++)
            for (int l = 0; l < 8; l++) lane[l] += x[b * 32 + q * 8 + l];
        float a[4];
        for (int l = 0; l < 4; l++) a[l] = lane[l] + lane[l + 4];
        sums[b] = (a[0] + a[2]) + (a[1] + a[3]);
    }
}

static void pf__blocks_f32_portable(float *out, size_t ld, const float *x, const float *x_sums, size_t rows,
                                    const unsigned char *w, size_t k, size_t n_out, pf__dtype t) {
    size_t values = pf__block_values(t), bytes = pf__block_bytes(t), subs = values / 32, nx = k / 32;
    size_t row_bytes = k / values * bytes;
    int has_min = pf__block_has_min(t);
    for (size_t o = 0; o < n_out; o++)
        for (size_t r = 0; r < rows; r++) {
            float acc[8] = {0};
            for (size_t b = 0; b < k / values; b++)
                for (size_t j = 0; j < subs; j++) {
                    pf__sub_block sb;
                    float wq[32]; /* the sub-block's values before dw: integers, or E4M3's e4m3 values */
                    const unsigned char *block = w + o * row_bytes + b * bytes;
                    if (t == PF__DTYPE_E4M3 || t == PF__DTYPE_Q8_G) { /* the fp32 scale first */
                        memcpy(&sb.dw, block, sizeof sb.dw);
                        sb.mw = 0.0f;
                        for (int i = 0; i < 32; i++)
                            wq[i] = t == PF__DTYPE_E4M3 ? pf__e4m3_values[block[4 + i]] : (float)(block[5 + i] - block[4]);
                    } else {
                        pf__sub_block_decode(t, block, (int)j, &sb);
                        for (int i = 0; i < 32; i++) wq[i] = (float)(sb.scales16[i / 16] * sb.v[i]);
                    }
                    size_t xb = r * nx + b * subs + j;
                    const float *xr = x + xb * 32;
                    for (int l = 0; l < 8; l++) {
                        float p = 0.0f;
                        for (int q = 0; q < 4; q++) p = fmaf(wq[q * 8 + l], xr[q * 8 + l], p);
                        acc[l] = fmaf(sb.dw, p, acc[l]);
                        if (t == PF__DTYPE_Q2_K) {
                            float pm = 0.0f;
                            for (int q = 0; q < 4; q++) pm = fmaf((float)sb.mins16[q / 2], xr[q * 8 + l], pm);
                            acc[l] = fmaf(sb.mw, pm, acc[l]);
                        }
                    }
                    if (has_min && t != PF__DTYPE_Q2_K) acc[0] = fmaf(sb.mw, x_sums[xb], acc[0]);
                }
            float a[4];
            for (int l = 0; l < 4; l++) a[l] = acc[l] + acc[l + 4];
            out[r * ld + o] = (a[0] + a[2]) + (a[1] + a[3]);
        }
}

#ifdef PF__AVX2
/* 8 e4m3 codes as fp32, pf__e4m3_values' numbers without a lookup: code c's exponent and mantissa
   bits placed as an fp16's (c & 0x7f) << 7, its sign at bit 15, make 2^-8 times its value (exponent
   0: an fp16 subnormal, which F16C converts exactly), times 256 exactly; S.1111.111 made NaN. */
PF__AVX2_TARGET static PF__INLINE __m256 pf__e4m3_8_avx2(const unsigned char *codes) {
    __m128i c = _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)codes));
    __m128i magnitude = _mm_and_si128(c, _mm_set1_epi16(0x7f));
    __m128i half = _mm_or_si128(_mm_slli_epi16(magnitude, 7), _mm_slli_epi16(_mm_and_si128(c, _mm_set1_epi16(0x80)), 8));
    __m256 value = _mm256_mul_ps(_mm256_cvtph_ps(half), _mm256_set1_ps(256.0f));
    __m256 nan = _mm256_castsi256_ps(_mm256_cvtepi16_epi32(_mm_cmpeq_epi16(magnitude, _mm_set1_epi16(0x7f))));
    return _mm256_or_ps(value, nan); /* all ones where NaN: a NaN (not the table's bits: NaN either way) */
}

#define PF__F32_R 4 /* rows of x a decoded sub-block meets */
/* Weight row `row` against R rows of x from r0 (R a constant where inlined: the accumulators stay
   in registers). */
PF__AVX2_TARGET static PF__INLINE void pf__blocks_f32_tile_avx2(float *out, size_t ld, const float *x,
                                                                const float *x_sums, const unsigned char *row,
                                                                size_t k, size_t r0, const int R, const pf__dtype t) {
    size_t values = pf__values_of(t), bytes = pf__bytes_of(t), subs = values / 32, nx = k / 32;
    int has_min = pf__has_min_of(t);
    __m256 acc[PF__F32_R];
    PF__UNROLL for (int r = 0; r < R; r++) acc[r] = _mm256_setzero_ps();
    for (size_t b = 0; b < k / values; b++) {
        _mm_prefetch((const char *)(row + (b + 8) * bytes), _MM_HINT_T0);
        const unsigned char *block = row + b * bytes;
        for (size_t j = 0; j < subs; j++) {
            float dw, mw = 0.0f;
            __m256i scales = _mm256_set1_epi16(1), mins = scales, v = scales;
            __m256 wq[4];
            if (t == PF__DTYPE_E4M3) { /* the fp32 scale, then 32 codes */
                memcpy(&dw, block, sizeof dw);
                for (int q = 0; q < 4; q++) wq[q] = pf__e4m3_8_avx2(block + 4 + 8 * q);
            } else if (t == PF__DTYPE_Q8_G) { /* the fp32 scale, the zero byte, then 32 value bytes less it */
                memcpy(&dw, block, sizeof dw);
                __m256i zero = _mm256_set1_epi32(block[4]);
                for (int q = 0; q < 4; q++)
                    wq[q] = _mm256_cvtepi32_ps(_mm256_sub_epi32(
                        _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(block + 5 + 8 * q))), zero));
            } else if (t == PF__DTYPE_Q8) v = _mm256_loadu_si256((const __m256i *)(block + 2)), dw = pf__f16_at_f16c(block);
            else if (t == PF__DTYPE_Q4) v = _mm256_sub_epi8(pf__q4_load(block + 2), _mm256_set1_epi8(8)), dw = pf__f16_at_f16c(block);
            else v = pf__sub_block_avx2(t, block, (int)j, &dw, &mw, &scales, &mins);
            if (t != PF__DTYPE_E4M3 && t != PF__DTYPE_Q8_G) {
                __m128i low = _mm256_castsi256_si128(v), high = _mm256_extracti128_si256(v, 1);
                wq[0] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(low));
                wq[1] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(low, 8)));
                wq[2] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(high));
                wq[3] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(high, 8)));
            }
            if (pf__scales16_of(t)) {
                __m256 s0 = _mm256_set1_ps((float)(int16_t)_mm256_extract_epi16(scales, 0));
                __m256 s1 = _mm256_set1_ps((float)(int16_t)_mm256_extract_epi16(scales, 8));
                wq[0] = _mm256_mul_ps(wq[0], s0), wq[1] = _mm256_mul_ps(wq[1], s0);
                wq[2] = _mm256_mul_ps(wq[2], s1), wq[3] = _mm256_mul_ps(wq[3], s1);
            }
            __m256 dwv = _mm256_set1_ps(dw), mwv = _mm256_setr_ps(mw, 0, 0, 0, 0, 0, 0, 0), m0 = dwv, m1 = dwv;
            if (pf__mins16_of(t)) {
                m0 = _mm256_set1_ps((float)(int16_t)_mm256_extract_epi16(mins, 0));
                m1 = _mm256_set1_ps((float)(int16_t)_mm256_extract_epi16(mins, 8));
                mwv = _mm256_set1_ps(mw);
            }
            PF__UNROLL for (int r = 0; r < R; r++) {
                size_t xb = (r0 + (size_t)r) * nx + b * subs + j;
                const float *xr = x + xb * 32;
                __m256 p = _mm256_fmadd_ps(wq[0], _mm256_loadu_ps(xr), _mm256_setzero_ps());
                p = _mm256_fmadd_ps(wq[1], _mm256_loadu_ps(xr + 8), p);
                p = _mm256_fmadd_ps(wq[2], _mm256_loadu_ps(xr + 16), p);
                p = _mm256_fmadd_ps(wq[3], _mm256_loadu_ps(xr + 24), p);
                acc[r] = _mm256_fmadd_ps(dwv, p, acc[r]);
                if (pf__mins16_of(t)) {
                    __m256 pm = _mm256_fmadd_ps(m0, _mm256_loadu_ps(xr), _mm256_setzero_ps());
                    pm = _mm256_fmadd_ps(m0, _mm256_loadu_ps(xr + 8), pm);
                    pm = _mm256_fmadd_ps(m1, _mm256_loadu_ps(xr + 16), pm);
                    pm = _mm256_fmadd_ps(m1, _mm256_loadu_ps(xr + 24), pm);
                    acc[r] = _mm256_fmadd_ps(mwv, pm, acc[r]);
                } else if (has_min) acc[r] = _mm256_fmadd_ps(mwv, _mm256_set1_ps(x_sums[xb]), acc[r]);
            }
        }
    }
    PF__UNROLL for (int r = 0; r < R; r++) out[(r0 + (size_t)r) * ld] = pf__hsum_avx2(acc[r]);
}

PF__AVX2_TARGET static PF__INLINE void pf__blocks_f32_avx2_as(float *out, size_t ld, const float *x, const float *x_sums,
                                                              size_t rows, const unsigned char *w, size_t k,
                                                              size_t n_out, const pf__dtype t) {
    size_t row_bytes = k / pf__values_of(t) * pf__bytes_of(t), whole = rows / PF__F32_R * PF__F32_R;
    for (size_t o = 0; o < n_out; o++) {
        for (size_t r0 = 0; r0 < whole; r0 += PF__F32_R)
            pf__blocks_f32_tile_avx2(out + o, ld, x, x_sums, w + o * row_bytes, k, r0, PF__F32_R, t);
        for (size_t r0 = whole; r0 < rows; r0++)
            pf__blocks_f32_tile_avx2(out + o, ld, x, x_sums, w + o * row_bytes, k, r0, 1, t);
    }
}

PF__AVX2_TARGET static void pf__blocks_f32_avx2(float *out, size_t ld, const float *x, const float *x_sums, size_t rows,
                                                const unsigned char *w, size_t k, size_t n_out, pf__dtype t) {
    switch (t) { /* each format its own copy, its decoding inlined */
    case PF__DTYPE_Q8: pf__blocks_f32_avx2_as(out, ld, x, x_sums, rows, w, k, n_out, PF__DTYPE_Q8); break;
    case PF__DTYPE_Q4: pf__blocks_f32_avx2_as(out, ld, x, x_sums, rows, w, k, n_out, PF__DTYPE_Q4); break;
    case PF__DTYPE_Q4_1: pf__blocks_f32_avx2_as(out, ld, x, x_sums, rows, w, k, n_out, PF__DTYPE_Q4_1); break;
    case PF__DTYPE_Q5_0: pf__blocks_f32_avx2_as(out, ld, x, x_sums, rows, w, k, n_out, PF__DTYPE_Q5_0); break;
    case PF__DTYPE_Q5_1: pf__blocks_f32_avx2_as(out, ld, x, x_sums, rows, w, k, n_out, PF__DTYPE_Q5_1); break;
    case PF__DTYPE_Q4_K: pf__blocks_f32_avx2_as(out, ld, x, x_sums, rows, w, k, n_out, PF__DTYPE_Q4_K); break;
    case PF__DTYPE_Q5_K: pf__blocks_f32_avx2_as(out, ld, x, x_sums, rows, w, k, n_out, PF__DTYPE_Q5_K); break;
    case PF__DTYPE_Q3_K: pf__blocks_f32_avx2_as(out, ld, x, x_sums, rows, w, k, n_out, PF__DTYPE_Q3_K); break;
    case PF__DTYPE_IQ4_NL: pf__blocks_f32_avx2_as(out, ld, x, x_sums, rows, w, k, n_out, PF__DTYPE_IQ4_NL); break;
    case PF__DTYPE_IQ4_XS: pf__blocks_f32_avx2_as(out, ld, x, x_sums, rows, w, k, n_out, PF__DTYPE_IQ4_XS); break;
    case PF__DTYPE_Q2_K: pf__blocks_f32_avx2_as(out, ld, x, x_sums, rows, w, k, n_out, PF__DTYPE_Q2_K); break;
    case PF__DTYPE_MXFP4: pf__blocks_f32_avx2_as(out, ld, x, x_sums, rows, w, k, n_out, PF__DTYPE_MXFP4); break;
    case PF__DTYPE_Q4_G: pf__blocks_f32_avx2_as(out, ld, x, x_sums, rows, w, k, n_out, PF__DTYPE_Q4_G); break;
    case PF__DTYPE_E4M3: pf__blocks_f32_avx2_as(out, ld, x, x_sums, rows, w, k, n_out, PF__DTYPE_E4M3); break;
    case PF__DTYPE_Q8_G: pf__blocks_f32_avx2_as(out, ld, x, x_sums, rows, w, k, n_out, PF__DTYPE_Q8_G); break;
    default: pf__blocks_f32_avx2_as(out, ld, x, x_sums, rows, w, k, n_out, PF__DTYPE_Q6_K);
    }
}
#endif

#if defined(PF__AVX2) && !defined(PF_NO_AVX512) && (defined(__clang__) || __GNUC__ >= 5)
#define PF__AVX512_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")))
/* 512-bit lanes, where the processor has AVX-512 F/BW/VL: the same chunks as the AVX2 tile, each
   summed in 16 fp32 lanes (lane l holds the products of inputs l, l + 16, ... of the chunk), then
   lanes l and l + 8 added in fp32 and the 8 pair sums moved to double. A slice that starts 8
   inputs off the 16-grid swaps lanes l and l + 8, and the pair sum is the same either way, so a
   row-split rank still sums what one rank sums there wherever the boundary is a multiple of 8.
   Every tile shape, single rows included, sums this way, so that an output never depends on
   which tile computed it (rank counts, batch composition). 4 rows of x by 6 weight rows keep 24
   accumulators of the 32 zmm registers; a 16-input step loads 10 vectors for 24 FMAs. Where a
   core has two 512-bit FMA units (Intel Xeon since Skylake-SP), this doubles the AVX2 tile's
   peak; Zen 4 splits 512-bit work in two, and measured the AVX2 tile faster (BENCHMARKS.md). */
#define PF__TILE_ROWS_AVX512 4
#define PF__TILE_OUTS_AVX512 6
#define PF__ROW_OUTS_AVX512 8
#define PF__CHUNK_AVX512 (2 * PF__CHUNK) /* 32 products a lane, as the AVX2 chunk; half the chunk ends */

/* Weights i.. of w, stored as wt, as sixteen fp32 lanes; lanes outside `mask` are 0. */
PF__AVX512_TARGET static PF__INLINE __m512 pf__load_weights_avx512(const void *w, size_t i, __mmask16 mask,
                                                                   const int wt) {
    int whole = mask == (__mmask16)0xffff; /* a constant where inlined: plain loads */
    if (wt == PF__DTYPE_F32)
        return whole ? _mm512_loadu_ps((const float *)w + i) : _mm512_maskz_loadu_ps(mask, (const float *)w + i);
    __m256i half = whole ? _mm256_loadu_si256((const __m256i *)((const uint16_t *)w + i))
                         : _mm256_maskz_loadu_epi16(mask, (const uint16_t *)w + i);
    if (wt == PF__DTYPE_BF16) return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(half), 16));
    return _mm512_cvtph_ps(half);
}

PF__AVX512_TARGET static PF__INLINE void pf__tile_avx512(double *acc, size_t ld, const float *x, const void *w,
                                                         size_t k, size_t begin, size_t end, size_t first_end,
                                                         const int mr, const int nr, const int wt) {
    __m512d sums[PF__MAX_ROWS][PF__MAX_OUTS];
    PF__UNROLL for (int i = 0; i < mr; i++)
        PF__UNROLL for (int j = 0; j < nr; j++) sums[i][j] = _mm512_setzero_pd();
    for (size_t c0 = begin; c0 < end;) {
        size_t c1 = c0 < first_end ? first_end : c0 + PF__CHUNK_AVX512;
        if (c1 > end) c1 = end;
        __m512 lanes[PF__MAX_ROWS][PF__MAX_OUTS];
        PF__UNROLL for (int i = 0; i < mr; i++)
            PF__UNROLL for (int j = 0; j < nr; j++) lanes[i][j] = _mm512_setzero_ps();
        size_t p = c0;
        for (; p + 16 <= c1; p += 16) {
            __m512 xv[PF__MAX_ROWS];
            PF__UNROLL for (int i = 0; i < mr; i++) xv[i] = _mm512_loadu_ps(x + i * k + p);
            PF__UNROLL for (int j = 0; j < nr; j++) {
                if (mr == 1) /* decode streams the weights: fetch the next tile's rows meanwhile */
                    _mm_prefetch(pf__weight_address(w, (size_t)(j + nr) * k + p, wt), _MM_HINT_T0);
                __m512 wv = pf__load_weights_avx512(w, j * k + p, (__mmask16)0xffff, wt);
                PF__UNROLL for (int i = 0; i < mr; i++) lanes[i][j] = _mm512_fmadd_ps(xv[i], wv, lanes[i][j]);
            }
        }
        if (p < c1) { /* the chunk's last few inputs: the lanes past them load zeros */
            __mmask16 mask = (__mmask16)((1u << (c1 - p)) - 1);
            __m512 xv[PF__MAX_ROWS];
            PF__UNROLL for (int i = 0; i < mr; i++) xv[i] = _mm512_maskz_loadu_ps(mask, x + i * k + p);
            PF__UNROLL for (int j = 0; j < nr; j++) {
                __m512 wv = pf__load_weights_avx512(w, j * k + p, mask, wt);
                PF__UNROLL for (int i = 0; i < mr; i++) lanes[i][j] = _mm512_fmadd_ps(xv[i], wv, lanes[i][j]);
            }
        }
        PF__UNROLL for (int i = 0; i < mr; i++)
            PF__UNROLL for (int j = 0; j < nr; j++) {
                __m256 low = _mm512_castps512_ps256(lanes[i][j]);
                __m256 high = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(lanes[i][j]), 1));
                sums[i][j] = _mm512_add_pd(sums[i][j], _mm512_cvtps_pd(_mm256_add_ps(low, high)));
            }
        c0 = c1;
    }
    /* each output's 8 double lanes as ((d0 + d4) + (d2 + d6)) + ((d1 + d5) + (d3 + d7)), in registers */
    PF__UNROLL for (int i = 0; i < mr; i++)
        PF__UNROLL for (int j = 0; j < nr; j++) {
            __m256d quad = _mm256_add_pd(_mm512_castpd512_pd256(sums[i][j]), _mm512_extractf64x4_pd(sums[i][j], 1));
            __m128d pair = _mm_add_pd(_mm256_castpd256_pd128(quad), _mm256_extractf128_pd(quad, 1));
            acc[i * ld + j] += _mm_cvtsd_f64(_mm_add_sd(pair, _mm_unpackhi_pd(pair, pair)));
        }
}

PF__TILE_SHAPES(avx512, PF__AVX512_TARGET, PF__TILE_ROWS_AVX512, PF__TILE_OUTS_AVX512, PF__ROW_OUTS_AVX512)

PF__AVX512_TARGET static void pf__store_sums_avx512(float *out, const double *acc, const float *bias, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm512_cvtpd_ps(_mm512_loadu_pd(acc + i));
        _mm256_storeu_ps(out + i, bias ? _mm256_add_ps(v, _mm256_loadu_ps(bias + i)) : v);
    }
    pf__store_sums_portable(out + i, acc + i, bias ? bias + i : NULL, n - i);
}

/* The lanes of a 16-float step that hold elements when `count` are left (all 16 from 16 on). */
static PF__INLINE __mmask16 pf__lanes16(size_t count) {
    return count >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << count) - 1);
}

/* pf__add_rows_portable and pf__normalize_portable in 16 lanes, each element through the same
   operations in the same order (the tail by masks), so the bits are the portable ones. */
PF__AVX512_TARGET static void pf__add_rows_avx512(float *x, const float *y, const float *b, size_t n) {
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 lanes = pf__lanes16(n - i);
        __m512 t = _mm512_add_ps(y ? _mm512_maskz_loadu_ps(lanes, y + i) : _mm512_setzero_ps(),
                                 b ? _mm512_maskz_loadu_ps(lanes, b + i) : _mm512_setzero_ps());
        _mm512_mask_storeu_ps(x + i, lanes, _mm512_add_ps(_mm512_maskz_loadu_ps(lanes, x + i), t));
    }
}

PF__AVX512_TARGET static void pf__normalize_avx512(float *out, const float *x, size_t n, double mean, float inv,
                                                   const float *g, float g_offset, const float *b) {
    __m512d m = _mm512_set1_pd(mean);
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 lanes = pf__lanes16(n - i);
        __m512 v = _mm512_maskz_loadu_ps(lanes, x + i);
        __m256 low = _mm512_cvtpd_ps(_mm512_sub_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(v)), m));
        __m256 upper = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)); /* AVX-512F only */
        __m256 high = _mm512_cvtpd_ps(_mm512_sub_pd(_mm512_cvtps_pd(upper), m));
        __m512 y = _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(low)), _mm256_castps_pd(high), 1));
        __m512 gain = _mm512_add_ps(_mm512_maskz_loadu_ps(lanes, g + i), _mm512_set1_ps(g_offset));
        y = _mm512_mul_ps(_mm512_mul_ps(y, _mm512_set1_ps(inv)), gain);
        if (b) y = _mm512_add_ps(y, _mm512_maskz_loadu_ps(lanes, b + i));
        _mm512_mask_storeu_ps(out + i, lanes, y);
    }
}

/* pf__sum_shifted_portable with chains 0-7 in one vector's lanes and 8-15 in another's. */
PF__AVX512_TARGET static double pf__sum_shifted_avx512(const float *x, size_t n, double shift, int squares) {
    __m512d low = _mm512_setzero_pd(), high = _mm512_setzero_pd(), by = _mm512_set1_pd(shift);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512d a = _mm512_sub_pd(_mm512_cvtps_pd(_mm256_loadu_ps(x + i)), by);
        __m512d b = _mm512_sub_pd(_mm512_cvtps_pd(_mm256_loadu_ps(x + i + 8)), by);
        low = _mm512_add_pd(low, squares ? _mm512_mul_pd(a, a) : a);
        high = _mm512_add_pd(high, squares ? _mm512_mul_pd(b, b) : b);
    }
    __m512d eight = _mm512_add_pd(low, high);
    __m256d four = _mm256_add_pd(_mm512_castpd512_pd256(eight), _mm512_extractf64x4_pd(eight, 1));
    __m128d two = _mm_add_pd(_mm256_castpd256_pd128(four), _mm256_extractf128_pd(four, 1));
    return pf__sum_shifted_tail(_mm_cvtsd_f64(_mm_add_sd(two, _mm_unpackhi_pd(two, two))), x, i, n, shift, squares);
}

PF__AVX512_TARGET static void pf__widen_avx512(float *out, const void *w, int wt, size_t count) {
    size_t i = 0;
    for (; i + 16 <= count; i += 16) _mm512_storeu_ps(out + i, pf__load_weights_avx512(w, i, (__mmask16)0xffff, wt));
    for (; i < count; i++) out[i] = pf__weight_value(w, i, wt);
}

/* AVX512-VNNI: vpdpbusd sums 4 u8 x s8 products into each int32 lane in one instruction, where
   AVX2 takes maddubs and madd. A tile's 16 weight rows sit in 8 registers, and their partial
   sums are added up into one vector of the 16 rows' exact dots (pf__sum_quads). Q8 puts two rows'
   blocks in a register (32 bytes each), Q4 four rows' values 0-15 in one register and their
   values 16-31 in another (16 bytes each, both halves of the packed bytes), so that one lane
   takes 8 products and a row's partial sums fill 128 bits: fewer shuffles to add them up. */
#define PF__AVX512_VNNI_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))

/* The weight row (from the tile's first) that slot s holds; the mapping is its own inverse. */
#define PF__VNNI_SLOT_ROW(s) (4 * ((s) % 4) + (s) / 4)

/* The dots of 16 weight rows from four[q], which holds slots 4q..4q + 3 by 128 bits, 4 partial
   sums each. The result's lane 4i + j is slot 4j + i's dot, so a tile puts weight row 4i + j in
   slot 4j + i (PF__VNNI_SLOT_ROW) to get its rows in order. */
PF__AVX512_VNNI_TARGET static PF__INLINE __m512i pf__sum_quads(const __m512i four[4]) {
    /* two[h]: per 128 bits i, slots i and 4 + i (h = 0) or 8 + i and 12 + i (h = 1), 2 sums each, interleaved */
    __m512i two[2];
    PF__UNROLL for (int h = 0; h < 2; h++)
        two[h] = _mm512_add_epi32(_mm512_unpacklo_epi32(four[2 * h], four[2 * h + 1]),
                                  _mm512_unpackhi_epi32(four[2 * h], four[2 * h + 1]));
    return _mm512_add_epi32(_mm512_unpacklo_epi64(two[0], two[1]), _mm512_unpackhi_epi64(two[0], two[1]));
}

/* Q8: block b of the 16 slots' rows (at byte offsets from w) as 8 registers, slot 2p's block in
   the low 256 bits of wv[p] and slot 2p + 1's in the high, as unsigned bytes w + 128 (the xor) for
   vpdpbusd's unsigned operand: the dot below holds 128 sum x beyond the exact one. The loads are
   broadcasts (load ports only), not inserts, which wait for the one shuffle port. */
PF__AVX512_VNNI_TARGET static PF__INLINE void pf__q8_load_vnni(__m512i wv[8], const unsigned char *blocks,
                                                               const int32_t at[16]) {
    PF__UNROLL for (int p = 0; p < 8; p++) {
        const unsigned char *a = blocks + at[PF__VNNI_SLOT_ROW(2 * p)] + 2, *b = blocks + at[PF__VNNI_SLOT_ROW(2 * p + 1)] + 2;
        __m512i both = _mm512_mask_broadcast_i64x4(_mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)a)), 0xf0,
                                                   _mm256_loadu_si256((const __m256i *)b));
        wv[p] = _mm512_xor_si512(both, _mm512_set1_epi8((char)0x80));
    }
}

PF__AVX512_VNNI_TARGET static PF__INLINE __m512i pf__q8_dots_vnni(const __m512i wv[8], const int8_t *x) {
    __m512i xv = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)x)), four[4];
    PF__UNROLL for (int q = 0; q < 4; q++) { /* slots 4q..4q + 3 from registers 2q (slots 4q, 4q + 1) and 2q + 1 */
        __m512i d0 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wv[2 * q], xv);
        __m512i d1 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wv[2 * q + 1], xv);
        four[q] = _mm512_add_epi32(_mm512_shuffle_i32x4(d0, d1, _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm512_shuffle_i32x4(d0, d1, _MM_SHUFFLE(3, 1, 3, 1)));
    }
    return pf__sum_quads(four);
}

/* Q4: block b of the 16 slots' rows as values 0..15, slots 4q..4q + 3 by 128 bits: wv[q] their
   values 0-15 (low nibbles), wv[4 + q] their values 16-31 (high nibbles). The dot below holds
   8 sum x beyond the exact one (the values are q, not q - 8). */
PF__AVX512_VNNI_TARGET static PF__INLINE void pf__nibbles_load_vnni(__m512i wv[8], const unsigned char *blocks,
                                                                    const int32_t at[16], const int offset) {
    PF__UNROLL for (int q = 0; q < 4; q++) {
        __m512i packed = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(blocks + at[PF__VNNI_SLOT_ROW(4 * q)] + offset)));
        packed = _mm512_inserti32x4(packed, _mm_loadu_si128((const __m128i *)(blocks + at[PF__VNNI_SLOT_ROW(4 * q + 1)] + offset)), 1);
        packed = _mm512_inserti32x4(packed, _mm_loadu_si128((const __m128i *)(blocks + at[PF__VNNI_SLOT_ROW(4 * q + 2)] + offset)), 2);
        packed = _mm512_inserti32x4(packed, _mm_loadu_si128((const __m128i *)(blocks + at[PF__VNNI_SLOT_ROW(4 * q + 3)] + offset)), 3);
        wv[q] = _mm512_and_si512(packed, _mm512_set1_epi8(15));
        wv[4 + q] = _mm512_and_si512(_mm512_srli_epi16(packed, 4), _mm512_set1_epi8(15));
    }
}
PF__AVX512_VNNI_TARGET static PF__INLINE void pf__q4_load_vnni(__m512i wv[8], const unsigned char *blocks,
                                                               const int32_t at[16]) {
    pf__nibbles_load_vnni(wv, blocks, at, 2);
}

PF__AVX512_VNNI_TARGET static PF__INLINE __m512i pf__q4_dots_vnni(const __m512i wv[8], const int8_t *x) {
    __m512i low = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)x));
    __m512i high = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(x + PF__Q8_BLOCK / 2))), four[4];
    PF__UNROLL for (int q = 0; q < 4; q++)
        four[q] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), wv[q], low), wv[4 + q], high);
    return pf__sum_quads(four);
}

/* The fp16 scales of 16 blocks, at byte offsets `at` from base, as fp32 lanes (the gather reads a
   block's first 4 bytes: its scale and 2 bytes of its values). */
PF__AVX512_VNNI_TARGET static PF__INLINE __m512 pf__block_scales_avx512(const unsigned char *base, __m512i at) {
    return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_i32gather_epi32(at, (const int *)base, 1)));
}

/* R rows of x by 16 weight rows, each block of weights loaded once for the R rows; `shift` scales
   sum x to what dots() holds beyond the exact dot (Q8: 128 sum x, from the xor; Q4: 8 sum x). */
#define PF__Q8_TILE_VNNI(name, R, BYTES, load, dots, shift)                                                          \
    PF__AVX512_VNNI_TARGET static void name(float *out, size_t ld, const int8_t *qx, const float *dx,               \
                                            const int32_t *sx, size_t rows, const unsigned char *w, size_t nb,      \
                                            size_t n_out) {                                                          \
        size_t row_bytes = nb * BYTES, k = nb * PF__Q8_BLOCK;                                                       \
        for (size_t r0 = 0; r0 < rows; r0 += R) {                                                                   \
            size_t nr = rows - r0 < R ? rows - r0 : R;                                                              \
            for (size_t o = 0; o < n_out; o += 16) {                                                                \
                size_t no = n_out - o < 16 ? n_out - o : 16;                                                        \
                PF__ROW_OFFSETS(at, 16, o, n_out, row_bytes);                                                       \
                __m512i offsets = _mm512_loadu_si512(at);                                                           \
                __m512 acc[R];                                                                                      \
                PF__UNROLL for (int r = 0; r < R; r++) acc[r] = _mm512_setzero_ps();                                \
                for (size_t b = 0; b < nb; b++) {                                                                   \
                    const unsigned char *blocks = w + b * BYTES;                                                    \
                    __m512i wv[8];                                                                                  \
                    pf__prefetch_next_tile(w + (o + 16) * row_bytes, 16 * BYTES, b);                        \
                    PF__UNROLL16 for (int j = 0; j < 16; j++)                                                      \
                        _mm_prefetch((const char *)(blocks + at[j] + PF__Q8_NEAR), _MM_HINT_T0);                   \
                    load(wv, blocks, at);                                                                           \
                    __m512 dw = pf__block_scales_avx512(blocks, offsets);                                           \
                    PF__UNROLL for (int r = 0; r < R; r++) {                                                        \
                        size_t rr = r0 + ((size_t)r < nr ? (size_t)r : 0);                                          \
                        int32_t beyond = sx[rr * nb + b] * (1 << shift);                                             \
                        __m512i d = _mm512_sub_epi32(dots(wv, qx + rr * k + b * PF__Q8_BLOCK), _mm512_set1_epi32(beyond)); \
                        acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), _mm512_mul_ps(_mm512_set1_ps(dx[rr * nb + b]), dw), \
                                                 acc[r]);                                                           \
                    }                                                                                               \
                }                                                                                                   \
                for (size_t r = 0; r < nr; r++)                                                                     \
                    _mm512_mask_storeu_ps(out + (r0 + r) * ld + o, (__mmask16)((1u << no) - 1), acc[r]);           \
            }                                                                                                       \
        }                                                                                                           \
    }

/* GGUF's Q4_1 (fp16 dw and mw, then Q4_0's nibbles: weight = dw q + mw) against int8 x in the
   same 16-row tiles: the nibbles' dots are exact (q is vpdpbusd's unsigned operand as it is), and
   each row's chain is pf__blocks_rows_portable's, fmaf(dot, dx dw, sum) then fmaf(sum x, dx mw,
   sum). It runs about 3x the AVX2 kernel, which decodes 8 rows' sub-blocks and adds their lanes
   apart (BENCHMARKS.md). */
PF__AVX512_VNNI_TARGET static PF__INLINE void pf__q4_1_tile_vnni(float *out, size_t ld, const int8_t *qx,
                                                                 const float *dx, const int32_t *sx, size_t rows,
                                                                 const unsigned char *w, size_t nb, size_t n_out,
                                                                 const int R) {
    const size_t bytes = pf__bytes_of(PF__DTYPE_Q4_1);
    size_t row_bytes = nb * bytes, k = nb * PF__Q8_BLOCK;
    for (size_t r0 = 0; r0 < rows; r0 += (size_t)R) {
        size_t nr = rows - r0 < (size_t)R ? rows - r0 : (size_t)R;
        for (size_t o = 0; o < n_out; o += 16) {
            size_t no = n_out - o < 16 ? n_out - o : 16;
            PF__ROW_OFFSETS(at, 16, o, n_out, row_bytes);
            __m512i offsets = _mm512_loadu_si512(at);
            __m512 acc[4];
            PF__UNROLL for (int r = 0; r < R; r++) acc[r] = _mm512_setzero_ps();
            for (size_t b = 0; b < nb; b++) {
                const unsigned char *blocks = w + b * bytes;
                __m512i wv[8];
                pf__prefetch_next_tile(w + (o + 16) * row_bytes, 16 * bytes, b);
                PF__UNROLL16 for (int j = 0; j < 16; j++)
                    _mm_prefetch((const char *)(blocks + at[j] + PF__Q8_NEAR), _MM_HINT_T0);
                pf__nibbles_load_vnni(wv, blocks, at, 4);
                __m512i factors = _mm512_i32gather_epi32(offsets, (const int *)blocks, 1); /* dw, then mw */
                __m512 dw = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(factors));
                __m512 mw = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(factors, 16)));
                PF__UNROLL for (int r = 0; r < R; r++) {
                    size_t rr = r0 + ((size_t)r < nr ? (size_t)r : 0), xb = rr * nb + b;
                    __m512 scale = _mm512_set1_ps(dx[xb]);
                    __m512i dots = pf__q4_dots_vnni(wv, qx + rr * k + b * PF__Q8_BLOCK);
                    acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dots), _mm512_mul_ps(scale, dw), acc[r]);
                    acc[r] = _mm512_fmadd_ps(_mm512_set1_ps((float)sx[xb]), _mm512_mul_ps(scale, mw), acc[r]);
                }
            }
            for (size_t r = 0; r < nr; r++)
                _mm512_mask_storeu_ps(out + (r0 + r) * ld + o, (__mmask16)((1u << no) - 1), acc[r]);
        }
    }
}

/* The K formats' 16-row tiles hold their weights still: a tile's sub-block is decoded once (its
   values and factors) and meets every row of x, whose running sums wait in out between
   sub-blocks (fp32 stored and loaded as it is, so each row's chain is the one
   pf__blocks_rows_portable computes). Decoding the scales, 16 rows at a time in scalar code,
   would cost more than the products if it were done again for each few rows of x. */
#define PF__TILE_SUMS_BEGIN(o, no)                                                                                   \
    __mmask16 lanes = (__mmask16)((1u << (no)) - 1);                                                                \
    for (size_t r = 0; r < rows; r++) _mm512_mask_storeu_ps(out + r * ld + (o), lanes, _mm512_setzero_ps())

/* GGUF's Q5_0 (fp16 d, 32 fifth bits, Q4_0's nibbles; weight = d (q - 16)) and Q5_1 (fp16 d and m,
   the bits, the nibbles; weight = d q + m) against int8 x in the 16-row tiles: each register's
   fifth bits, four rows' 16 at a time, become 16s through a byte mask, so q (0..31) is vpdpbusd's
   unsigned operand; the exact dot (less 16 sum x for Q5_0) then follows the portable chain. */
PF__AVX512_VNNI_TARGET static PF__INLINE void pf__q5_tile_vnni(float *out, size_t ld, const int8_t *qx,
                                                               const float *dx, const int32_t *sx, size_t rows,
                                                               const unsigned char *w, size_t nb, size_t n_out,
                                                               const int with_min, const int R) {
    const size_t bytes = pf__bytes_of(with_min ? PF__DTYPE_Q5_1 : PF__DTYPE_Q5_0), bits_at = with_min ? 4 : 2;
    size_t row_bytes = nb * bytes, k = nb * PF__Q8_BLOCK;
    for (size_t r0 = 0; r0 < rows; r0 += (size_t)R) {
        size_t nr = rows - r0 < (size_t)R ? rows - r0 : (size_t)R;
        for (size_t o = 0; o < n_out; o += 16) {
            size_t no = n_out - o < 16 ? n_out - o : 16;
            PF__ROW_OFFSETS(at, 16, o, n_out, row_bytes);
            int32_t slot_at[16];
            for (int sl = 0; sl < 16; sl++) slot_at[sl] = at[PF__VNNI_SLOT_ROW(sl)];
            __m512i offsets = _mm512_loadu_si512(at), slot_offsets = _mm512_loadu_si512(slot_at);
            __m512 acc[4];
            PF__UNROLL for (int r = 0; r < R; r++) acc[r] = _mm512_setzero_ps();
            for (size_t b = 0; b < nb; b++) {
                const unsigned char *blocks = w + b * bytes;
                __m512i wv[8];
                pf__prefetch_next_tile(w + (o + 16) * row_bytes, 16 * bytes, b);
                PF__UNROLL16 for (int j = 0; j < 16; j++)
                    _mm_prefetch((const char *)(blocks + at[j] + PF__Q8_NEAR), _MM_HINT_T0);
                pf__nibbles_load_vnni(wv, blocks, at, (int)bits_at + 4);
                __m512i fifth = _mm512_i32gather_epi32(slot_offsets, (const int *)(blocks + bits_at), 1);
                uint64_t low[4], high[4]; /* per slot 4q.. 4q + 3: the bits of values 0-15 (low), 16-31 (high) */
                _mm256_storeu_si256((__m256i *)low, _mm512_cvtepi32_epi16(fifth));
                _mm256_storeu_si256((__m256i *)high, _mm512_cvtepi32_epi16(_mm512_srli_epi32(fifth, 16)));
                PF__UNROLL for (int q = 0; q < 4; q++) {
                    wv[q] = _mm512_mask_mov_epi8(wv[q], (__mmask64)low[q], _mm512_or_si512(wv[q], _mm512_set1_epi8(16)));
                    wv[4 + q] = _mm512_mask_mov_epi8(wv[4 + q], (__mmask64)high[q], _mm512_or_si512(wv[4 + q], _mm512_set1_epi8(16)));
                }
                __m512i factors = _mm512_i32gather_epi32(offsets, (const int *)blocks, 1); /* d, then m */
                __m512 dw = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(factors));
                __m512 mw = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(factors, 16)));
                PF__UNROLL for (int r = 0; r < R; r++) {
                    size_t rr = r0 + ((size_t)r < nr ? (size_t)r : 0), xb = rr * nb + b;
                    __m512 scale = _mm512_set1_ps(dx[xb]);
                    __m512i dots = pf__q4_dots_vnni(wv, qx + rr * k + b * PF__Q8_BLOCK);
                    if (!with_min) dots = _mm512_sub_epi32(dots, _mm512_set1_epi32(sx[xb] * 16));
                    acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dots), _mm512_mul_ps(scale, dw), acc[r]);
                    if (with_min) acc[r] = _mm512_fmadd_ps(_mm512_set1_ps((float)sx[xb]), _mm512_mul_ps(scale, mw), acc[r]);
                }
            }
            for (size_t r = 0; r < nr; r++)
                _mm512_mask_storeu_ps(out + (r0 + r) * ld + o, (__mmask16)((1u << no) - 1), acc[r]);
        }
    }
}

/* pf__k_scale_min for 16 rows at once: sc[g] holds each row's scale bytes 4g.. 4g + 3 in a lane. */
PF__AVX512_VNNI_TARGET static PF__INLINE void pf__k_scale_min_x16(const __m512i sc[3], int j, __m512i *scale, __m512i *min) {
    const __m512i byte = _mm512_set1_epi32(255);
    unsigned shift = (unsigned)(8 * (j % 4));
    __m512i b0 = _mm512_and_si512(_mm512_srli_epi32(sc[0], shift), byte); /* sc[j % 4] */
    __m512i b1 = _mm512_and_si512(_mm512_srli_epi32(sc[1], shift), byte); /* sc[j % 4 + 4] */
    if (j < 4) {
        *scale = _mm512_and_si512(b0, _mm512_set1_epi32(63));
        *min = _mm512_and_si512(b1, _mm512_set1_epi32(63));
        return;
    }
    __m512i b2 = _mm512_and_si512(_mm512_srli_epi32(sc[2], shift), byte); /* sc[j + 4] */
    *scale = _mm512_or_si512(_mm512_and_si512(b2, _mm512_set1_epi32(15)), _mm512_slli_epi32(_mm512_srli_epi32(b0, 6), 4));
    *min = _mm512_or_si512(_mm512_srli_epi32(b2, 4), _mm512_slli_epi32(_mm512_srli_epi32(b1, 6), 4));
}

/* GGUF's Q4_K (256 weights: fp16 d and dmin, 6-bit scales and minimums per 32, then 128 bytes of
   nibbles, sub-block 2i the low nibbles of bytes 32i.. 32i + 31, 2i + 1 their high ones; weight =
   d scale q - dmin min) and Q5_K (the same with 32 bytes of fifth bits before the nibbles, bit j
   of byte i value i of sub-block j) against int8 x: a sub-block's 32 nibbles of two rows fill one register,
   as Q8's values do, and their dots are exact (q is vpdpbusd's unsigned operand); each row then
   takes fmaf(dot, dx dw, sum), fmaf(sum x, dx mw, sum), dw and mw as pf__sub_block_decode has them. */
PF__AVX512_VNNI_TARGET static PF__INLINE void pf__k_tiles_vnni(float *out, size_t ld, const int8_t *qx, const float *dx,
                                                               const int32_t *sx, size_t rows, const unsigned char *w,
                                                               size_t k, size_t n_out, const int fifth) {
    enum { SUBS = 8 };
    const size_t bytes = pf__bytes_of(fifth ? PF__DTYPE_Q5_K : PF__DTYPE_Q4_K), values_at = fifth ? 48 : 16; /* Q5_K: 32 bytes of fifth bits at 16 */
    size_t nb = k / 256, nx = k / PF__Q8_BLOCK, row_bytes = nb * bytes;
    for (size_t o = 0; o < n_out; o += 16) {
        size_t no = n_out - o < 16 ? n_out - o : 16;
        PF__ROW_OFFSETS(at, 16, o, n_out, row_bytes);
        __m512i offsets = _mm512_loadu_si512(at);
        PF__TILE_SUMS_BEGIN(o, no);
        for (size_t b = 0; b < nb; b++) {
            const unsigned char *blocks = w + b * bytes;
            pf__prefetch_next_tile(w + (o + 16) * row_bytes, 16 * bytes, b);
            __m512i factors = _mm512_i32gather_epi32(offsets, (const int *)blocks, 1); /* d, then dmin */
            __m512 d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(factors));
            __m512 dmin = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(factors, 16)));
            /* the 12 scale bytes of the 16 rows as three 4-byte lanes each (pf__k_scale_min's sc[0..11]) */
            __m512i sc[3];
            for (int g = 0; g < 3; g++) sc[g] = _mm512_i32gather_epi32(offsets, (const int *)(blocks + 4 + 4 * g), 1);
            for (int j = 0; j < SUBS; j++) {
                __m512i scale, min;
                pf__k_scale_min_x16(sc, j, &scale, &min);
                __m512i wv[8];
                PF__UNROLL for (int p = 0; p < 8; p++) { /* slots 2p and 2p + 1: as pf__q8_load_vnni */
                    const unsigned char *ra = blocks + at[PF__VNNI_SLOT_ROW(2 * p)], *rb = blocks + at[PF__VNNI_SLOT_ROW(2 * p + 1)];
                    size_t q_at = values_at + (size_t)(j / 2 * 32);
                    __m512i both = _mm512_mask_broadcast_i64x4(_mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(ra + q_at))),
                                                               0xf0, _mm256_loadu_si256((const __m256i *)(rb + q_at)));
                    wv[p] = _mm512_and_si512(j % 2 ? _mm512_srli_epi16(both, 4) : both, _mm512_set1_epi8(15));
                    if (fifth) { /* bit j of byte i is value i's 16 */
                        __m512i bits = _mm512_mask_broadcast_i64x4(_mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(ra + 16))),
                                                                   0xf0, _mm256_loadu_si256((const __m256i *)(rb + 16)));
                        bits = _mm512_and_si512(_mm512_srli_epi16(bits, (unsigned)j), _mm512_set1_epi8(1));
                        wv[p] = _mm512_or_si512(wv[p], _mm512_slli_epi16(bits, 4));
                    }
                }
                __m512 dw = _mm512_mul_ps(d, _mm512_cvtepi32_ps(scale));
                __m512 mw = _mm512_castsi512_ps(_mm512_xor_si512( /* -(dmin min), as fp32 negates */
                    _mm512_castps_si512(_mm512_mul_ps(dmin, _mm512_cvtepi32_ps(min))),
                    _mm512_set1_epi32((int)0x80000000u)));
                for (size_t r = 0; r < rows; r++) {
                    size_t xb = r * nx + b * SUBS + (size_t)j;
                    __m512 xscale = _mm512_set1_ps(dx[xb]), sum = _mm512_maskz_loadu_ps(lanes, out + r * ld + o);
                    __m512i dots = pf__q8_dots_vnni(wv, qx + xb * PF__Q8_BLOCK);
                    sum = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dots), _mm512_mul_ps(xscale, dw), sum);
                    sum = _mm512_fmadd_ps(_mm512_set1_ps((float)sx[xb]), _mm512_mul_ps(xscale, mw), sum);
                    _mm512_mask_storeu_ps(out + r * ld + o, lanes, sum);
                }
            }
        }
    }
}

PF__AVX512_VNNI_TARGET static void pf__q4_k_tiles_vnni(float *out, size_t ld, const int8_t *qx, const float *dx,
                                                       const int32_t *sx, size_t rows, const unsigned char *w, size_t k,
                                                       size_t n_out) {
    pf__k_tiles_vnni(out, ld, qx, dx, sx, rows, w, k, n_out, 0);
}
PF__AVX512_VNNI_TARGET static void pf__q5_k_tiles_vnni(float *out, size_t ld, const int8_t *qx, const float *dx,
                                                       const int32_t *sx, size_t rows, const unsigned char *w, size_t k,
                                                       size_t n_out) {
    pf__k_tiles_vnni(out, ld, qx, dx, sx, rows, w, k, n_out, 1);
}

/* The exact dots of 16 weight rows (slots as pf__q8_load_vnni places them, signed values) with
   x's 32 bytes xu (unsigned: x + 128), each 16 weights' partial sums weighed by their int32 scale
   (part[q][h]: the scales of four[q]'s slots, values 0-15 for h 0 and 16-31 for h 1): Q6_K's sum
   s v (x + 128), in row order. */
PF__AVX512_VNNI_TARGET static PF__INLINE __m512i pf__scaled_dots_vnni(const __m512i wv[8], __m512i xu,
                                                                      const __m512i part[4][2]) {
    __m512i four[4];
    PF__UNROLL for (int q = 0; q < 4; q++) {
        __m512i d0 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), xu, wv[2 * q]);
        __m512i d1 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), xu, wv[2 * q + 1]);
        __m512i first = _mm512_shuffle_i32x4(d0, d1, _MM_SHUFFLE(2, 0, 2, 0)); /* values 0-15 */
        __m512i second = _mm512_shuffle_i32x4(d0, d1, _MM_SHUFFLE(3, 1, 3, 1));
        four[q] = _mm512_add_epi32(_mm512_mullo_epi32(first, part[q][0]), _mm512_mullo_epi32(second, part[q][1]));
    }
    return pf__sum_quads(four);
}

/* GGUF's Q6_K (256 weights: 128 bytes of low nibbles, 64 of 2-bit highs, 16 int8 scales each of
   16 weights, fp16 d; weight = d s (q - 32)) against int8 x: v = q - 32 is vpdpbusd's signed
   operand and x + 128 its unsigned one, so sum s v (x + 128) less 128 sum s v (x as all ones,
   once a sub-block) is the exact dot; each row then takes fmaf(dot, dx d, sum). */
PF__AVX512_VNNI_TARGET static void pf__q6_k_tiles_vnni(float *out, size_t ld, const int8_t *qx, const float *dx,
                                                       size_t rows, const unsigned char *w, size_t k, size_t n_out) {
    enum { SUBS = 8 };
    const size_t bytes = pf__bytes_of(PF__DTYPE_Q6_K);
    size_t nb = k / 256, nx = k / PF__Q8_BLOCK, row_bytes = nb * bytes;
    for (size_t o = 0; o < n_out; o += 16) {
        size_t no = n_out - o < 16 ? n_out - o : 16;
        PF__ROW_OFFSETS(at, 16, o, n_out, row_bytes);
        __m512i offsets = _mm512_loadu_si512(at);
        PF__TILE_SUMS_BEGIN(o, no);
        for (size_t b = 0; b < nb; b++) {
            const unsigned char *blocks = w + b * bytes;
            pf__prefetch_next_tile(w + (o + 16) * row_bytes, 16 * bytes, b);
            __m512 d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_i32gather_epi32(offsets, (const int *)(blocks + 208), 1)));
            for (int j = 0; j < SUBS; j++) {
                int half = j / 4, kq = j % 4;
                size_t low_at = (size_t)(half * 64 + kq % 2 * 32), high_at = (size_t)(128 + half * 32);
                __m512i wv[8], part[4][2];
                PF__UNROLL for (int p = 0; p < 8; p++) { /* slots 2p and 2p + 1: as pf__q8_load_vnni */
                    const unsigned char *ra = blocks + at[PF__VNNI_SLOT_ROW(2 * p)], *rb = blocks + at[PF__VNNI_SLOT_ROW(2 * p + 1)];
                    __m512i low = _mm512_mask_broadcast_i64x4(_mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(ra + low_at))),
                                                              0xf0, _mm256_loadu_si256((const __m256i *)(rb + low_at)));
                    __m512i high = _mm512_mask_broadcast_i64x4(_mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(ra + high_at))),
                                                               0xf0, _mm256_loadu_si256((const __m256i *)(rb + high_at)));
                    low = _mm512_and_si512(_mm512_srli_epi16(low, (unsigned)(kq / 2 * 4)), _mm512_set1_epi8(15));
                    high = _mm512_and_si512(_mm512_srli_epi16(high, (unsigned)(2 * kq)), _mm512_set1_epi8(3));
                    wv[p] = _mm512_sub_epi8(_mm512_or_si512(low, _mm512_slli_epi16(high, 4)), _mm512_set1_epi8(32));
                }
                /* each slot's two scales, spread over four[q]'s 128-bit parts (slots 4q.. 4q + 3) */
                int32_t slot_scale[2][16];
                for (int sl = 0; sl < 16; sl++) {
                    const int8_t *sc = (const int8_t *)(blocks + at[PF__VNNI_SLOT_ROW(sl)] + 192) + half * 8 + kq * 2;
                    slot_scale[0][sl] = sc[0], slot_scale[1][sl] = sc[1];
                }
                for (int h = 0; h < 2; h++) {
                    __m512i by_slot = _mm512_loadu_si512(slot_scale[h]);
                    for (int q = 0; q < 4; q++)
                        part[q][h] = _mm512_permutexvar_epi32(
                            _mm512_add_epi32(_mm512_set1_epi32(4 * q), _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3)),
                            by_slot);
                }
                __m512i beyond = _mm512_slli_epi32(pf__scaled_dots_vnni(wv, _mm512_set1_epi8(1), part), 7);
                __m512 dw = d;
                for (size_t r = 0; r < rows; r++) {
                    size_t xb = r * nx + b * SUBS + (size_t)j;
                    __m512i xu = _mm512_xor_si512(_mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(qx + xb * PF__Q8_BLOCK))),
                                                  _mm512_set1_epi8((char)0x80));
                    __m512i dots = _mm512_sub_epi32(pf__scaled_dots_vnni(wv, xu, part), beyond);
                    __m512 sum = _mm512_maskz_loadu_ps(lanes, out + r * ld + o);
                    sum = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dots), _mm512_mul_ps(_mm512_set1_ps(dx[xb]), dw), sum);
                    _mm512_mask_storeu_ps(out + r * ld + o, lanes, sum);
                }
            }
        }
    }
}

PF__AVX512_VNNI_TARGET static void pf__blocks_rows_vnni(float *out, size_t ld, const int8_t *qx, const float *dx,
                                                        const int32_t *sx, size_t rows, const unsigned char *w,
                                                        size_t k, size_t n_out, pf__dtype t) {
    if (t == PF__DTYPE_Q4_1 && rows == 1) pf__q4_1_tile_vnni(out, ld, qx, dx, sx, rows, w, k / PF__Q8_BLOCK, n_out, 1);
    else if (t == PF__DTYPE_Q4_1) pf__q4_1_tile_vnni(out, ld, qx, dx, sx, rows, w, k / PF__Q8_BLOCK, n_out, 4);
    else if ((t == PF__DTYPE_Q5_0 || t == PF__DTYPE_Q5_1) && rows == 1)
        pf__q5_tile_vnni(out, ld, qx, dx, sx, rows, w, k / PF__Q8_BLOCK, n_out, t == PF__DTYPE_Q5_1, 1);
    else if (t == PF__DTYPE_Q5_0 || t == PF__DTYPE_Q5_1)
        pf__q5_tile_vnni(out, ld, qx, dx, sx, rows, w, k / PF__Q8_BLOCK, n_out, t == PF__DTYPE_Q5_1, 4);
    else if (t == PF__DTYPE_Q4_K) pf__q4_k_tiles_vnni(out, ld, qx, dx, sx, rows, w, k, n_out);
    else if (t == PF__DTYPE_Q5_K) pf__q5_k_tiles_vnni(out, ld, qx, dx, sx, rows, w, k, n_out);
    else if (t == PF__DTYPE_Q6_K) pf__q6_k_tiles_vnni(out, ld, qx, dx, rows, w, k, n_out);
    else pf__blocks_rows_avx2(out, ld, qx, dx, sx, rows, w, k, n_out, t);
}

PF__Q8_TILE_VNNI(pf__q8_rows_vnni, 4, PF__Q8_BYTES, pf__q8_load_vnni, pf__q8_dots_vnni, 7)
PF__Q8_TILE_VNNI(pf__q8_row_vnni, 1, PF__Q8_BYTES, pf__q8_load_vnni, pf__q8_dots_vnni, 7)
PF__Q8_TILE_VNNI(pf__q4_rows_vnni, 4, PF__Q4_BYTES, pf__q4_load_vnni, pf__q4_dots_vnni, 3)
PF__Q8_TILE_VNNI(pf__q4_row_vnni, 1, PF__Q4_BYTES, pf__q4_load_vnni, pf__q4_dots_vnni, 3)

#if defined(__linux__) && !defined(PF_NO_AMX) && (defined(__clang__) ? __clang_major__ >= 12 : __GNUC__ >= 11)
#define PF__AMX_TARGET __attribute__((target("amx-tile,amx-int8,avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))
#define PF__AMX_ROWS PF__Q8_TILES_ROWS /* rows of x in a tile (its dots' columns) */
#define PF__AMX_TILE_BYTES 1024 /* a 16 x 16 tile of int32 dots */

/* AMX (Intel Xeon since Sapphire Rapids): one tdpbssd (tdpbusd for Q4's unsigned nibbles) gives the
   exact block dots of 16 weight rows with 16 rows of x, a 16 x 16 int32 tile; vectors over the 16
   rows of x then scale and add them in block order, as every kernel set does, so the bits are
   the vector kernels'. Tiles: 0 holds the weights' block (16 rows of 32 bytes, read in place for
   Q8), 1 x's block (8 rows of 16 4-byte groups: the layout the instruction takes), 2 and 3 the
   dots, taking turns so that one block's multiply overlaps the scaling of the one before. */
typedef struct {
    uint8_t palette, start_row, reserved[14];
    uint16_t bytes_per_row[16];
    uint8_t rows[16];
} pf__amx_config;

/* Loads a tile configuration. Not _tile_loadconfig: GCC's tells the compiler the instruction reads
   8 bytes, and -O1 then dropped the stores of the rest (ldtilecfg faulted). */
static PF__INLINE void pf__amx_load_config(const pf__amx_config *c) { __asm__ volatile("ldtilecfg %0" : : "m"(*c)); }

PF__AMX_TARGET static void pf__amx_configure(void) {
    pf__amx_config c;
    memset(&c, 0, sizeof c);
    c.palette = 1;
    c.rows[0] = 16, c.bytes_per_row[0] = PF__Q8_BLOCK;
    c.rows[1] = PF__Q8_BLOCK / 4, c.bytes_per_row[1] = 64;
    c.rows[2] = c.rows[3] = 16, c.bytes_per_row[2] = c.bytes_per_row[3] = 64;
    pf__amx_load_config(&c);
}

/* The AMX product's scratch, after the activations' blocks: x's blocks in tile layout with their
   scales and sums by group of 16 rows, a tile's weight scales [block][16] and Q4 values as bytes
   [block][16][32], and two tiles of dots. */
typedef struct {
    int8_t *x;
    float *dx, *dw;
    int32_t *sx, *dots;
    unsigned char *values;
} pf__amx_scratch;

static size_t pf__amx_groups(size_t rows) { return (rows + PF__AMX_ROWS - 1) / PF__AMX_ROWS; }

static size_t pf__amx_bytes(size_t rows, size_t k) {
    size_t padded = pf__amx_groups(rows) * PF__AMX_ROWS, nb = k / PF__Q8_BLOCK;
    return 64 + padded * k + padded * nb * (sizeof(float) + sizeof(int32_t)) + nb * 16 * sizeof(float) + 16 * k +
           2 * PF__AMX_TILE_BYTES;
}

static pf__amx_scratch pf__amx_scratch_at(void *at, size_t rows, size_t k) {
    size_t padded = pf__amx_groups(rows) * PF__AMX_ROWS, nb = k / PF__Q8_BLOCK;
    unsigned char *p = (unsigned char *)(((uintptr_t)at + 63) & ~(uintptr_t)63);
    pf__amx_scratch s;
    s.dots = (int32_t *)p, p += 2 * PF__AMX_TILE_BYTES;
    s.dx = (float *)p, p += padded * nb * sizeof(float);
    s.sx = (int32_t *)p, p += padded * nb * sizeof(int32_t);
    s.dw = (float *)p, p += nb * 16 * sizeof(float);
    s.x = (int8_t *)p, p += padded * k;
    s.values = p;
    return s;
}

/* x's blocks for tile 1, by group of 16 rows: group g's block b is 8 rows of 64 bytes, row i
   holding bytes 4i..4i + 3 of the block of each of the 16 rows; rows past `rows` are zeros. */
static void pf__amx_pack_x(const pf__amx_scratch *s, const int8_t *qx, const float *dx, const int32_t *sx,
                           size_t rows, size_t nb) {
    size_t k = nb * PF__Q8_BLOCK;
    for (size_t g = 0; g < pf__amx_groups(rows); g++)
        for (size_t b = 0; b < nb; b++) {
            size_t at = g * nb + b;
            int8_t *tile = s->x + at * PF__AMX_ROWS * PF__Q8_BLOCK;
            for (size_t n = 0; n < PF__AMX_ROWS; n++) {
                size_t r = g * PF__AMX_ROWS + n;
                for (size_t i = 0; i < PF__Q8_BLOCK / 4; i++) {
                    if (r < rows) memcpy(tile + i * 64 + n * 4, qx + r * k + b * PF__Q8_BLOCK + i * 4, 4);
                    else memset(tile + i * 64 + n * 4, 0, 4);
                }
                s->dx[at * PF__AMX_ROWS + n] = r < rows ? dx[r * nb + b] : 0.0f;
                s->sx[at * PF__AMX_ROWS + n] = r < rows ? sx[r * nb + b] : 0;
            }
        }
}

/* Weight rows o..o + 15's block scales into s->dw, and (Q4) their values as bytes into s->values. */
PF__AMX_TARGET static void pf__amx_prepare_weights(const pf__amx_scratch *s, const unsigned char *w, size_t o,
                                                   size_t nb, const int q4) {
    size_t bytes = q4 ? PF__Q4_BYTES : PF__Q8_BYTES, row_bytes = nb * bytes;
    PF__ROW_OFFSETS(at, 16, o, o + 16, row_bytes);
    __m512i offsets = _mm512_loadu_si512(at);
    for (size_t b = 0; b < nb; b++) _mm512_storeu_ps(s->dw + b * 16, pf__block_scales_avx512(w + b * bytes, offsets));
    if (q4)
        for (size_t b = 0; b < nb; b++)
            for (size_t j = 0; j < 16; j++)
                _mm256_storeu_si256((__m256i *)(s->values + (b * 16 + j) * PF__Q8_BLOCK),
                                    pf__q4_load(w + at[j] + b * bytes + 2));
}

/* Weight rows o..o + 15 against rows g * 16.. of x: the acc[j] lanes are x's rows, for weight row j. */
PF__AMX_TARGET static PF__INLINE void pf__amx_tile(__m512 acc[16], const pf__amx_scratch *s, const unsigned char *w,
                                                   size_t o, size_t g, size_t nb, const int q4) {
    size_t row_bytes = nb * (q4 ? PF__Q4_BYTES : PF__Q8_BYTES);
    PF__UNROLL16 for (int j = 0; j < 16; j++) acc[j] = _mm512_setzero_ps();
    for (size_t b = 0; b < nb; b++) {
        size_t at = g * nb + b;
        if (q4) _tile_loadd(0, s->values + b * 16 * PF__Q8_BLOCK, PF__Q8_BLOCK);
        else _tile_loadd(0, w + o * row_bytes + b * PF__Q8_BYTES + 2, row_bytes);
        _tile_loadd(1, s->x + at * PF__AMX_ROWS * PF__Q8_BLOCK, 64);
        int32_t *dots = s->dots + (b & 1) * (PF__AMX_TILE_BYTES / sizeof(int32_t));
        if (b & 1) {
            _tile_zero(3);
            if (q4) _tile_dpbusd(3, 0, 1);
            else _tile_dpbssd(3, 0, 1);
            _tile_stored(3, dots, 64);
        } else {
            _tile_zero(2);
            if (q4) _tile_dpbusd(2, 0, 1);
            else _tile_dpbssd(2, 0, 1);
            _tile_stored(2, dots, 64);
        }
        __m512 xd = _mm512_loadu_ps(s->dx + at * PF__AMX_ROWS);
        __m512i xs = _mm512_slli_epi32(_mm512_loadu_si512(s->sx + at * PF__AMX_ROWS), 3); /* Q4's 8 sum x */
        PF__UNROLL16 for (int j = 0; j < 16; j++) {
            __m512i d = _mm512_loadu_si512(dots + j * 16);
            if (q4) d = _mm512_sub_epi32(d, xs);
            acc[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), _mm512_mul_ps(xd, _mm512_set1_ps(s->dw[b * 16 + j])), acc[j]);
        }
    }
}

PF__AMX_TARGET static PF__INLINE void pf__quantized_rows_amx(float *out, size_t ld, const int8_t *qx, const float *dx,
                                                             const int32_t *sx, size_t rows, const unsigned char *w,
                                                             size_t nb, size_t n_out, const float *bias, void *scratch,
                                                             const int q4) {
    pf__amx_scratch s = pf__amx_scratch_at(scratch, rows, nb * PF__Q8_BLOCK);
    pf__amx_pack_x(&s, qx, dx, sx, rows, nb);
    pf__amx_configure();
    for (size_t o = 0; o < n_out; o += 16) {
        pf__amx_prepare_weights(&s, w, o, nb, q4);
        for (size_t g = 0; g < pf__amx_groups(rows); g++) {
            __m512 acc[16];
            float sums[16][PF__AMX_ROWS];
            pf__amx_tile(acc, &s, w, o, g, nb, q4);
            PF__UNROLL16 for (int j = 0; j < 16; j++) _mm512_storeu_ps(sums[j], acc[j]);
            for (size_t n = 0; n < PF__AMX_ROWS && g * PF__AMX_ROWS + n < rows; n++)
                for (size_t j = 0; j < 16; j++) { /* the bias here, not in a pass of its own over out */
                    float *y = out + (g * PF__AMX_ROWS + n) * ld + o + j;
                    *y = bias ? sums[j][n] + bias[o + j] : sums[j][n];
                }
        }
    }
    _tile_release();
}

/* out[rows][n_out] (rows ld apart) plus bias for Q8 or Q4 weights on AMX, n_out a multiple of 16;
   scratch: pf__amx_bytes. */
PF__AMX_TARGET static void pf__q8_tiles_amx(float *out, size_t ld, const int8_t *qx, const float *dx, const int32_t *sx,
                                            size_t rows, const unsigned char *w, size_t nb, size_t n_out,
                                            const float *bias, void *scratch) {
    pf__quantized_rows_amx(out, ld, qx, dx, sx, rows, w, nb, n_out, bias, scratch, 0);
}

PF__AMX_TARGET static void pf__q4_tiles_amx(float *out, size_t ld, const int8_t *qx, const float *dx, const int32_t *sx,
                                            size_t rows, const unsigned char *w, size_t nb, size_t n_out,
                                            const float *bias, void *scratch) {
    pf__quantized_rows_amx(out, ld, qx, dx, sx, rows, w, nb, n_out, bias, scratch, 1);
}

/* AMX-BF16, for pf_parallel_options.bf16_products: one tdpbf16ps multiplies 16 weight rows by 32
   inputs (tile A: the weights' bf16 read in place, a row's 32 inputs being 64 bytes) with 16 rows
   of x rounded to bf16 (tile B, in the instruction's layout: 16 rows of [16 rows of x][2 inputs])
   and adds the sums of the 32 exact products to 16 x 16 fp32 accumulators (tile C: [weight
   row][row of x]). Each accumulator's value depends only on its weight row and its row of x,
   never on the tile's other rows or columns, so a row alone (decode) gives the bits it gives in a
   batch. Tiles 0-1 hold weight rows, 2-3 rows of x, 4-7 the sums of each pairing. */
#define PF__AMX_BF16_TARGET __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl,avx512bf16")))
#define PF__BF16_PANEL_BYTES (1u << 20) /* x's tile copy one pass over the weights keeps in L2 */

PF__AMX_BF16_TARGET static void pf__amx_bf16_configure(size_t columns) {
    pf__amx_config c;
    memset(&c, 0, sizeof c);
    c.palette = 1;
    for (int t = 0; t < 8; t++) c.rows[t] = 16, c.bytes_per_row[t] = 64;
    /* rows of x as columns: fewer than 16 (decode's one) need only as many */
    for (int t = 2; t < 8; t++) c.bytes_per_row[t] = (uint16_t)(columns * sizeof(float));
    pf__amx_load_config(&c);
}

/* r[i] becomes column i of the 16 x 16 matrix of 32-bit values whose rows r held. */
PF__AMX_BF16_TARGET static PF__INLINE void pf__transpose16(__m512 r[16]) {
    __m512 t[16];
    for (int i = 0; i < 16; i += 2) t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]), t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    for (int i = 0; i < 16; i += 4)
        for (int h = 0; h < 2; h++) {
            __m512d a = _mm512_castps_pd(t[i + h]), b = _mm512_castps_pd(t[i + h + 2]);
            r[i + 2 * h] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
            r[i + 2 * h + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
        }
    for (int i = 0; i < 8; i++) {
        int a = i / 4 * 8 + i % 4;
        t[a] = _mm512_shuffle_f32x4(r[a], r[a + 4], 0x88), t[a + 4] = _mm512_shuffle_f32x4(r[a], r[a + 4], 0xdd);
    }
    for (int i = 0; i < 8; i++) r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88), r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
}

/* Scratch of pf__bf16_tiles_amx: x's tiles, then a zero-padded copy of the last n_out % 16 weight
   rows, 64-byte aligned. */
static size_t pf__bf16_tiles_bytes(size_t rows, size_t k) { return 64 + (pf__amx_groups(rows) + 1) * 16 * k * 2; }

/* x [rows][k] rounded to bf16 (to nearest even; vcvtne2ps2bf16 takes values under bf16's normal
   range as zeros) into tile B's layout: group g's 32 inputs from i are 16 rows of 64 bytes, row p
   holding inputs i + 2p and i + 2p + 1 of each of the group's 16 rows of x; rows past `rows` zero.
   One row of x (decode) is its tile's one column, 4 bytes a row: x's values in order, as they are. */
PF__AMX_BF16_TARGET static void pf__bf16_pack_x(uint16_t *tiles, const float *x, size_t rows, size_t k) {
    if (rows == 1) {
        for (size_t i = 0; i < k; i += 32)
            _mm512_storeu_ps(tiles + i, (__m512)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + i + 16), _mm512_loadu_ps(x + i)));
        return;
    }
    for (size_t g = 0; g < pf__amx_groups(rows); g++)
        for (size_t i = 0; i < k; i += 32) {
            __m512 r[16];
            for (size_t n = 0; n < 16; n++) {
                const float *v = x + (g * 16 + n) * k + i;
                r[n] = g * 16 + n < rows ? (__m512)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(v + 16), _mm512_loadu_ps(v))
                                         : _mm512_setzero_ps();
            }
            pf__transpose16(r);
            uint16_t *tile = tiles + (g * k + i) * 16;
            for (int p = 0; p < 16; p++) _mm512_storeu_ps(tile + p * 32, r[p]);
        }
}

/* A sums tile (stored [weight row][row of x], 16 floats a row; one float a row where x has one
   row, which is then out's row already) into out's rows g * 16.. (those under `rows`) at outputs
   o..o + count - 1, plus their bias. */
PF__AMX_BF16_TARGET static void pf__bf16_store_sums(float *out, size_t ld, const float *sums, size_t rows, size_t g,
                                                    size_t o, size_t count, const float *bias) {
    __mmask16 mask = pf__lanes16(count);
    __m512 b = bias ? _mm512_maskz_loadu_ps(mask, bias + o) : _mm512_setzero_ps();
    if (rows == 1) {
        _mm512_mask_storeu_ps(out + o, mask, _mm512_add_ps(_mm512_loadu_ps(sums), b));
        return;
    }
    __m512 r[16];
    for (int j = 0; j < 16; j++) r[j] = _mm512_loadu_ps(sums + j * 16);
    pf__transpose16(r);
    for (size_t n = 0; n < 16 && g * 16 + n < rows; n++)
        _mm512_mask_storeu_ps(out + (g * 16 + n) * ld + o, mask, _mm512_add_ps(r[n], b));
}

/* Outputs o..o + count - 1 (weight rows at a0, count at most 16) and, with a1, o + 16..o + 31
   (at a1), each weight row `stride` bytes apart, for the groups of 16 rows of x g0..g1 - 1. */
PF__AMX_BF16_TARGET static void pf__bf16_tiles_pass(float *out, size_t ld, const uint16_t *tiles, size_t rows, size_t g0,
                                                    size_t g1, const uint16_t *a0, const uint16_t *a1, size_t stride,
                                                    size_t k, size_t o, size_t count, const float *bias,
                                                    const uint16_t *next) {
    float sums[256];
    /* one row of x: its tile and its sums a float a row (pf__bf16_pack_x, pf__bf16_store_sums) */
    size_t sums_stride = rows == 1 ? sizeof(float) : 64, x_step = rows == 1 ? 1 : 16, x_stride = rows == 1 ? 4 : 64;
    /* The next pass's 32 weight rows into L2 while this one computes, a few lines a step, where
       two pairs of groups or more give the steps to spread them over; with one pair (decode),
       which streams the weights, the next rows' lines at this step's column into L1, as the
       vector kernels' decode tiles do. */
    size_t pairs = (g1 - g0 + 1) / 2, per_step = next && pairs >= 2 ? (32 + pairs - 1) / pairs : 0;
    size_t ahead_row = 0, ahead_at = 0;
    for (size_t g = g0; g < g1; g += 2) {
        int two = g + 1 < g1;
        const uint16_t *b0 = tiles + g * k * x_step, *b1 = b0 + k * x_step;
        _tile_zero(4);
        _tile_zero(5);
        _tile_zero(6);
        _tile_zero(7);
        for (size_t i = 0; i < k; i += 32) {
            if (next && pairs == 1)
                for (size_t r = 0; r < 32; r++) _mm_prefetch((const char *)(next + r * k + i), _MM_HINT_T0);
            for (size_t p = 0; p < per_step && ahead_row < 32; p++) {
                _mm_prefetch((const char *)(next + ahead_row * k + ahead_at), _MM_HINT_T1);
                if ((ahead_at += 32) == k) ahead_at = 0, ahead_row++;
            }
            _tile_loadd(0, a0 + i, stride);
            _tile_loadd(2, b0 + i * x_step, x_stride);
            _tile_dpbf16ps(4, 0, 2);
            if (two) {
                _tile_loadd(3, b1 + i * x_step, x_stride);
                _tile_dpbf16ps(6, 0, 3);
            }
            if (a1) {
                _tile_loadd(1, a1 + i, stride);
                _tile_dpbf16ps(5, 1, 2);
                if (two) _tile_dpbf16ps(7, 1, 3);
            }
        }
        /* the sums through memory: the tile registers cannot be read otherwise */
        _tile_stored(4, sums, sums_stride);
        pf__bf16_store_sums(out, ld, sums, rows, g, o, count, bias);
        if (a1) {
            _tile_stored(5, sums, sums_stride);
            pf__bf16_store_sums(out, ld, sums, rows, g, o + 16, 16, bias);
        }
        if (two) {
            _tile_stored(6, sums, sums_stride);
            pf__bf16_store_sums(out, ld, sums, rows, g + 1, o, count, bias);
        }
        if (two && a1) {
            _tile_stored(7, sums, sums_stride);
            pf__bf16_store_sums(out, ld, sums, rows, g + 1, o + 16, 16, bias);
        }
    }
}

/* out[rows][n_out] (rows ld apart) = x[rows][k] (rounded to bf16) times bf16 weights w[n_out][k]
   transposed, plus bias, on AMX-BF16; k a multiple of 32; scratch: pf__bf16_tiles_bytes. Rows of
   x go in panels that stay in L2 while 32 weight rows at a time pass over them. */
PF__AMX_BF16_TARGET static void pf__bf16_tiles_amx(float *out, size_t ld, const float *x, size_t rows, const void *w,
                                                   size_t k, size_t n_out, const float *bias, void *scratch) {
    uint16_t *tiles = (uint16_t *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
    uint16_t *tail = tiles + pf__amx_groups(rows) * 16 * k; /* the last weight rows, padded to 16 */
    const uint16_t *W = (const uint16_t *)w;
    size_t groups = pf__amx_groups(rows), whole = n_out / 16 * 16, stride = k * sizeof(uint16_t);
    size_t panel = PF__BF16_PANEL_BYTES / (16 * stride) / 2 * 2; /* groups a panel, even */
    if (panel < 2) panel = 2;
    pf__bf16_pack_x(tiles, x, rows, k);
    if (whole < n_out) {
        memcpy(tail, W + whole * k, (n_out - whole) * stride);
        memset(tail + (n_out - whole) * k, 0, (16 - (n_out - whole)) * stride);
    }
    pf__amx_bf16_configure(rows < 16 ? rows : 16);
    for (size_t g0 = 0; g0 < groups; g0 += panel) {
        size_t g1 = g0 + panel < groups ? g0 + panel : groups, o = 0;
        for (; o + 32 <= whole; o += 32)
            pf__bf16_tiles_pass(out, ld, tiles, rows, g0, g1, W + o * k, W + (o + 16) * k, stride, k, o, 16, bias,
                                o + 64 <= whole ? W + (o + 32) * k : NULL);
        if (o < whole) pf__bf16_tiles_pass(out, ld, tiles, rows, g0, g1, W + o * k, NULL, stride, k, o, 16, bias, NULL);
        if (whole < n_out)
            pf__bf16_tiles_pass(out, ld, tiles, rows, g0, g1, tail, NULL, stride, k, whole, n_out - whole, bias, NULL);
    }
    _tile_release();
}

/* Whether this process may use AMX: the processor has AMX-TILE, and Linux grants the tile data
   state (it is off until a process asks, as the kernel's ABI says; asking again is harmless). */
static int pf__amx_permitted(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & (1u << 24))) return 0;
    long code = 0x1023 /* ARCH_REQ_XCOMP_PERM */, feature = 18 /* XFEATURE_XTILEDATA */, result;
    /* the system call itself: libc declares syscall() only under _GNU_SOURCE or _DEFAULT_SOURCE */
    __asm__ volatile("syscall" : "=a"(result) : "a"((long)SYS_arch_prctl), "D"(code), "S"(feature) : "rcx", "r11", "memory");
    return result == 0;
}
#endif

/* pf__quantize_x_portable in 16 lanes, every step as there: the maximum of |v| (vmaxps returns its
   second operand where the first is NaN, so NaN is passed over as the scalar comparison does), the
   same scalar d and 1 / d, and pf__round_to_int8 lane by lane (truncate, then the rest against
   +-0.5; NaN 0, values beyond +-127.5 saturated). */
PF__AVX512_TARGET static void pf__quantize_x_avx512(int8_t *qx, float *dx, int32_t *sx, const float *x, size_t blocks) {
    for (size_t b = 0; b < blocks; b++) {
        const float *v = x + b * PF__Q8_BLOCK;
        __m512 low = _mm512_loadu_ps(v), high = _mm512_loadu_ps(v + 16);
        __m512 largest = _mm512_max_ps(_mm512_abs_ps(low), _mm512_setzero_ps());
        largest = _mm512_max_ps(_mm512_abs_ps(high), largest);
        float d = _mm512_reduce_max_ps(largest) / 127.0f, inverse = d > 0 ? 1.0f / d : 0.0f;
        __m512i sum = _mm512_setzero_si512();
        for (int half = 0; half < 2; half++) {
            __m512 y = _mm512_mul_ps(half ? high : low, _mm512_set1_ps(inverse));
            __m512i t = _mm512_cvttps_epi32(y);
            __m512 rest = _mm512_sub_ps(y, _mm512_cvtepi32_ps(t));
            t = _mm512_mask_add_epi32(t, _mm512_cmp_ps_mask(rest, _mm512_set1_ps(0.5f), _CMP_GE_OQ), t, _mm512_set1_epi32(1));
            t = _mm512_mask_sub_epi32(t, _mm512_cmp_ps_mask(rest, _mm512_set1_ps(-0.5f), _CMP_LE_OQ), t, _mm512_set1_epi32(1));
            t = _mm512_mask_mov_epi32(t, _mm512_cmp_ps_mask(y, _mm512_set1_ps(-127.5f), _CMP_NGT_UQ), _mm512_set1_epi32(-127));
            t = _mm512_mask_mov_epi32(t, _mm512_cmp_ps_mask(y, y, _CMP_UNORD_Q), _mm512_setzero_si512());
            t = _mm512_mask_mov_epi32(t, _mm512_cmp_ps_mask(y, _mm512_set1_ps(127.5f), _CMP_GE_OQ), _mm512_set1_epi32(127));
            _mm_storeu_si128((__m128i *)(qx + b * PF__Q8_BLOCK + half * 16), _mm512_cvtepi32_epi8(t));
            sum = _mm512_add_epi32(sum, t);
        }
        dx[b] = d;
        sx[b] = _mm512_reduce_add_epi32(sum);
    }
}
#endif

static void pf__scores(float *out, size_t ld, const float *const *q, int nq, const float *keys, size_t stride,
                       size_t count, size_t n) {
    for (int i = 0; i < nq; i++)
        for (size_t j = 0; j < count; j++) out[(size_t)i * ld + j] = pf__dot(q[i], keys + j * stride, n);
}

static void pf__weighted_sum(float *out, const float *w, const float *values, size_t stride, size_t count, size_t n) {
    memset(out, 0, n * sizeof(float));
    for (size_t j = 0; j < count; j++)
        for (size_t i = 0; i < n; i++) out[i] += w[j] * values[j * stride + i];
}

/* The weighted sums of nq queries over the same `count` value rows: query i's weights at
   w + i * ldw (zeros where it sees no key), its sums at out + i * ldo. A zero weight adds an exact
   zero, so each query's sums have the bits of a weighted_sum over the keys it sees. */
static void pf__weighted_sums(float *out, size_t ldo, const float *w, size_t ldw, int nq, const float *values,
                              size_t stride, size_t count, size_t n) {
    for (int i = 0; i < nq; i++) pf__weighted_sum(out + (size_t)i * ldo, w + (size_t)i * ldw, values, stride, count, n);
}

/* Decode's attention: one query for each of `heads` heads (q: [heads][n]) against `count` cache rows
   of `row` values each, stored as dt (fp32, fp16, bf16), walked row by row so that every head's
   slice of a row is read while the row streams in (head by head, a head's slices sit a row apart:
   no prefetcher follows them). Head h reads its kv head's slice at kv[h]. Scores:
   out[h * ld + j] = q_h . key_j; sums: out[h * n + i] = sum_j w[h * ld + j] value_j[i], summed in
   each output's lane in row order from 0, as pf__weighted_sum's. */
typedef struct pf__head_slices {
    int heads;
    const size_t *kv; /* [heads]: offset of each head's slice in a row */
} pf__head_slices;

static void pf__row_scores(float *out, size_t ld, const float *q, pf__head_slices hs, const void *keys, int dt,
                           size_t row, size_t count, size_t n) {
    for (size_t j = 0; j < count; j++)
        for (int h = 0; h < hs.heads; h++) {
            double sum = 0;
            for (size_t i = 0; i < n; i++) sum += (double)q[(size_t)h * n + i] * pf__weight_value(keys, j * row + hs.kv[h] + i, dt);
            out[(size_t)h * ld + j] = (float)sum;
        }
}

static void pf__row_weighted_sums(float *out, const float *w, size_t ld, pf__head_slices hs, const void *values, int dt,
                                  size_t row, size_t count, size_t n) {
    memset(out, 0, (size_t)hs.heads * n * sizeof(float));
    for (size_t j = 0; j < count; j++)
        for (int h = 0; h < hs.heads; h++)
            for (size_t i = 0; i < n; i++)
                out[(size_t)h * n + i] += w[(size_t)h * ld + j] * pf__weight_value(values, j * row + hs.kv[h] + i, dt);
}

#ifdef PF__AVX2
/* The four sums of acc[0..3], each as ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)). */
PF__AVX2_TARGET static PF__INLINE __m128 pf__sum4_avx2(const __m256 *acc) {
    __m256 pairs = _mm256_hadd_ps(_mm256_hadd_ps(acc[0], acc[1]), _mm256_hadd_ps(acc[2], acc[3]));
    return _mm_add_ps(_mm256_castps256_ps128(pairs), _mm256_extractf128_ps(pairs, 1));
}

/* One query: four keys at a time, sharing each load of q. Several: each key's load serves every
   query. Either way a score is summed in the same lanes and order. */
PF__AVX2_TARGET static void pf__scores_avx2(float *out, size_t ld, const float *const *q, int nq, const float *keys,
                                            size_t stride, size_t count, size_t n) {
    size_t full = n / 8 * 8;
    __m256i tail = pf__lanes_below(n - full);
    float sums[4];
    if (nq == 1) {
        for (size_t j = 0; j < count; j += 4) {
            const float *k[4];
            __m256 acc[4];
            int m = count - j < 4 ? (int)(count - j) : 4;
            PF__UNROLL for (int t = 0; t < 4; t++) {
                k[t] = keys + (j + (size_t)(t < m ? t : 0)) * stride; /* past the end: key j again, result unused */
                acc[t] = _mm256_setzero_ps();
            }
            for (size_t i = 0; i < full; i += 8) {
                __m256 qv = _mm256_loadu_ps(q[0] + i);
                PF__UNROLL for (int t = 0; t < 4; t++) acc[t] = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k[t] + i), acc[t]);
            }
            if (full < n) {
                __m256 qv = _mm256_maskload_ps(q[0] + full, tail);
                PF__UNROLL for (int t = 0; t < 4; t++) acc[t] = _mm256_fmadd_ps(qv, _mm256_maskload_ps(k[t] + full, tail), acc[t]);
            }
            _mm_storeu_ps(sums, pf__sum4_avx2(acc));
            for (int t = 0; t < m; t++) out[j + (size_t)t] = sums[t];
        }
        return;
    }
    const float *qs[4];
    for (int i = 0; i < 4; i++) qs[i] = q[i < nq ? i : 0]; /* past nq: query 0 again, result unused */
    for (size_t j = 0; j < count; j++) {
        const float *k = keys + j * stride;
        __m256 acc[4];
        PF__UNROLL for (int i = 0; i < 4; i++) acc[i] = _mm256_setzero_ps();
        for (size_t x = 0; x < full; x += 8) {
            __m256 kv = _mm256_loadu_ps(k + x);
            PF__UNROLL for (int i = 0; i < 4; i++) acc[i] = _mm256_fmadd_ps(_mm256_loadu_ps(qs[i] + x), kv, acc[i]);
        }
        if (full < n) {
            __m256 kv = _mm256_maskload_ps(k + full, tail);
            PF__UNROLL for (int i = 0; i < 4; i++) acc[i] = _mm256_fmadd_ps(_mm256_maskload_ps(qs[i] + full, tail), kv, acc[i]);
        }
        _mm_storeu_ps(sums, pf__sum4_avx2(acc));
        for (int i = 0; i < nq; i++) out[(size_t)i * ld + j] = sums[i];
    }
}

/* 64 outputs at a time in eight registers, over all the rows. */
PF__AVX2_TARGET static void pf__weighted_sum_avx2(float *out, const float *w, const float *values, size_t stride,
                                                  size_t count, size_t n) {
    for (size_t i0 = 0; i0 < n; i0 += 64) {
        size_t width = n - i0 < 64 ? n - i0 : 64;
        __m256i mask[8];
        __m256 acc[8];
        PF__UNROLL for (int b = 0; b < 8; b++) {
            mask[b] = pf__lanes_below(width > (size_t)b * 8 ? width - (size_t)b * 8 : 0);
            acc[b] = _mm256_setzero_ps();
        }
        if (width == 64) {
            for (size_t j = 0; j < count; j++) {
                __m256 p = _mm256_set1_ps(w[j]);
                const float *v = values + j * stride + i0;
                PF__UNROLL for (int b = 0; b < 8; b++) acc[b] = _mm256_fmadd_ps(p, _mm256_loadu_ps(v + 8 * b), acc[b]);
            }
        } else {
            for (size_t j = 0; j < count; j++) {
                __m256 p = _mm256_set1_ps(w[j]);
                const float *v = values + j * stride + i0;
                PF__UNROLL for (int b = 0; b < 8; b++) acc[b] = _mm256_fmadd_ps(p, _mm256_maskload_ps(v + 8 * b, mask[b]), acc[b]);
            }
        }
        PF__UNROLL for (int b = 0; b < 8; b++) _mm256_maskstore_ps(out + i0 + 8 * b, mask[b], acc[b]);
    }
}

PF__AVX2_TARGET static void pf__weighted_sums_avx2(float *out, size_t ldo, const float *w, size_t ldw, int nq,
                                                   const float *values, size_t stride, size_t count, size_t n) {
    for (int i = 0; i < nq; i++)
        pf__weighted_sum_avx2(out + (size_t)i * ldo, w + (size_t)i * ldw, values, stride, count, n);
}

/* Decode's attention walks the cache row by row: fetch the row 8 ahead meanwhile (its lines one
   after another; measured 20-40 % faster than leaving it to the hardware, BENCHMARKS.md). */
static PF__INLINE void pf__prefetch_row_ahead(const void *rows, size_t j, size_t count, size_t row_bytes) {
    if (j + 8 >= count) return;
    const char *ahead = (const char *)rows + (j + 8) * row_bytes;
    for (size_t b = 0; b < row_bytes; b += 64) _mm_prefetch(ahead + b, _MM_HINT_T0);
}

/* pf__row_scores and pf__row_weighted_sums in 8 lanes; dt a constant where inlined. */
PF__AVX2_TARGET static PF__INLINE void pf__row_scores_avx2_dt(float *out, size_t ld, const float *q, pf__head_slices hs,
                                                              const void *keys, const int dt, size_t row, size_t count,
                                                              size_t n) {
    for (size_t j = 0; j < count; j++) {
        pf__prefetch_row_ahead(keys, j, count, row * pf__dtype_size((pf__dtype)dt));
        for (int h = 0; h < hs.heads; h++) {
            __m256 acc = _mm256_setzero_ps();
            for (size_t i = 0; i < n; i += 8) {
                size_t left = n - i < 8 ? n - i : 8;
                __m256 k = pf__load_weights_avx2(keys, j * row + hs.kv[h] + i, left, dt);
                __m256 qv = left == 8 ? _mm256_loadu_ps(q + (size_t)h * n + i)
                                      : _mm256_maskload_ps(q + (size_t)h * n + i, pf__lanes_below(left));
                acc = _mm256_fmadd_ps(qv, k, acc);
            }
            out[(size_t)h * ld + j] = pf__hsum_avx2(acc);
        }
    }
}

PF__AVX2_TARGET static PF__INLINE void pf__row_weighted_sums_avx2_dt(float *out, const float *w, size_t ld,
                                                                     pf__head_slices hs, const void *values, const int dt,
                                                                     size_t row, size_t count, size_t n) {
    memset(out, 0, (size_t)hs.heads * n * sizeof(float));
    for (size_t j = 0; j < count; j++) {
        pf__prefetch_row_ahead(values, j, count, row * pf__dtype_size((pf__dtype)dt));
        for (int h = 0; h < hs.heads; h++) {
            __m256 p = _mm256_set1_ps(w[(size_t)h * ld + j]);
            float *o = out + (size_t)h * n;
            for (size_t i = 0; i < n; i += 8) { /* the tail fused too, as pf__weighted_sum_avx2's */
                size_t left = n - i < 8 ? n - i : 8;
                __m256 v = pf__load_weights_avx2(values, j * row + hs.kv[h] + i, left, dt);
                if (left == 8) {
                    _mm256_storeu_ps(o + i, _mm256_fmadd_ps(p, v, _mm256_loadu_ps(o + i)));
                } else {
                    __m256i lanes = pf__lanes_below(left);
                    _mm256_maskstore_ps(o + i, lanes, _mm256_fmadd_ps(p, v, _mm256_maskload_ps(o + i, lanes)));
                }
            }
        }
    }
}

PF__AVX2_TARGET static void pf__row_scores_avx2(float *out, size_t ld, const float *q, pf__head_slices hs,
                                                const void *keys, int dt, size_t row, size_t count, size_t n) {
    if (dt == PF__DTYPE_F32) pf__row_scores_avx2_dt(out, ld, q, hs, keys, PF__DTYPE_F32, row, count, n);
    else if (dt == PF__DTYPE_F16) pf__row_scores_avx2_dt(out, ld, q, hs, keys, PF__DTYPE_F16, row, count, n);
    else pf__row_scores_avx2_dt(out, ld, q, hs, keys, PF__DTYPE_BF16, row, count, n);
}

PF__AVX2_TARGET static void pf__row_weighted_sums_avx2(float *out, const float *w, size_t ld, pf__head_slices hs,
                                                       const void *values, int dt, size_t row, size_t count, size_t n) {
    if (dt == PF__DTYPE_F32) pf__row_weighted_sums_avx2_dt(out, w, ld, hs, values, PF__DTYPE_F32, row, count, n);
    else if (dt == PF__DTYPE_F16) pf__row_weighted_sums_avx2_dt(out, w, ld, hs, values, PF__DTYPE_F16, row, count, n);
    else pf__row_weighted_sums_avx2_dt(out, w, ld, hs, values, PF__DTYPE_BF16, row, count, n);
}
#endif

static float pf__act(float v, pf__activation act);

/* out[i] = act(x[i]) (* mul[i], the gated MLP's up projection, when mul is given); out may be x. */
static void pf__activate_portable(float *out, const float *x, const float *mul, size_t count, pf__activation act) {
    for (size_t i = 0; i < count; i++) out[i] = pf__act(x[i], act) * (mul ? mul[i] : 1.0f);
}

static void pf__exp_shifted(float *p, size_t count, float shift) {
    for (size_t j = 0; j < count; j++) p[j] = expf(p[j] - shift);
}

#ifdef PF__AVX2
/* e^x in eight lanes: x = n ln 2 + r with |r| <= ln 2 / 2, e^r by its Taylor series to r^7
   (truncation below 1e-8 relative, under fp32's rounding), times 2^n built in the exponent bits.
   x is clamped to [-87, 88], where 2^n stays a normal float; NaN passes through. */
PF__AVX2_TARGET static PF__INLINE __m256 pf__exp_avx2(__m256 x) {
    x = _mm256_min_ps(_mm256_set1_ps(88.0f), _mm256_max_ps(_mm256_set1_ps(-87.0f), x));
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145751953125f), x); /* ln 2's high bits: n ln2_hi exact */
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.42860682030941723e-06f), r);
    __m256 p = _mm256_set1_ps(1.0f / 5040);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    __m256i two_n = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(two_n));
}

/* act(v) for the activations of the form v / (1 + e^-g(v)); the others through pf__act. */
PF__AVX2_TARGET static PF__INLINE __m256 pf__sigmoid_act_avx2(__m256 v, pf__activation act) {
    __m256 g = v; /* SiLU */
    if (act == PF__ACT_GELU_TANH) {
        __m256 cube = _mm256_mul_ps(_mm256_mul_ps(v, v), v);
        g = _mm256_mul_ps(_mm256_set1_ps(2.0f * 0.7978845608028654f),
                          _mm256_fmadd_ps(_mm256_set1_ps(0.044715f), cube, v));
    } else if (act == PF__ACT_QUICK_GELU) {
        g = _mm256_mul_ps(_mm256_set1_ps(1.702f), v);
    }
    __m256 e = pf__exp_avx2(_mm256_sub_ps(_mm256_setzero_ps(), g));
    return _mm256_div_ps(v, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

/* erfc(z) e^(z^2) for z >= 0 (erfcx) as a polynomial in t = 1 / (1 + z / 2), fitted to within 5e-9
   relative on 0 <= z <= 9.4 (where e^(-z^2) is still a normal float) by test/make_erfcx_poly.py;
   highest power first. */
static const float pf__erfcx_poly[12] = {1.786894724e-02f, -8.028046787e-02f, 7.852172852e-02f,  1.926684827e-01f,
                                         -5.175377727e-01f, 3.797649741e-01f, -1.098719910e-01f, 2.397589833e-01f,
                                         2.332059890e-01f,  2.839454412e-01f, 2.819507718e-01f,  4.887921932e-06f};

/* GELU with erf, v Phi(v), Phi = 1 - erfc(z) / 2 (v >= 0) or erfc(z) / 2 (v < 0) with z = |v| / sqrt 2
   and erfc(z) = e^(-z^2) erfcx(z), z^2 split exactly into hi + lo by an FMA so that e^(-z^2) keeps
   its relative accuracy: within 3 units of 2^-24 times (z^2 + 1) of the exact value (each lane of
   a wider vector does the same operations). Past z^2 = 87 erfc is 0. */
PF__AVX2_TARGET static PF__INLINE __m256 pf__gelu_erf_avx2(__m256 v) {
    __m256 z = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), _mm256_mul_ps(v, _mm256_set1_ps(0.7071067811865476f)));
    __m256 t = _mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_fmadd_ps(z, _mm256_set1_ps(0.5f), _mm256_set1_ps(1.0f)));
    __m256 q = _mm256_set1_ps(pf__erfcx_poly[0]);
    for (int i = 1; i < 12; i++) q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(pf__erfcx_poly[i]));
    __m256 hi = _mm256_mul_ps(z, z), lo = _mm256_fmsub_ps(z, z, hi);
    __m256 e = _mm256_mul_ps(pf__exp_avx2(_mm256_sub_ps(_mm256_setzero_ps(), hi)), _mm256_sub_ps(_mm256_set1_ps(1.0f), lo));
    __m256 erfc = _mm256_andnot_ps(_mm256_cmp_ps(hi, _mm256_set1_ps(87.0f), _CMP_GT_OQ), _mm256_mul_ps(e, q));
    __m256 half = _mm256_mul_ps(_mm256_set1_ps(0.5f), erfc);
    __m256 phi = _mm256_blendv_ps(half, _mm256_sub_ps(_mm256_set1_ps(1.0f), half),
                                  _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_GE_OQ));
    return _mm256_mul_ps(v, phi);
}

/* The activations the vector kernels compute in lanes (the sigmoid forms and GELU with erf); the
   others go through pf__activate_portable on every kernel set. */
static int pf__act_in_lanes(pf__activation act) {
    return act == PF__ACT_GELU_TANH || act == PF__ACT_SILU || act == PF__ACT_QUICK_GELU || act == PF__ACT_GELU_ERF;
}

/* out[i] = act(x[i]) (* mul[i]): every element through the same lanes' arithmetic, the last few
   by masked loads, so a value never depends on where it sits in the array (ranks split the MLP's
   columns anywhere). */
PF__AVX2_TARGET static void pf__activate_avx2(float *out, const float *x, const float *mul, size_t count,
                                              pf__activation act) {
    if (!pf__act_in_lanes(act)) {
        pf__activate_portable(out, x, mul, count, act);
        return;
    }
    for (size_t i = 0; i < count; i += 8) {
        __m256i lanes = pf__lanes_below(count - i < 8 ? count - i : 8);
        __m256 v = _mm256_maskload_ps(x + i, lanes);
        __m256 y = act == PF__ACT_GELU_ERF ? pf__gelu_erf_avx2(v) : pf__sigmoid_act_avx2(v, act);
        if (mul) y = _mm256_mul_ps(y, _mm256_maskload_ps(mul + i, lanes));
        _mm256_maskstore_ps(out + i, lanes, y);
    }
}

/* p[j] = e^(p[j] - shift), softmax's numerators. */
PF__AVX2_TARGET static void pf__exp_shifted_avx2(float *p, size_t count, float shift) {
    for (size_t j = 0; j < count; j += 8) {
        __m256i lanes = pf__lanes_below(count - j < 8 ? count - j : 8);
        __m256 v = _mm256_sub_ps(_mm256_maskload_ps(p + j, lanes), _mm256_set1_ps(shift));
        _mm256_maskstore_ps(p + j, lanes, pf__exp_avx2(v));
    }
}
#endif

#ifdef PF__AVX512
/* pf__exp_avx2, pf__sigmoid_act_avx2 and the loops over them in 16 lanes: every operation the
   same, so every element gets the AVX2 kernels' bits, at twice the elements an instruction. */
PF__AVX512_TARGET static PF__INLINE __m512 pf__exp_avx512(__m512 x) {
    x = _mm512_min_ps(_mm512_set1_ps(88.0f), _mm512_max_ps(_mm512_set1_ps(-87.0f), x));
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.42860682030941723e-06f), r);
    __m512 p = _mm512_set1_ps(1.0f / 5040);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    __m512i two_n = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
    return _mm512_mul_ps(p, _mm512_castsi512_ps(two_n));
}

PF__AVX512_TARGET static PF__INLINE __m512 pf__sigmoid_act_avx512(__m512 v, pf__activation act) {
    __m512 g = v; /* SiLU */
    if (act == PF__ACT_GELU_TANH) {
        __m512 cube = _mm512_mul_ps(_mm512_mul_ps(v, v), v);
        g = _mm512_mul_ps(_mm512_set1_ps(2.0f * 0.7978845608028654f), _mm512_fmadd_ps(_mm512_set1_ps(0.044715f), cube, v));
    } else if (act == PF__ACT_QUICK_GELU) {
        g = _mm512_mul_ps(_mm512_set1_ps(1.702f), v);
    }
    __m512 e = pf__exp_avx512(_mm512_sub_ps(_mm512_setzero_ps(), g));
    return _mm512_div_ps(v, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
}

PF__AVX512_TARGET static PF__INLINE __m512 pf__gelu_erf_avx512(__m512 v) {
    __m512 z = _mm512_abs_ps(_mm512_mul_ps(v, _mm512_set1_ps(0.7071067811865476f)));
    __m512 t = _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_fmadd_ps(z, _mm512_set1_ps(0.5f), _mm512_set1_ps(1.0f)));
    __m512 q = _mm512_set1_ps(pf__erfcx_poly[0]);
    for (int i = 1; i < 12; i++) q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(pf__erfcx_poly[i]));
    __m512 hi = _mm512_mul_ps(z, z), lo = _mm512_fmsub_ps(z, z, hi);
    __m512 e = _mm512_mul_ps(pf__exp_avx512(_mm512_sub_ps(_mm512_setzero_ps(), hi)), _mm512_sub_ps(_mm512_set1_ps(1.0f), lo));
    __m512 erfc = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(hi, _mm512_set1_ps(87.0f), _CMP_NGT_UQ), _mm512_mul_ps(e, q));
    __m512 half = _mm512_mul_ps(_mm512_set1_ps(0.5f), erfc);
    __m512 phi = _mm512_mask_sub_ps(half, _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_GE_OQ), _mm512_set1_ps(1.0f), half);
    return _mm512_mul_ps(v, phi);
}

PF__AVX512_TARGET static void pf__activate_avx512(float *out, const float *x, const float *mul, size_t count,
                                                  pf__activation act) {
    if (!pf__act_in_lanes(act)) {
        pf__activate_portable(out, x, mul, count, act);
        return;
    }
    for (size_t i = 0; i < count; i += 16) {
        __mmask16 lanes = pf__lanes16(count - i);
        __m512 v = _mm512_maskz_loadu_ps(lanes, x + i);
        __m512 y = act == PF__ACT_GELU_ERF ? pf__gelu_erf_avx512(v) : pf__sigmoid_act_avx512(v, act);
        if (mul) y = _mm512_mul_ps(y, _mm512_maskz_loadu_ps(lanes, mul + i));
        _mm512_mask_storeu_ps(out + i, lanes, y);
    }
}

PF__AVX512_TARGET static void pf__exp_shifted_avx512(float *p, size_t count, float shift) {
    for (size_t j = 0; j < count; j += 16) {
        __mmask16 lanes = pf__lanes16(count - j);
        __m512 v = _mm512_sub_ps(_mm512_maskz_loadu_ps(lanes, p + j), _mm512_set1_ps(shift));
        _mm512_mask_storeu_ps(p + j, lanes, pf__exp_avx512(v));
    }
}
#endif

#ifdef PF__AVX512
/* Attention's loops in 16 lanes. Scores: up to 4 queries by 4 keys a step (8 loads for 16
   FMAs), each sum's 16 lanes folded to 8 and then summed as pf__sum4_avx2 sums. */
PF__AVX512_TARGET static void pf__scores_avx512(float *out, size_t ld, const float *const *q, int nq,
                                                const float *keys, size_t stride, size_t count, size_t n) {
    size_t full = n / 16 * 16;
    __mmask16 tail = (__mmask16)((1u << (n - full)) - 1);
    const float *qs[4];
    for (int i = 0; i < 4; i++) qs[i] = q[i < nq ? i : 0]; /* past nq: query 0 again, result unused */
    for (size_t j = 0; j < count; j += 4) {
        const float *k[4];
        __m512 acc[4][4];
        int m = count - j < 4 ? (int)(count - j) : 4;
        PF__UNROLL for (int t = 0; t < 4; t++) {
            k[t] = keys + (j + (size_t)(t < m ? t : 0)) * stride; /* past the end: key j again, result unused */
            PF__UNROLL for (int i = 0; i < 4; i++) acc[i][t] = _mm512_setzero_ps();
        }
        for (size_t x = 0; x <= full; x += 16) {
            __mmask16 lanes = x < full ? (__mmask16)0xffff : tail;
            if (!lanes) break;
            __m512 kv[4];
            PF__UNROLL for (int t = 0; t < 4; t++) kv[t] = _mm512_maskz_loadu_ps(lanes, k[t] + x);
            PF__UNROLL for (int i = 0; i < 4; i++) {
                if (i >= nq) break;
                __m512 qv = _mm512_maskz_loadu_ps(lanes, qs[i] + x);
                PF__UNROLL for (int t = 0; t < 4; t++) acc[i][t] = _mm512_fmadd_ps(qv, kv[t], acc[i][t]);
            }
        }
        for (int i = 0; i < nq; i++) {
            __m256 halves[4];
            float sums[4];
            PF__UNROLL for (int t = 0; t < 4; t++)
                halves[t] = _mm256_add_ps(_mm512_castps512_ps256(acc[i][t]),
                                          _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc[i][t]), 1)));
            _mm_storeu_ps(sums, pf__sum4_avx2(halves));
            for (int t = 0; t < m; t++) out[(size_t)i * ld + j + (size_t)t] = sums[t];
        }
    }
}

/* Up to PF__QUERY_BLOCK queries at once, 64 outputs at a time: each value row's load serves every
   query. Each output lane sums its products in row order from 0, as pf__weighted_sum's do. */
PF__AVX512_TARGET static void pf__weighted_sums_avx512(float *out, size_t ldo, const float *w, size_t ldw, int nq,
                                                       const float *values, size_t stride, size_t count, size_t n) {
    for (size_t i0 = 0; i0 < n; i0 += 64) {
        size_t width = n - i0 < 64 ? n - i0 : 64;
        __mmask16 mask[4];
        __m512 acc[PF__QUERY_BLOCK][4];
        PF__UNROLL for (int c = 0; c < 4; c++) {
            size_t left = width > (size_t)c * 16 ? width - (size_t)c * 16 : 0;
            mask[c] = pf__lanes16(left);
            PF__UNROLL for (int i = 0; i < PF__QUERY_BLOCK; i++) acc[i][c] = _mm512_setzero_ps();
        }
        for (size_t j = 0; j < count; j++) {
            const float *v = values + j * stride + i0;
            __m512 rows[4];
            PF__UNROLL for (int c = 0; c < 4; c++) rows[c] = _mm512_maskz_loadu_ps(mask[c], v + 16 * c);
            PF__UNROLL for (int i = 0; i < PF__QUERY_BLOCK; i++) {
                if (i >= nq) break;
                __m512 p = _mm512_set1_ps(w[(size_t)i * ldw + j]);
                PF__UNROLL for (int c = 0; c < 4; c++) acc[i][c] = _mm512_fmadd_ps(p, rows[c], acc[i][c]);
            }
        }
        for (int i = 0; i < nq; i++)
            PF__UNROLL for (int c = 0; c < 4; c++) _mm512_mask_storeu_ps(out + (size_t)i * ldo + i0 + 16 * c, mask[c], acc[i][c]);
    }
}

/* pf__row_scores and pf__row_weighted_sums in 16 lanes; dt a constant where inlined. */
PF__AVX512_TARGET static PF__INLINE void pf__row_scores_avx512_dt(float *out, size_t ld, const float *q, pf__head_slices hs,
                                                                  const void *keys, const int dt, size_t row, size_t count,
                                                                  size_t n) {
    size_t row_bytes = row * pf__dtype_size((pf__dtype)dt);
    for (size_t j = 0; j < count; j++) {
        pf__prefetch_row_ahead(keys, j, count, row_bytes);
        for (int h = 0; h < hs.heads; h++) {
            __m512 acc = _mm512_setzero_ps();
            for (size_t i = 0; i < n; i += 16) {
                __mmask16 lanes = pf__lanes16(n - i);
                __m512 k = pf__load_weights_avx512(keys, j * row + hs.kv[h] + i, lanes, dt);
                acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(lanes, q + (size_t)h * n + i), k, acc);
            }
            out[(size_t)h * ld + j] = _mm512_reduce_add_ps(acc);
        }
    }
}

PF__AVX512_TARGET static PF__INLINE void pf__row_weighted_sums_avx512_dt(float *out, const float *w, size_t ld,
                                                                         pf__head_slices hs, const void *values,
                                                                         const int dt, size_t row, size_t count,
                                                                         size_t n) {
    memset(out, 0, (size_t)hs.heads * n * sizeof(float));
    size_t row_bytes = row * pf__dtype_size((pf__dtype)dt);
    for (size_t j = 0; j < count; j++) {
        pf__prefetch_row_ahead(values, j, count, row_bytes);
        for (int h = 0; h < hs.heads; h++) {
            __m512 p = _mm512_set1_ps(w[(size_t)h * ld + j]);
            float *o = out + (size_t)h * n;
            for (size_t i = 0; i < n; i += 16) {
                __mmask16 lanes = pf__lanes16(n - i);
                __m512 v = pf__load_weights_avx512(values, j * row + hs.kv[h] + i, lanes, dt);
                _mm512_mask_storeu_ps(o + i, lanes, _mm512_fmadd_ps(p, v, _mm512_maskz_loadu_ps(lanes, o + i)));
            }
        }
    }
}

PF__AVX512_TARGET static void pf__row_scores_avx512(float *out, size_t ld, const float *q, pf__head_slices hs,
                                                    const void *keys, int dt, size_t row, size_t count, size_t n) {
    if (dt == PF__DTYPE_F32) pf__row_scores_avx512_dt(out, ld, q, hs, keys, PF__DTYPE_F32, row, count, n);
    else if (dt == PF__DTYPE_F16) pf__row_scores_avx512_dt(out, ld, q, hs, keys, PF__DTYPE_F16, row, count, n);
    else pf__row_scores_avx512_dt(out, ld, q, hs, keys, PF__DTYPE_BF16, row, count, n);
}

PF__AVX512_TARGET static void pf__row_weighted_sums_avx512(float *out, const float *w, size_t ld, pf__head_slices hs,
                                                           const void *values, int dt, size_t row, size_t count,
                                                           size_t n) {
    if (dt == PF__DTYPE_F32) pf__row_weighted_sums_avx512_dt(out, w, ld, hs, values, PF__DTYPE_F32, row, count, n);
    else if (dt == PF__DTYPE_F16) pf__row_weighted_sums_avx512_dt(out, w, ld, hs, values, PF__DTYPE_F16, row, count, n);
    else pf__row_weighted_sums_avx512_dt(out, w, ld, hs, values, PF__DTYPE_BF16, row, count, n);
}
#endif

/* The CPU backend's inner loops, for one instruction set (tables below by field name: a field a
   set leaves out is NULL, never another field's function). Attention is computed whole on one rank,
   so its sums need no care for rank counts: fp32 is enough there. */
typedef struct pf__cpu_kernels {
    const pf__tile_fn *const *tiles; /* [weight dtype][shape] */
    size_t tile_rows, tile_outs;     /* of the full tile, tiles[0] */
    size_t chunk;                    /* inputs summed in fp32 lanes before double (a divisor of PF__KBLOCK) */
    size_t row_outs; /* weight rows of the one-row tile, tiles[2] */
    void (*scores)(float *out, size_t ld, const float *const *q, int nq, const float *keys, size_t stride, size_t count,
                   size_t n);
    void (*weighted_sums)(float *out, size_t ldo, const float *w, size_t ldw, int nq, const float *values, size_t stride,
                          size_t count, size_t n);
    void (*row_scores)(float *out, size_t ld, const float *q, pf__head_slices hs, const void *keys, int dt, size_t row,
                       size_t count, size_t n);
    void (*row_weighted_sums)(float *out, const float *w, size_t ld, pf__head_slices hs, const void *values, int dt,
                              size_t row, size_t count, size_t n);
    void (*activate)(float *out, const float *x, const float *mul, size_t count, pf__activation act);
    void (*exp_shifted)(float *p, size_t count, float shift);
    pf__q8_rows_fn *q8_rows, *q8_row; /* many rows of x; one (decode) */
    pf__q8_rows_fn *q4_rows, *q4_row;
    pf__q8_tiles_fn *q8_tiles, *q4_tiles; /* AMX where the processor and the OS allow it; else NULL */
    pf__quantize_x_fn *quantize_x;
    void (*widen)(float *out, const void *w, int wt, size_t count); /* fp16/bf16 weights to fp32 */
    void (*store_sums)(float *out, const double *acc, const float *bias, size_t n);
    pf__bf16_tiles_fn *bf16_tiles; /* AMX-BF16 where the processor and the OS allow it; else NULL */
    double (*sum_shifted)(const float *x, size_t n, double shift, int squares); /* norms, softmax */
    void (*add_rows)(float *x, const float *y, const float *b, size_t n);
    void (*normalize)(float *out, const float *x, size_t n, double mean, float inv, const float *g, float g_offset,
                      const float *b);
    pf__blocks_rows_fn *blocks_rows; /* GGUF's block formats other than Q8_0 and Q4_0, int8 x */
    pf__blocks_f32_fn *blocks_f32;   /* every block format, fp32 x */
} pf__cpu_kernels;

static const pf__cpu_kernels pf__cpu_portable = {
    .tiles = pf__tiles_portable, .tile_rows = PF__TILE_ROWS, .tile_outs = PF__TILE_OUTS, .chunk = PF__CHUNK,
    .row_outs = PF__ROW_OUTS_PORTABLE, .scores = pf__scores, .weighted_sums = pf__weighted_sums,
    .row_scores = pf__row_scores, .row_weighted_sums = pf__row_weighted_sums, .activate = pf__activate_portable,
    .exp_shifted = pf__exp_shifted, .q8_rows = pf__q8_rows_portable, .q8_row = pf__q8_rows_portable,
    .q4_rows = pf__q4_rows_portable, .q4_row = pf__q4_rows_portable, .quantize_x = pf__quantize_x_portable,
    .widen = pf__widen_portable, .store_sums = pf__store_sums_portable, .sum_shifted = pf__sum_shifted_portable,
    .add_rows = pf__add_rows_portable, .normalize = pf__normalize_portable, .blocks_rows = pf__blocks_rows_portable,
    .blocks_f32 = pf__blocks_f32_portable};
#ifdef PF__AVX2
static const pf__cpu_kernels pf__cpu_avx2 = {
    .tiles = pf__tiles_avx2, .tile_rows = PF__TILE_ROWS, .tile_outs = PF__TILE_OUTS, .chunk = PF__CHUNK,
    .row_outs = PF__ROW_OUTS_AVX2, .scores = pf__scores_avx2, .weighted_sums = pf__weighted_sums_avx2,
    .row_scores = pf__row_scores_avx2, .row_weighted_sums = pf__row_weighted_sums_avx2,
    .activate = pf__activate_avx2, .exp_shifted = pf__exp_shifted_avx2, .q8_rows = pf__q8_panels_avx2,
    .q8_row = pf__q8_row_avx2, .q4_rows = pf__q4_panels_avx2, .q4_row = pf__q4_row_pairs_avx2,
    .quantize_x = pf__quantize_x_avx2, .widen = pf__widen_avx2, .store_sums = pf__store_sums_avx2,
    .sum_shifted = pf__sum_shifted_avx2, .add_rows = pf__add_rows_avx2, .normalize = pf__normalize_avx2,
    .blocks_rows = pf__blocks_rows_avx2, .blocks_f32 = pf__blocks_f32_avx2};
#endif
#ifdef PF__AVX512
/* Where 512-bit FMAs run at half rate (Zen 4), AVX-512VL's 32 ymm registers still hold a wider
   AVX2 tile: its lanes and sums, 4 rows by 6 weight rows, 5-13 % faster than 4x3 there. */
PF__AVX512_TARGET static PF__INLINE void pf__tile_ymm32(double *acc, size_t ld, const float *x, const void *w,
                                                        size_t k, size_t begin, size_t end, size_t first_end,
                                                        const int mr, const int nr, const int wt) {
    pf__tile_avx2(acc, ld, x, w, k, begin, end, first_end, mr, nr, wt);
}
PF__TILE_SHAPES(ymm32, PF__AVX512_TARGET, PF__TILE_ROWS_AVX512, PF__TILE_OUTS_AVX512, PF__ROW_OUTS_AVX2)
#endif

#ifdef PF_TESTING
/* Test hook: nonzero makes the CPU backend use its portable kernels even where AVX2 is present. */
int pf_testing_portable_cpu = 0;
/* Test hook: nonzero makes it use the AVX2 kernels even where AVX-512 is present. */
int pf_testing_avx2_cpu = 0;
#define PF__AVX2_ASKED pf_testing_avx2_cpu
/* Test hook: nonzero keeps the Q8/Q4 products off AMX where the processor has it. */
int pf_testing_no_amx_cpu = 0;
#define PF__NO_AMX_ASKED pf_testing_no_amx_cpu
/* Test hook (ARM64): nonzero makes it use NEON's kernels alone, without sdot or smmla. */
int pf_testing_neon_cpu = 0;
#define PF__NEON_ASKED pf_testing_neon_cpu
/* Test hook (ARM64): nonzero keeps the prompts' Q8/Q4 products off smmla (FEAT_I8MM). */
int pf_testing_no_i8mm_cpu = 0;
#define PF__NO_I8MM_ASKED pf_testing_no_i8mm_cpu
#else
#define PF__AVX2_ASKED 0
#define PF__NO_AMX_ASKED 0
#define PF__NEON_ASKED 0
#define PF__NO_I8MM_ASKED 0
#endif

#ifdef PF__AVX2
/* Whether this processor runs the AVX2 kernels. F16C (fp16 conversions) comes with every AVX2
   processor made, but is a flag of its own, which clang's __builtin_cpu_supports cannot name; the
   cpuid instruction costs microseconds in a virtual machine, so the answer is kept. */
static int pf__cpu_avx2_usable, pf__cpu_avx512_usable, pf__cpu_vnni_usable;
static int pf__cpu_wide_fma; /* AVX-512 with 512-bit FMA at full rate: the 16-lane tiles pay */
#ifdef PF__AVX512
/* The AVX2 set with what this processor's AVX-512 adds (tiles, VNNI), made by the probe. */
static pf__cpu_kernels pf__cpu_avx512;
#endif
static pthread_once_t pf__cpu_probe_once = PTHREAD_ONCE_INIT;

static void pf__cpu_probe(void) {
    unsigned a, b, c, d;
    pf__cpu_avx2_usable = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                          __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
    /* __builtin_cpu_supports also asks the OS (XGETBV) whether it saves the zmm registers */
    pf__cpu_avx512_usable = pf__cpu_avx2_usable && __builtin_cpu_supports("avx512f") &&
                            __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
    pf__cpu_vnni_usable = pf__cpu_avx512_usable && __builtin_cpu_supports("avx512vnni");
    /* AMD before Zen 5 (family 0x1a) runs a 512-bit FMA as two 256-bit halves: the 16-lane
       tiles gain nothing there, and lost to the AVX2 ones on Zen 4 (BENCHMARKS.md). */
    unsigned vendor[3] = {0, 0, 0}, family = 0;
    if (__get_cpuid(0, &a, &vendor[0], &vendor[2], &vendor[1]) && __get_cpuid(1, &a, &b, &c, &d))
        family = ((a >> 8) & 15) == 15 ? 15 + ((a >> 20) & 255) : (a >> 8) & 15;
    int amd = memcmp(vendor, "AuthenticAMD", 12) == 0;
    pf__cpu_wide_fma = pf__cpu_avx512_usable && !(amd && family < 0x1a);
#ifdef PF__AVX512
#ifdef PF__AMX
    unsigned d7 = __get_cpuid_count(7, 0, &a, &b, &c, &d) ? d : 0; /* AMX's flags */
    int amx = pf__cpu_avx512_usable && pf__amx_permitted();
#endif
    pf__cpu_avx512 = pf__cpu_avx2;
    pf__cpu_avx512.tiles = pf__cpu_wide_fma ? pf__tiles_avx512 : pf__tiles_ymm32;
    pf__cpu_avx512.tile_rows = PF__TILE_ROWS_AVX512;
    pf__cpu_avx512.tile_outs = PF__TILE_OUTS_AVX512;
    pf__cpu_avx512.quantize_x = pf__quantize_x_avx512;
    pf__cpu_avx512.widen = pf__widen_avx512;
    pf__cpu_avx512.sum_shifted = pf__sum_shifted_avx512;
    pf__cpu_avx512.add_rows = pf__add_rows_avx512;
    pf__cpu_avx512.normalize = pf__normalize_avx512;
    pf__cpu_avx512.store_sums = pf__store_sums_avx512;
    if (pf__cpu_wide_fma) {
        pf__cpu_avx512.scores = pf__scores_avx512, pf__cpu_avx512.weighted_sums = pf__weighted_sums_avx512;
        pf__cpu_avx512.row_scores = pf__row_scores_avx512;
        pf__cpu_avx512.row_weighted_sums = pf__row_weighted_sums_avx512;
        pf__cpu_avx512.activate = pf__activate_avx512, pf__cpu_avx512.exp_shifted = pf__exp_shifted_avx512;
        pf__cpu_avx512.chunk = PF__CHUNK_AVX512;
        pf__cpu_avx512.row_outs = PF__ROW_OUTS_AVX512;
    }
    if (pf__cpu_vnni_usable) {
        pf__cpu_avx512.q8_rows = pf__q8_rows_vnni, pf__cpu_avx512.q8_row = pf__q8_row_vnni;
        pf__cpu_avx512.q4_rows = pf__q4_rows_vnni, pf__cpu_avx512.q4_row = pf__q4_row_vnni;
        pf__cpu_avx512.blocks_rows = pf__blocks_rows_vnni;
#ifdef PF__AMX
        if (amx && (d7 & (1u << 25))) /* AMX-INT8 */
            pf__cpu_avx512.q8_tiles = pf__q8_tiles_amx, pf__cpu_avx512.q4_tiles = pf__q4_tiles_amx;
#endif
    }
#ifdef PF__AMX
    /* AMX-BF16, and AVX512-BF16 (leaf 7.1 eax bit 5) for rounding x */
    if (amx && (d7 & (1u << 22)) && __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 5)))
        pf__cpu_avx512.bf16_tiles = pf__bf16_tiles_amx;
#endif
#endif
}
#endif

#ifdef PF__NEON
/* ARM64: NEON's tiles and Q8/Q4 products; attention, activations and norms stay portable. */
static const pf__cpu_kernels pf__cpu_neon = {
    .tiles = pf__tiles_neon, .tile_rows = PF__TILE_ROWS, .tile_outs = PF__TILE_OUTS, .chunk = PF__CHUNK,
    .row_outs = PF__ROW_OUTS_NEON, .scores = pf__scores, .weighted_sums = pf__weighted_sums,
    .row_scores = pf__row_scores, .row_weighted_sums = pf__row_weighted_sums, .activate = pf__activate_portable,
    .exp_shifted = pf__exp_shifted, .q8_rows = pf__q8_rows_neon, .q8_row = pf__q8_rows_neon,
    .q4_rows = pf__q4_rows_neon, .q4_row = pf__q4_rows_neon, .quantize_x = pf__quantize_x_portable,
    .widen = pf__widen_neon, .store_sums = pf__store_sums_portable, .sum_shifted = pf__sum_shifted_portable,
    .add_rows = pf__add_rows_portable, .normalize = pf__normalize_portable, .blocks_rows = pf__blocks_rows_portable,
    .blocks_f32 = pf__blocks_f32_portable};
#ifdef PF__DOTPROD
#include <sys/auxv.h>
/* The NEON set with sdot's Q8/Q4 products, where the processor has FEAT_DotProd. */
static pf__cpu_kernels pf__cpu_neon_dotprod;
static int pf__cpu_dotprod_usable;
static pthread_once_t pf__cpu_neon_probe_once = PTHREAD_ONCE_INIT;

#ifdef PF__I8MM
/* The sdot set with smmla's products for prompts, where the processor has FEAT_I8MM too (every
   core with it has FEAT_DotProd: both are Armv8.6's). */
static pf__cpu_kernels pf__cpu_neon_i8mm;
static int pf__cpu_i8mm_usable;
#endif

static void pf__cpu_neon_probe(void) {
    pf__cpu_dotprod_usable = (getauxval(AT_HWCAP) & (1ul << 20)) != 0; /* HWCAP_ASIMDDP */
    pf__cpu_neon_dotprod = pf__cpu_neon;
    pf__cpu_neon_dotprod.q8_rows = pf__cpu_neon_dotprod.q8_row = pf__q8_rows_sdot;
    pf__cpu_neon_dotprod.q4_rows = pf__cpu_neon_dotprod.q4_row = pf__q4_rows_sdot;
#ifdef PF__I8MM
    pf__cpu_i8mm_usable = pf__cpu_dotprod_usable && (getauxval(AT_HWCAP2) & (1ul << 13)) != 0; /* HWCAP2_I8MM */
    pf__cpu_neon_i8mm = pf__cpu_neon_dotprod;
    pf__cpu_neon_i8mm.q8_rows = pf__q8_rows_mmla, pf__cpu_neon_i8mm.q4_rows = pf__q4_rows_mmla;
#endif
}
#endif
#endif

static const pf__cpu_kernels *pf__cpu_kernels_here(void) {
#ifdef PF_TESTING
    if (pf_testing_portable_cpu) return &pf__cpu_portable;
#endif
#ifdef PF__AVX2
    pthread_once(&pf__cpu_probe_once, pf__cpu_probe);
#ifdef PF__AVX512
    if (pf__cpu_avx512_usable && !PF__AVX2_ASKED) return &pf__cpu_avx512;
#endif
    if (pf__cpu_avx2_usable) return &pf__cpu_avx2;
#endif
#ifdef PF__NEON
#ifdef PF__DOTPROD
    pthread_once(&pf__cpu_neon_probe_once, pf__cpu_neon_probe);
#ifdef PF__I8MM
    if (pf__cpu_i8mm_usable && !PF__NEON_ASKED && !PF__NO_I8MM_ASKED) return &pf__cpu_neon_i8mm;
#endif
    if (pf__cpu_dotprod_usable && !PF__NEON_ASKED) return &pf__cpu_neon_dotprod;
#endif
    return &pf__cpu_neon;
#endif
    return &pf__cpu_portable;
}

static void pf__cpu_norm(pf__rank *r, float *out, const float *x, const pf__weight *weight, const pf__weight *bias,
                         size_t rows, size_t n, float eps, pf__norm kind) {
    (void)r;
    const pf__cpu_kernels *kernels = pf__cpu_kernels_here();
    const float *g = weight ? (const float *)weight->data : NULL, *b = bias ? (const float *)bias->data : NULL;
    for (size_t row = 0; row < rows; row++) {
        const float *xr = x + row * n;
        float *o = out + row * n;
        if (kind == PF__NORM_ELEMENTWISE) { /* NoNorm: x * w + b */
            for (size_t i = 0; i < n; i++) o[i] = xr[i] * (g ? g[i] : 1.0f) + (b ? b[i] : 0.0f);
            continue;
        }
        double mean = kind == PF__NORM_LAYER ? kernels->sum_shifted(xr, n, 0.0, 0) / (double)n : 0.0;
        double var = kernels->sum_shifted(xr, n, mean, 1) / (double)n;
        float inv = (float)(1.0 / sqrt(var + eps));
        if (!g) /* a norm without weight (OLMo's): the gain is 1 (1 + 0 for PF__NORM_RMS_PLUS_ONE) */
            for (size_t i = 0; i < n; i++) o[i] = (float)(xr[i] - mean) * inv + (b ? b[i] : 0.0f);
        else
            kernels->normalize(o, xr, n, mean, inv, g, kind == PF__NORM_RMS_PLUS_ONE ? 1.0f : 0.0f, b);
    }
}

/* The width of the vectors the CPU backend's matrix products use on this processor. */
int pf_cpu_vector_bits(void) {
    const pf__cpu_kernels *kernels = pf__cpu_kernels_here();
#ifdef PF__AVX512
    if (kernels == &pf__cpu_avx512 && pf__cpu_wide_fma) return 512;
#endif
#ifdef PF__NEON
    if (kernels != &pf__cpu_portable) return 128;
#endif
    return kernels == &pf__cpu_portable ? 0 : 256;
}

/* Bytes pf__cpu_matmul_quantized needs for `rows` rows of x of `k` inputs: per block its scale and
   sum (4 bytes each, first, so they stay aligned), then the int8 values. */
static size_t pf__quantized_x_bytes(size_t rows, size_t k) {
    size_t bytes = rows * (k / PF__Q8_BLOCK) * (sizeof(float) + sizeof(int32_t)) + rows * k;
#ifdef PF__AMX
    if (rows >= PF__Q8_TILES_ROWS && pf__cpu_kernels_here()->q8_tiles) bytes += pf__amx_bytes(rows, k);
#endif
    return bytes;
}

/* out[rows][w->rows] = x w^T + bias for Q8 or Q4 weights: x quantized per block into scratch
   (pf__quantized_x_bytes of it; pf__q8_rows_fn), then weight rows in groups that stay in the cache
   while every row of x passes over them. */
#define PF__Q8_GROUP 64

static void pf__cpu_matmul_quantized(float *out, const float *x, const pf__weight *w, const float *bias, size_t rows,
                                     void *scratch) {
    int q4 = w->dtype == PF__DTYPE_Q4;
    size_t n_out = w->rows, k = w->cols, nb = k / PF__Q8_BLOCK, row_bytes = nb * (q4 ? PF__Q4_BYTES : PF__Q8_BYTES);
    float *dx = (float *)scratch;
    int32_t *sx = (int32_t *)(dx + rows * nb);
    int8_t *qx = (int8_t *)(sx + rows * nb);
    const pf__cpu_kernels *kernels = pf__cpu_kernels_here();
    kernels->quantize_x(qx, dx, sx, x, rows * nb); /* rows are whole blocks */
    const unsigned char *W = (const unsigned char *)w->data;
    pf__q8_tiles_fn *tiles = q4 ? kernels->q4_tiles : kernels->q8_tiles;
    size_t tiled = tiles && rows >= PF__Q8_TILES_ROWS && !PF__NO_AMX_ASKED ? n_out / 16 * 16 : 0; /* weight rows */
    if (tiled) tiles(out, n_out, qx, dx, sx, rows, W, nb, tiled, bias, qx + rows * k);
    /* the rest on the vector kernels, which give the same bits */
    pf__q8_rows_fn *kernel = q4 ? (rows == 1 ? kernels->q4_row : kernels->q4_rows)
                                : (rows == 1 ? kernels->q8_row : kernels->q8_rows);
    for (size_t o0 = tiled; o0 < n_out; o0 += PF__Q8_GROUP) {
        size_t n = n_out - o0 < PF__Q8_GROUP ? n_out - o0 : PF__Q8_GROUP;
        kernel(out + o0, n_out, qx, dx, sx, rows, W + o0 * row_bytes, nb, n);
    }
    pf__add_bias(out + tiled, n_out, bias ? bias + tiled : NULL, rows, n_out - tiled);
}

/* The same for GGUF's other block formats (pf__blocks_rows_fn), in the same groups of weight rows. */
static void pf__cpu_matmul_blocks(float *out, const float *x, const pf__weight *w, const float *bias, size_t rows,
                                  void *scratch) {
    size_t n_out = w->rows, k = w->cols, nb = k / PF__Q8_BLOCK, row_bytes = pf__weight_bytes(w->dtype, 1, k);
    float *dx = (float *)scratch;
    int32_t *sx = (int32_t *)(dx + rows * nb);
    int8_t *qx = (int8_t *)(sx + rows * nb);
    const pf__cpu_kernels *kernels = pf__cpu_kernels_here();
    kernels->quantize_x(qx, dx, sx, x, rows * nb);
    for (size_t o0 = 0; o0 < n_out; o0 += PF__Q8_GROUP) {
        size_t n = n_out - o0 < PF__Q8_GROUP ? n_out - o0 : PF__Q8_GROUP;
        kernels->blocks_rows(out + o0, n_out, qx, dx, sx, rows, (const unsigned char *)w->data + o0 * row_bytes, k, n,
                             w->dtype);
    }
    pf__add_bias(out, n_out, bias, rows, n_out);
}

/* The same against fp32 x (pf__blocks_f32_fn): scratch holds x's block sums. */
static void pf__cpu_matmul_blocks_f32(float *out, const float *x, const pf__weight *w, const float *bias, size_t rows,
                                      void *scratch) {
    size_t n_out = w->rows, k = w->cols, row_bytes = pf__weight_bytes(w->dtype, 1, k);
    float *x_sums = (float *)scratch;
    const pf__cpu_kernels *kernels = pf__cpu_kernels_here();
    pf__block_x_sums(x_sums, x, rows * (k / 32));
    for (size_t o0 = 0; o0 < n_out; o0 += PF__Q8_GROUP) {
        size_t n = n_out - o0 < PF__Q8_GROUP ? n_out - o0 : PF__Q8_GROUP;
        kernels->blocks_f32(out + o0, n_out, x, x_sums, rows, (const unsigned char *)w->data + o0 * row_bytes, k, n,
                            w->dtype);
    }
    pf__add_bias(out, n_out, bias, rows, n_out);
}

/* From this many rows of x on, a product with fp16 or bf16 weights first widens each block of
   weight rows to fp32 (into scratch of pf__widened_bytes) and runs the fp32 tiles over the copy:
   the 16-bit tiles convert every weight again for each group of rows of x, and those conversions
   share the ports of the FMAs (BENCHMARKS.md). The copy holds the same values, so the sums, and
   every output's bits, are the same either way. Fewer rows do not repay the copy. */
#define PF__WIDEN_ROWS 32
#define PF__WIDEN_BYTES (384 << 10) /* a block's copy, at most: it stays in L2 beside the rows of x */

/* Weight rows a widened block holds: PF__OBLOCK where the copy fits PF__WIDEN_BYTES, fewer (a
   multiple of every full tile's weight rows) where the rows are long; 0 where nothing is widened. */
static size_t pf__widened_rows(const pf__weight *w, size_t rows) {
    int sixteen_bit = w->dtype == PF__DTYPE_F16 || w->dtype == PF__DTYPE_BF16;
    if (!sixteen_bit || rows < PF__WIDEN_ROWS) return 0;
    size_t fit = PF__WIDEN_BYTES / (w->cols * sizeof(float)) / 24 * 24; /* 24: of 4, 6 and 8 */
    return fit < 24 ? 24 : fit > PF__OBLOCK ? PF__OBLOCK : fit;
}

static size_t pf__widened_bytes(const pf__weight *w, size_t rows) {
    return pf__widened_rows(w, rows) * w->cols * sizeof(float);
}

/* out[rows][w->rows] = x[rows][w->cols] times w transposed, plus bias. `widened` is
   pf__widened_bytes(w, rows) of scratch, or NULL to compute from w as it is stored. */
PF_PRIVATE void pf__cpu_matmul_rows(float *out, const float *x, const pf__weight *w, const float *bias, size_t rows,
                                float *widened) {
    const pf__cpu_kernels *kernels = pf__cpu_kernels_here();
    size_t block = widened ? pf__widened_rows(w, rows) : 0; /* weight rows widened at a time */
    pf__dtype dtype = block ? PF__DTYPE_F32 : w->dtype;     /* of the rows the tiles read */
    const pf__tile_fn *tiles = kernels->tiles[dtype];
    size_t wsize = pf__dtype_size(dtype), stored_size = pf__dtype_size(w->dtype);
    size_t n_out = w->rows, k = w->cols, first_end = kernels->chunk - w->col_begin % kernels->chunk;
    double acc[PF__RBLOCK * PF__OBLOCK];
    for (size_t o0 = 0; o0 < n_out; o0 += block ? block : PF__OBLOCK) {
        size_t o1 = o0 + (block ? block : PF__OBLOCK), ld;
        if (o1 > n_out) o1 = n_out;
        ld = o1 - o0;
        const char *W = (const char *)w->data + o0 * k * stored_size; /* weight rows o0..o1 */
        if (block) {
            kernels->widen(widened, W, w->dtype, (o1 - o0) * k);
            W = (const char *)widened;
        }
        for (size_t r0 = 0; r0 < rows; r0 += PF__RBLOCK) {
            size_t r1 = r0 + PF__RBLOCK < rows ? r0 + PF__RBLOCK : rows;
            memset(acc, 0, (r1 - r0) * ld * sizeof *acc); /* the rows in use: decode's is one */
            for (size_t p0 = 0; p0 < k;) { /* blocks of whole chunks, fixed in the whole tensor too */
                size_t p1 = ((w->col_begin + p0) / PF__KBLOCK + 1) * PF__KBLOCK - w->col_begin;
                if (p1 > k) p1 = k;
                /* Full tiles with the rows of x innermost: a tile's weight rows stay in L1 while
                   the rows of x stream from L2 (fewer bytes a step than the weights' rows). */
                size_t r_tiled = r0 + (r1 - r0) / kernels->tile_rows * kernels->tile_rows, o = o0, r;
                for (; o + kernels->tile_outs <= o1; o += kernels->tile_outs)
                    for (r = r0; r < r_tiled; r += kernels->tile_rows)
                        tiles[0](acc + (r - r0) * ld + (o - o0), ld, x + r * k, W + (o - o0) * k * wsize, k, p0, p1, first_end);
                for (; o < o1; o++)
                    for (r = r0; r < r_tiled; r += kernels->tile_rows)
                        tiles[1](acc + (r - r0) * ld + (o - o0), ld, x + r * k, W + (o - o0) * k * wsize, k, p0, p1, first_end);
                for (r = r_tiled; r < r1; r++) {
                    size_t o = o0;
                    for (; o + kernels->row_outs <= o1; o += kernels->row_outs) tiles[2](acc + (r - r0) * ld + (o - o0), ld, x + r * k, W + (o - o0) * k * wsize, k, p0, p1, first_end);
                    for (; o < o1; o++) tiles[3](acc + (r - r0) * ld + (o - o0), ld, x + r * k, W + (o - o0) * k * wsize, k, p0, p1, first_end);
                }
                p0 = p1;
            }
            for (size_t r = r0; r < r1; r++)
                kernels->store_sums(out + r * n_out + o0, acc + (r - r0) * ld, bias ? bias + o0 : NULL, ld);
        }
    }
}

/* pf_parallel_options.bf16_products, for bf16 weights: each input of the product rounded to bf16
   (to nearest even), the exact products summed in fp32, as CUDA ranks and torch's bf16 layers
   compute. AMX-BF16 tiles run it where the processor has them and k is a multiple of 32; elsewhere
   the fp32 tiles run over a rounded copy of x (summing in their order). A weight matrix takes the
   same path whatever the rows of x, so a row's outputs do not depend on its batch. */
static int pf__bf16_on_tiles(const pf__weight *w) {
    return pf__cpu_kernels_here()->bf16_tiles && w->cols % 32 == 0 && !PF__NO_AMX_ASKED;
}

static size_t pf__bf16_products_bytes(const pf__weight *w, size_t rows) {
#ifdef PF__AMX
    if (pf__bf16_on_tiles(w)) return pf__bf16_tiles_bytes(rows, w->cols);
#endif
    return 64 + (rows * w->cols + 16) * sizeof(float) + pf__widened_bytes(w, rows);
}

static void pf__cpu_matmul_bf16_products(float *out, const float *x, const pf__weight *w, const float *bias,
                                         size_t rows, void *scratch) {
    const pf__cpu_kernels *kernels = pf__cpu_kernels_here();
    if (pf__bf16_on_tiles(w)) {
        kernels->bf16_tiles(out, w->rows, x, rows, w->data, w->cols, w->rows, bias, scratch);
        return;
    }
    size_t count = rows * w->cols;
    float *rounded = (float *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
    float *widened = (float *)(((uintptr_t)(rounded + count) + 63) & ~(uintptr_t)63);
    for (size_t i = 0; i < count; i++) rounded[i] = pf__bf16_to_f32(pf__f32_to_bf16(x[i]));
    pf__cpu_matmul_rows(out, rounded, w, bias, rows, widened);
}

/* Quantizes rows [rows][cols] of fp32 values in place into Q8 blocks (cols a multiple of
   PF__Q8_BLOCK). The scale is rounded to fp16 before the values are divided by it, so that
   quantizing the dequantized weights again gives them back (pf_to_cpu then pf_parallelize). */
PF_PRIVATE void pf__q8_quantize(void *data, size_t rows, size_t cols) {
    const float *in = (const float *)data;
    unsigned char *out = (unsigned char *)data; /* block b written at 34b, read from 128b: behind */
    for (size_t b = 0; b < rows * cols / PF__Q8_BLOCK; b++) {
        float v[PF__Q8_BLOCK], largest = 0;
        memcpy(v, in + b * PF__Q8_BLOCK, sizeof v);
        for (int i = 0; i < PF__Q8_BLOCK; i++) largest = fabsf(v[i]) > largest ? fabsf(v[i]) : largest;
        uint16_t d16 = pf__f32_to_f16(largest / 127.0f);
        float d = pf__f16_to_f32(d16), inverse = d > 0 ? 1.0f / d : 0.0f;
        unsigned char *block = out + b * PF__Q8_BYTES;
        memcpy(block, &d16, 2);
        for (int i = 0; i < PF__Q8_BLOCK; i++) {
            block[2 + i] = (unsigned char)pf__round_to_int8(v[i] * inverse);
        }
    }
}

/* The same into Q4 blocks, as llama.cpp's Q4_0 rounds: d = m / -8 for the value m of largest
   magnitude (so m is q = 0), rounded to fp16 first like Q8's, then q = min(15, floor(w / d + 8.5)). */
PF_PRIVATE void pf__q4_quantize(void *data, size_t rows, size_t cols) {
    const float *in = (const float *)data;
    unsigned char *out = (unsigned char *)data; /* block b written at 18b, read from 128b: behind */
    for (size_t b = 0; b < rows * cols / PF__Q8_BLOCK; b++) {
        float v[PF__Q8_BLOCK], extreme = 0;
        memcpy(v, in + b * PF__Q8_BLOCK, sizeof v);
        for (int i = 0; i < PF__Q8_BLOCK; i++) extreme = fabsf(v[i]) > fabsf(extreme) ? v[i] : extreme;
        uint16_t d16 = pf__f32_to_f16(extreme / -8.0f);
        float d = pf__f16_to_f32(d16), inverse = d != 0 ? 1.0f / d : 0.0f;
        unsigned char *block = out + b * PF__Q4_BYTES, q[PF__Q8_BLOCK];
        for (int i = 0; i < PF__Q8_BLOCK; i++) {
            float t = pf__floor_small(v[i] * inverse + 8.5f);
            q[i] = (unsigned char)(t < 0 ? 0 : t > 15 ? 15 : t);
        }
        memcpy(block, &d16, 2);
        for (int i = 0; i < PF__Q8_BLOCK / 2; i++) block[2 + i] = (unsigned char)(q[i] | q[i + PF__Q8_BLOCK / 2] << 4);
    }
}

#ifdef PF_TESTING
/* Test hook: the CPU matmul on plain arrays (w is [n_out][k] of dtype 0 f32, 1 f16, 2 bf16, 3 Q8
   blocks, 4 Q4 blocks, 5..15 GGUF's Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, Q3_K, IQ4_NL, IQ4_XS, Q2_K, MXFP4 blocks, 16 Q4_G,
   17 E4M3, 18 Q8_G (pf_testing_cpu_matmul_kept only),
   columns col_begin..
   of a whole). */
void pf_testing_cpu_matmul(float *out, const float *x, const void *w, int dtype, const float *bias, size_t rows,
                           size_t n_out, size_t k, size_t col_begin) {
    pf__weight weight = {(void *)w, (pf__dtype)dtype, n_out, k, col_begin, NULL, NULL, NULL, 0};
    if (PF__BLOCKED(weight.dtype)) {
        void *scratch = malloc(pf__quantized_x_bytes(rows, k));
        if (scratch && PF__QUANTIZED(weight.dtype)) pf__cpu_matmul_quantized(out, x, &weight, bias, rows, scratch);
        else if (scratch) pf__cpu_matmul_blocks(out, x, &weight, bias, rows, scratch);
        else memset(out, 0xff, rows * n_out * sizeof(float)); /* NaN */
        free(scratch);
        return;
    }
    float *widened = malloc(pf__widened_bytes(&weight, rows) + 1);
    if (widened) pf__cpu_matmul_rows(out, x, &weight, bias, rows, widened);
    else memset(out, 0xff, rows * n_out * sizeof(float)); /* NaN */
    free(widened);
}

/* Test hook: the product of blocks the ranks keep (against fp32 x), on plain arrays. */
void pf_testing_cpu_matmul_kept(float *out, const float *x, const void *w, int dtype, size_t rows, size_t n_out,
                                size_t k) {
    pf__weight weight = {(void *)w, (pf__dtype)dtype, n_out, k, 0, NULL, NULL, NULL, 0};
    void *scratch = malloc(rows * (k / 32) * sizeof(float) + 1);
    if (scratch) pf__cpu_matmul_blocks_f32(out, x, &weight, NULL, rows, scratch);
    else memset(out, 0xff, rows * n_out * sizeof(float)); /* NaN */
    free(scratch);
}

/* Test hook: blocks as fp32 (pf__block_dequantize), count a multiple of the block's values. */
void pf_testing_block_dequantize(int dtype, const void *blocks, size_t count, float *out) {
    size_t values = pf__block_values((pf__dtype)dtype), bytes = pf__block_bytes((pf__dtype)dtype);
    for (size_t b = 0; b < count / values; b++)
        pf__block_dequantize((pf__dtype)dtype, (const uint8_t *)blocks + b * bytes, out + b * values);
}

/* Test hook: the product pf_parallel_options.bf16_products runs, on plain arrays (w bf16 [n_out][k]). */
void pf_testing_cpu_matmul_bf16_products(float *out, const float *x, const uint16_t *w, const float *bias, size_t rows,
                                         size_t n_out, size_t k) {
    pf__weight weight = {(void *)w, PF__DTYPE_BF16, n_out, k, 0, NULL, NULL, NULL, 0};
    void *scratch = malloc(pf__bf16_products_bytes(&weight, rows));
    if (scratch) pf__cpu_matmul_bf16_products(out, x, &weight, bias, rows, scratch);
    else memset(out, 0xff, rows * n_out * sizeof(float)); /* NaN */
    free(scratch);
}

/* Test hooks: pf__q8_quantize and pf__q4_quantize on plain arrays (rows x cols fp32 in place into blocks). */
void pf_testing_q8_quantize(float *data, size_t rows, size_t cols) { pf__q8_quantize(data, rows, cols); }
void pf_testing_q4_quantize(float *data, size_t rows, size_t cols) { pf__q4_quantize(data, rows, cols); }
/* Test hook: the activations' quantizer of the kernel set in use (blocks of 32 values of x). */
void pf_testing_cpu_quantize_x(int8_t *qx, float *dx, int32_t *sx, const float *x, size_t blocks) {
    pf__cpu_kernels_here()->quantize_x(qx, dx, sx, x, blocks);
}

/* Test hooks: attention's two loops, as the CPU backend picks them. */
void pf_testing_cpu_scores(float *out, size_t ld, const float *const *q, int nq, const float *keys, size_t stride,
                           size_t count, size_t n) {
    pf__cpu_kernels_here()->scores(out, ld, q, nq, keys, stride, count, n);
}
void pf_testing_cpu_weighted_sum(float *out, const float *w, const float *values, size_t stride, size_t count, size_t n) {
    pf__cpu_kernels_here()->weighted_sums(out, 0, w, 0, 1, values, stride, count, n); /* one query */
}
void pf_testing_cpu_weighted_sums(float *out, size_t ldo, const float *w, size_t ldw, int nq, const float *values,
                                  size_t stride, size_t count, size_t n) {
    pf__cpu_kernels_here()->weighted_sums(out, ldo, w, ldw, nq, values, stride, count, n);
}
/* Test hooks: decode's attention loops (dt 0 fp32, 1 fp16, 2 bf16 rows). */
void pf_testing_cpu_row_scores(float *out, size_t ld, const float *q, int heads, const size_t *kv, const void *keys,
                               int dt, size_t row, size_t count, size_t n) {
    pf__head_slices hs = {heads, kv};
    pf__cpu_kernels_here()->row_scores(out, ld, q, hs, keys, dt, row, count, n);
}
void pf_testing_cpu_row_weighted_sums(float *out, const float *w, size_t ld, int heads, const size_t *kv,
                                      const void *values, int dt, size_t row, size_t count, size_t n) {
    pf__head_slices hs = {heads, kv};
    pf__cpu_kernels_here()->row_weighted_sums(out, w, ld, hs, values, dt, row, count, n);
}
/* Test hooks: the activations (act a pf__activation) and softmax's exponentials, as picked. */
void pf_testing_cpu_activate(float *out, const float *x, const float *mul, size_t count, int act) {
    pf__cpu_kernels_here()->activate(out, x, mul, count, (pf__activation)act);
}
void pf_testing_cpu_exp_shifted(float *p, size_t count, float shift) { pf__cpu_kernels_here()->exp_shifted(p, count, shift); }
double pf_testing_cpu_sum_shifted(const float *x, size_t n, double shift, int squares) {
    return pf__cpu_kernels_here()->sum_shifted(x, n, shift, squares);
}
void pf_testing_cpu_add_rows(float *x, const float *y, const float *b, size_t n) {
    pf__cpu_kernels_here()->add_rows(x, y, b, n);
}
void pf_testing_cpu_normalize(float *out, const float *x, size_t n, double mean, float inv, const float *g,
                              const float *b) {
    pf__cpu_kernels_here()->normalize(out, x, n, mean, inv, g, 0.0f, b);
}
#endif

static void pf__cpu_matmul(pf__rank *r, float *out, const float *x, const pf__weight *w, const pf__weight *bias,
                           size_t rows);

/* A stack kept as parts in different formats (pf__weight.parts): each part's product into
   parts_out, then into its columns of out. */
static void pf__cpu_matmul_parts(pf__rank *r, float *out, const float *x, const pf__weight *w, const pf__weight *bias,
                                 size_t rows) {
    pf__cpu_rank *cpu = pf__cpu(r);
    size_t column = 0;
    for (const pf__weight *part = w->parts; part && !r->error; part = part->next) {
        if (!part->rows) continue; /* a rank without its heads (more ranks than heads) */
        size_t need = rows * part->rows * sizeof(float);
        if (need > cpu->parts_out_bytes) {
            float *grown = (float *)realloc(cpu->parts_out, need);
            if (!grown) {
                pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory for a product's parts (%zu bytes)", need);
                return;
            }
            cpu->parts_out = grown;
            cpu->parts_out_bytes = need;
        }
        pf__weight part_bias = {0};
        if (bias) part_bias = *bias, part_bias.data = (float *)bias->data + column, part_bias.rows = part->rows;
        pf__cpu_matmul(r, cpu->parts_out, x, part, bias ? &part_bias : NULL, rows);
        for (size_t i = 0; i < rows; i++)
            memcpy(out + i * w->rows + column, cpu->parts_out + i * part->rows, part->rows * sizeof(float));
        column += part->rows;
    }
}

static void pf__cpu_matmul(pf__rank *r, float *out, const float *x, const pf__weight *w, const pf__weight *bias,
                           size_t rows) {
#ifdef PF_TESTING
    if (r->world == pf_testing_fail_rank && --pf_testing_fail_countdown == 0) {
        pf__rank_fail(r, PF_ERROR_DEVICE, "injected failure (test)");
        return;
    }
#endif
    pf__cpu_rank *cpu = pf__cpu(r);
    if (w->parts) {
        pf__cpu_matmul_parts(r, out, x, w, bias, rows);
        return;
    }
    if (w->input_order) { /* a reordered matrix's blocks: x's inputs gathered in their order, a pad's 0 */
        size_t bytes = rows * w->cols * sizeof(float);
        if (bytes > cpu->ordered_x_bytes) {
            float *grown = (float *)realloc(cpu->ordered_x, bytes);
            if (!grown) {
                pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory for a product's inputs (%zu bytes)", bytes);
                return;
            }
            cpu->ordered_x = grown;
            cpu->ordered_x_bytes = bytes;
        }
        for (size_t i = 0; i < rows; i++) {
            const float *in = x + i * w->inputs;
            float *ordered = cpu->ordered_x + i * w->cols;
            for (size_t j = 0; j < w->cols; j++) ordered[j] = w->input_order[j] == PF__NO_INPUT ? 0.0f : in[w->input_order[j]];
        }
        x = cpu->ordered_x;
    }
    const float *b = bias ? (const float *)bias->data : NULL;
    /* blocks against int8 x where the group asked for q8 / q4 products (E4M3's and Q8_G's values
       are no int8s: always fp32 x); else against fp32 x */
    int quantized = PF__INT8_PRODUCTS(w->dtype) && PF__QUANTIZED(r->group->dtype);
    int kept = PF__BLOCKED(w->dtype) && !quantized;
    int bf16_products = r->group->options.bf16_products && w->dtype == PF__DTYPE_BF16;
    size_t need = kept            ? rows * (w->cols / 32) * sizeof(float)
                  : quantized     ? pf__quantized_x_bytes(rows, w->cols)
                  : bf16_products ? pf__bf16_products_bytes(w, rows)
                                  : pf__widened_bytes(w, rows);
    if (need > cpu->matmul_scratch_bytes) { /* the first product of its size; kept for the next */
        void *grown = realloc(cpu->matmul_scratch, need);
        if (!grown) {
            pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory for a product's scratch (%zu bytes, %zu rows)",
                          need, rows);
            return;
        }
        cpu->matmul_scratch = grown;
        cpu->matmul_scratch_bytes = need;
    }
    if (kept) pf__cpu_matmul_blocks_f32(out, x, w, b, rows, cpu->matmul_scratch);
    else if (PF__QUANTIZED(w->dtype)) pf__cpu_matmul_quantized(out, x, w, b, rows, cpu->matmul_scratch);
    else if (quantized) pf__cpu_matmul_blocks(out, x, w, b, rows, cpu->matmul_scratch);
    else if (bf16_products) pf__cpu_matmul_bf16_products(out, x, w, b, rows, cpu->matmul_scratch);
    else pf__cpu_matmul_rows(out, x, w, b, rows, need ? (float *)cpu->matmul_scratch : NULL);
}

static float pf__act(float v, pf__activation act) {
    switch (act) {
    case PF__ACT_GELU_TANH: /* 0.5 v (1 + tanh(u)) = v / (1 + exp(-2u)): one expf, cheaper than tanhf */
        return v / (1.0f + expf(-2.0f * 0.7978845608028654f * (v + 0.044715f * v * v * v)));
    case PF__ACT_GELU_ERF: { /* v Phi(v); below 0 through erfc, as 1 + erf(z) there cancels */
        float z = v * 0.7071067811865476f;
        return v >= 0 ? 0.5f * v * (1.0f + erff(z)) : 0.5f * v * erfcf(-z);
    }
    case PF__ACT_RELU: return v > 0 ? v : 0;
    case PF__ACT_SILU: return v / (1.0f + expf(-v));
    case PF__ACT_TANH: return tanhf(v);
    case PF__ACT_QUICK_GELU: return v / (1.0f + expf(-1.702f * v));
    }
    return v;
}

static void pf__cpu_activation(pf__rank *r, float *x, size_t count, pf__activation act) {
    (void)r;
    pf__cpu_kernels_here()->activate(x, x, NULL, count, act);
}

static void pf__cpu_softcap(pf__rank *r, float *x, size_t count, float cap) {
    (void)r;
    for (size_t i = 0; i < count; i++) x[i] = tanhf(x[i] / cap) * cap;
}

static void pf__cpu_gated_activation(pf__rank *r, float *out, const float *in, size_t rows, size_t width,
                                     pf__activation act) {
    (void)r;
    void (*activate)(float *, const float *, const float *, size_t, pf__activation) = pf__cpu_kernels_here()->activate;
    for (size_t row = 0; row < rows; row++)
        activate(out + row * width, in + row * 2 * width, in + row * 2 * width + width, width, act);
}

static void pf__cpu_clamped_swiglu(pf__rank *r, float *out, const float *in, size_t rows, size_t width, float alpha,
                                   float limit) {
    (void)r;
    for (size_t row = 0; row < rows; row++)
        for (size_t i = 0; i < width; i++) {
            float gate = in[row * 2 * width + i], up = in[row * 2 * width + width + i];
            gate = gate < limit ? gate : limit;
            up = up < -limit ? -limit : up > limit ? limit : up;
            out[row * width + i] = (up + 1.0f) * (gate / (1.0f + expf(-gate * alpha)));
        }
}

static void pf__cpu_add_residual(pf__rank *r, float *x, const float *y, const pf__weight *bias, size_t rows,
                                 size_t n) {
    (void)r;
    const float *b = bias ? (const float *)bias->data : NULL;
    const pf__cpu_kernels *kernels = pf__cpu_kernels_here();
    for (size_t row = 0; row < rows; row++) kernels->add_rows(x + row * n, y ? y + row * n : NULL, b, n);
}

static void pf__cpu_scale(pf__rank *r, float *x, size_t count, float factor) {
    (void)r;
    for (size_t i = 0; i < count; i++) x[i] *= factor;
}

/* qkv rows += a->qkv_bias where it is still to add, as the GEMM would have added it. */
static void pf__cpu_qkv_bias(float *qkv, const pf__step *s, const pf__attn_shape *a) {
    size_t width = (size_t)(a->heads + 2 * a->kv_heads) * a->head_dim, rows = (size_t)s->batch * s->seq_len;
    if (!a->qkv_bias || !width) return;
    const float *b = (const float *)a->qkv_bias->data;
    for (size_t row = 0; row < rows; row++)
        for (size_t i = 0; i < width; i++) qkv[row * width + i] += b[i];
}

/* Each q and each k head of the qkv rows normed over its head_dim values, in place: the heads of
   one side of a row are `heads` rows of head_dim for pf__cpu_norm, with the one gain, or one
   head at a time with its own gain (per_head: the gains are host fp32 vectors, head after head);
   the side's bias (if any) shared by its heads. */
static void pf__cpu_head_norm_side(pf__rank *r, float *x, const pf__weight *w, const pf__weight *b, size_t heads,
                                   size_t hd, float eps, pf__norm kind, int per_head) {
    if (!per_head) {
        pf__cpu_norm(r, x, x, w, b, heads, hd, eps, kind);
        return;
    }
    for (size_t h = 0; h < heads; h++) {
        pf__weight one = *w;
        one.data = (float *)w->data + h * hd;
        pf__cpu_norm(r, x + h * hd, x + h * hd, &one, b, 1, hd, eps, kind);
    }
}

static void pf__cpu_head_norm(pf__rank *r, float *qkv, const pf__weight *q_weight, const pf__weight *k_weight,
                              const pf__weight *q_bias, const pf__weight *k_bias, size_t rows, const pf__attn_shape *a,
                              float eps, pf__norm kind, int per_head) {
    size_t hd = (size_t)a->head_dim, q = (size_t)a->heads * hd, kv = (size_t)a->kv_heads * hd, width = q + 2 * kv;
    for (size_t t = 0; t < rows; t++) {
        float *row = qkv + t * width;
        if (q_weight && a->heads)
            pf__cpu_head_norm_side(r, row, q_weight, q_bias, (size_t)a->heads, hd, eps, kind, per_head);
        if (k_weight && a->kv_heads)
            pf__cpu_head_norm_side(r, row + q, k_weight, k_bias, (size_t)a->kv_heads, hd, eps, kind, per_head);
    }
}

static void pf__cpu_clamp(pf__rank *r, float *x, size_t count, float limit) {
    (void)r;
    for (size_t i = 0; i < count; i++) x[i] = fminf(fmaxf(x[i], -limit), limit);
}

static void pf__cpu_qk_sum_squares(pf__rank *r, float *sums, const float *qkv, size_t rows, const pf__attn_shape *a,
                                   int k_first, int k_count) {
    (void)r;
    size_t hd = (size_t)a->head_dim, q = (size_t)a->heads * hd, width = q + 2 * (size_t)a->kv_heads * hd;
    for (size_t t = 0; t < rows; t++) {
        double sq = 0, sk = 0;
        const float *row = a->heads ? qkv + t * width : NULL;
        for (size_t i = 0; row && i < q; i++) sq += (double)row[i] * row[i];
        for (size_t i = (size_t)k_first * hd; row && i < (size_t)(k_first + k_count) * hd; i++)
            sk += (double)row[q + i] * row[q + i];
        sums[2 * t] = (float)sq, sums[2 * t + 1] = (float)sk;
    }
}

static void pf__cpu_qk_scale(pf__rank *r, float *qkv, const float *sums, const pf__weight *q_weight,
                             const pf__weight *k_weight, size_t rows, const pf__attn_shape *a, float q_width,
                             float k_width, float eps) {
    (void)r;
    size_t hd = (size_t)a->head_dim, q = (size_t)a->heads * hd, kv = (size_t)a->kv_heads * hd, width = q + 2 * kv;
    if (!a->heads) return;
    const float *gq = q_weight ? (const float *)q_weight->data : NULL, *gk = k_weight ? (const float *)k_weight->data : NULL;
    for (size_t t = 0; t < rows; t++) {
        float *row = qkv + t * width;
        float inv_q = 1.0f / sqrtf(sums[2 * t] / q_width + eps), inv_k = 1.0f / sqrtf(sums[2 * t + 1] / k_width + eps);
        for (size_t i = 0; gq && i < q; i++) row[i] = gq[i] * (row[i] * inv_q);
        for (size_t i = 0; gk && i < kv; i++) row[q + i] = gk[i] * (row[q + i] * inv_k);
    }
}

static void pf__cpu_rotary(pf__rank *r, float *qkv, const pf__step *s, const pf__attn_shape *a, int pairs) {
    (void)r;
    size_t hd = (size_t)a->head_dim, width = (size_t)(a->heads + 2 * a->kv_heads) * hd;
    int half = a->rotary_dim / 2, rotated_heads = a->heads + a->kv_heads; /* q heads, then k heads */
    float scale = a->rope_scale ? a->rope_scale : 1.0f;
    if (!rotated_heads) return; /* a rank without heads has no qkv buffer to point into */
    pf__cpu_qkv_bias(qkv, s, a);
    for (int b = 0; b < s->batch; b++)
        for (int t = 0; t < s->seq_len; t++) {
            float *row = qkv + ((size_t)b * s->seq_len + t) * width;
            int position = s->past + t - (s->pad ? s->pad[b] : 0);
            float pos = (float)(position > 0 ? position : 0);
            for (int i = 0; i < half; i++) {
                float angle = pos * s->inv_freq[(size_t)a->rope_table * half + i]; /* fp32, as transformers computes it */
                float c = cosf(angle) * scale, sn = sinf(angle) * scale; /* fp32, as transformers scales them */
                size_t i1 = pairs ? 2 * (size_t)i : (size_t)i, i2 = pairs ? i1 + 1 : (size_t)(i + half);
                for (int h = 0; h < rotated_heads; h++) {
                    float *x = row + (size_t)h * hd;
                    float x1 = x[i1], x2 = x[i2];
                    x[i1] = x1 * c - x2 * sn;
                    x[i2] = x2 * c + x1 * sn;
                }
            }
        }
}

/* Llama 4's attention temperature at position p, in fp32 as transformers computes it. */
static float pf__query_temperature(int p, float floor_scale, float scale) {
    return log1pf(floorf(((float)p + 1.0f) / floor_scale)) * scale + 1.0f;
}

static void pf__cpu_scale_queries(pf__rank *r, float *qkv, const pf__step *s, const pf__attn_shape *a, float floor_scale,
                                  float scale) {
    (void)r;
    size_t width = (size_t)(a->heads + 2 * a->kv_heads) * (size_t)a->head_dim, q_width = (size_t)a->heads * a->head_dim;
    for (int b = 0; b < s->batch; b++)
        for (int t = 0; t < s->seq_len; t++) {
            float *row = qkv + ((size_t)b * s->seq_len + t) * width;
            int position = s->past + t - (s->pad ? s->pad[b] : 0);
            float factor = pf__query_temperature(position > 0 ? position : 0, floor_scale, scale);
            for (size_t i = 0; i < q_width; i++) row[i] *= factor;
        }
}

/* T5's bidirectional bucket of a relative distance (key position - query position): half the
   buckets for keys after the query; exact below a quarter of them, then logarithmic up to
   max_distance, computed in fp32 as transformers does. */
/* T5's bucket of a relative distance (key position - query position), in fp32 as transformers
   computes it: both ways (half the buckets for keys after the query), or towards the past only
   (later keys share bucket 0). */
static int pf__relative_bucket(int distance, int num_buckets, int max_distance, int bidirectional) {
    int bucket = 0, n = distance < 0 ? -distance : 0;
    if (bidirectional) {
        num_buckets /= 2;
        bucket = distance > 0 ? num_buckets : 0;
        n = distance < 0 ? -distance : distance;
    }
    int max_exact = num_buckets / 2;
    if (n < max_exact) return bucket + n;
    float scaled = logf((float)n / (float)max_exact) / (float)log((double)max_distance / max_exact) *
                   (float)(num_buckets - max_exact);
    int large = max_exact + (int)scaled;
    return bucket + (large < num_buckets - 1 ? large : num_buckets - 1);
}

/* n values of a key or value row into the cache as it stores them (dt: fp32, or fp16 / bf16
   rounded to nearest even, once, here). */
static void pf__cache_store(void *dst, const float *src, size_t n, pf__dtype dt) {
    uint16_t *half = (uint16_t *)dst;
    if (dt == PF__DTYPE_F32) memcpy(dst, src, n * sizeof(float));
    else if (dt == PF__DTYPE_F16) for (size_t i = 0; i < n; i++) half[i] = pf__f32_to_f16(src[i]);
    else for (size_t i = 0; i < n; i++) half[i] = pf__f32_to_bf16(src[i]);
}

static void pf__cpu_kv_append(pf__rank *r, void *k_cache, void *v_cache, float *qkv, const pf__step *s,
                              const pf__attn_shape *a) {
    size_t hd = (size_t)a->head_dim, q_width = (size_t)a->heads * hd, kv_width = (size_t)a->kv_heads * hd;
    size_t row_width = q_width + 2 * kv_width, T = (size_t)s->seq_len;
    (void)r;
    if (!a->heads) return;
    pf__cpu_qkv_bias(qkv, s, a);
    size_t position_bytes = kv_width * pf__dtype_size(a->cache_dtype);
    for (int b = 0; b < s->batch; b++) {
        size_t cache_row = s->cache_rows ? (size_t)s->cache_rows[b] : (size_t)b;
        char *kc = (char *)k_cache + cache_row * a->cache_len * position_bytes;
        char *vc = (char *)v_cache + cache_row * a->cache_len * position_bytes;
        for (size_t t = 0; t < T; t++) {
            const float *row = qkv + ((size_t)b * T + t) * row_width;
            pf__cache_store(kc + (s->past + t) * position_bytes, row + q_width, kv_width, a->cache_dtype);
            pf__cache_store(vc + (s->past + t) * position_bytes, row + q_width + kv_width, kv_width, a->cache_dtype);
        }
    }
}

/* Whether Longformer's local attention (a->local_window) lets query `pos` see key `key`: within the
   window, or a global token (global_row: the row's flags). */
static inline int pf__local_key_seen(const pf__attn_shape *a, size_t pos, size_t key, const int32_t *global_row) {
    return (key > pos ? key - pos : pos - key) <= (size_t)a->local_window || (global_row && global_row[key]);
}

/* The keys query `pos` of row b may see, first..last (first > last: none, a pad's own query);
   global_span: the first and last of the row's global tokens under Longformer's local attention
   (the keys between them outside the window are masked by the softmax), or NULL. */
static void pf__attend_range(const pf__step *s, const pf__attn_shape *a, size_t pad, size_t pos,
                             const size_t *global_span, size_t *first, size_t *last) {
    *last = a->mask == PF__MASK_CAUSAL ? pos
            : a->mask == PF__MASK_CROSS ? (size_t)a->cache_len - 1 : (size_t)s->past + (size_t)s->seq_len - 1;
    *first = pad; /* left pads are never keys */
    if (a->window && pos + 1 > (size_t)a->window && pos + 1 - (size_t)a->window > *first)
        *first = pos + 1 - (size_t)a->window;
    if (a->chunk > 0 && pos >= pad) { /* the query's chunk, counted from the sequence's first token */
        size_t chunk_first = pad + (pos - pad) / (size_t)a->chunk * (size_t)a->chunk;
        if (chunk_first > *first) *first = chunk_first;
    }
    if (a->local_window > 0) { /* Longformer: the window, widened to reach the row's global tokens */
        size_t w = (size_t)a->local_window, lo = pos > *first + w ? pos - w : *first, hi = pos + w < *last ? pos + w : *last;
        if (global_span && global_span[0] < lo) lo = global_span[0];
        if (global_span && global_span[1] > hi) hi = global_span[1];
        *first = lo, *last = hi;
    }
}

/* ALiBi's bias for a head's slope and a key `position` tokens after its row's first: Falcon's
   rounded to bf16 and scaled as q.k is (its bias joins the score before the scale). */
static inline float pf__alibi_bias(const pf__attn_shape *a, float slope, size_t position) {
    float bias = slope * (float)position;
    return a->alibi_rounded ? pf__bf16_to_f32(pf__f32_to_bf16(bias)) * a->scale : bias;
}

/* The dense bias row (pf__attn_shape.dense_bias) of row b's query t and head h, over the keys (the
   step's own, or cache_len's under PF__MASK_CROSS); NULL: none. */
static const float *pf__dense_bias_row(const pf__attn_shape *a, const pf__step *s, size_t b, size_t t, int h) {
    size_t T = (size_t)s->seq_len, keys = a->mask == PF__MASK_CROSS ? (size_t)a->cache_len : T;
    return a->dense_bias ? a->dense_bias + ((b * T + t) * (size_t)a->heads + (size_t)h) * keys : NULL;
}

/* One query's scores p[0..count) of keys first.. into probabilities, for head h; dense: its dense
   bias row over the step's keys, or NULL; global_row: the row's global tokens under Longformer's
   local attention, whose keys outside the window get probability 0 (NULL: the range is the window). */
static void pf__attend_softmax(const pf__cpu_kernels *kernels, float *p, size_t count, size_t first, size_t pos,
                               size_t pad, int h, const pf__attn_shape *a, const float *dense, const int32_t *global_row) {
    float slope = a->alibi ? a->alibi[h] : 0.0f, scale = a->scale;
    const float *rel = a->rel_bias ? a->rel_bias + (size_t)h * a->rel_rows : NULL;
    if (a->softcap > 0) { /* Gemma 2: tanh(s / cap) * cap of the scaled score, then the rest */
        for (size_t j = 0; j < count; j++) {
            p[j] = tanhf(p[j] * scale / a->softcap) * a->softcap + pf__alibi_bias(a, slope, first + j - pad);
            if (rel)
                p[j] += rel[pf__relative_bucket((int)(first + j) - (int)pos, a->rel_buckets, a->rel_max_distance,
                                                a->mask != PF__MASK_CAUSAL)];
        }
    } else if (rel || slope != 0.0f) {
        for (size_t j = 0; j < count; j++) {
            p[j] = p[j] * scale + pf__alibi_bias(a, slope, first + j - pad);
            if (rel)
                p[j] += rel[pf__relative_bucket((int)(first + j) - (int)pos, a->rel_buckets, a->rel_max_distance,
                                                a->mask != PF__MASK_CAUSAL)];
        }
    } else {
        for (size_t j = 0; j < count; j++) p[j] = p[j] * scale; /* the same value as above: slope 0 adds +0 */
    }
    if (dense) for (size_t j = 0; j < count; j++) p[j] += dense[first + j]; /* keys of this step (past 0) */
    /* BigBird: its row's keys first.. (the whole row: first is its pad), each as often as its blocks repeat it */
    int sparse = a->sparse_block > 0, len = (int)(first + count - pad);
    for (size_t j = 0; sparse && j < count; j++) {
        int times = pf__block_sparse_count(a->sparse_block, a->sparse_random, len, (int)(pos - pad), (int)(first + j - pad));
        if (times != 1) p[j] = times ? p[j] + logf((float)times) : -INFINITY; /* exp(s + log n) = n exp(s) */
    }
    int local = a->local_window > 0 && global_row;
    for (size_t j = 0; local && j < count; j++)
        if (!pf__local_key_seen(a, pos, first + j, global_row)) p[j] = -INFINITY; /* out of every maximum */
    float maxima[8] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    size_t j = 0;
    for (; j + 8 <= count; j += 8) /* eight independent maxima: one chain of them waited on each other */
        for (int l = 0; l < 8; l++) maxima[l] = p[j + l] > maxima[l] ? p[j + l] : maxima[l];
    for (; j < count; j++) maxima[0] = p[j] > maxima[0] ? p[j] : maxima[0];
    float max = maxima[0];
    for (int l = 1; l < 8; l++) max = maxima[l] > max ? maxima[l] : max;
    float sink = a->sinks ? ((const float *)a->sinks->data)[h] : -INFINITY; /* a term without a value */
    if (sink > max) max = sink;
    kernels->exp_shifted(p, count, max);
    for (size_t k = 0; local && k < count; k++) /* exactly 0, as transformers' finfo.min gives (the exp clamps) */
        if (!pf__local_key_seen(a, pos, first + k, global_row)) p[k] = 0.0f;
    for (size_t k = 0; sparse && k < count; k++) /* exactly 0 (the exp clamps), as transformers leaves them out */
        if (!pf__block_sparse_count(a->sparse_block, a->sparse_random, len, (int)(pos - pad), (int)(first + k - pad)))
            p[k] = 0.0f;
    /* independent sums (sum_shifted's sixteen chains) and one division: a chain of dependent
       double adds and a double division per key were a quarter of a long prompt's attention */
    double inverse = 1.0 / (kernels->sum_shifted(p, count, 0.0, 0) + (a->sinks ? (double)expf(sink - max) : 0.0));
    for (j = 0; j < count; j++) p[j] = (float)(p[j] * inverse);
}

/* Keys and values lo..hi of one kv head (its offset kv in a cache row), packed hd floats apart, in
   fp32: every block of a prompt's queries reads them again, and in the cache a head's slice of each
   position sits a cache row (kv_width values) from the next, so a long prompt's slices share a few
   cache sets and came from memory again for each block (BENCHMARKS.md). A 16-bit cache is always
   read through this copy. */
static void pf__attend_pack(const pf__cpu_kernels *kernels, float *k_out, float *v_out, const void *kc, const void *vc,
                            pf__dtype dt, size_t kv_width, size_t kv, size_t hd, size_t lo, size_t hi) {
    for (size_t j = lo; j <= hi; j++) {
        size_t at = j * kv_width + kv;
        if (dt == PF__DTYPE_F32) {
            memcpy(k_out + (j - lo) * hd, (const float *)kc + at, hd * sizeof(float));
            memcpy(v_out + (j - lo) * hd, (const float *)vc + at, hd * sizeof(float));
        } else { /* a 16-bit cache: widened exactly, so attention computes in fp32 as over an fp32 cache */
            kernels->widen(k_out + (j - lo) * hd, (const uint16_t *)kc + at, dt, hd);
            kernels->widen(v_out + (j - lo) * hd, (const uint16_t *)vc + at, dt, hd);
        }
    }
}

/* A decode step's attention for one row of the batch (its one query q of every head): the cache
   rows it sees walked once, every head's slice of each (pf__row_scores). Scores go to cpu->scores,
   [heads][cache_len]. kc, vc: the row's caches. */
static void pf__attend_one_query(pf__rank *r, const pf__cpu_kernels *kernels, float *out, const float *q, const char *kc,
                                 const char *vc, const pf__step *s, const pf__attn_shape *a, size_t b, size_t pad) {
    size_t hd = (size_t)a->head_dim, kv_width = (size_t)a->kv_heads * hd, ld = (size_t)a->cache_len, first, last;
    pf__cpu_rank *cpu = pf__cpu(r);
    size_t esize = pf__dtype_size(a->cache_dtype), *kv = cpu->head_slices;
    pf__attend_range(s, a, pad, (size_t)s->past, NULL, &first, &last);
    if (first > last) { /* a pad's own query: nothing to see, and nobody reads it */
        memset(out, 0, (size_t)a->heads * hd * sizeof(float));
        return;
    }
    for (int h = 0; h < a->heads; h++) kv[h] = (size_t)((a->head_begin + h) / a->kv_group - a->kv_begin) * hd;
    pf__head_slices hs = {a->heads, kv};
    size_t count = last + 1 - first;
    kernels->row_scores(cpu->scores, ld, q, hs, kc + first * kv_width * esize, a->cache_dtype, kv_width, count, hd);
    for (int h = 0; h < a->heads; h++)
        pf__attend_softmax(kernels, cpu->scores + (size_t)h * ld, count, first, (size_t)s->past, pad, h, a,
                           pf__dense_bias_row(a, s, b, 0, h), NULL);
    kernels->row_weighted_sums(out, cpu->scores, ld, hs, vc + first * kv_width * esize, a->cache_dtype, kv_width, count, hd);
}

/* DeBERTa's log buckets of a relative distance (transformers' make_log_bucket_position, in its
   fp32): distances within position_buckets / 2 as they are, the others on a log scale reaching
   max_relative_positions; then the row of the relative embeddings, clamped to 0..2 span - 1. */
static int pf__disentangled_row(int distance, int position_buckets, int max_relative_positions, int span) {
    int bucket = distance;
    if (position_buckets > 0) {
        int mid = position_buckets / 2, magnitude = distance < 0 ? -distance : distance;
        if (magnitude > mid) {
            float reach = (float)((double)(max_relative_positions - 1) / mid);
            float log_pos = ceilf(logf((float)magnitude / (float)mid) / logf(reach) * (float)(mid - 1)) + (float)mid;
            bucket = (int)(distance < 0 ? -log_pos : log_pos);
        }
    }
    int row = bucket + span;
    return row < 0 ? 0 : row > 2 * span - 1 ? 2 * span - 1 : row;
}

static void pf__cpu_disentangled_bias(pf__rank *r, float *out, const float *qkv, const float *rel_qkv, const pf__step *s,
                                      const pf__attn_shape *a, const pf__config *c) {
    size_t hd = (size_t)a->head_dim, q_width = (size_t)a->heads * hd, kv_width = (size_t)a->kv_heads * hd;
    size_t row_width = q_width + 2 * kv_width, T = (size_t)s->seq_len, H = (size_t)a->heads;
    size_t rel_width = c->share_att_key ? row_width : q_width + kv_width; /* pf__rank_disentangled's projections */
    (void)r;
    for (size_t b = 0; b < (size_t)s->batch; b++)
        for (size_t i = 0; i < T; i++)
            for (size_t h = 0; h < H; h++) {
                size_t kv = (size_t)((a->head_begin + (int)h) / a->kv_group - a->kv_begin) * hd;
                const float *q = qkv + (b * T + i) * row_width + h * hd;
                float *bias = out + ((b * T + i) * H + h) * T;
                for (size_t j = 0; j < T; j++) {
                    const float *k = qkv + (b * T + j) * row_width + q_width + kv;
                    const float *rel = rel_qkv + (size_t)pf__disentangled_row((int)i - (int)j, c->position_buckets,
                                                                             c->max_relative_positions, c->rel_span) * rel_width;
                    float sum = 0.0f;
                    if (c->rel_c2p) sum += pf__dot(q, rel + q_width + kv, hd); /* c2p: q_i . pk(i - j) */
                    if (c->rel_p2c) sum += pf__dot(k, rel + h * hd, hd);       /* p2c: k_j . pq(i - j) */
                    bias[j] = sum * a->scale;
                }
            }
}

static void pf__cpu_attend(pf__rank *r, float *out, const float *qkv, const void *k_cache, const void *v_cache,
                           const pf__step *s, const pf__attn_shape *a) {
    size_t hd = (size_t)a->head_dim, q_width = (size_t)a->heads * hd, kv_width = (size_t)a->kv_heads * hd;
    size_t row_width = a->mask == PF__MASK_CROSS ? q_width : q_width + 2 * kv_width, T = (size_t)s->seq_len;
    const pf__cpu_kernels *kernels = pf__cpu_kernels_here();
    pf__cpu_rank *cpu = pf__cpu(r);
    if (!a->heads) return;
    for (int b = 0; b < s->batch; b++) {
        size_t cache_row = s->cache_rows ? (size_t)s->cache_rows[b] : (size_t)b, esize = pf__dtype_size(a->cache_dtype);
        const char *kc = (const char *)k_cache + cache_row * a->cache_len * kv_width * esize;
        const char *vc = (const char *)v_cache + cache_row * a->cache_len * kv_width * esize;
        size_t pad = s->pad ? (size_t)s->pad[b] : 0, lo_all = SIZE_MAX, hi_all = 0;
        const int32_t *global_row = s->global_tokens ? s->global_tokens + (size_t)b * T : NULL;
        if (a->global_queries) { /* Longformer's global tokens' rows alone, each over every key */
            for (size_t t = 0; global_row && t < T; t++)
                if (global_row[t])
                    pf__attend_one_query(r, kernels, out + ((size_t)b * T + t) * q_width, qkv + ((size_t)b * T + t) * row_width,
                                         kc, vc, s, a, (size_t)b, pad);
            continue;
        }
        size_t global_span[2] = {SIZE_MAX, 0}; /* the row's global tokens under local attention */
        for (size_t t = 0; a->local_window > 0 && global_row && t < T; t++)
            if (global_row[t]) {
                if (t < global_span[0]) global_span[0] = t;
                global_span[1] = t;
            }
        const size_t *span = global_span[0] <= global_span[1] ? global_span : NULL;
        if (!span) global_row = NULL; /* the window alone */
        if (T == 1) {
            pf__attend_one_query(r, kernels, out + (size_t)b * q_width, qkv + (size_t)b * row_width, kc, vc, s, a, (size_t)b,
                                 pad);
            continue;
        }
        for (size_t t = 0; t < T; t++) { /* the keys any query of the row sees */
            size_t first, last;
            pf__attend_range(s, a, pad, (size_t)s->past + t, span, &first, &last);
            if (first <= last && first < lo_all) lo_all = first;
            if (first <= last && last > hi_all) hi_all = last;
        }
        if (lo_all > hi_all) { /* only pads' queries: nothing to see, and nobody reads them */
            memset(out + (size_t)b * T * q_width, 0, T * q_width * sizeof(float));
            continue;
        }
        /* Several blocks of queries read the keys and values packed, where they fit; a 16-bit
           cache is always read packed (its rows of a cache_len always fit) */
        int sixteen_bit = a->cache_dtype != PF__DTYPE_F32;
        int pack = sixteen_bit || (T > PF__QUERY_BLOCK && kv_width > hd && (hi_all + 1 - lo_all) * hd <= cpu->attn_pack_floats);
        if (sixteen_bit && (hi_all + 1 - lo_all) * hd > cpu->attn_pack_floats) {
            pf__rank_fail(r, PF_ERROR_DEVICE, "CPU attention: %zu cached positions past its 16-bit copy", hi_all + 1 - lo_all);
            return;
        }
        size_t packed_kv = SIZE_MAX, base = pack ? lo_all : 0, stride = pack ? hd : kv_width;
        for (int h = 0; h < a->heads; h++) {
            size_t kv = (size_t)((a->head_begin + h) / a->kv_group - a->kv_begin) * hd;
            const float *keys = (const float *)kc + kv, *values = (const float *)vc + kv; /* position j at (j - base) * stride */
            if (pack) {
                if (kv != packed_kv) /* heads of a group share their kv head's copy */
                    pf__attend_pack(kernels, cpu->attn_pack, cpu->attn_pack + cpu->attn_pack_floats, kc, vc, a->cache_dtype,
                                    kv_width, kv, hd, lo_all, hi_all);
                packed_kv = kv;
                keys = cpu->attn_pack, values = cpu->attn_pack + cpu->attn_pack_floats;
            }
            /* Queries in blocks that share each key's load for their scores; each query then takes
               the keys it may see (first..last) out of the block's range (lo..hi). */
            for (size_t t0 = 0; t0 < T; t0 += PF__QUERY_BLOCK) {
                int nq = T - t0 < PF__QUERY_BLOCK ? (int)(T - t0) : PF__QUERY_BLOCK;
                size_t first[PF__QUERY_BLOCK], last[PF__QUERY_BLOCK], lo = SIZE_MAX, hi = 0;
                const float *q[PF__QUERY_BLOCK];
                for (int i = 0; i < nq; i++) {
                    pf__attend_range(s, a, pad, (size_t)s->past + t0 + (size_t)i, span, &first[i], &last[i]);
                    q[i] = qkv + ((size_t)b * T + t0 + (size_t)i) * row_width + (size_t)h * hd;
                    if (first[i] > last[i]) continue; /* a pad's own query: its weights are all 0 below */
                    if (first[i] < lo) lo = first[i];
                    if (last[i] > hi) hi = last[i];
                }
                if (lo > hi) continue;
                size_t ld = (size_t)a->cache_len, keys_seen = hi + 1 - lo;
                kernels->scores(cpu->scores, ld, q, nq, keys + (lo - base) * stride, stride, keys_seen, hd);
                for (int i = 0; i < nq; i++) { /* probabilities, zero for the block's keys the query does not see */
                    float *row = cpu->scores + (size_t)i * ld;
                    if (first[i] > last[i]) {
                        memset(row, 0, keys_seen * sizeof(float));
                        continue;
                    }
                    pf__attend_softmax(kernels, row + (first[i] - lo), last[i] + 1 - first[i], first[i],
                                       (size_t)s->past + t0 + (size_t)i, pad, h, a,
                                       pf__dense_bias_row(a, s, (size_t)b, t0 + (size_t)i, h), global_row);
                    memset(row, 0, (first[i] - lo) * sizeof(float));
                    memset(row + (last[i] + 1 - lo), 0, (hi - last[i]) * sizeof(float));
                }
                kernels->weighted_sums(out + ((size_t)b * T + t0) * q_width + (size_t)h * hd, q_width, cpu->scores, ld, nq,
                                       values + (lo - base) * stride, stride, keys_seen, hd);
            }
        }
    }
}

/* Value i of a cache row as it stores them (fp32, fp16 or bf16). */
static inline float pf__cache_value(const void *row, size_t i, pf__dtype dt) {
    if (dt == PF__DTYPE_F32) return ((const float *)row)[i];
    uint16_t half = ((const uint16_t *)row)[i];
    return dt == PF__DTYPE_F16 ? pf__f16_to_f32(half) : pf__bf16_to_f32(half);
}

static void pf__cpu_ngram_attend(pf__rank *r, float *out, const float *qkv, const float *rel, int rel_heads,
                                 const int32_t *buckets, const void *k_cache, const void *v_cache, const pf__step *s,
                                 const pf__attn_shape *a, int predict) {
    size_t hd = (size_t)a->head_dim, q_width = (size_t)a->heads * hd, kv_width = (size_t)a->kv_heads * hd;
    size_t row_width = q_width + 2 * kv_width, T = (size_t)s->seq_len, rel_width = (size_t)a->rel_buckets * rel_heads;
    size_t esize = pf__dtype_size(a->cache_dtype);
    float *p = pf__cpu(r)->scores; /* a query's keys and its own: cache_len + 1 at most, within its rows */
    for (size_t b = 0; b < (size_t)s->batch; b++) {
        size_t cache_row = s->cache_rows ? (size_t)s->cache_rows[b] : b, pad = s->pad ? (size_t)s->pad[b] : 0;
        const char *kc = (const char *)k_cache + cache_row * (size_t)a->cache_len * kv_width * esize;
        const char *vc = (const char *)v_cache + cache_row * (size_t)a->cache_len * kv_width * esize;
        for (size_t t = 0; t < T; t++) {
            size_t n = b * T + t, pos = (size_t)s->past + t;
            const float *row = qkv + n * row_width, *bias = rel + n * rel_width;
            for (int h = 0; h < a->heads; h++) {
                size_t kv = (size_t)((a->head_begin + h) / a->kv_group - a->kv_begin) * hd, head = (size_t)(a->head_begin + h);
                const float *q = row + (size_t)h * hd, *own_k = row + q_width + kv, *own_v = row + q_width + kv_width + kv;
                float *o = out + n * q_width + (size_t)h * hd, max = -INFINITY;
                size_t count = pos >= pad ? pos + 1 - pad : 0; /* a pad's own query sees no key */
                for (size_t k = 0; k < count; k++) {
                    size_t j = pad + k, at = j * kv_width + kv;
                    float dot = 0.0f;
                    for (size_t i = 0; i < hd; i++) dot += q[i] * pf__cache_value(kc, at + i, a->cache_dtype);
                    p[k] = dot * a->scale + bias[(size_t)buckets[pos + (size_t)predict - j] * (size_t)rel_heads + head];
                    if (p[k] > max) max = p[k];
                }
                if (predict) { /* its own key, at distance 0 */
                    p[count] = pf__dot(q, own_k, hd) * a->scale + bias[(size_t)buckets[0] * (size_t)rel_heads + head];
                    if (p[count] > max) max = p[count];
                }
                size_t total = count + (predict ? 1 : 0);
                memset(o, 0, hd * sizeof(float));
                if (!total) continue;
                double sum = 0.0;
                for (size_t k = 0; k < total; k++) sum += (double)(p[k] = expf(p[k] - max));
                float inverse = (float)(1.0 / sum);
                for (size_t k = 0; k < count; k++) {
                    size_t at = (pad + k) * kv_width + kv;
                    float weight = p[k] * inverse;
                    for (size_t i = 0; i < hd; i++) o[i] += weight * pf__cache_value(vc, at + i, a->cache_dtype);
                }
                if (predict)
                    for (size_t i = 0; i < hd; i++) o[i] += p[count] * inverse * own_v[i];
            }
        }
    }
}

static void pf__cpu_reorder_rows(pf__rank *r, void *cache, const int *dst, const int *src, int count, size_t row_bytes,
                                 size_t used_bytes) {
    unsigned char *rows = (unsigned char *)cache, *tmp = (unsigned char *)pf__cpu(r)->reorder_tmp;
    for (size_t at = 0; at < used_bytes; at += PF__REORDER_SLICE) { /* slice by slice of the rows */
        size_t n = used_bytes - at < PF__REORDER_SLICE ? used_bytes - at : PF__REORDER_SLICE;
        for (int k = 0; k < count; k++) /* every source read before any row is written */
            memcpy(tmp + k * n, rows + src[k] * row_bytes + at, n);
        for (int k = 0; k < count; k++)
            memcpy(rows + dst[k] * row_bytes + at, tmp + k * n, n);
    }
}

#ifdef __linux__
/* A number of kB after `key` in /proc/meminfo, or of bytes in a cgroup file ("max": none); -1 when
   there is no such file or line. */
static long long pf__read_memory_value(const char *path, const char *key) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[256];
    long long value = -1;
    while (fgets(line, sizeof line, f)) {
        size_t n = strlen(key);
        if (strncmp(line, key, n) != 0) continue;
        char *end;
        long long v = strtoll(line + n, &end, 10);
        if (end != line + n && v >= 0) value = *key ? v * 1024 : v;
        break;
    }
    fclose(f);
    return value;
}
#endif

/* The host's memory in all, and in use: what the kernel could not hand out now (MemAvailable
   counts the page cache it can drop, such as a checkpoint just read), or the cgroup's use when
   its limit (a container's) leaves less. */
#ifdef PF_TESTING
/* Test hook: nonzero is the host memory available, in bytes, whatever the system says. */
size_t pf_testing_host_available = 0;
#endif

static int pf__cpu_device_memory(int device, size_t *used, size_t *total) {
    (void)device;
    long long all = -1, available = -1;
#if defined(_SC_PHYS_PAGES) && defined(_SC_AVPHYS_PAGES) && defined(_SC_PAGESIZE)
    long pages = sysconf(_SC_PHYS_PAGES), free_pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && free_pages >= 0 && free_pages <= pages && page > 0)
        all = (long long)pages * page, available = (long long)free_pages * page;
#endif
#ifdef _WIN32
    MEMORYSTATUSEX status;
    status.dwLength = sizeof status;
    if (GlobalMemoryStatusEx(&status)) all = (long long)status.ullTotalPhys, available = (long long)status.ullAvailPhys;
#endif
#ifdef __linux__
    long long meminfo = pf__read_memory_value("/proc/meminfo", "MemAvailable:");
    if (meminfo >= 0 && all > 0 && meminfo <= all) available = meminfo;
    long long limit = pf__read_memory_value("/sys/fs/cgroup/memory.max", "");
    long long current = pf__read_memory_value("/sys/fs/cgroup/memory.current", "");
    if (limit > 0 && current >= 0 && limit < all) { /* a container's limit below the host's memory */
        all = limit;
        long long left = limit > current ? limit - current : 0;
        if (left < available) available = left;
    }
#endif
#ifdef PF_TESTING
    if (pf_testing_host_available && all > 0) available = (long long)pf_testing_host_available;
#endif
    if (all <= 0 || available < 0) return -1;
    *total = (size_t)all;
    *used = (size_t)(all - (available < all ? available : all));
    return 0;
}

/* Every rank publishes its buffer, then sums all of them in rank order into its scratch, so the
   result is bit-identical on every rank; a second barrier keeps the buffers alive until all have
   read them. Across processes, rank 0 also trades its process's buffers for the others' (between
   two barriers), and each rank sums all of the world's in world rank order: the same terms in the
   same order as one process with as many ranks, so the same bits. */
static void pf__cpu_all_reduce(pf__rank *r, float *x, size_t count) {
    pf__group *g = r->group;
    if (g->world_ranks == 1) return;
    g->reduce_in[r->index] = x;
    if (pf__barrier(g)) return;
    const float *const *in = (const float *const *)g->reduce_in;
    if (g->mpi) {
        if (r->index == 0) g->reduce_world = pf__mpi_exchange(r, g->reduce_in, count);
        if (pf__barrier(g)) return;
        in = g->reduce_world;
    }
    float *sum = pf__cpu(r)->reduce_tmp;
    memcpy(sum, in[0], count * sizeof(float));
    for (int k = 1; k < g->world_ranks; k++) {
        const float *term = in[k];
        for (size_t i = 0; i < count; i++) sum[i] += term[i];
    }
    if (pf__barrier(g)) return;
    memcpy(x, sum, count * sizeof(float));
}

/* Rotates the first `dims` values of x as the rotary op does a head's: by position pos, pairs
   (2i, 2i + 1) or halves (i, i + dims/2), cos and sin times scale. */
static void pf__rotate_span(float *x, float pos, const float *inv_freq, int dims, int pairs, float scale) {
    int half = dims / 2;
    for (int i = 0; i < half; i++) {
        float angle = pos * inv_freq[i]; /* fp32, as transformers computes it */
        float c = cosf(angle) * scale, sn = sinf(angle) * scale;
        size_t i1 = pairs ? 2 * (size_t)i : (size_t)i, i2 = pairs ? i1 + 1 : (size_t)(i + half);
        float x1 = x[i1], x2 = x[i2];
        x[i1] = x1 * c - x2 * sn;
        x[i2] = x2 * c + x1 * sn;
    }
}

/* The rotary position of token t of row b (left pads count from the first real token). */
static float pf__rope_position(const pf__step *s, int b, size_t t) {
    int position = s->past + (int)t - (s->pad ? s->pad[b] : 0);
    return (float)(position > 0 ? position : 0);
}

/* Latent attention's cache rows: each token's [latent (latent_rank) | shared key (rotary_dim)]
   from kv_a_proj's output, the latent RMSNormed with the gain norm, the key rotated. */
static void pf__cpu_latent_append(pf__rank *r, void *cache, const float *latent, const pf__weight *norm,
                                  const pf__step *s, const pf__attn_shape *a, int pairs, float eps) {
    const pf__cpu_kernels *kernels = pf__cpu_kernels_here();
    size_t rank = (size_t)a->latent_rank, width = rank + (size_t)a->rotary_dim, T = (size_t)s->seq_len;
    size_t position_bytes = width * pf__dtype_size(a->cache_dtype);
    float *row = (float *)malloc(width * sizeof(float));
    if (!row) {
        pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory");
        return;
    }
    for (int b = 0; b < s->batch; b++) {
        size_t cache_row = s->cache_rows ? (size_t)s->cache_rows[b] : (size_t)b;
        char *dst = (char *)cache + cache_row * a->cache_len * position_bytes;
        for (size_t t = 0; t < T; t++) {
            const float *in = latent + ((size_t)b * T + t) * width;
            double var = kernels->sum_shifted(in, rank, 0.0, 1) / (double)rank;
            kernels->normalize(row, in, rank, 0.0, (float)(1.0 / sqrt(var + eps)), (const float *)norm->data, 0.0f, NULL);
            memcpy(row + rank, in + rank, (size_t)a->rotary_dim * sizeof(float));
            pf__rotate_span(row + rank, pf__rope_position(s, b, t), s->inv_freq, a->rotary_dim, pairs,
                            a->rope_scale ? a->rope_scale : 1.0f);
            pf__cache_store(dst + (s->past + t) * position_bytes, row, width, a->cache_dtype);
        }
    }
    free(row);
}

/* Latent attention over the cached latents, in the absorbed form: for each query head h (q rows
   [heads][nope | rope], their rope parts rotated here first), q_h's nope part taken into the
   latent space through head h's key rows of kv_b (q_lat = W_k^T q_nope), scores q_lat . latent_j +
   q_rope . key_j, softmax, the latents' weighted sum, then head h's value rows of kv_b
   (out_h = W_v o_lat): the keys and values of every head are never made. */
static void pf__cpu_latent_attend(pf__rank *r, float *out, float *q, const void *cache, const pf__weight *kv_b,
                                  const pf__step *s, const pf__attn_shape *a, int pairs) {
    const pf__cpu_kernels *kernels = pf__cpu_kernels_here();
    pf__cpu_rank *cpu = pf__cpu(r);
    size_t rank = (size_t)a->latent_rank, rope = (size_t)a->rotary_dim, width = rank + rope, T = (size_t)s->seq_len;
    size_t hd = (size_t)a->head_dim, nope = hd - rope, vd = (size_t)a->v_head_dim, per_head = nope + vd;
    size_t esize = pf__dtype_size(a->cache_dtype);
    if (!a->heads) return;
    float *work = (float *)malloc((2 * rank + width) * sizeof(float)), *p = cpu->scores;
    if (!work) {
        pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory");
        return;
    }
    float *q_lat = work, *o_lat = work + rank, *key = work + 2 * rank;
    for (int b = 0; b < s->batch; b++) {
        size_t cache_row = s->cache_rows ? (size_t)s->cache_rows[b] : (size_t)b, pad = s->pad ? (size_t)s->pad[b] : 0;
        const char *rows = (const char *)cache + cache_row * a->cache_len * width * esize;
        for (size_t t = 0; t < T; t++) {
            size_t first, last, pos = (size_t)s->past + t;
            float *q_row = q + ((size_t)b * T + t) * (size_t)a->heads * hd, *o_row = out + ((size_t)b * T + t) * (size_t)a->heads * vd;
            pf__attend_range(s, a, pad, pos, NULL, &first, &last);
            if (first > last) { /* a pad's own query: nothing to see, and nobody reads it */
                memset(o_row, 0, (size_t)a->heads * vd * sizeof(float));
                continue;
            }
            size_t count = last + 1 - first;
            for (int h = 0; h < a->heads; h++) {
                float *qh = q_row + (size_t)h * hd;
                size_t w0 = (size_t)h * per_head; /* head h's first row of the rank's kv_b */
                pf__rotate_span(qh + nope, pf__rope_position(s, b, t), s->inv_freq, (int)rope, pairs,
                                a->rope_scale ? a->rope_scale : 1.0f);
                for (size_t c = 0; c < rank; c++) {
                    double sum = 0;
                    for (size_t d = 0; d < nope; d++)
                        sum += (double)qh[d] * pf__weight_value(kv_b->data, (w0 + d) * rank + c, kv_b->dtype);
                    q_lat[c] = (float)sum;
                }
                for (size_t j = 0; j < count; j++) {
                    const char *at = rows + (first + j) * width * esize;
                    if (a->cache_dtype == PF__DTYPE_F32) memcpy(key, at, width * sizeof(float));
                    else kernels->widen(key, (const uint16_t *)at, a->cache_dtype, width);
                    double score = 0;
                    for (size_t c = 0; c < rank; c++) score += (double)q_lat[c] * key[c];
                    for (size_t d = 0; d < rope; d++) score += (double)qh[nope + d] * key[rank + d];
                    p[j] = (float)score;
                }
                pf__attend_softmax(kernels, p, count, first, pos, pad, h, a, NULL, NULL); /* latent attention has no dense bias */
                memset(o_lat, 0, rank * sizeof(float));
                for (size_t j = 0; j < count; j++) {
                    const char *at = rows + (first + j) * width * esize;
                    if (a->cache_dtype == PF__DTYPE_F32) memcpy(key, at, rank * sizeof(float));
                    else kernels->widen(key, (const uint16_t *)at, a->cache_dtype, rank);
                    for (size_t c = 0; c < rank; c++) o_lat[c] += p[j] * key[c];
                }
                for (size_t e = 0; e < vd; e++) {
                    double sum = 0;
                    for (size_t c = 0; c < rank; c++)
                        sum += (double)o_lat[c] * pf__weight_value(kv_b->data, (w0 + nope + e) * rank + c, kv_b->dtype);
                    o_row[(size_t)h * vd + e] = (float)sum;
                }
            }
        }
    }
    free(work);
}

/* The CPU's work space beside the scratch every backend shares (pf__rank_alloc_scratch). */
static void pf__cpu_alloc_scratch(pf__rank *r) {
    const pf__group *g = r->group;
    pf__cpu_rank *cpu = pf__cpu(r);
    const pf__config *c = &g->model->config;
    size_t hd = (size_t)c->head_dim, T = g->max_tokens;
    size_t wide = c->hidden_size > c->embed_dim ? (size_t)c->hidden_size : (size_t)c->embed_dim; /* as r->part */
    size_t score_rows = r->share.heads > PF__QUERY_BLOCK ? (size_t)r->share.heads : PF__QUERY_BLOCK;
    cpu->scores = (float *)pf__rank_alloc(r, score_rows * (size_t)g->cache_len * sizeof(float));
    cpu->head_slices = (size_t *)pf__rank_alloc(r, score_rows * sizeof(size_t));
    if (T > PF__QUERY_BLOCK || g->cache_dtype != PF__DTYPE_F32) {
        cpu->attn_pack_floats = (size_t)g->cache_len * hd;
        cpu->attn_pack = (float *)pf__rank_alloc(r, 2 * cpu->attn_pack_floats * sizeof(float));
    }
    if (g->world_ranks > 1) cpu->reduce_tmp = (float *)pf__rank_alloc(r, T * wide * sizeof(float));
    if (g->max_batch > 1) cpu->reorder_tmp = (float *)pf__rank_alloc(r, (size_t)g->max_batch * PF__REORDER_SLICE);
}

static void pf__cpu_gather_rows(pf__rank *r, float *dst, const float *src, const int32_t *rows, const float *scales,
                                size_t count, size_t width) {
    (void)r;
    for (size_t i = 0; i < count; i++) {
        const float *in = src + (size_t)rows[i] * width;
        if (!scales) memcpy(dst + i * width, in, width * sizeof(float));
        else for (size_t k = 0; k < width; k++) dst[i * width + k] = scales[i] * in[k];
    }
}

/* ConvBERT's convolutions over each sequence's real tokens (pf__backend.depthwise_conv, multiply,
   span_conv): the rows of sequence b are b * T + t, its real tokens t >= pad[b]. */
static void pf__cpu_depthwise_conv(pf__rank *r, float *out, const float *x, const pf__weight *w, const pf__step *s,
                                   size_t width) {
    (void)r;
    size_t T = (size_t)s->seq_len, k = w->cols, half = (k - 1) / 2;
    for (size_t b = 0; b < (size_t)s->batch; b++) {
        size_t first = s->pad ? (size_t)s->pad[b] : 0;
        for (size_t t = 0; t < T; t++) {
            float *o = out + (b * T + t) * width;
            for (size_t ch = 0; ch < width; ch++) o[ch] = 0.0f;
            if (t < first) continue; /* a pad: its row is never read */
            for (size_t j = 0; j < k; j++) {
                if (t + j < first + half || t + j >= T + half) continue; /* beyond the real tokens: zeros */
                const float *in = x + (b * T + t + j - half) * width;
                for (size_t ch = 0; ch < width; ch++) o[ch] += pf__weight_value(w->data, ch * k + j, w->dtype) * in[ch];
            }
        }
    }
}

static void pf__cpu_multiply(pf__rank *r, float *x, const float *y, size_t y_stride, size_t rows, size_t n) {
    (void)r;
    for (size_t row = 0; row < rows; row++)
        for (size_t i = 0; i < n; i++) x[row * n + i] *= y[row * y_stride + i];
}

static void pf__cpu_span_conv(pf__rank *r, float *out, const float *logits, size_t logits_stride, const float *v,
                              const pf__step *s, int heads, int head_dim, int k) {
    (void)r;
    size_t T = (size_t)s->seq_len, hd = (size_t)head_dim, width = (size_t)heads * hd, K = (size_t)k, half = (K - 1) / 2;
    float p[1024]; /* k <= 1023 (config.c) */
    for (size_t b = 0; b < (size_t)s->batch; b++) {
        size_t first = s->pad ? (size_t)s->pad[b] : 0;
        for (size_t t = 0; t < T; t++) {
            size_t n = b * T + t;
            for (size_t h = 0; h < (size_t)heads; h++) {
                float *o = out + n * width + h * hd;
                const float *l = logits + n * logits_stride + h * K;
                float most = l[0], sum = 0.0f;
                for (size_t j = 1; j < K; j++) most = l[j] > most ? l[j] : most;
                for (size_t j = 0; j < K; j++) sum += p[j] = expf(l[j] - most);
                for (size_t i = 0; i < hd; i++) o[i] = 0.0f;
                if (t < first) continue;
                for (size_t j = 0; j < K; j++) {
                    if (t + j < first + half || t + j >= T + half) continue; /* beyond the real tokens: zeros */
                    const float *in = v + (n + j - half) * width + h * hd;
                    for (size_t i = 0; i < hd; i++) o[i] += p[j] / sum * in[i];
                }
            }
        }
    }
}

static void pf__cpu_funnel_bias(pf__rank *r, float *out, const float *q, const float *rel, const pf__weight *pos_bias,
                                const pf__weight *type_bias, const pf__weight *seg, const int32_t *ints,
                                const pf__funnel_shape *f) {
    (void)r;
    size_t B = (size_t)f->batch, Tq = (size_t)f->q_len, Tk = (size_t)f->k_len, H = (size_t)f->heads, hd = (size_t)f->head_dim;
    const int32_t *q_pad = ints, *k_pad = ints + B, *q_types = ints + 2 * B, *k_types = q_types + B * Tq;
    for (size_t b = 0; b < B; b++)
        for (size_t i = 0; i < Tq; i++)
            for (size_t h = 0; h < H; h++) {
                size_t n = b * Tq + i;
                float *o = out + (n * H + h) * Tk;
                float pos_q[1024], type_q[1024], same = 0.0f, other = 0.0f; /* head_dim <= 1024 (config.c) */
                for (size_t e = 0; e < hd; e++) {
                    pos_q[e] = q[n * H * hd + h * hd + e] + pf__weight_value(pos_bias->data, h * hd + e, pos_bias->dtype);
                    if (seg) type_q[e] = q[n * H * hd + h * hd + e] + pf__weight_value(type_bias->data, h * hd + e, type_bias->dtype);
                }
                size_t same_row = f->exact_segments ? 0 : 1; /* seg_embed's row of the query's segment */
                for (size_t e = 0; seg && e < hd; e++) {
                    other += type_q[e] * pf__weight_value(seg->data, (1 - same_row) * H * hd + h * hd + e, seg->dtype);
                    same += type_q[e] * pf__weight_value(seg->data, same_row * H * hd + h * hd + e, seg->dtype);
                }
                for (size_t j = 0; j < Tk; j++) {
                    long qi = (long)i - q_pad[b], kj = (long)j - k_pad[b];
                    o[j] = 0.0f;
                    if (qi < 0 || kj < 0 || (f->separate_cls && (qi == 0 || kj == 0))) continue;
                    long distance = f->q_first + qi * f->q_stride - f->k_first - kj * f->k_stride;
                    if ((f->causal && distance < 0) || (f->window > 0 && distance >= f->window)) {
                        o[j] = -INFINITY;
                        continue;
                    }
                    const float *row = rel + (size_t)((distance - f->rel_first) / f->k_stride) * H * hd + h * hd;
                    float position = 0.0f;
                    for (size_t e = 0; e < hd; e++) position += pos_q[e] * row[e];
                    if (!seg) { /* no segment term (Transformer-XL) */
                        o[j] = f->scale * position;
                        continue;
                    }
                    int32_t tq = q_types[n], tk = k_types[b * Tk + j];
                    int same_segment = tq == tk || (!f->exact_segments && (tq == 2 || tk == 2));
                    o[j] = f->scale * (position + (same_segment ? same : other));
                }
            }
}

/* Reformer's score of query qh against listed key entry (position * 4 + code) of the k rows:
   q . key, the key length-normalised (LSH's shared query-key) or not, over sqrt(head_dim); a
   masked key -1e9, the query's own position (LSH) -1e5, as transformers' mask values. */
static float pf__reformer_score(const float *qh, const float *k, int32_t entry, size_t width, size_t h, size_t hd,
                                int shared_qk) {
    int code = entry & 3;
    if (code == PF__REFORMER_MASKED) return -1e9f;
    if (code == PF__REFORMER_SELF) return -1e5f;
    const float *kh = k + (size_t)(entry >> 2) * width + h * hd;
    float inv = 1.0f, root = sqrtf((float)hd), dot = 0.0f;
    if (shared_qk) {
        float squares = 0.0f;
        for (size_t e = 0; e < hd; e++) squares += kh[e] * kh[e];
        inv = 1.0f / sqrtf(squares / (float)hd + 1e-6f);
    }
    for (size_t e = 0; e < hd; e++) dot += qh[e] * (kh[e] * inv / root);
    return dot;
}

/* pf__backend.reformer_attend: each round's softmax over its listed keys, the rounds weighed by
   their log-sum-exps (the scores computed twice rather than kept: no allocation). */
static void pf__cpu_reformer_attend(pf__rank *r, float *out, const float *q, const float *k, const float *v,
                                    const int32_t *keys, const pf__reformer_shape *a) {
    (void)r;
    size_t H = (size_t)a->heads, hd = (size_t)a->head_dim, width = H * hd, R = (size_t)a->rounds, K = (size_t)a->listed;
    float lse[64]; /* num_hashes <= 64 (config.c) */
    for (size_t h = 0; h < H; h++)
        for (size_t t = 0; t < (size_t)a->len; t++) {
            const float *qh = q + t * width + h * hd;
            float *o = out + t * width + h * hd;
            const int32_t *listed = keys + (h * (size_t)a->len + t) * R * K;
            float top_all = -INFINITY;
            for (size_t round = 0; round < R; round++) {
                const int32_t *row = listed + round * K;
                float top = -INFINITY, sum = 0.0f;
                for (size_t j = 0; j < K; j++) {
                    float score = pf__reformer_score(qh, k, row[j], width, h, hd, a->shared_qk);
                    if (score > top) top = score;
                }
                for (size_t j = 0; j < K; j++) sum += expf(pf__reformer_score(qh, k, row[j], width, h, hd, a->shared_qk) - top);
                lse[round] = top + logf(sum);
                if (lse[round] > top_all) top_all = lse[round];
            }
            float total = 0.0f;
            for (size_t round = 0; round < R; round++) total += expf(lse[round] - top_all);
            total = R == 1 ? lse[0] : top_all + logf(total);
            for (size_t e = 0; e < hd; e++) o[e] = 0.0f;
            for (size_t round = 0; round < R; round++) {
                const int32_t *row = listed + round * K;
                float weight = expf(lse[round] - total);
                for (size_t j = 0; j < K; j++) {
                    float p = expf(pf__reformer_score(qh, k, row[j], width, h, hd, a->shared_qk) - lse[round]) * weight;
                    const float *vh = v + (size_t)(row[j] >> 2) * width + h * hd;
                    for (size_t e = 0; e < hd; e++) o[e] += p * vh[e];
                }
            }
        }
}

static void pf__cpu_scatter_add_rows(pf__rank *r, float *dst, const float *src, const int32_t *rows, const float *scales,
                                     size_t count, size_t width) {
    (void)r;
    for (size_t i = 0; i < count; i++) {
        float *out = dst + (size_t)rows[i] * width;
        const float *in = src + i * width;
        if (!scales) for (size_t k = 0; k < width; k++) out[k] += in[k];
        else for (size_t k = 0; k < width; k++) out[k] += scales[i] * in[k];
    }
}

PF_PRIVATE const pf__backend pf__cpu_backend = {
    .name = "cpu",
    .host_memory = 1,
    .rank_begin = pf__cpu_rank_begin,
    .rank_end = pf__cpu_rank_end,
    .alloc = pf__cpu_alloc,
    .free = pf__cpu_free,
    .upload = pf__cpu_copy,
    .download = pf__cpu_copy,
    .download_rows = pf__cpu_download_rows,
    .copy = pf__cpu_copy,
    .embed = pf__cpu_embed,
    .add_positions = pf__cpu_add_positions,
    .norm = pf__cpu_norm,
    .matmul = pf__cpu_matmul,
    .activation = pf__cpu_activation,
    .softcap = pf__cpu_softcap,
    .gated_activation = pf__cpu_gated_activation,
    .clamped_swiglu = pf__cpu_clamped_swiglu,
    .attention_sinks = 1,
    .add_residual = pf__cpu_add_residual,
    .scale = pf__cpu_scale,
    .head_norm = pf__cpu_head_norm,
    .scale_queries = pf__cpu_scale_queries,
    .clamp = pf__cpu_clamp,
    .qk_sum_squares = pf__cpu_qk_sum_squares,
    .qk_scale = pf__cpu_qk_scale,
    .rotary = pf__cpu_rotary,
    .kv_append = pf__cpu_kv_append,
    .attend = pf__cpu_attend,
    .latent_append = pf__cpu_latent_append,
    .latent_attend = pf__cpu_latent_attend,
    .disentangled_bias = pf__cpu_disentangled_bias,
    .all_reduce = pf__cpu_all_reduce,
    .reorder_rows = pf__cpu_reorder_rows,
    .device_memory = pf__cpu_device_memory,
    .alloc_scratch = pf__cpu_alloc_scratch,
    .gather_rows = pf__cpu_gather_rows,
    .depthwise_conv = pf__cpu_depthwise_conv,
    .multiply = pf__cpu_multiply,
    .span_conv = pf__cpu_span_conv,
    .funnel_bias = pf__cpu_funnel_bias,
    .reformer_attend = pf__cpu_reformer_attend,
    .ngram_attend = pf__cpu_ngram_attend,
    .scatter_add_rows = pf__cpu_scatter_add_rows,
    /* The optional ops stay NULL: the host takes the arg-max and samples from downloaded logits,
       residual, norm and biases run as separate passes over host memory, the GEMMs add their
       biases, and a decoder step runs every op as it comes. */
};

