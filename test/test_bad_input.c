/* Bad input: every malformed or lying file gets a pf_result and a message naming the file and the
   tensor, never a crash or a leak (the asan run checks the latter). The files are written here,
   from a tiny valid GPT-2 checkpoint that is first checked to load. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../parallelformers.h"
#include "test.h"

typedef enum {
    MUT_NONE,
    MUT_TRUNCATED,          /* the file cut short inside the data */
    MUT_HEADER_PAST_END,    /* header length larger than the file */
    MUT_HEADER_HUGE,        /* header length near 2^64 */
    MUT_TINY_FILE,          /* fewer than 8 bytes */
    MUT_BAD_JSON,           /* header is not JSON */
    MUT_OFFSETS_OUT,        /* a tensor's end offset beyond the data */
    MUT_OFFSETS_BACKWARDS,  /* end before begin */
    MUT_WRONG_DTYPE_SIZE,   /* F16 declared for F32 bytes */
    MUT_UNKNOWN_DTYPE,      /* F64 (a dtype we do not read) for a weight the model needs */
    MUT_MISSING_TENSOR,     /* ln_f.bias left out */
    MUT_WRONG_SHAPE,        /* c_attn.weight transposed */
    MUT_OVERLAP,            /* two tensors share bytes */
    MUT_BAD_SHAPE_VALUE,    /* a negative dimension */
    MUT_NOT_OBJECT          /* header is a JSON array */
} mutation;

typedef struct spec {
    const char *name;
    int rows, cols; /* cols 0: a vector */
} spec;

/* n_embd 4, n_head 2, n_layer 1, n_positions 4, vocab 5, MLP 16 */
static const spec tensors[] = {
    {"transformer.wte.weight", 5, 4},          {"transformer.wpe.weight", 4, 4},
    {"transformer.h.0.ln_1.weight", 4, 0},     {"transformer.h.0.ln_1.bias", 4, 0},
    {"transformer.h.0.attn.c_attn.weight", 4, 12}, {"transformer.h.0.attn.c_attn.bias", 12, 0},
    {"transformer.h.0.attn.c_proj.weight", 4, 4},  {"transformer.h.0.attn.c_proj.bias", 4, 0},
    {"transformer.h.0.ln_2.weight", 4, 0},     {"transformer.h.0.ln_2.bias", 4, 0},
    {"transformer.h.0.mlp.c_fc.weight", 4, 16}, {"transformer.h.0.mlp.c_fc.bias", 16, 0},
    {"transformer.h.0.mlp.c_proj.weight", 16, 4}, {"transformer.h.0.mlp.c_proj.bias", 4, 0},
    {"transformer.ln_f.weight", 4, 0},         {"transformer.ln_f.bias", 4, 0},
};
#define NUM_TENSORS (sizeof tensors / sizeof tensors[0])

static const char *good_config =
    "{\"model_type\": \"gpt2\", \"n_embd\": 4, \"n_head\": 2, \"n_layer\": 1, \"n_positions\": 4,"
    " \"vocab_size\": 5, \"n_inner\": null, \"eos_token_id\": 4}";

static void write_text(const char *dir, const char *name, const char *text) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) return;
    fwrite(text, 1, strlen(text), f);
    fclose(f);
}

