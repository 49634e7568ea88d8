#include "internal.h"
/* =============================================================================================== */
/* parallel groups                                                                                 */
/* =============================================================================================== */

PF_PRIVATE void pf__log(const pf_model *m, pf_log_level level, const char *fmt, ...) {
    if (!m->load_options.log || level > m->load_options.log_level) return;
    char line[256];
    va_list args;
    va_start(args, fmt);
    vsnprintf(line, sizeof line, fmt, args);
    va_end(args);
    m->load_options.log(m->load_options.log_user, level, line);
}

static void pf__log_memory_table(const pf_model *m, pf_log_level level) {
    const pf__group *g = m->group;
    pf__log(m, level, "rank  device  heads  mlp    weights(B)   kv-cache(B)  scratch(B)   total(B)     device used/total(B)");
    for (int i = 0; i < g->num_ranks; i++) {
        const pf__rank *r = &g->ranks[i];
        pf_memory_info info;
        pf_get_memory_info(m, i, &info);
        pf__log(m, level, "%-5d %-7s %-6d %-6d %-12zu %-12zu %-12zu %-12zu %zu/%zu", i, r->backend->name, r->share.heads,
                r->share.mlp_width, info.weights, info.kv_cache, info.scratch, info.allocated, info.device_used,
                info.device_total);
    }
    if (m->speech) pf__log(m, level, "host  the speech front end (on the calling thread) %zu", pf__speech_bytes(m->speech));
}

/* The name of the first operation a backend lacks, or NULL: a table that grew an entry its
   backend does not fill yet is refused, not called through NULL. */
static const char *pf__backend_missing(const pf__backend *b) {
#define PF__NEED(op) if (!b->op) return #op;
    PF__NEED(rank_begin) PF__NEED(rank_end) PF__NEED(alloc) PF__NEED(free) PF__NEED(upload) PF__NEED(download)
    PF__NEED(download_rows)
    PF__NEED(copy) PF__NEED(embed) PF__NEED(add_positions) PF__NEED(norm) PF__NEED(matmul) PF__NEED(activation)
    PF__NEED(gated_activation) PF__NEED(add_residual) PF__NEED(rotary) PF__NEED(kv_append) PF__NEED(attend) PF__NEED(all_reduce)
    PF__NEED(reorder_rows) PF__NEED(device_memory)
#undef PF__NEED
    return NULL;
}

/* A group that cannot start: every process is told (across processes, the others would wait for
   its ranks in the setup job), then it is undone; returns res. */
static pf_result pf__group_abandon(pf__group *g, pf_result res) {
    if (g->mpi) pf__mpi_agree(g, 0);
    pf__group_destroy(g);
    return res;
}

/* Starts num_ranks rank threads on `backend` and has each slice its weights from m->sources;
   across processes (o->across_processes), each process num_ranks of them. */
