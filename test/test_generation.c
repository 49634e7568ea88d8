/* Generation as transformers' generate does it: every case of generation_cases.txt (recorded by
   test/make_generation_fixtures.py: beam search with length penalty and n-gram bans, repetition
   penalty, min length, bad words, several eos ids, padded batches) token for token, on 1 and 2
   ranks; sampling reproducible for a seed and equal across rank counts; streaming; the text API;
   contradictory options; 8 threads x 20 concurrent calls equal to the same calls made in turn. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../parallelformers.h"
#include "test.h"
#include "testing_hooks.h"

static pf_model *open_model(const char *fixture, int ranks, int max_batch) {
    char dir[1024];
    pf_model *m = NULL;
    snprintf(dir, sizeof dir, "%s/%s", test_fixtures, fixture);
    pf_load_options lo = pf_load_options_init();
    lo.skip_tokenizer = 1;
    pf_result r = pf_load(dir, &lo, &m);
    pf_parallel_options po = pf_parallel_options_init();
    po.device = PF_DEVICE_CPU;
    po.max_batch = max_batch;
    if (r == PF_OK) r = pf_parallelize(m, ranks, &po);
    CHECK_MSG(r == PF_OK, "%s: %s", fixture, pf_error_message(m));
    if (r != PF_OK) {
        pf_free(m);
        return NULL;
    }
    return m;
}

static void test_recorded_cases(void) {
    static test_gen_case cases[TEST_MAX_GEN_CASES];
    const char *fixtures[] = {"gpt2-tiny", "gpt2-hub"};
    for (int f = 0; f < 2; f++) {
        int n = test_read_gen_cases(fixtures[f], cases, TEST_MAX_GEN_CASES);
        CHECK_MSG(n >= 11, "%s: generation_cases.txt has %d readable cases", fixtures[f], n);
        for (int ranks = 1; ranks <= 2; ranks++) {
            char what[96];
            snprintf(what, sizeof what, "%s on %d ranks", fixtures[f], ranks);
            pf_model *m = open_model(fixtures[f], ranks, 16);
            for (int i = 0; m && i < n; i++) test_check_gen_case(m, what, &cases[i]);
            pf_free(m);
        }
    }
}

/* The same seed gives the same samples, on 1, 2 and 3 ranks; another seed differs. */
static void test_sampling(void) {
    int32_t prompt[4] = {391, 330, 11, 305}, first[32], again[32];
    int n1 = 0, n2 = 0, differs = 0;
    pf_generate_options o = pf_generate_options_init();
    o.do_sample = 1;
    o.temperature = 1.5f;
    o.top_k = 40;
    o.top_p = 0.9f;
    o.seed = 1234;
    o.max_new_tokens = 24;
    o.ignore_eos = 1;
    for (int ranks = 1; ranks <= 3; ranks++) {
        pf_model *m = open_model("gpt2-tiny", ranks, 4);
        if (!m) continue;
        int32_t *out = ranks == 1 ? first : again;
        int *n = ranks == 1 ? &n1 : &n2;
        CHECK(pf_generate(m, prompt, 4, &o, out, 32, n) == PF_OK);
        if (ranks > 1) CHECK_MSG(n1 == n2 && !memcmp(first, again, (size_t)n1 * 4), "sampling differs on %d ranks", ranks);
        if (ranks == 3) { /* another seed, another sample; the first seed again, the same */
            pf_generate_options other = o;
            other.seed = 99;
            CHECK(pf_generate(m, prompt, 4, &other, again, 32, &n2) == PF_OK);
            differs = n2 != n1 || memcmp(first, again, (size_t)n1 * 4);
            CHECK_MSG(differs, "seeds 1234 and 99 sampled the same %d tokens", n1);
            CHECK(pf_generate(m, prompt, 4, &o, again, 32, &n2) == PF_OK);
            CHECK(n1 == n2 && !memcmp(first, again, (size_t)n1 * 4));
            /* several samples per prompt in one call are distinct rows */
            pf_generation g;
            const int32_t *prompts[1] = {prompt};
            int length = 4;
            other.num_return_sequences = 3;
            CHECK(pf_generate_batch(m, prompts, &length, 1, &other, &g) == PF_OK);
            CHECK(g.num_sequences == 3 && (g.lengths[0] != g.lengths[1] || memcmp(g.tokens[0], g.tokens[1], (size_t)g.lengths[0] * 4)));
            pf_generation_free(&g);
        }
        pf_free(m);
    }
    CHECK(n1 == 24);
}

typedef struct stream_log {
    int calls, stop_after;
    int32_t tokens[64];
} stream_log;

static int on_token(void *user, int row, int32_t token, const char *text, size_t len) {
    stream_log *log = (stream_log *)user;
    (void)text, (void)len;
    if (row == 0 && log->calls < 64) log->tokens[log->calls] = token;
    log->calls++;
    return log->stop_after && log->calls >= log->stop_after;
}

/* The callback sees each token as chosen, and its return value stops the generation. */
static void test_streaming(void) {
    pf_model *m = open_model("gpt2-tiny", 2, 4);
    if (!m) return;
    int32_t prompt[4] = {391, 330, 11, 305}, out[32];
    int n = 0;
    stream_log log;
    memset(&log, 0, sizeof log);
    pf_generate_options o = pf_generate_options_init();
    o.max_new_tokens = 12;
    o.stream = on_token;
    o.stream_user = &log;
    CHECK(pf_generate(m, prompt, 4, &o, out, 32, &n) == PF_OK);
    CHECK_MSG(log.calls == n && n > 0 && !memcmp(log.tokens, out, (size_t)n * 4), "streamed %d of %d tokens", log.calls, n);
    memset(&log, 0, sizeof log);
    log.stop_after = 3;
    CHECK(pf_generate(m, prompt, 4, &o, out, 32, &n) == PF_OK);
    CHECK_MSG(n == 3 && log.calls == 3, "stopped after %d tokens, %d calls", n, log.calls);
    o.num_beams = 2; /* beams have no single running sequence to stream */
    CHECK(pf_generate(m, prompt, 4, &o, out, 32, &n) == PF_ERROR_INVALID_ARGUMENT);
    pf_free(m);
}

typedef struct stream_text {
    char text[4096];
    size_t length;
    size_t ends[64]; /* where each piece ended */
    int pieces;
} stream_text;

