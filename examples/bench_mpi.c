/* bench_mpi: prefill and decode of one prompt with the ranks spread over processes (make MPI=1;
   make bench-mpi runs it on the 1B LLaMA shape that build/bench writes). Every process runs it
   (SPMD); process 0 prints one row. With one process the ranks are threads of it alone (no MPI in
   the requests), the figure the processes' rows are compared with.
   With --requests R, process 0 drives (the others follow) and R threads of it each generate at
   once (their own prompts; continuous batching shares the steps, and in pipeline stages runs them
   as micro-batches): the row is then the decode throughput of all of them together, new tokens
   of every request over the round's time.
     mpirun -np P build/mpi/bench_mpi MODEL_DIR RANKS_PER_PROCESS [--prompt N] [--new N] [--runs N]
                                      [--stages S] [--dtype f32|q8] [--prefill-chunk N] [--requests R] */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <pthread.h>
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

/* The time each new token arrived (the stream callback's). */
typedef struct clock_marks {
    double *times;
    int n, room;
} clock_marks;

static int on_token(void *user, int row, int32_t token, const char *text, size_t text_len) {
    (void)row, (void)token, (void)text, (void)text_len;
    clock_marks *c = (clock_marks *)user;
    if (c->n < c->room) c->times[c->n++] = now();
    return 0;
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One of --requests' concurrent requests. */
typedef struct request_thread {
    pf_model *model;
    const int32_t *ids;
    int prompt, new_tokens, got;
    int32_t *out;
    pf_result result;
} request_thread;

static void *request_main(void *arg) {
    request_thread *t = (request_thread *)arg;
    pf_generate_options go = pf_generate_options_init();
    go.ignore_eos = 1;
    go.max_new_tokens = t->new_tokens;
    t->result = pf_generate(t->model, t->ids, t->prompt, &go, t->out, t->new_tokens, &t->got);
    return NULL;
}

/* --requests: rounds of `requests` threads generating at once on process 0 (a warm-up, then the
   timed runs); returns the median tokens per second, or -1 with *r failed. */
static double concurrent_rounds(pf_model *m, int requests, int prompt, int new_tokens, int runs, pf_result *r) {
    int vocab = pf_get_info(m).vocab_size;
    request_thread *t = (request_thread *)calloc((size_t)requests, sizeof *t);
    int32_t *ids = (int32_t *)malloc((size_t)requests * prompt * sizeof(int32_t));
    int32_t *out = (int32_t *)malloc((size_t)requests * new_tokens * sizeof(int32_t));
    pthread_t *threads = (pthread_t *)malloc((size_t)requests * sizeof *threads);
    double rates[64];
    unsigned seed = 4321;
    for (int i = 0; i < requests * prompt; i++) ids[i] = (int32_t)((seed = seed * 1103515245u + 12345u) >> 8) % (vocab - 1) + 1;
    for (int run = -1; !*r && run < runs; run++) {
        double start = now();
        for (int i = 0; i < requests; i++) {
            t[i] = (request_thread){m, ids + (size_t)i * prompt, prompt, run < 0 ? 4 : new_tokens, 0,
                                    out + (size_t)i * new_tokens, PF_OK};
            pthread_create(&threads[i], NULL, request_main, &t[i]);
        }
        for (int i = 0; i < requests; i++) pthread_join(threads[i], NULL);
        double seconds = now() - start;
        for (int i = 0; i < requests && !*r; i++)
            if (t[i].result || t[i].got != t[i].new_tokens) *r = t[i].result ? t[i].result : PF_ERROR_INVALID_ARGUMENT;
        if (run >= 0) rates[run] = (double)requests * new_tokens / seconds;
    }
    free(t), free(ids), free(out), free(threads);
    if (*r) return -1;
    qsort(rates, (size_t)runs, sizeof *rates, compare_doubles);
    return rates[runs / 2];
}

int main(int argc, char **argv) {
    int provided = 0, process = 0, processes = 1;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &process);
    MPI_Comm_size(MPI_COMM_WORLD, &processes);
    if (argc < 3) {
        if (!process)
            fprintf(stderr, "usage: mpirun -np P %s MODEL_DIR RANKS_PER_PROCESS [--prompt N] [--new N] [--runs N] "
                            "[--stages S] [--dtype f32|q8] [--prefill-chunk N] [--requests R]\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    int ranks = atoi(argv[2]), prompt = 128, new_tokens = 32, runs = 3, stages = 0, prefill_chunk = 0, requests = 0;
    pf_dtype dtype = PF_DTYPE_F32;
    for (int i = 3; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--prompt")) prompt = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--new")) new_tokens = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--runs")) runs = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--stages")) stages = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--prefill-chunk")) prefill_chunk = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--requests")) requests = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--dtype")) dtype = !strcmp(argv[i + 1], "q8") ? PF_DTYPE_Q8_0 : PF_DTYPE_F32;
    }
    if (prompt < 1 || new_tokens < 2 || runs < 1 || runs > 64 || requests < 0 || requests > 256) {
        if (!process) fprintf(stderr, "bench_mpi: --prompt >= 1, --new >= 2, --runs 1..64, --requests 0..256\n");
        MPI_Finalize();
        return 2;
    }
    pf_model *m = NULL;
    double t0 = now();
    pf_result r = pf_load(argv[1], NULL, &m);
    pf_parallel_options po = pf_parallel_options_init();
    po.device = PF_DEVICE_CPU;
    po.dtype = dtype;
    po.max_sequence_length = prompt + new_tokens;
    po.across_processes = processes > 1;
    po.pipeline_stages = stages;
    po.prefill_chunk = prefill_chunk; /* 0: the library's default */
    if (requests) {
        po.process_0_drives = processes > 1;
        po.max_batch = requests;
    }
    if (!r) r = pf_parallelize(m, ranks, &po);
    if (requests) { /* process 0 drives, the others follow */
        double rate = -1;
        if (!r && process) r = pf_follow(m);
        else if (!r) rate = concurrent_rounds(m, requests, prompt, new_tokens, runs, &r);
        if (r) fprintf(stderr, "bench_mpi: process %d: %s\n", process, pf_error_message(m));
        else if (!process)
            printf("| %d x %d%s | %d requests x %d + %d | %.2f |\n", processes, ranks,
                   stages > 1 ? (stages == 2 ? ", 2 stages" : ", stages") : "", requests, prompt, new_tokens, rate);
        fflush(stdout);
        pf_free(m);
        MPI_Finalize();
        return r ? 1 : 0;
    }
    double load_s = now() - t0;
    int32_t *ids = (int32_t *)malloc((size_t)prompt * sizeof(int32_t)), *out = (int32_t *)malloc((size_t)new_tokens * sizeof(int32_t));
    double *times = (double *)malloc((size_t)new_tokens * sizeof(double)), prefill[64], decode[64];
    clock_marks marks = {times, 0, new_tokens};
    unsigned seed = 1234;
    int vocab = r ? 2 : pf_get_info(m).vocab_size;
    for (int i = 0; i < prompt; i++) ids[i] = (int32_t)((seed = seed * 1103515245u + 12345u) >> 8) % (vocab - 1) + 1;
    pf_generate_options go = pf_generate_options_init();
    go.ignore_eos = 1;
    go.stream = on_token;
    go.stream_user = &marks;
    for (int run = -1; !r && run < runs; run++) { /* a warm-up, then the timed runs */
        int got = 0;
        go.max_new_tokens = run < 0 ? 4 : new_tokens;
        marks.n = 0;
        double start = now();
        r = pf_generate(m, ids, prompt, &go, out, new_tokens, &got);
        if (!r && got != go.max_new_tokens) {
            if (!process) fprintf(stderr, "bench_mpi: %d tokens, not %d\n", got, go.max_new_tokens);
            r = PF_ERROR_INVALID_ARGUMENT;
        }
        if (r || run < 0) continue;
        prefill[run] = times[0] - start;
        decode[run] = (new_tokens - 1) / (times[new_tokens - 1] - times[0]);
    }
    if (r) {
        fprintf(stderr, "bench_mpi: process %d: %s\n", process, pf_error_message(m));
    } else if (!process) {
        qsort(prefill, (size_t)runs, sizeof *prefill, compare_doubles);
        qsort(decode, (size_t)runs, sizeof *decode, compare_doubles);
        size_t bytes = 0;
        for (int k = 0; k < ranks; k++) bytes += pf_memory_allocated(m, k);
        printf("| %d x %d%s | %d | %.2f | %.1f | %.2f | %.2f | %.1f |\n", processes, ranks,
               stages > 1 ? (stages == 2 ? ", 2 stages" : ", stages") : "", prompt, prefill[runs / 2],
               prompt / prefill[runs / 2], decode[runs / 2], 1000.0 / decode[runs / 2], bytes / 1e9);
        fflush(stdout);
    }
    (void)load_s;
    free(ids), free(out), free(times);
    pf_free(m);
    MPI_Finalize();
    return r ? 1 : 0;
}
