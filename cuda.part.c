/* cuda.part.c: the CUDA backend's side in parallelformers.c, #included under PF_CUDA at the
   "CUDA backend" banner (everything before it is defined). It fills a pf__backend table whose
   operations call the pf_cuda_* C ABI of kernels.cu (see the top of that file), turning a
   failed call into pf__rank_fail with the message kernels.cu wrote.

   Per rank (r->backend_state, a pf__cuda_rank_state): the pf_cuda_rank (device, stream, cuBLAS
   handle), made on the rank's thread by rank_begin (cudaSetDevice first), and the scratch the
   CUDA ops need beyond the forward pass's buffers, allocated through pf__rank_alloc as
   PF__MEM_SCRATCH on the rank's first upload (during pf_parallelize), so pf_memory_allocated is
   exact once pf_parallelize returns. The scratch includes device copies of the step's host
   arrays: the rotary frequencies (pf__step.inv_freq), the left pads of a padded batch
   (pf__step.pad) and beam search's row order (reorder_rows' src), each queued from a host copy
   kept in the rank state whenever the step's differ from it; and, with max_batch > 1, the beam
   reorder's buffer (one layer's K or V cache, as the CPU backend's).

   Each op mirrors the CPU backend's (the reference): weights are in the group's dtype, except
   CTRL's fp32 sinusoid table, so every weight passes its own dtype to kernels.cu.

   Per group (g->backend_state, a pf__cuda_group_state): ranks on distinct GPUs all-reduce with
   NCCL (ncclCommInitAll in group_begin, on the caller's thread). Ranks sharing a GPU (device ids
   such as {0, 0}), which NCCL refuses, use a device-memory reduction through g->reduce_in and two
   barriers instead (peer copies where some ranks are on other GPUs).

   Failures with NCCL: a rank that fails skips its remaining collectives, so its peers' NCCL
   kernels would wait for it forever. The failing rank marks the group's communicators broken;
   every rank then aborts its own communicator (ncclCommAbort, on its own thread) before it could
   wait on one: in download (a wait that watches the group's abort flag), in every later
   operation, in free and in rank_end. Later requests fail with a message asking for
   pf_parallelize again, which builds new communicators. */
#include <sched.h>

/* ---- the C ABI of kernels.cu (keep in step with it) ---- */

typedef struct pf_cuda_rank pf_cuda_rank;

#define PF__CUDA_OK 0
#define PF__CUDA_ERROR_DEVICE 1
#define PF__CUDA_ERROR_OUT_OF_MEMORY 2
#define PF__CUDA_F32 0
#define PF__CUDA_F16 1
#define PF__CUDA_BF16 2
#define PF__CUDA_GELU_TANH 0
#define PF__CUDA_GELU_ERF 1
#define PF__CUDA_RELU 2
#define PF__CUDA_SILU 3

int pf_cuda_device_count(int *count, const char **reason);
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
int pf_cuda_copy_async(pf_cuda_rank *st, void *dst, const void *src, size_t bytes);
int pf_cuda_copy_peer_async(pf_cuda_rank *st, void *dst, const void *src, int src_device, size_t bytes);
int pf_cuda_stream_sync(pf_cuda_rank *st);
int pf_cuda_stream_query(pf_cuda_rank *st, int *done);
int pf_cuda_embed(pf_cuda_rank *st, float *out, const void *tokens, int dtype, const int32_t *ids_host,
                  int32_t *ids_device, size_t rows, size_t d, float scale);
int pf_cuda_add_positions(pf_cuda_rank *st, float *x, const void *table, int dtype, const int *pad, int batch, int T,
                          int past, size_t offset, size_t d);
int pf_cuda_norm(pf_cuda_rank *st, float *out, const float *x, const void *weight, int weight_dtype, const void *bias,
                 int bias_dtype, size_t rows, size_t n, float eps, int rms);
int pf_cuda_matmul(pf_cuda_rank *st, float *out, const float *x, const void *w, int w_dtype, const void *bias,
                   int bias_dtype, size_t rows, size_t n_out, size_t k, void *x_scratch);
int pf_cuda_activation(pf_cuda_rank *st, float *x, size_t count, int act);
int pf_cuda_gated_activation(pf_cuda_rank *st, float *out, const float *in, size_t rows, size_t width, int act);
int pf_cuda_add_residual(pf_cuda_rank *st, float *x, const float *y, const void *bias, int dtype, size_t rows,
                         size_t n);
