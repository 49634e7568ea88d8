#include "internal.h"
/* =============================================================================================== */
/* GGUF: llama.cpp's one-file checkpoints, read as a config, tensors and a tokenizer               */
/* =============================================================================================== */

/* A GGUF file (v2, v3; little-endian) is a header, key/value metadata, tensor infos, then the
   tensor data at general.alignment. We map it, check every count, length and offset against the
   file, and turn it into what a model directory gives: config.json's keys (as JSON, through
   pf__config_parse), safetensors-like tensors under transformers' names (pf__st_index), and a
   tokenizer.json (through pf__tok_from_json). Everything after loading runs unchanged. */

enum { /* metadata value types */
    PF__GGUF_U8, PF__GGUF_I8, PF__GGUF_U16, PF__GGUF_I16, PF__GGUF_U32, PF__GGUF_I32, PF__GGUF_F32, PF__GGUF_BOOL,
    PF__GGUF_STRING, PF__GGUF_ARRAY, PF__GGUF_U64, PF__GGUF_I64, PF__GGUF_F64, PF__GGUF_VALUE_TYPES
};
static const unsigned char pf__gguf_value_size[PF__GGUF_VALUE_TYPES] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

/* ggml's tensor types by id: the name for messages, and for the types we read the block (weights)
   and its bytes. Others are refused by name. */
enum { PF__GGML_F32 = 0, PF__GGML_F16 = 1, PF__GGML_Q4_0 = 2, PF__GGML_Q4_1 = 3, PF__GGML_Q5_0 = 6, PF__GGML_Q5_1 = 7,
       PF__GGML_Q8_0 = 8, PF__GGML_Q2_K = 10, PF__GGML_Q3_K = 11, PF__GGML_Q4_K = 12, PF__GGML_IQ4_NL = 20, PF__GGML_IQ4_XS = 23, PF__GGML_Q5_K = 13, PF__GGML_Q6_K = 14, PF__GGML_BF16 = 30,
       PF__GGML_MXFP4 = 39 };
/* The block formats we read: each one's dtype (src/blocks.c), which sizes its blocks; the types we
   do not read have no block size and PF__DTYPE_OTHER. */
static const struct { const char *name; unsigned block, bytes; pf__dtype dtype; } pf__ggml_types[] = {
    [PF__GGML_F32] = {"F32", 1, 4, PF__DTYPE_F32}, [PF__GGML_F16] = {"F16", 1, 2, PF__DTYPE_F16},
    [PF__GGML_Q4_0] = {"Q4_0", 32, 18, PF__DTYPE_Q4}, [PF__GGML_Q4_1] = {"Q4_1", 32, 20, PF__DTYPE_Q4_1},
    [PF__GGML_Q5_0] = {"Q5_0", 32, 22, PF__DTYPE_Q5_0}, [PF__GGML_Q5_1] = {"Q5_1", 32, 24, PF__DTYPE_Q5_1},
    [PF__GGML_Q8_0] = {"Q8_0", 32, 34, PF__DTYPE_Q8}, [9] = {"Q8_1", 0, 0, PF__DTYPE_OTHER},
    [PF__GGML_Q2_K] = {"Q2_K", 256, 84, PF__DTYPE_Q2_K}, [PF__GGML_Q3_K] = {"Q3_K", 256, 110, PF__DTYPE_Q3_K},
    [PF__GGML_Q4_K] = {"Q4_K", 256, 144, PF__DTYPE_Q4_K}, [PF__GGML_Q5_K] = {"Q5_K", 256, 176, PF__DTYPE_Q5_K},
    [PF__GGML_Q6_K] = {"Q6_K", 256, 210, PF__DTYPE_Q6_K}, [15] = {"Q8_K", 0, 0, PF__DTYPE_OTHER},
    [16] = {"IQ2_XXS", 0, 0, PF__DTYPE_OTHER}, [17] = {"IQ2_XS", 0, 0, PF__DTYPE_OTHER},
    [18] = {"IQ3_XXS", 0, 0, PF__DTYPE_OTHER}, [19] = {"IQ1_S", 0, 0, PF__DTYPE_OTHER},
    [PF__GGML_IQ4_NL] = {"IQ4_NL", 32, 18, PF__DTYPE_IQ4_NL}, [21] = {"IQ3_S", 0, 0, PF__DTYPE_OTHER},
    [22] = {"IQ2_S", 0, 0, PF__DTYPE_OTHER}, [PF__GGML_IQ4_XS] = {"IQ4_XS", 256, 136, PF__DTYPE_IQ4_XS},
    [24] = {"I8", 0, 0, PF__DTYPE_OTHER}, [25] = {"I16", 0, 0, PF__DTYPE_OTHER},
    [26] = {"I32", 0, 0, PF__DTYPE_OTHER}, [27] = {"I64", 0, 0, PF__DTYPE_OTHER},
    [28] = {"F64", 0, 0, PF__DTYPE_OTHER}, [29] = {"IQ1_M", 0, 0, PF__DTYPE_OTHER},
    [PF__GGML_BF16] = {"BF16", 1, 2, PF__DTYPE_BF16}, [34] = {"TQ1_0", 0, 0, PF__DTYPE_OTHER},
    [35] = {"TQ2_0", 0, 0, PF__DTYPE_OTHER}, [PF__GGML_MXFP4] = {"MXFP4", 32, 17, PF__DTYPE_MXFP4},
};
#define PF__GGUF_MAX_DIMS 4 /* ggml's GGML_MAX_DIMS */
#define PF__GGUF_MAX_EXPERTS 65536 /* as config.json's num_experts */

typedef struct pf__gguf_kv {
    const char *key;      /* into the map, not NUL-terminated */
    size_t key_len;
    uint32_t type;        /* PF__GGUF_*; an array's elements are elem_type */
    uint32_t elem_type;
    uint64_t count;       /* an array's length; 1 for a scalar */
    const uint8_t *value; /* the value's first byte (a string's length; an array's first element) */
} pf__gguf_kv;

typedef struct pf__gguf_tensor {
    const char *name; /* into the map, not NUL-terminated */
    size_t name_len;
    uint32_t type;    /* PF__GGML_* */
    size_t rows, cols; /* cols = ne[0], the innermost (row) length; rows = the other dims' product */
    int ndim;
    uint64_t ne[PF__GGUF_MAX_DIMS];
    const uint8_t *data;
    size_t bytes;
} pf__gguf_tensor;

typedef struct pf__gguf {
    const char *path;
    const uint8_t *data;
    size_t size;
    pf__gguf_kv *kvs;
    size_t num_kvs;
    pf__gguf_tensor *tensors;
    size_t num_tensors;
} pf__gguf;

typedef struct pf__gguf_cursor {
    const uint8_t *p, *end;
} pf__gguf_cursor;

static uint64_t pf__gguf_le(const uint8_t *p, int bytes) {
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* n bytes at the cursor, or -1 when the file ends first. */
static int pf__gguf_take(pf__gguf_cursor *c, uint64_t n, const uint8_t **out) {
    if (n > (uint64_t)(c->end - c->p)) return -1;
    *out = c->p;
    c->p += n;
    return 0;
}

static int pf__gguf_uint(pf__gguf_cursor *c, int bytes, uint64_t *v) {
    const uint8_t *p;
    if (pf__gguf_take(c, (uint64_t)bytes, &p)) return -1;
    *v = pf__gguf_le(p, bytes);
    return 0;
}

static int pf__gguf_string(pf__gguf_cursor *c, const char **s, size_t *len) {
    uint64_t n;
    const uint8_t *p;
    if (pf__gguf_uint(c, 8, &n) || pf__gguf_take(c, n, &p)) return -1;
    *s = (const char *)p;
    *len = (size_t)n;
    return 0;
}

/* How much of a name from the file a message shows. */
static int pf__gguf_shown(size_t len) { return len > 200 ? 200 : (int)len; }

static int pf__gguf_name_cmp(const char *a, size_t a_len, const char *b, size_t b_len) {
    int d = memcmp(a, b, a_len < b_len ? a_len : b_len);
    return d ? d : (a_len > b_len) - (a_len < b_len);
}

static int pf__gguf_kv_cmp(const void *a, const void *b) {
    const pf__gguf_kv *x = (const pf__gguf_kv *)a, *y = (const pf__gguf_kv *)b;
    return pf__gguf_name_cmp(x->key, x->key_len, y->key, y->key_len);
}

static int pf__gguf_tensor_name_cmp(const void *a, const void *b) {
    const pf__gguf_tensor *x = (const pf__gguf_tensor *)a, *y = (const pf__gguf_tensor *)b;
    return pf__gguf_name_cmp(x->name, x->name_len, y->name, y->name_len);
}

static int pf__gguf_tensor_offset_cmp(const void *a, const void *b) {
    const pf__gguf_tensor *x = (const pf__gguf_tensor *)a, *y = (const pf__gguf_tensor *)b;
    return x->data < y->data ? -1 : x->data > y->data;
}

static const pf__gguf_kv *pf__gguf_find(const pf__gguf *g, const char *key) {
    pf__gguf_kv probe;
    probe.key = key;
    probe.key_len = strlen(key);
    return (const pf__gguf_kv *)bsearch(&probe, g->kvs, g->num_kvs, sizeof probe, pf__gguf_kv_cmp);
}

/* The metadata key/values at the cursor (num_kvs of them) into g->kvs, sorted by key, each
   count, length and type checked against the file; a key twice is an error. */
static pf_result pf__gguf_read_metadata(pf__gguf *g, pf__gguf_cursor *c, uint64_t num_kvs, char *message, size_t size) {
    const char *path = g->path;
    for (uint64_t i = 0; i < num_kvs; i++) {
        pf__gguf_kv *kv = &g->kvs[i];
        uint64_t type, elem, count = 1;
        if (pf__gguf_string(c, &kv->key, &kv->key_len) || pf__gguf_uint(c, 4, &type))
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: metadata key %llu runs past the end of the file", path,
                              (unsigned long long)i);
        int key_len = pf__gguf_shown(kv->key_len);
        if (type >= PF__GGUF_VALUE_TYPES)
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: metadata key '%.*s' has unknown value type %llu", path,
                              key_len, kv->key, (unsigned long long)type);
        elem = type;
        if (type == PF__GGUF_ARRAY && (pf__gguf_uint(c, 4, &elem) || pf__gguf_uint(c, 8, &count)))
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: metadata array '%.*s' runs past the end of the file",
                              path, key_len, kv->key);
        if (elem >= PF__GGUF_VALUE_TYPES)
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: metadata array '%.*s' has unknown value type %llu", path,
                              key_len, kv->key, (unsigned long long)elem);
        if (elem == PF__GGUF_ARRAY) /* GGUF allows them; llama.cpp writes none */
            return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: metadata array '%.*s' holds arrays, which are not "
                              "supported", path, key_len, kv->key);
        kv->type = (uint32_t)type;
        kv->elem_type = (uint32_t)elem;
        kv->count = count;
        kv->value = c->p;
        /* strings: a length and bytes each (at least 8 bytes); others: their size */
        uint64_t least = elem == PF__GGUF_STRING ? 8 : pf__gguf_value_size[elem];
        if (count > (uint64_t)(c->end - c->p) / least)
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: metadata '%.*s' (%llu values) runs past the end of the "
                              "file", path, key_len, kv->key, (unsigned long long)count);
        if (elem != PF__GGUF_STRING) {
            c->p += count * least;
        } else {
            for (uint64_t k = 0; k < count; k++) {
                const char *text;
                size_t n;
                if (pf__gguf_string(c, &text, &n))
                    return pf__format(message, size, PF_ERROR_FORMAT, "%s: metadata '%.*s': string %llu runs past the end "
                                      "of the file", path, key_len, kv->key, (unsigned long long)k);
            }
        }
        if (elem == PF__GGUF_BOOL)
            for (uint64_t k = 0; k < count; k++)
                if (kv->value[k] > 1)
                    return pf__format(message, size, PF_ERROR_FORMAT, "%s: metadata '%.*s' holds a boolean that is "
                                      "neither 0 nor 1", path, key_len, kv->key);
        g->num_kvs++;
    }
    qsort(g->kvs, g->num_kvs, sizeof *g->kvs, pf__gguf_kv_cmp);
    for (size_t i = 1; i < g->num_kvs; i++)
        if (!pf__gguf_kv_cmp(&g->kvs[i - 1], &g->kvs[i]))
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: metadata key '%.*s' appears twice", path,
                              pf__gguf_shown(g->kvs[i].key_len), g->kvs[i].key);
    return PF_OK;
}

/* general.alignment (32 without it): a power of two up to 1 MiB. */
static pf_result pf__gguf_alignment(const pf__gguf *g, uint64_t *alignment, char *message, size_t size) {
    *alignment = 32; /* GGUF's default */
    const pf__gguf_kv *align = pf__gguf_find(g, "general.alignment");
    if (!align) return PF_OK;
    if (align->type != PF__GGUF_U32)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: general.alignment is not a uint32", g->path);
    *alignment = pf__gguf_le(align->value, 4);
    if (*alignment == 0 || (*alignment & (*alignment - 1)) || *alignment > (1u << 20))
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: general.alignment %llu is not a power of two up to 1 MiB",
                          g->path, (unsigned long long)*alignment);
    return PF_OK;
}

/* The tensor infos at the cursor (num_tensors of them) into g->tensors, with each one's offset in
   the data section in offsets[]: dimensions, a type we read, whole blocks, aligned offsets. */
static pf_result pf__gguf_read_tensor_infos(pf__gguf *g, pf__gguf_cursor *c, uint64_t num_tensors, uint64_t alignment,
                                            uint64_t *offsets, char *message, size_t size) {
    const char *path = g->path;
    for (uint64_t i = 0; i < num_tensors; i++) {
        pf__gguf_tensor *t = &g->tensors[i];
        uint64_t ndim, type;
        if (pf__gguf_string(c, &t->name, &t->name_len) || pf__gguf_uint(c, 4, &ndim))
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: tensor info %llu runs past the end of the file", path,
                              (unsigned long long)i);
        int name_len = pf__gguf_shown(t->name_len);
        if (ndim < 1 || ndim > PF__GGUF_MAX_DIMS)
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: tensor '%.*s' has %llu dimensions (1 to %d)", path,
                              name_len, t->name, (unsigned long long)ndim, PF__GGUF_MAX_DIMS);
        t->ndim = (int)ndim;
        size_t rows = 1;
        int bad = 0;
        for (int d = 0; d < t->ndim; d++) {
            if (pf__gguf_uint(c, 8, &t->ne[d])) bad = 1;
            else if (t->ne[d] == 0 || t->ne[d] > ((uint64_t)1 << 40) || t->ne[d] > SIZE_MAX ||
                     (d > 0 && pf__mul_size(rows, (size_t)t->ne[d], &rows)))
                bad = 2;
        }
        if (bad || pf__gguf_uint(c, 4, &type) || pf__gguf_uint(c, 8, &offsets[i]))
            return pf__format(message, size, PF_ERROR_FORMAT, bad == 2 ? "%s: tensor '%.*s' has a dimension that is zero "
                              "or too large" : "%s: tensor info '%.*s' runs past the end of the file", path, name_len,
                              t->name);
        t->rows = rows;
        t->cols = (size_t)t->ne[0];
        t->type = (uint32_t)type;
        if (type >= PF__COUNT(pf__ggml_types) || !pf__ggml_types[type].name)
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: tensor '%.*s' has unknown type %llu", path, name_len,
                              t->name, (unsigned long long)type);
        unsigned block = pf__ggml_types[type].block;
        if (!block)
            return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: tensor '%.*s' has type %s, which parallelformers "
                              "does not read (it reads F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS "
                              "and MXFP4)", path, name_len,
                              t->name, pf__ggml_types[type].name);
        if (t->cols % block || pf__mul_size(rows, t->cols / block * pf__ggml_types[type].bytes, &t->bytes) ||
            t->cols / block * pf__ggml_types[type].bytes / pf__ggml_types[type].bytes != t->cols / block)
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: tensor '%.*s' of type %s has rows of %zu, not a whole "
                              "number of %u-weight blocks, or is too large", path, name_len, t->name,
                              pf__ggml_types[type].name, t->cols, block);
        if (offsets[i] % alignment)
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: tensor '%.*s' starts at offset %llu, not a multiple of "
                              "the alignment %llu", path, name_len, t->name, (unsigned long long)offsets[i],
                              (unsigned long long)alignment);
        g->num_tensors++;
    }
    return PF_OK;
}

/* Each tensor's data in the data section (from `header` bytes, rounded up to the alignment):
   inside the file, no name twice, no two sharing bytes. g->tensors ends sorted by name. */
static pf_result pf__gguf_place_tensors(pf__gguf *g, size_t header, uint64_t alignment, const uint64_t *offsets,
                                        char *message, size_t size) {
    const char *path = g->path;
    size_t start = header + (size_t)((alignment - header % alignment) % alignment);
    size_t data_size = start <= g->size ? g->size - start : 0;
    for (size_t i = 0; i < g->num_tensors; i++) {
        pf__gguf_tensor *t = &g->tensors[i];
        if (offsets[i] > data_size || t->bytes > data_size - offsets[i])
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: tensor '%.*s' (%zu bytes at offset %llu) runs past the "
                              "end of the data section (%zu bytes)", path, pf__gguf_shown(t->name_len), t->name,
                              t->bytes, (unsigned long long)offsets[i], data_size);
        t->data = g->data + start + offsets[i];
    }
    qsort(g->tensors, g->num_tensors, sizeof *g->tensors, pf__gguf_tensor_name_cmp);
    for (size_t i = 1; i < g->num_tensors; i++)
        if (!pf__gguf_tensor_name_cmp(&g->tensors[i - 1], &g->tensors[i]))
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: tensor '%.*s' appears twice", path,
                              pf__gguf_shown(g->tensors[i].name_len), g->tensors[i].name);
    /* no two tensors share bytes: sorted by offset, each ends before the next starts */
    pf__gguf_tensor *order = (pf__gguf_tensor *)malloc((g->num_tensors ? g->num_tensors : 1) * sizeof *order);
    if (!order) return pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    memcpy(order, g->tensors, g->num_tensors * sizeof *order);
    qsort(order, g->num_tensors, sizeof *order, pf__gguf_tensor_offset_cmp);
    pf_result r = PF_OK;
    for (size_t i = 1; i < g->num_tensors && !r; i++)
        if (order[i - 1].data + order[i - 1].bytes > order[i].data)
            r = pf__format(message, size, PF_ERROR_FORMAT, "%s: tensors '%.*s' and '%.*s' overlap", path,
                           pf__gguf_shown(order[i - 1].name_len), order[i - 1].name,
                           pf__gguf_shown(order[i].name_len), order[i].name);
    free(order);
    return r;
}

/* Reads the header, metadata and tensor infos of the mapped file into g, checking each count,
   length, type, dimension and offset against the file: the header's counts, then each phase. */
static pf_result pf__gguf_parse(pf__gguf *g, char *message, size_t size) {
    const char *path = g->path;
    if (g->size < 4 || memcmp(g->data, "GGUF", 4)) /* an empty file is not even mapped */
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: not a GGUF file (no GGUF magic)", path);
    pf__gguf_cursor c = {g->data + 4, g->data + g->size};
    uint64_t version, num_tensors, num_kvs, alignment;
    if (pf__gguf_uint(&c, 4, &version) || pf__gguf_uint(&c, 8, &num_tensors) || pf__gguf_uint(&c, 8, &num_kvs))
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: the GGUF header is cut short", path);
    if (version != 2 && version != 3)
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: GGUF version %llu is not supported (2 and 3 are, "
                          "little-endian)", path, (unsigned long long)version);
    /* a key/value takes at least 13 bytes (a key length, a type, a byte), a tensor info 32 */
    size_t left = (size_t)(c.end - c.p);
    if (num_kvs > left / 13 || num_tensors > left / 32)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: the header counts %llu tensors and %llu metadata keys, more "
                          "than the file can hold", path, (unsigned long long)num_tensors, (unsigned long long)num_kvs);
    g->kvs = (pf__gguf_kv *)calloc(num_kvs ? (size_t)num_kvs : 1, sizeof *g->kvs);
    g->tensors = (pf__gguf_tensor *)calloc(num_tensors ? (size_t)num_tensors : 1, sizeof *g->tensors);
    uint64_t *offsets = (uint64_t *)malloc((num_tensors ? (size_t)num_tensors : 1) * sizeof *offsets);
    pf_result r = g->kvs && g->tensors && offsets ? PF_OK
                                                  : pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    if (!r) r = pf__gguf_read_metadata(g, &c, num_kvs, message, size);
    if (!r) r = pf__gguf_alignment(g, &alignment, message, size);
    if (!r) r = pf__gguf_read_tensor_infos(g, &c, num_tensors, alignment, offsets, message, size);
    if (!r) r = pf__gguf_place_tensors(g, (size_t)(c.p - g->data), alignment, offsets, message, size);
    free(offsets);
    return r;
}

/* ---- metadata values ---- */

/* An integer value (any integer type, not negative) of a scalar key: 1 found, 0 absent, -1 wrong type. */
static int pf__gguf_get_uint(const pf__gguf *g, const char *key, uint64_t *out) {
    const pf__gguf_kv *kv = pf__gguf_find(g, key);
    if (!kv) return 0;
    uint32_t t = kv->type;
    if (t == PF__GGUF_ARRAY || t == PF__GGUF_STRING || t == PF__GGUF_F32 || t == PF__GGUF_F64 || t == PF__GGUF_BOOL) return -1;
    uint64_t v = pf__gguf_le(kv->value, pf__gguf_value_size[t]);
    int is_signed = t == PF__GGUF_I8 || t == PF__GGUF_I16 || t == PF__GGUF_I32 || t == PF__GGUF_I64;
    if (is_signed && (v >> (8 * pf__gguf_value_size[t] - 1)) & 1) return -1;
    *out = v;
    return 1;
}

/* A number (float or integer): 1 found, 0 absent, -1 wrong type. */
static int pf__gguf_get_number(const pf__gguf *g, const char *key, double *out) {
    const pf__gguf_kv *kv = pf__gguf_find(g, key);
    uint64_t u;
    if (!kv) return 0;
    if (kv->type == PF__GGUF_F32) {
        float f;
        uint32_t bits = (uint32_t)pf__gguf_le(kv->value, 4);
        memcpy(&f, &bits, 4);
        *out = f;
        return 1;
    }
    if (kv->type == PF__GGUF_F64) {
        uint64_t bits = pf__gguf_le(kv->value, 8);
        memcpy(out, &bits, 8);
        return 1;
    }
    if (kv->type == PF__GGUF_BOOL) { /* GPT-NeoX's use_parallel_residual */
        *out = kv->value[0] != 0;
        return 1;
    }
    if (pf__gguf_get_uint(g, key, &u) != 1) return -1;
    *out = (double)u;
    return 1;
}

/* 1 found, 0 absent, -1 wrong type. */
static int pf__gguf_get_bool(const pf__gguf *g, const char *key, int *out) {
    const pf__gguf_kv *kv = pf__gguf_find(g, key);
    if (!kv) return 0;
    if (kv->type != PF__GGUF_BOOL) return -1;
    *out = kv->value[0];
    return 1;
}

/* A string (not NUL-terminated): 1 found, 0 absent, -1 wrong type. */
static int pf__gguf_get_string(const pf__gguf *g, const char *key, const char **s, size_t *len) {
    const pf__gguf_kv *kv = pf__gguf_find(g, key);
    if (!kv) return 0;
    if (kv->type != PF__GGUF_STRING) return -1;
    *len = (size_t)pf__gguf_le(kv->value, 8);
    *s = (const char *)kv->value + 8;
    return 1;
}

/* An array key of elem_type, or NULL when absent or of another kind. */
static const pf__gguf_kv *pf__gguf_get_array(const pf__gguf *g, const char *key, uint32_t elem_type) {
    const pf__gguf_kv *kv = pf__gguf_find(g, key);
    return kv && kv->type == PF__GGUF_ARRAY && kv->elem_type == elem_type ? kv : NULL;
}

/* ---- JSON text built from metadata ---- */

/* The JSON built from metadata stops where a JSON file would be refused (PF__MAX_TEXT_FILE): past
   it, b->len is left beyond that bound, every later put fails, and pf__gguf_json_failure says so. */
static int pf__gguf_put_n(pf__tok_buf *b, const char *s, size_t n) {
    if (b->len > PF__MAX_TEXT_FILE || n > PF__MAX_TEXT_FILE - b->len) {
        b->len = PF__MAX_TEXT_FILE + 1;
        return -1;
    }
    return pf__buf_put(b, s, n);
}

static int pf__gguf_put(pf__tok_buf *b, const char *s) { return pf__gguf_put_n(b, s, strlen(s)); }

/* The error of a failed put: the bound, or out of memory. */
static pf_result pf__gguf_json_failure(const pf__gguf *g, const pf__tok_buf *b, const char *what, char *message, size_t size) {
    if (b->len > PF__MAX_TEXT_FILE)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: %s makes more than %zu MiB of JSON", g->path, what,
                          PF__MAX_TEXT_FILE >> 20);
    return pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
}

/* s[0 .. len) as a JSON string literal. */
static int pf__gguf_put_json_string(pf__tok_buf *b, const char *s, size_t len) {
    int bad = pf__gguf_put_n(b, "\"", 1);
    for (size_t i = 0; i < len && !bad; i++) {
        unsigned char ch = (unsigned char)s[i];
        char esc[8];
        if (ch == '"' || ch == '\\') esc[0] = '\\', esc[1] = (char)ch, esc[2] = 0;
        else if (ch < 0x20) snprintf(esc, sizeof esc, "\\u%04x", ch);
        else esc[0] = (char)ch, esc[1] = 0;
        bad = pf__gguf_put(b, esc);
    }
    return bad || pf__gguf_put_n(b, "\"", 1);
}

static int pf__gguf_put_number(pf__tok_buf *b, const char *key, double v) {
    char text[64];
    snprintf(text, sizeof text, ", \"%s\": %.17g", key, v);
    return pf__gguf_put(b, text);
}

/* ---- the config ---- */

/* Metadata keys of the architecture: where they go in config.json (NULL: read below, or without
   effect on the numbers). Any other "<arch>." key might change the math: refused by name. */
typedef struct pf__gguf_config_key {
    const char *arch;
    const char *suffix;     /* after "<arch>." */
    const char *config_key; /* config.json's key, NULL: handled by hand or ignored */
} pf__gguf_config_key;

static const pf__gguf_config_key pf__gguf_config_keys[] = {
#define PF_GGUF_CONFIG(arch, suffix, config_key) {arch, suffix, config_key},
#include "policies.inc"
};

/* Values of "<arch>." keys that llama.cpp reads as more than their number (PF_GGUF_REFUSE rows). */
typedef struct pf__gguf_refused_value {
    const char *arch, *suffix;
    double value;
    const char *why;
} pf__gguf_refused_value;

