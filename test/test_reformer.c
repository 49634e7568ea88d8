/* Reformer (issue 36) against transformers 5.24 (test/make_reformer_fixtures.py): torch.randn's
   draws bit for bit (the LSH rotations), ReformerModel's hidden states and ReformerModelWithLMHead's
   logits and greedy tokens on 1, 2 and 3 ranks (4 heads: 2, 1, 1) and after pf_to_cpu. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "testing_hooks.h"

#define TOLERANCE 1e-4f
#define REFORMER_ROWS 8

/* got against the fixture's float file within TOLERANCE. */
static void check_floats(const char *what, const char *dir, const char *file, const float *got, size_t count) {
    char path[1100];
    size_t n = 0;
    snprintf(path, sizeof path, "%s/%s", dir, file);
    float *want = test_read_floats(path, &n);
    CHECK_MSG(want && n == count, "%s: %s holds %zu floats, the output %zu", what, file, want ? n : 0, count);
    if (want && n == count) {
        float diff = test_max_abs_diff(got, want, n);
        CHECK_MSG(diff <= TOLERANCE, "%s: %s differs from transformers by %g", what, file, diff);
    }
    free(want);
}

/* The value of "key=" in a reference text (at a line's start), or NULL. */
static const char *reference_value(const char *text, const char *key) {
    size_t n = strlen(key);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (!strncmp(p, key, n) && p[n] == '=') return p + n + 1;
    return NULL;
}

/* torch.randn(count) after torch.manual_seed(seed), each case of torch-randn/randn_cases.txt, bit for bit:
   counts below 16 (the fp64 Box-Muller), 16, and above with and without a remainder. */
static void test_torch_randn(void) {
    char path[1100];
    snprintf(path, sizeof path, "%s/torch-randn/randn_cases.txt", test_fixtures);
    size_t text_size = 0;
    char *cases = test_read_file(path, &text_size);
    snprintf(path, sizeof path, "%s/torch-randn/randn.bin", test_fixtures);
    size_t total = 0, at = 0;
    float *want = test_read_floats(path, &total);
    CHECK_MSG(cases && want, "reading the torch-randn fixture");
    int n = 0;
    for (const char *p = cases; p && want && *p; n++) {
        unsigned long long seed = 0;
        size_t count = 0;
        int used = 0;
        if (sscanf(p, "%llu %zu%n", &seed, &count, &used) != 2 || at + count > total) {
            CHECK_MSG(0, "torch-randn case %d is malformed", n);
            break;
        }
        p += used;
        while (*p == '\n' || *p == ' ') p++;
        float *got = (float *)malloc(count * sizeof(float));
        pf_testing_torch_randn((uint64_t)seed, got, count);
        size_t same = 0;
        while (same < count && !memcmp(&got[same], &want[at + same], sizeof(float))) same++;
        CHECK_MSG(same == count, "torch.randn(%zu) after manual_seed(%llu): value %zu is %.9g, torch's %.9g", count, seed,
                  same, same < count ? got[same] : 0.0f, same < count ? want[at + same] : 0.0f);
        free(got);
        at += count;
    }
    CHECK_MSG(n >= 7 && at == total, "torch-randn: %d cases, %zu of %zu values", n, at, total);
    free(cases);
    free(want);
}

/* ReformerModel: each row's hidden states [length][2 hidden] (both streams normed), the rows left
   padded together as pf_encode pads them, on 1-3 ranks and after pf_to_cpu. */
static void test_reformer_encoder(void) {
    char dir[1024], path[1100];
    snprintf(dir, sizeof dir, "%s/reformer", test_fixtures);
    snprintf(path, sizeof path, "%s/reference.txt", dir);
    size_t text_size = 0;
    char *text = test_read_file(path, &text_size);
    int ids[REFORMER_ROWS][TEST_MAX_IDS], lengths[REFORMER_ROWS], rows = 0;
    const int32_t *row_ids[REFORMER_ROWS];
    int32_t stored[REFORMER_ROWS][TEST_MAX_IDS];
    const char *count = text ? reference_value(text, "rows") : NULL;
    if (count) rows = atoi(count);
    size_t tokens = 0;
    for (int b = 0; b < rows && b < REFORMER_ROWS; b++) {
        char key[16];
        snprintf(key, sizeof key, "ids%d", b);
        const char *v = reference_value(text, key);
        lengths[b] = v ? test_parse_ids(v, ids[b], TEST_MAX_IDS) : -1;
        for (int t = 0; t < lengths[b]; t++) stored[b][t] = ids[b][t];
        row_ids[b] = stored[b];
        tokens += lengths[b] > 0 ? (size_t)lengths[b] : 0;
    }
    free(text);
    pf_model *m = NULL;
    if (rows < 1 || rows > REFORMER_ROWS || pf_load(dir, NULL, &m) != PF_OK) {
        CHECK_MSG(0, "loading %s: %s", dir, m ? pf_error_message(m) : "no reference rows");
        pf_free(m);
        return;
    }
    pf_model_info info = pf_get_info(m);
    CHECK(info.head == PF_HEAD_NONE && info.is_encoder);
    for (int run = 0; run < 4; run++) {
        char what[96];
        pf_result r;
        if (run < 3) {
            pf_parallel_options po = pf_parallel_options_init();
            po.device = PF_DEVICE_CPU;
            po.max_batch = rows;
            r = pf_parallelize(m, run + 1, &po);
            snprintf(what, sizeof what, "reformer on %d ranks", run + 1);
        } else {
            r = pf_to_cpu(m);
            snprintf(what, sizeof what, "reformer after pf_to_cpu");
        }
        pf_encoding *e = NULL;
        if (r == PF_OK) r = pf_encode(m, row_ids, NULL, lengths, rows, &e);
        CHECK_MSG(r == PF_OK, "%s: %s", what, pf_error_message(m));
        if (r == PF_OK) {
            CHECK_MSG(e->hidden_size == 2 * info.hidden_size && e->offsets[rows] == (int)tokens, "%s: hidden width %d", what,
                      e->hidden_size);
            check_floats(what, dir, "reformer_hidden.bin", e->last_hidden_state, tokens * (size_t)e->hidden_size);
        }
        pf_encoding_free(e);
    }
    pf_free(m);
}

