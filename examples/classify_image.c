/* classify_image: an image classifier (ViT, DeiT) on an image file, on N ranks.

   build/classify_image MODEL_DIR IMAGE.ppm [--gpus N] [--device cpu|cuda|auto] [--top K] [--logits]

   The image is a binary PPM (P6, 8-bit RGB: `convert photo.jpg photo.ppm` makes one); it goes
   through the model's image processor (preprocessor_config.json: resize, crop, rescale, normalise
   as transformers' processor does), then the model. Prints the K best classes, "index logit" per
   line, or with --logits every logit on one line. Errors go to stderr (exit 1; 2 for the command
   line). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../parallelformers.h"
#include "media.h"

/* "classify_image: RESULT: MESSAGE", without the colon when there is no message (a model that
   could not even be allocated has none). */
static void report(pf_result r, const char *message) {
    fprintf(stderr, "classify_image: %s%s%s\n", pf_result_string(r), message && message[0] ? ": " : "", message ? message : "");
}

/* The usage to out; 0 for --help (stdout), 2 for a mistake (stderr). */
static int usage_to(FILE *out) {
    fprintf(out, "usage: classify_image MODEL_DIR IMAGE.ppm [--gpus N] [--device cpu|cuda|auto] [--top K] [--logits]\n"
                 "--gpus N: ranks (GPUs, or CPU threads without CUDA); default 0: every GPU, or every core\n");
    return out == stdout ? 0 : 2;
}

static int usage(void) { return usage_to(stderr); }

int main(int argc, char **argv) {
    const char *dir = NULL, *image = NULL;
    int gpus = 0 /* every device */, top = 5, all_logits = 0;
    pf_device device = PF_DEVICE_AUTO;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) return usage_to(stdout);
        if (!strcmp(a, "--gpus") && v) gpus = atoi(argv[++i]);
        else if (!strcmp(a, "--top") && v) top = atoi(argv[++i]);
        else if (!strcmp(a, "--logits")) all_logits = 1;
        else if (!strcmp(a, "--device") && v) {
            device = !strcmp(v, "cpu") ? PF_DEVICE_CPU : !strcmp(v, "cuda") ? PF_DEVICE_CUDA : PF_DEVICE_AUTO;
            if (strcmp(v, "cpu") && strcmp(v, "cuda") && strcmp(v, "auto")) return usage();
            i++;
        } else if (a[0] != '-' && !dir) dir = a;
        else if (a[0] != '-' && !image) image = a;
        else return usage();
    }
    if (!dir || !image || gpus < 0 || top < 1) return usage();
    int width = 0, height = 0;
    size_t file_size = 0;
    unsigned char *file = media_read_file(image, MEDIA_MAX_FILE_BYTES, &file_size);
    const unsigned char *rgb = file ? media_ppm_pixels(file, file_size, &width, &height) : NULL;
    if (!rgb) {
        fprintf(stderr, "classify_image: %s is not a binary 8-bit PPM (P6, maxval 255) of at most 1 GiB\n", image);
        free(file);
        return 1;
    }
    char error[512] = "";
    pf_image_processor *processor = NULL;
    pf_model *model = NULL;
    float *pixels = NULL;
    pf_encoding *e = NULL;
    int status = 1, out_width = 0, out_height = 0;
    pf_parallel_options po = pf_parallel_options_init();
    po.device = device;
    pf_result r = pf_image_processor_load(dir, PF_IMAGE_BACKEND_TORCHVISION, &processor, error, sizeof error);
    if (!r) r = pf_image_output_size(processor, width, height, &out_width, &out_height, error, sizeof error);
    if (r) {
        report(r, error);
        goto done;
    }
    if ((r = pf_load(dir, NULL, &model)) || (r = pf_parallelize(model, gpus, &po))) {
        report(r, pf_error_message(model));
        goto done;
    }
    /* The processor's output must be the model's input: a preprocessor_config.json whose size,
       crop_size or do_resize gives another size than config.json's image_size is refused here. */
    pf_model_info info = pf_get_info(model);
    if (info.image_size < 1 || info.num_channels != 3 || out_width != info.image_size || out_height != info.image_size) {
        fprintf(stderr, "classify_image: %s: the image processor (preprocessor_config.json) makes %d x %d RGB images; the "
                "model (config.json) takes %d x %d with %d channels\n", dir, out_width, out_height, info.image_size,
                info.image_size, info.num_channels);
        goto done;
    }
    size_t count = (size_t)3 * out_width * out_height;
    if (!(pixels = (float *)malloc(count * sizeof(float)))) {
        r = PF_ERROR_OUT_OF_MEMORY;
        snprintf(error, sizeof error, "%zu floats for the pixels", count);
    } else {
        r = pf_image_preprocess(processor, rgb, width, height, pixels, count, error, sizeof error);
    }
    if (r) {
        report(r, error);
        goto done;
    }
    if ((r = pf_encode_images(model, pixels, count, 1, &e))) {
        report(r, pf_error_message(model));
        goto done;
    }
    if (!e->logits) {
        fprintf(stderr, "classify_image: %s has no classification head\n", dir);
        goto done;
    }
    if (all_logits) {
        for (int k = 0; k < e->num_logits; k++) printf("%s%.6f", k ? " " : "", e->logits[k]);
        printf("\n");
    } else {
        int *order = (int *)malloc((size_t)e->num_logits * sizeof(int));
        if (!order) {
            report(PF_ERROR_OUT_OF_MEMORY, "the classes' order");
            goto done;
        }
        for (int k = 0; k < e->num_logits; k++) order[k] = k;
        for (int i = 1; i < e->num_logits; i++) /* insertion sort, best first; classes are few */
            for (int j = i; j > 0 && e->logits[order[j]] > e->logits[order[j - 1]]; j--) {
                int t = order[j];
                order[j] = order[j - 1];
                order[j - 1] = t;
            }
        for (int k = 0; k < top && k < e->num_logits; k++) printf("%d %.6f\n", order[k], e->logits[order[k]]);
        free(order);
    }
    status = 0;
done:
    pf_encoding_free(e);
    pf_free(model);
    pf_image_processor_free(processor);
    free(pixels);
    free(file);
    return status;
}
