/* server_http: see server_http.h. */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server_http.h"

#if MHD_VERSION < 0x00097002
typedef int MHD_Result; /* older libmicrohttpd returns int */
#else
typedef enum MHD_Result MHD_Result;
#endif

server the_server;

void server_log(const char *format, ...) {
    va_list args;
    va_start(args, format);
    fprintf(stderr, "server: ");
    vfprintf(stderr, format, args);
    fprintf(stderr, "\n");
    va_end(args);
}

static unsigned long request_number(void) {
    pthread_mutex_lock(&the_server.counter_lock);
    unsigned long n = ++the_server.next_request;
    pthread_mutex_unlock(&the_server.counter_lock);
    return n;
}

/* splitmix64: request numbers to well-spread seeds. */
static uint64_t mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* ---- rate limit: a token bucket per client address ---- */

#define RATE_ADDRESSES 1024 /* addresses remembered at once; the least recently seen makes room */

typedef struct rate_bucket {
    struct sockaddr_storage address; /* family 0: unused */
    double tokens;                   /* requests it may make now */
    double last;                     /* when tokens was computed, seconds */
} rate_bucket;

static rate_bucket rate_buckets[RATE_ADDRESSES];
static pthread_mutex_t rate_lock = PTHREAD_MUTEX_INITIALIZER;

static double now_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The address alone (no port): IPv4 or IPv6 bytes. */
static int same_address(const struct sockaddr *a, const struct sockaddr_storage *b) {
    if (a->sa_family != b->ss_family) return 0;
    if (a->sa_family == AF_INET)
        return !memcmp(&((const struct sockaddr_in *)a)->sin_addr, &((const struct sockaddr_in *)b)->sin_addr,
                       sizeof(struct in_addr));
    if (a->sa_family == AF_INET6)
        return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr, &((const struct sockaddr_in6 *)b)->sin6_addr,
                       sizeof(struct in6_addr));
    return 0;
}

/* Whether the client may make one more request: each address holds up to ten seconds' worth of
   --rate-limit, refilled continuously. */
static int rate_allows(struct MHD_Connection *connection) {
    if (the_server.rate_per_minute <= 0) return 1;
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (!info || !info->client_addr) return 1;
    const struct sockaddr *address = info->client_addr;
    double rate = the_server.rate_per_minute / 60.0, burst = rate * 10 > 1 ? rate * 10 : 1, now = now_seconds();
    pthread_mutex_lock(&rate_lock);
    rate_bucket *b = NULL, *oldest = &rate_buckets[0];
    for (int i = 0; i < RATE_ADDRESSES && !b; i++) {
        if (same_address(address, &rate_buckets[i].address)) b = &rate_buckets[i];
        else if (rate_buckets[i].last < oldest->last) oldest = &rate_buckets[i];
    }
    if (!b) {
        b = oldest;
        memset(&b->address, 0, sizeof b->address);
        memcpy(&b->address, address, address->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in));
        b->tokens = burst;
        b->last = now;
    }
    b->tokens += (now - b->last) * rate;
    if (b->tokens > burst) b->tokens = burst;
    b->last = now;
    int allowed = b->tokens >= 1;
    if (allowed) b->tokens -= 1;
    pthread_mutex_unlock(&rate_lock);
    return allowed;
}

/* ---- responses ---- */

static void count_response(unsigned status) {
    pthread_mutex_lock(&the_server.counter_lock);
    struct server_metrics *m = &the_server.metrics;
    if (status < 300) m->responses_2xx++;
    else if (status < 500) m->responses_4xx++;
    else m->responses_5xx++;
    pthread_mutex_unlock(&the_server.counter_lock);
}

/* Queues a response with the headers every answer has (CORS), counts it and drops our reference. */
static MHD_Result queue_response(struct MHD_Connection *connection, unsigned status, struct MHD_Response *response) {
    if (the_server.cors_origin) {
        MHD_add_response_header(response, "Access-Control-Allow-Origin", the_server.cors_origin);
        MHD_add_response_header(response, "Vary", "Origin");
    }
    count_response(status);
    MHD_Result queued = MHD_queue_response(connection, status, response);
    MHD_destroy_response(response);
    return queued;
}

static MHD_Result send_text(struct MHD_Connection *connection, unsigned status, char *text, const char *type) {
    if (!text) return MHD_NO; /* out of memory: drop the connection */
    struct MHD_Response *response = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    if (!response) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(response, "Content-Type", type);
    return queue_response(connection, status, response);
}

/* Sends a JSON value and drops the reference. */
static MHD_Result send_json(struct MHD_Connection *connection, unsigned status, json_t *value) {
    char *text = value ? json_dumps(value, JSON_COMPACT) : NULL;
    json_decref(value);
    return send_text(connection, status, text, "application/json");
}

/* The HTTP status of a failed call: the caller's fault, a model that cannot take the request now
   (its queue is full, or it is being freed at shutdown), or ours. */
static unsigned http_status(pf_result r) {
    /* a request asking for what this model does not do (global_attention on a model without global
       tokens, a schema feature the constraint lacks) is the client's to change */
    if (r == PF_ERROR_INVALID_ARGUMENT || r == PF_ERROR_UNSUPPORTED) return 400;
    if (r == PF_ERROR_BUSY || r == PF_ERROR_CANCELLED) return 503;
    return 500;
}

static MHD_Result send_error(struct MHD_Connection *connection, unsigned status, const char *message) {
    return send_text(connection, status, error_body((int)status, message), "application/json");
}

/* ---- text ---- */

/* A prompt's ids as transformers' tokenizer(text) gives them (a chat template's text, which holds
   its special tokens already, without adding any: templated); NULL (reason in error) when empty,
   too long or not tokenizable. */
static int32_t *tokenize_prompt(const char *text, int templated, int *count, char *error, size_t error_size) {
    size_t n = 0, length = strlen(text);
    pf_result (*encode)(const pf_tokenizer *, const char *, size_t, int32_t *, size_t, size_t *) =
        templated ? pf_tokenize : pf_tokenize_special;
    encode(the_server.tokenizer, text, length, NULL, 0, &n);
    if (n == 0) return snprintf(error, error_size, "the prompt is empty"), NULL;
    if (n > (size_t)the_server.max_prompt_tokens)
        return snprintf(error, error_size, "the prompt is %zu tokens; at most %d", n, the_server.max_prompt_tokens), NULL;
    int32_t *ids = (int32_t *)malloc(n * sizeof *ids);
    if (!ids || encode(the_server.tokenizer, text, length, ids, n, &n)) {
        free(ids);
        return snprintf(error, error_size, "cannot tokenize the prompt"), NULL;
    }
    *count = (int)n;
    return ids;
}

static int is_eos(int32_t token);

/* The text of ids without special tokens, as decode(..., skip_special_tokens=True), or with them
   but for the end-of-sequence ones (with_markers: tool calls' markers are special tokens in some
   families, [TOOL_CALLS], <|python_tag|>); NULL on failure. */
static char *decoded_text(const int32_t *ids, int count, int with_markers, size_t *length) {
    int32_t *kept = (int32_t *)malloc((size_t)(count ? count : 1) * sizeof *kept);
    size_t num_kept = 0, len = 0;
    char *text = NULL;
    if (!kept) return NULL;
    for (int i = 0; i < count; i++)
        if (with_markers ? !is_eos(ids[i]) : !pf_tokenizer_is_special(the_server.tokenizer, ids[i])) kept[num_kept++] = ids[i];
    pf_result sized = pf_detokenize(the_server.tokenizer, kept, num_kept, NULL, 0, &len);
    if ((sized == PF_OK || sized == PF_ERROR_BUFFER_TOO_SMALL) && (text = (char *)malloc(len + 1)) &&
        pf_detokenize(the_server.tokenizer, kept, num_kept, text, len + 1, &len) == PF_OK) {
        text[len] = 0;
        *length = len;
    } else {
        free(text);
        text = NULL;
    }
    free(kept);
    return text;
}

static char *ids_text(const int32_t *ids, int count, size_t *length) { return decoded_text(ids, count, 0, length); }

static int is_eos(int32_t token) {
    for (int i = 0; i < the_server.info.num_eos_token_ids; i++)
        if (token == the_server.info.eos_token_ids[i]) return 1;
    return 0;
}

/* Where the first stop string starts in text, or -1. */
static long find_stop(const completion_request *request, const char *text, size_t length) {
    long first = -1;
    for (int s = 0; s < request->num_stop; s++) {
        size_t stop_length = strlen(request->stop[s]);
        for (size_t i = 0; i + stop_length <= length && (first < 0 || (long)i < first); i++)
            if (!memcmp(text + i, request->stop[s], stop_length)) {
                first = (long)i;
                break;
            }
    }
    return first;
}

