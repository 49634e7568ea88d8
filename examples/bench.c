/* bench: how fast parallelformers runs random-weight models of real shapes, next to another
   engine (Hugging Face transformers + torch) run on the same machine in the same run.

   build/bench [--device cpu|cuda] [--gpus N] [--dtype f32|f16|bf16|q8|q4]
               [--models gpt2,gpt2-xl,llama-1b,llama-8b,bert-base,qwen3-0.6b,olmoe] [--quick | --full] [--prompt N]
               [--new N] [--runs N] [--rounds N] [--batch16 | --no-batch16] [--default-cache]
               [--kv-cache f32|f16|bf16] [--bf16-products] [--dir DIR] [--seed N]
               [--reference SCRIPT | --no-reference] [--ref-attention sdpa,eager]
               [--llama-cpp DIR | --no-llama-cpp] [--perplexity MODEL [--text FILE]] [--gguf FILE,...]

     --device     cpu or cuda (default: cuda when this build has it and a GPU is present)
     --gpus N     the largest rank count: every model runs on 1 rank and on N ranks (default 2).
                  CUDA: rank i uses GPU i modulo the GPUs visible, so N = 2 on one GPU is two
                  ranks sharing it.
     --dtype      how weights are stored on the device (default f32 on the CPU, f16 on CUDA; q8, q4: CPU only)
     --bf16-products  with --dtype bf16: round each product's input to bf16 (pf_parallel_options.bf16_products;
                  AMX-BF16 on the CPU where present); the reference then runs torch in bf16 too, and
                  the tables call the format bf16p
     --models     which shapes (default: gpt2, qwen3-0.6b and bert-base with --quick, all but
                  llama-8b and olmoe with --full); olmoe, a mixture of experts, only when named;
                  bert-base is an encoder, measured in a table of its own (below)
     --quick      gpt2, qwen3-0.6b and bert-base, prompt 128, 32 new tokens, 5 runs (bert-base: 3), no batch 16:
                  the CPU default
     --full       every model, prompt 512, 128 new tokens, 5 runs, batch 16: the default on CUDA
     --prompt N, --new N, --runs N   override the prompt length, decode steps and timed runs
     --rounds N   measure each decoder N times over, the engines taking turns (ours, llama.cpp,
                  transformers, then again), and keep each engine's best prefill and decode
                  (default 1): on a shared machine whose speed swings for minutes at a time, one
                  engine's figures may otherwise come from a slow spell and another's from a fast one
     --batch16    also decode 16 sequences at once (pf_generate_batch); --no-batch16 skips it
     --default-cache  leave max_sequence_length 0, so the KV cache holds the model's maximum
                  positions as with pf_parallelize's defaults (else prompt + new tokens)
     --kv-cache f32|f16|bf16  how the ranks cache keys and values (pf_parallel_options.kv_cache_dtype;
                  default: fp32 on CPU ranks, the weights' dtype on CUDA). llama.cpp's default is f16
     --dir DIR    where the generated checkpoints live (default $TMPDIR/parallelformers-bench);
                  a checkpoint is reused when its directory exists with the expected file size
     --seed N     the weights' and prompts' seed (default 1234); part of the directory name
     --reference SCRIPT   the comparison script (default bench/reference.py); --no-reference
     --ref-attention LIST the encoder reference's attn_implementation values, e.g. sdpa,eager
                          (default sdpa, what transformers picks for BertModel)
     --llama-cpp DIR      on the CPU, also llama.cpp's llama-bench on the same checkpoint, as a GGUF in
                          the bench's dtype, same thread counts (bench/llamacpp_reference.py; DIR is a
                          llama.cpp tree built by `make llama-cpp`: the default build/llama.cpp, used
                          when its llama-bench exists); --no-llama-cpp skips it
     --perplexity MODEL   also the perplexity of a fixed text (--text, default bench/perplexity.txt)
                          under a real pretrained MODEL (a directory or a .gguf file with its
                          tokenizer), stored in the bench's dtype and in f32, on 1 rank: what the
                          weight format costs in accuracy (random-weight models cannot show it).
                          `make bench` passes SmolLM2-135M-Instruct when make test-smollm2 fetched it
     --gguf FILE,...      GGUF files as they are (alone unless --models is given too): each on 1 and N
                          ranks in the file's blocks against fp32 activations (the default) and against
                          int8 ones (q8: llama.cpp's arithmetic), beside llama.cpp's llama-bench on the same
                          file; a .gguf --perplexity MODEL also reports the q8 perplexity

   What it measures, per model and rank count:
     load s          pf_load + pf_parallelize, once, the file read through once beforehand (page cache)
     prefill tok/s   prompt tokens / the time to the first new token (pf_generate, greedy)
     decode tok/s    (new - 1) / the time from the first to the last new token, timed in the
                     stream callback; batch 16: 16 times that, with 16 prompts in one batch
     MiB/rank        the largest pf_memory_allocated over the ranks (weights, KV cache, scratch)
     prefill GFLOP/s the prefill's matrix FLOPs / its time (CUDA: also as a share of a cuBLAS GEMM;
                     CPU: of the FMA peak of as many threads as ranks, in the vectors the
                     library's kernels use here: pf_cpu_vector_bits)
     floor %         the batch-1 decode time per token that reading the weights once would take
                     at the measured copy bandwidth, as a fraction of the measured time: the
                     busiest rank's weight bytes read per token (its share of every layer and of
                     the LM head; of a mixture of experts, the chosen experts that the busiest
                     rank holds on average under uniform routing) / per-rank bandwidth, times
                     decode tok/s. The CPU bandwidth
                     is memcpy's (bytes read + written) with as many threads copying at once as
                     there are ranks, divided by the ranks (in brackets: a read-only pass); the
                     CUDA one is cudaMemcpy device to device on GPU 0, divided by the ranks
                     sharing a GPU. CPU, last: the same read-only floor with the keys and values
                     a step reads added (the rank's cache over the prompt and half the new
                     tokens, the mean decode step's), since a step must read them as well.
     tokens = 1 rank whether the greedy tokens on N ranks equal those on 1 rank
   The encoder (bert-base), per rank count:
     sentences/s     32 / the time of one pf_encode of 32 sentences of 128 tokens (sentence pairs:
                     segment ids 0 then 1), parallelized with max_batch 32, max_sequence_length 128
     GFLOP/s         encoder_flops / that time, as a share of the CPU's fp32 FMA peak measured at
                     start-up with one thread per rank (CUDA: of the cuBLAS GEMM)
     hidden = 1 rank whether last_hidden_state on N ranks equals the 1-rank one (else the max diff)
     ref             transformers' AutoModel (BertModel) on the same batch, per attention
                     implementation; our 1-rank last_hidden_state is compared with its first one's
   Every timing: a warm-up run first, then the median of --runs runs, CLOCK_MONOTONIC (with
   --rounds, the best of the rounds' medians, each engine's own). Above the
   tables: the load average at the start and the end, and the cores other processes used during
   the run, to judge a run on a shared machine by.

   The checkpoints are written here, in C: config.json and one model.safetensors (8-byte
   little-endian header length, a JSON header of dtype/shape/data_offsets, the data). Weight
   matrices and embeddings are N(0, 0.02) from a seeded generator; norm weights are 1 and biases
   0, as transformers initialises them. They are stored as F32 when the CPU runs in fp32 (the CPU
   backend computes in fp32) and as F16 otherwise. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>
/* x86-64 with GCC or clang: the FMA peak and the read pass in the kernels' vectors */
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#include <immintrin.h>
#define X86_VECTORS 1
#endif

#ifdef PF_CUDA
#include <cublas_v2.h>
#include <cuda_runtime.h>
#endif

#include "../parallelformers.h"

#define MAX_RUNS 64
#define MAX_ROUNDS 16
#define PATH_CAP 1024 /* the checkpoint directory's path, at most */
#define BATCH16 16
#define ENCODER_BATCH 32   /* sentences per pf_encode */
#define ENCODER_TOKENS 128 /* tokens per sentence */

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    if (n <= 0) return -1;
    qsort(v, (size_t)n, sizeof *v, compare_doubles);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* =============================================================================================== */
/* model shapes and their tensors                                                                  */
/* =============================================================================================== */

typedef enum { FAMILY_GPT2, FAMILY_LLAMA, FAMILY_BERT, FAMILY_QWEN3, FAMILY_OLMOE } model_family;

typedef struct shape {
    const char *name;
    model_family family;
    int hidden, layers, heads, kv_heads, intermediate, vocab, positions, tied;
    int head_dim; /* 0: hidden / heads */
    int experts, active_experts; /* mixtures of experts: experts a layer, chosen a token (intermediate: an expert's) */
} shape;

static const shape shapes[] = {
    {"gpt2", FAMILY_GPT2, 768, 12, 12, 12, 3072, 50257, 1024, 1, 0, 0, 0},
    {"gpt2-xl", FAMILY_GPT2, 1600, 48, 25, 25, 6400, 50257, 1024, 1, 0, 0, 0},
    /* Llama 3.2 1B's body (2048 wide, 16 layers, 32 heads, 8 key/value heads, MLP 8192, tied
       embeddings) with LLaMA 2's 32000-token vocabulary: 1.04 B parameters. */
    {"llama-1b", FAMILY_LLAMA, 2048, 16, 32, 8, 8192, 32000, 2048, 1, 0, 0, 0},
    /* Llama 3.1 8B's shape (4096 wide, 32 layers, 32 heads, 8 key/value heads, MLP 14336, a
       128256-token vocabulary, untied, 131072 positions): 8.0 B parameters, 16 GB in F16. Only
       when asked for (--models llama-8b): with --default-cache it checks that a 7-8B model fits
       one GPU with pf_parallelize's defaults. */
    {"llama-8b", FAMILY_LLAMA, 4096, 32, 32, 8, 14336, 128256, 131072, 0, 0, 0, 0},
    /* BERT-base (bert-base-uncased's shape) as transformers' BertModel saves it: an encoder,
       run through pf_encode rather than pf_generate. */
    {"bert-base", FAMILY_BERT, 768, 12, 12, 12, 3072, 30522, 512, 0, 0, 0, 0},
    /* Qwen3-0.6B's shape (1024 wide, 28 layers, 16 heads of 128 (a q of 2048, wider than the
       model), 8 key/value heads, MLP 3072, 151936 tokens, tied, q and k RMSNormed per head): a
       family after LLaMA, 0.6 B parameters (0.44 B without the embedding). */
    {"qwen3-0.6b", FAMILY_QWEN3, 1024, 28, 16, 8, 3072, 151936, 40960, 1, 128, 0, 0},
    /* OLMoE-1B-7B's layer (2048 wide, 16 heads, q and k RMSNormed over their full width, 64
       experts of MLP 1024 of which 8 run a token, no renormalisation of their weights, 50304
       tokens, untied), 4 of its 16 layers so that it fits this bench's machines: 1.9 B
       parameters, 0.37 B of them active a token. A mixture of experts: decode reads only the
       chosen experts. */
    {"olmoe", FAMILY_OLMOE, 2048, 4, 16, 16, 1024, 50304, 4096, 0, 0, 64, 8},
};
#define NUM_SHAPES (sizeof shapes / sizeof shapes[0])
#define BERT_TYPE_VOCAB 2 /* segment ids 0 and 1: sentence A and sentence B */

static int is_encoder(const shape *s) { return s->family == FAMILY_BERT; }

static size_t head_dim(const shape *s) { return s->head_dim ? (size_t)s->head_dim : (size_t)(s->hidden / s->heads); }

typedef enum { INIT_NORMAL, INIT_ONES, INIT_ZEROS } init_kind;

typedef struct tensor {
    char name[96];
    int ndim;
    size_t dims[2];
    init_kind init;
} tensor;

static size_t tensor_numel(const tensor *t) { return t->ndim == 1 ? t->dims[0] : t->dims[0] * t->dims[1]; }

/* Appends one tensor when out is not NULL; counts it either way. */
static void add_tensor(tensor *out, size_t *n, init_kind init, size_t d0, size_t d1, const char *fmt, int layer) {
    if (out) {
        tensor *t = &out[*n];
        snprintf(t->name, sizeof t->name, fmt, layer);
        t->ndim = d1 ? 2 : 1;
        t->dims[0] = d0;
        t->dims[1] = d1;
        t->init = init;
    }
    (*n)++;
}

/* The tensors of the checkpoint as transformers' save_pretrained names them (GPT-2's Conv1D
   weights are [in, out], nn.Linear's [out, in]); out may be NULL to count them. */
