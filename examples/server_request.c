/* server_request.c: see server_request.h. */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include "server_request.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* At s (left bytes): the length of a valid UTF-8 character (*valid = 1), or of the maximal part of
   one that is invalid or cut short (*valid = 0, at least 1 byte), which Unicode's recommended
   practice, Python's errors="replace" and jq each turn into one U+FFFD. */
static size_t utf8_step(const unsigned char *s, size_t left, int *valid) {
    unsigned char c = s[0], lo = 0x80, hi = 0xbf;
    size_t need = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 1;
    if (c == 0xe0) lo = 0xa0;      /* overlong below */
    else if (c == 0xed) hi = 0x9f; /* surrogates */
    else if (c == 0xf0) lo = 0x90; /* overlong below */
    else if (c == 0xf4) hi = 0x8f; /* past U+10FFFF */
    *valid = c > 0 && c < 0x80;    /* a NUL too is replaced: C strings cannot carry it */
    if (c < 0x80 || need == 1) return 1;
    size_t i = 1;
    for (; i < need && i < left; i++) {
        if (s[i] < lo || s[i] > hi) return i;
        lo = 0x80, hi = 0xbf;
    }
    *valid = i == need;
    return i;
}

json_t *json_text(const char *bytes, size_t length) {
    const unsigned char *s = (const unsigned char *)bytes;
    char *clean = (char *)malloc(3 * length + 1); /* a replaced byte grows to three */
    size_t n = 0;
    if (!clean) return NULL;
    for (size_t i = 0; i < length;) {
        int valid;
        size_t step = utf8_step(s + i, length - i, &valid);
        if (valid) memcpy(clean + n, s + i, step), n += step;
        else memcpy(clean + n, "\xef\xbf\xbd", 3), n += 3; /* U+FFFD */
        i += step;
    }
    json_t *string = json_stringn(clean, n);
    free(clean);
    return string;
}

char *error_body(int status, const char *message) {
    const char *type = status == 404 ? "not_found_error" : status >= 500 ? "server_error" : "invalid_request_error";
    json_t *body = json_pack("{s:{s:o,s:s,s:i}}", "error", "message", json_text(message, strlen(message)), "type",
                             type, "code", status);
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    return text;
}

static int fail(char *error, size_t error_size, const char *format, ...) {
    va_list args;
    va_start(args, format);
    vsnprintf(error, error_size, format, args);
    va_end(args);
    return 400;
}

/* Appends text to a growing string; -1 without memory. */
static int append(char **buffer, size_t *length, const char *text) {
    size_t add = strlen(text);
    char *grown = (char *)realloc(*buffer, *length + add + 1);
    if (!grown) return -1;
    memcpy(grown + *length, text, add + 1);
    *buffer = grown;
    *length += add;
    return 0;
}

/* A message's content: a string, or a list of text parts joined by newlines (as vLLM joins them);
   *text is a new string. */
static int message_text(json_t *content, size_t index, char **text, char *error, size_t error_size) {
    size_t length = 0, part_index;
    json_t *part;
    *text = NULL;
    if (json_is_string(content)) {
        if (strlen(json_string_value(content)) != json_string_length(content))
            return fail(error, error_size, "messages[%zu] holds a NUL character", index);
        return (*text = strdup(json_string_value(content))) ? 0 : fail(error, error_size, "out of memory");
    }
    if (!json_is_array(content)) return fail(error, error_size, "messages[%zu].content must be a string or a list of parts", index);
    if (append(text, &length, "")) return fail(error, error_size, "out of memory");
    json_array_foreach(content, part_index, part) {
        json_t *type = json_object_get(part, "type"), *part_text = json_object_get(part, "text");
        if (!json_is_string(type) || strcmp(json_string_value(type), "text") || !json_is_string(part_text) ||
            json_object_size(part) != 2)
            return free(*text), *text = NULL,
                   fail(error, error_size, "messages[%zu].content[%zu]: only text parts ({\"type\": \"text\", \"text\": ...}) "
                        "are supported", index, part_index);
        if (strlen(json_string_value(part_text)) != json_string_length(part_text))
            return free(*text), *text = NULL, fail(error, error_size, "messages[%zu] holds a NUL character", index);
        if ((part_index && append(text, &length, "\n")) || append(text, &length, json_string_value(part_text)))
            return free(*text), *text = NULL, fail(error, error_size, "out of memory");
    }
    return 0;
}

/* An assistant's tool_calls as its template reads them: OpenAI's [{"id", "type": "function",
   "function": {"name", "arguments"}}] with each arguments string parsed into its object (as vLLM
   gives them: templates print `arguments | tojson`). A new array, or NULL (reason in error). */
