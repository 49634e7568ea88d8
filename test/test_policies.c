/* Policies registered at run time (issue 15 item 2): test/fixtures/my-llama is the llama fixture
   under other tensor names, config keys and model_type (test/make_policy_fixture.py); registered
   from C and from its policy.json, it loads and matches transformers' logits and greedy tokens on
   1 and 2 ranks. Plus refusals (twice, built-in names, unknown names, bad JSON, absurd values),
   unregistering while a model is alive, registration from several threads at once, and every
   compiled-in policy exported as JSON and registered again, fixtures of every kind computing the
   same numbers through the copies. */
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"
#include "testing_hooks.h"

#define TOLERANCE_HF 1e-4f /* fp32 logits against transformers, as test_models.c */

static const pf_policy_config my_llama_config[] = {
    {"hidden_size", "d_model", PF_POLICY_NEEDED},
    {"num_heads", "n_heads", PF_POLICY_NEEDED},
    {"num_kv_heads", "n_kv_heads", 0},
    {"head_dim", "head_dim", 0},
    {"num_layers", "n_layers", PF_POLICY_NEEDED},
    {"vocab_size", "vocab_size", PF_POLICY_NEEDED},
    {"max_positions", "max_seq_len", PF_POLICY_NEEDED},
    {"intermediate_size", "ffn_dim", PF_POLICY_NEEDED},
    {"norm_eps", "norm_eps", 1e-6},
    {"rope_theta", "rope_base", 10000},
};

static const pf_policy_tensor my_llama_tensors[] = {
    {"token_embed", "embed.weight", "out_in", "vocab", "required", 0},
    {"attn_norm_weight", "blocks.%d.norm1.scale", "vector", "none", "required", 0},
    {"q_weight", "blocks.%d.attn.query", "out_in", "head_columns", "required", 0},
    {"k_weight", "blocks.%d.attn.key", "out_in", "kv_columns", "required", 0},
    {"v_weight", "blocks.%d.attn.value", "out_in", "kv_columns", "required", 0},
    {"attn_out_weight", "blocks.%d.attn.out", "out_in", "head_rows", "required", 0},
    {"mlp_norm_weight", "blocks.%d.norm2.scale", "vector", "none", "required", 0},
    {"mlp_gate_weight", "blocks.%d.ffn.gate", "out_in", "mlp_columns", "required", 0},
    {"mlp_up_weight", "blocks.%d.ffn.up", "out_in", "mlp_columns", "required", 0},
    {"mlp_down_weight", "blocks.%d.ffn.down", "out_in", "mlp_rows", "required", 0},
    {"final_norm_weight", "final_norm.scale", "vector", "none", "required", 0},
    {"lm_head", "head.weight", "out_in", "vocab", "optional", 0},
};

static const char *const my_llama_prefixes[] = {"net."};

/* The policy of policy.json, as a program would write it in C. */
static pf_policy my_llama_policy(void) {
    pf_policy p;
    memset(&p, 0, sizeof p);
    p.model_type = "my-llama";
    p.kind = "decoder";
    p.norm = "rms";
    p.positions = "rotary_halves";
    p.mlp = "gated";
    p.activation_key = "act";
    p.activation_default = "silu";
    p.prefixes = my_llama_prefixes;
    p.num_prefixes = 1;
    p.config = my_llama_config;
    p.num_config = (int)(sizeof my_llama_config / sizeof my_llama_config[0]);
    p.tensors = my_llama_tensors;
    p.num_tensors = (int)(sizeof my_llama_tensors / sizeof my_llama_tensors[0]);
    return p;
}

static void fixture_dir(char *out, size_t cap) { snprintf(out, cap, "%s/my-llama", test_fixtures); }

static pf_result load_my_llama(pf_model **m) {
    char dir[1024];
    fixture_dir(dir, sizeof dir);
    pf_load_options lo = pf_load_options_init();
    lo.skip_tokenizer = 1;
    return pf_load(dir, &lo, m);
}

/* my-llama against transformers' reference on 1 and 2 CPU ranks: prompt logits and greedy ids. */
static void check_my_llama(const char *how) {
    char dir[1024], path[1100];
    fixture_dir(dir, sizeof dir);
    test_reference ref;
    CHECK_MSG(test_read_reference(dir, &ref) == 0, "%s: reference.txt", how);
    snprintf(path, sizeof path, "%s/reference_logits.bin", dir);
    size_t count = 0;
    float *want = test_read_floats(path, &count);
    pf_model *m = NULL;
    pf_result r = load_my_llama(&m);
    CHECK_MSG(r == PF_OK, "%s: pf_load: %s", how, pf_error_message(m));
    size_t n = (size_t)ref.num_prompt_ids * (size_t)ref.vocab_size;
    float *logits = (float *)malloc(n * sizeof(float));
    CHECK_MSG(want && count == n && logits, "%s: reference logits", how);
    for (int ranks = 1; r == PF_OK && want && count == n && logits && ranks <= 2; ranks++) {
        pf_parallel_options po = pf_parallel_options_init();
        po.device = PF_DEVICE_CPU;
        pf_result pr = pf_parallelize(m, ranks, &po);
        CHECK_MSG(pr == PF_OK, "%s: pf_parallelize(%d): %s", how, ranks, pf_error_message(m));
        if (pr) continue;
        int32_t ids[TEST_MAX_IDS], out[TEST_MAX_IDS];
        for (int i = 0; i < ref.num_prompt_ids; i++) ids[i] = ref.prompt_ids[i];
        pr = pf_forward(m, ids, 1, ref.num_prompt_ids, logits);
        CHECK_MSG(pr == PF_OK, "%s: pf_forward: %s", how, pf_error_message(m));
        float diff = pr == PF_OK ? test_max_abs_diff(logits, want, n) : INFINITY;
        CHECK_MSG(diff <= TOLERANCE_HF, "%s on %d ranks: logits differ from transformers by %g", how, ranks, diff);
        pf_generate_options go = pf_generate_options_init();
        go.max_new_tokens = ref.max_new_tokens;
        int got = 0;
        pr = pf_generate(m, ids, ref.num_prompt_ids, &go, out, TEST_MAX_IDS, &got);
        int same = pr == PF_OK && got == ref.num_greedy_ids;
        for (int i = 0; same && i < got; i++) same = out[i] == ref.greedy_ids[i];
        CHECK_MSG(same, "%s on %d ranks: greedy tokens differ from transformers (%s)", how, ranks, pf_error_message(m));
    }
    const char *model_type = pf_get_info(m).model_type; /* NULL when the load failed */
    CHECK(model_type && strcmp(model_type, "my-llama") == 0);
    free(logits);
    free(want);
    pf_free(m);
}

