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
        for (int k = 0; k < num_cases; k++) /* LED's with global tokens: their own pass through the encoder */
            if (cases[k].num_global) test_check_gen_case(m, what, &cases[k]);
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

/* LED's encoder with global tokens (reference.txt's global<i>= lines, row 2 none): pf_encode_global
   gives transformers' encoder output with that global_attention_mask, on 1 to 3 ranks (4 heads). */
static void test_led_global_tokens(void) {
    char dir[1024], path[1100], line[4096];
    seq2seq_reference ref;
    snprintf(dir, sizeof dir, "%s/led-s2s", test_fixtures);
    snprintf(path, sizeof path, "%s/reference.txt", dir);
    int32_t global[ROWS][TEST_MAX_IDS] = {{0}};
    const int32_t *src[ROWS], *rows_global[ROWS];
    int found = 0;
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f)) {
        int row, values[TEST_MAX_IDS], n;
        char *eq = strchr(line, '=');
        if (eq && sscanf(line, "global%d=", &row) == 1 && row >= 0 && row < ROWS &&
            (n = test_parse_ids(eq + 1, values, TEST_MAX_IDS)) > 0) {
            for (int i = 0; i < n; i++) global[row][i] = values[i];
            found++;
        }
    }
    if (f) fclose(f);
    pf_model *m = NULL;
    if (read_reference(dir, &ref) || found != ref.rows || pf_load(dir, NULL, &m) != PF_OK) {
        CHECK_MSG(0, "led-s2s: reference.txt's global rows or the model: %s", pf_error_message(m));
        pf_free(m);
        return;
    }
    size_t tokens = 0, d = (size_t)pf_get_info(m).hidden_size;
    for (int b = 0; b < ref.rows; b++) src[b] = ref.src[b], rows_global[b] = global[b], tokens += (size_t)ref.src_lengths[b];
    for (int ranks = 1; ranks <= 3; ranks++) {
        char what[128];
        snprintf(what, sizeof what, "led-s2s with global tokens on %d ranks", ranks);
        pf_parallel_options po = pf_parallel_options_init();
        po.device = PF_DEVICE_CPU;
        po.max_batch = ref.rows;
        pf_encoding *e = NULL;
        pf_result r = pf_parallelize(m, ranks, &po);
        if (r == PF_OK) r = pf_encode_global(m, src, NULL, rows_global, ref.src_lengths, ref.rows, &e);
        CHECK_MSG(r == PF_OK, "%s: %s", what, pf_error_message(m));
        if (r == PF_OK) check_floats(what, dir, "encoder_hidden_global.bin", e->last_hidden_state, tokens * d);
        pf_encoding_free(e);
        const int32_t *dec[ROWS];
        size_t dec_tokens = 0, vocab = (size_t)pf_get_info(m).vocab_size;
        for (int b = 0; b < ref.rows; b++) dec[b] = ref.dec[b], dec_tokens += (size_t)ref.dec_lengths[b];
        float *logits = (float *)malloc(dec_tokens * vocab * sizeof(float));
        r = logits ? pf_forward_seq2seq_global(m, src, rows_global, ref.src_lengths, dec, ref.dec_lengths, ref.rows, logits)
                   : PF_ERROR_OUT_OF_MEMORY;
        CHECK_MSG(r == PF_OK, "%s: pf_forward_seq2seq_global: %s", what, pf_error_message(m));
        if (r == PF_OK) check_floats(what, dir, "decoder_logits_global.bin", logits, dec_tokens * vocab);
        free(logits);
    }
    /* generate's global_attention (its cases are in generation_cases.txt): a value other than 0 or 1
       refused naming it; pf_generate_text, which tokenizes the prompt itself, takes none */
    pf_generate_options o = pf_generate_options_init();
    o.max_new_tokens = 2;
    int32_t two[TEST_MAX_IDS] = {0}, out[4];
    two[3] = 2;
    const int32_t *bad_rows[1] = {two};
    o.global_attention = bad_rows;
    int n = 0;
    CHECK(pf_generate(m, src[0], ref.src_lengths[0], &o, out, 4, &n) == PF_ERROR_INVALID_ARGUMENT &&
          strstr(pf_error_message(m), "prompt 0, token 3: global attention 2 is not 0 or 1"));
    char *text = NULL;
    CHECK(pf_generate_text(m, "hello", &o, &text) == PF_ERROR_UNSUPPORTED && !text &&
          strstr(pf_error_message(m), "pf_generate_text takes no global_attention"));
    const int32_t *first_dec[1] = {ref.dec[0]};
    float *first_logits = (float *)malloc((size_t)ref.dec_lengths[0] * (size_t)pf_get_info(m).vocab_size * sizeof(float));
    CHECK(first_logits && pf_forward_seq2seq_global(m, src, bad_rows, ref.src_lengths, first_dec, ref.dec_lengths, 1,
                                                    first_logits) == PF_ERROR_INVALID_ARGUMENT &&
          strstr(pf_error_message(m), "source 0, token 3: global attention 2 is not 0 or 1"));
    free(first_logits);
    pf_free(m);
    /* build/generate --global-tokens: the global_ngram case's prompt, its global positions, its tokens */
    static test_gen_case cases[TEST_MAX_GEN_CASES];
    int num_cases = test_read_gen_cases("led-s2s", cases, TEST_MAX_GEN_CASES), at = -1;
    for (int k = 0; k < num_cases; k++)
        if (!strcmp(cases[k].name, "global_ngram")) at = k;
    CHECK_MSG(at >= 0 && cases[at].num_prompts == 1 && cases[at].num_outputs == 1, "led-s2s: no case global_ngram");
    if (at >= 0) {
        const test_gen_case *c = &cases[at];
        char ids[512] = "", positions[512] = "", want[512] = "", command[4096], got[4096];
        for (int t = 0; t < c->prompt_lengths[0]; t++) {
            snprintf(ids + strlen(ids), sizeof ids - strlen(ids), "%s%d", t ? "," : "", c->prompts[0][t]);
            if (c->global[0][t])
                snprintf(positions + strlen(positions), sizeof positions - strlen(positions), "%s%d", positions[0] ? "," : "", t);
        }
        for (int t = 0; t < c->output_lengths[0]; t++)
            snprintf(want + strlen(want), sizeof want - strlen(want), "%s%d", t ? "," : "", c->outputs[0][t]);
        snprintf(command, sizeof command, "%s %s --ids %s --global-tokens %s -n %d --no-repeat-ngram %d -r 2 --device cpu",
                 test_generate_binary, dir, ids, positions, c->options.max_new_tokens, c->options.no_repeat_ngram_size);
        int status = test_run_output(command, got, sizeof got);
        got[strcspn(got, "\n")] = 0;
        CHECK_MSG(status == 0 && !strcmp(got, want), "%s: exit %d, printed \"%s\", transformers' \"%s\"", command, status,
                  got, want);
        snprintf(command, sizeof command, "%s %s --ids %s --global-tokens 0,%d -n 2 --device cpu 2>&1", test_generate_binary,
                 dir, ids, c->prompt_lengths[0]);
        status = test_run_output(command, got, sizeof got);
        snprintf(want, sizeof want, "--global-tokens position %d is beyond prompt 1's %d tokens", c->prompt_lengths[0],
                 c->prompt_lengths[0]);
        CHECK_MSG(status == 1 && strstr(got, want), "%s: exit %d, %s", command, status, got);
        /* a model without global attention: the library's refusal */
        snprintf(command, sizeof command, "%s %s/bart-s2s --ids %s --global-tokens 0 -n 2 --device cpu 2>&1",
                 test_generate_binary, test_fixtures, ids);
        status = test_run_output(command, got, sizeof got);
        CHECK_MSG(status == 1 && strstr(got, "global_attention needs an encoder-decoder whose encoder has Longformer's"),
                  "%s: exit %d, %s", command, status, got);
    }
    /* a model without Longformer's attention refuses the option */
    snprintf(dir, sizeof dir, "%s/bart-s2s", test_fixtures);
    m = NULL;
    CHECK_MSG(pf_load(dir, NULL, &m) == PF_OK, "bart-s2s: %s", pf_error_message(m));
    const int32_t *none_rows[1] = {global[2]};
    o.global_attention = none_rows; /* even all 0 */
    CHECK(m && pf_generate(m, src[2], ref.src_lengths[2], &o, out, 4, &n) == PF_ERROR_UNSUPPORTED &&
          strstr(pf_error_message(m), "global_attention needs an encoder-decoder whose encoder has Longformer's"));
    const int32_t *dec0[1] = {ref.dec[0]};
    float *logit = m ? (float *)malloc((size_t)ref.dec_lengths[0] * (size_t)pf_get_info(m).vocab_size * sizeof(float)) : NULL;
    CHECK(logit && pf_forward_seq2seq_global(m, src + 2, none_rows, ref.src_lengths + 2, dec0, ref.dec_lengths, 1, logit) ==
                       PF_ERROR_UNSUPPORTED && strstr(pf_error_message(m), "has no global attention"));
    free(logit);
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
    int status = test_run_output(command, out, sizeof out);
    CHECK_MSG(status == 0 && !strcmp(out, want), "%s: build/generate printed \"%s\", want \"%s\"", name, out, want);
    unlink(batch_path);
}

