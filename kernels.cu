/* kernels.cu: the CUDA backend of parallelformers: kernels, cuBLAS GEMMs and NCCL communicators
   behind a plain C ABI. parallelformers.c (its CUDA backend section) is the only caller; this file
   knows nothing of its structs.

   The C ABI (its rules, types, constants and every pf_cuda_* function) is declared once, in
   src/cuda_abi.h: the block below after the includes is that file's text, which
   tool/amalgamate.sh writes there (edit src/cuda_abi.h, never the block; make check-amalgamation
   fails when they differ), so the definitions here are compiled against the declarations the C
   side uses.

   Operations mirror the CPU backend's in parallelformers.c (same function for each op, fp32
   activations, weights of any of the three dtypes wherever one is read: norms, biases, position
   tables, embeddings): embed (times a scale), add_positions (learned table or CTRL's fp32
   sinusoid), norm (LayerNorm or RMSNorm; with 16-bit weights it and the activations also write
   their output rounded to them, which the matmul right after takes as its input), matmul,
   activation, gated_activation, add_residual,
   rotary (halves or pairs, angle = position * inv_freq in fp32 with cosf/sinf; it, or kv_append
   where there is no rotary, also adds the QKV GEMM's bias, which the GEMM then leaves out), attention (GQA
   head mapping, sliding window, ALiBi, scale; prefill one block per (query, head), decode split
   over up to PF_MAX_SPLITS blocks per head and combined), reorder_rows (beam search: the rows that
   change gathered into scratch and scattered back), argmax (greedy token choice: each row's
   first maximum over the rank's vocabulary slice, NaN skipped but at id 0, so that the host
   combines the ranks' candidates into exactly the token its own scan of the logits would take,
   and downloads 8 bytes a row into pinned memory, pf_cuda_host_alloc, instead of the logits),
   top_k (sampling's candidates: each row's best up to 512 of the slice, best first, which the host
   merges and samples from as it would from the logits), and the all-reduce pieces (sum, peer copies, NCCL).
   Left-padded batches: add_positions, rotary and attention take the step's left pad counts (a
   device array, or NULL); a token's position is past + t - pad[b] (0 at least), attention never
   reads keys j < pad[b], ALiBi adds slope * (j - pad[b]), and a query with no key writes zeros.

   Run on a GPU first on 2026-11-26 (one H200, sm_90 build): test_cuda passed on every fixture it
   had then (not yet CLIP's quick_gelu or the speech encoders, added later that day), and
   compute-sanitizer's memcheck and racecheck found nothing (BENCHMARKS.md). Prefill over 16-bit
   caches has since moved to tensor cores (pf_flash_attention_kernel; the one-block-per-(query,
   head) kernel stays for fp32 caches and the other fallbacks), which has not run on a GPU yet:
   make test-cuda (its random-shapes cases) and make test-cuda-sanitize must pass first. The NCCL all-reduce
   between distinct GPUs, its abort path and the peer copies of the reduction over mixed GPUs have
   still only run against the stand-in, and so have the communicators across processes
   (pf_cuda_nccl_create_world, bootstrapped over MPI by the C side: compiled, never run on GPUs). Without a GPU, parallelformers.c's CUDA section and
   test/test_cuda.c run against a host-memory stand-in for this ABI (test/cuda_standin.c) that
   mirrors each kernel's arithmetic (rounding of GEMM inputs and of cached keys and values to
   fp16/bf16, online softmax over PF_CHUNK-key chunks, decode splits and their combination,
   NaN-filled allocations) under ASan, UBSan and TSan, with 1-4 ranks on one "GPU" and a two-"GPU"
   NCCL stand-in. Note that dropping the pads from rotary or ALiBi alone changes no test's tokens:
   both shift every score of a query by the same amount (rotary exactly up to rounding), so only
   the masking and the learned/sinusoid positions are pinned down by tokens.

   Built with -DPF_CUDA_NEXT_KERNELS (make PF_NEXT=1), faster kernels replace five launches for an
   A/B on a GPU (the default build leaves them out): prefill attention with S and O in registers
   (pf_flash2_attention_kernel), decode attention in one launch (pf_decode_attention_kernel), a
   GEMV for 1..8 rows of 16-bit GEMMs (pf_gemv16_kernel) and residual + norm with the row in
   registers (pf_add_residual_norm_regs_kernel). test/kernel_check.cu checks them against the
   kernels they replace and a double-precision reference; test/gpu_check.sh next runs it, the
   test suite's GPU cases and the bench with each build. Compiled only so far (no GPU where they
   were written). */
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>
#include <nccl.h>

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <chrono>
#include <thread>

/* ==== begin src/cuda_abi.h: generated from it by tool/amalgamate.sh; edit that file, not this block ==== */
/* cuda_abi.h: the C ABI between the host side (src/cuda_backend.c) and kernels.cu, declared here
   and nowhere else. The C side includes it; tool/amalgamate.sh inlines it into the shipped
   parallelformers.c and writes it into kernels.cu's marked block (kernels.cu stays one file to
   vendor), so nvcc compiles kernels.cu's definitions against these declarations; the stand-in
   (test/cuda_standin.c) includes it too.

   - Every function is named pf_cuda_* and has C linkage. It takes plain C types and two opaque
     handles: pf_cuda_rank (one rank's device, stream and cuBLAS handle) and a communicator (one
     rank's NCCL communicator, passed as void *).
   - Functions that can fail return an int status: PF_CUDA_OK, PF_CUDA_ERROR_DEVICE,
     PF_CUDA_ERROR_OUT_OF_MEMORY or (collectives) PF_CUDA_ERROR_REMOTE. The message of the failure, "<call> failed: <error string>
     (kernels.cu:<line>)", is in pf_cuda_rank_message(rank) until the next failure on that rank;
     functions without a rank write it to the (message, size) buffer they take.
   - Everything but pf_cuda_device_count, pf_cuda_nccl_unique_id, pf_cuda_nccl_create,
     pf_cuda_nccl_create_world and pf_cuda_nccl_destroy runs on the rank's own thread, after
     pf_cuda_rank_create made its device current there.
   - Work is queued on the rank's stream; only upload (not upload_async), download, stream_sync
     and the setup calls wait for it. Activations are fp32; weights are fp32, fp16 or bf16
     (PF_CUDA_F32/F16/BF16); the KV cache is fp32 or the 16-bit weights' dtype (cache_dtype).
   - Nothing in kernels.cu prints, exits or aborts.
   - Decode steps may be captured into CUDA graphs (pf_cuda_graph_begin / end) and replayed
     (pf_cuda_graph_launch): so every value that changes from step to step reaches the kernels
     through device memory (past through past_at, token ids, pads, cache rows, frequencies),
     never as a by-value argument; what is by value (shapes, the decode split count) is part of
     the caller's graph key.
   What each function computes is written above its definition in kernels.cu. */
#ifndef PF_CUDA_ABI_H
#define PF_CUDA_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pf_cuda_rank pf_cuda_rank;

/* Statuses. */
#define PF_CUDA_OK 0
#define PF_CUDA_ERROR_DEVICE 1
#define PF_CUDA_ERROR_OUT_OF_MEMORY 2
/* A collective failed because a peer in another process did (NCCL's ncclRemoteError, an aborted
   peer): this rank's failure is a consequence, not the cause. */
#define PF_CUDA_ERROR_REMOTE 3

/* Element types of weights, caches and the 16-bit copies of activations. */
#define PF_CUDA_F32 0
#define PF_CUDA_F16 1
#define PF_CUDA_BF16 2

/* Activations (act). */
#define PF_CUDA_GELU_TANH 0
#define PF_CUDA_GELU_ERF 1
#define PF_CUDA_RELU 2
#define PF_CUDA_SILU 3
#define PF_CUDA_TANH 4
#define PF_CUDA_QUICK_GELU 5

/* The most candidates pf_cuda_top_k keeps per row (a power of two: the size of its sort). */
#define PF_CUDA_TOP_K_MAX 512

/* pf_cuda_attend's arguments: one layer's attention over one step (kernels.cu's comment above
   pf_cuda_attend says what it computes from them). Read during the call only: a graph captured
   over it keeps the values it had then, as a kernel launch keeps its by-value arguments. */
typedef struct pf_cuda_attention_args {
    float *out;                         /* [batch * T][heads * head_dim] */
    const float *qkv;                   /* rows [q | k | v]; q alone for mask 2 */
    const void *k_cache, *v_cache;      /* [cache rows][cache_len][kv_heads * head_dim] of cache_dtype */
    int cache_dtype;                    /* PF_CUDA_F32, _F16 or _BF16 */
    float *partials;                    /* decode's split sums (pf_cuda_attention_scratch_floats); NULL: one split */
    const float *alibi;                 /* [heads] slopes, or NULL */
    int alibi_rounded;                  /* 1: the bias bf16(slope * position) times scale (Falcon's) */
    const int *pad;                     /* [batch] left pad counts, or NULL for none */
    const int *rows;                    /* [batch] the cache row of each sequence, or NULL for row b */
    int batch, T;                       /* sequences, and tokens of each in this step */
    int past;                           /* checks the shapes and sizes the decode splits (host) */
    const int *past_at;                 /* device [1]: the same past, which the kernels read */
    int heads, kv_heads, head_dim;      /* the rank's query and key/value heads */
    int head_begin, kv_begin, kv_group; /* q head h reads kv head (head_begin + h) / kv_group - kv_begin */
    int cache_len;
    int window;                         /* keys within this distance of the query (sliding window); 0: all */
    int chunk;                          /* > 0: keys j of the query's chunk, (j - pad) / chunk == (pos - pad) / chunk */
    int mask;                           /* 0: bidirectional (encoders), 1: causal, 2: cross-attention */
    int local_window;                   /* > 0 (mask 0): Longformer's local attention, the keys j with
                                           |pos - j| <= local_window and the global tokens (global) */
    int global_queries;                 /* 1 (mask 0): only the global tokens' queries, over every key; the
                                           other rows of out are left as they are */
    const int32_t *global;              /* [batch * T]: 1 for a token with global attention; NULL: none */
    int sparse_block, sparse_random;    /* sparse_block > 0 (mask 0, past 0): BigBird's block-sparse attention,
                                           key j in query i's softmax as often as pf_block_sparse_count says */
    float scale;
    float softcap;                      /* > 0: scaled scores become tanh(s / softcap) * softcap first (Gemma 2) */
    const float *rel_bias;              /* [heads][rel_rows]: T5's bucketed relative bias, or NULL */
    int rel_rows, rel_buckets, rel_max_distance;
    const float *dense_bias;            /* [batch * T][heads][T (mask 2: cache_len)]: added to the scaled score of
                                           key j (past 0), DeBERTa's or Funnel's terms; NULL: none (then the plain kernel) */
    const void *sinks;                  /* [heads] of sinks_dtype: a logit per head joining its softmax's
                                           denominator with no value (gpt-oss); NULL: none (then the plain kernel) */
    int sinks_dtype;
} pf_cuda_attention_args;

int pf_cuda_device_count(int *count, const char **reason);
int pf_cuda_device_memory(int device, size_t *free_bytes, size_t *total_bytes);
int pf_cuda_rank_create(int device, pf_cuda_rank **out, char *message, size_t size);
void pf_cuda_rank_destroy(pf_cuda_rank *st);
const char *pf_cuda_rank_message(const pf_cuda_rank *st);
int pf_cuda_set_workspace(pf_cuda_rank *st, void *workspace, size_t bytes);
size_t pf_cuda_workspace_bytes(void);
int pf_cuda_malloc(pf_cuda_rank *st, void **ptr, size_t bytes);
int pf_cuda_free(pf_cuda_rank *st, void *ptr);
int pf_cuda_upload(pf_cuda_rank *st, void *dst, const void *host, size_t bytes);
int pf_cuda_upload_async(pf_cuda_rank *st, void *dst, const void *host, size_t bytes);
int pf_cuda_download(pf_cuda_rank *st, void *host, const void *src, size_t bytes);
int pf_cuda_host_alloc(pf_cuda_rank *st, void **ptr, size_t bytes);
void pf_cuda_host_free(void *ptr);
int pf_cuda_argmax(pf_cuda_rank *st, float *values, int32_t *indices, const float *logits, size_t rows, size_t n,
                   int first);
int pf_cuda_top_k(pf_cuda_rank *st, float *values, int32_t *indices, const float *logits, size_t rows, size_t n,
                  int first, size_t count);
int pf_cuda_copy_async(pf_cuda_rank *st, void *dst, const void *src, size_t bytes);
int pf_cuda_copy_peer_async(pf_cuda_rank *st, void *dst, const void *src, int src_device, size_t bytes);
int pf_cuda_stream_sync(pf_cuda_rank *st);
int pf_cuda_stream_query(pf_cuda_rank *st, int *done);
int pf_cuda_download_rows(pf_cuda_rank *st, void *host, size_t host_stride, const void *src, size_t src_stride,
                          size_t row_bytes, size_t rows);
int pf_cuda_embed(pf_cuda_rank *st, float *out, const void *tokens, int dtype, const int32_t *ids_host,
                  int32_t *ids_device, size_t rows, size_t d, float scale, int first, size_t table_rows);
int pf_cuda_add_positions(pf_cuda_rank *st, float *x, const void *table, int dtype, const int *pad, int batch, int T,
                          const int *past_at, size_t offset, size_t d);
int pf_cuda_norm(pf_cuda_rank *st, float *out, const float *x, const void *weight, int weight_dtype, const void *bias,
                 int bias_dtype, size_t rows, size_t n, float eps, int rms, void *out16, int out16_dtype);
int pf_cuda_add_residual_norm(pf_cuda_rank *st, float *x, const float *y, const void *bias, int bias_dtype, float *out,
                              const void *weight, int weight_dtype, const void *norm_bias, int norm_bias_dtype,
                              size_t rows, size_t n, float eps, int rms, void *out16, int out16_dtype);
int pf_cuda_matmul(pf_cuda_rank *st, float *out, const float *x, const void *w, int w_dtype, const void *bias,
                   int bias_dtype, size_t rows, size_t n_out, size_t k, void *x_scratch, int x_converted);
int pf_cuda_activation(pf_cuda_rank *st, float *x, size_t count, int act, void *x16, int x16_dtype);
int pf_cuda_softcap(pf_cuda_rank *st, float *x, size_t count, float cap);
int pf_cuda_gated_activation(pf_cuda_rank *st, float *out, const float *in, size_t rows, size_t width, int act,
                             void *out16, int out16_dtype);
int pf_cuda_clamped_swiglu(pf_cuda_rank *st, float *out, const float *in, size_t rows, size_t width, float alpha,
                           float limit);
int pf_cuda_bias_activation(pf_cuda_rank *st, float *x, const void *bias, int dtype, size_t rows, size_t n, int act,
                            void *x16, int x16_dtype);
int pf_cuda_add_residual(pf_cuda_rank *st, float *x, const float *y, const void *bias, int dtype, size_t rows,
                         size_t n);
int pf_cuda_add_residual_biases(pf_cuda_rank *st, float *x, const float *y, const void *bias, int dtype,
                                const void *bias2, int dtype2, size_t rows, size_t n);
int pf_cuda_sum(pf_cuda_rank *st, float *sum, const float *in, size_t count, int first);
int pf_cuda_scale(pf_cuda_rank *st, float *x, size_t count, float factor);
/* Mixtures of experts: dst[i] = scales[i] * src[rows[i]] (rows of width floats); dst[rows[i]] += scales[i] * src[i] (scales NULL: 1),
   the rows distinct within a call (one expert's tokens); rows and scales on the device. */
int pf_cuda_gather_rows(pf_cuda_rank *st, float *dst, const float *src, const int32_t *rows, const float *scales,
                        size_t count, size_t width);
int pf_cuda_scatter_add_rows(pf_cuda_rank *st, float *dst, const float *src, const int32_t *rows, const float *scales,
                             size_t count, size_t width);
/* ConvBERT's convolutions over each sequence's real tokens (pad: [batch] left pads on the device, or
   NULL); rows = batch * T. */
int pf_cuda_depthwise_conv(pf_cuda_rank *st, float *out, const float *x, const void *w, int w_dtype, const int *pad,
                           int batch, int T, size_t width, int k);
int pf_cuda_multiply(pf_cuda_rank *st, float *x, const float *y, size_t y_stride, size_t rows, size_t n);
int pf_cuda_span_conv(pf_cuda_rank *st, float *out, const float *logits, size_t logits_stride, const float *v,
                      const int *pad, int batch, int T, int heads, int head_dim, int k);
/* Funnel's position and segment terms as attend's dense bias (pf__backend.funnel_bias's math):
   ints = [q pads (batch)][k pads (batch)][q types (batch * q_len)][k types (batch * k_len)]; seg
   NULL: no segment term. */
int pf_cuda_funnel_bias(pf_cuda_rank *st, float *out, const float *q, const float *rel, const void *pos_bias, int pos_dtype,
                        const void *type_bias, int type_dtype, const void *seg, int seg_dtype, const int32_t *ints,
                        int batch, int q_len, int k_len, int heads, int head_dim, int q_first, int q_stride, int k_first,
                        int k_stride, int rel_first, int separate_cls, int exact_segments, int causal, int window,
                        float scale);
/* Reformer's attention over listed keys (pf__backend.reformer_attend's math): q, k, v, out rows
   [heads * head_dim] of len positions; keys [heads][len][rounds][listed], each position * 4 + code
   (0 plain, 1 masked: -1e9, 2 the query's own: -1e5); shared_qk: LSH's length-normalised keys. */
int pf_cuda_reformer_attend(pf_cuda_rank *st, float *out, const float *q, const float *k, const float *v, const int32_t *keys,
                            int len, int heads, int head_dim, int rounds, int listed, int shared_qk);
int pf_cuda_clamp(pf_cuda_rank *st, float *x, size_t count, float limit);
int pf_cuda_scale_queries(pf_cuda_rank *st, float *qkv, const int *pad, int batch, int T, const int *past_at, int heads,
                          int kv_heads, int head_dim, float floor_scale, float scale);
int pf_cuda_qk_sum_squares(pf_cuda_rank *st, float *sums, const float *qkv, size_t rows, int heads, int kv_heads,
                           int head_dim, int k_first, int k_count);
int pf_cuda_qk_scale(pf_cuda_rank *st, float *qkv, const float *sums, const void *q_weight, int q_dtype,
                     const void *k_weight, int k_dtype, size_t rows, int heads, int kv_heads, int head_dim, float q_width,
                     float k_width, float eps);
int pf_cuda_head_norm(pf_cuda_rank *st, float *qkv, const void *q_weight, int q_dtype, const void *k_weight, int k_dtype,
                      const void *q_bias, int qb_dtype, const void *k_bias, int kb_dtype, size_t rows, int heads,
                      int kv_heads, int head_dim, float eps, int rms, int per_head);
int pf_cuda_rotary(pf_cuda_rank *st, float *qkv, const void *bias, int bias_dtype, const float *inv_freq, const int *pad,
                   int batch, int T, const int *past_at, int heads, int kv_heads, int head_dim, int rotary_dim, int pairs,
                   float scale);
size_t pf_cuda_attention_scratch_floats(int max_batch, int heads, int head_dim);
int pf_cuda_decode_splits(int len);
int pf_cuda_kv_append(pf_cuda_rank *st, void *k_cache, void *v_cache, int cache_dtype, float *qkv, const void *bias,
                      int bias_dtype, const int *rows, int batch, int T, int past, const int *past_at, int heads,
                      int kv_heads, int head_dim, int cache_len);
int pf_cuda_attend(pf_cuda_rank *st, const pf_cuda_attention_args *args);
int pf_cuda_latent_append(pf_cuda_rank *st, void *cache, int cache_dtype, const float *latent, const void *norm,
                          int norm_dtype, const float *inv_freq, const int *pad, const int *rows, int batch, int T,
                          int past, const int *past_at, int latent_rank, int rope_dim, int cache_len, int pairs,
                          float rope_scale, float eps);
int pf_cuda_latent_attend(pf_cuda_rank *st, float *out, float *q, const void *cache, int cache_dtype, const void *kv_b,
                          int kv_b_dtype, const float *inv_freq, const int *pad, const int *rows, int batch, int T,
                          int past, const int *past_at, int heads, int head_dim, int rope_dim, int v_head_dim,
                          int latent_rank, int cache_len, int window, float scale, int pairs, float rope_scale);
int pf_cuda_disentangled_bias(pf_cuda_rank *st, float *out, const float *qkv, const float *rel_qkv, int batch, int T,
                              int heads, int kv_heads, int head_dim, int head_begin, int kv_begin, int kv_group, int c2p,
                              int p2c, int position_buckets, int max_relative_positions, int span, int rel_width,
                              float scale); /* rel_width: rel_qkv's row (q | k | v, or q | k) */
/* ProphetNet's n-gram self-attention of one stream (pf__backend.ngram_attend's math): rows n = b * T + t
   of qkv [(heads + 2 kv_heads) * head_dim] and rel [rel_width]; head h's bias of distance d at
   rel[n][buckets[d] * rel_heads + head_begin + h]; buckets [cache_len + 1], pads ([batch] or NULL),
   cache rows ([batch] or NULL: b) and the step's past (past_at[0]) on the device; past checked here. */
int pf_cuda_ngram_attend(pf_cuda_rank *st, float *out, const float *qkv, const float *rel, int rel_heads, int rel_width,
                         const int32_t *buckets, const void *k_cache, const void *v_cache, int cache_dtype, const int *pad,
                         const int *rows, int batch, int T, int past, const int *past_at, int heads, int kv_heads,
                         int head_dim, int head_begin, int kv_begin, int kv_group, int cache_len, float scale,
                         int predict);
int pf_cuda_reorder_rows(pf_cuda_rank *st, void *cache, void *scratch, const int *dst, const int *src, int count,
                         size_t row_bytes, size_t used_bytes);
int pf_cuda_nccl_create(int n, const int *devices, void **comms, char *message, size_t size);
/* Communicators across processes (bootstrapped over MPI by the C side): process 0 makes the id
   (ncclGetUniqueId), every process receives it, and each makes its n ranks' communicators (device
   devices[i], rank first_rank + i of world_size) together. The other processes' ranks must join
   within timeout_ms (0 or less: no bound), and their all-reduces (pf_cuda_nccl_all_reduce) too. */
#define PF_CUDA_NCCL_ID_BYTES 128
int pf_cuda_nccl_unique_id(unsigned char *id, char *message, size_t size);
int pf_cuda_nccl_create_world(int n, const int *devices, int world_size, int first_rank, const unsigned char *id,
                              int timeout_ms, void **comms, char *message, size_t size);
void pf_cuda_nccl_destroy(void *comm);
void pf_cuda_nccl_abort(void *comm);
int pf_cuda_nccl_async_error(void *comm, char *message, size_t size);
int pf_cuda_nccl_all_reduce(pf_cuda_rank *st, void *comm, float *x, size_t count);
int pf_cuda_graph_begin(pf_cuda_rank *st);
int pf_cuda_graph_end(pf_cuda_rank *st, void **graph);
int pf_cuda_graph_launch(pf_cuda_rank *st, void *graph);
void pf_cuda_graph_destroy(void *graph);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PF_CUDA_ABI_H */
/* ==== end src/cuda_abi.h ==== */

/* Attention: keys are scored PF_CHUNK at a time by a block of PF_ATTN_THREADS (4 warps), with an
   online softmax across chunks; decode splits the keys over at most PF_MAX_SPLITS blocks per
   head and combines their partial sums. */
#define PF_CHUNK 32
#define PF_ATTN_THREADS 128
#define PF_MAX_SPLITS 32
#define PF_THREADS 256

struct pf_cuda_rank {
    int device;
    cudaStream_t stream;
    cublasHandle_t blas;
    char message[256];
#ifdef PF_CUDA_NEXT_KERNELS
    unsigned *counters; /* PF_DECODE_COUNTERS zeros: pf_decode_attention_kernel's, per (row, head) */
#endif
};

/* ---- errors ---------------------------------------------------------------------------------- */

static int pf_cuda__fail(char *message, size_t size, int code, const char *call, const char *what, int line) {
    if (message && size) snprintf(message, size, "%s failed: %s (kernels.cu:%d)", call, what, line);
    return code;
}

static int pf_cuda__code(cudaError_t e) {
    return e == cudaErrorMemoryAllocation ? PF_CUDA_ERROR_OUT_OF_MEMORY : PF_CUDA_ERROR_DEVICE;
}

/* Each macro returns from the enclosing function with the failure; `st` is the pf_cuda_rank. */
#define PF_CUDA_CHECK(st, fn, args)                                                                  \
    do {                                                                                            \
        cudaError_t e_ = fn args;                                                                   \
        if (e_ != cudaSuccess)                                                                      \
            return pf_cuda__fail((st)->message, sizeof (st)->message, pf_cuda__code(e_), #fn,      \
                                 cudaGetErrorString(e_), __LINE__);                                 \
    } while (0)

#define PF_CUDA_CHECK_LAUNCH(st, kernel)                                                             \
    do {                                                                                            \
        cudaError_t e_ = cudaGetLastError();                                                        \
        if (e_ != cudaSuccess)                                                                      \
            return pf_cuda__fail((st)->message, sizeof (st)->message, pf_cuda__code(e_),           \
                                 "launch of " #kernel, cudaGetErrorString(e_), __LINE__);           \
    } while (0)

#define PF_CUBLAS_CHECK(st, fn, args)                                                                \
    do {                                                                                            \
        cublasStatus_t s_ = fn args;                                                                \
        if (s_ != CUBLAS_STATUS_SUCCESS)                                                            \
            return pf_cuda__fail((st)->message, sizeof (st)->message,                               \
                                 s_ == CUBLAS_STATUS_ALLOC_FAILED ? PF_CUDA_ERROR_OUT_OF_MEMORY     \
                                                                  : PF_CUDA_ERROR_DEVICE,           \
                                 #fn, cublasGetStatusString(s_), __LINE__);                         \
    } while (0)

#define PF_NCCL_CHECK(st, fn, args)                                                                  \
    do {                                                                                            \
        ncclResult_t n_ = fn args;                                                                  \
        if (n_ != ncclSuccess)                                                                      \
            return pf_cuda__fail((st)->message, sizeof (st)->message, PF_CUDA_ERROR_DEVICE, #fn,   \
                                 ncclGetErrorString(n_), __LINE__);                                 \
    } while (0)

/* ---- device helpers -------------------------------------------------------------------------- */

/* Element i of a weight stored as fp32, fp16 or bf16, as fp32; 0 for an absent (NULL) weight. */
__device__ __forceinline__ float pf_load(const void *p, int dtype, size_t i) {
    if (!p) return 0.0f;
    if (dtype == PF_CUDA_F16) return __half2float(((const __half *)p)[i]);
    if (dtype == PF_CUDA_BF16) return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
    return ((const float *)p)[i];
}

/* The KV cache's element types: fp32, or the 16-bit weights' dtype (rounded to nearest on store). */
__device__ __forceinline__ float pf_cache_load(const float *p, size_t i) { return p[i]; }
__device__ __forceinline__ float pf_cache_load(const __half *p, size_t i) { return __half2float(p[i]); }
__device__ __forceinline__ float pf_cache_load(const __nv_bfloat16 *p, size_t i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ void pf_cache_store(float *p, size_t i, float v) { p[i] = v; }
__device__ __forceinline__ void pf_cache_store(__half *p, size_t i, float v) { p[i] = __float2half_rn(v); }
__device__ __forceinline__ void pf_cache_store(__nv_bfloat16 *p, size_t i, float v) { p[i] = __float2bfloat16_rn(v); }

/* p[i] = v rounded to nearest in dtype (PF_CUDA_F16 or _BF16), as the GEMM input's conversion
   rounds it; nothing when p is NULL. Kernels whose output a GEMM reads next write this copy. */
__device__ __forceinline__ void pf_store16(void *p, int dtype, size_t i, float v) {
    if (!p) return;
    if (dtype == PF_CUDA_F16) ((__half *)p)[i] = __float2half_rn(v);
    else ((__nv_bfloat16 *)p)[i] = __float2bfloat16_rn(v);
}

__device__ __forceinline__ float pf_warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float pf_warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* Block-wide sum and max (blockDim.x a multiple of 32); every thread gets the same value, summed
   in the same order. red holds 32 floats of shared memory. */
__device__ float pf_block_sum(float v, float *red) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    v = pf_warp_sum(v);
    __syncthreads(); /* red may still be read by a previous call */
    if (lane == 0) red[warp] = v;
    __syncthreads();
    float total = 0.0f;
    for (int w = 0; w < warps; w++) total += red[w];
    return total;
}

__device__ float pf_block_max(float v, float *red) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    v = pf_warp_max(v);
    __syncthreads();
    if (lane == 0) red[warp] = v;
    __syncthreads();
    float best = -INFINITY;
    for (int w = 0; w < warps; w++) best = fmaxf(best, red[w]);
    return best;
}

static unsigned pf_blocks(size_t n, unsigned threads) {
    size_t blocks = (n + threads - 1) / threads;
    if (blocks > (1u << 20)) blocks = 1u << 20; /* the kernels loop over the rest */
    return blocks ? (unsigned)blocks : 1u;
}

#define PF_GRID_STRIDE(i, n)                                                                         \
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)

