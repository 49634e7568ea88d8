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

/* The message of the calling thread's last failure, and the model it concerns: thread-local so
   that threads sharing a model each read their own (C99 has no keyword for it; every compiler we
   target has one). */
#if defined(_MSC_VER)
#define PF__THREAD_LOCAL __declspec(thread)
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__STDC_NO_THREADS__)
#define PF__THREAD_LOCAL _Thread_local
#else
#define PF__THREAD_LOCAL __thread
#endif
static PF__THREAD_LOCAL const void *pf__error_model;
static PF__THREAD_LOCAL char pf__error_text[PF__MESSAGE_SIZE];

/* The buffer a failure on `model` is written into (cleared). */
static char *pf__error_buffer(const void *model) {
    pf__error_model = model;
    pf__error_text[0] = 0;
    return pf__error_text;
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

/* The tensors the forward pass knows. Per-layer slots come after PF__SLOT_FIRST_LAYER. Shapes
   are logical [out, in]; E is the embedding width (hidden, or OPT's word_embed_proj_dim),
   Q = heads * head_dim, KV = kv_heads * head_dim, I = intermediate size. */
typedef enum {
    PF__SLOT_TOKEN_EMBED,      /* [vocab, E] */
    PF__SLOT_POSITION_EMBED,   /* [max_positions + offset, hidden]: learned, or the sinusoid table */
    PF__SLOT_EMBED_NORM_WEIGHT,/* [hidden] BLOOM's norm right after the embedding */
    PF__SLOT_EMBED_NORM_BIAS,  /* [hidden] */
    PF__SLOT_PROJECT_IN,       /* [hidden, E] */
    PF__SLOT_PROJECT_OUT,      /* [E, hidden] */
    PF__SLOT_FINAL_NORM_WEIGHT,/* [hidden] */
    PF__SLOT_FINAL_NORM_BIAS,  /* [hidden] */
    PF__SLOT_LM_HEAD,          /* [vocab, E] */
    PF__SLOT_LM_HEAD_BIAS,     /* [vocab] */
    PF__SLOT_FIRST_LAYER,
    PF__SLOT_ATTN_NORM_WEIGHT = PF__SLOT_FIRST_LAYER, /* [hidden] */
    PF__SLOT_ATTN_NORM_BIAS,   /* [hidden] */
    PF__SLOT_QKV_FUSED_WEIGHT, /* [Q + 2 KV, hidden], rows in the policy's qkv_layout */
    PF__SLOT_QKV_FUSED_BIAS,   /* [Q + 2 KV] */
    PF__SLOT_Q_WEIGHT,         /* [Q, hidden] */
    PF__SLOT_Q_BIAS,           /* [Q] */
    PF__SLOT_K_WEIGHT,         /* [KV, hidden] */
    PF__SLOT_K_BIAS,           /* [KV] */
    PF__SLOT_V_WEIGHT,         /* [KV, hidden] */
    PF__SLOT_V_BIAS,           /* [KV] */
    PF__SLOT_ATTN_OUT_WEIGHT,  /* [hidden, Q] */
    PF__SLOT_ATTN_OUT_BIAS,    /* [hidden] */
    PF__SLOT_MLP_NORM_WEIGHT,  /* [hidden] */
    PF__SLOT_MLP_NORM_BIAS,    /* [hidden] */
    PF__SLOT_MLP_GATE_WEIGHT,  /* [I, hidden] */
    PF__SLOT_MLP_GATE_BIAS,    /* [I] */
    PF__SLOT_MLP_UP_WEIGHT,    /* [I, hidden] */
    PF__SLOT_MLP_UP_BIAS,      /* [I] */
    PF__SLOT_MLP_DOWN_WEIGHT,  /* [hidden, I] */
    PF__SLOT_MLP_DOWN_BIAS,    /* [hidden] */
    /* Built on each rank by stacking the slices above (see pf__stacks), never read from files: */
    PF__SLOT_QKV_WEIGHT,       /* [q_r | k_r | v_r, hidden]: one matmul for the rank's heads */
    PF__SLOT_QKV_BIAS,
    PF__SLOT_MLP_IN_WEIGHT,    /* [gate_r | up_r, hidden], or up_r alone */
    PF__SLOT_MLP_IN_BIAS,
    PF__SLOT_COUNT
} pf__slot;

#define PF__LAYER_SLOTS (PF__SLOT_COUNT - PF__SLOT_FIRST_LAYER)

/* Rank weights stacked from several tensors' slices, in this order (absent ones skipped). */
static const struct pf__stack {
    pf__slot target;
    pf__slot members[4];
    int num_members;
} pf__stacks[] = {
    {PF__SLOT_QKV_WEIGHT, {PF__SLOT_QKV_FUSED_WEIGHT, PF__SLOT_Q_WEIGHT, PF__SLOT_K_WEIGHT, PF__SLOT_V_WEIGHT}, 4},
    {PF__SLOT_QKV_BIAS, {PF__SLOT_QKV_FUSED_BIAS, PF__SLOT_Q_BIAS, PF__SLOT_K_BIAS, PF__SLOT_V_BIAS}, 4},
    {PF__SLOT_MLP_IN_WEIGHT, {PF__SLOT_MLP_GATE_WEIGHT, PF__SLOT_MLP_UP_WEIGHT}, 2},
    {PF__SLOT_MLP_IN_BIAS, {PF__SLOT_MLP_GATE_BIAS, PF__SLOT_MLP_UP_BIAS}, 2},
};

typedef enum { PF__LAYOUT_OUT_IN, PF__LAYOUT_IN_OUT, PF__LAYOUT_VECTOR } pf__layout;

typedef enum {
    PF__SPLIT_NONE,
    PF__SPLIT_QKV_COLUMNS,
    PF__SPLIT_HEAD_COLUMNS,
    PF__SPLIT_KV_COLUMNS,
    PF__SPLIT_MLP_COLUMNS,
    PF__SPLIT_HEAD_ROWS,
    PF__SPLIT_MLP_ROWS
} pf__split;

typedef enum { PF__OPTIONAL, PF__REQUIRED } pf__need;
typedef enum { PF__NORM_LAYER, PF__NORM_RMS } pf__norm;
typedef enum {
    PF__POS_LEARNED,
    PF__POS_ROTARY_HALVES,
    PF__POS_ROTARY_PAIRS,
    PF__POS_ALIBI,
    PF__POS_SINUSOIDAL
} pf__positions;
typedef enum { PF__QKV_BLOCKS, PF__QKV_PER_HEAD, PF__QKV_CODEGEN } pf__qkv_layout;
typedef enum { PF__MLP_PLAIN, PF__MLP_GATED } pf__mlp;
typedef enum { PF__ACT_GELU_TANH, PF__ACT_GELU_ERF, PF__ACT_RELU, PF__ACT_SILU } pf__activation;
typedef enum { PF__ROPE_DEFAULT, PF__ROPE_LINEAR, PF__ROPE_DYNAMIC, PF__ROPE_LLAMA3 } pf__rope_type;

#define PF__NEEDED (-1e300)

typedef enum {
#define PF_ARCH(id, ...) PF__ARCH_##id,
#include "policies.inc"
    PF__ARCH_COUNT
} pf__arch_id;

typedef struct pf__arch {
    const char *model_type;
    pf__norm norm;
    pf__positions positions;
    pf__qkv_layout qkv_layout;
    pf__mlp mlp;
    int mlp_ratio;
    const char *activation_key, *activation_default;
    int tied_lm_head;
    const char *layer_types_key;
} pf__arch;

static const pf__arch pf__archs[PF__ARCH_COUNT] = {
#define PF_ARCH(id, model_type, norm, positions, qkv, mlp, mlp_ratio, act_key, act_default, tied, layer_types) \
    {model_type, norm, positions, qkv, mlp, mlp_ratio, act_key, act_default, tied, layer_types},
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
    int hidden_size, num_heads, num_kv_heads, num_layers, vocab_size, max_positions, intermediate_size;
    int head_dim;                   /* 0 in the file: hidden_size / num_heads */
    int embed_dim;                  /* OPT's word_embed_proj_dim; 0: hidden_size */
    double norm_eps;
    double final_norm_eps;          /* 0: norm_eps */
    int scale_attn_weights;         /* 0: scores are q.k unscaled (GPT-Neo) */
    int scale_attn_by_inverse_layer_idx;
    int eos_token_id;
    int pre_norm;                   /* 0: post-norm blocks (OpenAI GPT, OPT-350m) */
    int parallel_residual;          /* x + attn(norm(x)) + mlp(norm'(x)) */
    int position_offset;            /* OPT's learned positions start at 2 */
    int embed_scale_sqrt;           /* token embeddings times sqrt(hidden) (CTRL) */
    int rotary_dim;                 /* rotated dims per head; 0: rotary_pct * head_dim */
    double rotary_pct;
    double rope_theta;
    int sliding_window;             /* keys within this distance of the query; 0: all */
    int use_sliding_window;         /* 0: the config's sliding_window is only informative (Qwen2) */
    int local_window;               /* GPT-Neo's window for its "local" layers */
    pf__activation activation;
    pf__rope_type rope_type;
    double rope_factor, rope_low_freq_factor, rope_high_freq_factor;
    int rope_original_max_positions;
    int *layer_window;              /* [num_layers]: each layer's window, 0 for global; owned */
} pf__config;

/* Neutral values for fields an architecture's rows do not name. */
static void pf__config_defaults(pf__config *c) {
    memset(c, 0, sizeof *c);
    c->scale_attn_weights = 1;
    c->pre_norm = 1;
    c->rotary_pct = 1.0;
    c->rope_theta = 10000.0;
    c->eos_token_id = -1;
    c->rope_factor = 1.0;
    c->use_sliding_window = 1;
}

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
        {"gelu_fast", PF__ACT_GELU_TANH}, {"bloom_gelu", PF__ACT_GELU_TANH}, {"gelu", PF__ACT_GELU_ERF},
        {"relu", PF__ACT_RELU}, {"silu", PF__ACT_SILU}, {"swish", PF__ACT_SILU},
    };
    for (size_t i = 0; i < PF__COUNT(names); i++)
        if (strcmp(names[i].name, name) == 0) {
            *out = names[i].act;
            return 0;
        }
    return -1;
}

/* A number from JSON (bools count as 0/1); 1 if present and numeric, 0 if absent or null, -1 if
   something else. */
static int pf__json_number(const pf__json *v, double *out) {
    if (!v || v->type == PF__JSON_NULL) return 0;
    if (v->type == PF__JSON_NUMBER) *out = v->number;
    else if (v->type == PF__JSON_BOOL) *out = v->boolean;
    else if (v->type == PF__JSON_ARRAY && v->count && v->first->type == PF__JSON_NUMBER)
        *out = v->first->number; /* e.g. several eos ids: the first one stops generation here */
    else return -1;
    return 1;
}

/* transformers' rope scaling: "rope_scaling" (v4) or "rope_parameters" (v5), either naming the
   type as "rope_type" or "type"; v5 may keep rope_theta there too. */
static pf_result pf__config_rope(const pf__json *json, pf__config *c, const char *path, char *message, size_t size) {
    const pf__json *rope = pf__json_get(json, "rope_parameters");
    if (!rope || rope->type != PF__JSON_OBJECT) rope = pf__json_get(json, "rope_scaling");
    if (!rope || rope->type != PF__JSON_OBJECT) return PF_OK;
    const pf__json *type = pf__json_get(rope, "rope_type");
    if (!type) type = pf__json_get(rope, "type");
    double v;
    if (pf__json_number(pf__json_get(rope, "rope_theta"), &v) == 1) c->rope_theta = v;
    if (pf__json_number(pf__json_get(rope, "partial_rotary_factor"), &v) == 1) c->rotary_pct = v;
    if (!type || type->type != PF__JSON_STRING || strcmp(type->string, "default") == 0) return PF_OK;
    if (strcmp(type->string, "linear") == 0) c->rope_type = PF__ROPE_LINEAR;
    else if (strcmp(type->string, "dynamic") == 0) c->rope_type = PF__ROPE_DYNAMIC;
    else if (strcmp(type->string, "llama3") == 0) c->rope_type = PF__ROPE_LLAMA3;
    else return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: rope type \"%s\" is not supported", path, type->string);
    if (pf__json_number(pf__json_get(rope, "factor"), &c->rope_factor) != 1 || !(c->rope_factor >= 1 && c->rope_factor < 1e6))
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: rope scaling needs a factor >= 1", path);
    if (c->rope_type == PF__ROPE_LLAMA3) {
        double original = 0;
        if (pf__json_number(pf__json_get(rope, "low_freq_factor"), &c->rope_low_freq_factor) != 1 ||
            pf__json_number(pf__json_get(rope, "high_freq_factor"), &c->rope_high_freq_factor) != 1 ||
            pf__json_number(pf__json_get(rope, "original_max_position_embeddings"), &original) != 1 ||
            !(c->rope_high_freq_factor > c->rope_low_freq_factor) || !(original >= 1 && original < 1e9))
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: llama3 rope scaling needs low_freq_factor < high_freq_factor and original_max_position_embeddings", path);
        c->rope_original_max_positions = (int)original;
    }
    return PF_OK;
}

/* The window of each layer: from a per-layer list when the architecture names one, else the
   sliding window (if any) everywhere. */