static json_t *template_tool_calls(json_t *calls, size_t index, char *error, size_t error_size) {
    size_t k;
    json_t *call, *out = json_array();
    if (!json_is_array(calls)) return fail(error, error_size, "messages[%zu].tool_calls must be an array", index), json_decref(out), NULL;
    json_array_foreach(calls, k, call) {
        json_t *id = json_object_get(call, "id"), *type = json_object_get(call, "type"), *function = json_object_get(call, "function");
        json_t *name = json_object_get(function, "name"), *arguments = json_object_get(function, "arguments");
        json_t *parsed = json_is_string(arguments) ? json_loads(json_string_value(arguments), 0, NULL) : NULL;
        if (!json_is_object(call) || json_object_size(call) != 3 || !json_is_string(id) || !json_is_string(type) ||
            strcmp(json_string_value(type), "function") || !json_is_object(function) || json_object_size(function) != 2 ||
            !json_is_string(name) || !json_is_object(parsed)) {
            json_decref(parsed);
            json_decref(out);
            return fail(error, error_size, "messages[%zu].tool_calls[%zu] must be {\"id\", \"type\": \"function\", \"function\": "
                        "{\"name\", \"arguments\": a JSON object as a string}}", index, k), NULL;
        }
        json_array_append_new(out, json_pack("{s:O,s:O,s:{s:O,s:o}}", "id", id, "type", type, "function", "name", name,
                                             "arguments", parsed));
    }
    return out;
}

/* One message for the template: its fields in the client's order, the content as one string (as
   the plain prompt has it; null with tool_calls), tool_calls' arguments as objects. Fields other
   than role, content, name, tool_calls and tool_call_id are refused. */
static json_t *template_message(json_t *message, const char *content, size_t index, char *error, size_t error_size) {
    const char *key;
    json_t *value, *out = json_object();
    json_object_foreach(message, key, value) {
        json_t *field = NULL;
        if (!strcmp(key, "content")) field = content ? json_string(content) : json_null();
        else if (!strcmp(key, "tool_calls") && !json_is_null(value)) field = template_tool_calls(value, index, error, error_size);
        else if (!strcmp(key, "role") || json_is_null(value)) field = json_incref(value);
        else if ((!strcmp(key, "name") || !strcmp(key, "tool_call_id")) && json_is_string(value)) field = json_incref(value);
        else if (!strcmp(key, "name") || !strcmp(key, "tool_call_id"))
            fail(error, error_size, "messages[%zu].%s must be a string", index, key);
        else
            fail(error, error_size, "messages[%zu].%s is not supported by this server", index, key);
        if (!field) return json_decref(out), NULL;
        json_object_set_new(out, key, field);
    }
    return out;
}

/* Chat messages kept for the model's chat template (as JSON), and as one plain prompt for a model
   without one: "role: content" lines, then "assistant:" for the model to continue. */
static int format_messages(json_t *messages, completion_request *out, char *error, size_t error_size) {
    size_t length = 0, index;
    json_t *message, *for_template = json_array();
    char **prompt = &out->prompt;
    int status = 0;
    if (!json_is_array(messages) || json_array_size(messages) == 0)
        return json_decref(for_template), fail(error, error_size, "'messages' must be a non-empty array");
    *prompt = NULL;
    out->messages = (pf_chat_message *)calloc(json_array_size(messages), sizeof *out->messages);
    if (!out->messages) return json_decref(for_template), fail(error, error_size, "out of memory");
    json_array_foreach(messages, index, message) {
        json_t *role = json_object_get(message, "role"), *content = json_object_get(message, "content");
        json_t *calls = json_object_get(message, "tool_calls");
        if (!json_is_object(message)) { status = fail(error, error_size, "messages[%zu] must be an object", index); break; }
        if (!json_is_string(role) || json_string_length(role) == 0) {
            status = fail(error, error_size, "messages[%zu].role must be a non-empty string", index);
            break;
        }
        if (strlen(json_string_value(role)) != json_string_length(role)) {
            status = fail(error, error_size, "messages[%zu] holds a NUL character", index);
            break;
        }
        if (calls && !json_is_null(calls) && strcmp(json_string_value(role), "assistant")) {
            status = fail(error, error_size, "messages[%zu].tool_calls is for an assistant's message", index);
            break;
        }
        pf_chat_message *m = &out->messages[out->num_messages];
        int without_content = (!content || json_is_null(content)) && json_array_size(calls) > 0; /* a reply of calls only */
        if (!without_content && (status = message_text(content, index, (char **)&m->content, error, error_size))) break;
        json_t *kept = template_message(message, m->content, index, error, error_size);
        if (!kept || !(m->role = strdup(json_string_value(role)))) {
            free((char *)m->content);
            json_decref(kept);
            status = kept ? fail(error, error_size, "out of memory") : 400;
            break;
        }
        json_array_append_new(for_template, kept);
        out->has_tool_calls |= json_array_size(calls) > 0;
        out->num_messages++;
        if (append(prompt, &length, m->role) || append(prompt, &length, ": ") ||
            append(prompt, &length, m->content ? m->content : "") || append(prompt, &length, "\n")) {
            status = fail(error, error_size, "out of memory");
            break;
        }
    }
    if (!status && append(prompt, &length, "assistant:")) status = fail(error, error_size, "out of memory");
    if (!status && !(out->messages_json = json_dumps(for_template, JSON_COMPACT))) status = fail(error, error_size, "out of memory");
    json_decref(for_template);
    return status;
}