static size_t shape_tensors(const shape *s, tensor *out) {
    size_t n = 0, d = (size_t)s->hidden, I = (size_t)s->intermediate, V = (size_t)s->vocab;
    size_t hd = head_dim(s), q = (size_t)s->heads * hd, kv = (size_t)s->kv_heads * hd;
    if (s->family == FAMILY_GPT2) {
        add_tensor(out, &n, INIT_NORMAL, V, d, "transformer.wte.weight", 0);
        add_tensor(out, &n, INIT_NORMAL, (size_t)s->positions, d, "transformer.wpe.weight", 0);
        for (int l = 0; l < s->layers; l++) {
            add_tensor(out, &n, INIT_ONES, d, 0, "transformer.h.%d.ln_1.weight", l);
            add_tensor(out, &n, INIT_ZEROS, d, 0, "transformer.h.%d.ln_1.bias", l);
            add_tensor(out, &n, INIT_NORMAL, d, 3 * d, "transformer.h.%d.attn.c_attn.weight", l);
            add_tensor(out, &n, INIT_ZEROS, 3 * d, 0, "transformer.h.%d.attn.c_attn.bias", l);
            add_tensor(out, &n, INIT_NORMAL, d, d, "transformer.h.%d.attn.c_proj.weight", l);
            add_tensor(out, &n, INIT_ZEROS, d, 0, "transformer.h.%d.attn.c_proj.bias", l);
            add_tensor(out, &n, INIT_ONES, d, 0, "transformer.h.%d.ln_2.weight", l);
            add_tensor(out, &n, INIT_ZEROS, d, 0, "transformer.h.%d.ln_2.bias", l);
            add_tensor(out, &n, INIT_NORMAL, d, I, "transformer.h.%d.mlp.c_fc.weight", l);
            add_tensor(out, &n, INIT_ZEROS, I, 0, "transformer.h.%d.mlp.c_fc.bias", l);
            add_tensor(out, &n, INIT_NORMAL, I, d, "transformer.h.%d.mlp.c_proj.weight", l);
            add_tensor(out, &n, INIT_ZEROS, d, 0, "transformer.h.%d.mlp.c_proj.bias", l);
        }
        add_tensor(out, &n, INIT_ONES, d, 0, "transformer.ln_f.weight", 0);
        add_tensor(out, &n, INIT_ZEROS, d, 0, "transformer.ln_f.bias", 0);
    } else if (s->family == FAMILY_BERT) {
        add_tensor(out, &n, INIT_NORMAL, V, d, "embeddings.word_embeddings.weight", 0);
        add_tensor(out, &n, INIT_NORMAL, (size_t)s->positions, d, "embeddings.position_embeddings.weight", 0);
        add_tensor(out, &n, INIT_NORMAL, BERT_TYPE_VOCAB, d, "embeddings.token_type_embeddings.weight", 0);
        add_tensor(out, &n, INIT_ONES, d, 0, "embeddings.LayerNorm.weight", 0);
        add_tensor(out, &n, INIT_ZEROS, d, 0, "embeddings.LayerNorm.bias", 0);
        for (int l = 0; l < s->layers; l++) {
            add_tensor(out, &n, INIT_NORMAL, d, d, "encoder.layer.%d.attention.self.query.weight", l);
            add_tensor(out, &n, INIT_ZEROS, d, 0, "encoder.layer.%d.attention.self.query.bias", l);
            add_tensor(out, &n, INIT_NORMAL, d, d, "encoder.layer.%d.attention.self.key.weight", l);
            add_tensor(out, &n, INIT_ZEROS, d, 0, "encoder.layer.%d.attention.self.key.bias", l);
            add_tensor(out, &n, INIT_NORMAL, d, d, "encoder.layer.%d.attention.self.value.weight", l);
            add_tensor(out, &n, INIT_ZEROS, d, 0, "encoder.layer.%d.attention.self.value.bias", l);
            add_tensor(out, &n, INIT_NORMAL, d, d, "encoder.layer.%d.attention.output.dense.weight", l);
            add_tensor(out, &n, INIT_ZEROS, d, 0, "encoder.layer.%d.attention.output.dense.bias", l);
            add_tensor(out, &n, INIT_ONES, d, 0, "encoder.layer.%d.attention.output.LayerNorm.weight", l);
            add_tensor(out, &n, INIT_ZEROS, d, 0, "encoder.layer.%d.attention.output.LayerNorm.bias", l);
            add_tensor(out, &n, INIT_NORMAL, I, d, "encoder.layer.%d.intermediate.dense.weight", l);
            add_tensor(out, &n, INIT_ZEROS, I, 0, "encoder.layer.%d.intermediate.dense.bias", l);
            add_tensor(out, &n, INIT_NORMAL, d, I, "encoder.layer.%d.output.dense.weight", l);
            add_tensor(out, &n, INIT_ZEROS, d, 0, "encoder.layer.%d.output.dense.bias", l);
            add_tensor(out, &n, INIT_ONES, d, 0, "encoder.layer.%d.output.LayerNorm.weight", l);
            add_tensor(out, &n, INIT_ZEROS, d, 0, "encoder.layer.%d.output.LayerNorm.bias", l);
        }
        add_tensor(out, &n, INIT_NORMAL, d, d, "pooler.dense.weight", 0);
        add_tensor(out, &n, INIT_ZEROS, d, 0, "pooler.dense.bias", 0);
    } else {
        add_tensor(out, &n, INIT_NORMAL, V, d, "model.embed_tokens.weight", 0);
        for (int l = 0; l < s->layers; l++) {
            add_tensor(out, &n, INIT_ONES, d, 0, "model.layers.%d.input_layernorm.weight", l);
            add_tensor(out, &n, INIT_NORMAL, q, d, "model.layers.%d.self_attn.q_proj.weight", l);
            add_tensor(out, &n, INIT_NORMAL, kv, d, "model.layers.%d.self_attn.k_proj.weight", l);
            add_tensor(out, &n, INIT_NORMAL, kv, d, "model.layers.%d.self_attn.v_proj.weight", l);
            add_tensor(out, &n, INIT_NORMAL, d, q, "model.layers.%d.self_attn.o_proj.weight", l);
            if (s->family == FAMILY_QWEN3) {
                add_tensor(out, &n, INIT_ONES, hd, 0, "model.layers.%d.self_attn.q_norm.weight", l);
                add_tensor(out, &n, INIT_ONES, hd, 0, "model.layers.%d.self_attn.k_norm.weight", l);
            }
            if (s->family == FAMILY_OLMOE) {
                add_tensor(out, &n, INIT_ONES, q, 0, "model.layers.%d.self_attn.q_norm.weight", l);
                add_tensor(out, &n, INIT_ONES, kv, 0, "model.layers.%d.self_attn.k_norm.weight", l);
            }
            add_tensor(out, &n, INIT_ONES, d, 0, "model.layers.%d.post_attention_layernorm.weight", l);
            if (s->experts) {
                add_tensor(out, &n, INIT_NORMAL, (size_t)s->experts, d, "model.layers.%d.mlp.gate.weight", l);
                for (int e = 0; e < s->experts; e++) {
                    char name[3][80];
                    snprintf(name[0], sizeof name[0], "model.layers.%%d.mlp.experts.%d.gate_proj.weight", e);
                    snprintf(name[1], sizeof name[1], "model.layers.%%d.mlp.experts.%d.up_proj.weight", e);
                    snprintf(name[2], sizeof name[2], "model.layers.%%d.mlp.experts.%d.down_proj.weight", e);
                    add_tensor(out, &n, INIT_NORMAL, I, d, name[0], l);
                    add_tensor(out, &n, INIT_NORMAL, I, d, name[1], l);
                    add_tensor(out, &n, INIT_NORMAL, d, I, name[2], l);
                }
                continue;
            }
            add_tensor(out, &n, INIT_NORMAL, I, d, "model.layers.%d.mlp.gate_proj.weight", l);
            add_tensor(out, &n, INIT_NORMAL, I, d, "model.layers.%d.mlp.up_proj.weight", l);
            add_tensor(out, &n, INIT_NORMAL, d, I, "model.layers.%d.mlp.down_proj.weight", l);
        }
        add_tensor(out, &n, INIT_ONES, d, 0, "model.norm.weight", 0);
        if (!s->tied) add_tensor(out, &n, INIT_NORMAL, V, d, "lm_head.weight", 0);
    }
    return n;
}

static size_t shape_parameters(const shape *s) {
    size_t n = shape_tensors(s, NULL), total = 0;
    tensor *t = (tensor *)malloc(n * sizeof *t);
    if (!t) return 0;
    shape_tensors(s, t);
    for (size_t i = 0; i < n; i++) total += tensor_numel(&t[i]);
    free(t);
    return total;
}

/* A rank's share of the heads and MLP columns: contiguous and as even as possible, key/value
   heads following the query heads (the library's split, which the floor must match). */
static void rank_share(const shape *s, int r, int n, size_t *heads, size_t *kv_heads, size_t *mlp) {
    int group = s->heads / s->kv_heads;
    int h0 = (int)((long long)r * s->heads / n), h1 = (int)((long long)(r + 1) * s->heads / n);
    *heads = (size_t)(h1 - h0);
    *kv_heads = h1 > h0 ? (size_t)((h1 - 1) / group - h0 / group + 1) : 0;
    *mlp = (size_t)((long long)(r + 1) * s->intermediate / n - (long long)r * s->intermediate / n);
}

/* Elements of weights rank r reads to decode one token: its slice of every layer, the
   replicated norms and biases, the final norm, and its rows of the LM head (split by vocabulary
   like the token embedding). The token and position embeddings are read one row at a time and
   are left out. */
static size_t rank_decode_elements(const shape *s, int r, int n) {
    size_t d = (size_t)s->hidden, hd = head_dim(s), V = (size_t)s->vocab;
    size_t hr, kvr, mr, layer;
    rank_share(s, r, n, &hr, &kvr, &mr);
    if (s->family == FAMILY_GPT2)
        layer = 2 * d + (d + 1) * 3 * hr * hd + hr * hd * d + d + 2 * d + (d + 1) * mr + mr * d + d;
    else if (s->experts) /* attention's share, the q and k norms, and the whole router; the experts: below */
        layer = d + d * hr * hd + 2 * d * kvr * hd + hr * hd * d + d + (size_t)s->heads * hd + (size_t)s->kv_heads * hd +
                (size_t)s->experts * d;
    else
        layer = d + d * hr * hd + 2 * d * kvr * hd + hr * hd * d + d + 2 * d * mr + mr * d +
                (s->family == FAMILY_QWEN3 ? 2 * hd : 0); /* the q and k norms' gains */
    size_t total = (size_t)s->layers * layer;
    size_t vocab_rows = (size_t)((long long)(r + 1) * (long long)V / n - (long long)r * (long long)V / n);
    total += (s->family == FAMILY_GPT2 ? 2 * d : d) + vocab_rows * d;
    return total;
}

/* Keys and values (elements) the busiest rank reads at a decode step after `positions` tokens:
   its key/value heads' slice of every layer's cache. */
static size_t decode_cache_elements_per_rank(const shape *s, int n, size_t positions) {
    size_t most = 0, hd = head_dim(s);
    for (int r = 0; r < n; r++) {
        size_t heads, kv_heads, mlp;
        rank_share(s, r, n, &heads, &kv_heads, &mlp);
        if (kv_heads > most) most = kv_heads;
    }
    return (size_t)s->layers * 2 * most * hd * positions;
}

/* A mixture of experts' decode waits at each layer for the rank that holds the most of the
   token's chosen experts (whole experts, contiguous: rank r holds r E / n up to (r + 1) E / n).
   With routing uniform over the experts, the expected count on that rank, by sampling 20000
   seeded choices of active_experts out of experts. */
static uint64_t next_random(uint64_t *state);

static double busiest_rank_experts(const shape *s, int n) {
    enum { SAMPLES = 20000 };
    uint64_t state = 42;
    double sum = 0;
    int owner[1024], held[64], chosen[1024];
    if (s->experts > 1024 || n > 64) return s->active_experts;
    for (int e = 0; e < s->experts; e++)
        for (int r = 0; r < n; r++)
            if (e >= (int)((long long)r * s->experts / n) && e < (int)((long long)(r + 1) * s->experts / n)) owner[e] = r;
    for (int i = 0; i < SAMPLES; i++) {
        memset(held, 0, sizeof held);
        memset(chosen, 0, sizeof chosen);
        for (int k = 0; k < s->active_experts;) {
            int e = (int)(next_random(&state) % (uint64_t)s->experts);
            if (chosen[e]) continue;
            chosen[e] = 1, held[owner[e]]++, k++;
        }
        int most = 0;
        for (int r = 0; r < n; r++) most = held[r] > most ? held[r] : most;
        sum += most;
    }
    return sum / SAMPLES;
}

static size_t decode_elements_per_rank(const shape *s, int n) {
    size_t most = 0;
    for (int r = 0; r < n; r++) {
        size_t e = rank_decode_elements(s, r, n);
        if (e > most) most = e;
    }
    if (s->experts) /* each chosen expert's gate, up and down */
        most += (size_t)(busiest_rank_experts(s, n) * 3.0 * s->hidden * s->intermediate * s->layers);
    return most;
}

/* Matrix FLOPs of a prefill of T tokens on the whole model: the layers' projections, causal
   attention (q k^T and p v over T^2 / 2 pairs), and the LM head on the last position. */
static double prefill_flops(const shape *s, int T) {
    double d = s->hidden, I = s->intermediate, hd = (double)head_dim(s), q = s->heads * hd, kv = s->kv_heads * hd;
    double mlp = s->experts ? s->active_experts * 3 * d * I + s->experts * d : 3 * d * I; /* the chosen experts and the router */
    double per_token = s->family == FAMILY_GPT2 ? d * 3 * d + d * d + 2 * d * I : d * (q + 2 * kv) + q * d + mlp;
    return 2.0 * T * s->layers * per_token + 2.0 * (double)T * T * q * s->layers + 2.0 * d * s->vocab;
}

/* Matrix FLOPs of one encoder pass over `batch` sequences of T tokens: every weight matrix of
   the layers once per token (a multiply and an add per weight), and bidirectional attention
   (q k^T and p v over all T^2 pairs: 4 T^2 hidden per layer and sequence). The embeddings, norms,
   biases and the pooler's one row per sequence are left out. */
static double encoder_flops(const shape *s, int batch, int T) {
    double d = s->hidden, I = s->intermediate;
    double layer_weights = 4 * d * d + 2 * d * I;
    return 2.0 * layer_weights * s->layers * batch * T + 4.0 * (double)T * T * d * s->layers * batch;
}

/* =============================================================================================== */
/* writing a random checkpoint                                                                     */
/* =============================================================================================== */