/* How many bytes at the end of text could begin a stop string: held back while streaming. */
static size_t stop_prefix_at_end(const completion_request *request, const char *text, size_t length) {
    size_t longest = 0;
    for (int s = 0; s < request->num_stop; s++) {
        size_t stop_length = strlen(request->stop[s]);
        for (size_t k = stop_length - 1; k > longest; k--)
            if (k <= length && !memcmp(text + length - k, request->stop[s], k)) {
                longest = k;
                break;
            }
    }
    return longest;
}

/* ---- metrics ---- */

/* Around a generation request: one more in flight; then its time and tokens counted. */
static double generation_begins(void) {
    pthread_mutex_lock(&the_server.counter_lock);
    the_server.metrics.generating++;
    pthread_mutex_unlock(&the_server.counter_lock);
    return now_seconds();
}

static void generation_ends(double started, int prompt_tokens, int generated_tokens) {
    double seconds = now_seconds() - started;
    pthread_mutex_lock(&the_server.counter_lock);
    struct server_metrics *m = &the_server.metrics;
    m->generating--;
    m->generations++;
    m->prompt_tokens += (unsigned long)prompt_tokens;
    m->generated_tokens += (unsigned long)generated_tokens;
    m->generation_seconds += seconds;
    pthread_mutex_unlock(&the_server.counter_lock);
}

/* GET /metrics: Prometheus' text format. */
static MHD_Result metrics(struct MHD_Connection *connection) {
    pthread_mutex_lock(&the_server.counter_lock);
    struct server_metrics m = the_server.metrics;
    pthread_mutex_unlock(&the_server.counter_lock);
    char *text = (char *)malloc(2048);
    if (!text) return MHD_NO;
    snprintf(text, 2048,
             "# HELP parallelformers_requests_total HTTP requests received.\n"
             "# TYPE parallelformers_requests_total counter\n"
             "parallelformers_requests_total %lu\n"
             "# HELP parallelformers_responses_total HTTP responses sent, by status class.\n"
             "# TYPE parallelformers_responses_total counter\n"
             "parallelformers_responses_total{code=\"2xx\"} %lu\n"
             "parallelformers_responses_total{code=\"4xx\"} %lu\n"
             "parallelformers_responses_total{code=\"5xx\"} %lu\n"
             "# HELP parallelformers_generations_running Completion requests generating now.\n"
             "# TYPE parallelformers_generations_running gauge\n"
             "parallelformers_generations_running %d\n"
             "# HELP parallelformers_generation_seconds Time completion requests took to generate.\n"
             "# TYPE parallelformers_generation_seconds summary\n"
             "parallelformers_generation_seconds_sum %.6f\n"
             "parallelformers_generation_seconds_count %lu\n"
             "# HELP parallelformers_prompt_tokens_total Prompt tokens of finished completion requests.\n"
             "# TYPE parallelformers_prompt_tokens_total counter\n"
             "parallelformers_prompt_tokens_total %lu\n"
             "# HELP parallelformers_generated_tokens_total Tokens generated for finished completion requests.\n"
             "# TYPE parallelformers_generated_tokens_total counter\n"
             "parallelformers_generated_tokens_total %lu\n",
             m.requests, m.responses_2xx, m.responses_4xx, m.responses_5xx, m.generating, m.generation_seconds,
             m.generations, m.prompt_tokens, m.generated_tokens);
    return send_text(connection, 200, text, "text/plain; version=0.0.4");
}

/* ---- completions ---- */

/* Generation options for a request. Stop strings end a row in the library (stop_strings: the
   token that completes one ends it) and are cut from the text here, at the byte. */
/* logprobs: each row's tokens with theirs, as the library reports them (special tokens left out,
   as the text leaves them out). */
#define MAX_TOP_LOGPROBS 20 /* OpenAI's most for chat; completions allow 5 */
typedef struct token_logprob {
    int32_t token;
    float logprob;
    int num_top;
    int32_t top[MAX_TOP_LOGPROBS];
    float top_logprob[MAX_TOP_LOGPROBS];
} token_logprob;

typedef struct logprob_row {
    token_logprob *items;
    int count, cap;
    int sent;          /* streaming: entries already in a chunk */
    size_t text_offset; /* completions: bytes of the choice's text before the next entry */
} logprob_row;

typedef struct logprob_rows {
    logprob_row *rows;
    int num_rows;
    int failed; /* out of memory: the response says so rather than giving a partial list */
} logprob_rows;

static void on_logprobs(void *user, int row, int32_t token, float logprob, const int32_t *top, const float *top_logprob,
                        int num_top) {
    logprob_rows *all = (logprob_rows *)user;
    if (row < 0 || row >= all->num_rows || pf_tokenizer_is_special(the_server.tokenizer, token)) return;
    logprob_row *r = &all->rows[row];
    if (r->count == r->cap) {
        int cap = 2 * r->cap + 16;
        token_logprob *grown = (token_logprob *)realloc(r->items, (size_t)cap * sizeof *grown);
        if (!grown) {
            all->failed = 1;
            return;
        }
        r->items = grown, r->cap = cap;
    }
    token_logprob *e = &r->items[r->count++];
    e->token = token;
    e->logprob = logprob;
    e->num_top = num_top < MAX_TOP_LOGPROBS ? num_top : MAX_TOP_LOGPROBS;
    memcpy(e->top, top, (size_t)e->num_top * sizeof *top);
    memcpy(e->top_logprob, top_logprob, (size_t)e->num_top * sizeof *top_logprob);
}

static void logprob_rows_free(logprob_rows *all) {
    for (int i = 0; i < all->num_rows; i++) free(all->rows[i].items);
    free(all->rows);
    memset(all, 0, sizeof *all);
}

/* A token's text as a JSON string, its bytes into piece (OpenAI's "bytes": a token may end
   mid-character); its length. */
static size_t token_piece(int32_t token, char *piece, size_t cap) {
    size_t length = 0;
    if (pf_detokenize(the_server.tokenizer, &token, 1, piece, cap, &length) != PF_OK || length >= cap) length = 0;
    piece[length] = 0;
    return length;
}

/* -inf (a token no processor touched has none, but a model may give one) as OpenAI writes it. */
static json_t *logprob_json(float logprob) { return json_real(isfinite(logprob) ? logprob : -9999.0); }

static json_t *bytes_json(const char *piece, size_t length) {
    json_t *bytes = json_array();
    for (size_t i = 0; i < length; i++) json_array_append_new(bytes, json_integer((unsigned char)piece[i]));
    return bytes;
}

/* Chat: {"content": [{"token", "logprob", "bytes", "top_logprobs": [...]}, ...]} of entries [from, to). */
static json_t *chat_logprobs_json(const logprob_row *r, int from, int to) {
    json_t *content = json_array();
    char piece[512];
    for (int i = from; i < to; i++) {
        const token_logprob *e = &r->items[i];
        size_t length = token_piece(e->token, piece, sizeof piece);
        json_t *top = json_array();
        for (int k = 0; k < e->num_top; k++) {
            size_t top_length = token_piece(e->top[k], piece, sizeof piece);
            json_array_append_new(top, json_pack("{s:o,s:o,s:o}", "token", json_text(piece, top_length), "logprob",
                                                 logprob_json(e->top_logprob[k]), "bytes", bytes_json(piece, top_length)));
        }
        length = token_piece(e->token, piece, sizeof piece);
        json_array_append_new(content, json_pack("{s:o,s:o,s:o,s:o}", "token", json_text(piece, length), "logprob",
                                                 logprob_json(e->logprob), "bytes", bytes_json(piece, length),
                                                 "top_logprobs", top));
    }
    return json_pack("{s:o}", "content", content);
}

/* Completions: {"tokens", "token_logprobs", "top_logprobs": [{text: logprob}], "text_offset"} of
   entries [from, to); text_offset in bytes of the choice's text, from r->text_offset on. */
static json_t *completion_logprobs_json(logprob_row *r, int from, int to) {
    json_t *tokens = json_array(), *values = json_array(), *tops = json_array(), *offsets = json_array();
    char piece[512];
    for (int i = from; i < to; i++) {
        const token_logprob *e = &r->items[i];
        json_t *top = json_object();
        for (int k = 0; k < e->num_top; k++) {
            size_t top_length = token_piece(e->top[k], piece, sizeof piece);
            json_t *key = json_text(piece, top_length);
            json_object_set_new(top, json_string_value(key), logprob_json(e->top_logprob[k]));
            json_decref(key);
        }
        size_t length = token_piece(e->token, piece, sizeof piece);
        json_array_append_new(tokens, json_text(piece, length));
        json_array_append_new(values, logprob_json(e->logprob));
        json_array_append_new(tops, top);
        json_array_append_new(offsets, json_integer((json_int_t)r->text_offset));
        r->text_offset += length;
    }
    return json_pack("{s:o,s:o,s:o,s:o}", "tokens", tokens, "token_logprobs", values, "top_logprobs", tops, "text_offset",
                     offsets);
}