PF_PRIVATE pf_result pf__group_create(pf_model *m, int num_ranks, const pf_parallel_options *o, const pf__backend *backend,
                                  pf__dtype dtype) {
    const pf__config *c = &m->config;
    pf_result changed = pf__maps_unchanged(&m->st, pf__error_buffer(m), PF__MESSAGE_SIZE); /* the ranks read them now */
    if (changed) return changed;
    const char *missing = pf__backend_missing(backend);
    if (missing)
        return pf__format(pf__error_buffer(m), PF__MESSAGE_SIZE, PF_ERROR_UNSUPPORTED, "the %s backend lacks the %s operation",
                          backend->name, missing);
    /* the ops only some families use (the CPU and CUDA backends have them all) */
    const char *family_ops = c->conv_kernel && (!backend->depthwise_conv || !backend->multiply || !backend->span_conv)
                                 ? "ConvBERT's span-based dynamic convolution"
                             : c->funnel && (!backend->funnel_bias || !backend->gather_rows) ? "Funnel's relative attention and pooling"
                             : c->transfo_xl && !backend->funnel_bias ? "Transformer-XL's relative attention"
                             : c->ngram && !backend->ngram_attend ? "ProphetNet's n-gram self-attention"
                             : c->reformer && !backend->reformer_attend ? "Reformer's LSH and local attention"
                             : c->entity_vocab_size && !backend->gather_rows ? "LUKE's entity embeddings and attention"
                                                                             : NULL;
    if (family_ops)
        return pf__format(pf__error_buffer(m), PF__MESSAGE_SIZE, PF_ERROR_UNSUPPORTED, "%s has no kernels on the %s backend",
                          family_ops, backend->name);
    pf__group *g = (pf__group *)calloc(1, sizeof *g);
    if (!g) return pf__format(pf__error_buffer(m), PF__MESSAGE_SIZE, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    pthread_mutex_init(&g->mutex, NULL);
    pthread_cond_init(&g->work, NULL);
    pthread_cond_init(&g->done, NULL);
    pthread_cond_init(&g->barrier_cond, NULL);
    g->model = m;
    g->backend = backend;
    g->options = *o;
    g->options.device_ids = NULL; /* not ours to keep */
    g->dtype = dtype;
    g->cache_dtype = backend->cache_in_weight_dtype ? dtype
                     : o->kv_cache_dtype == PF_DTYPE_F16   ? PF__DTYPE_F16
                     : o->kv_cache_dtype == PF_DTYPE_BF16  ? PF__DTYPE_BF16
                                                           : PF__DTYPE_F32;
    g->num_ranks = g->world_ranks = num_ranks;
    g->barrier_spin = num_ranks <= pf__online_cpus();
    g->stages = 1;
    g->stage_end_layer = c->num_layers;
    if (o->across_processes) {
        pf_result res = pf__mpi_group_begin(g, pf__error_buffer(m), PF__MESSAGE_SIZE);
        if (res) {
            pf__group_destroy(g);
            return res;
        }
    }
    g->max_batch = o->max_batch ? o->max_batch : 1;
    /* an encoder longer than its decoder (Whisper) needs room for its frames */
    int positions = c->encoder_max_positions > c->max_positions ? c->encoder_max_positions : c->max_positions;
    g->cache_len = o->max_sequence_length ? o->max_sequence_length : positions;
    /* Scratch for the tokens of one step: a whole batch of full sequences for an encoder (its
       attention needs every position at once), a chunk of positions for a decoder (longer prompts
       run in chunks, pf__forward_in_chunks), never less than one token per sequence. */
    g->max_tokens = (size_t)g->max_batch * g->cache_len;
    size_t chunk = o->prefill_chunk > 0 ? (size_t)o->prefill_chunk : 512;
    if (chunk < (size_t)g->max_batch) chunk = (size_t)g->max_batch;
    if (pf__archs[c->arch].kind == PF__KIND_DECODER && g->max_tokens > chunk) g->max_tokens = chunk;
    g->logit_rows = g->max_tokens < 64 ? g->max_tokens : (g->max_batch > 64 ? (size_t)g->max_batch : 64);
    g->progress = o->progress ? o->progress : m->load_options.progress;
    g->progress_user = o->progress ? o->progress_user : m->load_options.progress_user;
    for (size_t i = 0; i < pf__num_slots(c); i++) { /* split tensors read once, replicated ones by every rank */
        const pf__source *src = &m->sources[i];
        if (src->data)
            g->progress_total += (uint64_t)pf__weight_bytes(src->dtype, src->rows, src->cols) *
                                 (src->split == PF__SPLIT_NONE ? (uint64_t)num_ranks : 1);
    }
    g->ranks = (pf__rank *)calloc((size_t)num_ranks, sizeof *g->ranks);
    g->reduce_in = (float **)calloc((size_t)num_ranks, sizeof *g->reduce_in);
    g->room_needed = (size_t *)calloc((size_t)num_ranks, sizeof *g->room_needed);
    g->lm_rows = (size_t *)calloc((size_t)g->world_ranks, sizeof *g->lm_rows);
#ifdef PF_TESTING
    g->collectives = (struct pf__collective *)calloc((size_t)num_ranks, sizeof *g->collectives);
    if (!g->collectives)
        return pf__group_abandon(g, pf__format(pf__error_buffer(m), PF__MESSAGE_SIZE, PF_ERROR_OUT_OF_MEMORY, "out of memory"));
#endif
    size_t logit_floats = (size_t)g->max_batch * c->vocab_size;
    float *logits = (float *)realloc(m->logits, logit_floats * sizeof(float));
    if (logits) { /* zeros rather than garbage for a row read before a forward writes it */
        m->logits = logits;
        memset(logits, 0, logit_floats * sizeof(float));
    }
    g->zero_ids = (int32_t *)calloc(g->max_tokens > (size_t)g->max_batch ? g->max_tokens : (size_t)g->max_batch,
                                    sizeof(int32_t)); /* a step's tokens of id 0 (ERNIE's task) */
    if (c->disentangled) { /* DeBERTa's relative embeddings, read as a table's rows 0..2 span - 1 */
        g->rel_ids = (int32_t *)malloc(2 * (size_t)c->rel_span * sizeof(int32_t));
        for (int i = 0; g->rel_ids && i < 2 * c->rel_span; i++) g->rel_ids[i] = i;
    }
    /* expert slicing where asked, or by default where whole experts would leave ranks without any */
    int slice_experts = o->expert_split == PF_EXPERT_SPLIT_COLUMNS ||
                        (o->expert_split == PF_EXPERT_SPLIT_AUTO && c->num_experts > 0 && c->num_experts < g->world_ranks);
    if (backend->argmax) g->choices = (pf__choice *)calloc((size_t)g->world_ranks * g->max_batch, sizeof *g->choices);
    if (!g->ranks || !g->reduce_in || !g->room_needed || !g->lm_rows || !logits || !g->zero_ids ||
        (c->disentangled && !g->rel_ids) || (backend->argmax && !g->choices))
        return pf__group_abandon(g, pf__format(pf__error_buffer(m), PF__MESSAGE_SIZE, PF_ERROR_OUT_OF_MEMORY, "out of memory"));
    for (int i = 0; i < num_ranks; i++) {
        pf__rank *r = &g->ranks[i];
        r->group = g;
        r->index = i;
        r->world = g->first_rank + i;
        r->backend = backend;
        r->device = o->device_ids ? o->device_ids[i] : i;
        r->share = pf__share_for(c, r->world, g->world_ranks, slice_experts);
    }
    if (backend->group_begin) {
        pf_result res = backend->group_begin(g, pf__error_buffer(m), PF__MESSAGE_SIZE);
        if (res) return pf__group_abandon(g, res);
    }
    for (int i = 0; i < num_ranks; i++) {
        pf__rank *r = &g->ranks[i];
        if (pthread_create(&r->thread, NULL, pf__rank_main, r) != 0)
            return pf__group_abandon(g, pf__format(pf__error_buffer(m), PF__MESSAGE_SIZE, PF_ERROR_OUT_OF_MEMORY,
                                                   "cannot start rank thread %d", i));
        g->threads_started++;
    }
    if (g->mpi && !pf__mpi_agree(g, 1)) {
        pf__group_destroy(g);
        return pf__format(pf__error_buffer(m), PF__MESSAGE_SIZE, PF_ERROR_DEVICE, "across_processes: another process "
                          "could not start its ranks");
    }
    m->group = g;
    pf_result res = pf__group_run(g, PF__JOB_SETUP, NULL);
    if (res) {
        m->group = NULL;
        pf__group_destroy(g);
        return res;
    }
    for (int i = 0; i < num_ranks; i++) {
        const pf__rank *r = &g->ranks[i];
        g->lm_rows[r->world] = r->weights ? r->weights[PF__SLOT_LM_HEAD].rows : 0;
    }
    for (int k = 0; g->mpi && !res && k < g->world_ranks; k++) /* the other processes' ranks' */
        res = pf__mpi_broadcast_rows(g, k, &g->lm_rows[k], 1, sizeof *g->lm_rows, 0, pf__error_buffer(m), PF__MESSAGE_SIZE);
    if (res) {
        m->group = NULL;
        pf__group_destroy(g);
        return res;
    }
    if (g->mpi) pf__mpi_group_ready(g);
    if (g->progress) g->progress(g->progress_user, g->progress_total, g->progress_total);
    pf__log_memory_table(m, o->verbose ? PF_LOG_INFO : PF_LOG_DEBUG);
    if (g->world_ranks > c->num_kv_heads)
        pf__log(m, PF_LOG_INFO, "%d ranks outnumber the %d key/value heads: ranks share them, each holding a copy",
                g->world_ranks, c->num_kv_heads);
    if (c->num_heads % g->world_ranks)
        pf__log(m, PF_LOG_INFO, "%d heads do not divide by %d ranks: the ranks hold different head counts", c->num_heads,
                g->world_ranks);
    return PF_OK;
}

