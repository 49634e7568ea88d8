#include "internal.h"
/* =============================================================================================== */
/* CUDA backend (kernels.cu), when built with PF_CUDA                                              */
/* =============================================================================================== */

#ifdef PF_CUDA
/* The CUDA backend's side, compiled with PF_CUDA. It fills a pf__backend table whose
   operations call the pf_cuda_* C ABI of kernels.cu (see the top of that file), turning a
   failed call into pf__rank_fail with the message kernels.cu wrote.

   Per rank (r->backend_state, a pf__cuda_rank_state): the pf_cuda_rank (device, stream, cuBLAS
   handle), made on the rank's thread by rank_begin (cudaSetDevice first), and the scratch the
   CUDA ops need beyond the forward pass's buffers, allocated through pf__rank_alloc as
   PF__MEM_SCRATCH on the rank's first upload (during pf_parallelize), so pf_memory_allocated is
   exact once pf_parallelize returns. The scratch includes device copies of the step's host
   arrays: the rotary frequencies (pf__step.inv_freq), the left pads of a padded batch
   (pf__step.pad) and beam search's row order (reorder_rows' src), each queued from a host copy
   kept in the rank state whenever the step's differ from it; with max_batch > 1, the beam
   reorder's buffer (one layer's K or V cache, as the CPU backend's); and, on ranks holding
   vocabulary rows, a greedy step's arg-max candidates (with a pinned host copy they are
   downloaded into, the one host allocation outside the accounting).

   Each op mirrors the CPU backend's (the reference): weights are in the group's dtype, except
   CTRL's fp32 sinusoid table, so every weight passes its own dtype to kernels.cu. Some ops fuse
   two of the CPU's with the same arithmetic (add_residual_norm, bias_activation; rotary, or
   kv_append without it, adding the QKV bias: qkv_bias_in_attention), and the norms
   and activations with 16-bit weights also write the next GEMM's rounded input (x16_now).

   Per group (g->backend_state, a pf__cuda_group_state): ranks on distinct GPUs all-reduce with
   NCCL (ncclCommInitAll in group_begin, on the caller's thread). Ranks sharing a GPU (device ids
   such as {0, 0}), which NCCL refuses, use a device-memory reduction through g->reduce_in and two
   barriers instead (peer copies where some ranks are on other GPUs). Across processes
   (across_processes, MPI builds) one NCCL communicator spans every process's ranks, world rank =
   process x ranks per process + local rank, as the CPU ranks number them: process 0 makes its id,
   MPI broadcasts it, and each process's ranks join it together (pf__cuda_world_comms); every rank
   needs a GPU of its own there. The host side of a job is the CPU ranks' across processes (mpi.c:
   each job's verdicts, the outputs broadcast from each rank's process); only the all-reduce is
   NCCL's.

   Decode steps as CUDA graphs (pf__cuda_run_decoder_step): a step of one token a row has its
   launches up to the final norm captured into a graph once per pf__cuda_graph_key and replayed
   on later steps with that key (graphs per rank, at most PF__CUDA_GRAPHS). This holds because
   prepare stages every per-step value the kernels read into device buffers whose addresses do
   not change (step_ints: past and the ids; pad, cross_pad, cache_rows, inv_freq) before the
   capture or launch, and the kernels read them there; a host copy queued inside a capture is
   refused (pf__cuda_copy_while_capturing). Ranks sharing a GPU are not captured: their
   reduction syncs and meets at barriers mid-step. pf_parallel_options.disable_cuda_graphs
   turns graphs off.

   Failures with NCCL: a rank that fails skips its remaining collectives, so its peers' NCCL
   kernels would wait for it forever. The failing rank marks the group's communicators broken;
   every rank then aborts its own communicator (ncclCommAbort, on its own thread) before it could
   wait on one: in download (a wait that watches the group's abort flag), in every later
   operation, in free and in rank_end. Later requests fail with a message asking for
   pf_parallelize again, which builds new communicators. Across processes the failing rank aborts
   its own communicator at once, so that the other processes' ranks see NCCL's remote error (their
   failure then counts as a consequence: the job's error is the failing process's), and a rank
   waiting on its stream also ends its wait when another process sends a failed verdict (its rank 0
   listens for it) or after process_timeout_ms (a process that stopped, which NCCL does not see). */

/* ---- the C ABI of kernels.cu, declared once for both sides ---- */

#include "cuda_abi.h"

/* ---- state ---- */

/* What the GEMM input buffer x16 holds: the first `elements` activations at x (rows of a GEMM's
   input, row-major) rounded to the weights' dtype, or x NULL for nothing known. */
typedef struct pf__cuda_x16_holds {
    const float *x;
    size_t elements;
} pf__cuda_x16_holds;

/* What makes two decode steps' launches the same, so that one captured graph serves both: the
   grid sizes (batch; the decode attention's split count, pf_cuda_decode_splits of past + 1, which
   covers the windowed layers too; the cross-attention's keys) and the optional device arrays the
   launches take or leave NULL. Everything else a launch reads per step is in device memory. */
typedef struct pf__cuda_graph_key {
    int batch, splits, cross_len;
    int pads, cross_pads, cache_rows; /* 1: the step has them (pf__cuda_pads and cache_rows not NULL) */
} pf__cuda_graph_key;

typedef struct pf__cuda_graph {
    void *graph;              /* kernels.cu's instantiated graph; NULL: a free slot */
    pf__cuda_graph_key key;
    long long past_limit;     /* the largest past whose positions the captured position table holds */
    pf__cuda_x16_holds x16_after; /* what x16 holds after the step (the LM head's GEMM may take it) */
    unsigned long long used;  /* when last launched (rs->graph_clock): the least recent is replaced */
} pf__cuda_graph;

#define PF__CUDA_GRAPHS 8 /* per rank: a few batch sizes, or a run of split counts */

typedef struct pf__cuda_rank_state {
    pf_cuda_rank *cu;         /* NULL when rank_begin could not set the device up */
    pf_result init_error;     /* then: why, reported by the rank's first operation */
    char init_message[PF__MESSAGE_SIZE];
    int scratch_done;
    void *workspace;          /* cuBLAS workspace, pf_cuda_workspace_bytes() */
    int32_t *step_ints;       /* [1 + max_tokens]: the step's past, then its token ids, staged by
                                 prepare: kernels read them from here, never by value, so that a
                                 captured decode graph replays with each step's own */
    int32_t *step_ints_host;  /* [1 + max_tokens], malloc'd: what step_ints holds (or is queued to) */
    int32_t *ids;             /* step_ints + 1 */
    const int32_t *ids_from;  /* the host array ids were staged from this step, or NULL */
    void *x16;                /* [max_tokens][widest GEMM input] fp16/bf16: GEMM input */
    size_t x16_elements;      /* its room */
    /* x16's contents as the last op left them (a norm writes its output's rounding there, a GEMM
       its converted input), and as the op before the current one left them: pf__cuda_begin moves
       the first to the second and clears it, so only the op right after the writer may use the
       copy (any other op in between may have written its source). */
    pf__cuda_x16_holds x16_now, x16_before;
    float *partials;          /* decode attention partial sums, per local query head */
    float *inv_freq;          /* [rotary_dim / 2]: the rotary frequencies on the device */
    float *inv_freq_host;     /* [rotary_dim / 2], malloc'd: what inv_freq holds (or is queued to) */
    int inv_freq_loaded;      /* inv_freq_host has been queued to inv_freq */
    float *reduce_sum;        /* [max_tokens * hidden]: device-memory all-reduce */
    float *reduce_tmp;        /* [max_tokens * hidden]: a peer's buffer copied from another GPU */
    int *pad;                 /* [max_batch]: the step's left pads on the device */
    int *pad_host;            /* [max_batch], malloc'd: what pad holds (or is queued to) */
    int pad_count;            /* entries of pad_host queued to pad; 0: none yet */
    int *cross_pad, *cross_pad_host, cross_pad_count; /* the same of the sources' pads (encoder-decoders) */
    int *cache_rows, *cache_rows_host, cache_rows_count; /* the step's KV cache rows (pf__step.cache_rows) */
    int32_t *type_ids;        /* [max_tokens]: the step's segment ids, staged by prepare */
    const int32_t *type_ids_from; /* the host array they were staged from this step, or NULL */
    int32_t *global_tokens;   /* [max_tokens]: the step's Longformer global tokens, staged by prepare */
    int *src;                 /* [2 max_batch]: a beam reorder's rows that change, then their old rows, on the device */
    int *src_host;            /* [2 max_batch], malloc'd: what src holds (or is queued to) */
    int src_count;            /* entries of src_host queued to src */
    float *reorder_tmp;       /* [max_batch * cache_len * kv_width]: beam reorder, when max_batch > 1 */
    float *choice;            /* [2 logit_rows PF_CUDA_TOP_K_MAX]: a step's arg-max or top-k candidates,
                                 values then ids (int32), on the device; ranks holding vocabulary rows */
    void *choice_host;        /* the same in pinned host memory (pf_cuda_host_alloc) */
    int32_t *expert_rows;     /* [max_tokens, or more]: gather_rows' rows (one expert's tokens, LUKE's doubled heads) */
    float *expert_scales;     /* [max_tokens]: their routing weights */
    pf__cuda_graph graphs[PF__CUDA_GRAPHS]; /* captured decode steps */
    unsigned long long graph_clock;
    int capturing;            /* inside a capture: no host copy may be queued (it would be replayed stale) */
    long long capture_past_limit; /* the past_limit the capture's add_positions allow */
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
    return status == PF_CUDA_ERROR_OUT_OF_MEMORY ? PF_ERROR_OUT_OF_MEMORY : PF_ERROR_DEVICE;
}

