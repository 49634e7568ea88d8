/* classify: a text classifier (...ForSequenceClassification: BERT, RoBERTa, DeBERTa, BART, LLaMA
   reward models...) on a text or a pair of texts, or zero-shot classification with an NLI model
   (bart-large-mnli, DeBERTa MNLI checkpoints), on N ranks.

   build/classify MODEL_DIR [--gpus N] [--device cpu|cuda|auto] [--pair TEXT2] [--top K]
                  [--function softmax|sigmoid|none] [--global-tokens I,J,...] [--regions FILE [--boxes FILE]]
                  [--entities ID@I,J;ID@K...] TEXT
   build/classify MODEL_DIR [...] --labels A,B,C [--template "This example is {}."] [--multi-label] TEXT

   Prints "score label" lines, best first. Plain classification scores the model's labels (their
   id2label names) with softmax, or sigmoid for a one-label head, as transformers' text-classification
   pipeline does by default; --function overrides it (multi-label checkpoints want sigmoid).
   Zero-shot pairs the text with the template filled with each candidate label, as transformers'
   zero-shot-classification pipeline does: the labels' entailment logits through one softmax, or
   with --multi-label each label's entailment against contradiction alone. A Longformer puts global
   attention on the first token, as transformers' classifier does without a mask; --global-tokens
   gives it to the tokens at those positions of each input (special tokens counted) instead
   (pf_encode_global). A vision-and-language classifier (VisualBERT's VQA and NLVR2 heads) reads the
   image as object regions: --regions FILE holds their features as float32 little-endian values,
   region after region, each the model's region_dim wide (an object detector's output, as
   transformers' visual_embeds takes it), after the text's tokens (pf_encode_regions); without it
   the text runs alone. LXMERT's answer head reads each region's box too: --boxes FILE holds them
   likewise, region after region, each the model's region_box_dim values (transformers'
   visual_pos; pf_encode_region_boxes). An entity-aware classifier (LUKE's entity and entity-pair heads) reads the
   text's entities: --entities gives each one's id in the model's entity vocabulary and its
   mention's token positions (0 the first, special tokens counted), entities apart by ';'
   (pf_encode_entities). Errors go to stderr (exit 1; 2 for the command line). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../parallelformers.h"

#define MAX_LABELS 4096 /* labels a head has, or candidates a zero-shot run takes */
#define MAX_GLOBAL 256  /* --global-tokens' positions */
#define MAX_REGION_BYTES (64u << 20) /* --regions' and --boxes' files */
#define MAX_ENTITIES 64 /* --entities' entities */
#define MAX_MENTION 32  /* an entity's positions */

typedef enum { FUNCTION_DEFAULT, FUNCTION_SOFTMAX, FUNCTION_SIGMOID, FUNCTION_NONE } score_function;

static int usage(FILE *out) {
    fprintf(out,
            "usage: classify MODEL_DIR [options] TEXT\n"
            "  --gpus N            ranks (GPUs, or CPU threads without CUDA); default 0: every GPU, or every core\n"
            "  --device D          cpu, cuda or auto (default auto)\n"
            "  --pair TEXT2        classify the pair (TEXT, TEXT2), as an NLI model reads premise and hypothesis\n"
            "  --top K             print the K best labels (default: all)\n"
            "  --function F        softmax, sigmoid or none (default: sigmoid for one label, else softmax)\n"
            "  --labels A,B,C      zero-shot: the candidate labels, with an NLI model\n"
            "  --template T        zero-shot: the hypothesis, {} standing for the label (default \"This example is {}.\")\n"
            "  --multi-label       zero-shot: score each label alone (entailment against contradiction)\n"
            "  --global-tokens L   a Longformer's global attention on the tokens at these positions (comma-separated,\n"
            "                      0 the first, special tokens counted) instead of the first token alone\n"
            "  --regions FILE      a vision-and-language model's object regions: float32 LE features, region after\n"
            "                      region, each the model's region width (VisualBERT's visual_embedding_dim)\n"
            "  --boxes FILE        with --regions, each region's box: float32 LE values, region after region, each\n"
            "                      the model's box width (LXMERT's visual_pos_dim)\n"
            "  --entities E        an entity-aware model's entities: ID@I,J;ID@K... each entity's id and its\n"
            "                      mention's token positions (0 the first, special tokens counted)\n"
            "  --help              this text\n");
    return out == stdout ? 0 : 2;
}

/* "classify: MESSAGE" for a failed call on the model (or without one, the result's name). */
static int fail(pf_model *model, pf_result r) {
    const char *message = model ? pf_error_message(model) : "";
    fprintf(stderr, "classify: %s\n", message && message[0] ? message : pf_result_string(r));
    return 1;
}

