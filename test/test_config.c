/* Config fidelity (issue 9): every config key and tensor of a checkpoint is honoured or refused by
   name. The transformers-made fixtures of the keys we implement (llama-biases, bloom-post-ln-residual,
   qwen2-window-layers, gpt_neo-attention-types, llama-eos-list, llama-generation-config) run in
   test_models on 1 to 4 ranks; here are their refusals, made by editing copies of fixtures, and
   generation_config.json's defaults against transformers' generate() without arguments. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../parallelformers.h"
#include "test.h"

static char work_dir[256];

static void empty_work_dir(void) {
    DIR *d = opendir(work_dir);
    struct dirent *e;
    char path[1024];
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "%s/%s", work_dir, e->d_name);
        unlink(path);
    }
    if (d) closedir(d);
}

/* work_dir becomes a copy of the fixture's regular files. */
static int copy_fixture(const char *name) {
    char src_dir[1024], src[2048], dst[2048];
    empty_work_dir();
    snprintf(src_dir, sizeof src_dir, "%s/%s", test_fixtures, name);
    DIR *d = opendir(src_dir);
    struct dirent *e;
    int ok = d != NULL;
    while (ok && (e = readdir(d))) {
        struct stat st;
        snprintf(src, sizeof src, "%s/%s", src_dir, e->d_name);
        if (stat(src, &st) || !S_ISREG(st.st_mode)) continue;
        size_t size = 0;
        char *data = test_read_file(src, &size);
        snprintf(dst, sizeof dst, "%s/%s", work_dir, e->d_name);
        ok = data && test_write_file(dst, data, size) == 0;
        free(data);
    }
    if (d) closedir(d);
    CHECK_MSG(ok, "copying fixture %s", name);
    return ok ? 0 : -1;
}

/* Replaces the first `from` in work_dir/FILE with `to` (which must be there: else the case would
   test nothing). */
static void edit_file(const char *file, const char *from, const char *to) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", work_dir, file);
    size_t size = 0;
    char *text = test_read_file(path, &size);
    char *at = text ? strstr(text, from) : NULL;
    CHECK_MSG(at != NULL, "%s lacks \"%s\"", file, from);
    if (!at) {
        free(text);
        return;
    }
    size_t head = (size_t)(at - text), from_len = strlen(from), to_len = strlen(to);
    char *out = (char *)malloc(size - from_len + to_len + 1);
    memcpy(out, text, head);
    memcpy(out + head, to, to_len);
    memcpy(out + head + to_len, at + from_len, size - head - from_len);
    test_write_file(path, out, size - from_len + to_len);
    free(out);
    free(text);
}

static void write_work_file(const char *file, const char *text) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", work_dir, file);
    test_write_file(path, text, strlen(text));
}

/* Adds a one-float tensor NAME to work_dir/model.safetensors: a new header entry and 4 bytes of data. */
static void add_tensor(const char *name) {
    char path[1024];
    snprintf(path, sizeof path, "%s/model.safetensors", work_dir);
    size_t size = 0;
    unsigned char *file = (unsigned char *)test_read_file(path, &size);
    if (!file || size < 8) {
        CHECK_MSG(0, "reading %s", path);
        free(file);
        return;
    }
    size_t header_len = 0;
    for (int i = 7; i >= 0; i--) header_len = (header_len << 8) | file[i];
    size_t data_len = size - 8 - header_len;
    char entry[512];
    int n = snprintf(entry, sizeof entry, "{\"%s\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[%zu,%zu]},", name,
                     data_len, data_len + 4);
    size_t new_header = header_len - 1 + (size_t)n, total = 8 + new_header + data_len + 4;
    unsigned char *out = (unsigned char *)calloc(1, total);
    for (int i = 0; i < 8; i++) out[i] = (unsigned char)(new_header >> (8 * i));
    memcpy(out + 8, entry, (size_t)n);
    memcpy(out + 8 + n, file + 9, header_len - 1 + data_len); /* the old header after its '{', and the data */
    test_write_file(path, out, total);
    free(out);
    free(file);
}

/* Loads work_dir: PF_OK wanted (needle NULL), or the result and a message holding needle. */
static pf_model *expect_load(const char *what, const pf_load_options *lo, pf_result want, const char *needle) {
    pf_model *m = NULL;
    pf_result r = pf_load(work_dir, lo, &m);
    const char *msg = pf_error_message(m);
    CHECK_MSG(r == want, "%s: got %s (%s), want %s", what, pf_result_string(r), msg, pf_result_string(want));
    CHECK_MSG(!needle || strstr(msg, needle), "%s: message \"%s\" lacks \"%s\"", what, msg, needle);
    if (r == PF_OK) return m;
    pf_free(m);
    return NULL;
}

/* A fixture whose config.json has `from` replaced by `to`: loading it gives `want` with `needle` in
   the message. */
typedef struct config_edit {
    const char *fixture, *from, *to, *needle;
    pf_result want;
} config_edit;

static void expect_edits(const config_edit *cases, size_t count) {
    for (size_t i = 0; i < count; i++) {
        if (copy_fixture(cases[i].fixture)) return;
        edit_file("config.json", cases[i].from, cases[i].to);
        char what[200];
        snprintf(what, sizeof what, "%s with %s", cases[i].fixture, cases[i].to);
        expect_load(what, NULL, cases[i].want, cases[i].needle);
    }
}

/* Every tensor is consumed or a known buffer; a file with others describes a model we would get
   wrong. */
static void test_tensor_accounting(void) {
    if (copy_fixture("llama")) return;
    add_tensor("model.layers.0.self_attn.q_norm.weight"); /* as a Qwen3-like checkpoint would hold */
    expect_load("an unknown extra tensor", NULL, PF_ERROR_UNSUPPORTED, "model.layers.0.self_attn.q_norm.weight");
    if (copy_fixture("gpt2-tiny")) return;
    add_tensor("transformer.h.1.attn.masked_bias"); /* a buffer old GPT-2 checkpoints carry */
    pf_free(expect_load("a known buffer", NULL, PF_OK, NULL));
    add_tensor("transformer.h.1.attn.c_attn.lora_A");
    expect_load("a second unknown tensor", NULL, PF_ERROR_UNSUPPORTED, "lora_A");
    /* Buffers that older transformers versions saved, per family. */
    static const char *const buffers[][2] = {
        {"gpt_neo", "transformer.h.1.attn.attention.masked_bias"}, {"gptj", "transformer.h.0.attn.bias"},
        {"codegen", "transformer.h.1.attn.causal_mask"}, {"gpt_neox", "gpt_neox.layers.0.attention.rotary_emb.inv_freq"},
        {"llama", "model.layers.1.self_attn.rotary_emb.inv_freq"}, {"openai-gpt", "h.0.attn.bias"},
        {"openai-gpt", "transformer.position_ids"},
    };
    for (size_t i = 0; i < sizeof buffers / sizeof buffers[0]; i++) {
        if (copy_fixture(buffers[i][0])) return;
        add_tensor(buffers[i][1]);
        pf_free(expect_load(buffers[i][1], NULL, PF_OK, NULL));
    }

    /* Biases follow attention_bias / mlp_bias both ways. */
    if (copy_fixture("llama-biases")) return;
    edit_file("config.json", "\"mlp_bias\": true", "\"mlp_bias\": false");
    expect_load("mlp biases in the file, mlp_bias false", NULL, PF_ERROR_FORMAT, "mlp_bias is false");
    if (copy_fixture("llama")) return;
    edit_file("config.json", "\"attention_bias\": false", "\"attention_bias\": true");
    expect_load("attention_bias true, no biases in the file", NULL, PF_ERROR_FORMAT, "attention_bias is true");

    /* An encoder-decoder's tower tables beside the shared one must be copies of it: transformers 5
       embeds each tower by its own with tie_word_embeddings false, which we do not. */
    if (copy_fixture("bart-s2s")) return;
    add_tensor("model.decoder.embed_tokens.weight");
    expect_load("a decoder token table unlike the shared one", NULL, PF_ERROR_UNSUPPORTED,
                "model.decoder.embed_tokens.weight differs from its shared token embedding");

    /* tie_word_embeddings: untied needs a head; tied takes the embedding. */
    if (copy_fixture("qwen2")) return;
    edit_file("config.json", "\"tie_word_embeddings\": true", "\"tie_word_embeddings\": false");
    expect_load("untied without an LM head", NULL, PF_ERROR_FORMAT, "tie_word_embeddings is false");
    if (copy_fixture("llama")) return;
    edit_file("config.json", "\"tie_word_embeddings\": false", "\"tie_word_embeddings\": true");
    expect_load("tied, but the head differs from the embedding", NULL, PF_ERROR_FORMAT, "differs from its token embedding");
}

/* Keys implemented for one value are refused by name for the others; derived keys need their
   source. */
static void test_refused_keys(void) {
    if (copy_fixture("opt")) return;
    edit_file("config.json", "\"layer_norm_elementwise_affine\": true", "\"layer_norm_elementwise_affine\": false");
    expect_load("OPT without affine norms", NULL, PF_ERROR_UNSUPPORTED, "layer_norm_elementwise_affine");
    if (copy_fixture("gpt_neo-attention-types")) return;
    edit_file("config.json", "\"attention_types\"", "\"attention_kinds\"");
    expect_load("GPT-Neo without attention_types", NULL, PF_ERROR_FORMAT, "attention_types");
    if (copy_fixture("gpt_neo-attention-types")) return;
    edit_file("config.json", "1\n    ]\n  ]", "2\n    ]\n  ]"); /* [[["local", "global"], 2]]: 4 layers for 2 */
    expect_load("GPT-Neo attention_types for 4 layers", NULL, PF_ERROR_FORMAT, "gives 4 layers");
}

/* The logits of work_dir (a fixture's copy, edited) on 1 to 3 ranks against the fixture's
   transformers reference for its prompt: the same within 1e-4 when `same`, else clearly apart
   (the edit changed the math). */
static void check_work_logits(const char *what, const char *fixture, int same) {
    char dir[1024], path[1100];
    test_reference ref;
    size_t count = 0;
    snprintf(dir, sizeof dir, "%s/%s", test_fixtures, fixture);
    snprintf(path, sizeof path, "%s/reference_logits.bin", dir);
    float *want = test_read_floats(path, &count);
    if (test_read_reference(dir, &ref) || !want) {
        CHECK_MSG(0, "%s: reading %s", what, dir);
        free(want);
        return;
    }
    pf_model *m = NULL;
    pf_load_options lo = pf_load_options_init();
    lo.skip_tokenizer = 1;
    pf_result r = pf_load(work_dir, &lo, &m);
    CHECK_MSG(r == PF_OK, "%s: %s", what, pf_error_message(m));
    float *got = r == PF_OK ? (float *)malloc(count * sizeof(float)) : NULL;
    for (int ranks = 1; got && ranks <= 3; ranks++) {
        pf_parallel_options po = pf_parallel_options_init();
        po.device = PF_DEVICE_CPU;
        int32_t ids[TEST_MAX_IDS];
        for (int i = 0; i < ref.num_prompt_ids; i++) ids[i] = ref.prompt_ids[i];
        r = pf_parallelize(m, ranks, &po);
        if (r == PF_OK && count == (size_t)ref.num_prompt_ids * (size_t)pf_get_info(m).vocab_size)
            r = pf_forward(m, ids, 1, ref.num_prompt_ids, got);
        CHECK_MSG(r == PF_OK, "%s on %d ranks: %s", what, ranks, pf_error_message(m));
        float diff = r == PF_OK ? test_max_abs_diff(got, want, count) : 0;
        if (r == PF_OK && same) CHECK_MSG(diff <= 1e-4f, "%s on %d ranks: logits differ from transformers' by %g", what, ranks, diff);
        if (r == PF_OK && !same) CHECK_MSG(diff > 1e-2f, "%s on %d ranks: the edit changed the logits by only %g", what, ranks, diff);
    }
    free(got);
    free(want);
    pf_free(m);
}

/* Spellings of older transformers versions, and keys transformers reads in a particular order,
   give the math transformers gives them (each was checked against transformers 5.23). */
static void test_hub_spellings(void) {
    /* attribute_map aliases are set after the canonical keys, so they win. */
    if (copy_fixture("gpt2-tiny")) return;
    edit_file("config.json", "\"n_head\": 4", "\"n_head\": 2, \"num_attention_heads\": 4");
    edit_file("config.json", "\"n_embd\": 32", "\"n_embd\": 16, \"hidden_size\": 32");
    check_work_logits("GPT-2 with num_attention_heads and hidden_size over n_head and n_embd", "gpt2-tiny", 1);
    /* Of duplicate keys the last counts, as Python's json reads them. */
    if (copy_fixture("gpt2-tiny")) return;
    edit_file("config.json", "{", "{\"n_layer\": 7, \"n_embd\": 8,");
    check_work_logits("GPT-2 with earlier duplicate keys", "gpt2-tiny", 1);
    /* BLOOM's older n_embed wins over hidden_size. */
    if (copy_fixture("bloom")) return;
    edit_file("config.json", "\"hidden_size\": 48", "\"hidden_size\": 24, \"n_embed\": 48");
    check_work_logits("BLOOM with n_embed", "bloom", 1);
    /* GPT-Neo: a saved attention_layers wins over the expansion of attention_types. */
    if (copy_fixture("gpt_neo-attention-types")) return;
    edit_file("config.json", "\"local\",\n        \"global\"", "\"global\", \"local\"");
    edit_file("config.json", "{", "{\"attention_layers\": [\"local\", \"global\"],");
    check_work_logits("GPT-Neo with attention_layers over attention_types", "gpt_neo-attention-types", 1);
    edit_file("config.json", "[\"local\", \"global\"]", "[\"global\", \"local\"]");
    check_work_logits("GPT-Neo with attention_layers swapped", "gpt_neo-attention-types", 0);
    /* GPT-NeoX as transformers 4 wrote it: rotary_pct and rotary_emb_base; a top-level rope_theta
       is not read by its modeling code. */
    if (copy_fixture("gpt_neox")) return;
    edit_file("config.json",
              "\"rope_parameters\": {\n    \"partial_rotary_factor\": 0.25,\n    \"rope_theta\": 10000,\n    \"rope_type\": \"default\"\n  }",
              "\"rotary_pct\": 0.25, \"rotary_emb_base\": 10000, \"rope_theta\": 500");
    check_work_logits("GPT-NeoX in transformers 4's spelling, with a top-level rope_theta", "gpt_neox", 1);
    edit_file("config.json", "\"rotary_emb_base\": 10000", "\"rotary_emb_base\": 500");
    check_work_logits("GPT-NeoX with another rotary_emb_base", "gpt_neox", 0);
    /* rope_scaling (transformers 4) wins over rope_parameters when a config has both. */
    if (copy_fixture("llama-rope-linear")) return;
    edit_file("config.json", "\"rope_parameters\"", "\"rope_parameters\": {\"rope_type\": \"dynamic\", \"factor\": 5.0}, \"rope_scaling\"");
    check_work_logits("LLaMA with rope_scaling and rope_parameters", "llama-rope-linear", 1);
    /* LLaMA's default rope rotates whole heads whatever partial_rotary_factor says. */
    if (copy_fixture("llama")) return;
    edit_file("config.json", "\"rope_parameters\"", "\"partial_rotary_factor\": 0.5, \"rope_parameters\"");
    check_work_logits("LLaMA's default rope with a partial_rotary_factor", "llama", 1);
    /* An empty rope_scaling falls through to rope_parameters. */
    if (copy_fixture("llama-rope-linear")) return;
    edit_file("config.json", "\"rope_parameters\"", "\"rope_scaling\": {}, \"rope_parameters\"");
    check_work_logits("LLaMA with an empty rope_scaling", "llama-rope-linear", 1);
    /* llama3: a top-level original_max_position_embeddings overrides the dict's. */
    if (copy_fixture("llama3-rope")) return;
    edit_file("config.json", "\"original_max_position_embeddings\": 256", "\"original_max_position_embeddings\": 64");
    edit_file("config.json", "{", "{\"original_max_position_embeddings\": 256,");
    check_work_logits("llama3 rope with a top-level original_max_position_embeddings", "llama3-rope", 1);
    /* yarn and longrope likewise; longrope's factor defaults to max / original positions (76 / 19). */
    if (copy_fixture("llama-rope-longrope")) return;
    edit_file("config.json", "\"original_max_position_embeddings\": 19", "\"original_max_position_embeddings\": 40");
    edit_file("config.json", "{", "{\"original_max_position_embeddings\": 19,");
    check_work_logits("longrope with a top-level original_max_position_embeddings", "llama-rope-longrope", 1);
    edit_file("config.json", "\"rope_type\": \"longrope\",", "\"rope_type\": \"longrope\", \"factor\": 4.0,");
    check_work_logits("longrope with its implied factor spelt out", "llama-rope-longrope", 1);
    edit_file("config.json", "\"factor\": 4.0,", "\"factor\": 4.0, \"attention_factor\": 1.0,");
    check_work_logits("longrope with attention_factor 1", "llama-rope-longrope", 0);
    if (copy_fixture("llama-rope-yarn")) return;
    edit_file("config.json", "\"original_max_position_embeddings\": 32", "\"original_max_position_embeddings\": 32, \"beta_fast\": 0, \"beta_slow\": null, \"truncate\": true");
    check_work_logits("yarn with beta_fast 0 and beta_slow null (the defaults)", "llama-rope-yarn", 1);
    edit_file("config.json", "\"beta_slow\": null", "\"beta_slow\": 0.25");
    check_work_logits("yarn with beta_slow 0.25", "llama-rope-yarn", 0);
    /* A LLaMA clone with a model_type of its own whose "architectures" names transformers' LLaMA
       class runs as LLaMA; naming another class, it stays refused. */
    if (copy_fixture("llama")) return;
    edit_file("config.json", "\"model_type\": \"llama\"", "\"model_type\": \"xverse\"");
    check_work_logits("a model_type of its own with architectures LlamaForCausalLM", "llama", 1);
    edit_file("config.json", "\"LlamaForCausalLM\"", "\"XverseForCausalLM\"");
    expect_load("a model_type of its own with architectures XverseForCausalLM", NULL, PF_ERROR_UNSUPPORTED,
                "model_type \"xverse\" is not supported (supported: ");
    /* Qwen2's older name of a full-attention layer. */
    if (copy_fixture("qwen2")) return;
    edit_file("config.json", "\"full_attention\"", "\"attention\"");
    check_work_logits("Qwen2 with an \"attention\" layer type", "qwen2", 1);
    /* GPT-NeoX's head_dim sizes the rotary width only. */
    if (copy_fixture("gpt_neox")) return;
    edit_file("config.json", "{", "{\"head_dim\": 16,");
    check_work_logits("GPT-NeoX with head_dim = hidden / heads", "gpt_neox", 1);
    edit_file("config.json", "\"head_dim\": 16", "\"head_dim\": 64");
    check_work_logits("GPT-NeoX with a wider head_dim", "gpt_neox", 0);
    /* Mistral's sliding window: absent is transformers' default 4096, null is none; either way
       wider than this prompt, unlike the fixture's 8. */
    if (copy_fixture("mistral")) return;
    edit_file("config.json", "\"sliding_window\": 8,", "");
    check_work_logits("Mistral without sliding_window", "mistral", 0);
    if (copy_fixture("mistral")) return;
    edit_file("config.json", "\"sliding_window\": 8", "\"sliding_window\": null");
    check_work_logits("Mistral with a null sliding_window", "mistral", 0);
}

