/* GGUF files (issue 12): the fixtures of test/fixtures/gguf (written by make_gguf_fixtures.py with
   the gguf package, as llama.cpp lays models out) against transformers on the same weights, on 1
   and 2 ranks; the F32 LLaMA against our safetensors load of the same checkpoint, bit for bit;
   the GPT-2 and SentencePiece tokenizers from the metadata against the fixtures' tokenizer.json;
   and bad files (truncated at every byte, lying counts, lengths and offsets, unknown types,
   overflowing dimensions, duplicate names, keys we cannot honour), each a clear error. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"
#include "testing_hooks.h"

#define GGUF_LOGIT_TOLERANCE 1e-4f /* fp32 against fp32 on the same weights, as every fixture */
/* dtype q8 keeps a file's blocks too but multiplies them against int8-rounded activations, as
   llama.cpp's vec_dot does (test_cpu_kernels.c bounds each product by that rounding: 1/254 of a
   block's largest input an input). On these random fixtures a product is about 1/16 of its sum
   of |w x| (random signs over 256 inputs), so its relative error reaches a few percent and
   compounds over the layers: llama-quant lands at 3.0 % of its largest logit, gpt2-q8 at 0.6 %.
   Checked: within 5 % of the largest logit, and the same greedy tokens. */
#define GGUF_BLOCKS_TOLERANCE 0.05f
#define GGUF_NEW_TOKENS 8          /* as make_gguf_fixtures.py */

static void gguf_check_reference_line(char *line) {
    char *fields[4] = {line, NULL, NULL, NULL};
    for (int k = 1; k < 4; k++) {
        fields[k] = strchr(fields[k - 1], '\t');
        if (!fields[k]) {
            CHECK_MSG(0, "gguf/gguf_reference.txt: a line without 4 fields");
            return;
        }
        *fields[k]++ = 0;
    }
    int ids[TEST_MAX_IDS], greedy[TEST_MAX_IDS];
    int num_ids = test_parse_ids(fields[1], ids, TEST_MAX_IDS), num_greedy = test_parse_ids(fields[2], greedy, TEST_MAX_IDS);
    char path[1024];
    snprintf(path, sizeof path, "%s/gguf/%s.gguf", test_fixtures, fields[0]);
    pf_model *m = NULL;
    pf_result r = pf_load(path, NULL, &m);
    CHECK_MSG(r == PF_OK && num_ids > 0 && num_greedy > 0, "%s: %s", path, pf_error_message(m));
    if (r) {
        pf_free(m);
        return;
    }
    size_t vocab = (size_t)pf_get_info(m).vocab_size, count = 0;
    float *want = (float *)malloc((size_t)num_ids * vocab * sizeof(float)), *got = (float *)malloc((size_t)num_ids * vocab * sizeof(float));
    for (char *p = fields[3]; want && *p && count < (size_t)num_ids * vocab;) {
        char *end;
        want[count++] = strtof(p, &end);
        p = *end == ',' ? end + 1 : end;
        if (end == p && *p) break;
    }
    CHECK_MSG(count == (size_t)num_ids * vocab, "%s: %zu reference logits for %d positions of %zu", path, count, num_ids, vocab);
    int32_t prompt[TEST_MAX_IDS];
    for (int i = 0; i < num_ids; i++) prompt[i] = ids[i];
    float largest = 0;
    for (size_t i = 0; i < count; i++) largest = fabsf(want[i]) > largest ? fabsf(want[i]) : largest;
    /* dtype f32 expands every tensor (as the gguf package dequantizes); the default keeps the
       blocks and multiplies them against fp32 activations; q8 against int8 ones */
    static const pf_dtype dtypes[3] = {PF_DTYPE_F32, PF_DTYPE_AUTO, PF_DTYPE_Q8_0};
    size_t weights[3] = {0, 0, 0}; /* on 1 rank, per dtype */
    for (int run = 0; got && count == (size_t)num_ids * vocab && run < 6; run++) {
        int ranks = 1 + run % 2, blocks = run >= 2, int8 = run >= 4;
        pf_parallel_options po = pf_parallel_options_init();
        po.device = PF_DEVICE_CPU;
        po.dtype = dtypes[run / 2];
        r = pf_parallelize(m, ranks, &po);
        pf_memory_info memory = {0};
        if (!r) r = pf_get_memory_info(m, 0, &memory);
        if (!r && ranks == 1) weights[run / 2] = memory.weights;
        if (int8 && weights[1] >= weights[0]) break; /* no blocks in the file: q8 would requantize (not this test) */
        if (!r) r = pf_forward(m, prompt, 1, num_ids, got);
        if (r && blocks && ranks == 2 && strstr(pf_error_message(m), "use fewer ranks, or dtype f32")) {
            printf("  %s: on 2 ranks, %s\n", fields[0], pf_error_message(m)); /* K blocks of 256 on 128-wide halves */
            continue;
        }
        CHECK_MSG(r == PF_OK, "%s on %d ranks: %s", fields[0], ranks, pf_error_message(m));
        if (r) continue;
        float diff = test_max_abs_diff(got, want, count);
        float tolerance = int8 && largest * GGUF_BLOCKS_TOLERANCE > GGUF_LOGIT_TOLERANCE ? largest * GGUF_BLOCKS_TOLERANCE
                                                                                         : GGUF_LOGIT_TOLERANCE;
        static const char *const how[3] = {"", " (in blocks)", " (dtype q8)"};
        CHECK_MSG(diff <= tolerance, "%s on %d ranks%s: logits differ from transformers' by %g", fields[0], ranks,
                  how[run / 2], diff);
        pf_generate_options o = pf_model_generate_options(m);
        o.max_new_tokens = GGUF_NEW_TOKENS;
        int32_t out[TEST_MAX_IDS];
        int n = 0;
        r = pf_generate(m, prompt, num_ids, &o, out, TEST_MAX_IDS, &n);
        int same = r == PF_OK && n == num_greedy;
        for (int i = 0; same && i < n; i++) same = out[i] == greedy[i];
        /* int8 rounding may flip these random models' near ties: q8 is held to its logits' bound */
        CHECK_MSG(same || (int8 && r == PF_OK), "%s on %d ranks%s: greedy tokens differ from transformers' (%s)", fields[0],
                  ranks, how[run / 2], pf_result_string(r));
        if (ranks == 1 && (!blocks || diff > GGUF_LOGIT_TOLERANCE))
            printf("  %s%s: %zu logits within %.1e of transformers' (%.1f %% of the largest)\n", fields[0], how[run / 2],
                   count, diff, 100.0 * diff / largest);
    }
    free(want);
    free(got);
    pf_free(m);
}

/* The F32 file holds the llama fixture's weights: the same logits as its safetensors, bit for bit
   (the un-permuted q and k rows included). */
static void gguf_check_same_as_safetensors(void) {
    char dir[1024], path[1024];
    snprintf(dir, sizeof dir, "%s/llama", test_fixtures);
    snprintf(path, sizeof path, "%s/gguf/llama-f32.gguf", test_fixtures);
    pf_model *a = NULL, *b = NULL;
    pf_result ra = pf_load(dir, NULL, &a), rb = pf_load(path, NULL, &b);
    CHECK_MSG(ra == PF_OK && rb == PF_OK, "%s / %s", pf_error_message(a), pf_error_message(b));
    if (!ra && !rb) {
        int32_t ids[6] = {1, 464, 398, 266, 372, 340};
        size_t vocab = (size_t)pf_get_info(a).vocab_size;
        float *la = (float *)malloc(6 * vocab * sizeof(float)), *lb = (float *)malloc(6 * vocab * sizeof(float));
        ra = pf_forward(a, ids, 1, 6, la);
        rb = pf_forward(b, ids, 1, 6, lb);
        CHECK_MSG(ra == PF_OK && rb == PF_OK && pf_get_info(b).vocab_size == (int)vocab &&
                      !memcmp(la, lb, 6 * vocab * sizeof(float)),
                  "llama-f32.gguf: logits differ from the safetensors checkpoint's");
        free(la);
        free(lb);
    }
    pf_free(a);
    pf_free(b);
}

/* A quantized file's weights held by default in its own blocks: the rank's weight bytes within 5 %
   of the file's size (the file's BF16 norms are fp32 on CPU ranks; the metadata is not copied),
   and a quarter of what dtype f32 expands them to at most. qwen3moe-quant: its experts, stacked
   in the file, held as views of each expert's rows (its router is F32 in the file too). */
static void gguf_check_blocks_memory(const char *file) {
    char path[1024];
    snprintf(path, sizeof path, "%s/gguf/%s", test_fixtures, file);
    size_t file_size = 0;
    free(test_read_file(path, &file_size));
    pf_model *m = NULL;
    pf_result r = pf_load(path, NULL, &m);
    pf_memory_info blocks = {0}, expanded = {0};
    pf_parallel_options po = pf_parallel_options_init();
    po.device = PF_DEVICE_CPU;
    if (!r) r = pf_parallelize(m, 1, &po);
    if (!r) r = pf_get_memory_info(m, 0, &blocks);
    po.dtype = PF_DTYPE_F32;
    if (!r) r = pf_parallelize(m, 1, &po);
    if (!r) r = pf_get_memory_info(m, 0, &expanded);
    CHECK_MSG(r == PF_OK && file_size && blocks.weights <= file_size + file_size / 20 && 4 * blocks.weights <= expanded.weights,
              "%s (%zu bytes): weights take %zu bytes in blocks, %zu in fp32 (%s)", file, file_size,
              blocks.weights, expanded.weights, pf_error_message(m));
    printf("  %s (%zu bytes): weights in %zu bytes in their blocks, %zu expanded to fp32\n", file, file_size,
           blocks.weights, expanded.weights);
    pf_free(m);
}

