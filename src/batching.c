#include "internal.h"
/* =============================================================================================== */
/* continuous batching                                                                             */
/* =============================================================================================== */

/* Greedy and sampling requests from any threads share the forward steps: a scheduler thread
   (started at a model's first such request) admits queued requests into free KV cache rows,
   prefills them, and then runs one decode step for every running row of every admitted request
   at a time; each request samples its own rows with its own options and seed, and leaves when
   they end. All running rows share a clock: the cache position of the next token. A request of
   prompt width W admitted at clock C puts its prompt at positions C - W .. C - 1, the positions
   before as left pads (tokens count their positions from the first real token), so each row
   computes exactly what it would alone; it is admitted only while that holds (W <= C, and its
   max_length fits from C - W) and otherwise waits for the running requests to end (the clock
   starts again at 0 when none runs). A streamed request's tokens are streamed on its caller's
   thread, and each step waits for every stream to have taken the step before. While it has
   requests to run, the scheduler holds the model's request lock: the other calls (beam search,
   encoder-decoders, pf_forward, pf_parallelize, ...) run in between, and a waiting one stops new
   admissions. */

#define PF__BATCH_QUEUE_MAX 1024   /* requests waiting at once by default; more get PF_ERROR_BUSY */
#ifdef PF_TESTING
int pf_testing_batch_rows; /* test hook: the most rows one batched decode step ran */
int pf_testing_stages_overlapped; /* test hook: micro-batched jobs in which 2 or more stages ran rows */
int pf_testing_batch_queued(pf_model *m); /* test hook: requests waiting in the batcher's queue */
int pf_testing_batch_queued(pf_model *m) {
    pthread_mutex_lock(&m->batcher_start); /* the batcher may be starting on another thread */
    pf__batcher *b = m->batcher;
    pthread_mutex_unlock(&m->batcher_start);
    if (!b) return 0;
    pthread_mutex_lock(&b->mutex);
    int n = b->queued;
    pthread_mutex_unlock(&b->mutex);
    return n;
}
#endif

/* Whether a request shares the steps: greedy or sampling on a decoder (streamed or not), without
   frequencies that depend on the length (dynamic NTK and LongRoPE: they follow the longest
   sequence of a step). */
static int pf__batchable(const pf_model *m, const pf_generate_options *o) {
    return pf__archs[m->config.arch].kind == PF__KIND_DECODER && o->num_beams == 1 && !m->config.transfo_xl && /* one row's memory */
           m->config.rope_type != PF__ROPE_DYNAMIC &&
           (m->config.rope_type != PF__ROPE_LONGROPE || /* a GGUF's rope_freqs: one list */
            !memcmp(m->config.rope_short_factor, m->config.rope_long_factor, sizeof m->config.rope_long_factor));
}

static void pf__batch_request_free(pf__batch_request *q) {
    pf__generation_free(&q->st);
    free(q->cache_rows), free(q->pads), free(q->delivered);
    q->cache_rows = q->pads = NULL;
    q->delivered = NULL;
}

/* Ends a request: its result (or failure), its rows given back, its caller woken. The batcher's
   mutex is held. */
static void pf__batch_finish(pf__batcher *b, pf__batch_request *q, pf_result r, const char *message) {
    for (int i = 0; q->cache_rows && i < q->st.num_rows; i++)
        if (q->cache_rows[i] >= 0) b->row_used[q->cache_rows[i]] = 0;
    q->error = r;
    if (r) snprintf(q->message, sizeof q->message, "%s", message);
    q->state = PF__BATCH_DONE;
    b->ended++;
    pthread_cond_broadcast(&b->done);
}

/* A request's set-up (the checks and lengths of an exclusive request), on the scheduler's thread
   with the request lock held. */
static pf_result pf__batch_prepare(pf_model *m, pf__batch_request *q) {
    pf_result r = pf__check_closing(m);
    if (!r) r = pf__ensure_group(m);
    if (r) return r;
    if ((r = pf__check_generates(m))) return r;
    if ((r = pf__check_generate_options(m, &q->options, q->st.batch))) return r;
    q->st.m = m;
    q->st.o = &q->options;
    if ((r = pf__generation_resolve(&q->st, q->prompts, q->lengths))) return r;
    if ((r = pf__generation_alloc(&q->st, q->prompts, q->lengths))) return r;
    size_t rows = (size_t)q->st.num_rows;
    q->cache_rows = (int *)malloc(rows * sizeof(int));
    q->pads = (int *)malloc(rows * sizeof(int));
    q->delivered = q->stream ? (int32_t *)malloc(rows * sizeof(int32_t)) : NULL;
    if (!q->cache_rows || !q->pads || (q->stream && !q->delivered))
        return PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; i < rows; i++) q->cache_rows[i] = -1;
    return PF_OK;
}

/* Whether the queue's head fits now: free rows for it, and (with requests running or admitted
   with it) its prompt and its whole generation inside the cache at the clock. */
static int pf__batch_fits(const pf__batcher *b, const pf__group *g, const pf__batch_request *q, int busy) {
    int free_rows = 0;
    for (int i = 0; i < g->max_batch; i++) free_rows += !b->row_used[i];
    if (free_rows < q->st.num_rows) return 0;
    if (!busy) return 1;
    return q->st.width <= b->clock && (long long)b->clock - q->st.width + q->st.max_length <= g->cache_len;
}