/* Registered from C: loads and matches; a second registration, and unregistering while models
   are alive, are refused; after pf_free it unregisters and the model_type is unknown again. */
static void test_policy_from_c(void) {
    char err[512] = "";
    pf_model *m = NULL;
    pf_result r = load_my_llama(&m);
    CHECK_MSG(r == PF_ERROR_UNSUPPORTED && strstr(pf_error_message(m), "my-llama"), "unregistered: %s", pf_error_message(m));
    pf_free(m);

    pf_policy p = my_llama_policy();
    r = pf_register_policy(&p, err, sizeof err);
    CHECK_MSG(r == PF_OK, "pf_register_policy: %s", err);
    check_my_llama("my-llama (C policy)");

    r = pf_register_policy(&p, err, sizeof err);
    CHECK_MSG(r == PF_ERROR_INVALID_ARGUMENT && strstr(err, "registered already"), "twice: %s", err);

    pf_model *a = NULL, *b = NULL;
    CHECK(load_my_llama(&a) == PF_OK);
    CHECK(load_my_llama(&b) == PF_OK);
    r = pf_unregister_policy("my-llama", err, sizeof err);
    CHECK_MSG(r == PF_ERROR_BUSY && strstr(err, "2 models"), "busy with two: %s", err);
    pf_free(a);
    r = pf_unregister_policy("my-llama", err, sizeof err);
    CHECK_MSG(r == PF_ERROR_BUSY && strstr(err, "1 model "), "busy with one: %s", err);
    /* the model still runs: its policy stays */
    CHECK(pf_parallelize(b, 1, NULL) == PF_OK);
    pf_free(b);
    r = pf_unregister_policy("my-llama", err, sizeof err);
    CHECK_MSG(r == PF_OK, "unregister: %s", err);
    r = pf_unregister_policy("my-llama", err, sizeof err);
    CHECK_MSG(r == PF_ERROR_INVALID_ARGUMENT && strstr(err, "my-llama"), "unregister twice: %s", err);
    r = load_my_llama(&m);
    CHECK_MSG(r == PF_ERROR_UNSUPPORTED, "after unregistering: %s", pf_error_message(m));
    pf_free(m);
}

/* The same policy from the policy.json committed beside the fixture. */
static void test_policy_from_json(void) {
    char dir[1024], path[1100], err[512] = "";
    fixture_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/policy.json", dir);
    pf_result r = pf_register_policy_file(path, err, sizeof err);
    CHECK_MSG(r == PF_OK, "pf_register_policy_file: %s", err);
    check_my_llama("my-llama (policy.json)");
    /* the C spelling collides with the JSON one */
    pf_policy p = my_llama_policy();
    r = pf_register_policy(&p, err, sizeof err);
    CHECK_MSG(r == PF_ERROR_INVALID_ARGUMENT && strstr(err, "registered already"), "C after JSON: %s", err);
    CHECK(pf_unregister_policy("my-llama", err, sizeof err) == PF_OK);

    r = pf_register_policy_file("/nonexistent/policy.json", err, sizeof err);
    CHECK_MSG(r == PF_ERROR_IO && strstr(err, "/nonexistent/policy.json"), "missing file: %s", err);
}

/* A C policy changed by one field is refused with a message holding `needle`. */
#define CHECK_REFUSED(p, want, needle)                                                                         \
    do {                                                                                                       \
        char e_[1024] = "";                                                                                    \
        pf_result r_ = pf_register_policy(&(p), e_, sizeof e_);                                                \
        CHECK_MSG(r_ == (want) && strstr(e_, (needle)), "got %s (\"%s\"), want %s naming \"%s\"",              \
                  pf_result_string(r_), e_, pf_result_string(want), (needle));                                 \
        if (r_ == PF_OK) pf_unregister_policy((p).model_type, NULL, 0);                                        \
    } while (0)

