/* The CPU backend's kernel table on plain arrays, through the library's test hooks (no model
   loaded): the matmul tiles in every weight dtype (fp32, fp16, bf16, Q8_0, Q4_0, bf16 products),
   attention's loops for the prompt and for decode, the activations and softmax's exponentials,
   the quantizers, and the sums of norms and softmax, each on every kernel set the machine has
   (the default one, AVX2, portable, no-AMX) against exact arithmetic or the portable kernels.
   The model fixtures that run on these kernels are in test_models.c. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../parallelformers.h"
#include "test.h"
#include "testing_hooks.h"

#ifdef PF_TESTING
#ifdef __aarch64__ /* ARM64's kernel sets in the x86 hooks' places (kernel_names) */
#define pf_testing_avx2_cpu pf_testing_neon_cpu
#define pf_testing_no_amx_cpu pf_testing_no_i8mm_cpu
#endif
/* x[rows][k] w[n][k]: uniform in [-1, 1) and [-0.05, 0.05), from a fixed LCG. */
static void random_fill(float *v, size_t n, float scale, uint64_t *state) {
    for (size_t i = 0; i < n; i++) {
        *state = *state * 6364136223846793005ull + 1442695040888963407ull;
        v[i] = scale * ((float)(*state >> 40) / (float)(1u << 24) * 2.0f - 1.0f);
    }
}

/* The fp16 bits of a value fp16 holds exactly. */
static uint16_t fp16_bits(float v) {
    uint32_t x;
    memcpy(&x, &v, 4);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    float a = fabsf(v);
    if (a == 0.0f) return sign;
    if (a < 6.103515625e-05f) return (uint16_t)(sign | (uint16_t)(a * 16777216.0f)); /* subnormal: units of 2^-24 */
    return (uint16_t)(sign | (((x >> 23 & 0xff) - 112) << 10) | ((x >> 13) & 0x3ff));
}

/* The CPU matmul at a size the fixtures never reach (many fp32 chunks and cache blocks, ragged
   tiles), on each kernel: close to the exact sum, and a slice of the columns (as a rank holds
   after a row split) sums exactly what the whole sums over those columns. */
static void test_cpu_matmul(void) {
    enum { ROWS = 37, OUTS = 101, K = 3001 };
    float *x = malloc(sizeof(float) * ROWS * K), *w = malloc(sizeof(float) * OUTS * K), bias[OUTS];
    float *whole = malloc(sizeof(float) * ROWS * OUTS), *part = malloc(sizeof(float) * ROWS * OUTS);
    float *x_slice = malloc(sizeof(float) * ROWS * K), *w_slice = malloc(sizeof(float) * OUTS * K);
    float *w_zeroed = malloc(sizeof(float) * OUTS * K);
    uint64_t state = 42;
    random_fill(x, (size_t)ROWS * K, 1.0f, &state);
    random_fill(w, (size_t)OUTS * K, 0.05f, &state);
    random_fill(bias, OUTS, 0.5f, &state);
    for (int kind = 0; kind < 3; kind++) { /* default, AVX2, portable */
        pf_testing_avx2_cpu = kind == 1;
        pf_testing_portable_cpu = kind == 2;
        const char *kernel = kind == 2 ? "portable" : kind == 1 ? "AVX2" : "default";
        pf_testing_cpu_matmul(whole, x, w, 0, bias, ROWS, OUTS, K, 0);
        /* An fp32 lane sums at most 32 products (a 256-input chunk over 8 lanes, a 512-input one
           over 16) before the sum goes to double: its error stays well under 2^-18 of the sum of
           |products|. */
        double worst = 0;
        for (int r = 0; r < ROWS; r++)
            for (int o = 0; o < OUTS; o++) {
                double exact = bias[o], magnitude = fabs(bias[o]);
                for (int i = 0; i < K; i++) {
                    exact += (double)x[r * K + i] * w[o * K + i];
                    magnitude += fabs((double)x[r * K + i] * w[o * K + i]);
                }
                double err = fabs(whole[r * OUTS + o] - exact) / magnitude;
                if (err > worst) worst = err;
            }
        CHECK_MSG(worst < 1.0 / (1 << 18), "%s matmul: error %g of the sum of |products|", kernel, worst);
        /* Columns [begin, end): boundaries on and off the chunk grid (multiples of the 8 lanes). */
        static const size_t ranges[][2] = {{0, 1000}, {1000, 2104}, {2104, K}, {256, 2048}, {1024, 1032}, {8, K}};
        for (size_t c = 0; c < sizeof ranges / sizeof ranges[0]; c++) {
            size_t begin = ranges[c][0], width = ranges[c][1] - begin;
            for (int r = 0; r < ROWS; r++) memcpy(x_slice + r * width, x + r * K + begin, width * sizeof(float));
            memset(w_zeroed, 0, sizeof(float) * OUTS * K);
            for (int o = 0; o < OUTS; o++) {
                memcpy(w_slice + o * width, w + o * K + begin, width * sizeof(float));
                memcpy(w_zeroed + o * K + begin, w + o * K + begin, width * sizeof(float));
            }
            pf_testing_cpu_matmul(part, x_slice, w_slice, 0, bias, ROWS, OUTS, width, begin);
            pf_testing_cpu_matmul(whole, x, w_zeroed, 0, bias, ROWS, OUTS, K, 0);
            CHECK_MSG(memcmp(part, whole, sizeof(float) * ROWS * OUTS) == 0,
                      "%s matmul: columns %zu..%zu alone differ from the whole with the rest zeroed", kernel, begin,
                      begin + width);
        }
    }
    /* fp16 and bf16 weights, whole and sliced: bit for bit the fp32 product of the values they
       hold (the 16-input steps, chunk ends and tails of the 16-bit tiles at this size). */
    uint16_t *w16 = malloc(sizeof(uint16_t) * OUTS * K);
    for (int kind = 0; kind < 3; kind++) /* default, AVX2, portable */
        for (int dtype = 1; dtype <= 2; dtype++) { /* 1 fp16, 2 bf16 */
            pf_testing_avx2_cpu = kind == 1;
            pf_testing_portable_cpu = kind == 2;
            for (size_t i = 0; i < (size_t)OUTS * K; i++) {
                float v = dtype == 1 ? test_round_to_format(w[i], 10, -24) : test_round_to_format(w[i], 7, -133);
                uint32_t bits;
                memcpy(&bits, &v, 4);
                w_zeroed[i] = v;
                w16[i] = dtype == 1 ? fp16_bits(v) : (uint16_t)(bits >> 16);
            }
            for (size_t begin = 0; begin <= 1000; begin += 1000) { /* whole, then a slice off the 16-grid
                                                                      (w16 refilled per dtype above) */
                size_t width = K - begin;
                for (int o = 0; o < OUTS; o++) {
                    memcpy(w_slice + o * width, w_zeroed + o * K + begin, width * sizeof(float));
                    memmove(w16 + o * width, w16 + o * K + begin, width * sizeof(uint16_t)); /* rows packed in place */
                }
                for (int r = 0; r < ROWS; r++) memcpy(x_slice + r * width, x + r * K + begin, width * sizeof(float));
                pf_testing_cpu_matmul(part, x_slice, w16, dtype, bias, ROWS, OUTS, width, begin);
                pf_testing_cpu_matmul(whole, x_slice, w_slice, 0, bias, ROWS, OUTS, width, begin);
                CHECK_MSG(memcmp(part, whole, sizeof(float) * ROWS * OUTS) == 0,
                          "%s matmul: %s weights (columns %zu..) differ from fp32 ones of the same values",
                          kind == 2 ? "portable" : kind == 1 ? "AVX2" : "default", dtype == 1 ? "fp16" : "bf16", begin);
            }
        }
    pf_testing_avx2_cpu = pf_testing_portable_cpu = 0;
    free(w16);
    free(x), free(w), free(whole), free(part), free(x_slice), free(w_slice), free(w_zeroed);
}

/* The CPU kernel sets the matmul tests run (pf_testing_*_cpu): 0 the default (AVX-512 tiles,
   VNNI, and AMX for Q8/Q4 from 16 rows of x, where present), 1 AVX2, 2 portable, 3 the default
   less AMX. On ARM64 the same places hold its sets: 1 NEON alone, 3 the default less smmla (NEON
   with sdot where the processor has FEAT_DotProd), so every test below runs each of them; the
   hooks are renamed at the top of this file rather than at each of the tests' thirty uses. */