static pf_result pf__config_layer_windows(const pf__json *json, const pf__arch *a, pf__config *c, const char *path,
                                          char *message, size_t size) {
    if (!c->use_sliding_window) c->sliding_window = 0;
    c->layer_window = (int *)calloc((size_t)c->num_layers, sizeof(int));
    if (!c->layer_window) return pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    const pf__json *types = a->layer_types_key ? pf__json_get(json, a->layer_types_key) : NULL;
    if (!types || types->type != PF__JSON_ARRAY) {
        for (int l = 0; l < c->num_layers; l++) c->layer_window[l] = c->sliding_window;
        return PF_OK;
    }
    if ((int)types->count != c->num_layers)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"%s\" lists %zu layers, the model has %d", path,
                          a->layer_types_key, types->count, c->num_layers);
    int l = 0;
    for (const pf__json *t = types->first; t; t = t->next, l++) {
        if (t->type != PF__JSON_STRING)
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"%s\" holds a non-string", path, a->layer_types_key);
        if (!strcmp(t->string, "local")) c->layer_window[l] = c->local_window;
        else if (!strcmp(t->string, "sliding_attention")) c->layer_window[l] = c->sliding_window;
        else if (strcmp(t->string, "global") && strcmp(t->string, "full_attention"))
            return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: attention kind \"%s\" is not supported", path, t->string);
        if (c->layer_window[l] < 0)
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: layer %d has a negative window", path, l);
    }
    return PF_OK;
}

/* Reads config.json into cfg, choosing the architecture row by model_type. */
static pf_result pf__config_read(const char *dir, pf__config *cfg, char *message, size_t size) {
    char path[PF__PATH_SIZE];
    pf__json *json;
    pf__config_defaults(cfg);
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
        char supported[512] = "";
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
    for (size_t i = 0; i < PF__COUNT(pf__arch_configs) && !r; i++) {
        const pf__arch_config *c = &pf__arch_configs[i];
        if (c->arch != cfg->arch || done[c->offset]) continue;
        int last_alias = 1;
        for (size_t j = i + 1; j < PF__COUNT(pf__arch_configs); j++)
            if (pf__arch_configs[j].arch == cfg->arch && pf__arch_configs[j].offset == c->offset) last_alias = 0;
        double value = c->fallback;
        int found = c->key ? pf__json_number(pf__json_get(json, c->key), &value) : 0;
        if (found < 0) {
            r = pf__format(message, size, PF_ERROR_FORMAT, "%s: \"%s\" is not a number", path, c->key);
            break;
        }
        if (!found && !last_alias) continue;
        if (!found && c->fallback == PF__NEEDED) {
            r = pf__format(message, size, PF_ERROR_FORMAT, "%s: \"%s\" is missing", path, c->key);
            break;
        }
        done[c->offset] = 1;
        if (c->is_double) {
            *(double *)((char *)cfg + c->offset) = value;
        } else {
            if (!(value >= -1 && value <= 1e9) || value != floor(value)) {
                r = pf__format(message, size, PF_ERROR_FORMAT, "%s: \"%s\" = %g is not a sane integer", path,
                               c->key ? c->key : "(fixed)", value);
                break;
            }
            *(int *)((char *)cfg + c->offset) = (int)value;
        }
    }
    if (!r) {
        const pf__json *act = a->activation_key ? pf__json_get(json, a->activation_key) : NULL;
        const char *act_name = act && act->type == PF__JSON_STRING ? act->string : a->activation_default;
        if (pf__activation_from_name(act_name, &cfg->activation))
            r = pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: activation \"%s\" is not supported", path, act_name);
    }
    if (!r) r = pf__config_rope(json, cfg, path, message, size);
    if (!r && cfg->num_layers > 0 && cfg->num_layers <= 100000) r = pf__config_layer_windows(json, a, cfg, path, message, size);
    pf__json_free(json);
    if (r) return r;

    if (cfg->intermediate_size == 0) cfg->intermediate_size = a->mlp_ratio * cfg->hidden_size;
    if (cfg->num_kv_heads == 0) cfg->num_kv_heads = cfg->num_heads;
    if (cfg->head_dim == 0 && cfg->num_heads > 0 && cfg->hidden_size % cfg->num_heads == 0)
        cfg->head_dim = cfg->hidden_size / cfg->num_heads; /* else inconsistent, below */
    if (cfg->embed_dim == 0) cfg->embed_dim = cfg->hidden_size;
    if (cfg->hidden_size <= 0 || cfg->num_heads <= 0 || cfg->num_layers <= 0 || cfg->num_layers > 100000 ||
        cfg->vocab_size <= 0 || cfg->max_positions <= 0 || cfg->intermediate_size <= 0 || cfg->head_dim <= 0 ||
        cfg->num_kv_heads <= 0 || cfg->num_heads % cfg->num_kv_heads)
        return pf__format(message, size, PF_ERROR_FORMAT,
                          "%s: inconsistent sizes (hidden %d, heads %d, kv heads %d, head dim %d, layers %d, vocab %d, "
                          "positions %d, intermediate %d)",
                          path, cfg->hidden_size, cfg->num_heads, cfg->num_kv_heads, cfg->head_dim, cfg->num_layers,
                          cfg->vocab_size, cfg->max_positions, cfg->intermediate_size);
    if (cfg->final_norm_eps == 0) cfg->final_norm_eps = cfg->norm_eps;
    if (!(cfg->norm_eps > 0 && cfg->norm_eps < 1) || !(cfg->final_norm_eps > 0 && cfg->final_norm_eps < 1))
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: norm epsilon %g is not in (0, 1)", path, cfg->norm_eps);
    if (a->positions == PF__POS_ROTARY_HALVES || a->positions == PF__POS_ROTARY_PAIRS) {
        if (cfg->rotary_dim == 0) cfg->rotary_dim = (int)(cfg->head_dim * cfg->rotary_pct);
        if (cfg->rotary_dim <= 0 || cfg->rotary_dim > cfg->head_dim || cfg->rotary_dim % 2 || !(cfg->rope_theta > 0))
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: rotary dims %d do not fit heads of %d", path,
                              cfg->rotary_dim, cfg->head_dim);
    }
    return PF_OK;
}

/* Logical [rows (out), cols (in)] of a slot; cols 1 for vectors. */
static void pf__slot_shape(const pf__config *c, pf__slot slot, size_t *rows, size_t *cols) {
    size_t h = (size_t)c->hidden_size, in = (size_t)c->intermediate_size, e = (size_t)c->embed_dim;
    size_t q = (size_t)c->num_heads * c->head_dim, kv = (size_t)c->num_kv_heads * c->head_dim;
    *cols = 1;
    switch (slot) {
    case PF__SLOT_TOKEN_EMBED: case PF__SLOT_LM_HEAD: *rows = (size_t)c->vocab_size; *cols = e; break;
    case PF__SLOT_LM_HEAD_BIAS: *rows = (size_t)c->vocab_size; break;
    case PF__SLOT_POSITION_EMBED: *rows = (size_t)c->max_positions + c->position_offset; *cols = h; break;
    case PF__SLOT_PROJECT_IN: *rows = h; *cols = e; break;
    case PF__SLOT_PROJECT_OUT: *rows = e; *cols = h; break;
    case PF__SLOT_QKV_FUSED_WEIGHT: *rows = q + 2 * kv; *cols = h; break;
    case PF__SLOT_QKV_FUSED_BIAS: *rows = q + 2 * kv; break;
    case PF__SLOT_Q_WEIGHT: *rows = q; *cols = h; break;
    case PF__SLOT_Q_BIAS: *rows = q; break;
    case PF__SLOT_K_WEIGHT: case PF__SLOT_V_WEIGHT: *rows = kv; *cols = h; break;
    case PF__SLOT_K_BIAS: case PF__SLOT_V_BIAS: *rows = kv; break;
    case PF__SLOT_ATTN_OUT_WEIGHT: *rows = h; *cols = q; break;
    case PF__SLOT_MLP_GATE_WEIGHT: case PF__SLOT_MLP_UP_WEIGHT: *rows = in; *cols = h; break;
    case PF__SLOT_MLP_GATE_BIAS: case PF__SLOT_MLP_UP_BIAS: *rows = in; break;
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
    const int32_t *ids;     /* host, [batch][seq_len] */
    int batch, seq_len;
    int past;               /* tokens already in the KV cache of each sequence */
    const float *inv_freq;  /* host, [rotary_dim / 2]: rotary frequencies for this step, or NULL */
    const int *pad;         /* host, [batch]: left pads of each sequence (masked keys; positions
                               count from the first real token), or NULL */
} pf__step;

/* The attention of one layer on one rank. Local query head h reads key/value head
   (head_begin + h) / kv_group - kv_begin of the rank's cache. */
typedef struct pf__attn_shape {
    int heads, kv_heads, head_dim;
    int head_begin, kv_begin, kv_group;
    int cache_len;
    int window;             /* keys j with pos - j < window; 0: all earlier keys */
    int rotary_dim;         /* for the rotary op */
    float scale;
    const float *alibi;     /* device, [heads]: score += slope * key position; NULL: none */
} pf__attn_shape;

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
    /* device to device */
    void (*copy)(pf__rank *r, void *dst, const void *src, size_t bytes);
    /* out[b*T+t] = tokens[ids[b][t]] * scale */
    void (*embed)(pf__rank *r, float *out, const pf__weight *tokens, const pf__step *s, float scale);
    /* x[b*T+t] += table[offset + past + t] */
    void (*add_positions)(pf__rank *r, float *x, const pf__weight *table, const pf__step *s, int offset);
    /* LayerNorm: (x - mean) / sqrt(var + eps) * weight + bias; RMSNorm: x / sqrt(mean(x^2) + eps)
       * weight; per row of n; out may be x */
    void (*norm)(pf__rank *r, float *out, const float *x, const pf__weight *weight, const pf__weight *bias,
                 size_t rows, size_t n, float eps, pf__norm kind);
    /* out[rows][w.rows] = x[rows][w.cols] w^T (+ bias) */
    void (*matmul)(pf__rank *r, float *out, const float *x, const pf__weight *w, const pf__weight *bias, size_t rows);
    /* x = act(x) */
    void (*activation)(pf__rank *r, float *x, size_t count, pf__activation act);
    /* out[row][i] = act(in[row][i]) * in[row][width + i]: gate and up side by side */
    void (*gated_activation)(pf__rank *r, float *out, const float *in, size_t rows, size_t width, pf__activation act);
    /* x[rows][n] += y (+ bias); y may be NULL (bias alone) */
    void (*add_residual)(pf__rank *r, float *x, const float *y, const pf__weight *bias, size_t rows, size_t n);
    /* Rotates the first a->rotary_dim dims of every q and k head in the qkv rows by position
       past + t: dims (i, i + rotary_dim/2), or (2i, 2i + 1) when pairs. */
    void (*rotary)(pf__rank *r, float *qkv, const pf__step *s, const pf__attn_shape *a, int pairs);
    /* Appends this step's k, v to the caches [batch][cache_len][kv_heads*head_dim] and writes
       out[b*T+t] = softmax(q k^T * scale + alibi) v over the keys the query may see.
       qkv rows are [q (heads*head_dim) | k (kv_heads*head_dim) | v (kv_heads*head_dim)]. */
    void (*attention)(pf__rank *r, float *out, const float *qkv, float *k_cache, float *v_cache,
                      const pf__step *s, const pf__attn_shape *a);
    /* x = sum of x over all ranks, identical on every rank afterwards */
    void (*all_reduce)(pf__rank *r, float *x, size_t count);
    /* Beam search: row i of a cache [rows][row_floats] becomes old row src[i] (host array), for
       the first used_floats of each row. */
    void (*reorder_rows)(pf__rank *r, float *cache, const int *src, int rows, size_t row_floats, size_t used_floats);
} pf__backend;

