/* test_cuda: the CUDA backend on every model fixture, against transformers' logits and tokens and
   against the CPU backend. Run by `make test-cuda` on a machine with a GPU; without one it says
   it skipped and succeeds. Ends with "N passed, N failed"; exit status 1 on any failure.

   Usage: test_cuda [FIXTURES_DIR]   (default test/fixtures)

   Every directory of FIXTURES_DIR with a reference.txt is a fixture (the 12 families: GPT-2
   variants, GPT-Neo, GPT-J, CodeGen, GPT-NeoX, OPT, BLOOM, LLaMA with its rope scalings, Mistral,
   Qwen2, OpenAI GPT, CTRL), loaded without its tokenizer. The KV cache holds the model's
   positions (at most 64), and at least the prompt plus max_new_tokens (rotary models run past
   max_position_embeddings: llama-rope-dynamic). For each fixture, each weight dtype (F32, F16,
   BF16) and 1 and 2 ranks (2 share GPU 0 through device_ids {0, 0}, the device-memory
   all-reduce), plus 3 ranks for llama (2 KV heads: the middle rank holds both, replicated) and
   4 for gpt2-hub (3 heads: a rank with none):
   - prompt logits against transformers' (reference_logits.bin) within the dtype's tolerance,
     and, in F32, against the CPU backend within 1e-3;
   - greedy tokens identical to transformers';
   - a batch of two copies of the prompt gives the reference logits in both rows;
   - F32: a sequence filling the cache (several 32-key attention chunks; past the windows of
     gpt_neo and mistral) against the CPU backend, and greedy decoding to the end of the cache
     (several decode splits) with the CPU backend's tokens, compared up to the first step whose
     top-2 margin is under 1e-2;
   - F32: greedy decoding of a left-padded batch (the prompt, and its second half padded: every
     position scheme, ALiBi and window with pads) against the CPU backend's, each row up to the
     first step whose CPU margin is under 1e-2.
   And transformers' recorded generate cases of gpt2-tiny and gpt2-hub (generation_cases.txt:
   beam search with length penalties, n-gram bans and several eos ids, padded batches, bad words,
   repetition penalty; read by test/test_util.c, as test/test_generation.c reads them) in F32 on
   1 and 2 ranks (device_ids {0, 0}) with max_batch 16, token for token.
   Random-weight checkpoints of real attention shapes (test_random_shapes; alone with the argument
   "random-shapes"): Mistral with head_dim 64, 80, 128 and 256, grouped-query heads and windows,
   and BLOOM (ALiBi) at 128, on two rows of 300 tokens; BERT (64, 128) and T5's encoder (64,
   relative bias) on a left-padded batch of 300, 217 and 45 tokens; in F16 and BF16 on 1 and 2
   ranks against the CPU backend storing the same dtype, within TOLERANCE_F16 and TOLERANCE_BF16:
   the prefill's tensor-core kernel (kernels.cu, pf_flash_attention_kernel) at its real tile
   shapes. A mirror or kernel that lets a row see pads, future keys or keys before its window,
   skips the rescale, reads the wrong KV head, or drops ALiBi or the relative bias misses by
   1.2-11 there (measured on the stand-in).
   CUDA graphs (test_cuda_graphs; alone with the argument "cuda-graphs"): gpt2-tiny, llama, bloom
   and mistral in F32 and F16 on 1 rank, 2 ranks sharing GPU 0 and 2 NCCL ranks, each with graphs
   off and on: greedy decoding to the end of the cache, sampling, beam search and a left-padded
   batch give the same tokens and beam scores bit for bit; with graphs, every greedy decode step
   launches one, captured again exactly when the decode split count changes; ranks sharing a GPU
   and the off switch capture none. A failure inside a capture fails the call and keeps no graph
   (test_cuda_graph_failure), and the seq2seq fixtures' generation cases on 1 rank run from graphs.
   On the stand-in a graph is a tape of the launches replayed, so a per-step value passed by value
   replays stale and these comparisons fail.
   Also: pf_to_cpu from two CUDA ranks gives the CPU model exactly; a device id that is no GPU is
   a clear error, and so is a kv_cache_dtype other than the weights' (by name); with two GPUs,
   NCCL between GPUs 0 and 1 and the peer-copy reduction over GPUs {0, 0, 1}; an injected failure
   on one rank (PF_TESTING builds) fails the call, names the rank, and leaves the model working.
   Sampling on the device (alone with the argument "sampling"): the top-k kernel against a sort of
   crafted rows; sampled generation (top_k, top_p, temperature) on 1-3 ranks drawing every token
   from the devices' candidates, with the host path's and the CPU backend's tokens; ties at the
   k-th logit, -inf logits and top_k beyond the vocabulary on a model with constant logits.

   Tolerances, max |logit - transformers' logit|:
   - F32 1e-3: fp32 GEMMs (no TF32) and fp32 kernels differ from the CPU only in summation order
     (~1e-5 measured on the CPU backend).
   - F16 0.1 and BF16 1.0: the GPU rounds every weight and every GEMM input to the dtype and
     accumulates in fp32. A host stand-in for kernels.cu that does exactly that gave worst
     prompt-logit errors of 0.065 (F16, gpt_neo: unscaled attention scores) and 0.59 (BF16,
     mistral) over all fixtures (GPT-2's: 0.036 and 0.39); its greedy tokens matched
     transformers' at every step in F16 and flipped in BF16 on 7 fixtures (see check_greedy).
     Measure the real figures on the GPU (this program prints them). */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../parallelformers.h"
#include "test.h"
#include "testing_hooks.h"

#define TOLERANCE_F32 1e-3f
#define TOLERANCE_F16 0.1f
#define TOLERANCE_BF16 1.0f
#define MARGIN_F32 1e-2f /* decode steps closer to a tie than this are not compared */
#define MAX_IDS TEST_MAX_IDS /* the longest prompt, generation or cache */

/* kernels.cu's C ABI (or the stand-in's), for calling the arg-max kernel directly: weak, since a
   build without CUDA has none (the test then has nothing to call, and skips anyway). */
typedef struct pf_cuda_rank pf_cuda_rank;
int pf_cuda_rank_create(int device, pf_cuda_rank **out, char *message, size_t size) __attribute__((weak));
void pf_cuda_rank_destroy(pf_cuda_rank *st) __attribute__((weak));
const char *pf_cuda_rank_message(const pf_cuda_rank *st) __attribute__((weak));
int pf_cuda_malloc(pf_cuda_rank *st, void **ptr, size_t bytes) __attribute__((weak));
int pf_cuda_free(pf_cuda_rank *st, void *ptr) __attribute__((weak));
int pf_cuda_upload(pf_cuda_rank *st, void *dst, const void *host, size_t bytes) __attribute__((weak));
int pf_cuda_download(pf_cuda_rank *st, void *host, const void *src, size_t bytes) __attribute__((weak));
int pf_cuda_argmax(pf_cuda_rank *st, float *values, int32_t *indices, const float *logits, size_t rows, size_t n,
                   int first) __attribute__((weak));
int pf_cuda_top_k(pf_cuda_rank *st, float *values, int32_t *indices, const float *logits, size_t rows, size_t n,
                  int first, size_t count) __attribute__((weak));
/* The stand-in's count of GEMMs whose 16-bit input came converted (by the norm before, or the GEMM
   before over the same input); kernels.cu has none. */
extern int pf_mock_converted_inputs __attribute__((weak));

typedef struct fixture {
    const char *name;
    int wide; /* name ends in "-wide": every greedy step has a margin >= 2 (see check_greedy) */
    pf_model *model;
    test_reference ref;
    float *ref_logits;      /* [num_prompt][vocab], transformers */
    size_t vocab;
    int positions;
    /* from the CPU backend */
    float *cpu_logits;      /* [num_prompt][vocab] */
    int32_t long_ids[MAX_IDS];
    int long_len;
    float *cpu_long_logits; /* [long_len][vocab] */
    int32_t cpu_gen[MAX_IDS];
    int cpu_gen_len;
    float cpu_margin[MAX_IDS]; /* top-1 minus top-2 logit at each of those steps (0: unknown) */
    float ref_margin[MAX_IDS]; /* the same for transformers' greedy steps (0: unknown) */
    /* a padded batch of the prompt and prompt[pad_skip..] (none when pad_skip is 0) */
    int pad_skip;
    int32_t cpu_pad[2][MAX_IDS];
    int cpu_pad_len[2];
    float pad_margin[2][MAX_IDS]; /* the CPU's margins at each step of each row (0: unknown) */
    size_t f32_kv_cache[5][4];    /* [ranks][rank]: KV cache bytes of the F32 run (checked against 16-bit runs) */
} fixture;

static float *forward(pf_model *m, const int32_t *ids, int batch, int len, size_t vocab, const char *what) {
    float *logits = (float *)malloc((size_t)batch * len * vocab * sizeof(float));
    if (!logits) return NULL;
    pf_result r = pf_forward(m, ids, batch, len, logits);
    CHECK_MSG(r == PF_OK, "%s: pf_forward: %s", what, pf_error_message(m));
    if (r != PF_OK) {
        free(logits);
        return NULL;
    }
    return logits;
}

/* Top-1 minus top-2 logit at each of n greedy steps after prompt[skip..], from one forward over
   that prompt and tokens[0..n-2]. Returns 1 if the forward's argmax is tokens[i] at every step,
   else 0 with every margin 0 (unknown); -1 if the forward failed. */
static int replay_margins(fixture *f, int skip, const int32_t *tokens, int n, float *margins) {
    int32_t seq[2 * MAX_IDS];
    int num_prompt = f->ref.num_prompt_ids - skip, len = num_prompt + n - 1, replayed = 1;
    for (int i = 0; i < num_prompt; i++) seq[i] = f->ref.prompt_ids[skip + i];
    for (int i = 0; i + 1 < n; i++) seq[num_prompt + i] = tokens[i];
    float *all = forward(f->model, seq, 1, len, f->vocab, "CPU margins");
    if (!all) return -1;
    for (int i = 0; i < n; i++) {
        const float *row = all + (size_t)(num_prompt - 1 + i) * f->vocab;
        float top1 = -INFINITY, top2 = -INFINITY;
        size_t best = 0;
        for (size_t v = 0; v < f->vocab; v++) {
            if (row[v] > top1) {
                top2 = top1;
                top1 = row[v];
                best = v;
            } else if (row[v] > top2) {
                top2 = row[v];
            }
        }
        margins[i] = top1 - top2;
        if ((int32_t)best != tokens[i]) replayed = 0;
    }
    free(all);
    if (!replayed)
        for (int i = 0; i < n; i++) margins[i] = 0.0f;
    return replayed;
}

/* Greedy tokens to the end of the cache, never stopping at eos; returns the count or -1. */
static int generate_long(fixture *f, int32_t *out, const char *what) {
    int32_t prompt[MAX_IDS];
    for (int i = 0; i < f->ref.num_prompt_ids; i++) prompt[i] = f->ref.prompt_ids[i];
    pf_generate_options o = pf_generate_options_init();
    o.max_new_tokens = f->positions - f->ref.num_prompt_ids;
    o.ignore_eos = 1;
    int n = 0;
    pf_result r = pf_generate(f->model, prompt, f->ref.num_prompt_ids, &o, out, MAX_IDS, &n);
    CHECK_MSG(r == PF_OK, "%s: pf_generate to the end of the cache: %s", what, pf_error_message(f->model));
    return r == PF_OK ? n : -1;
}

/* Greedy decoding of a batch of the prompt and prompt[pad_skip..] (left-padded to the prompt's
   length), max_new_tokens each, never stopping at eos: into out[row], counts into len[row].
   Returns 0, or -1 after reporting a failure. */
static int generate_padded(fixture *f, int32_t out[2][MAX_IDS], int len[2], const char *what) {
    int32_t prompt[MAX_IDS];
    for (int i = 0; i < f->ref.num_prompt_ids; i++) prompt[i] = f->ref.prompt_ids[i];
    const int32_t *prompts[2] = {prompt, prompt + f->pad_skip};
    int lengths[2] = {f->ref.num_prompt_ids, f->ref.num_prompt_ids - f->pad_skip};
    pf_generate_options o = pf_generate_options_init();
    o.max_new_tokens = f->ref.max_new_tokens;
    o.ignore_eos = 1;
    pf_generation g;
    pf_result r = pf_generate_batch(f->model, prompts, lengths, 2, &o, &g);
    CHECK_MSG(r == PF_OK, "%s: padded batch: pf_generate_batch: %s", what, pf_error_message(f->model));
    if (r) return -1;
    int ok = g.num_sequences == 2;
    for (int b = 0; ok && b < 2; b++) {
        ok = g.lengths[b] == o.max_new_tokens && g.lengths[b] <= MAX_IDS;
        if (ok) memcpy(out[b], g.tokens[b], (size_t)g.lengths[b] * sizeof(int32_t));
        len[b] = ok ? g.lengths[b] : 0;
    }
    CHECK_MSG(ok, "%s: padded batch: %d sequences of %d and %d tokens, want 2 of %d", what, g.num_sequences,
              g.num_sequences > 0 ? g.lengths[0] : -1, g.num_sequences > 1 ? g.lengths[1] : -1, o.max_new_tokens);
    pf_generation_free(&g);
    return ok ? 0 : -1;
}

/* Loads the fixture and computes the CPU backend's outputs once; fixture_open below. */
static int fixture_load(const char *name, fixture *f) {
    char dir[1024], path[1200];
    memset(f, 0, sizeof *f);
    f->name = name;
    size_t name_len = strlen(name);
    f->wide = name_len > 5 && strcmp(name + name_len - 5, "-wide") == 0;
    snprintf(dir, sizeof dir, "%s/%s", test_fixtures, name);
    pf_load_options lo = pf_load_options_init();
    lo.skip_tokenizer = 1; /* ids only: not every fixture's tokenizer is supported */
    pf_result r = pf_load(dir, &lo, &f->model);
    CHECK_MSG(r == PF_OK, "%s: pf_load: %s", name, pf_error_message(f->model));
    if (r) return -1;
    int ok = test_read_reference(dir, &f->ref) == 0 && f->ref.vocab_size > 0;
    CHECK_MSG(ok, "%s: reference.txt unreadable", name);
    if (!ok) return -1;
    snprintf(path, sizeof path, "%s/reference_logits.bin", dir);
    size_t count = 0;
    f->vocab = (size_t)f->ref.vocab_size;
    f->ref_logits = test_read_floats(path, &count);
    CHECK_MSG(f->ref_logits && count == (size_t)f->ref.num_prompt_ids * f->vocab, "%s: reference_logits.bin", name);
    if (!f->ref_logits || count != (size_t)f->ref.num_prompt_ids * f->vocab) return -1;
    /* The cache: the model's positions (at most MAX_IDS), and at least the prompt plus the
       generated tokens, which rotary models may take past max_position_embeddings. */
    pf_model_info info = pf_get_info(f->model);
    int need = f->ref.num_prompt_ids + f->ref.max_new_tokens;
    f->positions = info.max_positions > 0 && info.max_positions < MAX_IDS ? info.max_positions : MAX_IDS;
    if (f->positions < need) f->positions = need;
    CHECK_MSG(need <= MAX_IDS && f->ref.num_prompt_ids < f->positions, "%s: prompt %d + %d new tokens exceed %d", name,
              f->ref.num_prompt_ids, f->ref.max_new_tokens, MAX_IDS);
    if (need > MAX_IDS || f->ref.num_prompt_ids >= f->positions) return -1;

    pf_parallel_options o = pf_parallel_options_init();
    o.device = PF_DEVICE_CPU;
    o.dtype = PF_DTYPE_F32; /* the file's values, as f32 ranks hold them (an MXFP4 checkpoint's CPU default keeps blocks) */
    o.max_batch = 2;
    o.max_sequence_length = f->positions;
    r = pf_parallelize(f->model, 1, &o);
    CHECK_MSG(r == PF_OK, "%s: CPU pf_parallelize: %s", name, pf_error_message(f->model));
    if (r) return -1;
    int32_t ids[MAX_IDS];
    for (int i = 0; i < f->ref.num_prompt_ids; i++) ids[i] = f->ref.prompt_ids[i];
    f->cpu_logits = forward(f->model, ids, 1, f->ref.num_prompt_ids, f->vocab, "CPU prompt");
    f->long_len = f->positions;
    for (int i = 0; i < f->long_len; i++) f->long_ids[i] = (int32_t)((i * 37 + 11) % f->ref.vocab_size);
    f->cpu_long_logits = forward(f->model, f->long_ids, 1, f->long_len, f->vocab, "CPU long sequence");
    f->cpu_gen_len = generate_long(f, f->cpu_gen, "CPU");
    if (!f->cpu_logits || !f->cpu_long_logits || f->cpu_gen_len < 1) return -1;

    /* Margins of transformers' and of the CPU's greedy steps. Where a forward over the whole
       sequence is no replay of generation (dynamic rope scaling: generation rotates each new
       token with the frequencies of its own length), transformers' margins are unknown, and the
       CPU's steps that repeat transformers' tokens have at least the fixture's margin (above
       MARGIN_F32, as make_family_fixtures.py checked). */
    if (replay_margins(f, 0, f->ref.greedy_ids, f->ref.num_greedy_ids, f->ref_margin) < 0) return -1;
    int replayed = replay_margins(f, 0, f->cpu_gen, f->cpu_gen_len, f->cpu_margin);
    if (replayed < 0) return -1;
    if (!replayed) {
        printf("  (a forward over the sequence is no replay of generation: margins from the reference)\n");
        for (int i = 0, same = 1; i < f->cpu_gen_len; i++) {
            same = same && i < f->ref.num_greedy_ids && f->cpu_gen[i] == f->ref.greedy_ids[i];
            f->cpu_margin[i] = same ? MARGIN_F32 : 0.0f;
        }
    }

    /* A left-padded batch: the prompt, and its second half (padded). Row 0 is the prompt's
       greedy decoding (cpu_gen, with its margins); row 1's margins are those of its prompt alone
       (0 where that is no replay, as with dynamic rope scaling). */
    f->pad_skip = f->ref.num_prompt_ids / 2;
    if (f->pad_skip > 0) {
        if (generate_padded(f, f->cpu_pad, f->cpu_pad_len, "CPU")) return -1;
        int same = f->cpu_pad_len[0] <= f->cpu_gen_len && !memcmp(f->cpu_pad[0], f->cpu_gen, (size_t)f->cpu_pad_len[0] * 4);
        CHECK_MSG(same, "%s: CPU: the padded batch's first row is not the prompt's greedy decoding", name);
        for (int i = 0; i < f->cpu_pad_len[0]; i++) f->pad_margin[0][i] = same ? f->cpu_margin[i] : 0.0f;
        if (replay_margins(f, f->pad_skip, f->cpu_pad[1], f->cpu_pad_len[1], f->pad_margin[1]) < 0) return -1;
    }
    return 0;
}

static void fixture_close(fixture *f) {
    pf_free(f->model);
    free(f->ref_logits);
    free(f->cpu_logits);
    free(f->cpu_long_logits);
}

/* fixture_load; on failure (reported) -1, with nothing left to close. */
static int fixture_open(const char *name, fixture *f) {
    if (fixture_load(name, f) == 0) return 0;
    fixture_close(f);
    return -1;
}

/* ---- checks on a CUDA-parallel model ---- */

static const char *dtype_name(pf_dtype d) {
    return d == PF_DTYPE_F32 ? "f32" : d == PF_DTYPE_F16 ? "f16" : d == PF_DTYPE_BF16 ? "bf16" : "auto";
}

/* The -wide fixtures' final norm is scaled up 4x (gpt2-wide) and 5x (llama-wide), and their head
   weights are heavy-tailed: logits (std ~10 instead of ~3) and so the F16/BF16 rounding errors on
   them are about WIDE_TOLERANCE_SCALE times larger (host stand-in: 0.22 F16, 3.3 BF16). */
#define WIDE_TOLERANCE_SCALE 5.0f

