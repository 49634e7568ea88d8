/* Issue 31's second round of abuse: counts that the library read past before checking them, work
   sized by untrusted preprocessor configs, misleading messages, and pixels read past the caller's
   buffer. Each case fails without its fix: a plain assertion on the result and the message (the
   arrays end with an id outside the vocabulary right after the counted part, so a read past the
   limit shows as another message), or an AddressSanitizer report under make test-asan (arrays
   sized exactly). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

#define CHECK_FAILS(m, got, want, needle)                                                                \
    CHECK_MSG((got) == (want) && strstr(pf_error_message(m), (needle)) != NULL,                         \
              "%s: got %s (\"%s\"), want %s mentioning \"%s\"", what, pf_result_string(got), pf_error_message(m), \
              pf_result_string(want), (needle))

static pf_model *load_fixture(const char *name, int max_batch, int max_sequence_length) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s", test_fixtures, name);
    pf_model *m = NULL;
    pf_result r = pf_load(dir, NULL, &m);
    CHECK_MSG(r == PF_OK, "%s: %s", name, pf_error_message(m));
    if (r) {
        pf_free(m);
        return NULL;
    }
    pf_parallel_options po = pf_parallel_options_init();
    if (max_batch) po.max_batch = max_batch;
    if (max_sequence_length) po.max_sequence_length = max_sequence_length;
    r = pf_parallelize(m, 1, &po);
    CHECK_MSG(r == PF_OK, "%s: pf_parallelize: %s", name, pf_error_message(m));
    if (r) {
        pf_free(m);
        return NULL;
    }
    return m;
}

/* ---- issue 31.9: counts checked before the arrays they count are read ---- */

static void generate_counts(void) {
    const char *what = "gpt2-tiny generate counts";
    pf_model *m = load_fixture("gpt2-tiny", 1, 8);
    if (!m) return;
    int32_t out[4], *five = (int32_t *)malloc(5 * sizeof(int32_t));
    int n = 0;
    for (int i = 0; i < 5; i++) five[i] = i + 1;
    pf_generate_options o = pf_generate_options_init();
    o.max_new_tokens = 2;
    /* the prompt: INT_MAX ids on a 5-id buffer, and one id over the cache with -1 past it */
    pf_result r = pf_generate(m, five, INT_MAX, &o, out, 4, &n);
    CHECK_FAILS(m, r, PF_ERROR_INVALID_ARGUMENT, "leaves no room in the KV cache");
    int32_t nine[9] = {1, 2, 3, 4, 5, 6, 7, 8, -1};
    r = pf_generate(m, nine, 9, &o, out, 4, &n);
    CHECK_FAILS(m, r, PF_ERROR_INVALID_ARGUMENT, "leaves no room in the KV cache");
    const int32_t *prompts[1] = {nine};
    int nine_length = 9;
    pf_generation g;
    r = pf_generate_batch(m, prompts, &nine_length, 1, &o, &g);
    CHECK_FAILS(m, r, PF_ERROR_INVALID_ARGUMENT, "leaves no room in the KV cache");
    /* the option lists, each with a count of INT_MAX on a short array */
    pf_token_sequence one = {five, 2};
    pf_generate_options bad = o;
    bad.eos_token_ids = five, bad.num_eos_token_ids = INT_MAX;
    CHECK_FAILS(m, pf_generate(m, five, 3, &bad, out, 4, &n), PF_ERROR_INVALID_ARGUMENT, "num_eos_token_ids");
    bad = o, bad.suppress_tokens = five, bad.num_suppress_tokens = INT_MAX;
    CHECK_FAILS(m, pf_generate(m, five, 3, &bad, out, 4, &n), PF_ERROR_INVALID_ARGUMENT, "num_suppress_tokens");
    bad = o, bad.begin_suppress_tokens = five, bad.num_begin_suppress_tokens = INT_MAX;
    CHECK_FAILS(m, pf_generate(m, five, 3, &bad, out, 4, &n), PF_ERROR_INVALID_ARGUMENT, "num_begin_suppress_tokens");
    /* both suppress lists at INT_MAX: their sum overflowed int */
    bad.suppress_tokens = five, bad.num_suppress_tokens = INT_MAX;
    CHECK_FAILS(m, pf_generate(m, five, 3, &bad, out, 4, &n), PF_ERROR_INVALID_ARGUMENT, "suppress_tokens");
    bad = o, bad.bad_words = &one, bad.num_bad_words = INT_MAX;
    CHECK_FAILS(m, pf_generate(m, five, 3, &bad, out, 4, &n), PF_ERROR_INVALID_ARGUMENT, "num_bad_words");
    bad = o, bad.stop_sequences = &one, bad.num_stop_sequences = INT_MAX;
    CHECK_FAILS(m, pf_generate(m, five, 3, &bad, out, 4, &n), PF_ERROR_INVALID_ARGUMENT, "num_stop_sequences");
    pf_token_sequence endless = {five, INT_MAX}, past = {nine, 9};
    bad = o, bad.bad_words = &endless, bad.num_bad_words = 1;
    CHECK_FAILS(m, pf_generate(m, five, 3, &bad, out, 4, &n), PF_ERROR_INVALID_ARGUMENT, "more than max_sequence_length");
    bad = o, bad.stop_sequences = &past, bad.num_stop_sequences = 1;
    CHECK_FAILS(m, pf_generate(m, five, 3, &bad, out, 4, &n), PF_ERROR_INVALID_ARGUMENT, "more than max_sequence_length");
    /* beam search takes the exclusive path, not the batcher's: the same checks */
    bad = o, bad.num_beams = 2, bad.eos_token_ids = five, bad.num_eos_token_ids = INT_MAX;
    CHECK_FAILS(m, pf_generate(m, five, 3, &bad, out, 4, &n), PF_ERROR_INVALID_ARGUMENT, "num_eos_token_ids");
    /* and lists at their limits still work */
    bad = o, bad.bad_words = &one, bad.num_bad_words = 1, bad.eos_token_ids = five, bad.num_eos_token_ids = 5;
    r = pf_generate(m, five, 3, &bad, out, 4, &n);
    CHECK_MSG(r == PF_OK && n == 2, "%s: lists within their limits: %s", what, pf_error_message(m));
    free(five);
    pf_free(m);
}

