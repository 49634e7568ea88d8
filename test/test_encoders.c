/* Encoders (issue 10): BERT with each output head, against what transformers computed for a batch
   of rows of different lengths (test/make_encoder_fixtures.py): the last hidden state, the
   pooled output and the head's logits within 1e-4 on 1, 2 and 3 ranks; and the calls that do not
   fit an encoder refused. */
#include <math.h>
#include <stdint.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../parallelformers.h"
#include "test.h"

#define TOLERANCE 1e-4f
/* One output array against the fixture's file of it; a missing file must mean a missing array. */
static void check_array(const char *what, const char *dir, const char *file, const float *got, size_t count) {
    char path[1100];
    size_t n = 0;
    snprintf(path, sizeof path, "%s/%s", dir, file);
    float *want = test_read_floats(path, &n);
    CHECK_MSG(!want == !got, "%s: %s is %s, the output %s", what, file, want ? "there" : "absent", got ? "too" : "not");
    if (want && got) {
        CHECK_MSG(n == count, "%s: %s holds %zu floats, the output %zu", what, file, n, count);
        if (n == count) {
            float diff = test_max_abs_diff(got, want, n);
            CHECK_MSG(diff <= TOLERANCE, "%s: %s differs from transformers by %g", what, file, diff);
        }
    }
    free(want);
}

/* TAPAS's question answering logits against transformers': transformers takes 10000 off every
   token outside the column it chooses, and a float holds values near -10000 to 2^-10 only (its
   spacing there), so those are compared within 1e-4 plus that spacing (the reference's own
   rounding: one float apart), the chosen column's within 1e-4; which tokens are chosen must agree. */
static void check_table_logits(const char *what, const char *dir, const float *got, size_t count) {
    char path[1100];
    size_t n = 0;
    snprintf(path, sizeof path, "%s/logits.bin", dir);
    float *want = test_read_floats(path, &n);
    CHECK_MSG(want && got && n == count, "%s: logits.bin holds %zu floats, the output %zu", what, n, count);
    float worst_kept = 0, worst_masked = 0;
    int agree = 1;
    for (size_t i = 0; want && got && n == count && i < n; i++) {
        float diff = fabsf(got[i] - want[i]);
        int masked = want[i] < -5000.0f;
        agree &= masked == (got[i] < -5000.0f);
        if (!masked && diff > worst_kept) worst_kept = diff;
        if (masked && diff - (nextafterf(fabsf(want[i]), INFINITY) - fabsf(want[i])) > worst_masked)
            worst_masked = diff - (nextafterf(fabsf(want[i]), INFINITY) - fabsf(want[i]));
    }
    CHECK_MSG(agree, "%s: the tokens of the chosen column differ from transformers'", what);
    CHECK_MSG(worst_kept <= TOLERANCE, "%s: the chosen column's logits differ from transformers by %g", what, worst_kept);
    CHECK_MSG(worst_masked <= TOLERANCE, "%s: the other logits differ from transformers by %g beyond a float's spacing",
              what, worst_masked);
    free(want);
}

/* An encoding's head logits (and TAPAS's aggregation logits) against the fixture's. */
static void check_logits(const char *what, const char *dir, const pf_encoding *e, size_t tokens) {
    if (e->head == PF_HEAD_TABLE_QUESTION_ANSWERING) {
        check_table_logits(what, dir, e->logits, tokens);
        check_array(what, dir, "aggregation.bin", e->aggregation_logits, (size_t)e->batch * (size_t)e->num_aggregation_logits);
        return;
    }
    check_array(what, dir, "logits.bin", e->logits, (e->logits_per_token ? tokens : (size_t)e->batch) * (size_t)e->num_logits);
}

/* The kinds of model an encoding fixture holds. A decoder runs as an encoder (its hidden states
   after the final norm; a sequence classifier's score of each row's last token that is not
   padding), also in chunks of 2 positions a row, as long inputs run; an encoder-decoder's task
   head reads its decoder's states (the encoding's hidden states are its encoder's). */
typedef enum { ENCODER, DECODER, ENCODER_DECODER } fixture_kind;

static void test_encoder_fixture_of(const char *name, pf_head head, int num_logits, int per_token, fixture_kind kind) {
    int decoder = kind == DECODER;
    char dir[1024];
    test_encoder_reference ref;
    snprintf(dir, sizeof dir, "%s/%s", test_fixtures, name);
    if (test_read_encoder_reference(dir, &ref)) {
        CHECK_MSG(0, "reading %s/reference.txt", dir);
        return;
    }
    pf_model *m = NULL;
    pf_result r = pf_load(dir, NULL, &m);
    CHECK_MSG(r == PF_OK, "loading %s: %s", name, pf_error_message(m));
    if (r) {
        pf_free(m);
        return;
    }
    pf_model_info info = pf_get_info(m);
    CHECK_MSG(info.is_encoder == (kind == ENCODER) && info.is_encoder_decoder == (kind == ENCODER_DECODER) && info.head == head, "%s: encoder %d, head %d", name, info.is_encoder, (int)info.head);
    const int32_t *ids[TEST_ENCODER_ROWS], *types[TEST_ENCODER_ROWS], *boxes[TEST_ENCODER_ROWS];
    const int32_t *global[TEST_ENCODER_ROWS];
    size_t tokens = 0;
    for (int b = 0; b < ref.rows; b++) {
        ids[b] = ref.ids[b];
        types[b] = ref.has_types ? ref.types[b] : NULL;
        boxes[b] = ref.boxes[b];
        global[b] = ref.global[b];
        tokens += (size_t)ref.output_lengths[b] + (size_t)ref.num_regions[b] + (size_t)ref.num_entities[b]; /* Funnel's
            fewer than in; VisualBERT's regions and LUKE's entities after its tokens */
    }
    for (int run = 0; run < (decoder ? 4 : 3); run++) {
        int ranks = run < 3 ? run + 1 : 2, chunked = run == 3;
        char what[128];
        snprintf(what, sizeof what, "%s on %d ranks%s", name, ranks, chunked ? ", 2 positions a chunk" : "");
        pf_parallel_options po = pf_parallel_options_init();
        po.device = PF_DEVICE_CPU;
        po.max_batch = ref.rows;
        if (chunked) po.prefill_chunk = 2 * ref.rows;
        pf_encoding *e = NULL;
        r = pf_parallelize(m, ranks, &po);
        if (r == PF_OK) r = test_encode_reference(m, &ref, ids, types, boxes, global, &e);
        CHECK_MSG(r == PF_OK, "%s: %s", what, pf_error_message(m));
        if (r) continue;
        CHECK(e->batch == ref.rows && e->hidden_size == info.hidden_size && e->offsets[ref.rows] == (int)tokens);
        CHECK(e->head == head && e->num_logits == num_logits && e->logits_per_token == per_token);
        check_array(what, dir, "hidden.bin", e->last_hidden_state, tokens * (size_t)e->hidden_size);
        check_array(what, dir, "pooled.bin", e->pooled, (size_t)ref.rows * (size_t)e->hidden_size);
        check_logits(what, dir, e, tokens);
        check_array(what, dir, "embeds.bin", e->embeds, (size_t)ref.rows * (size_t)e->projection_dim);
        check_array(what, dir, "doc_embeds.bin", e->doc_embeds, (size_t)ref.rows * (size_t)e->projection_dim);
        pf_encoding_free(e);
    }
    /* gathered back onto one CPU rank, the same outputs */
    pf_encoding *e = NULL;
    r = pf_to_cpu(m);
    if (r == PF_OK) r = test_encode_reference(m, &ref, ids, types, boxes, global, &e);
    CHECK_MSG(r == PF_OK, "%s after pf_to_cpu: %s", name, pf_error_message(m));
    if (r == PF_OK) {
        char what[160];
        snprintf(what, sizeof what, "%s after pf_to_cpu", name);
        check_array(what, dir, "hidden.bin", e->last_hidden_state, tokens * (size_t)e->hidden_size);
        check_logits(what, dir, e, tokens);
        check_array(what, dir, "doc_embeds.bin", e->doc_embeds, (size_t)ref.rows * (size_t)e->projection_dim);
    }
    pf_encoding_free(e);
    /* A masked LM gives pf_forward's logits too (one row: its segments all 0, as row 0's are; a
       layout model's boxes all 0, as pf_encode_layout without boxes gives them; a Longformer's
       global tokens none, as pf_encode gives them; VisualBERT's text alone, as pf_encode runs it). */
    if (head == PF_HEAD_MASKED_LM) {
        size_t count = (size_t)ref.lengths[0] * (size_t)info.vocab_size, n = 0;
        float *logits = (float *)malloc(count * sizeof(float)), *want = NULL;
        char path[1100];
        snprintf(path, sizeof path, "%s/logits.bin", dir);
        if (ref.has_boxes || ref.has_global || ref.has_regions || ref.has_table) {
            pf_encoding *unboxed = NULL;
            CHECK((ref.has_boxes ? pf_encode_layout(m, ids, types, NULL, ref.lengths, 1, &unboxed)
                                 : pf_encode(m, ids, types, ref.lengths, 1, &unboxed)) == PF_OK);
            if (unboxed && (want = (float *)malloc(count * sizeof(float)))) {
                memcpy(want, unboxed->logits, count * sizeof(float));
                n = count;
            }
            pf_encoding_free(unboxed);
        } else {
            want = test_read_floats(path, &n);
        }
        r = pf_forward(m, ref.ids[0], 1, ref.lengths[0], logits);
        CHECK_MSG(r == PF_OK, "%s: pf_forward: %s", name, pf_error_message(m));
        if (r == PF_OK && want && n >= count)
            CHECK_MSG(test_max_abs_diff(logits, want, count) <= TOLERANCE, "%s: pf_forward's logits differ", name);
        free(logits);
        free(want);
    } else {
        float logit;
        CHECK(pf_forward(m, ref.ids[0], 1, 1, &logit) == PF_ERROR_UNSUPPORTED);
    }
    int32_t out[4];
    int n = 0;
    CHECK(pf_generate(m, ref.ids[0], ref.lengths[0], NULL, out, 4, &n) == PF_ERROR_UNSUPPORTED);
    CHECK(strstr(pf_error_message(m), kind == ENCODER ? "is an encoder" : "not a causal LM") != NULL);
    if (kind == ENCODER_DECODER) { /* no vocabulary logits; a classifier needs each row's eos */
        float logit;
        CHECK(pf_forward_seq2seq(m, ids, ref.lengths, ids, ref.lengths, 1, &logit) == PF_ERROR_UNSUPPORTED);
        int32_t no_eos[3] = {0, 17, 45};
        const int32_t *rows[1] = {no_eos};
        int length = 3;
        pf_encoding *e = NULL;
        pf_result want = head == PF_HEAD_SEQUENCE_CLASSIFICATION ? PF_ERROR_INVALID_ARGUMENT : PF_OK;
        CHECK(pf_encode(m, rows, NULL, &length, 1, &e) == want && !e == (want != PF_OK));
        if (want) CHECK(strstr(pf_error_message(m), "no eos token") != NULL);
        pf_encoding_free(e);
    }
    pf_free(m);
}

static void test_encoder_fixture(const char *name, pf_head head, int num_logits, int per_token) {
    test_encoder_fixture_of(name, head, num_logits, per_token, ENCODER);
}

/* An encoding fixture's reference rows and model (dir: its directory); NULL, with a failed check,
   when either does not load. */
static pf_model *load_embedding_fixture(const char *name, char *dir, size_t dir_size, test_encoder_reference *ref) {
    pf_model *m = NULL;
    snprintf(dir, dir_size, "%s/%s", test_fixtures, name);
    if (test_read_encoder_reference(dir, ref) || pf_load(dir, NULL, &m) != PF_OK) {
        CHECK_MSG(0, "loading %s: %s", dir, pf_error_message(m));
        pf_free(m);
        return NULL;
    }
    return m;
}

/* pf_embed with options o against the fixture's file of unnormalised embeddings brought to unit
   length. */
static void check_normalized_embeddings(const char *what, pf_model *m, const char *dir, const char *file,
                                        const test_encoder_reference *ref, const pf_embed_options *o) {
    const int32_t *ids[TEST_ENCODER_ROWS];
    for (int b = 0; b < ref->rows; b++) ids[b] = ref->ids[b];
    size_t d = (size_t)pf_get_info(m).hidden_size, n = 0;
    char path[1100];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    float *want = test_read_floats(path, &n), *got = (float *)malloc((size_t)ref->rows * d * sizeof(float));
    pf_result r = want && got && n == (size_t)ref->rows * d ? pf_embed(m, ids, ref->lengths, ref->rows, o, got) : PF_ERROR_IO;
    CHECK_MSG(r == PF_OK, "%s: %s", what, pf_error_message(m));
    if (r == PF_OK) {
        for (int b = 0; b < ref->rows; b++) {
            double norm = 0;
            for (size_t i = 0; i < d; i++) norm += (double)want[b * d + i] * want[b * d + i];
            for (size_t i = 0; i < d; i++) want[b * d + i] = (float)(want[b * d + i] / sqrt(norm));
        }
        CHECK_MSG(test_max_abs_diff(got, want, n) <= TOLERANCE, "%s: differs from the reference", what);
    }
    free(want), free(got);
}

/* A decoder-based embedder (Qwen3-Embedding, e5-mistral: the bare decoder, last-token pooling)
   against sentence-transformers, on 1 to 3 ranks, two rows a batch: the pooling asked for, and
   the model's own (modules.json: last token, normalised). */
static void test_decoder_embeddings(void) {
    char dir[1024];
    test_encoder_reference ref;
    pf_model *m = load_embedding_fixture("qwen3-bare", dir, sizeof dir, &ref);
    if (!m) return;
    const int32_t *ids[TEST_ENCODER_ROWS];
    for (int b = 0; b < ref.rows; b++) ids[b] = ref.ids[b];
    size_t d = (size_t)pf_get_info(m).hidden_size;
    float got[TEST_ENCODER_ROWS * 64];
    for (int ranks = 1; ranks <= 3 && d <= 64; ranks++) {
        pf_parallel_options po = pf_parallel_options_init();
        po.device = PF_DEVICE_CPU;
        po.max_batch = 2;
        CHECK(pf_parallelize(m, ranks, &po) == PF_OK);
        char what[160];
        snprintf(what, sizeof what, "qwen3-bare's last-token embeddings on %d ranks", ranks);
        pf_embed_options o = pf_embed_options_init();
        o.pooling = PF_POOLING_LAST_TOKEN;
        o.normalize = 0;
        pf_result r = pf_embed(m, ids, ref.lengths, ref.rows, &o, got);
        CHECK_MSG(r == PF_OK, "%s: %s", what, pf_error_message(m));
        if (r == PF_OK) check_array(what, dir, "embed_lasttoken.bin", got, (size_t)ref.rows * d);
        /* the model's modules.json: last-token pooling, then Normalize */
        snprintf(what, sizeof what, "qwen3-bare's modules.json pooling on %d ranks", ranks);
        check_normalized_embeddings(what, m, dir, "embed_lasttoken.bin", &ref, NULL);
    }
    pf_free(m);
}

/* Sentence embeddings in every pooling mode against sentence-transformers' Pooling, on 1 to 3
   ranks, with max_batch 2 so the rows run in two batches; and normalised. */
static void test_embed_poolings(void) {
    static const struct { pf_pooling pooling; const char *file; } modes[] = {
        {PF_POOLING_CLS, "embed_cls.bin"}, {PF_POOLING_MAX, "embed_max.bin"}, {PF_POOLING_MEAN, "embed_mean.bin"},
        {PF_POOLING_MEAN_SQRT_LEN, "embed_mean_sqrt_len_tokens.bin"}, {PF_POOLING_WEIGHTED_MEAN, "embed_weightedmean.bin"},
        {PF_POOLING_LAST_TOKEN, "embed_lasttoken.bin"}, {PF_POOLING_MODEL, "embed_mean.bin"}, /* no modules.json: mean */
    };
    char dir[1024];
    test_encoder_reference ref;
    pf_model *m = load_embedding_fixture("bert", dir, sizeof dir, &ref);
    if (!m) return;
    const int32_t *ids[TEST_ENCODER_ROWS];
    for (int b = 0; b < ref.rows; b++) ids[b] = ref.ids[b];
    size_t d = (size_t)pf_get_info(m).hidden_size;
    float got[TEST_ENCODER_ROWS * 64];
    for (int ranks = 1; ranks <= 3 && d <= 64; ranks++) {
        pf_parallel_options po = pf_parallel_options_init();
        po.device = PF_DEVICE_CPU;
        po.max_batch = 2;
        CHECK(pf_parallelize(m, ranks, &po) == PF_OK);
        for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
            char what[160];
            snprintf(what, sizeof what, "pf_embed pooling %d on %d ranks", (int)modes[i].pooling, ranks);
            pf_embed_options o = pf_embed_options_init();
            o.pooling = modes[i].pooling;
            pf_result r = pf_embed(m, ids, ref.lengths, ref.rows, &o, got);
            CHECK_MSG(r == PF_OK, "%s: %s", what, pf_error_message(m));
            if (r == PF_OK) check_array(what, dir, modes[i].file, got, (size_t)ref.rows * d);
        }
        /* normalised: mean pooling over the unit length */
        pf_embed_options o = pf_embed_options_init();
        o.normalize = 1;
        char what[160];
        snprintf(what, sizeof what, "normalised mean pooling on %d ranks", ranks);
        check_normalized_embeddings(what, m, dir, "embed_mean.bin", &ref, &o);
    }
    pf_embed_options bad = pf_embed_options_init();
    bad.pooling = (pf_pooling)42;
    CHECK(pf_embed(m, ids, ref.lengths, ref.rows, &bad, got) == PF_ERROR_INVALID_ARGUMENT);
    pf_free(m);
}