/* A tokenizer of a kind we do not read (CpmTokenizer's files: jieba + SentencePiece) beside the model: the model
   loads and runs on ids; the text calls say why there is no tokenizer. */
static void test_unread_tokenizer(void) {
    char dir[] = "/tmp/pf_bbsmall_XXXXXX", command[4096];
    if (!mkdtemp(dir)) {
        CHECK_MSG(0, "mkdtemp");
        return;
    }
    snprintf(command, sizeof command, "cp %s/blenderbot-small-s2s/config.json %s/blenderbot-small-s2s/model.safetensors "
             "%s/tokenizer-cpm-refused/* %s",
             test_fixtures, test_fixtures, test_fixtures, dir);
    CHECK(system(command) == 0);
    pf_model *m = NULL;
    pf_result r = pf_load(dir, NULL, &m);
    CHECK_MSG(r == PF_OK && !pf_model_tokenizer(m), "Blenderbot-small with CPM's tokenizer files: %s", pf_error_message(m));
    char *text = NULL;
    pf_generate_options o = pf_generate_options_init();
    o.max_new_tokens = 2;
    if (r == PF_OK) {
        CHECK(pf_generate_text(m, "Hello", &o, &text) == PF_ERROR_INVALID_ARGUMENT && !text);
        CHECK_MSG(strstr(pf_error_message(m), "CpmTokenizer") != NULL, "the message names the tokenizer: %s", pf_error_message(m));
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

/* ---- Speech2Text (issue 16): test/make_speech2text_fixtures.py ---- */

#define S2T_ROWS 2
#define S2T_CASES 4

/* The script's generate() cases: greedy from generation_config.json, an eos that ends row 0
   early, a forced first token, beam search. */
static const char *const s2t_case_names[S2T_CASES] = {"generated", "generated_eos", "generated_forced", "generated_beams"};

typedef struct s2t_reference {
    int samples[S2T_ROWS], feature_frames[S2T_ROWS], encoder_frames[S2T_ROWS];
    int32_t decoder[S2T_ROWS][TEST_MAX_IDS], generated[S2T_CASES][S2T_ROWS][TEST_MAX_IDS];
    int decoder_lengths[S2T_ROWS], generated_lengths[S2T_CASES][S2T_ROWS];
} s2t_reference;

/* speech2text-s2s/reference.txt (see the script); 0 on success. */
static int s2t_read_reference(const char *dir, s2t_reference *ref) {
    char path[1100], line[1024];
    snprintf(path, sizeof path, "%s/reference.txt", dir);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    memset(ref, 0, sizeof *ref);
    int decoders = 0, generated[S2T_CASES] = {0}, counts = 0;
    while (fgets(line, sizeof line, f)) {
        int values[TEST_MAX_IDS], n;
        char *space = strchr(line, ' ');
        int *pair = !strncmp(line, "samples ", 8) ? ref->samples : !strncmp(line, "feature_frames ", 15) ? ref->feature_frames
                    : !strncmp(line, "encoder_frames ", 15) ? ref->encoder_frames : NULL;
        if (pair && sscanf(space, "%d %d", &pair[0], &pair[1]) == 2) counts++;
        int kase = -1;
        for (int k = 0; space && k < S2T_CASES; k++)
            if ((size_t)(space - line) == strlen(s2t_case_names[k]) && !strncmp(line, s2t_case_names[k], (size_t)(space - line)))
                kase = k;
        int is_decoder = !strncmp(line, "decoder_ids ", 12);
        int *row = is_decoder ? &decoders : kase >= 0 ? &generated[kase] : NULL;
        if (row && *row < S2T_ROWS && (n = test_parse_ids(space + 1, values, TEST_MAX_IDS)) > 0) {
            for (int i = 0; i < n; i++) (is_decoder ? ref->decoder[*row] : ref->generated[kase][*row])[i] = values[i];
            (is_decoder ? ref->decoder_lengths : ref->generated_lengths[kase])[(*row)++] = n;
        }
    }
    fclose(f);
    int complete = counts == 3 && decoders == S2T_ROWS;
    for (int k = 0; k < S2T_CASES; k++) complete &= generated[k] == S2T_ROWS;
    return complete ? 0 : -1;
}

/* The encoder's output of the padded batch and of its shorter row alone, and the decoder's
   teacher-forced logits, on the model as it is parallelized now. */
static void s2t_check_outputs(pf_model *m, const char *what, const char *dir, const s2t_reference *ref,
                              const float *const *features) {
    pf_model_info info = pf_get_info(m);
    pf_encoding *e = NULL;
    pf_result r = pf_encode_audio_features(m, features, ref->feature_frames, S2T_ROWS, &e);
    CHECK_MSG(r == PF_OK, "%s: pf_encode_audio_features: %s", what, pf_error_message(m));
    int frames = ref->encoder_frames[0] + ref->encoder_frames[1];
    if (r == PF_OK) {
        CHECK(e->batch == S2T_ROWS && e->offsets[1] == ref->encoder_frames[0] && e->offsets[2] == frames && !e->logits);
        if (e->offsets[2] == frames)
            check_floats(what, dir, "encoder_hidden.bin", e->last_hidden_state, (size_t)frames * (size_t)info.hidden_size);
    }
    pf_encoding_free(e);
    e = NULL;
    r = pf_encode_audio_features(m, features + 1, ref->feature_frames + 1, 1, &e);
    CHECK_MSG(r == PF_OK, "%s: pf_encode_audio_features alone: %s", what, pf_error_message(m));
    if (r == PF_OK && e->offsets[1] == ref->encoder_frames[1])
        check_floats(what, dir, "encoder_alone.bin", e->last_hidden_state, (size_t)ref->encoder_frames[1] * info.hidden_size);
    pf_encoding_free(e);
    const int32_t *dec[S2T_ROWS] = {ref->decoder[0], ref->decoder[1]};
    size_t tokens = (size_t)(ref->decoder_lengths[0] + ref->decoder_lengths[1]);
    float *logits = (float *)malloc(tokens * (size_t)info.vocab_size * sizeof(float));
    r = logits ? pf_forward_audio(m, features, ref->feature_frames, dec, ref->decoder_lengths, S2T_ROWS, logits)
               : PF_ERROR_OUT_OF_MEMORY;
    CHECK_MSG(r == PF_OK, "%s: pf_forward_audio: %s", what, pf_error_message(m));
    if (r == PF_OK) check_floats(what, dir, "teacher_logits.bin", logits, tokens * (size_t)info.vocab_size);
    free(logits);
    /* each generate() case over the model's generation_config.json (greedy, max_new_tokens 12):
       transformers' sequences after the decoder start token, token for token */
    for (int k = 0; k < S2T_CASES; k++) {
        pf_generate_options o = pf_model_generate_options(m);
        int32_t eos = 4;
        if (k == 1) o.eos_token_ids = &eos, o.num_eos_token_ids = 1;
        if (k == 2) o.forced_bos_token_id = 7;
        if (k == 3) o.num_beams = 2;
        pf_generation g;
        r = pf_generate_audio(m, features, ref->feature_frames, S2T_ROWS, &o, &g);
        CHECK_MSG(r == PF_OK && g.num_sequences == S2T_ROWS, "%s: pf_generate_audio %s: %s", what, s2t_case_names[k],
                  pf_error_message(m));
        for (int b = 0; r == PF_OK && b < g.num_sequences && b < S2T_ROWS; b++) {
            const int32_t *want = ref->generated[k][b] + 1; /* after the decoder start token */
            int want_length = ref->generated_lengths[k][b] - 1, same = g.lengths[b] == want_length;
            for (int t = 0; same && t < g.lengths[b]; t++) same = g.tokens[b][t] == want[t];
            CHECK_MSG(same, "%s: %s row %d: %d tokens (first %d), transformers %d (first %d)", what, s2t_case_names[k], b,
                      g.lengths[b], g.lengths[b] ? (int)g.tokens[b][0] : -1, want_length, (int)want[0]);
        }
        pf_generation_free(&g);
    }
}

/* pf_encode_audio on the waveforms themselves (through the model directory's extractor): the
   padded batch's encoder output. */
static void s2t_check_waveforms(pf_model *m, const char *dir, const s2t_reference *ref) {
    char path[1100];
    size_t n = 0;
    snprintf(path, sizeof path, "%s/waveforms.bin", dir);
    float *samples = test_read_floats(path, &n);
    const float *waves[S2T_ROWS] = {samples, samples ? samples + ref->samples[0] : NULL};
    pf_encoding *e = NULL;
    pf_result r = samples && n == (size_t)(ref->samples[0] + ref->samples[1])
                      ? pf_encode_audio(m, waves, ref->samples, S2T_ROWS, &e) : PF_ERROR_IO;
    CHECK_MSG(r == PF_OK, "speech2text: pf_encode_audio: %s", pf_error_message(m));
    int frames = ref->encoder_frames[0] + ref->encoder_frames[1];
    if (r == PF_OK) {
        CHECK(e->offsets[1] == ref->encoder_frames[0] && e->offsets[2] == frames);
        if (e->offsets[2] == frames)
            check_floats("speech2text from waveforms", dir, "encoder_hidden.bin", e->last_hidden_state,
                         (size_t)frames * (size_t)e->hidden_size);
    }
    pf_encoding_free(e);
    int none = 0;
    e = NULL;
    CHECK(pf_encode_audio(m, waves, &none, 1, &e) == PF_ERROR_INVALID_ARGUMENT && !e);
    free(samples);
}

/* The library's fbank features of each waveform equal the extractor's (fbank_features.bin, whose
   shorter row is padded with zeros). */
static void s2t_check_features(const char *dir, const s2t_reference *ref, const float *padded, size_t width) {
    char path[1100], error[256] = "";
    size_t n = 0;
    snprintf(path, sizeof path, "%s/waveforms.bin", dir);
    float *samples = test_read_floats(path, &n);
    pf_audio_processor *p = NULL;
    pf_result r = pf_audio_processor_load(dir, &p, error, sizeof error);
    CHECK_MSG(r == PF_OK && samples && n == (size_t)(ref->samples[0] + ref->samples[1]), "speech2text features: %s", error);
    const float *wave = samples;
    for (int b = 0; r == PF_OK && samples && b < S2T_ROWS; wave += ref->samples[b++]) {
        size_t rows = 0, columns = 0, count = (size_t)ref->feature_frames[b] * width;
        float *got = (float *)malloc(count * sizeof(float));
        r = pf_audio_features_size(p, (size_t)ref->samples[b], &rows, &columns, error, sizeof error);
        CHECK_MSG(r == PF_OK && rows == (size_t)ref->feature_frames[b] && columns == width, "row %d: %zu x %zu", b, rows, columns);
        if (r == PF_OK && got && rows * columns == count)
            r = pf_audio_features(p, wave, (size_t)ref->samples[b], got, count, error, sizeof error);
        if (r == PF_OK && got) {
            float diff = test_max_abs_diff(got, padded + (size_t)b * ref->feature_frames[0] * width, count);
            CHECK_MSG(diff <= TOLERANCE, "speech2text features row %d differ from the extractor's by %g", b, diff);
        }
        free(got);
    }
    pf_audio_processor_free(p);
    free(samples);
}

/* A copy of speech2text-s2s with `from` replaced by `to` in config.json (from NULL: as it is) and
   with the tensor name tensor_from renamed to tensor_to (as long; NULL: none) in its weights;
   the load's result, *m the model (the caller frees it). */
static pf_result s2t_load_edited(const char *from, const char *to, const char *tensor_from, const char *tensor_to,
                                 pf_model **m) {
    char dir[1024], path[1100], tmp[] = "/tmp/pf_s2t_XXXXXX", config_path[1200], weights_path[1200];
    *m = NULL;
    snprintf(dir, sizeof dir, "%s/speech2text-s2s", test_fixtures);
    size_t size = 0, bytes = 0;
    snprintf(path, sizeof path, "%s/config.json", dir);
    char *config = test_read_file(path, &size), *edited = config ? (char *)calloc(1, size + 256) : NULL;
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    char *weights = test_read_file(path, &bytes);
    int ok = config && edited && weights && mkdtemp(tmp) != NULL;
    char *found = ok && from ? strstr(config, from) : NULL;
    if (ok && from) ok = found != NULL && strlen(to) < 200;
    if (ok && from) {
        size_t head = (size_t)(found - config);
        memcpy(edited, config, head);
        snprintf(edited + head, size + 256 - head, "%s%s", to, found + strlen(from));
    } else if (ok) {
        strcpy(edited, config);
    }
    if (ok && tensor_from) { /* in the header, which is text */
        char *name = NULL;
        for (size_t i = 8; i + strlen(tensor_from) < bytes && !name; i++)
            if (!memcmp(weights + i, tensor_from, strlen(tensor_from))) name = weights + i;
        ok = name && strlen(tensor_to) == strlen(tensor_from);
        if (ok) memcpy(name, tensor_to, strlen(tensor_to));
    }
    snprintf(config_path, sizeof config_path, "%s/config.json", tmp);
    snprintf(weights_path, sizeof weights_path, "%s/model.safetensors", tmp);
    if (ok) ok = test_write_file(config_path, edited, strlen(edited)) == 0 && test_write_file(weights_path, weights, bytes) == 0;
    pf_result r = ok ? pf_load(tmp, NULL, m) : PF_ERROR_IO;
    CHECK_MSG(ok, "making an edited copy of speech2text-s2s");
    free(config), free(edited), free(weights);
    unlink(config_path), unlink(weights_path), rmdir(tmp);
    return r;
}

/* Config keys that change the math and that we do not implement, and a missing front-end
   tensor: refused at load, by name. */
static void s2t_test_refusals(void) {
    static const struct { const char *from, *to, *needle; pf_result want; } cases[] = {
        {"\"conv_kernel_sizes\": [\n    3,", "\"conv_kernel_sizes\": [\n    4,", "conv_kernel_sizes", PF_ERROR_UNSUPPORTED},
        {"\"num_conv_layers\": 2", "\"num_conv_layers\": 3", "conv_kernel_sizes", PF_ERROR_FORMAT},
        {"\"pad_token_id\": 1", "\"pad_token_id\": 0", "pad_token_id", PF_ERROR_UNSUPPORTED},
        {"\"pad_token_id\": 1", "\"pad_token_id\": null", "pad_token_id", PF_ERROR_FORMAT},
        {"\"conv_channels\": 16", "\"conv_channels\": 15", "conv_channels", PF_ERROR_FORMAT},
        {"\"is_encoder_decoder\": true", "\"is_decoder\": true", "is_decoder", PF_ERROR_UNSUPPORTED},
        {"\"tie_word_embeddings\": true", "\"tie_word_embeddings\": false", "tie_word_embeddings", PF_ERROR_FORMAT},
        {"\"activation_function\": \"relu\"", "\"activation_function\": \"nonsense\"", "nonsense", PF_ERROR_UNSUPPORTED},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pf_model *m = NULL;
        pf_result r = s2t_load_edited(cases[i].from, cases[i].to, NULL, NULL, &m);
        CHECK_MSG(r == cases[i].want && strstr(pf_error_message(m), cases[i].needle), "speech2text with %s: %d: %s",
                  cases[i].to, (int)r, pf_error_message(m));
        pf_free(m);
    }
    pf_model *m = NULL;
    pf_result r = s2t_load_edited(NULL, NULL, "encoder.conv.conv_layers.1.weight", "encoder.conv.conv_layers.1.wEight", &m);
    CHECK_MSG(r == PF_ERROR_FORMAT && strstr(pf_error_message(m), "model.encoder.conv.conv_layers.1.weight"),
              "speech2text without a conv weight: %d: %s", (int)r, pf_error_message(m));
    pf_free(m);
    m = NULL;
    r = s2t_load_edited(NULL, NULL, "decoder.layers.1.fc2.bias", "decoder.layers.1.fc2.bIas", &m);
    CHECK_MSG(r == PF_ERROR_FORMAT && strstr(pf_error_message(m), "decoder.layers.1.fc2.bias"),
              "speech2text without a decoder bias: %d: %s", (int)r, pf_error_message(m));
    pf_free(m);
    m = NULL; /* an input_channels of 2 doubles the first convolution's input: the file's is too narrow */
    r = s2t_load_edited("\"input_channels\": 1", "\"input_channels\": 2", NULL, NULL, &m);
    CHECK_MSG(r == PF_ERROR_FORMAT && strstr(pf_error_message(m), "conv_layers.0.weight"), "speech2text with input_channels 2: "
              "%d: %s", (int)r, pf_error_message(m));
    pf_free(m);
}

/* Calls that do not fit: token ids for its encoder, bad features, and audio for a text model. */
static void s2t_test_bad_calls(pf_model *m, const s2t_reference *ref, const float *const *features) {
    const int32_t *ids[1] = {ref->decoder[0]};
    int one = 1, zero = 0, huge = 1 << 20;
    float logits[60 * 8], nan_frame[20];
    pf_encoding *e = NULL;
    CHECK(pf_encode(m, ids, NULL, &one, 1, &e) == PF_ERROR_UNSUPPORTED && !e &&
          strstr(pf_error_message(m), "pf_encode_audio_features"));
    CHECK(pf_encode_audio_frames(m, 4000) == 0); /* its frames are the extractor's */
    CHECK(pf_forward_seq2seq(m, ids, &one, ids, &one, 1, logits) == PF_ERROR_UNSUPPORTED);
    CHECK(pf_forward(m, ids[0], 1, 1, logits) == PF_ERROR_UNSUPPORTED && strstr(pf_error_message(m), "pf_forward_audio"));
    pf_generation g;
    CHECK(pf_generate_batch(m, ids, &one, 1, NULL, &g) == PF_ERROR_UNSUPPORTED && g.num_sequences == 0);
    CHECK(pf_encode_audio_features(m, NULL, ref->feature_frames, 1, &e) == PF_ERROR_INVALID_ARGUMENT && !e);
    CHECK(pf_encode_audio_features(m, features, NULL, 1, &e) == PF_ERROR_INVALID_ARGUMENT && !e);
    CHECK(pf_encode_audio_features(m, features, ref->feature_frames, 0, &e) == PF_ERROR_INVALID_ARGUMENT && !e);
    CHECK(pf_encode_audio_features(m, features, &zero, 1, &e) == PF_ERROR_INVALID_ARGUMENT && !e);
    CHECK(pf_encode_audio_features(m, features, &huge, 1, &e) == PF_ERROR_INVALID_ARGUMENT && !e); /* beyond the cache */
    for (int i = 0; i < 20; i++) nan_frame[i] = i == 7 ? 0.0f / 0.0f : 0.5f;
    const float *nan_rows[1] = {nan_frame};
    CHECK(pf_encode_audio_features(m, nan_rows, &one, 1, &e) == PF_ERROR_INVALID_ARGUMENT && !e);
    CHECK(pf_forward_audio(m, features, ref->feature_frames, NULL, ref->decoder_lengths, 1, logits) ==
          PF_ERROR_INVALID_ARGUMENT);
    CHECK(pf_forward_audio(NULL, features, ref->feature_frames, ids, &one, 1, logits) == PF_ERROR_INVALID_ARGUMENT);
    int32_t outside[1] = {60};
    const int32_t *bad[1] = {outside};
    CHECK(pf_forward_audio(m, features, ref->feature_frames, bad, &one, 1, logits) == PF_ERROR_INVALID_ARGUMENT);
    CHECK(pf_encode_audio_features(m, features, &one, 1, &e) == PF_OK && e && e->offsets[1] == 1); /* one frame makes one */
    pf_encoding_free(e);
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/m2m100-s2s", test_fixtures);
    pf_model *text = NULL;
    if (pf_load(dir, NULL, &text) == PF_OK)
        CHECK(pf_forward_audio(text, features, ref->feature_frames, ids, &one, 1, logits) == PF_ERROR_UNSUPPORTED);
    pf_free(text);
}

/* Speech2TextTokenizer (vocab.json + sentencepiece.bpe.model, do_upper_case): tokenizer.txt's
   decode(ids, skip_special_tokens=True) of every reference generation and a few more, and
   tokenizer(text).input_ids. */
static void s2t_check_tokenizer(pf_model *m, const char *dir) {
    char path[1100], line[1024], text[1024];
    pf_tokenizer *tokenizer = pf_model_tokenizer(m);
    CHECK_MSG(tokenizer != NULL, "speech2text: no tokenizer loaded");
    if (!tokenizer) return;
    snprintf(path, sizeof path, "%s/tokenizer.txt", dir);
    FILE *f = fopen(path, "r");
    CHECK_MSG(f != NULL, "opening %s", path);
    int decodes = 0, encodes = 0;
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char *first = strchr(line, '\t'), *second = first ? strchr(first + 1, '\t') : NULL;
        if (!second) continue;
        *first = *second = 0;
        int values[TEST_MAX_IDS], n;
        int32_t ids[TEST_MAX_IDS], kept = 0;
        size_t length = 0;
        if (!strcmp(line, "decode")) {
            n = *(first + 1) ? test_parse_ids(first + 1, values, TEST_MAX_IDS) : 0;
            for (int i = 0; i < n; i++)
                if (!pf_tokenizer_is_special(tokenizer, values[i])) ids[kept++] = values[i];
            pf_result r = pf_detokenize(tokenizer, ids, (size_t)kept, text, sizeof text - 1, &length);
            if (r == PF_OK) text[length] = 0;
            CHECK_MSG(n >= 0 && r == PF_OK && !strcmp(text, second + 1), "speech2text decode %s: %d \"%s\" (want \"%s\")",
                      first + 1, (int)r, r == PF_OK ? text : "", second + 1);
            decodes++;
        } else if (!strcmp(line, "encode")) {
            n = test_parse_ids(second + 1, values, TEST_MAX_IDS);
            pf_result r = pf_tokenize_special(tokenizer, first + 1, strlen(first + 1), ids, TEST_MAX_IDS, &length);
            int same = r == PF_OK && n > 0 && length == (size_t)n;
            for (int i = 0; same && i < n; i++) same = ids[i] == values[i];
            CHECK_MSG(same, "speech2text encode \"%s\": %d, %zu ids (want %s)", first + 1, (int)r, length, second + 1);
            encodes++;
        }
    }
    if (f) fclose(f);
    CHECK_MSG(decodes >= 8 && encodes >= 3, "%s: %d decode and %d encode cases", path, decodes, encodes);
}

/* tokenizer_config.json keys of Speech2TextTokenizer that are refused, by name: a copy of the
   tokenizer's files with one key edited, and with a SentencePiece model (model, else the
   fixture's) whose pieces go beyond ASCII: do_upper_case refused there, loaded without it. */
static void s2t_test_tokenizer_refusals(void) {
    static const struct { const char *from, *to, *needle, *model; pf_result want; } cases[] = {
        {"\"lang_codes\": null", "\"lang_codes\": \"mustc\"", "lang_codes", NULL, PF_ERROR_UNSUPPORTED},
        {"\"do_upper_case\": true", "\"do_upper_case\": \"yes\"", "do_upper_case", NULL, PF_ERROR_FORMAT},
        {"\"do_lower_case\": true", "\"do_lower_case\": 1", "do_lower_case", NULL, PF_ERROR_FORMAT},
        {"\"do_upper_case\": true", "\"do_upper_case\": true", "do_upper_case", "sentencepiece_non_ascii.model",
         PF_ERROR_UNSUPPORTED},
        {"\"do_upper_case\": true", "\"do_upper_case\": false", "", "sentencepiece_non_ascii.model", PF_OK},
    };
    static const char *const files[] = {"vocab.json", "sentencepiece.bpe.model", "tokenizer_config.json"};
    char dir[1024], path[1100], tmp[] = "/tmp/pf_s2t_tok_XXXXXX", copy[1200], error[512];
    snprintf(dir, sizeof dir, "%s/speech2text-s2s", test_fixtures);
    if (!mkdtemp(tmp)) {
        CHECK_MSG(0, "mkdtemp");
        return;
    }
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int ok = 1;
        for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
            size_t size = 0;
            snprintf(path, sizeof path, "%s/%s", dir, i == 1 && cases[c].model ? cases[c].model : files[i]);
            snprintf(copy, sizeof copy, "%s/%s", tmp, files[i]);
            char *data = test_read_file(path, &size), *found = data && i == 2 ? strstr(data, cases[c].from) : NULL;
            char *edited = data ? (char *)calloc(1, size + 256) : NULL;
            if (i == 2 && found && edited) {
                memcpy(edited, data, (size_t)(found - data));
                snprintf(edited + (found - data), size + 256 - (size_t)(found - data), "%s%s", cases[c].to,
                         found + strlen(cases[c].from));
                size = strlen(edited);
            } else if (edited && data) {
                memcpy(edited, data, size);
            }
            ok &= edited && (i != 2 || found) && test_write_file(copy, edited, size) == 0;
            free(data), free(edited);
        }
        pf_tokenizer *t = NULL;
        error[0] = 0;
        pf_result r = ok ? pf_tokenizer_load(tmp, &t, error, sizeof error) : PF_ERROR_IO;
        CHECK_MSG(ok && r == cases[c].want && strstr(error, cases[c].needle), "speech2text tokenizer with %s: %d: %s",
                  cases[c].to, (int)r, ok ? error : "(no copy)");
        pf_tokenizer_free(t);
    }
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(copy, sizeof copy, "%s/%s", tmp, files[i]);
        unlink(copy);
    }
    rmdir(tmp);
}