/* An optional integer field within [lo, hi]: 0 when absent or null (value untouched). */
static int integer_field(json_t *root, const char *name, long long lo, long long hi, long long *value, char *error,
                         size_t error_size) {
    json_t *field = json_object_get(root, name);
    if (!field || json_is_null(field)) return 0;
    if (!json_is_integer(field)) return fail(error, error_size, "'%s' must be an integer", name);
    long long v = json_integer_value(field);
    if (v < lo || v > hi) return fail(error, error_size, "'%s' must be from %lld to %lld, not %lld", name, lo, hi, v);
    *value = v;
    return 0;
}

/* An optional number field within [lo, hi] (above lo when above_lo). */
static int number_field(json_t *root, const char *name, double lo, double hi, int above_lo, double *value, char *error,
                        size_t error_size) {
    json_t *field = json_object_get(root, name);
    if (!field || json_is_null(field)) return 0;
    if (!json_is_number(field)) return fail(error, error_size, "'%s' must be a number", name);
    double v = json_number_value(field);
    if (!(above_lo ? v > lo : v >= lo) || !(v <= hi))
        return fail(error, error_size, "'%s' must be %s %g and at most %g, not %g", name, above_lo ? "above" : "at least",
                    lo, hi, v);
    *value = v;
    return 0;
}

static int parse_stop(json_t *stop, completion_request *out, char *error, size_t error_size) {
    json_t *strings = stop, *one = NULL;
    size_t index;
    json_t *item;
    if (!stop || json_is_null(stop)) return 0;
    if (json_is_string(stop)) strings = one = json_array(), json_array_append(one, stop);
    if (!json_is_array(strings) || json_array_size(strings) > MAX_STOP_STRINGS) {
        json_decref(one);
        return fail(error, error_size, "'stop' must be a string or an array of at most %d strings", MAX_STOP_STRINGS);
    }
    int status = 0;
    json_array_foreach(strings, index, item) {
        size_t length = json_string_length(item);
        if (!json_is_string(item) || length == 0 || length > MAX_STOP_STRING_BYTES) {
            status = fail(error, error_size, "each stop sequence must be a string of 1 to %d bytes", MAX_STOP_STRING_BYTES);
            break;
        }
        if (!(out->stop[out->num_stop] = strdup(json_string_value(item)))) {
            status = fail(error, error_size, "out of memory");
            break;
        }
        out->num_stop++;
    }
    json_decref(one);
    return status;
}

/* Every field of a completions (1) or chat (2) body: any other is refused, naming it, so that
   nothing a client asks for is silently ignored. A neutral-only field is one we do not implement:
   accepted only with the value that asks for nothing (neutral_field). */
enum { COMPLETIONS = 1, CHAT = 2, BOTH = 3 };
static const struct {
    const char *name;
    int endpoints;
    int neutral_only;
} known_fields[] = {
    {"model", BOTH, 0}, {"prompt", COMPLETIONS, 0}, {"messages", CHAT, 0}, {"max_tokens", BOTH, 0},
    {"max_completion_tokens", CHAT, 0}, {"n", BOTH, 0}, {"temperature", BOTH, 0}, {"top_p", BOTH, 0},
    {"top_k", BOTH, 0}, {"min_p", BOTH, 0}, {"repetition_penalty", BOTH, 0}, {"presence_penalty", BOTH, 0},
    {"frequency_penalty", BOTH, 0}, {"logit_bias", BOTH, 0}, {"seed", BOTH, 0}, {"stop", BOTH, 0},
    {"stream", BOTH, 0}, {"stream_options", BOTH, 0}, {"echo", COMPLETIONS, 0}, {"user", BOTH, 0},
    {"logprobs", BOTH, 0}, {"top_logprobs", CHAT, 0}, {"response_format", BOTH, 0}, {"tools", CHAT, 0},
    {"tool_choice", CHAT, 0}, {"parallel_tool_calls", CHAT, 0}, {"functions", CHAT, 1}, {"function_call", CHAT, 1},
    {"suffix", COMPLETIONS, 1}, {"best_of", COMPLETIONS, 1}, {"store", CHAT, 1}, {"metadata", CHAT, 1},
    {"service_tier", BOTH, 1}, {"modalities", CHAT, 1}, {"audio", CHAT, 1}, {"prediction", CHAT, 1},
    {"reasoning_effort", CHAT, 1}, {"web_search_options", CHAT, 1}, {"global_attention", COMPLETIONS, 0},
};

/* A field this server does not implement, given a value that asks for nothing (null, false, 0, an
   empty list, "none", best_of equal to n, ...) is accepted; any other value
   is refused, naming the field. */
static int neutral_field(const char *name, json_t *v, long long n, char *error, size_t error_size) {
    if (json_is_null(v) || json_is_false(v)) return 0;
    if ((!strcmp(name, "functions") || !strcmp(name, "modalities")) && json_is_array(v) &&
        json_array_size(v) == 0)
        return 0;
    if (!strcmp(name, "function_call") && json_is_string(v) &&
        !strcmp(json_string_value(v), "none"))
        return 0;
    if (!strcmp(name, "suffix") && json_is_string(v) && json_string_length(v) == 0) return 0;
    if (!strcmp(name, "best_of") && json_is_integer(v) && json_integer_value(v) == n) return 0;
    if (!strcmp(name, "service_tier") && json_is_string(v) && !strcmp(json_string_value(v), "auto")) return 0;
    if (!strcmp(name, "metadata") && json_is_object(v) && json_object_size(v) == 0) return 0;
    return fail(error, error_size, "'%s' is not supported by this server (only its neutral value: null, false, an empty "
                "list or \"none\")", name);
}