/* build/embed (beside build/generate) on id lines: its --raw embeddings are the normalised mean
   pooling; a bad flag is named. */
static void test_embed_cli(void) {
    char embed[1024], dir[1024], ids_path[] = "/tmp/pf_embed_XXXXXX", raw[64], command[4096];
    test_example_path("embed", embed, sizeof embed);
    snprintf(dir, sizeof dir, "%s/bert", test_fixtures);
    test_encoder_reference ref;
    int fd = mkstemp(ids_path);
    if (fd < 0 || test_read_encoder_reference(dir, &ref)) {
        CHECK_MSG(0, "embed CLI: setting up");
        return;
    }
    FILE *f = fdopen(fd, "w");
    for (int b = 0; b < ref.rows; b++)
        for (int t = 0; t < ref.lengths[b]; t++) fprintf(f, "%d%s", (int)ref.ids[b][t], t + 1 < ref.lengths[b] ? "," : "\n");
    fclose(f);
    snprintf(raw, sizeof raw, "%s.raw", ids_path);
    snprintf(command, sizeof command, "%s %s --gpus 2 --file %s --ids-lines --raw %s >/dev/null 2>&1", embed, dir, ids_path, raw);
    CHECK_MSG(system(command) == 0, "%s", command);
    size_t n = 0, m = 0;
    float *got = test_read_floats(raw, &n);
    char path[1100];
    snprintf(path, sizeof path, "%s/embed_mean.bin", dir);
    float *want = test_read_floats(path, &m);
    CHECK_MSG(got && want && n == m && n % (size_t)ref.rows == 0, "embed CLI: %zu floats, want %zu", n, m);
    if (got && want && n == m && n % (size_t)ref.rows == 0) {
        size_t d = n / (size_t)ref.rows;
        for (int b = 0; b < ref.rows; b++) {
            double norm = 0;
            for (size_t i = 0; i < d; i++) norm += (double)want[b * d + i] * want[b * d + i];
            for (size_t i = 0; i < d; i++) want[b * d + i] = (float)(want[b * d + i] / sqrt(norm));
        }
        CHECK_MSG(test_max_abs_diff(got, want, n) <= TOLERANCE, "embed CLI: embeddings differ");
    }
    free(got), free(want);
    snprintf(command, sizeof command, "%s %s --pooling median x 2>&1", embed, dir);
    char out[512];
    int status = test_run_output(command, out, sizeof out);
    CHECK_MSG(status != 0 && strstr(out, "--pooling") && strstr(out, "median"), "embed CLI: bad pooling: %s", out);
    unlink(ids_path);
    unlink(raw);
}

/* Bad requests get a message; a decoder is not an encoder. */
static void test_encode_refusals(void) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/bert", test_fixtures);
    pf_model *m = NULL;
    if (pf_load(dir, NULL, &m) != PF_OK) {
        CHECK_MSG(0, "loading %s: %s", dir, pf_error_message(m));
        pf_free(m);
        return;
    }
    int32_t ids[3] = {2, 500, 3}, bad_types[3] = {0, 2, 0};
    const int32_t *rows[1] = {ids}, *type_rows[1] = {bad_types};
    int length = 3;
    pf_encoding *e = NULL;
    CHECK(pf_encode(m, rows, NULL, &length, 1, &e) == PF_ERROR_INVALID_ARGUMENT && !e);
    CHECK(strstr(pf_error_message(m), "outside the vocabulary") != NULL);
    ids[1] = 7;
    CHECK(pf_encode(m, rows, type_rows, &length, 1, &e) == PF_ERROR_INVALID_ARGUMENT && !e);
    CHECK(strstr(pf_error_message(m), "token type 2") != NULL);
    length = 0;
    CHECK(pf_encode(m, rows, NULL, &length, 1, &e) == PF_ERROR_INVALID_ARGUMENT);
    length = 33; /* beyond max_position_embeddings */
    CHECK(pf_encode(m, rows, NULL, &length, 1, &e) == PF_ERROR_INVALID_ARGUMENT);
    length = 3;
    CHECK(pf_encode(m, rows, NULL, &length, 2, &e) == PF_ERROR_INVALID_ARGUMENT); /* beyond max_batch */
    CHECK(pf_encode(m, rows, NULL, &length, 1, &e) == PF_OK && e && e->offsets[1] == 3 && e->pooled && !e->logits);
    pf_encoding_free(e);
    pf_encoding_free(NULL);
    pf_free(m);

    /* a causal LM encodes too: its final norm's output, no logits; token types are refused */
    snprintf(dir, sizeof dir, "%s/gpt2-tiny", test_fixtures);
    if (pf_load(dir, NULL, &m) == PF_OK) {
        e = NULL;
        CHECK(pf_encode(m, rows, NULL, &length, 1, &e) == PF_OK && e && e->head == PF_HEAD_CAUSAL_LM && !e->logits &&
              e->num_logits == 0 && !e->pooled && e->offsets[1] == 3);
        pf_encoding_free(e);
        e = NULL;
        bad_types[1] = 1;
        CHECK(pf_encode(m, rows, type_rows, &length, 1, &e) == PF_ERROR_UNSUPPORTED && !e);
        CHECK(strstr(pf_error_message(m), "token types on a decoder") != NULL);
        CHECK(pf_get_info(m).head == PF_HEAD_CAUSAL_LM && !pf_get_info(m).is_encoder);
    }
    pf_free(m);
}

/* An image encoder (test/make_vision_fixtures.py: ViT, DeiT) on three images: the hidden states,
   pooled output and logits transformers computed, within 1e-4, on 1, 2 and 3 ranks and after
   pf_to_cpu; token ids refused. */
static void test_image_fixture(const char *name, pf_head head, int num_logits, int tokens, int patch_size) {
    char dir[1024], path[1100];
    snprintf(dir, sizeof dir, "%s/%s", test_fixtures, name);
    snprintf(path, sizeof path, "%s/pixels.bin", dir);
    size_t n = 0;
    float *pixels = test_read_floats(path, &n);
    pf_model *m = NULL;
    pf_result r = pf_load(dir, NULL, &m);
    CHECK_MSG(r == PF_OK && pixels, "loading %s: %s", name, pf_error_message(m));
    pf_model_info info = pf_get_info(m);
    int batch = 3;
    CHECK_MSG(r != PF_OK || (info.is_encoder && info.head == head && info.image_size == 32 && info.patch_size == patch_size &&
                             n == (size_t)batch * 3 * 32 * 32),
              "%s: head %d, image %d, patch %d, %zu pixels", name, (int)info.head, info.image_size, info.patch_size, n);
    for (int ranks = 1; r == PF_OK && pixels && ranks <= 4; ranks++) { /* 4: a rank after pf_to_cpu */
        char what[128];
        snprintf(what, sizeof what, ranks < 4 ? "%s on %d ranks" : "%s after pf_to_cpu", name, ranks);
        pf_parallel_options po = pf_parallel_options_init();
        po.device = PF_DEVICE_CPU;
        po.max_batch = batch;
        pf_encoding *e = NULL;
        pf_result rr = ranks < 4 ? pf_parallelize(m, ranks, &po) : pf_to_cpu(m);
        if (rr == PF_OK) rr = pf_encode_images(m, pixels, n, batch, &e);
        CHECK_MSG(rr == PF_OK, "%s: %s", what, pf_error_message(m));
        if (rr) continue;
        CHECK(e->batch == batch && e->offsets[batch] == batch * tokens && e->num_logits == num_logits);
        check_array(what, dir, "image_hidden.bin", e->last_hidden_state, (size_t)batch * tokens * info.hidden_size);
        check_array(what, dir, "image_pooled.bin", e->pooled, (size_t)batch * info.hidden_size);
        check_array(what, dir, "image_logits.bin", e->logits, (size_t)batch * num_logits);
        pf_encoding_free(e);
    }
    if (r == PF_OK) {
        int32_t ids[2] = {0, 0};
        const int32_t *rows[1] = {ids};
        int length = 2;
        pf_encoding *e = NULL;
        CHECK(pf_encode(m, rows, NULL, &length, 1, &e) == PF_ERROR_UNSUPPORTED && !e);
        CHECK(pf_encode_images(m, NULL, n / batch, 1, &e) == PF_ERROR_INVALID_ARGUMENT);
        CHECK(pf_encode_images(m, pixels, n, 0, &e) == PF_ERROR_INVALID_ARGUMENT);
    }
    free(pixels);
    pf_free(m);
}

/* Rows of different lengths: the second waveform cut to 1800 samples beside the whole first. The
   first equals transformers' (the fixture's row 0), the second its own run alone, and for XLSR
   transformers' on the batch padded with the attention mask (audio_masked_hidden.bin). */
static void test_audio_lengths(pf_model *m, const char *what, const char *dir, const float *const *rows, int num_samples,
                               int frames, int hidden) {
    int counts[2] = {num_samples, 1800}, short_frames = pf_encode_audio_frames(m, 1800);
    pf_encoding *both = NULL, *alone = NULL;
    CHECK_MSG(pf_encode_audio(m, rows, counts, 2, &both) == PF_OK && pf_encode_audio(m, rows + 1, counts + 1, 1, &alone) == PF_OK,
              "%s, rows of two lengths: %s", what, pf_error_message(m));
    if (both && alone) {
        size_t d = (size_t)hidden, first = (size_t)frames * d;
        CHECK(short_frames == 89 && both->offsets[1] == frames && both->offsets[2] == frames + short_frames);
        char path[1100];
        size_t n = 0;
        snprintf(path, sizeof path, "%s/audio_hidden.bin", dir);
        float *want = test_read_floats(path, &n);
        CHECK_MSG(want && n >= first && test_max_abs_diff(both->last_hidden_state, want, first) <= TOLERANCE,
                  "%s: the longer row of two lengths differs from transformers'", what);
        free(want);
        float diff = test_max_abs_diff(both->last_hidden_state + first, alone->last_hidden_state, (size_t)short_frames * d);
        CHECK_MSG(diff <= 1e-5f, "%s: the shorter row differs from its run alone by %g", what, diff);
        diff = test_max_abs_diff(both->logits + (size_t)frames * 13, alone->logits, (size_t)short_frames * 13);
        CHECK_MSG(diff <= 1e-5f, "%s: the shorter row's logits differ from its run alone by %g", what, diff);
        snprintf(path, sizeof path, "%s/audio_masked_hidden.bin", dir);
        want = test_read_floats(path, &n);
        CHECK_MSG(!want || (n == (size_t)short_frames * d &&
                            test_max_abs_diff(both->last_hidden_state + first, want, n) <= TOLERANCE),
                  "%s: the shorter row differs from transformers' with the attention mask", what);
        free(want);
    }
    pf_encoding_free(both);
    pf_encoding_free(alone);
}

/* Speech encoders (issue 16): tiny Wav2Vec2ForCTC / HubertForCTC (test/make_audio_fixtures.py)
   against transformers on two waveforms: the last hidden state and the CTC logits within 1e-4,
   and the greedy CTC text equal to Wav2Vec2CTCTokenizer.batch_decode's, on 1-3 ranks and after
   pf_to_cpu; then the calls that do not fit refused. */
static void test_audio_fixture(const char *name) {
    char dir[1024], path[1100];
    snprintf(dir, sizeof dir, "%s/%s", test_fixtures, name);
    snprintf(path, sizeof path, "%s/samples.bin", dir);
    size_t n = 0, text_size = 0;
    float *samples = test_read_floats(path, &n);
    snprintf(path, sizeof path, "%s/ctc_text.txt", dir);
    char *want_text = test_read_file(path, &text_size);
    pf_model *m = NULL;
    pf_result r = pf_load(dir, NULL, &m);
    CHECK_MSG(r == PF_OK && samples && want_text, "loading %s: %s", name, pf_error_message(m));
    pf_model_info info = pf_get_info(m);
    int batch = 2, num_samples = (int)(n / 2), frames = pf_encode_audio_frames(m, num_samples);
    const float *waves[2] = {samples, samples ? samples + num_samples : NULL};
    int counts[2] = {num_samples, num_samples};
    CHECK_MSG(r != PF_OK || (info.is_encoder && info.head == PF_HEAD_CTC && info.audio_stride == 20 &&
                             info.audio_min_samples == 40 && frames == 119 && info.vocab_size == 13),
              "%s: head %d, stride %d, min samples %d, %d frames", name, (int)info.head, info.audio_stride,
              info.audio_min_samples, frames);
    for (int ranks = 1; r == PF_OK && samples && want_text && ranks <= 4; ranks++) { /* 4: a rank after pf_to_cpu */
        char what[128];
        snprintf(what, sizeof what, ranks < 4 ? "%s on %d ranks" : "%s after pf_to_cpu", name, ranks);
        pf_parallel_options po = pf_parallel_options_init();
        po.device = PF_DEVICE_CPU;
        po.max_batch = batch;
        pf_encoding *e = NULL;
        pf_result rr = ranks < 4 ? pf_parallelize(m, ranks, &po) : pf_to_cpu(m);
        if (rr == PF_OK) rr = pf_encode_audio(m, waves, counts, batch, &e);
        CHECK_MSG(rr == PF_OK, "%s: %s", what, pf_error_message(m));
        if (rr) continue;
        CHECK(e->batch == batch && e->offsets[batch] == batch * frames && e->num_logits == 13 && e->logits_per_token);
        check_array(what, dir, "audio_hidden.bin", e->last_hidden_state, (size_t)batch * frames * info.hidden_size);
        check_array(what, dir, "audio_logits.bin", e->logits, (size_t)batch * frames * 13);
        const char *line = want_text;
        for (int b = 0; b < batch; b++) {
            char *text = NULL;
            const char *end = strchr(line, '\n');
            size_t len = end ? (size_t)(end - line) : strlen(line);
            CHECK_MSG(pf_ctc_decode(m, e, b, &text) == PF_OK, "%s: %s", what, pf_error_message(m));
            CHECK_MSG(text && strlen(text) == len && !strncmp(text, line, len), "%s row %d: \"%s\", want \"%.*s\"", what, b,
                      text ? text : "", (int)len, line);
            pf_string_free(text);
            line = end ? end + 1 : line + len;
        }
        pf_encoding_free(e);
        test_audio_lengths(m, what, dir, waves, num_samples, frames, info.hidden_size);
    }
    if (r == PF_OK) {
        int32_t ids[2] = {0, 0};
        const int32_t *rows[1] = {ids};
        int length = 2;
        pf_encoding *e = NULL;
        char *text = NULL;
        float pixels[3] = {0};
        CHECK(pf_encode(m, rows, NULL, &length, 1, &e) == PF_ERROR_UNSUPPORTED && !e);
        CHECK(strstr(pf_error_message(m), "pf_encode_audio"));
        CHECK(pf_encode_images(m, pixels, 3, 1, &e) == PF_ERROR_UNSUPPORTED && !e);
        CHECK(pf_generate_text(m, "a", NULL, &text) != PF_OK && !text);
        float embedding[48];
        CHECK(pf_embed(m, rows, &length, 1, NULL, embedding) == PF_ERROR_UNSUPPORTED);
        const float *none[2] = {samples, NULL};
        int three[3] = {100, 100, 100}, few[2] = {100, 39}, negative[1] = {-5}, one_frame[1] = {40};
        const float *many[3] = {samples, samples, samples};
        CHECK(pf_encode_audio(m, NULL, three, 1, &e) == PF_ERROR_INVALID_ARGUMENT && !e);
        CHECK(pf_encode_audio(m, waves, NULL, 1, &e) == PF_ERROR_INVALID_ARGUMENT && !e);
        CHECK(pf_encode_audio(m, none, three, 2, &e) == PF_ERROR_INVALID_ARGUMENT && !e);
        CHECK(pf_encode_audio(m, waves, three, 1, NULL) == PF_ERROR_INVALID_ARGUMENT);
        CHECK(pf_encode_audio(m, waves, three, 0, &e) == PF_ERROR_INVALID_ARGUMENT && !e);
        CHECK(pf_encode_audio(m, many, three, 3, &e) == PF_ERROR_INVALID_ARGUMENT && !e); /* above max_batch */
        CHECK(pf_encode_audio(m, waves, few, 2, &e) == PF_ERROR_INVALID_ARGUMENT && !e);   /* below one frame */
        CHECK_MSG(strstr(pf_error_message(m), "row 1: 39 samples") && strstr(pf_error_message(m), "at least 40"), "%s",
                  pf_error_message(m));
        CHECK(pf_encode_audio(m, waves, negative, 1, &e) == PF_ERROR_INVALID_ARGUMENT && !e);
        CHECK(pf_encode_audio_frames(m, 39) == 0 && pf_encode_audio_frames(m, 40) == 1 && pf_encode_audio_frames(NULL, 40) == 0);
        CHECK(pf_encode_audio(m, waves, one_frame, 1, &e) == PF_OK && e && e->offsets[1] == 1); /* exactly one frame */
        CHECK(pf_ctc_decode(m, e, 1, &text) == PF_ERROR_INVALID_ARGUMENT && !text);
        CHECK(pf_ctc_decode(m, e, -1, &text) == PF_ERROR_INVALID_ARGUMENT && !text);
        CHECK(pf_ctc_decode(m, NULL, 0, &text) == PF_ERROR_INVALID_ARGUMENT && !text);
        CHECK(pf_ctc_decode(m, e, 0, NULL) == PF_ERROR_INVALID_ARGUMENT);
        CHECK(pf_ctc_decode(NULL, e, 0, &text) == PF_ERROR_INVALID_ARGUMENT);
        pf_encoding_free(e);
        float nan_samples[64];
        for (int i = 0; i < 64; i++) nan_samples[i] = i == 7 ? NAN : 0.0f;
        const float *nan_rows[1] = {nan_samples};
        int count64[1] = {64};
        CHECK(pf_encode_audio(m, nan_rows, count64, 1, &e) == PF_ERROR_INVALID_ARGUMENT && !e);
    }
    free(samples);
    free(want_text);
    pf_free(m);
}