/* DeBERTa-v2's keys we do not implement are refused by name; those that say which tensors exist
   are checked against them. */
static void test_deberta_refusals(void) {
    if (copy_fixture("deberta-v3")) return;
    edit_file("config.json", "\"share_att_key\": true", "\"share_att_key\": false"); /* its position projections needed */
    expect_load("DeBERTa with share_att_key false", NULL, PF_ERROR_FORMAT, "pos_query_proj");
    if (copy_fixture("deberta-v3")) return;
    edit_file("config.json", "\"share_att_key\": true,", "");
    expect_load("DeBERTa without share_att_key (false)", NULL, PF_ERROR_FORMAT, "pos_query_proj");
    if (copy_fixture("deberta-v2-pos-proj")) return;
    edit_file("config.json", "\"p2c\",", "");
    expect_load("DeBERTa with its own position projections and c2p alone", NULL, PF_ERROR_UNSUPPORTED, "pos_att_type");
    if (copy_fixture("deberta")) return;
    edit_file("config.json", "\"relative_attention\": true", "\"relative_attention\": true, \"talking_head\": true");
    expect_load("DeBERTa with talking_head", NULL, PF_ERROR_UNSUPPORTED, "talking_head");
    if (copy_fixture("deberta-v3")) return;
    edit_file("config.json", "\"share_att_key\": true", "\"share_att_key\": true, \"conv_kernel_size\": 3");
    expect_load("DeBERTa with a ConvLayer", NULL, PF_ERROR_UNSUPPORTED, "conv_kernel_size");
    if (copy_fixture("deberta-v3")) return;
    edit_file("config.json", "\"share_att_key\": true", "\"share_att_key\": true, \"embedding_size\": 32");
    expect_load("DeBERTa with embedding_size", NULL, PF_ERROR_UNSUPPORTED, "\"embedding_size\" 32");
    if (copy_fixture("deberta-v3")) return;
    edit_file("config.json", "\"c2p\"", "\"p2p\"");
    expect_load("DeBERTa with p2p", NULL, PF_ERROR_UNSUPPORTED, "p2p");
    if (copy_fixture("deberta-v3")) return;
    edit_file("config.json", "\"position_biased_input\": false", "\"position_biased_input\": true");
    expect_load("DeBERTa with position_biased_input and no position table", NULL, PF_ERROR_FORMAT, "position_embeddings");
    if (copy_fixture("deberta-v3")) return;
    edit_file("config.json", "\"norm_rel_ebd\": \"layer_norm\"", "\"norm_rel_ebd\": \"none\"");
    expect_load("DeBERTa with norm_rel_ebd none and the norm's tensors", NULL, PF_ERROR_FORMAT, "encoder.LayerNorm");
}

/* LayoutLM's 2-D tables must be max_2d_position_embeddings rows long (a config that disagrees is
   refused naming the table); transformers 4's position_embedding_type, on any encoder, is taken
   when "absolute" and refused by name otherwise (relative_key adds distance embeddings we lack). */
static void test_layoutlm_refusals(void) {
    if (copy_fixture("layoutlm")) return;
    edit_file("config.json", "\"max_2d_position_embeddings\": 64", "\"max_2d_position_embeddings\": 32");
    expect_load("LayoutLM with max_2d_position_embeddings 32 over tables of 64", NULL, PF_ERROR_FORMAT,
                "x_position_embeddings.weight");
    if (copy_fixture("layoutlm")) return;
    edit_file("config.json", "\"use_cache\": true", "\"use_cache\": true, \"position_embedding_type\": \"absolute\"");
    pf_free(expect_load("LayoutLM with position_embedding_type absolute", NULL, PF_OK, NULL));
    if (copy_fixture("layoutlm")) return;
    edit_file("config.json", "\"use_cache\": true", "\"use_cache\": true, \"position_embedding_type\": \"relative_key\"");
    expect_load("LayoutLM with position_embedding_type relative_key", NULL, PF_ERROR_UNSUPPORTED,
                "\"position_embedding_type\" \"relative_key\" is not supported");
    if (copy_fixture("bert")) return;
    edit_file("config.json", "\"model_type\": \"bert\"", "\"model_type\": \"bert\", \"position_embedding_type\": null");
    expect_load("BERT with position_embedding_type null", NULL, PF_ERROR_UNSUPPORTED,
                "\"position_embedding_type\" other than a name is not supported");
}

/* ProphetNet: ProphetNetForCausalLM (is_decoder: the decoder alone), a decoder without
   cross-attention, a pad id other than 0 (transformers' cached decoding, generate()'s, fails its
   position check with one), no predicted token and buckets reaching no further than their exact
   range are refused by name; eps and disable_ngram_loss, which weigh the training loss alone, load. */
