/* A host-memory stand-in for kernels.cu's C ABI, to exercise parallelformers.c's CUDA section and
   test_cuda.c on a machine without a GPU (make test-cuda-standin; CI runs it). Mirrors each kernel's arithmetic: fp32 throughout, GEMM inputs rounded
   to fp16/bf16 for 16-bit weights, block sums in the kernels' order (per-thread partials, the
   xor-butterfly warp sum as lane 0 sees it, warps in order), norms two-pass, the rotation without
   fused multiply-adds, attention as online softmax over 32-key chunks with one warp per key,
   decode split into up to 32 parts of >= 16 keys and combined; prefill over 16-bit caches as the
   tensor-core kernel computes it (flash_row: Q and P rounded to the cache dtype, an online
   softmax per aligned 32-key tile, FA2's rescale; wmma's summation order is not mirrored, nor
   the fused multiply-adds nvcc may form). cuBLAS's summation order is not
   mirrored (a plain sequential fp32 dot).

   Device memory is malloc'd, NaN-filled and registered: every pointer a kernel would dereference
   must lie, with the whole range it touches, inside a live registered allocation (else abort),
   so host pointers handed to "kernels" and overruns are caught even where ASan would not.
   MOCK_GPUS sets the device count (default 1). Built with MOCK_MPI (make test-mpi's stand-in
   build, with mpicc) its NCCL communicators also span processes (pf_cuda_nccl_create_world): each
   process's all-reduce takes the other processes' buffers over MPI and sums the world's in world
   rank order, the bits of the same world in one process. The definitions are compiled against
   src/cuda_abi.h, the ABI's one declaration, which the C side and kernels.cu use too. */
#include "../src/cuda_abi.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef MOCK_MPI
#include <mpi.h>
#include <time.h>
#endif

struct mock_tape;
struct pf_cuda_rank {
    int device;
    char message[256];
    struct mock_tape *tape; /* capturing into it (pf_cuda_graph_begin), or NULL */
};

/* ---- registered "device" allocations ---- */

typedef struct { const char *p; size_t n; } mock_alloc;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static mock_alloc *allocs;
static size_t num_allocs, cap_allocs;

static void need_(const void *p, size_t bytes, const char *what, int line) {
    if (!bytes) return;
    const char *c = (const char *)p;
    int ok = 0;
    pthread_mutex_lock(&mu);
    for (size_t i = 0; i < num_allocs && !ok; i++)
        ok = c >= allocs[i].p && c < allocs[i].p + allocs[i].n && bytes <= (size_t)(allocs[i].p + allocs[i].n - c);
    pthread_mutex_unlock(&mu);
    if (!ok) {
        fprintf(stderr, "mock:%d: %s: %zu bytes at %p are not inside one device allocation\n", line, what, bytes, p);
        abort();
    }
}
#define NEED(p, bytes) need_((p), (bytes), #p, __LINE__)

static size_t dsize(int dtype) { return dtype == 0 ? 4 : 2; }

static float ld(const void *p, int dtype, size_t i) {
    if (!p) return 0.0f;
    if (dtype == 1) return (float)((const _Float16 *)p)[i];
    if (dtype == 2) {
        uint32_t b = (uint32_t)((const uint16_t *)p)[i] << 16;
        float f;
        memcpy(&f, &b, 4);
        return f;
    }
    return ((const float *)p)[i];
}

