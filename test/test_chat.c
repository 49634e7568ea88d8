/* Chat templates: pf_apply_chat_template must render the chat templates of our families'
   instruct checkpoints exactly as transformers' apply_chat_template does (the recorded cases of
   test/make_chat_template_cases.py, errors included), find a model's template where transformers
   does (tokenizer_config.json, a list of named templates, chat_template.jinja), refuse what it
   does not implement by name, and survive hostile templates. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"

#define MAX_MESSAGES 16

typedef struct chat_case {
    char name[64];
    int add_generation_prompt;
    int enable_thinking; /* -1: not passed */
    char date[32];
    pf_chat_message messages[MAX_MESSAGES];
    int num_messages;
    const char *expected; /* NULL: transformers raised */
    size_t expected_len;
    const char *error;    /* transformers' message when it raised */
} chat_case;

/* "header LEN\n" then LEN bytes and a newline: the bytes (NUL-terminated in place) or NULL. */
static char *read_blob(char **p, char *end, const char *header, long *len) {
    size_t h = strlen(header);
    if ((size_t)(end - *p) < h + 2 || memcmp(*p, header, h) || (*p)[h] != ' ') return NULL;
    char *nl = memchr(*p, '\n', (size_t)(end - *p));
    if (!nl) return NULL;
    *len = strtol(*p + h + 1, NULL, 10);
    char *data = nl + 1;
    if (*len < 0) {
        *p = data;
        return data; /* no bytes */
    }
    if (end - data < *len + 1 || data[*len] != '\n') return NULL;
    data[*len] = 0;
    *p = data + *len + 1;
    return data;
}

static void check_recorded_cases(void) {
    char path[1024];
    size_t size;
    snprintf(path, sizeof path, "%s/chat_templates/chat_cases.txt", test_fixtures);
    char *data = test_read_file(path, &size);
    CHECK_MSG(data != NULL, "cannot read %s", path);
    if (!data) return;
    char *p = data, *end = data + size;
    char name[64] = "", *bos = NULL, *eos = NULL, *tmpl = NULL;
    int templates = 0, rendered = 0, refused = 0, thinking = 0;
    if (*p == '#') p = strchr(p, '\n') + 1;
    while (p < end) {
        long bl, el, tl;
        if (sscanf(p, "template %63s %ld %ld %ld", name, &bl, &el, &tl) == 4) {
            p = strchr(p, '\n') + 1;
            if (end - p < bl + el + tl + 1) break;
            free(bos), free(eos), free(tmpl);
            bos = strndup(p, (size_t)bl);
            eos = strndup(p + bl, (size_t)el);
            tmpl = strndup(p + bl + el, (size_t)tl);
            p += bl + el + tl + 1;
            templates++;
            continue;
        }
        chat_case c;
        memset(&c, 0, sizeof c);
        /* the case's line, with an optional fifth field: enable_thinking passed (0 or 1) */
        char line[256];
        char *eol = memchr(p, '\n', (size_t)(end - p));
        size_t line_len = eol ? (size_t)(eol - p) : 0;
        if (line_len >= sizeof line) line_len = 0;
        memcpy(line, p, line_len);
        line[line_len] = 0;
        c.enable_thinking = -1;
        int fields = sscanf(line, "case %63s %d %31s %d %d", c.name, &c.add_generation_prompt, c.date, &c.num_messages,
                            &c.enable_thinking);
        if ((fields != 4 && fields != 5) || c.enable_thinking < -1 || c.enable_thinking > 1 || (fields == 5 && c.enable_thinking < 0) ||
            c.num_messages > MAX_MESSAGES || !tmpl) {
            CHECK_MSG(0, "%s: malformed near byte %ld", path, (long)(p - data));
            break;
        }
        for (char *t = c.date; *t; t++)
            if (*t == 'T') *t = ' ';
        p = strchr(p, '\n') + 1;
        int ok = 1;
        for (int i = 0; i < c.num_messages && ok; i++) {
            char role[32];
            long len;
            if (sscanf(p, "message %31s", role) != 1) { ok = 0; break; }
            char header[64];
            snprintf(header, sizeof header, "message %s", role);
            char *content = read_blob(&p, end, header, &len);
            if (!content) { ok = 0; break; }
            c.messages[i].role = strdup(role);
            c.messages[i].content = len < 0 ? NULL : content;
        }
        long len;
        if (ok && (c.expected = read_blob(&p, end, "expected", &len)) != NULL) c.expected_len = (size_t)len;
        else if (ok && !(c.error = read_blob(&p, end, "error", &len))) ok = 0;
        if (!ok) {
            CHECK_MSG(0, "%s: malformed case %s of %s", path, c.name, name);
            for (int i = 0; i < c.num_messages; i++) free((char *)c.messages[i].role);
            break;
        }

        pf_chat_options options = pf_chat_options_init();
        options.add_generation_prompt = c.add_generation_prompt;
        options.date = c.date;
        options.enable_thinking = c.enable_thinking;
        options.chat_template = tmpl;
        options.bos_token = bos;
        options.eos_token = eos;
        char *text = NULL, error[512];
        pf_result r = pf_apply_chat_template(NULL, c.messages, c.num_messages, &options, &text, error, sizeof error);
        if (c.expected) {
            CHECK_MSG(r == PF_OK && strlen(text) == c.expected_len && !memcmp(text, c.expected, c.expected_len),
                      "%s, %s, generation prompt %d, enable_thinking %d: %s\n--- got ---\n%s\n--- transformers ---\n%s\n---", name,
                      c.name, c.add_generation_prompt, c.enable_thinking, r == PF_OK ? "differs" : error, text ? text : "",
                      c.expected);
            rendered++;
            thinking += c.enable_thinking >= 0;
        } else {
            CHECK_MSG(r != PF_OK && text == NULL && error[0], "%s, %s: transformers raised (%s) but we rendered:\n%s", name,
                      c.name, c.error, text ? text : "");
            /* a template's own raise_exception message is ours too */
            if (strstr(c.error, "TemplateError: ") == c.error)
                CHECK_MSG(strstr(error, c.error + strlen("TemplateError: ")) != NULL, "%s, %s: message \"%s\", transformers \"%s\"",
                          name, c.name, error, c.error);
            refused++;
        }
        pf_string_free(text);
        for (int i = 0; i < c.num_messages; i++) free((char *)c.messages[i].role);
    }
    CHECK_MSG(templates >= 21 && rendered >= 560 && refused >= 130 && thinking >= 100,
              "%d templates, %d renderings (%d with enable_thinking passed), %d refusals read", templates, rendered, thinking,
              refused);
    free(bos), free(eos), free(tmpl);
    free(data);
}

