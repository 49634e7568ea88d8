/* Encoder-decoders (issue 11): each family's fixture made by transformers
   (test/make_seq2seq_fixtures.py) on 1, 2 and 3 ranks and after pf_to_cpu: the encoder's last
   hidden state (pf_encode) and the decoder's logits for given decoder inputs
   (pf_forward_seq2seq) within 1e-4, rows of different lengths in one batch; every recorded
   generate() case (greedy, beams, n-gram bans, batches, forced tokens) token for token; and the
   calls that do not fit an encoder-decoder refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../parallelformers.h"
#include "test.h"

#define TOLERANCE 1e-4f
#define ROWS 4

typedef struct seq2seq_reference {
    int rows;
    int32_t src[ROWS][TEST_MAX_IDS], dec[ROWS][TEST_MAX_IDS];
    int src_lengths[ROWS], dec_lengths[ROWS];
} seq2seq_reference;

/* reference.txt: rows=N, then src<i>= and dec<i>= comma ids. 0 on success. */
static int read_reference(const char *dir, seq2seq_reference *ref) {
    char path[1100], line[4096];
    snprintf(path, sizeof path, "%s/reference.txt", dir);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    memset(ref, 0, sizeof *ref);
    while (fgets(line, sizeof line, f)) {
        int row, values[TEST_MAX_IDS], n;
        char *eq = strchr(line, '=');
        if (!eq) continue;
        int is_src = sscanf(line, "src%d=", &row) == 1, is_dec = !is_src && sscanf(line, "dec%d=", &row) == 1;
        if (!strncmp(line, "rows=", 5)) ref->rows = atoi(line + 5);
        else if ((is_src || is_dec) && row >= 0 && row < ROWS && (n = test_parse_ids(eq + 1, values, TEST_MAX_IDS)) > 0) {
            int32_t *out = is_src ? ref->src[row] : ref->dec[row];
            for (int i = 0; i < n; i++) out[i] = values[i];
            *(is_src ? &ref->src_lengths[row] : &ref->dec_lengths[row]) = n;
        }
    }
    fclose(f);
    if (ref->rows < 1 || ref->rows > ROWS) return -1;
    for (int b = 0; b < ref->rows; b++)
        if (!ref->src_lengths[b] || !ref->dec_lengths[b]) return -1;
    return 0;
}

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

/* The encoder's output and the decoder's logits on the model as it is parallelized now. */
static void check_outputs(pf_model *m, const char *what, const char *dir, const seq2seq_reference *ref) {
    const int32_t *src[ROWS], *dec[ROWS];
    size_t src_tokens = 0, dec_tokens = 0;
    pf_model_info info = pf_get_info(m);
    for (int b = 0; b < ref->rows; b++) {
        src[b] = ref->src[b];
        dec[b] = ref->dec[b];
        src_tokens += (size_t)ref->src_lengths[b];
        dec_tokens += (size_t)ref->dec_lengths[b];
    }
    pf_encoding *e = NULL;
    pf_result r = pf_encode(m, src, NULL, ref->src_lengths, ref->rows, &e);
    CHECK_MSG(r == PF_OK, "%s: pf_encode: %s", what, pf_error_message(m));
    if (r == PF_OK) {
        CHECK(e->head == PF_HEAD_NONE && e->num_logits == 0 && e->offsets[ref->rows] == (int)src_tokens);
        check_floats(what, dir, "encoder_hidden.bin", e->last_hidden_state, src_tokens * (size_t)info.hidden_size);
    }
    pf_encoding_free(e);
    float *logits = (float *)malloc(dec_tokens * (size_t)info.vocab_size * sizeof(float));
    r = logits ? pf_forward_seq2seq(m, src, ref->src_lengths, dec, ref->dec_lengths, ref->rows, logits) : PF_ERROR_OUT_OF_MEMORY;
    CHECK_MSG(r == PF_OK, "%s: pf_forward_seq2seq: %s", what, pf_error_message(m));
    if (r == PF_OK) check_floats(what, dir, "decoder_logits.bin", logits, dec_tokens * (size_t)info.vocab_size);
    free(logits);
}