/* ---- kernels --------------------------------------------------------------------------------- */

__device__ __forceinline__ float pf_act(float v, int act) {
    switch (act) {
    case PF_CUDA_GELU_TANH: return 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
    case PF_CUDA_GELU_ERF: return 0.5f * v * (1.0f + erff(v * 0.7071067811865476f));
    case PF_CUDA_RELU: return v > 0.0f ? v : 0.0f;
    case PF_CUDA_SILU: return v / (1.0f + expf(-v));
    case PF_CUDA_TANH: return tanhf(v);
    case PF_CUDA_QUICK_GELU: return v / (1.0f + expf(-1.702f * v));
    default: return v;
    }
}

/* out[row][c] = tokens[ids[row]][c] * scale */
/* Rows of the table are the rank's vocabulary from `first`; other ids give zeros (another rank
   holds them; the embedding is summed over ranks). */
__global__ void pf_embed_kernel(float *out, const void *tokens, int dtype, const int32_t *ids, size_t rows, size_t d,
                                float scale, int first, size_t table_rows) {
    PF_GRID_STRIDE(i, rows * d) {
        size_t row = i / d, c = i % d, id = (size_t)(ids[row] - first); /* wraps below first */
        out[i] = id < table_rows ? pf_load(tokens, dtype, id * d + c) * scale : 0.0f;
    }
}

/* The position of token t of sequence b in a step: past + t less the sequence's left pads
   (pad: device [batch] or NULL), never below 0 (a pad's own position). */
__device__ __forceinline__ int pf_position(const int *pad, int b, int past, int t) {
    int position = past + t - (pad ? pad[b] : 0);
    return position > 0 ? position : 0;
}

/* x[b*T+t][c] += table[offset + position(b, t)][c]; past_at: device [1], the step's past (read on
   the device, so that a captured graph replays with each step's own) */
__global__ void pf_add_positions_kernel(float *x, const void *table, int dtype, const int *pad, size_t rows, int T,
                                        const int *past_at, size_t offset, size_t d) {
    const int past = *past_at;
    PF_GRID_STRIDE(i, rows * d) {
        size_t row = i / d, c = i % d;
        int b = (int)(row / (size_t)T), t = (int)(row % (size_t)T);
        x[i] += pf_load(table, dtype, (offset + (size_t)pf_position(pad, b, past, t)) * d + c);
    }
}

/* One row of a norm, by one block, all in fp32. LayerNorm: (x - mean) / sqrt(var + eps) * w + b;
   RMSNorm (rms 1): mean 0, x / sqrt(mean(x^2) + eps) * w + b; rms 2: the same with the gain 1 + w
   (Gemma's, added in fp32). An absent weight is 1, an absent
   bias 0. o may be xr: every thread reads xr[i] for the sums before any writes it (the block
   sums' barriers), then reads and writes only its own elements. o16 (or NULL): the same values
   rounded to nearest in o16_dtype (fp16/bf16), the next GEMM's input, so that it needs no
   conversion launch. red: 32 floats of shared memory. */
__device__ void pf_norm_row(float *o, const float *xr, const void *w, int w_dtype, const void *b, int b_dtype, size_t n,
                            float eps, int rms, void *o16, int o16_dtype, float *red) {
    float mean = 0.0f;
    if (!rms) {
        float s = 0.0f;
        for (size_t i = threadIdx.x; i < n; i += blockDim.x) s += xr[i];
        mean = pf_block_sum(s, red) / (float)n;
    }
    float v = 0.0f;
    for (size_t i = threadIdx.x; i < n; i += blockDim.x) {
        float dx = xr[i] - mean;
        v += dx * dx;
    }
    float var = pf_block_sum(v, red) / (float)n;
    float inv = 1.0f / sqrtf(var + eps);
    for (size_t i = threadIdx.x; i < n; i += blockDim.x) {
        float y = (xr[i] - mean) * inv * (w ? pf_load(w, w_dtype, i) + (rms == 2 ? 1.0f : 0.0f) : 1.0f) +
                  pf_load(b, b_dtype, i);
        o[i] = y;
        pf_store16(o16, o16_dtype, i, y);
    }
}

/* MobileBERT's NoNorm (rms 3), elementwise over rows * n values: x += y + bias where add (y, bias
   may be NULL), then out = x * w + b (absent weight 1, absent bias 0), out16 as pf_norm_row's. */
__global__ void pf_elementwise_norm_kernel(float *x, const float *y, const void *bias, int bias_dtype, int add, float *out,
                                           const void *w, int w_dtype, const void *b, int b_dtype, size_t rows, size_t n,
                                           void *out16, int out16_dtype) {
    PF_GRID_STRIDE(i, rows * n) {
        size_t col = i % n;
        float v = x[i];
        if (add) {
            v += (y ? y[i] : 0.0f) + pf_load(bias, bias_dtype, col);
            x[i] = v;
        }
        float o = v * (w ? pf_load(w, w_dtype, col) : 1.0f) + pf_load(b, b_dtype, col);
        out[i] = o;
        pf_store16(out16, out16_dtype, i, o);
    }
}

/* One block per row: out = norm(x) (pf_norm_row); out16 [rows][n] 2-byte values, or NULL. */
__global__ void pf_norm_kernel(float *out, const float *x, const void *w, int w_dtype, const void *b, int b_dtype,
                               size_t n, float eps, int rms, void *out16, int out16_dtype) {
    __shared__ float red[32];
    size_t row = (size_t)blockIdx.x * n;
    pf_norm_row(out + row, x + row, w, w_dtype, b, b_dtype, n, eps, rms, out16 ? (char *)out16 + 2 * row : NULL,
                out16_dtype, red);
}

/* One block per row: x += y + bias (as pf_add_residual_kernel adds them), then out = norm(x)
   (pf_norm_row) on the updated row, in one launch instead of two. Each thread adds to the same
   elements the norm's loops give it, so no barrier is needed before the norm's sums read them.
   y, bias (in bias_dtype) may be NULL; out may be x. */
__global__ void pf_add_residual_norm_kernel(float *x, const float *y, const void *bias, int bias_dtype, float *out,
                                            const void *w, int w_dtype, const void *b, int b_dtype, size_t n, float eps,
                                            int rms, void *out16, int out16_dtype) {
    __shared__ float red[32];
    size_t row = (size_t)blockIdx.x * n;
    float *xr = x + row;
    for (size_t i = threadIdx.x; i < n; i += blockDim.x) xr[i] += (y ? y[row + i] : 0.0f) + pf_load(bias, bias_dtype, i);
    pf_norm_row(out + row, xr, w, w_dtype, b, b_dtype, n, eps, rms, out16 ? (char *)out16 + 2 * row : NULL, out16_dtype,
                red);
}

/* x[i] = min(max(x[i], -limit), limit), as torch's clamp_(min=-limit, max=limit) (OLMo's clip_qkv). */
__global__ void pf_clamp_kernel(float *x, size_t count, float limit) {
    PF_GRID_STRIDE(i, count) x[i] = fminf(fmaxf(x[i], -limit), limit);
}

/* One block per row of qkv (width wide): sums[row] = {the sum of squares of its first q values, of
   its k_len values from q + k_first}, each a strided per-thread sum then pf_block_sum. */
__global__ void pf_qk_sum_squares_kernel(float *sums, const float *qkv, size_t q, size_t k_first, size_t k_len,
                                         size_t width) {
    __shared__ float red[32];
    size_t row = blockIdx.x;
    const float *xr = qkv + row * width;
    float s = 0.0f;
    for (size_t i = threadIdx.x; i < q; i += blockDim.x) s += xr[i] * xr[i];
    float sq = pf_block_sum(s, red);
    s = 0.0f;
    for (size_t i = threadIdx.x; i < k_len; i += blockDim.x) s += xr[q + k_first + i] * xr[q + k_first + i];
    float sk = pf_block_sum(s, red);
    if (threadIdx.x == 0) sums[2 * row] = sq, sums[2 * row + 1] = sk;
}

/* Each q value (the first q of a row of width) times its gain after 1 / sqrt(sums[row][0] /
   q_width + eps), each k value (the kv after them) likewise with sums[row][1]; a side whose gain is
   NULL is left as it is. */
__global__ void pf_qk_scale_kernel(float *qkv, const float *sums, const void *qw, int q_dtype, const void *kw,
                                   int k_dtype, size_t rows, size_t q, size_t kv, size_t width, float q_width,
                                   float k_width, float eps) {
    PF_GRID_STRIDE(e, rows * (q + kv)) {
        size_t row = e / (q + kv), i = e % (q + kv);
        int is_q = i < q;
        const void *w = is_q ? qw : kw;
        if (!w) continue;
        float inv = 1.0f / sqrtf(sums[2 * row + (is_q ? 0 : 1)] / (is_q ? q_width : k_width) + eps);
        float *x = qkv + row * width + i;
        *x = pf_load(w, is_q ? q_dtype : k_dtype, is_q ? i : i - q) * (*x * inv);
    }
}

/* One block per head of a qkv row: q heads 0..heads-1, then k heads (rows [q | k | v] of width
   `width`), normed in place over head_dim (pf_norm_row) with the side's gain [head_dim]; a side
   whose gain is NULL is left as it is. */
__global__ void pf_head_norm_kernel(float *qkv, const void *q_w, int q_dtype, const void *k_w, int k_dtype,
                                    const void *q_b, int qb_dtype, const void *k_b, int kb_dtype, int heads,
                                    int kv_heads, int head_dim, size_t width, float eps, int rms, int per_head) {
    __shared__ float red[32];
    size_t row = blockIdx.x / (unsigned)(heads + kv_heads);
    int h = (int)(blockIdx.x % (unsigned)(heads + kv_heads));
    const void *w = h < heads ? q_w : k_w;
    int dtype = h < heads ? q_dtype : k_dtype;
    if (!w) return; /* the whole block alike */
    if (per_head) /* this head's own gain: row h (of its side) of [heads][head_dim] */
        w = (const char *)w + (size_t)(h < heads ? h : h - heads) * head_dim * (dtype == PF_CUDA_F32 ? 4 : 2);
    float *xr = qkv + row * width + (size_t)h * head_dim;
    pf_norm_row(xr, xr, w, dtype, h < heads ? q_b : k_b, h < heads ? qb_dtype : kb_dtype, (size_t)head_dim, eps, rms,
                NULL, PF_CUDA_F32, red);
}

#ifdef PF_CUDA_NEXT_KERNELS
/* pf_add_residual_norm_kernel with the row in registers (n <= blockDim.x * PF_NORM_REGS): the
   residual sum is read from global memory once instead of once per pass (4 dependent rounds of
   loads become 1; a decode step's row is one block, so their latency was the kernel's time).
   Each thread takes the elements and sums in the order pf_norm_row gives it, so the results are
   that kernel's. */
#define PF_NORM_REGS 16

__global__ void pf_add_residual_norm_regs_kernel(float *x, const float *y, const void *bias, int bias_dtype, float *out,
                                                 const void *w, int w_dtype, const void *b, int b_dtype, size_t n,
                                                 float eps, int rms, void *out16, int out16_dtype) {
    __shared__ float red[32];
    size_t row = (size_t)blockIdx.x * n;
    float *xr = x + row, *o = out + row;
    void *o16 = out16 ? (char *)out16 + 2 * row : NULL;
    float xv[PF_NORM_REGS];
#pragma unroll
    for (int k = 0; k < PF_NORM_REGS; k++) {
        size_t i = threadIdx.x + (size_t)k * blockDim.x;
        xv[k] = i < n ? xr[i] + ((y ? y[row + i] : 0.0f) + pf_load(bias, bias_dtype, i)) : 0.0f;
    }
#pragma unroll
    for (int k = 0; k < PF_NORM_REGS; k++) {
        size_t i = threadIdx.x + (size_t)k * blockDim.x;
        if (i < n) xr[i] = xv[k];
    }
    float mean = 0.0f;
    if (!rms) {
        float s = 0.0f;
#pragma unroll
        for (int k = 0; k < PF_NORM_REGS; k++)
            if (threadIdx.x + (size_t)k * blockDim.x < n) s += xv[k];
        mean = pf_block_sum(s, red) / (float)n;
    }
    float v = 0.0f;
#pragma unroll
    for (int k = 0; k < PF_NORM_REGS; k++) {
        if (threadIdx.x + (size_t)k * blockDim.x < n) {
            float dx = xv[k] - mean;
            v += dx * dx;
        }
    }
    float var = pf_block_sum(v, red) / (float)n;
    float inv = 1.0f / sqrtf(var + eps);
#pragma unroll
    for (int k = 0; k < PF_NORM_REGS; k++) {
        size_t i = threadIdx.x + (size_t)k * blockDim.x;
        if (i < n) {
            float yv = (xv[k] - mean) * inv * (w ? pf_load(w, w_dtype, i) + (rms == 2 ? 1.0f : 0.0f) : 1.0f) +
                       pf_load(b, b_dtype, i);
            o[i] = yv;
            pf_store16(o16, out16_dtype, i, yv);
        }
    }
}
#endif

/* dst (fp16 or bf16) = src (fp32), round to nearest even. */
__global__ void pf_convert_kernel(void *dst, const float *src, size_t n, int dtype) {
    PF_GRID_STRIDE(i, n) {
        if (dtype == PF_CUDA_F16) ((__half *)dst)[i] = __float2half_rn(src[i]);
        else ((__nv_bfloat16 *)dst)[i] = __float2bfloat16_rn(src[i]);
    }
}

/* out[row][o] += bias[o] */
__global__ void pf_add_bias_kernel(float *out, const void *bias, int dtype, size_t rows, size_t n) {
    PF_GRID_STRIDE(i, rows * n) out[i] += pf_load(bias, dtype, i % n);
}

/* x[row][c] = act(x[row][c] + bias[c]): pf_add_bias_kernel's sum and pf_activation_kernel's
   function in one pass, for a GEMM whose bias is folded in here instead of a launch of its own. */
/* The activations also write x16 (or NULL), the rounding of their output, when the next GEMM
   reads it (pf_store16). */
__global__ void pf_bias_activation_kernel(float *x, const void *bias, int dtype, size_t rows, size_t n, int act,
                                          void *x16, int x16_dtype) {
    PF_GRID_STRIDE(i, rows * n) {
        float v = x[i];
        v += pf_load(bias, dtype, i % n);
        x[i] = pf_act(v, act);
        pf_store16(x16, x16_dtype, i, x[i]);
    }
}

__global__ void pf_activation_kernel(float *x, size_t count, int act, void *x16, int x16_dtype) {
    PF_GRID_STRIDE(i, count) {
        x[i] = pf_act(x[i], act);
        pf_store16(x16, x16_dtype, i, x[i]);
    }
}

/* x = tanh(x / cap) * cap elementwise: soft-capped logits (Gemma 2). */
__global__ void pf_softcap_kernel(float *x, size_t count, float cap) {
    PF_GRID_STRIDE(i, count) x[i] = tanhf(x[i] / cap) * cap;
}

/* out[row][i] = act(in[row][i]) * in[row][width + i]; in rows are 2 * width wide. */
__global__ void pf_gated_activation_kernel(float *out, const float *in, size_t rows, size_t width, int act,
                                           void *out16, int out16_dtype) {
    PF_GRID_STRIDE(k, rows * width) {
        size_t row = k / width, i = k % width;
        const float *r = in + row * 2 * width;
        out[k] = pf_act(r[i], act) * r[width + i];
        pf_store16(out16, out16_dtype, k, out[k]);
    }
}

/* out[row][i] = (clamp(up, -limit, limit) + 1) * g * sigmoid(alpha g), g = min(gate, limit), gate =
   in[row][i], up = in[row][width + i]: gpt-oss's experts. */
__global__ void pf_clamped_swiglu_kernel(float *out, const float *in, size_t rows, size_t width, float alpha, float limit) {
    PF_GRID_STRIDE(k, rows * width) {
        size_t row = k / width, i = k % width;
        const float *r = in + row * 2 * width;
        float gate = fminf(r[i], limit), up = fminf(fmaxf(r[width + i], -limit), limit);
        out[k] = (up + 1.0f) * (gate / (1.0f + expf(-gate * alpha)));
    }
}

/* x[row][c] += y[row][c] + bias[c]; y or bias may be NULL (0). */
__global__ void pf_add_residual_kernel(float *x, const float *y, const void *bias, int dtype, size_t rows, size_t n) {
    PF_GRID_STRIDE(i, rows * n) x[i] += (y ? y[i] : 0.0f) + pf_load(bias, dtype, i % n);
}

/* pf_add_residual_kernel's sum, then x += bias2 as a second launch of it would add it: a parallel
   block's two output biases (attention's, MLP's) in one pass. */
__global__ void pf_add_residual_biases_kernel(float *x, const float *y, const void *bias, int dtype, const void *bias2,
                                              int dtype2, size_t rows, size_t n) {
    PF_GRID_STRIDE(i, rows * n) {
        float v = x[i] + ((y ? y[i] : 0.0f) + pf_load(bias, dtype, i % n));
        x[i] = v + (0.0f + pf_load(bias2, dtype2, i % n));
    }
}

/* sum = in (first) or sum += in */
__global__ void pf_scale_kernel(float *x, size_t n, float factor) {
    PF_GRID_STRIDE(i, n) x[i] = __fmul_rn(x[i], factor);
}

__global__ void pf_gather_rows_kernel(float *dst, const float *src, const int32_t *rows, const float *scales, size_t count,
                                      size_t width) {
    PF_GRID_STRIDE(i, count * width) {
        float x = src[(size_t)rows[i / width] * width + i % width];
        dst[i] = scales ? __fmul_rn(scales[i / width], x) : x;
    }
}

/* ConvBERT's depthwise convolution, one thread per output: out[n][c] = sum over j < k (in order) of
   w[c k + j] x[n + j - (k - 1) / 2][c] over the sequence's real tokens (t >= pad[b], t < T); a pad's
   row 0. */
__global__ void pf_depthwise_conv_kernel(float *out, const float *x, const void *w, int dtype, const int *pad, int T,
                                         size_t rows, size_t width, int k) {
    PF_GRID_STRIDE(i, rows * width) {
        size_t n = i / width, c = i % width;
        int t = (int)(n % (size_t)T), first = pad ? pad[n / (size_t)T] : 0, half = (k - 1) / 2;
        float acc = 0.0f;
        for (int j = 0; t >= first && j < k; j++) {
            int at = t + j - half;
            if (at >= first && at < T)
                acc = __fadd_rn(acc, __fmul_rn(pf_load(w, dtype, c * (size_t)k + j), x[(n - t + at) * width + c]));
        }
        out[i] = acc;
    }
}

/* x[row][i] *= y[row * y_stride + i] */
__global__ void pf_multiply_kernel(float *x, const float *y, size_t y_stride, size_t rows, size_t n) {
    PF_GRID_STRIDE(i, rows * n) x[i] = __fmul_rn(x[i], y[i / n * y_stride + i % n]);
}

/* ConvBERT's span convolution, one thread per output: p = softmax over j < k of the head's logits
   (the max subtracted, the sum in order), out[n][h d + i] = sum over j (in order) of p[j] v[n + j -
   (k - 1) / 2][h d + i] over the sequence's real tokens; a pad's row 0. */
__global__ void pf_span_conv_kernel(float *out, const float *logits, size_t logits_stride, const float *v, const int *pad,
                                    int T, size_t rows, int heads, int head_dim, int k) {
    size_t width = (size_t)heads * head_dim;
    PF_GRID_STRIDE(i, rows * width) {
        size_t n = i / width, col = i % width;
        int t = (int)(n % (size_t)T), first = pad ? pad[n / (size_t)T] : 0, half = (k - 1) / 2;
        const float *l = logits + n * logits_stride + col / head_dim * k;
        float most = l[0], sum = 0.0f, acc = 0.0f;
        for (int j = 1; j < k; j++) most = fmaxf(most, l[j]);
        for (int j = 0; j < k; j++) sum = __fadd_rn(sum, expf(l[j] - most));
        for (int j = 0; t >= first && j < k; j++) {
            int at = t + j - half;
            if (at >= first && at < T)
                acc = __fadd_rn(acc, __fmul_rn(__fdiv_rn(expf(l[j] - most), sum), v[(n - t + at) * width + col]));
        }
        out[i] = acc;
    }
}

/* Reformer's score of query qh against a listed key (position * 4 + code): q . key over
   sqrt(head_dim), the key length-normalised for LSH; -1e9 masked, -1e5 the query's own. */
__device__ float pf_reformer_score(const float *qh, const float *k, int32_t entry, size_t width, int h, int hd,
                                   int shared_qk) {
    int code = entry & 3;
    if (code == 1) return -1e9f;
    if (code == 2) return -1e5f;
    const float *kh = k + (size_t)(entry >> 2) * width + (size_t)h * hd;
    float inv = 1.0f, root = sqrtf((float)hd), dot = 0.0f;
    if (shared_qk) {
        float squares = 0.0f;
        for (int e = 0; e < hd; e++) squares += kh[e] * kh[e];
        inv = 1.0f / sqrtf(squares / (float)hd + 1e-6f);
    }
    for (int e = 0; e < hd; e++) dot += qh[e] * (kh[e] * inv / root);
    return dot;
}

/* Reformer's attention, one thread per (position, head): each round's softmax over its listed
   keys, the rounds weighed by their log-sum-exps (pf__backend.reformer_attend). */
__global__ void pf_reformer_attend_kernel(float *out, const float *q, const float *k, const float *v, const int32_t *keys,
                                          int len, int heads, int hd, int rounds, int listed, int shared_qk) {
    size_t total = (size_t)len * heads, width = (size_t)heads * hd, K = (size_t)listed;
    PF_GRID_STRIDE(n, total) {
        int h = (int)(n % (size_t)heads), t = (int)(n / (size_t)heads);
        const float *qh = q + (size_t)t * width + (size_t)h * hd;
        float *o = out + (size_t)t * width + (size_t)h * hd;
        const int32_t *all = keys + ((size_t)h * len + t) * rounds * K;
        float lse[64], top_all = -INFINITY; /* rounds <= 64 (config.c) */
        for (int r = 0; r < rounds; r++) {
            const int32_t *row = all + (size_t)r * K;
            float top = -INFINITY, sum = 0.0f;
            for (size_t j = 0; j < K; j++) top = fmaxf(top, pf_reformer_score(qh, k, row[j], width, h, hd, shared_qk));
            for (size_t j = 0; j < K; j++) sum += expf(pf_reformer_score(qh, k, row[j], width, h, hd, shared_qk) - top);
            lse[r] = top + logf(sum);
            top_all = fmaxf(top_all, lse[r]);
        }
        float total_lse = 0.0f;
        for (int r = 0; r < rounds; r++) total_lse += expf(lse[r] - top_all);
        total_lse = rounds == 1 ? lse[0] : top_all + logf(total_lse);
        for (int e = 0; e < hd; e++) o[e] = 0.0f;
        for (int r = 0; r < rounds; r++) {
            const int32_t *row = all + (size_t)r * K;
            float weight = expf(lse[r] - total_lse);
            for (size_t j = 0; j < K; j++) {
                float p = expf(pf_reformer_score(qh, k, row[j], width, h, hd, shared_qk) - lse[r]) * weight;
                const float *vh = v + (size_t)(row[j] >> 2) * width + (size_t)h * hd;
                for (int e = 0; e < hd; e++) o[e] += p * vh[e];
            }
        }
    }
}

/* Funnel's, XLNet's and Transformer-XL's relative terms, one thread per (query row, head, key): scale
   * cls * ((q + pos_bias) . rel[row] + (q + type_bias) . seg[segment's row]; seg NULL: none), 0 for
   a pad on either side, -inf for a later key when causal or one window or more before the query
   (pf__backend.funnel_bias). */
__global__ void pf_funnel_bias_kernel(float *out, const float *q, const float *rel, const void *pos_bias, int pos_dtype,
                                      const void *type_bias, int type_dtype, const void *seg, int seg_dtype,
                                      const int32_t *ints, int batch, int q_len, int k_len, int heads, int hd, int q_first,
                                      int q_stride, int k_first, int k_stride, int rel_first, int separate_cls, int exact_segments,
                                      int causal, int window, float scale) {
    size_t total = (size_t)batch * q_len * heads * k_len;
    const int32_t *q_pad = ints, *k_pad = ints + batch, *q_types = ints + 2 * batch, *k_types = q_types + (size_t)batch * q_len;
    PF_GRID_STRIDE(e, total) {
        int j = (int)(e % (size_t)k_len), h = (int)(e / (size_t)k_len % (size_t)heads);
        size_t n = e / ((size_t)k_len * heads);
        int b = (int)(n / (size_t)q_len), qi = (int)(n % (size_t)q_len) - q_pad[b], kj = j - k_pad[b];
        float value = 0.0f;
        int distance = q_first + qi * q_stride - k_first - kj * k_stride;
        if (qi >= 0 && kj >= 0 && ((causal && distance < 0) || (window > 0 && distance >= window))) {
            value = -INFINITY;
        } else if (qi >= 0 && kj >= 0 && !(separate_cls && (qi == 0 || kj == 0))) {
            const float *qh = q + n * (size_t)heads * hd + (size_t)h * hd;
            const float *row = rel + (size_t)((distance - rel_first) / k_stride) * heads * hd + (size_t)h * hd;
            int tq = q_types[n], tk = k_types[(size_t)b * k_len + j];
            int same = tq == tk || (!exact_segments && (tq == 2 || tk == 2));
            int seg_row = exact_segments ? !same : same; /* XLNet's row 0 the same segment's, Funnel's row 1 */
            float position = 0.0f, segment = 0.0f;
            for (int i = 0; i < hd; i++) { /* in order, as the CPU's */
                size_t at = (size_t)h * hd + i;
                position = __fadd_rn(position, __fmul_rn(__fadd_rn(qh[i], pf_load(pos_bias, pos_dtype, at)), row[i]));
            }
            for (int i = 0; seg && i < hd; i++) {
                size_t at = (size_t)h * hd + i;
                segment = __fadd_rn(segment, __fmul_rn(__fadd_rn(qh[i], pf_load(type_bias, type_dtype, at)),
                                                       pf_load(seg, seg_dtype, (size_t)seg_row * heads * hd + at)));
            }
            value = __fmul_rn(scale, seg ? __fadd_rn(position, segment) : position);
        }
        out[e] = value;
    }
}

/* one thread per element: the rows are distinct within a call, so no two threads add to one value */
__global__ void pf_scatter_add_rows_kernel(float *dst, const float *src, const int32_t *rows, const float *scales,
                                           size_t count, size_t width) {
    PF_GRID_STRIDE(i, count * width) {
        float *out = dst + (size_t)rows[i / width] * width + i % width;
        *out = __fadd_rn(*out, scales ? __fmul_rn(scales[i / width], src[i]) : src[i]);
    }
}