#ifdef __aarch64__
static const char *const kernel_names[] = {"default", "NEON", "portable", "no-i8mm"};
#else
static const char *const kernel_names[] = {"default", "AVX2", "portable", "no-AMX"};
#endif

/* Small odd shapes (rows, weight rows and inputs off every tile and chunk size, slices off the
   8-input grid) in each weight dtype, on each kernel set (the default one: AVX-512's 16-lane tiles
   where present; AVX2; portable; on ARM64 NEON, with the portable bits): within 2^-18 of the sum
   of |products| of the portable sums, and
   an output the same bit for bit whichever tile computed it: a row of x alone (decode's tiles) as
   in the batch, and the last weight rows alone (a rank's share of a column split) as among all. */
static void test_cpu_matmul_shapes(void) {
    static const size_t rows_list[] = {1, 2, 3, 5, 7, 9, 13, 50}, outs_list[] = {1, 5, 7, 13, 97};
    static const size_t k_list[][2] = {{1, 0}, {7, 0}, {17, 3}, {300, 250}, {600, 9}}; /* inputs, col_begin */
    enum { MAX = 50 * 600 + 97 * 600 };
    float *x = malloc(sizeof(float) * MAX), *w = malloc(sizeof(float) * MAX), bias[97];
    float *out[3] = {malloc(sizeof(float) * 50 * 97), malloc(sizeof(float) * 50 * 97), malloc(sizeof(float) * 50 * 97)};
    float *part = malloc(sizeof(float) * 50 * 97);
    uint16_t *w16 = malloc(sizeof(uint16_t) * MAX);
    uint64_t state = 7;
    random_fill(x, MAX, 1.0f, &state);
    random_fill(w, MAX, 0.05f, &state);
    random_fill(bias, 97, 0.5f, &state);
    int failures = 0;
    for (int dtype = 0; dtype <= 2; dtype++) {
        for (size_t i = 0; i < MAX && dtype; i++) {
            float v = dtype == 1 ? test_round_to_format(w[i], 10, -24) : test_round_to_format(w[i], 7, -133);
            uint32_t bits;
            memcpy(&bits, &v, 4);
            w16[i] = dtype == 1 ? fp16_bits(v) : (uint16_t)(bits >> 16);
        }
        const void *weights = dtype ? (const void *)w16 : (const void *)w;
        size_t wsize = dtype ? sizeof(uint16_t) : sizeof(float);
        for (size_t a = 0; a < sizeof rows_list / sizeof rows_list[0]; a++)
            for (size_t b = 0; b < sizeof outs_list / sizeof outs_list[0]; b++)
                for (size_t c = 0; c < sizeof k_list / sizeof k_list[0]; c++) {
                    size_t rows = rows_list[a], outs = outs_list[b], k = k_list[c][0], begin = k_list[c][1];
                    for (int kind = 0; kind < 3; kind++) {
                        pf_testing_avx2_cpu = kind == 1;
                        pf_testing_portable_cpu = kind == 2;
                        pf_testing_cpu_matmul(out[kind], x, weights, dtype, bias, rows, outs, k, begin);
                        int row_alone_same = 1, outs_alone_same = 1;
                        for (size_t r = 0; r < rows; r++) {
                            pf_testing_cpu_matmul(part, x + r * k, weights, dtype, bias, 1, outs, k, begin);
                            row_alone_same &= memcmp(part, out[kind] + r * outs, sizeof(float) * outs) == 0;
                        }
                        size_t first = outs / 2, n = outs - first;
                        pf_testing_cpu_matmul(part, x, (const char *)weights + first * k * wsize, dtype, bias + first,
                                              rows, n, k, begin);
                        for (size_t r = 0; r < rows; r++)
                            outs_alone_same &= memcmp(part + r * n, out[kind] + r * outs + first, sizeof(float) * n) == 0;
                        if ((!row_alone_same || !outs_alone_same) && failures++ < 5)
                            CHECK_MSG(0, "%s matmul %zux%zux%zu (columns %zu..) dtype %d: %s differ", kernel_names[kind],
                                      rows, outs, k, begin, dtype,
                                      !row_alone_same ? "rows alone and in the batch" : "weight rows alone and among all");
                    }
                    pf_testing_avx2_cpu = pf_testing_portable_cpu = 0;
                    for (int kind = 0; kind < 2; kind++) {
                        double worst = 0;
                        for (size_t r = 0; r < rows; r++)
                            for (size_t o = 0; o < outs; o++) {
                                double magnitude = fabs(bias[o]);
                                for (size_t i = 0; i < k; i++) magnitude += fabs((double)x[r * k + i] * w[o * k + i]);
                                double err = fabs(out[kind][r * outs + o] - out[2][r * outs + o]) / magnitude;
                                if (err > worst) worst = err;
                            }
                        if (worst >= 1.0 / (1 << 18) && failures++ < 5)
                            CHECK_MSG(0, "%s matmul %zux%zux%zu (columns %zu..) dtype %d: %g from portable",
                                      kernel_names[kind], rows, outs, k, begin, dtype, worst);
                    }
#ifdef __aarch64__
                    /* NEON's tiles sum as the portable ones do (exact products in double lanes) */
                    if (memcmp(out[0], out[2], sizeof(float) * rows * outs) && failures++ < 5)
                        CHECK_MSG(0, "NEON matmul %zux%zux%zu (columns %zu..) dtype %d: bits differ from portable's", rows,
                                  outs, k, begin, dtype);
#endif
                }
    }
    CHECK(failures == 0);
    free(x), free(w), free(w16), free(part), free(out[0]), free(out[1]), free(out[2]);
}


/* Q8 and Q4 weights, built here as llama.cpp lays out Q8_0 (an fp16 scale d = max|w| / 127 rounded
   to fp16, then round(w / d) in -127..127) and Q4_0 (d = m / -8 for the value m of largest
   magnitude, rounded to fp16, then q = min(15, floor(w / d + 8.5)) as nibbles, low ones first):
   the library's quantizers write the same bytes, and every kernel set's product (the activations
   quantized per 32-input block as Q8, integer dot products) is the exact sum of the blocks'
   integer dots times their scales, within fp32 rounding, at tile tails (1-67 weight rows; 1, 2
   and 5 rows of x on the vector kernels, from 5 on AVX2's repacked panels, 16 and 37 on AMX where
   present) and odd block counts.
   Every kernel set gives the same bits (one fp32 chain of block products, in block order), and a
   row alone (decode) gives what it gives in a batch. */