static int pf__cuda_dtype(pf__dtype t) {
    return t == PF__DTYPE_F16 ? PF_CUDA_F16 : t == PF__DTYPE_BF16 ? PF_CUDA_BF16 : PF_CUDA_F32;
}

static int pf__cuda_broken(pf__group *g) {
    pf__cuda_group_state *gs = (pf__cuda_group_state *)g->backend_state;
    if (!gs || !gs->use_nccl) return 0;
    return PF__LOAD_FLAG(gs->broken); /* every op asks: no lock */
}

/* On rank r's thread: ends whatever its communicator still waits for. */
static void pf__cuda_abort_own_comm(pf__rank *r) {
    pf__cuda_group_state *gs = (pf__cuda_group_state *)r->group->backend_state;
    if (!gs || !gs->use_nccl || gs->comm_gone[r->index]) return;
    pf_cuda_nccl_abort(gs->comms[r->index]);
    gs->comm_gone[r->index] = 1;
}

/* Rank r (on its thread) failed: the group's communicators may hold operations that never finish.
   It aborts its own at once, so that NCCL ranks in other processes see a remote error instead of
   waiting for it; this process's other ranks abort theirs before they next wait on one. */
static void pf__cuda_break(pf__rank *r) {
    pf__cuda_group_state *gs = (pf__cuda_group_state *)r->group->backend_state;
    if (!gs || !gs->use_nccl) return;
    PF__STORE_FLAG(gs->broken, 1);
    pf__cuda_abort_own_comm(r);
}

/* 1 when a kernels.cu call succeeded; else records its failure on the rank and returns 0. Not
   when another rank of the process failed first (its abort may be what ended this call, a
   collective): that rank reports the job's error, as a rank a barrier released does. A collective
   that failed because another process's rank did makes this process's failure a consequence (the
   job's error is that process's). */
static int pf__cuda_ok(pf__rank *r, int status) {
    if (status == PF_CUDA_OK) return 1;
    pf__cuda_rank_state *rs = (pf__cuda_rank_state *)r->backend_state;
    if (!pf__rank_failed(r)) {
        if (status == PF_CUDA_ERROR_REMOTE) pf__mpi_note_peer_failed(r->group);
        pf__rank_fail(r, pf__cuda_result(status), "GPU %d: %s", r->device, pf_cuda_rank_message(rs->cu));
    }
    pf__cuda_break(r);
    return 0;
}

static int pf__cuda_alloc_scratch(pf__rank *r, pf__cuda_rank_state *rs);
static void pf__cuda_graph_free(pf__cuda_graph *graph);

/* The rank's state when an operation should run, else NULL (after recording why, if it is news):
   the rank already failed, its device could not be set up, or the NCCL communicators broke. */
static pf__cuda_rank_state *pf__cuda_begin(pf__rank *r, int need_scratch) {
    pf__cuda_rank_state *rs = (pf__cuda_rank_state *)r->backend_state;
    if (rs) {
        rs->x16_before = rs->x16_now;
        memset(&rs->x16_now, 0, sizeof rs->x16_now);
    }
    if (r->error || !rs) return NULL;
    if (!rs->cu) {
        pf__rank_fail(r, rs->init_error, "GPU %d: %s", r->device, rs->init_message);
        return NULL;
    }
    if (pf__cuda_broken(r->group)) { /* in this job the failing rank reports it; later jobs fail so */
        pf__cuda_abort_own_comm(r);
        if (!pf__rank_failed(r))
            pf__rank_fail(r, PF_ERROR_DEVICE,
                          "the NCCL communicators were aborted after a rank failed; call pf_parallelize again");
        return NULL;
    }
    if (need_scratch && !rs->scratch_done && pf__cuda_alloc_scratch(r, rs)) return NULL;
    return rs;
}

/* Activations stay fp32; only the GEMM inputs are rounded to the 16-bit weights' dtype (x16, which
   the norms and activations write as they go). Keeping the residual stream, qkv and the MLP's
   activations in the weight dtype instead (as transformers does in fp16) was weighed and left
   out: a decode step of GPT-2 XL (hidden 1600, MLP 6400, 48 layers, fp16) reads about 3.1 GB of
   weights per token on one rank, and its fp32 activations move roughly 180 bytes per hidden unit a
   layer (norms, qkv and its bias pass, attention in and out, the MLP's 4x rows and their 16-bit
   copies, two all-reduces): about 0.3 MB a layer, 14 MB a token, under 0.5% of the weights'
   bytes, so 16-bit activations would save about 0.2% of a step's traffic. (The KV cache, read at
   2 x past x hidden x 2 bytes a layer, is already in the weights' dtype.) And an fp32 residual is
   more accurate than transformers' fp16 one: its rounding does not compound over 48 layers.

   Sized for the largest step pf_parallelize allows (g->max_tokens rows, g->max_batch sequences);
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
    size_t v_width = (size_t)r->share.heads * pf__value_head_dim(c); /* latent attention: o_proj's input */
    if (v_width > k_max) k_max = v_width;
    if ((size_t)c->q_lora_rank > k_max) k_max = (size_t)c->q_lora_rank; /* and q_b_proj's */
    if ((size_t)c->moe_intermediate_size > k_max) k_max = (size_t)c->moe_intermediate_size; /* experts' down GEMMs */
    if ((size_t)c->shared_intermediate_size > k_max) k_max = (size_t)c->shared_intermediate_size;
    size_t half = pf__rope_floats(c); /* every table */
    size_t batch = (size_t)g->max_batch, kv_width = pf__rank_cache_width(r); /* a cached position's values */
    pf__mem_kind kind = r->allocating;
    rs->scratch_done = 1; /* once, even if it fails: the failure is the rank's error */
    r->allocating = PF__MEM_SCRATCH;
    rs->workspace = pf__rank_alloc(r, pf_cuda_workspace_bytes());
    if (rs->workspace) pf__cuda_ok(r, pf_cuda_set_workspace(rs->cu, rs->workspace, pf_cuda_workspace_bytes()));
    rs->step_ints = (int32_t *)pf__rank_alloc(r, (1 + T) * sizeof(int32_t));
    rs->step_ints_host = (int32_t *)malloc((1 + T) * sizeof(int32_t));
    if (!rs->step_ints_host) pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory");
    rs->ids = rs->step_ints ? rs->step_ints + 1 : NULL;
    if (g->dtype != PF__DTYPE_F32) rs->x16 = pf__rank_alloc(r, T * k_max * pf__dtype_size(g->dtype));
    rs->x16_elements = rs->x16 ? T * k_max : 0;
    if (width)
        rs->partials = (float *)pf__rank_alloc(
            r, pf_cuda_attention_scratch_floats(g->max_batch, r->share.heads, pf__attend_head_dim(c)) * sizeof(float));
    if (half) {
        rs->inv_freq = (float *)pf__rank_alloc(r, half * sizeof(float));
        rs->inv_freq_host = (float *)malloc(half * sizeof(float));
        if (!rs->inv_freq_host) pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory");
    }
    if (g->num_ranks > 1 && !gs->use_nccl) { /* all-reduces sum hidden-wide rows, or embed_dim-wide ones */
        size_t wide = hidden > (size_t)c->embed_dim ? hidden : (size_t)c->embed_dim;
        rs->reduce_sum = (float *)pf__rank_alloc(r, T * wide * sizeof(float));
        if (gs->mixed) rs->reduce_tmp = (float *)pf__rank_alloc(r, T * wide * sizeof(float));
    }
    if (c->num_experts > 0 || c->trigram_input || c->funnel || c->entity_vocab_size) {
        /* MobileBERT's trigrams gather 3 rows a token, Funnel's pooling 1, LUKE's doubled heads 6 a head */
        size_t rows = c->trigram_input ? 3 * T : c->entity_aware_attention ? T * 6 * (size_t)r->share.heads : 0;
        rs->expert_rows = (int32_t *)pf__rank_alloc(r, (rows > T ? rows : T) * sizeof(int32_t));
        rs->expert_scales = (float *)pf__rank_alloc(r, T * sizeof(float));
    }
    rs->pad = (int *)pf__rank_alloc(r, batch * sizeof(int));
    rs->pad_host = (int *)malloc(batch * sizeof(int));
    rs->cache_rows = (int *)pf__rank_alloc(r, batch * sizeof(int));
    /* segment ids (zeros without them), which ProphetNet's predict stream reads too (row 0 of its one-row n-gram table) */
    if (g->model->sources[PF__SLOT_TOKEN_TYPE_EMBED].data || g->model->sources[PF__SLOT_ENC_TOKEN_TYPE_EMBED].data ||
        g->model->config.ngram)
        rs->type_ids = (int32_t *)pf__rank_alloc(r, T * sizeof(int32_t));
    if (g->model->config.local_attention) rs->global_tokens = (int32_t *)pf__rank_alloc(r, T * sizeof(int32_t));
    rs->cache_rows_host = (int *)malloc(batch * sizeof(int));
    if (!rs->cache_rows_host) pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory");
    if (g->model->config.num_layers > g->model->config.encoder_layers && g->model->config.encoder_layers) {
        rs->cross_pad = (int *)pf__rank_alloc(r, batch * sizeof(int));
        rs->cross_pad_host = (int *)malloc(batch * sizeof(int));
        if (!rs->cross_pad_host) pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory");
    }
    if (batch > 1) {
        rs->src = (int *)pf__rank_alloc(r, 2 * batch * sizeof(int)); /* a reorder's rows: dst, then src */
        rs->src_host = (int *)malloc(2 * batch * sizeof(int));
        if (kv_width)
            rs->reorder_tmp = (float *)pf__rank_alloc(r, batch * g->cache_len * kv_width * sizeof(float));
    }
    if (!rs->pad_host || (batch > 1 && !rs->src_host)) pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory");
    if (r->share.vocab_rows > 0 && !r->error) { /* sampling's candidates: 4 KiB a row */
        size_t bytes = 2 * g->logit_rows * PF_CUDA_TOP_K_MAX * sizeof(float);
        rs->choice = (float *)pf__rank_alloc(r, bytes);
        if (rs->choice) pf__cuda_ok(r, pf_cuda_host_alloc(rs->cu, &rs->choice_host, bytes));
    }
    r->allocating = kind;
    return r->error ? -1 : 0;
}