/* response_format: {"type": "text"}, {"type": "json_object"}, or {"type": "json_schema",
   "json_schema": {"name", "schema", "strict", "description"}}; the schema is kept as text for the
   library, which refuses what it does not support (pf_json_constraint_new). strict is accepted
   either way: the output follows the schema in both. */
static int parse_response_format(json_t *v, completion_request *out, char *error, size_t error_size) {
    const char *key;
    json_t *field;
    if (!v || json_is_null(v)) return 0;
    json_t *type = json_is_object(v) ? json_object_get(v, "type") : NULL;
    if (!json_is_string(type)) return fail(error, error_size, "'response_format' must be an object with a \"type\"");
    const char *kind = json_string_value(type);
    json_object_foreach(v, key, field)
        if (strcmp(key, "type") && !(strcmp(kind, "json_schema") == 0 && strcmp(key, "json_schema") == 0))
            return fail(error, error_size, "'response_format': the field \"%.40s\" is not supported with type \"%.40s\"", key, kind);
    if (!strcmp(kind, "text")) return 0;
    out->json_output = 1;
    if (!strcmp(kind, "json_object")) return 0;
    if (strcmp(kind, "json_schema"))
        return fail(error, error_size, "'response_format': type \"%.40s\" is not one of text, json_object, json_schema", kind);
    json_t *spec = json_object_get(v, "json_schema"), *schema = json_object_get(spec, "schema");
    if (!json_is_object(spec)) return fail(error, error_size, "'response_format': json_schema must be an object");
    json_object_foreach(spec, key, field) {
        if (!strcmp(key, "strict") && !json_is_boolean(field) && !json_is_null(field))
            return fail(error, error_size, "'response_format': json_schema.strict must be true or false");
        if (strcmp(key, "name") && strcmp(key, "schema") && strcmp(key, "strict") && strcmp(key, "description"))
            return fail(error, error_size, "'response_format': json_schema.%.40s is not supported", key);
    }
    if (!json_is_object(schema) && !json_is_boolean(schema))
        return fail(error, error_size, "'response_format': json_schema.schema must be a JSON Schema object");
    if (!(out->json_schema = json_dumps(schema, JSON_COMPACT | JSON_ENCODE_ANY))) return fail(error, error_size, "out of memory");
    return 0;
}

/* logit_bias: {"token id": bias in [-100, 100], ...}; -100 bans the token, as OpenAI's. */
static int parse_logit_bias(json_t *v, completion_request *out, char *error, size_t error_size) {
    const char *key;
    json_t *bias;
    if (!v || json_is_null(v)) return 0;
    if (!json_is_object(v) || json_object_size(v) > MAX_LOGIT_BIAS)
        return fail(error, error_size, "'logit_bias' must be an object of at most %d token ids", MAX_LOGIT_BIAS);
    out->logit_bias = (pf_token_bias *)calloc(json_object_size(v) + 1, sizeof *out->logit_bias);
    if (!out->logit_bias) return fail(error, error_size, "out of memory");
    json_object_foreach(v, key, bias) {
        char *end = NULL;
        long long id = strtoll(key, &end, 10);
        if (end == key || *end || id < 0 || id > INT32_MAX)
            return fail(error, error_size, "'logit_bias': \"%.40s\" is not a token id", key);
        if (!json_is_number(bias) || json_number_value(bias) < -100 || json_number_value(bias) > 100)
            return fail(error, error_size, "'logit_bias': the bias of %lld must be a number from -100 to 100", id);
        double b = json_number_value(bias);
        out->logit_bias[out->num_logit_bias].token = (int32_t)id;
        out->logit_bias[out->num_logit_bias++].bias = b <= -100 ? -INFINITY : (float)b;
    }
    return 0;
}

#define MAX_PROMPT_IDS 1000000 /* the server checks the model's own limit after */

/* A completions prompt as token ids: a non-empty array of non-negative integers (the library
   checks them against the vocabulary). */
static int parse_prompt_ids(json_t *array, completion_request *out, char *error, size_t error_size) {
    size_t n = json_array_size(array);
    if (n == 0) return fail(error, error_size, "the prompt is empty");
    if (n > MAX_PROMPT_IDS) return fail(error, error_size, "'prompt' holds more than %d token ids", MAX_PROMPT_IDS);
    if (!(out->prompt_ids = (int32_t *)malloc(n * sizeof *out->prompt_ids))) return fail(error, error_size, "out of memory");
    for (size_t i = 0; i < n; i++) {
        json_t *id = json_array_get(array, i);
        if (!json_is_integer(id) || json_integer_value(id) < 0 || json_integer_value(id) > INT32_MAX)
            return fail(error, error_size, "'prompt' as token ids: entry %zu is not a token id (several prompts in one "
                        "request are not supported by this server)", i);
        out->prompt_ids[i] = (int32_t)json_integer_value(id);
    }
    out->num_prompt_ids = (int)n;
    return 0;
}

/* completions' "global_attention": the prompt's token positions (from 0) with global attention, for
   an encoder-decoder whose encoder has Longformer's (LED; transformers' generate(global_attention_mask)
   with a 1 at each); null or absent: none. Positions past the prompt are refused by the server,
   which knows its length; a model without global attention by the library. */