static float tolerance(const fixture *f, pf_dtype d) {
    float t = d == PF_DTYPE_F16 ? TOLERANCE_F16 : d == PF_DTYPE_BF16 ? TOLERANCE_BF16 : TOLERANCE_F32;
    return f->wide && d != PF_DTYPE_F32 ? t * WIDE_TOLERANCE_SCALE : t;
}

/* Greedy tokens against transformers'. F32: every step (the fixtures' margins exceed 0.01).
   F16 and BF16: up to the first step whose margin (transformers' top-1 minus top-2 logit) is
   under `bound`, which the caller sets to twice the prompt logits' worst error: errors of at
   most that on each of the top two logits cannot flip a larger margin. Smaller margins do flip
   in BF16 on these tiny random models (margins down to 0.01): the host stand-in for kernels.cu
   flipped 7 fixtures' greedy tokens in BF16, at margins of 0.08 to 0.63 times the worst prompt
   error. The "-wide" fixtures (gpt2-wide, llama-wide: make_family_fixtures.py's make_wide) have a
   margin of at least 2 at every step and the same greedy ids in torch float16 and bfloat16, so
   there F16 and BF16 must match transformers' at every step, with no cut-off. Returns the steps
   compared. */
static int check_greedy(fixture *f, pf_dtype dtype, float bound, const char *what) {
    int32_t prompt[MAX_IDS], out[MAX_IDS];
    int n = 0;
    for (int i = 0; i < f->ref.num_prompt_ids; i++) prompt[i] = f->ref.prompt_ids[i];
    pf_generate_options o = pf_generate_options_init();
    o.max_new_tokens = f->ref.max_new_tokens;
    pf_result r = pf_generate(f->model, prompt, f->ref.num_prompt_ids, &o, out, MAX_IDS, &n);
    CHECK_MSG(r == PF_OK, "%s: pf_generate: %s", what, pf_error_message(f->model));
    int limit = f->ref.num_greedy_ids;
    if (dtype != PF_DTYPE_F32 && !f->wide)
        for (limit = 0; limit < f->ref.num_greedy_ids && f->ref_margin[limit] >= bound;) limit++;
    int first_diff = -1;
    for (int i = 0; i < n && i < limit && first_diff < 0; i++)
        if (out[i] != f->ref.greedy_ids[i]) first_diff = i;
    CHECK_MSG(r == PF_OK && (limit < f->ref.num_greedy_ids ? n >= limit : n == f->ref.num_greedy_ids) && first_diff < 0,
              "%s: greedy tokens differ from transformers' (got %d tokens, want %d; compared %d; first difference at "
              "%d)",
              what, n, f->ref.num_greedy_ids, limit, first_diff);
    return limit;
}

/* F32: a left-padded batch (positions counted from each row's first real token, pads never
   attended to: every position scheme, ALiBi, windows) against the CPU backend's, each row step by
   step while the tokens agree: a step whose CPU margin is MARGIN_F32 or more must agree (and
   counts as compared); a closer one may differ, and ends the row's comparison. Returns the steps
   compared (both rows). */
static int check_padded(fixture *f, const char *what) {
    int32_t out[2][MAX_IDS];
    int len[2] = {0, 0}, compared = 0;
    if (!f->pad_skip || generate_padded(f, out, len, what)) return 0;
    for (int b = 0; b < 2; b++) {
        int bad = -1;
        for (int i = 0; i < len[b] && i < f->cpu_pad_len[b]; i++) {
            int clear = f->pad_margin[b][i] >= MARGIN_F32;
            if (out[b][i] != f->cpu_pad[b][i]) {
                if (clear) bad = i;
                break;
            }
            compared += clear;
        }
        CHECK_MSG(bad < 0, "%s: padded batch row %d (%d pads) differs from the CPU at step %d (margin %g)", what, b,
                  b ? f->pad_skip : 0, bad, bad < 0 ? 0.0 : (double)f->pad_margin[b][bad]);
    }
    CHECK_MSG(compared >= f->ref.num_greedy_ids / 2, "%s: padded batch: only %d steps had a clear margin", what,
              compared);
    return compared;
}

/* Everything on one parallel configuration; returns the worst prompt-logit error against HF, the
   greedy steps compared with transformers' in *compared, and those of the padded batch (F32) in
   *pad_compared. */
static float check_model(fixture *f, pf_dtype dtype, int ranks, const char *what, int *compared, int *pad_compared) {
    size_t n = (size_t)f->ref.num_prompt_ids * f->vocab;
    float tol = tolerance(f, dtype), worst = -1;
    for (int i = 0; i < ranks; i++) {
        CHECK_MSG(pf_memory_allocated(f->model, i) > 0, "%s: rank %d holds no memory", what, i);
        /* The device's own figures: what it has in use includes what this rank holds. */
        pf_memory_info info;
        pf_result r = pf_get_memory_info(f->model, i, &info);
        CHECK_MSG(r == PF_OK && info.allocated == pf_memory_allocated(f->model, i) &&
                      info.weights + info.kv_cache + info.scratch == info.allocated && info.weights > 0,
                  "%s: rank %d memory info (%zu weights, %zu cache, %zu scratch, %zu allocated)", what, i,
                  info.weights, info.kv_cache, info.scratch, info.allocated);
        CHECK_MSG(info.device_total > 0 && info.device_used >= info.allocated && info.device_used <= info.device_total,
                  "%s: rank %d device memory %zu used of %zu, %zu allocated", what, i, info.device_used,
                  info.device_total, info.allocated);
        /* 16-bit ranks cache keys and values in their dtype: half the F32 run's bytes (the
           decoder fixtures here have no fp32 cross caches). */
        if (r == PF_OK && ranks < 5 && i < 4) {
            if (dtype == PF_DTYPE_F32) f->f32_kv_cache[ranks][i] = info.kv_cache;
            else
                CHECK_MSG(2 * info.kv_cache == f->f32_kv_cache[ranks][i],
                          "%s: rank %d caches %zu bytes of keys and values, the F32 run %zu", what, i, info.kv_cache,
                          f->f32_kv_cache[ranks][i]);
        }
    }
    CHECK_MSG(pf_memory_allocated(f->model, ranks) == 0, "%s: memory on a rank that does not exist", what);

    int32_t ids[2 * MAX_IDS];
    for (int b = 0; b < 2; b++)
        for (int i = 0; i < f->ref.num_prompt_ids; i++) ids[b * f->ref.num_prompt_ids + i] = f->ref.prompt_ids[i];
    int converted_before = &pf_mock_converted_inputs ? pf_mock_converted_inputs : 0;
    float *logits = forward(f->model, ids, 1, f->ref.num_prompt_ids, f->vocab, what);
    /* 16-bit weights: the norms hand their output's rounding to the GEMM after them (the
       stand-in checks every such copy is the input's, and counts them) */
    if (&pf_mock_converted_inputs && dtype != PF_DTYPE_F32)
        CHECK_MSG(pf_mock_converted_inputs > converted_before, "%s: no GEMM took its input converted by the norm", what);
    if (logits) {
        worst = test_max_abs_diff(logits, f->ref_logits, n);
        CHECK_MSG(worst <= tol, "%s: prompt logits differ from transformers' by %g (tolerance %g)", what, worst, tol);
        if (dtype == PF_DTYPE_F32) {
            float d = test_max_abs_diff(logits, f->cpu_logits, n);
            CHECK_MSG(d <= TOLERANCE_F32, "%s: prompt logits differ from the CPU backend's by %g", what, d);
        }
        free(logits);
    }
    *compared = check_greedy(f, dtype, worst >= 0 ? 2 * worst : INFINITY, what);

    /* Two sequences in one batch. */
    logits = forward(f->model, ids, 2, f->ref.num_prompt_ids, f->vocab, what);
    if (logits) {
        float d0 = test_max_abs_diff(logits, f->ref_logits, n), d1 = test_max_abs_diff(logits + n, f->ref_logits, n);
        CHECK_MSG(d0 <= tol && d1 <= tol, "%s: batch of 2: rows differ from transformers' by %g and %g", what, d0, d1);
        free(logits);
    }

    /* The whole cache: several attention chunks in prefill, several splits in decode. */
    logits = forward(f->model, f->long_ids, 1, f->long_len, f->vocab, what);
    if (logits && dtype == PF_DTYPE_F32) {
        float d = test_max_abs_diff(logits, f->cpu_long_logits, (size_t)f->long_len * f->vocab);
        CHECK_MSG(d <= TOLERANCE_F32, "%s: %d-token sequence differs from the CPU backend's by %g", what, f->long_len,
                  d);
    }
    free(logits);
    int32_t gen[MAX_IDS];
#ifdef PF_TESTING
    int device_choices = pf_testing_device_choices;
#endif
    int num = generate_long(f, gen, what);
    CHECK_MSG(num == f->cpu_gen_len, "%s: generated %d tokens to the end of the cache, the CPU %d", what, num,
              f->cpu_gen_len);
#ifdef PF_TESTING
    /* Greedy without logits processors: every token chosen on the devices (and, in this test
       build, checked there against the host's arg-max of the same logits). */
    CHECK_MSG(pf_testing_device_choices - device_choices == num,
              "%s: %d of %d greedy tokens were chosen on the devices", what, pf_testing_device_choices - device_choices,
              num);
#endif
    if (dtype == PF_DTYPE_F32 && num == f->cpu_gen_len) {
        int compared = 0, first_diff = -1;
        for (int i = 0; i < num && f->cpu_margin[i] >= MARGIN_F32 && first_diff < 0; i++, compared++)
            if (gen[i] != f->cpu_gen[i]) first_diff = i;
        CHECK_MSG(first_diff < 0, "%s: decoding to the end of the cache differs from the CPU at step %d", what,
                  first_diff);
        CHECK_MSG(compared >= f->ref.num_greedy_ids / 2, "%s: only %d decode steps had a clear margin", what, compared);
    }
    *pad_compared = dtype == PF_DTYPE_F32 ? check_padded(f, what) : 0;
    return worst;
}

static pf_parallel_options cuda_options(pf_dtype dtype, const fixture *f, const int *device_ids, int num_ids) {
    pf_parallel_options o = pf_parallel_options_init();
    o.device = PF_DEVICE_CUDA;
    o.dtype = dtype;
    o.max_batch = 2;
    o.max_sequence_length = f->positions;
    o.device_ids = device_ids;
    o.num_device_ids = num_ids;
    return o;
}

static int two_gpus = -1; /* unknown until tried */

/* One line per configuration: the worst prompt-logit error, and how many of transformers' greedy
   steps were compared (F32 and the -wide fixtures: all; F16/BF16: up to the first margin under
   twice that error), plus
   in F32 the padded batch's steps compared with the CPU's (both rows). */
static void report(const fixture *f, pf_dtype dtype, const char *what, float worst, int compared, int pad_compared) {
    char padded[64] = "";
    if (dtype == PF_DTYPE_F32 && f->pad_skip)
        snprintf(padded, sizeof padded, "; padded batch %d/%d steps", pad_compared, 2 * f->ref.max_new_tokens);
    printf("  %-40s max |logit - HF| %.3g (tol %g); greedy steps compared with HF %d of %d%s%s\n", what, worst,
           tolerance(f, dtype), compared, f->ref.num_greedy_ids,
           dtype == PF_DTYPE_F32 || compared == f->ref.num_greedy_ids ? "" : " (then a margin < 2x the logit error)",
           padded);
}

static void test_fixture(const char *name) {
    fixture f;
    if (fixture_open(name, &f)) return;
    static const pf_dtype dtypes[] = {PF_DTYPE_F32, PF_DTYPE_F16, PF_DTYPE_BF16};
    static const int zeros[4] = {0, 0, 0, 0}, gpus01[2] = {0, 1};
    /* 1 and 2 ranks everywhere; 3 on llama's (and the Gemmas', Qwen3's, OLMo 2's, Cohere's with
       per-head qk-norm gains, Phi's with qk_layernorm) 6 heads / 2 KV heads replicate KV head 0 and 1 on the middle rank
       (OLMo 2's k norm must count them once; each takes its own gain); 4
       on gpt2-hub's 3 heads leave a rank with none. */
    int rank_counts[3] = {1, 2, 0}, num_counts = 2;
    if (!strcmp(name, "llama") || !strncmp(name, "gemma", 5) || !strncmp(name, "qwen3", 5) || !strncmp(name, "olmo2", 5) ||
        !strcmp(name, "cohere-qk-norm") || !strcmp(name, "phi-qk-layernorm") || !strcmp(name, "stablelm-qk-layernorm") || !strncmp(name, "deepseek", 8) ||
        !strcmp(name, "qwen2_moe") || !strcmp(name, "mixtral") || !strcmp(name, "phimoe") || !strcmp(name, "olmoe") || !strcmp(name, "granitemoe") ||
        !strncmp(name, "gpt_oss", 7) || !strcmp(name, "granitemoeshared") || !strcmp(name, "llama4"))
        rank_counts[num_counts++] = 3; /* DeepSeek's 5 heads: 2, 2 and 1, each rank the whole latent; MoE: 3 ranks of 5-9 experts */
    if (!strcmp(name, "gpt2-hub")) rank_counts[num_counts++] = 4;
    for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++) {
        for (int k = 0; k < num_counts; k++) {
            int ranks = rank_counts[k];
            char what[160];
            snprintf(what, sizeof what, "%s %s %d rank%s on GPU 0", name, dtype_name(dtypes[d]), ranks,
                     ranks > 1 ? "s" : "");
            pf_parallel_options o = cuda_options(dtypes[d], &f, ranks > 1 ? zeros : NULL, ranks > 1 ? ranks : 0);
            pf_result r = pf_parallelize(f.model, ranks, &o);
            CHECK_MSG(r == PF_OK, "%s: pf_parallelize: %s", what, pf_error_message(f.model));
            if (r) continue;
            CHECK_MSG(pf_model_device(f.model) == PF_DEVICE_CUDA && pf_model_dtype(f.model) == dtypes[d],
                      "%s: runs on device %d, dtype %d", what, (int)pf_model_device(f.model), (int)pf_model_dtype(f.model));
            int compared = 0, pad_compared = 0;
            float worst = check_model(&f, dtypes[d], ranks, what, &compared, &pad_compared);
            report(&f, dtypes[d], what, worst, compared, pad_compared);
            if (dtypes[d] == PF_DTYPE_F32 && ranks == 2) {
                /* Gathered back, the weights are the file's: exactly the CPU model. */
                r = pf_to_cpu(f.model);
                CHECK_MSG(r == PF_OK, "%s: pf_to_cpu: %s", what, pf_error_message(f.model));
                int32_t ids[MAX_IDS];
                for (int i = 0; i < f.ref.num_prompt_ids; i++) ids[i] = f.ref.prompt_ids[i];
                float *logits = r ? NULL : forward(f.model, ids, 1, f.ref.num_prompt_ids, f.vocab, what);
                CHECK_MSG(logits &&
                              !memcmp(logits, f.cpu_logits, (size_t)f.ref.num_prompt_ids * f.vocab * sizeof(float)),
                          "%s: after pf_to_cpu the logits are not the CPU model's", what);
                free(logits);
            } else if (ranks == 2) {
                /* Gathered back from fp16/bf16 ranks, the CPU rank keeps that dtype: it computes
                   exactly what a CPU rank storing that dtype from the file computes. */
                r = pf_to_cpu(f.model);
                CHECK_MSG(r == PF_OK, "%s: pf_to_cpu: %s", what, pf_error_message(f.model));
                int32_t ids[MAX_IDS];
                for (int i = 0; i < f.ref.num_prompt_ids; i++) ids[i] = f.ref.prompt_ids[i];
                float *gathered = r ? NULL : forward(f.model, ids, 1, f.ref.num_prompt_ids, f.vocab, what);
                pf_parallel_options c = pf_parallel_options_init();
                c.device = PF_DEVICE_CPU;
                c.dtype = dtypes[d];
                c.max_batch = 2;
                c.max_sequence_length = f.positions;
                r = pf_parallelize(f.model, 1, &c);
                CHECK_MSG(r == PF_OK, "%s: CPU pf_parallelize: %s", what, pf_error_message(f.model));
                float *direct = r ? NULL : forward(f.model, ids, 1, f.ref.num_prompt_ids, f.vocab, what);
                CHECK_MSG(gathered && direct &&
                              !memcmp(gathered, direct, (size_t)f.ref.num_prompt_ids * f.vocab * sizeof(float)),
                          "%s: after pf_to_cpu the logits are not those of a CPU rank storing %s", what,
                          dtype_name(dtypes[d]));
                free(gathered);
                free(direct);
            }
        }
        /* Ranks on GPUs 0 and 1 with two sharing GPU 0: the device-memory all-reduce with peer
           copies. Skipped on one GPU. */
        if (dtypes[d] == PF_DTYPE_F32) {
            static const int mixed[3] = {0, 0, 1};
            char what[160];
            snprintf(what, sizeof what, "%s %s 3 ranks on GPUs 0,0,1", name, dtype_name(dtypes[d]));
            pf_parallel_options o = cuda_options(dtypes[d], &f, mixed, 3);
            pf_result r = pf_parallelize(f.model, 3, &o);
            if (!(r == PF_ERROR_INVALID_ARGUMENT && strstr(pf_error_message(f.model), "not a CUDA device"))) {
                CHECK_MSG(r == PF_OK, "%s: pf_parallelize: %s", what, pf_error_message(f.model));
                if (r == PF_OK) {
                    int compared = 0, pad_compared = 0;
                    float worst = check_model(&f, dtypes[d], 3, what, &compared, &pad_compared);
                    report(&f, dtypes[d], what, worst, compared, pad_compared);
                }
            }
        }
        /* Two GPUs: NCCL. */
        if (two_gpus != 0) {
            char what[160];
            snprintf(what, sizeof what, "%s %s 2 ranks on GPUs 0,1 (NCCL)", name, dtype_name(dtypes[d]));
            pf_parallel_options o = cuda_options(dtypes[d], &f, gpus01, 2);
            pf_result r = pf_parallelize(f.model, 2, &o);
            if (two_gpus < 0) { /* the first try tells; a failure other than "no GPU 1" is a failure */
                two_gpus = !(r == PF_ERROR_INVALID_ARGUMENT && strstr(pf_error_message(f.model), "not a CUDA device"));
                if (!two_gpus) printf("  (one GPU: NCCL and the multi-GPU reduction are not tested)\n");
            }
            if (two_gpus) {
                CHECK_MSG(r == PF_OK, "%s: pf_parallelize: %s", what, pf_error_message(f.model));
                if (r == PF_OK) {
                    int compared = 0, pad_compared = 0;
                    float worst = check_model(&f, dtypes[d], 2, what, &compared, &pad_compared);
                    report(&f, dtypes[d], what, worst, compared, pad_compared);
                }
            }
        }
    }
    fixture_close(&f);
}

/* ---- transformers' generate: the recorded cases ---- */

/* Every recorded case of gpt2-tiny and gpt2-hub (greedy and beam search with its options, padded
   batches, several eos ids, bad words) on CUDA in F32, 1 rank and 2 sharing GPU 0, max_batch 16. */
static void test_generation_cases(void) {
    static test_gen_case cases[TEST_MAX_GEN_CASES];
    static const char *names[] = {"gpt2-tiny", "gpt2-hub"};
    static const int zeros[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        int n = test_read_gen_cases(names[k], cases, TEST_MAX_GEN_CASES);
        CHECK_MSG(n >= 11, "%s: generation_cases.txt has %d readable cases", names[k], n);
        if (n < 1) continue;
        char dir[1024];
        snprintf(dir, sizeof dir, "%s/%s", test_fixtures, names[k]);
        pf_load_options lo = pf_load_options_init();
        lo.skip_tokenizer = 1;
        pf_model *m = NULL;
        pf_result r = pf_load(dir, &lo, &m);
        CHECK_MSG(r == PF_OK, "%s: pf_load: %s", names[k], pf_error_message(m));
        for (int ranks = 1; r == PF_OK && ranks <= 2; ranks++) {
            char what[160];
            snprintf(what, sizeof what, "%s f32 %d rank%s on GPU 0", names[k], ranks, ranks > 1 ? "s" : "");
            pf_parallel_options o = pf_parallel_options_init();
            o.device = PF_DEVICE_CUDA;
            o.dtype = PF_DTYPE_F32;
            o.max_batch = 16;
            o.device_ids = ranks > 1 ? zeros : NULL;
            o.num_device_ids = ranks > 1 ? ranks : 0;
            pf_result pr = pf_parallelize(m, ranks, &o);
            CHECK_MSG(pr == PF_OK, "%s: pf_parallelize: %s", what, pf_error_message(m));
            if (pr) continue;
            int matched = 0;
            for (int i = 0; i < n; i++) matched += test_check_gen_case(m, what, &cases[i]);
            printf("  %-40s generation cases token for token: %d of %d\n", what, matched, n);
        }
        pf_free(m);
    }
}