/* pf_to_cpu gathers 2 ranks' blocks as their fp32 values: the same logits within fp32's rounding
   of the sums. gpt2-q8 keeps its Q8_0 embedding and head in blocks (its Conv1D matrices are
   transposed at load, hence expanded); llama-q2k every matrix in Q2_K blocks, 512 wide, so that
   the row-split halves are whole blocks (llama-quant's 256-wide K blocks do not split). */
static void gguf_check_blocks_to_cpu(const char *file) {
    char path[1024];
    snprintf(path, sizeof path, "%s/gguf/%s", test_fixtures, file);
    pf_model *m = NULL;
    pf_result r = pf_load(path, NULL, &m);
    int32_t ids[5] = {1, 17, 42, 5, 88};
    size_t vocab = r ? 0 : (size_t)pf_get_info(m).vocab_size;
    float *kept = (float *)malloc(5 * vocab * sizeof(float) + 1), *gathered = (float *)malloc(5 * vocab * sizeof(float) + 1);
    pf_parallel_options po = pf_parallel_options_init();
    po.device = PF_DEVICE_CPU;
    if (!r) r = pf_parallelize(m, 2, &po);
    if (!r) r = pf_forward(m, ids, 1, 5, kept);
    if (!r) r = pf_to_cpu(m);
    if (!r) r = pf_forward(m, ids, 1, 5, gathered);
    float diff = r ? 1.0f : test_max_abs_diff(kept, gathered, 5 * vocab);
    CHECK_MSG(r == PF_OK && diff <= GGUF_LOGIT_TOLERANCE, "%s: pf_to_cpu of 2 ranks' blocks: %s, logits %g apart", file,
              pf_error_message(m), diff);
    free(kept);
    free(gathered);
    pf_free(m);
}

/* The tokenizer from a GGUF's metadata against the fixture's tokenizer.json, on every case of the
   fixture's cases files: the same ids (special tokens added), the same text back. */
static void gguf_check_tokenizer(const char *fixture, const char *gguf) {
    char dir[1024], path[1024];
    snprintf(dir, sizeof dir, "%s/%s", test_fixtures, fixture);
    snprintf(path, sizeof path, gguf[0] == '/' ? "%s%s" : "%s/gguf/%s", gguf[0] == '/' ? "" : test_fixtures, gguf);
    pf_tokenizer *want = NULL;
    pf_model *m = NULL;
    char err[256] = "";
    pf_result r = pf_tokenizer_load(dir, &want, err, sizeof err);
    pf_result rm = pf_load(path, NULL, &m);
    pf_tokenizer *got = rm == PF_OK ? pf_model_tokenizer(m) : NULL;
    CHECK_MSG(r == PF_OK && got, "%s / %s: %s", err, gguf, pf_error_message(m));
    int checked = 0, same = 0;
    static const char *const files[] = {"cases.txt", "cases_special.txt"};
    for (size_t k = 0; k < sizeof files / sizeof files[0]; k++) {
        char cases[1100];
        size_t size = 0;
        snprintf(cases, sizeof cases, "%s/%s", dir, files[k]);
        char *data = k ? (access(cases, R_OK) ? NULL : test_read_file(cases, &size)) : test_read_file(cases, &size);
        for (char *line = data; got && want && line && *line;) {
            char *next = strchr(line, '\n');
            if (next) *next++ = 0;
            char *tab = strchr(line, '\t');
            static char text[16384], da[65536], db[65536];
            static int32_t a[8192], b[8192];
            size_t n = 0;
            for (char *h = line; tab && h + 1 < tab && n + 1 < sizeof text; h += 2) {
                unsigned byte;
                if (sscanf(h, "%2x", &byte) == 1) text[n++] = (char)byte;
            }
            size_t na = 0, nb = 0;
            pf_result ra = pf_tokenize_special(want, text, n, a, 8192, &na), rb = pf_tokenize_special(got, text, n, b, 8192, &nb);
            size_t la = 0, lb = 0;
            int decoded = ra == PF_OK && rb == PF_OK && pf_detokenize(want, a, na, da, sizeof da, &la) == PF_OK &&
                          pf_detokenize(got, b, nb, db, sizeof db, &lb) == PF_OK && la <= sizeof da;
            checked++;
            same += decoded && na == nb && !memcmp(a, b, na * sizeof(int32_t)) && la == lb && !memcmp(da, db, la);
            line = next;
        }
        free(data);
    }
    CHECK_MSG(checked >= 10 && same == checked, "%s's tokenizer: %d of %d cases as %s's tokenizer.json", gguf, same, checked,
              fixture);
    printf("  %s's tokenizer: %d of %d cases as %s's tokenizer.json\n", gguf, same, checked, fixture);
    pf_tokenizer_free(want);
    pf_free(m);
}

static float gguf_f16(const unsigned char *p) { /* the normal and zero fp16 values the blocks use */
    unsigned h = p[0] | (unsigned)p[1] << 8, exponent = (h >> 10) & 31;
    float v = exponent ? ldexpf(1.0f + (float)(h & 1023) / 1024.0f, (int)exponent - 15) : ldexpf((float)(h & 1023), -24);
    return h & 0x8000 ? -v : v;
}

/* --dtype q8 / q4 on a GGUF's Q8_0 / Q4_0 weights: the rank formats are llama.cpp's blocks, and
   quantizing a block that llama.cpp's quantizer wrote, once dequantized, gives that block back
   (its extreme weight fixes the same fp16 scale, every weight the same integer), so the ranks hold
   the file's own blocks. Checked on blocks made as llama.cpp makes them: Q8_0 with a weight at
   +-127, Q4_0 with its extreme at q = 0; scales k / 1024 are exact in fp16. */
static void gguf_check_requantized_blocks(void) {
    enum { BLOCKS = 64 };
    static float weights[BLOCKS * 32];
    int q8_same = 0, q4_same = 0;
    unsigned seed = 12;
    for (int kind = 0; kind < 2; kind++) {
        static int q[BLOCKS][32];
        static float d[BLOCKS];
        for (int b = 0; b < BLOCKS; b++) {
            seed = seed * 1103515245u + 12345u;
            /* Q8_0's scale is amax / 127, never negative; Q4_0's is the extreme weight / -8, of either sign */
            d[b] = (float)(1 + (seed >> 16) % 1000) / 1024.0f * (kind && (seed >> 8) & 1 ? -1.0f : 1.0f);
            for (int i = 0; i < 32; i++) {
                seed = seed * 1103515245u + 12345u;
                q[b][i] = kind ? (int)((seed >> 16) % 16) : (int)((seed >> 16) % 255) - 127;
            }
            q[b][(seed >> 4) % 32] = kind ? 0 : ((seed >> 9) & 1 ? 127 : -127);
            for (int i = 0; i < 32; i++) weights[b * 32 + i] = d[b] * (float)(kind ? q[b][i] - 8 : q[b][i]);
        }
        if (kind) pf_testing_q4_quantize(weights, BLOCKS, 32);
        else pf_testing_q8_quantize(weights, BLOCKS, 32);
        const unsigned char *blocks = (const unsigned char *)weights;
        for (int b = 0; b < BLOCKS; b++) {
            const unsigned char *block = blocks + b * (kind ? 18 : 34);
            int same = gguf_f16(block) == d[b];
            for (int i = 0; i < 32 && same; i++)
                same = kind ? (i < 16 ? block[2 + i] & 15 : block[2 + i - 16] >> 4) == q[b][i]
                            : (int)(signed char)block[2 + i] == q[b][i];
            if (kind) q4_same += same;
            else q8_same += same;
        }
    }
    CHECK_MSG(q8_same == BLOCKS && q4_same == BLOCKS, "re-quantized llama.cpp blocks: %d of %d Q8_0 and %d of %d Q4_0 the same",
              q8_same, BLOCKS, q4_same, BLOCKS);
}

/* The logits of the GGUF file at path for the prompt on `ranks` CPU ranks in dtype into logits,
   and the weights' bytes on rank 0. */
static pf_result gguf_run(const char *path, int ranks, pf_dtype dtype, const int32_t *prompt, int n, float *logits,
                          size_t *weights) {
    pf_model *m = NULL;
    pf_result r = pf_load(path, NULL, &m);
    pf_parallel_options po = pf_parallel_options_init();
    po.device = PF_DEVICE_CPU;
    po.dtype = dtype;
    pf_memory_info memory = {0};
    if (!r) r = pf_parallelize(m, ranks, &po);
    if (!r) r = pf_get_memory_info(m, 0, &memory);
    if (!r) r = pf_forward(m, prompt, 1, n, logits);
    CHECK_MSG(r == PF_OK, "%s on %d ranks: %s", path, ranks, pf_error_message(m));
    *weights = memory.weights;
    pf_free(m);
    return r;
}