static int on_text(void *user, int row, int32_t token, const char *text, size_t len) {
    stream_text *st = (stream_text *)user;
    (void)row, (void)token;
    if (!text || st->length + len >= sizeof st->text || st->pieces == 64) return 1;
    memcpy(st->text + st->length, text, len);
    st->length += len;
    st->ends[st->pieces++] = st->length;
    return 0;
}

/* Whether a piece ends inside a well-formed multi-byte UTF-8 character of the text (random
   tokens also make ill-formed sequences, which may be cut anywhere). */
static int splits_a_character(const stream_text *st) {
    for (size_t i = 0; i < st->length;) {
        unsigned char c = (unsigned char)st->text[i];
        size_t need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1, k = 1;
        while (k < need && i + k < st->length && ((unsigned char)st->text[i + k] & 0xc0) == 0x80) k++;
        if (k == need && need > 1)
            for (int p = 0; p < st->pieces; p++)
                if (st->ends[p] > i && st->ends[p] < i + need) return 1;
        i += k;
    }
    return 0;
}

/* Over 36 sampled tokens, the streamed pieces put together are the decoded output (less an
   unfinished last character), for each decoder style: byte-level, Metaspace with byte fallback,
   </w> suffixes, and BLOOM's, CTRL's and Qwen2's. */
static void test_streamed_text(void) {
    const char *fixtures[] = {"gpt2-hub", "llama", "openai-gpt", "bloom", "ctrl", "qwen2", "t5-text-s2s", "bart-text-s2s"};
    for (size_t f = 0; f < sizeof fixtures / sizeof fixtures[0]; f++) {
        char dir[1024];
        pf_model *m = NULL;
        snprintf(dir, sizeof dir, "%s/%s", test_fixtures, fixtures[f]);
        pf_result r = pf_load(dir, NULL, &m);
        CHECK_MSG(r == PF_OK && pf_model_tokenizer(m), "%s: %s", fixtures[f], pf_error_message(m));
        if (r != PF_OK || !pf_model_tokenizer(m)) {
            pf_free(m);
            continue;
        }
        int32_t prompt[3] = {5, 6, 7}, out[64];
        int n = 0;
        static stream_text st;
        memset(&st, 0, sizeof st);
        pf_generate_options o = pf_generate_options_init();
        o.max_new_tokens = 36; /* gpt2-hub has 40 positions */
        o.ignore_eos = 1;
        o.do_sample = 1;
        o.temperature = 2.0f;
        o.seed = 7;
        o.stream = on_text;
        o.stream_user = &st;
        r = pf_generate(m, prompt, 3, &o, out, 64, &n);
        CHECK_MSG(r == PF_OK && n == 36, "%s: pf_generate: %s", fixtures[f], pf_error_message(m));
        char whole[4096];
        size_t len = 0;
        CHECK(pf_detokenize(pf_model_tokenizer(m), out, (size_t)n, whole, sizeof whole, &len) == PF_OK);
        int same = st.length <= len && len - st.length <= 3 && !memcmp(st.text, whole, st.length);
        CHECK_MSG(same && !splits_a_character(&st), "%s: streamed %zu bytes, decoded %zu: '%.*s' vs '%.*s'", fixtures[f], st.length,
                  len, (int)st.length, st.text, (int)len, whole);
        pf_free(m);
    }
}

