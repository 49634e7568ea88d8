/* server_http: examples/server's HTTP side on libmicrohttpd (routes, rate limit, uploads, streams),
   apart from its command line (server.c), so that a fuzz target (test/fuzz/fuzz_server_http.c)
   can drive the same code over a socket pair. One server a process: the_server. */
#ifndef SERVER_HTTP_H
#define SERVER_HTTP_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>

#include <microhttpd.h>

#include "../parallelformers.h"
#include "server_request.h"

typedef struct server {
    pf_model *model;
    pf_tokenizer *tokenizer;
    pf_model_info info;
    char model_name[256];
    request_limits limits;
    int max_prompt_tokens;
    int max_batch;          /* --max-batch: KV cache rows for concurrent requests */
    size_t max_body_bytes;
    int token_delay_ms; /* tests: a pause per streamed token, so that a client can leave mid-stream */
    time_t started;
    uint64_t seed_base;        /* fresh seeds: this plus the request number, mixed */
    unsigned long next_request; /* under counter_lock */
    pthread_mutex_t counter_lock;
    unsigned max_connections, max_connections_per_address;
    unsigned request_timeout_s; /* a request's whole body within it; also the longest silence */
    int rate_per_minute;        /* requests a minute per address; 0: no limit */
    const char *api_key;        /* --api-key: every route but /health wants "Authorization: Bearer KEY"; NULL: none */
    const char *cors_origin;    /* --cors: the Access-Control-Allow-Origin of every answer ("*": any); NULL: none */
    const char *alias;          /* --alias: the model's name in answers; NULL: its directory's name */
    struct server_metrics {     /* /metrics, under counter_lock */
        unsigned long requests, responses_2xx, responses_4xx, responses_5xx;
        unsigned long generations, prompt_tokens, generated_tokens;
        int generating;         /* generation requests in flight */
        double generation_seconds; /* summed over finished generation requests */
    } metrics;
} server;

extern server the_server;

/* The limits and settings the command line starts from. */
void server_defaults(server *s);
/* Rows of the KV cache to parallelize with: concurrent greedy and sampling requests share the
   decode steps (the library's continuous batching), up to --max-batch; at least n choices, or
   /generate_text's 5 beams. */
int server_cache_rows(const server *s);
/* Once s->model is loaded and parallelized: its info, the prompt bound, its name (the last part
   of dir), the seed base and the request counter. */
void server_ready(server *s, const char *dir);
/* Serves the_server on address (NULL with MHD_USE_NO_LISTEN_SOCKET in extra_flags: connections
   come through MHD_add_connection only), a thread a connection; NULL when it cannot. */
struct MHD_Daemon *server_start(const struct sockaddr *address, unsigned extra_flags);
void server_log(const char *format, ...);

#endif
