#include "internal.h"
/* =============================================================================================== */
/* rank threads: the job loop, running a job on a group (in chunks past the scratch), ending it   */
/* =============================================================================================== */

#ifdef PF_TESTING
/* Test builds download the logits of a step whose tokens the devices chose too, and the
   generation checks each such token against pf__argmax (or pf__sample) of them; a test sets it
   to 0 to run a release build's path (no logits unless the host needs them). */
int pf_testing_check_device_choices = 1;
#else
#endif

PF_PRIVATE void *pf__rank_main(void *arg) {
    pf__rank *r = (pf__rank *)arg;
    pf__group *g = r->group;
    uint64_t seen = 0;
    int began = r->backend->rank_begin(r) == 0; /* e.g. cudaSetDevice: before anything else */
    for (;;) {
        pthread_mutex_lock(&g->mutex);
        while (g->job_seq == seen) pthread_cond_wait(&g->work, &g->mutex);
        seen = g->job_seq;
        pf__job job = g->job;
        pthread_mutex_unlock(&g->mutex);
        if (job.kind == PF__JOB_QUIT) break;
        if (!began) pf__rank_fail(r, PF_ERROR_DEVICE, "%s: cannot start rank %d", r->backend->name, r->index);
        else if (job.kind == PF__JOB_SETUP) pf__rank_setup(r);
        else if (job.kind == PF__JOB_FORWARD) pf__rank_forward(r, &job);
        else if (job.kind == PF__JOB_LOGITS) pf__rank_logits_again(r, &job);
        else if (job.kind == PF__JOB_GATHER) pf__rank_gather(r);
        else if (job.kind == PF__JOB_REORDER) pf__rank_reorder(r, &job);
#ifdef PF_TESTING
        pf__collective_check(r, "the end of the job", 0);
#endif
        /* the device's memory, asked on this thread (whose device is current: asking from the
           caller's would make a CUDA context there) */
        size_t used = 0, total = 0;
        int known = began && r->backend->device_memory(r->device, &used, &total) == 0;
        pthread_mutex_lock(&g->mutex);
        r->device_used = known ? used : 0;
        r->device_total = known ? total : 0;
        if (++g->jobs_done == g->num_ranks) pthread_cond_signal(&g->done);
        pthread_mutex_unlock(&g->mutex);
    }
    pf__rank_free_all(r);
    if (began) r->backend->rank_end(r);
    return NULL;
}

/* Across processes, after a job every process agreed succeeded: what each rank wrote into this
   process's host arrays (its vocabulary columns of the logits, its choices or candidates; world rank
   0 the encoders' outputs) is broadcast from that rank's process, so that every process holds the
   whole outputs, as one process would, and its host code (sampling, beams) goes the same way. */
static pf_result pf__group_share_outputs(pf__group *g, const pf__job *job, char *error) {
    const pf__config *c = &g->model->config;
    size_t vocab = (size_t)c->vocab_size, per_row = job->candidates_per_row;
    pf__host_outputs o;
    pf__job_host_outputs(g, job, &o);
    pf_result res = PF_OK;
    for (int k = 0; !res && k < g->world_ranks; k++) {
        if (o.vocab_rows && job->logits) /* the vocabulary split does not depend on the experts' */
            res = pf__mpi_broadcast_rows(g, k, job->logits + pf__share_for(c, k, g->world_ranks, 0).vocab_begin, o.vocab_rows,
                                         g->lm_rows[k] * sizeof(float), vocab * sizeof(float), error, PF__MESSAGE_SIZE);
        if (!res && o.choice_rows)
            res = pf__mpi_broadcast_rows(g, k, g->choices + (size_t)k * g->max_batch, 1, o.choice_rows * sizeof(pf__choice), 0,
                                         error, PF__MESSAGE_SIZE);
        if (!res && o.candidate_rows)
            res = pf__mpi_broadcast_rows(g, k, job->candidates + (size_t)k * o.candidate_rows * per_row, 1,
                                         o.candidate_rows * per_row * sizeof(pf__choice), 0, error, PF__MESSAGE_SIZE);
    }
    for (int i = 0; !res && i < o.num_by_first_rank; i++)
        res = pf__mpi_broadcast_rows(g, 0, o.by_first_rank[i].data, 1, o.by_first_rank[i].bytes, 0, error, PF__MESSAGE_SIZE);
    return res;
}

