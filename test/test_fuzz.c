/* Crashes, hangs and over-reads found by fuzzing and by abusing the API (issue 17): each minimised
   input is a case here, and must end in a pf_result with a message (or in the right answer).
   Every case runs under alarm(), so a case that hangs fails the run with its name instead of
   blocking it. The model directories are written by the test itself; the configs that are
   parser inputs come from test/fuzz_seeds, the seed corpus of later fuzz targets. */
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test.h"
#include "testing_hooks.h"

/* Generous for the sanitizer and valgrind builds; a healthy case takes well under a second. */
#ifndef CASE_SECONDS
#define CASE_SECONDS 120
#endif

static const char *current_case = "";

static void on_alarm(int sig) {
    (void)sig;
    static const char prefix[] = "FAIL test_fuzz.c: hung (alarm): ";
    ssize_t ignored = write(2, prefix, sizeof prefix - 1);
    ignored = write(2, current_case, strlen(current_case));
    ignored = write(2, "\n", 1);
    (void)ignored;
    _exit(1);
}

static void begin_case(const char *name) {
    current_case = name;
    alarm(CASE_SECONDS);
}

static void end_case(void) { alarm(0); }

/* Checks a result code and that the model's message holds `needle`. */
#define CHECK_FAILS(m, got, want, needle)                                                           \
    CHECK_MSG((got) == (want) && strstr(pf_error_message(m), (needle)) != NULL,                    \
              "%s: got %s (\"%s\"), want %s mentioning \"%s\"", current_case, pf_result_string(got), \
              pf_error_message(m), pf_result_string(want), (needle))

/* ---- writing model directories ---- */

static char tmp_dir[256];

static void dir_path(char *out, size_t cap, const char *name) { snprintf(out, cap, "%s/%s", tmp_dir, name); }

static void remove_in_dir(const char *name) {
    char path[512];
    dir_path(path, sizeof path, name);
    unlink(path);
}

static void clean_dir(void) {
    const char *names[] = {"config.json", "model.safetensors", "generation_config.json", "tokenizer.json",
                           "model.safetensors.index.json"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) remove_in_dir(names[i]);
}

static void write_text(const char *name, const char *text) {
    char path[512];
    dir_path(path, sizeof path, name);
    CHECK_MSG(test_write_file(path, text, strlen(text)) == 0, "cannot write %s", path);
}

/* A seed of test/fuzz_seeds (next to the fixtures directory) as DIR/NAME. */
static int write_seed(const char *seed, const char *name) {
    char path[1024];
    size_t size;
    snprintf(path, sizeof path, "%s/../fuzz_seeds/%s", test_fixtures, seed);
    char *text = test_read_file(path, &size);
    CHECK_MSG(text != NULL, "cannot read the seed %s", path);
    if (!text) return -1;
    write_text(name, text);
    free(text);
    return 0;
}

typedef struct tensor_spec {
    char name[96];
    size_t rows, cols; /* cols 0: a vector */
} tensor_spec;

typedef struct model_spec {
    tensor_spec tensors[64];
    int count;
} model_spec;

static void add_tensor(model_spec *s, size_t rows, size_t cols, const char *fmt, int layer) {
    if (s->count == (int)(sizeof s->tensors / sizeof s->tensors[0])) return;
    tensor_spec *t = &s->tensors[s->count++];
    snprintf(t->name, sizeof t->name, fmt, layer);
    t->rows = rows;
    t->cols = cols;
}

/* DIR/model.safetensors holding s's tensors as F32 with small, varied values. */
static void write_safetensors(const model_spec *s) {
    size_t cap = 16384, len = 0, offset = 0;
    char *header = (char *)malloc(cap);
    if (!header) return;
    len += (size_t)snprintf(header, cap, "{");
    for (int i = 0; i < s->count; i++) {
        const tensor_spec *t = &s->tensors[i];
        size_t bytes = t->rows * (t->cols ? t->cols : 1) * 4;
        char shape[64];
        if (t->cols) snprintf(shape, sizeof shape, "[%zu, %zu]", t->rows, t->cols);
        else snprintf(shape, sizeof shape, "[%zu]", t->rows);
        len += (size_t)snprintf(header + len, cap - len, "%s\"%s\": {\"dtype\": \"F32\", \"shape\": %s, \"data_offsets\": [%zu, %zu]}",
                                i ? ", " : "", t->name, shape, offset, offset + bytes);
        offset += bytes;
    }
    len += (size_t)snprintf(header + len, cap - len, "}");
    char path[512];
    dir_path(path, sizeof path, "model.safetensors");
    FILE *f = fopen(path, "wb");
    CHECK_MSG(f != NULL && len < cap, "cannot write %s", path);
    if (f && len < cap) {
        unsigned char le[8];
        for (int i = 0; i < 8; i++) le[i] = (unsigned char)((unsigned long long)len >> (8 * i));
        fwrite(le, 1, 8, f);
        fwrite(header, 1, len, f);
        for (size_t i = 0; i < offset / 4; i++) {
            float v = (float)((i * 7919) % 13) * 0.05f - 0.3f;
            fwrite(&v, 4, 1, f);
        }
    }
    if (f) fclose(f);
    free(header);
}

/* A GPT-2 checkpoint of one layer (Conv1D weights are [in, out]). */
static void write_gpt2(int embd, int positions, int vocab) {
    model_spec s;
    s.count = 0;
    add_tensor(&s, (size_t)vocab, (size_t)embd, "transformer.wte.weight", 0);
    add_tensor(&s, (size_t)positions, (size_t)embd, "transformer.wpe.weight", 0);
    add_tensor(&s, (size_t)embd, 0, "transformer.h.%d.ln_1.weight", 0);
    add_tensor(&s, (size_t)embd, 0, "transformer.h.%d.ln_1.bias", 0);
    add_tensor(&s, (size_t)embd, 3 * (size_t)embd, "transformer.h.%d.attn.c_attn.weight", 0);
    add_tensor(&s, 3 * (size_t)embd, 0, "transformer.h.%d.attn.c_attn.bias", 0);
    add_tensor(&s, (size_t)embd, (size_t)embd, "transformer.h.%d.attn.c_proj.weight", 0);
    add_tensor(&s, (size_t)embd, 0, "transformer.h.%d.attn.c_proj.bias", 0);
    add_tensor(&s, (size_t)embd, 0, "transformer.h.%d.ln_2.weight", 0);
    add_tensor(&s, (size_t)embd, 0, "transformer.h.%d.ln_2.bias", 0);
    add_tensor(&s, (size_t)embd, 4 * (size_t)embd, "transformer.h.%d.mlp.c_fc.weight", 0);
    add_tensor(&s, 4 * (size_t)embd, 0, "transformer.h.%d.mlp.c_fc.bias", 0);
    add_tensor(&s, 4 * (size_t)embd, (size_t)embd, "transformer.h.%d.mlp.c_proj.weight", 0);
    add_tensor(&s, (size_t)embd, 0, "transformer.h.%d.mlp.c_proj.bias", 0);
    add_tensor(&s, (size_t)embd, 0, "transformer.ln_f.weight", 0);
    add_tensor(&s, (size_t)embd, 0, "transformer.ln_f.bias", 0);
    write_safetensors(&s);
}