/* tool_cases.txt: pf_apply_chat_template_json with tools, against transformers'
   apply_chat_template(messages, tools=...) on the templates that read tools. */
static void check_recorded_tool_cases(void) {
    char path[1024];
    size_t size;
    snprintf(path, sizeof path, "%s/chat_templates/tool_cases.txt", test_fixtures);
    char *data = test_read_file(path, &size);
    CHECK_MSG(data != NULL, "cannot read %s", path);
    if (!data) return;
    char *p = data, *end = data + size;
    char name[64] = "", *bos = NULL, *eos = NULL, *tmpl = NULL;
    int rendered = 0, refused = 0, with_tools = 0;
    if (*p == '#') p = strchr(p, '\n') + 1;
    while (p < end) {
        long bl, el, tl, len;
        if (sscanf(p, "template %63s %ld %ld %ld", name, &bl, &el, &tl) == 4) {
            p = strchr(p, '\n') + 1;
            if (end - p < bl + el + tl + 1) break;
            free(bos), free(eos), free(tmpl);
            bos = strndup(p, (size_t)bl);
            eos = strndup(p + bl, (size_t)el);
            tmpl = strndup(p + bl + el, (size_t)tl);
            p += bl + el + tl + 1;
            continue;
        }
        char case_name[64], date[32];
        int gen;
        if (sscanf(p, "case %63s %d %31s", case_name, &gen, date) != 3 || !tmpl) {
            CHECK_MSG(0, "%s: malformed near byte %ld", path, (long)(p - data));
            break;
        }
        for (char *t = date; *t; t++)
            if (*t == 'T') *t = ' ';
        p = strchr(p, '\n') + 1;
        char *messages = read_blob(&p, end, "messages", &len), *tools = messages ? read_blob(&p, end, "tools", &len) : NULL;
        char *expected = tools ? read_blob(&p, end, "expected", &len) : NULL, *raised = NULL;
        size_t expected_len = expected ? (size_t)len : 0;
        if (tools && !expected) raised = read_blob(&p, end, "error", &len);
        if (!expected && !raised) {
            CHECK_MSG(0, "%s: malformed case %s of %s", path, case_name, name);
            break;
        }
        pf_chat_options options = pf_chat_options_init();
        options.add_generation_prompt = gen;
        options.date = date;
        options.chat_template = tmpl;
        options.bos_token = bos;
        options.eos_token = eos;
        options.tools = strcmp(tools, "null") ? tools : NULL;
        with_tools += options.tools != NULL;
        char *text = NULL, error[512];
        pf_result r = pf_apply_chat_template_json(NULL, messages, &options, &text, error, sizeof error);
        if (expected) {
            CHECK_MSG(r == PF_OK && strlen(text) == expected_len && !memcmp(text, expected, expected_len),
                      "%s, %s, generation prompt %d: %s\n--- got ---\n%s\n--- transformers ---\n%s\n---", name, case_name, gen,
                      r == PF_OK ? "differs" : error, text ? text : "", expected);
            rendered++;
        } else {
            CHECK_MSG(r != PF_OK && !text && error[0], "%s, %s: transformers raised (%s) but we rendered:\n%s", name, case_name,
                      raised, text ? text : "");
            if (strstr(raised, "TemplateError: ") == raised)
                CHECK_MSG(strstr(error, raised + strlen("TemplateError: ")) != NULL, "%s, %s: message \"%s\", transformers \"%s\"",
                          name, case_name, error, raised);
            refused++;
        }
        pf_string_free(text);
    }
    CHECK_MSG(rendered >= 64 && refused >= 14 && with_tools >= 70, "%d tool renderings, %d refusals, %d with tools", rendered,
              refused, with_tools);
    free(bos), free(eos), free(tmpl);
    free(data);
}