static void softmax(float *x, int n) {
    float max = x[0];
    for (int i = 1; i < n; i++) max = x[i] > max ? x[i] : max;
    double sum = 0;
    for (int i = 0; i < n; i++) sum += exp((double)x[i] - max);
    for (int i = 0; i < n; i++) x[i] = (float)(exp((double)x[i] - max) / sum);
}

/* Token ids of (text, pair) with the tokenizer's special tokens, cut in the first text to fit
   max_length (transformers' zero-shot pipeline truncates only_first); *ids is malloc'd. */
static pf_result tokenize(pf_model *model, const char *text, const char *pair, int max_length, int32_t **ids, int *count) {
    const pf_tokenizer *tok = pf_model_tokenizer(model);
    pf_tokenize_options o = pf_tokenize_options_init();
    o.max_length = (size_t)max_length;
    o.truncation = PF_TRUNCATION_ONLY_FIRST;
    size_t n = 0;
    *ids = NULL;
    if (!tok) return PF_ERROR_INVALID_ARGUMENT;
    pf_result r = pf_tokenize_pair(tok, text, strlen(text), pair, pair ? strlen(pair) : 0, &o, NULL, NULL, 0, &n);
    if (r && r != PF_ERROR_BUFFER_TOO_SMALL) return r;
    if (!(*ids = (int32_t *)malloc((n ? n : 1) * sizeof(int32_t)))) return PF_ERROR_OUT_OF_MEMORY;
    r = pf_tokenize_pair(tok, text, strlen(text), pair, pair ? strlen(pair) : 0, &o, *ids, NULL, n, &n);
    *count = (int)n;
    return r;
}

/* The template with its "{}" replaced by label (the template alone if it has none), malloc'd. */
static char *hypothesis(const char *template, const char *label) {
    const char *at = strstr(template, "{}");
    size_t head = at ? (size_t)(at - template) : strlen(template), size = strlen(template) + strlen(label) + 1;
    char *out = (char *)malloc(size);
    if (out) snprintf(out, size, "%.*s%s%s", (int)head, template, at ? label : "", at ? at + 2 : "");
    return out;
}

/* A Longformer's global tokens of a row of `length` tokens: 1 at the positions given, 0 elsewhere
   (mask: malloc'd); -1 when a position is beyond the row. */
static int global_mask(const int *positions, int num_positions, int length, int32_t **mask) {
    if (!(*mask = (int32_t *)calloc((size_t)length, sizeof(int32_t)))) return -1;
    for (int k = 0; k < num_positions; k++) {
        if (positions[k] >= length) {
            fprintf(stderr, "classify: --global-tokens position %d is beyond the input's %d tokens\n", positions[k], length);
            return -1;
        }
        (*mask)[positions[k]] = 1;
    }
    return 0;
}

/* The object regions the model reads with the text (--regions, --boxes): what a run with them needs. */
typedef struct regions {
    const float *features; /* count x width floats */
    int count, width;
    const float *boxes;    /* count x box_width floats; NULL: none given */
    int box_width;
} regions;

/* The entities the model reads with the text (--entities): ids [count] and positions [count][width]
   (-1 after a mention's last). */
typedef struct entities {
    int32_t ids[MAX_ENTITIES], positions[MAX_ENTITIES * MAX_MENTION];
    int count, width;
} entities;

/* --entities' "ID@I,J;ID@K" into e; -1 when it is not that. */
static int parse_entities(const char *text, entities *e) {
    int32_t positions[MAX_ENTITIES][MAX_MENTION];
    int lengths[MAX_ENTITIES];
    e->count = e->width = 0;
    for (const char *p = text; *p;) {
        char *end;
        long id = strtol(p, &end, 10);
        if (end == p || *end != '@' || id < 0 || id > 2000000000L || e->count == MAX_ENTITIES) return -1;
        int n = 0;
        for (p = end + 1;;) {
            long at = strtol(p, &end, 10);
            if (end == p || at < 0 || at > 1000000000L || n == MAX_MENTION) return -1;
            positions[e->count][n++] = (int32_t)at;
            p = end;
            if (*p != ',') break;
            p++;
        }
        if (*p && *p != ';') return -1;
        if (*p) p++;
        e->ids[e->count] = (int32_t)id;
        lengths[e->count++] = n;
        if (n > e->width) e->width = n;
    }
    for (int k = 0; k < e->count; k++)
        for (int i = 0; i < e->width; i++) e->positions[k * e->width + i] = i < lengths[k] ? positions[k][i] : -1;
    return e->count ? 0 : -1;
}