typedef struct generation_plan {
    pf_generate_options options;
    int copies; /* greedy with n > 1: one generation, copied into n choices */
    logprob_rows logprobs; /* request->logprobs: filled by on_logprobs */
} generation_plan;

/* The plan's logprob rows when the request asks for logprobs; -1 without memory. */
static int plan_logprobs(const completion_request *request, generation_plan *plan) {
    if (!request->logprobs) return 0;
    int rows = plan->options.num_return_sequences;
    plan->logprobs.rows = (logprob_row *)calloc((size_t)rows, sizeof *plan->logprobs.rows);
    if (!plan->logprobs.rows) return -1;
    plan->logprobs.num_rows = rows;
    plan->options.logprobs = 1;
    plan->options.top_logprobs = request->top_logprobs;
    plan->options.logprobs_callback = on_logprobs;
    plan->options.logprobs_user = &plan->logprobs;
    return 0;
}

static void make_plan(const completion_request *request, generation_plan *plan) {
    memset(plan, 0, sizeof *plan);
    pf_generate_options *o = &plan->options;
    *o = pf_generate_options_init();
    o->max_new_tokens = request->max_tokens;
    o->top_k = 0; /* OpenAI's API has no top-k; the request's own below */
    plan->copies = 1;
    if (request->temperature > 0) {
        o->do_sample = 1;
        o->temperature = (float)request->temperature;
        o->top_p = (float)request->top_p;
        o->top_k = request->top_k;
        o->min_p = (float)request->min_p;
        o->num_return_sequences = request->n;
        o->seed = request->has_seed ? request->seed : mix(the_server.seed_base + request_number());
    } else {
        plan->copies = request->n;
    }
    o->repetition_penalty = (float)request->repetition_penalty;
    o->presence_penalty = (float)request->presence_penalty;
    o->frequency_penalty = (float)request->frequency_penalty;
    o->logit_bias = request->logit_bias;
    o->num_logit_bias = request->num_logit_bias;
    o->stop_strings = (const char *const *)request->stop;
    o->num_stop_strings = request->num_stop;
    o->json_constraint = request->json_constraint;
    if (request->global_row) o->global_attention = request->global_rows;
}

static json_t *usage_json(int prompt_tokens, int completion_tokens) {
    return json_pack("{s:i,s:i,s:i}", "prompt_tokens", prompt_tokens, "completion_tokens", completion_tokens,
                     "total_tokens", prompt_tokens + completion_tokens);
}

/* Whether replies are read for tool calls: forced ones, or "auto" in the template's format. */
static int reads_tool_calls(const completion_request *request) {
    return request->tools.forced_schema ||
           (request->tools.choice == TOOL_CHOICE_AUTO &&
            tool_format_of(pf_tokenizer_chat_template(the_server.tokenizer)) != TOOL_FORMAT_NONE);
}

/* The tool calls of a finished reply (text: with its markers, cut at a stop string), NULL when it
   makes none; *content_length: the content before them. parallel_tool_calls false keeps the
   first call of a reply that made several ("auto" cannot stop a model writing them). */
static json_t *reply_tool_calls(const completion_request *request, const char *text, size_t length, size_t *content_length,
                                uint64_t id_seed) {
    json_t *calls = NULL;
    *content_length = length;
    if (request->tools.forced_schema) {
        if ((calls = forced_tool_calls(&request->tools, text, length, id_seed))) *content_length = 0;
    } else if (reads_tool_calls(request)) {
        calls = tool_calls_in_text(tool_format_of(pf_tokenizer_chat_template(the_server.tokenizer)), text, length,
                                   content_length, id_seed);
    }
    while (calls && !request->tools.parallel && json_array_size(calls) > 1) json_array_remove(calls, 1);
    return calls;
}

/* A reply's content beside its tool calls: null when only whitespace comes before them. */
static json_t *content_beside_calls(const char *text, size_t length) {
    size_t i = 0;
    while (i < length && text[i] && strchr(" \t\r\n", text[i])) i++;
    return i == length ? json_null() : json_text(text, length);
}

/* One choice of a finished response; tool_calls (chat: taken over) when the reply made calls. */
static json_t *choice_json(const completion_request *request, int index, const char *text, size_t length,
                           const char *finish_reason, json_t *logprobs, json_t *tool_calls) {
    if (!logprobs) logprobs = json_null();
    if (tool_calls)
        return json_pack("{s:i,s:{s:s,s:o,s:o},s:o,s:s}", "index", index, "message", "role", "assistant", "content",
                         content_beside_calls(text, length), "tool_calls", tool_calls, "logprobs", logprobs, "finish_reason",
                         "tool_calls");
    json_t *content = json_text(text, length);
    if (request->chat)
        return json_pack("{s:i,s:{s:s,s:o},s:o,s:s}", "index", index, "message", "role", "assistant", "content", content,
                         "logprobs", logprobs, "finish_reason", finish_reason);
    return json_pack("{s:i,s:o,s:o,s:s}", "index", index, "text", content, "logprobs", logprobs, "finish_reason",
                     finish_reason);
}

/* Row i's logprobs for a whole response (NULL when not asked for). */
static json_t *row_logprobs_json(const completion_request *request, generation_plan *plan, int i, size_t echoed) {
    if (!request->logprobs || i >= plan->logprobs.num_rows) return NULL;
    logprob_row *r = &plan->logprobs.rows[i];
    if (request->chat) return chat_logprobs_json(r, 0, r->count);
    r->text_offset = echoed;
    return completion_logprobs_json(r, 0, r->count);
}

static MHD_Result complete(struct MHD_Connection *connection, const completion_request *request, const int32_t *prompt,
                           int prompt_length) {
    generation_plan plan;
    pf_generation result;
    memset(&result, 0, sizeof result);
    make_plan(request, &plan);
    if (plan_logprobs(request, &plan)) return send_error(connection, 500, "out of memory");
    const int32_t *prompts[1] = {prompt};
    double started = generation_begins();
    pf_result r = pf_generate_batch(the_server.model, prompts, &prompt_length, 1, &plan.options, &result);
    if (!r && plan.logprobs.failed) {
        pf_generation_free(&result);
        logprob_rows_free(&plan.logprobs);
        return send_error(connection, 500, "out of memory for the logprobs");
    }
    int generated = 0;
    for (int i = 0; !r && i < result.num_sequences; i++) generated += result.lengths[i];
    generation_ends(started, r ? 0 : prompt_length, generated);
    if (r) {
        char message[512];
        snprintf(message, sizeof message, "generation failed: %s: %s", pf_result_string(r), pf_error_message(the_server.model));
        logprob_rows_free(&plan.logprobs);
        return send_error(connection, http_status(r), message);
    }
    json_t *choices = json_array();
    int completion_tokens = 0, tool_reply = reads_tool_calls(request);
    uint64_t id_seed = mix(the_server.seed_base ^ request_number());
    for (int i = 0; i < result.num_sequences; i++) {
        size_t length = 0, echoed = request->echo ? strlen(request->prompt) : 0;
        int n = result.lengths[i];
        char *text = decoded_text(result.tokens[i], n, tool_reply, &length);
        char *with_prompt = text && echoed ? (char *)malloc(echoed + length + 1) : NULL;
        if (with_prompt) { /* echo: the prompt's text, then the completion's */
            memcpy(with_prompt, request->prompt, echoed);
            memcpy(with_prompt + echoed, text, length + 1);
            free(text);
            text = with_prompt;
        } else if (echoed) {
            free(text), text = NULL;
        }
        if (!text) {
            json_decref(choices);
            pf_generation_free(&result);
            logprob_rows_free(&plan.logprobs);
            return send_error(connection, 500, "cannot decode the output");
        }
        long stop_at = find_stop(request, text + echoed, length);
        const char *finish_reason = stop_at >= 0 || (n > 0 && is_eos(result.tokens[i][n - 1])) ? "stop" : "length";
        length = echoed + (stop_at >= 0 ? (size_t)stop_at : length);
        size_t content_length = length;
        json_t *calls = tool_reply ? reply_tool_calls(request, text, length, &content_length, id_seed + (uint64_t)i) : NULL;
        for (int c = 0; c < plan.copies; c++)
            json_array_append_new(choices, choice_json(request, i * plan.copies + c, text, content_length, finish_reason,
                                                       row_logprobs_json(request, &plan, i, echoed), json_incref(calls)));
        json_decref(calls);
        completion_tokens += n * plan.copies;
        free(text);
    }
    pf_generation_free(&result);
    logprob_rows_free(&plan.logprobs);
    char id[48];
    snprintf(id, sizeof id, "%s-%lu", request->chat ? "chatcmpl" : "cmpl", request_number());
    json_t *body = json_pack("{s:s,s:s,s:I,s:s,s:o,s:o}", "id", id, "object",
                             request->chat ? "chat.completion" : "text_completion", "created", (json_int_t)time(NULL),
                             "model", the_server.model_name, "choices", choices, "usage",
                             usage_json(prompt_length, completion_tokens));
    return send_json(connection, 200, body);
}