/* Writes DIR/NAME as a safetensors file of `tensors`, with one mutation applied. */
static void write_safetensors(const char *dir, const char *name, mutation mut, size_t first, size_t last) {
    char header[8192] = "{";
    size_t offset = 0, len = 1;
    for (size_t i = first; i < last; i++) {
        const spec *t = &tensors[i];
        if (mut == MUT_MISSING_TENSOR && strstr(t->name, "ln_f.bias")) continue;
        size_t numel = (size_t)t->rows * (t->cols ? t->cols : 1), bytes = numel * 4;
        const char *dtype = "F32";
        if (mut == MUT_WRONG_DTYPE_SIZE && i == first + 2) dtype = "F16";
        if (mut == MUT_UNKNOWN_DTYPE && i == first) dtype = "F64";
        char shape[64];
        if (mut == MUT_WRONG_SHAPE && strstr(t->name, "c_attn.weight"))
            snprintf(shape, sizeof shape, "[%d, %d]", t->cols, t->rows);
        else if (mut == MUT_BAD_SHAPE_VALUE && i == first + 1)
            snprintf(shape, sizeof shape, "[-4, 4]");
        else if (t->cols)
            snprintf(shape, sizeof shape, "[%d, %d]", t->rows, t->cols);
        else
            snprintf(shape, sizeof shape, "[%d]", t->rows);
        size_t begin = offset, end = offset + bytes;
        if (mut == MUT_OFFSETS_OUT && i == last - 1) end += 1000;
        if (mut == MUT_OFFSETS_BACKWARDS && i == first + 3) end = begin - 4;
        if (mut == MUT_OVERLAP && i == first + 1) begin -= 4, end -= 4;
        len += (size_t)snprintf(header + len, sizeof header - len, "%s\"%s\": {\"dtype\": \"%s\", \"shape\": %s, \"data_offsets\": [%zu, %zu]}",
                                len > 1 ? ", " : "", t->name, dtype, shape, begin, end);
        offset += bytes;
    }
    len += (size_t)snprintf(header + len, sizeof header - len, ", \"__metadata__\": {\"format\": \"pt\"}}");
    if (mut == MUT_BAD_JSON) header[0] = 'x';
    if (mut == MUT_NOT_OBJECT) len = (size_t)snprintf(header, sizeof header, "[1, 2, 3]");

    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) return;
    if (mut == MUT_TINY_FILE) {
        fwrite("\x10\0\0", 1, 3, f);
        fclose(f);
        return;
    }
    unsigned long long header_len = len;
    if (mut == MUT_HEADER_PAST_END) header_len = len + offset + 100;
    if (mut == MUT_HEADER_HUGE) header_len = 0xfffffffffffffff0ull;
    unsigned char le[8];
    for (int i = 0; i < 8; i++) le[i] = (unsigned char)(header_len >> (8 * i));
    fwrite(le, 1, 8, f);
    fwrite(header, 1, len, f);
    size_t data_bytes = mut == MUT_TRUNCATED ? offset / 2 : offset;
    for (size_t i = 0; i < data_bytes / 4; i++) {
        float v = (float)((i * 7919) % 13) * 0.05f - 0.3f; /* small, varied values */
        fwrite(&v, 4, 1, f);
    }
    fclose(f);
}

static char tmp_dir[256];

static void clean_dir(void) {
    const char *names[] = {"config.json", "model.safetensors", "model.safetensors.index.json", "a.safetensors",
                           "b.safetensors", "tokenizer.json"};
    char path[1024];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", tmp_dir, names[i]);
        unlink(path);
    }
}

/* Loads tmp_dir and checks the result code and that the message holds `needle`. */
static void expect_load(const char *what, pf_result want, const char *needle) {
    pf_model *m = NULL;
    pf_result r = pf_load(tmp_dir, NULL, &m);
    const char *msg = pf_error_message(m);
    CHECK_MSG(r == want, "%s: got %s (%s), want %s", what, pf_result_string(r), msg, pf_result_string(want));
    CHECK_MSG(!needle || strstr(msg, needle), "%s: message \"%s\" lacks \"%s\"", what, msg, needle);
    if (r == PF_OK) { /* a model that loads must also run */
        int32_t ids[3] = {1, 2, 3};
        float logits[3 * 5];
        CHECK_MSG(pf_forward(m, ids, 1, 3, logits) == PF_OK, "%s: forward: %s", what, pf_error_message(m));
    }
    pf_free(m);
}

static void case_model(const char *what, mutation mut, pf_result want, const char *needle) {
    clean_dir();
    write_text(tmp_dir, "config.json", good_config);
    write_safetensors(tmp_dir, "model.safetensors", mut, 0, NUM_TENSORS);
    expect_load(what, want, needle);
}

static void case_config(const char *what, const char *config, pf_result want, const char *needle) {
    clean_dir();
    write_text(tmp_dir, "config.json", config);
    write_safetensors(tmp_dir, "model.safetensors", MUT_NONE, 0, NUM_TENSORS);
    expect_load(what, want, needle);
}