/* Whether files a and b hold the same bytes. */
static int gguf_same_file(const char *a, const char *b) {
    size_t a_size = 0, b_size = 0;
    char *x = test_read_file(a, &a_size), *y = test_read_file(b, &b_size);
    int same = x && y && a_size == b_size && !memcmp(x, y, a_size);
    free(x);
    free(y);
    return same;
}

/* pf_quantize_gguf (build/quantize) keeps a quantization made at load: an F32 file written as
   Q8_0 (Q4_0) and loaded with that dtype gives the logits, bit for bit, of the F32 file loaded
   with it, on a rank (GPT-NeoX's fused qkv; Llama 4's stacked experts beside its router, which
   stays F32; on ranks whose slices cut blocks, those slices keep fp16 of the values either file
   holds); loaded as it is, its weights take under a third (a sixth) of the F32 ones';
   written as F32 and back, the copy is the same file. Bad calls are refused with a message. */
static void gguf_check_quantize_file(const char *file, const char *dir) {
    char f32[1100], copy[1100], back[1100], again[1100], error[512];
    snprintf(f32, sizeof f32, "%s/gguf/%s", test_fixtures, file);
    snprintf(copy, sizeof copy, "%s/copy.gguf", dir);
    snprintf(back, sizeof back, "%s/back.gguf", dir);
    snprintf(again, sizeof again, "%s/again.gguf", dir);
    static const int32_t prompt[5] = {1, 17, 42, 5, 88};
    static const pf_dtype dtypes[2] = {PF_DTYPE_Q8_0, PF_DTYPE_Q4_0};
    float want[5 * 512], got[5 * 512];
    size_t f32_weights = 0, weights = 0;
    pf_model *probe = NULL;
    pf_result r = pf_load(f32, NULL, &probe);
    size_t count = r ? 0 : 5 * (size_t)pf_get_info(probe).vocab_size;
    pf_free(probe);
    CHECK_MSG(r == PF_OK && count && count <= sizeof want / sizeof *want, "%s: vocabulary of %zu", file, count / 5);
    if (r || !count || count > sizeof want / sizeof *want || gguf_run(f32, 1, PF_DTYPE_AUTO, prompt, 5, want, &f32_weights))
        return;
    for (int k = 0; k < 2; k++) {
        const char *name = k ? "q4_0" : "q8_0";
        r = pf_quantize_gguf(f32, copy, dtypes[k], error, sizeof error);
        CHECK_MSG(r == PF_OK, "pf_quantize_gguf %s %s: %s", file, name, error);
        if (r || gguf_run(copy, 1, PF_DTYPE_AUTO, prompt, 5, got, &weights)) continue;
        CHECK_MSG((k ? 6 : 3) * weights < f32_weights, "%s as %s: weights in %zu bytes, %zu in F32", file, name, weights,
                  f32_weights);
        printf("  %s as %s: weights in %zu bytes (%zu in F32)\n", file, name, weights, f32_weights);
        if (!gguf_run(f32, 1, dtypes[k], prompt, 5, want, &weights) && !gguf_run(copy, 1, dtypes[k], prompt, 5, got, &weights))
            CHECK_MSG(!memcmp(want, got, count * sizeof *got), "%s as %s: logits %g from the F32 file's in %s", file, name,
                      test_max_abs_diff(got, want, count), name);
        r = pf_quantize_gguf(copy, back, PF_DTYPE_F32, error, sizeof error);
        if (!r) r = pf_quantize_gguf(back, again, dtypes[k], error, sizeof error);
        CHECK_MSG(r == PF_OK && gguf_same_file(copy, again), "%s as %s, as F32, as %s again: %s", file, name, name,
                  r ? error : "another file");
    }
    unlink(copy);
    unlink(back);
    unlink(again);
}

static void gguf_check_quantize(void) {
    char dir[] = "/tmp/pf_gguf_quantize_XXXXXX", path[1100], out[1100], error[512];
    if (!mkdtemp(dir)) {
        CHECK_MSG(0, "mkdtemp");
        return;
    }
    gguf_check_quantize_file("gpt_neox-f32.gguf", dir);
    gguf_check_quantize_file("llama4-f32.gguf", dir);
    snprintf(path, sizeof path, "%s/gguf/gpt_neox-f32.gguf", test_fixtures);
    snprintf(out, sizeof out, "%s/out.gguf", dir);
    pf_result r = pf_quantize_gguf(path, out, PF_DTYPE_AUTO, error, sizeof error);
    CHECK_MSG(r == PF_ERROR_INVALID_ARGUMENT && strstr(error, "is not f32, f16, bf16, q8_0 or q4_0"), "dtype auto: %s", error);
    snprintf(path, sizeof path, "%s/gguf/gguf_reference.txt", test_fixtures);
    r = pf_quantize_gguf(path, out, PF_DTYPE_Q8_0, error, sizeof error);
    CHECK_MSG(r == PF_ERROR_FORMAT && strstr(error, "not a GGUF file"), "a text file: %s", error);
    snprintf(path, sizeof path, "%s/gguf/llama-split-00001-of-00003.gguf", test_fixtures);
    r = pf_quantize_gguf(path, out, PF_DTYPE_Q8_0, error, sizeof error);
    CHECK_MSG(r == PF_ERROR_UNSUPPORTED && strstr(error, "a GGUF split over 3 files"), "a split file: %s", error);
    snprintf(path, sizeof path, "%s/gguf/gpt_neox-f32.gguf", test_fixtures);
    snprintf(out, sizeof out, "%s/no/such/dir/out.gguf", dir);
    r = pf_quantize_gguf(path, out, PF_DTYPE_Q8_0, error, sizeof error);
    CHECK_MSG(r == PF_ERROR_IO && strstr(error, "cannot create it"), "an output in no directory: %s", error);
    rmdir(dir);
}

/* The greedy tokens of the model at path (a directory or a GGUF file) in dtype on a CPU rank. */
static int gguf_greedy(const char *path, pf_dtype dtype, const int32_t *prompt, int n, int32_t *out) {
    pf_model *m = NULL;
    pf_parallel_options po = pf_parallel_options_init();
    po.device = PF_DEVICE_CPU;
    po.dtype = dtype;
    int count = 0;
    pf_result r = pf_load(path, NULL, &m);
    if (!r) r = pf_parallelize(m, 1, &po);
    pf_generate_options o = r ? pf_generate_options_init() : pf_model_generate_options(m);
    o.max_new_tokens = GGUF_NEW_TOKENS;
    if (!r) r = pf_generate(m, prompt, n, &o, out, TEST_MAX_IDS, &count);
    CHECK_MSG(r == PF_OK, "%s: generate: %s", path, pf_error_message(m));
    pf_free(m);
    return r ? -1 : count;
}

/* The saved file's tokenizer against the directory's on varied texts (every fixture; those with
   cases files are checked on them too): the same ids, special tokens added, and the same text back. */
static void gguf_check_saved_tokenizer(const char *dir, const char *path) {
    static const char *const texts[] = {
        "Hello world, this is a test.", "  leading spaces and trailing   ", "The year 2024: 12345 numbers, 3.14159!",
        "caf\xc3\xa9 na\xc3\xafve \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e \xf0\x9f\x98\x80", "tabs\tand\nnew\r\nlines\n\n",
        "<|endoftext|>x<|begin_of_text|>", "don't won't it's I'm we'll they'd", "a\xcc\x81 combining, \xef\xbd\x81 fullwidth"};
    pf_tokenizer *want = NULL;
    pf_model *m = NULL;
    char err[256] = "";
    pf_result r = pf_tokenizer_load(dir, &want, err, sizeof err);
    pf_result rm = pf_load(path, NULL, &m);
    pf_tokenizer *got = rm == PF_OK ? pf_model_tokenizer(m) : NULL;
    CHECK_MSG(r == PF_OK && got, "%s / %s: %s %s", dir, path, err, pf_error_message(m));
    int same = 0;
    for (size_t i = 0; got && want && i < sizeof texts / sizeof texts[0]; i++) {
        static int32_t a[1024], b[1024];
        static char da[8192], db[8192];
        size_t na = 0, nb = 0, la = 0, lb = 0, n = strlen(texts[i]);
        int ok = pf_tokenize_special(want, texts[i], n, a, 1024, &na) == PF_OK &&
                 pf_tokenize_special(got, texts[i], n, b, 1024, &nb) == PF_OK && na == nb && !memcmp(a, b, na * sizeof *a) &&
                 pf_detokenize(want, a, na, da, sizeof da, &la) == PF_OK && pf_detokenize(got, b, nb, db, sizeof db, &lb) == PF_OK &&
                 la == lb && la <= sizeof da && !memcmp(da, db, la);
        CHECK_MSG(ok, "%s's tokenizer: text %zu gives other ids or text than %s's", path, i, dir);
        same += ok;
    }
    printf("  %s's tokenizer: %d of %zu varied texts as the directory's\n", path, same, sizeof texts / sizeof texts[0]);
    pf_tokenizer_free(want);
    pf_free(m);
}

