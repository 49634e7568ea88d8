#include "internal.h"
/* =============================================================================================== */
/* preprocessing: images and audio as the Hugging Face processors compute them                     */
/* =============================================================================================== */

/* Everything here reads preprocessor_config.json and turns pixels or samples into a model's input
   floats, bit for bit where transformers works in integers (the resampling of 8-bit images) and
   within float rounding elsewhere. Loaded processors are read-only: any thread, any time. */

#define PF__MAX_IMAGE_SIDE 32768        /* pixels on a side, in or out: a bound against absurd sizes */
#define PF__MAX_AUDIO_SAMPLES ((size_t)1 << 31)
#define PF__MAX_MEL_TABLE ((size_t)1 << 22) /* FFT bins x mel bins; Whisper's largest: 201 x 128 */

/* The number under key, or *out unchanged when absent or null; -1 (message) when not a number. */
static pf_result pf__pre_number(const pf__json *config, const char *key, double *out, const char *path, char *error,
                                size_t error_size) {
    int got = pf__json_number(pf__json_get(config, key), out);
    if (got < 0) return pf__format(error, error_size, PF_ERROR_FORMAT, "%s: \"%s\" is not a number", path, key);
    return PF_OK;
}

/* A whole number in [low, high] under key; absent or null keeps *out. */
static pf_result pf__pre_int(const pf__json *config, const char *key, int low, int high, int *out, const char *path,
                             char *error, size_t error_size) {
    double v = NAN;
    pf_result r = pf__pre_number(config, key, &v, path, error, error_size);
    if (r || isnan(v)) return r; /* absent or null: unchanged */
    if (v != floor(v) || v < low || v > high)
        return pf__format(error, error_size, PF_ERROR_FORMAT, "%s: \"%s\" is %g, not a whole number in [%d, %d]", path, key,
                          v, low, high);
    *out = (int)v;
    return PF_OK;
}

/* A JSON bool under key; absent or null keeps *out. */
static pf_result pf__pre_bool(const pf__json *config, const char *key, int *out, const char *path, char *error,
                              size_t error_size) {
    const pf__json *v = pf__json_get(config, key);
    if (!v || v->type == PF__JSON_NULL) return PF_OK;
    if (v->type != PF__JSON_BOOL) return pf__format(error, error_size, PF_ERROR_FORMAT, "%s: \"%s\" is not true or false", path, key);
    *out = v->boolean;
    return PF_OK;
}

/* Refuses the first key of config not in `known` (a NULL-ended list), naming it: a key we do not
   read may change the result. */
static pf_result pf__pre_known_keys(const pf__json *config, const char *const *known, const char *what, const char *path,
                                    char *error, size_t error_size) {
    for (const pf__json *c = config->first; c; c = c->next) {
        int found = 0;
        for (const char *const *k = known; *k && !found; k++) found = strcmp(*k, c->key) == 0;
        if (!found)
            return pf__format(error, error_size, PF_ERROR_UNSUPPORTED, "%s: %s key \"%s\" is not implemented", path, what,
                              c->key);
    }
    return PF_OK;
}

/* Reads DIR/preprocessor_config.json, an object; the class named by image_processor_type (else
   feature_extractor_type) into class_name ("" when neither), "Fast" / "Pil" / "FeatureExtractor"
   spelled as the base image processor's name. */
static pf_result pf__pre_read_config(const char *dir, pf__json **config, char *path, size_t path_size, char *class_name,
                                     size_t class_size, char *error, size_t error_size) {
    if (pf__path_join(path, path_size, dir, "preprocessor_config.json"))
        return pf__format(error, error_size, PF_ERROR_INVALID_ARGUMENT, "%s: path too long", dir);
    pf_result r = pf__json_load(path, config, error, error_size);
    if (r) return r;
    if ((*config)->type != PF__JSON_OBJECT) {
        pf__json_free(*config);
        *config = NULL;
        return pf__format(error, error_size, PF_ERROR_FORMAT, "%s: not a JSON object", path);
    }
    class_name[0] = 0;
    const pf__json *type = pf__json_get(*config, "image_processor_type");
    if (!type || type->type != PF__JSON_STRING) type = pf__json_get(*config, "feature_extractor_type");
    if (type && type->type == PF__JSON_STRING && type->string_len < class_size) memcpy(class_name, type->string, type->string_len + 1);
    return PF_OK;
}

/* ---- image processors ---- */

typedef enum { PF__RESAMPLE_BILINEAR = 2, PF__RESAMPLE_BICUBIC = 3 } pf__resample_filter; /* PIL's codes */

struct pf_image_processor {
    pf_image_backend backend;
    int do_resize, size_height, size_width, size_shortest_edge; /* shortest_edge 0: height x width */
    int resample;
    int do_center_crop, crop_height, crop_width;
    int do_rescale;
    double rescale_factor;
    int do_normalize;
    double mean[3], std[3];
};

/* A size dict of height and width (or shortest_edge, where allowed), or an int read as transformers'
   get_size_dict reads it (square, or the shortest edge when default_to_square is false). */
static pf_result pf__image_size(const pf__json *v, const char *key, int default_to_square, int allow_shortest, int *height,
                                int *width, int *shortest, const char *path, char *error, size_t error_size) {
    if (!v || v->type == PF__JSON_NULL) return PF_OK;
    int h = 0, w = 0, s = 0;
    pf_result r;
    if (v->type == PF__JSON_NUMBER) {
        int n;
        if (v->number != floor(v->number) || v->number < 1 || v->number > PF__MAX_IMAGE_SIDE)
            return pf__format(error, error_size, PF_ERROR_FORMAT, "%s: \"%s\" is %g, not a size in [1, %d]", path, key,
                              v->number, PF__MAX_IMAGE_SIDE);
        n = (int)v->number;
        if (default_to_square) h = w = n;
        else s = n;
    } else if (v->type == PF__JSON_OBJECT) {
        for (const pf__json *c = v->first; c; c = c->next)
            if (strcmp(c->key, "height") && strcmp(c->key, "width") && strcmp(c->key, "shortest_edge"))
                return pf__format(error, error_size, PF_ERROR_UNSUPPORTED, "%s: \"%s\" key \"%s\" is not implemented", path,
                                  key, c->key);
        if ((r = pf__pre_int(v, "height", 1, PF__MAX_IMAGE_SIDE, &h, path, error, error_size)) ||
            (r = pf__pre_int(v, "width", 1, PF__MAX_IMAGE_SIDE, &w, path, error, error_size)) ||
            (r = pf__pre_int(v, "shortest_edge", 1, PF__MAX_IMAGE_SIDE, &s, path, error, error_size)))
            return r;
        if (s ? (h || w) : !(h && w))
            return pf__format(error, error_size, PF_ERROR_FORMAT,
                              "%s: \"%s\" needs height and width, or shortest_edge alone", path, key);
    } else {
        return pf__format(error, error_size, PF_ERROR_FORMAT, "%s: \"%s\" is neither a number nor an object", path, key);
    }
    if (s && !allow_shortest)
        return pf__format(error, error_size, PF_ERROR_UNSUPPORTED, "%s: \"%s\" as shortest_edge is not implemented", path,
                          key);
    *height = h;
    *width = w;
    *shortest = s;
    return PF_OK;
}