/* splitmix64: one 64-bit state, good enough for weights nobody reads for meaning. */
static uint64_t next_random(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t hash_name(const char *s, uint64_t seed) {
    uint64_t h = 1469598103934665603ull ^ seed;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* n samples of N(0, sd) by Box-Muller, two per pair of uniforms. */
static void fill_normal(float *out, size_t n, float sd, uint64_t *state) {
    const float two_pi = 6.2831853071795864f;
    for (size_t i = 0; i < n; i += 2) {
        uint64_t a = next_random(state), b = next_random(state);
        float u1 = ((float)(a >> 40) + 1.0f) * (1.0f / 16777216.0f); /* (0, 1] */
        float u2 = (float)(b >> 40) * (1.0f / 16777216.0f);          /* [0, 1) */
        float radius = sd * sqrtf(-2.0f * logf(u1));
        out[i] = radius * cosf(two_pi * u2);
        if (i + 1 < n) out[i + 1] = radius * sinf(two_pi * u2);
    }
}

/* fp32 to IEEE half, rounding to nearest even; subnormals kept, overflow to infinity. */
static uint16_t half_from_float(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint32_t sign = (x >> 16) & 0x8000u, exponent = (x >> 23) & 0xffu, mantissa = x & 0x7fffffu;
    if (exponent == 0xffu) return (uint16_t)(sign | 0x7c00u | (mantissa ? 0x200u : 0u));
    int e = (int)exponent - 127 + 15; /* the half's biased exponent */
    if (e >= 31) return (uint16_t)(sign | 0x7c00u);
    uint32_t bits, rest, halfway;
    if (e <= 0) { /* subnormal half: count units of 2^-24 */
        if (e < -10) return (uint16_t)sign;
        uint32_t full = mantissa | 0x800000u;
        int shift = 14 - e;
        bits = full >> shift;
        rest = full & ((1u << shift) - 1u);
        halfway = 1u << (shift - 1);
    } else {
        bits = ((uint32_t)e << 10) | (mantissa >> 13);
        rest = mantissa & 0x1fffu;
        halfway = 0x1000u;
    }
    if (rest > halfway || (rest == halfway && (bits & 1u))) bits++; /* a carry into the exponent is right */
    return (uint16_t)(sign | bits);
}

/* The safetensors header: {"__metadata__":..., "name":{"dtype","shape","data_offsets"}, ...},
   padded with spaces to a multiple of 8 bytes. Returns a malloc'd string, its length in *len,
   and the data size in *data_bytes. */
static char *safetensors_header(const tensor *t, size_t n, const char *dtype, size_t esize, size_t *len,
                                size_t *data_bytes) {
    size_t cap = 256 + n * 200, used = 0, offset = 0;
    char *h = (char *)malloc(cap);
    if (!h) return NULL;
    used += (size_t)snprintf(h + used, cap - used, "{\"__metadata__\":{\"format\":\"pt\"}");
    for (size_t i = 0; i < n; i++) {
        size_t bytes = tensor_numel(&t[i]) * esize;
        if (t[i].ndim == 1)
            used += (size_t)snprintf(h + used, cap - used, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[%zu],\"data_offsets\":[%zu,%zu]}",
                                     t[i].name, dtype, t[i].dims[0], offset, offset + bytes);
        else
            used += (size_t)snprintf(h + used, cap - used,
                                     ",\"%s\":{\"dtype\":\"%s\",\"shape\":[%zu,%zu],\"data_offsets\":[%zu,%zu]}", t[i].name,
                                     dtype, t[i].dims[0], t[i].dims[1], offset, offset + bytes);
        offset += bytes;
    }
    used += (size_t)snprintf(h + used, cap - used, "}");
    while (used % 8) h[used++] = ' ';
    h[used] = 0;
    *len = used;
    *data_bytes = offset;
    return h;
}

static int write_config(const shape *s, const char *dir, const char *torch_dtype) {
    char path[PATH_CAP + 32];
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    if (s->family == FAMILY_GPT2)
        fprintf(f,
                "{\n  \"architectures\": [\"GPT2LMHeadModel\"],\n  \"model_type\": \"gpt2\",\n  \"vocab_size\": %d,\n"
                "  \"n_positions\": %d,\n  \"n_ctx\": %d,\n  \"n_embd\": %d,\n  \"n_layer\": %d,\n  \"n_head\": %d,\n"
                "  \"activation_function\": \"gelu_new\",\n  \"layer_norm_epsilon\": 1e-05,\n  \"initializer_range\": 0.02,\n"
                "  \"bos_token_id\": %d,\n  \"eos_token_id\": %d,\n  \"tie_word_embeddings\": true,\n  \"torch_dtype\": \"%s\"\n}\n",
                s->vocab, s->positions, s->positions, s->hidden, s->layers, s->heads, s->vocab - 1, s->vocab - 1,
                torch_dtype);
    else if (s->family == FAMILY_BERT)
        fprintf(f,
                "{\n  \"architectures\": [\"BertModel\"],\n  \"model_type\": \"bert\",\n  \"vocab_size\": %d,\n"
                "  \"hidden_size\": %d,\n  \"num_hidden_layers\": %d,\n  \"num_attention_heads\": %d,\n"
                "  \"intermediate_size\": %d,\n  \"max_position_embeddings\": %d,\n  \"type_vocab_size\": %d,\n"
                "  \"layer_norm_eps\": 1e-12,\n  \"hidden_act\": \"gelu\",\n"
                "  \"initializer_range\": 0.02,\n  \"pad_token_id\": 0,\n  \"torch_dtype\": \"%s\"\n}\n",
                s->vocab, s->hidden, s->layers, s->heads, s->intermediate, s->positions, BERT_TYPE_VOCAB, torch_dtype);
    else if (s->family == FAMILY_QWEN3)
        fprintf(f,
                "{\n  \"architectures\": [\"Qwen3ForCausalLM\"],\n  \"model_type\": \"qwen3\",\n  \"vocab_size\": %d,\n"
                "  \"hidden_size\": %d,\n  \"intermediate_size\": %d,\n  \"num_hidden_layers\": %d,\n"
                "  \"num_attention_heads\": %d,\n  \"num_key_value_heads\": %d,\n  \"head_dim\": %d,\n"
                "  \"max_position_embeddings\": %d,\n  \"rms_norm_eps\": 1e-06,\n  \"rope_theta\": 1000000.0,\n"
                "  \"hidden_act\": \"silu\",\n  \"attention_bias\": false,\n  \"use_sliding_window\": false,\n"
                "  \"sliding_window\": null,\n  \"max_window_layers\": %d,\n  \"initializer_range\": 0.02,\n"
                "  \"bos_token_id\": 151643,\n  \"eos_token_id\": 151645,\n  \"tie_word_embeddings\": %s,\n"
                "  \"torch_dtype\": \"%s\"\n}\n",
                s->vocab, s->hidden, s->intermediate, s->layers, s->heads, s->kv_heads, (int)head_dim(s), s->positions,
                s->layers, s->tied ? "true" : "false", torch_dtype);
    else if (s->family == FAMILY_OLMOE)
        fprintf(f,
                "{\n  \"architectures\": [\"OlmoeForCausalLM\"],\n  \"model_type\": \"olmoe\",\n  \"vocab_size\": %d,\n"
                "  \"hidden_size\": %d,\n  \"intermediate_size\": %d,\n  \"num_hidden_layers\": %d,\n"
                "  \"num_attention_heads\": %d,\n  \"num_key_value_heads\": %d,\n  \"num_experts\": %d,\n"
                "  \"num_experts_per_tok\": %d,\n  \"norm_topk_prob\": false,\n  \"clip_qkv\": null,\n"
                "  \"max_position_embeddings\": %d,\n  \"rms_norm_eps\": 1e-05,\n  \"rope_theta\": 10000.0,\n"
                "  \"hidden_act\": \"silu\",\n  \"attention_bias\": false,\n  \"initializer_range\": 0.02,\n"
                "  \"pad_token_id\": 1,\n  \"eos_token_id\": 50279,\n  \"tie_word_embeddings\": %s,\n"
                "  \"torch_dtype\": \"%s\"\n}\n",
                s->vocab, s->hidden, s->intermediate, s->layers, s->heads, s->kv_heads, s->experts, s->active_experts,
                s->positions, s->tied ? "true" : "false", torch_dtype);
    else
        fprintf(f,
                "{\n  \"architectures\": [\"LlamaForCausalLM\"],\n  \"model_type\": \"llama\",\n  \"vocab_size\": %d,\n"
                "  \"hidden_size\": %d,\n  \"intermediate_size\": %d,\n  \"num_hidden_layers\": %d,\n"
                "  \"num_attention_heads\": %d,\n  \"num_key_value_heads\": %d,\n  \"head_dim\": %d,\n"
                "  \"max_position_embeddings\": %d,\n  \"rms_norm_eps\": 1e-05,\n  \"rope_theta\": 10000.0,\n"
                "  \"hidden_act\": \"silu\",\n  \"attention_bias\": false,\n  \"mlp_bias\": false,\n"
                "  \"initializer_range\": 0.02,\n  \"bos_token_id\": 1,\n  \"eos_token_id\": 2,\n"
                "  \"tie_word_embeddings\": %s,\n  \"torch_dtype\": \"%s\"\n}\n",
                s->vocab, s->hidden, s->intermediate, s->layers, s->heads, s->kv_heads, s->hidden / s->heads,
                s->positions, s->tied ? "true" : "false", torch_dtype);
    return fclose(f) ? -1 : 0;
}

static int make_dir(const char *path) { return mkdir(path, 0777) == 0 || errno == EEXIST ? 0 : -1; }

/* pwrite all of it, or -1. */
static int write_at(int fd, const void *data, size_t bytes, size_t offset) {
    const char *p = (const char *)data;
    while (bytes) {
        ssize_t n = pwrite(fd, p, bytes, (off_t)offset);
        if (n <= 0) return -1;
        p += n, offset += (size_t)n, bytes -= (size_t)n;
    }
    return 0;
}

#define CHUNK ((size_t)1 << 20) /* elements drawn from one seed */

/* One of the threads that fill the file: chunk j of the whole list goes to thread j % count,
   each chunk from its own seed (tensor name, chunk index), so the file is the same whatever
   the thread count. */
typedef struct filler {
    const tensor *tensors;
    size_t num_tensors, data_start;
    int fd, fp16, index, count, failed;
    uint64_t seed;
} filler;

static void *fill_chunks(void *arg) {
    filler *w = (filler *)arg;
    float *values = (float *)malloc(CHUNK * sizeof *values);
    uint16_t *halves = w->fp16 ? (uint16_t *)malloc(CHUNK * sizeof *halves) : NULL;
    size_t esize = w->fp16 ? 2 : 4, offset = w->data_start, job = 0;
    if (!values || (w->fp16 && !halves)) w->failed = 1;
    for (size_t i = 0; i < w->num_tensors && !w->failed; i++) {
        const tensor *t = &w->tensors[i];
        size_t total = tensor_numel(t);
        for (size_t done = 0; done < total && !w->failed; done += CHUNK, job++) {
            size_t m = total - done < CHUNK ? total - done : CHUNK;
            if (job % (size_t)w->count != (size_t)w->index) continue;
            uint64_t state = hash_name(t->name, w->seed + 0x632BE59BD9B4E019ull * (done / CHUNK));
            if (t->init == INIT_NORMAL) fill_normal(values, m, 0.02f, &state);
            else for (size_t k = 0; k < m; k++) values[k] = t->init == INIT_ONES ? 1.0f : 0.0f;
            if (w->fp16) {
                for (size_t k = 0; k < m; k++) halves[k] = half_from_float(values[k]);
                w->failed = write_at(w->fd, halves, m * 2, offset + done * esize);
            } else {
                w->failed = write_at(w->fd, values, m * 4, offset + done * esize); /* little-endian host, as the format */
            }
        }
        offset += total * esize;
    }
    free(values);
    free(halves);
    return NULL;
}

/* Makes DIR/config.json and DIR/model.safetensors for shape s unless a file of the expected size
   is there already (same directory name: same shape, dtype and seed). The data is drawn by one
   thread per core (16 at most). */
static int ensure_checkpoint(const shape *s, const char *dir, int fp16, uint64_t seed) {
    enum { MAX_FILLERS = 16 };
    size_t n = shape_tensors(s, NULL), header_len, data_bytes, esize = fp16 ? 2 : 4;
    tensor *t = (tensor *)malloc(n * sizeof *t);
    if (!t) return -1;
    shape_tensors(s, t);
    char *header = safetensors_header(t, n, fp16 ? "F16" : "F32", esize, &header_len, &data_bytes);
    char path[PATH_CAP + 32], partial[PATH_CAP + 48];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    snprintf(partial, sizeof partial, "%s.partial", path);
    struct stat st;
    int rc = -1, fd = -1;
    if (!header || make_dir(dir) || write_config(s, dir, fp16 ? "float16" : "float32")) goto done;
    if (stat(path, &st) == 0 && (size_t)st.st_size == 8 + header_len + data_bytes) {
        rc = 0;
        goto done;
    }
    fprintf(stderr, "bench: writing %s (%.2f GB, once)\n", path, (double)(8 + header_len + data_bytes) / 1e9);
    fd = open(partial, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) goto done;
    unsigned char length[8];
    for (int i = 0; i < 8; i++) length[i] = (unsigned char)((uint64_t)header_len >> (8 * i));
    int failed = write_at(fd, length, 8, 0) || write_at(fd, header, header_len, 8);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int count = cores < 1 ? 1 : cores > MAX_FILLERS ? MAX_FILLERS : (int)cores, started = 0;
    filler w[MAX_FILLERS];
    pthread_t id[MAX_FILLERS];
    for (; !failed && started < count; started++) {
        w[started].tensors = t;
        w[started].num_tensors = n;
        w[started].data_start = 8 + header_len;
        w[started].fd = fd;
        w[started].fp16 = fp16;
        w[started].index = started;
        w[started].count = count;
        w[started].failed = 0;
        w[started].seed = seed;
        if (pthread_create(&id[started], NULL, fill_chunks, &w[started])) break;
    }
    if (started < count) failed = 1; /* a chunk would be missing */
    for (int i = 0; i < started; i++) {
        pthread_join(id[i], NULL);
        failed |= w[i].failed;
    }
    if (close(fd) || failed || rename(partial, path)) {
        remove(partial);
        goto done;
    }
    rc = 0;
done:
    free(header);
    free(t);
    return rc;
}

/* Reads the file once so that load times measure the library, not the disk. */
static void warm_page_cache(const char *path) {
    FILE *f = fopen(path, "rb");
    char *buffer = (char *)malloc((size_t)8 << 20);
    while (f && buffer && fread(buffer, 1, (size_t)8 << 20, f) > 0) {}
    free(buffer);
    if (f) fclose(f);
}

/* =============================================================================================== */
/* the hardware's bandwidth (and GEMM throughput on CUDA)                                          */
/* =============================================================================================== */

typedef struct streamer {
    char *src, *dst;
    size_t bytes;
    int reps;
    uint64_t sink; /* the read loop's sum, so that it is not optimised away */
} streamer;

static void *copy_loop(void *arg) {
    streamer *c = (streamer *)arg;
    for (int i = 0; i < c->reps; i++) {
        memcpy(c->dst, c->src, c->bytes);
        c->src[i % c->bytes] ^= 1; /* a changed source each time */
    }
    return NULL;
}

/* Reads the buffer as decode reads weights: once, front to back; eight sums for parallelism. */
/* The read-only pass sums 64-bit words in four independent accumulators, in the widest vectors
   the library's kernels use here (as their loads stream the weights; scalar loads read half as
   fast on the Intel guest), so that the floor it gives is one our decode could reach. */
#ifdef X86_VECTORS
__attribute__((target("avx512f"))) static uint64_t read_sum_512(const uint64_t *p, size_t n) {
    __m512i a = _mm512_setzero_si512(), b = a, c = a, d = a;
    for (size_t i = 0; i + 32 <= n; i += 32) {
        a = _mm512_add_epi64(a, _mm512_loadu_si512(p + i));
        b = _mm512_add_epi64(b, _mm512_loadu_si512(p + i + 8));
        c = _mm512_add_epi64(c, _mm512_loadu_si512(p + i + 16));
        d = _mm512_add_epi64(d, _mm512_loadu_si512(p + i + 24));
    }
    return (uint64_t)_mm512_reduce_add_epi64(_mm512_add_epi64(_mm512_add_epi64(a, b), _mm512_add_epi64(c, d)));
}

__attribute__((target("avx2"))) static uint64_t read_sum_256(const uint64_t *p, size_t n) {
    __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
    for (size_t i = 0; i + 16 <= n; i += 16) {
        a = _mm256_add_epi64(a, _mm256_loadu_si256((const __m256i *)(p + i)));
        b = _mm256_add_epi64(b, _mm256_loadu_si256((const __m256i *)(p + i + 4)));
        c = _mm256_add_epi64(c, _mm256_loadu_si256((const __m256i *)(p + i + 8)));
        d = _mm256_add_epi64(d, _mm256_loadu_si256((const __m256i *)(p + i + 12)));
    }
    uint64_t lanes[4];
    _mm256_storeu_si256((__m256i *)lanes, _mm256_add_epi64(_mm256_add_epi64(a, b), _mm256_add_epi64(c, d)));
    return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}
#endif

static uint64_t read_sum(const uint64_t *p, size_t n) {
#ifdef X86_VECTORS
    int bits = pf_cpu_vector_bits();
    if (bits == 512) return read_sum_512(p, n);
    if (bits == 256) return read_sum_256(p, n);
#endif
    uint64_t sum[4] = {0, 0, 0, 0};
    for (size_t i = 0; i + 4 <= n; i += 4)
        for (int k = 0; k < 4; k++) sum[k] += p[i + k];
    return sum[0] + sum[1] + sum[2] + sum[3];
}

static void *read_loop(void *arg) {
    streamer *c = (streamer *)arg;
    uint64_t sink = 0;
    for (int r = 0; r < c->reps; r++) sink += read_sum((const uint64_t *)c->src, c->bytes / sizeof(uint64_t));
    c->sink = sink;
    return NULL;
}

/* Aggregate host bandwidth in bytes/s with `threads` threads streaming their own 256 MiB at
   once: memcpy (bytes read + written) or a read-only pass; the best of three tries. */
static double host_bandwidth(int threads, int read_only) {
    enum { MAX_THREADS = 64 };
    size_t bytes = (size_t)256 << 20;
    streamer c[MAX_THREADS];
    pthread_t id[MAX_THREADS];
    double best = 0;
    if (threads > MAX_THREADS) threads = MAX_THREADS;
    int ok = 1;
    for (int i = 0; i < threads; i++) {
        c[i].src = (char *)malloc(bytes);
        c[i].dst = read_only ? NULL : (char *)malloc(bytes);
        c[i].bytes = bytes;
        c[i].reps = 4;
        if (!c[i].src || (!read_only && !c[i].dst)) ok = 0;
        else { /* fault the pages in now */
            memset(c[i].src, i + 1, bytes);
            if (c[i].dst) memset(c[i].dst, 0, bytes);
        }
    }
    for (int trial = 0; ok && trial < 3; trial++) {
        double t0 = now();
        int started = 0;
        for (; started < threads; started++)
            if (pthread_create(&id[started], NULL, read_only ? read_loop : copy_loop, &c[started])) break;
        for (int i = 0; i < started; i++) pthread_join(id[i], NULL);
        double seconds = now() - t0, bw = (read_only ? 1.0 : 2.0) * (double)bytes * c[0].reps * started / seconds;
        if (started == threads && bw > best) best = bw;
    }
    for (int i = 0; i < threads; i++) {
        free(c[i].src);
        free(c[i].dst);
    }
    return best;
}

/* The CPU's fp32 multiply-add peak as the library's kernels can reach it: FMAs on the vectors
   they use on this processor (512-bit where pf_cpu_vector_bits says so, else AVX2's 256-bit), 12
   independent chains per thread so that both FMA pipes stay full through their latency. The
   yardstick for GFLOP/s on the CPU, as cuBLAS's GEMM is on CUDA. Each thread is timed by its own
   CPU time, so that another process taking a core for a moment does not lower what the cores can
   do (the threads still run at once, so cores that share an FMA unit show it). Without AVX2 and
   FMA (or on another architecture) the probe reports 0. */
#ifdef X86_VECTORS
#define FMA_PROBE 1
#define FMA_CHAINS 12
#define FMA_STEPS 20000000L

typedef struct fma_worker {
    float start;    /* the first chain's value; the others differ, so that none is merged with another */
    float sink;     /* the chains' sum, so that they are not optimised away */
    int lanes;      /* 16 (512-bit vectors) or 8 */
    double seconds; /* the thread's CPU time in the loop */
} fma_worker;

static double thread_cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* FMA_CHAINS chains of FMA_STEPS multiply-adds on one vector type (VEC, its set1, fmadd, add). */
#define FMA_CHAINS_LOOP(VEC, SET1, FMADD, ADD, w)                                                                      \
    do {                                                                                                               \
        const VEC scale = SET1(0.999999f), step = SET1(1e-6f), apart = SET1(0.01f);                                   \
        VEC a[FMA_CHAINS];                                                                                             \
        a[0] = SET1((w)->start);                                                                                       \
        for (int c = 1; c < FMA_CHAINS; c++) a[c] = ADD(a[c - 1], apart);                                              \
        double t0 = thread_cpu_seconds();                                                                              \
        for (long i = 0; i < FMA_STEPS; i++)                                                                           \
            _Pragma("GCC unroll 12") for (int c = 0; c < FMA_CHAINS; c++) a[c] = FMADD(a[c], scale, step);            \
        (w)->seconds = thread_cpu_seconds() - t0;                                                                      \
        VEC sum = a[0];                                                                                                \
        for (int c = 1; c < FMA_CHAINS; c++) sum = ADD(sum, a[c]);                                                     \
        float first;                                                                                                   \
        memcpy(&first, &sum, sizeof first);                                                                            \
        (w)->sink = first;                                                                                             \
    } while (0)

__attribute__((target("avx2,fma"))) static void fma_loop_256(fma_worker *w) {
    FMA_CHAINS_LOOP(__m256, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps, w);
}

__attribute__((target("avx512f"))) static void fma_loop_512(fma_worker *w) {
    FMA_CHAINS_LOOP(__m512, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps, w);
}

static void *fma_loop(void *arg) {
    fma_worker *w = (fma_worker *)arg;
    if (w->lanes == 16) fma_loop_512(w);
    else fma_loop_256(w);
    return NULL;
}
#endif

/* Aggregate FLOP/s of `threads` threads running the FMA loop at once (the sum of each one's
   rate over its CPU time); the best of three tries. */
static double cpu_fma_peak(int threads) {
#ifdef FMA_PROBE
    enum { MAX_THREADS = 64 };
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return 0;
    int lanes = pf_cpu_vector_bits() == 512 ? 16 : 8;
    if (threads > MAX_THREADS) threads = MAX_THREADS;
    fma_worker w[MAX_THREADS];
    pthread_t id[MAX_THREADS];
    double best = 0;
    for (int trial = 0; trial < 3; trial++) {
        int started = 0;
        for (; started < threads; started++) {
            w[started].start = 1.0f + 0.5f * (float)started;
            w[started].lanes = lanes;
            if (pthread_create(&id[started], NULL, fma_loop, &w[started])) break;
        }
        double flops = 0;
        for (int i = 0; i < started; i++) {
            pthread_join(id[i], NULL);
            flops += 2.0 * lanes * FMA_CHAINS * (double)FMA_STEPS / w[i].seconds;
        }
        if (started == threads && flops > best) best = flops;
    }
    return best;
#else
    (void)threads;
    return 0;
#endif
}

/* /proc/loadavg's line: other work on a shared machine shows here. */
static void read_load_average(char *out, size_t size) {
    snprintf(out, size, "unknown");
    FILE *f = fopen("/proc/loadavg", "r");
    if (!f) return;
    if (fgets(out, (int)size, f)) out[strcspn(out, "\n")] = 0;
    fclose(f);
}

/* CPU seconds the whole machine has spent busy since boot (/proc/stat's first line: user, nice,
   system, irq and softirq; not idle, iowait or steal), and steal time apart; -1 where unknown. */
static double machine_busy_seconds(double *steal) {
    unsigned long long user, nice, system, idle, iowait, irq, softirq, stolen = 0;
    FILE *f = fopen("/proc/stat", "r");
    int n = f ? fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &user, &nice, &system, &idle, &iowait, &irq, &softirq, &stolen) : 0;
    if (f) fclose(f);
    double tick = (double)sysconf(_SC_CLK_TCK);
    if (n < 7 || tick <= 0) return -1;
    *steal = (double)stolen / tick;
    return (double)(user + nice + system + irq + softirq) / tick;
}

/* CPU seconds of this process and of the children it waited for (the reference's python3). */
static double own_cpu_seconds(void) {
    struct rusage self, children;
    getrusage(RUSAGE_SELF, &self);
    getrusage(RUSAGE_CHILDREN, &children);
    return (double)(self.ru_utime.tv_sec + self.ru_stime.tv_sec + children.ru_utime.tv_sec + children.ru_stime.tv_sec) +
           1e-6 * (double)(self.ru_utime.tv_usec + self.ru_stime.tv_usec + children.ru_utime.tv_usec + children.ru_stime.tv_usec);
}

static void cpu_model_name(char *out, size_t size) {
    snprintf(out, size, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10)) continue;
        char *v = strchr(line, ':');
        if (!v) continue;
        v++;
        while (*v == ' ' || *v == '\t') v++;
        v[strcspn(v, "\n")] = 0;
        snprintf(out, size, "%s", v);
        break;
    }
    if (f) fclose(f);
}