/* The arg-max kernel (pf_cuda_argmax) on crafted rows against a plain scan as pf__argmax does it
   over each row's slice: ties (the lowest id wins, also across the kernel's threads and warps),
   a NaN at id 0 (wins: the scan starts there) and elsewhere (never wins), rows of -inf, a slice
   not starting at id 0, and a 150k-id row with its maximum near the end. */
static void test_argmax_kernel(void) {
    if (!pf_cuda_argmax || !pf_cuda_rank_create) return;
    enum { ROWS = 8, WIDE = 150001 };
    const size_t n = WIDE;
    float *logits = (float *)malloc(ROWS * n * sizeof(float)), got_values[ROWS];
    int32_t got[ROWS], want[ROWS];
    int first[ROWS] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (size_t row = 0; row < ROWS; row++)
        for (size_t i = 0; i < n; i++) logits[row * n + i] = (float)((i * 7919 + row * 104729) % 1000) / 1000.0f;
    float top = 2.0f;
    logits[0 * n + 5000] = top, logits[0 * n + 77] = top, logits[0 * n + 149999] = top;   /* a tie: 77 */
    for (size_t i = 0; i < n; i++) logits[1 * n + i] = -INFINITY;                        /* all -inf: 0 */
    logits[2 * n + 0] = NAN, logits[2 * n + 10] = top;                                   /* NaN at id 0: 0 */
    logits[3 * n + 3] = NAN, logits[3 * n + 1025] = top, logits[3 * n + 1026] = top;      /* 1025 */
    first[4] = 50000;                                                                    /* another rank's slice */
    logits[4 * n + 0] = NAN, logits[4 * n + 40000] = top, logits[4 * n + 40001] = top;   /* 90000 */
    logits[5 * n + n - 1] = top;                                                         /* the last id */
    for (size_t i = 0; i < n; i++) logits[6 * n + i] = (float)(i % 3);                  /* 2 first at 2 */
    for (size_t i = 0; i < n; i++) logits[7 * n + i] = -0.0f;                            /* -0 ties +0 */
    logits[7 * n + 4096] = 0.0f;
    for (int row = 0; row < ROWS; row++) { /* pf__argmax's scan of a row holding id 0 */
        const float *x = logits + (size_t)row * n;
        int best = 0;
        for (size_t i = 1; i < n; i++)
            if (x[i] > x[best]) best = (int)i;
        want[row] = best;
    }
    want[4] = 90000; /* a later slice: its NaN is no candidate, its first maximum is */
    pf_cuda_rank *st = NULL;
    char message[256] = "";
    void *dev_logits = NULL, *dev_out = NULL;
    int ok = pf_cuda_rank_create(0, &st, message, sizeof message) == 0 &&
             pf_cuda_malloc(st, &dev_logits, ROWS * n * sizeof(float)) == 0 &&
             pf_cuda_malloc(st, &dev_out, 2 * ROWS * sizeof(float)) == 0 &&
             pf_cuda_upload(st, dev_logits, logits, ROWS * n * sizeof(float)) == 0;
    for (int row = 0; ok && row < ROWS; row++) { /* one row at a time: each its own first id */
        float *values = (float *)dev_out;
        int32_t *ids = (int32_t *)(values + ROWS);
        const float *row_logits = (const float *)dev_logits + (size_t)row * n;
        ok = pf_cuda_argmax(st, values + row, ids + row, row_logits, 1, n, first[row]) == 0;
    }
    ok = ok && pf_cuda_download(st, got_values, dev_out, sizeof got_values) == 0 &&
         pf_cuda_download(st, got, (const float *)dev_out + ROWS, sizeof got) == 0;
    CHECK_MSG(ok, "arg-max kernel: a CUDA call failed: %s", st ? pf_cuda_rank_message(st) : message);
    for (int row = 0; ok && row < ROWS; row++)
        CHECK_MSG(got[row] == want[row], "arg-max kernel: row %d chose id %d, the host's scan %d", row, got[row],
                  want[row]);
    CHECK_MSG(!ok || (got_values[0] == top && got_values[1] == -INFINITY && got_values[2] == INFINITY),
              "arg-max kernel: values %g %g %g, want 2, -inf and +inf (a NaN at id 0)", got_values[0], got_values[1],
              got_values[2]);
    /* Several rows in one launch (all slices from id 0): the same ids where that changes nothing. */
    int32_t *dev_ids = (int32_t *)((float *)dev_out + ROWS);
    ok = ok && pf_cuda_argmax(st, (float *)dev_out, dev_ids, (const float *)dev_logits, ROWS, n, 0) == 0 &&
         pf_cuda_download(st, got, dev_ids, sizeof got) == 0;
    CHECK_MSG(ok && got[0] == 77 && got[2] == 0 && got[3] == 1025 && got[6] == 2,
              "arg-max kernel, %d rows at once: ids %d %d %d %d", ROWS, got[0], got[2], got[3], got[6]);
    if (dev_logits) pf_cuda_free(st, dev_logits);
    if (dev_out) pf_cuda_free(st, dev_out);
    if (st) pf_cuda_rank_destroy(st);
    free(logits);
}

/* The top-k kernel's order, written plainly: a NaN before every number, then the larger value,
   then the lower id; -0 ties +0. */
typedef struct ranked_logit {
    float value;
    int id;
} ranked_logit;

static int ranked_logit_cmp(const void *a, const void *b) {
    const ranked_logit *x = (const ranked_logit *)a, *y = (const ranked_logit *)b;
    if (isnan(x->value) != isnan(y->value)) return isnan(x->value) ? -1 : 1;
    if (!isnan(x->value) && x->value != y->value) return x->value > y->value ? -1 : 1;
    return x->id - y->id;
}

/* Runs pf_cuda_top_k over one row on the device and compares it with a sort of the row: the ids
   in order, and the values bit for bit. 1 when they agree. */
static int check_top_k_row(pf_cuda_rank *st, void *dev_logits, void *dev_out, const float *row, size_t n, int first,
                           size_t count, const char *what) {
    ranked_logit *want = (ranked_logit *)malloc(n * sizeof *want);
    float *values = (float *)malloc(count * sizeof(float));
    int32_t *ids = (int32_t *)malloc(count * sizeof(int32_t));
    int ok = want && values && ids && pf_cuda_upload(st, dev_logits, row, n * sizeof(float)) == 0 &&
             pf_cuda_top_k(st, (float *)dev_out, (int32_t *)dev_out + count, (const float *)dev_logits, 1, n, first,
                           count) == 0 &&
             pf_cuda_download(st, values, dev_out, count * sizeof(float)) == 0 &&
             pf_cuda_download(st, ids, (int32_t *)dev_out + count, count * sizeof(int32_t)) == 0;
    CHECK_MSG(ok, "top-k kernel, %s: a CUDA call failed: %s", what, pf_cuda_rank_message(st));
    for (size_t i = 0; ok && i < n; i++) want[i] = (ranked_logit){row[i], first + (int)i};
    if (ok) qsort(want, n, sizeof *want, ranked_logit_cmp);
    for (size_t j = 0; ok && j < count; j++) {
        ok = ids[j] == want[j].id && !memcmp(&values[j], &want[j].value, sizeof(float));
        CHECK_MSG(ok, "top-k kernel, %s: candidate %zu is id %d (%g), the sorted row's id %d (%g)", what, j, ids[j],
                  values[j], want[j].id, want[j].value);
    }
    free(want), free(values), free(ids);
    return ok;
}

/* The top-k kernel (pf_cuda_top_k) on crafted rows against a sort of each: ties (the lower id
   first, across the kernel's threads and radix bins), NaNs (before every number), -inf rows and
   -inf beyond the finite ones, -0 against +0, a slice not starting at id 0, count equal to the
   slice, and a 150k-id row taking the most candidates (512) with its best near the end. Then
   several rows in one launch. */
static void test_top_k_kernel(void) {
    if (!pf_cuda_top_k || !pf_cuda_rank_create) return;
    enum { WIDE = 150001, MOST = 512 };
    float *row = (float *)malloc(WIDE * sizeof(float));
    pf_cuda_rank *st = NULL;
    char message[256] = "";
    void *dev_logits = NULL, *dev_out = NULL;
    int ok = row && pf_cuda_rank_create(0, &st, message, sizeof message) == 0 &&
             pf_cuda_malloc(st, &dev_logits, 4 * WIDE * sizeof(float)) == 0 &&
             pf_cuda_malloc(st, &dev_out, 4 * 2 * MOST * sizeof(float)) == 0;
    CHECK_MSG(ok, "top-k kernel: set-up failed: %s", st ? pf_cuda_rank_message(st) : message);
    for (size_t i = 0; ok && i < WIDE; i++) row[i] = (float)((i * 7919) % 1000) / 1000.0f; /* ties by the hundred */
    if (ok) row[WIDE - 2] = 2.0f, row[17] = 2.0f, row[WIDE - 1] = 1.5f;
    ok = ok && check_top_k_row(st, dev_logits, dev_out, row, WIDE, 0, MOST, "150001 ids, 512 candidates");
    ok = ok && check_top_k_row(st, dev_logits, dev_out, row, WIDE, 100000, 3, "a later slice");
    for (size_t i = 0; ok && i < 600; i++) row[i] = i % 7 == 0 ? NAN : i % 5 == 0 ? -INFINITY : (float)(i % 11);
    ok = ok && check_top_k_row(st, dev_logits, dev_out, row, 600, 0, 200, "NaN, -inf and ties");
    for (size_t i = 0; ok && i < 300; i++) row[i] = i < 40 ? (float)i : -INFINITY;
    ok = ok && check_top_k_row(st, dev_logits, dev_out, row, 300, 250, 100, "-inf beyond the finite");
    for (size_t i = 0; ok && i < 300; i++) row[i] = -INFINITY;
    ok = ok && check_top_k_row(st, dev_logits, dev_out, row, 300, 0, 5, "all -inf");
    for (size_t i = 0; ok && i < 100; i++) row[i] = i % 2 ? -0.0f : 0.0f;
    if (ok) row[50] = -1.0f, row[60] = 1e-45f;
    ok = ok && check_top_k_row(st, dev_logits, dev_out, row, 100, 0, 100, "-0 and +0, count = the slice");
    ok = ok && check_top_k_row(st, dev_logits, dev_out, row, 1, 7, 1, "one id");
    /* several rows in one launch: row r is the 600-wide pattern shifted by r */
    float rows4[4 * 600];
    for (int r = 0; ok && r < 4; r++)
        for (int i = 0; i < 600; i++) rows4[r * 600 + i] = (float)((i + r * 13) % 17) - (i % 97 == 0 ? INFINITY : 0);
    float values[4 * 9];
    int32_t ids[4 * 9];
    ok = ok && pf_cuda_upload(st, dev_logits, rows4, sizeof rows4) == 0 &&
         pf_cuda_top_k(st, (float *)dev_out, (int32_t *)dev_out + 4 * 9, (const float *)dev_logits, 4, 600, 0, 9) == 0 &&
         pf_cuda_download(st, values, dev_out, sizeof values) == 0 &&
         pf_cuda_download(st, ids, (int32_t *)dev_out + 4 * 9, sizeof ids) == 0;
    for (int r = 0; ok && r < 4; r++) {
        ranked_logit want[600];
        for (int i = 0; i < 600; i++) want[i] = (ranked_logit){rows4[r * 600 + i], i};
        qsort(want, 600, sizeof *want, ranked_logit_cmp);
        for (int j = 0; ok && j < 9; j++) {
            ok = ids[r * 9 + j] == want[j].id && values[r * 9 + j] == want[j].value;
            CHECK_MSG(ok, "top-k kernel, 4 rows at once: row %d candidate %d is id %d, want %d", r, j, ids[r * 9 + j],
                      want[j].id);
        }
    }
    CHECK_MSG(!st || pf_cuda_top_k(st, (float *)dev_out, (int32_t *)dev_out + MOST, (const float *)dev_logits, 1, 10, 0,
                                   11) != 0,
              "top-k kernel: more candidates than logits is no error");
    if (dev_logits) pf_cuda_free(st, dev_logits);
    if (dev_out) pf_cuda_free(st, dev_out);
    if (st) pf_cuda_rank_destroy(st);
    free(row);
}

#ifdef PF_TESTING
/* An edited gpt2-tiny written into dir: file (its model.safetensors, size bytes, freed here) and
   the fixture's own config.json. 0, or -1 after reporting why (what names the model). */
static int write_edited_gpt2_tiny(const char *dir, char *file, size_t size, const char *what) {
    char path[1200];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    int ok = test_write_file(path, file, size) == 0;
    free(file);
    snprintf(path, sizeof path, "%s/gpt2-tiny/config.json", test_fixtures);
    file = test_read_file(path, &size);
    snprintf(path, sizeof path, "%s/config.json", dir);
    ok = ok && file && test_write_file(path, file, size) == 0;
    free(file);
    CHECK_MSG(ok, "%s: cannot write the model into %s", what, dir);
    return ok ? 0 : -1;
}

/* gpt2-tiny (500 tokens, tied embeddings) copied into dir with token rows 250..499 of the
   embedding, and so of the LM head, made equal to rows 0..249: every logit of the upper half
   equals one of the lower half, so each greedy step is a tie between the ranks holding the two
   halves, which the lower id must win. 0, or -1 after reporting why. */
static int write_tied_vocab_model(const char *dir) {
    char path[1200];
    size_t size = 0;
    snprintf(path, sizeof path, "%s/gpt2-tiny/model.safetensors", test_fixtures);
    char *file = test_read_file(path, &size);
    const char *name = file ? strstr(file + 8, "\"transformer.wte.weight\"") : NULL;
    const char *offsets = name ? strstr(name, "\"data_offsets\":[") : NULL;
    size_t header = 0, begin = 0, end = 0;
    if (file && size > 8) memcpy(&header, file, 8); /* little-endian u64, as the fixture's machine */
    int ok = offsets && sscanf(offsets, "\"data_offsets\":[%zu,%zu]", &begin, &end) == 2 &&
             end - begin == 500 * 32 * 4 && 8 + header + end <= size;
    CHECK_MSG(ok, "tied vocabulary: gpt2-tiny's transformer.wte.weight not found as F32 [500, 32]");
    if (!ok) {
        free(file);
        return -1;
    }
    char *rows = file + 8 + header + begin;
    memcpy(rows + 250 * 32 * 4, rows, 250 * 32 * 4);
    return write_edited_gpt2_tiny(dir, file, size, "tied vocabulary");
}

/* Ties across ranks: on the tied-vocabulary model every greedy token is the lower-half one, on
   the CPU (the host's arg-max) and on 1, 2 and 3 CUDA ranks (the devices' candidates combined),
   for a padded batch of two. */
static void test_device_choice_ties(void) {
    char dir[] = "/tmp/pf_ties_XXXXXX", path[1200];
    if (!mkdtemp(dir)) {
        CHECK_MSG(0, "tied vocabulary: mkdtemp");
        return;
    }
    pf_model *m = NULL;
    pf_load_options lo = pf_load_options_init();
    lo.skip_tokenizer = 1;
    pf_result r = write_tied_vocab_model(dir) ? PF_ERROR_IO : pf_load(dir, &lo, &m);
    CHECK_MSG(r == PF_OK, "tied vocabulary: pf_load: %s", m ? pf_error_message(m) : "not written");
    static const int32_t prompt[6] = {3, 141, 59, 265, 358, 97};
    const int32_t *prompts[2] = {prompt, prompt + 2};
    int lengths[2] = {6, 4};
    pf_generate_options o = pf_generate_options_init();
    o.max_new_tokens = 12;
    o.ignore_eos = 1;
    pf_generation cpu;
    memset(&cpu, 0, sizeof cpu);
    if (r == PF_OK) {
        pf_parallel_options po = pf_parallel_options_init();
        po.device = PF_DEVICE_CPU;
        po.max_batch = 2;
        r = pf_parallelize(m, 1, &po);
        if (r == PF_OK) r = pf_generate_batch(m, prompts, lengths, 2, &o, &cpu);
        CHECK_MSG(r == PF_OK, "tied vocabulary on the CPU: %s", pf_error_message(m));
    }
    static const int zeros[3] = {0, 0, 0};
    for (int ranks = 1; r == PF_OK && ranks <= 3; ranks++) {
        pf_parallel_options po = pf_parallel_options_init();
        po.device = PF_DEVICE_CUDA;
        po.dtype = PF_DTYPE_F32;
        po.max_batch = 2;
        po.device_ids = ranks > 1 ? zeros : NULL;
        po.num_device_ids = ranks > 1 ? ranks : 0;
        pf_generation g;
        int before = pf_testing_device_choices;
        pf_result gr = pf_parallelize(m, ranks, &po);
        if (gr == PF_OK) gr = pf_generate_batch(m, prompts, lengths, 2, &o, &g);
        CHECK_MSG(gr == PF_OK, "tied vocabulary on %d CUDA ranks: %s", ranks, pf_error_message(m));
        if (gr) continue;
        int lower = 1, same = g.num_sequences == 2;
        for (int b = 0; b < g.num_sequences; b++)
            for (int i = 0; i < g.lengths[b]; i++) lower &= g.tokens[b][i] < 250 && cpu.tokens[b][i] < 250;
        for (int b = 0; same && b < 2; b++)
            same = g.lengths[b] == cpu.lengths[b] && !memcmp(g.tokens[b], cpu.tokens[b], (size_t)g.lengths[b] * 4);
        CHECK_MSG(lower && same, "tied vocabulary on %d CUDA ranks: tokens %s", ranks,
                  !lower ? "from the upper half (a tie lost by the lower id)" : "differ from the CPU's");
        CHECK_MSG(pf_testing_device_choices - before == 2 * o.max_new_tokens,
                  "tied vocabulary on %d CUDA ranks: %d tokens chosen on the devices", ranks,
                  pf_testing_device_choices - before);
        pf_generation_free(&g);
    }
    pf_generation_free(&cpu);
    pf_free(m);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/config.json", dir);
    unlink(path);
    rmdir(dir);
}

/* Greedy decoding with logits processors: where one changes the scores, the token is chosen on
   the host from the logits (and the tokens are the CPU backend's); where none does, on the
   devices. min_new_tokens masks eos for the first steps only, so exactly those fall back. Two
   rows, two ranks sharing GPU 0, and three. */