/* Waits for the rank's stream. With NCCL it polls, and gives up when another rank failed (its
   collectives would never finish) or NCCL reports an asynchronous error, aborting this rank's
   communicator. */
static int pf__cuda_wait(pf__rank *r, pf__cuda_rank_state *rs) {
    pf__group *g = r->group;
    pf__cuda_group_state *gs = (pf__cuda_group_state *)g->backend_state;
    if (!gs->use_nccl) return pf__cuda_ok(r, pf_cuda_stream_sync(rs->cu)) ? 0 : -1;
    double limit_s = pf__mpi_job_timeout_s(g); /* across processes, in a bounded job */
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (unsigned spins = 0;; spins++) {
        int done = 0;
        if (!pf__cuda_ok(r, pf_cuda_stream_query(rs->cu, &done))) return -1;
        if (done) return 0;
        char message[256];
        int status = spins % 256 == 255 ? pf_cuda_nccl_async_error(gs->comms[r->index], message, sizeof message) : 0;
        if (status) {
            if (status == PF_CUDA_ERROR_REMOTE) pf__mpi_note_peer_failed(g);
            pf__rank_fail(r, PF_ERROR_DEVICE, "rank %d: %s", r->world, message);
            pf__cuda_break(r);
            return -1;
        }
        /* across processes NCCL does not see every loss (a stopped process, a host off the network):
           the leader also takes another process's failed END, and the wait is bounded */
        if (g->mpi && spins % 256 == 255) {
            if (r->index == 0 && pf__mpi_peer_failed(r)) {
                pf__cuda_break(r);
                return -1;
            }
            clock_gettime(CLOCK_MONOTONIC, &now);
            if (limit_s > 0 && (double)(now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) * 1e-9 > limit_s) {
                pf__rank_fail(r, PF_ERROR_DEVICE, "rank %d: an NCCL collective waited %g s for other processes' ranks: "
                              "a process died, stopped or lost its host (pf_parallel_options.process_timeout_ms)",
                              r->world, limit_s);
                pf__cuda_break(r);
                return -1;
            }
        }
        if (pf__rank_failed(r)) { /* not this rank's error: the failing rank reports it */
            pf__cuda_break(r);
            return -1;
        }
        if (spins >= 1000) sched_yield();
    }
}

/* ---- the group: device ordinals and communicators, on the caller's thread ---- */

/* Whether pf_parallelize got a device list (then an id beyond the visible GPUs is an error; without
   one, rank i goes to GPU i modulo their count). pf_parallelize keeps num_device_ids. */
static int pf__cuda_device_ids_given(const pf__group *g) { return g->options.num_device_ids > 0; }

/* This process's device ordinals for its ranks; across processes (g->mpi) every rank needs a GPU of
   its own (NCCL refuses two ranks on one). *distinct: no two ranks share one. */
static pf_result pf__cuda_place_ranks(pf__group *g, int *distinct, int *mixed, char *message, size_t size) {
    int count = 0;
    const char *reason = NULL;
    if (pf_cuda_device_count(&count, &reason) != PF_CUDA_OK || count < 1)
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "no CUDA device: %s", reason ? reason : "none is visible");
    int n = g->num_ranks;
    for (int i = 0; i < n; i++) {
        pf__rank *r = &g->ranks[i];
        if (!pf__cuda_device_ids_given(g)) r->device = i % count;
        else if (r->device < 0 || r->device >= count)
            return pf__format(message, size, PF_ERROR_INVALID_ARGUMENT,
                              "device id %d (rank %d) is not a CUDA device: %d visible (ids 0..%d)", r->device, i,
                              count, count - 1);
    }
    *distinct = 1, *mixed = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            if (g->ranks[i].device == g->ranks[j].device) *distinct = 0;
            else *mixed = 1;
        }
    if (g->mpi && !*distinct)
        return pf__format(message, size, PF_ERROR_INVALID_ARGUMENT,
                          "across_processes: process %d's %d ranks share GPUs (%d visible): NCCL, which joins the "
                          "processes, needs a GPU for each rank", pf__mpi_process(g), n, count);
    return PF_OK;
}

/* Across processes: one NCCL communicator over every process's ranks (world rank = process x
   ranks per process + local rank), its id made by process 0 and broadcast with MPI. Every process
   makes the same MPI calls whatever fails (its verdict travels with them), so none waits for
   another that gave up; a process that never joins fails the others after process_timeout_ms. */
static pf_result pf__cuda_world_comms(pf__group *g, const int *devices, void **comms, char *message, size_t size) {
    unsigned char id[PF_CUDA_NCCL_ID_BYTES + 1]; /* the id, then whether process 0 made it */
    memset(id, 0, sizeof id);
    pf_result res = PF_OK;
    if (pf__mpi_process(g) == 0) {
        int status = pf_cuda_nccl_unique_id(id, message, size);
        if (status) res = pf__cuda_result(status);
        id[PF_CUDA_NCCL_ID_BYTES] = res == PF_OK;
    }
    pf_result shared = pf__mpi_share_setup(g, id, sizeof id, message, size);
    if (res || shared) return res ? res : shared;
    if (!id[PF_CUDA_NCCL_ID_BYTES])
        return pf__format(message, size, PF_ERROR_DEVICE, "across_processes: process 0 could not make the NCCL id");
    int status = pf_cuda_nccl_create_world(g->num_ranks, devices, g->world_ranks, g->first_rank, id,
                                           pf__mpi_timeout_ms(g), comms, message, size);
    res = status ? pf__cuda_result(status) : PF_OK;
    int all = pf__mpi_agree(g, res == PF_OK);
    if (res) return res;
    if (all) return PF_OK;
    for (int i = 0; i < g->num_ranks; i++) pf_cuda_nccl_abort(comms[i]);
    return pf__format(message, size, PF_ERROR_DEVICE, "across_processes: another process could not make its NCCL "
                      "communicators");
}

static pf_result pf__cuda_group_begin(pf__group *g, char *message, size_t size) {
    int n = g->num_ranks, distinct = 1, mixed = 0;
    pf_result res = pf__cuda_place_ranks(g, &distinct, &mixed, message, size);
    if (g->mpi) { /* every process learns whether all could place theirs (group_abandon agrees once more) */
        int all = pf__mpi_agree(g, res == PF_OK);
        if (!res && !all)
            res = pf__format(message, size, PF_ERROR_DEVICE, "across_processes: another process could not place its "
                             "ranks on GPUs");
    }
    if (res) return res;
    pf__cuda_group_state *gs = (pf__cuda_group_state *)calloc(1, sizeof *gs);
    if (!gs) return pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    gs->use_nccl = g->world_ranks > 1 && distinct;
    gs->mixed = !gs->use_nccl && mixed;
    if (gs->use_nccl) {
        int *devices = (int *)calloc((size_t)n, sizeof *devices);
        gs->comms = (void **)calloc((size_t)n, sizeof *gs->comms);
        gs->comm_gone = (int *)calloc((size_t)n, sizeof *gs->comm_gone);
        if (!devices || !gs->comms || !gs->comm_gone) {
            res = pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
        } else {
            for (int i = 0; i < n; i++) devices[i] = g->ranks[i].device;
            int status = g->mpi ? 0 : pf_cuda_nccl_create(n, devices, gs->comms, message, size);
            if (g->mpi) res = pf__cuda_world_comms(g, devices, gs->comms, message, size);
            else if (status) res = pf__cuda_result(status);
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
        if (PF__LOAD_FLAG(gs->broken)) pf_cuda_nccl_abort(gs->comms[i]);
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
        for (int i = 0; i < PF__CUDA_GRAPHS; i++) pf__cuda_graph_free(&rs->graphs[i]);
        pf_cuda_host_free(rs->choice_host);
        pf_cuda_rank_destroy(rs->cu);
    }
    free(rs->inv_freq_host);
    free(rs->step_ints_host);
    free(rs->pad_host);
    free(rs->cross_pad_host);
    free(rs->cache_rows_host);
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

static void pf__cuda_download_rows(pf__rank *r, void *host, size_t host_stride, const void *src, size_t src_stride,
                                   size_t row_bytes, size_t rows) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 0);
    if (!rs || pf__cuda_wait(r, rs)) return;
    pf__cuda_ok(r, pf_cuda_download_rows(rs->cu, host, host_stride, src, src_stride, row_bytes, rows));
}

/* The kernel's candidates come back in one download of 8 bytes a row into pinned memory: no
   logits, and no staging copy through the runtime's bounce buffer. */