static int parse_global_attention(json_t *positions, completion_request *out, char *error, size_t error_size) {
    if (!positions || json_is_null(positions)) return 0;
    size_t n = json_array_size(positions);
    if (!json_is_array(positions) || n > MAX_PROMPT_IDS)
        return fail(error, error_size, "'global_attention' must be a list of at most %d prompt token positions", MAX_PROMPT_IDS);
    if (n && !(out->global_positions = (int32_t *)malloc(n * sizeof *out->global_positions)))
        return fail(error, error_size, "out of memory");
    for (size_t i = 0; i < n; i++) {
        json_t *at = json_array_get(positions, i);
        if (!json_is_integer(at) || json_integer_value(at) < 0 || json_integer_value(at) >= MAX_PROMPT_IDS)
            return fail(error, error_size, "'global_attention': entry %zu is not a prompt token position (0 to %d)", i,
                        MAX_PROMPT_IDS - 1);
        out->global_positions[i] = (int32_t)json_integer_value(at);
    }
    out->num_global_positions = (int)n;
    return 0;
}

/* Chat: "logprobs" true or false, "top_logprobs" 0..20 with it; completions: "logprobs" 0..5
   (the alternatives each token gets) or null, as OpenAI's API takes them. */
static int parse_logprobs(json_t *root, int chat, completion_request *out, char *error, size_t error_size) {
    json_t *logprobs = json_object_get(root, "logprobs"), *top = json_object_get(root, "top_logprobs");
    long long count = 0;
    int status = 0;
    if (chat) {
        if (logprobs && !json_is_null(logprobs) && !json_is_boolean(logprobs))
            return fail(error, error_size, "'logprobs' must be true or false");
        out->logprobs = json_is_true(logprobs);
        if (top && !json_is_null(top)) {
            if ((status = integer_field(root, "top_logprobs", 0, 20, &count, error, error_size))) return status;
            if (!out->logprobs) return fail(error, error_size, "'top_logprobs' needs \"logprobs\": true");
        }
    } else if (logprobs && !json_is_null(logprobs)) {
        if (json_is_boolean(logprobs)) return fail(error, error_size, "'logprobs' must be an integer 0..5 or null here");
        if ((status = integer_field(root, "logprobs", 0, 5, &count, error, error_size))) return status;
        out->logprobs = 1;
    }
    out->top_logprobs = (int)count;
    return 0;
}

/* stream_options: {"include_usage": bool}, with "stream": true only. */
static int parse_stream_options(json_t *v, completion_request *out, char *error, size_t error_size) {
    const char *key;
    json_t *value;
    if (!v || json_is_null(v)) return 0;
    if (!out->stream) return fail(error, error_size, "'stream_options' is only for \"stream\": true");
    if (!json_is_object(v)) return fail(error, error_size, "'stream_options' must be an object");
    json_object_foreach(v, key, value) {
        if (strcmp(key, "include_usage")) return fail(error, error_size, "'stream_options.%s' is not supported by this server", key);
        if (!json_is_boolean(value) && !json_is_null(value))
            return fail(error, error_size, "'stream_options.include_usage' must be true or false");
        out->include_usage = json_is_true(value);
    }
    return 0;
}

/* The fields that are not a number within bounds: their presence and types, and the neutral ones. */
static int check_fields(json_t *root, int chat, long long n, char *error, size_t error_size) {
    const char *key;
    json_t *value;
    json_object_foreach(root, key, value) {
        size_t i = 0, count = sizeof known_fields / sizeof known_fields[0];
        while (i < count && (strcmp(known_fields[i].name, key) || !(known_fields[i].endpoints & (chat ? CHAT : COMPLETIONS)))) i++;
        if (i == count)
            return fail(error, error_size, "'%.60s' is not a field of %s", key, chat ? "/v1/chat/completions" : "/v1/completions");
        if (!known_fields[i].neutral_only) continue; /* read below */
        int status = neutral_field(key, value, n, error, error_size);
        if (status) return status;
    }
    return 0;
}