static void test_prophetnet_refusals(void) {
    static const struct { const char *from, *to; pf_result want; const char *message; } cases[] = {
        {"\"is_decoder\": false", "\"is_decoder\": true", PF_ERROR_UNSUPPORTED, "\"is_decoder\" = 1 is not supported"},
        {"\"add_cross_attention\": true", "\"add_cross_attention\": false", PF_ERROR_UNSUPPORTED,
         "\"add_cross_attention\" = 0 is not supported"},
        {"\"pad_token_id\": 0", "\"pad_token_id\": 3", PF_ERROR_UNSUPPORTED, "\"pad_token_id\" = 3 is not supported"},
        {"\"ngram\": 3", "\"ngram\": 0", PF_ERROR_FORMAT, "\"ngram\" 0 is not a number of predicted tokens"},
        {"\"relative_max_distance\": 16", "\"relative_max_distance\": 4", PF_ERROR_FORMAT,
         "\"num_buckets\" 8 and \"relative_max_distance\" 4 do not make relative buckets"},
        {"\"eps\": 0.0", "\"eps\": 0.1", PF_OK, NULL},
        {"\"disable_ngram_loss\": false", "\"disable_ngram_loss\": true", PF_OK, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (copy_fixture("prophetnet-s2s")) return;
        edit_file("config.json", cases[i].from, cases[i].to);
        char what[160];
        snprintf(what, sizeof what, "ProphetNet with %s", cases[i].to);
        pf_free(expect_load(what, NULL, cases[i].want, cases[i].message));
    }
}

/* Longformer's attention_window: one even number above 0 for every layer, or a list of one a
   layer (LED: an encoder layer; transformers asserts the same); anything else refused naming the key. */
static void test_longformer_refusals(void) {
    static const char *listed = "\"attention_window\": [\n    4,\n    8\n  ]";
    static const struct { const char *window; pf_result want; const char *message; } cases[] = {
        {"\"attention_window\": 4", PF_OK, NULL},
        {"\"attention_window\": 5", PF_ERROR_UNSUPPORTED, "\"attention_window\" of layer 0 is not an even number above 0"},
        {"\"attention_window\": 0", PF_ERROR_UNSUPPORTED, "\"attention_window\" of layer 0 is not an even number above 0"},
        {"\"attention_window\": null", PF_ERROR_UNSUPPORTED, "\"attention_window\" of layer 0 is not an even number"},
        {"\"attention_window\": [4, -8]", PF_ERROR_UNSUPPORTED, "\"attention_window\" of layer 1 is not an even number"},
        {"\"attention_window\": [4, \"8\"]", PF_ERROR_UNSUPPORTED, "\"attention_window\" of layer 1 is not an even number"},
        {"\"attention_window\": [4]", PF_ERROR_FORMAT, "\"attention_window\" lists 1 windows, the model has 2 layers"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (copy_fixture("longformer")) return;
        edit_file("config.json", listed, cases[i].window);
        pf_model *m = expect_load(cases[i].window, NULL, cases[i].want, cases[i].message);
        pf_free(m);
    }
    if (copy_fixture("led-s2s")) return; /* LED: a window for each encoder layer */
    edit_file("config.json", listed, "\"attention_window\": [4, 8, 8]");
    expect_load("LED with 3 windows", NULL, PF_ERROR_FORMAT, "\"attention_window\" lists 3 windows, the model has 2 encoder layers");
}

/* VisualBERT: bypass_transformer true (the text through the blocks alone, then one more layer) and
   the region-to-phrase head (an input we do not take) are refused by name; visual_embedding_dim
   must be the projection's width, and a width at all. */
static void test_visual_bert_refusals(void) {
    if (copy_fixture("visual-bert")) return;
    edit_file("config.json", "\"bypass_transformer\": false", "\"bypass_transformer\": true");
    expect_load("VisualBERT with bypass_transformer", NULL, PF_ERROR_UNSUPPORTED,
                "\"bypass_transformer\" = 1 is not supported for model_type \"visual_bert\"");
    if (copy_fixture("visual-bert")) return;
    edit_file("config.json", "\"VisualBertModel\"", "\"VisualBertForRegionToPhraseAlignment\"");
    expect_load("VisualBertForRegionToPhraseAlignment", NULL, PF_ERROR_UNSUPPORTED,
                "region-to-phrase alignment takes region_to_phrase_position");
    if (copy_fixture("visual-bert")) return;
    edit_file("config.json", "\"visual_embedding_dim\": 20", "\"visual_embedding_dim\": 16");
    expect_load("VisualBERT with visual_embedding_dim 16 over a projection of 20", NULL, PF_ERROR_FORMAT,
                "visual_projection.weight");
    if (copy_fixture("visual-bert")) return;
    edit_file("config.json", "\"visual_embedding_dim\": 20", "\"visual_embedding_dim\": 0");
    expect_load("VisualBERT with visual_embedding_dim 0", NULL, PF_ERROR_FORMAT, "\"visual_embedding_dim\" 0 is not a width");
}

/* LUKE: use_entity_aware_attention must say whether the layers have the entity-aware queries,
   entity_emb_size whether the entity table is projected; the heads not implemented (span
   classification, ForMaskedLM's entity predictions) are refused by name; the entity sizes must be
   sizes. */
static void test_luke_refusals(void) {
    if (copy_fixture("luke")) return;
    edit_file("config.json", "\"use_entity_aware_attention\": true", "\"use_entity_aware_attention\": false");
    expect_load("LUKE without entity-aware attention over its queries", NULL, PF_ERROR_FORMAT,
                "\"use_entity_aware_attention\" is false but layer 0 has the w2e_query, e2w_query and e2e_query projections");
    if (copy_fixture("luke-plain")) return;
    edit_file("config.json", "\"use_entity_aware_attention\": false", "\"use_entity_aware_attention\": true");
    expect_load("LUKE with entity-aware attention without its queries", NULL, PF_ERROR_FORMAT,
                "\"use_entity_aware_attention\" is true but layer 0 lacks the w2e_query");
    if (copy_fixture("luke")) return;
    edit_file("config.json", "\"entity_emb_size\": 20", "\"entity_emb_size\": 48");
    expect_load("LUKE with entity_emb_size 48 over a table of 20", NULL, PF_ERROR_FORMAT,
                "entity_embeddings.entity_embeddings.weight");
    if (copy_fixture("luke")) return;
    edit_file("config.json", "\"entity_vocab_size\": 30", "\"entity_vocab_size\": 0");
    expect_load("LUKE with entity_vocab_size 0", NULL, PF_ERROR_FORMAT, "\"entity_vocab_size\" 0 and \"entity_emb_size\" 20 are not sizes");
    static const char *const refused[] = {"LukeForMaskedLM", "LukeForEntitySpanClassification"};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        char name[64];
        if (copy_fixture("luke")) return;
        snprintf(name, sizeof name, "\"%s\"", refused[i]);
        edit_file("config.json", "\"LukeModel\"", name);
        expect_load(refused[i], NULL, PF_ERROR_UNSUPPORTED, "is not supported yet");
    }
}

/* TAPAS: type_vocab_sizes must list 7 tables of the tensors' rows; the QA head's select_one_column
   false (transformers then computes no logits without labels) is refused by name, a temperature
   not above 0 too; the aggregation classifier must be there exactly when num_aggregation_labels
   says so; the keys of training alone load. */
static void test_tapas_refusals(void) {
    static const char *sizes = "\"type_vocab_sizes\": [\n    3,\n    6,\n    8,\n    2,\n    7,\n    6,\n    4\n  ]";
    static const struct { const char *fixture, *from, *to; pf_result want; const char *message; } cases[] = {
        {"tapas", NULL, "\"type_vocab_sizes\": [3, 6, 8, 2, 7, 6]", PF_ERROR_UNSUPPORTED,
         "\"type_vocab_sizes\" must be a list of 7 table sizes"},
        {"tapas", NULL, "\"type_vocab_sizes\": [3, 6, 9, 2, 7, 6, 4]", PF_ERROR_FORMAT, "token_type_embeddings_2.weight"},
        {"tapas", NULL, "\"type_vocab_sizes\": [3, 6, 8, 2, 7, 6, 0]", PF_ERROR_FORMAT, "\"type_vocab_sizes\" must be"},
        {"tapas-qa", "\"select_one_column\": true", "\"select_one_column\": false", PF_ERROR_UNSUPPORTED,
         "\"select_one_column\" false is not supported: transformers' TapasForQuestionAnswering computes no logits"},
        {"tapas-qa", "\"temperature\": 0.7", "\"temperature\": 0", PF_ERROR_FORMAT, "\"temperature\" 0 is not above 0"},
        {"tapas-qa", "\"num_aggregation_labels\": 4", "\"num_aggregation_labels\": 3", PF_ERROR_FORMAT,
         "aggregation_classifier.weight"},
        {"tapas-qa-empty", "\"num_aggregation_labels\": 0", "\"num_aggregation_labels\": 2", PF_ERROR_FORMAT,
         "tensor 'aggregation_classifier.weight' is missing, but num_aggregation_labels is 2"},
        {"tapas-qa", "\"max_num_rows\": 4", "\"max_num_rows\": 0", PF_ERROR_FORMAT, "\"max_num_rows\" 0"},
        {"tapas-qa", "\"positive_label_weight\": 10.0", "\"positive_label_weight\": 3.0", PF_OK, NULL},
        {"tapas-qa", "\"use_gumbel_for_cells\": false", "\"use_gumbel_for_cells\": true", PF_OK, NULL},
        {"tapas-qa", "\"average_logits_per_cell\": false", "\"average_logits_per_cell\": true", PF_OK, NULL},
        {"tapas-qa", "\"aggregation_temperature\": 1.0", "\"aggregation_temperature\": 2.0", PF_OK, NULL},
        {"tapas-cls", "\"select_one_column\": true", "\"select_one_column\": false", PF_OK, NULL}, /* the QA head's alone */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (copy_fixture(cases[i].fixture)) return;
        edit_file("config.json", cases[i].from ? cases[i].from : sizes, cases[i].to);
        char what[160];
        snprintf(what, sizeof what, "%s with %s", cases[i].fixture, cases[i].to);
        pf_free(expect_load(what, NULL, cases[i].want, cases[i].message));
    }
}

/* SqueezeBERT's group counts say how its convolutions' weights are stored: one that disagrees
   with a weight, or divides no channels, is refused naming the tensor and the groups; an
   embedding_size apart from hidden_size (which transformers asserts against) by name. */
static void test_squeezebert_refusals(void) {
    if (copy_fixture("squeezebert")) return;
    edit_file("config.json", "\"v_groups\": 3", "\"v_groups\": 2");
    expect_load("SqueezeBERT with v_groups 2 over a weight of 3 groups", NULL, PF_ERROR_FORMAT,
                "attention.value.weight' is not [48, 24, 1] as the config needs (48 inputs in 2 groups)");
    if (copy_fixture("squeezebert")) return;
    edit_file("config.json", "\"output_groups\": 6", "\"output_groups\": 5");
    expect_load("SqueezeBERT with output_groups 5", NULL, PF_ERROR_FORMAT, "5 groups do not divide its 96 inputs");
    if (copy_fixture("squeezebert")) return;
    edit_file("config.json", "\"embedding_size\": 48", "\"embedding_size\": 32");
    expect_load("SqueezeBERT with embedding_size 32", NULL, PF_ERROR_UNSUPPORTED, "\"embedding_size\" 32 differs from hidden_size 48");
}

/* MobileBERT's configurations other than the released checkpoints' are refused by name; the
   stacked MLPs' count is checked against the tensors. */
static void test_mobilebert_refusals(void) {
    static const struct { const char *from, *to, *needle; pf_result want; } cases[] = {
        {"\"normalization_type\": \"no_norm\"", "\"normalization_type\": \"layer_norm\"", "\"normalization_type\" \"layer_norm\"",
         PF_ERROR_UNSUPPORTED},
        {"\"num_feedforward_networks\": 4", "\"num_feedforward_networks\": 5", "\"num_feedforward_networks\" 5", PF_ERROR_UNSUPPORTED},
        {"\"num_feedforward_networks\": 4", "\"num_feedforward_networks\": 3", "has stacked MLP 2, but config.json's num_feedforward_networks is 3", PF_ERROR_FORMAT},
        {"\"use_bottleneck_attention\": false", "\"use_bottleneck_attention\": true", "\"use_bottleneck_attention\"",
         PF_ERROR_UNSUPPORTED},
        {"\"key_query_shared_bottleneck\": true", "\"key_query_shared_bottleneck\": false", "\"key_query_shared_bottleneck\"",
         PF_ERROR_UNSUPPORTED},
        {"\"trigram_input\": true", "\"trigram_input\": false", "\"trigram_input\"", PF_ERROR_UNSUPPORTED},
        {"\"classifier_activation\": true", "\"classifier_activation\": false", "\"classifier_activation\"", PF_ERROR_UNSUPPORTED},
        {"\"intra_bottleneck_size\": 24", "\"intra_bottleneck_size\": 26", "\"intra_bottleneck_size\" 26", PF_ERROR_FORMAT},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (copy_fixture("mobilebert")) return;
        edit_file("config.json", cases[i].from, cases[i].to);
        expect_load(cases[i].to, NULL, cases[i].want, cases[i].needle);
    }
}

/* ConvBERT's keys that shape its heads and layers: an even kernel (which transformers' two paddings
   cannot line up), head counts that leave hidden_size unsplit, and group counts that disagree with
   a weight or divide no channels are refused by name. */
/* XLM's and FlauBERT's keys that change the math, refused by name where not implemented */
static void test_xlm_refusals(void) {
    static const struct { const char *fixture, *from, *to, *what; pf_result want; const char *needle; } cases[] = {
        {"xlm", "\"causal\": false", "\"causal\": true", "XLM with causal attention", PF_ERROR_UNSUPPORTED, "\"causal\""},
        {"xlm", "\"asm\": false", "\"asm\": true", "XLM's adaptive softmax", PF_ERROR_UNSUPPORTED, "\"asm\""},
        {"xlm", "\"is_encoder\": true", "\"is_encoder\": false", "XLM as a decoder", PF_ERROR_UNSUPPORTED, "\"is_encoder\""},
        {"xlm", "\"gelu_activation\": true", "\"gelu_activation\": \"yes\"", "gelu_activation not a boolean",
         PF_ERROR_UNSUPPORTED, "activation \"yes\""},
        {"xlm-cls", "\"summary_type\": \"first\"", "\"summary_type\": \"mean\"", "XLM's summary by the mean",
         PF_ERROR_UNSUPPORTED, "\"summary_type\" \"mean\" is not supported"},
        {"xlm-cls", "\"summary_use_proj\": true", "\"summary_use_proj\": false", "XLM's summary without projection",
         PF_ERROR_UNSUPPORTED, "\"summary_use_proj\""},
        {"xlm-cls", "\"summary_proj_to_labels\": true", "\"summary_proj_to_labels\": false",
         "XLM's summary projected to hidden", PF_ERROR_UNSUPPORTED, "\"summary_proj_to_labels\""},
        {"xlm-cls", "\"summary_activation\": null", "\"summary_activation\": \"tanh\"", "XLM's summary with tanh",
         PF_ERROR_UNSUPPORTED, "\"summary_activation\""},
        {"xlm-qa", "\"XLMForQuestionAnsweringSimple\"", "\"XLMForQuestionAnswering\"", "XLM's beam-search QA head",
         PF_ERROR_UNSUPPORTED, "\"XLMForQuestionAnswering\" is not supported"},
        {"xlm-cls", "\"XLMForSequenceClassification\"", "\"XLMForMultipleChoice\"", "XLM's multiple choice",
         PF_ERROR_UNSUPPORTED, "\"XLMForMultipleChoice\" is not supported"},
        {"xlm-lang", "\"use_lang_emb\": true", "\"use_lang_emb\": false", "a language table use_lang_emb turns off",
         PF_ERROR_FORMAT, "lang_embeddings.weight' is present"},
        {"xlm", "\"n_langs\": 1", "\"n_langs\": 3", "3 languages without their table", PF_ERROR_FORMAT,
         "lang_embeddings.weight' is missing"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (copy_fixture(cases[i].fixture)) return;
        edit_file("config.json", cases[i].from, cases[i].to);
        expect_load(cases[i].what, NULL, cases[i].want, cases[i].needle);
    }
    if (copy_fixture("xlm")) return; /* false: ReLU (xlm-tok runs it against transformers) */
    edit_file("config.json", "\"gelu_activation\": true", "\"gelu_activation\": false");
    pf_free(expect_load("XLM with ReLU", NULL, PF_OK, NULL));
}

static void test_convbert_refusals(void) {
    if (copy_fixture("convbert")) return;
    edit_file("config.json", "\"conv_kernel_size\": 5", "\"conv_kernel_size\": 4");
    expect_load("ConvBERT with conv_kernel_size 4", NULL, PF_ERROR_UNSUPPORTED, "\"conv_kernel_size\" 4 is not supported");
    if (copy_fixture("convbert")) return;
    edit_file("config.json", "\"head_ratio\": 2", "\"head_ratio\": 0");
    expect_load("ConvBERT with head_ratio 0", NULL, PF_ERROR_FORMAT, "\"head_ratio\" 0 or num_attention_heads 8 is below 1");
    if (copy_fixture("convbert")) return;
    edit_file("config.json", "\"num_attention_heads\": 8", "\"num_attention_heads\": 10");
    expect_load("ConvBERT with 5 heads over hidden_size 48", NULL, PF_ERROR_FORMAT,
                "hidden_size 48 is not a multiple of twice the 5 heads");
    if (copy_fixture("convbert")) return;
    edit_file("config.json", "\"head_ratio\": 2", "\"head_ratio\": 4");
    expect_load("ConvBERT with head_ratio 4 over weights of 4 heads", NULL, PF_ERROR_FORMAT, "conv_kernel_layer.weight");
    if (copy_fixture("convbert-groups")) return;
    edit_file("config.json", "\"num_groups\": 2", "\"num_groups\": 3");
    expect_load("ConvBERT with num_groups 3 over weights of 2 groups", NULL, PF_ERROR_FORMAT,
                "intermediate.dense.weight' is not [3, 16, 32] as the config needs");
    if (copy_fixture("convbert-groups")) return;
    edit_file("config.json", "\"num_groups\": 2", "\"num_groups\": 5");
    expect_load("ConvBERT with num_groups 5", NULL, PF_ERROR_FORMAT, "5 groups do not divide its 48 inputs");
    if (copy_fixture("convbert-groups")) return;
    edit_file("config.json", "\"num_groups\": 2", "\"num_groups\": 1");
    expect_load("ConvBERT with num_groups 1 over grouped weights", NULL, PF_ERROR_FORMAT, "intermediate.dense.weight");
    /* the multiple-choice head's summary: the last token's state as it is */
    if (copy_fixture("convbert-mc")) return;
    edit_file("config.json", "\"head_ratio\": 2", "\"head_ratio\": 2, \"summary_type\": \"first\"");
    expect_load("ConvBERT's multiple choice with summary_type first", NULL, PF_ERROR_UNSUPPORTED,
                "\"summary_type\" \"first\" is not supported");
    if (copy_fixture("convbert-mc")) return;
    edit_file("config.json", "\"head_ratio\": 2", "\"head_ratio\": 2, \"summary_use_proj\": true");
    expect_load("ConvBERT's multiple choice with summary_use_proj", NULL, PF_ERROR_UNSUPPORTED, "\"summary_use_proj\"");
    if (copy_fixture("convbert-mc")) return;
    edit_file("config.json", "\"head_ratio\": 2", "\"head_ratio\": 2, \"summary_activation\": \"tanh\"");
    expect_load("ConvBERT's multiple choice with summary_activation", NULL, PF_ERROR_UNSUPPORTED, "\"summary_activation\"");
}

/* Funnel: the keys whose other values we do not compute refused by name; the decoder's tensors
   needed exactly when architectures names FunnelModel or a head on it. */
static void test_funnel_refusals(void) {
    static const config_edit cases[] = {
        {"funnel", "\"pooling_type\": \"mean\"", "\"pooling_type\": \"min\"", "\"pooling_type\" \"min\" is not supported",
         PF_ERROR_UNSUPPORTED},
        {"funnel", "\"attention_type\": \"relative_shift\"", "\"attention_type\": \"absolute\"",
         "\"attention_type\" \"absolute\" is not supported", PF_ERROR_UNSUPPORTED},
        {"funnel", "\"block_repeats\": [", "\"block_repeats\": [3, ", "\"block_repeats\" is not a list of 3 positive counts",
         PF_ERROR_FORMAT},
        {"funnel", "\"block_sizes\": [", "\"block_sizes\": [0, ", "\"block_sizes\" is not a list of 1 to 8 positive counts",
         PF_ERROR_FORMAT},
        {"funnel", "\"d_head\": 10", "\"d_head\": 2000", "\"d_head\" 2000 is not supported", PF_ERROR_UNSUPPORTED},
        {"funnel-full", "\"num_decoder_layers\": 1", "\"num_decoder_layers\": -1",
         "\"num_decoder_layers\" -1 is not a count of layers", PF_ERROR_FORMAT},
        /* the base model under FunnelModel's name: its decoder's tensors missing */
        {"funnel", "\"FunnelBaseModel\"", "\"FunnelModel\"", "missing tensor 'decoder.layers.0.", PF_ERROR_FORMAT},
    };
    expect_edits(cases, sizeof cases / sizeof cases[0]);
}

/* BigBird: attention types other than its two, blocks that do not fit, q/k/v biases where use_bias
   says none, and the heads we lack refused by name. */
static void test_big_bird_refusals(void) {
    static const config_edit cases[] = {
        {"big-bird", "\"attention_type\": \"block_sparse\"", "\"attention_type\": \"sparse\"",
         "\"attention_type\" \"sparse\" is not supported", PF_ERROR_UNSUPPORTED},
        {"big-bird", "\"block_size\": 4", "\"block_size\": 0", "\"block_size\" 0 or \"num_random_blocks\" 2 does not fit",
         PF_ERROR_FORMAT},
        {"big-bird", "\"num_random_blocks\": 2", "\"num_random_blocks\": -1",
         "\"block_size\" 4 or \"num_random_blocks\" -1 does not fit", PF_ERROR_FORMAT},
        {"big-bird", "\"use_bias\": true", "\"use_bias\": false", "attention.self.query.bias' is in the checkpoint but config.json says use_bias is false",
         PF_ERROR_FORMAT},
        {"big-bird-rescale", "\"use_bias\": false", "\"use_bias\": true", "missing tensor 'encoder.layer.0.attention.self.query.bias' (config.json says use_bias is true)",
         PF_ERROR_FORMAT},
        {"big-bird-cls", "\"BigBirdForSequenceClassification\"", "\"BigBirdForQuestionAnswering\"",
         "\"BigBirdForQuestionAnswering\" is not supported", PF_ERROR_UNSUPPORTED},
        {"big-bird", "\"BigBirdModel\"", "\"BigBirdForCausalLM\"", "\"BigBirdForCausalLM\" is not supported",
         PF_ERROR_UNSUPPORTED},
    };
    expect_edits(cases, sizeof cases / sizeof cases[0]);
}

/* Transformer-XL: the values whose math we do not compute refused by name, and checkpoints whose
   tensors disagree with the config (the shared relative biases, a tied projection's copy). */
static void test_transfo_xl_refusals(void) {
    static const config_edit cases[] = {
        {"transfo-xl", "\"attn_type\": 0", "\"attn_type\": 1", "\"attn_type\"", PF_ERROR_UNSUPPORTED},
        {"transfo-xl-lm", "\"sample_softmax\": -1", "\"sample_softmax\": 8", "\"sample_softmax\" above 0",
         PF_ERROR_UNSUPPORTED},
        {"transfo-xl", "\"mem_len\": 5", "\"mem_len\": 0", "\"same_length\" with \"mem_len\" 0 is not supported",
         PF_ERROR_UNSUPPORTED},
        {"transfo-xl", "\"mem_len\": 5", "\"mem_len\": null", "\"mem_len\" is null", PF_ERROR_FORMAT},
        {"transfo-xl", "\"cutoffs\": [", "\"cutoffs\": [10, 20, 30, ", "\"cutoffs\" of 5 entries is not supported",
         PF_ERROR_UNSUPPORTED},
        {"transfo-xl", "\"cutoffs\": [", "\"cutoffs\": [100, ", "\"cutoffs\" are not increasing ids", PF_ERROR_FORMAT},
        {"transfo-xl", "\"untie_r\": true", "\"untie_r\": false", "missing tensor r_w_bias (config.json's untie_r is "
         "false)", PF_ERROR_FORMAT},
        {"transfo-xl-lm-div", "\"untie_r\": false", "\"untie_r\": true", "r_w_bias and r_r_bias are in the checkpoint",
         PF_ERROR_FORMAT},
        {"transfo-xl-lm-div", "\"tie_projs\": [\n    false,", "\"tie_projs\": [\n    true,",
         "crit.out_projs of cluster 0 differs from the input's tensor", PF_ERROR_FORMAT},
        {"transfo-xl-lm", "\"TransfoXLLMHeadModel\"", "\"TransfoXLForTokenClassification\"",
         "architecture \"TransfoXLForTokenClassification\" is not supported", PF_ERROR_UNSUPPORTED},
    };
    expect_edits(cases, sizeof cases / sizeof cases[0]);
}

/* Reformer: the keys whose other values we do not compute refused by name, the heads we do not
   run, and tensors that disagree with attn_layers or axial_pos_embds. */
static void test_reformer_refusals(void) {
    static const config_edit cases[] = {
        {"reformer", "\"num_buckets\": [\n    2,\n    4\n  ]", "\"num_buckets\": null", "\"num_buckets\" null is not supported",
         PF_ERROR_UNSUPPORTED},
        {"reformer", "\"num_buckets\": [\n    2,\n    4\n  ]", "\"num_buckets\": [3, 4]", "\"num_buckets\" is not an even count",
         PF_ERROR_FORMAT},
        {"reformer", "\"lsh\",\n    \"local\",\n    \"lsh\"", "\"lsh\",\n    \"global\",\n    \"lsh\"",
         "\"attn_layers\" entry 2 is not supported", PF_ERROR_UNSUPPORTED},
        {"reformer", "\"local\",\n    \"lsh\",\n    \"local\"", "\"lsh\",\n    \"lsh\",\n    \"local\"",
         "layer 0 is \"lsh\" in config.json's attn_layers but its tensors are local attention's", PF_ERROR_FORMAT},
        {"reformer", "\"axial_pos_shape\": [\n    4,\n    8\n  ]", "\"axial_pos_shape\": [2, 2, 8]",
         "\"axial_pos_shape\" is not supported", PF_ERROR_UNSUPPORTED},
        {"reformer", "\"axial_pos_embds\": true", "\"axial_pos_embds\": false",
         "axial_pos_embds is false but the checkpoint's position tensors are axial ones", PF_ERROR_FORMAT},
        {"reformer", "\"ReformerModel\"", "\"ReformerForSequenceClassification\"",
         "architecture \"ReformerForSequenceClassification\" is not supported", PF_ERROR_UNSUPPORTED},
        {"reformer", "\"hash_seed\": 7", "\"hash_seed\": -1", "\"hash_seed\" is not a non-negative integer",
         PF_ERROR_FORMAT},
        {"reformer-lm", "\"is_decoder\": true", "\"is_decoder\": false", "ReformerModelWithLMHead needs \"is_decoder\" true",
         PF_ERROR_FORMAT},
        {"reformer-lm", "\"local_num_chunks_after\": 0", "\"local_num_chunks_after\": 1",
         "ReformerModelWithLMHead needs \"is_decoder\" true", PF_ERROR_FORMAT},
    };
    expect_edits(cases, sizeof cases / sizeof cases[0]);
}

/* XLNet: the keys whose other values we do not compute refused by name, and the classes we do
   not run (the LM head's two-stream generation, the beam-search question answering). */
static void test_xlnet_refusals(void) {
    static const config_edit cases[] = {
        {"xlnet", "\"attn_type\": \"bi\"", "\"attn_type\": \"both\"", "\"attn_type\" \"both\" is not supported",
         PF_ERROR_UNSUPPORTED},
        {"xlnet", "\"bi_data\": false", "\"bi_data\": true", "\"bi_data\"", PF_ERROR_UNSUPPORTED},
        {"xlnet", "\"d_head\": 10", "\"d_head\": 8", "\"d_head\" 8 is not d_model / n_head (40 / 4)", PF_ERROR_FORMAT},
        {"xlnet-lm", "\"reuse_len\": null", "\"reuse_len\": 4", "\"reuse_len\" is not supported for generation",
         PF_ERROR_UNSUPPORTED},
        {"xlnet-lm", "\"mem_len\": 6", "\"mem_len\": -1", "\"mem_len\" -1 is not a count of rows", PF_ERROR_FORMAT},
        {"xlnet-qa", "\"XLNetForQuestionAnsweringSimple\"", "\"XLNetForQuestionAnswering\"",
         "architecture \"XLNetForQuestionAnswering\" is not supported", PF_ERROR_UNSUPPORTED},
        {"xlnet-cls", "\"same_length\": false", "\"same_length\": true",
         "\"same_length\" is not supported with attn_type \"uni\"", PF_ERROR_UNSUPPORTED},
        {"xlnet-cls", "\"summary_type\": \"last\"", "\"summary_type\": \"first\"", "\"summary_type\" \"first\" is not "
         "supported", PF_ERROR_UNSUPPORTED},
        {"xlnet-cls", "\"summary_activation\": \"tanh\"", "\"summary_activation\": null",
         "\"summary_activation\" other than a name is not supported", PF_ERROR_UNSUPPORTED},
        {"xlnet-mc", "\"summary_use_proj\": true", "\"summary_use_proj\": false", "\"summary_use_proj\" is not supported",
         PF_ERROR_UNSUPPORTED},
        {"xlnet-mc", "\"summary_use_proj\": true", "\"summary_use_proj\": true, \"summary_proj_to_labels\": true",
         "\"summary_proj_to_labels\" is not supported", PF_ERROR_UNSUPPORTED},
    };
    expect_edits(cases, sizeof cases / sizeof cases[0]);
}

/* BigBirdPegasus: BigBird's attention keys refused as BigBird's are, the q/k/v and output biases of
   both towers exactly where use_bias says (the message names use_bias), the decoder alone refused. */
static void test_bigbird_pegasus_refusals(void) {
    static const config_edit cases[] = {
        {"bigbird-pegasus-s2s", "\"attention_type\": \"block_sparse\"", "\"attention_type\": \"sparse\"",
         "\"attention_type\" \"sparse\" is not supported", PF_ERROR_UNSUPPORTED},
        {"bigbird-pegasus-s2s", "\"num_random_blocks\": 1", "\"num_random_blocks\": 0",
         "\"num_random_blocks\" 0 with block-sparse attention is not supported", PF_ERROR_UNSUPPORTED},
        {"bigbird-pegasus-s2s", "\"use_bias\": true", "\"use_bias\": false",
         "self_attn.self.query.bias' is in the checkpoint but config.json says use_bias is false", PF_ERROR_FORMAT},
        {"bigbird-pegasus-cls", "\"use_bias\": false", "\"use_bias\": true",
         "missing tensor 'model.encoder.layers.0.self_attn.self.query.bias' (config.json says use_bias is true)",
         PF_ERROR_FORMAT},
        {"bigbird-pegasus-s2s", "\"BigBirdPegasusForConditionalGeneration\"", "\"BigBirdPegasusForCausalLM\"",
         "\"BigBirdPegasusForCausalLM\" is not supported", PF_ERROR_UNSUPPORTED},
    };
    expect_edits(cases, sizeof cases / sizeof cases[0]);
}

/* Values transformers computes differently from what we implement, or cannot compute, are
   refused by name. */
static void test_refused_values(void) {
    /* GPT-J's rotary_dim defaults to 64, wider than these heads: transformers fails too. */
    if (copy_fixture("gptj")) return;
    edit_file("config.json", "\"rotary_dim\": 4,", "");
    expect_load("GPT-J without rotary_dim", NULL, PF_ERROR_FORMAT, "rotary dims 64");
    /* LLaMA's rotate-half spans whole heads. */
    if (copy_fixture("llama-rope-linear")) return;
    edit_file("config.json", "\"factor\": 2.0,", "\"factor\": 2.0, \"partial_rotary_factor\": 0.5,");
    expect_load("LLaMA with a partial_rotary_factor and linear rope", NULL, PF_ERROR_UNSUPPORTED,
                "\"partial_rotary_factor\" = 0.5 with rope type \"linear\"");
    /* LongRoPE's factors: one per rotary frequency; "su" is Phi-3's older name, a KeyError for LLaMA. */
    if (copy_fixture("llama-rope-longrope")) return;
    edit_file("config.json", "1.2,", "");
    expect_load("longrope with 3 long factors", NULL, PF_ERROR_FORMAT, "short_factor\" and \"long_factor\"");
    if (copy_fixture("llama-rope-longrope")) return;
    edit_file("config.json", "1.2,", "");
    edit_file("config.json", "1.0,", "");
    expect_load("longrope with 3 factors for 4 frequencies", NULL, PF_ERROR_FORMAT, "have 3 entries; the 8 rotary dims need 4");
    if (copy_fixture("llama-rope-longrope")) return;
    edit_file("config.json", "\"longrope\"", "\"su\"");
    expect_load("LLaMA with rope type su", NULL, PF_ERROR_UNSUPPORTED, "rope type \"su\" is not supported");
    /* GPT-J's rotary_dim may not be null (transformers 5 refuses it too). */
    if (copy_fixture("gptj")) return;
    edit_file("config.json", "\"rotary_dim\": 4", "\"rotary_dim\": null");
    expect_load("GPT-J with a null rotary_dim", NULL, PF_ERROR_FORMAT, "\"rotary_dim\" is null");
    /* OPT's projections exist exactly when word_embed_proj_dim differs from hidden_size. */
    if (copy_fixture("opt")) return;
    add_tensor("model.decoder.project_in.weight");
    expect_load("OPT with a projection it does not use", NULL, PF_ERROR_FORMAT, "the embedding width equals hidden_size");
    /* A window that only transformers' generation cache would apply. */
    if (copy_fixture("llama")) return;
    edit_file("config.json", "{", "{\"sliding_window\": 4,");
    expect_load("LLaMA with a stray sliding_window", NULL, PF_ERROR_UNSUPPORTED, "\"sliding_window\" = 4");
    if (copy_fixture("gpt_neox")) return;
    edit_file("config.json", "{", "{\"attention_chunk_size\": 8, \"sliding_window\": null,");
    expect_load("GPT-NeoX with a stray attention_chunk_size", NULL, PF_ERROR_UNSUPPORTED, "attention_chunk_size");
    /* BLOOM's slow_but_exact (with pretraining_tp > 1 transformers drops two biases). */
    if (copy_fixture("bloom")) return;
    edit_file("config.json", "\"slow_but_exact\": false", "\"slow_but_exact\": true");
    expect_load("BLOOM with slow_but_exact", NULL, PF_ERROR_UNSUPPORTED, "slow_but_exact");
    /* generation_config.json's quantized cache changes transformers' numbers. */
    if (copy_fixture("llama-generation-config")) return;
    edit_file("generation_config.json", "{", "{\"cache_implementation\": \"quantized\",");
    expect_load("a quantized generation cache", NULL, PF_ERROR_UNSUPPORTED, "cache_implementation");
    /* OPT's final norm exists exactly for pre-norm blocks that keep it. */
    if (copy_fixture("opt")) return;
    edit_file("config.json", "\"_remove_final_layer_norm\": false", "\"_remove_final_layer_norm\": true");
    expect_load("OPT with _remove_final_layer_norm and its norm", NULL, PF_ERROR_FORMAT, "_remove_final_layer_norm is true");
    if (copy_fixture("opt-350m-style")) return;
    add_tensor("model.decoder.final_layer_norm.weight");
    expect_load("post-norm OPT with a final norm", NULL, PF_ERROR_FORMAT, "post-norm");
    /* OpenAI GPT's activations are its own table. */
    if (copy_fixture("openai-gpt")) return;
    edit_file("config.json", "\"afn\": \"gelu\"", "\"afn\": \"gelu_new\"");
    expect_load("OpenAI GPT with an ACT2FN name", NULL, PF_ERROR_UNSUPPORTED, "gelu_new");
}

/* Issue 32's families of fused projections: their keys' refusals and hub spellings. */
static void test_fused_families(void) {
    /* Phi-3's longrope needs its two lists; older configs name it "su" (or "yarn"), which Phi-3's config maps. */
    if (copy_fixture("phi3")) return;
    edit_file("config.json", "\"rope_type\": \"default\"", "\"rope_type\": \"longrope\"");
    expect_load("Phi-3 with longrope and no factors", NULL, PF_ERROR_FORMAT, "short_factor");
    if (copy_fixture("phi3-longrope")) return;
    edit_file("config.json", "\"rope_type\": \"longrope\"", "\"rope_type\": \"su\"");
    pf_free(expect_load("Phi-3 with rope type su", NULL, PF_OK, NULL));
    /* Phi-3 configs before transformers 5: rope_theta and partial_rotary_factor at the top, rope_scaling null. */
    if (copy_fixture("phi3")) return;
    edit_file("config.json", "\"rope_parameters\": {\n    \"partial_rotary_factor\": 0.5,\n    \"rope_theta\": 10000.0,\n"
              "    \"rope_type\": \"default\"\n  },", "\"partial_rotary_factor\": 0.5, \"rope_scaling\": null, \"rope_theta\": 10000.0,");
    check_work_logits("Phi-3 with a top-level partial_rotary_factor and rope_theta", "phi3", 1);
    /* its sliding_window null: no window (the fixture's is shorter than the prompt) */
    if (copy_fixture("phi3")) return;
    edit_file("config.json", "\"sliding_window\": 8", "\"sliding_window\": null");
    check_work_logits("Phi-3 without a sliding window", "phi3", 0);
    /* Phi-2's hub config: rope_theta at the top, rope_scaling null, no partial_rotary_factor: 0.5 */
    if (copy_fixture("phi")) return;
    edit_file("config.json", "\"rope_parameters\": {\n    \"partial_rotary_factor\": 0.5,\n    \"rope_theta\": 10000.0,\n"
              "    \"rope_type\": \"default\"\n  },", "\"rope_scaling\": null, \"rope_theta\": 10000.0,");
    check_work_logits("Phi without partial_rotary_factor (0.5)", "phi", 1);
    if (copy_fixture("phi")) return;
    edit_file("config.json", "\"qk_layernorm\": false", "\"qk_layernorm\": true");
    expect_load("Phi with qk_layernorm and no q/k LayerNorms", NULL, PF_ERROR_FORMAT, "q_layernorm.weight");
    if (copy_fixture("phi-qk-layernorm")) return;
    edit_file("config.json", "\"qk_layernorm\": true", "\"qk_layernorm\": false");
    expect_load("Phi without qk_layernorm and with q/k LayerNorms", NULL, PF_ERROR_FORMAT, "q_layernorm.weight");
    /* StarCoder2's use_bias false: its bias tensors are ones the config says are not there */
    if (copy_fixture("starcoder2")) return;
    edit_file("config.json", "\"use_bias\": true", "\"use_bias\": false");
    expect_load("StarCoder2 with use_bias false and biases", NULL, PF_ERROR_FORMAT, "q_proj.bias");
    /* the new decoder architecture's blocks are parallel (transformers fails without) */
    if (copy_fixture("falcon-new-arch")) return;
    edit_file("config.json", "\"parallel_attn\": true", "\"parallel_attn\": false");
    expect_load("Falcon's new decoder architecture with parallel_attn false", NULL, PF_ERROR_UNSUPPORTED,
                "\"new_decoder_architecture\" with \"parallel_attn\" false");
    /* a sequential block needs its second norm: the one-norm checkpoint made sequential */
    if (copy_fixture("falcon")) return;
    edit_file("config.json", "\"parallel_attn\": true", "\"parallel_attn\": false");
    expect_load("Falcon with parallel_attn false and one norm a block", NULL, PF_ERROR_FORMAT, "no norm before its MLP");
    /* n_embed (older configs) wins over hidden_size */
    if (copy_fixture("falcon")) return;
    edit_file("config.json", "\"hidden_size\": 48", "\"hidden_size\": 24, \"n_embed\": 48");
    check_work_logits("Falcon with n_embed", "falcon", 1);
    /* StableLM's hub config: rope_theta at the top, rope_scaling null, no partial_rotary_factor: 0.25 */
    if (copy_fixture("stablelm")) return;
    edit_file("config.json", "\"rope_parameters\": {\n    \"partial_rotary_factor\": 0.25,\n    \"rope_theta\": 10000.0,\n"
              "    \"rope_type\": \"default\"\n  },", "\"rope_scaling\": null, \"rope_theta\": 10000.0,");
    check_work_logits("StableLM without partial_rotary_factor (0.25)", "stablelm", 1);
    /* StableLM 2 12B's qk_layernorm says whether its per-head q/k LayerNorms are there */
    if (copy_fixture("stablelm")) return;
    edit_file("config.json", "\"qk_layernorm\": false", "\"qk_layernorm\": true");
    expect_load("StableLM with qk_layernorm and no q/k LayerNorms", NULL, PF_ERROR_FORMAT, "q_layernorm.norms.0.weight");
    if (copy_fixture("stablelm-qk-layernorm")) return;
    edit_file("config.json", "\"qk_layernorm\": true", "\"qk_layernorm\": false");
    expect_load("StableLM without qk_layernorm and with q/k LayerNorms", NULL, PF_ERROR_FORMAT, "q_layernorm.norms.0.weight");
    /* Cohere: use_qk_norm says whether the per-head q/k norms (Command R+) are there: true without
       them, or false with them, is refused; logit_scale null fails in transformers */
    if (copy_fixture("cohere")) return;
    edit_file("config.json", "\"use_qk_norm\": false", "\"use_qk_norm\": true");
    expect_load("Cohere with use_qk_norm and no q/k norms", NULL, PF_ERROR_FORMAT, "q_norm.weight");
    if (copy_fixture("cohere-qk-norm")) return;
    edit_file("config.json", "\"use_qk_norm\": true", "\"use_qk_norm\": false");
    expect_load("Cohere without use_qk_norm and with q/k norms", NULL, PF_ERROR_FORMAT, "q_norm.weight");
    if (copy_fixture("cohere")) return;
    edit_file("config.json", "\"logit_scale\": 0.5", "\"logit_scale\": null");
    expect_load("Cohere with a null logit_scale", NULL, PF_ERROR_FORMAT, "\"logit_scale\" is null");
    /* Cohere2: layer_types (transformers 5's spelling) says what sliding_window_pattern says */
    if (copy_fixture("cohere2")) return;
    edit_file("config.json", "\"sliding_window_pattern\": 3", "\"sliding_window_pattern\": 2, \"layer_types\": "
              "[\"sliding_attention\", \"sliding_attention\", \"full_attention\"]");
    check_work_logits("Cohere2 with layer_types over sliding_window_pattern", "cohere2", 1);
    if (copy_fixture("cohere2")) return;
    edit_file("config.json", "\"sliding_window_pattern\": 3", "\"sliding_window_pattern\": 2");
    check_work_logits("Cohere2 with another sliding_window_pattern", "cohere2", 0);
    if (copy_fixture("cohere2")) return;
    edit_file("config.json", "\"sliding_window\": 8", "\"sliding_window\": null");
    expect_load("Cohere2 with a null sliding_window", NULL, PF_ERROR_FORMAT, "\"sliding_window\" is null");
    /* GPT-BigCode's cross-attention blocks. */
    if (copy_fixture("gpt_bigcode")) return;
    edit_file("config.json", "\"add_cross_attention\": false", "\"add_cross_attention\": true");
    expect_load("GPT-BigCode with add_cross_attention", NULL, PF_ERROR_UNSUPPORTED, "add_cross_attention");
}

/* Weights in a format we do not read get a message naming it and the conversion, through the
   class config.json names (an encoder's head is not a causal LM's). */
static void test_other_formats(void) {
    static const struct { const char *fixture, *conversion; } cases[] = {
        {"gpt2-tiny", "t.GPT2LMHeadModel.from_pretrained("},
        {"bert-cls", "t.BertForSequenceClassification.from_pretrained("},
        {"mt5-s2s", "t.MT5ForConditionalGeneration.from_pretrained("},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        empty_work_dir();
        if (copy_fixture(cases[i].fixture)) return;
        char path[1024];
        snprintf(path, sizeof path, "%s/model.safetensors", work_dir);
        unlink(path);
        write_work_file("pytorch_model.bin", "PK\003\004 not really a zip");
        expect_load(cases[i].fixture, NULL, PF_ERROR_UNSUPPORTED, "pytorch_model.bin (a PyTorch pickle)");
        expect_load(cases[i].fixture, NULL, PF_ERROR_UNSUPPORTED, cases[i].conversion);
    }
}

static void rename_tensor(const char *from, const char *to);

/* A bare encoder whose config.json names a head it does not hold (all-mpnet-base-v2 names
   MPNetForMaskedLM): loaded as the bare encoder, as transformers' AutoModel loads it, with the
   bare checkpoint's outputs; a head with some of its tensors missing is still an error. */
static void test_bare_encoder_under_head_name(void) {
    char bare_dir[1024];
    snprintf(bare_dir, sizeof bare_dir, "%s/mpnet", test_fixtures);
    empty_work_dir();
    if (copy_fixture("mpnet")) return;
    edit_file("config.json", "\"MPNetModel\"", "\"MPNetForMaskedLM\"");
    pf_model *named = expect_load("mpnet named MPNetForMaskedLM", NULL, PF_OK, NULL), *bare = NULL;
    CHECK(pf_load(bare_dir, NULL, &bare) == PF_OK);
    if (named && bare) {
        CHECK_MSG(pf_get_info(named).head == PF_HEAD_NONE, "head %d", (int)pf_get_info(named).head);
        int32_t ids[] = {0, 12, 40, 7, 2};
        const int32_t *rows[] = {ids};
        int lengths[] = {5};
        pf_encoding *a = NULL, *b = NULL;
        pf_result r = pf_encode(named, rows, NULL, lengths, 1, &a);
        if (!r) r = pf_encode(bare, rows, NULL, lengths, 1, &b);
        CHECK_MSG(r == PF_OK && a && b && a->offsets[1] == b->offsets[1] &&
                      !memcmp(a->last_hidden_state, b->last_hidden_state,
                              (size_t)a->offsets[1] * (size_t)a->hidden_size * sizeof(float)),
                  "the renamed bare encoder's outputs differ from the bare checkpoint's: %s", pf_error_message(named));
        pf_encoding_free(a);
        pf_encoding_free(b);
    }
    pf_free(named);
    pf_free(bare);
    /* the sequence classification head with its dense layer but no output projection */
    empty_work_dir();
    if (copy_fixture("mpnet-cls")) return;
    rename_tensor("classifier.out_proj.weight", "classifier.out_prxx.weight");
    expect_load("mpnet-cls without its out_proj", NULL, PF_ERROR_FORMAT, "out_proj");
}

/* Reads KEY=ids from a fixture's reference.txt. */
static int reference_ids(const char *fixture, const char *key, int *out, int cap) {
    char path[1024], line[4096];
    snprintf(path, sizeof path, "%s/%s/reference.txt", test_fixtures, fixture);
    FILE *f = fopen(path, "r");
    int n = -1;
    while (f && n < 0 && fgets(line, sizeof line, f))
        if (!strncmp(line, key, strlen(key)) && line[strlen(key)] == '=') n = test_parse_ids(line + strlen(key) + 1, out, cap);
    if (f) fclose(f);
    return n;
}

/* generation_config.json: its eos ids join config.json's, its generate() defaults are the model's
   and NULL options use them, as transformers' generate() does without arguments. */
static void test_generation_config(void) {
    test_reference ref;
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/llama-generation-config", test_fixtures);
    if (test_read_reference(dir, &ref)) {
        CHECK_MSG(0, "reading %s", dir);
        return;
    }
    pf_model *m = NULL;
    pf_result r = pf_load(dir, NULL, &m);
    CHECK_MSG(r == PF_OK, "loading %s: %s", dir, pf_error_message(m));
    if (r) {
        pf_free(m);
        return;
    }
    pf_model_info info = pf_get_info(m);
    int last = ref.greedy_ids[ref.num_greedy_ids - 1];
    CHECK_MSG(info.num_eos_token_ids == 2 && info.eos_token_ids[0] == 2 && info.eos_token_ids[1] == last,
              "eos ids: %d of them", info.num_eos_token_ids);
    CHECK(info.bos_token_id == 1 && info.pad_token_id == 0 && info.decoder_start_token_id == -1);
    pf_generate_options d = pf_model_generate_options(m);
    CHECK(d.num_beams == 2 && d.no_repeat_ngram_size == 3 && d.max_new_tokens == 12 && d.pad_token_id == 0);
    CHECK(d.repetition_penalty == 1.3f && d.length_penalty == 0.7f && !d.do_sample);

    int want[TEST_MAX_IDS];
    int num_want = reference_ids("llama-generation-config", "default_ids", want, TEST_MAX_IDS);
    pf_parallel_options po = pf_parallel_options_init();
    po.device = PF_DEVICE_CPU;
    po.max_batch = 2;
    for (int ranks = 1; ranks <= 3 && num_want > 0; ranks++) {
        CHECK_MSG(pf_parallelize(m, ranks, &po) == PF_OK, "parallelize: %s", pf_error_message(m));
        int32_t prompt[TEST_MAX_IDS], out[TEST_MAX_IDS];
        int n = 0;
        for (int i = 0; i < ref.num_prompt_ids; i++) prompt[i] = ref.prompt_ids[i];
        r = pf_generate(m, prompt, ref.num_prompt_ids, NULL, out, TEST_MAX_IDS, &n);
        int same = r == PF_OK && n == num_want;
        for (int i = 0; same && i < n; i++) same = out[i] == want[i];
        CHECK_MSG(same, "%d ranks: generate() with the model's defaults differs from transformers (%s; %d tokens, want %d)",
                  ranks, pf_error_message(m), n, num_want);
    }
    CHECK_MSG(num_want > 0, "llama-generation-config's reference has no default_ids");
    pf_free(m);

    /* A generation feature we lack is refused by name, unless the file is skipped. */
    if (copy_fixture("llama-generation-config")) return;
    edit_file("generation_config.json", "\"num_beams\": 2", "\"num_beams\": 2, \"typical_p\": 0.9");
    expect_load("typical_p in generation_config.json", NULL, PF_ERROR_UNSUPPORTED, "typical_p");
    pf_load_options lo = pf_load_options_init();
    lo.skip_generation_config = 1;
    m = expect_load("typical_p, generation_config.json skipped", &lo, PF_OK, NULL);
    if (m) {
        info = pf_get_info(m);
        CHECK(info.num_eos_token_ids == 1 && pf_model_generate_options(m).num_beams == 1);
    }
    pf_free(m);
    /* min_p is read into the defaults; one outside [0, 1] is refused naming it. */
    if (copy_fixture("llama-generation-config")) return;
    edit_file("generation_config.json", "\"num_beams\": 2", "\"num_beams\": 2, \"min_p\": 0.25");
    m = expect_load("min_p in generation_config.json", NULL, PF_OK, NULL);
    CHECK(m && pf_model_generate_options(m).min_p == 0.25f);
    pf_free(m);
    if (copy_fixture("llama-generation-config")) return;
    edit_file("generation_config.json", "\"num_beams\": 2", "\"num_beams\": 2, \"min_p\": 1.5");
    expect_load("min_p 1.5 in generation_config.json", NULL, PF_ERROR_FORMAT, "min_p");
    /* Finished rows are fed the pad id: one outside the vocabulary is refused. */
    if (copy_fixture("llama-generation-config")) return;
    edit_file("generation_config.json", "\"pad_token_id\": 0", "\"pad_token_id\": 512");
    expect_load("pad id outside the vocabulary", NULL, PF_ERROR_FORMAT, "pad_token_id 512 is outside");
}

/* generation_config.json's suppress_tokens and begin_suppress_tokens become the model's generate
   defaults; a value that is not a list of ids is refused naming the key. */
static void test_suppress_lists(void) {
    if (copy_fixture("gpt2-tiny")) return;
    write_work_file("generation_config.json", "{\"suppress_tokens\": [3, 5], \"begin_suppress_tokens\": [7]}");
    pf_model *m = expect_load("suppress lists", NULL, PF_OK, NULL);
    if (m) {
        pf_generate_options o = pf_model_generate_options(m);
        CHECK(o.num_suppress_tokens == 2 && o.suppress_tokens[0] == 3 && o.suppress_tokens[1] == 5);
        CHECK(o.num_begin_suppress_tokens == 1 && o.begin_suppress_tokens[0] == 7);
        int32_t prompt[1] = {1}, out[4];
        int n = 0;
        o.max_new_tokens = 4;
        CHECK_MSG(pf_generate(m, prompt, 1, &o, out, 4, &n) == PF_OK, "%s", pf_error_message(m));
        for (int i = 0; i < n; i++) CHECK_MSG(out[i] != 3 && out[i] != 5 && (i || out[i] != 7), "token %d: %d", i, (int)out[i]);
        pf_free(m);
    }
    write_work_file("generation_config.json", "{\"suppress_tokens\": \"3\"}");
    expect_load("a suppress list that is a string", NULL, PF_ERROR_FORMAT, "suppress_tokens");
}

/* Encoder-decoders: what a file or config describes that we would run wrong is refused, naming it. */
static void test_seq2seq_refusals(void) {
    if (copy_fixture("bart-s2s")) return;
    edit_file("config.json", "\"decoder_attention_heads\": 6", "\"decoder_attention_heads\": 3");
    expect_load("towers with different heads", NULL, PF_ERROR_UNSUPPORTED, "decoder's heads");
    if (copy_fixture("bart-s2s")) return;
    edit_file("config.json", "\"is_decoder\": false", "\"is_decoder\": true");
    expect_load("BART as a decoder", NULL, PF_ERROR_UNSUPPORTED, "is_decoder");
    if (copy_fixture("bart-s2s")) return;
    add_tensor("model.decoder.layers.1.encoder_attn.rotary.weight");
    expect_load("an unknown cross-attention tensor", NULL, PF_ERROR_UNSUPPORTED, "encoder_attn.rotary");
    if (copy_fixture("marian-s2s")) return;
    edit_file("config.json", "\"share_encoder_decoder_embeddings\": true", "\"share_encoder_decoder_embeddings\": false");
    expect_load("separate vocabularies named over a shared table", NULL, PF_ERROR_FORMAT,
                "config.json says share_encoder_decoder_embeddings is false");
    /* a shared table with the towers' tables beside (older files hold copies of it; transformers 5
       with tie_word_embeddings false its own): one that is not a copy is refused */
    if (copy_fixture("marian-s2s")) return;
    add_tensor("model.encoder.embed_tokens.weight");
    expect_load("Marian's shared table with another encoder table", NULL, PF_ERROR_UNSUPPORTED,
                "model.encoder.embed_tokens.weight differs from its shared token embedding");
    if (copy_fixture("t5-s2s")) return;
    edit_file("config.json", "\"T5ForConditionalGeneration\"", "\"T5ForTokenClassification\"");
    expect_load("a T5 head we lack", NULL, PF_ERROR_UNSUPPORTED, "T5ForTokenClassification");
    /* bert-base-uncased names BertForMaskedLM and ships pretraining's next-sentence head too */
    if (copy_fixture("bert-pretraining")) return;
    edit_file("config.json", "\"BertForPreTraining\"", "\"BertForMaskedLM\"");
    pf_free(expect_load("a masked LM with a next-sentence head beside it", NULL, PF_OK, NULL));
    edit_file("config.json", "\"BertForMaskedLM\"", "\"BertForNextSentencePrediction\"");
    expect_load("a next-sentence head with a masked LM beside it", NULL, PF_ERROR_FORMAT, "belongs to a head");
    /* I-BERT in float only; its IntGELU is gelu */
    if (copy_fixture("ibert")) return;
    edit_file("config.json", "\"quant_mode\": false", "\"quant_mode\": true");
    expect_load("I-BERT's integer-only mode", NULL, PF_ERROR_UNSUPPORTED, "quant_mode");
    if (copy_fixture("ibert")) return;
    edit_file("config.json", "\"hidden_act\": \"gelu\"", "\"hidden_act\": \"relu\"");
    expect_load("I-BERT with another activation", NULL, PF_ERROR_UNSUPPORTED, "relu");
    if (copy_fixture("dpr-question")) return;
    edit_file("config.json", "\"projection_dim\": 0", "\"projection_dim\": 8");
    expect_load("DPR's encode_proj", NULL, PF_ERROR_UNSUPPORTED, "projection_dim");
    /* id2label: a name per label (pf_label_name), keys the label indices */
    if (copy_fixture("bart-mnli")) return;
    pf_model *m = expect_load("an NLI classifier", NULL, PF_OK, NULL);
    CHECK(m && pf_label_name(m, 2) && !strcmp(pf_label_name(m, 2), "entailment") && !pf_label_name(m, 3) &&
          !pf_label_name(m, -1));
    pf_free(m);
    CHECK(!pf_label_name(NULL, 0));
    edit_file("config.json", "\"2\": \"entailment\"", "\"two\": \"entailment\"");
    expect_load("an id2label key that is no index", NULL, PF_ERROR_FORMAT, "\"two\" is not a name");
    if (copy_fixture("t5-s2s")) return;
    edit_file("config.json", "\"T5ForConditionalGeneration\"", "\"T5EncoderModel\"");
    expect_load("the decoder's tensors under T5EncoderModel", NULL, PF_ERROR_FORMAT, "decoder.");
    /* EncoderDecoderModel: the pairs one forward runs, towers that agree (config.json lists the
       decoder's keys first, so each edit is the decoder's) */
    if (copy_fixture("bert2bert-s2s")) return;
    edit_file("config.json", "\"model_type\": \"bert\"", "\"model_type\": \"gpt2\"");
    expect_load("a BERT encoder with a GPT-2 decoder", NULL, PF_ERROR_UNSUPPORTED, "a \"bert\" encoder and a \"gpt2\" decoder");
    if (copy_fixture("bert2bert-s2s")) return;
    edit_file("config.json", "\"hidden_act\": \"gelu\"", "\"hidden_act\": \"relu\"");
    expect_load("towers of different activations", NULL, PF_ERROR_UNSUPPORTED, "\"hidden_act\" differ");
    if (copy_fixture("bert2bert-s2s")) return;
    edit_file("config.json", "\"hidden_size\": 40", "\"hidden_size\": 48");
    expect_load("towers of different widths", NULL, PF_ERROR_UNSUPPORTED, "\"hidden_size\" differ");
    if (copy_fixture("bert2bert-s2s")) return;
    edit_file("config.json", "\"add_cross_attention\": true", "\"add_cross_attention\": false");
    expect_load("a decoder without cross-attention", NULL, PF_ERROR_UNSUPPORTED, "decoder.add_cross_attention");
    if (copy_fixture("bert2bert-s2s")) return;
    edit_file("config.json", "\"is_encoder_decoder\": true", "\"is_encoder_decoder\": true, \"tie_encoder_decoder\": true");
    expect_load("the encoder tied to the decoder", NULL, PF_ERROR_UNSUPPORTED, "tie_encoder_decoder");
    if (copy_fixture("bert2bert-s2s")) return;
    edit_file("config.json", "\"EncoderDecoderModel\"", "\"BertForSequenceClassification\"");
    expect_load("an encoder-decoder under another class", NULL, PF_ERROR_UNSUPPORTED, "BertForSequenceClassification");
    if (copy_fixture("bert2bert-s2s")) return;
    add_tensor("decoder.bert.encoder.layer.1.crossattention.self.rotary.weight");
    expect_load("an unknown cross-attention tensor of a BERT decoder", NULL, PF_ERROR_UNSUPPORTED, "crossattention.self.rotary");
    if (copy_fixture("roberta2roberta-s2s")) return; /* RoBERTa's positions start after each tower's pad id */
    edit_file("config.json", "\"pad_token_id\": 1", "\"pad_token_id\": 3");
    expect_load("RoBERTa towers of different pad ids", NULL, PF_ERROR_UNSUPPORTED, "\"pad_token_id\" differ");
    if (copy_fixture("bert-generation-s2s")) return;
    edit_file("config.json", "\"model_type\": \"encoder-decoder\"", "\"model_type\": \"bert-generation\"");
    expect_load("a BertGeneration tower alone", NULL, PF_ERROR_UNSUPPORTED, "tower alone");
    if (copy_fixture("bert-generation-s2s")) return;
    edit_file("config.json", "\"model_type\": \"bert-generation\"", "\"model_type\": \"bert\"");
    expect_load("a BERT decoder after a BertGeneration encoder", NULL, PF_ERROR_UNSUPPORTED, "is not supported");
}

/* Renames a tensor in work_dir/model.safetensors to a name of the same length (its header's
   offsets hold): the file is binary, so the name is searched byte by byte. */
static void rename_tensor(const char *from, const char *to) {
    char path[1024];
    snprintf(path, sizeof path, "%s/model.safetensors", work_dir);
    size_t size = 0, n = strlen(from);
    char *file = test_read_file(path, &size);
    size_t at = 0;
    while (file && at + n <= size && memcmp(file + at, from, n)) at++;
    CHECK_MSG(file && at + n <= size && strlen(to) == n, "model.safetensors lacks \"%s\" (or \"%s\" differs in length)", from, to);
    if (file && at + n <= size && strlen(to) == n) {
        memcpy(file + at, to, n);
        test_write_file(path, file, size);
    }
    free(file);
}

/* Speech encoders: the config keys that change the front end's math, read or refused by name, and
   the tensors checked against them. */
static void test_speech_refusals(void) {
    static const struct { const char *fixture, *from, *to, *what, *needle; pf_result want; } cases[] = {
        {"wav2vec2-ctc", "\"add_adapter\": false", "\"add_adapter\": true", "adapter layers", "add_adapter", PF_ERROR_UNSUPPORTED},
        {"hubert-ctc", "\"conv_pos_batch_norm\": false", "\"conv_pos_batch_norm\": true", "a batch norm before the positional conv",
         "conv_pos_batch_norm", PF_ERROR_UNSUPPORTED},
        {"wav2vec2-ctc", "\"adapter_attn_dim\": null", "\"adapter_attn_dim\": 16", "attention adapters", "adapter_attn_dim",
         PF_ERROR_UNSUPPORTED},
        {"wav2vec2-ctc", "\"feat_extract_norm\": \"group\"", "\"feat_extract_norm\": \"batch\"", "another conv norm",
         "feat_extract_norm", PF_ERROR_UNSUPPORTED},
        {"wav2vec2-ctc", "\"feat_extract_activation\": \"gelu\"", "\"feat_extract_activation\": \"relu\"",
         "another front-end activation", "feat_extract_activation", PF_ERROR_UNSUPPORTED},
        {"wav2vec2-ctc", "\"Wav2Vec2ForCTC\"", "\"Wav2Vec2ForSequenceClassification\"", "a classification head",
         "CTC head", PF_ERROR_UNSUPPORTED},
        {"wav2vec2-ctc", "\"Wav2Vec2ForCTC\"", "\"Wav2Vec2ForXVector\"", "the x-vector head", "Wav2Vec2ForXVector",
         PF_ERROR_UNSUPPORTED},
        {"wav2vec2-ctc", "\"Wav2Vec2ForCTC\"", "\"Wav2Vec2Model\"", "the CTC head under the bare model", "LM head",
         PF_ERROR_FORMAT},
        {"wav2vec2-ctc", "\"conv_dim\": [\n    16,", "\"conv_dim\": [", "lists of different lengths", "conv_dim", PF_ERROR_FORMAT},
        {"wav2vec2-ctc", "\"conv_stride\": [\n    5,\n    2,\n    2\n  ]", "\"conv_stride\": [1000000, 1000000, 1000000]",
         "absurd strides", "absurd", PF_ERROR_FORMAT},
        {"wav2vec2-ctc", "\"conv_bias\": false", "\"conv_bias\": true", "conv biases the checkpoint lacks", "conv.bias",
         PF_ERROR_FORMAT},
        {"hubert-ctc", "\"conv_bias\": true", "\"conv_bias\": false", "conv biases the config denies", "conv_bias is false",
         PF_ERROR_FORMAT},
        {"hubert-ctc", "\"feat_proj_layer_norm\": false", "\"feat_proj_layer_norm\": true", "a projection norm the checkpoint lacks",
         "feature_projection.layer_norm", PF_ERROR_FORMAT},
        {"wav2vec2-ctc", "\"num_conv_pos_embedding_groups\": 4", "\"num_conv_pos_embedding_groups\": 5",
         "groups that do not divide hidden_size", "num_conv_pos_embedding_groups", PF_ERROR_FORMAT},
        {"wav2vec2-ctc", "\"num_conv_pos_embedding_groups\": 4", "\"num_conv_pos_embedding_groups\": 2",
         "another positional conv shape", "pos_conv_embed", PF_ERROR_FORMAT},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (copy_fixture(cases[i].fixture)) return;
        edit_file("config.json", cases[i].from, cases[i].to);
        expect_load(cases[i].what, NULL, cases[i].want, cases[i].needle);
    }
    if (copy_fixture("xlsr-ctc")) return;
    rename_tensor("wav2vec2.encoder.layer_norm.weight", "wav2vec2.encoder.layer_norm.wexght");
    expect_load("no final norm", NULL, PF_ERROR_FORMAT, "encoder.layer_norm.weight");
    if (copy_fixture("wav2vec2-ctc")) return;
    rename_tensor("parametrizations.weight.original0", "parametrizations.weight.originalX");
    expect_load("the weight norm's g missing", NULL, PF_ERROR_FORMAT, "original0");
    if (copy_fixture("wav2vec2-ctc")) return;
    add_tensor("wav2vec2.quantizer.codevectors"); /* a pretraining checkpoint's quantizer */
    expect_load("a quantizer's tensor", NULL, PF_ERROR_UNSUPPORTED, "quantizer.codevectors");
    if (copy_fixture("wav2vec2-ctc")) return;
    add_tensor("wav2vec2.feature_extractor.conv_layers.3.conv.weight"); /* a conv layer conv_dim does not list */
    expect_load("a fourth conv layer", NULL, PF_ERROR_UNSUPPORTED, "conv_layers.3");
}

/* The text of CTC decoding row `row` of the work dir's model on the fixture's first waveform (NULL
   on failure, *result the failing call's). */
static char *work_ctc_text(pf_result *result) {
    char path[1100];
    snprintf(path, sizeof path, "%s/wav2vec2-ctc/samples.bin", test_fixtures);
    size_t n = 0;
    float *samples = test_read_floats(path, &n);
    pf_model *m = NULL;
    pf_encoding *e = NULL;
    char *text = NULL;
    pf_result r = samples ? pf_load(work_dir, NULL, &m) : PF_ERROR_IO;
    const float *rows[1] = {samples};
    int counts[1] = {(int)(n / 2)};
    if (!r) r = pf_encode_audio(m, rows, counts, 1, &e);
    if (!r) r = pf_ctc_decode(m, e, 0, &text);
    *result = r;
    pf_encoding_free(e);
    pf_free(m);
    free(samples);
    return text;
}

/* CTC decoding's vocabulary: special tokens from special_tokens_map.json where tokenizer_config.json
   is absent, do_lower_case, and vocab.json missing or malformed. Each spelling keeps transformers'
   text of the fixture (ctc_text.txt's first line). */
static void test_ctc_vocabulary(void) {
    char path[1100];
    snprintf(path, sizeof path, "%s/wav2vec2-ctc/ctc_text.txt", test_fixtures);
    size_t size = 0;
    char *want = test_read_file(path, &size);
    if (!want || !strchr(want, '\n')) {
        CHECK_MSG(0, "reading %s", path);
        free(want);
        return;
    }
    *strchr(want, '\n') = '\0';
    pf_result r = PF_OK;
    char *text = NULL;
    if (copy_fixture("wav2vec2-ctc")) return;
    snprintf(path, sizeof path, "%s/tokenizer_config.json", work_dir);
    unlink(path);
    edit_file("vocab.json", "\"<pad>\"", "\"<blank>\"");
    edit_file("vocab.json", "\"|\"", "\"#\"");
    write_work_file("special_tokens_map.json", "{\"pad_token\": {\"content\": \"<blank>\"}, \"word_delimiter_token\": \"#\"}");
    text = work_ctc_text(&r);
    CHECK_MSG(r == PF_OK && text && !strcmp(text, want), "special_tokens_map.json's blank and delimiter: %s \"%s\"",
              pf_result_string(r), text ? text : "");
    pf_string_free(text);
    if (copy_fixture("wav2vec2-ctc")) return;
    static const char *const letters[][2] = {{"\"a\"", "\"A\""}, {"\"b\"", "\"B\""}, {"\"c\"", "\"C\""}, {"\"d\"", "\"D\""},
                                             {"\"e\"", "\"E\""}, {"\"x\"", "\"X\""}, {"\"y\"", "\"Y\""}};
    for (size_t i = 0; i < sizeof letters / sizeof letters[0]; i++) edit_file("vocab.json", letters[i][0], letters[i][1]);
    edit_file("tokenizer_config.json", "\"do_lower_case\": false", "\"do_lower_case\": true");
    text = work_ctc_text(&r);
    CHECK_MSG(r == PF_OK && text && !strcmp(text, want), "do_lower_case: %s \"%s\"", pf_result_string(r), text ? text : "");
    pf_string_free(text);
    if (copy_fixture("wav2vec2-ctc")) return;
    snprintf(path, sizeof path, "%s/vocab.json", work_dir);
    unlink(path);
    text = work_ctc_text(&r);
    CHECK_MSG(r == PF_ERROR_IO && !text, "no vocab.json: %s", pf_result_string(r));
    if (copy_fixture("wav2vec2-ctc")) return;
    edit_file("vocab.json", "\"a\": 5", "\"a\": 6");
    text = work_ctc_text(&r);
    CHECK_MSG(r == PF_ERROR_FORMAT && !text, "two tokens of one id: %s", pf_result_string(r));
    if (copy_fixture("wav2vec2-ctc")) return;
    edit_file("vocab.json", "\"a\": 5", "\"a\": \"5\"");
    text = work_ctc_text(&r);
    CHECK_MSG(r == PF_ERROR_FORMAT && !text, "an id that is a string: %s", pf_result_string(r));
    free(want);
}

/* A bfloat16 checkpoint (hubert-ctc's model.bf16.safetensors): the front end and the blocks read
   16-bit tensors; the logits equal transformers' float32 logits of the rounded weights. */
/* Whisper's checkpoint holds what its config says: no key bias (a zero stands in; one in the file
   is a tensor we would not read), and the LM head where tie_word_embeddings is false. */
static void test_whisper_tensors(void) {
    if (copy_fixture("whisper")) return;
    add_tensor("model.encoder.layers.0.self_attn.k_proj.bias");
    expect_load("a key bias", NULL, PF_ERROR_UNSUPPORTED, "model.encoder.layers.0.self_attn.k_proj.bias");
    if (copy_fixture("whisper")) return;
    add_tensor("model.decoder.layers.1.encoder_attn.k_proj.bias");
    expect_load("a cross-attention key bias", NULL, PF_ERROR_UNSUPPORTED, "encoder_attn.k_proj.bias");
    if (copy_fixture("whisper")) return;
    edit_file("config.json", "\"tie_word_embeddings\": true", "\"tie_word_embeddings\": false");
    expect_load("an untied head the checkpoint lacks", NULL, PF_ERROR_FORMAT, "LM head");
    if (copy_fixture("whisper")) return;
    edit_file("config.json", "\"WhisperForConditionalGeneration\"", "\"WhisperForAudioClassification\"");
    expect_load("another head", NULL, PF_ERROR_UNSUPPORTED, "WhisperForAudioClassification");
}

/* Speech2Text's checkpoint: older files' saved sinusoids are buffers (the same numbers we compute),
   a convolution the config does not count and a head that tie_word_embeddings false needs are
   not. */
static void test_speech2text_tensors(void) {
    if (copy_fixture("speech2text-s2s")) return;
    add_tensor("model.encoder.embed_positions.weights");
    add_tensor("model.decoder.embed_positions.weights");
    pf_free(expect_load("saved sinusoids", NULL, PF_OK, NULL));
    if (copy_fixture("speech2text-s2s")) return;
    add_tensor("model.encoder.conv.conv_layers.2.weight");
    expect_load("a third convolution", NULL, PF_ERROR_UNSUPPORTED, "model.encoder.conv.conv_layers.2.weight");
    if (copy_fixture("speech2text-s2s")) return;
    edit_file("config.json", "\"tie_word_embeddings\": true", "\"tie_word_embeddings\": false");
    expect_load("an untied head the checkpoint lacks", NULL, PF_ERROR_FORMAT, "LM head");
    if (copy_fixture("speech2text-s2s")) return;
    edit_file("config.json", "\"Speech2TextForConditionalGeneration\"", "\"Speech2TextModel\"");
    expect_load("the bare model", NULL, PF_ERROR_UNSUPPORTED, "Speech2TextModel");
}

/* Speech2Text in bfloat16 (model.bf16.safetensors): the subsampler's and the blocks' 16-bit
   tensors; the teacher-forced logits equal transformers' float32 logits of the rounded weights. */
static void test_speech2text_bf16(void) {
    char path[1100], dst[1100], line[256];
    if (copy_fixture("speech2text-s2s")) return;
    snprintf(path, sizeof path, "%s/model.bf16.safetensors", work_dir);
    snprintf(dst, sizeof dst, "%s/model.safetensors", work_dir);
    CHECK(rename(path, dst) == 0);
    int frames[2] = {0, 0}, lengths[2] = {0, 0}, rows = 0;
    int32_t decoder[2][16];
    snprintf(path, sizeof path, "%s/reference.txt", work_dir);
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f)) { /* feature_frames F0 F1, then the decoder_ids rows */
        int ids[16];
        if (!strncmp(line, "feature_frames ", 15)) sscanf(line + 15, "%d %d", &frames[0], &frames[1]);
        if (!strncmp(line, "decoder_ids ", 12) && rows < 2 && (lengths[rows] = test_parse_ids(line + 12, ids, 16)) > 0) {
            for (int t = 0; t < lengths[rows]; t++) decoder[rows][t] = ids[t];
            rows++;
        }
    }
    if (f) fclose(f);
    size_t n = 0, count = 0;
    snprintf(path, sizeof path, "%s/fbank_features.bin", work_dir);
    float *features = test_read_floats(path, &n);
    snprintf(path, sizeof path, "%s/teacher_logits.bf16.bin", work_dir);
    float *want = test_read_floats(path, &count);
    pf_model *m = expect_load("a bfloat16 Speech2Text checkpoint", NULL, PF_OK, NULL);
    size_t vocab = (size_t)pf_get_info(m).vocab_size, width = (size_t)pf_get_info(m).num_mel_bins;
    int ok = m && features && want && rows == 2 && frames[0] > 0 && n == 2 * (size_t)frames[0] * width &&
             count == (size_t)(lengths[0] + lengths[1]) * vocab;
    CHECK_MSG(ok, "bf16 speech2text: the fixture's files");
    float *logits = ok ? (float *)malloc(count * sizeof(float)) : NULL;
    const float *feature_rows[2] = {features, features ? features + (size_t)frames[0] * width : NULL};
    const int32_t *dec[2] = {decoder[0], decoder[1]};
    pf_parallel_options po = pf_parallel_options_init();
    po.device = PF_DEVICE_CPU;
    po.max_batch = 2;
    pf_result r = logits ? pf_parallelize(m, 2, &po) : PF_ERROR_IO;
    if (!r) r = pf_forward_audio(m, feature_rows, frames, dec, lengths, 2, logits);
    CHECK_MSG(!logits || r == PF_OK, "bf16 speech2text: %s", pf_error_message(m));
    if (logits && !r) {
        float diff = test_max_abs_diff(logits, want, count);
        CHECK_MSG(diff <= 1e-4f, "bf16 speech2text: logits differ from transformers' by %g", diff);
    }
    pf_free(m);
    free(features), free(want), free(logits);
}

