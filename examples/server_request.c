/* server_request.c: see server_request.h. */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include "server_request.h"

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

/* Chat messages kept for the model's chat template, and as one plain prompt for a model without
   one: "role: content" lines, then "assistant:" for the model to continue. */
static int format_messages(json_t *messages, completion_request *out, char *error, size_t error_size) {
    size_t length = 0, index;
    json_t *message;
    char **prompt = &out->prompt;
    if (!json_is_array(messages) || json_array_size(messages) == 0)
        return fail(error, error_size, "'messages' must be a non-empty array");
    *prompt = NULL;
    out->messages = (pf_chat_message *)calloc(json_array_size(messages), sizeof *out->messages);
    if (!out->messages) return fail(error, error_size, "out of memory");
    json_array_foreach(messages, index, message) {
        json_t *role = json_object_get(message, "role"), *content = json_object_get(message, "content");
        if (!json_is_object(message)) return fail(error, error_size, "messages[%zu] must be an object", index);
        if (!json_is_string(role) || json_string_length(role) == 0)
            return fail(error, error_size, "messages[%zu].role must be a non-empty string", index);
        if (json_is_array(content))
            return fail(error, error_size, "messages[%zu].content is a list of parts: only text content (a string) is supported", index);
        if (!json_is_string(content)) return fail(error, error_size, "messages[%zu].content must be a string", index);
        if (strlen(json_string_value(role)) != json_string_length(role) || strlen(json_string_value(content)) != json_string_length(content))
            return fail(error, error_size, "messages[%zu] holds a NUL character", index);
        pf_chat_message *m = &out->messages[out->num_messages];
        if (!(m->role = strdup(json_string_value(role))) || !(m->content = strdup(json_string_value(content)))) {
            free((char *)m->role);
            return fail(error, error_size, "out of memory");
        }
        out->num_messages++;
        if (append(prompt, &length, json_string_value(role)) || append(prompt, &length, ": ") ||
            append(prompt, &length, json_string_value(content)) || append(prompt, &length, "\n"))
            return fail(error, error_size, "out of memory");
    }
    if (append(prompt, &length, "assistant:")) return fail(error, error_size, "out of memory");
    return 0;
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

int parse_completion_request(const char *body, size_t length, int chat, const request_limits *limits,
                             completion_request *out, char *error, size_t error_size) {
    json_error_t json_error;
    memset(out, 0, sizeof *out);
    out->chat = chat;
    out->max_tokens = limits->max_tokens < 16 ? limits->max_tokens : 16; /* OpenAI's default for completions */
    if (chat) out->max_tokens = limits->max_tokens;
    out->temperature = 1.0; /* OpenAI's default: sampling */
    out->top_p = 1.0;
    out->n = 1;
    json_t *root = json_loadb(body, length, 0, &json_error);
    if (!root) return fail(error, error_size, "malformed JSON: %s (line %d, column %d)", json_error.text, json_error.line,
                           json_error.column);
    int status = 0;
    long long max_tokens = out->max_tokens, n = 1, seed = 0;
    json_t *stream = json_object_get(root, "stream"), *model = json_object_get(root, "model");
    json_t *seed_field = json_object_get(root, "seed");
    if (!json_is_object(root)) {
        status = fail(error, error_size, "the body must be a JSON object");
    } else if (chat) {
        status = format_messages(json_object_get(root, "messages"), out, error, error_size);
    } else {
        json_t *prompt = json_object_get(root, "prompt");
        if (json_is_array(prompt) && json_array_size(prompt) == 1) prompt = json_array_get(prompt, 0);
        if (!json_is_string(prompt)) status = fail(error, error_size, "'prompt' must be a string (or an array of one)");
        else if (!(out->prompt = strdup(json_string_value(prompt)))) status = fail(error, error_size, "out of memory");
    }
    if (!status && chat && json_object_get(root, "max_completion_tokens"))
        status = integer_field(root, "max_completion_tokens", 1, limits->max_tokens, &max_tokens, error, error_size);
    if (!status) status = integer_field(root, "max_tokens", 1, limits->max_tokens, &max_tokens, error, error_size);
    if (!status) status = integer_field(root, "n", 1, limits->max_n, &n, error, error_size);
    if (!status) status = number_field(root, "temperature", 0, 2, 0, &out->temperature, error, error_size);
    if (!status) status = number_field(root, "top_p", 0, 1, 1, &out->top_p, error, error_size);
    if (!status && seed_field && !json_is_null(seed_field)) {
        status = integer_field(root, "seed", INT64_MIN, INT64_MAX, &seed, error, error_size);
        out->has_seed = 1;
        out->seed = (uint64_t)seed;
    }
    if (!status && stream && !json_is_null(stream) && !json_is_boolean(stream))
        status = fail(error, error_size, "'stream' must be true or false");
    if (!status && model && !json_is_null(model) && !json_is_string(model))
        status = fail(error, error_size, "'model' must be a string");
    if (!status) status = parse_stop(json_object_get(root, "stop"), out, error, error_size);
    out->max_tokens = (int)max_tokens;
    out->n = (int)n;
    out->stream = json_is_true(stream);
    json_decref(root);
    if (status) completion_request_free(out);
    return status;
}

void completion_request_free(completion_request *request) {
    free(request->prompt);
    for (int i = 0; i < request->num_messages; i++) {
        free((char *)request->messages[i].role);
        free((char *)request->messages[i].content);
    }
    free(request->messages);
    for (int i = 0; i < request->num_stop; i++) free(request->stop[i]);
    memset(request, 0, sizeof *request);
}
