#define _DEFAULT_SOURCE /* realpath, mkdtemp */
/* Whisper (issue 16; test/make_whisper_fixtures.py): a tiny WhisperForConditionalGeneration, 48
   wide, 6 heads, 2 + 2 layers, 100 mel frames of 80 bins (max_source_positions 50, an encoder
   longer than the decoder's 40 positions). Two rows of features: the encoder's last hidden state
   and the teacher-forced logits within 1e-4 of transformers, greedy, beam and language/task
   generations token-identical, on 1, 2 and 3 ranks and after pf_to_cpu; features computed by
   pf_audio_features from the samples give the same tokens; bad input refused. Timestamps on
   whisper-ts (the timestamp tokens in its vocabulary): check_timestamps. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../parallelformers.h"
#include "test.h"

#define TOLERANCE 1e-4f
#define MELS 80
#define FRAMES 100
#define POSITIONS 50
#define HIDDEN 48

/* Lines of space-separated ids: rows[r] gets line r's ids (at most TEST_MAX_IDS), lengths[r] their
   count; returns the number of lines (at most cap), -1 when the file is missing. */
static int read_id_lines(const char *dir, const char *file, int32_t rows[][TEST_MAX_IDS], int *lengths, int cap) {
    char path[1100];
    size_t size = 0;
    snprintf(path, sizeof path, "%s/%s", dir, file);
    char *text = test_read_file(path, &size), *p = text;
    if (!text) return -1;
    int n = 0;
    while (*p && n < cap) {
        lengths[n] = 0;
        while (*p && *p != '\n') {
            char *end;
            long v = strtol(p, &end, 10);
            if (end == p) break;
            if (lengths[n] < TEST_MAX_IDS) rows[n][lengths[n]++] = (int32_t)v;
            p = end;
            while (*p == ' ') p++;
        }
        if (*p == '\n') p++;
        n++;
    }
    free(text);
    return n;
}

static void check_tokens(const char *what, const pf_generation *g, int row, const int32_t *want, int want_length) {
    int same = row < g->num_sequences && g->lengths[row] == want_length &&
               !memcmp(g->tokens[row], want, (size_t)want_length * sizeof(int32_t));
    char got[512] = "";
    for (int i = 0; row < g->num_sequences && i < g->lengths[row] && strlen(got) < 480; i++)
        snprintf(got + strlen(got), sizeof got - strlen(got), "%d ", (int)g->tokens[row][i]);
    CHECK_MSG(same, "%s: row %d generated %s(%d tokens), transformers %d tokens", what, row, got,
              row < g->num_sequences ? g->lengths[row] : -1, want_length);
}

static void check_floats(const char *what, const char *dir, const char *file, const float *got, size_t count) {
    char path[1100];
    size_t n = 0;
    snprintf(path, sizeof path, "%s/%s", dir, file);
    float *want = test_read_floats(path, &n);
    CHECK_MSG(want && n == count, "%s: %s holds %zu floats, want %zu", what, file, n, count);
    if (want && n == count) {
        float diff = test_max_abs_diff(got, want, n);
        CHECK_MSG(diff <= TOLERANCE, "%s: %s differs from transformers by %g", what, file, diff);
    }
    free(want);
}

/* Every output of the fixture on the model as it is now (parallelized or gathered). */
static void check_outputs(pf_model *m, const char *what, const char *dir, const float *const *rows) {
    int frames[2] = {FRAMES, FRAMES};
    pf_encoding *e = NULL;
    pf_result r = pf_encode_audio_features(m, rows, frames, 2, &e);
    CHECK_MSG(r == PF_OK && e && e->batch == 2 && e->offsets[2] == 2 * POSITIONS && e->hidden_size == HIDDEN, "%s: %s",
              what, pf_error_message(m));
    if (r == PF_OK) check_floats(what, dir, "encoder_hidden.bin", e->last_hidden_state, 2 * POSITIONS * HIDDEN);
    pf_encoding_free(e);

    int32_t ids[1][TEST_MAX_IDS];
    int length = 0, vocab = pf_get_info(m).vocab_size;
    CHECK(read_id_lines(dir, "decoder_ids.txt", ids, &length, 1) == 1 && length > 4);
    const int32_t *decoder[2] = {ids[0], ids[0]};
    int lengths[2] = {length, length};
    float *logits = (float *)malloc((size_t)2 * length * vocab * sizeof(float));
    r = logits ? pf_forward_audio(m, rows, frames, decoder, lengths, 2, logits) : PF_ERROR_OUT_OF_MEMORY;
    CHECK_MSG(r == PF_OK, "%s: pf_forward_audio: %s", what, pf_error_message(m));
    if (r == PF_OK) check_floats(what, dir, "decoder_logits.bin", logits, (size_t)2 * length * vocab);
    free(logits);

    int32_t want[4][TEST_MAX_IDS];
    int want_lengths[4];
    pf_generation g;
    pf_generate_options o = pf_model_generate_options(m);
    o.max_new_tokens = 12;
    r = pf_generate_audio(m, rows, frames, 2, &o, &g);
    CHECK_MSG(r == PF_OK && g.num_sequences == 2, "%s: greedy: %s", what, pf_error_message(m));
    CHECK(read_id_lines(dir, "greedy.txt", want, want_lengths, 4) == 2);
    for (int b = 0; r == PF_OK && b < 2; b++) check_tokens(what, &g, b, want[b], want_lengths[b]);
    pf_generation_free(&g);

    o.max_new_tokens = 8;
    o.num_beams = 3;
    r = pf_generate_audio(m, rows, frames, 2, &o, &g);
    CHECK_MSG(r == PF_OK && g.num_sequences == 2, "%s: beams: %s", what, pf_error_message(m));
    CHECK(read_id_lines(dir, "beam.txt", want, want_lengths, 4) == 2);
    for (int b = 0; r == PF_OK && b < 2; b++) check_tokens(what, &g, b, want[b], want_lengths[b]);
    pf_generation_free(&g);

    /* language="fr", task="translate": the prompt is the caller's, the rest the model's */
    CHECK(read_id_lines(dir, "translate.txt", want, want_lengths, 4) == 3);
    o = pf_model_generate_options(m);
    o.max_new_tokens = 12;
    o.decoder_prompt = want[0];
    o.decoder_prompt_length = want_lengths[0];
    r = pf_generate_audio(m, rows, frames, 2, &o, &g);
    CHECK_MSG(r == PF_OK && g.num_sequences == 2, "%s: translate: %s", what, pf_error_message(m));
    for (int b = 0; r == PF_OK && b < 2; b++) check_tokens(what, &g, b, want[b + 1], want_lengths[b + 1]);
    pf_generation_free(&g);
}