/* pf_forward on a masked LM set up batch x seq_len rows before it compared them with max_batch:
   INT_MAX rows took gigabytes first. */
static void forward_counts(void) {
    const char *what = "bert-mlm pf_forward counts";
    pf_model *m = load_fixture("bert-mlm", 2, 0);
    if (!m) return;
    int32_t ids[4] = {1, 2, 3, 4};
    float logits[16];
    CHECK_FAILS(m, pf_forward(m, ids, INT_MAX, 1, logits), PF_ERROR_INVALID_ARGUMENT, "max_batch 2");
    CHECK_FAILS(m, pf_forward(m, ids, 1, INT_MAX, logits), PF_ERROR_INVALID_ARGUMENT, "max_sequence_length");
    pf_free(m);
}

static float *zeros(size_t n) { return (float *)calloc(n ? n : 1, sizeof(float)); }

/* Speech encoder-decoders: the decoder's inputs and prompt one over their limit, batches above
   max_batch on one-row arrays. */
static void speech_counts(void) {
    const char *what = "speech2text-s2s counts";
    pf_model *m = load_fixture("speech2text-s2s", 1, 40);
    if (m) {
        pf_model_info info = pf_get_info(m);
        int frames = 60, limit = (info.max_positions < 40 ? info.max_positions : 40) - 1; /* a prompt leaves room */
        float *features = zeros((size_t)frames * info.num_mel_bins);
        const float *rows[1] = {features};
        int32_t *ids = (int32_t *)malloc((size_t)(limit + 2) * sizeof(int32_t));
        for (int i = 0; i < limit; i++) ids[i] = 3;
        ids[limit] = ids[limit + 1] = -1; /* ids past the limit: refused for the length, never read */
        pf_generate_options o = pf_model_generate_options(m);
        o.max_new_tokens = 1;
        o.decoder_prompt = ids;
        o.decoder_prompt_length = limit + 1;
        pf_generation g;
        pf_result r = pf_generate_audio(m, rows, &frames, 1, &o, &g);
        CHECK_FAILS(m, r, PF_ERROR_INVALID_ARGUMENT, "decoder_prompt_length");
        if (!r) pf_generation_free(&g);
        o.decoder_prompt_length = limit;
        r = pf_generate_audio(m, rows, &frames, 1, &o, &g);
        CHECK_MSG(r == PF_OK, "%s: a prompt at the limit: %s", what, pf_error_message(m));
        if (!r) pf_generation_free(&g);
        /* teacher forcing: one decoder token over the cache */
        const int32_t *decoders[2] = {ids, ids};
        int length = 41;
        float *logits = zeros((size_t)(limit + 2) * info.vocab_size);
        r = pf_forward_audio(m, rows, &frames, decoders, &length, 1, logits);
        CHECK_FAILS(m, r, PF_ERROR_INVALID_ARGUMENT, "1 to 40 fit");
        /* two rows on max_batch 1: refused before row 1's length (1000, over the limit) is read */
        const float *two_rows[2] = {features, features};
        int two_frames[2] = {frames, frames}, two_lengths[2] = {3, 1000};
        r = pf_forward_audio(m, two_rows, two_frames, decoders, two_lengths, 2, logits);
        CHECK_FAILS(m, r, PF_ERROR_INVALID_ARGUMENT, "batch 2 exceeds max_batch 1");
        length = 3; /* and on one-row arrays (an over-read under ASan) */
        r = pf_forward_audio(m, rows, &frames, decoders, &length, 4, logits);
        CHECK_FAILS(m, r, PF_ERROR_INVALID_ARGUMENT, "exceeds max_batch");
        /* waveforms: the batch before any row's features */
        int samples_count = 16000;
        float *samples = zeros((size_t)samples_count);
        const float *waves[1] = {samples};
        pf_encoding *e = NULL;
        r = pf_encode_audio(m, waves, &samples_count, 3, &e);
        CHECK_FAILS(m, r, PF_ERROR_INVALID_ARGUMENT, "exceeds max_batch");
        pf_encoding_free(e);
        free(samples), free(logits), free(ids), free(features);
        pf_free(m);
    }
    what = "whisper counts";
    m = load_fixture("whisper", 1, 0);
    if (m) {
        pf_model_info info = pf_get_info(m);
        int frames = info.audio_frames;
        float *features = zeros((size_t)frames * info.num_mel_bins);
        const float *rows[1] = {features};
        int32_t prompt[4] = {0, 0, 0, 0};
        pf_generate_options o = pf_model_generate_options(m);
        memcpy(prompt, o.decoder_prompt, (size_t)(o.decoder_prompt_length < 4 ? o.decoder_prompt_length : 4) * sizeof(int32_t));
        o.decoder_prompt = prompt;
        o.decoder_prompt_length = INT_MAX; /* its last id was read first */
        o.max_new_tokens = 1;
        pf_generation g;
        pf_result r = pf_generate_audio(m, rows, &frames, 1, &o, &g);
        CHECK_FAILS(m, r, PF_ERROR_INVALID_ARGUMENT, "decoder_prompt_length");
        if (!r) pf_generation_free(&g);
        int samples_count = 1600;
        float *samples = zeros((size_t)samples_count);
        const float *waves[1] = {samples};
        pf_encoding *e = NULL;
        r = pf_encode_audio(m, waves, &samples_count, 3, &e);
        CHECK_FAILS(m, r, PF_ERROR_INVALID_ARGUMENT, "exceeds max_batch");
        pf_encoding_free(e);
        free(samples), free(features);
        pf_free(m);
    }
}

