#include "internal.h"
/* =============================================================================================== */
/* rank threads, barrier and all-reduce                                                            */
/* =============================================================================================== */

#ifdef PF_TESTING
/* Test builds download the logits of a step whose tokens the devices chose too, and the
   generation checks each such token against pf__argmax (or pf__sample) of them; a test sets it
   to 0 to run a release build's path (no logits unless the host needs them). */
int pf_testing_check_device_choices = 1;
#else
#endif

PF_PRIVATE size_t pf__num_slots(const pf__config *c) {
    return PF__SLOT_FIRST_LAYER + (size_t)c->num_layers * PF__LAYER_SLOTS;
}

PF_PRIVATE size_t pf__slot_index(pf__slot slot, int layer) {
    return slot < PF__SLOT_FIRST_LAYER ? (size_t)slot
                                       : PF__SLOT_FIRST_LAYER + (size_t)layer * PF__LAYER_SLOTS + (slot - PF__SLOT_FIRST_LAYER);
}

PF_PRIVATE void pf__group_abort(pf__group *g) {
    pthread_mutex_lock(&g->mutex);
    PF__STORE_FLAG(g->aborted, 1);
    pthread_cond_broadcast(&g->barrier_cond);
    pthread_mutex_unlock(&g->mutex);
}

/* Waits for every rank; returns -1 (at once, and for every waiter) if any rank failed. */
PF_PRIVATE int pf__barrier(pf__group *g) {
    pthread_mutex_lock(&g->mutex);
    int failed = g->aborted;
    if (!failed) {
        uint64_t generation = g->barrier_generation;
        if (++g->barrier_count == g->num_ranks) {
            g->barrier_count = 0;
            g->barrier_generation++;
            pthread_cond_broadcast(&g->barrier_cond);
        } else {
            while (generation == g->barrier_generation && !g->aborted) pthread_cond_wait(&g->barrier_cond, &g->mutex);
        }
        failed = g->aborted;
    }
    pthread_mutex_unlock(&g->mutex);
    return failed ? -1 : 0;
}

/* Read between operations and in spin loops: an atomic load, not the group mutex, so that ranks
   that wait do not contend with the ones that work. */
PF_PRIVATE int pf__rank_failed(pf__rank *r) {
    return r->error || PF__LOAD_FLAG(r->group->aborted);
}

#ifdef PF_TESTING
/* Test hook: rank pf_testing_skip_reduce_rank skips its pf_testing_skip_reduce_countdown-th
   all-reduce, so that the tests can see pf__collective_check catch a rank that does. */
int pf_testing_skip_reduce_rank = -1, pf_testing_skip_reduce_countdown = 0;

/* Every rank must enter the same collectives in the same order with the same sizes, decided from
   facts all ranks share: a rank that enters one the others skip pairs its all-reduce with a
   different one (wrong sums, reads past the smaller buffer), and waits forever for the last.
   Test builds check it before each collective and at the end of each job (which counts as one,
   so an extra collective on one rank meets the others' end): each rank publishes what it enters,
   and after a barrier compares every rank's entry with its own. */
static void pf__collective_check(pf__rank *r, const char *site, size_t count) {
    pf__group *g = r->group;
    /* after a failure, entries are no longer fenced by barriers: leave them */
    if (g->num_ranks == 1 || pf__rank_failed(r)) return;
    g->collectives[r->index].site = site;
    g->collectives[r->index].count = count;
    if (pf__barrier(g)) return;
    for (int k = 0; k < g->num_ranks; k++) {
        const struct pf__collective *other = &g->collectives[k];
        if (strcmp(other->site, site) != 0 || other->count != count) {
            pf__rank_fail(r, PF_ERROR_DEVICE, "collective mismatch: rank %d enters %s (%zu floats) while rank %d enters %s (%zu floats)",
                          r->index, site, count, k, other->site, other->count);
            return;
        }
    }
    pf__barrier(g); /* the entries stay until every rank has compared them */
}
#endif

/* x = the sum of x over all ranks. Every rank calls it at the same point of the forward pass;
   site names that point for pf__collective_check. */