int pf_cuda_sum(pf_cuda_rank *st, float *sum, const float *in, size_t count, int first);
int pf_cuda_rotary(pf_cuda_rank *st, float *qkv, const float *inv_freq, const int *pad, int batch, int T, int past,
                   int heads, int kv_heads, int head_dim, int rotary_dim, int pairs);
size_t pf_cuda_attention_scratch_floats(int max_batch, int heads, int head_dim);
int pf_cuda_attention(pf_cuda_rank *st, float *out, const float *qkv, float *k_cache, float *v_cache, float *partials,
                      const float *alibi, const int *pad, int batch, int T, int past, int heads, int kv_heads,
                      int head_dim, int head_begin, int kv_begin, int kv_group, int cache_len, int window,
                      float scale);
int pf_cuda_reorder_rows(pf_cuda_rank *st, float *cache, float *scratch, const int *src, int rows, size_t row_floats,
                         size_t used_floats);
int pf_cuda_nccl_create(int n, const int *devices, void **comms, char *message, size_t size);
void pf_cuda_nccl_destroy(void *comm);
void pf_cuda_nccl_abort(void *comm);
int pf_cuda_nccl_all_reduce(pf_cuda_rank *st, void *comm, float *x, size_t count);

/* ---- state ---- */

typedef struct pf__cuda_rank_state {
    pf_cuda_rank *cu;         /* NULL when rank_begin could not set the device up */
    pf_result init_error;     /* then: why, reported by the rank's first operation */
    char init_message[PF__MESSAGE_SIZE];
    int scratch_done;
    void *workspace;          /* cuBLAS workspace, pf_cuda_workspace_bytes() */
    int32_t *ids;             /* [max_tokens]: the step's token ids */
    void *x16;                /* [max_tokens][widest GEMM input] fp16/bf16: GEMM input */
    float *partials;          /* decode attention partial sums, per local query head */
    float *inv_freq;          /* [rotary_dim / 2]: the rotary frequencies on the device */
    float *inv_freq_host;     /* [rotary_dim / 2], malloc'd: what inv_freq holds (or is queued to) */
    int inv_freq_loaded;      /* inv_freq_host has been queued to inv_freq */
    float *reduce_sum;        /* [max_tokens * hidden]: device-memory all-reduce */
    float *reduce_tmp;        /* [max_tokens * hidden]: a peer's buffer copied from another GPU */
    int *pad;                 /* [max_batch]: the step's left pads on the device */
    int *pad_host;            /* [max_batch], malloc'd: what pad holds (or is queued to) */
    int pad_count;            /* entries of pad_host queued to pad; 0: none yet */
    int *src;                 /* [max_batch]: beam search's old row of each row, on the device */
    int *src_host;            /* [max_batch], malloc'd: what src holds (or is queued to) */
    int src_count;            /* entries of src_host queued to src */
    float *reorder_tmp;       /* [max_batch * cache_len * kv_width]: beam reorder, when max_batch > 1 */
} pf__cuda_rank_state;

typedef struct pf__cuda_group_state {
    int use_nccl;      /* more than one rank, all on distinct GPUs */
    int mixed;         /* device-memory reduction with some ranks on other GPUs */
    void **comms;      /* [num_ranks] NCCL communicators, rank i's at i */
    int *comm_gone;    /* [num_ranks]: rank i aborted its communicator (written by rank i only) */
    int broken;        /* a rank failed: communicators may hold operations that never finish
                          (under g->mutex) */
} pf__cuda_group_state;

static pf_result pf__cuda_result(int status) {
    return status == PF__CUDA_ERROR_OUT_OF_MEMORY ? PF_ERROR_OUT_OF_MEMORY : PF_ERROR_DEVICE;
}

static int pf__cuda_dtype(pf__dtype t) {
    return t == PF__DTYPE_F16 ? PF__CUDA_F16 : t == PF__DTYPE_BF16 ? PF__CUDA_BF16 : PF__CUDA_F32;
}

static int pf__cuda_broken(pf__group *g) {
    pf__cuda_group_state *gs = (pf__cuda_group_state *)g->backend_state;
    if (!gs || !gs->use_nccl) return 0;
    pthread_mutex_lock(&g->mutex);
    int broken = gs->broken;
    pthread_mutex_unlock(&g->mutex);
    return broken;
}

static void pf__cuda_break(pf__group *g) {
    pf__cuda_group_state *gs = (pf__cuda_group_state *)g->backend_state;
    if (!gs || !gs->use_nccl) return;
    pthread_mutex_lock(&g->mutex);
    gs->broken = 1;
    pthread_mutex_unlock(&g->mutex);
}