/* Options that contradict each other are refused with a message. */
static void test_bad_options(void) {
    pf_model *m = open_model("gpt2-tiny", 1, 4);
    if (!m) return;
    int32_t prompt[2] = {391, 330}, out[8];
    int n;
    pf_generate_options o;
#define REFUSED(field_setting, needle)                                                            \
    do {                                                                                          \
        o = pf_generate_options_init();                                                           \
        field_setting;                                                                            \
        CHECK_MSG(pf_generate(m, prompt, 2, &o, out, 8, &n) == PF_ERROR_INVALID_ARGUMENT &&        \
                      strstr(pf_error_message(m), needle),                                        \
                  "%s: %s", #field_setting, pf_error_message(m));                                 \
    } while (0)
    REFUSED(o.num_beams = 0, "num_beams");
    REFUSED(o.num_return_sequences = 2, "num_return_sequences");
    REFUSED((o.num_beams = 2, o.num_return_sequences = 3), "num_return_sequences");
    REFUSED((o.do_sample = 1, o.temperature = 0), "temperature");
    REFUSED(o.top_p = 1.5f, "top_p");
    REFUSED(o.repetition_penalty = -1, "repetition_penalty");
    REFUSED(o.no_repeat_ngram_size = -2, "no_repeat_ngram_size");
    REFUSED((o.num_beams = 8), "max_batch"); /* 8 beams do not fit max_batch 4 */
    int32_t huge = 1 << 20;
    REFUSED((o.eos_token_ids = &huge, o.num_eos_token_ids = 1), "eos token id");
    pf_token_sequence empty = {prompt, 0};
    REFUSED((o.bad_words = &empty, o.num_bad_words = 1), "bad word");
#undef REFUSED
    /* a stop sequence ends the row right after it */
    pf_generate_options g = pf_generate_options_init();
    g.max_new_tokens = 20;
    g.ignore_eos = 1;
    int32_t full[32];
    int num_full = 0;
    CHECK(pf_generate(m, prompt, 2, &g, full, 32, &num_full) == PF_OK && num_full == 20);
    pf_token_sequence stop = {full + 4, 2};
    g.stop_sequences = &stop;
    g.num_stop_sequences = 1;
    CHECK(pf_generate(m, prompt, 2, &g, out, 8, &n) == PF_OK);
    int first_end = -1; /* where the pair first occurs in the full output */
    for (int t = 1; t < num_full && first_end < 0; t++)
        if (full[t - 1] == stop.ids[0] && full[t] == stop.ids[1]) first_end = t + 1;
    CHECK_MSG(n == first_end && !memcmp(out, full, (size_t)n * 4), "stop sequence ended at %d, want %d", n, first_end);
    pf_free(m);
}

/* ---- concurrency ---- */

typedef struct worker {
    pf_model *model;
    int index;
    int32_t results[20][24];
    int lengths[20];
    int failures;
} worker;

static void call_for(int worker_index, int call, int32_t *prompt, pf_generate_options *o) {
    prompt[0] = 391;
    prompt[1] = (int32_t)(100 + worker_index * 20 + call) % 499;
    prompt[2] = 11;
    *o = pf_generate_options_init();
    o->max_new_tokens = 6 + call % 5;
    o->num_beams = call % 3 == 0 ? 2 : 1;
    o->do_sample = call % 3 == 1;
    o->seed = (uint64_t)(worker_index * 1000 + call);
}

static void *worker_main(void *arg) {
    worker *w = (worker *)arg;
    for (int call = 0; call < 20; call++) {
        int32_t prompt[3];
        pf_generate_options o;
        call_for(w->index, call, prompt, &o);
        if (pf_generate(w->model, prompt, 3, &o, w->results[call], 24, &w->lengths[call]) != PF_OK) w->failures++;
        if (call % 7 == 3) { /* a failing call: this thread reads its own message, whatever the others do */
            o.top_p = 2.0f + (float)w->index;
            int n;
            if (pf_generate(w->model, prompt, 3, &o, w->results[call], 24, &n) != PF_ERROR_INVALID_ARGUMENT ||
                !strstr(pf_error_message(w->model), "top_p"))
                w->failures++;
        }
    }
    return NULL;
}

static void test_concurrency(void) {
    pf_model *m = open_model("gpt2-tiny", 2, 4);
    if (!m) return;
    static worker workers[8];
    pthread_t threads[8];
    for (int i = 0; i < 8; i++) {
        memset(&workers[i], 0, sizeof workers[i]);
        workers[i].model = m;
        workers[i].index = i;
        pthread_create(&threads[i], NULL, worker_main, &workers[i]);
    }
    for (int i = 0; i < 8; i++) pthread_join(threads[i], NULL);
    int mismatches = 0, failures = 0;
    for (int i = 0; i < 8; i++) { /* the same calls one after another give the same results */
        failures += workers[i].failures;
        for (int call = 0; call < 20; call++) {
            int32_t prompt[3], out[24];
            int n = 0;
            pf_generate_options o;
            call_for(i, call, prompt, &o);
            pf_generate(m, prompt, 3, &o, out, 24, &n);
            mismatches += n != workers[i].lengths[call] || memcmp(out, workers[i].results[call], (size_t)n * 4);
        }
    }
    CHECK_MSG(failures == 0, "%d concurrent calls failed", failures);
    CHECK_MSG(mismatches == 0, "%d of 160 concurrent calls differ from the same calls in turn", mismatches);
    pf_free(m);
}

static int no_stream(void *user, int row, int32_t token, const char *text, size_t text_len) {
    (void)user, (void)row, (void)token, (void)text, (void)text_len;
    return 0;
}

/* Continuous batching: greedy and seeded sampling requests of different prompt lengths and
   generation lengths, from 6 threads at once, merged into shared decode steps (some steps run
   several requests' rows), each equal to the same request run again alone afterwards, on rotary
   (llama), ALiBi (bloom) and windowed (mistral) models, 1 and 2 ranks; and on LongRoPE (two lists:
   its frequencies follow each sequence's length), whose requests never share a step. */
typedef struct batch_worker {
    pf_model *model;
    int index;
    int32_t results[6][40];
    int lengths[6];
    int failures;
} batch_worker;

static void batch_call(int worker, int call, int32_t *prompt, int *prompt_len, pf_generate_options *o) {
    *prompt_len = 2 + (worker * 3 + call * 5) % 9;
    for (int i = 0; i < *prompt_len; i++) prompt[i] = (int32_t)(17 + worker * 31 + call * 7 + i * 13) % 250;
    *o = pf_generate_options_init();
    o->max_new_tokens = 3 + (worker + call) % 8;
    o->ignore_eos = 1;
    o->do_sample = (worker + call) % 2;
    o->temperature = 1.3f;
    o->seed = (uint64_t)(worker * 100 + call);
    o->num_return_sequences = o->do_sample && call % 3 == 0 ? 2 : 1;
}

static void *batch_worker_main(void *arg) {
    batch_worker *w = (batch_worker *)arg;
    for (int call = 0; call < 6; call++) {
        int32_t prompt[16];
        int len;
        pf_generate_options o;
        batch_call(w->index, call, prompt, &len, &o);
        if (pf_generate(w->model, prompt, len, &o, w->results[call], 40, &w->lengths[call]) != PF_OK) w->failures++;
    }
    return NULL;
}

static void test_continuous_batching(void) {
    /* the last: frequencies that follow the sequence's length (LongRoPE's two lists) keep each
       request to steps of its own */
    static const char *const fixtures[] = {"llama", "bloom", "mistral", "llama-rope-longrope"};
    for (size_t f = 0; f < sizeof fixtures / sizeof fixtures[0]; f++)
        for (int ranks = 1; ranks <= 2; ranks++) {
            pf_model *m = open_model(fixtures[f], ranks, 6);
            if (!m) continue;
            static batch_worker workers[6];
            pthread_t threads[6];
            pf_testing_batch_rows = 0;
            for (int i = 0; i < 6; i++) {
                memset(&workers[i], 0, sizeof workers[i]);
                workers[i].model = m;
                workers[i].index = i;
                pthread_create(&threads[i], NULL, batch_worker_main, &workers[i]);
            }
            for (int i = 0; i < 6; i++) pthread_join(threads[i], NULL);
            int merged = pf_testing_batch_rows, mismatches = 0, failures = 0;
            for (int i = 0; i < 6; i++) {
                failures += workers[i].failures;
                for (int call = 0; call < 6; call++) { /* alone: a stream callback runs it by itself */
                    int32_t prompt[16], out[40];
                    int len, n = 0;
                    pf_generate_options o;
                    batch_call(i, call, prompt, &len, &o);
                    o.stream = no_stream;
                    pf_result r = pf_generate(m, prompt, len, &o, out, 40, &n);
                    mismatches += r != PF_OK || n != workers[i].lengths[call] || memcmp(out, workers[i].results[call], (size_t)n * 4);
                }
            }
            CHECK_MSG(failures == 0, "%s on %d ranks: %d batched calls failed", fixtures[f], ranks, failures);
            CHECK_MSG(mismatches == 0, "%s on %d ranks: %d of 36 batched calls differ from the same call alone",
                      fixtures[f], ranks, mismatches);
            int own_steps = f == 3;
            CHECK_MSG(own_steps ? merged == 0 : merged > 1, "%s on %d ranks: the most rows a batched decode step ran: %d",
                      fixtures[f], ranks, merged);
            pf_free(m);
        }
}

/* The batcher's queue is bounded: while a streaming request holds the model (its callback waits
   here), batched requests queue up to max_queued_requests; the next one gets PF_ERROR_BUSY at once
   with a message saying so; once the stream ends, the queued ones run and succeed. */
typedef struct gate {
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    int inside, open;
} gate;

static int wait_at_gate(void *user, int row, int32_t token, const char *text, size_t text_len) {
    gate *g = (gate *)user;
    (void)row, (void)token, (void)text, (void)text_len;
    pthread_mutex_lock(&g->mutex);
    g->inside = 1;
    pthread_cond_broadcast(&g->cond);
    while (!g->open) pthread_cond_wait(&g->cond, &g->mutex);
    pthread_mutex_unlock(&g->mutex);
    return 0;
}

static void gate_wait_inside(gate *g) { /* until a stream callback waits at the gate */
    pthread_mutex_lock(&g->mutex);
    while (!g->inside) pthread_cond_wait(&g->cond, &g->mutex);
    pthread_mutex_unlock(&g->mutex);
}

static void gate_open(gate *g) {
    pthread_mutex_lock(&g->mutex);
    g->open = 1;
    pthread_cond_broadcast(&g->cond);
    pthread_mutex_unlock(&g->mutex);
}

/* gpt2-tiny (with its tokenizer or without) split on `ranks` CPU ranks; NULL (a failed check) if not. */
static pf_model *gpt2_tiny_on(int ranks, int max_batch, int max_queued_requests, int tokenizer) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/gpt2-tiny", test_fixtures);
    pf_load_options lo = pf_load_options_init();
    lo.skip_tokenizer = !tokenizer;
    pf_model *m = NULL;
    pf_result r = pf_load(dir, &lo, &m);
    pf_parallel_options po = pf_parallel_options_init();
    po.device = PF_DEVICE_CPU;
    po.max_batch = max_batch;
    po.max_queued_requests = max_queued_requests;
    if (!r) r = pf_parallelize(m, ranks, &po);
    CHECK_MSG(r == PF_OK, "gpt2-tiny: %s", pf_error_message(m));
    if (!r) return m;
    pf_free(m);
    return NULL;
}