static void test_policy_refusals(void) {
    pf_policy p = my_llama_policy();
    p.norm = "group";
    CHECK_REFUSED(p, PF_ERROR_INVALID_ARGUMENT, "norm: unknown name \"group\" (known: layer, rms, rms_plus_one)");
    p = my_llama_policy();
    p.positions = "RoTaRy_halves"; /* one spelling: lower case */
    CHECK_REFUSED(p, PF_ERROR_INVALID_ARGUMENT, "positions: unknown name \"RoTaRy_halves\"");
    p = my_llama_policy();
    static const pf_policy_config speech[] = {{"speech", NULL, 1}};
    p.config = speech;
    p.num_config = 1;
    CHECK_REFUSED(p, PF_ERROR_UNSUPPORTED, "config[0].field: \"speech\": a speech front end");
    p = my_llama_policy();
    static const pf_policy_config mel[] = {{"mel_frontend", NULL, 1}};
    p.config = mel;
    p.num_config = 1;
    CHECK_REFUSED(p, PF_ERROR_UNSUPPORTED, "config[0].field: \"mel_frontend\": a speech front end");
    p = my_llama_policy();
    static const pf_policy_config subsampler[] = {{"conv_subsampler", NULL, 1}};
    p.config = subsampler;
    p.num_config = 1;
    CHECK_REFUSED(p, PF_ERROR_UNSUPPORTED, "config[0].field: \"conv_subsampler\": a speech front end");
    p = my_llama_policy();
    p.kind = "diffusion";
    CHECK_REFUSED(p, PF_ERROR_INVALID_ARGUMENT, "kind: unknown name \"diffusion\" (known: decoder, encoder, seq2seq)");
    p = my_llama_policy();
    p.model_type = "llama";
    CHECK_REFUSED(p, PF_ERROR_INVALID_ARGUMENT, "\"llama\" is compiled in");
    p.model_type = "xlm-roberta"; /* an alias */
    CHECK_REFUSED(p, PF_ERROR_INVALID_ARGUMENT, "compiled in");
    p.model_type = "";
    CHECK_REFUSED(p, PF_ERROR_INVALID_ARGUMENT, "model_type is missing");
    p.model_type = NULL;
    CHECK_REFUSED(p, PF_ERROR_INVALID_ARGUMENT, "model_type is missing");
    p = my_llama_policy();
    p.positions = NULL; /* learned, without a position table */
    CHECK_REFUSED(p, PF_ERROR_INVALID_ARGUMENT, "positions \"learned\" needs a tensor row with the slot \"position_embed\"");
    p = my_llama_policy();
    p.activation_default = "swiglu-ish";
    CHECK_REFUSED(p, PF_ERROR_INVALID_ARGUMENT, "\"swiglu-ish\" is not an activation");
    p = my_llama_policy();
    p.mlp_ratio = 1000;
    CHECK_REFUSED(p, PF_ERROR_INVALID_ARGUMENT, "mlp_ratio = 1000");
    p = my_llama_policy();
    p.num_tensors = -1;
    CHECK_REFUSED(p, PF_ERROR_INVALID_ARGUMENT, "num_tensors = -1");
    p = my_llama_policy();
    p.config = NULL;
    CHECK_REFUSED(p, PF_ERROR_INVALID_ARGUMENT, "num_config = 10 but config is NULL");

    pf_policy_tensor tensors[sizeof my_llama_tensors / sizeof my_llama_tensors[0]];
    struct { int row; const char *slot, *pattern, *layout, *split, *need; const char *needle; } bad_rows[] = {
        {2, "query_weight", NULL, NULL, NULL, NULL, "tensors[2].slot: unknown name \"query_weight\""},
        {2, "qkv_weight", NULL, NULL, NULL, NULL, "unknown name \"qkv_weight\""}, /* built on the ranks only */
        {2, NULL, NULL, "sideways", NULL, NULL, "tensors[2].layout: unknown name \"sideways\""},
        {2, NULL, NULL, NULL, "diagonal", NULL, "tensors[2].split: unknown name \"diagonal\""},
        {2, NULL, NULL, NULL, NULL, "sometimes", "tensors[2].need: unknown name \"sometimes\""},
        {2, NULL, NULL, NULL, "vocab", NULL, "slot \"q_weight\" with split \"vocab\""},
        {1, NULL, NULL, "in_out", NULL, NULL, "slot \"attn_norm_weight\" with layout \"in_out\""},
        {2, NULL, "blocks.%d.%d.query", NULL, NULL, NULL, "takes one \"%d\" (the layer) at most"},
        {2, NULL, "blocks.%s.query", NULL, NULL, NULL, "takes one \"%d\" (the layer) at most"},
        {2, NULL, "blocks.%d.query%", NULL, NULL, NULL, "takes one \"%d\" (the layer) at most"},
        {0, NULL, "embed.%d", NULL, NULL, NULL, "takes no '%'"},
        {0, NULL, "", NULL, NULL, NULL, "tensors[0].pattern is missing"},
        {0, "lm_head", NULL, NULL, NULL, NULL, "no tensor row has the slot \"token_embed\""},
    };
    for (size_t i = 0; i < sizeof bad_rows / sizeof bad_rows[0]; i++) {
        memcpy(tensors, my_llama_tensors, sizeof tensors);
        pf_policy_tensor *t = &tensors[bad_rows[i].row];
        if (bad_rows[i].slot) t->slot = bad_rows[i].slot;
        if (bad_rows[i].pattern) t->pattern = bad_rows[i].pattern;
        if (bad_rows[i].layout) t->layout = bad_rows[i].layout;
        if (bad_rows[i].split) t->split = bad_rows[i].split;
        if (bad_rows[i].need) t->need = bad_rows[i].need;
        p = my_llama_policy();
        p.tensors = tensors;
        CHECK_REFUSED(p, PF_ERROR_INVALID_ARGUMENT, bad_rows[i].needle);
    }
    memcpy(tensors, my_llama_tensors, sizeof tensors);
    tensors[3].encoder = 1;
    p = my_llama_policy();
    p.tensors = tensors;
    CHECK_REFUSED(p, PF_ERROR_INVALID_ARGUMENT, "seq2seq");

    pf_policy_config config[sizeof my_llama_config / sizeof my_llama_config[0]];
    struct { int row; const char *field, *key; double fallback; const char *needle; } bad_config[] = {
        {0, "hidden_dims", NULL, 0, "config[0].field: unknown field \"hidden_dims\""},
        {0, "hidden_size", "", 0, "config[0].key is missing"},
        {0, "layer_window", NULL, 0, "unknown field \"layer_window\""}, /* a pointer: no row names it */
        {2, NULL, NULL, 0.5, "config[2].fallback = 0.5 is absurd for field \"num_kv_heads\""},
        {2, NULL, NULL, NAN, "config[2].fallback = nan"},
        {8, NULL, NULL, INFINITY, "config[8].fallback = inf"},
        {3, NULL, NULL, 2e9, "is absurd"},
    };
    for (size_t i = 0; i < sizeof bad_config / sizeof bad_config[0]; i++) {
        memcpy(config, my_llama_config, sizeof config);
        pf_policy_config *c = &config[bad_config[i].row];
        if (bad_config[i].field) c->field = bad_config[i].field;
        if (bad_config[i].key) c->key = bad_config[i].key;
        if (!bad_config[i].field && !bad_config[i].key) c->fallback = bad_config[i].fallback;
        p = my_llama_policy();
        p.config = config;
        CHECK_REFUSED(p, PF_ERROR_INVALID_ARGUMENT, bad_config[i].needle);
    }
    memcpy(config, my_llama_config, sizeof config);
    config[0].key = NULL; /* fixed, with no value to fix it to */
    p = my_llama_policy();
    p.config = config;
    CHECK_REFUSED(p, PF_ERROR_INVALID_ARGUMENT, "no key and no fallback");

    const char *prefixes[] = {"net.%s"};
    p = my_llama_policy();
    p.prefixes = prefixes;
    CHECK_REFUSED(p, PF_ERROR_INVALID_ARGUMENT, "prefixes[0] \"net.%s\" holds a '%'");
    const char *buffers[] = {"blocks.%d.mask.%d"};
    p = my_llama_policy();
    p.buffers = buffers;
    p.num_buffers = 1;
    CHECK_REFUSED(p, PF_ERROR_INVALID_ARGUMENT, "more than one \"%d\"");

    char err[256];
    CHECK(pf_register_policy(NULL, err, sizeof err) == PF_ERROR_INVALID_ARGUMENT);
    CHECK(pf_unregister_policy(NULL, err, sizeof err) == PF_ERROR_INVALID_ARGUMENT);
    CHECK(pf_unregister_policy("llama", err, sizeof err) == PF_ERROR_INVALID_ARGUMENT && strstr(err, "compiled-in"));
    CHECK(pf_register_policy_json(NULL, 0, err, sizeof err) == PF_ERROR_INVALID_ARGUMENT);

    /* A policy that registers but does not fit the checkpoint fails at load, naming the tensor. */
    memcpy(tensors, my_llama_tensors, sizeof tensors);
    tensors[2].pattern = "blocks.%d.attn.q";
    p = my_llama_policy();
    p.tensors = tensors;
    CHECK(pf_register_policy(&p, err, sizeof err) == PF_OK);
    pf_model *m = NULL;
    pf_result r = load_my_llama(&m);
    CHECK_MSG(r == PF_ERROR_FORMAT && strstr(pf_error_message(m), "net.blocks.0.attn.q'"), "misfit: %s", pf_error_message(m));
    pf_free(m);
    CHECK(pf_unregister_policy("my-llama", err, sizeof err) == PF_OK);

    /* A required_values row refuses a config whose value differs, naming the key. */
    pf_policy_key_value required_values[] = {{"n_heads", 6}};
    p = my_llama_policy();
    p.required_values = required_values;
    p.num_required_values = 1;
    CHECK(pf_register_policy(&p, err, sizeof err) == PF_OK);
    r = load_my_llama(&m);
    CHECK_MSG(r == PF_OK, "required_values n_heads = 6: %s", pf_error_message(m));
    pf_free(m);
    CHECK(pf_unregister_policy("my-llama", err, sizeof err) == PF_OK);
    required_values[0].value = 8;
    CHECK(pf_register_policy(&p, err, sizeof err) == PF_OK);
    r = load_my_llama(&m);
    CHECK_MSG(r == PF_ERROR_UNSUPPORTED && strstr(pf_error_message(m), "\"n_heads\" = 6 is not supported for model_type \"my-llama\""),
              "required_values n_heads = 8: %s", pf_error_message(m));
    pf_free(m);
    CHECK(pf_unregister_policy("my-llama", err, sizeof err) == PF_OK);

    /* At most 128 at once (more than the compiled-in model_types, which the test below copies). */
    static char names[129][32];
    int registered = 0;
    for (int i = 0; i < 129; i++) {
        snprintf(names[i], sizeof names[i], "many-%d", i);
        p = my_llama_policy();
        p.model_type = names[i];
        pf_result ri = pf_register_policy(&p, err, sizeof err);
        if (i < 128) registered += ri == PF_OK;
        else CHECK_MSG(ri == PF_ERROR_UNSUPPORTED && strstr(err, "128 policies"), "129th: %s", err);
    }
    CHECK(registered == 128);
    for (int i = 0; i < 128; i++) CHECK(pf_unregister_policy(names[i], err, sizeof err) == PF_OK);
}

