/* server: an HTTP server for a model directory, with libmicrohttpd.

   build/server MODEL_DIR [--host 127.0.0.1] [--port 8000] [--gpus N] [--max-tokens N] [--max-n N]
                          [--max-body-bytes N] [--max-prompt-tokens N] [--max-batch N]
                          [--max-connections N] [--max-connections-per-address N]
                          [--request-timeout SECONDS] [--rate-limit REQUESTS_PER_MINUTE]
                          [--device auto|cpu|cuda] [--dtype f32|f16|bf16|q8|q4] [--kv-cache f32|f16|bf16]
                          [--api-key KEY] [--cors ORIGIN] [--alias NAME]

   Routes (README.md's "Serve a model over HTTP" says which fields each takes):
     GET  /generate_text/<text>  the Python parallelformers example: beam search (5 beams,
                                 no-repeat 4-grams, max_length 15; ?max_length=&num_beams=
                                 &no_repeat_ngram_size= change them), {"inputs", "outputs"}
     POST /v1/completions        OpenAI's bodies; a field this server does not implement is
     POST /v1/chat/completions   refused by name unless its value asks for nothing; chat messages
                                 go through the model's chat template, or without one become
                                 "role: content" lines then "assistant:"
     POST /v1/embeddings         text encoders: OpenAI's body, float or base64
     POST /tokenize, /detokenize as llama.cpp's server names them
     GET  /health, GET /v1/models, GET /metrics (Prometheus' text format)
   Each connection has its own thread. Greedy and sampling completions, streamed or not, share the
   model's decode steps (the library's continuous batching, up to --max-batch rows, 16 by
   default); beam search runs one request at a time between them.
   Against clients that hold connections or flood it: at most --max-connections (256) connections,
   --max-connections-per-address (32) from one address, a request's body arriving within
   --request-timeout seconds (10; also the longest a connection may stay silent), and
   --rate-limit requests a minute per address (6000; 0: none), beyond which it answers 429.
   README.md says what it does not defend against.
   Built with make MPI=1 and started by mpirun with several processes, the model's ranks span them
   (--gpus N ranks in each; CPU ranks, or GPUs joined by NCCL with --device cuda): process 0 serves, the others follow its requests
   (pf_parallel_options.process_0_drives, pf_follow) and end when it stops (SIGINT / SIGTERM to
   process 0, whose pid it logs; a signal to mpirun reaches every process too, but Open MPI's
   mpirun kills them after a short grace, which a busy server may exceed):
     mpirun -np 2 build/mpi/server MODEL_DIR --port 8000
   --pipeline-stages S splits the processes into S stages, each with a run of the decoder's layers. */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server_http.h"
#ifdef PF_MPI
#include <mpi.h>
#endif

/* ---- the command line ---- */

static volatile sig_atomic_t stop_requested;
static void on_signal(int sig) { (void)sig, stop_requested = 1; }

static void usage(void) {
    fprintf(stderr, "usage: server MODEL_DIR [--host ADDRESS] [--port N] [--gpus N] [--max-tokens N] [--max-n N]\n"
                    "              [--max-body-bytes N] [--max-prompt-tokens N] [--max-batch N]\n"
                    "              [--max-connections N] [--max-connections-per-address N]\n"
                    "              [--request-timeout SECONDS] [--rate-limit REQUESTS_PER_MINUTE]\n"
                    "              [--device auto|cpu|cuda] [--dtype f32|f16|bf16|q8|q4] [--kv-cache f32|f16|bf16]\n"
                    "              [--api-key KEY] [--cors ORIGIN] [--alias NAME] [--pipeline-stages S (MPI)]\n"
                    "Serves the model over HTTP on ADDRESS:N (default 127.0.0.1:8000); README.md lists the routes.\n"
                    "--api-key (or the environment's PF_SERVER_API_KEY): every route but /health wants\n"
                    "\"Authorization: Bearer KEY\"; --cors: answers carry Access-Control-Allow-Origin: ORIGIN\n"
                    "(\"*\": any) and OPTIONS preflights are answered; --alias: the model's name in answers.\n");
}