/* build/transcribe end to end with Speech2Text: speech.wav through the model's
   Speech2TextFeatureExtractor, the model on 2 ranks with its generation_config.json, the text of
   its tokenizer: what transformers' extractor, generate() and batch_decode give (speech.txt). */
static void s2t_check_transcribe_cli(const char *dir) {
    char binary[1024], command[4096], out[4096], path[1100];
    test_example_path("transcribe", binary, sizeof binary);
    snprintf(command, sizeof command, "%s %s %s/speech.wav --device cpu --gpus 2 2>&1", binary, dir, dir);
    int status = test_run_output(command, out, sizeof out);
    snprintf(path, sizeof path, "%s/speech.txt", dir);
    size_t size = 0;
    char *want = test_read_file(path, &size);
    CHECK_MSG(status == 0 && want && strlen(want) > 4 && !strcmp(out, want), "speech2text: transcribe printed \"%s\" "
              "(want \"%s\")", out, want ? want : "?");
    free(want);
}

static void test_speech2text(void) {
    char dir[1024], path[1100];
    s2t_reference ref;
    snprintf(dir, sizeof dir, "%s/speech2text-s2s", test_fixtures);
    if (s2t_read_reference(dir, &ref)) {
        CHECK_MSG(0, "reading %s/reference.txt", dir);
        return;
    }
    size_t n = 0, width = 20;
    snprintf(path, sizeof path, "%s/fbank_features.bin", dir);
    float *padded = test_read_floats(path, &n);
    CHECK_MSG(padded && n == S2T_ROWS * (size_t)ref.feature_frames[0] * width, "%s: %zu floats", path, n);
    if (!padded || n != S2T_ROWS * (size_t)ref.feature_frames[0] * width) {
        free(padded);
        return;
    }
    const float *features[S2T_ROWS] = {padded, padded + (size_t)ref.feature_frames[0] * width}; /* each row's own frames */
    s2t_check_features(dir, &ref, padded, width);
    pf_model *m = NULL;
    pf_result r = pf_load(dir, NULL, &m);
    CHECK_MSG(r == PF_OK, "loading speech2text-s2s: %s", pf_error_message(m));
    pf_model_info info = pf_get_info(m);
    CHECK_MSG(r != PF_OK || (info.is_encoder_decoder && info.head == PF_HEAD_CAUSAL_LM && info.num_mel_bins == (int)width &&
                             !info.mel_major && !info.audio_frames && !info.audio_stride && info.num_encoder_layers == 2 &&
                             info.decoder_start_token_id == 2),
              "speech2text: encoder-decoder %d, head %d, mel bins %d", info.is_encoder_decoder, (int)info.head, info.num_mel_bins);
    for (int ranks = 1; r == PF_OK && ranks <= 3; ranks++) {
        char what[64];
        snprintf(what, sizeof what, "speech2text on %d ranks", ranks);
        pf_parallel_options po = pf_parallel_options_init();
        po.device = PF_DEVICE_CPU;
        po.max_batch = 4; /* two rows of two beams */
        pf_result pr = pf_parallelize(m, ranks, &po);
        CHECK_MSG(pr == PF_OK, "%s: %s", what, pf_error_message(m));
        if (pr == PF_OK) s2t_check_outputs(m, what, dir, &ref, features);
    }
    if (r == PF_OK) {
        pf_result cr = pf_to_cpu(m);
        CHECK_MSG(cr == PF_OK, "speech2text: pf_to_cpu: %s", pf_error_message(m));
        if (cr == PF_OK) s2t_check_outputs(m, "speech2text after pf_to_cpu", dir, &ref, features);
        s2t_check_waveforms(m, dir, &ref);
        s2t_test_bad_calls(m, &ref, features);
        s2t_check_tokenizer(m, dir);
    }
    pf_free(m);
    s2t_test_refusals();
    s2t_test_tokenizer_refusals();
    s2t_check_transcribe_cli(dir);
    free(padded);
}