static pf_model *gpt2_tiny_split(int ranks, int max_batch, int max_queued_requests) {
    return gpt2_tiny_on(ranks, max_batch, max_queued_requests, 0);
}

typedef struct gated_call {
    pf_model *model;
    pf_generate_options options;
    pf_result result;
} gated_call;

static void *gated_call_main(void *arg) {
    gated_call *c = (gated_call *)arg;
    int32_t prompt[2] = {391, 330}, out[8];
    int n = 0;
    c->result = pf_generate(c->model, prompt, 2, &c->options, out, 8, &n);
    return NULL;
}

/* max_queued_requests: a streamed request whose callback waits holds the decode steps (they wait
   for its tokens to be streamed) and the one cache row; two more requests wait in the queue, its
   limit; a fourth is refused with PF_ERROR_BUSY. */
static void test_busy_queue(void) {
    pf_model *m = gpt2_tiny_split(1, 1, 2);
    if (!m) return;
    static gate g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
    gated_call calls[3];
    pthread_t threads[3];
    for (int i = 0; i < 3; i++) {
        calls[i].model = m;
        calls[i].options = pf_generate_options_init();
        calls[i].options.max_new_tokens = 3;
    }
    calls[0].options.stream = wait_at_gate;
    calls[0].options.stream_user = &g;
    pthread_create(&threads[0], NULL, gated_call_main, &calls[0]);
    gate_wait_inside(&g);
    for (int i = 1; i < 3; i++) pthread_create(&threads[i], NULL, gated_call_main, &calls[i]);
    for (int tries = 0; pf_testing_batch_queued(m) < 2 && tries < 20000; tries++) {
        struct timespec pause = {0, 100000};
        nanosleep(&pause, NULL);
    }
    CHECK_MSG(pf_testing_batch_queued(m) == 2, "%d requests queued, want 2", pf_testing_batch_queued(m));
    int32_t prompt[2] = {391, 330}, out[8];
    int n = 0;
    pf_generate_options o = pf_generate_options_init();
    o.max_new_tokens = 3;
    pf_result busy = pf_generate(m, prompt, 2, &o, out, 8, &n);
    CHECK_MSG(busy == PF_ERROR_BUSY && strstr(pf_error_message(m), "max_queued_requests"), "a third request: %s (%s)",
              pf_result_string(busy), pf_error_message(m));
    gate_open(&g);
    for (int i = 0; i < 3; i++) pthread_join(threads[i], NULL);
    for (int i = 0; i < 3; i++) CHECK_MSG(calls[i].result == PF_OK, "call %d: %s", i, pf_result_string(calls[i].result));
    pf_free(m);
}

/* pf_free while requests run and wait (a server shutting down): a streaming generation (holding the
   model in its callback), with `batched` two batched requests queued behind it, and a
   pf_parallelize waiting for the request lock. pf_free does not return while the stream is held,
   and every request ends with PF_ERROR_CANCELLED: the stream at its next token, the others as they
   reach the model. Before, pf_free freed the model under them (a use after free that ASan
   reports, a crash in a release build). */
static void *parallelize_main(void *arg) {
    gated_call *c = (gated_call *)arg;
    pf_parallel_options po = pf_parallel_options_init();
    po.device = PF_DEVICE_CPU;
    c->result = pf_parallelize(c->model, 1, &po);
    return NULL;
}

static int free_returned; /* atomic */

