/* Model fixtures against the outputs transformers gave for them: prompt logits within 1e-4 and
   identical greedy tokens, on 1 to 4 CPU ranks; plus pf_to_cpu, memory accounting, batches, a
   failing rank, and absurd arguments. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../parallelformers.h"
#include "test.h"
#include "testing_hooks.h"

#define TOLERANCE_HF 1e-4f       /* fp32 logits against transformers */
#define TOLERANCE_RANKS 1e-5f    /* n ranks against one rank */

/* Which CPU kernels the fixtures run on, for the messages: the ones the machine picks, or portable. */
static const char *cpu_kernels = "default kernels";

typedef struct fixture {
    pf_model *model;
    test_reference ref;
    float *ref_logits;
    size_t vocab;
} fixture;

/* These tests are about the CPU backend in fp32, even on a machine with a GPU. */
static pf_parallel_options cpu_options(void) {
    pf_parallel_options o = pf_parallel_options_init();
    o.device = PF_DEVICE_CPU;
    return o;
}

static void fixture_close(fixture *f) {
    pf_free(f->model);
    free(f->ref_logits);
}

/* The fixture's model (without its tokenizer) and reference; on failure (reported) -1, with
   nothing left to close. */
static int fixture_open(const char *name, fixture *f) {
    char dir[1024], path[1100];
    memset(f, 0, sizeof *f);
    snprintf(dir, sizeof dir, "%s/%s", test_fixtures, name);
    pf_load_options lo = pf_load_options_init();
    lo.skip_tokenizer = 1; /* the tokenizer has tests of its own, below */
    pf_result r = pf_load(dir, &lo, &f->model);
    CHECK_MSG(r == PF_OK, "%s: %s", name, pf_error_message(f->model));
    int ok = test_read_reference(dir, &f->ref) == 0;
    CHECK_MSG(ok, "%s: reference.txt unreadable", name);
    snprintf(path, sizeof path, "%s/reference_logits.bin", dir);
    size_t count = 0;
    f->ref_logits = test_read_floats(path, &count);
    f->vocab = (size_t)f->ref.vocab_size;
    CHECK_MSG(f->ref_logits && count == (size_t)f->ref.num_prompt_ids * f->vocab, "%s: reference logits", name);
    if (r != PF_OK || !ok || !f->ref_logits) {
        fixture_close(f);
        return -1;
    }
    CHECK_MSG(pf_get_info(f->model).vocab_size == f->ref.vocab_size, "%s: vocab size", name);
    return 0;
}

static float *prompt_logits(fixture *f) {
    float *logits = (float *)malloc((size_t)f->ref.num_prompt_ids * f->vocab * sizeof(float));
    int32_t ids[64];
    for (int i = 0; i < f->ref.num_prompt_ids; i++) ids[i] = f->ref.prompt_ids[i];
    pf_result r = pf_forward(f->model, ids, 1, f->ref.num_prompt_ids, logits);
    CHECK_MSG(r == PF_OK, "pf_forward: %s", pf_error_message(f->model));
    if (r != PF_OK) {
        free(logits);
        return NULL;
    }
    return logits;
}

static void check_greedy(fixture *f, const char *name, int ranks) {
    int32_t prompt[64], out[64];
    int n = 0;
    for (int i = 0; i < f->ref.num_prompt_ids; i++) prompt[i] = f->ref.prompt_ids[i];
    pf_generate_options o = pf_generate_options_init();
    o.max_new_tokens = f->ref.max_new_tokens;
    pf_result r = pf_generate(f->model, prompt, f->ref.num_prompt_ids, &o, out, 64, &n);
    CHECK_MSG(r == PF_OK, "%s: pf_generate: %s", name, pf_error_message(f->model));
    int same = n == f->ref.num_greedy_ids;
    for (int i = 0; same && i < n; i++) same = out[i] == f->ref.greedy_ids[i];
    CHECK_MSG(same, "%s on %d ranks: greedy tokens differ from transformers (got %d tokens, first %d; want %d, first %d)",
              name, ranks, n, n ? out[0] : -1, f->ref.num_greedy_ids, f->ref.greedy_ids[0]);
}

/* Every rank count from 1 to 4 gives transformers' logits and tokens, and one rank's logits, with
   the weights stored as `dtype` on the ranks. */
static void test_fixture_stored(const char *name, pf_dtype dtype) {
    fixture f;
    if (fixture_open(name, &f)) return;
    size_t n = (size_t)f.ref.num_prompt_ids * f.vocab;
    float *one_rank = NULL;
    /* Rotary models may run past max_position_embeddings (dynamic rope scaling is tested so). */
    pf_parallel_options po = cpu_options();
    po.dtype = dtype;
    int need = f.ref.num_prompt_ids + f.ref.max_new_tokens;
    if (need > pf_get_info(f.model).max_positions) po.max_sequence_length = need;
    for (int ranks = 1; ranks <= 4; ranks++) {
        pf_result r = pf_parallelize(f.model, ranks, &po);
        CHECK_MSG(r == PF_OK, "%s: pf_parallelize(%d): %s", name, ranks, pf_error_message(f.model));
        if (r) continue;
        CHECK(pf_num_ranks(f.model) == ranks);
        float *logits = prompt_logits(&f);
        if (!logits) continue;
        float diff = test_max_abs_diff(logits, f.ref_logits, n);
        CHECK_MSG(diff <= TOLERANCE_HF, "%s on %d ranks (%s): logits differ from transformers by %g", name, ranks,
                  cpu_kernels, diff);
        if (ranks == 1) {
            one_rank = logits;
        } else {
            diff = test_max_abs_diff(logits, one_rank, n);
            CHECK_MSG(diff <= TOLERANCE_RANKS, "%s (%s): %d ranks differ from 1 rank by %g", name, cpu_kernels, ranks,
                      diff);
            free(logits);
        }
        check_greedy(&f, name, ranks);
    }
    free(one_rank);

    /* The model directory's tokenizer gives the prompt transformers encoded (with the special
       tokens its post-processor adds, as tokenizer(text) does). */
    char dir[1024], err[512] = "";
    snprintf(dir, sizeof dir, "%s/%s", test_fixtures, name);
    pf_tokenizer *tok = NULL;
    pf_result tr = pf_tokenizer_load(dir, &tok, err, sizeof err);
    CHECK_MSG(tr == PF_OK && tok, "%s: tokenizer: %s", name, err);
    if (tok) {
        int32_t ids[64];
        size_t num = 0;
        pf_result r = pf_tokenize_special(tok, f.ref.prompt_text, strlen(f.ref.prompt_text), ids, 64, &num);
        int same = r == PF_OK && (int)num == f.ref.num_prompt_ids;
        for (size_t i = 0; same && i < num; i++) same = ids[i] == f.ref.prompt_ids[i];
        CHECK_MSG(same, "%s: prompt_text does not encode to prompt_ids", name);
    }
    pf_tokenizer_free(tok);
    fixture_close(&f);
}