/* Where a shared step's forward leaves what the devices chose instead of the logits (b->choice):
   b->tokens when the backend can choose them and every live row of every request in the list
   (of micro-batch `group` alone, when >= 0) takes the plain arg-max; the ranks' top-k candidates
   when every live row samples from them (as many a row as the request needing most; all rows in
   one chunk of logits); else NULL. */
static const pf__device_choice *pf__batch_choose_on_devices(const pf_model *m, pf__batcher *b, pf__batch_request *list,
                                                            int group) {
    const pf__group *g = m->group;
    int argmax = g->backend->argmax != NULL, top_k = list != NULL;
    size_t rows = 0, per_row = 0;
    for (pf__batch_request *q = list; q; q = q->next) {
        if (group >= 0 && q->micro_group != group) continue;
        argmax = argmax && pf__generation_argmax_only(&q->st);
        top_k = top_k && q->st.device.per_row && pf__generation_top_k_only(&q->st);
        if (q->st.device.per_row > per_row) per_row = q->st.device.per_row;
        rows += (size_t)q->st.num_rows;
    }
    memset(&b->choice, 0, sizeof b->choice);
    if (argmax) {
        b->choice.tokens = b->tokens;
        return &b->choice;
    }
    size_t need = (size_t)g->world_ranks * rows * per_row;
    if (!top_k || rows > g->logit_rows) return NULL;
    if (need > b->candidates_cap) { /* out of memory: the logits, as without the op */
        pf__choice *grown = (pf__choice *)realloc(b->candidates, need * sizeof *grown);
        if (!grown) return NULL;
        b->candidates = grown;
        b->candidates_cap = need;
    }
    b->choice.candidates = b->candidates;
    b->choice.per_row = per_row;
    return &b->choice;
}

/* A request's share of a batched step (job): its logits and what the devices chose, from row
   offset of the step's. */
static void pf__batch_hand_out(pf_model *m, pf__batch_request *q, const pf__job *job, int offset) {
    q->st.logits = m->logits + (size_t)offset * m->config.vocab_size;
    q->st.device_tokens = job->tokens ? job->tokens + offset : NULL;
    memset(&q->st.device_candidates, 0, sizeof q->st.device_candidates);
    if (job->candidates)
        q->st.device_candidates = (pf__candidate_view){job->candidates, (size_t)pf__job_output_rows(m->group, job),
                                                       job->candidates_per_row, (size_t)offset, m->logits};
}

/* A request's sampling after a step, then (streaming) the tokens its live rows got handed to its
   caller, who streams them on its own thread before the next step. */
static pf_result pf__batch_sample(pf__batcher *b, pf__batch_request *q, int *finished) {
    for (int i = 0; q->stream && i < q->st.num_rows; i++) q->delivered[i] = q->st.rows[i].done ? -1 : 0;
    pf_result r = pf__generation_sample_step(&q->st, finished);
    if (r || !q->stream) return r;
    for (int i = 0; i < q->st.num_rows; i++)
        if (q->delivered[i] >= 0) q->delivered[i] = q->st.rows[i].tokens[q->st.rows[i].length - 1];
    pthread_mutex_lock(&b->mutex);
    q->to_deliver = 1;
    pthread_cond_broadcast(&b->done);
    pthread_mutex_unlock(&b->mutex);
    return PF_OK;
}

/* Before a step: every running request's tokens streamed (their callbacks run on their callers'
   threads: a step waits for the slowest), and the requests whose callback asked to stop ended with
   their results so far. Returns 0 instead, early, when requests arrived meanwhile: they are
   admitted first, so that streams sent together start together. */
static int pf__batch_await_streams(pf_model *m, pf__batcher *b) {
    pthread_mutex_lock(&b->mutex);
    for (;;) {
        int waiting = 0;
        for (pf__batch_request *q = b->running; q; q = q->next) waiting |= q->to_deliver;
        if (!waiting) break;
        if (b->arrived != b->admission_seen && !PF__LOAD_FLAG(m->exclusive_waiting)) {
            pthread_mutex_unlock(&b->mutex);
            return 0;
        }
        pthread_cond_wait(&b->streamed, &b->mutex);
    }
    for (pf__batch_request *q = b->running, **link = &b->running, *next; q; q = next) {
        next = q->next;
        if (!q->stop_asked) {
            link = &q->next;
            continue;
        }
        *link = next;
        pf_result r = pf__generation_results(&q->st, q->result);
        pf__batch_finish(b, q, r, r ? pf_error_message(m) : "");
    }
    pthread_mutex_unlock(&b->mutex);
    return 1;
}

/* Gives a request free cache rows, its prompt at the clock's positions. */
static void pf__batch_place(pf__batcher *b, pf__batch_request *q) {
    for (int i = 0, k = 0; i < q->st.num_rows; i++) {
        while (b->row_used[k]) k++;
        b->row_used[k] = 1;
        q->cache_rows[i] = k;
        q->pads[i] = b->clock - q->st.width + q->st.rows[i].pad;
    }
}

/* The prefill of the requests admitted together (one forward over all their rows, prompts
   right-aligned at the clock), and their first tokens. A request that ends there, or fails, is
   finished; the others run. */
