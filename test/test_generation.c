/* Generation as transformers' generate does it: every case of generation_cases.txt (recorded by
   test/make_generation_fixtures.py: beam search with length penalty and n-gram bans, repetition
   penalty, min length, bad words, several eos ids, padded batches) token for token, on 1 and 2
   ranks; sampling reproducible for a seed and equal across rank counts; streaming; the text API;
   contradictory options; 8 threads x 20 concurrent calls equal to the same calls made in turn. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../parallelformers.h"
#include "test.h"

#define MAX_IDS 64
#define MAX_ROWS 8

typedef struct gen_case {
    char name[64];
    pf_generate_options options;
    int32_t eos[4];
    int32_t bad_ids[8][4];
    pf_token_sequence bad[8];
    int prompts[MAX_ROWS][MAX_IDS], prompt_lengths[MAX_ROWS], num_prompts;
    int outputs[MAX_ROWS * 4][MAX_IDS], output_lengths[MAX_ROWS * 4], num_outputs;
    float scores[MAX_ROWS * 4];
    int num_scores;
} gen_case;

/* ---- a little reader for the one-line JSON of generate kwargs ---- */

static const char *skip(const char *p) {
    while (*p == ' ') p++;
    return p;
}

/* [1, 2, 3] into out; returns the count, p moved past the ']'. */
static int read_int_list(const char **p, int32_t *out, int cap) {
    int n = 0;
    *p = skip(*p + 1);
    while (**p && **p != ']') {
        char *end;
        long v = strtol(*p, &end, 10);
        if (n < cap) out[n] = (int32_t)v;
        n++;
        *p = skip(end);
        if (**p == ',') *p = skip(*p + 1);
    }
    if (**p == ']') (*p)++;
    return n;
}

static int parse_options(const char *json, gen_case *c) {
    pf_generate_options *o = &c->options;
    *o = pf_generate_options_init();
    const char *p = skip(json);
    if (*p++ != '{') return -1;
    while (*(p = skip(p)) && *p != '}') {
        char key[64];
        const char *q = strchr(p + 1, '"');
        if (*p != '"' || !q || q - p - 1 >= (long)sizeof key) return -1;
        memcpy(key, p + 1, (size_t)(q - p - 1));
        key[q - p - 1] = 0;
        p = skip(q + 1);
        if (*p++ != ':') return -1;
        p = skip(p);
        if (!strcmp(key, "bad_words_ids")) {
            p = skip(p + 1);
            while (*p == '[') {
                int n = c->options.num_bad_words;
                c->bad[n].length = read_int_list(&p, c->bad_ids[n], 4);
                c->bad[n].ids = c->bad_ids[n];
                c->options.num_bad_words++;
                p = skip(p);
                if (*p == ',') p = skip(p + 1);
            }
            p++; /* ] */
        } else if (!strcmp(key, "eos_token_id")) {
            o->num_eos_token_ids = *p == '[' ? read_int_list(&p, c->eos, 4) : (c->eos[0] = (int32_t)strtol(p, (char **)&p, 10), 1);
            o->eos_token_ids = c->eos;
        } else if (!strncmp(p, "true", 4) || !strncmp(p, "false", 5)) {
            int v = *p == 't';
            p += v ? 4 : 5;
            if (!strcmp(key, "early_stopping")) o->early_stopping = v ? PF_EARLY_STOPPING_ON : PF_EARLY_STOPPING_HEURISTIC;
            else if (!strcmp(key, "do_sample")) o->do_sample = v;
            else return -1;
        } else if (*p == '"') {
            if (strcmp(key, "early_stopping") || strncmp(p, "\"never\"", 7)) return -1;
            o->early_stopping = PF_EARLY_STOPPING_NEVER;
            p += 7;
        } else {
            char *end;
            double v = strtod(p, &end);
            p = end;
            if (!strcmp(key, "max_new_tokens")) o->max_new_tokens = (int)v;
            else if (!strcmp(key, "max_length")) o->max_length = (int)v;
            else if (!strcmp(key, "min_new_tokens")) o->min_new_tokens = (int)v;
            else if (!strcmp(key, "min_length")) o->min_length = (int)v;
            else if (!strcmp(key, "num_beams")) o->num_beams = (int)v;
            else if (!strcmp(key, "num_return_sequences")) o->num_return_sequences = (int)v;
            else if (!strcmp(key, "no_repeat_ngram_size")) o->no_repeat_ngram_size = (int)v;
            else if (!strcmp(key, "length_penalty")) o->length_penalty = (float)v;
            else if (!strcmp(key, "repetition_penalty")) o->repetition_penalty = (float)v;
            else if (!strcmp(key, "pad_token_id")) o->pad_token_id = (int)v;
            else return -1;
        }
        p = skip(p);
        if (*p == ',') p++;
    }
    o->bad_words = c->bad;
    return 0;
}