static void pf__cuda_argmax(pf__rank *r, pf__choice *best, const float *logits, size_t rows, size_t n, int first) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs) return;
    if (!rs->choice_host || rows > r->group->logit_rows) {
        pf__rank_fail(r, PF_ERROR_DEVICE, "GPU %d: no buffer for the arg-max of %zu rows", r->device, rows);
        pf__cuda_break(r);
        return;
    }
    int32_t *ids = (int32_t *)(void *)(rs->choice + rows); /* int32 words after the values */
    if (!pf__cuda_ok(r, pf_cuda_argmax(rs->cu, rs->choice, ids, logits, rows, n, first)) || pf__cuda_wait(r, rs)) return;
    if (!pf__cuda_ok(r, pf_cuda_download(rs->cu, rs->choice_host, rs->choice, 2 * rows * sizeof(float)))) return;
    const char *host = (const char *)rs->choice_host;
    for (size_t i = 0; i < rows; i++) {
        memcpy(&best[i].value, host + i * sizeof(float), sizeof(float));
        memcpy(&best[i].index, host + (rows + i) * sizeof(float), sizeof(int32_t));
    }
}

/* Sampling's candidates: count values then count ids a row, downloaded together into pinned
   memory (8 bytes a candidate instead of 4 a logit). */
static void pf__cuda_top_k(pf__rank *r, pf__choice *best, size_t stride, const float *logits, size_t rows, size_t n,
                           int first, size_t count) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs) return;
    if (!rs->choice_host || rows > r->group->logit_rows || count > PF_CUDA_TOP_K_MAX) {
        pf__rank_fail(r, PF_ERROR_DEVICE, "GPU %d: no buffer for %zu top-k candidates of %zu rows", r->device, count, rows);
        pf__cuda_break(r);
        return;
    }
    int32_t *ids = (int32_t *)(void *)(rs->choice + rows * count); /* int32 words after the values */
    if (!pf__cuda_ok(r, pf_cuda_top_k(rs->cu, rs->choice, ids, logits, rows, n, first, count)) || pf__cuda_wait(r, rs))
        return;
    if (!pf__cuda_ok(r, pf_cuda_download(rs->cu, rs->choice_host, rs->choice, 2 * rows * count * sizeof(float)))) return;
    const char *host = (const char *)rs->choice_host;
    for (size_t i = 0; i < rows * count; i++) {
        pf__choice *c = best + i / count * stride + i % count;
        memcpy(&c->value, host + i * sizeof(float), sizeof(float));
        memcpy(&c->index, host + (rows * count + i) * sizeof(float), sizeof(int32_t));
    }
}

static void pf__cuda_copy(pf__rank *r, void *dst, const void *src, size_t bytes) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 0);
    if (rs) pf__cuda_ok(r, pf_cuda_copy_async(rs->cu, dst, src, bytes));
}

/* A host copy queued inside a captured decode step would be replayed with the captured step's
   data: prepare stages everything a step reads before the capture, so this is a bug, failed
   loudly instead of replayed stale. */
static int pf__cuda_copy_while_capturing(pf__rank *r, const pf__cuda_rank_state *rs) {
    if (!rs->capturing) return 0;
    pf__rank_fail(r, PF_ERROR_DEVICE, "GPU %d: a host copy inside a captured decode step (a library bug)", r->device);
    pf__cuda_break(r);
    return 1;
}

/* Puts n ints of a host array (the caller's, changing from step to step) on the device at `device`
   through the rank's own copy `host` ([max_batch], malloc'd): queued without a wait, and only when
   they differ from what was queued last (*count entries). The runtime has read pageable memory by
   the time pf_cuda_upload_async returns; and `host` is only rewritten by a later job, after the
   device has run this one's copy (rank 0 waited for its logits, which need every rank's
   all-reduces, queued after the copy). Returns 0, or -1 after recording the failure. */
static int pf__cuda_stage_ints(pf__rank *r, pf__cuda_rank_state *rs, int *device, int *host, int *count,
                               const int *values, int n) {
    if (n < 0 || n > 2 * r->group->max_batch || !device || !host) { /* a reorder stages 2 per row */
        pf__rank_fail(r, PF_ERROR_DEVICE, "%d rows for a group of max_batch %d", n, r->group->max_batch);
        pf__cuda_break(r);
        return -1;
    }
    if (*count == n && !memcmp(host, values, (size_t)n * sizeof(int))) return 0;
    if (pf__cuda_copy_while_capturing(r, rs)) return -1;
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
            pf__cuda_break(r);
            return NULL;
        }
        any |= s->pad[b] > 0;
    }
    if (!any) return NULL;
    if (s->pad == s->cross_pad && rs->cross_pad) { /* the sources' pads, kept apart from the decoder's */
        if (pf__cuda_stage_ints(r, rs, rs->cross_pad, rs->cross_pad_host, &rs->cross_pad_count, s->pad, s->batch)) return NULL;
        return rs->cross_pad;
    }
    if (pf__cuda_stage_ints(r, rs, rs->pad, rs->pad_host, &rs->pad_count, s->pad, s->batch)) return NULL;
    return rs->pad;
}

/* The step's cache rows on the device (NULL without a mapping, or after a failure: check r->error). */
static const int *pf__cuda_cache_rows(pf__rank *r, pf__cuda_rank_state *rs, const pf__step *s) {
    if (!s->cache_rows) return NULL;
    for (int b = 0; b < s->batch; b++)
        if (s->cache_rows[b] < 0 || s->cache_rows[b] >= r->group->max_batch) {
            pf__rank_fail(r, PF_ERROR_DEVICE, "sequence %d in cache row %d of %d", b, s->cache_rows[b], r->group->max_batch);
            pf__cuda_break(r);
            return NULL;
        }
    if (pf__cuda_stage_ints(r, rs, rs->cache_rows, rs->cache_rows_host, &rs->cache_rows_count, s->cache_rows, s->batch))
        return NULL;
    return rs->cache_rows;
}

static void pf__cuda_embed(pf__rank *r, float *out, const pf__weight *tokens, const pf__step *s, float scale,
                           int first) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs) return;
    /* the token or segment ids prepare staged, or other ids (an image's class token) copied now */
    int types = s->ids && s->ids == rs->type_ids_from, tokens_staged = s->ids && s->ids == rs->ids_from;
    if (!types && !tokens_staged && pf__cuda_copy_while_capturing(r, rs)) return;
    if (!types && !tokens_staged) rs->ids_from = NULL; /* rs->ids is overwritten */
    pf__cuda_ok(r, pf_cuda_embed(rs->cu, out, tokens->data, pf__cuda_dtype(tokens->dtype),
                                 types || tokens_staged ? NULL : s->ids, types ? rs->type_ids : rs->ids,
                                 (size_t)s->batch * s->seq_len, tokens->cols, scale, first, tokens->rows));
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
        pf__cuda_break(r); /* NCCL peers must not wait for this rank */
        return;
    }
    /* a replay of this launch is checked against the table before it runs (pf__cuda_graph_check):
       positions then go up to past + T - 1 at most */
    long long limit = (long long)table->rows - offset - s->seq_len;
    if (rs->capturing && limit < rs->capture_past_limit) rs->capture_past_limit = limit;
    pf__cuda_ok(r, pf_cuda_add_positions(rs->cu, x, table->data, pf__cuda_dtype(table->dtype), pad, s->batch,
                                         s->seq_len, rs->step_ints, (size_t)offset, table->cols));
}

/* With 16-bit weights a norm or an activation also writes its output's rounding into x16 (where
   it fits): a GEMM over that output right after (qkv, the MLP's input and down projection, the
   LM head) then needs no conversion launch. NULL: no copy. */
static void *pf__cuda_out16(const pf__cuda_rank_state *rs, size_t elements) {
    return rs->x16 && elements <= rs->x16_elements ? rs->x16 : NULL;
}

/* pf_cuda_norm's rms argument: 0 LayerNorm, 1 RMSNorm, 2 RMSNorm with the gain 1 + w, 3 x * w + b. */
static int pf__cuda_norm_mode(pf__norm kind) {
    return kind == PF__NORM_RMS ? 1 : kind == PF__NORM_RMS_PLUS_ONE ? 2 : kind == PF__NORM_ELEMENTWISE ? 3 : 0;
}

static void pf__cuda_norm(pf__rank *r, float *out, const float *x, const pf__weight *weight, const pf__weight *bias,
                          size_t rows, size_t n, float eps, pf__norm kind) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs) return;
    void *out16 = pf__cuda_out16(rs, rows * n);
    if (!pf__cuda_ok(r, pf_cuda_norm(rs->cu, out, x, weight ? weight->data : NULL,
                                     pf__cuda_dtype(weight ? weight->dtype : PF__DTYPE_F32), bias ? bias->data : NULL,
                                     pf__cuda_dtype(bias ? bias->dtype : PF__DTYPE_F32), rows, n, eps,
                                     pf__cuda_norm_mode(kind), out16, pf__cuda_dtype(r->group->dtype))))
        return;
    if (out16) rs->x16_now = (pf__cuda_x16_holds){out, rows * n};
}

/* add_residual then norm in one launch (the norm's 16-bit copy as pf__cuda_norm's). */
static void pf__cuda_add_residual_norm(pf__rank *r, float *x, const float *y, const pf__weight *bias, float *out,
                                       const pf__weight *weight, const pf__weight *norm_bias, size_t rows, size_t n,
                                       float eps, pf__norm kind) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs) return;
    void *out16 = pf__cuda_out16(rs, rows * n);
    if (!pf__cuda_ok(r, pf_cuda_add_residual_norm(rs->cu, x, y, bias ? bias->data : NULL,
                                                  pf__cuda_dtype(bias ? bias->dtype : PF__DTYPE_F32), out,
                                                  weight ? weight->data : NULL,
                                                  pf__cuda_dtype(weight ? weight->dtype : PF__DTYPE_F32),
                                                  norm_bias ? norm_bias->data : NULL,
                                                  pf__cuda_dtype(norm_bias ? norm_bias->dtype : PF__DTYPE_F32), rows, n,
                                                  eps, pf__cuda_norm_mode(kind), out16, pf__cuda_dtype(r->group->dtype))))
        return;
    if (out16) rs->x16_now = (pf__cuda_x16_holds){out, rows * n};
}