/* JSON text refused with a message holding needle. */
static void check_json_refused(const char *json, pf_result want, const char *needle) {
    char err[1024] = "";
    pf_result r = pf_register_policy_json(json, strlen(json), err, sizeof err);
    CHECK_MSG(r == want && strstr(err, needle), "%s: got %s (\"%s\"), want %s naming \"%s\"", json, pf_result_string(r), err,
              pf_result_string(want), needle);
    if (r == PF_OK) pf_unregister_policy("j", NULL, 0);
}

#define J_TENSOR "{\"slot\": \"token_embed\", \"pattern\": \"embed.weight\", \"split\": \"vocab\"}"
#define J_HEAD "\"model_type\": \"j\", \"activation_default\": \"silu\", \"positions\": \"rotary_halves\", "

static void test_policy_json_refusals(void) {
    check_json_refused("{" J_HEAD "\"tensors\": [" J_TENSOR "]}", PF_OK, "");
    check_json_refused("{" J_HEAD "\"tensors\": [" J_TENSOR "]", PF_ERROR_FORMAT, "policy JSON: ");
    check_json_refused("[]", PF_ERROR_FORMAT, "the policy is not an object");
    check_json_refused("", PF_ERROR_FORMAT, "policy JSON: ");
    check_json_refused("{" J_HEAD "\"tensors\": [" J_TENSOR "], \"colour\": 1}", PF_ERROR_FORMAT,
                       "the policy: unknown key \"colour\"");
    check_json_refused("{" J_HEAD "\"norm\": \"batch\", \"tensors\": [" J_TENSOR "]}", PF_ERROR_INVALID_ARGUMENT,
                       "norm: unknown name \"batch\"");
    check_json_refused("{" J_HEAD "\"norm\": 3, \"tensors\": [" J_TENSOR "]}", PF_ERROR_FORMAT, "\"norm\" is not a string");
    check_json_refused("{\"model_type\": null, \"activation_default\": \"silu\", \"tensors\": [" J_TENSOR "]}",
                       PF_ERROR_FORMAT, "\"model_type\" is not a string");
    check_json_refused("{\"model_type\": \"j\\u0000k\", \"activation_default\": \"silu\", \"tensors\": [" J_TENSOR "]}",
                       PF_ERROR_FORMAT, "holds a NUL");
    check_json_refused("{" J_HEAD "\"mlp_ratio\": 1e9, \"tensors\": [" J_TENSOR "]}", PF_ERROR_FORMAT, "\"mlp_ratio\" is not an integer");
    check_json_refused("{" J_HEAD "\"tied_lm_head\": 2, \"tensors\": [" J_TENSOR "]}", PF_ERROR_FORMAT, "\"tied_lm_head\"");
    check_json_refused("{" J_HEAD "\"tensors\": {}}", PF_ERROR_FORMAT, "\"tensors\" is not a list");
    check_json_refused("{" J_HEAD "\"tensors\": [" J_TENSOR ", 7]}", PF_ERROR_FORMAT, "tensors[1] is not an object");
    check_json_refused("{" J_HEAD "\"tensors\": [{\"slot\": \"token_embed\", \"pattern\": \"e\", \"shape\": 1}]}",
                       PF_ERROR_FORMAT, "tensors[0]: unknown key \"shape\"");
    check_json_refused("{" J_HEAD "\"tensors\": [{\"slot\": \"token_embed\", \"pattern\": \"e\", \"encoder\": 2}]}",
                       PF_ERROR_FORMAT, "\"tensors[0].encoder\" is not an integer in 0..1");
    check_json_refused("{" J_HEAD "\"tensors\": [{\"slot\": \"token_embed\", \"split\": \"vocab\"}]}",
                       PF_ERROR_INVALID_ARGUMENT, "tensors[0].pattern is missing");
    check_json_refused("{" J_HEAD "\"tensors\": [" J_TENSOR "], \"config\": [{\"field\": \"hidden_size\"}]}",
                       PF_ERROR_FORMAT, "config[0].key is missing");
    check_json_refused("{" J_HEAD "\"tensors\": [" J_TENSOR "], \"config\": [{\"field\": \"hidden_size\", \"key\": \"d\", "
                       "\"fallback\": \"big\"}]}", PF_ERROR_FORMAT, "config[0].fallback is not a number");
    check_json_refused("{" J_HEAD "\"tensors\": [" J_TENSOR "], \"config\": [{\"field\": \"depth\", \"key\": \"d\"}]}",
                       PF_ERROR_INVALID_ARGUMENT, "unknown field \"depth\"");
    check_json_refused("{" J_HEAD "\"tensors\": [" J_TENSOR "], \"config\": [{\"field\": \"hidden_size\", \"key\": null}]}",
                       PF_ERROR_INVALID_ARGUMENT, "no key and no fallback");
    check_json_refused("{" J_HEAD "\"tensors\": [" J_TENSOR "], \"prefixes\": [1]}", PF_ERROR_FORMAT,
                       "\"prefixes[0]\" is not a string");
    check_json_refused("{" J_HEAD "\"tensors\": [" J_TENSOR "], \"model_type\": \"gpt2\"}", PF_ERROR_INVALID_ARGUMENT,
                       "compiled in");
    check_json_refused("{" J_HEAD "\"tensors\": [" J_TENSOR "], \"required_values\": [{\"key\": \"x\"}]}", PF_ERROR_FORMAT,
                       "required_values[0].value is missing");
    check_json_refused("{" J_HEAD "\"tensors\": [" J_TENSOR "], \"nulls\": [{\"key\": \"x\", \"value\": \"none\"}]}",
                       PF_ERROR_FORMAT, "nulls[0].value is not a number");
    check_json_refused("{" J_HEAD "\"tensors\": [" J_TENSOR "], \"nulls\": [{\"key\": \"x\"}]}", PF_OK, "");
    check_json_refused("{" J_HEAD "\"tensors\": [" J_TENSOR "], \"layer_types\": [{\"key\": \"x\", \"needed\": 2}]}",
                       PF_ERROR_FORMAT, "\"layer_types[0].needed\" is not an integer in 0..1");
    check_json_refused("{" J_HEAD "\"tensors\": [" J_TENSOR "], \"activations\": [{\"name\": \"silu\", \"activation\": "
                       "\"swish\"}]}", PF_ERROR_INVALID_ARGUMENT, "activations[0].activation: unknown name \"swish\" (known: "
                       "gelu_tanh, gelu_erf, relu, silu, tanh, quick_gelu)");
    check_json_refused("{" J_HEAD "\"tensors\": [" J_TENSOR "], \"activations\": [{\"name\": \"fast\", \"activation\": "
                       "\"relu\"}]}", PF_ERROR_INVALID_ARGUMENT, "\"silu\" is not an activation we compute (not in the policy's activations)");
    check_json_refused("{" J_HEAD "\"tensors\": [" J_TENSOR "], \"activations\": [{\"name\": \"silu\", \"activation\": "
                       "\"relu\"}], \"layer_types\": [{\"key\": \"kinds\", \"needed\": true}], \"required_values\": [{\"key\": \"a.b\", "
                       "\"value\": 0}]}", PF_OK, "");
    /* a speech front end's rows are policies.inc's (its loader is compiled in), never a policy's */
    check_json_refused("{" J_HEAD "\"tensors\": [" J_TENSOR ", {\"slot\": \"front_conv_weight\", \"pattern\": "
                       "\"conv.%d.weight\", \"layout\": \"conv\"}]}", PF_ERROR_UNSUPPORTED,
                       "tensors[1].slot: \"front_conv_weight\": a speech front end");
    /* the JSON text need not end in NUL: only len bytes are read */
    const char text[] = "{" J_HEAD "\"tensors\": [" J_TENSOR "]}garbage";
    char err[256];
    CHECK(pf_register_policy_json(text, sizeof text - 1 - 7, err, sizeof err) == PF_OK);
    CHECK(pf_unregister_policy("j", err, sizeof err) == PF_OK);
}