/* A model directory saved as GGUF (pf_quantize_gguf of a directory, issue 38) is the directory's
   model, bit for bit: as F32, its logits are the directory's (the q/k rows permuted and Conv1D
   transposed into the file come back as they were; the norms' epsilon, float32 in GGUF, changes
   nothing here), and so are its greedy tokens; as Q8_0 and Q4_0, loaded in that dtype, the logits
   and greedy tokens of the directory loaded in it (the same quantizer on the same rows; GPT-2's
   Conv1D matrices, transposed at load, are requantized from their dequantized blocks, which gives
   the same blocks), and the smaller the type the smaller the file (or the same, where the model is
   too narrow for the blocks: 48 wide); its tokenizer gives the
   directory's ids and text on varied texts, and on every case of cases_of (a fixture with the
   directory's tokenizer.json and cases files; NULL: none). */
static void gguf_check_save_directory(const char *fixture, const char *cases_of, const char *tmp) {
    char dir[1100], out[1100], error[512];
    const char *slash = strrchr(fixture, '/');
    if (fixture[0] == '/') snprintf(dir, sizeof dir, "%s", fixture); /* a directory made by the test: no tokenizer */
    else snprintf(dir, sizeof dir, "%s/%s", test_fixtures, fixture);
    snprintf(out, sizeof out, "%s/%s.gguf", tmp, slash ? slash + 1 : fixture);
    static const int32_t prompt[5] = {1, 17, 42, 5, 88};
    static const pf_dtype dtypes[3] = {PF_DTYPE_F32, PF_DTYPE_Q8_0, PF_DTYPE_Q4_0};
    static const char *const names[3] = {"f32", "q8_0", "q4_0"};
    static float want[5 * 1024], got[5 * 1024];
    size_t sizes[3] = {0, 0, 0};
    for (int k = 0; k < 3; k++) {
        pf_result r = pf_quantize_gguf(dir, out, dtypes[k], error, sizeof error);
        CHECK_MSG(r == PF_OK, "pf_quantize_gguf %s %s: %s", fixture, names[k], error);
        if (r) continue;
        pf_dtype load = k ? dtypes[k] : PF_DTYPE_AUTO;
        size_t weights = 0;
        pf_model *probe = NULL;
        r = pf_load(dir, NULL, &probe);
        size_t count = r ? 0 : 5 * (size_t)pf_get_info(probe).vocab_size;
        /* 32 inputs a block: a model 48 wide converts few matrices (or none), and never grows */
        int converts = !r && pf_get_info(probe).hidden_size % 32 == 0;
        pf_free(probe);
        size_t file_size = 0;
        free(test_read_file(out, &file_size));
        CHECK_MSG(file_size && (!k || file_size < sizes[k - 1] || (!converts && file_size == sizes[k - 1])),
                  "%s saved as %s: %zu bytes, %s %zu", fixture, names[k], file_size,
                  k ? "not fewer than the previous type's" : "", k ? sizes[k - 1] : 0);
        sizes[k] = file_size;
        if (r || !count || count > sizeof want / sizeof *want || gguf_run(dir, 1, load, prompt, 5, want, &weights) ||
            gguf_run(out, 1, load, prompt, 5, got, &weights)) {
            CHECK_MSG(0, "%s as %s: no logits to compare", fixture, names[k]);
            continue;
        }
        float diff = test_max_abs_diff(got, want, count);
        CHECK_MSG(!memcmp(got, want, count * sizeof *got), "%s saved as %s: logits %g from the directory's", fixture, names[k],
                  diff);
        int32_t a[TEST_MAX_IDS], b[TEST_MAX_IDS];
        int na = gguf_greedy(dir, load, prompt, 5, a), nb = gguf_greedy(out, load, prompt, 5, b);
        CHECK_MSG(na > 0 && na == nb && !memcmp(a, b, (size_t)na * sizeof *a), "%s saved as %s: greedy tokens differ from the "
                  "directory's", fixture, names[k]);
        printf("  %s saved as %s (%zu bytes): its %zu logits the directory's (%g apart), the same %d greedy tokens\n", fixture,
               names[k], file_size, count, diff, na);
        if (!k && fixture[0] != '/') gguf_check_saved_tokenizer(dir, out);
        if (!k && cases_of) gguf_check_tokenizer(cases_of, out);
    }
    unlink(out);
}

/* An encoder's outputs on bert-save's hidden_ids.txt: last hidden states (each row's tokens after
   the other's) and pf_embed's vectors (the model's pooling and normalisation), on `ranks` ranks. */
static int gguf_encode(const char *path, int ranks, pf_dtype dtype, float *hidden, size_t hidden_cap, size_t *hidden_count,
                       float *embeds, size_t embeds_cap) {
    char ids_path[1100];
    snprintf(ids_path, sizeof ids_path, "%s/bert-save/hidden_ids.txt", test_fixtures);
    size_t size = 0;
    char *text = test_read_file(ids_path, &size);
    static int32_t rows[2][64];
    const int32_t *ids[2] = {rows[0], rows[1]};
    int lengths[2] = {0, 0}, batch = 0;
    for (char *line = text; line && *line && batch < 2; batch++) {
        char *next = strchr(line, '\n');
        if (next) *next++ = 0;
        for (char *tok = strtok(line, ","); tok && lengths[batch] < 64; tok = strtok(NULL, ","))
            rows[batch][lengths[batch]++] = atoi(tok);
        line = next;
    }
    free(text);
    pf_model *m = NULL;
    pf_encoding *e = NULL;
    pf_parallel_options po = pf_parallel_options_init();
    po.device = PF_DEVICE_CPU;
    po.dtype = dtype;
    po.max_batch = 2;
    pf_result r = batch == 2 ? pf_load(path, NULL, &m) : PF_ERROR_INVALID_ARGUMENT;
    if (!r) r = pf_parallelize(m, ranks, &po);
    if (!r) r = pf_encode(m, ids, NULL, lengths, 2, &e);
    int hidden_size = r ? 0 : e->hidden_size;
    *hidden_count = r ? 0 : (size_t)e->offsets[2] * (size_t)hidden_size;
    if (!r && (*hidden_count > hidden_cap || 2 * (size_t)hidden_size > embeds_cap)) r = PF_ERROR_INVALID_ARGUMENT;
    if (!r) memcpy(hidden, e->last_hidden_state, *hidden_count * sizeof *hidden);
    pf_embed_options eo = pf_embed_options_init();
    if (!r) r = pf_embed(m, ids, lengths, 2, &eo, embeds);
    if (r) printf("  %s: %s\n", path, pf_error_message(m));
    pf_encoding_free(e);
    pf_free(m);
    return r ? 0 : hidden_size;
}

/* transformers' hidden states on bert-save's ids (last_hidden_state.bin: [2][8][hidden], the second row
   padded after its 6 tokens) within tolerance of got (the rows' tokens one after the other). */
static float gguf_hidden_diff(const float *got, int hidden_size) {
    char path[1100];
    snprintf(path, sizeof path, "%s/bert-save/last_hidden_state.bin", test_fixtures);
    size_t count = 0;
    float *want = test_read_floats(path, &count);
    float diff = want && count == 16 * (size_t)hidden_size ? 0 : 1e9f;
    for (int row = 0, at = 0; row < 2 && diff < 1e9f; row++)
        for (int t = 0; t < (row ? 6 : 8); t++, at++) {
            float d = test_max_abs_diff(got + (size_t)at * hidden_size, want + ((size_t)row * 8 + t) * hidden_size,
                                        (size_t)hidden_size);
            if (d > diff) diff = d;
        }
    free(want);
    return diff;
}

/* llama.cpp's BERT (bert-f32.gguf: bert-save as its converter writes it, without the pooler): the
   directory's hidden states bit for bit and transformers' within 1e-4, on 1 and 3 ranks; pf_embed
   by its pooling_type (cls), normalised as llama.cpp's tools do, the directory's vectors (its
   sentence-transformers CLS pooling and Normalize) and sentence-transformers' within 1e-4; its
   "bert" vocabulary tokenizes as tokenizer-bert's tokenizer.json. */
static void gguf_check_bert(void) {
    char dir[1100], path[1100], embed_path[1100];
    snprintf(dir, sizeof dir, "%s/bert-save", test_fixtures);
    snprintf(path, sizeof path, "%s/gguf/bert-f32.gguf", test_fixtures);
    snprintf(embed_path, sizeof embed_path, "%s/bert-save/embed.bin", test_fixtures);
    static float want_h[16 * 64], got_h[16 * 64], want_e[2 * 64], got_e[2 * 64];
    size_t embeds = 0, nw = 0, ng = 0;
    float *reference = test_read_floats(embed_path, &embeds);
    for (int ranks = 1; ranks <= 3; ranks += 2) {
        int hw = gguf_encode(dir, ranks, PF_DTYPE_AUTO, want_h, 16 * 64, &nw, want_e, 2 * 64);
        int hg = gguf_encode(path, ranks, PF_DTYPE_AUTO, got_h, 16 * 64, &ng, got_e, 2 * 64);
        float dh = hg ? gguf_hidden_diff(got_h, hg) : 1e9f;
        float de = hg && reference && embeds == 2 * (size_t)hg ? test_max_abs_diff(got_e, reference, embeds) : 1e9f;
        CHECK_MSG(hw && hg == hw && ng == nw && !memcmp(got_h, want_h, ng * sizeof *got_h) &&
                      !memcmp(got_e, want_e, 2 * (size_t)hg * sizeof *got_e) && dh <= 1e-4f && de <= 1e-4f,
                  "bert-f32.gguf on %d ranks: hidden states %g from transformers', embeddings %g from "
                  "sentence-transformers', or not the directory's bits", ranks, dh, de);
        printf("  bert-f32.gguf on %d rank%s: the directory's hidden states and embeddings; %.1e from transformers', "
               "%.1e from sentence-transformers'\n", ranks, ranks > 1 ? "s" : "", dh, de);
    }
    free(reference);
    gguf_check_tokenizer("tokenizer-bert", "bert-f32.gguf");
}