/* image_mean / image_std: one number for every channel, or three. */
static pf_result pf__image_channels(const pf__json *v, const char *key, double out[3], const char *path, char *error,
                                    size_t error_size) {
    if (!v || v->type == PF__JSON_NULL) return PF_OK;
    if (v->type == PF__JSON_NUMBER) {
        out[0] = out[1] = out[2] = v->number;
        return PF_OK;
    }
    if (v->type != PF__JSON_ARRAY || v->count != 3)
        return pf__format(error, error_size, PF_ERROR_FORMAT, "%s: \"%s\" is not a number or a list of 3 numbers", path, key);
    int i = 0;
    for (const pf__json *c = v->first; c; c = c->next, i++) {
        if (c->type != PF__JSON_NUMBER)
            return pf__format(error, error_size, PF_ERROR_FORMAT, "%s: \"%s\" holds a value that is not a number", path, key);
        out[i] = c->number;
    }
    return PF_OK;
}

/* The class defaults of transformers' ViTImageProcessor, DeiTImageProcessor and
   CLIPImageProcessor (their *Fast and *Pil variants save the same names); 0 for another class. */
static int pf__image_class_defaults(const char *name, pf_image_processor *p, int *default_to_square) {
    static const double imagenet_standard[3] = {0.5, 0.5, 0.5};
    static const double clip_mean[3] = {0.48145466, 0.4578275, 0.40821073};
    static const double clip_std[3] = {0.26862954, 0.26130258, 0.27577711};
    char base[64];
    size_t n = strlen(name);
    if (n >= sizeof base) return 0;
    memcpy(base, name, n + 1);
    if (n > 4 && strcmp(base + n - 4, "Fast") == 0) base[n -= 4] = 0;
    else if (n > 3 && strcmp(base + n - 3, "Pil") == 0) base[n -= 3] = 0;
    if (n > 16 && strcmp(base + n - 16, "FeatureExtractor") == 0) base[n - 16] = 0;
    else if (n > 14 && strcmp(base + n - 14, "ImageProcessor") == 0) base[n - 14] = 0;
    else return 0;
    p->do_resize = p->do_rescale = p->do_normalize = 1;
    p->rescale_factor = 1.0 / 255;
    *default_to_square = 1;
    if (strcmp(base, "ViT") == 0) {
        p->resample = PF__RESAMPLE_BILINEAR;
        p->size_height = p->size_width = 224;
        memcpy(p->mean, imagenet_standard, sizeof p->mean);
        memcpy(p->std, imagenet_standard, sizeof p->std);
    } else if (strcmp(base, "DeiT") == 0) {
        p->resample = PF__RESAMPLE_BICUBIC;
        p->size_height = p->size_width = 256;
        p->do_center_crop = 1;
        p->crop_height = p->crop_width = 224;
        memcpy(p->mean, imagenet_standard, sizeof p->mean);
        memcpy(p->std, imagenet_standard, sizeof p->std);
    } else if (strcmp(base, "CLIP") == 0) {
        p->resample = PF__RESAMPLE_BICUBIC;
        p->size_shortest_edge = 224;
        p->do_center_crop = 1;
        p->crop_height = p->crop_width = 224;
        memcpy(p->mean, clip_mean, sizeof p->mean);
        memcpy(p->std, clip_std, sizeof p->std);
        *default_to_square = 0;
    } else {
        return 0;
    }
    return 1;
}

/* The class of a config without image_processor_type: transformers then goes by config.json's
   model_type. */
static void pf__image_class_from_model(const char *dir, char *class_name, size_t class_size) {
    char path[PF__PATH_SIZE];
    pf__json *config = NULL;
    char ignored[PF__MESSAGE_SIZE];
    if (pf__path_join(path, sizeof path, dir, "config.json") || pf__json_load(path, &config, ignored, sizeof ignored)) return;
    const pf__json *type = pf__json_get(config, "model_type");
    const char *name = NULL;
    if (type && type->type == PF__JSON_STRING) {
        if (strcmp(type->string, "vit") == 0) name = "ViTImageProcessor";
        else if (strcmp(type->string, "deit") == 0) name = "DeiTImageProcessor";
        else if (strcmp(type->string, "clip") == 0 || strcmp(type->string, "clip_vision_model") == 0)
            name = "CLIPImageProcessor";
    }
    if (name && strlen(name) < class_size) strcpy(class_name, name);
    pf__json_free(config);
}

static pf_result pf__image_processor_read(pf_image_processor *p, const pf__json *config, const char *class_name,
                                          const char *path, char *error, size_t error_size) {
    static const char *const known[] = {
        "image_processor_type", "feature_extractor_type", "processor_class", "do_resize", "size", "resample",
        "do_center_crop", "crop_size", "do_rescale", "rescale_factor", "do_normalize", "image_mean", "image_std",
        "do_convert_rgb", "default_to_square", "do_pad", "pad_size", "data_format", "input_data_format", NULL};
    int default_to_square = 1;
    pf_result r;
    if (!pf__image_class_defaults(class_name, p, &default_to_square))
        return pf__format(error, error_size, PF_ERROR_UNSUPPORTED,
                          "%s: image processor \"%s\" is not implemented (ViT, DeiT and CLIP are)", path,
                          class_name[0] ? class_name : "(unnamed)");
    if ((r = pf__pre_known_keys(config, known, "image processor", path, error, error_size)) ||
        (r = pf__pre_bool(config, "default_to_square", &default_to_square, path, error, error_size)) ||
        (r = pf__pre_bool(config, "do_resize", &p->do_resize, path, error, error_size)) ||
        (r = pf__image_size(pf__json_get(config, "size"), "size", default_to_square, 1, &p->size_height, &p->size_width,
                            &p->size_shortest_edge, path, error, error_size)) ||
        (r = pf__pre_int(config, "resample", 0, 5, &p->resample, path, error, error_size)) ||
        (r = pf__pre_bool(config, "do_center_crop", &p->do_center_crop, path, error, error_size)))
        return r;
    int crop_shortest = 0;
    if ((r = pf__image_size(pf__json_get(config, "crop_size"), "crop_size", 1, 0, &p->crop_height, &p->crop_width,
                            &crop_shortest, path, error, error_size)) ||
        (r = pf__pre_bool(config, "do_rescale", &p->do_rescale, path, error, error_size)) ||
        (r = pf__pre_number(config, "rescale_factor", &p->rescale_factor, path, error, error_size)) ||
        (r = pf__pre_bool(config, "do_normalize", &p->do_normalize, path, error, error_size)) ||
        (r = pf__image_channels(pf__json_get(config, "image_mean"), "image_mean", p->mean, path, error, error_size)) ||
        (r = pf__image_channels(pf__json_get(config, "image_std"), "image_std", p->std, path, error, error_size)))
        return r;
    int do_convert_rgb = 1, do_pad = 0; /* converting RGB to RGB changes nothing */
    if ((r = pf__pre_bool(config, "do_convert_rgb", &do_convert_rgb, path, error, error_size)) ||
        (r = pf__pre_bool(config, "do_pad", &do_pad, path, error, error_size)))
        return r;
    if (do_pad) return pf__format(error, error_size, PF_ERROR_UNSUPPORTED, "%s: \"do_pad\": true is not implemented", path);
    const pf__json *pad_size = pf__json_get(config, "pad_size");
    if (pad_size && pad_size->type != PF__JSON_NULL)
        return pf__format(error, error_size, PF_ERROR_UNSUPPORTED, "%s: \"pad_size\" is not implemented", path);
    const char *layouts[] = {"data_format", "input_data_format"};
    for (int i = 0; i < 2; i++) {
        const pf__json *v = pf__json_get(config, layouts[i]);
        if (v && v->type != PF__JSON_NULL && !(v->type == PF__JSON_STRING && strcmp(v->string, "channels_first") == 0 && i == 0))
            return pf__format(error, error_size, PF_ERROR_UNSUPPORTED, "%s: \"%s\" other than the default is not implemented",
                              path, layouts[i]);
    }
    if (p->do_resize && p->resample != PF__RESAMPLE_BILINEAR && p->resample != PF__RESAMPLE_BICUBIC)
        return pf__format(error, error_size, PF_ERROR_UNSUPPORTED,
                          "%s: \"resample\": %d is not implemented (2, bilinear, and 3, bicubic, are)", path, p->resample);
    if (p->do_center_crop && !(p->crop_height && p->crop_width))
        return pf__format(error, error_size, PF_ERROR_FORMAT, "%s: \"do_center_crop\" without a \"crop_size\"", path);
    if (p->do_rescale && !(isfinite(p->rescale_factor) && p->rescale_factor != 0))
        return pf__format(error, error_size, PF_ERROR_FORMAT, "%s: \"rescale_factor\" is %g", path, p->rescale_factor);
    for (int c = 0; c < 3 && p->do_normalize; c++)
        if (!isfinite(p->mean[c]) || !isfinite(p->std[c]) || p->std[c] == 0)
            return pf__format(error, error_size, PF_ERROR_FORMAT, "%s: \"image_mean\" / \"image_std\" channel %d is %g / %g",
                              path, c, p->mean[c], p->std[c]);
    return PF_OK;
}