/* An OPT checkpoint of one layer whose embeddings are `embed` wide, with the projections in and
   out when asked for (tied LM head). */
static void write_opt(int hidden, int ffn, int positions, int vocab, int embed, int project_in, int project_out) {
    model_spec s;
    size_t h = (size_t)hidden;
    s.count = 0;
    add_tensor(&s, (size_t)vocab, (size_t)embed, "model.decoder.embed_tokens.weight", 0);
    add_tensor(&s, (size_t)positions + 2, h, "model.decoder.embed_positions.weight", 0);
    if (project_in) add_tensor(&s, h, (size_t)embed, "model.decoder.project_in.weight", 0);
    if (project_out) add_tensor(&s, (size_t)embed, h, "model.decoder.project_out.weight", 0);
    const char *vectors[] = {"self_attn_layer_norm.weight", "self_attn_layer_norm.bias", "self_attn.q_proj.bias",
                             "self_attn.k_proj.bias", "self_attn.v_proj.bias", "self_attn.out_proj.bias",
                             "final_layer_norm.weight", "final_layer_norm.bias", "fc2.bias"};
    const char *squares[] = {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
                             "self_attn.out_proj.weight"};
    char name[96];
    for (size_t i = 0; i < sizeof vectors / sizeof vectors[0]; i++) {
        snprintf(name, sizeof name, "model.decoder.layers.%%d.%s", vectors[i]);
        add_tensor(&s, h, 0, name, 0);
    }
    for (size_t i = 0; i < sizeof squares / sizeof squares[0]; i++) {
        snprintf(name, sizeof name, "model.decoder.layers.%%d.%s", squares[i]);
        add_tensor(&s, h, h, name, 0);
    }
    add_tensor(&s, (size_t)ffn, h, "model.decoder.layers.%d.fc1.weight", 0);
    add_tensor(&s, (size_t)ffn, 0, "model.decoder.layers.%d.fc1.bias", 0);
    add_tensor(&s, h, (size_t)ffn, "model.decoder.layers.%d.fc2.weight", 0);
    add_tensor(&s, h, 0, "model.decoder.final_layer_norm.weight", 0);
    add_tensor(&s, h, 0, "model.decoder.final_layer_norm.bias", 0);
    write_safetensors(&s);
}

/* A fixture loaded from test/fixtures, or NULL (a failed check) when it does not load. */
static pf_model *load_fixture(const char *name) {
    char dir[1024];
    pf_model *m = NULL;
    snprintf(dir, sizeof dir, "%s/%s", test_fixtures, name);
    pf_result r = pf_load(dir, NULL, &m);
    CHECK_MSG(r == PF_OK, "%s: %s", dir, pf_error_message(m));
    if (r == PF_OK) return m;
    pf_free(m);
    return NULL;
}

/* ---- the cases ---- */

/* Issue 17.9: a NULL output gets a message naming it, not an empty one. */
static void case_memory_info_null(void) {
    begin_case("pf_get_memory_info(m, 0, NULL)");
    pf_model *m = load_fixture("gpt2-tiny");
    if (m) {
        CHECK(pf_parallelize(m, 1, NULL) == PF_OK);
        pf_result r = pf_get_memory_info(m, 0, NULL);
        CHECK_FAILS(m, r, PF_ERROR_INVALID_ARGUMENT, "info");
    }
    pf_free(m);
    end_case();
}

/* Issue 17.1: word_embed_proj_dim wider than hidden_size without project_in / project_out wrote
   embedding rows into hidden-wide buffers (a heap overflow; SIGSEGV in the CLI). */
static void case_opt_projection(void) {
    const int with[3][2] = {{0, 0}, {1, 0}, {0, 1}};
    for (int k = 0; k < 3; k++) {
        char name[96];
        snprintf(name, sizeof name, "OPT embed 64 > hidden 8, project_in %d, project_out %d", with[k][0], with[k][1]);
        begin_case(name);
        clean_dir();
        if (write_seed("config/opt-embed-wider-than-hidden.json", "config.json")) return;
        write_opt(8, 16, 8, 10, 64, with[k][0], with[k][1]);
        pf_model *m = NULL;
        pf_result r = pf_load(tmp_dir, NULL, &m);
        CHECK_FAILS(m, r, PF_ERROR_FORMAT, "the embedding width differs from hidden_size");
        pf_free(m);
        end_case();
    }
    /* The release CLI on the same directory: an error exit, not a signal. */
    begin_case("OPT embed 64 > hidden 8, CLI");
    char command[1024];
    snprintf(command, sizeof command, "%s %s --ids 1,2,3 -n 2 --gpus 2 2>/dev/null >/dev/null", test_generate_binary, tmp_dir);
    int status = system(command);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) != 0, "%s: status %d", command, status);
    end_case();
    /* With both projections the same config is a valid model, which must run on 2 ranks (the
       case above then fails for the reason it names). */
    begin_case("OPT embed 64 > hidden 8 with both projections");
    clean_dir();
    if (write_seed("config/opt-embed-wider-than-hidden.json", "config.json")) return;
    write_opt(8, 16, 8, 10, 64, 1, 1);
    pf_model *m = NULL;
    pf_result r = pf_load(tmp_dir, NULL, &m);
    CHECK_MSG(r == PF_OK, "%s: %s", current_case, pf_error_message(m));
    if (r == PF_OK) {
        int32_t ids[3] = {1, 2, 3}, out[4];
        float logits[3 * 10];
        int n = 0;
        CHECK(pf_parallelize(m, 2, NULL) == PF_OK);
        CHECK_MSG(pf_forward(m, ids, 1, 3, logits) == PF_OK, "%s", pf_error_message(m));
        CHECK_MSG(pf_generate(m, ids, 3, NULL, out, 4, &n) == PF_OK && n > 0, "%s", pf_error_message(m));
    }
    pf_free(m);
    end_case();
}

/* Issue 17.2: with fewer vocabulary rows than ranks, each rank decided on its own whether to
   all-reduce the embedding (by its own row count), so ranks paired different all-reduces and the
   caller waited forever. Logits must equal one rank's. */