static const pf__gguf_refused_value pf__gguf_refused_values[] = {
#define PF_GGUF_REFUSE(arch, suffix, value, why) {arch, suffix, value, why},
#include "policies.inc"
    {"", "", 0, ""} /* none may be listed */
};

/* Config text added where the file has a tensor (PF_GGUF_IF_TENSOR rows). */
static const struct { const char *arch, *tensor, *config; } pf__gguf_if_tensor[] = {
#define PF_GGUF_IF_TENSOR(arch, tensor, config) {arch, tensor, config},
#include "policies.inc"
    {"", "", ""} /* none may be listed */
};

/* Config text added where a key has a value (PF_GGUF_IF_VALUE rows). */
static const struct { const char *arch, *suffix; double value; const char *config; } pf__gguf_if_value[] = {
#define PF_GGUF_IF_VALUE(arch, suffix, value, config) {arch, suffix, value, config},
#include "policies.inc"
    {"", "", 0, ""} /* none may be listed */
};

/* The file's tensor of that name, or NULL. */
static const pf__gguf_tensor *pf__gguf_tensor_named(const pf__gguf *g, const char *name) {
    pf__gguf_tensor probe;
    probe.name = name;
    probe.name_len = strlen(name);
    return (const pf__gguf_tensor *)bsearch(&probe, g->tensors, g->num_tensors, sizeof probe, pf__gguf_tensor_name_cmp);
}

/* A tensor of that name is in the file. */
static int pf__gguf_has_tensor(const pf__gguf *g, const char *name) { return pf__gguf_tensor_named(g, name) != NULL; }

/* The architectures we load (PF_GGUF_ARCH rows). */
typedef struct pf__gguf_arch {
    const char *name; /* general.architecture */
    const char *model_type, *hf_class;
    int rotary;               /* LLaMA's metadata: head and rotary widths, rope scaling, biases */
    const char *extra_config; /* added to config.json as it is */
} pf__gguf_arch;

static const pf__gguf_arch pf__gguf_archs[] = {
#define PF_GGUF_ARCH(arch, model_type, hf_class, rotary, extra_config) {arch, model_type, hf_class, rotary, extra_config},
#include "policies.inc"
};

/* String keys read for one value (PF_GGUF_STRING rows). */
static const struct { const char *arch, *suffix, *value; } pf__gguf_strings[] = {
#define PF_GGUF_STRING(arch, suffix, value) {arch, suffix, value},
#include "policies.inc"
    {"", "", ""} /* none may be listed */
};

/* The architectures that read another's rows (PF_GGUF_LIKE). */
static const struct { const char *arch, *base; } pf__gguf_likes[] = {
#define PF_GGUF_LIKE(arch, base) {arch, base},
#include "policies.inc"
    {"", ""} /* none may be listed */
};

/* The variants whose tensor rows a file with a tensor reads first (PF_GGUF_VARIANT). */
static const struct { const char *arch, *tensor, *variant; } pf__gguf_variants[] = {
#define PF_GGUF_VARIANT(arch, tensor, variant) {arch, tensor, variant},
#include "policies.inc"
    {"", "", ""} /* none may be listed */
};

/* The architecture whose rows arch reads beside its own: its base, or itself. */
static const char *pf__gguf_rows_of(const char *arch) {
    for (size_t i = 0; i < PF__COUNT(pf__gguf_likes); i++)
        if (!strcmp(pf__gguf_likes[i].arch, arch)) return pf__gguf_likes[i].base;
    return arch;
}

/* A row of row_arch is one of arch's: its own, or its base's. */
static int pf__gguf_row_of(const char *row_arch, const char *arch) {
    return !strcmp(row_arch, arch) || !strcmp(row_arch, pf__gguf_rows_of(arch));
}

/* The supported architectures' names, comma separated, into out. */
static void pf__gguf_arch_names(char *out, size_t size) {
    size_t at = 0;
    out[0] = 0;
    for (size_t i = 0; i < PF__COUNT(pf__gguf_archs) && at < size; i++) {
        int n = snprintf(out + at, size - at, "%s%s", i ? ", " : "", pf__gguf_archs[i].name);
        if (n < 0) break;
        at += (size_t)n;
    }
}

static const pf__gguf_arch *pf__gguf_find_arch(const char *name, size_t len) {
    for (size_t i = 0; i < PF__COUNT(pf__gguf_archs); i++)
        if (strlen(pf__gguf_archs[i].name) == len && !memcmp(pf__gguf_archs[i].name, name, len)) return &pf__gguf_archs[i];
    return NULL;
}

/* Every "<arch>." metadata key must be a PF_GGUF_CONFIG row; those with a config key go into b. */
static pf_result pf__gguf_known_keys(const pf__gguf *g, const char *arch, pf__tok_buf *b, int *bad, char *message,
                                     size_t size) {
    size_t prefix = strlen(arch) + 1;
    for (size_t i = 0; i < g->num_kvs; i++) {
        const pf__gguf_kv *kv = &g->kvs[i];
        if (kv->key_len <= prefix || memcmp(kv->key, arch, prefix - 1) || kv->key[prefix - 1] != '.') continue;
        int known = 0; /* a key may feed several config keys (a row each) */
        for (size_t k = 0; k < PF__COUNT(pf__gguf_config_keys); k++) {
            const pf__gguf_config_key *row = &pf__gguf_config_keys[k];
            if (!pf__gguf_row_of(row->arch, arch) || kv->key_len - prefix != strlen(row->suffix) ||
                memcmp(kv->key + prefix, row->suffix, kv->key_len - prefix))
                continue;
            if (!known++ && kv->type == PF__GGUF_ARRAY) /* llama.cpp's per-layer values (head counts of hybrid models) */
                return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: metadata '%.*s' differs per layer: not supported",
                                  g->path, pf__gguf_shown(kv->key_len), kv->key);
            if (!row->config_key) continue;
            char full[96];
            double v;
            snprintf(full, sizeof full, "%s.%s", arch, row->suffix);
            if (pf__gguf_get_number(g, full, &v) != 1 || !isfinite(v))
                return pf__format(message, size, PF_ERROR_FORMAT, "%s: metadata '%s' is not a finite number", g->path, full);
            *bad |= pf__gguf_put_number(b, row->config_key, v);
        }
        if (!known)
            return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: metadata '%.*s' is not supported (it may change "
                              "the model's math)", g->path, pf__gguf_shown(kv->key_len), kv->key);
    }
    for (size_t k = 0; k < PF__COUNT(pf__gguf_refused_values); k++) {
        const pf__gguf_refused_value *row = &pf__gguf_refused_values[k];
        char full[96];
        double v;
        if (!pf__gguf_row_of(row->arch, arch)) continue;
        snprintf(full, sizeof full, "%s.%s", arch, row->suffix);
        if (pf__gguf_get_number(g, full, &v) == 1 && v == row->value)
            return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: metadata '%s' %g: %s", g->path, full, v, row->why);
    }
    return PF_OK;
}

static void pf__gguf_dequantize_row(const pf__gguf_tensor *t, size_t row, float *out);

/* A rope factor tensor (one positive factor per rotary frequency, of rotary_dims / 2) into b as a
   JSON list's items. */
static pf_result pf__gguf_put_rope_factors(const pf__gguf *g, const pf__gguf_tensor *t, double rotary_dims,
                                           pf__tok_buf *b, int *bad, char *message, size_t size) {
    if (t->ndim != 1 || (double)t->cols * 2 != rotary_dims || t->cols > PF__MAX_ROPE_FACTORS ||
        (t->type != PF__GGML_F32 && t->type != PF__GGML_F16 && t->type != PF__GGML_BF16))
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: %.*s is not a float vector of %g factors (one per rotary "
                          "frequency)", g->path, pf__gguf_shown(t->name_len), t->name, rotary_dims / 2);
    float factors[PF__MAX_ROPE_FACTORS];
    pf__gguf_dequantize_row(t, 0, factors);
    for (size_t i = 0; i < t->cols; i++) {
        char number[40];
        if (!(factors[i] > 0 && factors[i] < 1e30))
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: %.*s[%zu] = %g is not a positive factor", g->path,
                              pf__gguf_shown(t->name_len), t->name, i, factors[i]);
        snprintf(number, sizeof number, "%s%.9g", i ? ", " : "", factors[i]);
        *bad |= pf__gguf_put(b, number);
    }
    return PF_OK;
}

/* Architecture arch (its rows') has a PF_GGUF_CONFIG row for "<arch>.<suffix>". */
static int pf__gguf_reads_key(const char *arch, const char *suffix) {
    for (size_t k = 0; k < PF__COUNT(pf__gguf_config_keys); k++)
        if (pf__gguf_row_of(pf__gguf_config_keys[k].arch, arch) && !strcmp(pf__gguf_config_keys[k].suffix, suffix)) return 1;
    return 0;
}

/* A tensor that arch a reads into the config's rope scaling rather than into a slot: LLaMA's
   rope_freqs, Phi-3's LongRoPE lists. */
static int pf__gguf_is_rope_table(const pf__gguf_arch *a, const pf__gguf_tensor *t) {
    static const char *const longrope[] = {"rope_factors_long.weight", "rope_factors_short.weight"};
    if (a->rotary == 1 && t->name_len == 17 && !memcmp(t->name, "rope_freqs.weight", 17)) return 1;
    for (size_t i = 0; i < PF__COUNT(longrope) && pf__gguf_reads_key(a->name, "rope.scaling.attn_factor"); i++)
        if (t->name_len == strlen(longrope[i]) && !memcmp(t->name, longrope[i], t->name_len)) return 1;
    return 0;
}

/* LLaMA 3.1's rope_freqs tensor: llama.cpp's converter stores the llama3 scaling as a factor per
   rotary frequency (each frequency divided by it) and no llama3 parameters, so the factors are
   used as they are: transformers' longrope with the same short and long lists and attention
   factor 1 computes exactly base^(-2i/d) / factor_i. */
static pf_result pf__gguf_rope_freqs(const pf__gguf *g, double head_dim, int scaled, pf__tok_buf *b, int *bad,
                                     char *message, size_t size) {
    const pf__gguf_tensor *t = pf__gguf_tensor_named(g, "rope_freqs.weight");
    if (!t) return PF_OK;
    if (scaled)
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: rope_freqs.weight with a rope scaling type as well is "
                          "not supported", g->path);
    pf_result r;
    for (int list = 0; list < 2; list++) {
        *bad |= pf__gguf_put(b, list ? "], \"long_factor\": [" : ", \"rope_scaling\": {\"rope_type\": \"longrope\", "
                                      "\"factor\": 1.0, \"attention_factor\": 1.0, \"short_factor\": [");
        if ((r = pf__gguf_put_rope_factors(g, t, head_dim, b, bad, message, size))) return r;
    }
    return *bad |= pf__gguf_put(b, "]}"), PF_OK;
}

/* Phi-3's LongRoPE as its converter writes it: rope_factors_short / rope_factors_long tensors, the
   pretraining length as rope.scaling.original_context_length and cos/sin's factor as
   rope.scaling.attn_factor; transformers' longrope with those lists (the long ones past that
   length, as a directory's config chooses them). */
static pf_result pf__gguf_longrope(const pf__gguf *g, const char *arch, double rotary_dims, pf__tok_buf *b, int *bad,
                                   char *message, size_t size) {
    const pf__gguf_tensor *lists[2] = {pf__gguf_tensor_named(g, "rope_factors_short.weight"),
                                       pf__gguf_tensor_named(g, "rope_factors_long.weight")};
    char key[96], text[160];
    double original = 0, attention = 0;
    if (!lists[0] && !lists[1]) return PF_OK;
    snprintf(key, sizeof key, "%s.rope.scaling.original_context_length", arch);
    int has_original = pf__gguf_get_number(g, key, &original) == 1 && original >= 1 && original < 1e9;
    snprintf(key, sizeof key, "%s.rope.scaling.attn_factor", arch);
    int has_attention = pf__gguf_get_number(g, key, &attention) == 1 && attention > 0 && attention < 1e6;
    if (!lists[0] || !lists[1] || !has_original || !has_attention)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: LongRoPE needs rope_factors_short.weight, "
                          "rope_factors_long.weight, %s.rope.scaling.original_context_length and %s.rope.scaling.attn_factor "
                          "together", g->path, arch, arch);
    pf_result r;
    for (int list = 0; list < 2; list++) {
        *bad |= pf__gguf_put(b, list ? "], \"long_factor\": [" : ", \"rope_scaling\": {\"rope_type\": \"longrope\", "
                                      "\"short_factor\": [");
        if ((r = pf__gguf_put_rope_factors(g, lists[list], rotary_dims, b, bad, message, size))) return r;
    }
    snprintf(text, sizeof text, "], \"original_max_position_embeddings\": %.17g, \"attention_factor\": %.17g}", original,
             attention);
    return *bad |= pf__gguf_put(b, text), PF_OK;
}

/* LLaMA's widths as transformers computes them (the rotary width is the whole head) and its rope
   scaling (none or linear); biases where the first block has them. */
static pf_result pf__gguf_rotary_config(const pf__gguf *g, const char *arch, double heads, pf__tok_buf *b, int *bad,
                                        char *message, size_t size) {
    char key[96];
    double v, hidden = 0, head_dim, factor = 1;
    if (pf__gguf_has_tensor(g, "blk.0.attn_q.bias")) *bad |= pf__gguf_put(b, ", \"attention_bias\": true");
    if (pf__gguf_has_tensor(g, "blk.0.ffn_up.bias")) *bad |= pf__gguf_put(b, ", \"mlp_bias\": true");
    snprintf(key, sizeof key, "%s.embedding_length", arch);
    pf__gguf_get_number(g, key, &hidden);
    head_dim = hidden / heads;
    snprintf(key, sizeof key, "%s.attention.key_length", arch);
    if (pf__gguf_get_number(g, key, &v) == 1) head_dim = v;
    else if (head_dim != floor(head_dim)) /* else every later check names a fractional head */
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: %s.attention.head_count %g does not divide %s.embedding_length "
                          "%g (and no %s gives the heads' width)", g->path, arch, heads, arch, hidden, key);
    snprintf(key, sizeof key, "%s.attention.value_length", arch);
    if (pf__gguf_get_number(g, key, &v) == 1 && v != head_dim)
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: %s %g differs from the key length %g: not supported",
                          g->path, key, v, head_dim);
    snprintf(key, sizeof key, "%s.rope.dimension_count", arch);
    if (pf__gguf_get_number(g, key, &v) == 1 && v != head_dim)
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: %s %g rotates part of a head of %g: not supported",
                          g->path, key, v, head_dim);
    const char *type = NULL;
    size_t type_len = 0;
    snprintf(key, sizeof key, "%s.rope.scaling.type", arch);
    int has_type = pf__gguf_get_string(g, key, &type, &type_len);
    snprintf(key, sizeof key, "%s.rope.scaling.factor", arch);
    int has_factor = pf__gguf_get_number(g, key, &factor);
    if (has_factor <= 0) {
        snprintf(key, sizeof key, "%s.rope.scale_linear", arch); /* older llama.cpp files */
        has_factor = pf__gguf_get_number(g, key, &factor);
    }
    if (has_type < 0 || has_factor < 0)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: %s.rope.scaling.type or its factor has the wrong type",
                          g->path, arch);
    int linear = has_type ? type_len == 6 && !memcmp(type, "linear", 6) : has_factor && factor != 1;
    int yarn = has_type && type_len == 4 && !memcmp(type, "yarn", 4);
    if (has_type && !linear && !yarn && !(type_len == 4 && !memcmp(type, "none", 4)))
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: %s.rope.scaling.type \"%.*s\" is not supported (none, "
                          "linear and yarn are)", g->path, arch, pf__gguf_shown(type_len), type);
    if ((linear || yarn) && !(factor >= 1 && factor < 1e6))
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: the rope scaling factor %g is not in [1, 1e6)", g->path, factor);
    if (linear) {
        char text[96];
        snprintf(text, sizeof text, ", \"rope_scaling\": {\"type\": \"linear\", \"factor\": %.17g}", factor);
        *bad |= pf__gguf_put(b, text);
    }
    if (yarn) { /* transformers' yarn with its default betas and attention factor, as llama.cpp's defaults are */
        double original = 0;
        char text[160];
        snprintf(key, sizeof key, "%s.rope.scaling.original_context_length", arch);
        if (pf__gguf_get_number(g, key, &original) != 1 || !(original >= 1 && original < 1e9))
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: yarn rope scaling needs %s", g->path, key);
        snprintf(text, sizeof text, ", \"rope_scaling\": {\"type\": \"yarn\", \"factor\": %.17g, "
                 "\"original_max_position_embeddings\": %.17g}", factor, original);
        *bad |= pf__gguf_put(b, text);
    }
    return pf__gguf_rope_freqs(g, head_dim, linear || yarn, b, bad, message, size);
}

/* The ids that end a generation (llama.cpp's end-of-generation tokens): eos, then these, read into
   the config's eos list in this order, and written from it so. */
static const char *const pf__gguf_eos_keys[] = {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id",
                                                "tokenizer.ggml.eom_token_id"};

/* A token id key's value in *id (1), absent (0), or an error (a message) for a bad one. */
static pf_result pf__gguf_token_id(const pf__gguf *g, const char *key, int64_t vocab, uint64_t *id, int *found,
                                   char *message, size_t size) {
    *found = pf__gguf_get_uint(g, key, id);
    if (*found < 0) return pf__format(message, size, PF_ERROR_FORMAT, "%s: metadata '%s' is not a token id", g->path, key);
    if (*found && *id >= (uint64_t)vocab)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: metadata '%s' %llu is outside the vocabulary (%lld)",
                          g->path, key, (unsigned long long)*id, (long long)vocab);
    return PF_OK;
}

/* Whether tokenizer.ggml.model is `name` ("gpt2", "llama", "bert"). */
static int pf__gguf_tokenizer_model_is(const pf__gguf *g, const char *name) {
    const char *model;
    size_t len;
    return pf__gguf_get_string(g, "tokenizer.ggml.model", &model, &len) == 1 && len == strlen(name) && !memcmp(model, name, len);
}

/* The special ids, as config.json and generation_config.json give them: eos_token_id a list where
   the file has an eot or eom id besides its eos (each id once). */
static pf_result pf__gguf_special_ids(const pf__gguf *g, int64_t vocab, pf__tok_buf *b, int *bad, char *message,
                                      size_t size) {
    static const char *const ids[][2] = {{"tokenizer.ggml.bos_token_id", "bos_token_id"},
                                         {"tokenizer.ggml.padding_token_id", "pad_token_id"}};
    uint64_t id, eos[PF__COUNT(pf__gguf_eos_keys)];
    int found, num_eos = 0;
    pf_result r;
    int wordpiece = pf__gguf_tokenizer_model_is(g, "bert"); /* its bos and eos: the tokenizer's [CLS] and [SEP] */
    for (size_t i = wordpiece; i < PF__COUNT(ids); i++) {
        if ((r = pf__gguf_token_id(g, ids[i][0], vocab, &id, &found, message, size))) return r;
        if (found) *bad |= pf__gguf_put_number(b, ids[i][1], (double)id);
    }
    for (size_t i = 0; i < PF__COUNT(pf__gguf_eos_keys) && !wordpiece; i++) {
        if ((r = pf__gguf_token_id(g, pf__gguf_eos_keys[i], vocab, &id, &found, message, size))) return r;
        int seen = 0;
        for (int k = 0; k < num_eos; k++) seen |= eos[k] == id;
        if (found && !seen) eos[num_eos++] = id;
    }
    if (num_eos == 1) *bad |= pf__gguf_put_number(b, "eos_token_id", (double)eos[0]);
    for (int k = 0; num_eos > 1 && k < num_eos; k++) {
        char text[48];
        snprintf(text, sizeof text, "%s%llu%s", k ? ", " : ", \"eos_token_id\": [", (unsigned long long)eos[k],
                 k + 1 == num_eos ? "]" : "");
        *bad |= pf__gguf_put(b, text);
    }
    return PF_OK;
}

/* The PF_GGUF_CLASS_UNLESS and PF_GGUF_CLASS_WITH rows: another family under one
   general.architecture. */
static const struct {
    const char *arch, *suffix;
    double value;
    int with; /* a CLASS_WITH row: the key's presence (not 0) decides */
    const char *model_type, *hf_class;
} pf__gguf_classes[] = {
#define PF_GGUF_CLASS_UNLESS(arch, suffix, value, model_type, hf_class) {arch, suffix, value, 0, model_type, hf_class},
#define PF_GGUF_CLASS_WITH(arch, suffix, model_type, hf_class) {arch, suffix, 0, 1, model_type, hf_class},
#include "policies.inc"
    {"", "", 0, 0, NULL, NULL} /* none may be listed */
};

/* The class row that takes a file of arch (an UNLESS row: its key not the row's value, or absent;
   a WITH row: its key there, not 0), or -1: the PF_GGUF_ARCH row's family. */
static int pf__gguf_class_row(const pf__gguf *g, const char *arch) {
    char key[96];
    for (size_t i = 0; i + 1 < PF__COUNT(pf__gguf_classes); i++) {
        double v = 0;
        if (!pf__gguf_row_of(pf__gguf_classes[i].arch, arch)) continue;
        snprintf(key, sizeof key, "%s.%s", arch, pf__gguf_classes[i].suffix);
        int has = pf__gguf_get_number(g, key, &v) == 1;
        if (pf__gguf_classes[i].with ? has && v != 0 : !has || v != pf__gguf_classes[i].value) return (int)i;
    }
    return -1;
}

/* DeepSeek's (deepseek2's) config beyond the PF_GGUF_CONFIG rows, as llama.cpp reads the file:
   V3's sigmoid routing or V2's softmax (any other gating is refused); V2 greedy over all experts,
   or with groups group_limited_greedy as DeepSeek V2 and transformers route (a group scored by its
   best expert; llama.cpp scores it by the sum of its best 2, V3's way); the head widths from the _mla keys (newer files:
   key_length is kv_lora_rank + the rope width there) or key_length and value_length; no
   q_lora_rank: q_proj; absent routing keys as llama.cpp takes them (no groups, no scale, not
   renormalised), not transformers' V3 defaults; yarn with llama.cpp's yarn_log_multiplier (0.1
   mscale_all_dim) as both mscales, which makes the rotation's factor 1 and the scores' mscale^2,
   as llama.cpp's graph computes them (its corrections truncated, as transformers' default). */
static pf_result pf__gguf_mla_config(const pf__gguf *g, const char *arch, pf__tok_buf *b, int *bad, char *message,
                                     size_t size) {
    char key[96], text[256];
    double v = 0, rope = 0, key_width = 0, value_width = 0;
    int flag = 0;
#define PF__MLA_KEY(suffix) (snprintf(key, sizeof key, "%s.%s", arch, suffix), key)
    int v2 = pf__gguf_class_row(g, arch) >= 0; /* softmax routing: DeepSeek V2's */
    if (pf__gguf_get_number(g, PF__MLA_KEY("expert_gating_func"), &v) == 1 && v != 1 && v != 2)
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: %s %g is neither softmax (1, DeepSeek V2's) nor "
                          "sigmoid (2, V3's)", g->path, key, v);
    if (v2) { /* groups: DeepSeek V2's group_limited_greedy, its group_count and group_used_count keys as n_group, topk_group */
        int grouped = pf__gguf_get_number(g, PF__MLA_KEY("expert_group_count"), &v) == 1 && v > 1;
        *bad |= pf__gguf_put(b, grouped ? ", \"topk_method\": \"group_limited_greedy\"" : ", \"topk_method\": \"greedy\"");
    }
    if (pf__gguf_get_number(g, PF__MLA_KEY("rope.dimension_count"), &rope) != 1 || !(rope >= 2 && rope < 1e6))
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: %s is missing or not a width", g->path, key);
    int mla = pf__gguf_get_number(g, PF__MLA_KEY("attention.key_length_mla"), &key_width) == 1;
    if (!mla) pf__gguf_get_number(g, PF__MLA_KEY("attention.key_length"), &key_width);
    pf__gguf_get_number(g, PF__MLA_KEY(mla ? "attention.value_length_mla" : "attention.value_length"), &value_width);
    if (!(key_width > rope && key_width < 1e6 && value_width >= 1 && value_width < 1e6))
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: %s.attention.key_length%s %g and value_length%s %g are not "
                          "head widths beside a rope width of %g", g->path, arch, mla ? "_mla" : "", key_width,
                          mla ? "_mla" : "", value_width, rope);
    snprintf(text, sizeof text, ", \"qk_nope_head_dim\": %.17g, \"v_head_dim\": %.17g", key_width - rope, value_width);
    *bad |= pf__gguf_put(b, text);
    if (!pf__gguf_find(g, PF__MLA_KEY("attention.q_lora_rank"))) *bad |= pf__gguf_put(b, ", \"q_lora_rank\": null");
    if (!pf__gguf_find(g, PF__MLA_KEY("expert_group_count"))) *bad |= pf__gguf_put(b, ", \"n_group\": 1, \"topk_group\": 1");
    if (!pf__gguf_find(g, PF__MLA_KEY("expert_weights_scale"))) *bad |= pf__gguf_put(b, ", \"routed_scaling_factor\": 1");
    if (pf__gguf_get_bool(g, PF__MLA_KEY("expert_weights_norm"), &flag) < 0)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: %s is not a boolean", g->path, key);
    *bad |= pf__gguf_put(b, flag ? ", \"norm_topk_prob\": true" : ", \"norm_topk_prob\": false");
    const char *type = NULL;
    size_t type_len = 0;
    double factor = 0, original = 0, log_mul = 0;
    int has_type = pf__gguf_get_string(g, PF__MLA_KEY("rope.scaling.type"), &type, &type_len);
    if (has_type < 0 || (has_type && !(type_len == 4 && (!memcmp(type, "yarn", 4) || !memcmp(type, "none", 4)))))
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: %s is not \"yarn\" or \"none\"", g->path, key);
    if (has_type && !memcmp(type, "yarn", 4)) {
        if (pf__gguf_get_number(g, PF__MLA_KEY("rope.scaling.factor"), &factor) != 1 || !(factor >= 1 && factor < 1e6) ||
            pf__gguf_get_number(g, PF__MLA_KEY("rope.scaling.original_context_length"), &original) != 1 ||
            !(original >= 1 && original < 1e9) ||
            pf__gguf_get_number(g, PF__MLA_KEY("rope.scaling.yarn_log_multiplier"), &log_mul) != 1 || !(log_mul >= 0 && log_mul < 1e3))
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: %s.rope.scaling (yarn) needs a factor, "
                              "original_context_length and yarn_log_multiplier", g->path, arch);
        snprintf(text, sizeof text, ", \"rope_scaling\": {\"type\": \"yarn\", \"factor\": %.17g, "
                 "\"original_max_position_embeddings\": %.17g, \"mscale\": %.17g, \"mscale_all_dim\": %.17g}", factor,
                 original, log_mul / 0.1, log_mul / 0.1);
        *bad |= pf__gguf_put(b, text);
    }