static void case_sharded(const char *what, const char *index, pf_result want, const char *needle) {
    clean_dir();
    write_text(tmp_dir, "config.json", good_config);
    write_safetensors(tmp_dir, "a.safetensors", MUT_NONE, 0, 8);
    write_safetensors(tmp_dir, "b.safetensors", MUT_NONE, 8, NUM_TENSORS);
    write_text(tmp_dir, "model.safetensors.index.json", index);
    expect_load(what, want, needle);
}

/* An index naming every tensor in the shard written above. */
static void sharded_index(char *out, size_t cap, const char *override_file) {
    size_t len = (size_t)snprintf(out, cap, "{\"metadata\": {}, \"weight_map\": {");
    for (size_t i = 0; i < NUM_TENSORS; i++)
        len += (size_t)snprintf(out + len, cap - len, "%s\"%s\": \"%s\"", i ? ", " : "", tensors[i].name,
                                override_file && i == 9 ? override_file : i < 8 ? "a.safetensors" : "b.safetensors");
    snprintf(out + len, cap - len, "}}");
}

/* A checkpoint file changed between pf_load and a split: truncated (the map would raise SIGBUS in a
   rank thread) or rewritten in place (the map would show other weights). pf_parallelize refuses
   both with PF_ERROR_IO naming the file; an unchanged file still splits. */
static void expect_split(const char *what, pf_result want, const char *needle, int change) {
    char path[1024];
    clean_dir();
    write_text(tmp_dir, "config.json", good_config);
    write_safetensors(tmp_dir, "model.safetensors", MUT_NONE, 0, NUM_TENSORS);
    snprintf(path, sizeof path, "%s/model.safetensors", tmp_dir);
    pf_model *m = NULL;
    pf_result r = pf_load(tmp_dir, NULL, &m);
    CHECK_MSG(r == PF_OK, "%s: load: %s", what, pf_error_message(m));
    struct stat st;
    if (!r && stat(path, &st) == 0) {
        if (change == 1) CHECK(truncate(path, st.st_size / 2) == 0);
        if (change == 2) { /* one byte of the last weight, written in place a second later by the clock */
            int fd = open(path, O_WRONLY);
            unsigned char byte = 0x7f;
            struct timespec later[2] = {{st.st_atime, 0}, {st.st_mtime + 1, 0}};
            CHECK(fd >= 0 && pwrite(fd, &byte, 1, st.st_size - 1) == 1 && futimens(fd, later) == 0);
            if (fd >= 0) close(fd);
        }
        pf_parallel_options po = pf_parallel_options_init();
        po.device = PF_DEVICE_CPU;
        r = pf_parallelize(m, 1, &po);
        CHECK_MSG(r == want && (!needle || (strstr(pf_error_message(m), needle) && strstr(pf_error_message(m), path))),
                  "%s: %s (%s), want %s with \"%s\"", what, pf_result_string(r), pf_error_message(m), pf_result_string(want),
                  needle ? needle : "");
    }
    pf_free(m);
}

/* KV caches beyond the host's memory: 2 ranks whose caches take about twice the host's RAM, each
   allocation below it (the system would grant them lazily and kill the process at the first long
   request). pf_parallelize refuses before allocating, naming the options to lower. */