static void test_device_choice_fallback(void) {
    fixture f;
    if (fixture_open("gpt2-tiny", &f)) return;
    int32_t prompt[MAX_IDS];
    for (int i = 0; i < f.ref.num_prompt_ids; i++) prompt[i] = f.ref.prompt_ids[i];
    const int32_t *prompts[2] = {prompt, prompt + 1};
    int lengths[2] = {f.ref.num_prompt_ids, f.ref.num_prompt_ids - 1};
    static const int32_t eos[1] = {0};
    enum { MIN_NEW = 3, NEW = 8 };
    pf_generate_options opts[2];
    for (int k = 0; k < 2; k++) {
        opts[k] = pf_generate_options_init();
        opts[k].max_new_tokens = NEW;
        opts[k].ignore_eos = 1;
        opts[k].eos_token_ids = eos;
        opts[k].num_eos_token_ids = 1;
    }
    opts[0].repetition_penalty = 1.5f; /* every step */
    opts[1].min_new_tokens = MIN_NEW;  /* eos masked before the 3rd new token */
    const int expected[2] = {0, 2 * (NEW - MIN_NEW)};
    pf_generation cpu[2];
    memset(cpu, 0, sizeof cpu);
    pf_parallel_options po = pf_parallel_options_init(); /* fixture_load left the CPU backend */
    for (int k = 0; k < 2; k++) {
        pf_result r = pf_generate_batch(f.model, prompts, lengths, 2, &opts[k], &cpu[k]);
        CHECK_MSG(r == PF_OK, "device choice fallback: CPU: %s", pf_error_message(f.model));
    }
    static const int zeros[3] = {0, 0, 0};
    for (int ranks = 2; ranks <= 3; ranks++) {
        po = cuda_options(PF_DTYPE_F32, &f, zeros, ranks);
        pf_result r = pf_parallelize(f.model, ranks, &po);
        CHECK_MSG(r == PF_OK, "device choice fallback: pf_parallelize: %s", pf_error_message(f.model));
        for (int k = 0; r == PF_OK && k < 2; k++) {
            pf_generation g;
            int before = pf_testing_device_choices;
            pf_result gr = pf_generate_batch(f.model, prompts, lengths, 2, &opts[k], &g);
            CHECK_MSG(gr == PF_OK, "device choice fallback: %s", pf_error_message(f.model));
            if (gr) continue;
            int same = g.num_sequences == 2 && cpu[k].num_sequences == 2;
            for (int b = 0; same && b < 2; b++)
                same = g.lengths[b] == cpu[k].lengths[b] &&
                       !memcmp(g.tokens[b], cpu[k].tokens[b], (size_t)g.lengths[b] * sizeof(int32_t));
            CHECK_MSG(same, "device choice fallback (%s, %d ranks): tokens differ from the CPU's",
                      k ? "min_new_tokens" : "repetition_penalty", ranks);
            CHECK_MSG(pf_testing_device_choices - before == expected[k],
                      "device choice fallback (%s, %d ranks): %d tokens chosen on the devices, want %d",
                      k ? "min_new_tokens" : "repetition_penalty", ranks, pf_testing_device_choices - before,
                      expected[k]);
            pf_generation_free(&g);
        }
    }
    for (int k = 0; k < 2; k++) pf_generation_free(&cpu[k]);
    fixture_close(&f);
}
/* ---- sampling from the devices' top-k candidates ---- */

static int same_generations(const pf_generation *a, const pf_generation *b) {
    if (a->num_sequences != b->num_sequences) return 0;
    for (int i = 0; i < a->num_sequences; i++)
        if (a->lengths[i] != b->lengths[i] || memcmp(a->tokens[i], b->tokens[i], (size_t)a->lengths[i] * sizeof(int32_t)))
            return 0;
    return 1;
}

typedef struct sampling_case {
    int top_k;
    float top_p, temperature;
    uint64_t seed;
} sampling_case;

/* Sampled generation of max_new_tokens past eos, as the case says. */
static pf_generate_options sampling_options(const sampling_case *c, int max_new_tokens) {
    pf_generate_options o = pf_generate_options_init();
    o.max_new_tokens = max_new_tokens;
    o.ignore_eos = 1;
    o.do_sample = 1;
    o.top_k = c->top_k;
    o.top_p = c->top_p;
    o.temperature = c->temperature;
    o.seed = c->seed;
    return o;
}

/* One sampling case on the model's CUDA ranks, two prompts: the tokens drawn from the devices'
   candidates (want_device of them) equal the host's draws on the same backend (a
   no_repeat_ngram_size too long to act keeps that one on the logits) and the CPU backend's (cpu),
   both in a test build's checked mode (every device draw against pf__sample of the same logits)
   and in a release build's (no logits unless the candidates leave a row unsettled). */
static void check_sampling_case(pf_model *m, const char *what, const int32_t *const *prompts, const int *lengths,
                                const pf_generate_options *o, const pf_generation *cpu, int want_device) {
    pf_generate_options host = *o;
    host.no_repeat_ngram_size = 1000;
    pf_generation on_host, on_device;
    memset(&on_host, 0, sizeof on_host);
    int before = pf_testing_device_samples;
    pf_result r = pf_generate_batch(m, prompts, lengths, 2, &host, &on_host);
    CHECK_MSG(r == PF_OK && pf_testing_device_samples == before, "%s: host path: %s (%d device draws)", what,
              pf_error_message(m), pf_testing_device_samples - before);
    CHECK_MSG(r || same_generations(&on_host, cpu), "%s: the host path's tokens differ from the CPU backend's", what);
    for (int release = 0; r == PF_OK && release <= 1; release++) {
        pf_testing_check_device_choices = !release;
        before = pf_testing_device_samples;
        pf_result dr = pf_generate_batch(m, prompts, lengths, 2, o, &on_device);
        pf_testing_check_device_choices = 1;
        CHECK_MSG(dr == PF_OK, "%s%s: %s", what, release ? " (release path)" : "", pf_error_message(m));
        if (dr) continue;
        CHECK_MSG(same_generations(&on_device, &on_host), "%s%s: the devices' draws differ from the host's", what,
                  release ? " (release path)" : "");
        CHECK_MSG(pf_testing_device_samples - before == want_device, "%s%s: %d tokens drawn from the devices' candidates, want %d",
                  what, release ? " (release path)" : "", pf_testing_device_samples - before, want_device);
        pf_generation_free(&on_device);
    }
    pf_generation_free(&on_host);
}

/* Sampled generation (top_k, top_p, temperature, seeds) of gpt2-tiny on 1, 2 and 3 CUDA ranks
   sharing GPU 0: every token drawn from the devices' candidates, and the same tokens as the host
   path and the CPU backend. top_k 300 is more than a rank's slice on 2 and 3 ranks, 600 and 0 (top_p
   alone) more than the vocabulary (500). */
static void test_device_sampling(void) {
    static const sampling_case cases[] = {
        {50, 1.0f, 1.0f, 1}, {5, 1.0f, 0.7f, 2}, {1, 1.0f, 1.0f, 3}, {40, 0.9f, 1.3f, 4},
        {300, 0.8f, 1.0f, 5}, {600, 1.0f, 1.0f, 6}, {0, 0.95f, 0.8f, 7}, {511, 1.0f, 2.0f, 8},
    };
    enum { NEW = 10 };
    fixture f;
    if (fixture_open("gpt2-tiny", &f)) return;
    const int32_t *prompts[2] = {f.ref.prompt_ids, f.ref.prompt_ids + 1};
    int lengths[2] = {f.ref.num_prompt_ids, f.ref.num_prompt_ids - 1};
    enum { NUM = sizeof cases / sizeof cases[0] };
    pf_generate_options opts[NUM];
    pf_generation cpu[NUM];
    memset(cpu, 0, sizeof cpu);
    for (int c = 0; c < NUM; c++) { /* fixture_load left the CPU backend */
        opts[c] = sampling_options(&cases[c], NEW);
        pf_result r = pf_generate_batch(f.model, prompts, lengths, 2, &opts[c], &cpu[c]);
        CHECK_MSG(r == PF_OK, "device sampling: CPU: %s", pf_error_message(f.model));
    }
    static const int zeros[3] = {0, 0, 0};
    for (int ranks = 1; ranks <= 3; ranks++) {
        pf_parallel_options po = cuda_options(PF_DTYPE_F32, &f, ranks > 1 ? zeros : NULL, ranks > 1 ? ranks : 0);
        pf_result r = pf_parallelize(f.model, ranks, &po);
        CHECK_MSG(r == PF_OK, "device sampling: pf_parallelize: %s", pf_error_message(f.model));
        for (int c = 0; r == PF_OK && c < NUM; c++) {
            char what[160];
            snprintf(what, sizeof what, "device sampling on %d rank%s, top_k %d top_p %g temperature %g", ranks,
                     ranks > 1 ? "s" : "", cases[c].top_k, cases[c].top_p, cases[c].temperature);
            check_sampling_case(f.model, what, prompts, lengths, &opts[c], &cpu[c], 2 * NEW);
        }
    }
    printf("  device sampling: %d cases on 1, 2 and 3 ranks\n", NUM);
    for (int c = 0; c < NUM; c++) pf_generation_free(&cpu[c]);
    fixture_close(&f);
}

/* gpt2-tiny copied into dir with constant logits: the final norm's weight 0 and its bias the
   first unit vector make every hidden state (1, 0, ...), so the tied LM head's logit of token i is
   wte[i][0], set to: i / 100 for i < 100 and (i - 400) / 100 for i >= 400 (token j ties token
   400 + j, on another rank with 2 ranks), -inf between (tokens 100..399, never a prompt's). (A
   NaN logit cannot be tried here: a test build fails any generation that reads one.) */
static int write_constant_logits_model(const char *dir) {
    char path[1200];
    size_t size = 0, header = 0;
    snprintf(path, sizeof path, "%s/gpt2-tiny/model.safetensors", test_fixtures);
    char *file = test_read_file(path, &size);
    static const char *names[3] = {"\"transformer.wte.weight\"", "\"transformer.ln_f.weight\"", "\"transformer.ln_f.bias\""};
    static const size_t bytes[3] = {500 * 32 * 4, 32 * 4, 32 * 4};
    float *data[3] = {NULL, NULL, NULL};
    int ok = file && size > 8;
    if (ok) memcpy(&header, file, 8); /* little-endian u64, as the fixture's machine */
    for (int t = 0; ok && t < 3; t++) {
        const char *name = strstr(file + 8, names[t]);
        const char *offsets = name ? strstr(name, "\"data_offsets\":[") : NULL;
        size_t begin = 0, end = 0;
        ok = offsets && sscanf(offsets, "\"data_offsets\":[%zu,%zu]", &begin, &end) == 2 && end - begin == bytes[t] &&
             8 + header + end <= size;
        if (ok) data[t] = (float *)(void *)(file + 8 + header + begin); /* the header keeps the data 8-aligned */
    }
    CHECK_MSG(ok, "constant logits: gpt2-tiny's wte or ln_f not found as F32 [500, 32] and [32]");
    if (!ok) {
        free(file);
        return -1;
    }
    for (int i = 0; i < 500; i++)
        data[0][i * 32] = i < 100 ? (float)i / 100.0f : i >= 400 ? (float)(i - 400) / 100.0f : -INFINITY;
    for (int d = 0; d < 32; d++) data[1][d] = 0.0f, data[2][d] = d == 0 ? 1.0f : 0.0f;
    return write_edited_gpt2_tiny(dir, file, size, "constant logits");
}

/* Sampling's edge cases on the constant-logits model, against the CPU backend and the host path:
   ties at the k-th logit (top_k 1 and 3 on one rank: the rank's (k+1)-th candidate ties the k-th,
   so a token it did not return may tie too, the candidates cannot settle the draw, and every row
   falls back to the logits, which a release build fetches again; on two and three ranks the tied
   tokens are on different ranks and settle it; top_k 2 settles it on one rank); -inf logits
   (top_k 250 keeps 50 -inf tokens after the 200 finite ones; top_p over them); top_k above the
   vocabulary. */
static void test_device_sampling_edges(void) {
    char dir[] = "/tmp/pf_sampling_XXXXXX", path[1200];
    if (!mkdtemp(dir)) {
        CHECK_MSG(0, "constant logits: mkdtemp");
        return;
    }
    static const sampling_case cases[] = {
        {1, 1.0f, 1.0f, 11}, {3, 1.0f, 0.5f, 12}, {2, 1.0f, 1.0f, 13}, {250, 1.0f, 0.3f, 14},
        {250, 0.7f, 1.0f, 15}, {600, 0.9f, 1.0f, 16},
    };
    enum { NUM = sizeof cases / sizeof cases[0], NEW = 6 };
    static const int32_t prompt[5] = {3, 41, 59, 465, 97};
    const int32_t *prompts[2] = {prompt, prompt + 1};
    int lengths[2] = {5, 4};
    pf_model *m = NULL;
    pf_load_options lo = pf_load_options_init();
    lo.skip_tokenizer = 1;
    pf_result r = write_constant_logits_model(dir) ? PF_ERROR_IO : pf_load(dir, &lo, &m);
    CHECK_MSG(r == PF_OK, "constant logits: pf_load: %s", m ? pf_error_message(m) : "not written");
    pf_generate_options opts[NUM];
    pf_generation cpu[NUM];
    memset(cpu, 0, sizeof cpu);
    pf_parallel_options po = pf_parallel_options_init();
    po.device = PF_DEVICE_CPU;
    po.max_batch = 2;
    if (r == PF_OK) r = pf_parallelize(m, 1, &po);
    for (int c = 0; r == PF_OK && c < NUM; c++) {
        opts[c] = sampling_options(&cases[c], NEW);
        r = pf_generate_batch(m, prompts, lengths, 2, &opts[c], &cpu[c]);
        CHECK_MSG(r == PF_OK, "constant logits on the CPU: %s", pf_error_message(m));
    }
    static const int zeros[3] = {0, 0, 0};
    for (int ranks = 1; r == PF_OK && ranks <= 3; ranks++) {
        po.device = PF_DEVICE_CUDA;
        po.dtype = PF_DTYPE_F32;
        po.device_ids = ranks > 1 ? zeros : NULL;
        po.num_device_ids = ranks > 1 ? ranks : 0;
        pf_result pr = pf_parallelize(m, ranks, &po);
        CHECK_MSG(pr == PF_OK, "constant logits: pf_parallelize: %s", pf_error_message(m));
        for (int c = 0; pr == PF_OK && c < NUM; c++) {
            char what[160];
            snprintf(what, sizeof what, "constant logits on %d rank%s, top_k %d top_p %g temperature %g", ranks,
                     ranks > 1 ? "s" : "", cases[c].top_k, cases[c].top_p, cases[c].temperature);
            int unsettled = ranks == 1 && cases[c].top_k % 2 == 1 && cases[c].top_k < 100; /* the k-th ties the next */
            check_sampling_case(m, what, prompts, lengths, &opts[c], &cpu[c], unsettled ? 0 : 2 * NEW);
        }
    }
    for (int c = 0; c < NUM; c++) pf_generation_free(&cpu[c]);
    pf_free(m);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/config.json", dir);
    unlink(path);
    rmdir(dir);
}
#endif

/* A device id beyond the GPUs is a clear error; the model still works afterwards. */
static void test_bad_device(void) {
    fixture f;
    if (fixture_open("gpt2-tiny", &f)) return;
    static const int ids[2] = {0, 1024};
    pf_parallel_options o = cuda_options(PF_DTYPE_F32, &f, ids, 2);
    pf_result r = pf_parallelize(f.model, 2, &o);
    CHECK_MSG(r == PF_ERROR_INVALID_ARGUMENT && strstr(pf_error_message(f.model), "not a CUDA device"),
              "device 1024: %s: %s", pf_result_string(r), pf_error_message(f.model));
    /* CUDA ranks cache keys and values in the weights' dtype: they take that, or AUTO, by name */
    o = cuda_options(PF_DTYPE_F16, &f, NULL, 0);
    o.kv_cache_dtype = PF_DTYPE_F32;
    r = pf_parallelize(f.model, 1, &o);
    CHECK_MSG(r == PF_ERROR_UNSUPPORTED && strstr(pf_error_message(f.model), "kv_cache_dtype"),
              "an fp32 cache beside fp16 weights: %s: %s", pf_result_string(r), pf_error_message(f.model));
    o.kv_cache_dtype = PF_DTYPE_F16;
    r = pf_parallelize(f.model, 1, &o);
    CHECK_MSG(r == PF_OK, "an fp16 cache beside fp16 weights: %s", pf_error_message(f.model));
    o = cuda_options(PF_DTYPE_F32, &f, NULL, 0);
    r = pf_parallelize(f.model, 1, &o);
    CHECK_MSG(r == PF_OK, "after a bad device id: %s", pf_error_message(f.model));
    if (r == PF_OK) {
        int32_t prompt[MAX_IDS];
        for (int i = 0; i < f.ref.num_prompt_ids; i++) prompt[i] = f.ref.prompt_ids[i];
        float *logits = forward(f.model, prompt, 1, f.ref.num_prompt_ids, f.vocab, "after a bad device id");
        CHECK_MSG(logits &&
                      test_max_abs_diff(logits, f.ref_logits, (size_t)f.ref.num_prompt_ids * f.vocab) <= TOLERANCE_F32,
                  "after a bad device id: logits");
        free(logits);
    }
    fixture_close(&f);
}

#ifdef PF_TESTING
/* A rank that fails between all-reduces leaves no rank waiting; the model works afterwards. */
static void test_failing_rank(void) {
    fixture f;
    if (fixture_open("gpt2-hub", &f)) return;
    static const int zeros[3] = {0, 0, 0};
    pf_parallel_options o = cuda_options(PF_DTYPE_F32, &f, zeros, 3);
    pf_result r = pf_parallelize(f.model, 3, &o);
    CHECK_MSG(r == PF_OK, "failing rank: pf_parallelize: %s", pf_error_message(f.model));
    size_t n = (size_t)f.ref.num_prompt_ids * f.vocab;
    int32_t ids[MAX_IDS];
    for (int i = 0; i < f.ref.num_prompt_ids; i++) ids[i] = f.ref.prompt_ids[i];
    for (int countdown = 1; r == PF_OK && countdown <= 7; countdown += 3) {
        float *logits = (float *)malloc(n * sizeof(float));
        pf_testing_fail_rank = 2;
        pf_testing_fail_countdown = countdown;
        pf_result fr = pf_forward(f.model, ids, 1, f.ref.num_prompt_ids, logits);
        pf_testing_fail_rank = -1;
        CHECK_MSG(fr == PF_ERROR_DEVICE && strstr(pf_error_message(f.model), "rank 2"),
                  "injected failure (countdown %d): %s: %s", countdown, pf_result_string(fr), pf_error_message(f.model));
        free(logits);
        logits = forward(f.model, ids, 1, f.ref.num_prompt_ids, f.vocab, "after an injected failure");
        CHECK_MSG(logits && test_max_abs_diff(logits, f.ref_logits, n) <= TOLERANCE_F32,
                  "after an injected failure: logits");
        free(logits);
    }
    fixture_close(&f);
}
#endif

/* ---- CUDA graphs: decode steps captured once per shape and replayed ---- */

/* The stand-in's graphs alive: weak, absent from a build without CUDA, as are rank 0's graph
   captures and launches (pf_testing_cuda_graph_*, testing_hooks.h). */
extern int pf_mock_graphs_live __attribute__((weak));

enum { GRAPH_TOKENS = 16 * MAX_IDS, GRAPH_SCORES = 16 };

/* Everything a run of graph_cases produced, to compare graphs on against graphs off exactly. */
typedef struct graph_outputs {
    int32_t tokens[GRAPH_TOKENS]; /* each sequence's length, then its tokens, case after case */
    float scores[GRAPH_SCORES];   /* beam search's sequence scores */
    int num_tokens, num_scores;
    int long_steps, long_captures, long_launches; /* greedy to the end of the cache: its decode steps */
    int again_captures;           /* the same run once more: graphs it captured (all its keys are kept) */
    int captures, launches;       /* all cases */
} graph_outputs;

static void graph_counts(int *captures, int *launches) {
    *captures = &pf_testing_cuda_graph_captures ? pf_testing_cuda_graph_captures : 0;
    *launches = &pf_testing_cuda_graph_launches ? pf_testing_cuda_graph_launches : 0;
}

static void graph_append(graph_outputs *out, const int32_t *tokens, int n, const char *what) {
    if (n < 0 || out->num_tokens + n + 1 > GRAPH_TOKENS) {
        CHECK_MSG(0, "%s: %d tokens do not fit the comparison buffer", what, n);
        return;
    }
    out->tokens[out->num_tokens++] = n;
    memcpy(out->tokens + out->num_tokens, tokens, (size_t)n * sizeof(int32_t));
    out->num_tokens += n;
}

static void graph_append_generation(graph_outputs *out, const pf_generation *g, int beams, const char *what) {
    for (int i = 0; i < g->num_sequences; i++) graph_append(out, g->tokens[i], g->lengths[i], what);
    for (int i = 0; beams && i < g->num_sequences && out->num_scores < GRAPH_SCORES; i++)
        out->scores[out->num_scores++] = g->scores[i];
}