/* On rank r's thread: ends whatever its communicator still waits for. */
static void pf__cuda_abort_own_comm(pf__rank *r) {
    pf__cuda_group_state *gs = (pf__cuda_group_state *)r->group->backend_state;
    if (!gs || !gs->use_nccl || gs->comm_gone[r->index]) return;
    pf_cuda_nccl_abort(gs->comms[r->index]);
    gs->comm_gone[r->index] = 1;
}

/* 1 when a kernels.cu call succeeded; else records its failure on the rank and returns 0. */
static int pf__cuda_ok(pf__rank *r, int status) {
    if (status == PF__CUDA_OK) return 1;
    pf__cuda_rank_state *rs = (pf__cuda_rank_state *)r->backend_state;
    pf__rank_fail(r, pf__cuda_result(status), "GPU %d: %s", r->device, pf_cuda_rank_message(rs->cu));
    pf__cuda_break(r->group);
    return 0;
}

static int pf__cuda_alloc_scratch(pf__rank *r, pf__cuda_rank_state *rs);

/* The rank's state when an operation should run, else NULL (after recording why, if it is news):
   the rank already failed, its device could not be set up, or the NCCL communicators broke. */
static pf__cuda_rank_state *pf__cuda_begin(pf__rank *r, int need_scratch) {
    pf__cuda_rank_state *rs = (pf__cuda_rank_state *)r->backend_state;
    if (r->error || !rs) return NULL;
    if (!rs->cu) {
        pf__rank_fail(r, rs->init_error, "GPU %d: %s", r->device, rs->init_message);
        return NULL;
    }
    if (pf__cuda_broken(r->group)) {
        pf__cuda_abort_own_comm(r);
        pf__rank_fail(r, PF_ERROR_DEVICE,
                      "the NCCL communicators were aborted after a rank failed; call pf_parallelize again");
        return NULL;
    }
    if (need_scratch && !rs->scratch_done && pf__cuda_alloc_scratch(r, rs)) return NULL;
    return rs;
}

/* Sized for the largest step pf_parallelize allows (g->max_tokens rows, g->max_batch sequences);
   allocated once. The GEMM inputs (x16) are hidden wide (qkv, MLP in, project_out), embed_dim
   (project_in, and the LM head after project_out), heads * head_dim (attention out) or mlp_width
   (MLP down); the decode partials are per local query head (the kv heads they read do not
   matter); the beam reorder's buffer holds one layer's K or V cache, as the CPU backend's. */
static int pf__cuda_alloc_scratch(pf__rank *r, pf__cuda_rank_state *rs) {
    pf__group *g = r->group;
    const pf__config *c = &g->model->config;
    const pf__cuda_group_state *gs = (const pf__cuda_group_state *)g->backend_state;
    size_t T = g->max_tokens, hidden = (size_t)c->hidden_size;
    size_t width = (size_t)r->share.heads * c->head_dim, mlp = (size_t)r->share.mlp_width;
    size_t k_max = hidden;
    if ((size_t)c->embed_dim > k_max) k_max = (size_t)c->embed_dim;
    if (width > k_max) k_max = width;
    if (mlp > k_max) k_max = mlp;
    size_t half = c->rotary_dim > 0 ? (size_t)c->rotary_dim / 2 : 0;
    size_t batch = (size_t)g->max_batch, kv_width = (size_t)r->share.kv_heads * c->head_dim;
    pf__mem_kind kind = r->allocating;
    rs->scratch_done = 1; /* once, even if it fails: the failure is the rank's error */
    r->allocating = PF__MEM_SCRATCH;
    rs->workspace = pf__rank_alloc(r, pf_cuda_workspace_bytes());
    if (rs->workspace) pf__cuda_ok(r, pf_cuda_set_workspace(rs->cu, rs->workspace, pf_cuda_workspace_bytes()));
    rs->ids = (int32_t *)pf__rank_alloc(r, T * sizeof(int32_t));
    if (g->dtype != PF__DTYPE_F32) rs->x16 = pf__rank_alloc(r, T * k_max * pf__dtype_size(g->dtype));
    if (width)
        rs->partials = (float *)pf__rank_alloc(
            r, pf_cuda_attention_scratch_floats(g->max_batch, r->share.heads, c->head_dim) * sizeof(float));
    if (half) {
        rs->inv_freq = (float *)pf__rank_alloc(r, half * sizeof(float));
        rs->inv_freq_host = (float *)malloc(half * sizeof(float));
        if (!rs->inv_freq_host) pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory");
    }
    if (g->num_ranks > 1 && !gs->use_nccl) {
        rs->reduce_sum = (float *)pf__rank_alloc(r, T * hidden * sizeof(float));
        if (gs->mixed) rs->reduce_tmp = (float *)pf__rank_alloc(r, T * hidden * sizeof(float));
    }
    rs->pad = (int *)pf__rank_alloc(r, batch * sizeof(int));
    rs->pad_host = (int *)malloc(batch * sizeof(int));
    if (batch > 1) {
        rs->src = (int *)pf__rank_alloc(r, batch * sizeof(int));
        rs->src_host = (int *)malloc(batch * sizeof(int));
        if (kv_width)
            rs->reorder_tmp = (float *)pf__rank_alloc(r, batch * g->cache_len * kv_width * sizeof(float));
    }
    if (!rs->pad_host || (batch > 1 && !rs->src_host)) pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory");
    r->allocating = kind;
    return r->error ? -1 : 0;
}