static void test_fixture(const char *name) { test_fixture_stored(name, PF_DTYPE_F32); }

/* Keys and values cached in fp16 or bf16 (pf_parallel_options.kv_cache_dtype) on CPU ranks, on the
   fixtures whose greedy steps win by 0.07 or more: transformers' greedy tokens (decode over the
   16-bit cache, each step's keys and values rounded as they are cached); prompt logits within 8
   units of the format's rounding (of the largest logit) of the fp32 cache's, which are
   transformers' within TOLERANCE_HF, and not equal to them (the values were rounded; measured: 2-4
   units on these tiny models with large weights); 3 ranks within one unit of one rank, not
   TOLERANCE_RANKS: the ranks' fp32 sums differ in the last bits, and a key or value that one rank
   count rounds up the other may round down; the cache in half the bytes. */
/* The best of 3 beams for the fixture's prompt, max_new_tokens of them, into out; the count, or -1. */
static int beam_tokens(fixture *f, int32_t *out) {
    int32_t prompt[64];
    int n = 0;
    for (int i = 0; i < f->ref.num_prompt_ids; i++) prompt[i] = f->ref.prompt_ids[i];
    pf_generate_options o = pf_generate_options_init();
    o.max_new_tokens = f->ref.max_new_tokens;
    o.num_beams = 3;
    pf_result r = pf_generate(f->model, prompt, f->ref.num_prompt_ids, &o, out, 64, &n);
    CHECK_MSG(r == PF_OK, "beam search: %s", pf_error_message(f->model));
    return r == PF_OK ? n : -1;
}

static void test_cpu_kv_cache_dtypes(void) {
    static const char *const names[] = {"llama-q8", "gpt2-wide"};
    static const struct {
        pf_dtype dtype;
        const char *name;
        float unit; /* the format's rounding: half an ulp at 1 */
    } formats[] = {{PF_DTYPE_F16, "fp16", 1.0f / 2048}, {PF_DTYPE_BF16, "bf16", 1.0f / 256}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        fixture f;
        if (fixture_open(names[i], &f)) continue;
        size_t n = (size_t)f.ref.num_prompt_ids * f.vocab;
        pf_parallel_options po = cpu_options();
        pf_memory_info fp32_cache = {0};
        int32_t fp32_beams[64], beams[64];
        po.max_batch = 3;
        CHECK(pf_parallelize(f.model, 1, &po) == PF_OK && pf_get_memory_info(f.model, 0, &fp32_cache) == PF_OK);
        int num_beams = beam_tokens(&f, fp32_beams);
        float *fp32_logits = prompt_logits(&f);
        float largest = 0;
        for (size_t k = 0; k < n; k++) largest = fmaxf(largest, fabsf(f.ref_logits[k]));
        for (size_t j = 0; j < sizeof formats / sizeof formats[0]; j++) {
            float *one_rank = NULL;
            po.kv_cache_dtype = formats[j].dtype;
            for (int ranks = 1; ranks <= 3; ranks += 2) {
                pf_result r = pf_parallelize(f.model, ranks, &po);
                CHECK_MSG(r == PF_OK, "%s with a %s cache on %d ranks: %s", names[i], formats[j].name, ranks,
                          pf_error_message(f.model));
                if (r) continue;
                float *logits = prompt_logits(&f);
                if (!logits) continue;
                float own = test_max_abs_diff(logits, f.ref_logits, n);
                CHECK_MSG(fp32_logits && test_max_abs_diff(logits, fp32_logits, n) > 0,
                          "%s with a %s cache on %d ranks: the fp32 cache's logits to the bit", names[i], formats[j].name, ranks);
                CHECK_MSG(own <= 8 * formats[j].unit * largest,
                          "%s with a %s cache on %d ranks: %g from the fp32 logits (largest %g, bound %g)", names[i],
                          formats[j].name, ranks, own, largest, 8 * formats[j].unit * largest);
                printf("  %s with a %s kv cache on %d rank%s: %.3g from the fp32 cache's logits (largest |logit| %.3g)\n",
                       names[i], formats[j].name, ranks, ranks > 1 ? "s" : "", own, largest);
                if (ranks == 1) {
                    pf_memory_info info = {0};
                    CHECK(pf_get_memory_info(f.model, 0, &info) == PF_OK);
                    CHECK_MSG(info.kv_cache * 2 == fp32_cache.kv_cache, "%s: a %s cache of %zu bytes, fp32's %zu",
                              names[i], formats[j].name, info.kv_cache, fp32_cache.kv_cache);
                    one_rank = logits;
                    /* beam search reorders a 16-bit cache's rows as it does fp32 ones */
                    int n_beams = beam_tokens(&f, beams);
                    CHECK_MSG(n_beams == num_beams && n_beams > 0 && !memcmp(beams, fp32_beams, (size_t)n_beams * sizeof *beams),
                              "%s: 3 beams over a %s cache give other tokens than over fp32", names[i], formats[j].name);
                } else {
                    float diff = one_rank ? test_max_abs_diff(logits, one_rank, n) : -1;
                    CHECK_MSG(one_rank && diff <= formats[j].unit * largest, "%s with a %s cache: %d ranks differ from 1 by %g",
                              names[i], formats[j].name, ranks, diff);
                    free(logits);
                }
                check_greedy(&f, names[i], ranks);
            }
            free(one_rank);
        }
        po.kv_cache_dtype = PF_DTYPE_Q8_0;
        CHECK(pf_parallelize(f.model, 1, &po) == PF_ERROR_INVALID_ARGUMENT &&
              strstr(pf_error_message(f.model), "kv_cache_dtype"));
        free(fp32_logits);
        fixture_close(&f);
    }
}

/* pf_to_cpu gathers the slices of 3 ranks into one model that computes exactly what one rank
   sliced from the file computes; memory per rank falls when split. */
