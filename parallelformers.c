/* parallelformers.c: everything on the host. See parallelformers.h for the API and
   ../DESIGN notes in README.md for the shape. Sections, in data-flow order:
     utilities and errors
     JSON
     safetensors (memory-mapped)
     policies and config
     tokenizer
     backends: the operation table and the CPU backend
     rank threads, barrier and all-reduce
     slicing weights onto ranks
     forward pass
     generation
     public API */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "parallelformers.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* =============================================================================================== */
/* utilities and errors                                                                            */
/* =============================================================================================== */

#define PF__MESSAGE_SIZE 512
#define PF__PATH_SIZE 4096

const char *pf_result_string(pf_result result) {
    switch (result) {
    case PF_OK: return "ok";
    case PF_ERROR_INVALID_ARGUMENT: return "invalid argument";
    case PF_ERROR_IO: return "I/O error";
    case PF_ERROR_FORMAT: return "malformed file";
    case PF_ERROR_UNSUPPORTED: return "unsupported";
    case PF_ERROR_OUT_OF_MEMORY: return "out of memory";
    case PF_ERROR_DEVICE: return "device error";
    case PF_ERROR_BUFFER_TOO_SMALL: return "buffer too small";
    }
    return "unknown result";
}

/* snprintf into a message buffer, returning the code so callers can `return pf__error(...)`. */
static pf_result pf__format(char *message, size_t size, pf_result code, const char *fmt, ...) {
    if (message && size) {
        va_list args;
        va_start(args, fmt);
        vsnprintf(message, size, fmt, args);
        va_end(args);
    }
    return code;
}

static int pf__path_join(char *out, size_t cap, const char *dir, const char *name) {
    int n = snprintf(out, cap, "%s/%s", dir, name);
    return (n < 0 || (size_t)n >= cap) ? -1 : 0;
}

static int pf__file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int pf__read_file(const char *path, char **data, size_t *len) {
    *data = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    char *buf = NULL;
    size_t size = 0, cap = 0;
    for (;;) {
        if (cap - size < 65536) {
            size_t new_cap = cap ? cap * 2 : 65536 + 1;
            char *grown = (char *)realloc(buf, new_cap);
            if (!grown) {
                free(buf);
                fclose(f);
                errno = ENOMEM;
                return -1;
            }
            buf = grown;
            cap = new_cap;
        }
        size_t got = fread(buf + size, 1, cap - size - 1, f);
        size += got;
        if (got == 0) break;
    }
    int failed = ferror(f);
    fclose(f);
    if (failed) {
        free(buf);
        errno = EIO;
        return -1;
    }
    buf[size] = 0;
    *data = buf;
    *len = size;
    return 0;
}

/* Overflow-checked size arithmetic for anything derived from a file. */
static int pf__mul_size(size_t a, size_t b, size_t *out) {
    if (a && b > SIZE_MAX / a) return -1;
    *out = a * b;
    return 0;
}

/* ---- fp16 / bf16 conversions (storage formats; compute is fp32 on the CPU) ---- */

