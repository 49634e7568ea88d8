/* layout: a layout model (LayoutLM) on the words of documents and their bounding boxes, on N ranks.

   build/layout MODEL_DIR [--gpus N] [--device cpu|cuda|auto] [--ids] [--end-box V]
                [--hidden OUT] [--logits OUT] FILE

   FILE ("-": standard input) holds a word a line, "WORD x0 y0 x1 y1", the box on the model's
   scale (LayoutLM's processors normalise page coordinates to 0..1000); a blank line ends a
   document, and each document is one row. Each word is tokenized with the model's tokenizer and
   its tokens all take the word's box; the tokenizer's special tokens around the document take
   0,0,0,0 before it and V,V,V,V after it (--end-box, default 1000: [CLS] and [SEP] as
   transformers' LayoutLM examples box them). With --ids each line's first field is a token id
   and the document is its lines' tokens as they are (special tokens included).

   Prints, by the model's head: token classification, "WORD LABEL" for each word (the label of
   its first token); sequence classification, each document's "score label" lines, best first
   (softmax); question answering, each document's best start and end token ("start END").
   --hidden writes the last hidden state [tokens of all documents][hidden], --logits the head's
   logits (per token or per document), float32 little-endian. Errors go to stderr (exit 1; 2 for
   the command line). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../parallelformers.h"

#define MAX_DOCUMENTS 64
#define MAX_TOKENS 4096 /* tokens of one document */
#define MAX_LINE 4096

typedef struct document {
    int32_t ids[MAX_TOKENS], boxes[4 * MAX_TOKENS];
    int length;
    int words, word_start[MAX_TOKENS]; /* where each word's tokens start */
    char *word_text[MAX_TOKENS];
} document;

static int usage(FILE *out) {
    fprintf(out,
            "usage: layout MODEL_DIR [options] FILE\n"
            "  FILE           a word a line, \"WORD x0 y0 x1 y1\"; a blank line ends a document (-: stdin)\n"
            "  --gpus N       ranks (GPUs, or CPU threads without CUDA); default 0: every GPU, or every core\n"
            "  --device D     cpu, cuda or auto (default auto)\n"
            "  --ids          each line's WORD is a token id; no tokenizer, no special tokens added\n"
            "  --end-box V    the box V,V,V,V of the special tokens after the words (default 1000)\n"
            "  --hidden OUT   write the last hidden state as float32 little-endian [tokens][hidden]\n"
            "  --logits OUT   write the head's logits as float32 little-endian\n"
            "  --help         this text\n");
    return out == stdout ? 0 : 2;
}

/* Appends a token and its box to the document; -1 when it is full. */
static int add_token(document *d, int32_t id, const int32_t box[4]) {
    if (d->length == MAX_TOKENS) return -1;
    d->ids[d->length] = id;
    memcpy(d->boxes + 4 * d->length, box, 4 * sizeof(int32_t));
    d->length++;
    return 0;
}

/* The ids of text (specials 1: with the tokenizer's special tokens) into ids[cap]; the count, or -1. */
static int tokenize(const pf_tokenizer *tok, const char *text, int specials, int32_t *ids, int cap) {
    size_t n = 0;
    pf_result r = specials ? pf_tokenize_special(tok, text, strlen(text), ids, (size_t)cap, &n)
                           : pf_tokenize(tok, text, strlen(text), ids, (size_t)cap, &n);
    return r ? -1 : (int)n;
}

/* Adds a document's words: each word's tokens with its box, and around them the special tokens
   the tokenizer adds to a text (those before its ids boxed 0, those after boxed end). */
static int add_words(document *d, const pf_tokenizer *tok, int end) {
    static const int32_t zero[4] = {0, 0, 0, 0};
    int32_t special[64], plain[64];
    int n_special = tokenize(tok, d->word_text[0], 1, special, 64), n_plain = tokenize(tok, d->word_text[0], 0, plain, 64);
    if (n_special < 0 || n_plain < 0 || n_special < n_plain) return -1;
    int before = 0; /* the specials before the word's own ids */
    while (before + n_plain <= n_special && memcmp(special + before, plain, (size_t)n_plain * sizeof(int32_t))) before++;
    if (before + n_plain > n_special) return -1;
    int32_t saved[4 * MAX_TOKENS]; /* the words' boxes, read before the tokens overwrite them */
    int words = d->words;
    memcpy(saved, d->boxes, (size_t)words * 4 * sizeof(int32_t));
    d->length = 0;
    for (int i = 0; i < before; i++)
        if (add_token(d, special[i], zero)) return -1;
    for (int w = 0; w < words; w++) {
        int32_t ids[256];
        int n = tokenize(tok, d->word_text[w], 0, ids, 256);
        if (n < 0) return -1;
        d->word_start[w] = d->length;
        for (int i = 0; i < n; i++)
            if (add_token(d, ids[i], saved + 4 * w)) return -1;
    }
    int32_t end_box[4] = {end, end, end, end};
    for (int i = before + n_plain; i < n_special; i++)
        if (add_token(d, special[i], end_box)) return -1;
    return 0;
}