#undef PF__MLA_KEY
    return PF_OK;
}

/* config.json from the metadata of architecture a, into b; the head is tied when the file has
   no output.weight. */
static pf_result pf__gguf_config_json(const pf__gguf *g, const pf__gguf_arch *a, int64_t vocab, pf__tok_buf *b,
                                      char *message, size_t size) {
    char text[160], key[96];
    double heads = 0, v;
    int bad = 0;
    pf_result r;
    int other = pf__gguf_class_row(g, a->name);
    snprintf(text, sizeof text, "{\"model_type\": \"%s\", \"architectures\": [\"%s\"]%s",
             other >= 0 ? pf__gguf_classes[other].model_type : a->model_type,
             other >= 0 ? pf__gguf_classes[other].hf_class : a->hf_class, a->extra_config);
    bad |= pf__gguf_put(b, text);
    bad |= pf__gguf_put(b, pf__gguf_has_tensor(g, "output.weight") ? ", \"tie_word_embeddings\": false"
                                                                    : ", \"tie_word_embeddings\": true");
    if ((r = pf__gguf_known_keys(g, a->name, b, &bad, message, size))) return r;
    for (size_t i = 0; i < PF__COUNT(pf__gguf_strings); i++) { /* string keys read for one value (PF_GGUF_STRING rows) */
        const char *text = NULL;
        size_t len = 0;
        if (!pf__gguf_row_of(pf__gguf_strings[i].arch, a->name)) continue;
        snprintf(key, sizeof key, "%s.%s", a->name, pf__gguf_strings[i].suffix);
        int has = pf__gguf_get_string(g, key, &text, &len);
        if (has < 0 || (has && !(len == strlen(pf__gguf_strings[i].value) && !memcmp(text, pf__gguf_strings[i].value, len))))
            return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: metadata '%s' \"%.*s\" is not supported (\"%s\" "
                              "is)", g->path, key, pf__gguf_shown(len), text ? text : "", pf__gguf_strings[i].value);
    }
    snprintf(key, sizeof key, "%s.attention.head_count", a->name);
    if (pf__gguf_get_number(g, key, &heads) != 1 || !(heads >= 1))
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: metadata '%s' is missing or not a count", g->path, key);
    snprintf(key, sizeof key, "%s.vocab_size", a->name);
    if (pf__gguf_get_number(g, key, &v) == 1 && v != (double)vocab)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: metadata '%s' is %g, but the token embedding has %lld rows",
                          g->path, key, v, (long long)vocab);
    bad |= pf__gguf_put_number(b, "vocab_size", (double)vocab);
    const pf__gguf_tensor *types = pf__gguf_tensor_named(g, "token_types.weight"); /* BERT's segment embedding */
    if (types && types->ndim == 2) bad |= pf__gguf_put_number(b, "type_vocab_size", (double)types->rows);
    if (a->rotary == 1 && (r = pf__gguf_rotary_config(g, a->name, heads, b, &bad, message, size))) return r;
    if (a->rotary == 4 && (r = pf__gguf_mla_config(g, a->name, b, &bad, message, size))) return r;
    if (a->rotary == 2 || a->rotary == 3) { /* the rotated share of each head: GPT-NeoX's key, or the later one */
        double hidden = 0, dims = 0;
        snprintf(key, sizeof key, "%s.embedding_length", a->name);
        pf__gguf_get_number(g, key, &hidden);
        snprintf(key, sizeof key, "%s.rope.dimension_count", a->name);
        if (pf__gguf_get_number(g, key, &dims) == 1) {
            if (!(hidden > 0 && dims > 0 && dims <= hidden / heads))
                return pf__format(message, size, PF_ERROR_FORMAT, "%s: %s %g does not fit heads of %g", g->path, key, dims,
                                  hidden / heads);
            bad |= pf__gguf_put_number(b, a->rotary == 2 ? "rotary_pct" : "partial_rotary_factor", dims / (hidden / heads));
        }
        double rotary_dims = dims > 0 ? dims : hidden / heads;
        if (pf__gguf_reads_key(a->name, "rope.scaling.attn_factor") &&
            (r = pf__gguf_longrope(g, a->name, rotary_dims, b, &bad, message, size)))
            return r;
    }
    if (pf__gguf_has_tensor(g, "blk.0.attn_qkv.weight"))
        bad |= pf__gguf_put(b, pf__gguf_has_tensor(g, "blk.0.attn_qkv.bias") ? ", \"attention_bias\": true"
                                                                            : ", \"attention_bias\": false");
    for (size_t i = 0; i < PF__COUNT(pf__gguf_if_tensor); i++)
        if (pf__gguf_row_of(pf__gguf_if_tensor[i].arch, a->name) &&
            pf__gguf_has_tensor(g, pf__gguf_if_tensor[i].tensor))
            bad |= pf__gguf_put(b, pf__gguf_if_tensor[i].config);
    for (size_t i = 0; i < PF__COUNT(pf__gguf_if_value); i++) {
        if (!pf__gguf_row_of(pf__gguf_if_value[i].arch, a->name)) continue;
        snprintf(key, sizeof key, "%s.%s", a->name, pf__gguf_if_value[i].suffix);
        if (pf__gguf_get_number(g, key, &v) == 1 && v == pf__gguf_if_value[i].value)
            bad |= pf__gguf_put(b, pf__gguf_if_value[i].config);
    }
    if ((r = pf__gguf_special_ids(g, vocab, b, &bad, message, size))) return r;
    bad |= pf__gguf_put(b, "}");
    return bad ? pf__gguf_json_failure(g, b, "the config's metadata", message, size) : PF_OK;
}

/* The architectures without a head_count_kv key read (no rotary metadata) write one anyway: the
   key/value heads their config makes (as many as the heads, or StarCoder's one, multi-query),
   which the file's count must be. */
static pf_result pf__gguf_check_kv_heads(const pf__gguf *g, const pf__gguf_arch *a, const pf__config *c, char *message,
                                         size_t size) {
    char key[96];
    double v = 0;
    snprintf(key, sizeof key, "%s.attention.head_count_kv", a->name);
    if (a->rotary || pf__gguf_get_number(g, key, &v) != 1 || v == c->num_kv_heads) return PF_OK;
    return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: %s %g: not supported (the config's model has %d key/value "
                      "heads)", g->path, key, v, c->num_kv_heads);
}

/* ---- tensors ---- */

/* How a GGUF tensor becomes the checkpoint's: llama.cpp's converter reorders the rows of LLaMA's
   q and k (its rotary pairs adjacent dimensions, transformers' rotates halves) and stores GPT-2's
   Conv1D weights as [out][in], and Gemma's norm weights with the 1 its norm adds already added;
   we undo each. A mixture's experts are one [experts][rows][cols] tensor, split into the
   checkpoint's tensor per expert (views of the map, blocks and all); a vector that transformers
   keeps as a [1, n] row (Qwen2-MoE's shared expert gate) is read as that row. */
typedef enum {
    PF__GGUF_AS_IS, PF__GGUF_UNPERMUTE_Q, PF__GGUF_UNPERMUTE_K, PF__GGUF_TRANSPOSE, PF__GGUF_INTERLEAVE_QKV, PF__GGUF_MINUS_ONE,
    PF__GGUF_SPLIT_EXPERTS, PF__GGUF_AS_ROW, PF__GGUF_GROUP_QKV, PF__GGUF_GATE_UP_BIASES, PF__GGUF_KV_B_FROM_K_B,
    PF__GGUF_READ_WITH, PF__GGUF_NOT_WRITTEN
} pf__gguf_transform;

typedef struct pf__gguf_name {
    const char *arch;
    const char *gguf;   /* llama.cpp's name; "blk.%d." names are per layer */
    const char *hf;     /* transformers' name, %d the same layer */
    pf__gguf_transform transform;
} pf__gguf_name;

static const pf__gguf_name pf__gguf_names[] = {
#define PF_GGUF_TENSOR(arch, gguf, hf, transform) {arch, gguf, hf, PF__GGUF_##transform},
#include "policies.inc"
};

/* The row of t's name for arch, its layer in *layer; NULL when there is none. */
/* A READ_WITH tensor t of layer `layer`: the file has the tensor of the row that reads it (arch's
   other row of the same transformers name). */
static pf_result pf__gguf_check_reader(const pf__gguf *g, const char *arch, const pf__gguf_name *e,
                                       const pf__gguf_tensor *t, int layer, char *message, size_t size) {
    char reader[128] = "";
    for (size_t i = 0; i < PF__COUNT(pf__gguf_names); i++) {
        const pf__gguf_name *row = &pf__gguf_names[i];
        if (row == e || row->transform == PF__GGUF_READ_WITH || !pf__gguf_row_of(row->arch, arch) || strcmp(row->hf, e->hf))
            continue;
        snprintf(reader, sizeof reader, row->gguf, layer);
        if (pf__gguf_has_tensor(g, reader)) return PF_OK;
    }
    return pf__format(message, size, PF_ERROR_FORMAT, "%s: tensor '%.*s' has no %s beside it", g->path,
                      pf__gguf_shown(t->name_len), t->name, reader);
}

/* The tensor row of t under arch's rows, variant's first (variant NULL: none). */
static const pf__gguf_name *pf__gguf_name_for(const char *arch, const char *variant, const pf__gguf_tensor *t, int *layer) {
    char name[128];
    const char *rest = name;
    *layer = -1;
    if (t->name_len >= sizeof name) return NULL;
    memcpy(name, t->name, t->name_len);
    name[t->name_len] = 0;
    if (!strncmp(name, "blk.", 4)) { /* blk.N.rest: N a plain decimal */
        const char *p = name + 4;
        long n = 0;
        if (!isdigit((unsigned char)*p) || (*p == '0' && isdigit((unsigned char)p[1]))) return NULL;
        while (isdigit((unsigned char)*p) && n < 1000000) n = n * 10 + (*p++ - '0');
        if (*p != '.' || n >= 1000000) return NULL;
        *layer = (int)n;
        rest = p + 1;
    }
    for (int pass = variant ? 0 : 1; pass < 2; pass++)
        for (size_t i = 0; i < PF__COUNT(pf__gguf_names); i++) {
            const pf__gguf_name *e = &pf__gguf_names[i];
            int per_layer = !strncmp(e->gguf, "blk.%d.", 7);
            if ((pass ? !pf__gguf_row_of(e->arch, arch) : strcmp(e->arch, variant)) || per_layer != (*layer >= 0) ||
                e->transform == PF__GGUF_NOT_WRITTEN)
                continue;
            if (!strcmp(per_layer ? e->gguf + 7 : e->gguf, rest)) return e;
        }
    return NULL;
}

static float pf__gguf_f16(const uint8_t *p) { return pf__f16_to_f32((uint16_t)(p[0] | p[1] << 8)); }

/* Row `row` of t as fp32, the arithmetic of ggml's dequantize_row_* (what the gguf package computes). */
static void pf__gguf_dequantize_row(const pf__gguf_tensor *t, size_t row, float *out) {
    size_t n = t->cols, block = pf__ggml_types[t->type].block, bytes = pf__ggml_types[t->type].bytes;
    const uint8_t *src = t->data + row * (n / block) * bytes;
    for (size_t b = 0; b < n / block; b++, src += bytes, out += block) {
        switch (t->type) {
        case PF__GGML_F32: {
            uint32_t bits = (uint32_t)pf__gguf_le(src, 4);
            memcpy(out, &bits, 4);
            break;
        }
        case PF__GGML_F16: out[0] = pf__gguf_f16(src); break;
        case PF__GGML_BF16: out[0] = pf__bf16_to_f32((uint16_t)(src[0] | src[1] << 8)); break;
        default: pf__block_dequantize(pf__ggml_types[t->type].dtype, src, out);
        }
    }
}

/* The transformers row that GGUF row r of a q or k weight was (llama.cpp's permute put the two
   halves of each head's rotary dimensions side by side: row 2i + j of a head was row j * D/2 + i). */
static size_t pf__gguf_unpermuted_source(size_t hf_row, size_t head_rows) {
    size_t head = hf_row / head_rows, local = hf_row % head_rows, half = head_rows / 2;
    return head * head_rows + (local % half) * 2 + local / half;
}

/* The GGUF row that transformers' row of a fused q|k|v per head (GPT-NeoX, BLOOM) was: llama.cpp's
   converter regroups [head][q, k, v][head_rows] as [q, k, v][head][head_rows]. */
static size_t pf__gguf_interleaved_source(size_t hf_row, size_t heads, size_t head_rows) {
    size_t head = hf_row / (3 * head_rows), part = hf_row % (3 * head_rows) / head_rows, i = hf_row % head_rows;
    return part * heads * head_rows + head * head_rows + i;
}

/* The GGUF row that transformers' row of Falcon's fused qkv was: transformers groups each key/value
   head's queries, its key and its value ([kv_heads][heads / kv_heads + 2][head_rows]); llama.cpp's
   converter stores all queries, then all keys, then all values. */
static size_t pf__gguf_grouped_source(size_t hf_row, size_t heads, size_t kv_heads, size_t head_rows) {
    size_t queries = heads / kv_heads, group = hf_row / ((queries + 2) * head_rows),
           slot = hf_row / head_rows % (queries + 2), i = hf_row % head_rows;
    if (slot < queries) return (group * queries + slot) * head_rows + i;
    return (heads + (slot - queries) * kv_heads + group) * head_rows + i;
}

/* The GGUF row that transformers' row r was under transform (itself where rows stay). */
static size_t pf__gguf_source_row(pf__gguf_transform transform, size_t r, size_t heads, size_t kv_heads, size_t head_rows) {
    switch (transform) {
    case PF__GGUF_UNPERMUTE_Q:
    case PF__GGUF_UNPERMUTE_K: return pf__gguf_unpermuted_source(r, head_rows);
    case PF__GGUF_INTERLEAVE_QKV: return pf__gguf_interleaved_source(r, heads, head_rows);
    case PF__GGUF_GROUP_QKV: return pf__gguf_grouped_source(r, heads, kv_heads, head_rows);
    default: return r;
    }
}

/* A quantized matrix kept in its blocks: pointing into the map, or its rows copied whole in the
   order transform gives them (the rows a head's rotary halves, or a fused qkv, were rearranged in). */
static pf_result pf__gguf_keep_blocks(pf__st_index *index, pf__st_tensor *st, const pf__gguf_tensor *t,
                                      pf__gguf_transform transform, size_t heads, size_t kv_heads, size_t head_rows,
                                      char *message, size_t size) {
    st->dtype = pf__ggml_types[t->type].dtype;
    st->bytes = t->bytes;
    st->data = t->data;
    if (transform != PF__GGUF_AS_IS) {
        size_t row_bytes = t->bytes / t->rows;
        uint8_t *out = (uint8_t *)malloc(t->bytes);
        if (!out || pf__st_own(index, out)) return pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
        for (size_t r = 0; r < t->rows; r++) {
            size_t from = pf__gguf_source_row(transform, r, heads, kv_heads, head_rows);
            memcpy(out + r * row_bytes, t->data + from * row_bytes, row_bytes);
        }
        st->data = out;
    }
    index->num_tensors++;
    return PF_OK;
}

/* GGUF tensor t as the checkpoint tensor `name` of out: tensors that need no rearranging point
   into the map, quantized ones in their blocks (the ranks keep them so, or expand them as
   pf_parallel_options.dtype asks: src/slicing.c); a matrix whose rows are reordered (LLaMA's q and
   k, a fused qkv) becomes a copy of its rows in the new order, blocks and all, owned by the index;
   the others become fp32 copies (quantized types dequantized as ggml does). heads: the q or k
   weight's head count (a fused qkv's query heads), kv_heads a grouped qkv's key/value heads. */
static pf_result pf__gguf_add_tensor(pf__st_index *index, const pf__gguf *g, const pf__gguf_tensor *t, const char *name,
                                     pf__gguf_transform transform, size_t heads, size_t kv_heads, char *message,
                                     size_t size) {
    pf__st_tensor *st = &index->tensors[index->num_tensors];
    memset(st, 0, sizeof *st);
    char *owned_name = strdup(name);
    if (!owned_name || pf__st_own(index, owned_name)) return pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    st->name = owned_name;
    st->file = &index->files[0];
    for (int k = 1; k < index->num_files; k++) /* the part of a split file that holds it */
        if (t->data >= index->files[k].data && t->data < index->files[k].data + index->files[k].size) st->file = &index->files[k];
    /* numpy's order: the outermost dim first */
    st->ndim = t->ndim;
    for (int d = 0; d < t->ndim; d++) st->shape[d] = (size_t)t->ne[t->ndim - 1 - d];
    if (transform == PF__GGUF_AS_ROW) {
        if (t->ndim != 1)
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: tensor '%.*s' is not a vector", g->path,
                              pf__gguf_shown(t->name_len), t->name);
        st->ndim = 2, st->shape[0] = 1, st->shape[1] = (size_t)t->ne[0];
        transform = PF__GGUF_AS_IS;
    }
    st->numel = t->rows * t->cols;
    int plain = t->type == PF__GGML_F32 || t->type == PF__GGML_F16 || t->type == PF__GGML_BF16;
    if (plain && transform == PF__GGUF_AS_IS) {
        st->dtype = t->type == PF__GGML_F32 ? PF__DTYPE_F32 : t->type == PF__GGML_F16 ? PF__DTYPE_F16 : PF__DTYPE_BF16;
        st->data = t->data;
        st->bytes = t->bytes;
        index->num_tensors++;
        return PF_OK;
    }
    size_t rows = t->ndim == 1 ? t->cols : t->rows, head_rows = heads ? rows / heads : 0; /* a bias: its elements are rows */
    if (transform == PF__GGUF_INTERLEAVE_QKV && (!heads || rows % (3 * heads)))
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: tensor '%.*s' has %zu rows, not q, k and v for %zu heads",
                          g->path, pf__gguf_shown(t->name_len), t->name, rows, heads);
    if (transform == PF__GGUF_INTERLEAVE_QKV) head_rows = rows / (3 * heads);
    if (transform == PF__GGUF_GROUP_QKV) {
        if (!heads || !kv_heads || heads % kv_heads || rows % (heads + 2 * kv_heads))
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: tensor '%.*s' has %zu rows, not q, k and v for %zu heads "
                              "in %zu groups", g->path, pf__gguf_shown(t->name_len), t->name, rows, heads, kv_heads);
        head_rows = rows / (heads + 2 * kv_heads);
    }
    if (transform == PF__GGUF_UNPERMUTE_Q || transform == PF__GGUF_UNPERMUTE_K) {
        if (!heads || rows % heads || head_rows % 2)
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: tensor '%.*s' has %zu rows, not an even number per "
                              "head for %zu heads", g->path, pf__gguf_shown(t->name_len), t->name, rows, heads);
    }
    if (transform == PF__GGUF_TRANSPOSE && t->ndim != 2)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: tensor '%.*s' is not a matrix", g->path, pf__gguf_shown(t->name_len), t->name);
    int rows_moved_whole = transform == PF__GGUF_AS_IS || transform == PF__GGUF_UNPERMUTE_Q ||
                           transform == PF__GGUF_UNPERMUTE_K || transform == PF__GGUF_INTERLEAVE_QKV ||
                           transform == PF__GGUF_GROUP_QKV;
    if (!plain && t->ndim >= 2 && rows_moved_whole)
        return pf__gguf_keep_blocks(index, st, t, transform, heads, kv_heads, head_rows, message, size);
    float *out = (float *)malloc(st->numel * sizeof(float)), *row = (float *)malloc(t->cols * sizeof(float));
    if (!out || !row || pf__st_own(index, out)) { /* pf__st_own frees out when it fails */
        if (!row) free(out);
        free(row);
        return pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    int reordered = rows_moved_whole && transform != PF__GGUF_AS_IS;
    if (t->ndim == 1 && reordered) { /* a bias: its elements are the rows */
        pf__gguf_dequantize_row(t, 0, row);
        for (size_t r = 0; r < rows; r++) out[r] = row[pf__gguf_source_row(transform, r, heads, kv_heads, head_rows)];
    } else {
        for (size_t r = 0; r < t->rows; r++) {
            pf__gguf_dequantize_row(t, pf__gguf_source_row(transform, r, heads, kv_heads, head_rows), row);
            if (transform == PF__GGUF_TRANSPOSE) /* GGUF [out][in] rows into the checkpoint's [in][out] */
                for (size_t k = 0; k < t->cols; k++) out[k * t->rows + r] = row[k];
            else memcpy(out + r * t->cols, row, t->cols * sizeof(float));
        }
    }
    free(row);
    if (transform == PF__GGUF_MINUS_ONE) /* the checkpoint's weight w of a norm scaling by 1 + w */
        for (size_t i = 0; i < st->numel; i++) out[i] -= 1.0f;
    if (transform == PF__GGUF_TRANSPOSE) { /* the checkpoint's shape: [in][out] */
        st->shape[0] = t->cols;
        st->shape[1] = t->rows;
    }
    st->dtype = PF__DTYPE_F32;
    st->data = (const uint8_t *)out;
    st->bytes = st->numel * sizeof(float);
    index->num_tensors++;
    return PF_OK;
}

/* A tensor of experts [experts][rows][cols] as the checkpoint's tensor of each expert, pattern
   (transformers' name, %d the layer then the expert): views of its rows, blocks and all. */
static pf_result pf__gguf_add_experts(pf__st_index *index, const pf__gguf *g, const pf__gguf_tensor *t, const char *pattern,
                                      int layer, char *message, size_t size) {
    if (t->ndim != 3 || !t->ne[2] || t->ne[2] > PF__GGUF_MAX_EXPERTS || t->rows % t->ne[2])
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: tensor '%.*s' is not [experts, rows, columns]", g->path,
                          pf__gguf_shown(t->name_len), t->name);
    pf__gguf_tensor expert = *t;
    expert.ndim = 2;
    expert.rows = t->rows / t->ne[2];
    expert.bytes = t->bytes / t->ne[2];
    for (uint64_t x = 0; x < t->ne[2]; x++) {
        char name[160];
        snprintf(name, sizeof name, pattern, layer, (int)x);
        expert.data = t->data + x * expert.bytes;
        pf_result r = pf__gguf_add_tensor(index, g, &expert, name, PF__GGUF_AS_IS, 0, 0, message, size);
        if (r) return r;
    }
    return PF_OK;
}


/* An fp32 matrix [rows][cols] built at load (out, which the index owns already) as the checkpoint's
   tensor pattern (%d the layer). */
static pf_result pf__gguf_add_built(pf__st_index *index, float *out, size_t rows, size_t cols, const char *pattern,
                                    int layer, char *message, size_t size) {
    char name[160];
    snprintf(name, sizeof name, pattern, layer);
    char *owned_name = strdup(name);
    if (!owned_name || pf__st_own(index, owned_name)) return pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    pf__st_tensor *st = &index->tensors[index->num_tensors++];
    memset(st, 0, sizeof *st);
    st->name = owned_name;
    st->file = &index->files[0];
    st->dtype = PF__DTYPE_F32;
    st->ndim = 2;
    st->shape[0] = rows;
    st->shape[1] = cols;
    st->numel = rows * cols;
    st->data = (const uint8_t *)out;
    st->bytes = st->numel * sizeof(float);
    return PF_OK;
}

/* gpt-oss's expert biases, which the converter splits into ffn_gate_exps.bias and ffn_up_exps.bias
   ([experts][I] each; t the gate's, of layer `layer`): interleaved again as transformers'
   gate_up_proj_bias [experts][2 I] (gate i at 2i, up i at 2i + 1), fp32, named by pattern. */
static pf_result pf__gguf_add_gate_up_biases(pf__st_index *index, const pf__gguf *g, const pf__gguf_tensor *t,
                                             const char *pattern, int layer, char *message, size_t size) {
    char up_name[64];
    snprintf(up_name, sizeof up_name, "blk.%d.ffn_up_exps.bias", layer);
    const pf__gguf_tensor *up = pf__gguf_tensor_named(g, up_name);
    if (!up || t->ndim != 2 || up->ndim != 2 || up->ne[0] != t->ne[0] || up->ne[1] != t->ne[1])
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: tensor '%.*s' has no %s of its [experts, I] shape beside it",
                          g->path, pf__gguf_shown(t->name_len), t->name, up_name);
    size_t experts = t->rows, width = t->cols;
    float *out = (float *)malloc(experts * 2 * width * sizeof(float)), *gate_row = (float *)malloc(2 * width * sizeof(float));
    if (!out || !gate_row || pf__st_own(index, out)) { /* pf__st_own frees out when it fails */
        if (!gate_row) free(out);
        free(gate_row);
        return pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    float *up_row = gate_row + width;
    for (size_t e = 0; e < experts; e++) {
        pf__gguf_dequantize_row(t, e, gate_row);
        pf__gguf_dequantize_row(up, e, up_row);
        for (size_t i = 0; i < width; i++) out[(e * width + i) * 2] = gate_row[i], out[(e * width + i) * 2 + 1] = up_row[i];
    }
    free(gate_row);
    return pf__gguf_add_built(index, out, experts, 2 * width, pattern, layer, message, size);
}

/* DeepSeek's kv_b_proj [heads (nope + v), kv_lora], which newer converters split per head into
   attn_k_b [heads][kv_lora][nope] (its nope rows transposed) and attn_v_b [heads][v][kv_lora] (t the
   k_b, of layer `layer`): put back together as fp32, named by pattern. */
static pf_result pf__gguf_add_kv_b(pf__st_index *index, const pf__gguf *g, const pf__gguf_tensor *t, const char *pattern,
                                   int layer, const pf__config *c, char *message, size_t size) {
    char v_name[64];
    snprintf(v_name, sizeof v_name, "blk.%d.attn_v_b.weight", layer);
    const pf__gguf_tensor *vb = pf__gguf_tensor_named(g, v_name);
    size_t heads = (size_t)c->num_heads, nope = (size_t)c->qk_nope_head_dim, v = (size_t)c->v_head_dim;
    size_t latent = (size_t)c->kv_lora_rank;
    if (!vb || t->ndim != 3 || t->ne[0] != nope || t->ne[1] != latent || t->ne[2] != heads || vb->ndim != 3 ||
        vb->ne[0] != latent || vb->ne[1] != v || vb->ne[2] != heads)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: tensor '%.*s' [%zu, %zu, %zu] and %s are not k_b and v_b of "
                          "%zu heads (nope %zu, v %zu, kv_lora_rank %zu)", g->path, pf__gguf_shown(t->name_len), t->name,
                          heads, latent, nope, v_name, heads, nope, v, latent);
    size_t rows = heads * (nope + v);
    float *out = (float *)malloc(rows * latent * sizeof(float)), *row = (float *)malloc((nope > latent ? nope : latent) * sizeof(float));
    if (!out || !row || pf__st_own(index, out)) {
        if (!row) free(out);
        free(row);
        return pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    for (size_t h = 0; h < heads; h++) {
        float *head = out + h * (nope + v) * latent;
        for (size_t c_ = 0; c_ < latent; c_++) { /* k_b's row c: latent input c of the head's nope outputs */
            pf__gguf_dequantize_row(t, h * latent + c_, row);
            for (size_t i = 0; i < nope; i++) head[i * latent + c_] = row[i];
        }
        for (size_t i = 0; i < v; i++) pf__gguf_dequantize_row(vb, h * v + i, head + (nope + i) * latent);
    }
    free(row);
    return pf__gguf_add_built(index, out, rows, latent, pattern, layer, message, size);
}