/* ---- issue 31.1: pixels read past the caller's buffer ---- */

static char tmp_dir[256];

static void write_in_tmp(const char *name, const void *data, size_t size) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tmp_dir, name);
    CHECK_MSG(test_write_file(path, data, size) == 0, "cannot write %s", path);
}

/* FIXTURE/NAME as a symbolic link in the temporary directory (an absolute target). */
static void link_fixture_file(const char *fixture, const char *name) {
    char target[2048], cwd[512], path[512];
    if (test_fixtures[0] == '/' || !getcwd(cwd, sizeof cwd)) cwd[0] = 0;
    snprintf(target, sizeof target, "%s%s%s/%s/%s", cwd, cwd[0] ? "/" : "", test_fixtures, fixture, name);
    snprintf(path, sizeof path, "%s/%s", tmp_dir, name);
    unlink(path);
    CHECK_MSG(symlink(target, path) == 0, "cannot link %s", target);
}

static void clean_tmp(void) {
    const char *names[] = {"config.json", "model.safetensors", "preprocessor_config.json", "image.ppm", "speech.wav",
                           "tokenizer.json", "tokenizer_config.json", "generation_config.json", "vocab.json",
                           "sentencepiece.bpe.model"};
    char path[512];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", tmp_dir, names[i]);
        unlink(path);
    }
}