#ifdef PF_CUDA
/* cudaMemcpy device to device on one GPU, bytes read + written per second; 0 on failure. */
static double cuda_copy_bandwidth(int device) {
    size_t bytes = (size_t)1 << 30;
    void *a = NULL, *b = NULL;
    cudaEvent_t start = NULL, stop = NULL;
    float ms = 0;
    double bw = 0;
    const int reps = 20;
    if (cudaSetDevice(device) != cudaSuccess || cudaMalloc(&a, bytes) != cudaSuccess || cudaMalloc(&b, bytes) != cudaSuccess ||
        cudaEventCreate(&start) != cudaSuccess || cudaEventCreate(&stop) != cudaSuccess)
        goto done;
    cudaMemset(a, 1, bytes);
    cudaMemset(b, 0, bytes);
    cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice); /* warm-up */
    cudaEventRecord(start, 0);
    for (int i = 0; i < reps; i++) cudaMemcpyAsync(i % 2 ? a : b, i % 2 ? b : a, bytes, cudaMemcpyDeviceToDevice, 0);
    cudaEventRecord(stop, 0);
    if (cudaEventSynchronize(stop) == cudaSuccess && cudaEventElapsedTime(&ms, start, stop) == cudaSuccess && ms > 0)
        bw = 2.0 * (double)bytes * reps / (ms * 1e-3);
done:
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
    cudaFree(a);
    cudaFree(b);
    cudaGetLastError();
    return bw;
}

/* cuBLAS GEMM throughput in FLOP/s on one GPU for the bench's dtype (fp32 accumulation), an
   8192-cubed product; 0 on failure. The yardstick for prefill. */
static double cuda_gemm_flops(int device, pf_dtype dtype) {
    const int n = 8192, reps = 10;
    cudaDataType_t type = dtype == PF_DTYPE_F32 ? CUDA_R_32F : dtype == PF_DTYPE_BF16 ? CUDA_R_16BF : CUDA_R_16F;
    size_t bytes = (size_t)n * n * (dtype == PF_DTYPE_F32 ? 4 : 2);
    void *a = NULL, *b = NULL, *c = NULL;
    cublasHandle_t handle = NULL;
    cudaEvent_t start = NULL, stop = NULL;
    float alpha = 1.0f, beta = 0.0f, ms = 0;
    double flops = 0;
    if (cudaSetDevice(device) != cudaSuccess || cudaMalloc(&a, bytes) != cudaSuccess || cudaMalloc(&b, bytes) != cudaSuccess ||
        cudaMalloc(&c, bytes) != cudaSuccess || cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS ||
        cudaEventCreate(&start) != cudaSuccess || cudaEventCreate(&stop) != cudaSuccess)
        goto done;
    cudaMemset(a, 0x3c, bytes); /* small nonzero values in every format */
    cudaMemset(b, 0x3c, bytes);
    for (int i = 0; i < reps + 2; i++) {
        if (i == 2) cudaEventRecord(start, 0);
        if (cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a, type, n, b, type, n, &beta, c, type, n,
                         CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS)
            goto done;
    }
    cudaEventRecord(stop, 0);
    if (cudaEventSynchronize(stop) == cudaSuccess && cudaEventElapsedTime(&ms, start, stop) == cudaSuccess && ms > 0)
        flops = 2.0 * n * (double)n * n * reps / (ms * 1e-3);
done:
    if (handle) cublasDestroy(handle);
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    cudaGetLastError();
    return flops;
}
#endif

/* =============================================================================================== */
/* measuring the library                                                                           */
/* =============================================================================================== */

typedef struct config {
    pf_device device;
    pf_dtype dtype;
    int max_ranks, prompt_len, new_tokens, runs, batch16, num_gpus;
    int rounds; /* decoders: each engine measured this many times, in turn; the best kept */
    int default_cache; /* max_sequence_length 0: the KV cache for the model's maximum positions */
    pf_dtype kv_cache; /* pf_parallel_options.kv_cache_dtype */
    int bf16_products; /* pf_parallel_options.bf16_products */
    int encoder_runs; /* an encoder pass of the whole batch takes seconds on a CPU: fewer runs by default */
} config;

typedef struct result {
    char error[512];
    double load_s, prefill_s, decode_tok_s, decode16_tok_s; /* < 0: not measured */
    size_t bytes_per_rank;
    int32_t *tokens; /* the batch-1 greedy continuation */
    int num_tokens, deterministic;
    double encode_s;   /* encoders: one pf_encode of the whole batch */
    float *hidden;     /* encoders: last_hidden_state [batch * tokens][hidden] of the first timed run */
    size_t num_hidden; /* floats in hidden */
} result;

/* The stream callback's clock: when row 0 received each new token. */
typedef struct stream_clock {
    double times[4096];
    int n;
} stream_clock;

static int on_token(void *user, int row, int32_t token, const char *text, size_t text_len) {
    stream_clock *c = (stream_clock *)user;
    (void)token, (void)text, (void)text_len;
    if (row == 0 && c->n < (int)(sizeof c->times / sizeof c->times[0])) c->times[c->n++] = now();
    return 0;
}

static void fail(result *res, const char *what, pf_result rc, const pf_model *m) {
    snprintf(res->error, sizeof res->error, "%s: %s%s%s", what, pf_result_string(rc), m ? ": " : "",
             m ? pf_error_message(m) : "");
}

/* The perplexity of a text under a model stored as `dtype` on one rank of `device`: exp of the mean
   negative log-likelihood of each token given those before it, from one pf_forward over the
   text's first PERPLEXITY_TOKENS tokens, or as many as the model has positions (log-softmax in
   double). 0 and a message on failure. */
#define PERPLEXITY_TOKENS 512
static double perplexity(const char *model_path, const char *text_path, pf_device device, pf_dtype dtype,
                         int bf16_products, int *tokens, char *error, size_t error_size) {
    double result = 0;
    pf_model *m = NULL;
    float *logits = NULL;
    char *text = NULL;
    int32_t ids[PERPLEXITY_TOKENS];
    size_t n = 0, text_len = 0;
    FILE *f = fopen(text_path, "rb");
    if (!f) {
        snprintf(error, error_size, "cannot open %s", text_path);
        return 0;
    }
    text = (char *)malloc(1 << 20);
    if (text) text_len = fread(text, 1, (1 << 20) - 1, f);
    fclose(f);
    pf_load_options lo = pf_load_options_init();
    pf_result rc = text ? pf_load(model_path, &lo, &m) : PF_ERROR_OUT_OF_MEMORY;
    if (rc) {
        snprintf(error, error_size, "pf_load %s: %s%s%s", model_path, pf_result_string(rc), m ? ": " : "", m ? pf_error_message(m) : "");
        goto done;
    }
    rc = pf_model_tokenizer(m) ? pf_tokenize(pf_model_tokenizer(m), text, text_len, ids, PERPLEXITY_TOKENS, &n)
                               : PF_ERROR_INVALID_ARGUMENT;
    if (rc && rc != PF_ERROR_BUFFER_TOO_SMALL) { /* a longer text: its first PERPLEXITY_TOKENS tokens */
        snprintf(error, error_size, "%s: cannot tokenize the text (%s)", model_path, pf_result_string(rc));
        goto done;
    }
    if (n > PERPLEXITY_TOKENS) n = PERPLEXITY_TOKENS;
    if (pf_get_info(m).max_positions > 0 && n > (size_t)pf_get_info(m).max_positions) n = (size_t)pf_get_info(m).max_positions;
    pf_parallel_options po = pf_parallel_options_init();
    po.device = device;
    po.dtype = dtype;
    po.bf16_products = bf16_products;
    po.max_sequence_length = (int)n;
    po.max_batch = 1;
    int vocab = pf_get_info(m).vocab_size;
    logits = (float *)malloc(n * (size_t)vocab * sizeof(float));
    rc = logits ? pf_parallelize(m, 1, &po) : PF_ERROR_OUT_OF_MEMORY;
    if (!rc) rc = pf_forward(m, ids, 1, (int)n, logits);
    if (rc) {
        snprintf(error, error_size, "%s: %s%s%s", model_path, pf_result_string(rc), m ? ": " : "", m ? pf_error_message(m) : "");
        goto done;
    }
    double nll = 0;
    for (size_t t = 0; t + 1 < n; t++) {
        const float *row = logits + t * (size_t)vocab;
        double largest = row[0], sum = 0;
        for (int v = 1; v < vocab; v++) largest = row[v] > largest ? row[v] : largest;
        for (int v = 0; v < vocab; v++) sum += exp(row[v] - largest);
        nll += largest + log(sum) - row[ids[t + 1]];
    }
    *tokens = (int)n;
    result = n > 1 ? exp(nll / (double)(n - 1)) : 0;
done:
    free(text);
    free(logits);
    pf_free(m);
    return result;
}

/* --rounds: a later round's measurement folded into the first's: the best prefill, decodes and
   load, the first round's tokens (a round whose tokens differ makes the runs non-deterministic),
   the first error; `later` is freed. */
static void keep_best_result(result *best, result *later) {
    if (later->error[0] && !best->error[0]) snprintf(best->error, sizeof best->error, "%s", later->error);
    if (!later->error[0] && !best->error[0]) {
        if (later->prefill_s < best->prefill_s) best->prefill_s = later->prefill_s;
        if (later->decode_tok_s > best->decode_tok_s) best->decode_tok_s = later->decode_tok_s;
        if (later->decode16_tok_s > best->decode16_tok_s) best->decode16_tok_s = later->decode16_tok_s;
        if (later->load_s < best->load_s) best->load_s = later->load_s;
        if (later->bytes_per_rank > best->bytes_per_rank) best->bytes_per_rank = later->bytes_per_rank;
        if (!later->deterministic || later->num_tokens != best->num_tokens ||
            memcmp(later->tokens, best->tokens, (size_t)best->num_tokens * sizeof *best->tokens))
            best->deterministic = 0;
    }
    free(later->tokens);
    free(later->hidden);
}