/* Waits for the rank's stream. With NCCL it polls, and gives up when another rank failed (its
   collectives would never finish), aborting this rank's communicator. */
static int pf__cuda_wait(pf__rank *r, pf__cuda_rank_state *rs) {
    pf__cuda_group_state *gs = (pf__cuda_group_state *)r->group->backend_state;
    if (!gs->use_nccl) return pf__cuda_ok(r, pf_cuda_stream_sync(rs->cu)) ? 0 : -1;
    for (unsigned spins = 0;; spins++) {
        int done = 0;
        if (!pf__cuda_ok(r, pf_cuda_stream_query(rs->cu, &done))) return -1;
        if (done) return 0;
        if (pf__rank_failed(r)) { /* not this rank's error: the failing rank reports it */
            pf__cuda_break(r->group);
            pf__cuda_abort_own_comm(r);
            return -1;
        }
        if (spins >= 1000) sched_yield();
    }
}

/* ---- the group: device ordinals and communicators, on the caller's thread ---- */

/* Whether pf_parallelize got a device list (then an id beyond the visible GPUs is an error; without
   one, rank i goes to GPU i modulo their count). pf_parallelize keeps num_device_ids. */
static int pf__cuda_device_ids_given(const pf__group *g) { return g->model->parallel_options.num_device_ids > 0; }

static pf_result pf__cuda_group_begin(pf__group *g, char *message, size_t size) {
    int count = 0;
    const char *reason = NULL;
    if (pf_cuda_device_count(&count, &reason) != PF__CUDA_OK || count < 1)
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "no CUDA device: %s",
                          reason ? reason : "none is visible");
    int n = g->num_ranks, distinct = 1, mixed = 0;
    for (int i = 0; i < n; i++) {
        pf__rank *r = &g->ranks[i];
        if (!pf__cuda_device_ids_given(g)) r->device = i % count;
        else if (r->device < 0 || r->device >= count)
            return pf__format(message, size, PF_ERROR_INVALID_ARGUMENT,
                              "device id %d (rank %d) is not a CUDA device: %d visible (ids 0..%d)", r->device, i,
                              count, count - 1);
    }
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            if (g->ranks[i].device == g->ranks[j].device) distinct = 0;
            else mixed = 1;
        }
    pf__cuda_group_state *gs = (pf__cuda_group_state *)calloc(1, sizeof *gs);
    if (!gs) return pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    gs->use_nccl = n > 1 && distinct;
    gs->mixed = !gs->use_nccl && mixed;
    if (gs->use_nccl) {
        int *devices = (int *)calloc((size_t)n, sizeof *devices);
        gs->comms = (void **)calloc((size_t)n, sizeof *gs->comms);
        gs->comm_gone = (int *)calloc((size_t)n, sizeof *gs->comm_gone);
        pf_result res = PF_OK;
        if (!devices || !gs->comms || !gs->comm_gone) {
            res = pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
        } else {
            for (int i = 0; i < n; i++) devices[i] = g->ranks[i].device;
            int status = pf_cuda_nccl_create(n, devices, gs->comms, message, size);
            if (status) res = pf__cuda_result(status);
        }
        free(devices);
        if (res) {
            free(gs->comms);
            free(gs->comm_gone);
            free(gs);
            return res;
        }
    }
    g->backend_state = gs;
    return PF_OK;
}