__global__ void pf_sum_kernel(float *sum, const float *in, size_t n, int first) {
    PF_GRID_STRIDE(i, n) sum[i] = first ? in[i] : sum[i] + in[i];
}

/* Rotates dims (i, i + half), or (2i, 2i + 1) when pairs, of the first `rotated_heads` heads of
   each row (the q heads, then the k heads) by angle position * inv_freq[i]: one thread per
   (row, head, i), so no two threads touch the same element. The angle, cosf and sinf are fp32 as
   on the CPU; the rotation is rounded step by step (no fused multiply-add), as there. The
   position is pf_position: left pads (pad, or NULL) shift it. With bias (the QKV GEMM's, in
   bias_dtype, which the GEMM left out) every element of the rows gets it first, as the GEMM's
   epilogue would have added it: each pair before its rotation, and the elements no pair covers
   (q and k dims from 2 half on, and v) by threads of their own after the pairs' (pf_unrotated). */
__device__ __forceinline__ size_t pf_unrotated(size_t j, int rotated_heads, int hd, int half) {
    size_t tail = (size_t)(hd - 2 * half), heads_part = (size_t)rotated_heads * tail;
    if (j < heads_part) return j / tail * (size_t)hd + (size_t)(2 * half) + j % tail;
    return (size_t)rotated_heads * hd + (j - heads_part);
}

__global__ void pf_rotary_kernel(float *qkv, const void *bias, int bias_dtype, const float *inv_freq, const int *pad,
                                 size_t rows, int T, const int *past_at, int rotated_heads, int hd, size_t row_width,
                                 int half, int pairs, float scale) {
    const int past = *past_at;
    size_t n = rows * (size_t)rotated_heads * (size_t)half;
    size_t unrotated = bias ? row_width - (size_t)rotated_heads * (size_t)(2 * half) : 0; /* a row's */
    PF_GRID_STRIDE(k, n + rows * unrotated) {
        if (k >= n) {
            size_t row = (k - n) / unrotated, c = pf_unrotated((k - n) % unrotated, rotated_heads, hd, half);
            qkv[row * row_width + c] = __fadd_rn(qkv[row * row_width + c], pf_load(bias, bias_dtype, c));
            continue;
        }
        int i = (int)(k % (size_t)half);
        size_t rest = k / (size_t)half;
        int h = (int)(rest % (size_t)rotated_heads);
        size_t row = rest / (size_t)rotated_heads;
        int b = (int)(row / (size_t)T), t = (int)(row % (size_t)T);
        float pos = (float)pf_position(pad, b, past, t);
        float angle = __fmul_rn(pos, inv_freq[i]);
        float c = __fmul_rn(cosf(angle), scale), sn = __fmul_rn(sinf(angle), scale);
        float *x = qkv + row * row_width + (size_t)h * hd;
        int i1 = pairs ? 2 * i : i, i2 = pairs ? i1 + 1 : i + half;
        float x1 = x[i1], x2 = x[i2];
        if (bias) {
            x1 = __fadd_rn(x1, pf_load(bias, bias_dtype, (size_t)h * hd + i1));
            x2 = __fadd_rn(x2, pf_load(bias, bias_dtype, (size_t)h * hd + i2));
        }
        x[i1] = __fsub_rn(__fmul_rn(x1, c), __fmul_rn(x2, sn));
        x[i2] = __fadd_rn(__fmul_rn(x2, c), __fmul_rn(x1, sn));
    }
}

/* Appends this step's k and v rows to the caches [batch][cache_len][kv_width] at positions
   past..past+T-1. Each qkv row is [q (q_width) | k (kv_width) | v (kv_width)]. With bias (the
   QKV GEMM's, which it left out) the rows get it first, in place, as the GEMM would have added
   it: k and v by the threads that append them, q by threads of their own after theirs. */
template <typename C>
__global__ void pf_kv_append_kernel(C *k_cache, C *v_cache, float *qkv, const void *bias, int bias_dtype,
                                    const int *rows, int batch, int T, const int *past_at, int cache_len,
                                    size_t q_width, size_t kv_width) {
    const int past = *past_at;
    size_t n = (size_t)batch * T * kv_width, row_width = q_width + 2 * kv_width;
    size_t q_elements = bias ? (size_t)batch * T * q_width : 0;
    PF_GRID_STRIDE(i, n + q_elements) {
        if (i >= n) {
            float *q = qkv + (i - n) / q_width * row_width + (i - n) % q_width;
            *q = __fadd_rn(*q, pf_load(bias, bias_dtype, (i - n) % q_width));
            continue;
        }
        size_t row = i / kv_width, c = i % kv_width;
        size_t b = row / (size_t)T, t = row % (size_t)T, cache_row = rows ? (size_t)rows[b] : b;
        size_t dst = (cache_row * (size_t)cache_len + (size_t)past + t) * kv_width + c;
        float *src = qkv + row * row_width + q_width;
        float k = src[c], v = src[kv_width + c];
        if (bias) {
            src[c] = k = __fadd_rn(k, pf_load(bias, bias_dtype, q_width + c));
            src[kv_width + c] = v = __fadd_rn(v, pf_load(bias, bias_dtype, q_width + kv_width + c));
        }
        pf_cache_store(k_cache, dst, k);
        pf_cache_store(v_cache, dst, v);
    }
}

/* tmp[i][c] = cache[src[i]][c] for rows rows of `used` units (4 or 2 bytes each); cache rows are
   row_units apart. */
template <typename U>
__global__ void pf_gather_rows_kernel(U *tmp, const U *cache, const int *src, size_t rows, size_t used, size_t row_units) {
    PF_GRID_STRIDE(k, rows * used) {
        size_t i = k / used, c = k % used;
        tmp[k] = cache[(size_t)src[i] * row_units + c];
    }
}

template <typename U>
__global__ void pf_scatter_rows_kernel(U *cache, const U *tmp, const int *dst, size_t rows, size_t used, size_t row_units) {
    PF_GRID_STRIDE(k, rows * used) {
        size_t i = k / used, c = k % used;
        cache[(size_t)dst[i] * row_units + c] = tmp[k];
    }
}

/* The attention of one layer as the kernels see it (pf__attn_shape plus the step). */
struct pf_attn_args {
    int T, past;        /* past: set by each kernel from *past_at (the host leaves it 0) */
    const int *past_at; /* device [1]: the step's past */
    int heads, kv_heads, hd;
    int head_begin, kv_begin, kv_group;
    int cache_len, window;
    int chunk;  /* > 0: keys of the query's chunk of positions (counted from the sequence's first) */
    int mask;   /* 0: every key of the sequence (encoders); 1: keys up to the query (decoders); 2: all
                   cache_len keys, q rows packed (cross-attention over an encoder's output) */
    int local_window;      /* > 0 (mask 0): Longformer's keys within it of the query, and the global ones */
    int global_queries;    /* 1 (mask 0): the global tokens' queries alone, the other rows untouched */
    const int32_t *global; /* [batch * T]: 1 for a token with global attention, or NULL (plain kernel only) */
    int sparse_block, sparse_random; /* > 0 (mask 0): BigBird's block-sparse attention (plain kernel only) */
    float scale;
    float softcap;      /* > 0: a scaled score s becomes tanh(s / softcap) * softcap (Gemma 2) */
    const float *alibi; /* [heads] or NULL */
    int alibi_rounded;  /* 1: Falcon's bias, bf16(slope * position) * scale */
    const float *rel_bias; /* [heads][rel_rows] or NULL: T5's bucketed relative bias */
    int rel_rows, rel_buckets, rel_max_distance;
    const float *dense_bias; /* [batch * T][heads][T (mask 2: cache_len)] or NULL: DeBERTa's, Funnel's terms (plain kernel only) */
    const void *sinks;  /* [heads] of sinks_dtype or NULL: gpt-oss's sink logits (plain kernel only) */
    int sinks_dtype;
    const int *pad;     /* [batch] left pads, or NULL */
    const int *rows;    /* [batch] the cache row of each sequence, or NULL: row b */
};

/* One block per (query row b*T+t, local q head h, key split). The query at cache index
   pos = past + t sees keys first..pos: first is the sequence's left pad count (pads are never
   keys), or pos + 1 - window when a window starts later; the split is that range cut into
   gridDim.z near-equal parts (some may be empty). q head h reads key/value head
   (head_begin + h) / kv_group - kv_begin of the cache. Scores q.k * scale + alibi[h] * (j - pad)
   are computed PF_CHUNK keys at a time (one warp per key, lanes across head_dim), with a running
   max m and sum l (online softmax); acc holds sum_j exp(s_j - m) v_j. With one split it writes
   out = acc / l (zeros for a query with no key: a pad's own); otherwise the partial (m, l, acc)
   for pf_attention_combine_kernel. Dynamic shared memory: q[hd] acc[hd] p[PF_CHUNK] red[32]. */
/* The first key the query at cache index pos sees: its sequence's first (pads are never keys),
   or a later one where a window or its chunk starts later. */
__device__ __forceinline__ int pf_first_key(const pf_attn_args &a, int pos, int pad) {
    int first = a.window > 0 && pos + 1 - a.window > pad ? pos + 1 - a.window : pad;
    if (a.chunk > 0 && pos >= pad) {
        int chunk_first = pad + (pos - pad) / a.chunk * a.chunk;
        if (chunk_first > first) first = chunk_first;
    }
    return first;
}

/* A score q.k times the scale, soft-capped where the model caps it: tanh(s / cap) * cap (Gemma 2),
   before ALiBi, the relative bias and the mask, as transformers applies it. */
__device__ __forceinline__ float pf_scaled_score(float s, const pf_attn_args &a) {
    s *= a.scale;
    return a.softcap > 0.0f ? tanhf(s / a.softcap) * a.softcap : s;
}

/* ALiBi's bias for a head's slope and a key `position` tokens after its row's first: Falcon's
   rounded to bf16 and scaled as q.k is (its bias joins the score before the scale). */
__device__ __forceinline__ float pf_alibi_bias(const pf_attn_args &a, float slope, int position) {
    float bias = slope * (float)position;
    return a.alibi_rounded ? __bfloat162float(__float2bfloat16_rn(bias)) * a.scale : bias;
}

/* T5's bucket of a relative distance (key position - query position), in fp32 as transformers
   computes it: both ways, or towards the past only (decoders). */
__device__ int pf_relative_bucket(int distance, int num_buckets, int max_distance, int bidirectional) {
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

/* BigBird's block-sparse attention in transformers' eval mode (its random blocks all block 0): how
   many times key `key` enters query `query`'s softmax in a row of `len` tokens (both counted from
   the row's first) cut into blocks of `block`; a row of at most (5 + 2 random) blocks' worth
   attends fully. src/internal.h's pf__block_sparse_count says why; this one counts alike. */
__device__ __forceinline__ int pf_block_sparse_count(int block, int random, int len, int query, int key) {
    if (len <= (5 + 2 * random) * block) return 1;
    int last = (len + block - 1) / block - 1, qb = query / block, kb = key / block;
    if (qb == 0 || qb == last) return 1;
    int near_lo = qb == 1 ? 1 : qb - 1, near_hi = qb == last - 1 ? last - 1 : qb + 1;
    return (kb >= near_lo && kb <= near_hi) + (kb == 0 ? 1 + random : 0) + (kb == last);
}

template <typename C>
__global__ void pf_attention_kernel(float *out, float *partials, const float *qkv, const C *k_cache, const C *v_cache,
                                    pf_attn_args a) {
    extern __shared__ float shared[];
    a.past = *a.past_at;
    const int hd = a.hd;
    float *q = shared, *acc = q + hd, *p = acc + hd, *red = p + PF_CHUNK;
    size_t row = blockIdx.x; /* b * T + t */
    int h = blockIdx.y, split = blockIdx.z, splits = gridDim.z;
    int b = (int)(row / (size_t)a.T), t = (int)(row % (size_t)a.T);
    if (a.global_queries && !(a.global && a.global[row])) return; /* Longformer: another pass's row */
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    size_t q_width = (size_t)a.heads * hd, kv_width = (size_t)a.kv_heads * hd;
    size_t row_width = a.mask == 2 ? q_width : q_width + 2 * kv_width;
    int pos = a.past + t, pad = a.pad ? a.pad[b] : 0;
    int last = a.mask == 1 ? pos : a.mask == 2 ? a.cache_len - 1 : a.past + a.T - 1;
    int first = pf_first_key(a, pos, pad);
    const int32_t *global_row = a.global ? a.global + (size_t)b * a.T : NULL; /* keys j of this step: past 0 */
    int len = first <= last ? last + 1 - first : 0;
    int per = (len + splits - 1) / splits;
    int begin = first + split * per, end = begin + per < last + 1 ? begin + per : last + 1;
    int kv = (a.head_begin + h) / a.kv_group - a.kv_begin;
    float slope = a.alibi ? a.alibi[h] : 0.0f;
    const float *q_row = qkv + row * row_width + (size_t)h * hd;
    size_t cache_row = a.rows ? (size_t)a.rows[b] : (size_t)b;
    const C *k_base = k_cache + cache_row * a.cache_len * kv_width + (size_t)kv * hd;
    const C *v_base = v_cache + cache_row * a.cache_len * kv_width + (size_t)kv * hd;
    for (int i = threadIdx.x; i < hd; i += blockDim.x) {
        q[i] = q_row[i];
        acc[i] = 0.0f;
    }
    __syncthreads();
    float m = -INFINITY, l = 0.0f;
    if (a.sinks && split == 0) { /* the sink: a first term exp(sink - m) without a value */
        m = pf_load(a.sinks, a.sinks_dtype, (size_t)h);
        l = 1.0f;
    }
    for (int j0 = begin; j0 < end; j0 += PF_CHUNK) {
        int n = end - j0 < PF_CHUNK ? end - j0 : PF_CHUNK;
        for (int jj = warp; jj < n; jj += warps) {
            const C *k = k_base + (size_t)(j0 + jj) * kv_width;
            float s = 0.0f;
            for (int i = lane; i < hd; i += 32) s += q[i] * pf_cache_load(k, i);
            s = pf_warp_sum(s);
            if (lane == 0) {
                p[jj] = pf_scaled_score(s, a) + pf_alibi_bias(a, slope, j0 + jj - pad);
                if (a.rel_bias)
                    p[jj] += a.rel_bias[(size_t)h * a.rel_rows + pf_relative_bucket(j0 + jj - pos, a.rel_buckets, a.rel_max_distance, a.mask != 1)];
                if (a.dense_bias) /* over the step's keys, or cache_len's (mask 2) */
                    p[jj] += a.dense_bias[((size_t)blockIdx.x * a.heads + h) * (a.mask == 2 ? a.cache_len : a.T) + j0 + jj];
                int key = j0 + jj, distance = key > pos ? key - pos : pos - key;
                if (a.local_window > 0 && distance > a.local_window && !(global_row && global_row[key]))
                    p[jj] = -INFINITY; /* Longformer: neither in the window nor global */
                if (a.sparse_block > 0) { /* BigBird: score + log(times), or no key at all */
                    int times = pf_block_sparse_count(a.sparse_block, a.sparse_random, a.past + a.T - pad, pos - pad,
                                                      key - pad);
                    if (times != 1) p[jj] = times ? p[jj] + logf((float)times) : -INFINITY;
                }
            }
        }
        __syncthreads();
        float chunk_max = -INFINITY;
        for (int jj = threadIdx.x; jj < n; jj += blockDim.x) chunk_max = fmaxf(chunk_max, p[jj]);
        chunk_max = pf_block_max(chunk_max, red);
        float m_new = fmaxf(m, chunk_max);
        if (m_new == -INFINITY) { /* every key so far masked (Longformer's): nothing to add, and no NaN from exp */
            __syncthreads();
            continue;
        }
        float alpha = expf(m - m_new); /* 0 on the first chunk (m = -inf) */
        float chunk_sum = 0.0f;
        for (int jj = threadIdx.x; jj < n; jj += blockDim.x) {
            float e = expf(p[jj] - m_new);
            p[jj] = e;
            chunk_sum += e;
        }
        chunk_sum = pf_block_sum(chunk_sum, red); /* its barriers also publish p */
        l = l * alpha + chunk_sum;
        for (int i = threadIdx.x; i < hd; i += blockDim.x) {
            float acc_i = acc[i] * alpha;
            for (int jj = 0; jj < n; jj++) acc_i += p[jj] * pf_cache_load(v_base, (size_t)(j0 + jj) * kv_width + i);
            acc[i] = acc_i;
        }
        m = m_new;
        __syncthreads(); /* p is rewritten by the next chunk */
    }
    if (splits == 1) {
        float *o = out + row * q_width + (size_t)h * hd;
        for (int i = threadIdx.x; i < hd; i += blockDim.x) o[i] = l > 0.0f ? acc[i] / l : 0.0f;
    } else {
        float *part = partials + ((row * a.heads + h) * (size_t)splits + split) * (size_t)(hd + 2);
        if (threadIdx.x == 0) {
            part[0] = m; /* -inf and l = 0 for an empty split */
            part[1] = l;
        }
        for (int i = threadIdx.x; i < hd; i += blockDim.x) part[2 + i] = acc[i];
    }
}

/* ---- prefill attention on tensor cores ------------------------------------------------------ */

/* FlashAttention-2's loop, for prefill (T > 1) over a 16-bit cache. A block takes 16 * warps
   queries of one (sequence, head); each warp owns 16 of them. Key/value tiles of PF_FLASH_KEYS
   keys are staged in shared memory once for all the block's queries; per tile each warp computes
   S = Q K^T on tensor cores (wmma 16x16x16, 16-bit inputs, fp32 accumulation), one lane per query
   row updates that row's running max m and sum l in fp32 and rounds P = exp(S - m) to the cache's
   type, the warp rescales its fp32 output rows by exp(m_old - m) and adds P V on tensor cores;
   out = O / l at the end. The scale, ALiBi, T5's relative bias and every mask are applied per
   score by the row's lane, exactly as pf_attention_kernel does; a query's key range is
   pf_flash_query_keys. Tiles start at multiples of PF_FLASH_KEYS, so a query's arithmetic does
   not depend on which block holds it (test/cuda_standin.c mirrors it row by row); a tile in which
   a warp's queries see no key is skipped (above the causal diagonal, before the window), and one
   in which a single row sees none leaves that row unchanged exactly (alpha 1, P 0).

   Tile sizes: 32 keys a tile (two 16-key wmma columns: small enough for head_dim 256 in the
   shared memory of sm_86/89, whose opt-in maximum is 99 KB), 4 warps (64 queries) up to head_dim
   128 and 2 warps (32 queries) above. Shared memory (pf_flash_layout): Q and the K and V tiles in
   the 16-bit type, S (fp32), P (16-bit) and O (fp32: wmma's accumulator layout is opaque, so the
   per-row rescale goes through shared memory) per query row: 46.5 KB at head_dim 64, 78.5 KB at
   128 (4 warps), 87 KB at 256 (2 warps); above 48 KB it is opted into with cudaFuncSetAttribute.
   K and V are loaded synchronously (16-byte vectors), not double-buffered.

   Falls back to pf_attention_kernel: fp32 caches, cross-attention (mask 2: its fp32 cache and
   packed q rows), head_dim not a multiple of 16 or above PF_FLASH_MAX_HEAD_DIM, devices below
   sm_80 or with too little shared memory, and caches not 16-byte aligned
   (pf_cuda__flash_possible). */
#define PF_FLASH_KEYS 32
#define PF_FLASH_MAX_HEAD_DIM 256
/* Row strides of S (floats) and P (16-bit) in shared memory: padded past 32 so that the 16 lanes
   walking their own rows fall in different banks (wmma wants multiples of 16 bytes). */
#define PF_FLASH_S_STRIDE (PF_FLASH_KEYS + 4)
#define PF_FLASH_P_STRIDE (PF_FLASH_KEYS + 8)

static int pf_flash_warps(int hd) { return hd > 128 ? 2 : 4; }

/* Byte offsets into a block's dynamic shared memory (every one a multiple of 32 bytes, as wmma
   wants, since head_dim is a multiple of 16): q [rows][hd] C, k and v [PF_FLASH_KEYS][hd] C,
   s [rows][PF_FLASH_S_STRIDE] fp32, p [rows][PF_FLASH_P_STRIDE] C, o [rows][hd] fp32, alpha and
   l [rows] fp32, rows = 16 * warps. */
struct pf_flash_layout {
    size_t q, k, v, s, p, o, alpha, l, total;
};

__host__ __device__ inline pf_flash_layout pf_flash_layout_of(int warps, int hd) {
    size_t rows = (size_t)16 * warps, keys = PF_FLASH_KEYS, at = 0;
    pf_flash_layout L;
    L.q = at, at += rows * hd * 2;
    L.k = at, at += keys * hd * 2;
    L.v = at, at += keys * hd * 2;
    L.s = at, at += rows * PF_FLASH_S_STRIDE * 4;
    L.p = at, at += rows * PF_FLASH_P_STRIDE * 2;
    L.o = at, at += rows * hd * 4;
    L.alpha = at, at += rows * 4;
    L.l = at, at += rows * 4;
    L.total = at;
    return L;
}

/* The keys the query at step index t sees: first..last (none when first > last), as in
   pf_attention_kernel for masks 0 and 1. */
__device__ __forceinline__ void pf_flash_query_keys(const pf_attn_args &a, int pad, int t, int *first, int *last) {
    int pos = a.past + t;
    *last = a.mask == 1 ? pos : a.past + a.T - 1;
    *first = pf_first_key(a, pos, pad);
}

/* The keys any query t0..t1-1 (t1 <= T) sees: first grows with t, and last too, so the range is
   that of t0's first to t1-1's last (a superset when some row sees none; empty when t0 >= t1). */
__device__ __forceinline__ void pf_flash_rows_keys(const pf_attn_args &a, int pad, int t0, int t1, int *first,
                                                   int *last) {
    int unused;
    if (t0 >= t1) {
        *first = 1, *last = 0;
        return;
    }
    pf_flash_query_keys(a, pad, t0, first, &unused);
    pf_flash_query_keys(a, pad, t1 - 1, &unused, last);
}

/* Keys k0..k0+PF_FLASH_KEYS-1 of k_base and v_base (rows kv_width apart) into the tiles, 16 bytes
   a thread at a time; keys outside first..last are zeros (never read: masked keys get P = 0,
   and 0 * NaN from an unwritten cache row would poison O). */
template <typename C>
__device__ void pf_flash_stage_keys(C *k_tile, C *v_tile, const C *k_base, const C *v_base, size_t kv_width, int hd,
                                    int k0, int first, int last) {
    const int per_key = hd / 8; /* 16-byte vectors of 8 elements */
    for (int i = threadIdx.x; i < PF_FLASH_KEYS * per_key; i += blockDim.x) {
        int key = i / per_key, part = i % per_key, j = k0 + key;
        uint4 k4 = make_uint4(0, 0, 0, 0), v4 = k4;
        if (j >= first && j <= last) {
            k4 = *(const uint4 *)(k_base + (size_t)j * kv_width + (size_t)part * 8);
            v4 = *(const uint4 *)(v_base + (size_t)j * kv_width + (size_t)part * 8);
        }
        *(uint4 *)(k_tile + (size_t)key * hd + (size_t)part * 8) = k4;
        *(uint4 *)(v_tile + (size_t)key * hd + (size_t)part * 8) = v4;
    }
}

/* s [16][PF_FLASH_KEYS] (fp32, rows PF_FLASH_S_STRIDE apart) = q [16][hd] k_tile^T, one warp. k_tile [keys][hd] row-major is
   K^T column-major with leading dimension hd. */
template <typename C>
__device__ void pf_flash_scores(float *s, const C *q, const C *k_tile, int hd) {
    using namespace nvcuda;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, C, wmma::row_major> qa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, C, wmma::col_major> kb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    for (int n = 0; n < PF_FLASH_KEYS / 16; n++) {
        wmma::fill_fragment(acc, 0.0f);
        for (int k = 0; k < hd / 16; k++) {
            wmma::load_matrix_sync(qa, q + k * 16, hd);
            wmma::load_matrix_sync(kb, k_tile + (size_t)n * 16 * hd + k * 16, hd);
            wmma::mma_sync(acc, qa, kb, acc);
        }
        wmma::store_matrix_sync(s + n * 16, acc, PF_FLASH_S_STRIDE, wmma::mem_row_major);
    }
}

/* o [16][hd] (fp32) += p [16][PF_FLASH_KEYS] (rows PF_FLASH_P_STRIDE apart) v_tile
   [PF_FLASH_KEYS][hd], one warp. */
template <typename C>
__device__ void pf_flash_add_pv(float *o, const C *p, const C *v_tile, int hd) {
    using namespace nvcuda;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, C, wmma::row_major> pa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, C, wmma::row_major> vb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    for (int d = 0; d < hd / 16; d++) {
        wmma::load_matrix_sync(acc, o + d * 16, hd, wmma::mem_row_major);
        for (int k = 0; k < PF_FLASH_KEYS / 16; k++) {
            wmma::load_matrix_sync(pa, p + k * 16, PF_FLASH_P_STRIDE);
            wmma::load_matrix_sync(vb, v_tile + (size_t)k * 16 * hd + d * 16, hd);
            wmma::mma_sync(acc, pa, vb, acc);
        }
        wmma::store_matrix_sync(o + d * 16, acc, hd, wmma::mem_row_major);
    }
}

/* One query row's online-softmax step over the tile at k0 (its lane alone): scores of the keys it
   sees (the others -inf), the new running max, alpha = exp(m_old - m_new) (1 while no key was
   seen: nothing to rescale), P rounded to C (exp(s - m_new), 0 for unseen keys), and
   l = l * alpha + the sum of the rounded P in key order. */
template <typename C>
__device__ void pf_flash_softmax_row(const pf_attn_args &a, const float *s, C *p, float *alpha_out, float *m,
                                     float *l, int k0, int first, int last, int pad, int pos, int h, float slope) {
    float score[PF_FLASH_KEYS], tile_max = -INFINITY;
#pragma unroll
    for (int c = 0; c < PF_FLASH_KEYS; c++) {
        int j = k0 + c;
        score[c] = -INFINITY;
        if (j >= first && j <= last) {
            score[c] = pf_scaled_score(s[c], a) + pf_alibi_bias(a, slope, j - pad);
            if (a.rel_bias)
                score[c] += a.rel_bias[(size_t)h * a.rel_rows +
                                       pf_relative_bucket(j - pos, a.rel_buckets, a.rel_max_distance, a.mask != 1)];
        }
        tile_max = fmaxf(tile_max, score[c]);
    }
    float m_new = fmaxf(*m, tile_max);
    float alpha = m_new == -INFINITY ? 1.0f : expf(*m - m_new);
    float sum = 0.0f;
#pragma unroll
    for (int c = 0; c < PF_FLASH_KEYS; c++) {
        int j = k0 + c;
        float e = j >= first && j <= last ? expf(score[c] - m_new) : 0.0f;
        pf_cache_store(p, (size_t)c, e);
        sum += pf_cache_load(p, (size_t)c);
    }
    *l = *l * alpha + sum;
    *m = m_new;
    *alpha_out = alpha;
}

/* grid (query tiles, local heads, batch), 32 * pf_flash_warps(hd) threads, pf_flash_layout's
   bytes of dynamic shared memory. Masks 0 and 1 only; hd a multiple of 16. */
template <typename C>
__global__ void __launch_bounds__(128) pf_flash_attention_kernel(float *out, const float *qkv, const C *k_cache,
                                                                 const C *v_cache, pf_attn_args a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800 /* wmma on bf16: the host launches it on sm_80+ only */
    extern __shared__ __align__(128) unsigned char shared_bytes[];
    a.past = *a.past_at;
    const int hd = a.hd, warps = blockDim.x >> 5, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int block_rows = 16 * warps;
    const pf_flash_layout L = pf_flash_layout_of(warps, hd);
    C *q_tile = (C *)(shared_bytes + L.q), *k_tile = (C *)(shared_bytes + L.k), *v_tile = (C *)(shared_bytes + L.v);
    C *p_tile = (C *)(shared_bytes + L.p);
    float *s_tile = (float *)(shared_bytes + L.s), *o_tile = (float *)(shared_bytes + L.o);
    float *alpha_rows = (float *)(shared_bytes + L.alpha), *l_rows = (float *)(shared_bytes + L.l);
    const int h = blockIdx.y, b = blockIdx.z;
    const int t0 = (int)(gridDim.x - 1 - blockIdx.x) * block_rows; /* the longest causal tiles start first */
    const size_t q_width = (size_t)a.heads * hd, kv_width = (size_t)a.kv_heads * hd;
    const size_t row_width = q_width + 2 * kv_width;
    const int pad = a.pad ? a.pad[b] : 0;
    const int kv = (a.head_begin + h) / a.kv_group - a.kv_begin;
    const float slope = a.alibi ? a.alibi[h] : 0.0f;
    const size_t cache_row = a.rows ? (size_t)a.rows[b] : (size_t)b;
    const C *k_base = k_cache + cache_row * a.cache_len * kv_width + (size_t)kv * hd;
    const C *v_base = v_cache + cache_row * a.cache_len * kv_width + (size_t)kv * hd;

    /* Q rounded to C, O zeroed; rows past T are zeros (never written out). */
    for (int i = threadIdx.x; i < block_rows * hd; i += blockDim.x) {
        int r = i / hd, c = i % hd, t = t0 + r;
        float q = t < a.T ? qkv[((size_t)b * a.T + t) * row_width + (size_t)h * hd + c] : 0.0f;
        pf_cache_store(q_tile, (size_t)i, q);
        o_tile[i] = 0.0f;
    }
    __syncthreads(); /* a warp that sees no key still reads its zeroed O */

    int block_first, block_last, warp_first, warp_last;
    int t_end = t0 + block_rows < a.T ? t0 + block_rows : a.T;
    pf_flash_rows_keys(a, pad, t0, t_end, &block_first, &block_last);
    int w0 = t0 + warp * 16, w1 = w0 + 16 < a.T ? w0 + 16 : a.T;
    pf_flash_rows_keys(a, pad, w0, w1, &warp_first, &warp_last);

    /* The row lane r (< 16) of the warp owns: its keys and running max and sum. */
    const int t = w0 + lane, pos = a.past + t;
    int first = 1, last = 0;
    if (lane < 16 && t < a.T) pf_flash_query_keys(a, pad, t, &first, &last);
    float m = -INFINITY, l = 0.0f;

    const C *q_warp = q_tile + (size_t)warp * 16 * hd;
    float *s_warp = s_tile + (size_t)warp * 16 * PF_FLASH_S_STRIDE, *o_warp = o_tile + (size_t)warp * 16 * hd;
    C *p_warp = p_tile + (size_t)warp * 16 * PF_FLASH_P_STRIDE;
    float *alpha_warp = alpha_rows + warp * 16;
    int k_begin = block_first <= block_last ? block_first / PF_FLASH_KEYS * PF_FLASH_KEYS : block_last + 1;
    for (int k0 = k_begin; k0 <= block_last; k0 += PF_FLASH_KEYS) {
        __syncthreads(); /* the previous tile's K and V are read */
        pf_flash_stage_keys(k_tile, v_tile, k_base, v_base, kv_width, hd, k0, block_first, block_last);
        __syncthreads();
        if (warp_first > warp_last || k0 > warp_last || k0 + PF_FLASH_KEYS - 1 < warp_first)
            continue; /* none of the warp's rows sees a key of this tile */
        pf_flash_scores(s_warp, q_warp, k_tile, hd);
        __syncwarp();
        if (lane < 16)
            pf_flash_softmax_row(a, s_warp + lane * PF_FLASH_S_STRIDE, p_warp + lane * PF_FLASH_P_STRIDE,
                                 &alpha_warp[lane], &m, &l, k0, first, last, pad, pos, h, slope);
        __syncwarp();
        for (int i = lane; i < 16 * hd; i += 32) o_warp[i] *= alpha_warp[i / hd];
        __syncwarp();
        pf_flash_add_pv(o_warp, p_warp, v_tile, hd);
        __syncwarp();
    }
    if (lane < 16) l_rows[warp * 16 + lane] = l;
    __syncwarp();
    for (int i = lane; i < 16 * hd; i += 32) {
        int r = i / hd, c = i % hd, tr = w0 + r;
        float lr = l_rows[warp * 16 + r];
        if (tr < a.T) out[((size_t)b * a.T + tr) * q_width + (size_t)h * hd + c] = lr > 0.0f ? o_warp[i] / lr : 0.0f;
    }
#endif
}

/* One block per (head, query row): out = sum_s acc_s exp(m_s - M) / sum_s l_s exp(m_s - M), over
   the splits that saw a key (l_s > 0); zeros when none did. */
__global__ void pf_attention_combine_kernel(float *out, const float *partials, int heads, int hd, int splits) {
    int h = blockIdx.x;
    size_t row = blockIdx.y, width = (size_t)heads * hd;
    const float *part = partials + (row * heads + h) * (size_t)splits * (hd + 2);
    float M = -INFINITY;
    for (int s = 0; s < splits; s++) M = fmaxf(M, part[(size_t)s * (hd + 2)]);
    float L = 0.0f;
    for (int s = 0; s < splits; s++) {
        const float *ps = part + (size_t)s * (hd + 2);
        if (ps[1] > 0.0f) L += ps[1] * expf(ps[0] - M);
    }
    float *o = out + row * width + (size_t)h * hd;
    for (int i = threadIdx.x; i < hd; i += blockDim.x) {
        float acc = 0.0f;
        for (int s = 0; s < splits; s++) {
            const float *ps = part + (size_t)s * (hd + 2);
            if (ps[1] > 0.0f) acc += ps[2 + i] * expf(ps[0] - M);
        }
        o[i] = L > 0.0f ? acc / L : 0.0f;
    }
}

/* Greedy token choice: the better of two arg-max candidates (value, global index) is the larger
   value, the lower index on ties; index -1 is no candidate. A total order, so any reduction tree
   gives the same winner: the first maximum, as the host's sequential scan finds it. */
__device__ __forceinline__ void pf_better_choice(float &value, int &index, float other_value, int other_index) {
    if (other_index >= 0 && (index < 0 || other_value > value || (other_value == value && other_index < index))) {
        value = other_value;
        index = other_index;
    }
}

/* One block per row of logits ([rows][n], global vocabulary ids first..first + n - 1): its
   best candidate into values[row], indices[row]. The host scan (pf__argmax) starts at id 0 and
   only a strictly larger value replaces the best, so a NaN never wins except at id 0, where
   nothing can replace it: NaN at id 0 competes as +inf (and wins every tie by its index),
   elsewhere it is skipped. A row with no candidate (all NaN, not holding id 0) gives -1. */
__global__ void pf_argmax_kernel(float *values, int32_t *indices, const float *logits, size_t n, int first) {
    __shared__ float red_value[32];
    __shared__ int red_index[32];
    const float *row = logits + (size_t)blockIdx.x * n;
    float best = -INFINITY;
    int at = -1;
    for (size_t i = threadIdx.x; i < n; i += blockDim.x) {
        float v = row[i];
        int id = first + (int)i;
        if (isnan(v)) {
            if (id != 0) continue;
            v = INFINITY;
        }
        pf_better_choice(best, at, v, id);
    }
    for (int o = 16; o > 0; o >>= 1)
        pf_better_choice(best, at, __shfl_xor_sync(0xffffffffu, best, o), __shfl_xor_sync(0xffffffffu, at, o));
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    if (lane == 0) {
        red_value[warp] = best;
        red_index[warp] = at;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < warps; w++) pf_better_choice(best, at, red_value[w], red_index[w]);
        values[blockIdx.x] = best;
        indices[blockIdx.x] = at;
    }
}

