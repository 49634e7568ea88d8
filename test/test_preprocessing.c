/* Preprocessing: pf_image_preprocess and pf_audio_features must give what transformers'
   processors give (test/make_preprocessing_fixtures.py: both image backends, Wav2Vec2, Whisper and
   Speech2Text extractors) within 1e-4, and bad input must get a clear error. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"

#define TOLERANCE 1e-4f
#define MAX_INPUTS 16

typedef struct named_input {
    char name[64];
    int width, height;  /* images */
    size_t samples;     /* audio */
} named_input;

static const named_input *find_input(const named_input *inputs, int count, const char *name) {
    for (int i = 0; i < count; i++)
        if (!strcmp(inputs[i].name, name)) return &inputs[i];
    return NULL;
}

/* The largest |a - b|, NaN where either is NaN (so that a NaN never passes). */
static float max_diff(const float *a, const float *b, size_t n) {
    float worst = 0;
    for (size_t i = 0; i < n; i++) {
        float d = fabsf(a[i] - b[i]);
        if (d != d) return d;
        if (d > worst) worst = d;
    }
    return worst;
}

static void check_image_case(const char *proc, const named_input *image, const char *backend_name, int out_w, int out_h,
                             int *backends_differ) {
    char dir[1024], path[2048], error[512];
    snprintf(dir, sizeof dir, "%s/preprocessing/%s", test_fixtures, proc);
    pf_image_backend backend = !strcmp(backend_name, "pil") ? PF_IMAGE_BACKEND_PIL : PF_IMAGE_BACKEND_TORCHVISION;
    pf_image_processor *p = NULL;
    pf_result r = pf_image_processor_load(dir, backend, &p, error, sizeof error);
    CHECK_MSG(r == PF_OK, "%s: %s", proc, error);
    if (r) return;
    snprintf(path, sizeof path, "%s/preprocessing/images/%s.rgb", test_fixtures, image->name);
    size_t size, count;
    uint8_t *rgb = (uint8_t *)test_read_file(path, &size);
    snprintf(path, sizeof path, "%s/%s.%s.f32", dir, image->name, backend_name);
    float *expected = test_read_floats(path, &count);
    CHECK_MSG(rgb && size == (size_t)image->width * image->height * 3, "%s", image->name);
    CHECK_MSG(expected && count == (size_t)3 * out_w * out_h, "%s", path);
    int w = 0, h = 0;
    CHECK(pf_image_output_size(p, image->width, image->height, &w, &h, error, sizeof error) == PF_OK);
    CHECK_MSG(w == out_w && h == out_h, "%s %s %s: %d x %d, transformers %d x %d", proc, image->name, backend_name, w, h,
              out_w, out_h);
    if (rgb && expected && size == (size_t)image->width * image->height * 3 && w == out_w && h == out_h &&
        count == (size_t)3 * w * h) {
        float *out = (float *)malloc(count * sizeof(float));
        r = pf_image_preprocess(p, rgb, image->width, image->height, out, count, error, sizeof error);
        CHECK_MSG(r == PF_OK, "%s", error);
        float d = max_diff(out, expected, count);
        CHECK_MSG(r == PF_OK && d <= TOLERANCE, "%s %s %s: max |diff| %g", proc, image->name, backend_name, d);
        /* the other backend's transformers output, where it differs, must not match ours */
        snprintf(path, sizeof path, "%s/%s.%s.f32", dir, image->name, backend == PF_IMAGE_BACKEND_PIL ? "torchvision" : "pil");
        size_t other_count;
        float *other = test_read_floats(path, &other_count);
        if (other && other_count == count && max_diff(other, expected, count) > TOLERANCE) {
            (*backends_differ)++;
            CHECK_MSG(max_diff(out, other, count) > TOLERANCE, "%s %s: %s matches the other backend", proc, image->name,
                      backend_name);
        }
        free(other);
        free(out);
    }
    free(rgb);
    free(expected);
    pf_image_processor_free(p);
}