/* bert-save (CLS pooling, Normalize, tokenizer-bert's WordPiece) saved as GGUF: as F32 its hidden
   states and embeddings are the directory's, bit for bit; as Q8_0 and Q4_0 (64 wide: its matrices
   in blocks), loaded in that dtype, those of the directory loaded in it; its tokenizer as
   tokenizer-bert's on every case. */
static void gguf_check_save_bert(const char *tmp) {
    char dir[1100], out[1100], error[512];
    snprintf(dir, sizeof dir, "%s/bert-save", test_fixtures);
    snprintf(out, sizeof out, "%s/bert-save.gguf", tmp);
    static const pf_dtype dtypes[3] = {PF_DTYPE_F32, PF_DTYPE_Q8_0, PF_DTYPE_Q4_0};
    static const char *const names[3] = {"f32", "q8_0", "q4_0"};
    static float want_h[16 * 64], got_h[16 * 64], want_e[2 * 64], got_e[2 * 64];
    for (int k = 0; k < 3; k++) {
        pf_result r = pf_quantize_gguf(dir, out, dtypes[k], error, sizeof error);
        CHECK_MSG(r == PF_OK, "pf_quantize_gguf bert-save %s: %s", names[k], error);
        if (r) continue;
        size_t nw = 0, ng = 0;
        pf_dtype load = k ? dtypes[k] : PF_DTYPE_AUTO;
        int hw = gguf_encode(dir, 1, load, want_h, 16 * 64, &nw, want_e, 2 * 64);
        int hg = gguf_encode(out, 1, load, got_h, 16 * 64, &ng, got_e, 2 * 64);
        CHECK_MSG(hw && hg == hw && ng == nw && !memcmp(got_h, want_h, ng * sizeof *got_h) &&
                      !memcmp(got_e, want_e, 2 * (size_t)hg * sizeof *got_e),
                  "bert-save saved as %s: hidden states %g, embeddings %g from the directory's", names[k],
                  hg == hw && ng == nw ? test_max_abs_diff(got_h, want_h, ng) : -1.0f,
                  hg == hw ? test_max_abs_diff(got_e, want_e, 2 * (size_t)hg) : -1.0f);
        printf("  bert-save saved as %s: the directory's hidden states and embeddings\n", names[k]);
        if (!k) gguf_check_tokenizer("tokenizer-bert", out);
    }
    unlink(out);
}

/* What GGUF cannot say is refused, naming it, and no file is left: a family without a GGUF
   architecture, a byte-level tokenizer whose split GGUF has no name for, a tensor without a GGUF name
   (a classifier), a rope scaling that would read back as another (llama3's, which llama.cpp
   stores as a rope_freqs tensor; YaRN with other betas and mscales than GGUF's reader takes), a
   SentencePiece tokenizer in the legacy form (Mixtral's fixture: its normalizer prepends to every
   piece between special tokens); a directory without a model, an output path in no directory. */
static void gguf_check_save_refusals(const char *tmp) {
    static const struct { const char *fixture, *needle; } cases[] = {
        {"electra", "model_type \"electra\" has no GGUF architecture"},
        {"bert-cls", "has no GGUF name (no PF_GGUF_TENSOR row of bert)"}, /* llama.cpp's BERT classifier is not written yet */
        {"bloom", "none of those GGUF names in tokenizer.ggml.pre"}, /* BLOOM's split */
        /* the family fixtures' mixtures where llama.cpp's architectures fix another: a dense layer
           (mlp_only_layers) in Qwen3-MoE, OLMoE's chosen weights renormalised */
        {"qwen3_moe", "tensor 'model.layers.1.mlp.down_proj.weight' has no GGUF name"},
        {"olmoe", "config.json's norm_topk_prob has no GGUF form"},
        {"gemma2", "config.json's query_pre_attn_scalar has no GGUF form"},
        {"llama-cls", "tensor 'score.weight' has no GGUF name"},
        {"llama3-rope", "the rope scaling (rope_scaling / rope_parameters) has no GGUF form"},
        /* YaRN with other betas and mscales than the defaults GGUF's reader takes */
        {"qwen2-rope-yarn", "the rope scaling (rope_scaling / rope_parameters) has no GGUF form"},
        {"mixtral", "normalizer, pre-tokenizer, decoder or fuse_unk are not SentencePiece's"},
    };
    char dir[1100], out[1100], error[512];
    snprintf(out, sizeof out, "%s/refused.gguf", tmp);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(dir, sizeof dir, "%s/%s", test_fixtures, cases[i].fixture);
        error[0] = 0;
        pf_result r = pf_quantize_gguf(dir, out, PF_DTYPE_F32, error, sizeof error);
        CHECK_MSG(r == PF_ERROR_UNSUPPORTED && strstr(error, cases[i].needle) && access(out, F_OK) != 0,
                  "%s saved as GGUF: %s (%s)", cases[i].fixture, error, pf_result_string(r));
        unlink(out);
    }
    /* bad calls: a directory without a model, an output where no file can be made */
    pf_result r = pf_quantize_gguf(tmp, out, PF_DTYPE_F32, error, sizeof error);
    CHECK_MSG(r != PF_OK && strstr(error, "config.json") && access(out, F_OK) != 0, "an empty directory saved: %s", error);
    snprintf(dir, sizeof dir, "%s/gpt2-tiny", test_fixtures);
    snprintf(out, sizeof out, "%s/no/such/dir/out.gguf", tmp);
    r = pf_quantize_gguf(dir, out, PF_DTYPE_Q8_0, error, sizeof error);
    CHECK_MSG(r == PF_ERROR_IO && strstr(error, "cannot create it"), "gpt2-tiny saved where no file can be made: %s", error);
}

static void gguf_check_save(void) {
    char tmp[] = "/tmp/pf_gguf_save_XXXXXX";
    if (!mkdtemp(tmp)) {
        CHECK_MSG(0, "mkdtemp");
        return;
    }
    /* GPT-2 (Conv1D, tied), LLaMA (q/k permuted; a SentencePiece BPE as "llama", and LLaMA 3's
       tokenizer), Qwen2 (biases, NFC and its
       split), Phi (partial rotary), StarCoder (multi-query: head_count_kv by hand), OLMo (its
       epsilon by hand, weightless norms), Qwen3-MoE, Qwen2-MoE (shared expert, its gate), OLMoE,
       linear and YaRN rope scaling */
    static const char *const saved[][2] = {{"gpt2-tiny", "gpt2-tiny"}, {"llama", "llama"}, {"llama-bpe", "llama3-rope"}, {"qwen2", "qwen2"},
                                           {"phi", NULL}, {"gpt_bigcode", NULL}, {"olmo", NULL},
                                           /* mixtures as llama.cpp's architectures fix them
                                              (make_gguf_save_fixtures.py): experts stacked as ffn_*_exps,
                                              their counts; OLMoE's tokenizer (GPT-NeoX's) as
                                              tokenizer.ggml.pre "olmo", GPT-NeoX's too */
                                           {"qwen3_moe-save", NULL}, {"qwen2_moe-save", NULL},
                                           {"olmoe-save", NULL}, {"gpt_neox", "gpt_neox"},
                                           /* rope scaling as rope.scaling.type, .factor (and YaRN's
                                              original_context_length) */
                                           {"llama-rope-linear", NULL}, {"llama-rope-yarn", NULL},
                                           /* two eos ids: tokenizer.ggml.eos_token_id and eot_token_id */
                                           {"llama-eos-list", NULL},
                                           /* Gemma's SentencePiece (spaces replaced by its normalizer, no
                                              prefix: add_space_prefix false), norms stored as 1 + w */
                                           {"gemma", "gemma"}, {"gemma3_text", NULL}};
    for (size_t i = 0; i < sizeof saved / sizeof saved[0]; i++) gguf_check_save_directory(saved[i][0], saved[i][1], tmp);
    /* Mixtral (llama.cpp's "llama" with expert_count): its tokenizer.json (SentencePiece's legacy
       normalizer) has no GGUF form (refused below), so its model is saved without it */
    char mixtral[1100], from[1200], to[1200];
    snprintf(mixtral, sizeof mixtral, "%s/mixtral", tmp);
    static const char *const files[] = {"config.json", "model.safetensors"};
    int copied = mkdir(mixtral, 0700) == 0;
    for (size_t i = 0; copied && i < sizeof files / sizeof files[0]; i++) {
        size_t n = 0;
        snprintf(from, sizeof from, "%s/mixtral/%s", test_fixtures, files[i]);
        snprintf(to, sizeof to, "%s/%s", mixtral, files[i]);
        char *bytes = test_read_file(from, &n);
        FILE *f = bytes ? fopen(to, "wb") : NULL;
        copied = f && fwrite(bytes, 1, n, f) == n;
        if (f) copied &= fclose(f) == 0;
        free(bytes);
    }
    CHECK_MSG(copied, "mixtral's model copied to %s", mixtral);
    if (copied) gguf_check_save_directory(mixtral, NULL, tmp);
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(to, sizeof to, "%s/%s", mixtral, files[i]);
        unlink(to);
    }
    rmdir(mixtral);
    gguf_check_save_bert(tmp);
    gguf_check_save_refusals(tmp);
    rmdir(tmp);
}

