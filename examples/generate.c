/* generate: continue a prompt with a Hugging Face model directory, on N ranks.

   build/generate MODEL_DIR [options] [PROMPT]
     --ids 17,523,4          token ids instead of a text prompt; the last line printed is then
                             the generated ids, comma-separated (the new ids only)
     --batch-file F          one prompt per line (text, or ids with --ids-lines); one output line
                             per returned sequence
     -n N                    max new tokens (default 20)
     --gpus N                number of ranks (devices) (default 1)
     --device D              cpu, cuda or auto (default auto)
     --dtype T               how ranks store weights: f32, f16 or bf16 (default f32 on the CPU,
                             f16 on CUDA); compute is fp32 on the CPU either way
     --dump-logits F         write the prompt's logits, float32 little-endian, [n_prompt][vocab]
     --beams N               beam search with N beams
     --return N              sequences returned per prompt (beams or sampling)
     --no-repeat-ngram N     never repeat an n-gram of this size
     --sample                sample instead of choosing the most likely token
     --temperature T, --top-k K, --top-p P, --repetition-penalty R, --seed S
     -v                      print the per-rank memory table
   With a text prompt and no beams, tokens are printed as they are chosen. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../parallelformers.h"

static void usage(void) {
    fprintf(stderr,
            "usage: generate MODEL_DIR [--ids 1,2,3 | --batch-file FILE [--ids-lines]] [-n N] [--gpus N]\n"
            "                [--device cpu|cuda|auto] [--dtype f32|f16|bf16] [--dump-logits FILE] [--beams N]\n"
            "                [--return N]"
            " [--no-repeat-ngram N] [--sample] [--temperature T] [--top-k K] [--top-p P]\n"
            "                [--repetition-penalty R] [--seed S] [-v] [PROMPT]\n");
}

static void print_log(void *user, const char *line) {
    (void)user;
    fprintf(stderr, "%s\n", line);
}

static int print_piece(void *user, int row, int32_t token, const char *text, size_t len) {
    (void)user, (void)row, (void)token;
    if (text) fwrite(text, 1, len, stdout);
    fflush(stdout);
    return 0;
}

/* Parses "17,523,4"; returns the count or -1. */
static int parse_ids(const char *text, int32_t **out) {
    int cap = 16, n = 0;
    int32_t *ids = (int32_t *)malloc((size_t)cap * sizeof *ids);
    const char *p = text;
    while (ids && *p && *p != '\n') {
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
        else if (*p && *p != '\n') break;
    }
    if (!ids || (*p && *p != '\n') || n == 0) {
        free(ids);
        return -1;
    }
    *out = ids;
    return n;
}

static int number(const char *text, double lo, double hi, double *out) {
    char *end;
    double v = strtod(text, &end);
    if (*end || !(v >= lo && v <= hi)) return -1;
    *out = v;
    return 0;
}

/* Tokenizes a text prompt as transformers' tokenizer(text) would. */
static int tokenize(pf_model *model, const char *text, int32_t **out) {
    pf_tokenizer *tok = pf_model_tokenizer(model);
    size_t n = 0;
    if (!tok) return -1;
    pf_tokenize_special(tok, text, strlen(text), NULL, 0, &n);
    *out = (int32_t *)malloc((n ? n : 1) * sizeof **out);
    if (!*out || pf_tokenize_special(tok, text, strlen(text), *out, n, &n) || n == 0) return -1;
    return (int)n;
}