/* Sampled (two sequences of one prompt, fixed seed) or beam search (3 beams, all returned). */
static void graph_generate(fixture *f, graph_outputs *out, int beams, const char *what) {
    int32_t prompt[MAX_IDS];
    for (int i = 0; i < f->ref.num_prompt_ids; i++) prompt[i] = f->ref.prompt_ids[i];
    const int32_t *prompts[1] = {prompt};
    int lengths[1] = {f->ref.num_prompt_ids};
    pf_generate_options o = pf_generate_options_init();
    o.max_new_tokens = f->ref.max_new_tokens;
    o.ignore_eos = 1;
    if (beams) {
        o.num_beams = o.num_return_sequences = 3;
    } else {
        o.do_sample = 1;
        o.seed = 1234;
        o.temperature = 0.9f;
        o.top_k = 20;
        o.num_return_sequences = 2;
    }
    pf_generation g;
    pf_result r = pf_generate_batch(f->model, prompts, lengths, 1, &o, &g);
    CHECK_MSG(r == PF_OK && g.num_sequences == o.num_return_sequences, "%s: %s: %s", what,
              beams ? "beam search" : "sampling", pf_error_message(f->model));
    if (r) return;
    graph_append_generation(out, &g, beams, what);
    pf_generation_free(&g);
}

/* Greedy to the end of the cache (several decode split counts: graphs captured anew), twice (the
   second run finds every graph it needs), sampling, beam search (cache rows reordered between
   steps) and a left-padded batch. */
static void graph_cases(fixture *f, graph_outputs *out, const char *what) {
    memset(out, 0, sizeof *out);
    int captures0, launches0, captures1, launches1;
    graph_counts(&captures0, &launches0);
    int32_t gen[MAX_IDS];
    int n = generate_long(f, gen, what);
    graph_counts(&captures1, &launches1);
    out->long_steps = n - 1; /* the first token comes from the prompt's step */
    out->long_captures = captures1 - captures0;
    out->long_launches = launches1 - launches0;
    graph_append(out, gen, n, what);
    int n_again = generate_long(f, gen, what), captures2, launches2;
    graph_counts(&captures2, &launches2);
    out->again_captures = captures2 - captures1;
    graph_append(out, gen, n_again, what);
    graph_generate(f, out, 0, what);
    graph_generate(f, out, 1, what);
    int32_t padded[2][MAX_IDS];
    int padded_len[2];
    if (f->pad_skip && generate_padded(f, padded, padded_len, what) == 0)
        for (int b = 0; b < 2; b++) graph_append(out, padded[b], padded_len[b], what);
    graph_counts(&captures1, &launches1);
    out->captures = captures1 - captures0;
    out->launches = launches1 - launches0;
}

/* Graphs captured by the greedy run to the end of the cache: one per decode split count of its
   steps (kernels.cu's pf_cuda_decode_splits: 16 keys a split, 32 at most), past = prompt .. */
static int graph_expected_long_captures(const fixture *f, int steps) {
    int count = 0, last = -1;
    for (int past = f->ref.num_prompt_ids; past < f->ref.num_prompt_ids + steps; past++) {
        int splits = (past + 1 + 15) / 16;
        splits = splits > 32 ? 32 : splits;
        if (splits != last) count++;
        last = splits;
    }
    return count;
}

/* One configuration, graphs off then on: the same tokens and beam scores bit for bit; with
   graphs (expect_graphs), every decode step launched from one, captured again only when the
   split count changes; without, none captured. */
static void graph_compare(fixture *f, pf_dtype dtype, int ranks, const int *device_ids, int expect_graphs,
                          const char *what) {
    static graph_outputs off, on;
    for (int graphs = 0; graphs < 2; graphs++) {
        pf_parallel_options o = cuda_options(dtype, f, device_ids, device_ids ? ranks : 0);
        o.max_batch = 4; /* 3 beams */
        o.disable_cuda_graphs = !graphs;
        pf_result r = pf_parallelize(f->model, ranks, &o);
        CHECK_MSG(r == PF_OK, "%s: pf_parallelize: %s", what, pf_error_message(f->model));
        if (r) return;
        graph_cases(f, graphs ? &on : &off, what);
    }
    CHECK_MSG(off.captures == 0 && off.launches == 0, "%s: disable_cuda_graphs, yet %d graphs captured, %d launched",
              what, off.captures, off.launches);
    CHECK_MSG(on.num_tokens == off.num_tokens && !memcmp(on.tokens, off.tokens, (size_t)on.num_tokens * sizeof(int32_t)),
              "%s: the tokens with CUDA graphs differ from those without", what);
    CHECK_MSG(on.num_scores == off.num_scores && on.num_scores == 3 &&
                  !memcmp(on.scores, off.scores, (size_t)on.num_scores * sizeof(float)),
              "%s: beam scores with CUDA graphs differ from those without (%d and %d scores)", what, on.num_scores,
              off.num_scores);
    if (expect_graphs) {
        int want = graph_expected_long_captures(f, on.long_steps);
        CHECK_MSG(on.long_launches == on.long_steps && on.long_captures == want,
                  "%s: greedy to the end of the cache: %d of %d decode steps launched graphs, %d captured (want %d)",
                  what, on.long_launches, on.long_steps, on.long_captures, want);
        CHECK_MSG(on.again_captures == 0, "%s: the same greedy run again captured %d graphs", what, on.again_captures);
        CHECK_MSG(on.captures < on.launches, "%s: %d graphs captured for %d launches", what, on.captures, on.launches);
    } else {
        CHECK_MSG(on.captures == 0 && on.launches == 0, "%s: %d graphs captured where none can be", what, on.captures);
    }
    printf("  %-40s same tokens and beam scores with and without graphs; %d captures, %d launches\n", what,
           on.captures, on.launches);
}

static void test_cuda_graphs(void) {
    if (!&pf_testing_cuda_graph_captures) return; /* a build without CUDA */
    static const char *names[] = {"gpt2-tiny", "llama", "bloom", "mistral"};
    static const pf_dtype dtypes[] = {PF_DTYPE_F32, PF_DTYPE_F16};
    static const int zeros[2] = {0, 0}, gpus01[2] = {0, 1};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        fixture f;
        if (fixture_open(names[k], &f)) continue;
        for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++) {
            char what[160];
            snprintf(what, sizeof what, "%s %s 1 rank", names[k], dtype_name(dtypes[d]));
            graph_compare(&f, dtypes[d], 1, NULL, 1, what);
            snprintf(what, sizeof what, "%s %s 2 ranks on GPU 0", names[k], dtype_name(dtypes[d]));
            graph_compare(&f, dtypes[d], 2, zeros, 0, what); /* the device-memory reduction: no graphs */
            pf_parallel_options o = cuda_options(dtypes[d], &f, gpus01, 2);
            pf_result r = pf_parallelize(f.model, 2, &o);
            if (r == PF_ERROR_INVALID_ARGUMENT && strstr(pf_error_message(f.model), "not a CUDA device")) continue;
            snprintf(what, sizeof what, "%s %s 2 ranks on GPUs 0,1 (NCCL)", names[k], dtype_name(dtypes[d]));
            graph_compare(&f, dtypes[d], 2, gpus01, 1, what);
        }
        fixture_close(&f);
        if (&pf_mock_graphs_live)
            CHECK_MSG(pf_mock_graphs_live == 0, "%s: %d CUDA graphs left after pf_free", names[k], pf_mock_graphs_live);
    }
}

#ifdef PF_TESTING
/* A failure inside a decode step's capture (an injected one, at each of the first decode step's
   GEMMs before the LM head: 4 a GPT-2 block after the prompt's 4 a block and its LM head) fails
   the call with its message and keeps no graph; the next call captures afresh and gives the
   tokens of a clean run. */
static void test_cuda_graph_failure(void) {
    fixture f;
    if (!&pf_testing_cuda_graph_captures || fixture_open("gpt2-tiny", &f)) return;
    int layers = pf_get_info(f.model).num_layers;
    int32_t prompt[MAX_IDS], clean[MAX_IDS], again[MAX_IDS];
    for (int i = 0; i < f.ref.num_prompt_ids; i++) prompt[i] = f.ref.prompt_ids[i];
    pf_generate_options g = pf_generate_options_init();
    g.max_new_tokens = 4;
    g.ignore_eos = 1;
    int n_clean = 0, n_again = 0;
    pf_parallel_options o = cuda_options(PF_DTYPE_F32, &f, NULL, 0);
    CHECK(pf_parallelize(f.model, 1, &o) == PF_OK &&
          pf_generate(f.model, prompt, f.ref.num_prompt_ids, &g, clean, MAX_IDS, &n_clean) == PF_OK);
    for (int countdown = 4 * layers + 2; countdown <= 8 * layers + 1; countdown++) {
        pf_result r = pf_parallelize(f.model, 1, &o); /* no graphs yet */
        CHECK_MSG(r == PF_OK, "graph failure: pf_parallelize: %s", pf_error_message(f.model));
        if (r) break;
        int captures0, launches0, captures1, launches1;
        graph_counts(&captures0, &launches0);
        pf_testing_fail_rank = 0;
        pf_testing_fail_countdown = countdown;
        int n = 0;
        r = pf_generate(f.model, prompt, f.ref.num_prompt_ids, &g, again, MAX_IDS, &n);
        pf_testing_fail_rank = -1;
        graph_counts(&captures1, &launches1);
        CHECK_MSG(r == PF_ERROR_DEVICE && strstr(pf_error_message(f.model), "injected") && captures1 == captures0 &&
                      launches1 == launches0,
                  "failure at GEMM %d of a capture: %s (%s), %d graphs captured, %d launched", countdown,
                  pf_result_string(r), pf_error_message(f.model), captures1 - captures0, launches1 - launches0);
        r = pf_generate(f.model, prompt, f.ref.num_prompt_ids, &g, again, MAX_IDS, &n_again);
        graph_counts(&captures0, &launches0);
        CHECK_MSG(r == PF_OK && n_again == n_clean && !memcmp(again, clean, (size_t)n_clean * sizeof(int32_t)) &&
                      captures0 > captures1,
                  "after a failed capture: %s, %d tokens (%d clean), %d graphs captured", pf_result_string(r), n_again,
                  n_clean, captures0 - captures1);
    }
    fixture_close(&f);
    if (&pf_mock_graphs_live) CHECK_MSG(pf_mock_graphs_live == 0, "%d CUDA graphs left after pf_free", pf_mock_graphs_live);
}
#endif

/* Whether this build and machine can run the CUDA backend at all: 1 yes, 0 no (why in reason),
   -1 it failed otherwise (reported). */
static int cuda_available(char *reason, size_t size) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/gpt2-tiny", test_fixtures);
    pf_load_options lo = pf_load_options_init();
    lo.skip_tokenizer = 1;
    pf_model *m = NULL;
    pf_result r = pf_load(dir, &lo, &m);
    if (r != PF_OK) {
        fprintf(stderr, "test-cuda: cannot load %s: %s\n", dir, pf_error_message(m));
        pf_free(m);
        return -1;
    }
    pf_parallel_options o = pf_parallel_options_init();
    o.device = PF_DEVICE_CUDA;
    r = pf_parallelize(m, 1, &o);
    if (r == PF_ERROR_UNSUPPORTED) snprintf(reason, size, "%s", pf_error_message(m));
    else if (r != PF_OK) fprintf(stderr, "test-cuda: CUDA pf_parallelize failed: %s\n", pf_error_message(m));
    pf_free(m);
    return r == PF_OK ? 1 : r == PF_ERROR_UNSUPPORTED ? 0 : -1;
}

static int compare_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The largest difference of two encodings' pooled outputs and projected embeddings (RetriBERT's
   document ones too; 0 where neither has them). */
static float pooled_and_embeds_diff(const pf_encoding *got, const pf_encoding *want) {
    float worst = 0;
    if (want->pooled && got->pooled)
        worst = test_max_abs_diff(got->pooled, want->pooled, (size_t)want->batch * want->hidden_size);
    if (want->embeds && got->embeds) {
        float diff = test_max_abs_diff(got->embeds, want->embeds, (size_t)want->batch * want->projection_dim);
        if (diff > worst) worst = diff;
    }
    if (want->doc_embeds && got->doc_embeds) {
        float diff = test_max_abs_diff(got->doc_embeds, want->doc_embeds, (size_t)want->batch * want->projection_dim);
        if (diff > worst) worst = diff;
    }
    CHECK_MSG(!want->pooled == !got->pooled && !want->embeds == !got->embeds && !want->doc_embeds == !got->doc_embeds,
              "pooled outputs or embeds differ in kind");
    return worst;
}

/* An encoder fixture (make_encoder_fixtures.py) on the GPU in fp32, 1 and 2 ranks (ConvBERT's 3 too:
   its convolution heads 2, 1 and 1, convbert-groups' 1, 1 and none; XLM's and FlauBERT's: 4 heads split 2, 1, 1,
   the languages' table on every rank; Funnel's 4 heads likewise, its pooled rows fewer than its input's), against
   the CPU backend's
   encoding of the same rows: hidden states, pooled output, projections and head logits. */
static void test_encoder(const char *name) {
    char dir[1024];
    test_encoder_reference ref;
    snprintf(dir, sizeof dir, "%s/%s", test_fixtures, name);
    if (test_read_encoder_reference(dir, &ref)) {
        CHECK_MSG(0, "%s: reference.txt unreadable", name);
        return;
    }
    const int32_t *ids[TEST_ENCODER_ROWS], *types[TEST_ENCODER_ROWS], *boxes[TEST_ENCODER_ROWS], *global[TEST_ENCODER_ROWS];
    for (int b = 0; b < ref.rows; b++)
        ids[b] = ref.ids[b], types[b] = ref.has_types ? ref.types[b] : NULL, boxes[b] = ref.boxes[b], global[b] = ref.global[b];
    pf_encoding *want = NULL;
    pf_model *m = NULL;
    pf_result r = pf_load(dir, NULL, &m);
    pf_parallel_options po = pf_parallel_options_init();
    po.device = PF_DEVICE_CPU;
    po.max_batch = ref.rows;
    if (r == PF_OK) r = pf_parallelize(m, 1, &po);
    if (r == PF_OK) r = test_encode_reference(m, &ref, ids, types, boxes, global, &want);
    CHECK_MSG(r == PF_OK, "%s on the CPU: %s", name, pf_error_message(m));
    int xlm = (!strncmp(name, "xlm", 3) && strncmp(name, "xlm-roberta", 11)) || !strncmp(name, "flaubert", 8);
    int uneven = !strncmp(name, "convbert", 8) || !strncmp(name, "visual-bert", 11) || !strncmp(name, "funnel", 6) ||
                 !strncmp(name, "lxmert", 6) || !strncmp(name, "luke", 4) || !strncmp(name, "big-bird", 8) ||
                 !strncmp(name, "bigbird-pegasus", 15) || !strncmp(name, "xlnet", 5) || !strncmp(name, "tapas", 5) ||
                 !strncmp(name, "transfo-xl", 10) || xlm; /* 4 heads: 2, 1, 1 (Transformer-XL's 3: 2, 1 and 1, 1, 1) */
    int most_ranks = uneven ? 3 : 2;
    for (int ranks = 1; r == PF_OK && ranks <= most_ranks; ranks++) {
        pf_encoding *got = NULL;
        po = pf_parallel_options_init();
        po.device = PF_DEVICE_CUDA;
        po.dtype = PF_DTYPE_F32;
        po.max_batch = ref.rows;
        pf_result rr = pf_parallelize(m, ranks, &po);
        if (rr == PF_OK) rr = test_encode_reference(m, &ref, ids, types, boxes, global, &got);
        CHECK_MSG(rr == PF_OK, "%s on %d GPU ranks: %s", name, ranks, pf_error_message(m));
        if (rr) continue;
        size_t tokens = (size_t)want->offsets[want->batch], d = (size_t)want->hidden_size;
        size_t logits = (want->logits_per_token ? tokens : (size_t)want->batch) * (size_t)want->num_logits;
        float worst = test_max_abs_diff(got->last_hidden_state, want->last_hidden_state, tokens * d);
        float pooled = pooled_and_embeds_diff(got, want);
        if (pooled > worst) worst = pooled;
        if (want->logits && got->logits) {
            float diff = test_max_abs_diff(got->logits, want->logits, logits);
            if (diff > worst) worst = diff;
        }
        if (want->aggregation_logits && got->aggregation_logits) { /* TAPAS's, beside its cell logits */
            float diff = test_max_abs_diff(got->aggregation_logits, want->aggregation_logits,
                                           (size_t)want->batch * (size_t)want->num_aggregation_logits);
            if (diff > worst) worst = diff;
        }
        CHECK_MSG(!want->logits == !got->logits && !want->aggregation_logits == !got->aggregation_logits,
                  "%s: outputs differ in kind", name);
        CHECK_MSG(worst <= 1e-3f, "%s on %d GPU ranks: differs from the CPU by %g", name, ranks, worst);
        printf("  %-10s f32 %d rank%s on the GPU          max |output - CPU| %.3g (tol 0.001)\n", name, ranks,
               ranks > 1 ? "s" : " ", worst);
        pf_encoding_free(got);
    }
    pf_encoding_free(want);
    pf_free(m);
}

/* An image encoder fixture (make_vision_fixtures.py, make_clip_fixtures.py) on the GPU in fp32, 1
   and 2 ranks, against the CPU backend's encoding of its images. */
static void test_image_encoder(const char *name) {
    char dir[1024], path[1100];
    snprintf(dir, sizeof dir, "%s/%s", test_fixtures, name);
    snprintf(path, sizeof path, "%s/pixels.bin", dir);
    size_t n = 0;
    float *pixels = test_read_floats(path, &n);
    pf_encoding *want = NULL;
    pf_model *m = NULL;
    pf_result r = pixels ? pf_load(dir, NULL, &m) : PF_ERROR_IO;
    pf_model_info info = pf_get_info(m);
    size_t image = (size_t)info.num_channels * info.image_size * info.image_size;
    int batch = image ? (int)(n / image) : 0; /* the file's images */
    if (r == PF_OK && batch < 1) r = PF_ERROR_FORMAT;
    pf_parallel_options po = pf_parallel_options_init();
    po.device = PF_DEVICE_CPU;
    po.max_batch = batch;
    if (r == PF_OK) r = pf_parallelize(m, 1, &po);
    if (r == PF_OK) r = pf_encode_images(m, pixels, (size_t)batch * image, batch, &want);
    CHECK_MSG(r == PF_OK, "%s on the CPU: %s", name, pf_error_message(m));
    for (int ranks = 1; r == PF_OK && ranks <= 2; ranks++) {
        pf_encoding *got = NULL;
        po.device = PF_DEVICE_CUDA;
        po.dtype = PF_DTYPE_F32;
        pf_result rr = pf_parallelize(m, ranks, &po);
        if (rr == PF_OK) rr = pf_encode_images(m, pixels, (size_t)batch * image, batch, &got);
        CHECK_MSG(rr == PF_OK, "%s on %d GPU ranks: %s", name, ranks, pf_error_message(m));
        if (rr) continue;
        size_t tokens = (size_t)want->offsets[batch], d = (size_t)want->hidden_size;
        float worst = test_max_abs_diff(got->last_hidden_state, want->last_hidden_state, tokens * d);
        if (want->logits && got->logits) {
            float diff = test_max_abs_diff(got->logits, want->logits, (size_t)batch * want->num_logits);
            if (diff > worst) worst = diff;
        }
        float pooled = pooled_and_embeds_diff(got, want);
        if (pooled > worst) worst = pooled;
        CHECK_MSG(!want->logits == !got->logits, "%s: outputs differ in kind", name);
        CHECK_MSG(worst <= 1e-3f, "%s on %d GPU ranks: differs from the CPU by %g", name, ranks, worst);
        printf("  %-12s f32 %d rank%s on the GPU        max |output - CPU| %.3g (tol 0.001)\n", name, ranks,
               ranks > 1 ? "s" : " ", worst);
        pf_encoding_free(got);
    }
    pf_encoding_free(want);
    pf_free(m);
    free(pixels);
}