static void pf__cuda_matmul(pf__rank *r, float *out, const float *x, const pf__weight *w, const pf__weight *bias,
                            size_t rows) {
#ifdef PF_TESTING
    if (r->world == pf_testing_fail_rank && --pf_testing_fail_countdown == 0) {
        pf__rank_fail(r, PF_ERROR_DEVICE, "injected failure (test)");
        pf__cuda_break(r);
        return;
    }
#endif
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs) return;
    /* x16 holds x rounded when the op just before wrote it so, in this weight's dtype */
    const pf__cuda_x16_holds *held = &rs->x16_before;
    int converted = held->x == x && held->elements == rows * w->cols && w->dtype == r->group->dtype;
    if (!pf__cuda_ok(r, pf_cuda_matmul(rs->cu, out, x, w->data, pf__cuda_dtype(w->dtype), bias ? bias->data : NULL,
                                       pf__cuda_dtype(bias ? bias->dtype : PF__DTYPE_F32), rows, w->rows, w->cols,
                                       rs->x16, converted)))
        return;
    if (rs->x16 && w->dtype != PF__DTYPE_F32 && w->cols) /* a GEMM over the same x next may reuse it */
        rs->x16_now = (pf__cuda_x16_holds){x, rows * w->cols};
}

static int pf__cuda_act(pf__activation act) {
    switch (act) {
    case PF__ACT_GELU_TANH: return PF_CUDA_GELU_TANH;
    case PF__ACT_GELU_ERF: return PF_CUDA_GELU_ERF;
    case PF__ACT_RELU: return PF_CUDA_RELU;
    case PF__ACT_SILU: return PF_CUDA_SILU;
    case PF__ACT_TANH: return PF_CUDA_TANH;
    case PF__ACT_QUICK_GELU: return PF_CUDA_QUICK_GELU;
    }
    return PF_CUDA_GELU_TANH;
}

static void pf__cuda_activation(pf__rank *r, float *x, size_t count, pf__activation act) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs) return;
    void *x16 = pf__cuda_out16(rs, count);
    if (pf__cuda_ok(r, pf_cuda_activation(rs->cu, x, count, pf__cuda_act(act), x16, pf__cuda_dtype(r->group->dtype))) && x16)
        rs->x16_now = (pf__cuda_x16_holds){x, count};
}

static void pf__cuda_softcap(pf__rank *r, float *x, size_t count, float cap) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (rs) pf__cuda_ok(r, pf_cuda_softcap(rs->cu, x, count, cap));
}

static void pf__cuda_bias_activation(pf__rank *r, float *x, const pf__weight *bias, size_t rows, size_t n,
                                     pf__activation act) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs) return;
    void *x16 = pf__cuda_out16(rs, rows * n);
    if (pf__cuda_ok(r, pf_cuda_bias_activation(rs->cu, x, bias->data, pf__cuda_dtype(bias->dtype), rows, n,
                                               pf__cuda_act(act), x16, pf__cuda_dtype(r->group->dtype))) &&
        x16)
        rs->x16_now = (pf__cuda_x16_holds){x, rows * n};
}

static void pf__cuda_gated_activation(pf__rank *r, float *out, const float *in, size_t rows, size_t width,
                                      pf__activation act) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs) return;
    void *out16 = pf__cuda_out16(rs, rows * width);
    if (pf__cuda_ok(r, pf_cuda_gated_activation(rs->cu, out, in, rows, width, pf__cuda_act(act), out16,
                                                pf__cuda_dtype(r->group->dtype))) &&
        out16)
        rs->x16_now = (pf__cuda_x16_holds){out, rows * width};
}

static void pf__cuda_clamped_swiglu(pf__rank *r, float *out, const float *in, size_t rows, size_t width, float alpha,
                                    float limit) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (rs) pf__cuda_ok(r, pf_cuda_clamped_swiglu(rs->cu, out, in, rows, width, alpha, limit));
}

static void pf__cuda_add_residual(pf__rank *r, float *x, const float *y, const pf__weight *bias, size_t rows,
                                  size_t n) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs) return;
    pf__cuda_ok(r, pf_cuda_add_residual(rs->cu, x, y, bias ? bias->data : NULL,
                                        pf__cuda_dtype(bias ? bias->dtype : PF__DTYPE_F32), rows, n));
}

/* Mixtures of experts: the host's rows (and weights) of one expert's tokens, queued to the device
   in the stream's order (the host arrays stay until the layer's next routing, after a download). */
static void pf__cuda_gather_rows(pf__rank *r, float *dst, const float *src, const int32_t *rows, const float *scales,
                                 size_t count, size_t width) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs || !count) return;
    if (!pf__cuda_ok(r, pf_cuda_upload_async(rs->cu, rs->expert_rows, rows, count * sizeof(int32_t))) ||
        (scales && !pf__cuda_ok(r, pf_cuda_upload_async(rs->cu, rs->expert_scales, scales, count * sizeof(float)))))
        return;
    pf__cuda_ok(r, pf_cuda_gather_rows(rs->cu, dst, src, rs->expert_rows, scales ? rs->expert_scales : NULL, count, width));
}

/* ConvBERT's convolutions, each sequence over its real tokens (the pads prepare staged) */
static void pf__cuda_depthwise_conv(pf__rank *r, float *out, const float *x, const pf__weight *w, const pf__step *s,
                                    size_t width) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs) return;
    const int *pad = pf__cuda_pads(r, rs, s);
    if (!r->error)
        pf__cuda_ok(r, pf_cuda_depthwise_conv(rs->cu, out, x, w->data, pf__cuda_dtype(w->dtype), pad, s->batch, s->seq_len,
                                              width, (int)w->cols));
}

static void pf__cuda_multiply(pf__rank *r, float *x, const float *y, size_t y_stride, size_t rows, size_t n) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (rs) pf__cuda_ok(r, pf_cuda_multiply(rs->cu, x, y, y_stride, rows, n));
}

static void pf__cuda_span_conv(pf__rank *r, float *out, const float *logits, size_t logits_stride, const float *v,
                               const pf__step *s, int heads, int head_dim, int k) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs) return;
    const int *pad = pf__cuda_pads(r, rs, s);
    if (!r->error)
        pf__cuda_ok(r, pf_cuda_span_conv(rs->cu, out, logits, logits_stride, v, pad, s->batch, s->seq_len, heads, head_dim, k));
}

static void pf__cuda_reformer_attend(pf__rank *r, float *out, const float *q, const float *k, const float *v,
                                     const int32_t *keys, const pf__reformer_shape *a) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs || !a->heads || !a->len) return;
    pf__cuda_ok(r, pf_cuda_reformer_attend(rs->cu, out, q, k, v, keys, a->len, a->heads, a->head_dim, a->rounds, a->listed,
                                           a->shared_qk));
}

static void pf__cuda_funnel_bias(pf__rank *r, float *out, const float *q, const float *rel, const pf__weight *pos_bias,
                                 const pf__weight *type_bias, const pf__weight *seg, const int32_t *ints,
                                 const pf__funnel_shape *f) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs || !f->heads) return;
    pf__cuda_ok(r, pf_cuda_funnel_bias(rs->cu, out, q, rel, pos_bias->data, pf__cuda_dtype(pos_bias->dtype),
                                       seg ? type_bias->data : NULL, seg ? pf__cuda_dtype(type_bias->dtype) : 0,
                                       seg ? seg->data : NULL, seg ? pf__cuda_dtype(seg->dtype) : 0, ints,
                                       f->batch, f->q_len, f->k_len, f->heads, f->head_dim, f->q_first, f->q_stride,
                                       f->k_first, f->k_stride, f->rel_first, f->separate_cls, f->exact_segments,
                                       f->causal, f->window, f->scale));
}

static void pf__cuda_scatter_add_rows(pf__rank *r, float *dst, const float *src, const int32_t *rows,
                                      const float *scales, size_t count, size_t width) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs || !count) return;
    if (!pf__cuda_ok(r, pf_cuda_upload_async(rs->cu, rs->expert_rows, rows, count * sizeof(int32_t))) ||
        (scales && !pf__cuda_ok(r, pf_cuda_upload_async(rs->cu, rs->expert_scales, scales, count * sizeof(float)))))
        return;
    pf__cuda_ok(r, pf_cuda_scatter_add_rows(rs->cu, dst, src, rs->expert_rows, scales ? rs->expert_scales : NULL, count,
                                            width));
}

static void pf__cuda_scale(pf__rank *r, float *x, size_t count, float factor) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs) return;
    pf__cuda_ok(r, pf_cuda_scale(rs->cu, x, count, factor));
}

static void pf__cuda_add_residual_biases(pf__rank *r, float *x, const float *y, const pf__weight *bias,
                                         const pf__weight *bias2, size_t rows, size_t n) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs) return;
    pf__cuda_ok(r, pf_cuda_add_residual_biases(rs->cu, x, y, bias ? bias->data : NULL,
                                               pf__cuda_dtype(bias ? bias->dtype : PF__DTYPE_F32), bias2->data,
                                               pf__cuda_dtype(bias2->dtype), rows, n));
}