/* After the rank threads stopped: free the communicators (abort the ones that may be stuck). */
static void pf__cuda_group_end(pf__group *g) {
    pf__cuda_group_state *gs = (pf__cuda_group_state *)g->backend_state;
    if (!gs) return;
    for (int i = 0; gs->comms && i < g->num_ranks; i++) {
        if (gs->comm_gone[i]) continue;
        if (gs->broken) pf_cuda_nccl_abort(gs->comms[i]);
        else pf_cuda_nccl_destroy(gs->comms[i]);
    }
    free(gs->comms);
    free(gs->comm_gone);
    free(gs);
    g->backend_state = NULL;
}

/* ---- the rank: its thread's device, stream and cuBLAS handle ---- */

static int pf__cuda_rank_begin(pf__rank *r) {
    pf__cuda_rank_state *rs = (pf__cuda_rank_state *)calloc(1, sizeof *rs);
    if (!rs) return -1;
    r->backend_state = rs;
    /* cudaSetDevice is its first CUDA call. A failure is kept and reported, with its message, by
       the rank's first operation: pf__rank_main would replace it with a generic one. */
    int status = pf_cuda_rank_create(r->device, &rs->cu, rs->init_message, sizeof rs->init_message);
    if (status) rs->init_error = pf__cuda_result(status);
    return 0;
}

static void pf__cuda_rank_end(pf__rank *r) {
    pf__cuda_rank_state *rs = (pf__cuda_rank_state *)r->backend_state;
    if (!rs) return;
    if (rs->cu) {
        if (pf__cuda_broken(r->group)) pf__cuda_abort_own_comm(r); /* cuBLAS's destroy waits for the device */
        pf_cuda_rank_destroy(rs->cu);
    }
    free(rs->inv_freq_host);
    free(rs->pad_host);
    free(rs->src_host);
    free(rs);
    r->backend_state = NULL;
}

/* ---- operations, on the rank's thread ---- */

static void *pf__cuda_alloc(pf__rank *r, size_t bytes) {
    /* No scratch here: pf__rank_alloc is not reentrant. */
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 0);
    void *ptr = NULL;
    if (!rs || !pf__cuda_ok(r, pf_cuda_malloc(rs->cu, &ptr, bytes))) return NULL;
    return ptr;
}

/* Runs when the rank stops (pf__rank_free_all), whatever happened before. */
static void pf__cuda_free(pf__rank *r, void *ptr) {
    pf__cuda_rank_state *rs = (pf__cuda_rank_state *)r->backend_state;
    if (!rs || !rs->cu || !ptr) return;
    if (pf__cuda_broken(r->group)) pf__cuda_abort_own_comm(r); /* cudaFree waits for the device */
    (void)pf_cuda_free(rs->cu, ptr); /* nobody to tell: the rank is going away */
}

static void pf__cuda_upload(pf__rank *r, void *dst, const void *host, size_t bytes) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1); /* the first upload allocates the scratch */
    if (rs) pf__cuda_ok(r, pf_cuda_upload(rs->cu, dst, host, bytes));
}

static void pf__cuda_download(pf__rank *r, void *host, const void *src, size_t bytes) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 0);
    if (!rs || pf__cuda_wait(r, rs)) return;
    pf__cuda_ok(r, pf_cuda_download(rs->cu, host, src, bytes));
}

static void pf__cuda_copy(pf__rank *r, void *dst, const void *src, size_t bytes) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 0);
    if (rs) pf__cuda_ok(r, pf_cuda_copy_async(rs->cu, dst, src, bytes));
}

/* Puts n ints of a host array (the caller's, changing from step to step) on the device at `device`
   through the rank's own copy `host` ([max_batch], malloc'd): queued without a wait, and only when
   they differ from what was queued last (*count entries). The runtime has read pageable memory by
   the time pf_cuda_upload_async returns; and `host` is only rewritten by a later job, after the
   device has run this one's copy (rank 0 waited for its logits, which need every rank's
   all-reduces, queued after the copy). Returns 0, or -1 after recording the failure. */
static int pf__cuda_stage_ints(pf__rank *r, pf__cuda_rank_state *rs, int *device, int *host, int *count,
                               const int *values, int n) {
    if (n < 0 || n > r->group->max_batch || !device || !host) {
        pf__rank_fail(r, PF_ERROR_DEVICE, "%d rows for a group of max_batch %d", n, r->group->max_batch);
        pf__cuda_break(r->group);
        return -1;
    }
    if (*count == n && !memcmp(host, values, (size_t)n * sizeof(int))) return 0;
    memcpy(host, values, (size_t)n * sizeof(int));
    *count = 0;
    if (!pf__cuda_ok(r, pf_cuda_upload_async(rs->cu, device, host, (size_t)n * sizeof(int)))) return -1;
    *count = n;
    return 0;
}