PF_PRIVATE void pf__all_reduce(pf__rank *r, float *x, size_t count, const char *site) {
#ifdef PF_TESTING
    if (r->index == pf_testing_skip_reduce_rank && --pf_testing_skip_reduce_countdown == 0) return;
    pf__collective_check(r, site, count);
#else
    (void)site;
#endif
    r->backend->all_reduce(r, x, count);
}

/* Allocations go through here so that pf_memory_allocated is exact. Zero bytes give NULL. */
PF_PRIVATE void *pf__rank_alloc(pf__rank *r, size_t bytes) {
    if (!bytes || r->error) return NULL;
    if (r->counting) {
        r->counted += bytes;
        return NULL;
    }
    if (r->num_allocations == r->allocations_cap) {
        size_t cap = r->allocations_cap ? 2 * r->allocations_cap : 64;
        pf__allocation *grown = (pf__allocation *)realloc(r->allocations, cap * sizeof *grown);
        if (!grown) {
            pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory");
            return NULL;
        }
        r->allocations = grown;
        r->allocations_cap = cap;
    }
    void *ptr = r->backend->alloc(r, bytes);
    if (!ptr) {
        pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "%s: cannot allocate %zu bytes", r->backend->name, bytes);
        return NULL;
    }
    r->allocations[r->num_allocations].ptr = ptr;
    r->allocations[r->num_allocations].bytes = bytes;
    r->num_allocations++;
    r->bytes[r->allocating] += bytes;
    return ptr;
}

static void pf__rank_free_all(pf__rank *r) {
    for (size_t i = 0; i < r->num_allocations; i++) r->backend->free(r, r->allocations[i].ptr);
    free(r->allocations);
    free(r->weights);
    r->allocations = NULL;
    r->weights = NULL;
    r->num_allocations = r->allocations_cap = 0;
    memset(r->bytes, 0, sizeof r->bytes);
}

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

/* Hands a job to every rank and waits for all of them; the first rank error becomes the
   model's message. */
PF_PRIVATE pf_result pf__group_run(pf__group *g, pf__job_kind kind, const pf__job *job) {
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
    for (int i = 0; i < g->num_ranks; i++) {
        pf__rank *r = &g->ranks[i];
        if (r->error)
            return pf__format(pf__error_buffer(g->model), PF__MESSAGE_SIZE, r->error, "rank %d (%s): %s", i,
                              r->backend->name, r->message);
    }
    return PF_OK;
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
    pthread_mutex_destroy(&g->mutex);
    pthread_cond_destroy(&g->work);
    pthread_cond_destroy(&g->done);
    pthread_cond_destroy(&g->barrier_cond);
    free(g->ranks);
    free(g->reduce_in);
    free(g->room_needed);
    free(g->zero_ids);
    free(g->choices);
#ifdef PF_TESTING
    free(g->collectives);
#endif
    free(g);
}

/* The heads and MLP columns of rank r of n: contiguous, as even as the sizes allow. Key/value
   heads follow the query heads: a rank holds every one its query heads read, so with fewer
   key/value heads than ranks they are replicated. */
PF_PRIVATE pf__share pf__share_for(const pf__config *c, int r, int n) {
    pf__share s;
    int group = c->num_heads / c->num_kv_heads;
    s.head_begin = (int)((long long)r * c->num_heads / n);
    s.heads = (int)((long long)(r + 1) * c->num_heads / n) - s.head_begin;
    s.kv_begin = s.head_begin / group;
    s.kv_heads = s.heads ? (s.head_begin + s.heads - 1) / group + 1 - s.kv_begin : 0;
    s.mlp_begin = (int)((long long)r * c->intermediate_size / n);
    s.mlp_width = (int)((long long)(r + 1) * c->intermediate_size / n) - s.mlp_begin;
    s.vocab_begin = (int)((long long)r * c->vocab_size / n);
    s.vocab_rows = (int)((long long)(r + 1) * c->vocab_size / n) - s.vocab_begin;
    return s;
}