static int pf__cuda_stage_inv_freq(pf__rank *r, pf__cuda_rank_state *rs, const pf__step *s, size_t half) {
    if (rs->inv_freq_loaded && !memcmp(rs->inv_freq_host, s->inv_freq, half * sizeof(float))) return 0;
    if (pf__cuda_copy_while_capturing(r, rs)) return -1;
    memcpy(rs->inv_freq_host, s->inv_freq, half * sizeof(float));
    rs->inv_freq_loaded = 0;
    if (!pf__cuda_ok(r, pf_cuda_upload_async(rs->cu, rs->inv_freq, rs->inv_freq_host, half * sizeof(float)))) return -1;
    rs->inv_freq_loaded = 1;
    return 0;
}

/* The step's past and token ids into step_ints (every rank: all embed, and all read past), in
   one copy queued without a wait from the rank's own host copy (pageable: the runtime has read it
   when pf_cuda_upload_async returns, so the next step may rewrite it at once). */
static int pf__cuda_stage_step_ints(pf__rank *r, pf__cuda_rank_state *rs, const pf__step *s) {
    size_t tokens = (size_t)s->batch * s->seq_len, staged = 1;
    rs->ids_from = NULL;
    if (!rs->step_ints) {
        pf__rank_fail(r, PF_ERROR_DEVICE, "GPU %d: no buffer for the step's arguments", r->device);
        pf__cuda_break(r);
        return -1;
    }
    rs->step_ints_host[0] = s->past;
    if (s->ids && tokens <= r->group->max_tokens) {
        memcpy(rs->step_ints_host + 1, s->ids, tokens * sizeof(int32_t));
        staged += tokens;
    }
    if (!pf__cuda_ok(r, pf_cuda_upload_async(rs->cu, rs->step_ints, rs->step_ints_host, staged * sizeof(int32_t))))
        return -1;
    if (staged > 1) rs->ids_from = s->ids;
    return 0;
}

/* Stages what the ops will read before the first collective (pf__backend.prepare): the step's
   past and ids, its pads, the sources' pads and the rotary frequencies; the ops then find them
   staged. */
static void pf__cuda_prepare(pf__rank *r, const pf__step *s) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs || pf__cuda_stage_step_ints(r, rs, s)) return;
    rs->type_ids_from = NULL; /* segment ids: every rank embeds them, heads or not */
    size_t tokens = (size_t)s->batch * s->seq_len;
    /* no ids given (an encoder-decoder's steps): the zeros the forward then embeds, staged here so
       that a captured decode step copies nothing */
    const int32_t *types = s->type_ids ? s->type_ids : r->group->zero_ids;
    if (s->ids && rs->type_ids && tokens <= r->group->max_tokens &&
        pf__cuda_ok(r, pf_cuda_upload_async(rs->cu, rs->type_ids, types, tokens * sizeof(int32_t))))
        rs->type_ids_from = types;
    if (s->global_tokens && (!rs->global_tokens || tokens > r->group->max_tokens)) {
        pf__rank_fail(r, PF_ERROR_DEVICE, "global attention without its device buffer");
        pf__cuda_break(r);
        return;
    }
    if (s->global_tokens) /* an encoder's request: no graph captures it */
        pf__cuda_ok(r, pf_cuda_upload_async(rs->cu, rs->global_tokens, s->global_tokens, tokens * sizeof(int32_t)));
    /* every rank: add_positions and rotary read pads and frequencies on a rank without heads too */
    size_t tables = pf__rope_floats(&r->group->model->config);
    if (tables && s->inv_freq && rs->inv_freq) pf__cuda_stage_inv_freq(r, rs, s, tables);
    pf__cuda_pads(r, rs, s);
    pf__cuda_cache_rows(r, rs, s);
    if (s->cross_pad) {
        pf__step keys = *s;
        keys.pad = s->cross_pad;
        pf__cuda_pads(r, rs, &keys);
    }
}

static void pf__cuda_clamp(pf__rank *r, float *x, size_t count, float limit) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs) return;
    pf__cuda_ok(r, pf_cuda_clamp(rs->cu, x, count, limit));
}

static void pf__cuda_scale_queries(pf__rank *r, float *qkv, const pf__step *s, const pf__attn_shape *a, float floor_scale,
                                   float scale) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs || !a->heads) return;
    const int *pad = pf__cuda_pads(r, rs, s);
    if (r->error) return;
    pf__cuda_ok(r, pf_cuda_scale_queries(rs->cu, qkv, pad, s->batch, s->seq_len, rs->step_ints, a->heads, a->kv_heads,
                                         a->head_dim, floor_scale, scale));
}

static void pf__cuda_qk_sum_squares(pf__rank *r, float *sums, const float *qkv, size_t rows, const pf__attn_shape *a,
                                    int k_first, int k_count) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs) return;
    pf__cuda_ok(r, pf_cuda_qk_sum_squares(rs->cu, sums, qkv, rows, a->heads, a->kv_heads, a->head_dim, k_first, k_count));
}

static void pf__cuda_qk_scale(pf__rank *r, float *qkv, const float *sums, const pf__weight *q_weight,
                              const pf__weight *k_weight, size_t rows, const pf__attn_shape *a, float q_width,
                              float k_width, float eps) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs) return;
    pf__cuda_ok(r, pf_cuda_qk_scale(rs->cu, qkv, sums, q_weight ? q_weight->data : NULL,
                                    pf__cuda_dtype(q_weight ? q_weight->dtype : PF__DTYPE_F32),
                                    k_weight ? k_weight->data : NULL,
                                    pf__cuda_dtype(k_weight ? k_weight->dtype : PF__DTYPE_F32), rows, a->heads,
                                    a->kv_heads, a->head_dim, q_width, k_width, eps));
}

/* qk-norm: each q and k head of the qkv rows normed in place, one block a head (per_head: head h's
   gain at h * head_dim), plus its side's bias. */
static void pf__cuda_head_norm(pf__rank *r, float *qkv, const pf__weight *q_weight, const pf__weight *k_weight,
                               const pf__weight *q_bias, const pf__weight *k_bias, size_t rows,
                               const pf__attn_shape *a, float eps, pf__norm kind, int per_head) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs) return;
    pf__cuda_ok(r, pf_cuda_head_norm(rs->cu, qkv, q_weight ? q_weight->data : NULL,
                                     pf__cuda_dtype(q_weight ? q_weight->dtype : PF__DTYPE_F32),
                                     k_weight ? k_weight->data : NULL,
                                     pf__cuda_dtype(k_weight ? k_weight->dtype : PF__DTYPE_F32),
                                     q_bias ? q_bias->data : NULL, pf__cuda_dtype(q_bias ? q_bias->dtype : PF__DTYPE_F32),
                                     k_bias ? k_bias->data : NULL, pf__cuda_dtype(k_bias ? k_bias->dtype : PF__DTYPE_F32),
                                     rows, a->heads, a->kv_heads, a->head_dim, eps, pf__cuda_norm_mode(kind), per_head));
}

/* The step's frequencies (a host array the caller may rewrite between steps) go to the device
   through inv_freq_host, queued without a wait whenever they differ from what was queued last:
   once per step at most, and once per pf_parallelize without dynamic scaling. The copy is from
   malloc'd (pageable) memory, which the runtime has read when pf_cuda_upload_async returns. */
/* With a->qkv_bias, the same launch adds the QKV bias (even where rotary_dim is 0). */
static void pf__cuda_rotary(pf__rank *r, float *qkv, const pf__step *s, const pf__attn_shape *a, int pairs) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs) return;
    size_t half = a->rotary_dim > 0 ? (size_t)a->rotary_dim / 2 : 0;
    const pf__weight *bias = a->qkv_bias;
    if ((!half && !bias) || !s->batch || !s->seq_len) return;
    if (half && (!s->inv_freq || !rs->inv_freq || (size_t)a->rotary_dim != (size_t)r->group->model->config.rotary_dim)) {
        pf__rank_fail(r, PF_ERROR_DEVICE, "rotary positions without their frequencies (rotary_dim %d)", a->rotary_dim);
        pf__cuda_break(r);
        return;
    }
    if (half && pf__cuda_stage_inv_freq(r, rs, s, pf__rope_floats(&r->group->model->config))) return;
    const int *pad = pf__cuda_pads(r, rs, s);
    if (r->error) return;
    pf__cuda_ok(r, pf_cuda_rotary(rs->cu, qkv, bias ? bias->data : NULL, pf__cuda_dtype(bias ? bias->dtype : PF__DTYPE_F32),
                                  rs->inv_freq + (size_t)a->rope_table * half, pad, s->batch, s->seq_len, rs->step_ints, a->heads, a->kv_heads, a->head_dim,
                                  a->rotary_dim, pairs, a->rope_scale ? a->rope_scale : 1.0f));
}

/* With a->qkv_bias, the same launch adds the QKV bias to the rows (q too) as it appends. */
static void pf__cuda_kv_append(pf__rank *r, void *k_cache, void *v_cache, float *qkv, const pf__step *s,
                               const pf__attn_shape *a) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs || !a->heads) return;
    const int *rows = pf__cuda_cache_rows(r, rs, s);
    if (r->error) return;
    const pf__weight *bias = a->qkv_bias;
    pf__cuda_ok(r, pf_cuda_kv_append(rs->cu, k_cache, v_cache, pf__cuda_dtype(a->cache_dtype), qkv,
                                     bias ? bias->data : NULL, pf__cuda_dtype(bias ? bias->dtype : PF__DTYPE_F32), rows,
                                     s->batch, s->seq_len, s->past, rs->step_ints, a->heads, a->kv_heads, a->head_dim,
                                     a->cache_len));
}