/* Logits of the sequence-classification head for `count` (text, pairs[i]) rows (pairs NULL: the
   text alone), max_batch at a time, into logits [count][num_labels]; global: --global-tokens'
   positions (NULL: pf_encode, the head's default); image: --regions' (NULL: none), each row's;
   named: --entities' (NULL: none), each row's. */
static pf_result classify_rows(pf_model *model, const char *text, char *const *pairs, int count, int max_batch,
                               const int *global, int num_global, const regions *image, const entities *named,
                               float *logits) {
    pf_model_info info = pf_get_info(model);
    pf_result r = PF_OK;
    for (int first = 0; first < count && !r; first += max_batch) {
        int n = count - first < max_batch ? count - first : max_batch;
        int32_t *rows[MAX_LABELS] = {0}, *masks[MAX_LABELS] = {0};
        int lengths[MAX_LABELS];
        for (int i = 0; i < n && !r; i++) r = tokenize(model, text, pairs ? pairs[first + i] : NULL, info.max_positions, &rows[i], &lengths[i]);
        for (int i = 0; i < n && !r && global; i++)
            if (global_mask(global, num_global, lengths[i], &masks[i])) r = PF_ERROR_INVALID_ARGUMENT;
        pf_encoding *e = NULL;
        const float *features[MAX_LABELS], *boxes[MAX_LABELS];
        int counts[MAX_LABELS];
        for (int i = 0; image && i < n; i++) features[i] = image->features, boxes[i] = image->boxes, counts[i] = image->count;
        const int32_t *entity_ids[MAX_LABELS], *entity_positions[MAX_LABELS];
        for (int i = 0; named && i < n; i++)
            entity_ids[i] = named->ids, entity_positions[i] = named->positions, counts[i] = named->count;
        if (!r && image && image->boxes)
            r = pf_encode_region_boxes(model, (const int32_t *const *)rows, NULL, features, boxes, counts, image->width,
                                       image->box_width, lengths, n, &e);
        else if (!r && image)
            r = pf_encode_regions(model, (const int32_t *const *)rows, NULL, features, counts, image->width, lengths, n, &e);
        else if (!r && named)
            r = pf_encode_entities(model, (const int32_t *const *)rows, NULL, entity_ids, entity_positions, counts,
                                   named->width, lengths, n, &e);
        else if (!r)
            r = global ? pf_encode_global(model, (const int32_t *const *)rows, NULL, (const int32_t *const *)masks, lengths, n, &e)
                       : pf_encode(model, (const int32_t *const *)rows, NULL, lengths, n, &e);
        if (!r) memcpy(logits + (size_t)first * info.num_labels, e->logits, (size_t)n * info.num_labels * sizeof(float));
        pf_encoding_free(e);
        for (int i = 0; i < n; i++) free(rows[i]), free(masks[i]);
    }
    return r;
}

/* The floats of --regions' or --boxes' file (flag; *values malloc'd): whole regions of `width`
   floats each (what: "features", "box values"), *count of them; -1 with a message on stderr
   otherwise. */
static int read_region_file(const char *path, const char *flag, const pf_model_info *info, int width, const char *what,
                            float **values, int *count) {
    FILE *f = fopen(path, "rb");
    long size = -1;
    if (f && fseek(f, 0, SEEK_END) == 0) size = ftell(f);
    size_t bytes = (size_t)width * sizeof(float);
    if (!f || size < 0 || size > (long)MAX_REGION_BYTES || fseek(f, 0, SEEK_SET)) {
        fprintf(stderr, "classify: %s %s is unreadable or larger than %u bytes\n", flag, path, MAX_REGION_BYTES);
    } else if (!bytes) {
        fprintf(stderr, "classify: the model (model_type \"%s\") takes no object regions%s\n", info->model_type,
                info->region_dim ? " with boxes" : "");
    } else if (size == 0 || (size_t)size % bytes) {
        fprintf(stderr, "classify: %s %s holds %ld bytes, not regions of %d float32 %s each\n", flag, path, size, width,
                what);
    } else {
        *values = (float *)malloc((size_t)size);
        if (*values && fread(*values, 1, (size_t)size, f) == (size_t)size) {
            *count = (int)((size_t)size / bytes);
            fclose(f);
            return 0;
        }
        fprintf(stderr, "classify: reading %s %s failed\n", flag, path);
        free(*values);
        *values = NULL;
    }
    if (f) fclose(f);
    return -1;
}

/* --regions' file (and --boxes', boxes_path not NULL) into image: as many boxes as regions; -1
   with a message on stderr otherwise. */