/* Threads register, collide and unregister at once: every name ends registered once, every
   collision is refused, and nothing is left behind. */
#define POLICY_THREADS 8
#define POLICIES_PER_THREAD 6

static int shared_wins[POLICY_THREADS];
static int own_failures[POLICY_THREADS];

static void *register_many(void *arg) {
    int id = (int)(intptr_t)arg;
    char names[POLICIES_PER_THREAD][32], err[256];
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < POLICIES_PER_THREAD; i++) {
            snprintf(names[i], sizeof names[i], "thread-%d-%d", id, i);
            pf_policy p = my_llama_policy();
            p.model_type = names[i];
            own_failures[id] += pf_register_policy(&p, err, sizeof err) != PF_OK;
            p.model_type = "shared-name";
            if (pf_register_policy(&p, err, sizeof err) == PF_OK) shared_wins[id]++;
        }
        for (int i = 0; i < POLICIES_PER_THREAD; i++) own_failures[id] += pf_unregister_policy(names[i], err, sizeof err) != PF_OK;
    }
    return NULL;
}

static void test_policy_threads(void) {
    pthread_t threads[POLICY_THREADS];
    for (int i = 0; i < POLICY_THREADS; i++) pthread_create(&threads[i], NULL, register_many, (void *)(intptr_t)i);
    for (int i = 0; i < POLICY_THREADS; i++) pthread_join(threads[i], NULL);
    int wins = 0, failures = 0;
    for (int i = 0; i < POLICY_THREADS; i++) {
        wins += shared_wins[i];
        failures += own_failures[i];
    }
    CHECK_MSG(wins == 1, "\"shared-name\" registered %d times", wins);
    CHECK_MSG(failures == 0, "%d registrations or unregistrations of a thread's own names failed", failures);
    char err[256];
    CHECK(pf_unregister_policy("shared-name", err, sizeof err) == PF_OK);
    CHECK(pf_unregister_policy("thread-0-0", err, sizeof err) == PF_ERROR_INVALID_ARGUMENT);
    /* and the registry is whole again: the fixture loads through a fresh registration */
    pf_policy p = my_llama_policy();
    CHECK(pf_register_policy(&p, err, sizeof err) == PF_OK);
    pf_model *m = NULL;
    CHECK(load_my_llama(&m) == PF_OK);
    pf_free(m);
    CHECK(pf_unregister_policy("my-llama", err, sizeof err) == PF_OK);
}