/* pf_encode_images and pf_image_text_logits take the pixels' count and refuse one that is not
   exactly the images' (they read num_channels x image_size^2 floats an image). */
static void image_counts(void) {
    const char *what = "vit-cls pixel count";
    pf_model *m = load_fixture("vit-cls", 2, 0);
    if (m) {
        size_t image = 3 * 32 * 32;
        float *pixels = zeros(2 * image);
        pf_encoding *e = NULL;
        pf_result r = pf_encode_images(m, pixels, 3 * 16 * 16, 1, &e); /* a 16 x 16 processor output */
        CHECK_FAILS(m, r, PF_ERROR_INVALID_ARGUMENT, "pixels hold 768 values; 1 image of 3 x 32 x 32");
        CHECK(!e);
        r = pf_encode_images(m, pixels, image, 2, &e);
        CHECK_FAILS(m, r, PF_ERROR_INVALID_ARGUMENT, "take 6144");
        r = pf_encode_images(m, pixels, 2 * image, 1, &e); /* larger is as wrong: another layout */
        CHECK_FAILS(m, r, PF_ERROR_INVALID_ARGUMENT, "pixels hold 6144 values");
        r = pf_encode_images(m, pixels, 2 * image, 2, &e);
        CHECK_MSG(r == PF_OK && e && e->batch == 2, "%s: the right count: %s", what, pf_error_message(m));
        pf_encoding_free(e);
        free(pixels);
        pf_free(m);
    }
    what = "clip pixel count";
    m = load_fixture("clip", 2, 0);
    if (m) {
        size_t image = 3 * 32 * 32;
        float *pixels = zeros(image), logits[2];
        int32_t ids[2] = {5, 2};
        const int32_t *rows[1] = {ids};
        int length = 2;
        pf_result r = pf_image_text_logits(m, rows, &length, 1, pixels, image, 2, logits);
        CHECK_FAILS(m, r, PF_ERROR_INVALID_ARGUMENT, "pixels hold 3072 values; 2 images");
        pf_encoding *e = NULL;
        r = pf_encode_images(m, pixels, image - 1, 1, &e);
        CHECK_FAILS(m, r, PF_ERROR_INVALID_ARGUMENT, "pixels hold 3071 values");
        free(pixels);
        pf_free(m);
    }
}

/* build/classify_image sized its pixel buffer by the processor's output and the model read
   image_size^2 pixels from it: a preprocessor_config.json of another size (16 x 16, or no resize
   of a 45 x 37 image, against vit-cls's 32) over-read. It refuses the mismatch, naming both. */