/* Reads every case of FIXTURE/generation_cases.txt; returns the count or -1. */
static int read_cases(const char *fixture, gen_case *cases, int cap) {
    char path[1024], line[4096];
    snprintf(path, sizeof path, "%s/%s/generation_cases.txt", test_fixtures, fixture);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    int n = -1, bad = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        char *v = strchr(line, '=');
        if (line[0] == '#' || !v) continue;
        *v++ = 0;
        if (!strcmp(line, "case")) {
            if (++n >= cap) break;
            memset(&cases[n], 0, sizeof cases[n]);
            snprintf(cases[n].name, sizeof cases[n].name, "%s", v);
        } else if (n < 0) {
            bad = 1;
        } else if (!strcmp(line, "options")) {
            bad |= parse_options(v, &cases[n]) != 0;
        } else if (!strcmp(line, "prompt") && cases[n].num_prompts < MAX_ROWS) {
            gen_case *c = &cases[n];
            c->prompt_lengths[c->num_prompts] = test_parse_ids(v, c->prompts[c->num_prompts], MAX_IDS);
            c->num_prompts++;
        } else if (!strcmp(line, "output") && cases[n].num_outputs < MAX_ROWS * 4) {
            gen_case *c = &cases[n];
            c->output_lengths[c->num_outputs] = *v ? test_parse_ids(v, c->outputs[c->num_outputs], MAX_IDS) : 0;
            c->num_outputs++;
        } else if (!strcmp(line, "score") && cases[n].num_scores < MAX_ROWS * 4) {
            cases[n].scores[cases[n].num_scores++] = strtof(v, NULL);
        }
    }
    fclose(f);
    return bad ? -1 : (n >= cap ? cap : n + 1);
}

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

static void check_case(pf_model *m, const char *fixture, int ranks, const gen_case *c) {
    const int32_t *prompts[MAX_ROWS];
    int32_t storage[MAX_ROWS][MAX_IDS];
    for (int b = 0; b < c->num_prompts; b++) {
        for (int t = 0; t < c->prompt_lengths[b]; t++) storage[b][t] = c->prompts[b][t];
        prompts[b] = storage[b];
    }
    pf_generation g;
    pf_result r = pf_generate_batch(m, prompts, c->prompt_lengths, c->num_prompts, &c->options, &g);
    CHECK_MSG(r == PF_OK, "%s/%s on %d ranks: %s", fixture, c->name, ranks, pf_error_message(m));
    if (r) return;
    CHECK_MSG(g.num_sequences == c->num_outputs, "%s/%s: %d sequences, want %d", fixture, c->name, g.num_sequences,
              c->num_outputs);
    for (int i = 0; i < g.num_sequences && i < c->num_outputs; i++) {
        int same = g.lengths[i] == c->output_lengths[i];
        for (int t = 0; same && t < g.lengths[i]; t++) same = g.tokens[i][t] == c->outputs[i][t];
        CHECK_MSG(same, "%s/%s on %d ranks: sequence %d differs from transformers (%d tokens, first %d; want %d, first %d)",
                  fixture, c->name, ranks, i, g.lengths[i], g.lengths[i] ? g.tokens[i][0] : -1, c->output_lengths[i],
                  c->output_lengths[i] ? c->outputs[i][0] : -1);
        if (i < c->num_scores)
            CHECK_MSG(fabsf(g.scores[i] - c->scores[i]) <= 1e-4f * (1 + fabsf(c->scores[i])),
                      "%s/%s: score %d is %g, transformers %g", fixture, c->name, i, g.scores[i], c->scores[i]);
    }
    pf_generation_free(&g);
}

static void test_recorded_cases(void) {
    static gen_case cases[32];
    const char *fixtures[] = {"gpt2-tiny", "gpt2-hub"};
    for (int f = 0; f < 2; f++) {
        int n = read_cases(fixtures[f], cases, 32);
        CHECK_MSG(n >= 11, "%s: generation_cases.txt has %d readable cases", fixtures[f], n);
        for (int ranks = 1; ranks <= 2; ranks++) {
            pf_model *m = open_model(fixtures[f], ranks, 16);
            for (int i = 0; m && i < n; i++) check_case(m, fixtures[f], ranks, &cases[i]);
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

void test_generation(void) {
    test_recorded_cases();
    test_sampling();
    test_streaming();
    test_bad_options();
    test_concurrency();
    test_text();
}