/* Audio into models that take something else, and CTC decoding of another model's encoding. */
static void test_audio_refusals(void) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/bert", test_fixtures);
    pf_model *m = NULL;
    float samples[400] = {0};
    const float *waves[1] = {samples};
    int count[1] = {400};
    pf_encoding *e = NULL;
    char *text = NULL;
    CHECK(pf_load(dir, NULL, &m) == PF_OK);
    CHECK(pf_encode_audio(m, waves, count, 1, &e) == PF_ERROR_UNSUPPORTED && !e);
    CHECK(pf_encode_audio_frames(m, 400) == 0);
    int32_t ids[2] = {1, 2};
    const int32_t *rows[1] = {ids};
    int length = 2;
    CHECK(pf_encode(m, rows, NULL, &length, 1, &e) == PF_OK);
    CHECK(pf_ctc_decode(m, e, 0, &text) == PF_ERROR_INVALID_ARGUMENT && !text);
    pf_encoding_free(e);
    pf_free(m);
    CHECK(pf_encode_audio(NULL, waves, count, 1, &e) == PF_ERROR_INVALID_ARGUMENT);
}

/* build/transcribe end to end: a WAV file through the model's feature extractor, the model and the
   CTC decoding, on 2 ranks, prints the text transformers' processor and model give for it
   (speech.txt); a file that is not a WAV, and one cut after its header, are clear errors. */
static void test_transcribe_cli(void) {
    char binary[1024], command[4096], out[4096], path[1100];
    test_example_path("transcribe", binary, sizeof binary);
    snprintf(command, sizeof command, "%s %s/wav2vec2-ctc %s/wav2vec2-ctc/speech.wav --device cpu --gpus 2 2>&1", binary,
             test_fixtures, test_fixtures);
    int status = test_run_output(command, out, sizeof out);
    snprintf(path, sizeof path, "%s/wav2vec2-ctc/speech.txt", test_fixtures);
    size_t size = 0;
    char *want = test_read_file(path, &size);
    CHECK_MSG(status == 0 && want && !strcmp(out, want), "transcribe printed \"%s\" (want \"%s\")", out, want ? want : "?");
    free(want);
    snprintf(command, sizeof command, "%s %s/wav2vec2-ctc %s/wav2vec2-ctc/config.json --device cpu 2>&1", binary, test_fixtures,
             test_fixtures);
    status = test_run_output(command, out, sizeof out);
    CHECK_MSG(status == 1 && strstr(out, "not a RIFF/WAVE"), "transcribe on a JSON file: %d, \"%s\"", status, out);
    char cut[] = "/tmp/pf_transcribe_XXXXXX";
    int fd = mkstemp(cut);
    snprintf(path, sizeof path, "%s/wav2vec2-ctc/speech.wav", test_fixtures);
    char *wav = test_read_file(path, &size);
    if (fd >= 0 && wav && size > 44) {
        CHECK(write(fd, wav, 44) == 44); /* the header alone: a data chunk that claims samples it lacks */
        snprintf(command, sizeof command, "%s %s/wav2vec2-ctc %s --device cpu 2>&1", binary, test_fixtures, cut);
        status = test_run_output(command, out, sizeof out);
        CHECK_MSG(status == 1 && strstr(out, "no samples"), "transcribe on a WAV header: %d, \"%s\"", status, out);
    }
    if (fd >= 0) close(fd), unlink(cut);
    free(wav);
}

/* CLIP (test/make_clip_fixtures.py): a text tower of 32 wide, 4 heads, 2 layers and a vision
   tower of 48 wide, 6 heads, 3 layers. Four texts of different lengths and two images: each
   tower's last hidden state and pooled output, the projected embeddings and logits_per_image
   within 1e-4 of transformers on 1, 2 and 3 ranks and after pf_to_cpu. */
#define CLIP_TEXTS 4
#define CLIP_IMAGES 2
#define CLIP_PROJECTION 24

static int clip_read_texts(const char *dir, int32_t ids[CLIP_TEXTS][TEST_MAX_IDS], int lengths[CLIP_TEXTS]) {
    char path[1100];
    snprintf(path, sizeof path, "%s/text_ids.txt", dir);
    size_t size = 0;
    char *text = test_read_file(path, &size), *line = text;
    int rows = 0;
    for (; text && line && *line && rows < CLIP_TEXTS; rows++) {
        char *end = strchr(line, '\n');
        if (end) *end = 0;
        int parsed[TEST_MAX_IDS];
        lengths[rows] = test_parse_ids(line, parsed, TEST_MAX_IDS);
        for (int t = 0; t < lengths[rows]; t++) ids[rows][t] = parsed[t];
        line = end ? end + 1 : NULL;
    }
    free(text);
    return rows;
}

/* The text tower's outputs for the fixture's texts against the files of them; the projection's
   (embeds_file, NULL: not compared) where the model has it (projected). */
static void clip_check_texts(const char *what, pf_model *m, const char *dir, const char *pooled_file,
                             const char *embeds_file, int projected) {
    int32_t ids[CLIP_TEXTS][TEST_MAX_IDS];
    int lengths[CLIP_TEXTS], total = 0;
    const int32_t *rows[CLIP_TEXTS];
    CHECK_MSG(clip_read_texts(dir, ids, lengths) == CLIP_TEXTS, "%s: text_ids.txt", what);
    for (int b = 0; b < CLIP_TEXTS; b++) rows[b] = ids[b], total += lengths[b];
    pf_encoding *e = NULL;
    pf_result r = pf_encode(m, rows, NULL, lengths, CLIP_TEXTS, &e);
    CHECK_MSG(r == PF_OK, "%s: pf_encode: %s", what, pf_error_message(m));
    if (r) return;
    CHECK_MSG(e->hidden_size == 32 && e->offsets[CLIP_TEXTS] == total && e->projection_dim == (projected ? CLIP_PROJECTION : 0) &&
                  !e->embeds == !projected, "%s: encoding's sizes", what);
    check_array(what, dir, "text_hidden.bin", e->last_hidden_state, (size_t)total * 32);
    check_array(what, dir, pooled_file, e->pooled, (size_t)CLIP_TEXTS * 32);
    if (embeds_file) check_array(what, dir, embeds_file, e->embeds, (size_t)CLIP_TEXTS * CLIP_PROJECTION);
    pf_encoding_free(e);
}

static void test_clip_fixture(void) {
    char dir[1024], path[1100];
    snprintf(dir, sizeof dir, "%s/clip", test_fixtures);
    snprintf(path, sizeof path, "%s/pixels.bin", dir);
    size_t n = 0;
    float *pixels = test_read_floats(path, &n);
    pf_model *m = NULL;
    pf_result r = pf_load(dir, NULL, &m);
    CHECK_MSG(r == PF_OK && pixels && n == CLIP_IMAGES * 3 * 32 * 32, "loading clip: %s", pf_error_message(m));
    pf_model_info info = pf_get_info(m);
    CHECK(r != PF_OK || (info.is_encoder && !strcmp(info.model_type, "clip") && info.hidden_size == 32 &&
                         info.image_size == 32 && info.patch_size == 8 && info.vocab_size == 99));
    int32_t ids[CLIP_TEXTS][TEST_MAX_IDS];
    int lengths[CLIP_TEXTS];
    const int32_t *rows[CLIP_TEXTS];
    clip_read_texts(dir, ids, lengths);
    for (int b = 0; b < CLIP_TEXTS; b++) rows[b] = ids[b];
    for (int ranks = 1; r == PF_OK && pixels && ranks <= 4; ranks++) { /* 4: a rank after pf_to_cpu */
        char what[128];
        snprintf(what, sizeof what, ranks < 4 ? "clip on %d ranks" : "clip after pf_to_cpu", ranks);
        pf_parallel_options po = pf_parallel_options_init();
        po.device = PF_DEVICE_CPU;
        po.max_batch = CLIP_TEXTS;
        pf_result rr = ranks < 4 ? pf_parallelize(m, ranks, &po) : pf_to_cpu(m);
        CHECK_MSG(rr == PF_OK, "%s: %s", what, pf_error_message(m));
        if (rr) continue;
        CHECK(pf_num_ranks(m) == (ranks < 4 ? ranks : 1) && pf_memory_allocated(m, 0) > 0);
        pf_encoding *e = NULL;
        rr = pf_encode_images(m, pixels, n, CLIP_IMAGES, &e);
        CHECK_MSG(rr == PF_OK, "%s: pf_encode_images: %s", what, pf_error_message(m));
        if (rr == PF_OK) {
            CHECK(e->hidden_size == 48 && e->offsets[CLIP_IMAGES] == CLIP_IMAGES * 17 && e->projection_dim == CLIP_PROJECTION);
            check_array(what, dir, "image_hidden.bin", e->last_hidden_state, (size_t)CLIP_IMAGES * 17 * 48);
            check_array(what, dir, "image_pooled.bin", e->pooled, (size_t)CLIP_IMAGES * 48);
            check_array(what, dir, "image_embeds.bin", e->embeds, (size_t)CLIP_IMAGES * CLIP_PROJECTION);
        }
        pf_encoding_free(e);
        clip_check_texts(what, m, dir, "text_pooled.bin", "text_embeds.bin", 1);
        po.max_batch = 3; /* below the texts' count: pf_image_text_logits runs them in two batches (3 ranks
                             keep 4, which pf_to_cpu then keeps) */
        if (ranks < 3 && pf_parallelize(m, ranks, &po) != PF_OK) continue;
        float logits[CLIP_IMAGES * CLIP_TEXTS];
        rr = pf_image_text_logits(m, rows, lengths, CLIP_TEXTS, pixels, n, CLIP_IMAGES, logits);
        CHECK_MSG(rr == PF_OK, "%s: pf_image_text_logits: %s", what, pf_error_message(m));
        if (rr == PF_OK) check_array(what, dir, "logits_per_image.bin", logits, CLIP_IMAGES * CLIP_TEXTS);
    }
    if (r == PF_OK) { /* bad input */
        float logits[CLIP_IMAGES * CLIP_TEXTS];
        pf_encoding *e = NULL;
        CHECK(pf_image_text_logits(m, NULL, lengths, CLIP_TEXTS, pixels, n, CLIP_IMAGES, logits) == PF_ERROR_INVALID_ARGUMENT);
        CHECK(pf_image_text_logits(m, rows, lengths, CLIP_TEXTS, NULL, n, CLIP_IMAGES, logits) == PF_ERROR_INVALID_ARGUMENT);
        CHECK(pf_image_text_logits(m, rows, lengths, CLIP_TEXTS, pixels, n, CLIP_IMAGES, NULL) == PF_ERROR_INVALID_ARGUMENT);
        CHECK(pf_image_text_logits(m, rows, lengths, 0, pixels, n, CLIP_IMAGES, logits) == PF_ERROR_INVALID_ARGUMENT);
        int too_long[CLIP_TEXTS] = {5, 8, 17, 10}; /* beyond the 16 positions */
        CHECK(pf_image_text_logits(m, rows, too_long, CLIP_TEXTS, pixels, n, CLIP_IMAGES, logits) == PF_ERROR_INVALID_ARGUMENT);
        CHECK(strstr(pf_error_message(m), "row 2") != NULL);
        ids[0][1] = 99; /* outside the vocabulary */
        CHECK(pf_image_text_logits(m, rows, lengths, CLIP_TEXTS, pixels, n, CLIP_IMAGES, logits) == PF_ERROR_INVALID_ARGUMENT);
        CHECK(strstr(pf_error_message(m), "outside the vocabulary") != NULL);
        ids[0][1] = 5;
        pixels[7] = NAN;
        CHECK(pf_image_text_logits(m, rows, lengths, CLIP_TEXTS, pixels, n, CLIP_IMAGES, logits) == PF_ERROR_INVALID_ARGUMENT);
        CHECK(strstr(pf_error_message(m), "finite") != NULL);
        CHECK(pf_encode_images(m, NULL, n / CLIP_IMAGES, 1, &e) == PF_ERROR_INVALID_ARGUMENT && !e);
        CHECK(pf_encode(m, rows, NULL, lengths, 0, &e) == PF_ERROR_INVALID_ARGUMENT && !e);
        int32_t prompt[2] = {0, 5};
        float vocab_logits[99];
        CHECK(pf_forward(m, prompt, 1, 2, vocab_logits) == PF_ERROR_UNSUPPORTED);
        CHECK(strstr(pf_error_message(m), "dual encoder") != NULL);
        const int32_t *prompts[1] = {prompt};
        int prompt_length = 2, generated_length = 0;
        int32_t generated[8];
        float embedding[32];
        CHECK(pf_forward_seq2seq(m, prompts, &prompt_length, prompts, &prompt_length, 1, vocab_logits) != PF_OK);
        CHECK(pf_embed(m, prompts, &prompt_length, 1, NULL, embedding) == PF_ERROR_UNSUPPORTED);
        CHECK(pf_generate(m, prompt, 2, NULL, generated, 8, &generated_length) != PF_OK && generated_length == 0);
        pf_memory_info memory;
        CHECK(pf_get_memory_info(m, 0, &memory) == PF_OK && memory.weights > 0 && memory.allocated == pf_memory_allocated(m, 0));
    }
    pf_free(m);
    free(pixels);

    /* a model that is not CLIP has no similarity */
    snprintf(path, sizeof path, "%s/vit", test_fixtures);
    if (pf_load(path, NULL, &m) == PF_OK) {
        float logits[1], pixel[3 * 32 * 32] = {0};
        int32_t one[1] = {0};
        const int32_t *one_row[1] = {one};
        int one_length = 1;
        CHECK(pf_image_text_logits(m, one_row, &one_length, 1, pixel, 3 * 32 * 32, 1, logits) == PF_ERROR_UNSUPPORTED);
    }
    pf_free(m);
}

/* A copy of a safetensors file (bytes long) with an I64 [1, 16] tensor of each name in extra
   (NULL-terminated) added, as transformers 4 saved CLIP's position_ids buffers; NULL on failure. */
static char *clip_add_tensors(const char *weights, size_t bytes, const char *const *extra, size_t *out_bytes) {
    uint64_t header = 0;
    for (int i = 7; bytes >= 8 && i >= 0; i--) header = header << 8 | (unsigned char)weights[i];
    if (bytes < 8 || header > bytes - 8 || weights[8] != '{') return NULL;
    size_t data = bytes - 8 - (size_t)header, added = 0, entries_cap = 4096, used = 0;
    char *entries = (char *)malloc(entries_cap);
    for (int k = 0; entries && extra[k]; k++, added += 16 * 8)
        used += (size_t)snprintf(entries + used, entries_cap - used, "\"%s\":{\"dtype\":\"I64\",\"shape\":[1,16],"
                                 "\"data_offsets\":[%zu,%zu]},", extra[k], data + added, data + added + 16 * 8);
    char *copy = entries && used < entries_cap ? (char *)calloc(1, bytes + used + added) : NULL;
    if (copy) {
        uint64_t grown = header + used;
        for (int i = 0; i < 8; i++) copy[i] = (char)(grown >> (8 * i) & 0xff);
        copy[8] = '{';
        memcpy(copy + 9, entries, used);
        memcpy(copy + 9 + used, weights + 9, bytes - 9); /* the rest of the header, the data; then zeros */
        *out_bytes = bytes + used + added;
    }
    free(entries);
    return copy;
}

/* Loads a copy of fixture NAME whose config.json has each edits[2k] replaced by edits[2k + 1] (the
   first occurrence after the previous edit; NULL ends the list), and whose weights have the
   tensors named in extra added (NULL: none; see clip_add_tensors). 0 and *m on success (a load
   that fails too: its message is the test's), -1 if the copy could not be made. */
static int clip_load_edited(const char *name, const char *const *edits, const char *const *extra, pf_model **m) {
    char dir[1024], path[1100], tmp[] = "/tmp/pf_clip_XXXXXX", written[1200], copy[1200];
    *m = NULL;
    snprintf(dir, sizeof dir, "%s/%s", test_fixtures, name);
    snprintf(path, sizeof path, "%s/config.json", dir);
    size_t size = 0, bytes = 0;
    char *config = test_read_file(path, &size), *edited = config ? (char *)malloc(size + 4096) : NULL;
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    char *weights = test_read_file(path, &bytes);
    if (weights && extra) {
        char *grown = clip_add_tensors(weights, bytes, extra, &bytes);
        free(weights);
        weights = grown;
    }
    int ok = config && edited && weights && mkdtemp(tmp) != NULL;
    if (ok) strcpy(edited, config);
    char *at = edited;
    for (int k = 0; ok && edits[k]; k += 2) {
        char *found = strstr(at, edits[k]);
        size_t from = strlen(edits[k]), to = strlen(edits[k + 1]);
        CHECK_MSG(found != NULL, "%s/config.json has no %s", name, edits[k]);
        if (!found || strlen(edited) + to >= size + 4096) {
            ok = 0;
            break;
        }
        memmove(found + to, found + from, strlen(found + from) + 1);
        memcpy(found, edits[k + 1], to);
        at = found + to;
    }
    snprintf(written, sizeof written, "%s/config.json", tmp);
    snprintf(copy, sizeof copy, "%s/model.safetensors", tmp);
    if (ok) ok = test_write_file(written, edited, strlen(edited)) == 0 && test_write_file(copy, weights, bytes) == 0;
    if (ok) pf_load(tmp, NULL, m);
    free(config), free(edited), free(weights);
    unlink(copy), unlink(written), rmdir(tmp); /* the model maps its file: mapped pages outlive the name */
    return ok ? 0 : -1;
}