static void classify_image_mismatch(void) {
    static const struct { const char *config, *makes; } cases[] = {
        {"{\"image_processor_type\": \"ViTImageProcessor\", \"size\": {\"height\": 16, \"width\": 16}}", "makes 16 x 16"},
        {"{\"image_processor_type\": \"ViTImageProcessor\", \"do_resize\": false}", "makes 45 x 37"},
        /* 12 GB of pixels: the old example's malloc failed and it printed "out of memory: " and an
           uninitialised message, or resized and was killed */
        {"{\"image_processor_type\": \"ViTImageProcessor\", \"size\": 32768}", "makes 32768 x 32768"},
        {"{\"image_processor_type\": \"ViTImageProcessor\", \"size\": 32}", NULL},
    };
    char binary[1024], command[4096], out[2048];
    test_example_path("classify_image", binary, sizeof binary);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        clean_tmp();
        link_fixture_file("vit-cls", "config.json");
        link_fixture_file("vit-cls", "model.safetensors");
        link_fixture_file("vit-cls", "image.ppm");
        write_in_tmp("preprocessor_config.json", cases[k].config, strlen(cases[k].config));
        snprintf(command, sizeof command, "%s %s %s/image.ppm --device cpu 2>&1", binary, tmp_dir, tmp_dir);
        int status = test_run_output(command, out, sizeof out);
        if (cases[k].makes)
            CHECK_MSG(status == 1 && strstr(out, cases[k].makes) && strstr(out, "takes 32 x 32"),
                      "classify_image with %s: %d, \"%s\"", cases[k].config, status, out);
        else /* the same size in other words: classified */
            CHECK_MSG(status == 0 && out[0] >= '0' && out[0] <= '9', "classify_image with %s: %d, \"%s\"", cases[k].config,
                      status, out);
    }
    clean_tmp();
}

/* ---- issue 31.11: work sized by the model's limits, checked before it is done ---- */

/* Speech2Text's waveforms: a row whose filter banks would not fit the cache is refused before its
   features are computed (the message says so; it used to come from the encoder, after them). */
static void speech2text_rows_before_features(void) {
    const char *what = "speech2text-s2s waveform longer than the cache";
    pf_model *m = load_fixture("speech2text-s2s", 1, 8);
    if (!m) return;
    int count = 16000;
    float *samples = zeros((size_t)count);
    const float *waves[1] = {samples};
    pf_encoding *e = NULL;
    pf_result r = pf_encode_audio(m, waves, &count, 1, &e);
    CHECK_FAILS(m, r, PF_ERROR_INVALID_ARGUMENT, "16000 samples make 98 feature frames");
    pf_encoding_free(e);
    free(samples);
    pf_free(m);
}

/* Whisper's extractor padded a second of audio to chunk_length seconds before anything compared
   its frames with the model's: 3600 s made 360,000 frames (20 s of work, 115 MB). build/transcribe
   now loads the model first and refuses the mismatch before computing the features. */
static void transcribe_chunk_mismatch(void) {
    static const char *const files[] = {"config.json", "model.safetensors", "generation_config.json", "tokenizer.json",
                                        "tokenizer_config.json", "speech.wav"};
    static const char config[] = "{\"feature_extractor_type\": \"WhisperFeatureExtractor\", \"feature_size\": 80, "
                                 "\"chunk_length\": 3600}";
    char binary[1024], command[4096], out[2048];
    clean_tmp();
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) link_fixture_file("whisper", files[i]);
    write_in_tmp("preprocessor_config.json", config, strlen(config));
    test_example_path("transcribe", binary, sizeof binary);
    snprintf(command, sizeof command, "%s %s %s/speech.wav --device cpu 2>&1", binary, tmp_dir, tmp_dir);
    int status = test_run_output(command, out, sizeof out);
    CHECK_MSG(status == 1 && strstr(out, "takes 80 mel bins x 100 frames") && strstr(out, "gives 80 x 360000"),
              "transcribe with 3600 s chunks: %d, \"%s\"", status, out);
    /* the library's own path compares before it computes, as it did */
    const char *what = "pf_encode_audio with 3600 s chunks";
    pf_model *m = NULL;
    pf_result r = pf_load(tmp_dir, NULL, &m);
    CHECK_MSG(r == PF_OK, "%s: %s", what, pf_error_message(m));
    if (r == PF_OK) {
        int count = 16000;
        float *samples = zeros((size_t)count);
        const float *waves[1] = {samples};
        pf_encoding *e = NULL;
        r = pf_encode_audio(m, waves, &count, 1, &e);
        CHECK_FAILS(m, r, PF_ERROR_FORMAT, "80 x 360000");
        pf_encoding_free(e);
        free(samples);
    }
    pf_free(m);
    clean_tmp();
}