/* ---- streaming: a generation thread writes server-sent events, the connection reads them ---- */

typedef struct stream_row {
    char *held; /* text not sent yet: it might begin a stop string */
    size_t held_length;
    int stopped; /* a stop string ended it */
    /* replies read for tool calls: the whole text (markers kept), how much of it went out as
       content, and whether a call has begun (what follows is sent as calls at the end) */
    char *reply;
    size_t reply_length, sent;
    int in_call;
} stream_row;

typedef struct stream_job {
    pthread_mutex_t lock;
    pthread_cond_t ready;
    char *events; /* SSE text waiting for the connection */
    size_t events_length, events_cap, events_sent;
    int finished;  /* the generation thread queued everything it will */
    int cancelled; /* the client went away */
    int tokens;
    pthread_t thread;
    completion_request request;
    generation_plan plan;
    int32_t *prompt;
    int prompt_length;
    stream_row *rows;
    int num_rows;
    int tool_reply; /* reads_tool_calls */
    char id[48];
    time_t created;
} stream_job;

/* Appends "data: <json>\n\n" to the events and wakes the reader; drops the value's reference. */
static void queue_event(stream_job *job, json_t *value, const char *raw) {
    char *text = value ? json_dumps(value, JSON_COMPACT) : NULL;
    const char *data = raw ? raw : text;
    json_decref(value);
    if (!data) return;
    size_t add = strlen(data) + 8;
    pthread_mutex_lock(&job->lock);
    if (job->events_length + add + 1 > job->events_cap) {
        size_t cap = 2 * (job->events_length + add) + 256;
        char *grown = (char *)realloc(job->events, cap);
        if (grown) job->events = grown, job->events_cap = cap;
    }
    if (job->events_length + add + 1 <= job->events_cap)
        job->events_length += (size_t)snprintf(job->events + job->events_length, add + 1, "data: %s\n\n", data);
    pthread_cond_signal(&job->ready);
    pthread_mutex_unlock(&job->lock);
    free(text);
}

/* One chunk: a piece of text for choice `index`, or its finish_reason when finish is given. */
static void queue_chunk(stream_job *job, int index, const char *text, size_t length, const char *role,
                        const char *finish, json_t *logprobs) {
    json_t *choice;
    if (!logprobs) logprobs = json_null();
    if (job->request.chat) {
        json_t *delta = json_object();
        if (role) json_object_set_new(delta, "role", json_string(role));
        if (text) json_object_set_new(delta, "content", json_text(text, length));
        choice = json_pack("{s:i,s:o,s:o,s:o}", "index", index, "delta", delta, "logprobs", logprobs, "finish_reason",
                           finish ? json_string(finish) : json_null());
    } else {
        choice = json_pack("{s:i,s:o,s:o,s:o}", "index", index, "text", json_text(text ? text : "", text ? length : 0),
                           "logprobs", logprobs, "finish_reason", finish ? json_string(finish) : json_null());
    }
    queue_event(job, json_pack("{s:s,s:s,s:I,s:s,s:[o]}", "id", job->id, "object",
                               job->request.chat ? "chat.completion.chunk" : "text_completion", "created",
                               (json_int_t)job->created, "model", the_server.model_name, "choices", choice),
                NULL);
}

/* A piece of row's text, with the logprobs of the tokens that came since the last piece (sent
   with an empty text when the text is held back no longer: the end). */
static void send_piece(stream_job *job, int row, const char *text, size_t length, int last) {
    logprob_row *r = job->request.logprobs && row < job->plan.logprobs.num_rows ? &job->plan.logprobs.rows[row] : NULL;
    int from = r ? r->sent : 0, to = r ? r->count : 0;
    if (!length && !(last && to > from)) return;
    if (r) r->sent = to;
    size_t offset = r ? r->text_offset : 0;
    for (int c = 0; c < job->plan.copies; c++) {
        json_t *logprobs = NULL;
        if (r && job->request.chat) logprobs = chat_logprobs_json(r, from, to);
        else if (r) r->text_offset = offset, logprobs = completion_logprobs_json(r, from, to);
        queue_chunk(job, row * job->plan.copies + c, text ? text : "", length, NULL, NULL, logprobs);
    }
}

static int all_rows_stopped(const stream_job *job) {
    int all = 1;
    for (int i = 0; i < job->num_rows; i++) all &= job->rows[i].stopped;
    return all;
}

/* A token of a reply read for tool calls: the content before a call goes out as it comes (held
   back where it might begin a call or a stop string); a call is sent whole at the end. */
static int on_tool_reply_token(stream_job *job, stream_row *row, int row_index, int32_t token, const char *text, size_t length) {
    if (row->stopped || is_eos(token)) return 0;
    char *grown = (char *)realloc(row->reply, row->reply_length + length + 1);
    if (!grown) return 1;
    row->reply = grown;
    memcpy(row->reply + row->reply_length, text, length);
    row->reply_length += length;
    long stop_at = find_stop(&job->request, row->reply, row->reply_length);
    if (stop_at >= 0) row->reply_length = (size_t)stop_at, row->stopped = 1;
    if (row->in_call) return row->stopped && all_rows_stopped(job);
    int begun = job->request.tools.forced_schema != NULL; /* a forced reply is a call from its first byte */
    size_t ready = begun ? 0 : tool_text_ready(tool_format_of(pf_tokenizer_chat_template(the_server.tokenizer)), row->reply,
                                               row->reply_length, &begun);
    if (!begun && !row->stopped && ready == row->reply_length)
        ready -= stop_prefix_at_end(&job->request, row->reply + row->sent, ready - row->sent);
    if (ready > row->sent) send_piece(job, row_index, row->reply + row->sent, ready - row->sent, 0);
    row->sent = ready > row->sent ? ready : row->sent;
    row->in_call = begun;
    return row->stopped && all_rows_stopped(job);
}

/* The end of a reply read for tool calls: its calls as one chunk each, or the rest as content
   when it made none. The finish_reason. */
static const char *end_tool_reply(stream_job *job, int row_index, const char *finish, uint64_t id_seed) {
    stream_row *row = &job->rows[row_index];
    size_t content_length = 0;
    json_t *calls = row->in_call ? reply_tool_calls(&job->request, row->reply ? row->reply : "", row->reply_length,
                                                    &content_length, id_seed)
                                 : NULL;
    if (!calls) {
        send_piece(job, row_index, row->reply ? row->reply + row->sent : "", row->reply_length - row->sent, 1);
        return finish;
    }
    send_piece(job, row_index, "", 0, 1); /* the logprobs not sent yet */
    size_t k;
    json_t *call;
    json_array_foreach(calls, k, call)
        for (int c = 0; c < job->plan.copies; c++) {
            json_t *delta = json_pack("{s:[{s:i,s:O,s:O,s:O}]}", "tool_calls", "index", (int)k, "id", json_object_get(call, "id"),
                                      "type", json_object_get(call, "type"), "function", json_object_get(call, "function"));
            json_t *choice = json_pack("{s:i,s:o,s:n,s:n}", "index", row_index * job->plan.copies + c, "delta", delta, "logprobs",
                                       "finish_reason");
            queue_event(job, json_pack("{s:s,s:s,s:I,s:s,s:[o]}", "id", job->id, "object", "chat.completion.chunk", "created",
                                       (json_int_t)job->created, "model", the_server.model_name, "choices", choice),
                        NULL);
        }
    json_decref(calls);
    return "tool_calls";
}