static void test_speech_bf16(void) {
    char path[1100], dst[1100];
    if (copy_fixture("hubert-ctc")) return;
    snprintf(path, sizeof path, "%s/model.bf16.safetensors", work_dir);
    snprintf(dst, sizeof dst, "%s/model.safetensors", work_dir);
    CHECK(rename(path, dst) == 0);
    snprintf(path, sizeof path, "%s/hubert-ctc/samples.bin", test_fixtures);
    size_t n = 0, count = 0;
    float *samples = test_read_floats(path, &n);
    snprintf(path, sizeof path, "%s/hubert-ctc/audio_logits.bf16.bin", test_fixtures);
    float *want = test_read_floats(path, &count);
    pf_model *m = expect_load("a bfloat16 speech checkpoint", NULL, PF_OK, NULL);
    pf_parallel_options po = pf_parallel_options_init();
    po.device = PF_DEVICE_CPU;
    po.max_batch = 2;
    pf_encoding *e = NULL;
    pf_result r = m && samples && want ? pf_parallelize(m, 2, &po) : PF_ERROR_IO;
    const float *rows[2] = {samples, samples ? samples + n / 2 : NULL};
    int counts[2] = {(int)(n / 2), (int)(n / 2)};
    if (!r) r = pf_encode_audio(m, rows, counts, 2, &e);
    CHECK_MSG(r == PF_OK && e->offsets[2] * (size_t)13 == count, "bf16 hubert: %s", pf_error_message(m));
    if (!r && e->offsets[2] * (size_t)13 == count) {
        float diff = test_max_abs_diff(e->logits, want, count);
        CHECK_MSG(diff <= 1e-4f, "bf16 hubert: logits differ from transformers' by %g", diff);
    }
    pf_encoding_free(e);
    pf_free(m);
    free(samples);
    free(want);
}

