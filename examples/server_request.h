/* server_request: the OpenAI-style request bodies examples/server.c accepts, parsed and checked
   with jansson, and the JSON text it answers with. Kept apart from the HTTP side so that a fuzz
   target (test/fuzz/fuzz_server_request.c) can feed it arbitrary bytes. */
#ifndef SERVER_REQUEST_H
#define SERVER_REQUEST_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "../parallelformers.h"
#include "server_tools.h"

#define MAX_STOP_STRINGS 4     /* as OpenAI's API */
#define MAX_STOP_STRING_BYTES 256
#define MAX_LOGIT_BIAS 1024    /* tokens in a logit_bias */

/* What a request may ask for at most (the server's command line sets these). */
typedef struct request_limits {
    int max_tokens; /* per choice */
    int max_n;      /* choices per request */
} request_limits;

/* A completion request. Chat messages are kept as they came (for the model's chat template) and
   also formatted into one plain prompt (for models without one). */
typedef struct completion_request {
    int chat;           /* 1: /v1/chat/completions */
    char *prompt;       /* UTF-8, NUL-terminated; owned (completions given token ids: NULL until
                           the server decodes them, for echo) */
    int32_t *prompt_ids; /* completions: a prompt given as token ids (OpenAI's [int] form); owned */
    int num_prompt_ids;
    pf_chat_message *messages; /* chat: role and content strings, owned */
    int num_messages;
    char *messages_json; /* chat: the messages for the chat template, JSON text (contents as strings,
                            tool calls' arguments as objects); owned */
    int has_tool_calls;  /* chat: an assistant's message holds tool_calls */
    tool_request tools;  /* chat: tools, tool_choice, parallel_tool_calls */
    int max_tokens;
    double temperature; /* 0: greedy */
    double top_p;
    int n;
    char *stop[MAX_STOP_STRINGS]; /* owned */
    int num_stop;
    int has_seed;
    uint64_t seed;
    int stream;
    int include_usage;  /* stream_options.include_usage: a last chunk with the usage */
    int echo;           /* completions: the prompt's text before each choice's */
    int logprobs;       /* chat's logprobs true, or completions' logprobs (an integer, even 0) */
    int top_logprobs;   /* chat's top_logprobs (0..20), completions' logprobs (0..5) */
    int top_k;          /* 0: off (OpenAI has none; vLLM's -1 means off too) */
    double min_p, repetition_penalty, presence_penalty, frequency_penalty;
    pf_token_bias *logit_bias; /* owned */
    int num_logit_bias;
    char *user;         /* the end user's id, for the log; owned */
    int json_output;    /* response_format json_object or json_schema: the output is JSON */
    char *json_schema;  /* json_schema's schema as JSON text (NULL: any JSON object); owned */
    pf_json_constraint *json_constraint; /* built by the server from the two above; owned */
    int32_t *global_positions; /* completions' "global_attention": prompt token positions given global
                                  attention (an LED's encoder); owned, NULL when absent */
    int num_global_positions;
    int32_t *global_row;       /* built by the server from the positions: a 0 or 1 a prompt token; owned */
    const int32_t *global_rows[1]; /* pf_generate_options.global_attention: {global_row} */
} completion_request;

/* Parses and checks a request body. Returns 0, or an HTTP status (400) with the reason in error.
   On success *out owns its strings: completion_request_free. */
int parse_completion_request(const char *body, size_t length, int chat, const request_limits *limits,
                             completion_request *out, char *error, size_t error_size);
void completion_request_free(completion_request *request);

/* POST /v1/embeddings: texts to embed (OpenAI's "input": a string or a list of them). */
typedef struct embedding_request {
    char **texts; /* owned */
    int count;
    int base64;   /* encoding_format "base64": each embedding as its float32 bytes (little-endian) in base64 */
} embedding_request;

/* Parses and checks an embeddings body for a model whose embeddings are width wide, at most
   max_inputs texts. Returns 0, or 400 with the reason in error; embedding_request_free after 0. */
int parse_embedding_request(const char *body, size_t length, int width, int max_inputs, embedding_request *out,
                            char *error, size_t error_size);
void embedding_request_free(embedding_request *request);

/* POST /v1/rerank (and /rerank): a query and documents for a cross-encoder, as llama.cpp's and
   vLLM's servers take them (Jina's and Cohere's API): "query", "documents" (strings, or objects
   with a "text"), "top_n", "return_documents". */
typedef struct rerank_request {
    char *query;       /* owned */
    char **documents;  /* owned */
    int count;
    int top_n;         /* results to return, best first: every document unless "top_n" is given */
    int return_documents;
} rerank_request;

/* Parses and checks a rerank body of at most max_documents documents. Returns 0, or 400 with the
   reason in error; rerank_request_free after 0. */
int parse_rerank_request(const char *body, size_t length, int max_documents, rerank_request *out, char *error,
                         size_t error_size);
void rerank_request_free(rerank_request *request);

/* POST /tokenize ({"content": text, "add_special": bool}) and /detokenize ({"tokens": [ids]}),
   as llama.cpp's server names them. */
typedef struct token_request {
    char *content;     /* /tokenize; owned */
    int add_special;   /* /tokenize: the special tokens the tokenizer adds (a BOS, [CLS] ... [SEP]) */
    int32_t *tokens;   /* /detokenize; owned */
    int count;
} token_request;

int parse_token_request(const char *body, size_t length, int detokenize, int max_tokens, token_request *out,
                        char *error, size_t error_size);
void token_request_free(token_request *request);

/* count floats as base64 of their little-endian bytes, a new NUL-terminated string (NULL without memory). */
char *base64_floats(const float *values, size_t count);

/* A JSON string from bytes that may not be valid UTF-8 (a model's text can end mid-character, a
   URL can hold anything): each invalid byte becomes U+FFFD, as Python's errors="replace" would. */
json_t *json_text(const char *bytes, size_t length);

/* {"error": {"message": ..., "type": ..., "code": status}} as compact text; the caller frees it. */
char *error_body(int status, const char *message);

#endif