static int on_token(void *user, int row_index, int32_t token, const char *text, size_t length) {
    stream_job *job = (stream_job *)user;
    pthread_mutex_lock(&job->lock);
    int cancelled = job->cancelled;
    job->tokens++;
    pthread_mutex_unlock(&job->lock);
    if (cancelled) return 1; /* the client went away: stop the generation */
    if (the_server.token_delay_ms) nanosleep(&(struct timespec){0, the_server.token_delay_ms * 1000000L}, NULL);
    if (row_index < job->num_rows && text && job->tool_reply)
        return on_tool_reply_token(job, &job->rows[row_index], row_index, token, text, length);
    if (row_index >= job->num_rows || !text || pf_tokenizer_is_special(the_server.tokenizer, token)) return 0;
    stream_row *row = &job->rows[row_index];
    if (row->stopped) return 0;
    char *grown = (char *)realloc(row->held, row->held_length + length + 1);
    if (!grown) return 1;
    row->held = grown;
    memcpy(row->held + row->held_length, text, length);
    row->held_length += length;
    long stop_at = find_stop(&job->request, row->held, row->held_length);
    size_t ready = stop_at >= 0 ? (size_t)stop_at : row->held_length - stop_prefix_at_end(&job->request, row->held, row->held_length);
    send_piece(job, row_index, row->held, ready, stop_at >= 0);
    memmove(row->held, row->held + ready, row->held_length - ready);
    row->held_length -= ready;
    if (stop_at >= 0) {
        row->stopped = 1;
        return all_rows_stopped(job);
    }
    return 0;
}

static void *stream_generation(void *user) {
    stream_job *job = (stream_job *)user;
    pf_generation result;
    memset(&result, 0, sizeof result);
    int choices = job->num_rows * job->plan.copies;
    if (job->request.chat)
        for (int i = 0; i < choices; i++) queue_chunk(job, i, NULL, 0, "assistant", NULL, NULL);
    if (job->request.echo)
        for (int i = 0; i < choices; i++) queue_chunk(job, i, job->request.prompt, strlen(job->request.prompt), NULL, NULL, NULL);
    for (int i = 0; job->request.echo && i < job->plan.logprobs.num_rows; i++)
        job->plan.logprobs.rows[i].text_offset = strlen(job->request.prompt);
    const int32_t *prompts[1] = {job->prompt};
    double started = generation_begins();
    pf_result r = pf_generate_batch(the_server.model, prompts, &job->prompt_length, 1, &job->plan.options, &result);
    int generated = 0;
    for (int i = 0; !r && i < result.num_sequences; i++) generated += result.lengths[i];
    generation_ends(started, r ? 0 : job->prompt_length, generated);
    if (r) {
        char message[512];
        snprintf(message, sizeof message, "generation failed: %s: %s", pf_result_string(r), pf_error_message(the_server.model));
        char *body = error_body(500, message);
        queue_event(job, NULL, body);
        free(body);
    }
    int completion_tokens = 0;
    uint64_t id_seed = mix(the_server.seed_base ^ request_number());
    for (int i = 0; !r && i < result.num_sequences && i < job->num_rows; i++) {
        stream_row *row = &job->rows[i];
        int n = result.lengths[i];
        completion_tokens += n * job->plan.copies;
        const char *finish = row->stopped || (n > 0 && is_eos(result.tokens[i][n - 1])) ? "stop" : "length";
        if (job->tool_reply) finish = end_tool_reply(job, i, finish, id_seed + (uint64_t)i);
        else if (!row->stopped) send_piece(job, i, row->held, row->held_length, 1);
        for (int c = 0; c < job->plan.copies; c++) queue_chunk(job, i * job->plan.copies + c, NULL, 0, NULL, finish, NULL);
    }
    pf_generation_free(&result);
    if (!r && job->request.include_usage) /* stream_options.include_usage: a last chunk without choices */
        queue_event(job, json_pack("{s:s,s:s,s:I,s:s,s:[],s:o}", "id", job->id, "object",
                                   job->request.chat ? "chat.completion.chunk" : "text_completion", "created",
                                   (json_int_t)job->created, "model", the_server.model_name, "choices", "usage",
                                   usage_json(job->prompt_length, completion_tokens)),
                    NULL);
    queue_event(job, NULL, "[DONE]");
    pthread_mutex_lock(&job->lock);
    job->finished = 1;
    pthread_cond_signal(&job->ready);
    pthread_mutex_unlock(&job->lock);
    return NULL;
}

/* libmicrohttpd asks for the next bytes of the body; waits for the generation thread. */
static ssize_t read_events(void *user, uint64_t position, char *buffer, size_t max) {
    stream_job *job = (stream_job *)user;
    (void)position;
    pthread_mutex_lock(&job->lock);
    while (job->events_sent == job->events_length && !job->finished) pthread_cond_wait(&job->ready, &job->lock);
    size_t n = job->events_length - job->events_sent;
    if (n > max) n = max;
    memcpy(buffer, job->events + job->events_sent, n);
    job->events_sent += n;
    if (job->events_sent == job->events_length) job->events_sent = job->events_length = 0;
    pthread_mutex_unlock(&job->lock);
    return n ? (ssize_t)n : MHD_CONTENT_READER_END_OF_STREAM;
}

/* The response is done with, finished or not: stop the generation and free the job. */
static void end_stream(void *user) {
    stream_job *job = (stream_job *)user;
    pthread_mutex_lock(&job->lock);
    int early = !job->finished;
    job->cancelled = 1;
    pthread_mutex_unlock(&job->lock);
    pthread_join(job->thread, NULL);
    if (early) server_log("%s: the client went away; generation stopped after %d tokens", job->id, job->tokens);
    for (int i = 0; i < job->num_rows; i++) free(job->rows[i].held), free(job->rows[i].reply);
    free(job->rows);
    logprob_rows_free(&job->plan.logprobs);
    free(job->events);
    free(job->prompt);
    completion_request_free(&job->request);
    pthread_cond_destroy(&job->ready);
    pthread_mutex_destroy(&job->lock);
    free(job);
}

/* Takes the request and the prompt over. */
static MHD_Result start_stream(struct MHD_Connection *connection, completion_request *request, int32_t *prompt,
                               int prompt_length) {
    stream_job *job = (stream_job *)calloc(1, sizeof *job);
    if (!job) return free(prompt), completion_request_free(request), MHD_NO;
    job->request = *request;
    job->prompt = prompt;
    job->prompt_length = prompt_length;
    job->created = time(NULL);
    snprintf(job->id, sizeof job->id, "%s-%lu", request->chat ? "chatcmpl" : "cmpl", request_number());
    pthread_mutex_init(&job->lock, NULL);
    pthread_cond_init(&job->ready, NULL);
    make_plan(&job->request, &job->plan);
    job->tool_reply = request->chat && reads_tool_calls(&job->request);
    job->num_rows = job->plan.options.num_return_sequences;
    job->rows = (stream_row *)calloc((size_t)job->num_rows, sizeof *job->rows);
    if (job->rows && plan_logprobs(&job->request, &job->plan)) free(job->rows), job->rows = NULL;
    job->plan.options.stream = on_token;
    job->plan.options.stream_user = job;
    struct MHD_Response *response = NULL;
    if (job->rows && !pthread_create(&job->thread, NULL, stream_generation, job))
        response = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, read_events, job, end_stream);
    else
        job->finished = 1, job->thread = pthread_self();
    if (!response) {
        if (job->finished) { /* no thread to join */
            for (int i = 0; i < job->num_rows; i++) free(job->rows[i].held), free(job->rows[i].reply);
            free(job->rows), free(job->prompt), completion_request_free(&job->request);
            logprob_rows_free(&job->plan.logprobs), free(job);
            return send_error(connection, 500, "cannot start the generation");
        }
        end_stream(job);
        return MHD_NO;
    }
    MHD_add_response_header(response, "Content-Type", "text/event-stream");
    MHD_add_response_header(response, "Cache-Control", "no-cache");
    return queue_response(connection, 200, response);
}

/* ---- routes ---- */

/* Whether the model continues text: a decoder or a text encoder-decoder (not an encoder, nor a
   speech model, whose input is audio). */
/* A prompt given as token ids: taken over (the library checks them against the vocabulary), and
   its text decoded for echo. NULL (reason in error) when too long or not decodable. */
static int32_t *prompt_from_ids(completion_request *request, int *count, char *error, size_t error_size) {
    size_t length = 0;
    if (request->num_prompt_ids > the_server.max_prompt_tokens)
        return snprintf(error, error_size, "the prompt is %d tokens; at most %d", request->num_prompt_ids,
                        the_server.max_prompt_tokens), NULL;
    for (int i = 0; i < request->num_prompt_ids; i++)
        if (request->prompt_ids[i] >= the_server.info.vocab_size)
            return snprintf(error, error_size, "prompt token %d (%d) is outside the vocabulary (%d)", i,
                            (int)request->prompt_ids[i], the_server.info.vocab_size), NULL;
    if (!(request->prompt = ids_text(request->prompt_ids, request->num_prompt_ids, &length)))
        return snprintf(error, error_size, "cannot decode the prompt's token ids"), NULL;
    int32_t *ids = request->prompt_ids;
    *count = request->num_prompt_ids;
    request->prompt_ids = NULL;
    return ids;
}