static void test_to_cpu_and_memory(void) {
    pf_parallel_options cpu = cpu_options();
    fixture f;
    if (fixture_open("gpt2-hub", &f)) return;
    size_t n = (size_t)f.ref.num_prompt_ids * f.vocab;
    CHECK(pf_memory_allocated(f.model, 0) == 0); /* nothing on any device before parallelizing */
    pf_memory_info before;
    CHECK(pf_get_memory_info(f.model, 0, &before) == PF_ERROR_INVALID_ARGUMENT && before.allocated == 0);
    CHECK(pf_parallelize(f.model, 1, &cpu) == PF_OK);
    size_t one = pf_memory_allocated(f.model, 0);
    float *base = prompt_logits(&f);
    CHECK(pf_parallelize(f.model, 3, &cpu) == PF_OK);
    size_t total = 0;
    for (int i = 0; i < 3; i++) {
        size_t bytes = pf_memory_allocated(f.model, i);
        /* Memory falls close to 1/3: weights (the vocabulary included), KV cache and MLP scratch
           are split; only norms, the position table and the d-wide scratch are whole on each
           rank (with a replicated embedding and LM head a rank held 63% of one rank's bytes). */
        CHECK_MSG(bytes > 0 && bytes < one * 45 / 100, "rank %d of 3 holds %zu bytes, one rank %zu", i, bytes, one);
        total += bytes;
    }
    CHECK(pf_memory_allocated(f.model, 3) == 0);
    CHECK(pf_memory_allocated(f.model, -1) == 0);
    /* The same by use, and the host's memory as the system reports it. */
    for (int i = 0; i < 3; i++) {
        pf_memory_info info;
        CHECK(pf_get_memory_info(f.model, i, &info) == PF_OK);
        CHECK_MSG(info.allocated == pf_memory_allocated(f.model, i) && info.weights > 0 && info.kv_cache > 0 &&
                      info.scratch > 0 && info.weights + info.kv_cache + info.scratch == info.allocated,
                  "rank %d: %zu weights + %zu cache + %zu scratch, %zu allocated", i, info.weights, info.kv_cache,
                  info.scratch, info.allocated);
        CHECK_MSG(info.device_total > 0 && info.device_used >= info.allocated && info.device_used <= info.device_total,
                  "rank %d: host memory %zu used of %zu", i, info.device_used, info.device_total);
    }
    pf_memory_info none;
    CHECK(pf_get_memory_info(f.model, 3, &none) == PF_ERROR_INVALID_ARGUMENT && none.allocated == 0 &&
          none.device_total == 0 && strstr(pf_error_message(f.model), "rank 3"));
    CHECK(pf_get_memory_info(f.model, 0, NULL) == PF_ERROR_INVALID_ARGUMENT);
    CHECK(pf_get_memory_info(NULL, 0, &none) == PF_ERROR_INVALID_ARGUMENT);
    CHECK_MSG(total > one, "what is replicated makes the sum larger than one rank (%zu vs %zu)", total, one);
    CHECK_MSG(pf_to_cpu(f.model) == PF_OK, "pf_to_cpu: %s", pf_error_message(f.model));
    CHECK(pf_num_ranks(f.model) == 1);
    CHECK(pf_memory_allocated(f.model, 1) == 0);
    CHECK_MSG(pf_memory_allocated(f.model, 0) == one, "after pf_to_cpu: %zu bytes, one rank had %zu",
              pf_memory_allocated(f.model, 0), one);
    float *gathered = prompt_logits(&f);
    CHECK_MSG(base && gathered && memcmp(base, gathered, n * sizeof(float)) == 0,
              "gathered model differs from the one-rank model");
    check_greedy(&f, "gpt2-hub after pf_to_cpu", 1);
    free(base);
    free(gathered);
    fixture_close(&f);
}

/* Two copies of the prompt in one batch give the reference logits for both rows. */
static void test_batch(void) {
    fixture f;
    if (fixture_open("gpt2-tiny", &f)) return;
    int T = f.ref.num_prompt_ids;
    size_t n = (size_t)T * f.vocab;
    pf_parallel_options o = cpu_options();
    o.max_batch = 2;
    o.max_sequence_length = 32;
    CHECK(pf_parallelize(f.model, 2, &o) == PF_OK);
    int32_t ids[128];
    for (int b = 0; b < 2; b++)
        for (int t = 0; t < T; t++) ids[b * T + t] = f.ref.prompt_ids[t];
    float *logits = (float *)malloc(2 * n * sizeof(float));
    pf_result r = pf_forward(f.model, ids, 2, T, logits);
    CHECK_MSG(r == PF_OK, "batch forward: %s", pf_error_message(f.model));
    if (r == PF_OK) {
        CHECK(test_max_abs_diff(logits, f.ref_logits, n) <= TOLERANCE_HF);
        CHECK(test_max_abs_diff(logits + n, f.ref_logits, n) <= TOLERANCE_HF);
    }
    /* Beyond what was sized: a clear error, not an overflow. */
    CHECK(pf_forward(f.model, ids, 3, T, logits) == PF_ERROR_INVALID_ARGUMENT);
    CHECK(pf_forward(f.model, ids, 1, 33, logits) == PF_ERROR_INVALID_ARGUMENT);
    /* Generation stops at the cache end instead of overflowing it. */
    int32_t out[64];
    int num = 0;
    pf_generate_options g = pf_generate_options_init();
    g.max_new_tokens = 60;
    g.ignore_eos = 1;
    CHECK(pf_generate(f.model, ids, T, &g, out, 64, &num) == PF_OK);
    CHECK_MSG(num == 32 - T, "generated %d tokens into a cache of 32 after %d", num, T);
    free(logits);
    fixture_close(&f);
}