/* ---- every compiled-in policy, exported and registered again ---- */

/* text with the first `"model_type": "OLD"` made `"model_type": "copy-OLD"`; NULL when it has
   none. *old gets OLD. The caller frees the result. */
static char *renamed_model_type(const char *text, char *old, size_t old_size) {
    static const char key[] = "\"model_type\": \"";
    const char *at = strstr(text, key), *end = at ? strchr(at + sizeof key - 1, '"') : NULL;
    if (!end || (size_t)(end - at) >= old_size + sizeof key) return NULL;
    size_t head = (size_t)(at - text) + sizeof key - 1, len = strlen(text);
    snprintf(old, old_size, "%.*s", (int)(end - text - (ptrdiff_t)head), text + head);
    char *out = (char *)malloc(len + 6);
    if (!out) return NULL;
    memcpy(out, text, head);
    memcpy(out + head, "copy-", 5);
    memcpy(out + head + 5, text + head, len - head + 1);
    return out;
}

/* A directory like the fixture, its files linked, its config.json naming copy-MODEL_TYPE. */
static int copy_fixture(const char *name, char *dir, size_t dir_size, char *old, size_t old_size) {
    char cwd[512] = "", src[1024], path[1400], target[1400];
    if (test_fixtures[0] != '/' && !getcwd(cwd, sizeof cwd)) return -1; /* links are read from /tmp */
    snprintf(src, sizeof src, "%s%s%s/%s", cwd, cwd[0] ? "/" : "", test_fixtures, name);
    snprintf(dir, dir_size, "/tmp/pf_policy_XXXXXX");
    if (!mkdtemp(dir)) return -1;
    DIR *d = opendir(src);
    struct dirent *e;
    int ok = d != NULL;
    while (ok && (e = readdir(d))) {
        if (e->d_name[0] == '.' || !strcmp(e->d_name, "config.json")) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        snprintf(target, sizeof target, "%s/%s", src, e->d_name);
        ok = symlink(target, path) == 0;
    }
    if (d) closedir(d);
    snprintf(path, sizeof path, "%s/config.json", src);
    size_t size = 0;
    char *config = ok ? test_read_file(path, &size) : NULL;
    char *renamed = config ? renamed_model_type(config, old, old_size) : NULL;
    snprintf(path, sizeof path, "%s/config.json", dir);
    ok = renamed && test_write_file(path, renamed, strlen(renamed)) == 0;
    free(config);
    free(renamed);
    return ok ? 0 : -1;
}