static void *free_main(void *arg) {
    pf_free((pf_model *)arg);
    __atomic_store_n(&free_returned, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void test_free_while_requests_run(int batched) {
    pf_model *m = gpt2_tiny_split(2, 2, 0);
    if (!m) return;
    static gate g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
    g.inside = g.open = 0;
    free_returned = 0;
    gated_call calls[4];
    pthread_t threads[4], freer;
    for (int i = 0; i < 4; i++) {
        calls[i].model = m;
        calls[i].result = PF_OK;
        calls[i].options = pf_generate_options_init();
        calls[i].options.max_new_tokens = 3;
        calls[i].options.min_new_tokens = 3; /* no early eos: the stream has a next token */
    }
    calls[0].options.stream = wait_at_gate;
    calls[0].options.stream_user = &g;
    pthread_create(&threads[0], NULL, gated_call_main, &calls[0]);
    gate_wait_inside(&g);
    int first = batched ? 1 : 3, want = 4 - first + 1;
    for (int i = first; i < 3; i++) pthread_create(&threads[i], NULL, gated_call_main, &calls[i]);
    pthread_create(&threads[3], NULL, parallelize_main, &calls[3]);
    struct timespec pause = {0, 100000}, settle = {0, 20000000};
    for (int tries = 0; pf_testing_active_calls(m) < want && tries < 20000; tries++) nanosleep(&pause, NULL);
    CHECK_MSG(pf_testing_active_calls(m) == want, "%d requests under way, want %d", pf_testing_active_calls(m), want);
    pthread_create(&freer, NULL, free_main, m);
    /* m stays valid while the stream waits at the gate: pf_free waits for it */
    for (int tries = 0; !pf_testing_closing(m) && tries < 20000; tries++) nanosleep(&pause, NULL);
    CHECK_MSG(pf_testing_closing(m), "pf_free did not begin");
    nanosleep(&settle, NULL);
    CHECK_MSG(!__atomic_load_n(&free_returned, __ATOMIC_ACQUIRE), "pf_free returned while a request held the model");
    gate_open(&g);
    for (int i = 0; i < 4; i++)
        if (i == 0 || i >= first) pthread_join(threads[i], NULL);
    pthread_join(freer, NULL);
    for (int i = 0; i < 4; i++)
        if (i == 0 || i >= first)
            CHECK_MSG(calls[i].result == PF_ERROR_CANCELLED, "%s call %d: %s, want cancelled", batched ? "batched:" : "exclusive:",
                      i, pf_result_string(calls[i].result));
}

/* Batched generation while another thread re-splits the model (the header allows it): the
   requests and the splits take turns, every call succeeds, and nothing is read unlocked that a
   split writes (make test-tsan: pf__generate_batched read max_queued_requests from the options
   pf_parallelize rewrites). */
typedef struct resplit_call {
    pf_model *model;
    int rounds;
    pf_result result;
} resplit_call;

static void *generate_rounds(void *arg) {
    resplit_call *c = (resplit_call *)arg;
    int32_t prompt[2] = {391, 330}, out[4];
    int n = 0;
    pf_generate_options o = pf_generate_options_init();
    o.max_new_tokens = 2;
    for (int i = 0; i < c->rounds && !c->result; i++) c->result = pf_generate(c->model, prompt, 2, &o, out, 4, &n);
    return NULL;
}

static void *resplit_rounds(void *arg) {
    resplit_call *c = (resplit_call *)arg;
    for (int i = 0; i < c->rounds && !c->result; i++) {
        pf_parallel_options po = pf_parallel_options_init();
        po.device = PF_DEVICE_CPU;
        po.max_batch = 2;
        po.max_queued_requests = 4 + i % 3;
        c->result = pf_parallelize(c->model, 1 + i % 2, &po);
    }
    return NULL;
}

static void test_generate_while_resplitting(void) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/gpt2-tiny", test_fixtures);
    pf_load_options lo = pf_load_options_init();
    lo.skip_tokenizer = 1;
    pf_model *m = NULL;
    pf_result r = pf_load(dir, &lo, &m);
    CHECK_MSG(r == PF_OK, "gpt2-tiny: %s", pf_error_message(m));
    if (!r) {
        resplit_call generating = {m, 6, PF_OK}, splitting = {m, 6, PF_OK};
        pthread_t threads[2];
        pthread_create(&threads[0], NULL, resplit_rounds, &splitting);
        pthread_create(&threads[1], NULL, generate_rounds, &generating);
        for (int i = 0; i < 2; i++) pthread_join(threads[i], NULL);
        CHECK_MSG(generating.result == PF_OK && splitting.result == PF_OK, "generating: %s, splitting: %s",
                  pf_result_string(generating.result), pf_result_string(splitting.result));
    }
    pf_free(m);
}

/* Prompt text in, continuation text out, with the model's tokenizer. */
static void test_text(void) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/gpt2-tiny", test_fixtures);
    test_reference ref;
    pf_model *m = NULL;
    if (test_read_reference(dir, &ref) || pf_load(dir, NULL, &m) != PF_OK) {
        CHECK_MSG(0, "gpt2-tiny: %s", pf_error_message(m));
        pf_free(m);
        return;
    }
    pf_generate_options o = pf_generate_options_init();
    o.max_new_tokens = ref.max_new_tokens;
    char *text = NULL;
    pf_result r = pf_generate_text(m, ref.prompt_text, &o, &text);
    CHECK_MSG(r == PF_OK && text, "pf_generate_text: %s", pf_error_message(m));
    /* the text is the decoded greedy reference */
    int32_t ids[64];
    for (int i = 0; i < ref.num_greedy_ids; i++) ids[i] = ref.greedy_ids[i];
    char want[1024];
    size_t len = 0;
    pf_detokenize(pf_model_tokenizer(m), ids, (size_t)ref.num_greedy_ids, want, sizeof want - 1, &len);
    want[len] = 0;
    CHECK_MSG(text && !strcmp(text, want), "text \"%s\", want \"%s\"", text ? text : "(null)", want);
    pf_string_free(text);
    pf_free(m);
}

/* gpt2-tiny with its tokenizer on `ranks` CPU ranks, and its reference prompt. */
static pf_model *gpt2_tiny_text(int ranks, test_reference *ref) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/gpt2-tiny", test_fixtures);
    if (test_read_reference(dir, ref)) {
        CHECK_MSG(0, "reading %s", dir);
        return NULL;
    }
    return gpt2_tiny_on(ranks, 4, 0, 1);
}