/* Reads FILE into documents (the words' text and boxes; with ids, the tokens). The count, or -1. */
static int read_documents(FILE *f, int ids, document *docs, int max) {
    char line[MAX_LINE];
    int count = 0;
    while (fgets(line, sizeof line, f)) {
        char *end = line + strcspn(line, "\r\n");
        *end = 0;
        if (line[0] == 0) {
            if (count < max && docs[count].words) count++;
            continue;
        }
        if (count == max) return -1;
        document *d = &docs[count];
        int32_t box[4];
        for (int k = 3; k >= 0; k--) { /* the last four fields, from the end */
            while (end > line && end[-1] == ' ') *--end = 0;
            char *field = end;
            while (field > line && field[-1] != ' ') field--;
            char *stop;
            long v = strtol(field, &stop, 10);
            if (field == end || *stop || v < -2147483647L || v > 2147483647L) return -1;
            box[k] = (int32_t)v;
            end = field;
        }
        while (end > line && end[-1] == ' ') *--end = 0;
        if (end == line || d->words == MAX_TOKENS) return -1;
        d->word_text[d->words] = strdup(line);
        d->word_start[d->words] = d->words;
        memcpy(d->boxes + 4 * d->words, box, sizeof box);
        if (ids) {
            char *stop;
            long id = strtol(line, &stop, 10);
            if (*stop || id < 0 || id > 2147483647L) return -1;
            d->ids[d->words] = (int32_t)id;
            d->length++;
        }
        d->words++;
    }
    if (count < max && docs[count].words) count++;
    return count;
}

static int write_floats(const char *path, const float *x, size_t n) {
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(x, sizeof(float), n, f) == n;
    if (f && fclose(f)) ok = 0;
    if (!ok) fprintf(stderr, "layout: cannot write %s\n", path);
    return ok ? 0 : -1;
}

static int argmax(const float *x, int n, int stride) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[(size_t)i * stride] > x[(size_t)best * stride]) best = i;
    return best;
}

/* What the head gives, printed (see the top of this file). */
static void print_results(const pf_model *model, const pf_encoding *e, document *docs) {
    char fallback[32];
    for (int b = 0; b < e->batch; b++) {
        const float *row = e->logits + (size_t)(e->logits_per_token ? e->offsets[b] : b) * e->num_logits;
        if (e->head == PF_HEAD_TOKEN_CLASSIFICATION) {
            for (int w = 0; w < docs[b].words; w++) {
                int label = argmax(row + (size_t)docs[b].word_start[w] * e->num_logits, e->num_logits, 1);
                snprintf(fallback, sizeof fallback, "LABEL_%d", label);
                printf("%s %s\n", docs[b].word_text[w], pf_label_name(model, label) ? pf_label_name(model, label) : fallback);
            }
        } else if (e->head == PF_HEAD_SEQUENCE_CLASSIFICATION) {
            double max = row[argmax(row, e->num_logits, 1)], sum = 0;
            for (int i = 0; i < e->num_logits; i++) sum += exp(row[i] - max);
            int done[4096] = {0};
            for (int k = 0; k < e->num_logits && k < 4096; k++) { /* best first */
                int best = -1;
                for (int i = 0; i < e->num_logits && i < 4096; i++)
                    if (!done[i] && (best < 0 || row[i] > row[best])) best = i;
                done[best] = 1;
                snprintf(fallback, sizeof fallback, "LABEL_%d", best);
                printf("%.6f %s\n", exp(row[best] - max) / sum, pf_label_name(model, best) ? pf_label_name(model, best) : fallback);
            }
        } else if (e->head == PF_HEAD_QUESTION_ANSWERING) {
            int n = e->offsets[b + 1] - e->offsets[b];
            printf("%d %d\n", argmax(row, n, 2), argmax(row + 1, n, 2));
        }
        if (e->batch > 1 && e->head != PF_HEAD_NONE && b + 1 < e->batch) printf("\n");
    }
}