static int generates_text(void) {
    const pf_model_info *info = &the_server.info;
    return !info->is_encoder && !info->num_mel_bins && (info->is_encoder_decoder || info->head == PF_HEAD_CAUSAL_LM);
}

/* tools on this model: its chat template must read them, and define a format of calls for
   tool_choice "auto"; "required" and a named function are forced through the JSON constraint
   (their schemas refused by name when the constraint does not support them). 0 or an HTTP status. */
static int check_tools(completion_request *request, char *error, size_t error_size) {
    const char *chat_template = pf_tokenizer_chat_template(the_server.tokenizer);
    const tool_request *tools = &request->tools;
    if (!tools->tools_json && !request->has_tool_calls) return 0;
    if (!chat_template || !strstr(chat_template, "tool"))
        return snprintf(error, error_size, "'tools': this model's chat template does not read tools or tool calls"), 400;
    if (tools->choice == TOOL_CHOICE_AUTO && tool_format_of(chat_template) == TOOL_FORMAT_NONE)
        return snprintf(error, error_size, "'tools' with tool_choice \"auto\": this model's chat template defines no format of "
                        "tool calls this server reads (Hermes/Qwen <tool_call>, Llama 3.1 JSON, Mistral [TOOL_CALLS]); "
                        "tool_choice \"required\" or a named function work with any template that reads tools"), 400;
    if (tools->forced_schema) {
        pf_result r = pf_json_constraint_new(the_server.model, tools->forced_schema, &request->json_constraint);
        if (r) return snprintf(error, error_size, "'tool_choice': the function's parameters: %s", pf_error_message(the_server.model)),
                      (int)http_status(r);
    }
    return 0;
}

/* A chat request's prompt: its tools checked, then the model's chat template (when it has one)
   replaces the plain "role: content" prompt. 0 or an HTTP status. */
static int chat_prompt(completion_request *request, char *error, size_t error_size) {
    int status = check_tools(request, error, error_size);
    if (status || !pf_tokenizer_chat_template(the_server.tokenizer)) return status;
    char *text = NULL, *copy = NULL;
    pf_chat_options options = pf_chat_options_init();
    options.tools = request->tools.tools_json;
    pf_result r = pf_apply_chat_template_json(the_server.tokenizer, request->messages_json, &options, &text, error, error_size);
    if (r == PF_OK && !(copy = strdup(text))) r = PF_ERROR_OUT_OF_MEMORY, snprintf(error, error_size, "out of memory");
    pf_string_free(text);
    if (r) return (int)http_status(r);
    free(request->prompt);
    request->prompt = copy;
    return 0;
}

/* POST /apply-template (llama.cpp's route): a chat body's prompt, {"prompt": text}, as the chat
   route would give it to the model. */
static MHD_Result apply_template(struct MHD_Connection *connection, const char *body, size_t length) {
    completion_request request;
    char error[512];
    int status = parse_completion_request(body, length, 1, &the_server.limits, &request, error, sizeof error);
    if (!status) status = chat_prompt(&request, error, sizeof error);
    if (status) {
        completion_request_free(&request); /* a failed parse left it empty */
        return send_error(connection, (unsigned)status, error);
    }
    json_t *answer = json_pack("{s:o}", "prompt", json_text(request.prompt, strlen(request.prompt)));
    completion_request_free(&request);
    return send_json(connection, 200, answer);
}

/* The request's global_attention positions as a 0 or 1 for each of the prompt's tokens
   (pf_generate_options.global_attention's row); 0, or -1 with the reason in error. */
static int global_row(completion_request *request, int prompt_length, char *error, size_t error_size) {
    if (!(request->global_row = (int32_t *)calloc((size_t)prompt_length, sizeof *request->global_row)))
        return snprintf(error, error_size, "out of memory"), -1;
    for (int i = 0; i < request->num_global_positions; i++) {
        int32_t at = request->global_positions[i];
        if (at >= prompt_length)
            return snprintf(error, error_size, "'global_attention': position %d is past the prompt's %d tokens", (int)at,
                            prompt_length), -1;
        request->global_row[at] = 1;
    }
    request->global_rows[0] = request->global_row;
    return 0;
}

static MHD_Result completions(struct MHD_Connection *connection, int chat, const char *body, size_t length) {
    completion_request request;
    char error[512];
    if (!generates_text())
        return send_error(connection, 400, "this model does not generate text (an encoder, a classifier or a bare "
                                           "decoder: use /v1/embeddings where it embeds)");
    int status = parse_completion_request(body, length, chat, &the_server.limits, &request, error, sizeof error);
    if (status) return send_error(connection, (unsigned)status, error);
    if (request.user) server_log("a request for user \"%s\"", request.user); /* OpenAI's end-user id: for the log */
    if (request.json_output) { /* response_format: the schema checked (and refused by name) before any work */
        pf_result r = pf_json_constraint_new(the_server.model, request.json_schema, &request.json_constraint);
        if (r) {
            snprintf(error, sizeof error, "'response_format': %s", pf_error_message(the_server.model));
            completion_request_free(&request);
            return send_error(connection, http_status(r), error);
        }
    }
    int templated = chat && pf_tokenizer_chat_template(the_server.tokenizer) != NULL;
    if (chat && (status = chat_prompt(&request, error, sizeof error))) {
        completion_request_free(&request);
        return send_error(connection, (unsigned)status, error);
    }
    int prompt_length = 0;
    int32_t *prompt = request.prompt_ids ? prompt_from_ids(&request, &prompt_length, error, sizeof error)
                                         : tokenize_prompt(request.prompt, templated, &prompt_length, error, sizeof error);
    if (!prompt || (request.global_positions && global_row(&request, prompt_length, error, sizeof error))) {
        free(prompt);
        completion_request_free(&request);
        return send_error(connection, 400, error);
    }
    if (request.stream) return start_stream(connection, &request, prompt, prompt_length);
    MHD_Result sent = complete(connection, &request, prompt, prompt_length);
    free(prompt);
    completion_request_free(&request);
    return sent;
}

#define MAX_EMBEDDING_INPUTS 256 /* texts a request */

/* Whether the model embeds text (pf_embed_texts): a text encoder, or a bare decoder (the ...Model
   of decoder-based embedders: e5-mistral). */
static int embeds_text(void) {
    const pf_model_info *info = &the_server.info;
    int bare_decoder = !info->is_encoder && !info->is_encoder_decoder && info->head == PF_HEAD_NONE;
    return (info->is_encoder && !info->image_size && !info->audio_stride) || bare_decoder;
}

/* POST /v1/embeddings: OpenAI's body and answer; the texts as sentence-transformers embeds them. */
static MHD_Result embeddings(struct MHD_Connection *connection, const char *body, size_t length) {
    char error[512];
    if (!embeds_text()) return send_error(connection, 400, "this model makes no text embeddings (it is not a text encoder)");
    embedding_request request;
    int width = the_server.info.hidden_size;
    int status = parse_embedding_request(body, length, width, MAX_EMBEDDING_INPUTS, &request, error, sizeof error);
    if (status) return send_error(connection, (unsigned)status, error);
    float *vectors = (float *)malloc((size_t)request.count * (size_t)width * sizeof(float));
    pf_result r = vectors ? pf_embed_texts(the_server.model, (const char *const *)request.texts, request.count, NULL, vectors)
                          : PF_ERROR_OUT_OF_MEMORY;
    json_t *data = json_array();
    int tokens = 0;
    for (int i = 0; !r && i < request.count; i++) {
        size_t n = 0;
        pf_tokenize_special(the_server.tokenizer, request.texts[i], strlen(request.texts[i]), NULL, 0, &n);
        tokens += (int)n;
        json_t *embedding;
        if (request.base64) {
            char *text = base64_floats(vectors + (size_t)i * width, (size_t)width);
            embedding = text ? json_string(text) : NULL;
            free(text);
        } else {
            embedding = json_array();
            for (int j = 0; j < width; j++) json_array_append_new(embedding, json_real(vectors[(size_t)i * width + j]));
        }
        json_array_append_new(data, json_pack("{s:s,s:i,s:o}", "object", "embedding", "index", i, "embedding", embedding));
    }
    free(vectors);
    embedding_request_free(&request);
    if (r) {
        json_decref(data);
        snprintf(error, sizeof error, "embedding failed: %s: %s", pf_result_string(r), pf_error_message(the_server.model));
        return send_error(connection, http_status(r), error);
    }
    return send_json(connection, 200, json_pack("{s:s,s:o,s:s,s:{s:i,s:i}}", "object", "list", "data", data, "model",
                                                the_server.model_name, "usage", "prompt_tokens", tokens, "total_tokens",
                                                tokens));
}