static void test_bad_arguments(void) {
    fixture f;
    if (fixture_open("gpt2-tiny", &f)) return;
    pf_model *m = f.model;
    pf_parallel_options o = cpu_options();
    CHECK(pf_parallelize(m, 0, NULL) == PF_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(pf_error_message(m), "num_ranks") != NULL);
    CHECK(pf_parallelize(m, 100000, NULL) == PF_ERROR_INVALID_ARGUMENT);
    o.max_sequence_length = 1 << 20;
    CHECK(pf_parallelize(m, 1, &o) == PF_ERROR_INVALID_ARGUMENT);
    o = cpu_options();
    o.max_batch = -1;
    CHECK(pf_parallelize(m, 1, &o) == PF_ERROR_INVALID_ARGUMENT);
    o = cpu_options();
    o.device = (pf_device)42;
    CHECK(pf_parallelize(m, 1, &o) == PF_ERROR_INVALID_ARGUMENT);
    int32_t ids[4] = {1, 2, 3, 1 << 30}, out[8];
    float logits[4 * 600];
    int num;
    CHECK(pf_forward(m, ids, 1, 4, logits) == PF_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(pf_error_message(m), "outside the vocabulary") != NULL);
    ids[3] = -1;
    CHECK(pf_forward(m, ids, 1, 4, logits) == PF_ERROR_INVALID_ARGUMENT);
    CHECK(pf_forward(m, NULL, 1, 4, logits) == PF_ERROR_INVALID_ARGUMENT);
    CHECK(pf_forward(m, ids, 0, 4, logits) == PF_ERROR_INVALID_ARGUMENT);
    CHECK(pf_generate(m, ids, 0, NULL, out, 8, &num) == PF_ERROR_INVALID_ARGUMENT);
    pf_generate_options g = pf_generate_options_init();
    g.max_new_tokens = -5;
    ids[3] = 1;
    CHECK(pf_generate(m, ids, 4, &g, out, 8, &num) == PF_ERROR_INVALID_ARGUMENT);
    /* Output capacity bounds the tokens written. */
    g = pf_generate_options_init();
    g.max_new_tokens = 10;
    g.ignore_eos = 1;
    CHECK(pf_generate(m, ids, 4, &g, out, 3, &num) == PF_OK && num == 3);
    /* transformers' defaults: 20 new tokens when no length is set; an explicit max_length
       counts the prompt. */
    int32_t big[40];
    g = pf_generate_options_init();
    g.ignore_eos = 1;
    CHECK(pf_generate(m, ids, 4, &g, big, 40, &num) == PF_OK);
    CHECK_MSG(num == 20, "default lengths with a 4-token prompt gave %d new tokens", num);
    g.max_length = 20;
    CHECK(pf_generate(m, ids, 4, &g, big, 40, &num) == PF_OK);
    CHECK_MSG(num == 16, "max_length 20 with a 4-token prompt gave %d new tokens", num);
    CHECK(pf_parallelize(NULL, 1, NULL) == PF_ERROR_INVALID_ARGUMENT);
    CHECK(pf_forward(NULL, ids, 1, 1, logits) == PF_ERROR_INVALID_ARGUMENT);
    CHECK(pf_memory_allocated(NULL, 0) == 0);
    pf_free(NULL);
    fixture_close(&f);
}

#ifdef PF_TESTING
/* A rank that fails between two all-reduces must not leave the others waiting: the call returns
   an error naming the rank, and the model works again afterwards. */
static void test_failing_rank(void) {
    pf_parallel_options cpu = cpu_options();
    fixture f;
    if (fixture_open("gpt2-hub", &f)) return;
    size_t n = (size_t)f.ref.num_prompt_ids * f.vocab;
    CHECK(pf_parallelize(f.model, 3, &cpu) == PF_OK);
    for (int countdown = 1; countdown <= 7; countdown += 3) {
        pf_testing_fail_rank = 2;
        pf_testing_fail_countdown = countdown;
        float *logits = (float *)malloc(n * sizeof(float));
        int32_t ids[64];
        for (int i = 0; i < f.ref.num_prompt_ids; i++) ids[i] = f.ref.prompt_ids[i];
        pf_result r = pf_forward(f.model, ids, 1, f.ref.num_prompt_ids, logits);
        CHECK_MSG(r == PF_ERROR_DEVICE, "injected failure gave %s", pf_result_string(r));
        CHECK_MSG(strstr(pf_error_message(f.model), "rank 2") != NULL, "message: %s", pf_error_message(f.model));
        pf_testing_fail_rank = -1;
        free(logits);
        logits = prompt_logits(&f);
        CHECK(logits && test_max_abs_diff(logits, f.ref_logits, n) <= TOLERANCE_HF);
        free(logits);
    }
    fixture_close(&f);
}
#endif

#ifdef PF_TESTING
/* x[rows][k] w[n][k]: uniform in [-1, 1) and [-0.05, 0.05), from a fixed LCG. */
static void random_fill(float *v, size_t n, float scale, uint64_t *state) {
    for (size_t i = 0; i < n; i++) {
        *state = *state * 6364136223846793005ull + 1442695040888963407ull;
        v[i] = scale * ((float)(*state >> 40) / (float)(1u << 24) * 2.0f - 1.0f);
    }
}

static float round_to_format(float x, int bits, int lowest);

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
                float v = dtype == 1 ? round_to_format(w[i], 10, -24) : round_to_format(w[i], 7, -133);
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
   less AMX. */
static const char *const kernel_names[] = {"default", "AVX2", "portable", "no-AMX"};

/* Small odd shapes (rows, weight rows and inputs off every tile and chunk size, slices off the
   8-input grid) in each weight dtype, on each kernel set (the default one: AVX-512's 16-lane tiles
   where present; AVX2; portable): within 2^-18 of the sum of |products| of the portable sums, and
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
            float v = dtype == 1 ? round_to_format(w[i], 10, -24) : round_to_format(w[i], 7, -133);
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
   and 5 rows of x on the vector kernels, 16 and 37 on AMX where present) and odd block counts.
   Every kernel set gives the same bits (one fp32 chain of block products, in block order), and a
   row alone (decode) gives what it gives in a batch. */