static float pf__f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, mant = h & 0x3ff, bits;
    if (exp == 0) {
        if (mant == 0) {
            bits = sign;
        } else { /* subnormal: renormalise */
            exp = 127 - 15 + 1;
            while (!(mant & 0x400)) {
                mant <<= 1;
                exp--;
            }
            bits = sign | (exp << 23) | ((mant & 0x3ff) << 13);
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | (mant << 13);
    } else {
        bits = sign | ((exp - 15 + 127) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static float pf__bf16_to_f32(uint16_t b) {
    uint32_t bits = (uint32_t)b << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* Round to nearest even, as torch's .half() and .bfloat16() do. */
static uint16_t pf__f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000, abs = x & 0x7fffffff;
    if (abs >= 0x7f800000) return (uint16_t)(sign | 0x7c00 | (abs > 0x7f800000 ? 0x200 : 0)); /* inf, nan */
    if (abs >= 0x477ff000) return (uint16_t)(sign | 0x7c00);                                  /* overflow */
    if (abs < 0x38800000) { /* subnormal or zero in fp16: scale into integer units of 2^-24 */
        float a;
        memcpy(&a, &abs, 4);
        return (uint16_t)(sign | (uint32_t)lrintf(a * 16777216.0f));
    }
    uint32_t mant = abs + 0xfff + ((abs >> 13) & 1); /* round the 13 dropped bits to even */
    return (uint16_t)(sign | ((mant - 0x38000000) >> 13));
}

static uint16_t pf__f32_to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffff) > 0x7f800000) return (uint16_t)((x >> 16) | 0x40); /* quiet nan */
    return (uint16_t)((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

/* =============================================================================================== */
/* JSON                                                                                            */
/* =============================================================================================== */

typedef enum {
    PF__JSON_NULL,
    PF__JSON_BOOL,
    PF__JSON_NUMBER,
    PF__JSON_STRING,
    PF__JSON_ARRAY,
    PF__JSON_OBJECT
} pf__json_type;

typedef struct pf__json {
    pf__json_type type;
    int boolean;                           /* BOOL */
    double number;                         /* NUMBER */
    const char *string;                    /* STRING: decoded UTF-8, NUL-terminated */
    size_t string_len;
    const char *key;                       /* member of an OBJECT: decoded key, NUL-terminated */
    size_t key_len;
    struct pf__json *first, *next;         /* ARRAY/OBJECT: children in document order */
    size_t count;                          /* ARRAY/OBJECT: number of children */
} pf__json;

/* Nodes and decoded strings come from a chain of blocks freed together with the root. */
typedef struct pf__json_block {
    struct pf__json_block *next;
    size_t used, cap;
    /* data follows, aligned for pf__json */
} pf__json_block;

typedef struct pf__json_parser {
    const char *text, *at, *end;
    pf__json_block *blocks;
    char *err;
    size_t err_size;
    int depth;
} pf__json_parser;

#define PF__JSON_MAX_DEPTH 128

static void *pf__json_alloc(pf__json_parser *p, size_t size) {
    size = (size + 15) & ~(size_t)15;
    pf__json_block *b = p->blocks;
    if (!b || b->cap - b->used < size) {
        size_t cap = size > 65536 ? size : 65536;
        size_t header = (sizeof(pf__json_block) + 15) & ~(size_t)15;
        b = (pf__json_block *)malloc(header + cap);
        if (!b) return NULL;
        b->next = p->blocks;
        b->used = header;
        b->cap = header + cap;
        p->blocks = b;
    }
    void *ptr = (char *)b + b->used;
    b->used += size;
    return ptr;
}

static int pf__json_fail(pf__json_parser *p, const char *what) {
    if (p->err && p->err[0]) return -1; /* keep the first, innermost message */
    int line = 1, column = 1;
    for (const char *c = p->text; c < p->at && c < p->end; c++) {
        if (*c == '\n') {
            line++;
            column = 1;
        } else {
            column++;
        }
    }
    pf__format(p->err, p->err_size, PF_ERROR_FORMAT, "line %d, column %d: %s", line, column, what);
    return -1;
}

static void pf__json_skip_space(pf__json_parser *p) {
    while (p->at < p->end && (*p->at == ' ' || *p->at == '\t' || *p->at == '\n' || *p->at == '\r'))
        p->at++;
}

static int pf__json_hex4(const char *s, unsigned *out) {
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return -1;
    }
    *out = v;
    return 0;
}

static size_t pf__utf8_put(char *out, unsigned cp) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* Parses a string at p->at (on the opening quote) into arena memory. */
static int pf__json_string(pf__json_parser *p, const char **out, size_t *out_len) {
    p->at++; /* opening quote */
    const char *start = p->at;
    size_t raw = 0;
    while (start + raw < p->end && start[raw] != '"') {
        if (start[raw] == '\\') raw++;
        raw++;
    }
    if (start + raw >= p->end) return pf__json_fail(p, "unterminated string");
    char *dst = (char *)pf__json_alloc(p, raw + 1); /* decoding never grows the text */
    if (!dst) return pf__json_fail(p, "out of memory");
    size_t n = 0;
    while (*p->at != '"') {
        unsigned char c = (unsigned char)*p->at;
        if (c < 0x20) return pf__json_fail(p, "control character in string");
        if (c != '\\') {
            dst[n++] = (char)c;
            p->at++;
            continue;
        }
        p->at++;
        char e = *p->at++;
        switch (e) {
        case '"': dst[n++] = '"'; break;
        case '\\': dst[n++] = '\\'; break;
        case '/': dst[n++] = '/'; break;
        case 'b': dst[n++] = '\b'; break;
        case 'f': dst[n++] = '\f'; break;
        case 'n': dst[n++] = '\n'; break;
        case 'r': dst[n++] = '\r'; break;
        case 't': dst[n++] = '\t'; break;
        case 'u': {
            unsigned cp;
            if (p->end - p->at < 4 || pf__json_hex4(p->at, &cp))
                return pf__json_fail(p, "bad \\u escape");
            p->at += 4;
            if (cp >= 0xd800 && cp < 0xdc00) { /* high surrogate: needs its low half */
                unsigned low;
                if (p->end - p->at >= 6 && p->at[0] == '\\' && p->at[1] == 'u' &&
                    !pf__json_hex4(p->at + 2, &low) && low >= 0xdc00 && low < 0xe000) {
                    p->at += 6;
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
                } else {
                    cp = 0xfffd; /* lone surrogate, as Python's json would not round-trip it */
                }
            } else if (cp >= 0xdc00 && cp < 0xe000) {
                cp = 0xfffd;
            }
            n += pf__utf8_put(dst + n, cp);
            break;
        }
        default: return pf__json_fail(p, "bad escape in string");
        }
    }
    p->at++; /* closing quote */
    dst[n] = 0;
    *out = dst;
    *out_len = n;
    return 0;
}

static int pf__json_value(pf__json_parser *p, pf__json *v);

static int pf__json_container(pf__json_parser *p, pf__json *v, char close) {
    int object = close == '}';
    v->type = object ? PF__JSON_OBJECT : PF__JSON_ARRAY;
    if (++p->depth > PF__JSON_MAX_DEPTH) return pf__json_fail(p, "nesting too deep");
    p->at++;
    pf__json_skip_space(p);
    pf__json **tail = &v->first;
    if (p->at < p->end && *p->at == close) {
        p->at++;
        p->depth--;
        return 0;
    }
    for (;;) {
        pf__json *child = (pf__json *)pf__json_alloc(p, sizeof(pf__json));
        if (!child) return pf__json_fail(p, "out of memory");
        memset(child, 0, sizeof *child);
        pf__json_skip_space(p);
        if (object) {
            if (p->at >= p->end || *p->at != '"') return pf__json_fail(p, "expected a key");
            if (pf__json_string(p, &child->key, &child->key_len)) return -1;
            pf__json_skip_space(p);
            if (p->at >= p->end || *p->at != ':') return pf__json_fail(p, "expected ':'");
            p->at++;
        }
        if (pf__json_value(p, child)) return -1;
        *tail = child;
        tail = &child->next;
        v->count++;
        pf__json_skip_space(p);
        if (p->at < p->end && *p->at == ',') {
            p->at++;
            continue;
        }
        if (p->at < p->end && *p->at == close) {
            p->at++;
            p->depth--;
            return 0;
        }
        return pf__json_fail(p, object ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static int pf__json_literal(pf__json_parser *p, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(p->end - p->at) < n || memcmp(p->at, word, n) != 0)
        return pf__json_fail(p, "unexpected character");
    p->at += n;
    return 0;
}

static int pf__json_value(pf__json_parser *p, pf__json *v) {
    pf__json_skip_space(p);
    if (p->at >= p->end) return pf__json_fail(p, "unexpected end of input");
    char c = *p->at;
    if (c == '{') return pf__json_container(p, v, '}');
    if (c == '[') return pf__json_container(p, v, ']');
    if (c == '"') {
        v->type = PF__JSON_STRING;
        return pf__json_string(p, &v->string, &v->string_len);
    }
    if (c == 't' || c == 'f') {
        v->type = PF__JSON_BOOL;
        v->boolean = c == 't';
        return pf__json_literal(p, c == 't' ? "true" : "false");
    }
    if (c == 'n') {
        v->type = PF__JSON_NULL;
        return pf__json_literal(p, "null");
    }
    /* Numbers: the JSON grammar checked by hand, then strtod on a bounded copy. Python's json
       also writes NaN and Infinity; accept them since config files from HF can contain them. */
    const char *s = p->at;
    if (*s == 'N' || (*s == '-' && s + 1 < p->end && s[1] == 'I') || *s == 'I') {
        int negative = *s == '-';
        if (negative) p->at++;
        if (*p->at == 'N') {
            if (pf__json_literal(p, "NaN")) return -1;
            v->number = NAN;
        } else {
            if (pf__json_literal(p, "Infinity")) return -1;
            v->number = negative ? -INFINITY : INFINITY;
        }
        v->type = PF__JSON_NUMBER;
        return 0;
    }
    const char *q = s;
    if (q < p->end && *q == '-') q++;
    if (q >= p->end || *q < '0' || *q > '9') return pf__json_fail(p, "unexpected character");
    while (q < p->end && ((*q >= '0' && *q <= '9') || *q == '.' || *q == 'e' || *q == 'E' ||
                          *q == '+' || *q == '-'))
        q++;
    char buf[64];
    size_t n = (size_t)(q - s);
    if (n >= sizeof buf) return pf__json_fail(p, "number too long");
    memcpy(buf, s, n);
    buf[n] = 0;
    char *endp;
    v->number = strtod(buf, &endp);
    if (endp != buf + n) return pf__json_fail(p, "malformed number");
    v->type = PF__JSON_NUMBER;
    p->at = q;
    return 0;
}

static void pf__json_free(pf__json *root) {
    if (!root) return;
    /* The block chain hangs before the root node (see pf__json_parse). */
    pf__json_block *b = *((pf__json_block **)root - 2);
    while (b) {
        pf__json_block *next = b->next;
        free(b);
        b = next;
    }
}

static pf__json *pf__json_parse(const char *text, size_t len, char *err, size_t err_size) {
    pf__json_parser p;
    memset(&p, 0, sizeof p);
    p.text = p.at = text;
    p.end = text + len;
    p.err = err;
    p.err_size = err_size;
    if (err && err_size) err[0] = 0;
    /* Room before the root for a pointer to the block chain, so pf__json_free needs only root. */
    void **slot = (void **)pf__json_alloc(&p, 2 * sizeof(void *) + sizeof(pf__json));
    if (!slot) {
        pf__format(err, err_size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
        return NULL;
    }
    pf__json *root = (pf__json *)(slot + 2);
    memset(root, 0, sizeof *root);
    int failed = pf__json_value(&p, root);
    if (!failed) {
        pf__json_skip_space(&p);
        if (p.at != p.end) failed = pf__json_fail(&p, "trailing characters after the document");
    }
    slot[0] = p.blocks;
    if (failed) {
        pf__json_free(root);
        return NULL;
    }
    return root;
}

static const pf__json *pf__json_get(const pf__json *obj, const char *key) {
    if (!obj || obj->type != PF__JSON_OBJECT) return NULL;
    for (const pf__json *c = obj->first; c; c = c->next)
        if (strcmp(c->key, key) == 0) return c;
    return NULL;
}

/* Reads and parses a JSON file; on failure writes "FILE: what" into message. */
static pf_result pf__json_load(const char *path, pf__json **out, char *message, size_t size) {
    char *text;
    size_t len;
    *out = NULL;
    if (pf__read_file(path, &text, &len))
        return pf__format(message, size, PF_ERROR_IO, "%s: %s", path, strerror(errno));
    char err[256];
    *out = pf__json_parse(text, len, err, sizeof err);
    free(text);
    if (!*out) return pf__format(message, size, PF_ERROR_FORMAT, "%s: %s", path, err);
    return PF_OK;
}

/* =============================================================================================== */
/* safetensors (memory-mapped)                                                                     */
/* =============================================================================================== */

typedef enum { PF__DTYPE_F32, PF__DTYPE_F16, PF__DTYPE_BF16, PF__DTYPE_OTHER } pf__dtype;

#define PF__MAX_DIMS 8
/* A header larger than this is a lie or an attack; real checkpoints stay far below it. */
#define PF__MAX_HEADER (100u * 1024 * 1024)

typedef struct pf__file_map {
    char *path;
    const uint8_t *data; /* the whole file, mapped read-only */
    size_t size;
} pf__file_map;

typedef struct pf__st_tensor {
    const char *name;             /* points into the header JSON kept alive by the index */
    pf__dtype dtype;
    int ndim;
    size_t shape[PF__MAX_DIMS];
    size_t numel;
    const uint8_t *data;          /* inside the file map */
    size_t bytes;
    const pf__file_map *file;
} pf__st_tensor;

/* All tensors of a checkpoint (one file or shards), sorted by name. */
typedef struct pf__st_index {
    pf__file_map *files;
    int num_files;
    pf__json **headers;           /* one parsed header per file, owning the names */
    pf__st_tensor *tensors;
    size_t num_tensors;
} pf__st_index;

static size_t pf__dtype_size(pf__dtype t) { return t == PF__DTYPE_F32 ? 4 : 2; }

static pf_result pf__map_file(const char *path, pf__file_map *map, char *message, size_t size) {
    memset(map, 0, sizeof *map);
    int fd = open(path, O_RDONLY);
    if (fd < 0) return pf__format(message, size, PF_ERROR_IO, "%s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return pf__format(message, size, PF_ERROR_IO, "%s: not a regular file", path);
    }
    map->size = (size_t)st.st_size;
    if (map->size > 0) {
        void *p = mmap(NULL, map->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            close(fd);
            return pf__format(message, size, PF_ERROR_IO, "%s: mmap: %s", path, strerror(errno));
        }
        map->data = (const uint8_t *)p;
    }
    close(fd);
    map->path = strdup(path);
    if (!map->path) {
        if (map->data) munmap((void *)map->data, map->size);
        map->data = NULL;
        return pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    return PF_OK;
}

static void pf__unmap_file(pf__file_map *map) {
    if (map->data) munmap((void *)map->data, map->size);
    free(map->path);
    memset(map, 0, sizeof *map);
}

static int pf__tensor_cmp(const void *a, const void *b) {
    return strcmp(((const pf__st_tensor *)a)->name, ((const pf__st_tensor *)b)->name);
}

static int pf__tensor_offset_cmp(const void *a, const void *b) {
    const pf__st_tensor *x = *(const pf__st_tensor *const *)a, *y = *(const pf__st_tensor *const *)b;
    return x->data < y->data ? -1 : x->data > y->data;
}

/* Reads one file's header and appends its tensors, validating every field against the file:
   header length, JSON, dtype, shape, offsets inside the data section, size = dtype x shape,
   no two tensors overlapping. */
static pf_result pf__st_read_header(pf__st_index *index, int file_index, char *message, size_t size) {
    const pf__file_map *map = &index->files[file_index];
    const char *path = map->path;
    if (map->size < 8)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: too short for a safetensors header (%zu bytes)", path, map->size);
    uint64_t header_len = 0;
    for (int i = 7; i >= 0; i--) header_len = (header_len << 8) | map->data[i];
    if (header_len > map->size - 8 || header_len > PF__MAX_HEADER)
        return pf__format(message, size, PF_ERROR_FORMAT,
                          "%s: header length %llu runs past the end of the file (%zu bytes)", path,
                          (unsigned long long)header_len, map->size);
    char err[256];
    pf__json *header = pf__json_parse((const char *)map->data + 8, (size_t)header_len, err, sizeof err);
    if (!header) return pf__format(message, size, PF_ERROR_FORMAT, "%s: header JSON: %s", path, err);
    index->headers[file_index] = header;
    if (header->type != PF__JSON_OBJECT)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: header is not a JSON object", path);

    const uint8_t *data_start = map->data + 8 + header_len;
    size_t data_size = map->size - 8 - (size_t)header_len;
    pf__st_tensor *grown = (pf__st_tensor *)realloc(index->tensors, (index->num_tensors + header->count) * sizeof(pf__st_tensor));
    if (!grown) return pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    index->tensors = grown;
    size_t first = index->num_tensors;

    for (const pf__json *e = header->first; e; e = e->next) {
        if (strcmp(e->key, "__metadata__") == 0) continue;
        const char *name = e->key;
        const pf__json *dtype = pf__json_get(e, "dtype"), *shape = pf__json_get(e, "shape"),
                       *offsets = pf__json_get(e, "data_offsets");
        if (!dtype || dtype->type != PF__JSON_STRING || !shape || shape->type != PF__JSON_ARRAY ||
            !offsets || offsets->type != PF__JSON_ARRAY || offsets->count != 2)
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: tensor '%s' lacks dtype, shape or data_offsets", path, name);
        pf__st_tensor t;
        memset(&t, 0, sizeof t);
        t.name = name;
        t.file = map;
        if (strcmp(dtype->string, "F32") == 0) t.dtype = PF__DTYPE_F32;
        else if (strcmp(dtype->string, "F16") == 0) t.dtype = PF__DTYPE_F16;
        else if (strcmp(dtype->string, "BF16") == 0) t.dtype = PF__DTYPE_BF16;
        else t.dtype = PF__DTYPE_OTHER; /* fine unless the model needs it: checked at use */
        if (shape->count > PF__MAX_DIMS)
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: tensor '%s' has %zu dimensions", path, name, shape->count);
        t.numel = 1;
        for (const pf__json *d = shape->first; d; d = d->next) {
            if (d->type != PF__JSON_NUMBER || d->number < 0 || d->number != floor(d->number) || d->number > 1e15 ||
                pf__mul_size(t.numel, (size_t)d->number, &t.numel))
                return pf__format(message, size, PF_ERROR_FORMAT, "%s: tensor '%s' has a bad shape", path, name);
            t.shape[t.ndim++] = (size_t)d->number;
        }
        const pf__json *b = offsets->first, *en = b->next;
        if (b->type != PF__JSON_NUMBER || en->type != PF__JSON_NUMBER || b->number < 0 ||
            en->number < b->number || b->number != floor(b->number) || en->number != floor(en->number) ||
            en->number > (double)data_size)
            return pf__format(message, size, PF_ERROR_FORMAT,
                              "%s: tensor '%s' has data_offsets outside the data section (%zu bytes)", path, name, data_size);
        t.data = data_start + (size_t)b->number;
        t.bytes = (size_t)en->number - (size_t)b->number;
        if (t.dtype != PF__DTYPE_OTHER) {
            size_t expect = 0;
            if (pf__mul_size(t.numel, pf__dtype_size(t.dtype), &expect) || expect != t.bytes)
                return pf__format(message, size, PF_ERROR_FORMAT,
                                  "%s: tensor '%s' holds %zu bytes but %s x its shape needs %zu", path, name,
                                  t.bytes, dtype->string, expect);
        }
        index->tensors[index->num_tensors++] = t;
    }

    /* No overlap: sort this file's tensors by offset and compare neighbours. */
    size_t n = index->num_tensors - first;
    if (n > 1) {
        const pf__st_tensor **order = (const pf__st_tensor **)malloc(n * sizeof *order);
        if (!order) return pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
        for (size_t i = 0; i < n; i++) order[i] = &index->tensors[first + i];
        qsort(order, n, sizeof *order, pf__tensor_offset_cmp);
        for (size_t i = 1; i < n; i++) {
            if (order[i - 1]->data + order[i - 1]->bytes > order[i]->data) {
                pf_result r = pf__format(message, size, PF_ERROR_FORMAT, "%s: tensors '%s' and '%s' overlap",
                                         path, order[i - 1]->name, order[i]->name);
                free(order);
                return r;
            }
        }
        free(order);
    }
    return PF_OK;
}

static void pf__st_close(pf__st_index *index) {
    for (int i = 0; i < index->num_files; i++) {
        pf__unmap_file(&index->files[i]);
        if (index->headers) pf__json_free(index->headers[i]);
    }
    free(index->files);
    free(index->headers);
    free(index->tensors);
    memset(index, 0, sizeof *index);
}

static const pf__st_tensor *pf__st_find(const pf__st_index *index, const char *name) {
    pf__st_tensor key;
    key.name = name;
    return (const pf__st_tensor *)bsearch(&key, index->tensors, index->num_tensors, sizeof key, pf__tensor_cmp);
}

/* Opens model.safetensors, or the shards listed by model.safetensors.index.json. */
static pf_result pf__st_open(const char *dir, pf__st_index *index, char *message, size_t size) {
    memset(index, 0, sizeof *index);
    char path[PF__PATH_SIZE];
    const char **names = NULL; /* distinct shard file names */
    int num_names = 0;
    pf__json *json_index = NULL;
    pf_result r = PF_OK;
    const char *single = "model.safetensors";

    if (pf__path_join(path, sizeof path, dir, "model.safetensors.index.json"))
        return pf__format(message, size, PF_ERROR_INVALID_ARGUMENT, "path too long: %s", dir);
    if (pf__file_exists(path)) {
        if ((r = pf__json_load(path, &json_index, message, size))) return r;
        const pf__json *map = pf__json_get(json_index, "weight_map");
        if (!map || map->type != PF__JSON_OBJECT || map->count == 0) {
            r = pf__format(message, size, PF_ERROR_FORMAT, "%s: no weight_map object", path);
            goto done;
        }
        names = (const char **)calloc(map->count, sizeof *names);
        if (!names) {
            r = pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
            goto done;
        }
        for (const pf__json *e = map->first; e; e = e->next) {
            if (e->type != PF__JSON_STRING || strchr(e->string, '/') || strcmp(e->string, "..") == 0) {
                r = pf__format(message, size, PF_ERROR_FORMAT, "%s: bad file name for tensor '%s'", path, e->key);
                goto done;
            }
            int seen = 0;
            for (int i = 0; i < num_names && !seen; i++) seen = strcmp(names[i], e->string) == 0;
            if (!seen) names[num_names++] = e->string;
        }
    } else {
        names = &single;
        num_names = 1;
    }

    index->files = (pf__file_map *)calloc((size_t)num_names, sizeof *index->files);
    index->headers = (pf__json **)calloc((size_t)num_names, sizeof *index->headers);
    if (!index->files || !index->headers) {
        r = pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    for (int i = 0; i < num_names; i++) {
        if (pf__path_join(path, sizeof path, dir, names[i])) {
            r = pf__format(message, size, PF_ERROR_INVALID_ARGUMENT, "path too long: %s", dir);
            goto done;
        }
        if ((r = pf__map_file(path, &index->files[i], message, size))) goto done;
        index->num_files = i + 1;
        if ((r = pf__st_read_header(index, i, message, size))) goto done;
    }
    qsort(index->tensors, index->num_tensors, sizeof *index->tensors, pf__tensor_cmp);
    for (size_t i = 1; i < index->num_tensors; i++)
        if (strcmp(index->tensors[i - 1].name, index->tensors[i].name) == 0) {
            r = pf__format(message, size, PF_ERROR_FORMAT, "tensor '%s' appears twice (in %s and %s)",
                           index->tensors[i].name, index->tensors[i - 1].file->path, index->tensors[i].file->path);
            goto done;
        }
    /* A sharded index that names a tensor missing from its file is lying. */
    if (json_index) {
        const pf__json *map = pf__json_get(json_index, "weight_map");
        for (const pf__json *e = map->first; e; e = e->next) {
            const pf__st_tensor *t = pf__st_find(index, e->key);
            const char *base = t ? strrchr(t->file->path, '/') : NULL;
            if (!t || strcmp(base ? base + 1 : t->file->path, e->string) != 0) {
                r = pf__format(message, size, PF_ERROR_FORMAT, "model.safetensors.index.json names tensor '%s' in %s, which does not hold it",
                               e->key, e->string);
                goto done;
            }
        }
    }
done:
    if (names != &single) free(names);
    pf__json_free(json_index);
    if (r) pf__st_close(index);
    return r;
}


/* =============================================================================================== */
/* policies and config                                                                             */
/* =============================================================================================== */

/* The tensors the forward pass knows. Per-layer slots come after PF__SLOT_FIRST_LAYER. */
typedef enum {
    PF__SLOT_TOKEN_EMBED,      /* [vocab, hidden] */
    PF__SLOT_POSITION_EMBED,   /* [max_positions, hidden] */
    PF__SLOT_FINAL_NORM_WEIGHT,/* [hidden] */
    PF__SLOT_FINAL_NORM_BIAS,  /* [hidden] */
    PF__SLOT_LM_HEAD,          /* [vocab, hidden] */
    PF__SLOT_FIRST_LAYER,
    PF__SLOT_ATTN_NORM_WEIGHT = PF__SLOT_FIRST_LAYER, /* [hidden] */
    PF__SLOT_ATTN_NORM_BIAS,   /* [hidden] */
    PF__SLOT_QKV_WEIGHT,       /* [3 * hidden, hidden] (out, in) */
    PF__SLOT_QKV_BIAS,         /* [3 * hidden] */
    PF__SLOT_ATTN_OUT_WEIGHT,  /* [hidden, hidden] */
    PF__SLOT_ATTN_OUT_BIAS,    /* [hidden] */
    PF__SLOT_MLP_NORM_WEIGHT,  /* [hidden] */
    PF__SLOT_MLP_NORM_BIAS,    /* [hidden] */
    PF__SLOT_MLP_UP_WEIGHT,    /* [intermediate, hidden] */
    PF__SLOT_MLP_UP_BIAS,      /* [intermediate] */
    PF__SLOT_MLP_DOWN_WEIGHT,  /* [hidden, intermediate] */
    PF__SLOT_MLP_DOWN_BIAS,    /* [hidden] */
    PF__SLOT_COUNT
} pf__slot;

#define PF__LAYER_SLOTS (PF__SLOT_COUNT - PF__SLOT_FIRST_LAYER)

typedef enum { PF__LAYOUT_OUT_IN, PF__LAYOUT_IN_OUT, PF__LAYOUT_VECTOR } pf__layout;

typedef enum {
    PF__SPLIT_NONE,
    PF__SPLIT_QKV_COLUMNS,
    PF__SPLIT_HEAD_COLUMNS,
    PF__SPLIT_MLP_COLUMNS,
    PF__SPLIT_HEAD_ROWS,
    PF__SPLIT_MLP_ROWS
} pf__split;

typedef enum { PF__OPTIONAL, PF__REQUIRED } pf__need;
typedef enum { PF__NORM_LAYER_NORM } pf__norm;
typedef enum { PF__ACT_GELU_TANH, PF__ACT_GELU_ERF, PF__ACT_RELU, PF__ACT_SILU } pf__activation;

#define PF__NEEDED (-1e300)

typedef enum {
#define PF_ARCH(id, ...) PF__ARCH_##id,
#include "policies.inc"
    PF__ARCH_COUNT
} pf__arch_id;

typedef struct pf__arch {
    const char *model_type;
    pf__norm norm;
    int mlp_ratio;
    const char *activation_key, *activation_default;
    int tied_lm_head;
} pf__arch;

static const pf__arch pf__archs[PF__ARCH_COUNT] = {
#define PF_ARCH(id, model_type, norm, mlp_ratio, activation_key, activation_default, tied)         \
    {model_type, norm, mlp_ratio, activation_key, activation_default, tied},
#include "policies.inc"
};

typedef struct pf__arch_prefix { pf__arch_id arch; const char *prefix; } pf__arch_prefix;
static const pf__arch_prefix pf__arch_prefixes[] = {
#define PF_ARCH_PREFIX(id, prefix) {PF__ARCH_##id, prefix},
#include "policies.inc"
};

typedef struct pf__arch_tensor {
    pf__arch_id arch;
    pf__slot slot;
    const char *pattern;
    pf__layout layout;
    pf__split split;
    pf__need need;
} pf__arch_tensor;
static const pf__arch_tensor pf__arch_tensors[] = {
#define PF_ARCH_TENSOR(id, slot, pattern, layout, split, need) {PF__ARCH_##id, slot, pattern, layout, split, need},
#include "policies.inc"
};

/* Hyperparameters, whatever the config.json keys are called. */
typedef struct pf__config {
    pf__arch_id arch;
    int hidden_size, num_heads, num_layers, vocab_size, max_positions, intermediate_size;
    int head_dim;
    double norm_eps;
    int scale_attn_weights, scale_attn_by_inverse_layer_idx;
    int eos_token_id;
    pf__activation activation;
} pf__config;

typedef struct pf__arch_config {
    pf__arch_id arch;
    size_t offset;  /* of the field in pf__config */
    int is_double;
    const char *key;
    double fallback;
} pf__arch_config;
#define PF__FIELD_IS_DOUBLE(field) (sizeof(((pf__config *)0)->field) == sizeof(double))
static const pf__arch_config pf__arch_configs[] = {
#define PF_ARCH_CONFIG(id, field, key, fallback)                                                   \
    {PF__ARCH_##id, offsetof(pf__config, field), PF__FIELD_IS_DOUBLE(field), key, fallback},
#include "policies.inc"
};

#define PF__COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const pf__arch_tensor *pf__arch_tensor_for(pf__arch_id arch, pf__slot slot) {
    for (size_t i = 0; i < PF__COUNT(pf__arch_tensors); i++)
        if (pf__arch_tensors[i].arch == arch && pf__arch_tensors[i].slot == slot) return &pf__arch_tensors[i];
    return NULL;
}

/* HF activation names (transformers' ACT2FN) to the function we compute. */
static int pf__activation_from_name(const char *name, pf__activation *out) {
    static const struct { const char *name; pf__activation act; } names[] = {
        {"gelu_new", PF__ACT_GELU_TANH}, {"gelu_pytorch_tanh", PF__ACT_GELU_TANH},
        {"gelu_fast", PF__ACT_GELU_TANH}, {"gelu", PF__ACT_GELU_ERF},
        {"relu", PF__ACT_RELU}, {"silu", PF__ACT_SILU}, {"swish", PF__ACT_SILU},
    };
    for (size_t i = 0; i < PF__COUNT(names); i++)
        if (strcmp(names[i].name, name) == 0) {
            *out = names[i].act;
            return 0;
        }
    return -1;
}

/* Reads config.json into cfg, choosing the architecture row by model_type. */
static pf_result pf__config_read(const char *dir, pf__config *cfg, char *message, size_t size) {
    char path[PF__PATH_SIZE];
    pf__json *json;
    memset(cfg, 0, sizeof *cfg);
    if (pf__path_join(path, sizeof path, dir, "config.json"))
        return pf__format(message, size, PF_ERROR_INVALID_ARGUMENT, "path too long: %s", dir);
    pf_result r = pf__json_load(path, &json, message, size);
    if (r) return r;
    const pf__json *type = pf__json_get(json, "model_type");
    if (!type || type->type != PF__JSON_STRING) {
        pf__json_free(json);
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: no \"model_type\" string", path);
    }
    int arch = -1;
    for (int a = 0; a < PF__ARCH_COUNT; a++)
        if (strcmp(pf__archs[a].model_type, type->string) == 0) arch = a;
    if (arch < 0) {
        char supported[256] = "";
        for (int a = 0; a < PF__ARCH_COUNT; a++) {
            size_t used = strlen(supported);
            snprintf(supported + used, sizeof supported - used, "%s%s", a ? ", " : "", pf__archs[a].model_type);
        }
        r = pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: model_type \"%s\" is not supported (supported: %s)",
                       path, type->string, supported);
        pf__json_free(json);
        return r;
    }
    cfg->arch = (pf__arch_id)arch;
    const pf__arch *a = &pf__archs[arch];

    /* Each field: the first alias present wins; later rows for the same field are aliases. */
    unsigned char done[sizeof(pf__config)] = {0};
    for (size_t i = 0; i < PF__COUNT(pf__arch_configs); i++) {
        const pf__arch_config *c = &pf__arch_configs[i];
        if (c->arch != cfg->arch || done[c->offset]) continue;
        int last_alias = 1;
        for (size_t j = i + 1; j < PF__COUNT(pf__arch_configs); j++)
            if (pf__arch_configs[j].arch == cfg->arch && pf__arch_configs[j].offset == c->offset) last_alias = 0;
        const pf__json *v = pf__json_get(json, c->key);
        double value;
        if (v && v->type == PF__JSON_NUMBER) value = v->number;
        else if (v && v->type == PF__JSON_BOOL) value = v->boolean;
        else if (v && v->type == PF__JSON_ARRAY && v->count && v->first->type == PF__JSON_NUMBER)
            value = v->first->number; /* e.g. several eos ids: the first one stops generation here */
        else if (v && v->type != PF__JSON_NULL) {
            r = pf__format(message, size, PF_ERROR_FORMAT, "%s: \"%s\" is not a number", path, c->key);
            break;
        } else if (!last_alias) {
            continue;
        } else if (c->fallback == PF__NEEDED) {
            r = pf__format(message, size, PF_ERROR_FORMAT, "%s: \"%s\" is missing", path, c->key);
            break;
        } else {
            value = c->fallback;
        }
        done[c->offset] = 1;
        if (c->is_double) {
            *(double *)((char *)cfg + c->offset) = value;
        } else {
            if (!(value >= -1 && value <= 1e9) || value != floor(value)) {
                r = pf__format(message, size, PF_ERROR_FORMAT, "%s: \"%s\" = %g is not a sane integer", path, c->key, value);
                break;
            }
            *(int *)((char *)cfg + c->offset) = (int)value;
        }
    }
    if (!r) {
        const pf__json *act = pf__json_get(json, a->activation_key);
        const char *act_name = act && act->type == PF__JSON_STRING ? act->string : a->activation_default;
        if (pf__activation_from_name(act_name, &cfg->activation))
            r = pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: activation \"%s\" is not supported", path, act_name);
    }
    pf__json_free(json);
    if (r) return r;

    if (cfg->intermediate_size == 0) cfg->intermediate_size = a->mlp_ratio * cfg->hidden_size;
    if (cfg->hidden_size <= 0 || cfg->num_heads <= 0 || cfg->num_layers <= 0 || cfg->vocab_size <= 0 ||
        cfg->max_positions <= 0 || cfg->intermediate_size <= 0 || cfg->hidden_size % cfg->num_heads)
        return pf__format(message, size, PF_ERROR_FORMAT,
                          "%s: inconsistent sizes (hidden %d, heads %d, layers %d, vocab %d, positions %d, intermediate %d)",
                          path, cfg->hidden_size, cfg->num_heads, cfg->num_layers, cfg->vocab_size,
                          cfg->max_positions, cfg->intermediate_size);
    if (!(cfg->norm_eps > 0 && cfg->norm_eps < 1))
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: norm epsilon %g is not in (0, 1)", path, cfg->norm_eps);
    cfg->head_dim = cfg->hidden_size / cfg->num_heads;
    return PF_OK;
}

/* Logical [rows (out), cols (in)] of a slot; cols 1 for vectors. */
static void pf__slot_shape(const pf__config *c, pf__slot slot, size_t *rows, size_t *cols) {
    size_t h = (size_t)c->hidden_size, in = (size_t)c->intermediate_size;
    *cols = 1;
    switch (slot) {
    case PF__SLOT_TOKEN_EMBED: case PF__SLOT_LM_HEAD: *rows = (size_t)c->vocab_size; *cols = h; break;
    case PF__SLOT_POSITION_EMBED: *rows = (size_t)c->max_positions; *cols = h; break;
    case PF__SLOT_QKV_WEIGHT: *rows = 3 * h; *cols = h; break;
    case PF__SLOT_QKV_BIAS: *rows = 3 * h; break;
    case PF__SLOT_ATTN_OUT_WEIGHT: *rows = h; *cols = h; break;
    case PF__SLOT_MLP_UP_WEIGHT: *rows = in; *cols = h; break;
    case PF__SLOT_MLP_UP_BIAS: *rows = in; break;
    case PF__SLOT_MLP_DOWN_WEIGHT: *rows = h; *cols = in; break;
    default: *rows = h; break; /* norms and the remaining biases */
    }
}

/* =============================================================================================== */
/* tokenizer                                                                                       */
/* =============================================================================================== */

#include "tokenizer.part.c"

/* =============================================================================================== */
/* backends: the operation table and the CPU backend                                               */
/* =============================================================================================== */

typedef struct pf__rank pf__rank;
typedef struct pf__group pf__group;

/* A weight on a rank's device, logical [rows (out), cols (in)] row-major; vectors have cols 1. */
typedef struct pf__weight {
    void *data; /* NULL when the slot is absent or the slice is empty */
    pf__dtype dtype;
    size_t rows, cols;
} pf__weight;

/* What one forward call computes, the same on every rank. */
typedef struct pf__step {
    const int32_t *ids; /* host, [batch][seq_len] */
    int batch, seq_len;
    int past;           /* tokens already in the KV cache of each sequence */
} pf__step;

/* Operations a backend provides. All run on the rank's own thread, in order; activations are
   fp32 [tokens][features] row-major; an op never fails on its own except alloc (a backend whose
   calls can fail records it with pf__rank_fail). */
typedef struct pf__backend {
    const char *name;
    int host_memory; /* allocations are host memory the loader may write directly */
    /* Before the rank threads start / after they stopped, on the caller's thread (e.g. NCCL
       communicators for all ranks at once); NULL when there is nothing to do. */
    pf_result (*group_begin)(pf__group *g, char *message, size_t size);
    void (*group_end)(pf__group *g);
    /* First thing on the rank's thread (e.g. cudaSetDevice), and last. */
    int (*rank_begin)(pf__rank *r);
    void (*rank_end)(pf__rank *r);
    void *(*alloc)(pf__rank *r, size_t bytes);
    void (*free)(pf__rank *r, void *ptr);
    void (*upload)(pf__rank *r, void *dst, const void *host, size_t bytes);
    void (*download)(pf__rank *r, void *host, const void *src, size_t bytes);
    /* out[b*T+t] = tokens[ids[b][t]] + positions[past + t] */
    void (*embed)(pf__rank *r, float *out, const pf__weight *tokens, const pf__weight *positions, const pf__step *s);
    /* out = (x - mean) / sqrt(var + eps) * weight + bias, per row of n */
    void (*layer_norm)(pf__rank *r, float *out, const float *x, const pf__weight *weight, const pf__weight *bias,
                       size_t rows, size_t n, float eps);
    /* out[rows][w.rows] = x[rows][w.cols] w^T (+ bias) */
    void (*matmul)(pf__rank *r, float *out, const float *x, const pf__weight *w, const pf__weight *bias, size_t rows);
    /* x = act(x) */
    void (*activation)(pf__rank *r, float *x, size_t count, pf__activation act);
    /* x[rows][n] += y + bias */
    void (*add_residual)(pf__rank *r, float *x, const float *y, const pf__weight *bias, size_t rows, size_t n);
    /* Appends this step's k, v to the cache [batch][cache_len][heads*head_dim] and writes
       out[b*T+t] = softmax(q k^T * scale) v over positions 0..past+t, for each local head.
       qkv rows are [q | k | v], each heads*head_dim wide. */
    void (*attention)(pf__rank *r, float *out, const float *qkv, float *k_cache, float *v_cache,
                      const pf__step *s, int heads, int head_dim, int cache_len, float scale);
    /* x = sum of x over all ranks, identical on every rank afterwards */
    void (*all_reduce)(pf__rank *r, float *x, size_t count);
} pf__backend;

/* A share of the split dimensions held by one rank. */
typedef struct pf__share {
    int head_begin, heads;
    int mlp_begin, mlp_width;
} pf__share;

typedef struct pf__allocation {
    void *ptr;
    size_t bytes;
} pf__allocation;

typedef enum { PF__MEM_WEIGHTS, PF__MEM_CACHE, PF__MEM_SCRATCH, PF__MEM_KINDS } pf__mem_kind;

struct pf__rank {
    pf__group *group;
    int index;
    const pf__backend *backend;
    void *backend_state;
    int device;               /* the backend's device ordinal */
    pthread_t thread;
    pf__share share;
    pf__weight *weights;      /* [pf__num_slots(config)] */
    float *k_cache, *v_cache; /* [layers][max_batch][cache_len][heads * head_dim] */
    /* scratch, [max_tokens][width] */
    float *x, *h, *part;      /* width hidden */
    float *qkv;               /* width 3 * heads * head_dim */
    float *attn;              /* width heads * head_dim */
    float *mlp;               /* width mlp_width */
    float *logits;            /* rank 0 only: [logit_rows][vocab] */
    float *scores;            /* CPU attention: [cache_len] */
    float *reduce_tmp;        /* CPU all-reduce: [max_tokens * hidden] */
    pf__allocation *allocations;
    size_t num_allocations, allocations_cap;
    size_t bytes[PF__MEM_KINDS];
    pf__mem_kind allocating;  /* the kind new allocations count under */
    pf_result error;
    char message[PF__MESSAGE_SIZE];
};

/* Records the rank's first failure and wakes every rank waiting in a barrier, so none hangs. */
static void pf__group_abort(pf__group *g);
static void pf__rank_fail(pf__rank *r, pf_result code, const char *fmt, ...) {
    if (!r->error) {
        va_list args;
        va_start(args, fmt);
        vsnprintf(r->message, sizeof r->message, fmt, args);
        va_end(args);
        r->error = code;
    }
    pf__group_abort(r->group);
}

#ifdef PF_TESTING
/* Test hook: rank pf_testing_fail_rank fails its pf_testing_fail_countdown-th matmul. */
int pf_testing_fail_rank = -1, pf_testing_fail_countdown = 0;
#endif

/* ---- CPU backend ---- */

static int pf__cpu_rank_begin(pf__rank *r) { (void)r; return 0; }
static void pf__cpu_rank_end(pf__rank *r) { (void)r; }
static void *pf__cpu_alloc(pf__rank *r, size_t bytes) { (void)r; return malloc(bytes); }
static void pf__cpu_free(pf__rank *r, void *ptr) { (void)r; free(ptr); }
static void pf__cpu_copy(pf__rank *r, void *dst, const void *src, size_t bytes) {
    (void)r;
    if (bytes) memcpy(dst, src, bytes);
}

static void pf__cpu_embed(pf__rank *r, float *out, const pf__weight *tokens, const pf__weight *positions,
                          const pf__step *s) {
    (void)r;
    size_t d = tokens->cols;
    const float *tok = (const float *)tokens->data, *pos = (const float *)positions->data;
    for (int b = 0; b < s->batch; b++)
        for (int t = 0; t < s->seq_len; t++) {
            size_t row = (size_t)b * s->seq_len + t;
            const float *e = tok + (size_t)s->ids[row] * d, *p = pos + (size_t)(s->past + t) * d;
            for (size_t i = 0; i < d; i++) out[row * d + i] = e[i] + p[i];
        }
}

static void pf__cpu_layer_norm(pf__rank *r, float *out, const float *x, const pf__weight *weight,
                               const pf__weight *bias, size_t rows, size_t n, float eps) {
    (void)r;
    const float *g = (const float *)weight->data, *b = bias ? (const float *)bias->data : NULL;
    for (size_t row = 0; row < rows; row++) {
        const float *xr = x + row * n;
        double mean = 0, var = 0;
        for (size_t i = 0; i < n; i++) mean += xr[i];
        mean /= (double)n;
        for (size_t i = 0; i < n; i++) var += (xr[i] - mean) * (xr[i] - mean);
        var /= (double)n;
        float inv = (float)(1.0 / sqrt(var + eps));
        for (size_t i = 0; i < n; i++)
            out[row * n + i] = (float)(xr[i] - mean) * inv * g[i] + (b ? b[i] : 0.0f);
    }
}

/* Dot product with eight independent sums, so the compiler can vectorise it without -ffast-math. */
static float pf__dot(const float *a, const float *b, size_t n) {
    float s[8] = {0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) s[k] += a[i + k] * b[i + k];
    float sum = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
    for (; i < n; i++) sum += a[i] * b[i];
    return sum;
}

static void pf__cpu_matmul(pf__rank *r, float *out, const float *x, const pf__weight *w, const pf__weight *bias,
                           size_t rows) {
#ifdef PF_TESTING
    if (r->index == pf_testing_fail_rank && --pf_testing_fail_countdown == 0) {
        pf__rank_fail(r, PF_ERROR_DEVICE, "injected failure (test)");
        return;
    }
#else
    (void)r;
#endif
    const float *W = (const float *)w->data, *bv = bias ? (const float *)bias->data : NULL;
    size_t n_out = w->rows, k = w->cols;
    /* Four rows of x at a time share each weight row while it is in cache. */
    size_t row = 0;
    for (; row + 4 <= rows; row += 4)
        for (size_t o = 0; o < n_out; o++) {
            const float *wr = W + o * k;
            float b0 = bv ? bv[o] : 0.0f;
            for (int j = 0; j < 4; j++) out[(row + j) * n_out + o] = pf__dot(x + (row + j) * k, wr, k) + b0;
        }
    for (; row < rows; row++)
        for (size_t o = 0; o < n_out; o++)
            out[row * n_out + o] = pf__dot(x + row * k, W + o * k, k) + (bv ? bv[o] : 0.0f);
}

static void pf__cpu_activation(pf__rank *r, float *x, size_t count, pf__activation act) {
    (void)r;
    for (size_t i = 0; i < count; i++) {
        float v = x[i];
        switch (act) {
        case PF__ACT_GELU_TANH:
            x[i] = 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
            break;
        case PF__ACT_GELU_ERF: x[i] = 0.5f * v * (1.0f + erff(v * 0.7071067811865476f)); break;
        case PF__ACT_RELU: x[i] = v > 0 ? v : 0; break;
        case PF__ACT_SILU: x[i] = v / (1.0f + expf(-v)); break;
        }
    }
}

static void pf__cpu_add_residual(pf__rank *r, float *x, const float *y, const pf__weight *bias, size_t rows,
                                 size_t n) {
    (void)r;
    const float *b = bias ? (const float *)bias->data : NULL;
    for (size_t row = 0; row < rows; row++)
        for (size_t i = 0; i < n; i++) x[row * n + i] += y[row * n + i] + (b ? b[i] : 0.0f);
}

static void pf__cpu_attention(pf__rank *r, float *out, const float *qkv, float *k_cache, float *v_cache,
                              const pf__step *s, int heads, int head_dim, int cache_len, float scale) {
    size_t width = (size_t)heads * head_dim, T = (size_t)s->seq_len;
    if (!width) return;
    for (int b = 0; b < s->batch; b++) {
        float *kc = k_cache + (size_t)b * cache_len * width, *vc = v_cache + (size_t)b * cache_len * width;
        for (size_t t = 0; t < T; t++) {
            const float *row = qkv + ((size_t)b * T + t) * 3 * width;
            memcpy(kc + (s->past + t) * width, row + width, width * sizeof(float));
            memcpy(vc + (s->past + t) * width, row + 2 * width, width * sizeof(float));
        }
        for (size_t t = 0; t < T; t++) {
            size_t len = (size_t)s->past + t + 1; /* causal: keys 0..past+t */
            const float *q_row = qkv + ((size_t)b * T + t) * 3 * width;
            float *o_row = out + ((size_t)b * T + t) * width;
            for (int h = 0; h < heads; h++) {
                const float *q = q_row + (size_t)h * head_dim;
                float max = -INFINITY;
                for (size_t j = 0; j < len; j++) {
                    r->scores[j] = pf__dot(q, kc + j * width + (size_t)h * head_dim, (size_t)head_dim) * scale;
                    if (r->scores[j] > max) max = r->scores[j];
                }
                double sum = 0;
                for (size_t j = 0; j < len; j++) {
                    r->scores[j] = expf(r->scores[j] - max);
                    sum += r->scores[j];
                }
                float *o = o_row + (size_t)h * head_dim;
                for (int i = 0; i < head_dim; i++) o[i] = 0;
                for (size_t j = 0; j < len; j++) {
                    float p = (float)(r->scores[j] / sum);
                    const float *v = vc + j * width + (size_t)h * head_dim;
                    for (int i = 0; i < head_dim; i++) o[i] += p * v[i];
                }
            }
        }
    }
}

static int pf__barrier(pf__group *g);
static void pf__cpu_all_reduce(pf__rank *r, float *x, size_t count);

static const pf__backend pf__cpu_backend = {
    "cpu", 1, NULL, NULL, pf__cpu_rank_begin, pf__cpu_rank_end, pf__cpu_alloc, pf__cpu_free, pf__cpu_copy, pf__cpu_copy,
    pf__cpu_embed, pf__cpu_layer_norm, pf__cpu_matmul, pf__cpu_activation, pf__cpu_add_residual,
    pf__cpu_attention, pf__cpu_all_reduce,
};

/* =============================================================================================== */
/* rank threads, barrier and all-reduce                                                            */
/* =============================================================================================== */

typedef enum { PF__JOB_SETUP, PF__JOB_FORWARD, PF__JOB_GATHER, PF__JOB_QUIT } pf__job_kind;

typedef struct pf__job {
    pf__job_kind kind;
    pf__step step;        /* FORWARD */
    float *logits;        /* FORWARD: host, rank 0 writes [batch][seq_len or 1][vocab] */
    int all_positions;    /* FORWARD: logits of every position, else of each sequence's last */
} pf__job;

/* A weight source: a tensor in the memory map, or (after pf_to_cpu gathered them) a host array. */
typedef struct pf__source {
    const uint8_t *data; /* NULL: absent */
    pf__dtype dtype;
    pf__layout layout;
    pf__split split;
    size_t rows, cols;   /* logical [out, in] */
} pf__source;

struct pf__group {
    pf_model *model;
    const pf__backend *backend;
    void *backend_state;
    pf__dtype dtype;      /* weight storage on every rank */
    int num_ranks;
    pf__rank *ranks;
    int threads_started;
    pthread_mutex_t mutex;
    pthread_cond_t work, done, barrier_cond;
    uint64_t job_seq;
    int jobs_done;
    pf__job job;
    /* barrier */
    int barrier_count;
    uint64_t barrier_generation;
    int aborted;
    /* CPU all-reduce: each rank publishes its buffer here */
    float **reduce_in;
    /* sizes every rank shares */
    int max_batch, cache_len;
    size_t max_tokens, logit_rows;
    float **gather;      /* PF__JOB_GATHER: host arrays, one per slot, filled by the ranks */
};

struct pf_model {
    char message[PF__MESSAGE_SIZE];
    char *dir;
    pf_load_options load_options;
    int loaded;
    pf__config config;
    pf__st_index st;
    pf__source *sources;  /* [pf__num_slots] */
    pf_tokenizer *tokenizer;
    pf__group *group;
    pf_parallel_options parallel_options;
    float *logits;        /* host: [max_batch][vocab], the last positions' logits */
};

static size_t pf__num_slots(const pf__config *c) {
    return PF__SLOT_FIRST_LAYER + (size_t)c->num_layers * PF__LAYER_SLOTS;
}

static size_t pf__slot_index(pf__slot slot, int layer) {
    return slot < PF__SLOT_FIRST_LAYER ? (size_t)slot
                                       : PF__SLOT_FIRST_LAYER + (size_t)layer * PF__LAYER_SLOTS + (slot - PF__SLOT_FIRST_LAYER);
}

static void pf__group_abort(pf__group *g) {
    pthread_mutex_lock(&g->mutex);
    g->aborted = 1;
    pthread_cond_broadcast(&g->barrier_cond);
    pthread_mutex_unlock(&g->mutex);
}

/* Waits for every rank; returns -1 (at once, and for every waiter) if any rank failed. */
static int pf__barrier(pf__group *g) {
    pthread_mutex_lock(&g->mutex);
    int failed = g->aborted;
    if (!failed) {
        uint64_t generation = g->barrier_generation;
        if (++g->barrier_count == g->num_ranks) {
            g->barrier_count = 0;
            g->barrier_generation++;
            pthread_cond_broadcast(&g->barrier_cond);
        } else {
            while (generation == g->barrier_generation && !g->aborted) pthread_cond_wait(&g->barrier_cond, &g->mutex);
        }
        failed = g->aborted;
    }
    pthread_mutex_unlock(&g->mutex);
    return failed ? -1 : 0;
}

/* Every rank publishes its buffer, then sums all of them in rank order into its scratch, so the
   result is bit-identical on every rank; a second barrier keeps the buffers alive until all have
   read them. */
static void pf__cpu_all_reduce(pf__rank *r, float *x, size_t count) {
    pf__group *g = r->group;
    if (g->num_ranks == 1) return;
    g->reduce_in[r->index] = x;
    if (pf__barrier(g)) return;
    float *sum = r->reduce_tmp;
    memcpy(sum, g->reduce_in[0], count * sizeof(float));
    for (int k = 1; k < g->num_ranks; k++) {
        const float *in = g->reduce_in[k];
        for (size_t i = 0; i < count; i++) sum[i] += in[i];
    }
    if (pf__barrier(g)) return;
    memcpy(x, sum, count * sizeof(float));
}

static int pf__rank_failed(pf__rank *r) {
    if (r->error) return 1;
    pthread_mutex_lock(&r->group->mutex);
    int aborted = r->group->aborted;
    pthread_mutex_unlock(&r->group->mutex);
    return aborted;
}

/* Allocations go through here so that pf_memory_allocated is exact. Zero bytes give NULL. */
static void *pf__rank_alloc(pf__rank *r, size_t bytes) {
    if (!bytes || r->error) return NULL;
    if (r->num_allocations == r->allocations_cap) {
        size_t cap = r->allocations_cap ? 2 * r->allocations_cap : 64;
        pf__allocation *grown = (pf__allocation *)realloc(r->allocations, cap * sizeof *grown);
        if (!grown) {
            pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory");
            return NULL;
        }
        r->allocations = grown;
        r->allocations_cap = cap;
    }
    void *ptr = r->backend->alloc(r, bytes);
    if (!ptr) {
        pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "%s: cannot allocate %zu bytes", r->backend->name, bytes);
        return NULL;
    }
    r->allocations[r->num_allocations].ptr = ptr;
    r->allocations[r->num_allocations].bytes = bytes;
    r->num_allocations++;
    r->bytes[r->allocating] += bytes;
    return ptr;
}

static void pf__rank_free_all(pf__rank *r) {
    for (size_t i = 0; i < r->num_allocations; i++) r->backend->free(r, r->allocations[i].ptr);
    free(r->allocations);
    free(r->weights);
    r->allocations = NULL;
    r->weights = NULL;
    r->num_allocations = r->allocations_cap = 0;
    memset(r->bytes, 0, sizeof r->bytes);
}

static void pf__rank_setup(pf__rank *r);
static void pf__rank_forward(pf__rank *r, const pf__job *job);
static void pf__rank_gather(pf__rank *r);

static void *pf__rank_main(void *arg) {
    pf__rank *r = (pf__rank *)arg;
    pf__group *g = r->group;
    uint64_t seen = 0;
    int began = r->backend->rank_begin(r) == 0; /* e.g. cudaSetDevice: before anything else */
    for (;;) {
        pthread_mutex_lock(&g->mutex);
        while (g->job_seq == seen) pthread_cond_wait(&g->work, &g->mutex);
        seen = g->job_seq;
        pf__job job = g->job;
        pthread_mutex_unlock(&g->mutex);
        if (job.kind == PF__JOB_QUIT) break;
        if (!began) pf__rank_fail(r, PF_ERROR_DEVICE, "%s: cannot start rank %d", r->backend->name, r->index);
        else if (job.kind == PF__JOB_SETUP) pf__rank_setup(r);
        else if (job.kind == PF__JOB_FORWARD) pf__rank_forward(r, &job);
        else if (job.kind == PF__JOB_GATHER) pf__rank_gather(r);
        pthread_mutex_lock(&g->mutex);
        if (++g->jobs_done == g->num_ranks) pthread_cond_signal(&g->done);
        pthread_mutex_unlock(&g->mutex);
    }
    pf__rank_free_all(r);
    if (began) r->backend->rank_end(r);
    return NULL;
}

/* Hands a job to every rank and waits for all of them; the first rank error becomes the
   model's message. */
static pf_result pf__group_run(pf__group *g, pf__job_kind kind, const pf__job *job) {
    pthread_mutex_lock(&g->mutex);
    if (job) g->job = *job;
    g->job.kind = kind;
    g->jobs_done = 0;
    g->aborted = 0;
    g->barrier_count = 0;
    for (int i = 0; i < g->num_ranks; i++) g->ranks[i].error = PF_OK;
    g->job_seq++;
    pthread_cond_broadcast(&g->work);
    while (g->jobs_done < g->threads_started) pthread_cond_wait(&g->done, &g->mutex);
    pthread_mutex_unlock(&g->mutex);
    for (int i = 0; i < g->num_ranks; i++) {
        pf__rank *r = &g->ranks[i];
        if (r->error)
            return pf__format(g->model->message, sizeof g->model->message, r->error, "rank %d (%s): %s", i,
                              r->backend->name, r->message);
    }
    return PF_OK;
}

static void pf__group_destroy(pf__group *g) {
    if (!g) return;
    if (g->threads_started) {
        pthread_mutex_lock(&g->mutex);
        g->job.kind = PF__JOB_QUIT;
        g->job_seq++;
        pthread_cond_broadcast(&g->work);
        pthread_mutex_unlock(&g->mutex);
        for (int i = 0; i < g->threads_started; i++) pthread_join(g->ranks[i].thread, NULL);
    }
    if (g->backend && g->backend->group_end) g->backend->group_end(g);
    pthread_mutex_destroy(&g->mutex);
    pthread_cond_destroy(&g->work);
    pthread_cond_destroy(&g->done);
    pthread_cond_destroy(&g->barrier_cond);
    free(g->ranks);
    free(g->reduce_in);
    free(g);
}

/* The heads and MLP columns of rank r of n: contiguous, as even as the sizes allow. */
static pf__share pf__share_for(const pf__config *c, int r, int n) {
    pf__share s;
    s.head_begin = (int)((long long)r * c->num_heads / n);
    s.heads = (int)((long long)(r + 1) * c->num_heads / n) - s.head_begin;
    s.mlp_begin = (int)((long long)r * c->intermediate_size / n);
    s.mlp_width = (int)((long long)(r + 1) * c->intermediate_size / n) - s.mlp_begin;
    return s;
}

/* =============================================================================================== */
/* slicing weights onto ranks                                                                      */
/* =============================================================================================== */

/* Which part of a logical [rows, cols] tensor a rank holds: up to three row segments (fused
   q|k|v), stacked in order, and one column range. */
typedef struct pf__plan {
    int num_segments;
    size_t row_begin[3], row_count[3];
    size_t col_begin, col_count;
} pf__plan;

static pf__plan pf__plan_for(const pf__config *c, const pf__share *s, const pf__source *src) {
    pf__plan p;
    size_t hd = (size_t)c->head_dim, hidden = (size_t)c->hidden_size;
    p.num_segments = 1;
    p.row_begin[0] = 0;
    p.row_count[0] = src->rows;
    p.col_begin = 0;
    p.col_count = src->cols;
    switch (src->split) {
    case PF__SPLIT_NONE: break;
    case PF__SPLIT_QKV_COLUMNS:
        p.num_segments = 3;
        for (int k = 0; k < 3; k++) {
            p.row_begin[k] = k * hidden + (size_t)s->head_begin * hd;
            p.row_count[k] = (size_t)s->heads * hd;
        }
        break;
    case PF__SPLIT_HEAD_COLUMNS:
        p.row_begin[0] = (size_t)s->head_begin * hd;
        p.row_count[0] = (size_t)s->heads * hd;
        break;
    case PF__SPLIT_MLP_COLUMNS:
        p.row_begin[0] = (size_t)s->mlp_begin;
        p.row_count[0] = (size_t)s->mlp_width;
        break;
    case PF__SPLIT_HEAD_ROWS:
        p.col_begin = (size_t)s->head_begin * hd;
        p.col_count = (size_t)s->heads * hd;
        break;
    case PF__SPLIT_MLP_ROWS:
        p.col_begin = (size_t)s->mlp_begin;
        p.col_count = (size_t)s->mlp_width;
        break;
    }
    return p;
}

static size_t pf__plan_rows(const pf__plan *p) {
    size_t n = 0;
    for (int k = 0; k < p->num_segments; k++) n += p->row_count[k];
    return n;
}

/* Element (row, col) of a logical [rows, cols] source, as fp32. */
static float pf__source_get(const pf__source *src, size_t row, size_t col) {
    size_t i = src->layout == PF__LAYOUT_IN_OUT ? col * src->rows + row : row * src->cols + col;
    switch (src->dtype) {
    case PF__DTYPE_F32: {
        float f;
        memcpy(&f, src->data + 4 * i, 4);
        return f;
    }
    case PF__DTYPE_F16: return pf__f16_to_f32((uint16_t)(src->data[2 * i] | (src->data[2 * i + 1] << 8)));
    case PF__DTYPE_BF16: return pf__bf16_to_f32((uint16_t)(src->data[2 * i] | (src->data[2 * i + 1] << 8)));
    default: return 0.0f;
    }
}

/* Copies the rank's slice of src into dst ([plan rows, plan cols] fp32), converting dtype and
   layout on the way. */
static void pf__slice_copy(float *dst, const pf__source *src, const pf__plan *p) {
    size_t out_row = 0;
    for (int k = 0; k < p->num_segments; k++) {
        if (src->layout == PF__LAYOUT_IN_OUT) { /* walk the file in its own order: rows of `in` */
            for (size_t c = 0; c < p->col_count; c++)
                for (size_t i = 0; i < p->row_count[k]; i++)
                    dst[(out_row + i) * p->col_count + c] = pf__source_get(src, p->row_begin[k] + i, p->col_begin + c);
        } else {
            for (size_t i = 0; i < p->row_count[k]; i++)
                for (size_t c = 0; c < p->col_count; c++)
                    dst[(out_row + i) * p->col_count + c] = pf__source_get(src, p->row_begin[k] + i, p->col_begin + c);
        }
        out_row += p->row_count[k];
    }
}

/* The inverse of pf__slice_copy into a full host array [rows, cols] (pf_to_cpu). */
static void pf__slice_scatter(float *full, size_t full_cols, const float *slice, const pf__plan *p) {
    size_t in_row = 0;
    for (int k = 0; k < p->num_segments; k++) {
        for (size_t i = 0; i < p->row_count[k]; i++)
            memcpy(full + (p->row_begin[k] + i) * full_cols + p->col_begin, slice + (in_row + i) * p->col_count,
                   p->col_count * sizeof(float));
        in_row += p->row_count[k];
    }
}

/* Tied LM head: the slot has no source of its own and shares the token embedding. */
static int pf__slot_tied(const pf_model *m, size_t slot) {
    return slot == PF__SLOT_LM_HEAD && !m->sources[slot].data;
}

/* Runs on the rank's thread: slices every weight into the rank's memory, then allocates the KV
   cache and scratch. */
static void pf__rank_setup(pf__rank *r) {
    pf__group *g = r->group;
    const pf_model *m = g->model;
    const pf__config *c = &m->config;
    size_t num_slots = pf__num_slots(c);
    r->weights = (pf__weight *)calloc(num_slots, sizeof *r->weights);
    if (!r->weights) {
        pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory");
        return;
    }
    r->allocating = PF__MEM_WEIGHTS;
    float *staging = NULL;
    size_t staging_size = 0;
    for (size_t i = 0; i < num_slots && !r->error; i++) {
        const pf__source *src = &m->sources[i];
        if (!src->data) continue;
        pf__plan p = pf__plan_for(c, &r->share, src);
        pf__weight *w = &r->weights[i];
        w->rows = pf__plan_rows(&p);
        w->cols = p.col_count;
        w->dtype = g->dtype;
        size_t numel = w->rows * w->cols, bytes = numel * pf__dtype_size(w->dtype);
        w->data = pf__rank_alloc(r, bytes);
        if (!bytes || !w->data) continue;
        if (r->backend->host_memory && w->dtype == PF__DTYPE_F32) {
            pf__slice_copy((float *)w->data, src, &p);
            continue;
        }
        if (numel * sizeof(float) > staging_size) { /* one slice at a time: never a second full copy */
            free(staging);
            staging_size = numel * sizeof(float);
            staging = (float *)malloc(staging_size);
            if (!staging) {
                pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory for a %zu-byte staging slice", staging_size);
                break;
            }
        }
        pf__slice_copy(staging, src, &p);
        if (w->dtype != PF__DTYPE_F32) { /* convert in place: 2-byte values behind the 4-byte ones */
            uint16_t *half = (uint16_t *)staging;
            for (size_t k = 0; k < numel; k++)
                half[k] = w->dtype == PF__DTYPE_F16 ? pf__f32_to_f16(staging[k]) : pf__f32_to_bf16(staging[k]);
        }
        r->backend->upload(r, w->data, staging, bytes);
    }
    free(staging);
    if (r->error) return;
    if (pf__slot_tied(m, PF__SLOT_LM_HEAD)) r->weights[PF__SLOT_LM_HEAD] = r->weights[PF__SLOT_TOKEN_EMBED];

    size_t width = (size_t)r->share.heads * c->head_dim, hidden = (size_t)c->hidden_size, T = g->max_tokens;
    size_t cache = (size_t)c->num_layers * g->max_batch * g->cache_len * width * sizeof(float);
    r->allocating = PF__MEM_CACHE;
    r->k_cache = (float *)pf__rank_alloc(r, cache);
    r->v_cache = (float *)pf__rank_alloc(r, cache);
    r->allocating = PF__MEM_SCRATCH;
    r->x = (float *)pf__rank_alloc(r, T * hidden * sizeof(float));
    r->h = (float *)pf__rank_alloc(r, T * hidden * sizeof(float));
    r->part = (float *)pf__rank_alloc(r, T * hidden * sizeof(float));
    r->qkv = (float *)pf__rank_alloc(r, T * 3 * width * sizeof(float));
    r->attn = (float *)pf__rank_alloc(r, T * width * sizeof(float));
    r->mlp = (float *)pf__rank_alloc(r, T * r->share.mlp_width * sizeof(float));
    if (r->index == 0) r->logits = (float *)pf__rank_alloc(r, g->logit_rows * c->vocab_size * sizeof(float));
    if (r->backend == &pf__cpu_backend) {
        r->scores = (float *)pf__rank_alloc(r, (size_t)g->cache_len * sizeof(float));
        if (g->num_ranks > 1) r->reduce_tmp = (float *)pf__rank_alloc(r, T * hidden * sizeof(float));
    }
}

/* Runs on the rank's thread: writes its slices into the group's full host arrays. */
static void pf__rank_gather(pf__rank *r) {
    pf__group *g = r->group;
    const pf_model *m = g->model;
    size_t num_slots = pf__num_slots(&m->config);
    for (size_t i = 0; i < num_slots && !r->error; i++) {
        const pf__source *src = &m->sources[i];
        if (!src->data || (src->split == PF__SPLIT_NONE && r->index != 0)) continue;
        pf__plan p = pf__plan_for(&m->config, &r->share, src);
        const pf__weight *w = &r->weights[i];
        size_t numel = w->rows * w->cols;
        if (!numel) continue;
        float *slice = (float *)malloc(numel * sizeof(float));
        if (!slice) {
            pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory");
            return;
        }
        r->backend->download(r, slice, w->data, numel * pf__dtype_size(w->dtype));
        if (w->dtype != PF__DTYPE_F32) { /* widen in place, from the back */
            const uint16_t *half = (const uint16_t *)slice;
            for (size_t k = numel; k-- > 0;)
                slice[k] = w->dtype == PF__DTYPE_F16 ? pf__f16_to_f32(half[k]) : pf__bf16_to_f32(half[k]);
        }
        pf__slice_scatter(g->gather[i], src->cols, slice, &p);
        free(slice);
    }
}

/* =============================================================================================== */
/* forward pass                                                                                    */
/* =============================================================================================== */

/* Runs on every rank's thread with the same step; rank 0 also computes the logits. */
static void pf__rank_forward(pf__rank *r, const pf__job *job) {
    const pf__group *g = r->group;
    const pf__config *c = &g->model->config;
    const pf__backend *be = r->backend;
    const pf__step *s = &job->step;
    const pf__weight *W = r->weights;
    size_t N = (size_t)s->batch * s->seq_len, d = (size_t)c->hidden_size;
    float eps = (float)c->norm_eps;
    size_t width = (size_t)r->share.heads * c->head_dim;
    size_t cache_stride = (size_t)g->max_batch * g->cache_len * width; /* one layer's cache */

    /* x = token embedding + position embedding */
    be->embed(r, r->x, &W[PF__SLOT_TOKEN_EMBED], &W[PF__SLOT_POSITION_EMBED], s);
    for (int l = 0; l < c->num_layers && !pf__rank_failed(r); l++) {
        const pf__weight *L = W + pf__slot_index(PF__SLOT_FIRST_LAYER, l) - PF__SLOT_FIRST_LAYER;
        float scale = c->scale_attn_weights ? 1.0f / sqrtf((float)c->head_dim) : 1.0f;
        if (c->scale_attn_by_inverse_layer_idx) scale /= (float)(l + 1);
        /* h = LN1(x) */
        be->layer_norm(r, r->h, r->x, &L[PF__SLOT_ATTN_NORM_WEIGHT], &L[PF__SLOT_ATTN_NORM_BIAS], N, d, eps);
        /* qkv = h Wqkv_r^T + bqkv_r: this rank's heads only */
        be->matmul(r, r->qkv, r->h, &L[PF__SLOT_QKV_WEIGHT], &L[PF__SLOT_QKV_BIAS], N);
        /* attn = softmax(q k^T * scale) v, with k and v appended to the cache */
        be->attention(r, r->attn, r->qkv, r->k_cache + l * cache_stride, r->v_cache + l * cache_stride, s,
                      r->share.heads, c->head_dim, g->cache_len, scale);
        /* part = attn Wo_r^T: this rank's share of the output projection, summed over ranks */
        be->matmul(r, r->part, r->attn, &L[PF__SLOT_ATTN_OUT_WEIGHT], NULL, N);
        be->all_reduce(r, r->part, N * d);
        /* x += part + bo (the bias once, after the sum) */
        be->add_residual(r, r->x, r->part, &L[PF__SLOT_ATTN_OUT_BIAS], N, d);
        /* h = LN2(x) */
        be->layer_norm(r, r->h, r->x, &L[PF__SLOT_MLP_NORM_WEIGHT], &L[PF__SLOT_MLP_NORM_BIAS], N, d, eps);
        /* mlp = act(h Wup_r^T + bup_r): this rank's columns */
        be->matmul(r, r->mlp, r->h, &L[PF__SLOT_MLP_UP_WEIGHT], &L[PF__SLOT_MLP_UP_BIAS], N);
        be->activation(r, r->mlp, N * r->share.mlp_width, c->activation);
        /* part = mlp Wdown_r^T, summed over ranks; x += part + bdown */
        be->matmul(r, r->part, r->mlp, &L[PF__SLOT_MLP_DOWN_WEIGHT], NULL, N);
        be->all_reduce(r, r->part, N * d);
        be->add_residual(r, r->x, r->part, &L[PF__SLOT_MLP_DOWN_BIAS], N, d);
    }
    if (r->index != 0 || pf__rank_failed(r)) return;

    /* Rank 0 alone: h = LNf(x) for the rows wanted, then logits = h Wlm^T, in chunks. */
    size_t rows;
    if (job->all_positions) {
        rows = N;
        be->layer_norm(r, r->h, r->x, &W[PF__SLOT_FINAL_NORM_WEIGHT], &W[PF__SLOT_FINAL_NORM_BIAS], N, d, eps);
    } else {
        rows = (size_t)s->batch;
        for (size_t b = 0; b < rows; b++)
            be->layer_norm(r, r->h + b * d, r->x + (b * s->seq_len + s->seq_len - 1) * d,
                           &W[PF__SLOT_FINAL_NORM_WEIGHT], &W[PF__SLOT_FINAL_NORM_BIAS], 1, d, eps);
    }
    size_t vocab = (size_t)c->vocab_size;
    for (size_t first = 0; first < rows && !r->error; first += g->logit_rows) {
        size_t n = rows - first < g->logit_rows ? rows - first : g->logit_rows;
        be->matmul(r, r->logits, r->h + first * d, &W[PF__SLOT_LM_HEAD], NULL, n);
        be->download(r, job->logits + first * vocab, r->logits, n * vocab * sizeof(float));
    }
}

/* =============================================================================================== */
/* CUDA backend (kernels.cu), when built with PF_CUDA                                              */
/* =============================================================================================== */

#ifdef PF_CUDA
#include "cuda.part.c"
#else
static int pf__cuda_usable(void) { return 0; }
static const char *pf__cuda_unavailable_reason(void) { return "this build has no CUDA backend (build with nvcc)"; }
static const pf__backend *pf__cuda_backend(void) { return NULL; }
#endif

/* =============================================================================================== */
/* parallel groups                                                                                 */
/* =============================================================================================== */

static void pf__log(const pf_model *m, const char *fmt, ...) {
    if (!m->load_options.log) return;
    char line[256];
    va_list args;
    va_start(args, fmt);
    vsnprintf(line, sizeof line, fmt, args);
    va_end(args);
    m->load_options.log(m->load_options.log_user, line);
}

static void pf__log_memory_table(const pf_model *m) {
    const pf__group *g = m->group;
    pf__log(m, "rank  device  heads  mlp    weights(B)   kv-cache(B)  scratch(B)   total(B)");
    for (int i = 0; i < g->num_ranks; i++) {
        const pf__rank *r = &g->ranks[i];
        size_t total = r->bytes[PF__MEM_WEIGHTS] + r->bytes[PF__MEM_CACHE] + r->bytes[PF__MEM_SCRATCH];
        pf__log(m, "%-5d %-7s %-6d %-6d %-12zu %-12zu %-12zu %zu", i, r->backend->name, r->share.heads,
                r->share.mlp_width, r->bytes[PF__MEM_WEIGHTS], r->bytes[PF__MEM_CACHE], r->bytes[PF__MEM_SCRATCH],
                total);
    }
}

/* Starts num_ranks rank threads on `backend` and has each slice its weights from m->sources. */
static pf_result pf__group_create(pf_model *m, int num_ranks, const pf_parallel_options *o, const pf__backend *backend,
                                  pf__dtype dtype) {
    const pf__config *c = &m->config;
    pf__group *g = (pf__group *)calloc(1, sizeof *g);
    if (!g) return pf__format(m->message, sizeof m->message, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    pthread_mutex_init(&g->mutex, NULL);
    pthread_cond_init(&g->work, NULL);
    pthread_cond_init(&g->done, NULL);
    pthread_cond_init(&g->barrier_cond, NULL);
    g->model = m;
    g->backend = backend;
    g->dtype = dtype;
    g->num_ranks = num_ranks;
    g->max_batch = o->max_batch ? o->max_batch : 1;
    g->cache_len = o->max_sequence_length ? o->max_sequence_length : c->max_positions;
    g->max_tokens = (size_t)g->max_batch * g->cache_len;
    g->logit_rows = g->max_tokens < 64 ? g->max_tokens : (g->max_batch > 64 ? (size_t)g->max_batch : 64);
    g->ranks = (pf__rank *)calloc((size_t)num_ranks, sizeof *g->ranks);
    g->reduce_in = (float **)calloc((size_t)num_ranks, sizeof *g->reduce_in);
    float *logits = (float *)realloc(m->logits, (size_t)g->max_batch * c->vocab_size * sizeof(float));
    if (logits) m->logits = logits;
    if (!g->ranks || !g->reduce_in || !logits) {
        pf__group_destroy(g);
        return pf__format(m->message, sizeof m->message, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    for (int i = 0; i < num_ranks; i++) {
        pf__rank *r = &g->ranks[i];
        r->group = g;
        r->index = i;
        r->backend = backend;
        r->device = o->device_ids ? o->device_ids[i] : i;
        r->share = pf__share_for(c, i, num_ranks);
    }
    if (backend->group_begin) {
        pf_result res = backend->group_begin(g, m->message, sizeof m->message);
        if (res) {
            pf__group_destroy(g);
            return res;
        }
    }
    for (int i = 0; i < num_ranks; i++) {
        pf__rank *r = &g->ranks[i];
        if (pthread_create(&r->thread, NULL, pf__rank_main, r) != 0) {
            pf__group_destroy(g);
            return pf__format(m->message, sizeof m->message, PF_ERROR_OUT_OF_MEMORY, "cannot start rank thread %d", i);
        }
        g->threads_started++;
    }
    m->group = g;
    pf_result res = pf__group_run(g, PF__JOB_SETUP, NULL);
    if (res) {
        m->group = NULL;
        pf__group_destroy(g);
        return res;
    }
    if (o->verbose) pf__log_memory_table(m);
    return PF_OK;
}

/* =============================================================================================== */
/* public API                                                                                      */
/* =============================================================================================== */

pf_load_options pf_load_options_init(void) {
    pf_load_options o;
    memset(&o, 0, sizeof o);
    return o;
}

pf_parallel_options pf_parallel_options_init(void) {
    pf_parallel_options o;
    memset(&o, 0, sizeof o);
    return o;
}

pf_generate_options pf_generate_options_init(void) {
    pf_generate_options o;
    memset(&o, 0, sizeof o);
    o.max_length = 20; /* transformers' GenerationConfig default */
    o.eos_token_id = -1;
    return o;
}

const char *pf_error_message(const pf_model *m) { return m ? m->message : "no model"; }

#define PF__FAIL(m, code, ...) pf__format((m)->message, sizeof (m)->message, code, __VA_ARGS__)

/* Finds the source tensor of every slot, checking presence, dtype and shape. */
static pf_result pf__resolve_sources(pf_model *m) {
    const pf__config *c = &m->config;
    size_t num_slots = pf__num_slots(c);
    m->sources = (pf__source *)calloc(num_slots, sizeof *m->sources);
    if (!m->sources) return PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");

    const char *prefix = NULL;
    const pf__arch_tensor *embed = pf__arch_tensor_for(c->arch, PF__SLOT_TOKEN_EMBED);
    for (size_t i = 0; i < PF__COUNT(pf__arch_prefixes) && !prefix; i++) {
        char name[256];
        if (pf__arch_prefixes[i].arch != c->arch) continue;
        snprintf(name, sizeof name, "%s%s", pf__arch_prefixes[i].prefix, embed->pattern);
        if (pf__st_find(&m->st, name)) prefix = pf__arch_prefixes[i].prefix;
    }
    if (!prefix) return PF__FAIL(m, PF_ERROR_FORMAT, "%s: missing tensor '%s' (under any known prefix)", m->dir, embed->pattern);

    for (int slot = 0; slot < PF__SLOT_COUNT; slot++) {
        const pf__arch_tensor *t = pf__arch_tensor_for(c->arch, (pf__slot)slot);
        if (!t) continue;
        int layers = slot < PF__SLOT_FIRST_LAYER ? 1 : c->num_layers;
        for (int l = 0; l < layers; l++) {
            char pattern[256], name[300];
            snprintf(pattern, sizeof pattern, t->pattern, l);
            snprintf(name, sizeof name, "%s%s", prefix, pattern);
            const pf__st_tensor *st = pf__st_find(&m->st, name);
            if (!st) st = pf__st_find(&m->st, pattern); /* e.g. lm_head.weight sits outside the prefix */
            if (!st) {
                if (t->need == PF__OPTIONAL) continue;
                return PF__FAIL(m, PF_ERROR_FORMAT, "%s: missing tensor '%s'", m->dir, name);
            }
            if (st->dtype == PF__DTYPE_OTHER)
                return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "%s: tensor '%s' has an unsupported dtype (F32, F16 and BF16 are)",
                                st->file->path, st->name);
            pf__source *src = &m->sources[pf__slot_index((pf__slot)slot, l)];
            pf__slot_shape(c, (pf__slot)slot, &src->rows, &src->cols);
            size_t want[2] = {src->rows, src->cols};
            int want_dims = 2;
            if (t->layout == PF__LAYOUT_VECTOR) want_dims = 1;
            if (t->layout == PF__LAYOUT_IN_OUT) {
                want[0] = src->cols;
                want[1] = src->rows;
            }
            if (st->ndim != want_dims || st->shape[0] != want[0] || (want_dims == 2 && st->shape[1] != want[1]))
                return PF__FAIL(m, PF_ERROR_FORMAT, "%s: tensor '%s' has shape [%zu%s%zu] but the config needs [%zu%s%zu]",
                                st->file->path, st->name, st->shape[0], st->ndim > 1 ? ", " : "",
                                st->ndim > 1 ? st->shape[1] : 0, want[0], want_dims > 1 ? ", " : "",
                                want_dims > 1 ? want[1] : 0);
            src->data = st->data;
            src->dtype = st->dtype;
            src->layout = t->layout;
            src->split = t->split;
        }
    }
    if (!m->sources[PF__SLOT_LM_HEAD].data && !pf__archs[c->arch].tied_lm_head)
        return PF__FAIL(m, PF_ERROR_FORMAT, "%s: missing the LM head", m->dir);
    return PF_OK;
}

pf_result pf_load(const char *model_dir, const pf_load_options *options, pf_model **model) {
    if (!model) return PF_ERROR_INVALID_ARGUMENT;
    pf_model *m = (pf_model *)calloc(1, sizeof *m);
    *model = m;
    if (!m) return PF_ERROR_OUT_OF_MEMORY;
    m->load_options = options ? *options : pf_load_options_init();
    if (!model_dir) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "model_dir is NULL");
    m->dir = strdup(model_dir);
    if (!m->dir) return PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    pf_result r = pf__config_read(model_dir, &m->config, m->message, sizeof m->message);
    if (!r) r = pf__st_open(model_dir, &m->st, m->message, sizeof m->message);
    if (!r) r = pf__resolve_sources(m);
    if (!r) {
        char path[PF__PATH_SIZE], vocab[PF__PATH_SIZE];
        if (pf__path_join(path, sizeof path, model_dir, "tokenizer.json") ||
            pf__path_join(vocab, sizeof vocab, model_dir, "vocab.json"))
            r = PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "path too long: %s", model_dir);
        else if (pf__file_exists(path) || pf__file_exists(vocab))
            r = pf__tokenizer_load_dir(model_dir, &m->tokenizer, m->message, sizeof m->message);
    }
    if (r) return r;
    m->loaded = 1;
    m->message[0] = 0;
    return PF_OK;
}

void pf_free(pf_model *m) {
    if (!m) return;
    pf__group_destroy(m->group);
    pf_tokenizer_free(m->tokenizer);
    pf__st_close(&m->st);
    free(m->sources);
    free(m->logits);
    free(m->dir);
    free(m);
}

pf_model_info pf_get_info(const pf_model *m) {
    pf_model_info info;
    memset(&info, 0, sizeof info);
    info.eos_token_id = -1;
    if (!m || !m->loaded) return info;
    info.model_type = pf__archs[m->config.arch].model_type;
    info.vocab_size = m->config.vocab_size;
    info.hidden_size = m->config.hidden_size;
    info.num_layers = m->config.num_layers;
    info.num_heads = m->config.num_heads;
    info.max_positions = m->config.max_positions;
    info.eos_token_id = m->config.eos_token_id;
    return info;
}

/* The most ranks we start: far more than any machine has devices, small enough to catch typos. */
#define PF__MAX_RANKS 64

pf_result pf_parallelize(pf_model *m, int num_ranks, const pf_parallel_options *options) {
    if (!m) return PF_ERROR_INVALID_ARGUMENT;
    if (!m->loaded) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "the model did not load");
    pf_parallel_options o = options ? *options : pf_parallel_options_init();
    const pf__config *c = &m->config;
    if (num_ranks < 1 || num_ranks > PF__MAX_RANKS)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "num_ranks %d is not in 1..%d", num_ranks, PF__MAX_RANKS);
    if (o.max_batch < 0 || o.max_batch > 4096)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "max_batch %d is not in 0..4096", o.max_batch);
    if (o.max_sequence_length < 0 || o.max_sequence_length > c->max_positions)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "max_sequence_length %d is not in 0..%d (the model's positions)",
                        o.max_sequence_length, c->max_positions);
    if (o.device_ids && o.num_device_ids != num_ranks)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "%d device ids for %d ranks", o.num_device_ids, num_ranks);
    for (int i = 0; o.device_ids && i < num_ranks; i++)
        if (o.device_ids[i] < 0 || o.device_ids[i] > 1024)
            return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "device id %d is not a device", o.device_ids[i]);
    if (o.dtype < PF_DTYPE_AUTO || o.dtype > PF_DTYPE_BF16)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "unknown dtype %d", (int)o.dtype);

    const pf__backend *backend = NULL;
    switch (o.device) {
    case PF_DEVICE_CPU: backend = &pf__cpu_backend; break;
    case PF_DEVICE_AUTO: backend = pf__cuda_usable() ? pf__cuda_backend() : &pf__cpu_backend; break;
    case PF_DEVICE_CUDA:
        if (!pf__cuda_usable())
            return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "no CUDA device: %s", pf__cuda_unavailable_reason());
        backend = pf__cuda_backend();
        break;
    default: return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "unknown device %d", (int)o.device);
    }
    static const pf__dtype dtypes[] = {PF__DTYPE_F32, PF__DTYPE_F32, PF__DTYPE_F16, PF__DTYPE_BF16};
    pf__dtype dtype = o.dtype == PF_DTYPE_AUTO && backend != &pf__cpu_backend ? PF__DTYPE_F16 : dtypes[o.dtype];
    if (backend == &pf__cpu_backend && dtype != PF__DTYPE_F32)
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "the CPU backend stores weights in fp32 only");
    if (backend == &pf__cpu_backend) o.device_ids = NULL; /* CPU ranks have no device to pick */
    pf__group_destroy(m->group);
    m->group = NULL;
    m->parallel_options = o;
    m->parallel_options.device_ids = NULL; /* not ours to keep */
    return pf__group_create(m, num_ranks, &o, backend, dtype);
}