/* One prompt's new tokens through pf_generate_batch (the continuous batch); their count, -1 on failure. */
static int generate_one(pf_model *m, const test_reference *ref, const pf_generate_options *o, int32_t *out, int cap) {
    int32_t prompt[TEST_MAX_IDS];
    for (int i = 0; i < ref->num_prompt_ids; i++) prompt[i] = ref->prompt_ids[i];
    const int32_t *prompts[1] = {prompt};
    int length = ref->num_prompt_ids, n = -1;
    pf_generation result;
    pf_result r = pf_generate_batch(m, prompts, &length, 1, o, &result);
    CHECK_MSG(r == PF_OK, "pf_generate_batch: %s", pf_error_message(m));
    if (r) return -1;
    n = result.lengths[0] < cap ? result.lengths[0] : cap;
    memcpy(out, result.tokens[0], (size_t)n * sizeof(int32_t));
    pf_generation_free(&result);
    return n;
}

/* Whether the decoded text of ids holds needle. */
static int text_holds(pf_model *m, const int32_t *ids, int n, const char *needle) {
    char text[2048];
    size_t len = 0;
    if (pf_detokenize(pf_model_tokenizer(m), ids, (size_t)n, text, sizeof text - 1, &len) || len >= sizeof text) return 0;
    text[len] = 0;
    return strstr(text, needle) != NULL;
}

/* stop_strings end a row with the token that completes the text, mid-token too, and no earlier;
   logit_bias, presence and frequency penalties and min_p change the choice as they say. On 1 and
   2 ranks, through the continuous batch. */
static void test_logit_processors_and_stop_strings(void) {
    for (int ranks = 1; ranks <= 2; ranks++) {
        test_reference ref;
        pf_model *m = gpt2_tiny_text(ranks, &ref);
        if (!m) return;
        pf_generate_options o = pf_generate_options_init();
        o.max_new_tokens = 24;
        o.ignore_eos = 1;
        int32_t plain[64], got[64];
        int n = generate_one(m, &ref, &o, plain, 64);
        CHECK_MSG(n == 24, "%d ranks: %d plain tokens", ranks, n);
        /* a stop string from the middle of token 6's text into token 8's */
        char text[2048], before[2048];
        size_t len = 0, upto5 = 0, upto8 = 0;
        pf_tokenizer *tok = pf_model_tokenizer(m);
        pf_detokenize(tok, plain, 24, text, sizeof text - 1, &len);
        pf_detokenize(tok, plain, 6, before, sizeof before - 1, &upto5);
        pf_detokenize(tok, plain, 8, before, sizeof before - 1, &upto8);
        size_t from = upto5 + 1, to = upto8 < len ? upto8 : len;
        CHECK_MSG(to > from + 1, "%d ranks: tokens 6..8 decode to %zu bytes", ranks, to - from);
        char stop[256];
        snprintf(stop, sizeof stop, "%.*s", (int)(to - from), text + from);
        int expect = 0; /* the first prefix of tokens whose text holds the stop string */
        while (expect < 24 && !text_holds(m, plain, expect, stop)) expect++;
        const char *stops[2] = {"no such text anywhere", stop};
        o.stop_strings = stops;
        o.num_stop_strings = 2;
        int k = generate_one(m, &ref, &o, got, 64);
        CHECK_MSG(k == expect && expect > 6 && expect <= 8 && !memcmp(got, plain, (size_t)k * sizeof(int32_t)),
                  "%d ranks: stop string \"%s\": %d tokens, want %d", ranks, stop, k, expect);
        o.num_stop_strings = 0;
        o.stop_strings = NULL;
        /* logit_bias: a large bias makes a token the choice at every step */
        pf_token_bias bias = {plain[3] == 7 ? 8 : 7, 1e4f};
        o.logit_bias = &bias;
        o.num_logit_bias = 1;
        k = generate_one(m, &ref, &o, got, 64);
        int all = k == 24;
        for (int i = 0; i < k; i++) all &= got[i] == bias.token;
        CHECK_MSG(all, "%d ranks: logit_bias +1e4 on %d: %d tokens, first %d", ranks, (int)bias.token, k, k > 0 ? got[0] : -1);
        /* ... and a frequency penalty as large then spreads it: no token twice in a row */
        o.frequency_penalty = 2e4f;
        k = generate_one(m, &ref, &o, got, 64);
        int repeats = 0;
        for (int i = 1; i < k; i++) repeats += got[i] == got[i - 1];
        CHECK_MSG(k == 24 && got[0] == bias.token && repeats == 0, "%d ranks: frequency_penalty: %d repeats", ranks, repeats);
        o.frequency_penalty = 0;
        o.num_logit_bias = 0;
        o.logit_bias = NULL;
        /* a huge presence penalty: no token twice at all */
        o.presence_penalty = 1e4f;
        k = generate_one(m, &ref, &o, got, 64);
        int twice = 0;
        for (int i = 0; i < k; i++)
            for (int j = 0; j < i; j++) twice += got[i] == got[j];
        CHECK_MSG(k == 24 && twice == 0, "%d ranks: presence_penalty: %d tokens seen before", ranks, twice);
        o.presence_penalty = 0;
        /* min_p 1 leaves the likeliest token only: sampling then is greedy, whatever the seed */
        o.do_sample = 1;
        o.temperature = 1.3f;
        o.top_k = 0;
        o.min_p = 1.0f;
        for (uint64_t seed = 1; seed <= 3; seed++) {
            o.seed = seed;
            k = generate_one(m, &ref, &o, got, 64);
            CHECK_MSG(k == 24 && !memcmp(got, plain, 24 * sizeof(int32_t)), "%d ranks: min_p 1, seed %d: not greedy", ranks, (int)seed);
        }
        /* out-of-range values are refused, naming them */
        int32_t out[4];
        int num_out = 0;
        pf_generate_options bad = pf_generate_options_init();
        bad.min_p = 1.5f;
        CHECK(pf_generate(m, plain, 2, &bad, out, 4, &num_out) == PF_ERROR_INVALID_ARGUMENT && strstr(pf_error_message(m), "min_p"));
        bad = pf_generate_options_init();
        pf_token_bias outside = {ref.vocab_size, 1.0f};
        bad.logit_bias = &outside;
        bad.num_logit_bias = 1;
        CHECK(pf_generate(m, plain, 2, &bad, out, 4, &num_out) == PF_ERROR_INVALID_ARGUMENT && strstr(pf_error_message(m), "logit_bias"));
        bad = pf_generate_options_init();
        const char *empty[1] = {""};
        bad.stop_strings = empty;
        bad.num_stop_strings = 1;
        CHECK(pf_generate(m, plain, 2, &bad, out, 4, &num_out) == PF_ERROR_INVALID_ARGUMENT && strstr(pf_error_message(m), "stop string 0"));
        bad.stop_strings = stops;
        bad.num_beams = 2;
        CHECK(pf_generate(m, plain, 2, &bad, out, 4, &num_out) == PF_ERROR_INVALID_ARGUMENT && strstr(pf_error_message(m), "beam"));
        pf_free(m);
    }
}