static void pf__batch_prefill(pf_model *m, pf__batcher *b, pf__batch_request *admitted) {
    int rows = 0, width = 0;
    pf__job job = {0};
    for (pf__batch_request *q = admitted; q; q = q->next) {
        rows += q->st.num_rows;
        if (q->st.width > width) width = q->st.width;
    }
    int32_t *ids = (int32_t *)malloc((size_t)rows * width * sizeof(int32_t));
    int *pads = (int *)malloc((size_t)rows * sizeof(int)), *cache_rows = (int *)malloc((size_t)rows * sizeof(int));
    pf_result r = ids && pads && cache_rows ? PF_OK : PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    int n = 0;
    for (pf__batch_request *q = admitted; !r && q; q = q->next)
        for (int i = 0; i < q->st.num_rows; i++, n++) { /* each row's tokens end at the clock */
            const pf__row *row = &q->st.rows[i];
            int32_t *dst = ids + (size_t)n * width;
            for (int t = 0; t < width - q->st.width; t++) dst[t] = q->st.pad_token;
            memcpy(dst + width - q->st.width, row->tokens, (size_t)q->st.width * sizeof(int32_t));
            pads[n] = q->pads[i];
            cache_rows[n] = q->cache_rows[i];
        }
    if (!r) {
        job.step = (pf__step){.ids = ids,
                              .batch = rows,
                              .seq_len = width,
                              .past = b->clock - width,
                              .pad = pads,
                              .cache_rows = cache_rows,
                              .inv_freq = pf__rope_frequencies(m, width)};
        r = pf__forward_choosing(m, &job, pf__batch_choose_on_devices(m, b, admitted, -1));
    }
    free(ids), free(pads), free(cache_rows);
    int offset = 0;
    for (pf__batch_request *q = admitted, *next; q; q = next) {
        next = q->next;
        int finished = 0;
        pf_result qr = r;
        pf__batch_hand_out(m, q, &job, offset);
        offset += q->st.num_rows;
        if (!qr) qr = pf__batch_sample(b, q, &finished);
        if (!qr && finished) qr = pf__generation_results(&q->st, q->result);
        pthread_mutex_lock(&b->mutex);
        if (qr || finished) {
            pf__batch_finish(b, q, qr, qr ? pf_error_message(m) : "");
        } else {
            q->state = PF__BATCH_RUNNING;
            q->next = b->running;
            b->running = q;
        }
        pthread_mutex_unlock(&b->mutex);
    }
}

/* After a decode step (job): each running request of micro-group `group` (-1: every one), in the
   job's row order, takes its rows' logits and samples; requests that end are finished (the
   batcher's mutex is taken for that), the others keep running. */
static void pf__batch_take_step(pf_model *m, pf__batcher *b, const pf__job *job, int group) {
    int offset = 0;
    for (pf__batch_request *q = b->running, **link = &b->running; q;) {
        pf__batch_request *next = q->next;
        if (group >= 0 && q->micro_group != group) {
            link = &q->next;
            q = next;
            continue;
        }
        int finished = 0;
        pf__batch_hand_out(m, q, job, offset);
        offset += q->st.num_rows;
        pf_result qr = pf__batch_sample(b, q, &finished);
        if (!qr && finished) qr = pf__generation_results(&q->st, q->result);
        if (qr || finished) {
            pthread_mutex_lock(&b->mutex);
            *link = next;
            pf__batch_finish(b, q, qr, qr ? pf_error_message(m) : "");
            pthread_mutex_unlock(&b->mutex);
        } else {
            link = &q->next;
        }
        q = next;
    }
}

/* One decode step of every running row at the clock, then each request's sampling. Requests that
   end are finished (the batcher's mutex is taken for that). */
static pf_result pf__batch_step(pf_model *m, pf__batcher *b) {
    if (!pf__batch_await_streams(m, b) || !b->running) return PF_OK;
    int n = 0;
    for (pf__batch_request *q = b->running; q; q = q->next)
        for (int i = 0; i < q->st.num_rows; i++, n++) {
            const pf__row *row = &q->st.rows[i];
            b->ids[n] = row->tokens[row->length - 1];
            b->pads[n] = q->pads[i];
            b->cache_rows[n] = q->cache_rows[i];
        }
    pf__job job = {.step = {.ids = b->ids,
                            .batch = n,
                            .seq_len = 1,
                            .past = b->clock,
                            .pad = b->pads,
                            .cache_rows = b->cache_rows,
                            .inv_freq = pf__rope_frequencies(m, b->clock + 1)}};
    pf_result r = pf__forward_choosing(m, &job, pf__batch_choose_on_devices(m, b, b->running, -1));
    if (r) return r;
#ifdef PF_TESTING
    if (n > pf_testing_batch_rows) pf_testing_batch_rows = n;
#endif
    b->clock++;
    pf__batch_take_step(m, b, &job, -1);
    return PF_OK;
}

/* ---- micro-batches: decode steps of several groups in the pipeline stages at once ----

   With pipeline stages a step of every running row passes the stages one after another, each
   waiting for the one before. With two or more requests running, they run instead in groups (as
   many as the stages at most, requests whole, rows balanced): each job feeds one group's step to
   the first stage while stage s works on the group it took from stage s - 1 (which sent its hidden
   state in the job before), and the group leaving the last stage is sampled before the next job,
   which can feed it again. Each group keeps its own clock (its rows' cache position), so each row
   computes what it would in a step of every row: the same tokens, bit for bit. New requests enter
   through a step of every row, as without stages: the pipeline empties first (no group is fed
   unless behind another's clock, so all end at one clock), the prefill runs, and the requests are
   grouped again; so it does when groups emptied out while a regrouping would give more. */