/* A stream callback's view: the tokens of each row in order, and their texts. */
typedef struct whisper_stream {
    int32_t tokens[2][TEST_MAX_IDS];
    int counts[2];
    char text[2][256];
} whisper_stream;

static int on_token(void *user, int row, int32_t token, const char *text, size_t text_len) {
    whisper_stream *s = (whisper_stream *)user;
    if (row < 0 || row > 1 || s->counts[row] >= TEST_MAX_IDS) return 1;
    s->tokens[row][s->counts[row]++] = token;
    if (text && strlen(s->text[row]) + text_len < sizeof s->text[row]) strncat(s->text[row], text, text_len);
    return 0;
}

/* Streaming greedy generation: every new token reaches the callback, with its text. */
static void check_stream(pf_model *m, const char *dir, const float *const *rows) {
    int frames[2] = {FRAMES, FRAMES};
    int32_t want[2][TEST_MAX_IDS];
    int want_lengths[2];
    whisper_stream s;
    memset(&s, 0, sizeof s);
    pf_generation g;
    pf_generate_options o = pf_model_generate_options(m);
    o.max_new_tokens = 12;
    o.stream = on_token;
    o.stream_user = &s;
    pf_result r = pf_generate_audio(m, rows, frames, 2, &o, &g);
    CHECK_MSG(r == PF_OK, "streaming: %s", pf_error_message(m));
    CHECK(read_id_lines(dir, "greedy.txt", want, want_lengths, 2) == 2);
    for (int b = 0; r == PF_OK && b < 2; b++)
        CHECK_MSG(s.counts[b] == want_lengths[b] && !memcmp(s.tokens[b], want[b], (size_t)want_lengths[b] * sizeof(int32_t)) &&
                      strlen(s.text[b]) > 0,
                  "streaming row %d: %d tokens, text \"%s\"", b, s.counts[b], s.text[b]);
    if (r == PF_OK) pf_generation_free(&g);
}

/* The features pf_audio_features computes from the samples drive the same greedy tokens. */
static void check_from_samples(pf_model *m, const char *dir) {
    char path[1100], error[256];
    size_t n = 0;
    snprintf(path, sizeof path, "%s/samples.bin", dir);
    float *samples = test_read_floats(path, &n);
    pf_audio_processor *proc = NULL;
    CHECK_MSG(pf_audio_processor_load(dir, &proc, error, sizeof error) == PF_OK, "%s", error);
    pf_model_info info = pf_get_info(m);
    size_t rows = 0, cols = 0;
    float *features = (float *)malloc(2 * MELS * FRAMES * sizeof(float));
    if (proc && samples && features && n == 24000) {
        CHECK(pf_audio_features_size(proc, 12000, &rows, &cols, error, sizeof error) == PF_OK);
        CHECK_MSG(info.mel_major && rows == (size_t)info.num_mel_bins && cols == (size_t)info.audio_frames,
                  "features %zu x %zu, the model's %d x %d (mel-major %d)", rows, cols, info.num_mel_bins,
                  info.audio_frames, info.mel_major);
        for (int b = 0; b < 2; b++)
            CHECK(pf_audio_features(proc, samples + b * 12000, 12000, features + b * MELS * FRAMES, MELS * FRAMES, error,
                                    sizeof error) == PF_OK);
        const float *feature_rows[2] = {features, features + MELS * FRAMES};
        int frames[2] = {(int)cols, (int)cols};
        int32_t want[2][TEST_MAX_IDS];
        int want_lengths[2];
        pf_generation g;
        pf_generate_options o = pf_model_generate_options(m);
        o.max_new_tokens = 12;
        pf_result r = pf_generate_audio(m, feature_rows, frames, 2, &o, &g);
        CHECK_MSG(r == PF_OK, "from samples: %s", pf_error_message(m));
        CHECK(read_id_lines(dir, "greedy.txt", want, want_lengths, 2) == 2);
        for (int b = 0; r == PF_OK && b < 2; b++) check_tokens("from samples", &g, b, want[b], want_lengths[b]);
        pf_generation_free(&g);
        /* pf_encode_audio on the samples: the model directory's feature extractor, then the encoder */
        const float *waves[2] = {samples, samples + 12000};
        int counts[2] = {12000, 12000};
        pf_encoding *e = NULL;
        r = pf_encode_audio(m, waves, counts, 2, &e);
        CHECK_MSG(r == PF_OK && e && e->offsets[2] == 2 * POSITIONS && pf_encode_audio_frames(m, 12000) == POSITIONS,
                  "pf_encode_audio: %s", pf_error_message(m));
        if (r == PF_OK) check_floats("pf_encode_audio", dir, "encoder_hidden.bin", e->last_hidden_state, 2 * POSITIONS * HIDDEN);
        pf_encoding_free(e);
        int none[2] = {12000, 0};
        CHECK(pf_encode_audio(m, waves, none, 2, &e) == PF_ERROR_INVALID_ARGUMENT && !e);
    }
    free(features);
    free(samples);
    pf_audio_processor_free(proc);
}