static void test_cpu_q8_kernels(int q4) {
    static const size_t rows_list[] = {1, 2, 5, 16, 37}, outs_list[] = {1, 3, 4, 5, 9, 67}, blocks_list[] = {1, 2, 3, 24};
    enum { MAXR = 37, MAXO = 67, MAXK = 24 * 32 };
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
                float d = round_to_format(q4 ? extreme / -8.0f : largest / 127.0f, 10, -24);
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

/* Q8_0 and Q4_0 weights on CPU ranks against transformers running the same arithmetic
   (test/make_q8_references.py: every matrix and embedding quantized per 32-input block, every
   matrix product's input as Q8 blocks too): llama-q8 on 1 and 2 ranks and gpt2-wide on 1 (where
   every matrix slice lies on the 32-column grid) give its prompt logits within Q8_TOLERANCE and
   its greedy tokens (each step's margin there is 0.07 or more). The distance to the fp32 logits
   is the format's own error, printed; Q8's is bounded loosely (it is 6-7 % of the largest logit
   on these tiny models with large weights). Q4's is 43-64 % there, no bound worth asserting: its
   check is the agreement with the same arithmetic. bf16 weights with bf16_products the same way
   against transformers with every parameter and every product's input rounded to bf16 (the same
   script), on the AMX tiles where the processor has them and on the fp32 tiles over rounded
   inputs (no-AMX), whose sums differ from AMX's only in fp32 rounding. Those last bits can move a
   value across a bf16 rounding boundary, where the input then differs by a whole bf16 unit from
   transformers' (its sums run in another order): a few of the thousands of rounded inputs do so,
   and their effect on later positions takes the bounds, relative to the largest |logit|, to a
   mean of 2^-12 and a maximum of 2^-7 (measured here: at most 3.2e-5 and 1.6e-3; an unrounded x,
   bf16 weights alone, is 3.8e-4 to 1.6e-3 on average from it). */
#define Q8_TOLERANCE 1e-4
#define BF16P_MEAN (1.0 / 4096)
#define BF16P_MAX (1.0 / 128)
static void test_cpu_quantized(pf_dtype dtype, int bf16_products) {
    static const struct {
        const char *name;
        int max_ranks;
    } cases[] = {{"llama-q8", 2}, {"gpt2-wide", 1}};
    const char *format = bf16_products ? "bf16p" : dtype == PF_DTYPE_Q4_0 ? "q4" : "q8";
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int no_amx = 0; no_amx <= bf16_products; no_amx++) {
            fixture f;
            if (fixture_open(cases[i].name, &f)) continue;
            pf_testing_no_amx_cpu = no_amx;
            char dir[1024], path[1100];
            snprintf(dir, sizeof dir, "%s/%s/%s", test_fixtures, cases[i].name, format);
            snprintf(path, sizeof path, "%s/reference_logits.bin", dir);
            test_reference q8_ref;
            size_t n = (size_t)f.ref.num_prompt_ids * f.vocab, count = 0;
            float *q8_logits = test_read_floats(path, &count);
            int ok = test_read_reference(dir, &q8_ref) == 0 && q8_logits && count == n &&
                     q8_ref.num_prompt_ids == f.ref.num_prompt_ids;
            CHECK_MSG(ok, "%s: the %s reference", dir, format);
            float largest = 0;
            for (size_t k = 0; ok && k < n; k++) largest = fmaxf(largest, fabsf(f.ref_logits[k]));
            for (int ranks = 1; ok && ranks <= cases[i].max_ranks; ranks++) {
                pf_parallel_options po = cpu_options();
                po.dtype = dtype;
                po.bf16_products = bf16_products;
                pf_result r = pf_parallelize(f.model, ranks, &po);
                CHECK_MSG(r == PF_OK, "%s: %s on %d ranks: %s", cases[i].name, format, ranks, pf_error_message(f.model));
                if (r) continue;
                CHECK(pf_model_dtype(f.model) == dtype);
                float *logits = prompt_logits(&f);
                if (!logits) continue;
                float diff = test_max_abs_diff(logits, q8_logits, n), own = test_max_abs_diff(logits, f.ref_logits, n);
                double mean = 0;
                for (size_t q = 0; q < n; q++) mean += fabs((double)logits[q] - q8_logits[q]) / (double)n;
                if (bf16_products)
                    CHECK_MSG(mean <= BF16P_MEAN * largest && diff <= BF16P_MAX * largest,
                              "%s %s on %d ranks%s: logits differ from transformers' same arithmetic by %g on average, "
                              "%g at most (largest |logit| %g)",
                              cases[i].name, format, ranks, no_amx ? " (no-AMX)" : "", mean, diff, largest);
                else
                    CHECK_MSG(diff <= Q8_TOLERANCE, "%s %s on %d ranks: logits differ from transformers' same arithmetic by %g",
                              cases[i].name, format, ranks, diff);
                CHECK_MSG(dtype == PF_DTYPE_Q4_0 || own <= 0.1f * largest, "%s %s on %d ranks: %g from the fp32 logits (largest %g)",
                          cases[i].name, format, ranks, own, largest);
                printf("  %s %s on %d rank%s%s: %.2g from transformers' same arithmetic, %.3g from fp32 (largest |logit| %.3g)\n",
                       cases[i].name, format, ranks, ranks > 1 ? "s" : "", no_amx ? " (no-AMX)" : "", diff, own, largest);
                free(logits);
                fixture q8_view = f; /* its greedy tokens are the quantized reference's */
                q8_view.ref = q8_ref;
                check_greedy(&q8_view, cases[i].name, ranks);
            }
            free(q8_logits);
            fixture_close(&f);
            pf_testing_no_amx_cpu = 0;
        }
}

/* bf16_products asks for bf16 weights (anything else is refused, naming the option), and
   pf_to_cpu keeps it: the gathered rank computes the bits one rank with it computes. */
static void test_cpu_bf16_products_options(void) {
    fixture f;
    if (fixture_open("llama-q8", &f)) return;
    static const pf_dtype others[] = {PF_DTYPE_AUTO, PF_DTYPE_F32, PF_DTYPE_F16, PF_DTYPE_Q8_0, PF_DTYPE_Q4_0};
    pf_parallel_options po = cpu_options();
    po.bf16_products = 1;
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
        po.dtype = others[i];
        CHECK_MSG(pf_parallelize(f.model, 1, &po) == PF_ERROR_INVALID_ARGUMENT &&
                      strstr(pf_error_message(f.model), "bf16_products"),
                  "bf16_products with dtype %d: %s", (int)others[i], pf_error_message(f.model));
    }
    po.dtype = PF_DTYPE_BF16;
    size_t n = (size_t)f.ref.num_prompt_ids * f.vocab;
    float *one_rank = pf_parallelize(f.model, 1, &po) == PF_OK ? prompt_logits(&f) : NULL;
    float *gathered = pf_parallelize(f.model, 2, &po) == PF_OK && pf_to_cpu(f.model) == PF_OK ? prompt_logits(&f) : NULL;
    CHECK_MSG(one_rank && gathered && memcmp(one_rank, gathered, n * sizeof(float)) == 0,
              "bf16 products after pf_to_cpu differ from one rank's by %g",
              one_rank && gathered ? test_max_abs_diff(one_rank, gathered, n) : -1.0f);
    free(one_rank);
    free(gathered);
    fixture_close(&f);
}

/* Attention's scores (for 1 to 4 queries at once) and weighted sum for 0 to 9 rows of every width
   up to 140 (vector bodies, ragged tails, several 64-wide blocks), rows 150 floats apart, on each
   kernel set, against double arithmetic; outputs past the count or width stay untouched. */
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
            rows[i] = dt == 1 ? round_to_format(rows[i], 10, -24) : round_to_format(rows[i], 7, -133);
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

/* Prompt logits of a fixture on `ranks` CPU ranks with weights stored as dtype; NULL on failure
   (reported). The caller frees them. */