/* ReformerModelWithLMHead: every position's logits of one row (pf_forward), its hidden states
   (pf_encode) and transformers' greedy generate() (use_cache=False) token for token, on 1-3 ranks
   and after pf_to_cpu; beams refused. */
static void test_reformer_lm(void) {
    char dir[1024], path[1100];
    snprintf(dir, sizeof dir, "%s/reformer-lm", test_fixtures);
    test_reference ref;
    snprintf(path, sizeof path, "%s/reference.txt", dir);
    size_t text_size = 0;
    char *text = test_read_file(path, &text_size);
    int logits_ids[TEST_MAX_IDS], n_ids = -1;
    const char *v = text ? reference_value(text, "logits_ids") : NULL;
    if (v) n_ids = test_parse_ids(v, logits_ids, TEST_MAX_IDS);
    free(text);
    pf_model *m = NULL;
    if (n_ids < 1 || test_read_reference(dir, &ref) || pf_load(dir, NULL, &m) != PF_OK) {
        CHECK_MSG(0, "loading %s: %s", dir, m ? pf_error_message(m) : "no reference");
        pf_free(m);
        return;
    }
    pf_model_info info = pf_get_info(m);
    CHECK(info.head == PF_HEAD_CAUSAL_LM);
    int32_t row[TEST_MAX_IDS], prompt[TEST_MAX_IDS], out[TEST_MAX_IDS];
    for (int i = 0; i < n_ids; i++) row[i] = logits_ids[i];
    for (int i = 0; i < ref.num_prompt_ids; i++) prompt[i] = ref.prompt_ids[i];
    size_t vocab = (size_t)info.vocab_size;
    float *logits = (float *)malloc((size_t)n_ids * vocab * sizeof(float));
    pf_generate_options o = pf_generate_options_init();
    o.max_new_tokens = ref.max_new_tokens;
    for (int run = 0; run < 4; run++) {
        char what[96];
        pf_result r;
        if (run < 3) {
            pf_parallel_options po = pf_parallel_options_init();
            po.device = PF_DEVICE_CPU;
            po.max_batch = 1;
            r = pf_parallelize(m, run + 1, &po);
            snprintf(what, sizeof what, "reformer-lm on %d ranks", run + 1);
        } else {
            r = pf_to_cpu(m);
            snprintf(what, sizeof what, "reformer-lm after pf_to_cpu");
        }
        if (r == PF_OK) r = pf_forward(m, row, 1, n_ids, logits);
        CHECK_MSG(r == PF_OK, "%s: %s", what, pf_error_message(m));
        if (r == PF_OK) check_floats(what, dir, "logits.bin", logits, (size_t)n_ids * vocab);
        pf_encoding *e = NULL;
        const int32_t *rows[1] = {row};
        if (r == PF_OK) r = pf_encode(m, rows, NULL, &n_ids, 1, &e);
        CHECK_MSG(r == PF_OK, "%s, pf_encode: %s", what, pf_error_message(m));
        if (r == PF_OK) check_floats(what, dir, "reformer_hidden.bin", e->last_hidden_state, (size_t)n_ids * (size_t)e->hidden_size);
        pf_encoding_free(e);
        int n = 0;
        if (r == PF_OK) r = pf_generate(m, prompt, ref.num_prompt_ids, &o, out, TEST_MAX_IDS, &n);
        CHECK_MSG(r == PF_OK, "%s, pf_generate: %s", what, pf_error_message(m));
        int same = r == PF_OK && n == ref.num_greedy_ids;
        for (int i = 0; same && i < n; i++) same = out[i] == ref.greedy_ids[i];
        CHECK_MSG(same, "%s: %d tokens, not transformers' %d greedy ones", what, n, ref.num_greedy_ids);
    }
    o.num_beams = 2;
    int n = 0;
    CHECK(pf_generate(m, prompt, ref.num_prompt_ids, &o, out, TEST_MAX_IDS, &n) == PF_ERROR_UNSUPPORTED);
    CHECK(strstr(pf_error_message(m), "Reformer generates one prompt, one sequence at a time") != NULL);
    free(logits);
    pf_free(m);
}

void test_reformer(void) {
    test_torch_randn();
    test_reformer_encoder();
    test_reformer_lm();
}