/* The step's left pads on the device for add_positions, rotary and attention: NULL without pads
   (none given, or all 0: the unpadded kernels' path) or after a failure (recorded on the rank:
   check r->error). */
static const int *pf__cuda_pads(pf__rank *r, pf__cuda_rank_state *rs, const pf__step *s) {
    if (!s->pad) return NULL;
    int any = 0;
    for (int b = 0; b < s->batch; b++) {
        if (s->pad[b] < 0) {
            pf__rank_fail(r, PF_ERROR_DEVICE, "sequence %d has %d left pads", b, s->pad[b]);
            pf__cuda_break(r->group);
            return NULL;
        }
        any |= s->pad[b] > 0;
    }
    if (!any) return NULL;
    if (pf__cuda_stage_ints(r, rs, rs->pad, rs->pad_host, &rs->pad_count, s->pad, s->batch)) return NULL;
    return rs->pad;
}

static void pf__cuda_embed(pf__rank *r, float *out, const pf__weight *tokens, const pf__step *s, float scale) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs) return;
    pf__cuda_ok(r, pf_cuda_embed(rs->cu, out, tokens->data, pf__cuda_dtype(tokens->dtype), s->ids, rs->ids,
                                 (size_t)s->batch * s->seq_len, tokens->cols, scale));
}

/* Row offset + position of the table for each token, position = past + t - pad[b] (0 at least). */
static void pf__cuda_add_positions(pf__rank *r, float *x, const pf__weight *table, const pf__step *s, int offset) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs || !s->batch || !s->seq_len) return;
    const int *pad = pf__cuda_pads(r, rs, s);
    if (r->error) return;
    long long least = -1, most = -1; /* the positions read: least..most */
    for (int b = 0; b < s->batch; b++) {
        long long p = s->pad ? s->pad[b] : 0, lo = s->past - p, hi = (long long)s->past + s->seq_len - 1 - p;
        lo = lo > 0 ? lo : 0;
        hi = hi > 0 ? hi : 0;
        if (least < 0 || lo < least) least = lo;
        if (hi > most) most = hi;
    }
    long long first = offset + least, last = offset + most;
    if (first < 0 || (unsigned long long)last >= table->rows) {
        pf__rank_fail(r, PF_ERROR_INVALID_ARGUMENT, "positions %lld..%lld are beyond the position table's %zu rows",
                      first, last, table->rows);
        pf__cuda_break(r->group); /* NCCL peers must not wait for this rank */
        return;
    }
    pf__cuda_ok(r, pf_cuda_add_positions(rs->cu, x, table->data, pf__cuda_dtype(table->dtype), pad, s->batch,
                                         s->seq_len, s->past, (size_t)offset, table->cols));
}

static void pf__cuda_norm(pf__rank *r, float *out, const float *x, const pf__weight *weight, const pf__weight *bias,
                          size_t rows, size_t n, float eps, pf__norm kind) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs) return;
    pf__cuda_ok(r, pf_cuda_norm(rs->cu, out, x, weight ? weight->data : NULL,
                                pf__cuda_dtype(weight ? weight->dtype : PF__DTYPE_F32), bias ? bias->data : NULL,
                                pf__cuda_dtype(bias ? bias->dtype : PF__DTYPE_F32), rows, n, eps,
                                kind == PF__NORM_RMS));
}

static void pf__cuda_matmul(pf__rank *r, float *out, const float *x, const pf__weight *w, const pf__weight *bias,
                            size_t rows) {
#ifdef PF_TESTING
    if (r->index == pf_testing_fail_rank && --pf_testing_fail_countdown == 0) {
        pf__rank_fail(r, PF_ERROR_DEVICE, "injected failure (test)");
        pf__cuda_break(r->group);
        return;
    }
#endif
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs) return;
    pf__cuda_ok(r, pf_cuda_matmul(rs->cu, out, x, w->data, pf__cuda_dtype(w->dtype), bias ? bias->data : NULL,
                                  pf__cuda_dtype(bias ? bias->dtype : PF__DTYPE_F32), rows, w->rows, w->cols, rs->x16));
}