static void case_vocab_smaller_than_ranks(void) {
    const struct { const char *seed; int vocab, ranks; } cases[] = {
        {"config/gpt2-vocab-1.json", 1, 2}, {"config/gpt2-vocab-1.json", 1, 3}, {"config/gpt2-vocab-3.json", 3, 4}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char name[96];
        snprintf(name, sizeof name, "vocab %d on %d ranks", cases[k].vocab, cases[k].ranks);
        begin_case(name);
        clean_dir();
        if (write_seed(cases[k].seed, "config.json")) return;
        write_gpt2(8, 8, cases[k].vocab);
        pf_model *m = NULL;
        pf_result r = pf_load(tmp_dir, NULL, &m);
        CHECK_MSG(r == PF_OK, "%s: %s", name, pf_error_message(m));
        if (r == PF_OK) {
            int32_t ids[4] = {0, 0, 0, 0}, out[3];
            if (cases[k].vocab > 2) ids[1] = 2, ids[3] = 1;
            float one[4 * 3], many[4 * 3];
            int n = 0;
            CHECK(pf_forward(m, ids, 1, 4, one) == PF_OK);
            CHECK_MSG(pf_parallelize(m, cases[k].ranks, NULL) == PF_OK, "%s", pf_error_message(m));
            CHECK_MSG(pf_forward(m, ids, 1, 4, many) == PF_OK, "%s: %s", name, pf_error_message(m));
            float diff = test_max_abs_diff(one, many, (size_t)4 * cases[k].vocab);
            CHECK_MSG(diff < 1e-5f, "%s: logits differ from one rank's by %g", name, diff);
            CHECK_MSG(pf_generate(m, ids, 4, NULL, out, 3, &n) == PF_OK && n == 3, "%s: %s", name, pf_error_message(m));
        }
        pf_free(m);
        end_case();
    }
}

/* The check that ranks enter the same collectives must itself catch a rank that skips one (else
   the case above proves nothing about the next such decision): an error naming both, not a hang
   and not wrong sums; the next request runs normally. */
static void case_collective_check(void) {
    begin_case("a rank skips an all-reduce");
    pf_model *m = load_fixture("gpt2-tiny");
    if (m) {
        int32_t ids[3] = {1, 2, 3};
        float logits[3 * 500];
        CHECK(pf_parallelize(m, 2, NULL) == PF_OK);
        for (int countdown = 1; countdown <= 3; countdown++) { /* the embedding's, attention's, MLP's */
            pf_testing_skip_reduce_rank = 1;
            pf_testing_skip_reduce_countdown = countdown;
            pf_result r = pf_forward(m, ids, 1, 3, logits);
            pf_testing_skip_reduce_rank = -1;
            CHECK_FAILS(m, r, PF_ERROR_DEVICE, "collective mismatch");
        }
        CHECK_MSG(pf_forward(m, ids, 1, 3, logits) == PF_OK, "after the mismatch: %s", pf_error_message(m));
    }
    pf_free(m);
    end_case();
}

/* Issue 17.3: beam search's top K is max(2, eos ids + 1) x beams, which many eos ids made larger
   than the vocab x beams candidates that exist (a heap over-read). */
static void case_beam_many_eos(void) {
    static int32_t eos[5000];
    for (int i = 0; i < 5000; i++) eos[i] = i % 500;
    const struct { int num_eos, beams, sample; } cases[] = {{500, 2, 0}, {5000, 2, 0}, {500, 3, 1}, {5000, 4, 0}};
    pf_model *m = load_fixture("gpt2-tiny");
    if (!m) return;
    pf_parallel_options po = pf_parallel_options_init();
    po.max_batch = 4;
    CHECK(pf_parallelize(m, 2, &po) == PF_OK);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char name[96];
        snprintf(name, sizeof name, "%d beams%s, %d eos ids, vocab 500", cases[k].beams, cases[k].sample ? " sampled" : "",
                 cases[k].num_eos);
        begin_case(name);
        pf_generate_options o = pf_generate_options_init();
        o.num_beams = cases[k].beams;
        o.num_return_sequences = cases[k].beams;
        o.do_sample = cases[k].sample;
        o.max_new_tokens = 3;
        o.eos_token_ids = eos;
        o.num_eos_token_ids = cases[k].num_eos;
        int32_t prompt[3] = {1, 2, 3};
        const int32_t *prompts[1] = {prompt};
        int length = 3;
        pf_generation g;
        pf_result r = pf_generate_batch(m, prompts, &length, 1, &o, &g);
        CHECK_MSG(r == PF_OK && g.num_sequences == cases[k].beams, "%s: %s", name, pf_error_message(m));
        /* every token is an eos: each hypothesis is one token long */
        for (int i = 0; r == PF_OK && i < g.num_sequences; i++) CHECK_MSG(g.lengths[i] == 1, "%s: length %d", name, g.lengths[i]);
        if (r == PF_OK) pf_generation_free(&g);
        end_case();
    }
    pf_free(m);

    /* The same through generation_config.json: gpt2-tiny's config and weights, the seed's
       defaults (2 beams, 500 eos ids), generated with NULL options. */
    begin_case("generation_config.json: 2 beams, 500 eos ids");
    clean_dir();
    char fixture[1024], path[512], cwd[512];
    if (test_fixtures[0] == '/' || !getcwd(cwd, sizeof cwd)) cwd[0] = 0;
    snprintf(fixture, sizeof fixture, "%s%s%s/gpt2-tiny/model.safetensors", cwd, cwd[0] ? "/" : "", test_fixtures);
    dir_path(path, sizeof path, "model.safetensors");
    CHECK_MSG(symlink(fixture, path) == 0, "cannot link %s", fixture);
    size_t size;
    snprintf(fixture, sizeof fixture, "%s/gpt2-tiny/config.json", test_fixtures);
    char *config = test_read_file(fixture, &size);
    CHECK_MSG(config != NULL, "cannot read %s", fixture);
    if (config) write_text("config.json", config);
    free(config);
    if (write_seed("generation_config/beams-2-eos-ids-500.json", "generation_config.json")) return;
    m = NULL;
    pf_result r = pf_load(tmp_dir, NULL, &m);
    CHECK_MSG(r == PF_OK, "%s: %s", current_case, pf_error_message(m));
    pf_parallel_options two = pf_parallel_options_init();
    two.max_batch = 2;
    if (r == PF_OK) r = pf_parallelize(m, 2, &two);
    if (r == PF_OK) {
        int32_t prompt[3] = {1, 2, 3};
        const int32_t *prompts[1] = {prompt};
        int length = 3;
        pf_generation g;
        r = pf_generate_batch(m, prompts, &length, 1, NULL, &g);
        CHECK_MSG(r == PF_OK && g.num_sequences == 2, "%s: %s", current_case, pf_error_message(m));
        if (r == PF_OK) pf_generation_free(&g);
    }
    pf_free(m);
    end_case();
}

/* Issue 17.4: batch x num_return_sequences (or x num_beams) in int wrapped past the max_batch
   check (then a heap overflow), and min_new_tokens = INT_MAX overflowed the minimum length. */