static void pf__cuda_attend(pf__rank *r, float *out, const float *qkv, const void *k_cache, const void *v_cache,
                            const pf__step *s, const pf__attn_shape *a) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs) return;
    const int *pad = a->heads > 0 ? pf__cuda_pads(r, rs, s) : NULL;
    const int *rows = a->heads > 0 && a->mask != PF__MASK_CROSS ? pf__cuda_cache_rows(r, rs, s) : NULL;
    if (r->error) return;
    const pf_cuda_attention_args args = {
        .out = out, .qkv = qkv, .k_cache = k_cache, .v_cache = v_cache,
        .cache_dtype = pf__cuda_dtype(a->cache_dtype), .partials = rs->partials,
        .alibi = a->alibi, .alibi_rounded = a->alibi_rounded, .pad = pad, .rows = rows,
        .batch = s->batch, .T = s->seq_len,
        .past = s->past, .past_at = rs->step_ints, /* the same past, staged in device memory */
        .heads = a->heads, .kv_heads = a->kv_heads, .head_dim = a->head_dim,
        .head_begin = a->head_begin, .kv_begin = a->kv_begin, .kv_group = a->kv_group,
        .cache_len = a->cache_len, .window = a->window, .chunk = a->chunk,
        .mask = a->mask, /* PF__MASK_BIDIRECTIONAL, _CAUSAL, _CROSS: the ABI's 0, 1, 2 */
        .local_window = a->local_window, .global_queries = a->global_queries,
        .global = s->global_tokens && (a->local_window > 0 || a->global_queries) ? rs->global_tokens : NULL,
        .sparse_block = a->sparse_block, .sparse_random = a->sparse_random,
        .scale = a->scale,
        .softcap = a->softcap,
        .rel_bias = a->rel_bias, .rel_rows = a->rel_rows, .rel_buckets = a->rel_buckets,
        .rel_max_distance = a->rel_max_distance,
        .dense_bias = a->dense_bias,
        .sinks = a->sinks ? a->sinks->data : NULL, .sinks_dtype = pf__cuda_dtype(a->sinks ? a->sinks->dtype : PF__DTYPE_F32),
    };
    pf__cuda_ok(r, pf_cuda_attend(rs->cu, &args));
}

/* The device copies a latent attention op reads (frequencies, pads, cache rows), staged; 0 on a
   failure (see r->error). */
static pf__cuda_rank_state *pf__cuda_latent_begin(pf__rank *r, const pf__step *s, const int **pad, const int **rows) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs || !s->batch || !s->seq_len) return NULL;
    if (!s->inv_freq || !rs->inv_freq) {
        pf__rank_fail(r, PF_ERROR_DEVICE, "latent attention without its rotary frequencies");
        pf__cuda_break(r);
        return NULL;
    }
    if (pf__cuda_stage_inv_freq(r, rs, s, pf__rope_floats(&r->group->model->config))) return NULL;
    *pad = pf__cuda_pads(r, rs, s);
    *rows = r->error ? NULL : pf__cuda_cache_rows(r, rs, s);
    return r->error ? NULL : rs;
}

static void pf__cuda_latent_append(pf__rank *r, void *cache, const float *latent, const pf__weight *norm,
                                   const pf__step *s, const pf__attn_shape *a, int pairs, float eps) {
    const int *pad = NULL, *rows = NULL;
    if (!a->heads) return;
    pf__cuda_rank_state *rs = pf__cuda_latent_begin(r, s, &pad, &rows);
    if (!rs) return;
    pf__cuda_ok(r, pf_cuda_latent_append(rs->cu, cache, pf__cuda_dtype(a->cache_dtype), latent, norm->data,
                                         pf__cuda_dtype(norm->dtype), rs->inv_freq, pad, rows, s->batch, s->seq_len,
                                         s->past, rs->step_ints, a->latent_rank, a->rotary_dim, a->cache_len, pairs,
                                         a->rope_scale ? a->rope_scale : 1.0f, eps));
}

static void pf__cuda_latent_attend(pf__rank *r, float *out, float *q, const void *cache, const pf__weight *kv_b,
                                   const pf__step *s, const pf__attn_shape *a, int pairs) {
    const int *pad = NULL, *rows = NULL;
    if (!a->heads) return;
    pf__cuda_rank_state *rs = pf__cuda_latent_begin(r, s, &pad, &rows);
    if (!rs) return;
    pf__cuda_ok(r, pf_cuda_latent_attend(rs->cu, out, q, cache, pf__cuda_dtype(a->cache_dtype), kv_b->data,
                                         pf__cuda_dtype(kv_b->dtype), rs->inv_freq, pad, rows, s->batch, s->seq_len,
                                         s->past, rs->step_ints, a->heads, a->head_dim, a->rotary_dim, a->v_head_dim,
                                         a->latent_rank, a->cache_len, a->window, a->scale, pairs,
                                         a->rope_scale ? a->rope_scale : 1.0f));
}

static void pf__cuda_disentangled_bias(pf__rank *r, float *out, const float *qkv, const float *rel_qkv, const pf__step *s,
                                       const pf__attn_shape *a, const pf__config *c) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 0);
    if (!rs) return;
    int q_width = a->heads * a->head_dim, kv_width = a->kv_heads * a->head_dim; /* pf__rank_disentangled's projections */
    pf__cuda_ok(r, pf_cuda_disentangled_bias(rs->cu, out, qkv, rel_qkv, s->batch, s->seq_len, a->heads, a->kv_heads,
                                             a->head_dim, a->head_begin, a->kv_begin, a->kv_group, c->rel_c2p, c->rel_p2c,
                                             c->position_buckets, c->max_relative_positions, c->rel_span,
                                             c->share_att_key ? q_width + 2 * kv_width : q_width + kv_width, a->scale));
}

static void pf__cuda_ngram_attend(pf__rank *r, float *out, const float *qkv, const float *rel, int rel_heads,
                                  const int32_t *buckets, const void *k_cache, const void *v_cache, const pf__step *s,
                                  const pf__attn_shape *a, int predict) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs || !a->heads) return;
    const int *pad = pf__cuda_pads(r, rs, s);
    const int *rows = r->error ? NULL : pf__cuda_cache_rows(r, rs, s);
    if (r->error) return;
    pf__cuda_ok(r, pf_cuda_ngram_attend(rs->cu, out, qkv, rel, rel_heads, a->rel_buckets * rel_heads, buckets, k_cache,
                                        v_cache, pf__cuda_dtype(a->cache_dtype), pad, rows, s->batch, s->seq_len, s->past,
                                        rs->step_ints, a->heads, a->kv_heads, a->head_dim, a->head_begin, a->kv_begin,
                                        a->kv_group, a->cache_len, a->scale, predict));
}

/* Beam search, per layer for the K and V caches: row i of cache [rows][row_bytes] becomes old row
   src[i] (host), for the first used_bytes of each row. Nothing moves when every row keeps its
   own; otherwise src goes to the device (pf__cuda_stage_ints: once per reorder job, as every
   layer has the same) and kernels.cu gathers into reorder_tmp and copies back. */
static void pf__cuda_reorder_rows(pf__rank *r, void *cache, const int *dst, const int *src, int count,
                                  size_t row_bytes, size_t used_bytes) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs || count <= 0 || !used_bytes) return;
    const pf__group *g = r->group;
    for (int k = 0; k < count; k++) {
        if (src[k] < 0 || src[k] >= g->max_batch || dst[k] < 0 || dst[k] >= g->max_batch) {
            pf__rank_fail(r, PF_ERROR_DEVICE, "beam reorder: row %d from row %d of %d", dst[k], src[k], g->max_batch);
            pf__cuda_break(r);
            return;
        }
    }
    size_t room = (size_t)g->max_batch * g->cache_len * pf__rank_cache_width(r) * sizeof(float); /* reorder_tmp's
                  bytes: one fp32 layer */
    if (count > g->max_batch || used_bytes > row_bytes || (size_t)count * used_bytes > room || !rs->reorder_tmp) {
        pf__rank_fail(r, PF_ERROR_DEVICE, "beam reorder of %d rows of %zu bytes does not fit its buffer", count,
                      used_bytes);
        pf__cuda_break(r);
        return;
    }
    int *moves = (int *)malloc(2 * (size_t)count * sizeof(int)); /* dst then src, staged as one array */
    if (!moves) {
        pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory");
        pf__cuda_break(r);
        return;
    }
    memcpy(moves, dst, (size_t)count * sizeof(int));
    memcpy(moves + count, src, (size_t)count * sizeof(int));
    int staged = pf__cuda_stage_ints(r, rs, rs->src, rs->src_host, &rs->src_count, moves, 2 * count);
    free(moves);
    if (staged) return;
    pf__cuda_ok(r, pf_cuda_reorder_rows(rs->cu, cache, rs->reorder_tmp, rs->src, rs->src + count, count, row_bytes,
                                        used_bytes));
}

/* NCCL between distinct GPUs. Otherwise every rank publishes its buffer, and after a barrier
   sums all of them in rank order into its own scratch (bit-identical on every rank); a second
   barrier keeps the buffers alive until all have read them. Streams are synchronised before
   each barrier: the barrier orders host threads, not GPU work. */