static void check_refusals(pf_model *m, const float *const *rows) {
    int frames[3] = {FRAMES, FRAMES, FRAMES}, short_frames[2] = {FRAMES, FRAMES - 1};
    const float *none[2] = {rows[0], NULL}, *three[3] = {rows[0], rows[0], rows[0]};
    pf_generation g;
    pf_encoding *e = NULL;
    float logits[4];
    int32_t ids[2] = {1, 2};
    const int32_t *decoder[2] = {ids, ids};
    int lengths[2] = {2, 2}, one = 2;
    CHECK(pf_generate_audio(m, NULL, frames, 1, NULL, &g) == PF_ERROR_INVALID_ARGUMENT && g.num_sequences == 0);
    CHECK(pf_generate_audio(m, rows, NULL, 1, NULL, &g) == PF_ERROR_INVALID_ARGUMENT);
    CHECK(pf_generate_audio(m, rows, frames, 0, NULL, &g) == PF_ERROR_INVALID_ARGUMENT);
    CHECK(pf_generate_audio(m, rows, frames, 1, NULL, NULL) == PF_ERROR_INVALID_ARGUMENT);
    CHECK(pf_generate_audio(m, none, frames, 2, NULL, &g) == PF_ERROR_INVALID_ARGUMENT);
    CHECK(pf_generate_audio(m, three, frames, 3, NULL, &g) == PF_ERROR_INVALID_ARGUMENT); /* above max_batch */
    CHECK(pf_generate_audio(m, rows, short_frames, 2, NULL, &g) == PF_ERROR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(pf_error_message(m), "row 1: 99 frames") && strstr(pf_error_message(m), "exactly 100"), "%s",
              pf_error_message(m));
    CHECK(pf_generate_audio(NULL, rows, frames, 1, NULL, &g) == PF_ERROR_INVALID_ARGUMENT);
    CHECK(pf_encode_audio_features(m, rows, short_frames, 2, &e) == PF_ERROR_INVALID_ARGUMENT && !e);
    CHECK(pf_encode_audio_features(m, rows, frames, 2, NULL) == PF_ERROR_INVALID_ARGUMENT);
    CHECK(pf_forward_audio(m, rows, frames, decoder, lengths, 2, NULL) == PF_ERROR_INVALID_ARGUMENT);
    CHECK(pf_forward_audio(m, rows, short_frames, decoder, lengths, 2, logits) == PF_ERROR_INVALID_ARGUMENT);
    int too_long[2] = {41, 2}; /* past the decoder's 40 positions, though the cache holds 50 */
    CHECK(pf_forward_audio(m, rows, frames, decoder, too_long, 2, logits) == PF_ERROR_INVALID_ARGUMENT);
    float *nan_row = (float *)malloc(MELS * FRAMES * sizeof(float));
    if (nan_row) {
        memcpy(nan_row, rows[0], MELS * FRAMES * sizeof(float));
        nan_row[123] = NAN;
        const float *nan_rows[1] = {nan_row};
        CHECK(pf_generate_audio(m, nan_rows, frames, 1, NULL, &g) == PF_ERROR_INVALID_ARGUMENT);
        free(nan_row);
    }
    pf_generate_options o = pf_model_generate_options(m);
    int32_t bad_prompt[1] = {100000};
    o.decoder_prompt = bad_prompt;
    o.decoder_prompt_length = 1;
    CHECK(pf_generate_audio(m, rows, frames, 1, &o, &g) == PF_ERROR_INVALID_ARGUMENT);
    o.decoder_prompt_length = 0;
    CHECK(pf_generate_audio(m, rows, frames, 1, &o, &g) == PF_ERROR_INVALID_ARGUMENT);
    o = pf_model_generate_options(m);
    o.max_new_tokens = 37; /* with the 4 prompt tokens, past the decoder's 40 positions */
    CHECK(pf_generate_audio(m, rows, frames, 1, &o, &g) == PF_ERROR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(pf_error_message(m), "max_target_positions"), "%s", pf_error_message(m));
    o.max_new_tokens = 36;
    o.ignore_eos = 1;
    CHECK(pf_generate_audio(m, rows, frames, 1, &o, &g) == PF_OK && g.num_sequences == 1 && g.lengths[0] == 36);
    pf_generation_free(&g);
    o.max_new_tokens = 0; /* max_length counts new tokens (Whisper's generate()), up to the decoder's positions */
    o.max_length = 30;
    CHECK(pf_generate_audio(m, rows, frames, 1, &o, &g) == PF_OK && g.num_sequences == 1 && g.lengths[0] == 30);
    pf_generation_free(&g);
    o.max_length = 40;
    CHECK(pf_generate_audio(m, rows, frames, 1, &o, &g) == PF_OK && g.num_sequences == 1 && g.lengths[0] == 36);
    pf_generation_free(&g);
    /* the calls that take token ids: the encoder takes features */
    char *text = NULL;
    CHECK(pf_generate_text(m, "a", NULL, &text) == PF_ERROR_UNSUPPORTED && !text);
    CHECK(pf_encode(m, decoder, NULL, &one, 1, &e) == PF_ERROR_UNSUPPORTED && !e);
    CHECK(pf_forward_seq2seq(m, decoder, lengths, decoder, lengths, 1, logits) == PF_ERROR_UNSUPPORTED);
    CHECK(pf_forward(m, ids, 1, 2, logits) == PF_ERROR_UNSUPPORTED && strstr(pf_error_message(m), "pf_forward_audio"));
}

