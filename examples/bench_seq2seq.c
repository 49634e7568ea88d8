/* bench_seq2seq: an encoder-decoder's speed on N CPU ranks, against transformers in the same run.

   build/bench_seq2seq DIR [--ranks 1,2] [--new 64] [--runs 3] [--reference FILE]

   DIR holds a T5-base-shaped checkpoint and bench_source.txt (the source ids), both written by
   bench/seq2seq_reference.py, whose JSON lines (one per thread count: first_token_s,
   decode_tok_s, tokens) --reference names. For each rank count: the time to the first new token
   (the encoder over the source and the first decoder step, timed in the stream callback), the
   decode rate over the other new tokens (greedy, eos ignored), the bytes per rank, and whether the
   tokens equal transformers' (and 1 rank's); the median of --runs after a warm-up. make bench runs
   both. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../parallelformers.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct clock_state {
    double start, first, last;
    int count;
} clock_state;

static int on_token(void *user, int row, int32_t token, const char *text, size_t text_len) {
    clock_state *c = (clock_state *)user;
    (void)row, (void)token, (void)text, (void)text_len;
    c->last = now();
    if (!c->count++) c->first = c->last;
    return 0;
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Comma-separated ids into out (at most cap); the count. */
static int parse_ids(const char *s, int32_t *out, int cap) {
    int n = 0;
    while (s && *s && n < cap) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s) break;
        out[n++] = (int32_t)v;
        s = *end == ',' ? end + 1 : end;
        while (*s == ' ') s++;
    }
    return n;
}

typedef struct reference_row {
    int threads, num_tokens;
    double first_token_s, decode_tok_s;
    int32_t tokens[1024];
} reference_row;

/* The reference script's JSON lines (the few fields we read, found by name). */
static int read_reference(const char *path, reference_row *rows, int cap) {
    FILE *f = path ? fopen(path, "r") : NULL;
    char line[65536];
    int n = 0;
    while (f && n < cap && fgets(line, sizeof line, f)) {
        reference_row *r = &rows[n];
        const char *t = strstr(line, "\"threads\": "), *a = strstr(line, "\"first_token_s\": "),
                   *d = strstr(line, "\"decode_tok_s\": "), *k = strstr(line, "\"tokens\": [");
        if (!t || !a || !d || !k) continue;
        r->threads = atoi(t + 11);
        r->first_token_s = atof(a + 17);
        r->decode_tok_s = atof(d + 16);
        r->num_tokens = parse_ids(k + 11, r->tokens, 1024);
        n++;
    }
    if (f) fclose(f);
    return n;
}