/* A share of the split dimensions held by one rank. */
typedef struct pf__share {
    int head_begin, heads;
    int kv_begin, kv_heads; /* the key/value heads its query heads read (replicated if shared) */
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
    float *alibi;             /* [heads]: the rank's ALiBi slopes, or NULL */
    float *k_cache, *v_cache; /* [layers][max_batch][cache_len][kv_heads * head_dim] */
    /* scratch, [max_tokens][width] */
    float *x, *h, *part;      /* width hidden */
    float *embed;             /* width embed_dim, when the embedding is projected in */
    float *qkv;               /* width (heads + 2 kv_heads) * head_dim */
    float *attn;              /* width heads * head_dim */
    float *mlp;               /* width mlp_width (times 2 when gated) */
    float *mlp_act;           /* width mlp_width, when gated */
    float *logits;            /* rank 0 only: [logit_rows][vocab] */
    float *scores;            /* CPU attention: [cache_len] */
    float *reduce_tmp;        /* CPU all-reduce: [max_tokens * hidden] */
    float *reorder_tmp;       /* CPU beam reorder: one layer's cache, when max_batch > 1 */
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

static void pf__cpu_embed(pf__rank *r, float *out, const pf__weight *tokens, const pf__step *s, float scale) {
    (void)r;
    size_t d = tokens->cols, n = (size_t)s->batch * s->seq_len;
    const float *table = (const float *)tokens->data;
    for (size_t row = 0; row < n; row++)
        for (size_t i = 0; i < d; i++) out[row * d + i] = table[(size_t)s->ids[row] * d + i] * scale;
}

static void pf__cpu_add_positions(pf__rank *r, float *x, const pf__weight *table, const pf__step *s, int offset) {
    (void)r;
    size_t d = table->cols;
    const float *pos = (const float *)table->data;
    for (int b = 0; b < s->batch; b++)
        for (int t = 0; t < s->seq_len; t++) {
            float *row = x + ((size_t)b * s->seq_len + t) * d;
            int position = s->past + t - (s->pad ? s->pad[b] : 0);
            const float *p = pos + (size_t)(offset + (position > 0 ? position : 0)) * d;
            for (size_t i = 0; i < d; i++) row[i] += p[i];
        }
}

static void pf__cpu_norm(pf__rank *r, float *out, const float *x, const pf__weight *weight, const pf__weight *bias,
                         size_t rows, size_t n, float eps, pf__norm kind) {
    (void)r;
    const float *g = (const float *)weight->data, *b = bias ? (const float *)bias->data : NULL;
    for (size_t row = 0; row < rows; row++) {
        const float *xr = x + row * n;
        float *o = out + row * n;
        double mean = 0, var = 0;
        if (kind == PF__NORM_LAYER) {
            for (size_t i = 0; i < n; i++) mean += xr[i];
            mean /= (double)n;
        }
        for (size_t i = 0; i < n; i++) var += (xr[i] - mean) * (xr[i] - mean);
        var /= (double)n;
        float inv = (float)(1.0 / sqrt(var + eps));
        for (size_t i = 0; i < n; i++) o[i] = (float)(xr[i] - mean) * inv * g[i] + (b ? b[i] : 0.0f);
    }
}

/* Dot product in double with four independent sums: fp32 products summed without fp32
   rounding, so that a sum split over ranks differs from the whole by little more than the final
   rounding, and the compiler can vectorise it without -ffast-math. */
static float pf__dot(const float *a, const float *b, size_t n) {
    double s[4] = {0, 0, 0, 0};
    size_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (int k = 0; k < 4; k++) s[k] += (double)a[i + k] * b[i + k];
    double sum = (s[0] + s[1]) + (s[2] + s[3]);
    for (; i < n; i++) sum += (double)a[i] * b[i];
    return (float)sum;
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

static float pf__act(float v, pf__activation act) {
    switch (act) {
    case PF__ACT_GELU_TANH: return 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
    case PF__ACT_GELU_ERF: return 0.5f * v * (1.0f + erff(v * 0.7071067811865476f));
    case PF__ACT_RELU: return v > 0 ? v : 0;
    case PF__ACT_SILU: return v / (1.0f + expf(-v));
    }
    return v;
}

static void pf__cpu_activation(pf__rank *r, float *x, size_t count, pf__activation act) {
    (void)r;
    for (size_t i = 0; i < count; i++) x[i] = pf__act(x[i], act);
}

static void pf__cpu_gated_activation(pf__rank *r, float *out, const float *in, size_t rows, size_t width,
                                     pf__activation act) {
    (void)r;
    for (size_t row = 0; row < rows; row++)
        for (size_t i = 0; i < width; i++)
            out[row * width + i] = pf__act(in[row * 2 * width + i], act) * in[row * 2 * width + width + i];
}

static void pf__cpu_add_residual(pf__rank *r, float *x, const float *y, const pf__weight *bias, size_t rows,
                                 size_t n) {
    (void)r;
    const float *b = bias ? (const float *)bias->data : NULL;
    for (size_t row = 0; row < rows; row++)
        for (size_t i = 0; i < n; i++) x[row * n + i] += (y ? y[row * n + i] : 0.0f) + (b ? b[i] : 0.0f);
}

static void pf__cpu_rotary(pf__rank *r, float *qkv, const pf__step *s, const pf__attn_shape *a, int pairs) {
    (void)r;
    size_t hd = (size_t)a->head_dim, width = (size_t)(a->heads + 2 * a->kv_heads) * hd;
    int half = a->rotary_dim / 2, rotated_heads = a->heads + a->kv_heads; /* q heads, then k heads */
    for (int b = 0; b < s->batch; b++)
        for (int t = 0; t < s->seq_len; t++) {
            float *row = qkv + ((size_t)b * s->seq_len + t) * width;
            int position = s->past + t - (s->pad ? s->pad[b] : 0);
            float pos = (float)(position > 0 ? position : 0);
            for (int i = 0; i < half; i++) {
                float angle = pos * s->inv_freq[i]; /* fp32, as transformers computes it */
                float c = cosf(angle), sn = sinf(angle);
                size_t i1 = pairs ? 2 * (size_t)i : (size_t)i, i2 = pairs ? i1 + 1 : (size_t)(i + half);
                for (int h = 0; h < rotated_heads; h++) {
                    float *x = row + (size_t)h * hd;
                    float x1 = x[i1], x2 = x[i2];
                    x[i1] = x1 * c - x2 * sn;
                    x[i2] = x2 * c + x1 * sn;
                }
            }
        }
}

static void pf__cpu_attention(pf__rank *r, float *out, const float *qkv, float *k_cache, float *v_cache,
                              const pf__step *s, const pf__attn_shape *a) {
    size_t hd = (size_t)a->head_dim, q_width = (size_t)a->heads * hd, kv_width = (size_t)a->kv_heads * hd;
    size_t row_width = q_width + 2 * kv_width, T = (size_t)s->seq_len;
    if (!a->heads) return;
    for (int b = 0; b < s->batch; b++) {
        float *kc = k_cache + (size_t)b * a->cache_len * kv_width, *vc = v_cache + (size_t)b * a->cache_len * kv_width;
        for (size_t t = 0; t < T; t++) {
            const float *row = qkv + ((size_t)b * T + t) * row_width;
            memcpy(kc + (s->past + t) * kv_width, row + q_width, kv_width * sizeof(float));
            memcpy(vc + (s->past + t) * kv_width, row + q_width + kv_width, kv_width * sizeof(float));
        }
        size_t pad = s->pad ? (size_t)s->pad[b] : 0; /* left pads are never keys */
        for (size_t t = 0; t < T; t++) {
            size_t pos = (size_t)s->past + t, first = pad; /* keys first..pos */
            if (a->window && pos + 1 > (size_t)a->window && pos + 1 - (size_t)a->window > first) first = pos + 1 - (size_t)a->window;
            const float *q_row = qkv + ((size_t)b * T + t) * row_width;
            float *o_row = out + ((size_t)b * T + t) * q_width;
            if (first > pos) { /* a pad's own query: nothing to see, and nobody reads it */
                memset(o_row, 0, q_width * sizeof(float));
                continue;
            }
            for (int h = 0; h < a->heads; h++) {
                const float *q = q_row + (size_t)h * hd;
                size_t kv = (size_t)((a->head_begin + h) / a->kv_group - a->kv_begin) * hd;
                float slope = a->alibi ? a->alibi[h] : 0.0f, max = -INFINITY;
                for (size_t j = first; j <= pos; j++) {
                    float score = pf__dot(q, kc + j * kv_width + kv, hd) * a->scale + slope * (float)(j - pad);
                    r->scores[j] = score;
                    if (score > max) max = score;
                }
                double sum = 0;
                for (size_t j = first; j <= pos; j++) {
                    r->scores[j] = expf(r->scores[j] - max);
                    sum += r->scores[j];
                }
                float *o = o_row + (size_t)h * hd;
                for (size_t i = 0; i < hd; i++) o[i] = 0;
                for (size_t j = first; j <= pos; j++) {
                    float p = (float)(r->scores[j] / sum);
                    const float *v = vc + j * kv_width + kv;
                    for (size_t i = 0; i < hd; i++) o[i] += p * v[i];
                }
            }
        }
    }
}

static void pf__cpu_reorder_rows(pf__rank *r, float *cache, const int *src, int rows, size_t row_floats,
                                 size_t used_floats) {
    for (int i = 0; i < rows; i++) memcpy(r->reorder_tmp + i * used_floats, cache + src[i] * row_floats, used_floats * sizeof(float));
    for (int i = 0; i < rows; i++) memcpy(cache + i * row_floats, r->reorder_tmp + i * used_floats, used_floats * sizeof(float));
}

static int pf__barrier(pf__group *g);
static void pf__cpu_all_reduce(pf__rank *r, float *x, size_t count);

static const pf__backend pf__cpu_backend = {
    "cpu", 1, NULL, NULL, pf__cpu_rank_begin, pf__cpu_rank_end, pf__cpu_alloc, pf__cpu_free, pf__cpu_copy,
    pf__cpu_copy, pf__cpu_copy, pf__cpu_embed, pf__cpu_add_positions, pf__cpu_norm, pf__cpu_matmul, pf__cpu_activation,
    pf__cpu_gated_activation, pf__cpu_add_residual, pf__cpu_rotary, pf__cpu_attention, pf__cpu_all_reduce,
    pf__cpu_reorder_rows,
};

/* =============================================================================================== */
/* rank threads, barrier and all-reduce                                                            */
/* =============================================================================================== */

typedef enum { PF__JOB_SETUP, PF__JOB_FORWARD, PF__JOB_GATHER, PF__JOB_REORDER, PF__JOB_QUIT } pf__job_kind;

typedef struct pf__job {
    pf__job_kind kind;
    pf__step step;        /* FORWARD */
    float *logits;        /* FORWARD: host, rank 0 writes [batch][seq_len or 1][vocab] */
    int all_positions;    /* FORWARD: logits of every position, else of each sequence's last */
    const int *reorder;   /* REORDER: host [step.batch], the old cache row of each row; the
                             first step.past positions move */
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
    float *inv_freq;      /* host: [rotary_dim / 2], the rotary frequencies of the current step */
    int rope_cached_len;  /* dynamic rope: the longest sequence its frequencies were grown for */
    pthread_mutex_t request_lock; /* requests from several threads run one after another */
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
static void pf__rank_reorder(pf__rank *r, const pf__job *job);

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
        else if (job.kind == PF__JOB_REORDER) pf__rank_reorder(r, &job);
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
            return pf__format(pf__error_buffer(g->model), PF__MESSAGE_SIZE, r->error, "rank %d (%s): %s", i,
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

/* The heads and MLP columns of rank r of n: contiguous, as even as the sizes allow. Key/value
   heads follow the query heads: a rank holds every one its query heads read, so with fewer
   key/value heads than ranks they are replicated. */
static pf__share pf__share_for(const pf__config *c, int r, int n) {
    pf__share s;
    int group = c->num_heads / c->num_kv_heads;
    s.head_begin = (int)((long long)r * c->num_heads / n);
    s.heads = (int)((long long)(r + 1) * c->num_heads / n) - s.head_begin;
    s.kv_begin = s.head_begin / group;
    s.kv_heads = s.heads ? (s.head_begin + s.heads - 1) / group + 1 - s.kv_begin : 0;
    s.mlp_begin = (int)((long long)r * c->intermediate_size / n);
    s.mlp_width = (int)((long long)(r + 1) * c->intermediate_size / n) - s.mlp_begin;
    return s;
}

/* =============================================================================================== */
/* slicing weights onto ranks                                                                      */
/* =============================================================================================== */

/* Which part of a logical [rows, cols] tensor a rank holds: rows row_map[0..rows) (or the
   contiguous rows row_begin.. when row_map is NULL) and columns col_begin..+cols. */
typedef struct pf__plan {
    size_t rows, row_begin;
    size_t *row_map; /* owned; fused q|k|v rows are scattered through the tensor */
    size_t cols, col_begin;
} pf__plan;

/* Row of element d of head h of part (0 q, 1 k, 2 v) in a fused QKV tensor. */
static size_t pf__qkv_row(const pf__config *c, pf__qkv_layout layout, int part, int h, int d) {
    size_t hd = (size_t)c->head_dim, H = (size_t)c->num_heads;
    switch (layout) {
    case PF__QKV_BLOCKS: return (size_t)part * H * hd + (size_t)h * hd + (size_t)d;
    case PF__QKV_PER_HEAD: return (size_t)h * 3 * hd + (size_t)part * hd + (size_t)d;
    case PF__QKV_CODEGEN: { /* 4 blocks, each [q | v | k] of H/4 heads */
        size_t per_block = H / 4, local = per_block * hd, in_block[3] = {0, 2, 1};
        return ((size_t)h / per_block) * 3 * local + in_block[part] * local + ((size_t)h % per_block) * hd + (size_t)d;
    }
    }
    return 0;
}

static int pf__plan_for(const pf__config *c, const pf__share *s, const pf__source *src, pf__plan *p) {
    size_t hd = (size_t)c->head_dim;
    memset(p, 0, sizeof *p);
    p->rows = src->rows;
    p->cols = src->cols;
    switch (src->split) {
    case PF__SPLIT_NONE: break;
    case PF__SPLIT_QKV_COLUMNS: { /* the rank's q heads, then k heads, then v heads */
        p->rows = 3 * (size_t)s->heads * hd;
        if (!p->rows) break;
        p->row_map = (size_t *)malloc(p->rows * sizeof *p->row_map);
        if (!p->row_map) return -1;
        size_t k = 0;
        for (int part = 0; part < 3; part++)
            for (int h = s->head_begin; h < s->head_begin + s->heads; h++)
                for (size_t d = 0; d < hd; d++) p->row_map[k++] = pf__qkv_row(c, pf__archs[c->arch].qkv_layout, part, h, (int)d);
        break;
    }
    case PF__SPLIT_HEAD_COLUMNS: p->row_begin = (size_t)s->head_begin * hd, p->rows = (size_t)s->heads * hd; break;
    case PF__SPLIT_KV_COLUMNS: p->row_begin = (size_t)s->kv_begin * hd, p->rows = (size_t)s->kv_heads * hd; break;
    case PF__SPLIT_MLP_COLUMNS: p->row_begin = (size_t)s->mlp_begin, p->rows = (size_t)s->mlp_width; break;
    case PF__SPLIT_HEAD_ROWS: p->col_begin = (size_t)s->head_begin * hd, p->cols = (size_t)s->heads * hd; break;
    case PF__SPLIT_MLP_ROWS: p->col_begin = (size_t)s->mlp_begin, p->cols = (size_t)s->mlp_width; break;
    }
    return 0;
}

static size_t pf__plan_row(const pf__plan *p, size_t i) { return p->row_map ? p->row_map[i] : p->row_begin + i; }

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
   layout on the way, walking the file in its own order. */
static void pf__slice_copy(float *dst, const pf__source *src, const pf__plan *p) {
    if (src->layout == PF__LAYOUT_IN_OUT) {
        for (size_t c = 0; c < p->cols; c++)
            for (size_t i = 0; i < p->rows; i++) dst[i * p->cols + c] = pf__source_get(src, pf__plan_row(p, i), p->col_begin + c);
    } else {
        for (size_t i = 0; i < p->rows; i++)
            for (size_t c = 0; c < p->cols; c++) dst[i * p->cols + c] = pf__source_get(src, pf__plan_row(p, i), p->col_begin + c);
    }
}

/* The inverse of pf__slice_copy into a full host array [rows, cols] (pf_to_cpu). */
static void pf__slice_scatter(float *full, size_t full_cols, const float *slice, const pf__plan *p) {
    for (size_t i = 0; i < p->rows; i++)
        memcpy(full + pf__plan_row(p, i) * full_cols + p->col_begin, slice + i * p->cols, p->cols * sizeof(float));
}

/* Tied LM head: the slot has no source of its own and shares the token embedding. */
static int pf__slot_tied(const pf_model *m, size_t slot) {
    return slot == PF__SLOT_LM_HEAD && !m->sources[slot].data;
}

/* The stack a slot belongs to (as a member), or NULL. */
static const struct pf__stack *pf__stack_of(pf__slot slot) {
    for (size_t i = 0; i < PF__COUNT(pf__stacks); i++)
        for (int k = 0; k < pf__stacks[i].num_members; k++)
            if (pf__stacks[i].members[k] == slot) return &pf__stacks[i];
    return NULL;
}

/* Slices one source into rank memory at dst ([plan rows, plan cols] in the group's dtype). */
static void pf__rank_fill(pf__rank *r, void *dst, const pf__source *src, const pf__plan *p, float **staging,
                          size_t *staging_size) {
    pf__dtype dtype = r->group->dtype;
    size_t numel = p->rows * p->cols;
    if (!numel) return;
    if (r->backend->host_memory && dtype == PF__DTYPE_F32) {
        pf__slice_copy((float *)dst, src, p);
        return;
    }
    if (numel * sizeof(float) > *staging_size) { /* one slice at a time: never a second full copy */
        free(*staging);
        *staging_size = numel * sizeof(float);
        *staging = (float *)malloc(*staging_size);
        if (!*staging) {
            *staging_size = 0;
            pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory for a %zu-byte staging slice", numel * sizeof(float));
            return;
        }
    }
    float *f = *staging;
    pf__slice_copy(f, src, p);
    if (dtype != PF__DTYPE_F32) { /* convert in place: 2-byte values behind the 4-byte ones */
        uint16_t *half = (uint16_t *)f;
        for (size_t k = 0; k < numel; k++) half[k] = dtype == PF__DTYPE_F16 ? pf__f32_to_f16(f[k]) : pf__f32_to_bf16(f[k]);
    }
    r->backend->upload(r, dst, f, numel * pf__dtype_size(dtype));
}

/* Host tables a rank needs besides the checkpoint's tensors: uploaded into rank memory. */
static void *pf__rank_upload_table(pf__rank *r, const float *table, size_t count) {
    float *dst = (float *)pf__rank_alloc(r, count * sizeof(float));
    if (dst) r->backend->upload(r, dst, table, count * sizeof(float));
    return dst;
}

/* ALiBi slopes of heads [first, first + count) of n (BLOOM's recipe: a geometric series from the
   largest power of two below n, interleaved with a second series for the remaining heads). */
static void pf__alibi_slopes(int n, int first, int count, float *out) {
    int p = 1;
    while (p * 2 <= n) p *= 2;
    double base = pow(2.0, -pow(2.0, -(log2((double)p) - 3))), extra = pow(2.0, -pow(2.0, -(log2(2.0 * p) - 3)));
    for (int i = 0; i < count; i++) {
        int h = first + i;
        out[i] = (float)(h < p ? pow(base, h + 1) : pow(extra, 2 * (h - p) + 1));
    }
}

/* CTRL's sinusoid: row pos holds sin(pos * rate(2k)) for k < d/2, then cos(pos * rate(2k + 1)),
   rate(i) = 1 / 10000^(2 (i / 2) / d), in fp32 as transformers computes it. */
static void pf__sinusoid_table(float *out, size_t positions, size_t d) {
    for (size_t pos = 0; pos < positions; pos++)
        for (size_t k = 0; k < d / 2; k++) {
            float rate = 1.0f / powf(10000.0f, (float)(2 * k) / (float)d);
            float angle = (float)pos * rate;
            out[pos * d + k] = sinf(angle);
            out[pos * d + d / 2 + k] = cosf(angle);
        }
}

/* Runs on the rank's thread: slices every weight into the rank's memory (stacked slots as one
   allocation with their members as views into it), then the KV cache and scratch. */
static void pf__rank_setup(pf__rank *r) {
    pf__group *g = r->group;
    const pf_model *m = g->model;
    const pf__config *c = &m->config;
    const pf__arch *a = &pf__archs[c->arch];
    size_t num_slots = pf__num_slots(c), dsize = pf__dtype_size(g->dtype);
    r->weights = (pf__weight *)calloc(num_slots, sizeof *r->weights);
    if (!r->weights) {
        pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory");
        return;
    }
    r->allocating = PF__MEM_WEIGHTS;
    float *staging = NULL;
    size_t staging_size = 0;
    for (size_t i = 0; i < num_slots && !r->error; i++) {
        pf__slot slot = (pf__slot)(i < PF__SLOT_FIRST_LAYER ? i : PF__SLOT_FIRST_LAYER + (i - PF__SLOT_FIRST_LAYER) % PF__LAYER_SLOTS);
        size_t layer_base = i - (size_t)slot;
        const struct pf__stack *stack = NULL;
        for (size_t k = 0; k < PF__COUNT(pf__stacks); k++)
            if (pf__stacks[k].target == slot) stack = &pf__stacks[k];
        if (stack) { /* one allocation, the members' slices one after another */
            pf__plan plans[4];
            size_t rows = 0, cols = 0;
            int n = 0;
            for (int k = 0; k < stack->num_members; k++) {
                const pf__source *src = &m->sources[layer_base + stack->members[k]];
                if (!src->data) continue;
                if (pf__plan_for(c, &r->share, src, &plans[n])) {
                    pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory");
                    break;
                }
                rows += plans[n].rows;
                cols = plans[n++].cols;
            }
            pf__weight *w = &r->weights[i];
            w->dtype = g->dtype;
            w->rows = rows;
            w->cols = cols;
            w->data = r->error ? NULL : pf__rank_alloc(r, rows * cols * dsize);
            size_t offset = 0;
            n = 0;
            for (int k = 0; k < stack->num_members; k++) {
                const pf__source *src = &m->sources[layer_base + stack->members[k]];
                if (!src->data) continue;
                pf__plan *p = &plans[n++];
                pf__weight *member = &r->weights[layer_base + stack->members[k]];
                member->dtype = g->dtype;
                member->rows = p->rows;
                member->cols = p->cols;
                member->data = w->data ? (char *)w->data + offset * cols * dsize : NULL;
                if (member->data) pf__rank_fill(r, member->data, src, p, &staging, &staging_size);
                offset += p->rows;
                free(p->row_map);
            }
            continue;
        }
        const pf__source *src = &m->sources[i];
        if (!src->data || pf__stack_of(slot)) continue;
        pf__plan p;
        if (pf__plan_for(c, &r->share, src, &p)) {
            pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory");
            break;
        }
        pf__weight *w = &r->weights[i];
        w->rows = p.rows;
        w->cols = p.cols;
        w->dtype = g->dtype;
        w->data = pf__rank_alloc(r, p.rows * p.cols * dsize);
        if (w->data) pf__rank_fill(r, w->data, src, &p, &staging, &staging_size);
        free(p.row_map);
    }
    free(staging);
    if (r->error) return;
    if (pf__slot_tied(m, PF__SLOT_LM_HEAD)) r->weights[PF__SLOT_LM_HEAD] = r->weights[PF__SLOT_TOKEN_EMBED];

    size_t hd = (size_t)c->head_dim, hidden = (size_t)c->hidden_size, T = g->max_tokens;
    /* Tables computed here rather than read: the sinusoid and the ALiBi slopes, in fp32. */
    size_t table_size = a->positions == PF__POS_SINUSOIDAL ? (size_t)g->cache_len * hidden : (size_t)r->share.heads;
    float *table = table_size ? (float *)malloc(table_size * sizeof(float)) : NULL;
    if (table_size && !table) {
        pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory");
        return;
    }
    if (a->positions == PF__POS_SINUSOIDAL) {
        pf__sinusoid_table(table, (size_t)g->cache_len, hidden);
        pf__weight *w = &r->weights[PF__SLOT_POSITION_EMBED];
        w->dtype = PF__DTYPE_F32;
        w->rows = (size_t)g->cache_len;
        w->cols = hidden;
        w->data = pf__rank_upload_table(r, table, table_size);
    } else if (a->positions == PF__POS_ALIBI && r->share.heads) {
        pf__alibi_slopes(c->num_heads, r->share.head_begin, r->share.heads, table);
        r->alibi = (float *)pf__rank_upload_table(r, table, table_size);
    }
    free(table);

    size_t q_width = (size_t)r->share.heads * hd, kv_width = (size_t)r->share.kv_heads * hd;
    size_t mlp_in = (size_t)r->share.mlp_width * (a->mlp == PF__MLP_GATED ? 2 : 1);
    size_t cache = (size_t)c->num_layers * g->max_batch * g->cache_len * kv_width * sizeof(float);
    r->allocating = PF__MEM_CACHE;
    r->k_cache = (float *)pf__rank_alloc(r, cache);
    r->v_cache = (float *)pf__rank_alloc(r, cache);
    r->allocating = PF__MEM_SCRATCH;
    size_t wide = hidden > (size_t)c->embed_dim ? hidden : (size_t)c->embed_dim; /* OPT's project_out */
    r->x = (float *)pf__rank_alloc(r, T * hidden * sizeof(float));
    r->h = (float *)pf__rank_alloc(r, T * hidden * sizeof(float));
    r->part = (float *)pf__rank_alloc(r, T * wide * sizeof(float));
    if (m->sources[PF__SLOT_PROJECT_IN].data) r->embed = (float *)pf__rank_alloc(r, T * c->embed_dim * sizeof(float));
    r->qkv = (float *)pf__rank_alloc(r, T * (q_width + 2 * kv_width) * sizeof(float));
    r->attn = (float *)pf__rank_alloc(r, T * q_width * sizeof(float));
    r->mlp = (float *)pf__rank_alloc(r, T * mlp_in * sizeof(float));
    if (a->mlp == PF__MLP_GATED) r->mlp_act = (float *)pf__rank_alloc(r, T * r->share.mlp_width * sizeof(float));
    if (r->index == 0) r->logits = (float *)pf__rank_alloc(r, g->logit_rows * c->vocab_size * sizeof(float));
    if (r->backend == &pf__cpu_backend) {
        r->scores = (float *)pf__rank_alloc(r, (size_t)g->cache_len * sizeof(float));
        if (g->num_ranks > 1) r->reduce_tmp = (float *)pf__rank_alloc(r, T * hidden * sizeof(float));
        if (g->max_batch > 1) r->reorder_tmp = (float *)pf__rank_alloc(r, (size_t)g->max_batch * g->cache_len * kv_width * sizeof(float));
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
        pf__plan p;
        if (pf__plan_for(&m->config, &r->share, src, &p)) {
            pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory");
            return;
        }
        pf__weight w = r->weights[i];
        if (src->split == PF__SPLIT_KV_COLUMNS && w.rows && r->share.head_begin % (m->config.num_heads / m->config.num_kv_heads)) {
            /* Its first key/value head belongs to the rank before, which writes it. */
            size_t hd = (size_t)m->config.head_dim;
            w.rows -= hd;
            w.data = (char *)w.data + hd * w.cols * pf__dtype_size(w.dtype);
            p.row_begin += hd;
            p.rows -= hd;
        }
        size_t numel = w.rows * w.cols;
        float *slice = numel ? (float *)malloc(numel * sizeof(float)) : NULL;
        if (numel && !slice) {
            free(p.row_map);
            pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory");
            return;
        }
        if (numel) {
            r->backend->download(r, slice, w.data, numel * pf__dtype_size(w.dtype));
            if (w.dtype != PF__DTYPE_F32) { /* widen in place, from the back */
                const uint16_t *half = (const uint16_t *)slice;
                for (size_t k = numel; k-- > 0;)
                    slice[k] = w.dtype == PF__DTYPE_F16 ? pf__f16_to_f32(half[k]) : pf__bf16_to_f32(half[k]);
            }
            pf__slice_scatter(g->gather[i], src->cols, slice, &p);
        }
        free(slice);
        free(p.row_map);
    }
}

/* =============================================================================================== */
/* forward pass                                                                                    */
/* =============================================================================================== */

/* Runs on every rank's thread with the same step; rank 0 also computes the logits. */
static void pf__rank_forward(pf__rank *r, const pf__job *job) {
    const pf__group *g = r->group;
    const pf__config *c = &g->model->config;
    const pf__arch *a = &pf__archs[c->arch];
    const pf__backend *be = r->backend;
    const pf__step *s = &job->step;
    const pf__weight *W = r->weights;
    size_t N = (size_t)s->batch * s->seq_len, d = (size_t)c->hidden_size;
    float eps = (float)c->norm_eps;
    size_t kv_width = (size_t)r->share.kv_heads * c->head_dim;
    size_t cache_stride = (size_t)g->max_batch * g->cache_len * kv_width; /* one layer's cache */
    int rotary = a->positions == PF__POS_ROTARY_HALVES || a->positions == PF__POS_ROTARY_PAIRS;
#define PF__HAS(w) ((w).data != NULL)
#define PF__OR_NULL(w) (PF__HAS(w) ? &(w) : NULL)

    /* x = token embedding (* sqrt(hidden)) (projected in) (+ position table) (normed) */
    float embed_scale = c->embed_scale_sqrt ? sqrtf((float)d) : 1.0f;
    if (PF__HAS(W[PF__SLOT_PROJECT_IN])) {
        be->embed(r, r->embed, &W[PF__SLOT_TOKEN_EMBED], s, embed_scale);
        be->matmul(r, r->x, r->embed, &W[PF__SLOT_PROJECT_IN], NULL, N);
    } else {
        be->embed(r, r->x, &W[PF__SLOT_TOKEN_EMBED], s, embed_scale);
    }
    if (PF__HAS(W[PF__SLOT_POSITION_EMBED])) be->add_positions(r, r->x, &W[PF__SLOT_POSITION_EMBED], s, c->position_offset);
    if (PF__HAS(W[PF__SLOT_EMBED_NORM_WEIGHT]))
        be->norm(r, r->x, r->x, &W[PF__SLOT_EMBED_NORM_WEIGHT], PF__OR_NULL(W[PF__SLOT_EMBED_NORM_BIAS]), N, d, eps, a->norm);

    pf__attn_shape shape;
    shape.heads = r->share.heads;
    shape.kv_heads = r->share.kv_heads;
    shape.head_dim = c->head_dim;
    shape.head_begin = r->share.head_begin;
    shape.kv_begin = r->share.kv_begin;
    shape.kv_group = c->num_heads / c->num_kv_heads;
    shape.cache_len = g->cache_len;
    shape.rotary_dim = c->rotary_dim;
    shape.alibi = r->alibi;
    size_t mlp_width = (size_t)r->share.mlp_width;

    for (int l = 0; l < c->num_layers && !pf__rank_failed(r); l++) {
        const pf__weight *L = W + pf__slot_index(PF__SLOT_FIRST_LAYER, l) - PF__SLOT_FIRST_LAYER;
        shape.scale = c->scale_attn_weights ? 1.0f / sqrtf((float)c->head_dim) : 1.0f;
        if (c->scale_attn_by_inverse_layer_idx) shape.scale /= (float)(l + 1);
        shape.window = c->layer_window[l];
        const pf__weight *attn_norm_b = PF__OR_NULL(L[PF__SLOT_ATTN_NORM_BIAS]);
        const pf__weight *mlp_norm_b = PF__OR_NULL(L[PF__SLOT_MLP_NORM_BIAS]);

        /* h = norm1(x) (pre-norm), or x itself (post-norm) */
        const float *attn_in = r->x;
        if (c->pre_norm) {
            be->norm(r, r->h, r->x, &L[PF__SLOT_ATTN_NORM_WEIGHT], attn_norm_b, N, d, eps, a->norm);
            attn_in = r->h;
        }
        /* qkv = h Wqkv_r^T + bqkv_r: this rank's query and key/value heads only */
        be->matmul(r, r->qkv, attn_in, &L[PF__SLOT_QKV_WEIGHT], PF__OR_NULL(L[PF__SLOT_QKV_BIAS]), N);
        /* q, k = rotate(q, k) by position */
        if (rotary) be->rotary(r, r->qkv, s, &shape, a->positions == PF__POS_ROTARY_PAIRS);
        /* attn = softmax(q k^T * scale + alibi) v over the cache, k and v appended to it */
        float *k_cache = r->k_cache ? r->k_cache + l * cache_stride : NULL; /* NULL: a rank without heads */
        float *v_cache = r->v_cache ? r->v_cache + l * cache_stride : NULL;
        be->attention(r, r->attn, r->qkv, k_cache, v_cache, s, &shape);
        /* part = attn Wo_r^T: this rank's share of the output projection */
        be->matmul(r, r->part, r->attn, &L[PF__SLOT_ATTN_OUT_WEIGHT], NULL, N);

        if (c->parallel_residual) {
            /* part += act(norm2(x) Win_r^T) Wdown_r^T, with GPT-J's single norm reused; then
               x += sum over ranks of part + bo + bdown: one all-reduce for both sublayers */
            if (PF__HAS(L[PF__SLOT_MLP_NORM_WEIGHT])) /* h = norm2(x); norm1's h is spent */
                be->norm(r, r->h, r->x, &L[PF__SLOT_MLP_NORM_WEIGHT], mlp_norm_b, N, d, eps, a->norm);
            be->matmul(r, r->mlp, r->h, &L[PF__SLOT_MLP_IN_WEIGHT], PF__OR_NULL(L[PF__SLOT_MLP_IN_BIAS]), N);
            const float *act = r->mlp;
            if (a->mlp == PF__MLP_GATED) be->gated_activation(r, r->mlp_act, r->mlp, N, mlp_width, c->activation), act = r->mlp_act;
            else be->activation(r, r->mlp, N * mlp_width, c->activation);
            be->matmul(r, r->h, act, &L[PF__SLOT_MLP_DOWN_WEIGHT], NULL, N);
            be->add_residual(r, r->part, r->h, NULL, N, d);
            be->all_reduce(r, r->part, N * d);
            be->add_residual(r, r->x, r->part, PF__OR_NULL(L[PF__SLOT_ATTN_OUT_BIAS]), N, d);
            if (PF__HAS(L[PF__SLOT_MLP_DOWN_BIAS])) be->add_residual(r, r->x, NULL, &L[PF__SLOT_MLP_DOWN_BIAS], N, d);
            continue;
        }
        /* x += sum over ranks of part, + bo once; post-norm: x = norm1(x) */
        be->all_reduce(r, r->part, N * d);
        be->add_residual(r, r->x, r->part, PF__OR_NULL(L[PF__SLOT_ATTN_OUT_BIAS]), N, d);
        const float *mlp_in = r->x;
        if (c->pre_norm) {
            be->norm(r, r->h, r->x, &L[PF__SLOT_MLP_NORM_WEIGHT], mlp_norm_b, N, d, eps, a->norm);
            mlp_in = r->h;
        } else {
            be->norm(r, r->x, r->x, &L[PF__SLOT_ATTN_NORM_WEIGHT], attn_norm_b, N, d, eps, a->norm);
        }
        /* mlp = act(h Win_r^T + bin_r), or act(gate) * up: this rank's columns */
        be->matmul(r, r->mlp, mlp_in, &L[PF__SLOT_MLP_IN_WEIGHT], PF__OR_NULL(L[PF__SLOT_MLP_IN_BIAS]), N);
        const float *act = r->mlp;
        if (a->mlp == PF__MLP_GATED) be->gated_activation(r, r->mlp_act, r->mlp, N, mlp_width, c->activation), act = r->mlp_act;
        else be->activation(r, r->mlp, N * mlp_width, c->activation);
        /* part = mlp Wdown_r^T, summed over ranks; x += part + bdown; post-norm: x = norm2(x) */
        be->matmul(r, r->part, act, &L[PF__SLOT_MLP_DOWN_WEIGHT], NULL, N);
        be->all_reduce(r, r->part, N * d);
        be->add_residual(r, r->x, r->part, PF__OR_NULL(L[PF__SLOT_MLP_DOWN_BIAS]), N, d);
        if (!c->pre_norm) be->norm(r, r->x, r->x, &L[PF__SLOT_MLP_NORM_WEIGHT], mlp_norm_b, N, d, eps, a->norm);
    }
    if (r->index != 0 || pf__rank_failed(r)) return;

    /* Rank 0 alone: h = final norm(x) for the rows wanted (or x), projected out, then
       logits = h Wlm^T (+ b), in chunks. */
    size_t rows = job->all_positions ? N : (size_t)s->batch;
    for (size_t b = 0; b < rows; b++) {
        const float *row = r->x + (job->all_positions ? b : b * s->seq_len + s->seq_len - 1) * d;
        if (PF__HAS(W[PF__SLOT_FINAL_NORM_WEIGHT]))
            be->norm(r, r->h + b * d, row, &W[PF__SLOT_FINAL_NORM_WEIGHT], PF__OR_NULL(W[PF__SLOT_FINAL_NORM_BIAS]), 1, d,
                     (float)c->final_norm_eps, a->norm);
        else
            be->copy(r, r->h + b * d, row, d * sizeof(float));
    }
    size_t vocab = (size_t)c->vocab_size;
    for (size_t first = 0; first < rows && !r->error; first += g->logit_rows) {
        size_t n = rows - first < g->logit_rows ? rows - first : g->logit_rows;
        const float *h = r->h + first * d;
        if (PF__HAS(W[PF__SLOT_PROJECT_OUT])) {
            be->matmul(r, r->part, h, &W[PF__SLOT_PROJECT_OUT], NULL, n);
            h = r->part;
        }
        be->matmul(r, r->logits, h, &W[PF__SLOT_LM_HEAD], PF__OR_NULL(W[PF__SLOT_LM_HEAD_BIAS]), n);
        be->download(r, job->logits + first * vocab, r->logits, n * vocab * sizeof(float));
    }
#undef PF__HAS
#undef PF__OR_NULL
}

/* Runs on every rank's thread: reorders every layer's cache rows for beam search. */
static void pf__rank_reorder(pf__rank *r, const pf__job *job) {
    const pf__group *g = r->group;
    size_t kv_width = (size_t)r->share.kv_heads * g->model->config.head_dim;
    size_t row = (size_t)g->cache_len * kv_width, layer = (size_t)g->max_batch * row;
    if (!kv_width) return;
    for (int l = 0; l < g->model->config.num_layers && !pf__rank_failed(r); l++) {
        r->backend->reorder_rows(r, r->k_cache + l * layer, job->reorder, job->step.batch, row, (size_t)job->step.past * kv_width);
        r->backend->reorder_rows(r, r->v_cache + l * layer, job->reorder, job->step.batch, row, (size_t)job->step.past * kv_width);
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

/* The name of the first operation a backend lacks, or NULL: a table that grew an entry its
   backend does not fill yet is refused, not called through NULL. */
static const char *pf__backend_missing(const pf__backend *b) {
#define PF__NEED(op) if (!b->op) return #op;
    PF__NEED(rank_begin) PF__NEED(rank_end) PF__NEED(alloc) PF__NEED(free) PF__NEED(upload) PF__NEED(download)
    PF__NEED(copy) PF__NEED(embed) PF__NEED(add_positions) PF__NEED(norm) PF__NEED(matmul) PF__NEED(activation)
    PF__NEED(gated_activation) PF__NEED(add_residual) PF__NEED(rotary) PF__NEED(attention) PF__NEED(all_reduce)
    PF__NEED(reorder_rows)
#undef PF__NEED
    return NULL;
}

/* Starts num_ranks rank threads on `backend` and has each slice its weights from m->sources. */
static pf_result pf__group_create(pf_model *m, int num_ranks, const pf_parallel_options *o, const pf__backend *backend,
                                  pf__dtype dtype) {
    const pf__config *c = &m->config;
    const char *missing = pf__backend_missing(backend);
    if (missing)
        return pf__format(pf__error_buffer(m), PF__MESSAGE_SIZE, PF_ERROR_UNSUPPORTED, "the %s backend lacks the %s operation",
                          backend->name, missing);
    pf__group *g = (pf__group *)calloc(1, sizeof *g);
    if (!g) return pf__format(pf__error_buffer(m), PF__MESSAGE_SIZE, PF_ERROR_OUT_OF_MEMORY, "out of memory");
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
        return pf__format(pf__error_buffer(m), PF__MESSAGE_SIZE, PF_ERROR_OUT_OF_MEMORY, "out of memory");
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
        pf_result res = backend->group_begin(g, pf__error_buffer(m), PF__MESSAGE_SIZE);
        if (res) {
            pf__group_destroy(g);
            return res;
        }
    }
    for (int i = 0; i < num_ranks; i++) {
        pf__rank *r = &g->ranks[i];
        if (pthread_create(&r->thread, NULL, pf__rank_main, r) != 0) {
            pf__group_destroy(g);
            return pf__format(pf__error_buffer(m), PF__MESSAGE_SIZE, PF_ERROR_OUT_OF_MEMORY, "cannot start rank thread %d", i);
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
    /* max_length 0: transformers' default of 20 new tokens (its max_length=20 counts those only
       when nobody set it) */
    o.num_beams = 1;
    o.length_penalty = 1.0f;
    o.num_return_sequences = 1;
    o.temperature = 1.0f;
    o.top_k = 50;
    o.top_p = 1.0f;
    o.repetition_penalty = 1.0f;
    o.pad_token_id = -1;
    return o;
}

const char *pf_error_message(const pf_model *m) {
    if (!m) return "no model";
    return pf__error_model == (const void *)m ? pf__error_text : "";
}

#define PF__FAIL(m, code, ...) pf__format(pf__error_buffer(m), PF__MESSAGE_SIZE, code, __VA_ARGS__)

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
    /* Each layer's stacked biases must line up with its stacked weights. */
    for (int l = 0; l < c->num_layers; l++) {
        size_t base = pf__slot_index(PF__SLOT_FIRST_LAYER, l) - PF__SLOT_FIRST_LAYER;
        for (size_t k = 0; k + 1 < PF__COUNT(pf__stacks); k += 2) { /* weight stack, then its bias stack */
            int weights = 0, biases = 0;
            for (int j = 0; j < pf__stacks[k].num_members; j++) {
                int w = m->sources[base + pf__stacks[k].members[j]].data != NULL;
                int b = m->sources[base + pf__stacks[k + 1].members[j]].data != NULL;
                weights += w;
                biases += b;
                if (b && !w) return PF__FAIL(m, PF_ERROR_FORMAT, "%s: layer %d has a bias without its weight", m->dir, l);
            }
            if (biases && biases != weights)
                return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "%s: layer %d has biases on some of its stacked projections only", m->dir, l);
        }
        if (!m->sources[base + PF__SLOT_QKV_FUSED_WEIGHT].data && !m->sources[base + PF__SLOT_Q_WEIGHT].data)
            return PF__FAIL(m, PF_ERROR_FORMAT, "%s: layer %d has no attention projection", m->dir, l);
    }
    if (c->num_kv_heads != c->num_heads && pf__arch_tensor_for(c->arch, PF__SLOT_QKV_FUSED_WEIGHT))
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "%s: grouped-query attention with a fused QKV tensor", m->dir);
    if (pf__archs[c->arch].qkv_layout == PF__QKV_CODEGEN && c->num_heads % 4)
        return PF__FAIL(m, PF_ERROR_FORMAT, "%s: CodeGen's fused QKV needs heads divisible by 4", m->dir);
    return PF_OK;
}

pf_result pf_load(const char *model_dir, const pf_load_options *options, pf_model **model) {
    if (!model) return PF_ERROR_INVALID_ARGUMENT;
    pf_model *m = (pf_model *)calloc(1, sizeof *m);
    *model = m;
    if (!m) return PF_ERROR_OUT_OF_MEMORY;
    pthread_mutex_init(&m->request_lock, NULL);
    m->load_options = options ? *options : pf_load_options_init();
    if (!model_dir) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "model_dir is NULL");
    m->dir = strdup(model_dir);
    if (!m->dir) return PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    pf_result r = pf__config_read(model_dir, &m->config, pf__error_buffer(m), PF__MESSAGE_SIZE);
    if (!r) r = pf__st_open(model_dir, &m->st, pf__error_buffer(m), PF__MESSAGE_SIZE);
    if (!r) r = pf__resolve_sources(m);
    if (!r) {
        char path[PF__PATH_SIZE], vocab[PF__PATH_SIZE];
        if (pf__path_join(path, sizeof path, model_dir, "tokenizer.json") ||
            pf__path_join(vocab, sizeof vocab, model_dir, "vocab.json"))
            r = PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "path too long: %s", model_dir);
        else if (!m->load_options.skip_tokenizer && (pf__file_exists(path) || pf__file_exists(vocab)))
            r = pf__tokenizer_load_dir(model_dir, &m->tokenizer, pf__error_buffer(m), PF__MESSAGE_SIZE);
    }
    if (!r && m->config.rotary_dim) {
        m->inv_freq = (float *)malloc((size_t)m->config.rotary_dim / 2 * sizeof(float));
        if (!m->inv_freq) r = PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    if (r) return r;
    m->loaded = 1;
    return PF_OK;
}

void pf_free(pf_model *m) {
    if (!m) return;
    pf__group_destroy(m->group);
    pf_tokenizer_free(m->tokenizer);
    pf__st_close(&m->st);
    free(m->sources);
    free(m->logits);
    free(m->inv_freq);
    free(m->config.layer_window);
    free(m->dir);
    pthread_mutex_destroy(&m->request_lock);
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
/* The longest KV cache we size without a position table to bound it. */
#define PF__MAX_SEQUENCE (1 << 22)

static pf_result pf__parallelize_locked(pf_model *m, int num_ranks, const pf_parallel_options *options) {
    if (!m->loaded) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "the model did not load");
    pf_parallel_options o = options ? *options : pf_parallel_options_init();
    const pf__config *c = &m->config;
    if (num_ranks < 1 || num_ranks > PF__MAX_RANKS)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "num_ranks %d is not in 1..%d", num_ranks, PF__MAX_RANKS);
    if (o.max_batch < 0 || o.max_batch > 4096)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "max_batch %d is not in 0..4096", o.max_batch);
    /* A learned position table bounds the sequence; rotary and ALiBi positions do not. */
    int table = pf__archs[c->arch].positions == PF__POS_LEARNED || pf__archs[c->arch].positions == PF__POS_SINUSOIDAL;
    int longest = table ? c->max_positions : PF__MAX_SEQUENCE;
    if (o.max_sequence_length < 0 || o.max_sequence_length > longest)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "max_sequence_length %d is not in 0..%d%s", o.max_sequence_length,
                        longest, table ? " (the model's position table)" : "");
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

pf_result pf_parallelize(pf_model *m, int num_ranks, const pf_parallel_options *options) {
    if (!m) return PF_ERROR_INVALID_ARGUMENT;
    pthread_mutex_lock(&m->request_lock);
    pf_result r = pf__parallelize_locked(m, num_ranks, options);
    pthread_mutex_unlock(&m->request_lock);
    return r;
}

static pf_result pf__to_cpu_locked(pf_model *m) {
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

pf_result pf_to_cpu(pf_model *m) {
    if (!m) return PF_ERROR_INVALID_ARGUMENT;
    pthread_mutex_lock(&m->request_lock);
    pf_result r = pf__to_cpu_locked(m);
    pthread_mutex_unlock(&m->request_lock);
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
    return pf__parallelize_locked(m, 1, &o);
}

static pf_result pf__check_ids(pf_model *m, const int32_t *ids, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= m->config.vocab_size)
            return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "token id %d at index %zu is outside the vocabulary (0..%d)",
                            (int)ids[i], i, m->config.vocab_size - 1);
    return PF_OK;
}