/* Whether group k holds a running request. */
static int pf__batch_group_live(const pf__batcher *b, int k) {
    for (const pf__batch_request *q = b->running; q; q = q->next)
        if (q->micro_group == k) return 1;
    return 0;
}

static int pf__batch_running_requests(const pf__batcher *b) {
    int n = 0;
    for (const pf__batch_request *q = b->running; q; q = q->next) n++;
    return n;
}

/* Whether a queued request waits to be admitted (unless it did not fit last time and no request
   arrived or ended since: it would wait in any case). */
static int pf__batch_admission_waits(pf_model *m, pf__batcher *b) {
    pthread_mutex_lock(&b->mutex);
    int waits = b->queue && !PF__LOAD_FLAG(m->exclusive_waiting) && b->arrived + b->ended != b->admission_blocked;
    pthread_mutex_unlock(&b->mutex);
    return waits;
}

/* Whether the micro-batches should empty the pipeline and give way to steps of every row: fewer
   than two requests, fewer live groups than a regrouping would make, or a request to admit. */
static int pf__batch_micro_draining(pf_model *m, pf__batcher *b) {
    int requests = pf__batch_running_requests(b), live = 0, stages = m->group->stages;
    for (int k = 0; k < b->groups; k++) live += pf__batch_group_live(b, k);
    return requests < 2 || live < (requests < stages ? requests : stages) || pf__batch_admission_waits(m, b);
}

/* The running requests into groups at the clock: each to the group with the fewest rows. */
static void pf__batch_micro_begin(pf_model *m, pf__batcher *b) {
    int stages = m->group->stages, requests = pf__batch_running_requests(b);
    b->groups = requests < stages ? requests : stages;
    for (int k = 0; k < stages; k++) {
        b->group_clock[k] = b->clock;
        b->group_busy[k] = 0;
        b->stage_group[k] = -1;
        b->stage_rows[2 * k] = 0; /* rows a group holds, while they are counted */
    }
    for (pf__batch_request *q = b->running; q; q = q->next) {
        int fewest = 0;
        for (int k = 1; k < b->groups; k++)
            if (b->stage_rows[2 * k] < b->stage_rows[2 * fewest]) fewest = k;
        q->micro_group = fewest;
        b->stage_rows[2 * fewest] += q->st.num_rows;
    }
    b->micro = 1;
}

/* The group whose step enters the first stage next: an idle live one, the furthest behind first;
   while draining, only one behind another's clock (a busy group's counts its step in the stages).
   Its requests' tokens of the step before are streamed first, and those whose callback asked to
   stop end (a group they emptied is passed over). -1: none. */
static int pf__batch_micro_next(pf_model *m, pf__batcher *b, int draining) {
    for (;;) {
        int next = -1, ahead = INT_MIN;
        for (int k = 0; k < b->groups; k++)
            if (pf__batch_group_live(b, k) && b->group_clock[k] + b->group_busy[k] > ahead)
                ahead = b->group_clock[k] + b->group_busy[k];
        for (int k = 0; k < b->groups; k++)
            if (!b->group_busy[k] && pf__batch_group_live(b, k) && (!draining || b->group_clock[k] < ahead) &&
                (next < 0 || b->group_clock[k] < b->group_clock[next]))
                next = k;
        if (next < 0) return -1;
        pthread_mutex_lock(&b->mutex);
        for (;;) {
            int waiting = 0;
            for (pf__batch_request *q = b->running; q; q = q->next) waiting |= q->micro_group == next && q->to_deliver;
            if (!waiting) break;
            pthread_cond_wait(&b->streamed, &b->mutex);
        }
        for (pf__batch_request *q = b->running, **link = &b->running, *after; q; q = after) {
            after = q->next;
            if (q->micro_group != next || !q->stop_asked) {
                link = &q->next;
                continue;
            }
            *link = after;
            pf_result r = pf__generation_results(&q->st, q->result);
            pf__batch_finish(b, q, r, r ? pf_error_message(m) : "");
        }
        pthread_mutex_unlock(&b->mutex);
        if (pf__batch_group_live(b, next)) return next;
    }
}

/* One job of micro-batches: a group's step into the first stage (none while the pipeline empties),
   every later stage on the group the stage before ran in the last job, and the group leaving the
   last stage sampled. Once the pipeline is empty, back to steps of every row at the groups' clock. */