int parse_completion_request(const char *body, size_t length, int chat, const request_limits *limits,
                             completion_request *out, char *error, size_t error_size) {
    json_error_t json_error;
    memset(out, 0, sizeof *out);
    out->chat = chat;
    out->max_tokens = limits->max_tokens < 16 ? limits->max_tokens : 16; /* OpenAI's default for completions */
    if (chat) out->max_tokens = limits->max_tokens;
    out->temperature = 1.0; /* OpenAI's default: sampling */
    out->top_p = 1.0;
    out->repetition_penalty = 1.0;
    out->n = 1;
    json_t *root = json_loadb(body, length, 0, &json_error);
    if (!root) return fail(error, error_size, "malformed JSON: %s (line %d, column %d)", json_error.text, json_error.line,
                           json_error.column);
    int status = 0;
    long long max_tokens = out->max_tokens, n = 1, seed = 0, top_k = 0;
    json_t *stream = json_object_get(root, "stream"), *model = json_object_get(root, "model");
    json_t *seed_field = json_object_get(root, "seed"), *echo = json_object_get(root, "echo");
    json_t *user = json_object_get(root, "user");
    if (!json_is_object(root)) status = fail(error, error_size, "the body must be a JSON object");
    if (!status) status = integer_field(root, "n", 1, limits->max_n, &n, error, error_size);
    if (!status) status = check_fields(root, chat, n, error, error_size);
    if (status) {
    } else if (chat) {
        status = format_messages(json_object_get(root, "messages"), out, error, error_size);
    } else {
        json_t *prompt = json_object_get(root, "prompt");
        if (json_is_array(prompt) && json_array_size(prompt) == 1 && !json_is_integer(json_array_get(prompt, 0)))
            prompt = json_array_get(prompt, 0);
        if (json_is_array(prompt)) status = parse_prompt_ids(prompt, out, error, error_size);
        else if (!json_is_string(prompt))
            status = fail(error, error_size, "'prompt' must be a string or token ids (or an array of one of them; several "
                          "prompts in one request are not supported by this server)");
        else if (!(out->prompt = strdup(json_string_value(prompt)))) status = fail(error, error_size, "out of memory");
    }
    if (!status && chat && json_object_get(root, "max_completion_tokens"))
        status = integer_field(root, "max_completion_tokens", 1, limits->max_tokens, &max_tokens, error, error_size);
    if (!status) status = integer_field(root, "max_tokens", 1, limits->max_tokens, &max_tokens, error, error_size);
    if (!status) status = number_field(root, "temperature", 0, 2, 0, &out->temperature, error, error_size);
    if (!status) status = number_field(root, "top_p", 0, 1, 1, &out->top_p, error, error_size);
    if (!status) status = integer_field(root, "top_k", -1, 1 << 30, &top_k, error, error_size);
    if (!status) status = number_field(root, "min_p", 0, 1, 0, &out->min_p, error, error_size);
    if (!status) status = number_field(root, "repetition_penalty", 0, 10, 1, &out->repetition_penalty, error, error_size);
    if (!status) status = number_field(root, "presence_penalty", -2, 2, 0, &out->presence_penalty, error, error_size);
    if (!status) status = number_field(root, "frequency_penalty", -2, 2, 0, &out->frequency_penalty, error, error_size);
    if (!status) status = parse_logit_bias(json_object_get(root, "logit_bias"), out, error, error_size);
    if (!status && seed_field && !json_is_null(seed_field)) {
        status = integer_field(root, "seed", INT64_MIN, INT64_MAX, &seed, error, error_size);
        out->has_seed = 1;
        out->seed = (uint64_t)seed;
    }
    if (!status && stream && !json_is_null(stream) && !json_is_boolean(stream))
        status = fail(error, error_size, "'stream' must be true or false");
    out->stream = json_is_true(stream);
    if (!status) status = parse_stream_options(json_object_get(root, "stream_options"), out, error, error_size);
    if (!status && echo && !json_is_null(echo) && !json_is_boolean(echo))
        status = fail(error, error_size, "'echo' must be true or false");
    out->echo = json_is_true(echo);
    if (!status && user && !json_is_null(user) && (!json_is_string(user) || json_string_length(user) > 256))
        status = fail(error, error_size, "'user' must be a string of at most 256 bytes");
    if (!status && json_is_string(user) && !(out->user = strdup(json_string_value(user))))
        status = fail(error, error_size, "out of memory");
    if (!status && model && !json_is_null(model) && !json_is_string(model))
        status = fail(error, error_size, "'model' must be a string");
    if (!status) status = parse_logprobs(root, chat, out, error, error_size);
    if (!status) status = parse_response_format(json_object_get(root, "response_format"), out, error, error_size);
    if (!status && chat) status = parse_tool_request(root, &out->tools, error, error_size);
    if (!status && out->tools.forced_schema && out->json_output)
        status = fail(error, error_size, "'response_format' and 'tool_choice' \"%s\" both set the reply's form: give one",
                      out->tools.choice == TOOL_CHOICE_NAMED ? "function" : "required");
    if (!status) status = parse_stop(json_object_get(root, "stop"), out, error, error_size);
    if (!status && !chat) status = parse_global_attention(json_object_get(root, "global_attention"), out, error, error_size);
    out->max_tokens = (int)max_tokens;
    out->n = (int)n;
    out->top_k = top_k > 0 ? (int)top_k : 0;
    json_decref(root);
    if (status) completion_request_free(out);
    return status;
}

void completion_request_free(completion_request *request) {
    free(request->prompt);
    free(request->prompt_ids);
    for (int i = 0; i < request->num_messages; i++) {
        free((char *)request->messages[i].role);
        free((char *)request->messages[i].content);
    }
    free(request->messages);
    free(request->messages_json);
    tool_request_free(&request->tools);
    for (int i = 0; i < request->num_stop; i++) free(request->stop[i]);
    free(request->logit_bias);
    free(request->user);
    free(request->json_schema);
    free(request->global_positions);
    free(request->global_row);
    pf_json_constraint_free(request->json_constraint);
    memset(request, 0, sizeof *request);
}