/* A GGUF split over 3 files (llama-split-0000K-of-00003.gguf) loads from its first part (the
   reference lines check its logits); a later part, a first part renamed, or a set missing a part
   is refused, naming what to load or what is missing. */
static void gguf_check_split(void) {
    char dir[] = "/tmp/pf_gguf_split_XXXXXX", path[1100], to[1100], renamed[1100];
    pf_model *m = NULL;
    snprintf(path, sizeof path, "%s/gguf/llama-split-00002-of-00003.gguf", test_fixtures);
    pf_result r = pf_load(path, NULL, &m);
    CHECK_MSG(r == PF_ERROR_INVALID_ARGUMENT && strstr(pf_error_message(m), "load the first, named ...-00001-of-00003.gguf"),
              "the second part of a split GGUF: %s", pf_error_message(m));
    pf_free(m);
    if (!mkdtemp(dir)) {
        CHECK_MSG(0, "mkdtemp");
        return;
    }
    for (int part = 1; part <= 2; part++) {
        size_t size = 0;
        snprintf(path, sizeof path, "%s/gguf/llama-split-%05d-of-00003.gguf", test_fixtures, part);
        char *data = test_read_file(path, &size);
        snprintf(to, sizeof to, "%s/model-%05d-of-00003.gguf", dir, part);
        CHECK(data && test_write_file(to, data, size) == 0);
        if (part == 1) {
            snprintf(renamed, sizeof renamed, "%s/renamed.gguf", dir);
            CHECK(data && test_write_file(renamed, data, size) == 0);
        }
        free(data);
    }
    m = NULL;
    r = pf_load(renamed, NULL, &m);
    CHECK_MSG(r == PF_ERROR_INVALID_ARGUMENT && strstr(pf_error_message(m), "a GGUF split over 3 files"),
              "a split GGUF's first part renamed: %s", pf_error_message(m));
    pf_free(m);
    unlink(renamed);
    snprintf(path, sizeof path, "%s/model-00001-of-00003.gguf", dir);
    m = NULL;
    r = pf_load(path, NULL, &m);
    CHECK_MSG(r != PF_OK && strstr(pf_error_message(m), "model-00003-of-00003.gguf"), "a split GGUF missing its last part: %s",
              pf_error_message(m));
    pf_free(m);
    for (int part = 1; part <= 2; part++) {
        snprintf(to, sizeof to, "%s/model-%05d-of-00003.gguf", dir, part);
        unlink(to);
    }
    rmdir(dir);
}

/* ---- bad files ---- */

typedef struct gguf_file {
    unsigned char *p;
    size_t len, cap;
    /* where the fields that the cases patch start */
    size_t at_version, at_num_tensors, at_num_kvs, at_arch_length, at_alignment_type, at_alignment, at_array_type,
        at_array_count, at_bool, at_ndim, at_ne0, at_ne1, at_type, at_offset1;
} gguf_file;

static void gf_put(gguf_file *f, const void *s, size_t n) {
    if (f->len + n > f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 1024;
        while (cap < f->len + n) cap *= 2;
        unsigned char *p = (unsigned char *)realloc(f->p, cap);
        if (!p) return;
        f->p = p, f->cap = cap;
    }
    memcpy(f->p + f->len, s, n);
    f->len += n;
}

static void gf_uint(gguf_file *f, uint64_t v, int bytes) {
    unsigned char le[8];
    for (int i = 0; i < bytes; i++) le[i] = (unsigned char)(v >> (8 * i));
    gf_put(f, le, (size_t)bytes);
}

static void gf_string(gguf_file *f, const char *s) {
    gf_uint(f, strlen(s), 8);
    gf_put(f, s, strlen(s));
}

static void gf_patch(gguf_file *f, size_t at, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; i++) f->p[at + i] = (unsigned char)(v >> (8 * i));
}

/* A small file: metadata of each kind, then token_embd.weight [4][32] and the tensor `second`
   ([32], F32; its offset 512). full: the llama keys a config needs. extra_key / extra_value: one
   more string key. */
static void gguf_build(gguf_file *f, const char *arch, int full, const char *second, const char *extra_key,
                       const char *extra_value) {
    static const char *const counts[][2] = {{"llama.context_length", "16"},   {"llama.embedding_length", "32"},
                                            {"llama.feed_forward_length", "32"}, {"llama.attention.head_count", "2"}};
    memset(f, 0, sizeof *f);
    gf_put(f, "GGUF", 4);
    f->at_version = f->len;
    gf_uint(f, 3, 4);
    f->at_num_tensors = f->len;
    gf_uint(f, 2, 8);
    f->at_num_kvs = f->len;
    gf_uint(f, 5 + (full ? 4 : 0) + (extra_key ? 1 : 0), 8);
    gf_string(f, "general.architecture");
    gf_uint(f, 8, 4);
    f->at_arch_length = f->len;
    gf_string(f, arch);
    gf_string(f, "general.alignment");
    f->at_alignment_type = f->len;
    gf_uint(f, 4, 4);
    f->at_alignment = f->len;
    gf_uint(f, 32, 4);
    gf_string(f, "general.tags"); /* an array of strings */
    gf_uint(f, 9, 4);
    f->at_array_type = f->len;
    gf_uint(f, 8, 4);
    f->at_array_count = f->len;
    gf_uint(f, 2, 8);
    gf_string(f, "a");
    gf_string(f, "bc");
    gf_string(f, "general.flag");
    gf_uint(f, 7, 4);
    f->at_bool = f->len;
    gf_uint(f, 1, 1);
    gf_string(f, "llama.block_count");
    gf_uint(f, 4, 4);
    gf_uint(f, 1, 4);
    for (int i = 0; full && i < 4; i++) {
        gf_string(f, counts[i][0]);
        gf_uint(f, 10, 4); /* a uint64 */
        gf_uint(f, (uint64_t)atoi(counts[i][1]), 8);
    }
    if (extra_key) {
        gf_string(f, extra_key);
        gf_uint(f, 8, 4);
        gf_string(f, extra_value);
    }
    gf_string(f, "token_embd.weight");
    f->at_ndim = f->len;
    gf_uint(f, 2, 4);
    f->at_ne0 = f->len;
    gf_uint(f, 32, 8);
    f->at_ne1 = f->len;
    gf_uint(f, 4, 8);
    f->at_type = f->len;
    gf_uint(f, 0, 4);
    gf_uint(f, 0, 8);
    gf_string(f, second);
    gf_uint(f, 1, 4);
    gf_uint(f, 32, 8);
    gf_uint(f, 0, 4);
    f->at_offset1 = f->len;
    gf_uint(f, 512, 8);
    while (f->len % 32) gf_put(f, "", 1);
    for (int i = 0; i < 4 * 32 + 32; i++) { /* the data: small varied floats */
        float v = (float)(i % 13) * 0.05f - 0.3f;
        gf_put(f, &v, 4);
    }
}

static char gguf_path[1024];

static pf_result gguf_load_bytes(const unsigned char *p, size_t n, pf_model **m) {
    FILE *out = fopen(gguf_path, "wb");
    if (out) {
        if (n) fwrite(p, 1, n, out);
        fclose(out);
    }
    return pf_load(gguf_path, NULL, m);
}

static void gguf_expect(const char *what, const gguf_file *f, pf_result want, const char *needle) {
    pf_model *m = NULL;
    pf_result r = gguf_load_bytes(f->p, f->len, &m);
    const char *msg = pf_error_message(m);
    CHECK_MSG(r == want && strstr(msg, gguf_path) && (!needle || strstr(msg, needle)),
              "%s: got %s (%s), want %s with \"%s\"", what, pf_result_string(r), msg, pf_result_string(want),
              needle ? needle : "");
    pf_free(m);
}

/* Builds the file, patches the bytes-wide value whose place the gguf_file member at `field`
   (offsetof) holds to v, and expects want / needle. */
static void gguf_case_patch(const char *what, size_t field, uint64_t v, int bytes, pf_result want, const char *needle) {
    gguf_file f;
    gguf_build(&f, "llama", 0, "output_norm.weight", NULL, NULL);
    size_t at = *(const size_t *)((const char *)&f + field);
    gf_patch(&f, at, v, bytes);
    gguf_expect(what, &f, want, needle);
    free(f.p);
}

#define GGUF_FIELD(name) offsetof(gguf_file, name)