/* Qwen3 (issue 32): its head_dim, attention_bias, qk-norm tensors and sliding window keys, each
   honoured or refused by name. */
static void test_qwen3_keys(void) {
    if (copy_fixture("qwen3")) return;
    edit_file("config.json", "\"head_dim\": 12", "\"head_dim\": null");
    expect_load("Qwen3 with head_dim null", NULL, PF_ERROR_FORMAT, "head_dim");
    if (copy_fixture("qwen3")) return;
    edit_file("config.json", "\"head_dim\": 12,", "");
    expect_load("Qwen3 without head_dim (128: not the file's q_proj)", NULL, PF_ERROR_FORMAT, "q_proj");
    if (copy_fixture("qwen3")) return;
    rename_tensor("model.layers.1.self_attn.k_norm.weight", "model.layers.1.self_attn.k_nrm_.weight");
    expect_load("Qwen3 without a k_norm", NULL, PF_ERROR_FORMAT, "k_norm");
    if (copy_fixture("qwen3")) return;
    edit_file("config.json", "\"attention_bias\": false", "\"attention_bias\": true");
    expect_load("Qwen3 attention_bias true, no biases in the file", NULL, PF_ERROR_FORMAT, "attention_bias is true");
    if (copy_fixture("qwen3-window-bias")) return;
    edit_file("config.json", "\"attention_bias\": true", "\"attention_bias\": false");
    expect_load("Qwen3 biases in the file, attention_bias false", NULL, PF_ERROR_FORMAT, "attention_bias is false");
    /* the window is read as Qwen2's: use_sliding_window false leaves it out, max_window_layers moves it */
    if (copy_fixture("qwen3-window-bias")) return;
    check_work_logits("Qwen3 in the hub spelling", "qwen3-window-bias", 1);
    edit_file("config.json", "\"use_sliding_window\": true", "\"use_sliding_window\": false");
    check_work_logits("Qwen3 with use_sliding_window false", "qwen3-window-bias", 0);
    if (copy_fixture("qwen3-window-bias")) return;
    edit_file("config.json", "\"max_window_layers\": 1", "\"max_window_layers\": 0");
    check_work_logits("Qwen3 with max_window_layers 0", "qwen3-window-bias", 0);
}