static void test_caches_beyond_memory(void) {
    long long ram_kb = 0;
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        if (fscanf(f, "MemTotal: %lld kB", &ram_kb) != 1) ram_kb = 0;
        fclose(f);
    }
    CHECK_MSG(ram_kb > 0 || !f, "cannot read MemTotal in /proc/meminfo");
    if (!f) ram_kb = 16LL * 1024 * 1024; /* not Linux: assume 16 GiB */
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/llama", test_fixtures);
    pf_model *m = NULL;
    pf_load_options lo = pf_load_options_init();
    lo.skip_tokenizer = 1;
    pf_result r = pf_load(dir, &lo, &m);
    CHECK_MSG(r == PF_OK, "llama: %s", pf_error_message(m));
    /* 2 ranks x 2 layers x keys and values x 4M positions x one kv head of 8 fp32: 1 GiB per row */
    long long rows = 2 * ram_kb / (1024 * 1024) + 1;
    pf_parallel_options po = pf_parallel_options_init();
    po.device = PF_DEVICE_CPU;
    po.max_sequence_length = 1 << 22;
    po.max_batch = rows > 4096 ? 4096 : (int)rows;
    if (!r) {
        r = pf_parallelize(m, 2, &po);
        const char *message = pf_error_message(m);
        CHECK_MSG(r == PF_ERROR_OUT_OF_MEMORY && strstr(message, "max_sequence_length") && strstr(message, "max_batch") &&
                      strstr(message, "host"),
                  "caches of about %lld GiB on a %lld GiB host: %s (%s)", rows, ram_kb / (1024 * 1024), pf_result_string(r),
                  message);
    }
    pf_free(m);
}

static void test_weights_changed_after_load(void) {
    expect_split("weights unchanged", PF_OK, NULL, 0);
    expect_split("weights truncated after pf_load", PF_ERROR_IO, "changed since pf_load", 1);
    expect_split("weights rewritten after pf_load", PF_ERROR_IO, "modified since pf_load", 2);
}

