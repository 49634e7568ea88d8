/* tokenize: a model's tokenizer from the command line, as transformers' tokenizer(text) and
   decode(ids) give them: ids of a text (one line, comma-separated), each token with its text
   (--pieces), a count, or the text of ids (--decode). Reads a model directory's tokenizer files
   (tokenizer.json, or the older ones pf_tokenizer_load reads) or a GGUF file's vocabulary.

   tokenize MODEL_DIR|FILE.gguf [--no-special] [--pieces|--count] TEXT
   tokenize MODEL_DIR|FILE.gguf [--no-special] [--pieces|--count] -f FILE
   tokenize MODEL_DIR|FILE.gguf --decode 1,2,3 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../parallelformers.h"
#include "media.h"

static void usage(FILE *to) {
    fprintf(to, "usage: tokenize MODEL_DIR|FILE.gguf [options] TEXT\n"
                "       tokenize MODEL_DIR|FILE.gguf [options] -f FILE\n"
                "       tokenize MODEL_DIR|FILE.gguf --decode 1,2,3\n"
                "Prints the ids of TEXT as the model's tokenizer gives them (transformers' tokenizer(text)).\n\n"
                "options:\n"
                "      --no-special    leave out the special tokens the tokenizer adds (add_special_tokens=False)\n"
                "      --pieces        one line per token: its id, a tab, the text it adds (escaped as C does)\n"
                "      --count         print the number of ids only\n"
                "  -f, --file FILE     tokenize this file's text\n"
                "      --decode IDS    print the text of comma-separated ids instead\n"
                "  -h, --help          print this help and exit\n");
}

/* "1,2,3" into *ids; the count, or -1 on anything but comma-separated ids in 0..INT32_MAX. */
static int parse_ids(const char *text, int32_t **ids) {
    int n = 1;
    for (const char *c = text; *c; c++) n += *c == ',';
    *ids = (int32_t *)malloc((size_t)n * sizeof **ids);
    if (!*ids) return -1;
    const char *at = text;
    for (int i = 0; i < n; i++) {
        char *end;
        errno = 0;
        long v = strtol(at, &end, 10);
        if (end == at || errno || v < 0 || v > INT32_MAX || (*end != ',' && *end != 0) || (*end == 0 && i != n - 1)) return -1;
        (*ids)[i] = (int32_t)v;
        at = end + 1;
    }
    return n;
}

/* A token's text with C's escapes for bytes that are not printable ASCII. */
static void print_escaped(const char *text, size_t len) {
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == '\\') fputs("\\\\", stdout);
        else if (c == '\n') fputs("\\n", stdout);
        else if (c == '\t') fputs("\\t", stdout);
        else if (c < 0x20 || c == 0x7f) printf("\\x%02x", c);
        else putchar(c);
    }
}

/* The ids' text (NUL-terminated, malloc'd), or NULL with a message printed. */
static char *decode(const pf_tokenizer *tok, const int32_t *ids, size_t n, size_t *len) {
    pf_result r = pf_detokenize(tok, ids, n, NULL, 0, len);
    char *text = r && r != PF_ERROR_BUFFER_TOO_SMALL ? NULL : (char *)malloc(*len + 1);
    if (text && pf_detokenize(tok, ids, n, text, *len + 1, len) == PF_OK) return text;
    fprintf(stderr, "tokenize: %s\n", r && r != PF_ERROR_BUFFER_TOO_SMALL ? "an id is not in the vocabulary" : "out of memory");
    free(text);
    return NULL;
}