/* OLMo (issue 32): clip_qkv honoured (null: none) or refused by name; its norms have no tensors. */
static void test_olmo_keys(void) {
    if (copy_fixture("olmo-clip-qkv")) return;
    edit_file("config.json", "\"clip_qkv\": 3.0", "\"clip_qkv\": null");
    check_work_logits("OLMo with clip_qkv null", "olmo-clip-qkv", 0);
    if (copy_fixture("olmo-clip-qkv")) return;
    edit_file("config.json", "\"clip_qkv\": 3.0", "\"clip_qkv\": 0");
    expect_load("OLMo with clip_qkv 0", NULL, PF_ERROR_UNSUPPORTED, "clip_qkv");
    if (copy_fixture("olmo-clip-qkv")) return;
    edit_file("config.json", "\"clip_qkv\": 3.0", "\"clip_qkv\": -2");
    expect_load("OLMo with clip_qkv -2", NULL, PF_ERROR_UNSUPPORTED, "clip_qkv");
    if (copy_fixture("olmo")) return;
    add_tensor("model.layers.0.input_layernorm.weight");
    expect_load("OLMo with a norm weight", NULL, PF_ERROR_UNSUPPORTED, "input_layernorm");
    if (copy_fixture("olmo-clip-qkv")) return;
    edit_file("config.json", "\"attention_bias\": true", "\"attention_bias\": false");
    expect_load("OLMo biases in the file, attention_bias false", NULL, PF_ERROR_FORMAT, "attention_bias is false");
}

