/* =============================================================================================== */
/* backends: the operation table and the CPU backend                                               */
/* =============================================================================================== */

typedef struct pf__rank pf__rank;
typedef struct pf__group pf__group;

/* Flags the ranks read between operations (a failure, aborted communicators): atomic loads and
   stores (GCC's and Clang's builtins), so that readers need no lock. */
#define PF__LOAD_FLAG(flag) __atomic_load_n(&(flag), __ATOMIC_ACQUIRE)
#define PF__STORE_FLAG(flag, value) __atomic_store_n(&(flag), (value), __ATOMIC_RELEASE)

/* A weight on a rank's device, logical [rows (out), cols (in)] row-major; vectors have cols 1. */
typedef struct pf__weight {
    void *data; /* NULL when the slot is absent or the slice is empty */
    pf__dtype dtype;
    size_t rows, cols;
    size_t col_begin; /* the slice's first column in the whole tensor (row-split weights) */
} pf__weight;

/* What one forward call computes, the same on every rank. */
typedef struct pf__step {
    const int32_t *ids;     /* host, [batch][seq_len] */
    int batch, seq_len;
    int past;               /* tokens already in the KV cache of each sequence */
    const float *inv_freq;  /* host, [rotary_dim / 2]: rotary frequencies for this step, or NULL */
    const int *pad;         /* host, [batch]: left pads of each sequence (masked keys; positions
                               count from the first real token), or NULL */
    const int32_t *type_ids;/* host, [batch][seq_len]: token type (segment) ids; set whenever the
                               model has a token type table */
    int cross_len;          /* an encoder-decoder's decoder step: the encoder's positions per row
                               (its output's keys and values are in the ranks' cross caches) */
    const int *cross_pad;   /* host, [batch]: the encoder input's left pads, or NULL */
    const float *features;  /* host, [batch][seq_len][hidden]: a speech encoder's frames from its
                               front end (the blocks' input), or NULL */
    const float *patches;   /* host, [batch][patches][channels * patch^2]: an image encoder's input
                               (its positions after the class and distillation tokens), or NULL */
    const int *cache_rows;  /* host, [batch]: the KV cache row of each sequence (continuous
                               batching places requests in free rows), or NULL: row b */
} pf__step;

/* Which keys a query sees (pf__attn_shape.mask). */
enum {
    PF__MASK_BIDIRECTIONAL, /* every key of its sequence (encoders); a relative bias bucketed both ways */
    PF__MASK_CAUSAL,        /* keys up to its own position (decoders); a relative bias towards the past */
    PF__MASK_CROSS          /* all cache_len keys of its row, the step's left pads excepted, q rows
                               packed [heads * head_dim] (a decoder's attention over the encoder) */
};

/* The attention of one layer on one rank. Local query head h reads key/value head
   (head_begin + h) / kv_group - kv_begin of the rank's cache. */
typedef struct pf__attn_shape {
    int heads, kv_heads, head_dim;
    int head_begin, kv_begin, kv_group;
    int cache_len;
    int window;             /* keys j with pos - j < window; 0: all earlier keys */
    int mask;               /* PF__MASK_*: the keys a query sees, left pads always excepted */
    int rotary_dim;         /* for the rotary op */
    pf__dtype cache_dtype;  /* how the cache read (and appended to) stores keys and values */
    float scale;
    const float *alibi;     /* device, [heads]: score += slope * key position; NULL: none */
    const float *rel_bias;  /* device, [heads][rel_rows]: score += rel_bias[h][bucket(key - query)],
                               bucketed as T5 does (bidirectional); NULL: none */
    int rel_rows, rel_buckets, rel_max_distance;
    const pf__weight *qkv_bias; /* the QKV projection's bias, which its GEMM left out (a backend with
                               qkv_bias_in_attention): added to the whole qkv rows by rotary where
                               it runs, else by kv_append; NULL once added, or with none to add */
} pf__attn_shape;

/* One rank's candidate for a row's greedy token: its best logit and that token's vocabulary id
   (-1: none), as the backend's argmax finds it. */
typedef struct pf__choice {
    float value;
    int32_t index;
} pf__choice;

