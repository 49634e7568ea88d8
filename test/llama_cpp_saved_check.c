/* llama_cpp_saved_check: a model directory saved as GGUF (pf_quantize_gguf of a directory) read by
   llama.cpp itself: its tokenizer's ids for texts, its logits at every prompt position and its
   greedy tokens against parallelformers' on the directory. Not part of make test (it needs a
   llama.cpp build); built against one's libllama:

     cc -std=c99 -O2 -I. -I$LLAMA/include -I$LLAMA/ggml/include test/llama_cpp_saved_check.c \
        build/libparallelformers.a -L$LLAMA/build/bin -Wl,-rpath,$LLAMA/build/bin -lllama -lggml -lggml-base \
        $(CUDA libs as the Makefile links them) -lpthread -lm -o build/llama_cpp_saved_check
     build/llama_cpp_saved_check MODEL_DIR f32|q8_0|q4_0 "a text" ...

   It saves MODEL_DIR to a temporary file in the type and prints, per text, whether the ids agree
   and how far the logits are apart (relative to the largest), and the greedy tokens of both on the
   first text's ids (the directory loaded in the type; f32: PF_DTYPE_AUTO). Exit status 1 when ids
   or greedy tokens differ. */
#define _POSIX_C_SOURCE 200809L /* mkstemp */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "llama.h"
#include "parallelformers.h"

#define MAX_IDS 512
#define NEW_TOKENS 8