int main(int argc, char **argv) {
    const char *source = NULL, *text = NULL, *file = NULL, *decode_ids = NULL;
    int no_special = 0, pieces = 0, count = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int value = i + 1 < argc;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) return usage(stdout), 0;
        else if (!strcmp(a, "--no-special")) no_special = 1;
        else if (!strcmp(a, "--pieces")) pieces = 1;
        else if (!strcmp(a, "--count")) count = 1;
        else if ((!strcmp(a, "-f") || !strcmp(a, "--file")) && value) file = argv[++i];
        else if (!strcmp(a, "--decode") && value) decode_ids = argv[++i];
        else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "tokenize: unknown option or missing value: \"%s\" (tokenize --help lists them)\n", a);
            return 2;
        } else if (!source) source = a;
        else if (!text) text = a;
        else {
            fprintf(stderr, "tokenize: unexpected argument \"%s\" (quote a text that has spaces)\n", a);
            return 2;
        }
    }
    const char *wrong = !source                          ? "no MODEL_DIR (tokenize --help shows the usage)"
                        : !!text + !!file + !!decode_ids != 1 ? "give one of TEXT, -f FILE and --decode IDS"
                        : decode_ids && (pieces || count || no_special) ? "--decode takes no other option"
                        : pieces && count                 ? "give --pieces or --count, not both"
                                                          : NULL;
    if (wrong) {
        fprintf(stderr, "tokenize: %s\n", wrong);
        return 2;
    }
    /* a GGUF file's vocabulary comes with its model; a directory's tokenizer loads alone */
    size_t source_len = strlen(source);
    int gguf = source_len > 5 && !strcmp(source + source_len - 5, ".gguf");
    pf_model *model = NULL;
    pf_tokenizer *owned = NULL;
    const pf_tokenizer *tok = NULL;
    char error[1024] = "";
    pf_result r;
    if (gguf) {
        if ((r = pf_load(source, NULL, &model)) == PF_OK && !(tok = pf_model_tokenizer(model)))
            snprintf(error, sizeof error, "the file has no tokenizer");
        else if (r)
            snprintf(error, sizeof error, "%s", pf_error_message(model));
    } else if ((r = pf_tokenizer_load(source, &owned, error, sizeof error)) == PF_OK) {
        tok = owned;
    }
    int status = 1;
    char *file_text = NULL, *out = NULL;
    int32_t *ids = NULL;
    if (!tok) {
        fprintf(stderr, "tokenize: %s: %s\n", source, error);
        goto done;
    }
    if (decode_ids) {
        int n = parse_ids(decode_ids, &ids);
        size_t len = 0;
        if (n < 0) {
            fprintf(stderr, "tokenize: --decode wants comma-separated non-negative integers\n");
            status = 2;
        } else if ((out = decode(tok, ids, (size_t)n, &len))) {
            fwrite(out, 1, len, stdout);
            putchar('\n');
            status = 0;
        }
        goto done;
    }
    if (file && !(text = file_text = media_read_text(file, MEDIA_MAX_FILE_BYTES))) {
        fprintf(stderr, "tokenize: cannot read %s\n", file);
        goto done;
    }
    pf_result (*encode)(const pf_tokenizer *, const char *, size_t, int32_t *, size_t, size_t *) =
        no_special ? pf_tokenize : pf_tokenize_special;
    size_t n = 0;
    r = encode(tok, text, strlen(text), NULL, 0, &n);
    if ((r && r != PF_ERROR_BUFFER_TOO_SMALL) || !(ids = (int32_t *)malloc((n ? n : 1) * sizeof *ids)) ||
        encode(tok, text, strlen(text), ids, n, &n)) {
        fprintf(stderr, "tokenize: cannot tokenize the text (%s)\n", pf_result_string(r ? r : PF_ERROR_OUT_OF_MEMORY));
        goto done;
    }
    if (count) {
        printf("%zu\n", n);
    } else if (pieces) { /* what each token adds to the text of those before it (its leading space kept) */
        size_t before = 0;
        for (size_t i = 0; i < n; i++) {
            size_t len = 0;
            char *upto = decode(tok, ids, i + 1, &len);
            if (!upto) goto done;
            printf("%d\t", (int)ids[i]);
            if (len >= before) print_escaped(upto + before, len - before);
            putchar('\n');
            before = len;
            free(upto);
        }
    } else {
        for (size_t i = 0; i < n; i++) printf("%s%d", i ? "," : "", (int)ids[i]);
        putchar('\n');
    }
    status = 0;
done:
    free(ids);
    free(out);
    free(file_text);
    pf_tokenizer_free(owned);
    pf_free(model);
    return status;
}
