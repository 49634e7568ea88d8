/* Constrained JSON output (src/json_schema.c): the automaton on prefixes valid and not for every
   keyword it reads, the keywords it refuses by name, the mask's cost over GPT-2's 50,257 tokens,
   and greedy generation under a schema ending in a complete value. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../parallelformers.h"
#include "test.h"
#include "testing_hooks.h"

typedef struct json_case {
    const char *schema; /* NULL: any JSON object */
    const char *text;
    int prefix;         /* a prefix of a valid value */
    int complete;       /* a whole valid value */
} json_case;

static const char *const object_ab =
    "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"},\"ab\":{\"type\":\"string\"}},"
    "\"required\":[\"a\"],\"additionalProperties\":false}";

static void test_prefixes(void) {
    static const char *const nested =
        "{\"type\":\"object\",\"properties\":{\"items\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
        "\"properties\":{\"ok\":{\"type\":\"boolean\"},\"n\":{\"type\":\"null\"}},\"required\":[\"ok\"]},"
        "\"minItems\":1,\"maxItems\":2}},\"required\":[\"items\"]}";
    static const char *const choice = "{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"object\",\"properties\":{\"x\":"
                                      "{\"const\":1}},\"required\":[\"x\"]},{\"type\":\"object\",\"properties\":{\"xy\":"
                                      "{\"type\":\"number\"}},\"required\":[\"xy\"]}]}";
    static const char *const defs = "{\"$defs\":{\"Node\":{\"type\":\"object\",\"properties\":{\"next\":{\"anyOf\":["
                                    "{\"$ref\":\"#/$defs/Node\"},{\"type\":\"null\"}]}},\"required\":[\"next\"]}},"
                                    "\"$ref\":\"#/$defs/Node\"}";
    const json_case cases[] = {
        /* json_object: any object, nothing after it */
        {NULL, "{}", 1, 1},
        {NULL, " {\"k\": [1, -2.5e+3, \"s\\u00e9\\n\", true, null, {\"z\": false}]}", 1, 1},
        {NULL, "{\"k\": tru", 1, 0},
        {NULL, "{\"k\": trux", 0, 0},
        {NULL, "[1]", 0, 0},
        {NULL, "{} x", 0, 0},
        {NULL, "{\"k\" 1}", 0, 0},
        {NULL, "{\"k\": 01}", 0, 0},
        {NULL, "{\"k\": 1.}", 0, 0},
        {NULL, "{\"k\": \"a\nb\"}", 0, 0},   /* a raw control character in a string */
        {NULL, "{\"k\": \"\\x\"}", 0, 0},   /* an unknown escape */
        {NULL, "{\"a\":1,}", 0, 0},
        {NULL, "{                 }", 0, 0}, /* 17 spaces: past the whitespace run's cap */
        /* declared properties, required, additionalProperties false; "a" is a prefix of "ab" */
        {object_ab, "{\"a\": 5}", 1, 1},
        {object_ab, "{\"ab\": \"x\", \"a\": -0}", 1, 1},
        {object_ab, "{\"ab\": \"x\"}", 0, 0},      /* "a" is required */
        {object_ab, "{\"a\": 1, \"a\": 2}", 0, 0}, /* no key twice */
        {object_ab, "{\"a\": 1.5}", 0, 0},         /* integer */
        {object_ab, "{\"ab\": 3", 0, 0},           /* string */
        {object_ab, "{\"c\": 1}", 0, 0},           /* undeclared */
        {object_ab, "{\"a\": 1, \"ab\": \"\", ", 0, 0}, /* no property left for a comma */
        {object_ab, "{\"a", 1, 0},
        /* scalars at the root; a number completes at the end of the text */
        {"{\"type\":\"number\"}", "-12.5E-3", 1, 1},
        {"{\"type\":\"number\"}", "-", 1, 0},
        {"{\"type\":\"integer\"}", "12e3", 0, 0},
        {"{\"type\":\"string\"}", "\"\\u12", 1, 0},
        {"{\"type\":\"string\"}", "\"\\u12g", 0, 0},
        {"{\"type\":\"boolean\"}", "false", 1, 1},
        {"{\"type\":\"boolean\"}", "null", 0, 0},
        {"{\"type\":\"null\"}", "null", 1, 1},
        {"{\"type\":[\"integer\",\"null\"]}", "null", 1, 1},
        {"{\"type\":[\"integer\",\"null\"]}", "7", 1, 1},
        {"{\"type\":[\"integer\",\"null\"]}", "\"7\"", 0, 0},
        /* enum and const: exactly their values' compact spellings; 1 and 12 both */
        {"{\"enum\":[\"red\",\"green\",1,12,null,[1,2]]}", "\"green\"", 1, 1},
        {"{\"enum\":[\"red\",\"green\",1,12,null,[1,2]]}", "1", 1, 1},
        {"{\"enum\":[\"red\",\"green\",1,12,null,[1,2]]}", "12", 1, 1},
        {"{\"enum\":[\"red\",\"green\",1,12,null,[1,2]]}", "[1,2]", 1, 1},
        {"{\"enum\":[\"red\",\"green\",1,12,null,[1,2]]}", "\"gre\"", 0, 0},
        {"{\"enum\":[\"red\",\"green\",1,12,null,[1,2]]}", "13", 0, 0},
        {"{\"const\":\"a\\\"b\"}", "\"a\\\"b\"", 1, 1},
        {"{\"const\":\"a\\\"b\"}", "\"ab\"", 0, 0},
        /* arrays with items, minItems, maxItems; nested objects */
        {nested, "{\"items\": [{\"ok\": true, \"n\": null}]}", 1, 1},
        {nested, "{\"items\": [{\"ok\": true}, {\"ok\": false}]}", 1, 1},
        {nested, "{\"items\": []}", 0, 0},
        {nested, "{\"items\": [{\"ok\": true}, {\"ok\": false}, ", 0, 0},
        {nested, "{\"items\": [{\"n\": null}]}", 0, 0},
        {"{\"type\":\"array\"}", "[1, \"x\", [], {}]", 1, 1},
        /* anyOf: each alternative followed until the bytes tell them apart */
        {choice, "\"s\"", 1, 1},
        {choice, "{\"x\": 1}", 1, 1},
        {choice, "{\"xy\": 1.5}", 1, 1},
        {choice, "{\"x\": 2}", 0, 0},
        {choice, "{\"x", 1, 0},
        {choice, "3", 0, 0},
        /* $ref into $defs, recursive */
        {defs, "{\"next\": {\"next\": null}}", 1, 1},
        {defs, "{\"next\": {}}", 0, 0},
        /* an anyOf that refers to itself: bounded, and its other alternative still read */
        {"{\"$defs\":{\"A\":{\"anyOf\":[{\"$ref\":\"#/$defs/A\"},{\"$ref\":\"#/$defs/A\"},{\"type\":\"null\"}]}},\"$ref\":\"#/$defs/A\"}",
         "null", 1, 1},
        {"{\"$defs\":{\"A\":{\"anyOf\":[{\"$ref\":\"#/$defs/A\"}]}},\"$ref\":\"#/$defs/A\"}", "1", 0, 0},
        /* a map: additionalProperties as the values' schema */
        {"{\"type\":\"object\",\"additionalProperties\":{\"type\":\"integer\"}}", "{\"p\": 1, \"q\": 2}", 1, 1},
        {"{\"type\":\"object\",\"additionalProperties\":{\"type\":\"integer\"}}", "{\"p\": \"1\"}", 0, 0},
        {"{\"type\":\"object\",\"additionalProperties\":false}", "{}", 1, 1},
        {"{\"type\":\"object\",\"additionalProperties\":false}", "{\"p\"", 0, 0},
        /* annotations constrain nothing */
        {"{\"title\":\"T\",\"description\":\"d\",\"type\":\"string\",\"default\":\"x\"}", "\"y\"", 1, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const json_case *c = &cases[i];
        char err[256] = "";
        int complete = -1;
        int prefix = pf_testing_json_prefix(c->schema, c->text, strlen(c->text), &complete, err, sizeof err);
        CHECK_MSG(prefix == c->prefix && (!prefix || complete == c->complete), "case %zu: %s under %s: prefix %d complete %d %s", i,
                  c->text, c->schema ? c->schema : "json_object", prefix, complete, err);
        /* every prefix of a valid text is a valid prefix */
        for (size_t n = 0; c->prefix && n < strlen(c->text); n++) {
            int ok = pf_testing_json_prefix(c->schema, c->text, n, &complete, err, sizeof err);
            CHECK_MSG(ok == 1, "case %zu: the first %zu bytes of %s", i, n, c->text);
        }
    }
}

static void test_refused_keywords(void) {
    const struct { const char *schema, *named; } cases[] = {
        {"{\"type\":\"string\",\"pattern\":\"^a\"}", "pattern"},
        {"{\"type\":\"string\",\"format\":\"date\"}", "format"},
        {"{\"type\":\"string\",\"minLength\":2}", "minLength"},
        {"{\"type\":\"integer\",\"minimum\":0}", "minimum"},
        {"{\"type\":\"number\",\"multipleOf\":2}", "multipleOf"},
        {"{\"oneOf\":[{\"type\":\"string\"}]}", "oneOf"},
        {"{\"allOf\":[{\"type\":\"string\"}]}", "allOf"},
        {"{\"not\":{\"type\":\"string\"}}", "not"},
        {"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\",\"maxLength\":3}}}", "maxLength"},
        {"{\"type\":\"object\",\"patternProperties\":{}}", "patternProperties"},
        {"{\"type\":\"array\",\"items\":[{\"type\":\"string\"}]}", "items"},
        {"{\"type\":\"date\"}", "date"},
        {"{\"$ref\":\"#/$defs/Missing\"}", "#/$defs/Missing"},
        {"{\"type\":\"object\",\"properties\":{\"a\":{}},\"required\":[\"b\"]}", "\"b\""},
        {"{\"anyOf\":[{\"type\":\"string\"}],\"type\":\"string\"}", "type"},
        {"{\"type\":", "not JSON"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char err[256] = "";
        int complete = 0;
        int r = pf_testing_json_prefix(cases[i].schema, "\"a\"", 3, &complete, err, sizeof err);
        CHECK_MSG(r == -1 && strstr(err, cases[i].named), "%s: %d, \"%s\" should name %s", cases[i].schema, r, err, cases[i].named);
    }
}

/* The mask over a 50,257-token vocabulary: inside a string (most tokens fit, each checked to its
   end) and at a key (few fit, most stop at their first byte). */
static void test_mask_cost(void) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/tokenizer-gpt2", test_fixtures);
    pf_tokenizer *tok = NULL;
    char err[256];
    if (pf_tokenizer_load(dir, &tok, err, sizeof err) != PF_OK) {
        CHECK_MSG(0, "%s", err);
        return;
    }
    int vocab = pf_tokenizer_vocab_size(tok);
    float *scores = (float *)malloc((size_t)vocab * sizeof(float));
    int32_t eos = pf_tokenizer_token_id(tok, "<|endoftext|>");
    const struct { const char *prefix, *fits, *not_fits; } steps[] = {
        {"{\"ab\": \"", "hello", "\""}, /* "\"" alone fits, but not as the fixture's token "\"\"" */
        {"{", "\"", "}"},
        {"{\"a\": ", "123", "true"},
    };
    double fastest = 1e30, slowest = 0;
    for (size_t i = 0; i < sizeof steps / sizeof steps[0] && scores; i++) {
        double seconds = 0;
        int allowed = pf_testing_json_mask(tok, object_ab, steps[i].prefix, 5, scores, eos, &seconds);
        CHECK_MSG(allowed > 0 && allowed < vocab, "after %s: %d of %d tokens allowed", steps[i].prefix, allowed, vocab);
        int32_t fits = pf_tokenizer_token_id(tok, steps[i].fits), not_fits = pf_tokenizer_token_id(tok, steps[i].not_fits);
        CHECK_MSG(fits >= 0 && scores[fits] == 0, "after %s the token %s should fit", steps[i].prefix, steps[i].fits);
        if (i > 0) CHECK_MSG(not_fits >= 0 && scores[not_fits] == -INFINITY, "after %s the token %s should not fit", steps[i].prefix, steps[i].not_fits);
        CHECK_MSG(eos >= 0 && scores[eos] == -INFINITY, "eos before the object is complete, after %s", steps[i].prefix);
        printf("json mask after %-10s %5d of %d tokens allowed, %.2f ms a step (%.0f ns a token)\n", steps[i].prefix, allowed, vocab,
               seconds * 1e3, seconds * 1e9 / vocab);
        if (seconds < fastest) fastest = seconds;
        if (seconds > slowest) slowest = seconds;
    }
    /* a blow-up on one prefix (the mask's work growing with the automaton's states, not the
       vocabulary) shows against the others measured in the same run: within 20x of the fastest
       (and 2 ms, against timer noise), a bound that holds on an emulated or loaded processor,
       where every step is slower alike */
    CHECK_MSG(slowest <= 20 * fastest + 0.002, "the slowest mask took %.3f s, the fastest %.3f s", slowest, fastest);
    double seconds = 0;
    int allowed = pf_testing_json_mask(tok, object_ab, "{\"a\": 1}", 1, scores, eos, &seconds);
    CHECK_MSG(allowed == 1 && scores[eos] == 0, "a complete object allows eos alone: %d allowed", allowed);
    free(scores);
    pf_tokenizer_free(tok);
}

/* Greedy generation under a schema on gpt2-tiny (a model that knows no JSON, of 64 positions:
   its whitespace-only tokens are banned by logit_bias, or it pads the value past its length): the
   output ends with eos and is a complete value of the schema; on 1 and 2 ranks the same. */
static void test_generation_under_schema(void) {
    static const char *const schema =
        "{\"type\":\"object\",\"properties\":{\"flag\":{\"type\":\"boolean\"},\"color\":{\"enum\":[\"red\",\"blue\"]},"
        "\"count\":{\"type\":\"integer\"},\"tags\":{\"type\":\"array\",\"items\":{\"enum\":[\"x\",\"y\"]},\"maxItems\":3}},"
        "\"required\":[\"flag\",\"color\",\"count\"],\"additionalProperties\":false}";
    char outputs[2][4096];
    for (int ranks = 1; ranks <= 2; ranks++) {
        char dir[1024];
        pf_model *m = NULL;
        snprintf(dir, sizeof dir, "%s/gpt2-tiny", test_fixtures);
        pf_result r = pf_load(dir, NULL, &m);
        pf_parallel_options po = pf_parallel_options_init();
        po.device = PF_DEVICE_CPU;
        if (r == PF_OK) r = pf_parallelize(m, ranks, &po);
        pf_json_constraint *c = NULL;
        if (r == PF_OK) r = pf_json_constraint_new(m, schema, &c);
        CHECK_MSG(r == PF_OK, "%s", pf_error_message(m));
        if (r != PF_OK) {
            pf_free(m);
            return;
        }
        pf_json_constraint *refused = NULL;
        CHECK(pf_json_constraint_new(m, "{\"type\":\"string\",\"format\":\"email\"}", &refused) == PF_ERROR_INVALID_ARGUMENT &&
              !refused && strstr(pf_error_message(m), "\"format\""));
        pf_generate_options o = pf_model_generate_options(m);
        o.max_new_tokens = 60;
        o.json_constraint = c;
        pf_token_bias spaces[500];
        o.logit_bias = spaces;
        for (int32_t t = 0; t < 500; t++) {
            char piece[64];
            size_t piece_len = 0, blank = 0;
            pf_detokenize(pf_model_tokenizer(m), &t, 1, piece, sizeof piece, &piece_len);
            while (blank < piece_len && strchr(" \t\r\n", piece[blank])) blank++;
            if (piece_len > 0 && blank == piece_len) spaces[o.num_logit_bias].token = t, spaces[o.num_logit_bias++].bias = -INFINITY;
        }
        int32_t prompt[] = {1}, out[400];
        int n = 0;
        r = pf_generate(m, prompt, 1, &o, out, 400, &n);
        CHECK_MSG(r == PF_OK && n > 1 && out[n - 1] == 499, "%s: %d tokens, the last %d", pf_error_message(m), n, n ? out[n - 1] : -1);
        /* the model's token texts are shared: a constraint made after another was freed leads the
           same generation */
        pf_json_constraint *again = NULL;
        int32_t again_out[400];
        int again_n = 0;
        pf_json_constraint_free(c);
        c = NULL;
        CHECK(pf_json_constraint_new(m, schema, &again) == PF_OK);
        o.json_constraint = again;
        CHECK(pf_generate(m, prompt, 1, &o, again_out, 400, &again_n) == PF_OK && again_n == n &&
              !memcmp(again_out, out, (size_t)n * sizeof *out));
        c = again;
        char *text = NULL;
        size_t len = 0;
        pf_generate_options beams = o;
        beams.num_beams = 2;
        int beam_n = 0;
        CHECK(pf_generate(m, prompt, 1, &beams, out, 400, &beam_n) == PF_ERROR_INVALID_ARGUMENT);
        if (r == PF_OK && n > 1) {
            char buffer[4096];
            pf_detokenize(pf_model_tokenizer(m), out, (size_t)n - 1, buffer, sizeof buffer, &len);
            text = buffer;
            int complete = 0;
            char err[256];
            int prefix = pf_testing_json_prefix(schema, text, len, &complete, err, sizeof err);
            CHECK_MSG(prefix == 1 && complete == 1, "greedy output under the schema: %.*s", (int)len, text);
            CHECK_MSG(strstr(text, "\"flag\"") && strstr(text, "\"color\"") && strstr(text, "\"count\""),
                      "every required key: %s", text);
            snprintf(outputs[ranks - 1], sizeof outputs[0], "%.*s", (int)len, text);
            if (ranks == 1) printf("json greedy output of gpt2-tiny: %s\n", outputs[0]);
        }
        pf_json_constraint_free(c);
        pf_free(m);
    }
    CHECK_MSG(!strcmp(outputs[0], outputs[1]), "1 and 2 ranks: %s / %s", outputs[0], outputs[1]);
}

void test_json_output(void) {
    test_prefixes();
    test_refused_keywords();
    test_mask_cost();
    test_generation_under_schema();
}
