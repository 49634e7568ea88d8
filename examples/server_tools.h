/* server_tools: OpenAI's tools on /v1/chat/completions. The request's tools, tool_choice and
   parallel_tool_calls; the JSON schema that forces a call ("required", a named function) through
   the library's JSON constraint; and tool calls read back from a model's text in the format its
   chat template defines (Hermes / Qwen's <tool_call>, Llama 3.1+'s JSON, Mistral's [TOOL_CALLS]).
   Kept apart from the HTTP side so that a C test and the request fuzz target can drive it. */
#ifndef SERVER_TOOLS_H
#define SERVER_TOOLS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

typedef enum { TOOL_CHOICE_NONE, TOOL_CHOICE_AUTO, TOOL_CHOICE_REQUIRED, TOOL_CHOICE_NAMED } tool_choice;

/* How a family's chat template asks the model to write its calls. */
typedef enum {
    TOOL_FORMAT_NONE,       /* the template defines none we read */
    TOOL_FORMAT_HERMES,     /* <tool_call>{"name": ..., "arguments": {...}}</tool_call>, repeated (Qwen2.5, Qwen3, Hermes) */
    TOOL_FORMAT_LLAMA_JSON, /* [<|python_tag|>]{"name": ..., "parameters": {...}}, several joined by ';' (Llama 3.1+) */
    TOOL_FORMAT_MISTRAL     /* [TOOL_CALLS] [{"name": ..., "arguments": {...}}, ...] (Mistral v0.3) */
} tool_format;

typedef struct tool_request {
    char *tools_json;    /* the request's tools as given (key order kept), JSON text; NULL: none; owned */
    tool_choice choice;  /* "none" without tools; "auto" by default with them */
    char *name;          /* TOOL_CHOICE_NAMED: the function; owned */
    int parallel;        /* parallel_tool_calls (default true): several calls in one reply */
    char *forced_schema; /* REQUIRED / NAMED: the JSON schema the reply follows; owned */
} tool_request;

/* Reads "tools", "tool_choice" and "parallel_tool_calls" of a chat body. 0, or 400 with the
   reason in error (a malformed tool, a named function not among the tools, tool_choice without
   tools); tool_request_free after either. */
int parse_tool_request(json_t *root, tool_request *out, char *error, size_t error_size);
void tool_request_free(tool_request *request);

/* The format a chat template's text defines, by the markers it writes. */
tool_format tool_format_of(const char *chat_template);

/* Streaming: how many bytes of text (a reply so far) are content that no call can begin within;
   *begun is set when a call has begun at that offset. */
size_t tool_text_ready(tool_format format, const char *text, size_t length, int *begun);

/* The calls of a finished reply, as OpenAI's tool_calls (ids from id_seed): NULL when the text
   holds none, or when they do not parse (then all of it is content, as vLLM answers).
   *content_length: the bytes of content before the first call. */
json_t *tool_calls_in_text(tool_format format, const char *text, size_t length, size_t *content_length, uint64_t id_seed);

/* A forced reply (the JSON the constraint made of forced_schema) as tool_calls; NULL when it is
   not one (cut short by max_tokens). */
json_t *forced_tool_calls(const tool_request *request, const char *text, size_t length, uint64_t id_seed);

#endif