/* Hands a job to every rank and waits for all of them; the first rank error becomes the
   model's message. Across processes, every process returns the same result (the first failing
   process's error) and, on success, the same outputs. */
PF_PRIVATE pf_result pf__group_run(pf__group *g, pf__job_kind kind, const pf__job *job) {
    if (g->mpi) { /* process 0 of a driven group sends the job to its followers first */
        char message[PF__MESSAGE_SIZE];
        pf_result sent = pf__mpi_begin_job(g, kind, job, message, sizeof message);
        if (sent) return pf__format(pf__error_buffer(g->model), PF__MESSAGE_SIZE, sent, "%s", message);
    }
    pthread_mutex_lock(&g->mutex);
    if (job) g->job = *job;
    g->job.kind = kind;
    g->jobs_done = 0;
    PF__STORE_FLAG(g->aborted, 0);
    g->barrier_count = 0;
    for (int i = 0; i < g->num_ranks; i++) g->ranks[i].error = PF_OK;
    g->job_seq++;
    pthread_cond_broadcast(&g->work);
    uint64_t reported = UINT64_MAX;
    while (g->jobs_done < g->threads_started) {
        if (kind != PF__JOB_SETUP || !g->progress) {
            pthread_cond_wait(&g->done, &g->mutex);
            continue;
        }
        /* weights being copied: report on this thread, five times a second */
        uint64_t done = g->progress_done, total = g->progress_total;
        if (done != reported) {
            reported = done;
            pthread_mutex_unlock(&g->mutex);
            g->progress(g->progress_user, done, total);
            pthread_mutex_lock(&g->mutex);
        }
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 200 * 1000000L;
        if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&g->done, &g->mutex, &until);
    }
    pthread_mutex_unlock(&g->mutex);
    pf_result res = PF_OK;
    char message[PF__MESSAGE_SIZE] = "";
    for (int i = 0; i < g->num_ranks && !res; i++) {
        pf__rank *r = &g->ranks[i];
        if (r->error)
            res = pf__format(message, sizeof message, r->error, "rank %d (%s): %s", r->world, r->backend->name, r->message);
    }
    if (g->mpi) res = pf__mpi_end_job(g, res, message, sizeof message);
    if (g->mpi && !res && (kind == PF__JOB_FORWARD || kind == PF__JOB_LOGITS))
        res = pf__group_share_outputs(g, &g->job, message);
    return res ? pf__format(pf__error_buffer(g->model), PF__MESSAGE_SIZE, res, "%s", message) : PF_OK;
}

/* A decoder's forward step, in chunks of positions when batch x length exceeds the tokens the
   ranks' scratch holds (a long prompt): each chunk appends to the KV cache after the one before,
   with the step's rotary frequencies (as transformers computes the whole prompt's), and the
   logits of its positions (all of them, or each row's last, which the last chunk writes).
   In pipeline stages the chunks run in one job (job.chunk_positions, pf__rank_forward): stage s
   passes chunk c on and starts chunk c + 1 while stage s + 1 works on c, so C chunks through S
   stages take C + S - 1 chunk-stage times instead of C x S; a job a chunk would end each one at
   the last stage. Not for every position's logits of several rows, whose chunks are not
   contiguous in the step's [batch][seq_len] output. */