static float *stored_logits(const char *name, pf_dtype dtype, int ranks, size_t *count, size_t *bytes) {
    fixture f;
    if (fixture_open(name, &f)) return NULL;
    pf_parallel_options po = cpu_options();
    po.dtype = dtype;
    pf_result r = pf_parallelize(f.model, ranks, &po);
    CHECK_MSG(r == PF_OK, "%s: pf_parallelize(%d ranks, dtype %d): %s", name, ranks, (int)dtype, pf_error_message(f.model));
    float *logits = r == PF_OK ? prompt_logits(&f) : NULL;
    *count = (size_t)f.ref.num_prompt_ids * f.vocab;
    if (bytes) *bytes = pf_memory_allocated(f.model, 0);
    fixture_close(&f);
    return logits;
}

/* x rounded to the nearest value with `bits` bits after the leading one and no bit below 2^lowest
   (ties to even): fp16 is (10, -24), bf16 (7, -133). Exact: scaling by powers of two. */
static float round_to_format(float x, int bits, int lowest) {
    int e;
    if (x == 0.0f || !isfinite(x)) return x;
    frexpf(x, &e); /* the leading bit is 2^(e - 1) */
    int last = e - 1 - bits < lowest ? lowest : e - 1 - bits;
    return ldexpf(nearbyintf(ldexpf(x, -last)), last);
}

/* Writes to dir the fixture's config.json and its model.safetensors with every value rounded to
   fp16 or bf16 (still stored F32); -1 if the fixture is not one all-F32 file. */
static int write_rounded_copy(const char *name, pf_dtype dtype, const char *dir) {
    char from[1100], to[1100];
    size_t size = 0, config_size = 0;
    snprintf(from, sizeof from, "%s/%s/model.safetensors", test_fixtures, name);
    char *file = test_read_file(from, &size);
    snprintf(from, sizeof from, "%s/%s/config.json", test_fixtures, name);
    char *config = test_read_file(from, &config_size);
    uint64_t header = 0;
    int ok = file && config && size >= 8;
    for (int i = 0; ok && i < 8; i++) header |= (uint64_t)(unsigned char)file[i] << (8 * i);
    ok = ok && header <= size - 8 && (size - 8 - header) % 4 == 0;
    if (ok) { /* every tensor F32: the data is one run of floats */
        char saved = file[8 + header];
        file[8 + header] = 0;
        ok = !strstr(file + 8, "F16") && !strstr(file + 8, "I64") && !strstr(file + 8, "BOOL") && !strstr(file + 8, "U8");
        file[8 + header] = saved;
    }
    for (size_t at = 8 + header; ok && at < size; at += 4) {
        float v;
        memcpy(&v, file + at, 4);
        v = dtype == PF_DTYPE_F16 ? round_to_format(v, 10, -24) : round_to_format(v, 7, -133);
        memcpy(file + at, &v, 4);
    }
    snprintf(to, sizeof to, "%s/model.safetensors", dir);
    ok = ok && test_write_file(to, file, size) == 0;
    snprintf(to, sizeof to, "%s/config.json", dir);
    ok = ok && test_write_file(to, config, config_size) == 0;
    free(file);
    free(config);
    return ok ? 0 : -1;
}

/* Prompt logits of a model directory on `ranks` CPU ranks storing dtype; NULL on failure. */
static float *dir_logits(const char *dir, const int *prompt, int num_prompt, pf_dtype dtype, int ranks, size_t *count) {
    pf_model *m = NULL;
    pf_load_options lo = pf_load_options_init();
    lo.skip_tokenizer = 1;
    pf_parallel_options po = cpu_options();
    po.dtype = dtype;
    pf_result r = pf_load(dir, &lo, &m);
    if (r == PF_OK && num_prompt > pf_get_info(m).max_positions) po.max_sequence_length = num_prompt; /* dynamic rope */
    if (r == PF_OK) r = pf_parallelize(m, ranks, &po);
    CHECK_MSG(r == PF_OK, "%s: %s", dir, pf_error_message(m));
    float *logits = NULL;
    if (r == PF_OK) {
        int32_t ids[64];
        *count = (size_t)num_prompt * (size_t)pf_get_info(m).vocab_size;
        logits = (float *)malloc(*count * sizeof(float));
        for (int i = 0; i < num_prompt; i++) ids[i] = prompt[i];
        if (logits && pf_forward(m, ids, 1, num_prompt, logits) != PF_OK) {
            CHECK_MSG(0, "%s: pf_forward: %s", dir, pf_error_message(m));
            free(logits);
            logits = NULL;
        }
    }
    pf_free(m);
    return logits;
}

/* Every family stored in fp16 and bf16 on 1 and 2 CPU ranks computes bit for bit what the same
   checkpoint with its values rounded to that format computes stored in fp32: the stacked and
   fused projections, embeddings, norms and biases of each architecture are stored and read back
   right. */
static void test_cpu_storage_all_families(const char *const *fixtures, size_t num_fixtures) {
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/pf_test_round_XXXXXX");
    if (!mkdtemp(dir)) {
        CHECK_MSG(0, "mkdtemp failed");
        return;
    }
    static const pf_dtype dtypes[] = {PF_DTYPE_F16, PF_DTYPE_BF16};
    int compared = 0;
    for (size_t i = 0; i < num_fixtures; i++)
        for (size_t d = 0; d < 2; d++) {
            char fixture_dir[1024];
            test_reference ref;
            snprintf(fixture_dir, sizeof fixture_dir, "%s/%s", test_fixtures, fixtures[i]);
            if (write_rounded_copy(fixtures[i], dtypes[d], dir) || test_read_reference(fixture_dir, &ref)) continue;
            for (int ranks = 1; ranks <= 2; ranks++) {
                size_t n1 = 0, n2 = 0;
                float *stored = dir_logits(fixture_dir, ref.prompt_ids, ref.num_prompt_ids, dtypes[d], ranks, &n1);
                float *rounded = dir_logits(dir, ref.prompt_ids, ref.num_prompt_ids, PF_DTYPE_F32, ranks, &n2);
                CHECK_MSG(stored && rounded && n1 == n2 && !memcmp(stored, rounded, n1 * sizeof(float)),
                          "%s stored as %s on %d ranks differs from its rounded copy stored as fp32 by %g", fixtures[i],
                          dtypes[d] == PF_DTYPE_F16 ? "fp16" : "bf16", ranks,
                          stored && rounded && n1 == n2 ? test_max_abs_diff(stored, rounded, n1) : -1.0f);
                free(stored);
                free(rounded);
                compared++;
            }
        }
    CHECK_MSG(compared >= 4 * 18, "only %d fixture comparisons ran", compared);
    char path[128];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/config.json", dir);
    unlink(path);
    rmdir(dir);
}

