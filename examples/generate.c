/* generate: continue a prompt with a Hugging Face model directory, on N ranks.

   build/generate MODEL_DIR [options] [PROMPT]
     --ids 17,523,4     token ids instead of a text prompt; the last line printed is then the
                        generated ids, comma-separated (the new ids only)
     -n N               max new tokens (default 20)
     --gpus N           number of ranks (devices) (default 1)
     --device D         cpu, cuda or auto (default auto)
     --dump-logits F    write the prompt's logits, float32 little-endian, [n_prompt][vocab]
     -v                 print the per-rank memory table */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../parallelformers.h"

static void usage(void) {
    fprintf(stderr,
            "usage: generate MODEL_DIR [--ids 1,2,3] [-n N] [--gpus N] [--device cpu|cuda|auto]\n"
            "                [--dump-logits FILE] [-v] [PROMPT]\n");
}

static void print_log(void *user, const char *line) {
    (void)user;
    fprintf(stderr, "%s\n", line);
}

/* Parses "17,523,4"; returns the count or -1. */
static int parse_ids(const char *text, int32_t **out) {
    int cap = 16, n = 0;
    int32_t *ids = (int32_t *)malloc((size_t)cap * sizeof *ids);
    const char *p = text;
    while (ids && *p) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v > 0x7fffffff) break;
        if (n == cap) {
            int32_t *grown = (int32_t *)realloc(ids, (size_t)(cap *= 2) * sizeof *ids);
            if (!grown) break;
            ids = grown;
        }
        ids[n++] = (int32_t)v;
        p = end;
        if (*p == ',') p++;
        else if (*p) break;
    }
    if (!ids || *p || n == 0) {
        free(ids);
        return -1;
    }
    *out = ids;
    return n;
}

static int positive(const char *text, int *out) {
    char *end;
    long v = strtol(text, &end, 10);
    if (*end || v < 1 || v > 1000000) return -1;
    *out = (int)v;
    return 0;
}

int main(int argc, char **argv) {
    const char *dir = NULL, *prompt = NULL, *ids_text = NULL, *dump = NULL;
    int max_new = 20, ranks = 1, verbose = 0;
    pf_device device = PF_DEVICE_AUTO;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_value = i + 1 < argc;
        if (!strcmp(a, "--ids") && has_value) ids_text = argv[++i];
        else if (!strcmp(a, "-n") && has_value) {
            if (positive(argv[++i], &max_new)) return usage(), 2;
        } else if (!strcmp(a, "--gpus") && has_value) {
            if (positive(argv[++i], &ranks)) return usage(), 2;
        } else if (!strcmp(a, "--device") && has_value) {
            const char *d = argv[++i];
            if (!strcmp(d, "cpu")) device = PF_DEVICE_CPU;
            else if (!strcmp(d, "cuda")) device = PF_DEVICE_CUDA;
            else if (!strcmp(d, "auto")) device = PF_DEVICE_AUTO;
            else return usage(), 2;
        } else if (!strcmp(a, "--dump-logits") && has_value) dump = argv[++i];
        else if (!strcmp(a, "-v")) verbose = 1;
        else if (a[0] == '-' && a[1]) return usage(), 2;
        else if (!dir) dir = a;
        else if (!prompt) prompt = a;
        else return usage(), 2;
    }
    if (!dir || (!prompt && !ids_text) || (prompt && ids_text)) return usage(), 2;

    pf_load_options lo = pf_load_options_init();
    lo.log = print_log;
    pf_model *model = NULL;
    int status = 1;
    int32_t *ids = NULL, *out = NULL;
    float *logits = NULL;
    int n_ids = 0;
    pf_result r = pf_load(dir, &lo, &model);
    if (r) {
        fprintf(stderr, "generate: %s: %s\n", pf_result_string(r), pf_error_message(model));
        goto done;
    }
    if (ids_text) {
        n_ids = parse_ids(ids_text, &ids);
        if (n_ids < 0) {
            fprintf(stderr, "generate: --ids wants comma-separated non-negative integers\n");
            goto done;
        }
    } else {
        pf_tokenizer *tok = pf_model_tokenizer(model);
        size_t n = 0;
        if (!tok) {
            fprintf(stderr, "generate: %s has no tokenizer; use --ids\n", dir);
            goto done;
        }
        pf_tokenize(tok, prompt, strlen(prompt), NULL, 0, &n); /* count first */
        ids = (int32_t *)malloc((n ? n : 1) * sizeof *ids);
        if (!ids || (r = pf_tokenize(tok, prompt, strlen(prompt), ids, n, &n))) {
            fprintf(stderr, "generate: cannot tokenize the prompt: %s\n", pf_result_string(r));
            goto done;
        }
        n_ids = (int)n;
        if (n_ids == 0) {
            fprintf(stderr, "generate: the prompt is empty\n");
            goto done;
        }
    }

    pf_parallel_options po = pf_parallel_options_init();
    po.device = device;
    po.verbose = verbose;
    if ((r = pf_parallelize(model, ranks, &po))) {
        fprintf(stderr, "generate: %s: %s\n", pf_result_string(r), pf_error_message(model));
        goto done;
    }
    pf_model_info info = pf_get_info(model);
    if (dump) {
        logits = (float *)malloc((size_t)n_ids * info.vocab_size * sizeof *logits);
        if (!logits || (r = pf_forward(model, ids, 1, n_ids, logits))) {
            fprintf(stderr, "generate: %s: %s\n", pf_result_string(r), pf_error_message(model));
            goto done;
        }
        FILE *f = fopen(dump, "wb");
        size_t count = (size_t)n_ids * info.vocab_size;
        if (!f || fwrite(logits, sizeof *logits, count, f) != count || fclose(f)) {
            fprintf(stderr, "generate: cannot write %s\n", dump);
            goto done;
        }
    }
    pf_generate_options go = pf_generate_options_init();
    go.max_new_tokens = max_new;
    out = (int32_t *)malloc((size_t)max_new * sizeof *out);
    int n_out = 0;
    if (!out || (r = pf_generate(model, ids, n_ids, &go, out, max_new, &n_out))) {
        fprintf(stderr, "generate: %s: %s\n", pf_result_string(r), pf_error_message(model));
        goto done;
    }
    if (ids_text) {
        for (int i = 0; i < n_out; i++) printf("%s%d", i ? "," : "", (int)out[i]);
        printf("\n");
    } else {
        pf_tokenizer *tok = pf_model_tokenizer(model);
        size_t len = 0;
        pf_detokenize(tok, out, (size_t)n_out, NULL, 0, &len);
        char *text = (char *)malloc(len + 1);
        if (!text || pf_detokenize(tok, out, (size_t)n_out, text, len + 1, &len)) {
            free(text);
            fprintf(stderr, "generate: cannot decode the output\n");
            goto done;
        }
        printf("%s%.*s\n", prompt, (int)len, text);
        free(text);
    }
    status = 0;
done:
    free(ids);
    free(out);
    free(logits);
    pf_free(model);
    return status;
}