static void case_count_overflow(void) {
    const struct { int batch, beams, returns, sample; } cases[] = {
        {2, 1, 1 << 30, 1},       /* 2^31: negative in int */
        {4, 1, (1 << 30) + 1, 1}, /* 2^32 + 4: 4 in int */
        {4, (1 << 30) + 1, 1, 0}, /* the same through num_beams */
        {2, INT_MAX, INT_MAX, 0},
    };
    pf_model *m = load_fixture("gpt2-tiny");
    if (!m) return;
    pf_parallel_options po = pf_parallel_options_init();
    po.max_batch = 4;
    CHECK(pf_parallelize(m, 2, &po) == PF_OK);
    int32_t prompt[3] = {1, 2, 3};
    const int32_t *prompts[4] = {prompt, prompt, prompt, prompt};
    int lengths[4] = {3, 3, 3, 3};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char name[128];
        snprintf(name, sizeof name, "batch %d x beams %d x returns %d", cases[k].batch, cases[k].beams, cases[k].returns);
        begin_case(name);
        pf_generate_options o = pf_generate_options_init();
        o.num_beams = cases[k].beams;
        o.num_return_sequences = cases[k].returns;
        o.do_sample = cases[k].sample;
        o.max_new_tokens = 2;
        pf_generation g;
        pf_result r = pf_generate_batch(m, prompts, lengths, cases[k].batch, &o, &g);
        CHECK_FAILS(m, r, PF_ERROR_INVALID_ARGUMENT, "max_batch");
        if (r == PF_OK) pf_generation_free(&g);
        end_case();
    }
    begin_case("min_new_tokens INT_MAX");
    pf_generate_options o = pf_generate_options_init();
    o.min_new_tokens = INT_MAX;
    o.max_new_tokens = 3;
    int32_t out[8];
    int n = 0;
    pf_result r = pf_generate(m, prompt, 3, &o, out, 8, &n);
    CHECK_MSG(r == PF_OK && n == 3, "%s: %s, %d tokens", current_case, pf_error_message(m), n);
    for (int i = 0; i < n; i++) CHECK_MSG(out[i] != 499, "%s: eos before the minimum", current_case);
    end_case();
    pf_free(m);
}

/* Issue 17.5: a FIFO where a file should be blocked pf_load forever (open waits for a writer), and
   config.json pointing at /dev/zero read until memory ran out; a huge JSON file is refused
   before it is read. */
static void case_special_files(void) {
    const struct { const char *file, *kind; int fifo; } cases[] = {
        {"config.json", "FIFO", 1}, {"config.json", "character device", 0},
        {"model.safetensors", "FIFO", 1}, {"model.safetensors", "character device", 0},
        {"generation_config.json", "FIFO", 1}, {"tokenizer.json", "FIFO", 1},
        {"tokenizer.json", "character device", 0}, {"model.safetensors.index.json", "FIFO", 1},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char name[128], path[512];
        snprintf(name, sizeof name, "%s is a %s", cases[k].file, cases[k].fifo ? "FIFO" : "link to /dev/zero");
        begin_case(name);
        clean_dir();
        if (write_seed("config/gpt2-vocab-3.json", "config.json")) return;
        write_gpt2(8, 8, 3);
        dir_path(path, sizeof path, cases[k].file);
        unlink(path);
        int made = cases[k].fifo ? mkfifo(path, 0600) : symlink("/dev/zero", path);
        CHECK_MSG(made == 0, "%s: cannot make %s", name, path);
        pf_model *m = NULL;
        pf_result r = pf_load(tmp_dir, NULL, &m);
        CHECK_FAILS(m, r, PF_ERROR_IO, cases[k].kind);
        CHECK_FAILS(m, r, PF_ERROR_IO, cases[k].file);
        pf_free(m);
        if (!strcmp(cases[k].file, "tokenizer.json")) { /* and the tokenizer alone */
            pf_tokenizer *t = NULL;
            char error[512] = "";
            r = pf_tokenizer_load(tmp_dir, &t, error, sizeof error);
            CHECK_MSG(r == PF_ERROR_IO && t == NULL && strstr(error, cases[k].kind), "%s: pf_tokenizer_load: %s (%s)", name,
                      pf_result_string(r), error);
            pf_tokenizer_free(t);
        }
        end_case();
    }
    begin_case("config.json of 300 MiB");
    clean_dir();
    char path[512];
    dir_path(path, sizeof path, "config.json");
    FILE *f = fopen(path, "wb");
    if (f) { /* sparse: the size is what counts */
        fputc('{', f);
        CHECK(ftruncate(fileno(f), (off_t)300 << 20) == 0);
        fclose(f);
    }
    pf_model *m = NULL;
    pf_result r = pf_load(tmp_dir, NULL, &m);
    CHECK_FAILS(m, r, PF_ERROR_FORMAT, "more than the 268435456");
    pf_free(m);
    end_case();
}

/* Issue 17.6: beam search's first step read the logits rows of beams 1..K-1, which the prefill
   (of beam 0 alone) never wrote: uninitialised reads, 263k valgrind errors in 20 cycles. Test
   builds poison the logits and fail a generation that scores an unwritten row; `make valgrind`
   runs the release build. */
static void case_beam_first_step(void) {
    begin_case("beam search first on a fresh model");
    pf_model *m = load_fixture("gpt2-tiny");
    if (!m) return;
    pf_parallel_options po = pf_parallel_options_init();
    po.max_batch = 6;
    CHECK(pf_parallelize(m, 2, &po) == PF_OK);
    int32_t first[4] = {1, 2, 3, 4}, second[2] = {5, 6};
    const int32_t *prompts[2] = {first, second};
    int lengths[2] = {4, 2};
    for (int beams = 2; beams <= 3; beams++) {
        pf_generate_options o = pf_generate_options_init();
        o.num_beams = beams;
        o.max_new_tokens = 3;
        pf_generation g;
        pf_result r = pf_generate_batch(m, prompts, lengths, 2, &o, &g);
        CHECK_MSG(r == PF_OK, "%s, %d beams: %s", current_case, beams, pf_error_message(m));
        if (r == PF_OK) pf_generation_free(&g);
    }
    pf_free(m);
    end_case();
}

/* Issue 17.7: a rank that holds no heads (6 heads on 7 ranks) rotated `qkv + offset` on its NULL
   buffer, and a partial rotary factor of 1e10 or NaN overflowed the float-to-int conversion of
   the rotary width (both undefined behaviour, seen by UBSan). */
static void case_rotary(void) {
    begin_case("LLaMA (6 heads) on 7 ranks");
    pf_model *m = load_fixture("llama");
    if (m) {
        int32_t ids[5] = {1, 5, 9, 13, 17}, out[4];
        static float one[5 * 512], many[5 * 512];
        int n = 0;
        CHECK(pf_forward(m, ids, 1, 5, one) == PF_OK);
        CHECK_MSG(pf_parallelize(m, 7, NULL) == PF_OK, "%s", pf_error_message(m));
        CHECK_MSG(pf_forward(m, ids, 1, 5, many) == PF_OK, "%s: %s", current_case, pf_error_message(m));
        float diff = test_max_abs_diff(one, many, 5 * 512);
        CHECK_MSG(diff < 1e-4f, "%s: logits differ from one rank's by %g", current_case, diff);
        CHECK_MSG(pf_generate(m, ids, 5, NULL, out, 4, &n) == PF_OK && n > 0, "%s: %s", current_case, pf_error_message(m));
    }
    pf_free(m);
    end_case();
    const struct { const char *seed, *key; } configs[] = {
        {"config/llama-partial-rotary-1e10.json", "partial_rotary_factor"},
        {"config/llama-partial-rotary-nan.json", "partial_rotary_factor"},
        {"config/gpt_neox-rotary-pct-nan.json", "rotary_pct"},
    };
    for (size_t k = 0; k < sizeof configs / sizeof configs[0]; k++) {
        begin_case(configs[k].seed);
        clean_dir();
        if (write_seed(configs[k].seed, "config.json")) return;
        m = NULL;
        pf_result r = pf_load(tmp_dir, NULL, &m);
        CHECK_FAILS(m, r, PF_ERROR_FORMAT, configs[k].key);
        pf_free(m);
        end_case();
    }
}