/* The body as a JSON object whose every key is one of names; 0, or 400 with the reason. */
static int object_of(const char *body, size_t length, const char *const *names, size_t count, const char *route,
                     json_t **root, char *error, size_t error_size) {
    json_error_t json_error;
    const char *key;
    json_t *value;
    *root = json_loadb(body, length, 0, &json_error);
    if (!*root) return fail(error, error_size, "malformed JSON: %s (line %d, column %d)", json_error.text, json_error.line,
                            json_error.column);
    if (!json_is_object(*root)) return fail(error, error_size, "the body must be a JSON object");
    json_object_foreach(*root, key, value) {
        size_t i = 0;
        while (i < count && strcmp(names[i], key)) i++;
        if (i == count) return fail(error, error_size, "'%.60s' is not a field of %s", key, route);
    }
    return 0;
}

int parse_embedding_request(const char *body, size_t length, int width, int max_inputs, embedding_request *out,
                            char *error, size_t error_size) {
    static const char *const names[] = {"input", "model", "encoding_format", "dimensions", "user"};
    memset(out, 0, sizeof *out);
    json_t *root, *item;
    size_t index;
    int status = object_of(body, length, names, sizeof names / sizeof names[0], "/v1/embeddings", &root, error, error_size);
    json_t *input = status ? NULL : json_object_get(root, "input"), *format = status ? NULL : json_object_get(root, "encoding_format");
    json_t *dimensions = status ? NULL : json_object_get(root, "dimensions"), *model = status ? NULL : json_object_get(root, "model");
    json_t *user = status ? NULL : json_object_get(root, "user");
    if (status) {
    } else if (format && !json_is_null(format) &&
               (!json_is_string(format) || (strcmp(json_string_value(format), "float") && strcmp(json_string_value(format), "base64")))) {
        status = fail(error, error_size, "'encoding_format' must be \"float\" or \"base64\"");
    } else if (dimensions && !json_is_null(dimensions) && (!json_is_integer(dimensions) || json_integer_value(dimensions) != width)) {
        status = fail(error, error_size, "'dimensions' must be the model's width, %d: this model's embeddings are not shortened", width);
    } else if (model && !json_is_null(model) && !json_is_string(model)) {
        status = fail(error, error_size, "'model' must be a string");
    } else if (user && !json_is_null(user) && !json_is_string(user)) {
        status = fail(error, error_size, "'user' must be a string");
    } else if (!json_is_string(input) && (!json_is_array(input) || json_array_size(input) == 0)) {
        status = fail(error, error_size, "'input' must be a string or a non-empty list of strings");
    } else if (json_is_array(input) && json_array_size(input) > (size_t)max_inputs) {
        status = fail(error, error_size, "'input' holds %zu texts; at most %d", json_array_size(input), max_inputs);
    }
    out->base64 = !status && json_is_string(format) && !strcmp(json_string_value(format), "base64");
    size_t count = status ? 0 : json_is_string(input) ? 1 : json_array_size(input);
    if (!status && !(out->texts = (char **)calloc(count, sizeof *out->texts))) status = fail(error, error_size, "out of memory");
    for (index = 0; !status && index < count; index++) {
        item = json_is_string(input) ? input : json_array_get(input, index);
        if (!json_is_string(item))
            status = fail(error, error_size, "input[%zu] is not a string: lists of token ids are not supported", index);
        else if (strlen(json_string_value(item)) != json_string_length(item))
            status = fail(error, error_size, "input[%zu] holds a NUL character", index);
        else if (!(out->texts[out->count] = strdup(json_string_value(item))))
            status = fail(error, error_size, "out of memory");
        else
            out->count++;
    }
    json_decref(root);
    if (status) embedding_request_free(out);
    return status;
}

void embedding_request_free(embedding_request *request) {
    for (int i = 0; i < request->count; i++) free(request->texts[i]);
    free(request->texts);
    memset(request, 0, sizeof *request);
}

/* A JSON string without NUL characters, copied; NULL (with the reason in error) otherwise. */
static char *text_of(const json_t *value, const char *what, char *error, size_t error_size) {
    if (!json_is_string(value)) return fail(error, error_size, "%s must be a string", what), NULL;
    if (strlen(json_string_value(value)) != json_string_length(value))
        return fail(error, error_size, "%s holds a NUL character", what), NULL;
    char *copy = strdup(json_string_value(value));
    if (!copy) fail(error, error_size, "out of memory");
    return copy;
}