static pf_result pf__batch_micro_step(pf_model *m, pf__batcher *b) {
    const pf__group *g = m->group;
    int stages = g->stages;
    if (!b->micro) pf__batch_micro_begin(m, b);
    int fed = pf__batch_micro_next(m, b, pf__batch_micro_draining(m, b));
    int busy_stages = fed >= 0;
    for (int s = stages - 1; s > 0; s--) busy_stages += (b->stage_group[s] = b->stage_group[s - 1]) >= 0;
    b->stage_group[0] = fed;
    if (!busy_stages) { /* empty: every live group at one clock */
        b->micro = 0;
        for (int k = 0; k < b->groups; k++)
            if (pf__batch_group_live(b, k)) b->clock = b->group_clock[k];
        return PF_OK;
    }
    if (fed >= 0) b->group_busy[fed] = 1;
    int n = 0, ahead = 0;
    for (int s = 0; s < stages; s++) { /* the step's rows: stage 0's group's, then stage 1's, ... */
        int k = b->stage_group[s], first = n;
        for (pf__batch_request *q = b->running; k >= 0 && q; q = q->next)
            for (int i = 0; q->micro_group == k && i < q->st.num_rows; i++, n++) {
                const pf__row *row = &q->st.rows[i];
                b->ids[n] = row->tokens[row->length - 1];
                b->pads[n] = q->pads[i];
                b->cache_rows[n] = q->cache_rows[i];
            }
        b->stage_rows[2 * s] = n - first;
        b->stage_rows[2 * s + 1] = k >= 0 ? b->group_clock[k] : 0;
        if (k >= 0 && b->group_clock[k] > ahead) ahead = b->group_clock[k];
    }
    int leaving = b->stage_group[stages - 1];
    pf__job job = {.step = {.ids = b->ids,
                            .batch = n,
                            .seq_len = 1,
                            .past = b->stage_rows[1],
                            .pad = b->pads,
                            .cache_rows = b->cache_rows,
                            .inv_freq = pf__rope_frequencies(m, ahead + 1)}, /* batchable: the same at any length */
                   .stage_rows = b->stage_rows};
    pf_result r = pf__forward_choosing(m, &job, leaving >= 0 ? pf__batch_choose_on_devices(m, b, b->running, leaving) : NULL);
    if (r) return r;
#ifdef PF_TESTING
    if (busy_stages > 1) __atomic_add_fetch(&pf_testing_stages_overlapped, 1, __ATOMIC_RELAXED); /* a test thread reads it */
#endif
    if (leaving < 0) return PF_OK;
    b->group_busy[leaving] = 0;
    b->group_clock[leaving]++;
    pf__batch_take_step(m, b, &job, leaving);
    return PF_OK;
}

/* Whether the next step is a job of micro-batches: pipeline stages with them running, or two or
   more requests to run so and nothing to admit first. */
static int pf__batch_micro(pf_model *m, pf__batcher *b) {
    if (b->micro) return 1;
    return m->group->stages > 1 && b->group_clock && pf__batch_running_requests(b) >= 2 && !pf__batch_admission_waits(m, b);
}

/* Admits what fits from the queue's head (none while an exclusive call waits for the request
   lock: the running requests then drain) and prefills them together. */
static void pf__batch_admit(pf_model *m, pf__batcher *b) {
    pf__batch_request *admitted = NULL, **tail = &admitted;
    int busy = b->running != NULL;
    for (;;) {
        pthread_mutex_lock(&b->mutex);
        b->admission_seen = b->arrived;
        pf__batch_request *q = b->queue;
        if (!q || PF__LOAD_FLAG(m->exclusive_waiting)) {
            pthread_mutex_unlock(&b->mutex);
            break;
        }
        b->queue = q->next;
        b->queued--;
        pthread_mutex_unlock(&b->mutex);
        pf_result r = pf__batch_prepare(m, q);
        if (r) {
            pthread_mutex_lock(&b->mutex);
            pf__batch_finish(b, q, r, pf_error_message(m));
            pthread_mutex_unlock(&b->mutex);
            continue;
        }
        if (!pf__batch_fits(b, m->group, q, busy)) { /* back to the head, prepared anew when it fits */
            int batch = q->st.batch;
            pf__batch_request_free(q);
            memset(&q->st, 0, sizeof q->st);
            q->st.batch = batch;
            q->cache_rows = q->pads = NULL;
            pthread_mutex_lock(&b->mutex);
            q->next = b->queue;
            b->queue = q;
            b->queued++;
            b->admission_blocked = b->arrived + b->ended; /* micro-batches: no drain for it until that changes */
            pthread_mutex_unlock(&b->mutex);
            break;
        }
        if (!busy) b->clock = q->st.width;
        busy = 1;
        pf__batch_place(b, q);
        q->next = NULL;
        *tail = q;
        tail = &q->next;
    }
    if (admitted) pf__batch_prefill(m, b, admitted);
}

/* Fails every running request with r (a forward step failed: their caches are no longer known). */
static void pf__batch_fail_running(pf_model *m, pf__batcher *b, pf_result r) {
    pthread_mutex_lock(&b->mutex);
    for (pf__batch_request *q = b->running, *next; q; q = next) {
        next = q->next;
        pf__batch_finish(b, q, r, pf_error_message(m));
    }
    b->running = NULL;
    b->micro = 0; /* the failed job dropped the hidden states in the stages */
    pthread_mutex_unlock(&b->mutex);
}

/* The scheduler: waits for requests, takes the request lock for a busy period, admits, steps,
   and gives the lock back whenever nothing runs. */