/* Top-k candidates for sampling: the block of one row of logits keeps at most PF_CUDA_TOP_K_MAX
   of them (src/cuda_abi.h; a power of two: the size of its sort). */
#define PF_TOP_K_THREADS 1024

/* A logit's sort key, larger is better: the value's bits made order-preserving in the high word
   (NaN above +inf, so that a slice holding one shows it; -0 as +0, which the host's comparisons
   tie), the complement of its slice index in the low word (the lower id wins a tie). Every key of
   a row is distinct, so "the count largest keys" is one set, whatever the threads' order. */
__device__ __forceinline__ unsigned long long pf_candidate_key(float v, unsigned i) {
    unsigned bits = __float_as_uint(v);
    if (isnan(v)) bits = 0xffffffffu;
    else if (v == 0.0f) bits = 0x80000000u;
    else bits = (bits & 0x80000000u) ? ~bits : bits | 0x80000000u;
    return ((unsigned long long)bits << 32) | (0xffffffffu - i);
}

/* The count-th largest key of a row (count <= n): a radix select, 8 bits a pass from the top,
   each pass a histogram of the keys that match the digits fixed so far. */
__device__ unsigned long long pf_top_k_threshold(const float *row, size_t n, unsigned count, unsigned *hist) {
    __shared__ unsigned long long prefix_shared;
    __shared__ unsigned remaining_shared;
    unsigned long long prefix = 0, mask = 0;
    unsigned remaining = count; /* how many keys at or below the fixed digits still to pass */
    for (int shift = 56; shift >= 0; shift -= 8) {
        for (unsigned b = threadIdx.x; b < 256; b += blockDim.x) hist[b] = 0;
        __syncthreads();
        for (size_t i = threadIdx.x; i < n; i += blockDim.x) {
            unsigned long long key = pf_candidate_key(row[i], (unsigned)i);
            if ((key & mask) == prefix) atomicAdd(&hist[(key >> shift) & 255u], 1u);
        }
        __syncthreads();
        if (threadIdx.x == 0) { /* the digit whose bin holds the remaining-th largest */
            unsigned above = 0, d = 255;
            for (; d > 0 && above + hist[d] < remaining; d--) above += hist[d];
            prefix_shared = prefix | ((unsigned long long)d << shift);
            remaining_shared = remaining - above;
        }
        __syncthreads();
        prefix = prefix_shared;
        remaining = remaining_shared;
        mask |= 255ull << shift;
        __syncthreads(); /* every thread read them before thread 0 writes the next pass's */
    }
    return prefix;
}

/* One block per row of logits ([rows][n], global vocabulary ids first..first + n - 1): the row's
   count best (larger value, then lower id; a NaN before all) into values[row][0..count) and
   indices[row][0..count), best first: its keys at or above the threshold, bitonic-sorted. */
__global__ void __launch_bounds__(PF_TOP_K_THREADS) pf_top_k_kernel(float *values, int32_t *indices,
                                                                     const float *logits, size_t n, int first,
                                                                     unsigned count) {
    __shared__ unsigned hist[256];
    __shared__ unsigned long long chosen[PF_CUDA_TOP_K_MAX];
    __shared__ unsigned taken;
    const float *row = logits + (size_t)blockIdx.x * n;
    unsigned long long threshold = pf_top_k_threshold(row, n, count, hist);
    if (threadIdx.x == 0) taken = 0;
    __syncthreads();
    for (size_t i = threadIdx.x; i < n; i += blockDim.x) {
        unsigned long long key = pf_candidate_key(row[i], (unsigned)i);
        if (key >= threshold) chosen[atomicAdd(&taken, 1u)] = key; /* exactly count of them */
    }
    unsigned size = 1;
    while (size < count) size <<= 1;
    for (unsigned j = count + threadIdx.x; j < size; j += blockDim.x) chosen[j] = 0; /* below every key */
    __syncthreads();
    for (unsigned k = 2; k <= size; k <<= 1)
        for (unsigned j = k >> 1; j > 0; j >>= 1) {
            for (unsigned t = threadIdx.x; t < size; t += blockDim.x) {
                unsigned partner = t ^ j;
                if (partner <= t) continue;
                unsigned long long a = chosen[t], b = chosen[partner];
                if ((t & k) == 0 ? a < b : a > b) { /* descending where bit k is clear: all of it at the end */
                    chosen[t] = b;
                    chosen[partner] = a;
                }
            }
            __syncthreads();
        }
    for (unsigned j = threadIdx.x; j < count; j += blockDim.x) {
        unsigned i = 0xffffffffu - (unsigned)(chosen[j] & 0xffffffffu);
        values[(size_t)blockIdx.x * count + j] = row[i];
        indices[(size_t)blockIdx.x * count + j] = first + (int)i;
    }
}

/* Rotates dims (i1, i2) of x, pair i of `half` (pairs (2i, 2i + 1) or halves (i, i + half)), by
   position pos, as pf_rotary_kernel does. */
__device__ __forceinline__ void pf_rotate_one(float *x, int i, int half, int pairs, float pos, const float *inv_freq,
                                              float scale) {
    float angle = __fmul_rn(pos, inv_freq[i]);
    float c = __fmul_rn(cosf(angle), scale), sn = __fmul_rn(sinf(angle), scale);
    int i1 = pairs ? 2 * i : i, i2 = pairs ? i1 + 1 : i + half;
    float x1 = x[i1], x2 = x[i2];
    x[i1] = __fsub_rn(__fmul_rn(x1, c), __fmul_rn(x2, sn));
    x[i2] = __fadd_rn(__fmul_rn(x2, c), __fmul_rn(x1, sn));
}

/* Latent attention's cache rows, one block a token: [latent RMSNormed with the gain norm | the
   shared key rotated] from the latent rows [latent (rank) | key (rope)]. */
template <typename C>
__global__ void pf_latent_append_kernel(C *cache, const float *latent, const void *norm, int norm_dtype,
                                        const float *inv_freq, const int *pad, const int *rows, int T,
                                        const int *past_at, int cache_len, int rank, int rope, int pairs,
                                        float rope_scale, float eps) {
    extern __shared__ float key[]; /* [rope], then 32 for the reduction */
    const int past = *past_at;
    size_t token = blockIdx.x, width = (size_t)rank + rope;
    int b = (int)(token / (size_t)T), t = (int)(token % (size_t)T);
    const float *in = latent + token * width;
    float squares = 0.0f;
    for (int c = threadIdx.x; c < rank; c += blockDim.x) squares += in[c] * in[c];
    float inv = 1.0f / sqrtf(pf_block_sum(squares, key + rope) / (float)rank + eps);
    size_t dst = ((size_t)(rows ? rows[b] : b) * (size_t)cache_len + (size_t)past + (size_t)t) * width;
    for (int c = threadIdx.x; c < rank; c += blockDim.x)
        pf_cache_store(cache, dst + c, __fmul_rn(__fmul_rn(in[c], inv), pf_load(norm, norm_dtype, c)));
    for (int d = threadIdx.x; d < rope; d += blockDim.x) key[d] = in[rank + d];
    __syncthreads();
    float pos = (float)pf_position(pad, b, past, t);
    for (int i = threadIdx.x; i < rope / 2; i += blockDim.x) pf_rotate_one(key, i, rope / 2, pairs, pos, inv_freq, rope_scale);
    __syncthreads();
    for (int d = threadIdx.x; d < rope; d += blockDim.x) pf_cache_store(cache, dst + rank + d, key[d]);
}

/* Latent attention in the absorbed form, one block a (token, head): q's rope part rotated (in
   place), its nope part through the head's key rows of kv_b into the latent space, the scores
   over the keys the query sees in chunks of blockDim with a running softmax, the latents'
   weighted sum, then the head's value rows of kv_b. */
template <typename C>
__global__ void pf_latent_attention_kernel(float *out, float *q, const C *cache, const void *kv_b, int kv_b_dtype,
                                           const float *inv_freq, const int *pad, const int *rows, int T,
                                           const int *past_at, int cache_len, int window, int hd, int rope, int vd,
                                           int rank, float scale, int pairs, float rope_scale) {
    extern __shared__ float sh[]; /* q head [hd], q_lat [rank], o_lat [rank], chunk [blockDim], 32 */
    const int past = *past_at, heads = gridDim.y, h = blockIdx.y;
    size_t token = blockIdx.x, width = (size_t)rank + rope;
    int b = (int)(token / (size_t)T), t = (int)(token % (size_t)T), nope = hd - rope;
    size_t w0 = (size_t)h * (size_t)(nope + vd); /* the head's first row of kv_b */
    float *qh = sh, *q_lat = qh + hd, *o_lat = q_lat + rank, *chunk = o_lat + rank, *red = chunk + blockDim.x;
    float *q_row = q + (token * heads + h) * (size_t)hd;
    for (int d = threadIdx.x; d < hd; d += blockDim.x) qh[d] = q_row[d];
    __syncthreads();
    float position = (float)pf_position(pad, b, past, t);
    for (int i = threadIdx.x; i < rope / 2; i += blockDim.x)
        pf_rotate_one(qh + nope, i, rope / 2, pairs, position, inv_freq, rope_scale);
    __syncthreads();
    for (int d = threadIdx.x; d < rope; d += blockDim.x) q_row[nope + d] = qh[nope + d];
    for (int c = threadIdx.x; c < rank; c += blockDim.x) {
        float sum = 0.0f;
        for (int d = 0; d < nope; d++) sum = fmaf(qh[d], pf_load(kv_b, kv_b_dtype, (w0 + d) * rank + c), sum);
        q_lat[c] = sum;
        o_lat[c] = 0.0f;
    }
    __syncthreads();
    int pos = past + t, first = pad ? pad[b] : 0, last = pos;
    if (window > 0 && pos + 1 > window && pos + 1 - window > first) first = pos + 1 - window;
    float *o_row = out + (token * heads + h) * (size_t)vd;
    if (first > last) { /* a pad's own query: nothing to see, and nobody reads it */
        for (int e = threadIdx.x; e < vd; e += blockDim.x) o_row[e] = 0.0f;
        return;
    }
    const C *rows_of = cache + (size_t)(rows ? rows[b] : b) * (size_t)cache_len * width;
    float running_max = -INFINITY, running_sum = 0.0f;
    for (int j0 = first; j0 <= last; j0 += blockDim.x) {
        int j = j0 + threadIdx.x, count = last + 1 - j0 < (int)blockDim.x ? last + 1 - j0 : (int)blockDim.x;
        float score = -INFINITY;
        if (j <= last) {
            const C *key = rows_of + (size_t)j * width;
            float sum = 0.0f;
            for (int c = 0; c < rank; c++) sum = fmaf(q_lat[c], pf_cache_load(key, c), sum);
            for (int d = 0; d < rope; d++) sum = fmaf(qh[nope + d], pf_cache_load(key, (size_t)rank + d), sum);
            score = sum * scale;
        }
        float new_max = fmaxf(running_max, pf_block_max(score, red));
        float p = j <= last ? expf(score - new_max) : 0.0f;
        float rescale = expf(running_max - new_max); /* 0 at the first chunk */
        running_sum = running_sum * rescale + pf_block_sum(p, red);
        running_max = new_max;
        chunk[threadIdx.x] = p;
        __syncthreads();
        for (int c = threadIdx.x; c < rank; c += blockDim.x) {
            float acc = o_lat[c] * rescale;
            for (int k = 0; k < count; k++) acc = fmaf(chunk[k], pf_cache_load(rows_of + (size_t)(j0 + k) * width, c), acc);
            o_lat[c] = acc;
        }
        __syncthreads();
    }
    for (int e = threadIdx.x; e < vd; e += blockDim.x) {
        float sum = 0.0f;
        for (int c = 0; c < rank; c++) sum = fmaf(o_lat[c], pf_load(kv_b, kv_b_dtype, (w0 + nope + e) * rank + c), sum);
        o_row[e] = sum / running_sum;
    }
}

#define PF_LATENT_THREADS 128

/* Launches pf_latent_append_kernel into a cache of element type C. */
template <typename C>
static int pf_cuda__latent_append(struct pf_cuda_rank *st, C *cache, const float *latent, const void *norm,
                                  int norm_dtype, const float *inv_freq, const int *pad, const int *rows, int batch,
                                  int T, const int *past_at, int rank, int rope, int cache_len, int pairs,
                                  float rope_scale, float eps) {
    size_t shared = ((size_t)rope + 32) * sizeof(float);
    pf_latent_append_kernel<C><<<(unsigned)(batch * T), PF_LATENT_THREADS, shared, st->stream>>>(
        cache, latent, norm, norm_dtype, inv_freq, pad, rows, T, past_at, cache_len, rank, rope, pairs, rope_scale, eps);
    PF_CUDA_CHECK_LAUNCH(st, pf_latent_append_kernel);
    return PF_CUDA_OK;
}

/* Launches pf_latent_attention_kernel over a cache of element type C. */
template <typename C>
static int pf_cuda__latent_attend(struct pf_cuda_rank *st, float *out, float *q, const C *cache, const void *kv_b,
                                  int kv_b_dtype, const float *inv_freq, const int *pad, const int *rows, int batch,
                                  int T, const int *past_at, int heads, int hd, int rope, int vd, int rank,
                                  int cache_len, int window, float scale, int pairs, float rope_scale) {
    size_t shared = ((size_t)hd + 2 * (size_t)rank + PF_LATENT_THREADS + 32) * sizeof(float);
    dim3 grid((unsigned)(batch * T), (unsigned)heads);
    pf_latent_attention_kernel<C><<<grid, PF_LATENT_THREADS, shared, st->stream>>>(
        out, q, cache, kv_b, kv_b_dtype, inv_freq, pad, rows, T, past_at, cache_len, window, hd, rope, vd, rank, scale,
        pairs, rope_scale);
    PF_CUDA_CHECK_LAUNCH(st, pf_latent_attention_kernel);
    return PF_CUDA_OK;
}

/* Launches pf_kv_append_kernel into caches of element type C. */
template <typename C>
static int pf_cuda__kv_append(struct pf_cuda_rank *st, C *k_cache, C *v_cache, float *qkv, const void *bias,
                              int bias_dtype, const int *rows, int batch, int T, const int *past_at, int cache_len,
                              size_t q_width, size_t kv_width) {
    size_t threads = (size_t)batch * T * (kv_width + (bias ? q_width : 0));
    pf_kv_append_kernel<C><<<pf_blocks(threads, PF_THREADS), PF_THREADS, 0, st->stream>>>(
        k_cache, v_cache, qkv, bias, bias_dtype, rows, batch, T, past_at, cache_len, q_width, kv_width);
    PF_CUDA_CHECK_LAUNCH(st, pf_kv_append_kernel);
    return PF_CUDA_OK;
}

/* Launches pf_attention_kernel over caches of element type C. */
template <typename C>
static int pf_cuda__attention(struct pf_cuda_rank *st, dim3 grid, size_t shared, float *out, float *partials,
                              const float *qkv, const C *k_cache, const C *v_cache, const pf_attn_args &a) {
    if (shared > 48 * 1024) {
        PF_CUDA_CHECK(st, cudaFuncSetAttribute,
                      (pf_attention_kernel<C>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shared));
    }
    pf_attention_kernel<C><<<grid, PF_ATTN_THREADS, shared, st->stream>>>(out, partials, qkv, k_cache, v_cache, a);
    PF_CUDA_CHECK_LAUNCH(st, pf_attention_kernel);
    return PF_CUDA_OK;
}

#ifdef PF_CUDA_NEXT_KERNELS
/* ---- next kernels (built with -DPF_CUDA_NEXT_KERNELS; the default build leaves them out) -------

   Prefill attention with S and O in registers (pf_flash2_attention_kernel): same semantics and
   grid as pf_flash_attention_kernel (masks 0 and 1, pads, windows, ALiBi, T5's relative bias,
   GQA, fp16/bf16 caches). A block is 4 warps of 16 query rows (64 queries of one (sequence,
   head)); per key tile each warp computes S = Q K^T with mma.sync m16n8k16 into fp32 fragments,
   does the online softmax on those fragments (a row's 4 lanes combine their max with two
   shuffles), rounds P to the cache's type in registers (the A fragment of the P V product is the
   S accumulator's layout, so P never goes through shared memory) and adds P V into O, which stays
   in registers until the end. K/V tiles (64 keys up to head_dim 128, 32 above) are
   double-buffered with cp.async (zero-filled outside the block's keys, as
   pf_flash_stage_keys does: 0 * NaN from an unwritten cache row would poison O). Tiles start at
   multiples of the tile size, as before; each lane sums its own columns' rounded P and the row's
   4 lanes add theirs at the end, so l is the same sum in another order. Scores are scaled by
   log2(e) so that P = exp2(score - max), one MUFU op (a few ulp of fp32 from expf, far below P's
   16-bit rounding). Shared memory: Q [64][hd + 8] and two stages of K and V [keys][hd + 8] in the
   cache type (rows padded by 16 bytes so that ldmatrix's 8 row addresses hit distinct banks):
   46 KB at head_dim 64, 85 KB at 128, 99 KB at 256 (sm_86/89's opt-in maximum). */
#define PF_FLASH2_WARPS 4
#define PF_FLASH2_ROWS (16 * PF_FLASH2_WARPS)

static int pf_flash2_keys(int hd) { return hd > 128 ? 32 : 64; }

static size_t pf_flash2_shared(int hd) {
    return ((size_t)PF_FLASH2_ROWS + 4 * (size_t)pf_flash2_keys(hd)) * (size_t)(hd + 8) * 2;
}

__device__ __forceinline__ unsigned pf_smem_addr(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void pf_ldmatrix_x4(unsigned (&r)[4], const void *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(pf_smem_addr(p)));
}

__device__ __forceinline__ void pf_ldmatrix_x4_trans(unsigned (&r)[4], const void *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(pf_smem_addr(p)));
}

/* d += a b: a 16x16 (row), b 16x8 (col), fp32 accumulators. */
__device__ __forceinline__ void pf_mma16816(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1, __half) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void pf_mma16816(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1,
                                            __nv_bfloat16) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* Two floats rounded to nearest into one 32-bit pair (lo in the low half), and the rounded sum. */
__device__ __forceinline__ unsigned pf_pack2(float lo, float hi, float *sum, __half) {
    __half2 v = __floats2half2_rn(lo, hi);
    *sum += __low2float(v) + __high2float(v);
    return *(unsigned *)&v;
}

__device__ __forceinline__ unsigned pf_pack2(float lo, float hi, float *sum, __nv_bfloat16) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    *sum += __low2float(v) + __high2float(v);
    return *(unsigned *)&v;
}

/* 16 bytes global -> shared without registers; bytes 0 fills the 16 with zeros (src not read). */
__device__ __forceinline__ void pf_cp_async16(void *dst, const void *src, int bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(pf_smem_addr(dst)), "l"(src), "r"(bytes));
}
__device__ __forceinline__ void pf_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void pf_cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

/* A score of key j for the query at cache position pos, times log2(e); -inf outside first..last. */
__device__ __forceinline__ float pf_flash2_score(const pf_attn_args &a, float s, int j, int first, int last, int pad,
                                                 int pos, int h, float slope) {
    if (j < first || j > last) return -INFINITY;
    float v = pf_scaled_score(s, a) + pf_alibi_bias(a, slope, j - pad);
    if (a.rel_bias)
        v += a.rel_bias[(size_t)h * a.rel_rows + pf_relative_bucket(j - pos, a.rel_buckets, a.rel_max_distance, a.mask != 1)];
    return v * 1.4426950408889634f;
}

/* grid (query tiles of PF_FLASH2_ROWS, local heads, batch), 32 * PF_FLASH2_WARPS threads,
   pf_flash2_shared(hd) bytes of dynamic shared memory. HD: head_dim rounded up to 64, 128 or 256
   (the register arrays' size; hd itself a multiple of 16 up to HD); KT keys a tile. */