/* An image processor that resizes to 32768 x 32768 and crops the centre 32 x 32 (what vit-cls
   takes, so classify_image's size check passes) resized the whole image first: 3 GB and tens of
   seconds. Only the crop's window is resized now (each pixel as before: the fixtures' crops
   check that against transformers). In a child under alarm(), so that the old way fails. */
static void image_resize_window(void) {
    static const char config[] = "{\"image_processor_type\": \"ViTImageProcessor\", \"size\": {\"height\": 32768, "
                                 "\"width\": 32768}, \"do_center_crop\": true, \"crop_size\": 32}";
    clean_tmp();
    write_in_tmp("preprocessor_config.json", config, strlen(config));
    fflush(NULL);
    pid_t child = fork();
    if (child == 0) {
        alarm(30);
        pf_image_processor *p = NULL;
        static uint8_t rgb[45 * 37 * 3];
        static float out[3 * 32 * 32];
        for (size_t i = 0; i < sizeof rgb; i++) rgb[i] = (uint8_t)(i * 7);
        int ok = pf_image_processor_load(tmp_dir, PF_IMAGE_BACKEND_TORCHVISION, &p, NULL, 0) == PF_OK &&
                 pf_image_preprocess(p, rgb, 45, 37, out, sizeof out / sizeof out[0], NULL, 0) == PF_OK;
        for (size_t i = 0; ok && i < sizeof out / sizeof out[0]; i++) ok = out[i] >= -1.0f && out[i] <= 1.0f;
        pf_image_processor_free(p);
        _exit(ok ? 0 : 1);
    }
    int status = -1;
    CHECK_MSG(child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "resize to 32768 x 32768, crop 32 x 32: status %d (killed by signal %d)", status,
              WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    clean_tmp();
}

/* A feature extractor's FFT and mel tables are sized by the file: n_fft 65536 and 4096 mel bins
   allocated and filled a gigabyte at load. Refused before. */
static void audio_tables_bounded(void) {
    static const char config[] = "{\"feature_extractor_type\": \"WhisperFeatureExtractor\", \"feature_size\": 4096, "
                                 "\"n_fft\": 65536, \"hop_length\": 160}";
    clean_tmp();
    write_in_tmp("preprocessor_config.json", config, strlen(config));
    pf_audio_processor *p = NULL;
    char error[512] = "";
    pf_result r = pf_audio_processor_load(tmp_dir, &p, error, sizeof error);
    CHECK_MSG(r == PF_ERROR_UNSUPPORTED && !p && strstr(error, "n_fft 65536 and 4096 mel bins"),
              "n_fft 65536 x 4096 mel bins: %s (%s)", pf_result_string(r), error);
    pf_audio_processor_free(p);
    clean_tmp();
}

/* ---- issue 31.10: messages that say what is wrong ---- */

/* FIXTURE's config.json with `from` replaced by `to` in a temporary directory beside its weights;
   pf_load's result and message. */
static void expect_config_refused(const char *fixture, const char *from, const char *to, const char *needle) {
    char path[1100], what[256];
    size_t size = 0;
    snprintf(what, sizeof what, "%s with %s", fixture, to);
    snprintf(path, sizeof path, "%s/%s/config.json", test_fixtures, fixture);
    char *text = test_read_file(path, &size), *at = text ? strstr(text, from) : NULL;
    CHECK_MSG(at != NULL, "%s: %s lacks %s", what, path, from);
    if (!at) {
        free(text);
        return;
    }
    clean_tmp();
    link_fixture_file(fixture, "model.safetensors");
    char *changed = (char *)malloc(size + strlen(to) + 1);
    size_t before = (size_t)(at - text);
    memcpy(changed, text, before);
    strcpy(changed + before, to);
    strcat(changed, at + strlen(from));
    write_in_tmp("config.json", changed, strlen(changed));
    pf_model *m = NULL;
    pf_result r = pf_load(tmp_dir, NULL, &m);
    CHECK_FAILS(m, r, PF_ERROR_FORMAT, needle);
    pf_free(m);
    free(changed), free(text);
    clean_tmp();
}

static void config_messages(void) {
    /* a rotary base of 0 or below was "rotary dims 8 do not fit heads of 8" */
    expect_config_refused("llama", "\"rope_theta\": 10000.0", "\"rope_theta\": 0", "rope_theta is 0");
    expect_config_refused("gpt_neox", "\"rope_theta\": 10000", "\"rope_theta\": -5", "rope_theta is -5");
    /* ViT's patch_size 0 was a position embedding of the wrong shape */
    expect_config_refused("vit-cls", "\"patch_size\": 8", "\"patch_size\": 0", "\"patch_size\" 0 is not a positive");
}

/* A GGUF head count that does not divide the width was "rotates part of a head of 0.5". */
static void gguf_head_count_message(void) {
    const char *what = "llama-f32.gguf with 96 heads of a 48-wide model";
    char path[1100];
    size_t size = 0;
    snprintf(path, sizeof path, "%s/gguf/llama-f32.gguf", test_fixtures);
    unsigned char *data = (unsigned char *)test_read_file(path, &size);
    const char key[] = "llama.attention.head_count";
    size_t at = 0, n = sizeof key - 1;
    while (data && at + n + 8 <= size && !(memcmp(data + at, key, n) == 0 && data[at + n] == 4)) at++; /* uint32 follows */
    CHECK_MSG(data && at + n + 8 <= size, "%s: no %s", what, key);
    if (data && at + n + 8 <= size) {
        data[at + n + 4] = 96, data[at + n + 5] = data[at + n + 6] = data[at + n + 7] = 0;
        clean_tmp();
        char gguf[512];
        snprintf(gguf, sizeof gguf, "%s/model.gguf", tmp_dir);
        CHECK(test_write_file(gguf, data, size) == 0);
        pf_model *m = NULL;
        pf_result r = pf_load(gguf, NULL, &m);
        CHECK_FAILS(m, r, PF_ERROR_FORMAT, "head_count 96 does not divide llama.embedding_length 48");
        pf_free(m);
        unlink(gguf);
    }
    free(data);
}

/* Silent, constant or exactly periodic audio has a filter-bank bin with no variance, which
   Speech2Text's normalisation turns into NaN (as transformers does); the model then said "features
   must be finite" of finite samples. The message says why, and where. */
static void audio_nan_messages(void) {
    const char *what = "speech2text-s2s on silence";
    pf_model *m = load_fixture("speech2text-s2s", 1, 0);
    if (m) {
        int count = 4000;
        float *samples = zeros((size_t)count);
        const float *waves[1] = {samples};
        pf_encoding *e = NULL;
        pf_result r = pf_encode_audio(m, waves, &count, 1, &e);
        CHECK_FAILS(m, r, PF_ERROR_INVALID_ARGUMENT, "is the same in all 23 frames");
        pf_encoding_free(e);
        pf_model_info info = pf_get_info(m);
        int frames = 30;
        float *features = zeros((size_t)frames * info.num_mel_bins);
        const float *rows[1] = {features};
        features[5 * info.num_mel_bins + 2] = NAN;
        pf_generation g;
        r = pf_generate_audio(m, rows, &frames, 1, NULL, &g);
        CHECK_FAILS(m, r, PF_ERROR_INVALID_ARGUMENT, "feature frame 5, bin 2 is nan");
        if (!r) pf_generation_free(&g);
        free(features), free(samples);
        pf_free(m);
    }
    what = "whisper with a NaN feature";
    m = load_fixture("whisper", 1, 0);
    if (m) {
        pf_model_info info = pf_get_info(m);
        int frames = info.audio_frames;
        float *features = zeros((size_t)frames * info.num_mel_bins);
        const float *rows[1] = {features};
        features[3 * frames + 7] = INFINITY;
        pf_generation g;
        pf_result r = pf_generate_audio(m, rows, &frames, 1, NULL, &g);
        CHECK_FAILS(m, r, PF_ERROR_INVALID_ARGUMENT, "mel bin 3, frame 7 is inf");
        if (!r) pf_generation_free(&g);
        free(features);
        pf_free(m);
    }
}

/* Chat templates: Python raises ZeroDivisionError for 0 ** -1 (rendered "inf"), and dates that
   do not exist (2024-02-30) were accepted. */
static void chat_messages(void) {
    static const struct { const char *template_text, *date; pf_result want; const char *text; } cases[] = {
        {"{{ 0 ** -1 }}", NULL, PF_ERROR_INVALID_ARGUMENT, "0.0 cannot be raised to a negative power"},
        {"{{ 0.0 ** -2.5 }}", NULL, PF_ERROR_INVALID_ARGUMENT, "0.0 cannot be raised to a negative power"},
        {"{{ (-8.0) ** 0.5 }}", NULL, PF_ERROR_UNSUPPORTED, "complex"},
        {"{{ 2.0 ** 2000 }}", NULL, PF_ERROR_INVALID_ARGUMENT, "too large for a float"},
        {"{{ 2 ** -1 }} {{ 0 ** 0 }} {{ 0.0 ** 2 }} {{ (-2) ** -1 }} {{ 4 ** 0.5 }}", NULL, PF_OK, "0.5 1 0.0 -0.5 2.0"},
        {"{{ strftime_now('%d %B %Y') }}", "2024-02-30", PF_ERROR_INVALID_ARGUMENT, "2024-02-30"},
        {"{{ strftime_now('%d %B %Y') }}", "2023-02-29", PF_ERROR_INVALID_ARGUMENT, "2023-02-29"},
        {"{{ strftime_now('%d %B %Y') }}", "2024-04-31", PF_ERROR_INVALID_ARGUMENT, "2024-04-31"},
        {"{{ strftime_now('%d %B %Y') }}", "1900-02-29", PF_ERROR_INVALID_ARGUMENT, "1900-02-29"},
        {"{{ strftime_now('%d %B %Y') }}", "2024-02-29", PF_OK, "29 February 2024"},
        {"{{ strftime_now('%d %B %Y') }}", "2000-02-29 10:00", PF_OK, "29 February 2000"},
    };
    pf_chat_message message = {"user", "hi"};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        pf_chat_options o = pf_chat_options_init();
        o.chat_template = cases[k].template_text;
        o.date = cases[k].date;
        char *text = NULL, error[512] = "";
        pf_result r = pf_apply_chat_template(NULL, &message, 1, &o, &text, error, sizeof error);
        if (cases[k].want == PF_OK)
            CHECK_MSG(r == PF_OK && text && !strcmp(text, cases[k].text), "%s (date %s): %s \"%s\" (%s), want \"%s\"",
                      cases[k].template_text, cases[k].date ? cases[k].date : "-", pf_result_string(r), text ? text : "",
                      error, cases[k].text);
        else
            CHECK_MSG(r == cases[k].want && !text && strstr(error, cases[k].text), "%s (date %s): %s (%s), want %s with "
                      "\"%s\"", cases[k].template_text, cases[k].date ? cases[k].date : "-", pf_result_string(r), error,
                      pf_result_string(cases[k].want), cases[k].text);
        pf_string_free(text);
    }
}

void test_input_checks(void) {
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/pf_checks_XXXXXX");
    if (!mkdtemp(tmp_dir)) {
        CHECK_MSG(0, "cannot create a temporary directory");
        return;
    }
    image_counts();
    classify_image_mismatch();
    generate_counts();
    forward_counts();
    speech_counts();
    speech2text_rows_before_features();
    transcribe_chunk_mismatch();
    image_resize_window();
    audio_tables_bounded();
    config_messages();
    gguf_head_count_message();
    audio_nan_messages();
    chat_messages();
    clean_tmp();
    rmdir(tmp_dir);
}