/* One model on `ranks` ranks: load, batch-1 generations, then (maybe) batch 16. */
static void measure(const char *dir, const config *cfg, int ranks, int32_t *const *prompts,
                    result *res) {
    memset(res, 0, sizeof *res);
    res->decode16_tok_s = -1;
    res->deterministic = 1;
    int P = cfg->prompt_len, N = cfg->new_tokens;
    int device_ids[256];
    for (int i = 0; i < ranks && i < 256; i++) device_ids[i] = cfg->num_gpus > 0 ? i % cfg->num_gpus : i;

    pf_load_options lo = pf_load_options_init();
    lo.skip_tokenizer = 1;
    pf_model *m = NULL;
    double t0 = now();
    pf_result rc = pf_load(dir, &lo, &m);
    if (rc) {
        fail(res, "pf_load", rc, m);
        pf_free(m);
        return;
    }
    pf_parallel_options po = pf_parallel_options_init();
    po.device = cfg->device;
    po.dtype = cfg->dtype;
    po.bf16_products = cfg->bf16_products;
    po.kv_cache_dtype = cfg->kv_cache;
    po.max_sequence_length = cfg->default_cache ? 0 : P + N;
    po.max_batch = 1;
    if (cfg->device == PF_DEVICE_CUDA && cfg->num_gpus > 0 && ranks <= 256) {
        po.device_ids = device_ids;
        po.num_device_ids = ranks;
    }
    rc = pf_parallelize(m, ranks, &po);
    res->load_s = now() - t0;
    if (rc) {
        fail(res, "pf_parallelize", rc, m);
        pf_free(m);
        return;
    }

    /* batch 1: a short warm-up, then the timed runs */
    stream_clock *clock = (stream_clock *)calloc(1, sizeof *clock);
    res->tokens = (int32_t *)calloc((size_t)N, sizeof *res->tokens);
    int32_t *out = (int32_t *)calloc((size_t)N, sizeof *out);
    double prefill[MAX_RUNS], decode[MAX_RUNS];
    if (!clock || !res->tokens || !out) {
        snprintf(res->error, sizeof res->error, "out of memory");
        goto done;
    }
    pf_generate_options go = pf_generate_options_init();
    go.ignore_eos = 1;
    go.stream = on_token;
    go.stream_user = clock;
    for (int run = -1; run < cfg->runs; run++) {
        int wanted = run < 0 ? (N < 8 ? N : 8) : N, got = 0;
        go.max_new_tokens = wanted;
        clock->n = 0;
        double start = now();
        rc = pf_generate(m, prompts[0], P, &go, out, N, &got);
        if (rc) {
            fail(res, "pf_generate", rc, m);
            goto done;
        }
        if (got != wanted || clock->n != wanted) {
            snprintf(res->error, sizeof res->error, "pf_generate gave %d tokens (%d streamed), not %d", got, clock->n, wanted);
            goto done;
        }
        if (run < 0) continue;
        prefill[run] = clock->times[0] - start;
        decode[run] = N > 1 ? (N - 1) / (clock->times[N - 1] - clock->times[0]) : -1;
        if (run == 0) memcpy(res->tokens, out, (size_t)N * sizeof *out);
        else if (memcmp(res->tokens, out, (size_t)N * sizeof *out)) res->deterministic = 0;
    }
    res->num_tokens = N;
    res->prefill_s = median(prefill, cfg->runs);
    res->decode_tok_s = median(decode, cfg->runs);
    for (int r = 0; r < ranks; r++) {
        size_t b = pf_memory_allocated(m, r);
        if (b > res->bytes_per_rank) res->bytes_per_rank = b;
    }

    /* batch 16: 16 prompts decoded together; the model is re-split with room for them */
    if (cfg->batch16) {
        po.max_batch = BATCH16;
        po.max_sequence_length = P + N; /* --default-cache is about batch 1: 16 full-length rows need not fit */
        rc = pf_parallelize(m, ranks, &po);
        if (rc) {
            fail(res, "pf_parallelize (batch 16)", rc, m);
            goto done;
        }
        int lengths[BATCH16];
        for (int b = 0; b < BATCH16; b++) lengths[b] = P;
        for (int run = -1; run < cfg->runs; run++) {
            pf_generation gen;
            memset(&gen, 0, sizeof gen);
            int wanted = run < 0 ? (N < 4 ? N : 4) : N;
            go.max_new_tokens = wanted;
            clock->n = 0;
            rc = pf_generate_batch(m, (const int32_t *const *)prompts, lengths, BATCH16, &go, &gen);
            pf_generation_free(&gen);
            if (rc) {
                fail(res, "pf_generate_batch", rc, m);
                goto done;
            }
            if (clock->n != wanted) {
                snprintf(res->error, sizeof res->error, "pf_generate_batch streamed %d tokens, not %d", clock->n, wanted);
                goto done;
            }
            if (run >= 0) decode[run] = N > 1 ? BATCH16 * (N - 1) / (clock->times[N - 1] - clock->times[0]) : -1;
        }
        res->decode16_tok_s = median(decode, cfg->runs);
    }
done:
    free(clock);
    free(out);
    pf_free(m);
}

/* An encoder on `ranks` ranks: load, then pf_encode of the batch (ENCODER_BATCH rows of
   ENCODER_TOKENS ids, segment ids as given), a warm-up and the timed runs. */
static void measure_encoder(const char *dir, const config *cfg, int ranks, int32_t *const *ids, int32_t *const *types,
                            result *res) {
    memset(res, 0, sizeof *res);
    res->deterministic = 1;
    res->decode_tok_s = res->decode16_tok_s = -1;
    int device_ids[256], lengths[ENCODER_BATCH];
    for (int i = 0; i < ranks && i < 256; i++) device_ids[i] = cfg->num_gpus > 0 ? i % cfg->num_gpus : i;
    for (int b = 0; b < ENCODER_BATCH; b++) lengths[b] = ENCODER_TOKENS;

    pf_load_options lo = pf_load_options_init();
    lo.skip_tokenizer = 1;
    pf_model *m = NULL;
    double t0 = now();
    pf_result rc = pf_load(dir, &lo, &m);
    if (rc) {
        fail(res, "pf_load", rc, m);
        pf_free(m);
        return;
    }
    pf_parallel_options po = pf_parallel_options_init();
    po.device = cfg->device;
    po.dtype = cfg->dtype;
    po.bf16_products = cfg->bf16_products;
    po.max_sequence_length = ENCODER_TOKENS;
    po.max_batch = ENCODER_BATCH;
    if (cfg->device == PF_DEVICE_CUDA && cfg->num_gpus > 0 && ranks <= 256) {
        po.device_ids = device_ids;
        po.num_device_ids = ranks;
    }
    rc = pf_parallelize(m, ranks, &po);
    res->load_s = now() - t0;
    if (rc) {
        fail(res, "pf_parallelize", rc, m);
        pf_free(m);
        return;
    }
    double seconds[MAX_RUNS];
    for (int run = -1; run < cfg->encoder_runs; run++) {
        pf_encoding *e = NULL;
        double start = now();
        rc = pf_encode(m, (const int32_t *const *)ids, (const int32_t *const *)types, lengths, ENCODER_BATCH, &e);
        double elapsed = now() - start;
        if (rc) {
            fail(res, "pf_encode", rc, m);
            goto done;
        }
        size_t count = (size_t)e->offsets[e->batch] * (size_t)e->hidden_size;
        if (run == 0) {
            res->hidden = (float *)malloc(count * sizeof *res->hidden);
            if (!res->hidden) {
                pf_encoding_free(e);
                snprintf(res->error, sizeof res->error, "out of memory");
                goto done;
            }
            memcpy(res->hidden, e->last_hidden_state, count * sizeof *res->hidden);
            res->num_hidden = count;
        } else if (run > 0 && (count != res->num_hidden || memcmp(res->hidden, e->last_hidden_state, count * sizeof(float)))) {
            res->deterministic = 0;
        }
        pf_encoding_free(e);
        if (run >= 0) seconds[run] = elapsed;
    }
    res->encode_s = median(seconds, cfg->encoder_runs);
    for (int r = 0; r < ranks; r++) {
        size_t b = pf_memory_allocated(m, r);
        if (b > res->bytes_per_rank) res->bytes_per_rank = b;
    }
done:
    pf_free(m);
}

/* The largest |a - b| over n floats (infinity where a value is not finite). */
static double max_abs_diff(const float *a, const float *b, size_t n) {
    double most = 0;
    for (size_t i = 0; i < n; i++) {
        double diff = fabs((double)a[i] - (double)b[i]);
        if (!(diff <= most)) most = diff == diff ? diff : INFINITY;
    }
    return most;
}

/* =============================================================================================== */
/* the reference engine                                                                            */
/* =============================================================================================== */

typedef struct reference {
    int available;
    char note[256];
    int threads[8];
    double prefill_tok_s[8], decode_tok_s[8];
    int num;
    int32_t *tokens;
    int num_tokens;
    /* encoders: one entry per (thread count, attention implementation) */
    int encoder_threads[8];
    char encoder_attention[8][16];
    double sentences_s[8];
    int num_encoder;
} reference;

static void shell_quote(char *out, size_t size, const char *s) {
    size_t n = 0;
    if (size < 3) return;
    out[n++] = '\'';
    for (; *s && n + 5 < size; s++) {
        if (*s == '\'') {
            memcpy(out + n, "'\\''", 4);
            n += 4;
        } else {
            out[n++] = *s;
        }
    }
    out[n++] = '\'';
    out[n] = 0;
}

/* The dtype the reference runs in: the bench's on CUDA; on the CPU bf16 with bf16 products (torch's
   bf16 layers round their inputs so too), else fp32, where the library computes in fp32 whatever
   it stores. */
static const char *reference_dtype(const config *cfg) {
    if (cfg->device != PF_DEVICE_CUDA) return cfg->bf16_products ? "bf16" : "f32";
    return cfg->dtype == PF_DTYPE_F32 ? "f32" : cfg->dtype == PF_DTYPE_BF16 ? "bf16" : "f16"; /* q8: CPU only */
}

/* Runs `python3 SCRIPT DIR ARGUMENTS` (one process per model, every thread count in it) and
   reads its lines: decoder timings and tokens, encoder timings, or an error. */
static void run_reference(const char *script, const char *dir, const char *arguments, int max_tokens, reference *ref) {
    char q_script[4 * PATH_CAP], q_dir[4 * PATH_CAP], command[24 * PATH_CAP], line[1 << 16];
    shell_quote(q_script, sizeof q_script, script);
    shell_quote(q_dir, sizeof q_dir, dir);
    snprintf(command, sizeof command, "python3 %s %s %s 2>&1", q_script, q_dir, arguments);
    memset(ref, 0, sizeof *ref);
    FILE *p = popen(command, "r");
    if (!p) {
        snprintf(ref->note, sizeof ref->note, "cannot start python3");
        return;
    }
    while (fgets(line, sizeof line, p)) {
        int t;
        double a, b;
        char attention[16];
        if (sscanf(line, "threads %d prefill_tok_s %lf decode_tok_s %lf", &t, &a, &b) == 3 && ref->num < 8) {
            ref->threads[ref->num] = t;
            ref->prefill_tok_s[ref->num] = a;
            ref->decode_tok_s[ref->num++] = b;
        } else if (sscanf(line, "threads %d attention %15s sentences_s %lf", &t, attention, &a) == 3 && ref->num_encoder < 8) {
            ref->encoder_threads[ref->num_encoder] = t;
            snprintf(ref->encoder_attention[ref->num_encoder], sizeof ref->encoder_attention[0], "%s", attention);
            ref->sentences_s[ref->num_encoder++] = a;
        } else if (!strncmp(line, "tokens", 6) && max_tokens > 0) {
            free(ref->tokens);
            ref->tokens = (int32_t *)malloc((size_t)max_tokens * sizeof *ref->tokens);
            ref->num_tokens = 0;
            char *s = line + 6, *end;
            for (long v; ref->tokens && ref->num_tokens < max_tokens; s = end) {
                v = strtol(s, &end, 10);
                if (end == s) break;
                ref->tokens[ref->num_tokens++] = (int32_t)v;
            }
        } else if (line[0]) {
            line[strcspn(line, "\n")] = 0;
            snprintf(ref->note, sizeof ref->note, "%.200s", line); /* the last other line: an error, if any */
        }
    }
    int status = pclose(p);
    ref->available = ref->num > 0 || ref->num_encoder > 0;
    if (!ref->available && !ref->note[0]) snprintf(ref->note, sizeof ref->note, "exit status %d", status);
}

/* --rounds: a later round's reference run folded into the first's (each thread count's best
   prefill and decode; the first round's tokens); `later` is freed. */
static void keep_best_reference(reference *best, reference *later) {
    if (!best->available) {
        free(best->tokens);
        *best = *later;
        return;
    }
    for (int i = 0; later->available && i < later->num; i++)
        for (int j = 0; j < best->num; j++)
            if (best->threads[j] == later->threads[i]) {
                if (later->prefill_tok_s[i] > best->prefill_tok_s[j]) best->prefill_tok_s[j] = later->prefill_tok_s[i];
                if (later->decode_tok_s[i] > best->decode_tok_s[j]) best->decode_tok_s[j] = later->decode_tok_s[i];
            }
    free(later->tokens);
}

/* The reference's encoder rate for a thread count (0 on CUDA matches any) and attention; < 0 when
   it was not measured. */
static double ref_sentences(const reference *ref, int threads, const char *attention) {
    for (int i = 0; ref && i < ref->num_encoder; i++)
        if ((ref->encoder_threads[i] == threads || ref->encoder_threads[i] == 0) && !strcmp(ref->encoder_attention[i], attention))
            return ref->sentences_s[i];
    return -1;
}

/* Reads n floats (float32, little-endian, as the reference writes them) from path; NULL when the
   file is missing or of another size. */
static float *read_floats(const char *path, size_t n) {
    FILE *f = fopen(path, "rb");
    float *v = f ? (float *)malloc(n * sizeof *v) : NULL;
    int ok = v && fread(v, sizeof *v, n, f) == n && fgetc(f) == EOF;
    if (f) fclose(f);
    if (!ok) free(v);
    return ok ? v : NULL;
}

static const reference *ref_for(const reference *ref, int threads, int *index) {
    for (int i = 0; ref && ref->available && i < ref->num; i++)
        if (ref->threads[i] == threads || ref->threads[i] == 0) return *index = i, ref;
    return NULL;
}


/* =============================================================================================== */
/* main                                                                                            */
/* =============================================================================================== */

static void usage(void) {
    fprintf(stderr,
            "usage: bench [--device cpu|cuda] [--gpus N] [--dtype f32|f16|bf16|q8|q4]\n"
            "             [--models gpt2,gpt2-xl,llama-1b,llama-8b,bert-base,qwen3-0.6b,olmoe] [--quick | --full] [--prompt N]\n"
            "             [--new N] [--runs N] [--rounds N] [--batch16 | --no-batch16] [--default-cache]\n"
            "             [--kv-cache f32|f16|bf16] [--bf16-products] [--dir DIR] [--seed N]\n"
            "             [--reference SCRIPT | --no-reference] [--ref-attention sdpa,eager]\n"
            "             [--llama-cpp DIR | --no-llama-cpp] [--perplexity MODEL [--text FILE]] [--gguf FILE,...]\n");
}

static int parse_int(const char *text, int lo, int hi, int *out) {
    char *end;
    long v = strtol(text, &end, 10);
    if (end == text || *end || v < lo || v > hi) return -1;
    *out = (int)v;
    return 0;
}

static const char *dtype_name(pf_dtype d) {
    return d == PF_DTYPE_F32 ? "f32" : d == PF_DTYPE_BF16 ? "bf16" : d == PF_DTYPE_Q8_0 ? "q8" : d == PF_DTYPE_Q4_0 ? "q4" : "f16";
}

/* The weight format as the tables print it: the dtype, or bf16p for bf16 weights with bf16 products. */
static const char *format_name(const config *cfg) { return cfg->bf16_products ? "bf16p" : dtype_name(cfg->dtype); }

/* Bytes a rank stores per weight of the big matrices in dtype d (Q8_0: 34 bytes per 32, Q4_0 18). */
static double weight_bytes(pf_dtype d) {
    return d == PF_DTYPE_F32 ? 4.0 : d == PF_DTYPE_Q8_0 ? 34.0 / 32.0 : d == PF_DTYPE_Q4_0 ? 18.0 / 32.0 : 2.0;
}