void test_bad_input(void) {
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/pf_test_XXXXXX");
    if (!mkdtemp(tmp_dir)) {
        CHECK_MSG(0, "cannot create a temporary directory");
        return;
    }
    /* The generator itself must be right, or every case below proves nothing. */
    case_model("valid model", MUT_NONE, PF_OK, NULL);

    case_model("truncated file", MUT_TRUNCATED, PF_ERROR_FORMAT, "model.safetensors");
    case_model("header length past the end", MUT_HEADER_PAST_END, PF_ERROR_FORMAT, "header length");
    case_model("header length near 2^64", MUT_HEADER_HUGE, PF_ERROR_FORMAT, "header length");
    case_model("file of 3 bytes", MUT_TINY_FILE, PF_ERROR_FORMAT, "too short");
    case_model("header not JSON", MUT_BAD_JSON, PF_ERROR_FORMAT, "header JSON");
    case_model("header a JSON array", MUT_NOT_OBJECT, PF_ERROR_FORMAT, "not a JSON object");
    case_model("offsets out of range", MUT_OFFSETS_OUT, PF_ERROR_FORMAT, "transformer.ln_f.bias");
    case_model("offsets backwards", MUT_OFFSETS_BACKWARDS, PF_ERROR_FORMAT, "transformer.h.0.ln_1.bias");
    case_model("wrong dtype size", MUT_WRONG_DTYPE_SIZE, PF_ERROR_FORMAT, "transformer.h.0.ln_1.weight");
    case_model("unknown dtype", MUT_UNKNOWN_DTYPE, PF_ERROR_UNSUPPORTED, "transformer.wte.weight");
    case_model("missing tensor", MUT_MISSING_TENSOR, PF_ERROR_FORMAT, "transformer.ln_f.bias");
    case_model("wrong shape", MUT_WRONG_SHAPE, PF_ERROR_FORMAT, "c_attn.weight");
    case_model("overlapping tensors", MUT_OVERLAP, PF_ERROR_FORMAT, "overlap");
    case_model("negative dimension", MUT_BAD_SHAPE_VALUE, PF_ERROR_FORMAT, "transformer.wpe.weight");

    case_config("malformed config", "{\"model_type\": \"gpt2\", \"n_embd\": 4,,}", PF_ERROR_FORMAT, "config.json");
    case_config("config not an object", "[]", PF_ERROR_FORMAT, "model_type");
    case_config("unknown model type", "{\"model_type\": \"nonsense\"}", PF_ERROR_UNSUPPORTED, "gpt2");
    case_config("missing n_head", "{\"model_type\": \"gpt2\", \"n_embd\": 4, \"n_layer\": 1, \"n_positions\": 4, \"vocab_size\": 5}",
                PF_ERROR_FORMAT, "n_head");
    case_config("heads do not divide hidden", "{\"model_type\": \"gpt2\", \"n_embd\": 4, \"n_head\": 3, \"n_layer\": 1, \"n_positions\": 4, \"vocab_size\": 5}",
                PF_ERROR_FORMAT, "inconsistent");
    case_config("absurd size", "{\"model_type\": \"gpt2\", \"n_embd\": 4e30, \"n_head\": 2, \"n_layer\": 1, \"n_positions\": 4, \"vocab_size\": 5}",
                PF_ERROR_FORMAT, "n_embd");
    case_config("string for a number", "{\"model_type\": \"gpt2\", \"n_embd\": \"4\", \"n_head\": 2, \"n_layer\": 1, \"n_positions\": 4, \"vocab_size\": 5}",
                PF_ERROR_FORMAT, "n_embd");
    case_config("config disagrees with the tensors", "{\"model_type\": \"gpt2\", \"n_embd\": 8, \"n_head\": 2, \"n_layer\": 1, \"n_positions\": 4, \"vocab_size\": 5}",
                PF_ERROR_FORMAT, "shape");
    case_config("unsupported activation", "{\"model_type\": \"gpt2\", \"n_embd\": 4, \"n_head\": 2, \"n_layer\": 1, \"n_positions\": 4, \"vocab_size\": 5, \"activation_function\": \"wiggle\"}",
                PF_ERROR_UNSUPPORTED, "wiggle");
    case_config("truncated JSON", "{\"model_type\": \"gp", PF_ERROR_FORMAT, "config.json");
    case_config("unterminated escape", "{\"model_type\": \"gpt2\\", PF_ERROR_FORMAT, "config.json");
    case_config("deep nesting", "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
                PF_ERROR_FORMAT, "deep");

    char index[8192];
    sharded_index(index, sizeof index, NULL);
    case_sharded("valid shards", index, PF_OK, NULL);
    sharded_index(index, sizeof index, "missing.safetensors");
    case_sharded("index names a missing shard", index, PF_ERROR_IO, "missing.safetensors");
    sharded_index(index, sizeof index, "a.safetensors");
    case_sharded("index puts a tensor in the wrong shard", index, PF_ERROR_FORMAT, "ln_2.bias");
    sharded_index(index, sizeof index, "../escape.safetensors");
    case_sharded("index escapes the directory", index, PF_ERROR_FORMAT, "bad file name");
    case_sharded("index without weight_map", "{\"metadata\": {}}", PF_ERROR_FORMAT, "weight_map");

    clean_dir();
    write_text(tmp_dir, "config.json", good_config);
    expect_load("no weights file", PF_ERROR_IO, "model.safetensors");
    clean_dir();
    expect_load("empty directory", PF_ERROR_IO, "config.json");
    write_text(tmp_dir, "config.json", good_config);
    write_safetensors(tmp_dir, "model.safetensors", MUT_NONE, 0, NUM_TENSORS);
    write_text(tmp_dir, "tokenizer.json", "{\"model\": ");
    expect_load("malformed tokenizer.json", PF_ERROR_FORMAT, "tokenizer.json");

    pf_model *m = NULL;
    CHECK(pf_load("/nonexistent/model/dir", NULL, &m) == PF_ERROR_IO);
    CHECK(strstr(pf_error_message(m), "/nonexistent/model/dir") != NULL);
    /* A failed model refuses work with a message instead of crashing. */
    CHECK(pf_parallelize(m, 1, NULL) == PF_ERROR_INVALID_ARGUMENT);
    int32_t id = 0;
    float logit;
    CHECK(pf_forward(m, &id, 1, 1, &logit) == PF_ERROR_INVALID_ARGUMENT);
    pf_free(m);
    CHECK(pf_load(NULL, NULL, &m) == PF_ERROR_INVALID_ARGUMENT);
    pf_free(m);
    CHECK(pf_load(tmp_dir, NULL, NULL) == PF_ERROR_INVALID_ARGUMENT);

    test_weights_changed_after_load();
    test_caches_beyond_memory();
    clean_dir();
    rmdir(tmp_dir);
}