static void test_seq2seq_fixture(const char *name) {
    char dir[1024];
    seq2seq_reference ref;
    snprintf(dir, sizeof dir, "%s/%s", test_fixtures, name);
    if (read_reference(dir, &ref)) {
        CHECK_MSG(0, "reading %s/reference.txt", dir);
        return;
    }
    static test_gen_case cases[TEST_MAX_GEN_CASES];
    int num_cases = test_read_gen_cases(name, cases, TEST_MAX_GEN_CASES);
    CHECK_MSG(num_cases >= 5, "%s: generation_cases.txt has %d readable cases", name, num_cases);
    pf_model *m = NULL;
    pf_result r = pf_load(dir, NULL, &m);
    CHECK_MSG(r == PF_OK, "loading %s: %s", name, pf_error_message(m));
    if (r) {
        pf_free(m);
        return;
    }
    test_gen_cases_with_model_defaults(m, cases, num_cases);
    pf_model_info info = pf_get_info(m);
    CHECK_MSG(info.is_encoder_decoder && !info.is_encoder && info.head == PF_HEAD_CAUSAL_LM, "%s: encoder-decoder %d, head %d",
              name, info.is_encoder_decoder, (int)info.head);
    for (int ranks = 1; ranks <= 3; ranks++) {
        char what[128];
        snprintf(what, sizeof what, "%s on %d ranks", name, ranks);
        pf_parallel_options po = pf_parallel_options_init();
        po.device = PF_DEVICE_CPU;
        po.max_batch = 8;
        r = pf_parallelize(m, ranks, &po);
        CHECK_MSG(r == PF_OK, "%s: %s", what, pf_error_message(m));
        if (r) continue;
        check_outputs(m, what, dir, &ref);
        for (int k = 0; k < num_cases; k++) test_check_gen_case(m, what, &cases[k]);
    }
    r = pf_to_cpu(m);
    CHECK_MSG(r == PF_OK, "%s: pf_to_cpu: %s", name, pf_error_message(m));
    if (r == PF_OK) {
        char what[160];
        snprintf(what, sizeof what, "%s after pf_to_cpu", name);
        check_outputs(m, what, dir, &ref);
    }
    /* max_batch 1 (as the CLI sizes one greedy prompt): no beam rows to copy the encoder's output to */
    pf_parallel_options one = pf_parallel_options_init();
    one.device = PF_DEVICE_CPU;
    r = pf_parallelize(m, 2, &one);
    CHECK_MSG(r == PF_OK, "%s: max_batch 1: %s", name, pf_error_message(m));
    for (int k = 0; r == PF_OK && k < num_cases; k++)
        if (cases[k].num_prompts == 1 && cases[k].options.num_beams == 1 && cases[k].options.num_return_sequences == 1) {
            char what[160];
            snprintf(what, sizeof what, "%s with max_batch 1", name);
            test_check_gen_case(m, what, &cases[k]);
        }
    /* A decoder's pf_forward has no source to attend to. */
    float logit;
    CHECK(pf_forward(m, ref.dec[0], 1, 1, &logit) == PF_ERROR_UNSUPPORTED);
    pf_free(m);
}

/* Text in, text out: pf_generate_text and build/generate (a batch file of the sources) print
   transformers' decode(generate(tokenizer(source)), skip_special_tokens=True) (text_cases.txt),
   the prompt not echoed. */
static void test_text_fixture(const char *name) {
    char dir[1024], path[1100], line[1024], sources[8][1024], outputs[8][1024];
    int count = 0;
    snprintf(dir, sizeof dir, "%s/%s", test_fixtures, name);
    snprintf(path, sizeof path, "%s/text_cases.txt", dir);
    FILE *f = fopen(path, "r");
    while (f && count < 8 && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        if (!strncmp(line, "source=", 7)) snprintf(sources[count], sizeof sources[count], "%s", line + 7);
        else if (!strncmp(line, "output=", 7)) snprintf(outputs[count++], sizeof outputs[0], "%s", line + 7);
    }
    if (f) fclose(f);
    CHECK_MSG(count >= 3, "%s: text_cases.txt has %d cases", name, count);
    pf_model *m = NULL;
    pf_result r = pf_load(dir, NULL, &m);
    pf_parallel_options po = pf_parallel_options_init();
    po.device = PF_DEVICE_CPU;
    if (r == PF_OK) r = pf_parallelize(m, 2, &po);
    CHECK_MSG(r == PF_OK, "%s: %s", name, pf_error_message(m));
    pf_generate_options o = pf_model_generate_options(m);
    o.max_new_tokens = 12;
    char batch_path[] = "/tmp/pf_seq2seq_XXXXXX";
    int fd = mkstemp(batch_path);
    FILE *batch = fd >= 0 ? fdopen(fd, "w") : NULL;
    for (int k = 0; r == PF_OK && k < count; k++) {
        char *text = NULL;
        pf_result g = pf_generate_text(m, sources[k], &o, &text);
        CHECK_MSG(g == PF_OK && text && !strcmp(text, outputs[k]), "%s: \"%s\" gave \"%s\", transformers \"%s\"", name,
                  sources[k], text ? text : pf_error_message(m), outputs[k]);
        pf_string_free(text);
        if (batch) fprintf(batch, "%s\n", sources[k]);
    }
    pf_free(m);
    if (batch) fclose(batch);
    char command[2400], out[8192], want[8192] = "";
    for (int k = 0; k < count; k++) {
        strncat(want, outputs[k], sizeof want - strlen(want) - 2);
        strcat(want, "\n");
    }
    snprintf(command, sizeof command, "%s %s -n 12 --device cpu --gpus 2 --batch-file %s", test_generate_binary, dir, batch_path);
    FILE *p = popen(command, "r");
    size_t n = p ? fread(out, 1, sizeof out - 1, p) : 0;
    out[n] = 0;
    int status = p ? pclose(p) : -1;
    CHECK_MSG(status == 0 && !strcmp(out, want), "%s: build/generate printed \"%s\", want \"%s\"", name, out, want);
    unlink(batch_path);
}