static void *pf__batcher_main(void *arg) {
    pf_model *m = (pf_model *)arg;
    pf__batcher *b = m->batcher;
    int holding = 0;
    pthread_mutex_lock(&b->mutex);
    for (;;) {
        while (!b->stopping && !b->queue && !b->running) pthread_cond_wait(&b->work, &b->mutex);
        if (b->stopping && !b->queue && !b->running) break;
        pthread_mutex_unlock(&b->mutex);
        if (!holding) {
            pthread_mutex_lock(&m->request_lock);
            holding = 1;
            pf_result r = pf__ensure_group(m);
            int cap = m->group ? m->group->max_batch : 0;
            int stages = m->group ? m->group->stages : 1;
            free(b->row_used), free(b->ids), free(b->tokens), free(b->pads), free(b->cache_rows);
            free(b->group_clock), free(b->group_busy), free(b->stage_group), free(b->stage_rows);
            b->group_clock = b->stage_group = b->stage_rows = NULL;
            b->group_busy = NULL;
            b->micro = 0;
            if (stages > 1) {
                b->group_clock = (int *)malloc((size_t)stages * sizeof(int));
                b->group_busy = (unsigned char *)malloc((size_t)stages);
                b->stage_group = (int *)malloc((size_t)stages * sizeof(int));
                b->stage_rows = (int *)malloc((size_t)stages * 2 * sizeof(int));
                if (!r && (!b->group_clock || !b->group_busy || !b->stage_group || !b->stage_rows))
                    r = PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
            }
            b->row_used = (unsigned char *)calloc((size_t)(cap ? cap : 1), 1);
            b->ids = (int32_t *)malloc((size_t)(cap ? cap : 1) * sizeof(int32_t));
            b->tokens = (int32_t *)malloc((size_t)(cap ? cap : 1) * sizeof(int32_t));
            b->pads = (int *)malloc((size_t)(cap ? cap : 1) * sizeof(int));
            b->cache_rows = (int *)malloc((size_t)(cap ? cap : 1) * sizeof(int));
            if (!r && (!b->row_used || !b->ids || !b->tokens || !b->pads || !b->cache_rows))
                r = PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
            if (r) { /* every queued request fails with it */
                pthread_mutex_lock(&b->mutex);
                for (pf__batch_request *q = b->queue, *next; q; q = next) {
                    next = q->next;
                    q->error = r;
                    snprintf(q->message, sizeof q->message, "%s", pf_error_message(m));
                    q->state = PF__BATCH_DONE;
                }
                b->queue = NULL;
                b->queued = 0;
                pthread_cond_broadcast(&b->done);
                pthread_mutex_unlock(&m->request_lock);
                holding = 0;
                continue; /* with the batcher's mutex held */
            }
        }
        if (!b->micro) pf__batch_admit(m, b);
        if (b->running) {
            pf_result r = pf__batch_micro(m, b) ? pf__batch_micro_step(m, b) : pf__batch_step(m, b);
            if (r) pf__batch_fail_running(m, b, r);
        }
        pthread_mutex_lock(&b->mutex);
        if (!b->running) { /* idle: the exclusive calls may run */
            b->clock = 0;
            b->micro = 0; /* no group's step is in the stages: its requests would run */
            pthread_mutex_unlock(&b->mutex);
            pthread_mutex_unlock(&m->request_lock);
            holding = 0;
            pthread_mutex_lock(&b->mutex);
        }
    }
    pthread_mutex_unlock(&b->mutex);
    if (holding) pthread_mutex_unlock(&m->request_lock);
    return NULL;
}

/* The model's batcher, started at its first batched request (under m->batcher_start). */
static pf__batcher *pf__batcher_get(pf_model *m) {
    pthread_mutex_lock(&m->batcher_start);
    if (!m->batcher) {
        pf__batcher *b = (pf__batcher *)calloc(1, sizeof *b);
        if (b) {
            pthread_mutex_init(&b->mutex, NULL);
            pthread_cond_init(&b->work, NULL);
            pthread_cond_init(&b->done, NULL);
            pthread_cond_init(&b->streamed, NULL);
            m->batcher = b;
            if (pthread_create(&b->thread, NULL, pf__batcher_main, m)) {
                m->batcher = NULL;
                pthread_mutex_destroy(&b->mutex);
                pthread_cond_destroy(&b->work);
                pthread_cond_destroy(&b->done);
                pthread_cond_destroy(&b->streamed);
                free(b);
            }
        }
    }
    pthread_mutex_unlock(&m->batcher_start);
    return m->batcher;
}

/* Stops the scheduler (pf_free: no request can be waiting then). */
PF_PRIVATE void pf__batcher_stop(pf_model *m) {
    pf__batcher *b = m->batcher;
    if (!b) return;
    pthread_mutex_lock(&b->mutex);
    b->stopping = 1;
    pthread_cond_broadcast(&b->work);
    pthread_mutex_unlock(&b->mutex);
    pthread_join(b->thread, NULL);
    pthread_mutex_destroy(&b->mutex);
    pthread_cond_destroy(&b->work);
    pthread_cond_destroy(&b->done);
    pthread_cond_destroy(&b->streamed);
    free(b->row_used), free(b->ids), free(b->tokens), free(b->pads), free(b->cache_rows), free(b->candidates);
    free(b->group_clock), free(b->group_busy), free(b->stage_group), free(b->stage_rows);
    free(b);
    m->batcher = NULL;
}

/* The caller's side of a streamed batched request: each row's new tokens so far, for their text. */
typedef struct pf__batch_stream {
    int32_t **tokens;          /* [rows][capacity] */
    int *count;                /* [rows] */
    pf__stream_state *states;  /* [rows] */
    char *text;
    size_t text_cap;
} pf__batch_stream;

