/* server_request: the OpenAI-style request bodies examples/server.c accepts, parsed and checked
   with jansson, and the JSON text it answers with. Kept apart from the HTTP side so that a fuzz
   target (test/fuzz/fuzz_server_request.c) can feed it arbitrary bytes. */
#ifndef SERVER_REQUEST_H
#define SERVER_REQUEST_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "../parallelformers.h"

#define MAX_STOP_STRINGS 4     /* as OpenAI's API */
#define MAX_STOP_STRING_BYTES 256

/* What a request may ask for at most (the server's command line sets these). */
typedef struct request_limits {
    int max_tokens; /* per choice */
    int max_n;      /* choices per request */
} request_limits;

/* A completion request. Chat messages are kept as they came (for the model's chat template) and
   also formatted into one plain prompt (for models without one). */
typedef struct completion_request {
    int chat;           /* 1: /v1/chat/completions */
    char *prompt;       /* UTF-8, NUL-terminated; owned */
    pf_chat_message *messages; /* chat: role and content strings, owned */
    int num_messages;
    int max_tokens;
    double temperature; /* 0: greedy */
    double top_p;
    int n;
    char *stop[MAX_STOP_STRINGS]; /* owned */
    int num_stop;
    int has_seed;
    uint64_t seed;
    int stream;
} completion_request;

/* Parses and checks a request body. Returns 0, or an HTTP status (400) with the reason in error.
   On success *out owns its strings: completion_request_free. */
int parse_completion_request(const char *body, size_t length, int chat, const request_limits *limits,
                             completion_request *out, char *error, size_t error_size);
void completion_request_free(completion_request *request);

/* A JSON string from bytes that may not be valid UTF-8 (a model's text can end mid-character, a
   URL can hold anything): each invalid byte becomes U+FFFD, as Python's errors="replace" would. */
json_t *json_text(const char *bytes, size_t length);

/* {"error": {"message": ..., "type": ..., "code": status}} as compact text; the caller frees it. */
char *error_body(int status, const char *message);

#endif