/* A tokenizer of a kind we do not read (BlenderbotSmallTokenizer's files) beside the model: the model
   loads and runs on ids; the text calls say why there is no tokenizer. */
static void test_unread_tokenizer(void) {
    char dir[] = "/tmp/pf_bbsmall_XXXXXX", command[4096];
    if (!mkdtemp(dir)) {
        CHECK_MSG(0, "mkdtemp");
        return;
    }
    snprintf(command, sizeof command, "cp %s/blenderbot-small-s2s/config.json %s/blenderbot-small-s2s/model.safetensors "
             "%s/tokenizer-blenderbot-small/* %s",
             test_fixtures, test_fixtures, test_fixtures, dir);
    CHECK(system(command) == 0);
    pf_model *m = NULL;
    pf_result r = pf_load(dir, NULL, &m);
    CHECK_MSG(r == PF_OK && !pf_model_tokenizer(m), "Blenderbot-small with its own tokenizer files: %s", pf_error_message(m));
    char *text = NULL;
    pf_generate_options o = pf_generate_options_init();
    o.max_new_tokens = 2;
    if (r == PF_OK) {
        CHECK(pf_generate_text(m, "Hello", &o, &text) == PF_ERROR_INVALID_ARGUMENT && !text);
        CHECK_MSG(strstr(pf_error_message(m), "BlenderbotSmall") != NULL, "the message names the tokenizer: %s", pf_error_message(m));
        int32_t source[] = {5, 17, 2}, out[4];
        int n = 0;
        CHECK_MSG(pf_generate(m, source, 3, &o, out, 4, &n) == PF_OK && n == 2, "ids still run: %s", pf_error_message(m));
    }
    pf_free(m);
    snprintf(command, sizeof command, "rm -rf %s", dir);
    CHECK(system(command) == 0);
}

/* A hub-era T5 v1.1 file (its own lm_head.weight, tie_word_embeddings false, no
   scale_decoder_outputs): the untied head on the unscaled decoder output, on 1 and 2 ranks. */
static void test_untied_t5(void) {
    char dir[1024];
    seq2seq_reference ref;
    snprintf(dir, sizeof dir, "%s/t5v11-untied-s2s", test_fixtures);
    pf_model *m = NULL;
    pf_result r = read_reference(dir, &ref) ? PF_ERROR_IO : pf_load(dir, NULL, &m);
    CHECK_MSG(r == PF_OK, "t5v11-untied-s2s: %s", pf_error_message(m));
    for (int ranks = 1; r == PF_OK && ranks <= 2; ranks++) {
        char what[64];
        snprintf(what, sizeof what, "t5v11-untied-s2s on %d ranks", ranks);
        pf_parallel_options po = pf_parallel_options_init();
        po.device = PF_DEVICE_CPU;
        po.max_batch = 4;
        r = pf_parallelize(m, ranks, &po);
        CHECK_MSG(r == PF_OK, "%s: %s", what, pf_error_message(m));
        if (r == PF_OK) check_outputs(m, what, dir, &ref);
    }
    pf_free(m);
}

void test_seq2seq(void) {
    static const char *const fixtures[] = {"t5-s2s", "t5v11-s2s", "bart-s2s", "mbart-s2s", "blenderbot-s2s", "blenderbot-small-s2s", "marian-s2s", "pegasus-s2s",
                                              "m2m100-s2s", "mt5-s2s", "fsmt-s2s"};
    for (size_t i = 0; i < sizeof fixtures / sizeof fixtures[0]; i++) test_seq2seq_fixture(fixtures[i]);
    test_text_fixture("t5-text-s2s");
    test_text_fixture("bart-text-s2s");
    test_text_fixture("byt5-text-s2s");
    test_text_fixture("marian-text-s2s");
    test_unread_tokenizer();
    test_untied_t5();
}
