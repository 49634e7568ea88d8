/* examples/server's HTTP layer as a client sees it: the fuzzed bytes are sent raw, as one
   connection, to the server's own libmicrohttpd daemon and routes (examples/server_http.c)
   serving the gpt2-tiny fixture (chat-templated: gpt2-tiny-chat) over a loopback TCP
   connection, and the answer is read to its end. Requests, headers, bodies, methods, pipelined requests and clients that stop mid-request
   all come from the input. Besides the sanitizers, a connection the server neither answers nor
   closes within HANG_SECONDS of the client's end is a finding (abort). */
#include "fuzz.h"

#include <arpa/inet.h>
#include <poll.h>
#include <signal.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>

#include "../../examples/server_http.h"

#define FIRST_ANSWER_MS 50 /* how long the client waits before it says it has sent everything */
#define HANG_SECONDS 20    /* the server's longest request (8 tokens) takes milliseconds */

static struct MHD_Daemon *daemon_handle;
static int listener = -1;                /* loopback; its connections go to the daemon */
static struct sockaddr_in listen_address;

/* Small limits, so that an input costs milliseconds; no rate limit (every input is one address). */
int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    signal(SIGPIPE, SIG_IGN);
    server *s = &the_server;
    server_defaults(s);
    s->limits.max_tokens = 8;
    s->limits.max_n = 2;
    s->max_body_bytes = 1 << 16;
    s->max_batch = 4;
    s->max_connections = 8;
    s->request_timeout_s = 2;
    s->rate_per_minute = 0;
    const char *dir = FUZZ_FIXTURES "/gpt2-tiny-chat";
    pf_parallel_options options = pf_parallel_options_init();
    options.max_batch = server_cache_rows(s);
    if (pf_load(dir, NULL, &s->model) || !(s->tokenizer = pf_model_tokenizer(s->model)) ||
        pf_parallelize(s->model, 1, &options))
        abort();
    server_ready(s, dir);
    daemon_handle = server_start(NULL, MHD_USE_NO_LISTEN_SOCKET);
    if (!daemon_handle) abort();
    socklen_t length = sizeof listen_address;
    listen_address.sin_family = AF_INET;
    listen_address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    listener = socket(AF_INET, SOCK_STREAM, 0);
    if (listener < 0 || bind(listener, (struct sockaddr *)&listen_address, sizeof listen_address) ||
        listen(listener, 16) || getsockname(listener, (struct sockaddr *)&listen_address, &length))
        abort();
    return 0;
}

static double seconds_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Reads what the server sends until it closes the connection (echoed to stderr with
   FUZZ_SHOW_ANSWER=1, to see what an input reaches); 0 when it closes within the time left, -1
   when time runs out. */
static int drain(int fd, double deadline) {
    static int show = -1;
    if (show < 0) show = getenv("FUZZ_SHOW_ANSWER") != NULL;
    char buffer[4096];
    for (;;) {
        double left = deadline - seconds_now();
        if (left <= 0) return -1;
        struct pollfd p = {fd, POLLIN, 0};
        int ready = poll(&p, 1, (int)(left * 1000) + 1);
        if (ready < 0) return -1;
        if (ready == 0) continue;
        ssize_t got = recv(fd, buffer, sizeof buffer, 0);
        if (got <= 0) return 0; /* closed (or reset) */
        if (show) fwrite(buffer, 1, (size_t)got, stderr);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    int client = socket(AF_INET, SOCK_STREAM, 0);
    if (client < 0 || connect(client, (struct sockaddr *)&listen_address, sizeof listen_address)) abort();
    struct sockaddr_in peer;
    socklen_t peer_length = sizeof peer;
    int accepted = accept(listener, (struct sockaddr *)&peer, &peer_length);
    if (accepted < 0) abort();
    if (MHD_add_connection(daemon_handle, accepted, (const struct sockaddr *)&peer, peer_length) != MHD_YES) {
        close(client); /* over the connection limit: the daemon has closed the socket it refused */
        return 0;
    }
    /* the request as a client would send it, then a pause for the answer, then the client's end
       of writing (an unfinished request is abandoned there) */
    size_t sent = 0;
    while (sent < size) {
        ssize_t n = send(client, data + sent, size - sent, MSG_NOSIGNAL);
        if (n <= 0) break; /* the server closed early: fine */
        sent += (size_t)n;
    }
    struct pollfd p = {client, POLLIN, 0};
    poll(&p, 1, FIRST_ANSWER_MS);
    shutdown(client, SHUT_WR);
    if (drain(client, seconds_now() + HANG_SECONDS)) {
        fprintf(stderr, "fuzz_server_http: the server neither answered nor closed within %d s\n", HANG_SECONDS);
        abort();
    }
    close(client);
    return 0;
}