/* Audio features into a text model. */
static void check_other_models(const float *const *rows) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/bart-s2s", test_fixtures);
    pf_model *m = NULL;
    int frames[1] = {FRAMES};
    pf_generation g;
    pf_encoding *e = NULL;
    CHECK(pf_load(dir, NULL, &m) == PF_OK);
    CHECK(pf_generate_audio(m, rows, frames, 1, NULL, &g) == PF_ERROR_UNSUPPORTED);
    CHECK(strstr(pf_error_message(m), "not a speech encoder-decoder"));
    CHECK(pf_encode_audio_features(m, rows, frames, 1, &e) == PF_ERROR_UNSUPPORTED && !e);
    CHECK(pf_get_info(m).num_mel_bins == 0 && pf_get_info(m).audio_frames == 0);
    pf_free(m);
}

/* A copy of the fixture in a new temporary directory (links to its files) whose FILE has its first
   `from` replaced by `to` (which must be there, else the case would test nothing); "" on failure. */
static void whisper_variant(char *dir, size_t size, const char *file, const char *from, const char *to) {
    static const char *const files[] = {"config.json", "generation_config.json", "model.safetensors",
                                        "preprocessor_config.json", "tokenizer.json", "tokenizer_config.json"};
    char src[1200], dst[1200];
    snprintf(dir, size, "/tmp/pf_whisper_XXXXXX");
    if (!mkdtemp(dir)) {
        CHECK_MSG(0, "mkdtemp");
        dir[0] = 0;
        return;
    }
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(src, sizeof src, "%s/whisper/%s", test_fixtures, files[i]);
        snprintf(dst, sizeof dst, "%s/%s", dir, files[i]);
        char absolute[4096];
        if (strcmp(files[i], file)) {
            CHECK(realpath(src, absolute) && symlink(absolute, dst) == 0);
            continue;
        }
        size_t n = 0;
        char *text = test_read_file(src, &n), *at = text ? strstr(text, from) : NULL;
        CHECK_MSG(at != NULL, "%s lacks \"%s\"", file, from);
        if (!at) {
            free(text);
            continue;
        }
        size_t head = (size_t)(at - text), from_len = strlen(from), to_len = strlen(to);
        char *out = (char *)malloc(n - from_len + to_len + 1);
        if (out) {
            memcpy(out, text, head);
            memcpy(out + head, to, to_len);
            memcpy(out + head + to_len, at + from_len, n - head - from_len);
            CHECK(test_write_file(dst, out, n - from_len + to_len) == 0);
        }
        free(out);
        free(text);
    }
}