static void remove_copy(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[400];
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    if (d) closedir(d);
    rmdir(dir);
}

/* The numbers a model computes for a fixed request of its kind, on 2 ranks; NULL on failure. */
static float *kind_outputs(const char *dir, size_t *count) {
    pf_model *m = NULL;
    pf_load_options lo = pf_load_options_init();
    lo.skip_tokenizer = 1;
    float *out = NULL;
    *count = 0;
    pf_result r = pf_load(dir, &lo, &m);
    CHECK_MSG(r == PF_OK, "%s: pf_load: %s", dir, pf_error_message(m));
    if (!r) r = pf_parallelize(m, 2, NULL);
    pf_model_info info = pf_get_info(m);
    int32_t ids[5] = {2, 5, 7, 9, 3}, decoder[2] = {info.decoder_start_token_id, 5};
    const int32_t *rows[1] = {ids}, *decoder_rows[1] = {decoder};
    int lengths[1] = {5}, decoder_lengths[1] = {2};
    if (!r && info.is_encoder_decoder) {
        out = (float *)malloc(2 * (size_t)info.vocab_size * sizeof(float));
        r = out ? pf_forward_seq2seq(m, rows, lengths, decoder_rows, decoder_lengths, 1, out) : PF_ERROR_OUT_OF_MEMORY;
        *count = 2 * (size_t)info.vocab_size;
    } else if (!r && info.is_encoder) {
        pf_encoding *e = NULL;
        r = pf_encode(m, rows, NULL, lengths, 1, &e);
        size_t hidden = r ? 0 : (size_t)e->offsets[1] * (size_t)e->hidden_size;
        size_t logits = r || !e->logits ? 0 : (size_t)(e->logits_per_token ? e->offsets[1] : 1) * (size_t)e->num_logits;
        out = r ? NULL : (float *)malloc((hidden + logits + 1) * sizeof(float));
        if (out) {
            memcpy(out, e->last_hidden_state, hidden * sizeof(float));
            if (logits) memcpy(out + hidden, e->logits, logits * sizeof(float));
            *count = hidden + logits;
        }
        pf_encoding_free(e);
    } else if (!r) {
        out = (float *)malloc(5 * (size_t)info.vocab_size * sizeof(float));
        r = out ? pf_forward(m, ids, 1, 5, out) : PF_ERROR_OUT_OF_MEMORY;
        *count = 5 * (size_t)info.vocab_size;
    }
    CHECK_MSG(r == PF_OK, "%s: %s", dir, pf_error_message(m));
    pf_free(m);
    if (r) {
        free(out);
        return NULL;
    }
    return out;
}

