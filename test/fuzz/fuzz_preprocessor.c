/* preprocessor_config.json (beside vit's config.json, whose model_type names the image class when
   the file names none) through both loaders: the image processor on both backends, its output
   sizes, and a small image through it; the audio feature extractor, its feature sizes, and a
   tenth of a second through it. Only work whose size the output bounds is run (as a caller
   checks the output against the model first), with few frames of audio: what an input costs
   beyond that (tables sized by the file, a resize far larger than the crop) is a finding of the
   small -rss_limit_mb and -timeout this target runs with. */
#include "fuzz.h"

#define OUT_FLOATS (1 << 16)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static uint8_t rgb[45 * 37 * 3];
    static float samples[1600], out[OUT_FLOATS];
    static const int sides[][2] = {{1, 1}, {7, 5}, {45, 37}};
    for (size_t i = 0; i < sizeof rgb; i++) rgb[i] = (uint8_t)(i * 37 + (i >> 5));
    for (size_t i = 0; i < 1600; i++) samples[i] = (float)((int)(i * 7919 % 2001) - 1000) / 1000.0f;
    fuzz_link_fixture("vit", "config.json");
    fuzz_write("preprocessor_config.json", data, size);
    for (int backend = PF_IMAGE_BACKEND_TORCHVISION; backend <= PF_IMAGE_BACKEND_PIL; backend++) {
        pf_image_processor *p = NULL;
        if (pf_image_processor_load(fuzz_dir(), (pf_image_backend)backend, &p, NULL, 0) != PF_OK) break;
        for (size_t k = 0; k < sizeof sides / sizeof sides[0]; k++) {
            int w = 0, h = 0;
            if (pf_image_output_size(p, sides[k][0], sides[k][1], &w, &h, NULL, 0) == PF_OK &&
                (size_t)w * (size_t)h * 3 <= OUT_FLOATS)
                pf_image_preprocess(p, rgb, sides[k][0], sides[k][1], out, OUT_FLOATS, NULL, 0);
        }
        pf_image_processor_free(p);
    }
    pf_audio_processor *a = NULL;
    if (pf_audio_processor_load(fuzz_dir(), &a, NULL, 0) == PF_OK) {
        pf_audio_processor_info info = pf_audio_processor_get_info(a);
        size_t rows = 0, columns = 0;
        if (pf_audio_features_size(a, 1600, &rows, &columns, NULL, 0) == PF_OK && rows * columns <= OUT_FLOATS) {
            size_t frames = info.kind == PF_AUDIO_LOG_MEL ? columns : info.kind == PF_AUDIO_FBANK ? rows : 1;
            if (frames <= 8) pf_audio_features(a, samples, 1600, out, OUT_FLOATS, NULL, 0);
        }
        pf_audio_features_size(a, (size_t)1 << 31, &rows, &columns, NULL, 0);
        pf_audio_processor_free(a);
    }
    return 0;
}