template <typename C, int HD, int KT>
__global__ void __launch_bounds__(32 * PF_FLASH2_WARPS) pf_flash2_attention_kernel(float *out, const float *qkv,
                                                                                   const C *k_cache, const C *v_cache,
                                                                                   pf_attn_args a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800 /* mma on bf16, cp.async: sm_80+, as the host checks */
    extern __shared__ __align__(128) unsigned char shared_bytes[];
    a.past = *a.past_at;
    const int hd = a.hd, stride = hd + 8;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, tq = lane & 3;
    C *q_tile = (C *)shared_bytes;                      /* [PF_FLASH2_ROWS][stride] */
    C *kv_tiles = q_tile + PF_FLASH2_ROWS * stride;      /* per stage: K [KT][stride], then V */
    const int h = blockIdx.y, b = blockIdx.z;
    const int t0 = (int)(gridDim.x - 1 - blockIdx.x) * PF_FLASH2_ROWS; /* the longest causal tiles start first */
    const size_t q_width = (size_t)a.heads * hd, kv_width = (size_t)a.kv_heads * hd;
    const size_t row_width = q_width + 2 * kv_width;
    const int pad = a.pad ? a.pad[b] : 0;
    const int kv = (a.head_begin + h) / a.kv_group - a.kv_begin;
    const float slope = a.alibi ? a.alibi[h] : 0.0f;
    const size_t cache_row = a.rows ? (size_t)a.rows[b] : (size_t)b;
    const C *k_base = k_cache + cache_row * a.cache_len * kv_width + (size_t)kv * hd;
    const C *v_base = v_cache + cache_row * a.cache_len * kv_width + (size_t)kv * hd;

    /* Q rounded to C; rows past T are zeros (never written out). */
    for (int i = threadIdx.x; i < PF_FLASH2_ROWS * hd; i += blockDim.x) {
        int r = i / hd, c = i % hd, t = t0 + r;
        float q = t < a.T ? qkv[((size_t)b * a.T + t) * row_width + (size_t)h * hd + c] : 0.0f;
        pf_cache_store(q_tile, (size_t)r * stride + c, q);
    }

    int block_first, block_last, warp_first, warp_last;
    int t_end = t0 + PF_FLASH2_ROWS < a.T ? t0 + PF_FLASH2_ROWS : a.T;
    pf_flash_rows_keys(a, pad, t0, t_end, &block_first, &block_last);
    int w0 = t0 + warp * 16, w1 = w0 + 16 < a.T ? w0 + 16 : a.T;
    pf_flash_rows_keys(a, pad, w0, w1, &warp_first, &warp_last);
    /* This lane's two rows of the fragments: g and g + 8 of the warp's 16. */
    const int ta = w0 + g, tb = ta + 8, pos_a = a.past + ta, pos_b = a.past + tb;
    int first_a = 1, last_a = 0, first_b = 1, last_b = 0;
    if (ta < a.T) pf_flash_query_keys(a, pad, ta, &first_a, &last_a);
    if (tb < a.T) pf_flash_query_keys(a, pad, tb, &first_b, &last_b);
    const int k_begin = block_first <= block_last ? block_first / KT * KT : 0;
    const int tiles = block_first <= block_last ? (block_last - k_begin) / KT + 1 : 0;

    const int per_key = hd / 8; /* 16-byte pieces */
    auto stage = [&](int tile) {
        const int k0 = k_begin + tile * KT;
        C *kt = kv_tiles + (size_t)(tile & 1) * 2 * KT * stride, *vt = kt + KT * stride;
        for (int i = threadIdx.x; i < KT * per_key; i += blockDim.x) {
            int key = i / per_key, part = i % per_key, j = k0 + key;
            bool in = j >= block_first && j <= block_last;
            size_t at = in ? (size_t)j * kv_width + (size_t)part * 8 : 0;
            pf_cp_async16(kt + key * stride + part * 8, k_base + at, in ? 16 : 0);
            pf_cp_async16(vt + key * stride + part * 8, v_base + at, in ? 16 : 0);
        }
        pf_cp_async_commit();
    };

    float o[HD / 8][4];
#pragma unroll
    for (int d = 0; d < HD / 8; d++) o[d][0] = o[d][1] = o[d][2] = o[d][3] = 0.0f;
    float m_a = -INFINITY, m_b = -INFINITY, l_a = 0.0f, l_b = 0.0f; /* m in log2 units; l: this lane's columns */
    const C *q_warp = q_tile + (size_t)warp * 16 * stride;

    if (tiles > 0) stage(0);
    for (int tile = 0; tile < tiles; tile++) {
        if (tile + 1 < tiles) {
            stage(tile + 1); /* into the other buffer, free since the barrier that ended the last tile */
            pf_cp_async_wait<1>();
        } else {
            pf_cp_async_wait<0>();
        }
        __syncthreads(); /* this tile's K and V (and, the first time, Q) are in shared memory */
        const int k0 = k_begin + tile * KT;
        if (!(warp_first > warp_last || k0 > warp_last || k0 + KT - 1 < warp_first)) {
            const C *kt = kv_tiles + (size_t)(tile & 1) * 2 * KT * stride, *vt = kt + KT * stride;
            float s[KT / 8][4];
#pragma unroll
            for (int n = 0; n < KT / 8; n++) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
            for (int kk = 0; kk < HD / 16; kk++) {
                if (kk * 16 < hd) {
                    unsigned qa[4];
                    pf_ldmatrix_x4(qa, q_warp + (lane & 15) * stride + kk * 16 + (lane >> 4) * 8);
#pragma unroll
                    for (int n2 = 0; n2 < KT / 16; n2++) {
                        unsigned kb[4]; /* two 8-key column blocks: b0 b1 of keys n2*16.., then of +8 */
                        pf_ldmatrix_x4(kb, kt + (n2 * 16 + (lane & 7) + (lane >> 4) * 8) * stride + kk * 16 +
                                               ((lane >> 3) & 1) * 8);
                        pf_mma16816(s[2 * n2], qa, kb[0], kb[1], C());
                        pf_mma16816(s[2 * n2 + 1], qa, kb[2], kb[3], C());
                    }
                }
            }
            /* Online softmax on the fragments: s[n][0..1] are row g's keys k0 + 8n + 2tq (+1),
               s[n][2..3] row g + 8's. */
            float max_a = -INFINITY, max_b = -INFINITY;
#pragma unroll
            for (int n = 0; n < KT / 8; n++) {
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    int j = k0 + n * 8 + 2 * tq + e;
                    s[n][e] = pf_flash2_score(a, s[n][e], j, first_a, last_a, pad, pos_a, h, slope);
                    s[n][2 + e] = pf_flash2_score(a, s[n][2 + e], j, first_b, last_b, pad, pos_b, h, slope);
                    max_a = fmaxf(max_a, s[n][e]);
                    max_b = fmaxf(max_b, s[n][2 + e]);
                }
            }
            max_a = fmaxf(max_a, __shfl_xor_sync(0xffffffffu, max_a, 1));
            max_a = fmaxf(max_a, __shfl_xor_sync(0xffffffffu, max_a, 2));
            max_b = fmaxf(max_b, __shfl_xor_sync(0xffffffffu, max_b, 1));
            max_b = fmaxf(max_b, __shfl_xor_sync(0xffffffffu, max_b, 2));
            const float new_a = fmaxf(m_a, max_a), new_b = fmaxf(m_b, max_b);
            /* A row that has seen no key yet keeps alpha 1 and P 0: O and l stay exactly zero. */
            const float alpha_a = new_a == -INFINITY ? 1.0f : exp2f(m_a - new_a);
            const float alpha_b = new_b == -INFINITY ? 1.0f : exp2f(m_b - new_b);
            m_a = new_a, m_b = new_b;
            unsigned p[KT / 8][2];
            float sum_a = 0.0f, sum_b = 0.0f;
#pragma unroll
            for (int n = 0; n < KT / 8; n++) {
                float p0 = s[n][0] == -INFINITY ? 0.0f : exp2f(s[n][0] - new_a);
                float p1 = s[n][1] == -INFINITY ? 0.0f : exp2f(s[n][1] - new_a);
                float p2 = s[n][2] == -INFINITY ? 0.0f : exp2f(s[n][2] - new_b);
                float p3 = s[n][3] == -INFINITY ? 0.0f : exp2f(s[n][3] - new_b);
                p[n][0] = pf_pack2(p0, p1, &sum_a, C());
                p[n][1] = pf_pack2(p2, p3, &sum_b, C());
            }
            l_a = l_a * alpha_a + sum_a;
            l_b = l_b * alpha_b + sum_b;
#pragma unroll
            for (int d = 0; d < HD / 8; d++) {
                o[d][0] *= alpha_a, o[d][1] *= alpha_a;
                o[d][2] *= alpha_b, o[d][3] *= alpha_b;
            }
#pragma unroll
            for (int k2 = 0; k2 < KT / 16; k2++) {
                const unsigned pa[4] = {p[2 * k2][0], p[2 * k2][1], p[2 * k2 + 1][0], p[2 * k2 + 1][1]};
#pragma unroll
                for (int d2 = 0; d2 < HD / 16; d2++) {
                    if (d2 * 16 < hd) {
                        unsigned vb[4]; /* V^T fragments of head-dim columns d2*16.. and +8 */
                        pf_ldmatrix_x4_trans(vb, vt + (k2 * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * stride +
                                                     d2 * 16 + (lane >> 4) * 8);
                        pf_mma16816(o[2 * d2], pa, vb[0], vb[1], C());
                        pf_mma16816(o[2 * d2 + 1], pa, vb[2], vb[3], C());
                    }
                }
            }
        }
        __syncthreads(); /* every warp is done with this buffer before the next stage() refills it */
    }
    l_a += __shfl_xor_sync(0xffffffffu, l_a, 1);
    l_a += __shfl_xor_sync(0xffffffffu, l_a, 2);
    l_b += __shfl_xor_sync(0xffffffffu, l_b, 1);
    l_b += __shfl_xor_sync(0xffffffffu, l_b, 2);
    const float inv_a = l_a > 0.0f ? 1.0f / l_a : 0.0f, inv_b = l_b > 0.0f ? 1.0f / l_b : 0.0f;
    float *out_a = out + ((size_t)b * a.T + ta) * q_width + (size_t)h * hd + 2 * tq;
    float *out_b = out + ((size_t)b * a.T + tb) * q_width + (size_t)h * hd + 2 * tq;
#pragma unroll
    for (int d = 0; d < HD / 8; d++) {
        if (d * 8 < hd) {
            if (ta < a.T) *(float2 *)(out_a + d * 8) = make_float2(o[d][0] * inv_a, o[d][1] * inv_a);
            if (tb < a.T) *(float2 *)(out_b + d * 8) = make_float2(o[d][2] * inv_b, o[d][3] * inv_b);
        }
    }
#endif
}

template <typename C, int HD, int KT>
static int pf_cuda__flash2_launch(struct pf_cuda_rank *st, int batch, float *out, const float *qkv, const C *k_cache,
                                  const C *v_cache, const pf_attn_args &a) {
    size_t shared = pf_flash2_shared(a.hd);
    if (shared > 48 * 1024) {
        PF_CUDA_CHECK(st, cudaFuncSetAttribute,
                      (pf_flash2_attention_kernel<C, HD, KT>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shared));
    }
    dim3 grid((unsigned)((a.T + PF_FLASH2_ROWS - 1) / PF_FLASH2_ROWS), (unsigned)a.heads, (unsigned)batch);
    pf_flash2_attention_kernel<C, HD, KT><<<grid, 32 * PF_FLASH2_WARPS, shared, st->stream>>>(out, qkv, k_cache,
                                                                                            v_cache, a);
    PF_CUDA_CHECK_LAUNCH(st, pf_flash2_attention_kernel);
    return PF_CUDA_OK;
}

/* The instance for hd (a multiple of 16 up to PF_FLASH_MAX_HEAD_DIM). */
template <typename C>
static int pf_cuda__flash2_attention(struct pf_cuda_rank *st, int batch, float *out, const float *qkv, const C *k_cache,
                                     const C *v_cache, const pf_attn_args &a) {
    if (a.hd <= 64) return pf_cuda__flash2_launch<C, 64, 64>(st, batch, out, qkv, k_cache, v_cache, a);
    if (a.hd <= 128) return pf_cuda__flash2_launch<C, 128, 64>(st, batch, out, qkv, k_cache, v_cache, a);
    return pf_cuda__flash2_launch<C, 256, 32>(st, batch, out, qkv, k_cache, v_cache, a);
}

/* Decode attention in one launch (pf_decode_attention_kernel): the grid of pf_attention_kernel
   (row, local head, split), 4 warps a block. Each warp runs its own online softmax over the
   split's keys warp, warp + 4, ... (lanes across head_dim; up to 4 keys' K and V loaded before
   any is used, so that their loads overlap), the block merges its 4 warps in shared memory into
   the split's (m, l, acc) and, with one split, writes out. With several, each block stores its
   partial as pf_attention_kernel does, and the block that finishes a (row, head) last (a counter
   per (row, head) in the rank's device memory, which that block sets back to 0 for the next launch
   or graph replay) combines them with pf_attention_combine_kernel's arithmetic in the same split
   order: the combination is that kernel's to the bit; the partials differ from
   pf_attention_kernel's by fp32 rounding (other summation orders). */
#define PF_DECODE_WARPS 4
#define PF_DECODE_BATCH 4                 /* keys a warp loads before using them */
#define PF_DECODE_PER_LANE 8              /* head_dim up to 256 over 32 lanes */
#define PF_DECODE_COUNTERS (1u << 16)     /* (row, head) pairs a rank's counters cover */

template <typename C>
__global__ void __launch_bounds__(32 * PF_DECODE_WARPS) pf_decode_attention_kernel(float *out, float *partials,
                                                                                   unsigned *counters, const float *qkv,
                                                                                   const C *k_cache, const C *v_cache,
                                                                                   pf_attn_args a) {
    __shared__ float warp_m[PF_DECODE_WARPS], warp_l[PF_DECODE_WARPS];
    __shared__ float warp_acc[PF_DECODE_WARPS][PF_DECODE_PER_LANE * 32];
    __shared__ float split_w[PF_MAX_SPLITS];
    __shared__ int last_block;
    a.past = *a.past_at;
    const int hd = a.hd;
    size_t row = blockIdx.x; /* b * T + t (T is 1 here, but the arithmetic is pf_attention_kernel's) */
    int h = blockIdx.y, split = blockIdx.z, splits = gridDim.z;
    int b = (int)(row / (size_t)a.T), t = (int)(row % (size_t)a.T);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    size_t q_width = (size_t)a.heads * hd, kv_width = (size_t)a.kv_heads * hd;
    size_t row_width = a.mask == 2 ? q_width : q_width + 2 * kv_width;
    int pos = a.past + t, pad = a.pad ? a.pad[b] : 0;
    int last = a.mask == 1 ? pos : a.mask == 2 ? a.cache_len - 1 : a.past + a.T - 1;
    int first = pf_first_key(a, pos, pad);
    int len = first <= last ? last + 1 - first : 0;
    int per = (len + splits - 1) / splits;
    int begin = first + split * per, end = begin + per < last + 1 ? begin + per : last + 1;
    int kv = (a.head_begin + h) / a.kv_group - a.kv_begin;
    float slope = a.alibi ? a.alibi[h] : 0.0f;
    const float *q_row = qkv + row * row_width + (size_t)h * hd;
    size_t cache_row = a.rows ? (size_t)a.rows[b] : (size_t)b;
    const C *k_base = k_cache + cache_row * a.cache_len * kv_width + (size_t)kv * hd;
    const C *v_base = v_cache + cache_row * a.cache_len * kv_width + (size_t)kv * hd;

    float q[PF_DECODE_PER_LANE], acc[PF_DECODE_PER_LANE];
#pragma unroll
    for (int c = 0; c < PF_DECODE_PER_LANE; c++) {
        int i = lane + 32 * c;
        q[c] = i < hd ? q_row[i] : 0.0f;
        acc[c] = 0.0f;
    }
    float m = -INFINITY, l = 0.0f;
    for (int j0 = begin + warp; j0 < end; j0 += PF_DECODE_WARPS * PF_DECODE_BATCH) {
        float kr[PF_DECODE_BATCH][PF_DECODE_PER_LANE], vr[PF_DECODE_BATCH][PF_DECODE_PER_LANE];
#pragma unroll
        for (int u = 0; u < PF_DECODE_BATCH; u++) {
            int j = j0 + u * PF_DECODE_WARPS;
#pragma unroll
            for (int c = 0; c < PF_DECODE_PER_LANE; c++) {
                int i = lane + 32 * c;
                bool in = j < end && i < hd;
                kr[u][c] = in ? pf_cache_load(k_base, (size_t)j * kv_width + i) : 0.0f;
                vr[u][c] = in ? pf_cache_load(v_base, (size_t)j * kv_width + i) : 0.0f;
            }
        }
#pragma unroll
        for (int u = 0; u < PF_DECODE_BATCH; u++) {
            int j = j0 + u * PF_DECODE_WARPS;
            if (j >= end) break; /* the same for every lane */
            float s = 0.0f;
#pragma unroll
            for (int c = 0; c < PF_DECODE_PER_LANE; c++) s += q[c] * kr[u][c];
            s = pf_scaled_score(pf_warp_sum(s), a) + pf_alibi_bias(a, slope, j - pad);
            if (a.rel_bias)
                s += a.rel_bias[(size_t)h * a.rel_rows + pf_relative_bucket(j - pos, a.rel_buckets, a.rel_max_distance, a.mask != 1)];
            float m_new = fmaxf(m, s);
            float alpha = expf(m - m_new), e = expf(s - m_new); /* alpha 0 on the first key (m = -inf) */
            l = l * alpha + e;
#pragma unroll
            for (int c = 0; c < PF_DECODE_PER_LANE; c++) acc[c] = acc[c] * alpha + e * vr[u][c];
            m = m_new;
        }
    }
    /* The block's 4 warps into one (m, l, acc), in warp order. */
    if (lane == 0) warp_m[warp] = m, warp_l[warp] = l;
#pragma unroll
    for (int c = 0; c < PF_DECODE_PER_LANE; c++) warp_acc[warp][lane + 32 * c] = acc[c];
    __syncthreads();
    float M = -INFINITY, L = 0.0f;
    for (int w = 0; w < PF_DECODE_WARPS; w++) M = fmaxf(M, warp_m[w]);
    for (int w = 0; w < PF_DECODE_WARPS; w++)
        if (warp_l[w] > 0.0f) L += warp_l[w] * expf(warp_m[w] - M);
    float *part = partials + ((row * a.heads + h) * (size_t)splits + split) * (size_t)(hd + 2);
    float *o = out + row * q_width + (size_t)h * hd;
    for (int i = threadIdx.x; i < hd; i += blockDim.x) {
        float sum = 0.0f;
        for (int w = 0; w < PF_DECODE_WARPS; w++)
            if (warp_l[w] > 0.0f) sum += warp_acc[w][i] * expf(warp_m[w] - M);
        if (splits == 1) o[i] = L > 0.0f ? sum / L : 0.0f;
        else part[2 + i] = sum;
    }
    if (splits == 1) return;
    if (threadIdx.x == 0) {
        part[0] = M; /* -inf and l = 0 for an empty split */
        part[1] = L;
    }
    /* The last of the (row, head)'s blocks to get here combines: its partials are visible to it
       after the fence before each block's count. */
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned *count = counters + row * a.heads + h;
        int is_last = atomicAdd(count, 1u) == (unsigned)splits - 1;
        if (is_last) *count = 0; /* every other block has counted: ready for the next launch */
        last_block = is_last;
    }
    __syncthreads();
    if (!last_block) return;
    __threadfence();
    const float *parts = partials + (row * a.heads + h) * (size_t)splits * (hd + 2);
    if (threadIdx.x == 0) { /* pf_attention_combine_kernel's M and L, in its order */
        float MM = -INFINITY;
        for (int s = 0; s < splits; s++) MM = fmaxf(MM, __ldcg(parts + (size_t)s * (hd + 2)));
        float LL = 0.0f;
        for (int s = 0; s < splits; s++) {
            float ms = __ldcg(parts + (size_t)s * (hd + 2)), ls = __ldcg(parts + (size_t)s * (hd + 2) + 1);
            float w = ls > 0.0f ? expf(ms - MM) : 0.0f;
            split_w[s] = ls > 0.0f ? w : -1.0f; /* -1: the split saw no key, skipped */
            if (ls > 0.0f) LL += ls * w;
        }
        warp_l[0] = LL;
    }
    __syncthreads();
    const float LL = warp_l[0];
    for (int i = threadIdx.x; i < hd; i += blockDim.x) {
        float sum = 0.0f;
        for (int s = 0; s < splits; s++)
            if (split_w[s] >= 0.0f) sum += __ldcg(parts + (size_t)s * (hd + 2) + 2 + i) * split_w[s];
        o[i] = LL > 0.0f ? sum / LL : 0.0f;
    }
}

template <typename C>
static int pf_cuda__decode_attention(struct pf_cuda_rank *st, dim3 grid, float *out, float *partials,
                                     const float *qkv, const C *k_cache, const C *v_cache, const pf_attn_args &a) {
    pf_decode_attention_kernel<C><<<grid, 32 * PF_DECODE_WARPS, 0, st->stream>>>(out, partials, st->counters, qkv,
                                                                               k_cache, v_cache, a);
    PF_CUDA_CHECK_LAUNCH(st, pf_decode_attention_kernel);
    return PF_CUDA_OK;
}

/* out[rows][n_out] = x w^T + bias for 1..PF_GEMV_ROWS rows of 16-bit x (the GEMM's converted
   input) against 16-bit w [n_out][k], k a multiple of 8, both 16-byte aligned: what cuBLAS
   takes 8-9 µs for at a decode step's one row (39 % of HBM bandwidth). One warp per output
   column: lanes read the weight row in 16-byte loads (4 in flight a lane), products of the
   16-bit values are exact in fp32 and summed in fp32 in a fixed order (lane strides, then a
   shuffle tree), so every run gives the same bits. The bias is added as pf_add_bias_kernel adds it. */
#define PF_GEMV_ROWS 8
#define PF_GEMV_WARPS 8

__device__ __forceinline__ void pf_unpack8(const uint4 &v, float (&f)[8], __half) {
    const __half2 *h2 = (const __half2 *)&v;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        float2 p = __half22float2(h2[i]);
        f[2 * i] = p.x, f[2 * i + 1] = p.y;
    }
}

__device__ __forceinline__ void pf_unpack8(const uint4 &v, float (&f)[8], __nv_bfloat16) {
    const __nv_bfloat162 *h2 = (const __nv_bfloat162 *)&v;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        float2 p = __bfloat1622float2(h2[i]);
        f[2 * i] = p.x, f[2 * i + 1] = p.y;
    }
}

template <typename C>
__global__ void __launch_bounds__(32 * PF_GEMV_WARPS) pf_gemv16_kernel(float *out, const C *x, const C *w,
                                                                      const void *bias, int bias_dtype, int rows,
                                                                      int n_out, int k) {
    const int lane = threadIdx.x & 31;
    const int n = blockIdx.x * PF_GEMV_WARPS + (threadIdx.x >> 5);
    if (n >= n_out) return;
    const int chunks = k / 8;
    const uint4 *wr = (const uint4 *)(w + (size_t)n * k);
    float acc[PF_GEMV_ROWS];
#pragma unroll
    for (int r = 0; r < PF_GEMV_ROWS; r++) acc[r] = 0.0f;
    for (int c0 = lane; c0 < chunks; c0 += 4 * 32) {
        uint4 wv[4];
#pragma unroll
        for (int u = 0; u < 4; u++) {
            int c = c0 + 32 * u;
            /* read once: past L1, streamed */
            wv[u] = c < chunks ? __ldcs(wr + c) : make_uint4(0, 0, 0, 0);
        }
#pragma unroll
        for (int u = 0; u < 4; u++) {
            int c = c0 + 32 * u;
            if (c >= chunks) break;
            float wf[8];
            pf_unpack8(wv[u], wf, C());
#pragma unroll
            for (int r = 0; r < PF_GEMV_ROWS; r++) {
                if (r < rows) {
                    float xf[8];
                    pf_unpack8(__ldg((const uint4 *)(x + (size_t)r * k) + c), xf, C());
#pragma unroll
                    for (int i = 0; i < 8; i++) acc[r] = fmaf(wf[i], xf[i], acc[r]);
                }
            }
        }
    }
    const float add = pf_load(bias, bias_dtype, (size_t)n);
#pragma unroll
    for (int r = 0; r < PF_GEMV_ROWS; r++) {
        if (r < rows) {
            float v = pf_warp_sum(acc[r]);
            if (lane == 0) out[(size_t)r * n_out + n] = bias ? v + add : v;
        }
    }
}
#endif /* PF_CUDA_NEXT_KERNELS */

/* Whether pf_flash_attention_kernel takes this step: prefill over a 16-bit self-attention cache
   (masks 0 and 1), head_dim a multiple of 16 up to PF_FLASH_MAX_HEAD_DIM, 16-byte aligned caches
   (its vector loads), an sm_80+ device (wmma on bf16) with the shared memory it needs.
   test/cuda_standin.c's flash_takes states the same without the device's conditions. */
static int pf_cuda__flash_possible(struct pf_cuda_rank *st, const pf_attn_args &a, int cache_dtype,
                                   const void *k_cache, const void *v_cache) {
    if (a.T <= 1 || cache_dtype == PF_CUDA_F32 || a.mask == 2 || a.dense_bias || a.sinks || a.local_window > 0 ||
        a.global_queries || a.sparse_block > 0)
        return 0;
    if (a.hd % 16 || a.hd > PF_FLASH_MAX_HEAD_DIM || (((uintptr_t)k_cache | (uintptr_t)v_cache) & 15u)) return 0;
    int major = 0, most_shared = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, st->device) != cudaSuccess ||
        cudaDeviceGetAttribute(&most_shared, cudaDevAttrMaxSharedMemoryPerBlockOptin, st->device) != cudaSuccess) {
        (void)cudaGetLastError(); /* then the plain kernel, whose own launch reports a broken device */
        return 0;
    }
#ifdef PF_CUDA_NEXT_KERNELS
    return major >= 8 && pf_flash2_shared(a.hd) <= (size_t)most_shared;
#else
    return major >= 8 && pf_flash_layout_of(pf_flash_warps(a.hd), a.hd).total <= (size_t)most_shared;
#endif
}

/* Launches pf_flash_attention_kernel over caches of element type C (__half or __nv_bfloat16). */
template <typename C>
static int pf_cuda__flash_attention(struct pf_cuda_rank *st, int batch, float *out, const float *qkv, const C *k_cache,
                                    const C *v_cache, const pf_attn_args &a) {
    int warps = pf_flash_warps(a.hd), rows = 16 * warps;
    size_t shared = pf_flash_layout_of(warps, a.hd).total;
    if (shared > 48 * 1024) {
        PF_CUDA_CHECK(st, cudaFuncSetAttribute,
                      (pf_flash_attention_kernel<C>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shared));
    }
    dim3 grid((unsigned)((a.T + rows - 1) / rows), (unsigned)a.heads, (unsigned)batch);
    pf_flash_attention_kernel<C><<<grid, 32 * warps, shared, st->stream>>>(out, qkv, k_cache, v_cache, a);
    PF_CUDA_CHECK_LAUNCH(st, pf_flash_attention_kernel);
    return PF_CUDA_OK;
}

/* Beam search's row moves in units U (4 or 2 bytes): gathered into scratch, then scattered back. */
template <typename U>
static int pf_cuda__move_rows(struct pf_cuda_rank *st, U *cache, U *scratch, const int *dst, const int *src, size_t rows,
                              size_t row_units, size_t used_units) {
    size_t n = rows * used_units;
    pf_gather_rows_kernel<U><<<pf_blocks(n, PF_THREADS), PF_THREADS, 0, st->stream>>>(scratch, cache, src, rows,
                                                                                   used_units, row_units);
    PF_CUDA_CHECK_LAUNCH(st, pf_gather_rows_kernel);
    pf_scatter_rows_kernel<U><<<pf_blocks(n, PF_THREADS), PF_THREADS, 0, st->stream>>>(cache, scratch, dst, rows,
                                                                                    used_units, row_units);
    PF_CUDA_CHECK_LAUNCH(st, pf_scatter_rows_kernel);
    return PF_CUDA_OK;
}