/* Issue 17.8: a stream callback that calls back into its own model waited forever for the
   request lock its own generation holds. Each such call is refused with a message; the
   generation goes on. */
typedef struct reentry {
    pf_model *model;
    int calls;
    pf_result results[5];
    char messages[5][256];
} reentry;

static int reentering_stream(void *user, int row, int32_t token, const char *text, size_t text_len) {
    (void)row, (void)token, (void)text, (void)text_len;
    reentry *e = (reentry *)user;
    if (e->calls) return 0; /* once is enough */
    int32_t ids[2] = {1, 2}, out[2];
    float logits[2 * 500];
    int n;
    pf_generation g;
    const int32_t *prompts[1] = {ids};
    int length = 2;
    e->results[0] = pf_forward(e->model, ids, 1, 2, logits);
    snprintf(e->messages[0], sizeof e->messages[0], "%s", pf_error_message(e->model));
    e->results[1] = pf_generate(e->model, ids, 2, NULL, out, 2, &n);
    snprintf(e->messages[1], sizeof e->messages[1], "%s", pf_error_message(e->model));
    e->results[2] = pf_generate_batch(e->model, prompts, &length, 1, NULL, &g);
    snprintf(e->messages[2], sizeof e->messages[2], "%s", pf_error_message(e->model));
    e->results[3] = pf_parallelize(e->model, 1, NULL);
    snprintf(e->messages[3], sizeof e->messages[3], "%s", pf_error_message(e->model));
    e->results[4] = pf_to_cpu(e->model);
    snprintf(e->messages[4], sizeof e->messages[4], "%s", pf_error_message(e->model));
    e->calls++;
    return 0;
}

static void case_reentry(void) {
    begin_case("a stream callback calls its own model");
    pf_model *m = load_fixture("gpt2-tiny");
    if (!m) return;
    CHECK(pf_parallelize(m, 2, NULL) == PF_OK);
    reentry e;
    memset(&e, 0, sizeof e);
    e.model = m;
    pf_generate_options o = pf_generate_options_init();
    o.max_new_tokens = 3;
    o.stream = reentering_stream;
    o.stream_user = &e;
    int32_t prompt[3] = {1, 2, 3}, out[3];
    int n = 0;
    pf_result r = pf_generate(m, prompt, 3, &o, out, 3, &n);
    CHECK_MSG(r == PF_OK && n == 3, "%s: the generation itself: %s", current_case, pf_error_message(m));
    CHECK(e.calls == 1);
    for (int i = 0; i < 5; i++)
        CHECK_MSG(e.results[i] == PF_ERROR_INVALID_ARGUMENT && strstr(e.messages[i], "inside"),
                  "%s: call %d gave %s (\"%s\")", current_case, i, pf_result_string(e.results[i]), e.messages[i]);
    /* and the model serves the next request */
    CHECK_MSG(pf_generate(m, prompt, 3, NULL, out, 3, &n) == PF_OK, "%s: after: %s", current_case, pf_error_message(m));
    pf_free(m);
    end_case();
}


/* Abuse of the public API that the other cases leave out: NULL pointers, ids outside the
   vocabulary, empty and over-long prompts, absurd options and rank counts, a request before
   pf_parallelize. Each must end in a pf_result other than PF_OK, not a crash. */
static void case_api_abuse(void) {
    begin_case("api abuse");
    pf_model *m = load_fixture("gpt2-tiny");
    if (!m) return end_case();
    pf_tokenizer *tok = pf_model_tokenizer(m);
    int32_t out[8], prompt[1] = {1};
    int n = 0;
    size_t count = 0;
    char *text = NULL;
    pf_generate_options o = pf_generate_options_init();
    o.max_new_tokens = 2;
    /* before pf_parallelize: runs on one CPU rank */
    CHECK_MSG(pf_generate(m, prompt, 1, &o, out, 8, &n) == PF_OK, "%s", pf_error_message(m));
    CHECK(pf_generate(NULL, prompt, 1, &o, out, 8, &n) != PF_OK);
    CHECK(pf_generate(m, NULL, 1, &o, out, 8, &n) != PF_OK);
    CHECK(pf_generate(m, prompt, 1, &o, NULL, 8, &n) != PF_OK);
    CHECK(pf_generate(m, prompt, 1, &o, out, 8, NULL) != PF_OK);
    CHECK(pf_generate_text(m, NULL, &o, &text) != PF_OK);
    CHECK(pf_generate_text(m, "a", &o, NULL) != PF_OK);
    CHECK(pf_tokenize(NULL, "a", 1, NULL, 0, &count) != PF_OK);
    CHECK(pf_tokenize(tok, NULL, 1, NULL, 0, &count) != PF_OK);
    CHECK(pf_detokenize(NULL, prompt, 1, NULL, 0, &count) != PF_OK);
    CHECK(pf_detokenize(tok, NULL, 1, NULL, 0, &count) != PF_OK);
    CHECK(pf_forward(m, NULL, 1, 1, NULL) != PF_OK);
    CHECK(pf_parallelize(NULL, 1, NULL) != PF_OK);
    CHECK(pf_parallelize(m, -1, NULL) != PF_OK);
    CHECK(pf_parallelize(m, 10000, NULL) != PF_OK);
    CHECK_MSG(pf_parallelize(m, 2, NULL) == PF_OK, "%s", pf_error_message(m));
    /* ids outside the vocabulary, empty and over-long prompts */
    int32_t bad_ids[2][1] = {{-1}, {1 << 30}};
    for (int k = 0; k < 2; k++) CHECK(pf_generate(m, bad_ids[k], 1, &o, out, 8, &n) != PF_OK);
    CHECK(pf_generate(m, prompt, 0, &o, out, 8, &n) != PF_OK);
    CHECK(pf_generate(m, prompt, -1, &o, out, 8, &n) != PF_OK);
    CHECK(pf_generate_text(m, "", &o, &text) != PF_OK || (pf_string_free(text), 1));
    text = NULL;
    static int32_t long_prompt[4096];
    CHECK(pf_generate(m, long_prompt, 4096, &o, out, 8, &n) != PF_OK);
    /* absurd options */
    pf_generate_options bad = o;
    bad.num_beams = 0;
    CHECK(pf_generate(m, prompt, 1, &bad, out, 8, &n) == PF_ERROR_INVALID_ARGUMENT);
    bad = o, bad.num_beams = 1000000;
    CHECK(pf_generate(m, prompt, 1, &bad, out, 8, &n) != PF_OK);
    bad = o, bad.do_sample = 1, bad.top_p = 2;
    CHECK(pf_generate(m, prompt, 1, &bad, out, 8, &n) == PF_ERROR_INVALID_ARGUMENT);
    bad = o, bad.do_sample = 1, bad.temperature = -1;
    CHECK(pf_generate(m, prompt, 1, &bad, out, 8, &n) == PF_ERROR_INVALID_ARGUMENT);
    bad = o, bad.max_new_tokens = -5;
    CHECK(pf_generate(m, prompt, 1, &bad, out, 8, &n) == PF_ERROR_INVALID_ARGUMENT);
    CHECK_MSG(pf_generate(m, prompt, 1, &o, out, 8, &n) == PF_OK, "still usable: %s", pf_error_message(m));
    pf_free(m);
    end_case();
}