/* ---- the tokenizer ---- */

/* tokenizer.ggml.pre names llama.cpp's pre-tokenizer; each as transformers' tokenizer.json writes it,
   whether llama.cpp's BPE then takes a whole word that is a token before its merges (LLaMA 3's
   ignore_merges), and the normalizer of the model's own tokenizer.json (Qwen2's NFC, which llama.cpp
   leaves out: we tokenize as transformers does). */
static const struct { const char *pre, *json; int ignore_merges; const char *normalizer; } pf__gguf_pretokenizers[] = {
    {"default", "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": true}", 0, NULL},
    {"gpt-2", "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": true}", 0, NULL},
    {"smollm", "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Digits\", \"individual_digits\": true}, "
               "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": true}]}", 0, NULL},
    {"llama-bpe", "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": {\"Regex\": "
                   "\"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?\\\\p{L}+|\\\\p{N}{1,3}| ?[^\\\\s\\\\p{L}\\\\p{N}]+[\\\\r\\\\n]*|\\\\s*[\\\\r\\\\n]+|\\\\s+(?!\\\\S)|\\\\s+\"}, "
                   "\"behavior\": \"Isolated\", \"invert\": false}, {\"type\": \"ByteLevel\", \"add_prefix_space\": false, "
                   "\"trim_offsets\": true, \"use_regex\": false}]}", 1, NULL},
    {"qwen2", "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": {\"Regex\": "
                   "\"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?\\\\p{L}+|\\\\p{N}| ?[^\\\\s\\\\p{L}\\\\p{N}]+[\\\\r\\\\n]*|\\\\s*[\\\\r\\\\n]+|\\\\s+(?!\\\\S)|\\\\s+\"}, "
                   "\"behavior\": \"Isolated\", \"invert\": false}, {\"type\": \"ByteLevel\", \"add_prefix_space\": false, "
                   "\"trim_offsets\": true, \"use_regex\": false}]}", 0, "{\"type\": \"NFC\"}"},
    /* OLMo's and OLMoE's (GPT-NeoX's tokenizer): GPT-2's split after NFC */
    {"olmo", "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": true}", 0, "{\"type\": \"NFC\"}"},
};

/* SentencePiece's BPE (tokenizer.ggml.model "llama") as tokenizer.json writes its pre-tokenizer and
   decoder, without ([0]) and with ([1]) the space prefix (tokenizer.ggml.add_space_prefix): what
   the reader makes of a file, and what the writer takes for that form. */
static const char *const pf__gguf_spm_pre[2] = {
    "{\"type\": \"Metaspace\", \"replacement\": \"\xe2\x96\x81\", \"split\": false, \"prepend_scheme\": \"never\"}",
    "{\"type\": \"Metaspace\", \"replacement\": \"\xe2\x96\x81\", \"split\": false, \"prepend_scheme\": \"first\"}"};
/* Gemma's tokenizer.json writes the form without the prefix so: the spaces replaced by its normalizer. */
static const char pf__gguf_gemma_normalizer[] =
    "{\"type\": \"Replace\", \"pattern\": {\"String\": \" \"}, \"content\": \"\xe2\x96\x81\"}";
static const char pf__gguf_gemma_pre[] =
    "{\"type\": \"Split\", \"pattern\": {\"String\": \" \"}, \"behavior\": \"MergedWithPrevious\", \"invert\": false}";
static const char *const pf__gguf_spm_decoder[2] = {
    "{\"type\": \"Sequence\", \"decoders\": [{\"type\": \"Replace\", \"pattern\": {\"String\": \"\xe2\x96\x81\"}, "
    "\"content\": \" \"}, {\"type\": \"ByteFallback\"}, {\"type\": \"Fuse\"}]}",
    "{\"type\": \"Sequence\", \"decoders\": [{\"type\": \"Replace\", \"pattern\": {\"String\": \"\xe2\x96\x81\"}, "
    "\"content\": \" \"}, {\"type\": \"ByteFallback\"}, {\"type\": \"Fuse\"}, {\"type\": \"Strip\", \"content\": \" \", "
    "\"start\": 1, \"stop\": 0}]}"};

enum { /* llama.cpp's token types (tokenizer.ggml.token_type) */
    PF__GGUF_TOKEN_NORMAL = 1, PF__GGUF_TOKEN_UNKNOWN = 2, PF__GGUF_TOKEN_CONTROL = 3, PF__GGUF_TOKEN_USER_DEFINED = 4
};

/* The i-th string of a string array (bounds checked when the file was parsed). */
static void pf__gguf_array_strings(const pf__gguf_kv *kv, const char **s, size_t *len, const uint8_t **at) {
    if (!*at) *at = kv->value;
    *len = (size_t)pf__gguf_le(*at, 8);
    *s = (const char *)*at + 8;
    *at += 8 + *len;
}

/* The token whose id the metadata key holds: its text and id; 1 when the key names a token. */
static int pf__gguf_special_text(const pf__gguf *g, const char *key, const char *const *texts, const size_t *lens,
                                 uint64_t vocab, const char **text, size_t *len, int64_t *id) {
    uint64_t v;
    if (pf__gguf_get_uint(g, key, &v) != 1 || v >= vocab) return 0;
    *text = texts[v];
    *len = lens[v];
    *id = (int64_t)v;
    return 1;
}

/* SentencePiece's BPE (tokenizer.ggml.model "llama") as merges, the way transformers converts a
   SentencePiece model: a normal piece is the merge of any two normal pieces it splits into, ranked
   by its score (higher first; for one piece, the longer left part first). */
typedef struct pf__gguf_piece {
    const char *s;
    size_t len;
    uint32_t id;
} pf__gguf_piece;

typedef struct pf__gguf_merge {
    float score;
    uint32_t left, right, left_len, whole; /* token ids; where it splits */
} pf__gguf_merge;

/* SentencePiece's trainer makes pieces of at most 512 characters (max_sentencepiece_length): a
   longer normal piece comes from no SentencePiece model (and a piece makes up to one merge per
   character). */
#define PF__GGUF_MAX_PIECE_CHARS 512
/* The most merges a SentencePiece vocabulary may make (about 50 bytes each while loading): real
   ones of 256k pieces make well under a million. */
#define PF__GGUF_MAX_MERGES ((size_t)1 << 22)

static int pf__gguf_piece_cmp(const void *a, const void *b) {
    const pf__gguf_piece *x = (const pf__gguf_piece *)a, *y = (const pf__gguf_piece *)b;
    return pf__gguf_name_cmp(x->s, x->len, y->s, y->len);
}

static int pf__gguf_merge_cmp(const void *a, const void *b) {
    const pf__gguf_merge *x = (const pf__gguf_merge *)a, *y = (const pf__gguf_merge *)b;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    if (x->left_len != y->left_len) return x->left_len > y->left_len ? -1 : 1;
    return x->left < y->left ? -1 : x->left > y->left;
}

static int32_t pf__gguf_token_type(const pf__gguf_kv *types, uint64_t i) {
    return types ? (int32_t)pf__gguf_le(types->value + 4 * i, 4) : PF__GGUF_TOKEN_NORMAL;
}

/* The merges of a SentencePiece vocabulary, ranked, into *out (*num_out; malloc'd, NULL without
   any). The splits of a piece that are two pieces are found by walking it through two tries of the
   normal pieces, forwards (the pieces it starts with) and backwards (those it ends with), so the
   work is the pieces' total length; the pieces' lengths and the merges' count are checked before
   the merges take any memory. */
static pf_result pf__gguf_spm_merges(const pf__gguf *g, const char *const *texts, const size_t *lens, const float *scores,
                                     const pf__gguf_kv *types, size_t count, pf__gguf_merge **out, size_t *num_out,
                                     char *message, size_t size) {
    pf__gguf_piece *sorted = (pf__gguf_piece *)malloc((count ? count : 1) * sizeof *sorted);
    pf__trie_key *keys = (pf__trie_key *)malloc((count ? count : 1) * sizeof *keys);
    uint32_t *canon = (uint32_t *)malloc((count ? count : 1) * sizeof *canon);
    int32_t *left = NULL, *right = NULL;
    pf__gguf_merge *merges = NULL;
    pf__trie fwd, rev;
    size_t num_sorted = 0, num_merges = 0, longest = 0;
    pf_result r = PF_OK;
    uint32_t cp;
    memset(&fwd, 0, sizeof fwd);
    memset(&rev, 0, sizeof rev);
    *out = NULL;
    *num_out = 0;
    if (!sorted || !keys || !canon) goto oom;
    for (size_t i = 0; i < count; i++) {
        size_t chars = 0;
        if (pf__gguf_token_type(types, i) != PF__GGUF_TOKEN_NORMAL) continue;
        for (size_t at = 0; at < lens[i] && chars <= PF__GGUF_MAX_PIECE_CHARS; chars++)
            at += pf__utf8_decode((const unsigned char *)texts[i] + at, lens[i] - at, &cp);
        if (chars > PF__GGUF_MAX_PIECE_CHARS) {
            r = pf__format(message, size, PF_ERROR_FORMAT, "%s: tokenizer.ggml.tokens: normal token %zu is longer than "
                           "SentencePiece's pieces can be (%d characters)", g->path, i, PF__GGUF_MAX_PIECE_CHARS);
            goto done;
        }
        sorted[num_sorted].s = texts[i], sorted[num_sorted].len = lens[i], sorted[num_sorted++].id = (uint32_t)i;
        if (lens[i] > longest) longest = lens[i];
    }
    if (num_sorted) qsort(sorted, num_sorted, sizeof *sorted, pf__gguf_piece_cmp);
    /* of equal pieces, the one a binary search for their text finds stands for them all (as when each
       split was looked up so) */
    for (size_t k = 0, end; k < num_sorted; k = end) {
        for (end = k + 1; end < num_sorted && !pf__gguf_piece_cmp(&sorted[k], &sorted[end]); end++) canon[end] = (uint32_t)end;
        canon[k] = (uint32_t)(end - k == 1 ? k : (size_t)((const pf__gguf_piece *)bsearch(&sorted[k], sorted, num_sorted,
                                                                   sizeof *sorted, pf__gguf_piece_cmp) - sorted));
    }
    for (int reversed = 0; reversed < 2; reversed++) { /* keys' values: indexes into sorted */
        for (size_t k = 0; k < num_sorted; k++)
            keys[k].s = (const unsigned char *)sorted[k].s, keys[k].len = sorted[k].len, keys[k].value = (int32_t)k;
        if (pf__trie_build(reversed ? &rev : &fwd, keys, num_sorted, reversed)) goto oom;
    }
    left = (int32_t *)malloc((longest + 1) * sizeof *left);
    right = (int32_t *)malloc((longest + 1) * sizeof *right);
    if (!left || !right) goto oom;
    for (int fill = 0; fill < 2; fill++) { /* count, then (within the bound) fill */
        for (size_t k = 0; k < num_sorted; k++) {
            const unsigned char *s = (const unsigned char *)sorted[k].s;
            size_t len = sorted[k].len, i;
            uint32_t node = 0;
            for (i = 0; i <= len; i++) left[i] = right[i] = -1;
            for (i = 0; i < len && (node = pf__trie_child(&fwd, node, s[i])); i++) left[i + 1] = fwd.nodes[node].value;
            for (i = len, node = 0; i-- > 1 && (node = pf__trie_child(&rev, node, s[i]));) right[i] = rev.nodes[node].value;
            for (size_t at = len ? pf__utf8_decode(s, len, &cp) : 0; at < len; at += pf__utf8_decode(s + at, len - at, &cp)) {
                if (left[at] < 0 || right[at] < 0) continue;
                if (fill) {
                    pf__gguf_merge mg = {scores[sorted[k].id], sorted[canon[left[at]]].id, sorted[canon[right[at]]].id,
                                         (uint32_t)at, sorted[k].id};
                    merges[num_merges] = mg;
                }
                num_merges++;
            }
        }
        if (fill) break;
        if (num_merges > PF__GGUF_MAX_MERGES) {
            r = pf__format(message, size, PF_ERROR_FORMAT, "%s: the SentencePiece vocabulary makes %zu merges, more than "
                           "the %zu a vocabulary may make", g->path, num_merges, PF__GGUF_MAX_MERGES);
            goto done;
        }
        if (!num_merges) goto done;
        if (!(merges = (pf__gguf_merge *)malloc(num_merges * sizeof *merges))) goto oom;
        num_merges = 0;
    }
    qsort(merges, num_merges, sizeof *merges, pf__gguf_merge_cmp);
    *out = merges;
    *num_out = num_merges;
    merges = NULL;
    goto done;
oom:
    r = pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
done:
    free(sorted);
    free(keys);
    free(canon);
    free(left);
    free(right);
    free(merges);
    pf__trie_free(&fwd);
    pf__trie_free(&rev);
    return r;
}

/* The ranked merges into the tokenizer's merge table, as tokenizer.json's "merges" would be read:
   the ids the vocab gives the pair's texts, its rank, the id it gives the whole's text (looked up
   once per token: a merge's texts are as long as its piece). */
static pf_result pf__gguf_spm_set_merges(pf_tokenizer *t, const pf__gguf_merge *merges, size_t n, const char *const *texts,
                                         const size_t *lens, size_t count, const char *path, char *message, size_t size) {
    size_t cap = pf__tok_pow2_at_least(2 * n + 1);
    pf__tok_merge_slot *table = (pf__tok_merge_slot *)malloc(cap * sizeof *table);
    int32_t *vocab_id = (int32_t *)malloc((count ? count : 1) * sizeof *vocab_id);
    pf_result r = PF_OK;
    if (!table || !vocab_id) {
        free(table);
        free(vocab_id);
        return pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    memset(table, 0xFF, cap * sizeof *table); /* rank UINT32_MAX everywhere */
    free(t->merges);
    t->merges = table;
    t->merges_mask = cap - 1;
    for (size_t i = 0; i < count; i++) vocab_id[i] = -2; /* not looked up yet */
    for (size_t k = 0; k < n && !r; k++) {
        const uint32_t piece[3] = {merges[k].left, merges[k].right, merges[k].whole};
        for (int j = 0; j < 3; j++)
            if (vocab_id[piece[j]] == -2) vocab_id[piece[j]] = pf__tok_vocab_find(t, texts[piece[j]], lens[piece[j]]);
        if (vocab_id[piece[0]] < 0 || vocab_id[piece[1]] < 0 || vocab_id[piece[2]] < 0) /* every token is in the vocab */
            r = pf__format(message, size, PF_ERROR_FORMAT, "%s: merge %zu: a piece is not in the vocab", path, k + 1);
        else
            pf__tok_merge_put(t, vocab_id[piece[0]], vocab_id[piece[1]], (uint32_t)k, vocab_id[piece[2]]);
    }
    free(vocab_id);
    return r;
}

/* The tokenizer.json "model" object's body into b: the vocabulary (texts and lens: each token's
   text), the merges (the file's; SentencePiece's are set after, pf__gguf_spm_set_merges), the unk
   token. Nonzero when out of memory. */
static int pf__gguf_put_model(pf__tok_buf *b, const pf__gguf *g, int spm, int ignore_merges, const pf__gguf_kv *tokens,
                              const pf__gguf_kv *merges, const char *const *texts, const size_t *lens) {
    const uint8_t *at = NULL;
    int bad = pf__gguf_put(b, spm ? "{\"model\": {\"type\": \"BPE\", \"byte_fallback\": true, \"fuse_unk\": true, \"vocab\": {"
                                  : ignore_merges ? "{\"model\": {\"type\": \"BPE\", \"byte_fallback\": false, "
                                                    "\"ignore_merges\": true, \"vocab\": {"
                                                  : "{\"model\": {\"type\": \"BPE\", \"byte_fallback\": false, \"vocab\": {");
    for (uint64_t i = 0; i < tokens->count && !bad; i++) {
        char id[32];
        snprintf(id, sizeof id, ": %llu", (unsigned long long)i);
        bad = (i && pf__gguf_put(b, ", ")) || pf__gguf_put_json_string(b, texts[i], lens[i]) || pf__gguf_put(b, id);
    }
    bad |= pf__gguf_put(b, "}, \"merges\": [");
    for (uint64_t i = 0; !spm && i < merges->count && !bad; i++) {
        const char *s;
        size_t n;
        pf__gguf_array_strings(merges, &s, &n, &at);
        bad = (i && pf__gguf_put(b, ", ")) || pf__gguf_put_json_string(b, s, n);
    }
    bad |= pf__gguf_put(b, "]");
    const char *unk_text;
    size_t unk_len;
    int64_t unk_id;
    if (spm && pf__gguf_special_text(g, "tokenizer.ggml.unknown_token_id", texts, lens, tokens->count, &unk_text, &unk_len,
                                     &unk_id))
        bad |= pf__gguf_put(b, ", \"unk_token\": ") || pf__gguf_put_json_string(b, unk_text, unk_len);
    return bad;
}

/* The added tokens (control, unknown and user-defined), then the normalizer, pre-tokenizer and
   decoder of the model kind (pretokenizer: the "gpt2" kind's row of pf__gguf_pretokenizers). */
static int pf__gguf_put_added_and_decoding(pf__tok_buf *b, int spm, int space_prefix, size_t pretokenizer,
                                           const pf__gguf_kv *types, const char **texts, const size_t *lens) {
    int bad = 0;
    bad |= pf__gguf_put(b, "}, \"added_tokens\": [");
    int first = 1;
    for (uint64_t i = 0; types && i < types->count && !bad; i++) {
        int32_t type = pf__gguf_token_type(types, i);
        char entry[160];
        if (type != PF__GGUF_TOKEN_CONTROL && type != PF__GGUF_TOKEN_USER_DEFINED && type != PF__GGUF_TOKEN_UNKNOWN) continue;
        snprintf(entry, sizeof entry, "%s{\"id\": %llu, \"special\": %s, \"normalized\": false, \"content\": ", first ? "" : ", ",
                 (unsigned long long)i, type != PF__GGUF_TOKEN_USER_DEFINED ? "true" : "false");
        bad = pf__gguf_put(b, entry) || pf__gguf_put_json_string(b, texts[i], lens[i]) || pf__gguf_put(b, "}");
        first = 0;
    }
    if (spm)
        bad |= pf__gguf_put(b, "], \"normalizer\": null, \"pre_tokenizer\": ") || pf__gguf_put(b, pf__gguf_spm_pre[space_prefix != 0]) ||
               pf__gguf_put(b, ", \"decoder\": ") || pf__gguf_put(b, pf__gguf_spm_decoder[space_prefix != 0]);
    else
        bad |= pf__gguf_put(b, "], \"normalizer\": ") ||
               pf__gguf_put(b, pf__gguf_pretokenizers[pretokenizer].normalizer ? pf__gguf_pretokenizers[pretokenizer].normalizer
                                                                               : "null") ||
               pf__gguf_put(b, ", \"pre_tokenizer\": ") ||
               pf__gguf_put(b, pf__gguf_pretokenizers[pretokenizer].json) || pf__gguf_put(b, ", \"decoder\": {\"type\": \"ByteLevel\"}");
    return bad;
}

/* The post-processor: bos / eos around each text, as the model's tokenizer_config.json's
   add_bos_token / add_eos_token say (none when neither). */
static pf_result pf__gguf_put_post_processor(pf__tok_buf *b, const pf__gguf *g, const char **texts, const size_t *lens,
                                             uint64_t count, char *message, size_t size) {
    int bad = 0;
    int add_bos = 0, add_eos = 0;
    if (pf__gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &add_bos) < 0 ||
        pf__gguf_get_bool(g, "tokenizer.ggml.add_eos_token", &add_eos) < 0)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: tokenizer.ggml.add_bos_token or add_eos_token is not a "
                          "boolean", g->path);
    const char *bos = NULL, *eos = NULL;
    size_t bos_len = 0, eos_len = 0;
    int64_t bos_id = -1, eos_id = -1;
    if (add_bos && !pf__gguf_special_text(g, "tokenizer.ggml.bos_token_id", texts, lens, count, &bos, &bos_len, &bos_id))
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: add_bos_token without a bos_token_id in the vocabulary", g->path);
    if (add_eos && !pf__gguf_special_text(g, "tokenizer.ggml.eos_token_id", texts, lens, count, &eos, &eos_len, &eos_id))
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: add_eos_token without an eos_token_id in the vocabulary", g->path);
    if (add_bos || add_eos) {
        /* single: [bos] A [eos]; pair: [bos] A [eos] [bos] B [eos] */
        const char *piece[2] = {bos, eos};
        size_t piece_len[2] = {bos_len, eos_len};
        int64_t piece_id[2] = {bos_id, eos_id};
        bad |= pf__gguf_put(b, ", \"post_processor\": {\"type\": \"TemplateProcessing\"");
        for (int pair = 0; pair < 2; pair++) {
            bad |= pf__gguf_put(b, pair ? ", \"pair\": [" : ", \"single\": [");
            for (int seq = 0; seq <= pair; seq++) {
                char type_id[64];
                snprintf(type_id, sizeof type_id, ", \"type_id\": %d}}", seq);
                if (bos) bad |= pf__gguf_put(b, seq ? ", {\"SpecialToken\": {\"id\": " : "{\"SpecialToken\": {\"id\": ") ||
                                pf__gguf_put_json_string(b, bos, bos_len) || pf__gguf_put(b, type_id);
                bad |= pf__gguf_put(b, bos || seq ? ", " : "") ||
                       pf__gguf_put(b, seq ? "{\"Sequence\": {\"id\": \"B\"" : "{\"Sequence\": {\"id\": \"A\"") ||
                       pf__gguf_put(b, type_id);
                if (eos) bad |= pf__gguf_put(b, ", {\"SpecialToken\": {\"id\": ") || pf__gguf_put_json_string(b, eos, eos_len) ||
                                pf__gguf_put(b, type_id);
            }
            bad |= pf__gguf_put(b, "]");
        }
        bad |= pf__gguf_put(b, ", \"special_tokens\": {");
        for (int k = 0, any = 0; k < 2; k++) {
            char ids[64];
            if (!piece[k] || (k == 1 && bos && bos_id == eos_id)) continue;
            snprintf(ids, sizeof ids, ", \"ids\": [%lld], \"tokens\": [", (long long)piece_id[k]);
            bad |= pf__gguf_put(b, any ? ", " : "") || pf__gguf_put_json_string(b, piece[k], piece_len[k]) ||
                   pf__gguf_put(b, ": {\"id\": ") || pf__gguf_put_json_string(b, piece[k], piece_len[k]) ||
                   pf__gguf_put(b, ids) || pf__gguf_put_json_string(b, piece[k], piece_len[k]) || pf__gguf_put(b, "]}");
            any = 1;
        }
        bad |= pf__gguf_put(b, "}}");
    }
    return bad ? pf__gguf_json_failure(g, b, "the tokenizer's metadata", message, size) : PF_OK;
}

/* The "\xe2\x96\x81" llama.cpp's BERT converter puts before each piece that starts a word ("phantom
   space"), where the vocabulary's continuing pieces lost their "##". */
static const char pf__gguf_phantom_space[] = "\xe2\x96\x81";

/* A token of a "bert" vocabulary (tokenizer.ggml.model) as BERT's vocab.txt has it: a control
   token as it is, a word's first piece without the phantom space, a continuing one with "##". */
static int pf__gguf_put_wordpiece_token(pf__tok_buf *b, const char *text, size_t len, int32_t type) {
    if (type == PF__GGUF_TOKEN_CONTROL || type == PF__GGUF_TOKEN_UNKNOWN) return pf__gguf_put_json_string(b, text, len);
    if (len >= 3 && !memcmp(text, pf__gguf_phantom_space, 3)) return pf__gguf_put_json_string(b, text + 3, len - 3);
    char *continued = (char *)malloc(len + 2);
    if (!continued) return 1;
    memcpy(continued, "##", 2);
    memcpy(continued + 2, text, len);
    int bad = pf__gguf_put_json_string(b, continued, len + 2);
    free(continued);
    return bad;
}

/* The token id a special-token key holds, or llama.cpp's default for a "bert" vocabulary where the
   key is absent; -1 when it names no token of the vocabulary. */
static int64_t pf__gguf_wordpiece_special(const pf__gguf *g, const char *key, uint64_t fallback, uint64_t count) {
    uint64_t id = fallback;
    if (pf__gguf_get_uint(g, key, &id) < 0) return -1;
    return id < count ? (int64_t)id : -1;
}

/* BERT's pre-tokenizer and decoder, and its normalizer and post-processor: what the reader makes
   of a "bert" vocabulary, and the forms the writer takes for one. */
static const char pf__gguf_bert_pre[] = "{\"type\": \"BertPreTokenizer\"}";
static const char pf__gguf_bert_decoder[] = "{\"type\": \"WordPiece\", \"prefix\": \"##\", \"cleanup\": true}";

static int pf__gguf_put_bert_normalizer(pf__tok_buf *b, int lowercase, int strip_accents) {
    char text[200];
    snprintf(text, sizeof text, "{\"type\": \"BertNormalizer\", \"clean_text\": true, \"handle_chinese_chars\": true, "
             "\"strip_accents\": %s, \"lowercase\": %s}", strip_accents ? "true" : "false", lowercase ? "true" : "false");
    return pf__gguf_put(b, text);
}