static void check_audio_case(const char *proc, const named_input *audio, size_t rows, size_t columns) {
    char dir[1024], path[2048], error[512];
    snprintf(dir, sizeof dir, "%s/preprocessing/%s", test_fixtures, proc);
    pf_audio_processor *p = NULL;
    pf_result r = pf_audio_processor_load(dir, &p, error, sizeof error);
    CHECK_MSG(r == PF_OK, "%s: %s", proc, error);
    if (r) return;
    CHECK(pf_audio_processor_get_info(p).sampling_rate == 16000);
    size_t n, count;
    snprintf(path, sizeof path, "%s/preprocessing/audio/%s.f32", test_fixtures, audio->name);
    float *samples = test_read_floats(path, &n);
    snprintf(path, sizeof path, "%s/%s.f32", dir, audio->name);
    float *expected = test_read_floats(path, &count);
    size_t got_rows = 0, got_columns = 0;
    CHECK_MSG(samples && n == audio->samples && expected && count == rows * columns, "%s %s", proc, audio->name);
    r = pf_audio_features_size(p, n, &got_rows, &got_columns, error, sizeof error);
    CHECK_MSG(r == PF_OK && got_rows == rows && got_columns == columns, "%s %s: %zu x %zu, transformers %zu x %zu (%s)", proc,
              audio->name, got_rows, got_columns, rows, columns, error);
    if (samples && expected && count == rows * columns && got_rows == rows && got_columns == columns) {
        float *out = (float *)malloc(count * sizeof(float));
        r = pf_audio_features(p, samples, n, out, count, error, sizeof error);
        float d = max_diff(out, expected, count);
        CHECK_MSG(r == PF_OK && d <= TOLERANCE, "%s %s: max |diff| %g (%s)", proc, audio->name, d, error);
        free(out);
    }
    free(samples);
    free(expected);
    pf_audio_processor_free(p);
}

/* Every case of preprocessing_cases.txt; the counts of cases run, so that an empty list cannot pass. */
static void check_fixtures(void) {
    char path[1024], line[256];
    snprintf(path, sizeof path, "%s/preprocessing/preprocessing_cases.txt", test_fixtures);
    FILE *f = fopen(path, "r");
    CHECK_MSG(f != NULL, "%s", path);
    if (!f) return;
    named_input images[MAX_INPUTS], audio[MAX_INPUTS];
    int num_images = 0, num_audio = 0, image_cases = 0, audio_cases = 0, backends_differ = 0, ill_conditioned = 0;
    char default_class[64] = "";
    while (fgets(line, sizeof line, f)) {
        char a[64], b[64], c[64];
        int w, h;
        size_t rows, columns, samples;
        if (sscanf(line, "image %63s %d %d", a, &w, &h) == 3 && num_images < MAX_INPUTS) {
            snprintf(images[num_images].name, sizeof images[0].name, "%s", a);
            images[num_images].width = w;
            images[num_images++].height = h;
        } else if (sscanf(line, "image_case %63s %63s %63s %d %d", a, b, c, &w, &h) == 5) {
            const named_input *image = find_input(images, num_images, b);
            CHECK_MSG(image != NULL, "%s", line);
            if (image) check_image_case(a, image, c, w, h, &backends_differ);
            image_cases++;
        } else if (sscanf(line, "audio %63s %zu", a, &samples) == 2 && num_audio < MAX_INPUTS) {
            snprintf(audio[num_audio].name, sizeof audio[0].name, "%s", a);
            audio[num_audio++].samples = samples;
        } else if (sscanf(line, "audio_case %63s %63s %zu %zu", a, b, &rows, &columns) == 4) {
            const named_input *input = find_input(audio, num_audio, b);
            CHECK_MSG(input != NULL, "%s", line);
            if (input) check_audio_case(a, input, rows, columns);
            audio_cases++;
        } else if (sscanf(line, "audio_ill_conditioned %63s %63s", a, b) == 2) {
            /* utterance CMVN of a steady signal, where transformers' float32 result is rounding
               noise (make_preprocessing_fixtures.py); its filter banks are checked without CMVN */
            CHECK_MSG(!strcmp(a, "speech2text"), "%s", line);
            ill_conditioned++;
        } else if (sscanf(line, "backend_default %63s", a) == 1) {
            snprintf(default_class, sizeof default_class, "%s", a);
        } else {
            CHECK_MSG(0, "preprocessing_cases.txt: %s", line);
        }
    }
    fclose(f);
    CHECK_MSG(image_cases >= 50 && audio_cases >= 25 && ill_conditioned <= 2, "%d image and %d audio cases (%d ill-conditioned)",
              image_cases, audio_cases, ill_conditioned);
    /* AutoImageProcessor's default is the torchvision backend (whose class has no suffix) */
    CHECK_MSG(!strcmp(default_class, "ViTImageProcessor"), "default class %s", default_class);
    CHECK_MSG(backends_differ > 0, "no case tells the two backends apart");
}