/* The same checkpoint with transformers' older spellings: text_config_dict (which wins whole over
   text_config) with eos_token_id 2, under which the text tower pools each text's largest id (the
   rule of configs before transformers 4.31); the towers saved alone (CLIPTextModel,
   CLIPVisionModelWithProjection) as models of their own; and architectures that do not match the
   tensors, refused. */
static void test_clip_variants(void) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/clip", test_fixtures);
    static const char *const old_spelling[] = {"\"text_config\"", "\"text_config_dict\"", "\"eos_token_id\": 40",
                                               "\"eos_token_id\": 2", NULL};
    pf_model *m = NULL;
    pf_parallel_options po = pf_parallel_options_init();
    po.device = PF_DEVICE_CPU;
    po.max_batch = CLIP_TEXTS;
    /* transformers 4 saved the towers' position_ids buffers: read by no slot, and accepted */
    static const char *const no_edits[] = {NULL};
    static const char *const buffers[] = {"text_model.embeddings.position_ids", "vision_model.embeddings.position_ids", NULL};
    static const char *const stray[] = {"text_model.embeddings.position_ids", "vision_model.embeddings.extra", NULL};
    if (clip_load_edited("clip", no_edits, buffers, &m) == 0) {
        pf_result r = pf_get_info(m).model_type ? pf_parallelize(m, 1, &po) : PF_ERROR_FORMAT;
        CHECK_MSG(r == PF_OK, "clip with position_ids: %s", pf_error_message(m));
        if (r == PF_OK) clip_check_texts("clip with position_ids", m, dir, "text_pooled.bin", "text_embeds.bin", 1);
    }
    pf_free(m);
    if (clip_load_edited("clip", no_edits, stray, &m) == 0)
        CHECK_MSG(!pf_get_info(m).model_type && strstr(pf_error_message(m), "tensor 'vision_model.embeddings.extra' is not used"),
                  "clip with a stray tensor: %s", pf_error_message(m));
    pf_free(m);
    if (clip_load_edited("clip", old_spelling, NULL, &m) == 0) {
        pf_result r = pf_get_info(m).model_type ? pf_parallelize(m, 2, &po) : PF_ERROR_FORMAT;
        CHECK_MSG(r == PF_OK, "old clip config: %s", pf_error_message(m));
        if (r == PF_OK) clip_check_texts("clip with eos_token_id 2", m, dir, "text_pooled_argmax.bin", NULL, 1);
    }
    pf_free(m);

    char path[1100];
    snprintf(path, sizeof path, "%s/clip-text", test_fixtures);
    pf_result r = pf_load(path, NULL, &m);
    if (r == PF_OK) r = pf_parallelize(m, 3, &po);
    CHECK_MSG(r == PF_OK, "clip-text: %s", pf_error_message(m));
    if (r == PF_OK) {
        CHECK(!strcmp(pf_get_info(m).model_type, "clip_text_model"));
        clip_check_texts("clip-text on 3 ranks", m, dir, "text_pooled.bin", NULL, 0);
        float logits[1], pixel[3 * 32 * 32] = {0};
        int32_t one[1] = {0};
        const int32_t *one_row[1] = {one};
        int one_length = 1;
        pf_encoding *e = NULL;
        CHECK(pf_encode_images(m, pixel, 3 * 32 * 32, 1, &e) == PF_ERROR_UNSUPPORTED && !e); /* images for a text tower */
        CHECK(strstr(pf_error_message(m), "takes token ids") != NULL);
        CHECK(pf_image_text_logits(m, one_row, &one_length, 1, pixel, 3 * 32 * 32, 1, logits) == PF_ERROR_UNSUPPORTED);
    }
    pf_free(m);

    snprintf(path, sizeof path, "%s/clip/pixels.bin", test_fixtures);
    size_t n = 0;
    float *pixels = test_read_floats(path, &n);
    snprintf(path, sizeof path, "%s/clip-vision", test_fixtures);
    r = pixels ? pf_load(path, NULL, &m) : PF_ERROR_IO;
    po.max_batch = CLIP_IMAGES;
    if (r == PF_OK) r = pf_parallelize(m, 2, &po);
    CHECK_MSG(r == PF_OK, "clip-vision: %s", pf_error_message(m));
    pf_encoding *e = NULL;
    if (r == PF_OK) r = pf_encode_images(m, pixels, n, CLIP_IMAGES, &e);
    CHECK_MSG(r == PF_OK, "clip-vision: %s", pf_error_message(m));
    if (r == PF_OK) {
        check_array("clip-vision on 2 ranks", dir, "image_hidden.bin", e->last_hidden_state, (size_t)CLIP_IMAGES * 17 * 48);
        check_array("clip-vision on 2 ranks", dir, "image_pooled.bin", e->pooled, (size_t)CLIP_IMAGES * 48);
        check_array("clip-vision on 2 ranks", dir, "image_embeds.bin", e->embeds, (size_t)CLIP_IMAGES * CLIP_PROJECTION);
    }
    pf_encoding_free(e);
    pf_free(m);
    free(pixels);

    static const struct {
        const char *fixture, *from, *to, *message;
    } refused[] = {
        {"clip", "\"CLIPModel\"", "\"CLIPForImageClassification\"", "architecture \"CLIPForImageClassification\" is not supported"},
        {"clip", "\"vision_config\": {", "\"vision_config\": 7, \"unused\": {", "\"vision_config\" is not an object"},
        {"clip", "\"hidden_act\": \"quick_gelu\"", "\"hidden_act\": \"gelu_10\"", "activation \"gelu_10\" is not supported"},
        {"clip", "\"eos_token_id\": 40", "\"eos_token_id\": null", "\"eos_token_id\" is null"},
        {"clip", "\"projection_dim\": 24", "\"projection_dim\": 20", "text_projection.weight' has shape [24, 32] but the config needs [20, 32]"},
        {"clip-text", "\"CLIPTextModel\"", "\"CLIPTextModelWithProjection\"", "missing tensor 'text_projection.weight'"},
        {"clip-vision", "\"CLIPVisionModelWithProjection\"", "\"CLIPVisionModel\"", "'visual_projection.weight' is in the checkpoint"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        const char *edits[] = {refused[i].from, refused[i].to, NULL};
        if (clip_load_edited(refused[i].fixture, edits, NULL, &m) == 0)
            CHECK_MSG(!pf_get_info(m).model_type && strstr(pf_error_message(m), refused[i].message),
                      "%s with %s: %s", refused[i].fixture, refused[i].to, pf_error_message(m));
        pf_free(m);
    }
}

/* build/classify_image end to end: an image file through the model's image processor and the
   classifier, on 2 ranks, gives transformers' logits for it (image.txt: the processor and model in
   Python); a file that is not a PPM is a clear error. */
static void test_classify_cli(void) {
    char binary[1024], command[4096], out[1024];
    test_example_path("classify_image", binary, sizeof binary);
    snprintf(command, sizeof command, "%s %s/vit-cls %s/vit-cls/image.ppm --device cpu --gpus 2 --logits 2>&1", binary,
             test_fixtures, test_fixtures);
    int status = test_run_output(command, out, sizeof out);
    char path[1100];
    snprintf(path, sizeof path, "%s/vit-cls/image.txt", test_fixtures);
    size_t size = 0;
    char *want = test_read_file(path, &size);
    float worst = -1;
    int count = 0;
    for (char *a = out, *b = want; status == 0 && want && count < 5; count++) { /* five logits each */
        char *a_end, *b_end;
        float x = strtof(a, &a_end), y = strtof(b, &b_end);
        if (a_end == a || b_end == b) break;
        if (fabsf(x - y) > worst) worst = fabsf(x - y);
        a = a_end, b = b_end;
    }
    CHECK_MSG(status == 0 && count == 5 && worst >= 0 && worst <= TOLERANCE, "classify_image printed \"%s\" (want %s)", out,
              want ? want : "?");
    free(want);
    snprintf(command, sizeof command, "%s %s/vit-cls %s/vit-cls/config.json --device cpu >/dev/null 2>&1", binary,
             test_fixtures, test_fixtures);
    CHECK_MSG(WEXITSTATUS(system(command)) == 1, "classify_image on a file that is not a PPM must fail");
}

/* Lines "score label" printed against the reference's: the same labels in the same order, the
   scores within TOLERANCE. */
static void check_scores(const char *what, const char *got, const char *reference_path) {
    size_t size = 0;
    char *want = test_read_file(reference_path, &size);
    int lines = 0, same = want != NULL;
    for (const char *a = got, *b = want; same && b && *b; lines++) {
        char label_a[64] = "", label_b[64] = "";
        float x = 0, y = 0;
        int na = 0, nb = 0;
        same = sscanf(a, "%f %63s%n", &x, label_a, &na) == 2 && sscanf(b, "%f %63s%n", &y, label_b, &nb) == 2 &&
               !strcmp(label_a, label_b) && fabsf(x - y) <= TOLERANCE;
        a += na, b += nb;
        while (*a == '\n') a++;
        while (*b == '\n') b++;
    }
    CHECK_MSG(same && lines == 3, "%s printed \"%s\" (want \"%s\")", what, got, want ? want : "?");
    free(want);
}

/* A classify case: its options, and the file of the fixture's scores it must print. */
typedef struct classify_run {
    const char *options, *reference;
} classify_run;

/* build/classify on fixture `name`'s text (text.txt's first line, into text) with each run's options,
   its scores against the run's reference file; binary and dir are set for the caller's own cases. */
static void classify_runs(const char *name, const classify_run *runs, size_t count, char *binary, size_t binary_size,
                          char *dir, size_t dir_size, char *text, size_t text_size) {
    char command[4096], out[1024], path[1100];
    test_example_path("classify", binary, binary_size);
    snprintf(dir, dir_size, "%s/%s", test_fixtures, name);
    snprintf(path, sizeof path, "%s/text.txt", dir);
    size_t size = 0;
    char *lines = test_read_file(path, &size);
    if (lines) snprintf(text, text_size, "%.*s", (int)strcspn(lines, "\n"), lines);
    free(lines);
    for (size_t i = 0; i < count; i++) {
        snprintf(command, sizeof command, "%s %s \"%s\" --device cpu %s 2>&1", binary, dir, text, runs[i].options);
        int status = test_run_output(command, out, sizeof out);
        snprintf(path, sizeof path, "%s/%s", dir, runs[i].reference);
        CHECK_MSG(status == 0, "classify %s: exit %d: %s", runs[i].options, status, out);
        if (status == 0) check_scores(runs[i].options, out, path);
    }
}

/* build/classify against transformers' pipelines on an NLI model (test/make_encoder_fixtures.py's
   bart-mnli): the text's label scores, zero-shot over three labels (one softmax, and each label
   alone), on 2 and 3 ranks; a model without the head refused. */
static void test_text_classify_cli(void) {
    char binary[1024], dir[1024], command[4096], out[1024], text[512] = "";
    static const classify_run runs[] = {
        {"--gpus 2", "text_classification.txt"},
        {"--gpus 3 --labels technology,cooking,sports", "zero_shot.txt"},
        {"--gpus 2 --labels technology,cooking,sports --multi-label", "zero_shot_multi.txt"},
    };
    classify_runs("bart-mnli", runs, sizeof runs / sizeof runs[0], binary, sizeof binary, dir, sizeof dir, text, sizeof text);
    snprintf(command, sizeof command, "%s %s/gpt2-tiny \"a text\" --device cpu 2>&1", binary, test_fixtures);
    int status = test_run_output(command, out, sizeof out);
    CHECK_MSG(status == 1 && strstr(out, "no sequence-classification head"), "classify on a causal LM: exit %d: %s", status, out);
}

/* build/classify on a Longformer (longformer-text) against transformers: the text-classification
   pipeline's scores (global attention on the first token, the head's default) and the scores with
   --global-tokens 1,5,9 (transformers' model given that mask), on 2 and 3 ranks; a position beyond
   the input, or a list that is not one, refused. */
static void test_longformer_classify_cli(void) {
    char binary[1024], dir[1024], command[4096], out[1024], text[512] = "";
    static const classify_run runs[] = {
        {"--gpus 2", "text_classification.txt"},
        {"--gpus 3 --global-tokens 1,5,9", "global.txt"},
    };
    classify_runs("longformer-text", runs, sizeof runs / sizeof runs[0], binary, sizeof binary, dir, sizeof dir, text,
                  sizeof text);
    snprintf(command, sizeof command, "%s %s \"%s\" --device cpu --global-tokens 1,500 2>&1", binary, dir, text);
    int status = test_run_output(command, out, sizeof out);
    CHECK_MSG(status == 1 && strstr(out, "position 500 is beyond the input's"), "classify --global-tokens 1,500: exit %d: %s",
              status, out);
    snprintf(command, sizeof command, "%s %s \"%s\" --device cpu --global-tokens 1,x 2>&1", binary, dir, text);
    status = test_run_output(command, out, sizeof out);
    CHECK_MSG(status == 2, "classify --global-tokens 1,x: exit %d: %s", status, out);
}

/* build/classify --regions on a VisualBERT VQA head (visual-bert-vqa-text) against transformers:
   the question's answer scores with the fixture's 4 regions on 2 and 3 ranks, and the question
   alone without them; a file that is not whole regions of the model's width, and regions for a
   model that takes none, refused. */
static void test_visual_question_cli(void) {
    char binary[1024], dir[1024], command[4096], out[1024], text[512] = "", path[1100], bad[] = "/tmp/pf_regions_XXXXXX";
    classify_runs("visual-bert-vqa-text", NULL, 0, binary, sizeof binary, dir, sizeof dir, text, sizeof text);
    for (int ranks = 2; ranks <= 4; ranks++) { /* 4: the question alone, on 1 rank */
        int alone = ranks == 4;
        snprintf(command, sizeof command, "%s %s \"%s\" --device cpu --gpus %d%s%s%s 2>&1", binary, dir, text,
                 alone ? 1 : ranks, alone ? "" : " --regions ", alone ? "" : dir, alone ? "" : "/regions.bin");
        int status = test_run_output(command, out, sizeof out);
        CHECK_MSG(status == 0, "%s: exit %d: %s", command, status, out);
        snprintf(path, sizeof path, "%s/%s", dir, alone ? "text_alone.txt" : "vqa.txt");
        if (status == 0) check_scores(command, out, path);
    }
    int fd = mkstemp(bad);
    if (fd < 0 || write(fd, "7 bytes", 7) != 7) {
        CHECK_MSG(0, "classify --regions: setting up");
        if (fd >= 0) close(fd);
        return;
    }
    close(fd);
    snprintf(command, sizeof command, "%s %s \"%s\" --device cpu --gpus 1 --regions %s 2>&1", binary, dir, text, bad);
    int status = test_run_output(command, out, sizeof out);
    CHECK_MSG(status == 1 && strstr(out, "holds 7 bytes, not regions of 20 float32 features each"),
              "classify --regions of 7 bytes: exit %d: %s", status, out);
    snprintf(command, sizeof command, "%s %s/bart-mnli \"%s\" --device cpu --gpus 1 --regions %s/regions.bin 2>&1", binary,
             test_fixtures, text, dir);
    status = test_run_output(command, out, sizeof out);
    CHECK_MSG(status == 1 && strstr(out, "takes no object regions"), "classify --regions on bart-mnli: exit %d: %s", status,
              out);
    unlink(bad);
}

/* build/classify --regions --boxes on an LXMERT answer head (lxmert-vqa-text) against transformers:
   the question's answer scores with the fixture's 4 regions and their boxes on 2 and 3 ranks; the
   regions without their boxes, boxes without regions, and a boxes file that is not whole boxes of
   the model's width, refused. */