/* pf_apply_chat_template_json's own checks: JSON values as Python's (ints, floats, key order),
   bad JSON and bad messages refused by name. */
static void check_json_api(void) {
    char error[512], *text = (char *)1;
    pf_chat_options options = pf_chat_options_init();
    options.chat_template = "{% for m in messages %}{{ m.role }}={{ m.content | tojson }};{{ m | tojson }}|{% endfor %}"
                            "{{ tools | tojson }}";
    options.tools = "[{\"b\": 1, \"a\": 1.0, \"c\": [1e2, -0, null, true]}]";
    CHECK(pf_apply_chat_template_json(NULL, "[{\"role\": \"user\", \"content\": \"x\\u00e9\", \"n\": 12345678901234}]",
                                      &options, &text, error, sizeof error) == PF_OK &&
          !strcmp(text, "user=\"x\u00e9\";{\"role\": \"user\", \"content\": \"x\u00e9\", \"n\": 12345678901234}|"
                        "[{\"b\": 1, \"a\": 1.0, \"c\": [100.0, 0, null, true]}]"));
    pf_string_free(text);
    /* reasoning aliases: "thinking" first, "reasoning_content" last */
    options.tools = NULL;
    CHECK(pf_apply_chat_template_json(NULL, "[{\"role\": \"assistant\", \"reasoning\": \"r\", \"content\": \"c\"}]",
                                      &options, &text, error, sizeof error) == PF_OK &&
          !strcmp(text, "assistant=\"c\";{\"thinking\": \"r\", \"role\": \"assistant\", \"reasoning\": \"r\", \"content\": \"c\", "
                        "\"reasoning_content\": \"r\"}|null"));
    pf_string_free(text);
    static const struct { const char *messages, *tools, *says; } bad[] = {
        {"[]", NULL, "empty"}, {"{}", NULL, "array"}, {"[1]", NULL, "not an object"}, {"[{\"content\": \"x\"}]", NULL, "role"},
        {"[{\"role\": 1}]", NULL, "role"}, {"[{\"role\": \"user\"", NULL, "not JSON"},
        {"[{\"role\": \"user\"}]", "{}", "tools must be a JSON array"}, {"[{\"role\": \"user\"}]", "[", "tools is not JSON"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        options.tools = bad[i].tools;
        text = (char *)1;
        CHECK_MSG(pf_apply_chat_template_json(NULL, bad[i].messages, &options, &text, error, sizeof error) ==
                          PF_ERROR_INVALID_ARGUMENT && !text && strstr(error, bad[i].says),
                  "%s / %s: %s", bad[i].messages, bad[i].tools ? bad[i].tools : "-", error);
    }
    CHECK(pf_apply_chat_template_json(NULL, NULL, &options, &text, error, sizeof error) == PF_ERROR_INVALID_ARGUMENT);
}

/* Renders tmpl on one user message "hi"; returns the result, the text in out (freed here). */
static pf_result render_one(const char *tmpl, char *out, size_t cap, char *error, size_t error_size) {
    pf_chat_message m = {"user", "hi"};
    pf_chat_options options = pf_chat_options_init();
    options.chat_template = tmpl;
    options.date = "2024-02-29";
    char *text = NULL;
    pf_result r = pf_apply_chat_template(NULL, &m, 1, &options, &text, error, error_size);
    if (out) snprintf(out, cap, "%s", text ? text : "");
    if (r != PF_OK) CHECK_MSG(text == NULL, "a failure left text");
    pf_string_free(text);
    return r;
}

static void check_refusals(void) {
    static const struct {
        const char *tmpl;
        pf_result result;
        const char *names; /* in the message */
    } cases[] = {
        {"{% macro m() %}x{% endmacro %}", PF_ERROR_UNSUPPORTED, "macro"},
        {"{{ 'x'|wordwrap }}", PF_ERROR_UNSUPPORTED, "wordwrap"},
        {"{{ messages[0].content.zfill(3) }}", PF_ERROR_UNSUPPORTED, "zfill"},
        {"{{ x is sameas }}", PF_ERROR_INVALID_ARGUMENT, "sameas"},
        {"{{ 1 is prime }}", PF_ERROR_UNSUPPORTED, "prime"},
        {"{% include 'a' %}", PF_ERROR_UNSUPPORTED, "include"},
        {"{% raw %}{{{% endraw %}", PF_ERROR_UNSUPPORTED, "raw"},
        {"{{ lipsum() }}", PF_ERROR_UNSUPPORTED, "lipsum"},
        {"{{ 'é'|upper }}", PF_ERROR_UNSUPPORTED, "non-ASCII"},
        {"{{ strftime_now('%Z') }}", PF_ERROR_UNSUPPORTED, "%Z"},
        {"{% if x %}", PF_ERROR_FORMAT, "endif"},
        {"{{ 1 + }}", PF_ERROR_FORMAT, "line 1"},
        {"{{ 'abc }}", PF_ERROR_FORMAT, "string"},
        {"{% for %}{% endfor %}", PF_ERROR_FORMAT, "loop variable"},
        {"{{ messages[0].content + 1 }}", PF_ERROR_INVALID_ARGUMENT, "str and int"},
        {"{{ nothing.attr }}", PF_ERROR_INVALID_ARGUMENT, "'nothing' is undefined"},
        {"{{ raise_exception('custom failure') }}", PF_ERROR_INVALID_ARGUMENT, "custom failure"},
        {"{{ 1 // 0 }}", PF_ERROR_INVALID_ARGUMENT, "zero"},
        {"{% break %}", PF_ERROR_FORMAT, "outside a loop"},
        {"{{ 9223372036854775807 + 1 }}", PF_ERROR_UNSUPPORTED, "64 bits"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char error[512];
        pf_result r = render_one(cases[i].tmpl, NULL, 0, error, sizeof error);
        CHECK_MSG(r == cases[i].result && strstr(error, cases[i].names), "%s: result %d (%s), message \"%s\"", cases[i].tmpl, r,
                  pf_result_string(r), error);
    }
}

/* Templates built to hurt: deep nesting, endless output, runaway loops, huge values. Each must
   fail with a message, quickly, without crashing. */
static void check_hostile(void) {
    char error[512], *tmpl = malloc(200000);
    size_t n = 0;
    for (int i = 0; i < 5000; i++) n += (size_t)sprintf(tmpl + n, "(");
    n += (size_t)sprintf(tmpl + n, "1");
    for (int i = 0; i < 5000; i++) n += (size_t)sprintf(tmpl + n, ")");
    char *wrapped = malloc(n + 16);
    sprintf(wrapped, "{{ %s }}", tmpl);
    CHECK(render_one(wrapped, NULL, 0, error, sizeof error) == PF_ERROR_UNSUPPORTED && strstr(error, "deeper"));
    free(wrapped);
    n = 0;
    for (int i = 0; i < 3000; i++) n += (size_t)sprintf(tmpl + n, "{%% if true %%}");
    CHECK(render_one(tmpl, NULL, 0, error, sizeof error) == PF_ERROR_UNSUPPORTED && strstr(error, "deeper"));
    free(tmpl);
    /* output that doubles each step */
    const char *doubling = "{% set ns = namespace(s='xxxxxxxxxxxxxxxx') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}"
                           "{% endfor %}{{ ns.s }}";
    pf_result r = render_one(doubling, NULL, 0, error, sizeof error);
    CHECK_MSG(r != PF_OK && (strstr(error, "MiB")), "doubling: %s", error);
    /* nested loops over a long range: the step limit */
    r = render_one("{% for a in range(10000) %}{% for b in range(10000) %}{% endfor %}{% endfor %}", NULL, 0, error, sizeof error);
    CHECK_MSG(r != PF_OK && (strstr(error, "steps") || strstr(error, "MiB")), "loops: %s", error);
    r = render_one("{{ range(100000000) }}", NULL, 0, error, sizeof error);
    CHECK_MSG(r == PF_ERROR_INVALID_ARGUMENT, "range: %s", error);
    /* values nested by a loop, then printed and compared */
    r = render_one("{% set ns = namespace(v=[]) %}{% for i in range(1000) %}{% set ns.v = [ns.v] %}{% endfor %}{{ ns.v }}", NULL, 0,
                   error, sizeof error);
    CHECK_MSG(r == PF_ERROR_INVALID_ARGUMENT && strstr(error, "nests"), "nested values: %s", error);
    r = render_one("{{ 'x' * 100000000 }}", NULL, 0, error, sizeof error);
    CHECK_MSG(r != PF_OK, "a huge string: rendered");
}

static void check_api(void) {
    char error[512], out[256], *text = (char *)1;
    pf_chat_message m = {"user", "hi"};
    pf_chat_options options = pf_chat_options_init();
    CHECK(options.add_generation_prompt == 1 && !options.date && !options.chat_template);
    CHECK(pf_apply_chat_template(NULL, &m, 1, NULL, &text, error, sizeof error) == PF_ERROR_INVALID_ARGUMENT && !text &&
          strstr(error, "no chat template"));
    options.chat_template = "x";
    CHECK(pf_apply_chat_template(NULL, &m, 0, &options, &text, error, sizeof error) == PF_ERROR_INVALID_ARGUMENT && strstr(error, "empty"));
    CHECK(pf_apply_chat_template(NULL, NULL, 1, &options, &text, error, sizeof error) == PF_ERROR_INVALID_ARGUMENT);
    CHECK(pf_apply_chat_template(NULL, &m, 1, &options, NULL, NULL, 0) == PF_ERROR_INVALID_ARGUMENT);
    pf_chat_message no_role = {NULL, "x"};
    CHECK(pf_apply_chat_template(NULL, &no_role, 1, &options, &text, error, sizeof error) == PF_ERROR_INVALID_ARGUMENT && strstr(error, "role"));
    /* an error buffer of one byte is cut short, never overrun */
    char tiny[1] = {'z'};
    options.chat_template = "{{ raise_exception('long message here') }}";
    CHECK(pf_apply_chat_template(NULL, &m, 1, &options, &text, tiny, sizeof tiny) == PF_ERROR_INVALID_ARGUMENT && tiny[0] == 0);
    /* trailing newline dropped, \r\n read as \n, as jinja2 */
    CHECK(render_one("a\r\nb\n", out, sizeof out, error, sizeof error) == PF_OK && !strcmp(out, "a\nb"));
    CHECK(render_one("{{ strftime_now('%d %b %Y, %A') }}", out, sizeof out, error, sizeof error) == PF_OK &&
          !strcmp(out, "29 Feb 2024, Thursday"));
    options.chat_template = "{{ strftime_now('%Y') }}";
    options.date = "yesterday";
    CHECK(pf_apply_chat_template(NULL, &m, 1, &options, &text, error, sizeof error) == PF_ERROR_INVALID_ARGUMENT && strstr(error, "YYYY"));
    options.date = NULL; /* now: some year */
    CHECK(pf_apply_chat_template(NULL, &m, 1, &options, &text, error, sizeof error) == PF_OK && strlen(text) == 4 && text[0] == '2');
    pf_string_free(text);
    /* enable_thinking: undefined by default (-1), else a bool; other values refused */
    CHECK(options.enable_thinking == -1);
    options.chat_template = "{{ enable_thinking is defined }} {{ enable_thinking is false }} {{ enable_thinking is true }}";
    static const char *const thinking_out[] = {"False False False", "True True False", "True False True"};
    for (int v = -1; v <= 1; v++) {
        options.enable_thinking = v;
        text = NULL;
        CHECK_MSG(pf_apply_chat_template(NULL, &m, 1, &options, &text, error, sizeof error) == PF_OK && !strcmp(text, thinking_out[v + 1]),
                  "enable_thinking %d: %s", v, text ? text : error);
        pf_string_free(text);
    }
    for (int v = -2; v <= 2; v += 4) {
        options.enable_thinking = v;
        text = (char *)1;
        CHECK_MSG(pf_apply_chat_template(NULL, &m, 1, &options, &text, error, sizeof error) == PF_ERROR_INVALID_ARGUMENT && !text &&
                      strstr(error, "enable_thinking"),
                  "enable_thinking %d: %s", v, error);
    }
}

/* tokenizer_config.json's template (a string, or a list with "default"), chat_template.jinja
   winning over it, and the bos / eos tokens' text, in a copy of the llama fixture's tokenizer. */
static void check_model_templates(void) {
    char dir[] = "/tmp/pf_chat_XXXXXX", path[1024], error[512];
    if (!mkdtemp(dir)) {
        CHECK_MSG(0, "mkdtemp");
        return;
    }
    size_t size;
    snprintf(path, sizeof path, "%s/llama/tokenizer.json", test_fixtures);
    char *tokenizer_json = test_read_file(path, &size);
    CHECK(tokenizer_json != NULL);
    if (!tokenizer_json) return;
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    CHECK(test_write_file(path, tokenizer_json, size) == 0);
    free(tokenizer_json);
    static const struct {
        const char *config, *jinja, *expected, *error;
    } cases[] = {
        {"{\"bos_token\": \"<s>\", \"eos_token\": {\"content\": \"</s>\"}, \"chat_template\": \"{{ bos_token }}{{ messages[0].content }}{{ eos_token }}\"}",
         NULL, "<s>hi</s>", NULL},
        {"{\"chat_template\": [{\"name\": \"tool_use\", \"template\": \"T\"}, {\"name\": \"default\", \"template\": \"D{{ messages|length }}\"}]}",
         NULL, "D1", NULL},
        {"{\"chat_template\": [{\"name\": \"tool_use\", \"template\": \"T\"}]}", NULL, NULL, "default"},
        {"{\"chat_template\": \"config\"}", "jinja {{ messages[0].role }}\n", "jinja user", NULL},
        {"{\"bos_token\": \"<s>\"}", NULL, NULL, "no chat template"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
        CHECK(test_write_file(path, cases[i].config, strlen(cases[i].config)) == 0);
        snprintf(path, sizeof path, "%s/chat_template.jinja", dir);
        unlink(path);
        if (cases[i].jinja) CHECK(test_write_file(path, cases[i].jinja, strlen(cases[i].jinja)) == 0);
        pf_tokenizer *tok = NULL;
        CHECK_MSG(pf_tokenizer_load(dir, &tok, error, sizeof error) == PF_OK, "case %zu: %s", i, error);
        if (!tok) continue;
        CHECK((pf_tokenizer_chat_template(tok) != NULL) == (cases[i].expected != NULL));
        pf_chat_message m = {"user", "hi"};
        char *text = NULL;
        pf_result r = pf_apply_chat_template(tok, &m, 1, NULL, &text, error, sizeof error);
        if (cases[i].expected)
            CHECK_MSG(r == PF_OK && !strcmp(text, cases[i].expected), "case %zu: got \"%s\" (%s)", i, text ? text : "", error);
        else
            CHECK_MSG(r == PF_ERROR_INVALID_ARGUMENT && strstr(error, cases[i].error), "case %zu: %s", i, error);
        pf_string_free(text);
        pf_tokenizer_free(tok);
    }
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    CHECK(test_write_file(path, "{\"chat_template\": 5}", 20) == 0);
    pf_tokenizer *tok = NULL;
    CHECK(pf_tokenizer_load(dir, &tok, error, sizeof error) == PF_ERROR_FORMAT && strstr(error, "chat_template") && !tok);
    unlink(path);
    snprintf(path, sizeof path, "%s/chat_template.jinja", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    unlink(path);
    rmdir(dir);
}

void test_chat(void) {
    check_recorded_cases();
    check_recorded_tool_cases();
    check_json_api();
    check_refusals();
    check_hostile();
    check_api();
    check_model_templates();
}