/* Llama 4 (issue 33): layer_types, no_rope_layers and moe_layers absent are their defaults (from
   no_rope_layer_interval and interleave_moe_layer_step); the chunk, the temperature and the qk-norm
   change the logits; a null chunk, a floor_scale below 1 and a moe_layers list that disagrees with
   the tensors are refused. */
/* Mistral3: transformers 5 ties the LM head by the top-level tie_word_embeddings (true by default over
   text_config's false, and its checkpoints then hold no head); the hub's, written by transformers 4,
   have no top-level key and are untied, as their text_config says. A tied config over a head of the
   checkpoint's own is refused (transformers 5 would drop the head). */
/* PhiMoE: sparsemixer routes two experts whatever num_experts_per_tok says (another value refused);
   one mscale for every length (Phi-3.5-MoE's two are equal; different ones refused); lm_head_bias
   false over a checkpoint with the bias refused, as any tensor no slot takes. */
static void test_phimoe_keys(void) {
    if (copy_fixture("phimoe")) return;
    edit_file("config.json", "\"num_experts_per_tok\": 2", "\"num_experts_per_tok\": 1");
    expect_load("PhiMoE with num_experts_per_tok 1", NULL, PF_ERROR_UNSUPPORTED, "num_experts_per_tok");
    if (copy_fixture("phimoe")) return;
    edit_file("config.json", "\"long_mscale\": 1.25", "\"long_mscale\": 1.5");
    expect_load("PhiMoE with a long_mscale of its own", NULL, PF_ERROR_UNSUPPORTED, "short_mscale 1.25 and long_mscale 1.5 differ");
    if (copy_fixture("phimoe")) return;
    edit_file("config.json", "\"long_mscale\": 1.25,", "");
    expect_load("PhiMoE without long_mscale", NULL, PF_ERROR_FORMAT, "\"short_mscale\" and \"long_mscale\"");
    if (copy_fixture("phimoe")) return;
    edit_file("config.json", "\"lm_head_bias\": true", "\"lm_head_bias\": false");
    expect_load("PhiMoE with lm_head_bias false over its bias", NULL, PF_ERROR_FORMAT, "config.json says lm_head_bias is false");
}

static void test_mistral3_tie(void) {
    static const char top[] = "  \"tie_word_embeddings\": false,\n  \"transformers_version\"";
    if (copy_fixture("mistral3")) return;
    check_work_logits("Mistral3 as saved", "mistral3", 1);
    edit_file("config.json", top, "  \"transformers_version\"");
    check_work_logits("Mistral3 without the top-level tie_word_embeddings (the hub's)", "mistral3", 1);
    if (copy_fixture("mistral3")) return;
    edit_file("config.json", top, "  \"tie_word_embeddings\": true,\n  \"transformers_version\"");
    expect_load("Mistral3 tied at the top level over a head of its own", NULL, PF_ERROR_FORMAT,
                "tie_word_embeddings is true, but the checkpoint's LM head differs");
}

static void test_llama4_keys(void) {
    static const char layer_types[] = "\"layer_types\": [\n    \"chunked_attention\",\n    \"chunked_attention\",\n"
                                      "    \"full_attention\",\n    \"chunked_attention\"\n  ]";
    static const char moe_layers[] = "\"moe_layers\": [\n    1,\n    3\n  ]";
    static const char no_rope_layers[] = "\"no_rope_layers\": [\n    1,\n    1,\n    0,\n    1\n  ]";
    if (copy_fixture("llama4")) return;
    check_work_logits("Llama 4 as saved", "llama4", 1);
    edit_file("config.json", layer_types, "\"layer_types\": null");
    edit_file("config.json", no_rope_layers, "\"no_rope_layers\": null");
    edit_file("config.json", moe_layers, "\"moe_layers\": null");
    check_work_logits("Llama 4 without layer_types, no_rope_layers and moe_layers", "llama4", 1);
    if (copy_fixture("llama4")) return;
    edit_file("config.json", layer_types, "\"layer_types\": null");
    edit_file("config.json", no_rope_layers, "\"no_rope_layers\": []"); /* Llama4TextConfig: an empty list is the default */
    check_work_logits("Llama 4 with no_rope_layers []", "llama4", 1);
    if (copy_fixture("llama4")) return;
    edit_file("config.json", moe_layers, "\"moe_layers\": []"); /* a list, even empty, names the layers with experts */
    expect_load("Llama 4 with moe_layers [] over experts", NULL, PF_ERROR_FORMAT, "layers.1.feed_forward");
    if (copy_fixture("llama4")) return;
    edit_file("config.json", "\"attention_chunk_size\": 4", "\"attention_chunk_size\": 64");
    check_work_logits("Llama 4 with chunks of 64", "llama4", 0);
    if (copy_fixture("llama4")) return;
    edit_file("config.json", "\"attn_temperature_tuning\": true", "\"attn_temperature_tuning\": false");
    check_work_logits("Llama 4 without the attention temperature", "llama4", 0);
    if (copy_fixture("llama4")) return;
    edit_file("config.json", "\"use_qk_norm\": true", "\"use_qk_norm\": false");
    check_work_logits("Llama 4 without the qk-norm", "llama4", 0);
    if (copy_fixture("llama4")) return;
    edit_file("config.json", "\"attention_chunk_size\": 4", "\"attention_chunk_size\": null");
    expect_load("Llama 4 with attention_chunk_size null", NULL, PF_ERROR_FORMAT, "attention_chunk_size");
    if (copy_fixture("llama4")) return;
    edit_file("config.json", "\"floor_scale\": 3", "\"floor_scale\": 0");
    expect_load("Llama 4 with floor_scale 0", NULL, PF_ERROR_UNSUPPORTED, "floor_scale");
    if (copy_fixture("llama4")) return;
    edit_file("config.json", moe_layers, "\"moe_layers\": [1]");
    expect_load("Llama 4 with moe_layers [1] over experts in layer 3", NULL, PF_ERROR_FORMAT, "layers.3.feed_forward");
}

/* gpt-oss (issue 33): swiglu_limit and swiglu_alpha honoured; layer_types null is its default
   (sliding, full, ...); no rope_parameters (transformers then assumes YaRN factor 32) and a
   quantization_config we do not read refused by name (the hub's mxfp4 is: test_mxfp4). */
static void test_gpt_oss_keys(void) {
    static const char layer_types[] = "\"layer_types\": [\n    \"sliding_attention\",\n    \"full_attention\",\n"
                                      "    \"sliding_attention\",\n    \"full_attention\"\n  ]";
    if (copy_fixture("gpt_oss")) return;
    check_work_logits("gpt-oss as saved", "gpt_oss", 1);
    edit_file("config.json", "\"swiglu_limit\": 3.0", "\"swiglu_limit\": 7.0");
    check_work_logits("gpt-oss with swiglu_limit 7", "gpt_oss", 0);
    if (copy_fixture("gpt_oss")) return;
    edit_file("config.json", "\"swiglu_limit\": 3.0", "\"swiglu_limit\": 0");
    expect_load("gpt-oss with swiglu_limit 0", NULL, PF_ERROR_UNSUPPORTED, "swiglu_limit");
    if (copy_fixture("gpt_oss")) return;
    edit_file("config.json", "\"swiglu_alpha\": 1.702", "\"swiglu_alpha\": 1.0");
    check_work_logits("gpt-oss with swiglu_alpha 1", "gpt_oss", 0);
    if (copy_fixture("gpt_oss")) return;
    edit_file("config.json", layer_types, "\"layer_types\": null");
    check_work_logits("gpt-oss with layer_types null", "gpt_oss", 1);
    if (copy_fixture("gpt_oss")) return;
    edit_file("config.json", layer_types, "\"layer_types\": [\"full_attention\", \"full_attention\", \"full_attention\", \"full_attention\"]");
    check_work_logits("gpt-oss with full attention everywhere", "gpt_oss", 0);
    if (copy_fixture("gpt_oss")) return;
    edit_file("config.json", "\"rope_parameters\"", "\"other_parameters\"");
    expect_load("gpt-oss without rope_parameters", NULL, PF_ERROR_UNSUPPORTED, "rope_parameters");
    if (copy_fixture("gpt_oss")) return;
    edit_file("config.json", "\"use_cache\": true", "\"use_cache\": true, \"quantization_config\": {\"quant_method\": \"bitsandbytes\"}");
    expect_load("gpt-oss quantized by bitsandbytes", NULL, PF_ERROR_UNSUPPORTED, "quant_method \"bitsandbytes\"");
}

/* SmolLM3 (issue 32): no_rope_layers and no_rope_layer_interval honoured (the window on the NoPE
   layers without layer_types) or refused by name. */