static void test_region_boxes_cli(void) {
    char binary[1024], dir[1024], command[8192], out[1024], text[512] = "", path[1100], bad[] = "/tmp/pf_boxes_XXXXXX";
    classify_runs("lxmert-vqa-text", NULL, 0, binary, sizeof binary, dir, sizeof dir, text, sizeof text);
    for (int ranks = 2; ranks <= 3; ranks++) {
        snprintf(command, sizeof command, "%s %s \"%s\" --device cpu --gpus %d --regions %s/regions.bin --boxes %s/boxes.bin "
                 "2>&1", binary, dir, text, ranks, dir, dir);
        int status = test_run_output(command, out, sizeof out);
        CHECK_MSG(status == 0, "%s: exit %d: %s", command, status, out);
        snprintf(path, sizeof path, "%s/vqa.txt", dir);
        if (status == 0) check_scores(command, out, path);
    }
    snprintf(command, sizeof command, "%s %s \"%s\" --device cpu --gpus 1 --regions %s/regions.bin 2>&1", binary, dir, text,
             dir);
    int status = test_run_output(command, out, sizeof out);
    CHECK_MSG(status == 1 && strstr(out, "boxes of 0 values; model_type \"lxmert\" takes 4"),
              "classify --regions without --boxes: exit %d: %s", status, out);
    snprintf(command, sizeof command, "%s %s \"%s\" --device cpu --gpus 1 --boxes %s/boxes.bin 2>&1", binary, dir, text, dir);
    status = test_run_output(command, out, sizeof out);
    CHECK_MSG(status == 2, "classify --boxes without --regions: exit %d: %s", status, out);
    int fd = mkstemp(bad);
    if (fd < 0 || write(fd, "7 bytes", 7) != 7) {
        CHECK_MSG(0, "classify --boxes: setting up");
        if (fd >= 0) close(fd);
        return;
    }
    close(fd);
    snprintf(command, sizeof command, "%s %s \"%s\" --device cpu --gpus 1 --regions %s/regions.bin --boxes %s 2>&1", binary,
             dir, text, dir, bad);
    status = test_run_output(command, out, sizeof out);
    CHECK_MSG(status == 1 && strstr(out, "holds 7 bytes, not regions of 4 float32 box values each"),
              "classify --boxes of 7 bytes: exit %d: %s", status, out);
    unlink(bad);
}

/* build/classify --entities on a LUKE entity classification head (luke-entity-text) against
   transformers: the first entity's label scores with both entities of entities.txt (the ids and
   token positions LUKE's tokenizer gave), on 2 and 3 ranks; an argument that is not entities, and
   entities for a model without them, refused. */
static void test_entity_classify_cli(void) {
    char binary[1024], dir[1024], command[4096], out[1024], text[512] = "", path[1100], entities[512] = "";
    classify_runs("luke-entity-text", NULL, 0, binary, sizeof binary, dir, sizeof dir, text, sizeof text);
    snprintf(path, sizeof path, "%s/entities.txt", dir);
    size_t size = 0;
    char *lines = test_read_file(path, &size);
    if (lines) snprintf(entities, sizeof entities, "%.*s", (int)strcspn(lines, "\n"), lines);
    free(lines);
    CHECK_MSG(entities[0], "%s unreadable", path);
    for (int ranks = 2; ranks <= 3; ranks++) {
        snprintf(command, sizeof command, "%s %s \"%s\" --device cpu --gpus %d --entities \"%s\" 2>&1", binary, dir, text,
                 ranks, entities);
        int status = test_run_output(command, out, sizeof out);
        CHECK_MSG(status == 0, "%s: exit %d: %s", command, status, out);
        snprintf(path, sizeof path, "%s/entity.txt", dir);
        if (status == 0) check_scores(command, out, path);
    }
    snprintf(command, sizeof command, "%s %s \"%s\" --device cpu --gpus 1 --entities 4@1,x 2>&1", binary, dir, text);
    int status = test_run_output(command, out, sizeof out);
    CHECK_MSG(status == 2 && strstr(out, "usage"), "classify --entities 4@1,x: exit %d: %s", status, out);
    snprintf(command, sizeof command, "%s %s \"%s\" --device cpu --gpus 1 2>&1", binary, dir, text);
    status = test_run_output(command, out, sizeof out);
    CHECK_MSG(status == 1 && strstr(out, "0 entities: LukeForEntityClassification classifies its first entity"),
              "classify without --entities: exit %d: %s", status, out);
    snprintf(command, sizeof command, "%s %s/bart-mnli \"%s\" --device cpu --gpus 1 --entities 4@1 2>&1", binary,
             test_fixtures, text);
    status = test_run_output(command, out, sizeof out);
    CHECK_MSG(status == 1 && strstr(out, "takes no entities"), "classify --entities on bart-mnli: exit %d: %s", status, out);
}

/* Fixture `name` loaded and split over `ranks` CPU ranks (max_batch 2), or NULL with the failure
   reported. */
static pf_model *load_on_cpu(const char *name, int ranks) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s", test_fixtures, name);
    pf_model *m = NULL;
    pf_result r = pf_load(dir, NULL, &m);
    CHECK_MSG(r == PF_OK, "loading %s: %s", name, pf_error_message(m));
    pf_parallel_options po = pf_parallel_options_init();
    po.device = PF_DEVICE_CPU;
    po.max_batch = 2;
    if (r == PF_OK) {
        r = pf_parallelize(m, ranks, &po);
        CHECK_MSG(r == PF_OK, "%s on %d ranks: %s", name, ranks, pf_error_message(m));
    }
    if (r) {
        pf_free(m);
        return NULL;
    }
    return m;
}

/* LUKE's entities: a negative count, a count without ids or positions, an id outside the entity
   vocabulary, a position neither -1 nor one of the row's tokens, a mention_length out of range, or
   more entities than fit after the row's tokens is refused naming the row before any work; a row
   without entities gives what pf_encode gives; a model without entities refuses them. */
static void test_entity_refusals(void) {
    pf_model *m = load_on_cpu("luke", 3);
    if (!m) return;
    CHECK(pf_get_info(m).entity_vocab_size == 30);
    int32_t ids[3] = {0, 17, 2}, entity[1] = {5}, far[1] = {30}, positions[2] = {1, -1}, outside[2] = {3, -1};
    int32_t below[2] = {-2, -1};
    const int32_t *rows[1] = {ids}, *entities[1] = {entity}, *far_entities[1] = {far}, *mentions[1] = {positions};
    const int32_t *outside_mentions[1] = {outside}, *below_mentions[1] = {below}, *none[1] = {NULL};
    int length = 3, one = 1, negative = -1, many = 40;
    struct {
        const int *count;
        const int32_t *const *ids, *const *positions;
        int width;
        const char *message;
    } bad[] = {
        {&negative, entities, mentions, 2, "row 0: -1 entities"},
        {&one, none, mentions, 2, "row 0: 1 entities without their ids or positions (NULL)"},
        {&one, entities, none, 2, "row 0: 1 entities without their ids or positions (NULL)"},
        {&one, far_entities, mentions, 2, "row 0, entity 0: id 30 is outside the entity vocabulary (0..29)"},
        {&one, entities, outside_mentions, 2, "row 0, entity 0: position 3 is neither one of the row's 3 tokens (0..2) nor -1"},
        {&one, entities, below_mentions, 2, "row 0, entity 0: position -2 is neither"},
        {&one, entities, mentions, 0, "mention_length 0: an entity's positions take 1 to 40 values"},
        {&many, entities, mentions, 2, "row 0: 3 tokens and 40 entities exceed max_sequence_length 38 (35 entities fit"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pf_encoding *e = NULL;
        CHECK(pf_encode_entities(m, rows, NULL, bad[i].ids, bad[i].positions, bad[i].count, bad[i].width, &length, 1, &e) ==
                  PF_ERROR_INVALID_ARGUMENT && !e);
        CHECK_MSG(strstr(pf_error_message(m), bad[i].message) != NULL, "bad entities %zu: %s", i, pf_error_message(m));
    }
    /* no entities: pf_encode's encoding */
    pf_encoding *plain = NULL, *zero = NULL, *alone = NULL;
    int zero_count = 0;
    CHECK(pf_encode(m, rows, NULL, &length, 1, &plain) == PF_OK);
    CHECK(pf_encode_entities(m, rows, NULL, NULL, NULL, NULL, 0, &length, 1, &zero) == PF_OK);
    CHECK(pf_encode_entities(m, rows, NULL, none, none, &zero_count, 2, &length, 1, &alone) == PF_OK);
    if (plain && zero && alone) {
        size_t n = (size_t)length * (size_t)plain->hidden_size;
        CHECK(zero->offsets[1] == length && alone->offsets[1] == length);
        CHECK(!memcmp(plain->last_hidden_state, zero->last_hidden_state, n * sizeof(float)));
        CHECK(!memcmp(plain->last_hidden_state, alone->last_hidden_state, n * sizeof(float)));
    }
    pf_encoding_free(plain), pf_encoding_free(zero), pf_encoding_free(alone);
    pf_free(m);
    /* the heads on entities need a row's first one (two) */
    static const struct { const char *name, *message; int count; } heads[] = {
        {"luke-entity", "row 0: 0 entities: LukeForEntityClassification classifies its first entity", 0},
        {"luke-pair", "row 0: 1 entity: LukeForEntityPairClassification classifies its first two entities", 1},
    };
    for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++) {
        if (!(m = load_on_cpu(heads[i].name, 2))) continue;
        pf_encoding *e = NULL;
        CHECK(pf_encode_entities(m, rows, NULL, entities, mentions, &heads[i].count, 2, &length, 1, &e) ==
                  PF_ERROR_INVALID_ARGUMENT && !e);
        CHECK_MSG(strstr(pf_error_message(m), heads[i].message) != NULL, "%s: %s", heads[i].name, pf_error_message(m));
        CHECK(pf_encode(m, rows, NULL, &length, 1, &e) == PF_ERROR_INVALID_ARGUMENT && !e);
        pf_free(m);
    }
    if ((m = load_on_cpu("visual-bert", 1))) {
        pf_encoding *e = NULL;
        CHECK(pf_get_info(m).entity_vocab_size == 0);
        CHECK(pf_encode_entities(m, rows, NULL, entities, mentions, &one, 2, &length, 1, &e) == PF_ERROR_UNSUPPORTED && !e);
        CHECK(strstr(pf_error_message(m), "model_type \"visual_bert\" takes no entities") != NULL);
        pf_free(m);
    }
}

/* VisualBERT's regions: a width other than the model's, a negative count, a count without
   features, more regions than fit after the row's tokens, or a feature not finite is refused
   naming the row before any work; a row without regions gives what pf_encode gives; the VQA head
   needs 2 tokens a row; a model without regions refuses them. */