/* single: [CLS]:0 A:0 [SEP]:0; pair: then B:1 [SEP]:1 */
static int pf__gguf_put_bert_template(pf__tok_buf *b, const char *cls, size_t cls_len, int64_t cls_id, const char *sep,
                                      size_t sep_len, int64_t sep_id) {
    static const char *const parts[] = {"{\"type\": \"TemplateProcessing\", \"single\": [", "C0",
                                        ", {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}, ", "S0", "], \"pair\": [", "C0",
                                        ", {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}, ", "S0",
                                        ", {\"Sequence\": {\"id\": \"B\", \"type_id\": 1}}, ", "S1", "], \"special_tokens\": {",
                                        "c", ", ", "s", "}}"};
    int bad = 0;
    for (size_t k = 0; k < PF__COUNT(parts) && !bad; k++) {
        int is_cls = parts[k][0] == 'C' || parts[k][0] == 'c';
        const char *text = is_cls ? cls : sep;
        size_t len = is_cls ? cls_len : sep_len;
        char tail[96];
        if (parts[k][0] == 'C' || parts[k][0] == 'S') { /* a special token in a template */
            snprintf(tail, sizeof tail, ", \"type_id\": %c}}", parts[k][1]);
            bad = pf__gguf_put(b, "{\"SpecialToken\": {\"id\": ") || pf__gguf_put_json_string(b, text, len) ||
                  pf__gguf_put(b, tail);
        } else if (parts[k][0] == 'c' || parts[k][0] == 's') { /* its entry among special_tokens */
            snprintf(tail, sizeof tail, ", \"ids\": [%lld], \"tokens\": [", (long long)(is_cls ? cls_id : sep_id));
            bad = pf__gguf_put_json_string(b, text, len) || pf__gguf_put(b, ": {\"id\": ") ||
                  pf__gguf_put_json_string(b, text, len) || pf__gguf_put(b, tail) || pf__gguf_put_json_string(b, text, len) ||
                  pf__gguf_put(b, "]}");
        } else {
            bad = pf__gguf_put(b, parts[k]);
        }
    }
    return bad;
}

/* tokenizer.ggml.model "bert" (llama.cpp's WPM) as the tokenizer.json of BERT's tokenizer: WordPiece
   over BertNormalizer (lowercase and accent stripping as tokenizer.ggml.normalizer.* say, both on
   by default as in llama.cpp) and BertPreTokenizer, [CLS] A [SEP] (bos and seperator ids, 101 and
   102 where absent, as llama.cpp always adds them; a pair: [CLS] A [SEP] B [SEP]). */
static pf_result pf__gguf_wordpiece_json(const pf__gguf *g, pf__tok_buf *b, const pf__gguf_kv *tokens,
                                         const pf__gguf_kv *types, const char **texts, const size_t *lens, char *message,
                                         size_t size) {
    int lowercase = 1, strip_accents = -1, bad = 0;
    if (pf__gguf_get_bool(g, "tokenizer.ggml.normalizer.lowercase", &lowercase) < 0 ||
        pf__gguf_get_bool(g, "tokenizer.ggml.normalizer.strip_accents", &strip_accents) < 0)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: tokenizer.ggml.normalizer.lowercase or .strip_accents is not a "
                          "boolean", g->path);
    if (strip_accents < 0) strip_accents = lowercase;
    int64_t unk = pf__gguf_wordpiece_special(g, "tokenizer.ggml.unknown_token_id", 100, tokens->count),
            cls = pf__gguf_wordpiece_special(g, "tokenizer.ggml.bos_token_id", 101, tokens->count),
            sep = pf__gguf_wordpiece_special(g, "tokenizer.ggml.seperator_token_id", 102, tokens->count);
    if (unk < 0 || cls < 0 || sep < 0)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: a \"bert\" vocabulary's unknown, bos or seperator token id (100, "
                          "101 and 102 where absent) is not one of its %llu tokens", g->path,
                          (unsigned long long)tokens->count);
    for (uint64_t i = 0; i < tokens->count; i++)
        if (pf__gguf_token_type(types, i) == PF__GGUF_TOKEN_USER_DEFINED)
            return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: user-defined token %llu in a \"bert\" vocabulary "
                              "(llama.cpp matches it with its phantom space): not supported", g->path, (unsigned long long)i);
    bad |= pf__gguf_put(b, "{\"model\": {\"type\": \"WordPiece\", \"continuing_subword_prefix\": \"##\", "
                           "\"max_input_chars_per_word\": 100, \"unk_token\": ");
    bad |= pf__gguf_put_wordpiece_token(b, texts[unk], lens[unk], pf__gguf_token_type(types, (uint64_t)unk));
    bad |= pf__gguf_put(b, ", \"vocab\": {");
    for (uint64_t i = 0; i < tokens->count && !bad; i++) {
        char id[32];
        snprintf(id, sizeof id, ": %llu", (unsigned long long)i);
        bad = (i && pf__gguf_put(b, ", ")) || pf__gguf_put_wordpiece_token(b, texts[i], lens[i], pf__gguf_token_type(types, i)) ||
              pf__gguf_put(b, id);
    }
    bad |= pf__gguf_put(b, "}}, \"added_tokens\": [");
    for (uint64_t i = 0, first = 1; i < tokens->count && !bad; i++) {
        int32_t type = pf__gguf_token_type(types, i);
        char entry[96];
        if (type != PF__GGUF_TOKEN_CONTROL && type != PF__GGUF_TOKEN_UNKNOWN) continue;
        snprintf(entry, sizeof entry, "%s{\"id\": %llu, \"special\": true, \"normalized\": false, \"content\": ", first ? "" : ", ",
                 (unsigned long long)i);
        bad = pf__gguf_put(b, entry) || pf__gguf_put_json_string(b, texts[i], lens[i]) || pf__gguf_put(b, "}");
        first = 0;
    }
    bad |= pf__gguf_put(b, "], \"normalizer\": ") || pf__gguf_put_bert_normalizer(b, lowercase, strip_accents) ||
           pf__gguf_put(b, ", \"pre_tokenizer\": ") || pf__gguf_put(b, pf__gguf_bert_pre) || pf__gguf_put(b, ", \"decoder\": ") ||
           pf__gguf_put(b, pf__gguf_bert_decoder) || pf__gguf_put(b, ", \"post_processor\": ") ||
           pf__gguf_put_bert_template(b, texts[cls], lens[cls], cls, texts[sep], lens[sep], sep) || pf__gguf_put(b, "}");
    return bad ? pf__gguf_json_failure(g, b, "the tokenizer's metadata", message, size) : PF_OK;
}

/* The GGUF's tokenizer as tokenizer.json text in b, as transformers converts the model's own:
   tokenizer.ggml.model "gpt2", a byte-level BPE with its merges; "llama", SentencePiece's BPE with
   byte fallback, merges from the scores and "\xe2\x96\x81" for spaces (prepended unless
   add_space_prefix is false). Control, unknown and user-defined tokens become added tokens (the
   last not special); bos / eos are added as add_bos_token / add_eos_token say. texts and lens get
   each token's text. Another kind of tokenizer is PF_ERROR_UNSUPPORTED. */
static pf_result pf__gguf_tokenizer_json(const pf__gguf *g, pf__tok_buf *b, const char **texts, size_t *lens,
                                         pf__gguf_merge **spm_merges, size_t *num_spm_merges, char *message, size_t size) {
    const char *model, *pre = "default";
    size_t model_len, pre_len = 7, p = 0;
    const pf__gguf_kv *tokens = pf__gguf_get_array(g, "tokenizer.ggml.tokens", PF__GGUF_STRING);
    const pf__gguf_kv *merges = pf__gguf_get_array(g, "tokenizer.ggml.merges", PF__GGUF_STRING);
    const pf__gguf_kv *scores = pf__gguf_get_array(g, "tokenizer.ggml.scores", PF__GGUF_F32);
    const pf__gguf_kv *types = pf__gguf_get_array(g, "tokenizer.ggml.token_type", PF__GGUF_I32);
    if (pf__gguf_get_string(g, "tokenizer.ggml.model", &model, &model_len) != 1)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: tokenizer.ggml.model is not a string", g->path);
    int spm = pf__gguf_tokenizer_model_is(g, "llama"), wordpiece = pf__gguf_tokenizer_model_is(g, "bert");
    if (!spm && !wordpiece && !pf__gguf_tokenizer_model_is(g, "gpt2"))
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: tokenizer.ggml.model \"%.*s\" is not supported (\"gpt2\", "
                          "a byte-level BPE, \"llama\", SentencePiece's BPE, and \"bert\", WordPiece, are)", g->path,
                          pf__gguf_shown(model_len), model);
    if (wordpiece) {
        if (!tokens || (pf__gguf_find(g, "tokenizer.ggml.token_type") && !types) || (types && types->count != tokens->count))
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: the tokenizer needs tokenizer.ggml.tokens (strings) and "
                              ".token_type (int32, one per token)", g->path);
        const uint8_t *at = NULL;
        for (uint64_t i = 0; i < tokens->count; i++) pf__gguf_array_strings(tokens, &texts[i], &lens[i], &at);
        return pf__gguf_wordpiece_json(g, b, tokens, types, texts, lens, message, size);
    }
    if (!tokens || (!spm && !merges) || (spm && (!scores || scores->count != tokens->count)) ||
        (pf__gguf_find(g, "tokenizer.ggml.token_type") && !types) || (types && types->count != tokens->count))
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: the tokenizer needs tokenizer.ggml.tokens (strings), "
                          ".merges (strings; \"gpt2\") or .scores (float32, one per token; \"llama\") and .token_type "
                          "(int32, one per token)", g->path);
    if (!spm) {
        if (pf__gguf_get_string(g, "tokenizer.ggml.pre", &pre, &pre_len) < 0)
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: tokenizer.ggml.pre is not a string", g->path);
        for (p = 0; p < PF__COUNT(pf__gguf_pretokenizers); p++)
            if (strlen(pf__gguf_pretokenizers[p].pre) == pre_len && !memcmp(pf__gguf_pretokenizers[p].pre, pre, pre_len)) break;
        if (p == PF__COUNT(pf__gguf_pretokenizers))
            return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: tokenizer.ggml.pre \"%.*s\" is not supported "
                              "(default, gpt-2, smollm, llama-bpe, qwen2 and olmo are)", g->path, pf__gguf_shown(pre_len), pre);
    }
    int space_prefix = 1;
    if (pf__gguf_get_bool(g, "tokenizer.ggml.add_space_prefix", &space_prefix) < 0)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: tokenizer.ggml.add_space_prefix is not a boolean", g->path);

    const uint8_t *at = NULL;
    for (uint64_t i = 0; i < tokens->count; i++) pf__gguf_array_strings(tokens, &texts[i], &lens[i], &at);
    pf_result r = PF_OK;
    if (spm) { /* the merges first: a vocabulary that would make too many is refused before the JSON */
        float *values = (float *)malloc((tokens->count ? (size_t)tokens->count : 1) * sizeof(float));
        if (!values) return pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
        for (uint64_t i = 0; i < tokens->count; i++) {
            uint32_t bits = (uint32_t)pf__gguf_le(scores->value + 4 * i, 4);
            memcpy(&values[i], &bits, 4);
        }
        r = pf__gguf_spm_merges(g, texts, lens, values, types, (size_t)tokens->count, spm_merges, num_spm_merges,
                                message, size);
        free(values);
        if (r) return r;
    }
    if (pf__gguf_put_model(b, g, spm, !spm && pf__gguf_pretokenizers[p].ignore_merges, tokens, merges, texts, lens) ||
        pf__gguf_put_added_and_decoding(b, spm, space_prefix, p, types, texts, lens))
        return pf__gguf_json_failure(g, b, "the tokenizer's metadata", message, size);
    r = pf__gguf_put_post_processor(b, g, texts, lens, tokens->count, message, size);
    if (r == PF_OK && pf__gguf_put(b, "}")) r = pf__gguf_json_failure(g, b, "the tokenizer's metadata", message, size);
    return r;
}

/* The tokenizer from the metadata into *out (NULL and PF_OK without tokenizer metadata). */
static pf_result pf__gguf_tokenizer(const pf__gguf *g, pf_tokenizer **out, char *message, size_t size) {
    *out = NULL;
    if (!pf__gguf_find(g, "tokenizer.ggml.model")) return PF_OK;
    const pf__gguf_kv *tokens = pf__gguf_get_array(g, "tokenizer.ggml.tokens", PF__GGUF_STRING);
    size_t count = tokens ? (size_t)tokens->count : 0;
    const char **texts = (const char **)malloc((count ? count : 1) * sizeof *texts);
    size_t *lens = (size_t *)malloc((count ? count : 1) * sizeof *lens);
    pf__tok_buf json = {NULL, 0, 0};
    pf__json *root = NULL;
    pf_tokenizer *t = NULL;
    pf__gguf_merge *merges = NULL;
    size_t num_merges = 0;
    pf_result r = PF_OK;
    char jerr[160] = "";
    if (!texts || !lens) r = pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    if (!r) r = pf__gguf_tokenizer_json(g, &json, texts, lens, &merges, &num_merges, message, size);
    if (!r && !(root = pf__json_parse((const char *)json.p, json.len, jerr, sizeof jerr)))
        r = pf__format(message, size, strstr(jerr, "out of memory") ? PF_ERROR_OUT_OF_MEMORY : PF_ERROR_FORMAT,
                       "%s: the tokenizer's metadata: %s", g->path, jerr);
    if (!r && !(t = (pf_tokenizer *)calloc(1, sizeof *t))) r = pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    if (!r) {
        t->unk_id = t->bos_id = t->eos_id = -1;
        r = pf__tok_from_json(t, root, g->path, message, size);
    }
    if (!r && num_merges) r = pf__gguf_spm_set_merges(t, merges, num_merges, texts, lens, count, g->path, message, size);
    /* bos / eos and their text (for chat templates), the chat template */
    static const char *const keys[2] = {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id"};
    for (int k = 0; k < 2 && !r; k++) {
        const char *text;
        size_t len;
        int64_t id;
        if (!pf__gguf_special_text(g, keys[k], texts, lens, count, &text, &len, &id)) continue;
        char *copy = pf__tok_dup(text, len);
        if (!copy) r = pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
        else if (k) t->eos_id = (int32_t)id, t->eos_token = copy;
        else t->bos_id = (int32_t)id, t->bos_token = copy;
    }
    const char *chat;
    size_t chat_len;
    if (!r && pf__gguf_get_string(g, "tokenizer.chat_template", &chat, &chat_len) == 1 &&
        !(t->chat_template = pf__tok_dup(chat, chat_len)))
        r = pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    free(texts);
    free(lens);
    free(merges);
    free(json.p);
    pf__json_free(root);
    if (r) pf_tokenizer_free(t);
    else *out = t;
    return r;
}

/* ---- loading ---- */

/* A path ending in .gguf, or a regular file that starts with GGUF's magic. */
PF_PRIVATE int pf__is_gguf(const char *path) {
    size_t n = strlen(path);
    if (n >= 5 && !strcmp(path + n - 5, ".gguf")) return 1;
    struct stat st;
    if (stat(path, &st) || !S_ISREG(st.st_mode)) return 0;
    FILE *f = fopen(path, "rb");
    char magic[4] = {0};
    if (!f) return 0;
    size_t got = fread(magic, 1, 4, f);
    fclose(f);
    return got == 4 && !memcmp(magic, "GGUF", 4);
}

/* The other files of a GGUF split over `count` (llama.cpp's gguf-split and the gguf package write
   PREFIX-00001-of-0000N.gguf ...; split.no counts from 0, split.count and split.tensors.count are
   in each; only the first has the model's metadata): each mapped into m->st.files, its tensors
   added to g's, which are then sorted by name again (a name twice is an error). g is the first. */
static pf_result pf__gguf_load_splits(pf_model *m, pf__gguf *g, int count, char *message, size_t size) {
    pf__st_index *index = &m->st;
    uint64_t no = 0, total = 0;
    size_t len = strlen(m->dir);
    unsigned part = 0, parts = 0;
    const char *dash = len > 20 ? m->dir + len - 20 : NULL; /* "-00001-of-00003.gguf" */
    if (pf__gguf_get_uint(g, "split.no", &no) != 1 || no != 0 || !dash ||
        sscanf(dash, "-%5u-of-%5u.gguf", &part, &parts) != 2 || part != 1 || (int)parts != count)
        return pf__format(message, size, PF_ERROR_INVALID_ARGUMENT, "%s: a GGUF split over %d files: load the first, "
                          "named ...-00001-of-%05d.gguf", g->path, count, count);
    if (pf__gguf_get_uint(g, "split.tensors.count", &total) != 1)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: metadata 'split.tensors.count' is missing", g->path);
    pf__file_map *files = (pf__file_map *)realloc(index->files, (size_t)count * sizeof *files);
    pf__json **headers = files ? (pf__json **)realloc(index->headers, (size_t)count * sizeof *headers) : NULL;
    if (files) index->files = files;
    if (headers) index->headers = headers;
    if (!files || !headers) return pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    for (int k = 1; k < count; k++) {
        char *path = strdup(m->dir);
        pf__gguf part_g;
        uint64_t part_no = 0, part_count = 0, part_total = 0;
        memset(&part_g, 0, sizeof part_g);
        if (!path) return pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
        char tail[32]; /* 20 characters and its NUL: count is at most 99999 (checked above) */
        snprintf(tail, sizeof tail, "-%05d-of-%05d.gguf", k + 1, count);
        memcpy(path + len - 20, tail, 21);
        headers[k] = NULL;
        pf_result r = pf__map_file(path, &files[k], message, size);
        if (!r) {
            index->num_files = k + 1;
            part_g.path = path;
            part_g.data = files[k].data;
            part_g.size = files[k].size;
            r = pf__gguf_parse(&part_g, message, size);
        }
        if (!r && (pf__gguf_get_uint(&part_g, "split.no", &part_no) != 1 || part_no != (uint64_t)k ||
                   pf__gguf_get_uint(&part_g, "split.count", &part_count) != 1 || part_count != (uint64_t)count ||
                   pf__gguf_get_uint(&part_g, "split.tensors.count", &part_total) != 1 || part_total != total))
            r = pf__format(message, size, PF_ERROR_FORMAT, "%s: not part %d of the %d of %s (its split.no, split.count or "
                           "split.tensors.count say otherwise)", path, k + 1, count, g->path);
        pf__gguf_tensor *grown = r ? NULL : (pf__gguf_tensor *)realloc(g->tensors, (g->num_tensors + part_g.num_tensors + 1) *
                                                                                       sizeof *grown);
        if (!r && !grown) r = pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
        if (!r) {
            g->tensors = grown;
            memcpy(g->tensors + g->num_tensors, part_g.tensors, part_g.num_tensors * sizeof *grown);
            g->num_tensors += part_g.num_tensors;
        }
        free(part_g.kvs);
        free(part_g.tensors);
        free(path);
        if (r) return r;
    }
    if (g->num_tensors != total)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: the %d files hold %zu tensors, split.tensors.count says %llu",
                          g->path, count, g->num_tensors, (unsigned long long)total);
    qsort(g->tensors, g->num_tensors, sizeof *g->tensors, pf__gguf_tensor_name_cmp);
    for (size_t i = 1; i < g->num_tensors; i++)
        if (!pf__gguf_tensor_name_cmp(&g->tensors[i - 1], &g->tensors[i]))
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: tensor '%.*s' is in two of its %d files", g->path,
                              pf__gguf_shown(g->tensors[i].name_len), g->tensors[i].name, count);
    return PF_OK;
}

/* The embeddings' pooling: "<arch>.pooling_type" as llama.cpp's enum (0 none, 1 mean, 2 cls, 3
   last; 4, rank, is refused by its PF_GGUF_REFUSE row), the vectors then L2-normalised as llama.cpp's
   embedding tools and server do (GGUF has no Normalize module; the sentence-transformers models
   converted have one); none pools by the mean. Without the key: the mean, not normalised, as
   sentence-transformers takes a checkpoint without its modules. */
static pf_result pf__gguf_sentence(const pf__gguf *g, const char *arch, struct pf__sentence *s, char *message,
                                   size_t size) {
    static const pf_pooling poolings[4] = {PF_POOLING_MEAN, PF_POOLING_MEAN, PF_POOLING_CLS, PF_POOLING_LAST_TOKEN};
    char key[96];
    uint64_t type = 0;
    memset(s, 0, sizeof *s);
    snprintf(key, sizeof key, "%s.pooling_type", arch);
    int has = pf__gguf_get_uint(g, key, &type);
    if (has < 0 || type >= PF__COUNT(poolings))
        return pf__format(message, size, has < 0 ? PF_ERROR_FORMAT : PF_ERROR_UNSUPPORTED, "%s: metadata '%s' is %s", g->path,
                          key, has < 0 ? "not a count" : "none of 0 (none), 1 (mean), 2 (cls) and 3 (last)");
    s->pooling = poolings[type];
    s->normalize = has == 1;
    return PF_OK;
}

/* Loads m->dir, a GGUF file: its config into m->config, its tensors (under transformers' names)
   into m->st, its tokenizer into m->tokenizer. */
PF_PRIVATE pf_result pf__gguf_load(pf_model *m) {
    char *message = pf__error_buffer(m);
    size_t size = PF__MESSAGE_SIZE;
    pf__st_index *index = &m->st;
    pf__gguf g;
    pf__tok_buf config = {NULL, 0, 0};
    pf__json *json = NULL;
    const char *arch = NULL;
    size_t arch_len = 0;
    uint64_t splits = 1;
    pf_result r = PF_OK;
    memset(&g, 0, sizeof g);
    pf__config_defaults(&m->config);
    index->files = (pf__file_map *)calloc(1, sizeof *index->files);
    index->headers = (pf__json **)calloc(1, sizeof *index->headers);
    if (!index->files || !index->headers) return pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    if ((r = pf__map_file(m->dir, &index->files[0], message, size))) return r;
    index->num_files = 1;
    g.path = m->dir;
    g.data = index->files[0].data;
    g.size = index->files[0].size;
    if ((r = pf__gguf_parse(&g, message, size))) goto done;
    uint64_t split_no = 0;
    if (pf__gguf_get_uint(&g, "split.no", &split_no) == 1 && split_no > 0 && pf__gguf_get_uint(&g, "split.count", &splits) == 1) {
        r = pf__format(message, size, PF_ERROR_INVALID_ARGUMENT, "%s: part %llu of a GGUF split over %llu files: load the "
                       "first, named ...-00001-of-%05llu.gguf", g.path, (unsigned long long)split_no + 1,
                       (unsigned long long)splits, (unsigned long long)splits);
        goto done;
    }

    int has_arch = pf__gguf_get_string(&g, "general.architecture", &arch, &arch_len);
    if (has_arch != 1) {
        r = pf__format(message, size, PF_ERROR_FORMAT, "%s: general.architecture is %s", g.path, has_arch ? "not a string" : "missing");
        goto done;
    }
    const pf__gguf_arch *known_arch = pf__gguf_find_arch(arch, arch_len);
    if (!known_arch) {
        char names[1024];
        pf__gguf_arch_names(names, sizeof names);
        r = pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: general.architecture \"%.*s\" is not supported (these "
                       "are: %s)", g.path, pf__gguf_shown(arch_len), arch, names);
        goto done;
    }
    const char *arch_name = known_arch->name, *variant = NULL;
    for (size_t i = 0; i < PF__COUNT(pf__gguf_variants); i++)
        if (pf__gguf_row_of(pf__gguf_variants[i].arch, arch_name) && pf__gguf_has_tensor(&g, pf__gguf_variants[i].tensor))
            variant = pf__gguf_variants[i].variant;
    if (pf__gguf_get_uint(&g, "split.count", &splits) < 0 || splits > 9999) {
        r = pf__format(message, size, PF_ERROR_FORMAT, "%s: metadata 'split.count' is not a count of files", g.path);
        goto done;
    }
    if (splits > 1 && (r = pf__gguf_load_splits(m, &g, (int)splits, message, size))) goto done;
    const pf__gguf_tensor *embed = pf__gguf_tensor_named(&g, "token_embd.weight");
    if (!embed || embed->ndim != 2 || embed->rows > INT32_MAX) {
        r = pf__format(message, size, PF_ERROR_FORMAT, "%s: no token_embd.weight matrix", g.path);
        goto done;
    }
    if ((r = pf__gguf_config_json(&g, known_arch, (int64_t)embed->rows, &config, message, size))) goto done;
    char jerr[160] = "";
    if (!(json = pf__json_parse((const char *)config.p, config.len, jerr, sizeof jerr))) {
        r = pf__format(message, size, strstr(jerr, "out of memory") ? PF_ERROR_OUT_OF_MEMORY : PF_ERROR_FORMAT,
                       "%s: the config from the metadata: %s", g.path, jerr);
        goto done;
    }
    if ((r = pf__config_parse(json, g.path, -1, &m->config, message, size))) goto done;
    if ((r = pf__gguf_check_kv_heads(&g, known_arch, &m->config, message, size))) goto done;
    if ((r = pf__gguf_sentence(&g, arch_name, &m->sentence, message, size))) goto done;

    size_t num_views = g.num_tensors; /* a tensor of experts gives one view an expert */
    for (size_t i = 0; i < g.num_tensors; i++) {
        int layer;
        const pf__gguf_name *e = pf__gguf_name_for(arch_name, variant, &g.tensors[i], &layer);
        if (e && e->transform == PF__GGUF_SPLIT_EXPERTS && g.tensors[i].ndim == 3 && g.tensors[i].ne[2] >= 1 &&
            g.tensors[i].ne[2] <= PF__GGUF_MAX_EXPERTS)
            num_views += g.tensors[i].ne[2] - 1;
    }
    index->tensors = (pf__st_tensor *)malloc(num_views * sizeof *index->tensors);
    if (!index->tensors) {
        r = pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < g.num_tensors && !r; i++) {
        const pf__gguf_tensor *t = &g.tensors[i];
        int layer;
        const pf__gguf_name *e = pf__gguf_name_for(arch_name, variant, t, &layer);
        char name[160];
        if (pf__gguf_is_rope_table(known_arch, t)) continue; /* read into the config's rope scaling */
        if (!e || layer >= m->config.num_layers) {
            r = pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: tensor '%.*s' is not one of a %s model that "
                           "parallelformers reads%s", g.path, pf__gguf_shown(t->name_len), t->name,
                           arch_name, "");
            break;
        }
        if (e->transform == PF__GGUF_SPLIT_EXPERTS) {
            r = pf__gguf_add_experts(index, &g, t, e->hf, layer, message, size);
            continue;
        }
        if (e->transform == PF__GGUF_GATE_UP_BIASES) {
            r = pf__gguf_add_gate_up_biases(index, &g, t, e->hf, layer, message, size);
            continue;
        }
        if (e->transform == PF__GGUF_KV_B_FROM_K_B) {
            r = pf__gguf_add_kv_b(index, &g, t, e->hf, layer, &m->config, message, size);
            continue;
        }
        if (e->transform == PF__GGUF_READ_WITH) {
            r = pf__gguf_check_reader(&g, arch_name, e, t, layer, message, size);
            continue;
        }
        snprintf(name, sizeof name, e->hf, layer);
        size_t heads = e->transform == PF__GGUF_UNPERMUTE_Q || e->transform == PF__GGUF_INTERLEAVE_QKV ||
                               e->transform == PF__GGUF_GROUP_QKV
                           ? (size_t)m->config.num_heads
                       : e->transform == PF__GGUF_UNPERMUTE_K ? (size_t)m->config.num_kv_heads
                                                               : 0;
        r = pf__gguf_add_tensor(index, &g, t, name, e->transform, heads, (size_t)m->config.num_kv_heads, message, size);
    }
    if (r) goto done;
    qsort(index->tensors, index->num_tensors, sizeof *index->tensors, pf__tensor_cmp);
    if (m->config.pad_token_id >= 0) m->generate_defaults.pad_token_id = m->config.pad_token_id;
    if (!m->load_options.skip_tokenizer) {
        pf_result t = pf__gguf_tokenizer(&g, &m->tokenizer, m->tokenizer_missing, sizeof m->tokenizer_missing);
        if (t == PF_ERROR_UNSUPPORTED) pf__log(m, PF_LOG_WARNING, "no tokenizer: %s", m->tokenizer_missing);
        else if (t) r = pf__format(message, size, t, "%s", m->tokenizer_missing);
        else m->tokenizer_missing[0] = 0;
    }