pf_result pf_image_processor_load(const char *dir, pf_image_backend backend, pf_image_processor **out, char *error,
                                  size_t error_size) {
    if (error && error_size) error[0] = 0;
    if (out) *out = NULL;
    if (!dir || !out) return pf__format(error, error_size, PF_ERROR_INVALID_ARGUMENT, "NULL directory or result pointer");
    if (backend != PF_IMAGE_BACKEND_TORCHVISION && backend != PF_IMAGE_BACKEND_PIL)
        return pf__format(error, error_size, PF_ERROR_INVALID_ARGUMENT, "unknown image backend %d", (int)backend);
    char path[PF__PATH_SIZE], class_name[128];
    pf__json *config;
    pf_result r = pf__pre_read_config(dir, &config, path, sizeof path, class_name, sizeof class_name, error, error_size);
    if (r) return r;
    if (!class_name[0]) pf__image_class_from_model(dir, class_name, sizeof class_name);
    pf_image_processor *p = (pf_image_processor *)calloc(1, sizeof *p);
    if (!p) r = pf__format(error, error_size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    else r = pf__image_processor_read(p, config, class_name, path, error, error_size);
    pf__json_free(config);
    if (r) {
        free(p);
        return r;
    }
    p->backend = backend;
    *out = p;
    return PF_OK;
}

void pf_image_processor_free(pf_image_processor *processor) { free(processor); }

/* The size after resizing, as transformers' get_resize_output_image_size computes it. */
static void pf__image_resized_size(const pf_image_processor *p, int width, int height, int *out_width, int *out_height) {
    if (!p->do_resize) {
        *out_width = width;
        *out_height = height;
    } else if (!p->size_shortest_edge) {
        *out_width = p->size_width;
        *out_height = p->size_height;
    } else {
        int short_side = width <= height ? width : height, long_side = width <= height ? height : width;
        double scaled = (double)p->size_shortest_edge * long_side / short_side;
        int new_long = scaled > PF__MAX_IMAGE_SIDE ? PF__MAX_IMAGE_SIDE + 1 : (int)scaled;
        *out_width = width <= height ? p->size_shortest_edge : new_long;
        *out_height = width <= height ? new_long : p->size_shortest_edge;
    }
}

static pf_result pf__image_check_size(int width, int height, char *error, size_t error_size) {
    if (width < 1 || height < 1 || width > PF__MAX_IMAGE_SIDE || height > PF__MAX_IMAGE_SIDE)
        return pf__format(error, error_size, PF_ERROR_INVALID_ARGUMENT, "image of %d x %d pixels: each side must be in [1, %d]",
                          width, height, PF__MAX_IMAGE_SIDE);
    return PF_OK;
}

pf_result pf_image_output_size(const pf_image_processor *p, int width, int height, int *out_width, int *out_height,
                               char *error, size_t error_size) {
    if (error && error_size) error[0] = 0;
    if (!p || !out_width || !out_height) return pf__format(error, error_size, PF_ERROR_INVALID_ARGUMENT, "NULL argument");
    *out_width = *out_height = 0;
    pf_result r = pf__image_check_size(width, height, error, error_size);
    if (r) return r;
    int w, h;
    pf__image_resized_size(p, width, height, &w, &h);
    if ((r = pf__image_check_size(w, h, error, error_size))) return r;
    *out_width = p->do_center_crop ? p->crop_width : w;
    *out_height = p->do_center_crop ? p->crop_height : h;
    return PF_OK;
}

/* ---- resampling: the separable fixed-point filters of PIL and of torch's uint8 path ---- */

/* One axis of a resize: output i reads `count[i]` inputs from `first[i]` with fixed-point weights
   weights[i * taps ...], each sum shifted down by `precision` bits. */
typedef struct pf__resample_axis {
    int *first, *count;
    int32_t *weights; /* [out][taps] */
    int taps, precision;
} pf__resample_axis;

static double pf__filter_bilinear(double x) {
    x = fabs(x);
    return x < 1.0 ? 1.0 - x : 0.0;
}

/* Keys' cubic with a = -0.5, in PIL's order of operations (Resample.c's bicubic_filter) ... */
static double pf__filter_bicubic_pil(double x) {
    const double a = -0.5;
    if (x < 0.0) x = -x;
    if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
    if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
    return 0.0;
}

/* ... and in torch's (UpSample.h's cubic_convolution1/2): the weights can differ in the last bit,
   which can move a rounding. */
static double pf__filter_bicubic_torch(double x) {
    const double a = -0.5;
    x = fabs(x);
    if (x < 1.0) return ((a + 2) * x - (a + 3)) * x * x + 1;
    if (x < 2.0) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
    return 0.0;
}

static void pf__resample_axis_free(pf__resample_axis *a) {
    free(a->first);
    free(a->count);
    free(a->weights);
    memset(a, 0, sizeof *a);
}

/* Coefficients of one axis as PIL's precompute_coeffs and torch's
   _compute_indices_min_size_weights_aa compute them (the filter's support widened by the
   downscale factor, normalised to sum 1), then in fixed point: PIL with 22 fraction bits, torch
   as int16 with the most bits that keep the largest weight below 2^15. */
static pf_result pf__resample_axis_init(pf__resample_axis *a, int in, int out, int filter, pf_image_backend backend) {
    memset(a, 0, sizeof *a);
    double (*fn)(double) = filter == PF__RESAMPLE_BILINEAR                ? pf__filter_bilinear
                           : backend == PF_IMAGE_BACKEND_PIL ? pf__filter_bicubic_pil
                                                             : pf__filter_bicubic_torch;
    double scale = (double)in / out, filterscale = scale < 1.0 ? 1.0 : scale;
    double support = (filter == PF__RESAMPLE_BILINEAR ? 1.0 : 2.0) * filterscale;
    a->taps = (int)ceil(support) * 2 + 1;
    double *w = (double *)malloc((size_t)out * (size_t)a->taps * sizeof *w);
    a->first = (int *)malloc((size_t)out * sizeof(int));
    a->count = (int *)malloc((size_t)out * sizeof(int));
    a->weights = (int32_t *)calloc((size_t)out * (size_t)a->taps, sizeof(int32_t));
    if (!w || !a->first || !a->count || !a->weights) {
        free(w);
        pf__resample_axis_free(a);
        return PF_ERROR_OUT_OF_MEMORY;
    }
    double largest = 0.0;
    for (int i = 0; i < out; i++) {
        double center = (i + 0.5) * scale, total = 0.0, *k = w + (size_t)i * a->taps;
        int xmin = (int)(center - support + 0.5), xmax = (int)(center + support + 0.5);
        if (xmin < 0) xmin = 0;
        if (xmax > in) xmax = in;
        int n = xmax - xmin;
        if (n < 0) n = 0;
        if (n > a->taps) n = a->taps;
        for (int j = 0; j < n; j++) {
            k[j] = fn((j + xmin - center + 0.5) / filterscale);
            total += k[j];
        }
        if (total != 0.0)
            for (int j = 0; j < n; j++) {
                k[j] /= total;
                if (k[j] > largest) largest = k[j];
            }
        a->first[i] = xmin;
        a->count[i] = n;
    }
    if (backend == PF_IMAGE_BACKEND_PIL) {
        a->precision = 22;
    } else {
        for (a->precision = 0; a->precision < 22; a->precision++)
            if ((int)(0.5 + largest * (1 << (a->precision + 1))) >= (1 << 15)) break;
    }
    for (int i = 0; i < out; i++)
        for (int j = 0; j < a->count[i]; j++) {
            double v = w[(size_t)i * a->taps + j] * (1 << a->precision);
            a->weights[(size_t)i * a->taps + j] = (int32_t)(v < 0 ? -0.5 + v : 0.5 + v);
        }
    free(w);
    return PF_OK;
}

/* One pass over 8-bit RGB: along x (horizontal) or y. in is in_w wide, out out_w x out_h, and
   out's pixels along the pass's axis are the axis's outputs from `first` on (a window of them);
   across it they are in's. Each sum starts at half a unit (rounding) and is clipped to 0..255. */
static void pf__resample_pass(const pf__resample_axis *a, int horizontal, const uint8_t *in, int in_w, uint8_t *out,
                              int out_w, int out_h, int first) {
    for (int y = 0; y < out_h; y++)
        for (int x = 0; x < out_w; x++) {
            int i = first + (horizontal ? x : y);
            const int32_t *k = a->weights + (size_t)i * a->taps;
            for (int c = 0; c < 3; c++) {
                int64_t sum = (int64_t)1 << (a->precision - 1);
                for (int j = 0; j < a->count[i]; j++) {
                    size_t at = horizontal ? ((size_t)y * in_w + (size_t)(a->first[i] + j)) * 3
                                           : ((size_t)(a->first[i] + j) * in_w + (size_t)x) * 3;
                    sum += (int64_t)in[at + c] * k[j];
                }
                int64_t v = sum < 0 ? 0 : sum >> a->precision;
                out[((size_t)y * out_w + x) * 3 + c] = (uint8_t)(v > 255 ? 255 : v);
            }
        }
}

/* The window [x0, x0 + ww) x [y0, y0 + wh) of rgb (w x h) resized to ow x oh as the backend
   resizes it: torch resamples the width first; Pillow 13 picks the order by the reductions (width
   first unless the height shrinks by more than twice what the width does: found by testing every
   shape against its wheel, which is not the order of Pillow's older Resample.c). A side that
   keeps its length is not resampled. Only the window is computed (a centre crop's), each pixel as
   in the whole resized image: the size preprocessor_config.json resizes to may be far larger
   than the crop the model takes. *window (ww x wh) is the caller's. */
static pf_result pf__image_resize(const uint8_t *rgb, int w, int h, int ow, int oh, int x0, int y0, int ww, int wh,
                                  int filter, pf_image_backend backend, uint8_t **window) {
    int horizontal_first = backend == PF_IMAGE_BACKEND_TORCHVISION ||
                           2 * (int64_t)(w > ow ? w - ow : 0) >= (int64_t)(h > oh ? h - oh : 0);
    const uint8_t *cur = rgb;
    uint8_t *owned = NULL;
    int cw = w, ch = h, cx0 = 0, cy0 = 0; /* the current image, and where it starts in the axes' current spaces */
    for (int step = 0; step < 2; step++) {
        int horizontal = (step == 0) == horizontal_first;
        int in_len = horizontal ? cw : ch, out_len = horizontal ? ow : oh;
        if (in_len == out_len) continue;
        pf__resample_axis a;
        if (pf__resample_axis_init(&a, in_len, out_len, filter, backend)) {
            free(owned);
            return PF_ERROR_OUT_OF_MEMORY;
        }
        int nw = horizontal ? ww : cw, nh = horizontal ? ch : wh;
        uint8_t *next = (uint8_t *)malloc((size_t)nw * (size_t)nh * 3);
        if (!next) {
            pf__resample_axis_free(&a);
            free(owned);
            return PF_ERROR_OUT_OF_MEMORY;
        }
        pf__resample_pass(&a, horizontal, cur, cw, next, nw, nh, horizontal ? x0 : y0);
        pf__resample_axis_free(&a);
        free(owned);
        cur = owned = next;
        if (horizontal) cw = nw, cx0 = x0;
        else ch = nh, cy0 = y0;
    }
    /* an axis not resampled still holds all of its side: the window cut from it */
    uint8_t *out = (uint8_t *)malloc((size_t)ww * (size_t)wh * 3);
    if (!out) {
        free(owned);
        return PF_ERROR_OUT_OF_MEMORY;
    }
    for (int y = 0; y < wh; y++)
        memcpy(out + (size_t)y * ww * 3, cur + ((size_t)(y0 - cy0 + y) * cw + (size_t)(x0 - cx0)) * 3, (size_t)ww * 3);
    free(owned);
    *window = out;
    return PF_OK;
}

/* Where a centre crop of `crop` from `side` starts (negative: zero padding before the image).
   torchvision pads (crop - side) / 2 before, rounding down; transformers' numpy center_crop
   rounds the padding up. */
static int pf__crop_start(int side, int crop, pf_image_backend backend) {
    int d = side - crop;
    if (backend == PF_IMAGE_BACKEND_TORCHVISION || d >= 0) return d / 2;
    return -((-d + 1) / 2);
}

pf_result pf_image_preprocess(const pf_image_processor *p, const uint8_t *rgb, int width, int height, float *out,
                              size_t out_capacity, char *error, size_t error_size) {
    int ow, oh;
    pf_result r = pf_image_output_size(p, width, height, &ow, &oh, error, error_size);
    if (r) return r;
    if (!rgb || !out) return pf__format(error, error_size, PF_ERROR_INVALID_ARGUMENT, "NULL image or output");
    size_t need = (size_t)3 * ow * oh;
    if (out_capacity < need)
        return pf__format(error, error_size, PF_ERROR_BUFFER_TOO_SMALL, "the output needs %zu floats (3 x %d x %d), has room for %zu",
                          need, oh, ow, out_capacity);
    int rw = width, rh = height;
    if (p->do_resize) pf__image_resized_size(p, width, height, &rw, &rh);
    int top = p->do_center_crop ? pf__crop_start(rh, oh, p->backend) : 0;
    int left = p->do_center_crop ? pf__crop_start(rw, ow, p->backend) : 0;
    /* what the crop keeps of the resized image: [x0, x1) x [y0, y1), the rest is padding */
    int x0 = left > 0 ? left : 0, y0 = top > 0 ? top : 0;
    int x1 = left + ow < rw ? left + ow : rw, y1 = top + oh < rh ? top + oh : rh;
    const uint8_t *pixels = rgb;
    uint8_t *resized = NULL;
    int stride = width; /* pixels' width: the input's, or the window's */
    if (p->do_resize) {
        if (pf__image_resize(rgb, width, height, rw, rh, x0, y0, x1 - x0, y1 - y0, p->resample, p->backend, &resized))
            return pf__format(error, error_size, PF_ERROR_OUT_OF_MEMORY, "out of memory resizing to %d x %d", rw, rh);
        pixels = resized, stride = x1 - x0;
    } else {
        pixels = rgb + ((size_t)y0 * width + (size_t)x0) * 3; /* the window in place */
    }
    /* rescale and normalise as each backend does in float32: torchvision folds the rescale into
       mean and std (mean / factor), numpy rescales in double, then normalises in float32 */
    float mean[3], std[3];
    for (int c = 0; c < 3; c++) {
        mean[c] = (float)p->mean[c];
        std[c] = (float)p->std[c];
        if (p->backend == PF_IMAGE_BACKEND_TORCHVISION && p->do_rescale && p->do_normalize) {
            mean[c] = mean[c] * (float)(1.0 / p->rescale_factor);
            std[c] = std[c] * (float)(1.0 / p->rescale_factor);
        }
    }
    for (int c = 0; c < 3; c++)
        for (int y = 0; y < oh; y++)
            for (int x = 0; x < ow; x++) {
                int sy = y + top, sx = x + left;
                int value = sy >= y0 && sy < y1 && sx >= x0 && sx < x1 ? pixels[((size_t)(sy - y0) * stride + (sx - x0)) * 3 + c] : 0;
                float v = (float)value;
                if (p->backend == PF_IMAGE_BACKEND_TORCHVISION) {
                    if (p->do_normalize) v = (v - mean[c]) / std[c];
                    else if (p->do_rescale) v = v * (float)p->rescale_factor;
                } else {
                    if (p->do_rescale) v = (float)(value * p->rescale_factor);
                    if (p->do_normalize) v = (v - mean[c]) / std[c];
                }
                out[((size_t)c * oh + y) * ow + x] = v;
            }
    free(resized);
    return PF_OK;
}

/* ---- FFT: mixed radix, any length ---- */

static pf_result pf__fft_init(pf__fft *f, int n) {
    memset(f, 0, sizeof *f);
    f->n = n;
    for (int m = n, p = 2; m > 1;) { /* smallest factors first; fours pair up the twos */
        while (m % p) p = p * p > m ? m : p + 1;
        f->factors[f->num_factors++] = p;
        m /= p;
    }
    f->twiddle = (double *)malloc((size_t)n * 2 * sizeof(double));
    if (!f->twiddle) return PF_ERROR_OUT_OF_MEMORY;
    for (int k = 0; k < n; k++) {
        double angle = -2.0 * 3.14159265358979323846 * k / n;
        f->twiddle[2 * k] = cos(angle);
        f->twiddle[2 * k + 1] = sin(angle);
    }
    return PF_OK;
}

static void pf__fft_free(pf__fft *f) {
    free(f->twiddle);
    f->twiddle = NULL;
}

/* Decimation in time: the length-m transforms of the p interleaved subsequences (input stride
   `stride`), then each output's p butterflies with the twiddles of length m * p. */
static void pf__fft_step(const pf__fft *f, const double *in, size_t stride, double *out, int m, int level) {
    if (m == 1) {
        out[0] = in[0];
        out[1] = in[1];
        return;
    }
    int p = f->factors[level], sub = m / p;
    for (int q = 0; q < p; q++) pf__fft_step(f, in + 2 * q * stride, stride * p, out + 2 * q * sub, sub, level + 1);
    size_t tw_step = (size_t)f->n / m; /* W_m^j = W_n^(j * n / m) */
    double tmp[2 * 64];
    double *t = p <= 64 ? tmp : (double *)malloc((size_t)2 * p * sizeof(double));
    if (!t) return; /* lengths here factor into small primes (checked at load) */
    for (int k = 0; k < sub; k++) {
        for (int q = 0; q < p; q++) {
            t[2 * q] = out[2 * (q * sub + k)];
            t[2 * q + 1] = out[2 * (q * sub + k) + 1];
        }
        for (int r = 0; r < p; r++) {
            int j = k + r * sub;
            double re = 0, im = 0;
            for (int q = 0; q < p; q++) {
                size_t idx = ((size_t)q * j % m) * tw_step;
                double wr = f->twiddle[2 * idx], wi = f->twiddle[2 * idx + 1];
                re += t[2 * q] * wr - t[2 * q + 1] * wi;
                im += t[2 * q] * wi + t[2 * q + 1] * wr;
            }
            out[2 * j] = re;
            out[2 * j + 1] = im;
        }
    }
    if (t != tmp) free(t);
}

/* out[n][2] = the DFT of in[n][2] (interleaved complex doubles). */
static void pf__fft_run(const pf__fft *f, const double *in, double *out) { pf__fft_step(f, in, 1, out, f->n, 0); }

/* ---- audio feature extractors ---- */

static double pf__mel_from_hz(double hz, int kaldi) {
    if (kaldi) return 1127.0 * log(1.0 + hz / 700.0);
    if (hz < 1000.0) return 3.0 * hz / 200.0; /* Slaney: linear below 1 kHz, logarithmic above */
    return 15.0 + log(hz / 1000.0) * (27.0 / log(6.4));
}

static double pf__hz_from_mel(double mel, int kaldi) {
    if (kaldi) return 700.0 * (exp(mel / 1127.0) - 1.0);
    if (mel < 15.0) return 200.0 * mel / 3.0;
    return 1000.0 * exp(log(6.4) / 27.0 * (mel - 15.0));
}

/* transformers' mel_filter_bank: triangles between mel-spaced edges over the FFT bins, Slaney's
   (edges in Hz, area-normalised) or Kaldi's (triangles in mel space, not normalised). */
static void pf__mel_filters(double *filters, int num_bins, int num_mels, double min_hz, double max_hz, int sampling_rate,
                            int kaldi) {
    double mel_min = pf__mel_from_hz(min_hz, kaldi), mel_max = pf__mel_from_hz(max_hz, kaldi);
    double step = (mel_max - mel_min) / (num_mels + 1);
    for (int f = 0; f < num_bins; f++) {
        double bin = kaldi ? pf__mel_from_hz((double)sampling_rate / ((num_bins - 1) * 2) * f, 1)
                           : (double)(sampling_rate / 2) / (num_bins - 1) * f;
        for (int m = 0; m < num_mels; m++) {
            double edge[3];
            for (int e = 0; e < 3; e++) {
                double mel = m + e == num_mels + 1 ? mel_max : mel_min + (m + e) * step;
                edge[e] = kaldi ? mel : pf__hz_from_mel(mel, 0);
            }
            double down = (bin - edge[0]) / (edge[1] - edge[0]), up = (edge[2] - bin) / (edge[2] - edge[1]);
            double v = down < up ? down : up;
            if (v < 0) v = 0;
            if (!kaldi) v *= 2.0 / (edge[2] - edge[0]);
            filters[(size_t)f * num_mels + m] = v;
        }
    }
}

/* The spectrogram's tables: the FFT (its length's prime factors 64 at most), the window and the
   mel filters of the kind (Whisper's log-mel, or Kaldi's fbank). */
static pf_result pf__audio_tables(pf_audio_processor *p, const char *path, char *error, size_t error_size) {
    for (int m = p->n_fft, q = 2; m > 1;) { /* the FFT's butterflies are plain sums: keep its factors small */
        while (m % q) q++;
        if (q > 64)
            return pf__format(error, error_size, PF_ERROR_UNSUPPORTED, "%s: an FFT length (%d) with a prime factor above 64", path,
                              p->n_fft);
        m /= q;
    }
    int bins = p->n_fft / 2 + 1;
    p->window = (double *)malloc((size_t)p->frame_length * sizeof(double));
    p->mel_filters = (double *)malloc((size_t)bins * (size_t)p->num_mel_bins * sizeof(double));
    if (!p->window || !p->mel_filters || pf__fft_init(&p->fft, p->n_fft))
        return pf__format(error, error_size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    const double pi = 3.14159265358979323846;
    if (p->kind == PF_AUDIO_LOG_MEL) { /* the periodic Hann window, filters from 0 to 8 kHz */
        for (int i = 0; i < p->frame_length; i++) p->window[i] = 0.5 - 0.5 * cos(2.0 * pi * i / p->frame_length);
        pf__mel_filters(p->mel_filters, bins, p->num_mel_bins, 0.0, 8000.0, p->sampling_rate, 0);
    } else { /* Povey's window (a symmetric Hann to the power 0.85), Kaldi's filters from 20 Hz */
        for (int i = 0; i < p->frame_length; i++)
            p->window[i] = pow(0.5 - 0.5 * cos(2.0 * pi * i / (p->frame_length - 1)), 0.85);
        pf__mel_filters(p->mel_filters, bins, p->num_mel_bins, 20.0, (double)(p->sampling_rate / 2), p->sampling_rate, 1);
    }
    return PF_OK;
}

static pf_result pf__audio_read(pf_audio_processor *p, const pf__json *config, const char *class_name, const char *path,
                                char *error, size_t error_size) {
    static const char *const common[] = {"feature_extractor_type", "processor_class", "feature_size", "sampling_rate",
                                         "padding_value", "padding_side", "return_attention_mask", NULL};
    static const char *const wav2vec2[] = {"do_normalize", NULL};
    static const char *const whisper[] = {"n_fft", "hop_length", "chunk_length", "n_samples", "nb_max_frames", "dither", NULL};
    static const char *const speech2text[] = {"num_mel_bins", "dither", "do_ceptral_normalize", "normalize_means",
                                              "normalize_vars", NULL};
    const char *const *own;
    int feature_size;
    if (strcmp(class_name, "Wav2Vec2FeatureExtractor") == 0) {
        p->kind = PF_AUDIO_WAVEFORM;
        own = wav2vec2;
        feature_size = 1;
        p->do_normalize = 1;
    } else if (strcmp(class_name, "WhisperFeatureExtractor") == 0) {
        p->kind = PF_AUDIO_LOG_MEL;
        own = whisper;
        feature_size = 80;
        p->n_fft = 400;
        p->hop_length = 160;
    } else if (strcmp(class_name, "Speech2TextFeatureExtractor") == 0) {
        p->kind = PF_AUDIO_FBANK;
        own = speech2text;
        feature_size = 80;
        p->num_mel_bins = 80;
        p->cmvn = p->normalize_means = p->normalize_vars = 1;
        /* transformers' numpy Kaldi fbank: 25 ms frames, 10 ms hops, a 512-point FFT */
        p->frame_length = 400;
        p->hop_length = 160;
        p->n_fft = 512;
    } else {
        return pf__format(error, error_size, PF_ERROR_UNSUPPORTED,
                          "%s: feature extractor \"%s\" is not implemented (Wav2Vec2, Whisper and Speech2Text are)", path,
                          class_name[0] ? class_name : "(unnamed)");
    }
    const char *known[24];
    int n = 0;
    for (const char *const *k = common; *k; k++) known[n++] = *k;
    for (const char *const *k = own; *k; k++) known[n++] = *k;
    known[n] = NULL;
    int chunk_length = 30, ignored_int = 0, return_mask = 0;
    double dither = 0.0;
    p->sampling_rate = 16000;
    pf_result r;
    if ((r = pf__pre_known_keys(config, known, "feature extractor", path, error, error_size)) ||
        (r = pf__pre_int(config, "feature_size", 1, 4096, &feature_size, path, error, error_size)) ||
        (r = pf__pre_int(config, "sampling_rate", 1, 1000000, &p->sampling_rate, path, error, error_size)) ||
        (r = pf__pre_number(config, "padding_value", &p->padding_value, path, error, error_size)) ||
        (r = pf__pre_bool(config, "return_attention_mask", &return_mask, path, error, error_size)) ||
        (r = pf__pre_bool(config, "do_normalize", &p->do_normalize, path, error, error_size)) ||
        (r = pf__pre_int(config, "n_fft", 2, 1 << 16, &p->n_fft, path, error, error_size)) ||
        (r = pf__pre_int(config, "hop_length", 1, 1 << 16, &p->hop_length, path, error, error_size)) ||
        (r = pf__pre_int(config, "chunk_length", 1, 3600, &chunk_length, path, error, error_size)) ||
        (r = pf__pre_int(config, "n_samples", 0, INT_MAX, &ignored_int, path, error, error_size)) ||
        (r = pf__pre_int(config, "nb_max_frames", 0, INT_MAX, &ignored_int, path, error, error_size)) ||
        (r = pf__pre_number(config, "dither", &dither, path, error, error_size)) ||
        (r = pf__pre_int(config, "num_mel_bins", 1, 4096, &p->num_mel_bins, path, error, error_size)) ||
        (r = pf__pre_bool(config, "do_ceptral_normalize", &p->cmvn, path, error, error_size)) ||
        (r = pf__pre_bool(config, "normalize_means", &p->normalize_means, path, error, error_size)) ||
        (r = pf__pre_bool(config, "normalize_vars", &p->normalize_vars, path, error, error_size)))
        return r;
    const pf__json *side = pf__json_get(config, "padding_side");
    if (side && side->type != PF__JSON_NULL && !(side->type == PF__JSON_STRING && strcmp(side->string, "right") == 0))
        return pf__format(error, error_size, PF_ERROR_UNSUPPORTED, "%s: \"padding_side\" other than \"right\" is not implemented",
                          path);
    if (dither != 0.0)
        return pf__format(error, error_size, PF_ERROR_UNSUPPORTED,
                          "%s: \"dither\": %g is not implemented (it adds random noise; 0 is deterministic)", path, dither);
    if (!isfinite(p->padding_value))
        return pf__format(error, error_size, PF_ERROR_FORMAT, "%s: \"padding_value\" is not finite", path);
    if (p->kind == PF_AUDIO_WAVEFORM) {
        if (feature_size != 1)
            return pf__format(error, error_size, PF_ERROR_UNSUPPORTED, "%s: \"feature_size\": %d (only 1, mono, is implemented)",
                              path, feature_size);
        return PF_OK;
    }
    if (p->kind == PF_AUDIO_LOG_MEL) {
        p->num_mel_bins = feature_size;
        p->frame_length = p->n_fft;
        p->n_samples = (size_t)chunk_length * (size_t)p->sampling_rate;
        if (p->n_samples <= (size_t)p->n_fft / 2 || p->n_samples / p->hop_length < 1)
            return pf__format(error, error_size, PF_ERROR_FORMAT, "%s: %d s chunks are too short for n_fft %d", path, chunk_length,
                              p->n_fft);
    }
    /* the tables are sized by the file: bounded before they are allocated and filled */
    size_t entries = (size_t)(p->n_fft / 2 + 1) * (size_t)p->num_mel_bins;
    if (entries > PF__MAX_MEL_TABLE)
        return pf__format(error, error_size, PF_ERROR_UNSUPPORTED, "%s: n_fft %d and %d mel bins make a filter table of %zu "
                          "entries, more than the %zu this library builds", path, p->n_fft, p->num_mel_bins, entries,
                          PF__MAX_MEL_TABLE);
    return pf__audio_tables(p, path, error, error_size);
}

void pf_audio_processor_free(pf_audio_processor *processor) {
    if (!processor) return;
    free(processor->window);
    free(processor->mel_filters);
    pf__fft_free(&processor->fft);
    free(processor);
}

pf_result pf_audio_processor_load(const char *dir, pf_audio_processor **out, char *error, size_t error_size) {
    if (error && error_size) error[0] = 0;
    if (out) *out = NULL;
    if (!dir || !out) return pf__format(error, error_size, PF_ERROR_INVALID_ARGUMENT, "NULL directory or result pointer");
    char path[PF__PATH_SIZE], class_name[128];
    pf__json *config;
    pf_result r = pf__pre_read_config(dir, &config, path, sizeof path, class_name, sizeof class_name, error, error_size);
    if (r) return r;
    pf_audio_processor *p = (pf_audio_processor *)calloc(1, sizeof *p);
    if (!p) r = pf__format(error, error_size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    else r = pf__audio_read(p, config, class_name, path, error, error_size);
    pf__json_free(config);
    if (r) {
        pf_audio_processor_free(p);
        return r;
    }
    *out = p;
    return PF_OK;
}

pf_audio_processor_info pf_audio_processor_get_info(const pf_audio_processor *p) {
    pf_audio_processor_info info;
    memset(&info, 0, sizeof info);
    if (!p) return info;
    info.kind = p->kind;
    info.sampling_rate = p->sampling_rate;
    info.num_mel_bins = p->kind == PF_AUDIO_WAVEFORM ? 0 : p->num_mel_bins;
    info.padded_samples = p->kind == PF_AUDIO_LOG_MEL ? p->n_samples : 0;
    return info;
}

/* Frames of a Kaldi fbank (no padding: frames that fit whole) or of Whisper's padded chunk. */
static size_t pf__audio_frames(const pf_audio_processor *p, size_t num_samples) {
    if (p->kind == PF_AUDIO_LOG_MEL) return p->n_samples / (size_t)p->hop_length; /* centred frames, the last dropped */
    if (p->kind == PF_AUDIO_FBANK)
        return num_samples < (size_t)p->frame_length ? 0 : 1 + (num_samples - (size_t)p->frame_length) / (size_t)p->hop_length;
    return num_samples;
}

pf_result pf_audio_features_size(const pf_audio_processor *p, size_t num_samples, size_t *rows, size_t *columns,
                                 char *error, size_t error_size) {
    if (error && error_size) error[0] = 0;
    if (!p || !rows || !columns) return pf__format(error, error_size, PF_ERROR_INVALID_ARGUMENT, "NULL argument");
    *rows = *columns = 0;
    if (num_samples == 0 || num_samples > PF__MAX_AUDIO_SAMPLES)
        return pf__format(error, error_size, PF_ERROR_INVALID_ARGUMENT, "%zu samples: must be in [1, %zu]", num_samples,
                          PF__MAX_AUDIO_SAMPLES);
    size_t frames = pf__audio_frames(p, num_samples);
    if (frames == 0)
        return pf__format(error, error_size, PF_ERROR_INVALID_ARGUMENT,
                          "%zu samples are shorter than one %d-sample frame of the filter bank", num_samples, p->frame_length);
    switch (p->kind) {
    case PF_AUDIO_WAVEFORM: *rows = 1, *columns = num_samples; break;
    case PF_AUDIO_LOG_MEL: *rows = (size_t)p->num_mel_bins, *columns = frames; break;
    case PF_AUDIO_FBANK: *rows = frames, *columns = (size_t)p->num_mel_bins; break;
    }
    return PF_OK;
}

/* Wav2Vec2's zero-mean unit-variance normalisation of the utterance (epsilon 1e-7 under the root). */
static void pf__audio_normalize(const float *samples, size_t n, float *out) {
    double mean = 0.0, var = 0.0;
    for (size_t i = 0; i < n; i++) mean += samples[i];
    mean /= (double)n;
    for (size_t i = 0; i < n; i++) var += ((double)samples[i] - mean) * ((double)samples[i] - mean);
    var /= (double)n;
    double scale = 1.0 / sqrt(var + 1e-7);
    for (size_t i = 0; i < n; i++) out[i] = (float)(((double)samples[i] - mean) * scale);
}

/* The power spectrum of one frame: frame[frame_length] windowed, zero-padded to n_fft, then
   |X_k|^2 for k = 0 .. n_fft / 2 into power. buf holds 4 * n_fft doubles. */
static void pf__audio_power(const pf_audio_processor *p, const double *frame, double *buf, double *power) {
    double *in = buf, *spectrum = buf + 2 * p->n_fft;
    for (int i = 0; i < p->n_fft; i++) {
        in[2 * i] = i < p->frame_length ? frame[i] * p->window[i] : 0.0;
        in[2 * i + 1] = 0.0;
    }
    pf__fft_run(&p->fft, in, spectrum);
    for (int k = 0; k <= p->n_fft / 2; k++)
        power[k] = spectrum[2 * k] * spectrum[2 * k] + spectrum[2 * k + 1] * spectrum[2 * k + 1];
}

static double pf__audio_mel(const pf_audio_processor *p, const double *power, int m) {
    double sum = 0.0;
    for (int k = 0; k <= p->n_fft / 2; k++) sum += p->mel_filters[(size_t)k * p->num_mel_bins + m] * power[k];
    return sum;
}

/* Whisper: the utterance padded (or cut) to the chunk, centred frames with reflected edges, log10
   of the mel power floored at 1e-10, then at the maximum - 8, and (x + 4) / 4. out[mel][frame]. */
static pf_result pf__audio_log_mel(const pf_audio_processor *p, const float *samples, size_t n, float *out) {
    size_t total = p->n_samples, frames = pf__audio_frames(p, n), half = (size_t)p->n_fft / 2;
    int bins = p->n_fft / 2 + 1;
    double *frame = (double *)malloc((size_t)p->n_fft * sizeof(double));
    double *buf = (double *)malloc((size_t)4 * p->n_fft * sizeof(double));
    double *power = (double *)malloc((size_t)bins * sizeof(double));
    if (!frame || !buf || !power) {
        free(frame), free(buf), free(power);
        return PF_ERROR_OUT_OF_MEMORY;
    }
    double largest = -HUGE_VAL;
    for (size_t t = 0; t < frames; t++) {
        for (int i = 0; i < p->n_fft; i++) {
            /* position in the padded chunk, reflected at its ends (numpy's and torch's "reflect") */
            long long at = (long long)(t * (size_t)p->hop_length) + i - (long long)half;
            if (at < 0) at = -at;
            if (at >= (long long)total) at = 2 * ((long long)total - 1) - at;
            frame[i] = (size_t)at < n ? (double)samples[at] : p->padding_value;
        }
        pf__audio_power(p, frame, buf, power);
        for (int m = 0; m < p->num_mel_bins; m++) {
            double mel = pf__audio_mel(p, power, m);
            double v = log10(mel > 1e-10 ? mel : 1e-10);
            if (v > largest) largest = v;
            out[(size_t)m * frames + t] = (float)v;
        }
    }
    for (size_t i = 0; i < frames * (size_t)p->num_mel_bins; i++) {
        double v = out[i] < largest - 8.0 ? largest - 8.0 : out[i];
        out[i] = (float)((v + 4.0) / 4.0);
    }
    free(frame), free(buf), free(power);
    return PF_OK;
}

/* Speech2Text: transformers' numpy Kaldi fbank of the samples scaled to 16-bit range: per frame
   the DC offset removed, pre-emphasis 0.97, Povey's window, the mel power floored at float32's
   epsilon, natural log; then the utterance's mean and standard deviation per bin normalised
   (CMVN) where configured. out[frame][mel]. */
static pf_result pf__audio_fbank(const pf_audio_processor *p, const float *samples, size_t n, float *out) {
    size_t frames = pf__audio_frames(p, n);
    int bins = p->n_fft / 2 + 1, mels = p->num_mel_bins, len = p->frame_length;
    double *frame = (double *)malloc((size_t)len * sizeof(double));
    double *buf = (double *)malloc((size_t)4 * p->n_fft * sizeof(double));
    double *power = (double *)malloc((size_t)bins * sizeof(double));
    if (!frame || !buf || !power) {
        free(frame), free(buf), free(power);
        return PF_ERROR_OUT_OF_MEMORY;
    }
    for (size_t t = 0; t < frames; t++) {
        const float *x = samples + t * (size_t)p->hop_length;
        double mean = 0.0;
        for (int i = 0; i < len; i++) mean += (double)x[i] * 32768.0;
        mean /= len;
        for (int i = len - 1; i >= 0; i--) {
            double v = (double)x[i] * 32768.0 - mean;
            frame[i] = i ? v - 0.97 * ((double)x[i - 1] * 32768.0 - mean) : v * (1.0 - 0.97);
        }
        pf__audio_power(p, frame, buf, power);
        for (int m = 0; m < mels; m++) {
            double mel = pf__audio_mel(p, power, m);
            out[t * mels + m] = (float)log(mel > 1.192092955078125e-07 ? mel : 1.192092955078125e-07);
        }
    }
    /* A bin the same in every frame (silence, constant or exactly periodic audio) has a zero
       deviation: its normalised values are NaN, as transformers' (pf_encode_audio says why). */
    if (p->cmvn) /* numpy's utterance_cmvn: the standard deviation is about the mean either way */
        for (int m = 0; m < mels; m++) {
            double mean = 0.0, var = 0.0;
            for (size_t t = 0; t < frames; t++) mean += out[t * mels + m];
            mean /= (double)frames;
            for (size_t t = 0; t < frames; t++) var += (out[t * mels + m] - mean) * (out[t * mels + m] - mean);
            double std = sqrt(var / (double)frames);
            for (size_t t = 0; t < frames; t++) {
                double v = out[t * mels + m] - (p->normalize_means ? mean : 0.0);
                out[t * mels + m] = (float)(p->normalize_vars ? v / std : v);
            }
        }
    free(frame), free(buf), free(power);
    return PF_OK;
}

pf_result pf_audio_features(const pf_audio_processor *p, const float *samples, size_t num_samples, float *out,
                            size_t out_capacity, char *error, size_t error_size) {
    size_t rows, columns;
    pf_result r = pf_audio_features_size(p, num_samples, &rows, &columns, error, error_size);
    if (r) return r;
    if (!samples || !out) return pf__format(error, error_size, PF_ERROR_INVALID_ARGUMENT, "NULL samples or output");
    if (out_capacity < rows * columns)
        return pf__format(error, error_size, PF_ERROR_BUFFER_TOO_SMALL, "the features need %zu floats (%zu x %zu), room for %zu",
                          rows * columns, rows, columns, out_capacity);
    for (size_t i = 0; i < num_samples; i++)
        if (!isfinite(samples[i]))
            return pf__format(error, error_size, PF_ERROR_INVALID_ARGUMENT, "sample %zu is not a finite number", i);
    switch (p->kind) {
    case PF_AUDIO_WAVEFORM:
        if (p->do_normalize) pf__audio_normalize(samples, num_samples, out);
        else memcpy(out, samples, num_samples * sizeof(float));
        return PF_OK;
    case PF_AUDIO_LOG_MEL: r = pf__audio_log_mel(p, samples, num_samples, out); break;
    case PF_AUDIO_FBANK: r = pf__audio_fbank(p, samples, num_samples, out); break;
    }
    if (r) return pf__format(error, error_size, r, "out of memory");
    return PF_OK;
}