static void test_region_refusals(void) {
    pf_model *m = load_on_cpu("visual-bert", 2);
    if (!m) return;
    CHECK(pf_get_info(m).region_dim == 20);
    static const int32_t ids[3] = {2, 17, 3};
    static float features[30 * 20];
    for (size_t i = 0; i < sizeof features / sizeof features[0]; i++) features[i] = (float)(i % 7) * 0.25f - 0.5f;
    const int32_t *rows[1] = {ids};
    const float *regions[1] = {features}, *no_features[1] = {NULL};
    int length = 3;
    static const struct { int count, dim, null_features, nan_at; const char *message; } bad[] = {
        {2, 19, 0, -1, "regions of 19 features; model_type \"visual_bert\" takes 20 (visual_embedding_dim)"},
        {-1, 20, 0, -1, "row 0: -1 regions"},
        {2, 20, 1, -1, "row 0: 2 regions without their features (NULL)"},
        {30, 20, 0, -1, "row 0: 3 tokens and 30 regions exceed max_sequence_length 32 (29 regions fit after its tokens)"},
        {2, 20, 0, 24, "row 0, region 1: feature 4 is not finite"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pf_encoding *e = NULL;
        float kept = bad[i].nan_at >= 0 ? features[bad[i].nan_at] : 0.0f;
        if (bad[i].nan_at >= 0) features[bad[i].nan_at] = NAN;
        CHECK(pf_encode_regions(m, rows, NULL, bad[i].null_features ? no_features : regions, &bad[i].count, bad[i].dim,
                                &length, 1, &e) == PF_ERROR_INVALID_ARGUMENT && !e);
        CHECK_MSG(strstr(pf_error_message(m), bad[i].message) != NULL, "bad regions %zu: %s", i, pf_error_message(m));
        if (bad[i].nan_at >= 0) features[bad[i].nan_at] = kept;
    }
    pf_encoding *plain = NULL, *none = NULL, *zero = NULL;
    int zero_count = 0;
    CHECK(pf_encode(m, rows, NULL, &length, 1, &plain) == PF_OK);
    CHECK(pf_encode_regions(m, rows, NULL, NULL, NULL, 20, &length, 1, &none) == PF_OK);
    CHECK(pf_encode_regions(m, rows, NULL, no_features, &zero_count, 20, &length, 1, &zero) == PF_OK);
    if (plain && none && zero) {
        CHECK(none->offsets[1] == 3 && zero->offsets[1] == 3);
        CHECK(test_max_abs_diff(plain->last_hidden_state, none->last_hidden_state, 3 * (size_t)plain->hidden_size) == 0);
        CHECK(test_max_abs_diff(plain->last_hidden_state, zero->last_hidden_state, 3 * (size_t)plain->hidden_size) == 0);
    }
    pf_encoding_free(plain);
    pf_encoding_free(none);
    pf_encoding_free(zero);
    pf_free(m);
    m = load_on_cpu("visual-bert-vqa", 1);
    if (m) {
        pf_encoding *e = NULL;
        int one = 1, count = 2;
        CHECK(pf_encode_regions(m, rows, NULL, regions, &count, 20, &one, 1, &e) == PF_ERROR_INVALID_ARGUMENT && !e);
        CHECK_MSG(strstr(pf_error_message(m), "row 0: 1 token: VisualBertForQuestionAnswering reads the token before the "
                                              "text's last") != NULL, "%s", pf_error_message(m));
    }
    pf_free(m);
    m = load_on_cpu("bert", 1);
    if (m) {
        pf_encoding *e = NULL;
        int count = 2;
        CHECK(pf_get_info(m).region_dim == 0);
        CHECK(pf_encode_regions(m, rows, NULL, regions, &count, 20, &length, 1, &e) == PF_ERROR_UNSUPPORTED && !e);
        CHECK(strstr(pf_error_message(m), "model_type \"bert\" takes no object regions") != NULL);
    }
    pf_free(m);
}

/* LXMERT's regions and boxes: pf_encode and pf_encode_regions refused (it needs the boxes), and
   pf_encode_region_boxes refuses a box width other than the model's, a row without regions,
   boxes NULL and a box value not finite, naming the row; VisualBERT refuses boxes. */
static void test_region_box_refusals(void) {
    pf_model *m = load_on_cpu("lxmert", 2);
    if (!m) return;
    CHECK(pf_get_info(m).region_dim == 20 && pf_get_info(m).region_box_dim == 4);
    static const int32_t ids[3] = {2, 17, 3};
    static float features[2 * 20], boxes[2 * 4];
    for (size_t i = 0; i < sizeof features / sizeof features[0]; i++) features[i] = (float)(i % 7) * 0.25f - 0.5f;
    for (size_t i = 0; i < sizeof boxes / sizeof boxes[0]; i++) boxes[i] = (float)(i % 5) * 0.2f;
    const int32_t *rows[1] = {ids};
    const float *regions[1] = {features}, *region_boxes[1] = {boxes}, *no_boxes[1] = {NULL};
    int length = 3, two = 2, none = 0;
    pf_encoding *e = NULL;
    CHECK(pf_encode(m, rows, NULL, &length, 1, &e) == PF_ERROR_UNSUPPORTED && !e);
    CHECK_MSG(strstr(pf_error_message(m), "model_type \"lxmert\" takes object regions with their boxes: "
                                          "pf_encode_region_boxes runs it") != NULL, "%s", pf_error_message(m));
    CHECK(pf_encode_regions(m, rows, NULL, regions, &two, 20, &length, 1, &e) == PF_ERROR_INVALID_ARGUMENT && !e);
    CHECK_MSG(strstr(pf_error_message(m), "boxes of 0 values; model_type \"lxmert\" takes 4 (visual_pos_dim)") != NULL,
              "%s", pf_error_message(m));
    static const struct { int count, dim, box_dim, null_boxes, nan_at; const char *message; } bad[] = {
        {2, 19, 4, 0, -1, "regions of 19 features; model_type \"lxmert\" takes 20 (visual_feat_dim)"},
        {2, 20, 5, 0, -1, "boxes of 5 values; model_type \"lxmert\" takes 4 (visual_pos_dim)"},
        {0, 20, 4, 0, -1, "row 0: 0 regions: model_type \"lxmert\" takes 1 or more a row"},
        {2, 20, 4, 1, -1, "row 0: 2 regions without their boxes (NULL)"},
        {2, 20, 4, 0, 6, "row 0, region 1: box value 2 is not finite"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        float kept = bad[i].nan_at >= 0 ? boxes[bad[i].nan_at] : 0.0f;
        if (bad[i].nan_at >= 0) boxes[bad[i].nan_at] = NAN;
        CHECK(pf_encode_region_boxes(m, rows, NULL, regions, bad[i].null_boxes ? no_boxes : region_boxes, &bad[i].count,
                                     bad[i].dim, bad[i].box_dim, &length, 1, &e) == PF_ERROR_INVALID_ARGUMENT && !e);
        CHECK_MSG(strstr(pf_error_message(m), bad[i].message) != NULL, "bad boxes %zu: %s", i, pf_error_message(m));
        if (bad[i].nan_at >= 0) boxes[bad[i].nan_at] = kept;
    }
    CHECK(pf_encode_region_boxes(m, rows, NULL, regions, region_boxes, NULL, 20, 4, &length, 1, &e) ==
              PF_ERROR_INVALID_ARGUMENT && !e);
    CHECK(pf_encode_region_boxes(m, rows, NULL, regions, region_boxes, &two, 20, 4, &length, 1, &e) == PF_OK && e);
    if (e) CHECK(e->offsets[1] == 5);
    pf_encoding_free(e);
    pf_free(m);
    m = load_on_cpu("visual-bert", 1);
    if (m) {
        e = NULL;
        CHECK(pf_get_info(m).region_box_dim == 0);
        CHECK(pf_encode_region_boxes(m, rows, NULL, regions, region_boxes, &two, 20, 4, &length, 1, &e) ==
                  PF_ERROR_UNSUPPORTED && !e);
        CHECK_MSG(strstr(pf_error_message(m), "boxes of 4 values; model_type \"visual_bert\" takes 0 (pf_encode_regions "
                                              "runs it)") != NULL, "%s", pf_error_message(m));
        CHECK(pf_encode_region_boxes(m, rows, NULL, regions, NULL, &none, 20, 0, &length, 1, &e) == PF_OK);
        pf_encoding_free(e);
    }
    pf_free(m);
}

/* The floats of FILE in a fixture against `got` (count of them, from element `first` of the file). */
static void check_floats_at(const char *what, const char *dir, const char *file, size_t first, const float *got,
                            size_t count) {
    char path[1100];
    size_t n = 0;
    snprintf(path, sizeof path, "%s/%s", dir, file);
    float *want = test_read_floats(path, &n);
    CHECK_MSG(want && got && n >= first + count, "%s: %s holds %zu floats, want %zu from %zu", what, file, n, count, first);
    if (want && got && n >= first + count)
        CHECK_MSG(test_max_abs_diff(got, want + first, count) <= TOLERANCE, "%s: differs from %s", what, file);
    free(want);
}

/* LayoutLM's boxes: one whose corners are swapped, or a value outside the 2-D tables' rows, is
   refused naming the row and token before any work; pf_encode runs the model with zero boxes, as
   pf_encode_layout without boxes does; a model without 2-D tables refuses boxes. */
/* XLM's languages through pf_encode's token_type_ids: none given adds none (transformers without
   langs); a batch gives them for every row or none; a model without language embeddings takes no
   token types (transformers would add word-table rows for them); an id beyond n_langs refused. */
static void test_xlm_languages(void) {
    char dir[1024], path[1100];
    test_encoder_reference ref;
    pf_model *m = load_embedding_fixture("xlm-lang", dir, sizeof dir, &ref);
    if (!m) return;
    const int32_t *ids[TEST_ENCODER_ROWS], *types[TEST_ENCODER_ROWS];
    size_t tokens = 0, n = 0;
    for (int b = 0; b < ref.rows; b++) ids[b] = ref.ids[b], types[b] = ref.types[b], tokens += (size_t)ref.lengths[b];
    pf_encoding *e = NULL;
    for (int ranks = 1; ranks <= 3; ranks += 2) {
        pf_parallel_options po = pf_parallel_options_init();
        po.device = PF_DEVICE_CPU;
        po.max_batch = ref.rows;
        CHECK(pf_parallelize(m, ranks, &po) == PF_OK);
        CHECK_MSG(pf_encode(m, ids, NULL, ref.lengths, ref.rows, &e) == PF_OK, "%s", pf_error_message(m));
        snprintf(path, sizeof path, "%s/hidden_nolangs.bin", dir);
        float *want = test_read_floats(path, &n);
        CHECK_MSG(want && e && n == tokens * (size_t)e->hidden_size &&
                      test_max_abs_diff(e->last_hidden_state, want, n) <= TOLERANCE,
                  "xlm-lang without languages on %d ranks differs from transformers without langs", ranks);
        free(want);
        pf_encoding_free(e);
        e = NULL;
    }
    types[1] = NULL;
    CHECK(pf_encode(m, ids, types, ref.lengths, ref.rows, &e) == PF_ERROR_INVALID_ARGUMENT && !e);
    CHECK(strstr(pf_error_message(m), "languages for every row of a batch or for none") != NULL);
    int32_t beyond[TEST_MAX_IDS];
    memcpy(beyond, ref.types[1], sizeof beyond);
    beyond[2] = 3;
    types[1] = beyond;
    CHECK(pf_encode(m, ids, types, ref.lengths, ref.rows, &e) == PF_ERROR_INVALID_ARGUMENT && !e);
    CHECK(strstr(pf_error_message(m), "token type 3 is outside 0..2") != NULL);
    pf_free(m);
    m = load_embedding_fixture("xlm", dir, sizeof dir, &ref);
    if (!m) return;
    int32_t zeros[TEST_MAX_IDS] = {0};
    for (int b = 0; b < ref.rows; b++) ids[b] = ref.ids[b], types[b] = zeros;
    pf_parallel_options po = pf_parallel_options_init();
    po.device = PF_DEVICE_CPU;
    po.max_batch = ref.rows;
    CHECK(pf_parallelize(m, 1, &po) == PF_OK);
    CHECK(pf_encode(m, ids, types, ref.lengths, ref.rows, &e) == PF_ERROR_UNSUPPORTED && !e);
    CHECK(strstr(pf_error_message(m), "without language embeddings (n_langs 1, use_lang_emb 1) takes no token_type_ids") != NULL);
    pf_free(m);
}

static void test_layout_refusals(void) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/layoutlm", test_fixtures);
    pf_model *m = load_on_cpu("layoutlm", 2);
    if (!m) return;
    static const int32_t ids[3] = {2, 17, 3};
    static const struct { int32_t box[4]; const char *message; } bad[] = {
        {{10, 5, 9, 6}, "row 0, token 1: box (10, 5, 9, 6) is not x0 <= x1 and y0 <= y1 within 0..63"},
        {{10, 5, 12, 4}, "row 0, token 1: box (10, 5, 12, 4)"},
        {{10, 5, 64, 6}, "row 0, token 1: box (10, 5, 64, 6)"},
        {{-1, 5, 12, 6}, "row 0, token 1: box (-1, 5, 12, 6)"},
    };
    const int32_t *rows[1] = {ids};
    int length = 3;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int32_t boxes[12] = {0, 0, 0, 0, 0, 0, 0, 0, 63, 63, 63, 63};
        memcpy(boxes + 4, bad[i].box, sizeof bad[i].box);
        const int32_t *row_boxes[1] = {boxes};
        pf_encoding *e = NULL;
        CHECK(pf_encode_layout(m, rows, NULL, row_boxes, &length, 1, &e) == PF_ERROR_INVALID_ARGUMENT && !e);
        CHECK_MSG(strstr(pf_error_message(m), bad[i].message) != NULL, "bad box %zu: %s", i, pf_error_message(m));
    }
    pf_encoding *plain = NULL, *unboxed = NULL;
    CHECK(pf_encode(m, rows, NULL, &length, 1, &plain) == PF_OK);
    CHECK(pf_encode_layout(m, rows, NULL, NULL, &length, 1, &unboxed) == PF_OK);
    if (plain && unboxed)
        CHECK(test_max_abs_diff(plain->last_hidden_state, unboxed->last_hidden_state, 3 * (size_t)plain->hidden_size) == 0);
    /* a batch of a boxed row (the fixture's row 0) and a row without boxes: each as alone */
    test_encoder_reference ref;
    pf_encoding *mixed = NULL;
    if (test_read_encoder_reference(dir, &ref) == 0) {
        const int32_t *both[2] = {ref.ids[0], ids}, *both_boxes[2] = {ref.boxes[0], NULL};
        int lengths[2] = {ref.lengths[0], length};
        CHECK(pf_encode_layout(m, both, NULL, both_boxes, lengths, 2, &mixed) == PF_OK);
    }
    if (mixed && unboxed) {
        size_t d = (size_t)mixed->hidden_size, first = (size_t)ref.lengths[0] * d;
        check_floats_at("layoutlm's boxed row beside one without boxes", dir, "hidden.bin", 0, mixed->last_hidden_state, first);
        CHECK_MSG(test_max_abs_diff(mixed->last_hidden_state + first, unboxed->last_hidden_state, 3 * d) <= TOLERANCE,
                  "layoutlm's row without boxes beside a boxed one differs from it alone");
    }
    pf_encoding_free(mixed);
    pf_encoding_free(plain);
    pf_encoding_free(unboxed);
    pf_free(m);
    m = load_on_cpu("bert", 1);
    if (m) {
        pf_encoding *e = NULL;
        CHECK(pf_encode_layout(m, rows, NULL, NULL, &length, 1, &e) == PF_ERROR_UNSUPPORTED && !e);
        CHECK(strstr(pf_error_message(m), "model_type \"bert\" has no 2-D position embeddings") != NULL);
    }
    pf_free(m);
}

/* Longformer's global tokens: a value other than 0 or 1 is refused naming the row and token; the
   question-answering head's default needs 3 separators a row (refused naming the row); given
   masks equal to the defaults, beside a row left to its default, give transformers' logits; a
   model without global attention refuses them. */
static void test_longformer_global_tokens(void) {
    char dir[1024];
    test_encoder_reference ref;
    pf_model *m = load_embedding_fixture("longformer-qa", dir, sizeof dir, &ref);
    if (!m) return;
    pf_parallel_options po = pf_parallel_options_init();
    po.device = PF_DEVICE_CPU;
    po.max_batch = ref.rows;
    CHECK(pf_parallelize(m, 2, &po) == PF_OK);
    const int32_t *ids[TEST_ENCODER_ROWS], *global[TEST_ENCODER_ROWS];
    int32_t question[TEST_ENCODER_ROWS][TEST_MAX_IDS] = {{0}};
    for (int b = 0; b < ref.rows; b++) { /* the question: the tokens before the first separator (id 2) */
        ids[b] = ref.ids[b];
        for (int t = 0; t < ref.lengths[b] && ref.ids[b][t] != 2; t++) question[b][t] = 1;
        global[b] = b == 1 ? NULL : question[b];
    }
    pf_encoding *e = NULL;
    pf_result r = pf_encode_global(m, ids, NULL, global, ref.lengths, ref.rows, &e);
    CHECK_MSG(r == PF_OK, "longformer-qa with given global tokens: %s", pf_error_message(m));
    if (r == PF_OK)
        check_array("longformer-qa with the default's global tokens given", dir, "logits.bin", e->logits,
                    (size_t)e->offsets[ref.rows] * 2);
    pf_encoding_free(e);
    e = NULL;
    question[0][1] = 2;
    global[0] = question[0];
    CHECK(pf_encode_global(m, ids, NULL, global, ref.lengths, ref.rows, &e) == PF_ERROR_INVALID_ARGUMENT && !e);
    CHECK(strstr(pf_error_message(m), "row 0, token 1: global attention 2 is not 0 or 1") != NULL);
    int32_t two_separators[5] = {0, 17, 2, 2, 45};
    const int32_t *rows[1] = {two_separators};
    int length = 5;
    CHECK(pf_encode(m, rows, NULL, &length, 1, &e) == PF_ERROR_INVALID_ARGUMENT && !e);
    CHECK(strstr(pf_error_message(m), "row 0 holds 2 separators (sep_token_id 2), not 3") != NULL);
    pf_free(m);
    if (!(m = load_embedding_fixture("roberta", dir, sizeof dir, &ref))) return;
    CHECK(pf_encode_global(m, ids, NULL, NULL, ref.lengths, 1, &e) == PF_ERROR_UNSUPPORTED && !e);
    CHECK(strstr(pf_error_message(m), "has no global attention") != NULL);
    pf_free(m);
}

/* build/layout end to end: a document's words and boxes through the model's tokenizer and
   LayoutLM on 3 ranks give transformers' logits and each word's label (layoutlm-words, boxed as
   transformers' examples box [CLS] and [SEP]); token ids and boxes (--ids) give the fixture's
   logits, two documents a batch; a bad box and a malformed line are clear errors. */