/* Fixture `name` with the value of metadata string `key` replaced by `value` (same length); want PF_OK: it
   loads without a tokenizer, whose text calls fail naming needle. */
static void gguf_expect_string_patch(const char *name, const char *key, const char *value, pf_result want,
                                     const char *needle) {
    char path[1024];
    size_t size = 0, key_len = strlen(key);
    snprintf(path, sizeof path, "%s/gguf/%s", test_fixtures, name);
    unsigned char *data = (unsigned char *)test_read_file(path, &size);
    size_t at = 0;
    while (data && at + key_len + 20 <= size && memcmp(data + at, key, key_len)) at++;
    int found = data && at + key_len + 20 <= size;
    if (found) memcpy(data + at + key_len + 12, value, strlen(value)); /* after the type and the value's length */
    CHECK_MSG(found, "%s lacks %s", name, key);
    pf_model *m = NULL;
    pf_result r = found ? gguf_load_bytes(data, size, &m) : PF_ERROR_IO;
    if (want == PF_OK) { /* the model loads without a tokenizer, and the text calls say why */
        char *text = NULL;
        CHECK_MSG(r == PF_OK && pf_model_tokenizer(m) == NULL, "%s \"%s\": %s", key, value, pf_error_message(m));
        r = r == PF_OK ? pf_generate_text(m, "Hello", NULL, &text) : r;
        CHECK_MSG(r != PF_OK && strstr(pf_error_message(m), needle), "%s \"%s\": generating text: %s", key, value,
                  pf_error_message(m));
        pf_string_free(text);
    } else {
        CHECK_MSG(r == want && strstr(pf_error_message(m), needle), "%s \"%s\": %s", key, value, pf_error_message(m));
    }
    pf_free(m);
    free(data);
}

/* Fixture `name` with the uint32 value of metadata `key` set to v: refused with needle. */
static void gguf_expect_uint32_patch(const char *name, const char *key, uint32_t v, pf_result want, const char *needle) {
    char path[1024];
    size_t size = 0, key_len = strlen(key);
    snprintf(path, sizeof path, "%s/gguf/%s", test_fixtures, name);
    unsigned char *data = (unsigned char *)test_read_file(path, &size);
    size_t at = 0;
    while (data && at + key_len + 12 <= size && memcmp(data + at, key, key_len)) at++;
    int found = data && at + key_len + 12 <= size && data[at + key_len] == 4; /* GGUF's uint32 */
    if (found) memcpy(data + at + key_len + 4, &v, 4); /* little-endian, as the files are */
    CHECK_MSG(found, "%s lacks a uint32 %s", name, key);
    pf_model *m = NULL;
    pf_result r = found ? gguf_load_bytes(data, size, &m) : PF_ERROR_IO;
    CHECK_MSG(r == want && strstr(pf_error_message(m), needle), "%s with %s %u: %s", name, key, (unsigned)v,
              pf_error_message(m));
    pf_free(m);
    free(data);
}

/* Fixture `name` with its first `from` (a tensor name) renamed `to` (as long): refused with needle. */
static void gguf_expect_renamed(const char *name, const char *from, const char *to, pf_result want, const char *needle) {
    char path[1024];
    size_t size = 0, n = strlen(from);
    snprintf(path, sizeof path, "%s/gguf/%s", test_fixtures, name);
    unsigned char *data = (unsigned char *)test_read_file(path, &size);
    size_t at = 0;
    while (data && at + n <= size && memcmp(data + at, from, n)) at++;
    int found = data && at + n <= size && strlen(to) == n;
    if (found) memcpy(data + at, to, n);
    CHECK_MSG(found, "%s lacks %s", name, from);
    pf_model *m = NULL;
    pf_result r = found ? gguf_load_bytes(data, size, &m) : PF_ERROR_IO;
    CHECK_MSG(r == want && strstr(pf_error_message(m), needle), "%s with %s as %s: %s", name, from, to, pf_error_message(m));
    pf_free(m);
    free(data);
}