/* The rotary frequencies for a step whose sequences reach `length` tokens, as transformers
   computes them (fp32), or NULL without rotary positions. Dynamic scaling follows transformers
   within one request (the frequencies grow with the longest sequence seen, and reset below the
   original length); each request starts afresh (pf__rope_reset), so a call's result does not
   depend on earlier calls, as it would on a reused transformers model. */
static const float *pf__rope_frequencies(pf_model *m, int length) {
    const pf__config *c = &m->config;
    if (!m->inv_freq) return NULL;
    int dim = c->rotary_dim, original = c->max_positions;
    double base = c->rope_theta;
    if (c->rope_type == PF__ROPE_DYNAMIC) {
        if (length > m->rope_cached_len) m->rope_cached_len = length;
        if (length < original && m->rope_cached_len > original) m->rope_cached_len = original;
        double seq = m->rope_cached_len > original ? m->rope_cached_len : original;
        base *= pow(c->rope_factor * seq / original - (c->rope_factor - 1), (double)dim / (dim - 2));
    }
    for (int i = 0; i < dim / 2; i++) {
        float f = 1.0f / powf((float)base, (float)(2 * i) / (float)dim);
        if (c->rope_type == PF__ROPE_LINEAR) {
            f = f / (float)c->rope_factor;
        } else if (c->rope_type == PF__ROPE_LLAMA3) { /* long wavelengths scaled down, a smooth band between */
            double old = c->rope_original_max_positions, wavelen = 2 * 3.14159265358979323846 / f;
            double low_wavelen = old / c->rope_low_freq_factor, high_wavelen = old / c->rope_high_freq_factor;
            float scaled = wavelen > low_wavelen ? f / (float)c->rope_factor : f;
            if (wavelen >= high_wavelen && wavelen <= low_wavelen) {
                float smooth = (float)((old / wavelen - c->rope_low_freq_factor) / (c->rope_high_freq_factor - c->rope_low_freq_factor));
                scaled = (1 - smooth) * scaled / (float)c->rope_factor + smooth * scaled;
            }
            f = scaled;
        }
        m->inv_freq[i] = f;
    }
    return m->inv_freq;
}