static void test_cpu_q8_kernels(int q4) {
    /* 40 blocks: more than the AVX2 prefill kernel repacks at once (PF__PANEL_BLOCKS) */
    static const size_t rows_list[] = {1, 2, 5, 16, 37}, outs_list[] = {1, 3, 4, 5, 9, 67}, blocks_list[] = {1, 2, 3, 24, 40};
    enum { MAXR = 37, MAXO = 67, MAXK = 40 * 32 };
    const size_t BYTES = q4 ? 18 : 34;
    float *x = malloc(sizeof(float) * MAXR * MAXK), *w = malloc(sizeof(float) * MAXO * MAXK), bias[MAXO];
    float *out = malloc(sizeof(float) * MAXR * MAXO), *copy = malloc(sizeof(float) * MAXO * MAXK);
    unsigned char *q8 = malloc((size_t)MAXO * (MAXK / 32) * 34);
    int8_t *values = malloc((size_t)MAXO * MAXK); /* each weight's integer value (Q4: q - 8) */
    int8_t *qx = malloc(MAXR * MAXK);
    float *dx = malloc(sizeof(float) * MAXR * (MAXK / 32)), *dw = malloc(sizeof(float) * MAXO * (MAXK / 32));
    uint64_t state = 11;
    random_fill(x, MAXR * MAXK, 1.0f, &state);
    random_fill(w, MAXO * MAXK, 0.05f, &state);
    random_fill(bias, MAXO, 0.5f, &state);
    x[3] = 0; /* a block of zeros in the activations' last row: scale 0 */
    for (size_t i = 0; i < 32; i++) x[(MAXR - 1) * MAXK + i] = 0.0f;
    int failures = 0;
    for (size_t c = 0; c < sizeof blocks_list / sizeof blocks_list[0]; c++) {
        size_t nb = blocks_list[c], k = nb * 32;
        /* the weights [MAXO][k] as Q8 blocks, by the layout's definition */
        for (size_t o = 0; o < MAXO; o++)
            for (size_t b = 0; b < nb; b++) {
                const float *v = w + o * MAXK + b * 32;
                float largest = 0, extreme = 0;
                for (int i = 0; i < 32; i++) {
                    largest = fmaxf(largest, fabsf(v[i]));
                    if (fabsf(v[i]) > fabsf(extreme)) extreme = v[i];
                }
                float d = test_round_to_format(q4 ? extreme / -8.0f : largest / 127.0f, 10, -24);
                uint16_t bits = fp16_bits(d);
                unsigned char *block = q8 + (o * nb + b) * BYTES;
                memcpy(block, &bits, 2);
                dw[o * nb + b] = d;
                int8_t *value = values + o * MAXK + b * 32;
                for (int i = 0; i < 32; i++) {
                    if (!q4) {
                        value[i] = (int8_t)roundf(v[i] / d);
                        block[2 + i] = (unsigned char)value[i];
                    } else {
                        float t = floorf(v[i] * (1.0f / d) + 8.5f);
                        int q = t < 0 ? 0 : t > 15 ? 15 : (int)t;
                        value[i] = (int8_t)(q - 8);
                        if (i < 16) block[2 + i] = (unsigned char)q;
                        else block[2 + i - 16] |= (unsigned char)(q << 4);
                    }
                }
                memcpy(copy + (o * nb + b) * 32, v, sizeof(float) * 32);
            }
        if (q4) pf_testing_q4_quantize(copy, MAXO, k);
        else pf_testing_q8_quantize(copy, MAXO, k);
        if (memcmp(copy, q8, (size_t)MAXO * nb * BYTES) && failures++ < 5)
            CHECK_MSG(0, "%s quantizer: %zu blocks a row differ from the layout's definition", q4 ? "Q4" : "Q8", nb);
        if (!q4) /* weights of -128 in row 1's first block: a GGUF file may hold them (ours never do) */
            for (int i = 3; i < 32; i += 14) {
                q8[nb * BYTES + 2 + i] = 0x80;
                values[MAXK + i] = -128;
            }
        for (size_t r = 0; r < MAXR; r++) /* the activations as the product quantizes them */
            for (size_t b = 0; b < nb; b++) {
                const float *v = x + r * MAXK + b * 32;
                float largest = 0;
                for (int i = 0; i < 32; i++) largest = fmaxf(largest, fabsf(v[i]));
                float d = largest / 127.0f, inverse = d > 0 ? 1.0f / d : 0.0f;
                dx[r * nb + b] = d;
                for (int i = 0; i < 32; i++) qx[r * k + b * 32 + i] = (int8_t)roundf(v[i] * inverse);
            }
        for (size_t a = 0; a < sizeof rows_list / sizeof rows_list[0]; a++)
            for (size_t e = 0; e < sizeof outs_list / sizeof outs_list[0]; e++)
                for (int kind = 0; kind < 4; kind++) {
                    size_t rows = rows_list[a], outs = outs_list[e];
                    static float default_out[MAXR * MAXO];
                    float xs[MAXR * MAXK];
                    for (size_t r = 0; r < rows; r++) /* the last rows, so the zero block takes part */
                        memcpy(xs + r * k, x + (MAXR - rows + r) * MAXK, sizeof(float) * k);
                    pf_testing_avx2_cpu = kind == 1;
                    pf_testing_portable_cpu = kind == 2;
                    pf_testing_no_amx_cpu = kind == 3;
                    pf_testing_cpu_matmul(out, xs, q8, q4 ? 4 : 3, bias, rows, outs, k, 0);
                    /* a row alone (decode's kernel) gives what it gives in the batch, bit for bit */
                    float alone[MAXO];
                    int row_alone_same = 1;
                    for (size_t r = 0; r < rows; r++) {
                        pf_testing_cpu_matmul(alone, xs + r * k, q8, q4 ? 4 : 3, bias, 1, outs, k, 0);
                        row_alone_same &= memcmp(alone, out + r * outs, sizeof(float) * outs) == 0;
                    }
                    pf_testing_avx2_cpu = pf_testing_portable_cpu = pf_testing_no_amx_cpu = 0;
                    /* every kernel set computes the one defined chain of block products: same bits */
                    if (kind == 0) memcpy(default_out, out, sizeof(float) * rows * outs);
                    if (kind > 0 && memcmp(default_out, out, sizeof(float) * rows * outs) && failures++ < 5)
                        CHECK_MSG(0, "%s matmul %zux%zux%zu: the default kernels' bits differ from %s's", q4 ? "Q4" : "Q8",
                                  rows, outs, k, kernel_names[kind]);
                    if (!row_alone_same && failures++ < 5)
                        CHECK_MSG(0, "%s matmul %zux%zux%zu (%s kernels): a row alone differs from the batch's",
                                  q4 ? "Q4" : "Q8", rows, outs, k, kernel_names[kind]);
                    double worst = 0;
                    for (size_t r = 0; r < rows; r++)
                        for (size_t o = 0; o < outs; o++) {
                            size_t row = MAXR - rows + r;
                            double exact = bias[o], magnitude = fabs(bias[o]);
                            for (size_t b = 0; b < nb; b++) {
                                long dot = 0;
                                for (int i = 0; i < 32; i++)
                                    dot += (long)qx[row * k + b * 32 + i] * values[o * MAXK + b * 32 + i];
                                double term = (double)dot * dx[row * nb + b] * dw[o * nb + b];
                                exact += term;
                                magnitude += fabs(term);
                            }
                            double err = fabs(out[r * outs + o] - exact) / magnitude;
                            if (err > worst) worst = err;
                        }
                    if (worst > 1e-5 && failures++ < 5)
                        CHECK_MSG(0, "%s matmul %zux%zux%zu (%s kernels): %g of the sum of |terms| from exact",
                                  q4 ? "Q4" : "Q8", rows, outs, k, kernel_names[kind],
                                  worst);
                }
    }
    CHECK(failures == 0);
    free(x), free(w), free(out), free(copy), free(q8), free(values), free(qx), free(dx), free(dw);
}


/* The sums of norms and softmax (x - shift, or its squares, over n values in double) give the
   same bits on every kernel set, within double's rounding of the exact sum, for lengths around
   the 16 chains and past them; the residual add and a norm's scaling of a row give the bits of
   their expressions as written, with and without y or the bias. */
static void test_cpu_sum_shifted(void) {
    static const size_t lengths[] = {0, 1, 15, 16, 17, 31, 64, 768, 1001};
    float x[1001];
    uint64_t state = 31;
    random_fill(x, 1001, 4.0f, &state);
    for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++)
        for (int squares = 0; squares <= 1; squares++) {
            size_t n = lengths[i];
            double shift = squares ? 0.3 : 0.0, sums[3];
            for (int set = 0; set < 3; set++) {
                pf_testing_avx2_cpu = set == 1, pf_testing_portable_cpu = set == 2;
                sums[set] = pf_testing_cpu_sum_shifted(x, n, shift, squares);
            }
            pf_testing_avx2_cpu = pf_testing_portable_cpu = 0;
            long double exact = 0, magnitude = 0;
            for (size_t k = 0; k < n; k++) {
                long double d = (long double)x[k] - shift, term = squares ? d * d : d;
                exact += term;
                magnitude += fabsl(term);
            }
            CHECK_MSG(memcmp(&sums[0], &sums[1], sizeof(double)) == 0 && memcmp(&sums[0], &sums[2], sizeof(double)) == 0,
                      "sum of %zu values (squares %d): default %.17g, AVX2 %.17g, portable %.17g", n, squares, sums[0],
                      sums[1], sums[2]);
            CHECK_MSG(fabsl(sums[0] - exact) <= (long double)(n + 1) * DBL_EPSILON * magnitude,
                      "sum of %zu values (squares %d): %.17g, exact %.17Lg", n, squares, sums[0], exact);
        }
    float y[1001], g[1001], b[1001], got[1001], want[1001];
    random_fill(y, 1001, 2.0f, &state);
    random_fill(g, 1001, 1.5f, &state);
    random_fill(b, 1001, 0.5f, &state);
    for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++)
        for (int with = 0; with < 4; with++) /* y and b present or not */
            for (int set = 0; set < 3; set++) {
                size_t n = lengths[i];
                const float *yy = with & 1 ? y : NULL, *bb = with & 2 ? b : NULL;
                pf_testing_avx2_cpu = set == 1, pf_testing_portable_cpu = set == 2;
                memcpy(got, x, sizeof(float) * n);
                pf_testing_cpu_add_rows(got, yy, bb, n);
                int same = 1;
                for (size_t k = 0; k < n; k++) {
                    want[k] = x[k] + ((yy ? yy[k] : 0.0f) + (bb ? bb[k] : 0.0f));
                    same &= memcmp(&got[k], &want[k], sizeof(float)) == 0;
                }
                CHECK_MSG(same, "residual add of %zu values (y %d, bias %d, kernel set %d)", n, with & 1, with >> 1, set);
                pf_testing_cpu_normalize(got, x, n, 0.123456789, 0.87f, g, bb);
                same = 1;
                for (size_t k = 0; k < n; k++) {
                    float scaled = (float)(x[k] - 0.123456789) * 0.87f * g[k];
                    want[k] = bb ? scaled + bb[k] : scaled;
                    same &= memcmp(&got[k], &want[k], sizeof(float)) == 0;
                }
                CHECK_MSG(same, "norm scaling of %zu values (bias %d, kernel set %d)", n, with >> 1, set);
            }
    pf_testing_avx2_cpu = pf_testing_portable_cpu = 0;
}