#define MAX_RERANK_DOCUMENTS 1024

/* The relevance of each (query, document) pair by a cross-encoder (a sequence classifier of one
   label: ms-marco MiniLM, bge-reranker): the pair tokenized as its tokenizer pairs texts (cut
   longest first to the model's positions), the logit through a sigmoid, as sentence-transformers'
   CrossEncoder scores it; max_batch pairs a pass. *tokens: the pairs' tokens in all. */
static pf_result rerank_scores(const rerank_request *request, float *scores, int *tokens) {
    int max = the_server.info.max_positions, batch = the_server.max_batch;
    int32_t *ids[MAX_RERANK_DOCUMENTS] = {0}, *types[MAX_RERANK_DOCUMENTS] = {0};
    int lengths[MAX_RERANK_DOCUMENTS];
    pf_tokenize_options o = pf_tokenize_options_init();
    o.max_length = (size_t)max;
    pf_result r = PF_OK;
    for (int i = 0; i < request->count && !r; i++) {
        size_t n = 0;
        const char *q = request->query, *doc = request->documents[i];
        r = pf_tokenize_pair(the_server.tokenizer, q, strlen(q), doc, strlen(doc), &o, NULL, NULL, 0, &n);
        if (r == PF_ERROR_BUFFER_TOO_SMALL) r = PF_OK;
        ids[i] = (int32_t *)malloc((n + 1) * sizeof(int32_t));
        types[i] = (int32_t *)malloc((n + 1) * sizeof(int32_t));
        if (!r && (!ids[i] || !types[i])) r = PF_ERROR_OUT_OF_MEMORY;
        if (!r) r = pf_tokenize_pair(the_server.tokenizer, q, strlen(q), doc, strlen(doc), &o, ids[i], types[i], n, &n);
        lengths[i] = (int)n;
        *tokens += (int)n;
    }
    for (int first = 0; first < request->count && !r; first += batch) {
        int n = request->count - first < batch ? request->count - first : batch;
        pf_encoding *e = NULL;
        r = pf_encode(the_server.model, (const int32_t *const *)ids + first, (const int32_t *const *)types + first,
                      lengths + first, n, &e);
        for (int i = 0; !r && i < n; i++) scores[first + i] = (float)(1 / (1 + exp(-(double)e->logits[i])));
        pf_encoding_free(e);
    }
    for (int i = 0; i < request->count; i++) free(ids[i]), free(types[i]);
    return r;
}

/* POST /v1/rerank (and /rerank): the documents by relevance to the query, best first, as
   llama.cpp's and vLLM's servers answer (Jina's and Cohere's API). */
static MHD_Result rerank(struct MHD_Connection *connection, const char *body, size_t length) {
    char error[512];
    if (the_server.info.head != PF_HEAD_SEQUENCE_CLASSIFICATION || the_server.info.num_labels != 1 || !the_server.tokenizer)
        return send_error(connection, 400, "this model does not rerank: that takes a cross-encoder (a sequence "
                                           "classifier of one label, with its tokenizer)");
    rerank_request request;
    int status = parse_rerank_request(body, length, MAX_RERANK_DOCUMENTS, &request, error, sizeof error);
    if (status) return send_error(connection, (unsigned)status, error);
    float *scores = (float *)malloc((size_t)request.count * sizeof(float));
    int *order = (int *)malloc((size_t)request.count * sizeof(int));
    int tokens = 0;
    pf_result r = scores && order ? rerank_scores(&request, scores, &tokens) : PF_ERROR_OUT_OF_MEMORY;
    json_t *results = json_array();
    for (int i = 0; !r && i < request.count; i++) { /* best first; ties keep the documents' order */
        int j = i;
        for (; j > 0 && scores[order[j - 1]] < scores[i]; j--) order[j] = order[j - 1];
        order[j] = i;
    }
    for (int k = 0; !r && k < request.top_n; k++) {
        int i = order[k];
        json_t *item = json_pack("{s:i,s:f}", "index", i, "relevance_score", (double)scores[i]);
        if (request.return_documents)
            json_object_set_new(item, "document", json_pack("{s:s}", "text", request.documents[i]));
        json_array_append_new(results, item);
    }
    free(scores), free(order);
    rerank_request_free(&request);
    if (r) {
        json_decref(results);
        snprintf(error, sizeof error, "reranking failed: %s: %s", pf_result_string(r), pf_error_message(the_server.model));
        return send_error(connection, http_status(r), error);
    }
    return send_json(connection, 200, json_pack("{s:s,s:s,s:o,s:{s:i,s:i}}", "object", "list", "model",
                                                the_server.model_name, "results", results, "usage", "prompt_tokens",
                                                tokens, "total_tokens", tokens));
}

/* POST /tokenize and /detokenize, as llama.cpp's server answers them: {"tokens": [...]} and {"content": "..."}. */
static MHD_Result tokens_route(struct MHD_Connection *connection, int detokenize, const char *body, size_t length) {
    char error[512];
    token_request request;
    int status = parse_token_request(body, length, detokenize, the_server.info.max_positions, &request, error, sizeof error);
    if (status) return send_error(connection, (unsigned)status, error);
    json_t *answer = NULL;
    if (detokenize) {
        size_t n = 0;
        char *text = NULL;
        for (int i = 0; i < request.count; i++)
            if (request.tokens[i] >= the_server.info.vocab_size) {
                token_request_free(&request);
                return send_error(connection, 400, "a token id is outside the vocabulary");
            }
        text = ids_text(request.tokens, request.count, &n);
        answer = text ? json_pack("{s:o}", "content", json_text(text, n)) : NULL;
        free(text);
    } else {
        size_t n = 0;
        pf_result (*encode)(const pf_tokenizer *, const char *, size_t, int32_t *, size_t, size_t *) =
            request.add_special ? pf_tokenize_special : pf_tokenize;
        size_t text_length = strlen(request.content);
        encode(the_server.tokenizer, request.content, text_length, NULL, 0, &n);
        int32_t *ids = (int32_t *)malloc((n + 1) * sizeof *ids);
        if (ids && !encode(the_server.tokenizer, request.content, text_length, ids, n, &n)) {
            json_t *list = json_array();
            for (size_t i = 0; i < n; i++) json_array_append_new(list, json_integer(ids[i]));
            answer = json_pack("{s:o}", "tokens", list);
        }
        free(ids);
    }
    token_request_free(&request);
    return answer ? send_json(connection, 200, answer) : send_error(connection, 500, "out of memory");
}

/* An optional query parameter within [lo, hi]; -1 when it is present but not such an integer. */
static int query_integer(struct MHD_Connection *connection, const char *name, int lo, int hi, int *value) {
    const char *text = MHD_lookup_connection_value(connection, MHD_GET_ARGUMENT_KIND, name);
    char *end = NULL;
    if (!text) return 0;
    long v = strtol(text, &end, 10);
    if (end == text || *end || v < lo || v > hi) return -1;
    *value = (int)v;
    return 0;
}

/* The Python parallelformers example's route: beam search, and the prompt and continuation as
   one text, as tokenizer.batch_decode(model.generate(...)) gives them. */
static MHD_Result generate_text(struct MHD_Connection *connection, const char *text) {
    pf_generate_options o = pf_generate_options_init();
    char error[512];
    if (!generates_text()) return send_error(connection, 400, "this model does not generate text");
    o.num_beams = 5;
    o.no_repeat_ngram_size = 4;
    o.max_length = 15;
    if (query_integer(connection, "max_length", 1, the_server.info.max_positions, &o.max_length) ||
        query_integer(connection, "num_beams", 1, the_server.limits.max_n, &o.num_beams) ||
        query_integer(connection, "no_repeat_ngram_size", 0, 64, &o.no_repeat_ngram_size))
        return send_error(connection, 400, "max_length, num_beams (at most --max-n) and no_repeat_ngram_size want integers");
    int prompt_length = 0;
    int32_t *prompt = tokenize_prompt(text, 0, &prompt_length, error, sizeof error);
    if (!prompt) return send_error(connection, 400, error);
    int32_t *out = (int32_t *)malloc((size_t)(prompt_length + o.max_length + 1) * sizeof *out);
    int new_tokens = 0;
    pf_result r = out ? pf_generate(the_server.model, prompt, prompt_length, &o, out + prompt_length, o.max_length + 1, &new_tokens)
                      : PF_ERROR_OUT_OF_MEMORY;
    if (r) {
        free(prompt), free(out);
        snprintf(error, sizeof error, "generation failed: %s: %s", pf_result_string(r), pf_error_message(the_server.model));
        return send_error(connection, http_status(r), error);
    }
    memcpy(out, prompt, (size_t)prompt_length * sizeof *out);
    free(prompt);
    size_t length = 0;
    char *output = ids_text(out, prompt_length + new_tokens, &length);
    free(out);
    if (!output) return send_error(connection, 500, "cannot decode the output");
    json_t *body = json_pack("{s:o,s:o}", "inputs", json_text(text, strlen(text)), "outputs", json_text(output, length));
    free(output);
    return send_json(connection, 200, body);
}

