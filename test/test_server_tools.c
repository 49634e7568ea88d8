/* examples/server_tools.c on known texts: each family's format of tool calls read back as
   OpenAI's tool_calls (and what is not a call left as content), where streamed content must stop
   for a call, the request's tools and tool_choice, and the schema a forced call follows. Run by
   make test-server; prints one line per failed check and "N passed, N failed". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../examples/server_tools.h"

static int passed, failed;

static void check(const char *name, int condition, const char *detail) {
    if (condition) {
        passed++;
    } else {
        failed++;
        printf("FAIL test_server_tools: %s%s%s\n", name, detail ? ": " : "", detail ? detail : "");
    }
}

/* The calls as "name(arguments)" joined by " | ", or "none". */
static void describe(json_t *calls, char *out, size_t cap) {
    size_t index, n = 0;
    json_t *call;
    out[0] = 0;
    if (!calls) {
        snprintf(out, cap, "none");
        return;
    }
    json_array_foreach(calls, index, call) {
        json_t *function = json_object_get(call, "function");
        const char *id = json_string_value(json_object_get(call, "id"));
        int id_ok = id && strlen(id) == 9 && !strcmp(json_string_value(json_object_get(call, "type")), "function");
        for (size_t k = 0; id_ok && k < 9; k++) id_ok = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", id[k]) != NULL;
        n += (size_t)snprintf(out + n, cap - n, "%s%s(%s)%s", index ? " | " : "", json_string_value(json_object_get(function, "name")),
                              json_string_value(json_object_get(function, "arguments")), id_ok ? "" : "[bad id]");
        if (n >= cap) break;
    }
}

#define ALL ((size_t)-1) /* content: the whole text */

static void check_parse(const char *name, tool_format format, const char *text, const char *want_calls, size_t want_content) {
    char got[1024], detail[2300];
    if (want_content == ALL) want_content = strlen(text);
    size_t content_length = 12345;
    json_t *calls = tool_calls_in_text(format, text, strlen(text), &content_length, 42);
    describe(calls, got, sizeof got);
    snprintf(detail, sizeof detail, "calls %s (want %s), content %zu bytes (want %zu)", got, want_calls, content_length, want_content);
    check(name, !strcmp(got, want_calls) && content_length == want_content, detail);
    json_decref(calls);
}

static void check_ready(const char *name, tool_format format, const char *text, size_t want_ready, int want_begun) {
    int begun = -1;
    size_t ready = tool_text_ready(format, text, strlen(text), &begun);
    char detail[128];
    snprintf(detail, sizeof detail, "ready %zu begun %d (want %zu %d)", ready, begun, want_ready, want_begun);
    check(name, ready == want_ready && begun == want_begun, detail);
}

static const char tools_text[] =
    "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"d\", \"parameters\": "
    "{\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}}, \"required\": [\"city\"]}}},"
    " {\"type\": \"function\", \"function\": {\"name\": \"now\"}}]";

/* parse_tool_request on a body with tools_text and the given other fields. */
static int request_with(const char *fields, tool_request *out, char *error, size_t error_size) {
    char body[2048];
    snprintf(body, sizeof body, "{\"tools\": %s%s%s}", tools_text, fields[0] ? ", " : "", fields);
    json_t *root = json_loads(body, 0, NULL);
    int status = parse_tool_request(root, out, error, error_size);
    json_decref(root);
    return status;
}

