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