static void remove_variant(const char *dir) {
    static const char *const files[] = {"config.json", "generation_config.json", "model.safetensors",
                                        "preprocessor_config.json", "tokenizer.json", "tokenizer_config.json"};
    char path[1200];
    for (size_t i = 0; dir[0] && i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
    if (dir[0]) rmdir(dir);
}

/* A variant's load: the result wanted, and a message holding needle (NULL: any). */
static pf_model *load_variant(const char *what, const char *dir, pf_result want, const char *needle) {
    pf_model *m = NULL;
    pf_result r = pf_load(dir, NULL, &m);
    CHECK_MSG(r == want && (!needle || strstr(pf_error_message(m), needle)), "%s: %s (%s), want %s with \"%s\"", what,
              pf_result_string(r), pf_error_message(m), pf_result_string(want), needle ? needle : "");
    if (r == PF_OK) return m;
    pf_free(m);
    return NULL;
}

/* generation_config.json's Whisper keys: the prompt they make (as _retrieve_init_tokens builds it),
   language detection against transformers' (detect.txt), and the values refused. */
static void check_generation_configs(const float *const *rows) {
    char dir[64], fixture[1024];
    snprintf(fixture, sizeof fixture, "%s/whisper", test_fixtures);
    int32_t want[3][TEST_MAX_IDS];
    int want_lengths[3], frames[2] = {FRAMES, FRAMES};
    pf_parallel_options po = pf_parallel_options_init();
    po.device = PF_DEVICE_CPU;
    po.max_batch = 2;
    /* forced_decoder_ids [[1, null], [2, transcribe]]: each row's language detected */
    whisper_variant(dir, sizeof dir, "generation_config.json", "      1,\n      302\n", "      1,\n      null\n");
    pf_model *m = load_variant("language detection", dir, PF_OK, NULL);
    CHECK(read_id_lines(fixture, "detect.txt", want, want_lengths, 3) == 3 && want_lengths[0] == 2);
    for (int ranks = 1; m && ranks <= 3; ranks += 2) {
        pf_generation g;
        pf_generate_options o = pf_model_generate_options(m);
        o.max_new_tokens = 12;
        CHECK(o.decoder_prompt && o.decoder_prompt_length == 3); /* the start token, the task, no timestamps */
        pf_result r = pf_parallelize(m, ranks, &po);
        if (!r) r = pf_generate_audio(m, rows, frames, 2, &o, &g);
        CHECK_MSG(r == PF_OK && g.num_sequences == 2, "detection on %d ranks: %s", ranks, pf_error_message(m));
        for (int b = 0; r == PF_OK && b < 2; b++) check_tokens("language detection", &g, b, want[b + 1], want_lengths[b + 1]);
        if (r == PF_OK) pf_generation_free(&g);
        /* the detected languages are the ones transformers picks: the same tokens with them in the prompt */
        for (int b = 0; r == PF_OK && b < 2; b++) {
            int32_t prompt[4] = {o.decoder_prompt[0], want[0][b], o.decoder_prompt[1], o.decoder_prompt[2]};
            pf_generate_options fixed = o;
            fixed.decoder_prompt = prompt;
            fixed.decoder_prompt_length = 4;
            r = pf_generate_audio(m, rows + b, frames, 1, &fixed, &g);
            CHECK(r == PF_OK);
            if (r == PF_OK) check_tokens("the detected language's prompt", &g, 0, want[b + 1], want_lengths[b + 1]);
            if (r == PF_OK) pf_generation_free(&g);
        }
    }
    pf_free(m);
    remove_variant(dir);
    /* no generation_config.json: config.json's generation keys (its suppress lists), the start token alone */
    whisper_variant(dir, sizeof dir, "config.json", "\"use_cache\"", "\"use_cache\"");
    char gone[128];
    snprintf(gone, sizeof gone, "%s/generation_config.json", dir);
    CHECK(unlink(gone) == 0);
    m = load_variant("no generation_config.json", dir, PF_OK, NULL);
    CHECK(read_id_lines(fixture, "no_generation_config.txt", want, want_lengths, 3) == 2);
    if (m) {
        pf_generation g;
        pf_generate_options bare = pf_model_generate_options(m);
        bare.max_new_tokens = 12;
        CHECK(bare.decoder_prompt && bare.decoder_prompt_length == 1 && bare.decoder_prompt[0] == 301 &&
              bare.num_suppress_tokens > 100 && bare.num_begin_suppress_tokens == 2);
        pf_result r = pf_parallelize(m, 2, &po);
        if (!r) r = pf_generate_audio(m, rows, frames, 2, &bare, &g);
        CHECK_MSG(r == PF_OK && g.num_sequences == 2, "no generation_config.json: %s", pf_error_message(m));
        for (int b = 0; r == PF_OK && b < 2; b++) check_tokens("no generation_config.json", &g, b, want[b], want_lengths[b]);
        if (r == PF_OK) pf_generation_free(&g);
    }
    pf_free(m);
    remove_variant(dir);
    /* "language" and "task" win over forced_decoder_ids */
    whisper_variant(dir, sizeof dir, "generation_config.json", "\"is_multilingual\": true,",
                    "\"is_multilingual\": true, \"language\": \"de\", \"task\": \"translate\",");
    m = load_variant("language and task", dir, PF_OK, NULL);
    pf_generate_options o = pf_model_generate_options(m);
    static const int32_t german[4] = {301, 304, 305, 310};
    CHECK_MSG(m && o.decoder_prompt_length == 4 && !memcmp(o.decoder_prompt, german, sizeof german), "prompt of %d tokens",
              o.decoder_prompt_length);
    pf_free(m);
    remove_variant(dir);
    whisper_variant(dir, sizeof dir, "generation_config.json", "\"is_multilingual\": true,",
                    "\"is_multilingual\": true, \"language\": \"<|FR|>\",");
    m = load_variant("a language token", dir, PF_OK, NULL);
    o = pf_model_generate_options(m);
    static const int32_t french[4] = {301, 303, 306, 310}; /* a language alone: transcribe */
    CHECK_MSG(m && o.decoder_prompt_length == 4 && !memcmp(o.decoder_prompt, french, sizeof french), "prompt of %d tokens",
              o.decoder_prompt_length);
    pf_free(m);
    remove_variant(dir);
    static const char *const refused[][4] = { /* from, to, result, message */
        {"\"return_timestamps\": false", "\"return_timestamps\": \"yes\"", "format", "return_timestamps"},
        {"\"is_multilingual\": true,", "\"is_multilingual\": true, \"max_initial_timestamp_index\": 1.5,", "format",
         "max_initial_timestamp_index"},
        {"\"is_multilingual\": true,", "\"is_multilingual\": true, \"language\": \"english\",", "unsupported",
         "not a code of lang_to_id"},
        {"\"is_multilingual\": true,", "\"is_multilingual\": false, \"language\": \"en\",", "format", "English-only"},
        {"\"is_multilingual\": true,", "\"is_multilingual\": true, \"task\": \"summarize\",", "format", "summarize"},
        {"      1,\n      302\n", "      3,\n      302\n", "format", "forced_decoder_ids"},
        {"\"is_multilingual\": true,", "\"is_multilingual\": true, \"no_speech_threshold\": 0.6,", "unsupported",
         "no_speech_threshold"},
    };
    /* return_timestamps true loads (it was refused before timestamps were generated): the option's default */
    whisper_variant(dir, sizeof dir, "generation_config.json", "\"return_timestamps\": false", "\"return_timestamps\": true");
    m = load_variant("return_timestamps true", dir, PF_OK, NULL);
    o = pf_model_generate_options(m);
    CHECK_MSG(m && o.return_timestamps == 1 && o.decoder_prompt_length == 4, "return_timestamps %d", o.return_timestamps);
    /* ... but this vocabulary ends at <|notimestamps|>: no timestamp token to generate */
    if (m && pf_parallelize(m, 1, &po) == PF_OK) {
        pf_generation g;
        CHECK(pf_generate_audio(m, rows, frames, 1, &o, &g) == PF_ERROR_INVALID_ARGUMENT);
        CHECK_MSG(strstr(pf_error_message(m), "timestamp tokens"), "%s", pf_error_message(m));
    }
    pf_free(m);
    remove_variant(dir);
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        whisper_variant(dir, sizeof dir, "generation_config.json", refused[i][0], refused[i][1]);
        pf_free(load_variant(refused[i][1], dir, refused[i][2][0] == 'u' ? PF_ERROR_UNSUPPORTED : PF_ERROR_FORMAT,
                             refused[i][3]));
        remove_variant(dir);
    }
    /* config.json keys that change the shapes: the front end's and the encoder's position table */
    whisper_variant(dir, sizeof dir, "config.json", "\"num_mel_bins\": 80", "\"num_mel_bins\": 40");
    pf_free(load_variant("num_mel_bins 40", dir, PF_ERROR_FORMAT, "encoder.conv1.weight"));
    remove_variant(dir);
    whisper_variant(dir, sizeof dir, "config.json", "\"max_source_positions\": 50", "\"max_source_positions\": 60");
    pf_free(load_variant("max_source_positions 60", dir, PF_ERROR_FORMAT, "encoder.embed_positions.weight"));
    remove_variant(dir);
}