pf_result pf_to_cpu(pf_model *m) {
    if (!m) return PF_ERROR_INVALID_ARGUMENT;
    if (!m->loaded) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "the model did not load");
    pf__group *g = m->group;
    if (!g || (g->num_ranks == 1 && g->ranks[0].backend == &pf__cpu_backend)) return PF_OK;

    /* Gather every slice into full host arrays, then build one CPU rank from them. */
    size_t num_slots = pf__num_slots(&m->config);
    float **full = (float **)calloc(num_slots, sizeof *full);
    pf__source *gathered = (pf__source *)calloc(num_slots, sizeof *gathered);
    pf_result r = PF_OK;
    if (!full || !gathered) r = PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; i < num_slots && !r; i++) {
        if (!m->sources[i].data) continue;
        full[i] = (float *)malloc(m->sources[i].rows * m->sources[i].cols * sizeof(float));
        if (!full[i]) r = PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
        gathered[i] = m->sources[i];
        gathered[i].data = (const uint8_t *)full[i];
        gathered[i].dtype = PF__DTYPE_F32;
        gathered[i].layout = PF__LAYOUT_OUT_IN;
    }
    if (!r) {
        g->gather = full;
        r = pf__group_run(g, PF__JOB_GATHER, NULL);
    }
    if (!r) {
        pf__group_destroy(g);
        m->group = NULL;
        pf__source *mapped = m->sources;
        m->sources = gathered;
        pf_parallel_options o = m->parallel_options;
        o.device = PF_DEVICE_CPU;
        o.dtype = PF_DTYPE_F32;
        r = pf__group_create(m, 1, &o, &pf__cpu_backend, PF__DTYPE_F32);
        m->sources = mapped; /* a later pf_parallelize slices from the map again */
        m->parallel_options = o;
    }
    for (size_t i = 0; full && i < num_slots; i++) free(full[i]);
    free(full);
    free(gathered);
    return r;
}