int parse_rerank_request(const char *body, size_t length, int max_documents, rerank_request *out, char *error,
                         size_t error_size) {
    static const char *const names[] = {"query", "documents", "top_n", "return_documents", "model"};
    memset(out, 0, sizeof *out);
    json_t *root;
    int status = object_of(body, length, names, sizeof names / sizeof names[0], "/v1/rerank", &root, error, error_size);
    json_t *documents = status ? NULL : json_object_get(root, "documents"), *top_n = status ? NULL : json_object_get(root, "top_n");
    json_t *give = status ? NULL : json_object_get(root, "return_documents"), *model = status ? NULL : json_object_get(root, "model");
    if (status) {
    } else if (!json_is_array(documents) || json_array_size(documents) == 0) {
        status = fail(error, error_size, "'documents' must be a non-empty list");
    } else if (json_array_size(documents) > (size_t)max_documents) {
        status = fail(error, error_size, "'documents' holds %zu documents; at most %d", json_array_size(documents), max_documents);
    } else if (top_n && !json_is_null(top_n) && (!json_is_integer(top_n) || json_integer_value(top_n) < 1)) {
        status = fail(error, error_size, "'top_n' must be a positive integer");
    } else if (give && !json_is_null(give) && !json_is_boolean(give)) {
        status = fail(error, error_size, "'return_documents' must be a boolean");
    } else if (model && !json_is_null(model) && !json_is_string(model)) {
        status = fail(error, error_size, "'model' must be a string");
    } else if (!(out->query = text_of(json_object_get(root, "query"), "'query'", error, error_size))) {
        status = 400;
    } else if (!(out->documents = (char **)calloc(json_array_size(documents), sizeof *out->documents))) {
        status = fail(error, error_size, "out of memory");
    }
    for (size_t i = 0; !status && i < json_array_size(documents); i++) {
        const json_t *item = json_array_get(documents, i);
        char what[48];
        snprintf(what, sizeof what, "documents[%zu]%s", i, json_is_object(item) ? "'s 'text'" : "");
        if (json_is_object(item) && json_object_size(item) != 1)
            status = fail(error, error_size, "documents[%zu] must be a string or {\"text\": string}", i);
        else if (!(out->documents[out->count] = text_of(json_is_object(item) ? json_object_get(item, "text") : item, what,
                                                        error, error_size)))
            status = 400;
        else
            out->count++;
    }
    out->top_n = !status && json_is_integer(top_n) && json_integer_value(top_n) < out->count ? (int)json_integer_value(top_n)
                                                                                           : out->count;
    out->return_documents = !status && json_is_true(give);
    if (root) json_decref(root);
    if (status) rerank_request_free(out);
    return status;
}

void rerank_request_free(rerank_request *request) {
    for (int i = 0; i < request->count; i++) free(request->documents[i]);
    free(request->documents);
    free(request->query);
    memset(request, 0, sizeof *request);
}

int parse_token_request(const char *body, size_t length, int detokenize, int max_tokens, token_request *out,
                        char *error, size_t error_size) {
    static const char *const tokenize_names[] = {"content", "add_special"}, *const detokenize_names[] = {"tokens"};
    memset(out, 0, sizeof *out);
    json_t *root, *item;
    size_t index;
    int status = detokenize ? object_of(body, length, detokenize_names, 1, "/detokenize", &root, error, error_size)
                            : object_of(body, length, tokenize_names, 2, "/tokenize", &root, error, error_size);
    if (!status && !detokenize) {
        json_t *content = json_object_get(root, "content"), *add_special = json_object_get(root, "add_special");
        if (!json_is_string(content) || strlen(json_string_value(content)) != json_string_length(content))
            status = fail(error, error_size, "'content' must be a string (without NUL characters)");
        else if (add_special && !json_is_null(add_special) && !json_is_boolean(add_special))
            status = fail(error, error_size, "'add_special' must be true or false");
        else if (!(out->content = strdup(json_string_value(content))))
            status = fail(error, error_size, "out of memory");
        out->add_special = json_is_true(add_special);
    } else if (!status) {
        json_t *tokens = json_object_get(root, "tokens");
        if (!json_is_array(tokens) || json_array_size(tokens) > (size_t)max_tokens)
            status = fail(error, error_size, "'tokens' must be a list of at most %d token ids", max_tokens);
        else if (!(out->tokens = (int32_t *)malloc((json_array_size(tokens) + 1) * sizeof *out->tokens)))
            status = fail(error, error_size, "out of memory");
        json_array_foreach(status ? NULL : tokens, index, item) {
            if (!json_is_integer(item) || json_integer_value(item) < 0 || json_integer_value(item) > INT32_MAX) {
                status = fail(error, error_size, "tokens[%zu] is not a token id", index);
                break;
            }
            out->tokens[out->count++] = (int32_t)json_integer_value(item);
        }
    }
    json_decref(root);
    if (status) token_request_free(out);
    return status;
}

void token_request_free(token_request *request) {
    free(request->content);
    free(request->tokens);
    memset(request, 0, sizeof *request);
}

char *base64_floats(const float *values, size_t count) {
    static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t n = count * sizeof(float);
    unsigned char *bytes = (unsigned char *)malloc(n + 1);
    char *text = (char *)malloc(4 * ((n + 2) / 3) + 1);
    if (!bytes || !text) return free(bytes), free(text), NULL;
    for (size_t i = 0; i < count; i++) { /* little-endian, whatever the host */
        uint32_t bits;
        memcpy(&bits, &values[i], 4);
        for (int b = 0; b < 4; b++) bytes[4 * i + b] = (unsigned char)(bits >> (8 * b));
    }
    size_t out = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t group = (uint32_t)bytes[i] << 16 | (i + 1 < n ? (uint32_t)bytes[i + 1] << 8 : 0) | (i + 2 < n ? bytes[i + 2] : 0);
        text[out++] = digits[group >> 18 & 63];
        text[out++] = digits[group >> 12 & 63];
        text[out++] = i + 1 < n ? digits[group >> 6 & 63] : '=';
        text[out++] = i + 2 < n ? digits[group & 63] : '=';
    }
    text[out] = 0;
    free(bytes);
    return text;
}