static void pf__rope_reset(pf_model *m) { m->rope_cached_len = m->config.max_positions; }

static pf_result pf__forward_locked(pf_model *m, const int32_t *ids, int batch, int seq_len, float *logits) {
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
    pf__rope_reset(m);
    job.step.inv_freq = pf__rope_frequencies(m, seq_len);
    job.logits = logits;
    job.all_positions = 1;
    return pf__group_run(m->group, PF__JOB_FORWARD, &job);
}

pf_result pf_forward(pf_model *m, const int32_t *ids, int batch, int seq_len, float *logits) {
    if (!m) return PF_ERROR_INVALID_ARGUMENT;
    pthread_mutex_lock(&m->request_lock);
    pf_result r = pf__forward_locked(m, ids, batch, seq_len, logits);
    pthread_mutex_unlock(&m->request_lock);
    return r;
}

/* =============================================================================================== */
/* generation                                                                                      */
/* =============================================================================================== */

/* One running sequence: left pads, prompt, then new tokens. */
typedef struct pf__row {
    int32_t *tokens; /* [capacity] */
    int length;      /* tokens so far, pads included */
    int pad;         /* left pads */
    int prompt;      /* prompt tokens, pads excluded */
    int done;        /* greedy/sampling: finished, now fed pad tokens */
    float score;     /* beam search: running log-probability */
} pf__row;