static void quiet(enum ggml_log_level level, const char *text, void *user) {
    (void)user;
    if (level >= GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

/* llama.cpp's logits of ids (every position) into out [n][vocab]; 0 on success. */
static int llama_logits(struct llama_context *ctx, const llama_token *ids, int n, int vocab, float *out) {
    llama_memory_clear(llama_get_memory(ctx), 1);
    struct llama_batch batch = llama_batch_init(n, 0, 1);
    for (int i = 0; i < n; i++) {
        batch.token[i] = ids[i];
        batch.pos[i] = i;
        batch.n_seq_id[i] = 1;
        batch.seq_id[i][0] = 0;
        batch.logits[i] = 1;
    }
    batch.n_tokens = n;
    int bad = llama_decode(ctx, batch);
    for (int i = 0; !bad && i < n; i++) memcpy(out + (size_t)i * vocab, llama_get_logits_ith(ctx, i), vocab * sizeof(float));
    llama_batch_free(batch);
    return bad;
}

int main(int argc, char **argv) {
    static const struct { const char *name; pf_dtype dtype; } types[] = {
        {"f32", PF_DTYPE_F32}, {"q8_0", PF_DTYPE_Q8_0}, {"q4_0", PF_DTYPE_Q4_0}};
    if (argc < 4) {
        fprintf(stderr, "usage: llama_cpp_saved_check MODEL_DIR f32|q8_0|q4_0 TEXT...\n");
        return 2;
    }
    pf_dtype dtype = PF_DTYPE_AUTO;
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (!strcmp(argv[2], types[i].name)) dtype = types[i].dtype;
    char path[] = "/tmp/pf_saved_XXXXXX", error[1024] = "";
    int fd = mkstemp(path);
    if (fd < 0 || dtype == PF_DTYPE_AUTO) return 2;
    close(fd);
    if (pf_quantize_gguf(argv[1], path, dtype, error, sizeof error)) {
        fprintf(stderr, "pf_quantize_gguf: %s\n", error);
        return 1;
    }
    llama_log_set(quiet, NULL);
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    struct llama_model *lm = llama_model_load_from_file(path, mp);
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = MAX_IDS;
    cp.n_batch = MAX_IDS;
    cp.n_threads = cp.n_threads_batch = 1;
    cp.type_k = cp.type_v = GGML_TYPE_F32; /* llama.cpp's defaults, an fp16 cache and flash attention (fp16 */
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED; /* inside), would round every key and value */
    struct llama_context *ctx = lm ? llama_init_from_model(lm, cp) : NULL;
    pf_model *m = NULL;
    pf_parallel_options po = pf_parallel_options_init();
    po.device = PF_DEVICE_CPU;
    po.dtype = dtype == PF_DTYPE_F32 ? PF_DTYPE_AUTO : dtype;
    pf_result r = pf_load(argv[1], NULL, &m);
    if (!r) r = pf_parallelize(m, 1, &po);
    if (!ctx || r) {
        fprintf(stderr, "%s\n", !ctx ? "llama.cpp does not load the file" : pf_error_message(m));
        return 1;
    }
    const struct llama_vocab *vocab = llama_model_get_vocab(lm);
    int n_vocab = llama_vocab_n_tokens(vocab), failed = 0;
    if (n_vocab != pf_get_info(m).vocab_size) {
        fprintf(stderr, "vocabularies: llama.cpp %d, parallelformers %d\n", n_vocab, pf_get_info(m).vocab_size);
        return 1;
    }
    float *a = malloc((size_t)MAX_IDS * n_vocab * sizeof(float)), *b = malloc((size_t)MAX_IDS * n_vocab * sizeof(float));
    int32_t first[MAX_IDS];
    size_t num_first = 0;
    for (int t = 3; t < argc; t++) {
        llama_token ids[MAX_IDS];
        int32_t pf_ids[MAX_IDS];
        size_t n_pf = 0;
        int n = llama_tokenize(vocab, argv[t], (int32_t)strlen(argv[t]), ids, MAX_IDS, 1, 0);
        r = pf_tokenize_special(pf_model_tokenizer(m), argv[t], strlen(argv[t]), pf_ids, MAX_IDS, &n_pf);
        int same = !r && n > 0 && (size_t)n == n_pf;
        for (int i = 0; same && i < n; i++) same = ids[i] == pf_ids[i];
        failed |= !same;
        if (t == 3) memcpy(first, pf_ids, (num_first = n_pf) * sizeof *first);
        float diff = -1, largest = 0;
        if (same && !llama_logits(ctx, ids, n, n_vocab, a) && !pf_forward(m, pf_ids, 1, (int)n_pf, b)) {
            diff = 0;
            for (size_t i = 0; i < (size_t)n * n_vocab; i++) {
                diff = fmaxf(diff, fabsf(a[i] - b[i]));
                largest = fmaxf(largest, fabsf(b[i]));
            }
        }
        printf("%s %s: \"%s\": %d ids %s; logits %.2e apart (%.3f %% of the largest)\n", argv[1], argv[2], argv[t], n,
               same ? "the same" : "DIFFER", diff, largest > 0 ? 100.0 * diff / largest : 0.0);
    }
    /* greedy: llama.cpp's argmax one token at a time over the whole sequence, against pf_generate */
    llama_token seq[MAX_IDS];
    int n_seq = (int)num_first, got = 0;
    for (int i = 0; i < n_seq; i++) seq[i] = first[i];
    pf_generate_options o = pf_model_generate_options(m);
    o.max_new_tokens = NEW_TOKENS;
    int32_t out[MAX_IDS];
    pf_generate(m, first, (int)num_first, &o, out, MAX_IDS, &got);
    int same = 1;
    for (int k = 0; k < got && n_seq < MAX_IDS; k++) {
        if (llama_logits(ctx, seq, n_seq, n_vocab, a)) break;
        const float *last = a + (size_t)(n_seq - 1) * n_vocab;
        int best = 0;
        for (int v = 1; v < n_vocab; v++) best = last[v] > last[best] ? v : best;
        same &= best == out[k];
        seq[n_seq++] = best;
    }
    printf("%s %s: greedy %d tokens %s\n", argv[1], argv[2], got, same ? "the same" : "DIFFER");
    failed |= !same;
    free(a);
    free(b);
    pf_free(m);
    llama_free(ctx);
    llama_model_free(lm);
    unlink(path);
    return failed;
}