/* Log callback: the weights column of rank 0's row of the memory table. */
static void note_rank0_weights(void *user, pf_log_level level, const char *line) {
    (void)level;
    int rank = -1;
    char device[16];
    int heads, mlp;
    size_t bytes;
    if (sscanf(line, "%d %15s %d %d %zu", &rank, device, &heads, &mlp, &bytes) == 5 && rank == 0) *(size_t *)user = bytes;
}

/* The CPU ranks store weights in fp16 or bf16 when asked (half the bytes) and compute in fp32:
   an fp32 file stored so computes exactly what transformers' own rounding of it (the -f16 and
   -bf16 fixtures, saved by model.to(dtype)) computes stored in fp32; those fixtures stored in
   their own dtype lose nothing, so they meet the fp32 bounds (test_models' loop); the stored
   weights gather back into an fp32 model that computes the same. */
static void test_cpu_storage_dtypes(void) {
    static const struct {
        const char *rounded;
        pf_dtype dtype;
    } cases[] = {{"gpt2-tiny-f16", PF_DTYPE_F16}, {"gpt2-tiny-bf16", PF_DTYPE_BF16}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int ranks = 1; ranks <= 3; ranks += 2)
            for (int portable = 0; portable <= 1; portable++) {
                size_t n1 = 0, n2 = 0;
                pf_testing_portable_cpu = portable;
                float *stored = stored_logits("gpt2-tiny", cases[c].dtype, ranks, &n1, NULL);
                float *rounded = stored_logits(cases[c].rounded, PF_DTYPE_F32, ranks, &n2, NULL);
                CHECK_MSG(stored && rounded && n1 == n2 && memcmp(stored, rounded, n1 * sizeof(float)) == 0,
                          "gpt2-tiny stored as %s on %d ranks (%s kernels) differs from %s stored as fp32 by %g",
                          cases[c].rounded + 10, ranks, portable ? "portable" : "default", cases[c].rounded,
                          stored && rounded && n1 == n2 ? test_max_abs_diff(stored, rounded, n1) : -1.0f);
                free(stored);
                free(rounded);
            }
    pf_testing_portable_cpu = 0;

    /* Weight bytes (from the verbose memory table): the matrices halve; norms and biases, 1.5% of
       gpt2-hub's weights, stay fp32, which leaves 50.8% of the bytes. */
    size_t weights[2] = {0, 0};
    for (int half = 0; half <= 1; half++) {
        char dir[1024];
        pf_model *m = NULL;
        snprintf(dir, sizeof dir, "%s/gpt2-hub", test_fixtures);
        pf_load_options lo = pf_load_options_init();
        lo.skip_tokenizer = 1;
        lo.log = note_rank0_weights;
        lo.log_user = &weights[half];
        pf_parallel_options po = cpu_options();
        po.dtype = half ? PF_DTYPE_BF16 : PF_DTYPE_F32;
        po.verbose = 1;
        CHECK(pf_load(dir, &lo, &m) == PF_OK && pf_parallelize(m, 1, &po) == PF_OK);
        pf_free(m);
    }
    CHECK_MSG(weights[0] > 0 && weights[1] * 100 <= weights[0] * 52, "weight bytes: %zu in fp32, %zu in bf16",
              weights[0], weights[1]);

    /* pf_to_cpu gathers bf16-stored slices into one bf16-stored rank that computes the same
       logits, in half the bytes of fp32. */
    fixture f;
    if (fixture_open("gpt2-hub", &f)) return;
    CHECK(pf_model_device(f.model) == PF_DEVICE_CPU && pf_model_dtype(f.model) == PF_DTYPE_F32); /* before it runs */
    pf_parallel_options po = cpu_options();
    po.dtype = PF_DTYPE_BF16;
    CHECK(pf_parallelize(f.model, 3, &po) == PF_OK);
    CHECK(pf_model_device(f.model) == PF_DEVICE_CPU && pf_model_dtype(f.model) == PF_DTYPE_BF16);
    float *split = prompt_logits(&f);
    CHECK_MSG(pf_to_cpu(f.model) == PF_OK, "pf_to_cpu: %s", pf_error_message(f.model));
    CHECK(pf_model_device(f.model) == PF_DEVICE_CPU && pf_model_dtype(f.model) == PF_DTYPE_BF16 && pf_num_ranks(f.model) == 1);
    float *gathered = prompt_logits(&f);
    CHECK_MSG(split && gathered && test_max_abs_diff(split, gathered, (size_t)f.ref.num_prompt_ids * f.vocab) <= TOLERANCE_RANKS,
              "gathered model differs from the bf16-stored one it came from");
    size_t count = 0, one_rank = 0;
    free(stored_logits("gpt2-hub", PF_DTYPE_BF16, 1, &count, &one_rank));
    CHECK_MSG(pf_memory_allocated(f.model, 0) == one_rank, "after pf_to_cpu: %zu bytes; one bf16 rank holds %zu",
              pf_memory_allocated(f.model, 0), one_rank);
    free(split);
    free(gathered);
    fixture_close(&f);
}

/* What a log callback saw: lines at each level, and whether one said the kv heads are shared. */
typedef struct log_seen {
    int lines[PF_LOG_DEBUG + 1];
    int kv_shared_at; /* the level of the "key/value heads" line, -1 if none */
} log_seen;

static void note_log(void *user, pf_log_level level, const char *line) {
    log_seen *seen = (log_seen *)user;
    if (level >= PF_LOG_ERROR && level <= PF_LOG_DEBUG) seen->lines[level]++;
    if (strstr(line, "key/value heads")) seen->kv_shared_at = (int)level;
}

typedef struct progress_seen {
    int calls, backwards;
    uint64_t last_done, last_total;
} progress_seen;

static void note_progress(void *user, uint64_t done, uint64_t total) {
    progress_seen *seen = (progress_seen *)user;
    if (seen->calls && (done < seen->last_done || total != seen->last_total)) seen->backwards++;
    if (done > total) seen->backwards++;
    seen->calls++;
    seen->last_done = done;
    seen->last_total = total;
}

/* Log lines by level (a user should know that 3 ranks share 2 kv heads; the memory table is a
   detail), and the weight-copy progress: monotonic, ending at its total. */