/* A finished beam hypothesis of one prompt. */
typedef struct pf__hypothesis {
    int32_t *tokens; /* new tokens */
    int length;
    float score;
} pf__hypothesis;

typedef struct pf__candidate {
    float score;
    int beam, token;
} pf__candidate;

/* splitmix64: a small, seedable generator whose draws are made on the caller's thread only, so
   every rank sees the same choices by construction. */
static uint64_t pf__random(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double pf__random_unit(uint64_t *state) { return (double)(pf__random(state) >> 11) * (1.0 / 9007199254740992.0); }

static int pf__is_eos(const pf_generate_options *o, const int32_t *eos, int num_eos, int32_t token) {
    if (o->ignore_eos) return 0;
    for (int i = 0; i < num_eos; i++)
        if (eos[i] == token) return 1;
    return 0;
}

/* Whether the row's tokens end with seq's first `length` ids. */
static int pf__ends_with(const pf__row *row, const int32_t *seq, int length, int from) {
    if (row->length - from < length) return 0;
    return memcmp(row->tokens + row->length - length, seq, (size_t)length * sizeof(int32_t)) == 0;
}

/* transformers' logits processors, in its order, on one row's scores. */
static void pf__process_scores(const pf_generate_options *o, const pf__row *row, float *scores, int vocab,
                               const int32_t *eos, int num_eos, int min_length, unsigned char *seen) {
    /* repetition penalty over the row's tokens, left pads excepted: divide positive scores,
       multiply negative ones, once per distinct token */
    if (o->repetition_penalty != 1.0f) {
        memset(seen, 0, (size_t)vocab);
        for (int i = row->pad; i < row->length; i++) {
            int32_t t = row->tokens[i];
            if (t < 0 || t >= vocab || seen[t]) continue;
            seen[t] = 1;
            scores[t] = scores[t] < 0 ? scores[t] * o->repetition_penalty : scores[t] / o->repetition_penalty;
        }
    }
    /* no repeated n-gram: ban the token that would complete an n-gram already present (over the
       whole row, pads included, as transformers does) */
    int n = o->no_repeat_ngram_size;
    if (n > 0 && row->length + 1 >= n) {
        const int32_t *tail = row->tokens + row->length - (n - 1);
        for (int start = 0; start + n <= row->length; start++)
            if (memcmp(row->tokens + start, tail, (size_t)(n - 1) * sizeof(int32_t)) == 0) {
                int32_t t = row->tokens[start + n - 1];
                if (t >= 0 && t < vocab) scores[t] = -INFINITY;
            }
    }
    /* bad words: a single id is always banned (unless it is an eos id); a longer sequence's last
       id is banned when the row ends with the rest */
    for (int i = 0; i < o->num_bad_words; i++) {
        const pf_token_sequence *w = &o->bad_words[i];
        int32_t last = w->ids[w->length - 1];
        if (w->length == 1 && pf__is_eos(o, eos, num_eos, last)) continue;
        if (w->length == 1 || pf__ends_with(row, w->ids, w->length - 1, 0)) scores[last] = -INFINITY;
    }
    /* minimum length: no eos before it */
    if (row->length < min_length || row->length - row->pad - row->prompt < o->min_new_tokens)
        for (int i = 0; i < num_eos; i++) scores[eos[i]] = -INFINITY;
}

static int pf__candidate_cmp(const void *a, const void *b);

/* Sampling warpers (temperature, top-k, top-p) as transformers applies them, then a draw from
   the softmax. sorted: scratch of vocab entries. */
static int32_t pf__sample(const pf_generate_options *o, float *scores, int vocab, uint64_t *rng, pf__candidate *sorted) {
    if (o->temperature != 1.0f)
        for (int i = 0; i < vocab; i++) scores[i] /= o->temperature;
    int k = o->top_k > 0 && o->top_k < vocab ? o->top_k : vocab;
    if (k < vocab || o->top_p < 1.0f) {
        for (int i = 0; i < vocab; i++) {
            sorted[i].score = scores[i];
            sorted[i].beam = 0;
            sorted[i].token = i;
        }
        qsort(sorted, (size_t)vocab, sizeof *sorted, pf__candidate_cmp); /* best first */
        float kth = sorted[k - 1].score; /* top-k keeps scores >= the k-th largest, ties too */
        for (int i = 0; i < vocab; i++)
            if (scores[i] < kth) scores[i] = -INFINITY;
        if (o->top_p < 1.0f) { /* from the least likely up, drop while the dropped mass <= 1 - top_p */
            float max = sorted[0].score;
            double total = 0, dropped = 0;
            for (int i = 0; i < vocab; i++) total += scores[i] == -INFINITY ? 0 : exp((double)scores[i] - max);
            for (int i = vocab - 1; i > 0; i--) {
                int t = sorted[i].token;
                if (scores[t] == -INFINITY) continue;
                dropped += exp((double)scores[t] - max) / total;
                if (dropped > 1.0 - o->top_p) break;
                scores[t] = -INFINITY;
            }
        }
    }
    float max = -INFINITY;
    for (int i = 0; i < vocab; i++)
        if (scores[i] > max) max = scores[i];
    double total = 0;
    for (int i = 0; i < vocab; i++) total += exp((double)scores[i] - max);
    double u = pf__random_unit(rng) * total, sum = 0;
    int32_t last = 0;
    for (int i = 0; i < vocab; i++) {
        if (scores[i] == -INFINITY) continue;
        sum += exp((double)scores[i] - max);
        last = i;
        if (sum > u) return i;
    }
    return last;
}

static int pf__argmax(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

/* log_softmax in fp32, as transformers computes beam scores. */
static void pf__log_softmax(float *x, int n) {
    float max = -INFINITY;
    for (int i = 0; i < n; i++)
        if (x[i] > max) max = x[i];
    double sum = 0;
    for (int i = 0; i < n; i++) sum += exp((double)x[i] - max);
    float log_sum = (float)log(sum);
    for (int i = 0; i < n; i++) x[i] = x[i] - max - log_sum;
}

static int pf__candidate_cmp(const void *a, const void *b) {
    const pf__candidate *x = (const pf__candidate *)a, *y = (const pf__candidate *)b;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    return x->beam != y->beam ? x->beam - y->beam : x->token - y->token;
}

static int pf__hypothesis_cmp(const void *a, const void *b) {
    const pf__hypothesis *x = (const pf__hypothesis *)a, *y = (const pf__hypothesis *)b;
    return x->score > y->score ? -1 : x->score < y->score;
}

/* Emits the text a row's new tokens complete since the last call: whole UTF-8 characters only. */
static int pf__stream(pf_model *m, const pf_generate_options *o, int row_index, const pf__row *row, size_t *emitted,
                      char **buffer, size_t *buffer_cap) {
    int32_t token = row->tokens[row->length - 1];
    const int32_t *fresh = row->tokens + row->pad + row->prompt;
    size_t n = (size_t)(row->length - row->pad - row->prompt), len = 0;
    if (!m->tokenizer) return o->stream(o->stream_user, row_index, token, NULL, 0);
    pf_detokenize(m->tokenizer, fresh, n, *buffer, *buffer_cap, &len);
    if (len + 1 > *buffer_cap) {
        char *grown = (char *)realloc(*buffer, 2 * len + 64);
        if (!grown) return o->stream(o->stream_user, row_index, token, NULL, 0);
        *buffer = grown;
        *buffer_cap = 2 * len + 64;
        pf_detokenize(m->tokenizer, fresh, n, *buffer, *buffer_cap, &len);
    }
    size_t end = len; /* hold back an incomplete trailing character */
    for (size_t back = 1; back <= 3 && back <= len; back++) {
        unsigned char c = (unsigned char)(*buffer)[len - back];
        if ((c & 0xc0) == 0x80) continue;
        size_t need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
        if (need > back) end = len - back;
        break;
    }
    size_t from = *emitted < end ? *emitted : end;
    *emitted = end > *emitted ? end : *emitted;
    return o->stream(o->stream_user, row_index, token, *buffer + from, end - from);
}

/* Checks options against each other and the model, as transformers does. */
static pf_result pf__check_generate_options(pf_model *m, const pf_generate_options *o, int batch) {
    const char *bad = NULL;
    if (o->max_new_tokens < 0 || o->max_length < 0 || o->min_length < 0 || o->min_new_tokens < 0) bad = "negative lengths";
    else if (o->num_beams < 1) bad = "num_beams must be at least 1";
    else if (o->num_return_sequences < 1) bad = "num_return_sequences must be at least 1";
    else if (!o->do_sample && o->num_beams == 1 && o->num_return_sequences > 1)
        bad = "greedy search returns one sequence per prompt: num_return_sequences needs sampling or beams";
    else if (o->num_beams > 1 && o->num_return_sequences > o->num_beams) bad = "num_return_sequences is larger than num_beams";
    else if (o->do_sample && !(o->temperature > 0)) bad = "temperature must be positive when sampling";
    else if (!(o->top_p > 0 && o->top_p <= 1)) bad = "top_p must be in (0, 1]";
    else if (o->top_k < 0) bad = "top_k must not be negative";
    else if (!(o->repetition_penalty > 0)) bad = "repetition_penalty must be positive";
    else if (!isfinite(o->length_penalty)) bad = "length_penalty must be finite";
    else if (o->no_repeat_ngram_size < 0) bad = "no_repeat_ngram_size must not be negative";
    else if (o->early_stopping < PF_EARLY_STOPPING_HEURISTIC || o->early_stopping > PF_EARLY_STOPPING_NEVER) bad = "unknown early_stopping";
    else if (o->stream && o->num_beams > 1) bad = "streaming needs greedy search or sampling, not beam search";
    else if (o->num_eos_token_ids < 0 || (o->num_eos_token_ids > 0 && !o->eos_token_ids)) bad = "eos_token_ids and their count disagree";
    else if (o->num_bad_words < 0 || (o->num_bad_words > 0 && !o->bad_words)) bad = "bad_words and their count disagree";
    else if (o->num_stop_sequences < 0 || (o->num_stop_sequences > 0 && !o->stop_sequences)) bad = "stop_sequences and their count disagree";
    if (bad) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "generate options: %s", bad);
    int vocab = m->config.vocab_size;
    for (int i = 0; i < o->num_eos_token_ids; i++)
        if (o->eos_token_ids[i] < 0 || o->eos_token_ids[i] >= vocab)
            return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "eos token id %d is outside the vocabulary", (int)o->eos_token_ids[i]);
    if (o->pad_token_id < -1 || o->pad_token_id >= vocab)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "pad token id %d is outside the vocabulary", o->pad_token_id);
    for (int k = 0; k < 2; k++) {
        const pf_token_sequence *list = k ? o->stop_sequences : o->bad_words;
        int count = k ? o->num_stop_sequences : o->num_bad_words;
        for (int i = 0; i < count; i++) {
            if (list[i].length < 1 || !list[i].ids)
                return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "%s %d is empty", k ? "stop sequence" : "bad word", i);
            pf_result r = pf__check_ids(m, list[i].ids, (size_t)list[i].length);
            if (r) return r;
        }
    }
    int rows = batch * (o->num_beams > 1 ? o->num_beams : o->num_return_sequences);
    if (rows > m->group->max_batch)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT,
                        "%d prompts x %d beams or samples need max_batch %d in pf_parallelize (it is %d)", batch,
                        o->num_beams > 1 ? o->num_beams : o->num_return_sequences, rows, m->group->max_batch);
    return PF_OK;
}