/* A directory with one preprocessor_config.json (and config.json when given). */
static int write_config_dir(char *dir, const char *config, const char *model_config) {
    char path[1024];
    snprintf(path, sizeof path, "%s/preprocessor_config.json", dir);
    unlink(path);
    if (config && test_write_file(path, config, strlen(config))) return -1;
    snprintf(path, sizeof path, "%s/config.json", dir);
    unlink(path);
    if (model_config && test_write_file(path, model_config, strlen(model_config))) return -1;
    return 0;
}

static void remove_config_dir(const char *dir) {
    char path[1024];
    snprintf(path, sizeof path, "%s/preprocessor_config.json", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/config.json", dir);
    unlink(path);
    rmdir(dir);
}

static void check_bad_configs(void) {
    char dir[] = "/tmp/pf_pre_XXXXXX", error[512];
    if (!mkdtemp(dir)) {
        CHECK_MSG(0, "mkdtemp");
        return;
    }
    static const struct {
        const char *config, *model_config;
        pf_result expected;
        const char *message; /* a part of the error */
    } image_cases[] = {
        {NULL, NULL, PF_ERROR_IO, "preprocessor_config.json"},
        {"{\"image_processor_type\": \"ViTImageProcessor\",", NULL, PF_ERROR_FORMAT, "line"},
        {"[1, 2]", NULL, PF_ERROR_FORMAT, "not a JSON object"},
        {"{\"image_processor_type\": \"ConvNextImageProcessor\"}", NULL, PF_ERROR_UNSUPPORTED, "ConvNextImageProcessor"},
        {"{}", NULL, PF_ERROR_UNSUPPORTED, "(unnamed)"},
        {"{\"image_processor_type\": \"ViTImageProcessor\", \"resample\": 1}", NULL, PF_ERROR_UNSUPPORTED, "\"resample\": 1"},
        {"{\"image_processor_type\": \"ViTImageProcessor\", \"crop_pct\": 0.9}", NULL, PF_ERROR_UNSUPPORTED, "crop_pct"},
        {"{\"image_processor_type\": \"ViTImageProcessor\", \"do_pad\": true}", NULL, PF_ERROR_UNSUPPORTED, "do_pad"},
        {"{\"image_processor_type\": \"ViTImageProcessor\", \"size\": {\"longest_edge\": 9}}", NULL, PF_ERROR_UNSUPPORTED,
         "longest_edge"},
        {"{\"image_processor_type\": \"ViTImageProcessor\", \"size\": {\"height\": 9}}", NULL, PF_ERROR_FORMAT, "height and width"},
        {"{\"image_processor_type\": \"ViTImageProcessor\", \"size\": \"big\"}", NULL, PF_ERROR_FORMAT, "size"},
        {"{\"image_processor_type\": \"ViTImageProcessor\", \"size\": 0}", NULL, PF_ERROR_FORMAT, "size"},
        {"{\"image_processor_type\": \"ViTImageProcessor\", \"size\": 1e9}", NULL, PF_ERROR_FORMAT, "size"},
        {"{\"image_processor_type\": \"ViTImageProcessor\", \"image_std\": [0.5, 0, 0.5]}", NULL, PF_ERROR_FORMAT, "image_std"},
        {"{\"image_processor_type\": \"ViTImageProcessor\", \"image_mean\": [0.5, 0.5]}", NULL, PF_ERROR_FORMAT, "image_mean"},
        {"{\"image_processor_type\": \"ViTImageProcessor\", \"do_resize\": \"yes\"}", NULL, PF_ERROR_FORMAT, "do_resize"},
        {"{\"image_processor_type\": \"CLIPImageProcessor\", \"crop_size\": {\"shortest_edge\": 9}}", NULL, PF_ERROR_UNSUPPORTED,
         "crop_size"},
        {"{\"image_processor_type\": \"ViTImageProcessor\", \"do_center_crop\": true}", NULL, PF_ERROR_FORMAT, "crop_size"},
        {"{\"size\": 8}", "{\"model_type\": \"vit\"}", PF_OK, NULL},
        {"{\"size\": 8}", "{\"model_type\": \"swin\"}", PF_ERROR_UNSUPPORTED, "(unnamed)"},
    };
    for (size_t i = 0; i < sizeof image_cases / sizeof image_cases[0]; i++) {
        CHECK(write_config_dir(dir, image_cases[i].config, image_cases[i].model_config) == 0);
        pf_image_processor *p = (pf_image_processor *)&error; /* must be reset to NULL on failure */
        pf_result r = pf_image_processor_load(dir, PF_IMAGE_BACKEND_TORCHVISION, &p, error, sizeof error);
        CHECK_MSG(r == image_cases[i].expected, "image case %zu: %s (%s)", i, pf_result_string(r), error);
        if (image_cases[i].message)
            CHECK_MSG(p == NULL && strstr(error, image_cases[i].message), "image case %zu: \"%s\"", i, error);
        pf_image_processor_free(r ? NULL : p);
    }
    static const struct {
        const char *config;
        pf_result expected;
        const char *message;
    } audio_cases[] = {
        {"{\"feature_extractor_type\": \"SeamlessM4TFeatureExtractor\"}", PF_ERROR_UNSUPPORTED, "SeamlessM4TFeatureExtractor"},
        {"{\"feature_extractor_type\": \"WhisperFeatureExtractor\", \"dither\": 0.1}", PF_ERROR_UNSUPPORTED, "dither"},
        {"{\"feature_extractor_type\": \"WhisperFeatureExtractor\", \"padding_side\": \"left\"}", PF_ERROR_UNSUPPORTED,
         "padding_side"},
        {"{\"feature_extractor_type\": \"WhisperFeatureExtractor\", \"n_fft\": 0}", PF_ERROR_FORMAT, "n_fft"},
        {"{\"feature_extractor_type\": \"WhisperFeatureExtractor\", \"n_fft\": 401}", PF_ERROR_UNSUPPORTED, "prime factor"},
        {"{\"feature_extractor_type\": \"WhisperFeatureExtractor\", \"hop_length\": 2.5}", PF_ERROR_FORMAT, "hop_length"},
        {"{\"feature_extractor_type\": \"Wav2Vec2FeatureExtractor\", \"feature_size\": 2}", PF_ERROR_UNSUPPORTED, "feature_size"},
        {"{\"feature_extractor_type\": \"Wav2Vec2FeatureExtractor\", \"do_stereo\": true}", PF_ERROR_UNSUPPORTED, "do_stereo"},
        {"{\"feature_extractor_type\": \"Speech2TextFeatureExtractor\", \"num_mel_bins\": -3}", PF_ERROR_FORMAT, "num_mel_bins"},
        {"{\"feature_extractor_type\": \"WhisperFeatureExtractor\"}", PF_OK, NULL},
    };
    for (size_t i = 0; i < sizeof audio_cases / sizeof audio_cases[0]; i++) {
        CHECK(write_config_dir(dir, audio_cases[i].config, NULL) == 0);
        pf_audio_processor *p = (pf_audio_processor *)&error;
        pf_result r = pf_audio_processor_load(dir, &p, error, sizeof error);
        CHECK_MSG(r == audio_cases[i].expected, "audio case %zu: %s (%s)", i, pf_result_string(r), error);
        if (audio_cases[i].message)
            CHECK_MSG(p == NULL && strstr(error, audio_cases[i].message), "audio case %zu: \"%s\"", i, error);
        if (r == PF_OK) { /* Whisper's defaults: 80 bins, 30 s chunks of 3000 frames */
            pf_audio_processor_info info = pf_audio_processor_get_info(p);
            size_t rows = 0, columns = 0;
            CHECK(info.kind == PF_AUDIO_LOG_MEL && info.num_mel_bins == 80 && info.padded_samples == 480000);
            CHECK(pf_audio_features_size(p, 1000, &rows, &columns, error, sizeof error) == PF_OK && rows == 80 &&
                  columns == 3000);
            pf_audio_processor_free(p);
        }
    }
    remove_config_dir(dir);
    CHECK(pf_image_processor_load(NULL, PF_IMAGE_BACKEND_PIL, NULL, error, sizeof error) == PF_ERROR_INVALID_ARGUMENT);
    CHECK(pf_audio_processor_load(NULL, NULL, NULL, 0) == PF_ERROR_INVALID_ARGUMENT);
    pf_image_processor *p = NULL;
    CHECK(pf_image_processor_load(dir, (pf_image_backend)7, &p, error, sizeof error) == PF_ERROR_INVALID_ARGUMENT && !p);
}

/* Sizes, NULLs, short buffers and samples that are not numbers, on loaded processors. */
static void check_bad_calls(void) {
    char dir[1024], error[512];
    snprintf(dir, sizeof dir, "%s/preprocessing/clip", test_fixtures);
    pf_image_processor *image = NULL;
    CHECK_MSG(pf_image_processor_load(dir, PF_IMAGE_BACKEND_PIL, &image, error, sizeof error) == PF_OK, "%s", error);
    if (image) {
        uint8_t rgb[4 * 4 * 3] = {0};
        float out[3 * 16 * 16];
        int w, h;
        CHECK(pf_image_preprocess(image, rgb, 0, 4, out, 768, error, sizeof error) == PF_ERROR_INVALID_ARGUMENT && error[0]);
        CHECK(pf_image_preprocess(image, rgb, 4, -1, out, 768, error, sizeof error) == PF_ERROR_INVALID_ARGUMENT);
        CHECK(pf_image_preprocess(image, rgb, 4, 1 << 20, out, 768, error, sizeof error) == PF_ERROR_INVALID_ARGUMENT);
        CHECK(pf_image_preprocess(image, NULL, 4, 4, out, 768, error, sizeof error) == PF_ERROR_INVALID_ARGUMENT);
        CHECK(pf_image_preprocess(image, rgb, 4, 4, NULL, 768, error, sizeof error) == PF_ERROR_INVALID_ARGUMENT);
        CHECK(pf_image_preprocess(NULL, rgb, 4, 4, out, 768, error, sizeof error) == PF_ERROR_INVALID_ARGUMENT);
        CHECK(pf_image_preprocess(image, rgb, 4, 4, out, 767, error, sizeof error) == PF_ERROR_BUFFER_TOO_SMALL &&
              strstr(error, "768"));
        CHECK(pf_image_preprocess(image, rgb, 4, 4, out, 768, NULL, 0) == PF_OK);
        /* shortest edge 20 of a 1 x 30000 image: the long side would be 600000 pixels */
        CHECK(pf_image_output_size(image, 1, 30000, &w, &h, error, sizeof error) == PF_ERROR_INVALID_ARGUMENT);
        CHECK(pf_image_output_size(image, 5, 7, NULL, &h, error, sizeof error) == PF_ERROR_INVALID_ARGUMENT);
        pf_image_processor_free(image);
    }
    const char *names[] = {"wav2vec2", "whisper-80", "speech2text"};
    for (int i = 0; i < 3; i++) {
        snprintf(dir, sizeof dir, "%s/preprocessing/%s", test_fixtures, names[i]);
        pf_audio_processor *audio = NULL;
        CHECK_MSG(pf_audio_processor_load(dir, &audio, error, sizeof error) == PF_OK, "%s", error);
        if (!audio) continue;
        static float samples[1000], out[80 * 100];
        size_t rows, columns;
        CHECK(pf_audio_features(audio, samples, 0, out, 8000, error, sizeof error) == PF_ERROR_INVALID_ARGUMENT && error[0]);
        CHECK(pf_audio_features(audio, NULL, 1000, out, 8000, error, sizeof error) == PF_ERROR_INVALID_ARGUMENT);
        CHECK(pf_audio_features(audio, samples, 1000, NULL, 8000, error, sizeof error) == PF_ERROR_INVALID_ARGUMENT);
        CHECK(pf_audio_features_size(audio, (size_t)1 << 40, &rows, &columns, error, sizeof error) == PF_ERROR_INVALID_ARGUMENT);
        CHECK(pf_audio_features(audio, samples, 1000, out, 10, error, sizeof error) == PF_ERROR_BUFFER_TOO_SMALL);
        samples[500] = NAN;
        CHECK(pf_audio_features(audio, samples, 1000, out, 8000, error, sizeof error) == PF_ERROR_INVALID_ARGUMENT &&
              strstr(error, "500"));
        samples[500] = 0;
        CHECK(pf_audio_features(audio, samples, 1000, out, 8000, error, sizeof error) == PF_OK);
        /* Speech2Text's fbank needs one whole 400-sample frame */
        CHECK((pf_audio_features_size(audio, 399, &rows, &columns, error, sizeof error) == PF_OK) == (i != 2));
        pf_audio_processor_free(audio);
    }
    CHECK(pf_audio_processor_get_info(NULL).sampling_rate == 0);
}

void test_preprocessing(void) {
    check_fixtures();
    check_bad_configs();
    check_bad_calls();
}