static int pf__cuda_act(pf__activation act) {
    switch (act) {
    case PF__ACT_GELU_TANH: return PF__CUDA_GELU_TANH;
    case PF__ACT_GELU_ERF: return PF__CUDA_GELU_ERF;
    case PF__ACT_RELU: return PF__CUDA_RELU;
    case PF__ACT_SILU: return PF__CUDA_SILU;
    }
    return PF__CUDA_GELU_TANH;
}

static void pf__cuda_activation(pf__rank *r, float *x, size_t count, pf__activation act) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (rs) pf__cuda_ok(r, pf_cuda_activation(rs->cu, x, count, pf__cuda_act(act)));
}

static void pf__cuda_gated_activation(pf__rank *r, float *out, const float *in, size_t rows, size_t width,
                                      pf__activation act) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (rs) pf__cuda_ok(r, pf_cuda_gated_activation(rs->cu, out, in, rows, width, pf__cuda_act(act)));
}

static void pf__cuda_add_residual(pf__rank *r, float *x, const float *y, const pf__weight *bias, size_t rows,
                                  size_t n) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs) return;
    pf__cuda_ok(r, pf_cuda_add_residual(rs->cu, x, y, bias ? bias->data : NULL,
                                        pf__cuda_dtype(bias ? bias->dtype : PF__DTYPE_F32), rows, n));
}

/* The step's frequencies (a host array the caller may rewrite between steps) go to the device
   through inv_freq_host, queued without a wait whenever they differ from what was queued last:
   once per step at most, and once per pf_parallelize without dynamic scaling. The copy is from
   malloc'd (pageable) memory, which the runtime has read when pf_cuda_upload_async returns. */
static void pf__cuda_rotary(pf__rank *r, float *qkv, const pf__step *s, const pf__attn_shape *a, int pairs) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs) return;
    size_t half = a->rotary_dim > 0 ? (size_t)a->rotary_dim / 2 : 0;
    if (!half || !s->batch || !s->seq_len) return;
    if (!s->inv_freq || !rs->inv_freq || (size_t)a->rotary_dim != (size_t)r->group->model->config.rotary_dim) {
        pf__rank_fail(r, PF_ERROR_DEVICE, "rotary positions without their frequencies (rotary_dim %d)", a->rotary_dim);
        pf__cuda_break(r->group);
        return;
    }
    if (!rs->inv_freq_loaded || memcmp(rs->inv_freq_host, s->inv_freq, half * sizeof(float))) {
        memcpy(rs->inv_freq_host, s->inv_freq, half * sizeof(float));
        rs->inv_freq_loaded = 0;
        if (!pf__cuda_ok(r, pf_cuda_upload_async(rs->cu, rs->inv_freq, rs->inv_freq_host, half * sizeof(float)))) return;
        rs->inv_freq_loaded = 1;
    }
    const int *pad = pf__cuda_pads(r, rs, s);
    if (r->error) return;
    pf__cuda_ok(r, pf_cuda_rotary(rs->cu, qkv, rs->inv_freq, pad, s->batch, s->seq_len, s->past, a->heads,
                                  a->kv_heads, a->head_dim, a->rotary_dim, pairs));
}

static void pf__cuda_attention(pf__rank *r, float *out, const float *qkv, float *k_cache, float *v_cache,
                               const pf__step *s, const pf__attn_shape *a) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs) return;
    const int *pad = a->heads > 0 ? pf__cuda_pads(r, rs, s) : NULL;
    if (r->error) return;
    pf__cuda_ok(r, pf_cuda_attention(rs->cu, out, qkv, k_cache, v_cache, rs->partials, a->alibi, pad, s->batch,
                                     s->seq_len, s->past, a->heads, a->kv_heads, a->head_dim, a->head_begin,
                                     a->kv_begin, a->kv_group, a->cache_len, a->window, a->scale));
}

/* Beam search, per layer for the K and V caches: row i of cache [rows][row_floats] becomes old row
   src[i] (host), for the first used_floats of each row. Nothing moves when every row keeps its
   own; otherwise src goes to the device (pf__cuda_stage_ints: once per reorder job, as every
   layer has the same) and kernels.cu gathers into reorder_tmp and copies back. */