static void pf__batch_stream_free(pf__batch_stream *s, int rows) {
    for (int i = 0; s->tokens && i < rows; i++) free(s->tokens[i]);
    free(s->tokens), free(s->count), free(s->states), free(s->text);
}

/* Streams the tokens the scheduler handed out, on the caller's thread without the batcher's
   mutex: each live row's text through the caller's callback, as an exclusive request streams it,
   with the request lock's owner set to this thread meanwhile (so that the model's other calls
   from the callback are refused as they are there). Returns nonzero when the callback asks to
   stop, -1 without memory. */
static int pf__batch_deliver(pf_model *m, pf__batch_request *q, pf__batch_stream *s) {
    int rows = q->st.num_rows;
    if (!s->tokens) {
        s->tokens = (int32_t **)calloc((size_t)rows, sizeof *s->tokens);
        s->count = (int *)calloc((size_t)rows, sizeof *s->count);
        s->states = (pf__stream_state *)calloc((size_t)rows, sizeof *s->states);
        for (int i = 0; s->tokens && i < rows; i++) s->tokens[i] = (int32_t *)malloc((size_t)q->st.capacity * sizeof(int32_t));
        for (int i = 0; s->tokens && i < rows; i++)
            if (!s->tokens[i]) return -1;
        if (!s->tokens || !s->count || !s->states) return -1;
    }
    pf_generate_options o = q->options;
    o.stream = q->stream;
    o.stream_user = q->stream_user;
    o.logprobs_callback = q->logprobs_callback;
    const void *holder = pf__lock_holder;
    pf__lock_holder = m;
    int stop = 0;
    for (int i = 0; i < rows; i++) {
        if (q->delivered[i] < 0 || (size_t)s->count[i] >= q->st.capacity) continue;
        s->tokens[i][s->count[i]++] = q->delivered[i];
        if (o.logprobs) pf__report_logprobs(&q->st, &o, i, q->delivered[i]);
        pf__row row = {.tokens = s->tokens[i], .length = s->count[i]};
        if (pf__stream(m, &o, i, &row, &s->states[i], &s->text, &s->text_cap)) stop = 1;
    }
    pf__lock_holder = holder;
    return stop;
}

/* A batched request from the caller's thread: queued, then waited for (streaming its tokens as
   they come, when it streams). */
static pf_result pf__generate_batched_counted(pf_model *m, const int32_t *const *prompts, const int *lengths, int batch,
                                      const pf_generate_options *o, pf_generation *result) {
    if (pf__lock_holder == m) /* a stream callback of an exclusive request: the scheduler would wait for it */
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "pf_generate was called from inside a request on the same model (a "
                        "stream callback?); it would wait for that request forever");
    pf__batcher *b = pf__batcher_get(m);
    if (!b) return PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "cannot start the batching thread");
    pf__batch_request q;
    memset(&q, 0, sizeof q);
    q.prompts = prompts;
    q.lengths = lengths;
    q.options = *o;
    q.stream = o->stream; /* called here, on the caller's thread: not by the sampling step */
    q.stream_user = o->stream_user;
    q.options.stream = NULL;
    q.options.stream_user = NULL;
    if (o->stream) { /* a stream's logprobs go with its tokens (pf__batch_deliver) */
        q.logprobs_callback = o->logprobs_callback;
        q.options.logprobs_callback = NULL;
    }
    q.result = result;
    q.st.batch = batch;
    int most = __atomic_load_n(&m->max_queued_requests, __ATOMIC_RELAXED);
    if (most <= 0) most = PF__BATCH_QUEUE_MAX;
    pthread_mutex_lock(&b->mutex);
    if (b->queued >= most) {
        pthread_mutex_unlock(&b->mutex);
        return PF__FAIL(m, PF_ERROR_BUSY, "%d requests are waiting already (max_queued_requests): try again later", most);
    }
    pf__batch_request **tail = &b->queue;
    while (*tail) tail = &(*tail)->next;
    *tail = &q;
    b->queued++;
    b->arrived++;
    pthread_cond_signal(&b->work);
    pthread_cond_broadcast(&b->streamed); /* a scheduler waiting for streams admits it first */
    pf__batch_stream streaming;
    memset(&streaming, 0, sizeof streaming);
    int stream_rows = 0;
    while (q.state != PF__BATCH_DONE || q.to_deliver) {
        if (!q.to_deliver) {
            pthread_cond_wait(&b->done, &b->mutex);
            continue;
        }
        pthread_mutex_unlock(&b->mutex);
        stream_rows = q.st.num_rows;
        int stop = pf__batch_deliver(m, &q, &streaming);
        pthread_mutex_lock(&b->mutex);
        q.to_deliver = 0;
        if (stop) q.stop_asked = 1; /* without memory too: the request ends */
        pthread_cond_broadcast(&b->streamed);
    }
    pthread_mutex_unlock(&b->mutex);
    pf__batch_stream_free(&streaming, stream_rows);
    pf_result r = q.error;
    if (r) {
        pf_generation_free(result);
        PF__FAIL(m, r, "%s", q.message);
    }
    pf__batch_request_free(&q);
    return r;
}