/* An encoder-decoder's and an image encoder's calls abused: a clear result each, the model still
   usable afterwards. */
static void case_seq2seq_and_image_abuse(void) {
    begin_case("encoder-decoder and image encoder abuse");
    pf_model *m = load_fixture("fsmt-s2s");
    if (!m) return end_case();
    int32_t source[3] = {5, 17, 2}, start[1] = {2}, out[4], wide[1] = {125}; /* 125: a source id, not a target one */
    const int32_t *sources[1] = {source}, *decoders[1] = {start}, *nulls[1] = {NULL};
    int three = 3, one = 1, zero = 0, n = 0;
    float logits[110];
    pf_generate_options o = pf_generate_options_init();
    o.max_new_tokens = 2;
    CHECK(pf_forward_seq2seq(m, NULL, &three, decoders, &one, 1, logits) == PF_ERROR_INVALID_ARGUMENT);
    CHECK(pf_forward_seq2seq(m, sources, &three, decoders, &one, 1, NULL) == PF_ERROR_INVALID_ARGUMENT);
    CHECK(pf_forward_seq2seq(m, nulls, &three, decoders, &one, 1, logits) == PF_ERROR_INVALID_ARGUMENT);
    CHECK(pf_forward_seq2seq(m, sources, &zero, decoders, &one, 1, logits) == PF_ERROR_INVALID_ARGUMENT);
    CHECK(pf_forward_seq2seq(m, sources, &three, decoders, &one, 0, logits) == PF_ERROR_INVALID_ARGUMENT);
    CHECK(pf_forward_seq2seq(m, sources, &three, decoders, &one, 2, logits) == PF_ERROR_INVALID_ARGUMENT); /* max_batch 1 */
    const int32_t *target_only[1] = {wide};
    CHECK_MSG(pf_forward_seq2seq(m, target_only, &one, decoders, &one, 1, logits) == PF_OK, "%s", pf_error_message(m));
    CHECK(pf_forward_seq2seq(m, sources, &three, target_only, &one, 1, logits) == PF_ERROR_INVALID_ARGUMENT);
    pf_generate_options bad = o;
    bad.decoder_start_token_id = 1 << 30;
    CHECK(pf_generate(m, source, 3, &bad, out, 4, &n) == PF_ERROR_INVALID_ARGUMENT);
    bad = o, bad.encoder_no_repeat_ngram_size = -1;
    CHECK(pf_generate(m, source, 3, &bad, out, 4, &n) == PF_ERROR_INVALID_ARGUMENT);
    CHECK_MSG(pf_generate(m, source, 3, &o, out, 4, &n) == PF_OK && n == 2, "still usable: %s", pf_error_message(m));
    pf_free(m);
    m = load_fixture("gpt2-tiny");
    if (m) {
        int32_t prompt[1] = {1};
        pf_generate_options ngram = o;
        ngram.encoder_no_repeat_ngram_size = 2; /* a decoder has no source */
        CHECK(pf_generate(m, prompt, 1, &ngram, out, 4, &n) == PF_ERROR_INVALID_ARGUMENT);
        float pixel = 0;
        pf_encoding *e = NULL;
        CHECK(pf_encode_images(m, &pixel, 1, 1, &e) == PF_ERROR_UNSUPPORTED && !e);
        pf_free(m);
    }
    m = load_fixture("vit-cls");
    if (m) {
        static float pixels[3 * 32 * 32];
        pf_encoding *e = NULL;
        pixels[5] = NAN;
        CHECK(pf_encode_images(m, pixels, 3 * 32 * 32, 1, &e) == PF_ERROR_INVALID_ARGUMENT && !e);
        CHECK(pf_encode_images(m, pixels, 3 * 32 * 32, -1, &e) == PF_ERROR_INVALID_ARGUMENT);
        CHECK(pf_encode_images(m, pixels, 3 * 32 * 32, 1, NULL) == PF_ERROR_INVALID_ARGUMENT);
        pixels[5] = 0;
        CHECK_MSG(pf_encode_images(m, pixels, 3 * 32 * 32, 1, &e) == PF_OK && e && e->num_logits == 5, "%s", pf_error_message(m));
        pf_encoding_free(e);
        pf_free(m);
    }
    end_case();
}

/* Found by make fuzz (fuzz_tokenizer, seed test/fuzz_seeds/tokenizer/invalid-byte-no-ids): an
   empty text through a post-processor that adds special tokens pointed past a NULL id buffer
   (UBSan: zero offset on a null pointer). The special tokens alone come back. */
static void test_empty_text_with_specials(void) {
    static const char *const dirs[] = {"llama", "bloom", "tokenizer-bert", "tokenizer-roberta"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        char dir[1024];
        pf_tokenizer *t = NULL;
        snprintf(dir, sizeof dir, "%s/%s", test_fixtures, dirs[i]);
        begin_case(dirs[i]);
        int32_t ids[8];
        size_t n = 99;
        pf_result r = pf_tokenizer_load(dir, &t, NULL, 0);
        if (r == PF_OK) r = pf_tokenize_special(t, "", 0, ids, 8, &n);
        CHECK_MSG(r == PF_OK && n <= 4, "%s: empty text with special tokens: %s, %zu ids", dirs[i], pf_result_string(r), n);
        pf_tokenizer_free(t);
        end_case();
    }
}

/* Found by make fuzz (fuzz_gguf, seed test/fuzz_seeds/gguf/spm-vocabulary-without-merges.gguf): a
   SentencePiece vocabulary in which no piece splits into two others has no merges, and sorting
   that empty list passed qsort a NULL array (UBSan: null pointer argument). The file loads or is
   refused with a message; under make test-asan, UBSan checks the rest. */
static void test_gguf_vocabulary_without_merges(void) {
    char path[1024];
    snprintf(path, sizeof path, "%s/../fuzz_seeds/gguf/spm-vocabulary-without-merges.gguf", test_fixtures);
    begin_case(path);
    pf_model *m = NULL;
    pf_result r = pf_load(path, NULL, &m);
    CHECK_MSG(r == PF_OK || (m && pf_error_message(m)[0]), "%s: %s without a message", path, pf_result_string(r));
    pf_free(m);
    end_case();
}

/* ---- issue 31: work that grew faster than its input ---- */

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* What a case may take: the fixed code needs well under a second at -O2 and a few under the
   sanitizers; the quadratic code it replaced needed minutes. */
#define SCALE_SECONDS 30.0