/* A speech encoder fixture (make_audio_fixtures.py) on the GPU in fp32, 1 and 2 ranks: its
   hidden states and CTC logits against the CPU backend's, and the CTC text equal. */
static void test_speech_encoder(const char *name) {
    char dir[1024], path[1100];
    snprintf(dir, sizeof dir, "%s/%s", test_fixtures, name);
    snprintf(path, sizeof path, "%s/samples.bin", dir);
    size_t n = 0;
    float *samples = test_read_floats(path, &n);
    int batch = 2, num_samples = (int)(n / 2), counts[2] = {num_samples, 1800}; /* rows of two lengths */
    const float *waves[2] = {samples, samples ? samples + num_samples : NULL};
    pf_encoding *want = NULL;
    pf_model *m = NULL;
    pf_result r = samples ? pf_load(dir, NULL, &m) : PF_ERROR_IO;
    pf_parallel_options po = pf_parallel_options_init();
    po.device = PF_DEVICE_CPU;
    po.max_batch = batch;
    if (r == PF_OK) r = pf_parallelize(m, 1, &po);
    if (r == PF_OK) r = pf_encode_audio(m, waves, counts, batch, &want);
    CHECK_MSG(r == PF_OK, "%s on the CPU: %s", name, pf_error_message(m));
    for (int ranks = 1; r == PF_OK && ranks <= 2; ranks++) {
        pf_encoding *got = NULL;
        po.device = PF_DEVICE_CUDA;
        po.dtype = PF_DTYPE_F32;
        pf_result rr = pf_parallelize(m, ranks, &po);
        if (rr == PF_OK) rr = pf_encode_audio(m, waves, counts, batch, &got);
        CHECK_MSG(rr == PF_OK, "%s on %d GPU ranks: %s", name, ranks, pf_error_message(m));
        if (rr) continue;
        size_t frames = (size_t)want->offsets[batch], d = (size_t)want->hidden_size;
        float worst = test_max_abs_diff(got->last_hidden_state, want->last_hidden_state, frames * d);
        if (want->logits && got->logits) {
            float diff = test_max_abs_diff(got->logits, want->logits, frames * want->num_logits);
            if (diff > worst) worst = diff;
        }
        CHECK_MSG(!want->logits == !got->logits, "%s: outputs differ in kind", name);
        CHECK_MSG(worst <= 1e-3f, "%s on %d GPU ranks: differs from the CPU by %g", name, ranks, worst);
        for (int b = 0; want->logits && b < batch; b++) {
            char *want_text = NULL, *got_text = NULL;
            CHECK(pf_ctc_decode(m, want, b, &want_text) == PF_OK && pf_ctc_decode(m, got, b, &got_text) == PF_OK);
            CHECK_MSG(want_text && got_text && !strcmp(want_text, got_text), "%s row %d: CTC text \"%s\" on the GPU, "
                      "\"%s\" on the CPU", name, b, got_text ? got_text : "", want_text ? want_text : "");
            pf_string_free(want_text);
            pf_string_free(got_text);
        }
        printf("  %-12s f32 %d rank%s on the GPU        max |output - CPU| %.3g (tol 0.001)\n", name, ranks,
               ranks > 1 ? "s" : " ", worst);
        pf_encoding_free(got);
    }
    pf_encoding_free(want);
    pf_free(m);
    free(samples);
}

/* CLIP's text tower and image-text logits (make_clip_fixtures.py) on the GPU in fp32, 1 and 2
   ranks, against the CPU backend's (its vision tower: test_image_encoder). */
/* The greedy generation of a model with a memory (XLNetLMHeadModel's query stream over each
   layer's memory; Transformer-XL's segments over theirs) on the GPU in fp32, 1 to 3 ranks (uneven
   heads): transformers' tokens, as the CPU gives them. */
static void test_memory_generation(const char *name) {
    char dir[1024];
    test_reference ref;
    snprintf(dir, sizeof dir, "%s/%s", test_fixtures, name);
    pf_model *m = NULL;
    if (test_read_reference(dir, &ref) || pf_load(dir, NULL, &m) != PF_OK) {
        CHECK_MSG(0, "loading %s: %s", dir, m ? pf_error_message(m) : "no reference.txt");
        pf_free(m);
        return;
    }
    int32_t prompt[TEST_MAX_IDS], out[TEST_MAX_IDS];
    for (int i = 0; i < ref.num_prompt_ids; i++) prompt[i] = ref.prompt_ids[i];
    pf_generate_options o = pf_generate_options_init();
    o.max_new_tokens = ref.max_new_tokens;
    for (int ranks = 1; ranks <= 3; ranks++) {
        pf_parallel_options po = pf_parallel_options_init();
        po.device = PF_DEVICE_CUDA;
        po.dtype = PF_DTYPE_F32;
        po.max_batch = 1;
        int n = 0;
        pf_result r = pf_parallelize(m, ranks, &po);
        if (r == PF_OK) r = pf_generate(m, prompt, ref.num_prompt_ids, &o, out, TEST_MAX_IDS, &n);
        CHECK_MSG(r == PF_OK, "%s on %d ranks: %s", name, ranks, pf_error_message(m));
        int same = r == PF_OK && n == ref.num_greedy_ids;
        for (int i = 0; same && i < n; i++) same = out[i] == ref.greedy_ids[i];
        CHECK_MSG(same, "%s on %d GPU ranks: %d tokens, not transformers' %d greedy ones", name, ranks, n, ref.num_greedy_ids);
        printf("  %-10s f32 %d rank%s on the GPU          greedy tokens %s\n", name, ranks, ranks > 1 ? "s" : " ",
               same ? "as transformers'" : "differ");
    }
    pf_free(m);
}

/* Reformer (make_reformer_fixtures.py) on the GPU in fp32, 1 to 3 ranks (4 heads: 2, 1, 1):
   ReformerModel's hidden states of its rows, ReformerModelWithLMHead's logits of its row within
   1e-4 of transformers', and its greedy tokens as transformers' generate(). */
static void test_reformer_fixtures(void) {
    char dir[1024], path[1100];
    for (int lm = 0; lm < 2; lm++) {
        snprintf(dir, sizeof dir, "%s/%s", test_fixtures, lm ? "reformer-lm" : "reformer");
        snprintf(path, sizeof path, "%s/reference.txt", dir);
        size_t text_size = 0;
    char *text = test_read_file(path, &text_size);
        int32_t stored[8][TEST_MAX_IDS];
        const int32_t *rows[8];
        int lengths[8], parsed[TEST_MAX_IDS], count = 0;
        size_t tokens = 0;
        for (const char *p = text; p && *p && count < 8; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
            char key[24];
            snprintf(key, sizeof key, lm ? "logits_ids=" : "ids%d=", count);
            if (strncmp(p, key, strlen(key))) continue;
            lengths[count] = test_parse_ids(p + strlen(key), parsed, TEST_MAX_IDS);
            for (int t = 0; t < lengths[count]; t++) stored[count][t] = parsed[t];
            rows[count] = stored[count];
            tokens += (size_t)lengths[count++];
        }
        free(text);
        test_reference ref;
        size_t n_hidden = 0, n_logits = 0;
        snprintf(path, sizeof path, "%s/reformer_hidden.bin", dir);
        float *hidden = test_read_floats(path, &n_hidden), *logits = NULL;
        if (lm) {
            snprintf(path, sizeof path, "%s/logits.bin", dir);
            logits = test_read_floats(path, &n_logits);
        }
        pf_model *m = NULL;
        if (!count || !hidden || (lm && (!logits || test_read_reference(dir, &ref))) || pf_load(dir, NULL, &m) != PF_OK) {
            CHECK_MSG(0, "loading %s: %s", dir, m ? pf_error_message(m) : "no reference");
            pf_free(m), free(hidden), free(logits);
            continue;
        }
        float *got = (float *)malloc((n_logits ? n_logits : 1) * sizeof(float));
        for (int ranks = 1; ranks <= 3; ranks++) {
            pf_parallel_options po = pf_parallel_options_init();
            po.device = PF_DEVICE_CUDA;
            po.dtype = PF_DTYPE_F32;
            po.max_batch = count;
            pf_encoding *e = NULL;
            pf_result r = pf_parallelize(m, ranks, &po);
            if (r == PF_OK) r = pf_encode(m, rows, NULL, lengths, count, &e);
            CHECK_MSG(r == PF_OK, "%s on %d GPU ranks: %s", dir, ranks, pf_error_message(m));
            float diff = r == PF_OK && (size_t)e->hidden_size * tokens == n_hidden ? test_max_abs_diff(e->last_hidden_state, hidden, n_hidden)
                                                                                   : INFINITY;
            CHECK_MSG(diff <= 1e-4f, "%s on %d GPU ranks: hidden states %g from transformers'", dir, ranks, diff);
            pf_encoding_free(e);
            float logit_diff = 0.0f;
            int same = 1;
            if (lm && r == PF_OK) {
                r = pf_forward(m, rows[0], 1, lengths[0], got);
                logit_diff = r == PF_OK ? test_max_abs_diff(got, logits, n_logits) : INFINITY;
                CHECK_MSG(logit_diff <= 1e-4f, "%s on %d GPU ranks: logits %g from transformers' (%s)", dir, ranks, logit_diff,
                          pf_error_message(m));
                int32_t prompt[TEST_MAX_IDS], out[TEST_MAX_IDS];
                for (int i = 0; i < ref.num_prompt_ids; i++) prompt[i] = ref.prompt_ids[i];
                pf_generate_options o = pf_generate_options_init();
                o.max_new_tokens = ref.max_new_tokens;
                int n = 0;
                r = pf_generate(m, prompt, ref.num_prompt_ids, &o, out, TEST_MAX_IDS, &n);
                same = r == PF_OK && n == ref.num_greedy_ids;
                for (int i = 0; same && i < n; i++) same = out[i] == ref.greedy_ids[i];
                CHECK_MSG(same, "%s on %d GPU ranks: greedy tokens differ from transformers' (%s)", dir, ranks,
                          pf_error_message(m));
            }
            char extra[96] = "";
            if (lm)
                snprintf(extra, sizeof extra, ", logits %.2g, greedy tokens %s", logit_diff,
                         same ? "as transformers'" : "differ");
            printf("  %-12s f32 %d rank%s on the GPU   hidden %.2g%s\n", lm ? "reformer-lm" : "reformer", ranks,
                   ranks > 1 ? "s" : " ", diff, extra);
        }
        free(got), free(hidden), free(logits);
        pf_free(m);
    }
}

static void test_clip(void) {
    char dir[1024], path[1100];
    snprintf(dir, sizeof dir, "%s/clip", test_fixtures);
    snprintf(path, sizeof path, "%s/pixels.bin", dir);
    size_t n = 0;
    float *pixels = test_read_floats(path, &n);
    snprintf(path, sizeof path, "%s/text_ids.txt", dir);
    size_t size = 0;
    char *text = test_read_file(path, &size), *line = text;
    int32_t ids[4][TEST_MAX_IDS];
    int lengths[4], texts = 0, images = (int)(n / (3 * 32 * 32));
    const int32_t *rows[4];
    for (; line && *line && texts < 4; texts++) { /* comma-separated ids, a text a line */
        int parsed[TEST_MAX_IDS];
        lengths[texts] = test_parse_ids(line, parsed, TEST_MAX_IDS);
        for (int t = 0; t < lengths[texts]; t++) ids[texts][t] = parsed[t];
        rows[texts] = ids[texts];
        line = strchr(line, '\n');
        if (line) line++;
    }
    free(text);
    pf_model *m = NULL;
    pf_result r = pixels && texts == 4 && images == 2 ? pf_load(dir, NULL, &m) : PF_ERROR_IO;
    pf_parallel_options po = pf_parallel_options_init();
    po.device = PF_DEVICE_CPU;
    po.max_batch = texts;
    pf_encoding *want = NULL;
    float want_logits[8], got_logits[8];
    if (r == PF_OK) r = pf_parallelize(m, 1, &po);
    if (r == PF_OK) r = pf_encode(m, rows, NULL, lengths, texts, &want);
    if (r == PF_OK) r = pf_image_text_logits(m, rows, lengths, texts, pixels, (size_t)images * 3 * 32 * 32, images, want_logits);
    CHECK_MSG(r == PF_OK, "clip on the CPU: %s", pf_error_message(m));
    for (int ranks = 1; r == PF_OK && ranks <= 2; ranks++) {
        pf_encoding *got = NULL;
        po.device = PF_DEVICE_CUDA;
        po.dtype = PF_DTYPE_F32;
        pf_result rr = pf_parallelize(m, ranks, &po);
        if (rr == PF_OK) rr = pf_encode(m, rows, NULL, lengths, texts, &got);
        if (rr == PF_OK) rr = pf_image_text_logits(m, rows, lengths, texts, pixels, (size_t)images * 3 * 32 * 32, images, got_logits);
        CHECK_MSG(rr == PF_OK, "clip on %d GPU ranks: %s", ranks, pf_error_message(m));
        if (rr) {
            pf_encoding_free(got);
            continue;
        }
        float worst = test_max_abs_diff(got->last_hidden_state, want->last_hidden_state,
                                        (size_t)want->offsets[texts] * want->hidden_size);
        float pooled = pooled_and_embeds_diff(got, want), logits = test_max_abs_diff(got_logits, want_logits, 8);
        if (pooled > worst) worst = pooled;
        if (logits > worst) worst = logits;
        CHECK_MSG(worst <= 1e-3f, "clip texts and logits on %d GPU ranks: differ from the CPU by %g", ranks, worst);
        printf("  %-12s f32 %d rank%s on the GPU        max |texts, logits - CPU| %.3g (tol 0.001)\n", "clip", ranks,
               ranks > 1 ? "s" : " ", worst);
        pf_encoding_free(got);
    }
    pf_encoding_free(want);
    pf_free(m);
    free(pixels);
}

/* An encoder-decoder fixture (make_seq2seq_fixtures.py) on the GPU in fp32, 1 and 2 ranks: the
   decoder's logits of the fixture's rows against the CPU backend's (LED's also with the global
   tokens of its global<i>= lines: pf_forward_seq2seq_global), and its recorded generate() cases
   token for token. */
static void test_seq2seq_fixture(const char *name) {
    char dir[1024], path[1100], line[4096];
    int32_t rows[3][8][TEST_MAX_IDS];
    int lengths[3][8] = {{0}}, batch = 0, has_global = 0;
    snprintf(dir, sizeof dir, "%s/%s", test_fixtures, name);
    snprintf(path, sizeof path, "%s/reference.txt", dir);
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f)) { /* src<i>=, dec<i>= and global<i>= rows */
        int i, ids[TEST_MAX_IDS], n, kind = !strncmp(line, "src", 3) ? 0 : !strncmp(line, "dec", 3) ? 1
                                                                   : !strncmp(line, "global", 6) ? 2 : -1;
        char *eq = strchr(line, '=');
        if (kind < 0 || !eq || sscanf(line + (kind == 2 ? 6 : 3), "%d", &i) != 1 || i < 0 || i >= 8) continue;
        if ((n = test_parse_ids(eq + 1, ids, TEST_MAX_IDS)) <= 0) continue;
        for (int t = 0; t < n; t++) rows[kind][i][t] = ids[t];
        lengths[kind][i] = n;
        has_global |= kind == 2;
        if (i + 1 > batch) batch = i + 1;
    }
    if (f) fclose(f);
    const int32_t *src[8], *dec[8], *global[8];
    size_t tokens = 0;
    int ok = batch > 0;
    for (int b = 0; b < batch; b++) {
        src[b] = rows[0][b], dec[b] = rows[1][b], global[b] = rows[2][b];
        tokens += (size_t)lengths[1][b];
        ok &= lengths[0][b] > 0 && lengths[1][b] > 0 && (!has_global || lengths[2][b] == lengths[0][b]);
    }
    CHECK_MSG(ok, "%s: reference.txt unreadable", name);
    if (!ok) return;
    static test_gen_case cases[TEST_MAX_GEN_CASES];
    int num_cases = test_read_gen_cases(name, cases, TEST_MAX_GEN_CASES);
    if (num_cases < 0) num_cases = 0; /* a fixture of logits alone */
    pf_model *m = NULL;
    pf_result r = pf_load(dir, NULL, &m);
    size_t vocab = r == PF_OK ? (size_t)pf_get_info(m).vocab_size : 0;
    if (r == PF_OK) test_gen_cases_with_model_defaults(m, cases, num_cases);
    float *want = (float *)malloc(tokens * vocab * sizeof(float)), *got = (float *)malloc(tokens * vocab * sizeof(float));
    float *want_global = has_global ? (float *)malloc(tokens * vocab * sizeof(float)) : NULL;
    pf_parallel_options po = pf_parallel_options_init();
    po.device = PF_DEVICE_CPU;
    po.max_batch = 8;
    if (r == PF_OK) r = want && got ? pf_parallelize(m, 1, &po) : PF_ERROR_OUT_OF_MEMORY;
    if (r == PF_OK) r = pf_forward_seq2seq(m, src, lengths[0], dec, lengths[1], batch, want);
    if (r == PF_OK && has_global)
        r = want_global ? pf_forward_seq2seq_global(m, src, global, lengths[0], dec, lengths[1], batch, want_global)
                        : PF_ERROR_OUT_OF_MEMORY;
    CHECK_MSG(r == PF_OK, "%s on the CPU: %s", name, pf_error_message(m));
    for (int ranks = 1; r == PF_OK && ranks <= 2; ranks++) {
        char what[160];
        snprintf(what, sizeof what, "%s f32 %d rank%s on the GPU", name, ranks, ranks > 1 ? "s" : "");
        po = pf_parallel_options_init();
        po.device = PF_DEVICE_CUDA;
        po.dtype = PF_DTYPE_F32;
        po.max_batch = 8;
        pf_result rr = pf_parallelize(m, ranks, &po);
        if (rr == PF_OK) rr = pf_forward_seq2seq(m, src, lengths[0], dec, lengths[1], batch, got);
        CHECK_MSG(rr == PF_OK, "%s: %s", what, pf_error_message(m));
        if (rr) continue;
        float worst = test_max_abs_diff(got, want, tokens * vocab);
        CHECK_MSG(worst <= 1e-3f, "%s: logits differ from the CPU by %g", what, worst);
        if (has_global) {
            rr = pf_forward_seq2seq_global(m, src, global, lengths[0], dec, lengths[1], batch, got);
            CHECK_MSG(rr == PF_OK, "%s: pf_forward_seq2seq_global: %s", what, pf_error_message(m));
            float diff = rr == PF_OK ? test_max_abs_diff(got, want_global, tokens * vocab) : INFINITY;
            CHECK_MSG(diff <= 1e-3f, "%s: logits with global tokens differ from the CPU by %g", what, diff);
            if (diff > worst) worst = diff;
        }
        int matched = 0, captures0, launches0, captures1, launches1;
        graph_counts(&captures0, &launches0);
        for (int i = 0; i < num_cases; i++) matched += test_check_gen_case(m, what, &cases[i]);
        graph_counts(&captures1, &launches1);
        /* one rank: the decoder steps (cross-attention included) replayed from CUDA graphs */
        if (ranks == 1 && num_cases && &pf_testing_cuda_graph_launches)
            CHECK_MSG(launches1 > launches0 && captures1 - captures0 < launches1 - launches0,
                      "%s: %d decode graphs captured, %d launched", what, captures1 - captures0, launches1 - launches0);
        printf("  %-36s max |logits - CPU| %.3g (tol 0.001), generation cases %d of %d\n", what, worst, matched, num_cases);
    }
    free(want);
    free(got);
    free(want_global);
    pf_free(m);
}

/* Speech2Text (make_speech2text_fixtures.py) on the GPU in fp32, 1 and 2 ranks: the encoder's
   output of its padded batch of filter-bank features and the teacher-forced logits against the
   CPU backend's (the convolutional subsampler runs on the host either way), and greedy
   generation token for token. */