int main(int argc, char **argv) {
    const char *dir = NULL, *ranks_list = "1,2", *reference_path = NULL;
    int new_tokens = 64, runs = 3;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--ranks") && v) ranks_list = argv[++i];
        else if (!strcmp(a, "--new") && v) new_tokens = atoi(argv[++i]);
        else if (!strcmp(a, "--runs") && v) runs = atoi(argv[++i]);
        else if (!strcmp(a, "--reference") && v) reference_path = argv[++i];
        else if (a[0] != '-' && !dir) dir = a;
        else {
            fprintf(stderr, "usage: bench_seq2seq DIR [--ranks 1,2] [--new N] [--runs N] [--reference FILE]\n");
            return 2;
        }
    }
    if (!dir || new_tokens < 2 || new_tokens > 1024 || runs < 1 || runs > 100) {
        fprintf(stderr, "bench_seq2seq: a directory, --new in 2..1024, --runs in 1..100\n");
        return 2;
    }
    char path[4096], text[65536];
    snprintf(path, sizeof path, "%s/bench_source.txt", dir);
    FILE *f = fopen(path, "r");
    int32_t source[8192];
    int source_len = f && fgets(text, sizeof text, f) ? parse_ids(text, source, 8192) : 0;
    if (f) fclose(f);
    if (source_len < 1) {
        fprintf(stderr, "bench_seq2seq: no source ids in %s (bench/seq2seq_reference.py writes them)\n", path);
        return 1;
    }
    static reference_row refs[8];
    int num_refs = read_reference(reference_path, refs, 8);
    printf("T5-base shape (%s): a source of %d ids, %d new tokens (greedy, eos ignored), median of %d runs\n", dir,
           source_len, new_tokens, runs);
    printf("| ranks | load s | first token s | decode tok/s | MiB/rank | tokens = 1 rank | tokens = transformers | "
           "transformers first token s | transformers decode tok/s | ours/ref decode |\n"
           "|---|---|---|---|---|---|---|---|---|---|\n");
    int32_t first_rank_tokens[1024];
    int first_rank_count = -1, status = 0;
    for (const char *p = ranks_list; *p;) {
        int ranks = atoi(p);
        while (*p && *p != ',') p++;
        if (*p == ',') p++;
        if (ranks < 1) continue;
        pf_model *m = NULL;
        pf_load_options lo = pf_load_options_init();
        lo.skip_tokenizer = 1;
        double t0 = now();
        pf_result r = pf_load(dir, &lo, &m);
        pf_parallel_options po = pf_parallel_options_init();
        po.device = PF_DEVICE_CPU;
        po.max_sequence_length = source_len > new_tokens + 1 ? source_len : new_tokens + 1;
        if (!r) r = pf_parallelize(m, ranks, &po);
        double load = now() - t0;
        if (r) {
            fprintf(stderr, "bench_seq2seq: %d ranks: %s: %s\n", ranks, pf_result_string(r), pf_error_message(m));
            pf_free(m);
            status = 1;
            continue;
        }
        double firsts[100], decodes[100];
        int32_t tokens[1024];
        int count = 0;
        for (int k = -1; k < runs && !r; k++) { /* k = -1: the warm-up */
            clock_state c = {0, 0, 0, 0};
            pf_generate_options o = pf_generate_options_init();
            o.max_new_tokens = new_tokens;
            o.ignore_eos = 1;
            o.stream = on_token; /* timing: it also keeps the request to itself */
            o.stream_user = &c;
            c.start = now();
            r = pf_generate(m, source, source_len, &o, tokens, new_tokens, &count);
            if (k >= 0) {
                firsts[k] = c.first - c.start;
                decodes[k] = (c.count - 1) / (c.last - c.first);
            }
        }
        if (r) {
            fprintf(stderr, "bench_seq2seq: %d ranks: %s: %s\n", ranks, pf_result_string(r), pf_error_message(m));
            pf_free(m);
            status = 1;
            continue;
        }
        qsort(firsts, (size_t)runs, sizeof(double), compare);
        qsort(decodes, (size_t)runs, sizeof(double), compare);
        size_t most = 0;
        for (int k = 0; k < ranks; k++)
            if (pf_memory_allocated(m, k) > most) most = pf_memory_allocated(m, k);
        if (first_rank_count < 0) {
            first_rank_count = count;
            memcpy(first_rank_tokens, tokens, (size_t)count * sizeof(int32_t));
        }
        int same_ranks = count == first_rank_count && !memcmp(tokens, first_rank_tokens, (size_t)count * sizeof(int32_t));
        const reference_row *ref = NULL;
        for (int k = 0; k < num_refs; k++)
            if (refs[k].threads == ranks) ref = &refs[k];
        char same_ref[16] = "-", ref_first[32] = "-", ref_decode[32] = "-", ratio[32] = "-";
        if (ref) {
            int same = ref->num_tokens == count && !memcmp(ref->tokens, tokens, (size_t)count * sizeof(int32_t));
            snprintf(same_ref, sizeof same_ref, "%s", same ? "yes" : "NO");
            snprintf(ref_first, sizeof ref_first, "%.3f", ref->first_token_s);
            snprintf(ref_decode, sizeof ref_decode, "%.1f", ref->decode_tok_s);
            snprintf(ratio, sizeof ratio, "%.2fx", decodes[runs / 2] / ref->decode_tok_s);
            if (!same) status = 1;
        }
        printf("| %d | %.2f | %.3f | %.1f | %.0f | %s | %s | %s | %s | %s |\n", ranks, load, firsts[runs / 2],
               decodes[runs / 2], most / 1048576.0, same_ranks ? "yes" : "NO", same_ref, ref_first, ref_decode, ratio);
        if (!same_ranks) status = 1;
        pf_free(m);
    }
    return status;
}