/* Streamed requests join the continuous batch: three sent together start together (each
   callback, at its first token, waits up to 20 s for the other two to have theirs, which would
   never come if a stream held the model alone), give the tokens they give alone, and a callback
   that returns nonzero ends its own request there while the others go on. */
typedef struct together {
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    int started; /* streams that have their first token */
    int timed_out;
} together;

typedef struct stream_call {
    pf_model *model;
    together *t;
    int index, tokens, stop_after;
    int32_t out[24];
    int n;
    pf_result result;
} stream_call;

static int stream_together(void *user, int row, int32_t token, const char *text, size_t len) {
    stream_call *c = (stream_call *)user;
    (void)row, (void)token, (void)text, (void)len;
    if (c->tokens++ == 0) {
        together *t = c->t;
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 20;
        pthread_mutex_lock(&t->mutex);
        t->started++;
        pthread_cond_broadcast(&t->cond);
        while (t->started < 3 && !t->timed_out)
            if (pthread_cond_timedwait(&t->cond, &t->mutex, &until)) t->timed_out = 1;
        pthread_mutex_unlock(&t->mutex);
    }
    return c->stop_after && c->tokens >= c->stop_after;
}

static void *stream_call_main(void *arg) {
    stream_call *c = (stream_call *)arg;
    int32_t prompt[3] = {391, 330, (int32_t)(11 + c->index)};
    pf_generate_options o = pf_generate_options_init();
    o.max_new_tokens = 16;
    o.ignore_eos = 1;
    o.stream = stream_together;
    o.stream_user = c;
    c->result = pf_generate(c->model, prompt, 3, &o, c->out, 24, &c->n);
    return NULL;
}

static void test_streams_batched(void) {
    for (int ranks = 1; ranks <= 2; ranks++) {
        pf_model *m = gpt2_tiny_split(ranks, 4, 0);
        if (!m) return;
        static together t;
        pthread_mutex_init(&t.mutex, NULL);
        pthread_cond_init(&t.cond, NULL);
        t.started = t.timed_out = 0;
        stream_call calls[3];
        pthread_t threads[3];
        pf_testing_batch_rows = 0;
        for (int i = 0; i < 3; i++) {
            memset(&calls[i], 0, sizeof calls[i]);
            calls[i].model = m, calls[i].t = &t, calls[i].index = i;
            calls[i].stop_after = i == 2 ? 5 : 0;
            pthread_create(&threads[i], NULL, stream_call_main, &calls[i]);
        }
        for (int i = 0; i < 3; i++) pthread_join(threads[i], NULL);
        CHECK_MSG(!t.timed_out && t.started == 3, "%d ranks: streams sent together did not start together", ranks);
        CHECK_MSG(pf_testing_batch_rows >= 2, "%d ranks: no decode step ran two streams' rows (%d)", ranks, pf_testing_batch_rows);
        for (int i = 0; i < 3; i++) { /* the same request alone, without a stream */
            int32_t prompt[3] = {391, 330, (int32_t)(11 + i)}, alone[24];
            int n = 0;
            pf_generate_options o = pf_generate_options_init();
            o.max_new_tokens = 16;
            o.ignore_eos = 1;
            CHECK(pf_generate(m, prompt, 3, &o, alone, 24, &n) == PF_OK);
            int want = calls[i].stop_after ? calls[i].stop_after : 16;
            CHECK_MSG(calls[i].result == PF_OK && calls[i].n == want && calls[i].tokens == want &&
                      !memcmp(calls[i].out, alone, (size_t)want * sizeof(int32_t)),
                      "%d ranks: stream %d: %s, %d tokens (%d streamed), want %d as alone", ranks, i,
                      pf_result_string(calls[i].result), calls[i].n, calls[i].tokens, want);
        }
        pthread_mutex_destroy(&t.mutex);
        pthread_cond_destroy(&t.cond);
        pf_free(m);
    }
}

/* logprobs: what a callback received, one entry per new token of row 0. */
typedef struct logprobs_seen {
    int count, streamed, order_ok, other_rows;
    int32_t tokens[32], top_tokens[32][5];
    float logprobs[32], top_logprobs[32][5];
    int num_top;
} logprobs_seen;

static void logprobs_record(void *user, int row, int32_t token, float logprob, const int32_t *top_tokens,
                            const float *top_logprobs, int num_top) {
    logprobs_seen *s = (logprobs_seen *)user;
    if (row != 0) {
        s->other_rows++;
        return;
    }
    if (s->count != s->streamed) s->order_ok = 0; /* each token's logprobs come before its stream callback */
    if (s->count >= 32) return;
    s->tokens[s->count] = token;
    s->logprobs[s->count] = logprob;
    s->num_top = num_top;
    for (int k = 0; k < num_top && k < 5; k++) {
        s->top_tokens[s->count][k] = top_tokens[k];
        s->top_logprobs[s->count][k] = top_logprobs[k];
    }
    s->count++;
}

static int logprobs_stream(void *user, int row, int32_t token, const char *text, size_t text_len) {
    (void)token, (void)text, (void)text_len;
    logprobs_seen *s = (logprobs_seen *)user;
    if (row == 0) s->streamed++;
    return 0;
}

/* Each greedy token's log-probability and top 5 against transformers' log_softmax of the raw
   logits (logprobs.txt: with a repetition penalty, so that the raw and processed distributions
   disagree at some steps), streamed and not, on 1, 2 and 3 ranks; sampled rows report theirs too;
   beam search and a top_logprobs without logprobs are refused. */