/* 100,000 added tokens that share their first bytes (tokenizers with 10^5 exist): loading them
   deduplicated each by a linear search (quadratic: 40,000 took 3.9 s, 200,000 did not load in 120
   s), and every text position, pf_tokenizer_is_special and pf_tokenizer_token_id scanned them all.
   Each is a lookup now and a text is matched in one pass; the ids are checked too. */
static void case_many_added_tokens(void) {
    enum { N = 100000 };
    char path[512], name[32];
    begin_case("100,000 added tokens");
    dir_path(path, sizeof path, "tokenizer.json");
    FILE *f = fopen(path, "w");
    CHECK_MSG(f != NULL, "cannot write %s", path);
    if (!f) return;
    /* the vocab: the characters of the tokens and of the text, ids 0 .. 14 */
    fprintf(f, "{\"version\": \"1.0\", \"model\": {\"type\": \"BPE\", \"merges\": [], \"vocab\": {");
    for (int i = 0; i < 15; i++) fprintf(f, "%s\"%c\": %d", i ? ", " : "", "0123456789x <>_"[i], i);
    fprintf(f, "}}, \"added_tokens\": [");
    for (int i = 0; i < N; i++) /* even ones special */
        fprintf(f, "%s{\"id\": 0, \"content\": \"<tok_%06d>\", \"special\": %s}", i ? ", " : "", i, i % 2 ? "false" : "true");
    fprintf(f, "]}");
    fclose(f);

    double start = now_seconds();
    pf_tokenizer *t = NULL;
    char err[256] = "";
    pf_result r = pf_tokenizer_load(tmp_dir, &t, err, sizeof err);
    double loaded = now_seconds();
    CHECK_MSG(r == PF_OK && pf_tokenizer_vocab_size(t) == 15 + N, "%s: %s (%s)", current_case, pf_result_string(r), err);
    /* 100 KB of text: tokens among single characters */
    size_t cap = 100000, len = 0, n = 0, expect = 0;
    char *text = (char *)malloc(cap + 32);
    int32_t *ids = (int32_t *)malloc((cap + 32) * sizeof *ids);
    for (int i = 0; text && len < cap; i++, expect += 3) len += (size_t)sprintf(text + len, "x<tok_%06d> ", (int)((i * 7919L) % N));
    if (r == PF_OK && text && ids) {
        r = pf_tokenize(t, text, len, ids, cap + 32, &n);
        CHECK_MSG(r == PF_OK && n == expect && ids[0] == 10 && ids[1] == 15 && ids[2] == 11,
                  "%s: tokenize: %s, %zu ids (want %zu)", current_case, pf_result_string(r), n, expect);
        size_t back = 0, special = 0, found = 0;
        char *decoded = (char *)malloc(2 * len + 32);
        r = decoded ? pf_detokenize(t, ids, n, decoded, 2 * len + 32, &back) : PF_ERROR_OUT_OF_MEMORY;
        CHECK_MSG(r == PF_OK && back > len, "%s: detokenize: %s, %zu bytes", current_case, pf_result_string(r), back);
        free(decoded);
        for (int32_t id = 0; id < 15 + N; id++) special += (size_t)pf_tokenizer_is_special(t, id);
        for (int i = 0; i < N; i++) {
            snprintf(name, sizeof name, "<tok_%06d>", i);
            found += pf_tokenizer_token_id(t, name) == 15 + i;
        }
        CHECK_MSG(special == N / 2 && found == N, "%s: %zu special ids (want %d), %zu tokens by their text (want %d)",
                  current_case, special, N / 2, found, (int)N);
    }
    double done = now_seconds();
    CHECK_MSG(done - start < SCALE_SECONDS, "%s: %.1f s (loading %.1f s), want under %.0f s", current_case, done - start,
              loaded - start, SCALE_SECONDS);
    free(text);
    free(ids);
    pf_tokenizer_free(t);
    remove_in_dir("tokenizer.json");
    end_case();
}

/* ---- GGUF SentencePiece vocabularies ---- */

typedef struct byte_buf {
    unsigned char *p;
    size_t len, cap;
} byte_buf;

static void bb_put(byte_buf *b, const void *s, size_t n) {
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 4096;
        while (cap < b->len + n) cap *= 2;
        unsigned char *p = (unsigned char *)realloc(b->p, cap);
        if (!p) abort();
        b->p = p, b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
}

static void bb_uint(byte_buf *b, uint64_t v, int bytes) {
    unsigned char le[8];
    for (int i = 0; i < bytes; i++) le[i] = (unsigned char)(v >> (8 * i));
    bb_put(b, le, (size_t)bytes);
}

static uint64_t le_at(const unsigned char *p, int bytes) {
    uint64_t v = 0;
    for (int i = bytes; i-- > 0;) v = v << 8 | p[i];
    return v;
}

/* The seed tiny-llama-spm.gguf (a LLaMA of 16 tokens, its data 32-byte aligned) written as DIR/NAME
   with tokenizer.ggml.tokens, .scores and .token_type replaced by count tokens. */
static int write_spm_gguf(const char *name, const char *const *tokens, const float *scores, const int32_t *types,
                          size_t count) {
    static const int scalar_bytes[13] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    char path[1024];
    size_t size = 0, at = 24;
    snprintf(path, sizeof path, "%s/../fuzz_seeds/gguf/tiny-llama-spm.gguf", test_fixtures);
    unsigned char *seed = (unsigned char *)test_read_file(path, &size);
    CHECK_MSG(seed != NULL, "cannot read %s", path);
    if (!seed) return -1;
    byte_buf b = {NULL, 0, 0};
    uint64_t num_tensors = le_at(seed + 8, 8), num_kvs = le_at(seed + 16, 8);
    bb_put(&b, seed, 24);
    for (uint64_t k = 0; k < num_kvs; k++) { /* the seed's keys, but for the three arrays */
        size_t start = at, key_len = (size_t)le_at(seed + at, 8);
        const char *key = (const char *)seed + at + 8;
        uint32_t type = (uint32_t)le_at(seed + at + 8 + key_len, 4);
        at += 8 + key_len + 4;
        if (type == 8) at += 8 + (size_t)le_at(seed + at, 8);
        else if (type == 9) {
            uint32_t elem = (uint32_t)le_at(seed + at, 4);
            uint64_t n = le_at(seed + at + 4, 8);
            at += 12;
            for (uint64_t i = 0; i < n; i++) at += elem == 8 ? 8 + (size_t)le_at(seed + at, 8) : (size_t)scalar_bytes[elem];
        } else at += (size_t)scalar_bytes[type];
        int which = key_len == 21 && !memcmp(key, "tokenizer.ggml.tokens", 21) ? 1
                    : key_len == 21 && !memcmp(key, "tokenizer.ggml.scores", 21) ? 2
                    : key_len == 25 && !memcmp(key, "tokenizer.ggml.token_type", 25) ? 3 : 0;
        if (!which) {
            bb_put(&b, seed + start, at - start);
            continue;
        }
        bb_put(&b, seed + start, 8 + key_len);
        bb_uint(&b, 9, 4);
        bb_uint(&b, which == 1 ? 8 : which == 2 ? 6 : 5, 4);
        bb_uint(&b, count, 8);
        for (size_t i = 0; i < count; i++) {
            if (which == 1) {
                bb_uint(&b, strlen(tokens[i]), 8);
                bb_put(&b, tokens[i], strlen(tokens[i]));
            } else if (which == 2) {
                bb_put(&b, &scores[i], 4);
            } else {
                bb_uint(&b, (uint32_t)types[i], 4);
            }
        }
    }
    size_t infos = at;
    for (uint64_t i = 0; i < num_tensors; i++) { /* name, dimensions, type, offset */
        at += 8 + (size_t)le_at(seed + at, 8);
        at += 4 + 8 * (size_t)le_at(seed + at, 4) + 4 + 8;
    }
    bb_put(&b, seed + infos, at - infos);
    while (b.len % 32) bb_uint(&b, 0, 1);
    bb_put(&b, seed + (at + 31) / 32 * 32, size - (at + 31) / 32 * 32);
    dir_path(path, sizeof path, name);
    int r = test_write_file(path, (const char *)b.p, b.len);
    CHECK_MSG(r == 0, "cannot write %s", path);
    free(b.p);
    free(seed);
    return r;
}