/* The index of an option's value among choices, or exits. */
static int option_choice(const char *name, const char *text, const char *const *choices, int count) {
    for (int i = 0; text && i < count; i++)
        if (!strcmp(text, choices[i])) return i;
    fprintf(stderr, "server: %s wants one of", name);
    for (int i = 0; i < count; i++) fprintf(stderr, " %s", choices[i]);
    fprintf(stderr, "\n");
    exit(2);
}

/* A whole-number option value within [lo, hi], or exits. */
static long option_number(const char *name, const char *text, long lo, long hi) {
    char *end = NULL;
    long v = text ? strtol(text, &end, 10) : 0;
    if (!text || end == text || *end || v < lo || v > hi) {
        fprintf(stderr, "server: %s wants an integer from %ld to %ld\n", name, lo, hi);
        exit(2);
    }
    return v;
}

/* The server on process `process` of `processes` (1 without MPI). */
static int serve(int argc, char **argv, int process, int processes) {
    const char *dir = NULL, *host = "127.0.0.1";
    int port = 8000, ranks = 1, stages = 0;
    server *s = &the_server;
    server_defaults(s);
    static const char *const devices[] = {"auto", "cpu", "cuda"}, *const dtypes[] = {"f32", "f16", "bf16", "q8", "q4"};
    static const pf_device device_values[] = {PF_DEVICE_AUTO, PF_DEVICE_CPU, PF_DEVICE_CUDA};
    static const pf_dtype dtype_values[] = {PF_DTYPE_F32, PF_DTYPE_F16, PF_DTYPE_BF16, PF_DTYPE_Q8_0, PF_DTYPE_Q4_0};
    int device = 0, dtype = -1, kv_cache = -1;
    s->api_key = getenv("PF_SERVER_API_KEY");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
        int takes_value = 1;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) return usage(), 0;
        else if (!strcmp(a, "--host")) host = value;
        else if (!strcmp(a, "--port")) port = (int)option_number(a, value, 0, 65535);
        else if (!strcmp(a, "--gpus")) ranks = (int)option_number(a, value, 1, 64);
        else if (!strcmp(a, "--pipeline-stages")) stages = (int)option_number(a, value, 1, 64);
        else if (!strcmp(a, "--max-tokens")) s->limits.max_tokens = (int)option_number(a, value, 1, 1 << 20);
        else if (!strcmp(a, "--max-n")) s->limits.max_n = (int)option_number(a, value, 1, 64);
        else if (!strcmp(a, "--max-body-bytes")) s->max_body_bytes = (size_t)option_number(a, value, 64, 1L << 30);
        else if (!strcmp(a, "--max-prompt-tokens")) s->max_prompt_tokens = (int)option_number(a, value, 1, 1 << 20);
        else if (!strcmp(a, "--max-batch")) s->max_batch = (int)option_number(a, value, 1, 4096);
        else if (!strcmp(a, "--max-connections")) s->max_connections = (unsigned)option_number(a, value, 1, 65536);
        else if (!strcmp(a, "--max-connections-per-address"))
            s->max_connections_per_address = (unsigned)option_number(a, value, 1, 65536);
        else if (!strcmp(a, "--request-timeout")) s->request_timeout_s = (unsigned)option_number(a, value, 1, 3600);
        else if (!strcmp(a, "--rate-limit")) s->rate_per_minute = (int)option_number(a, value, 0, 1000000);
        else if (!strcmp(a, "--token-delay-ms")) s->token_delay_ms = (int)option_number(a, value, 0, 1000);
        else if (!strcmp(a, "--api-key")) s->api_key = value;
        else if (!strcmp(a, "--cors")) s->cors_origin = value;
        else if (!strcmp(a, "--alias")) s->alias = value;
        else if (!strcmp(a, "--device")) device = option_choice(a, value, devices, 3);
        else if (!strcmp(a, "--dtype")) dtype = option_choice(a, value, dtypes, 5);
        else if (!strcmp(a, "--kv-cache")) kv_cache = option_choice(a, value, dtypes, 3);
        else if (a[0] == '-' || dir) return usage(), 2;
        else dir = a, takes_value = 0;
        if (takes_value && !value) return usage(), 2;
        i += takes_value;
    }
    if (!dir) return usage(), 2;

    pf_result r = pf_load(dir, NULL, &s->model);
    if (!r && !(s->tokenizer = pf_model_tokenizer(s->model))) {
        fprintf(stderr, "server: %s has no tokenizer\n", dir);
        pf_free(s->model);
        return 1;
    }
    pf_parallel_options po = pf_parallel_options_init();
    po.max_batch = server_cache_rows(s);
    po.device = device_values[device];
    if (dtype >= 0) po.dtype = dtype_values[dtype];
    if (kv_cache >= 0) po.kv_cache_dtype = dtype_values[kv_cache];
    po.pipeline_stages = stages; /* refused without processes to split */
    if (processes > 1) { /* one group over every process, process 0 taking the requests */
        po.across_processes = 1;
        po.process_0_drives = 1;
        if (po.device == PF_DEVICE_AUTO) po.device = PF_DEVICE_CPU; /* GPUs across processes when asked: --device cuda */
    }
    if (!r) r = pf_parallelize(s->model, ranks, &po);
    if (r) {
        fprintf(stderr, "server: process %d: %s: %s\n", process, pf_result_string(r), pf_error_message(s->model));
        pf_free(s->model);
        return 1;
    }
    if (process > 0) { /* a follower: process 0's requests until it frees the model */
        signal(SIGINT, SIG_IGN); /* mpirun passes a stop on to every process: process 0 ends this one */
        signal(SIGTERM, SIG_IGN);
        r = pf_follow(s->model);
        if (r) fprintf(stderr, "server: process %d: %s: %s\n", process, pf_result_string(r), pf_error_message(s->model));
        else server_log("process %d: process 0 freed the model; stopping", process);
        pf_free(s->model);
        return r ? 1 : 0;
    }
    server_ready(s, dir);

    struct sockaddr_in address;
    memset(&address, 0, sizeof address);
    address.sin_family = AF_INET;
    address.sin_port = htons((uint16_t)port);
    if (!host || inet_pton(AF_INET, host, &address.sin_addr) != 1) {
        fprintf(stderr, "server: --host wants an IPv4 address such as 127.0.0.1\n");
        pf_free(s->model);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    struct MHD_Daemon *daemon = server_start((const struct sockaddr *)&address, 0);
    if (!daemon) {
        fprintf(stderr, "server: cannot listen on %s:%d\n", host, port);
        pf_free(s->model);
        return 1;
    }
    const union MHD_DaemonInfo *bound = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    if (bound && bound->port) port = bound->port; /* --port 0 asks the system for a free one */
    server_log("serving %s on http://%s:%d (%d rank%s)", s->model_name, host, port, ranks * processes,
               ranks * processes == 1 ? "" : "s");
    if (processes > 1) server_log("process 0 of %d: pid %ld (SIGTERM to it stops every process)", processes, (long)getpid());
    while (!stop_requested) pause();
    server_log("stopping");
    MHD_stop_daemon(daemon);
    pf_free(s->model);
    server_log("stopped");
    return 0;
}

int main(int argc, char **argv) {
    int process = 0, processes = 1;
#ifdef PF_MPI
    int provided = 0; /* the library's threads call MPI one at a time */
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &process);
    MPI_Comm_size(MPI_COMM_WORLD, &processes);
#endif
    int status = serve(argc, argv, process, processes);
#ifdef PF_MPI
    if (status && processes > 1) MPI_Abort(MPI_COMM_WORLD, status); /* the others may wait for this one */
    MPI_Finalize();
#endif
    return status;
}