static void test_logging_and_progress(void) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/llama", test_fixtures);
    for (int quiet = 0; quiet <= 1; quiet++) {
        log_seen seen;
        progress_seen progress;
        memset(&seen, 0, sizeof seen);
        memset(&progress, 0, sizeof progress);
        seen.kv_shared_at = -1;
        pf_load_options lo = pf_load_options_init();
        lo.log = note_log;
        lo.log_user = &seen;
        lo.log_level = quiet ? PF_LOG_WARNING : PF_LOG_DEBUG;
        lo.progress = note_progress;
        lo.progress_user = &progress;
        pf_model *m = NULL;
        pf_parallel_options po = cpu_options();
        CHECK(pf_load(dir, &lo, &m) == PF_OK && pf_parallelize(m, 3, &po) == PF_OK);
        if (quiet) {
            CHECK_MSG(seen.kv_shared_at == -1 && !seen.lines[PF_LOG_INFO] && !seen.lines[PF_LOG_DEBUG],
                      "log_level WARNING delivered %d info and %d debug lines", seen.lines[PF_LOG_INFO], seen.lines[PF_LOG_DEBUG]);
        } else {
            CHECK_MSG(seen.kv_shared_at == PF_LOG_INFO, "the kv heads line came at level %d", seen.kv_shared_at);
            CHECK_MSG(seen.lines[PF_LOG_DEBUG] >= 4, "%d debug lines (the memory table)", seen.lines[PF_LOG_DEBUG]);
        }
        CHECK_MSG(progress.calls >= 1 && !progress.backwards && progress.last_total > 0 &&
                      progress.last_done == progress.last_total,
                  "progress: %d calls, %d backwards, last %llu of %llu", progress.calls, progress.backwards,
                  (unsigned long long)progress.last_done, (unsigned long long)progress.last_total);
        pf_free(m);
    }
}

/* Prompts longer than a step's scratch run in chunks of positions: the same logits as one step
   (within the ranks' tolerance) and the same greedy tokens as transformers, on 1 and 2 ranks, for
   learned positions, rotary (dynamic NTK included), ALiBi and a sliding window. */
static void test_chunked_prefill(void) {
    static const char *const names[] = {"gpt2-tiny", "llama", "llama-rope-dynamic", "bloom", "mistral"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char dir[1024];
        test_reference ref;
        snprintf(dir, sizeof dir, "%s/%s", test_fixtures, names[i]);
        pf_model *m = NULL;
        if (test_read_reference(dir, &ref) || pf_load(dir, NULL, &m) != PF_OK) {
            CHECK_MSG(0, "%s: %s", dir, pf_error_message(m));
            pf_free(m);
            continue;
        }
        size_t count = (size_t)ref.num_prompt_ids * (size_t)ref.vocab_size;
        float *whole = (float *)malloc(count * sizeof(float)), *chunked = (float *)malloc(count * sizeof(float));
        int32_t ids[TEST_MAX_IDS], out[TEST_MAX_IDS];
        for (int t = 0; t < ref.num_prompt_ids; t++) ids[t] = ref.prompt_ids[t];
        for (int ranks = 1; ranks <= 2 && whole && chunked; ranks++) {
            pf_parallel_options po = cpu_options();
            po.max_sequence_length = ref.num_prompt_ids + ref.max_new_tokens;
            int ok = pf_parallelize(m, ranks, &po) == PF_OK && pf_forward(m, ids, 1, ref.num_prompt_ids, whole) == PF_OK;
            po.prefill_chunk = 3; /* 10-odd prompt tokens in chunks of 3 */
            ok = ok && pf_parallelize(m, ranks, &po) == PF_OK && pf_forward(m, ids, 1, ref.num_prompt_ids, chunked) == PF_OK;
            CHECK_MSG(ok, "%s on %d ranks: %s", names[i], ranks, pf_error_message(m));
            if (!ok) continue;
            float diff = test_max_abs_diff(whole, chunked, count);
            CHECK_MSG(diff <= TOLERANCE_RANKS, "%s on %d ranks: chunked prefill differs by %g", names[i], ranks, diff);
            pf_generate_options o = pf_generate_options_init();
            o.max_new_tokens = ref.max_new_tokens;
            int n = 0;
            pf_result r = pf_generate(m, ids, ref.num_prompt_ids, &o, out, TEST_MAX_IDS, &n);
            int same = r == PF_OK && n == ref.num_greedy_ids;
            for (int t = 0; same && t < n; t++) same = out[t] == ref.greedy_ids[t];
            CHECK_MSG(same, "%s on %d ranks: greedy tokens after a chunked prefill differ from transformers'", names[i], ranks);
        }
        free(whole);
        free(chunked);
        pf_free(m);
    }
}

void test_models(void) {
    test_logging_and_progress();
    test_chunked_prefill();
    const char *fixtures[] = {"gpt2-tiny", "gpt2-hub", "gpt2-tiny-f16", "gpt2-tiny-bf16", "gpt2-sharded",
                              "gpt_neo", "gptj", "gpt_neox", "gpt_neox-seq", "opt", "opt-350m-style", "bloom",
                              "llama", "llama-rope-linear", "llama-rope-dynamic", "llama3-rope", "mistral", "qwen2",
                              "codegen", "openai-gpt", "ctrl", "gpt_neo-attention-types", "bloom-post-ln-residual",
                              "llama-biases", "qwen2-window-layers", "llama-eos-list", "llama-generation-config"};
    for (size_t i = 0; i < sizeof fixtures / sizeof fixtures[0]; i++) test_fixture(fixtures[i]);
#ifdef PF_TESTING
    /* The same on the portable kernel, which machines without AVX2 run. */
    pf_testing_portable_cpu = 1;
    cpu_kernels = "portable kernels";
    for (size_t i = 0; i < sizeof fixtures / sizeof fixtures[0]; i++) test_fixture(fixtures[i]);
    pf_testing_portable_cpu = 0;
    cpu_kernels = "default kernels";
    test_cpu_matmul();
    test_cpu_matmul_shapes();
    test_cpu_storage_dtypes();
    test_cpu_storage_all_families(fixtures, sizeof fixtures / sizeof fixtures[0]);
    test_fixture_stored("gpt2-tiny-f16", PF_DTYPE_F16);
    test_fixture_stored("gpt2-tiny-bf16", PF_DTYPE_BF16);
    test_cpu_attention_kernels();
    test_cpu_row_attention_kernels();
    test_cpu_activation_kernels();
    test_quantizer_rounding();
    test_activation_quantizer();
    test_cpu_q8_kernels(0);
    test_cpu_q8_kernels(1);
    test_cpu_quantized(PF_DTYPE_Q8_0, 0);
    test_cpu_quantized(PF_DTYPE_Q4_0, 0);
    test_cpu_bf16_products_kernel();
    test_cpu_sum_shifted();
    test_cpu_quantized(PF_DTYPE_BF16, 1);
    test_cpu_bf16_products_options();
#endif
    test_to_cpu_and_memory();
    test_cpu_kv_cache_dtypes();
    test_batch();
    test_bad_arguments();
#ifdef PF_TESTING
    test_failing_rank();
#endif
}