/* A POST body as it arrives, bounded by --max-body-bytes and --request-timeout. */
typedef struct upload {
    char *body;
    size_t length;
    int too_large;
    double started; /* its headers' arrival, seconds */
} upload;

/* Whether the request carries the --api-key (compared in time independent of where it differs). */
static int authorized(struct MHD_Connection *connection) {
    if (!the_server.api_key) return 1;
    const char *given = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!given || strncmp(given, "Bearer ", 7)) return 0;
    given += 7;
    size_t a = strlen(given), b = strlen(the_server.api_key), n = a > b ? a : b;
    unsigned char differ = a != b;
    for (size_t i = 0; i < n; i++) differ |= (unsigned char)((i < a ? given[i] : 0) ^ (i < b ? the_server.api_key[i] : 0));
    return !differ;
}

/* OPTIONS: a browser's CORS preflight, answered when --cors allows an origin. */
static MHD_Result preflight(struct MHD_Connection *connection) {
    if (!the_server.cors_origin) return send_error(connection, 405, "OPTIONS answers CORS preflights only with --cors");
    struct MHD_Response *response = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    if (!response) return MHD_NO;
    MHD_add_response_header(response, "Access-Control-Allow-Methods", "GET, POST, OPTIONS");
    MHD_add_response_header(response, "Access-Control-Allow-Headers", "Authorization, Content-Type");
    MHD_add_response_header(response, "Access-Control-Max-Age", "600");
    return queue_response(connection, 204, response);
}

static MHD_Result handle(void *user, struct MHD_Connection *connection, const char *url, const char *method,
                         const char *version, const char *upload_data, size_t *upload_data_size, void **state) {
    (void)user, (void)version;
    int post = !strcmp(method, "POST"), get = !strcmp(method, "GET");
    if (!*state) { /* the first call of a request (a POST's headers only) */
        pthread_mutex_lock(&the_server.counter_lock);
        the_server.metrics.requests++;
        pthread_mutex_unlock(&the_server.counter_lock);
        if (!rate_allows(connection)) return send_error(connection, 429, "too many requests from this address (--rate-limit)");
        if (!strcmp(method, "OPTIONS")) return preflight(connection);
        if (strcmp(url, "/health") && !authorized(connection))
            return send_error(connection, 401, "this server wants \"Authorization: Bearer <its --api-key>\"");
    }
    if (post && !*state) { /* the first call: headers only */
        const char *declared = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (declared && strtoull(declared, NULL, 10) > the_server.max_body_bytes)
            return send_error(connection, 413, "the body is larger than --max-body-bytes");
        upload *u = (upload *)calloc(1, sizeof *u);
        if (!u) return MHD_NO;
        u->started = now_seconds();
        *state = u;
        return MHD_YES;
    }
    if (post && *upload_data_size) { /* more of the body */
        upload *u = (upload *)*state;
        if (now_seconds() - u->started > the_server.request_timeout_s) return MHD_NO; /* a trickle: drop it */
        size_t add = *upload_data_size;
        *upload_data_size = 0;
        if (u->too_large || u->length + add > the_server.max_body_bytes) {
            u->too_large = 1;
            return MHD_YES;
        }
        char *grown = (char *)realloc(u->body, u->length + add + 1);
        if (!grown) return MHD_NO;
        memcpy(grown + u->length, upload_data, add);
        u->body = grown;
        u->length += add;
        u->body[u->length] = 0;
        return MHD_YES;
    }
    upload *u = (upload *)*state;
    const char *body = u && u->body ? u->body : "";
    size_t body_length = u ? u->length : 0;
    int chat = !strcmp(url, "/v1/chat/completions");
    if (chat || !strcmp(url, "/v1/completions")) {
        if (!post) return send_error(connection, 405, "use POST");
        if (u->too_large) return send_error(connection, 413, "the body is larger than --max-body-bytes");
        return completions(connection, chat, body, body_length);
    }
    if (!strcmp(url, "/apply-template")) {
        if (!post) return send_error(connection, 405, "use POST");
        if (u->too_large) return send_error(connection, 413, "the body is larger than --max-body-bytes");
        return apply_template(connection, body, body_length);
    }
    if (!strcmp(url, "/v1/embeddings")) {
        if (!post) return send_error(connection, 405, "use POST");
        if (u->too_large) return send_error(connection, 413, "the body is larger than --max-body-bytes");
        return embeddings(connection, body, body_length);
    }
    if (!strcmp(url, "/v1/rerank") || !strcmp(url, "/rerank")) {
        if (!post) return send_error(connection, 405, "use POST");
        if (u->too_large) return send_error(connection, 413, "the body is larger than --max-body-bytes");
        return rerank(connection, body, body_length);
    }
    if (!strcmp(url, "/tokenize") || !strcmp(url, "/detokenize")) {
        if (!post) return send_error(connection, 405, "use POST");
        if (u->too_large) return send_error(connection, 413, "the body is larger than --max-body-bytes");
        return tokens_route(connection, url[1] == 'd', body, body_length);
    }
    if (!strncmp(url, "/generate_text/", 15)) {
        if (!get) return send_error(connection, 405, "use GET");
        return generate_text(connection, url + 15);
    }
    if (!strcmp(url, "/metrics")) {
        if (!get) return send_error(connection, 405, "use GET");
        return metrics(connection);
    }
    if (!strcmp(url, "/health")) {
        if (!get) return send_error(connection, 405, "use GET");
        return send_json(connection, 200, json_pack("{s:s,s:s,s:i}", "status", "ok", "model", the_server.model_name,
                                                    "ranks", pf_num_ranks(the_server.model)));
    }
    if (!strcmp(url, "/v1/models")) {
        if (!get) return send_error(connection, 405, "use GET");
        return send_json(connection, 200, json_pack("{s:s,s:[{s:s,s:s,s:I,s:s}]}", "object", "list", "data", "id",
                                                    the_server.model_name, "object", "model", "created",
                                                    (json_int_t)the_server.started, "owned_by", "parallelformers"));
    }
    return send_error(connection, 404, "no such route");
}

static void request_done(void *user, struct MHD_Connection *connection, void **state, enum MHD_RequestTerminationCode code) {
    (void)user, (void)connection, (void)code;
    upload *u = (upload *)*state;
    if (u) free(u->body), free(u);
    *state = NULL;
}


/* ---- the server's life ---- */

void server_defaults(server *s) {
    memset(s, 0, sizeof *s);
    s->limits.max_tokens = 512;
    s->limits.max_n = 8;
    s->max_body_bytes = 1 << 20;
    s->max_prompt_tokens = 0; /* 0: the model's positions less one */
    s->max_batch = 16;
    s->max_connections = 256;
    s->max_connections_per_address = 32;
    s->request_timeout_s = 10;
    s->rate_per_minute = 6000;
}

int server_cache_rows(const server *s) {
    int rows = s->max_batch > s->limits.max_n ? s->max_batch : s->limits.max_n;
    return rows < 5 ? 5 : rows;
}

void server_ready(server *s, const char *dir) {
    s->info = pf_get_info(s->model);
    if (!s->max_prompt_tokens || s->max_prompt_tokens >= s->info.max_positions) s->max_prompt_tokens = s->info.max_positions - 1;
    const char *base = dir + strlen(dir);
    while (base > dir && base[-1] == '/') base--;
    const char *name_end = base;
    while (base > dir && base[-1] != '/') base--;
    if (s->alias) snprintf(s->model_name, sizeof s->model_name, "%s", s->alias);
    else snprintf(s->model_name, sizeof s->model_name, "%.*s", (int)(name_end - base), base);
    s->started = time(NULL);
    s->seed_base = (uint64_t)s->started ^ ((uint64_t)getpid() << 32);
    pthread_mutex_init(&s->counter_lock, NULL);
}

struct MHD_Daemon *server_start(const struct sockaddr *address, unsigned extra_flags) {
    const server *s = &the_server;
    return MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG | extra_flags,
                            0, NULL, NULL, handle, NULL, MHD_OPTION_SOCK_ADDR, address, MHD_OPTION_NOTIFY_COMPLETED,
                            request_done, NULL, MHD_OPTION_CONNECTION_LIMIT, s->max_connections,
                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, s->max_connections_per_address,
                            MHD_OPTION_CONNECTION_TIMEOUT, s->request_timeout_s, MHD_OPTION_END);
}