int pf_num_ranks(const pf_model *m) { return m && m->group ? m->group->num_ranks : 1; }

size_t pf_memory_allocated(const pf_model *m, int rank) {
    if (!m || !m->group || rank < 0 || rank >= m->group->num_ranks) return 0;
    const pf__rank *r = &m->group->ranks[rank];
    return r->bytes[PF__MEM_WEIGHTS] + r->bytes[PF__MEM_CACHE] + r->bytes[PF__MEM_SCRATCH];
}

/* Requests on a model that was never parallelized run on one CPU rank. */
static pf_result pf__ensure_group(pf_model *m) {
    if (!m->loaded) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "the model did not load");
    if (m->group) return PF_OK;
    pf_parallel_options o = pf_parallel_options_init();
    o.device = PF_DEVICE_CPU;
    return pf_parallelize(m, 1, &o);
}

static pf_result pf__check_ids(pf_model *m, const int32_t *ids, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= m->config.vocab_size)
            return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "token id %d at index %zu is outside the vocabulary (0..%d)",
                            (int)ids[i], i, m->config.vocab_size - 1);
    return PF_OK;
}

pf_result pf_forward(pf_model *m, const int32_t *ids, int batch, int seq_len, float *logits) {
    if (!m) return PF_ERROR_INVALID_ARGUMENT;
    if (!ids || !logits || batch < 1 || seq_len < 1)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "pf_forward needs ids, logits, batch >= 1 and seq_len >= 1");
    pf_result r = pf__ensure_group(m);
    if (r) return r;
    const pf__group *g = m->group;
    if (batch > g->max_batch || seq_len > g->cache_len)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT,
                        "batch %d x length %d exceeds what pf_parallelize sized (max_batch %d, max_sequence_length %d)",
                        batch, seq_len, g->max_batch, g->cache_len);
    if ((r = pf__check_ids(m, ids, (size_t)batch * seq_len))) return r;
    pf__job job;
    memset(&job, 0, sizeof job);
    job.step.ids = ids;
    job.step.batch = batch;
    job.step.seq_len = seq_len;
    job.logits = logits;
    job.all_positions = 1;
    return pf__group_run(m->group, PF__JOB_FORWARD, &job);
}