static int read_regions(const char *path, const char *boxes_path, const pf_model_info *info, regions *image) {
    float *features = NULL, *boxes = NULL;
    int count = 0, boxes_count = 0;
    if (read_region_file(path, "--regions", info, info->region_dim, "features", &features, &count)) return -1;
    image->features = features, image->count = count, image->width = info->region_dim;
    if (!boxes_path) return 0;
    if (read_region_file(boxes_path, "--boxes", info, info->region_box_dim, "box values", &boxes, &boxes_count))
        return -1;
    image->boxes = boxes, image->box_width = info->region_box_dim;
    if (boxes_count == count) return 0;
    fprintf(stderr, "classify: --boxes %s holds %d boxes for %d regions\n", boxes_path, boxes_count, count);
    return -1;
}

/* The index of the label whose name starts with "entail" (any case), as transformers' zero-shot
   pipeline finds it; -1 for none. */
static int entailment_label(const pf_model *model, int num_labels) {
    for (int i = 0; i < num_labels; i++) {
        const char *name = pf_label_name(model, i);
        if (name && !strncasecmp(name, "entail", 6)) return i;
    }
    return -1;
}

/* Prints the best `top` of n (score, name) pairs, best first (ties: the earlier first). */
static void print_best(const float *scores, const char *const *names, int n, int top) {
    int order[MAX_LABELS];
    for (int i = 0; i < n; i++) order[i] = i;
    for (int i = 1; i < n; i++) /* insertion sort: stable */
        for (int j = i; j > 0 && scores[order[j]] > scores[order[j - 1]]; j--) {
            int t = order[j];
            order[j] = order[j - 1], order[j - 1] = t;
        }
    for (int i = 0; i < n && i < top; i++) printf("%.6f %s\n", scores[order[i]], names[order[i]]);
}