/* Runs one forward step for all rows: the prefill (step == NULL rows' whole padded prompts) or
   one new token per row. Leaves each row's last-position logits in m->logits. */
static pf_result pf__generate_step(pf_model *m, pf__row *rows, int num_rows, int prefill, int32_t *ids, int *pads) {
    pf__job job;
    memset(&job, 0, sizeof job);
    int width = prefill ? rows[0].length : 1;
    for (int b = 0; b < num_rows; b++) {
        pads[b] = rows[b].pad;
        memcpy(ids + (size_t)b * width, rows[b].tokens + rows[b].length - width, (size_t)width * sizeof(int32_t));
    }
    job.step.ids = ids;
    job.step.batch = num_rows;
    job.step.seq_len = width;
    job.step.past = rows[0].length - width;
    job.step.pad = pads;
    job.step.inv_freq = pf__rope_frequencies(m, rows[0].length);
    job.logits = m->logits;
    return pf__group_run(m->group, PF__JOB_FORWARD, &job);
}

static pf_result pf__reorder_rows(pf_model *m, const int *src, int num_rows, int length) {
    pf__job job;
    memset(&job, 0, sizeof job);
    job.reorder = src;
    job.step.batch = num_rows;
    job.step.past = length;
    return pf__group_run(m->group, PF__JOB_REORDER, &job);
}