/* ProphetNet's n-gram attention, a block of PF_NGRAM_THREADS per (query row, head): each key's score
   (q . k * scale + the row's bias at the key's bucket; the predict stream's own key last) into
   shared memory, the softmax's max and sum over the block, then each output value a sum over the
   keys in order (pf__backend.ngram_attend). */
#define PF_NGRAM_THREADS 128
template <typename C>
__global__ void pf_ngram_attend_kernel(float *out, const float *qkv, const float *rel, int rel_heads, int rel_width,
                                       const int32_t *buckets, const C *k_cache, const C *v_cache, const int *pad,
                                       const int *rows, int T, const int *past_at, int heads, int kv_heads, int head_dim,
                                       int head_begin, int kv_begin, int kv_group, int cache_len, float scale, int predict) {
    extern __shared__ float p[]; /* cache_len + 1 */
    __shared__ float red[32];
    size_t n = blockIdx.x;
    int h = (int)blockIdx.y, b = (int)(n / (size_t)T), t = (int)(n % (size_t)T);
    int first = pad ? pad[b] : 0, pos = past_at[0] + t, count = pos >= first ? pos + 1 - first : 0;
    int total = count + (predict ? 1 : 0);
    size_t hd = (size_t)head_dim, q_width = (size_t)heads * hd, kv_width = (size_t)kv_heads * hd;
    size_t kv = (size_t)((head_begin + h) / kv_group - kv_begin) * hd, head = (size_t)(head_begin + h);
    size_t cache_row = rows ? (size_t)rows[b] : (size_t)b;
    const C *keys = k_cache + cache_row * (size_t)cache_len * kv_width + kv;
    const C *values = v_cache + cache_row * (size_t)cache_len * kv_width + kv;
    const float *q = qkv + n * (q_width + 2 * kv_width) + (size_t)h * hd, *own_k = q - (size_t)h * hd + q_width + kv;
    const float *own_v = own_k + kv_width, *bias = rel + n * (size_t)rel_width;
    float most = -INFINITY;
    for (int k = threadIdx.x; k < total; k += blockDim.x) {
        float dot = 0.0f;
        int distance = 0;
        if (k < count) {
            int j = first + k;
            distance = pos + predict - j;
            for (size_t i = 0; i < hd; i++) dot += q[i] * pf_cache_load(keys, (size_t)j * kv_width + i);
        } else {
            for (size_t i = 0; i < hd; i++) dot += q[i] * own_k[i];
        }
        p[k] = dot * scale + bias[(size_t)buckets[distance] * (size_t)rel_heads + head];
        most = fmaxf(most, p[k]);
    }
    most = pf_block_max(most, red);
    float sum = 0.0f;
    for (int k = threadIdx.x; k < total; k += blockDim.x) sum += (p[k] = expf(p[k] - most));
    sum = pf_block_sum(sum, red);
    __syncthreads(); /* every weight written */
    float *o = out + n * q_width + (size_t)h * hd;
    for (size_t i = threadIdx.x; i < hd; i += blockDim.x) {
        float acc = 0.0f;
        for (int k = 0; k < count; k++) acc += p[k] * pf_cache_load(values, (size_t)(first + k) * kv_width + i);
        if (predict) acc += p[count] * own_v[i];
        o[i] = total ? acc / sum : 0.0f;
    }
}

template <typename C>
static int pf_cuda__ngram_attend(struct pf_cuda_rank *st, float *out, const float *qkv, const float *rel, int rel_heads,
                                 int rel_width, const int32_t *buckets, const C *k_cache, const C *v_cache, const int *pad,
                                 const int *rows, int batch, int T, const int *past_at, int heads, int kv_heads,
                                 int head_dim, int head_begin, int kv_begin, int kv_group, int cache_len, float scale,
                                 int predict) {
    dim3 grid((unsigned)((size_t)batch * T), (unsigned)heads);
    size_t shared = ((size_t)cache_len + 1) * sizeof(float);
    pf_ngram_attend_kernel<C><<<grid, PF_NGRAM_THREADS, shared, st->stream>>>(
        out, qkv, rel, rel_heads, rel_width, buckets, k_cache, v_cache, pad, rows, T, past_at, heads, kv_heads, head_dim,
        head_begin, kv_begin, kv_group, cache_len, scale, predict);
    PF_CUDA_CHECK_LAUNCH(st, pf_ngram_attend_kernel);
    return PF_CUDA_OK;
}

/* ---- the C ABI ------------------------------------------------------------------------------- */

extern "C" {

/* Number of visible CUDA devices; on failure *count is 0 and *reason (when given) the runtime's
   constant error string. Any thread; creates no context. */
int pf_cuda_device_count(int *count, const char **reason) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        (void)cudaGetLastError(); /* do not leave the error for a later call */
        *count = 0;
        if (reason) *reason = cudaGetErrorString(e);
        return pf_cuda__code(e);
    }
    *count = n;
    if (reason) *reason = NULL;
    return PF_CUDA_OK;
}

/* Free and total memory of a device. The library asks on the rank thread that owns the device
   (nothing to switch); from another thread, its current device is put back afterwards. */
int pf_cuda_device_memory(int device, size_t *free_bytes, size_t *total_bytes) {
    int previous = 0;
    cudaError_t e = cudaGetDevice(&previous);
    if (e == cudaSuccess && previous != device) e = cudaSetDevice(device);
    if (e == cudaSuccess) {
        e = cudaMemGetInfo(free_bytes, total_bytes);
        if (previous != device) cudaSetDevice(previous);
    }
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return pf_cuda__code(e);
    }
    return PF_CUDA_OK;
}

/* Makes `device` current on the calling thread (first), then creates the rank's stream and cuBLAS
   handle on it. On failure *out is NULL and the message is in (message, size). */
int pf_cuda_rank_create(int device, struct pf_cuda_rank **out, char *message, size_t size) {
    *out = NULL;
    struct pf_cuda_rank *st = (struct pf_cuda_rank *)calloc(1, sizeof *st);
    if (!st) return pf_cuda__fail(message, size, PF_CUDA_ERROR_OUT_OF_MEMORY, "calloc", "out of host memory", __LINE__);
    st->device = device;
    int code = PF_CUDA_OK;
    cudaError_t e = cudaSetDevice(device);
    if (e != cudaSuccess) {
        code = pf_cuda__fail(message, size, pf_cuda__code(e), "cudaSetDevice", cudaGetErrorString(e), __LINE__);
    } else if ((e = cudaStreamCreateWithFlags(&st->stream, cudaStreamNonBlocking)) != cudaSuccess) {
        code = pf_cuda__fail(message, size, pf_cuda__code(e), "cudaStreamCreateWithFlags", cudaGetErrorString(e), __LINE__);
    } else {
        cublasHandle_t blas = NULL; /* kept only once created: a failed create leaves nothing to destroy */
        const char *call = "cublasCreate";
        cublasStatus_t s = cublasCreate(&blas);
        if (s == CUBLAS_STATUS_SUCCESS) {
            st->blas = blas;
            call = "cublasSetStream";
            s = cublasSetStream(st->blas, st->stream);
        }
        /* Plain fp32 math in the fp32 mode: no TF32 (the tests hold it to 1e-3). */
        if (s == CUBLAS_STATUS_SUCCESS) call = "cublasSetMathMode", s = cublasSetMathMode(st->blas, CUBLAS_DEFAULT_MATH);
        if (s != CUBLAS_STATUS_SUCCESS)
            code = pf_cuda__fail(message, size,
                                 s == CUBLAS_STATUS_ALLOC_FAILED ? PF_CUDA_ERROR_OUT_OF_MEMORY : PF_CUDA_ERROR_DEVICE,
                                 call, cublasGetStatusString(s), __LINE__);
    }
#ifdef PF_CUDA_NEXT_KERNELS
    if (!code) {
        e = cudaMalloc((void **)&st->counters, PF_DECODE_COUNTERS * sizeof(unsigned));
        if (e == cudaSuccess) e = cudaMemset(st->counters, 0, PF_DECODE_COUNTERS * sizeof(unsigned));
        if (e != cudaSuccess) code = pf_cuda__fail(message, size, pf_cuda__code(e), "cudaMalloc", cudaGetErrorString(e), __LINE__);
    }
#endif
    if (code) {
#ifdef PF_CUDA_NEXT_KERNELS
        if (st->counters) cudaFree(st->counters);
#endif
        if (st->blas) cublasDestroy(st->blas);
        if (st->stream) cudaStreamDestroy(st->stream);
        free(st);
        return code;
    }
    *out = st;
    return PF_CUDA_OK;
}

/* Destroys the cuBLAS handle (which waits for the device) and the stream. NULL is fine. */
void pf_cuda_rank_destroy(struct pf_cuda_rank *st) {
    if (!st) return;
#ifdef PF_CUDA_NEXT_KERNELS
    if (st->counters) cudaFree(st->counters);
#endif
    if (st->blas) cublasDestroy(st->blas);
    if (st->stream) cudaStreamDestroy(st->stream);
    free(st);
}

const char *pf_cuda_rank_message(const struct pf_cuda_rank *st) { return st ? st->message : "no CUDA rank"; }

/* Gives cuBLAS a workspace the caller allocated (after the stream was set: setting the stream
   resets it). */
int pf_cuda_set_workspace(struct pf_cuda_rank *st, void *workspace, size_t bytes) {
    PF_CUBLAS_CHECK(st, cublasSetWorkspace, (st->blas, workspace, bytes));
    return PF_CUDA_OK;
}

/* The cuBLAS workspace NVIDIA recommends for Hopper (4 MiB before it). */
size_t pf_cuda_workspace_bytes(void) { return (size_t)32 << 20; }

int pf_cuda_malloc(struct pf_cuda_rank *st, void **ptr, size_t bytes) {
    *ptr = NULL;
    PF_CUDA_CHECK(st, cudaMalloc, (ptr, bytes));
    return PF_CUDA_OK;
}

int pf_cuda_free(struct pf_cuda_rank *st, void *ptr) {
    PF_CUDA_CHECK(st, cudaFree, (ptr));
    return PF_CUDA_OK;
}

/* Page-locked host memory (cudaMallocHost): a download into it is a direct DMA, without the
   runtime's staging copy through a pinned bounce buffer. */
int pf_cuda_host_alloc(struct pf_cuda_rank *st, void **ptr, size_t bytes) {
    *ptr = NULL;
    PF_CUDA_CHECK(st, cudaMallocHost, (ptr, bytes));
    return PF_CUDA_OK;
}

/* Frees pf_cuda_host_alloc's memory (waits for the device). NULL is fine. */
void pf_cuda_host_free(void *ptr) {
    if (ptr) (void)cudaFreeHost(ptr);
}

/* Host to device, then waits so the host buffer may be reused at once. */
int pf_cuda_upload(struct pf_cuda_rank *st, void *dst, const void *host, size_t bytes) {
    if (!bytes) return PF_CUDA_OK;
    PF_CUDA_CHECK(st, cudaMemcpyAsync, (dst, host, bytes, cudaMemcpyHostToDevice, st->stream));
    PF_CUDA_CHECK(st, cudaStreamSynchronize, (st->stream));
    return PF_CUDA_OK;
}

/* Device to host after the work queued before it; waits for the data. */
int pf_cuda_download(struct pf_cuda_rank *st, void *host, const void *src, size_t bytes) {
    if (!bytes) return PF_CUDA_OK;
    PF_CUDA_CHECK(st, cudaMemcpyAsync, (host, src, bytes, cudaMemcpyDeviceToHost, st->stream));
    PF_CUDA_CHECK(st, cudaStreamSynchronize, (st->stream));
    return PF_CUDA_OK;
}

/* Rows of row_bytes, strided on both sides (a rank's columns of the host logits); waits. */
int pf_cuda_download_rows(struct pf_cuda_rank *st, void *host, size_t host_stride, const void *src, size_t src_stride,
                          size_t row_bytes, size_t rows) {
    if (!rows || !row_bytes) return PF_CUDA_OK;
    PF_CUDA_CHECK(st, cudaMemcpy2DAsync,
                  (host, host_stride, src, src_stride, row_bytes, rows, cudaMemcpyDeviceToHost, st->stream));
    PF_CUDA_CHECK(st, cudaStreamSynchronize, (st->stream));
    return PF_CUDA_OK;
}

/* Device to device on the rank's stream (no wait). */
int pf_cuda_copy_async(struct pf_cuda_rank *st, void *dst, const void *src, size_t bytes) {
    if (!bytes) return PF_CUDA_OK;
    PF_CUDA_CHECK(st, cudaMemcpyAsync, (dst, src, bytes, cudaMemcpyDeviceToDevice, st->stream));
    return PF_CUDA_OK;
}

/* From another device's memory (or the same device's) to this rank's, on its stream (no wait);
   works without peer access, which the runtime then stages through the host. */
int pf_cuda_copy_peer_async(struct pf_cuda_rank *st, void *dst, const void *src, int src_device, size_t bytes) {
    if (!bytes) return PF_CUDA_OK;
    PF_CUDA_CHECK(st, cudaMemcpyPeerAsync, (dst, st->device, src, src_device, bytes, st->stream));
    return PF_CUDA_OK;
}

int pf_cuda_stream_sync(struct pf_cuda_rank *st) {
    PF_CUDA_CHECK(st, cudaStreamSynchronize, (st->stream));
    return PF_CUDA_OK;
}

/* *done = 1 when everything queued on the stream has finished (for a wait that can give up). */
int pf_cuda_stream_query(struct pf_cuda_rank *st, int *done) {
    cudaError_t e = cudaStreamQuery(st->stream);
    *done = e == cudaSuccess;
    if (e == cudaSuccess) return PF_CUDA_OK;
    (void)cudaGetLastError(); /* cudaErrorNotReady is no error; clear it */
    if (e == cudaErrorNotReady) return PF_CUDA_OK;
    return pf_cuda__fail(st->message, sizeof st->message, pf_cuda__code(e), "cudaStreamQuery", cudaGetErrorString(e),
                         __LINE__);
}

/* Host to device on the rank's stream without waiting. `host` must be pageable (malloc'd) memory,
   which the runtime has read (staged) by the time this returns, so the caller may change it at
   once; the device sees the data from the next operation queued on the stream on. */
int pf_cuda_upload_async(struct pf_cuda_rank *st, void *dst, const void *host, size_t bytes) {
    if (!bytes) return PF_CUDA_OK;
    PF_CUDA_CHECK(st, cudaMemcpyAsync, (dst, host, bytes, cudaMemcpyHostToDevice, st->stream));
    return PF_CUDA_OK;
}

/* out[row][:] = tokens[ids[row]][:] * scale for rows rows of d; ids_host ([rows], pageable host
   memory) is first copied to ids_device (room for rows int32), or, NULL, ids_device holds them
   already (staged earlier). */
int pf_cuda_embed(struct pf_cuda_rank *st, float *out, const void *tokens, int dtype, const int32_t *ids_host,
                  int32_t *ids_device, size_t rows, size_t d, float scale, int first, size_t table_rows) {
    if (!rows || !d) return PF_CUDA_OK;
    if (ids_host)
        PF_CUDA_CHECK(st, cudaMemcpyAsync, (ids_device, ids_host, rows * sizeof(int32_t), cudaMemcpyHostToDevice, st->stream));
    pf_embed_kernel<<<pf_blocks(rows * d, PF_THREADS), PF_THREADS, 0, st->stream>>>(out, tokens, dtype, ids_device,
                                                                                 rows, d, scale, first, table_rows);
    PF_CUDA_CHECK_LAUNCH(st, pf_embed_kernel);
    return PF_CUDA_OK;
}

/* x[b*T+t][:] += table[offset + position][:] for batch * T rows of d, position = past + t - pad[b]
   (0 at least; pad: device [batch] left pad counts, or NULL for none); table [>= offset + past + T][d]
   in dtype. The kernel reads past from past_at (device [1]), never by value: a graph captured
   over this launch replays with the past staged for each step. */
int pf_cuda_add_positions(struct pf_cuda_rank *st, float *x, const void *table, int dtype, const int *pad, int batch,
                          int T, const int *past_at, size_t offset, size_t d) {
    size_t rows = (size_t)batch * (size_t)T;
    if (!rows || !d || T <= 0) return PF_CUDA_OK;
    pf_add_positions_kernel<<<pf_blocks(rows * d, PF_THREADS), PF_THREADS, 0, st->stream>>>(x, table, dtype, pad,
                                                                                         rows, T, past_at, offset, d);
    PF_CUDA_CHECK_LAUNCH(st, pf_add_positions_kernel);
    return PF_CUDA_OK;
}

/* out[rows][n] = LayerNorm (rms 0) or RMSNorm (rms 1; rms 2: times 1 + weight; rms 3: no norm, x alone) of x[rows][n] times weight plus bias, each
   in its own dtype; weight NULL: 1, bias NULL: 0. out may equal x. out16: NULL, or room for
   rows * n values of out16_dtype (PF_CUDA_F16/BF16) that receive out rounded to nearest, for a
   pf_cuda_matmul over out that is then told its input is converted already. */
int pf_cuda_norm(struct pf_cuda_rank *st, float *out, const float *x, const void *weight, int weight_dtype,
                 const void *bias, int bias_dtype, size_t rows, size_t n, float eps, int rms, void *out16,
                 int out16_dtype) {
    if (!rows || !n) return PF_CUDA_OK;
    if (out16 && out16_dtype != PF_CUDA_F16 && out16_dtype != PF_CUDA_BF16)
        return pf_cuda__fail(st->message, sizeof st->message, PF_CUDA_ERROR_DEVICE, "pf_cuda_norm",
                             "the 16-bit copy's dtype is neither fp16 nor bf16", __LINE__);
    if (rms == 3) { /* NoNorm: no statistics, elementwise */
        pf_elementwise_norm_kernel<<<pf_blocks(rows * n, PF_THREADS), PF_THREADS, 0, st->stream>>>(
            (float *)x, NULL, NULL, 0, 0, out, weight, weight_dtype, bias, bias_dtype, rows, n, out16, out16_dtype);
        PF_CUDA_CHECK_LAUNCH(st, pf_elementwise_norm_kernel);
        return PF_CUDA_OK;
    }
    unsigned threads = n >= PF_THREADS ? PF_THREADS : (unsigned)((n + 31) / 32 * 32); /* a multiple of 32 */
    const size_t most = (size_t)1 << 30; /* rows per launch, well within gridDim.x */
    for (size_t first = 0; first < rows; first += most) {
        size_t count = rows - first < most ? rows - first : most;
        void *out16_part = out16 ? (char *)out16 + first * n * 2 : NULL; /* 2-byte elements */
        pf_norm_kernel<<<(unsigned)count, threads, 0, st->stream>>>(out + first * n, x + first * n, weight, weight_dtype,
                                                                    bias, bias_dtype, n, eps, rms, out16_part,
                                                                    out16_dtype);
        PF_CUDA_CHECK_LAUNCH(st, pf_norm_kernel);
    }
    return PF_CUDA_OK;
}

/* x[rows][n] += y + bias (pf_cuda_add_residual's sum; y or bias may be NULL), then out = norm(x)
   as pf_cuda_norm computes it (with its out16), in one launch: the residual stream is read once
   and the norm that follows a residual add costs no launch of its own. out may equal x. */
int pf_cuda_add_residual_norm(struct pf_cuda_rank *st, float *x, const float *y, const void *bias, int bias_dtype,
                              float *out, const void *weight, int weight_dtype, const void *norm_bias,
                              int norm_bias_dtype, size_t rows, size_t n, float eps, int rms, void *out16,
                              int out16_dtype) {
    if (!rows || !n) return PF_CUDA_OK;
    if (out16 && out16_dtype != PF_CUDA_F16 && out16_dtype != PF_CUDA_BF16)
        return pf_cuda__fail(st->message, sizeof st->message, PF_CUDA_ERROR_DEVICE, "pf_cuda_add_residual_norm",
                             "the 16-bit copy's dtype is neither fp16 nor bf16", __LINE__);
    if (rms == 3) { /* NoNorm */
        pf_elementwise_norm_kernel<<<pf_blocks(rows * n, PF_THREADS), PF_THREADS, 0, st->stream>>>(
            x, y, bias, bias_dtype, 1, out, weight, weight_dtype, norm_bias, norm_bias_dtype, rows, n, out16, out16_dtype);
        PF_CUDA_CHECK_LAUNCH(st, pf_elementwise_norm_kernel);
        return PF_CUDA_OK;
    }
    unsigned threads = n >= PF_THREADS ? PF_THREADS : (unsigned)((n + 31) / 32 * 32); /* as pf_cuda_norm's */
    const size_t most = (size_t)1 << 30;
    for (size_t first = 0; first < rows; first += most) {
        size_t count = rows - first < most ? rows - first : most, at = first * n;
#ifdef PF_CUDA_NEXT_KERNELS
        if (n <= (size_t)threads * PF_NORM_REGS) {
            pf_add_residual_norm_regs_kernel<<<(unsigned)count, threads, 0, st->stream>>>(
                x + at, y ? y + at : NULL, bias, bias_dtype, out + at, weight, weight_dtype, norm_bias,
                norm_bias_dtype, n, eps, rms, out16 ? (char *)out16 + at * 2 : NULL, out16_dtype);
            PF_CUDA_CHECK_LAUNCH(st, pf_add_residual_norm_regs_kernel);
            continue;
        }
#endif
        pf_add_residual_norm_kernel<<<(unsigned)count, threads, 0, st->stream>>>(
            x + at, y ? y + at : NULL, bias, bias_dtype, out + at, weight, weight_dtype, norm_bias, norm_bias_dtype, n,
            eps, rms, out16 ? (char *)out16 + at * 2 : NULL, out16_dtype);
        PF_CUDA_CHECK_LAUNCH(st, pf_add_residual_norm_kernel);
    }
    return PF_CUDA_OK;
}

/* out[rows][n_out] = x[rows][k] w^T + bias, w [n_out][k] row-major in w_dtype, bias [n_out] in
   bias_dtype or NULL. Row-major out = x w^T is column-major out^T = w^T x^T: cuBLAS gets A = w
   (k x n_out, transposed), B = x (k x rows). 16-bit weights: x is first rounded to that dtype
   into x_scratch (room for rows * k of them) unless x_converted says x_scratch holds that already
   (written by the norm that produced x, or by the GEMM before over the same x); the GEMM
   accumulates in fp32 and writes fp32. fp32 weights: plain fp32 GEMM (no TF32). k = 0 gives
   out = bias (zeros without one). */