/* Bytes of a cached key or value on CPU ranks (fp32 unless --kv-cache says otherwise). */
static double cpu_cache_bytes(pf_dtype d) { return d == PF_DTYPE_F16 || d == PF_DTYPE_BF16 ? 2.0 : 4.0; }

static void print_rate(char *out, size_t size, double v) {
    if (v < 0) snprintf(out, size, "-");
    else if (v >= 100) snprintf(out, size, "%.0f", v);
    else snprintf(out, size, "%.1f", v);
}

/* A reference's four cells for a thread count: its prefill and decode tok/s, and ours over them
   ("-" where it did not run). Each cell holds 32 bytes. */
static void reference_cells(const reference *refs, int threads, double prefill_tok_s, double decode_tok_s, char *prefill,
                            char *decode, char *prefill_ratio, char *decode_ratio) {
    int i = 0;
    const reference *ref = ref_for(refs, threads, &i);
    snprintf(prefill, 32, "-"), snprintf(decode, 32, "-"), snprintf(prefill_ratio, 32, "-"), snprintf(decode_ratio, 32, "-");
    if (!ref) return;
    print_rate(prefill, 32, ref->prefill_tok_s[i]);
    print_rate(decode, 32, ref->decode_tok_s[i]);
    snprintf(prefill_ratio, 32, "%.2f", prefill_tok_s / ref->prefill_tok_s[i]);
    snprintf(decode_ratio, 32, "%.2f", decode_tok_s / ref->decode_tok_s[i]);
}

/* "yes", "no (from step k)" or "-" for two token lists. */
static void compare_tokens(char *out, size_t size, const int32_t *a, int na, const int32_t *b, int nb) {
    if (!a || !b || !na || !nb) {
        snprintf(out, size, "-");
        return;
    }
    int n = na < nb ? na : nb, k = 0;
    while (k < n && a[k] == b[k]) k++;
    if (k == n && na == nb) snprintf(out, size, "yes");
    else snprintf(out, size, "no (step %d)", k + 1);
}

/* Writes rows of ints, one row a line, space-separated (the reference's input). */
static int write_rows(const char *path, int32_t *const *rows, int count, int length) {
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    for (int b = 0; b < count; b++)
        for (int t = 0; t < length; t++) fprintf(f, "%d%c", (int)rows[b][t], t + 1 < length ? ' ' : '\n');
    return fclose(f) ? -1 : 0;
}

/* An encoder on every rank count, then (when script is given) transformers on the same batch.
   The batch: seeded random ids, sentence pairs (segment 0 for the first half of each row, 1 for
   the second), the same for every rank count and for the reference. Returns the reference's
   last_hidden_state (malloc'd; NULL when there is none). */
static float *run_encoder(const shape *s, const char *dir, const config *cfg, const int *rank_counts, int num_counts,
                          uint64_t seed, const char *script, const char *attention, result *results, reference *ref) {
    int32_t *ids[ENCODER_BATCH], *types[ENCODER_BATCH];
    int32_t id_data[ENCODER_BATCH][ENCODER_TOKENS], type_data[ENCODER_BATCH][ENCODER_TOKENS];
    uint64_t state = hash_name("sentences", seed);
    for (int b = 0; b < ENCODER_BATCH; b++) {
        ids[b] = id_data[b], types[b] = type_data[b];
        for (int t = 0; t < ENCODER_TOKENS; t++) {
            id_data[b][t] = (int32_t)(next_random(&state) % (uint64_t)s->vocab);
            type_data[b][t] = t >= ENCODER_TOKENS / 2;
        }
    }
    for (int k = 0; k < num_counts; k++) {
        fprintf(stderr, "bench: %s on %d rank%s...\n", s->name, rank_counts[k], rank_counts[k] > 1 ? "s" : "");
        measure_encoder(dir, cfg, rank_counts[k], ids, types, &results[k]);
        if (results[k].error[0]) fprintf(stderr, "bench: %s, %d ranks: %s\n", s->name, rank_counts[k], results[k].error);
    }
    if (!script) return NULL;
    char ids_file[PATH_CAP + 32], types_file[PATH_CAP + 32], dump_file[PATH_CAP + 32];
    char q_ids[4 * PATH_CAP + 128], q_types[4 * PATH_CAP + 128], q_dump[4 * PATH_CAP + 128], q_attention[256];
    char threads[64], arguments[16 * PATH_CAP];
    snprintf(ids_file, sizeof ids_file, "%s/sentences-%dx%d.txt", dir, ENCODER_BATCH, ENCODER_TOKENS);
    snprintf(types_file, sizeof types_file, "%s/segments-%dx%d.txt", dir, ENCODER_BATCH, ENCODER_TOKENS);
    snprintf(dump_file, sizeof dump_file, "%s/reference-hidden.f32", dir);
    remove(dump_file); /* a stale file must not pass for this run's */
    if (write_rows(ids_file, ids, ENCODER_BATCH, ENCODER_TOKENS) || write_rows(types_file, types, ENCODER_BATCH, ENCODER_TOKENS)) {
        snprintf(ref->note, sizeof ref->note, "cannot write the sentences into %.200s", dir);
        return NULL;
    }
    shell_quote(q_ids, sizeof q_ids, ids_file);
    shell_quote(q_types, sizeof q_types, types_file);
    shell_quote(q_dump, sizeof q_dump, dump_file);
    shell_quote(q_attention, sizeof q_attention, attention);
    /* on the CPU the reference gets as many threads as we have ranks */
    if (cfg->device == PF_DEVICE_CUDA) snprintf(threads, sizeof threads, "0");
    else if (num_counts > 1) snprintf(threads, sizeof threads, "%d,%d", rank_counts[0], rank_counts[1]);
    else snprintf(threads, sizeof threads, "%d", rank_counts[0]);
    snprintf(arguments, sizeof arguments,
             "--encode --ids-file %s --token-types-file %s --dump-hidden %s --attention %s --runs %d --threads %s "
             "--device %s --dtype %s",
             q_ids, q_types, q_dump, q_attention, cfg->encoder_runs, threads, cfg->device == PF_DEVICE_CUDA ? "cuda" : "cpu",
             reference_dtype(cfg));
    fprintf(stderr, "bench: %s with transformers (attention %s)...\n", s->name, attention);
    run_reference(script, dir, arguments, 0, ref);
    if (!ref->available) fprintf(stderr, "bench: reference for %s: %s\n", s->name, ref->note);
    return ref->available ? read_floats(dump_file, (size_t)ENCODER_BATCH * ENCODER_TOKENS * (size_t)s->hidden) : NULL;
}

/* The encoders' table: one row per rank count, a pair of reference columns per attention
   implementation in the comma-separated list; then how close our last_hidden_state is to
   transformers'. */
static void print_encoder_table(const shape *const *chosen, int num_chosen, result (*results)[2], const reference *refs,
                                float *const *ref_hidden, const config *cfg, const int *rank_counts, int num_counts,
                                const char *attention_list, double gemm, const double *fma_peak) {
    char attentions[8][16], list[128];
    int num_attentions = 0, cuda = cfg->device == PF_DEVICE_CUDA;
    snprintf(list, sizeof list, "%s", attention_list);
    for (char *a = strtok(list, ","); a && num_attentions < 8; a = strtok(NULL, ","))
        snprintf(attentions[num_attentions++], sizeof attentions[0], "%s", a);
    printf("\n| model | params | device | dtype | ranks | load s | sentences/s | tokens/s | GFLOP/s%s | MiB/rank | "
           "hidden = 1 rank |",
           cuda && gemm > 0 ? " (% of GEMM)" : !cuda && fma_peak[rank_counts[0]] > 0 ? " (% of FMA peak)" : "");
    for (int a = 0; a < num_attentions; a++) printf(" ref sentences/s (%s) |", attentions[a]);
    for (int a = 0; a < num_attentions; a++) printf(" ours/ref (%s) |", attentions[a]);
    printf("\n|---|---|---|---|---|---|---|---|---|---|---|");
    for (int a = 0; a < 2 * num_attentions; a++) printf("---|");
    printf("\n");
    for (int c = 0; c < num_chosen; c++) {
        const shape *s = chosen[c];
        if (!is_encoder(s)) continue;
        for (int k = 0; k < num_counts; k++) {
            const result *r = &results[c][k];
            int n = rank_counts[k];
            printf("| %s | %.2f B | %s | %s | %d |", s->name, shape_parameters(s) / 1e9, cuda ? "cuda" : "cpu",
                   format_name(cfg), n);
            if (r->error[0] && !r->hidden) {
                printf(" failed: %s | | | | | |", r->error);
                for (int a = 0; a < 2 * num_attentions; a++) printf(" |");
                printf("\n");
                continue;
            }
            double sentences_s = ENCODER_BATCH / r->encode_s;
            double gflops = encoder_flops(s, ENCODER_BATCH, ENCODER_TOKENS) / r->encode_s / 1e9;
            double peak = cuda ? gemm : fma_peak[n];
            char rate[32], flops[48], same[64];
            print_rate(rate, sizeof rate, sentences_s);
            if (peak > 0) snprintf(flops, sizeof flops, "%.1f (%.0f %%)", gflops, 100.0 * gflops * 1e9 / peak);
            else snprintf(flops, sizeof flops, "%.1f", gflops);
            const result *one = &results[c][0];
            if (!r->deterministic) snprintf(same, sizeof same, "no: runs differ");
            else if (k == 0) snprintf(same, sizeof same, "(itself)");
            else if (!one->hidden || one->num_hidden != r->num_hidden) snprintf(same, sizeof same, "-");
            else {
                double diff = max_abs_diff(one->hidden, r->hidden, r->num_hidden);
                if (diff == 0) snprintf(same, sizeof same, "yes (identical)");
                else snprintf(same, sizeof same, "max diff %.1e", diff);
            }
            printf(" %.2f | %s | %.0f | %s | %.0f | %s |", r->load_s, rate, sentences_s * ENCODER_TOKENS, flops,
                   (double)r->bytes_per_rank / (1 << 20), same);
            for (int a = 0; a < num_attentions; a++) {
                double ref = ref_sentences(&refs[c], cuda ? 0 : n, attentions[a]);
                if (ref > 0) print_rate(rate, sizeof rate, ref);
                else snprintf(rate, sizeof rate, "-");
                printf(" %s |", rate);
            }
            for (int a = 0; a < num_attentions; a++) {
                double ref = ref_sentences(&refs[c], cuda ? 0 : n, attentions[a]);
                if (ref > 0) printf(" %.2f |", sentences_s / ref);
                else printf(" - |");
            }
            printf("\n");
        }
    }
    printf("\n");
    for (int c = 0; c < num_chosen; c++) {
        const shape *s = chosen[c];
        const result *one = &results[c][0];
        if (!is_encoder(s) || !refs[c].available) continue;
        size_t count = (size_t)ENCODER_BATCH * ENCODER_TOKENS * (size_t)s->hidden;
        if (!ref_hidden[c] || !one->hidden || one->num_hidden != count) {
            printf("%s: last_hidden_state against transformers: not compared (%s)\n", s->name,
                   ref_hidden[c] ? "our 1-rank run failed" : "the reference wrote none");
            continue;
        }
        double diff = max_abs_diff(one->hidden, ref_hidden[c], count);
        char threads[32];
        if (cuda) snprintf(threads, sizeof threads, "one GPU");
        else snprintf(threads, sizeof threads, "%d thread%s", rank_counts[0], rank_counts[0] > 1 ? "s" : "");
        /* fp32 on both sides agrees to rounding; 16-bit storage is compared for the record only */
        printf("%s: last_hidden_state of 1 rank against transformers (%s, %s), all %d x %d x %d values: max abs diff %.2e%s\n",
               s->name, attentions[0], threads, ENCODER_BATCH, ENCODER_TOKENS, s->hidden, diff,
               cfg->dtype != PF_DTYPE_F32 ? " (16-bit weights: not held to 1e-3)"
               : diff < 1e-3                ? " (agrees: below 1e-3)"
                                            : " (DIFFERS: 1e-3 or more)");
    }
}

/* One round of a decoder's measurements: ours on each rank count, then llama.cpp (llama_cpp: its
   tree, NULL to skip) and transformers (script NULL to skip), each run folded into the earlier
   rounds' (keep_best_*). Returns nonzero when one of our runs failed. */
static int measure_round(const shape *s, const char *dir, const config *cfg, const int *rank_counts, int num_counts,
                         int32_t *const *prompts, const char *threads, int round, const char *llama_cpp,
                         const char *llama_script, const char *script, const char *prompt_file, result *results,
                         reference *llama_ref, reference *ref) {
    int failed = 0;
    char round_note[48] = "";
    if (cfg->rounds > 1) snprintf(round_note, sizeof round_note, " (round %d of %d)", round + 1, cfg->rounds);
    for (int k = 0; k < num_counts; k++) {
        fprintf(stderr, "bench: %s on %d rank%s%s...\n", s->name, rank_counts[k], rank_counts[k] > 1 ? "s" : "", round_note);
        result later, *r = round == 0 ? &results[k] : &later;
        measure(dir, cfg, rank_counts[k], prompts, r);
        if (r->error[0]) {
            fprintf(stderr, "bench: %s, %d ranks: %s\n", s->name, rank_counts[k], r->error);
            failed = 1;
        }
        if (round > 0) keep_best_result(&results[k], &later);
    }
    char arguments[8 * PATH_CAP];
    reference later;
    if (llama_cpp) {
        fprintf(stderr, "bench: %s with llama.cpp%s...\n", s->name, round_note);
        char q_tree[4 * PATH_CAP];
        shell_quote(q_tree, sizeof q_tree, llama_cpp);
        snprintf(arguments, sizeof arguments, "--llama-cpp %s --prompt %d --new %d --runs %d --threads %s --dtype %s",
                 q_tree, cfg->prompt_len, cfg->new_tokens, cfg->runs, threads, dtype_name(cfg->dtype));
        reference *r = round == 0 ? llama_ref : &later;
        run_reference(llama_script, dir, arguments, 0, r);
        if (!r->available) fprintf(stderr, "bench: llama.cpp for %s: %s\n", s->name, r->note);
        if (round > 0) keep_best_reference(llama_ref, &later);
    }
    if (script) {
        fprintf(stderr, "bench: %s with transformers%s...\n", s->name, round_note);
        char q_prompt[4 * PATH_CAP + 128];
        shell_quote(q_prompt, sizeof q_prompt, prompt_file);
        snprintf(arguments, sizeof arguments, "--prompt-file %s --new %d --runs %d --threads %s --device %s --dtype %s",
                 q_prompt, cfg->new_tokens, cfg->runs, threads, cfg->device == PF_DEVICE_CUDA ? "cuda" : "cpu",
                 reference_dtype(cfg));
        reference *r = round == 0 ? ref : &later;
        run_reference(script, dir, arguments, cfg->new_tokens, r);
        if (!r->available) fprintf(stderr, "bench: reference for %s: %s\n", s->name, r->note);
        if (round > 0) keep_best_reference(ref, &later);
    }
    return failed;
}

/* GGUF files as they are (--gguf): each on 1 and N ranks, in the file's blocks against fp32
   activations (PF_DTYPE_AUTO, the default) and against int8 ones (PF_DTYPE_Q8_0, llama.cpp's
   arithmetic), next to llama.cpp's llama-bench on the same file and thread counts, the engines
   taking turns round by round (each one's best kept). Prints one Markdown table; returns nonzero
   when a measurement failed. */