/* The generation itself, with the model's request lock held. */
static pf_result pf__generate_locked(pf_model *m, const int32_t *const *prompts, const int *lengths, int batch,
                                     const pf_generate_options *o, pf_generation *result) {
    pf_result r = pf__ensure_group(m);
    if (r || (r = pf__check_generate_options(m, o, batch))) return r;
    const pf__group *g = m->group;
    int vocab = m->config.vocab_size, width = 0;
    for (int b = 0; b < batch; b++) {
        if (!prompts[b] || lengths[b] < 1) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "prompt %d is empty", b);
        if ((r = pf__check_ids(m, prompts[b], (size_t)lengths[b]))) return r;
        if (lengths[b] > width) width = lengths[b];
    }
    if (width >= g->cache_len)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "the prompt (%d tokens) leaves no room in the KV cache (%d)", width,
                        g->cache_len);
    /* Lengths as transformers resolves them (20 new tokens by default); the cache bounds them. */
    int32_t config_eos = (int32_t)m->config.eos_token_id;
    const int32_t *eos = o->num_eos_token_ids ? o->eos_token_ids : &config_eos;
    int num_eos = o->num_eos_token_ids ? o->num_eos_token_ids : (config_eos >= 0 && config_eos < vocab);
    int32_t pad_token = o->pad_token_id >= 0 ? o->pad_token_id : num_eos ? eos[0] : 0;
    long long max_length = o->max_new_tokens ? (long long)width + o->max_new_tokens
                           : o->max_length   ? o->max_length
                                             : (width + 20 < m->config.max_positions ? width + 20 : m->config.max_positions);
    if (max_length > g->cache_len) max_length = g->cache_len;
    int min_length = o->min_new_tokens ? width + o->min_new_tokens : o->min_length;
    int beams = o->num_beams, per_prompt = beams > 1 ? beams : o->num_return_sequences, num_rows = batch * per_prompt;
    size_t capacity = (size_t)(max_length > width ? max_length : width) + 1;
    int num_candidates = (num_eos + 1 > 2 ? num_eos + 1 : 2) * beams;

    pf__row *rows = (pf__row *)calloc((size_t)num_rows, sizeof *rows);
    int32_t *pool[2]; /* token rows, swapped when beams are reordered */
    pool[0] = (int32_t *)malloc((size_t)num_rows * capacity * sizeof(int32_t));
    pool[1] = beams > 1 ? (int32_t *)malloc((size_t)num_rows * capacity * sizeof(int32_t)) : NULL;
    int32_t *ids = (int32_t *)malloc((size_t)num_rows * width * sizeof *ids);
    int *pads = (int *)malloc((size_t)num_rows * sizeof *pads), *src = (int *)malloc((size_t)num_rows * sizeof *src);
    unsigned char *seen = (unsigned char *)malloc((size_t)vocab);
    pf__candidate *candidates = (pf__candidate *)malloc((size_t)vocab * beams * sizeof *candidates);
    pf__hypothesis *hyps = (pf__hypothesis *)calloc((size_t)batch * beams, sizeof *hyps);
    int *num_hyps = (int *)calloc((size_t)batch, sizeof *num_hyps), *open = (int *)malloc((size_t)batch * sizeof *open);
    int32_t *next_tokens = (int32_t *)malloc((size_t)num_rows * sizeof *next_tokens);
    float *next_scores = (float *)malloc((size_t)num_rows * sizeof *next_scores);
    size_t *emitted = (size_t *)calloc((size_t)num_rows, sizeof *emitted);
    char *stream_text = NULL;
    size_t stream_cap = 0;
    int current = 0;
    if (!rows || !pool[0] || (beams > 1 && !pool[1]) || !candidates || !ids || !pads || !src || !seen ||
        !hyps || !num_hyps || !open || !next_tokens || !next_scores || !emitted)
        r = PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; !r && i < num_rows; i++) { /* left pads, then the prompt */
        int b = i / per_prompt;
        pf__row *row = &rows[i];
        row->tokens = pool[0] + (size_t)i * capacity;
        row->pad = width - lengths[b];
        row->prompt = lengths[b];
        row->length = width;
        for (int t = 0; t < row->pad; t++) row->tokens[t] = pad_token;
        memcpy(row->tokens + row->pad, prompts[b], (size_t)lengths[b] * sizeof(int32_t));
        row->score = beams == 1 || i % beams == 0 ? 0.0f : -1e9f; /* beam 0 alone starts live */
    }
    for (int b = 0; !r && b < batch; b++) open[b] = 1;
    uint64_t rng = o->seed;
    pf__rope_reset(m);
    if (!r && beams > 1) {
        /* Beams share their prompt: prefill beam 0 of each prompt into cache rows 0..batch-1, then
           copy each into its beams' rows and move its logits to beam 0's place. */
        pf__row *firsts = (pf__row *)malloc((size_t)batch * sizeof *firsts);
        if (!firsts) r = PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
        for (int b = 0; !r && b < batch; b++) firsts[b] = rows[b * beams];
        if (!r) r = pf__generate_step(m, firsts, batch, 1, ids, pads);
        free(firsts);
        for (int b = batch - 1; !r && b > 0; b--)
            memmove(m->logits + (size_t)b * beams * vocab, m->logits + (size_t)b * vocab, (size_t)vocab * sizeof(float));
        for (int i = 0; i < num_rows; i++) src[i] = i / beams;
        if (!r) r = pf__reorder_rows(m, src, num_rows, width);
    } else if (!r) {
        r = pf__generate_step(m, rows, num_rows, 1, ids, pads);
    }

    int stopped = 0;
    while (!r && !stopped) {
        int cur_len = rows[0].length, last_step = cur_len + 1 >= max_length;
        if (beams == 1) {
            /* greedy or sampling: one token per row; finished rows are fed the pad token */
            int all_done = 1;
            for (int i = 0; i < num_rows; i++) {
                pf__row *row = &rows[i];
                float *s = m->logits + (size_t)i * vocab;
                int32_t t = pad_token;
                if (!row->done) {
                    pf__process_scores(o, row, s, vocab, eos, num_eos, min_length, seen);
                    t = o->do_sample ? pf__sample(o, s, vocab, &rng, candidates) : pf__argmax(s, vocab);
                }
                row->tokens[row->length++] = t;
                if (!row->done) {
                    if (o->stream && pf__stream(m, o, i, row, &emitted[i], &stream_text, &stream_cap)) stopped = 1;
                    int stop = pf__is_eos(o, eos, num_eos, t);
                    for (int k = 0; k < o->num_stop_sequences && !stop; k++)
                        stop = pf__ends_with(row, o->stop_sequences[k].ids, o->stop_sequences[k].length, 0);
                    if (stop || last_step) row->done = 1;
                }
                all_done &= row->done;
            }
            if (all_done || stopped) break;
            r = pf__generate_step(m, rows, num_rows, 0, ids, pads);
            continue;
        }
        /* Beam search as transformers 5 does it: per prompt, the top K of beams x vocab by
           accumulated log-probability; those of the first num_beams that end become hypotheses
           (kept best num_beams), and the best num_beams that do not end run on. */
        int any_open = 0, all_full = 1;
        for (int b = 0; b < batch && !r; b++) {
            int n = 0;
            for (int k = 0; k < beams; k++) {
                int i = b * beams + k;
                float *s = m->logits + (size_t)i * vocab;
                pf__log_softmax(s, vocab);
                pf__process_scores(o, &rows[i], s, vocab, eos, num_eos, min_length, seen);
                for (int t = 0; t < vocab; t++) {
                    candidates[n].score = s[t] + rows[i].score;
                    candidates[n].beam = k;
                    candidates[n++].token = t;
                }
            }
            /* the top K to the front, best first (or K drawn without replacement when sampling) */
            float max = -INFINITY;
            for (int c = 0; o->do_sample && c < n; c++)
                if (candidates[c].score > max) max = candidates[c].score;
            for (int c = 0; c < num_candidates; c++) {
                int pick = c;
                if (o->do_sample) {
                    double total = 0, sum = 0, u;
                    for (int j = c; j < n; j++) total += exp((double)candidates[j].score - max);
                    u = pf__random_unit(&rng) * total;
                    for (pick = c; pick < n - 1; pick++)
                        if ((sum += exp((double)candidates[pick].score - max)) > u) break;
                } else {
                    for (int j = c + 1; j < n; j++)
                        if (pf__candidate_cmp(&candidates[j], &candidates[pick]) < 0) pick = j;
                }
                pf__candidate t = candidates[c];
                candidates[c] = candidates[pick];
                candidates[pick] = t;
            }
            int accept = open[b] && !(num_hyps[b] == beams && o->early_stopping == PF_EARLY_STOPPING_ON);
            float penalty = powf((float)(cur_len + 1 - width), o->length_penalty);
            int kept = 0;
            for (int c = 0; c < num_candidates; c++) {
                const pf__candidate *cand = &candidates[c];
                const pf__row *parent = &rows[b * beams + cand->beam];
                int ends = last_step || pf__is_eos(o, eos, num_eos, cand->token);
                for (int k = 0; k < o->num_stop_sequences && !ends; k++) { /* parent + token ends with it? */
                    const pf_token_sequence *q = &o->stop_sequences[k];
                    ends = q->ids[q->length - 1] == cand->token && pf__ends_with(parent, q->ids, q->length - 1, 0);
                }
                if (!ends) {
                    if (kept < beams) { /* runs on */
                        src[b * beams + kept] = b * beams + cand->beam;
                        next_tokens[b * beams + kept] = cand->token;
                        next_scores[b * beams + kept++] = cand->score;
                    }
                    continue;
                }
                if (c >= beams || !accept) continue;
                /* a hypothesis: into a free slot, or over the worst if better */
                float score = cand->score / penalty;
                pf__hypothesis *slot = NULL;
                if (num_hyps[b] < beams) {
                    slot = &hyps[b * beams + num_hyps[b]++];
                } else {
                    slot = &hyps[b * beams];
                    for (int h = 1; h < beams; h++)
                        if (hyps[b * beams + h].score < slot->score) slot = &hyps[b * beams + h];
                    if (!(score > slot->score)) slot = NULL;
                }
                if (!slot) continue;
                int new_len = parent->length - width;
                int32_t *tokens = (int32_t *)realloc(slot->tokens, (size_t)(new_len + 1) * sizeof(int32_t));
                if (!tokens) {
                    r = PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
                    break;
                }
                memcpy(tokens, parent->tokens + width, (size_t)new_len * sizeof(int32_t));
                tokens[new_len] = cand->token;
                slot->tokens = tokens;
                slot->length = new_len + 1;
                slot->score = score;
            }
            for (; kept < beams; kept++) { /* every candidate ended: placeholders nobody reads */
                src[b * beams + kept] = b * beams;
                next_tokens[b * beams + kept] = pad_token;
                next_scores[b * beams + kept] = -1e9f;
            }
            /* can the best running beam still beat the worst hypothesis? (sticky per prompt) */
            if (open[b] && num_hyps[b] == beams) {
                int length = o->early_stopping == PF_EARLY_STOPPING_NEVER && o->length_penalty > 0
                                 ? (int)max_length - width : cur_len + 1 - width;
                float best = next_scores[b * beams] / powf((float)length, o->length_penalty), worst = INFINITY;
                for (int h = 0; h < beams; h++)
                    if (hyps[b * beams + h].score < worst) worst = hyps[b * beams + h].score;
                if (!(best > worst)) open[b] = 0;
            }
            any_open |= open[b];
            all_full &= num_hyps[b] == beams;
        }
        if (r) break;
        /* the running beams: their parents' tokens plus the new one, into the other pool */
        for (int i = 0; i < num_rows; i++) {
            int32_t *dst = pool[!current] + (size_t)i * capacity;
            memcpy(dst, rows[src[i]].tokens, (size_t)cur_len * sizeof(int32_t));
            dst[cur_len] = next_tokens[i];
        }
        current = !current;
        for (int i = 0; i < num_rows; i++) {
            rows[i].tokens = pool[current] + (size_t)i * capacity;
            rows[i].length = cur_len + 1;
            rows[i].score = next_scores[i];
        }
        if (last_step || !any_open || (o->early_stopping == PF_EARLY_STOPPING_ON && all_full)) break;
        if ((r = pf__reorder_rows(m, src, num_rows, cur_len))) break;
        r = pf__generate_step(m, rows, num_rows, 0, ids, pads);
    }

    /* Results: each prompt's hypotheses best first, or each row's new tokens up to its end. */
    memset(result, 0, sizeof *result);
    if (!r) {
        int n = batch * o->num_return_sequences;
        result->tokens = (int32_t **)calloc((size_t)n, sizeof(int32_t *));
        result->lengths = (int *)calloc((size_t)n, sizeof(int));
        result->scores = (float *)calloc((size_t)n, sizeof(float));
        if (!result->tokens || !result->lengths || !result->scores) r = PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
        else result->num_sequences = n;
        for (int b = 0; !r && b < batch; b++) {
            if (beams > 1) qsort(hyps + b * beams, (size_t)num_hyps[b], sizeof *hyps, pf__hypothesis_cmp);
            for (int k = 0; k < o->num_return_sequences && !r; k++) {
                int out = b * o->num_return_sequences + k, length = 0;
                const int32_t *tokens = NULL;
                if (beams > 1 && k < num_hyps[b]) {
                    tokens = hyps[b * beams + k].tokens;
                    length = hyps[b * beams + k].length;
                    result->scores[out] = hyps[b * beams + k].score;
                } else if (beams == 1) {
                    const pf__row *row = &rows[b * per_prompt + k];
                    tokens = row->tokens + width;
                    length = row->length - width;
                    for (int t = 0; t < length; t++) { /* cut the pad tokens after its end */
                        pf__row prefix = *row;
                        prefix.length = width + t + 1;
                        int end = pf__is_eos(o, eos, num_eos, tokens[t]);
                        for (int q = 0; q < o->num_stop_sequences && !end; q++)
                            end = pf__ends_with(&prefix, o->stop_sequences[q].ids, o->stop_sequences[q].length, 0);
                        if (end) {
                            length = t + 1;
                            break;
                        }
                    }
                }
                result->lengths[out] = length;
                result->tokens[out] = (int32_t *)malloc((size_t)(length ? length : 1) * sizeof(int32_t));
                if (!result->tokens[out]) r = PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
                else if (length) memcpy(result->tokens[out], tokens, (size_t)length * sizeof(int32_t));
            }
        }
        if (r) pf_generation_free(result);
    }
    for (int i = 0; hyps && i < batch * beams; i++) free(hyps[i].tokens);
    free(rows), free(pool[0]), free(pool[1]), free(ids), free(pads), free(src), free(seen), free(candidates);
    free(hyps), free(num_hyps), free(open), free(next_tokens), free(next_scores), free(emitted), free(stream_text);
    return r;
}

void pf_generation_free(pf_generation *g) {
    if (!g) return;
    for (int i = 0; g->tokens && i < g->num_sequences; i++) free(g->tokens[i]);
    free(g->tokens);
    free(g->lengths);
    free(g->scores);
    memset(g, 0, sizeof *g);
}

pf_result pf_generate_batch(pf_model *m, const int32_t *const *prompts, const int *prompt_lengths, int batch,
                            const pf_generate_options *options, pf_generation *result) {
    if (!m) return PF_ERROR_INVALID_ARGUMENT;
    if (result) memset(result, 0, sizeof *result);
    if (!prompts || !prompt_lengths || batch < 1 || !result)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "pf_generate_batch needs prompts, their lengths, batch >= 1 and a result");
    pf_generate_options o = options ? *options : pf_generate_options_init();
    pthread_mutex_lock(&m->request_lock);
    pf_result r = pf__generate_locked(m, prompts, prompt_lengths, batch, &o, result);
    pthread_mutex_unlock(&m->request_lock);
    return r;
}

pf_result pf_generate(pf_model *m, const int32_t *prompt, int prompt_len, const pf_generate_options *options,
                      int32_t *out, int out_capacity, int *num_out) {
    if (!m) return PF_ERROR_INVALID_ARGUMENT;
    if (num_out) *num_out = 0;
    if (!prompt || prompt_len < 1 || !out || out_capacity < 0 || !num_out)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "pf_generate needs a prompt of at least one id, out and num_out");
    pf_generate_options o = options ? *options : pf_generate_options_init();
    if (o.max_new_tokens < 0 || o.max_length < 0)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "generate options: negative lengths");
    if (out_capacity == 0) return PF_OK;
    /* out_capacity bounds the new tokens (max_new_tokens wins over the other limits) */
    long long wanted = o.max_new_tokens ? o.max_new_tokens : o.max_length ? (long long)o.max_length - prompt_len : 20;
    if (wanted > out_capacity) o.max_new_tokens = out_capacity;
    pf_generation g;
    const int32_t *prompts[1] = {prompt};
    pf_result r = pf_generate_batch(m, prompts, &prompt_len, 1, &o, &g);
    if (r) return r;
    *num_out = g.lengths[0] < out_capacity ? g.lengths[0] : out_capacity;
    memcpy(out, g.tokens[0], (size_t)*num_out * sizeof(int32_t));
    pf_generation_free(&g);
    return PF_OK;
}

pf_result pf_generate_text(pf_model *m, const char *prompt, const pf_generate_options *options, char **text) {
    if (!m) return PF_ERROR_INVALID_ARGUMENT;
    if (text) *text = NULL;
    if (!prompt || !text) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "pf_generate_text needs a prompt and text");
    if (!m->tokenizer) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "the model has no tokenizer");
    size_t n = 0, len = 0, plen = strlen(prompt);
    pf_tokenize_special(m->tokenizer, prompt, plen, NULL, 0, &n);
    int32_t *ids = (int32_t *)malloc((n ? n : 1) * sizeof *ids);
    if (!ids) return PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    pf_result r = pf_tokenize_special(m->tokenizer, prompt, plen, ids, n, &n);
    if (r) {
        free(ids);
        return PF__FAIL(m, r, "cannot tokenize the prompt: %s", pf_result_string(r));
    }
    int length = (int)n;
    pf_generation g;
    const int32_t *prompts[1] = {ids};
    r = pf_generate_batch(m, prompts, &length, 1, options, &g);
    free(ids);
    if (r) return r;
    pf_detokenize(m->tokenizer, g.tokens[0], (size_t)g.lengths[0], NULL, 0, &len);
    *text = (char *)malloc(len + 1);
    if (!*text) r = PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    else if ((r = pf_detokenize(m->tokenizer, g.tokens[0], (size_t)g.lengths[0], *text, len + 1, &len))) {
        free(*text);
        *text = NULL;
        r = PF__FAIL(m, r, "cannot decode the output: %s", pf_result_string(r));
    } else {
        (*text)[len] = 0;
    }
    pf_generation_free(&g);
    return r;
}

void pf_string_free(char *text) { free(text); }

pf_tokenizer *pf_model_tokenizer(pf_model *m) { return m ? m->tokenizer : NULL; }