static void test_speech2text(const char *name) {
    char dir[1024], path[1100], line[512];
    int frames[2] = {0, 0}, decoder_lengths[2] = {0, 0}, rows = 0;
    int32_t decoder[2][TEST_MAX_IDS];
    snprintf(dir, sizeof dir, "%s/%s", test_fixtures, name);
    snprintf(path, sizeof path, "%s/reference.txt", dir);
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f)) { /* feature_frames F0 F1, decoder_ids rows */
        int ids[TEST_MAX_IDS], n;
        if (!strncmp(line, "feature_frames ", 15)) sscanf(line + 15, "%d %d", &frames[0], &frames[1]);
        if (!strncmp(line, "decoder_ids ", 12) && rows < 2 && (n = test_parse_ids(line + 12, ids, TEST_MAX_IDS)) > 0) {
            for (int t = 0; t < n; t++) decoder[rows][t] = ids[t];
            decoder_lengths[rows++] = n;
        }
    }
    if (f) fclose(f);
    snprintf(path, sizeof path, "%s/fbank_features.bin", dir);
    size_t n = 0;
    float *features = test_read_floats(path, &n);
    pf_model *m = NULL;
    pf_result r = features && rows == 2 && frames[0] > 0 && frames[1] > 0 ? pf_load(dir, NULL, &m) : PF_ERROR_IO;
    pf_model_info info = pf_get_info(m);
    size_t width = (size_t)info.num_mel_bins, tokens = (size_t)(decoder_lengths[0] + decoder_lengths[1]);
    if (r == PF_OK && n != 2 * (size_t)frames[0] * width) r = PF_ERROR_FORMAT;
    const float *rows_in[2] = {features, features ? features + (size_t)frames[0] * width : NULL};
    const int32_t *dec[2] = {decoder[0], decoder[1]};
    float *want = (float *)malloc(tokens * (size_t)info.vocab_size * sizeof(float) + 1);
    float *got = (float *)malloc(tokens * (size_t)info.vocab_size * sizeof(float) + 1);
    pf_encoding *want_e = NULL;
    pf_parallel_options po = pf_parallel_options_init();
    po.device = PF_DEVICE_CPU;
    po.max_batch = 2;
    if (r == PF_OK) r = want && got ? pf_parallelize(m, 1, &po) : PF_ERROR_OUT_OF_MEMORY;
    if (r == PF_OK) r = pf_encode_audio_features(m, rows_in, frames, 2, &want_e);
    if (r == PF_OK) r = pf_forward_audio(m, rows_in, frames, dec, decoder_lengths, 2, want);
    pf_generation want_g;
    memset(&want_g, 0, sizeof want_g);
    if (r == PF_OK) r = pf_generate_audio(m, rows_in, frames, 2, NULL, &want_g);
    CHECK_MSG(r == PF_OK, "%s on the CPU: %s", name, pf_error_message(m));
    for (int ranks = 1; r == PF_OK && ranks <= 2; ranks++) {
        pf_encoding *got_e = NULL;
        po.device = PF_DEVICE_CUDA;
        po.dtype = PF_DTYPE_F32;
        pf_result rr = pf_parallelize(m, ranks, &po);
        if (rr == PF_OK) rr = pf_encode_audio_features(m, rows_in, frames, 2, &got_e);
        if (rr == PF_OK) rr = pf_forward_audio(m, rows_in, frames, dec, decoder_lengths, 2, got);
        pf_generation got_g;
        memset(&got_g, 0, sizeof got_g);
        if (rr == PF_OK) rr = pf_generate_audio(m, rows_in, frames, 2, NULL, &got_g);
        CHECK_MSG(rr == PF_OK, "%s on %d GPU ranks: %s", name, ranks, pf_error_message(m));
        int same = rr == PF_OK && got_g.num_sequences == want_g.num_sequences;
        for (int b = 0; same && b < want_g.num_sequences; b++)
            same = got_g.lengths[b] == want_g.lengths[b] &&
                   !memcmp(got_g.tokens[b], want_g.tokens[b], (size_t)want_g.lengths[b] * sizeof(int32_t));
        CHECK_MSG(rr != PF_OK || same, "%s on %d GPU ranks: greedy generation differs from the CPU's", name, ranks);
        pf_generation_free(&got_g);
        if (rr) {
            pf_encoding_free(got_e);
            continue;
        }
        float worst = test_max_abs_diff(got_e->last_hidden_state, want_e->last_hidden_state,
                                        (size_t)want_e->offsets[2] * want_e->hidden_size);
        float logits = test_max_abs_diff(got, want, tokens * (size_t)info.vocab_size);
        if (logits > worst) worst = logits;
        CHECK_MSG(worst <= 1e-3f, "%s on %d GPU ranks: differs from the CPU by %g", name, ranks, worst);
        printf("  %-12s f32 %d rank%s on the GPU        max |output - CPU| %.3g (tol 0.001)\n", name, ranks,
               ranks > 1 ? "s" : " ", worst);
        pf_encoding_free(got_e);
    }
    pf_encoding_free(want_e);
    pf_generation_free(&want_g);
    free(want), free(got), free(features);
    pf_free(m);
}

/* A speech encoder-decoder (Whisper): the fixture's two rows of features (features.bin) on 1 and 2
   f32 GPU ranks against the CPU: the encoder's last hidden state and the decoder's logits for its
   prompt and greedy tokens within 1e-3, and the greedy tokens themselves. */
static void test_speech_seq2seq(const char *name) {
    char dir[1024], path[1100];
    snprintf(dir, sizeof dir, "%s/%s", test_fixtures, name);
    snprintf(path, sizeof path, "%s/features.bin", dir);
    size_t n = 0;
    float *features = test_read_floats(path, &n);
    pf_model *m = NULL;
    pf_result r = features ? pf_load(dir, NULL, &m) : PF_ERROR_IO;
    pf_model_info info = pf_get_info(m);
    int frames = info.num_mel_bins ? (int)(n / 2 / (size_t)info.num_mel_bins) : 0, counts[2] = {frames, frames};
    const float *rows[2] = {features, features ? features + n / 2 : NULL};
    pf_parallel_options po = pf_parallel_options_init();
    po.device = PF_DEVICE_CPU;
    po.max_batch = 2;
    pf_generate_options o = pf_model_generate_options(m);
    o.max_new_tokens = 8;
    pf_generation want_tokens = {0};
    pf_encoding *want_hidden = NULL;
    int32_t decoder[2][TEST_MAX_IDS];
    int lengths[2] = {0, 0};
    size_t vocab = (size_t)info.vocab_size, tokens = 0;
    float *want = NULL, *got = NULL;
    if (r == PF_OK) r = pf_parallelize(m, 1, &po);
    if (r == PF_OK) r = pf_encode_audio_features(m, rows, counts, 2, &want_hidden);
    if (r == PF_OK) r = pf_generate_audio(m, rows, counts, 2, &o, &want_tokens);
    for (int b = 0; r == PF_OK && b < 2; b++) { /* the prompt, then the greedy tokens: teacher-forced logits */
        int p = o.decoder_prompt ? o.decoder_prompt_length : 1;
        for (int t = 0; t < p; t++) decoder[b][t] = o.decoder_prompt ? o.decoder_prompt[t] : info.decoder_start_token_id;
        for (int t = 0; t < want_tokens.lengths[b] && p + t < TEST_MAX_IDS; t++) decoder[b][p + t] = want_tokens.tokens[b][t];
        lengths[b] = p + want_tokens.lengths[b];
        tokens += (size_t)lengths[b];
    }
    const int32_t *decoder_rows[2] = {decoder[0], decoder[1]};
    if (r == PF_OK && (!(want = (float *)malloc(tokens * vocab * sizeof(float))) || !(got = (float *)malloc(tokens * vocab * sizeof(float)))))
        r = PF_ERROR_OUT_OF_MEMORY;
    if (r == PF_OK) r = pf_forward_audio(m, rows, counts, decoder_rows, lengths, 2, want);
    CHECK_MSG(r == PF_OK, "%s on the CPU: %s", name, pf_error_message(m));
    for (int ranks = 1; r == PF_OK && ranks <= 2; ranks++) {
        char what[160];
        snprintf(what, sizeof what, "%s f32 %d rank%s on the GPU", name, ranks, ranks > 1 ? "s" : "");
        po.device = PF_DEVICE_CUDA;
        po.dtype = PF_DTYPE_F32;
        pf_encoding *hidden = NULL;
        pf_generation generated = {0};
        pf_result rr = pf_parallelize(m, ranks, &po);
        if (rr == PF_OK) rr = pf_encode_audio_features(m, rows, counts, 2, &hidden);
        if (rr == PF_OK) rr = pf_forward_audio(m, rows, counts, decoder_rows, lengths, 2, got);
        if (rr == PF_OK) rr = pf_generate_audio(m, rows, counts, 2, &o, &generated);
        CHECK_MSG(rr == PF_OK, "%s: %s", what, pf_error_message(m));
        if (rr == PF_OK) {
            size_t count = (size_t)want_hidden->offsets[2] * (size_t)want_hidden->hidden_size;
            float hidden_diff = test_max_abs_diff(hidden->last_hidden_state, want_hidden->last_hidden_state, count);
            float logits_diff = test_max_abs_diff(got, want, tokens * vocab);
            int same = generated.num_sequences == 2;
            for (int b = 0; same && b < 2; b++)
                same = generated.lengths[b] == want_tokens.lengths[b] &&
                       !memcmp(generated.tokens[b], want_tokens.tokens[b], (size_t)generated.lengths[b] * sizeof(int32_t));
            CHECK_MSG(hidden_diff <= 1e-3f && logits_diff <= 1e-3f && same,
                      "%s: hidden state %g, logits %g from the CPU; greedy tokens %s", what, hidden_diff, logits_diff,
                      same ? "the same" : "differ");
            printf("  %-36s max |hidden - CPU| %.3g, |logits - CPU| %.3g (tol 0.001), greedy %s\n", what, hidden_diff,
                   logits_diff, same ? "identical" : "differs");
        }
        pf_encoding_free(hidden);
        pf_generation_free(&generated);
    }
    pf_encoding_free(want_hidden);
    pf_generation_free(&want_tokens);
    free(want), free(got), free(features);
    pf_free(m);
}

/* ---- prefill attention at real shapes: random checkpoints ---- */

/* A random-weight checkpoint of real attention shapes (head_dim 64-256, grouped-query heads, a
   sliding window), small elsewhere (one layer, hidden 256, a tiny vocabulary) so that the
   stand-in runs it in seconds. Mistral is LLaMA with a window, BLOOM a decoder with ALiBi; BERT
   and T5's encoder (relative position bias) are bidirectional encoders whose padded batches
   exercise left pads with mask 0. */
typedef enum random_family { RANDOM_MISTRAL, RANDOM_BLOOM, RANDOM_BERT, RANDOM_T5 } random_family;

typedef struct random_shape {
    const char *name;
    random_family family;
    int heads, kv_heads, head_dim, window; /* BERT and BLOOM: heads * head_dim is the hidden size */
} random_shape;

static int random_is_encoder(const random_shape *s) { return s->family == RANDOM_BERT || s->family == RANDOM_T5; }

enum { RANDOM_HIDDEN = 256, RANDOM_INTERMEDIATE = 256, RANDOM_VOCAB = 64, RANDOM_POSITIONS = 512, RANDOM_TOKENS = 300 };

typedef struct random_tensor {
    char name[96];
    size_t rows, cols; /* cols 0: a vector */
    float sd;          /* N(0, sd); 0: all `fill` */
    float fill;
} random_tensor;