static void test_layout_cli(void) {
    char layout[1024], dir[1024], input[] = "/tmp/pf_layout_XXXXXX", logits_path[64], command[4096], out[2048];
    test_example_path("layout", layout, sizeof layout);
    snprintf(logits_path, sizeof logits_path, "%s.logits", input);
    int fd = mkstemp(input);
    if (fd < 0) {
        CHECK_MSG(0, "layout CLI: setting up");
        return;
    }
    close(fd);
    snprintf(dir, sizeof dir, "%s/layoutlm-words", test_fixtures);
    snprintf(command, sizeof command, "%s %s %s/words.txt --device cpu --gpus 3 --logits %s 2>&1", layout, dir, dir, logits_path);
    int status = test_run_output(command, out, sizeof out);
    char path[1100];
    snprintf(path, sizeof path, "%s/labels.txt", dir);
    size_t size = 0, n = 0;
    char *labels = test_read_file(path, &size);
    CHECK_MSG(status == 0 && labels && !strcmp(out, labels), "layout CLI printed \"%s\", want \"%s\"", out, labels ? labels : "?");
    free(labels);
    float *got = test_read_floats(logits_path, &n);
    check_floats_at("layout CLI's words", dir, "logits.bin", 0, got, n);
    free(got);
    /* rows 0 and 2 of layoutlm-tok (their segments all 0) as token ids and boxes */
    test_encoder_reference ref;
    snprintf(dir, sizeof dir, "%s/layoutlm-tok", test_fixtures);
    FILE *f = test_read_encoder_reference(dir, &ref) ? NULL : fopen(input, "w");
    CHECK_MSG(f != NULL, "layout CLI: reading %s", dir);
    if (!f) return;
    for (int b = 0; b < 3; b += 2) {
        for (int t = 0; t < ref.lengths[b]; t++)
            fprintf(f, "%d %d %d %d %d\n", (int)ref.ids[b][t], (int)ref.boxes[b][4 * t], (int)ref.boxes[b][4 * t + 1],
                    (int)ref.boxes[b][4 * t + 2], (int)ref.boxes[b][4 * t + 3]);
        fprintf(f, "\n");
    }
    fclose(f);
    snprintf(command, sizeof command, "%s %s %s --ids --device cpu --gpus 2 --logits %s >/dev/null 2>&1", layout, dir, input,
             logits_path);
    CHECK_MSG(system(command) == 0, "%s", command);
    got = test_read_floats(logits_path, &n);
    size_t first = (size_t)ref.lengths[0] * 5, second = (size_t)ref.lengths[2] * 5;
    CHECK_MSG(got && n == first + second, "layout CLI --ids: %zu logits, want %zu", n, first + second);
    if (got && n == first + second) {
        check_floats_at("layout CLI --ids, document 0", dir, "logits.bin", 0, got, first);
        check_floats_at("layout CLI --ids, document 1", dir, "logits.bin", (size_t)(ref.lengths[0] + ref.lengths[1]) * 5,
                        got + first, second);
    }
    free(got);
    static const struct { const char *text, *message; } bad[] = {
        {"Total 500 10 400 20\n", "row 0, token 1: box (500, 10, 400, 20)"},
        {"Total 5 10 40\n", "not lines of \"WORD x0 y0 x1 y1\""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        test_write_file(input, bad[i].text, strlen(bad[i].text));
        snprintf(command, sizeof command, "%s %s/layoutlm-words %s --device cpu --gpus 1 2>&1", layout, test_fixtures, input);
        status = test_run_output(command, out, sizeof out);
        CHECK_MSG(status == 1 && strstr(out, bad[i].message), "layout CLI on \"%s\": status %d, \"%s\"", bad[i].text, status, out);
    }
    unlink(input);
    unlink(logits_path);
}

/* TAPAS's table types: one outside its table (type_vocab_sizes) refused naming the row, token and
   type; pf_encode_table on a model without them refused; pf_encode gives what pf_encode_table
   without types gives (every type 0); a row with types beside one without gives each what it gives
   alone. build/table end to end on tapas-qa's rows (two rows a batch, 3 ranks): the cells whose
   logits transformers puts above 0 and the best aggregation operator of each row; a malformed line
   and a bad type are clear errors. */
static void test_tapas_inputs(void) {
    char dir[1024];
    test_encoder_reference ref;
    snprintf(dir, sizeof dir, "%s/tapas-qa", test_fixtures);
    pf_model *m = test_read_encoder_reference(dir, &ref) ? NULL : load_on_cpu("tapas-qa", 2);
    if (!m) return;
    const int32_t *ids[2] = {ref.ids[0], ref.ids[2]}, *table[2] = {ref.table[0], NULL};
    int lengths[2] = {ref.lengths[0], ref.lengths[2]};
    static const struct { int token, type, value; const char *message; } bad[] = {
        {6, 1, 6, "row 0, token 6: table type 1 (column) 6 is outside 0..5 (type_vocab_sizes)"},
        {7, 2, 8, "row 0, token 7: table type 2 (row) 8 is outside 0..7"},
        {2, 6, -1, "row 0, token 2: table type 6 (numeric relation) -1 is outside 0..3"},
        {1, 0, 3, "row 0, token 1: table type 0 (segment) 3 is outside 0..2"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int32_t types[7 * TEST_MAX_IDS];
        memcpy(types, ref.table[0], sizeof types);
        types[7 * bad[i].token + bad[i].type] = bad[i].value;
        const int32_t *rows[1] = {types};
        pf_encoding *e = NULL;
        CHECK(pf_encode_table(m, ids, rows, lengths, 1, &e) == PF_ERROR_INVALID_ARGUMENT && !e);
        CHECK_MSG(strstr(pf_error_message(m), bad[i].message) != NULL, "bad table type %zu: %s", i, pf_error_message(m));
    }
    pf_encoding *plain = NULL, *untyped = NULL, *mixed = NULL;
    CHECK(pf_encode(m, ids + 1, NULL, lengths + 1, 1, &plain) == PF_OK);
    CHECK(pf_encode_table(m, ids + 1, NULL, lengths + 1, 1, &untyped) == PF_OK);
    CHECK(pf_encode_table(m, ids, table, lengths, 2, &mixed) == PF_OK);
    size_t d = plain ? (size_t)plain->hidden_size : 0, first = (size_t)lengths[0] * d;
    if (plain && untyped)
        CHECK(test_max_abs_diff(plain->last_hidden_state, untyped->last_hidden_state, (size_t)lengths[1] * d) == 0 &&
              test_max_abs_diff(plain->logits, untyped->logits, (size_t)lengths[1]) == 0);
    if (mixed && untyped) {
        check_floats_at("tapas-qa's typed row beside one without types", dir, "hidden.bin", 0, mixed->last_hidden_state, first);
        CHECK_MSG(test_max_abs_diff(mixed->last_hidden_state + first, untyped->last_hidden_state, (size_t)lengths[1] * d) <=
                      TOLERANCE && mixed->num_aggregation_logits == 4 && untyped->aggregation_logits &&
                      test_max_abs_diff(mixed->aggregation_logits + 4, untyped->aggregation_logits, 4) <= TOLERANCE,
                  "tapas-qa's row without types beside a typed one differs from it alone");
    }
    pf_encoding_free(plain), pf_encoding_free(untyped), pf_encoding_free(mixed);
    pf_free(m);
    if ((m = load_on_cpu("bert", 1))) {
        pf_encoding *e = NULL;
        CHECK(pf_encode_table(m, ids, NULL, lengths, 1, &e) == PF_ERROR_UNSUPPORTED && !e);
        CHECK(strstr(pf_error_message(m), "takes no table token types") != NULL);
        pf_free(m);
    }
    /* build/table: rows 0 and 1 of tapas-qa, each token "ID and its 7 types" */
    char tool[1024], input[] = "/tmp/pf_table_XXXXXX", command[4096], out[2048], want[2048] = "";
    test_example_path("table", tool, sizeof tool);
    int fd = mkstemp(input);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    size_t n = 0, agg_n = 0;
    char path[1100];
    snprintf(path, sizeof path, "%s/logits.bin", dir);
    float *logits = test_read_floats(path, &n);
    snprintf(path, sizeof path, "%s/aggregation.bin", dir);
    float *aggregation = test_read_floats(path, &agg_n);
    CHECK_MSG(f && logits && aggregation && agg_n == 4 * (size_t)ref.rows, "table CLI: setting up");
    if (!f || !logits || !aggregation || agg_n != 4 * (size_t)ref.rows) {
        if (f) fclose(f);
        free(logits), free(aggregation);
        return;
    }
    for (int b = 0, offset = 0; b < 2; offset += ref.lengths[b++]) {
        for (int t = 0; t < ref.lengths[b]; t++) {
            const int32_t *types = ref.table[b] + 7 * t;
            fprintf(f, "%d", (int)ref.ids[b][t]);
            for (int k = 0; k < 7; k++) fprintf(f, " %d", (int)types[k]);
            fprintf(f, "\n");
            int first = 1; /* the cells transformers selects, each at its first token */
            for (int u = 0; u < t && first; u++) first = ref.table[b][7 * u + 1] != types[1] || ref.table[b][7 * u + 2] != types[2];
            if (first && types[1] > 0 && types[2] > 0 && logits[offset + t] > 0)
                snprintf(want + strlen(want), sizeof want - strlen(want), "%d %d\n", (int)types[2] - 1, (int)types[1] - 1);
        }
        int best = 0;
        for (int k = 1; k < 4; k++) best = aggregation[4 * b + k] > aggregation[4 * b + best] ? k : best;
        snprintf(want + strlen(want), sizeof want - strlen(want), "aggregation %d\n%s", best, b == 0 ? "\n" : "");
        fprintf(f, "\n");
    }
    fclose(f);
    free(logits), free(aggregation);
    snprintf(command, sizeof command, "%s %s %s --device cpu --gpus 3 2>&1", tool, dir, input);
    int status = test_run_output(command, out, sizeof out);
    CHECK_MSG(status == 0 && !strcmp(out, want), "table CLI printed \"%s\" (status %d), want \"%s\"", out, status, want);
    CHECK_MSG(strchr(want, ' ') && strstr(want, "aggregation"), "table CLI: transformers selects no cell: \"%s\"", want);
    static const struct { const char *text, *message; } bad_lines[] = {
        {"101 0 0 0 0 0 0 0\n17 1 9 1 0 0 0 0\n", "row 0, token 1: table type 1 (column) 9 is outside 0..5"},
        {"101 0 0 0 0 0 0\n", "not lines of 8 integers"},
    };
    for (size_t i = 0; i < sizeof bad_lines / sizeof bad_lines[0]; i++) {
        test_write_file(input, bad_lines[i].text, strlen(bad_lines[i].text));
        status = test_run_output(command, out, sizeof out);
        CHECK_MSG(status == 1 && strstr(out, bad_lines[i].message), "table CLI on \"%s\": status %d, \"%s\"",
                  bad_lines[i].text, status, out);
    }
    unlink(input);
}

/* Funnel (blocks [2, 1, 2], separate_cls, truncate_seq): a row too short to pool before every
   block is refused naming the shortest (5 tokens pool to 3, then 2; 4 to 2, which transformers
   would leave unpooled); segments 0 to 2 only (2: the class token's). */
static void test_funnel_refusals(void) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/funnel", test_fixtures);
    pf_model *m = NULL;
    if (pf_load(dir, NULL, &m) != PF_OK) {
        CHECK_MSG(0, "loading %s: %s", dir, pf_error_message(m));
        pf_free(m);
        return;
    }
    int32_t shortest[5] = {2, 17, 45, 88, 3}, too_short[4] = {2, 17, 45, 3}, types[5] = {2, 0, 0, 1, 3};
    const int32_t *rows[2] = {shortest, too_short}, *row_types[1] = {types};
    int lengths[2] = {5, 4};
    pf_encoding *e = NULL;
    pf_parallel_options po = pf_parallel_options_init();
    po.device = PF_DEVICE_CPU;
    po.max_batch = 2;
    CHECK(pf_parallelize(m, 2, &po) == PF_OK);
    CHECK(pf_encode(m, rows, NULL, lengths, 2, &e) == PF_ERROR_INVALID_ARGUMENT && !e);
    CHECK_MSG(strstr(pf_error_message(m), "row 1: 4 tokens are too few for Funnel's 2 poolings (5 at least") != NULL,
              "%s", pf_error_message(m));
    CHECK(pf_encode(m, rows, row_types, lengths, 1, &e) == PF_ERROR_INVALID_ARGUMENT && !e);
    CHECK(strstr(pf_error_message(m), "token type 3 is outside 0..2") != NULL);
    types[4] = 2;
    CHECK(pf_encode(m, rows, row_types, lengths, 1, &e) == PF_OK && e && e->offsets[1] == 2);
    pf_encoding_free(e);
    pf_free(m);
}

/* XLNetLMHeadModel's greedy generation against transformers' generate() (make_encoder_fixtures.py's
   make_xlnet_lm): the same tokens on 1, 2 and 3 ranks (4 heads: 2, 1, 1) and after pf_to_cpu;
   pf_forward refused (its logits are the query stream's), one sequence at a time. */
static void test_xlnet_generation(const char *name) {
    char dir[1024];
    test_reference ref;
    snprintf(dir, sizeof dir, "%s/%s", test_fixtures, name);
    pf_model *m = NULL;
    if (test_read_reference(dir, &ref) || pf_load(dir, NULL, &m) != PF_OK) {
        CHECK_MSG(0, "loading %s: %s", dir, m ? pf_error_message(m) : "no reference.txt");
        pf_free(m);
        return;
    }
    pf_model_info info = pf_get_info(m);
    CHECK(info.head == PF_HEAD_CAUSAL_LM);
    int32_t prompt[TEST_MAX_IDS], out[TEST_MAX_IDS];
    for (int i = 0; i < ref.num_prompt_ids; i++) prompt[i] = ref.prompt_ids[i];
    pf_generate_options o = pf_generate_options_init();
    o.max_new_tokens = ref.max_new_tokens;
    for (int run = 0; run < 4; run++) { /* 1, 2, 3 ranks, then gathered back onto one CPU rank */
        pf_result r = PF_OK;
        if (run < 3) {
            pf_parallel_options po = pf_parallel_options_init();
            po.device = PF_DEVICE_CPU;
            po.max_batch = 1;
            r = pf_parallelize(m, run + 1, &po);
        } else {
            r = pf_to_cpu(m);
        }
        int n = 0;
        if (r == PF_OK) r = pf_generate(m, prompt, ref.num_prompt_ids, &o, out, TEST_MAX_IDS, &n);
        CHECK_MSG(r == PF_OK, "%s, run %d: %s", name, run, pf_error_message(m));
        int same = r == PF_OK && n == ref.num_greedy_ids;
        for (int i = 0; same && i < n; i++) same = out[i] == ref.greedy_ids[i];
        CHECK_MSG(same, "%s, run %d: %d tokens, not transformers' %d greedy ones", name, run, n, ref.num_greedy_ids);
    }
    float logit;
    CHECK(pf_forward(m, prompt, 1, ref.num_prompt_ids, &logit) == PF_ERROR_UNSUPPORTED);
    CHECK(strstr(pf_error_message(m), "query stream") != NULL);
    o.num_beams = 2;
    int n = 0;
    CHECK(pf_generate(m, prompt, ref.num_prompt_ids, &o, out, TEST_MAX_IDS, &n) == PF_ERROR_UNSUPPORTED);
    CHECK(strstr(pf_error_message(m), "XLNet generates one prompt, one sequence at a time") != NULL);
    pf_free(m);
}

/* TransfoXLLMHeadModel (make_transfo_xl_fixtures.py, transformers 4.57): each row's hidden states
   (pf_encode) and the adaptive softmax's log-probabilities of every position (pf_forward, each row
   alone, as transformers' prediction_scores) within 1e-4, and transformers' greedy tokens of
   generate() carrying the memory from step to step; on 1, 2 and 3 ranks (3 heads: 2, 1 on two), in
   chunks of 2 positions (the prompt one segment still), and after pf_to_cpu. Beams refused. */
static void test_transfo_xl_lm(const char *name) {
    char dir[1024], path[1100];
    test_reference gen;
    test_encoder_reference ref;
    snprintf(dir, sizeof dir, "%s/%s", test_fixtures, name);
    pf_model *m = NULL;
    if (test_read_reference(dir, &gen) || test_read_encoder_reference(dir, &ref) || pf_load(dir, NULL, &m) != PF_OK) {
        CHECK_MSG(0, "loading %s: %s", dir, m ? pf_error_message(m) : "no reference.txt");
        pf_free(m);
        return;
    }
    pf_model_info info = pf_get_info(m);
    CHECK(info.head == PF_HEAD_CAUSAL_LM && !info.is_encoder);
    size_t vocab = (size_t)info.vocab_size, d = (size_t)info.hidden_size, tokens = 0, n_hidden = 0, n_logits = 0;
    for (int b = 0; b < ref.rows; b++) tokens += (size_t)ref.lengths[b];
    snprintf(path, sizeof path, "%s/hidden.bin", dir);
    float *want_hidden = test_read_floats(path, &n_hidden);
    snprintf(path, sizeof path, "%s/logits.bin", dir);
    float *want_logits = test_read_floats(path, &n_logits), *logits = (float *)malloc(tokens * vocab * sizeof(float));
    CHECK_MSG(want_hidden && n_hidden == tokens * d && want_logits && n_logits == tokens * vocab && logits,
              "%s: hidden.bin and logits.bin hold %zu and %zu floats", name, n_hidden, n_logits);
    int32_t prompt[TEST_MAX_IDS], out[TEST_MAX_IDS];
    for (int i = 0; i < gen.num_prompt_ids; i++) prompt[i] = gen.prompt_ids[i];
    pf_generate_options o = pf_generate_options_init();
    o.max_new_tokens = gen.max_new_tokens;
    for (int run = 0; run < 5 && want_hidden && want_logits && logits; run++) { /* 1-3 ranks, chunks, pf_to_cpu */
        int ranks = run < 3 ? run + 1 : 2;
        pf_result r;
        if (run < 4) {
            pf_parallel_options po = pf_parallel_options_init();
            po.device = PF_DEVICE_CPU;
            po.max_batch = ref.rows;
            if (run == 3) po.prefill_chunk = 2 * ref.rows;
            r = pf_parallelize(m, ranks, &po);
        } else {
            r = pf_to_cpu(m);
        }
        char what[160];
        snprintf(what, sizeof what, "%s, %s", name, run == 4 ? "after pf_to_cpu" : run == 3 ? "2 ranks, chunks of 2" : "");
        if (run < 3) snprintf(what, sizeof what, "%s on %d ranks", name, ranks);
        const int32_t *ids[TEST_ENCODER_ROWS];
        for (int b = 0; b < ref.rows; b++) ids[b] = ref.ids[b];
        pf_encoding *e = NULL;
        if (r == PF_OK) r = pf_encode(m, ids, NULL, ref.lengths, ref.rows, &e);
        CHECK_MSG(r == PF_OK, "%s: pf_encode: %s", what, pf_error_message(m));
        if (r == PF_OK) {
            float diff = test_max_abs_diff(e->last_hidden_state, want_hidden, tokens * d);
            CHECK_MSG(diff <= TOLERANCE, "%s: hidden states differ from transformers by %g", what, diff);
        }
        pf_encoding_free(e);
        size_t at = 0;
        for (int b = 0; r == PF_OK && b < ref.rows; at += (size_t)ref.lengths[b++]) {
            r = pf_forward(m, ref.ids[b], 1, ref.lengths[b], logits + at * vocab);
            CHECK_MSG(r == PF_OK, "%s: pf_forward row %d: %s", what, b, pf_error_message(m));
        }
        if (r == PF_OK) {
            float diff = test_max_abs_diff(logits, want_logits, tokens * vocab);
            CHECK_MSG(diff <= TOLERANCE, "%s: log-probabilities differ from transformers by %g", what, diff);
        }
        int n = 0;
        if (r == PF_OK) r = pf_generate(m, prompt, gen.num_prompt_ids, &o, out, TEST_MAX_IDS, &n);
        CHECK_MSG(r == PF_OK, "%s: pf_generate: %s", what, pf_error_message(m));
        int same = r == PF_OK && n == gen.num_greedy_ids;
        for (int i = 0; same && i < n; i++) same = out[i] == gen.greedy_ids[i];
        CHECK_MSG(same, "%s: %d tokens, not transformers' %d greedy ones", what, n, gen.num_greedy_ids);
    }
    o.num_beams = 2;
    int n = 0;
    CHECK(pf_generate(m, prompt, gen.num_prompt_ids, &o, out, TEST_MAX_IDS, &n) == PF_ERROR_UNSUPPORTED);
    CHECK(strstr(pf_error_message(m), "Transformer-XL generates one prompt, one sequence at a time") != NULL);
    free(want_hidden), free(want_logits), free(logits);
    pf_free(m);
}

void test_encoders(void) {
    test_audio_fixture("wav2vec2-ctc");
    test_audio_fixture("xlsr-ctc");
    test_audio_fixture("hubert-ctc");
    test_audio_refusals();
    test_transcribe_cli();
    test_classify_cli();
    test_text_classify_cli();
    test_clip_fixture();
    test_clip_variants();
    test_image_fixture("vit", PF_HEAD_NONE, 0, 17, 8);
    test_image_fixture("vit-cls", PF_HEAD_IMAGE_CLASSIFICATION, 5, 17, 8);
    test_image_fixture("deit-cls", PF_HEAD_IMAGE_CLASSIFICATION, 5, 18, 8);
    test_image_fixture("deit-teacher", PF_HEAD_IMAGE_CLASSIFICATION, 5, 18, 8);
    test_image_fixture("vit-uneven", PF_HEAD_NONE, 0, 26, 6); /* 32 pixels in patches of 6: 5 x 5 of them */
    test_image_fixture("deit-uneven", PF_HEAD_IMAGE_CLASSIFICATION, 5, 27, 6);
    test_image_fixture("clip-vision-uneven", PF_HEAD_NONE, 0, 26, 6);
    test_encoder_fixture("bert", PF_HEAD_NONE, 0, 0);
    test_encoder_fixture("bert-mlm", PF_HEAD_MASKED_LM, 120, 1);
    test_encoder_fixture("bert-cls", PF_HEAD_SEQUENCE_CLASSIFICATION, 3, 0);
    test_encoder_fixture("bert-tok", PF_HEAD_TOKEN_CLASSIFICATION, 5, 1);
    test_encoder_fixture("bert-qa", PF_HEAD_QUESTION_ANSWERING, 2, 1);
    test_encoder_fixture("megatron-bert", PF_HEAD_NONE, 0, 0);
    test_encoder_fixture("megatron-bert-mlm", PF_HEAD_MASKED_LM, 120, 1);
    test_encoder_fixture("roberta", PF_HEAD_NONE, 0, 0);
    test_encoder_fixture("roberta-mlm", PF_HEAD_MASKED_LM, 120, 1);
    test_encoder_fixture("roberta-cls", PF_HEAD_SEQUENCE_CLASSIFICATION, 3, 0);
    test_encoder_fixture("xlm-roberta-tok", PF_HEAD_TOKEN_CLASSIFICATION, 4, 1);
    test_encoder_fixture("electra", PF_HEAD_NONE, 0, 0);
    test_encoder_fixture("electra-mlm", PF_HEAD_MASKED_LM, 120, 1);
    test_encoder_fixture("electra-cls", PF_HEAD_SEQUENCE_CLASSIFICATION, 3, 0);
    test_encoder_fixture("electra-rtd", PF_HEAD_REPLACED_TOKEN_DETECTION, 1, 1);
    test_encoder_fixture("bert-mc", PF_HEAD_MULTIPLE_CHOICE, 1, 0);
    test_encoder_fixture("roberta-mc", PF_HEAD_MULTIPLE_CHOICE, 1, 0);
    test_encoder_fixture("distilbert-mc", PF_HEAD_MULTIPLE_CHOICE, 1, 0);
    test_encoder_fixture("deberta-v3-mc", PF_HEAD_MULTIPLE_CHOICE, 1, 0);
    test_encoder_fixture("albert-mc", PF_HEAD_MULTIPLE_CHOICE, 1, 0);
    test_encoder_fixture("mpnet-mc", PF_HEAD_MULTIPLE_CHOICE, 1, 0);
    test_encoder_fixture("albert", PF_HEAD_NONE, 0, 0);
    test_encoder_fixture("albert-mlm", PF_HEAD_MASKED_LM, 120, 1);
    test_encoder_fixture("albert-cls", PF_HEAD_SEQUENCE_CLASSIFICATION, 3, 0);
    test_encoder_fixture("roformer", PF_HEAD_NONE, 0, 0);
    test_encoder_fixture("roformer-mlm", PF_HEAD_MASKED_LM, 120, 1);
    test_encoder_fixture("roformer-cls", PF_HEAD_SEQUENCE_CLASSIFICATION, 3, 0);
    test_encoder_fixture("mpnet", PF_HEAD_NONE, 0, 0);
    test_encoder_fixture("mpnet-mlm", PF_HEAD_MASKED_LM, 120, 1);
    test_encoder_fixture("mpnet-cls", PF_HEAD_SEQUENCE_CLASSIFICATION, 3, 0);
    test_encoder_fixture("t5-encoder", PF_HEAD_NONE, 0, 0);
    test_encoder_fixture("t5-encoder-gated", PF_HEAD_NONE, 0, 0);
    test_encoder_fixture("distilbert-mlm", PF_HEAD_MASKED_LM, 120, 1);
    test_encoder_fixture("distilbert-cls", PF_HEAD_SEQUENCE_CLASSIFICATION, 3, 0);
    test_encoder_fixture("distilbert-qa", PF_HEAD_QUESTION_ANSWERING, 2, 1);
    test_encoder_fixture("deberta-v3", PF_HEAD_NONE, 0, 0);
    test_encoder_fixture("deberta", PF_HEAD_NONE, 0, 0);
    test_encoder_fixture("deberta-cls", PF_HEAD_SEQUENCE_CLASSIFICATION, 3, 0);
    test_encoder_fixture("deberta-v2-pos-proj", PF_HEAD_NONE, 0, 0);
    test_encoder_fixture("deberta-v3-mlm", PF_HEAD_MASKED_LM, 120, 1);
    test_encoder_fixture("deberta-v3-cls", PF_HEAD_SEQUENCE_CLASSIFICATION, 3, 0);
    test_encoder_fixture("deberta-v3-tok", PF_HEAD_TOKEN_CLASSIFICATION, 5, 1);
    test_encoder_fixture("deberta-v3-qa", PF_HEAD_QUESTION_ANSWERING, 2, 1);
    test_encoder_fixture_of("llama-cls", PF_HEAD_SEQUENCE_CLASSIFICATION, 3, 0, DECODER);
    test_encoder_fixture_of("gpt2-cls", PF_HEAD_SEQUENCE_CLASSIFICATION, 2, 0, DECODER);
    test_encoder_fixture_of("qwen3-bare", PF_HEAD_NONE, 0, 0, DECODER);
    test_encoder_fixture_of("llama-tok", PF_HEAD_TOKEN_CLASSIFICATION, 5, 1, DECODER);
    test_encoder_fixture_of("llama-qa", PF_HEAD_QUESTION_ANSWERING, 2, 1, DECODER);
    test_encoder_fixture_of("gpt2-tok", PF_HEAD_TOKEN_CLASSIFICATION, 5, 1, DECODER);
    test_encoder_fixture_of("gpt2-qa", PF_HEAD_QUESTION_ANSWERING, 2, 1, DECODER);
    test_encoder_fixture_of("bart-cls", PF_HEAD_SEQUENCE_CLASSIFICATION, 3, 0, ENCODER_DECODER);
    test_encoder_fixture_of("bart-qa", PF_HEAD_QUESTION_ANSWERING, 2, 1, ENCODER_DECODER);
    test_encoder_fixture_of("led-qa", PF_HEAD_QUESTION_ANSWERING, 2, 1, ENCODER_DECODER); /* BART's head over LED's towers */
    /* BART's heads over BigBirdPegasus's towers: sources of 41, 30 and 28 tokens block-sparse under
       the classifier's blocks of 3, every source fully under the QA fixture's original_full */
    test_encoder_fixture_of("bigbird-pegasus-cls", PF_HEAD_SEQUENCE_CLASSIFICATION, 3, 0, ENCODER_DECODER);
    test_encoder_fixture_of("bigbird-pegasus-qa", PF_HEAD_QUESTION_ANSWERING, 2, 1, ENCODER_DECODER);
    test_encoder_fixture_of("bigbird-pegasus", PF_HEAD_NONE, 0, 0, ENCODER_DECODER); /* the bare model: its encoder's output */
    test_encoder_fixture_of("t5-cls", PF_HEAD_SEQUENCE_CLASSIFICATION, 3, 0, ENCODER_DECODER);
    test_encoder_fixture_of("t5-qa", PF_HEAD_QUESTION_ANSWERING, 2, 1, ENCODER_DECODER);
    test_encoder_fixture("dpr-question", PF_HEAD_NONE, 0, 0);
    test_encoder_fixture("dpr-context", PF_HEAD_NONE, 0, 0);
    test_encoder_fixture("retribert", PF_HEAD_NONE, 0, 0); /* transformers 4.57's: test/make_retribert_fixture.py */
    test_encoder_fixture("bert-nsp", PF_HEAD_NEXT_SENTENCE, 2, 0);
    test_encoder_fixture("bert-pretraining", PF_HEAD_MASKED_LM, 120, 1);
    test_encoder_fixture("ibert", PF_HEAD_NONE, 0, 0);
    test_encoder_fixture("ibert-cls", PF_HEAD_SEQUENCE_CLASSIFICATION, 3, 0);
    test_encoder_fixture("xlm-roberta-xl", PF_HEAD_NONE, 0, 0);
    test_encoder_fixture("xlm-roberta-xl-mlm", PF_HEAD_MASKED_LM, 120, 1);
    test_encoder_fixture("xlm-roberta-xl-cls", PF_HEAD_SEQUENCE_CLASSIFICATION, 3, 0);
    test_encoder_fixture("ernie", PF_HEAD_NONE, 0, 0);
    test_encoder_fixture("ernie-cls", PF_HEAD_SEQUENCE_CLASSIFICATION, 3, 0);
    test_encoder_fixture("layoutlm", PF_HEAD_NONE, 0, 0);
    test_encoder_fixture("layoutlm-mlm", PF_HEAD_MASKED_LM, 120, 1);
    test_encoder_fixture("layoutlm-cls", PF_HEAD_SEQUENCE_CLASSIFICATION, 3, 0);
    test_encoder_fixture("layoutlm-tok", PF_HEAD_TOKEN_CLASSIFICATION, 5, 1);
    test_encoder_fixture("layoutlm-qa", PF_HEAD_QUESTION_ANSWERING, 2, 1);
    test_layout_refusals();
    test_encoder_fixture("visual-bert", PF_HEAD_NONE, 0, 0);
    test_encoder_fixture("visual-bert-pretraining", PF_HEAD_MASKED_LM, 120, 1);
    test_encoder_fixture("visual-bert-vqa", PF_HEAD_SEQUENCE_CLASSIFICATION, 3, 0);
    test_encoder_fixture("visual-bert-nlvr", PF_HEAD_SEQUENCE_CLASSIFICATION, 2, 0);
    test_encoder_fixture("visual-bert-mc", PF_HEAD_MULTIPLE_CHOICE, 1, 0);
    test_region_refusals();
    test_encoder_fixture("lxmert", PF_HEAD_NONE, 0, 0);
    test_encoder_fixture("lxmert-vqa", PF_HEAD_SEQUENCE_CLASSIFICATION, 5, 0);
    test_region_box_refusals();
    test_region_boxes_cli();
    test_visual_question_cli();
    test_encoder_fixture("tapas", PF_HEAD_NONE, 0, 0);
    test_encoder_fixture("tapas-absolute", PF_HEAD_NONE, 0, 0);
    test_encoder_fixture("tapas-mlm", PF_HEAD_MASKED_LM, 120, 1);
    test_encoder_fixture("tapas-cls", PF_HEAD_SEQUENCE_CLASSIFICATION, 3, 0);
    test_encoder_fixture("tapas-qa", PF_HEAD_TABLE_QUESTION_ANSWERING, 1, 1);
    test_encoder_fixture("tapas-qa-empty", PF_HEAD_TABLE_QUESTION_ANSWERING, 1, 1);
    test_tapas_inputs();
    test_encoder_fixture("luke", PF_HEAD_NONE, 0, 0);
    test_encoder_fixture("luke-plain", PF_HEAD_NONE, 0, 0);
    test_encoder_fixture("luke-entity", PF_HEAD_SEQUENCE_CLASSIFICATION, 3, 0);
    test_encoder_fixture("luke-pair", PF_HEAD_SEQUENCE_CLASSIFICATION, 3, 0);
    test_encoder_fixture("luke-seq", PF_HEAD_SEQUENCE_CLASSIFICATION, 3, 0);
    test_encoder_fixture("luke-token", PF_HEAD_TOKEN_CLASSIFICATION, 3, 1);
    test_encoder_fixture("luke-qa", PF_HEAD_QUESTION_ANSWERING, 2, 1);
    test_encoder_fixture("luke-mc", PF_HEAD_MULTIPLE_CHOICE, 1, 0);
    test_entity_refusals();
    test_entity_classify_cli();
    test_layout_cli();
    test_encoder_fixture("longformer", PF_HEAD_NONE, 0, 0);
    test_encoder_fixture("longformer-mlm", PF_HEAD_MASKED_LM, 120, 1);
    test_encoder_fixture("longformer-cls", PF_HEAD_SEQUENCE_CLASSIFICATION, 3, 0);
    test_encoder_fixture("longformer-tok", PF_HEAD_TOKEN_CLASSIFICATION, 5, 1);
    test_encoder_fixture("longformer-qa", PF_HEAD_QUESTION_ANSWERING, 2, 1);
    test_encoder_fixture("longformer-mc", PF_HEAD_MULTIPLE_CHOICE, 1, 0);
    test_longformer_global_tokens();
    test_longformer_classify_cli();
    test_encoder_fixture("squeezebert", PF_HEAD_NONE, 0, 0);
    test_encoder_fixture("squeezebert-mlm", PF_HEAD_MASKED_LM, 120, 1);
    test_encoder_fixture("squeezebert-cls", PF_HEAD_SEQUENCE_CLASSIFICATION, 3, 0);
    test_encoder_fixture("squeezebert-tok", PF_HEAD_TOKEN_CLASSIFICATION, 5, 1);
    test_encoder_fixture("squeezebert-qa", PF_HEAD_QUESTION_ANSWERING, 2, 1);
    test_encoder_fixture("squeezebert-mc", PF_HEAD_MULTIPLE_CHOICE, 1, 0);
    test_encoder_fixture("mobilebert", PF_HEAD_NONE, 0, 0);
    test_encoder_fixture("mobilebert-mlm", PF_HEAD_MASKED_LM, 120, 1);
    test_encoder_fixture("mobilebert-cls", PF_HEAD_SEQUENCE_CLASSIFICATION, 3, 0);
    test_encoder_fixture("mobilebert-tok", PF_HEAD_TOKEN_CLASSIFICATION, 5, 1);
    test_encoder_fixture("mobilebert-qa", PF_HEAD_QUESTION_ANSWERING, 2, 1);
    test_encoder_fixture("mobilebert-mc", PF_HEAD_MULTIPLE_CHOICE, 1, 0);
    test_encoder_fixture("mobilebert-nsp", PF_HEAD_NEXT_SENTENCE, 2, 0);
    test_encoder_fixture("mobilebert-ffn1", PF_HEAD_NONE, 0, 0);
    test_encoder_fixture("mobilebert-pretraining", PF_HEAD_MASKED_LM, 120, 1);
    test_encoder_fixture("convbert", PF_HEAD_NONE, 0, 0);
    test_encoder_fixture("convbert-mlm", PF_HEAD_MASKED_LM, 120, 1);
    test_encoder_fixture("convbert-cls", PF_HEAD_SEQUENCE_CLASSIFICATION, 3, 0);
    test_encoder_fixture("convbert-tok", PF_HEAD_TOKEN_CLASSIFICATION, 5, 1);
    test_encoder_fixture("convbert-qa", PF_HEAD_QUESTION_ANSWERING, 2, 1);
    test_encoder_fixture("convbert-mc", PF_HEAD_MULTIPLE_CHOICE, 1, 0);
    test_encoder_fixture("convbert-groups", PF_HEAD_NONE, 0, 0);
    test_encoder_fixture("funnel", PF_HEAD_NONE, 0, 0);
    test_encoder_fixture("funnel-cls", PF_HEAD_SEQUENCE_CLASSIFICATION, 3, 0);
    test_encoder_fixture("funnel-mc", PF_HEAD_MULTIPLE_CHOICE, 1, 0);
    test_encoder_fixture("funnel-full", PF_HEAD_NONE, 0, 0);
    test_encoder_fixture("funnel-mlm", PF_HEAD_MASKED_LM, 120, 1);
    test_encoder_fixture("funnel-tok", PF_HEAD_TOKEN_CLASSIFICATION, 5, 1);
    test_encoder_fixture("funnel-qa", PF_HEAD_QUESTION_ANSWERING, 2, 1);
    test_encoder_fixture("funnel-pretraining", PF_HEAD_REPLACED_TOKEN_DETECTION, 1, 1);
    test_funnel_refusals();
    /* BigBird: rows of 50 and 39 tokens block-sparse, the 14-token row fully (big-bird-tok: every
       row fully, original_full) */
    test_encoder_fixture("big-bird", PF_HEAD_NONE, 0, 0);
    test_encoder_fixture("big-bird-mlm", PF_HEAD_MASKED_LM, 120, 1);
    test_encoder_fixture("big-bird-cls", PF_HEAD_SEQUENCE_CLASSIFICATION, 3, 0);
    test_encoder_fixture("big-bird-tok", PF_HEAD_TOKEN_CLASSIFICATION, 5, 1);
    test_encoder_fixture("big-bird-mc", PF_HEAD_MULTIPLE_CHOICE, 1, 0);
    test_encoder_fixture("big-bird-pretraining", PF_HEAD_MASKED_LM, 120, 1);
    test_encoder_fixture("big-bird-rescale", PF_HEAD_NONE, 0, 0);
    test_encoder_fixture("xlnet", PF_HEAD_NONE, 0, 0);
    test_encoder_fixture("xlnet-cls", PF_HEAD_SEQUENCE_CLASSIFICATION, 3, 0);
    test_encoder_fixture("xlnet-tok", PF_HEAD_TOKEN_CLASSIFICATION, 5, 1);
    test_encoder_fixture("xlnet-qa", PF_HEAD_QUESTION_ANSWERING, 2, 1);
    test_encoder_fixture("xlnet-mc", PF_HEAD_MULTIPLE_CHOICE, 1, 0);
    test_xlnet_generation("xlnet-lm");
    test_xlnet_generation("xlnet-lm-allmem");
    test_xlnet_generation("xlnet-lm-nomem");
    test_encoder_fixture_of("transfo-xl", PF_HEAD_NONE, 0, 0, DECODER);
    test_encoder_fixture_of("transfo-xl-pre", PF_HEAD_NONE, 0, 0, DECODER);
    test_encoder_fixture_of("transfo-xl-cls", PF_HEAD_SEQUENCE_CLASSIFICATION, 3, 0, DECODER);
    test_transfo_xl_lm("transfo-xl-lm");
    test_transfo_xl_lm("transfo-xl-lm-div");
    test_transfo_xl_lm("transfo-xl-lm-proj");
    test_encoder_fixture("xlm", PF_HEAD_NONE, 0, 0);
    test_encoder_fixture("xlm-lang", PF_HEAD_NONE, 0, 0);
    test_encoder_fixture("xlm-mlm", PF_HEAD_MASKED_LM, 120, 1);
    test_encoder_fixture("xlm-cls", PF_HEAD_SEQUENCE_CLASSIFICATION, 3, 0);
    test_encoder_fixture("xlm-tok", PF_HEAD_TOKEN_CLASSIFICATION, 5, 1);
    test_encoder_fixture("xlm-qa", PF_HEAD_QUESTION_ANSWERING, 2, 1);
    test_encoder_fixture("flaubert", PF_HEAD_NONE, 0, 0);
    test_encoder_fixture("flaubert-mlm", PF_HEAD_MASKED_LM, 120, 1);
    test_encoder_fixture("flaubert-cls", PF_HEAD_SEQUENCE_CLASSIFICATION, 3, 0);
    test_encoder_fixture("flaubert-prenorm", PF_HEAD_NONE, 0, 0);
    test_encoder_fixture("flaubert-prenorm-mlm", PF_HEAD_MASKED_LM, 120, 1);
    test_xlm_languages();
    test_decoder_embeddings();
    test_embed_poolings();
    test_embed_cli();
    test_encode_refusals();
}