/* The same as a request pf_free waits for. */
static pf_result pf__generate_batched(pf_model *m, const int32_t *const *prompts, const int *lengths, int batch,
                                      const pf_generate_options *o, pf_generation *result) {
    pf_result r = pf__call_begin(m, "pf_generate");
    if (r) return r;
    r = pf__generate_batched_counted(m, prompts, lengths, batch, o, result);
    pf__call_end(m);
    return r;
}

void pf_generation_free(pf_generation *g) {
    if (!g) return;
    for (int i = 0; g->tokens && i < g->num_sequences; i++) free(g->tokens[i]);
    free(g->tokens);
    free(g->lengths);
    free(g->scores);
    memset(g, 0, sizeof *g);
}

pf_result pf_generate_batch(pf_model *m, const int32_t *const *prompts, const int *prompt_lengths, int batch,
                            const pf_generate_options *options, pf_generation *result) {
    if (!m) return PF_ERROR_INVALID_ARGUMENT;
    if (result) memset(result, 0, sizeof *result);
    if (!prompts || !prompt_lengths || batch < 1 || !result)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "pf_generate_batch needs prompts, their lengths, batch >= 1 and a result");
    pf_generate_options o = options ? *options : m->generate_defaults;
    if (pf__batchable(m, &o)) return pf__generate_batched(m, prompts, prompt_lengths, batch, &o, result);
    pf_result r = pf__request_lock(m, "pf_generate");
    if (r) return r;
    r = pf__generate_locked(m, prompts, prompt_lengths, batch, &o, result, NULL, NULL, 0);
    pf__request_unlock(m);
    return r;
}

pf_result pf_generate(pf_model *m, const int32_t *prompt, int prompt_len, const pf_generate_options *options,
                      int32_t *out, int out_capacity, int *num_out) {
    if (!m) return PF_ERROR_INVALID_ARGUMENT;
    if (num_out) *num_out = 0;
    if (!prompt || prompt_len < 1 || !out || out_capacity < 0 || !num_out)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "pf_generate needs a prompt of at least one id, out and num_out");
    pf_generate_options o = options ? *options : m->generate_defaults;
    if (o.max_new_tokens < 0 || o.max_length < 0)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "generate options: negative lengths");
    if (out_capacity == 0) return PF_OK;
    /* out_capacity bounds the new tokens (max_new_tokens wins over the other limits) */
    long long wanted = o.max_new_tokens ? o.max_new_tokens : o.max_length ? (long long)o.max_length - prompt_len : 20;
    if (wanted > out_capacity) o.max_new_tokens = out_capacity;
    pf_generation g;
    const int32_t *prompts[1] = {prompt};
    pf_result r = pf_generate_batch(m, prompts, &prompt_len, 1, &o, &g);
    if (r) return r;
    *num_out = g.lengths[0] < out_capacity ? g.lengths[0] : out_capacity;
    memcpy(out, g.tokens[0], (size_t)*num_out * sizeof(int32_t));
    pf_generation_free(&g);
    return PF_OK;
}

pf_result pf_generate_text(pf_model *m, const char *prompt, const pf_generate_options *options, char **text) {
    if (!m) return PF_ERROR_INVALID_ARGUMENT;
    if (text) *text = NULL;
    if (!prompt || !text) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "pf_generate_text needs a prompt and text");
    if (options && options->global_attention) /* a mask a token needs the tokens, which the caller does not see */
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "pf_generate_text takes no global_attention (a value a prompt token): "
                        "pf_generate or pf_generate_batch take it with the prompt's ids");
    if (!m->tokenizer)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "the model has no tokenizer%s%s", m->tokenizer_missing[0] ? ": " : "",
                        m->tokenizer_missing);
    size_t n = 0, len = 0, plen = strlen(prompt);
    pf_tokenize_special(m->tokenizer, prompt, plen, NULL, 0, &n);
    int32_t *ids = (int32_t *)malloc((n ? n : 1) * sizeof *ids);
    if (!ids) return PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    pf_result r = pf_tokenize_special(m->tokenizer, prompt, plen, ids, n, &n);
    if (r) {
        free(ids);
        return PF__FAIL(m, r, "cannot tokenize the prompt: %s", pf_result_string(r));
    }
    int length = (int)n;
    pf_generation g;
    const int32_t *prompts[1] = {ids};
    r = pf_generate_batch(m, prompts, &length, 1, options, &g);
    free(ids);
    if (r) return r;
    size_t kept = 0; /* special tokens left out, as transformers' decode(skip_special_tokens=True) */
    for (int i = 0; i < g.lengths[0]; i++)
        if (!pf_tokenizer_is_special(m->tokenizer, g.tokens[0][i])) g.tokens[0][kept++] = g.tokens[0][i];
    g.lengths[0] = (int)kept;
    pf_detokenize(m->tokenizer, g.tokens[0], (size_t)g.lengths[0], NULL, 0, &len);
    *text = (char *)malloc(len + 1);
    if (!*text) r = PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    else if ((r = pf_detokenize(m->tokenizer, g.tokens[0], (size_t)g.lengths[0], *text, len + 1, &len))) {
        free(*text);
        *text = NULL;
        r = PF__FAIL(m, r, "cannot decode the output: %s", pf_result_string(r));
    } else {
        (*text)[len] = 0;
    }
    pf_generation_free(&g);
    return r;
}