/* Operations a backend provides. All run on the rank's own thread, in order; activations are
   fp32 [tokens][features] row-major; an op never fails on its own except alloc (a backend whose
   calls can fail records it with pf__rank_fail). */
struct pf__job;

typedef struct pf__backend {
    const char *name;
    int host_memory; /* allocations are host memory the loader may write directly */
    /* Before the rank threads start / after they stopped, on the caller's thread (e.g. NCCL
       communicators for all ranks at once); NULL when there is nothing to do. */
    pf_result (*group_begin)(pf__group *g, char *message, size_t size);
    void (*group_end)(pf__group *g);
    /* First thing on the rank's thread (e.g. cudaSetDevice), and last. */
    int (*rank_begin)(pf__rank *r);
    void (*rank_end)(pf__rank *r);
    void *(*alloc)(pf__rank *r, size_t bytes);
    void (*free)(pf__rank *r, void *ptr);
    void (*upload)(pf__rank *r, void *dst, const void *host, size_t bytes);
    void (*download)(pf__rank *r, void *host, const void *src, size_t bytes);
    /* rows of row_bytes each, strided on both sides (a rank's columns of the host logits) */
    void (*download_rows)(pf__rank *r, void *host, size_t host_stride, const void *src, size_t src_stride,
                          size_t row_bytes, size_t rows);
    /* device to device */
    void (*copy)(pf__rank *r, void *dst, const void *src, size_t bytes);
    /* out[b*T+t] = tokens[ids[b][t] - first] * scale for ids among the rank's tokens rows
       (first..first + tokens->rows), zeros for the others' */
    void (*embed)(pf__rank *r, float *out, const pf__weight *tokens, const pf__step *s, float scale, int first);
    /* x[b*T+t] += table[offset + past + t] */
    void (*add_positions)(pf__rank *r, float *x, const pf__weight *table, const pf__step *s, int offset);
    /* LayerNorm: (x - mean) / sqrt(var + eps) * weight + bias; RMSNorm: x / sqrt(mean(x^2) + eps)
       * weight; per row of n; out may be x */
    void (*norm)(pf__rank *r, float *out, const float *x, const pf__weight *weight, const pf__weight *bias,
                 size_t rows, size_t n, float eps, pf__norm kind);
    /* out[rows][w.rows] = x[rows][w.cols] w^T (+ bias) */
    void (*matmul)(pf__rank *r, float *out, const float *x, const pf__weight *w, const pf__weight *bias, size_t rows);
    /* x = act(x) */
    void (*activation)(pf__rank *r, float *x, size_t count, pf__activation act);
    /* out[row][i] = act(in[row][i]) * in[row][width + i]: gate and up side by side */
    void (*gated_activation)(pf__rank *r, float *out, const float *in, size_t rows, size_t width, pf__activation act);
    /* x[rows][n] += y (+ bias); y may be NULL (bias alone) */
    void (*add_residual)(pf__rank *r, float *x, const float *y, const pf__weight *bias, size_t rows, size_t n);
    /* Rotates the first a->rotary_dim dims of every q and k head in the qkv rows by position
       past + t: dims (i, i + rotary_dim/2), or (2i, 2i + 1) when pairs; a->qkv_bias, when set,
       added to every element of the rows first. */
    void (*rotary)(pf__rank *r, float *qkv, const pf__step *s, const pf__attn_shape *a, int pairs);
    /* Appends this step's k, v to the caches [rows][cache_len][kv_heads*head_dim] at positions
       past..past+T-1, sequence b in row s->cache_rows[b] (or b). qkv rows are [q (heads*head_dim)
       | k (kv_heads*head_dim) | v (same)]; a->qkv_bias, when set, is added to them first (q too). */
    void (*kv_append)(pf__rank *r, void *k_cache, void *v_cache, float *qkv, const pf__step *s,
                      const pf__attn_shape *a);
    /* out[b*T+t] = softmax(q k^T * scale + alibi + relative bias) v over the cached keys the
       query may see (a->mask, a->window, left pads), q from the qkv rows (a q row for
       PF__MASK_CROSS). */
    void (*attend)(pf__rank *r, float *out, const float *qkv, const void *k_cache, const void *v_cache,
                   const pf__step *s, const pf__attn_shape *a);
    /* x = sum of x over all ranks, identical on every rank afterwards */
    void (*all_reduce)(pf__rank *r, float *x, size_t count);
    /* Beam search: row dst[k] of a cache [rows][row_bytes] becomes old row src[k], k < count
       (host arrays; the rows that change only), for the first used_bytes of each row. */
    void (*reorder_rows)(pf__rank *r, void *cache, const int *dst, const int *src, int count, size_t row_bytes,
                         size_t used_bytes);
    /* The whole device's memory in use and in all, as the system reports it; from any thread.
       -1 when it cannot say. */
    int (*device_memory)(int device, size_t *used, size_t *total);
    /* Before a forward's first operation (NULL: nothing to do): the step's host arrays the ops
       read (left pads, the sources' pads, rotary frequencies) to the device, so that no upload
       happens between the forward's collectives. */
    void (*prepare)(pf__rank *r, const pf__step *s);
    /* Keys and values cached in the weights' dtype (16-bit weights: half the memory and the bytes
       a decode step reads); 0: as pf_parallel_options.kv_cache_dtype asks, fp32 by default. Cross
       caches stay fp32 either way. */
    int cache_in_weight_dtype;
    /* Greedy token choice where the logits are (NULL: they are downloaded and the host takes
       pf__argmax of them): for rows rows of logits ([rows][n], vocabulary ids first..first+n-1),
       each row's first maximum into best[row] (host), as pf__argmax's scan would find it in the
       rank's slice: a NaN never wins except at id 0, where it competes as +inf; index -1 when
       the slice has no candidate. pf__combine_choices picks among the ranks'. */
    void (*argmax)(pf__rank *r, pf__choice *best, const float *logits, size_t rows, size_t n, int first);
    /* add_residual(x, y, bias) then norm(out, x, weight, norm_bias) in one op, out may be x
       (NULL: the forward calls the two; see pf__rank_residual_norm) */
    void (*add_residual_norm)(pf__rank *r, float *x, const float *y, const pf__weight *bias, float *out,
                              const pf__weight *weight, const pf__weight *norm_bias, size_t rows, size_t n, float eps,
                              pf__norm kind);
    /* x[rows][n] = act(x + bias): a GEMM's bias folded into the activation after it (NULL: the
       GEMM adds it; see pf__rank_mlp_in) */
    void (*bias_activation)(pf__rank *r, float *x, const pf__weight *bias, size_t rows, size_t n, pf__activation act);
    /* A decoder step's device work up to the logits, body(r, job) (pf__rank_decoder_hidden), run
       the backend's way: CUDA replays a graph captured from an earlier step of the same shapes.
       Returns 1 when it ran it (or failed: see r->error), 0 when the caller should call body
       itself (NULL: always the caller). Every rank decides alike from the step. */
    int (*run_decoder_step)(pf__rank *r, const struct pf__job *job,
                            void (*body)(pf__rank *r, const struct pf__job *job));
    /* Sampling's candidates where the logits are (NULL: the logits are downloaded and the host
       samples from them): for rows rows of logits ([rows][n], vocabulary ids first..first+n-1),
       each row's count best of the slice (1 <= count <= n, count <= top_k_max) into
       best[row * stride ...] (host), best first: the larger value, the lower id on ties, a NaN
       before every number. pf__sample_candidates merges the ranks' as pf__sample would see them. */
    void (*top_k)(pf__rank *r, pf__choice *best, size_t stride, const float *logits, size_t rows, size_t n, int first,
                  size_t count);
    size_t top_k_max; /* the largest count top_k takes */
    /* 1: the QKV GEMM leaves its bias to rotary or kv_append (pf__attn_shape.qkv_bias), which
       add it in their own pass over the rows instead of a launch of its own; 0: the GEMM adds it */
    int qkv_bias_in_attention;
    /* add_residual(x, y, bias) then add_residual(x, NULL, bias2) in one op, bias2 never NULL (NULL:
       the forward calls the two; a parallel block's output biases) */
    void (*add_residual_biases)(pf__rank *r, float *x, const float *y, const pf__weight *bias,
                                const pf__weight *bias2, size_t rows, size_t n);
} pf__backend;