int main(int argc, char **argv) {
    const char *dir = NULL, *text = NULL, *pair = NULL, *labels = NULL, *template = "This example is {}.";
    const char *regions_path = NULL, *boxes_path = NULL;
    regions image = {NULL, 0, 0, NULL, 0};
    static entities named;
    int has_entities = 0;
    int ranks = 0 /* every device */, top = MAX_LABELS, multi_label = 0, global[MAX_GLOBAL], num_global = -1;
    score_function function = FUNCTION_DEFAULT;
    pf_parallel_options po = pf_parallel_options_init();
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) return usage(stdout);
        if ((!strcmp(a, "--gpus") || !strcmp(a, "-r") || !strcmp(a, "--ranks")) && v) ranks = atoi(argv[++i]);
        else if (!strcmp(a, "--top") && v) top = atoi(argv[++i]);
        else if (!strcmp(a, "--pair") && v) pair = argv[++i];
        else if (!strcmp(a, "--labels") && v) labels = argv[++i];
        else if (!strcmp(a, "--template") && v) template = argv[++i];
        else if (!strcmp(a, "--multi-label")) multi_label = 1;
        else if (!strcmp(a, "--regions") && v) regions_path = argv[++i];
        else if (!strcmp(a, "--boxes") && v) boxes_path = argv[++i];
        else if (!strcmp(a, "--entities") && v) {
            if (parse_entities(argv[++i], &named)) return usage(stderr);
            has_entities = 1;
        }
        else if (!strcmp(a, "--global-tokens") && v) {
            num_global = 0;
            for (const char *p = argv[++i]; *p && num_global >= 0;) {
                char *end;
                long at = strtol(p, &end, 10);
                if (end == p || at < 0 || at > 1000000000 || num_global == MAX_GLOBAL || (*end && *end != ',')) {
                    num_global = -2; /* not a list of positions */
                    break;
                }
                global[num_global++] = (int)at;
                p = *end ? end + 1 : end;
            }
            if (num_global < 0) return usage(stderr);
        }
        else if (!strcmp(a, "--function") && v) {
            function = !strcmp(v, "softmax") ? FUNCTION_SOFTMAX : !strcmp(v, "sigmoid") ? FUNCTION_SIGMOID
                       : !strcmp(v, "none") ? FUNCTION_NONE : FUNCTION_DEFAULT;
            if (function == FUNCTION_DEFAULT) return usage(stderr);
            i++;
        } else if (!strcmp(a, "--device") && v) {
            po.device = !strcmp(v, "cpu") ? PF_DEVICE_CPU : !strcmp(v, "cuda") ? PF_DEVICE_CUDA : PF_DEVICE_AUTO;
            if (strcmp(v, "cpu") && strcmp(v, "cuda") && strcmp(v, "auto")) return usage(stderr);
            i++;
        } else if (a[0] != '-' && !dir) dir = a;
        else if (a[0] != '-' && !text) text = a;
        else return usage(stderr);
    }
    if (!dir || !text || ranks < 0 || top < 1 || (labels && (pair || function != FUNCTION_DEFAULT)) ||
        (!labels && multi_label) ||
        ((regions_path || has_entities) && (labels || num_global >= 0)) || (regions_path && has_entities) ||
        (boxes_path && !regions_path))
        return usage(stderr);

    /* the candidate labels of a zero-shot run, split at commas */
    char *label_copy = labels ? strdup(labels) : NULL, *candidates[MAX_LABELS], *pairs[MAX_LABELS] = {0};
    int num_candidates = 0;
    for (char *p = label_copy ? strtok(label_copy, ",") : NULL; p && num_candidates < MAX_LABELS; p = strtok(NULL, ","))
        candidates[num_candidates++] = p;
    if (labels && num_candidates == 0) {
        free(label_copy);
        return usage(stderr);
    }

    pf_model *model = NULL;
    pf_result r = pf_load(dir, NULL, &model);
    pf_model_info info = r == PF_OK ? pf_get_info(model) : (pf_model_info){0};
    int status = 1, rows = labels ? num_candidates : 1;
    if (r == PF_OK && info.num_labels > MAX_LABELS) {
        fprintf(stderr, "classify: %s has %d labels (at most %d here)\n", dir, info.num_labels, MAX_LABELS);
    } else if (r == PF_OK && info.head != PF_HEAD_SEQUENCE_CLASSIFICATION) {
        fprintf(stderr, "classify: %s has no sequence-classification head (config.json's architectures names none)\n", dir);
    } else if (r == PF_OK && !pf_model_tokenizer(model)) {
        fprintf(stderr, "classify: %s has no tokenizer\n", dir);
    } else if (r == PF_OK && regions_path && read_regions(regions_path, boxes_path, &info, &image)) {
        /* the message printed */
    } else if (r == PF_OK) {
        int entail = labels ? entailment_label(model, info.num_labels) : 0;
        po.max_batch = rows < 16 ? rows : 16;
        float *logits = entail >= 0 ? (float *)malloc((size_t)rows * info.num_labels * sizeof(float)) : NULL;
        for (int i = 0; i < num_candidates; i++)
            if (!(pairs[i] = hypothesis(template, candidates[i]))) r = PF_ERROR_OUT_OF_MEMORY;
        if (entail < 0) {
            fprintf(stderr, "classify: zero-shot needs an NLI model: no label of %s is named entailment\n", dir);
        } else if (!logits || r) {
            fprintf(stderr, "classify: out of memory\n");
        } else if ((r = pf_parallelize(model, ranks, &po)) ||
                   (r = classify_rows(model, text, labels ? pairs : NULL, rows, po.max_batch,
                                      num_global >= 0 ? global : NULL, num_global, regions_path ? &image : NULL,
                                      has_entities ? &named : NULL, logits))) {
            status = fail(model, r);
        } else if (labels) {
            float scores[MAX_LABELS];
            int contradiction = entail == 0 ? info.num_labels - 1 : 0;
            for (int i = 0; i < rows; i++) {
                const float *row = logits + (size_t)i * info.num_labels;
                float pair_logits[2] = {row[contradiction], row[entail]};
                if (multi_label) softmax(pair_logits, 2);
                scores[i] = pair_logits[1];
            }
            if (!multi_label) softmax(scores, rows);
            print_best(scores, (const char *const *)candidates, rows, top);
            status = 0;
        } else {
            const char *names[MAX_LABELS];
            static char fallback[MAX_LABELS][24];
            int n = info.num_labels;
            if (function == FUNCTION_DEFAULT) function = n == 1 ? FUNCTION_SIGMOID : FUNCTION_SOFTMAX;
            if (function == FUNCTION_SOFTMAX) softmax(logits, n);
            for (int i = 0; i < n; i++) {
                if (function == FUNCTION_SIGMOID) logits[i] = (float)(1 / (1 + exp(-(double)logits[i])));
                snprintf(fallback[i], sizeof fallback[i], "LABEL_%d", i);
                names[i] = pf_label_name(model, i) ? pf_label_name(model, i) : fallback[i];
            }
            print_best(logits, names, n, top);
            status = 0;
        }
        free(logits);
    } else {
        status = fail(model, r);
    }
    free((void *)image.features), free((void *)image.boxes);
    for (int i = 0; i < num_candidates; i++) free(pairs[i]);
    free(label_copy);
    pf_free(model);
    return status;
}