done:
    free(config.p);
    pf__json_free(json);
    free(g.kvs);
    free(g.tensors);
    return r;
}


/* ---- writing: a copy with its matrices in another dtype (pf_quantize_gguf) ---- */

/* The bytes of metadata value kv (after its type, and an array's element type and count). */
static size_t pf__gguf_value_bytes(const pf__gguf_kv *kv) {
    if (kv->elem_type != PF__GGUF_STRING) return (size_t)kv->count * pf__gguf_value_size[kv->elem_type];
    size_t at = 0;
    for (uint64_t k = 0; k < kv->count; k++) at += 8 + (size_t)pf__gguf_le(kv->value + at, 8); /* checked at parsing */
    return at;
}

/* llama.cpp's general.file_type for a file whose matrices are all of dtype t (its llama_ftype). */
static uint32_t pf__gguf_file_type(pf_dtype t) {
    return t == PF_DTYPE_F32 ? 0 : t == PF_DTYPE_F16 ? 1 : t == PF_DTYPE_Q4_0 ? 2 : t == PF_DTYPE_Q8_0 ? 7 : 32;
}

/* Whether tensor t becomes dtype `to` (ggml type): a matrix (two or more dimensions; a mixture's
   stacked experts too) whose rows are whole blocks of `to`, not a router (ffn_gate_inp: its
   logits choose the experts, and llama.cpp's quantizer leaves it alone, as pf_parallelize does). */
static int pf__gguf_converts(const pf__gguf_tensor *t, uint32_t to) {
    static const char router[] = "ffn_gate_inp";
    size_t n = sizeof router - 1;
    for (size_t i = 0; i + n <= t->name_len; i++)
        if (!memcmp(t->name + i, router, n)) return 0;
    return t->ndim >= 2 && t->type != to && t->cols % pf__ggml_types[to].block == 0;
}

/* Row `row` of tensor t as fp32 values, into out[t->cols]. */
static void pf__gguf_row_values(const pf__gguf_tensor *t, size_t row, float *out) {
    size_t block = pf__ggml_types[t->type].block, bytes = pf__ggml_types[t->type].bytes;
    const uint8_t *p = t->data + row * (t->cols / block) * bytes;
    pf__dtype dtype = pf__ggml_types[t->type].dtype;
    for (size_t i = 0; i < t->cols / block; i++, p += bytes) {
        if (dtype == PF__DTYPE_F32) memcpy(&out[i], p, 4);
        else if (dtype == PF__DTYPE_F16) out[i] = pf__f16_to_f32((uint16_t)(p[0] | p[1] << 8));
        else if (dtype == PF__DTYPE_BF16) out[i] = pf__bf16_to_f32((uint16_t)(p[0] | p[1] << 8));
        else pf__block_dequantize(dtype, p, out + i * block);
    }
}

/* Row values [cols] (in place, as the quantizers work) encoded as ggml type `to` into out. */
static void pf__gguf_encode_row(float *values, size_t cols, uint32_t to, uint8_t *out) {
    if (to == PF__GGML_Q8_0 || to == PF__GGML_Q4_0) {
        if (to == PF__GGML_Q8_0) pf__q8_quantize(values, 1, cols); /* the same code pf_parallelize quantizes with */
        else pf__q4_quantize(values, 1, cols);
        memcpy(out, values, cols / 32 * pf__ggml_types[to].bytes);
        return;
    }
    if (to == PF__GGML_F32) {
        memcpy(out, values, cols * sizeof *values);
        return;
    }
    for (size_t i = 0; i < cols; i++) {
        uint16_t h = to == PF__GGML_F16 ? pf__f32_to_f16(values[i]) : pf__f32_to_bf16(values[i]);
        out[2 * i] = (uint8_t)h;
        out[2 * i + 1] = (uint8_t)(h >> 8);
    }
}

/* GGUF bytes being written, to a file or (mem set) a growable buffer: where they are, and whether a
   write failed or memory ran out (the writes after one do nothing). */
typedef struct pf__gguf_out {
    FILE *f;
    pf__tok_buf *mem;
    uint64_t at;
    int bad;
} pf__gguf_out;

static void pf__gguf_put_bytes(pf__gguf_out *o, const void *p, size_t n) {
    if (!o->bad && n && (o->mem ? pf__buf_put(o->mem, p, n) != 0 : fwrite(p, 1, n, o->f) != n)) o->bad = 1;
    o->at += n;
}

static void pf__gguf_put_u(pf__gguf_out *o, uint64_t v, int bytes) { /* little-endian */
    uint8_t b[8];
    for (int i = 0; i < bytes; i++) b[i] = (uint8_t)(v >> 8 * i);
    pf__gguf_put_bytes(o, b, (size_t)bytes);
}

static void pf__gguf_put_string(pf__gguf_out *o, const char *s, size_t len) {
    pf__gguf_put_u(o, len, 8);
    pf__gguf_put_bytes(o, s, len);
}

static void pf__gguf_put_padding(pf__gguf_out *o, uint64_t alignment) {
    static const uint8_t zeros[64] = {0};
    for (uint64_t n = (alignment - o->at % alignment) % alignment; n > 0;) {
        size_t k = n > sizeof zeros ? sizeof zeros : (size_t)n;
        pf__gguf_put_bytes(o, zeros, k);
        n -= k;
    }
}

/* g written to f with its matrices as ggml type `to`: the metadata as it is (general.file_type
   set to match), the tensors in name order at the file's alignment. */
static pf_result pf__gguf_write(const pf__gguf *g, FILE *f, uint32_t to, pf_dtype dtype, char *message, size_t size) {
    static const char file_type_key[] = "general.file_type";
    uint64_t alignment;
    pf_result r = pf__gguf_alignment(g, &alignment, message, size);
    if (r) return r;
    pf__gguf_out o = {f, NULL, 0, 0};
    int has_file_type = pf__gguf_find(g, file_type_key) != NULL;
    pf__gguf_put_bytes(&o, "GGUF", 4);
    pf__gguf_put_u(&o, 3, 4);
    pf__gguf_put_u(&o, g->num_tensors, 8);
    pf__gguf_put_u(&o, g->num_kvs + !has_file_type, 8);
    for (size_t i = 0; i < g->num_kvs; i++) {
        const pf__gguf_kv *kv = &g->kvs[i];
        if (kv->key_len == sizeof file_type_key - 1 && !memcmp(kv->key, file_type_key, kv->key_len)) continue;
        pf__gguf_put_string(&o, kv->key, kv->key_len);
        pf__gguf_put_u(&o, kv->type, 4);
        if (kv->type == PF__GGUF_ARRAY) {
            pf__gguf_put_u(&o, kv->elem_type, 4);
            pf__gguf_put_u(&o, kv->count, 8);
        }
        pf__gguf_put_bytes(&o, kv->value, pf__gguf_value_bytes(kv));
    }
    pf__gguf_put_string(&o, file_type_key, sizeof file_type_key - 1);
    pf__gguf_put_u(&o, PF__GGUF_U32, 4);
    pf__gguf_put_u(&o, pf__gguf_file_type(dtype), 4);
    uint64_t offset = 0;
    size_t widest = 1;
    for (size_t i = 0; i < g->num_tensors; i++) {
        const pf__gguf_tensor *t = &g->tensors[i];
        uint32_t type = pf__gguf_converts(t, to) ? to : t->type;
        pf__gguf_put_string(&o, t->name, t->name_len);
        pf__gguf_put_u(&o, (uint64_t)t->ndim, 4);
        for (int d = 0; d < t->ndim; d++) pf__gguf_put_u(&o, t->ne[d], 8);
        pf__gguf_put_u(&o, type, 4);
        pf__gguf_put_u(&o, offset, 8);
        uint64_t bytes = (uint64_t)t->rows * (t->cols / pf__ggml_types[type].block) * pf__ggml_types[type].bytes;
        offset += (bytes + alignment - 1) / alignment * alignment;
        widest = t->cols > widest ? t->cols : widest;
    }
    float *values = (float *)malloc(widest * sizeof *values);
    uint8_t *row = (uint8_t *)malloc(widest * sizeof *values);
    if (!values || !row) {
        free(values);
        free(row);
        return pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    for (size_t i = 0; i < g->num_tensors && !o.bad; i++) {
        const pf__gguf_tensor *t = &g->tensors[i];
        pf__gguf_put_padding(&o, alignment);
        if (!pf__gguf_converts(t, to)) {
            pf__gguf_put_bytes(&o, t->data, t->bytes);
            continue;
        }
        size_t row_bytes = t->cols / pf__ggml_types[to].block * pf__ggml_types[to].bytes;
        for (size_t k = 0; k < t->rows; k++) {
            pf__gguf_row_values(t, k, values);
            pf__gguf_encode_row(values, t->cols, to, row);
            pf__gguf_put_bytes(&o, row, row_bytes);
        }
    }
    pf__gguf_put_padding(&o, alignment);
    free(values);
    free(row);
    return o.bad ? pf__format(message, size, PF_ERROR_IO, "cannot write the GGUF file") : PF_OK;
}

/* ---- writing: a model directory as a GGUF file (pf_quantize_gguf of a directory) ---- */

/* The reader's tables run backwards: general.architecture is the PF_GGUF_ARCH row of the
   directory's model_type, each PF_GGUF_CONFIG key with a config key takes the value the family's
   PF_ARCH_CONFIG row of that key parsed, each tensor the PF_GGUF_TENSOR row whose transformers name
   it has (its transform undone the other way), and the tokenizer the tokenizer.ggml.pre whose
   pf__gguf_pretokenizers row its tokenizer.json has. The file is then loaded as any GGUF is, and
   its config must be the directory's: what the metadata cannot say is refused, naming it. */

/* Metadata being written: the key/values as GGUF lays them out (out's bytes, in memory), and their
   count. */
typedef struct pf__gguf_meta {
    pf__tok_buf bytes;
    pf__gguf_out out; /* writes into bytes */
    uint64_t count;
    int wordpiece; /* a "bert" vocabulary written: its bos is the tokenizer's [CLS], its eos none */
} pf__gguf_meta;

/* A key and its value's type; the value follows. */
static void pf__gguf_meta_key(pf__gguf_meta *m, const char *key, uint32_t type) {
    pf__gguf_put_string(&m->out, key, strlen(key));
    pf__gguf_put_u(&m->out, type, 4);
    m->count++;
}

static void pf__gguf_meta_u32(pf__gguf_meta *m, const char *key, uint32_t v) {
    pf__gguf_meta_key(m, key, PF__GGUF_U32);
    pf__gguf_put_u(&m->out, v, 4);
}

static void pf__gguf_meta_f32(pf__gguf_meta *m, const char *key, float v) {
    uint32_t bits;
    memcpy(&bits, &v, 4);
    pf__gguf_meta_key(m, key, PF__GGUF_F32);
    pf__gguf_put_u(&m->out, bits, 4);
}

static void pf__gguf_meta_bool(pf__gguf_meta *m, const char *key, int v) {
    pf__gguf_meta_key(m, key, PF__GGUF_BOOL);
    pf__gguf_put_u(&m->out, v != 0, 1);
}

static void pf__gguf_meta_string(pf__gguf_meta *m, const char *key, const char *s) {
    pf__gguf_meta_key(m, key, PF__GGUF_STRING);
    pf__gguf_put_string(&m->out, s, strlen(s));
}

/* An array's key, element type and count; its elements follow. */
static void pf__gguf_meta_array(pf__gguf_meta *m, const char *key, uint32_t elem_type, uint64_t count) {
    pf__gguf_meta_key(m, key, PF__GGUF_ARRAY);
    pf__gguf_put_u(&m->out, elem_type, 4);
    pf__gguf_put_u(&m->out, count, 8);
}

/* The family's PF_ARCH_CONFIG row that reads config.json key `key`, or NULL. */
static const pf__arch_config *pf__gguf_config_row(const pf__config *c, const char *key) {
    const pf__policy_rows *rows = pf__rows(c->arch);
    for (size_t i = 0; i < rows->num_configs; i++)
        if (rows->configs[i].arch == c->arch && rows->configs[i].key && !strcmp(rows->configs[i].key, key))
            return &rows->configs[i];
    return NULL;
}

static double pf__gguf_field(const pf__config *c, const pf__arch_config *row) {
    double d;
    int n;
    if (row->is_double) return memcpy(&d, (const char *)c + row->offset, sizeof d), d;
    return memcpy(&n, (const char *)c + row->offset, sizeof n), (double)n;
}

/* Whether one of the first `rows` PF_GGUF_CONFIG rows of arch for key suffix has a config key
   that the family's config reads: such a row writes the key from the config. */
static int pf__gguf_key_from_config(const pf__config *c, const char *arch, const char *suffix, size_t rows) {
    for (size_t k = 0; k < rows; k++) {
        const pf__gguf_config_key *row = &pf__gguf_config_keys[k];
        if (pf__gguf_row_of(row->arch, arch) && row->config_key && !strcmp(row->suffix, suffix) &&
            pf__gguf_config_row(c, row->config_key))
            return 1;
    }
    return 0;
}

/* The "<arch>." keys: each PF_GGUF_CONFIG row with a config key (once a key), from the field the
   family reads that config key into (doubles as float32, counts as uint32, as llama.cpp reads
   them; a 0 that is the row's fallback left out); then the widths LLaMA's, GPT-NeoX's and Phi's
   metadata give by hand. */
static pf_result pf__gguf_meta_config(pf__gguf_meta *meta, const pf__gguf_arch *a, const pf__config *c, const char *dir,
                                      char *message, size_t size) {
    char key[128];
    for (size_t k = 0; k < PF__COUNT(pf__gguf_config_keys); k++) {
        const pf__gguf_config_key *row = &pf__gguf_config_keys[k];
        if (!pf__gguf_row_of(row->arch, a->name) || !row->config_key) continue;
        const pf__arch_config *field = pf__gguf_config_row(c, row->config_key);
        /* a key that feeds several config keys: the first writes it */
        if (!field || pf__gguf_key_from_config(c, a->name, row->suffix, k)) continue; /* a key the family does not read: its default, which the check below sees */
        double v = pf__gguf_field(c, field);
        if (v == 0 && field->fallback == 0) continue; /* none (no clamp, no window): what an absent key reads as */
        snprintf(key, sizeof key, "%s.%s", a->name, row->suffix);
        static const char *const bools[] = {"use_parallel_residual"}; /* what llama.cpp reads as a bool */
        int is_bool = 0;
        for (size_t i = 0; i < PF__COUNT(bools); i++) is_bool |= !strcmp(row->suffix, bools[i]);
        if (field->is_double) {
            pf__gguf_meta_f32(meta, key, (float)v);
        } else if (is_bool) {
            pf__gguf_meta_bool(meta, key, v != 0);
        } else {
            if (v < 0 || v > 4294967295.0)
                return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: config.json's %s %g has no GGUF form (%s is a "
                                  "uint32)", dir, row->config_key, v, key);
            pf__gguf_meta_u32(meta, key, (uint32_t)v);
        }
    }
    /* keys some architectures' rows read by hand (NULL config key) that llama.cpp needs: from the
       config's field, where no row with a config key wrote them */
    const struct { const char *suffix; double value; int is_double; } by_hand[] = {
        {"attention.head_count_kv", c->num_kv_heads, 0},   /* StarCoder's 1, checked by the reader */
        {"attention.value_length", c->head_dim, 0},        /* the key length's (checked by the reader): llama.cpp
                                                              takes hidden / heads without it */
        {"attention.layer_norm_epsilon", c->norm_eps, 1}, /* OLMo's fixed 1e-5 */
    };
    for (size_t i = 0; i < PF__COUNT(by_hand); i++) {
        if (pf__gguf_key_from_config(c, a->name, by_hand[i].suffix, PF__COUNT(pf__gguf_config_keys)) ||
            !pf__gguf_reads_key(a->name, by_hand[i].suffix))
            continue;
        snprintf(key, sizeof key, "%s.%s", a->name, by_hand[i].suffix);
        if (by_hand[i].is_double) pf__gguf_meta_f32(meta, key, (float)by_hand[i].value);
        else pf__gguf_meta_u32(meta, key, (uint32_t)by_hand[i].value);
    }
    int rotary_dims = a->rotary == 1 ? c->head_dim
                      : a->rotary == 2 || a->rotary == 3
                          ? (c->rotary_dim ? c->rotary_dim : (int)floor(c->rotary_pct * c->head_dim + 0.5))
                          : 0;
    snprintf(key, sizeof key, "%s.rope.dimension_count", a->name);
    if (rotary_dims > 0 && pf__gguf_reads_key(a->name, "rope.dimension_count")) pf__gguf_meta_u32(meta, key, (uint32_t)rotary_dims);
    snprintf(key, sizeof key, "%s.vocab_size", a->name);
    if (pf__gguf_reads_key(a->name, "vocab_size")) pf__gguf_meta_u32(meta, key, (uint32_t)c->vocab_size);
    /* linear and YaRN rope scaling as llama.cpp's converter writes them (YaRN's other parameters,
       which GGUF's reader takes at their defaults, are compared after the file is read back) */
    int linear = c->rope_type == PF__ROPE_LINEAR, yarn = c->rope_type == PF__ROPE_YARN;
    if ((linear || yarn) && pf__gguf_reads_key(a->name, "rope.scaling.type")) {
        snprintf(key, sizeof key, "%s.rope.scaling.type", a->name);
        pf__gguf_meta_string(meta, key, linear ? "linear" : "yarn");
        snprintf(key, sizeof key, "%s.rope.scaling.factor", a->name);
        pf__gguf_meta_f32(meta, key, (float)c->rope_factor);
        snprintf(key, sizeof key, "%s.rope.scaling.original_context_length", a->name);
        if (yarn) pf__gguf_meta_u32(meta, key, (uint32_t)c->rope_original_max_positions);
    }
    return PF_OK;
}

/* An encoder's GGUF keys llama.cpp's BERT graph reads: attention.causal false, the embeddings'
   pooling (the reader's forms: a pooling_type normalises; none means the mean, not normalised;
   max, mean_sqrt_len and weighted mean have no GGUF form) and the token type count. */
static pf_result pf__gguf_meta_encoder(pf__gguf_meta *meta, const pf__gguf_arch *a, const pf_model *m, const char *dir,
                                       char *message, size_t size) {
    char key[128];
    if (!pf__gguf_reads_key(a->name, "pooling_type")) return PF_OK;
    const struct pf__sentence *s = &m->sentence;
    int type = s->pooling == PF_POOLING_MEAN ? 1 : s->pooling == PF_POOLING_CLS ? 2 : s->pooling == PF_POOLING_LAST_TOKEN ? 3 : -1;
    if (s->unsupported[0])
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: %s has no GGUF form", dir, s->unsupported);
    if (type < 0 || (!s->normalize && type != 1))
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: its sentence-transformers pooling (%s) has no GGUF form "
                          "(pooling_type says mean, cls or last, normalised)", dir,
                          type < 0 ? "max, mean_sqrt_len or weighted mean" : "cls or last without Normalize");
    snprintf(key, sizeof key, "%s.attention.causal", a->name);
    pf__gguf_meta_bool(meta, key, 0);
    snprintf(key, sizeof key, "%s.pooling_type", a->name);
    if (s->normalize) pf__gguf_meta_u32(meta, key, (uint32_t)type);
    if (m->config.type_vocab_size > 0) pf__gguf_meta_u32(meta, "tokenizer.ggml.token_type_count", (uint32_t)m->config.type_vocab_size);
    return PF_OK;
}

/* Whether JSON values a and b are the same (an object's members in any order), members named
   `skip` left out of both. */
static int pf__gguf_json_same(const pf__json *a, const pf__json *b, const char *skip) {
    if (!a || !b || a->type != b->type) return 0;
    switch (a->type) {
    case PF__JSON_NULL: return 1;
    case PF__JSON_BOOL: return a->boolean == b->boolean;
    case PF__JSON_NUMBER: return a->number == b->number;
    case PF__JSON_STRING: return a->string_len == b->string_len && !memcmp(a->string, b->string, a->string_len);
    case PF__JSON_ARRAY:
        if (a->count != b->count) return 0;
        for (const pf__json *x = a->first, *y = b->first; x; x = x->next, y = y->next)
            if (!pf__gguf_json_same(x, y, skip)) return 0;
        return 1;
    default: {
        size_t a_count = 0, b_count = 0;
        for (const pf__json *x = a->first; x; x = x->next) {
            if (skip && !strcmp(x->key, skip)) continue;
            a_count++;
            if (!pf__gguf_json_same(x, pf__json_get(b, x->key), skip)) return 0;
        }
        for (const pf__json *y = b->first; y; y = y->next) b_count += !(skip && !strcmp(y->key, skip));
        return a_count == b_count;
    }
    }
}

/* The pf__gguf_pretokenizers row whose pre-tokenizer and normalizer tokenizer.json has (trim_offsets
   left out: it moves offsets, not ids), or -1. "default" is the reader's name for a file without
   tokenizer.ggml.pre, never written: llama.cpp's own default splits otherwise. */
static int pf__gguf_pretokenizer_row(const pf__json *pre, const pf__json *normalizer) {
    for (size_t p = 1; p < PF__COUNT(pf__gguf_pretokenizers); p++) {
        char err[64];
        const char *norm = pf__gguf_pretokenizers[p].normalizer;
        pf__json *want = pf__json_parse(pf__gguf_pretokenizers[p].json, strlen(pf__gguf_pretokenizers[p].json), err, sizeof err);
        pf__json *want_norm = norm ? pf__json_parse(norm, strlen(norm), err, sizeof err) : NULL;
        int same = want && pf__gguf_json_same(pre, want, "trim_offsets") &&
                   (norm ? want_norm && pf__gguf_json_same(normalizer, want_norm, NULL)
                         : !normalizer || normalizer->type == PF__JSON_NULL);
        pf__json_free(want);
        pf__json_free(want_norm);
        if (same) return (int)p;
    }
    return -1;
}

/* add_bos / add_eos from tokenizer.json's post-processor: a TemplateProcessing (alone or in a
   Sequence beside ByteLevel's offsets) whose single text is [bos] A [eos] with the config's ids;
   none adds nothing. Anything else is refused. */
static pf_result pf__gguf_post_processor(const pf__json *post, const pf__json *vocab, const pf__json *added,
                                         const pf__config *c, int *add_bos, int *add_eos, const char *path, char *message,
                                         size_t size) {
    *add_bos = *add_eos = 0;
    if (!post || post->type == PF__JSON_NULL) return PF_OK;
    const pf__json *type = pf__json_get(post, "type");
    if (type && type->type == PF__JSON_STRING && !strcmp(type->string, "Sequence")) {
        const pf__json *list = pf__json_get(post, "processors"), *template_ = NULL;
        for (const pf__json *p = list && list->type == PF__JSON_ARRAY ? list->first : NULL; p; p = p->next) {
            const pf__json *t = pf__json_get(p, "type");
            if (t && t->type == PF__JSON_STRING && !strcmp(t->string, "ByteLevel")) continue;
            if (template_) return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: a post-processor Sequence of more than "
                                             "ByteLevel and one TemplateProcessing has no GGUF form", path);
            template_ = p;
        }
        if (!template_) return PF_OK;
        post = template_;
        type = pf__json_get(post, "type");
    }
    if (type && type->type == PF__JSON_STRING && !strcmp(type->string, "ByteLevel")) return PF_OK; /* offsets only */
    if (!type || type->type != PF__JSON_STRING || strcmp(type->string, "TemplateProcessing"))
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: post-processor \"%s\" has no GGUF form (GGUF adds bos / "
                          "eos only)", path, type && type->type == PF__JSON_STRING ? type->string : "?");
    const pf__json *single = pf__json_get(post, "single");
    int seen_text = 0, bad = !single || single->type != PF__JSON_ARRAY;
    for (const pf__json *item = bad ? NULL : single->first; item && !bad; item = item->next) {
        const pf__json *special = pf__json_get(item, "SpecialToken");
        if (pf__json_get(item, "Sequence")) {
            bad = seen_text++;
            continue;
        }
        const pf__json *content = special ? pf__json_get(special, "id") : NULL;
        double id = -1;
        const pf__json *in_vocab = content && content->type == PF__JSON_STRING ? pf__json_get(vocab, content->string) : NULL;
        if (in_vocab) pf__json_number(in_vocab, &id);
        for (const pf__json *t = added && added->type == PF__JSON_ARRAY ? added->first : NULL; t && content; t = t->next) {
            const pf__json *text = pf__json_get(t, "content");
            if (text && text->type == PF__JSON_STRING && content->type == PF__JSON_STRING && !strcmp(text->string, content->string))
                pf__json_number(pf__json_get(t, "id"), &id);
        }
        int eos = c->num_eos_ids >= 1 && id == c->eos_ids[0]; /* the first: GGUF's eos_token_id */
        if (!seen_text && id == c->bos_token_id && !*add_bos) *add_bos = 1;
        else if (seen_text && eos && !*add_eos) *add_eos = 1;
        else bad = 1;
    }
    if (bad || !seen_text)
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: its TemplateProcessing adds more than the config's bos "
                          "before a text and eos after it, which GGUF's add_bos_token / add_eos_token say", path);
    return PF_OK;
}