/* A SentencePiece vocabulary of <unk>, <s>, </s>, <0x0A>, "\xe2\x96\x81" and `families` runs of a
   character c: c, cc, ..., c x longest (scores -length), as DIR/NAME. */
static int write_spm_runs(const char *name, int families, int longest) {
    static const char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    size_t count = 5 + (size_t)families * (size_t)longest, n = 0;
    char **tokens = (char **)calloc(count, sizeof *tokens);
    float *scores = (float *)calloc(count, sizeof *scores);
    int32_t *types = (int32_t *)calloc(count, sizeof *types);
    static const char *const first[5] = {"<unk>", "<s>", "</s>", "<0x0A>", "\xe2\x96\x81"};
    static const int32_t first_types[5] = {2, 3, 3, 6, 1};
    int r = -1;
    if (tokens && scores && types && families <= (int)sizeof letters - 1) {
        for (; n < 5; n++) tokens[n] = strdup(first[n]), types[n] = first_types[n], scores[n] = n == 4 ? -1.0f : 0.0f;
        for (int f = 0; f < families; f++)
            for (int len = 1; len <= longest; len++, n++) {
                if (!(tokens[n] = (char *)malloc((size_t)len + 1))) break;
                memset(tokens[n], letters[f], (size_t)len);
                tokens[n][len] = 0;
                types[n] = 1;
                scores[n] = -(float)len;
            }
        if (n == count) r = write_spm_gguf(name, (const char *const *)tokens, scores, types, count);
    }
    for (size_t i = 0; tokens && i < count; i++) free(tokens[i]);
    free(tokens);
    free(scores);
    free(types);
    return r;
}

/* Pieces a, aa, ..., a x 1600 (a 1.3 MB file): every split of every piece became a merge written as
   JSON and parsed again, cubic in the length (105 s and 3.1 GB before the file was refused). A
   normal piece longer than SentencePiece allows (512 characters) is refused first; at 512 the
   vocabulary loads (130,816 merges) and tokenizes; 33 such runs, 4.3 M merges, are more than a
   vocabulary may make and are refused before the merges are built. */
static void case_spm_merges(void) {
    static const struct {
        int families, longest;
        pf_result want;
        const char *needle;
    } cases[] = {{1, 1600, PF_ERROR_FORMAT, "512 characters"}, {1, 512, PF_OK, ""}, {33, 512, PF_ERROR_FORMAT, "merges"}};
    char path[512];
    dir_path(path, sizeof path, "spm.gguf");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char name[64];
        snprintf(name, sizeof name, "GGUF SentencePiece runs %d x %d", cases[i].families, cases[i].longest);
        begin_case(name);
        if (write_spm_runs("spm.gguf", cases[i].families, cases[i].longest)) {
            end_case();
            continue;
        }
        double start = now_seconds();
        pf_model *m = NULL;
        pf_result r = pf_load(path, NULL, &m);
        CHECK_FAILS(m, r, cases[i].want, cases[i].needle);
        if (r == PF_OK) { /* a run of 300 a's: its merges put it back together */
            char text[301], back[400];
            int32_t ids[400];
            size_t n = 0, len = 0;
            memset(text, 'a', 300);
            text[300] = 0;
            r = pf_tokenize(pf_model_tokenizer(m), text, 300, ids, 400, &n);
            if (r == PF_OK) r = pf_detokenize(pf_model_tokenizer(m), ids, n, back, sizeof back, &len);
            CHECK_MSG(r == PF_OK && n >= 1 && n <= 3 && len == 300 && !memcmp(back, text, 300),
                      "%s: \"a\" x 300: %s, %zu ids, %zu bytes back", current_case, pf_result_string(r), n, len);
        }
        pf_free(m);
        double took = now_seconds() - start;
        CHECK_MSG(took < SCALE_SECONDS, "%s: %.1f s, want under %.0f s", current_case, took, SCALE_SECONDS);
        end_case();
    }
    remove_in_dir("spm.gguf");
}

/* JSON text in memory (GGUF metadata made into config and tokenizer JSON, pf_register_policy_json's
   text) had no bound where files have 256 MiB. A text one byte over is refused before it is read
   (a map of /dev/zero: nothing is touched). */
static void case_json_bound(void) {
    size_t len = ((size_t)256 << 20) + 1;
    char error[256] = "";
    begin_case("in-memory JSON over 256 MiB");
    int fd = open("/dev/zero", O_RDONLY);
    void *text = fd >= 0 ? mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
    CHECK_MSG(text != MAP_FAILED, "cannot map /dev/zero");
    if (text != MAP_FAILED) {
        pf_result r = pf_register_policy_json((const char *)text, len, error, sizeof error);
        CHECK_MSG(r == PF_ERROR_FORMAT && strstr(error, "larger than 256 MiB"), "%s: %s (%s)", current_case,
                  pf_result_string(r), error);
        munmap(text, len);
    }
    if (fd >= 0) close(fd);
    end_case();
}

void test_fuzz(void) {
    test_empty_text_with_specials();
    test_gguf_vocabulary_without_merges();
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/pf_fuzz_XXXXXX");
    if (!mkdtemp(tmp_dir)) {
        CHECK_MSG(0, "cannot create a temporary directory");
        return;
    }
    signal(SIGALRM, on_alarm);
    case_memory_info_null();
    case_opt_projection();
    case_vocab_smaller_than_ranks();
    case_collective_check();
    case_beam_many_eos();
    case_count_overflow();
    case_special_files();
    case_beam_first_step();
    case_rotary();
    case_reentry();
    case_api_abuse();
    case_seq2seq_and_image_abuse();
    case_many_added_tokens();
    case_spm_merges();
    case_json_bound();
    alarm(0); /* a case that returned early left its alarm set */
    signal(SIGALRM, SIG_DFL);
    clean_dir();
    rmdir(tmp_dir);
}