static void test_smollm3_keys(void) {
    if (copy_fixture("smollm3")) return;
    edit_file("config.json", "\"no_rope_layers\": [\n    1,\n    0,\n    1\n  ]", "\"no_rope_layers\": [1, 0]");
    expect_load("SmolLM3 with no_rope_layers for 2 layers", NULL, PF_ERROR_FORMAT, "no_rope_layers");
    if (copy_fixture("smollm3")) return;
    edit_file("config.json", "\"no_rope_layers\": [\n    1,\n    0,\n    1\n  ]", "\"no_rope_layers\": [1, 2, 1]");
    expect_load("SmolLM3 with a 2 in no_rope_layers", NULL, PF_ERROR_FORMAT, "no_rope_layers");
    if (copy_fixture("smollm3")) return;
    edit_file("config.json", "\"no_rope_layers\": [\n    1,\n    0,\n    1\n  ]", "\"no_rope_layers\": [1, 1, 1]");
    check_work_logits("SmolLM3 with rotary on every layer", "smollm3", 0);
    if (copy_fixture("smollm3-window")) return;
    check_work_logits("SmolLM3 without no_rope_layers and layer_types", "smollm3-window", 1);
    edit_file("config.json", "\"no_rope_layer_interval\": 2", "\"no_rope_layer_interval\": 0");
    expect_load("SmolLM3 with no_rope_layer_interval 0", NULL, PF_ERROR_FORMAT, "no_rope_layer_interval");
    if (copy_fixture("smollm3-window")) return;
    edit_file("config.json", "\"no_rope_layer_interval\": 2", "\"no_rope_layer_interval\": 4");
    check_work_logits("SmolLM3 with no_rope_layer_interval 4", "smollm3-window", 0);
    if (copy_fixture("smollm3-window")) return;
    edit_file("config.json", "\"use_sliding_window\": true", "\"use_sliding_window\": false");
    check_work_logits("SmolLM3 with use_sliding_window false", "smollm3-window", 0);
}

/* OLMo 2 (issue 32): its norms are the post-sublayer ones (a pre-norm tensor is refused);
   attention_bias is honoured both ways. */
static void test_olmo2_keys(void) {
    if (copy_fixture("olmo2")) return;
    add_tensor("model.layers.1.input_layernorm.weight");
    expect_load("OLMo 2 with an input_layernorm", NULL, PF_ERROR_UNSUPPORTED, "input_layernorm");
    if (copy_fixture("olmo2")) return;
    edit_file("config.json", "\"attention_bias\": false", "\"attention_bias\": true");
    expect_load("OLMo 2 attention_bias true, no biases in the file", NULL, PF_ERROR_FORMAT, "attention_bias is true");
    if (copy_fixture("olmo2-bias")) return;
    edit_file("config.json", "\"attention_bias\": true", "\"attention_bias\": false");
    expect_load("OLMo 2 biases in the file, attention_bias false", NULL, PF_ERROR_FORMAT, "attention_bias is false");
}

/* Gemma, Gemma 2 and Gemma 3's keys: each refused value named, each honoured one changing the
   logits as transformers' math says (the fixtures' own values reproduce transformers'). */
static void test_gemma_keys(void) {
    if (copy_fixture("gemma")) return;
    edit_file("config.json", "\"use_bidirectional_attention\": null", "\"use_bidirectional_attention\": true");
    expect_load("Gemma with bidirectional attention", NULL, PF_ERROR_UNSUPPORTED, "use_bidirectional_attention");
    if (copy_fixture("gemma")) return; /* GemmaConfig turns "gelu" into gelu_pytorch_tanh */
    edit_file("config.json", "\"hidden_act\": \"gelu_pytorch_tanh\"", "\"hidden_act\": \"gelu\"");
    check_work_logits("Gemma with hidden_act gelu", "gemma", 1);
    if (copy_fixture("gemma2")) return;
    edit_file("config.json", "\"query_pre_attn_scalar\": 24", "\"query_pre_attn_scalar\": null");
    expect_load("Gemma 2 with a null query_pre_attn_scalar", NULL, PF_ERROR_FORMAT, "query_pre_attn_scalar");
    if (copy_fixture("gemma2")) return;
    edit_file("config.json", "\"attn_logit_softcapping\": 4.0", "\"attn_logit_softcapping\": null");
    check_work_logits("Gemma 2 without attention soft-capping", "gemma2", 0);
    if (copy_fixture("gemma2")) return;
    edit_file("config.json", "\"final_logit_softcapping\": 6.0", "\"final_logit_softcapping\": null");
    check_work_logits("Gemma 2 without final soft-capping", "gemma2", 0);
    /* the fixture has no layer_types (sliding, full, sliding by the pattern): the same written out */
    if (copy_fixture("gemma2")) return;
    edit_file("config.json", "\"use_bidirectional_attention\"",
              "\"layer_types\": [\"sliding_attention\", \"full_attention\", \"sliding_attention\"], "
              "\"use_bidirectional_attention\"");
    check_work_logits("Gemma 2 with its layer_types written out", "gemma2", 1);
    if (copy_fixture("gemma2")) return;
    edit_file("config.json", "\"use_bidirectional_attention\"",
              "\"layer_types\": [\"full_attention\", \"sliding_attention\", \"sliding_attention\"], "
              "\"use_bidirectional_attention\"");
    check_work_logits("Gemma 2 with other layer_types", "gemma2", 0);
    if (copy_fixture("gemma3_text")) return;
    edit_file("config.json", "\"rope_theta\": 10000.0,\n      \"rope_type\": \"default\"",
              "\"factor\": 2.0, \"rope_theta\": 10000.0, \"rope_type\": \"linear\"");
    expect_load("Gemma 3 with a scaled rope on its sliding layers", NULL, PF_ERROR_UNSUPPORTED, "sliding_attention");
    if (copy_fixture("gemma3_text")) return;
    edit_file("config.json", "\"rope_theta\": 10000.0,\n      \"rope_type\": \"default\"",
              "\"rope_theta\": 1000000.0, \"rope_type\": \"default\"");
    check_work_logits("Gemma 3 with the global base on its sliding layers", "gemma3_text", 0);
    if (copy_fixture("gemma3_text-hub")) return;
    edit_file("config.json", "\"sliding_window_pattern\": 6", "\"sliding_window_pattern\": null");
    expect_load("Gemma 3 with a null sliding_window_pattern", NULL, PF_ERROR_FORMAT, "sliding_window_pattern");
    if (copy_fixture("gemma3_text-hub")) return;
    edit_file("config.json", "\"sliding_window_pattern\": 6", "\"sliding_window_pattern\": 3");
    check_work_logits("Gemma 3 with a global layer every 3", "gemma3_text-hub", 0);
    if (copy_fixture("gemma3_text-hub")) return; /* 1e4 is rope_local_base_freq's default */
    edit_file("config.json", "\"rope_local_base_freq\": 10000.0,", "");
    check_work_logits("Gemma 3 without rope_local_base_freq", "gemma3_text-hub", 1);
    if (copy_fixture("gemma3_text-hub")) return;
    edit_file("config.json", "\"rope_scaling\": {", "\"rope_scaling\": {\"rope_theta\": 10000.0, ");
    check_work_logits("Gemma 3 with rope_scaling's own rope_theta", "gemma3_text-hub", 0);
}

/* A multimodal checkpoint's text model (model_type gemma3): its other class refused, its vision
   tensors left unread under their prefixes only, its config from text_config alone. */
static void test_text_tower_keys(void) {
    if (copy_fixture("gemma3-multimodal")) return;
    edit_file("config.json", "\"Gemma3ForConditionalGeneration\"", "\"Gemma3ForSequenceClassification\"");
    expect_load("Gemma 3 multimodal as a classifier", NULL, PF_ERROR_UNSUPPORTED, "ForConditionalGeneration");
    if (copy_fixture("gemma3-multimodal")) return;
    edit_file("config.json", "\"text_config\"", "\"text_cfg\"");
    expect_load("Gemma 3 multimodal without text_config", NULL, PF_ERROR_FORMAT, "text_config");
    if (copy_fixture("gemma3-multimodal")) return;
    edit_file("config.json", "\"model_type\": \"gemma3_text\"", "\"model_type\": \"gemma2\"");
    expect_load("Gemma 3 multimodal with a Gemma 2 text model", NULL, PF_ERROR_UNSUPPORTED, "\"gemma2\"");
    if (copy_fixture("gemma3-multimodal")) return; /* a vision tensor outside the tower's prefixes */
    rename_tensor("vision_tower.post_layernorm.bias", "vision_towxr.post_layernorm.bias");
    expect_load("Gemma 3 multimodal with a tensor outside its towers", NULL, PF_ERROR_UNSUPPORTED, "vision_towxr");
    if (copy_fixture("gemma3-multimodal")) return; /* the text model's own tensors are still all needed */
    rename_tensor("language_model.model.layers.0.self_attn.q_norm.weight", "language_model.model.layers.0.self_attn.q_nxrm.weight");
    expect_load("Gemma 3 multimodal with a renamed text tensor", NULL, PF_ERROR_FORMAT, "q_norm");
    if (copy_fixture("gemma3-multimodal")) return; /* the text model's keys are text_config's */
    edit_file("config.json", "\"query_pre_attn_scalar\": 16", "\"query_pre_attn_scalar\": 12");
    check_work_logits("Gemma 3 multimodal with another query_pre_attn_scalar", "gemma3-multimodal", 0);
    if (copy_fixture("gemma3-multimodal")) return; /* untied: the head one level above the text model */
    edit_file("config.json", "\"tie_word_embeddings\": true", "\"tie_word_embeddings\": false"); /* text_config's, first */
    add_tensor("language_model.lm_head.weight");
    expect_load("Gemma 3 multimodal untied, with a one-number head", NULL, PF_ERROR_FORMAT, "'language_model.lm_head.weight'");
}

/* DeepSeek's latent attention: MoE layers are refused until that block joins, as are the keys
   whose other values we do not compute; the ones that change the math do change the logits. */
static void test_deepseek_keys(void) {
    if (copy_fixture("deepseek_v2")) return;
    edit_file("config.json", "\"first_k_dense_replace\": 2", "\"first_k_dense_replace\": 1");
    expect_load("DeepSeek-V2 with a mixture-of-experts layer and no num_experts_per_tok", NULL, PF_ERROR_FORMAT, "0 per token");
    /* the mixtures' routing: every key that changes it honoured or refused */
    if (copy_fixture("deepseek_v2-moe")) return;
    edit_file("config.json", "\"group_limited_greedy\"", "\"noaux_tc\"");
    expect_load("DeepSeek-V2 with topk_method noaux_tc", NULL, PF_ERROR_UNSUPPORTED, "topk_method");
    if (copy_fixture("deepseek_v2-moe")) return;
    edit_file("config.json", "\"group_limited_greedy\"", "\"greedy\"");
    check_work_logits("DeepSeek-V2 routing without the group limit (greedy)", "deepseek_v2-moe", 0);
    if (copy_fixture("deepseek_v2-moe")) return;
    edit_file("config.json", "\"norm_topk_prob\": false", "\"norm_topk_prob\": true");
    expect_load("DeepSeek-V2 with norm_topk_prob", NULL, PF_ERROR_UNSUPPORTED, "norm_topk_prob");
    if (copy_fixture("deepseek_v2-moe")) return;
    edit_file("config.json", "\"n_group\": 4", "\"moe_layer_freq\": 2, \"n_group\": 4");
    expect_load("DeepSeek-V2 with moe_layer_freq 2", NULL, PF_ERROR_UNSUPPORTED, "moe_layer_freq");
    if (copy_fixture("deepseek_v2-moe")) return;
    edit_file("config.json", "\"n_shared_experts\": 2", "\"n_shared_experts\": null");
    expect_load("DeepSeek-V2 without shared experts but with their tensors", NULL, PF_ERROR_FORMAT, "shared_experts");
    if (copy_fixture("deepseek_v3-moe")) return;
    edit_file("config.json", "\"n_group\": 4", "\"n_group\": 3");
    expect_load("DeepSeek-V3 with 8 experts in 3 groups", NULL, PF_ERROR_FORMAT, "n_group");
    if (copy_fixture("deepseek_v3-moe")) return;
    edit_file("config.json", "\"norm_topk_prob\": true", "\"norm_topk_prob\": false");
    check_work_logits("DeepSeek-V3 without renormalised weights", "deepseek_v3-moe", 0);
    if (copy_fixture("deepseek_v3-moe")) return;
    edit_file("config.json", "\"topk_group\": 2", "\"topk_group\": 4");
    check_work_logits("DeepSeek-V3 without the group limit", "deepseek_v3-moe", 0);
    if (copy_fixture("deepseek_v3-moe")) return; /* a multi-token prediction layer past the model's: unread */
    add_tensor("model.layers.3.eh_proj.weight");
    check_work_logits("DeepSeek-V3 with a multi-token prediction layer", "deepseek_v3-moe", 1);
    if (copy_fixture("deepseek_v3-moe")) return;
    add_tensor("model.layers.3.eh_proj.weight");
    edit_file("config.json", "\"num_nextn_predict_layers\": 1", "\"num_nextn_predict_layers\": 0");
    expect_load("DeepSeek-V3 with a layer past the model's and no multi-token prediction", NULL, PF_ERROR_UNSUPPORTED,
                "model.layers.3.eh_proj.weight");
    if (copy_fixture("deepseek_v3-moe")) return;
    rename_tensor("model.layers.1.mlp.gate.e_score_correction_bias", "model.layers.1.mlp.gate.e_score_correction_biax");
    expect_load("DeepSeek-V3 without a choice bias", NULL, PF_ERROR_FORMAT, "e_score_correction_bias");
    if (copy_fixture("deepseek_v3")) return;
    edit_file("config.json", "\"first_k_dense_replace\": 2,", "");
    pf_free(expect_load("DeepSeek-V3 without first_k_dense_replace (its default 3 covers both layers)", NULL, PF_OK, NULL));
    if (copy_fixture("deepseek_v3")) return;
    edit_file("config.json", "\"rope_interleave\": true", "\"rope_interleave\": false");
    expect_load("DeepSeek-V3 with rotary halves", NULL, PF_ERROR_UNSUPPORTED, "rope_interleave");
    if (copy_fixture("deepseek_v3")) return;
    edit_file("config.json", "\"num_key_value_heads\": 5", "\"num_key_value_heads\": 1");
    expect_load("DeepSeek-V3 with fewer key/value heads", NULL, PF_ERROR_UNSUPPORTED, "num_key_value_heads");
    if (copy_fixture("deepseek_v3")) return;
    edit_file("config.json", "\"q_lora_rank\": 16", "\"q_lora_rank\": null");
    expect_load("DeepSeek-V3 with low-rank q tensors and q_lora_rank null", NULL, PF_ERROR_FORMAT, "q_proj.weight");
    if (copy_fixture("deepseek_v2")) return;
    edit_file("config.json", "\"mscale_all_dim\": 0.707", "\"mscale_all_dim\": 0");
    check_work_logits("DeepSeek-V2 without mscale_all_dim", "deepseek_v2", 0);
    if (copy_fixture("deepseek_v2")) return;
    edit_file("config.json", "\"mscale_all_dim\": 0.707", "\"mscale_all_dim\": 0.707");
    check_work_logits("DeepSeek-V2 as saved", "deepseek_v2", 1);
}

void test_config(void) {
    snprintf(work_dir, sizeof work_dir, "/tmp/pf_config_XXXXXX");
    if (!mkdtemp(work_dir)) {
        CHECK_MSG(0, "mkdtemp");
        return;
    }
    test_tensor_accounting();
    test_speech2text_tensors();
    test_speech2text_bf16();
    test_refused_keys();
    test_hub_spellings();
    test_refused_values();
    test_deberta_refusals();
    test_squeezebert_refusals();
    test_convbert_refusals();
    test_funnel_refusals();
    test_big_bird_refusals();
    test_bigbird_pegasus_refusals();
    test_xlnet_refusals();
    test_transfo_xl_refusals();
    test_reformer_refusals();
    test_xlm_refusals();
    test_layoutlm_refusals();
    test_visual_bert_refusals();
    test_luke_refusals();
    test_tapas_refusals();
    test_longformer_refusals();
    test_prophetnet_refusals();
    test_mobilebert_refusals();
    test_fused_families();
    test_other_formats();
    test_bare_encoder_under_head_name();
    test_generation_config();
    test_seq2seq_refusals();
    test_suppress_lists();
    test_speech_refusals();
    test_ctc_vocabulary();
    test_speech_bf16();
    test_whisper_tensors();
    test_qwen3_keys();
    test_olmo_keys();
    test_gpt_oss_keys();
    test_llama4_keys();
    test_mistral3_tie();
    test_phimoe_keys();
    test_smollm3_keys();
    test_olmo2_keys();
    test_gemma_keys();
    test_text_tower_keys();
    test_deepseek_keys();
    empty_work_dir();
    rmdir(work_dir);
}