static uint16_t to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffff) > 0x7f800000) return (uint16_t)((x >> 16) | 0x40);
    return (uint16_t)((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

/* pf_block_sum / pf_block_max of kernels.cu: v[threads] per-thread values; lane 0's butterfly
   per warp, then warps in order. */
static float warp_reduce(const float *v, int is_max) {
    float lanes[32];
    memcpy(lanes, v, sizeof lanes);
    for (int o = 16; o > 0; o >>= 1) {
        float next[32];
        for (int l = 0; l < 32; l++) next[l] = is_max ? fmaxf(lanes[l], lanes[l ^ o]) : lanes[l] + lanes[l ^ o];
        memcpy(lanes, next, sizeof lanes);
    }
    return lanes[0];
}
static float block_reduce(const float *v, int threads, int is_max) {
    float total = is_max ? -INFINITY : 0.0f;
    for (int w = 0; w < threads / 32; w++) {
        float x = warp_reduce(v + 32 * w, is_max);
        total = is_max ? fmaxf(total, x) : total + x;
    }
    return total;
}


/* ---- CUDA graphs: a tape of the launches ---- */

/* Capturing records each launch (its function and a copy of its arguments) instead of running it;
   a launch of the graph runs them in order. As on a GPU, everything a kernel computes from must
   come from device memory at launch time: a value passed by value is the one of the captured
   step, so a per-step value passed that way gives stale results on replay, which the tests'
   comparisons of graph and live runs catch. Host copies, waits and allocations during a capture
   break it (as cudaStreamEndCapture then reports on a GPU). */
typedef int (*mock_replay)(pf_cuda_rank *st, const void *args);
typedef struct mock_op { mock_replay run; void *args; const char *name; } mock_op;
typedef struct mock_tape { mock_op *ops; size_t count, cap; const char *broken; } mock_tape;
int pf_mock_graphs_live; /* instantiated tapes (a leak check for test_cuda) */

static void tape_free(mock_tape *t) {
    if (!t) return;
    for (size_t i = 0; i < t->count; i++) free(t->ops[i].args);
    free(t->ops);
    free(t);
}

static int tape_record(pf_cuda_rank *st, mock_replay run, const void *args, size_t size, const char *name) {
    mock_tape *t = st->tape;
    if (t->count == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 64;
        t->ops = realloc(t->ops, t->cap * sizeof *t->ops);
    }
    void *copy = malloc(size);
    memcpy(copy, args, size);
    t->ops[t->count++] = (mock_op){run, copy, name};
    return 0;
}

/* An operation that cannot be captured (a host copy, a wait, an allocation): the capture is
   invalidated and the call fails. */
static int capture_broken(pf_cuda_rank *st, const char *call) {
    if (!st->tape->broken) st->tape->broken = call;
    snprintf(st->message, sizeof st->message, "%s failed: operation not permitted when stream is capturing (mock)", call);
    return 1;
}
#define NOT_WHILE_CAPTURING(st, call) \
    do {                              \
        if ((st) && (st)->tape) return capture_broken((st), (call)); \
    } while (0)

int pf_cuda_graph_begin(pf_cuda_rank *st) {
    if (st->tape) {
        snprintf(st->message, sizeof st->message, "cudaStreamBeginCapture failed: already capturing (mock)");
        return 1;
    }
    st->tape = calloc(1, sizeof *st->tape);
    return 0;
}

int pf_cuda_graph_end(pf_cuda_rank *st, void **graph) {
    *graph = NULL;
    mock_tape *t = st->tape;
    if (!t) {
        snprintf(st->message, sizeof st->message, "cudaStreamEndCapture failed: not capturing (mock)");
        return 1;
    }
    st->tape = NULL;
    if (t->broken) {
        snprintf(st->message, sizeof st->message, "cudaStreamEndCapture failed: capture invalidated by %s (mock)",
                 t->broken);
        tape_free(t);
        return 1;
    }
    *graph = t;
    __atomic_add_fetch(&pf_mock_graphs_live, 1, __ATOMIC_RELAXED);
    return 0;
}

int pf_cuda_graph_launch(pf_cuda_rank *st, void *graph) {
    NOT_WHILE_CAPTURING(st, "cudaGraphLaunch");
    const mock_tape *t = graph;
    for (size_t i = 0; i < t->count; i++) {
        int status = t->ops[i].run(st, t->ops[i].args);
        if (status) return status;
    }
    return 0;
}

void pf_cuda_graph_destroy(void *graph) {
    if (!graph) return;
    __atomic_sub_fetch(&pf_mock_graphs_live, 1, __ATOMIC_RELAXED);
    tape_free(graph);
}

/* TAPED(op, ARGS, reject): pf_cuda_<op>, the launch, records itself while capturing and runs
   op_live otherwise; ARGS(X) lists its parameters after st as X(type, name); reject: an
   expression over them that makes the launch uncapturable (host memory it would read then). */
#define TAPE_FIELD(t, n) t n;
#define TAPE_PARAM(t, n) , t n
#define TAPE_NAME(t, n) , n
#define TAPE_FROM(t, n) , a->n
#define TAPE_SET(t, n) a.n = n;
#define TAPED(op, ARGS, reject)                                                                        \
    static int op##_live(pf_cuda_rank *st ARGS(TAPE_PARAM));                                          \
    typedef struct { ARGS(TAPE_FIELD) } op##_args;                                                    \
    static int op##_replay(pf_cuda_rank *st, const void *p) {                                         \
        const op##_args *a = p;                                                                       \
        return op##_live(st ARGS(TAPE_FROM));                                                         \
    }                                                                                                 \
    int pf_cuda_##op(pf_cuda_rank *st ARGS(TAPE_PARAM)) {                                             \
        if (!st->tape) return op##_live(st ARGS(TAPE_NAME));                                          \
        if (reject) return capture_broken(st, "pf_cuda_" #op " from host memory");                    \
        op##_args a;                                                                                  \
        memset(&a, 0, sizeof a);                                                                      \
        ARGS(TAPE_SET)                                                                                \
        return tape_record(st, op##_replay, &a, sizeof a, #op);                                      \
    }

#define EMBED_ARGS(X) X(float *, out) X(const void *, tok) X(int, dtype) X(const int32_t *, ids_host) \
    X(int32_t *, ids_dev) X(size_t, rows) X(size_t, d) X(float, scale) X(int, first) X(size_t, table_rows)
TAPED(embed, EMBED_ARGS, ids_host != NULL)
#define ADD_POSITIONS_ARGS(X) X(float *, x) X(const void *, table) X(int, dtype) X(const int *, pad) X(int, batch) \
    X(int, T) X(const int *, past_at) X(size_t, offset) X(size_t, d)
TAPED(add_positions, ADD_POSITIONS_ARGS, 0)
#define NORM_ARGS(X) X(float *, out) X(const float *, x) X(const void *, w) X(int, w_dtype) X(const void *, b) \
    X(int, b_dtype) X(size_t, rows) X(size_t, n) X(float, eps) X(int, rms) X(void *, out16) X(int, out16_dtype)
TAPED(norm, NORM_ARGS, 0)
#define ADD_RESIDUAL_NORM_ARGS(X) X(float *, x) X(const float *, y) X(const void *, bias) X(int, bias_dtype) \
    X(float *, out) X(const void *, w) X(int, w_dtype) X(const void *, norm_bias) X(int, norm_bias_dtype) \
    X(size_t, rows) X(size_t, n) X(float, eps) X(int, rms) X(void *, out16) X(int, out16_dtype)
TAPED(add_residual_norm, ADD_RESIDUAL_NORM_ARGS, 0)
#define MATMUL_ARGS(X) X(float *, out) X(const float *, x) X(const void *, w) X(int, w_dtype) X(const void *, bias) \
    X(int, bias_dtype) X(size_t, rows) X(size_t, n_out) X(size_t, k) X(void *, xs) X(int, x_converted)
TAPED(matmul, MATMUL_ARGS, 0)
#define ARGMAX_ARGS(X) X(float *, values) X(int32_t *, indices) X(const float *, logits) X(size_t, rows) X(size_t, n) \
    X(int, first)
TAPED(argmax, ARGMAX_ARGS, 0)
#define ACTIVATION_ARGS(X) X(float *, x) X(size_t, count) X(int, act) X(void *, x16) X(int, x16_dtype)
TAPED(activation, ACTIVATION_ARGS, 0)
#define SOFTCAP_ARGS(X) X(float *, x) X(size_t, count) X(float, cap)
TAPED(softcap, SOFTCAP_ARGS, 0)
#define BIAS_ACTIVATION_ARGS(X) X(float *, x) X(const void *, bias) X(int, dtype) X(size_t, rows) X(size_t, n) \
    X(int, act) X(void *, x16) X(int, x16_dtype)
TAPED(bias_activation, BIAS_ACTIVATION_ARGS, 0)
#define GATED_ACTIVATION_ARGS(X) X(float *, out) X(const float *, in) X(size_t, rows) X(size_t, width) X(int, act) \
    X(void *, out16) X(int, out16_dtype)
TAPED(gated_activation, GATED_ACTIVATION_ARGS, 0)
#define CLAMPED_SWIGLU_ARGS(X) X(float *, out) X(const float *, in) X(size_t, rows) X(size_t, width) X(float, alpha) \
    X(float, limit)
TAPED(clamped_swiglu, CLAMPED_SWIGLU_ARGS, 0)
#define ADD_RESIDUAL_ARGS(X) X(float *, x) X(const float *, y) X(const void *, b) X(int, dtype) X(size_t, rows) \
    X(size_t, n)
TAPED(add_residual, ADD_RESIDUAL_ARGS, 0)
#define SUM_ARGS(X) X(float *, sum) X(const float *, in) X(size_t, count) X(int, first)
TAPED(sum, SUM_ARGS, 0)
#define SCALE_ARGS(X) X(float *, x) X(size_t, count) X(float, factor)
TAPED(scale, SCALE_ARGS, 0)
#define GATHER_ROWS_ARGS(X) X(float *, dst) X(const float *, src) X(const int32_t *, rows) X(const float *, scales) \
    X(size_t, count) X(size_t, width)
TAPED(gather_rows, GATHER_ROWS_ARGS, 0)
#define SCATTER_ADD_ROWS_ARGS(X) X(float *, dst) X(const float *, src) X(const int32_t *, rows) \
    X(const float *, scales) X(size_t, count) X(size_t, width)
TAPED(scatter_add_rows, SCATTER_ADD_ROWS_ARGS, 0)
#define DEPTHWISE_CONV_ARGS(X) X(float *, out) X(const float *, x) X(const void *, w) X(int, w_dtype) \
    X(const int *, pad) X(int, batch) X(int, T) X(size_t, width) X(int, k)
TAPED(depthwise_conv, DEPTHWISE_CONV_ARGS, 0)
#define MULTIPLY_ARGS(X) X(float *, x) X(const float *, y) X(size_t, y_stride) X(size_t, rows) X(size_t, n)
TAPED(multiply, MULTIPLY_ARGS, 0)
#define SPAN_CONV_ARGS(X) X(float *, out) X(const float *, logits) X(size_t, logits_stride) X(const float *, v) \
    X(const int *, pad) X(int, batch) X(int, T) X(int, heads) X(int, head_dim) X(int, k)
TAPED(span_conv, SPAN_CONV_ARGS, 0)
#define FUNNEL_BIAS_ARGS(X) X(float *, out) X(const float *, q) X(const float *, rel) X(const void *, pos_bias) \
    X(int, pos_dtype) X(const void *, type_bias) X(int, type_dtype) X(const void *, seg) X(int, seg_dtype) \
    X(const int32_t *, ints) X(int, batch) X(int, q_len) X(int, k_len) X(int, heads) X(int, hd) X(int, q_first) \
    X(int, q_stride) X(int, k_first) X(int, k_stride) X(int, rel_first) X(int, separate_cls) \
    X(int, exact_segments) X(int, causal) X(int, window) X(float, scale)
TAPED(funnel_bias, FUNNEL_BIAS_ARGS, 0)
#define REFORMER_ATTEND_ARGS(X) X(float *, out) X(const float *, q) X(const float *, k) X(const float *, v) \
    X(const int32_t *, keys) X(int, len) X(int, heads) X(int, hd) X(int, rounds) X(int, listed) X(int, shared_qk)
TAPED(reformer_attend, REFORMER_ATTEND_ARGS, 0)
#define ADD_RESIDUAL_BIASES_ARGS(X) X(float *, x) X(const float *, y) X(const void *, b) X(int, dtype) \
    X(const void *, b2) X(int, dtype2) X(size_t, rows) X(size_t, n)
TAPED(add_residual_biases, ADD_RESIDUAL_BIASES_ARGS, 0)
#define ROTARY_ARGS(X) X(float *, qkv) X(const void *, bias) X(int, bias_dtype) X(const float *, inv_freq) \
    X(const int *, pad) X(int, batch) X(int, T) X(const int *, past_at) X(int, heads) X(int, kv_heads) X(int, hd) \
    X(int, rotary_dim) X(int, pairs) X(float, scale)
TAPED(rotary, ROTARY_ARGS, 0)
#define CLAMP_ARGS(X) X(float *, x) X(size_t, count) X(float, limit)
TAPED(clamp, CLAMP_ARGS, 0)
#define SCALE_QUERIES_ARGS(X) X(float *, qkv) X(const int *, pad) X(int, batch) X(int, T) X(const int *, past_at) \
    X(int, heads) X(int, kv_heads) X(int, hd) X(float, floor_scale) X(float, scale)
TAPED(scale_queries, SCALE_QUERIES_ARGS, 0)
#define QK_SUM_SQUARES_ARGS(X) X(float *, sums) X(const float *, qkv) X(size_t, rows) X(int, heads) X(int, kv_heads) \
    X(int, hd) X(int, k_first) X(int, k_count)
TAPED(qk_sum_squares, QK_SUM_SQUARES_ARGS, 0)
#define QK_SCALE_ARGS(X) X(float *, qkv) X(const float *, sums) X(const void *, q_w) X(int, q_dtype) \
    X(const void *, k_w) X(int, k_dtype) X(size_t, rows) X(int, heads) X(int, kv_heads) X(int, hd) X(float, q_width) \
    X(float, k_width) X(float, eps)
TAPED(qk_scale, QK_SCALE_ARGS, 0)
#define HEAD_NORM_ARGS(X) X(float *, qkv) X(const void *, q_w) X(int, q_dtype) X(const void *, k_w) X(int, k_dtype) \
    X(const void *, q_b) X(int, qb_dtype) X(const void *, k_b) X(int, kb_dtype) \
    X(size_t, rows) X(int, heads) X(int, kv_heads) X(int, hd) X(float, eps) X(int, rms) X(int, per_head)
TAPED(head_norm, HEAD_NORM_ARGS, 0)
#define KV_APPEND_ARGS(X) X(void *, kc) X(void *, vc) X(int, cache_dtype) X(float *, qkv) X(const void *, bias) \
    X(int, bias_dtype) X(const int *, cache_rows) X(int, batch) X(int, T) X(int, past) X(const int *, past_at) \
    X(int, heads) X(int, kv_heads) X(int, hd) X(int, cache_len)
TAPED(kv_append, KV_APPEND_ARGS, 0)
#define LATENT_APPEND_ARGS(X) X(void *, cache) X(int, cache_dtype) X(const float *, latent) X(const void *, norm) \
    X(int, norm_dtype) X(const float *, inv_freq) X(const int *, pad) X(const int *, cache_rows) X(int, batch) X(int, T) \
    X(int, past) X(const int *, past_at) X(int, rank) X(int, rope) X(int, cache_len) X(int, pairs) \
    X(float, rope_scale) X(float, eps)
TAPED(latent_append, LATENT_APPEND_ARGS, 0)
#define LATENT_ATTEND_ARGS(X) X(float *, out) X(float *, q) X(const void *, cache) X(int, cache_dtype) \
    X(const void *, kv_b) X(int, kv_b_dtype) X(const float *, inv_freq) X(const int *, pad) X(const int *, cache_rows) \
    X(int, batch) X(int, T) X(int, past) X(const int *, past_at) X(int, heads) X(int, hd) X(int, rope) X(int, vd) \
    X(int, rank) X(int, cache_len) X(int, window) X(float, scale) X(int, pairs) X(float, rope_scale)
TAPED(latent_attend, LATENT_ATTEND_ARGS, 0)
/* pf_cuda_attend takes its arguments as a struct: the tape keeps a copy of it (as a captured
   launch keeps its by-value arguments), never the caller's pointer, which may be gone at replay. */
static int attend_live(pf_cuda_rank *st, const pf_cuda_attention_args *args);
static int attend_replay(pf_cuda_rank *st, const void *args) { return attend_live(st, args); }
int pf_cuda_attend(pf_cuda_rank *st, const pf_cuda_attention_args *args) {
    if (!st->tape) return attend_live(st, args);
    return tape_record(st, attend_replay, args, sizeof *args, "attend");
}
#define DISENTANGLED_BIAS_ARGS(X) X(float *, out) X(const float *, qkv) X(const float *, rel_qkv) X(int, batch) \
    X(int, T) X(int, heads) X(int, kv_heads) X(int, hd) X(int, head_begin) X(int, kv_begin) X(int, kv_group) \
    X(int, c2p) X(int, p2c) X(int, position_buckets) X(int, max_relative_positions) X(int, span) X(int, rel_width) \
    X(float, scale)
TAPED(disentangled_bias, DISENTANGLED_BIAS_ARGS, 0)
#define NGRAM_ATTEND_ARGS(X) X(float *, out) X(const float *, qkv) X(const float *, rel) X(int, rel_heads) \
    X(int, rel_width) X(const int32_t *, buckets) X(const void *, kc) X(const void *, vc) X(int, cache_dtype) \
    X(const int *, pad) X(const int *, cache_rows) X(int, batch) X(int, T) X(int, past) X(const int *, past_at) \
    X(int, heads) X(int, kv_heads) X(int, hd) X(int, head_begin) X(int, kv_begin) X(int, kv_group) X(int, cache_len) \
    X(float, scale) X(int, predict)
TAPED(ngram_attend, NGRAM_ATTEND_ARGS, 0)
#define REORDER_ROWS_ARGS(X) X(void *, cache_) X(void *, scratch_) X(const int *, dst) X(const int *, src) \
    X(int, rows) X(size_t, row_bytes) X(size_t, used)
TAPED(reorder_rows, REORDER_ROWS_ARGS, 0)
#define COPY_ASYNC_ARGS(X) X(void *, d) X(const void *, s) X(size_t, b)
TAPED(copy_async, COPY_ASYNC_ARGS, 0)
#define COPY_PEER_ASYNC_ARGS(X) X(void *, d) X(const void *, s) X(int, dev) X(size_t, b)
TAPED(copy_peer_async, COPY_PEER_ASYNC_ARGS, 0)
#define NCCL_ALL_REDUCE_ARGS(X) X(void *, cv) X(float *, x) X(size_t, n)
TAPED(nccl_all_reduce, NCCL_ALL_REDUCE_ARGS, 0)

/* ---- setup, memory, copies ---- */

int pf_cuda_device_count(int *count, const char **reason) {
    const char *e = getenv("MOCK_GPUS");
    *count = e ? atoi(e) : 1;
    if (reason) *reason = NULL;
    return 0;
}
/* A mock device of 80 GiB whose used memory is what the mock has allocated (on any device). */
int pf_cuda_device_memory(int device, size_t *free_bytes, size_t *total_bytes) {
    (void)device;
    size_t used = 0;
    pthread_mutex_lock(&mu);
    for (size_t i = 0; i < num_allocs; i++) used += allocs[i].n;
    pthread_mutex_unlock(&mu);
    *total_bytes = (size_t)80 << 30;
    *free_bytes = *total_bytes - used;
    return 0;
}
int pf_cuda_rank_create(int device, pf_cuda_rank **out, char *message, size_t size) {
    int n;
    pf_cuda_device_count(&n, NULL);
    if (device >= n) {
        snprintf(message, size, "cudaSetDevice failed: invalid device ordinal (mock)");
        *out = NULL;
        return 1;
    }
    *out = calloc(1, sizeof **out);
    (*out)->device = device;
    return 0;
}
void pf_cuda_rank_destroy(pf_cuda_rank *st) {
    if (st) tape_free(st->tape); /* a capture never ended: the library's bug, reported by the leak check */
    free(st);
}
const char *pf_cuda_rank_message(const pf_cuda_rank *st) { return st->message; }
size_t pf_cuda_workspace_bytes(void) { return (size_t)32 << 20; }
int pf_cuda_set_workspace(pf_cuda_rank *st, void *w, size_t b) {
    (void)st;
    NEED(w, b);
    return 0;
}
int pf_cuda_malloc(pf_cuda_rank *st, void **ptr, size_t bytes) {
    NOT_WHILE_CAPTURING(st, "cudaMalloc");
    *ptr = malloc(bytes);
    if (!*ptr) return 2;
    memset(*ptr, 0xff, bytes); /* NaN poison */
    pthread_mutex_lock(&mu);
    if (num_allocs == cap_allocs) {
        cap_allocs = cap_allocs ? 2 * cap_allocs : 256;
        allocs = realloc(allocs, cap_allocs * sizeof *allocs);
    }
    allocs[num_allocs].p = *ptr;
    allocs[num_allocs++].n = bytes;
    pthread_mutex_unlock(&mu);
    return 0;
}
int pf_cuda_free(pf_cuda_rank *st, void *ptr) {
    NOT_WHILE_CAPTURING(st, "cudaFree");
    pthread_mutex_lock(&mu);
    size_t i = 0;
    while (i < num_allocs && allocs[i].p != ptr) i++;
    if (i == num_allocs) {
        fprintf(stderr, "mock: free of %p, no device allocation\n", ptr);
        abort();
    }
    allocs[i] = allocs[--num_allocs];
    pthread_mutex_unlock(&mu);
    free(ptr);
    return 0;
}
/* Pinned host memory: plain malloc, counted so that a leak is reported like a device one's. */
static size_t num_pinned;
int pf_cuda_host_alloc(pf_cuda_rank *st, void **ptr, size_t bytes) {
    (void)st;
    *ptr = malloc(bytes);
    if (!*ptr) return 2;
    memset(*ptr, 0xff, bytes);
    pthread_mutex_lock(&mu);
    num_pinned++;
    pthread_mutex_unlock(&mu);
    return 0;
}
void pf_cuda_host_free(void *ptr) {
    if (!ptr) return;
    pthread_mutex_lock(&mu);
    num_pinned--;
    pthread_mutex_unlock(&mu);
    free(ptr);
}
__attribute__((destructor)) static void report(void) {
    if (num_allocs) fprintf(stderr, "mock: %zu device allocations leaked\n", num_allocs);
    if (num_pinned) fprintf(stderr, "mock: %zu pinned host allocations leaked\n", num_pinned);
    free(allocs);
}
int pf_cuda_upload(pf_cuda_rank *st, void *d, const void *h, size_t b) {
    NOT_WHILE_CAPTURING(st, "cudaMemcpyAsync (host to device)");
    NEED(d, b);
    if (b) memcpy(d, h, b);
    return 0;
}
int pf_cuda_upload_async(pf_cuda_rank *st, void *d, const void *h, size_t b) { return pf_cuda_upload(st, d, h, b); }
int pf_cuda_download(pf_cuda_rank *st, void *h, const void *s, size_t b) {
    NOT_WHILE_CAPTURING(st, "cudaMemcpyAsync (device to host)");
    NEED(s, b);
    if (b) memcpy(h, s, b);
    return 0;
}
int pf_cuda_download_rows(pf_cuda_rank *st, void *h, size_t hs, const void *s, size_t ss, size_t row, size_t rows) {
    NOT_WHILE_CAPTURING(st, "cudaMemcpy2DAsync");
    if (!rows || !row) return 0;
    NEED(s, (rows - 1) * ss + row);
    for (size_t i = 0; i < rows; i++) memcpy((char *)h + i * hs, (const char *)s + i * ss, row);
    return 0;
}
static int copy_async_live(pf_cuda_rank *st, void *d, const void *s, size_t b) {
    (void)st;
    NEED(d, b);
    NEED(s, b);
    if (b) memmove(d, s, b);
    return 0;
}
static int copy_peer_async_live(pf_cuda_rank *st, void *d, const void *s, int dev, size_t b) {
    (void)dev;
    return pf_cuda_copy_async(st, d, s, b);
}
int pf_cuda_stream_sync(pf_cuda_rank *st) {
    NOT_WHILE_CAPTURING(st, "cudaStreamSynchronize");
    return 0;
}
int pf_cuda_stream_query(pf_cuda_rank *st, int *done) {
    NOT_WHILE_CAPTURING(st, "cudaStreamQuery");
    *done = 1;
    return 0;
}

/* ---- kernels ---- */

static int embed_live(pf_cuda_rank *st, float *out, const void *tok, int dtype, const int32_t *ids_host, int32_t *ids_dev,
                  size_t rows, size_t d, float scale, int first, size_t table_rows) {
    (void)st;
    if (!rows || !d) return 0;
    NEED(ids_dev, rows * 4);
    NEED(out, rows * d * 4);
    if (ids_host) memcpy(ids_dev, ids_host, rows * 4); /* NULL: staged earlier */
    for (size_t row = 0; row < rows; row++) {
        size_t id = (size_t)(ids_dev[row] - first); /* wraps below first: another rank's row */
        if (id < table_rows) NEED((const char *)tok + id * d * dsize(dtype), d * dsize(dtype));
        for (size_t c = 0; c < d; c++) out[row * d + c] = id < table_rows ? ld(tok, dtype, id * d + c) * scale : 0.0f;
    }
    return 0;
}

static int position(const int *pad, int b, int past, int t) {
    int p = past + t - (pad ? pad[b] : 0);
    return p > 0 ? p : 0;
}

/* past is read from the device (past_at) as kernels.cu's kernels read it. */
static int add_positions_live(pf_cuda_rank *st, float *x, const void *table, int dtype, const int *pad, int batch, int T,
                          const int *past_at, size_t offset, size_t d) {
    (void)st;
    size_t rows = (size_t)batch * T;
    if (!rows || !d || T <= 0) return 0;
    NEED(x, rows * d * 4);
    NEED(past_at, 4);
    int past = *past_at;
    if (pad) NEED(pad, (size_t)batch * 4);
    for (size_t row = 0; row < rows; row++) {
        size_t at = offset + (size_t)position(pad, (int)(row / T), past, (int)(row % T));
        NEED((const char *)table + at * d * dsize(dtype), d * dsize(dtype));
        for (size_t c = 0; c < d; c++) x[row * d + c] += ld(table, dtype, at * d + c);
    }
    return 0;
}

/* x rounded to nearest in dtype (1 fp16, 2 bf16), as kernels.cu's __float2half_rn /
   __float2bfloat16_rn (the conversion kernel and the norm's 16-bit output) store it. */
static void store16(void *p, int dtype, size_t i, float v) {
    if (dtype == 1) ((_Float16 *)p)[i] = (_Float16)v;
    else ((uint16_t *)p)[i] = to_bf16(v);
}

static int norm_live(pf_cuda_rank *st, float *out, const float *x, const void *w, int w_dtype, const void *b, int b_dtype,
                 size_t rows, size_t n, float eps, int rms, void *out16, int out16_dtype) {
    if (!rows || !n) return 0;
    if (out16 && out16_dtype != 1 && out16_dtype != 2) {
        snprintf(st->message, sizeof st->message, "pf_cuda_norm failed: bad 16-bit dtype (mock)");
        return 1;
    }
    NEED(out, rows * n * 4);
    NEED(x, rows * n * 4);
    if (out16) NEED(out16, rows * n * 2);
    if (w) NEED(w, n * dsize(w_dtype));
    if (b) NEED(b, n * dsize(b_dtype));
    if (rms == 3) { /* pf_elementwise_norm_kernel: x * w + b */
        for (size_t i = 0; i < rows * n; i++) {
            out[i] = x[i] * (w ? ld(w, w_dtype, i % n) : 1.0f) + ld(b, b_dtype, i % n);
            if (out16) store16(out16, out16_dtype, i, out[i]);
        }
        return 0;
    }
    int threads = n >= 256 ? 256 : (int)((n + 31) / 32 * 32);
    float part[256];
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * n;
        float *o = out + r * n;
        float mean = 0.0f;
        if (!rms) {
            for (int t = 0; t < threads; t++) {
                float s = 0.0f;
                for (size_t i = (size_t)t; i < n; i += (size_t)threads) s += xr[i];
                part[t] = s;
            }
            mean = block_reduce(part, threads, 0) / (float)n;
        }
        for (int t = 0; t < threads; t++) {
            float v = 0.0f;
            for (size_t i = (size_t)t; i < n; i += (size_t)threads) {
                float dx = xr[i] - mean;
                v += dx * dx;
            }
            part[t] = v;
        }
        float var = block_reduce(part, threads, 0) / (float)n;
        float inv = 1.0f / sqrtf(var + eps);
        for (size_t i = 0; i < n; i++) {
            o[i] = (xr[i] - mean) * inv * (w ? ld(w, w_dtype, i) + (rms == 2 ? 1.0f : 0.0f) : 1.0f) + ld(b, b_dtype, i);
            if (out16) store16(out16, out16_dtype, r * n + i, o[i]);
        }
    }
    return 0;
}

/* kernels.cu's pf_add_residual_norm_kernel: pf_add_residual_kernel's sum (x + (y + bias), also
   when both are absent), then pf_norm_row on the updated rows. */
static int add_residual_norm_live(pf_cuda_rank *st, float *x, const float *y, const void *bias, int bias_dtype, float *out,
                              const void *w, int w_dtype, const void *norm_bias, int norm_bias_dtype, size_t rows,
                              size_t n, float eps, int rms, void *out16, int out16_dtype) {
    if (!rows || !n) return 0;
    NEED(x, rows * n * 4);
    if (y) NEED(y, rows * n * 4);
    if (bias) NEED(bias, n * dsize(bias_dtype));
    for (size_t i = 0; i < rows * n; i++) x[i] += (y ? y[i] : 0.0f) + ld(bias, bias_dtype, i % n);
    return pf_cuda_norm(st, out, x, w, w_dtype, norm_bias, norm_bias_dtype, rows, n, eps, rms, out16, out16_dtype);
}

/* x_converted: the caller says xs holds x rounded already (a norm's 16-bit output, or the GEMM
   before over the same x); the mock checks it element by element, so a copy gone stale (its
   source written since) fails the call instead of being used. */
int pf_mock_converted_inputs; /* GEMMs whose input came converted (read by test_cuda) */
static int matmul_live(pf_cuda_rank *st, float *out, const float *x, const void *w, int w_dtype, const void *bias,
                   int bias_dtype, size_t rows, size_t n_out, size_t k, void *xs, int x_converted) {
    if (!rows || !n_out) return 0;
    NEED(out, rows * n_out * 4);
    if (bias) NEED(bias, n_out * dsize(bias_dtype));
    if (!k) {
        memset(out, 0, rows * n_out * 4);
    } else {
        NEED(x, rows * k * 4);
        NEED(w, n_out * k * dsize(w_dtype));
        const void *B = x;
        if (w_dtype) {
            if (!xs) {
                snprintf(st->message, sizeof st->message, "pf_cuda_matmul failed: no conversion buffer (mock)");
                return 1;
            }
            NEED(xs, rows * k * 2);
            for (size_t i = 0; i < rows * k; i++) {
                uint16_t want, held;
                store16(&want, w_dtype, 0, x[i]);
                memcpy(&held, (const char *)xs + 2 * i, 2);
                if (x_converted && held != want) {
                    snprintf(st->message, sizeof st->message,
                             "pf_cuda_matmul failed: the converted input is stale at element %zu (mock)", i);
                    return 1;
                }
                if (!x_converted) store16(xs, w_dtype, i, x[i]);
            }
            B = xs;
            if (x_converted) __atomic_add_fetch(&pf_mock_converted_inputs, 1, __ATOMIC_RELAXED);
        }
        for (size_t r = 0; r < rows; r++)
            for (size_t o = 0; o < n_out; o++) {
                float s = 0;
                for (size_t i = 0; i < k; i++) s += ld(B, w_dtype, r * k + i) * ld(w, w_dtype, o * k + i);
                out[r * n_out + o] = s;
            }
    }
    if (bias)
        for (size_t i = 0; i < rows * n_out; i++) out[i] += ld(bias, bias_dtype, i % n_out);
    return 0;
}

/* kernels.cu's pf_better_choice and pf_argmax_kernel: the larger value, the lower id on ties (a
   total order, so the kernel's reduction tree does not matter); a NaN competes as +inf at id 0
   and not at all elsewhere; -1 when a row has no candidate. */
static void better_choice(float *value, int *index, float other_value, int other_index) {
    if (other_index >= 0 && (*index < 0 || other_value > *value || (other_value == *value && other_index < *index))) {
        *value = other_value;
        *index = other_index;
    }
}
static int argmax_live(pf_cuda_rank *st, float *values, int32_t *indices, const float *logits, size_t rows, size_t n,
                   int first) {
    if (!rows) return 0;
    if (rows > 2147483647u || n > 2147483647u || (size_t)first + n > 2147483648u) {
        snprintf(st->message, sizeof st->message, "pf_cuda_argmax failed: ids exceed INT32_MAX (mock)");
        return 1;
    }
    NEED(values, rows * 4);
    NEED(indices, rows * 4);
    NEED(logits, rows * n * 4);
    for (size_t row = 0; row < rows; row++) {
        float best = -INFINITY;
        int at = -1;
        for (size_t i = 0; i < n; i++) {
            float v = logits[row * n + i];
            int id = first + (int)i;
            if (isnan(v)) {
                if (id != 0) continue;
                v = INFINITY;
            }
            better_choice(&best, &at, v, id);
        }
        values[row] = best;
        indices[row] = at;
    }
    return 0;
}

/* kernels.cu's pf_candidate_key and pf_top_k_kernel: the count largest keys of a row (the value
   made order-preserving, NaN above +inf, -0 as +0; the complement of the slice index below it,
   so the lower id wins a tie), best first. The kernel's radix select and bitonic sort leave the
   same list whatever its threads' order: the keys are distinct. */
static uint64_t candidate_key(float v, uint32_t i) {
    uint32_t bits;
    memcpy(&bits, &v, 4);
    if (isnan(v)) bits = 0xffffffffu;
    else if (v == 0.0f) bits = 0x80000000u;
    else bits = (bits & 0x80000000u) ? ~bits : bits | 0x80000000u;
    return ((uint64_t)bits << 32) | (0xffffffffu - i);
}
static int key_descending(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}
int pf_cuda_top_k(pf_cuda_rank *st, float *values, int32_t *indices, const float *logits, size_t rows, size_t n,
                  int first, size_t count) {
    if (!rows) return 0;
    if (rows > 2147483647u || n > 2147483647u || (size_t)first + n > 2147483648u || !count || count > n ||
        count > PF_CUDA_TOP_K_MAX) {
        snprintf(st->message, sizeof st->message, "pf_cuda_top_k failed: bad sizes (mock)");
        return 1;
    }
    NEED(values, rows * count * 4);
    NEED(indices, rows * count * 4);
    NEED(logits, rows * n * 4);
    uint64_t *keys = malloc(n * sizeof *keys);
    if (!keys) {
        snprintf(st->message, sizeof st->message, "pf_cuda_top_k failed: out of host memory (mock)");
        return 2;
    }
    for (size_t row = 0; row < rows; row++) {
        for (size_t i = 0; i < n; i++) keys[i] = candidate_key(logits[row * n + i], (uint32_t)i);
        qsort(keys, n, sizeof *keys, key_descending);
        for (size_t j = 0; j < count; j++) {
            uint32_t i = 0xffffffffu - (uint32_t)(keys[j] & 0xffffffffu);
            values[row * count + j] = logits[row * n + i];
            indices[row * count + j] = first + (int32_t)i;
        }
    }
    free(keys);
    return 0;
}

static float act_fn(float v, int act) {
    switch (act) {
    case 0: return 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
    case 1: return 0.5f * v * (1.0f + erff(v * 0.7071067811865476f));
    case 2: return v > 0.0f ? v : 0.0f;
    case 3: return v / (1.0f + expf(-v));
    case 4: return tanhf(v);
    case 5: return v / (1.0f + expf(-1.702f * v));
    default: return v;
    }
}

/* The activations' 16-bit copy of their output (x16, out16, or NULL) as the norm's out16. */
static int activation_live(pf_cuda_rank *st, float *x, size_t count, int act, void *x16, int x16_dtype) {
    (void)st;
    NEED(x, count * 4);
    if (x16) NEED(x16, count * 2);
    for (size_t i = 0; i < count; i++) {
        x[i] = act_fn(x[i], act);
        if (x16) store16(x16, x16_dtype, i, x[i]);
    }
    return 0;
}

/* kernels.cu's pf_softcap_kernel */
static int softcap_live(pf_cuda_rank *st, float *x, size_t count, float cap) {
    (void)st;
    NEED(x, count * 4);
    for (size_t i = 0; i < count; i++) x[i] = tanhf(x[i] / cap) * cap;
    return 0;
}

/* kernels.cu's pf_bias_activation_kernel: pf_add_bias_kernel's sum, then the activation */
static int bias_activation_live(pf_cuda_rank *st, float *x, const void *bias, int dtype, size_t rows, size_t n, int act,
                            void *x16, int x16_dtype) {
    (void)st;
    if (!rows || !n) return 0;
    NEED(x, rows * n * 4);
    NEED(bias, n * dsize(dtype));
    if (x16) NEED(x16, rows * n * 2);
    for (size_t i = 0; i < rows * n; i++) {
        float v = x[i];
        v += ld(bias, dtype, i % n);
        x[i] = act_fn(v, act);
        if (x16) store16(x16, x16_dtype, i, x[i]);
    }
    return 0;
}

static int gated_activation_live(pf_cuda_rank *st, float *out, const float *in, size_t rows, size_t width, int act,
                             void *out16, int out16_dtype) {
    (void)st;
    if (!rows || !width) return 0;
    NEED(out, rows * width * 4);
    NEED(in, rows * 2 * width * 4);
    if (out16) NEED(out16, rows * width * 2);
    for (size_t row = 0; row < rows; row++)
        for (size_t i = 0; i < width; i++) {
            out[row * width + i] = act_fn(in[row * 2 * width + i], act) * in[row * 2 * width + width + i];
            if (out16) store16(out16, out16_dtype, row * width + i, out[row * width + i]);
        }
    return 0;
}

/* kernels.cu's pf_clamped_swiglu_kernel */
static int clamped_swiglu_live(pf_cuda_rank *st, float *out, const float *in, size_t rows, size_t width, float alpha,
                               float limit) {
    (void)st;
    if (!rows || !width) return 0;
    NEED(out, rows * width * 4);
    NEED(in, rows * 2 * width * 4);
    for (size_t row = 0; row < rows; row++)
        for (size_t i = 0; i < width; i++) {
            float gate = fminf(in[row * 2 * width + i], limit);
            float up = fminf(fmaxf(in[row * 2 * width + width + i], -limit), limit);
            out[row * width + i] = (up + 1.0f) * (gate / (1.0f + expf(-gate * alpha)));
        }
    return 0;
}

static int add_residual_live(pf_cuda_rank *st, float *x, const float *y, const void *b, int dtype, size_t rows, size_t n) {
    (void)st;
    if (!rows || !n || (!y && !b)) return 0;
    NEED(x, rows * n * 4);
    if (y) NEED(y, rows * n * 4);
    if (b) NEED(b, n * dsize(dtype));
    for (size_t i = 0; i < rows * n; i++) x[i] += (y ? y[i] : 0.0f) + ld(b, dtype, i % n);
    return 0;
}

/* kernels.cu's pf_add_residual_biases_kernel: pf_cuda_add_residual, then the same with bias2 alone. */
static int add_residual_biases_live(pf_cuda_rank *st, float *x, const float *y, const void *b, int dtype, const void *b2,
                                    int dtype2, size_t rows, size_t n) {
    (void)st;
    if (!rows || !n) return 0;
    NEED(x, rows * n * 4);
    if (y) NEED(y, rows * n * 4);
    if (b) NEED(b, n * dsize(dtype));
    if (b2) NEED(b2, n * dsize(dtype2));
    for (size_t i = 0; i < rows * n; i++) {
        float v = x[i] + ((y ? y[i] : 0.0f) + ld(b, dtype, i % n));
        x[i] = v + (0.0f + ld(b2, dtype2, i % n));
    }
    return 0;
}

/* kernels.cu's pf_scale_kernel */
static int scale_live(pf_cuda_rank *st, float *x, size_t count, float factor) {
    (void)st;
    NEED(x, count * 4);
    for (size_t i = 0; i < count; i++) x[i] *= factor;
    return 0;
}

static int gather_rows_live(pf_cuda_rank *st, float *dst, const float *src, const int32_t *rows, const float *scales,
                            size_t count, size_t width) {
    (void)st;
    NEED(dst, count * width * 4);
    NEED(rows, count * 4);
    if (scales) NEED(scales, count * 4);
    for (size_t i = 0; i < count * width; i++) {
        float x = src[(size_t)rows[i / width] * width + i % width];
        dst[i] = scales ? scales[i / width] * x : x;
    }
    return 0;
}

static int scatter_add_rows_live(pf_cuda_rank *st, float *dst, const float *src, const int32_t *rows,
                                 const float *scales, size_t count, size_t width) {
    (void)st;
    NEED(src, count * width * 4);
    NEED(rows, count * 4);
    if (scales) NEED(scales, count * 4);
    for (size_t i = 0; i < count * width; i++)
        dst[(size_t)rows[i / width] * width + i % width] += scales ? scales[i / width] * src[i] : src[i];
    return 0;
}

/* kernels.cu's pf_depthwise_conv_kernel, pf_multiply_kernel and pf_span_conv_kernel: each output
   summed over the kernel's taps in order, fp32. */
static int depthwise_conv_live(pf_cuda_rank *st, float *out, const float *x, const void *w, int w_dtype, const int *pad,
                               int batch, int T, size_t width, int k) {
    (void)st;
    size_t rows = (size_t)batch * (size_t)T;
    if (!rows || !width) return 0;
    NEED(out, rows * width * 4);
    NEED(x, rows * width * 4);
    NEED(w, width * (size_t)k * dsize(w_dtype));
    if (pad) NEED(pad, (size_t)batch * sizeof(int));
    for (size_t i = 0; i < rows * width; i++) {
        size_t n = i / width, c = i % width;
        int t = (int)(n % (size_t)T), first = pad ? pad[n / (size_t)T] : 0, half = (k - 1) / 2;
        float acc = 0.0f;
        for (int j = 0; t >= first && j < k; j++) {
            int at = t + j - half;
            if (at >= first && at < T) acc += ld(w, w_dtype, c * (size_t)k + j) * x[(n - (size_t)t + (size_t)at) * width + c];
        }
        out[i] = acc;
    }
    return 0;
}

static int multiply_live(pf_cuda_rank *st, float *x, const float *y, size_t y_stride, size_t rows, size_t n) {
    (void)st;
    if (!rows || !n) return 0;
    NEED(x, rows * n * 4);
    NEED(y, ((rows - 1) * y_stride + n) * 4);
    for (size_t i = 0; i < rows * n; i++) x[i] *= y[i / n * y_stride + i % n];
    return 0;
}

static int span_conv_live(pf_cuda_rank *st, float *out, const float *logits, size_t logits_stride, const float *v,
                          const int *pad, int batch, int T, int heads, int head_dim, int k) {
    (void)st;
    size_t rows = (size_t)batch * (size_t)T, width = (size_t)heads * (size_t)head_dim;
    if (!rows || !width) return 0;
    NEED(out, rows * width * 4);
    NEED(v, rows * width * 4);
    NEED(logits, ((rows - 1) * logits_stride + (size_t)heads * (size_t)k) * 4);
    if (pad) NEED(pad, (size_t)batch * sizeof(int));
    for (size_t i = 0; i < rows * width; i++) {
        size_t n = i / width, col = i % width;
        int t = (int)(n % (size_t)T), first = pad ? pad[n / (size_t)T] : 0, half = (k - 1) / 2;
        const float *l = logits + n * logits_stride + col / (size_t)head_dim * (size_t)k;
        float most = l[0], sum = 0.0f, acc = 0.0f;
        for (int j = 1; j < k; j++) most = fmaxf(most, l[j]);
        for (int j = 0; j < k; j++) sum += expf(l[j] - most);
        for (int j = 0; t >= first && j < k; j++) {
            int at = t + j - half;
            if (at >= first && at < T) acc += expf(l[j] - most) / sum * v[(n - (size_t)t + (size_t)at) * width + col];
        }
        out[i] = acc;
    }
    return 0;
}

/* kernels.cu's pf_funnel_bias_kernel: each (query row, head, key), the dot products in order, fp32. */
static int funnel_bias_live(pf_cuda_rank *st, float *out, const float *q, const float *rel, const void *pos_bias,
                            int pos_dtype, const void *type_bias, int type_dtype, const void *seg, int seg_dtype,
                            const int32_t *ints, int batch, int q_len, int k_len, int heads, int hd, int q_first,
                            int q_stride, int k_first, int k_stride, int rel_first, int separate_cls, int exact_segments,
                            int causal, int window, float scale) {
    (void)st;
    size_t total = (size_t)batch * q_len * heads * k_len, width = (size_t)heads * hd;
    if (!total) return 0;
    NEED(out, total * 4);
    NEED(q, (size_t)batch * q_len * width * 4);
    NEED(ints, (2 * (size_t)batch + (size_t)batch * (q_len + k_len)) * 4);
    NEED(pos_bias, width * dsize(pos_dtype));
    if (seg) { /* NULL: no segment term (Transformer-XL) */
        NEED(type_bias, width * dsize(type_dtype));
        NEED(seg, 2 * width * dsize(seg_dtype));
    }
    const int32_t *q_pad = ints, *k_pad = ints + batch, *q_types = ints + 2 * batch, *k_types = q_types + (size_t)batch * q_len;
    size_t rel_rows = (size_t)(((q_len - 1) * q_stride + (k_len - 1) * k_stride) / k_stride + 1);
    NEED(rel, rel_rows * width * 4);
    for (size_t e = 0; e < total; e++) {
        int j = (int)(e % (size_t)k_len), h = (int)(e / (size_t)k_len % (size_t)heads);
        size_t n = e / ((size_t)k_len * heads);
        int b = (int)(n / (size_t)q_len), qi = (int)(n % (size_t)q_len) - q_pad[b], kj = j - k_pad[b];
        float value = 0.0f;
        int distance = q_first + qi * q_stride - k_first - kj * k_stride;
        if (qi >= 0 && kj >= 0 && ((causal && distance < 0) || (window > 0 && distance >= window))) {
            value = -INFINITY;
        } else if (qi >= 0 && kj >= 0 && !(separate_cls && (qi == 0 || kj == 0))) {
            const float *qh = q + n * width + (size_t)h * hd;
            const float *row = rel + (size_t)((distance - rel_first) / k_stride) * width + (size_t)h * hd;
            int tq = q_types[n], tk = k_types[(size_t)b * k_len + j];
            int same = tq == tk || (!exact_segments && (tq == 2 || tk == 2));
            int seg_row = exact_segments ? !same : same;
            float position = 0.0f, segment = 0.0f;
            for (int i = 0; i < hd; i++) position += (qh[i] + ld(pos_bias, pos_dtype, (size_t)h * hd + i)) * row[i];
            for (int i = 0; seg && i < hd; i++)
                segment += (qh[i] + ld(type_bias, type_dtype, (size_t)h * hd + i)) *
                           ld(seg, seg_dtype, (size_t)seg_row * width + (size_t)h * hd + i);
            value = scale * (seg ? position + segment : position);
        }
        out[e] = value;
    }
    return 0;
}

/* kernels.cu's pf_reformer_score: q . key over sqrt(head_dim), LSH's key length-normalised. */
static float reformer_score(const float *qh, const float *k, int32_t entry, size_t width, int h, int hd, int shared_qk) {
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

/* kernels.cu's pf_reformer_attend_kernel: each (position, head), the rounds' softmaxes weighed by
   their log-sum-exps; the keys and every row they list checked against their allocations. */
static int reformer_attend_live(pf_cuda_rank *st, float *out, const float *q, const float *k, const float *v,
                                const int32_t *keys, int len, int heads, int hd, int rounds, int listed, int shared_qk) {
    size_t total = (size_t)len * heads, width = (size_t)heads * hd, K = (size_t)listed;
    if (!total) return 0;
    NEED(out, (size_t)len * width * 4);
    NEED(q, (size_t)len * width * 4);
    NEED(k, (size_t)len * width * 4);
    NEED(v, (size_t)len * width * 4);
    NEED(keys, total * (size_t)rounds * K * 4);
    int bad = rounds < 1 || rounds > 64;
    for (size_t i = 0; !bad && i < total * (size_t)rounds * K; i++) bad = keys[i] < 0 || keys[i] / 4 >= len || keys[i] % 4 > 2;
    if (bad) { /* kernels.cu would read outside the row */
        snprintf(st->message, sizeof st->message, "pf_cuda_reformer_attend: rounds %d or a listed key outside the row (mock)",
                 rounds);
        return 1;
    }
    for (size_t n = 0; n < total; n++) {
        int h = (int)(n % (size_t)heads), t = (int)(n / (size_t)heads);
        const float *qh = q + (size_t)t * width + (size_t)h * hd;
        float *o = out + (size_t)t * width + (size_t)h * hd;
        const int32_t *all = keys + ((size_t)h * len + t) * rounds * K;
        float lse[64], top_all = -INFINITY;
        for (int r = 0; r < rounds; r++) {
            const int32_t *row = all + (size_t)r * K;
            float top = -INFINITY, sum = 0.0f;
            for (size_t j = 0; j < K; j++) top = fmaxf(top, reformer_score(qh, k, row[j], width, h, hd, shared_qk));
            for (size_t j = 0; j < K; j++) sum += expf(reformer_score(qh, k, row[j], width, h, hd, shared_qk) - top);
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
                float p = expf(reformer_score(qh, k, row[j], width, h, hd, shared_qk) - lse[r]) * weight;
                const float *vh = v + (size_t)(row[j] >> 2) * width + (size_t)h * hd;
                for (int e = 0; e < hd; e++) o[e] += p * vh[e];
            }
        }
    }
    return 0;
}

static int sum_live(pf_cuda_rank *st, float *sum, const float *in, size_t count, int first) {
    (void)st;
    NEED(sum, count * 4);
    NEED(in, count * 4);
    for (size_t i = 0; i < count; i++) sum[i] = first ? in[i] : sum[i] + in[i];
    return 0;
}

/* The QKV GEMM's bias, which it left out, added to rows of width (kernels.cu's rotary and
   kv_append kernels add it to each element before anything else reads it). */
static void add_qkv_bias(float *qkv, const void *bias, int bias_dtype, size_t rows, size_t width) {
    if (!bias) return;
    NEED(bias, width * dsize(bias_dtype));
    for (size_t row = 0; row < rows; row++)
        for (size_t c = 0; c < width; c++) qkv[row * width + c] += ld(bias, bias_dtype, c);
}

/* kernels.cu's pf_clamp_kernel. */
static int clamp_live(pf_cuda_rank *st, float *x, size_t count, float limit) {
    (void)st;
    if (!count) return 0;
    NEED(x, count * 4);
    for (size_t i = 0; i < count; i++) x[i] = fminf(fmaxf(x[i], -limit), limit);
    return 0;
}

/* kernels.cu's pf_qk_sum_squares_kernel: 256 threads' strided sums of squares, then the block's sum. */
static int qk_sum_squares_live(pf_cuda_rank *st, float *sums, const float *qkv, size_t rows, int heads, int kv_heads,
                               int hd, int k_first, int k_count) {
    (void)st;
    if (!rows) return 0;
    size_t q = heads > 0 ? (size_t)heads * hd : 0, width = heads > 0 ? (size_t)(heads + 2 * kv_heads) * hd : 0;
    size_t k0 = (size_t)(k_first > 0 ? k_first : 0) * hd, k_len = heads > 0 && k_count > 0 ? (size_t)k_count * hd : 0;
    NEED(sums, rows * 2 * 4);
    if (width) NEED(qkv, rows * width * 4);
    enum { THREADS = 256 };
    float part[THREADS];
    for (size_t row = 0; row < rows; row++) {
        const float *xr = width ? qkv + row * width : NULL;
        for (int t = 0; t < THREADS; t++) {
            float s = 0.0f;
            for (size_t i = (size_t)t; i < q; i += THREADS) s += xr[i] * xr[i];
            part[t] = s;
        }
        sums[2 * row] = block_reduce(part, THREADS, 0);
        for (int t = 0; t < THREADS; t++) {
            float s = 0.0f;
            for (size_t i = (size_t)t; i < k_len; i += THREADS) s += xr[q + k0 + i] * xr[q + k0 + i];
            part[t] = s;
        }
        sums[2 * row + 1] = block_reduce(part, THREADS, 0);
    }
    return 0;
}

/* kernels.cu's pf_qk_scale_kernel. */
static int qk_scale_live(pf_cuda_rank *st, float *qkv, const float *sums, const void *q_w, int q_dtype, const void *k_w,
                         int k_dtype, size_t rows, int heads, int kv_heads, int hd, float q_width, float k_width,
                         float eps) {
    (void)st;
    if (!rows || heads <= 0 || (!q_w && !k_w)) return 0;
    size_t q = (size_t)heads * hd, kv = (size_t)kv_heads * hd, width = q + 2 * kv;
    NEED(qkv, rows * width * 4);
    NEED(sums, rows * 2 * 4);
    if (q_w) NEED(q_w, q * dsize(q_dtype));
    if (k_w) NEED(k_w, kv * dsize(k_dtype));
    for (size_t row = 0; row < rows; row++)
        for (size_t i = 0; i < q + kv; i++) {
            int is_q = i < q;
            const void *w = is_q ? q_w : k_w;
            if (!w) continue;
            float inv = 1.0f / sqrtf(sums[2 * row + (is_q ? 0 : 1)] / (is_q ? q_width : k_width) + eps);
            float *x = qkv + row * width + i;
            *x = ld(w, is_q ? q_dtype : k_dtype, is_q ? i : i - q) * (*x * inv);
        }
    return 0;
}

/* kernels.cu's pf_head_norm_kernel: each q head and k head of the rows, one block's pf_norm_row
   over its head_dim values in place (norm_live on that slice), a side without its gain skipped;
   per_head: head h's gain is row h of its side's [heads][hd]; its side's bias added. */
static int head_norm_live(pf_cuda_rank *st, float *qkv, const void *q_w, int q_dtype, const void *k_w, int k_dtype,
                          const void *q_b, int qb_dtype, const void *k_b, int kb_dtype, size_t rows, int heads,
                          int kv_heads, int hd, float eps, int rms, int per_head) {
    if (!rows || heads + kv_heads <= 0 || hd <= 0 || (!q_w && !k_w)) return 0;
    size_t width = (size_t)(heads + 2 * kv_heads) * hd;
    NEED(qkv, rows * width * 4);
    for (size_t row = 0; row < rows; row++)
        for (int h = 0; h < heads + kv_heads; h++) {
            const void *w = h < heads ? q_w : k_w;
            int dtype = h < heads ? q_dtype : k_dtype;
            float *xr = qkv + row * width + (size_t)h * hd;
            if (w && per_head)
                w = (const char *)w + (size_t)(h < heads ? h : h - heads) * hd * (dtype == PF_CUDA_F32 ? 4 : 2);
            if (w && norm_live(st, xr, xr, w, dtype, h < heads ? q_b : k_b, h < heads ? qb_dtype : kb_dtype, 1,
                               (size_t)hd, eps, rms, NULL, 0))
                return 1;
        }
    return 0;
}

/* kernels.cu's pf_scale_queries_kernel: q times 1 + scale * log1p(floor((p + 1) / floor_scale)). */
static int scale_queries_live(pf_cuda_rank *st, float *qkv, const int *pad, int batch, int T, const int *past_at,
                              int heads, int kv_heads, int hd, float floor_scale, float scale) {
    (void)st;
    size_t rows = (size_t)batch * T, q_width = (size_t)heads * hd, row_width = (size_t)(heads + 2 * kv_heads) * hd;
    if (!rows || T <= 0 || !q_width) return 0;
    NEED(qkv, rows * row_width * 4);
    if (pad) NEED(pad, (size_t)batch * 4);
    NEED(past_at, 4);
    int past = *past_at;
    for (size_t row = 0; row < rows; row++) {
        float p = (float)position(pad, (int)(row / (size_t)T), past, (int)(row % (size_t)T));
        float factor = log1pf(floorf((p + 1.0f) / floor_scale)) * scale + 1.0f;
        for (size_t i = 0; i < q_width; i++) qkv[row * row_width + i] *= factor;
    }
    return 0;
}

static int rotary_live(pf_cuda_rank *st, float *qkv, const void *bias, int bias_dtype, const float *inv_freq,
                       const int *pad, int batch, int T, const int *past_at, int heads, int kv_heads, int hd,
                       int rotary_dim, int pairs, float scale) {
    int half = rotary_dim / 2, rotated = heads + kv_heads;
    size_t rows = (size_t)batch * T;
    if (!rows || T <= 0 || rotated <= 0 || (half <= 0 && !bias)) return 0;
    if (half < 0) half = 0;
    if (rotary_dim > hd || (half && !inv_freq)) {
        snprintf(st->message, sizeof st->message, "pf_cuda_rotary failed: bad arguments (mock)");
        return 1;
    }
    size_t row_width = (size_t)(heads + 2 * kv_heads) * hd;
    NEED(qkv, rows * row_width * 4);
    if (half) NEED(inv_freq, (size_t)half * 4);
    if (pad) NEED(pad, (size_t)batch * 4);
    NEED(past_at, 4);
    int past = *past_at;
    add_qkv_bias(qkv, bias, bias_dtype, rows, row_width);
    for (size_t row = 0; row < rows; row++)
        for (int h = 0; h < rotated; h++)
            for (int i = 0; i < half; i++) {
                float pos = (float)position(pad, (int)(row / (size_t)T), past, (int)(row % (size_t)T));
                float angle = pos * inv_freq[i];
                float c = cosf(angle) * scale, sn = sinf(angle) * scale;
                float *x = qkv + row * row_width + (size_t)h * hd;
                int i1 = pairs ? 2 * i : i, i2 = pairs ? i1 + 1 : i + half;
                float x1 = x[i1], x2 = x[i2];
                float a1 = x1 * c, a2 = x2 * sn, b1 = x2 * c, b2 = x1 * sn;
                x[i1] = a1 - a2;
                x[i2] = b1 + b2;
            }
    return 0;
}

#define CHUNK 32
#define MAXS 32
#define ATTN_THREADS 128
size_t pf_cuda_attention_scratch_floats(int mb, int heads, int hd) { return (size_t)mb * heads * MAXS * ((size_t)hd + 2); }
int pf_cuda_decode_splits(int len) {
    int splits = (len + 15) / 16;
    return splits < 1 ? 1 : splits > MAXS ? MAXS : splits;
}

/* kernels.cu's pf_relative_bucket */
static int relative_bucket(int distance, int num_buckets, int max_distance, int bidirectional) {
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

/* The cache rows a step's sequences use: rows[b], or b; the count of rows the caches must hold. */
static size_t cache_rows_needed(const int *rows, int batch) {
    size_t most = (size_t)batch;
    if (rows) {
        NEED(rows, (size_t)batch * 4);
        for (int b = 0; b < batch; b++)
            if ((size_t)rows[b] + 1 > most) most = (size_t)rows[b] + 1;
    }
    return most;
}

/* Element i of a cache of dtype (0 fp32, 1 fp16, 2 bf16) set to v rounded to nearest, as
   kernels.cu's __float2half_rn / __float2bfloat16_rn store it. */
static void cache_store(void *p, int dtype, size_t i, float v) {
    if (dtype == 1) ((_Float16 *)p)[i] = (_Float16)v;
    else if (dtype == 2) ((uint16_t *)p)[i] = to_bf16(v);
    else ((float *)p)[i] = v;
}

/* past checks the positions; the arithmetic reads it from past_at, as the kernel does. */
static int kv_append_live(pf_cuda_rank *st, void *kc, void *vc, int cache_dtype, float *qkv, const void *bias,
                          int bias_dtype, const int *cache_rows, int batch, int T, int past, const int *past_at,
                          int heads, int kv_heads, int hd, int cache_len) {
    if (kv_heads <= 0 || hd <= 0 || batch <= 0 || T <= 0) return 0;
    if (past < 0 || past + T > cache_len || !past_at) {
        snprintf(st->message, sizeof st->message, "pf_cuda_kv_append failed: positions beyond the cache (mock)");
        return 1;
    }
    NEED(past_at, 4);
    past = *past_at;
    size_t q_width = (size_t)heads * hd, kv_width = (size_t)kv_heads * hd, row_width = q_width + 2 * kv_width;
    size_t rows = (size_t)batch * T;
    NEED(qkv, rows * row_width * 4);
    NEED(kc, cache_rows_needed(cache_rows, batch) * cache_len * kv_width * dsize(cache_dtype));
    NEED(vc, cache_rows_needed(cache_rows, batch) * cache_len * kv_width * dsize(cache_dtype));
    add_qkv_bias(qkv, bias, bias_dtype, rows, row_width);
    for (size_t row = 0; row < rows; row++)
        for (size_t c = 0; c < kv_width; c++) {
            size_t b = row / T, t = row % T, cache_row = cache_rows ? (size_t)cache_rows[b] : b;
            size_t dst = (cache_row * cache_len + past + t) * kv_width + c;
            cache_store(kc, cache_dtype, dst, qkv[row * row_width + q_width + c]);
            cache_store(vc, cache_dtype, dst, qkv[row * row_width + q_width + kv_width + c]);
        }
    return 0;
}

/* kernels.cu's pf_rotate_one: pair i of x rotated by position pos. */
static void rotate_one(float *x, int i, int half, int pairs, float pos, const float *inv_freq, float scale) {
    float angle = pos * inv_freq[i];
    float c = cosf(angle) * scale, sn = sinf(angle) * scale;
    int i1 = pairs ? 2 * i : i, i2 = pairs ? i1 + 1 : i + half;
    float x1 = x[i1], x2 = x[i2];
    float a1 = x1 * c, a2 = x2 * sn, b1 = x2 * c, b2 = x1 * sn;
    x[i1] = a1 - a2;
    x[i2] = b1 + b2;
}

/* kernels.cu's pf_latent_append_kernel: [latent RMSNormed | shared key rotated] into the cache. */
static int latent_append_live(pf_cuda_rank *st, void *cache, int cache_dtype, const float *latent, const void *norm,
                              int norm_dtype, const float *inv_freq, const int *pad, const int *cache_rows, int batch,
                              int T, int past, const int *past_at, int rank, int rope, int cache_len, int pairs,
                              float rope_scale, float eps) {
    if (batch <= 0 || T <= 0 || rank <= 0) return 0;
    if (past < 0 || past + T > cache_len || !past_at || rope % 2 || rope > 4096) {
        snprintf(st->message, sizeof st->message, "pf_cuda_latent_append failed: positions beyond the cache (mock)");
        return 1;
    }
    NEED(past_at, 4);
    past = *past_at;
    size_t width = (size_t)rank + rope, rows = (size_t)batch * T;
    NEED(latent, rows * width * 4);
    NEED(norm, (size_t)rank * dsize(norm_dtype));
    NEED(inv_freq, (size_t)(rope / 2) * 4);
    if (pad) NEED(pad, (size_t)batch * 4);
    NEED(cache, cache_rows_needed(cache_rows, batch) * cache_len * width * dsize(cache_dtype));
    float key[4096];
    for (size_t row = 0; row < rows; row++) {
        int b = (int)(row / (size_t)T), t = (int)(row % (size_t)T);
        const float *in = latent + row * width;
        float squares = 0.0f;
        for (int c = 0; c < rank; c++) squares += in[c] * in[c];
        float inv = 1.0f / sqrtf(squares / (float)rank + eps);
        size_t dst = ((size_t)(cache_rows ? cache_rows[b] : b) * cache_len + (size_t)past + (size_t)t) * width;
        for (int c = 0; c < rank; c++) cache_store(cache, cache_dtype, dst + c, in[c] * inv * ld(norm, norm_dtype, c));
        memcpy(key, in + rank, (size_t)rope * 4);
        for (int i = 0; i < rope / 2; i++)
            rotate_one(key, i, rope / 2, pairs, (float)position(pad, b, past, t), inv_freq, rope_scale);
        for (int d = 0; d < rope; d++) cache_store(cache, cache_dtype, dst + rank + d, key[d]);
    }
    return 0;
}

/* kernels.cu's pf_latent_attention_kernel: the absorbed form, the softmax over all the keys the
   query sees at once (the kernel's running softmax over chunks is the same sum). */
static int latent_attend_live(pf_cuda_rank *st, float *out, float *q, const void *cache, int cache_dtype,
                              const void *kv_b, int kv_b_dtype, const float *inv_freq, const int *pad,
                              const int *cache_rows, int batch, int T, int past, const int *past_at, int heads, int hd,
                              int rope, int vd, int rank, int cache_len, int window, float scale, int pairs,
                              float rope_scale) {
    if (heads <= 0 || batch <= 0 || T <= 0) return 0;
    if (past < 0 || past + T > cache_len || !past_at || rope % 2 || rope >= hd || rank > 65536) {
        snprintf(st->message, sizeof st->message, "pf_cuda_latent_attend failed: positions beyond the cache (mock)");
        return 1;
    }
    NEED(past_at, 4);
    past = *past_at;
    int nope = hd - rope;
    size_t width = (size_t)rank + rope, rows = (size_t)batch * T, per_head = (size_t)(nope + vd);
    NEED(q, rows * heads * hd * 4);
    NEED(out, rows * heads * vd * 4);
    NEED(kv_b, (size_t)heads * per_head * rank * dsize(kv_b_dtype));
    NEED(inv_freq, (size_t)(rope / 2) * 4);
    if (pad) NEED(pad, (size_t)batch * 4);
    NEED(cache, cache_rows_needed(cache_rows, batch) * cache_len * width * dsize(cache_dtype));
    float *q_lat = malloc((2 * (size_t)rank + (size_t)cache_len) * sizeof(float));
    if (!q_lat) {
        snprintf(st->message, sizeof st->message, "pf_cuda_latent_attend failed: out of host memory (mock)");
        return 1;
    }
    float *o_lat = q_lat + rank, *p = o_lat + rank;
    for (size_t row = 0; row < rows; row++) {
        int b = (int)(row / (size_t)T), t = (int)(row % (size_t)T);
        int pos = past + t, first = pad ? pad[b] : 0, last = pos;
        if (window > 0 && pos + 1 > window && pos + 1 - window > first) first = pos + 1 - window;
        size_t base = (size_t)(cache_rows ? cache_rows[b] : b) * cache_len * width;
        for (int h = 0; h < heads; h++) {
            float *qh = q + (row * heads + h) * hd, *o = out + (row * heads + h) * vd;
            size_t w0 = (size_t)h * per_head;
            for (int i = 0; i < rope / 2; i++)
                rotate_one(qh + nope, i, rope / 2, pairs, (float)position(pad, b, past, t), inv_freq, rope_scale);
            if (first > last) {
                for (int e = 0; e < vd; e++) o[e] = 0.0f;
                continue;
            }
            for (int c = 0; c < rank; c++) {
                float sum = 0.0f;
                for (int d = 0; d < nope; d++) sum = fmaf(qh[d], ld(kv_b, kv_b_dtype, (w0 + d) * rank + c), sum);
                q_lat[c] = sum;
                o_lat[c] = 0.0f;
            }
            float max = -INFINITY, total = 0.0f;
            for (int j = first; j <= last; j++) {
                size_t at = base + (size_t)j * width;
                float sum = 0.0f;
                for (int c = 0; c < rank; c++) sum = fmaf(q_lat[c], ld(cache, cache_dtype, at + c), sum);
                for (int d = 0; d < rope; d++) sum = fmaf(qh[nope + d], ld(cache, cache_dtype, at + rank + d), sum);
                p[j] = sum * scale;
                max = p[j] > max ? p[j] : max;
            }
            for (int j = first; j <= last; j++) total += p[j] = expf(p[j] - max);
            for (int j = first; j <= last; j++)
                for (int c = 0; c < rank; c++) o_lat[c] = fmaf(p[j], ld(cache, cache_dtype, base + (size_t)j * width + c), o_lat[c]);
            for (int e = 0; e < vd; e++) {
                float sum = 0.0f;
                for (int c = 0; c < rank; c++) sum = fmaf(o_lat[c], ld(kv_b, kv_b_dtype, (w0 + nope + e) * rank + c), sum);
                o[e] = sum / total;
            }
        }
    }
    free(q_lat);
    return 0;
}

/* kernels.cu's pf_block_sparse_count: how many times BigBird's block-sparse attention (eval mode,
   its random blocks all block 0) counts key `key` in query `query`'s softmax, in a row of len. */
static int block_sparse_count(int block, int random, int len, int query, int key) {
    if (len <= (5 + 2 * random) * block) return 1;
    int last = (len + block - 1) / block - 1, qb = query / block, kb = key / block;
    if (qb == 0 || qb == last) return 1;
    int near_lo = qb == 1 ? 1 : qb - 1, near_hi = qb == last - 1 ? last - 1 : qb + 1;
    return (kb >= near_lo && kb <= near_hi) + (kb == 0 ? 1 + random : 0) + (kb == last);
}

/* kernels.cu's pf_flash_attention_kernel (prefill on tensor cores) takes a step when
   pf_cuda__flash_possible says so: these conditions, plus the device's (sm_80+, enough shared
   memory) and 16-byte aligned caches, which hold on every GPU the build targets. */
#define FLASH_KEYS 32
#define FLASH_MAX_HEAD_DIM 256
static int flash_takes(int T, int cache_dtype, int mask, int hd, const float *dense_bias, const void *sinks,
                       int longformer) {
    return T > 1 && cache_dtype != 0 && mask != 2 && hd % 16 == 0 && hd <= FLASH_MAX_HEAD_DIM && !dense_bias && !sinks &&
           !longformer;
}

/* v rounded to the 16-bit cache dtype (1 fp16, 2 bf16), as a float. */
static float round16(int dtype, float v) {
    if (dtype == 1) return (float)(_Float16)v;
    uint16_t b = to_bf16(v);
    return ld(&b, 2, 0);
}

/* One query row of pf_flash_attention_kernel: q rounded to the cache dtype; per tile of
   FLASH_KEYS keys starting at a multiple of FLASH_KEYS that holds a key the row sees (the kernel's
   other tiles leave the row unchanged exactly): scores as fp32 sums of exact 16-bit products (the
   kernel's wmma sums in an unspecified order; here in key-dimension order), scale, ALiBi and the
   relative bias in pf_flash_softmax_row's order, the running max, alpha = exp(m_old - m_new)
   (1 before any key), P = exp(s - m_new) rounded to the dtype, l = l * alpha + the sum of the
   rounded P in key order, o = o * alpha, then o += P v (fp32, key order; wmma's order again
   unspecified). out = o / l, zeros without a key. k and v: the row's cache head (keys kv_width
   apart); q16 and o: hd floats of scratch. */
/* kernels.cu's pf_scaled_score: s * scale, soft-capped as tanh(s / cap) * cap where cap > 0. */
static float scaled_score(float s, float scale, float softcap) {
    s *= scale;
    return softcap > 0.0f ? tanhf(s / softcap) * softcap : s;
}

/* kernels.cu's pf_alibi_bias: slope * position, Falcon's rounded to bf16 and times the scale. */
static float alibi_bias(float slope, int position, int rounded, float scale) {
    float bias = slope * (float)position;
    return rounded ? round16(2, bias) * scale : bias;
}

static void flash_row(float *out, const float *q, const void *kc, const void *vc, int dtype, size_t base,
                      size_t kv_width, int hd, int first, int last, int pd, int pos, float scale, float softcap, float slope,
                      int alibi_rounded,
                      const float *rel, int rel_buckets, int rel_max_distance, int bidirectional, float *q16,
                      float *o) {
    for (int i = 0; i < hd; i++) {
        q16[i] = round16(dtype, q[i]);
        o[i] = 0.0f;
    }
    float m = -INFINITY, l = 0.0f, score[FLASH_KEYS], p[FLASH_KEYS];
    for (int k0 = first <= last ? first / FLASH_KEYS * FLASH_KEYS : last + 1; k0 <= last; k0 += FLASH_KEYS) {
        float tile_max = -INFINITY;
        for (int c = 0; c < FLASH_KEYS; c++) {
            int j = k0 + c;
            score[c] = -INFINITY;
            if (j >= first && j <= last) {
                float s = 0.0f;
                for (int i = 0; i < hd; i++) s += q16[i] * ld(kc, dtype, base + (size_t)j * kv_width + i);
                score[c] = scaled_score(s, scale, softcap) + alibi_bias(slope, j - pd, alibi_rounded, scale);
                if (rel) score[c] += rel[relative_bucket(j - pos, rel_buckets, rel_max_distance, bidirectional)];
            }
            tile_max = fmaxf(tile_max, score[c]);
        }
        float m_new = fmaxf(m, tile_max), alpha = m_new == -INFINITY ? 1.0f : expf(m - m_new), sum = 0.0f;
        for (int c = 0; c < FLASH_KEYS; c++) {
            int j = k0 + c;
            p[c] = j >= first && j <= last ? round16(dtype, expf(score[c] - m_new)) : 0.0f;
            sum += p[c];
        }
        l = l * alpha + sum;
        m = m_new;
        for (int i = 0; i < hd; i++) {
            float a = o[i] * alpha;
            for (int c = 0; c < FLASH_KEYS; c++)
                if (p[c] != 0.0f) a += p[c] * ld(vc, dtype, base + (size_t)(k0 + c) * kv_width + i);
            o[i] = a;
        }
    }
    for (int i = 0; i < hd; i++) out[i] = l > 0.0f ? o[i] / l : 0.0f;
}

/* kernels.cu's pf_disentangled_row: DeBERTa's log bucket of a distance, as a row of rel_qkv. */
static int disentangled_row(int distance, int position_buckets, int max_relative_positions, int span) {
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

/* kernels.cu's pf_ngram_attend_kernel: per (query row, head) the keys' scores (the predict stream's
   own key last), their max and sum, then each output value a sum over the keys in order, fp32. */
static int ngram_attend_live(pf_cuda_rank *st, float *out, const float *qkv, const float *rel, int rel_heads, int rel_width,
                             const int32_t *buckets, const void *kc, const void *vc, int cache_dtype, const int *pad,
                             const int *cache_rows, int batch, int T, int past, const int *past_at, int heads, int kv_heads,
                             int hd, int head_begin, int kv_begin, int kv_group, int cache_len, float scale, int predict) {
    if (batch <= 0 || T <= 0 || heads <= 0) return 0;
    if (kv_group <= 0 || past < 0 || past + T > cache_len || !past_at || !buckets ||
        ((size_t)cache_len + 1) * sizeof(float) > 48 * 1024) {
        snprintf(st->message, sizeof st->message, "pf_cuda_ngram_attend failed: bad shape or positions (mock)");
        return 1;
    }
    NEED(past_at, 4);
    past = *past_at;
    size_t rows = (size_t)batch * T, q_width = (size_t)heads * hd, kv_width = (size_t)kv_heads * hd;
    size_t row_width = q_width + 2 * kv_width;
    NEED(out, rows * q_width * 4);
    NEED(qkv, rows * row_width * 4);
    NEED(rel, rows * (size_t)rel_width * 4);
    NEED(buckets, ((size_t)cache_len + 1) * 4);
    NEED(kc, cache_rows_needed(cache_rows, batch) * cache_len * kv_width * dsize(cache_dtype));
    NEED(vc, cache_rows_needed(cache_rows, batch) * cache_len * kv_width * dsize(cache_dtype));
    if (pad) NEED(pad, (size_t)batch * sizeof(int));
    float *p = malloc(((size_t)cache_len + 1) * sizeof(float));
    if (!p) return 1;
    for (size_t n = 0; n < rows; n++)
        for (int h = 0; h < heads; h++) {
            int b = (int)(n / (size_t)T), t = (int)(n % (size_t)T), first = pad ? pad[b] : 0, pos = past + t;
            int count = pos >= first ? pos + 1 - first : 0, total = count + (predict ? 1 : 0);
            size_t kv = (size_t)((head_begin + h) / kv_group - kv_begin) * hd, head = (size_t)(head_begin + h);
            size_t cache_row = cache_rows ? (size_t)cache_rows[b] : (size_t)b, base = cache_row * cache_len * kv_width + kv;
            const float *q = qkv + n * row_width + (size_t)h * hd, *own_k = qkv + n * row_width + q_width + kv;
            const float *own_v = own_k + kv_width, *bias = rel + n * (size_t)rel_width;
            float most = -INFINITY, sum = 0.0f, *o = out + n * q_width + (size_t)h * hd;
            for (int k = 0; k < total; k++) {
                float dot = 0.0f;
                int distance = 0;
                if (k < count) {
                    distance = pos + predict - (first + k);
                    for (int i = 0; i < hd; i++) dot += q[i] * ld(kc, cache_dtype, base + (size_t)(first + k) * kv_width + (size_t)i);
                } else {
                    for (int i = 0; i < hd; i++) dot += q[i] * own_k[i];
                }
                p[k] = dot * scale + bias[(size_t)buckets[distance] * (size_t)rel_heads + head];
                most = fmaxf(most, p[k]);
            }
            for (int k = 0; k < total; k++) sum += (p[k] = expf(p[k] - most));
            for (int i = 0; i < hd; i++) {
                float acc = 0.0f;
                for (int k = 0; k < count; k++) acc += p[k] * ld(vc, cache_dtype, base + (size_t)(first + k) * kv_width + (size_t)i);
                if (predict) acc += p[count] * own_v[i];
                o[i] = total ? acc / sum : 0.0f;
            }
        }
    free(p);
    return 0;
}

/* kernels.cu's pf_disentangled_bias_kernel: one (query row, head) at a time, a key per thread. */
static int disentangled_bias_live(pf_cuda_rank *st, float *out, const float *qkv, const float *rel_qkv, int batch, int T,
                                  int heads, int kv_heads, int hd, int head_begin, int kv_begin, int kv_group, int c2p,
                                  int p2c, int position_buckets, int max_relative_positions, int span, int rel_width,
                                  float scale) {
    if (batch <= 0 || T <= 0 || heads <= 0) return 0;
    if (span <= 0 || kv_group <= 0) {
        snprintf(st->message, sizeof st->message, "pf_cuda_disentangled_bias failed: bad shape (mock)");
        return 1;
    }
    size_t rows = (size_t)batch * T, q_width = (size_t)heads * hd, row_width = q_width + 2 * (size_t)kv_heads * hd;
    NEED(out, rows * heads * (size_t)T * 4);
    NEED(qkv, rows * row_width * 4);
    NEED(rel_qkv, 2 * (size_t)span * (size_t)rel_width * 4);
    for (size_t row = 0; row < rows; row++)
        for (int h = 0; h < heads; h++) {
            int i = (int)(row % (size_t)T);
            size_t kv = (size_t)((head_begin + h) / kv_group - kv_begin) * hd, first = row - (size_t)i;
            const float *q = qkv + row * row_width + (size_t)h * hd;
            for (int j = 0; j < T; j++) {
                const float *k = qkv + (first + (size_t)j) * row_width + q_width + kv;
                const float *rel = rel_qkv + (size_t)disentangled_row(i - j, position_buckets, max_relative_positions, span) * (size_t)rel_width;
                float c2p_sum = 0.0f, p2c_sum = 0.0f;
                for (int d = 0; d < hd; d++) {
                    c2p_sum += q[d] * rel[q_width + kv + (size_t)d];
                    p2c_sum += k[d] * rel[(size_t)h * hd + (size_t)d];
                }
                out[(row * heads + (size_t)h) * T + (size_t)j] = ((c2p ? c2p_sum : 0.0f) + (p2c ? p2c_sum : 0.0f)) * scale;
            }
        }
    return 0;
}

/* past checks the shape and sizes the decode splits, as in kernels.cu; the arithmetic reads it
   from past_at (device memory), as the kernels do. */
static int attend_live(pf_cuda_rank *st, const pf_cuda_attention_args *args) {
    float *out = args->out, *partials = args->partials;
    const float *qkv = args->qkv, *alibi = args->alibi, *rel_bias = args->rel_bias;
    const void *kc = args->k_cache, *vc = args->v_cache;
    const int *pad = args->pad, *cache_rows = args->rows, *past_at = args->past_at;
    int cache_dtype = args->cache_dtype, batch = args->batch, T = args->T, past = args->past;
    int heads = args->heads, kv_heads = args->kv_heads, hd = args->head_dim;
    int head_begin = args->head_begin, kv_begin = args->kv_begin, kv_group = args->kv_group;
    int cache_len = args->cache_len, window = args->window, mask = args->mask;
    float scale = args->scale, softcap = args->softcap;
    int rel_rows = args->rel_rows, rel_buckets = args->rel_buckets, rel_max_distance = args->rel_max_distance;
    if (heads <= 0 || hd <= 0 || batch <= 0 || T <= 0) return 0;
    if (kv_heads <= 0 || kv_group <= 0 || head_begin / kv_group - kv_begin < 0 ||
        (head_begin + heads - 1) / kv_group - kv_begin >= kv_heads || past < 0 || (mask != 2 && past + T > cache_len) ||
        !past_at) {
        snprintf(st->message, sizeof st->message, "pf_cuda_attend failed: bad shape (mock)");
        return 1;
    }
    size_t q_width = (size_t)heads * hd, kv_width = (size_t)kv_heads * hd;
    size_t row_width = mask == 2 ? q_width : q_width + 2 * kv_width, rows = (size_t)batch * T;
    NEED(qkv, rows * row_width * 4);
    NEED(out, rows * q_width * 4);
    NEED(kc, cache_rows_needed(cache_rows, batch) * cache_len * kv_width * dsize(cache_dtype));
    NEED(vc, cache_rows_needed(cache_rows, batch) * cache_len * kv_width * dsize(cache_dtype));
    if (alibi) NEED(alibi, (size_t)heads * 4);
    if (rel_bias) NEED(rel_bias, (size_t)heads * rel_rows * 4);
    if (pad) NEED(pad, (size_t)batch * 4);
    int len1 = mask == 2 ? cache_len : window > 0 && past + 1 > window ? window : past + 1;
    /* kernels.cu: Longformer's passes and BigBird's blocks take the plain kernel, one split */
    int splits = 1, longformer = args->local_window > 0 || args->global_queries || args->sparse_block > 0;
    if (args->global) NEED(args->global, rows * 4);
    if (T == 1 && partials && !longformer) { /* kernels.cu: Longformer's passes take one split */
        splits = pf_cuda_decode_splits(len1);
        NEED(partials, (size_t)batch * heads * splits * (hd + 2) * 4);
    }
    NEED(past_at, 4);
    past = *past_at; /* the kernels' past: from here on, as on the device */
    float *acc = malloc((size_t)hd * sizeof(float)), *q16 = malloc((size_t)hd * sizeof(float)), p[CHUNK], part[ATTN_THREADS];
    size_t bias_keys = mask == 2 ? (size_t)cache_len : (size_t)T; /* kernels.cu: the keys a dense bias row covers */
    if (args->dense_bias) NEED(args->dense_bias, rows * heads * bias_keys * 4);
    int flash = flash_takes(T, cache_dtype, mask, hd, args->dense_bias, args->sinks, longformer);
    if (args->sinks) NEED(args->sinks, (size_t)heads * dsize(args->sinks_dtype));
    for (size_t row = 0; row < rows; row++)
        for (int h = 0; h < heads; h++)
            for (int split = 0; split < splits; split++) {
                int b = (int)(row / T), t = (int)(row % T), pos = past + t, pd = pad ? pad[b] : 0;
                if (args->global_queries && !(args->global && args->global[row])) continue; /* Longformer: another pass's */
                const int32_t *global_row = args->global ? args->global + (size_t)b * T : NULL;
                int last = mask == 1 ? pos : mask == 2 ? cache_len - 1 : past + T - 1;
                int first = window > 0 && pos + 1 - window > pd ? pos + 1 - window : pd;
                if (args->chunk > 0 && pos >= pd && pd + (pos - pd) / args->chunk * args->chunk > first)
                    first = pd + (pos - pd) / args->chunk * args->chunk; /* kernels.cu's pf_first_key */
                if (flash) {
                    size_t cache_row = cache_rows ? (size_t)cache_rows[b] : (size_t)b;
                    size_t base = cache_row * cache_len * kv_width + (size_t)((head_begin + h) / kv_group - kv_begin) * hd;
                    flash_row(out + row * q_width + (size_t)h * hd, qkv + row * row_width + (size_t)h * hd, kc, vc,
                              cache_dtype, base, kv_width, hd, first, last, pd, pos, scale, softcap, alibi ? alibi[h] : 0.0f,
                              args->alibi_rounded,
                              rel_bias ? rel_bias + (size_t)h * rel_rows : NULL, rel_buckets, rel_max_distance,
                              mask != 1, q16, acc);
                    continue;
                }
                int len = first <= last ? last + 1 - first : 0;
                int per = (len + splits - 1) / splits, begin = first + split * per;
                int end = begin + per < last + 1 ? begin + per : last + 1;
                int kv = (head_begin + h) / kv_group - kv_begin;
                float slope = alibi ? alibi[h] : 0.0f;
                const float *q = qkv + row * row_width + (size_t)h * hd;
                size_t cache_row = cache_rows ? (size_t)cache_rows[b] : (size_t)b;
                size_t base = cache_row * cache_len * kv_width + (size_t)kv * hd; /* in elements */
                for (int i = 0; i < hd; i++) acc[i] = 0;
                float m = -INFINITY, l = 0;
                if (args->sinks && split == 0) { /* kernels.cu: the sink, a first term without a value */
                    m = ld(args->sinks, args->sinks_dtype, (size_t)h);
                    l = 1.0f;
                }
                for (int j0 = begin; j0 < end; j0 += CHUNK) {
                    int n = end - j0 < CHUNK ? end - j0 : CHUNK;
                    for (int jj = 0; jj < n; jj++) { /* one warp: lane partials, butterfly */
                        float lanes[32];
                        for (int lane = 0; lane < 32; lane++) {
                            float s = 0;
                            for (int i = lane; i < hd; i += 32)
                                s += q[i] * ld(kc, cache_dtype, base + (size_t)(j0 + jj) * kv_width + i);
                            lanes[lane] = s;
                        }
                        p[jj] = scaled_score(warp_reduce(lanes, 0), scale, softcap) +
                                alibi_bias(slope, j0 + jj - pd, args->alibi_rounded, scale);
                        if (rel_bias) p[jj] += rel_bias[(size_t)h * rel_rows + relative_bucket(j0 + jj - pos, rel_buckets, rel_max_distance, mask != 1)];
                        if (args->dense_bias) p[jj] += args->dense_bias[(row * heads + (size_t)h) * bias_keys + (size_t)(j0 + jj)];
                        int key = j0 + jj, distance = key > pos ? key - pos : pos - key;
                        if (args->local_window > 0 && distance > args->local_window && !(global_row && global_row[key]))
                            p[jj] = -INFINITY; /* kernels.cu: Longformer's keys neither in the window nor global */
                        if (args->sparse_block > 0) { /* kernels.cu: BigBird's score + log(times), or no key */
                            int times = block_sparse_count(args->sparse_block, args->sparse_random, past + T - pd,
                                                           pos - pd, key - pd);
                            if (times != 1) p[jj] = times ? p[jj] + logf((float)times) : -INFINITY;
                        }
                    }
                    for (int th = 0; th < ATTN_THREADS; th++) part[th] = th < n ? p[th] : -INFINITY;
                    float mn = fmaxf(m, block_reduce(part, ATTN_THREADS, 1));
                    if (mn == -INFINITY) continue; /* kernels.cu: every key so far masked */
                    float alpha = expf(m - mn);
                    for (int th = 0; th < ATTN_THREADS; th++) part[th] = 0.0f;
                    for (int jj = 0; jj < n; jj++) {
                        p[jj] = expf(p[jj] - mn);
                        part[jj] = p[jj];
                    }
                    l = l * alpha + block_reduce(part, ATTN_THREADS, 0);
                    for (int i = 0; i < hd; i++) {
                        float a = acc[i] * alpha;
                        for (int jj = 0; jj < n; jj++) a += p[jj] * ld(vc, cache_dtype, base + (size_t)(j0 + jj) * kv_width + i);
                        acc[i] = a;
                    }
                    m = mn;
                }
                if (splits == 1) {
                    for (int i = 0; i < hd; i++) out[row * q_width + (size_t)h * hd + i] = l > 0 ? acc[i] / l : 0.0f;
                } else {
                    float *pt = partials + ((row * heads + h) * (size_t)splits + split) * (size_t)(hd + 2);
                    pt[0] = m;
                    pt[1] = l;
                    for (int i = 0; i < hd; i++) pt[2 + i] = acc[i];
                }
            }
    free(acc);
    free(q16);
    if (splits > 1)
        for (int h = 0; h < heads; h++)
            for (int row = 0; row < batch; row++) {
                const float *pt = partials + ((size_t)row * heads + h) * (size_t)splits * (hd + 2);
                float M = -INFINITY, L = 0;
                for (int s = 0; s < splits; s++) M = fmaxf(M, pt[s * (hd + 2)]);
                for (int s = 0; s < splits; s++)
                    if (pt[s * (hd + 2) + 1] > 0) L += pt[s * (hd + 2) + 1] * expf(pt[s * (hd + 2)] - M);
                for (int i = 0; i < hd; i++) {
                    float a = 0;
                    for (int s = 0; s < splits; s++)
                        if (pt[s * (hd + 2) + 1] > 0) a += pt[s * (hd + 2) + 2 + i] * expf(pt[s * (hd + 2)] - M);
                    out[(size_t)row * q_width + (size_t)h * hd + i] = L > 0 ? a / L : 0.0f;
                }
            }
    return 0;
}

static int reorder_rows_live(pf_cuda_rank *st, void *cache_, void *scratch_, const int *dst, const int *src, int rows,
                         size_t row_bytes, size_t used) {
    char *cache = cache_, *scratch = scratch_;
    if (rows <= 0 || !used) return 0;
    if (used > row_bytes || !scratch || !src || !dst || ((row_bytes | used) & 1u)) {
        snprintf(st->message, sizeof st->message, "pf_cuda_reorder_rows failed: bad arguments (mock)");
        return 1;
    }
    NEED(src, (size_t)rows * 4);
    NEED(dst, (size_t)rows * 4);
    NEED(scratch, (size_t)rows * used);
    for (int i = 0; i < rows; i++) {
        NEED(cache + (size_t)src[i] * row_bytes, used);
        memcpy(scratch + (size_t)i * used, cache + (size_t)src[i] * row_bytes, used);
    }
    for (int i = 0; i < rows; i++) {
        NEED(cache + (size_t)dst[i] * row_bytes, used);
        memcpy(cache + (size_t)dst[i] * row_bytes, scratch + (size_t)i * used, used);
    }
    return 0;
}

/* ---- NCCL stand-in: n ranks on distinct "GPUs"; with MOCK_MPI, across processes ---- */

/* One communicator's ranks in this process: n of them, world ranks first..first + n - 1 of world
   (one process: 0..n - 1 of n). They meet in barriers that an abort breaks (as ncclCommAbort ends
   what waits on a communicator), and every rank sums the world's buffers in world rank order from
   rank 0, the order one process's ranks sum in: a world across processes gives the bits of the same
   world in one. Across processes (MOCK_MPI, pf_cuda_nccl_create_world), local rank 0 sends this
   process's buffers to every other process and receives theirs (MPI point to point on the
   stand-in's own communicator, under this communicator's tag), waiting at most timeout_s for them
   and watching for another process's abort notice (what NCCL reports as ncclRemoteError). An
   aborted communicator sends that notice to every other process. */
typedef struct mock_shared {
    int n, world, first, processes;
    int tag;                  /* MOCK_MPI: tag for the buffers, tag + 1 for abort notices */
    double timeout_s;         /* 0: no bound */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int arrived, aborted, notified;
    unsigned long generation; /* of the barrier */
    float *bufs[64];          /* this process's ranks' buffers */
    float *gathered;          /* [world][count]: the other processes' ranks' buffers */
    size_t gathered_floats;
    int status;               /* the exchange's outcome, for every local rank */
    char message[256];
    int refs;
} mock_shared;
typedef struct mock_comm { mock_shared *sh; int rank; } mock_comm;

static mock_shared *mock_shared_new(int n, int world, int first, int processes, double timeout_s, void **comms) {
    mock_shared *sh = calloc(1, sizeof *sh);
    sh->n = n, sh->world = world, sh->first = first, sh->processes = processes, sh->timeout_s = timeout_s;
    sh->refs = n;
    pthread_mutex_init(&sh->mu, NULL);
    pthread_cond_init(&sh->cv, NULL);
    for (int i = 0; i < n; i++) {
        mock_comm *c = calloc(1, sizeof *c);
        c->sh = sh;
        c->rank = i;
        comms[i] = c;
    }
    return sh;
}

int pf_cuda_nccl_create(int n, const int *d, void **comms, char *message, size_t size) {
    (void)d, (void)message, (void)size;
    mock_shared_new(n, n, 0, 1, 0, comms);
    return 0;
}

/* Waits for this process's ranks; -1 once the communicator is aborted. */
static int mock_barrier(mock_shared *sh) {
    pthread_mutex_lock(&sh->mu);
    unsigned long generation = sh->generation;
    if (!sh->aborted && ++sh->arrived == sh->n) {
        sh->arrived = 0;
        sh->generation++;
        pthread_cond_broadcast(&sh->cv);
    } else {
        while (!sh->aborted && generation == sh->generation) pthread_cond_wait(&sh->cv, &sh->mu);
    }
    int aborted = sh->aborted;
    pthread_mutex_unlock(&sh->mu);
    return aborted ? -1 : 0;
}

#ifdef MOCK_MPI
static MPI_Comm mock_mpi_comm = MPI_COMM_NULL; /* the stand-in's messages alone */
static int mock_ids;                           /* ids made (process 0's count) */

/* The id names the communicator's tag: messages of an aborted one never meet a later one's. */
int pf_cuda_nccl_unique_id(unsigned char *id, char *message, size_t size) {
    (void)message, (void)size;
    memset(id, 0, PF_CUDA_NCCL_ID_BYTES);
    int next = ++mock_ids;
    memcpy(id, &next, sizeof next);
    return 0;
}

int pf_cuda_nccl_create_world(int n, const int *d, int world, int first, const unsigned char *id, int timeout_ms,
                              void **comms, char *message, size_t size) {
    (void)d;
    int level = 0, processes = 0, generation = 0;
    MPI_Query_thread(&level);
    if (level < MPI_THREAD_MULTIPLE) { /* its ranks' threads send and receive at once */
        snprintf(message, size, "pf_cuda_nccl_create_world failed: the stand-in's NCCL over MPI needs "
                 "MPI_THREAD_MULTIPLE (mock)");
        return 1;
    }
    if (mock_mpi_comm == MPI_COMM_NULL) { /* every process, at the same point: SPMD setup */
        MPI_Comm_dup(MPI_COMM_WORLD, &mock_mpi_comm);
        MPI_Comm_set_errhandler(mock_mpi_comm, MPI_ERRORS_RETURN); /* a lost peer is an error, not an abort */
    }
    MPI_Comm_size(mock_mpi_comm, &processes);
    if (world != processes * n || first % n) {
        snprintf(message, size, "pf_cuda_nccl_create_world failed: world %d, first rank %d for %d processes of %d "
                 "ranks (mock)", world, first, processes, n);
        return 1;
    }
    memcpy(&generation, id, sizeof generation);
    mock_shared *sh = mock_shared_new(n, world, first, processes, timeout_ms > 0 ? timeout_ms / 1000.0 : 0, comms);
    sh->tag = 2 + 2 * (generation % 16000);
    return 0;
}

static double mock_seconds_since(const struct timespec *start) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - start->tv_sec) + (now.tv_nsec - start->tv_nsec) * 1e-9;
}

/* Local rank 0: this process's buffers to every other process, theirs into sh->gathered. 0, or a
   status with sh->message. */
static int mock_exchange(mock_shared *sh, size_t count) {
    size_t need = (size_t)sh->world * count;
    if (need > sh->gathered_floats) {
        free(sh->gathered);
        sh->gathered = malloc(need * sizeof(float));
        sh->gathered_floats = need;
    }
    int L = sh->n, me = sh->first / L, k = 0, status = 0;
    MPI_Request *requests = malloc(2 * (size_t)sh->world * sizeof *requests);
    int *peer = malloc(2 * (size_t)sh->world * sizeof *peer);
    for (int q = 0; q < sh->processes; q++)
        for (int i = 0; q != me && i < L; i++) {
            peer[k] = q;
            MPI_Isend(sh->bufs[i], (int)count, MPI_FLOAT, q, sh->tag, mock_mpi_comm, &requests[k++]);
            peer[k] = q;
            MPI_Irecv(sh->gathered + (size_t)(q * L + i) * count, (int)count, MPI_FLOAT, q, sh->tag, mock_mpi_comm,
                      &requests[k++]);
        }
    struct timespec start, nap = {0, 20000};
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (long spins = 0;; spins++) {
        int done = 0, noticed = 0;
        MPI_Status probed;
        if (MPI_Testall(k, requests, &done, MPI_STATUSES_IGNORE) != MPI_SUCCESS) {
            snprintf(sh->message, sizeof sh->message, "pf_cuda_nccl_all_reduce failed: MPI failed (mock)");
            status = 1;
            break;
        }
        if (done) break;
        if (MPI_Iprobe(MPI_ANY_SOURCE, sh->tag + 1, mock_mpi_comm, &noticed, &probed) == MPI_SUCCESS && noticed) {
            snprintf(sh->message, sizeof sh->message, "pf_cuda_nccl_all_reduce failed: remote process %d aborted its "
                     "communicator (mock of ncclRemoteError)", probed.MPI_SOURCE);
            status = PF_CUDA_ERROR_REMOTE;
            break;
        }
        if (spins < 1000) continue;
        nanosleep(&nap, NULL);
        if (sh->timeout_s > 0 && mock_seconds_since(&start) > sh->timeout_s) {
            int late = -1;
            for (int i = 0; i < k && late < 0; i++) {
                int complete = 1;
                if (requests[i] != MPI_REQUEST_NULL) MPI_Request_get_status(requests[i], &complete, MPI_STATUS_IGNORE);
                if (!complete) late = peer[i];
            }
            snprintf(sh->message, sizeof sh->message, "pf_cuda_nccl_all_reduce failed: process %d did not answer "
                     "within %g s (mock NCCL over MPI)", late, sh->timeout_s);
            status = 1;
            break;
        }
    }
    for (int i = 0; status && i < k; i++)
        if (requests[i] != MPI_REQUEST_NULL) {
            MPI_Cancel(&requests[i]);
            MPI_Request_free(&requests[i]);
        }
    free(requests);
    free(peer);
    return status;
}

/* An aborted communicator's notice to every other process (once). */
static void mock_notify_abort(mock_shared *sh) {
    static const int notice = 1;
    int me = sh->first / sh->n;
    for (int q = 0; q < sh->processes; q++) {
        MPI_Request sent;
        if (q != me && MPI_Isend(&notice, 1, MPI_INT, q, sh->tag + 1, mock_mpi_comm, &sent) == MPI_SUCCESS)
            MPI_Request_free(&sent);
    }
}
#else
int pf_cuda_nccl_unique_id(unsigned char *id, char *message, size_t size) {
    (void)message, (void)size;
    memset(id, 0, PF_CUDA_NCCL_ID_BYTES);
    return 0;
}
int pf_cuda_nccl_create_world(int n, const int *d, int world, int first, const unsigned char *id, int timeout_ms,
                              void **comms, char *message, size_t size) {
    (void)n, (void)d, (void)world, (void)first, (void)id, (void)timeout_ms, (void)comms;
    snprintf(message, size, "pf_cuda_nccl_create_world failed: the stand-in was built without MOCK_MPI (mock)");
    return 1;
}
static int mock_exchange(mock_shared *sh, size_t count) {
    (void)sh, (void)count;
    return 1;
}
static void mock_notify_abort(mock_shared *sh) { (void)sh; }
#endif

static void drop(void *p) {
    mock_comm *c = p;
    if (!c) return;
    pthread_mutex_lock(&c->sh->mu);
    int last = --c->sh->refs == 0;
    pthread_mutex_unlock(&c->sh->mu);
    if (last) {
        pthread_cond_destroy(&c->sh->cv);
        pthread_mutex_destroy(&c->sh->mu);
        free(c->sh->gathered);
        free(c->sh);
    }
    free(c);
}
void pf_cuda_nccl_destroy(void *c) { drop(c); }
void pf_cuda_nccl_abort(void *cv) {
    mock_comm *c = cv;
    if (!c) return;
    mock_shared *sh = c->sh;
    pthread_mutex_lock(&sh->mu);
    int notify = sh->processes > 1 && !sh->notified;
    sh->aborted = sh->notified = 1;
    pthread_cond_broadcast(&sh->cv);
    pthread_mutex_unlock(&sh->mu);
    if (notify) mock_notify_abort(sh);
    drop(c);
}
int pf_cuda_nccl_async_error(void *c, char *message, size_t size) {
    (void)c, (void)message, (void)size;
    return 0;
}
static int mock_aborted(pf_cuda_rank *st) {
    snprintf(st->message, sizeof st->message, "pf_cuda_nccl_all_reduce failed: the communicator was aborted (mock)");
    return 1;
}
static int nccl_all_reduce_live(pf_cuda_rank *st, void *cv, float *x, size_t n) {
    NEED(x, n * 4);
    mock_comm *c = cv;
    mock_shared *sh = c->sh;
    sh->bufs[c->rank] = x;
    if (mock_barrier(sh)) return mock_aborted(st);
    if (sh->processes > 1 && c->rank == 0) sh->status = mock_exchange(sh, n);
    if (mock_barrier(sh)) return mock_aborted(st);
    if (sh->status) {
        snprintf(st->message, sizeof st->message, "%s", sh->message);
        return sh->status;
    }
    float *t = malloc(n * 4);
    for (size_t i = 0; i < n; i++) {
        float s = 0;
        for (int k = 0; k < sh->world; k++) /* world rank order, as one process's ranks */
            s += k >= sh->first && k < sh->first + sh->n ? sh->bufs[k - sh->first][i] : sh->gathered[(size_t)k * n + i];
        t[i] = s;
    }
    if (mock_barrier(sh)) {
        free(t);
        return mock_aborted(st);
    }
    memcpy(x, t, n * 4);
    free(t);
    if (mock_barrier(sh)) return mock_aborted(st);
    return 0;
}