PF_PRIVATE pf_result pf__forward_in_chunks(pf_model *m, const pf__job *job) {
    const pf__group *g = m->group;
    const pf__step *s = &job->step;
    size_t per_chunk = g->max_tokens / (size_t)s->batch;
    if ((size_t)s->batch * s->seq_len <= g->max_tokens) return pf__group_run(m->group, PF__JOB_FORWARD, job);
    if (g->stages > 1 && (!job->all_positions || s->batch == 1)) {
        pf__job pipelined = *job;
        pipelined.chunk_positions = (int)per_chunk;
        return pf__group_run(m->group, PF__JOB_FORWARD, &pipelined);
    }
    size_t vocab = (size_t)m->config.vocab_size;
    int32_t *ids = (int32_t *)malloc((size_t)s->batch * per_chunk * sizeof(int32_t));
    float *logits = job->all_positions ? (float *)malloc((size_t)s->batch * per_chunk * vocab * sizeof(float)) : NULL;
    pf_result r = ids && (logits || !job->all_positions) ? PF_OK : PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    for (int first = 0; !r && first < s->seq_len; first += (int)per_chunk) {
        int len = s->seq_len - first < (int)per_chunk ? s->seq_len - first : (int)per_chunk;
        pf__job chunk = *job;
        for (int b = 0; b < s->batch; b++)
            memcpy(ids + (size_t)b * len, s->ids + (size_t)b * s->seq_len + first, (size_t)len * sizeof(int32_t));
        chunk.step.ids = ids;
        chunk.step.seq_len = len;
        chunk.step.past = s->past + first;
        chunk.step.segment_before = s->segment_before + first; /* Transformer-XL: one segment still */
        if (logits) chunk.logits = logits;
        r = pf__group_run(m->group, PF__JOB_FORWARD, &chunk);
        for (int b = 0; !r && logits && b < s->batch; b++) /* [batch][len] rows into [batch][seq_len] */
            memcpy(job->logits + ((size_t)b * s->seq_len + first) * vocab, logits + (size_t)b * len * vocab,
                   (size_t)len * vocab * sizeof(float));
    }
    free(ids);
    free(logits);
    return r;
}

PF_PRIVATE void pf__group_destroy(pf__group *g) {
    if (!g) return;
    if (g->threads_started) {
        pthread_mutex_lock(&g->mutex);
        g->job.kind = PF__JOB_QUIT;
        g->job_seq++;
        pthread_cond_broadcast(&g->work);
        pthread_mutex_unlock(&g->mutex);
        for (int i = 0; i < g->threads_started; i++) pthread_join(g->ranks[i].thread, NULL);
    }
    if (g->backend && g->backend->group_end) g->backend->group_end(g);
    pf__mpi_group_end(g);
    pthread_mutex_destroy(&g->mutex);
    pthread_cond_destroy(&g->work);
    pthread_cond_destroy(&g->done);
    pthread_cond_destroy(&g->barrier_cond);
    free(g->ranks);
    free(g->reduce_in);
    free(g->room_needed);
    free(g->lm_rows);
    free(g->zero_ids);
    free(g->rel_ids);
    free(g->choices);
#ifdef PF_TESTING
    free(g->collectives);
#endif
    free(g);
}

/* The heads, MLP columns and experts of rank r of n: contiguous, as even as the sizes allow: whole
   experts (expert parallelism; with fewer experts than ranks some hold none), or with slice_experts
   every expert's columns as a dense MLP's. Key/value
   heads follow the query heads: a rank holds every one its query heads read, so with fewer
   key/value heads than ranks they are replicated. */
PF_PRIVATE pf__share pf__share_for(const pf__config *c, int r, int n, int slice_experts) {
    pf__share s;
    int group = c->num_heads / c->num_kv_heads;
    s.head_begin = (int)((long long)r * c->num_heads / n);
    s.heads = (int)((long long)(r + 1) * c->num_heads / n) - s.head_begin;
    s.kv_begin = s.head_begin / group;
    s.kv_heads = s.heads ? (s.head_begin + s.heads - 1) / group + 1 - s.kv_begin : 0;
    s.mlp_begin = (int)((long long)r * c->intermediate_size / n);
    s.mlp_width = (int)((long long)(r + 1) * c->intermediate_size / n) - s.mlp_begin;
    s.expert_begin = slice_experts ? 0 : (int)((long long)r * c->num_experts / n);
    s.experts = slice_experts ? c->num_experts : (int)((long long)(r + 1) * c->num_experts / n) - s.expert_begin;
    s.expert_col_begin = slice_experts ? (int)((long long)r * c->moe_intermediate_size / n) : 0;
    s.expert_width = slice_experts ? (int)((long long)(r + 1) * c->moe_intermediate_size / n) - s.expert_col_begin
                                   : c->moe_intermediate_size;
    s.shared_begin = (int)((long long)r * c->shared_intermediate_size / n);
    s.shared_width = (int)((long long)(r + 1) * c->shared_intermediate_size / n) - s.shared_begin;
    s.vocab_begin = (int)((long long)r * c->vocab_size / n);
    s.vocab_rows = (int)((long long)(r + 1) * c->vocab_size / n) - s.vocab_begin;
    return s;
}