int main(int argc, char **argv) {
    const char *dir = NULL, *prompt = NULL, *ids_text = NULL, *dump = NULL, *batch_file = NULL;
    int ranks = 1, verbose = 0, ids_lines = 0;
    pf_device device = PF_DEVICE_AUTO;
    pf_dtype dtype = PF_DTYPE_AUTO;
    pf_generate_options go = pf_generate_options_init();
    go.max_new_tokens = 20;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        double v = 0;
        int has_value = i + 1 < argc;
#define VALUE(lo, hi) (has_value && number(argv[++i], lo, hi, &v) == 0)
        if (!strcmp(a, "--ids") && has_value) ids_text = argv[++i];
        else if (!strcmp(a, "--batch-file") && has_value) batch_file = argv[++i];
        else if (!strcmp(a, "--ids-lines")) ids_lines = 1;
        else if (!strcmp(a, "-n") && VALUE(1, 1e6)) go.max_new_tokens = (int)v;
        else if (!strcmp(a, "--gpus") && VALUE(1, 1e6)) ranks = (int)v;
        else if (!strcmp(a, "--beams") && VALUE(1, 1e4)) go.num_beams = (int)v;
        else if (!strcmp(a, "--return") && VALUE(1, 1e4)) go.num_return_sequences = (int)v;
        else if (!strcmp(a, "--no-repeat-ngram") && VALUE(0, 1e6)) go.no_repeat_ngram_size = (int)v;
        else if (!strcmp(a, "--sample")) go.do_sample = 1;
        else if (!strcmp(a, "--temperature") && VALUE(1e-6, 1e6)) go.temperature = (float)v;
        else if (!strcmp(a, "--top-k") && VALUE(0, 1e9)) go.top_k = (int)v;
        else if (!strcmp(a, "--top-p") && VALUE(1e-9, 1)) go.top_p = (float)v;
        else if (!strcmp(a, "--repetition-penalty") && VALUE(1e-6, 1e6)) go.repetition_penalty = (float)v;
        else if (!strcmp(a, "--seed") && VALUE(0, 9007199254740992.0)) go.seed = (uint64_t)v;
        else if (!strcmp(a, "--device") && has_value) {
            const char *d = argv[++i];
            if (!strcmp(d, "cpu")) device = PF_DEVICE_CPU;
            else if (!strcmp(d, "cuda")) device = PF_DEVICE_CUDA;
            else if (!strcmp(d, "auto")) device = PF_DEVICE_AUTO;
            else return usage(), 2;
        } else if (!strcmp(a, "--dtype") && has_value) {
            const char *t = argv[++i];
            if (!strcmp(t, "f32")) dtype = PF_DTYPE_F32;
            else if (!strcmp(t, "f16")) dtype = PF_DTYPE_F16;
            else if (!strcmp(t, "bf16")) dtype = PF_DTYPE_BF16;
            else return usage(), 2;
        } else if (!strcmp(a, "--dump-logits") && has_value) dump = argv[++i];
        else if (!strcmp(a, "-v")) verbose = 1;
        else if (a[0] == '-' && a[1]) return usage(), 2;
        else if (!dir) dir = a;
        else if (!prompt) prompt = a;
        else return usage(), 2;
#undef VALUE
    }
    if (!dir || (!!prompt + !!ids_text + !!batch_file) != 1) return usage(), 2;

    pf_load_options lo = pf_load_options_init();
    lo.log = print_log;
    pf_model *model = NULL;
    int status = 1, batch = 0, text_mode = !ids_text && !(batch_file && ids_lines);
    int32_t **prompts = NULL;
    int *lengths = NULL;
    float *logits = NULL;
    pf_generation result;
    memset(&result, 0, sizeof result);
    pf_result r = pf_load(dir, &lo, &model);
    if (r) {
        fprintf(stderr, "generate: %s: %s\n", pf_result_string(r), pf_error_message(model));
        goto done;
    }
    if (text_mode && !pf_model_tokenizer(model)) {
        fprintf(stderr, "generate: %s has no tokenizer; use --ids\n", dir);
        goto done;
    }

    /* the prompts: one from the command line, or one per line of the batch file */
    char *file_text = NULL;
    if (batch_file) {
        FILE *f = fopen(batch_file, "rb");
        long size = -1;
        if (f && !fseek(f, 0, SEEK_END) && (size = ftell(f)) >= 0 && !fseek(f, 0, SEEK_SET) &&
            (file_text = (char *)malloc((size_t)size + 1)) && fread(file_text, 1, (size_t)size, f) == (size_t)size)
            file_text[size] = 0;
        else
            size = -1;
        if (f) fclose(f);
        if (size < 0) {
            fprintf(stderr, "generate: cannot read %s\n", batch_file);
            free(file_text);
            goto done;
        }
    }
    for (int pass = 0; pass < 2; pass++) { /* count, then fill */
        int n = 0;
        const char *line = batch_file ? file_text : ids_text ? ids_text : prompt;
        while (line && *line) {
            const char *end = batch_file ? strchr(line, '\n') : NULL;
            size_t len = end ? (size_t)(end - line) : strlen(line);
            if (len) {
                if (pass) {
                    char *copy = (char *)malloc(len + 1);
                    if (!copy) break;
                    memcpy(copy, line, len);
                    copy[len] = 0;
                    lengths[n] = text_mode ? tokenize(model, copy, &prompts[n]) : parse_ids(copy, &prompts[n]);
                    free(copy);
                    if (lengths[n] < 0) {
                        fprintf(stderr, "generate: prompt %d: %s\n", n + 1,
                                text_mode ? "cannot tokenize it" : "--ids wants comma-separated non-negative integers");
                        free(file_text);
                        batch = n + 1;
                        goto done;
                    }
                }
                n++;
            }
            line = end ? end + 1 : NULL;
        }
        if (!pass) {
            batch = n;
            prompts = (int32_t **)calloc((size_t)(n ? n : 1), sizeof *prompts);
            lengths = (int *)calloc((size_t)(n ? n : 1), sizeof *lengths);
            if (!n || !prompts || !lengths) {
                fprintf(stderr, "generate: no prompt\n");
                free(file_text);
                goto done;
            }
        }
    }
    free(file_text);

    pf_parallel_options po = pf_parallel_options_init();
    po.device = device;
    po.dtype = dtype;
    po.verbose = verbose;
    po.max_batch = batch * (go.num_beams > 1 ? go.num_beams : go.num_return_sequences);
    if ((r = pf_parallelize(model, ranks, &po))) {
        fprintf(stderr, "generate: %s: %s\n", pf_result_string(r), pf_error_message(model));
        goto done;
    }
    pf_model_info info = pf_get_info(model);
    if (dump) {
        logits = (float *)malloc((size_t)lengths[0] * info.vocab_size * sizeof *logits);
        if (!logits || (r = pf_forward(model, prompts[0], 1, lengths[0], logits))) {
            fprintf(stderr, "generate: %s: %s\n", pf_result_string(r), pf_error_message(model));
            goto done;
        }
        FILE *f = fopen(dump, "wb");
        size_t count = (size_t)lengths[0] * info.vocab_size;
        if (!f || fwrite(logits, sizeof *logits, count, f) != count || fclose(f)) {
            fprintf(stderr, "generate: cannot write %s\n", dump);
            goto done;
        }
    }
    int streaming = text_mode && !batch_file && go.num_beams == 1 && go.num_return_sequences == 1;
    if (streaming) {
        go.stream = print_piece;
        fputs(prompt, stdout);
    }
    if ((r = pf_generate_batch(model, (const int32_t *const *)prompts, lengths, batch, &go, &result))) {
        fprintf(stderr, "generate: %s: %s\n", pf_result_string(r), pf_error_message(model));
        goto done;
    }
    for (int i = 0; i < result.num_sequences; i++) {
        if (streaming) {
            printf("\n");
        } else if (!text_mode) {
            for (int t = 0; t < result.lengths[i]; t++) printf("%s%d", t ? "," : "", (int)result.tokens[i][t]);
            printf("\n");
        } else {
            pf_tokenizer *tok = pf_model_tokenizer(model);
            size_t len = 0;
            pf_detokenize(tok, result.tokens[i], (size_t)result.lengths[i], NULL, 0, &len);
            char *text = (char *)malloc(len + 1);
            if (!text || pf_detokenize(tok, result.tokens[i], (size_t)result.lengths[i], text, len + 1, &len)) {
                free(text);
                fprintf(stderr, "generate: cannot decode the output\n");
                goto done;
            }
            text[len] = 0;
            for (char *c = text; *c; c++) /* one line per sequence */
                if (*c == '\n') *c = ' ';
            printf("%s%s\n", batch_file ? "" : prompt, text);
            free(text);
        }
    }
    status = 0;
done:
    for (int i = 0; prompts && i < batch; i++) free(prompts[i]);
    free(prompts);
    free(lengths);
    free(logits);
    pf_generation_free(&result);
    pf_free(model);
    return status;
}