static void pf__cuda_reorder_rows(pf__rank *r, float *cache, const int *src, int rows, size_t row_floats,
                                  size_t used_floats) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs || rows <= 0 || !used_floats) return;
    const pf__group *g = r->group;
    int moved = 0;
    for (int i = 0; i < rows; i++) {
        if (src[i] < 0 || src[i] >= g->max_batch) {
            pf__rank_fail(r, PF_ERROR_DEVICE, "beam reorder: row %d from row %d of %d", i, src[i], g->max_batch);
            pf__cuda_break(r->group);
            return;
        }
        moved |= src[i] != i;
    }
    if (!moved) return;
    size_t room = (size_t)g->max_batch * g->cache_len * (size_t)r->share.kv_heads * g->model->config.head_dim;
    if (rows > g->max_batch || used_floats > row_floats || (size_t)rows * used_floats > room || !rs->reorder_tmp) {
        pf__rank_fail(r, PF_ERROR_DEVICE, "beam reorder of %d rows of %zu floats does not fit its buffer", rows,
                      used_floats);
        pf__cuda_break(r->group);
        return;
    }
    if (pf__cuda_stage_ints(r, rs, rs->src, rs->src_host, &rs->src_count, src, rows)) return;
    pf__cuda_ok(r, pf_cuda_reorder_rows(rs->cu, cache, rs->reorder_tmp, rs->src, rows, row_floats, used_floats));
}

/* NCCL between distinct GPUs. Otherwise every rank publishes its buffer, and after a barrier
   sums all of them in rank order into its own scratch (bit-identical on every rank); a second
   barrier keeps the buffers alive until all have read them. Streams are synchronised before
   each barrier: the barrier orders host threads, not GPU work. */
static void pf__cuda_all_reduce(pf__rank *r, float *x, size_t count) {
    pf__group *g = r->group;
    if (g->num_ranks == 1) return;
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs) return;
    pf__cuda_group_state *gs = (pf__cuda_group_state *)g->backend_state;
    if (gs->use_nccl) {
        if (pf__rank_failed(r)) return; /* a peer failed: it will not join */
        pf__cuda_ok(r, pf_cuda_nccl_all_reduce(rs->cu, gs->comms[r->index], x, count));
        return;
    }
    g->reduce_in[r->index] = x;
    if (!pf__cuda_ok(r, pf_cuda_stream_sync(rs->cu)) || pf__barrier(g)) return;
    for (int k = 0; k < g->num_ranks; k++) {
        const float *in = g->reduce_in[k];
        int device = g->ranks[k].device;
        if (device != r->device) {
            if (!pf__cuda_ok(r, pf_cuda_copy_peer_async(rs->cu, rs->reduce_tmp, in, device, count * sizeof(float))))
                return;
            in = rs->reduce_tmp;
        }
        if (!pf__cuda_ok(r, pf_cuda_sum(rs->cu, rs->reduce_sum, in, count, k == 0))) return;
    }
    if (!pf__cuda_ok(r, pf_cuda_stream_sync(rs->cu)) || pf__barrier(g)) return;
    pf__cuda_ok(r, pf_cuda_copy_async(rs->cu, x, rs->reduce_sum, count * sizeof(float)));
}

static const pf__backend pf__cuda_table = {
    .name = "cuda",
    .host_memory = 0,
    .group_begin = pf__cuda_group_begin,
    .group_end = pf__cuda_group_end,
    .rank_begin = pf__cuda_rank_begin,
    .rank_end = pf__cuda_rank_end,
    .alloc = pf__cuda_alloc,
    .free = pf__cuda_free,
    .upload = pf__cuda_upload,
    .download = pf__cuda_download,
    .copy = pf__cuda_copy,
    .embed = pf__cuda_embed,
    .add_positions = pf__cuda_add_positions,
    .norm = pf__cuda_norm,
    .matmul = pf__cuda_matmul,
    .activation = pf__cuda_activation,
    .gated_activation = pf__cuda_gated_activation,
    .add_residual = pf__cuda_add_residual,
    .rotary = pf__cuda_rotary,
    .attention = pf__cuda_attention,
    .all_reduce = pf__cuda_all_reduce,
    .reorder_rows = pf__cuda_reorder_rows,
};

/* A device is present and the runtime works; quiet (0) when the driver or the device is missing. */
static int pf__cuda_usable(void) {
    int count = 0;
    return pf_cuda_device_count(&count, NULL) == PF__CUDA_OK && count > 0;
}

static const char *pf__cuda_unavailable_reason(void) {
    int count = 0;
    const char *reason = NULL;
    if (pf_cuda_device_count(&count, &reason) != PF__CUDA_OK) return reason ? reason : "the CUDA runtime failed";
    return count > 0 ? "a CUDA device is visible" : "no CUDA device is visible";
}

static const pf__backend *pf__cuda_backend(void) { return &pf__cuda_table; }