static int pf__u64_cmp(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static int pf__gguf_text_cmp(const void *a, const void *b) {
    return strcmp(**(const char *const *const *)a, **(const char *const *const *)b);
}

/* SentencePiece's scores for a BPE's merges (merges: tokenizer.json's, texts by id, count ids):
   each piece a merge makes scores minus the rank of the first merge that makes it, the others
   below every merge, so that the reader's merges (every split of a normal piece into two normal
   pieces, by the piece's score: pf__gguf_spm_merges) are the BPE's; checked by running that
   derivation on them. Refused where they are not (a BPE not converted from SentencePiece). */
static pf_result pf__gguf_spm_scores(const pf__json *merges, const char **texts, const int32_t *types, size_t count,
                                     float *scores, const char *path, char *message, size_t size) {
    const char ***sorted = (const char ***)malloc((count ? count : 1) * sizeof *sorted);
    uint32_t *wants = (uint32_t *)malloc((merges->count ? merges->count : 1) * 3 * sizeof *wants);
    uint8_t *type_bytes = (uint8_t *)malloc((count ? count : 1) * 4);
    size_t *lens = (size_t *)malloc((count ? count : 1) * sizeof *lens);
    pf__gguf_merge *derived = NULL;
    size_t num_derived = 0, k = 0;
    pf_result r = PF_OK;
    char joined[2048];
    if (!sorted || !wants || !type_bytes || !lens) {
        r = pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < count; i++) {
        sorted[i] = &texts[i];
        lens[i] = strlen(texts[i]);
        scores[i] = -(float)merges->count - 1;
        for (int b = 0; b < 4; b++) type_bytes[4 * i + b] = (uint8_t)((uint32_t)types[i] >> 8 * b);
    }
    qsort(sorted, count, sizeof *sorted, pf__gguf_text_cmp);
    for (const pf__json *mg = merges->first; mg && !r; mg = mg->next, k++) {
        const char *part[2] = {NULL, NULL};
        if (mg->type == PF__JSON_STRING) {
            const char *space = strchr(mg->string, ' ');
            if (space && (size_t)(space - mg->string) < sizeof joined) {
                memcpy(joined, mg->string, (size_t)(space - mg->string));
                joined[space - mg->string] = 0;
                part[0] = joined, part[1] = space + 1;
            }
        } else if (mg->type == PF__JSON_ARRAY && mg->count == 2 && mg->first->type == PF__JSON_STRING &&
                   mg->first->next->type == PF__JSON_STRING) {
            part[0] = mg->first->string, part[1] = mg->first->next->string;
        }
        char whole[2048];
        const char **found[3] = {NULL, NULL, NULL};
        size_t left_len = part[0] ? strlen(part[0]) : 0, right_len = part[1] ? strlen(part[1]) : 0;
        if (part[0] && left_len + right_len < sizeof whole) {
            memcpy(whole, part[0], left_len);
            memcpy(whole + left_len, part[1], right_len + 1);
            const char *probe[3] = {part[0], part[1], whole};
            for (int j = 0; j < 3; j++) {
                const char **key = &probe[j];
                const char ***hit = (const char ***)bsearch(&key, sorted, count, sizeof *sorted, pf__gguf_text_cmp);
                found[j] = hit ? *hit : NULL;
            }
        }
        if (!found[0] || !found[1] || !found[2]) {
            r = pf__format(message, size, PF_ERROR_FORMAT, "%s: merge %zu is not of two tokens into a third", path, k + 1);
            break;
        }
        for (int j = 0; j < 3; j++) wants[3 * k + j] = (uint32_t)(found[j] - texts);
        if (scores[wants[3 * k + 2]] < -(float)k) scores[wants[3 * k + 2]] = -(float)k;
    }
    if (!r) {
        pf__gguf_kv kv;
        pf__gguf g;
        memset(&kv, 0, sizeof kv);
        memset(&g, 0, sizeof g);
        kv.type = PF__GGUF_ARRAY, kv.elem_type = PF__GGUF_I32, kv.count = count, kv.value = type_bytes;
        g.path = path;
        r = pf__gguf_spm_merges(&g, texts, lens, scores, &kv, count, &derived, &num_derived, message, size);
    }
    /* the derived merges, those of other splits of a piece left out (transformers' conversion of a
       SentencePiece model makes them too, at the piece's rank), are the BPE's in its order */
    uint64_t *ranked = r ? NULL : (uint64_t *)malloc((merges->count ? merges->count : 1) * sizeof *ranked);
    if (!r && !ranked) r = pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; !r && i < merges->count; i++) ranked[i] = (uint64_t)wants[3 * i] << 32 | wants[3 * i + 1];
    if (!r) qsort(ranked, merges->count, sizeof *ranked, pf__u64_cmp);
    size_t next = 0;
    for (size_t i = 0; !r && i < num_derived; i++) {
        uint64_t pair = (uint64_t)derived[i].left << 32 | derived[i].right;
        if (!bsearch(&pair, ranked, merges->count, sizeof *ranked, pf__u64_cmp)) continue;
        if (next < merges->count && wants[3 * next] == derived[i].left && wants[3 * next + 1] == derived[i].right &&
            wants[3 * next + 2] == derived[i].whole)
            next++;
        else
            break;
    }
    if (!r && next != merges->count)
        r = pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: its merges are not SentencePiece's (every split of a "
                       "piece into two, by the piece's score: tokenizer.ggml.model \"llama\"), from merge %zu on", path,
                       next + 1);
    free(ranked);
done:
    free(sorted);
    free(wants);
    free(type_bytes);
    free(lens);
    free(derived);
    return r;
}

/* The tokenizer.ggml.* keys of a BPE tokenizer.json: a byte-level one as tokenizer.ggml.model
   "gpt2" (merges, and the tokenizer.ggml.pre whose pf__gguf_pretokenizers row its pre-tokenizer and
   normalizer are), SentencePiece's (byte fallback, Metaspace) as "llama" (scores that make its
   merges, add_space_prefix, the unknown token); tokens by id (ids the embedding has beyond them
   padded as llama.cpp's converter pads them, "[PAD<id>]", unused), their types (added tokens
   control when special, else user-defined; <0xXX> pieces bytes), the config's bos / eos / pad ids,
   add_bos / add_eos from the post-processor, the chat template. Other models, and any option
   GGUF's form would change, are refused. */
/* The vocabulary's id of token text (an added token's where it is one), or -1. */
static int64_t pf__gguf_json_token_id(const pf__json *vocab, const pf__json *added, const char *text) {
    double id = -1;
    pf__json_number(pf__json_get(vocab, text), &id);
    for (const pf__json *t = added && added->type == PF__JSON_ARRAY ? added->first : NULL; t; t = t->next) {
        const pf__json *content = pf__json_get(t, "content");
        if (content && content->type == PF__JSON_STRING && !strcmp(content->string, text)) pf__json_number(pf__json_get(t, "id"), &id);
    }
    return id >= 0 && id == floor(id) ? (int64_t)id : -1;
}

/* A WordPiece tokenizer.json as tokenizer.ggml.model "bert" (what llama.cpp's converter writes):
   each piece that starts a word behind the phantom space, a continuing one without its "##";
   special added tokens as control tokens, kept as they are; [CLS] and [SEP] as the bos and
   seperator ids; BertNormalizer's lowercase and strip_accents. Anything else BERT's tokenizer
   does not do the way the reader takes a "bert" vocabulary is refused. */
#define PF__WP_REFUSE(...) do { r = pf__format(message, size, PF_ERROR_UNSUPPORTED, __VA_ARGS__); goto done; } while (0)
static pf_result pf__gguf_meta_wordpiece(pf__gguf_meta *meta, const pf__json *root, const char *path, size_t count,
                                         char *message, size_t size) {
    const pf__json *model = pf__json_get(root, "model"), *vocab = pf__json_get(model, "vocab"),
                   *added = pf__json_get(root, "added_tokens"), *normalizer = pf__json_get(root, "normalizer"),
                   *post = pf__json_get(root, "post_processor"), *unk = pf__json_get(model, "unk_token");
    const pf__json *prefix = pf__json_get(model, "continuing_subword_prefix"), *longest = pf__json_get(model, "max_input_chars_per_word");
    const pf__json *lowercase = normalizer ? pf__json_get(normalizer, "lowercase") : NULL,
                   *strip = normalizer ? pf__json_get(normalizer, "strip_accents") : NULL;
    const char **texts = NULL;
    int32_t *types = NULL;
    char *phantom = NULL;
    pf__tok_buf want = {NULL, 0, 0};
    pf__json *want_json = NULL;
    pf_result r = PF_OK;
    double chars = 0;
    if (!vocab || vocab->type != PF__JSON_OBJECT || !unk || unk->type != PF__JSON_STRING || !prefix ||
        prefix->type != PF__JSON_STRING || strcmp(prefix->string, "##") || pf__json_number(longest, &chars) != 1 || chars != 100)
        PF__WP_REFUSE("%s: a WordPiece model other than BERT's (its vocab, unk_token, continuing_subword_prefix \"##\" and "
                   "max_input_chars_per_word 100) has no GGUF form", path);
    int lower = lowercase && lowercase->type == PF__JSON_BOOL ? lowercase->boolean : -1;
    int strip_accents = strip && strip->type == PF__JSON_BOOL ? strip->boolean : strip && strip->type == PF__JSON_NULL ? lower : -1;
    char err[64];
    if (lower < 0 || strip_accents < 0 || pf__gguf_put_bert_normalizer(&want, lower, strip_accents) ||
        !(want_json = pf__json_parse((const char *)want.p, want.len, err, sizeof err)) ||
        !pf__gguf_json_same(normalizer, want_json, "strip_accents"))
        PF__WP_REFUSE("%s: a normalizer other than BertNormalizer (clean_text and handle_chinese_chars on) has no GGUF form", path);
    pf__json_free(want_json);
    want_json = NULL;
    static const struct { const char *key, *form; } fixed[] = {{"pre_tokenizer", pf__gguf_bert_pre}, {"decoder", pf__gguf_bert_decoder}};
    for (size_t k = 0; k < PF__COUNT(fixed); k++) {
        pf__json *form = pf__json_parse(fixed[k].form, strlen(fixed[k].form), err, sizeof err);
        int same = form && pf__gguf_json_same(pf__json_get(root, fixed[k].key), form, NULL);
        pf__json_free(form);
        if (!same) PF__WP_REFUSE("%s: a WordPiece tokenizer's %s other than %s has no GGUF form", path, fixed[k].key, fixed[k].form);
    }
    /* [CLS] A [SEP]: the template's first and last special tokens, the whole template BERT's */
    const pf__json *single = post ? pf__json_get(post, "single") : NULL;
    const pf__json *first = single && single->type == PF__JSON_ARRAY && single->count == 3 ? single->first : NULL;
    const pf__json *cls = first ? pf__json_get(pf__json_get(first, "SpecialToken"), "id") : NULL;
    const pf__json *sep = first ? pf__json_get(pf__json_get(first->next->next, "SpecialToken"), "id") : NULL;
    int64_t cls_id = cls && cls->type == PF__JSON_STRING ? pf__gguf_json_token_id(vocab, added, cls->string) : -1;
    int64_t sep_id = sep && sep->type == PF__JSON_STRING ? pf__gguf_json_token_id(vocab, added, sep->string) : -1;
    want.len = 0;
    if (cls_id < 0 || sep_id < 0 ||
        pf__gguf_put_bert_template(&want, cls->string, cls->string_len, cls_id, sep->string, sep->string_len, sep_id) ||
        !(want_json = pf__json_parse((const char *)want.p, want.len, err, sizeof err)) || !pf__gguf_json_same(post, want_json, NULL))
        PF__WP_REFUSE("%s: a post-processor other than BERT's [CLS] A [SEP] (B [SEP]) has no GGUF form", path);
    int64_t unk_id = pf__gguf_json_token_id(vocab, added, unk->string);
    texts = (const char **)calloc(count ? count : 1, sizeof *texts);
    types = (int32_t *)malloc((count ? count : 1) * sizeof *types);
    if (!texts || !types) {
        r = pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    size_t phantom_bytes = 0;
    for (const pf__json *v = vocab->first; v; v = v->next) {
        double id = -1;
        if (pf__json_number(v, &id) != 1 || id < 0 || id >= (double)count || id != floor(id) || texts[(size_t)id])
            PF__WP_REFUSE("%s: vocab entry \"%s\" has id %g, outside the model's %zu or taken twice", path, v->key, id, count);
        if (!strncmp(v->key, pf__gguf_phantom_space, 3))
            PF__WP_REFUSE("%s: vocab entry \"%s\" starts with the phantom space GGUF's \"bert\" vocabulary puts before a word's "
                       "first piece", path, v->key);
        texts[(size_t)id] = v->key;
        types[(size_t)id] = PF__GGUF_TOKEN_NORMAL;
        phantom_bytes += strlen(v->key) + 4;
    }
    for (const pf__json *t = added && added->type == PF__JSON_ARRAY ? added->first : NULL; t; t = t->next) {
        const pf__json *text = pf__json_get(t, "content");
        double id = -1;
        if (!text || text->type != PF__JSON_STRING || pf__json_number(pf__json_get(t, "id"), &id) != 1 || id < 0 ||
            id >= (double)count || id != floor(id) || (texts[(size_t)id] && strcmp(texts[(size_t)id], text->string)))
            PF__WP_REFUSE("%s: an added token without content, or whose id is outside the model's %zu or another token's", path,
                       count);
        static const char *const flags[] = {"lstrip", "rstrip", "single_word", "normalized"};
        for (size_t k = 0; k < PF__COUNT(flags); k++)
            if (pf__tok_json_bool(t, flags[k], 0))
                PF__WP_REFUSE("%s: added token \"%s\" has %s, which GGUF cannot say", path, text->string, flags[k]);
        if (!pf__tok_json_bool(t, "special", 0))
            PF__WP_REFUSE("%s: added token \"%s\" is not special: a \"bert\" vocabulary has none such", path, text->string);
        texts[(size_t)id] = text->string;
        types[(size_t)id] = PF__GGUF_TOKEN_CONTROL;
    }
    for (size_t i = 0; i < count; i++)
        if (!texts[i]) PF__WP_REFUSE("%s: id %zu has no token (GGUF lists every id's)", path, i);
    if (unk_id < 0 || types[unk_id] != PF__GGUF_TOKEN_CONTROL)
        PF__WP_REFUSE("%s: unk_token \"%s\" is not a special token, as llama.cpp's \"bert\" vocabulary has it", path, unk->string);
    if (!(phantom = (char *)malloc(phantom_bytes + 1))) {
        r = pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    pf__gguf_meta_string(meta, "tokenizer.ggml.model", "bert");
    pf__gguf_meta_string(meta, "tokenizer.ggml.pre", "default");
    pf__gguf_meta_array(meta, "tokenizer.ggml.tokens", PF__GGUF_STRING, count);
    for (size_t i = 0; i < count; i++) {
        size_t len = strlen(texts[i]);
        if (types[i] == PF__GGUF_TOKEN_CONTROL) pf__gguf_put_string(&meta->out, texts[i], len);
        else if (len >= 2 && !memcmp(texts[i], "##", 2)) pf__gguf_put_string(&meta->out, texts[i] + 2, len - 2);
        else {
            memcpy(phantom, pf__gguf_phantom_space, 3);
            memcpy(phantom + 3, texts[i], len);
            pf__gguf_put_string(&meta->out, phantom, len + 3);
        }
    }
    pf__gguf_meta_array(meta, "tokenizer.ggml.token_type", PF__GGUF_I32, count);
    for (size_t i = 0; i < count; i++) pf__gguf_put_u(&meta->out, (uint32_t)types[i], 4);
    pf__gguf_meta_u32(meta, "tokenizer.ggml.bos_token_id", (uint32_t)cls_id);
    pf__gguf_meta_u32(meta, "tokenizer.ggml.seperator_token_id", (uint32_t)sep_id);
    pf__gguf_meta_u32(meta, "tokenizer.ggml.unknown_token_id", (uint32_t)unk_id);
    pf__gguf_meta_bool(meta, "tokenizer.ggml.normalizer.lowercase", lower);
    pf__gguf_meta_bool(meta, "tokenizer.ggml.normalizer.strip_accents", strip_accents);
    meta->wordpiece = 1;
done:
    free(texts);
    free(types);
    free(phantom);
    free(want.p);
    pf__json_free(want_json);
    return r;
}
#undef PF__WP_REFUSE

static pf_result pf__gguf_meta_tokenizer(pf__gguf_meta *meta, const char *dir, const pf_model *m, char *message, size_t size) {
    const pf__config *c = &m->config;
    char path[4096];
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    struct stat st;
    if (stat(path, &st)) {
        if (m->tokenizer)
            return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: its tokenizer is not a tokenizer.json, which is "
                              "what is written to GGUF", dir);
        return PF_OK; /* no tokenizer: none written */
    }
    pf__json *root = NULL;
    pf_result r = pf__json_load(path, &root, message, size);
    if (r) return r;
    const pf__json *model = pf__json_get(root, "model"), *added = pf__json_get(root, "added_tokens");
    const pf__json *type = model ? pf__json_get(model, "type") : NULL, *vocab = model ? pf__json_get(model, "vocab") : NULL;
    const pf__json *merges = model ? pf__json_get(model, "merges") : NULL;
    const pf__json *pre = pf__json_get(root, "pre_tokenizer"), *normalizer = pf__json_get(root, "normalizer");
    const pf__json *decoder = pf__json_get(root, "decoder");
    const char **texts = NULL;
    int32_t *types = NULL;
    float *scores = NULL;
    size_t count = (size_t)c->vocab_size;
    int p = -1, add_bos = 0, add_eos = 0, space_prefix = -1, unk_id = -1;
#define PF__REFUSE(...) do { r = pf__format(message, size, PF_ERROR_UNSUPPORTED, __VA_ARGS__); goto done; } while (0)
    if (type && type->type == PF__JSON_STRING && !strcmp(type->string, "WordPiece")) {
        r = pf__gguf_meta_wordpiece(meta, root, path, count, message, size);
        goto done;
    }
    if (!type || type->type != PF__JSON_STRING || strcmp(type->string, "BPE") || !vocab || vocab->type != PF__JSON_OBJECT ||
        !merges || merges->type != PF__JSON_ARRAY)
        PF__REFUSE("%s: model \"%s\" is not written to GGUF (a BPE with its vocab and merges, and WordPiece, are)", path,
                   type && type->type == PF__JSON_STRING ? type->string : "?");
    int spm = pf__tok_json_bool(model, "byte_fallback", 0);
    if (spm) {
        /* Gemma's form of the spaces (no prefix): replaced by the normalizer, then a split on the
           spaces it left (none), as Metaspace "never" replaces them */
        char gemma_err[64];
        pf__json *gemma_norm = pf__json_parse(pf__gguf_gemma_normalizer, strlen(pf__gguf_gemma_normalizer), gemma_err,
                                              sizeof gemma_err);
        pf__json *gemma_pre = pf__json_parse(pf__gguf_gemma_pre, strlen(pf__gguf_gemma_pre), gemma_err, sizeof gemma_err);
        pf__json *gemma_dec = pf__json_parse(pf__gguf_spm_decoder[0], strlen(pf__gguf_spm_decoder[0]), gemma_err,
                                             sizeof gemma_err);
        if (gemma_norm && gemma_pre && gemma_dec && pf__gguf_json_same(normalizer, gemma_norm, NULL) &&
            pf__gguf_json_same(pre, gemma_pre, NULL) && pf__gguf_json_same(decoder, gemma_dec, NULL))
            space_prefix = 0, normalizer = NULL;
        pf__json_free(gemma_norm);
        pf__json_free(gemma_pre);
        pf__json_free(gemma_dec);
        for (int s = 0; s < 2 && space_prefix < 0; s++) {
            char err[64];
            pf__json *want_pre = pf__json_parse(pf__gguf_spm_pre[s], strlen(pf__gguf_spm_pre[s]), err, sizeof err);
            pf__json *want_dec = pf__json_parse(pf__gguf_spm_decoder[s], strlen(pf__gguf_spm_decoder[s]), err, sizeof err);
            if (want_pre && want_dec && pf__gguf_json_same(pre, want_pre, NULL) && pf__gguf_json_same(decoder, want_dec, NULL))
                space_prefix = s;
            pf__json_free(want_pre);
            pf__json_free(want_dec);
        }
        if (space_prefix < 0 || (normalizer && normalizer->type != PF__JSON_NULL) || !pf__tok_json_bool(model, "fuse_unk", 0))
            PF__REFUSE("%s: a BPE with byte_fallback whose normalizer, pre-tokenizer, decoder or fuse_unk are not "
                       "SentencePiece's as GGUF's tokenizer.ggml.model \"llama\" means them (no normalizer, Metaspace \"\xe2\x96\x81\" "
                       "with prepend_scheme first or never, or Gemma's spaces replaced by its normalizer; fuse_unk)", path);
        const pf__json *unk = pf__json_get(model, "unk_token");
        double id = -1;
        if (unk && unk->type == PF__JSON_STRING && pf__json_number(pf__json_get(vocab, unk->string), &id) == 1) unk_id = (int)id;
    } else {
        p = pf__gguf_pretokenizer_row(pre, normalizer);
        if (p < 0)
            PF__REFUSE("%s: its pre_tokenizer and normalizer are none of those GGUF names in tokenizer.ggml.pre (gpt-2, smollm, "
                       "llama-bpe, qwen2, olmo)", path);
        const pf__json *decoder_type = decoder ? pf__json_get(decoder, "type") : NULL;
        if (!decoder_type || decoder_type->type != PF__JSON_STRING || strcmp(decoder_type->string, "ByteLevel"))
            PF__REFUSE("%s: a byte-level BPE's decoder is ByteLevel in GGUF; this one's is not", path);
    }
    int ignore_merges = spm ? 0 : pf__gguf_pretokenizers[p].ignore_merges;
    if (pf__tok_json_bool(model, "ignore_merges", 0) != ignore_merges)
        PF__REFUSE("%s: ignore_merges %s differs from what GGUF's form of it means", path, ignore_merges ? "false" : "true");
    static const char *const empty_keys[] = {"continuing_subword_prefix", "end_of_word_suffix", "dropout"};
    for (size_t k = 0; k < PF__COUNT(empty_keys); k++) {
        const pf__json *v = pf__json_get(model, empty_keys[k]);
        if (v && v->type != PF__JSON_NULL && !(v->type == PF__JSON_STRING && !v->string_len))
            PF__REFUSE("%s: model.%s has no GGUF form", path, empty_keys[k]);
    }
    if ((r = pf__gguf_post_processor(pf__json_get(root, "post_processor"), vocab, added, c, &add_bos, &add_eos, path, message,
                                     size)))
        goto done;
    texts = (const char **)calloc(count ? count : 1, sizeof *texts);
    types = (int32_t *)malloc((count ? count : 1) * sizeof *types);
    scores = (float *)malloc((count ? count : 1) * sizeof *scores);
    if (!texts || !types || !scores) {
        r = pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < count; i++) types[i] = PF__GGUF_TOKEN_NORMAL;
    for (const pf__json *v = vocab->first; v; v = v->next) {
        double id = -1;
        if (pf__json_number(v, &id) != 1 || id < 0 || id >= (double)count || id != floor(id) || texts[(size_t)id])
            PF__REFUSE("%s: vocab entry \"%s\" has id %g, outside the model's %zu or taken twice", path, v->key, id, count);
        texts[(size_t)id] = v->key;
        unsigned byte;
        char end;
        if (spm && strlen(v->key) == 6 && sscanf(v->key, "<0x%2X%c", &byte, &end) == 2 && end == '>')
            types[(size_t)id] = 6; /* llama.cpp's BYTE: byte fallback's pieces */
    }
    for (const pf__json *t = added && added->type == PF__JSON_ARRAY ? added->first : NULL; t; t = t->next) {
        const pf__json *text = pf__json_get(t, "content");
        double id = -1;
        if (!text || text->type != PF__JSON_STRING || pf__json_number(pf__json_get(t, "id"), &id) != 1 || id < 0 ||
            id >= (double)count || id != floor(id) || (texts[(size_t)id] && strcmp(texts[(size_t)id], text->string)))
            PF__REFUSE("%s: an added token without content, or whose id is outside the model's %zu or another token's", path,
                       count);
        static const char *const flags[] = {"lstrip", "rstrip", "single_word"};
        for (size_t k = 0; k < PF__COUNT(flags); k++)
            if (pf__tok_json_bool(t, flags[k], 0))
                PF__REFUSE("%s: added token \"%s\" has %s, which GGUF cannot say", path, text->string, flags[k]);
        if ((spm || pf__gguf_pretokenizers[p].normalizer) && pf__tok_json_bool(t, "normalized", 0))
            PF__REFUSE("%s: added token \"%s\" is matched in normalized text, which GGUF cannot say", path, text->string);
        texts[(size_t)id] = text->string;
        types[(size_t)id] = (int)id == unk_id ? PF__GGUF_TOKEN_UNKNOWN
                            : pf__tok_json_bool(t, "special", 0) ? PF__GGUF_TOKEN_CONTROL
                                                                 : PF__GGUF_TOKEN_USER_DEFINED;
    }
    size_t named = count;
    while (named > 0 && !texts[named - 1]) named--;
    for (size_t i = 0; i < named; i++)
        if (!texts[i]) PF__REFUSE("%s: id %zu has no token (GGUF lists every id's)", path, i);
    if (unk_id >= 0 && types[unk_id] == PF__GGUF_TOKEN_NORMAL) types[unk_id] = PF__GGUF_TOKEN_UNKNOWN;
    char (*pads)[32] = NULL; /* the embedding's rows past the tokenizer's, as llama.cpp pads them */
    if (named < count && !(pads = (char (*)[32])malloc((count - named) * sizeof *pads))) {
        r = pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    for (size_t i = named; i < count; i++) {
        snprintf(pads[i - named], sizeof *pads, "[PAD%zu]", i);
        texts[i] = pads[i - named];
        types[i] = 5; /* llama.cpp's UNUSED */
    }
    if (spm) r = pf__gguf_spm_scores(merges, texts, types, count, scores, path, message, size);
    if (!r) {
        pf__gguf_meta_string(meta, "tokenizer.ggml.model", spm ? "llama" : "gpt2");
        if (!spm) pf__gguf_meta_string(meta, "tokenizer.ggml.pre", pf__gguf_pretokenizers[p].pre);
        pf__gguf_meta_array(meta, "tokenizer.ggml.tokens", PF__GGUF_STRING, count);
        for (size_t i = 0; i < count; i++) pf__gguf_put_string(&meta->out, texts[i], strlen(texts[i]));
        pf__gguf_meta_array(meta, "tokenizer.ggml.token_type", PF__GGUF_I32, count);
        for (size_t i = 0; i < count; i++) pf__gguf_put_u(&meta->out, (uint32_t)types[i], 4);
    }
    if (!r && spm) {
        pf__gguf_meta_array(meta, "tokenizer.ggml.scores", PF__GGUF_F32, count);
        for (size_t i = 0; i < count; i++) {
            uint32_t bits;
            memcpy(&bits, &scores[i], 4);
            pf__gguf_put_u(&meta->out, bits, 4);
        }
        pf__gguf_meta_bool(meta, "tokenizer.ggml.add_space_prefix", space_prefix);
        if (unk_id >= 0) pf__gguf_meta_u32(meta, "tokenizer.ggml.unknown_token_id", (uint32_t)unk_id);
    }
    if (!r && !spm) {
        pf__gguf_meta_array(meta, "tokenizer.ggml.merges", PF__GGUF_STRING, merges->count);
        for (const pf__json *mg = merges->first; mg && !r; mg = mg->next) {
            if (mg->type == PF__JSON_STRING) {
                pf__gguf_put_string(&meta->out, mg->string, mg->string_len);
                continue;
            }
            const pf__json *left = mg->type == PF__JSON_ARRAY && mg->count == 2 ? mg->first : NULL, *right = left ? left->next : NULL;
            if (!left || left->type != PF__JSON_STRING || right->type != PF__JSON_STRING ||
                memchr(left->string, ' ', left->string_len) || memchr(right->string, ' ', right->string_len)) {
                r = pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: a merge that is not two tokens without spaces", path);
                break;
            }
            pf__gguf_put_u(&meta->out, left->string_len + 1 + right->string_len, 8);
            pf__gguf_put_bytes(&meta->out, left->string, left->string_len);
            pf__gguf_put_bytes(&meta->out, " ", 1);
            pf__gguf_put_bytes(&meta->out, right->string, right->string_len);
        }
    }
    free(pads);
    if (r) goto done;
    pf__gguf_meta_bool(meta, "tokenizer.ggml.add_bos_token", add_bos);
    pf__gguf_meta_bool(meta, "tokenizer.ggml.add_eos_token", add_eos);
    if (m->tokenizer && m->tokenizer->chat_template)
        pf__gguf_meta_string(meta, "tokenizer.chat_template", m->tokenizer->chat_template);
#undef PF__REFUSE
done:
    free(texts);
    free(types);
    free(scores);
    pf__json_free(root);
    return r;
}

/* The config's bos, eos and pad ids (with a tokenizer or without): its eos ids as eos, eot and eom
   (llama.cpp's end-of-generation ids; more are refused). */
static pf_result pf__gguf_meta_special_ids(pf__gguf_meta *meta, const pf__config *c, const char *dir, char *message,
                                           size_t size) {
    if (c->num_eos_ids > (int)PF__COUNT(pf__gguf_eos_keys))
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: the config names %d eos ids; GGUF holds 3 "
                          "(tokenizer.ggml.eos_token_id, eot_token_id and eom_token_id)", dir, c->num_eos_ids);
    if (meta->wordpiece) { /* bos and eos are the tokenizer's: the config's, if any, do not read back (refused after) */
        if (c->pad_token_id >= 0) pf__gguf_meta_u32(meta, "tokenizer.ggml.padding_token_id", (uint32_t)c->pad_token_id);
        return PF_OK;
    }
    if (c->bos_token_id >= 0) pf__gguf_meta_u32(meta, "tokenizer.ggml.bos_token_id", (uint32_t)c->bos_token_id);
    for (int k = 0; k < c->num_eos_ids; k++) /* the first as eos, the others as eot, eom */
        pf__gguf_meta_u32(meta, pf__gguf_eos_keys[k], (uint32_t)c->eos_ids[k]);
    if (c->pad_token_id >= 0) pf__gguf_meta_u32(meta, "tokenizer.ggml.padding_token_id", (uint32_t)c->pad_token_id);
    return PF_OK;
}

/* A tensor being written: its GGUF name, dims (ggml's order), type and bytes (in the checkpoint's
   map, or `owned`). */
typedef struct pf__gguf_new_tensor {
    char name[128];
    int ndim;
    uint64_t ne[PF__GGUF_MAX_DIMS];
    uint32_t type;
    const uint8_t *data;
    size_t bytes;
    void *owned;
} pf__gguf_new_tensor;

/* Value i of checkpoint tensor st as fp32. */
static float pf__gguf_st_value(const pf__st_tensor *st, size_t i) {
    float f;
    if (st->dtype == PF__DTYPE_F32) return memcpy(&f, st->data + 4 * i, 4), f;
    uint16_t h = (uint16_t)(st->data[2 * i] | st->data[2 * i + 1] << 8);
    return st->dtype == PF__DTYPE_F16 ? pf__f16_to_f32(h) : pf__bf16_to_f32(h);
}

/* Checkpoint tensor st as GGUF tensor out under transform, the reader's undone: rows of LLaMA's q
   and k, or of a fused qkv, go back where pf__gguf_source_row says the reader takes them from;
   Conv1D's [in][out] is stored [out][in]; a norm's w as 1 + w; a [1, n] row as a vector. Tensors
   that stay as they are point into the checkpoint's map, in its dtype. */
static pf_result pf__gguf_new_tensor_of(const pf__st_tensor *st, pf__gguf_transform transform, const pf__config *c,
                                        pf__gguf_new_tensor *out, const char *dir, char *message, size_t size) {
    out->ndim = st->ndim;
    for (int d = 0; d < st->ndim; d++) out->ne[d] = st->shape[st->ndim - 1 - d];
    if (st->dtype != PF__DTYPE_F32 && st->dtype != PF__DTYPE_F16 && st->dtype != PF__DTYPE_BF16)
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: tensor '%s' is %s; F32, F16 and BF16 checkpoints are "
                          "written to GGUF", dir, st->name, st->file_dtype ? st->file_dtype : "quantized");
    if (st->ndim < 1 || st->ndim > PF__GGUF_MAX_DIMS)
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: tensor '%s' has %d dimensions", dir, st->name, st->ndim);
    if (transform == PF__GGUF_AS_ROW) {
        if (st->ndim != 2 || st->shape[0] != 1)
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: tensor '%s' is not a [1, n] row", dir, st->name);
        out->ndim = 1, out->ne[0] = st->shape[1];
        transform = PF__GGUF_AS_IS;
    }
    if (transform == PF__GGUF_TRANSPOSE && st->ndim == 2) out->ne[0] = st->shape[0], out->ne[1] = st->shape[1];
    if (transform == PF__GGUF_AS_IS) {
        out->type = st->dtype == PF__DTYPE_F32 ? PF__GGML_F32 : st->dtype == PF__DTYPE_F16 ? PF__GGML_F16 : PF__GGML_BF16;
        out->data = st->data;
        out->bytes = st->bytes;
        return PF_OK;
    }
    size_t rows = st->ndim == 1 ? st->numel : st->shape[0], cols = rows ? st->numel / rows : 0;
    size_t heads = transform == PF__GGUF_UNPERMUTE_K ? (size_t)c->num_kv_heads : (size_t)c->num_heads;
    size_t kv_heads = (size_t)c->num_kv_heads, head_rows = heads ? rows / heads : 0;
    if (transform == PF__GGUF_INTERLEAVE_QKV) head_rows = heads ? rows / (3 * heads) : 0;
    if (transform == PF__GGUF_GROUP_QKV) head_rows = heads ? rows / (heads + 2 * kv_heads) : 0;
    int shuffled = transform == PF__GGUF_UNPERMUTE_Q || transform == PF__GGUF_UNPERMUTE_K ||
                   transform == PF__GGUF_INTERLEAVE_QKV || transform == PF__GGUF_GROUP_QKV;
    int fits = transform == PF__GGUF_UNPERMUTE_Q || transform == PF__GGUF_UNPERMUTE_K ? heads && rows % heads == 0 && head_rows % 2 == 0
               : transform == PF__GGUF_INTERLEAVE_QKV ? heads && rows == 3 * heads * head_rows
               : transform == PF__GGUF_GROUP_QKV ? heads && kv_heads && heads % kv_heads == 0 && rows == (heads + 2 * kv_heads) * head_rows
               : transform == PF__GGUF_TRANSPOSE ? st->ndim == 2
                                                  : transform == PF__GGUF_MINUS_ONE;
    if (!fits)
        return pf__format(message, size, shuffled || transform == PF__GGUF_TRANSPOSE ? PF_ERROR_FORMAT : PF_ERROR_UNSUPPORTED,
                          shuffled || transform == PF__GGUF_TRANSPOSE ? "%s: tensor '%s' does not have the shape its GGUF "
                          "form rearranges" : "%s: tensor '%s' is stored in GGUF in a form not written yet (latent "
                          "attention's halves)", dir, st->name);
    float *values = (float *)malloc((st->numel ? st->numel : 1) * sizeof(float));
    if (!values) return pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    for (size_t r = 0; r < rows; r++) {
        size_t to = shuffled ? pf__gguf_source_row(transform, r, heads, kv_heads, head_rows) : r;
        for (size_t k = 0; k < cols; k++) {
            float v = pf__gguf_st_value(st, r * cols + k);
            if (transform == PF__GGUF_TRANSPOSE) values[k * rows + r] = v; /* [in][out] as GGUF's [out][in] rows */
            else values[to * cols + k] = transform == PF__GGUF_MINUS_ONE ? v + 1.0f : v;
        }
    }
    out->type = PF__GGML_F32;
    out->owned = values;
    out->data = (const uint8_t *)values;
    out->bytes = st->numel * sizeof(float);
    return PF_OK;
}