static void test_policy_round_trip(void) {
#ifdef PF_TESTING
    /* every compiled-in model_type (aliases too) as JSON registers again under another name */
    char *json = (char *)malloc(1 << 20), err[1024];
    int exported = 0;
    for (int i = 0; json && pf_testing_builtin_model_type(i); i++) {
        const char *model_type = pf_testing_builtin_model_type(i);
        size_t len = 0, needed = 0;
        if (!strcmp(model_type, "clip") || !strcmp(model_type, "wav2vec2") || !strcmp(model_type, "hubert") ||
            !strcmp(model_type, "whisper") || !strcmp(model_type, "speech_to_text")) {
            /* two towers (the towers' own rows export), a speech front end named in code: refused */
            CHECK(pf_policy_to_json(model_type, NULL, 0, &needed) == PF_ERROR_UNSUPPORTED && needed == 0);
            continue;
        }
        CHECK(pf_policy_to_json(model_type, NULL, 0, &needed) == PF_ERROR_BUFFER_TOO_SMALL && needed > 100);
        pf_result r = pf_policy_to_json(model_type, json, 1 << 20, &len);
        CHECK_MSG(r == PF_OK && len == needed && strlen(json) == len, "%s: pf_policy_to_json: %s", model_type, pf_result_string(r));
        char old[128], *copy = r ? NULL : renamed_model_type(json, old, sizeof old);
        CHECK_MSG(copy && !strcmp(old, model_type), "%s: its JSON names model_type \"%s\"", model_type, copy ? old : "");
        r = copy ? pf_register_policy_json(copy, strlen(copy), err, sizeof err) : PF_ERROR_FORMAT;
        CHECK_MSG(r == PF_OK, "%s: its own policy does not register again: %s", model_type, err);
        /* and the registered one exports the same rows; unregistered again, so that the copies of
           every compiled-in type never need more room than the registry has at once */
        size_t again_len = 0;
        char name[160], *again = (char *)malloc(len + 64);
        snprintf(name, sizeof name, "copy-%s", model_type);
        CHECK(r || (again && pf_policy_to_json(name, again, len + 64, &again_len) == PF_OK && !strcmp(again, copy)));
        CHECK(r || pf_unregister_policy(name, err, sizeof err) == PF_OK);
        free(again);
        free(copy);
        exported += r == PF_OK;
    }
    CHECK_MSG(exported > 30, "%d compiled-in policies exported", exported);

    /* fixtures of every kind compute through the copies what they compute through the compiled-in rows */
    static const char *const fixtures[] = {"gpt2-hub", "gpt_neo", "gptj", "gpt_neox", "opt-350m-style", "bloom", "llama",
                                           "mistral", "qwen2-window-layers", "codegen", "openai-gpt", "ctrl", "bert-mlm",
                                           "roberta-cls", "albert-mlm", "mpnet-mlm", "electra", "distilbert-qa",
                                           "megatron-bert", "roformer-mlm", "t5-encoder-gated", "t5-s2s", "bart-s2s",
                                           "marian-s2s", "fsmt-s2s", "mbart-s2s", "m2m100-s2s", "pegasus-s2s"};
    for (size_t i = 0; i < sizeof fixtures / sizeof fixtures[0]; i++) {
        char src[1024], dir[64], model_type[128], name[160];
        snprintf(src, sizeof src, "%s/%s", test_fixtures, fixtures[i]);
        if (copy_fixture(fixtures[i], dir, sizeof dir, model_type, sizeof model_type)) {
            CHECK_MSG(0, "%s: cannot copy the fixture", fixtures[i]);
            continue;
        }
        /* its model_type's policy, registered again under the copy's name */
        size_t len = 0;
        char *policy = json && pf_policy_to_json(model_type, json, 1 << 20, &len) == PF_OK ? renamed_model_type(json, name, sizeof name) : NULL;
        err[0] = '\0';
        CHECK_MSG(policy && pf_register_policy_json(policy, strlen(policy), err, sizeof err) == PF_OK, "%s: %s does not register again: %s",
                  fixtures[i], model_type, err);
        free(policy);
        snprintf(name, sizeof name, "copy-%s", model_type);
        size_t n_builtin = 0, n_copy = 0;
        float *builtin = kind_outputs(src, &n_builtin), *copy = kind_outputs(dir, &n_copy);
        CHECK_MSG(builtin && copy && n_builtin == n_copy && n_copy > 0 && !memcmp(builtin, copy, n_copy * sizeof(float)),
                  "%s: the registered copy computes other numbers than the compiled-in policy", fixtures[i]);
        free(builtin);
        free(copy);
        remove_copy(dir);
        CHECK_MSG(pf_unregister_policy(name, err, sizeof err) == PF_OK, "%s: %s", name, err);
    }
    free(json);
#endif
    char buffer[16];
    size_t len = 0;
    CHECK(pf_policy_to_json("no-such-type", buffer, sizeof buffer, &len) == PF_ERROR_INVALID_ARGUMENT && len == 0);
    CHECK(pf_policy_to_json(NULL, buffer, sizeof buffer, &len) == PF_ERROR_INVALID_ARGUMENT);
    CHECK(pf_policy_to_json("gpt2", buffer, sizeof buffer, &len) == PF_ERROR_BUFFER_TOO_SMALL && len > sizeof buffer);
}

/* Every compiled-in policy as JSON (rows, then aliases; the dual and speech ones too) against
   test/policies.golden.json, byte for byte: policies.inc's rows inherit (PF_ARCH_LIKE), and any
   change to a row as a model sees it fails here, naming the model_type. A change that is meant
   is written to $PF_WRITE_POLICIES (a path) by this test, to be checked and committed. */
static void test_policy_golden(void) {
#ifdef PF_TESTING
    char path[1100];
    snprintf(path, sizeof path, "%s/../policies.golden.json", test_fixtures);
    size_t golden_len = 0, cap = 1 << 22, len = 0;
    char *golden = test_read_file(path, &golden_len), *all = (char *)malloc(cap);
    CHECK_MSG(golden && golden_len > 2 && !memcmp(golden, "[\n", 2), "cannot read %s", path);
    if (!all) {
        free(golden);
        return;
    }
    strcpy(all, "[\n");
    len = 2;
    int count = 0;
    for (int i = 0; pf_testing_builtin_model_type(i); i++) {
        const char *model_type = pf_testing_builtin_model_type(i);
        size_t n = 0;
        char *json = all + len;
        pf_result r = pf_testing_policy_json(model_type, json, cap - len - 8, &n);
        CHECK_MSG(r == PF_OK && n > 1 && json[n - 1] == '\n', "%s: %s", model_type, pf_result_string(r));
        if (r || n < 2) continue;
        /* in the file, a JSON array: the policies (without their last newline) separated by ",\n" */
        strcpy(json + n - 1, pf_testing_builtin_model_type(i + 1) ? ",\n" : "\n]\n");
        n = strlen(json);
        char needle[200];
        snprintf(needle, sizeof needle, "{\"model_type\": \"%s\",\n", model_type);
        const char *mine = golden ? strstr(golden, needle) : NULL;
        CHECK_MSG(mine && (size_t)(mine - golden) + n <= golden_len && !memcmp(mine, json, n),
                  "%s: the policy as compiled in differs from %s (rows of policies.inc changed)", model_type, path);
        len += n;
        count++;
    }
    CHECK_MSG(count > 40 && golden && len == golden_len && !memcmp(all, golden, len), "%d policies, %zu bytes; %s has %zu",
              count, len, path, golden_len);
    const char *out = getenv("PF_WRITE_POLICIES");
    if (out && *out) CHECK_MSG(test_write_file(out, all, len) == 0, "cannot write %s", out);
    free(all);
    free(golden);
#endif
}

void test_policies(void) {
    test_policy_from_c();
    test_policy_from_json();
    test_policy_refusals();
    test_policy_json_refusals();
    test_policy_threads();
    test_policy_round_trip();
    test_policy_golden();
}
