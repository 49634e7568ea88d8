#include "internal.h"
/* =============================================================================================== */
/* what the backends share: rank failures, the barrier, the all-reduce, rank allocations          */
/* =============================================================================================== */

/* Records the rank's first failure and wakes every rank waiting in a barrier, so none hangs. */
PF_PRIVATE void pf__rank_fail(pf__rank *r, pf_result code, const char *fmt, ...) {
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

/* A pause in a spin loop: lets the core's other hardware thread run and saves power. */
static void pf__spin_pause(void) {
#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
    __builtin_ia32_pause();
#elif (defined(__GNUC__) || defined(__clang__)) && defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static uint64_t pf__monotonic_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Waits for every rank; returns -1 (at once, and for every waiter) if any rank failed.
   A tensor-parallel decode step meets here twice an all-reduce, a few dozen times a token, and
   the ranks arrive within microseconds of each other: waking a thread asleep on a condition
   variable costs tens of microseconds (more in a virtual machine), which was a quarter of a
   2-rank GPT-2 decode step. So a waiter first spins on the generation for up to
   PF__BARRIER_SPIN_NS, then sleeps; it spins only when every rank has a core of its own
   (g->barrier_spin), since a spinning rank would otherwise hold the core a late one needs. The
   last rank to arrive bumps the generation under the mutex and wakes the sleepers, if any. */
#define PF__BARRIER_SPIN_NS 100000u
PF_PRIVATE int pf__barrier(pf__group *g) {
    if (PF__LOAD_FLAG(g->aborted)) return -1;
    uint64_t generation = __atomic_load_n(&g->barrier_generation, __ATOMIC_ACQUIRE);
    if (__atomic_add_fetch(&g->barrier_count, 1, __ATOMIC_ACQ_REL) == g->num_ranks) {
        __atomic_store_n(&g->barrier_count, 0, __ATOMIC_RELAXED); /* ordered before the release below */
        pthread_mutex_lock(&g->mutex);
        __atomic_store_n(&g->barrier_generation, generation + 1, __ATOMIC_RELEASE);
        if (g->barrier_sleepers) pthread_cond_broadcast(&g->barrier_cond);
        pthread_mutex_unlock(&g->mutex);
        return PF__LOAD_FLAG(g->aborted) ? -1 : 0;
    }
    if (g->barrier_spin) {
        uint64_t start = pf__monotonic_ns();
        for (unsigned spins = 1;; spins++) {
            if (__atomic_load_n(&g->barrier_generation, __ATOMIC_ACQUIRE) != generation || PF__LOAD_FLAG(g->aborted))
                return PF__LOAD_FLAG(g->aborted) ? -1 : 0;
            pf__spin_pause();
            if (spins % 64 == 0 && pf__monotonic_ns() - start > PF__BARRIER_SPIN_NS) break;
        }
    }
    pthread_mutex_lock(&g->mutex);
    g->barrier_sleepers++;
    while (__atomic_load_n(&g->barrier_generation, __ATOMIC_ACQUIRE) == generation && !g->aborted)
        pthread_cond_wait(&g->barrier_cond, &g->mutex);
    g->barrier_sleepers--;
    int failed = g->aborted;
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
PF_PRIVATE void pf__collective_check(pf__rank *r, const char *site, size_t count) {
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

PF_PRIVATE void pf__rank_free_all(pf__rank *r) {
    for (size_t i = 0; i < r->num_allocations; i++) r->backend->free(r, r->allocations[i].ptr);
    free(r->allocations);
    free(r->weights);
    free(r->routing);
    free(r->trigram_rows);
    free(r->entity_gather);
    free(r->funnel_pads), free(r->funnel_types), free(r->funnel_host_ints), free(r->funnel_rows), free(r->funnel_scales);
    free(r->funnel_sinusoid_host), free(r->txl_logits_host);
    free(r->stream_pads);
    r->stream_pads = NULL;
    pf__reformer_host_free(r->reformer_host);
    r->reformer_host = NULL;
    r->routing = NULL;
    r->trigram_rows = NULL;
    r->entity_gather = NULL;
    r->funnel_pads = NULL, r->funnel_types = NULL, r->funnel_host_ints = NULL, r->funnel_rows = NULL;
    r->funnel_scales = NULL, r->funnel_sinusoid_host = NULL, r->txl_logits_host = NULL;
    r->allocations = NULL;
    r->weights = NULL;
    r->num_allocations = r->allocations_cap = 0;
    memset(r->bytes, 0, sizeof r->bytes);
}