static int pf__argmax(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

pf_result pf_generate(pf_model *m, const int32_t *prompt, int prompt_len, const pf_generate_options *options,
                      int32_t *out, int out_capacity, int *num_out) {
    if (!m) return PF_ERROR_INVALID_ARGUMENT;
    if (num_out) *num_out = 0;
    if (!prompt || prompt_len < 1 || !out || out_capacity < 0 || !num_out)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "pf_generate needs a prompt of at least one id, out and num_out");
    pf_generate_options o = options ? *options : pf_generate_options_init();
    if (o.max_new_tokens < 0 || o.max_length < 0 || o.eos_token_id < -2)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "negative max_new_tokens, max_length or eos_token_id");
    pf_result r = pf__ensure_group(m);
    if (r) return r;
    if ((r = pf__check_ids(m, prompt, (size_t)prompt_len))) return r;
    const pf__group *g = m->group;
    if (prompt_len > g->cache_len)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "the prompt (%d tokens) is longer than the KV cache (%d)",
                        prompt_len, g->cache_len);
    /* As transformers: max_new_tokens wins over max_length; the cache bounds both. */
    long long limit = o.max_new_tokens ? (long long)prompt_len + o.max_new_tokens
                                       : (o.max_length ? o.max_length : m->config.max_positions);
    if (limit > g->cache_len) limit = g->cache_len;
    if (limit - prompt_len > out_capacity) limit = prompt_len + out_capacity;
    int eos = o.eos_token_id == -1 ? m->config.eos_token_id : o.eos_token_id;

    pf__job job;
    memset(&job, 0, sizeof job);
    job.step.ids = prompt;
    job.step.batch = 1;
    job.step.seq_len = prompt_len;
    job.logits = m->logits;
    int n = 0;
    for (long long length = prompt_len; length < limit; length++) {
        if ((r = pf__group_run(m->group, PF__JOB_FORWARD, &job))) return r;
        int32_t next = pf__argmax(m->logits, m->config.vocab_size);
        out[n++] = next;
        *num_out = n;
        if (next == eos) break;
        /* The next step feeds the chosen token alone; every rank gets the same id. */
        job.step.ids = &out[n - 1];
        job.step.seq_len = 1;
        job.step.past = (int)length;
    }
    return PF_OK;
}

pf_tokenizer *pf_model_tokenizer(pf_model *m) { return m ? m->tokenizer : NULL; }