/* Timestamps (whisper-ts: the timestamp tokens in the vocabulary, generation_config.json's
   return_timestamps true): greedy generation token-identical to transformers'
   generate(return_timestamps=True) on 1, 2, 3 ranks and after pf_to_cpu (timestamps.txt; the
   tokens without the log-probability rule, no_rule.txt, differ), the same from a prompt of the
   caller's without <|notimestamps|>, and the combinations refused. */
static void check_timestamps(const float *const *rows) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/whisper-ts", test_fixtures);
    int32_t want[2][TEST_MAX_IDS], no_rule[2][TEST_MAX_IDS];
    int want_lengths[2], no_rule_lengths[2], frames[2] = {FRAMES, FRAMES};
    CHECK(read_id_lines(dir, "timestamps.txt", want, want_lengths, 2) == 2);
    CHECK(read_id_lines(dir, "no_rule.txt", no_rule, no_rule_lengths, 2) == 2);
    CHECK(want_lengths[0] != no_rule_lengths[0] || want_lengths[1] != no_rule_lengths[1] ||
          memcmp(want, no_rule, sizeof want)); /* the rule decides a token */
    pf_model *m = load_variant("whisper-ts", dir, PF_OK, NULL);
    if (!m) return;
    pf_generate_options o = pf_model_generate_options(m);
    CHECK(o.return_timestamps == 1 && o.decoder_prompt_length == 4);
    o.max_new_tokens = 7;
    pf_parallel_options po = pf_parallel_options_init();
    po.device = PF_DEVICE_CPU;
    po.max_batch = 3;
    for (int ranks = 1; ranks <= 4; ranks++) { /* 4: after pf_to_cpu */
        char what[64];
        snprintf(what, sizeof what, ranks < 4 ? "timestamps on %d ranks" : "timestamps after pf_to_cpu", ranks);
        pf_result r = ranks < 4 ? pf_parallelize(m, ranks, &po) : pf_to_cpu(m);
        pf_generation g;
        if (!r) r = pf_generate_audio(m, rows, frames, 2, &o, &g);
        CHECK_MSG(r == PF_OK && g.num_sequences == 2, "%s: %s", what, pf_error_message(m));
        for (int b = 0; r == PF_OK && b < 2; b++) check_tokens(what, &g, b, want[b], want_lengths[b]);
        if (r == PF_OK) pf_generation_free(&g);
    }
    CHECK(pf_parallelize(m, 2, &po) == PF_OK);
    /* the caller's prompt without <|notimestamps|>: the same; with it: refused */
    int32_t prompt[4];
    memcpy(prompt, o.decoder_prompt, sizeof prompt);
    pf_generate_options own = o;
    own.decoder_prompt = prompt;
    own.decoder_prompt_length = 3;
    pf_generation g;
    pf_result r = pf_generate_audio(m, rows, frames, 2, &own, &g);
    CHECK_MSG(r == PF_OK, "timestamps from the caller's prompt: %s", pf_error_message(m));
    for (int b = 0; r == PF_OK && b < 2; b++) check_tokens("the caller's prompt", &g, b, want[b], want_lengths[b]);
    if (r == PF_OK) pf_generation_free(&g);
    own.decoder_prompt_length = 4;
    CHECK(pf_generate_audio(m, rows, frames, 2, &own, &g) == PF_ERROR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(pf_error_message(m), "<|notimestamps|>"), "%s", pf_error_message(m));
    /* without timestamps (<|notimestamps|> stays in the prompt, no rules): other tokens */
    pf_generate_options plain = o;
    plain.return_timestamps = 0;
    r = pf_generate_audio(m, rows, frames, 2, &plain, &g);
    CHECK_MSG(r == PF_OK, "without timestamps: %s", pf_error_message(m));
    CHECK(r != PF_OK || g.lengths[0] != want_lengths[0] || memcmp(g.tokens[0], want[0], sizeof(int32_t) * want_lengths[0]));
    if (r == PF_OK) pf_generation_free(&g);
    pf_generate_options beams = o;
    beams.num_beams = 3;
    CHECK(pf_generate_audio(m, rows, frames, 1, &beams, &g) == PF_ERROR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(pf_error_message(m), "greedy"), "%s", pf_error_message(m));
    pf_generate_options sampling = o;
    sampling.do_sample = 1;
    CHECK(pf_generate_audio(m, rows, frames, 1, &sampling, &g) == PF_ERROR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(pf_error_message(m), "return_timestamps"), "%s", pf_error_message(m));
    pf_free(m);
}