/* BigBirdPegasus's global tokens are its encoder's first and last blocks, not chosen tokens:
   generate options' global_attention (LED's) is refused saying so. */
static void test_bigbird_pegasus_no_global_tokens(void) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/bigbird-pegasus-s2s", test_fixtures);
    pf_model *m = NULL;
    pf_result r = pf_load(dir, NULL, &m);
    CHECK_MSG(r == PF_OK, "loading bigbird-pegasus-s2s: %s", pf_error_message(m));
    static const int32_t prompt[] = {5, 77, 31, 101, 1}, global[] = {1, 0, 0, 0, 0};
    const int32_t *rows[1] = {global};
    pf_generate_options o = pf_generate_options_init();
    o.max_new_tokens = 2;
    o.global_attention = rows;
    int32_t out[8];
    int n = 0;
    r = r ? r : pf_generate(m, prompt, 5, &o, out, 8, &n);
    CHECK_MSG(r == PF_ERROR_UNSUPPORTED && strstr(pf_error_message(m), "BigBird's global tokens are its first and last blocks"),
              "bigbird-pegasus-s2s with global_attention: %d %s", (int)r, pf_error_message(m));
    pf_free(m);
}

void test_seq2seq(void) {
    static const char *const fixtures[] = {"t5-s2s", "t5v11-s2s", "bart-s2s", "mbart-s2s", "blenderbot-s2s", "blenderbot-small-s2s", "marian-s2s", "marian-separate-s2s", "pegasus-s2s",
                                              "m2m100-s2s", "mt5-s2s", "fsmt-s2s", "bert2bert-s2s", "bert-generation-s2s",
                                              "roberta2roberta-s2s", "led-s2s", "prophetnet-s2s", "xlm-prophetnet-s2s",
                                              "bigbird-pegasus-s2s"};
    for (size_t i = 0; i < sizeof fixtures / sizeof fixtures[0]; i++) test_seq2seq_fixture(fixtures[i]);
    test_text_fixture("t5-text-s2s");
    test_text_fixture("bart-text-s2s");
    test_text_fixture("byt5-text-s2s");
    test_text_fixture("marian-text-s2s");
    test_led_global_tokens();
    test_bigbird_pegasus_no_global_tokens();
    test_unread_tokenizer();
    test_untied_t5();
    test_speech2text();
}