static int run_gguf_files(const char *files, const config *base, const int *rank_counts, int num_counts,
                          const char *threads, uint64_t seed, const char *llama_cpp, const char *llama_script) {
    static const pf_dtype dtypes[2] = {PF_DTYPE_AUTO, PF_DTYPE_Q8_0};
    char list[4 * PATH_CAP];
    int failed = 0;
    snprintf(list, sizeof list, "%s", files);
    printf("\nGGUF files as they are: ours in the file's blocks against fp32 activations (default) and against int8 "
           "activations (q8: llama.cpp's arithmetic); llama.cpp: llama-bench on the same file, threads = our ranks; prompt %d, "
           "%d new tokens, median of %d runs, best of %d rounds\n\n",
           base->prompt_len, base->new_tokens, base->runs, base->rounds);
    printf("| file | ranks | default prefill / decode tok/s | q8 prefill / decode tok/s | MiB/rank (default, q8) | "
           "llama.cpp prefill / decode tok/s | q8 / llama.cpp prefill, decode | q8 tokens = 1 rank |\n");
    printf("|---|---|---|---|---|---|---|---|\n");
    char *save = NULL;
    for (char *file = strtok_r(list, ",", &save); file; file = strtok_r(NULL, ",", &save)) {
        pf_load_options lo = pf_load_options_init();
        lo.skip_tokenizer = 1;
        pf_model *m = NULL;
        if (pf_load(file, &lo, &m)) {
            printf("| %s | | failed: %s | | | | | |\n", file, m ? pf_error_message(m) : "out of memory");
            pf_free(m);
            failed = 1;
            continue;
        }
        pf_model_info info = pf_get_info(m);
        pf_free(m);
        config cfg = *base;
        cfg.batch16 = 0;
        if (cfg.prompt_len + cfg.new_tokens > info.max_positions) {
            printf("| %s | | failed: prompt %d + %d new tokens exceed its %d positions | | | | | |\n", file, cfg.prompt_len,
                   cfg.new_tokens, info.max_positions);
            failed = 1;
            continue;
        }
        int32_t *prompt = (int32_t *)malloc((size_t)cfg.prompt_len * sizeof *prompt);
        if (!prompt) return 1;
        uint64_t state = hash_name("prompt", seed);
        for (int t = 0; t < cfg.prompt_len; t++) prompt[t] = (int32_t)(next_random(&state) % (uint64_t)info.vocab_size);
        int32_t *prompts[1] = {prompt};
        result results[2][2];
        reference llama;
        memset(results, 0, sizeof results);
        memset(&llama, 0, sizeof llama);
        warm_page_cache(file);
        for (int round = 0; round < cfg.rounds; round++) {
            for (int d = 0; d < 2; d++)
                for (int k = 0; k < num_counts; k++) {
                    fprintf(stderr, "bench: %s, %s, %d rank%s (round %d of %d)...\n", file, d ? "q8" : "default", rank_counts[k],
                            rank_counts[k] > 1 ? "s" : "", round + 1, cfg.rounds);
                    cfg.dtype = dtypes[d];
                    result later, *r = round == 0 ? &results[d][k] : &later;
                    measure(file, &cfg, rank_counts[k], prompts, r);
                    if (r->error[0]) fprintf(stderr, "bench: %s: %s\n", file, r->error), failed = 1;
                    if (round > 0) keep_best_result(&results[d][k], &later);
                }
            if (llama_cpp) {
                char q_tree[4 * PATH_CAP], arguments[8 * PATH_CAP];
                reference later, *r = round == 0 ? &llama : &later;
                shell_quote(q_tree, sizeof q_tree, llama_cpp);
                snprintf(arguments, sizeof arguments, "--llama-cpp %s --prompt %d --new %d --runs %d --threads %s", q_tree,
                         cfg.prompt_len, cfg.new_tokens, cfg.runs, threads);
                fprintf(stderr, "bench: %s with llama.cpp (round %d of %d)...\n", file, round + 1, cfg.rounds);
                run_reference(llama_script, file, arguments, 0, r);
                if (!r->available) fprintf(stderr, "bench: llama.cpp for %s: %s\n", file, r->note);
                if (round > 0) keep_best_reference(&llama, &later);
            }
        }
        for (int k = 0; k < num_counts; k++) {
            int n = rank_counts[k];
            double pre[2], dec[2];
            char cell[2][72], same[48], lp[32], ld[32], lrp[32], lrd[32];
            for (int d = 0; d < 2; d++) {
                const result *r = &results[d][k];
                pre[d] = r->error[0] ? -1 : cfg.prompt_len / r->prefill_s;
                dec[d] = r->error[0] ? -1 : r->decode_tok_s;
                char a[32], b[32];
                print_rate(a, sizeof a, pre[d]);
                print_rate(b, sizeof b, dec[d]);
                snprintf(cell[d], sizeof cell[d], "%s / %s", a, b);
            }
            if (k == 0) snprintf(same, sizeof same, results[1][0].deterministic ? "(itself)" : "no: runs differ");
            else compare_tokens(same, sizeof same, results[1][0].tokens, results[1][0].num_tokens, results[1][k].tokens,
                                results[1][k].num_tokens);
            reference_cells(&llama, n, pre[1], dec[1], lp, ld, lrp, lrd);
            printf("| %s | %d | %s | %s | %.0f, %.0f | %s / %s | %s, %s | %s |\n", file, n, cell[0], cell[1],
                   (double)results[0][k].bytes_per_rank / (1 << 20), (double)results[1][k].bytes_per_rank / (1 << 20), lp, ld,
                   lrp, lrd, same);
        }
        if (llama_cpp && !llama.available) printf("(llama.cpp for %s: %s)\n", file, llama.note);
        for (int d = 0; d < 2; d++)
            for (int k = 0; k < num_counts; k++) free(results[d][k].tokens), free(results[d][k].hidden);
        free(llama.tokens);
        free(prompt);
    }
    return failed;
}

int main(int argc, char **argv) {
    config cfg;
    memset(&cfg, 0, sizeof cfg);
    const char *models = NULL, *dir_root = NULL, *script = "bench/reference.py", *ref_attention = "sdpa";
    const char *llama_cpp = "build/llama.cpp", *llama_script = "bench/llamacpp_reference.py";
    int use_llama_cpp = -1; /* -1: when the default tree has llama-bench */
    const char *perplexity_model = NULL, *perplexity_text = "bench/perplexity.txt", *gguf_files = NULL;
    int device_set = 0, quick = -1, prompt = 0, new_tokens = 0, runs = 0, rounds = 1, batch16 = -1, use_reference = 1,
        seed = 1234;
    cfg.max_ranks = 2;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0;
        if (!strcmp(a, "--device") && v) {
            i++;
            device_set = 1;
            if (!strcmp(v, "cpu")) cfg.device = PF_DEVICE_CPU;
            else if (!strcmp(v, "cuda")) cfg.device = PF_DEVICE_CUDA;
            else bad = 1;
        } else if (!strcmp(a, "--dtype") && v) {
            i++;
            if (!strcmp(v, "f32")) cfg.dtype = PF_DTYPE_F32;
            else if (!strcmp(v, "f16")) cfg.dtype = PF_DTYPE_F16;
            else if (!strcmp(v, "bf16")) cfg.dtype = PF_DTYPE_BF16;
            else if (!strcmp(v, "q8")) cfg.dtype = PF_DTYPE_Q8_0;
            else if (!strcmp(v, "q4")) cfg.dtype = PF_DTYPE_Q4_0;
            else bad = 1;
        } else if (!strcmp(a, "--gpus") && v) bad = parse_int(argv[++i], 1, 64, &cfg.max_ranks);
        else if (!strcmp(a, "--models") && v) models = argv[++i];
        else if (!strcmp(a, "--quick")) quick = 1;
        else if (!strcmp(a, "--full")) quick = 0;
        else if (!strcmp(a, "--prompt") && v) bad = parse_int(argv[++i], 1, 1 << 20, &prompt);
        else if (!strcmp(a, "--new") && v) bad = parse_int(argv[++i], 2, 4000, &new_tokens);
        else if (!strcmp(a, "--runs") && v) bad = parse_int(argv[++i], 1, MAX_RUNS, &runs);
        else if (!strcmp(a, "--rounds") && v) bad = parse_int(argv[++i], 1, MAX_ROUNDS, &rounds);
        else if (!strcmp(a, "--batch16")) batch16 = 1;
        else if (!strcmp(a, "--no-batch16")) batch16 = 0;
        else if (!strcmp(a, "--default-cache")) cfg.default_cache = 1;
        else if (!strcmp(a, "--bf16-products")) cfg.bf16_products = 1;
        else if (!strcmp(a, "--kv-cache") && v) {
            i++;
            if (!strcmp(v, "f32")) cfg.kv_cache = PF_DTYPE_F32;
            else if (!strcmp(v, "f16")) cfg.kv_cache = PF_DTYPE_F16;
            else if (!strcmp(v, "bf16")) cfg.kv_cache = PF_DTYPE_BF16;
            else bad = 1;
        }
        else if (!strcmp(a, "--dir") && v) dir_root = argv[++i];
        else if (!strcmp(a, "--seed") && v) bad = parse_int(argv[++i], 0, 0x7fffffff, &seed);
        else if (!strcmp(a, "--reference") && v) script = argv[++i];
        else if (!strcmp(a, "--no-reference")) use_reference = 0;
        else if (!strcmp(a, "--llama-cpp") && v) llama_cpp = argv[++i], use_llama_cpp = 1;
        else if (!strcmp(a, "--no-llama-cpp")) use_llama_cpp = 0;
        else if (!strcmp(a, "--perplexity") && v) perplexity_model = argv[++i];
        else if (!strcmp(a, "--text") && v) perplexity_text = argv[++i];
        else if (!strcmp(a, "--gguf") && v) gguf_files = argv[++i];
        else if (!strcmp(a, "--ref-attention") && v) {
            ref_attention = argv[++i];
            bad = strspn(ref_attention, "abcdefghijklmnopqrstuvwxyz_,") != strlen(ref_attention) || !*ref_attention;
        }
        else bad = 1;
        if (bad) return usage(), 2;
    }

    /* the device, and what it is */
    int gpus = 0;
    char device_name[1024], machine[512];
#ifdef PF_CUDA
    if (cudaGetDeviceCount(&gpus) != cudaSuccess) gpus = 0;
    cudaGetLastError();
#endif
    if (!device_set) cfg.device = gpus > 0 ? PF_DEVICE_CUDA : PF_DEVICE_CPU;
    if (cfg.device == PF_DEVICE_CUDA && gpus == 0) {
        fprintf(stderr, "bench: --device cuda, but %s\n",
#ifdef PF_CUDA
                "no GPU is visible"
#else
                "this build has no CUDA backend (build with nvcc)"
#endif
        );
        return 1;
    }
    int cuda = cfg.device == PF_DEVICE_CUDA;
    cfg.num_gpus = cuda ? gpus : 0;
    if (!cfg.dtype) cfg.dtype = cuda ? PF_DTYPE_F16 : PF_DTYPE_F32;
    if (quick < 0) quick = !cuda;
    cfg.prompt_len = prompt ? prompt : quick ? 128 : 512;
    cfg.new_tokens = new_tokens ? new_tokens : quick ? 32 : 128;
    cfg.runs = runs ? runs : 5;
    cfg.rounds = rounds;
    cfg.encoder_runs = runs ? runs : quick ? 3 : 5;
    cfg.batch16 = batch16 >= 0 ? batch16 : !quick;
    if (!models && gguf_files) models = ""; /* the files alone */
    if (!models) models = quick ? "gpt2,qwen3-0.6b,bert-base" : "gpt2,gpt2-xl,llama-1b,qwen3-0.6b,bert-base";
    int quantized = cfg.dtype == PF_DTYPE_Q8_0 || cfg.dtype == PF_DTYPE_Q4_0;
    if (cfg.bf16_products && cfg.dtype != PF_DTYPE_BF16) {
        fprintf(stderr, "bench: --bf16-products multiplies bf16 weights: give --dtype bf16\n");
        return 2;
    }
    if (cuda && quantized) {
        fprintf(stderr, "bench: --dtype %s runs on CPU ranks only (--device cpu)\n", dtype_name(cfg.dtype));
        return 2;
    }
    /* q8 and q4 are quantized from the F32 file, as a user quantizes a full-precision checkpoint */
    int fp16_file = !(cfg.device == PF_DEVICE_CPU && (cfg.dtype == PF_DTYPE_F32 || quantized));

    cpu_model_name(machine, sizeof machine);
    char load_average[64], load_average_end[64];
    read_load_average(load_average, sizeof load_average);
    /* what other processes take during the run: the machine's busy time less ours */
    double steal_start = 0, steal_end = 0, busy_start = machine_busy_seconds(&steal_start), own_start = own_cpu_seconds();
    double wall_start = now();
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    snprintf(device_name, sizeof device_name, "%s, %ld cores", machine, cores);
    double bandwidth[65] = {0}, read_bandwidth[65] = {0}; /* per rank, bytes/s, by rank count */
    double gemm = 0, fma_peak[65] = {0}; /* fma_peak: the CPU's, all ranks' threads at once, by rank count */
    int rank_counts[2] = {1, cfg.max_ranks}, num_counts = cfg.max_ranks > 1 ? 2 : 1;
#ifdef PF_CUDA
    if (cuda) {
        struct cudaDeviceProp prop;
        if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess)
            snprintf(device_name, sizeof device_name, "%s (x%d visible; host: %s)", prop.name, gpus, machine);
        double bw = cuda_copy_bandwidth(0);
        for (int k = 0; k < num_counts; k++) {
            int n = rank_counts[k], sharing = (n + gpus - 1) / gpus; /* ranks on the busiest GPU */
            bandwidth[n] = bw / sharing;
        }
        gemm = cuda_gemm_flops(0, cfg.dtype);
    }