/* Name without the first of the family's prefixes it starts with. */
static const char *pf__gguf_unprefixed(const pf__policy_rows *rows, pf__arch_id arch, const char *name) {
    for (size_t i = 0; i < rows->num_prefixes; i++) {
        size_t n = strlen(rows->prefixes[i].prefix);
        if (rows->prefixes[i].arch == arch && n && !strncmp(name, rows->prefixes[i].prefix, n)) return name + n;
    }
    return name;
}

/* A mixture's experts of one layer (st: expert 0's tensor, bare its name without the family's
   prefix, pattern its row's transformers name, %d the layer then the expert) as llama.cpp stacks
   them: one [experts][rows][cols] tensor (ggml's ne: cols, rows, experts) in their dtype, every
   expert's tensor present with expert 0's dtype and shape. */
static pf_result pf__gguf_stack_experts(const pf_model *m, const pf__st_tensor *st, const char *bare, const char *pattern,
                                        int layer, pf__gguf_new_tensor *out, char *message, size_t size) {
    const pf__config *c = &m->config;
    size_t experts = (size_t)c->num_experts, prefix = strlen(st->name) - strlen(bare);
    if (st->ndim != 2 || (st->dtype != PF__DTYPE_F32 && st->dtype != PF__DTYPE_F16 && st->dtype != PF__DTYPE_BF16))
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: tensor '%s' is not an F32, F16 or BF16 matrix",
                          m->dir, st->name);
    uint8_t *stacked = (uint8_t *)malloc(experts * st->bytes);
    if (!stacked) return pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    for (size_t x = 0; x < experts; x++) {
        char hf[160], name[320];
        snprintf(hf, sizeof hf, pattern, layer, (int)x);
        snprintf(name, sizeof name, "%.*s%s", (int)prefix, st->name, pf__gguf_unprefixed(pf__rows(c->arch), c->arch, hf));
        const pf__st_tensor *e = pf__st_find(&m->st, name);
        if (!e || e->dtype != st->dtype || e->ndim != 2 || e->shape[0] != st->shape[0] || e->shape[1] != st->shape[1]) {
            free(stacked);
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: expert %zu's '%s' is %s (GGUF stacks the %zu experts "
                              "of a layer: each [%zu, %zu] in %s, as '%s')", m->dir, x, name,
                              e ? "of another dtype or shape" : "missing", experts, st->shape[0], st->shape[1],
                              st->file_dtype, st->name);
        }
        memcpy(stacked + x * st->bytes, e->data, st->bytes);
    }
    out->ndim = 3;
    out->ne[0] = st->shape[1], out->ne[1] = st->shape[0], out->ne[2] = experts;
    out->type = st->dtype == PF__DTYPE_F32 ? PF__GGML_F32 : st->dtype == PF__DTYPE_F16 ? PF__GGML_F16 : PF__GGML_BF16;
    out->owned = stacked;
    out->data = stacked;
    out->bytes = experts * st->bytes;
    return PF_OK;
}

/* The GGUF tensors of the checkpoint's: each its PF_GGUF_TENSOR row of arch (transformers' names
   compared without the family's prefixes; a mixture's experts stacked, pf__gguf_stack_experts), a
   known buffer skipped, any other tensor refused. */
static pf_result pf__gguf_new_tensors(const pf_model *m, const pf__gguf_arch *a, pf__gguf_new_tensor *out, size_t *count,
                                      char *message, size_t size) {
    const pf__config *c = &m->config;
    const pf__policy_rows *rows = pf__rows(c->arch);
    *count = 0;
    for (size_t i = 0; i < m->st.num_tensors; i++) {
        const pf__st_tensor *st = &m->st.tensors[i];
        const char *bare = pf__gguf_unprefixed(rows, c->arch, st->name);
        const pf__gguf_name *found = NULL;
        int layer = -1, expert = -1;
        char hf[160];
        for (size_t k = 0; k < PF__COUNT(pf__gguf_names) && !found; k++) {
            const pf__gguf_name *e = &pf__gguf_names[k];
            int per_layer = !strncmp(e->gguf, "blk.%d.", 7), experts = e->transform == PF__GGUF_SPLIT_EXPERTS;
            if (!pf__gguf_row_of(e->arch, a->name)) continue;
            for (int l = 0; l < (per_layer ? c->num_layers : 1) && !found; l++)
                for (int x = 0; x < (experts ? c->num_experts : 1) && !found; x++) { /* an expert's name: layer, expert */
                    if (experts) snprintf(hf, sizeof hf, e->hf, l, x);
                    else snprintf(hf, sizeof hf, e->hf, l);
                    if (!strcmp(pf__gguf_unprefixed(rows, c->arch, hf), bare)) found = e, layer = l, expert = experts ? x : -1;
                }
        }
        int buffer = 0;
        for (size_t k = 0; k < rows->num_buffers && !found && !buffer; k++)
            for (int l = 0; l < c->num_layers && !buffer && rows->buffers[k].arch == c->arch; l++) {
                snprintf(hf, sizeof hf, rows->buffers[k].pattern, l);
                buffer = !strcmp(hf, bare);
            }
        if (buffer) continue;
        if (!found)
            return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: tensor '%s' has no GGUF name (no PF_GGUF_TENSOR row "
                              "of %s)", m->dir, st->name, a->name);
        if (expert > 0 || found->transform == PF__GGUF_NOT_WRITTEN) continue; /* stacked with expert 0's; left out */
        pf__gguf_new_tensor *t = &out[(*count)++];
        memset(t, 0, sizeof *t);
        snprintf(t->name, sizeof t->name, found->gguf, layer);
        pf_result r = expert == 0 ? pf__gguf_stack_experts(m, st, bare, found->hf, layer, t, message, size)
                                  : pf__gguf_new_tensor_of(st, found->transform, c, t, m->dir, message, size);
        if (r) return r;
    }
    return PF_OK;
}

/* Configs a (the directory's) and b (its GGUF's) the same where the forward reads them: token id
   lists GGUF has no place for (a decoder prompt, languages, suppressed ids) and the owned per-layer
   lists' addresses left out (the lists compared), doubles the family reads as float32, as GGUF
   stores them. A difference names the config.json key of its field, where a row reads one. */
static pf_result pf__gguf_same_config(const pf__config *want, const pf__config *got, const char *dir, char *message,
                                      size_t size) {
    pf__config *x = (pf__config *)malloc(sizeof *x), *y = (pf__config *)malloc(sizeof *y);
    pf_result r = PF_OK;
    if (!x || !y) {
        free(x);
        free(y);
        return pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    memcpy(x, want, sizeof *x);
    memcpy(y, got, sizeof *y);
    const char *what = NULL;
    size_t layers = x->num_layers == y->num_layers && x->num_layers > 0 ? (size_t)x->num_layers : 0;
    struct { int *a, *b; size_t n; const char *name; } lists[] = {
        {x->layer_window, y->layer_window, 4 * layers, "the layers' attention kinds"}, /* with layer_local, _chunk, _local_window */
        {x->layer_rope, y->layer_rope, layers, "the layers without rotary"},
        {x->layer_sparse, y->layer_sparse, layers, "the layers with experts"},
    };
    for (size_t i = 0; i < PF__COUNT(lists) && !what; i++)
        if (!lists[i].a != !lists[i].b || (lists[i].a && memcmp(lists[i].a, lists[i].b, lists[i].n * sizeof(int))))
            what = lists[i].name;
    if (!what && (x->num_eos_ids != y->num_eos_ids ||
                  (x->num_eos_ids && memcmp(x->eos_ids, y->eos_ids, (size_t)x->num_eos_ids * sizeof *x->eos_ids))))
        what = "eos_token_id";
    for (int k = 0; k < 2; k++) {
        pf__config *c = k ? y : x;
        c->layer_window = c->layer_local = c->layer_chunk = c->layer_local_window = c->layer_rope = c->layer_sparse = NULL;
        c->eos_ids = c->decoder_prompt_ids = c->lang_ids = c->suppress_ids = c->begin_suppress_ids = NULL;
        c->num_decoder_prompt_ids = c->num_lang_ids = c->num_suppress_ids = c->num_begin_suppress_ids = 0;
        const pf__policy_rows *rows = pf__rows(c->arch);
        for (size_t i = 0; i < rows->num_configs; i++) {
            double d;
            if (rows->configs[i].arch != c->arch || !rows->configs[i].is_double) continue;
            memcpy(&d, (char *)c + rows->configs[i].offset, sizeof d);
            d = (float)d;
            memcpy((char *)c + rows->configs[i].offset, &d, sizeof d);
        }
        c->final_norm_eps = (float)c->final_norm_eps; /* norm_eps's where the family has none of its own */
    }
    size_t at = 0;
    char named[160];
    while (!what && at < sizeof *x && ((const char *)x)[at] == ((const char *)y)[at]) at++;
    if (!what && at < sizeof *x) {
        int rope = (at >= offsetof(pf__config, rope_type) && at < offsetof(pf__config, embed_multiplier)) ||
                   (at >= offsetof(pf__config, rope_legacy_longrope) && at < offsetof(pf__config, layer_window));
        what = rope
                   ? "the rope scaling (rope_scaling / rope_parameters)"
                   : "a setting the config's code derives";
        const pf__policy_rows *rows = pf__rows(x->arch);
        for (size_t i = 0; i < rows->num_configs; i++)
            if (rows->configs[i].arch == x->arch && rows->configs[i].key && at >= rows->configs[i].offset &&
                at < rows->configs[i].offset + (rows->configs[i].is_double ? sizeof(double) : sizeof(int))) {
                snprintf(named, sizeof named, "config.json's %s", rows->configs[i].key);
                what = named;
                break;
            }
    }
    if (what)
        r = pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: %s has no GGUF form that reads back the same (the file "
                       "would be another model)", dir, what);
    free(x);
    free(y);
    return r;
}

/* The directory's model (loaded as pf_load does) written to path as a GGUF file in its own
   dtypes (F32 where a tensor is rearranged), then loaded back: its config must be the directory's,
   and a tokenizer written must load. */
static pf_result pf__gguf_save_directory(const char *dir, const char *path, char *message, size_t size) {
    pf_model *m = NULL, *back = NULL;
    pf__gguf_meta meta;
    pf__gguf_new_tensor *tensors = NULL;
    size_t count = 0;
    memset(&meta, 0, sizeof meta);
    meta.out.mem = &meta.bytes;
    pf_result r = pf_load(dir, NULL, &m);
    if (r) {
        pf__format(message, size, r, "%s", pf_error_message(m));
        pf_free(m);
        return r;
    }
    const pf__config *c = &m->config;
    const pf__gguf_arch *a = NULL;
    for (size_t i = 0; i < PF__COUNT(pf__gguf_archs) && !a; i++)
        if (!strcmp(pf__gguf_archs[i].model_type, c->model_type)) a = &pf__gguf_archs[i];
    for (size_t i = 0; i + 1 < PF__COUNT(pf__gguf_classes) && !a; i++) /* a family written under another's architecture */
        if (pf__gguf_classes[i].with && !strcmp(pf__gguf_classes[i].model_type, c->model_type))
            for (size_t k = 0; k < PF__COUNT(pf__gguf_archs) && !a; k++)
                if (!strcmp(pf__gguf_archs[k].name, pf__gguf_classes[i].arch)) a = &pf__gguf_archs[k];
    for (size_t i = 0; a && i + 1 < PF__COUNT(pf__gguf_variants) && !r; i++)
        if (pf__gguf_row_of(pf__gguf_variants[i].arch, a->name))
            r = pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: %s files name tensors by the model's variant "
                           "(PF_GGUF_VARIANT): not written yet", dir, a->name);
    if (!a)
        r = pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: model_type \"%s\" has no GGUF architecture (no "
                       "PF_GGUF_ARCH row)", dir, c->model_type);
    else if (!r && a->rotary == 4)
        r = pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: %s's multi-head latent attention is not written to GGUF "
                       "yet", dir, a->name);
    if (!r) {
        pf__gguf_meta_string(&meta, "general.architecture", a->name);
        r = pf__gguf_meta_config(&meta, a, c, dir, message, size);
    }
    if (!r) r = pf__gguf_meta_encoder(&meta, a, m, dir, message, size);
    if (!r && !(tensors = (pf__gguf_new_tensor *)calloc(m->st.num_tensors ? m->st.num_tensors : 1, sizeof *tensors)))
        r = pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    if (!r) r = pf__gguf_new_tensors(m, a, tensors, &count, message, size);
    if (!r) r = pf__gguf_meta_tokenizer(&meta, dir, m, message, size);
    if (!r) r = pf__gguf_meta_special_ids(&meta, c, dir, message, size);
    if (!r && meta.out.bad) r = pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    FILE *f = r ? NULL : fopen(path, "wb");
    if (!r && !f) r = pf__format(message, size, PF_ERROR_IO, "%s: cannot create it", path);
    if (f) {
        static const uint64_t alignment = 32; /* GGUF's default */
        pf__gguf_out o = {f, NULL, 0, 0};
        pf__gguf_put_bytes(&o, "GGUF", 4);
        pf__gguf_put_u(&o, 3, 4);
        pf__gguf_put_u(&o, count, 8);
        pf__gguf_put_u(&o, meta.count, 8);
        pf__gguf_put_bytes(&o, meta.bytes.p, meta.bytes.len);
        uint64_t offset = 0;
        for (size_t i = 0; i < count; i++) {
            pf__gguf_put_string(&o, tensors[i].name, strlen(tensors[i].name));
            pf__gguf_put_u(&o, (uint64_t)tensors[i].ndim, 4);
            for (int d = 0; d < tensors[i].ndim; d++) pf__gguf_put_u(&o, tensors[i].ne[d], 8);
            pf__gguf_put_u(&o, tensors[i].type, 4);
            pf__gguf_put_u(&o, offset, 8);
            offset += (tensors[i].bytes + alignment - 1) / alignment * alignment;
        }
        for (size_t i = 0; i < count; i++) {
            pf__gguf_put_padding(&o, alignment);
            pf__gguf_put_bytes(&o, tensors[i].data, tensors[i].bytes);
        }
        pf__gguf_put_padding(&o, alignment);
        if ((fclose(f) || o.bad) && !r) r = pf__format(message, size, PF_ERROR_IO, "%s: cannot write it", path);
    }
    for (size_t i = 0; tensors && i < count; i++) free(tensors[i].owned);
    free(tensors);
    free(meta.bytes.p);
    if (!r && (r = pf_load(path, NULL, &back)))
        pf__format(message, size, r, "%s as GGUF does not load back: %s", dir, pf_error_message(back));
    if (!r && back->tokenizer_missing[0])
        r = pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s as GGUF: its tokenizer does not load back: %s", dir,
                       back->tokenizer_missing);
    if (!r) r = pf__gguf_same_config(c, &back->config, dir, message, size);
    pf_free(back);
    pf_free(m);
    return r;
}

pf_result pf_quantize_gguf(const char *in_path, const char *out_path, pf_dtype dtype, char *error, size_t error_size) {
    static const uint32_t types[] = {[PF_DTYPE_F32] = PF__GGML_F32, [PF_DTYPE_F16] = PF__GGML_F16,
                                     [PF_DTYPE_BF16] = PF__GGML_BF16, [PF_DTYPE_Q8_0] = PF__GGML_Q8_0,
                                     [PF_DTYPE_Q4_0] = PF__GGML_Q4_0};
    if (!in_path || !out_path)
        return pf__format(error, error_size, PF_ERROR_INVALID_ARGUMENT, "pf_quantize_gguf: a path is NULL");
    if (dtype <= PF_DTYPE_AUTO || dtype > PF_DTYPE_Q4_0)
        return pf__format(error, error_size, PF_ERROR_INVALID_ARGUMENT, "pf_quantize_gguf: dtype %d is not f32, f16, bf16, "
                          "q8_0 or q4_0", (int)dtype);
    struct stat in_stat;
    if (!stat(in_path, &in_stat) && S_ISDIR(in_stat.st_mode)) { /* a model directory: as GGUF, then in dtype */
        size_t n = strlen(out_path) + 8;
        char *as_is = (char *)malloc(n);
        if (!as_is) return pf__format(error, error_size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
        snprintf(as_is, n, "%s.dirXX", out_path);
        pf_result r = pf__gguf_save_directory(in_path, as_is, error, error_size);
        if (!r) r = pf_quantize_gguf(as_is, out_path, dtype, error, error_size);
        remove(as_is);
        free(as_is);
        return r;
    }
    pf__file_map map;
    pf__gguf g;
    memset(&map, 0, sizeof map);
    map.fd = -1;
    memset(&g, 0, sizeof g);
    pf_result r = pf__map_file(in_path, &map, error, error_size);
    uint64_t splits = 1;
    if (!r) {
        g.path = in_path;
        g.data = map.data;
        g.size = map.size;
        r = pf__gguf_parse(&g, error, error_size);
    }
    if (!r && pf__gguf_get_uint(&g, "split.count", &splits) == 1 && splits > 1)
        r = pf__format(error, error_size, PF_ERROR_UNSUPPORTED, "%s: a GGUF split over %llu files: join it first "
                       "(llama.cpp's gguf-split --merge)", in_path, (unsigned long long)splits);
    char *temporary = NULL;
    if (!r) { /* written beside the output, then renamed over it: no half-written file under its name */
        size_t n = strlen(out_path) + 8;
        temporary = (char *)malloc(n);
        if (!temporary) r = pf__format(error, error_size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
        else snprintf(temporary, n, "%s.tmpXX", out_path);
    }
    FILE *f = r ? NULL : fopen(temporary, "wb");
    if (!r && !f) r = pf__format(error, error_size, PF_ERROR_IO, "%s: cannot create it", temporary);
    if (!r) {
        r = pf__gguf_write(&g, f, types[dtype], dtype, error, error_size);
        if (fclose(f) && !r) r = pf__format(error, error_size, PF_ERROR_IO, "%s: cannot write it", temporary);
#ifdef _WIN32
        if (!r) remove(out_path); /* rename does not replace a file there */
#endif
        if (!r && rename(temporary, out_path))
            r = pf__format(error, error_size, PF_ERROR_IO, "%s: cannot rename it as %s", temporary, out_path);
        if (r) remove(temporary);
    }
    free(temporary);
    free(g.kvs);
    free(g.tensors);
    pf__unmap_file(&map);
    return r;
}