static void check_requests(void) {
    char error[512] = "";
    tool_request t;
    int status = request_with("", &t, error, sizeof error);
    check("tools alone: tool_choice auto, parallel", !status && t.choice == TOOL_CHOICE_AUTO && t.parallel && !t.forced_schema &&
                                                         t.tools_json && strstr(t.tools_json, "\"get_weather\""), error);
    tool_request_free(&t);
    status = request_with("\"tool_choice\": {\"type\": \"function\", \"function\": {\"name\": \"get_weather\"}}", &t, error, sizeof error);
    check("a named function forces its parameters' schema", !status && t.choice == TOOL_CHOICE_NAMED && !strcmp(t.name, "get_weather") &&
          t.forced_schema && !strcmp(t.forced_schema, "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},\"required\":[\"city\"]}"),
          t.forced_schema ? t.forced_schema : error);
    tool_request_free(&t);
    status = request_with("\"tool_choice\": \"required\", \"parallel_tool_calls\": false", &t, error, sizeof error);
    check("required, one call: anyOf the calls' shapes", !status && t.choice == TOOL_CHOICE_REQUIRED && !t.parallel && t.forced_schema &&
          !strcmp(t.forced_schema, "{\"anyOf\":[{\"type\":\"object\",\"properties\":{\"name\":{\"const\":\"get_weather\"},\"arguments\":"
                                   "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},\"required\":[\"city\"]}},"
                                   "\"required\":[\"name\",\"arguments\"],\"additionalProperties\":false},{\"type\":\"object\",\"properties\":"
                                   "{\"name\":{\"const\":\"now\"},\"arguments\":{\"type\":\"object\"}},\"required\":[\"name\",\"arguments\"],"
                                   "\"additionalProperties\":false}]}"),
          t.forced_schema ? t.forced_schema : error);
    tool_request_free(&t);
    status = request_with("\"tool_choice\": \"required\"", &t, error, sizeof error);
    check("required, parallel: a list of at least one call", !status && t.forced_schema && strstr(t.forced_schema, "{\"type\":\"array\",\"items\":{\"anyOf\"") == t.forced_schema &&
          strstr(t.forced_schema, "\"minItems\":1}"), t.forced_schema ? t.forced_schema : error);
    tool_request_free(&t);
    static const struct { const char *fields, *says; } bad[] = {
        {"\"tool_choice\": {\"type\": \"function\", \"function\": {\"name\": \"missing\"}}", "\"missing\", which is not among 'tools'"},
        {"\"tool_choice\": \"sometimes\"", "'tool_choice' must be"},
        {"\"parallel_tool_calls\": 1", "'parallel_tool_calls' must be true or false"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        status = request_with(bad[i].fields, &t, error, sizeof error);
        check(bad[i].fields, status == 400 && strstr(error, bad[i].says), error);
        tool_request_free(&t);
    }
    static const struct { const char *body, *says; } bad_bodies[] = {
        {"{\"tool_choice\": \"required\"}", "'tool_choice' \"required\" needs 'tools'"},
        {"{\"tools\": {}}", "'tools' must be an array"},
        {"{\"tools\": [{\"type\": \"code\"}]}", "'tools'[0] must be {\"type\": \"function\""},
        {"{\"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"a b\"}}]}", "'tools'[0].function.name must be"},
        {"{\"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"a\", \"x\": 1}}]}", "'tools'[0].function.x is not supported"},
        {"{\"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"a\"}}, {\"type\": \"function\", \"function\": {\"name\": \"a\"}}]}",
         "names \"a\" twice"},
        {"{\"tools\": [{\"type\": \"function\", \"function\": {\"description\": \"a\"}}]}", "has no \"name\""},
    };
    for (size_t i = 0; i < sizeof bad_bodies / sizeof bad_bodies[0]; i++) {
        json_t *root = json_loads(bad_bodies[i].body, 0, NULL);
        status = parse_tool_request(root, &t, error, sizeof error);
        check(bad_bodies[i].body, status == 400 && strstr(error, bad_bodies[i].says), error);
        tool_request_free(&t);
        json_decref(root);
    }
    json_t *root = json_loads("{\"tools\": [], \"tool_choice\": \"none\"}", 0, NULL);
    check("no tools, tool_choice none", parse_tool_request(root, &t, error, sizeof error) == 0 && t.choice == TOOL_CHOICE_NONE &&
                                            !t.tools_json, error);
    tool_request_free(&t);
    json_decref(root);
}

static void check_forced(void) {
    char error[512], got[1024];
    tool_request t;
    request_with("\"tool_choice\": {\"type\": \"function\", \"function\": {\"name\": \"get_weather\"}}", &t, error, sizeof error);
    json_t *calls = forced_tool_calls(&t, " {\"city\": \"Paris\"}", 18, 7);
    describe(calls, got, sizeof got);
    check("a named function's reply is its arguments", !strcmp(got, "get_weather({\"city\":\"Paris\"})"), got);
    json_decref(calls);
    calls = forced_tool_calls(&t, "{\"city\": \"Par", 13, 7);
    check("a forced reply cut short is no call", calls == NULL, NULL);
    json_decref(calls);
    tool_request_free(&t);
    request_with("\"tool_choice\": \"required\"", &t, error, sizeof error);
    const char *text = "[{\"name\": \"now\", \"arguments\": {}}, {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}]";
    calls = forced_tool_calls(&t, text, strlen(text), 7);
    describe(calls, got, sizeof got);
    check("required: the list's calls", !strcmp(got, "now({}) | get_weather({\"city\":\"Oslo\"})"), got);
    json_decref(calls);
    tool_request_free(&t);
}

int main(void) {
    check("Qwen's template: Hermes", tool_format_of("{{- '<tool_call>\\n' }}{{ tools }}") == TOOL_FORMAT_HERMES, NULL);
    check("Mistral's template", tool_format_of("{{- \"[TOOL_CALLS] [\" }}") == TOOL_FORMAT_MISTRAL, NULL);
    check("Llama 3.1's template", tool_format_of("{{- \"<|python_tag|>\" + tool_call.name }}") == TOOL_FORMAT_LLAMA_JSON, NULL);
    check("a template without calls", tool_format_of("{{ messages }}") == TOOL_FORMAT_NONE && tool_format_of(NULL) == TOOL_FORMAT_NONE, NULL);

    check_parse("Hermes: content, then two calls", TOOL_FORMAT_HERMES,
                "Let me see.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": [1, 2.5]}}\n</tool_call>\n"
                "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 2, \"b\": 3.5}}\n</tool_call>",
                "get_weather({\"city\":\"Paris\",\"days\":[1,2.5]}) | add({\"a\":2,\"b\":3.5})", 12);
    check_parse("Hermes: the last call left open", TOOL_FORMAT_HERMES, "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n", "now({})", 0);
    check_parse("Hermes: arguments written as a string", TOOL_FORMAT_HERMES,
                "<tool_call>{\"name\": \"now\", \"arguments\": \"{\\\"tz\\\": \\\"UTC\\\"}\"}</tool_call>", "now({\"tz\":\"UTC\"})", 0);
    check_parse("Hermes: a call that does not parse leaves it all content", TOOL_FORMAT_HERMES,
                "x<tool_call>{\"name\": \"now\", \"arguments\": {</tool_call>", "none", ALL);
    check_parse("Hermes: a call without a name is content", TOOL_FORMAT_HERMES, "<tool_call>{\"arguments\": {}}</tool_call>", "none", ALL);
    check_parse("Hermes: text without calls", TOOL_FORMAT_HERMES, "Sunny, 21 degrees.", "none", ALL);
    check_parse("Llama: <|python_tag|> and two calls", TOOL_FORMAT_LLAMA_JSON,
                " <|python_tag|>{\"name\": \"add\", \"parameters\": {\"a\": 1, \"b\": 2}}; {\"name\": \"now\", \"parameters\": {}}",
                "add({\"a\":1,\"b\":2}) | now({})", 0);
    check_parse("Llama: a bare call", TOOL_FORMAT_LLAMA_JSON, "{\"name\": \"now\", \"parameters\": {}}\n", "now({})", 0);
    check_parse("Llama: text that starts otherwise is content", TOOL_FORMAT_LLAMA_JSON, "The call {\"name\": \"now\"}", "none", ALL);
    check_parse("Llama: JSON that is not a call is content", TOOL_FORMAT_LLAMA_JSON, "{\"answer\": 4}", "none", ALL);
    check_parse("Mistral: a list of calls after content", TOOL_FORMAT_MISTRAL,
                "Sure. [TOOL_CALLS] [{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}, {\"name\": \"now\", \"arguments\": {}}]",
                "add({\"a\":1,\"b\":2}) | now({})", 6);
    check_parse("Mistral: an empty list is content", TOOL_FORMAT_MISTRAL, "[TOOL_CALLS] []", "none", ALL);
    check_parse("Mistral (Small 3.2): calls by name", TOOL_FORMAT_MISTRAL,
                "Sure.[TOOL_CALLS]add[ARGS]{\"a\": 1, \"b\": 2}[TOOL_CALLS]now[ARGS]{}", "add({\"a\":1,\"b\":2}) | now({})", 5);
    check_parse("Mistral (Magistral): a call id", TOOL_FORMAT_MISTRAL, "[TOOL_CALLS]now[CALL_ID]a1B2c3D4e[ARGS]{\"tz\": \"UTC\"}",
                "now({\"tz\":\"UTC\"})", 0);
    {
        const char *text = "[TOOL_CALLS]now[CALL_ID]a1B2c3D4e[ARGS]{}";
        size_t content = 0;
        json_t *calls = tool_calls_in_text(TOOL_FORMAT_MISTRAL, text, strlen(text), &content, 42);
        const char *id = json_string_value(json_object_get(json_array_get(calls, 0), "id"));
        check("Mistral: the model's call id is the call's", id && !strcmp(id, "a1B2c3D4e"), id);
        json_decref(calls);
    }
    check_parse("Mistral: a call by name cut short is content", TOOL_FORMAT_MISTRAL, "[TOOL_CALLS]add[ARGS]{\"a\": 1", "none", ALL);
    check_parse("Mistral: a name that is no function name is content", TOOL_FORMAT_MISTRAL, "[TOOL_CALLS]a b[ARGS]{}", "none", ALL);
    check_parse("Mistral: text after a call is content", TOOL_FORMAT_MISTRAL, "[TOOL_CALLS]now[ARGS]{} and more", "none", ALL);
    check_parse("no format: no calls", TOOL_FORMAT_NONE, "<tool_call>{\"name\": \"now\", \"arguments\": {}}</tool_call>", "none", ALL);

    check_ready("Hermes: content goes out", TOOL_FORMAT_HERMES, "Hello", 5, 0);
    check_ready("Hermes: a marker's beginning is held", TOOL_FORMAT_HERMES, "Hello <tool_", 6, 0);
    check_ready("Hermes: a call begins at its marker", TOOL_FORMAT_HERMES, "Hello <tool_call>{\"na", 6, 1);
    check_ready("Mistral: a call begins at [TOOL_CALLS]", TOOL_FORMAT_MISTRAL, "[TOOL_CALLS] [", 0, 1);
    check_ready("Llama: leading space is held", TOOL_FORMAT_LLAMA_JSON, " \n", 0, 0);
    check_ready("Llama: a reply opening with { is a call", TOOL_FORMAT_LLAMA_JSON, " {\"name", 0, 1);
    check_ready("Llama: <|python_tag|> half written is held", TOOL_FORMAT_LLAMA_JSON, "<|python", 0, 0);
    check_ready("Llama: other text is content for good", TOOL_FORMAT_LLAMA_JSON, "Hi {", 4, 0);

    check_requests();
    check_forced();
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