/* bf16 to nearest even, as the test defines it (no NaN here). */
static uint16_t bf16_bits(float v) {
    uint32_t x;
    memcpy(&x, &v, 4);
    return (uint16_t)((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

static float bf16_value(uint16_t h) {
    uint32_t x = (uint32_t)h << 16;
    float v;
    memcpy(&v, &x, 4);
    return v;
}

/* The product bf16_products runs (x rounded to bf16, exact products summed in fp32): on AMX-BF16
   where present (k a multiple of 32), on the fp32 tiles over a rounded copy otherwise (k = 40, and
   every k without AMX or on the portable kernels), for 1 to 37 rows of x and 1 to 67 weight rows
   (whole tiles of 16, a padded tail, one and two x groups). Each output is within fp32's
   summation bound, (k + 1) units of 2^-24 of the sum of |terms|, of the exact sum of bf16(x) w
   plus bias (an unrounded x is 2^-9 of a term off, which the short rows see); a row alone (decode)
   gives the bits it gives in the batch; a NaN in x makes its row's outputs NaN and no other's. */
static void test_cpu_bf16_products_kernel(void) {
    static const size_t rows_list[] = {1, 2, 5, 16, 17, 37}, outs_list[] = {1, 15, 16, 17, 33, 67},
                        ks[] = {32, 40, 64, 96, 768};
    enum { MAXR = 37, MAXO = 67, MAXK = 768 };
    float *x = malloc(sizeof(float) * MAXR * MAXK), *wf = malloc(sizeof(float) * MAXO * MAXK), bias[MAXO];
    float *out = malloc(sizeof(float) * MAXR * MAXO), alone[MAXO];
    uint16_t *w = malloc(sizeof(uint16_t) * MAXO * MAXK);
    uint64_t state = 23;
    random_fill(x, MAXR * MAXK, 1.0f, &state);
    random_fill(wf, MAXO * MAXK, 0.05f, &state);
    random_fill(bias, MAXO, 0.5f, &state);
    int failures = 0;
    for (size_t c = 0; c < sizeof ks / sizeof ks[0]; c++) {
        size_t k = ks[c];
        for (size_t i = 0; i < MAXO * k; i++) w[i] = bf16_bits(wf[i]);
        for (size_t a = 0; a < sizeof rows_list / sizeof rows_list[0]; a++)
            for (size_t e = 0; e < sizeof outs_list / sizeof outs_list[0]; e++)
                for (int kind = 0; kind < 3; kind++) {
                    size_t rows = rows_list[a], outs = outs_list[e];
                    const char *name = kind == 0 ? "default" : kind == 1 ? "no-AMX" : "portable";
                    pf_testing_no_amx_cpu = kind == 1;
                    pf_testing_portable_cpu = kind == 2;
                    pf_testing_cpu_matmul_bf16_products(out, x, w, bias, rows, outs, k);
                    int row_alone_same = 1;
                    for (size_t r = 0; r < rows; r++) {
                        pf_testing_cpu_matmul_bf16_products(alone, x + r * k, w, bias, 1, outs, k);
                        row_alone_same &= memcmp(alone, out + r * outs, sizeof(float) * outs) == 0;
                    }
                    pf_testing_no_amx_cpu = pf_testing_portable_cpu = 0;
                    if (!row_alone_same && failures++ < 5)
                        CHECK_MSG(0, "bf16 products %zux%zux%zu (%s): a row alone differs from the batch's", rows, outs,
                                  k, name);
                    double worst = 0;
                    for (size_t r = 0; r < rows; r++)
                        for (size_t o = 0; o < outs; o++) {
                            double exact = bias[o], magnitude = fabs(bias[o]);
                            for (size_t i = 0; i < k; i++) {
                                double term = (double)bf16_value(bf16_bits(x[r * k + i])) * bf16_value(w[o * k + i]);
                                exact += term;
                                magnitude += fabs(term);
                            }
                            double err = fabs(out[r * outs + o] - exact) / magnitude;
                            if (!(err <= worst)) worst = err; /* NaN too */
                        }
                    if (!(worst <= (double)(k + 1) * FLT_EPSILON / 2) && failures++ < 5)
                        CHECK_MSG(0, "bf16 products %zux%zux%zu (%s): %g of the sum of |terms| from exact", rows, outs, k,
                                  name, worst);
                }
        /* a NaN in row 1 of 5 */
        float keep = x[k + 3];
        x[k + 3] = NAN;
        for (int kind = 0; kind < 2; kind++) {
            pf_testing_no_amx_cpu = kind;
            pf_testing_cpu_matmul_bf16_products(out, x, w, bias, 5, 17, k);
            pf_testing_no_amx_cpu = 0;
            int nan_right = 1;
            for (size_t r = 0; r < 5; r++)
                for (size_t o = 0; o < 17; o++) nan_right &= (r == 1) == (isnan(out[r * 17 + o]) != 0);
            CHECK_MSG(nan_right, "bf16 products 5x17x%zu (%s): a NaN in row 1 of x reaches exactly that row", k,
                      kind ? "no-AMX" : "default");
        }
        x[k + 3] = keep;
    }
    CHECK(failures == 0);
    free(x), free(wf), free(out), free(w);
}

/* The quantizers round as llama.cpp's do (roundf: halves away from zero; Q4: floorf(w / d + 8.5)),
   on values placed exactly at and next to the halves: a block whose scale is 1 keeps them as they
   are. */
static void test_quantizer_rounding(void) {
    static const float halves[] = {2.5f, -2.5f, 0.5f, -0.5f, 0.49999997f, -0.49999997f, 126.5f, -126.5f, 1.5f,
                                   -1.5f, 3.4999998f, -3.4999998f, 64.5f, -64.5f, 0.0f, -0.0f, 100.25f, -99.75f};
    float q8[32], q4[32];
    q8[0] = 127.0f; /* the largest magnitude: the scale is 127 / 127 = 1 */
    q4[0] = -8.0f;  /* Q4's extreme: d = -8 / -8 = 1 */
    for (int i = 1; i < 32; i++) {
        q8[i] = halves[(i - 1) % (sizeof halves / sizeof halves[0])];
        q4[i] = halves[(i - 1) % (sizeof halves / sizeof halves[0])] / 16.0f; /* within Q4's -8..7 */
    }
    float w8[32], w4[32];
    memcpy(w8, q8, sizeof w8);
    memcpy(w4, q4, sizeof w4);
    pf_testing_q8_quantize(w8, 1, 32);
    pf_testing_q4_quantize(w4, 1, 32);
    const unsigned char *b8 = (const unsigned char *)w8, *b4 = (const unsigned char *)w4;
    int bad8 = -1, bad4 = -1;
    for (int i = 0; i < 32; i++) {
        float r = roundf(q8[i]);
        if ((int8_t)b8[2 + i] != (int8_t)(r > 127 ? 127 : r < -127 ? -127 : r)) bad8 = i;
        float f = floorf(q4[i] + 8.5f);
        int nibble = i < 16 ? b4[2 + i] & 15 : b4[2 + i - 16] >> 4;
        if (nibble != (int)(f < 0 ? 0 : f > 15 ? 15 : f)) bad4 = i;
    }
    CHECK_MSG(bad8 < 0, "Q8 rounds %.9g unlike roundf", bad8 < 0 ? 0.0 : (double)q8[bad8]);
    CHECK_MSG(bad4 < 0, "Q4 rounds %.9g unlike floorf(x + 8.5)", bad4 < 0 ? 0.0 : (double)q4[bad4]);
}

/* The activations' quantizer (each 32-value block of a matrix product's input) on every kernel set,
   against its definition: d = max |v| / 127, each value roundf(v / d) (halves away from zero; in
   the code, v times the fp32 1 / d) and the values' sum. Blocks whose scale is 1 (largest 127)
   put values at and next to the halves; others hold NaN (0, passed over by the maximum), an
   infinity (every value 0 or NaN of inf * 0, hence 0), zeros, -0, subnormals and ordinary values. */
static void test_activation_quantizer(void) {
    enum { BLOCKS = 7 };
    static const float halves[] = {2.5f, -2.5f, 0.5f, -0.5f, 0.49999997f, -0.49999997f, 126.5f, -126.5f, 1.5f,
                                   -1.5f, 3.4999998f, -3.4999998f, 64.5f, -64.5f, 0.0f, -0.0f, 100.25f, -99.75f};
    float x[BLOCKS * 32];
    uint64_t state = 5;
    random_fill(x, BLOCKS * 32, 3.0f, &state);
    for (int i = 0; i < 32; i++) x[i] = i == 0 ? 127.0f : halves[(i - 1) % (sizeof halves / sizeof halves[0])];
    for (int i = 0; i < 32; i++) x[32 + i] = i == 31 ? -127.0f : -halves[i % (sizeof halves / sizeof halves[0])];
    x[64 + 5] = NAN;
    x[96 + 30] = INFINITY;
    for (int i = 0; i < 32; i++) x[128 + i] = i % 2 ? 0.0f : -0.0f;
    for (int i = 0; i < 32; i++) x[160 + i] = (float)(i - 16) * 1e-40f; /* subnormal */
    for (int set = 0; set <= 2; set++) {
        pf_testing_portable_cpu = set == 1, pf_testing_avx2_cpu = set == 2;
        const char *name = set == 0 ? "default" : set == 1 ? "portable" : "avx2";
        int8_t qx[BLOCKS * 32];
        float dx[BLOCKS];
        int32_t sx[BLOCKS];
        pf_testing_cpu_quantize_x(qx, dx, sx, x, BLOCKS);
        int bad = -1;
        for (int b = 0; b < BLOCKS; b++) {
            float largest = 0;
            for (int i = 0; i < 32; i++)
                if (fabsf(x[b * 32 + i]) > largest) largest = fabsf(x[b * 32 + i]);
            float d = largest / 127.0f, inverse = d > 0 ? 1.0f / d : 0.0f;
            int32_t sum = 0;
            for (int i = 0; i < 32; i++) {
                float y = x[b * 32 + i] * inverse, r = isnan(y) ? 0.0f : roundf(y);
                int want = r > 127 ? 127 : r < -127 ? -127 : (int)r;
                sum += want;
                if (qx[b * 32 + i] != want) bad = b * 32 + i;
            }
            if (memcmp(&dx[b], &d, sizeof d) != 0 || sx[b] != sum) bad = b * 32;
        }
        CHECK_MSG(bad < 0, "%s activation quantizer: block %d value %d (%.9g) unlike roundf", name, bad / 32, bad % 32,
                  bad < 0 ? 0.0 : (double)x[bad]);
    }
    pf_testing_portable_cpu = 0, pf_testing_avx2_cpu = 0;
}

/* The activations and softmax's exponentials on every kernel set against double-precision
   formulas: within 4 (|a| + 1) fp32 epsilons of the value, for exp's argument a (computing it in
   fp32 takes up to four roundings, each moving e^a by |a| epsilons; the rest is a few roundings;
   GELU with erf: a = z^2 of erfc(z) = e^(-z^2) erfcx(z), whose z = v / sqrt 2 is rounded),
   plus 1e-30 where it underflows; over
   inputs from -120 to 120 (past expf's range both ways) with NaN passing through; and each value
   the same wherever it sits in the array (the vector lanes and the masked tail), as ranks split
   the MLP's columns anywhere. */
static double exp_argument(double v, int act) {
    return act == 0   ? -2 * 0.7978845608028654 * (v + 0.044715 * v * v * v)
           : act == 1 ? v * v / 2 /* GELU erf: erfc(z) = e^(-z^2) erfcx(z), z = v / sqrt 2 */
           : act == 3 ? -v
                      : -1.702 * v;
}

static double exact_activation(double v, int act) {
    switch (act) {
    case 0: return v / (1 + exp(exp_argument(v, act))); /* GELU tanh: 0.5 v (1 + tanh u), without its cancellation */
    case 1: return 0.5 * v * erfc(-v / sqrt(2.0));                                        /* GELU erf, likewise */
    case 3: return v / (1 + exp(-v));                                                    /* SiLU */
    case 5: return v / (1 + exp(-1.702 * v));                                            /* quick GELU */
    }
    return NAN;
}

static void test_cpu_activation_kernels(void) {
    enum { N = 2411 };
    static float x[N], up[N], out[N], alone[16], p[N];
    static const int acts[] = {0, 1, 3, 5};
    for (int i = 0; i < N; i++) x[i] = (float)(i - N / 2) * (120.0f / (N / 2)), up[i] = 0.5f + (float)(i % 7) * 0.25f;
    x[17] = NAN;
    for (int set = 0; set <= 2; set++) {
        pf_testing_portable_cpu = set == 1, pf_testing_avx2_cpu = set == 2;
        const char *name = set == 0 ? "default" : set == 1 ? "portable" : "avx2";
        for (size_t a = 0; a < sizeof acts / sizeof acts[0]; a++) {
            int bad = -1, moved = -1;
            for (int gated = 0; gated <= 1; gated++) {
                pf_testing_cpu_activate(out, x, gated ? up : NULL, N, acts[a]);
                for (int i = 0; i < N; i++) {
                    double want = exact_activation(x[i], acts[a]) * (gated ? up[i] : 1.0);
                    double bound = 4 * FLT_EPSILON * (fabs(exp_argument(x[i], acts[a])) + 1) * fabs(want) + 1e-30;
                    if (i == 17 ? !isnan(out[i]) : !(fabs(out[i] - want) <= bound)) bad = i;
                }
                for (int i = 0; i < N; i += 97) /* the same input alone, at each offset of a short array */
                    for (int at = 0; at < 9; at++) {
                        float v[16] = {0}, m[16] = {0};
                        v[at] = x[i], m[at] = up[i];
                        pf_testing_cpu_activate(alone, v, gated ? m : NULL, (size_t)at + 1, acts[a]);
                        if (memcmp(&alone[at], &out[i], sizeof(float)) != 0) moved = i;
                    }
            }
            CHECK_MSG(bad < 0, "%s activation %d is off at %g", name, acts[a], bad < 0 ? 0.0 : x[bad]);
            CHECK_MSG(moved < 0, "%s activation %d of %g depends on its place", name, acts[a], moved < 0 ? 0.0 : x[moved]);
        }
        int bad = -1;
        for (int shift = -50; shift <= 50; shift += 25) {
            memcpy(p, x, sizeof p);
            pf_testing_cpu_exp_shifted(p, N, (float)shift);
            for (int i = 0; i < N; i++) {
                double want = exp((double)x[i] - shift);
                if (want > 1e38) continue; /* past fp32: softmax's scores never are (the max is subtracted) */
                double bound = 4 * FLT_EPSILON * (fabs((double)x[i] - shift) + 1) * want + 1e-30;
                if (i == 17 ? !isnan(p[i]) : !(fabs(p[i] - want) <= bound)) bad = i;
            }
        }
        CHECK_MSG(bad < 0, "%s exp is off at %g", name, bad < 0 ? 0.0 : x[bad]);
    }
    pf_testing_portable_cpu = 0, pf_testing_avx2_cpu = 0;
    /* the 16-lane kernels (where the default set has them) give the 8-lane ones' bits */
    static float wide[N];
    for (size_t a = 0; a < sizeof acts / sizeof acts[0]; a++) {
        pf_testing_cpu_activate(wide, x, up, N, acts[a]);
        pf_testing_avx2_cpu = 1;
        pf_testing_cpu_activate(out, x, up, N, acts[a]);
        pf_testing_avx2_cpu = 0;
        CHECK_MSG(memcmp(wide, out, sizeof wide) == 0, "activation %d: the default kernels' bits differ from AVX2's", acts[a]);
    }
    memcpy(wide, x, sizeof wide);
    memcpy(out, x, sizeof out);
    pf_testing_cpu_exp_shifted(wide, N, 3.0f);
    pf_testing_avx2_cpu = 1;
    pf_testing_cpu_exp_shifted(out, N, 3.0f);
    pf_testing_avx2_cpu = 0;
    CHECK_MSG(memcmp(wide, out, sizeof wide) == 0, "exp: the default kernels' bits differ from AVX2's");
}

/* Attention's scores (for 1 to 4 queries at once) and weighted sum for 0 to 9 rows of every width
   up to 140 (vector bodies, ragged tails, several 64-wide blocks), rows 150 floats apart, on each
   kernel set, against double arithmetic; outputs past the count or width stay untouched. */
static void test_cpu_attention_kernels(void) {
    enum { STRIDE = 150, ROWS = 9, WIDTH = 140, QUERIES = 4, LD = 16 };
    static float queries[QUERIES][WIDTH], rows[ROWS * STRIDE], w[ROWS], out[QUERIES * LD + WIDTH + 1];
    uint64_t state = 7;
    random_fill(&queries[0][0], QUERIES * WIDTH, 1.0f, &state);
    random_fill(rows, ROWS * STRIDE, 1.0f, &state);
    random_fill(w, ROWS, 1.0f, &state);
    for (int set = 0; set <= 2; set++) { /* default (AVX-512 where there is), portable, AVX2 */
        pf_testing_portable_cpu = set == 1, pf_testing_avx2_cpu = set == 2;
        const char *name = set == 0 ? "default" : set == 1 ? "portable" : "avx2";
        int bad_scores = -1, bad_sum = -1, bad_sums = -1;
        for (size_t count = 0; count <= ROWS; count++)
            for (size_t n = 1; n <= WIDTH; n++) {
                for (int nq = 1; nq <= QUERIES; nq++) {
                    const float *q[QUERIES] = {queries[0], queries[1], queries[2], queries[3]};
                    for (int i = 0; i < QUERIES; i++) out[(size_t)i * LD + count] = 12345.0f;
                    pf_testing_cpu_scores(out, LD, q, nq, rows, STRIDE, count, n);
                    for (int k = 0; k < nq; k++)
                        for (size_t j = 0; j < count; j++) {
                            double exact = 0, magnitude = 0;
                            for (size_t i = 0; i < n; i++) {
                                exact += (double)q[k][i] * rows[j * STRIDE + i];
                                magnitude += fabs((double)q[k][i] * rows[j * STRIDE + i]);
                            }
                            if (fabs(out[(size_t)k * LD + j] - exact) > magnitude / (1 << 20)) bad_scores = (int)(count * 1000 + n);
                        }
                    for (int i = 0; i < QUERIES; i++)
                        if (out[(size_t)i * LD + count] != 12345.0f) bad_scores = (int)(count * 1000 + n);
                }
                out[n] = 12345.0f;
                pf_testing_cpu_weighted_sum(out, w, rows, STRIDE, count, n);
                for (size_t i = 0; i < n; i++) {
                    double exact = 0, magnitude = 0;
                    for (size_t j = 0; j < count; j++) exact += (double)w[j] * rows[j * STRIDE + i], magnitude += fabs((double)w[j] * rows[j * STRIDE + i]);
                    if (fabs(out[i] - exact) > magnitude / (1 << 20)) bad_sum = (int)(count * 1000 + n);
                }
                if (out[n] != 12345.0f) bad_sum = (int)(count * 1000 + n);
                /* Several queries over one block of keys, each seeing rows first..last of it (its
                   other weights 0, as causal attention pads them): the bits of a weighted sum of
                   its own rows alone, and nothing written past n. */
                for (int nq = 1; nq <= QUERIES && count > 0; nq++) {
                    float padded[QUERIES][ROWS], alone[WIDTH], many[QUERIES * WIDTH + 1];
                    size_t first[QUERIES], last[QUERIES];
                    for (int k = 0; k < nq; k++) {
                        first[k] = (size_t)k % count, last[k] = count - 1 - (size_t)(k / 2) % (count - first[k]);
                        for (size_t j = 0; j < count; j++) padded[k][j] = j >= first[k] && j <= last[k] ? w[j] : 0.0f;
                    }
                    many[(size_t)(nq - 1) * WIDTH + n] = 12345.0f;
                    pf_testing_cpu_weighted_sums(many, WIDTH, &padded[0][0], ROWS, nq, rows, STRIDE, count, n);
                    for (int k = 0; k < nq; k++) {
                        pf_testing_cpu_weighted_sum(alone, w + first[k], rows + first[k] * STRIDE, STRIDE,
                                                    last[k] + 1 - first[k], n);
                        if (memcmp(alone, many + (size_t)k * WIDTH, n * sizeof(float))) bad_sums = (int)(count * 1000 + n);
                    }
                    if (many[(size_t)(nq - 1) * WIDTH + n] != 12345.0f) bad_sums = (int)(count * 1000 + n);
                }
            }
        CHECK_MSG(bad_scores < 0, "%s scores wrong at %d rows of width %d", name, bad_scores / 1000, bad_scores % 1000);
        CHECK_MSG(bad_sum < 0, "%s weighted sum wrong at %d rows of width %d", name, bad_sum / 1000, bad_sum % 1000);
        CHECK_MSG(bad_sums < 0, "%s weighted sums of several queries differ from one query's at %d rows of width %d", name,
                  bad_sums / 1000, bad_sums % 1000);
    }
    pf_testing_avx2_cpu = 0;
    pf_testing_portable_cpu = 0;
}

/* Decode's attention loops, on each kernel set, for rows stored as fp32, fp16 and bf16: 3 heads
   reading slices of rows 150 values long (two heads sharing one, as grouped queries do), widths 1
   to 70, 0 to 9 rows. Scores within 2^-20 of the sum of |products| of double arithmetic over the
   values the rows hold; weighted sums bit for bit what weighted_sum gives each head over an fp32
   copy of its slices; nothing written past a head's width. */
static void test_cpu_row_attention_kernels(void) {
    enum { ROW = 150, ROWS = 9, WIDTH = 70, HEADS = 3, LD = 16 };
    static const size_t kv[HEADS] = {0, 70, 70};
    static float q[HEADS * WIDTH], rows[ROWS * ROW], w[HEADS * LD], out[HEADS * WIDTH + 1], alone[WIDTH + 1],
        slice[ROWS * WIDTH];
    static uint16_t half[ROWS * ROW];
    uint64_t state = 11;
    random_fill(q, HEADS * WIDTH, 1.0f, &state);
    random_fill(w, HEADS * LD, 1.0f, &state);
    for (int dt = 0; dt <= 2; dt++) {
        random_fill(rows, ROWS * ROW, 1.0f, &state);
        for (size_t i = 0; i < ROWS * ROW && dt; i++) { /* the values the 16-bit rows hold, exactly */
            rows[i] = dt == 1 ? test_round_to_format(rows[i], 10, -24) : test_round_to_format(rows[i], 7, -133);
            uint32_t bits;
            memcpy(&bits, &rows[i], 4);
            half[i] = dt == 1 ? fp16_bits(rows[i]) : (uint16_t)(bits >> 16);
        }
        const void *stored = dt ? (const void *)half : (const void *)rows;
        for (int set = 0; set <= 2; set++) { /* default, portable, AVX2 */
            pf_testing_portable_cpu = set == 1, pf_testing_avx2_cpu = set == 2;
            const char *name = set == 0 ? "default" : set == 1 ? "portable" : "avx2";
            int bad_scores = -1, bad_sums = -1;
            for (size_t count = 0; count <= ROWS; count++)
                for (size_t n = 1; n <= WIDTH; n++) {
                    float scores[HEADS * LD];
                    for (int h = 0; h < HEADS; h++) scores[h * LD + count] = 12345.0f;
                    pf_testing_cpu_row_scores(scores, LD, q, HEADS, kv, stored, dt, ROW, count, n);
                    for (int h = 0; h < HEADS; h++) {
                        for (size_t j = 0; j < count; j++) {
                            double exact = 0, magnitude = 0;
                            for (size_t i = 0; i < n; i++) {
                                double p = (double)q[h * n + i] * rows[j * ROW + kv[h] + i];
                                exact += p, magnitude += fabs(p);
                            }
                            if (fabs(scores[h * LD + j] - exact) > magnitude / (1 << 20)) bad_scores = (int)(count * 1000 + n);
                        }
                        if (scores[h * LD + count] != 12345.0f) bad_scores = (int)(count * 1000 + n);
                    }
                    out[HEADS * n] = 12345.0f;
                    pf_testing_cpu_row_weighted_sums(out, w, LD, HEADS, kv, stored, dt, ROW, count, n);
                    for (int h = 0; h < HEADS; h++) {
                        for (size_t j = 0; j < count; j++) memcpy(slice + j * n, rows + j * ROW + kv[h], n * sizeof(float));
                        pf_testing_cpu_weighted_sum(alone, w + h * LD, slice, n, count, n);
                        if (memcmp(alone, out + h * n, n * sizeof(float))) bad_sums = (int)(count * 1000 + n);
                    }
                    if (out[HEADS * n] != 12345.0f) bad_sums = (int)(count * 1000 + n);
                }
            CHECK_MSG(bad_scores < 0, "%s decode scores (dtype %d) wrong at %d rows of width %d", name, dt,
                      bad_scores / 1000, bad_scores % 1000);
            CHECK_MSG(bad_sums < 0, "%s decode weighted sums (dtype %d) differ from weighted_sum at %d rows of width %d",
                      name, dt, bad_sums / 1000, bad_sums % 1000);
        }
    }
    pf_testing_avx2_cpu = 0;
    pf_testing_portable_cpu = 0;
}
#endif

#ifdef PF_TESTING
/* GGUF's block formats against the gguf package's dequantization (test/fixtures/blocks, written by
   make_block_fixtures.py): pf__block_dequantize gives its values bit for bit, and the products in
   the blocks are within the bound the activations' int8 rounding allows of the exact product of
   those values. A block of x of largest magnitude a is rounded to steps of a / 127, each input
   within a / 254, so |got - exact| <= sum over blocks of a / 254 * sum |w| there, plus fp32's
   rounding of the chain (1e-5 of sum |w x|, far above 17 fp32 roundings of 512 terms). With x
   already on the steps (integers, each block holding +-127) the rounding is exact and only
   fp32's slack remains; so it is for the products of the blocks the ranks keep (fp32 x, no
   rounding of x). Every kernel set: the same bits as the portable one. */
#define BLOCK_ROWS 11
#define BLOCK_COLS 512
#define BLOCK_X_ROWS 5

static double block_bound(const float *w, const float *x, size_t k, int exact_x) {
    double bound = 0, magnitude = 0;
    for (size_t b = 0; b < k / 32; b++) {
        double largest = 0, weights = 0;
        for (size_t i = b * 32; i < b * 32 + 32; i++) {
            largest = fabs(x[i]) > largest ? fabs(x[i]) : largest;
            weights += fabs(w[i]);
            magnitude += fabs((double)w[i] * x[i]);
        }
        if (!exact_x) bound += largest / 254.0 * weights;
    }
    return bound + 1e-5 * magnitude + 1e-30;
}

/* [BLOCK_ROWS][BLOCK_COLS] weights in blocks of dtype, whose values are `values` (their source's
   dequantization, named by `source`): decoded bit for bit, and multiplied within the bound, against
   int8 x (int8_x: the formats with integer sub-blocks) and fp32 x. */
static void test_block_values(const char *name, int dtype, size_t block_values, const unsigned char *blocks,
                              size_t blocks_size, const float *values, const char *source, int int8_x) {
    size_t values_size = BLOCK_ROWS * BLOCK_COLS * sizeof(float);
    float *dequantized = (float *)malloc(values_size);
    pf_testing_block_dequantize(dtype, blocks, BLOCK_ROWS * BLOCK_COLS, dequantized);
    CHECK_MSG(!memcmp(dequantized, values, values_size), "%s: dequantized blocks differ from %s", name, source);
    size_t row_bytes = blocks_size / BLOCK_ROWS;
    uint64_t state = 38;
    static float x[BLOCK_X_ROWS * BLOCK_COLS], got[BLOCK_X_ROWS * BLOCK_ROWS], portable[BLOCK_X_ROWS * BLOCK_ROWS],
        portable_kept[BLOCK_X_ROWS * BLOCK_ROWS];
    int worst_ok = 1;
    double worst_int8 = 0, worst_kept = 0;
    for (int exact_x = 0; exact_x < 2; exact_x++) {
        random_fill(x, BLOCK_X_ROWS * BLOCK_COLS, 1.0f, &state);
        for (size_t i = 0; i < BLOCK_X_ROWS * BLOCK_COLS; i++) /* magnitudes that differ by block */
            x[i] *= exact_x ? 1.0f : (float)(1 + (i / 32) % 7);
        if (exact_x)
            for (size_t i = 0; i < BLOCK_X_ROWS * BLOCK_COLS; i++)
                x[i] = i % 32 == 5 ? (i % 64 == 5 ? 127.0f : -127.0f) : roundf(x[i] * 127.0f);
        /* the whole rows, then the second half of the columns (a row-split rank's slice) */
        for (int split = 0; split < 2; split++) {
            size_t begin = split ? BLOCK_COLS / 2 : 0, k = BLOCK_COLS - begin;
            if (begin % block_values) continue;
            unsigned char *slice = (unsigned char *)malloc(BLOCK_ROWS * row_bytes);
            size_t slice_bytes = row_bytes * k / BLOCK_COLS;
            for (size_t o = 0; o < BLOCK_ROWS; o++)
                memcpy(slice + o * slice_bytes, blocks + o * row_bytes + row_bytes - slice_bytes, slice_bytes);
            static float xs[BLOCK_X_ROWS * BLOCK_COLS];
            for (size_t r = 0; r < BLOCK_X_ROWS; r++) memcpy(xs + r * k, x + r * BLOCK_COLS + begin, k * sizeof(float));
            for (size_t rows = 1; rows <= BLOCK_X_ROWS; rows += BLOCK_X_ROWS - 1) /* decode's one row, and five */
                for (int kind = 2; kind >= 0; kind--) { /* portable first; AVX2; the default set */
                    pf_testing_portable_cpu = kind == 2;
                    pf_testing_avx2_cpu = kind == 1;
                    for (int kept = !int8_x; kept < 2; kept++) { /* int8 x (dtype q8), fp32 x (the default) */
                        if (kept) pf_testing_cpu_matmul_kept(got, xs, slice, dtype, rows, BLOCK_ROWS, k);
                        else pf_testing_cpu_matmul(got, xs, slice, dtype, NULL, rows, BLOCK_ROWS, k, begin);
                        if (kind == 2) memcpy(kept ? portable_kept : portable, got, sizeof got);
                        CHECK_MSG(!memcmp(got, kept ? portable_kept : portable, rows * BLOCK_ROWS * sizeof(float)),
                                  "%s (kernel set %d, %zu rows, columns %zu.., %s x): not the portable kernels' bits",
                                  name, kind, rows, begin, kept ? "fp32" : "int8");
                        for (size_t r = 0; r < rows; r++)
                            for (size_t o = 0; o < BLOCK_ROWS; o++) {
                                const float *w = values + o * BLOCK_COLS + begin, *xr = xs + r * k;
                                double exact = 0;
                                for (size_t i = 0; i < k; i++) exact += (double)w[i] * xr[i];
                                double err = fabs(got[r * BLOCK_ROWS + o] - exact);
                                double bound = block_bound(w, xr, k, exact_x || kept);
                                double *worst = kept ? &worst_kept : &worst_int8;
                                *worst = err / bound > *worst ? err / bound : *worst;
                                if (!(err <= bound)) worst_ok = 0;
                            }
                    }
                }
            pf_testing_avx2_cpu = pf_testing_portable_cpu = 0;
            free(slice);
        }
    }
    CHECK_MSG(worst_ok, "%s: a product beyond its bound of the gguf package's values (worst %.2f, %.2f of the bound)",
              name, worst_int8, worst_kept);
    if (int8_x)
        printf("  %s blocks: %s; products within %.2f (int8 x) and %.2f (fp32 x) of their bound\n", name, source,
               worst_int8, worst_kept);
    else
        printf("  %s blocks: %s; products within %.2f (fp32 x) of their bound\n", name, source, worst_kept);
    free(dequantized);
}

static void test_block_format(const char *name, int dtype, size_t block_values) {
    char path[1024];
    size_t blocks_size = 0, values_size = 0;
    snprintf(path, sizeof path, "%s/blocks/%s.blocks", test_fixtures, name);
    unsigned char *blocks = (unsigned char *)test_read_file(path, &blocks_size);
    snprintf(path, sizeof path, "%s/blocks/%s.values", test_fixtures, name);
    float *values = (float *)test_read_file(path, &values_size);
    CHECK_MSG(blocks && values && values_size == BLOCK_ROWS * BLOCK_COLS * sizeof(float), "%s: fixture missing", name);
    if (blocks && values && values_size == BLOCK_ROWS * BLOCK_COLS * sizeof(float))
        test_block_values(name, dtype, block_values, blocks, blocks_size, values, "the gguf package's values", 1);
    free(blocks);
    free(values);
}

/* An fp16 number's value (the test's own decoding: sign, 5 exponent bits, 10 mantissa bits). */
static float half_value(unsigned h) {
    float magnitude = (h >> 10 & 31) ? ldexpf(1.0f + (float)(h & 1023) / 1024.0f, (int)(h >> 10 & 31) - 15)
                                     : ldexpf((float)(h & 1023), -24);
    return h & 0x8000 ? -magnitude : magnitude;
}

/* n pseudo-random bytes into p from *state (a 64-bit LCG's high bits), state advanced. */
static void random_bytes(uint64_t *state, unsigned char *p, int n) {
    for (int i = 0; i < n; i++) {
        *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
        p[i] = (unsigned char)(*state >> 33);
    }
}

/* Q4_G (GPTQ's and AWQ's 4-bit groups a block of 32 at a time: fp16 scale, zero byte, Q4_0's
   nibbles) against its definition, scale * (q - zero) in fp32: random blocks with every zero
   0..15, every nibble, and scales from subnormal to large fp16 numbers of both signs. */
static void test_q4_g_blocks(void) {
    enum { BYTES = 19 };
    size_t blocks_size = BLOCK_ROWS * BLOCK_COLS / 32 * BYTES;
    unsigned char *blocks = (unsigned char *)malloc(blocks_size);
    float *values = (float *)malloc(BLOCK_ROWS * BLOCK_COLS * sizeof(float));
    uint64_t state = 19;
    for (size_t b = 0; blocks && values && b < BLOCK_ROWS * BLOCK_COLS / 32; b++) {
        unsigned char *block = blocks + b * BYTES;
        random_bytes(&state, block, BYTES);
        unsigned h = block[0] | (unsigned)block[1] << 8; /* any finite fp16: exponent 31 (inf, NaN) made 30 */
        if ((h >> 10 & 31) == 31) h &= ~(1u << 10);
        block[0] = (unsigned char)(h & 255), block[1] = (unsigned char)(h >> 8);
        block[2] = (unsigned char)(b % 16);
        for (int i = 0; i < 32; i++) {
            int q = i < 16 ? block[3 + i] & 15 : block[3 + i - 16] >> 4;
            values[b * 32 + (size_t)i] = half_value(h) * (float)(q - block[2]);
        }
    }
    if (blocks && values) test_block_values("Q4_G-random", 16, 32, blocks, blocks_size, values, "scale * (q - zero)", 1);
    free(blocks);
    free(values);
}

/* E4M3 (FP8 checkpoints' e4m3 weights a block of 32 after their fp32 scale) against its
   definition, the e4m3 value (decoded here: sign, 4 exponent bits of bias 7, 3 mantissa bits,
   exponent 0 subnormal) times the scale in fp32: random blocks with every code but the two NaNs
   and scales of both signs from 2^-20 to 2^10; products against fp32 x only (no integer sub-blocks). */
static void test_e4m3_blocks(void) {
    enum { BYTES = 36 };
    size_t blocks_size = BLOCK_ROWS * BLOCK_COLS / 32 * BYTES;
    unsigned char *blocks = (unsigned char *)malloc(blocks_size);
    float *values = (float *)malloc(BLOCK_ROWS * BLOCK_COLS * sizeof(float));
    uint64_t state = 36;
    for (size_t b = 0; blocks && values && b < BLOCK_ROWS * BLOCK_COLS / 32; b++) {
        unsigned char *block = blocks + b * BYTES;
        random_bytes(&state, block, BYTES);
        float scale = ldexpf(1.0f + (float)block[0] / 256.0f, (int)(b % 31) - 20) * (block[1] & 1 ? -1.0f : 1.0f);
        memcpy(block, &scale, 4);
        for (int i = 0; i < 32; i++) {
            unsigned code = block[4 + i];
            if ((code & 127) == 127) block[4 + i] = (unsigned char)(code = code - 1); /* NaN: the largest number */
            unsigned e = code >> 3 & 15, m = code & 7;
            float magnitude = e ? ldexpf(1.0f + (float)m / 8.0f, (int)e - 7) : ldexpf((float)m, -9);
            values[b * 32 + (size_t)i] = (code & 128 ? -magnitude : magnitude) * scale;
        }
    }
    if (blocks && values) test_block_values("E4M3-random", 17, 32, blocks, blocks_size, values, "e4m3 value * scale", 0);
    /* a NaN code (S.1111.111, either sign) makes its product NaN on every kernel set */
    for (int kind = 2; blocks && kind >= 0; kind--) {
        pf_testing_portable_cpu = kind == 2;
        pf_testing_avx2_cpu = kind == 1;
        static float x[32], out[2];
        for (int i = 0; i < 32; i++) x[i] = 1.0f;
        for (int r = 0; r < 2; r++) blocks[r * BYTES + 4 + 5 + 9 * r] = r ? 0xff : 0x7f;
        pf_testing_cpu_matmul_kept(out, x, blocks, 17, 1, 2, 32);
        CHECK_MSG(isnan(out[0]) && isnan(out[1]), "E4M3 NaN codes (kernel set %d): products %g, %g", kind, out[0], out[1]);
    }
    pf_testing_avx2_cpu = pf_testing_portable_cpu = 0;
    free(blocks);
    free(values);
}

/* Q8_G (8-bit integer weights a block of 32: fp32 scale, zero byte, 32 value bytes) against its
   definition, (q - zero) * scale in fp32: random blocks with 176 zeros of 0..255 (both ends), any value, and
   scales of both signs from 2^-30 to 2^20; products against fp32 x only (q - zero is no int8). */
static void test_q8_g_blocks(void) {
    enum { BYTES = 37 };
    size_t blocks_size = BLOCK_ROWS * BLOCK_COLS / 32 * BYTES;
    unsigned char *blocks = (unsigned char *)malloc(blocks_size);
    float *values = (float *)malloc(BLOCK_ROWS * BLOCK_COLS * sizeof(float));
    uint64_t state = 37;
    for (size_t b = 0; blocks && values && b < BLOCK_ROWS * BLOCK_COLS / 32; b++) {
        unsigned char *block = blocks + b * BYTES;
        random_bytes(&state, block, BYTES);
        float scale = ldexpf(1.0f + (float)(block[0] | block[2] << 8) / 65536.0f, (int)(b % 51) - 30) *
                      (block[1] & 1 ? -1.0f : 1.0f);
        memcpy(block, &scale, 4);
        block[4] = (unsigned char)(b * 7 % 256);
        for (int i = 0; i < 32; i++) values[b * 32 + (size_t)i] = (float)(block[5 + i] - block[4]) * scale;
    }
    if (blocks && values) test_block_values("Q8_G-random", 18, 32, blocks, blocks_size, values, "(q - zero) * scale", 0);
    free(blocks);
    free(values);
}

static void test_block_formats(void) {
    static const struct { const char *name; int dtype; size_t values; } formats[] = { /* weights a block */
        {"Q8_0", 3, 32}, {"Q4_0", 4, 32}, {"Q4_1", 5, 32}, {"Q5_0", 6, 32}, {"Q5_1", 7, 32}, {"Q4_K", 8, 256},
        {"Q5_K", 9, 256}, {"Q6_K", 10, 256}, {"Q3_K", 11, 256}, {"IQ4_NL", 12, 32}, {"IQ4_XS", 13, 256}, {"Q2_K", 14, 256},
        {"MXFP4", 15, 32}};
    for (size_t f = 0; f < sizeof formats / sizeof formats[0]; f++) {
        char random_name[32];
        snprintf(random_name, sizeof random_name, "%s-random", formats[f].name);
        test_block_format(formats[f].name, formats[f].dtype, formats[f].values);
        test_block_format(random_name, formats[f].dtype, formats[f].values);
    }
    test_q4_g_blocks();
    test_e4m3_blocks();
    test_q8_g_blocks();
}
#endif

void test_cpu_kernels(void) {
#ifdef __aarch64__
    /* what the comparisons below take as the default set: NEON's, in 128-bit vectors */
    CHECK_MSG(pf_cpu_vector_bits() == 128, "ARM64 without the NEON kernels: %d-bit vectors", pf_cpu_vector_bits());
#endif
#ifdef PF_TESTING
    test_cpu_matmul();
    test_cpu_matmul_shapes();
    test_cpu_attention_kernels();
    test_cpu_row_attention_kernels();
    test_cpu_activation_kernels();
    test_quantizer_rounding();
    test_activation_quantizer();
    test_cpu_q8_kernels(0);
    test_cpu_q8_kernels(1);
    test_cpu_bf16_products_kernel();
    test_cpu_sum_shifted();
    test_block_formats();
#endif
}