/* build/transcribe end to end with Whisper: speech.wav through the model's WhisperFeatureExtractor,
   the model on 2 ranks and its generation_config.json's prompt, at most 12 new tokens, printed
   without special tokens: what transformers' processor, generate() and batch_decode give
   (speech.txt). */
static void check_transcribe_cli(void) {
    char binary[1024], command[4096], out[4096], path[1100];
    test_example_path("transcribe", binary, sizeof binary);
    snprintf(command, sizeof command, "%s %s/whisper %s/whisper/speech.wav --device cpu --gpus 2 -n 12 2>&1", binary,
             test_fixtures, test_fixtures);
    int status = test_run_output(command, out, sizeof out);
    snprintf(path, sizeof path, "%s/whisper/speech.txt", test_fixtures);
    size_t size = 0;
    char *want = test_read_file(path, &size);
    CHECK_MSG(status == 0 && want && strlen(want) > 4 && !strcmp(out, want), "transcribe printed \"%s\" (want \"%s\")", out,
              want ? want : "?");
    free(want);
    /* --language fr --task translate: generate(language="fr", task="translate") (speech_fr.txt) */
    snprintf(command, sizeof command, "%s %s/whisper %s/whisper/speech.wav --device cpu --gpus 3 -n 12 --language fr "
             "--task translate 2>&1", binary, test_fixtures, test_fixtures);
    status = test_run_output(command, out, sizeof out);
    snprintf(path, sizeof path, "%s/whisper/speech_fr.txt", test_fixtures);
    want = test_read_file(path, &size);
    CHECK_MSG(status == 0 && want && strlen(want) > 4 && !strcmp(out, want), "transcribe --language fr printed \"%s\" (want "
              "\"%s\")", out, want ? want : "?");
    free(want);
    /* whisper-ts (return_timestamps true in its generation_config.json; 32-bit float WAV): the text
       without the timestamps (speech.txt), and with --timestamps as decode(...,
       decode_with_timestamps=True) gives it (speech_timestamps.txt); the main model has no timestamp
       tokens: refused */
    static const char *const stamped[][2] = {{"", "speech.txt"}, {" --timestamps", "speech_timestamps.txt"}};
    for (int k = 0; k < 2; k++) {
        snprintf(command, sizeof command, "%s %s/whisper-ts %s/whisper-ts/speech.wav --device cpu --gpus 2 -n 7%s 2>&1",
                 binary, test_fixtures, test_fixtures, stamped[k][0]);
        status = test_run_output(command, out, sizeof out);
        snprintf(path, sizeof path, "%s/whisper-ts/%s", test_fixtures, stamped[k][1]);
        want = test_read_file(path, &size);
        CHECK_MSG(status == 0 && want && strlen(want) > 4 && !strcmp(out, want), "transcribe whisper-ts%s printed \"%s\" "
                  "(want \"%s\")", stamped[k][0], out, want ? want : "?");
        free(want);
    }
    snprintf(command, sizeof command, "%s %s/whisper %s/whisper/speech.wav --device cpu --timestamps 2>&1", binary,
             test_fixtures, test_fixtures);
    status = test_run_output(command, out, sizeof out);
    CHECK_MSG(status == 1 && strstr(out, "timestamp tokens"), "transcribe --timestamps without timestamp "
              "tokens: %d, \"%s\"", status, out);
    snprintf(command, sizeof command, "%s %s/whisper %s/whisper/speech.wav --device cpu --language xx 2>&1", binary,
             test_fixtures, test_fixtures);
    status = test_run_output(command, out, sizeof out);
    CHECK_MSG(status == 1 && strstr(out, "<|xx|>"), "transcribe --language xx: %d, \"%s\"", status,
              out);
    snprintf(command, sizeof command, "%s %s/whisper %s/whisper/speech.wav --device cpu -n -3 2>&1", binary, test_fixtures,
             test_fixtures);
    status = test_run_output(command, out, sizeof out);
    CHECK_MSG(status == 2 && strstr(out, "usage"), "transcribe -n -3: %d, \"%s\"", status, out);
}

