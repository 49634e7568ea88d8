/* bench_batching: what continuous batching gives a server: tokens/s of greedy requests from many
   client threads at once against the same requests from one client, on one model.

   build/bench_batching MODEL_DIR [--clients 16] [--requests 64] [--prompt 32] [--new 32] [--gpus N]

   Each request is a prompt of --prompt random ids and --new new tokens (greedy, eos ignored). One
   client runs all of them one after another; then --clients threads run them at once (each its
   share), the library merging their decode steps. Prints both rates and their ratio, and whether
   every concurrent request's tokens equal the single client's. make bench runs it on the bench's
   GPT-2 checkpoint. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../parallelformers.h"

typedef struct run {
    pf_model *model;
    int first, count, prompt, new_tokens;
    int32_t *tokens; /* [requests][new_tokens] */
    int failures;
} run;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void prompt_of(int request, int length, int vocab, int32_t *ids) {
    unsigned x = 2654435761u * (unsigned)(request + 1);
    for (int i = 0; i < length; i++) {
        x = x * 1103515245u + 12345u;
        ids[i] = (int32_t)((x >> 8) % (unsigned)vocab);
    }
}

static void *client(void *arg) {
    run *c = (run *)arg;
    int vocab = pf_get_info(c->model).vocab_size;
    int32_t *ids = (int32_t *)malloc((size_t)c->prompt * sizeof(int32_t));
    pf_generate_options o = pf_generate_options_init();
    o.max_new_tokens = c->new_tokens;
    o.ignore_eos = 1;
    for (int k = c->first; ids && k < c->first + c->count; k++) {
        int n = 0;
        prompt_of(k, c->prompt, vocab, ids);
        if (pf_generate(c->model, ids, c->prompt, &o, c->tokens + (size_t)k * c->new_tokens, c->new_tokens, &n) ||
            n != c->new_tokens)
            c->failures++;
    }
    free(ids);
    return NULL;
}

int main(int argc, char **argv) {
    const char *dir = NULL;
    int clients = 16, requests = 64, prompt = 32, new_tokens = 32, gpus = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int *target = !strcmp(a, "--clients") ? &clients : !strcmp(a, "--requests") ? &requests
                      : !strcmp(a, "--prompt") ? &prompt : !strcmp(a, "--new") ? &new_tokens
                      : !strcmp(a, "--gpus") ? &gpus : NULL;
        if (target && v) *target = atoi(argv[++i]);
        else if (!target && a[0] != '-') dir = a;
        else {
            fprintf(stderr, "usage: bench_batching MODEL_DIR [--clients N] [--requests N] [--prompt N] [--new N] [--gpus N]\n");
            return 2;
        }
    }
    if (!dir || clients < 1 || requests < clients || prompt < 1 || new_tokens < 1 || gpus < 1) {
        fprintf(stderr, "bench_batching: a model directory, and positive counts (requests >= clients)\n");
        return 2;
    }
    pf_model *m = NULL;
    pf_load_options lo = pf_load_options_init();
    lo.skip_tokenizer = 1;
    pf_result r = pf_load(dir, &lo, &m);
    pf_parallel_options po = pf_parallel_options_init();
    po.device = PF_DEVICE_CPU;
    po.max_batch = clients;
    po.max_sequence_length = 4 * (prompt + new_tokens); /* room for requests to join at a later clock */
    if (!r) r = pf_parallelize(m, gpus, &po);
    if (r) {
        fprintf(stderr, "bench_batching: %s: %s\n", pf_result_string(r), pf_error_message(m));
        pf_free(m);
        return 1;
    }
    int32_t *alone = (int32_t *)calloc((size_t)requests * new_tokens, sizeof(int32_t));
    int32_t *together = (int32_t *)calloc((size_t)requests * new_tokens, sizeof(int32_t));
    run *runs = (run *)calloc((size_t)clients, sizeof *runs);
    pthread_t *threads = (pthread_t *)calloc((size_t)clients, sizeof *threads);
    if (!alone || !together || !runs || !threads) return 1;
    run one = {m, 0, requests, prompt, new_tokens, alone, 0};
    double t0 = now();
    client(&one);
    double single = now() - t0;
    t0 = now();
    for (int c = 0; c < clients; c++) {
        runs[c] = (run){m, c * requests / clients, (c + 1) * requests / clients - c * requests / clients, prompt, new_tokens,
                        together, 0};
        pthread_create(&threads[c], NULL, client, &runs[c]);
    }
    int failures = one.failures;
    for (int c = 0; c < clients; c++) {
        pthread_join(threads[c], NULL);
        failures += runs[c].failures;
    }
    double many = now() - t0;
    double total = (double)requests * new_tokens;
    int same = !memcmp(alone, together, (size_t)requests * new_tokens * sizeof(int32_t));
    printf("%s on %d CPU rank%s: %d greedy requests of %d prompt + %d new tokens\n", dir, gpus, gpus > 1 ? "s" : "", requests,
           prompt, new_tokens);
    printf("| clients | s | new tokens/s | requests/s |\n|---|---|---|---|\n");
    printf("| 1 | %.2f | %.1f | %.2f |\n", single, total / single, requests / single);
    printf("| %d | %.2f | %.1f | %.2f |\n", clients, many, total / many, requests / many);
    printf("throughput with %d clients: %.2fx one client's; tokens equal: %s; failures: %d\n", clients, single / many,
           same ? "yes" : "NO", failures);
    free(alone), free(together), free(runs), free(threads);
    pf_free(m);
    return failures || !same;
}