/* A share of the split dimensions held by one rank. */
typedef struct pf__share {
    int head_begin, heads;
    int kv_begin, kv_heads; /* the key/value heads its query heads read (replicated if shared) */
    int mlp_begin, mlp_width;
    int vocab_begin, vocab_rows; /* token embedding and LM head rows */
} pf__share;

typedef struct pf__allocation {
    void *ptr;
    size_t bytes;
} pf__allocation;

typedef enum { PF__MEM_WEIGHTS, PF__MEM_CACHE, PF__MEM_SCRATCH, PF__MEM_KINDS } pf__mem_kind;

struct pf__rank {
    pf__group *group;
    int index;
    const pf__backend *backend;
    void *backend_state;
    int device;               /* the backend's device ordinal */
    pthread_t thread;
    pf__share share;
    pf__weight *weights;      /* [pf__num_slots(config)] */
    float *alibi;             /* [heads]: the rank's ALiBi slopes, or NULL */
    float *rel_bias;          /* [heads][rel rows]: the rank's heads of the relative bias table, or NULL */
    float *enc_rel_bias;      /* the same of an encoder-decoder's encoder tower */
    void *k_cache, *v_cache;  /* [pf__cache_layers][max_batch][cache_len][kv_heads * head_dim] in cache_dtype */
    pf__dtype cache_dtype;
    float *cross_k, *cross_v; /* encoder-decoders: [decoder blocks][max_batch][cache_len][kv width], each
                                 row's encoder keys (values) packed by the request's cross_len */
    /* scratch, [max_tokens][width] */
    float *x, *h, *part;      /* width hidden */
    float *embed;             /* width embed_dim, when the embedding is projected in */
    float *qkv;               /* width (heads + 2 kv_heads) * head_dim */
    float *attn;              /* width heads * head_dim */
    float *mlp;               /* width mlp_width (times 2 when gated) */
    float *mlp_act;           /* width mlp_width, when gated */
    float *logits;            /* rank 0 only: [logit_rows][vocab] */
    float *head_out;          /* rank 0, classification heads: [max_tokens][num_labels or 2] */
    float *projected;         /* rank 0, with a projection: [max_batch][projection_dim] */
    float *patch_in;          /* image encoders: [max_batch][patches][channels * patch^2] */
    float *scores;            /* CPU attention: [max(heads, PF__QUERY_BLOCK)][cache_len] */
    size_t *head_slices;      /* CPU decode attention: [heads], each head's kv slice in a cache row */
    float *attn_pack;         /* CPU attention over prompts: one kv head's keys, then its values, */
    size_t attn_pack_floats;  /* attn_pack_floats each ([cache_len][head_dim]) */
    float *reduce_tmp;        /* CPU all-reduce: [max_tokens * hidden] */
    float *reorder_tmp;       /* CPU beam reorder: one layer's cache, when max_batch > 1 */
    void *matmul_scratch;     /* CPU products: x's int8 values, scales and block sums for Q8/Q4
                                 weights, widened fp16/bf16 weight rows (grown on demand and kept, so
                                 a decode step allocates nothing) */
    size_t matmul_scratch_bytes;
    int bf16_products;        /* CPU: bf16 weights multiply x rounded to bf16 (pf_parallel_options) */
    pf__allocation *allocations;
    size_t num_allocations, allocations_cap;
    size_t bytes[PF__MEM_KINDS];
    pf__mem_kind allocating;  /* the kind new allocations count under */
    size_t device_used, device_total; /* the device's memory after the last job (group mutex) */
    pf_result error;
    char message[PF__MESSAGE_SIZE];
};

/* Records the rank's first failure and wakes every rank waiting in a barrier, so none hangs. */
static void pf__group_abort(pf__group *g);
static void pf__rank_fail(pf__rank *r, pf_result code, const char *fmt, ...) {
    if (!r->error) {
        va_list args;
        va_start(args, fmt);
        vsnprintf(r->message, sizeof r->message, fmt, args);
        va_end(args);
        r->error = code;
    }
    pf__group_abort(r->group);
}

#ifdef PF_TESTING
/* Test hook: rank pf_testing_fail_rank fails its pf_testing_fail_countdown-th matmul. */
int pf_testing_fail_rank = -1, pf_testing_fail_countdown = 0;
#endif