void test_whisper(void) {
    char dir[1024], path[1100];
    snprintf(dir, sizeof dir, "%s/whisper", test_fixtures);
    snprintf(path, sizeof path, "%s/features.bin", dir);
    size_t n = 0;
    float *features = test_read_floats(path, &n);
    CHECK_MSG(features && n == 2 * MELS * FRAMES, "%s: %zu floats", path, n);
    if (!features || n != 2 * MELS * FRAMES) {
        free(features);
        return;
    }
    const float *rows[2] = {features, features + MELS * FRAMES};
    pf_model *m = NULL;
    pf_result r = pf_load(dir, NULL, &m);
    CHECK_MSG(r == PF_OK, "loading whisper: %s", pf_error_message(m));
    pf_model_info info = pf_get_info(m);
    CHECK_MSG(r != PF_OK || (info.is_encoder_decoder && info.num_mel_bins == MELS && info.mel_major == 1 &&
                             info.audio_frames == FRAMES && info.hidden_size == HIDDEN && info.num_encoder_layers == 2),
              "info: encoder-decoder %d, %d mel bins, mel-major %d, %d frames", info.is_encoder_decoder, info.num_mel_bins,
              info.mel_major, info.audio_frames);
    pf_generate_options defaults = pf_model_generate_options(m);
    int32_t prompt[1][TEST_MAX_IDS];
    int prompt_length = 0;
    CHECK(read_id_lines(dir, "prompt.txt", prompt, &prompt_length, 1) == 1);
    CHECK_MSG(defaults.decoder_prompt && defaults.decoder_prompt_length == prompt_length &&
                  !memcmp(defaults.decoder_prompt, prompt[0], (size_t)prompt_length * sizeof(int32_t)),
              "the prompt from generation_config.json: %d tokens, want %d", defaults.decoder_prompt_length, prompt_length);
    CHECK(defaults.num_suppress_tokens > 100 && defaults.num_begin_suppress_tokens == 2);
    for (int ranks = 1; r == PF_OK && ranks <= 4; ranks++) { /* 4: after pf_to_cpu */
        char what[64];
        snprintf(what, sizeof what, ranks < 4 ? "whisper on %d ranks" : "whisper after pf_to_cpu", ranks);
        pf_parallel_options po = pf_parallel_options_init();
        po.device = PF_DEVICE_CPU;
        po.max_batch = 6; /* 2 rows x 3 beams */
        pf_result rr = ranks < 4 ? pf_parallelize(m, ranks, &po) : pf_to_cpu(m);
        CHECK_MSG(rr == PF_OK, "%s: %s", what, pf_error_message(m));
        if (rr) continue;
        check_outputs(m, what, dir, rows);
        if (ranks == 2) check_from_samples(m, dir);
        if (ranks == 3) check_stream(m, dir, rows);
    }
    if (r == PF_OK) {
        pf_parallel_options po = pf_parallel_options_init();
        po.device = PF_DEVICE_CPU;
        po.max_batch = 2;
        CHECK(pf_parallelize(m, 2, &po) == PF_OK);
        check_refusals(m, rows);
        po.max_sequence_length = 40; /* the decoder's length: the encoder's 50 frames do not fit */
        int frames[1] = {FRAMES};
        pf_generation g;
        CHECK(pf_parallelize(m, 1, &po) == PF_OK);
        CHECK(pf_generate_audio(m, rows, frames, 1, NULL, &g) == PF_ERROR_INVALID_ARGUMENT);
        CHECK_MSG(strstr(pf_error_message(m), "max_sequence_length"), "%s", pf_error_message(m));
        po.max_sequence_length = 51;
        CHECK(pf_parallelize(m, 1, &po) == PF_ERROR_INVALID_ARGUMENT);
    }
    pf_free(m);
    check_other_models(rows);
    check_generation_configs(rows);
    check_timestamps(rows);
    check_transcribe_cli();
    free(features);
}