#endif
    if (!cuda)
        for (int k = 0; k < num_counts; k++) {
            int n = rank_counts[k];
            bandwidth[n] = host_bandwidth(n, 0) / n;
            read_bandwidth[n] = host_bandwidth(n, 1) / n;
            fma_peak[n] = cpu_fma_peak(n);
        }

    /* where the checkpoints go */
    char root[PATH_CAP - 64];
    if (dir_root && strlen(dir_root) >= sizeof root) {
        fprintf(stderr, "bench: --dir is too long\n");
        return 2;
    }
    if (dir_root) snprintf(root, sizeof root, "%s", dir_root);
    else snprintf(root, sizeof root, "%s/parallelformers-bench", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (make_dir(root)) {
        fprintf(stderr, "bench: cannot create %s: %s\n", root, strerror(errno));
        return 1;
    }

    int reference_ok = use_reference && access(script, R_OK) == 0 &&
                       system("python3 -c 'import torch, transformers' >/dev/null 2>&1") == 0;
    char reference_why[128] = "";
    if (!use_reference) snprintf(reference_why, sizeof reference_why, "--no-reference");
    else if (!reference_ok) snprintf(reference_why, sizeof reference_why, "needs python3 with torch and transformers, and %s", script);

    char llama_bench[PATH_CAP + 32];
    snprintf(llama_bench, sizeof llama_bench, "%s/build/bin/llama-bench", llama_cpp);
    if (use_llama_cpp < 0) use_llama_cpp = access(llama_bench, X_OK) == 0;
    int llama_ok = use_llama_cpp && !cuda && access(llama_script, R_OK) == 0;
    char llama_why[2 * PATH_CAP + 128] = "";
    if (use_llama_cpp < 1) snprintf(llama_why, sizeof llama_why, "no %s (make llama-cpp), or --no-llama-cpp", llama_bench);
    else if (!llama_ok) snprintf(llama_why, sizeof llama_why, cuda ? "CPU only here" : "no %s", llama_script);

    fprintf(stderr, "bench: %s; %s, prompt %d, %d new tokens, %d runs after a warm-up\n", device_name, format_name(&cfg),
            cfg.prompt_len, cfg.new_tokens, cfg.runs);

    /* run every model */
    char list[256];
    snprintf(list, sizeof list, "%s", models);
    const shape *chosen[NUM_SHAPES];
    int num_chosen = 0;
    for (char *name = strtok(list, ","); name; name = strtok(NULL, ",")) {
        size_t k = 0;
        while (k < NUM_SHAPES && strcmp(shapes[k].name, name)) k++;
        if (k == NUM_SHAPES) {
            fprintf(stderr, "bench: unknown model %s (gpt2, gpt2-xl, llama-1b, llama-8b, bert-base, qwen3-0.6b, olmoe)\n", name);
            return 2;
        }
        if (num_chosen < (int)NUM_SHAPES) chosen[num_chosen++] = &shapes[k];
    }
    result results[NUM_SHAPES][2];
    reference refs[NUM_SHAPES], llama_refs[NUM_SHAPES];
    memset(results, 0, sizeof results);
    memset(refs, 0, sizeof refs);
    memset(llama_refs, 0, sizeof llama_refs);
    int status = 0, num_decoders = 0, num_encoders = 0;
    for (int c = 0; c < num_chosen; c++) is_encoder(chosen[c]) ? num_encoders++ : num_decoders++;
    float *ref_hidden[NUM_SHAPES] = {NULL}; /* the reference's last_hidden_state of each encoder */
    for (int c = 0; c < num_chosen; c++) {
        const shape *s = chosen[c];
        char dir[PATH_CAP];
        snprintf(dir, sizeof dir, "%s/%s-%s-seed%d", root, s->name, fp16_file ? "f16" : "f32", seed);
        if (ensure_checkpoint(s, dir, fp16_file, (uint64_t)seed)) {
            fprintf(stderr, "bench: cannot write the checkpoint in %s: %s\n", dir, strerror(errno));
            return 1;
        }
        char file[PATH_CAP + 32];
        snprintf(file, sizeof file, "%s/model.safetensors", dir);
        warm_page_cache(file);
        if (is_encoder(s)) {
            ref_hidden[c] = run_encoder(s, dir, &cfg, rank_counts, num_counts, (uint64_t)seed,
                                        reference_ok ? script : NULL, ref_attention, results[c], &refs[c]);
            for (int k = 0; k < num_counts; k++) status |= results[c][k].error[0] != 0;
            continue;
        }
        if (cfg.prompt_len + cfg.new_tokens > s->positions) {
            fprintf(stderr, "bench: %s: prompt %d + %d new tokens exceed its %d positions\n", s->name, cfg.prompt_len,
                    cfg.new_tokens, s->positions);
            return 2;
        }
        /* the prompts: seeded random ids, the same for every rank count and for the reference */
        int32_t *prompts[BATCH16];
        uint64_t state = hash_name("prompt", (uint64_t)seed);
        for (int b = 0; b < BATCH16; b++) {
            prompts[b] = (int32_t *)malloc((size_t)cfg.prompt_len * sizeof *prompts[b]);
            if (!prompts[b]) return 1;
            for (int t = 0; t < cfg.prompt_len; t++) prompts[b][t] = (int32_t)(next_random(&state) % (uint64_t)s->vocab);
        }
        char threads[64]; /* on the CPU the references get as many threads as we have ranks */
        if (cuda) snprintf(threads, sizeof threads, "0");
        else if (num_counts > 1) snprintf(threads, sizeof threads, "%d,%d", rank_counts[0], rank_counts[1]);
        else snprintf(threads, sizeof threads, "%d", rank_counts[0]);
        char prompt_file[PATH_CAP + 32];
        snprintf(prompt_file, sizeof prompt_file, "%s/prompt-%d.txt", dir, cfg.prompt_len);
        if (reference_ok) {
            FILE *f = fopen(prompt_file, "w");
            for (int t = 0; f && t < cfg.prompt_len; t++) fprintf(f, "%d%c", (int)prompts[0][t], t + 1 < cfg.prompt_len ? ' ' : '\n');
            if (f) fclose(f);
        }
        for (int round = 0; round < cfg.rounds; round++)
            status |= measure_round(s, dir, &cfg, rank_counts, num_counts, prompts, threads, round, llama_ok ? llama_cpp : NULL,
                                    llama_script, reference_ok ? script : NULL, prompt_file, results[c], &llama_refs[c],
                                    &refs[c]);
        for (int b = 0; b < BATCH16; b++) free(prompts[b]);
    }

    /* the table, in Markdown */
    read_load_average(load_average_end, sizeof load_average_end);
    double busy_end = machine_busy_seconds(&steal_end), wall = now() - wall_start;
    double others_cores = (busy_end - busy_start - (own_cpu_seconds() - own_start)) / wall;
    time_t t = time(NULL);
    char date[32];
    strftime(date, sizeof date, "%Y-%m-%d", localtime(&t));
    printf("\nparallelformers bench, %s\n", date);
    printf("device: %s\n", device_name);
    for (int k = 0; k < num_counts; k++)
        printf("copy bandwidth per rank with %d rank%s: %.1f GB/s%s\n", rank_counts[k], rank_counts[k] > 1 ? "s" : "",
               bandwidth[rank_counts[k]] / 1e9, cuda ? " (cudaMemcpy D2D, read + write)" : " (memcpy, read + write, all ranks copying)");
    for (int k = 0; !cuda && k < num_counts; k++)
        printf("read bandwidth per rank with %d rank%s: %.1f GB/s (a read-only pass in %d-bit loads, all ranks reading)\n", rank_counts[k],
               rank_counts[k] > 1 ? "s" : "", read_bandwidth[rank_counts[k]] / 1e9,
               pf_cpu_vector_bits() ? pf_cpu_vector_bits() : 64);
    printf("load average at the start: %s; at the end: %s\n", load_average, load_average_end);
    if (busy_start >= 0 && busy_end >= 0)
        printf("other processes used %.2f cores on average during the run's %.0f s (busy time in /proc/stat less the "
               "bench's and its children's); the hypervisor's steal: %.2f cores\n",
               others_cores < 0 ? 0 : others_cores, wall, (steal_end - steal_start) / wall);
    if (gemm > 0) printf("cuBLAS %s GEMM (8192^3): %.1f TFLOP/s\n", dtype_name(cfg.dtype), gemm / 1e12);
    for (int k = 0; !cuda && k < num_counts; k++)
        if (fma_peak[rank_counts[k]] > 0)
            printf("fp32 FMA peak with %d rank%s: %.1f GFLOP/s (%d-bit FMA, one thread per rank, all at once, each timed by its CPU time)\n", rank_counts[k],
                   rank_counts[k] > 1 ? "s" : "", fma_peak[rank_counts[k]] / 1e9, pf_cpu_vector_bits() == 512 ? 512 : 256);
    char rounds_note[96] = "";
    if (cfg.rounds > 1)
        snprintf(rounds_note, sizeof rounds_note, "; each engine's best of %d such medians, the engines taking turns", cfg.rounds);
    if (num_decoders)
        printf("weights: %s file, stored as %s; keys and values cached as %s; prompt %d tokens, %d new tokens (greedy, eos "
               "ignored), median of %d runs%s\n",
               fp16_file ? "F16" : "F32", cfg.bf16_products ? "bf16 (each product's input rounded to bf16)" : dtype_name(cfg.dtype),
               cfg.kv_cache == PF_DTYPE_F16 ? "f16" : cfg.kv_cache == PF_DTYPE_BF16 ? "bf16"
               : cfg.kv_cache == PF_DTYPE_F32 || cfg.device == PF_DEVICE_CPU ? "f32" : "the weights' dtype",
               cfg.prompt_len, cfg.new_tokens, cfg.runs, rounds_note);
    if (num_encoders)
        printf("encoder: %s file, stored as %s; pf_encode of %d sentences x %d tokens (sentence pairs), median of %d runs\n",
               fp16_file ? "F16" : "F32", dtype_name(cfg.dtype), ENCODER_BATCH, ENCODER_TOKENS, cfg.encoder_runs);
    if (reference_ok && num_decoders)
        printf("reference: transformers + torch, %s %s, greedy with use_cache (%s)\n", cuda ? "cuda" : "cpu",
               reference_dtype(&cfg), cuda ? "one GPU" : "torch threads = our ranks");
    if (reference_ok && num_encoders)
        printf("encoder reference: transformers AutoModel (BertModel) + torch, %s %s, attention %s, same ids, segments and "
               "an all-ones attention mask (%s)\n",
               cuda ? "cuda" : "cpu", reference_dtype(&cfg), ref_attention,
               cuda ? "one GPU" : "torch threads = our ranks");
    if (!reference_ok) printf("reference: not available (%s)\n", reference_why);
    if (llama_ok && num_decoders)
        printf("llama.cpp: llama-bench on the same weights as a GGUF (%s), threads = our ranks, no GPU layers; prefill "
               "-p PROMPT -n 0, decode -n NEW at depth PROMPT\n", dtype_name(cfg.dtype));
    else if (num_decoders && !cuda) printf("llama.cpp: not run (%s)\n", llama_why);
    if (num_decoders) {
        printf("\n| model | params | device | dtype | ranks | load s | prefill tok/s | prefill GFLOP/s%s | decode tok/s b1 | "
               "decode tok/s b16 | MiB/rank | floor %% b1 | tokens = 1 rank | ref prefill tok/s | ref decode tok/s | "
               "ours/ref prefill | ours/ref decode | llama.cpp prefill tok/s | llama.cpp decode tok/s | "
               "ours/llama.cpp prefill | ours/llama.cpp decode |\n",
               gemm > 0 ? " (% of GEMM)" : fma_peak[rank_counts[0]] > 0 ? " (% of FMA peak)" : "");
        printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    }
    for (int c = 0; c < num_chosen; c++) {
        const shape *s = chosen[c];
        if (is_encoder(s)) continue;
        for (int k = 0; k < num_counts; k++) {
            const result *r = &results[c][k];
            int n = rank_counts[k];
            char load[32], pre[32], flops[48], dec[32], dec16[32], mib[32], floor_pct[96], same[48], rp[32], rd[32],
                rrp[32], rrd[32];
            if (r->error[0] && r->num_tokens == 0) {
                printf("| %s | %.2f B | %s | %s | %d | failed: %s | | | | | | | | | | | | | | | |\n", s->name, shape_parameters(s) / 1e9,
                       cuda ? "cuda" : "cpu", format_name(&cfg), n, r->error);
                continue;
            }
            double prefill_tok_s = cfg.prompt_len / r->prefill_s;
            double gflops = prefill_flops(s, cfg.prompt_len) / r->prefill_s / 1e9;
            double esize = weight_bytes(cfg.dtype);
            double floor_s = (double)decode_elements_per_rank(s, n) * (double)esize / bandwidth[n];
            snprintf(load, sizeof load, "%.2f", r->load_s);
            print_rate(pre, sizeof pre, prefill_tok_s);
            if (gemm > 0) snprintf(flops, sizeof flops, "%.0f (%.0f %%)", gflops, 100.0 * gflops * 1e9 / gemm);
            else if (fma_peak[n] > 0) snprintf(flops, sizeof flops, "%.1f (%.0f %%)", gflops, 100.0 * gflops * 1e9 / fma_peak[n]);
            else snprintf(flops, sizeof flops, "%.1f", gflops);
            print_rate(dec, sizeof dec, r->decode_tok_s);
            print_rate(dec16, sizeof dec16, r->decode16_tok_s);
            snprintf(mib, sizeof mib, "%.0f", (double)r->bytes_per_rank / (1 << 20));
            double bytes_read = (double)decode_elements_per_rank(s, n) * (double)esize;
            double cache_read = (double)decode_cache_elements_per_rank(s, n, (size_t)(cfg.prompt_len + cfg.new_tokens / 2)) *
                                cpu_cache_bytes(cfg.kv_cache);
            if (bandwidth[n] > 0 && read_bandwidth[n] > 0)
                snprintf(floor_pct, sizeof floor_pct, "%.0f %% (read: %.0f %%, with the cache: %.0f %%)",
                         100.0 * floor_s * r->decode_tok_s, 100.0 * bytes_read / read_bandwidth[n] * r->decode_tok_s,
                         100.0 * (bytes_read + cache_read) / read_bandwidth[n] * r->decode_tok_s);
            else if (bandwidth[n] > 0) snprintf(floor_pct, sizeof floor_pct, "%.0f %%", 100.0 * floor_s * r->decode_tok_s);
            else snprintf(floor_pct, sizeof floor_pct, "-");
            if (k == 0) snprintf(same, sizeof same, r->deterministic ? "(itself)" : "no: runs differ");
            else compare_tokens(same, sizeof same, results[c][0].tokens, results[c][0].num_tokens, r->tokens, r->num_tokens);
            reference_cells(&refs[c], cuda ? 0 : n, prefill_tok_s, r->decode_tok_s, rp, rd, rrp, rrd);
            char lp[32], ld[32], lrp[32], lrd[32];
            reference_cells(&llama_refs[c], n, prefill_tok_s, r->decode_tok_s, lp, ld, lrp, lrd);
            printf("| %s | %.2f B | %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
                   s->name, shape_parameters(s) / 1e9, cuda ? "cuda" : "cpu", format_name(&cfg), n, load, pre, flops, dec,
                   dec16, mib, floor_pct, same, rp, rd, rrp, rrd, lp, ld, lrp, lrd);
        }
    }
    if (num_encoders) print_encoder_table(chosen, num_chosen, results, refs, ref_hidden, &cfg, rank_counts, num_counts,
                                          ref_attention, gemm, fma_peak);
    if (gguf_files) {
        char threads[64];
        if (num_counts > 1) snprintf(threads, sizeof threads, "%d,%d", rank_counts[0], rank_counts[1]);
        else snprintf(threads, sizeof threads, "%d", rank_counts[0]);
        status |= run_gguf_files(gguf_files, &cfg, rank_counts, num_counts, threads, (uint64_t)seed,
                                 llama_ok ? llama_cpp : NULL, llama_script);
    }
    printf("\n");
    if (perplexity_model) {
        /* a GGUF: its blocks against fp32 activations (the default) and against int8 ones (llama.cpp's
           arithmetic); other models: the bench's dtype. Each beside f32 (a GGUF's blocks expanded) */
        size_t name_len = strlen(perplexity_model);
        int gguf = name_len > 5 && !strcmp(perplexity_model + name_len - 5, ".gguf");
        pf_dtype kinds[2] = {gguf ? PF_DTYPE_AUTO : cfg.dtype, PF_DTYPE_Q8_0};
        const char *names[2] = {gguf ? "the file's blocks against fp32 activations" : format_name(&cfg),
                                "the file's blocks against int8 activations (q8: llama.cpp's arithmetic)"};
        char error[1024] = "";
        int tokens = 0, ignored = 0;
        double ppl_f32 = perplexity(perplexity_model, perplexity_text, cfg.device, PF_DTYPE_F32, 0, &tokens, error, sizeof error);
        if (ppl_f32 > 0) printf("perplexity of %s (%d tokens) under %s: f32 %.4f\n", perplexity_text, tokens, perplexity_model, ppl_f32);
        for (int k = 0; ppl_f32 > 0 && k < (gguf ? 2 : cfg.dtype != PF_DTYPE_F32); k++) {
            double ppl = perplexity(perplexity_model, perplexity_text, cfg.device, kinds[k], k ? 0 : cfg.bf16_products,
                                    &ignored, error, sizeof error);
            if (ppl > 0) printf("  %s: %.4f (%+.2f %%)\n", names[k], ppl, 100.0 * (ppl / ppl_f32 - 1));
            else break;
        }
        if (error[0]) printf("perplexity: not measured (%s)\n", error);
        status |= error[0] != 0;
    }
    for (int c = 0; c < num_chosen; c++) {
        if (!refs[c].available || is_encoder(chosen[c])) continue;
        char same[48];
        compare_tokens(same, sizeof same, results[c][0].tokens, results[c][0].num_tokens, refs[c].tokens, refs[c].num_tokens);
        printf("%s: greedy tokens of 1 rank equal transformers': %s\n", chosen[c]->name, same);
    }
    if (!reference_ok) printf("reference: not available\n");
    for (int c = 0; c < num_chosen; c++) {
        for (int k = 0; k < num_counts; k++) free(results[c][k].tokens), free(results[c][k].hidden);
        free(refs[c].tokens), free(llama_refs[c].tokens);
        free(ref_hidden[c]);
    }
    return status;
}
