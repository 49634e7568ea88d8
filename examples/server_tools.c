/* server_tools.c: see server_tools.h. */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include "server_tools.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(char *error, size_t error_size, const char *format, ...) {
    va_list args;
    va_start(args, format);
    vsnprintf(error, error_size, format, args);
    va_end(args);
    return 400;
}

static const char hermes_open[] = "<tool_call>", hermes_close[] = "</tool_call>", mistral_marker[] = "[TOOL_CALLS]",
                  mistral_args[] = "[ARGS]", mistral_call_id[] = "[CALL_ID]", python_tag[] = "<|python_tag|>";

/* OpenAI's rule for a function's name: 1 to 64 of a-z, A-Z, 0-9, '_' and '-'. */
static int valid_name(const char *name) {
    size_t n = strlen(name);
    if (n == 0 || n > 64) return 0;
    for (size_t i = 0; i < n; i++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-", name[i])) return 0;
    return 1;
}

/* One entry of "tools": {"type": "function", "function": {"name", "description", "parameters",
   "strict"}}; its function object, or NULL (reason in error). */
static json_t *tool_function(json_t *tool, size_t index, char *error, size_t error_size) {
    const char *key;
    json_t *value, *type = json_object_get(tool, "type"), *function = json_object_get(tool, "function");
    if (!json_is_object(tool) || !json_is_string(type) || strcmp(json_string_value(type), "function") || !json_is_object(function))
        return fail(error, error_size, "'tools'[%zu] must be {\"type\": \"function\", \"function\": {...}}", index), NULL;
    json_object_foreach(tool, key, value)
        if (strcmp(key, "type") && strcmp(key, "function"))
            return fail(error, error_size, "'tools'[%zu].%.40s is not supported by this server", index, key), NULL;
    json_object_foreach(function, key, value) {
        int ok = !strcmp(key, "name") ? json_is_string(value) && valid_name(json_string_value(value))
                 : !strcmp(key, "description") ? json_is_string(value)
                 : !strcmp(key, "parameters") ? json_is_object(value)
                 : !strcmp(key, "strict") ? json_is_boolean(value) || json_is_null(value) : -1;
        if (ok < 0) return fail(error, error_size, "'tools'[%zu].function.%.40s is not supported by this server", index, key), NULL;
        if (!ok)
            return fail(error, error_size, "'tools'[%zu].function.%s must be %s", index, key,
                        !strcmp(key, "name") ? "1 to 64 letters, digits, '_' or '-'"
                        : !strcmp(key, "parameters") ? "a JSON Schema object" : !strcmp(key, "strict") ? "true or false" : "a string"),
                   NULL;
    }
    if (!json_object_get(function, "name")) return fail(error, error_size, "'tools'[%zu].function has no \"name\"", index), NULL;
    return function;
}

/* The schema of one call as a forced reply writes it: {"name": NAME, "arguments": {...}}. */
static json_t *call_schema(json_t *function) {
    json_t *parameters = json_object_get(function, "parameters");
    json_t *arguments = parameters ? json_incref(parameters) : json_pack("{s:s}", "type", "object");
    return json_pack("{s:s,s:{s:{s:O},s:o},s:[s,s],s:b}", "type", "object", "properties", "name", "const",
                     json_object_get(function, "name"), "arguments", arguments, "required", "name", "arguments",
                     "additionalProperties", 0);
}

/* tool_choice "required": one call of any tool (anyOf), or with parallel_tool_calls a list of
   them; a named function: its parameters, the reply being the arguments. */
static char *forced_schema(const tool_request *request, json_t *tools) {
    json_t *schema = NULL;
    size_t index;
    json_t *tool;
    if (request->choice == TOOL_CHOICE_NAMED) {
        json_array_foreach(tools, index, tool) {
            json_t *function = json_object_get(tool, "function"), *parameters = json_object_get(function, "parameters");
            if (!strcmp(json_string_value(json_object_get(function, "name")), request->name))
                schema = parameters ? json_incref(parameters) : json_pack("{s:s}", "type", "object");
        }
    } else {
        json_t *calls = json_array();
        json_array_foreach(tools, index, tool) json_array_append_new(calls, call_schema(json_object_get(tool, "function")));
        schema = json_array_size(calls) == 1 ? json_incref(json_array_get(calls, 0)) : json_pack("{s:O}", "anyOf", calls);
        json_decref(calls);
        if (request->parallel) schema = json_pack("{s:s,s:o,s:i}", "type", "array", "items", schema, "minItems", 1);
    }
    char *text = schema ? json_dumps(schema, JSON_COMPACT) : NULL;
    json_decref(schema);
    return text;
}

/* tool_choice: "none", "auto", "required" or {"type": "function", "function": {"name": NAME}}. */
static int parse_choice(json_t *choice, json_t *tools, tool_request *out, char *error, size_t error_size) {
    int has_tools = json_array_size(tools) > 0;
    out->choice = has_tools ? TOOL_CHOICE_AUTO : TOOL_CHOICE_NONE;
    if (!choice || json_is_null(choice)) return 0;
    if (json_is_string(choice)) {
        const char *s = json_string_value(choice);
        if (strcmp(s, "none") && strcmp(s, "auto") && strcmp(s, "required"))
            return fail(error, error_size, "'tool_choice' must be \"none\", \"auto\", \"required\" or a function");
        out->choice = !strcmp(s, "none") ? TOOL_CHOICE_NONE : !strcmp(s, "auto") ? TOOL_CHOICE_AUTO : TOOL_CHOICE_REQUIRED;
    } else {
        json_t *type = json_object_get(choice, "type"), *function = json_object_get(choice, "function");
        json_t *name = json_object_get(function, "name");
        if (!json_is_object(choice) || json_object_size(choice) != 2 || !json_is_string(type) ||
            strcmp(json_string_value(type), "function") || !json_is_object(function) || json_object_size(function) != 1 ||
            !json_is_string(name))
            return fail(error, error_size, "'tool_choice' must be \"none\", \"auto\", \"required\" or "
                                           "{\"type\": \"function\", \"function\": {\"name\": ...}}");
        size_t index;
        json_t *tool;
        int found = 0;
        json_array_foreach(tools, index, tool)
            found |= !strcmp(json_string_value(json_object_get(json_object_get(tool, "function"), "name")), json_string_value(name));
        if (!found) return fail(error, error_size, "'tool_choice' names the function \"%.64s\", which is not among 'tools'",
                                json_string_value(name));
        out->choice = TOOL_CHOICE_NAMED;
        if (!(out->name = strdup(json_string_value(name)))) return fail(error, error_size, "out of memory");
    }
    if (out->choice != TOOL_CHOICE_NONE && !has_tools)
        return fail(error, error_size, "'tool_choice' \"%s\" needs 'tools'", json_is_string(choice) ? json_string_value(choice) : "function");
    return 0;
}

int parse_tool_request(json_t *root, tool_request *out, char *error, size_t error_size) {
    json_t *tools = json_object_get(root, "tools"), *parallel = json_object_get(root, "parallel_tool_calls");
    size_t index;
    json_t *tool;
    int status;
    memset(out, 0, sizeof *out);
    out->parallel = 1;
    if (parallel && !json_is_null(parallel) && !json_is_boolean(parallel))
        return fail(error, error_size, "'parallel_tool_calls' must be true or false");
    if (parallel && json_is_false(parallel)) out->parallel = 0;
    if (tools && !json_is_null(tools) && !json_is_array(tools)) return fail(error, error_size, "'tools' must be an array");
    json_array_foreach(tools, index, tool) {
        json_t *function = tool_function(tool, index, error, error_size);
        if (!function) return 400;
        for (size_t j = 0; j < index; j++)
            if (!strcmp(json_string_value(json_object_get(json_object_get(json_array_get(tools, j), "function"), "name")),
                        json_string_value(json_object_get(function, "name"))))
                return fail(error, error_size, "'tools' names \"%s\" twice", json_string_value(json_object_get(function, "name")));
    }
    if ((status = parse_choice(json_object_get(root, "tool_choice"), tools, out, error, error_size))) return status;
    if (json_array_size(tools) && !(out->tools_json = json_dumps(tools, JSON_COMPACT))) return fail(error, error_size, "out of memory");
    if ((out->choice == TOOL_CHOICE_REQUIRED || out->choice == TOOL_CHOICE_NAMED) && !(out->forced_schema = forced_schema(out, tools)))
        return fail(error, error_size, "out of memory");
    return 0;
}

void tool_request_free(tool_request *request) {
    free(request->tools_json);
    free(request->name);
    free(request->forced_schema);
    memset(request, 0, sizeof *request);
}

tool_format tool_format_of(const char *chat_template) {
    if (!chat_template) return TOOL_FORMAT_NONE;
    if (strstr(chat_template, hermes_open)) return TOOL_FORMAT_HERMES;
    if (strstr(chat_template, mistral_marker)) return TOOL_FORMAT_MISTRAL;
    if (strstr(chat_template, python_tag)) return TOOL_FORMAT_LLAMA_JSON;
    return TOOL_FORMAT_NONE;
}

/* The first marker in text[0, length), or NULL. */
static const char *find(const char *text, size_t length, const char *marker) {
    size_t m = strlen(marker);
    for (size_t i = 0; i + m <= length; i++)
        if (!memcmp(text + i, marker, m)) return text + i;
    return NULL;
}

/* The longest end of text that begins marker (and is shorter than it). */
static size_t marker_prefix_at_end(const char *text, size_t length, const char *marker) {
    size_t m = strlen(marker);
    for (size_t k = m - 1; k > 0; k--)
        if (k <= length && !memcmp(text + length - k, marker, k)) return k;
    return 0;
}

static size_t skip_space(const char *text, size_t length, size_t i) {
    while (i < length && text[i] && strchr(" \t\r\n", text[i])) i++;
    return i;
}

size_t tool_text_ready(tool_format format, const char *text, size_t length, int *begun) {
    const char *marker = format == TOOL_FORMAT_HERMES ? hermes_open : format == TOOL_FORMAT_MISTRAL ? mistral_marker : NULL;
    *begun = 0;
    if (marker) {
        const char *at = find(text, length, marker);
        if (at) return *begun = 1, (size_t)(at - text);
        return length - marker_prefix_at_end(text, length, marker);
    }
    if (format == TOOL_FORMAT_LLAMA_JSON) { /* a call is the whole reply: decided by its first bytes */
        size_t i = skip_space(text, length, 0), tag = strlen(python_tag), left = length - i;
        if (i == length) return 0;
        if (text[i] == '{' || (left >= tag && !memcmp(text + i, python_tag, tag))) return *begun = 1, 0;
        if (left < tag && !memcmp(text + i, python_tag, left)) return 0;
    }
    return length;
}

/* A call id of 9 letters and digits (Mistral's templates refuse others): the model's own where it
   wrote one (Mistral's [CALL_ID]), else one drawn from seed. */
static void call_id(uint64_t seed, size_t index, char id[10]) {
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    uint64_t x = seed + 0x9e3779b97f4a7c15ULL * (index + 1);
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    x ^= x >> 31;
    for (int k = 0; k < 9; k++, x /= 62) id[k] = alphabet[x % 62];
    id[9] = 0;
}

/* Appends one OpenAI tool call to calls: arguments (an object, or a string holding one) as JSON
   text, model_id the model's call id (or NULL). -1 when the arguments are neither. */
static int append_call(json_t *calls, const char *name, json_t *arguments, const char *model_id, uint64_t seed) {
    char id[10], *text = NULL;
    json_t *parsed = NULL;
    if (json_is_string(arguments)) /* some models write the arguments as a string of JSON */
        arguments = parsed = json_loads(json_string_value(arguments), 0, NULL);
    if (json_is_object(arguments)) text = json_dumps(arguments, JSON_COMPACT);
    json_decref(parsed);
    if (!text) return -1;
    call_id(seed, json_array_size(calls), id);
    if (model_id) snprintf(id, sizeof id, "%s", model_id);
    json_array_append_new(calls, json_pack("{s:s,s:s,s:{s:s,s:s}}", "id", id, "type", "function", "function", "name", name,
                                           "arguments", text));
    free(text);
    return 0;
}

/* {"name": ..., "arguments" (or Llama's "parameters"): {...}} appended to calls; -1 when not one. */
static int append_call_object(json_t *calls, json_t *call, uint64_t seed) {
    json_t *name = json_object_get(call, "name"), *arguments = json_object_get(call, "arguments");
    if (!arguments) arguments = json_object_get(call, "parameters");
    if (!json_is_object(call) || !json_is_string(name) || !arguments) return -1;
    return append_call(calls, json_string_value(name), arguments, NULL, seed);
}

/* One JSON value at text[*at, length), *at moved past it; NULL when there is none. */
static json_t *json_at(const char *text, size_t length, size_t *at) {
    json_error_t error;
    json_t *value = json_loadb(text + *at, length - *at, JSON_DISABLE_EOF_CHECK | JSON_DECODE_ANY, &error);
    if (value) *at += (size_t)error.position;
    return value;
}

/* <tool_call> JSON </tool_call>, repeated; the last may be left open at the end. */
static int hermes_calls(json_t *calls, const char *text, size_t length, uint64_t seed) {
    const char *at = find(text, length, hermes_open);
    while (at) {
        size_t start = (size_t)(at - text) + strlen(hermes_open);
        const char *close = find(text + start, length - start, hermes_close);
        size_t end = close ? (size_t)(close - text) : length, i = skip_space(text, end, start);
        json_t *call = json_at(text, end, &i);
        int bad = !call || skip_space(text, end, i) != end || append_call_object(calls, call, seed);
        json_decref(call);
        if (bad) return -1;
        start = close ? end + strlen(hermes_close) : length;
        at = find(text + start, length - start, hermes_open);
    }
    return 0;
}

/* text[from, to) without its surrounding space, into out (size bytes); 0 when it does not fit. */
static int trimmed(const char *text, size_t from, size_t to, char *out, size_t size) {
    from = skip_space(text, to, from);
    while (to > from && strchr(" \t\r\n", text[to - 1])) to--;
    if (to - from >= size) return 0;
    memcpy(out, text + from, to - from);
    out[to - from] = 0;
    return 1;
}

/* The newer Mistral templates' calls (Mistral Small 3.2, Magistral, Devstral), each after its own
   marker: [TOOL_CALLS]name[ARGS]{...}, or name[CALL_ID]id[ARGS]{...}; at: the first marker. */
static int mistral_named_calls(json_t *calls, const char *text, size_t length, size_t at, uint64_t seed) {
    while (at < length) {
        size_t start = at + strlen(mistral_marker);
        const char *args = find(text + start, length - start, mistral_args);
        if (!args) return -1;
        size_t name_end = (size_t)(args - text), i = name_end + strlen(mistral_args);
        const char *id_marker = find(text + start, name_end - start, mistral_call_id);
        char name[65], id[10];
        int has_id = id_marker != NULL;
        if (has_id && !trimmed(text, (size_t)(id_marker - text) + strlen(mistral_call_id), name_end, id, sizeof id))
            return -1;
        if (has_id) name_end = (size_t)(id_marker - text);
        if (!trimmed(text, start, name_end, name, sizeof name) || !valid_name(name) || (has_id && strlen(id) != 9))
            return -1;
        i = skip_space(text, length, i);
        json_t *arguments = json_at(text, length, &i);
        int bad = !json_is_object(arguments) || append_call(calls, name, arguments, has_id ? id : NULL, seed);
        json_decref(arguments);
        if (bad) return -1;
        at = skip_space(text, length, i);
        if (at < length && (length - at < strlen(mistral_marker) || memcmp(text + at, mistral_marker, strlen(mistral_marker))))
            return -1;
    }
    return 0;
}

/* [TOOL_CALLS] then a list of calls (or one), or the newer templates' calls by name. */
static int mistral_calls(json_t *calls, const char *text, size_t length, uint64_t seed) {
    size_t at = (size_t)(find(text, length, mistral_marker) - text), i = at + strlen(mistral_marker);
    i = skip_space(text, length, i);
    if (i < length && text[i] != '[' && text[i] != '{') return mistral_named_calls(calls, text, length, at, seed);
    json_t *value = json_at(text, length, &i), *item;
    size_t index;
    int bad = !value || skip_space(text, length, i) != length || (json_is_array(value) && json_array_size(value) == 0);
    if (json_is_array(value)) json_array_foreach(value, index, item) bad = bad || append_call_object(calls, item, seed);
    else bad = bad || append_call_object(calls, value, seed);
    json_decref(value);
    return bad ? -1 : 0;
}

/* [<|python_tag|>] a call, then more after ';'. */
static int llama_calls(json_t *calls, const char *text, size_t length, uint64_t seed) {
    size_t i = skip_space(text, length, 0);
    if (length - i >= strlen(python_tag) && !memcmp(text + i, python_tag, strlen(python_tag))) i += strlen(python_tag);
    for (;;) {
        i = skip_space(text, length, i);
        json_t *call = json_at(text, length, &i);
        int bad = !call || append_call_object(calls, call, seed);
        json_decref(call);
        if (bad) return -1;
        i = skip_space(text, length, i);
        if (i == length) return 0;
        if (text[i++] != ';') return -1;
    }
}

json_t *tool_calls_in_text(tool_format format, const char *text, size_t length, size_t *content_length, uint64_t id_seed) {
    int begun = 0;
    size_t start = tool_text_ready(format, text, length, &begun);
    *content_length = length;
    if (!begun) return NULL;
    json_t *calls = json_array();
    int bad = format == TOOL_FORMAT_HERMES    ? hermes_calls(calls, text, length, id_seed)
              : format == TOOL_FORMAT_MISTRAL ? mistral_calls(calls, text, length, id_seed)
                                              : llama_calls(calls, text, length, id_seed);
    if (bad || json_array_size(calls) == 0) {
        json_decref(calls);
        return NULL;
    }
    *content_length = start;
    return calls;
}

json_t *forced_tool_calls(const tool_request *request, const char *text, size_t length, uint64_t id_seed) {
    size_t i = skip_space(text, length, 0), index;
    json_t *value = json_at(text, length, &i), *calls = json_array(), *item;
    int bad = !value || skip_space(text, length, i) != length;
    if (bad) {
    } else if (request->choice == TOOL_CHOICE_NAMED) {
        bad = append_call(calls, request->name, value, NULL, id_seed);
    } else if (json_is_array(value)) {
        json_array_foreach(value, index, item) bad = bad || append_call_object(calls, item, id_seed);
        bad = bad || json_array_size(calls) == 0;
    } else {
        bad = append_call_object(calls, value, id_seed);
    }
    json_decref(value);
    if (bad) json_decref(calls), calls = NULL;
    return calls;
}