int pf_cuda_matmul(struct pf_cuda_rank *st, float *out, const float *x, const void *w, int w_dtype, const void *bias,
                   int bias_dtype, size_t rows, size_t n_out, size_t k, void *x_scratch, int x_converted) {
    if (!rows || !n_out) return PF_CUDA_OK;
    if (rows > INT32_MAX || n_out > INT32_MAX || k > INT32_MAX)
        return pf_cuda__fail(st->message, sizeof st->message, PF_CUDA_ERROR_DEVICE, "pf_cuda_matmul",
                             "a dimension exceeds INT32_MAX", __LINE__);
    if (!k) {
        PF_CUDA_CHECK(st, cudaMemsetAsync, (out, 0, rows * n_out * sizeof(float), st->stream));
    } else {
        const void *B = x;
        cudaDataType type = CUDA_R_32F;
        if (w_dtype != PF_CUDA_F32) {
            if (!x_scratch)
                return pf_cuda__fail(st->message, sizeof st->message, PF_CUDA_ERROR_DEVICE, "pf_cuda_matmul",
                                     "16-bit weights need a conversion buffer", __LINE__);
            type = w_dtype == PF_CUDA_F16 ? CUDA_R_16F : CUDA_R_16BF;
            if (!x_converted) {
                pf_convert_kernel<<<pf_blocks(rows * k, PF_THREADS), PF_THREADS, 0, st->stream>>>(x_scratch, x,
                                                                                               rows * k, w_dtype);
                PF_CUDA_CHECK_LAUNCH(st, pf_convert_kernel);
            }
            B = x_scratch;
#ifdef PF_CUDA_NEXT_KERNELS
            /* A few rows (decode): pf_gemv16_kernel, the bias with it. */
            if (rows <= PF_GEMV_ROWS && k % 8 == 0 && !(((uintptr_t)w | (uintptr_t)x_scratch) & 15u)) {
                unsigned blocks = (unsigned)((n_out + PF_GEMV_WARPS - 1) / PF_GEMV_WARPS);
                if (w_dtype == PF_CUDA_F16)
                    pf_gemv16_kernel<__half><<<blocks, 32 * PF_GEMV_WARPS, 0, st->stream>>>(
                        out, (const __half *)x_scratch, (const __half *)w, bias, bias_dtype, (int)rows, (int)n_out, (int)k);
                else
                    pf_gemv16_kernel<__nv_bfloat16><<<blocks, 32 * PF_GEMV_WARPS, 0, st->stream>>>(
                        out, (const __nv_bfloat16 *)x_scratch, (const __nv_bfloat16 *)w, bias, bias_dtype, (int)rows,
                        (int)n_out, (int)k);
                PF_CUDA_CHECK_LAUNCH(st, pf_gemv16_kernel);
                return PF_CUDA_OK;
            }
#endif
        }
        const float one = 1.0f, zero = 0.0f;
        PF_CUBLAS_CHECK(st, cublasGemmEx,
                        (st->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)n_out, (int)rows, (int)k, &one, w, type, (int)k, B,
                         type, (int)k, &zero, out, CUDA_R_32F, (int)n_out, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }
    if (bias) {
        pf_add_bias_kernel<<<pf_blocks(rows * n_out, PF_THREADS), PF_THREADS, 0, st->stream>>>(out, bias, bias_dtype,
                                                                                            rows, n_out);
        PF_CUDA_CHECK_LAUNCH(st, pf_add_bias_kernel);
    }
    return PF_CUDA_OK;
}

/* Greedy token choice on the device: for each of rows rows of logits ([rows][n], the rank's
   vocabulary ids first..first + n - 1) the first maximum (pf_argmax_kernel) as (values[row],
   indices[row]), device [rows] each; the host combines the ranks' candidates. */
int pf_cuda_argmax(struct pf_cuda_rank *st, float *values, int32_t *indices, const float *logits, size_t rows, size_t n,
                   int first) {
    if (!rows) return PF_CUDA_OK;
    if (rows > 2147483647u || n > 2147483647u || (size_t)first + n > 2147483648u)
        return pf_cuda__fail(st->message, sizeof st->message, PF_CUDA_ERROR_DEVICE, "pf_cuda_argmax",
                             "rows or vocabulary ids exceed INT32_MAX", __LINE__);
    const unsigned threads = 1024; /* a vocabulary row per block: 150k logits in ~150 loads a thread */
    pf_argmax_kernel<<<(unsigned)rows, threads, 0, st->stream>>>(values, indices, logits, n, first);
    PF_CUDA_CHECK_LAUNCH(st, pf_argmax_kernel);
    return PF_CUDA_OK;
}

/* Sampling's candidates on the device: for each of rows rows of logits ([rows][n], the rank's
   vocabulary ids first..first + n - 1) its count best (pf_top_k_kernel) as values[row][0..count),
   indices[row][0..count), device [rows][count] each, best first; 1 <= count <= n and
   count <= PF_CUDA_TOP_K_MAX. The host merges the ranks' and samples from them. */
int pf_cuda_top_k(struct pf_cuda_rank *st, float *values, int32_t *indices, const float *logits, size_t rows, size_t n,
                  int first, size_t count) {
    if (!rows) return PF_CUDA_OK;
    if (rows > 2147483647u || n > 2147483647u || (size_t)first + n > 2147483648u)
        return pf_cuda__fail(st->message, sizeof st->message, PF_CUDA_ERROR_DEVICE, "pf_cuda_top_k",
                             "rows or vocabulary ids exceed INT32_MAX", __LINE__);
    if (!count || count > n || count > PF_CUDA_TOP_K_MAX)
        return pf_cuda__fail(st->message, sizeof st->message, PF_CUDA_ERROR_DEVICE, "pf_cuda_top_k",
                             "count is not in 1..min(n, 512)", __LINE__);
    pf_top_k_kernel<<<(unsigned)rows, PF_TOP_K_THREADS, 0, st->stream>>>(values, indices, logits, n, first,
                                                                        (unsigned)count);
    PF_CUDA_CHECK_LAUNCH(st, pf_top_k_kernel);
    return PF_CUDA_OK;
}

/* x = act(x) elementwise (PF_CUDA_GELU_TANH, _GELU_ERF, _RELU, _SILU, _TANH, _QUICK_GELU). The
   activations' x16 (as pf_cuda_norm's out16): NULL, or room for their output rounded to x16_dtype,
   for a pf_cuda_matmul over that output told its input is converted. */
int pf_cuda_activation(struct pf_cuda_rank *st, float *x, size_t count, int act, void *x16, int x16_dtype) {
    if (!count) return PF_CUDA_OK;
    pf_activation_kernel<<<pf_blocks(count, PF_THREADS), PF_THREADS, 0, st->stream>>>(x, count, act, x16, x16_dtype);
    PF_CUDA_CHECK_LAUNCH(st, pf_activation_kernel);
    return PF_CUDA_OK;
}

/* x = tanh(x / cap) * cap elementwise (a rank's share of soft-capped logits). */
int pf_cuda_softcap(struct pf_cuda_rank *st, float *x, size_t count, float cap) {
    if (!count) return PF_CUDA_OK;
    pf_softcap_kernel<<<pf_blocks(count, PF_THREADS), PF_THREADS, 0, st->stream>>>(x, count, cap);
    PF_CUDA_CHECK_LAUNCH(st, pf_softcap_kernel);
    return PF_CUDA_OK;
}

/* x[rows][n] = act(x + bias), bias [n] in dtype: the bias of the GEMM that wrote x (called
   without it), folded into the activation's launch. */
int pf_cuda_bias_activation(struct pf_cuda_rank *st, float *x, const void *bias, int dtype, size_t rows, size_t n, int act,
                            void *x16, int x16_dtype) {
    if (!rows || !n) return PF_CUDA_OK;
    pf_bias_activation_kernel<<<pf_blocks(rows * n, PF_THREADS), PF_THREADS, 0, st->stream>>>(x, bias, dtype, rows, n,
                                                                                           act, x16, x16_dtype);
    PF_CUDA_CHECK_LAUNCH(st, pf_bias_activation_kernel);
    return PF_CUDA_OK;
}

/* out[rows][width] = act(in[row][i]) * in[row][width + i], in [rows][2 * width]; out16 as
   pf_cuda_activation's x16. */
int pf_cuda_gated_activation(struct pf_cuda_rank *st, float *out, const float *in, size_t rows, size_t width, int act,
                             void *out16, int out16_dtype) {
    if (!rows || !width) return PF_CUDA_OK;
    pf_gated_activation_kernel<<<pf_blocks(rows * width, PF_THREADS), PF_THREADS, 0, st->stream>>>(
        out, in, rows, width, act, out16, out16_dtype);
    PF_CUDA_CHECK_LAUNCH(st, pf_gated_activation_kernel);
    return PF_CUDA_OK;
}

/* out[rows][width] = gpt-oss's clamped SwiGLU of in [rows][2 * width] (pf_clamped_swiglu_kernel). */
int pf_cuda_clamped_swiglu(struct pf_cuda_rank *st, float *out, const float *in, size_t rows, size_t width, float alpha,
                           float limit) {
    if (!rows || !width) return PF_CUDA_OK;
    pf_clamped_swiglu_kernel<<<pf_blocks(rows * width, PF_THREADS), PF_THREADS, 0, st->stream>>>(out, in, rows, width,
                                                                                             alpha, limit);
    PF_CUDA_CHECK_LAUNCH(st, pf_clamped_swiglu_kernel);
    return PF_CUDA_OK;
}

/* x[rows][n] += y + bias; y ([rows][n]) or bias ([n] in dtype) may be NULL. */
int pf_cuda_add_residual(struct pf_cuda_rank *st, float *x, const float *y, const void *bias, int dtype, size_t rows,
                         size_t n) {
    if (!rows || !n || (!y && !bias)) return PF_CUDA_OK;
    pf_add_residual_kernel<<<pf_blocks(rows * n, PF_THREADS), PF_THREADS, 0, st->stream>>>(x, y, bias, dtype, rows, n);
    PF_CUDA_CHECK_LAUNCH(st, pf_add_residual_kernel);
    return PF_CUDA_OK;
}

/* x[rows][n] += y + bias, then x += bias2 (bias2 [n] in dtype2): pf_cuda_add_residual twice, the
   second with no y, in one launch. y or bias may be NULL. */
int pf_cuda_add_residual_biases(struct pf_cuda_rank *st, float *x, const float *y, const void *bias, int dtype,
                                const void *bias2, int dtype2, size_t rows, size_t n) {
    if (!rows || !n) return PF_CUDA_OK;
    pf_add_residual_biases_kernel<<<pf_blocks(rows * n, PF_THREADS), PF_THREADS, 0, st->stream>>>(
        x, y, bias, dtype, bias2, dtype2, rows, n);
    PF_CUDA_CHECK_LAUNCH(st, pf_add_residual_biases_kernel);
    return PF_CUDA_OK;
}

/* sum = in (first != 0) or sum += in, count floats, both on this rank's device. */
/* x[count] *= factor (Granite's residual multiplier and logits scaling). */
int pf_cuda_scale(struct pf_cuda_rank *st, float *x, size_t count, float factor) {
    if (!count) return PF_CUDA_OK;
    pf_scale_kernel<<<pf_blocks(count, PF_THREADS), PF_THREADS, 0, st->stream>>>(x, count, factor);
    PF_CUDA_CHECK_LAUNCH(st, pf_scale_kernel);
    return PF_CUDA_OK;
}

int pf_cuda_gather_rows(struct pf_cuda_rank *st, float *dst, const float *src, const int32_t *rows, const float *scales,
                        size_t count, size_t width) {
    if (!count || !width) return PF_CUDA_OK;
    pf_gather_rows_kernel<<<pf_blocks(count * width, PF_THREADS), PF_THREADS, 0, st->stream>>>(dst, src, rows, scales, count,
                                                                                              width);
    PF_CUDA_CHECK_LAUNCH(st, pf_gather_rows_kernel);
    return PF_CUDA_OK;
}

int pf_cuda_scatter_add_rows(struct pf_cuda_rank *st, float *dst, const float *src, const int32_t *rows,
                             const float *scales, size_t count, size_t width) {
    if (!count || !width) return PF_CUDA_OK;
    pf_scatter_add_rows_kernel<<<pf_blocks(count * width, PF_THREADS), PF_THREADS, 0, st->stream>>>(
        dst, src, rows, scales, count, width);
    PF_CUDA_CHECK_LAUNCH(st, pf_scatter_add_rows_kernel);
    return PF_CUDA_OK;
}

int pf_cuda_depthwise_conv(struct pf_cuda_rank *st, float *out, const float *x, const void *w, int w_dtype, const int *pad,
                           int batch, int T, size_t width, int k) {
    size_t rows = (size_t)batch * (size_t)T;
    if (!rows || !width) return PF_CUDA_OK;
    pf_depthwise_conv_kernel<<<pf_blocks(rows * width, PF_THREADS), PF_THREADS, 0, st->stream>>>(out, x, w, w_dtype, pad, T,
                                                                                                 rows, width, k);
    PF_CUDA_CHECK_LAUNCH(st, pf_depthwise_conv_kernel);
    return PF_CUDA_OK;
}

int pf_cuda_multiply(struct pf_cuda_rank *st, float *x, const float *y, size_t y_stride, size_t rows, size_t n) {
    if (!rows || !n) return PF_CUDA_OK;
    pf_multiply_kernel<<<pf_blocks(rows * n, PF_THREADS), PF_THREADS, 0, st->stream>>>(x, y, y_stride, rows, n);
    PF_CUDA_CHECK_LAUNCH(st, pf_multiply_kernel);
    return PF_CUDA_OK;
}

int pf_cuda_span_conv(struct pf_cuda_rank *st, float *out, const float *logits, size_t logits_stride, const float *v,
                      const int *pad, int batch, int T, int heads, int head_dim, int k) {
    size_t rows = (size_t)batch * (size_t)T, width = (size_t)heads * (size_t)head_dim;
    if (!rows || !width) return PF_CUDA_OK;
    pf_span_conv_kernel<<<pf_blocks(rows * width, PF_THREADS), PF_THREADS, 0, st->stream>>>(out, logits, logits_stride, v,
                                                                                            pad, T, rows, heads, head_dim, k);
    PF_CUDA_CHECK_LAUNCH(st, pf_span_conv_kernel);
    return PF_CUDA_OK;
}

int pf_cuda_reformer_attend(struct pf_cuda_rank *st, float *out, const float *q, const float *k, const float *v,
                            const int32_t *keys, int len, int heads, int head_dim, int rounds, int listed, int shared_qk) {
    size_t total = (size_t)len * heads;
    if (!total) return PF_CUDA_OK;
    pf_reformer_attend_kernel<<<pf_blocks(total, PF_THREADS), PF_THREADS, 0, st->stream>>>(
        out, q, k, v, keys, len, heads, head_dim, rounds, listed, shared_qk);
    PF_CUDA_CHECK_LAUNCH(st, pf_reformer_attend_kernel);
    return PF_CUDA_OK;
}

int pf_cuda_funnel_bias(struct pf_cuda_rank *st, float *out, const float *q, const float *rel, const void *pos_bias,
                        int pos_dtype, const void *type_bias, int type_dtype, const void *seg, int seg_dtype,
                        const int32_t *ints, int batch, int q_len, int k_len, int heads, int head_dim, int q_first,
                        int q_stride, int k_first, int k_stride, int rel_first, int separate_cls, int exact_segments,
                        int causal, int window, float scale) {
    size_t total = (size_t)batch * q_len * heads * k_len;
    if (!total) return PF_CUDA_OK;
    pf_funnel_bias_kernel<<<pf_blocks(total, PF_THREADS), PF_THREADS, 0, st->stream>>>(
        out, q, rel, pos_bias, pos_dtype, type_bias, type_dtype, seg, seg_dtype, ints, batch, q_len, k_len, heads, head_dim,
        q_first, q_stride, k_first, k_stride, rel_first, separate_cls, exact_segments, causal, window, scale);
    PF_CUDA_CHECK_LAUNCH(st, pf_funnel_bias_kernel);
    return PF_CUDA_OK;
}

int pf_cuda_sum(struct pf_cuda_rank *st, float *sum, const float *in, size_t count, int first) {
    if (!count) return PF_CUDA_OK;
    pf_sum_kernel<<<pf_blocks(count, PF_THREADS), PF_THREADS, 0, st->stream>>>(sum, in, count, first);
    PF_CUDA_CHECK_LAUNCH(st, pf_sum_kernel);
    return PF_CUDA_OK;
}

/* count values of x clamped to [-limit, limit] in place (pf_clamp_kernel). */
int pf_cuda_clamp(struct pf_cuda_rank *st, float *x, size_t count, float limit) {
    if (!count) return PF_CUDA_OK;
    pf_clamp_kernel<<<pf_blocks(count, PF_THREADS), PF_THREADS, 0, st->stream>>>(x, count, limit);
    PF_CUDA_CHECK_LAUNCH(st, pf_clamp_kernel);
    return PF_CUDA_OK;
}

/* Llama 4's attention temperature: q of row b * T + t times 1 + scale * log1p(floor((p + 1) /
   floor_scale)), p = past + t - pad[b] (0 at least), in fp32 as transformers computes it. */
__global__ void pf_scale_queries_kernel(float *qkv, const int *pad, size_t rows, int T, const int *past_at,
                                        size_t q_width, size_t row_width, float floor_scale, float scale) {
    const int past = *past_at;
    PF_GRID_STRIDE(k, rows * q_width) {
        size_t row = k / q_width;
        int b = (int)(row / (size_t)T), t = (int)(row % (size_t)T);
        float p = (float)pf_position(pad, b, past, t);
        float factor = __fadd_rn(__fmul_rn(log1pf(floorf(__fdiv_rn(__fadd_rn(p, 1.0f), floor_scale))), scale), 1.0f);
        float *x = qkv + row * row_width + k % q_width;
        *x = __fmul_rn(*x, factor);
    }
}

int pf_cuda_scale_queries(struct pf_cuda_rank *st, float *qkv, const int *pad, int batch, int T, const int *past_at,
                          int heads, int kv_heads, int head_dim, float floor_scale, float scale) {
    size_t rows = (size_t)batch * (size_t)T, q_width = (size_t)heads * (size_t)head_dim;
    if (!rows || T <= 0 || !q_width) return PF_CUDA_OK;
    size_t row_width = (size_t)(heads + 2 * kv_heads) * (size_t)head_dim;
    pf_scale_queries_kernel<<<pf_blocks(rows * q_width, PF_THREADS), PF_THREADS, 0, st->stream>>>(
        qkv, pad, rows, T, past_at, q_width, row_width, floor_scale, scale);
    PF_CUDA_CHECK_LAUNCH(st, pf_scale_queries_kernel);
    return PF_CUDA_OK;
}

/* OLMo 2's qk-norm statistics: sums[row] = {the sum of squares of the heads q heads of a qkv row,
   of its k heads k_first..k_first + k_count - 1}, zeros without heads (pf_qk_sum_squares_kernel). */
int pf_cuda_qk_sum_squares(struct pf_cuda_rank *st, float *sums, const float *qkv, size_t rows, int heads, int kv_heads,
                           int head_dim, int k_first, int k_count) {
    if (!rows) return PF_CUDA_OK;
    size_t hd = (size_t)head_dim, q = heads > 0 ? (size_t)heads * hd : 0;
    size_t width = heads > 0 ? (size_t)(heads + 2 * kv_heads) * hd : 0;
    size_t k_len = heads > 0 && k_count > 0 ? (size_t)k_count * hd : 0;
    const size_t most = (size_t)1 << 30; /* rows per launch */
    for (size_t first = 0; first < rows; first += most) {
        size_t n = rows - first < most ? rows - first : most;
        pf_qk_sum_squares_kernel<<<(unsigned)n, PF_THREADS, 0, st->stream>>>(
            sums + 2 * first, qkv ? qkv + first * width : qkv, q, (size_t)(k_first > 0 ? k_first : 0) * hd, k_len, width);
        PF_CUDA_CHECK_LAUNCH(st, pf_qk_sum_squares_kernel);
    }
    return PF_CUDA_OK;
}

/* Then q and k of the rows rows of qkv normed by those sums, summed over the ranks: x = gain *
   (x / sqrt(sum / width + eps)), gains [heads * head_dim] in q_dtype and [kv_heads * head_dim]
   in k_dtype (NULL: that side left as it is) (pf_qk_scale_kernel). */
int pf_cuda_qk_scale(struct pf_cuda_rank *st, float *qkv, const float *sums, const void *q_weight, int q_dtype,
                     const void *k_weight, int k_dtype, size_t rows, int heads, int kv_heads, int head_dim, float q_width,
                     float k_width, float eps) {
    if (!rows || heads <= 0 || (!q_weight && !k_weight)) return PF_CUDA_OK;
    size_t hd = (size_t)head_dim, q = (size_t)heads * hd, kv = (size_t)kv_heads * hd;
    size_t n = rows * (q + kv);
    pf_qk_scale_kernel<<<pf_blocks(n, PF_THREADS), PF_THREADS, 0, st->stream>>>(
        qkv, sums, q_weight, q_dtype, k_weight, k_dtype, rows, q, kv, q + 2 * kv, q_width, k_width, eps);
    PF_CUDA_CHECK_LAUNCH(st, pf_qk_scale_kernel);
    return PF_CUDA_OK;
}

/* qk-norm: each of the heads q heads and kv_heads k heads of the rows rows of qkv ([q heads | k
   heads | v heads] of head_dim each) normed in place over its head_dim values as pf_cuda_norm
   normalises a row (LayerNorm, or RMSNorm when rms), times its side's gain [head_dim] (in
   q_dtype, k_dtype; NULL: that side is left as it is), or with per_head its own gain, row h of
   its side's [heads][head_dim]; plus its side's bias [head_dim] (q_bias, k_bias; NULL: none)
   (pf_head_norm_kernel). */
int pf_cuda_head_norm(struct pf_cuda_rank *st, float *qkv, const void *q_weight, int q_dtype, const void *k_weight,
                      int k_dtype, const void *q_bias, int qb_dtype, const void *k_bias, int kb_dtype, size_t rows,
                      int heads, int kv_heads, int head_dim, float eps, int rms, int per_head) {
    int count = heads + kv_heads;
    if (!rows || count <= 0 || head_dim <= 0 || (!q_weight && !k_weight)) return PF_CUDA_OK;
    unsigned threads = head_dim >= PF_THREADS ? PF_THREADS : (unsigned)((head_dim + 31) / 32 * 32);
    size_t width = (size_t)(heads + 2 * kv_heads) * (size_t)head_dim;
    const size_t most = ((size_t)1 << 30) / (size_t)count; /* rows per launch: blocks well within gridDim.x */
    for (size_t first = 0; first < rows; first += most) {
        size_t n = rows - first < most ? rows - first : most;
        pf_head_norm_kernel<<<(unsigned)(n * (size_t)count), threads, 0, st->stream>>>(
            qkv + first * width, q_weight, q_dtype, k_weight, k_dtype, q_bias, qb_dtype, k_bias, kb_dtype, heads,
            kv_heads, head_dim, width, eps, rms, per_head);
        PF_CUDA_CHECK_LAUNCH(st, pf_head_norm_kernel);
    }
    return PF_CUDA_OK;
}

/* Rotates the first rotary_dim dims of the heads q heads and kv_heads k heads of each of the
   batch * T rows of qkv ([q heads | k heads | v heads] of head_dim each) by position
   past + t - pad[b] (0 at least; pad: device [batch] left pad counts, or NULL): dims
   (i, i + rotary_dim/2), or (2i, 2i + 1) when pairs, by angle position * inv_freq[i]; inv_freq
   ([rotary_dim / 2] fp32) and past (past_at, [1]) are in device memory. bias ([row width] in
   bias_dtype, or NULL): the QKV GEMM's, which it left out, added to every element of the rows
   first (pf_rotary_kernel). */
int pf_cuda_rotary(struct pf_cuda_rank *st, float *qkv, const void *bias, int bias_dtype, const float *inv_freq,
                   const int *pad, int batch, int T, const int *past_at, int heads, int kv_heads, int head_dim,
                   int rotary_dim, int pairs, float scale) {
    int half = rotary_dim / 2, rotated = heads + kv_heads;
    size_t rows = (size_t)batch * (size_t)T;
    if (!rows || T <= 0 || rotated <= 0 || (half <= 0 && !bias)) return PF_CUDA_OK;
    if (half < 0) half = 0;
    if (rotary_dim > head_dim || (half && !inv_freq))
        return pf_cuda__fail(st->message, sizeof st->message, PF_CUDA_ERROR_DEVICE, "pf_cuda_rotary",
                             rotary_dim > head_dim ? "rotary_dim exceeds head_dim" : "no frequencies", __LINE__);
    size_t row_width = (size_t)(heads + 2 * kv_heads) * head_dim;
    size_t n = rows * (size_t)rotated * (size_t)half + (bias ? rows * (row_width - (size_t)rotated * 2 * half) : 0);
    pf_rotary_kernel<<<pf_blocks(n, PF_THREADS), PF_THREADS, 0, st->stream>>>(
        qkv, bias, bias_dtype, inv_freq, pad, rows, T, past_at, rotated, head_dim, row_width, half, pairs, scale);
    PF_CUDA_CHECK_LAUNCH(st, pf_rotary_kernel);
    return PF_CUDA_OK;
}

/* Decode splits for a query that sees `len` keys: 16 keys a block or more, at most PF_MAX_SPLITS
   blocks per head (small enough that the tiny test fixtures use several). Non-decreasing in len,
   so the splits of a windowed layer (len = min(window, past + 1)) are the same for every past
   whose unwindowed splits are: a graph key that holds pf_cuda_decode_splits(past + 1) covers
   every layer. */
int pf_cuda_decode_splits(int len) {
    int splits = (len + 15) / 16;
    return splits < 1 ? 1 : (splits > PF_MAX_SPLITS ? PF_MAX_SPLITS : splits);
}

/* Floats of the partials buffer pf_cuda_attention needs for decode steps of up to max_batch
   sequences on `heads` (local query) heads. */
size_t pf_cuda_attention_scratch_floats(int max_batch, int heads, int head_dim) {
    return (size_t)max_batch * heads * PF_MAX_SPLITS * ((size_t)head_dim + 2);
}

/* Appends k and v of this step (from the qkv rows [q (heads * head_dim) | k (kv_heads *
   head_dim) | v (same)]) to the caches ([rows][cache_len][kv_heads * head_dim] of cache_dtype,
   rounded to nearest) at positions past..past+T-1, sequence b in cache row rows[b] (device
   [batch]; NULL: row b). past is checked here; the kernel reads it from past_at (device [1]).
   bias ([row width] in bias_dtype, or NULL): the QKV GEMM's, which it left out, added to the
   whole qkv rows (q too) first, in place (pf_kv_append_kernel). */
int pf_cuda_kv_append(struct pf_cuda_rank *st, void *k_cache, void *v_cache, int cache_dtype, float *qkv,
                      const void *bias, int bias_dtype, const int *rows, int batch, int T, int past, const int *past_at,
                      int heads, int kv_heads, int head_dim, int cache_len) {
    if (kv_heads <= 0 || head_dim <= 0 || batch <= 0 || T <= 0) return PF_CUDA_OK;
    if (past < 0 || past + T > cache_len || !past_at)
        return pf_cuda__fail(st->message, sizeof st->message, PF_CUDA_ERROR_DEVICE, "pf_cuda_kv_append",
                             past_at ? "positions beyond the cache" : "no device copy of past", __LINE__);
    size_t q_width = (size_t)heads * head_dim, kv_width = (size_t)kv_heads * head_dim;
    if (cache_dtype == PF_CUDA_F16)
        return pf_cuda__kv_append(st, (__half *)k_cache, (__half *)v_cache, qkv, bias, bias_dtype, rows, batch, T,
                                  past_at, cache_len, q_width, kv_width);
    if (cache_dtype == PF_CUDA_BF16)
        return pf_cuda__kv_append(st, (__nv_bfloat16 *)k_cache, (__nv_bfloat16 *)v_cache, qkv, bias, bias_dtype, rows,
                                  batch, T, past_at, cache_len, q_width, kv_width);
    return pf_cuda__kv_append(st, (float *)k_cache, (float *)v_cache, qkv, bias, bias_dtype, rows, batch, T, past_at,
                              cache_len, q_width, kv_width);
}

/* In the fields of args (pf_cuda_attention_args):
   out[b*T+t] (heads * head_dim wide) = softmax(q k^T * scale + alibi[h] * (j - pad[b])) v per
   local query head h, over the keys j the query at cache index pos = past + t sees: pad[b] <= j
   <= pos (left pads are never keys; mask 0, encoders: j <= past + T - 1 instead; mask 2,
   cross-attention: j < cache_len, q rows packed [heads * head_dim]), and
   pos - j < window when window > 0; a query with no key
   (a pad's own) gets zeros. Longformer's passes (mask 0, the plain kernel, one split): local_window
   > 0 keeps the keys with |pos - j| <= local_window or global[b*T+j] (the others masked out of the
   whole sequence's range); global_queries computes the rows b*T+t with global[b*T+t] alone,
   over every key, and leaves the others' out as it was. BigBird's (mask 0, the plain kernel, one
   split): sparse_block > 0 counts key j pf_block_sparse_count times in the query's softmax (score +
   log count; 0: masked out). pad: device [batch] left pad counts, or NULL for none; rows: device
   [batch], the cache row of each sequence, or NULL for row b. qkv rows are
   [q (heads * head_dim) | k (kv_heads * head_dim) | v (same)]; q head h reads kv head
   (head_begin + h) / kv_group - kv_begin; the caches hold cache_dtype. alibi: device [heads] or NULL. T > 1 (prefill):
   tiles of queries on tensor cores over 16-bit caches where pf_cuda__flash_possible says so, else one
   block per (query, head). T == 1 (decode): the keys are split over several blocks per head whose
   partial softmax sums are combined, using `partials`
   (pf_cuda_attention_scratch_floats(batch, heads, head_dim) floats), in pf_cuda_decode_splits of
   the keys blocks. past is checked and sizes the splits here; the kernels read it from past_at
   (device [1]), so a graph captured over this launch serves every step with the same splits. */
int pf_cuda_attend(struct pf_cuda_rank *st, const pf_cuda_attention_args *args) {
    /* The arguments the checks and launches below read more than once, by their names. */
    const int batch = args->batch, T = args->T, past = args->past, heads = args->heads, head_dim = args->head_dim;
    const int cache_dtype = args->cache_dtype, mask = args->mask, cache_len = args->cache_len, window = args->window;
    const int kv_heads = args->kv_heads, kv_group = args->kv_group, head_begin = args->head_begin;
    const int kv_begin = args->kv_begin;
    float *out = args->out, *partials = args->partials;
    const float *qkv = args->qkv;
    const void *k_cache = args->k_cache, *v_cache = args->v_cache;
    if (heads <= 0 || head_dim <= 0 || batch <= 0 || T <= 0) return PF_CUDA_OK;
    const char *bad = NULL;
    if (kv_heads <= 0 || kv_group <= 0 || head_begin / kv_group - kv_begin < 0 ||
        (head_begin + heads - 1) / kv_group - kv_begin >= kv_heads)
        bad = "query heads map outside the rank's key/value heads";
    else if (past < 0 || (mask != 2 && past + T > cache_len))
        bad = "positions beyond the cache";
    else if (!args->past_at)
        bad = "no device copy of past";
    else if (batch > 65535 || heads > 65535 || (size_t)batch * T > 2147483647u) /* grid limits */
        bad = "batch, heads or tokens exceed the grid";
    if (bad) return pf_cuda__fail(st->message, sizeof st->message, PF_CUDA_ERROR_DEVICE, "pf_cuda_attend", bad, __LINE__);
    size_t shared = ((size_t)2 * head_dim + PF_CHUNK + 32) * sizeof(float);
    /* Keys of the (one) decode query without pads: a padded sequence's splits have fewer each. */
    int len = mask == 2 ? cache_len : window > 0 && past + 1 > window ? window : past + 1;
    /* Longformer's passes and BigBird's blocks: one split, the plain kernel (a global pass leaves rows
       unwritten, which a combine would write; the other kernels know neither mask) */
    int longformer = args->local_window > 0 || args->global_queries || args->sparse_block > 0;
    int splits = T == 1 && partials && !longformer ? pf_cuda_decode_splits(len) : 1;
    pf_attn_args a;
    a.T = T;
    a.past = 0; /* the kernels read it from past_at */
    a.past_at = args->past_at;
    a.heads = heads;
    a.kv_heads = kv_heads;
    a.hd = head_dim;
    a.head_begin = head_begin;
    a.kv_begin = kv_begin;
    a.kv_group = kv_group;
    a.cache_len = cache_len;
    a.window = window;
    a.chunk = args->chunk;
    a.mask = mask;
    a.local_window = args->local_window;
    a.global_queries = args->global_queries;
    a.global = args->global;
    a.sparse_block = args->sparse_block;
    a.sparse_random = args->sparse_random;
    a.scale = args->scale;
    a.softcap = args->softcap;
    a.alibi = args->alibi;
    a.alibi_rounded = args->alibi_rounded;
    a.rel_bias = args->rel_bias;
    a.rel_rows = args->rel_rows;
    a.rel_buckets = args->rel_buckets;
    a.rel_max_distance = args->rel_max_distance;
    a.dense_bias = args->dense_bias;
    a.sinks = args->sinks;
    a.sinks_dtype = args->sinks_dtype;
    a.pad = args->pad;
    a.rows = args->rows;
#ifdef PF_CUDA_NEXT_KERNELS
    if (pf_cuda__flash_possible(st, a, cache_dtype, k_cache, v_cache))
        return cache_dtype == PF_CUDA_F16
                   ? pf_cuda__flash2_attention(st, batch, out, qkv, (const __half *)k_cache, (const __half *)v_cache, a)
                   : pf_cuda__flash2_attention(st, batch, out, qkv, (const __nv_bfloat16 *)k_cache,
                                               (const __nv_bfloat16 *)v_cache, a);
    /* Decode in one launch where the rank's counters cover the (row, head) pairs. */
    if (T == 1 && head_dim <= 32 * PF_DECODE_PER_LANE && st->counters && !a.dense_bias && !a.sinks && !longformer &&
        (splits == 1 || (size_t)batch * heads <= PF_DECODE_COUNTERS)) {
        dim3 decode_grid((unsigned)batch, (unsigned)heads, (unsigned)splits);
        return cache_dtype == PF_CUDA_F16
                   ? pf_cuda__decode_attention(st, decode_grid, out, partials, qkv, (const __half *)k_cache,
                                               (const __half *)v_cache, a)
               : cache_dtype == PF_CUDA_BF16
                   ? pf_cuda__decode_attention(st, decode_grid, out, partials, qkv, (const __nv_bfloat16 *)k_cache,
                                               (const __nv_bfloat16 *)v_cache, a)
                   : pf_cuda__decode_attention(st, decode_grid, out, partials, qkv, (const float *)k_cache,
                                               (const float *)v_cache, a);
    }
#endif
    if (pf_cuda__flash_possible(st, a, cache_dtype, k_cache, v_cache))
        return cache_dtype == PF_CUDA_F16
                   ? pf_cuda__flash_attention(st, batch, out, qkv, (const __half *)k_cache, (const __half *)v_cache, a)
                   : pf_cuda__flash_attention(st, batch, out, qkv, (const __nv_bfloat16 *)k_cache,
                                              (const __nv_bfloat16 *)v_cache, a);
    dim3 grid((unsigned)((size_t)batch * T), (unsigned)heads, (unsigned)splits);
    int status = cache_dtype == PF_CUDA_F16
                     ? pf_cuda__attention(st, grid, shared, out, partials, qkv, (const __half *)k_cache,
                                          (const __half *)v_cache, a)
                 : cache_dtype == PF_CUDA_BF16
                     ? pf_cuda__attention(st, grid, shared, out, partials, qkv, (const __nv_bfloat16 *)k_cache,
                                          (const __nv_bfloat16 *)v_cache, a)
                     : pf_cuda__attention(st, grid, shared, out, partials, qkv, (const float *)k_cache,
                                          (const float *)v_cache, a);
    if (status != PF_CUDA_OK) return status;
    if (splits > 1) {
        dim3 combine_grid((unsigned)heads, (unsigned)batch);
        pf_attention_combine_kernel<<<combine_grid, PF_ATTN_THREADS, 0, st->stream>>>(out, partials, heads, head_dim,
                                                                                      splits);
        PF_CUDA_CHECK_LAUNCH(st, pf_attention_combine_kernel);
    }
    return PF_CUDA_OK;
}

/* Latent attention's cache rows (multi-head latent attention, DeepSeek): this step's rows of
   kv_a_proj, latent [batch*T][latent_rank + rope_dim] = [latent | shared key], into the cache
   ([rows][cache_len][latent_rank + rope_dim] of cache_dtype) at positions past..past+T-1,
   sequence b in cache row rows[b] (device; NULL: row b): the latent RMSNormed (gain norm
   [latent_rank], eps), the key rotated by position (pad: device left pads or NULL; inv_freq:
   device [rope_dim / 2]; pairs or halves; cos and sin times rope_scale). past is checked here,
   the kernel reads it from past_at. */
int pf_cuda_latent_append(struct pf_cuda_rank *st, void *cache, int cache_dtype, const float *latent, const void *norm,
                          int norm_dtype, const float *inv_freq, const int *pad, const int *rows, int batch, int T,
                          int past, const int *past_at, int latent_rank, int rope_dim, int cache_len, int pairs,
                          float rope_scale, float eps) {
    if (batch <= 0 || T <= 0 || latent_rank <= 0) return PF_CUDA_OK;
    if (past < 0 || past + T > cache_len || !past_at || rope_dim % 2 || (size_t)batch * T > 2147483647u)
        return pf_cuda__fail(st->message, sizeof st->message, PF_CUDA_ERROR_DEVICE, "pf_cuda_latent_append",
                             "positions beyond the cache, or no device copy of past", __LINE__);
    if (cache_dtype == PF_CUDA_F16)
        return pf_cuda__latent_append(st, (__half *)cache, latent, norm, norm_dtype, inv_freq, pad, rows, batch, T,
                                      past_at, latent_rank, rope_dim, cache_len, pairs, rope_scale, eps);
    if (cache_dtype == PF_CUDA_BF16)
        return pf_cuda__latent_append(st, (__nv_bfloat16 *)cache, latent, norm, norm_dtype, inv_freq, pad, rows, batch,
                                      T, past_at, latent_rank, rope_dim, cache_len, pairs, rope_scale, eps);
    return pf_cuda__latent_append(st, (float *)cache, latent, norm, norm_dtype, inv_freq, pad, rows, batch, T, past_at,
                                  latent_rank, rope_dim, cache_len, pairs, rope_scale, eps);
}

/* Latent attention (DeepSeek) over the cached latents, causal: out[b*T+t] ([heads][v_head_dim]) =
   per local head h, softmax over the keys j the query at pos = past + t sees (pad[b] <= j <= pos,
   pos - j < window when window > 0) of q.k_j * scale, times v_j, where k_j = [kv_b's key rows of
   h . latent_j | key_j] and v_j = kv_b's value rows of h . latent_j (kv_b: [heads * (head_dim -
   rope_dim + v_head_dim)][latent_rank] in kv_b_dtype), computed in the absorbed form; q rows
   ([heads][head_dim], rope part last) have their rope part rotated in place first. A pad's own
   query gets zeros. */
int pf_cuda_latent_attend(struct pf_cuda_rank *st, float *out, float *q, const void *cache, int cache_dtype,
                          const void *kv_b, int kv_b_dtype, const float *inv_freq, const int *pad, const int *rows,
                          int batch, int T, int past, const int *past_at, int heads, int head_dim, int rope_dim,
                          int v_head_dim, int latent_rank, int cache_len, int window, float scale, int pairs,
                          float rope_scale) {
    if (heads <= 0 || batch <= 0 || T <= 0) return PF_CUDA_OK;
    size_t shared = ((size_t)head_dim + 2 * (size_t)latent_rank + PF_LATENT_THREADS + 32) * sizeof(float);
    if (past < 0 || past + T > cache_len || !past_at || rope_dim % 2 || rope_dim >= head_dim || heads > 65535 ||
        (size_t)batch * T > 2147483647u || shared > 48 * 1024)
        return pf_cuda__fail(st->message, sizeof st->message, PF_CUDA_ERROR_DEVICE, "pf_cuda_latent_attend",
                             "positions beyond the cache, no device copy of past, or sizes beyond the kernel's", __LINE__);
    if (cache_dtype == PF_CUDA_F16)
        return pf_cuda__latent_attend(st, out, q, (const __half *)cache, kv_b, kv_b_dtype, inv_freq, pad, rows, batch,
                                      T, past_at, heads, head_dim, rope_dim, v_head_dim, latent_rank, cache_len, window,
                                      scale, pairs, rope_scale);
    if (cache_dtype == PF_CUDA_BF16)
        return pf_cuda__latent_attend(st, out, q, (const __nv_bfloat16 *)cache, kv_b, kv_b_dtype, inv_freq, pad, rows,
                                      batch, T, past_at, heads, head_dim, rope_dim, v_head_dim, latent_rank, cache_len,
                                      window, scale, pairs, rope_scale);
    return pf_cuda__latent_attend(st, out, q, (const float *)cache, kv_b, kv_b_dtype, inv_freq, pad, rows, batch, T,
                                  past_at, heads, head_dim, rope_dim, v_head_dim, latent_rank, cache_len, window, scale,
                                  pairs, rope_scale);
}

/* DeBERTa's row of the relative embeddings for a distance (make_log_bucket_position in fp32, as
   the CPU backend's pf__disentangled_row): log buckets beyond position_buckets / 2, clamped. */
__device__ int pf_disentangled_row(int distance, int position_buckets, int max_relative_positions, int span) {
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

/* grid (batch * T query rows, heads), threads over the keys: out[row][h][j] = (c2p q.pk + p2c
   k_j.pq) * scale at the pair's row of rel_qkv ([2 span][q | k | v] of the rank's heads). */
__global__ void pf_disentangled_bias_kernel(float *out, const float *qkv, const float *rel_qkv, int T, int heads,
                                            int kv_heads, int hd, int head_begin, int kv_begin, int kv_group, int c2p,
                                            int p2c, int position_buckets, int max_relative_positions, int span,
                                            int rel_width, float scale) {
    size_t row = blockIdx.x, q_width = (size_t)heads * hd, row_width = q_width + 2 * (size_t)kv_heads * hd;
    int h = blockIdx.y, i = (int)(row % T);
    size_t kv = (size_t)((head_begin + h) / kv_group - kv_begin) * hd, first = row - i;
    const float *q = qkv + row * row_width + (size_t)h * hd;
    for (int j = threadIdx.x; j < T; j += blockDim.x) {
        const float *k = qkv + (first + j) * row_width + q_width + kv;
        const float *rel = rel_qkv + (size_t)pf_disentangled_row(i - j, position_buckets, max_relative_positions, span) * rel_width;
        float c2p_sum = 0.0f, p2c_sum = 0.0f;
        for (int d = 0; d < hd; d++) {
            c2p_sum += q[d] * rel[q_width + kv + d];
            p2c_sum += k[d] * rel[(size_t)h * hd + d];
        }
        out[(row * heads + h) * T + j] = ((c2p ? c2p_sum : 0.0f) + (p2c ? p2c_sum : 0.0f)) * scale;
    }
}

int pf_cuda_disentangled_bias(struct pf_cuda_rank *st, float *out, const float *qkv, const float *rel_qkv, int batch, int T,
                              int heads, int kv_heads, int head_dim, int head_begin, int kv_begin, int kv_group, int c2p,
                              int p2c, int position_buckets, int max_relative_positions, int span, int rel_width,
                              float scale) {
    if (batch <= 0 || T <= 0 || heads <= 0) return PF_CUDA_OK;
    if ((size_t)batch * T > 2147483647u || heads > 65535 || span <= 0 || kv_group <= 0)
        return pf_cuda__fail(st->message, sizeof st->message, PF_CUDA_ERROR_DEVICE, "pf_cuda_disentangled_bias",
                             "bad shape", __LINE__);
    dim3 grid((unsigned)((size_t)batch * T), (unsigned)heads);
    pf_disentangled_bias_kernel<<<grid, 128, 0, st->stream>>>(out, qkv, rel_qkv, T, heads, kv_heads, head_dim, head_begin,
                                                             kv_begin, kv_group, c2p, p2c, position_buckets,
                                                             max_relative_positions, span, rel_width, scale);
    PF_CUDA_CHECK_LAUNCH(st, pf_disentangled_bias_kernel);
    return PF_CUDA_OK;
}

int pf_cuda_ngram_attend(struct pf_cuda_rank *st, float *out, const float *qkv, const float *rel, int rel_heads,
                         int rel_width, const int32_t *buckets, const void *k_cache, const void *v_cache, int cache_dtype,
                         const int *pad, const int *rows, int batch, int T, int past, const int *past_at, int heads,
                         int kv_heads, int head_dim, int head_begin, int kv_begin, int kv_group, int cache_len, float scale,
                         int predict) {
    if (batch <= 0 || T <= 0 || heads <= 0) return PF_CUDA_OK;
    const char *bad = (size_t)batch * T > 2147483647u || heads > 65535 || kv_group <= 0 ? "bad shape"
                      : past < 0 || past + T > cache_len                                 ? "positions beyond the cache"
                      : !past_at || !buckets                                             ? "no device copy of past or buckets"
                      : ((size_t)cache_len + 1) * sizeof(float) > 48 * 1024              ? "a cache longer than its shared memory"
                                                                                         : NULL;
    if (bad) return pf_cuda__fail(st->message, sizeof st->message, PF_CUDA_ERROR_DEVICE, "pf_cuda_ngram_attend", bad, __LINE__);
    if (cache_dtype == PF_CUDA_F16)
        return pf_cuda__ngram_attend(st, out, qkv, rel, rel_heads, rel_width, buckets, (const __half *)k_cache,
                                     (const __half *)v_cache, pad, rows, batch, T, past_at, heads, kv_heads, head_dim,
                                     head_begin, kv_begin, kv_group, cache_len, scale, predict);
    if (cache_dtype == PF_CUDA_BF16)
        return pf_cuda__ngram_attend(st, out, qkv, rel, rel_heads, rel_width, buckets, (const __nv_bfloat16 *)k_cache,
                                     (const __nv_bfloat16 *)v_cache, pad, rows, batch, T, past_at, heads, kv_heads,
                                     head_dim, head_begin, kv_begin, kv_group, cache_len, scale, predict);
    return pf_cuda__ngram_attend(st, out, qkv, rel, rel_heads, rel_width, buckets, (const float *)k_cache,
                                 (const float *)v_cache, pad, rows, batch, T, past_at, heads, kv_heads, head_dim, head_begin,
                                 kv_begin, kv_group, cache_len, scale, predict);
}

/* Beam search: row dst[k] of cache becomes old row src[k], k < count (dst, src: device arrays,
   the rows that change; sources may repeat), for the first used_bytes of each row (rows
   row_bytes apart; both even: caches of 2- or 4-byte elements). Gathered into scratch
   (count * used_bytes), then scattered back. */
int pf_cuda_reorder_rows(struct pf_cuda_rank *st, void *cache, void *scratch, const int *dst, const int *src, int count,
                         size_t row_bytes, size_t used_bytes) {
    if (count <= 0 || !used_bytes) return PF_CUDA_OK;
    const char *bad = used_bytes > row_bytes           ? "more bytes than a row holds"
                      : !scratch || !src || !dst       ? "no scratch or row indices"
                      : (row_bytes | used_bytes) & 1u ? "an odd byte count"
                                                       : NULL;
    if (bad) return pf_cuda__fail(st->message, sizeof st->message, PF_CUDA_ERROR_DEVICE, "pf_cuda_reorder_rows", bad, __LINE__);
    if (((row_bytes | used_bytes) & 3u) == 0)
        return pf_cuda__move_rows(st, (uint32_t *)cache, (uint32_t *)scratch, dst, src, (size_t)count, row_bytes / 4,
                                  used_bytes / 4);
    return pf_cuda__move_rows(st, (uint16_t *)cache, (uint16_t *)scratch, dst, src, (size_t)count, row_bytes / 2,
                              used_bytes / 2);
}

/* ---- CUDA graphs ----------------------------------------------------------------------------- */

/* A decode step's launches captured once and replayed: pf_cuda_graph_begin starts capturing the
   rank's stream (thread-local mode: each rank captures on its own thread while the others run or
   capture theirs), the ops queued next are recorded instead of run (NCCL's all-reduces too), and
   pf_cuda_graph_end instantiates them into *graph. Nothing in between may wait for the stream or
   copy from host memory. pf_cuda_graph_end must follow every begin, also after a failed op: it
   ends the capture (a failure inside invalidates it, and it reports that). */
int pf_cuda_graph_begin(struct pf_cuda_rank *st) {
    PF_CUDA_CHECK(st, cudaStreamBeginCapture, (st->stream, cudaStreamCaptureModeThreadLocal));
    return PF_CUDA_OK;
}

int pf_cuda_graph_end(struct pf_cuda_rank *st, void **graph) {
    *graph = NULL;
    cudaGraph_t captured = NULL;
    cudaError_t e = cudaStreamEndCapture(st->stream, &captured);
    if (e != cudaSuccess) {
        if (captured) (void)cudaGraphDestroy(captured);
        (void)cudaGetLastError();
        return pf_cuda__fail(st->message, sizeof st->message, pf_cuda__code(e), "cudaStreamEndCapture",
                             cudaGetErrorString(e), __LINE__);
    }
    cudaGraphExec_t exec = NULL;
    e = cudaGraphInstantiate(&exec, captured, 0);
    (void)cudaGraphDestroy(captured); /* the instance keeps what it needs */
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return pf_cuda__fail(st->message, sizeof st->message, pf_cuda__code(e), "cudaGraphInstantiate",
                             cudaGetErrorString(e), __LINE__);
    }
    *graph = (void *)exec;
    return PF_CUDA_OK;
}

/* Queues the captured launches on the rank's stream (no wait). */
int pf_cuda_graph_launch(struct pf_cuda_rank *st, void *graph) {
    PF_CUDA_CHECK(st, cudaGraphLaunch, ((cudaGraphExec_t)graph, st->stream));
    return PF_CUDA_OK;
}

/* Frees an instantiated graph (NULL is fine); on the rank's thread. */
void pf_cuda_graph_destroy(void *graph) {
    if (graph) (void)cudaGraphExecDestroy((cudaGraphExec_t)graph);
}

/* ---- NCCL ------------------------------------------------------------------------------------ */

/* What the ABI's void * communicator points to: NCCL's, and how long a wait for other processes'
   ranks may last (communicators across processes; 0 within one process: no bound). */
struct pf_cuda__comm {
    ncclComm_t comm;
    double timeout_s;
};

/* A communicator across processes is non-blocking (so that a process that never joins ends in an
   error): a call on it may return ncclInProgress, its work still being set up (the joins, the
   first collective's connections). Waits while its state is ncclInProgress, at most timeout_s
   (0: no bound); returns the state then (ncclInProgress: timed out). */
static ncclResult_t pf_cuda__nccl_settle(ncclComm_t comm, double timeout_s) {
    auto start = std::chrono::steady_clock::now();
    for (unsigned spins = 0;; spins++) {
        ncclResult_t state = ncclSuccess, r = ncclCommGetAsyncError(comm, &state);
        if (r != ncclSuccess) return r;
        if (state != ncclInProgress) return state;
        if (timeout_s > 0 && std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > timeout_s)
            return ncclInProgress;
        if (spins >= 1000) std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
}

/* A failure of NCCL as a status: a peer's (ncclRemoteError) is PF_CUDA_ERROR_REMOTE. */
static int pf_cuda__nccl_code(ncclResult_t r) {
    return r == ncclRemoteError ? PF_CUDA_ERROR_REMOTE : PF_CUDA_ERROR_DEVICE;
}

/* The caller's current device, or -1 (the error cleared). */
static int pf_cuda__current_device(void) {
    int device = -1;
    if (cudaGetDevice(&device) != cudaSuccess) {
        (void)cudaGetLastError();
        return -1;
    }
    return device;
}

/* Makes `previous` (pf_cuda__current_device's) current again, only if NCCL's setup left another. */
static void pf_cuda__restore_device(int previous) {
    int now = pf_cuda__current_device();
    if (previous >= 0 && now != previous) (void)cudaSetDevice(previous);
}

/* comms[i] = rank i's communicator list[i] with its timeout; 0, or -1 out of memory (none kept). */
static int pf_cuda__wrap_comms(const ncclComm_t *list, int n, double timeout_s, void **comms) {
    for (int i = 0; i < n; i++) {
        pf_cuda__comm *c = (pf_cuda__comm *)malloc(sizeof *c);
        if (!c) {
            for (int j = 0; j < i; j++) free(comms[j]);
            return -1;
        }
        c->comm = list[i];
        c->timeout_s = timeout_s;
        comms[i] = c;
    }
    return 0;
}

/* One communicator per rank over n distinct devices (ncclCommInitAll); comms[i] is rank i's.
   Caller's thread; its current device is restored. */
int pf_cuda_nccl_create(int n, const int *devices, void **comms, char *message, size_t size) {
    ncclComm_t *list = (ncclComm_t *)calloc((size_t)n, sizeof *list);
    if (!list) return pf_cuda__fail(message, size, PF_CUDA_ERROR_OUT_OF_MEMORY, "calloc", "out of host memory", __LINE__);
    int previous = pf_cuda__current_device();
    ncclResult_t r = ncclCommInitAll(list, n, devices);
    pf_cuda__restore_device(previous);
    if (r != ncclSuccess) {
        free(list);
        return pf_cuda__fail(message, size, PF_CUDA_ERROR_DEVICE, "ncclCommInitAll", ncclGetErrorString(r), __LINE__);
    }
    if (pf_cuda__wrap_comms(list, n, 0, comms)) {
        for (int j = 0; j < n; j++) (void)ncclCommDestroy(list[j]);
        free(list);
        return pf_cuda__fail(message, size, PF_CUDA_ERROR_OUT_OF_MEMORY, "malloc", "out of host memory", __LINE__);
    }
    free(list);
    return PF_CUDA_OK;
}

/* The id of a communicator across processes (ncclGetUniqueId), on process 0; any thread. */
int pf_cuda_nccl_unique_id(unsigned char *id, char *message, size_t size) {
    static_assert(sizeof(ncclUniqueId) == PF_CUDA_NCCL_ID_BYTES, "NCCL's unique id is not PF_CUDA_NCCL_ID_BYTES");
    ncclUniqueId u;
    ncclResult_t r = ncclGetUniqueId(&u);
    if (r != ncclSuccess) return pf_cuda__fail(message, size, PF_CUDA_ERROR_DEVICE, "ncclGetUniqueId", ncclGetErrorString(r), __LINE__);
    memcpy(id, &u, sizeof u);
    return PF_CUDA_OK;
}

/* This process's n ranks of a communicator over every process (ncclCommInitRankConfig in one group,
   as NCCL requires for several devices in a process; non-blocking, so that the wait for the other
   processes' ranks ends after timeout_ms). Caller's thread; its current device is restored. */
int pf_cuda_nccl_create_world(int n, const int *devices, int world_size, int first_rank, const unsigned char *id,
                              int timeout_ms, void **comms, char *message, size_t size) {
    ncclUniqueId u;
    memcpy(&u, id, sizeof u);
    double timeout_s = timeout_ms > 0 ? timeout_ms / 1000.0 : 0;
    ncclComm_t *list = (ncclComm_t *)calloc((size_t)n, sizeof *list);
    if (!list) return pf_cuda__fail(message, size, PF_CUDA_ERROR_OUT_OF_MEMORY, "calloc", "out of host memory", __LINE__);
    int previous = pf_cuda__current_device();
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    const char *call = "ncclGroupStart";
    ncclResult_t r = ncclGroupStart();
    for (int i = 0; i < n && (r == ncclSuccess || r == ncclInProgress); i++) {
        if (cudaSetDevice(devices[i]) != cudaSuccess) {
            (void)cudaGetLastError();
            r = ncclInvalidArgument;
            call = "cudaSetDevice";
            break;
        }
        call = "ncclCommInitRankConfig";
        r = ncclCommInitRankConfig(&list[i], world_size, u, first_rank + i, &config);
    }
    ncclResult_t ended = ncclGroupEnd();
    if (r == ncclSuccess || r == ncclInProgress) r = ended, call = "ncclGroupEnd";
    for (int i = 0; i < n && (r == ncclSuccess || r == ncclInProgress); i++) {
        r = list[i] ? pf_cuda__nccl_settle(list[i], timeout_s) : ncclInternalError;
        call = "ncclCommInitRankConfig";
    }
    pf_cuda__restore_device(previous);
    if (r == ncclSuccess && pf_cuda__wrap_comms(list, n, timeout_s, comms)) r = ncclSystemError, call = "malloc";
    if (r != ncclSuccess) {
        for (int i = 0; i < n; i++)
            if (list[i]) (void)ncclCommAbort(list[i]);
        free(list);
        if (r == ncclInProgress) {
            char what[160];
            snprintf(what, sizeof what, "the other processes' ranks did not join within %g s (process_timeout_ms)", timeout_s);
            return pf_cuda__fail(message, size, PF_CUDA_ERROR_DEVICE, call, what, __LINE__);
        }
        return pf_cuda__fail(message, size, pf_cuda__nccl_code(r), call, ncclGetErrorString(r), __LINE__);
    }
    free(list);
    return PF_CUDA_OK;
}

/* Frees a communicator whose work has finished (any thread). NULL is fine. */
void pf_cuda_nccl_destroy(void *comm) {
    pf_cuda__comm *c = (pf_cuda__comm *)comm;
    if (!c) return;
    if (c->timeout_s > 0) { /* non-blocking: its work flushed first, in bounded time */
        ncclResult_t r = ncclCommFinalize(c->comm);
        if (r == ncclInProgress) r = pf_cuda__nccl_settle(c->comm, c->timeout_s);
        if (r != ncclSuccess) {
            (void)ncclCommAbort(c->comm);
            free(c);
            return;
        }
    }
    (void)ncclCommDestroy(c->comm);
    free(c);
}

/* Aborts a communicator, ending any of its operations still waiting for a peer (e.g. one that
   failed and will never join; across processes its peers then see ncclRemoteError); it cannot be
   used afterwards. On the rank's thread. */
void pf_cuda_nccl_abort(void *comm) {
    pf_cuda__comm *c = (pf_cuda__comm *)comm;
    if (!c) return;
    (void)ncclCommAbort(c->comm);
    free(c);
}

/* The communicator's asynchronous error (a peer's failure seen by NCCL, a network error):
   PF_CUDA_OK while there is none (or its operations are still in progress). Any thread. */
int pf_cuda_nccl_async_error(void *comm, char *message, size_t size) {
    ncclResult_t async = ncclSuccess, r = ncclCommGetAsyncError(((pf_cuda__comm *)comm)->comm, &async);
    if (r != ncclSuccess)
        return pf_cuda__fail(message, size, PF_CUDA_ERROR_DEVICE, "ncclCommGetAsyncError", ncclGetErrorString(r), __LINE__);
    if (async != ncclSuccess && async != ncclInProgress)
        return pf_cuda__fail(message, size, pf_cuda__nccl_code(async), "NCCL", ncclGetErrorString(async), __LINE__);
    return PF_CUDA_OK;
}

/* x = sum of x over the communicator's ranks, in place, queued on the rank's stream. */
int pf_cuda_nccl_all_reduce(struct pf_cuda_rank *st, void *comm, float *x, size_t count) {
    if (!count) return PF_CUDA_OK;
    pf_cuda__comm *c = (pf_cuda__comm *)comm;
    ncclResult_t r = ncclAllReduce(x, x, count, ncclFloat, ncclSum, c->comm, st->stream);
    if (r == ncclInProgress) r = pf_cuda__nccl_settle(c->comm, c->timeout_s); /* across processes: still enqueuing */
    if (r == ncclInProgress)
        return pf_cuda__fail(st->message, sizeof st->message, PF_CUDA_ERROR_DEVICE, "ncclAllReduce",
                             "the other processes' ranks did not join within the timeout (process_timeout_ms)", __LINE__);
    if (r != ncclSuccess)
        return pf_cuda__fail(st->message, sizeof st->message, pf_cuda__nccl_code(r), "ncclAllReduce", ncclGetErrorString(r),
                             __LINE__);
    return PF_CUDA_OK;
}

} /* extern "C" */