static void gguf_check_bad_files(void) {
    char dir[] = "/tmp/pf_gguf_XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK_MSG(0, "mkdtemp");
        return;
    }
    snprintf(gguf_path, sizeof gguf_path, "%s/bad.gguf", dir);
    gguf_file f;
    /* the base file parses; its config lacks hidden_size */
    gguf_build(&f, "llama", 0, "output_norm.weight", NULL, NULL);
    gguf_expect("the base file", &f, PF_ERROR_FORMAT, "llama.attention.head_count' is missing");
    /* truncated at every byte */
    int clean = 0;
    for (size_t n = 0; n < f.len; n++) {
        pf_model *m = NULL;
        pf_result r = gguf_load_bytes(f.p, n, &m);
        clean += r == PF_ERROR_FORMAT && strstr(pf_error_message(m), gguf_path) != NULL;
        pf_free(m);
    }
    CHECK_MSG(clean == (int)f.len, "truncated files: %d of %zu refused with a format error naming the file", clean, f.len);
    memcpy(f.p, "GGUX", 4);
    gguf_expect("bad magic", &f, PF_ERROR_FORMAT, "magic");
    free(f.p);

    gguf_case_patch("version 1", GGUF_FIELD(at_version), 1, 4, PF_ERROR_UNSUPPORTED, "version 1");
    gguf_case_patch("version 4", GGUF_FIELD(at_version), 4, 4, PF_ERROR_UNSUPPORTED, "version 4");
    gguf_case_patch("big-endian", GGUF_FIELD(at_version), 3u << 24, 4, PF_ERROR_UNSUPPORTED, "little-endian");
    gguf_case_patch("lying tensor count", GGUF_FIELD(at_num_tensors), (uint64_t)1 << 60, 8, PF_ERROR_FORMAT, "more than the file");
    gguf_case_patch("lying key count", GGUF_FIELD(at_num_kvs), (uint64_t)1 << 40, 8, PF_ERROR_FORMAT, "more than the file");
    gguf_case_patch("one tensor more", GGUF_FIELD(at_num_tensors), 3, 8, PF_ERROR_FORMAT, NULL);
    gguf_case_patch("lying string length", GGUF_FIELD(at_arch_length), (uint64_t)1 << 40, 8, PF_ERROR_FORMAT, "past the end");
    gguf_case_patch("unknown value type", GGUF_FIELD(at_alignment_type), 13, 4, PF_ERROR_FORMAT, "unknown value type 13");
    gguf_case_patch("alignment of another type", GGUF_FIELD(at_alignment_type), 6, 4, PF_ERROR_FORMAT, "uint32");
    gguf_case_patch("alignment 3", GGUF_FIELD(at_alignment), 3, 4, PF_ERROR_FORMAT, "power of two");
    gguf_case_patch("alignment 0", GGUF_FIELD(at_alignment), 0, 4, PF_ERROR_FORMAT, "power of two");
    gguf_case_patch("nested array", GGUF_FIELD(at_array_type), 9, 4, PF_ERROR_UNSUPPORTED, "arrays");
    gguf_case_patch("array of an unknown type", GGUF_FIELD(at_array_type), 77, 4, PF_ERROR_FORMAT, "unknown value type 77");
    gguf_case_patch("lying array count", GGUF_FIELD(at_array_count), (uint64_t)1 << 50, 8, PF_ERROR_FORMAT, "past the end");
    gguf_case_patch("array count past its strings", GGUF_FIELD(at_array_count), 40, 8, PF_ERROR_FORMAT, NULL);
    gguf_case_patch("boolean 2", GGUF_FIELD(at_bool), 2, 1, PF_ERROR_FORMAT, "boolean");
    gguf_case_patch("5 dimensions", GGUF_FIELD(at_ndim), 5, 4, PF_ERROR_FORMAT, "5 dimensions");
    gguf_case_patch("0 dimensions", GGUF_FIELD(at_ndim), 0, 4, PF_ERROR_FORMAT, "0 dimensions");
    gguf_case_patch("a zero dimension", GGUF_FIELD(at_ne1), 0, 8, PF_ERROR_FORMAT, "zero or too large");
    gguf_case_patch("a huge dimension", GGUF_FIELD(at_ne0), (uint64_t)1 << 62, 8, PF_ERROR_FORMAT, "zero or too large");
    gguf_case_patch("tensor past the end", GGUF_FIELD(at_ne1), 6, 8, PF_ERROR_FORMAT, "past the end of the data");
    gguf_case_patch("offset past the end", GGUF_FIELD(at_offset1), (uint64_t)1 << 40, 8, PF_ERROR_FORMAT, "past the end of the data");
    gguf_case_patch("misaligned offset", GGUF_FIELD(at_offset1), 516, 8, PF_ERROR_FORMAT, "alignment");
    gguf_case_patch("overlapping tensors", GGUF_FIELD(at_offset1), 256, 8, PF_ERROR_FORMAT, "overlap");
    gguf_case_patch("unknown tensor type", GGUF_FIELD(at_type), 99, 4, PF_ERROR_FORMAT, "unknown type 99");
    gguf_case_patch("a type we do not read", GGUF_FIELD(at_type), 16, 4, PF_ERROR_UNSUPPORTED, "IQ2_XXS");
    gguf_case_patch("rows off the block grid", GGUF_FIELD(at_type), 12, 4, PF_ERROR_FORMAT, "256-weight blocks");
    { /* dimensions whose product overflows */
        gguf_build(&f, "llama", 0, "output_norm.weight", NULL, NULL);
        gf_patch(&f, f.at_ndim, 4, 4);
        gguf_expect("4 dimensions read from the next fields", &f, PF_ERROR_FORMAT, NULL);
        free(f.p);
        gguf_build(&f, "llama", 0, "output_norm.weight", NULL, NULL);
        gf_patch(&f, f.at_ne0, (uint64_t)1 << 40, 8);
        gf_patch(&f, f.at_ne1, (uint64_t)1 << 40, 8);
        gguf_expect("overflowing dimensions", &f, PF_ERROR_FORMAT, "too large");
        free(f.p);
    }
    gguf_build(&f, "llama", 0, "token_embd.weight", NULL, NULL);
    gguf_expect("duplicate tensor names", &f, PF_ERROR_FORMAT, "appears twice");
    free(f.p);
    gguf_build(&f, "llama", 0, "output_norm.weight", "general.flag", "x");
    gguf_expect("duplicate keys", &f, PF_ERROR_FORMAT, "'general.flag' appears twice");
    free(f.p);
    gguf_build(&f, "mamba", 0, "output_norm.weight", NULL, NULL);
    gguf_expect("another architecture", &f, PF_ERROR_UNSUPPORTED, "\"mamba\"");
    free(f.p);
    gguf_build(&f, "llama", 1, "output_norm.weight", "llama.expert_shared_count", "8");
    gguf_expect("a key that changes the math", &f, PF_ERROR_UNSUPPORTED, "'llama.expert_shared_count'");
    free(f.p);
    gguf_build(&f, "llama", 1, "output_norm.weight", "llama.rope.scaling.type", "yarn");
    gguf_expect("yarn rope scaling without its original length", &f, PF_ERROR_FORMAT,
                "yarn rope scaling needs llama.rope.scaling.original_context_length");
    free(f.p);
    gguf_build(&f, "llama", 1, "output_norm.weight", "llama.rope.scaling.type", "longrope");
    gguf_expect("another rope scaling", &f, PF_ERROR_UNSUPPORTED, "\"longrope\" is not supported");
    free(f.p);
    gguf_build(&f, "llama", 1, "blk.0.ffn_gate_shexp.weight", NULL, NULL);
    gguf_expect("a tensor we do not know", &f, PF_ERROR_UNSUPPORTED, "'blk.0.ffn_gate_shexp.weight'");
    free(f.p);
    gguf_build(&f, "llama", 1, "rope_freqs.weight", NULL, NULL);
    gguf_expect("LLaMA 3's rope factors of the wrong shape", &f, PF_ERROR_FORMAT,
                "rope_freqs.weight is not a float vector of");
    free(f.p);
    gguf_build(&f, "llama", 1, "output_norm.weight", NULL, NULL);
    gguf_expect("missing tensors", &f, PF_ERROR_FORMAT, "missing tensor 'model.layers.0.");
    free(f.p);
    gguf_build(&f, "llama", 1, "blk.1.attn_norm.weight", NULL, NULL);
    gguf_expect("a layer past block_count", &f, PF_ERROR_UNSUPPORTED, "'blk.1.attn_norm.weight'");
    free(f.p);
    /* llama.cpp's Gemma 2 27B (46 blocks) scales scores by hidden / heads: refused, not misread */
    gguf_expect_uint32_patch("gemma2-f32.gguf", "gemma2.block_count", 46, PF_ERROR_UNSUPPORTED,
                             "'gemma2.block_count' 46: llama.cpp takes 46 blocks for Gemma 2 27B");
    gguf_expect_uint32_patch("gemma3_text-f32.gguf", "gemma3.block_count", 62, PF_ERROR_UNSUPPORTED,
                             "'gemma3.block_count' 62: llama.cpp takes 62 blocks for Gemma 3 27B");
    /* StarCoder is multi-query: one key/value head; a file with as many as heads is not its layout */
    gguf_expect_uint32_patch("starcoder-f32.gguf", "starcoder.attention.head_count_kv", 6, PF_ERROR_UNSUPPORTED,
                             "model has 1 key/value heads");
    /* llama.cpp rotates every Llama 4 layer without chunks or temperature when the window is 0 */
    gguf_expect_uint32_patch("llama4-f32.gguf", "llama4.attention.sliding_window", 0, PF_ERROR_UNSUPPORTED,
                             "'llama4.attention.sliding_window' 0: llama.cpp then rotates every layer");
    gguf_expect_string_patch("llama-f32.gguf", "tokenizer.ggml.model", "bert!", PF_OK, "tokenizer.ggml.model \"bert!\" is not supported");
    gguf_expect_string_patch("llama-f32.gguf", "general.architecture", "mpt!!", PF_ERROR_UNSUPPORTED, "\"mpt!!\"");
    /* Falcon's qkv is read in the order the converter's "jploski" layout gives it, and no other */
    gguf_expect_string_patch("falcon-f32.gguf", "falcon.tensor_data_layout", "jploskx", PF_ERROR_UNSUPPORTED,
                             "'falcon.tensor_data_layout' \"jploskx\" is not supported");
    /* gpt-oss's expert biases are read in pairs (gate and up, interleaved again): one alone is refused */
    gguf_expect_renamed("gpt-oss-mxfp4.gguf", "blk.1.ffn_up_exps.bias", "blk.1.ffn_up_exps.biaz", PF_ERROR_FORMAT,
                        "has no blk.1.ffn_up_exps.bias of its [experts, I] shape beside it");
    gguf_expect_renamed("gpt-oss-mxfp4.gguf", "blk.1.ffn_gate_exps.bias", "blk.1.ffn_gate_exps.biaz", PF_ERROR_UNSUPPORTED,
                        "'blk.1.ffn_gate_exps.biaz' is not one of a gpt-oss model");
    /* an architecture we do not read names those we do */
    gguf_expect_renamed("starcoder-f32.gguf", "starcoder", "starcodex", PF_ERROR_UNSUPPORTED,
                        "\"starcodex\" is not supported (these are: llama, gpt2,");
    /* deepseek2's routing is softmax (V2) or sigmoid (V3); the gating
       tells the versions apart, so a V3 file read as V2 has a tensor no V2 slot takes, and a V2 file
       read as V3 lacks V3's choice bias; k_b needs its v_b */
    gguf_expect_uint32_patch("deepseek2-v3.gguf", "deepseek2.expert_gating_func", 3, PF_ERROR_UNSUPPORTED,
                             "deepseek2.expert_gating_func 3 is neither softmax (1, DeepSeek V2's) nor sigmoid");
    gguf_expect_uint32_patch("deepseek2-v3-older.gguf", "deepseek2.expert_gating_func", 1, PF_ERROR_UNSUPPORTED,
                             "'model.layers.1.mlp.gate.e_score_correction_bias' is not used by model_type \"deepseek_v2\"");
    gguf_expect_uint32_patch("deepseek2-v2.gguf", "deepseek2.expert_gating_func", 2, PF_ERROR_FORMAT,
                             "missing tensor 'model.layers.1.mlp.gate.e_score_correction_bias'");
    gguf_expect_renamed("deepseek2-v3.gguf", "blk.1.attn_v_b.weight", "blk.1.attn_v_b.weighx", PF_ERROR_FORMAT,
                        "and blk.1.attn_v_b.weight are not k_b and v_b");
    unlink(gguf_path);
    rmdir(dir);
}

void test_gguf(void) {
    char path[1024];
    snprintf(path, sizeof path, "%s/gguf/gguf_reference.txt", test_fixtures);
    size_t size = 0;
    char *data = test_read_file(path, &size);
    int lines = 0;
    CHECK_MSG(data != NULL, "%s: cannot read", path);
    for (char *line = data; data && *line; lines++) {
        char *next = strchr(line, '\n');
        if (next) *next++ = 0;
        gguf_check_reference_line(line);
        if (!next) break;
        line = next;
    }
    CHECK_MSG(lines == 47, "%s: %d fixtures", path, lines);
    free(data);
    gguf_check_same_as_safetensors();
    gguf_check_bert();
    gguf_check_blocks_memory("llama-quant.gguf");
    gguf_check_blocks_memory("qwen3moe-quant.gguf");
    gguf_check_blocks_memory("llama-q2k.gguf");
    gguf_check_blocks_memory("gpt-oss-mxfp4.gguf");
    gguf_check_blocks_to_cpu("deepseek2-v3.gguf");
    gguf_check_blocks_to_cpu("gpt2-q8.gguf");
    gguf_check_blocks_to_cpu("llama-q2k.gguf");
    gguf_check_split();
    gguf_check_quantize();
    gguf_check_save();
    gguf_check_tokenizer("gpt2-tiny", "gpt2-f32.gguf");
    gguf_check_tokenizer("llama", "llama-f32.gguf");
    gguf_check_tokenizer("llama3-rope", "llama3-rope-rope-freqs.gguf"); /* "llama-bpe": LLaMA 3's split, ignore_merges */
    gguf_check_tokenizer("qwen2", "qwen2-f32.gguf");
    gguf_check_requantized_blocks();
    gguf_check_bad_files();
}