static void test_logprobs(void) {
    char path[1024];
    snprintf(path, sizeof path, "%s/gpt2-tiny/logprobs.txt", test_fixtures);
    FILE *f = fopen(path, "r");
    CHECK_MSG(f != NULL, "cannot open %s", path);
    if (!f) return;
    char line[1024];
    int32_t prompt[16], want_tokens[16], want_top[16][5];
    double want_lp[16], want_top_lp[16][5];
    int prompt_len = 0, steps = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#') continue;
        char *p = line, *end;
        if (!prompt_len) {
            for (long v; prompt_len < 16 && (v = strtol(p, &end, 10), end != p); p = end) prompt[prompt_len++] = (int32_t)v;
            continue;
        }
        if (steps >= 16) break;
        want_tokens[steps] = (int32_t)strtol(p, &p, 10);
        want_lp[steps] = strtod(p, &p);
        for (int k = 0; k < 5; k++) {
            want_top[steps][k] = (int32_t)strtol(p, &p, 10);
            want_top_lp[steps][k] = strtod(p, &p);
        }
        steps++;
    }
    fclose(f);
    CHECK_MSG(prompt_len == 6 && steps == 8, "%s: %d prompt ids, %d steps", path, prompt_len, steps);
    if (prompt_len != 6 || steps != 8) return;
    for (int ranks = 1; ranks <= 3; ranks++) {
        pf_model *m = gpt2_tiny_split(ranks, 4, 0);
        if (!m) return;
        for (int streamed = 0; streamed <= 1; streamed++) {
            logprobs_seen seen;
            memset(&seen, 0, sizeof seen);
            seen.order_ok = 1;
            pf_generate_options o = pf_generate_options_init();
            o.max_new_tokens = steps;
            o.repetition_penalty = 1.5f;
            o.logprobs = 1;
            o.top_logprobs = 5;
            o.logprobs_callback = logprobs_record;
            o.logprobs_user = &seen;
            if (streamed) o.stream = logprobs_stream, o.stream_user = &seen;
            int32_t out[16];
            int n = 0;
            pf_result r = pf_generate(m, prompt, prompt_len, &o, out, 16, &n);
            CHECK_MSG(r == PF_OK && n == steps && seen.count == steps && seen.num_top == 5 && seen.other_rows == 0,
                      "%d ranks, streamed %d: %s, %d tokens, %d logprobs (%d top)", ranks, streamed, pf_error_message(m), n,
                      seen.count, seen.num_top);
            CHECK_MSG(!streamed || (seen.order_ok && seen.streamed == steps), "%d ranks: logprobs not before each streamed token",
                      ranks);
            for (int t = 0; t < steps && t < seen.count && t < n; t++) {
                CHECK_MSG(out[t] == want_tokens[t] && seen.tokens[t] == out[t] && fabs(seen.logprobs[t] - want_lp[t]) < 1e-4,
                          "%d ranks, streamed %d, step %d: token %d (callback %d) logprob %.6f, transformers: %d %.6f", ranks,
                          streamed, t, (int)out[t], (int)seen.tokens[t], seen.logprobs[t], (int)want_tokens[t], want_lp[t]);
                for (int k = 0; k < 5; k++)
                    CHECK_MSG(seen.top_tokens[t][k] == want_top[t][k] && fabs(seen.top_logprobs[t][k] - want_top_lp[t][k]) < 1e-4,
                              "%d ranks, step %d, top %d: %d %.6f, transformers: %d %.6f", ranks, t, k,
                              (int)seen.top_tokens[t][k], seen.top_logprobs[t][k], (int)want_top[t][k], want_top_lp[t][k]);
            }
        }
        /* sampling: each token's logprob is its own row's, top 1 is at least as likely */
        logprobs_seen seen;
        memset(&seen, 0, sizeof seen);
        pf_generate_options o = pf_generate_options_init();
        o.do_sample = 1, o.seed = 7, o.temperature = 0.7f, o.max_new_tokens = 12, o.ignore_eos = 1;
        o.logprobs = 1, o.top_logprobs = 1, o.logprobs_callback = logprobs_record, o.logprobs_user = &seen;
        int32_t out[16], plain[16];
        int n = 0, n_plain = 0;
        CHECK(pf_generate(m, prompt, prompt_len, &o, out, 16, &n) == PF_OK && n == 12 && seen.count == 12);
        for (int t = 0; t < seen.count && t < n; t++)
            CHECK_MSG(seen.tokens[t] == out[t] && seen.logprobs[t] <= 0 && seen.top_logprobs[t][0] >= seen.logprobs[t] &&
                      (seen.top_tokens[t][0] != out[t] || seen.top_logprobs[t][0] == seen.logprobs[t]),
                      "%d ranks, sampled step %d: token %d logprob %f, top %d %f", ranks, t, (int)out[t], seen.logprobs[t],
                      (int)seen.top_tokens[t][0], seen.top_logprobs[t][0]);
        o.logprobs = 0, o.top_logprobs = 0; /* the same tokens without them */
        CHECK(pf_generate(m, prompt, prompt_len, &o, plain, 16, &n_plain) == PF_OK && n_plain == n &&
              !memcmp(plain, out, (size_t)n * sizeof(int32_t)));
        o = pf_generate_options_init();
        o.top_logprobs = 2;
        CHECK(pf_generate(m, prompt, prompt_len, &o, out, 16, &n) == PF_ERROR_INVALID_ARGUMENT &&
              strstr(pf_error_message(m), "top_logprobs"));
        o.logprobs = 1, o.num_beams = 2;
        CHECK(pf_generate(m, prompt, prompt_len, &o, out, 16, &n) == PF_ERROR_INVALID_ARGUMENT &&
              strstr(pf_error_message(m), "beam"));
        o.num_beams = 1, o.top_logprobs = PF_MAX_TOP_LOGPROBS + 1;
        CHECK(pf_generate(m, prompt, prompt_len, &o, out, 16, &n) == PF_ERROR_INVALID_ARGUMENT);
        pf_free(m);
    }
}

void test_generation(void) {
    test_recorded_cases();
    test_sampling();
    test_streaming();
    test_streamed_text();
    test_bad_options();
    test_concurrency();
    test_continuous_batching();
    test_busy_queue();
    test_streams_batched();
    test_free_while_requests_run(0);
    test_free_while_requests_run(1);
    test_generate_while_resplitting();
    test_text();
    test_logit_processors_and_stop_strings();
    test_logprobs();
}