static uint64_t random_next(uint64_t *state) { /* splitmix64 */
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static float random_normal(uint64_t *state) { /* Box-Muller, one of the pair */
    float u1 = ((float)(random_next(state) >> 40) + 1.0f) / 16777216.0f, u2 = (float)(random_next(state) >> 40) / 16777216.0f;
    return sqrtf(-2.0f * logf(u1)) * cosf(6.2831853f * u2);
}

static void add_random_tensor(random_tensor *t, int *n, size_t rows, size_t cols, float sd, float fill, const char *name) {
    snprintf(t[*n].name, sizeof t[*n].name, "%s", name);
    t[*n].rows = rows, t[*n].cols = cols, t[*n].sd = sd, t[*n].fill = fill;
    ++*n;
}

/* The tensors of shape s. Query and key projections are drawn wide (sd 2 / sqrt(fan in): scores of
   a few units, a peaked softmax, so a wrong mask moves the outputs far beyond the tolerances). */
static int random_tensors(const random_shape *s, random_tensor *t) {
    int n = 0;
    size_t d = RANDOM_HIDDEN, I = RANDOM_INTERMEDIATE, V = RANDOM_VOCAB, q = (size_t)s->heads * s->head_dim;
    size_t kv = (size_t)s->kv_heads * s->head_dim;
    float in_d = 1.0f / sqrtf((float)d), in_q = 1.0f / sqrtf((float)q), in_i = 1.0f / sqrtf((float)I);
    if (s->family == RANDOM_BERT) {
        add_random_tensor(t, &n, V, d, 1.0f, 0, "embeddings.word_embeddings.weight");
        add_random_tensor(t, &n, RANDOM_POSITIONS, d, 0.5f, 0, "embeddings.position_embeddings.weight");
        add_random_tensor(t, &n, 2, d, 0.1f, 0, "embeddings.token_type_embeddings.weight");
        add_random_tensor(t, &n, d, 0, 0, 1, "embeddings.LayerNorm.weight");
        add_random_tensor(t, &n, d, 0, 0, 0, "embeddings.LayerNorm.bias");
        add_random_tensor(t, &n, q, d, 2 * in_d, 0, "encoder.layer.0.attention.self.query.weight");
        add_random_tensor(t, &n, q, 0, 0, 0, "encoder.layer.0.attention.self.query.bias");
        add_random_tensor(t, &n, q, d, 2 * in_d, 0, "encoder.layer.0.attention.self.key.weight");
        add_random_tensor(t, &n, q, 0, 0, 0, "encoder.layer.0.attention.self.key.bias");
        add_random_tensor(t, &n, q, d, in_d, 0, "encoder.layer.0.attention.self.value.weight");
        add_random_tensor(t, &n, q, 0, 0, 0, "encoder.layer.0.attention.self.value.bias");
        add_random_tensor(t, &n, d, q, in_q, 0, "encoder.layer.0.attention.output.dense.weight");
        add_random_tensor(t, &n, d, 0, 0, 0, "encoder.layer.0.attention.output.dense.bias");
        add_random_tensor(t, &n, d, 0, 0, 1, "encoder.layer.0.attention.output.LayerNorm.weight");
        add_random_tensor(t, &n, d, 0, 0, 0, "encoder.layer.0.attention.output.LayerNorm.bias");
        add_random_tensor(t, &n, I, d, in_d, 0, "encoder.layer.0.intermediate.dense.weight");
        add_random_tensor(t, &n, I, 0, 0, 0, "encoder.layer.0.intermediate.dense.bias");
        add_random_tensor(t, &n, d, I, in_i, 0, "encoder.layer.0.output.dense.weight");
        add_random_tensor(t, &n, d, 0, 0, 0, "encoder.layer.0.output.dense.bias");
        add_random_tensor(t, &n, d, 0, 0, 1, "encoder.layer.0.output.LayerNorm.weight");
        add_random_tensor(t, &n, d, 0, 0, 0, "encoder.layer.0.output.LayerNorm.bias");
    } else if (s->family == RANDOM_T5) {
        /* T5 scales no scores: q and k drawn narrow; the bias table wide (it must matter) */
        add_random_tensor(t, &n, V, d, 1.0f, 0, "shared.weight");
        add_random_tensor(t, &n, d, 0, 0, 1, "encoder.block.0.layer.0.layer_norm.weight");
        add_random_tensor(t, &n, q, d, in_d / 2, 0, "encoder.block.0.layer.0.SelfAttention.q.weight");
        add_random_tensor(t, &n, q, d, in_d / 2, 0, "encoder.block.0.layer.0.SelfAttention.k.weight");
        add_random_tensor(t, &n, q, d, in_d, 0, "encoder.block.0.layer.0.SelfAttention.v.weight");
        add_random_tensor(t, &n, d, q, in_q, 0, "encoder.block.0.layer.0.SelfAttention.o.weight");
        add_random_tensor(t, &n, 32, (size_t)s->heads, 1.0f, 0,
                          "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight");
        add_random_tensor(t, &n, d, 0, 0, 1, "encoder.block.0.layer.1.layer_norm.weight");
        add_random_tensor(t, &n, I, d, in_d, 0, "encoder.block.0.layer.1.DenseReluDense.wi.weight");
        add_random_tensor(t, &n, d, I, in_i, 0, "encoder.block.0.layer.1.DenseReluDense.wo.weight");
        add_random_tensor(t, &n, d, 0, 0, 1, "encoder.final_layer_norm.weight");
    } else if (s->family == RANDOM_BLOOM) {
        /* the LM head is the embedding (tied): drawn narrow, for logits of a few units */
        size_t wide = 4 * d; /* BLOOM's MLP is 4 * hidden */
        add_random_tensor(t, &n, V, d, 0.25f, 0, "transformer.word_embeddings.weight");
        add_random_tensor(t, &n, d, 0, 0, 1, "transformer.word_embeddings_layernorm.weight");
        add_random_tensor(t, &n, d, 0, 0, 0, "transformer.word_embeddings_layernorm.bias");
        add_random_tensor(t, &n, d, 0, 0, 1, "transformer.h.0.input_layernorm.weight");
        add_random_tensor(t, &n, d, 0, 0, 0, "transformer.h.0.input_layernorm.bias");
        add_random_tensor(t, &n, 3 * d, d, 2 * in_d, 0, "transformer.h.0.self_attention.query_key_value.weight");
        add_random_tensor(t, &n, 3 * d, 0, 0, 0, "transformer.h.0.self_attention.query_key_value.bias");
        add_random_tensor(t, &n, d, d, in_d, 0, "transformer.h.0.self_attention.dense.weight");
        add_random_tensor(t, &n, d, 0, 0, 0, "transformer.h.0.self_attention.dense.bias");
        add_random_tensor(t, &n, d, 0, 0, 1, "transformer.h.0.post_attention_layernorm.weight");
        add_random_tensor(t, &n, d, 0, 0, 0, "transformer.h.0.post_attention_layernorm.bias");
        add_random_tensor(t, &n, wide, d, in_d, 0, "transformer.h.0.mlp.dense_h_to_4h.weight");
        add_random_tensor(t, &n, wide, 0, 0, 0, "transformer.h.0.mlp.dense_h_to_4h.bias");
        add_random_tensor(t, &n, d, wide, 1.0f / sqrtf((float)wide), 0, "transformer.h.0.mlp.dense_4h_to_h.weight");
        add_random_tensor(t, &n, d, 0, 0, 0, "transformer.h.0.mlp.dense_4h_to_h.bias");
        add_random_tensor(t, &n, d, 0, 0, 1, "transformer.ln_f.weight");
        add_random_tensor(t, &n, d, 0, 0, 0, "transformer.ln_f.bias");
    } else {
        add_random_tensor(t, &n, V, d, 1.0f, 0, "model.embed_tokens.weight");
        add_random_tensor(t, &n, d, 0, 0, 1, "model.layers.0.input_layernorm.weight");
        add_random_tensor(t, &n, q, d, 2 * in_d, 0, "model.layers.0.self_attn.q_proj.weight");
        add_random_tensor(t, &n, kv, d, 2 * in_d, 0, "model.layers.0.self_attn.k_proj.weight");
        add_random_tensor(t, &n, kv, d, in_d, 0, "model.layers.0.self_attn.v_proj.weight");
        add_random_tensor(t, &n, d, q, in_q, 0, "model.layers.0.self_attn.o_proj.weight");
        add_random_tensor(t, &n, d, 0, 0, 1, "model.layers.0.post_attention_layernorm.weight");
        add_random_tensor(t, &n, I, d, in_d, 0, "model.layers.0.mlp.gate_proj.weight");
        add_random_tensor(t, &n, I, d, in_d, 0, "model.layers.0.mlp.up_proj.weight");
        add_random_tensor(t, &n, d, I, in_i, 0, "model.layers.0.mlp.down_proj.weight");
        add_random_tensor(t, &n, d, 0, 0, 1, "model.norm.weight");
        add_random_tensor(t, &n, V, d, in_d, 0, "lm_head.weight");
    }
    return n;
}

/* DIR/config.json and DIR/model.safetensors (F32) for shape s; 0 or -1. */
static int write_random_checkpoint(const random_shape *s, const char *dir) {
    char path[512], config[1024];
    if (s->family == RANDOM_T5)
        snprintf(config, sizeof config,
                 "{\"architectures\": [\"T5EncoderModel\"], \"model_type\": \"t5\", \"vocab_size\": %d,"
                 " \"d_model\": %d, \"d_kv\": %d, \"num_heads\": %d, \"d_ff\": %d, \"num_layers\": 1,"
                 " \"num_decoder_layers\": 1, \"relative_attention_num_buckets\": 32,"
                 " \"relative_attention_max_distance\": 128, \"feed_forward_proj\": \"relu\","
                 " \"layer_norm_epsilon\": 1e-06, \"is_encoder_decoder\": false, \"tie_word_embeddings\": true,"
                 " \"pad_token_id\": 0, \"eos_token_id\": 1, \"torch_dtype\": \"float32\"}\n",
                 RANDOM_VOCAB, RANDOM_HIDDEN, s->head_dim, s->heads, RANDOM_INTERMEDIATE);
    else if (s->family == RANDOM_BLOOM)
        snprintf(config, sizeof config,
                 "{\"architectures\": [\"BloomForCausalLM\"], \"model_type\": \"bloom\", \"vocab_size\": %d,"
                 " \"hidden_size\": %d, \"n_head\": %d, \"n_layer\": 1, \"layer_norm_epsilon\": 1e-05,"
                 " \"apply_residual_connection_post_layernorm\": false, \"tie_word_embeddings\": true,"
                 " \"bos_token_id\": 1, \"eos_token_id\": 2, \"pad_token_id\": 3, \"torch_dtype\": \"float32\"}\n",
                 RANDOM_VOCAB, RANDOM_HIDDEN, s->heads);
    else if (s->family == RANDOM_BERT)
        snprintf(config, sizeof config,
                 "{\"architectures\": [\"BertModel\"], \"model_type\": \"bert\", \"vocab_size\": %d, \"hidden_size\": %d,"
                 " \"num_hidden_layers\": 1, \"num_attention_heads\": %d, \"intermediate_size\": %d,"
                 " \"max_position_embeddings\": %d, \"type_vocab_size\": 2, \"layer_norm_eps\": 1e-12,"
                 " \"hidden_act\": \"gelu\", \"pad_token_id\": 0, \"torch_dtype\": \"float32\"}\n",
                 RANDOM_VOCAB, RANDOM_HIDDEN, s->heads, RANDOM_INTERMEDIATE, RANDOM_POSITIONS);
    else
        snprintf(config, sizeof config,
                 "{\"architectures\": [\"MistralForCausalLM\"], \"model_type\": \"mistral\", \"vocab_size\": %d,"
                 " \"hidden_size\": %d, \"intermediate_size\": %d, \"num_hidden_layers\": 1,"
                 " \"num_attention_heads\": %d, \"num_key_value_heads\": %d, \"head_dim\": %d,"
                 " \"max_position_embeddings\": %d, \"rms_norm_eps\": 1e-05, \"rope_theta\": 10000.0,"
                 " \"sliding_window\": %s%.0d, \"hidden_act\": \"silu\", \"tie_word_embeddings\": false,"
                 " \"bos_token_id\": 1, \"eos_token_id\": 2, \"torch_dtype\": \"float32\"}\n",
                 RANDOM_VOCAB, RANDOM_HIDDEN, RANDOM_INTERMEDIATE, s->heads, s->kv_heads, s->head_dim,
                 RANDOM_POSITIONS, s->window ? "" : "null", s->window);
    snprintf(path, sizeof path, "%s/config.json", dir);
    if (test_write_file(path, config, strlen(config))) return -1;

    random_tensor t[32];
    int n = random_tensors(s, t);
    size_t header_cap = 64 + (size_t)n * 200, used = 0, offset = 0, total = 0;
    char *header = (char *)malloc(header_cap);
    if (!header) return -1;
    used += (size_t)snprintf(header, header_cap, "{\"__metadata__\":{\"format\":\"pt\"}");
    for (int i = 0; i < n; i++) {
        size_t count = t[i].rows * (t[i].cols ? t[i].cols : 1);
        char shape[64];
        if (t[i].cols) snprintf(shape, sizeof shape, "[%zu,%zu]", t[i].rows, t[i].cols);
        else snprintf(shape, sizeof shape, "[%zu]", t[i].rows);
        used += (size_t)snprintf(header + used, header_cap - used,
                                 ",\"%s\":{\"dtype\":\"F32\",\"shape\":%s,\"data_offsets\":[%zu,%zu]}", t[i].name, shape,
                                 offset, offset + 4 * count);
        offset += 4 * count;
    }
    used += (size_t)snprintf(header + used, header_cap - used, "}");
    while (used % 8) header[used++] = ' ';
    total = 8 + used + offset;
    unsigned char *file = (unsigned char *)malloc(total);
    int rc = -1;
    if (file) {
        for (int i = 0; i < 8; i++) file[i] = (unsigned char)((uint64_t)used >> (8 * i));
        memcpy(file + 8, header, used);
        float *data = (float *)(file + 8 + used); /* 8 + used is a multiple of 8 */
        uint64_t state = 0x5EEDull + (uint64_t)s->head_dim * 131u + (uint64_t)s->heads;
        for (int i = 0, at = 0; i < n; i++)
            for (size_t k = 0; k < t[i].rows * (t[i].cols ? t[i].cols : 1); k++)
                data[at++] = t[i].sd > 0 ? t[i].sd * random_normal(&state) : t[i].fill;
        snprintf(path, sizeof path, "%s/model.safetensors", dir);
        rc = test_write_file(path, file, total);
    }
    free(file);
    free(header);
    return rc;
}

static void remove_random_checkpoint(const char *dir) {
    char path[512];
    snprintf(path, sizeof path, "%s/config.json", dir);
    remove(path);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    remove(path);
    remove(dir);
}

/* Seeded random ids: rows of RANDOM_TOKENS; an encoder batch of three rows of other lengths
   (none a multiple of the 32-key tile or of a block's 64 queries). */
static const int random_lengths[3] = {RANDOM_TOKENS, 217, 45};
static void random_ids(int32_t *ids, size_t n, uint64_t seed) {
    for (size_t i = 0; i < n; i++) ids[i] = (int32_t)(random_next(&seed) % RANDOM_VOCAB);
}

/* Outputs of the model on the current device: a decoder's logits of two rows of RANDOM_TOKENS
   ([2][RANDOM_TOKENS][RANDOM_VOCAB]); an encoder's last hidden states of the three rows of
   random_lengths, left-padded to the longest by the library ([offsets[3]][RANDOM_HIDDEN]). */
static float *random_outputs(pf_model *m, int encoder, const int32_t *ids, size_t *count, const char *what) {
    if (!encoder) {
        *count = (size_t)2 * RANDOM_TOKENS * RANDOM_VOCAB;
        return forward(m, ids, 2, RANDOM_TOKENS, RANDOM_VOCAB, what);
    }
    const int32_t *rows[3] = {ids, ids + RANDOM_TOKENS, ids + 2 * RANDOM_TOKENS};
    pf_encoding *e = NULL;
    pf_result r = pf_encode(m, rows, NULL, random_lengths, 3, &e);
    CHECK_MSG(r == PF_OK, "%s: pf_encode: %s", what, pf_error_message(m));
    if (r) return NULL;
    *count = (size_t)e->offsets[3] * RANDOM_HIDDEN;
    float *out = (float *)malloc(*count * sizeof(float));
    if (out) memcpy(out, e->last_hidden_state, *count * sizeof(float));
    pf_encoding_free(e);
    return out;
}

/* Prefill on the CUDA backend in F16 and BF16 (its 16-bit caches: the tensor-core kernel) on 1
   and 2 ranks (2: GQA's kv_begin and head_begin move) against the CPU backend storing the same
   dtype, within the dtype's logit tolerance (the CPU rounds only the weights; the GPU also GEMM
   inputs, the cache, Q and P). A decoder's two rows of 300 run in chunks of positions, each
   after the cache the one before filled (T > 1 with past > 0): 256 + 44 (the default
   prefill_chunk, 512 tokens) on 1 rank, 100 + 100 + 100 on 2. */
static void test_random_shape(const random_shape *s) {
    char dir[] = "/tmp/pf_test_cuda_XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK_MSG(0, "%s: mkdtemp failed", s->name);
        return;
    }
    pf_model *m = NULL;
    int ok = write_random_checkpoint(s, dir) == 0;
    CHECK_MSG(ok, "%s: writing the checkpoint in %s", s->name, dir);
    pf_result r = ok ? pf_load(dir, NULL, &m) : PF_ERROR_IO;
    CHECK_MSG(r == PF_OK, "%s: pf_load: %s", s->name, m ? pf_error_message(m) : "no model");
    int32_t ids[3 * RANDOM_TOKENS];
    random_ids(ids, sizeof ids / sizeof ids[0], (uint64_t)s->head_dim);
    static const pf_dtype dtypes[] = {PF_DTYPE_F16, PF_DTYPE_BF16};
    static const int zeros[2] = {0, 0};
    for (size_t d = 0; r == PF_OK && d < sizeof dtypes / sizeof dtypes[0]; d++) {
        pf_parallel_options o = pf_parallel_options_init();
        o.device = PF_DEVICE_CPU;
        o.dtype = dtypes[d];
        o.max_batch = 3;
        o.max_sequence_length = RANDOM_TOKENS + 20;
        size_t count = 0, cuda_count = 0;
        char what[160];
        snprintf(what, sizeof what, "%s %s CPU", s->name, dtype_name(dtypes[d]));
        r = pf_parallelize(m, 1, &o);
        CHECK_MSG(r == PF_OK, "%s: pf_parallelize: %s", what, pf_error_message(m));
        float *cpu = r ? NULL : random_outputs(m, random_is_encoder(s), ids, &count, what);
        for (int ranks = 1; cpu && ranks <= 2; ranks++) {
            snprintf(what, sizeof what, "%s %s %d rank%s on GPU 0", s->name, dtype_name(dtypes[d]), ranks,
                     ranks > 1 ? "s" : "");
            o.device = PF_DEVICE_CUDA;
            o.device_ids = ranks > 1 ? zeros : NULL;
            o.num_device_ids = ranks > 1 ? ranks : 0;
            o.prefill_chunk = ranks > 1 ? 2 * 100 : 0; /* decoders: chunks of 256 + 44, or 3 x 100 */
            r = pf_parallelize(m, ranks, &o);
            CHECK_MSG(r == PF_OK, "%s: pf_parallelize: %s", what, pf_error_message(m));
            float *cuda = r ? NULL : random_outputs(m, random_is_encoder(s), ids, &cuda_count, what);
            if (cuda && cuda_count == count) {
                float diff = test_max_abs_diff(cuda, cpu, count);
                float tol = dtypes[d] == PF_DTYPE_F16 ? TOLERANCE_F16 : TOLERANCE_BF16;
                CHECK_MSG(diff <= tol, "%s: %s differ from the CPU backend's by %g (tolerance %g)", what,
                          random_is_encoder(s) ? "hidden states" : "logits", diff, tol);
                printf("  %-40s max |%s - CPU| %.3g (tol %g)\n", what, random_is_encoder(s) ? "hidden" : "logit", diff, tol);
            }
            CHECK_MSG(!cuda || cuda_count == count, "%s: %zu outputs, the CPU %zu", what, cuda_count, count);
            free(cuda);
            r = PF_OK;
        }
        free(cpu);
    }
    pf_free(m);
    remove_random_checkpoint(dir);
}

/* Real attention shapes through the prefill kernel: head_dim 64, 80, 128 and 256 (2 warps a
   block), grouped-query heads, a window shorter than the prompt, ALiBi, and encoders' padded
   batches with and without T5's relative bias. */
static void test_random_shapes(void) {
    static const random_shape shapes[] = {
        {"mistral hd128 gqa", RANDOM_MISTRAL, 4, 2, 128, 0},
        {"mistral hd64 gqa4 window 100", RANDOM_MISTRAL, 4, 1, 64, 100},
        {"mistral hd80 window 77", RANDOM_MISTRAL, 2, 2, 80, 77},
        {"mistral hd256 gqa", RANDOM_MISTRAL, 2, 1, 256, 0},
        {"bloom hd128 alibi", RANDOM_BLOOM, 2, 2, 128, 0},
        {"bert hd128 padded", RANDOM_BERT, 2, 2, 128, 0},
        {"bert hd64 padded", RANDOM_BERT, 4, 4, 64, 0},
        {"t5 encoder hd64 relative bias padded", RANDOM_T5, 4, 4, 64, 0},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        printf("%s\n", shapes[i].name);
        test_random_shape(&shapes[i]);
    }
}

/* The subdirectories of test_fixtures holding FILE, sorted; NULL-terminated. */
static char **list_fixtures(const char *file, int *count) {
    *count = 0;
    DIR *d = opendir(test_fixtures);
    if (!d) return NULL;
    char **names = NULL;
    int cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char path[1200];
        if (e->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "%s/%s/%s", test_fixtures, e->d_name, file);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        fclose(f);
        snprintf(path, sizeof path, "%s/%s/features.bin", test_fixtures, e->d_name);
        if (strcmp(file, "features.bin") && (f = fopen(path, "r"))) { /* a speech encoder-decoder: its own test */
            fclose(f);
            continue;
        }
        if (*count + 1 >= cap) {
            cap = cap ? 2 * cap : 32;
            char **grown = (char **)realloc(names, (size_t)cap * sizeof *names);
            if (!grown) break;
            names = grown;
        }
        size_t len = strlen(e->d_name);
        names[*count] = (char *)malloc(len + 1);
        if (!names[*count]) break;
        memcpy(names[*count], e->d_name, len + 1);
        ++*count;
    }
    closedir(d);
    if (names) {
        qsort(names, (size_t)*count, sizeof *names, compare_names);
        names[*count] = NULL;
    }
    return names;
}

/* Runs test on every fixture holding FILE (at least one must). */
static void run_fixtures(const char *file, const char *kind, void (*test)(const char *)) {
    int count = 0;
    char **names = list_fixtures(file, &count);
    CHECK_MSG(count > 0, "no %s fixtures (%s) in %s", kind, file, test_fixtures);
    for (int i = 0; i < count; i++) {
        printf("%s\n", names[i]);
        test(names[i]);
        free(names[i]);
    }
    free(names);
}

int main(int argc, char **argv) {
    if (argc > 1) test_fixtures = argv[1];
    setvbuf(stdout, NULL, _IOLBF, 0); /* progress lines in order with the FAIL lines on stderr */
    char reason[512] = "";
    int available = cuda_available(reason, sizeof reason);
    if (available == 0) {
        /* asked to run on a GPU (PF_REQUIRE_CUDA=1, as gpu_check.sh does), not finding one fails */
        const char *require = getenv("PF_REQUIRE_CUDA");
        int required = require && *require && strcmp(require, "0");
        printf("test-cuda: %s (%s)\n", required ? "FAILED: PF_REQUIRE_CUDA is set but CUDA does not run" : "skipped",
               reason[0] ? reason : "no CUDA device");
        return required ? 1 : 0;
    }
    CHECK_MSG(available == 1, "the CUDA backend does not start (see above)");
    if (available == 1) {
        test_register_fixture_policies(); /* my-llama loads through its policy.json */
        /* Fixture names after the directory run those alone (compute-sanitizer is slow; each by the
           reference it holds: an encoder-decoder's, an image encoder's, an encoder's, else a
           decoder's), and
           "random-shapes" the random checkpoints of real attention shapes; with none, every
           fixture, the random shapes and then the generation, device and failure tests; "sampling"
           the top-k kernel and sampling from its candidates alone. */
        if (argc > 2) {
            for (int i = 2; i < argc; i++) {
                if (!strcmp(argv[i], "random-shapes")) { /* not a fixture: the prefill kernel's shapes */
                    test_random_shapes();
                    continue;
                }
                if (!strcmp(argv[i], "cuda-graphs")) { /* not a fixture: decode steps as graphs, on and off */
                    printf("CUDA graphs\n");
                    test_cuda_graphs();
#ifdef PF_TESTING
                    test_cuda_graph_failure();
#endif
                    continue;
                }
                if (!strcmp(argv[i], "sampling")) { /* not a fixture: sampling from the devices' candidates */
                    test_top_k_kernel();
#ifdef PF_TESTING
                    test_device_sampling();
                    test_device_sampling_edges();
#endif
                    continue;
                }
                if (!strcmp(argv[i], "reformer")) { /* both Reformer fixtures, against transformers' */
                    printf("reformer\n");
                    test_reformer_fixtures();
                    continue;
                }
                if (!strncmp(argv[i], "xlnet-lm", 8)) { /* generation alone: no logits to compare */
                    printf("%s\n", argv[i]);
                    test_memory_generation(argv[i]);
                    continue;
                }
                if (!strncmp(argv[i], "transfo-xl-lm", 13)) { /* its hidden states, then its generation */
                    printf("%s\n", argv[i]);
                    test_encoder(argv[i]);
                    test_memory_generation(argv[i]);
                    continue;
                }
                printf("%s\n", argv[i]);
                /* by the reference it holds, as the full run picks its fixtures */
                char path[1200];
                snprintf(path, sizeof path, "%s/%s/decoder_logits.bin", test_fixtures, argv[i]);
                int seq2seq = access(path, R_OK) == 0;
                snprintf(path, sizeof path, "%s/%s/pixels.bin", test_fixtures, argv[i]);
                int image = access(path, R_OK) == 0;
                snprintf(path, sizeof path, "%s/%s/hidden.bin", test_fixtures, argv[i]);
                int encoder = access(path, R_OK) == 0;
                if (seq2seq) test_seq2seq_fixture(argv[i]);
                else if (image) test_image_encoder(argv[i]);
                else if (encoder) test_encoder(argv[i]);
                else test_fixture(argv[i]);
            }
        } else {
            run_fixtures("reference_logits.bin", "decoder", test_fixture);
            run_fixtures("hidden.bin", "encoder", test_encoder);
            run_fixtures("pixels.bin", "image", test_image_encoder);
            printf("clip\n");
            test_clip();
            static const char *const memory_lm[] = {"xlnet-lm", "xlnet-lm-allmem", "xlnet-lm-nomem", "transfo-xl-lm",
                                                    "transfo-xl-lm-div", "transfo-xl-lm-proj"};
            for (size_t k = 0; k < sizeof memory_lm / sizeof memory_lm[0]; k++) {
                printf("%s\n", memory_lm[k]);
                test_memory_generation(memory_lm[k]);
            }
            printf("reformer\n");
            test_reformer_fixtures();
            run_fixtures("samples.bin", "speech", test_speech_encoder);
            run_fixtures("decoder_logits.bin", "encoder-decoder", test_seq2seq_fixture);
            run_fixtures("features.bin", "speech encoder-decoder", test_speech_seq2seq);
            run_fixtures("fbank_features.bin", "speech encoder-decoder", test_speech2text);
            test_random_shapes();
            printf("generation cases\n");
            test_generation_cases();
            printf("CUDA graphs\n");
            test_cuda_graphs();
#ifdef PF_TESTING
            test_cuda_graph_failure();
#endif
            test_bad_device();
            printf("greedy token choice on the device\n");
            test_argmax_kernel();
            printf("sampling from top-k candidates on the device\n");
            test_top_k_kernel();
#ifdef PF_TESTING
            test_device_choice_fallback();
            test_device_choice_ties();
            test_device_sampling();
            test_device_sampling_edges();
            test_failing_rank();
#endif
        }
    }
    printf("%d passed, %d failed\n", test_passed, test_failed);
    return test_failed ? 1 : 0;
}
