/* embed: sentence embeddings and their cosine similarities with an encoder model (BERT,
   RoBERTa, DistilBERT, sentence-transformers checkpoints such as all-MiniLM-L6-v2), on N ranks.

   build/embed MODEL_DIR [--gpus N] [--device cpu|cuda|auto] [--pooling MODE] [--no-normalize]
               [--max-length N] [--file F [--ids-lines]] [--raw OUT] [SENTENCE...]

   Prints the cosine similarity of every pair of inputs; --raw writes the embeddings as float32
   little-endian [inputs][hidden]. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../parallelformers.h"

#define MAX_INPUTS 4096
#define MAX_LINE (1 << 16)

static void usage(FILE *out) {
    fprintf(out,
            "usage: embed MODEL_DIR [options] [SENTENCE...]\n"
            "  --gpus N         ranks (GPUs, or CPU threads without CUDA); default 0: every GPU, or every core\n"
            "  --device D       cpu, cuda or auto (default auto)\n"
            "  --pooling MODE   mean, cls, max, mean_sqrt_len, weightedmean or lasttoken; default: the\n"
            "                   model's sentence-transformers pooling, else mean\n"
            "  --no-normalize   keep the pooled vectors as they are (default: unit L2 length)\n"
            "  --max-length N   cut each text to N tokens (default: the model's sentence-transformers\n"
            "                   max_seq_length, else its positions; a GGUF file has none)\n"
            "  --file F         one input per line (after the sentences given as arguments)\n"
            "  --ids-lines      with --file: each line is comma-separated token ids, special tokens\n"
            "                   included (no tokenizer involved)\n"
            "  --raw OUT        write the embeddings as float32 little-endian [inputs][hidden]\n"
            "  --help           this text\n");
}

static int parse_pooling(const char *name, pf_pooling *out) {
    static const struct { const char *name; pf_pooling pooling; } modes[] = {
        {"mean", PF_POOLING_MEAN}, {"cls", PF_POOLING_CLS}, {"max", PF_POOLING_MAX},
        {"mean_sqrt_len", PF_POOLING_MEAN_SQRT_LEN}, {"weightedmean", PF_POOLING_WEIGHTED_MEAN},
        {"lasttoken", PF_POOLING_LAST_TOKEN},
    };
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
        if (!strcmp(name, modes[i].name)) {
            *out = modes[i].pooling;
            return 0;
        }
    return -1;
}

/* "1,2,3" into a new array; -1 if malformed. */
static int parse_ids(const char *line, int32_t **ids) {
    int n = 0, cap = 64;
    *ids = (int32_t *)malloc((size_t)cap * sizeof(int32_t));
    for (const char *p = line; *ids && *p && *p != '\n' && *p != '\r';) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v > 2147483647L) return -1;
        if (n == cap) {
            int32_t *grown = (int32_t *)realloc(*ids, (size_t)(cap *= 2) * sizeof(int32_t));
            if (!grown) return -1;
            *ids = grown;
        }
        (*ids)[n++] = (int32_t)v;
        p = *end == ',' ? end + 1 : end;
    }
    return *ids && n > 0 ? n : -1;
}