int main(int argc, char **argv) {
    const char *dir = NULL, *file = NULL, *hidden_path = NULL, *logits_path = NULL;
    int ranks = 0 /* every device */, ids = 0, end_box = 1000;
    pf_parallel_options po = pf_parallel_options_init();
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) return usage(stdout);
        if (!strcmp(a, "--gpus") && v) ranks = atoi(argv[++i]);
        else if (!strcmp(a, "--ids")) ids = 1;
        else if (!strcmp(a, "--end-box") && v) end_box = atoi(argv[++i]);
        else if (!strcmp(a, "--hidden") && v) hidden_path = argv[++i];
        else if (!strcmp(a, "--logits") && v) logits_path = argv[++i];
        else if (!strcmp(a, "--device") && v) {
            po.device = !strcmp(v, "cpu") ? PF_DEVICE_CPU : !strcmp(v, "cuda") ? PF_DEVICE_CUDA : PF_DEVICE_AUTO;
            if (strcmp(v, "cpu") && strcmp(v, "cuda") && strcmp(v, "auto")) return usage(stderr);
            i++;
        } else if ((a[0] != '-' || !strcmp(a, "-")) && !dir) dir = a;
        else if ((a[0] != '-' || !strcmp(a, "-")) && !file) file = a;
        else return usage(stderr);
    }
    if (!dir || !file || ranks < 0) return usage(stderr);
    document *docs = (document *)calloc(MAX_DOCUMENTS, sizeof(document));
    FILE *f = !strcmp(file, "-") ? stdin : fopen(file, "r");
    int count = docs && f ? read_documents(f, ids, docs, MAX_DOCUMENTS) : -1;
    if (f && f != stdin) fclose(f);
    pf_model *model = NULL;
    pf_result r = PF_OK;
    int status = 1;
    if (count < 1) {
        fprintf(stderr, "layout: %s: %s\n", file, !f ? "cannot open" : "not lines of \"WORD x0 y0 x1 y1\" (at most "
                "64 documents of 4096 words)");
    } else if ((r = pf_load(dir, NULL, &model))) {
        fprintf(stderr, "layout: %s\n", pf_error_message(model));
    } else if (!ids && !pf_model_tokenizer(model)) {
        fprintf(stderr, "layout: %s has no tokenizer (--ids takes token ids)\n", dir);
    } else {
        const int32_t *rows[MAX_DOCUMENTS], *boxes[MAX_DOCUMENTS];
        int lengths[MAX_DOCUMENTS];
        for (int b = 0; b < count && !r; b++) {
            if (!ids && add_words(&docs[b], pf_model_tokenizer(model), end_box)) {
                fprintf(stderr, "layout: document %d: a word the tokenizer cannot take, or over %d tokens\n", b, MAX_TOKENS);
                r = PF_ERROR_INVALID_ARGUMENT;
            }
            rows[b] = docs[b].ids, boxes[b] = docs[b].boxes, lengths[b] = docs[b].length;
        }
        po.max_batch = count;
        pf_encoding *e = NULL;
        if (!r && ((r = pf_parallelize(model, ranks, &po)) || (r = pf_encode_layout(model, rows, NULL, boxes, lengths, count, &e))))
            fprintf(stderr, "layout: %s\n", pf_error_message(model));
        if (!r) {
            print_results(model, e, docs);
            size_t tokens = (size_t)e->offsets[e->batch];
            status = 0;
            if (hidden_path && write_floats(hidden_path, e->last_hidden_state, tokens * (size_t)e->hidden_size)) status = 1;
            if (logits_path && !e->logits) fprintf(stderr, "layout: %s has no head: no logits\n", dir), status = 1;
            else if (logits_path &&
                     write_floats(logits_path, e->logits, (e->logits_per_token ? tokens : (size_t)e->batch) * e->num_logits))
                status = 1;
        }
        pf_encoding_free(e);
    }
    for (int b = 0; docs && b < MAX_DOCUMENTS; b++)
        for (int w = 0; w < docs[b].words; w++) free(docs[b].word_text[w]);
    free(docs);
    pf_free(model);
    return status;
}