static void pf__cuda_all_reduce(pf__rank *r, float *x, size_t count) {
    pf__group *g = r->group;
    if (g->world_ranks == 1) return;
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

/* ---- decode steps as CUDA graphs ---- */

#ifdef PF_TESTING
int pf_testing_cuda_graph_captures, pf_testing_cuda_graph_launches; /* test hook: rank 0's counts */
#endif

/* Whether a step's device work may be captured: a decode step (one token a row) of token ids,
   and collectives NCCL can capture (one rank, or NCCL between distinct GPUs; the device-memory
   reduction waits and meets at barriers mid-step). The same answer on every rank. */
static int pf__cuda_graph_eligible(const pf__rank *r, const pf__job *job) {
    const pf__group *g = r->group;
    const pf__cuda_group_state *gs = (const pf__cuda_group_state *)g->backend_state;
    const pf__step *s = &job->step;
    if (g->options.disable_cuda_graphs || job->encoder_pass) return 0;
    if (s->seq_len != 1 || !s->ids || s->features || s->patches || s->type_ids) return 0;
    if (g->model->config.num_experts > 0) return 0; /* the routing downloads the router's logits mid-step */
    return g->num_ranks == 1 || gs->use_nccl;
}

static int pf__cuda_any_positive(const int *values, int n) {
    for (int i = 0; values && i < n; i++)
        if (values[i] > 0) return 1;
    return 0;
}

static pf__cuda_graph_key pf__cuda_graph_key_of(const pf__step *s) {
    pf__cuda_graph_key key;
    memset(&key, 0, sizeof key); /* compared with memcmp */
    key.batch = s->batch;
    key.splits = pf_cuda_decode_splits(s->past + 1);
    key.cross_len = s->cross_len;
    key.pads = pf__cuda_any_positive(s->pad, s->batch);
    key.cross_pads = pf__cuda_any_positive(s->cross_pad, s->batch);
    key.cache_rows = s->cache_rows != NULL;
    return key;
}

static pf__cuda_graph *pf__cuda_graph_find(pf__cuda_rank_state *rs, const pf__cuda_graph_key *key) {
    for (int i = 0; i < PF__CUDA_GRAPHS; i++)
        if (rs->graphs[i].graph && !memcmp(&rs->graphs[i].key, key, sizeof *key)) return &rs->graphs[i];
    return NULL;
}

static void pf__cuda_graph_free(pf__cuda_graph *graph) {
    pf_cuda_graph_destroy(graph->graph);
    memset(graph, 0, sizeof *graph);
}

/* A free slot, else the least recently launched one, emptied. */
static pf__cuda_graph *pf__cuda_graph_slot(pf__cuda_rank_state *rs) {
    pf__cuda_graph *oldest = &rs->graphs[0];
    for (int i = 0; i < PF__CUDA_GRAPHS; i++) {
        if (!rs->graphs[i].graph) return &rs->graphs[i];
        if (rs->graphs[i].used < oldest->used) oldest = &rs->graphs[i];
    }
    pf__cuda_graph_free(oldest);
    return oldest;
}

/* Captures body(r, job) into a slot. The capture always ends, also when the body failed (its
   launches then are discarded), or stopped early because another rank failed. */
static pf__cuda_graph *pf__cuda_graph_capture(pf__rank *r, pf__cuda_rank_state *rs, const pf__job *job,
                                              const pf__cuda_graph_key *key,
                                              void (*body)(pf__rank *r, const pf__job *job)) {
    pf__cuda_graph *slot = pf__cuda_graph_slot(rs);
    if (!pf__cuda_ok(r, pf_cuda_graph_begin(rs->cu))) return NULL;
    rs->capturing = 1;
    rs->capture_past_limit = LLONG_MAX;
    body(r, job);
    rs->capturing = 0;
    void *graph = NULL;
    int status = pf_cuda_graph_end(rs->cu, &graph);
    if (pf__rank_failed(r)) {
        pf_cuda_graph_destroy(graph);
        return NULL;
    }
    if (!pf__cuda_ok(r, status)) return NULL;
    slot->graph = graph;
    slot->key = *key;
    slot->past_limit = rs->capture_past_limit;
    slot->x16_after = rs->x16_now;
#ifdef PF_TESTING
    if (r->index == 0) pf_testing_cuda_graph_captures++;
#endif
    return slot;
}

/* The host's checks of a live step that a replay skips: positions within the cache and the
   position table. */
static int pf__cuda_graph_check(pf__rank *r, const pf__cuda_graph *graph, const pf__step *s) {
    if (s->past < 0 || s->past + s->seq_len > r->group->cache_len) {
        pf__rank_fail(r, PF_ERROR_DEVICE, "GPU %d: positions %d..%d are beyond the cache's %d", r->device, s->past,
                      s->past + s->seq_len - 1, r->group->cache_len);
    } else if (s->past > graph->past_limit) {
        pf__rank_fail(r, PF_ERROR_INVALID_ARGUMENT, "position %d is beyond the position table",
                      s->past + s->seq_len - 1);
    } else {
        return 0;
    }
    pf__cuda_break(r); /* NCCL peers must not wait for this rank */
    return -1;
}

/* pf__backend.run_decoder_step: a decode step replayed from the graph of its key, captured now
   when there is none (then replayed at once: a capture runs nothing). prepare has staged all the
   step reads. A failed launch frees the rank's graphs. */
static int pf__cuda_run_decoder_step(pf__rank *r, const pf__job *job, void (*body)(pf__rank *r, const pf__job *job)) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs) return 1; /* failed: recorded */
    if (!pf__cuda_graph_eligible(r, job)) return 0;
    pf__cuda_graph_key key = pf__cuda_graph_key_of(&job->step);
    pf__cuda_graph *graph = pf__cuda_graph_find(rs, &key);
    if (!graph && !(graph = pf__cuda_graph_capture(r, rs, job, &key, body))) return 1;
    if (pf__cuda_graph_check(r, graph, &job->step)) return 1;
    graph->used = ++rs->graph_clock;
    if (!pf__cuda_ok(r, pf_cuda_graph_launch(rs->cu, graph->graph))) {
        for (int i = 0; i < PF__CUDA_GRAPHS; i++) pf__cuda_graph_free(&rs->graphs[i]);
        return 1;
    }
    rs->x16_now = graph->x16_after; /* as the live step leaves it */
#ifdef PF_TESTING
    if (r->index == 0) pf_testing_cuda_graph_launches++;
#endif
    return 1;
}

static int pf__cuda_device_memory(int device, size_t *used, size_t *total) {
    size_t free_bytes = 0;
    if (pf_cuda_device_memory(device, &free_bytes, total) != PF_CUDA_OK || free_bytes > *total) return -1;
    *used = *total - free_bytes;
    return 0;
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
    .download_rows = pf__cuda_download_rows,
    .copy = pf__cuda_copy,
    .embed = pf__cuda_embed,
    .add_positions = pf__cuda_add_positions,
    .norm = pf__cuda_norm,
    .matmul = pf__cuda_matmul,
    .activation = pf__cuda_activation,
    .softcap = pf__cuda_softcap,
    .gated_activation = pf__cuda_gated_activation,
    .clamped_swiglu = pf__cuda_clamped_swiglu,
    .attention_sinks = 1,
    .add_residual = pf__cuda_add_residual,
    .scale = pf__cuda_scale,
    .gather_rows = pf__cuda_gather_rows,
    .depthwise_conv = pf__cuda_depthwise_conv,
    .funnel_bias = pf__cuda_funnel_bias,
    .reformer_attend = pf__cuda_reformer_attend,
    .ngram_attend = pf__cuda_ngram_attend,
    .multiply = pf__cuda_multiply,
    .span_conv = pf__cuda_span_conv,
    .scatter_add_rows = pf__cuda_scatter_add_rows,
    .head_norm = pf__cuda_head_norm,
    .scale_queries = pf__cuda_scale_queries,
    .clamp = pf__cuda_clamp,
    .qk_sum_squares = pf__cuda_qk_sum_squares,
    .qk_scale = pf__cuda_qk_scale,
    .rotary = pf__cuda_rotary,
    .kv_append = pf__cuda_kv_append,
    .attend = pf__cuda_attend,
    .latent_append = pf__cuda_latent_append,
    .latent_attend = pf__cuda_latent_attend,
    .disentangled_bias = pf__cuda_disentangled_bias,
    .all_reduce = pf__cuda_all_reduce,
    .reorder_rows = pf__cuda_reorder_rows,
    .device_memory = pf__cuda_device_memory,
    .prepare = pf__cuda_prepare,
    .cache_in_weight_dtype = 1,
    .argmax = pf__cuda_argmax,
    .add_residual_norm = pf__cuda_add_residual_norm,
    .bias_activation = pf__cuda_bias_activation,
    .run_decoder_step = pf__cuda_run_decoder_step,
    .top_k = pf__cuda_top_k,
    .top_k_max = PF_CUDA_TOP_K_MAX,
    .qkv_bias_in_attention = 1,
    .add_residual_biases = pf__cuda_add_residual_biases,
};

/* The CUDA devices the runtime sees; quiet (0) when the driver or the device is missing. */
PF_PRIVATE int pf__cuda_devices(void) {
    int count = 0;
    return pf_cuda_device_count(&count, NULL) == PF_CUDA_OK && count > 0 ? count : 0;
}

PF_PRIVATE const char *pf__cuda_unavailable_reason(void) {
    int count = 0;
    const char *reason = NULL;
    if (pf_cuda_device_count(&count, &reason) != PF_CUDA_OK) return reason ? reason : "the CUDA runtime failed";
    return count > 0 ? "a CUDA device is visible" : "no CUDA device is visible";
}

PF_PRIVATE const pf__backend *pf__cuda_backend(void) { return &pf__cuda_table; }
#else
PF_PRIVATE int pf__cuda_devices(void) { return 0; }
PF_PRIVATE const char *pf__cuda_unavailable_reason(void) { return "this build has no CUDA backend (build with nvcc)"; }
PF_PRIVATE const pf__backend *pf__cuda_backend(void) { return NULL; }
#endif