int main(int argc, char **argv) {
    const char *model_dir = NULL, *file = NULL, *raw = NULL;
    const char *texts[MAX_INPUTS];
    int num_texts = 0, ranks = 0 /* every device */, ids_lines = 0;
    pf_parallel_options po = pf_parallel_options_init();
    pf_embed_options eo = pf_embed_options_init();
    eo.normalize = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_value = i + 1 < argc;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--gpus") && has_value) {
            ranks = atoi(argv[++i]);
            if (ranks < 0 || (ranks == 0 && strcmp(argv[i], "0"))) {
                fprintf(stderr, "embed: --gpus needs a count (0: every device), not %s\n", argv[i]);
                return 2;
            }
        } else if (!strcmp(a, "--device") && has_value) {
            const char *d = argv[++i];
            if (!strcmp(d, "cpu")) po.device = PF_DEVICE_CPU;
            else if (!strcmp(d, "cuda")) po.device = PF_DEVICE_CUDA;
            else if (!strcmp(d, "auto")) po.device = PF_DEVICE_AUTO;
            else {
                fprintf(stderr, "embed: --device takes cpu, cuda or auto, not %s\n", d);
                return 2;
            }
        } else if (!strcmp(a, "--pooling") && has_value) {
            if (parse_pooling(argv[++i], &eo.pooling)) {
                fprintf(stderr, "embed: --pooling takes mean, cls, max, mean_sqrt_len, weightedmean or lasttoken, not %s\n", argv[i]);
                return 2;
            }
        } else if (!strcmp(a, "--no-normalize")) {
            eo.normalize = 0;
        } else if (!strcmp(a, "--max-length") && has_value) {
            eo.max_length = atoi(argv[++i]);
            if (eo.max_length < 1) {
                fprintf(stderr, "embed: --max-length needs a count of tokens, not %s\n", argv[i]);
                return 2;
            }
        } else if (!strcmp(a, "--file") && has_value) {
            file = argv[++i];
        } else if (!strcmp(a, "--ids-lines")) {
            ids_lines = 1;
        } else if (!strcmp(a, "--raw") && has_value) {
            raw = argv[++i];
        } else if (a[0] == '-' && a[1] == '-') {
            fprintf(stderr, "embed: unknown option or missing value: %s (see --help)\n", a);
            return 2;
        } else if (!model_dir) {
            model_dir = a;
        } else if (num_texts < MAX_INPUTS) {
            texts[num_texts++] = a;
        }
    }
    if (!model_dir || (ids_lines && !file)) {
        usage(stderr);
        return 2;
    }

    /* the inputs: texts, or id rows from --file --ids-lines */
    static char *lines[MAX_INPUTS];
    int32_t *id_rows[MAX_INPUTS];
    int lengths[MAX_INPUTS], num_rows = 0, status = 1;
    if (file) {
        FILE *f = fopen(file, "r");
        static char line[MAX_LINE];
        if (!f) {
            fprintf(stderr, "embed: cannot read %s\n", file);
            return 1;
        }
        while (fgets(line, sizeof line, f) && num_texts + num_rows < MAX_INPUTS) {
            size_t len = strcspn(line, "\r\n");
            line[len] = 0;
            if (ids_lines) {
                if (!len) continue;
                lengths[num_rows] = parse_ids(line, &id_rows[num_rows]);
                if (lengths[num_rows] < 0) {
                    fprintf(stderr, "embed: %s: line %d is not comma-separated ids\n", file, num_rows + 1);
                    fclose(f);
                    return 2;
                }
                num_rows++;
            } else {
                lines[num_texts] = strdup(line);
                texts[num_texts] = lines[num_texts];
                num_texts++;
            }
        }
        fclose(f);
    }
    int count = ids_lines ? num_rows : num_texts;
    if (count < 1 || (ids_lines && num_texts)) {
        fprintf(stderr, "embed: give sentences, or --file F (with --ids-lines: ids only)\n");
        return 2;
    }

    pf_model *model = NULL;
    pf_load_options lo = pf_load_options_init();
    lo.skip_tokenizer = ids_lines;
    pf_result r = pf_load(model_dir, &lo, &model);
    po.max_batch = count < 32 ? count : 32;
    if (r == PF_OK) r = pf_parallelize(model, ranks, &po);
    int hidden = r == PF_OK ? pf_get_info(model).hidden_size : 0;
    float *embeddings = r == PF_OK ? (float *)malloc((size_t)count * hidden * sizeof(float)) : NULL;
    if (r == PF_OK && !embeddings) r = PF_ERROR_OUT_OF_MEMORY;
    if (r == PF_OK)
        r = ids_lines ? pf_embed(model, (const int32_t *const *)id_rows, lengths, count, &eo, embeddings)
                      : pf_embed_texts(model, texts, count, &eo, embeddings);
    if (r != PF_OK) {
        fprintf(stderr, "embed: %s\n", model ? pf_error_message(model) : pf_result_string(r));
    } else {
        if (raw) {
            FILE *out = fopen(raw, "wb");
            if (!out || fwrite(embeddings, sizeof(float), (size_t)count * hidden, out) != (size_t)count * hidden) {
                fprintf(stderr, "embed: cannot write %s\n", raw);
                r = PF_ERROR_IO;
            }
            if (out) fclose(out);
        }
        printf("%d inputs, %d dimensions; cosine similarities:\n", count, hidden);
        for (int i = 0; i < count; i++) {
            for (int j = 0; j < count; j++) {
                double ab = 0, aa = 0, bb = 0;
                const float *x = embeddings + (size_t)i * hidden, *y = embeddings + (size_t)j * hidden;
                for (int k = 0; k < hidden; k++) ab += (double)x[k] * y[k], aa += (double)x[k] * x[k], bb += (double)y[k] * y[k];
                printf("%s%7.4f", j ? " " : "", aa > 0 && bb > 0 ? ab / sqrt(aa * bb) : 0.0);
            }
            if (!ids_lines) printf("  %.60s", texts[i]);
            printf("\n");
        }
        status = r == PF_OK ? 0 : 1;
    }
    free(embeddings);
    for (int i = 0; i < num_rows; i++) free(id_rows[i]);
    for (int i = 0; i < num_texts; i++) free(lines[i]);
    pf_free(model);
    return status;
}
