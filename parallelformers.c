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

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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
    case PF_ERROR_BUSY: return "busy";
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
static PF__THREAD_LOCAL const void *pf__lock_holder; /* the model whose request lock this thread holds */

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

/* Whether something is at path, of any type: a FIFO or a device where a file should be is then
   refused by pf__open_regular with a message saying what it is, rather than taken as missing. */
static int pf__file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

/* Opens path for reading if it is a regular file, *fd and its size out. O_NONBLOCK so that
   opening a FIFO does not wait for a writer that never comes; fstat then refuses FIFOs, devices
   (/dev/zero never ends) and directories; reads block again afterwards. */
static pf_result pf__open_regular(const char *path, int *fd, size_t *file_size, char *message, size_t size) {
    *fd = -1;
    *file_size = 0;
    int f = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (f < 0) return pf__format(message, size, PF_ERROR_IO, "%s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(f, &st) != 0) {
        pf_result r = pf__format(message, size, PF_ERROR_IO, "%s: %s", path, strerror(errno));
        close(f);
        return r;
    }
    if (!S_ISREG(st.st_mode)) {
        const char *kind = S_ISFIFO(st.st_mode)  ? "a FIFO"
                           : S_ISCHR(st.st_mode) ? "a character device"
                           : S_ISBLK(st.st_mode) ? "a block device"
                           : S_ISDIR(st.st_mode) ? "a directory"
                                                 : "a special file";
        close(f);
        return pf__format(message, size, PF_ERROR_IO, "%s: not a regular file (%s)", path, kind);
    }
    int flags = fcntl(f, F_GETFL);
    if (flags < 0 || fcntl(f, F_SETFL, flags & ~O_NONBLOCK) != 0) {
        pf_result r = pf__format(message, size, PF_ERROR_IO, "%s: %s", path, strerror(errno));
        close(f);
        return r;
    }
    *fd = f;
    *file_size = (size_t)st.st_size;
    return PF_OK;
}

/* The JSON and text files we read whole (config, tokenizer, merges): the largest real ones are
   tens of MiB; more is a mistake or an attack, refused before it takes the memory. */
#define PF__MAX_TEXT_FILE ((size_t)256 << 20)

/* Reads a whole regular file of at most max_bytes into *data (NUL-terminated; free it); on failure
   writes "FILE: what" into message. The bound also holds for a file that grows while read. */
static pf_result pf__read_file(const char *path, size_t max_bytes, char **data, size_t *len, char *message, size_t size) {
    int fd;
    size_t file_size, used = 0;
    *data = NULL;
    *len = 0;
    pf_result r = pf__open_regular(path, &fd, &file_size, message, size);
    if (r) return r;
    if (file_size > max_bytes) {
        close(fd);
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: %zu bytes, more than the %zu such a file may hold", path,
                          file_size, max_bytes);
    }
    size_t cap = file_size + 4096 < max_bytes + 1 ? file_size + 4096 : max_bytes + 1; /* room to see the end */
    char *buf = (char *)malloc(cap + 1);
    if (!buf) {
        close(fd);
        return pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    for (;;) {
        if (used == cap) { /* the file grew: read on, up to one byte past the bound */
            size_t grown_cap = cap * 2 < max_bytes + 1 ? cap * 2 : max_bytes + 1;
            char *grown = grown_cap > cap ? (char *)realloc(buf, grown_cap + 1) : NULL;
            if (!grown) {
                r = grown_cap > cap ? pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "%s: out of memory", path)
                                    : pf__format(message, size, PF_ERROR_FORMAT, "%s: more than the %zu bytes such a file may hold",
                                                 path, max_bytes);
                break;
            }
            buf = grown;
            cap = grown_cap;
        }
        ssize_t got = read(fd, buf + used, cap - used);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            r = pf__format(message, size, PF_ERROR_IO, "%s: %s", path, strerror(errno));
            break;
        }
        if (got == 0) break;
        used += (size_t)got;
    }
    close(fd);
    if (r) {
        free(buf);
        return r;
    }
    buf[used] = 0;
    *data = buf;
    *len = used;
    return PF_OK;
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

/* A key's value; of duplicates the last, as Python's json module keeps it. */
static const pf__json *pf__json_get(const pf__json *obj, const char *key) {
    const pf__json *found = NULL;
    if (!obj || obj->type != PF__JSON_OBJECT) return NULL;
    for (const pf__json *c = obj->first; c; c = c->next)
        if (strcmp(c->key, key) == 0) found = c;
    return found;
}

/* "a.b": key b of the object under key a (one level, as policies.inc's keys need). */
static const pf__json *pf__json_get_path(const pf__json *obj, const char *path) {
    const char *dot = strchr(path, '.');
    char outer[64];
    if (!dot) return pf__json_get(obj, path);
    if ((size_t)(dot - path) >= sizeof outer) return NULL;
    memcpy(outer, path, (size_t)(dot - path));
    outer[dot - path] = 0;
    return pf__json_get(pf__json_get(obj, outer), dot + 1);
}

/* Reads and parses a JSON file; on failure writes "FILE: what" into message. */
static pf_result pf__json_load(const char *path, pf__json **out, char *message, size_t size) {
    char *text;
    size_t len;
    *out = NULL;
    pf_result r = pf__read_file(path, PF__MAX_TEXT_FILE, &text, &len, message, size);
    if (r) return r;
    char err[256];
    *out = pf__json_parse(text, len, err, sizeof err);
    free(text);
    if (!*out) return pf__format(message, size, PF_ERROR_FORMAT, "%s: %s", path, err);
    return PF_OK;
}

/* =============================================================================================== */
/* safetensors (memory-mapped)                                                                     */
/* =============================================================================================== */

/* PF__DTYPE_Q8 is a rank storage format only (no checkpoint holds it): see PF__Q8_BLOCK. */
typedef enum { PF__DTYPE_F32, PF__DTYPE_F16, PF__DTYPE_BF16, PF__DTYPE_Q8, PF__DTYPE_OTHER } pf__dtype;

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
    int used;                     /* consumed by a slot or a known buffer (see pf__account_tensors) */
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

/* Q8 weights (PF_DTYPE_Q8_0): each row in blocks of PF__Q8_BLOCK inputs, a block being an fp16
   scale d then PF__Q8_BLOCK int8 values q in -127..127 (weight = d * q), the layout of
   llama.cpp's Q8_0: 34 bytes for 32 weights. Blocks start at multiples of PF__Q8_BLOCK in the
   whole tensor's columns, so a split at such a column quantizes every rank's share as one rank. */
#define PF__Q8_BLOCK 32
#define PF__Q8_BYTES (2 + PF__Q8_BLOCK)

static void pf__q8_quantize(void *data, size_t rows, size_t cols);

/* Bytes of a [rows][cols] weight stored as t (Q8: cols a multiple of PF__Q8_BLOCK). */
static size_t pf__weight_bytes(pf__dtype t, size_t rows, size_t cols) {
    if (t == PF__DTYPE_Q8) return rows * (cols / PF__Q8_BLOCK) * PF__Q8_BYTES;
    return rows * cols * pf__dtype_size(t);
}

static pf_result pf__map_file(const char *path, pf__file_map *map, char *message, size_t size) {
    memset(map, 0, sizeof *map);
    int fd;
    pf_result r = pf__open_regular(path, &fd, &map->size, message, size);
    if (r) return r;
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

/* pf__st_find, marking the tensor as consumed. */
static const pf__st_tensor *pf__st_take(pf__st_index *index, const char *name) {
    pf__st_tensor *t = (pf__st_tensor *)pf__st_find(index, name);
    if (t) t->used = 1;
    return t;
}

/* Without model.safetensors: a directory holding weights in another format gets a message that
   says which, and how to convert. PyTorch pickles are not read: unpickling runs code from the file,
   and a reader restricted to tensor storages would be a second parser to keep safe for a format the
   hub has replaced (nearly every checkpoint there has safetensors). */
static pf_result pf__st_other_formats(const char *dir, char *message, size_t size) {
    static const struct { const char *file, *format; } others[] = {
        {"pytorch_model.bin", "a PyTorch pickle"}, {"pytorch_model.bin.index.json", "sharded PyTorch pickles"},
        {"model.pt", "a PyTorch pickle"}, {"tf_model.h5", "TensorFlow HDF5"}, {"flax_model.msgpack", "Flax msgpack"},
    };
    char path[PF__PATH_SIZE];
    if (pf__path_join(path, sizeof path, dir, "model.safetensors") == 0 && pf__file_exists(path)) return PF_OK;
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
        if (pf__path_join(path, sizeof path, dir, others[i].file) == 0 && pf__file_exists(path))
            return pf__format(message, size, PF_ERROR_UNSUPPORTED,
                              "%s holds %s (%s), which parallelformers does not read; it reads safetensors. Convert "
                              "once with transformers: python -c \"import transformers as t; "
                              "t.AutoModelForCausalLM.from_pretrained('%s').save_pretrained('%s')\" (writes model.safetensors)",
                              dir, others[i].file, others[i].format, dir, dir);
    return PF_OK;
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
        if ((r = pf__st_other_formats(dir, message, size))) return r;
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
    PF__SLOT_PROJECT_IN_BIAS,  /* [hidden] */
    PF__SLOT_PROJECT_OUT,      /* [E, hidden] */
    PF__SLOT_FINAL_NORM_WEIGHT,/* [hidden] */
    PF__SLOT_FINAL_NORM_BIAS,  /* [hidden] */
    PF__SLOT_LM_HEAD,          /* [vocab, E] */
    PF__SLOT_LM_HEAD_BIAS,     /* [vocab] */
    PF__SLOT_TOKEN_TYPE_EMBED, /* [type_vocab, hidden]: BERT's segment embeddings */
    PF__SLOT_POOLER_WEIGHT,    /* [hidden, hidden]: dense + tanh on each sequence's first token */
    PF__SLOT_POOLER_BIAS,      /* [hidden] */
    PF__SLOT_HEAD_TRANSFORM_WEIGHT, /* [hidden, hidden]: the masked-LM head's dense + act + norm */
    PF__SLOT_HEAD_TRANSFORM_BIAS,   /* [hidden] */
    PF__SLOT_HEAD_NORM_WEIGHT, /* [hidden] */
    PF__SLOT_HEAD_NORM_BIAS,   /* [hidden] */
    PF__SLOT_CLASSIFIER_WEIGHT,/* [num_labels, hidden]: sequence or token classification */
    PF__SLOT_CLASSIFIER_BIAS,  /* [num_labels] */
    PF__SLOT_SPAN_WEIGHT,      /* [2, hidden]: question answering's start and end logits */
    PF__SLOT_SPAN_BIAS,        /* [2] */
    PF__SLOT_REL_BIAS,         /* [rel_table_rows, heads]: a learned score bias per head and bucket
                                  of relative distance, shared by the layers (MPNet, T5) */
    /* An encoder-decoder's encoder tower has its own (the slots above being the decoder's): */
    PF__SLOT_ENC_POSITION_EMBED,    /* as PF__SLOT_POSITION_EMBED */
    PF__SLOT_ENC_EMBED_NORM_WEIGHT, /* [hidden] BART's layernorm_embedding */
    PF__SLOT_ENC_EMBED_NORM_BIAS,
    PF__SLOT_ENC_FINAL_NORM_WEIGHT, /* [hidden] */
    PF__SLOT_ENC_FINAL_NORM_BIAS,
    PF__SLOT_ENC_REL_BIAS,          /* as PF__SLOT_REL_BIAS, bucketed both ways */
    PF__SLOT_ENC_TOKEN_EMBED,       /* [src_vocab, E]: an encoder vocabulary of its own (FSMT), whole on
                                       every rank; absent: the towers share PF__SLOT_TOKEN_EMBED */
    /* Image encoders (ViT): patches instead of token ids */
    PF__SLOT_PATCH_WEIGHT,          /* [hidden, channels * patch^2]: the patch embedding (a strided conv) */
    PF__SLOT_PATCH_BIAS,            /* [hidden] */
    PF__SLOT_CLS_TOKEN,             /* [1, hidden]: the class token before the patches */
    PF__SLOT_DIST_TOKEN,            /* [1, hidden]: DeiT's distillation token after it */
    PF__SLOT_DIST_CLASSIFIER_WEIGHT,/* [num_labels, hidden]: DeiT's head on the distillation token */
    PF__SLOT_DIST_CLASSIFIER_BIAS,  /* [num_labels] */
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
    /* A decoder block's attention over the encoder's output (encoder-decoders): */
    PF__SLOT_CROSS_NORM_WEIGHT,/* [hidden] */
    PF__SLOT_CROSS_NORM_BIAS,  /* [hidden] */
    PF__SLOT_CROSS_Q_WEIGHT,   /* [Q, hidden] */
    PF__SLOT_CROSS_Q_BIAS,     /* [Q] */
    PF__SLOT_CROSS_K_WEIGHT,   /* [KV, hidden] */
    PF__SLOT_CROSS_K_BIAS,     /* [KV] */
    PF__SLOT_CROSS_V_WEIGHT,   /* [KV, hidden] */
    PF__SLOT_CROSS_V_BIAS,     /* [KV] */
    PF__SLOT_CROSS_OUT_WEIGHT, /* [hidden, Q] */
    PF__SLOT_CROSS_OUT_BIAS,   /* [hidden] */
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

/* PF__LAYOUT_ROW: a vector stored as [1, n] (BART's final_logits_bias); read as PF__LAYOUT_VECTOR.
   PF__LAYOUT_SQUEEZED: [1, ..., 1, rows, cols] (ViT's class token, position table); read as OUT_IN.
   PF__LAYOUT_CONV: [out, channels, kh, kw] (ViT's patch embedding); read as OUT_IN [out, c kh kw]. */
typedef enum { PF__LAYOUT_OUT_IN, PF__LAYOUT_IN_OUT, PF__LAYOUT_VECTOR, PF__LAYOUT_ROW, PF__LAYOUT_SQUEEZED, PF__LAYOUT_CONV } pf__layout;

typedef enum {
    PF__SPLIT_NONE,
    PF__SPLIT_QKV_COLUMNS,
    PF__SPLIT_HEAD_COLUMNS,
    PF__SPLIT_KV_COLUMNS,
    PF__SPLIT_MLP_COLUMNS,
    PF__SPLIT_HEAD_ROWS,
    PF__SPLIT_MLP_ROWS,
    PF__SPLIT_VOCAB
} pf__split;

/* Whether a tensor must be in the file: the PF__IF_ needs follow a config field (present exactly
   when it is true). */
typedef enum {
    PF__OPTIONAL,
    PF__REQUIRED,
    PF__IF_ATTENTION_BIAS,
    PF__IF_MLP_BIAS,
    PF__IF_FINAL_NORM,
    PF__IF_PROJECTION,
    PF__IF_GATED,
    PF__IF_DECODER,     /* present exactly when an encoder-decoder has its decoder (not "...EncoderModel") */
    PF__IF_EMBED_NORM,  /* present exactly when the config field embed_norm is 1 (BART's layernorm_embedding) */
    PF__POSITION_TABLE, /* required with learned positions; with sinusoidal ones optional (a saved copy
                           of the sinusoid, used as it is; computed when absent) */
    PF__IF_DISTILLATION /* present exactly when the family has a distillation token (DeiT) */
} pf__need;
typedef enum { PF__KIND_DECODER, PF__KIND_ENCODER, PF__KIND_SEQ2SEQ } pf__kind;
typedef enum { PF__NORM_LAYER, PF__NORM_RMS } pf__norm;
typedef enum { PF__SINUSOID_F32, PF__SINUSOID_F64, PF__SINUSOID_T2T } pf__sinusoid_kind; /* pf__sinusoid_table */
typedef enum {
    PF__POS_LEARNED,
    PF__POS_ROTARY_HALVES,
    PF__POS_ROTARY_PAIRS,
    PF__POS_ALIBI,
    PF__POS_SINUSOIDAL,
    PF__POS_RELATIVE
} pf__positions;
typedef enum { PF__QKV_BLOCKS, PF__QKV_PER_HEAD, PF__QKV_CODEGEN } pf__qkv_layout;
typedef enum { PF__MLP_PLAIN, PF__MLP_GATED, PF__MLP_GATED_IF_NAMED } pf__mlp;
typedef enum { PF__ACT_GELU_TANH, PF__ACT_GELU_ERF, PF__ACT_RELU, PF__ACT_SILU, PF__ACT_TANH } pf__activation;
typedef enum { PF__ROPE_DEFAULT, PF__ROPE_LINEAR, PF__ROPE_DYNAMIC, PF__ROPE_LLAMA3 } pf__rope_type;

#define PF__NEEDED (-1e300)

typedef enum {
#define PF_ARCH(id, ...) PF__ARCH_##id,
#include "policies.inc"
    PF__ARCH_COUNT
} pf__arch_id;

typedef struct pf__arch {
    const char *model_type;
    pf__kind kind;
    pf__norm norm;
    pf__positions positions;
    pf__qkv_layout qkv_layout;
    pf__mlp mlp;
    int mlp_ratio;
    const char *activation_key, *activation_default;
    int tied_lm_head;
} pf__arch;

static const pf__arch pf__archs[PF__ARCH_COUNT] = {
#define PF_ARCH(id, model_type, kind, norm, positions, qkv, mlp, mlp_ratio, act_key, act_default, tied) \
    {model_type, kind, norm, positions, qkv, mlp, mlp_ratio, act_key, act_default, tied},
#include "policies.inc"
};

typedef struct pf__arch_alias { pf__arch_id arch; const char *model_type; } pf__arch_alias;
static const pf__arch_alias pf__arch_aliases[] = {
#define PF_ARCH_ALIAS(id, model_type) {PF__ARCH_##id, model_type},
#include "policies.inc"
};

typedef struct pf__arch_activation { pf__arch_id arch; const char *name; pf__activation activation; } pf__arch_activation;
static const pf__arch_activation pf__arch_activations[] = {
#define PF_ARCH_ACTIVATION(id, name, activation) {PF__ARCH_##id, name, activation},
#include "policies.inc"
};

typedef struct pf__arch_layer_types { pf__arch_id arch; const char *key; int needed; } pf__arch_layer_types;
static const pf__arch_layer_types pf__arch_layer_types_keys[] = {
#define PF_ARCH_LAYER_TYPES(id, key, needed) {PF__ARCH_##id, key, needed},
#include "policies.inc"
};

typedef struct pf__arch_null { pf__arch_id arch; const char *key; double value; } pf__arch_null;
static const pf__arch_null pf__arch_nulls[] = {
#define PF_ARCH_NULL(id, key, value) {PF__ARCH_##id, key, value},
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
    int encoder; /* 1: a block of an encoder-decoder's encoder tower (PF_ARCH_ENCODER_TENSOR) */
} pf__arch_tensor;
static const pf__arch_tensor pf__arch_tensors[] = {
#define PF_ARCH_TENSOR(id, slot, pattern, layout, split, need) {PF__ARCH_##id, slot, pattern, layout, split, need, 0},
#define PF_ARCH_ENCODER_TENSOR(id, slot, pattern, layout, split, need) {PF__ARCH_##id, slot, pattern, layout, split, need, 1},
#include "policies.inc"
};

/* Rows whose tensor names (PF_ARCH_TENSOR, PF_ARCH_ENCODER_TENSOR, PF_ARCH_PREFIX, PF_ARCH_BUFFER)
   are another row's: families with the same tensor names, whose differences are config traits. */
typedef struct pf__arch_tensors_of { pf__arch_id arch, base; } pf__arch_tensors_of;
static const pf__arch_tensors_of pf__arch_tensors_ofs[] = {
#define PF_ARCH_TENSORS_OF(id, base) {PF__ARCH_##id, PF__ARCH_##base},
#include "policies.inc"
    {PF__ARCH_COUNT, PF__ARCH_COUNT} /* keeps the array non-empty */
};

/* The row whose tensor names an architecture uses. */
static pf__arch_id pf__tensor_rows(pf__arch_id arch) {
    for (size_t i = 0; i < sizeof pf__arch_tensors_ofs / sizeof pf__arch_tensors_ofs[0]; i++)
        if (pf__arch_tensors_ofs[i].arch == arch) return pf__arch_tensors_ofs[i].base;
    return arch;
}

/* Config keys whose other values we do not implement: refused unless absent, null or `value`. */
typedef struct pf__arch_require { pf__arch_id arch; const char *key; double value; } pf__arch_require;
static const pf__arch_require pf__arch_requires[] = {
#define PF_ARCH_REQUIRE(id, key, value) {PF__ARCH_##id, key, value},
#include "policies.inc"
};

typedef struct pf__arch_buffer { pf__arch_id arch; const char *pattern; } pf__arch_buffer;
static const pf__arch_buffer pf__arch_buffers[] = {
#define PF_ARCH_BUFFER(id, pattern) {PF__ARCH_##id, pattern},
#include "policies.inc"
};

/* Hyperparameters, whatever the config.json keys are called. */
typedef struct pf__config {
    pf__arch_id arch;
    char model_type[64];            /* config.json's: the row's, or one of its aliases */
    int hidden_size, num_heads, num_kv_heads, num_layers, vocab_size, max_positions, intermediate_size;
    int encoder_layers;             /* encoder-decoders: blocks 0..encoder_layers-1 are the encoder
                                       tower's, the rest (num_layers in all) the decoder's */
    int decoder_layers;             /* encoder-decoders, as read; 0: as many as the encoder (T5) */
    int src_vocab_size;             /* an encoder vocabulary of its own (FSMT's src_vocab_size); 0: vocab_size */
    int image_size, patch_size, num_channels; /* image encoders: max_positions follows from them */
    int distillation;               /* 1: a distillation token after the class token (DeiT) */
    int teacher_head;               /* 1: the mean of the class and distillation tokens' heads (DeiT
                                       ...WithTeacher) */
    int decoder_num_heads, decoder_intermediate_size; /* the decoder's, where the config names them
                                       apart (BART); they must equal the encoder's; 0: unnamed */
    int embed_norm;                 /* 1: a norm after the embedding (PF__IF_EMBED_NORM tensors) */
    int decoder_norm_before_positions; /* 1: the decoder tower norms its token embeddings before it
                                       adds the positions (Blenderbot-small) */
    int sinusoid;                   /* the computed sinusoid table: PF__SINUSOID_* */
    int scale_decoder_outputs;      /* 1: the decoder's output times hidden^-0.5 before the LM head
                                       (T5); -1 in the table: as tie_word_embeddings */
    int head_dim;                   /* 0 in the file: hidden_size / num_heads */
    int embed_dim;                  /* OPT's word_embed_proj_dim; 0: hidden_size */
    double norm_eps;
    double final_norm_eps;          /* 0: norm_eps */
    int scale_attn_weights;         /* 0: scores are q.k unscaled (GPT-Neo) */
    int scale_attn_by_inverse_layer_idx;
    int32_t *eos_ids;               /* [num_eos_ids]: config.json's and generation_config.json's; owned */
    int num_eos_ids;
    int32_t *suppress_ids, *begin_suppress_ids; /* generation_config.json's suppress_tokens and
                                       begin_suppress_tokens (the defaults point at them); owned */
    int num_suppress_ids, num_begin_suppress_ids;
    int bos_token_id, pad_token_id, decoder_start_token_id; /* -1: none */
    int pre_norm;                   /* 0: post-norm blocks (OpenAI GPT, OPT-350m), without a final norm */
    int remove_final_norm;          /* 1: pre-norm blocks without a final norm (OPT's _remove_final_layer_norm) */
    int tie_word_embeddings;        /* 1: the LM head is the token embedding */
    int residual_from_norm;         /* 1: each block's residual is its norm's output (BLOOM's
                                       apply_residual_connection_post_layernorm) */
    int attention_bias, mlp_bias;   /* 1: the projections of attention (of the MLP) have biases */
    int parallel_residual;          /* x + attn(norm(x)) + mlp(norm'(x)) */
    int position_offset;            /* OPT's learned positions start at 2 */
    int embed_scale_sqrt;           /* token embeddings times sqrt(hidden) (CTRL) */
    int rotary_dim;                 /* rotated dims per head; 0: rotary_pct * head_dim */
    double rotary_pct;
    double rope_theta;
    int reads_rope_dict;            /* 1: rope_scaling / rope_parameters apply (else transformers ignores them) */
    int partial_rotary_ignored;     /* 1: a partial_rotary_factor does not change the rotation (LLaMA) */
    int rope_head_dim;              /* GPT-NeoX's head_dim key: the rotary width's base; 0: head_dim */
    int sliding_window;             /* keys within this distance of the query; 0: all */
    int use_sliding_window;         /* 0: the config's sliding_window is only informative (Qwen2) */
    int local_window;               /* GPT-Neo's window for its "local" layers */
    int first_window_layer;         /* without a per-layer list: layers from this one on use the
                                       sliding window (Qwen2's max_window_layers) */
    pf__activation activation;
    pf__rope_type rope_type;
    double rope_factor, rope_low_freq_factor, rope_high_freq_factor;
    int rope_original_max_positions;
    int *layer_window;              /* [num_layers]: each layer's window, 0 for global; owned */
    int type_vocab_size;            /* rows of the token type (segment) embedding */
    int gated_mlp;                  /* 1: act(x W_gate) * x W_up (the row's mlp, or T5's "gated-" activations) */
    int rel_table_rows;             /* rows of the relative bias table (its config key) */
    int rel_buckets, rel_max_distance; /* the bucketing: T5's function with these; bidirectional */
    int embed_norm_before_project;  /* 1: positions, segments and the embedding norm at the
                                       embedding's width E, then project_in with its bias (ELECTRA,
                                       ALBERT); 0: they follow the projection (OPT) */
    int position_offset_from_pad;   /* 1: position_offset was read as the pad id, positions start
                                       after it and the table's rows include them (RoBERTa); 2: the
                                       same over a computed table, the bound kept (M2M100) */
    int pooler_activation;          /* a pf__activation: tanh (BERT), relu (DistilBERT); -1: the model's */
    int head_activation;            /* the masked-LM head's pf__activation; -1: the model's */
    pf_head head;                   /* what the output stage computes */
    int num_labels;                 /* classification heads' outputs */
} pf__config;

/* Neutral values for fields an architecture's rows do not name. */
static void pf__config_defaults(pf__config *c) {
    memset(c, 0, sizeof *c);
    c->scale_attn_weights = 1;
    c->pre_norm = 1;
    c->rotary_pct = 1.0;
    c->rope_theta = 10000.0;
    c->bos_token_id = c->pad_token_id = c->decoder_start_token_id = -1;
    c->rope_factor = 1.0;
    c->use_sliding_window = 1;
    c->attention_bias = c->mlp_bias = -1;
    c->pooler_activation = PF__ACT_TANH;
    c->head_activation = -1;
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
        if (pf__arch_tensors[i].arch == pf__tensor_rows(arch) && pf__arch_tensors[i].slot == slot) return &pf__arch_tensors[i];
    return NULL;
}

/* The config.json key an architecture reads a field from (its first alias), for messages. */
static const char *pf__config_key(pf__arch_id arch, size_t offset) {
    for (size_t i = 0; i < PF__COUNT(pf__arch_configs); i++)
        if (pf__arch_configs[i].arch == arch && pf__arch_configs[i].offset == offset && pf__arch_configs[i].key)
            return pf__arch_configs[i].key;
    return "(derived)";
}

/* HF activation names to the function we compute: the family's own table (PF_ARCH_ACTIVATION)
   where it has one, else transformers' ACT2FN. */
static int pf__activation_from_name(pf__arch_id arch, const char *name, pf__activation *out) {
    int family_table = 0;
    for (size_t i = 0; i < PF__COUNT(pf__arch_activations); i++) {
        if (pf__arch_activations[i].arch != arch) continue;
        family_table = 1;
        if (strcmp(pf__arch_activations[i].name, name) == 0) {
            *out = pf__arch_activations[i].activation;
            return 0;
        }
    }
    if (family_table) return -1;
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
    else return -1;
    return 1;
}

/* transformers' rope scaling: "rope_scaling" (v4) or "rope_parameters" (v5), either naming the
   type as "rope_type" or "type"; a non-empty rope_scaling wins when both are given (transformers 5
   converts it), and rope_theta there wins over the top-level one. Families whose modeling code has
   a fixed rotary base (GPT-J, CodeGen) ignore both, as transformers does. */
static pf_result pf__config_rope(const pf__json *json, pf__config *c, const char *path, char *message, size_t size) {
    if (!c->reads_rope_dict) return PF_OK;
    const pf__json *rope = pf__json_get(json, "rope_scaling");
    if (!rope || rope->type != PF__JSON_OBJECT || !rope->count) rope = pf__json_get(json, "rope_parameters");
    if (rope && rope->type != PF__JSON_OBJECT) rope = NULL;
    const pf__json *type = pf__json_get(rope, "rope_type");
    if (!type) type = pf__json_get(rope, "type");
    double v, partial = 1;
    if (pf__json_number(pf__json_get(rope, "rope_theta"), &v) == 1) c->rope_theta = v;
    int has_partial = pf__json_number(pf__json_get(rope, "partial_rotary_factor"), &partial) == 1;
    if (!has_partial && c->partial_rotary_ignored) /* transformers 5 moves a top-level one into the dict */
        has_partial = pf__json_number(pf__json_get(json, "partial_rotary_factor"), &partial) == 1;
    if (has_partial && !(partial > 0 && partial <= 1)) /* NaN included: the rotary width is head_dim times it */
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"partial_rotary_factor\" %g is not in (0, 1]", path, partial);
    if (has_partial && !c->partial_rotary_ignored) c->rotary_pct = partial;
    if (type && type->type == PF__JSON_STRING && strcmp(type->string, "default") != 0) {
        if (strcmp(type->string, "linear") == 0) c->rope_type = PF__ROPE_LINEAR;
        else if (strcmp(type->string, "dynamic") == 0) c->rope_type = PF__ROPE_DYNAMIC;
        else if (strcmp(type->string, "llama3") == 0) c->rope_type = PF__ROPE_LLAMA3;
        else return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: rope type \"%s\" is not supported", path, type->string);
    }
    /* LLaMA's default rope rotates whole heads whatever the factor; its scaled ropes shorten the
       frequencies and then fail in transformers */
    if (has_partial && c->partial_rotary_ignored && partial != 1 && c->rope_type != PF__ROPE_DEFAULT)
        return pf__format(message, size, PF_ERROR_UNSUPPORTED,
                          "%s: \"partial_rotary_factor\" = %g with rope type \"%s\" is not supported (transformers "
                          "cannot run it either)", path, partial, type->string);
    if (c->rope_type == PF__ROPE_DEFAULT) return PF_OK;
    if (pf__json_number(pf__json_get(rope, "factor"), &c->rope_factor) != 1 || !(c->rope_factor >= 1 && c->rope_factor < 1e6))
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: rope scaling needs a factor >= 1", path);
    if (c->rope_type == PF__ROPE_LLAMA3) {
        double original = 0;
        /* a top-level original_max_position_embeddings overrides the dict's when transformers
           builds the frequencies */
        int found = pf__json_number(pf__json_get(json, "original_max_position_embeddings"), &original) == 1 ||
                    pf__json_number(pf__json_get(rope, "original_max_position_embeddings"), &original) == 1;
        if (pf__json_number(pf__json_get(rope, "low_freq_factor"), &c->rope_low_freq_factor) != 1 ||
            pf__json_number(pf__json_get(rope, "high_freq_factor"), &c->rope_high_freq_factor) != 1 || !found ||
            !(c->rope_high_freq_factor > c->rope_low_freq_factor) || !(original >= 1 && original < 1e9))
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: llama3 rope scaling needs low_freq_factor < high_freq_factor and original_max_position_embeddings", path);
        c->rope_original_max_positions = (int)original;
    }
    return PF_OK;
}

/* The window of each layer: from a per-layer list when the architecture names one, else the
   sliding window (if any) everywhere. */
static pf_result pf__config_layer_windows(const pf__json *json, pf__config *c, const char *path, char *message,
                                          size_t size) {
    if (!c->use_sliding_window) c->sliding_window = 0;
    c->layer_window = (int *)calloc((size_t)c->num_layers, sizeof(int));
    if (!c->layer_window) return pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    const pf__json *types = NULL;
    const char *key = NULL;
    int needed = 0;
    for (size_t i = 0; i < PF__COUNT(pf__arch_layer_types_keys) && !types; i++) {
        if (pf__arch_layer_types_keys[i].arch != c->arch) continue;
        key = pf__arch_layer_types_keys[i].key;
        needed |= pf__arch_layer_types_keys[i].needed;
        types = pf__json_get(json, key);
        if (types && types->type == PF__JSON_NULL) types = NULL;
        if (types && types->type != PF__JSON_ARRAY)
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"%s\" is not a list", path, key);
    }
    if (!types) {
        if (needed) return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"%s\" is missing", path, key);
        for (int l = 0; l < c->num_layers; l++) c->layer_window[l] = l >= c->first_window_layer ? c->sliding_window : 0;
        return PF_OK;
    }
    /* Either one kind per layer, or GPT-Neo's runs [[kinds], repeats] that transformers expands
       into attention_layers. */
    int l = 0;
    for (const pf__json *t = types->first; t; t = t->next) {
        const pf__json *kinds = t, *repeats = NULL;
        double times = 1;
        if (t->type == PF__JSON_ARRAY) {
            kinds = t->first;
            repeats = kinds ? kinds->next : NULL;
            if (t->count != 2 || kinds->type != PF__JSON_ARRAY || pf__json_number(repeats, &times) != 1 ||
                !(times >= 0 && times <= c->num_layers) || times != floor(times))
                return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"%s\" is not a list of [[kinds], repeats]", path,
                                  key);
        }
        for (int k = 0; k < (int)times; k++)
            for (const pf__json *kind = kinds->type == PF__JSON_ARRAY ? kinds->first : kinds; kind;
                 kind = kinds->type == PF__JSON_ARRAY ? kind->next : NULL, l++) {
                if (kind->type != PF__JSON_STRING)
                    return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"%s\" holds a non-string", path, key);
                if (l >= c->num_layers) continue; /* too many: counted, refused below */
                if (!strcmp(kind->string, "local")) c->layer_window[l] = c->local_window;
                else if (!strcmp(kind->string, "sliding_attention")) c->layer_window[l] = c->sliding_window;
                else if (strcmp(kind->string, "global") && strcmp(kind->string, "full_attention") &&
                         strcmp(kind->string, "attention")) /* Qwen2's older name of full_attention */
                    return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: attention kind \"%s\" is not supported", path,
                                      kind->string);
                if (c->layer_window[l] < 0)
                    return pf__format(message, size, PF_ERROR_FORMAT, "%s: layer %d has a negative window", path, l);
            }
    }
    if (l != c->num_layers)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"%s\" gives %d layers, the model has %d", path,
                          key, l, c->num_layers);
    return PF_OK;
}

/* Keys we implement for one value only (PF_ARCH_REQUIRE): any other is refused by name. */
static pf_result pf__config_requires(const pf__json *json, pf__arch_id arch, const char *path, char *message, size_t size) {
    for (size_t i = 0; i < PF__COUNT(pf__arch_requires); i++) {
        const pf__arch_require *q = &pf__arch_requires[i];
        const pf__json *v = q->arch == arch ? pf__json_get_path(json, q->key) : NULL;
        double x = 0;
        if (!v || v->type == PF__JSON_NULL) continue;
        if (pf__json_number(v, &x) == 1 && x == q->value) continue;
        char shown[64] = "a non-number";
        if (v->type == PF__JSON_NUMBER || v->type == PF__JSON_BOOL) snprintf(shown, sizeof shown, "%g", x);
        return pf__format(message, size, PF_ERROR_UNSUPPORTED,
                          "%s: \"%s\" = %s is not supported for model_type \"%s\" (only %g is implemented)", path,
                          q->key, shown, pf__archs[arch].model_type, q->value);
    }
    return PF_OK;
}

/* A sliding_window or attention_chunk_size in the config of a decoder whose row does not read it:
   transformers' generation cache then keeps only that many keys (the prompt's logits ignore it,
   generated tokens do not), which we do not implement: refused when it would bind. */
static pf_result pf__config_stray_windows(const pf__json *json, const pf__config *c, const char *path, char *message,
                                          size_t size) {
    static const char *const keys[] = {"sliding_window", "attention_chunk_size"};
    if (pf__archs[c->arch].kind != PF__KIND_DECODER) return PF_OK;
    for (size_t k = 0; k < PF__COUNT(keys); k++) {
        int read = 0;
        for (size_t i = 0; i < PF__COUNT(pf__arch_configs); i++)
            read |= pf__arch_configs[i].arch == c->arch && pf__arch_configs[i].key && !strcmp(pf__arch_configs[i].key, keys[k]);
        double window = 0;
        if (!read && pf__json_number(pf__json_get(json, keys[k]), &window) == 1 && window > 0 && window < c->max_positions)
            return pf__format(message, size, PF_ERROR_UNSUPPORTED,
                              "%s: \"%s\" = %g: model_type \"%s\" has no such window, but transformers' generation cache "
                              "would keep only that many keys; not supported", path, keys[k], window, c->model_type);
    }
    return PF_OK;
}

/* ---- token ids and generate() defaults (config.json, generation_config.json) ---- */

/* A token id from JSON: 1 if set (an integer >= 0), 0 if absent, null or negative (some configs
   write -1 for "none"), -1 if not an integer. */
static int pf__json_token_id(const pf__json *v, int *out) {
    if (!v || v->type == PF__JSON_NULL) return 0;
    if (v->type != PF__JSON_NUMBER || v->number != floor(v->number) || v->number > 2147483647.0) return -1;
    if (v->number < 0) return 0;
    *out = (int)v->number;
    return 1;
}

/* Adds eos ids (one id or a list, as transformers accepts both) that the list lacks. */
static pf_result pf__config_add_eos(pf__config *c, const pf__json *v, const char *path, char *message, size_t size) {
    if (!v || v->type == PF__JSON_NULL) return PF_OK;
    const pf__json *first = v->type == PF__JSON_ARRAY ? v->first : v;
    size_t count = v->type == PF__JSON_ARRAY ? v->count : 1;
    if (count > 4096) return pf__format(message, size, PF_ERROR_FORMAT, "%s: %zu eos ids", path, count);
    int32_t *grown = (int32_t *)realloc(c->eos_ids, ((size_t)c->num_eos_ids + count + 1) * sizeof(int32_t));
    if (!grown) return pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    c->eos_ids = grown;
    for (const pf__json *e = first; count--; e = e->next) {
        int id, seen = 0, found = pf__json_token_id(e, &id);
        if (found < 0) return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"eos_token_id\" holds a non-integer", path);
        for (int i = 0; found && i < c->num_eos_ids; i++) seen |= c->eos_ids[i] == id;
        if (found && !seen) c->eos_ids[c->num_eos_ids++] = id;
    }
    return PF_OK;
}

/* bos, pad, decoder start and eos ids from config.json or generation_config.json: a later file's
   ids replace the earlier ones, except eos ids, which are joined (generation stops on any). */
static pf_result pf__config_token_ids(pf__config *c, const pf__json *json, const char *path, char *message, size_t size) {
    static const struct { const char *key; size_t offset; } ids[] = {
        {"bos_token_id", offsetof(pf__config, bos_token_id)},
        {"pad_token_id", offsetof(pf__config, pad_token_id)},
        {"decoder_start_token_id", offsetof(pf__config, decoder_start_token_id)},
    };
    for (size_t i = 0; i < PF__COUNT(ids); i++)
        if (pf__json_token_id(pf__json_get(json, ids[i].key), (int *)((char *)c + ids[i].offset)) < 0)
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"%s\" is not a token id", path, ids[i].key);
    return pf__config_add_eos(c, pf__json_get(json, "eos_token_id"), path, message, size);
}

/* generation_config.json keys that generate() takes as defaults and pf_generate_options holds. */
static const struct pf__generation_key {
    const char *key;
    size_t offset; /* in pf_generate_options */
    char kind;     /* 'i' int, 'f' float, 'b' bool as int, 'e' early_stopping (true, false, "never") */
    double low, high;
} pf__generation_keys[] = {
    {"max_length", offsetof(pf_generate_options, max_length), 'i', 0, 1e9},
    {"max_new_tokens", offsetof(pf_generate_options, max_new_tokens), 'i', 0, 1e9},
    {"min_length", offsetof(pf_generate_options, min_length), 'i', 0, 1e9},
    {"min_new_tokens", offsetof(pf_generate_options, min_new_tokens), 'i', 0, 1e9},
    {"num_beams", offsetof(pf_generate_options, num_beams), 'i', 1, 1e6},
    {"num_return_sequences", offsetof(pf_generate_options, num_return_sequences), 'i', 1, 1e6},
    {"no_repeat_ngram_size", offsetof(pf_generate_options, no_repeat_ngram_size), 'i', 0, 1e9},
    {"top_k", offsetof(pf_generate_options, top_k), 'i', 0, 1e9},
    {"do_sample", offsetof(pf_generate_options, do_sample), 'b', 0, 1},
    {"temperature", offsetof(pf_generate_options, temperature), 'f', 1e-30, 1e30},
    {"top_p", offsetof(pf_generate_options, top_p), 'f', 1e-30, 1},
    {"repetition_penalty", offsetof(pf_generate_options, repetition_penalty), 'f', 1e-30, 1e30},
    {"length_penalty", offsetof(pf_generate_options, length_penalty), 'f', -1e30, 1e30},
    {"early_stopping", offsetof(pf_generate_options, early_stopping), 'e', 0, 0},
    {"forced_bos_token_id", offsetof(pf_generate_options, forced_bos_token_id), 'i', 0, 1e9},
    {"forced_eos_token_id", offsetof(pf_generate_options, forced_eos_token_id), 'i', 0, 1e9}, /* one id, not a list */
    {"decoder_start_token_id", offsetof(pf_generate_options, decoder_start_token_id), 'i', 0, 1e9},
    {"encoder_no_repeat_ngram_size", offsetof(pf_generate_options, encoder_no_repeat_ngram_size), 'i', 0, 1e9},
};

/* generation_config.json keys that change what generate() does and that we do not implement,
   with the value that leaves generation as ours (null always does): any other value is refused. */
static const struct { const char *key; double neutral; } pf__generation_unsupported[] = {
    {"typical_p", 1}, {"epsilon_cutoff", 0}, {"eta_cutoff", 0}, {"min_p", 0}, {"top_h", 0},
    {"diversity_penalty", 0}, {"num_beam_groups", 1}, {"penalty_alpha", 0}, {"encoder_repetition_penalty", 1},
    {"guidance_scale", 1}, {"renormalize_logits", 0},
    {"exponential_decay_length_penalty", NAN},
    {"forced_decoder_ids", NAN},
    {"sequence_bias", NAN}, {"bad_words_ids", NAN}, {"force_words_ids", NAN}, {"constraints", NAN},
    {"stop_strings", NAN}, {"watermarking_config", NAN}, {"max_time", NAN}, {"token_healing", 0},
    {"dola_layers", NAN}, {"prompt_lookup_num_tokens", NAN}, {"assistant_early_exit", NAN},
};

/* One generate() default into o; 1 if the value is not what the key allows. */
static int pf__generation_set(pf_generate_options *o, const struct pf__generation_key *k, const pf__json *v) {
    void *field = (char *)o + k->offset;
    if (k->kind == 'e') {
        if (v->type == PF__JSON_STRING && !strcmp(v->string, "never")) *(pf_early_stopping *)field = PF_EARLY_STOPPING_NEVER;
        else if (v->type == PF__JSON_BOOL) *(pf_early_stopping *)field = v->boolean ? PF_EARLY_STOPPING_ON : PF_EARLY_STOPPING_HEURISTIC;
        else return 1;
        return 0;
    }
    double x;
    if (pf__json_number(v, &x) != 1 || v->type == PF__JSON_ARRAY || !(x >= k->low && x <= k->high)) return 1;
    if (k->kind == 'f') *(float *)field = (float)x;
    else if (x != floor(x)) return 1;
    else *(int *)field = (int)x;
    return 0;
}

/* Reads DIR/generation_config.json when present: its token ids into c (see pf__config_token_ids)
   and the generate() defaults it sets into *defaults (which starts as pf_generate_options_init()). */
static pf_result pf__generation_config_read(const char *dir, pf__config *c, pf_generate_options *defaults,
                                            char *message, size_t size) {
    char path[PF__PATH_SIZE];
    pf__json *json;
    if (pf__path_join(path, sizeof path, dir, "generation_config.json"))
        return pf__format(message, size, PF_ERROR_INVALID_ARGUMENT, "path too long: %s", dir);
    if (!pf__file_exists(path)) return PF_OK;
    pf_result r = pf__json_load(path, &json, message, size);
    if (r) return r;
    if (json->type != PF__JSON_OBJECT) r = pf__format(message, size, PF_ERROR_FORMAT, "%s: not a JSON object", path);
    if (!r) r = pf__config_token_ids(c, json, path, message, size);
    for (size_t i = 0; !r && i < PF__COUNT(pf__generation_keys); i++) {
        const pf__json *v = pf__json_get(json, pf__generation_keys[i].key);
        if (v && v->type != PF__JSON_NULL && pf__generation_set(defaults, &pf__generation_keys[i], v))
            r = pf__format(message, size, PF_ERROR_FORMAT, "%s: \"%s\" has a value generate() does not accept", path,
                           pf__generation_keys[i].key);
    }
    for (size_t i = 0; !r && i < PF__COUNT(pf__generation_unsupported); i++) {
        const pf__json *v = pf__json_get(json, pf__generation_unsupported[i].key);
        double x;
        if (!v || v->type == PF__JSON_NULL) continue;
        if (pf__json_number(v, &x) == 1 && v->type != PF__JSON_ARRAY && x == pf__generation_unsupported[i].neutral) continue;
        r = pf__format(message, size, PF_ERROR_UNSUPPORTED,
                       "%s: \"%s\" is set, and generation with it is not supported (load with skip_generation_config "
                       "to generate without it)", path, pf__generation_unsupported[i].key);
    }
    static const char *const suppress_keys[2] = {"suppress_tokens", "begin_suppress_tokens"};
    for (int k = 0; !r && k < 2; k++) { /* lists of ids (null: none) the defaults point at */
        const pf__json *v = pf__json_get(json, suppress_keys[k]), *e;
        int32_t **ids = k ? &c->begin_suppress_ids : &c->suppress_ids;
        int *count = k ? &c->num_begin_suppress_ids : &c->num_suppress_ids;
        if (!v || v->type == PF__JSON_NULL) continue;
        if (v->type != PF__JSON_ARRAY || v->count > 1000000) {
            r = pf__format(message, size, PF_ERROR_FORMAT, "%s: \"%s\" is not a list of token ids", path, suppress_keys[k]);
            break;
        }
        *ids = (int32_t *)malloc((v->count ? v->count : 1) * sizeof(int32_t));
        if (!*ids) r = pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
        for (e = v->first; !r && e; e = e->next) {
            int id = -1;
            if (pf__json_token_id(e, &id) != 1)
                r = pf__format(message, size, PF_ERROR_FORMAT, "%s: \"%s\" holds a value that is not a token id", path,
                               suppress_keys[k]);
            else (*ids)[(*count)++] = id;
        }
    }
    if (!r) {
        defaults->suppress_tokens = c->suppress_ids, defaults->num_suppress_tokens = c->num_suppress_ids;
        defaults->begin_suppress_tokens = c->begin_suppress_ids, defaults->num_begin_suppress_tokens = c->num_begin_suppress_ids;
    }
    const pf__json *cache = pf__json_get(json, "cache_implementation"); /* a quantized cache changes the numbers */
    if (!r && cache && cache->type == PF__JSON_STRING && !strcmp(cache->string, "quantized"))
        r = pf__format(message, size, PF_ERROR_UNSUPPORTED,
                       "%s: \"cache_implementation\" is \"quantized\", and generation with it is not supported (load "
                       "with skip_generation_config to generate without it)", path);
    pf__json_free(json);
    if (!r && c->pad_token_id >= 0) defaults->pad_token_id = c->pad_token_id;
    return r;
}

/* Token ids must name rows of the vocabulary: finished rows are fed the pad id. */
static pf_result pf__config_check_token_ids(const pf__config *c, const char *dir, char *message, size_t size) {
    int ids[] = {c->bos_token_id, c->pad_token_id, c->decoder_start_token_id};
    static const char *names[] = {"bos_token_id", "pad_token_id", "decoder_start_token_id"};
    for (int i = 0; i < 3; i++)
        if (ids[i] >= c->vocab_size)
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: %s %d is outside the vocabulary (%d)", dir, names[i],
                              ids[i], c->vocab_size);
    for (int i = 0; i < c->num_eos_ids; i++)
        if (c->eos_ids[i] >= c->vocab_size)
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: eos_token_id %d is outside the vocabulary (%d)", dir,
                              (int)c->eos_ids[i], c->vocab_size);
    return PF_OK;
}

/* The output head: a decoder's LM head, or for an encoder what the class named first in
   "architectures" computes (transformers' naming: BertModel, BertForMaskedLM, ...); and the
   classifiers' label count (id2label's size, else num_labels, else transformers' 2). */
/* An encoder-decoder's towers by its class: ...ForConditionalGeneration (or no architectures) has
   both and the LM head; ...EncoderModel the encoder alone, as pf_encode's bare encoder. */
static pf_result pf__config_seq2seq_head(const pf__json *first, pf__config *c, const char *path, char *message,
                                         size_t size) {
    const char *name = first && first->type == PF__JSON_STRING ? first->string : NULL;
    size_t len = name ? strlen(name) : 0;
    if (c->decoder_layers == 0) c->decoder_layers = c->encoder_layers; /* T5: num_decoder_layers absent or null */
    if (name && len >= 12 && !strcmp(name + len - 12, "EncoderModel")) {
        c->head = PF_HEAD_NONE;
        c->decoder_layers = 0;
    } else if (!name || (len >= 24 && !strcmp(name + len - 24, "ForConditionalGeneration")) ||
               (len >= 7 && !strcmp(name + len - 7, "MTModel"))) { /* MarianMTModel */
        c->head = PF_HEAD_CAUSAL_LM;
    } else {
        return pf__format(message, size, PF_ERROR_UNSUPPORTED,
                          "%s: architecture \"%s\" is not supported (its head; ...ForConditionalGeneration, "
                          "MarianMTModel and ...EncoderModel are)", path, name);
    }
    if ((c->decoder_num_heads && c->decoder_num_heads != c->num_heads) ||
        (c->decoder_intermediate_size && c->decoder_intermediate_size != c->intermediate_size))
        return pf__format(message, size, PF_ERROR_UNSUPPORTED,
                          "%s: the decoder's heads (%d) or MLP width (%d) differ from the encoder's (%d, %d): not supported",
                          path, c->decoder_num_heads, c->decoder_intermediate_size, c->num_heads, c->intermediate_size);
    if (c->encoder_layers <= 0 || c->encoder_layers > 100000 || c->decoder_layers < 0 || c->decoder_layers > 100000)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: %d encoder and %d decoder layers", path, c->encoder_layers,
                          c->decoder_layers);
    c->num_layers = c->encoder_layers + c->decoder_layers;
    return PF_OK;
}

static pf_result pf__config_head(const pf__json *json, pf__config *c, const char *path, char *message, size_t size) {
    static const struct { const char *suffix; pf_head head; } heads[] = {
        {"ForMaskedLM", PF_HEAD_MASKED_LM}, {"ForSequenceClassification", PF_HEAD_SEQUENCE_CLASSIFICATION},
        {"ForTokenClassification", PF_HEAD_TOKEN_CLASSIFICATION}, {"ForQuestionAnswering", PF_HEAD_QUESTION_ANSWERING},
        {"ForImageClassification", PF_HEAD_IMAGE_CLASSIFICATION}, {"ForImageClassificationWithTeacher", PF_HEAD_IMAGE_CLASSIFICATION},
        {"Model", PF_HEAD_NONE},
    };
    const pf__json *labels = pf__json_get(json, "id2label");
    double count = 2;
    if (labels && labels->type == PF__JSON_OBJECT) count = (double)labels->count;
    else if (pf__json_number(pf__json_get(json, "num_labels"), &count) < 0 || !(count >= 1 && count <= 1e6) || count != floor(count))
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"num_labels\" is not a count", path);
    c->num_labels = count >= 1 ? (int)count : 1;
    if (pf__archs[c->arch].kind == PF__KIND_DECODER) {
        c->head = PF_HEAD_CAUSAL_LM;
        return PF_OK;
    }
    const pf__json *names = pf__json_get(json, "architectures");
    const pf__json *first = names && names->type == PF__JSON_ARRAY ? names->first : NULL;
    if (pf__archs[c->arch].kind == PF__KIND_SEQ2SEQ) return pf__config_seq2seq_head(first, c, path, message, size);
    c->head = PF_HEAD_NONE;
    if (!first || first->type != PF__JSON_STRING) return PF_OK; /* the tensors must then be the bare encoder's */
    size_t len = strlen(first->string);
    c->teacher_head = len >= 11 && !strcmp(first->string + len - 11, "WithTeacher");
    const pf__json *pooler_act = pf__json_get(json, "pooler_act"); /* ViT's pooler activation */
    if (pooler_act && pooler_act->type == PF__JSON_STRING && strcmp(pooler_act->string, "tanh"))
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: \"pooler_act\" = \"%s\" is not supported (tanh is)", path,
                          pooler_act->string);
    for (size_t i = 0; i < PF__COUNT(heads); i++) {
        size_t n = strlen(heads[i].suffix);
        if (len >= n && !strcmp(first->string + len - n, heads[i].suffix)) {
            c->head = heads[i].head;
            return PF_OK;
        }
    }
    return pf__format(message, size, PF_ERROR_UNSUPPORTED,
                      "%s: architecture \"%s\" is not supported (its head; the encoder alone, ForMaskedLM, "
                      "ForSequenceClassification, ForTokenClassification and ForQuestionAnswering are)", path, first->string);
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
    for (size_t i = 0; i < PF__COUNT(pf__arch_aliases); i++)
        if (strcmp(pf__arch_aliases[i].model_type, type->string) == 0) arch = (int)pf__arch_aliases[i].arch;
    if (arch < 0) {
        char supported[1024] = "";
        for (int a = 0; a < PF__ARCH_COUNT; a++) {
            size_t used = strlen(supported);
            snprintf(supported + used, sizeof supported - used, "%s%s", a ? ", " : "", pf__archs[a].model_type);
        }
        for (size_t i = 0; i < PF__COUNT(pf__arch_aliases); i++) {
            size_t used = strlen(supported);
            snprintf(supported + used, sizeof supported - used, ", %s", pf__arch_aliases[i].model_type);
        }
        r = pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: model_type \"%s\" is not supported (supported: %s)",
                       path, type->string, supported);
        pf__json_free(json);
        return r;
    }
    cfg->arch = (pf__arch_id)arch;
    snprintf(cfg->model_type, sizeof cfg->model_type, "%s", type->string);
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
        const pf__json *v = c->key ? pf__json_get(json, c->key) : NULL;
        int found = pf__json_number(v, &value);
        for (size_t j = 0; v && v->type == PF__JSON_NULL && j < PF__COUNT(pf__arch_nulls); j++)
            if (pf__arch_nulls[j].arch == cfg->arch && !strcmp(pf__arch_nulls[j].key, c->key)) {
                value = pf__arch_nulls[j].value;
                found = 1;
            }
        if (found && value == PF__NEEDED) {
            r = pf__format(message, size, PF_ERROR_FORMAT, "%s: \"%s\" is null", path, c->key);
            break;
        }
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
        if (pf__activation_from_name(cfg->arch, act_name, &cfg->activation))
            r = pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: activation \"%s\" is not supported", path, act_name);
        cfg->gated_mlp = a->mlp == PF__MLP_GATED || (a->mlp == PF__MLP_GATED_IF_NAMED && !strncmp(act_name, "gated-", 6));
    }
    if (!r) r = pf__config_rope(json, cfg, path, message, size);
    if (!r) r = pf__config_token_ids(cfg, json, path, message, size);
    if (!r) r = pf__config_head(json, cfg, path, message, size);
    if (!r) {
        double tie = a->tied_lm_head;
        if (pf__json_number(pf__json_get(json, "tie_word_embeddings"), &tie) < 0)
            r = pf__format(message, size, PF_ERROR_FORMAT, "%s: \"tie_word_embeddings\" is not a boolean", path);
        cfg->tie_word_embeddings = tie != 0;
        if (cfg->scale_decoder_outputs < 0) cfg->scale_decoder_outputs = cfg->tie_word_embeddings;
    }
    if (!r) r = pf__config_requires(json, cfg->arch, path, message, size);
    if (!r) r = pf__config_stray_windows(json, cfg, path, message, size);
    if (!r && cfg->num_layers > 0 && cfg->num_layers <= 100000) r = pf__config_layer_windows(json, cfg, path, message, size);
    pf__json_free(json);
    if (r) return r;

    if (cfg->position_offset_from_pad) { /* RoBERTa's and M2M100's positions: pad_token_id + 1 + index */
        cfg->position_offset += 1;
        if (cfg->position_offset_from_pad == 1) cfg->max_positions -= cfg->position_offset;
    }
    if (cfg->patch_size) { /* an image encoder: the class (and distillation) token, then the patches */
        if (cfg->patch_size < 1 || cfg->image_size < cfg->patch_size || cfg->image_size % cfg->patch_size ||
            cfg->image_size > 65536 || cfg->num_channels < 1 || cfg->num_channels > 64)
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: image_size %d, patch_size %d, num_channels %d do not fit",
                              path, cfg->image_size, cfg->patch_size, cfg->num_channels);
        int side = cfg->image_size / cfg->patch_size;
        cfg->max_positions = side * side + 1 + cfg->distillation;
    }
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
        if (!(cfg->rotary_pct > 0 && cfg->rotary_pct <= 1)) /* NaN included: converted to an int below */
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"%s\" %g is not in (0, 1]", path,
                              pf__config_key(cfg->arch, offsetof(pf__config, rotary_pct)), cfg->rotary_pct);
        if (cfg->rotary_dim == 0)
            cfg->rotary_dim = (int)((cfg->rope_head_dim ? cfg->rope_head_dim : cfg->head_dim) * cfg->rotary_pct);
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
    case PF__SLOT_ENC_TOKEN_EMBED: *rows = (size_t)(c->src_vocab_size ? c->src_vocab_size : c->vocab_size); *cols = e; break;
    case PF__SLOT_PATCH_WEIGHT: *rows = h; *cols = (size_t)c->num_channels * c->patch_size * c->patch_size; break;
    case PF__SLOT_CLS_TOKEN: case PF__SLOT_DIST_TOKEN: *rows = 1; *cols = h; break;
    case PF__SLOT_DIST_CLASSIFIER_WEIGHT: *rows = (size_t)c->num_labels; *cols = h; break;
    case PF__SLOT_DIST_CLASSIFIER_BIAS: *rows = (size_t)c->num_labels; break;
    case PF__SLOT_LM_HEAD_BIAS: *rows = (size_t)c->vocab_size; break;
    case PF__SLOT_POSITION_EMBED: case PF__SLOT_ENC_POSITION_EMBED:
        *rows = (size_t)c->max_positions + c->position_offset;
        *cols = c->embed_norm_before_project ? e : h;
        break;
    case PF__SLOT_EMBED_NORM_WEIGHT: case PF__SLOT_EMBED_NORM_BIAS: *rows = c->embed_norm_before_project ? e : h; break;
    case PF__SLOT_PROJECT_IN: *rows = h; *cols = e; break;
    case PF__SLOT_PROJECT_OUT: *rows = e; *cols = h; break;
    case PF__SLOT_QKV_FUSED_WEIGHT: *rows = q + 2 * kv; *cols = h; break;
    case PF__SLOT_QKV_FUSED_BIAS: *rows = q + 2 * kv; break;
    case PF__SLOT_Q_WEIGHT: case PF__SLOT_CROSS_Q_WEIGHT: *rows = q; *cols = h; break;
    case PF__SLOT_Q_BIAS: case PF__SLOT_CROSS_Q_BIAS: *rows = q; break;
    case PF__SLOT_K_WEIGHT: case PF__SLOT_V_WEIGHT: case PF__SLOT_CROSS_K_WEIGHT: case PF__SLOT_CROSS_V_WEIGHT:
        *rows = kv;
        *cols = h;
        break;
    case PF__SLOT_K_BIAS: case PF__SLOT_V_BIAS: case PF__SLOT_CROSS_K_BIAS: case PF__SLOT_CROSS_V_BIAS: *rows = kv; break;
    case PF__SLOT_ATTN_OUT_WEIGHT: case PF__SLOT_CROSS_OUT_WEIGHT: *rows = h; *cols = q; break;
    case PF__SLOT_MLP_GATE_WEIGHT: case PF__SLOT_MLP_UP_WEIGHT: *rows = in; *cols = h; break;
    case PF__SLOT_MLP_GATE_BIAS: case PF__SLOT_MLP_UP_BIAS: *rows = in; break;
    case PF__SLOT_MLP_DOWN_WEIGHT: *rows = h; *cols = in; break;
    case PF__SLOT_TOKEN_TYPE_EMBED: *rows = (size_t)c->type_vocab_size; *cols = c->embed_norm_before_project ? e : h; break;
    case PF__SLOT_HEAD_TRANSFORM_WEIGHT: *rows = c->embed_norm_before_project ? e : h; *cols = h; break;
    case PF__SLOT_HEAD_TRANSFORM_BIAS: case PF__SLOT_HEAD_NORM_WEIGHT: case PF__SLOT_HEAD_NORM_BIAS:
        *rows = c->embed_norm_before_project ? e : h;
        break;
    case PF__SLOT_POOLER_WEIGHT: *rows = h; *cols = h; break;
    case PF__SLOT_CLASSIFIER_WEIGHT: *rows = (size_t)c->num_labels; *cols = h; break;
    case PF__SLOT_CLASSIFIER_BIAS: *rows = (size_t)c->num_labels; break;
    case PF__SLOT_SPAN_WEIGHT: *rows = 2; *cols = h; break;
    case PF__SLOT_SPAN_BIAS: *rows = 2; break;
    case PF__SLOT_REL_BIAS: case PF__SLOT_ENC_REL_BIAS: *rows = (size_t)c->rel_table_rows; *cols = (size_t)c->num_heads; break;
    default: *rows = h; break; /* norms and the remaining biases */
    }
}

/* =============================================================================================== */
/* tokenizer                                                                                       */
/* =============================================================================================== */

/* Tokenizers as Hugging Face tokenizers runs them.

   A tokenizer.json is read component by component, each implemented once and driven by the
   file (nothing here is per model family):
     normalizer     NFC, NFD, NFKC, NFKD, Lowercase, StripAccents, Prepend, Replace (a string
                    pattern, a regex that is a literal, or the regex " {2,}"), Strip, BertNormalizer (clean_text,
                    handle_chinese_chars, strip_accents, lowercase), Precompiled (SentencePiece's
                    charsmap, on grapheme clusters as HF's spm_precompiled), Sequence
     pre_tokenizer  ByteLevel (add_prefix_space, use_regex), Split (a known regex, or a string;
                    every behavior; invert), Metaspace (replacement, prepend_scheme, split),
                    BertPreTokenizer, WhitespaceSplit, Punctuation, Sequence
     model          BPE: byte-level or on characters; byte_fallback, unk_token with fuse_unk,
                    continuing_subword_prefix, end_of_word_suffix, ignore_merges
                    WordPiece: unk_token, continuing_subword_prefix, max_input_chars_per_word
                    Unigram: [piece, score] vocab, unk_id, byte_fallback
     decoder        ByteLevel, Metaspace, Replace, ByteFallback, Fuse, Strip, BPEDecoder, WordPiece,
                    Sequence
     post_processor TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel (no-op for
                    ids), Sequence: a template for one text and one for a pair, with token type
                    ids; applied by pf_tokenize_special and pf_tokenize_pair, after HF's truncation
   Anything else is PF_ERROR_UNSUPPORTED naming it; a malformed component PF_ERROR_FORMAT.
   vocab.json + merges.txt (+ tokenizer_config.json) load as transformers' GPT-2 tokenizer.
   Without tokenizer.json, tokenizer_config.json's tokenizer_class "ByT5Tokenizer" loads ByT5's
   bytes (pf__tok_from_byt5); "MarianTokenizer" and "M2M100Tokenizer" load their SentencePiece
   .model files (a bounds-checked protobuf reader), run as SentencePiece itself does (its
   normalizer, Unigram or BPE on the whole text between added tokens) with the pieces mapped
   through vocab.json (pf__tok_from_spm_files); the other classes transformers has in Python only
   (pf__tok_slow_only) are PF_ERROR_UNSUPPORTED naming what they need.

   Encoding, step by step (the order of HF's Tokenizer::encode):
   1. added tokens with normalized = false are found in the raw text (leftmost, longest first;
      HF's lstrip / rstrip / single_word rules); a match maps straight to its id.
   2. each piece in between is normalized, and the added tokens with normalized = true are
      found in the normalized text (their content normalized too, as HF does).
   3. the pre-tokenizer cuts each remaining piece into words; split patterns are matched by hand
      on code points (the regexes HF's tokenizer.json files use are recognised by their source).
   4. the model turns each word into ids. BPE: its characters (or, byte-level, its bytes'
      characters in GPT-2's byte-to-unicode map) merged pair by pair, lowest merge rank first
      (leftmost on ties), as HF's Word::merge_all. WordPiece: the longest vocab piece at each
      place, greedily from the left. Unigram: the segmentation with the highest total score.
   Invalid UTF-8 never fails: each invalid byte is a unit of its own that is neither letter,
   number nor space and that normalizers leave alone; byte-level, it is encoded by its byte
   token, so that decode(encode(bytes)) == bytes for any bytes the vocab covers; with
   byte_fallback, by its <0xXX> token.
   Decoding runs the decoder chain on the tokens' strings, as HF's decode (skip_special_tokens
   false). Where HF would replace bytes that are not valid UTF-8 by U+FFFD (ByteLevel,
   ByteFallback), the bytes are kept, so that a byte-level decode is byte-exact.
   Metaspace's prepend_scheme "first" prepends to a piece that starts where the text does; HF
   decides it from the piece's alignment to the original text, which is the same unless a
   normalizer splits one original character into several pieces (not kept track of here).
   A loaded tokenizer is never written to: encoding keeps its scratch memory per call.

   The Unicode tables are generated by test/gen_unicode.py from what HF tokenizers 0.23 itself
   does (see there): Unicode 16 for the regex classes and lowercasing; the older data of HF's
   normalization crate for NFC / NFD / NFKC / NFKD and StripAccents (checked against HF on every
   code point); the grapheme cluster properties of the regex module, checked against HF's
   Precompiled normalizer. */

/* ---- UTF-8 ---- */

#define PF__UTF8_INVALID 0xFFFFFFFFu /* the "code point" of a byte that is not valid UTF-8 */
#define PF__CP_RAW 0x80000000u       /* in code point buffers: PF__CP_RAW | byte, an invalid byte */

/* Decodes the code point at s (n > 0 bytes readable) and returns its length in bytes. Strict like
   Rust's str: no overlong forms, surrogates or values past U+10FFFF. A byte that does not start a
   valid sequence is a unit of length 1 with *cp = PF__UTF8_INVALID. */
static size_t pf__utf8_decode(const unsigned char *s, size_t n, uint32_t *cp) {
    unsigned char c = s[0];
    uint32_t v;
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if (c >= 0xC2 && c <= 0xDF) {
        if (n >= 2 && (s[1] & 0xC0) == 0x80) {
            *cp = ((uint32_t)(c & 0x1F) << 6) | (uint32_t)(s[1] & 0x3F);
            return 2;
        }
    } else if (c >= 0xE0 && c <= 0xEF) {
        if (n >= 3 && (s[1] & 0xC0) == 0x80 && (s[2] & 0xC0) == 0x80) {
            v = ((uint32_t)(c & 0x0F) << 12) | ((uint32_t)(s[1] & 0x3F) << 6) | (uint32_t)(s[2] & 0x3F);
            if (v >= 0x800 && (v < 0xD800 || v > 0xDFFF)) {
                *cp = v;
                return 3;
            }
        }
    } else if (c >= 0xF0 && c <= 0xF4) {
        if (n >= 4 && (s[1] & 0xC0) == 0x80 && (s[2] & 0xC0) == 0x80 && (s[3] & 0xC0) == 0x80) {
            v = ((uint32_t)(c & 0x07) << 18) | ((uint32_t)(s[1] & 0x3F) << 12) |
                ((uint32_t)(s[2] & 0x3F) << 6) | (uint32_t)(s[3] & 0x3F);
            if (v >= 0x10000 && v <= 0x10FFFF) {
                *cp = v;
                return 4;
            }
        }
    }
    *cp = PF__UTF8_INVALID;
    return 1;
}

/* The unit that ends at s[p] (units start no earlier than s[lo]): its code point, and its length
   in *len. A valid sequence ending at p is unique, so trying the lengths 1..4 finds it. */
static uint32_t pf__utf8_decode_before(const unsigned char *s, size_t lo, size_t p, size_t *len) {
    size_t k;
    uint32_t cp;
    for (k = 1; k <= 4 && k <= p - lo; k++) {
        if (pf__utf8_decode(s + p - k, k, &cp) == k && cp != PF__UTF8_INVALID) {
            *len = k;
            return cp;
        }
    }
    *len = 1;
    return PF__UTF8_INVALID;
}

/* Writes the UTF-8 form of cp (a Unicode scalar value, or PF__CP_RAW | byte: that byte) and
   returns its length. */
static size_t pf__utf8_encode(uint32_t cp, unsigned char *out) {
    if (cp & PF__CP_RAW) {
        out[0] = (unsigned char)(cp & 0xFF);
        return 1;
    }
    if (cp < 0x80) {
        out[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (unsigned char)(0xC0 | (cp >> 6));
        out[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (unsigned char)(0xE0 | (cp >> 12));
        out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (unsigned char)(0xF0 | (cp >> 18));
    out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

/* ---- Unicode data ---- */

/* Code point flags, each as one piece of HF tokenizers sees it:
   PF__UC_L      \p{L} of its regexes (Oniguruma)      PF__UC_N      \p{N}
   PF__UC_S      \s of its regexes                     PF__UC_W      \w of Rust's regex crate
   PF__UC_WS     Rust's char::is_whitespace            PF__UC_CTRL   dropped by BertNormalizer's
   PF__UC_MN     dropped by BertNormalizer's                         clean_text (Cc Cf Cn Co)
                 strip_accents (Mn)                    PF__UC_PUNCT  BertPreTokenizer punctuation */
enum {
    PF__UC_L = 1, PF__UC_N = 2, PF__UC_S = 4, PF__UC_W = 8,
    PF__UC_WS = 16, PF__UC_CTRL = 32, PF__UC_MN = 64, PF__UC_PUNCT = 128
};

#define PF__TOK_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* BEGIN GENERATED UNICODE TABLES (test/gen_unicode.py) */
/* From tokenizers 0.23.3 (probed), regex 2026.5.9, Python unicodedata 14.0.0 (corrected to HF's normalization). */
static const unsigned char pf__unicode_ascii[128] = {
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x14, 0x14, 0x34, 0x34, 0x14, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x14, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
    0x0A, 0x0A, 0x0A, 0x0A, 0x0A, 0x0A, 0x0A, 0x0A, 0x0A, 0x0A, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
    0x80, 0x09, 0x09, 0x09, 0x09, 0x09, 0x09, 0x09, 0x09, 0x09, 0x09, 0x09, 0x09, 0x09, 0x09, 0x09,
    0x09, 0x09, 0x09, 0x09, 0x09, 0x09, 0x09, 0x09, 0x09, 0x09, 0x09, 0x80, 0x80, 0x80, 0x80, 0x88,
    0x80, 0x09, 0x09, 0x09, 0x09, 0x09, 0x09, 0x09, 0x09, 0x09, 0x09, 0x09, 0x09, 0x09, 0x09, 0x09,
    0x09, 0x09, 0x09, 0x09, 0x09, 0x09, 0x09, 0x09, 0x09, 0x09, 0x09, 0x80, 0x80, 0x80, 0x80, 0x20,
};
static const uint32_t pf__unicode_classes[2378] = {
    0x00000020, 0x00000914, 0x00000B34, 0x00000D14, 0x00000E20, 0x00002014, 0x00002180, 0x0000300A,
    0x00003A80, 0x00004109, 0x00005B80, 0x00005F88, 0x00006080, 0x00006109, 0x00007B80, 0x00007F20,
    0x00008534, 0x00008620, 0x0000A014, 0x0000A180, 0x0000A200, 0x0000A780, 0x0000A800, 0x0000AA09,
    0x0000AB80, 0x0000AC00, 0x0000AD20, 0x0000AE00, 0x0000B202, 0x0000B400, 0x0000B509, 0x0000B680,
    0x0000B800, 0x0000B902, 0x0000BA09, 0x0000BB80, 0x0000BC02, 0x0000BF80, 0x0000C009, 0x0000D700,
    0x0000D809, 0x0000F700, 0x0000F809, 0x0002C200, 0x0002C609, 0x0002D200, 0x0002E009, 0x0002E500,
    0x0002EC09, 0x0002ED00, 0x0002EE09, 0x0002EF00, 0x00030048, 0x00037009, 0x00037500, 0x00037609,
    0x00037800, 0x00037A09, 0x00037E80, 0x00037F09, 0x00038000, 0x00038609, 0x00038780, 0x00038809,
    0x00038B00, 0x00038C09, 0x00038D00, 0x00038E09, 0x0003A200, 0x0003A309, 0x0003F600, 0x0003F709,
    0x00048200, 0x00048348, 0x00048808, 0x00048A09, 0x00053000, 0x00053109, 0x00055700, 0x00055909,
    0x00055A80, 0x00056009, 0x00058980, 0x00058B00, 0x00059148, 0x0005BE80, 0x0005BF48, 0x0005C080,
    0x0005C148, 0x0005C380, 0x0005C448, 0x0005C680, 0x0005C748, 0x0005C800, 0x0005D009, 0x0005EB00,
    0x0005EF09, 0x0005F380, 0x0005F500, 0x00060020, 0x00060600, 0x00060980, 0x00060B00, 0x00060C80,
    0x00060E00, 0x00061048, 0x00061B80, 0x00061C20, 0x00061D00, 0x00061E80, 0x00062009, 0x00064B48,
    0x0006600A, 0x00066A80, 0x00066E09, 0x00067048, 0x00067109, 0x0006D480, 0x0006D509, 0x0006D648,
    0x0006DD20, 0x0006DE00, 0x0006DF48, 0x0006E509, 0x0006E748, 0x0006E900, 0x0006EA48, 0x0006EE09,
    0x0006F00A, 0x0006FA09, 0x0006FD00, 0x0006FF09, 0x00070080, 0x00070E00, 0x00070F20, 0x00071009,
    0x00071148, 0x00071209, 0x00073048, 0x00074B00, 0x00074D09, 0x0007A648, 0x0007B109, 0x0007B200,
    0x0007C00A, 0x0007CA09, 0x0007EB48, 0x0007F409, 0x0007F600, 0x0007F780, 0x0007FA09, 0x0007FB00,
    0x0007FD08, 0x0007FE00, 0x00080009, 0x00081648, 0x00081A09, 0x00081B48, 0x00082409, 0x00082548,
    0x00082809, 0x00082948, 0x00082E00, 0x00083080, 0x00083F00, 0x00084009, 0x00085948, 0x00085C00,
    0x00085E80, 0x00085F00, 0x00086009, 0x00086B00, 0x00087009, 0x00088800, 0x00088909, 0x00088F00,
    0x00089708, 0x0008A009, 0x0008CA08, 0x0008E200, 0x0008E348, 0x00090308, 0x00090409, 0x00093A48,
    0x00093B08, 0x00093C48, 0x00093D09, 0x00093E08, 0x00094148, 0x00094908, 0x00094D48, 0x00094E08,
    0x00095009, 0x00095148, 0x00095809, 0x00096248, 0x00096480, 0x0009660A, 0x00097080, 0x00097109,
    0x00098148, 0x00098208, 0x00098400, 0x00098509, 0x00098D00, 0x00098F09, 0x00099100, 0x00099309,
    0x0009A900, 0x0009AA09, 0x0009B100, 0x0009B209, 0x0009B300, 0x0009B609, 0x0009BA00, 0x0009BC48,
    0x0009BD09, 0x0009BE08, 0x0009C148, 0x0009C500, 0x0009C708, 0x0009C900, 0x0009CB08, 0x0009CD48,
    0x0009CE09, 0x0009CF00, 0x0009D708, 0x0009D800, 0x0009DC09, 0x0009DE00, 0x0009DF09, 0x0009E248,
    0x0009E400, 0x0009E60A, 0x0009F009, 0x0009F200, 0x0009F402, 0x0009FA00, 0x0009FC09, 0x0009FD00,
    0x0009FE08, 0x0009FF00, 0x000A0148, 0x000A0308, 0x000A0400, 0x000A0509, 0x000A0B00, 0x000A0F09,
    0x000A1100, 0x000A1309, 0x000A2900, 0x000A2A09, 0x000A3100, 0x000A3209, 0x000A3400, 0x000A3509,
    0x000A3700, 0x000A3809, 0x000A3A00, 0x000A3C48, 0x000A3D00, 0x000A3E08, 0x000A4148, 0x000A4300,
    0x000A4748, 0x000A4900, 0x000A4B48, 0x000A4E00, 0x000A5148, 0x000A5200, 0x000A5909, 0x000A5D00,
    0x000A5E09, 0x000A5F00, 0x000A660A, 0x000A7048, 0x000A7209, 0x000A7548, 0x000A7600, 0x000A8148,
    0x000A8308, 0x000A8400, 0x000A8509, 0x000A8E00, 0x000A8F09, 0x000A9200, 0x000A9309, 0x000AA900,
    0x000AAA09, 0x000AB100, 0x000AB209, 0x000AB400, 0x000AB509, 0x000ABA00, 0x000ABC48, 0x000ABD09,
    0x000ABE08, 0x000AC148, 0x000AC600, 0x000AC748, 0x000AC908, 0x000ACA00, 0x000ACB08, 0x000ACD48,
    0x000ACE00, 0x000AD009, 0x000AD100, 0x000AE009, 0x000AE248, 0x000AE400, 0x000AE60A, 0x000AF080,
    0x000AF100, 0x000AF909, 0x000AFA08, 0x000B0000, 0x000B0148, 0x000B0208, 0x000B0400, 0x000B0509,
    0x000B0D00, 0x000B0F09, 0x000B1100, 0x000B1309, 0x000B2900, 0x000B2A09, 0x000B3100, 0x000B3209,
    0x000B3400, 0x000B3509, 0x000B3A00, 0x000B3C48, 0x000B3D09, 0x000B3E08, 0x000B3F48, 0x000B4008,
    0x000B4148, 0x000B4500, 0x000B4708, 0x000B4900, 0x000B4B08, 0x000B4D48, 0x000B4E00, 0x000B5508,
    0x000B5648, 0x000B5708, 0x000B5800, 0x000B5C09, 0x000B5E00, 0x000B5F09, 0x000B6248, 0x000B6400,
    0x000B660A, 0x000B7000, 0x000B7109, 0x000B7202, 0x000B7800, 0x000B8248, 0x000B8309, 0x000B8400,
    0x000B8509, 0x000B8B00, 0x000B8E09, 0x000B9100, 0x000B9209, 0x000B9600, 0x000B9909, 0x000B9B00,
    0x000B9C09, 0x000B9D00, 0x000B9E09, 0x000BA000, 0x000BA309, 0x000BA500, 0x000BA809, 0x000BAB00,
    0x000BAE09, 0x000BBA00, 0x000BBE08, 0x000BC048, 0x000BC108, 0x000BC300, 0x000BC608, 0x000BC900,
    0x000BCA08, 0x000BCD48, 0x000BCE00, 0x000BD009, 0x000BD100, 0x000BD708, 0x000BD800, 0x000BE60A,
    0x000BF002, 0x000BF300, 0x000C0048, 0x000C0108, 0x000C0509, 0x000C0D00, 0x000C0E09, 0x000C1100,
    0x000C1209, 0x000C2900, 0x000C2A09, 0x000C3A00, 0x000C3C08, 0x000C3D09, 0x000C3E48, 0x000C4108,
    0x000C4500, 0x000C4648, 0x000C4900, 0x000C4A48, 0x000C4E00, 0x000C5548, 0x000C5700, 0x000C5809,
    0x000C5B00, 0x000C5D09, 0x000C5E00, 0x000C6009, 0x000C6248, 0x000C6400, 0x000C660A, 0x000C7000,
    0x000C7802, 0x000C7F00, 0x000C8009, 0x000C8148, 0x000C8208, 0x000C8400, 0x000C8509, 0x000C8D00,
    0x000C8E09, 0x000C9100, 0x000C9209, 0x000CA900, 0x000CAA09, 0x000CB400, 0x000CB509, 0x000CBA00,
    0x000CBC48, 0x000CBD09, 0x000CBE08, 0x000CBF48, 0x000CC008, 0x000CC500, 0x000CC648, 0x000CC708,
    0x000CC900, 0x000CCA08, 0x000CCC48, 0x000CCE00, 0x000CD508, 0x000CD700, 0x000CDD09, 0x000CDF00,
    0x000CE009, 0x000CE248, 0x000CE400, 0x000CE60A, 0x000CF000, 0x000CF109, 0x000CF308, 0x000CF400,
    0x000D0008, 0x000D0148, 0x000D0208, 0x000D0409, 0x000D0D00, 0x000D0E09, 0x000D1100, 0x000D1209,
    0x000D3B08, 0x000D3D09, 0x000D3E08, 0x000D4148, 0x000D4500, 0x000D4608, 0x000D4900, 0x000D4A08,
    0x000D4D48, 0x000D4E09, 0x000D4F00, 0x000D5409, 0x000D5708, 0x000D5802, 0x000D5F09, 0x000D6248,
    0x000D6400, 0x000D660A, 0x000D7002, 0x000D7900, 0x000D7A09, 0x000D8000, 0x000D8108, 0x000D8400,
    0x000D8509, 0x000D9700, 0x000D9A09, 0x000DB200, 0x000DB309, 0x000DBC00, 0x000DBD09, 0x000DBE00,
    0x000DC009, 0x000DC700, 0x000DCA48, 0x000DCB00, 0x000DCF08, 0x000DD248, 0x000DD500, 0x000DD648,
    0x000DD700, 0x000DD808, 0x000DE000, 0x000DE60A, 0x000DF000, 0x000DF208, 0x000DF480, 0x000DF500,
    0x000E0109, 0x000E3148, 0x000E3209, 0x000E3448, 0x000E3B00, 0x000E4009, 0x000E4748, 0x000E4F80,
    0x000E500A, 0x000E5A80, 0x000E5C00, 0x000E8109, 0x000E8300, 0x000E8409, 0x000E8500, 0x000E8609,
    0x000E8B00, 0x000E8C09, 0x000EA400, 0x000EA509, 0x000EA600, 0x000EA709, 0x000EB148, 0x000EB209,
    0x000EB448, 0x000EBA08, 0x000EBB48, 0x000EBD09, 0x000EBE00, 0x000EC009, 0x000EC500, 0x000EC609,
    0x000EC700, 0x000EC848, 0x000ECE08, 0x000ECF00, 0x000ED00A, 0x000EDA00, 0x000EDC09, 0x000EE000,
    0x000F0009, 0x000F0100, 0x000F0480, 0x000F1300, 0x000F1480, 0x000F1500, 0x000F1848, 0x000F1A00,
    0x000F200A, 0x000F2A02, 0x000F3400, 0x000F3548, 0x000F3600, 0x000F3748, 0x000F3800, 0x000F3948,
    0x000F3A80, 0x000F3E08, 0x000F4009, 0x000F4800, 0x000F4909, 0x000F6D00, 0x000F7148, 0x000F7F08,
    0x000F8048, 0x000F8580, 0x000F8648, 0x000F8809, 0x000F8D48, 0x000F9800, 0x000F9948, 0x000FBD00,
    0x000FC648, 0x000FC700, 0x000FD080, 0x000FD500, 0x000FD980, 0x000FDB00, 0x00100009, 0x00102B08,
    0x00102D48, 0x00103108, 0x00103248, 0x00103808, 0x00103948, 0x00103B08, 0x00103D48, 0x00103F09,
    0x0010400A, 0x00104A80, 0x00105009, 0x00105608, 0x00105848, 0x00105A09, 0x00105E48, 0x00106109,
    0x00106208, 0x00106509, 0x00106708, 0x00106E09, 0x00107148, 0x00107509, 0x00108248, 0x00108308,
    0x00108548, 0x00108708, 0x00108D48, 0x00108E09, 0x00108F08, 0x0010900A, 0x00109A08, 0x00109D48,
    0x00109E00, 0x0010A009, 0x0010C600, 0x0010C709, 0x0010C800, 0x0010CD09, 0x0010CE00, 0x0010D009,
    0x0010FB80, 0x0010FC09, 0x00124900, 0x00124A09, 0x00124E00, 0x00125009, 0x00125700, 0x00125809,
    0x00125900, 0x00125A09, 0x00125E00, 0x00126009, 0x00128900, 0x00128A09, 0x00128E00, 0x00129009,
    0x0012B100, 0x0012B209, 0x0012B600, 0x0012B809, 0x0012BF00, 0x0012C009, 0x0012C100, 0x0012C209,
    0x0012C600, 0x0012C809, 0x0012D700, 0x0012D809, 0x00131100, 0x00131209, 0x00131600, 0x00131809,
    0x00135B00, 0x00135D48, 0x00136080, 0x00136902, 0x00137D00, 0x00138009, 0x00139000, 0x0013A009,
    0x0013F600, 0x0013F809, 0x0013FE00, 0x00140080, 0x00140109, 0x00166D80, 0x00166F09, 0x00168014,
    0x00168109, 0x00169B80, 0x00169D00, 0x0016A009, 0x0016EB80, 0x0016EE0A, 0x0016F109, 0x0016F900,
    0x00170009, 0x00171248, 0x00171508, 0x00171600, 0x00171F09, 0x00173248, 0x00173580, 0x00173700,
    0x00174009, 0x00175248, 0x00175400, 0x00176009, 0x00176D00, 0x00176E09, 0x00177100, 0x00177248,
    0x00177400, 0x00178009, 0x0017B448, 0x0017B608, 0x0017B748, 0x0017BE08, 0x0017C648, 0x0017C708,
    0x0017C948, 0x0017D480, 0x0017D709, 0x0017D880, 0x0017DB00, 0x0017DC09, 0x0017DD48, 0x0017DE00,
    0x0017E00A, 0x0017EA00, 0x0017F002, 0x0017FA00, 0x00180080, 0x00180B48, 0x00180E20, 0x00180F08,
    0x0018100A, 0x00181A00, 0x00182009, 0x00187900, 0x00188009, 0x00188508, 0x00188709, 0x0018A948,
    0x0018AA09, 0x0018AB00, 0x0018B009, 0x0018F600, 0x00190009, 0x00191F00, 0x00192048, 0x00192308,
    0x00192748, 0x00192908, 0x00192C00, 0x00193008, 0x00193248, 0x00193308, 0x00193948, 0x00193C00,
    0x00194480, 0x0019460A, 0x00195009, 0x00196E00, 0x00197009, 0x00197500, 0x00198009, 0x0019AC00,
    0x0019B009, 0x0019CA00, 0x0019D00A, 0x0019DA02, 0x0019DB00, 0x001A0009, 0x001A1748, 0x001A1908,
    0x001A1B48, 0x001A1C00, 0x001A1E80, 0x001A2009, 0x001A5508, 0x001A5648, 0x001A5708, 0x001A5848,
    0x001A5F00, 0x001A6048, 0x001A6108, 0x001A6248, 0x001A6308, 0x001A6548, 0x001A6D08, 0x001A7348,
    0x001A7D00, 0x001A7F48, 0x001A800A, 0x001A8A00, 0x001A900A, 0x001A9A00, 0x001AA080, 0x001AA709,
    0x001AA880, 0x001AAE00, 0x001AB048, 0x001ABE08, 0x001ADE00, 0x001AE008, 0x001AEC00, 0x001B0048,
    0x001B0408, 0x001B0509, 0x001B3448, 0x001B3508, 0x001B3648, 0x001B3B08, 0x001B3C48, 0x001B3D08,
    0x001B4248, 0x001B4308, 0x001B4509, 0x001B4D00, 0x001B500A, 0x001B5A80, 0x001B6100, 0x001B6B48,
    0x001B7400, 0x001B8048, 0x001B8208, 0x001B8309, 0x001BA108, 0x001BA248, 0x001BA608, 0x001BA848,
    0x001BAA08, 0x001BAB48, 0x001BAE09, 0x001BB00A, 0x001BBA09, 0x001BE648, 0x001BE708, 0x001BE848,
    0x001BEA08, 0x001BED48, 0x001BEE08, 0x001BEF48, 0x001BF208, 0x001BF400, 0x001BFC80, 0x001C0009,
    0x001C2408, 0x001C2C48, 0x001C3408, 0x001C3648, 0x001C3800, 0x001C3B80, 0x001C400A, 0x001C4A00,
    0x001C4D09, 0x001C500A, 0x001C5A09, 0x001C7E80, 0x001C8009, 0x001C8B00, 0x001C9009, 0x001CBB00,
    0x001CBD09, 0x001CC080, 0x001CC800, 0x001CD048, 0x001CD380, 0x001CD448, 0x001CE108, 0x001CE248,
    0x001CE909, 0x001CED48, 0x001CEE09, 0x001CF448, 0x001CF509, 0x001CF708, 0x001CF848, 0x001CFA09,
    0x001CFB00, 0x001D0009, 0x001DC048, 0x001DF608, 0x001DFC48, 0x001E0009, 0x001F1600, 0x001F1809,
    0x001F1E00, 0x001F2009, 0x001F4600, 0x001F4809, 0x001F4E00, 0x001F5009, 0x001F5800, 0x001F5909,
    0x001F5A00, 0x001F5B09, 0x001F5C00, 0x001F5D09, 0x001F5E00, 0x001F5F09, 0x001F7E00, 0x001F8009,
    0x001FB500, 0x001FB609, 0x001FBD00, 0x001FBE09, 0x001FBF00, 0x001FC209, 0x001FC500, 0x001FC609,
    0x001FCD00, 0x001FD009, 0x001FD400, 0x001FD609, 0x001FDC00, 0x001FE009, 0x001FED00, 0x001FF209,
    0x001FF500, 0x001FF609, 0x001FFD00, 0x00200014, 0x00200B20, 0x00200C28, 0x00200E20, 0x00201080,
    0x00202814, 0x00202A20, 0x00202F14, 0x00203080, 0x00203F88, 0x00204180, 0x00204400, 0x00204580,
    0x00205200, 0x00205380, 0x00205488, 0x00205580, 0x00205F14, 0x00206020, 0x00206500, 0x00206620,
    0x00207002, 0x00207109, 0x00207200, 0x00207402, 0x00207A00, 0x00207D80, 0x00207F09, 0x00208002,
    0x00208A00, 0x00208D80, 0x00208F00, 0x00209009, 0x00209D00, 0x0020D048, 0x0020DD08, 0x0020E148,
    0x0020E208, 0x0020E548, 0x0020F100, 0x00210209, 0x00210300, 0x00210709, 0x00210800, 0x00210A09,
    0x00211400, 0x00211509, 0x00211600, 0x00211909, 0x00211E00, 0x00212409, 0x00212500, 0x00212609,
    0x00212700, 0x00212809, 0x00212900, 0x00212A09, 0x00212E00, 0x00212F09, 0x00213A00, 0x00213C09,
    0x00214000, 0x00214509, 0x00214A00, 0x00214E09, 0x00214F00, 0x00215002, 0x0021600A, 0x00218309,
    0x0021850A, 0x00218902, 0x00218A00, 0x00230880, 0x00230C00, 0x00232980, 0x00232B00, 0x00246002,
    0x00249C00, 0x0024B608, 0x0024EA02, 0x00250000, 0x00276880, 0x00277602, 0x00279400, 0x0027C580,
    0x0027C700, 0x0027E680, 0x0027F000, 0x00298380, 0x00299900, 0x0029D880, 0x0029DC00, 0x0029FC80,
    0x0029FE00, 0x002C0009, 0x002CE500, 0x002CEB09, 0x002CEF48, 0x002CF209, 0x002CF400, 0x002CF980,
    0x002CFD02, 0x002CFE80, 0x002D0009, 0x002D2600, 0x002D2709, 0x002D2800, 0x002D2D09, 0x002D2E00,
    0x002D3009, 0x002D6800, 0x002D6F09, 0x002D7080, 0x002D7100, 0x002D7F48, 0x002D8009, 0x002D9700,
    0x002DA009, 0x002DA700, 0x002DA809, 0x002DAF00, 0x002DB009, 0x002DB700, 0x002DB809, 0x002DBF00,
    0x002DC009, 0x002DC700, 0x002DC809, 0x002DCF00, 0x002DD009, 0x002DD700, 0x002DD809, 0x002DDF00,
    0x002DE048, 0x002E0080, 0x002E2F09, 0x002E3080, 0x002E4300, 0x00300014, 0x00300180, 0x00300400,
    0x00300509, 0x0030070A, 0x00300880, 0x00301200, 0x00301480, 0x00302000, 0x0030210A, 0x00302A48,
    0x00302E08, 0x00303080, 0x00303109, 0x00303600, 0x0030380A, 0x00303B09, 0x00303D80, 0x00303E00,
    0x00304109, 0x00309700, 0x00309948, 0x00309B00, 0x00309D09, 0x0030A080, 0x0030A109, 0x0030FB80,
    0x0030FC09, 0x00310000, 0x00310509, 0x00313000, 0x00313109, 0x00318F00, 0x00319202, 0x00319600,
    0x0031A009, 0x0031C000, 0x0031F009, 0x00320000, 0x00322002, 0x00322A00, 0x00324802, 0x00325000,
    0x00325102, 0x00326000, 0x00328002, 0x00328A00, 0x0032B102, 0x0032C000, 0x00340009, 0x004DC000,
    0x004E0009, 0x00A48D00, 0x00A4D009, 0x00A4FE80, 0x00A50009, 0x00A60D80, 0x00A61009, 0x00A6200A,
    0x00A62A09, 0x00A62C00, 0x00A64009, 0x00A66F48, 0x00A67008, 0x00A67380, 0x00A67448, 0x00A67E80,
    0x00A67F09, 0x00A69E48, 0x00A6A009, 0x00A6E60A, 0x00A6F048, 0x00A6F280, 0x00A6F800, 0x00A71709,
    0x00A72000, 0x00A72209, 0x00A78900, 0x00A78B09, 0x00A7CE00, 0x00A7D009, 0x00A7D200, 0x00A7D309,
    0x00A7D400, 0x00A7D509, 0x00A7DD00, 0x00A7F209, 0x00A80248, 0x00A80309, 0x00A80648, 0x00A80709,
    0x00A80B48, 0x00A80C09, 0x00A82308, 0x00A82548, 0x00A82708, 0x00A82800, 0x00A82C08, 0x00A82D00,
    0x00A83002, 0x00A83600, 0x00A84009, 0x00A87480, 0x00A87800, 0x00A88008, 0x00A88209, 0x00A8B408,
    0x00A8C448, 0x00A8C508, 0x00A8C600, 0x00A8CE80, 0x00A8D00A, 0x00A8DA00, 0x00A8E048, 0x00A8F209,
    0x00A8F880, 0x00A8FB09, 0x00A8FC80, 0x00A8FD09, 0x00A8FF08, 0x00A9000A, 0x00A90A09, 0x00A92648,
    0x00A92E80, 0x00A93009, 0x00A94748, 0x00A95208, 0x00A95400, 0x00A95F80, 0x00A96009, 0x00A97D00,
    0x00A98048, 0x00A98308, 0x00A98409, 0x00A9B348, 0x00A9B408, 0x00A9B648, 0x00A9BA08, 0x00A9BC48,
    0x00A9BD08, 0x00A9C180, 0x00A9CE00, 0x00A9CF09, 0x00A9D00A, 0x00A9DA00, 0x00A9DE80, 0x00A9E009,
    0x00A9E548, 0x00A9E609, 0x00A9F00A, 0x00A9FA09, 0x00A9FF00, 0x00AA0009, 0x00AA2948, 0x00AA2F08,
    0x00AA3148, 0x00AA3308, 0x00AA3548, 0x00AA3700, 0x00AA4009, 0x00AA4348, 0x00AA4409, 0x00AA4C48,
    0x00AA4D08, 0x00AA4E00, 0x00AA500A, 0x00AA5A00, 0x00AA5C80, 0x00AA6009, 0x00AA7700, 0x00AA7A09,
    0x00AA7B08, 0x00AA7C48, 0x00AA7D08, 0x00AA7E09, 0x00AAB048, 0x00AAB109, 0x00AAB248, 0x00AAB509,
    0x00AAB748, 0x00AAB909, 0x00AABE48, 0x00AAC009, 0x00AAC148, 0x00AAC209, 0x00AAC300, 0x00AADB09,
    0x00AADE80, 0x00AAE009, 0x00AAEB08, 0x00AAEC48, 0x00AAEE08, 0x00AAF080, 0x00AAF209, 0x00AAF508,
    0x00AAF648, 0x00AAF700, 0x00AB0109, 0x00AB0700, 0x00AB0909, 0x00AB0F00, 0x00AB1109, 0x00AB1700,
    0x00AB2009, 0x00AB2700, 0x00AB2809, 0x00AB2F00, 0x00AB3009, 0x00AB5B00, 0x00AB5C09, 0x00AB6A00,
    0x00AB7009, 0x00ABE308, 0x00ABE548, 0x00ABE608, 0x00ABE848, 0x00ABE908, 0x00ABEB80, 0x00ABEC08,
    0x00ABED48, 0x00ABEE00, 0x00ABF00A, 0x00ABFA00, 0x00AC0009, 0x00D7A400, 0x00D7B009, 0x00D7C700,
    0x00D7CB09, 0x00D7FC00, 0x00E00020, 0x00F90009, 0x00FA6E00, 0x00FA7009, 0x00FADA00, 0x00FB0009,
    0x00FB0700, 0x00FB1309, 0x00FB1800, 0x00FB1D09, 0x00FB1E48, 0x00FB1F09, 0x00FB2900, 0x00FB2A09,
    0x00FB3700, 0x00FB3809, 0x00FB3D00, 0x00FB3E09, 0x00FB3F00, 0x00FB4009, 0x00FB4200, 0x00FB4309,
    0x00FB4500, 0x00FB4609, 0x00FBB200, 0x00FBD309, 0x00FD3E80, 0x00FD4000, 0x00FD5009, 0x00FD9000,
    0x00FD9209, 0x00FDC800, 0x00FDF009, 0x00FDFC00, 0x00FE0048, 0x00FE1080, 0x00FE1A00, 0x00FE2048,
    0x00FE3080, 0x00FE3388, 0x00FE3580, 0x00FE4D88, 0x00FE5080, 0x00FE5300, 0x00FE5480, 0x00FE6200,
    0x00FE6380, 0x00FE6400, 0x00FE6880, 0x00FE6900, 0x00FE6A80, 0x00FE6C00, 0x00FE7009, 0x00FE7500,
    0x00FE7609, 0x00FEFD00, 0x00FEFF20, 0x00FF0000, 0x00FF0180, 0x00FF0400, 0x00FF0580, 0x00FF0B00,
    0x00FF0C80, 0x00FF100A, 0x00FF1A80, 0x00FF1C00, 0x00FF1F80, 0x00FF2109, 0x00FF3B80, 0x00FF3E00,
    0x00FF3F88, 0x00FF4000, 0x00FF4109, 0x00FF5B80, 0x00FF5C00, 0x00FF5D80, 0x00FF5E00, 0x00FF5F80,
    0x00FF6609, 0x00FFBF00, 0x00FFC209, 0x00FFC800, 0x00FFCA09, 0x00FFD000, 0x00FFD209, 0x00FFD800,
    0x00FFDA09, 0x00FFDD00, 0x00FFF920, 0x00FFFC00, 0x00FFFD20, 0x00FFFE00, 0x01000009, 0x01000C00,
    0x01000D09, 0x01002700, 0x01002809, 0x01003B00, 0x01003C09, 0x01003E00, 0x01003F09, 0x01004E00,
    0x01005009, 0x01005E00, 0x01008009, 0x0100FB00, 0x01010080, 0x01010300, 0x01010702, 0x01013400,
    0x0101400A, 0x01017502, 0x01017900, 0x01018A02, 0x01018C00, 0x0101FD48, 0x0101FE00, 0x01028009,
    0x01029D00, 0x0102A009, 0x0102D100, 0x0102E048, 0x0102E102, 0x0102FC00, 0x01030009, 0x01032002,
    0x01032400, 0x01032D09, 0x0103410A, 0x01034209, 0x01034A0A, 0x01034B00, 0x01035009, 0x01037648,
    0x01037B00, 0x01038009, 0x01039E00, 0x01039F80, 0x0103A009, 0x0103C400, 0x0103C809, 0x0103D080,
    0x0103D10A, 0x0103D600, 0x01040009, 0x01049E00, 0x0104A00A, 0x0104AA00, 0x0104B009, 0x0104D400,
    0x0104D809, 0x0104FC00, 0x01050009, 0x01052800, 0x01053009, 0x01056400, 0x01056F80, 0x01057009,
    0x01057B00, 0x01057C09, 0x01058B00, 0x01058C09, 0x01059300, 0x01059409, 0x01059600, 0x01059709,
    0x0105A200, 0x0105A309, 0x0105B200, 0x0105B309, 0x0105BA00, 0x0105BB09, 0x0105BD00, 0x0105C009,
    0x0105F400, 0x01060009, 0x01073700, 0x01074009, 0x01075600, 0x01076009, 0x01076800, 0x01078009,
    0x01078600, 0x01078709, 0x0107B100, 0x0107B209, 0x0107BB00, 0x01080009, 0x01080600, 0x01080809,
    0x01080900, 0x01080A09, 0x01083600, 0x01083709, 0x01083900, 0x01083C09, 0x01083D00, 0x01083F09,
    0x01085600, 0x01085780, 0x01085802, 0x01086009, 0x01087700, 0x01087902, 0x01088009, 0x01089F00,
    0x0108A702, 0x0108B000, 0x0108E009, 0x0108F300, 0x0108F409, 0x0108F600, 0x0108FB02, 0x01090009,
    0x01091602, 0x01091C00, 0x01091F80, 0x01092009, 0x01093A00, 0x01093F80, 0x01094000, 0x01098009,
    0x0109B800, 0x0109BC02, 0x0109BE09, 0x0109C002, 0x0109D000, 0x0109D202, 0x010A0009, 0x010A0148,
    0x010A0400, 0x010A0548, 0x010A0700, 0x010A0C48, 0x010A1009, 0x010A1400, 0x010A1509, 0x010A1800,
    0x010A1909, 0x010A3600, 0x010A3848, 0x010A3B00, 0x010A3F48, 0x010A4002, 0x010A4900, 0x010A5080,
    0x010A5900, 0x010A6009, 0x010A7D02, 0x010A7F80, 0x010A8009, 0x010A9D02, 0x010AA000, 0x010AC009,
    0x010AC800, 0x010AC909, 0x010AE548, 0x010AE700, 0x010AEB02, 0x010AF080, 0x010AF700, 0x010B0009,
    0x010B3600, 0x010B3980, 0x010B4009, 0x010B5600, 0x010B5802, 0x010B6009, 0x010B7300, 0x010B7802,
    0x010B8009, 0x010B9200, 0x010B9980, 0x010B9D00, 0x010BA902, 0x010BB000, 0x010C0009, 0x010C4900,
    0x010C8009, 0x010CB300, 0x010CC009, 0x010CF300, 0x010CFA02, 0x010D0009, 0x010D2408, 0x010D2800,
    0x010D300A, 0x010D3A00, 0x010D400A, 0x010D4A09, 0x010D6600, 0x010D6908, 0x010D6E00, 0x010D6F09,
    0x010D8600, 0x010E6002, 0x010E7F00, 0x010E8009, 0x010EAA00, 0x010EAB08, 0x010EAD00, 0x010EB009,
    0x010EB200, 0x010EC209, 0x010EC500, 0x010EFA08, 0x010F0009, 0x010F1D02, 0x010F2709, 0x010F2800,
    0x010F3009, 0x010F4608, 0x010F5102, 0x010F5500, 0x010F7009, 0x010F8208, 0x010F8600, 0x010FB009,
    0x010FC502, 0x010FCC00, 0x010FE009, 0x010FF700, 0x01100008, 0x01100148, 0x01100208, 0x01100309,
    0x01103848, 0x01104780, 0x01104E00, 0x01105202, 0x0110660A, 0x01107008, 0x01107109, 0x01107308,
    0x01107509, 0x01107600, 0x01107F48, 0x01108208, 0x01108309, 0x0110B008, 0x0110B348, 0x0110B708,
    0x0110B948, 0x0110BB80, 0x0110BD20, 0x0110BE80, 0x0110C208, 0x0110C300, 0x0110D009, 0x0110E900,
    0x0110F00A, 0x0110FA00, 0x01110048, 0x01110309, 0x01112748, 0x01112C08, 0x01112D48, 0x01113500,
    0x0111360A, 0x01114080, 0x01114409, 0x01114508, 0x01114709, 0x01114800, 0x01115009, 0x01117348,
    0x01117480, 0x01117609, 0x01117700, 0x01118048, 0x01118208, 0x01118309, 0x0111B308, 0x0111B648,
    0x0111BF08, 0x0111C109, 0x0111C580, 0x0111C988, 0x0111CA48, 0x0111CD80, 0x0111CE08, 0x0111D00A,
    0x0111DA09, 0x0111DB80, 0x0111DC09, 0x0111DD80, 0x0111E000, 0x0111E102, 0x0111F500, 0x01120009,
    0x01121200, 0x01121309, 0x01122C08, 0x01122F48, 0x01123208, 0x01123448, 0x01123508, 0x01123648,
    0x01123880, 0x01123E08, 0x01123F09, 0x01124108, 0x01124200, 0x01128009, 0x01128700, 0x01128809,
    0x01128900, 0x01128A09, 0x01128E00, 0x01128F09, 0x01129E00, 0x01129F09, 0x0112A980, 0x0112AA00,
    0x0112B009, 0x0112DF48, 0x0112E008, 0x0112E348, 0x0112EB00, 0x0112F00A, 0x0112FA00, 0x01130048,
    0x01130208, 0x01130400, 0x01130509, 0x01130D00, 0x01130F09, 0x01131100, 0x01131309, 0x01132900,
    0x01132A09, 0x01133100, 0x01133209, 0x01133400, 0x01133509, 0x01133A00, 0x01133B08, 0x01133C48,
    0x01133D09, 0x01133E08, 0x01134048, 0x01134108, 0x01134500, 0x01134708, 0x01134900, 0x01134B08,
    0x01134E00, 0x01135009, 0x01135100, 0x01135708, 0x01135800, 0x01135D09, 0x01136208, 0x01136400,
    0x01136648, 0x01136D00, 0x01137048, 0x01137500, 0x01138009, 0x01138A00, 0x01138B09, 0x01138C00,
    0x01138E09, 0x01138F00, 0x01139009, 0x0113B600, 0x0113B709, 0x0113B808, 0x0113C100, 0x0113C208,
    0x0113C300, 0x0113C508, 0x0113C600, 0x0113C708, 0x0113CB00, 0x0113CC08, 0x0113D109, 0x0113D208,
    0x0113D309, 0x0113D400, 0x0113E108, 0x0113E300, 0x01140009, 0x01143508, 0x01144709, 0x01144B00,
    0x0114500A, 0x01145A00, 0x01145E08, 0x01145F09, 0x01146200, 0x01148009, 0x0114B008, 0x0114B348,
    0x0114B908, 0x0114BA48, 0x0114BB08, 0x0114BF48, 0x0114C108, 0x0114C248, 0x0114C409, 0x0114C680,
    0x0114C709, 0x0114C800, 0x0114D00A, 0x0114DA00, 0x01158009, 0x0115AF08, 0x0115B248, 0x0115B600,
    0x0115B808, 0x0115BC48, 0x0115BE08, 0x0115BF48, 0x0115C180, 0x0115D809, 0x0115DC48, 0x0115DE00,
    0x01160009, 0x01163008, 0x01163348, 0x01163B08, 0x01163D48, 0x01163E08, 0x01163F48, 0x01164180,
    0x01164409, 0x01164500, 0x0116500A, 0x01165A00, 0x01168009, 0x0116AB48, 0x0116AC08, 0x0116AD48,
    0x0116AE08, 0x0116B048, 0x0116B608, 0x0116B748, 0x0116B809, 0x0116B900, 0x0116C00A, 0x0116CA00,
    0x0116D00A, 0x0116E400, 0x01170009, 0x01171B00, 0x01171D48, 0x01172008, 0x01172248, 0x01172608,
    0x01172748, 0x01172C00, 0x0117300A, 0x01173A02, 0x01173C80, 0x01173F00, 0x01174009, 0x01174700,
    0x01180009, 0x01182C08, 0x01183B00, 0x0118A009, 0x0118E00A, 0x0118EA02, 0x0118F300, 0x0118FF09,
    0x01190700, 0x01190909, 0x01190A00, 0x01190C09, 0x01191400, 0x01191509, 0x01191700, 0x01191809,
    0x01193008, 0x01193600, 0x01193708, 0x01193900, 0x01193B08, 0x01193F09, 0x01194008, 0x01194109,
    0x01194208, 0x01194400, 0x0119500A, 0x01195A00, 0x0119A009, 0x0119A800, 0x0119AA09, 0x0119D108,
    0x0119D800, 0x0119DA08, 0x0119E109, 0x0119E200, 0x0119E309, 0x0119E408, 0x0119E500, 0x011A0009,
    0x011A0108, 0x011A0B09, 0x011A3308, 0x011A3A09, 0x011A3B08, 0x011A3F00, 0x011A4708, 0x011A4800,
    0x011A5009, 0x011A5108, 0x011A5C09, 0x011A8A08, 0x011A9A00, 0x011A9D09, 0x011A9E00, 0x011AB009,
    0x011AF900, 0x011B6008, 0x011B6800, 0x011BC009, 0x011BE100, 0x011BF00A, 0x011BFA00, 0x011C0009,
    0x011C0900, 0x011C0A09, 0x011C2F08, 0x011C3700, 0x011C3808, 0x011C4009, 0x011C4100, 0x011C500A,
    0x011C5A02, 0x011C6D00, 0x011C7209, 0x011C9000, 0x011C9208, 0x011CA800, 0x011CA908, 0x011CB700,
    0x011D0009, 0x011D0700, 0x011D0809, 0x011D0A00, 0x011D0B09, 0x011D3108, 0x011D3700, 0x011D3A08,
    0x011D3B00, 0x011D3C08, 0x011D3E00, 0x011D3F08, 0x011D4609, 0x011D4708, 0x011D4800, 0x011D500A,
    0x011D5A00, 0x011D6009, 0x011D6600, 0x011D6709, 0x011D6900, 0x011D6A09, 0x011D8A08, 0x011D8F00,
    0x011D9008, 0x011D9200, 0x011D9308, 0x011D9809, 0x011D9900, 0x011DA00A, 0x011DAA00, 0x011EE009,
    0x011EF308, 0x011EF700, 0x011F0008, 0x011F0209, 0x011F0308, 0x011F0409, 0x011F1100, 0x011F1209,
    0x011F3408, 0x011F3B00, 0x011F3E08, 0x011F4300, 0x011F500A, 0x011F5A08, 0x011F5B00, 0x011FB009,
    0x011FB100, 0x011FC002, 0x011FD500, 0x01200009, 0x01239A00, 0x0124000A, 0x01246F00, 0x01247080,
    0x01247500, 0x01248009, 0x01254400, 0x012F9009, 0x012FF100, 0x01300009, 0x01343000, 0x01344008,
    0x01344109, 0x01344708, 0x01345600, 0x01346009, 0x0143FB00, 0x01440009, 0x01464700, 0x01610009,
    0x01611E08, 0x0161300A, 0x01613A00, 0x01680009, 0x016A3900, 0x016A4009, 0x016A5F00, 0x016A600A,
    0x016A6A00, 0x016A6E80, 0x016A7009, 0x016ABF00, 0x016AC00A, 0x016ACA00, 0x016AD009, 0x016AEE00,
    0x016AF048, 0x016AF580, 0x016AF600, 0x016B0009, 0x016B3048, 0x016B3780, 0x016B3C00, 0x016B4009,
    0x016B4480, 0x016B4500, 0x016B500A, 0x016B5A00, 0x016B5B02, 0x016B6200, 0x016B6309, 0x016B7800,
    0x016B7D09, 0x016B9000, 0x016D4009, 0x016D6D00, 0x016D700A, 0x016D7A00, 0x016E4009, 0x016E8002,
    0x016E9700, 0x016F0009, 0x016F4B00, 0x016F4F08, 0x016F5009, 0x016F5108, 0x016F8800, 0x016F8F48,
    0x016F9309, 0x016FA000, 0x016FE009, 0x016FE200, 0x016FE309, 0x016FE408, 0x016FE500, 0x016FF008,
    0x016FF200, 0x01700009, 0x0187F800, 0x01880009, 0x018CD600, 0x018CFF09, 0x018D0900, 0x01AFF009,
    0x01AFF400, 0x01AFF509, 0x01AFFC00, 0x01AFFD09, 0x01AFFF00, 0x01B00009, 0x01B12300, 0x01B13209,
    0x01B13300, 0x01B15009, 0x01B15300, 0x01B15509, 0x01B15600, 0x01B16409, 0x01B16800, 0x01B17009,
    0x01B2FC00, 0x01BC0009, 0x01BC6B00, 0x01BC7009, 0x01BC7D00, 0x01BC8009, 0x01BC8900, 0x01BC9009,
    0x01BC9A00, 0x01BC9D48, 0x01BC9F80, 0x01BCA020, 0x01BCA400, 0x01CCF00A, 0x01CCFA00, 0x01CF0008,
    0x01CF2E00, 0x01CF3008, 0x01CF4700, 0x01D16508, 0x01D16748, 0x01D16A00, 0x01D16D08, 0x01D17320,
    0x01D17B48, 0x01D18300, 0x01D18548, 0x01D18C00, 0x01D1AA48, 0x01D1AE00, 0x01D24248, 0x01D24500,
    0x01D2C002, 0x01D2D400, 0x01D2E002, 0x01D2F400, 0x01D36002, 0x01D37900, 0x01D40009, 0x01D45500,
    0x01D45609, 0x01D49D00, 0x01D49E09, 0x01D4A000, 0x01D4A209, 0x01D4A300, 0x01D4A509, 0x01D4A700,
    0x01D4A909, 0x01D4AD00, 0x01D4AE09, 0x01D4BA00, 0x01D4BB09, 0x01D4BC00, 0x01D4BD09, 0x01D4C400,
    0x01D4C509, 0x01D50600, 0x01D50709, 0x01D50B00, 0x01D50D09, 0x01D51500, 0x01D51609, 0x01D51D00,
    0x01D51E09, 0x01D53A00, 0x01D53B09, 0x01D53F00, 0x01D54009, 0x01D54500, 0x01D54609, 0x01D54700,
    0x01D54A09, 0x01D55100, 0x01D55209, 0x01D6A600, 0x01D6A809, 0x01D6C100, 0x01D6C209, 0x01D6DB00,
    0x01D6DC09, 0x01D6FB00, 0x01D6FC09, 0x01D71500, 0x01D71609, 0x01D73500, 0x01D73609, 0x01D74F00,
    0x01D75009, 0x01D76F00, 0x01D77009, 0x01D78900, 0x01D78A09, 0x01D7A900, 0x01D7AA09, 0x01D7C300,
    0x01D7C409, 0x01D7CC00, 0x01D7CE0A, 0x01D80000, 0x01DA0048, 0x01DA3700, 0x01DA3B48, 0x01DA6D00,
    0x01DA7548, 0x01DA7600, 0x01DA8448, 0x01DA8500, 0x01DA8780, 0x01DA8C00, 0x01DA9B48, 0x01DAA000,
    0x01DAA148, 0x01DAB000, 0x01DF0009, 0x01DF1F00, 0x01DF2509, 0x01DF2B00, 0x01E00008, 0x01E00700,
    0x01E00808, 0x01E01900, 0x01E01B08, 0x01E02200, 0x01E02308, 0x01E02500, 0x01E02608, 0x01E02B00,
    0x01E03009, 0x01E06E00, 0x01E08F08, 0x01E09000, 0x01E10009, 0x01E12D00, 0x01E13008, 0x01E13709,
    0x01E13E00, 0x01E1400A, 0x01E14A00, 0x01E14E09, 0x01E14F00, 0x01E29009, 0x01E2AE08, 0x01E2AF00,
    0x01E2C009, 0x01E2EC08, 0x01E2F00A, 0x01E2FA00, 0x01E4D009, 0x01E4EC08, 0x01E4F00A, 0x01E4FA00,
    0x01E5D009, 0x01E5EE08, 0x01E5F009, 0x01E5F10A, 0x01E5FB00, 0x01E6E308, 0x01E6E400, 0x01E6E608,
    0x01E6E700, 0x01E6EE08, 0x01E6F000, 0x01E6F508, 0x01E6F600, 0x01E7E009, 0x01E7E700, 0x01E7E809,
    0x01E7EC00, 0x01E7ED09, 0x01E7EF00, 0x01E7F009, 0x01E7FF00, 0x01E80009, 0x01E8C500, 0x01E8C702,
    0x01E8D048, 0x01E8D700, 0x01E90009, 0x01E94408, 0x01E94B09, 0x01E94C00, 0x01E9500A, 0x01E95A00,
    0x01EC7102, 0x01ECAC00, 0x01ECAD02, 0x01ECB000, 0x01ECB102, 0x01ECB500, 0x01ED0102, 0x01ED2E00,
    0x01ED2F02, 0x01ED3E00, 0x01EE0009, 0x01EE0400, 0x01EE0509, 0x01EE2000, 0x01EE2109, 0x01EE2300,
    0x01EE2409, 0x01EE2500, 0x01EE2709, 0x01EE2800, 0x01EE2909, 0x01EE3300, 0x01EE3409, 0x01EE3800,
    0x01EE3909, 0x01EE3A00, 0x01EE3B09, 0x01EE3C00, 0x01EE4209, 0x01EE4300, 0x01EE4709, 0x01EE4800,
    0x01EE4909, 0x01EE4A00, 0x01EE4B09, 0x01EE4C00, 0x01EE4D09, 0x01EE5000, 0x01EE5109, 0x01EE5300,
    0x01EE5409, 0x01EE5500, 0x01EE5709, 0x01EE5800, 0x01EE5909, 0x01EE5A00, 0x01EE5B09, 0x01EE5C00,
    0x01EE5D09, 0x01EE5E00, 0x01EE5F09, 0x01EE6000, 0x01EE6109, 0x01EE6300, 0x01EE6409, 0x01EE6500,
    0x01EE6709, 0x01EE6B00, 0x01EE6C09, 0x01EE7300, 0x01EE7409, 0x01EE7800, 0x01EE7909, 0x01EE7D00,
    0x01EE7E09, 0x01EE7F00, 0x01EE8009, 0x01EE8A00, 0x01EE8B09, 0x01EE9C00, 0x01EEA109, 0x01EEA400,
    0x01EEA509, 0x01EEAA00, 0x01EEAB09, 0x01EEBC00, 0x01F10002, 0x01F10D00, 0x01F13008, 0x01F14A00,
    0x01F15008, 0x01F16A00, 0x01F17008, 0x01F18A00, 0x01FBF00A, 0x01FBFA00, 0x02000009, 0x02A6E000,
    0x02A70009, 0x02B73A00, 0x02B74009, 0x02B81E00, 0x02B82009, 0x02CEA200, 0x02CEB009, 0x02EBE100,
    0x02EBF009, 0x02EE5E00, 0x02F80009, 0x02FA1E00, 0x03000009, 0x03134B00, 0x03135009, 0x0323B000,
    0x0E000120, 0x0E000200, 0x0E002020, 0x0E008000, 0x0E010048, 0x0E01F000, 0x0F000020, 0x0FFFFE00,
    0x10000020, 0x10FFFE00,
};
static const uint64_t pf__unicode_lower_runs[185] = {
    0x0002083400000020, 0x0006002E00000020, 0x0006C00E00000020, 0x0008003100000001,
    0x0009900700000001, 0x0009C81100000001, 0x000A502F00000001, 0x000BC002FFFFFF87,
    0x000BC80700000001, 0x000C0802000000D2, 0x000C100500000001, 0x000C3002000000CE,
    0x000C380200000001, 0x000C4804000000CD, 0x000C580200000001, 0x000C70020000004F,
    0x000C7802000000CA, 0x000C8002000000CB, 0x000C880200000001, 0x000C9802000000CD,
    0x000CA002000000CF, 0x000CB002000000D3, 0x000CB802000000D1, 0x000CC00200000001,
    0x000CE002000000D3, 0x000CE802000000D5, 0x000CF802000000D6, 0x000D000700000001,
    0x000D3002000000DA, 0x000D380200000001, 0x000D4802000000DA, 0x000D600200000001,
    0x000D7002000000DA, 0x000D780200000001, 0x000D8804000000D9, 0x000D980500000001,
    0x000DB802000000DB, 0x000DC00200000001, 0x000DE00200000001, 0x000E200200000002,
    0x000E280200000001, 0x000E380200000002, 0x000E400200000001, 0x000E500200000002,
    0x000E581300000001, 0x000EF01300000001, 0x000F880200000002, 0x000F900500000001,
    0x000FB002FFFFFF9F, 0x000FB802FFFFFFC8, 0x000FC02900000001, 0x00110002FFFFFF7E,
    0x0011101300000001, 0x0011D00200002A2B, 0x0011D80200000001, 0x0011E802FFFFFF5D,
    0x0011F00200002A28, 0x0012080200000001, 0x00121802FFFFFF3D, 0x0012200200000045,
    0x0012280200000047, 0x0012300B00000001, 0x001B800500000001, 0x001BB00200000001,
    0x001BF80200000074, 0x001C300200000026, 0x001C400600000025, 0x001C600200000040,
    0x001C70040000003F, 0x001C882200000020, 0x001D181200000020, 0x001E780200000008,
    0x001EC01900000001, 0x001FA002FFFFFFC4, 0x001FB80200000001, 0x001FC802FFFFFFF9,
    0x001FD00200000001, 0x001FE806FFFFFF7E, 0x0020002000000050, 0x0020804000000020,
    0x0023002300000001, 0x0024503700000001, 0x002600020000000F, 0x0026080F00000001,
    0x0026806100000001, 0x0029884C00000030, 0x0085004C00001C60, 0x0086380200001C60,
    0x0086680200001C60, 0x009D00A0000097D0, 0x009F800C00000008, 0x00E4480200000001,
    0x00E48056FFFFF440, 0x00E5E806FFFFF440, 0x00F0009700000001, 0x00F4F002FFFFE241,
    0x00F5006100000001, 0x00F84010FFFFFFF8, 0x00F8C00CFFFFFFF8, 0x00F94010FFFFFFF8,
    0x00F9C010FFFFFFF8, 0x00FA400CFFFFFFF8, 0x00FAC809FFFFFFF8, 0x00FB4010FFFFFFF8,
    0x00FC4010FFFFFFF8, 0x00FCC010FFFFFFF8, 0x00FD4010FFFFFFF8, 0x00FDC004FFFFFFF8,
    0x00FDD004FFFFFFB6, 0x00FDE002FFFFFFF7, 0x00FE4008FFFFFFAA, 0x00FE6002FFFFFFF7,
    0x00FEC004FFFFFFF8, 0x00FED004FFFFFF9C, 0x00FF4004FFFFFFF8, 0x00FF5004FFFFFF90,
    0x00FF6002FFFFFFF9, 0x00FFC004FFFFFF80, 0x00FFD004FFFFFF82, 0x00FFE002FFFFFFF7,
    0x01093002FFFFE2A3, 0x01095002FFFFDF41, 0x01095802FFFFDFBA, 0x010990020000001C,
    0x010B002000000010, 0x010C180200000001, 0x0125B0340000001A, 0x0160006000000030,
    0x0163000200000001, 0x01631002FFFFD609, 0x01631802FFFFF11A, 0x01632002FFFFD619,
    0x0163380700000001, 0x01636802FFFFD5E4, 0x01637002FFFFD603, 0x01637802FFFFD5E1,
    0x01638002FFFFD5E2, 0x0163900200000001, 0x0163A80200000001, 0x0163F004FFFFD5C1,
    0x0164006500000001, 0x0167580500000001, 0x0167900200000001, 0x0532002F00000001,
    0x0534001D00000001, 0x0539100F00000001, 0x0539903F00000001, 0x053BC80500000001,
    0x053BE802FFFF75FC, 0x053BF00B00000001, 0x053C580200000001, 0x053C6802FFFF5AD8,
    0x053C800500000001, 0x053CB01500000001, 0x053D5002FFFF5ABC, 0x053D5802FFFF5AB1,
    0x053D6002FFFF5AB5, 0x053D6802FFFF5ABF, 0x053D7002FFFF5ABC, 0x053D8002FFFF5AEE,
    0x053D8802FFFF5AD6, 0x053D9002FFFF5AEB, 0x053D9802000003A0, 0x053DA01100000001,
    0x053E2002FFFFFFD0, 0x053E2802FFFF5ABD, 0x053E3002FFFF75C8, 0x053E380500000001,
    0x053E5802FFFF5A99, 0x053E601100000001, 0x053EE002FFFF59BF, 0x053FA80200000001,
    0x07F9083400000020, 0x0820005000000028, 0x0825804800000028, 0x082B801600000027,
    0x082BE01E00000027, 0x082C600E00000027, 0x082CA00400000027, 0x0864006600000040,
    0x086A802C00000020, 0x08C5004000000020, 0x0B72004000000020, 0x0B7500320000001B,
    0x0F48004400000022,
};
static const uint32_t pf__unicode_ccc_runs[496] = {
    0x00000000, 0x000300E6, 0x000315E8, 0x000316DC, 0x00031AE8, 0x00031BD8, 0x00031CDC, 0x000321CA,
    0x000323DC, 0x000327CA, 0x000329DC, 0x00033401, 0x000339DC, 0x00033DE6, 0x000345F0, 0x000346E6,
    0x000347DC, 0x00034AE6, 0x00034DDC, 0x00034F00, 0x000350E6, 0x000353DC, 0x000357E6, 0x000358E8,
    0x000359DC, 0x00035BE6, 0x00035CE9, 0x00035DEA, 0x00035FE9, 0x000360EA, 0x000362E9, 0x000363E6,
    0x00037000, 0x000483E6, 0x00048800, 0x000591DC, 0x000592E6, 0x000596DC, 0x000597E6, 0x00059ADE,
    0x00059BDC, 0x00059CE6, 0x0005A2DC, 0x0005A8E6, 0x0005AADC, 0x0005ABE6, 0x0005ADDE, 0x0005AEE4,
    0x0005AFE6, 0x0005B00A, 0x0005B10B, 0x0005B20C, 0x0005B30D, 0x0005B40E, 0x0005B50F, 0x0005B610,
    0x0005B711, 0x0005B812, 0x0005B913, 0x0005BB14, 0x0005BC15, 0x0005BD16, 0x0005BE00, 0x0005BF17,
    0x0005C000, 0x0005C118, 0x0005C219, 0x0005C300, 0x0005C4E6, 0x0005C5DC, 0x0005C600, 0x0005C712,
    0x0005C800, 0x000610E6, 0x0006181E, 0x0006191F, 0x00061A20, 0x00061B00, 0x00064B1B, 0x00064C1C,
    0x00064D1D, 0x00064E1E, 0x00064F1F, 0x00065020, 0x00065121, 0x00065222, 0x000653E6, 0x000655DC,
    0x000657E6, 0x00065CDC, 0x00065DE6, 0x00065FDC, 0x00066000, 0x00067023, 0x00067100, 0x0006D6E6,
    0x0006DD00, 0x0006DFE6, 0x0006E3DC, 0x0006E4E6, 0x0006E500, 0x0006E7E6, 0x0006E900, 0x0006EADC,
    0x0006EBE6, 0x0006EDDC, 0x0006EE00, 0x00071124, 0x00071200, 0x000730E6, 0x000731DC, 0x000732E6,
    0x000734DC, 0x000735E6, 0x000737DC, 0x00073AE6, 0x00073BDC, 0x00073DE6, 0x00073EDC, 0x00073FE6,
    0x000742DC, 0x000743E6, 0x000744DC, 0x000745E6, 0x000746DC, 0x000747E6, 0x000748DC, 0x000749E6,
    0x00074B00, 0x0007EBE6, 0x0007F2DC, 0x0007F3E6, 0x0007F400, 0x000816E6, 0x00081A00, 0x00081BE6,
    0x00082400, 0x000825E6, 0x00082800, 0x000829E6, 0x00082E00, 0x000859DC, 0x00085C00, 0x0008D4E6,
    0x0008E200, 0x0008E3DC, 0x0008E4E6, 0x0008E6DC, 0x0008E7E6, 0x0008E9DC, 0x0008EAE6, 0x0008EDDC,
    0x0008F01B, 0x0008F11C, 0x0008F21D, 0x0008F3E6, 0x0008F6DC, 0x0008F7E6, 0x0008F9DC, 0x0008FBE6,
    0x00090000, 0x00093C07, 0x00093D00, 0x00094D09, 0x00094E00, 0x000951E6, 0x000952DC, 0x000953E6,
    0x00095500, 0x0009BC07, 0x0009BD00, 0x0009CD09, 0x0009CE00, 0x000A3C07, 0x000A3D00, 0x000A4D09,
    0x000A4E00, 0x000ABC07, 0x000ABD00, 0x000ACD09, 0x000ACE00, 0x000B3C07, 0x000B3D00, 0x000B4D09,
    0x000B4E00, 0x000BCD09, 0x000BCE00, 0x000C4D09, 0x000C4E00, 0x000C5554, 0x000C565B, 0x000C5700,
    0x000CBC07, 0x000CBD00, 0x000CCD09, 0x000CCE00, 0x000D4D09, 0x000D4E00, 0x000DCA09, 0x000DCB00,
    0x000E3867, 0x000E3A09, 0x000E3B00, 0x000E486B, 0x000E4C00, 0x000EB876, 0x000EBA00, 0x000EC87A,
    0x000ECC00, 0x000F18DC, 0x000F1A00, 0x000F35DC, 0x000F3600, 0x000F37DC, 0x000F3800, 0x000F39D8,
    0x000F3A00, 0x000F7181, 0x000F7282, 0x000F7300, 0x000F7484, 0x000F7500, 0x000F7A82, 0x000F7E00,
    0x000F8082, 0x000F8100, 0x000F82E6, 0x000F8409, 0x000F8500, 0x000F86E6, 0x000F8800, 0x000FC6DC,
    0x000FC700, 0x00103707, 0x00103800, 0x00103909, 0x00103B00, 0x00108DDC, 0x00108E00, 0x00135DE6,
    0x00136000, 0x00171409, 0x00171500, 0x00173409, 0x00173500, 0x0017D209, 0x0017D300, 0x0017DDE6,
    0x0017DE00, 0x0018A9E4, 0x0018AA00, 0x001939DE, 0x00193AE6, 0x00193BDC, 0x00193C00, 0x001A17E6,
    0x001A18DC, 0x001A1900, 0x001A6009, 0x001A6100, 0x001A75E6, 0x001A7D00, 0x001A7FDC, 0x001A8000,
    0x001AB0E6, 0x001AB5DC, 0x001ABBE6, 0x001ABDDC, 0x001ABE00, 0x001B3407, 0x001B3500, 0x001B4409,
    0x001B4500, 0x001B6BE6, 0x001B6CDC, 0x001B6DE6, 0x001B7400, 0x001BAA09, 0x001BAC00, 0x001BE607,
    0x001BE700, 0x001BF209, 0x001BF400, 0x001C3707, 0x001C3800, 0x001CD0E6, 0x001CD300, 0x001CD401,
    0x001CD5DC, 0x001CDAE6, 0x001CDCDC, 0x001CE0E6, 0x001CE100, 0x001CE201, 0x001CE900, 0x001CEDDC,
    0x001CEE00, 0x001CF4E6, 0x001CF500, 0x001CF8E6, 0x001CFA00, 0x001DC0E6, 0x001DC2DC, 0x001DC3E6,
    0x001DCADC, 0x001DCBE6, 0x001DCDEA, 0x001DCED6, 0x001DCFDC, 0x001DD0CA, 0x001DD1E6, 0x001DF600,
    0x001DFBE6, 0x001DFCE9, 0x001DFDDC, 0x001DFEE6, 0x001DFFDC, 0x001E0000, 0x0020D0E6, 0x0020D201,
    0x0020D4E6, 0x0020D801, 0x0020DBE6, 0x0020DD00, 0x0020E1E6, 0x0020E200, 0x0020E501, 0x0020E7E6,
    0x0020E8DC, 0x0020E9E6, 0x0020EA01, 0x0020ECDC, 0x0020F0E6, 0x0020F100, 0x002CEFE6, 0x002CF200,
    0x002D7F09, 0x002D8000, 0x002DE0E6, 0x002E0000, 0x00302ADA, 0x00302BE4, 0x00302CE8, 0x00302DDE,
    0x00302EE0, 0x00303000, 0x00309908, 0x00309B00, 0x00A66FE6, 0x00A67000, 0x00A674E6, 0x00A67E00,
    0x00A69EE6, 0x00A6A000, 0x00A6F0E6, 0x00A6F200, 0x00A80609, 0x00A80700, 0x00A8C409, 0x00A8C500,
    0x00A8E0E6, 0x00A8F200, 0x00A92BDC, 0x00A92E00, 0x00A95309, 0x00A95400, 0x00A9B307, 0x00A9B400,
    0x00A9C009, 0x00A9C100, 0x00AAB0E6, 0x00AAB100, 0x00AAB2E6, 0x00AAB4DC, 0x00AAB500, 0x00AAB7E6,
    0x00AAB900, 0x00AABEE6, 0x00AAC000, 0x00AAC1E6, 0x00AAC200, 0x00AAF609, 0x00AAF700, 0x00ABED09,
    0x00ABEE00, 0x00FB1E1A, 0x00FB1F00, 0x00FE20E6, 0x00FE27DC, 0x00FE2EE6, 0x00FE3000, 0x0101FDDC,
    0x0101FE00, 0x0102E0DC, 0x0102E100, 0x010376E6, 0x01037B00, 0x010A0DDC, 0x010A0E00, 0x010A0FE6,
    0x010A1000, 0x010A38E6, 0x010A3901, 0x010A3ADC, 0x010A3B00, 0x010A3F09, 0x010A4000, 0x010AE5E6,
    0x010AE6DC, 0x010AE700, 0x01104609, 0x01104700, 0x01107F09, 0x01108000, 0x0110B909, 0x0110BA07,
    0x0110BB00, 0x011100E6, 0x01110300, 0x01113309, 0x01113500, 0x01117307, 0x01117400, 0x0111C009,
    0x0111C100, 0x0111CA07, 0x0111CB00, 0x01123509, 0x01123607, 0x01123700, 0x0112E907, 0x0112EA09,
    0x0112EB00, 0x01133C07, 0x01133D00, 0x01134D09, 0x01134E00, 0x011366E6, 0x01136D00, 0x011370E6,
    0x01137500, 0x01144209, 0x01144300, 0x01144607, 0x01144700, 0x0114C209, 0x0114C307, 0x0114C400,
    0x0115BF09, 0x0115C007, 0x0115C100, 0x01163F09, 0x01164000, 0x0116B609, 0x0116B707, 0x0116B800,
    0x01172B09, 0x01172C00, 0x011C3F09, 0x011C4000, 0x016AF001, 0x016AF500, 0x016B30E6, 0x016B3700,
    0x01BC9E01, 0x01BC9F00, 0x01D165D8, 0x01D16701, 0x01D16A00, 0x01D16DE2, 0x01D16ED8, 0x01D17300,
    0x01D17BDC, 0x01D18300, 0x01D185E6, 0x01D18ADC, 0x01D18C00, 0x01D1AAE6, 0x01D1AE00, 0x01D242E6,
    0x01D24500, 0x01E000E6, 0x01E00700, 0x01E008E6, 0x01E01900, 0x01E01BE6, 0x01E02200, 0x01E023E6,
    0x01E02500, 0x01E026E6, 0x01E02B00, 0x01E8D0DC, 0x01E8D700, 0x01E944E6, 0x01E94A07, 0x01E94B00,
};
static const uint64_t pf__unicode_decomp[2060] = {
    0x0003000008200300, 0x0003040008200301, 0x0003080008200302, 0x00030C0008200303,
    0x0003100008200308, 0x000314000820030A, 0x00031C0008600327, 0x0003200008A00300,
    0x0003240008A00301, 0x0003280008A00302, 0x00032C0008A00308, 0x0003300009200300,
    0x0003340009200301, 0x0003380009200302, 0x00033C0009200308, 0x0003440009C00303,
    0x0003480009E00300, 0x00034C0009E00301, 0x0003500009E00302, 0x0003540009E00303,
    0x0003580009E00308, 0x000364000AA00300, 0x000368000AA00301, 0x00036C000AA00302,
    0x000370000AA00308, 0x000374000B200301, 0x000380000C200300, 0x000384000C200301,
    0x000388000C200302, 0x00038C000C200303, 0x000390000C200308, 0x000394000C20030A,
    0x00039C000C600327, 0x0003A0000CA00300, 0x0003A4000CA00301, 0x0003A8000CA00302,
    0x0003AC000CA00308, 0x0003B0000D200300, 0x0003B4000D200301, 0x0003B8000D200302,
    0x0003BC000D200308, 0x0003C4000DC00303, 0x0003C8000DE00300, 0x0003CC000DE00301,
    0x0003D0000DE00302, 0x0003D4000DE00303, 0x0003D8000DE00308, 0x0003E4000EA00300,
    0x0003E8000EA00301, 0x0003EC000EA00302, 0x0003F0000EA00308, 0x0003F4000F200301,
    0x0003FC000F200308, 0x0004000008200304, 0x000404000C200304, 0x0004080008200306,
    0x00040C000C200306, 0x0004100008200328, 0x000414000C200328, 0x0004180008600301,
    0x00041C000C600301, 0x0004200008600302, 0x000424000C600302, 0x0004280008600307,
    0x00042C000C600307, 0x000430000860030C, 0x000434000C60030C, 0x000438000880030C,
    0x00043C000C80030C, 0x0004480008A00304, 0x00044C000CA00304, 0x0004500008A00306,
    0x000454000CA00306, 0x0004580008A00307, 0x00045C000CA00307, 0x0004600008A00328,
    0x000464000CA00328, 0x0004680008A0030C, 0x00046C000CA0030C, 0x0004700008E00302,
    0x000474000CE00302, 0x0004780008E00306, 0x00047C000CE00306, 0x0004800008E00307,
    0x000484000CE00307, 0x0004880008E00327, 0x00048C000CE00327, 0x0004900009000302,
    0x000494000D000302, 0x0004A00009200303, 0x0004A4000D200303, 0x0004A80009200304,
    0x0004AC000D200304, 0x0004B00009200306, 0x0004B4000D200306, 0x0004B80009200328,
    0x0004BC000D200328, 0x0004C00009200307, 0x0004D00009400302, 0x0004D4000D400302,
    0x0004D80009600327, 0x0004DC000D600327, 0x0004E40009800301, 0x0004E8000D800301,
    0x0004EC0009800327, 0x0004F0000D800327, 0x0004F4000980030C, 0x0004F8000D80030C,
    0x00050C0009C00301, 0x000510000DC00301, 0x0005140009C00327, 0x000518000DC00327,
    0x00051C0009C0030C, 0x000520000DC0030C, 0x0005300009E00304, 0x000534000DE00304,
    0x0005380009E00306, 0x00053C000DE00306, 0x0005400009E0030B, 0x000544000DE0030B,
    0x000550000A400301, 0x000554000E400301, 0x000558000A400327, 0x00055C000E400327,
    0x000560000A40030C, 0x000564000E40030C, 0x000568000A600301, 0x00056C000E600301,
    0x000570000A600302, 0x000574000E600302, 0x000578000A600327, 0x00057C000E600327,
    0x000580000A60030C, 0x000584000E60030C, 0x000588000A800327, 0x00058C000E800327,
    0x000590000A80030C, 0x000594000E80030C, 0x0005A0000AA00303, 0x0005A4000EA00303,
    0x0005A8000AA00304, 0x0005AC000EA00304, 0x0005B0000AA00306, 0x0005B4000EA00306,
    0x0005B8000AA0030A, 0x0005BC000EA0030A, 0x0005C0000AA0030B, 0x0005C4000EA0030B,
    0x0005C8000AA00328, 0x0005CC000EA00328, 0x0005D0000AE00302, 0x0005D4000EE00302,
    0x0005D8000B200302, 0x0005DC000F200302, 0x0005E0000B200308, 0x0005E4000B400301,
    0x0005E8000F400301, 0x0005EC000B400307, 0x0005F0000F400307, 0x0005F4000B40030C,
    0x0005F8000F40030C, 0x0006800009E0031B, 0x000684000DE0031B, 0x0006BC000AA0031B,
    0x0006C0000EA0031B, 0x000734000820030C, 0x000738000C20030C, 0x00073C000920030C,
    0x000740000D20030C, 0x0007440009E0030C, 0x000748000DE0030C, 0x00074C000AA0030C,
    0x000750000EA0030C, 0x000754001B800304, 0x000758001F800304, 0x00075C001B800301,
    0x000760001F800301, 0x000764001B80030C, 0x000768001F80030C, 0x00076C001B800300,
    0x000770001F800300, 0x0007780018800304, 0x00077C001C800304, 0x0007800044C00304,
    0x0007840044E00304, 0x0007880018C00304, 0x00078C001CC00304, 0x0007980008E0030C,
    0x00079C000CE0030C, 0x0007A0000960030C, 0x0007A4000D60030C, 0x0007A80009E00328,
    0x0007AC000DE00328, 0x0007B0003D400304, 0x0007B4003D600304, 0x0007B80036E0030C,
    0x0007BC005240030C, 0x0007C0000D40030C, 0x0007D00008E00301, 0x0007D4000CE00301,
    0x0007E00009C00300, 0x0007E4000DC00300, 0x0007E80018A00301, 0x0007EC001CA00301,
    0x0007F00018C00301, 0x0007F4001CC00301, 0x0007F8001B000301, 0x0007FC001F000301,
    0x000800000820030F, 0x000804000C20030F, 0x0008080008200311, 0x00080C000C200311,
    0x0008100008A0030F, 0x000814000CA0030F, 0x0008180008A00311, 0x00081C000CA00311,
    0x000820000920030F, 0x000824000D20030F, 0x0008280009200311, 0x00082C000D200311,
    0x0008300009E0030F, 0x000834000DE0030F, 0x0008380009E00311, 0x00083C000DE00311,
    0x000840000A40030F, 0x000844000E40030F, 0x000848000A400311, 0x00084C000E400311,
    0x000850000AA0030F, 0x000854000EA0030F, 0x000858000AA00311, 0x00085C000EA00311,
    0x000860000A600326, 0x000864000E600326, 0x000868000A800326, 0x00086C000E800326,
    0x000878000900030C, 0x00087C000D00030C, 0x0008980008200307, 0x00089C000C200307,
    0x0008A00008A00327, 0x0008A4000CA00327, 0x0008A8001AC00304, 0x0008AC001EC00304,
    0x0008B0001AA00304, 0x0008B4001EA00304, 0x0008B80009E00307, 0x0008BC000DE00307,
    0x0008C00045C00304, 0x0008C40045E00304, 0x0008C8000B200304, 0x0008CC000F200304,
    0x000D000060000000, 0x000D040060200000, 0x000D0C0062600000, 0x000D100061000301,
    0x000DD00057200000, 0x000DF80007600000, 0x000E140015000301, 0x000E180072200301,
    0x000E1C0016E00000, 0x000E200072A00301, 0x000E240072E00301, 0x000E280073200301,
    0x000E300073E00301, 0x000E380074A00301, 0x000E3C0075200301, 0x000E400079400301,
    0x000EA80073200308, 0x000EAC0074A00308, 0x000EB00076200301, 0x000EB40076A00301,
    0x000EB80076E00301, 0x000EBC0077200301, 0x000EC00079600301, 0x000F280077200308,
    0x000F2C0078A00308, 0x000F300077E00301, 0x000F340078A00301, 0x000F380079200301,
    0x000F4C007A400301, 0x000F50007A400308, 0x0010000082A00300, 0x0010040082A00308,
    0x00100C0082600301, 0x00101C0080C00308, 0x0010300083400301, 0x0010340083000300,
    0x0010380084600306, 0x0010640083000306, 0x0010E40087000306, 0x0011400086A00300,
    0x0011440086A00308, 0x00114C0086600301, 0x00115C008AC00308, 0x0011700087400301,
    0x0011740087000300, 0x0011780088600306, 0x0011D8008E80030F, 0x0011DC008EA0030F,
    0x0013040082C00306, 0x0013080086C00306, 0x0013400082000306, 0x0013440086000306,
    0x0013480082000308, 0x00134C0086000308, 0x0013580082A00306, 0x00135C0086A00306,
    0x001368009B000308, 0x00136C009B200308, 0x0013700082C00308, 0x0013740086C00308,
    0x0013780082E00308, 0x00137C0086E00308, 0x0013880083000304, 0x00138C0087000304,
    0x0013900083000308, 0x0013940087000308, 0x0013980083C00308, 0x00139C0087C00308,
    0x0013A8009D000308, 0x0013AC009D200308, 0x0013B00085A00308, 0x0013B40089A00308,
    0x0013B80084600304, 0x0013BC0088600304, 0x0013C00084600308, 0x0013C40088600308,
    0x0013C8008460030B, 0x0013CC008860030B, 0x0013D00084E00308, 0x0013D40088E00308,
    0x0013E00085600308, 0x0013E40089600308, 0x00188800C4E00653, 0x00188C00C4E00654,
    0x00189000C9000654, 0x00189400C4E00655, 0x00189800C9400654, 0x001B0000DAA00654,
    0x001B0800D8200654, 0x001B4C00DA400654, 0x0024A4012500093C, 0x0024C4012600093C,
    0x0024D0012660093C, 0x0025600122A0093C, 0x0025640122C0093C, 0x0025680122E0093C,
    0x00256C012380093C, 0x002570012420093C, 0x002574012440093C, 0x002578012560093C,
    0x00257C0125E0093C, 0x00272C0138E009BE, 0x0027300138E009D7, 0x00277001342009BC,
    0x00277401344009BC, 0x00277C0135E009BC, 0x0028CC0146400A3C, 0x0028D80147000A3C,
    0x0029640142C00A3C, 0x0029680142E00A3C, 0x00296C0143800A3C, 0x0029780145600A3C,
    0x002D200168E00B56, 0x002D2C0168E00B3E, 0x002D300168E00B57, 0x002D700164200B3C,
    0x002D740164400B3C, 0x002E500172400BD7, 0x002F280178C00BBE, 0x002F2C0178E00BBE,
    0x002F300178C00BD7, 0x0031200188C00C56, 0x0033000197E00CD5, 0x00331C0198C00CD5,
    0x0033200198C00CD6, 0x0033280198C00CC2, 0x00332C0199400CD5, 0x00352801A8C00D3E,
    0x00352C01A8E00D3E, 0x00353001A8C00D57, 0x00376801BB200DCA, 0x00377001BB200DCF,
    0x00377401BB800DCA, 0x00377801BB200DDF, 0x003D0C01E8400FB7, 0x003D3401E9800FB7,
    0x003D4801EA200FB7, 0x003D5C01EAC00FB7, 0x003D7001EB600FB7, 0x003DA401E8000FB5,
    0x003DCC01EE200F72, 0x003DD401EE200F74, 0x003DD801F6400F80, 0x003DE001F6600F80,
    0x003E0401EE200F80, 0x003E4C01F2400FB7, 0x003E7401F3800FB7, 0x003E8801F4200FB7,
    0x003E9C01F4C00FB7, 0x003EB001F5600FB7, 0x003EE401F2000FB5, 0x0040980204A0102E,
    0x006C180360A01B35, 0x006C200360E01B35, 0x006C280361201B35, 0x006C300361601B35,
    0x006C380361A01B35, 0x006C480362201B35, 0x006CEC0367401B35, 0x006CF40367801B35,
    0x006D000367C01B35, 0x006D040367E01B35, 0x006D0C0368401B35, 0x0078000008200325,
    0x007804000C200325, 0x0078080008400307, 0x00780C000C400307, 0x0078100008400323,
    0x007814000C400323, 0x0078180008400331, 0x00781C000C400331, 0x0078200018E00301,
    0x007824001CE00301, 0x0078280008800307, 0x00782C000C800307, 0x0078300008800323,
    0x007834000C800323, 0x0078380008800331, 0x00783C000C800331, 0x0078400008800327,
    0x007844000C800327, 0x007848000880032D, 0x00784C000C80032D, 0x0078500022400300,
    0x0078540022600300, 0x0078580022400301, 0x00785C0022600301, 0x0078600008A0032D,
    0x007864000CA0032D, 0x0078680008A00330, 0x00786C000CA00330, 0x0078700045000306,
    0x0078740045200306, 0x0078780008C00307, 0x00787C000CC00307, 0x0078800008E00304,
    0x007884000CE00304, 0x0078880009000307, 0x00788C000D000307, 0x0078900009000323,
    0x007894000D000323, 0x0078980009000308, 0x00789C000D000308, 0x0078A00009000327,
    0x0078A4000D000327, 0x0078A8000900032E, 0x0078AC000D00032E, 0x0078B00009200330,
    0x0078B4000D200330, 0x0078B80019E00301, 0x0078BC001DE00301, 0x0078C00009600301,
    0x0078C4000D600301, 0x0078C80009600323, 0x0078CC000D600323, 0x0078D00009600331,
    0x0078D4000D600331, 0x0078D80009800323, 0x0078DC000D800323, 0x0078E003C6C00304,
    0x0078E403C6E00304, 0x0078E80009800331, 0x0078EC000D800331, 0x0078F0000980032D,
    0x0078F4000D80032D, 0x0078F80009A00301, 0x0078FC000DA00301, 0x0079000009A00307,
    0x007904000DA00307, 0x0079080009A00323, 0x00790C000DA00323, 0x0079100009C00307,
    0x007914000DC00307, 0x0079180009C00323, 0x00791C000DC00323, 0x0079200009C00331,
    0x007924000DC00331, 0x0079280009C0032D, 0x00792C000DC0032D, 0x007930001AA00301,
    0x007934001EA00301, 0x007938001AA00308, 0x00793C001EA00308, 0x0079400029800300,
    0x0079440029A00300, 0x0079480029800301, 0x00794C0029A00301, 0x007950000A000301,
    0x007954000E000301, 0x007958000A000307, 0x00795C000E000307, 0x007960000A400307,
    0x007964000E400307, 0x007968000A400323, 0x00796C000E400323, 0x00797003CB400304,
    0x00797403CB600304, 0x007978000A400331, 0x00797C000E400331, 0x007980000A600307,
    0x007984000E600307, 0x007988000A600323, 0x00798C000E600323, 0x007990002B400307,
    0x007994002B600307, 0x007998002C000307, 0x00799C002C200307, 0x0079A003CC400307,
    0x0079A403CC600307, 0x0079A8000A800307, 0x0079AC000E800307, 0x0079B0000A800323,
    0x0079B4000E800323, 0x0079B8000A800331, 0x0079BC000E800331, 0x0079C0000A80032D,
    0x0079C4000E80032D, 0x0079C8000AA00324, 0x0079CC000EA00324, 0x0079D0000AA00330,
    0x0079D4000EA00330, 0x0079D8000AA0032D, 0x0079DC000EA0032D, 0x0079E0002D000301,
    0x0079E4002D200301, 0x0079E8002D400308, 0x0079EC002D600308, 0x0079F0000AC00303,
    0x0079F4000EC00303, 0x0079F8000AC00323, 0x0079FC000EC00323, 0x007A00000AE00300,
    0x007A04000EE00300, 0x007A08000AE00301, 0x007A0C000EE00301, 0x007A10000AE00308,
    0x007A14000EE00308, 0x007A18000AE00307, 0x007A1C000EE00307, 0x007A20000AE00323,
    0x007A24000EE00323, 0x007A28000B000307, 0x007A2C000F000307, 0x007A30000B000308,
    0x007A34000F000308, 0x007A38000B200307, 0x007A3C000F200307, 0x007A40000B400302,
    0x007A44000F400302, 0x007A48000B400323, 0x007A4C000F400323, 0x007A50000B400331,
    0x007A54000F400331, 0x007A58000D000331, 0x007A5C000E800308, 0x007A60000EE0030A,
    0x007A64000F20030A, 0x007A6C002FE00307, 0x007A800008200323, 0x007A84000C200323,
    0x007A880008200309, 0x007A8C000C200309, 0x007A900018400301, 0x007A94001C400301,
    0x007A980018400300, 0x007A9C001C400300, 0x007AA00018400309, 0x007AA4001C400309,
    0x007AA80018400303, 0x007AAC001C400303, 0x007AB003D4000302, 0x007AB403D4200302,
    0x007AB80020400301, 0x007ABC0020600301, 0x007AC00020400300, 0x007AC40020600300,
    0x007AC80020400309, 0x007ACC0020600309, 0x007AD00020400303, 0x007AD40020600303,
    0x007AD803D4000306, 0x007ADC03D4200306, 0x007AE00008A00323, 0x007AE4000CA00323,
    0x007AE80008A00309, 0x007AEC000CA00309, 0x007AF00008A00303, 0x007AF4000CA00303,
    0x007AF80019400301, 0x007AFC001D400301, 0x007B000019400300, 0x007B04001D400300,
    0x007B080019400309, 0x007B0C001D400309, 0x007B100019400303, 0x007B14001D400303,
    0x007B1803D7000302, 0x007B1C03D7200302, 0x007B200009200309, 0x007B24000D200309,
    0x007B280009200323, 0x007B2C000D200323, 0x007B300009E00323, 0x007B34000DE00323,
    0x007B380009E00309, 0x007B3C000DE00309, 0x007B40001A800301, 0x007B44001E800301,
    0x007B48001A800300, 0x007B4C001E800300, 0x007B50001A800309, 0x007B54001E800309,
    0x007B58001A800303, 0x007B5C001E800303, 0x007B6003D9800302, 0x007B6403D9A00302,
    0x007B680034000301, 0x007B6C0034200301, 0x007B700034000300, 0x007B740034200300,
    0x007B780034000309, 0x007B7C0034200309, 0x007B800034000303, 0x007B840034200303,
    0x007B880034000323, 0x007B8C0034200323, 0x007B90000AA00323, 0x007B94000EA00323,
    0x007B98000AA00309, 0x007B9C000EA00309, 0x007BA00035E00301, 0x007BA40036000301,
    0x007BA80035E00300, 0x007BAC0036000300, 0x007BB00035E00309, 0x007BB40036000309,
    0x007BB80035E00303, 0x007BBC0036000303, 0x007BC00035E00323, 0x007BC40036000323,
    0x007BC8000B200300, 0x007BCC000F200300, 0x007BD0000B200323, 0x007BD4000F200323,
    0x007BD8000B200309, 0x007BDC000F200309, 0x007BE0000B200303, 0x007BE4000F200303,
    0x007C000076200313, 0x007C040076200314, 0x007C0803E0000300, 0x007C0C03E0200300,
    0x007C1003E0000301, 0x007C1403E0200301, 0x007C1803E0000342, 0x007C1C03E0200342,
    0x007C200072200313, 0x007C240072200314, 0x007C2803E1000300, 0x007C2C03E1200300,
    0x007C3003E1000301, 0x007C3403E1200301, 0x007C3803E1000342, 0x007C3C03E1200342,
    0x007C400076A00313, 0x007C440076A00314, 0x007C4803E2000300, 0x007C4C03E2200300,
    0x007C5003E2000301, 0x007C5403E2200301, 0x007C600072A00313, 0x007C640072A00314,
    0x007C6803E3000300, 0x007C6C03E3200300, 0x007C7003E3000301, 0x007C7403E3200301,
    0x007C800076E00313, 0x007C840076E00314, 0x007C8803E4000300, 0x007C8C03E4200300,
    0x007C9003E4000301, 0x007C9403E4200301, 0x007C9803E4000342, 0x007C9C03E4200342,
    0x007CA00072E00313, 0x007CA40072E00314, 0x007CA803E5000300, 0x007CAC03E5200300,
    0x007CB003E5000301, 0x007CB403E5200301, 0x007CB803E5000342, 0x007CBC03E5200342,
    0x007CC00077200313, 0x007CC40077200314, 0x007CC803E6000300, 0x007CCC03E6200300,
    0x007CD003E6000301, 0x007CD403E6200301, 0x007CD803E6000342, 0x007CDC03E6200342,
    0x007CE00073200313, 0x007CE40073200314, 0x007CE803E7000300, 0x007CEC03E7200300,
    0x007CF003E7000301, 0x007CF403E7200301, 0x007CF803E7000342, 0x007CFC03E7200342,
    0x007D000077E00313, 0x007D040077E00314, 0x007D0803E8000300, 0x007D0C03E8200300,
    0x007D1003E8000301, 0x007D1403E8200301, 0x007D200073E00313, 0x007D240073E00314,
    0x007D2803E9000300, 0x007D2C03E9200300, 0x007D3003E9000301, 0x007D3403E9200301,
    0x007D400078A00313, 0x007D440078A00314, 0x007D4803EA000300, 0x007D4C03EA200300,
    0x007D5003EA000301, 0x007D5403EA200301, 0x007D5803EA000342, 0x007D5C03EA200342,
    0x007D640074A00314, 0x007D6C03EB200300, 0x007D7403EB200301, 0x007D7C03EB200342,
    0x007D800079200313, 0x007D840079200314, 0x007D8803EC000300, 0x007D8C03EC200300,
    0x007D9003EC000301, 0x007D9403EC200301, 0x007D9803EC000342, 0x007D9C03EC200342,
    0x007DA00075200313, 0x007DA40075200314, 0x007DA803ED000300, 0x007DAC03ED200300,
    0x007DB003ED000301, 0x007DB403ED200301, 0x007DB803ED000342, 0x007DBC03ED200342,
    0x007DC00076200300, 0x007DC40075800000, 0x007DC80076A00300, 0x007DCC0075A00000,
    0x007DD00076E00300, 0x007DD40075C00000, 0x007DD80077200300, 0x007DDC0075E00000,
    0x007DE00077E00300, 0x007DE40079800000, 0x007DE80078A00300, 0x007DEC0079A00000,
    0x007DF00079200300, 0x007DF40079C00000, 0x007E0003E0000345, 0x007E0403E0200345,
    0x007E0803E0400345, 0x007E0C03E0600345, 0x007E1003E0800345, 0x007E1403E0A00345,
    0x007E1803E0C00345, 0x007E1C03E0E00345, 0x007E2003E1000345, 0x007E2403E1200345,
    0x007E2803E1400345, 0x007E2C03E1600345, 0x007E3003E1800345, 0x007E3403E1A00345,
    0x007E3803E1C00345, 0x007E3C03E1E00345, 0x007E4003E4000345, 0x007E4403E4200345,
    0x007E4803E4400345, 0x007E4C03E4600345, 0x007E5003E4800345, 0x007E5403E4A00345,
    0x007E5803E4C00345, 0x007E5C03E4E00345, 0x007E6003E5000345, 0x007E6403E5200345,
    0x007E6803E5400345, 0x007E6C03E5600345, 0x007E7003E5800345, 0x007E7403E5A00345,
    0x007E7803E5C00345, 0x007E7C03E5E00345, 0x007E8003EC000345, 0x007E8403EC200345,
    0x007E8803EC400345, 0x007E8C03EC600345, 0x007E9003EC800345, 0x007E9403ECA00345,
    0x007E9803ECC00345, 0x007E9C03ECE00345, 0x007EA003ED000345, 0x007EA403ED200345,
    0x007EA803ED400345, 0x007EAC03ED600345, 0x007EB003ED800345, 0x007EB403EDA00345,
    0x007EB803EDC00345, 0x007EBC03EDE00345, 0x007EC00076200306, 0x007EC40076200304,
    0x007EC803EE000345, 0x007ECC0076200345, 0x007ED00075800345, 0x007ED80076200342,
    0x007EDC03F6C00345, 0x007EE00072200306, 0x007EE40072200304, 0x007EE80072200300,
    0x007EEC0070C00000, 0x007EF00072200345, 0x007EF80077200000, 0x007F040015000342,
    0x007F0803EE800345, 0x007F0C0076E00345, 0x007F100075C00345, 0x007F180076E00342,
    0x007F1C03F8C00345, 0x007F200072A00300, 0x007F240071000000, 0x007F280072E00300,
    0x007F2C0071200000, 0x007F300072E00345, 0x007F3403F7E00300, 0x007F3803F7E00301,
    0x007F3C03F7E00342, 0x007F400077200306, 0x007F440077200304, 0x007F480079400300,
    0x007F4C0072000000, 0x007F580077200342, 0x007F5C0079400342, 0x007F600073200306,
    0x007F640073200304, 0x007F680073200300, 0x007F6C0071400000, 0x007F7403FFC00300,
    0x007F7803FFC00301, 0x007F7C03FFC00342, 0x007F800078A00306, 0x007F840078A00304,
    0x007F880079600300, 0x007F8C0076000000, 0x007F900078200313, 0x007F940078200314,
    0x007F980078A00342, 0x007F9C0079600342, 0x007FA00074A00306, 0x007FA40074A00304,
    0x007FA80074A00300, 0x007FAC0071C00000, 0x007FB00074200314, 0x007FB40015000300,
    0x007FB80070A00000, 0x007FBC000C000000, 0x007FC803EF800345, 0x007FCC0079200345,
    0x007FD00079C00345, 0x007FD80079200342, 0x007FDC03FEC00345, 0x007FE00073E00300,
    0x007FE40071800000, 0x007FE80075200300, 0x007FEC0071E00000, 0x007FF00075200345,
    0x007FF40016800000, 0x0080000400400000, 0x0080040400600000, 0x0084980075200000,
    0x0084A80009600000, 0x0084AC0018A00000, 0x0086680432000338, 0x00866C0432400338,
    0x0086B80432800338, 0x008734043A000338, 0x008738043A800338, 0x00873C043A400338,
    0x0088100440600338, 0x0088240441000338, 0x0088300441600338, 0x0088900444600338,
    0x0088980444A00338, 0x0089040447800338, 0x0089100448600338, 0x00891C0448A00338,
    0x0089240449000338, 0x0089800007A00338, 0x008988044C200338, 0x0089B40449A00338,
    0x0089B80007800338, 0x0089BC0007C00338, 0x0089C0044C800338, 0x0089C4044CA00338,
    0x0089D0044E400338, 0x0089D4044E600338, 0x0089E0044EC00338, 0x0089E4044EE00338,
    0x008A00044F400338, 0x008A04044F600338, 0x008A100450400338, 0x008A140450600338,
    0x008A200450C00338, 0x008A240450E00338, 0x008AB00454400338, 0x008AB40455000338,
    0x008AB80455200338, 0x008ABC0455600338, 0x008B80044F800338, 0x008B84044FA00338,
    0x008B880452200338, 0x008B8C0452400338, 0x008BA80456400338, 0x008BAC0456600338,
    0x008BB00456800338, 0x008BB40456A00338, 0x008CA40601000000, 0x008CA80601200000,
    0x00AB70055BA00338, 0x00C1300609603099, 0x00C1380609A03099, 0x00C1400609E03099,
    0x00C148060A203099, 0x00C150060A603099, 0x00C158060AA03099, 0x00C160060AE03099,
    0x00C168060B203099, 0x00C170060B603099, 0x00C178060BA03099, 0x00C180060BE03099,
    0x00C188060C203099, 0x00C194060C803099, 0x00C19C060CC03099, 0x00C1A4060D003099,
    0x00C1C0060DE03099, 0x00C1C4060DE0309A, 0x00C1CC060E403099, 0x00C1D0060E40309A,
    0x00C1D8060EA03099, 0x00C1DC060EA0309A, 0x00C1E4060F003099, 0x00C1E8060F00309A,
    0x00C1F0060F603099, 0x00C1F4060F60309A, 0x00C2500608C03099, 0x00C2780613A03099,
    0x00C2B00615603099, 0x00C2B80615A03099, 0x00C2C00615E03099, 0x00C2C80616203099,
    0x00C2D00616603099, 0x00C2D80616A03099, 0x00C2E00616E03099, 0x00C2E80617203099,
    0x00C2F00617603099, 0x00C2F80617A03099, 0x00C3000617E03099, 0x00C3080618203099,
    0x00C3140618803099, 0x00C31C0618C03099, 0x00C3240619003099, 0x00C3400619E03099,
    0x00C3440619E0309A, 0x00C34C061A403099, 0x00C350061A40309A, 0x00C358061AA03099,
    0x00C35C061AA0309A, 0x00C364061B003099, 0x00C368061B00309A, 0x00C370061B603099,
    0x00C374061B60309A, 0x00C3D00614C03099, 0x00C3DC061DE03099, 0x00C3E0061E003099,
    0x00C3E4061E203099, 0x00C3E8061E403099, 0x00C3F8061FA03099, 0x03E4001189000000,
    0x03E4040CDE800000, 0x03E40811D9400000, 0x03E40C1199000000, 0x03E4100DDA200000,
    0x03E41409C6400000, 0x03E4180A7CA00000, 0x03E41C13F3800000, 0x03E42013F3800000,
    0x03E4240B2A200000, 0x03E428123A200000, 0x03E42C0AB0E00000, 0x03E4300B29000000,
    0x03E4340C3EC00000, 0x03E4380ECD200000, 0x03E43C0FF0A00000, 0x03E44010C7E00000,
    0x03E44410F7400000, 0x03E448111F000000, 0x03E44C1211E00000, 0x03E4500D40400000,
    0x03E4540DA3600000, 0x03E4580E1B200000, 0x03E45C0E7BC00000, 0x03E4601087A00000,
    0x03E464122D400000, 0x03E468133E200000, 0x03E46C09D0400000, 0x03E4700A6EA00000,
    0x03E4740D60800000, 0x03E4780E43600000, 0x03E47C10C5A00000, 0x03E48013C3C00000,
    0x03E4840BAA000000, 0x03E4880DFD600000, 0x03E48C10B9A00000, 0x03E490112C800000,
    0x03E4940C59200000, 0x03E498103B000000, 0x03E49C1103E00000, 0x03E4A00BD9400000,
    0x03E4A40CE2E00000, 0x03E4A80DAD400000, 0x03E4AC0E5F800000, 0x03E4B01219C00000,
    0x03E4B409F0C00000, 0x03E4B80A36E00000, 0x03E4BC0A5BC00000, 0x03E4C00C98800000,
    0x03E4C40D5A600000, 0x03E4C80E42000000, 0x03E4CC0EDCE00000, 0x03E4D01000200000,
    0x03E4D410C0C00000, 0x03E4D810CB800000, 0x03E4DC11BDE00000, 0x03E4E012E6400000,
    0x03E4E4136DE00000, 0x03E4E813BF400000, 0x03E4EC0F11800000, 0x03E4F00F2FE00000,
    0x03E4F40FB4000000, 0x03E4F81079200000, 0x03E4FC1260800000, 0x03E50013CFE00000,
    0x03E504115AC00000, 0x03E5080B1BE00000, 0x03E50C0BE0800000, 0x03E5100F8C000000,
    0x03E514100FC00000, 0x03E5180E4C400000, 0x03E51C0F19400000, 0x03E5201198400000,
    0x03E52412DEE00000, 0x03E5280B1B000000, 0x03E52C0B8C400000, 0x03E5300D42600000,
    0x03E5340DBB400000, 0x03E5380DE1E00000, 0x03E53C0FA5E00000, 0x03E5400FC6E00000,
    0x03E54412C9600000, 0x03E5480A5A400000, 0x03E54C1011600000, 0x03E5500A3B800000,
    0x03E5540A39800000, 0x03E5580F43800000, 0x03E55C0FB7C00000, 0x03E560107E200000,
    0x03E56412CEA00000, 0x03E5681170000000, 0x03E56C0C59E00000, 0x03E5700D40400000,
    0x03E574115FC00000, 0x03E57809C7200000, 0x03E57C0B7CE00000, 0x03E5800C02400000,
    0x03E5840E70E00000, 0x03E5880EAE000000, 0x03E58C0A62E00000, 0x03E5900F1F600000,
    0x03E59409F7E00000, 0x03E5980BF5200000, 0x03E59C09C1A00000, 0x03E5A00D99800000,
    0x03E5A40CAF000000, 0x03E5A80FA4400000, 0x03E5AC0A78600000, 0x03E5B00B0BC00000,
    0x03E5B40EE0200000, 0x03E5B81089200000, 0x03E5BC1155400000, 0x03E5C00D77400000,
    0x03E5C411F6000000, 0x03E5C80D91000000, 0x03E5CC0C5FC00000, 0x03E5D0105CA00000,
    0x03E5D40C74000000, 0x03E5D80EACA00000, 0x03E5DC09D5C00000, 0x03E5E00A2D200000,
    0x03E5E40A39200000, 0x03E5E80D10200000, 0x03E5EC0F9CE00000, 0x03E5F0104DE00000,
    0x03E5F4115A400000, 0x03E5F81239E00000, 0x03E5FC0A5EA00000, 0x03E6000A88400000,
    0x03E6040B2E600000, 0x03E6080BDD800000, 0x03E60C0CB8A00000, 0x03E6100DFFC00000,
    0x03E6140F25400000, 0x03E61812B5A00000, 0x03E61C134D400000, 0x03E62013D2E00000,
    0x03E62413D9C00000, 0x03E6280A53600000, 0x03E62C0CD8C00000, 0x03E6300D6EE00000,
    0x03E63411EC400000, 0x03E6380BCE800000, 0x03E63C0C32000000, 0x03E6400C40000000,
    0x03E6440C93400000, 0x03E6480DE4600000, 0x03E64C0E29200000, 0x03E6500E91200000,
    0x03E6540F39400000, 0x03E6580FBE800000, 0x03E65C100DE00000, 0x03E66011E4C00000,
    0x03E664109DC00000, 0x03E6681204600000, 0x03E66C1269400000, 0x03E6700A42E00000,
    0x03E6740A54600000, 0x03E6780A97A00000, 0x03E67C0E19000000, 0x03E6801118400000,
    0x03E6841155400000, 0x03E6880BD9200000, 0x03E68C0BFEA00000, 0x03E6900C6F600000,
    0x03E6940D75C00000, 0x03E6980F87C00000, 0x03E69C0E6EA00000, 0x03E6A009DC800000,
    0x03E6A40ADF200000, 0x03E6A80B7CE00000, 0x03E6AC0BB7400000, 0x03E6B00C03800000,
    0x03E6B40E76400000, 0x03E6B80E8D200000, 0x03E6BC0FF3400000, 0x03E6C01008C00000,
    0x03E6C41246800000, 0x03E6C812DEC00000, 0x03E6CC12E9000000, 0x03E6D01303000000,
    0x03E6D409F1600000, 0x03E6D80F35C00000, 0x03E6DC1236800000, 0x03E6E012D7000000,
    0x03E6E40C1C200000, 0x03E6E809D0C00000, 0x03E6EC0A1B400000, 0x03E6F00B7DC00000,
    0x03E6F40B87E00000, 0x03E6F80CB3200000, 0x03E6FC0D40400000, 0x03E7000E39C00000,
    0x03E7040EC8400000, 0x03E708109F800000, 0x03E70C120F800000, 0x03E71013F1A00000,
    0x03E7140CD1000000, 0x03E71812C5C00000, 0x03E71C0A51200000, 0x03E7200CEF600000,
    0x03E7240CFE600000, 0x03E7280DA8200000, 0x03E72C0DD3800000, 0x03E7300E81200000,
    0x03E7340EAB200000, 0x03E7380F0D600000, 0x03E73C0FA2000000, 0x03E740130BC00000,
    0x03E7440A2DA00000, 0x03E7480C45C00000, 0x03E74C12CF000000, 0x03E7500A05600000,
    0x03E7540BA3200000, 0x03E7580DBD400000, 0x03E75C11E5400000, 0x03E7600BF1600000,
    0x03E7640C28800000, 0x03E7680D02E00000, 0x03E76C0E70E00000, 0x03E77012D0C00000,
    0x03E7740A45200000, 0x03E7780A81E00000, 0x03E77C0B8CA00000, 0x03E7800CC2600000,
    0x03E7840CE9C00000, 0x03E7880D15000000, 0x03E78C0D9CA00000, 0x03E7900E80C00000,
    0x03E7940EBC400000, 0x03E7980FEF200000, 0x03E79C1119E00000, 0x03E7A0111C200000,
    0x03E7A41239800000, 0x03E7A812DC400000, 0x03E7AC0A67E00000, 0x03E7B00DD7400000,
    0x03E7B40A83A00000, 0x03E7B80E3A000000, 0x03E7BC0E93000000, 0x03E7C010BF400000,
    0x03E7C412D4600000, 0x03E7C8138AE00000, 0x03E7CC13D3E00000, 0x03E7D00CF2E00000,
    0x03E7D40DB9600000, 0x03E7D8103D000000, 0x03E7DC0F59600000, 0x03E7E00F64000000,
    0x03E7E40F92400000, 0x03E7E80E58000000, 0x03E7EC0E13200000, 0x03E7F0116B000000,
    0x03E7F409D8000000, 0x03E7F81066C00000, 0x03E7FC0A47400000, 0x03E8000A40E00000,
    0x03E8040BD4C00000, 0x03E8080C5A600000, 0x03E80C0F9AC00000, 0x03E8100B70A00000,
    0x03E8140DA3C00000, 0x03E8180CD6800000, 0x03E81C11E7600000, 0x03E8201109800000,
    0x03E82412C9A00000, 0x03E8281131600000, 0x03E82C0BDA600000, 0x03E8300A28000000,
    0x03E8340AB8000000, 0x03E8400B0B400000, 0x03E8480CCE800000, 0x03E8540A3BC00000,
    0x03E8580E65400000, 0x03E85C0ED9400000, 0x03E8600F27800000, 0x03E8640F2BC00000,
    0x03E8680F2CA00000, 0x03E86C0F31E00000, 0x03E87012EAC00000, 0x03E8740F97C00000,
    0x03E8780FF7A00000, 0x03E88010C2400000, 0x03E888115F000000, 0x03E8941207000000,
    0x03E898121FA00000, 0x03E8A8131DE00000, 0x03E8AC131F800000, 0x03E8B01325000000,
    0x03E8B413B6800000, 0x03E8B8121BC00000, 0x03E8BC12D6E00000, 0x03E8C009F5C00000,
    0x03E8C40A1CE00000, 0x03E8C80A29A00000, 0x03E8CC0A59200000, 0x03E8D00A5C800000,
    0x03E8D40A6A200000, 0x03E8D80AB3A00000, 0x03E8DC0AC0C00000, 0x03E8E00ACD000000,
    0x03E8E40B08000000, 0x03E8E80B15000000, 0x03E8EC0B8C800000, 0x03E8F00B8DC00000,
    0x03E8F40C12800000, 0x03E8F80C2D000000, 0x03E8FC0C31C00000, 0x03E9000C3E400000,
    0x03E9040CA9E00000, 0x03E9080CBC400000, 0x03E90C0CD2200000, 0x03E9100D10A00000,
    0x03E9140DAEE00000, 0x03E9180DC3400000, 0x03E91C0DE4400000, 0x03E9200E2DC00000,
    0x03E9240E45600000, 0x03E9280E84400000, 0x03E92C0F12200000, 0x03E9300F27C00000,
    0x03E9340F29200000, 0x03E9380F29000000, 0x03E93C0F2A000000, 0x03E9400F2AC00000,
    0x03E9440F2BA00000, 0x03E9480F31A00000, 0x03E94C0F31C00000, 0x03E9500F48000000,
    0x03E9540F50200000, 0x03E9580F78000000, 0x03E95C0FBE800000, 0x03E9600FC1200000,
    0x03E9640FC8200000, 0x03E9680FEE400000, 0x03E96C1000A00000, 0x03E970103DA00000,
    0x03E974104F200000, 0x03E978104F200000, 0x03E97C108AE00000, 0x03E9801122000000,
    0x03E9841132C00000, 0x03E9881160200000, 0x03E98C1167200000, 0x03E990119A600000,
    0x03E99411A1000000, 0x03E99811F6C00000, 0x03E99C1207000000, 0x03E9A012DC600000,
    0x03E9A412FFE00000, 0x03E9A81307600000, 0x03E9AC0C0EA00000, 0x03E9B0485DC00000,
    0x03E9B41043000000, 0x03E9C009C4C00000, 0x03E9C40A36A00000, 0x03E9C80A2D000000,
    0x03E9CC09F0000000, 0x03E9D00A28A00000, 0x03E9D40A30000000, 0x03E9D80A58E00000,
    0x03E9DC0A5F400000, 0x03E9E00AB3A00000, 0x03E9E40AAAA00000, 0x03E9E80AB3200000,
    0x03E9EC0ABC400000, 0x03E9F00B0B400000, 0x03E9F40B16600000, 0x03E9F80B28800000,
    0x03E9FC0B2A800000, 0x03EA000B4C400000, 0x03EA040B65000000, 0x03EA080BDA400000,
    0x03EA0C0BDB200000, 0x03EA100BED200000, 0x03EA140BF5A00000, 0x03EA180C1B000000,
    0x03EA1C0C29C00000, 0x03EA200C21000000, 0x03EA240C31C00000, 0x03EA280C2C000000,
    0x03EA2C0C3E400000, 0x03EA300C46800000, 0x03EA340C78800000, 0x03EA380C83800000,
    0x03EA3C0C8A400000, 0x03EA400CAAC00000, 0x03EA440CCE800000, 0x03EA480CE2E00000,
    0x03EA4C0CE3600000, 0x03EA500CEAC00000, 0x03EA540D6F200000, 0x03EA580D77400000,
    0x03EA5C0DA8200000, 0x03EA600DDB600000, 0x03EA640DD9600000, 0x03EA680DE4400000,
    0x03EA6C0E03C00000, 0x03EA700E2DC00000, 0x03EA740EF4E00000, 0x03EA780E46A00000,
    0x03EA7C0E55E00000, 0x03EA800E65400000, 0x03EA840E8E200000, 0x03EA880EA0C00000,
    0x03EA8C0EA7600000, 0x03EA900EC3A00000, 0x03EA940EC3E00000, 0x03EA980ED9400000,
    0x03EA9C0EDB600000, 0x03EAA00EDE800000, 0x03EAA40EE9400000, 0x03EAA80EE8000000,
    0x03EAAC0F19800000, 0x03EAB00F56200000, 0x03EAB40F78000000, 0x03EAB80F8F600000,
    0x03EABC0FAB600000, 0x03EAC00FBE800000, 0x03EAC40FE7C00000, 0x03EAC81000A00000,
    0x03EACC106A400000, 0x03EAD0107DE00000, 0x03EAD410EF200000, 0x03EAD81128200000,
    0x03EADC1130C00000, 0x03EAE01132C00000, 0x03EAE41157E00000, 0x03EAE8115F000000,
    0x03EAEC1159600000, 0x03EAF01160200000, 0x03EAF4115FC00000, 0x03EAF8115DA00000,
    0x03EAFC1167200000, 0x03EB001171400000, 0x03EB0411A1000000, 0x03EB0811E7000000,
    0x03EB0C120E400000, 0x03EB101233200000, 0x03EB14124EC00000, 0x03EB1812CF800000,
    0x03EB1C12DC600000, 0x03EB2012EAC00000, 0x03EB2412FB600000, 0x03EB2812FFE00000,
    0x03EB2C1301600000, 0x03EB301307600000, 0x03EB341362400000, 0x03EB3813F3800000,
    0x03EB3C4509400000, 0x03EB404508800000, 0x03EB44467AA00000, 0x03EB480773A00000,
    0x03EB4C0803000000, 0x03EB500807200000, 0x03EB544A49200000, 0x03EB584B9A000000,
    0x03EB5C4FDA600000, 0x03EB6013E8600000, 0x03EB6413F1C00000, 0x03EC7400BB2005B4,
    0x03EC7C00BE4005B7, 0x03ECA800BD2005C1, 0x03ECAC00BD2005C2, 0x03ECB01F692005C1,
    0x03ECB41F692005C2, 0x03ECB800BA0005B7, 0x03ECBC00BA0005B8, 0x03ECC000BA0005BC,
    0x03ECC400BA2005BC, 0x03ECC800BA4005BC, 0x03ECCC00BA6005BC, 0x03ECD000BA8005BC,
    0x03ECD400BAA005BC, 0x03ECD800BAC005BC, 0x03ECE000BB0005BC, 0x03ECE400BB2005BC,
    0x03ECE800BB4005BC, 0x03ECEC00BB6005BC, 0x03ECF000BB8005BC, 0x03ECF800BBC005BC,
    0x03ED0000BC0005BC, 0x03ED0400BC2005BC, 0x03ED0C00BC6005BC, 0x03ED1000BC8005BC,
    0x03ED1800BCC005BC, 0x03ED1C00BCE005BC, 0x03ED2000BD0005BC, 0x03ED2400BD2005BC,
    0x03ED2800BD4005BC, 0x03ED2C00BAA005B9, 0x03ED3000BA2005BF, 0x03ED3400BB6005BF,
    0x03ED3800BC8005BF, 0x04426822132110BA, 0x04427022136110BA, 0x0442AC2214A110BA,
    0x0444B82226211127, 0x0444BC2226411127, 0x044D2C2268E1133E, 0x044D302268E11357,
    0x0452EC22972114BA, 0x0452F022972114B0, 0x0452F822972114BD, 0x0456E822B70115AF,
    0x0456EC22B72115AF, 0x0745783A2AE1D165, 0x07457C3A2B01D165, 0x0745803A2BE1D16E,
    0x0745843A2BE1D16F, 0x0745883A2BE1D170, 0x07458C3A2BE1D171, 0x0745903A2BE1D172,
    0x0746EC3A3721D165, 0x0746F03A3741D165, 0x0746F43A3761D16E, 0x0746F83A3781D16E,
    0x0746FC3A3761D16F, 0x0747003A3781D16F, 0x0BE00009C7A00000, 0x0BE00409C7000000,
    0x0BE00809C8200000, 0x0BE00C4024400000, 0x0BE01009EC000000, 0x0BE01409F5C00000,
    0x0BE01809F7600000, 0x0BE01C0A00400000, 0x0BE0200A0F400000, 0x0BE0240A13200000,
    0x0BE0280A1CE00000, 0x0BE02C0A19E00000, 0x0BE0300693C00000, 0x0BE03440C7400000,
    0x0BE0380A29A00000, 0x0BE03C0A2A800000, 0x0BE0400A2C800000, 0x0BE0440A2EE00000,
    0x0BE04840A3800000, 0x0BE04C0697200000, 0x0BE0500A2CE00000, 0x0BE0540A31A00000,
    0x0BE05840A9600000, 0x0BE05C0A32E00000, 0x0BE0600A34800000, 0x0BE06409D9800000,
    0x0BE0680A35800000, 0x0BE06C0A36A00000, 0x0BE070523BE00000, 0x0BE0740A3EA00000,
    0x0BE0780A40600000, 0x0BE07C069BE00000, 0x0BE0800A47600000, 0x0BE0840A48C00000,
    0x0BE0880A4E400000, 0x0BE08C0A4EE00000, 0x0BE09006A2A00000, 0x0BE0940A58E00000,
    0x0BE0980A59200000, 0x0BE09C0A5C800000, 0x0BE0A00A5F400000, 0x0BE0A40A60A00000,
    0x0BE0A80A60C00000, 0x0BE0AC0A62E00000, 0x0BE0B00A69200000, 0x0BE0B40A6A200000,
    0x0BE0B80A6B400000, 0x0BE0BC0A6E600000, 0x0BE0C00A6FA00000, 0x0BE0C40A6FE00000,
    0x0BE0C80A6FE00000, 0x0BE0CC0A6FE00000, 0x0BE0D04145800000, 0x0BE0D40E0E000000,
    0x0BE0D80A79400000, 0x0BE0DC0A7BE00000, 0x0BE0E0416C600000, 0x0BE0E40A7D600000,
    0x0BE0E80A7E200000, 0x0BE0EC0A80C00000, 0x0BE0F00A93C00000, 0x0BE0F40A87000000,
    0x0BE0F80A89000000, 0x0BE0FC0A8D000000, 0x0BE1000A94400000, 0x0BE1040A9EC00000,
    0x0BE1080AA2000000, 0x0BE10C0AAA600000, 0x0BE1100AAC600000, 0x0BE1140AB0800000,
    0x0BE1180AB0800000, 0x0BE11C0AB3200000, 0x0BE1200AB5600000, 0x0BE1240AB6600000,
    0x0BE1280AB8400000, 0x0BE12C0AE2C00000, 0x0BE1300AC0C00000, 0x0BE1340AE2E00000,
    0x0BE1380ACA200000, 0x0BE13C0ACE800000, 0x0BE1400A40E00000, 0x0BE1440B1DC00000,
    0x0BE1480AF9C00000, 0x0BE14C0AFE800000, 0x0BE1500B01A00000, 0x0BE1540AF1600000,
    0x0BE1580B06400000, 0x0BE15C0B06200000, 0x0BE1600B15800000, 0x0BE164429C800000,
    0x0BE1680B1E400000, 0x0BE16C0B1EE00000, 0x0BE1700B20C00000, 0x0BE1740B23400000,
    0x0BE1780B24400000, 0x0BE17C0B2C400000, 0x0BE18042D5000000, 0x0BE18442DD400000,
    0x0BE1880B3D800000, 0x0BE18C0B43600000, 0x0BE1900B44E00000, 0x0BE1940B3B000000,
    0x0BE1980B4CC00000, 0x0BE19C06DDC00000, 0x0BE1A006DF800000, 0x0BE1A40B61000000,
    0x0BE1A80B67C00000, 0x0BE1AC0B67C00000, 0x0BE1B04339000000, 0x0BE1B40B78600000,
    0x0BE1B80B7B000000, 0x0BE1BC0B7CE00000, 0x0BE1C00B7E600000, 0x0BE1C44363000000,
    0x0BE1C80B7FE00000, 0x0BE1CC0B80C00000, 0x0BE1D00BEA600000, 0x0BE1D40B84400000,
    0x0BE1D806F0200000, 0x0BE1DC0B8C000000, 0x0BE1E00B8DC00000, 0x0BE1E40B98000000,
    0x0BE1E80B91A00000, 0x0BE1EC43BC800000, 0x0BE1F00BA8600000, 0x0BE1F443BCC00000,
    0x0BE1F80BADC00000, 0x0BE1FC0BAD600000, 0x0BE2000BAF800000, 0x0BE2040BBC200000,
    0x0BE2080BBC400000, 0x0BE20C0705E00000, 0x0BE2100BBFA00000, 0x0BE2140BC5000000,
    0x0BE2180BC7A00000, 0x0BE21C0BCD200000, 0x0BE220070C400000, 0x0BE2244430600000,
    0x0BE228070F800000, 0x0BE22C0BD6000000, 0x0BE2300BD6600000, 0x0BE2340BD6C00000,
    0x0BE2380BD9400000, 0x0BE23C5472400000, 0x0BE2400BDFC00000, 0x0BE2444466200000,
    0x0BE2484466200000, 0x0BE24C1040200000, 0x0BE2500BE4400000, 0x0BE2540BE4400000,
    0x0BE2580718E00000, 0x0BE25C4657000000, 0x0BE2604C3B400000, 0x0BE2640BEC400000,
    0x0BE2680BED600000, 0x0BE26C071C600000, 0x0BE2700BF3400000, 0x0BE2740BF9A00000,
    0x0BE2780BFAE00000, 0x0BE27C0BFF200000, 0x0BE2800C10200000, 0x0BE2840727400000,
    0x0BE2880723800000, 0x0BE28C0C12800000, 0x0BE29044DA800000, 0x0BE2940C18E00000,
    0x0BE2980C29000000, 0x0BE29C0C29800000, 0x0BE2A00C29C00000, 0x0BE2A40C29800000,
    0x0BE2A80C2F400000, 0x0BE2AC0C31C00000, 0x0BE2B00C36400000, 0x0BE2B40C34800000,
    0x0BE2B80C35E00000, 0x0BE2BC0C3BC00000, 0x0BE2C00C3E400000, 0x0BE2C40C3EC00000,
    0x0BE2C80C42000000, 0x0BE2CC0C43600000, 0x0BE2D00C4BA00000, 0x0BE2D40C56200000,
    0x0BE2D80C5A800000, 0x0BE2DC0C6A000000, 0x0BE2E04561800000, 0x0BE2E40C67A00000,
    0x0BE2E80C5F800000, 0x0BE2EC0C6D000000, 0x0BE2F00C70600000, 0x0BE2F40C7C800000,
    0x0BE2F8457E200000, 0x0BE2FC0C84400000, 0x0BE3000C78A00000, 0x0BE3040C75200000,
    0x0BE3080745C00000, 0x0BE30C0C8D200000, 0x0BE3100C8FC00000, 0x0BE3140C93A00000,
    0x0BE3180C8EE00000, 0x0BE31C074D800000, 0x0BE3200CA9E00000, 0x0BE3240CAD800000,
    0x0BE3284601400000, 0x0BE32C0CBC600000, 0x0BE3300CDF000000, 0x0BE3340CC9200000,
    0x0BE3380763200000, 0x0BE33C0CD2200000, 0x0BE3400761000000, 0x0BE344075C800000,
    0x0BE3480A32400000, 0x0BE34C0A32A00000, 0x0BE3500CE0000000, 0x0BE3540CD3800000,
    0x0BE3581015A00000, 0x0BE35C087B200000, 0x0BE3600CE2E00000, 0x0BE3640CE3600000,
    0x0BE3680CE4200000, 0x0BE36C0CEBC00000, 0x0BE3700CEA600000, 0x0BE3744678600000,
    0x0BE3780769200000, 0x0BE37C0CFF400000, 0x0BE3800CF0A00000, 0x0BE3840D0A400000,
    0x0BE3880D10A00000, 0x0BE38C468DA00000, 0x0BE3900D11C00000, 0x0BE3940D03E00000,
    0x0BE3980D22800000, 0x0BE39C0773A00000, 0x0BE3A00D28400000, 0x0BE3A40D34600000,
    0x0BE3A80D3D400000, 0x0BE3AC0D55000000, 0x0BE3B046D4600000, 0x0BE3B40D5B600000,
    0x0BE3B80783000000, 0x0BE3BC0D64200000, 0x0BE3C04714E00000, 0x0BE3C40D6A800000,
    0x0BE3C80789C00000, 0x0BE3CC0D6E400000, 0x0BE3D00D73E00000, 0x0BE3D40D77400000,
    0x0BE3D80D77600000, 0x0BE3DC4751A00000, 0x0BE3E043A1600000, 0x0BE3E4475F400000,
    0x0BE3E80D89C00000, 0x0BE3EC4797800000, 0x0BE3F00D97E00000, 0x0BE3F40D99A00000,
    0x0BE3F80D8CE00000, 0x0BE3FC0DA2C00000, 0x0BE4000DA7C00000, 0x0BE4040DAEE00000,
    0x0BE4080DA8200000, 0x0BE40C0DAD200000, 0x0BE4100DAF000000, 0x0BE4140DB0A00000,
    0x0BE41847A3C00000, 0x0BE41C0DA6800000, 0x0BE4200DC5E00000, 0x0BE4240DCDC00000,
    0x0BE42807A6600000, 0x0BE42C0DD9600000, 0x0BE4300DD8E00000, 0x0BE43447DA200000,
    0x0BE4380DBF200000, 0x0BE43C0DEDC00000, 0x0BE44047EBC00000, 0x0BE44447F1C00000,
    0x0BE4480DF8C00000, 0x0BE44C0E07200000, 0x0BE4500E03C00000, 0x0BE4540E03600000,
    0x0BE45807B2C00000, 0x0BE45C0E09400000, 0x0BE4600E0FA00000, 0x0BE4640E0EE00000,
    0x0BE4680E15A00000, 0x0BE46C40A4A00000, 0x0BE4700E28A00000, 0x0BE474484C600000,
    0x0BE4780E33800000, 0x0BE47C4875600000, 0x0BE4800E45000000, 0x0BE4840E46A00000,
    0x0BE4880E4A000000, 0x0BE48C48C1000000, 0x0BE4900E50000000, 0x0BE4940E52A00000,
    0x0BE49848E6A00000, 0x0BE49C4902800000, 0x0BE4A00E6F400000, 0x0BE4A40E71600000,
    0x0BE4A807D5800000, 0x0BE4AC0E74A00000, 0x0BE4B007D7000000, 0x0BE4B407D7000000,
    0x0BE4B80E88E00000, 0x0BE4BC0E8B800000, 0x0BE4C00E8E200000, 0x0BE4C40E90A00000,
    0x0BE4C80E99400000, 0x0BE4CC07E3600000, 0x0BE4D00EA4800000, 0x0BE4D44986C00000,
    0x0BE4D80EA7C00000, 0x0BE4DC4992400000, 0x0BE4E00EAE000000, 0x0BE4E44433E00000,
    0x0BE4E80EC2000000, 0x0BE4EC49F4200000, 0x0BE4F049F7000000, 0x0BE4F44A08800000,
    0x0BE4F807FF800000, 0x0BE4FC0801000000, 0x0BE5000EDE800000, 0x0BE5044A1E600000,
    0x0BE5084A1E400000, 0x0BE50C4A23200000, 0x0BE5104A26600000, 0x0BE5140EE3C00000,
    0x0BE5180EE3E00000, 0x0BE51C0EE3E00000, 0x0BE5200EE9400000, 0x0BE5240807200000,
    0x0BE5280EF1600000, 0x0BE52C0808C00000, 0x0BE5300812C00000, 0x0BE5344A83A00000,
    0x0BE5380F09C00000, 0x0BE53C0F11800000, 0x0BE5400F19800000, 0x0BE544081C600000,
    0x0BE5484AC4C00000, 0x0BE54C0F2AC00000, 0x0BE5504AD3400000, 0x0BE5544AD8A00000,
    0x0BE5580F31E00000, 0x0BE55C0F3D600000, 0x0BE5600825E00000, 0x0BE5640F48000000,
    0x0BE5680F49400000, 0x0BE56C0F49E00000, 0x0BE5704B2F800000, 0x0BE5744B54E00000,
    0x0BE5784B54E00000, 0x0BE57C0F5DC00000, 0x0BE5800840400000, 0x0BE5844B75600000,
    0x0BE5880F78C00000, 0x0BE58C0F79200000, 0x0BE5900844E00000, 0x0BE5944B90000000,
    0x0BE5980F9A400000, 0x0BE59C0854000000, 0x0BE5A00F9D000000, 0x0BE5A40F9C600000,
    0x0BE5A80FA0000000, 0x0BE5AC4BF0C00000, 0x0BE5B00FAC600000, 0x0BE5B40860200000,
    0x0BE5B80FB8E00000, 0x0BE5BC0FC0400000, 0x0BE5C00FC8A00000, 0x0BE5C40866800000,
    0x0BE5C84C45000000, 0x0BE5CC4C48E00000, 0x0BE5D0086B200000, 0x0BE5D44C5B200000,
    0x0BE5D80FEF400000, 0x0BE5DC4C67C00000, 0x0BE5E00FF2A00000, 0x0BE5E40FFF400000,
    0x0BE5E81000A00000, 0x0BE5EC4C9B400000, 0x0BE5F04CA4600000, 0x0BE5F4100C000000,
    0x0BE5F84CB5000000, 0x0BE5FC100E000000, 0x0BE600466BE00000, 0x0BE604087AA00000,
    0x0BE6081016400000, 0x0BE60C1020600000, 0x0BE6100881600000, 0x0BE6141027C00000,
    0x0BE6180B56A00000, 0x0BE61C4CF4E00000, 0x0BE6204CF6A00000, 0x0BE6244672600000,
    0x0BE6284673800000, 0x0BE62C1040200000, 0x0BE6301040800000, 0x0BE63411F3C00000,
    0x0BE638088D600000, 0x0BE63C1052200000, 0x0BE6401051600000, 0x0BE6441053A00000,
    0x0BE6480A56600000, 0x0BE64C1056200000, 0x0BE6501056600000, 0x0BE6541057A00000,
    0x0BE658105CC00000, 0x0BE65C4D67800000, 0x0BE660105CA00000, 0x0BE6641063A00000,
    0x0BE668106C600000, 0x0BE66C1075A00000, 0x0BE6701064600000, 0x0BE6741077A00000,
    0x0BE678107CE00000, 0x0BE67C108AE00000, 0x0BE680106A600000, 0x0BE6841079400000,
    0x0BE6881079800000, 0x0BE68C107B800000, 0x0BE6904D86C00000, 0x0BE6944DAD600000,
    0x0BE6984D9AA00000, 0x0BE69C08A5600000, 0x0BE6A0109E200000, 0x0BE6A4109E600000,
    0x0BE6A810A2C00000, 0x0BE6AC4E79400000, 0x0BE6B010AC800000, 0x0BE6B44DE5800000,
    0x0BE6B808ABA00000, 0x0BE6BC08AC200000, 0x0BE6C04DF6200000, 0x0BE6C44E1A400000,
    0x0BE6C808AD600000, 0x0BE6CC10CA000000, 0x0BE6D010CB800000, 0x0BE6D410CCE00000,
    0x0BE6D810CD200000, 0x0BE6DC10D5200000, 0x0BE6E010D1000000, 0x0BE6E410E1C00000,
    0x0BE6E810DC400000, 0x0BE6EC10EF200000, 0x0BE6F010E5000000, 0x0BE6F410ED600000,
    0x0BE6F810F0C00000, 0x0BE6FC08BAE00000, 0x0BE70010FC200000, 0x0BE7041100200000,
    0x0BE70808BF200000, 0x0BE70C110C000000, 0x0BE710110C600000, 0x0BE7144ECCE00000,
    0x0BE718111AE00000, 0x0BE71C111BC00000, 0x0BE72008C6A00000, 0x0BE724111F400000,
    0x0BE7280697600000, 0x0BE72C4F15C00000, 0x0BE7304F2CC00000, 0x0BE73408D7C00000,
    0x0BE73808D8E00000, 0x0BE73C1154000000, 0x0BE740115DA00000, 0x0BE7441171400000,
    0x0BE748118AA00000, 0x0BE74C4F95000000, 0x0BE7501195600000, 0x0BE7541198200000,
    0x0BE75811A3600000, 0x0BE75C11AEE00000, 0x0BE7604FE5E00000, 0x0BE7644100800000,
    0x0BE76811B9600000, 0x0BE76C11B7800000, 0x0BE77011BE000000, 0x0BE774411BC00000,
    0x0BE77811DA800000, 0x0BE77C11E7000000, 0x0BE78050BA400000, 0x0BE78450BDA00000,
    0x0BE7881212800000, 0x0BE78C121E200000, 0x0BE7901222200000, 0x0BE79450E5C00000,
    0x0BE7981223600000, 0x0BE79C1247000000, 0x0BE7A0125AE00000, 0x0BE7A4125B000000,
    0x0BE7A8124F800000, 0x0BE7AC127F200000, 0x0BE7B01282A00000, 0x0BE7B4517F400000,
    0x0BE7B812B1600000, 0x0BE7BC0932A00000, 0x0BE7C012B6E00000, 0x0BE7C451AEE00000,
    0x0BE7C8093CC00000, 0x0BE7CC12D8600000, 0x0BE7D00BB6400000, 0x0BE7D412E4600000,
    0x0BE7D85228A00000, 0x0BE7DC5243400000, 0x0BE7E0094DC00000, 0x0BE7E4094EC00000,
    0x0BE7E812FC000000, 0x0BE7EC5281400000, 0x0BE7F00956400000, 0x0BE7F45292C00000,
    0x0BE7F81301600000, 0x0BE7FC1301600000, 0x0BE8001305200000, 0x0BE80452B6C00000,
    0x0BE808131C400000, 0x0BE80C0966600000, 0x0BE8101325200000, 0x0BE8141334E00000,
    0x0BE8181338400000, 0x0BE81C133FC00000, 0x0BE8200979C00000, 0x0BE8245366000000,
    0x0BE8281362400000, 0x0BE82C1388000000, 0x0BE830139FA00000, 0x0BE8340999C00000,
    0x0BE838099DA00000, 0x0BE83C13ACE00000, 0x0BE8405419C00000, 0x0BE844099F000000,
    0x0BE8485420A00000, 0x0BE84C5441C00000, 0x0BE8505452200000, 0x0BE85413D7600000,
    0x0BE85809AAC00000, 0x0BE85C13DF200000, 0x0BE86013DFC00000, 0x0BE86413E0A00000,
    0x0BE86813E1E00000, 0x0BE86C13E2C00000, 0x0BE87013E7600000, 0x0BE87454C0000000,
};
static const uint64_t pf__unicode_comp[940] = {
    0x0000F0006700226E, 0x0000F40067002260, 0x0000F8006700226F, 0x00010400600000C0,
    0x00010400602000C1, 0x00010400604000C2, 0x00010400606000C3, 0x0001040060800100,
    0x0001040060C00102, 0x0001040060E00226, 0x00010400610000C4, 0x0001040061201EA2,
    0x00010400614000C5, 0x00010400618001CD, 0x0001040061E00200, 0x0001040062200202,
    0x0001040064601EA0, 0x0001040064A01E00, 0x0001040065000104, 0x0001080060E01E02,
    0x0001080064601E04, 0x0001080066201E06, 0x00010C0060200106, 0x00010C0060400108,
    0x00010C0060E0010A, 0x00010C006180010C, 0x00010C0064E000C7, 0x0001100060E01E0A,
    0x000110006180010E, 0x0001100064601E0C, 0x0001100064E01E10, 0x0001100065A01E12,
    0x0001100066201E0E, 0x00011400600000C8, 0x00011400602000C9, 0x00011400604000CA,
    0x0001140060601EBC, 0x0001140060800112, 0x0001140060C00114, 0x0001140060E00116,
    0x00011400610000CB, 0x0001140061201EBA, 0x000114006180011A, 0x0001140061E00204,
    0x0001140062200206, 0x0001140064601EB8, 0x0001140064E00228, 0x0001140065000118,
    0x0001140065A01E18, 0x0001140066001E1A, 0x0001180060E01E1E, 0x00011C00602001F4,
    0x00011C006040011C, 0x00011C0060801E20, 0x00011C0060C0011E, 0x00011C0060E00120,
    0x00011C00618001E6, 0x00011C0064E00122, 0x0001200060400124, 0x0001200060E01E22,
    0x0001200061001E26, 0x000120006180021E, 0x0001200064601E24, 0x0001200064E01E28,
    0x0001200065C01E2A, 0x00012400600000CC, 0x00012400602000CD, 0x00012400604000CE,
    0x0001240060600128, 0x000124006080012A, 0x0001240060C0012C, 0x0001240060E00130,
    0x00012400610000CF, 0x0001240061201EC8, 0x00012400618001CF, 0x0001240061E00208,
    0x000124006220020A, 0x0001240064601ECA, 0x000124006500012E, 0x0001240066001E2C,
    0x0001280060400134, 0x00012C0060201E30, 0x00012C00618001E8, 0x00012C0064601E32,
    0x00012C0064E00136, 0x00012C0066201E34, 0x0001300060200139, 0x000130006180013D,
    0x0001300064601E36, 0x0001300064E0013B, 0x0001300065A01E3C, 0x0001300066201E3A,
    0x0001340060201E3E, 0x0001340060E01E40, 0x0001340064601E42, 0x00013800600001F8,
    0x0001380060200143, 0x00013800606000D1, 0x0001380060E01E44, 0x0001380061800147,
    0x0001380064601E46, 0x0001380064E00145, 0x0001380065A01E4A, 0x0001380066201E48,
    0x00013C00600000D2, 0x00013C00602000D3, 0x00013C00604000D4, 0x00013C00606000D5,
    0x00013C006080014C, 0x00013C0060C0014E, 0x00013C0060E0022E, 0x00013C00610000D6,
    0x00013C0061201ECE, 0x00013C0061600150, 0x00013C00618001D1, 0x00013C0061E0020C,
    0x00013C006220020E, 0x00013C00636001A0, 0x00013C0064601ECC, 0x00013C00650001EA,
    0x0001400060201E54, 0x0001400060E01E56, 0x0001480060200154, 0x0001480060E01E58,
    0x0001480061800158, 0x0001480061E00210, 0x0001480062200212, 0x0001480064601E5A,
    0x0001480064E00156, 0x0001480066201E5E, 0x00014C006020015A, 0x00014C006040015C,
    0x00014C0060E01E60, 0x00014C0061800160, 0x00014C0064601E62, 0x00014C0064C00218,
    0x00014C0064E0015E, 0x0001500060E01E6A, 0x0001500061800164, 0x0001500064601E6C,
    0x0001500064C0021A, 0x0001500064E00162, 0x0001500065A01E70, 0x0001500066201E6E,
    0x00015400600000D9, 0x00015400602000DA, 0x00015400604000DB, 0x0001540060600168,
    0x000154006080016A, 0x0001540060C0016C, 0x00015400610000DC, 0x0001540061201EE6,
    0x000154006140016E, 0x0001540061600170, 0x00015400618001D3, 0x0001540061E00214,
    0x0001540062200216, 0x00015400636001AF, 0x0001540064601EE4, 0x0001540064801E72,
    0x0001540065000172, 0x0001540065A01E76, 0x0001540066001E74, 0x0001580060601E7C,
    0x0001580064601E7E, 0x00015C0060001E80, 0x00015C0060201E82, 0x00015C0060400174,
    0x00015C0060E01E86, 0x00015C0061001E84, 0x00015C0064601E88, 0x0001600060E01E8A,
    0x0001600061001E8C, 0x0001640060001EF2, 0x00016400602000DD, 0x0001640060400176,
    0x0001640060601EF8, 0x0001640060800232, 0x0001640060E01E8E, 0x0001640061000178,
    0x0001640061201EF6, 0x0001640064601EF4, 0x0001680060200179, 0x0001680060401E90,
    0x0001680060E0017B, 0x000168006180017D, 0x0001680064601E92, 0x0001680066201E94,
    0x00018400600000E0, 0x00018400602000E1, 0x00018400604000E2, 0x00018400606000E3,
    0x0001840060800101, 0x0001840060C00103, 0x0001840060E00227, 0x00018400610000E4,
    0x0001840061201EA3, 0x00018400614000E5, 0x00018400618001CE, 0x0001840061E00201,
    0x0001840062200203, 0x0001840064601EA1, 0x0001840064A01E01, 0x0001840065000105,
    0x0001880060E01E03, 0x0001880064601E05, 0x0001880066201E07, 0x00018C0060200107,
    0x00018C0060400109, 0x00018C0060E0010B, 0x00018C006180010D, 0x00018C0064E000E7,
    0x0001900060E01E0B, 0x000190006180010F, 0x0001900064601E0D, 0x0001900064E01E11,
    0x0001900065A01E13, 0x0001900066201E0F, 0x00019400600000E8, 0x00019400602000E9,
    0x00019400604000EA, 0x0001940060601EBD, 0x0001940060800113, 0x0001940060C00115,
    0x0001940060E00117, 0x00019400610000EB, 0x0001940061201EBB, 0x000194006180011B,
    0x0001940061E00205, 0x0001940062200207, 0x0001940064601EB9, 0x0001940064E00229,
    0x0001940065000119, 0x0001940065A01E19, 0x0001940066001E1B, 0x0001980060E01E1F,
    0x00019C00602001F5, 0x00019C006040011D, 0x00019C0060801E21, 0x00019C0060C0011F,
    0x00019C0060E00121, 0x00019C00618001E7, 0x00019C0064E00123, 0x0001A00060400125,
    0x0001A00060E01E23, 0x0001A00061001E27, 0x0001A0006180021F, 0x0001A00064601E25,
    0x0001A00064E01E29, 0x0001A00065C01E2B, 0x0001A00066201E96, 0x0001A400600000EC,
    0x0001A400602000ED, 0x0001A400604000EE, 0x0001A40060600129, 0x0001A4006080012B,
    0x0001A40060C0012D, 0x0001A400610000EF, 0x0001A40061201EC9, 0x0001A400618001D0,
    0x0001A40061E00209, 0x0001A4006220020B, 0x0001A40064601ECB, 0x0001A4006500012F,
    0x0001A40066001E2D, 0x0001A80060400135, 0x0001A800618001F0, 0x0001AC0060201E31,
    0x0001AC00618001E9, 0x0001AC0064601E33, 0x0001AC0064E00137, 0x0001AC0066201E35,
    0x0001B0006020013A, 0x0001B0006180013E, 0x0001B00064601E37, 0x0001B00064E0013C,
    0x0001B00065A01E3D, 0x0001B00066201E3B, 0x0001B40060201E3F, 0x0001B40060E01E41,
    0x0001B40064601E43, 0x0001B800600001F9, 0x0001B80060200144, 0x0001B800606000F1,
    0x0001B80060E01E45, 0x0001B80061800148, 0x0001B80064601E47, 0x0001B80064E00146,
    0x0001B80065A01E4B, 0x0001B80066201E49, 0x0001BC00600000F2, 0x0001BC00602000F3,
    0x0001BC00604000F4, 0x0001BC00606000F5, 0x0001BC006080014D, 0x0001BC0060C0014F,
    0x0001BC0060E0022F, 0x0001BC00610000F6, 0x0001BC0061201ECF, 0x0001BC0061600151,
    0x0001BC00618001D2, 0x0001BC0061E0020D, 0x0001BC006220020F, 0x0001BC00636001A1,
    0x0001BC0064601ECD, 0x0001BC00650001EB, 0x0001C00060201E55, 0x0001C00060E01E57,
    0x0001C80060200155, 0x0001C80060E01E59, 0x0001C80061800159, 0x0001C80061E00211,
    0x0001C80062200213, 0x0001C80064601E5B, 0x0001C80064E00157, 0x0001C80066201E5F,
    0x0001CC006020015B, 0x0001CC006040015D, 0x0001CC0060E01E61, 0x0001CC0061800161,
    0x0001CC0064601E63, 0x0001CC0064C00219, 0x0001CC0064E0015F, 0x0001D00060E01E6B,
    0x0001D00061001E97, 0x0001D00061800165, 0x0001D00064601E6D, 0x0001D00064C0021B,
    0x0001D00064E00163, 0x0001D00065A01E71, 0x0001D00066201E6F, 0x0001D400600000F9,
    0x0001D400602000FA, 0x0001D400604000FB, 0x0001D40060600169, 0x0001D4006080016B,
    0x0001D40060C0016D, 0x0001D400610000FC, 0x0001D40061201EE7, 0x0001D4006140016F,
    0x0001D40061600171, 0x0001D400618001D4, 0x0001D40061E00215, 0x0001D40062200217,
    0x0001D400636001B0, 0x0001D40064601EE5, 0x0001D40064801E73, 0x0001D40065000173,
    0x0001D40065A01E77, 0x0001D40066001E75, 0x0001D80060601E7D, 0x0001D80064601E7F,
    0x0001DC0060001E81, 0x0001DC0060201E83, 0x0001DC0060400175, 0x0001DC0060E01E87,
    0x0001DC0061001E85, 0x0001DC0061401E98, 0x0001DC0064601E89, 0x0001E00060E01E8B,
    0x0001E00061001E8D, 0x0001E40060001EF3, 0x0001E400602000FD, 0x0001E40060400177,
    0x0001E40060601EF9, 0x0001E40060800233, 0x0001E40060E01E8F, 0x0001E400610000FF,
    0x0001E40061201EF7, 0x0001E40061401E99, 0x0001E40064601EF5, 0x0001E8006020017A,
    0x0001E80060401E91, 0x0001E80060E0017C, 0x0001E8006180017E, 0x0001E80064601E93,
    0x0001E80066201E95, 0x0002A00060001FED, 0x0002A00060200385, 0x0002A00068401FC1,
    0x0003080060001EA6, 0x0003080060201EA4, 0x0003080060601EAA, 0x0003080061201EA8,
    0x00031000608001DE, 0x00031400602001FA, 0x00031800602001FC, 0x00031800608001E2,
    0x00031C0060201E08, 0x0003280060001EC0, 0x0003280060201EBE, 0x0003280060601EC4,
    0x0003280061201EC2, 0x00033C0060201E2E, 0x0003500060001ED2, 0x0003500060201ED0,
    0x0003500060601ED6, 0x0003500061201ED4, 0x0003540060201E4C, 0x000354006080022C,
    0x0003540061001E4E, 0x000358006080022A, 0x00036000602001FE, 0x00037000600001DB,
    0x00037000602001D7, 0x00037000608001D5, 0x00037000618001D9, 0x0003880060001EA7,
    0x0003880060201EA5, 0x0003880060601EAB, 0x0003880061201EA9, 0x00039000608001DF,
    0x00039400602001FB, 0x00039800602001FD, 0x00039800608001E3, 0x00039C0060201E09,
    0x0003A80060001EC1, 0x0003A80060201EBF, 0x0003A80060601EC5, 0x0003A80061201EC3,
    0x0003BC0060201E2F, 0x0003D00060001ED3, 0x0003D00060201ED1, 0x0003D00060601ED7,
    0x0003D00061201ED5, 0x0003D40060201E4D, 0x0003D4006080022D, 0x0003D40061001E4F,
    0x0003D8006080022B, 0x0003E000602001FF, 0x0003F000600001DC, 0x0003F000602001D8,
    0x0003F000608001D6, 0x0003F000618001DA, 0x0004080060001EB0, 0x0004080060201EAE,
    0x0004080060601EB4, 0x0004080061201EB2, 0x00040C0060001EB1, 0x00040C0060201EAF,
    0x00040C0060601EB5, 0x00040C0061201EB3, 0x0004480060001E14, 0x0004480060201E16,
    0x00044C0060001E15, 0x00044C0060201E17, 0x0005300060001E50, 0x0005300060201E52,
    0x0005340060001E51, 0x0005340060201E53, 0x0005680060E01E64, 0x00056C0060E01E65,
    0x0005800060E01E66, 0x0005840060E01E67, 0x0005A00060201E78, 0x0005A40060201E79,
    0x0005A80061001E7A, 0x0005AC0061001E7B, 0x0005FC0060E01E9B, 0x0006800060001EDC,
    0x0006800060201EDA, 0x0006800060601EE0, 0x0006800061201EDE, 0x0006800064601EE2,
    0x0006840060001EDD, 0x0006840060201EDB, 0x0006840060601EE1, 0x0006840061201EDF,
    0x0006840064601EE3, 0x0006BC0060001EEA, 0x0006BC0060201EE8, 0x0006BC0060601EEE,
    0x0006BC0061201EEC, 0x0006BC0064601EF0, 0x0006C00060001EEB, 0x0006C00060201EE9,
    0x0006C00060601EEF, 0x0006C00061201EED, 0x0006C00064601EF1, 0x0006DC00618001EE,
    0x0007A800608001EC, 0x0007AC00608001ED, 0x00089800608001E0, 0x00089C00608001E1,
    0x0008A00060C01E1C, 0x0008A40060C01E1D, 0x0008B80060800230, 0x0008BC0060800231,
    0x000A4800618001EF, 0x000E440060001FBA, 0x000E440060200386, 0x000E440060801FB9,
    0x000E440060C01FB8, 0x000E440062601F08, 0x000E440062801F09, 0x000E440068A01FBC,
    0x000E540060001FC8, 0x000E540060200388, 0x000E540062601F18, 0x000E540062801F19,
    0x000E5C0060001FCA, 0x000E5C0060200389, 0x000E5C0062601F28, 0x000E5C0062801F29,
    0x000E5C0068A01FCC, 0x000E640060001FDA, 0x000E64006020038A, 0x000E640060801FD9,
    0x000E640060C01FD8, 0x000E6400610003AA, 0x000E640062601F38, 0x000E640062801F39,
    0x000E7C0060001FF8, 0x000E7C006020038C, 0x000E7C0062601F48, 0x000E7C0062801F49,
    0x000E840062801FEC, 0x000E940060001FEA, 0x000E94006020038E, 0x000E940060801FE9,
    0x000E940060C01FE8, 0x000E9400610003AB, 0x000E940062801F59, 0x000EA40060001FFA,
    0x000EA4006020038F, 0x000EA40062601F68, 0x000EA40062801F69, 0x000EA40068A01FFC,
    0x000EB00068A01FB4, 0x000EB80068A01FC4, 0x000EC40060001F70, 0x000EC400602003AC,
    0x000EC40060801FB1, 0x000EC40060C01FB0, 0x000EC40062601F00, 0x000EC40062801F01,
    0x000EC40068401FB6, 0x000EC40068A01FB3, 0x000ED40060001F72, 0x000ED400602003AD,
    0x000ED40062601F10, 0x000ED40062801F11, 0x000EDC0060001F74, 0x000EDC00602003AE,
    0x000EDC0062601F20, 0x000EDC0062801F21, 0x000EDC0068401FC6, 0x000EDC0068A01FC3,
    0x000EE40060001F76, 0x000EE400602003AF, 0x000EE40060801FD1, 0x000EE40060C01FD0,
    0x000EE400610003CA, 0x000EE40062601F30, 0x000EE40062801F31, 0x000EE40068401FD6,
    0x000EFC0060001F78, 0x000EFC00602003CC, 0x000EFC0062601F40, 0x000EFC0062801F41,
    0x000F040062601FE4, 0x000F040062801FE5, 0x000F140060001F7A, 0x000F1400602003CD,
    0x000F140060801FE1, 0x000F140060C01FE0, 0x000F1400610003CB, 0x000F140062601F50,
    0x000F140062801F51, 0x000F140068401FE6, 0x000F240060001F7C, 0x000F2400602003CE,
    0x000F240062601F60, 0x000F240062801F61, 0x000F240068401FF6, 0x000F240068A01FF3,
    0x000F280060001FD2, 0x000F280060200390, 0x000F280068401FD7, 0x000F2C0060001FE2,
    0x000F2C00602003B0, 0x000F2C0068401FE7, 0x000F380068A01FF4, 0x000F4800602003D3,
    0x000F4800610003D4, 0x0010180061000407, 0x0010400060C004D0, 0x00104000610004D2,
    0x00104C0060200403, 0x0010540060000400, 0x0010540060C004D6, 0x0010540061000401,
    0x0010580060C004C1, 0x00105800610004DC, 0x00105C00610004DE, 0x001060006000040D,
    0x00106000608004E2, 0x0010600060C00419, 0x00106000610004E4, 0x001068006020040C,
    0x00107800610004E6, 0x00108C00608004EE, 0x00108C0060C0040E, 0x00108C00610004F0,
    0x00108C00616004F2, 0x00109C00610004F4, 0x0010AC00610004F8, 0x0010B400610004EC,
    0x0010C00060C004D1, 0x0010C000610004D3, 0x0010CC0060200453, 0x0010D40060000450,
    0x0010D40060C004D7, 0x0010D40061000451, 0x0010D80060C004C2, 0x0010D800610004DD,
    0x0010DC00610004DF, 0x0010E0006000045D, 0x0010E000608004E3, 0x0010E00060C00439,
    0x0010E000610004E5, 0x0010E8006020045C, 0x0010F800610004E7, 0x00110C00608004EF,
    0x00110C0060C0045E, 0x00110C00610004F1, 0x00110C00616004F3, 0x00111C00610004F5,
    0x00112C00610004F9, 0x00113400610004ED, 0x0011580061000457, 0x0011D00061E00476,
    0x0011D40061E00477, 0x00136000610004DA, 0x00136400610004DB, 0x0013A000610004EA,
    0x0013A400610004EB, 0x00189C00CA600622, 0x00189C00CA800623, 0x00189C00CAA00625,
    0x00192000CA800624, 0x00192800CA800626, 0x001B0400CA8006C2, 0x001B4800CA8006D3,
    0x001B5400CA8006C0, 0x0024A00127800929, 0x0024C00127800931, 0x0024CC0127800934,
    0x00271C0137C009CB, 0x00271C013AE009CC, 0x002D1C0167C00B4B, 0x002D1C016AC00B48,
    0x002D1C016AE00B4C, 0x002E48017AE00B94, 0x002F180177C00BCA, 0x002F18017AE00BCC,
    0x002F1C0177C00BCB, 0x003118018AC00C48, 0x0032FC019AA00CC0, 0x0033180198400CCA,
    0x003318019AA00CC7, 0x003318019AC00CC8, 0x003328019AA00CCB, 0x00351801A7C00D4A,
    0x00351801AAE00D4C, 0x00351C01A7C00D4B, 0x00376401B9400DDA, 0x00376401B9E00DDC,
    0x00376401BBE00DDE, 0x00377001B9400DDD, 0x0040940205C01026, 0x006C140366A01B06,
    0x006C1C0366A01B08, 0x006C240366A01B0A, 0x006C2C0366A01B0C, 0x006C340366A01B0E,
    0x006C440366A01B12, 0x006CE80366A01B3B, 0x006CF00366A01B3D, 0x006CF80366A01B40,
    0x006CFC0366A01B41, 0x006D080366A01B43, 0x0078D80060801E38, 0x0078DC0060801E39,
    0x0079680060801E5C, 0x00796C0060801E5D, 0x0079880060E01E68, 0x00798C0060E01E69,
    0x007A800060401EAC, 0x007A800060C01EB6, 0x007A840060401EAD, 0x007A840060C01EB7,
    0x007AE00060401EC6, 0x007AE40060401EC7, 0x007B300060401ED8, 0x007B340060401ED9,
    0x007C000060001F02, 0x007C000060201F04, 0x007C000068401F06, 0x007C000068A01F80,
    0x007C040060001F03, 0x007C040060201F05, 0x007C040068401F07, 0x007C040068A01F81,
    0x007C080068A01F82, 0x007C0C0068A01F83, 0x007C100068A01F84, 0x007C140068A01F85,
    0x007C180068A01F86, 0x007C1C0068A01F87, 0x007C200060001F0A, 0x007C200060201F0C,
    0x007C200068401F0E, 0x007C200068A01F88, 0x007C240060001F0B, 0x007C240060201F0D,
    0x007C240068401F0F, 0x007C240068A01F89, 0x007C280068A01F8A, 0x007C2C0068A01F8B,
    0x007C300068A01F8C, 0x007C340068A01F8D, 0x007C380068A01F8E, 0x007C3C0068A01F8F,
    0x007C400060001F12, 0x007C400060201F14, 0x007C440060001F13, 0x007C440060201F15,
    0x007C600060001F1A, 0x007C600060201F1C, 0x007C640060001F1B, 0x007C640060201F1D,
    0x007C800060001F22, 0x007C800060201F24, 0x007C800068401F26, 0x007C800068A01F90,
    0x007C840060001F23, 0x007C840060201F25, 0x007C840068401F27, 0x007C840068A01F91,
    0x007C880068A01F92, 0x007C8C0068A01F93, 0x007C900068A01F94, 0x007C940068A01F95,
    0x007C980068A01F96, 0x007C9C0068A01F97, 0x007CA00060001F2A, 0x007CA00060201F2C,
    0x007CA00068401F2E, 0x007CA00068A01F98, 0x007CA40060001F2B, 0x007CA40060201F2D,
    0x007CA40068401F2F, 0x007CA40068A01F99, 0x007CA80068A01F9A, 0x007CAC0068A01F9B,
    0x007CB00068A01F9C, 0x007CB40068A01F9D, 0x007CB80068A01F9E, 0x007CBC0068A01F9F,
    0x007CC00060001F32, 0x007CC00060201F34, 0x007CC00068401F36, 0x007CC40060001F33,
    0x007CC40060201F35, 0x007CC40068401F37, 0x007CE00060001F3A, 0x007CE00060201F3C,
    0x007CE00068401F3E, 0x007CE40060001F3B, 0x007CE40060201F3D, 0x007CE40068401F3F,
    0x007D000060001F42, 0x007D000060201F44, 0x007D040060001F43, 0x007D040060201F45,
    0x007D200060001F4A, 0x007D200060201F4C, 0x007D240060001F4B, 0x007D240060201F4D,
    0x007D400060001F52, 0x007D400060201F54, 0x007D400068401F56, 0x007D440060001F53,
    0x007D440060201F55, 0x007D440068401F57, 0x007D640060001F5B, 0x007D640060201F5D,
    0x007D640068401F5F, 0x007D800060001F62, 0x007D800060201F64, 0x007D800068401F66,
    0x007D800068A01FA0, 0x007D840060001F63, 0x007D840060201F65, 0x007D840068401F67,
    0x007D840068A01FA1, 0x007D880068A01FA2, 0x007D8C0068A01FA3, 0x007D900068A01FA4,
    0x007D940068A01FA5, 0x007D980068A01FA6, 0x007D9C0068A01FA7, 0x007DA00060001F6A,
    0x007DA00060201F6C, 0x007DA00068401F6E, 0x007DA00068A01FA8, 0x007DA40060001F6B,
    0x007DA40060201F6D, 0x007DA40068401F6F, 0x007DA40068A01FA9, 0x007DA80068A01FAA,
    0x007DAC0068A01FAB, 0x007DB00068A01FAC, 0x007DB40068A01FAD, 0x007DB80068A01FAE,
    0x007DBC0068A01FAF, 0x007DC00068A01FB2, 0x007DD00068A01FC2, 0x007DF00068A01FF2,
    0x007ED80068A01FB7, 0x007EFC0060001FCD, 0x007EFC0060201FCE, 0x007EFC0068401FCF,
    0x007F180068A01FC7, 0x007FD80068A01FF7, 0x007FF80060001FDD, 0x007FF80060201FDE,
    0x007FF80068401FDF, 0x008640006700219A, 0x008648006700219B, 0x00865000670021AE,
    0x00874000670021CD, 0x00874800670021CF, 0x00875000670021CE, 0x00880C0067002204,
    0x0088200067002209, 0x00882C006700220C, 0x00888C0067002224, 0x0088940067002226,
    0x0088F00067002241, 0x00890C0067002244, 0x0089140067002247, 0x0089200067002249,
    0x008934006700226D, 0x0089840067002262, 0x0089900067002270, 0x0089940067002271,
    0x0089C80067002274, 0x0089CC0067002275, 0x0089D80067002278, 0x0089DC0067002279,
    0x0089E80067002280, 0x0089EC0067002281, 0x0089F000670022E0, 0x0089F400670022E1,
    0x008A080067002284, 0x008A0C0067002285, 0x008A180067002288, 0x008A1C0067002289,
    0x008A4400670022E2, 0x008A4800670022E3, 0x008A8800670022AC, 0x008AA000670022AD,
    0x008AA400670022AE, 0x008AAC00670022AF, 0x008AC800670022EA, 0x008ACC00670022EB,
    0x008AD000670022EC, 0x008AD400670022ED, 0x00C1180613203094, 0x00C12C061320304C,
    0x00C134061320304E, 0x00C13C0613203050, 0x00C1440613203052, 0x00C14C0613203054,
    0x00C1540613203056, 0x00C15C0613203058, 0x00C164061320305A, 0x00C16C061320305C,
    0x00C174061320305E, 0x00C17C0613203060, 0x00C1840613203062, 0x00C1900613203065,
    0x00C1980613203067, 0x00C1A00613203069, 0x00C1BC0613203070, 0x00C1BC0613403071,
    0x00C1C80613203073, 0x00C1C80613403074, 0x00C1D40613203076, 0x00C1D40613403077,
    0x00C1E00613203079, 0x00C1E0061340307A, 0x00C1EC061320307C, 0x00C1EC061340307D,
    0x00C274061320309E, 0x00C29806132030F4, 0x00C2AC06132030AC, 0x00C2B406132030AE,
    0x00C2BC06132030B0, 0x00C2C406132030B2, 0x00C2CC06132030B4, 0x00C2D406132030B6,
    0x00C2DC06132030B8, 0x00C2E406132030BA, 0x00C2EC06132030BC, 0x00C2F406132030BE,
    0x00C2FC06132030C0, 0x00C30406132030C2, 0x00C31006132030C5, 0x00C31806132030C7,
    0x00C32006132030C9, 0x00C33C06132030D0, 0x00C33C06134030D1, 0x00C34806132030D3,
    0x00C34806134030D4, 0x00C35406132030D6, 0x00C35406134030D7, 0x00C36006132030D9,
    0x00C36006134030DA, 0x00C36C06132030DC, 0x00C36C06134030DD, 0x00C3BC06132030F7,
    0x00C3C006132030F8, 0x00C3C406132030F9, 0x00C3C806132030FA, 0x00C3F406132030FE,
    0x044264221741109A, 0x04426C221741109C, 0x04429422174110AB, 0x0444C42224E1112E,
    0x0444C82224E1112F, 0x044D1C2267C1134B, 0x044D1C226AE1134C, 0x0452E422960114BC,
    0x0452E422974114BB, 0x0452E42297A114BE, 0x0456E022B5E115BA, 0x0456E422B5E115BB,
};
static const uint64_t pf__unicode_compat_runs[1162] = {
    0x00050002FFFFFF80, 0x00055002FFFFFFB7, 0x00059004FFFFFF80, 0x0005A80200000307,
    0x0005C802FFFFFF78, 0x0005D002FFFFFFB5, 0x000BF802FFFFFEF4, 0x00158002FFFFFDB8,
    0x00158802FFFFFFB5, 0x00159002FFFFFDB8, 0x00159802FFFFFDBF, 0x0015A002FFFFFFC5,
    0x0015A802FFFFFFC6, 0x0015B002FFFFFFCB, 0x0015B802FFFFFDC0, 0x0015C002FFFFFDC1,
    0x00170002FFFFFF83, 0x00170802FFFFFD8B, 0x00171002FFFFFD91, 0x00171802FFFFFD95,
    0x00172002FFFFFFB1, 0x001E8002FFFFFFE2, 0x001E8802FFFFFFE7, 0x001E9002FFFFFFD3,
    0x001EA802FFFFFFF1, 0x001EB002FFFFFFEA, 0x001F8002FFFFFFCA, 0x001F8804FFFFFFD0,
    0x001FA002FFFFFFA4, 0x001FA802FFFFFFC0, 0x001FC802FFFFFFAA, 0x00786002FFFFFFFF,
    0x0087E002FFFFFFE0, 0x00E96002FFFFE315, 0x00E96802FFFFE399, 0x00E97002FFFFE314,
    0x00E98004FFFFE314, 0x00E99002FFFFE45C, 0x00E99810FFFFE314, 0x00E9E002FFFFE313,
    0x00E9E802FFFFE4E5, 0x00E9F002FFFFE312, 0x00E9F802FFFFE313, 0x00EA0004FFFFE314,
    0x00EA1002FFFFE315, 0x00EA1802FFFFE31E, 0x00EA2004FFFFE50C, 0x00EA3002FFFFFFBC,
    0x00EA3802FFFFE31B, 0x00EA4004FFFFE31C, 0x00EA5002FFFFE50F, 0x00EA5804FFFFE510,
    0x00EA6802FFFFE31A, 0x00EA7802FFFFE31C, 0x00EA8002FFFFE31D, 0x00EA8802FFFFE3FA,
    0x00EA9002FFFFE31D, 0x00EA9802FFFFE501, 0x00EAA004FFFFFFC2, 0x00EAB002FFFFE31A,
    0x00EAB804FFFFE31D, 0x00EAC802FFFFFFC4, 0x00EAD002FFFFE515, 0x00EAD802FFFFE31B,
    0x00EAE002FFFFFFC9, 0x00EAE806FFFFE655, 0x00EB0004FFFFE666, 0x00EB1002FFFFE307,
    0x00EB1802FFFFE30F, 0x00EB2004FFFFE311, 0x00EB3004FFFFE64C, 0x00EB4002FFFFE659,
    0x00EB4804FFFFE65D, 0x00EBC002FFFFE6C5, 0x00ECD802FFFFE4B7, 0x00ECE002FFFFE2C7,
    0x00ECE802FFFFE4B8, 0x00ECF002FFFFE352, 0x00ECF802FFFFE4BD, 0x00ED0002FFFFE2C6,
    0x00ED0802FFFFE4BE, 0x00ED1002FFFFE4BF, 0x00ED1802FFFFE4C2, 0x00ED2006FFFFE4C4,
    0x00ED3802FFFFFFD4, 0x00ED4002FFFFE4F5, 0x00ED4802FFFFE4C4, 0x00ED5002FFFFFFDB,
    0x00ED5802FFFFE4F4, 0x00ED6002FFFFE4C5, 0x00ED6802FFFFE4C3, 0x00ED7008FFFFE4C4,
    0x00ED9002FFFFE4C6, 0x00ED9804FFFFE4CF, 0x00EDA802FFFFE3F6, 0x00EDB004FFFFE4D3,
    0x00EDC002FFFFFF64, 0x00EDC804FFFFE4D2, 0x00EDD802FFFFE2BF, 0x00EDE006FFFFE4D4,
    0x00EDF802FFFFE5F9, 0x01000002FFFFE020, 0x01000802FFFFE01F, 0x01001002FFFFE01E,
    0x01001802FFFFE01D, 0x01002002FFFFE01C, 0x01002802FFFFE01B, 0x01003002FFFFE01A,
    0x01003802FFFFE019, 0x01004002FFFFE018, 0x01004802FFFFE017, 0x01005002FFFFE016,
    0x01008802FFFFFFFF, 0x01012002FFFFE00A, 0x01017802FFFFDFF1, 0x0102F802FFFFDFC1,
    0x01038002FFFFDFC0, 0x01038802FFFFDFF8, 0x0103A00CFFFFDFC0, 0x0103D002FFFFDFB1,
    0x0103D80200000197, 0x0103E002FFFFDFC1, 0x0103E804FFFFDFAB, 0x0103F802FFFFDFEF,
    0x01040014FFFFDFB0, 0x01045002FFFFDFA1, 0x0104580200000187, 0x01046002FFFFDFB1,
    0x01046804FFFFDF9B, 0x01048002FFFFDFD1, 0x01048802FFFFDFD4, 0x01049002FFFFDFDD,
    0x01049802FFFFDFE5, 0x0104A002FFFFE1C5, 0x0104A802FFFFDFD3, 0x0104B008FFFFDFD5,
    0x0104D002FFFFDFD6, 0x0104D804FFFFDFD8, 0x01081002FFFFDF41, 0x01083802FFFFE089,
    0x01085002FFFFDF5D, 0x01085802FFFFDF3D, 0x01086002FFFFDF3C, 0x01086802FFFFDF3B,
    0x01087002FFFFDF5A, 0x01087802FFFFE018, 0x01088002FFFFDF39, 0x01088802FFFFDF38,
    0x01089002FFFFDF3A, 0x01089802FFFFDF59, 0x0108A802FFFFDF39, 0x0108C806FFFFDF37,
    0x0108E002FFFFDF36, 0x0108E802FFFFDF35, 0x01092002FFFFDF36, 0x01094002FFFFDF32,
    0x01096004FFFFDF16, 0x01097802FFFFDF36, 0x01098004FFFFDF15, 0x01099802FFFFDF1A,
    0x0109A002FFFFDF3B, 0x0109A808FFFFE49B, 0x0109C802FFFFDF30, 0x0109E002FFFFE284,
    0x0109E802FFFFE276, 0x0109F002FFFFE255, 0x0109F802FFFFE261, 0x010A0002000000D1,
    0x010A2802FFFFDEFF, 0x010A3004FFFFDF1E, 0x010A4004FFFFDF21, 0x010B0002FFFFDEE9,
    0x010B2002FFFFDEF2, 0x010B4802FFFFDEEF, 0x010B6002FFFFDEE0, 0x010B6804FFFFDED6,
    0x010B7802FFFFDEDE, 0x010B8002FFFFDEF9, 0x010BA002FFFFDF02, 0x010BC802FFFFDEFF,
    0x010BE002FFFFDEF0, 0x010BE804FFFFDEE6, 0x010BF802FFFFDEEE, 0x01230012FFFFDBD1,
    0x0125B034FFFFDB8B, 0x01268034FFFFDB91, 0x01275002FFFFDB46, 0x0163E002FFFFD3EE,
    0x0163E802FFFFD3D9, 0x016B7802FFFFFFF2, 0x0174F80200003D2E, 0x01779802000070AC,
    0x0178000200001F00, 0x0178080200001F27, 0x0178100200001F34, 0x0178180200001F3C,
    0x0178200200001F55, 0x0178280200001F80, 0x0178300200001F86, 0x0178380200001F99,
    0x0178400200001FB2, 0x0178480200002236, 0x017850020000225B, 0x0178580200002260,
    0x0178600200002276, 0x0178680200002289, 0x017870020000229D, 0x01787802000022D1,
    0x01788002000022E5, 0x01788802000022EF, 0x0178900200002389, 0x01789802000023E6,
    0x0178A00200002401, 0x0178A80200002405, 0x0178B00200002422, 0x0178B8020000242A,
    0x0178C00200002444, 0x0178C80200002450, 0x0178D00200002468, 0x0178D8020000249B,
    0x0178E002000024AC, 0x0178E802000024C6, 0x0178F002000027B9, 0x0178F80200002800,
    0x01790002000029CB, 0x01790802000029E1, 0x01791002000029E8, 0x01791802000029F2,
    0x0179200200002A03, 0x0179280200002A4E, 0x0179300200002C2A, 0x0179380200002C59,
    0x0179400200002CD0, 0x0179480200002CE6, 0x0179500200002CF8, 0x0179580200002D0D,
    0x0179600200002D42, 0x0179680200002D44, 0x0179700200002EAD, 0x0179780200002EB6,
    0x0179800200002EC1, 0x0179880200002ECD, 0x0179900200002F40, 0x0179980200002F47,
    0x0179A00200002F4B, 0x0179A80200002FBF, 0x0179B00200002FC8, 0x0179B80200002FD4,
    0x0179C00200002FDB, 0x0179C80200003017, 0x0179D00200003027, 0x0179D80200003038,
    0x0179E00200003087, 0x0179E802000032CB, 0x0179F002000032F8, 0x0179F8020000330C,
    0x017A0002000035EF, 0x017A0802000035F3, 0x017A100200003645, 0x017A180200003654,
    0x017A200200003660, 0x017A280200003674, 0x017A30020000369A, 0x017A38020000369E,
    0x017A4002000037A8, 0x017A4802000037BF, 0x017A5002000037DE, 0x017A580200003BD5,
    0x017A600200003C16, 0x017A680200003C2C, 0x017A700200003C65, 0x017A780200003C7C,
    0x017A800200003C84, 0x017A880200003C8A, 0x017A900200003CBD, 0x017A980200003CC1,
    0x017AA00200003CE0, 0x017AA80200004116, 0x017AB002000042D4, 0x017AB802000042DF,
    0x017AC002000042E3, 0x017AC802000042E6, 0x017AD002000042ED, 0x017AD802000042FE,
    0x017AE002000042FF, 0x017AE8020000434F, 0x017AF00200004426, 0x017AF8020000442A,
    0x017B00020000457C, 0x017B080200004585, 0x017B1002000045B6, 0x017B1802000045BC,
    0x017B2002000045C4, 0x017B2802000045CB, 0x017B300200004625, 0x017B38020000462B,
    0x017B40020000470E, 0x017B480200004714, 0x017B500200004744, 0x017B580200004754,
    0x017B600200004782, 0x017B68020000486E, 0x017B700200004874, 0x017B780200004884,
    0x017B8002000049CA, 0x017B880200004A47, 0x017B900200004A4C, 0x017B980200004B01,
    0x017BA00200004B57, 0x017BA80200004B84, 0x017BB00200004CFD, 0x017BB80200004D81,
    0x017BC00200004FBE, 0x017BC80200004FD8, 0x017BD00200005010, 0x017BD80200005042,
    0x017BE00200005085, 0x017BE8020000508F, 0x017BF00200005094, 0x017BF802000050B4,
    0x017C0002000050FF, 0x017C080200005108, 0x017C100200005261, 0x017C180200005267,
    0x017C20020000526F, 0x017C280200005277, 0x017C300200005286, 0x017C380200005294,
    0x017C400200005297, 0x017C4802000052E5, 0x017C5002000052E8, 0x017C5802000052ED,
    0x017C6002000056C1, 0x017C6802000056DE, 0x017C7002000058B2, 0x017C7802000058BD,
    0x017C8002000058D3, 0x017C8802000059ED, 0x017C9002000059F9, 0x017C980200005A3F,
    0x017CA00200005A6C, 0x017CA80200005CA2, 0x017CB00200005CB0, 0x017CB80200005CBE,
    0x017CC00200005CE0, 0x017CC80200005D04, 0x017CD00200005DCA, 0x017CD80200005DD5,
    0x017CE00200005E17, 0x017CE80200005F0E, 0x017CF00200005F2C, 0x017CF80200005FFC,
    0x017D000200006010, 0x017D080200006014, 0x017D1002000060EF, 0x017D1802000061A6,
    0x017D200200006222, 0x017D280200006227, 0x017D30020000622B, 0x017D3802000065D0,
    0x017D4002000065D8, 0x017D480200006673, 0x017D50020000670C, 0x017D58020000670E,
    0x017D60020000673C, 0x017D6802000067A4, 0x017D7002000067B0, 0x017D7802000067B3,
    0x017D8002000067B9, 0x017D88020000681A, 0x017D90020000683B, 0x017D980200006840,
    0x017DA0020000684D, 0x017DA802000068F3, 0x017DB00200006925, 0x017DB80200006928,
    0x017DC002000069DE, 0x017DC802000069E0, 0x017DD002000069F2, 0x017DD80200006AED,
    0x017DE00200006B1C, 0x017DE80200006B22, 0x017DF00200006B67, 0x017DF80200006B70,
    0x017E000200006B72, 0x017E080200006B7B, 0x017E100200006B98, 0x017E180200006D22,
    0x017E200200006EB1, 0x017E280200006EBA, 0x017E300200006EDF, 0x017E380200006EF4,
    0x017E400200006EFB, 0x017E480200006F04, 0x017E500200006F07, 0x017E580200006F2E,
    0x017E600200006F31, 0x017E680200006F41, 0x017E700200006F45, 0x017E780200006F51,
    0x017E800200006F6B, 0x017E880200006F79, 0x017E900200006F80, 0x017E980200006FBA,
    0x017EA00200006FC8, 0x017EA80200006FCB, 0x01800002FFFFD020, 0x0181B002FFFFFFDC,
    0x0181C00200002309, 0x0181C8040000230B, 0x01898804FFFFDFCF, 0x01899802FFFFE077,
    0x0189A002FFFFDFCE, 0x0189A804FFFFE077, 0x0189B806FFFFDFCC, 0x0189D00CFFFFE076,
    0x018A0002FFFFDFDA, 0x018A0806FFFFDFC5, 0x018A2002FFFFDFDD, 0x018A2814FFFFDFC4,
    0x018A782AFFFFE012, 0x018B2002FFFFDFFC, 0x018B2804FFFFDFAF, 0x018B3804FFFFE060,
    0x018B4802FFFFE063, 0x018B5002FFFFE064, 0x018B5802FFFFE068, 0x018B6002FFFFE06B,
    0x018B6802FFFFE06C, 0x018B7002FFFFDFAE, 0x018B7802FFFFE06E, 0x018B8002FFFFE06F,
    0x018B8804FFFFDFAC, 0x018B9802FFFFDFAD, 0x018BA004FFFFDFAE, 0x018BB002FFFFDFB1,
    0x018BB802FFFFDFB2, 0x018BC00AFFFFDFB3, 0x018BE802FFFFDFB5, 0x018BF002FFFFDFB8,
    0x018BF802FFFFDFC1, 0x018C0002FFFFDFC7, 0x018C0802FFFFDFCB, 0x018C1004FFFFE06F,
    0x018C2006FFFFDFD3, 0x018C3804FFFFDFFD, 0x018C4802FFFFDFFF, 0x018C5004FFFFE007,
    0x018C6002FFFFE008, 0x018C6802FFFFE011, 0x018C7002FFFFE013, 0x018C900200001C6E,
    0x018C980200001CF9, 0x018CA00200001C75, 0x018CA80200002546, 0x018CB00200001C74,
    0x018CB80200001C96, 0x018CC00200001C73, 0x018CC80200004399, 0x018CD00200001CBF,
    0x018CD80200001C7E, 0x018CE00200001C65, 0x018CE8020000278C, 0x018CF00200002592,
    0x018CF80200001D1B, 0x019220020000230B, 0x0192280200002C37, 0x0192300200003341,
    0x0192380200004948, 0x01930002FFFFDEA0, 0x01930804FFFFDEA1, 0x01931806FFFFDEA2,
    0x01933002FFFFDEA3, 0x01933804FFFFDEA4, 0x0193480AFFFFDEA5, 0x0194000200001B80,
    0x0194080200001C0B, 0x0194100200001B87, 0x0194180200002458, 0x0194200200001C10,
    0x0194280200001EE8, 0x0194300200001B7D, 0x0194380200001EE4, 0x0194400200001BD5,
    0x01944802000020B8, 0x019450020000347E, 0x0194580200003DE0, 0x01946002000039A8,
    0x019468020000349B, 0x0194700200005F43, 0x0194780200002490, 0x0194800200003355,
    0x0194880200003599, 0x0194900200003477, 0x01949802000046AB, 0x0194A00200002179,
    0x0194A80200003FE4, 0x0194B00200005A0B, 0x0194B802000046C6, 0x0194C0020000201C,
    0x0194C8020000473F, 0x0194D0020000429D, 0x0194D802000026D8, 0x0194E00200005DCD,
    0x0194E80200001E8D, 0x0194F002000020D2, 0x0194F80200003A49, 0x0195000200006565,
    0x0195080200001C70, 0x0195100200001EF7, 0x01951802000038C0, 0x0195200200001B66,
    0x0195280200001B88, 0x0195300200001B65, 0x0195380200002B3F, 0x019540020000214B,
    0x0195480200002092, 0x01955002000028ED, 0x01955802000028BB, 0x0195600200004437,
    0x0195680200001C54, 0x0195700200005A19, 0x01957802000020A5, 0x019580020000266C,
    0x01968002FFFFFDD2, 0x01968802FFFFFDD3, 0x01969002FFFFFDD4, 0x01969802FFFFFDD5,
    0x0196A004FFFFFDD6, 0x0196B002FFFFFDD7, 0x0196B802FFFFFDD8, 0x0196C002FFFFFDD9,
    0x0196C802FFFFFDDA, 0x0196D002FFFFFDDB, 0x0196D802FFFFFDDC, 0x0196E002FFFFFDDD,
    0x0196E802FFFFFDDE, 0x0196F002FFFFFDDF, 0x0196F802FFFFFDE0, 0x01970002FFFFFDE1,
    0x01970802FFFFFDE3, 0x01971002FFFFFDE4, 0x01971802FFFFFDE5, 0x0197200CFFFFFDE6,
    0x01975002FFFFFDE8, 0x01975802FFFFFDEA, 0x01976002FFFFFDEC, 0x01976802FFFFFDEE,
    0x0197700AFFFFFDF0, 0x01979802FFFFFDF1, 0x0197A002FFFFFDF2, 0x0197A80CFFFFFDF3,
    0x0197D808FFFFFDF4, 0x0534E002FFFF5DAE, 0x0534E802FFFF5DAF, 0x053B8002FFFFFFFF,
    0x053FC002FFFF592E, 0x053FC802FFFF595A, 0x055AE002FFFFFBCB, 0x055AE802FFFFFFDA,
    0x055AF002FFFF570D, 0x055AF802FFFFFFF3, 0x07D90002FFFF0AC2, 0x07D90802FFFF0AAF,
    0x07D91004FFFF0AB1, 0x07D92006FFFF0AB7, 0x07D93802FFFF0AC1, 0x07D94002FFFF0AC2,
    0x07D94802FFFF0502, 0x07DA8002FFFF0B21, 0x07DA8802FFFF0B20, 0x07DA9002FFFF0B29,
    0x07DA9802FFFF0B28, 0x07DAA002FFFF0B27, 0x07DAA802FFFF0B26, 0x07DAB002FFFF0B28,
    0x07DAB802FFFF0B27, 0x07DAC002FFFF0B26, 0x07DAC802FFFF0B25, 0x07DAD002FFFF0B26,
    0x07DAD802FFFF0B25, 0x07DAE002FFFF0B24, 0x07DAE802FFFF0B23, 0x07DAF002FFFF0B1C,
    0x07DAF802FFFF0B1B, 0x07DB0002FFFF0B1A, 0x07DB0802FFFF0B19, 0x07DB1002FFFF0B1D,
    0x07DB1802FFFF0B1C, 0x07DB2002FFFF0B1B, 0x07DB2802FFFF0B1A, 0x07DB3002FFFF0B13,
    0x07DB3802FFFF0B12, 0x07DB4002FFFF0B11, 0x07DB4802FFFF0B10, 0x07DB5002FFFF0B3A,
    0x07DB5802FFFF0B39, 0x07DB6002FFFF0B38, 0x07DB6802FFFF0B37, 0x07DB7002FFFF0B38,
    0x07DB7802FFFF0B37, 0x07DB8002FFFF0B36, 0x07DB8802FFFF0B35, 0x07DB9002FFFF0B12,
    0x07DB9802FFFF0B11, 0x07DBA002FFFF0B10, 0x07DBA802FFFF0B0F, 0x07DBB002FFFF0B0D,
    0x07DBB802FFFF0B0C, 0x07DBC002FFFF0B0B, 0x07DBC802FFFF0B0A, 0x07DBD002FFFF0B0C,
    0x07DBD802FFFF0B0B, 0x07DBE002FFFF0B0A, 0x07DBE804FFFF0B09, 0x07DBF802FFFF0B08,
    0x07DC0002FFFF0B07, 0x07DC0802FFFF0B06, 0x07DC1002FFFF0B0B, 0x07DC1802FFFF0B0A,
    0x07DC2002FFFF0B08, 0x07DC2802FFFF0B07, 0x07DC3002FFFF0B08, 0x07DC3802FFFF0B07,
    0x07DC4002FFFF0B00, 0x07DC4802FFFF0AFF, 0x07DC5002FFFF0B0E, 0x07DC5802FFFF0B0D,
    0x07DC6002FFFF0B05, 0x07DC6802FFFF0B04, 0x07DC7002FFFF0B1B, 0x07DC7802FFFF0B1A,
    0x07DC8002FFFF0B19, 0x07DC8802FFFF0B18, 0x07DC9002FFFF0B1D, 0x07DC9802FFFF0B1C,
    0x07DCA002FFFF0B1B, 0x07DCA802FFFF0B1A, 0x07DCB002FFFF0B1D, 0x07DCB802FFFF0B1C,
    0x07DCC002FFFF0B1B, 0x07DCC802FFFF0B1A, 0x07DCD002FFFF0B17, 0x07DCD802FFFF0B16,
    0x07DCE002FFFF0B15, 0x07DCE802FFFF0B14, 0x07DCF002FFFF0B1C, 0x07DCF804FFFF0B1B,
    0x07DD0802FFFF0B1A, 0x07DD1002FFFF0B19, 0x07DD1802FFFF0B18, 0x07DD3002FFFF0B1B,
    0x07DD3802FFFF0B1A, 0x07DD4002FFFF0B19, 0x07DD4802FFFF0B18, 0x07DD5002FFFF0B14,
    0x07DD5802FFFF0B13, 0x07DD6002FFFF0B12, 0x07DD6802FFFF0B11, 0x07DD7002FFFF0B24,
    0x07DD7802FFFF0B23, 0x07DE9802FFFF0ADA, 0x07DEA002FFFF0AD9, 0x07DEA802FFFF0AD8,
    0x07DEB002FFFF0AD7, 0x07DEB802FFFF0AF0, 0x07DEC002FFFF0AEF, 0x07DEC802FFFF0AED,
    0x07DED002FFFF0AEC, 0x07DED802FFFF0AED, 0x07DEE002FFFF0AEC, 0x07DEF002FFFF0AED,
    0x07DEF802FFFF0AEC, 0x07DF0002FFFF0AE5, 0x07DF0802FFFF0AE4, 0x07DF1002FFFF0AE7,
    0x07DF1802FFFF0AE6, 0x07DF2002FFFF0AEC, 0x07DF2802FFFF0AEB, 0x07DF3002FFFF0AEA,
    0x07DF3802FFFF0AE9, 0x07DF4002FFFF0A61, 0x07DF4802FFFF0A60, 0x07DFE002FFFF0AD0,
    0x07DFE802FFFF0ACF, 0x07DFF002FFFF0ACE, 0x07DFF802FFFF0ACD, 0x07F08002FFFF021C,
    0x07F08804FFFF31F0, 0x07F09804FFFF0227, 0x07F0A802FFFF020C, 0x07F0B002FFFF0229,
    0x07F0B804FFFF31FF, 0x07F18802FFFF21E3, 0x07F19002FFFF21E1, 0x07F19802FFFF022C,
    0x07F1A002FFFF022B, 0x07F1A804FFFF01F3, 0x07F1B802FFFF0244, 0x07F1C002FFFF0245,
    0x07F1C804FFFF31DB, 0x07F1D804FFFF31D5, 0x07F1E804FFFF31CD, 0x07F1F804FFFF31C9,
    0x07F20808FFFF31CB, 0x07F23802FFFF0214, 0x07F24002FFFF0215, 0x07F26802FFFF0212,
    0x07F27002FFFF0211, 0x07F27802FFFF0210, 0x07F28002FFFF01DC, 0x07F28802FFFF31B0,
    0x07F29002FFFF01DC, 0x07F2A002FFFF01E7, 0x07F2A802FFFF01E5, 0x07F2B002FFFF01E9,
    0x07F2B802FFFF01CA, 0x07F2C002FFFF21BC, 0x07F2C804FFFF01CF, 0x07F2D802FFFF0220,
    0x07F2E002FFFF0221, 0x07F2E804FFFF31B7, 0x07F2F802FFFF01C4, 0x07F30002FFFF01C6,
    0x07F30804FFFF01C9, 0x07F31802FFFF01CA, 0x07F32002FFFF01D8, 0x07F32802FFFF01D9,
    0x07F33002FFFF01D7, 0x07F34002FFFF01F4, 0x07F34804FFFF01BB, 0x07F35802FFFF01D5,
    0x07F40002FFFF07A1, 0x07F46802FFFF079A, 0x07F47004FFFF0799, 0x07F48002FFFF0798,
    0x07F48802FFFF0797, 0x07F49004FFFF0796, 0x07F4A004FFFF0795, 0x07F4B002FFFF0794,
    0x07F4B802FFFF0793, 0x07F4C004FFFF0792, 0x07F4D002FFFF0791, 0x07F4D802FFFF0790,
    0x07F4E004FFFF078F, 0x07F4F002FFFF078E, 0x07F4F802FFFF078D, 0x07F50004FFFF078C,
    0x07F51002FFFF078B, 0x07F51802FFFF078A, 0x07F52004FFFF0789, 0x07F53002FFFF0788,
    0x07F53802FFFF0787, 0x07F54004FFFF0786, 0x07F55004FFFF0785, 0x07F56004FFFF0784,
    0x07F57004FFFF0783, 0x07F58004FFFF0782, 0x07F59002FFFF0781, 0x07F59802FFFF0780,
    0x07F5A004FFFF077F, 0x07F5B002FFFF077E, 0x07F5B802FFFF077D, 0x07F5C004FFFF077C,
    0x07F5D002FFFF077B, 0x07F5D802FFFF077A, 0x07F5E004FFFF0779, 0x07F5F002FFFF0778,
    0x07F5F802FFFF0777, 0x07F60004FFFF0776, 0x07F61002FFFF0775, 0x07F61802FFFF0774,
    0x07F62004FFFF0773, 0x07F63002FFFF0772, 0x07F63802FFFF0771, 0x07F64004FFFF0770,
    0x07F65002FFFF076F, 0x07F65802FFFF076E, 0x07F66004FFFF076D, 0x07F67002FFFF076C,
    0x07F67802FFFF076B, 0x07F68002FFFF076A, 0x07F68802FFFF0770, 0x07F69002FFFF076F,
    0x07F69802FFFF076E, 0x07F6A004FFFF076D, 0x07F6B002FFFF076C, 0x07F6B802FFFF076B,
    0x07F6C004FFFF076A, 0x07F6D002FFFF0769, 0x07F6D802FFFF0768, 0x07F6E004FFFF0767,
    0x07F6F002FFFF0766, 0x07F6F802FFFF0765, 0x07F70004FFFF0764, 0x07F71002FFFF0763,
    0x07F71802FFFF0762, 0x07F72004FFFF0761, 0x07F73002FFFF0760, 0x07F73802FFFF075F,
    0x07F74004FFFF075E, 0x07F75002FFFF075D, 0x07F75802FFFF075C, 0x07F76004FFFF075B,
    0x07F77004FFFF075A, 0x07F78004FFFF0759, 0x07F79002FFFF0758, 0x07F79802FFFF0757,
    0x07F7A002FFFF0756, 0x07F808BCFFFF0120, 0x07FAF804FFFF2A26, 0x07FB0802FFFF30A1,
    0x07FB1004FFFF30AA, 0x07FB2002FFFF309D, 0x07FB2802FFFF3196, 0x07FB3002FFFF318C,
    0x07FB3802FFFF313A, 0x07FB4002FFFF313B, 0x07FB4802FFFF313C, 0x07FB5002FFFF313D,
    0x07FB5802FFFF313E, 0x07FB6002FFFF3177, 0x07FB6802FFFF3178, 0x07FB7002FFFF3179,
    0x07FB7802FFFF3154, 0x07FB8002FFFF318C, 0x07FB8802FFFF3131, 0x07FB9002FFFF3132,
    0x07FB9802FFFF3133, 0x07FBA002FFFF3134, 0x07FBA804FFFF3135, 0x07FBB802FFFF3136,
    0x07FBC002FFFF3137, 0x07FBC802FFFF3138, 0x07FBD002FFFF3139, 0x07FBD802FFFF313A,
    0x07FBE002FFFF313B, 0x07FBE802FFFF313C, 0x07FBF002FFFF313D, 0x07FBF802FFFF313E,
    0x07FC0002FFFF313F, 0x07FC0802FFFF3140, 0x07FC1002FFFF3142, 0x07FC1802FFFF3143,
    0x07FC2002FFFF3144, 0x07FC280CFFFF3145, 0x07FC5802FFFF3147, 0x07FC6002FFFF3149,
    0x07FC6802FFFF314B, 0x07FC7002FFFF314D, 0x07FC780AFFFF314F, 0x07FCA002FFFF3150,
    0x07FCA802FFFF3151, 0x07FCB00CFFFF3152, 0x07FCE002FFFF3153, 0x07FCE802FFFF3156,
    0x07FCF004FFFF30FB, 0x07FD0002FFFF11C0, 0x07FD0804FFFF115F, 0x07FD1802FFFF1207,
    0x07FD2002FFFF115E, 0x07FD2804FFFF1207, 0x07FD3806FFFF115C, 0x07FD500CFFFF1206,
    0x07FD8002FFFF116A, 0x07FD8806FFFF1155, 0x07FDA002FFFF116D, 0x07FDA814FFFF1154,
    0x07FE100CFFFF119F, 0x07FE500CFFFF119D, 0x07FE900CFFFF119B, 0x07FED006FFFF1199,
    0x07FF0004FFFF00C2, 0x07FF1002FFFF00CA, 0x07FF2002FFFF00C2, 0x07FF2802FFFF00C0,
    0x07FF3002FFFF20C3, 0x07FF4002FFFF251A, 0x07FF4808FFFF21A7, 0x07FF6802FFFF25B3,
    0x07FF7002FFFF25DD, 0x0EA00034FFFE2C41, 0x0EA0D034FFFE2C47, 0x0EA1A034FFFE2C0D,
    0x0EA2700EFFFE2C13, 0x0EA2B024FFFE2C13, 0x0EA34034FFFE2BD9, 0x0EA41034FFFE2BDF,
    0x0EA4E002FFFE2BA5, 0x0EA4F004FFFE2BA5, 0x0EA51002FFFE2BA5, 0x0EA52804FFFE2BA5,
    0x0EA54808FFFE2BA5, 0x0EA57010FFFE2BA5, 0x0EA5B008FFFE2BAB, 0x0EA5D802FFFE2BAB,
    0x0EA5E80EFFFE2BAB, 0x0EA62816FFFE2BAB, 0x0EA68034FFFE2B71, 0x0EA75034FFFE2B77,
    0x0EA82004FFFE2B3D, 0x0EA83808FFFE2B3D, 0x0EA86810FFFE2B3D, 0x0EA8B00EFFFE2B3D,
    0x0EA8F034FFFE2B43, 0x0EA9C004FFFE2B09, 0x0EA9D808FFFE2B09, 0x0EAA000AFFFE2B09,
    0x0EAA3002FFFE2B09, 0x0EAA500EFFFE2B09, 0x0EAA9034FFFE2B0F, 0x0EAB6034FFFE2AD5,
    0x0EAC3034FFFE2ADB, 0x0EAD0034FFFE2AA1, 0x0EADD034FFFE2AA7, 0x0EAEA034FFFE2A6D,
    0x0EAF7034FFFE2A73, 0x0EB04034FFFE2A39, 0x0EB11034FFFE2A3F, 0x0EB1E034FFFE2A05,
    0x0EB2B034FFFE2A0B, 0x0EB38034FFFE29D1, 0x0EB45034FFFE29D7, 0x0EB52002FFFE2A8D,
    0x0EB52802FFFE2B92, 0x0EB54022FFFE2CE9, 0x0EB5C802FFFE2CDF, 0x0EB5D00EFFFE2CE9,
    0x0EB60802FFFE4B46, 0x0EB61032FFFE2CEF, 0x0EB6D802FFFE4B27, 0x0EB6E002FFFE2CD9,
    0x0EB6E802FFFE2CDB, 0x0EB6F002FFFE2CDC, 0x0EB6F802FFFE2CE7, 0x0EB70002FFFE2CE1,
    0x0EB70802FFFE2CDF, 0x0EB71022FFFE2CAF, 0x0EB79802FFFE2CA5, 0x0EB7A00EFFFE2CAF,
    0x0EB7D802FFFE4B0C, 0x0EB7E032FFFE2CB5, 0x0EB8A802FFFE4AED, 0x0EB8B002FFFE2C9F,
    0x0EB8B802FFFE2CA1, 0x0EB8C002FFFE2CA2, 0x0EB8C802FFFE2CAD, 0x0EB8D002FFFE2CA7,
    0x0EB8D802FFFE2CA5, 0x0EB8E022FFFE2C75, 0x0EB96802FFFE2C6B, 0x0EB9700EFFFE2C75,
    0x0EB9A802FFFE4AD2, 0x0EB9B032FFFE2C7B, 0x0EBA7802FFFE4AB3, 0x0EBA8002FFFE2C65,
    0x0EBA8802FFFE2C67, 0x0EBA9002FFFE2C68, 0x0EBA9802FFFE2C73, 0x0EBAA002FFFE2C6D,
    0x0EBAA802FFFE2C6B, 0x0EBAB022FFFE2C3B, 0x0EBB3802FFFE2C31, 0x0EBB400EFFFE2C3B,
    0x0EBB7802FFFE4A98, 0x0EBB8032FFFE2C41, 0x0EBC4802FFFE4A79, 0x0EBC5002FFFE2C2B,
    0x0EBC5802FFFE2C2D, 0x0EBC6002FFFE2C2E, 0x0EBC6802FFFE2C39, 0x0EBC7002FFFE2C33,
    0x0EBC7802FFFE2C31, 0x0EBC8022FFFE2C01, 0x0EBD0802FFFE2BF7, 0x0EBD100EFFFE2C01,
    0x0EBD4802FFFE4A5E, 0x0EBD5032FFFE2C07, 0x0EBE1802FFFE4A3F, 0x0EBE2002FFFE2BF1,
    0x0EBE2802FFFE2BF3, 0x0EBE3002FFFE2BF4, 0x0EBE3802FFFE2BFF, 0x0EBE4002FFFE2BF9,
    0x0EBE4802FFFE2BF7, 0x0EBE5004FFFE2C12, 0x0EBE7014FFFE2862, 0x0EBEC014FFFE2858,
    0x0EBF1014FFFE284E, 0x0EBF6014FFFE2844, 0x0EBFB014FFFE283A, 0x0F700004FFFE1827,
    0x0F701002FFFE182A, 0x0F701802FFFE182C, 0x0F702802FFFE1843, 0x0F703002FFFE182C,
    0x0F703802FFFE1826, 0x0F704002FFFE182F, 0x0F704802FFFE1841, 0x0F705008FFFE1839,
    0x0F707002FFFE1825, 0x0F707802FFFE182A, 0x0F708002FFFE1831, 0x0F708802FFFE1824,
    0x0F709002FFFE1830, 0x0F709802FFFE181E, 0x0F70A002FFFE1820, 0x0F70A804FFFE1815,
    0x0F70B802FFFE1817, 0x0F70C002FFFE1818, 0x0F70C802FFFE181D, 0x0F70D002FFFE181E,
    0x0F70D802FFFE181F, 0x0F70E002FFFE1852, 0x0F70E802FFFE189D, 0x0F70F002FFFE1883,
    0x0F70F802FFFE1850, 0x0F710802FFFE1807, 0x0F711002FFFE180A, 0x0F712002FFFE1823,
    0x0F713802FFFE1806, 0x0F714802FFFE1821, 0x0F715008FFFE1819, 0x0F717002FFFE1805,
    0x0F717802FFFE180A, 0x0F718002FFFE1811, 0x0F718802FFFE1804, 0x0F719002FFFE1810,
    0x0F71A002FFFE1800, 0x0F71A804FFFE17F5, 0x0F71B802FFFE17F7, 0x0F71C802FFFE17FD,
    0x0F71D802FFFE17FF, 0x0F721002FFFE17EA, 0x0F723802FFFE17E6, 0x0F724802FFFE1801,
    0x0F725802FFFE17F9, 0x0F726802FFFE17F9, 0x0F727002FFFE17E5, 0x0F727802FFFE17EA,
    0x0F728802FFFE17E4, 0x0F729002FFFE17F0, 0x0F72A002FFFE17E0, 0x0F72B802FFFE17D7,
    0x0F72C802FFFE17DD, 0x0F72D802FFFE17DF, 0x0F72E802FFFE185D, 0x0F72F802FFFE1810,
    0x0F730802FFFE17C7, 0x0F731002FFFE17CA, 0x0F732002FFFE17E3, 0x0F733802FFFE17C6,
    0x0F734002FFFE17CF, 0x0F734802FFFE17E1, 0x0F735002FFFE17D9, 0x0F736004FFFE17D9,
    0x0F737002FFFE17C5, 0x0F737802FFFE17CA, 0x0F738002FFFE17D1, 0x0F738802FFFE17C4,
    0x0F739002FFFE17D0, 0x0F73A002FFFE17C0, 0x0F73A804FFFE17B5, 0x0F73B802FFFE17B7,
    0x0F73C802FFFE17BD, 0x0F73D002FFFE17BE, 0x0F73D802FFFE17BF, 0x0F73E002FFFE17F2,
    0x0F73F002FFFE1823, 0x0F740004FFFE17A7, 0x0F741002FFFE17AA, 0x0F741802FFFE17AC,
    0x0F742004FFFE17C3, 0x0F743002FFFE17AC, 0x0F743802FFFE17A6, 0x0F744002FFFE17AF,
    0x0F744802FFFE17C1, 0x0F745806FFFE17B9, 0x0F747002FFFE17A5, 0x0F747802FFFE17AA,
    0x0F748002FFFE17B1, 0x0F748802FFFE17A4, 0x0F749002FFFE17B0, 0x0F749802FFFE179E,
    0x0F74A002FFFE17A0, 0x0F74A804FFFE1795, 0x0F74B802FFFE1797, 0x0F74C002FFFE1798,
    0x0F74C802FFFE179D, 0x0F74D002FFFE179E, 0x0F74D802FFFE179F, 0x0F750802FFFE1787,
    0x0F751002FFFE178A, 0x0F751802FFFE178C, 0x0F752802FFFE17A3, 0x0F753002FFFE178C,
    0x0F753802FFFE1786, 0x0F754002FFFE178F, 0x0F754802FFFE17A1, 0x0F755806FFFE1799,
    0x0F757002FFFE1785, 0x0F757802FFFE178A, 0x0F758002FFFE1791, 0x0F758802FFFE1784,
    0x0F759002FFFE1790, 0x0F759802FFFE177E, 0x0F75A002FFFE1780, 0x0F75A804FFFE1775,
    0x0F75B802FFFE1777, 0x0F75C002FFFE1778, 0x0F75C802FFFE177D, 0x0F75D002FFFE177E,
    0x0F75D802FFFE177F, 0x0F895802FFFE0F18, 0x0F896002FFFE0F26, 0x0F898034FFFE0F11,
    0x0F901002FFFE3EB3, 0x0F908002FFFE703B, 0x0F908802FFFE6946, 0x0F909002FFFE61BA,
    0x0F90A002FFFE5C78, 0x0F90A802FFFE6705, 0x0F90B002FFFE97CD, 0x0F90B802FFFE6712,
    0x0F90C002FFFE5C8C, 0x0F90C802FFFE7407, 0x0F90D002FFFE7F07, 0x0F90D802FFFE737E,
    0x0F90E002FFFE6031, 0x0F90E802FFFE6D6F, 0x0F90F002FFFE5F6F, 0x0F90F802FFFE7391,
    0x0F910002FFFE5FFD, 0x0F910802FFFE8B21, 0x0F911002FFFE82FD, 0x0F911802FFFE9A86,
    0x0F912002FFFE66CC, 0x0F912802FFFE6214, 0x0F913002FFFE7CEE, 0x0F913802FFFE706E,
    0x0F914002FFFE712D, 0x0F914802FFFE5BD7, 0x0F915002FFFE5BDF, 0x0F915802FFFE9E1F,
    0x0F916002FFFE6BBA, 0x0F916802FFFE5C00, 0x0F917002FFFE61C5, 0x0F917802FFFE70D8,
    0x0F918002FFFE9B40, 0x0F918802FFFE7022, 0x0F919002FFFE874F, 0x0F919802FFFE8847,
    0x0F91A002FFFE61D4, 0x0F91A802FFFE7C4B, 0x0F91B002FFFE74D3, 0x0F91B802FFFE74D1,
    0x0F91C002FFFE82FB, 0x0F91C802FFFE6039, 0x0F91D002FFFE637C, 0x0F91D802FFFE9F12,
    0x0F928002FFFE6D47, 0x0F928802FFFE619E,
};
static const uint64_t pf__unicode_compat_multi[1185] = {
    0x000000A800000002, 0x000000AF00000202, 0x000000B400000402, 0x000000B800000602,
    0x000000BC00000803, 0x000000BD00000B03, 0x000000BE00000E03, 0x0000013200001102,
    0x0000013300001302, 0x0000013F00001502, 0x0000014000001702, 0x0000014900001902,
    0x000001C400001B03, 0x000001C500001E03, 0x000001C600002103, 0x000001C700002402,
    0x000001C800002602, 0x000001C900002802, 0x000001CA00002A02, 0x000001CB00002C02,
    0x000001CC00002E02, 0x000001F100003002, 0x000001F200003202, 0x000001F300003402,
    0x000002D800003602, 0x000002D900003802, 0x000002DA00003A02, 0x000002DB00003C02,
    0x000002DC00003E02, 0x000002DD00004002, 0x0000037A00004202, 0x0000038400004402,
    0x0000038500004603, 0x000003D300004902, 0x000003D400004B02, 0x0000058700004D02,
    0x0000067500004F02, 0x0000067600005102, 0x0000067700005302, 0x0000067800005502,
    0x00000E3300005702, 0x00000EB300005902, 0x00000EDC00005B02, 0x00000EDD00005D02,
    0x00000F7700005F03, 0x00000F7900006203, 0x00001E9A00006502, 0x00001E9B00006702,
    0x00001FBD00006902, 0x00001FBF00006B02, 0x00001FC000006D02, 0x00001FC100006F03,
    0x00001FCD00007203, 0x00001FCE00007503, 0x00001FCF00007803, 0x00001FDD00007B03,
    0x00001FDE00007E03, 0x00001FDF00008103, 0x00001FED00008403, 0x00001FEE00008703,
    0x00001FFD00008A02, 0x00001FFE00008C02, 0x0000201700008E02, 0x0000202500009002,
    0x0000202600009203, 0x0000203300009502, 0x0000203400009703, 0x0000203600009A02,
    0x0000203700009C03, 0x0000203C00009F02, 0x0000203E0000A102, 0x000020470000A302,
    0x000020480000A502, 0x000020490000A702, 0x000020570000A904, 0x000020A80000AD02,
    0x000021000000AF03, 0x000021010000B203, 0x000021030000B502, 0x000021050000B703,
    0x000021060000BA03, 0x000021090000BD02, 0x000021160000BF02, 0x000021200000C102,
    0x000021210000C303, 0x000021220000C602, 0x0000213B0000C803, 0x000021500000CB03,
    0x000021510000CE03, 0x000021520000D104, 0x000021530000D503, 0x000021540000D803,
    0x000021550000DB03, 0x000021560000DE03, 0x000021570000E103, 0x000021580000E403,
    0x000021590000E703, 0x0000215A0000EA03, 0x0000215B0000ED03, 0x0000215C0000F003,
    0x0000215D0000F303, 0x0000215E0000F603, 0x0000215F0000F902, 0x000021610000FB02,
    0x000021620000FD03, 0x0000216300010002, 0x0000216500010202, 0x0000216600010403,
    0x0000216700010704, 0x0000216800010B02, 0x0000216A00010D02, 0x0000216B00010F03,
    0x0000217100011202, 0x0000217200011403, 0x0000217300011702, 0x0000217500011902,
    0x0000217600011B03, 0x0000217700011E04, 0x0000217800012202, 0x0000217A00012402,
    0x0000217B00012603, 0x0000218900012903, 0x0000222C00012C02, 0x0000222D00012E03,
    0x0000222F00013102, 0x0000223000013303, 0x0000246900013602, 0x0000246A00013802,
    0x0000246B00013A02, 0x0000246C00013C02, 0x0000246D00013E02, 0x0000246E00014002,
    0x0000246F00014202, 0x0000247000014402, 0x0000247100014602, 0x0000247200014802,
    0x0000247300014A02, 0x0000247400014C03, 0x0000247500014F03, 0x0000247600015203,
    0x0000247700015503, 0x0000247800015803, 0x0000247900015B03, 0x0000247A00015E03,
    0x0000247B00016103, 0x0000247C00016403, 0x0000247D00016704, 0x0000247E00016B04,
    0x0000247F00016F04, 0x0000248000017304, 0x0000248100017704, 0x0000248200017B04,
    0x0000248300017F04, 0x0000248400018304, 0x0000248500018704, 0x0000248600018B04,
    0x0000248700018F04, 0x0000248800019302, 0x0000248900019502, 0x0000248A00019702,
    0x0000248B00019902, 0x0000248C00019B02, 0x0000248D00019D02, 0x0000248E00019F02,
    0x0000248F0001A102, 0x000024900001A302, 0x000024910001A503, 0x000024920001A803,
    0x000024930001AB03, 0x000024940001AE03, 0x000024950001B103, 0x000024960001B403,
    0x000024970001B703, 0x000024980001BA03, 0x000024990001BD03, 0x0000249A0001C003,
    0x0000249B0001C303, 0x0000249C0001C603, 0x0000249D0001C903, 0x0000249E0001CC03,
    0x0000249F0001CF03, 0x000024A00001D203, 0x000024A10001D503, 0x000024A20001D803,
    0x000024A30001DB03, 0x000024A40001DE03, 0x000024A50001E103, 0x000024A60001E403,
    0x000024A70001E703, 0x000024A80001EA03, 0x000024A90001ED03, 0x000024AA0001F003,
    0x000024AB0001F303, 0x000024AC0001F603, 0x000024AD0001F903, 0x000024AE0001FC03,
    0x000024AF0001FF03, 0x000024B000020203, 0x000024B100020503, 0x000024B200020803,
    0x000024B300020B03, 0x000024B400020E03, 0x000024B500021103, 0x00002A0C00021404,
    0x00002A7400021803, 0x00002A7500021B02, 0x00002A7600021D03, 0x0000309B00022002,
    0x0000309C00022202, 0x0000309F00022402, 0x000030FF00022602, 0x0000320000022803,
    0x0000320100022B03, 0x0000320200022E03, 0x0000320300023103, 0x0000320400023403,
    0x0000320500023703, 0x0000320600023A03, 0x0000320700023D03, 0x0000320800024003,
    0x0000320900024303, 0x0000320A00024603, 0x0000320B00024903, 0x0000320C00024C03,
    0x0000320D00024F03, 0x0000320E00025204, 0x0000320F00025604, 0x0000321000025A04,
    0x0000321100025E04, 0x0000321200026204, 0x0000321300026604, 0x0000321400026A04,
    0x0000321500026E04, 0x0000321600027204, 0x0000321700027604, 0x0000321800027A04,
    0x0000321900027E04, 0x0000321A00028204, 0x0000321B00028604, 0x0000321C00028A04,
    0x0000321D00028E07, 0x0000321E00029506, 0x0000322000029B03, 0x0000322100029E03,
    0x000032220002A103, 0x000032230002A403, 0x000032240002A703, 0x000032250002AA03,
    0x000032260002AD03, 0x000032270002B003, 0x000032280002B303, 0x000032290002B603,
    0x0000322A0002B903, 0x0000322B0002BC03, 0x0000322C0002BF03, 0x0000322D0002C203,
    0x0000322E0002C503, 0x0000322F0002C803, 0x000032300002CB03, 0x000032310002CE03,
    0x000032320002D103, 0x000032330002D403, 0x000032340002D703, 0x000032350002DA03,
    0x000032360002DD03, 0x000032370002E003, 0x000032380002E303, 0x000032390002E603,
    0x0000323A0002E903, 0x0000323B0002EC03, 0x0000323C0002EF03, 0x0000323D0002F203,
    0x0000323E0002F503, 0x0000323F0002F803, 0x000032400002FB03, 0x000032410002FE03,
    0x0000324200030103, 0x0000324300030403, 0x0000325000030703, 0x0000325100030A02,
    0x0000325200030C02, 0x0000325300030E02, 0x0000325400031002, 0x0000325500031202,
    0x0000325600031402, 0x0000325700031602, 0x0000325800031802, 0x0000325900031A02,
    0x0000325A00031C02, 0x0000325B00031E02, 0x0000325C00032002, 0x0000325D00032202,
    0x0000325E00032402, 0x0000325F00032602, 0x0000326E00032802, 0x0000326F00032A02,
    0x0000327000032C02, 0x0000327100032E02, 0x0000327200033002, 0x0000327300033202,
    0x0000327400033402, 0x0000327500033602, 0x0000327600033802, 0x0000327700033A02,
    0x0000327800033C02, 0x0000327900033E02, 0x0000327A00034002, 0x0000327B00034202,
    0x0000327C00034405, 0x0000327D00034904, 0x0000327E00034D02, 0x000032B100034F02,
    0x000032B200035102, 0x000032B300035302, 0x000032B400035502, 0x000032B500035702,
    0x000032B600035902, 0x000032B700035B02, 0x000032B800035D02, 0x000032B900035F02,
    0x000032BA00036102, 0x000032BB00036302, 0x000032BC00036502, 0x000032BD00036702,
    0x000032BE00036902, 0x000032BF00036B02, 0x000032C000036D02, 0x000032C100036F02,
    0x000032C200037102, 0x000032C300037302, 0x000032C400037502, 0x000032C500037702,
    0x000032C600037902, 0x000032C700037B02, 0x000032C800037D02, 0x000032C900037F03,
    0x000032CA00038203, 0x000032CB00038503, 0x000032CC00038802, 0x000032CD00038A03,
    0x000032CE00038D02, 0x000032CF00038F03, 0x0000330000039205, 0x0000330100039704,
    0x0000330200039B05, 0x000033030003A003, 0x000033040003A305, 0x000033050003A803,
    0x000033060003AB03, 0x000033070003AE06, 0x000033080003B404, 0x000033090003B803,
    0x0000330A0003BB03, 0x0000330B0003BE03, 0x0000330C0003C104, 0x0000330D0003C504,
    0x0000330E0003C904, 0x0000330F0003CD04, 0x000033100003D104, 0x000033110003D504,
    0x000033120003D904, 0x000033130003DD06, 0x000033140003E302, 0x000033150003E506,
    0x000033160003EB06, 0x000033170003F105, 0x000033180003F604, 0x000033190003FA06,
    0x0000331A00040006, 0x0000331B00040604, 0x0000331C00040A03, 0x0000331D00040D03,
    0x0000331E00041004, 0x0000331F00041404, 0x0000332000041805, 0x0000332100041D05,
    0x0000332200042203, 0x0000332300042503, 0x0000332400042804, 0x0000332500042C03,
    0x0000332600042F03, 0x0000332700043202, 0x0000332800043402, 0x0000332900043603,
    0x0000332A00043903, 0x0000332B00043C06, 0x0000332C00044204, 0x0000332D00044605,
    0x0000332E00044B06, 0x0000332F00045104, 0x0000333000045503, 0x0000333100045803,
    0x0000333200045B06, 0x0000333300046104, 0x0000333400046506, 0x0000333500046B03,
    0x0000333600046E05, 0x0000333700047303, 0x0000333800047604, 0x0000333900047A03,
    0x0000333A00047D04, 0x0000333B00048105, 0x0000333C00048604, 0x0000333D00048A05,
    0x0000333E00048F04, 0x0000333F00049302, 0x0000334000049505, 0x0000334100049A03,
    0x0000334200049D03, 0x000033430004A004, 0x000033440004A403, 0x000033450004A703,
    0x000033460004AA03, 0x000033470004AD05, 0x000033480004B204, 0x000033490004B602,
    0x0000334A0004B806, 0x0000334B0004BE03, 0x0000334C0004C105, 0x0000334D0004C604,
    0x0000334E0004CA04, 0x0000334F0004CE03, 0x000033500004D103, 0x000033510004D404,
    0x000033520004D802, 0x000033530004DA04, 0x000033540004DE05, 0x000033550004E302,
    0x000033560004E506, 0x000033570004EB03, 0x000033580004EE02, 0x000033590004F002,
    0x0000335A0004F202, 0x0000335B0004F402, 0x0000335C0004F602, 0x0000335D0004F802,
    0x0000335E0004FA02, 0x0000335F0004FC02, 0x000033600004FE02, 0x0000336100050002,
    0x0000336200050203, 0x0000336300050503, 0x0000336400050803, 0x0000336500050B03,
    0x0000336600050E03, 0x0000336700051103, 0x0000336800051403, 0x0000336900051703,
    0x0000336A00051A03, 0x0000336B00051D03, 0x0000336C00052003, 0x0000336D00052303,
    0x0000336E00052603, 0x0000336F00052903, 0x0000337000052C03, 0x0000337100052F03,
    0x0000337200053202, 0x0000337300053402, 0x0000337400053603, 0x0000337500053902,
    0x0000337600053B02, 0x0000337700053D02, 0x0000337800053F03, 0x0000337900054203,
    0x0000337A00054502, 0x0000337B00054702, 0x0000337C00054902, 0x0000337D00054B02,
    0x0000337E00054D02, 0x0000337F00054F04, 0x0000338000055302, 0x0000338100055502,
    0x0000338200055702, 0x0000338300055902, 0x0000338400055B02, 0x0000338500055D02,
    0x0000338600055F02, 0x0000338700056102, 0x0000338800056303, 0x0000338900056604,
    0x0000338A00056A02, 0x0000338B00056C02, 0x0000338C00056E02, 0x0000338D00057002,
    0x0000338E00057202, 0x0000338F00057402, 0x0000339000057602, 0x0000339100057803,
    0x0000339200057B03, 0x0000339300057E03, 0x0000339400058103, 0x0000339500058402,
    0x0000339600058602, 0x0000339700058802, 0x0000339800058A02, 0x0000339900058C02,
    0x0000339A00058E02, 0x0000339B00059002, 0x0000339C00059202, 0x0000339D00059402,
    0x0000339E00059602, 0x0000339F00059803, 0x000033A000059B03, 0x000033A100059E02,
    0x000033A20005A003, 0x000033A30005A303, 0x000033A40005A603, 0x000033A50005A902,
    0x000033A60005AB03, 0x000033A70005AE03, 0x000033A80005B104, 0x000033A90005B502,
    0x000033AA0005B703, 0x000033AB0005BA03, 0x000033AC0005BD03, 0x000033AD0005C003,
    0x000033AE0005C305, 0x000033AF0005C806, 0x000033B00005CE02, 0x000033B10005D002,
    0x000033B20005D202, 0x000033B30005D402, 0x000033B40005D602, 0x000033B50005D802,
    0x000033B60005DA02, 0x000033B70005DC02, 0x000033B80005DE02, 0x000033B90005E002,
    0x000033BA0005E202, 0x000033BB0005E402, 0x000033BC0005E602, 0x000033BD0005E802,
    0x000033BE0005EA02, 0x000033BF0005EC02, 0x000033C00005EE02, 0x000033C10005F002,
    0x000033C20005F204, 0x000033C30005F602, 0x000033C40005F802, 0x000033C50005FA02,
    0x000033C60005FC04, 0x000033C700060003, 0x000033C800060302, 0x000033C900060502,
    0x000033CA00060702, 0x000033CB00060902, 0x000033CC00060B02, 0x000033CD00060D02,
    0x000033CE00060F02, 0x000033CF00061102, 0x000033D000061302, 0x000033D100061502,
    0x000033D200061703, 0x000033D300061A02, 0x000033D400061C02, 0x000033D500061E03,
    0x000033D600062103, 0x000033D700062402, 0x000033D800062604, 0x000033D900062A03,
    0x000033DA00062D02, 0x000033DB00062F02, 0x000033DC00063102, 0x000033DD00063302,
    0x000033DE00063503, 0x000033DF00063803, 0x000033E000063B02, 0x000033E100063D02,
    0x000033E200063F02, 0x000033E300064102, 0x000033E400064302, 0x000033E500064502,
    0x000033E600064702, 0x000033E700064902, 0x000033E800064B02, 0x000033E900064D03,
    0x000033EA00065003, 0x000033EB00065303, 0x000033EC00065603, 0x000033ED00065903,
    0x000033EE00065C03, 0x000033EF00065F03, 0x000033F000066203, 0x000033F100066503,
    0x000033F200066803, 0x000033F300066B03, 0x000033F400066E03, 0x000033F500067103,
    0x000033F600067403, 0x000033F700067703, 0x000033F800067A03, 0x000033F900067D03,
    0x000033FA00068003, 0x000033FB00068303, 0x000033FC00068603, 0x000033FD00068903,
    0x000033FE00068C03, 0x000033FF00068F03, 0x0000FB0000069202, 0x0000FB0100069402,
    0x0000FB0200069602, 0x0000FB0300069803, 0x0000FB0400069B03, 0x0000FB0500069E02,
    0x0000FB060006A002, 0x0000FB130006A202, 0x0000FB140006A402, 0x0000FB150006A602,
    0x0000FB160006A802, 0x0000FB170006AA02, 0x0000FB4F0006AC02, 0x0000FBA40006AE02,
    0x0000FBA50006B002, 0x0000FBB00006B202, 0x0000FBB10006B402, 0x0000FBDD0006B602,
    0x0000FBEA0006B803, 0x0000FBEB0006BB03, 0x0000FBEC0006BE03, 0x0000FBED0006C103,
    0x0000FBEE0006C403, 0x0000FBEF0006C703, 0x0000FBF00006CA03, 0x0000FBF10006CD03,
    0x0000FBF20006D003, 0x0000FBF30006D303, 0x0000FBF40006D603, 0x0000FBF50006D903,
    0x0000FBF60006DC03, 0x0000FBF70006DF03, 0x0000FBF80006E203, 0x0000FBF90006E503,
    0x0000FBFA0006E803, 0x0000FBFB0006EB03, 0x0000FC000006EE03, 0x0000FC010006F103,
    0x0000FC020006F403, 0x0000FC030006F703, 0x0000FC040006FA03, 0x0000FC050006FD02,
    0x0000FC060006FF02, 0x0000FC0700070102, 0x0000FC0800070302, 0x0000FC0900070502,
    0x0000FC0A00070702, 0x0000FC0B00070902, 0x0000FC0C00070B02, 0x0000FC0D00070D02,
    0x0000FC0E00070F02, 0x0000FC0F00071102, 0x0000FC1000071302, 0x0000FC1100071502,
    0x0000FC1200071702, 0x0000FC1300071902, 0x0000FC1400071B02, 0x0000FC1500071D02,
    0x0000FC1600071F02, 0x0000FC1700072102, 0x0000FC1800072302, 0x0000FC1900072502,
    0x0000FC1A00072702, 0x0000FC1B00072902, 0x0000FC1C00072B02, 0x0000FC1D00072D02,
    0x0000FC1E00072F02, 0x0000FC1F00073102, 0x0000FC2000073302, 0x0000FC2100073502,
    0x0000FC2200073702, 0x0000FC2300073902, 0x0000FC2400073B02, 0x0000FC2500073D02,
    0x0000FC2600073F02, 0x0000FC2700074102, 0x0000FC2800074302, 0x0000FC2900074502,
    0x0000FC2A00074702, 0x0000FC2B00074902, 0x0000FC2C00074B02, 0x0000FC2D00074D02,
    0x0000FC2E00074F02, 0x0000FC2F00075102, 0x0000FC3000075302, 0x0000FC3100075502,
    0x0000FC3200075702, 0x0000FC3300075902, 0x0000FC3400075B02, 0x0000FC3500075D02,
    0x0000FC3600075F02, 0x0000FC3700076102, 0x0000FC3800076302, 0x0000FC3900076502,
    0x0000FC3A00076702, 0x0000FC3B00076902, 0x0000FC3C00076B02, 0x0000FC3D00076D02,
    0x0000FC3E00076F02, 0x0000FC3F00077102, 0x0000FC4000077302, 0x0000FC4100077502,
    0x0000FC4200077702, 0x0000FC4300077902, 0x0000FC4400077B02, 0x0000FC4500077D02,
    0x0000FC4600077F02, 0x0000FC4700078102, 0x0000FC4800078302, 0x0000FC4900078502,
    0x0000FC4A00078702, 0x0000FC4B00078902, 0x0000FC4C00078B02, 0x0000FC4D00078D02,
    0x0000FC4E00078F02, 0x0000FC4F00079102, 0x0000FC5000079302, 0x0000FC5100079502,
    0x0000FC5200079702, 0x0000FC5300079902, 0x0000FC5400079B02, 0x0000FC5500079D02,
    0x0000FC5600079F02, 0x0000FC570007A102, 0x0000FC580007A302, 0x0000FC590007A502,
    0x0000FC5A0007A702, 0x0000FC5B0007A902, 0x0000FC5C0007AB02, 0x0000FC5D0007AD02,
    0x0000FC5E0007AF03, 0x0000FC5F0007B203, 0x0000FC600007B503, 0x0000FC610007B803,
    0x0000FC620007BB03, 0x0000FC630007BE03, 0x0000FC640007C103, 0x0000FC650007C403,
    0x0000FC660007C703, 0x0000FC670007CA03, 0x0000FC680007CD03, 0x0000FC690007D003,
    0x0000FC6A0007D302, 0x0000FC6B0007D502, 0x0000FC6C0007D702, 0x0000FC6D0007D902,
    0x0000FC6E0007DB02, 0x0000FC6F0007DD02, 0x0000FC700007DF02, 0x0000FC710007E102,
    0x0000FC720007E302, 0x0000FC730007E502, 0x0000FC740007E702, 0x0000FC750007E902,
    0x0000FC760007EB02, 0x0000FC770007ED02, 0x0000FC780007EF02, 0x0000FC790007F102,
    0x0000FC7A0007F302, 0x0000FC7B0007F502, 0x0000FC7C0007F702, 0x0000FC7D0007F902,
    0x0000FC7E0007FB02, 0x0000FC7F0007FD02, 0x0000FC800007FF02, 0x0000FC8100080102,
    0x0000FC8200080302, 0x0000FC8300080502, 0x0000FC8400080702, 0x0000FC8500080902,
    0x0000FC8600080B02, 0x0000FC8700080D02, 0x0000FC8800080F02, 0x0000FC8900081102,
    0x0000FC8A00081302, 0x0000FC8B00081502, 0x0000FC8C00081702, 0x0000FC8D00081902,
    0x0000FC8E00081B02, 0x0000FC8F00081D02, 0x0000FC9000081F02, 0x0000FC9100082102,
    0x0000FC9200082302, 0x0000FC9300082502, 0x0000FC9400082702, 0x0000FC9500082902,
    0x0000FC9600082B02, 0x0000FC9700082D03, 0x0000FC9800083003, 0x0000FC9900083303,
    0x0000FC9A00083603, 0x0000FC9B00083903, 0x0000FC9C00083C02, 0x0000FC9D00083E02,
    0x0000FC9E00084002, 0x0000FC9F00084202, 0x0000FCA000084402, 0x0000FCA100084602,
    0x0000FCA200084802, 0x0000FCA300084A02, 0x0000FCA400084C02, 0x0000FCA500084E02,
    0x0000FCA600085002, 0x0000FCA700085202, 0x0000FCA800085402, 0x0000FCA900085602,
    0x0000FCAA00085802, 0x0000FCAB00085A02, 0x0000FCAC00085C02, 0x0000FCAD00085E02,
    0x0000FCAE00086002, 0x0000FCAF00086202, 0x0000FCB000086402, 0x0000FCB100086602,
    0x0000FCB200086802, 0x0000FCB300086A02, 0x0000FCB400086C02, 0x0000FCB500086E02,
    0x0000FCB600087002, 0x0000FCB700087202, 0x0000FCB800087402, 0x0000FCB900087602,
    0x0000FCBA00087802, 0x0000FCBB00087A02, 0x0000FCBC00087C02, 0x0000FCBD00087E02,
    0x0000FCBE00088002, 0x0000FCBF00088202, 0x0000FCC000088402, 0x0000FCC100088602,
    0x0000FCC200088802, 0x0000FCC300088A02, 0x0000FCC400088C02, 0x0000FCC500088E02,
    0x0000FCC600089002, 0x0000FCC700089202, 0x0000FCC800089402, 0x0000FCC900089602,
    0x0000FCCA00089802, 0x0000FCCB00089A02, 0x0000FCCC00089C02, 0x0000FCCD00089E02,
    0x0000FCCE0008A002, 0x0000FCCF0008A202, 0x0000FCD00008A402, 0x0000FCD10008A602,
    0x0000FCD20008A802, 0x0000FCD30008AA02, 0x0000FCD40008AC02, 0x0000FCD50008AE02,
    0x0000FCD60008B002, 0x0000FCD70008B202, 0x0000FCD80008B402, 0x0000FCD90008B602,
    0x0000FCDA0008B802, 0x0000FCDB0008BA02, 0x0000FCDC0008BC02, 0x0000FCDD0008BE02,
    0x0000FCDE0008C002, 0x0000FCDF0008C203, 0x0000FCE00008C503, 0x0000FCE10008C802,
    0x0000FCE20008CA02, 0x0000FCE30008CC02, 0x0000FCE40008CE02, 0x0000FCE50008D002,
    0x0000FCE60008D202, 0x0000FCE70008D402, 0x0000FCE80008D602, 0x0000FCE90008D802,
    0x0000FCEA0008DA02, 0x0000FCEB0008DC02, 0x0000FCEC0008DE02, 0x0000FCED0008E002,
    0x0000FCEE0008E202, 0x0000FCEF0008E402, 0x0000FCF00008E602, 0x0000FCF10008E802,
    0x0000FCF20008EA03, 0x0000FCF30008ED03, 0x0000FCF40008F003, 0x0000FCF50008F302,
    0x0000FCF60008F502, 0x0000FCF70008F702, 0x0000FCF80008F902, 0x0000FCF90008FB02,
    0x0000FCFA0008FD02, 0x0000FCFB0008FF02, 0x0000FCFC00090102, 0x0000FCFD00090302,
    0x0000FCFE00090502, 0x0000FCFF00090702, 0x0000FD0000090902, 0x0000FD0100090B02,
    0x0000FD0200090D02, 0x0000FD0300090F02, 0x0000FD0400091102, 0x0000FD0500091302,
    0x0000FD0600091502, 0x0000FD0700091702, 0x0000FD0800091902, 0x0000FD0900091B02,
    0x0000FD0A00091D02, 0x0000FD0B00091F02, 0x0000FD0C00092102, 0x0000FD0D00092302,
    0x0000FD0E00092502, 0x0000FD0F00092702, 0x0000FD1000092902, 0x0000FD1100092B02,
    0x0000FD1200092D02, 0x0000FD1300092F02, 0x0000FD1400093102, 0x0000FD1500093302,
    0x0000FD1600093502, 0x0000FD1700093702, 0x0000FD1800093902, 0x0000FD1900093B02,
    0x0000FD1A00093D02, 0x0000FD1B00093F02, 0x0000FD1C00094102, 0x0000FD1D00094302,
    0x0000FD1E00094502, 0x0000FD1F00094702, 0x0000FD2000094902, 0x0000FD2100094B02,
    0x0000FD2200094D02, 0x0000FD2300094F02, 0x0000FD2400095102, 0x0000FD2500095302,
    0x0000FD2600095502, 0x0000FD2700095702, 0x0000FD2800095902, 0x0000FD2900095B02,
    0x0000FD2A00095D02, 0x0000FD2B00095F02, 0x0000FD2C00096102, 0x0000FD2D00096302,
    0x0000FD2E00096502, 0x0000FD2F00096702, 0x0000FD3000096902, 0x0000FD3100096B02,
    0x0000FD3200096D02, 0x0000FD3300096F02, 0x0000FD3400097102, 0x0000FD3500097302,
    0x0000FD3600097502, 0x0000FD3700097702, 0x0000FD3800097902, 0x0000FD3900097B02,
    0x0000FD3A00097D02, 0x0000FD3B00097F02, 0x0000FD3C00098102, 0x0000FD3D00098302,
    0x0000FD5000098503, 0x0000FD5100098803, 0x0000FD5200098B03, 0x0000FD5300098E03,
    0x0000FD5400099103, 0x0000FD5500099403, 0x0000FD5600099703, 0x0000FD5700099A03,
    0x0000FD5800099D03, 0x0000FD590009A003, 0x0000FD5A0009A303, 0x0000FD5B0009A603,
    0x0000FD5C0009A903, 0x0000FD5D0009AC03, 0x0000FD5E0009AF03, 0x0000FD5F0009B203,
    0x0000FD600009B503, 0x0000FD610009B803, 0x0000FD620009BB03, 0x0000FD630009BE03,
    0x0000FD640009C103, 0x0000FD650009C403, 0x0000FD660009C703, 0x0000FD670009CA03,
    0x0000FD680009CD03, 0x0000FD690009D003, 0x0000FD6A0009D303, 0x0000FD6B0009D603,
    0x0000FD6C0009D903, 0x0000FD6D0009DC03, 0x0000FD6E0009DF03, 0x0000FD6F0009E203,
    0x0000FD700009E503, 0x0000FD710009E803, 0x0000FD720009EB03, 0x0000FD730009EE03,
    0x0000FD740009F103, 0x0000FD750009F403, 0x0000FD760009F703, 0x0000FD770009FA03,
    0x0000FD780009FD03, 0x0000FD79000A0003, 0x0000FD7A000A0303, 0x0000FD7B000A0603,
    0x0000FD7C000A0903, 0x0000FD7D000A0C03, 0x0000FD7E000A0F03, 0x0000FD7F000A1203,
    0x0000FD80000A1503, 0x0000FD81000A1803, 0x0000FD82000A1B03, 0x0000FD83000A1E03,
    0x0000FD84000A2103, 0x0000FD85000A2403, 0x0000FD86000A2703, 0x0000FD87000A2A03,
    0x0000FD88000A2D03, 0x0000FD89000A3003, 0x0000FD8A000A3303, 0x0000FD8B000A3603,
    0x0000FD8C000A3903, 0x0000FD8D000A3C03, 0x0000FD8E000A3F03, 0x0000FD8F000A4203,
    0x0000FD92000A4503, 0x0000FD93000A4803, 0x0000FD94000A4B03, 0x0000FD95000A4E03,
    0x0000FD96000A5103, 0x0000FD97000A5403, 0x0000FD98000A5703, 0x0000FD99000A5A03,
    0x0000FD9A000A5D03, 0x0000FD9B000A6003, 0x0000FD9C000A6303, 0x0000FD9D000A6603,
    0x0000FD9E000A6903, 0x0000FD9F000A6C03, 0x0000FDA0000A6F03, 0x0000FDA1000A7203,
    0x0000FDA2000A7503, 0x0000FDA3000A7803, 0x0000FDA4000A7B03, 0x0000FDA5000A7E03,
    0x0000FDA6000A8103, 0x0000FDA7000A8403, 0x0000FDA8000A8703, 0x0000FDA9000A8A03,
    0x0000FDAA000A8D03, 0x0000FDAB000A9003, 0x0000FDAC000A9303, 0x0000FDAD000A9603,
    0x0000FDAE000A9903, 0x0000FDAF000A9C03, 0x0000FDB0000A9F03, 0x0000FDB1000AA203,
    0x0000FDB2000AA503, 0x0000FDB3000AA803, 0x0000FDB4000AAB03, 0x0000FDB5000AAE03,
    0x0000FDB6000AB103, 0x0000FDB7000AB403, 0x0000FDB8000AB703, 0x0000FDB9000ABA03,
    0x0000FDBA000ABD03, 0x0000FDBB000AC003, 0x0000FDBC000AC303, 0x0000FDBD000AC603,
    0x0000FDBE000AC903, 0x0000FDBF000ACC03, 0x0000FDC0000ACF03, 0x0000FDC1000AD203,
    0x0000FDC2000AD503, 0x0000FDC3000AD803, 0x0000FDC4000ADB03, 0x0000FDC5000ADE03,
    0x0000FDC6000AE103, 0x0000FDC7000AE403, 0x0000FDF0000AE703, 0x0000FDF1000AEA03,
    0x0000FDF2000AED04, 0x0000FDF3000AF104, 0x0000FDF4000AF504, 0x0000FDF5000AF904,
    0x0000FDF6000AFD04, 0x0000FDF7000B0104, 0x0000FDF8000B0504, 0x0000FDF9000B0903,
    0x0000FDFA000B0C12, 0x0000FDFB000B1E08, 0x0000FDFC000B2604, 0x0000FE19000B2A03,
    0x0000FE30000B2D02, 0x0000FE49000B2F02, 0x0000FE4A000B3102, 0x0000FE4B000B3302,
    0x0000FE4C000B3502, 0x0000FE70000B3702, 0x0000FE71000B3902, 0x0000FE72000B3B02,
    0x0000FE74000B3D02, 0x0000FE76000B3F02, 0x0000FE77000B4102, 0x0000FE78000B4302,
    0x0000FE79000B4502, 0x0000FE7A000B4702, 0x0000FE7B000B4902, 0x0000FE7C000B4B02,
    0x0000FE7D000B4D02, 0x0000FE7E000B4F02, 0x0000FE7F000B5102, 0x0000FE81000B5302,
    0x0000FE82000B5502, 0x0000FE83000B5702, 0x0000FE84000B5902, 0x0000FE85000B5B02,
    0x0000FE86000B5D02, 0x0000FE87000B5F02, 0x0000FE88000B6102, 0x0000FE89000B6302,
    0x0000FE8A000B6502, 0x0000FE8B000B6702, 0x0000FE8C000B6902, 0x0000FEF5000B6B03,
    0x0000FEF6000B6E03, 0x0000FEF7000B7103, 0x0000FEF8000B7403, 0x0000FEF9000B7703,
    0x0000FEFA000B7A03, 0x0000FEFB000B7D02, 0x0000FEFC000B7F02, 0x0000FFE3000B8102,
    0x0001F100000B8302, 0x0001F101000B8502, 0x0001F102000B8702, 0x0001F103000B8902,
    0x0001F104000B8B02, 0x0001F105000B8D02, 0x0001F106000B8F02, 0x0001F107000B9102,
    0x0001F108000B9302, 0x0001F109000B9502, 0x0001F10A000B9702, 0x0001F110000B9903,
    0x0001F111000B9C03, 0x0001F112000B9F03, 0x0001F113000BA203, 0x0001F114000BA503,
    0x0001F115000BA803, 0x0001F116000BAB03, 0x0001F117000BAE03, 0x0001F118000BB103,
    0x0001F119000BB403, 0x0001F11A000BB703, 0x0001F11B000BBA03, 0x0001F11C000BBD03,
    0x0001F11D000BC003, 0x0001F11E000BC303, 0x0001F11F000BC603, 0x0001F120000BC903,
    0x0001F121000BCC03, 0x0001F122000BCF03, 0x0001F123000BD203, 0x0001F124000BD503,
    0x0001F125000BD803, 0x0001F126000BDB03, 0x0001F127000BDE03, 0x0001F128000BE103,
    0x0001F129000BE403, 0x0001F12A000BE703, 0x0001F12D000BEA02, 0x0001F12E000BEC02,
    0x0001F14A000BEE02, 0x0001F14B000BF002, 0x0001F14C000BF202, 0x0001F14D000BF402,
    0x0001F14E000BF603, 0x0001F14F000BF902, 0x0001F16A000BFB02, 0x0001F16B000BFD02,
    0x0001F190000BFF02, 0x0001F200000C0102, 0x0001F201000C0302, 0x0001F213000C0502,
    0x0001F240000C0703, 0x0001F241000C0A03, 0x0001F242000C0D03, 0x0001F243000C1003,
    0x0001F244000C1303, 0x0001F245000C1603, 0x0001F246000C1903, 0x0001F247000C1C03,
    0x0001F248000C1F03,
};
static const uint32_t pf__unicode_compat_chars[3106] = {
    0x00020, 0x00308, 0x00020, 0x00304, 0x00020, 0x00301, 0x00020, 0x00327, 0x00031, 0x02044, 0x00034, 0x00031,
    0x02044, 0x00032, 0x00033, 0x02044, 0x00034, 0x00049, 0x0004A, 0x00069, 0x0006A, 0x0004C, 0x000B7, 0x0006C,
    0x000B7, 0x002BC, 0x0006E, 0x00044, 0x0005A, 0x0030C, 0x00044, 0x0007A, 0x0030C, 0x00064, 0x0007A, 0x0030C,
    0x0004C, 0x0004A, 0x0004C, 0x0006A, 0x0006C, 0x0006A, 0x0004E, 0x0004A, 0x0004E, 0x0006A, 0x0006E, 0x0006A,
    0x00044, 0x0005A, 0x00044, 0x0007A, 0x00064, 0x0007A, 0x00020, 0x00306, 0x00020, 0x00307, 0x00020, 0x0030A,
    0x00020, 0x00328, 0x00020, 0x00303, 0x00020, 0x0030B, 0x00020, 0x00345, 0x00020, 0x00301, 0x00020, 0x00308,
    0x00301, 0x003A5, 0x00301, 0x003A5, 0x00308, 0x00565, 0x00582, 0x00627, 0x00674, 0x00648, 0x00674, 0x006C7,
    0x00674, 0x0064A, 0x00674, 0x00E4D, 0x00E32, 0x00ECD, 0x00EB2, 0x00EAB, 0x00E99, 0x00EAB, 0x00EA1, 0x00FB2,
    0x00F71, 0x00F80, 0x00FB3, 0x00F71, 0x00F80, 0x00061, 0x002BE, 0x00073, 0x00307, 0x00020, 0x00313, 0x00020,
    0x00313, 0x00020, 0x00342, 0x00020, 0x00308, 0x00342, 0x00020, 0x00313, 0x00300, 0x00020, 0x00313, 0x00301,
    0x00020, 0x00313, 0x00342, 0x00020, 0x00314, 0x00300, 0x00020, 0x00314, 0x00301, 0x00020, 0x00314, 0x00342,
    0x00020, 0x00308, 0x00300, 0x00020, 0x00308, 0x00301, 0x00020, 0x00301, 0x00020, 0x00314, 0x00020, 0x00333,
    0x0002E, 0x0002E, 0x0002E, 0x0002E, 0x0002E, 0x02032, 0x02032, 0x02032, 0x02032, 0x02032, 0x02035, 0x02035,
    0x02035, 0x02035, 0x02035, 0x00021, 0x00021, 0x00020, 0x00305, 0x0003F, 0x0003F, 0x0003F, 0x00021, 0x00021,
    0x0003F, 0x02032, 0x02032, 0x02032, 0x02032, 0x00052, 0x00073, 0x00061, 0x0002F, 0x00063, 0x00061, 0x0002F,
    0x00073, 0x000B0, 0x00043, 0x00063, 0x0002F, 0x0006F, 0x00063, 0x0002F, 0x00075, 0x000B0, 0x00046, 0x0004E,
    0x0006F, 0x00053, 0x0004D, 0x00054, 0x00045, 0x0004C, 0x00054, 0x0004D, 0x00046, 0x00041, 0x00058, 0x00031,
    0x02044, 0x00037, 0x00031, 0x02044, 0x00039, 0x00031, 0x02044, 0x00031, 0x00030, 0x00031, 0x02044, 0x00033,
    0x00032, 0x02044, 0x00033, 0x00031, 0x02044, 0x00035, 0x00032, 0x02044, 0x00035, 0x00033, 0x02044, 0x00035,
    0x00034, 0x02044, 0x00035, 0x00031, 0x02044, 0x00036, 0x00035, 0x02044, 0x00036, 0x00031, 0x02044, 0x00038,
    0x00033, 0x02044, 0x00038, 0x00035, 0x02044, 0x00038, 0x00037, 0x02044, 0x00038, 0x00031, 0x02044, 0x00049,
    0x00049, 0x00049, 0x00049, 0x00049, 0x00049, 0x00056, 0x00056, 0x00049, 0x00056, 0x00049, 0x00049, 0x00056,
    0x00049, 0x00049, 0x00049, 0x00049, 0x00058, 0x00058, 0x00049, 0x00058, 0x00049, 0x00049, 0x00069, 0x00069,
    0x00069, 0x00069, 0x00069, 0x00069, 0x00076, 0x00076, 0x00069, 0x00076, 0x00069, 0x00069, 0x00076, 0x00069,
    0x00069, 0x00069, 0x00069, 0x00078, 0x00078, 0x00069, 0x00078, 0x00069, 0x00069, 0x00030, 0x02044, 0x00033,
    0x0222B, 0x0222B, 0x0222B, 0x0222B, 0x0222B, 0x0222E, 0x0222E, 0x0222E, 0x0222E, 0x0222E, 0x00031, 0x00030,
    0x00031, 0x00031, 0x00031, 0x00032, 0x00031, 0x00033, 0x00031, 0x00034, 0x00031, 0x00035, 0x00031, 0x00036,
    0x00031, 0x00037, 0x00031, 0x00038, 0x00031, 0x00039, 0x00032, 0x00030, 0x00028, 0x00031, 0x00029, 0x00028,
    0x00032, 0x00029, 0x00028, 0x00033, 0x00029, 0x00028, 0x00034, 0x00029, 0x00028, 0x00035, 0x00029, 0x00028,
    0x00036, 0x00029, 0x00028, 0x00037, 0x00029, 0x00028, 0x00038, 0x00029, 0x00028, 0x00039, 0x00029, 0x00028,
    0x00031, 0x00030, 0x00029, 0x00028, 0x00031, 0x00031, 0x00029, 0x00028, 0x00031, 0x00032, 0x00029, 0x00028,
    0x00031, 0x00033, 0x00029, 0x00028, 0x00031, 0x00034, 0x00029, 0x00028, 0x00031, 0x00035, 0x00029, 0x00028,
    0x00031, 0x00036, 0x00029, 0x00028, 0x00031, 0x00037, 0x00029, 0x00028, 0x00031, 0x00038, 0x00029, 0x00028,
    0x00031, 0x00039, 0x00029, 0x00028, 0x00032, 0x00030, 0x00029, 0x00031, 0x0002E, 0x00032, 0x0002E, 0x00033,
    0x0002E, 0x00034, 0x0002E, 0x00035, 0x0002E, 0x00036, 0x0002E, 0x00037, 0x0002E, 0x00038, 0x0002E, 0x00039,
    0x0002E, 0x00031, 0x00030, 0x0002E, 0x00031, 0x00031, 0x0002E, 0x00031, 0x00032, 0x0002E, 0x00031, 0x00033,
    0x0002E, 0x00031, 0x00034, 0x0002E, 0x00031, 0x00035, 0x0002E, 0x00031, 0x00036, 0x0002E, 0x00031, 0x00037,
    0x0002E, 0x00031, 0x00038, 0x0002E, 0x00031, 0x00039, 0x0002E, 0x00032, 0x00030, 0x0002E, 0x00028, 0x00061,
    0x00029, 0x00028, 0x00062, 0x00029, 0x00028, 0x00063, 0x00029, 0x00028, 0x00064, 0x00029, 0x00028, 0x00065,
    0x00029, 0x00028, 0x00066, 0x00029, 0x00028, 0x00067, 0x00029, 0x00028, 0x00068, 0x00029, 0x00028, 0x00069,
    0x00029, 0x00028, 0x0006A, 0x00029, 0x00028, 0x0006B, 0x00029, 0x00028, 0x0006C, 0x00029, 0x00028, 0x0006D,
    0x00029, 0x00028, 0x0006E, 0x00029, 0x00028, 0x0006F, 0x00029, 0x00028, 0x00070, 0x00029, 0x00028, 0x00071,
    0x00029, 0x00028, 0x00072, 0x00029, 0x00028, 0x00073, 0x00029, 0x00028, 0x00074, 0x00029, 0x00028, 0x00075,
    0x00029, 0x00028, 0x00076, 0x00029, 0x00028, 0x00077, 0x00029, 0x00028, 0x00078, 0x00029, 0x00028, 0x00079,
    0x00029, 0x00028, 0x0007A, 0x00029, 0x0222B, 0x0222B, 0x0222B, 0x0222B, 0x0003A, 0x0003A, 0x0003D, 0x0003D,
    0x0003D, 0x0003D, 0x0003D, 0x0003D, 0x00020, 0x03099, 0x00020, 0x0309A, 0x03088, 0x0308A, 0x030B3, 0x030C8,
    0x00028, 0x01100, 0x00029, 0x00028, 0x01102, 0x00029, 0x00028, 0x01103, 0x00029, 0x00028, 0x01105, 0x00029,
    0x00028, 0x01106, 0x00029, 0x00028, 0x01107, 0x00029, 0x00028, 0x01109, 0x00029, 0x00028, 0x0110B, 0x00029,
    0x00028, 0x0110C, 0x00029, 0x00028, 0x0110E, 0x00029, 0x00028, 0x0110F, 0x00029, 0x00028, 0x01110, 0x00029,
    0x00028, 0x01111, 0x00029, 0x00028, 0x01112, 0x00029, 0x00028, 0x01100, 0x01161, 0x00029, 0x00028, 0x01102,
    0x01161, 0x00029, 0x00028, 0x01103, 0x01161, 0x00029, 0x00028, 0x01105, 0x01161, 0x00029, 0x00028, 0x01106,
    0x01161, 0x00029, 0x00028, 0x01107, 0x01161, 0x00029, 0x00028, 0x01109, 0x01161, 0x00029, 0x00028, 0x0110B,
    0x01161, 0x00029, 0x00028, 0x0110C, 0x01161, 0x00029, 0x00028, 0x0110E, 0x01161, 0x00029, 0x00028, 0x0110F,
    0x01161, 0x00029, 0x00028, 0x01110, 0x01161, 0x00029, 0x00028, 0x01111, 0x01161, 0x00029, 0x00028, 0x01112,
    0x01161, 0x00029, 0x00028, 0x0110C, 0x0116E, 0x00029, 0x00028, 0x0110B, 0x01169, 0x0110C, 0x01165, 0x011AB,
    0x00029, 0x00028, 0x0110B, 0x01169, 0x01112, 0x0116E, 0x00029, 0x00028, 0x04E00, 0x00029, 0x00028, 0x04E8C,
    0x00029, 0x00028, 0x04E09, 0x00029, 0x00028, 0x056DB, 0x00029, 0x00028, 0x04E94, 0x00029, 0x00028, 0x0516D,
    0x00029, 0x00028, 0x04E03, 0x00029, 0x00028, 0x0516B, 0x00029, 0x00028, 0x04E5D, 0x00029, 0x00028, 0x05341,
    0x00029, 0x00028, 0x06708, 0x00029, 0x00028, 0x0706B, 0x00029, 0x00028, 0x06C34, 0x00029, 0x00028, 0x06728,
    0x00029, 0x00028, 0x091D1, 0x00029, 0x00028, 0x0571F, 0x00029, 0x00028, 0x065E5, 0x00029, 0x00028, 0x0682A,
    0x00029, 0x00028, 0x06709, 0x00029, 0x00028, 0x0793E, 0x00029, 0x00028, 0x0540D, 0x00029, 0x00028, 0x07279,
    0x00029, 0x00028, 0x08CA1, 0x00029, 0x00028, 0x0795D, 0x00029, 0x00028, 0x052B4, 0x00029, 0x00028, 0x04EE3,
    0x00029, 0x00028, 0x0547C, 0x00029, 0x00028, 0x05B66, 0x00029, 0x00028, 0x076E3, 0x00029, 0x00028, 0x04F01,
    0x00029, 0x00028, 0x08CC7, 0x00029, 0x00028, 0x05354, 0x00029, 0x00028, 0x0796D, 0x00029, 0x00028, 0x04F11,
    0x00029, 0x00028, 0x081EA, 0x00029, 0x00028, 0x081F3, 0x00029, 0x00050, 0x00054, 0x00045, 0x00032, 0x00031,
    0x00032, 0x00032, 0x00032, 0x00033, 0x00032, 0x00034, 0x00032, 0x00035, 0x00032, 0x00036, 0x00032, 0x00037,
    0x00032, 0x00038, 0x00032, 0x00039, 0x00033, 0x00030, 0x00033, 0x00031, 0x00033, 0x00032, 0x00033, 0x00033,
    0x00033, 0x00034, 0x00033, 0x00035, 0x01100, 0x01161, 0x01102, 0x01161, 0x01103, 0x01161, 0x01105, 0x01161,
    0x01106, 0x01161, 0x01107, 0x01161, 0x01109, 0x01161, 0x0110B, 0x01161, 0x0110C, 0x01161, 0x0110E, 0x01161,
    0x0110F, 0x01161, 0x01110, 0x01161, 0x01111, 0x01161, 0x01112, 0x01161, 0x0110E, 0x01161, 0x011B7, 0x01100,
    0x01169, 0x0110C, 0x0116E, 0x0110B, 0x01174, 0x0110B, 0x0116E, 0x00033, 0x00036, 0x00033, 0x00037, 0x00033,
    0x00038, 0x00033, 0x00039, 0x00034, 0x00030, 0x00034, 0x00031, 0x00034, 0x00032, 0x00034, 0x00033, 0x00034,
    0x00034, 0x00034, 0x00035, 0x00034, 0x00036, 0x00034, 0x00037, 0x00034, 0x00038, 0x00034, 0x00039, 0x00035,
    0x00030, 0x00031, 0x06708, 0x00032, 0x06708, 0x00033, 0x06708, 0x00034, 0x06708, 0x00035, 0x06708, 0x00036,
    0x06708, 0x00037, 0x06708, 0x00038, 0x06708, 0x00039, 0x06708, 0x00031, 0x00030, 0x06708, 0x00031, 0x00031,
    0x06708, 0x00031, 0x00032, 0x06708, 0x00048, 0x00067, 0x00065, 0x00072, 0x00067, 0x00065, 0x00056, 0x0004C,
    0x00054, 0x00044, 0x030A2, 0x030CF, 0x0309A, 0x030FC, 0x030C8, 0x030A2, 0x030EB, 0x030D5, 0x030A1, 0x030A2,
    0x030F3, 0x030D8, 0x0309A, 0x030A2, 0x030A2, 0x030FC, 0x030EB, 0x030A4, 0x030CB, 0x030F3, 0x030AF, 0x03099,
    0x030A4, 0x030F3, 0x030C1, 0x030A6, 0x030A9, 0x030F3, 0x030A8, 0x030B9, 0x030AF, 0x030FC, 0x030C8, 0x03099,
    0x030A8, 0x030FC, 0x030AB, 0x030FC, 0x030AA, 0x030F3, 0x030B9, 0x030AA, 0x030FC, 0x030E0, 0x030AB, 0x030A4,
    0x030EA, 0x030AB, 0x030E9, 0x030C3, 0x030C8, 0x030AB, 0x030ED, 0x030EA, 0x030FC, 0x030AB, 0x03099, 0x030ED,
    0x030F3, 0x030AB, 0x03099, 0x030F3, 0x030DE, 0x030AD, 0x03099, 0x030AB, 0x03099, 0x030AD, 0x03099, 0x030CB,
    0x030FC, 0x030AD, 0x030E5, 0x030EA, 0x030FC, 0x030AD, 0x03099, 0x030EB, 0x030BF, 0x03099, 0x030FC, 0x030AD,
    0x030ED, 0x030AD, 0x030ED, 0x030AF, 0x03099, 0x030E9, 0x030E0, 0x030AD, 0x030ED, 0x030E1, 0x030FC, 0x030C8,
    0x030EB, 0x030AD, 0x030ED, 0x030EF, 0x030C3, 0x030C8, 0x030AF, 0x03099, 0x030E9, 0x030E0, 0x030AF, 0x03099,
    0x030E9, 0x030E0, 0x030C8, 0x030F3, 0x030AF, 0x030EB, 0x030BB, 0x03099, 0x030A4, 0x030ED, 0x030AF, 0x030ED,
    0x030FC, 0x030CD, 0x030B1, 0x030FC, 0x030B9, 0x030B3, 0x030EB, 0x030CA, 0x030B3, 0x030FC, 0x030DB, 0x0309A,
    0x030B5, 0x030A4, 0x030AF, 0x030EB, 0x030B5, 0x030F3, 0x030C1, 0x030FC, 0x030E0, 0x030B7, 0x030EA, 0x030F3,
    0x030AF, 0x03099, 0x030BB, 0x030F3, 0x030C1, 0x030BB, 0x030F3, 0x030C8, 0x030BF, 0x03099, 0x030FC, 0x030B9,
    0x030C6, 0x03099, 0x030B7, 0x030C8, 0x03099, 0x030EB, 0x030C8, 0x030F3, 0x030CA, 0x030CE, 0x030CE, 0x030C3,
    0x030C8, 0x030CF, 0x030A4, 0x030C4, 0x030CF, 0x0309A, 0x030FC, 0x030BB, 0x030F3, 0x030C8, 0x030CF, 0x0309A,
    0x030FC, 0x030C4, 0x030CF, 0x03099, 0x030FC, 0x030EC, 0x030EB, 0x030D2, 0x0309A, 0x030A2, 0x030B9, 0x030C8,
    0x030EB, 0x030D2, 0x0309A, 0x030AF, 0x030EB, 0x030D2, 0x0309A, 0x030B3, 0x030D2, 0x03099, 0x030EB, 0x030D5,
    0x030A1, 0x030E9, 0x030C3, 0x030C8, 0x03099, 0x030D5, 0x030A3, 0x030FC, 0x030C8, 0x030D5, 0x03099, 0x030C3,
    0x030B7, 0x030A7, 0x030EB, 0x030D5, 0x030E9, 0x030F3, 0x030D8, 0x030AF, 0x030BF, 0x030FC, 0x030EB, 0x030D8,
    0x0309A, 0x030BD, 0x030D8, 0x0309A, 0x030CB, 0x030D2, 0x030D8, 0x030EB, 0x030C4, 0x030D8, 0x0309A, 0x030F3,
    0x030B9, 0x030D8, 0x0309A, 0x030FC, 0x030B7, 0x03099, 0x030D8, 0x03099, 0x030FC, 0x030BF, 0x030DB, 0x0309A,
    0x030A4, 0x030F3, 0x030C8, 0x030DB, 0x03099, 0x030EB, 0x030C8, 0x030DB, 0x030F3, 0x030DB, 0x0309A, 0x030F3,
    0x030C8, 0x03099, 0x030DB, 0x030FC, 0x030EB, 0x030DB, 0x030FC, 0x030F3, 0x030DE, 0x030A4, 0x030AF, 0x030ED,
    0x030DE, 0x030A4, 0x030EB, 0x030DE, 0x030C3, 0x030CF, 0x030DE, 0x030EB, 0x030AF, 0x030DE, 0x030F3, 0x030B7,
    0x030E7, 0x030F3, 0x030DF, 0x030AF, 0x030ED, 0x030F3, 0x030DF, 0x030EA, 0x030DF, 0x030EA, 0x030CF, 0x03099,
    0x030FC, 0x030EB, 0x030E1, 0x030AB, 0x03099, 0x030E1, 0x030AB, 0x03099, 0x030C8, 0x030F3, 0x030E1, 0x030FC,
    0x030C8, 0x030EB, 0x030E4, 0x030FC, 0x030C8, 0x03099, 0x030E4, 0x030FC, 0x030EB, 0x030E6, 0x030A2, 0x030F3,
    0x030EA, 0x030C3, 0x030C8, 0x030EB, 0x030EA, 0x030E9, 0x030EB, 0x030D2, 0x0309A, 0x030FC, 0x030EB, 0x030FC,
    0x030D5, 0x03099, 0x030EB, 0x030EC, 0x030E0, 0x030EC, 0x030F3, 0x030C8, 0x030B1, 0x03099, 0x030F3, 0x030EF,
    0x030C3, 0x030C8, 0x00030, 0x070B9, 0x00031, 0x070B9, 0x00032, 0x070B9, 0x00033, 0x070B9, 0x00034, 0x070B9,
    0x00035, 0x070B9, 0x00036, 0x070B9, 0x00037, 0x070B9, 0x00038, 0x070B9, 0x00039, 0x070B9, 0x00031, 0x00030,
    0x070B9, 0x00031, 0x00031, 0x070B9, 0x00031, 0x00032, 0x070B9, 0x00031, 0x00033, 0x070B9, 0x00031, 0x00034,
    0x070B9, 0x00031, 0x00035, 0x070B9, 0x00031, 0x00036, 0x070B9, 0x00031, 0x00037, 0x070B9, 0x00031, 0x00038,
    0x070B9, 0x00031, 0x00039, 0x070B9, 0x00032, 0x00030, 0x070B9, 0x00032, 0x00031, 0x070B9, 0x00032, 0x00032,
    0x070B9, 0x00032, 0x00033, 0x070B9, 0x00032, 0x00034, 0x070B9, 0x00068, 0x00050, 0x00061, 0x00064, 0x00061,
    0x00041, 0x00055, 0x00062, 0x00061, 0x00072, 0x0006F, 0x00056, 0x00070, 0x00063, 0x00064, 0x0006D, 0x00064,
    0x0006D, 0x00032, 0x00064, 0x0006D, 0x00033, 0x00049, 0x00055, 0x05E73, 0x06210, 0x0662D, 0x0548C, 0x05927,
    0x06B63, 0x0660E, 0x06CBB, 0x0682A, 0x05F0F, 0x04F1A, 0x0793E, 0x00070, 0x00041, 0x0006E, 0x00041, 0x003BC,
    0x00041, 0x0006D, 0x00041, 0x0006B, 0x00041, 0x0004B, 0x00042, 0x0004D, 0x00042, 0x00047, 0x00042, 0x00063,
    0x00061, 0x0006C, 0x0006B, 0x00063, 0x00061, 0x0006C, 0x00070, 0x00046, 0x0006E, 0x00046, 0x003BC, 0x00046,
    0x003BC, 0x00067, 0x0006D, 0x00067, 0x0006B, 0x00067, 0x00048, 0x0007A, 0x0006B, 0x00048, 0x0007A, 0x0004D,
    0x00048, 0x0007A, 0x00047, 0x00048, 0x0007A, 0x00054, 0x00048, 0x0007A, 0x003BC, 0x0006C, 0x0006D, 0x0006C,
    0x00064, 0x0006C, 0x0006B, 0x0006C, 0x00066, 0x0006D, 0x0006E, 0x0006D, 0x003BC, 0x0006D, 0x0006D, 0x0006D,
    0x00063, 0x0006D, 0x0006B, 0x0006D, 0x0006D, 0x0006D, 0x00032, 0x00063, 0x0006D, 0x00032, 0x0006D, 0x00032,
    0x0006B, 0x0006D, 0x00032, 0x0006D, 0x0006D, 0x00033, 0x00063, 0x0006D, 0x00033, 0x0006D, 0x00033, 0x0006B,
    0x0006D, 0x00033, 0x0006D, 0x02215, 0x00073, 0x0006D, 0x02215, 0x00073, 0x00032, 0x00050, 0x00061, 0x0006B,
    0x00050, 0x00061, 0x0004D, 0x00050, 0x00061, 0x00047, 0x00050, 0x00061, 0x00072, 0x00061, 0x00064, 0x00072,
    0x00061, 0x00064, 0x02215, 0x00073, 0x00072, 0x00061, 0x00064, 0x02215, 0x00073, 0x00032, 0x00070, 0x00073,
    0x0006E, 0x00073, 0x003BC, 0x00073, 0x0006D, 0x00073, 0x00070, 0x00056, 0x0006E, 0x00056, 0x003BC, 0x00056,
    0x0006D, 0x00056, 0x0006B, 0x00056, 0x0004D, 0x00056, 0x00070, 0x00057, 0x0006E, 0x00057, 0x003BC, 0x00057,
    0x0006D, 0x00057, 0x0006B, 0x00057, 0x0004D, 0x00057, 0x0006B, 0x003A9, 0x0004D, 0x003A9, 0x00061, 0x0002E,
    0x0006D, 0x0002E, 0x00042, 0x00071, 0x00063, 0x00063, 0x00063, 0x00064, 0x00043, 0x02215, 0x0006B, 0x00067,
    0x00043, 0x0006F, 0x0002E, 0x00064, 0x00042, 0x00047, 0x00079, 0x00068, 0x00061, 0x00048, 0x00050, 0x00069,
    0x0006E, 0x0004B, 0x0004B, 0x0004B, 0x0004D, 0x0006B, 0x00074, 0x0006C, 0x0006D, 0x0006C, 0x0006E, 0x0006C,
    0x0006F, 0x00067, 0x0006C, 0x00078, 0x0006D, 0x00062, 0x0006D, 0x00069, 0x0006C, 0x0006D, 0x0006F, 0x0006C,
    0x00050, 0x00048, 0x00070, 0x0002E, 0x0006D, 0x0002E, 0x00050, 0x00050, 0x0004D, 0x00050, 0x00052, 0x00073,
    0x00072, 0x00053, 0x00076, 0x00057, 0x00062, 0x00056, 0x02215, 0x0006D, 0x00041, 0x02215, 0x0006D, 0x00031,
    0x065E5, 0x00032, 0x065E5, 0x00033, 0x065E5, 0x00034, 0x065E5, 0x00035, 0x065E5, 0x00036, 0x065E5, 0x00037,
    0x065E5, 0x00038, 0x065E5, 0x00039, 0x065E5, 0x00031, 0x00030, 0x065E5, 0x00031, 0x00031, 0x065E5, 0x00031,
    0x00032, 0x065E5, 0x00031, 0x00033, 0x065E5, 0x00031, 0x00034, 0x065E5, 0x00031, 0x00035, 0x065E5, 0x00031,
    0x00036, 0x065E5, 0x00031, 0x00037, 0x065E5, 0x00031, 0x00038, 0x065E5, 0x00031, 0x00039, 0x065E5, 0x00032,
    0x00030, 0x065E5, 0x00032, 0x00031, 0x065E5, 0x00032, 0x00032, 0x065E5, 0x00032, 0x00033, 0x065E5, 0x00032,
    0x00034, 0x065E5, 0x00032, 0x00035, 0x065E5, 0x00032, 0x00036, 0x065E5, 0x00032, 0x00037, 0x065E5, 0x00032,
    0x00038, 0x065E5, 0x00032, 0x00039, 0x065E5, 0x00033, 0x00030, 0x065E5, 0x00033, 0x00031, 0x065E5, 0x00067,
    0x00061, 0x0006C, 0x00066, 0x00066, 0x00066, 0x00069, 0x00066, 0x0006C, 0x00066, 0x00066, 0x00069, 0x00066,
    0x00066, 0x0006C, 0x00073, 0x00074, 0x00073, 0x00074, 0x00574, 0x00576, 0x00574, 0x00565, 0x00574, 0x0056B,
    0x0057E, 0x00576, 0x00574, 0x0056D, 0x005D0, 0x005DC, 0x006D5, 0x00654, 0x006D5, 0x00654, 0x006D2, 0x00654,
    0x006D2, 0x00654, 0x006C7, 0x00674, 0x0064A, 0x00654, 0x00627, 0x0064A, 0x00654, 0x00627, 0x0064A, 0x00654,
    0x006D5, 0x0064A, 0x00654, 0x006D5, 0x0064A, 0x00654, 0x00648, 0x0064A, 0x00654, 0x00648, 0x0064A, 0x00654,
    0x006C7, 0x0064A, 0x00654, 0x006C7, 0x0064A, 0x00654, 0x006C6, 0x0064A, 0x00654, 0x006C6, 0x0064A, 0x00654,
    0x006C8, 0x0064A, 0x00654, 0x006C8, 0x0064A, 0x00654, 0x006D0, 0x0064A, 0x00654, 0x006D0, 0x0064A, 0x00654,
    0x006D0, 0x0064A, 0x00654, 0x00649, 0x0064A, 0x00654, 0x00649, 0x0064A, 0x00654, 0x00649, 0x0064A, 0x00654,
    0x0062C, 0x0064A, 0x00654, 0x0062D, 0x0064A, 0x00654, 0x00645, 0x0064A, 0x00654, 0x00649, 0x0064A, 0x00654,
    0x0064A, 0x00628, 0x0062C, 0x00628, 0x0062D, 0x00628, 0x0062E, 0x00628, 0x00645, 0x00628, 0x00649, 0x00628,
    0x0064A, 0x0062A, 0x0062C, 0x0062A, 0x0062D, 0x0062A, 0x0062E, 0x0062A, 0x00645, 0x0062A, 0x00649, 0x0062A,
    0x0064A, 0x0062B, 0x0062C, 0x0062B, 0x00645, 0x0062B, 0x00649, 0x0062B, 0x0064A, 0x0062C, 0x0062D, 0x0062C,
    0x00645, 0x0062D, 0x0062C, 0x0062D, 0x00645, 0x0062E, 0x0062C, 0x0062E, 0x0062D, 0x0062E, 0x00645, 0x00633,
    0x0062C, 0x00633, 0x0062D, 0x00633, 0x0062E, 0x00633, 0x00645, 0x00635, 0x0062D, 0x00635, 0x00645, 0x00636,
    0x0062C, 0x00636, 0x0062D, 0x00636, 0x0062E, 0x00636, 0x00645, 0x00637, 0x0062D, 0x00637, 0x00645, 0x00638,
    0x00645, 0x00639, 0x0062C, 0x00639, 0x00645, 0x0063A, 0x0062C, 0x0063A, 0x00645, 0x00641, 0x0062C, 0x00641,
    0x0062D, 0x00641, 0x0062E, 0x00641, 0x00645, 0x00641, 0x00649, 0x00641, 0x0064A, 0x00642, 0x0062D, 0x00642,
    0x00645, 0x00642, 0x00649, 0x00642, 0x0064A, 0x00643, 0x00627, 0x00643, 0x0062C, 0x00643, 0x0062D, 0x00643,
    0x0062E, 0x00643, 0x00644, 0x00643, 0x00645, 0x00643, 0x00649, 0x00643, 0x0064A, 0x00644, 0x0062C, 0x00644,
    0x0062D, 0x00644, 0x0062E, 0x00644, 0x00645, 0x00644, 0x00649, 0x00644, 0x0064A, 0x00645, 0x0062C, 0x00645,
    0x0062D, 0x00645, 0x0062E, 0x00645, 0x00645, 0x00645, 0x00649, 0x00645, 0x0064A, 0x00646, 0x0062C, 0x00646,
    0x0062D, 0x00646, 0x0062E, 0x00646, 0x00645, 0x00646, 0x00649, 0x00646, 0x0064A, 0x00647, 0x0062C, 0x00647,
    0x00645, 0x00647, 0x00649, 0x00647, 0x0064A, 0x0064A, 0x0062C, 0x0064A, 0x0062D, 0x0064A, 0x0062E, 0x0064A,
    0x00645, 0x0064A, 0x00649, 0x0064A, 0x0064A, 0x00630, 0x00670, 0x00631, 0x00670, 0x00649, 0x00670, 0x00020,
    0x0064C, 0x00651, 0x00020, 0x0064D, 0x00651, 0x00020, 0x0064E, 0x00651, 0x00020, 0x0064F, 0x00651, 0x00020,
    0x00650, 0x00651, 0x00020, 0x00651, 0x00670, 0x0064A, 0x00654, 0x00631, 0x0064A, 0x00654, 0x00632, 0x0064A,
    0x00654, 0x00645, 0x0064A, 0x00654, 0x00646, 0x0064A, 0x00654, 0x00649, 0x0064A, 0x00654, 0x0064A, 0x00628,
    0x00631, 0x00628, 0x00632, 0x00628, 0x00645, 0x00628, 0x00646, 0x00628, 0x00649, 0x00628, 0x0064A, 0x0062A,
    0x00631, 0x0062A, 0x00632, 0x0062A, 0x00645, 0x0062A, 0x00646, 0x0062A, 0x00649, 0x0062A, 0x0064A, 0x0062B,
    0x00631, 0x0062B, 0x00632, 0x0062B, 0x00645, 0x0062B, 0x00646, 0x0062B, 0x00649, 0x0062B, 0x0064A, 0x00641,
    0x00649, 0x00641, 0x0064A, 0x00642, 0x00649, 0x00642, 0x0064A, 0x00643, 0x00627, 0x00643, 0x00644, 0x00643,
    0x00645, 0x00643, 0x00649, 0x00643, 0x0064A, 0x00644, 0x00645, 0x00644, 0x00649, 0x00644, 0x0064A, 0x00645,
    0x00627, 0x00645, 0x00645, 0x00646, 0x00631, 0x00646, 0x00632, 0x00646, 0x00645, 0x00646, 0x00646, 0x00646,
    0x00649, 0x00646, 0x0064A, 0x00649, 0x00670, 0x0064A, 0x00631, 0x0064A, 0x00632, 0x0064A, 0x00645, 0x0064A,
    0x00646, 0x0064A, 0x00649, 0x0064A, 0x0064A, 0x0064A, 0x00654, 0x0062C, 0x0064A, 0x00654, 0x0062D, 0x0064A,
    0x00654, 0x0062E, 0x0064A, 0x00654, 0x00645, 0x0064A, 0x00654, 0x00647, 0x00628, 0x0062C, 0x00628, 0x0062D,
    0x00628, 0x0062E, 0x00628, 0x00645, 0x00628, 0x00647, 0x0062A, 0x0062C, 0x0062A, 0x0062D, 0x0062A, 0x0062E,
    0x0062A, 0x00645, 0x0062A, 0x00647, 0x0062B, 0x00645, 0x0062C, 0x0062D, 0x0062C, 0x00645, 0x0062D, 0x0062C,
    0x0062D, 0x00645, 0x0062E, 0x0062C, 0x0062E, 0x00645, 0x00633, 0x0062C, 0x00633, 0x0062D, 0x00633, 0x0062E,
    0x00633, 0x00645, 0x00635, 0x0062D, 0x00635, 0x0062E, 0x00635, 0x00645, 0x00636, 0x0062C, 0x00636, 0x0062D,
    0x00636, 0x0062E, 0x00636, 0x00645, 0x00637, 0x0062D, 0x00638, 0x00645, 0x00639, 0x0062C, 0x00639, 0x00645,
    0x0063A, 0x0062C, 0x0063A, 0x00645, 0x00641, 0x0062C, 0x00641, 0x0062D, 0x00641, 0x0062E, 0x00641, 0x00645,
    0x00642, 0x0062D, 0x00642, 0x00645, 0x00643, 0x0062C, 0x00643, 0x0062D, 0x00643, 0x0062E, 0x00643, 0x00644,
    0x00643, 0x00645, 0x00644, 0x0062C, 0x00644, 0x0062D, 0x00644, 0x0062E, 0x00644, 0x00645, 0x00644, 0x00647,
    0x00645, 0x0062C, 0x00645, 0x0062D, 0x00645, 0x0062E, 0x00645, 0x00645, 0x00646, 0x0062C, 0x00646, 0x0062D,
    0x00646, 0x0062E, 0x00646, 0x00645, 0x00646, 0x00647, 0x00647, 0x0062C, 0x00647, 0x00645, 0x00647, 0x00670,
    0x0064A, 0x0062C, 0x0064A, 0x0062D, 0x0064A, 0x0062E, 0x0064A, 0x00645, 0x0064A, 0x00647, 0x0064A, 0x00654,
    0x00645, 0x0064A, 0x00654, 0x00647, 0x00628, 0x00645, 0x00628, 0x00647, 0x0062A, 0x00645, 0x0062A, 0x00647,
    0x0062B, 0x00645, 0x0062B, 0x00647, 0x00633, 0x00645, 0x00633, 0x00647, 0x00634, 0x00645, 0x00634, 0x00647,
    0x00643, 0x00644, 0x00643, 0x00645, 0x00644, 0x00645, 0x00646, 0x00645, 0x00646, 0x00647, 0x0064A, 0x00645,
    0x0064A, 0x00647, 0x00640, 0x0064E, 0x00651, 0x00640, 0x0064F, 0x00651, 0x00640, 0x00650, 0x00651, 0x00637,
    0x00649, 0x00637, 0x0064A, 0x00639, 0x00649, 0x00639, 0x0064A, 0x0063A, 0x00649, 0x0063A, 0x0064A, 0x00633,
    0x00649, 0x00633, 0x0064A, 0x00634, 0x00649, 0x00634, 0x0064A, 0x0062D, 0x00649, 0x0062D, 0x0064A, 0x0062C,
    0x00649, 0x0062C, 0x0064A, 0x0062E, 0x00649, 0x0062E, 0x0064A, 0x00635, 0x00649, 0x00635, 0x0064A, 0x00636,
    0x00649, 0x00636, 0x0064A, 0x00634, 0x0062C, 0x00634, 0x0062D, 0x00634, 0x0062E, 0x00634, 0x00645, 0x00634,
    0x00631, 0x00633, 0x00631, 0x00635, 0x00631, 0x00636, 0x00631, 0x00637, 0x00649, 0x00637, 0x0064A, 0x00639,
    0x00649, 0x00639, 0x0064A, 0x0063A, 0x00649, 0x0063A, 0x0064A, 0x00633, 0x00649, 0x00633, 0x0064A, 0x00634,
    0x00649, 0x00634, 0x0064A, 0x0062D, 0x00649, 0x0062D, 0x0064A, 0x0062C, 0x00649, 0x0062C, 0x0064A, 0x0062E,
    0x00649, 0x0062E, 0x0064A, 0x00635, 0x00649, 0x00635, 0x0064A, 0x00636, 0x00649, 0x00636, 0x0064A, 0x00634,
    0x0062C, 0x00634, 0x0062D, 0x00634, 0x0062E, 0x00634, 0x00645, 0x00634, 0x00631, 0x00633, 0x00631, 0x00635,
    0x00631, 0x00636, 0x00631, 0x00634, 0x0062C, 0x00634, 0x0062D, 0x00634, 0x0062E, 0x00634, 0x00645, 0x00633,
    0x00647, 0x00634, 0x00647, 0x00637, 0x00645, 0x00633, 0x0062C, 0x00633, 0x0062D, 0x00633, 0x0062E, 0x00634,
    0x0062C, 0x00634, 0x0062D, 0x00634, 0x0062E, 0x00637, 0x00645, 0x00638, 0x00645, 0x00627, 0x0064B, 0x00627,
    0x0064B, 0x0062A, 0x0062C, 0x00645, 0x0062A, 0x0062D, 0x0062C, 0x0062A, 0x0062D, 0x0062C, 0x0062A, 0x0062D,
    0x00645, 0x0062A, 0x0062E, 0x00645, 0x0062A, 0x00645, 0x0062C, 0x0062A, 0x00645, 0x0062D, 0x0062A, 0x00645,
    0x0062E, 0x0062C, 0x00645, 0x0062D, 0x0062C, 0x00645, 0x0062D, 0x0062D, 0x00645, 0x0064A, 0x0062D, 0x00645,
    0x00649, 0x00633, 0x0062D, 0x0062C, 0x00633, 0x0062C, 0x0062D, 0x00633, 0x0062C, 0x00649, 0x00633, 0x00645,
    0x0062D, 0x00633, 0x00645, 0x0062D, 0x00633, 0x00645, 0x0062C, 0x00633, 0x00645, 0x00645, 0x00633, 0x00645,
    0x00645, 0x00635, 0x0062D, 0x0062D, 0x00635, 0x0062D, 0x0062D, 0x00635, 0x00645, 0x00645, 0x00634, 0x0062D,
    0x00645, 0x00634, 0x0062D, 0x00645, 0x00634, 0x0062C, 0x0064A, 0x00634, 0x00645, 0x0062E, 0x00634, 0x00645,
    0x0062E, 0x00634, 0x00645, 0x00645, 0x00634, 0x00645, 0x00645, 0x00636, 0x0062D, 0x00649, 0x00636, 0x0062E,
    0x00645, 0x00636, 0x0062E, 0x00645, 0x00637, 0x00645, 0x0062D, 0x00637, 0x00645, 0x0062D, 0x00637, 0x00645,
    0x00645, 0x00637, 0x00645, 0x0064A, 0x00639, 0x0062C, 0x00645, 0x00639, 0x00645, 0x00645, 0x00639, 0x00645,
    0x00645, 0x00639, 0x00645, 0x00649, 0x0063A, 0x00645, 0x00645, 0x0063A, 0x00645, 0x0064A, 0x0063A, 0x00645,
    0x00649, 0x00641, 0x0062E, 0x00645, 0x00641, 0x0062E, 0x00645, 0x00642, 0x00645, 0x0062D, 0x00642, 0x00645,
    0x00645, 0x00644, 0x0062D, 0x00645, 0x00644, 0x0062D, 0x0064A, 0x00644, 0x0062D, 0x00649, 0x00644, 0x0062C,
    0x0062C, 0x00644, 0x0062C, 0x0062C, 0x00644, 0x0062E, 0x00645, 0x00644, 0x0062E, 0x00645, 0x00644, 0x00645,
    0x0062D, 0x00644, 0x00645, 0x0062D, 0x00645, 0x0062D, 0x0062C, 0x00645, 0x0062D, 0x00645, 0x00645, 0x0062D,
    0x0064A, 0x00645, 0x0062C, 0x0062D, 0x00645, 0x0062C, 0x00645, 0x00645, 0x0062E, 0x0062C, 0x00645, 0x0062E,
    0x00645, 0x00645, 0x0062C, 0x0062E, 0x00647, 0x00645, 0x0062C, 0x00647, 0x00645, 0x00645, 0x00646, 0x0062D,
    0x00645, 0x00646, 0x0062D, 0x00649, 0x00646, 0x0062C, 0x00645, 0x00646, 0x0062C, 0x00645, 0x00646, 0x0062C,
    0x00649, 0x00646, 0x00645, 0x0064A, 0x00646, 0x00645, 0x00649, 0x0064A, 0x00645, 0x00645, 0x0064A, 0x00645,
    0x00645, 0x00628, 0x0062E, 0x0064A, 0x0062A, 0x0062C, 0x0064A, 0x0062A, 0x0062C, 0x00649, 0x0062A, 0x0062E,
    0x0064A, 0x0062A, 0x0062E, 0x00649, 0x0062A, 0x00645, 0x0064A, 0x0062A, 0x00645, 0x00649, 0x0062C, 0x00645,
    0x0064A, 0x0062C, 0x0062D, 0x00649, 0x0062C, 0x00645, 0x00649, 0x00633, 0x0062E, 0x00649, 0x00635, 0x0062D,
    0x0064A, 0x00634, 0x0062D, 0x0064A, 0x00636, 0x0062D, 0x0064A, 0x00644, 0x0062C, 0x0064A, 0x00644, 0x00645,
    0x0064A, 0x0064A, 0x0062D, 0x0064A, 0x0064A, 0x0062C, 0x0064A, 0x0064A, 0x00645, 0x0064A, 0x00645, 0x00645,
    0x0064A, 0x00642, 0x00645, 0x0064A, 0x00646, 0x0062D, 0x0064A, 0x00642, 0x00645, 0x0062D, 0x00644, 0x0062D,
    0x00645, 0x00639, 0x00645, 0x0064A, 0x00643, 0x00645, 0x0064A, 0x00646, 0x0062C, 0x0062D, 0x00645, 0x0062E,
    0x0064A, 0x00644, 0x0062C, 0x00645, 0x00643, 0x00645, 0x00645, 0x00644, 0x0062C, 0x00645, 0x00646, 0x0062C,
    0x0062D, 0x0062C, 0x0062D, 0x0064A, 0x0062D, 0x0062C, 0x0064A, 0x00645, 0x0062C, 0x0064A, 0x00641, 0x00645,
    0x0064A, 0x00628, 0x0062D, 0x0064A, 0x00643, 0x00645, 0x00645, 0x00639, 0x0062C, 0x00645, 0x00635, 0x00645,
    0x00645, 0x00633, 0x0062E, 0x0064A, 0x00646, 0x0062C, 0x0064A, 0x00635, 0x00644, 0x006D2, 0x00642, 0x00644,
    0x006D2, 0x00627, 0x00644, 0x00644, 0x00647, 0x00627, 0x00643, 0x00628, 0x00631, 0x00645, 0x0062D, 0x00645,
    0x0062F, 0x00635, 0x00644, 0x00639, 0x00645, 0x00631, 0x00633, 0x00648, 0x00644, 0x00639, 0x00644, 0x0064A,
    0x00647, 0x00648, 0x00633, 0x00644, 0x00645, 0x00635, 0x00644, 0x00649, 0x00635, 0x00644, 0x00649, 0x00020,
    0x00627, 0x00644, 0x00644, 0x00647, 0x00020, 0x00639, 0x00644, 0x0064A, 0x00647, 0x00020, 0x00648, 0x00633,
    0x00644, 0x00645, 0x0062C, 0x00644, 0x00020, 0x0062C, 0x00644, 0x00627, 0x00644, 0x00647, 0x00631, 0x006CC,
    0x00627, 0x00644, 0x0002E, 0x0002E, 0x0002E, 0x0002E, 0x0002E, 0x00020, 0x00305, 0x00020, 0x00305, 0x00020,
    0x00305, 0x00020, 0x00305, 0x00020, 0x0064B, 0x00640, 0x0064B, 0x00020, 0x0064C, 0x00020, 0x0064D, 0x00020,
    0x0064E, 0x00640, 0x0064E, 0x00020, 0x0064F, 0x00640, 0x0064F, 0x00020, 0x00650, 0x00640, 0x00650, 0x00020,
    0x00651, 0x00640, 0x00651, 0x00020, 0x00652, 0x00640, 0x00652, 0x00627, 0x00653, 0x00627, 0x00653, 0x00627,
    0x00654, 0x00627, 0x00654, 0x00648, 0x00654, 0x00648, 0x00654, 0x00627, 0x00655, 0x00627, 0x00655, 0x0064A,
    0x00654, 0x0064A, 0x00654, 0x0064A, 0x00654, 0x0064A, 0x00654, 0x00644, 0x00627, 0x00653, 0x00644, 0x00627,
    0x00653, 0x00644, 0x00627, 0x00654, 0x00644, 0x00627, 0x00654, 0x00644, 0x00627, 0x00655, 0x00644, 0x00627,
    0x00655, 0x00644, 0x00627, 0x00644, 0x00627, 0x00020, 0x00304, 0x00030, 0x0002E, 0x00030, 0x0002C, 0x00031,
    0x0002C, 0x00032, 0x0002C, 0x00033, 0x0002C, 0x00034, 0x0002C, 0x00035, 0x0002C, 0x00036, 0x0002C, 0x00037,
    0x0002C, 0x00038, 0x0002C, 0x00039, 0x0002C, 0x00028, 0x00041, 0x00029, 0x00028, 0x00042, 0x00029, 0x00028,
    0x00043, 0x00029, 0x00028, 0x00044, 0x00029, 0x00028, 0x00045, 0x00029, 0x00028, 0x00046, 0x00029, 0x00028,
    0x00047, 0x00029, 0x00028, 0x00048, 0x00029, 0x00028, 0x00049, 0x00029, 0x00028, 0x0004A, 0x00029, 0x00028,
    0x0004B, 0x00029, 0x00028, 0x0004C, 0x00029, 0x00028, 0x0004D, 0x00029, 0x00028, 0x0004E, 0x00029, 0x00028,
    0x0004F, 0x00029, 0x00028, 0x00050, 0x00029, 0x00028, 0x00051, 0x00029, 0x00028, 0x00052, 0x00029, 0x00028,
    0x00053, 0x00029, 0x00028, 0x00054, 0x00029, 0x00028, 0x00055, 0x00029, 0x00028, 0x00056, 0x00029, 0x00028,
    0x00057, 0x00029, 0x00028, 0x00058, 0x00029, 0x00028, 0x00059, 0x00029, 0x00028, 0x0005A, 0x00029, 0x03014,
    0x00053, 0x03015, 0x00043, 0x00044, 0x00057, 0x0005A, 0x00048, 0x00056, 0x0004D, 0x00056, 0x00053, 0x00044,
    0x00053, 0x00053, 0x00050, 0x00050, 0x00056, 0x00057, 0x00043, 0x0004D, 0x00043, 0x0004D, 0x00044, 0x00044,
    0x0004A, 0x0307B, 0x0304B, 0x030B3, 0x030B3, 0x030C6, 0x03099, 0x03014, 0x0672C, 0x03015, 0x03014, 0x04E09,
    0x03015, 0x03014, 0x04E8C, 0x03015, 0x03014, 0x05B89, 0x03015, 0x03014, 0x070B9, 0x03015, 0x03014, 0x06253,
    0x03015, 0x03014, 0x076D7, 0x03015, 0x03014, 0x052DD, 0x03015, 0x03014, 0x06557, 0x03015,
};
static const uint32_t pf__unicode_mark_runs[501] = {
    0x000000, 0x000601, 0x0006E0, 0x000907, 0x000914, 0x000B23, 0x000B7C, 0x000B7F, 0x000B80, 0x000B83,
    0x000B86, 0x000B89, 0x000B8C, 0x000B8F, 0x000B90, 0x000C21, 0x000C36, 0x000C97, 0x000CC0, 0x000CE1,
    0x000CE2, 0x000DAD, 0x000DBA, 0x000DBF, 0x000DCA, 0x000DCF, 0x000DD2, 0x000DD5, 0x000DDC, 0x000E23,
    0x000E24, 0x000E61, 0x000E96, 0x000F4D, 0x000F62, 0x000FD7, 0x000FE8, 0x00102D, 0x001034, 0x001037,
    0x001048, 0x00104B, 0x001050, 0x001053, 0x00105C, 0x0010B3, 0x0010B8, 0x0011A9, 0x0011C4, 0x0011C7,
    0x001208, 0x001275, 0x00127A, 0x00127D, 0x0012A0, 0x0012A3, 0x0012B0, 0x0012C5, 0x0012C8, 0x001303,
    0x001308, 0x001379, 0x00137A, 0x00137D, 0x00138A, 0x00138F, 0x001392, 0x001397, 0x00139C, 0x0013AF,
    0x0013B0, 0x0013C5, 0x0013C8, 0x001403, 0x001408, 0x001479, 0x00147A, 0x00147D, 0x001486, 0x00148F,
    0x001492, 0x001497, 0x00149C, 0x0014A3, 0x0014A4, 0x0014E1, 0x0014E4, 0x0014EB, 0x0014EC, 0x001503,
    0x001508, 0x001579, 0x00157A, 0x00157D, 0x00158C, 0x00158F, 0x001594, 0x001597, 0x00159C, 0x0015C5,
    0x0015C8, 0x001603, 0x001608, 0x001679, 0x00167A, 0x00167D, 0x00168A, 0x00168F, 0x001692, 0x001697,
    0x00169C, 0x0016AD, 0x0016B0, 0x0016C5, 0x0016C8, 0x001705, 0x001706, 0x00177D, 0x001786, 0x00178D,
    0x001792, 0x001795, 0x00179C, 0x0017AF, 0x0017B0, 0x001801, 0x001808, 0x00187D, 0x00188A, 0x00188D,
    0x001892, 0x001895, 0x00189C, 0x0018AB, 0x0018AE, 0x0018C5, 0x0018C8, 0x001903, 0x001908, 0x001979,
    0x00197A, 0x00197D, 0x00198A, 0x00198D, 0x001992, 0x001995, 0x00199C, 0x0019AB, 0x0019AE, 0x0019C5,
    0x0019C8, 0x001A03, 0x001A08, 0x001A7D, 0x001A8A, 0x001A8D, 0x001A92, 0x001A95, 0x001A9C, 0x001AAF,
    0x001AB0, 0x001AC5, 0x001AC8, 0x001B05, 0x001B08, 0x001B95, 0x001B96, 0x001B9F, 0x001BAA, 0x001BAD,
    0x001BAE, 0x001BB1, 0x001BC0, 0x001BE5, 0x001BE8, 0x001C63, 0x001C64, 0x001C69, 0x001C76, 0x001C8F,
    0x001C9E, 0x001D63, 0x001D64, 0x001D69, 0x001D74, 0x001D77, 0x001D7A, 0x001D91, 0x001D9C, 0x001E31,
    0x001E34, 0x001E6B, 0x001E6C, 0x001E6F, 0x001E70, 0x001E73, 0x001E74, 0x001E7D, 0x001E80, 0x001EE3,
    0x001F0A, 0x001F0D, 0x001F10, 0x001F1B, 0x001F30, 0x001F33, 0x001F7A, 0x001F8D, 0x001F8E, 0x002057,
    0x00207E, 0x0020AD, 0x0020B4, 0x0020BD, 0x0020C2, 0x0020C5, 0x0020CA, 0x0020CF, 0x0020DC, 0x0020E3,
    0x0020EA, 0x002105, 0x00211C, 0x00211F, 0x002120, 0x002135, 0x00213C, 0x0026BB, 0x0026C0, 0x002E25,
    0x002E2A, 0x002E65, 0x002E6A, 0x002EA5, 0x002EA8, 0x002EE5, 0x002EE8, 0x002F69, 0x002FA8, 0x002FBB,
    0x002FBC, 0x003017, 0x00301C, 0x00310B, 0x00310E, 0x003153, 0x003154, 0x003241, 0x003258, 0x003261,
    0x003278, 0x00342F, 0x003438, 0x0034AB, 0x0034BE, 0x0034C1, 0x0034FA, 0x0034FF, 0x003500, 0x003561,
    0x00357E, 0x003601, 0x00360A, 0x003669, 0x00368A, 0x0036D7, 0x0036E8, 0x003701, 0x003706, 0x003743,
    0x00375C, 0x0037CD, 0x0037E8, 0x003849, 0x003870, 0x0039A1, 0x0039A6, 0x0039A9, 0x0039D2, 0x0039DB,
    0x0039DC, 0x0039E5, 0x0039EA, 0x0039F1, 0x0039F4, 0x003B81, 0x003BEC, 0x003BF7, 0x003C00, 0x0041A1,
    0x0041E2, 0x0059DF, 0x0059E4, 0x005AFF, 0x005B00, 0x005BC1, 0x005C00, 0x006055, 0x006060, 0x006133,
    0x006136, 0x014CDF, 0x014CE6, 0x014CE9, 0x014CFC, 0x014D3D, 0x014D40, 0x014DE1, 0x014DE4, 0x015005,
    0x015006, 0x01500D, 0x01500E, 0x015017, 0x015018, 0x015047, 0x015050, 0x015101, 0x015104, 0x015169,
    0x01518C, 0x0151C1, 0x0151E4, 0x01524D, 0x01525C, 0x01528F, 0x0152A8, 0x015301, 0x015308, 0x015367,
    0x015382, 0x0153CB, 0x0153CC, 0x015453, 0x01546E, 0x015487, 0x015488, 0x015499, 0x01549C, 0x0154F7,
    0x0154FC, 0x015561, 0x015562, 0x015565, 0x01556A, 0x01556F, 0x015572, 0x01557D, 0x015580, 0x015583,
    0x015584, 0x0155D7, 0x0155E0, 0x0155EB, 0x0155EE, 0x0157C7, 0x0157D6, 0x0157D9, 0x0157DC, 0x01F63D,
    0x01F63E, 0x01FC01, 0x01FC20, 0x01FC41, 0x01FC60, 0x0203FB, 0x0203FC, 0x0205C1, 0x0205C2, 0x0206ED,
    0x0206F6, 0x021403, 0x021408, 0x02140B, 0x02140E, 0x021419, 0x021420, 0x021471, 0x021476, 0x02147F,
    0x021480, 0x0215CB, 0x0215CE, 0x022001, 0x022006, 0x022071, 0x02208E, 0x0220FF, 0x022106, 0x022161,
    0x022176, 0x022201, 0x022206, 0x02224F, 0x02226A, 0x0222E7, 0x0222E8, 0x022301, 0x022306, 0x022367,
    0x022382, 0x022395, 0x02239A, 0x022459, 0x022470, 0x02247D, 0x02247E, 0x0225BF, 0x0225D6, 0x022601,
    0x022608, 0x022679, 0x02267A, 0x02267D, 0x02268A, 0x02268F, 0x022692, 0x022697, 0x02269C, 0x0226AF,
    0x0226B0, 0x0226C5, 0x0226C8, 0x0226CD, 0x0226DA, 0x0226E1, 0x0226EA, 0x02286B, 0x02288E, 0x022961,
    0x022988, 0x022B5F, 0x022B6C, 0x022B71, 0x022B82, 0x022BB9, 0x022BBC, 0x022C61, 0x022C82, 0x022D57,
    0x022D70, 0x022E3B, 0x022E58, 0x02385F, 0x02386E, 0x023871, 0x023880, 0x023925, 0x023950, 0x023953,
    0x02396E, 0x02D5E1, 0x02D5EA, 0x02D661, 0x02D66E, 0x02DEA3, 0x02DEFE, 0x02DF1F, 0x02DF26, 0x03793B,
    0x03793E, 0x03A2CB, 0x03A2D4, 0x03A2DB, 0x03A2E6, 0x03A2F7, 0x03A306, 0x03A30B, 0x03A318, 0x03A355,
    0x03A35C, 0x03A485, 0x03A48A, 0x03B401, 0x03B46E, 0x03B477, 0x03B4DA, 0x03B4EB, 0x03B4EC, 0x03B509,
    0x03B50A, 0x03B537, 0x03B540, 0x03B543, 0x03B560, 0x03C001, 0x03C00E, 0x03C011, 0x03C032, 0x03C037,
    0x03C044, 0x03C047, 0x03C04A, 0x03C04D, 0x03C056, 0x03D1A1, 0x03D1AE, 0x03D289, 0x03D296, 0x1C0201,
    0x1C03E0,
};
static const uint32_t pf__unicode_grapheme_runs[1369] = {
    0x00000003, 0x00000A02, 0x00000B03, 0x00000D01, 0x00000E03, 0x00002000, 0x00007F03, 0x0000A000,
    0x0000A910, 0x0000AA00, 0x0000AD03, 0x0000AE10, 0x0000AF00, 0x00030064, 0x00037000, 0x00048364,
    0x00048A00, 0x00059164, 0x0005BE00, 0x0005BF64, 0x0005C000, 0x0005C164, 0x0005C300, 0x0005C464,
    0x0005C600, 0x0005C764, 0x0005C800, 0x00060007, 0x00060600, 0x00061064, 0x00061B00, 0x00061C03,
    0x00061D00, 0x00064B64, 0x00066000, 0x00067064, 0x00067100, 0x0006D664, 0x0006DD07, 0x0006DE00,
    0x0006DF64, 0x0006E500, 0x0006E764, 0x0006E900, 0x0006EA64, 0x0006EE00, 0x00070F07, 0x00071000,
    0x00071164, 0x00071200, 0x00073064, 0x00074B00, 0x0007A664, 0x0007B100, 0x0007EB64, 0x0007F400,
    0x0007FD64, 0x0007FE00, 0x00081664, 0x00081A00, 0x00081B64, 0x00082400, 0x00082564, 0x00082800,
    0x00082964, 0x00082E00, 0x00085964, 0x00085C00, 0x00089007, 0x00089200, 0x00089764, 0x0008A000,
    0x0008CA64, 0x0008E207, 0x0008E364, 0x00090308, 0x00090400, 0x00091520, 0x00093A64, 0x00093B08,
    0x00093C64, 0x00093D00, 0x00093E08, 0x00094164, 0x00094908, 0x00094D44, 0x00094E08, 0x00095000,
    0x00095164, 0x00095820, 0x00096000, 0x00096264, 0x00096400, 0x00097820, 0x00098000, 0x00098164,
    0x00098208, 0x00098400, 0x00099520, 0x0009A900, 0x0009AA20, 0x0009B100, 0x0009B220, 0x0009B300,
    0x0009B620, 0x0009BA00, 0x0009BC64, 0x0009BD00, 0x0009BE64, 0x0009BF08, 0x0009C164, 0x0009C500,
    0x0009C708, 0x0009C900, 0x0009CB08, 0x0009CD44, 0x0009CE00, 0x0009D764, 0x0009D800, 0x0009DC20,
    0x0009DE00, 0x0009DF20, 0x0009E000, 0x0009E264, 0x0009E400, 0x0009F020, 0x0009F200, 0x0009FE64,
    0x0009FF00, 0x000A0164, 0x000A0308, 0x000A0400, 0x000A3C64, 0x000A3D00, 0x000A3E08, 0x000A4164,
    0x000A4300, 0x000A4764, 0x000A4900, 0x000A4B64, 0x000A4E00, 0x000A5164, 0x000A5200, 0x000A7064,
    0x000A7200, 0x000A7564, 0x000A7600, 0x000A8164, 0x000A8308, 0x000A8400, 0x000A9520, 0x000AA900,
    0x000AAA20, 0x000AB100, 0x000AB220, 0x000AB400, 0x000AB520, 0x000ABA00, 0x000ABC64, 0x000ABD00,
    0x000ABE08, 0x000AC164, 0x000AC600, 0x000AC764, 0x000AC908, 0x000ACA00, 0x000ACB08, 0x000ACD44,
    0x000ACE00, 0x000AE264, 0x000AE400, 0x000AF920, 0x000AFA64, 0x000B0000, 0x000B0164, 0x000B0208,
    0x000B0400, 0x000B1520, 0x000B2900, 0x000B2A20, 0x000B3100, 0x000B3220, 0x000B3400, 0x000B3520,
    0x000B3A00, 0x000B3C64, 0x000B3D00, 0x000B3E64, 0x000B4008, 0x000B4164, 0x000B4500, 0x000B4708,
    0x000B4900, 0x000B4B08, 0x000B4D44, 0x000B4E00, 0x000B5564, 0x000B5800, 0x000B5C20, 0x000B5E00,
    0x000B5F20, 0x000B6000, 0x000B6264, 0x000B6400, 0x000B7120, 0x000B7200, 0x000B8264, 0x000B8300,
    0x000BBE64, 0x000BBF08, 0x000BC064, 0x000BC108, 0x000BC300, 0x000BC608, 0x000BC900, 0x000BCA08,
    0x000BCD64, 0x000BCE00, 0x000BD764, 0x000BD800, 0x000C0064, 0x000C0108, 0x000C0464, 0x000C0500,
    0x000C1520, 0x000C2900, 0x000C2A20, 0x000C3A00, 0x000C3C64, 0x000C3D00, 0x000C3E64, 0x000C4108,
    0x000C4500, 0x000C4664, 0x000C4900, 0x000C4A64, 0x000C4D44, 0x000C4E00, 0x000C5564, 0x000C5700,
    0x000C5820, 0x000C5B00, 0x000C6264, 0x000C6400, 0x000C8164, 0x000C8208, 0x000C8400, 0x000CBC64,
    0x000CBD00, 0x000CBE08, 0x000CBF64, 0x000CC108, 0x000CC264, 0x000CC308, 0x000CC500, 0x000CC664,
    0x000CC900, 0x000CCA64, 0x000CCE00, 0x000CD564, 0x000CD700, 0x000CE264, 0x000CE400, 0x000CF308,
    0x000CF400, 0x000D0064, 0x000D0208, 0x000D0400, 0x000D1520, 0x000D3B64, 0x000D3D00, 0x000D3E64,
    0x000D3F08, 0x000D4164, 0x000D4500, 0x000D4608, 0x000D4900, 0x000D4A08, 0x000D4D44, 0x000D4E07,
    0x000D4F00, 0x000D5764, 0x000D5800, 0x000D6264, 0x000D6400, 0x000D8164, 0x000D8208, 0x000D8400,
    0x000DCA64, 0x000DCB00, 0x000DCF64, 0x000DD008, 0x000DD264, 0x000DD500, 0x000DD664, 0x000DD700,
    0x000DD808, 0x000DDF64, 0x000DE000, 0x000DF208, 0x000DF400, 0x000E3164, 0x000E3200, 0x000E3308,
    0x000E3464, 0x000E3B00, 0x000E4764, 0x000E4F00, 0x000EB164, 0x000EB200, 0x000EB308, 0x000EB464,
    0x000EBD00, 0x000EC864, 0x000ECF00, 0x000F1864, 0x000F1A00, 0x000F3564, 0x000F3600, 0x000F3764,
    0x000F3800, 0x000F3964, 0x000F3A00, 0x000F3E08, 0x000F4000, 0x000F7164, 0x000F7F08, 0x000F8064,
    0x000F8500, 0x000F8664, 0x000F8800, 0x000F8D64, 0x000F9800, 0x000F9964, 0x000FBD00, 0x000FC664,
    0x000FC700, 0x00100020, 0x00102B00, 0x00102D64, 0x00103108, 0x00103264, 0x00103800, 0x00103944,
    0x00103A64, 0x00103B08, 0x00103D64, 0x00103F20, 0x00104000, 0x00105020, 0x00105608, 0x00105864,
    0x00105A20, 0x00105E64, 0x00106120, 0x00106200, 0x00106520, 0x00106700, 0x00106E20, 0x00107164,
    0x00107520, 0x00108264, 0x00108300, 0x00108408, 0x00108564, 0x00108700, 0x00108D64, 0x00108E20,
    0x00108F00, 0x00109D64, 0x00109E00, 0x00110009, 0x0011600A, 0x0011A80B, 0x00120000, 0x00135D64,
    0x00136000, 0x00171264, 0x00171600, 0x00173264, 0x00173500, 0x00175264, 0x00175400, 0x00177264,
    0x00177400, 0x00178020, 0x0017B464, 0x0017B608, 0x0017B764, 0x0017BE08, 0x0017C664, 0x0017C708,
    0x0017C964, 0x0017D244, 0x0017D364, 0x0017D400, 0x0017DD64, 0x0017DE00, 0x00180B64, 0x00180E03,
    0x00180F64, 0x00181000, 0x00188564, 0x00188700, 0x0018A964, 0x0018AA00, 0x00192064, 0x00192308,
    0x00192764, 0x00192908, 0x00192C00, 0x00193008, 0x00193264, 0x00193308, 0x00193964, 0x00193C00,
    0x001A1764, 0x001A1908, 0x001A1B64, 0x001A1C00, 0x001A2020, 0x001A5508, 0x001A5664, 0x001A5708,
    0x001A5864, 0x001A5F00, 0x001A6044, 0x001A6100, 0x001A6264, 0x001A6300, 0x001A6564, 0x001A6D08,
    0x001A7364, 0x001A7D00, 0x001A7F64, 0x001A8000, 0x001AB064, 0x001ADE00, 0x001AE064, 0x001AEC00,
    0x001B0064, 0x001B0408, 0x001B0500, 0x001B0B20, 0x001B0D00, 0x001B1320, 0x001B3464, 0x001B3E08,
    0x001B4264, 0x001B4444, 0x001B4520, 0x001B4D00, 0x001B6B64, 0x001B7400, 0x001B8064, 0x001B8208,
    0x001B8320, 0x001BA108, 0x001BA264, 0x001BA608, 0x001BA864, 0x001BAB44, 0x001BAC64, 0x001BAE20,
    0x001BB000, 0x001BBB20, 0x001BBE00, 0x001BE664, 0x001BE708, 0x001BE864, 0x001BEA08, 0x001BED64,
    0x001BEE08, 0x001BEF64, 0x001BF400, 0x001C2408, 0x001C2C64, 0x001C3408, 0x001C3664, 0x001C3800,
    0x001CD064, 0x001CD300, 0x001CD464, 0x001CE108, 0x001CE264, 0x001CE900, 0x001CED64, 0x001CEE00,
    0x001CF464, 0x001CF500, 0x001CF708, 0x001CF864, 0x001CFA00, 0x001DC064, 0x001E0000, 0x00200B03,
    0x00200C04, 0x00200D65, 0x00200E03, 0x00201000, 0x00202803, 0x00202F00, 0x00203C10, 0x00203D00,
    0x00204910, 0x00204A00, 0x00206003, 0x00207000, 0x0020D064, 0x0020F100, 0x00212210, 0x00212300,
    0x00213910, 0x00213A00, 0x00219410, 0x00219A00, 0x0021A910, 0x0021AB00, 0x00231A10, 0x00231C00,
    0x00232810, 0x00232900, 0x0023CF10, 0x0023D000, 0x0023E910, 0x0023F400, 0x0023F810, 0x0023FB00,
    0x0024C210, 0x0024C300, 0x0025AA10, 0x0025AC00, 0x0025B610, 0x0025B700, 0x0025C010, 0x0025C100,
    0x0025FB10, 0x0025FF00, 0x00260010, 0x00260500, 0x00260E10, 0x00260F00, 0x00261110, 0x00261200,
    0x00261410, 0x00261600, 0x00261810, 0x00261900, 0x00261D10, 0x00261E00, 0x00262010, 0x00262100,
    0x00262210, 0x00262400, 0x00262610, 0x00262700, 0x00262A10, 0x00262B00, 0x00262E10, 0x00263000,
    0x00263810, 0x00263B00, 0x00264010, 0x00264100, 0x00264210, 0x00264300, 0x00264810, 0x00265400,
    0x00265F10, 0x00266100, 0x00266310, 0x00266400, 0x00266510, 0x00266700, 0x00266810, 0x00266900,
    0x00267B10, 0x00267C00, 0x00267E10, 0x00268000, 0x00269210, 0x00269800, 0x00269910, 0x00269A00,
    0x00269B10, 0x00269D00, 0x0026A010, 0x0026A200, 0x0026A710, 0x0026A800, 0x0026AA10, 0x0026AC00,
    0x0026B010, 0x0026B200, 0x0026BD10, 0x0026BF00, 0x0026C410, 0x0026C600, 0x0026C810, 0x0026C900,
    0x0026CE10, 0x0026D000, 0x0026D110, 0x0026D200, 0x0026D310, 0x0026D500, 0x0026E910, 0x0026EB00,
    0x0026F010, 0x0026F600, 0x0026F710, 0x0026FB00, 0x0026FD10, 0x0026FE00, 0x00270210, 0x00270300,
    0x00270510, 0x00270600, 0x00270810, 0x00270E00, 0x00270F10, 0x00271000, 0x00271210, 0x00271300,
    0x00271410, 0x00271500, 0x00271610, 0x00271700, 0x00271D10, 0x00271E00, 0x00272110, 0x00272200,
    0x00272810, 0x00272900, 0x00273310, 0x00273500, 0x00274410, 0x00274500, 0x00274710, 0x00274800,
    0x00274C10, 0x00274D00, 0x00274E10, 0x00274F00, 0x00275310, 0x00275600, 0x00275710, 0x00275800,
    0x00276310, 0x00276500, 0x00279510, 0x00279800, 0x0027A110, 0x0027A200, 0x0027B010, 0x0027B100,
    0x0027BF10, 0x0027C000, 0x00293410, 0x00293600, 0x002B0510, 0x002B0800, 0x002B1B10, 0x002B1D00,
    0x002B5010, 0x002B5100, 0x002B5510, 0x002B5600, 0x002CEF64, 0x002CF200, 0x002D7F64, 0x002D8000,
    0x002DE064, 0x002E0000, 0x00302A64, 0x00303010, 0x00303100, 0x00303D10, 0x00303E00, 0x00309964,
    0x00309B00, 0x00329710, 0x00329800, 0x00329910, 0x00329A00, 0x00A66F64, 0x00A67300, 0x00A67464,
    0x00A67E00, 0x00A69E64, 0x00A6A000, 0x00A6F064, 0x00A6F200, 0x00A80264, 0x00A80300, 0x00A80664,
    0x00A80700, 0x00A80B64, 0x00A80C00, 0x00A82308, 0x00A82564, 0x00A82708, 0x00A82800, 0x00A82C64,
    0x00A82D00, 0x00A88008, 0x00A88200, 0x00A8B408, 0x00A8C464, 0x00A8C600, 0x00A8E064, 0x00A8F200,
    0x00A8FF64, 0x00A90000, 0x00A92664, 0x00A92E00, 0x00A94764, 0x00A95208, 0x00A95364, 0x00A95400,
    0x00A96009, 0x00A97D00, 0x00A98064, 0x00A98308, 0x00A98400, 0x00A98920, 0x00A98C00, 0x00A98F20,
    0x00A9B364, 0x00A9B408, 0x00A9B664, 0x00A9BA08, 0x00A9BC64, 0x00A9BE08, 0x00A9C044, 0x00A9C100,
    0x00A9E020, 0x00A9E564, 0x00A9E600, 0x00A9E720, 0x00A9F000, 0x00A9FA20, 0x00A9FF00, 0x00AA2964,
    0x00AA2F08, 0x00AA3164, 0x00AA3308, 0x00AA3564, 0x00AA3700, 0x00AA4364, 0x00AA4400, 0x00AA4C64,
    0x00AA4D08, 0x00AA4E00, 0x00AA6020, 0x00AA7000, 0x00AA7120, 0x00AA7400, 0x00AA7A20, 0x00AA7B00,
    0x00AA7C64, 0x00AA7D00, 0x00AA7E20, 0x00AA8000, 0x00AAB064, 0x00AAB100, 0x00AAB264, 0x00AAB500,
    0x00AAB764, 0x00AAB900, 0x00AABE64, 0x00AAC000, 0x00AAC164, 0x00AAC200, 0x00AAE020, 0x00AAEB08,
    0x00AAEC64, 0x00AAEE08, 0x00AAF000, 0x00AAF508, 0x00AAF644, 0x00AAF700, 0x00ABC020, 0x00ABDB00,
    0x00ABE308, 0x00ABE564, 0x00ABE608, 0x00ABE864, 0x00ABE908, 0x00ABEB00, 0x00ABEC08, 0x00ABED64,
    0x00ABEE00, 0x00D7B00A, 0x00D7C700, 0x00D7CB0B, 0x00D7FC00, 0x00FB1E64, 0x00FB1F00, 0x00FE0064,
    0x00FE1000, 0x00FE2064, 0x00FE3000, 0x00FEFF03, 0x00FF0000, 0x00FF9E64, 0x00FFA000, 0x00FFF003,
    0x00FFFC00, 0x0101FD64, 0x0101FE00, 0x0102E064, 0x0102E100, 0x01037664, 0x01037B00, 0x010A0020,
    0x010A0164, 0x010A0400, 0x010A0564, 0x010A0700, 0x010A0C64, 0x010A1020, 0x010A1400, 0x010A1520,
    0x010A1800, 0x010A1920, 0x010A3600, 0x010A3864, 0x010A3B00, 0x010A3F44, 0x010A4000, 0x010AE564,
    0x010AE700, 0x010D2464, 0x010D2800, 0x010D6964, 0x010D6E00, 0x010EAB64, 0x010EAD00, 0x010EFA64,
    0x010F0000, 0x010F4664, 0x010F5100, 0x010F8264, 0x010F8600, 0x01100008, 0x01100164, 0x01100208,
    0x01100300, 0x01103864, 0x01104700, 0x01107064, 0x01107100, 0x01107364, 0x01107500, 0x01107F64,
    0x01108208, 0x01108300, 0x0110B008, 0x0110B364, 0x0110B708, 0x0110B964, 0x0110BB00, 0x0110BD07,
    0x0110BE00, 0x0110C264, 0x0110C300, 0x0110CD07, 0x0110CE00, 0x01110064, 0x01110320, 0x01112764,
    0x01112C08, 0x01112D64, 0x01113344, 0x01113464, 0x01113500, 0x01114420, 0x01114508, 0x01114720,
    0x01114800, 0x01117364, 0x01117400, 0x01118064, 0x01118208, 0x01118300, 0x0111B308, 0x0111B664,
    0x0111BF08, 0x0111C064, 0x0111C100, 0x0111C207, 0x0111C400, 0x0111C964, 0x0111CD00, 0x0111CE08,
    0x0111CF64, 0x0111D000, 0x01122C08, 0x01122F64, 0x01123208, 0x01123464, 0x01123800, 0x01123E64,
    0x01123F00, 0x01124164, 0x01124200, 0x0112DF64, 0x0112E008, 0x0112E364, 0x0112EB00, 0x01130064,
    0x01130208, 0x01130400, 0x01133B64, 0x01133D00, 0x01133E64, 0x01133F08, 0x01134064, 0x01134108,
    0x01134500, 0x01134708, 0x01134900, 0x01134B08, 0x01134D64, 0x01134E00, 0x01135764, 0x01135800,
    0x01136208, 0x01136400, 0x01136664, 0x01136D00, 0x01137064, 0x01137500, 0x01138020, 0x01138A00,
    0x01138B20, 0x01138C00, 0x01138E20, 0x01138F00, 0x01139020, 0x0113B600, 0x0113B864, 0x0113B908,
    0x0113BB64, 0x0113C100, 0x0113C264, 0x0113C300, 0x0113C564, 0x0113C600, 0x0113C764, 0x0113CA08,
    0x0113CB00, 0x0113CC08, 0x0113CE64, 0x0113D044, 0x0113D107, 0x0113D264, 0x0113D300, 0x0113E164,
    0x0113E300, 0x01143508, 0x01143864, 0x01144008, 0x01144264, 0x01144508, 0x01144664, 0x01144700,
    0x01145E64, 0x01145F00, 0x0114B064, 0x0114B108, 0x0114B364, 0x0114B908, 0x0114BA64, 0x0114BB08,
    0x0114BD64, 0x0114BE08, 0x0114BF64, 0x0114C108, 0x0114C264, 0x0114C400, 0x0115AF64, 0x0115B008,
    0x0115B264, 0x0115B600, 0x0115B808, 0x0115BC64, 0x0115BE08, 0x0115BF64, 0x0115C100, 0x0115DC64,
    0x0115DE00, 0x01163008, 0x01163364, 0x01163B08, 0x01163D64, 0x01163E08, 0x01163F64, 0x01164100,
    0x0116AB64, 0x0116AC08, 0x0116AD64, 0x0116AE08, 0x0116B064, 0x0116B800, 0x01171D64, 0x01171E08,
    0x01171F64, 0x01172000, 0x01172264, 0x01172608, 0x01172764, 0x01172C00, 0x01182C08, 0x01182F64,
    0x01183808, 0x01183964, 0x01183B00, 0x01190020, 0x01190700, 0x01190920, 0x01190A00, 0x01190C20,
    0x01191400, 0x01191520, 0x01191700, 0x01191820, 0x01193064, 0x01193108, 0x01193600, 0x01193708,
    0x01193900, 0x01193B64, 0x01193E44, 0x01193F07, 0x01194008, 0x01194107, 0x01194208, 0x01194364,
    0x01194400, 0x0119D108, 0x0119D464, 0x0119D800, 0x0119DA64, 0x0119DC08, 0x0119E064, 0x0119E100,
    0x0119E408, 0x0119E500, 0x011A0020, 0x011A0164, 0x011A0B20, 0x011A3364, 0x011A3908, 0x011A3A00,
    0x011A3B64, 0x011A3F00, 0x011A4744, 0x011A4800, 0x011A5020, 0x011A5164, 0x011A5708, 0x011A5964,
    0x011A5C20, 0x011A8407, 0x011A8A64, 0x011A9708, 0x011A9864, 0x011A9944, 0x011A9A00, 0x011B6064,
    0x011B6108, 0x011B6264, 0x011B6508, 0x011B6664, 0x011B6708, 0x011B6800, 0x011C2F08, 0x011C3064,
    0x011C3700, 0x011C3864, 0x011C3E08, 0x011C3F64, 0x011C4000, 0x011C9264, 0x011CA800, 0x011CA908,
    0x011CAA64, 0x011CB108, 0x011CB264, 0x011CB408, 0x011CB564, 0x011CB700, 0x011D3164, 0x011D3700,
    0x011D3A64, 0x011D3B00, 0x011D3C64, 0x011D3E00, 0x011D3F64, 0x011D4607, 0x011D4764, 0x011D4800,
    0x011D8A08, 0x011D8F00, 0x011D9064, 0x011D9200, 0x011D9308, 0x011D9564, 0x011D9608, 0x011D9764,
    0x011D9800, 0x011EF364, 0x011EF508, 0x011EF700, 0x011F0064, 0x011F0207, 0x011F0308, 0x011F0420,
    0x011F1100, 0x011F1220, 0x011F3408, 0x011F3664, 0x011F3B00, 0x011F3E08, 0x011F4064, 0x011F4244,
    0x011F4300, 0x011F5A64, 0x011F5B00, 0x01343003, 0x01344064, 0x01344100, 0x01344764, 0x01345600,
    0x01611E64, 0x01612A08, 0x01612D64, 0x01613000, 0x016AF064, 0x016AF500, 0x016B3064, 0x016B3700,
    0x016D630A, 0x016D6400, 0x016D670A, 0x016D6B00, 0x016F4F64, 0x016F5000, 0x016F5108, 0x016F8800,
    0x016F8F64, 0x016F9300, 0x016FE464, 0x016FE500, 0x016FF064, 0x016FF200, 0x01BC9D64, 0x01BC9F00,
    0x01BCA003, 0x01BCA400, 0x01CF0064, 0x01CF2E00, 0x01CF3064, 0x01CF4700, 0x01D16564, 0x01D16A00,
    0x01D16D64, 0x01D17303, 0x01D17B64, 0x01D18300, 0x01D18564, 0x01D18C00, 0x01D1AA64, 0x01D1AE00,
    0x01D24264, 0x01D24500, 0x01DA0064, 0x01DA3700, 0x01DA3B64, 0x01DA6D00, 0x01DA7564, 0x01DA7600,
    0x01DA8464, 0x01DA8500, 0x01DA9B64, 0x01DAA000, 0x01DAA164, 0x01DAB000, 0x01E00064, 0x01E00700,
    0x01E00864, 0x01E01900, 0x01E01B64, 0x01E02200, 0x01E02364, 0x01E02500, 0x01E02664, 0x01E02B00,
    0x01E08F64, 0x01E09000, 0x01E13064, 0x01E13700, 0x01E2AE64, 0x01E2AF00, 0x01E2EC64, 0x01E2F000,
    0x01E4EC64, 0x01E4F000, 0x01E5EE64, 0x01E5F000, 0x01E6E364, 0x01E6E400, 0x01E6E664, 0x01E6E700,
    0x01E6EE64, 0x01E6F000, 0x01E6F564, 0x01E6F600, 0x01E8D064, 0x01E8D700, 0x01E94464, 0x01E94B00,
    0x01F00410, 0x01F00500, 0x01F02C10, 0x01F03000, 0x01F09410, 0x01F0A000, 0x01F0AF10, 0x01F0B100,
    0x01F0C010, 0x01F0C100, 0x01F0CF10, 0x01F0D100, 0x01F0F610, 0x01F10000, 0x01F17010, 0x01F17200,
    0x01F17E10, 0x01F18000, 0x01F18E10, 0x01F18F00, 0x01F19110, 0x01F19B00, 0x01F1AE10, 0x01F1E606,
    0x01F20000, 0x01F20110, 0x01F21000, 0x01F21A10, 0x01F21B00, 0x01F22F10, 0x01F23000, 0x01F23210,
    0x01F23B00, 0x01F23C10, 0x01F24000, 0x01F24910, 0x01F26000, 0x01F26610, 0x01F32200, 0x01F32410,
    0x01F39400, 0x01F39610, 0x01F39800, 0x01F39910, 0x01F39C00, 0x01F39E10, 0x01F3F100, 0x01F3F310,
    0x01F3F600, 0x01F3F710, 0x01F3FB64, 0x01F40010, 0x01F4FE00, 0x01F4FF10, 0x01F53E00, 0x01F54910,
    0x01F54F00, 0x01F55010, 0x01F56800, 0x01F56F10, 0x01F57100, 0x01F57310, 0x01F57B00, 0x01F58710,
    0x01F58800, 0x01F58A10, 0x01F58E00, 0x01F59010, 0x01F59100, 0x01F59510, 0x01F59700, 0x01F5A410,
    0x01F5A600, 0x01F5A810, 0x01F5A900, 0x01F5B110, 0x01F5B300, 0x01F5BC10, 0x01F5BD00, 0x01F5C210,
    0x01F5C500, 0x01F5D110, 0x01F5D400, 0x01F5DC10, 0x01F5DF00, 0x01F5E110, 0x01F5E200, 0x01F5E310,
    0x01F5E400, 0x01F5E810, 0x01F5E900, 0x01F5EF10, 0x01F5F000, 0x01F5F310, 0x01F5F400, 0x01F5FA10,
    0x01F65000, 0x01F68010, 0x01F6C600, 0x01F6CB10, 0x01F6D300, 0x01F6D510, 0x01F6E600, 0x01F6E910,
    0x01F6EA00, 0x01F6EB10, 0x01F6F100, 0x01F6F310, 0x01F70000, 0x01F7DA10, 0x01F80000, 0x01F80C10,
    0x01F81000, 0x01F84810, 0x01F85000, 0x01F85A10, 0x01F86000, 0x01F88810, 0x01F89000, 0x01F8AE10,
    0x01F8B000, 0x01F8BC10, 0x01F8C000, 0x01F8C210, 0x01F8D000, 0x01F8D910, 0x01F90000, 0x01F90C10,
    0x01F93B00, 0x01F93C10, 0x01F94600, 0x01F94710, 0x01FA0000, 0x01FA5810, 0x01FA6000, 0x01FA6E10,
    0x01FB0000, 0x01FC0010, 0x01FFFE00, 0x0E000003, 0x0E002064, 0x0E008003, 0x0E010064, 0x0E01F003,
    0x0E100000,
};
/* END GENERATED UNICODE TABLES */

/* The PF__UC_* flags of a code point (0 for PF__UTF8_INVALID and raw bytes). */
static unsigned pf__unicode_class(uint32_t cp) {
    size_t lo = 0, hi = PF__TOK_LEN(pf__unicode_classes);
    if (cp < 0x80) return pf__unicode_ascii[cp];
    if (cp > 0x10FFFF) return 0;
    while (hi - lo > 1) { /* the last entry whose start <= cp; entry 0 starts at 0 */
        size_t mid = lo + (hi - lo) / 2;
        if ((pf__unicode_classes[mid] >> 8) <= cp) lo = mid;
        else hi = mid;
    }
    return pf__unicode_classes[lo] & 0xFF;
}

/* The lowercase of a code point (one code point; U+0130 is the caller's: "i" U+0307). */
static uint32_t pf__unicode_lower(uint32_t cp) {
    size_t lo = 0, hi = PF__TOK_LEN(pf__unicode_lower_runs);
    uint32_t start, count, stride;
    if (cp < 0x80) return cp - 'A' < 26 ? cp + 32 : cp;
    if (cp > 0x10FFFF || cp < (uint32_t)(pf__unicode_lower_runs[0] >> 43)) return cp;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if ((uint32_t)(pf__unicode_lower_runs[mid] >> 43) <= cp) lo = mid;
        else hi = mid;
    }
    start = (uint32_t)(pf__unicode_lower_runs[lo] >> 43);
    count = (uint32_t)(pf__unicode_lower_runs[lo] >> 33) & 0x3FF;
    stride = (uint32_t)((pf__unicode_lower_runs[lo] >> 32) & 1) + 1;
    if ((cp - start) % stride || (cp - start) / stride >= count) return cp;
    return cp + (uint32_t)pf__unicode_lower_runs[lo]; /* delta, modulo 2^32 */
}

/* The canonical combining class of a code point as HF's normalization sees it. */
static unsigned pf__unicode_ccc(uint32_t cp) {
    size_t lo = 0, hi = PF__TOK_LEN(pf__unicode_ccc_runs);
    if (cp < 0x300 || cp > 0x10FFFF) return 0;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if ((pf__unicode_ccc_runs[mid] >> 8) <= cp) lo = mid;
        else hi = mid;
    }
    return pf__unicode_ccc_runs[lo] & 0xFF;
}

#define PF__HANGUL_S 0xAC00u
#define PF__HANGUL_L 0x1100u
#define PF__HANGUL_V 0x1161u
#define PF__HANGUL_T 0x11A7u
#define PF__HANGUL_VCOUNT 21u
#define PF__HANGUL_TCOUNT 28u
#define PF__HANGUL_SCOUNT (19u * 21u * 28u)

/* The one-level canonical decomposition of cp: its entry in pf__unicode_decomp, or -1. */
static long pf__unicode_decomp_find(uint32_t cp) {
    size_t lo = 0, hi = PF__TOK_LEN(pf__unicode_decomp);
    if (cp < 0xC0 || cp > 0x10FFFF) return -1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uint32_t key = (uint32_t)(pf__unicode_decomp[mid] >> 42);
        if (key == cp) return (long)mid;
        if (key < cp) lo = mid + 1;
        else hi = mid;
    }
    return -1;
}

/* The primary composite of the pair (a, b), or 0. */
static uint32_t pf__unicode_compose(uint32_t a, uint32_t b) {
    uint64_t key;
    size_t lo = 0, hi = PF__TOK_LEN(pf__unicode_comp);
    if (a - PF__HANGUL_L < 19 && b - PF__HANGUL_V < PF__HANGUL_VCOUNT)
        return PF__HANGUL_S + ((a - PF__HANGUL_L) * PF__HANGUL_VCOUNT + (b - PF__HANGUL_V)) * PF__HANGUL_TCOUNT;
    if (a - PF__HANGUL_S < PF__HANGUL_SCOUNT && (a - PF__HANGUL_S) % PF__HANGUL_TCOUNT == 0 &&
        b - PF__HANGUL_T - 1 < PF__HANGUL_TCOUNT - 1)
        return a + (b - PF__HANGUL_T);
    if ((a | b) & PF__CP_RAW) return 0;
    key = (uint64_t)a << 21 | b;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uint64_t k = pf__unicode_comp[mid] >> 21;
        if (k == key) return (uint32_t)(pf__unicode_comp[mid] & 0x1FFFFF);
        if (k < key) lo = mid + 1;
        else hi = mid;
    }
    return 0;
}

/* Whether HF's StripAccents drops cp (the normalization crate's is_combining_mark). */
static int pf__unicode_is_mark(uint32_t cp) {
    size_t lo = 0, hi = PF__TOK_LEN(pf__unicode_mark_runs);
    if (cp > 0x10FFFF || cp < (pf__unicode_mark_runs[0] >> 1)) return 0;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if ((pf__unicode_mark_runs[mid] >> 1) <= cp) lo = mid;
        else hi = mid;
    }
    return (int)(pf__unicode_mark_runs[lo] & 1);
}

/* ---- growable buffers ---- */

typedef struct pf__tok_buf { /* bytes */
    unsigned char *p;
    size_t len, cap;
} pf__tok_buf;

typedef struct pf__tok_cps { /* code points */
    uint32_t *p;
    size_t len, cap;
} pf__tok_cps;

static int pf__tok_grow(void **p, size_t *cap, size_t need, size_t elem) {
    size_t c = *cap ? *cap : 64;
    void *q;
    if (need <= *cap) return 0;
    while (c < need) {
        if (c > ((size_t)-1) / 4 / elem) return -1;
        c *= 2;
    }
    q = realloc(*p, c * elem);
    if (!q) return -1;
    *p = q;
    *cap = c;
    return 0;
}

static int pf__buf_put(pf__tok_buf *b, const void *s, size_t n) {
    if (b->len + n < b->len || pf__tok_grow((void **)&b->p, &b->cap, b->len + n, 1)) return -1;
    if (n) memcpy(b->p + b->len, s, n);
    b->len += n;
    return 0;
}

static int pf__buf_put_cp(pf__tok_buf *b, uint32_t cp) {
    unsigned char u[4];
    return pf__buf_put(b, u, pf__utf8_encode(cp, u));
}

static int pf__cps_put(pf__tok_cps *b, uint32_t cp) {
    if (pf__tok_grow((void **)&b->p, &b->cap, b->len + 1, sizeof *b->p)) return -1;
    b->p[b->len++] = cp;
    return 0;
}

/* Replaces every occurrence of pat in s[0 .. n) by rep, leftmost first and not overlapping (an
   empty pat matches at every character boundary, as Rust's str::replace), appending to out. */
static int pf__buf_replace(pf__tok_buf *out, const unsigned char *s, size_t n, const char *pat, size_t pat_len,
                           const char *rep, size_t rep_len) {
    size_t i = 0, done = 0;
    uint32_t cp;
    if (pat_len == 0) {
        for (i = 0; i < n; i += pf__utf8_decode(s + i, n - i, &cp))
            if (pf__buf_put(out, rep, rep_len) || pf__buf_put(out, s + i, pf__utf8_decode(s + i, n - i, &cp)))
                return -1;
        return pf__buf_put(out, rep, rep_len);
    }
    while (i + pat_len <= n) {
        if (s[i] == (unsigned char)pat[0] && !memcmp(s + i, pat, pat_len)) {
            if (pf__buf_put(out, s + done, i - done) || pf__buf_put(out, rep, rep_len)) return -1;
            i += pat_len;
            done = i;
        } else {
            i++;
        }
    }
    return pf__buf_put(out, s + done, n - done);
}

/* ---- canonical normalization (NFD / NFC) ---- */

/* Appends the full canonical decomposition of cp. */
static int pf__nf_decompose(pf__tok_cps *out, uint32_t cp, int depth) {
    long k;
    if (cp - PF__HANGUL_S < PF__HANGUL_SCOUNT) {
        uint32_t s = cp - PF__HANGUL_S, t = s % PF__HANGUL_TCOUNT;
        if (pf__cps_put(out, PF__HANGUL_L + s / (PF__HANGUL_VCOUNT * PF__HANGUL_TCOUNT)) ||
            pf__cps_put(out, PF__HANGUL_V + s % (PF__HANGUL_VCOUNT * PF__HANGUL_TCOUNT) / PF__HANGUL_TCOUNT))
            return -1;
        return t ? pf__cps_put(out, PF__HANGUL_T + t) : 0;
    }
    k = depth < 8 ? pf__unicode_decomp_find(cp) : -1;
    if (k < 0) return pf__cps_put(out, cp);
    {
        uint32_t a = (uint32_t)(pf__unicode_decomp[k] >> 21) & 0x1FFFFF, b = (uint32_t)pf__unicode_decomp[k] & 0x1FFFFF;
        if (pf__nf_decompose(out, a, depth + 1)) return -1;
        return b ? pf__nf_decompose(out, b, depth + 1) : 0;
    }
}

/* Appends HF's NFKD of cp where it differs from its NFD: 1 when it did, 0 when cp has none, -1
   when out of memory. */
static int pf__nf_decompose_compat(pf__tok_cps *out, uint32_t cp) {
    size_t lo = 0, hi = PF__TOK_LEN(pf__unicode_compat_runs), i, n;
    if (cp > 0x10FFFF) return 0;
    if (cp >= (uint32_t)(pf__unicode_compat_runs[0] >> 43)) {
        while (hi - lo > 1) {
            size_t mid = lo + (hi - lo) / 2;
            if ((uint32_t)(pf__unicode_compat_runs[mid] >> 43) <= cp) lo = mid;
            else hi = mid;
        }
        if (cp - (uint32_t)(pf__unicode_compat_runs[lo] >> 43) < ((pf__unicode_compat_runs[lo] >> 33) & 0x3FF))
            return pf__cps_put(out, cp + (uint32_t)pf__unicode_compat_runs[lo]) ? -1 : 1; /* delta, modulo 2^32 */
    }
    lo = 0;
    hi = PF__TOK_LEN(pf__unicode_compat_multi);
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uint32_t key = (uint32_t)(pf__unicode_compat_multi[mid] >> 32);
        if (key == cp) {
            i = (size_t)(pf__unicode_compat_multi[mid] >> 8) & 0xFFFFFF;
            for (n = i + (pf__unicode_compat_multi[mid] & 0xFF); i < n; i++)
                if (pf__cps_put(out, pf__unicode_compat_chars[i])) return -1;
            return 1;
        }
        if (key < cp) lo = mid + 1;
        else hi = mid;
    }
    return 0;
}

/* Sorts each run of non-starters by combining class, stably (insertion sort for short runs,
   counting sort for long ones, so that no input is quadratic). tmp is scratch. */
static int pf__nf_reorder(pf__tok_cps *cps, pf__tok_cps *tmp) {
    size_t i = 0, n = cps->len;
    uint32_t *p = cps->p;
    while (i < n) {
        size_t j = i, k;
        while (j < n && pf__unicode_ccc(p[j])) j++;
        if (j == i) {
            i++;
            continue;
        }
        if (j - i <= 32) {
            for (k = i + 1; k < j; k++) {
                uint32_t v = p[k];
                unsigned cv = pf__unicode_ccc(v);
                size_t m = k;
                while (m > i && pf__unicode_ccc(p[m - 1]) > cv) {
                    p[m] = p[m - 1];
                    m--;
                }
                p[m] = v;
            }
        } else {
            size_t count[257], c;
            memset(count, 0, sizeof count);
            tmp->len = 0;
            if (pf__tok_grow((void **)&tmp->p, &tmp->cap, j - i, sizeof *tmp->p)) return -1;
            for (k = i; k < j; k++) count[pf__unicode_ccc(p[k]) + 1]++;
            for (c = 1; c < 257; c++) count[c] += count[c - 1];
            for (k = i; k < j; k++) tmp->p[count[pf__unicode_ccc(p[k])]++] = p[k];
            memcpy(p + i, tmp->p, (j - i) * sizeof *p);
        }
        i = j;
    }
    return 0;
}

/* Canonical composition in place: a character composes with the last starter unless a character
   between them has class 0 or a class >= its own. */
static void pf__nf_compose(pf__tok_cps *cps) {
    size_t i, n = cps->len, out = 0, starter = (size_t)-1;
    unsigned last = 0;
    uint32_t *p = cps->p;
    for (i = 0; i < n; i++) {
        uint32_t cp = p[i], x;
        unsigned k = pf__unicode_ccc(cp);
        if (starter != (size_t)-1 && (out - 1 == starter || (last != 0 && last < k)) &&
            (x = pf__unicode_compose(p[starter], cp)) != 0) {
            p[starter] = x;
            continue;
        }
        if (k == 0) starter = out;
        last = k;
        p[out++] = cp;
    }
    cps->len = out;
}

/* ---- grapheme clusters ---- */

/* Unicode's extended grapheme clusters (UAX #29), as the unicode-segmentation crate finds them for
   HF's Precompiled normalizer. A code point's properties: its Grapheme_Cluster_Break value,
   Extended_Pictographic, and its Indic_Conjunct_Break value. */
enum {
    PF__GCB_OTHER, PF__GCB_CR, PF__GCB_LF, PF__GCB_CONTROL, PF__GCB_EXTEND, PF__GCB_ZWJ, PF__GCB_RI,
    PF__GCB_PREPEND, PF__GCB_SPACINGMARK, PF__GCB_L, PF__GCB_V, PF__GCB_T, PF__GCB_LV, PF__GCB_LVT,
    PF__GCB_MASK = 0x0F,
    PF__GCB_EXTPICT = 0x10,
    PF__INCB_CONSONANT = 0x20, PF__INCB_LINKER = 0x40, PF__INCB_EXTEND = 0x60, PF__INCB_MASK = 0x60
};

static unsigned pf__grapheme_props(uint32_t cp) {
    size_t lo = 0, hi = PF__TOK_LEN(pf__unicode_grapheme_runs);
    if (cp == PF__UTF8_INVALID) return PF__GCB_CONTROL; /* a byte that is not UTF-8 stands alone */
    if (cp - PF__HANGUL_S < PF__HANGUL_SCOUNT)
        return (cp - PF__HANGUL_S) % PF__HANGUL_TCOUNT ? PF__GCB_LVT : PF__GCB_LV;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if ((pf__unicode_grapheme_runs[mid] >> 8) <= cp) lo = mid;
        else hi = mid;
    }
    return pf__unicode_grapheme_runs[lo] & 0xFF;
}

/* The end of the grapheme cluster that starts at s[i] (i < n). */
static size_t pf__grapheme_end(const unsigned char *s, size_t i, size_t n) {
    uint32_t cp;
    size_t j = i + pf__utf8_decode(s + i, n - i, &cp), k;
    unsigned first = pf__grapheme_props(cp), pg = first & PF__GCB_MASK; /* pg: the previous one's GCB */
    /* what GB9c, GB11 and GB12 look back at */
    int conjunct = (first & PF__INCB_MASK) == PF__INCB_CONSONANT ? 1 : 0; /* 1: consonant, 2: and a linker */
    int pict = first & PF__GCB_EXTPICT ? 1 : 0;                         /* 1: pictographic, 2: and a ZWJ */
    size_t ri = pg == PF__GCB_RI;                                        /* regional indicators in a row */
    for (; j < n; j += k) {
        unsigned cur, cg, incb;
        int join;
        k = pf__utf8_decode(s + j, n - j, &cp);
        cur = pf__grapheme_props(cp);
        cg = cur & PF__GCB_MASK;
        incb = cur & PF__INCB_MASK;
        if (pg == PF__GCB_CR && cg == PF__GCB_LF) join = 1;                                         /* GB3 */
        else if (pg == PF__GCB_CONTROL || pg == PF__GCB_CR || pg == PF__GCB_LF) join = 0;          /* GB4 */
        else if (cg == PF__GCB_CONTROL || cg == PF__GCB_CR || cg == PF__GCB_LF) join = 0;          /* GB5 */
        else if (pg == PF__GCB_L && (cg == PF__GCB_L || cg == PF__GCB_V || cg == PF__GCB_LV || cg == PF__GCB_LVT))
            join = 1;                                                                                /* GB6 */
        else if ((pg == PF__GCB_LV || pg == PF__GCB_V) && (cg == PF__GCB_V || cg == PF__GCB_T)) join = 1; /* GB7 */
        else if ((pg == PF__GCB_LVT || pg == PF__GCB_T) && cg == PF__GCB_T) join = 1;              /* GB8 */
        else if (cg == PF__GCB_EXTEND || cg == PF__GCB_ZWJ || cg == PF__GCB_SPACINGMARK) join = 1; /* GB9, 9a */
        else if (pg == PF__GCB_PREPEND) join = 1;                                                   /* GB9b */
        else if (incb == PF__INCB_CONSONANT && conjunct == 2) join = 1;                            /* GB9c */
        else if (pg == PF__GCB_ZWJ && (cur & PF__GCB_EXTPICT) && pict == 2) join = 1;              /* GB11 */
        else if (pg == PF__GCB_RI && cg == PF__GCB_RI && ri % 2 == 1) join = 1;                    /* GB12, 13 */
        else join = 0;
        if (!join) break;
        if (incb == PF__INCB_CONSONANT) conjunct = 1;
        else if (conjunct && incb == PF__INCB_LINKER) conjunct = 2;
        else if (!(conjunct && incb == PF__INCB_EXTEND)) conjunct = 0;
        if (cur & PF__GCB_EXTPICT) pict = 1;
        else if (pict == 1 && cg == PF__GCB_ZWJ) pict = 2;
        else if (!(pict == 1 && cg == PF__GCB_EXTEND)) pict = 0;
        ri = cg == PF__GCB_RI ? ri + 1 : 0;
        pg = cg;
    }
    return j;
}

/* ---- the tokenizer ---- */

/* Split patterns matched by hand. HF names a regex by its source, which is how a tokenizer.json
   "Split" is recognised (ByteLevel's use_regex means GPT2). */
typedef enum pf__tok_pattern {
    PF__PAT_GPT2,    /* 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
    PF__PAT_LLAMA3,  /* (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
                        ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+ */
    PF__PAT_QWEN2,   /* as LLAMA3 with \p{N} one digit at a time */
    PF__PAT_BLOOM,   /*  ?[^(\s|[.,!?…。，、।۔،])]+ */
    PF__PAT_WORD_NL, /* \S+\n? (CTRL's words) */
    PF__PAT_LITERAL, /* a string (a "String" pattern; Metaspace's replacement) */
    PF__PAT_FLAGS    /* one code point with any of the given PF__UC_* flags */
} pf__tok_pattern;

static const struct {
    pf__tok_pattern pattern;
    const char *regex;
} pf__tok_regexes[] = {
    {PF__PAT_GPT2, "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"},
    {PF__PAT_LLAMA3, "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
                     "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
    {PF__PAT_QWEN2, "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
                    "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
    {PF__PAT_BLOOM, " ?[^(\\s|[.,!?\xe2\x80\xa6\xe3\x80\x82\xef\xbc\x8c\xe3\x80\x81\xe0\xa5\xa4\xdb\x94\xd8\x8c])]+"},
    {PF__PAT_WORD_NL, "\\S+\\n?"},
};

/* HF's SplitDelimiterBehavior */
typedef enum pf__tok_behavior {
    PF__SPLIT_REMOVED, PF__SPLIT_ISOLATED, PF__SPLIT_MERGED_PREVIOUS, PF__SPLIT_MERGED_NEXT, PF__SPLIT_CONTIGUOUS
} pf__tok_behavior;

static const char *const pf__tok_behaviors[] = {"Removed", "Isolated", "MergedWithPrevious", "MergedWithNext",
                                                "Contiguous"};

typedef enum pf__tok_prepend { PF__PREPEND_ALWAYS, PF__PREPEND_FIRST, PF__PREPEND_NEVER } pf__tok_prepend;

/* Normalizer steps (a BertNormalizer is its four steps) */
typedef enum pf__tok_norm_kind {
    PF__NORM_NFC, PF__NORM_NFD, PF__NORM_LOWERCASE, PF__NORM_PREPEND, PF__NORM_REPLACE, PF__NORM_STRIP,
    PF__NORM_BERT_CLEAN, PF__NORM_BERT_CJK, PF__NORM_STRIP_ACCENTS,
    PF__NORM_NFKC, PF__NORM_NFKD,
    PF__NORM_STRIP_MARKS,    /* StripAccents: combining marks dropped (BertNormalizer's strip_accents is
                                NFD then its own marks: PF__NORM_STRIP_ACCENTS) */
    PF__NORM_REPLACE_SPACES, /* Replace with the regex " {2,}": runs of two or more spaces */
    PF__NORM_PRECOMPILED,    /* SentencePiece's precompiled_charsmap */
    PF__NORM_SPM             /* SentencePiece's own Normalizer: its charsmap (longest key first) and its
                                whitespace rules (flags in spm), for its .model files */
} pf__tok_norm_kind;

typedef struct pf__tok_norm {
    pf__tok_norm_kind kind;
    char *a, *b; /* Prepend: a; Replace: pattern a, content b; Precompiled: the replacements b (malloc'd) */
    size_t a_len, b_len;
    int left, right; /* Strip */
    uint32_t *units; /* Precompiled: the double-array trie of the keys [num_units] (malloc'd) */
    size_t num_units;
    unsigned spm;    /* PF__NORM_SPM: PF__SPM_DUMMY_PREFIX | PF__SPM_REMOVE_SPACES | PF__SPM_ESCAPE */
} pf__tok_norm;

#define PF__SPM_DUMMY_PREFIX 1u  /* normalizer_spec.add_dummy_prefix */
#define PF__SPM_REMOVE_SPACES 2u /* normalizer_spec.remove_extra_whitespaces */
#define PF__SPM_ESCAPE 4u        /* normalizer_spec.escape_whitespaces */

/* SentencePiece's piece types and model types (sentencepiece_model.proto) */
enum { PF__SPM_NORMAL = 1, PF__SPM_UNKNOWN, PF__SPM_CONTROL, PF__SPM_USER_DEFINED, PF__SPM_UNUSED, PF__SPM_BYTE };
enum { PF__SPM_UNIGRAM = 1, PF__SPM_BPE, PF__SPM_WORD, PF__SPM_CHAR };

/* Pre-tokenizer stages (a ByteLevel is a prefix-space stage and a GPT2 split) */
typedef enum pf__tok_pre_kind { PF__PRE_SPLIT, PF__PRE_PREFIX_SPACE, PF__PRE_METASPACE } pf__tok_pre_kind;

typedef struct pf__tok_pre {
    pf__tok_pre_kind kind;
    pf__tok_pattern pattern;    /* SPLIT */
    pf__tok_behavior behavior;  /* SPLIT */
    int invert;                 /* SPLIT */
    unsigned flags;             /* PF__PAT_FLAGS */
    char *lit;                  /* PF__PAT_LITERAL; METASPACE: the replacement (malloc'd) */
    size_t lit_len;
    pf__tok_prepend prepend;    /* METASPACE */
    int split;                  /* METASPACE */
} pf__tok_pre;

typedef enum pf__tok_dec_kind {
    PF__DEC_BYTELEVEL, PF__DEC_REPLACE, PF__DEC_BYTEFALLBACK, PF__DEC_FUSE, PF__DEC_STRIP, PF__DEC_METASPACE,
    PF__DEC_BPE, PF__DEC_WORDPIECE,
    PF__DEC_UTF8_IGNORE, /* ByT5: the tokens' bytes as one token, less the bytes that are not valid UTF-8 */
    PF__DEC_SPM          /* Marian's and M2M100's convert_tokens_to_string: runs between special tokens
                            decoded by SentencePiece (t->spm), then stripped */
} pf__tok_dec_kind;

typedef struct pf__tok_dec {
    pf__tok_dec_kind kind;
    char *a, *b; /* Replace: pattern a, content b; Metaspace, Strip: the character a; BPE: suffix a;
                    WordPiece: prefix a */
    size_t a_len, b_len;
    size_t start, stop;      /* Strip */
    pf__tok_prepend prepend; /* Metaspace */
    int cleanup;             /* WordPiece */
} pf__tok_dec;

#define PF__TOK_MAX_NORMS 16
#define PF__TOK_MAX_PRE 16
#define PF__TOK_MAX_DECS 16
#define PF__TOK_SEQ_A (-1) /* in a post-processor template: the first text's ids */
#define PF__TOK_SEQ_B (-2) /* ... and the second's */

typedef struct pf__tok_post_item { /* a piece of a post-processor template */
    int32_t id;       /* a special token's id, or PF__TOK_SEQ_A / PF__TOK_SEQ_B */
    uint32_t type_id; /* the token type id of its ids */
} pf__tok_post_item;

typedef struct pf__tok_added {
    char *content; /* malloc'd, NUL-terminated: what it decodes to */
    size_t len;
    char *match;   /* what is looked for: content, normalized when normalized is set (malloc'd) */
    size_t match_len;
    int32_t id;
    unsigned char special, normalized, lstrip, rstrip, single_word;
    unsigned char unmatched; /* addressable by id and string, never looked for in a text (M2M100's
                                language codes when the config does not list them as special) */
} pf__tok_added;

/* PF__MODEL_BYTES: ByT5, each byte of the text is id byte + PF__BYTES_OFFSET (no vocab file) */
typedef enum pf__tok_model_kind { PF__MODEL_BPE, PF__MODEL_WORDPIECE, PF__MODEL_UNIGRAM, PF__MODEL_BYTES } pf__tok_model_kind;
#define PF__BYTES_OFFSET 3 /* ByT5's <pad> <eos> <unk> come first */

typedef struct pf__tok_piece { /* a Unigram piece: its string in vocab_text, and its score */
    size_t offset;
    uint32_t len;
    double score;
} pf__tok_piece;

/* Vocab hash slot: a token string (in vocab_text) and its id; id -1 marks an empty slot. */
typedef struct pf__tok_vocab_slot {
    uint32_t hash, len;
    size_t offset;
    int32_t id;
} pf__tok_vocab_slot;

/* Merge hash slot: the pair (left id << 32 | right id), its rank and the id it merges into;
   rank UINT32_MAX marks an empty slot. */
typedef struct pf__tok_merge_slot {
    uint64_t pair;
    uint32_t rank;
    int32_t new_id;
} pf__tok_merge_slot;

struct pf_tokenizer {
    int32_t num_ids; /* ids are 0 .. num_ids-1; an id no token has is unknown */

    /* model vocab: token string -> id (open addressing, linear probing) */
    pf__tok_vocab_slot *vocab; /* [vocab_mask + 1] */
    size_t vocab_mask, vocab_count;
    char *vocab_text; /* the token strings, each NUL-terminated */
    size_t vocab_text_len;

    pf__tok_merge_slot *merges; /* [merges_mask + 1] */
    size_t merges_mask;

    /* model options */
    pf__tok_model_kind model;
    int byte_level;    /* the model sees each byte as its character in GPT-2's byte map */
    int32_t unk_id;    /* -1: none. BPE drops characters without a token then, as HF does; WordPiece
                          fails the encoding where it needs one, as HF does */
    int fuse_unk, ignore_merges, byte_fallback;
    char *prefix, *suffix; /* continuing_subword_prefix, end_of_word_suffix; NULL: none */
    size_t prefix_len, suffix_len;
    size_t max_word_chars; /* WordPiece: max_input_chars_per_word (a longer word is unk) */
    pf__tok_piece *pieces; /* Unigram: [num_pieces], by id (a string listed twice maps to its
                              last id, as HF's token map does, and both ids decode to it) */
    size_t num_pieces;
    double unk_score;      /* Unigram: what an unknown character costs: HF's lowest score less 10 */
    size_t max_token_len;  /* the longest vocab string, in bytes: no longer piece is looked up */

    /* byte-level: the character standing for each byte (UTF-8), the id of its one-character token
       (-1 when the vocab lacks it), and the inverse map */
    uint16_t byte_char[256];
    unsigned char byte_str[256][2];
    unsigned char byte_str_len[256];
    int32_t byte_id[256];
    int16_t char_byte[512];
    int32_t fallback_id[256]; /* byte_fallback: the id of <0xXX>, or -1 */

    /* each id's token string (into vocab_text or an added token); id_len -1: unknown id */
    const char **id_str;
    int32_t *id_len;

    /* added tokens; added_order lists them by pass (0: normalized = false, 1: true), then by first
       byte of their match; added_first[pass][b] .. added_first[pass][b + 1] are those starting with b */
    pf__tok_added *added;
    size_t num_added, added_cap;
    uint32_t *added_order;
    uint32_t added_first[2][257];

    pf__tok_norm norms[PF__TOK_MAX_NORMS];
    int num_norms;
    pf__tok_pre pres[PF__TOK_MAX_PRE];
    int num_pres;
    pf__tok_dec decs[PF__TOK_MAX_DECS];
    int num_decs;
    int has_decoder; /* 0: tokens are joined with spaces, as HF does without a decoder */

    /* the post-processor's templates, [0] for one text, [1] for a pair (without one: A, and A
       then B of type id 1, as HF's default), and the special ids each adds */
    pf__tok_post_item *post[2];
    size_t post_len[2], post_added[2];
    int has_post; /* a post-processor that adds tokens or sets type ids was read */
    int eos_once;  /* ByT5: a text whose ids end with the template's special token does not get it
                      again (its _add_eos_if_not_present) */

    int32_t bos_id, eos_id; /* tokenizer_config.json's bos_token / eos_token; -1: unknown */
    char *bos_token, *eos_token; /* their text, for chat templates; NULL: not named */
    char *chat_template;      /* chat_template.jinja, else tokenizer_config.json's; NULL: none */
    char *chat_template_note; /* why there is none when the config's list names no "default" */

    /* SentencePiece files without tokenizer.json (Marian, M2M100): spm is the .model's own
       tokenizer (pieces by SentencePiece id, their scores or merges), this one's model step;
       spm_ids maps its ids to this vocab's (vocab.json), and a run of unknown characters is looked
       up here by its text, as the slow tokenizers map pieces through vocab.json */
    struct pf_tokenizer *spm;
    int32_t *spm_ids;           /* [spm->num_pieces] */
    int spm_marian;             /* decode: a space after each special token, "▁" replaced (Marian) */
    int spm_cleanup;            /* decode: clean_up_tokenization_spaces */
    /* in spm itself: */
    unsigned char *spm_types;   /* [num_pieces]: each piece's SentencePiece type */
    unsigned spm_flags;         /* PF__SPM_DUMMY_PREFIX | ... of its normalizer_spec */
    char *spm_unk_surface;      /* what <unk> decodes to (trainer_spec.unk_surface) */
    size_t spm_unk_surface_len;
};

void pf_tokenizer_free(pf_tokenizer *tokenizer) {
    size_t i;
    int k;
    if (!tokenizer) return;
    for (i = 0; i < tokenizer->num_added; i++) {
        free(tokenizer->added[i].content);
        free(tokenizer->added[i].match);
    }
    for (k = 0; k < tokenizer->num_norms; k++) {
        free(tokenizer->norms[k].a);
        free(tokenizer->norms[k].b);
        free(tokenizer->norms[k].units);
    }
    for (k = 0; k < tokenizer->num_pres; k++) free(tokenizer->pres[k].lit);
    for (k = 0; k < tokenizer->num_decs; k++) {
        free(tokenizer->decs[k].a);
        free(tokenizer->decs[k].b);
    }
    free(tokenizer->added);
    free(tokenizer->added_order);
    free(tokenizer->vocab);
    free(tokenizer->vocab_text);
    free(tokenizer->merges);
    free(tokenizer->id_str);
    free(tokenizer->id_len);
    free(tokenizer->prefix);
    free(tokenizer->suffix);
    free(tokenizer->pieces);
    free(tokenizer->post[0]);
    free(tokenizer->post[1]);
    free(tokenizer->bos_token);
    free(tokenizer->eos_token);
    free(tokenizer->chat_template);
    free(tokenizer->chat_template_note);
    pf_tokenizer_free(tokenizer->spm);
    free(tokenizer->spm_ids);
    free(tokenizer->spm_types);
    free(tokenizer->spm_unk_surface);
    free(tokenizer);
}

int pf_tokenizer_vocab_size(const pf_tokenizer *tokenizer) {
    return tokenizer ? (int)tokenizer->num_ids : 0;
}

int32_t pf_tokenizer_bos_id(const pf_tokenizer *tokenizer) { return tokenizer ? tokenizer->bos_id : -1; }

int32_t pf_tokenizer_eos_id(const pf_tokenizer *tokenizer) { return tokenizer ? tokenizer->eos_id : -1; }

int pf_tokenizer_is_special(const pf_tokenizer *tokenizer, int32_t id) {
    if (!tokenizer || id < 0) return 0;
    if (id == tokenizer->bos_id || id == tokenizer->eos_id) return 1;
    for (size_t i = 0; i < tokenizer->num_added; i++) /* a few added tokens, rarely hundreds */
        if (tokenizer->added[i].id == id) return tokenizer->added[i].special;
    return 0;
}

/* FNV-1a, 32 bits. */
static uint32_t pf__tok_hash(const char *s, size_t len) {
    uint32_t h = 2166136261u;
    size_t i;
    for (i = 0; i < len; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

static size_t pf__tok_pow2_at_least(size_t n) {
    size_t c = 16;
    while (c < n) c *= 2;
    return c;
}

/* The vocab id of a token string whose pf__tok_hash is h, or -1. */
static int32_t pf__tok_vocab_find_hashed(const pf_tokenizer *t, const char *s, size_t len, uint32_t h) {
    size_t i = h & t->vocab_mask;
    if (!t->vocab) return -1;
    for (;; i = (i + 1) & t->vocab_mask) {
        const pf__tok_vocab_slot *slot = &t->vocab[i];
        if (slot->id < 0) return -1;
        if (slot->hash == h && slot->len == len && !memcmp(t->vocab_text + slot->offset, s, len))
            return slot->id;
    }
}

/* The vocab id of a token string, or -1. */
static int32_t pf__tok_vocab_find(const pf_tokenizer *t, const char *s, size_t len) {
    return pf__tok_vocab_find_hashed(t, s, len, pf__tok_hash(s, len));
}

int32_t pf_tokenizer_token_id(const pf_tokenizer *tokenizer, const char *token) {
    size_t i, len;
    if (!tokenizer || !token) return -1;
    len = strlen(token);
    for (i = 0; i < tokenizer->num_added; i++) /* an added token wins, as in HF's convert_tokens_to_ids */
        if (tokenizer->added[i].len == len && !memcmp(tokenizer->added[i].content, token, len))
            return tokenizer->added[i].id;
    return len ? pf__tok_vocab_find(tokenizer, token, len) : -1;
}

static size_t pf__tok_pair_slot(uint64_t pair, size_t mask) {
    return (size_t)((pair * 0x9E3779B97F4A7C15ull) >> 32) & mask;
}

/* The merge of the pair (left, right), or NULL. */
static const pf__tok_merge_slot *pf__tok_merge_find(const pf_tokenizer *t, int32_t left, int32_t right) {
    uint64_t pair = (uint64_t)(uint32_t)left << 32 | (uint32_t)right;
    size_t i = pf__tok_pair_slot(pair, t->merges_mask);
    if (!t->merges) return NULL;
    for (;; i = (i + 1) & t->merges_mask) {
        const pf__tok_merge_slot *slot = &t->merges[i];
        if (slot->rank == UINT32_MAX) return NULL;
        if (slot->pair == pair) return slot;
    }
}

/* ---- encoding: scratch memory ---- */

typedef struct pf__tok_sym {
    int32_t id;          /* -1: merged into its left neighbour */
    uint32_t prev, next; /* UINT32_MAX: none */
} pf__tok_sym;

typedef struct pf__tok_cand { /* a possible merge of the symbols at pos and its next */
    uint32_t rank, pos;
    int32_t new_id;
} pf__tok_cand;

typedef struct pf__tok_ctx {
    const pf_tokenizer *t;
    const pf_tokenizer *outer; /* while a SentencePiece model (t = outer->spm) runs: the tokenizer whose
                                  ids it emits */
    int32_t *ids;       /* [ids_cap]: the ids so far, count of them */
    size_t ids_cap, count;
    int out_of_memory;  /* an id could not be stored */
    int needs_unk;      /* a word needed the unk token the model lacks (HF fails too) */
    pf__tok_sym *sym;   /* [sym_cap] */
    pf__tok_cand *heap; /* [heap_cap]: a merge adds at most one candidate net */
    size_t sym_cap, heap_cap;
    pf__tok_buf norm[2];            /* normalizer steps, ping-pong */
    pf__tok_cps cps, cps_tmp;       /* NFC / NFD */
    pf__tok_buf pre[PF__TOK_MAX_PRE]; /* pre-tokenizer stages that rewrite text */
    pf__tok_buf unit;               /* a BPE unit with prefix / suffix */
    pf__tok_buf mapped;             /* a word as byte-level characters (ignore_merges) */
    struct pf__tok_node *lattice;   /* Unigram: [lattice_cap] */
    size_t *path;                   /* Unigram: [path_cap], the best path's piece ends */
    size_t lattice_cap, path_cap;
} pf__tok_ctx;

static void pf__tok_ctx_free(pf__tok_ctx *c) {
    int k;
    free(c->ids);
    free(c->sym);
    free(c->heap);
    free(c->norm[0].p);
    free(c->norm[1].p);
    free(c->cps.p);
    free(c->cps_tmp.p);
    for (k = 0; k < PF__TOK_MAX_PRE; k++) free(c->pre[k].p);
    free(c->unit.p);
    free(c->mapped.p);
    free(c->lattice);
    free(c->path);
}

/* Appends an id; running out of memory is reported once the encoding ends. */
static void pf__tok_emit(pf__tok_ctx *c, int32_t id) {
    if (pf__tok_grow((void **)&c->ids, &c->ids_cap, c->count + 1, sizeof *c->ids)) {
        c->out_of_memory = 1;
        return;
    }
    c->ids[c->count++] = id;
}

/* The id of a token string as the slow tokenizers' convert_tokens_to_ids: an added token's, else
   the vocab's, else unk's. */
static int32_t pf__tok_spm_lookup(const pf_tokenizer *t, const unsigned char *s, size_t len) {
    size_t i;
    int32_t id;
    for (i = 0; i < t->num_added; i++)
        if (t->added[i].len == len && !memcmp(t->added[i].content, s, len)) return t->added[i].id;
    id = len ? pf__tok_vocab_find(t, (const char *)s, len) : -1;
    return id >= 0 ? id : t->unk_id;
}

/* Emits a model's piece: its id, or, for a SentencePiece model, the id its string has outside. */
static void pf__tok_emit_piece(pf__tok_ctx *c, int32_t id) {
    pf__tok_emit(c, c->outer ? c->outer->spm_ids[id] : id);
}

/* ---- normalizers ---- */

static int pf__tok_from_cps(pf__tok_buf *out, const pf__tok_cps *cps) {
    size_t i;
    for (i = 0; i < cps->len; i++)
        if (pf__buf_put_cp(out, cps->p[i])) return -1;
    return 0;
}

static int pf__tok_is_ascii(const unsigned char *s, size_t n) {
    size_t i;
    for (i = 0; i < n; i++)
        if (s[i] >= 0x80) return 0;
    return 1;
}

static int pf__tok_is_cjk(uint32_t cp) { /* BertNormalizer's is_chinese_char */
    return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
           (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
           (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

/* The replacement a Precompiled charsmap has for s[0 .. n): that of the shortest prefix of s it
   holds (HF's spm_precompiled takes the first of its common-prefix search: a longer key never
   wins), into *rep; 0 when it holds none. The search stops at a NUL byte. The trie is darts-clone's
   double array: a unit holds a label (bits 0-7, and 31 set in value units), a leaf flag (bit 8)
   and the offset of its children (bits 10-30, times 256 when bit 9 is set). */
static size_t pf__charsmap_offset(uint32_t unit) {
    return ((size_t)unit >> 10) << ((unit & (1u << 9)) >> 6);
}

static int pf__charsmap_find(const pf__tok_norm *nm, const unsigned char *s, size_t n, const char **rep, size_t *rep_len) {
    const uint32_t *u = nm->units;
    size_t pos = pf__charsmap_offset(u[0]), i, value, end;
    for (i = 0; i < n && s[i]; i++) {
        uint32_t unit;
        pos ^= s[i];
        if (pos >= nm->num_units || ((unit = u[pos]) & 0x800000FFu) != s[i]) return 0;
        pos ^= pf__charsmap_offset(unit);
        if (!(unit & (1u << 8))) continue;
        if (pos >= nm->num_units) return 0; /* a malformed trie (HF would panic) */
        value = u[pos] & 0x7FFFFFFFu;
        if (value > nm->b_len) value = nm->b_len; /* likewise */
        for (end = value; end < nm->b_len && nm->b[end]; end++) {}
        *rep = nm->b + value;
        *rep_len = end - value;
        return 1;
    }
    return 0;
}

/* SentencePiece's own charsmap lookup (its Normalizer::NormalizePrefix): the replacement of the
   longest key the charsmap holds at the start of s, into *rep; that key's length, 0 when none. */
static size_t pf__charsmap_longest(const pf__tok_norm *nm, const unsigned char *s, size_t n, const char **rep,
                                   size_t *rep_len) {
    const uint32_t *u = nm->units;
    size_t pos = pf__charsmap_offset(u[0]), i, value, end, best = 0;
    for (i = 0; i < n && s[i]; i++) {
        uint32_t unit;
        pos ^= s[i];
        if (pos >= nm->num_units || ((unit = u[pos]) & 0x800000FFu) != s[i]) break;
        pos ^= pf__charsmap_offset(unit);
        if (!(unit & (1u << 8))) continue;
        if (pos >= nm->num_units) break; /* a malformed trie */
        value = u[pos] & 0x7FFFFFFFu;
        if (value > nm->b_len) value = nm->b_len;
        for (end = value; end < nm->b_len && nm->b[end]; end++) {}
        *rep = nm->b + value;
        *rep_len = end - value;
        best = i + 1;
    }
    return best;
}

/* What SentencePiece's normalizer makes of the start of s: the charsmap's replacement, else the
   character itself, U+FFFD for a byte that is not UTF-8; *used: the bytes it takes. */
static void pf__spm_prefix(const pf__tok_norm *nm, const unsigned char *s, size_t n, const char **rep, size_t *rep_len,
                           size_t *used) {
    uint32_t cp;
    if (nm->units && (*used = pf__charsmap_longest(nm, s, n, rep, rep_len)) > 0) return;
    *used = pf__utf8_decode(s, n, &cp);
    *rep = cp == PF__UTF8_INVALID ? "\xEF\xBF\xBD" : (const char *)s;
    *rep_len = cp == PF__UTF8_INVALID ? 3 : *used;
}

/* SentencePiece's Normalizer::Normalize: each character through the charsmap; with
   remove_extra_whitespaces, the spaces at the start and end go and runs of them become one; with
   add_dummy_prefix, a space in front of a text that has anything left; with escape_whitespaces,
   spaces become U+2581. */
static int pf__tok_spm_normalize(const pf__tok_norm *nm, const unsigned char *s, size_t n, pf__tok_buf *out) {
    static const char meta[] = "\xE2\x96\x81";
    int remove = (nm->spm & PF__SPM_REMOVE_SPACES) != 0, escape = (nm->spm & PF__SPM_ESCAPE) != 0, prev_space;
    const char *space = escape ? meta : " ", *rep;
    size_t space_len = escape ? 3 : 1, rep_len, used, i = 0, k;
    out->len = 0;
    for (; remove && i < n; i += used) {
        pf__spm_prefix(nm, s + i, n - i, &rep, &rep_len, &used);
        if (rep_len != 1 || rep[0] != ' ') break;
    }
    if (i == n) return 0;
    if ((nm->spm & PF__SPM_DUMMY_PREFIX) && pf__buf_put(out, space, space_len)) return -1;
    for (prev_space = remove; i < n; i += used) {
        pf__spm_prefix(nm, s + i, n - i, &rep, &rep_len, &used);
        for (k = 0; prev_space && k < rep_len && rep[k] == ' '; k++) {}
        if (k < rep_len) {
            for (; k < rep_len; k++)
                if (rep[k] == ' ' ? pf__buf_put(out, space, space_len) : pf__buf_put(out, rep + k, 1)) return -1;
            prev_space = rep[rep_len - 1] == ' ';
        }
        prev_space = prev_space && remove;
    }
    while (remove && out->len >= space_len && !memcmp(out->p + out->len - space_len, space, space_len))
        out->len -= space_len;
    return 0;
}

/* One normalizer step: s[0 .. n) -> out. *first is cleared when the step drops the first character
   (then the text no longer starts where the original did: Metaspace's prepend_scheme "first"). */
static int pf__tok_norm_step(pf__tok_ctx *c, const pf__tok_norm *nm, const unsigned char *s, size_t n,
                             pf__tok_buf *out, int *first) {
    size_t i, k;
    uint32_t cp;
    out->len = 0;
    switch (nm->kind) {
    case PF__NORM_NFC:
    case PF__NORM_NFD:
    case PF__NORM_NFKC:
    case PF__NORM_NFKD:
    case PF__NORM_STRIP_ACCENTS:
        if (pf__tok_is_ascii(s, n)) return pf__buf_put(out, s, n);
        c->cps_tmp.len = 0;
        {
            pf__tok_cps *d = &c->cps;
            int compat = nm->kind == PF__NORM_NFKC || nm->kind == PF__NORM_NFKD, rc = 0;
            d->len = 0;
            for (i = 0; i < n; i += k) {
                k = pf__utf8_decode(s + i, n - i, &cp);
                if (compat && (rc = pf__nf_decompose_compat(d, cp)) != 0) {
                    if (rc < 0) return -1;
                    continue;
                }
                if (pf__nf_decompose(d, cp == PF__UTF8_INVALID ? PF__CP_RAW | s[i] : cp, 0)) return -1;
                if (i == 0 && nm->kind == PF__NORM_STRIP_ACCENTS) { /* all of the first character dropped? */
                    size_t j;
                    for (j = 0; j < d->len && (pf__unicode_class(d->p[j]) & PF__UC_MN); j++) {}
                    if (j == d->len) *first = 0;
                }
            }
            if (pf__nf_reorder(d, &c->cps_tmp)) return -1;
            if (nm->kind == PF__NORM_NFC || nm->kind == PF__NORM_NFKC) pf__nf_compose(d);
            if (nm->kind == PF__NORM_STRIP_ACCENTS) {
                size_t j, m = 0;
                for (j = 0; j < d->len; j++)
                    if (!(pf__unicode_class(d->p[j]) & PF__UC_MN)) d->p[m++] = d->p[j];
                d->len = m;
            }
            return pf__tok_from_cps(out, d);
        }
    case PF__NORM_LOWERCASE:
        for (i = 0; i < n; i += k) {
            k = pf__utf8_decode(s + i, n - i, &cp);
            if (cp == PF__UTF8_INVALID || cp < 0x41) {
                if (pf__buf_put(out, s + i, k)) return -1;
            } else if (cp == 0x130) {
                if (pf__buf_put(out, "i\xcc\x87", 3)) return -1;
            } else if (pf__buf_put_cp(out, pf__unicode_lower(cp))) {
                return -1;
            }
        }
        return 0;
    case PF__NORM_PREPEND:
        if (n && pf__buf_put(out, nm->a, nm->a_len)) return -1;
        return pf__buf_put(out, s, n);
    case PF__NORM_REPLACE:
        return pf__buf_replace(out, s, n, nm->a, nm->a_len, nm->b, nm->b_len);
    case PF__NORM_STRIP: {
        size_t lo = 0, hi = n;
        if (nm->left)
            while (lo < hi) {
                k = pf__utf8_decode(s + lo, hi - lo, &cp);
                if (!(pf__unicode_class(cp) & PF__UC_WS)) break;
                lo += k;
            }
        if (nm->right)
            while (hi > lo) {
                cp = pf__utf8_decode_before(s, lo, hi, &k);
                if (!(pf__unicode_class(cp) & PF__UC_WS)) break;
                hi -= k;
            }
        if (lo > 0) *first = 0;
        return pf__buf_put(out, s + lo, hi - lo);
    }
    case PF__NORM_BERT_CLEAN: /* drop NUL, U+FFFD and controls; whitespace becomes a space */
        for (i = 0; i < n; i += k) {
            unsigned f;
            k = pf__utf8_decode(s + i, n - i, &cp);
            f = pf__unicode_class(cp);
            if (cp == 0 || cp == 0xFFFD || (f & PF__UC_CTRL)) {
                if (i == 0) *first = 0;
                continue;
            }
            if (pf__buf_put(out, f & PF__UC_WS ? (const unsigned char *)" " : s + i, f & PF__UC_WS ? 1 : k)) return -1;
        }
        return 0;
    case PF__NORM_STRIP_MARKS:
        for (i = 0; i < n; i += k) {
            k = pf__utf8_decode(s + i, n - i, &cp);
            if (pf__unicode_is_mark(cp)) {
                if (i == 0) *first = 0;
            } else if (pf__buf_put(out, s + i, k)) {
                return -1;
            }
        }
        return 0;
    case PF__NORM_REPLACE_SPACES:
        for (i = 0; i < n; i = k) {
            for (k = i; k < n && s[k] == ' '; k++) {}
            if (k - i >= 2) {
                if (pf__buf_put(out, nm->b, nm->b_len)) return -1;
            } else {
                k = i + 1;
                if (pf__buf_put(out, s + i, 1)) return -1;
            }
        }
        return 0;
    case PF__NORM_SPM:
        return pf__tok_spm_normalize(nm, s, n, out);
    case PF__NORM_PRECOMPILED:
        /* HF's Precompiled: a grapheme cluster shorter than 6 bytes goes whole to the charsmap;
           otherwise (or when it has nothing for it) each character does */
        for (i = 0; i < n; i = k) {
            const char *rep;
            size_t rep_len, j, m, start = out->len;
            k = pf__grapheme_end(s, i, n);
            if (k - i < 6 && pf__charsmap_find(nm, s + i, k - i, &rep, &rep_len)) {
                if (pf__buf_put(out, rep, rep_len)) return -1;
            } else {
                for (j = i; j < k; j += m) {
                    m = pf__utf8_decode(s + j, k - j, &cp);
                    if (pf__charsmap_find(nm, s + j, m, &rep, &rep_len) ? pf__buf_put(out, rep, rep_len)
                                                                         : pf__buf_put(out, s + j, m))
                        return -1;
                    if (j == 0 && out->len == start) *first = 0; /* the first character went */
                }
            }
            if (i == 0 && out->len == start) *first = 0;
        }
        return 0;
    case PF__NORM_BERT_CJK: /* spaces around CJK ideographs */
        for (i = 0; i < n; i += k) {
            k = pf__utf8_decode(s + i, n - i, &cp);
            if (pf__tok_is_cjk(cp)) {
                if (pf__buf_put(out, " ", 1) || pf__buf_put(out, s + i, k) || pf__buf_put(out, " ", 1)) return -1;
            } else if (pf__buf_put(out, s + i, k)) {
                return -1;
            }
        }
        return 0;
    }
    return -1;
}

/* Runs the normalizer on s[0 .. n): the result in *out (c->norm memory, or s itself when there
   is no normalizer). */
static int pf__tok_normalize(pf__tok_ctx *c, const unsigned char *s, size_t n, const unsigned char **out,
                             size_t *out_len, int *first) {
    int k;
    *out = s;
    *out_len = n;
    for (k = 0; k < c->t->num_norms; k++) {
        pf__tok_buf *b = &c->norm[k & 1];
        if (pf__tok_norm_step(c, &c->t->norms[k], *out, *out_len, b, first)) return -1;
        *out = b->p ? b->p : (const unsigned char *)"";
        *out_len = b->len;
    }
    return 0;
}

/* ---- the BPE model ---- */

static int pf__tok_cand_less(const pf__tok_cand *a, const pf__tok_cand *b) {
    return a->rank < b->rank || (a->rank == b->rank && a->pos < b->pos);
}

static void pf__tok_heap_push(pf__tok_cand *heap, size_t *n, pf__tok_cand c) {
    size_t i = (*n)++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!pf__tok_cand_less(&c, &heap[parent])) break;
        heap[i] = heap[parent];
        i = parent;
    }
    heap[i] = c;
}

static pf__tok_cand pf__tok_heap_pop(pf__tok_cand *heap, size_t *n) {
    pf__tok_cand top = heap[0], last = heap[--*n];
    size_t i = 0, m = *n;
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= m) break;
        if (child + 1 < m && pf__tok_cand_less(&heap[child + 1], &heap[child])) child++;
        if (!pf__tok_cand_less(&heap[child], &last)) break;
        heap[i] = heap[child];
        i = child;
    }
    if (m > 0) heap[i] = last;
    return top;
}

/* Pushes the merge candidate of the symbol at pos and its next symbol, if the merges have one. */
static void pf__tok_push_pair(const pf_tokenizer *t, pf__tok_ctx *c, size_t *n, uint32_t pos) {
    const pf__tok_merge_slot *m;
    uint32_t next = c->sym[pos].next;
    if (next == UINT32_MAX) return;
    m = pf__tok_merge_find(t, c->sym[pos].id, c->sym[next].id);
    if (m) {
        pf__tok_cand cand;
        cand.rank = m->rank;
        cand.pos = pos;
        cand.new_id = m->new_id;
        pf__tok_heap_push(c->heap, n, cand);
    }
}

static int pf__tok_sym_add(pf__tok_ctx *c, size_t *n, int32_t id) {
    if (*n >= UINT32_MAX / 4 || pf__tok_grow((void **)&c->sym, &c->sym_cap, *n + 1, sizeof *c->sym)) return -1;
    c->sym[(*n)++].id = id;
    return 0;
}

/* A SentencePiece BPE's symbols (each unknown character an unk of its own) as SentencePiece gives
   them: a run of unknown characters is one piece, mapped by its text. */
static int pf__tok_bpe_emit_spm(pf__tok_ctx *c, const unsigned char *s, size_t len) {
    const pf_tokenizer *t = c->t;
    size_t off = 0, run = (size_t)-1;
    uint32_t pos, cp;
    for (pos = 0; pos != UINT32_MAX; pos = c->sym[pos].next) {
        int32_t id = c->sym[pos].id;
        if (id == t->unk_id) {
            if (run == (size_t)-1) run = off;
            off += pf__utf8_decode(s + off, len - off, &cp);
            continue;
        }
        if (run != (size_t)-1) pf__tok_emit(c, pf__tok_spm_lookup(c->outer, s + run, off - run));
        run = (size_t)-1;
        pf__tok_emit_piece(c, id);
        off += t->pieces[id].len;
    }
    if (run != (size_t)-1) pf__tok_emit(c, pf__tok_spm_lookup(c->outer, s + run, off - run));
    return 0;
}

/* The BPE model on one word, s[0 .. len): emits its ids. 0, or -1 when out of memory. As HF's
   BPE::merge_word: each unit (a byte's character when byte-level, else a character), with the
   continuing_subword_prefix when not first and the end_of_word_suffix when last, is its token;
   else its bytes' <0xXX> tokens (byte_fallback); else unk (a run of them fused with fuse_unk;
   like HF, a pending unk goes in only before the next unit found in the vocab, so byte-fallback
   tokens can come before it); else nothing. Then the merges. */
static int pf__tok_bpe(pf__tok_ctx *c, const unsigned char *s, size_t len) {
    const pf_tokenizer *t = c->t;
    size_t i, k, nsym = 0, nheap = 0;
    int32_t unk = -1;
    uint32_t pos, cp;
    if (len == 0) return 0;
    if (t->ignore_merges) { /* a word that is a whole token is taken as it is */
        int32_t id;
        if (t->byte_level) {
            c->mapped.len = 0;
            for (i = 0; i < len; i++)
                if (pf__buf_put(&c->mapped, t->byte_str[s[i]], t->byte_str_len[s[i]])) return -1;
            id = pf__tok_vocab_find(t, (const char *)c->mapped.p, c->mapped.len);
        } else {
            id = pf__tok_vocab_find(t, (const char *)s, len);
        }
        if (id >= 0) {
            pf__tok_emit(c, id);
            return 0;
        }
    }
    for (i = 0; i < len; i += k) {
        const unsigned char *u;
        size_t ulen;
        int32_t id;
        int affixed;
        if (t->byte_level) {
            k = 1;
            u = t->byte_str[s[i]];
            ulen = t->byte_str_len[s[i]];
        } else {
            k = pf__utf8_decode(s + i, len - i, &cp);
            u = s + i;
            ulen = k;
        }
        affixed = (i > 0 && t->prefix) || (i + k == len && t->suffix);
        if (affixed) {
            c->unit.len = 0;
            if ((i > 0 && pf__buf_put(&c->unit, t->prefix, t->prefix_len)) || pf__buf_put(&c->unit, u, ulen) ||
                (i + k == len && pf__buf_put(&c->unit, t->suffix, t->suffix_len)))
                return -1;
            u = c->unit.p;
            ulen = c->unit.len;
        }
        id = !affixed && t->byte_level ? t->byte_id[s[i]] : pf__tok_vocab_find(t, (const char *)u, ulen);
        if (id >= 0 && t->spm_types && t->spm_types[id] != PF__SPM_NORMAL) id = -1;
        if (id >= 0) {
            if (unk >= 0 && pf__tok_sym_add(c, &nsym, unk)) return -1;
            unk = -1;
            if (pf__tok_sym_add(c, &nsym, id)) return -1;
            continue;
        }
        if (t->byte_fallback) {
            size_t j;
            for (j = 0; j < ulen && t->fallback_id[u[j]] >= 0; j++) {}
            if (j == ulen) {
                for (j = 0; j < ulen; j++)
                    if (pf__tok_sym_add(c, &nsym, t->fallback_id[u[j]])) return -1;
                continue;
            }
        }
        if (t->unk_id >= 0) {
            if (unk >= 0 && t->fuse_unk) continue;
            if (unk >= 0 && pf__tok_sym_add(c, &nsym, unk)) return -1;
            unk = t->unk_id;
        }
    }
    if (unk >= 0 && pf__tok_sym_add(c, &nsym, unk)) return -1;
    if (nsym == 0) return 0;
    for (pos = 0; pos < nsym; pos++) {
        c->sym[pos].prev = pos == 0 ? UINT32_MAX : pos - 1;
        c->sym[pos].next = pos + 1 == nsym ? UINT32_MAX : pos + 1;
    }
    if (pf__tok_grow((void **)&c->heap, &c->heap_cap, 2 * nsym, sizeof *c->heap)) return -1;
    for (pos = 0; pos + 1 < nsym; pos++) pf__tok_push_pair(t, c, &nheap, pos);
    while (nheap > 0) {
        pf__tok_cand top = pf__tok_heap_pop(c->heap, &nheap);
        pf__tok_sym *left = &c->sym[top.pos];
        const pf__tok_merge_slot *m;
        uint32_t right;
        if (left->id < 0 || left->next == UINT32_MAX) continue;
        right = left->next;
        /* stale candidate: one of the two symbols changed since it was pushed */
        m = pf__tok_merge_find(t, left->id, c->sym[right].id);
        if (!m || m->new_id != top.new_id) continue;
        left->id = top.new_id;
        left->next = c->sym[right].next;
        c->sym[right].id = -1;
        if (left->next != UINT32_MAX) c->sym[left->next].prev = top.pos;
        if (left->prev != UINT32_MAX) pf__tok_push_pair(t, c, &nheap, left->prev);
        pf__tok_push_pair(t, c, &nheap, top.pos);
    }
    if (c->outer) return pf__tok_bpe_emit_spm(c, s, len);
    for (pos = 0; pos != UINT32_MAX; pos = c->sym[pos].next) pf__tok_emit(c, c->sym[pos].id);
    return 0;
}

/* ---- the WordPiece model ---- */

/* The end of the longest run of whole units from s[i] that is at most `room` bytes long. */
static size_t pf__tok_units_within(const unsigned char *s, size_t i, size_t len, size_t room) {
    size_t end = i, k;
    uint32_t cp;
    while (end < len) {
        k = pf__utf8_decode(s + end, len - end, &cp);
        if (end + k - i > room) break;
        end += k;
    }
    return end;
}

/* The vocab id of prefix + s[0 .. len) (prefix_len 0: s alone), or -1. unit is scratch. */
static int32_t pf__tok_find_prefixed(pf__tok_ctx *c, const char *prefix, size_t prefix_len, const unsigned char *s,
                                     size_t len) {
    if (!prefix_len) return pf__tok_vocab_find(c->t, (const char *)s, len);
    c->unit.len = 0;
    if (pf__buf_put(&c->unit, prefix, prefix_len) || pf__buf_put(&c->unit, s, len)) {
        c->out_of_memory = 1;
        return -1;
    }
    return pf__tok_vocab_find(c->t, (const char *)c->unit.p, c->unit.len);
}

/* The WordPiece model on one word, as HF's WordPiece::tokenize: the longest vocab piece at its
   start, then the longest with the continuing_subword_prefix at each later place; a word with
   a place no piece starts, or longer than max_input_chars_per_word characters, is unk alone. */
static void pf__tok_wordpiece(pf__tok_ctx *c, const unsigned char *s, size_t len) {
    const pf_tokenizer *t = c->t;
    size_t start = 0, chars = 0, mark = c->count, k;
    uint32_t cp;
    for (k = 0; k < len && chars <= t->max_word_chars; k += pf__utf8_decode(s + k, len - k, &cp)) chars++;
    while (chars <= t->max_word_chars && start < len) {
        size_t prefix_len = start ? t->prefix_len : 0;
        /* no piece is longer than the longest token: start below that */
        size_t end = t->max_token_len < prefix_len ? start
                     : pf__tok_units_within(s, start, len, t->max_token_len - prefix_len);
        int32_t id = -1;
        while (end > start && (id = pf__tok_find_prefixed(c, t->prefix, prefix_len, s + start, end - start)) < 0) {
            pf__utf8_decode_before(s, start, end, &k);
            end -= k;
        }
        if (id < 0) break;
        pf__tok_emit(c, id);
        start = end;
    }
    if (start == len && chars <= t->max_word_chars) return;
    c->count = mark; /* the word is unk as a whole */
    if (t->unk_id < 0) c->needs_unk = 1;
    else pf__tok_emit(c, t->unk_id);
}

/* ---- the Unigram model ---- */

typedef struct pf__tok_node { /* the best segmentation of a word's bytes up to here */
    double score;  /* the sum of its pieces' scores */
    size_t start;  /* where its last piece starts */
    int32_t id;    /* its last piece */
    int reached;
} pf__tok_node;

/* Emits the ids of an unknown run s[0 .. len) (HF's fused unk pieces, looked up again as a whole):
   its own id if the vocab has it, else its bytes' <0xXX> tokens (byte_fallback, all of them
   there), else unk. */
static void pf__tok_unigram_unknown(pf__tok_ctx *c, const unsigned char *s, size_t len) {
    const pf_tokenizer *t = c->t;
    int32_t id;
    size_t i;
    if (c->outer) { /* SentencePiece's merged unknown piece, mapped by its text */
        pf__tok_emit(c, pf__tok_spm_lookup(c->outer, s, len));
        return;
    }
    id = pf__tok_vocab_find(t, (const char *)s, len);
    if (id < 0 && t->byte_fallback) {
        for (i = 0; i < len && t->fallback_id[s[i]] >= 0; i++) {}
        if (i == len) {
            for (i = 0; i < len; i++) pf__tok_emit(c, t->fallback_id[s[i]]);
            return;
        }
    }
    pf__tok_emit(c, id >= 0 ? id : t->unk_id);
}

/* The Unigram model on one word: the segmentation with the highest total score (Viterbi, as HF's
   Unigram::encode_optimized: pieces at each character, ties kept by the piece found first, a
   character no piece covers alone scored as unk), its runs of unk fused into one. -1 when out of
   memory. */
static int pf__tok_unigram(pf__tok_ctx *c, const unsigned char *s, size_t len) {
    const pf_tokenizer *t = c->t;
    size_t start, end, k, n_path = 0;
    pf__tok_node *nodes;
    uint32_t cp;
    if (pf__tok_grow((void **)&c->lattice, &c->lattice_cap, len + 1, sizeof *c->lattice) ||
        pf__tok_grow((void **)&c->path, &c->path_cap, len + 1, sizeof *c->path))
        return -1;
    nodes = c->lattice;
    memset(nodes, 0, (len + 1) * sizeof *nodes);
    nodes[0].reached = 1;
    for (start = 0; start < len; start += k) {
        double base = nodes[start].score, score;
        uint32_t h = 2166136261u; /* pf__tok_hash, a byte at a time */
        int single = 0;
        size_t j = start, unit;
        k = pf__utf8_decode(s + start, len - start, &cp);
        if (!nodes[start].reached) continue; /* only after a character HF refuses (needs_unk) */
        for (end = start; end < len && end - start < t->max_token_len; end += unit) {
            int32_t id;
            unit = pf__utf8_decode(s + end, len - end, &cp);
            if (end + unit - start > t->max_token_len) break;
            for (; j < end + unit; j++) h = (h ^ s[j]) * 16777619u;
            if (cp == PF__UTF8_INVALID) break; /* no piece holds a byte that is not UTF-8 */
            if ((id = pf__tok_vocab_find_hashed(t, (const char *)s + start, end + unit - start, h)) < 0) continue;
            if (t->spm_types && t->spm_types[id] != PF__SPM_NORMAL) continue; /* SentencePiece matches no other */
            score = t->spm_types ? (double)((float)base + (float)t->pieces[id].score) : base + t->pieces[id].score;
            if (!nodes[end + unit].reached || score > nodes[end + unit].score) {
                nodes[end + unit].score = score;
                nodes[end + unit].start = start;
                nodes[end + unit].id = id;
                nodes[end + unit].reached = 1;
            }
            if (end == start) single = 1;
        }
        if (single) continue;
        if (t->unk_id < 0) {
            c->needs_unk = 1;
            continue;
        }
        score = t->spm_types ? (double)((float)base + (float)t->unk_score) : base + t->unk_score;
        if (!nodes[start + k].reached || score > nodes[start + k].score) {
            nodes[start + k].score = score;
            nodes[start + k].start = start;
            nodes[start + k].id = t->unk_id;
            nodes[start + k].reached = 1;
        }
    }
    if (c->needs_unk || !nodes[len].reached) return 0;
    for (end = len; end > 0; end = nodes[end].start) c->path[n_path++] = end;
    for (start = 0; n_path > 0; start = end) {
        end = c->path[--n_path];
        if (nodes[end].id != t->unk_id) {
            pf__tok_emit_piece(c, nodes[end].id);
            continue;
        }
        while (n_path > 0 && nodes[c->path[n_path - 1]].id == t->unk_id) end = c->path[--n_path];
        pf__tok_unigram_unknown(c, s + start, end - start);
    }
    return 0;
}

/* The model on one pre-tokenized word: emits its ids. 0, or -1 when out of memory. */
static int pf__tok_model(pf__tok_ctx *c, const unsigned char *s, size_t len) {
    size_t i;
    if (len == 0) return 0;
    if (c->t->spm) { /* the SentencePiece model on the whole normalized text, as SentencePiece runs it */
        const pf_tokenizer *outer = c->t;
        int rc;
        c->t = outer->spm;
        c->outer = outer;
        rc = c->t->model == PF__MODEL_UNIGRAM ? pf__tok_unigram(c, s, len) : pf__tok_bpe(c, s, len);
        c->t = outer;
        c->outer = NULL;
        return rc;
    }
    if (c->t->model == PF__MODEL_BYTES) {
        for (i = 0; i < len; i++) pf__tok_emit(c, (int32_t)s[i] + PF__BYTES_OFFSET);
        return 0;
    }
    if (c->t->model == PF__MODEL_WORDPIECE) {
        pf__tok_wordpiece(c, s, len);
        return 0;
    }
    if (c->t->model == PF__MODEL_UNIGRAM) return pf__tok_unigram(c, s, len);
    return pf__tok_bpe(c, s, len);
}

/* ---- split patterns ---- */

/* L, N or S of a code point; 0 for the rest ("other": neither letter, number nor space). */
static unsigned pf__tok_lns(uint32_t cp) {
    return pf__unicode_class(cp) & (PF__UC_L | PF__UC_N | PF__UC_S);
}

/* The end of the run of units from j whose pf__tok_lns is `want`. */
static size_t pf__tok_run(const unsigned char *s, size_t j, size_t end, unsigned want) {
    uint32_t cp;
    size_t n;
    for (; j < end; j += n) {
        n = pf__utf8_decode(s + j, end - j, &cp);
        if (pf__tok_lns(cp) != want) break;
    }
    return j;
}

/* \s+(?!\S)|\s+ at s[i], a space: the run of spaces; when a non-space follows, the run less its
   last space (which then goes with what follows), or the single space when the run has one. */
static size_t pf__tok_match_spaces(const unsigned char *s, size_t i, size_t end) {
    uint32_t cp;
    size_t j, n, k = i; /* k: start of the run's last unit */
    for (j = i + pf__utf8_decode(s + i, end - i, &cp); j < end; j += n) {
        n = pf__utf8_decode(s + j, end - j, &cp);
        if (!(pf__unicode_class(cp) & PF__UC_S)) break;
        k = j;
    }
    if (j == end || k == i) return j;
    return k;
}

/* Matches GPT-2's regex at s[i] (i < end) and returns the end of the match:
   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
   The alternatives are tried in order, as a backtracking engine does. */
static size_t pf__tok_match_gpt2(const unsigned char *s, size_t i, size_t end) {
    uint32_t cp;
    size_t j, n;
    unsigned cls;
    if (s[i] == '\'' && i + 1 < end) {
        unsigned char a = s[i + 1], b = i + 2 < end ? s[i + 2] : 0;
        if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
        if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
    }
    /* ' ?X+' with X one of \p{L}, \p{N}, [^\s\p{L}\p{N}]: the optional space is U+0020 only */
    j = s[i] == ' ' && i + 1 < end ? i + 1 : i;
    n = pf__utf8_decode(s + j, end - j, &cp);
    cls = pf__tok_lns(cp);
    if (!(cls & PF__UC_S)) return pf__tok_run(s, j + n, end, cls); /* 0 is the "other" class */
    return pf__tok_match_spaces(s, i, end); /* a space then a space: no ' ?X+' matches */
}

/* Folds an ASCII letter to lower case (other bytes unchanged). */
static unsigned char pf__tok_fold(unsigned char c) {
    return c >= 'A' && c <= 'Z' ? (unsigned char)(c + 32) : c;
}

/* Matches LLaMA-3's regex (max_digits 3) or Qwen2's (max_digits 1) at s[i] (i < end):
   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|
   \s*[\r\n]+|\s+(?!\S)|\s+ */
static size_t pf__tok_match_llama3(const unsigned char *s, size_t i, size_t end, int max_digits) {
    uint32_t cp, cp2;
    size_t j, n, n2, last_nl;
    unsigned cls;
    int digits;
    if (s[i] == '\'' && i + 1 < end) { /* case-insensitive: Oniguruma folds U+017F (long s) to s */
        unsigned char a = pf__tok_fold(s[i + 1]), b = i + 2 < end ? pf__tok_fold(s[i + 2]) : 0;
        if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
        if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
        if (a == 0xC5 && i + 2 < end && s[i + 2] == 0xBF) return i + 3;
    }
    n = pf__utf8_decode(s + i, end - i, &cp);
    cls = pf__tok_lns(cp);
    /* [^\r\n\p{L}\p{N}]?\p{L}+ */
    if (!(cls & (PF__UC_L | PF__UC_N)) && cp != '\r' && cp != '\n' && i + n < end) {
        n2 = pf__utf8_decode(s + i + n, end - i - n, &cp2);
        if (pf__tok_lns(cp2) == PF__UC_L) return pf__tok_run(s, i + n + n2, end, PF__UC_L);
    }
    if (cls == PF__UC_L) return pf__tok_run(s, i + n, end, PF__UC_L);
    if (cls == PF__UC_N) { /* \p{N}{1,max_digits} */
        for (j = i + n, digits = 1; j < end && digits < max_digits; j += n, digits++) {
            n = pf__utf8_decode(s + j, end - j, &cp);
            if (pf__tok_lns(cp) != PF__UC_N) break;
        }
        return j;
    }
    /* ' ?[^\s\p{L}\p{N}]+[\r\n]*' */
    j = i;
    if (cp == ' ' && i + 1 < end) {
        n2 = pf__utf8_decode(s + i + 1, end - i - 1, &cp2);
        if (pf__tok_lns(cp2) == 0) j = i + 1;
    }
    if (j > i || cls == 0) {
        j = pf__tok_run(s, j, end, 0);
        while (j < end && (s[j] == '\r' || s[j] == '\n')) j++;
        return j;
    }
    /* a space: \s*[\r\n]+ takes the run of spaces up to its last \r or \n, if it has one */
    last_nl = i;
    for (j = i; j < end; j += n) {
        n = pf__utf8_decode(s + j, end - j, &cp);
        if (!(pf__unicode_class(cp) & PF__UC_S)) break;
        if (cp == '\r' || cp == '\n') last_nl = j + 1;
    }
    if (last_nl > i) return last_nl;
    return pf__tok_match_spaces(s, i, end);
}

/* BLOOM's excluded characters: ( | ) \s . , ! ? … 。 ， 、 । ۔ ، */
static int pf__tok_bloom_excluded(uint32_t cp) {
    switch (cp) {
    case '(': case ')': case '|': case '.': case ',': case '!': case '?':
    case 0x2026: case 0x3002: case 0xFF0C: case 0x3001: case 0x0964: case 0x06D4: case 0x060C:
        return 1;
    }
    return (pf__unicode_class(cp) & PF__UC_S) != 0;
}

/* BLOOM's regex at s[i]:  ?[^(\s|[.,!?…。，、।۔،])]+ ; returns i when it does not match there. */
static size_t pf__tok_match_bloom(const unsigned char *s, size_t i, size_t end) {
    uint32_t cp;
    size_t j = i, start, n;
    if (s[i] == ' ' && i + 1 < end) {
        pf__utf8_decode(s + i + 1, end - i - 1, &cp);
        if (!pf__tok_bloom_excluded(cp)) j = i + 1;
    }
    for (start = j; j < end; j += n) {
        n = pf__utf8_decode(s + j, end - j, &cp);
        if (pf__tok_bloom_excluded(cp)) break;
    }
    return j > start ? j : i;
}

/* The leftmost match of a split pattern in s[i .. end) (i < end): 1 and its bounds, or 0. */
static int pf__tok_find(const pf__tok_pre *p, const unsigned char *s, size_t i, size_t end, size_t *ms, size_t *me) {
    uint32_t cp;
    size_t n, j;
    switch (p->pattern) {
    case PF__PAT_GPT2:
        *ms = i;
        *me = pf__tok_match_gpt2(s, i, end);
        return 1;
    case PF__PAT_LLAMA3:
    case PF__PAT_QWEN2:
        *ms = i;
        *me = pf__tok_match_llama3(s, i, end, p->pattern == PF__PAT_LLAMA3 ? 3 : 1);
        return 1;
    case PF__PAT_BLOOM:
        for (; i < end; i += pf__utf8_decode(s + i, end - i, &cp)) {
            j = pf__tok_match_bloom(s, i, end);
            if (j > i) {
                *ms = i;
                *me = j;
                return 1;
            }
        }
        return 0;
    case PF__PAT_WORD_NL: /* \S+\n? */
        for (; i < end; i += n) {
            n = pf__utf8_decode(s + i, end - i, &cp);
            if (!(pf__unicode_class(cp) & PF__UC_S)) break;
        }
        if (i == end) return 0;
        for (j = i; j < end; j += n) {
            n = pf__utf8_decode(s + j, end - j, &cp);
            if (pf__unicode_class(cp) & PF__UC_S) break;
        }
        if (j < end && s[j] == '\n') j++;
        *ms = i;
        *me = j;
        return 1;
    case PF__PAT_LITERAL:
        for (; i + p->lit_len <= end; i++)
            if (s[i] == (unsigned char)p->lit[0] && !memcmp(s + i, p->lit, p->lit_len)) {
                *ms = i;
                *me = i + p->lit_len;
                return 1;
            }
        return 0;
    case PF__PAT_FLAGS:
        for (; i < end; i += n) {
            n = pf__utf8_decode(s + i, end - i, &cp);
            if (pf__unicode_class(cp) & p->flags) {
                *ms = i;
                *me = i + n;
                return 1;
            }
        }
        return 0;
    }
    return 0;
}

static int pf__tok_pre_run(pf__tok_ctx *c, int stage, const unsigned char *s, size_t len, int first);

/* Splits s[0 .. len) on the pattern of p as HF's NormalizedString::split with p's behavior (and
   invert), and passes each non-empty piece on to stage `next`. */
static int pf__tok_split(pf__tok_ctx *c, const pf__tok_pre *p, int next, const unsigned char *s, size_t len,
                         int first) {
    size_t i = 0, ms = 0, me = 0, ps = 0, pe = 0;
    int found = 0, have = 0, prev_match = 0, mergeable = 0;
    if (len == 0) return 0;
    found = pf__tok_find(p, s, 0, len, &ms, &me);
    while (i < len) {
        size_t ss = i, se;
        int is_match, emit_alone;
        if (found && ms == i) {
            se = me;
            is_match = 1;
            found = se < len && pf__tok_find(p, s, se, len, &ms, &me);
        } else {
            se = found ? ms : len;
            is_match = 0;
        }
        i = se;
        if (p->invert) is_match = !is_match;
        switch (p->behavior) {
        case PF__SPLIT_REMOVED:
            if (!is_match && pf__tok_pre_run(c, next, s + ss, se - ss, first && ss == 0)) return -1;
            continue;
        case PF__SPLIT_ISOLATED:
            if (pf__tok_pre_run(c, next, s + ss, se - ss, first && ss == 0)) return -1;
            continue;
        case PF__SPLIT_MERGED_PREVIOUS:
            emit_alone = !(have && is_match && !prev_match);
            break;
        case PF__SPLIT_MERGED_NEXT:
            emit_alone = !(have && mergeable && !is_match);
            break;
        default: /* PF__SPLIT_CONTIGUOUS */
            emit_alone = !(have && is_match == prev_match);
            break;
        }
        prev_match = is_match;
        if (!emit_alone) {
            pe = se;
            mergeable = 0;
            continue;
        }
        if (have && pf__tok_pre_run(c, next, s + ps, pe - ps, first && ps == 0)) return -1;
        have = 1;
        ps = ss;
        pe = se;
        mergeable = is_match;
    }
    if (have && pf__tok_pre_run(c, next, s + ps, pe - ps, first && ps == 0)) return -1;
    return 0;
}

/* Pre-tokenizer stage `stage` on a piece; past the last stage, the model. `first`: the piece
   starts where the original text does (Metaspace's prepend_scheme "first"). */
static int pf__tok_pre_run(pf__tok_ctx *c, int stage, const unsigned char *s, size_t len, int first) {
    const pf_tokenizer *t = c->t;
    const pf__tok_pre *p;
    pf__tok_buf *b;
    if (len == 0) return 0;
    if (stage == t->num_pres) return pf__tok_model(c, s, len);
    p = &t->pres[stage];
    b = &c->pre[stage];
    switch (p->kind) {
    case PF__PRE_SPLIT:
        return pf__tok_split(c, p, stage + 1, s, len, first);
    case PF__PRE_PREFIX_SPACE: /* ByteLevel's add_prefix_space, on every piece */
        if (s[0] == ' ') return pf__tok_pre_run(c, stage + 1, s, len, first);
        b->len = 0;
        if (pf__buf_put(b, " ", 1) || pf__buf_put(b, s, len)) return -1;
        return pf__tok_pre_run(c, stage + 1, b->p, b->len, first);
    case PF__PRE_METASPACE: {
        /* spaces become the replacement, which is prepended (always, or to the first piece)
           unless the piece starts with it; then split before each replacement */
        pf__tok_pre split;
        b->len = 0;
        if ((p->prepend == PF__PREPEND_ALWAYS || (p->prepend == PF__PREPEND_FIRST && first)) && s[0] != ' ' &&
            !(len >= p->lit_len && !memcmp(s, p->lit, p->lit_len)) && pf__buf_put(b, p->lit, p->lit_len))
            return -1;
        if (pf__buf_replace(b, s, len, " ", 1, p->lit, p->lit_len)) return -1;
        if (!p->split) return pf__tok_pre_run(c, stage + 1, b->p, b->len, first);
        split = *p;
        split.kind = PF__PRE_SPLIT;
        split.pattern = PF__PAT_LITERAL;
        split.behavior = PF__SPLIT_MERGED_NEXT;
        split.invert = 0;
        return pf__tok_split(c, &split, stage + 1, b->p, b->len, first);
    }
    }
    return -1;
}

/* ---- added tokens ---- */

/* The longest added token of `pass` at s[p], or NULL. */
static const pf__tok_added *pf__tok_added_at(const pf_tokenizer *t, int pass, const unsigned char *s,
                                             size_t p, size_t hi) {
    const pf__tok_added *best = NULL;
    uint32_t k;
    for (k = t->added_first[pass][s[p]]; k < t->added_first[pass][s[p] + 1]; k++) {
        const pf__tok_added *a = &t->added[t->added_order[k]];
        if (a->match_len <= hi - p && (!best || a->match_len > best->match_len) &&
            !memcmp(a->match, s + p, a->match_len))
            best = a;
    }
    return best;
}

static int pf__tok_encode_added(pf__tok_ctx *c, int pass, const unsigned char *s, size_t lo, size_t hi, int first);

/* A piece of the raw text between added tokens: normalized, then its normalized added tokens. */
static int pf__tok_encode_segment(pf__tok_ctx *c, const unsigned char *s, size_t lo, size_t hi) {
    const unsigned char *n;
    size_t len;
    int first = lo == 0;
    if (c->t->spm_marian && hi - lo > 2 && s[lo] == '>' && s[lo + 1] == '>') {
        /* Marian's remove_language_code: a piece that starts with ">>xx<<" has that as its first token */
        size_t e;
        for (e = lo + 2; e + 1 < hi && (s[e] != '<' || s[e + 1] != '<'); e++) {}
        if (e + 1 < hi) {
            pf__tok_emit(c, pf__tok_spm_lookup(c->t, s + lo, e + 2 - lo));
            if ((lo = e + 2) == hi) return 0;
        }
    }
    if (c->t->num_norms == 0) return pf__tok_encode_added(c, 1, s, lo, hi, first);
    if (pf__tok_normalize(c, s + lo, hi - lo, &n, &len, &first)) return -1;
    return pf__tok_encode_added(c, 1, n, 0, len, first);
}

/* Splits s[lo .. hi) on the added tokens of `pass` (HF's AddedVocabulary::find_matches): the
   pieces between go on to normalization (pass 0) or to the pre-tokenizer (pass 1). */
static int pf__tok_encode_added(pf__tok_ctx *c, int pass, const unsigned char *s, size_t lo, size_t hi, int first) {
    const pf_tokenizer *t = c->t;
    size_t p = lo, done = lo, len;
    uint32_t cp;
    if (lo == hi) return 0;
    if (t->added_first[pass][256] == t->added_first[pass][0]) {
        if (pass == 0) return pf__tok_encode_segment(c, s, lo, hi);
        return pf__tok_pre_run(c, 0, s + lo, hi - lo, first);
    }
    while (p < hi) {
        const pf__tok_added *a = pf__tok_added_at(t, pass, s, p, hi);
        size_t start = p, stop;
        if (!a) {
            p++;
            continue;
        }
        stop = p + a->match_len;
        p = stop;
        /* single_word: no word character (\w) may touch it; a rejected match is skipped whole,
           as by HF's non-overlapping match iterator */
        if (a->single_word) {
            if (start > lo && (pf__unicode_class(pf__utf8_decode_before(s, lo, start, &len)) & PF__UC_W))
                continue;
            if (stop < hi) {
                pf__utf8_decode(s + stop, hi - stop, &cp);
                if (pf__unicode_class(cp) & PF__UC_W) continue;
            }
        }
        if (a->lstrip) /* takes the spaces before it, down to the previous match */
            while (start > done &&
                   (pf__unicode_class(pf__utf8_decode_before(s, done, start, &len)) & PF__UC_S))
                start -= len;
        if (a->rstrip) /* and the spaces after it */
            while (stop < hi) {
                len = pf__utf8_decode(s + stop, hi - stop, &cp);
                if (!(pf__unicode_class(cp) & PF__UC_S)) break;
                stop += len;
            }
        if (done < start) {
            if (pass == 0 ? pf__tok_encode_segment(c, s, done, start)
                          : pf__tok_pre_run(c, 0, s + done, start - done, first && done == lo))
                return -1;
        }
        pf__tok_emit(c, a->id);
        done = p = stop;
    }
    if (done < hi)
        return pass == 0 ? pf__tok_encode_segment(c, s, done, hi) : pf__tok_pre_run(c, 0, s + done, hi - done, first && done == lo);
    return 0;
}

pf_tokenize_options pf_tokenize_options_init(void) {
    pf_tokenize_options o;
    memset(&o, 0, sizeof o);
    o.truncation = PF_TRUNCATION_LONGEST_FIRST;
    return o;
}

/* Cuts the encoded texts (*na ids, and *nb of the pair) to max_length ids in all, as HF's
   truncate_encodings; -1 where HF fails (the text to cut is too short, or there is no pair). */
static int pf__tok_truncate(size_t max_length, pf_truncation strategy, int pair, size_t *na, size_t *nb) {
    size_t total = *na + (pair ? *nb : 0), n1, n2, *target;
    if (max_length == 0) { /* HF empties both, whatever the strategy */
        *na = *nb = 0;
        return 0;
    }
    if (total <= max_length) return 0;
    if (strategy == PF_TRUNCATION_LONGEST_FIRST) {
        if (!pair) {
            *na = max_length;
            return 0;
        }
        /* the shorter keeps its length when the longer can take the rest; else both get about half,
           the longer the odd one */
        n1 = *na < *nb ? *na : *nb;
        n2 = n1 > max_length ? n1 : (n1 > max_length - n1 ? n1 : max_length - n1);
        if (n1 + n2 > max_length) {
            n1 = max_length / 2;
            n2 = n1 + max_length % 2;
        }
        if (*na > *nb) {
            size_t swap = n1;
            n1 = n2;
            n2 = swap;
        }
        if (*na > n1) *na = n1;
        if (*nb > n2) *nb = n2;
        return 0;
    }
    if (strategy == PF_TRUNCATION_ONLY_SECOND && !pair) return -1;
    target = strategy == PF_TRUNCATION_ONLY_FIRST ? na : nb;
    if (*target <= total - max_length) return -1;
    *target -= total - max_length;
    return 0;
}

/* Encodes a text, or a pair (pair_text non-NULL), laid out by the post-processor's template
   (with its special tokens unless the options say not), after truncation. */
static pf_result pf__tok_encode(const pf_tokenizer *tokenizer, const char *text, size_t text_len, const char *pair_text,
                                size_t pair_len, const pf_tokenize_options *options, int32_t *ids, int32_t *type_ids,
                                size_t capacity, size_t *num_ids) {
    pf_tokenize_options o = options ? *options : pf_tokenize_options_init();
    pf__tok_ctx c;
    int rc = 0, pair = pair_text != NULL, special = !o.no_special_tokens;
    size_t k, n = 0, i, na = 0, nb = 0, b_start = 0;
    pf_result result = PF_OK;
    if (num_ids) *num_ids = 0;
    if (!tokenizer || !num_ids || (!text && text_len) || (!ids && capacity) ||
        (unsigned)o.truncation > PF_TRUNCATION_ONLY_SECOND)
        return PF_ERROR_INVALID_ARGUMENT;
    if (o.max_length && special && o.max_length < tokenizer->post_added[pair]) return PF_ERROR_INVALID_ARGUMENT;
    memset(&c, 0, sizeof c);
    c.t = tokenizer;
    rc = text_len ? pf__tok_encode_added(&c, 0, (const unsigned char *)text, 0, text_len, 1) : 0;
    na = b_start = c.count;
    if (!rc && pair && pair_len) rc = pf__tok_encode_added(&c, 0, (const unsigned char *)pair_text, 0, pair_len, 1);
    nb = c.count - b_start;
    if (rc || c.out_of_memory) result = PF_ERROR_OUT_OF_MEMORY;
    else if (c.needs_unk) result = PF_ERROR_INVALID_ARGUMENT;
    else if (o.max_length &&
             pf__tok_truncate(o.max_length - (special ? tokenizer->post_added[pair] : 0), o.truncation, pair, &na, &nb))
        result = PF_ERROR_INVALID_ARGUMENT;
    for (k = 0; result == PF_OK && k < tokenizer->post_len[pair]; k++) {
        const pf__tok_post_item *item = &tokenizer->post[pair][k];
        const int32_t *from = item->id == PF__TOK_SEQ_A || !c.ids ? c.ids : c.ids + b_start; /* no ids: NULL, no offset */
        size_t count = item->id >= 0 ? (size_t)special : item->id == PF__TOK_SEQ_A ? na : nb;
        if (tokenizer->eos_once && item->id >= 0 && k > 0 && tokenizer->post[pair][k - 1].id < 0) {
            const pf__tok_post_item *prev = &tokenizer->post[pair][k - 1];
            size_t prev_n = prev->id == PF__TOK_SEQ_A ? na : nb;
            const int32_t *prev_ids = prev->id == PF__TOK_SEQ_A ? c.ids : c.ids + b_start;
            if (prev_n && prev_ids[prev_n - 1] == item->id) count = 0;
        }
        for (i = 0; i < count; i++, n++) {
            if (n >= capacity) continue;
            ids[n] = item->id >= 0 ? item->id : from[i];
            if (type_ids) type_ids[n] = (int32_t)item->type_id;
        }
    }
    pf__tok_ctx_free(&c);
    if (result != PF_OK) return result;
    *num_ids = n;
    return n > capacity ? PF_ERROR_BUFFER_TOO_SMALL : PF_OK;
}

pf_result pf_tokenize(const pf_tokenizer *tokenizer, const char *text, size_t text_len, int32_t *ids,
                      size_t capacity, size_t *num_ids) {
    pf_tokenize_options o = pf_tokenize_options_init();
    o.no_special_tokens = 1;
    return pf__tok_encode(tokenizer, text, text_len, NULL, 0, &o, ids, NULL, capacity, num_ids);
}

pf_result pf_tokenize_special(const pf_tokenizer *tokenizer, const char *text, size_t text_len, int32_t *ids,
                              size_t capacity, size_t *num_ids) {
    return pf__tok_encode(tokenizer, text, text_len, NULL, 0, NULL, ids, NULL, capacity, num_ids);
}

pf_result pf_tokenize_pair(const pf_tokenizer *tokenizer, const char *text, size_t text_len, const char *pair,
                           size_t pair_len, const pf_tokenize_options *options, int32_t *ids, int32_t *type_ids,
                           size_t capacity, size_t *num_ids) {
    if (!pair && pair_len) {
        if (num_ids) *num_ids = 0;
        return PF_ERROR_INVALID_ARGUMENT;
    }
    return pf__tok_encode(tokenizer, text, text_len, pair, pair_len, options, ids, type_ids, capacity, num_ids);
}

/* ---- decoding ---- */

typedef struct pf__tok_list { /* a list of token strings */
    pf__tok_buf text;
    size_t *off, *len;
    size_t n, cap;
    pf__tok_buf scratch[2]; /* for steps that rewrite a token in several passes */
} pf__tok_list;

/* Ends the token that began at text offset `start`. */
static int pf__list_push(pf__tok_list *l, size_t start) {
    if (!l->text.p && pf__tok_grow((void **)&l->text.p, &l->text.cap, 1, 1)) return -1; /* never NULL then */
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        size_t *o = (size_t *)realloc(l->off, cap * sizeof *o), *n;
        if (!o) return -1;
        l->off = o;
        n = (size_t *)realloc(l->len, cap * sizeof *n);
        if (!n) return -1;
        l->len = n;
        l->cap = cap;
    }
    l->off[l->n] = start;
    l->len[l->n] = l->text.len - start;
    l->n++;
    return 0;
}

static void pf__list_free(pf__tok_list *l) {
    free(l->scratch[0].p);
    free(l->scratch[1].p);
    free(l->text.p);
    free(l->off);
    free(l->len);
}

/* ByteLevel: a token whose characters are all in the byte map becomes those bytes, another its
   own bytes. Appends to out. */
static int pf__tok_unbyte(const pf_tokenizer *t, pf__tok_buf *out, const unsigned char *s, size_t n) {
    size_t i, k, start = out->len;
    uint32_t cp;
    for (i = 0; i < n; i += k) {
        unsigned char b;
        k = pf__utf8_decode(s + i, n - i, &cp);
        if (cp >= 512 || t->char_byte[cp] < 0) {
            out->len = start;
            return pf__buf_put(out, s, n);
        }
        b = (unsigned char)t->char_byte[cp];
        if (pf__buf_put(out, &b, 1)) return -1;
    }
    return 0;
}

/* ByteFallback's test: "<0xXX>" (Rust's u8::from_str_radix on XX: a '+' sign is allowed). */
static int pf__tok_byte_token(const unsigned char *s, size_t n) {
    int hi, lo;
    if (n != 6 || memcmp(s, "<0x", 3) || s[5] != '>') return -1;
    lo = s[4] >= '0' && s[4] <= '9' ? s[4] - '0' : (s[4] | 0x20) >= 'a' && (s[4] | 0x20) <= 'f' ? (s[4] | 0x20) - 'a' + 10 : -1;
    if (s[3] == '+') return lo;
    hi = s[3] >= '0' && s[3] <= '9' ? s[3] - '0' : (s[3] | 0x20) >= 'a' && (s[3] | 0x20) <= 'f' ? (s[3] | 0x20) - 'a' + 10 : -1;
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

/* The WordPiece decoder's cleanup of a token (HF's decoders::wordpiece::cleanup): spaces before
   punctuation and contractions go, one replacement after the other; rewrites out->text from
   `start` on. */
static int pf__tok_wordpiece_cleanup(pf__tok_list *out, size_t start, int do_not) {
    static const char *const rules[][2] = {
        {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"}, {" n't", "n't"}, {" 'm", "'m"},
        {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
    size_t r;
    pf__tok_buf *from = &out->scratch[0], *to = &out->scratch[1], *swap;
    from->len = 0;
    if (pf__buf_put(from, out->text.p + start, out->text.len - start)) return -1;
    for (r = 0; r < PF__TOK_LEN(rules); r++) {
        if (r == 7 && !do_not) continue; /* transformers' clean_up_tokenization has no " do not" */
        to->len = 0;
        if (pf__buf_replace(to, from->p, from->len, rules[r][0], strlen(rules[r][0]), rules[r][1], strlen(rules[r][1])))
            return -1;
        swap = from;
        from = to;
        to = swap;
    }
    out->text.len = start;
    return pf__buf_put(&out->text, from->p, from->len);
}

/* Is s[0 .. n) the text of a special added token (transformers' all_special_tokens)? */
static int pf__tok_special_text(const pf_tokenizer *t, const unsigned char *s, size_t n) {
    size_t i;
    for (i = 0; i < t->num_added; i++)
        if (t->added[i].special && t->added[i].len == n && !memcmp(t->added[i].content, s, n)) return 1;
    return 0;
}

/* SentencePiece's Decode of pieces in[from .. to) with the model sp, appended to out: a control
   piece is nothing, <unk> its unk_surface, a piece it does not know itself; otherwise U+2581 is a
   space, and while nothing is written yet a piece loses the one it starts with (with
   add_dummy_prefix or remove_extra_whitespaces; the latter for every such piece). */
static int pf__spm_decode(const pf_tokenizer *sp, const pf__tok_list *in, size_t from, size_t to, pf__tok_buf *out) {
    size_t i, start = out->len;
    int bos_ws_seen = 0, is_bos_ws = 1;
    for (i = from; i < to; i++) {
        const unsigned char *s = in->text.p + in->off[i];
        size_t n = in->len[i];
        int32_t id = n ? pf__tok_vocab_find(sp, (const char *)s, n) : -1;
        int type = id >= 0 ? sp->spm_types[id] : PF__SPM_UNKNOWN;
        if (bos_ws_seen || out->len > start) is_bos_ws = 0;
        bos_ws_seen = 0;
        if (type == PF__SPM_CONTROL) continue;
        if (type == PF__SPM_UNKNOWN) {
            int is_unk = id >= 0 && id == sp->unk_id;
            if (is_unk ? pf__buf_put(out, sp->spm_unk_surface, sp->spm_unk_surface_len) : pf__buf_put(out, s, n)) return -1;
            continue;
        }
        if (is_bos_ws && (sp->spm_flags & (PF__SPM_DUMMY_PREFIX | PF__SPM_REMOVE_SPACES)) && n >= 3 &&
            !memcmp(s, "\xE2\x96\x81", 3)) {
            s += 3;
            n -= 3;
            bos_ws_seen = !(sp->spm_flags & PF__SPM_REMOVE_SPACES);
        }
        if (pf__buf_replace(out, s, n, "\xE2\x96\x81", 3, " ", 1)) return -1;
    }
    return 0;
}

/* Python's str.isspace for one code point (what str.strip() removes). */
static int pf__py_space(uint32_t cp) {
    return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

/* Marian's and M2M100's convert_tokens_to_string: the runs between special tokens decoded by
   SentencePiece, each special token as it is (Marian: and a space); Marian then turns U+2581 into
   spaces; the whole stripped as Python's str.strip(); clean_up_tokenization_spaces last. One token. */
static int pf__tok_dec_spm(const pf_tokenizer *t, const pf__tok_list *in, pf__tok_list *out) {
    pf__tok_buf *b = &out->text;
    size_t i, from = 0, lo = 0, hi, k;
    uint32_t cp;
    for (i = 0; i <= in->n; i++) {
        const unsigned char *s = i < in->n ? in->text.p + in->off[i] : NULL;
        if (i < in->n && !pf__tok_special_text(t, s, in->len[i])) continue;
        if (pf__spm_decode(t->spm, in, from, i, b)) return -1;
        if (i < in->n && (pf__buf_put(b, s, in->len[i]) || (t->spm_marian && pf__buf_put(b, " ", 1)))) return -1;
        from = i + 1;
    }
    if (t->spm_marian) {
        pf__tok_buf *tmp = &out->scratch[0];
        tmp->len = 0;
        if (pf__buf_replace(tmp, b->p, b->len, "\xE2\x96\x81", 3, " ", 1)) return -1;
        b->len = 0;
        if (pf__buf_put(b, tmp->p, tmp->len)) return -1;
    }
    for (hi = b->len; lo < hi; lo += k) {
        k = pf__utf8_decode(b->p + lo, hi - lo, &cp);
        if (!pf__py_space(cp)) break;
    }
    while (hi > lo) {
        size_t m = hi - 1;
        while (m > lo && (b->p[m] & 0xC0) == 0x80) m--;
        if (pf__utf8_decode(b->p + m, hi - m, &cp) != hi - m || !pf__py_space(cp)) break;
        hi = m;
    }
    if (lo) memmove(b->p, b->p + lo, hi - lo);
    b->len = hi - lo;
    if (t->spm_cleanup && pf__tok_wordpiece_cleanup(out, 0, 0)) return -1;
    return pf__list_push(out, 0);
}

/* One decoder step: the tokens of `in` -> `out` (emptied first). */
static int pf__tok_dec_step(const pf_tokenizer *t, const pf__tok_dec *d, const pf__tok_list *in, pf__tok_list *out) {
    size_t i, start = 0, run = (size_t)-1;
    out->text.len = 0;
    out->n = 0;
    if (d->kind == PF__DEC_SPM) return pf__tok_dec_spm(t, in, out);
    for (i = 0; i < in->n; i++) {
        const unsigned char *s = in->text.p + in->off[i];
        size_t n = in->len[i], j, k;
        uint32_t cp;
        switch (d->kind) {
        case PF__DEC_SPM: /* whole, above */
            continue;
        case PF__DEC_BYTELEVEL: /* one token in the end */
        case PF__DEC_FUSE:
        case PF__DEC_UTF8_IGNORE:
            if (d->kind == PF__DEC_BYTELEVEL ? pf__tok_unbyte(t, &out->text, s, n) : pf__buf_put(&out->text, s, n))
                return -1;
            continue;
        case PF__DEC_BYTEFALLBACK: {
            int b = pf__tok_byte_token(s, n);
            if (b >= 0) { /* a run of byte tokens is one token */
                unsigned char c = (unsigned char)b;
                if (run == (size_t)-1) run = out->text.len;
                if (pf__buf_put(&out->text, &c, 1)) return -1;
                continue;
            }
            if (run != (size_t)-1 && pf__list_push(out, run)) return -1;
            run = (size_t)-1;
            start = out->text.len;
            if (pf__buf_put(&out->text, s, n)) return -1;
            break;
        }
        case PF__DEC_REPLACE:
            start = out->text.len;
            if (pf__buf_replace(&out->text, s, n, d->a, d->a_len, d->b, d->b_len)) return -1;
            break;
        case PF__DEC_BPE:
            start = out->text.len;
            if (pf__buf_replace(&out->text, s, n, d->a, d->a_len, i + 1 == in->n ? "" : " ", i + 1 == in->n ? 0 : 1))
                return -1;
            break;
        case PF__DEC_METASPACE: /* the replacement becomes a space; in the first token it goes */
            start = out->text.len;
            for (j = 0; j < n; j += k) {
                k = pf__utf8_decode(s + j, n - j, &cp);
                if (k == d->a_len && !memcmp(s + j, d->a, k)) {
                    if (i == 0 && d->prepend != PF__PREPEND_NEVER) continue;
                    if (pf__buf_put(&out->text, " ", 1)) return -1;
                } else if (pf__buf_put(&out->text, s + j, k)) {
                    return -1;
                }
            }
            break;
        case PF__DEC_WORDPIECE: /* a token after the first loses the prefix, or gets a space before it */
            start = out->text.len;
            if (i > 0 && n >= d->a_len && !memcmp(s, d->a, d->a_len)) {
                if (pf__buf_put(&out->text, s + d->a_len, n - d->a_len)) return -1;
            } else if ((i > 0 && pf__buf_put(&out->text, " ", 1)) || pf__buf_put(&out->text, s, n)) {
                return -1;
            }
            if (d->cleanup && pf__tok_wordpiece_cleanup(out, start, 1)) return -1;
            break;
        case PF__DEC_STRIP: { /* up to `start` of the character at the start, `stop` at the end */
            size_t lo = 0, hi = n, m;
            for (m = 0; m < d->start && lo < n && n - lo >= d->a_len && !memcmp(s + lo, d->a, d->a_len); m++)
                lo += d->a_len;
            for (m = 0; m < d->stop && hi > lo && hi - lo >= d->a_len && !memcmp(s + hi - d->a_len, d->a, d->a_len); m++)
                hi -= d->a_len;
            start = out->text.len;
            if (pf__buf_put(&out->text, s + lo, hi - lo)) return -1;
            break;
        }
        }
        if (pf__list_push(out, start)) return -1;
    }
    if (d->kind == PF__DEC_UTF8_IGNORE) { /* as Python's bytes.decode("utf-8", errors="ignore") */
        size_t j, k, kept = 0;
        uint32_t cp;
        for (j = 0; j < out->text.len; j += k) {
            k = pf__utf8_decode(out->text.p + j, out->text.len - j, &cp);
            if (cp == PF__UTF8_INVALID) continue;
            memmove(out->text.p + kept, out->text.p + j, k);
            kept += k;
        }
        out->text.len = kept;
    }
    if (d->kind == PF__DEC_BYTELEVEL || d->kind == PF__DEC_FUSE || d->kind == PF__DEC_UTF8_IGNORE)
        return pf__list_push(out, 0);
    if (run != (size_t)-1 && pf__list_push(out, run)) return -1;
    return 0;
}

pf_result pf_detokenize(const pf_tokenizer *tokenizer, const int32_t *ids, size_t num_ids, char *text,
                        size_t capacity, size_t *text_len) {
    const pf_tokenizer *t = tokenizer;
    pf__tok_list lists[2];
    size_t i, n = 0;
    int cur = 0, k, rc = 0;
    if (text_len) *text_len = 0;
    if (!t || !text_len || (!ids && num_ids) || (!text && capacity)) return PF_ERROR_INVALID_ARGUMENT;
    for (i = 0; i < num_ids; i++)
        if (ids[i] < 0 || ids[i] >= t->num_ids || t->id_len[ids[i]] < 0) return PF_ERROR_INVALID_ARGUMENT;
    memset(lists, 0, sizeof lists);
    for (i = 0; i < num_ids && !rc; i++) { /* the tokens' strings; without a decoder, joined by spaces */
        size_t start = lists[0].text.len;
        rc = (!t->has_decoder && i > 0 && pf__buf_put(&lists[0].text, " ", 1)) ||
             pf__buf_put(&lists[0].text, t->id_str[ids[i]], (size_t)t->id_len[ids[i]]) || pf__list_push(&lists[0], start);
    }
    for (k = 0; k < t->num_decs && !rc; k++) {
        rc = pf__tok_dec_step(t, &t->decs[k], &lists[cur], &lists[1 - cur]);
        cur = 1 - cur;
    }
    if (!rc) {
        for (i = 0; i < lists[cur].n; i++) {
            size_t len = lists[cur].len[i];
            if (n < capacity && len)
                memcpy(text + n, lists[cur].text.p + lists[cur].off[i], capacity - n < len ? capacity - n : len);
            n += len;
        }
    }
    pf__list_free(&lists[0]);
    pf__list_free(&lists[1]);
    if (rc) return PF_ERROR_OUT_OF_MEMORY;
    if (n < capacity) text[n] = 0;
    *text_len = n;
    return n > capacity ? PF_ERROR_BUFFER_TOO_SMALL : PF_OK;
}
/* ---- loading ---- */

/* GPT-2's byte-to-unicode map: printable Latin-1 bytes stand for themselves, the others (control
   characters, space, 0x7F-0xA0, 0xAD) for U+0100, U+0101, ... in byte order. */
static void pf__tok_byte_map(uint16_t byte_char[256]) {
    int b, n = 0;
    for (b = 0; b < 256; b++) {
        int printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        byte_char[b] = (uint16_t)(printable ? b : 256 + n++);
    }
}

/* A JSON boolean member: its value, `def` when absent or null, -1 when of another type. */
static int pf__tok_json_bool(const pf__json *obj, const char *key, int def) {
    const pf__json *v = pf__json_get(obj, key);
    if (!v || v->type == PF__JSON_NULL) return def;
    return v->type == PF__JSON_BOOL ? v->boolean : -1;
}

/* A JSON string member, or NULL when absent or null; *bad is set when it is of another type. */
static const pf__json *pf__tok_json_str(const pf__json *obj, const char *key, int *bad) {
    const pf__json *v = pf__json_get(obj, key);
    if (!v || v->type == PF__JSON_NULL) return NULL;
    if (v->type != PF__JSON_STRING) {
        *bad = 1;
        return NULL;
    }
    return v;
}

/* An id from a JSON number: 0 .. INT32_MAX - 1, integral; -1 otherwise. */
static int32_t pf__tok_json_id(const pf__json *v) {
    if (!v || v->type != PF__JSON_NUMBER || !(v->number >= 0 && v->number < (double)INT32_MAX) ||
        v->number != (double)(int32_t)v->number)
        return -1;
    return (int32_t)v->number;
}

/* A token string for a message: at most 40 bytes of it, quoted by the caller. */
static int pf__tok_show_len(size_t len) {
    return len > 40 ? 40 : (int)len;
}

/* Makes room for a vocab of `count` tokens whose strings take text_len bytes (NULs included). */
static pf_result pf__tok_vocab_alloc(pf_tokenizer *t, size_t count, size_t text_len, const char *path, char *err,
                                     size_t err_size) {
    size_t cap = pf__tok_pow2_at_least(2 * count);
    t->vocab = (pf__tok_vocab_slot *)malloc(cap * sizeof *t->vocab);
    t->vocab_text = (char *)malloc(text_len ? text_len : 1);
    if (!t->vocab || !t->vocab_text) {
        snprintf(err, err_size, "%s: out of memory for %zu tokens", path, count);
        return PF_ERROR_OUT_OF_MEMORY;
    }
    t->vocab_mask = cap - 1;
    memset(t->vocab, 0xFF, cap * sizeof *t->vocab); /* id -1 everywhere */
    return PF_OK;
}

/* Maps a token string to id (a string already there takes the new id, as a later duplicate key
   does in serde); the string is copied to vocab_text either way, and its offset returned. */
static size_t pf__tok_vocab_insert(pf_tokenizer *t, const char *s, size_t len, int32_t id) {
    uint32_t h = pf__tok_hash(s, len);
    size_t i, offset = t->vocab_text_len;
    memcpy(t->vocab_text + offset, s, len);
    t->vocab_text[offset + len] = 0;
    t->vocab_text_len += len + 1;
    for (i = h & t->vocab_mask;; i = (i + 1) & t->vocab_mask) {
        pf__tok_vocab_slot *slot = &t->vocab[i];
        if (slot->id < 0) {
            slot->hash = h;
            slot->len = (uint32_t)len;
            slot->offset = offset;
            t->vocab_count++;
            break;
        }
        if (slot->hash == h && slot->len == len && !memcmp(t->vocab_text + slot->offset, s, len)) break;
    }
    t->vocab[i].id = id;
    if (len > t->max_token_len) t->max_token_len = len;
    return offset;
}

/* Fills the vocab from a JSON object token -> id. A later duplicate key wins, as in serde. */
static pf_result pf__tok_set_vocab(pf_tokenizer *t, const pf__json *vocab, const char *what,
                                   const char *path, char *err, size_t err_size) {
    const pf__json *m;
    size_t text_len = 0;
    pf_result r;
    if (!vocab || vocab->type != PF__JSON_OBJECT) {
        snprintf(err, err_size, "%s: %s is %s, not an object of token -> id", path, what ? what : "the vocab",
                 vocab ? "of another type" : "missing");
        return PF_ERROR_FORMAT;
    }
    for (m = vocab->first; m; m = m->next) text_len += m->key_len + 1;
    if ((r = pf__tok_vocab_alloc(t, vocab->count, text_len, path, err, err_size)) != PF_OK) return r;
    for (m = vocab->first; m; m = m->next) {
        int32_t id = pf__tok_json_id(m);
        if (id < 0) {
            snprintf(err, err_size, "%s: %s%sthe id of token \"%.*s\" is not an integer in 0..%d", path,
                     what ? what : "", what ? ": " : "", pf__tok_show_len(m->key_len), m->key, INT32_MAX - 1);
            return PF_ERROR_FORMAT;
        }
        if (m->key_len > UINT32_MAX - 1) {
            snprintf(err, err_size, "%s: a token is too long", path);
            return PF_ERROR_FORMAT;
        }
        pf__tok_vocab_insert(t, m->key, m->key_len, id);
    }
    return PF_OK;
}

typedef struct pf__tok_merge_text { /* a merge rule as read: two token strings */
    const char *a, *b;
    size_t a_len, b_len;
} pf__tok_merge_text;

/* Splits "a b" into its two tokens; -1 unless it has exactly one space (HF's rule). */
static int pf__tok_split_merge_line(const char *s, size_t len, pf__tok_merge_text *m) {
    const char *sp = (const char *)memchr(s, ' ', len);
    if (!sp || memchr(sp + 1, ' ', len - (size_t)(sp + 1 - s))) return -1;
    m->a = s;
    m->a_len = (size_t)(sp - s);
    m->b = sp + 1;
    m->b_len = len - m->a_len - 1;
    return 0;
}

/* Sets the merge of the pair (a, b) into ab, with its rank (a pair set before is overwritten). */
static void pf__tok_merge_put(pf_tokenizer *t, int32_t a, int32_t b, uint32_t rank, int32_t ab) {
    uint64_t pair = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
    size_t i;
    for (i = pf__tok_pair_slot(pair, t->merges_mask);; i = (i + 1) & t->merges_mask)
        if (t->merges[i].rank == UINT32_MAX || t->merges[i].pair == pair) break;
    t->merges[i].pair = pair;
    t->merges[i].rank = rank;
    t->merges[i].new_id = ab;
}

/* Resolves merge rules to ids; the rank is the index. Every token, and each pair's concatenation
   (less the continuing_subword_prefix's length at the start of the second, as HF does), must be
   in the vocab. A repeated pair keeps its last rank, as HF's hash map does. */
static pf_result pf__tok_set_merges(pf_tokenizer *t, const pf__tok_merge_text *merges, size_t n,
                                    const char *path, char *err, size_t err_size) {
    size_t cap = pf__tok_pow2_at_least(2 * n + 1), r, buf_cap = 0;
    char *buf = NULL;
    pf_result res = PF_OK;
    if (n >= UINT32_MAX) {
        snprintf(err, err_size, "%s: too many merges (%zu)", path, n);
        return PF_ERROR_FORMAT;
    }
    t->merges = (pf__tok_merge_slot *)malloc(cap * sizeof *t->merges);
    if (!t->merges) {
        snprintf(err, err_size, "%s: out of memory for %zu merges", path, n);
        return PF_ERROR_OUT_OF_MEMORY;
    }
    memset(t->merges, 0xFF, cap * sizeof *t->merges); /* rank UINT32_MAX everywhere */
    t->merges_mask = cap - 1;
    for (r = 0; r < n; r++) {
        const pf__tok_merge_text *m = &merges[r];
        int32_t a = pf__tok_vocab_find(t, m->a, m->a_len), b = pf__tok_vocab_find(t, m->b, m->b_len), ab;
        const char *missing = a < 0 ? m->a : b < 0 ? m->b : NULL;
        size_t missing_len = a < 0 ? m->a_len : m->b_len;
        size_t skip = t->prefix_len, b_len = m->b_len - skip;
        if (m->b_len < skip) {
            snprintf(err, err_size, "%s: merge %zu (\"%.*s\" \"%.*s\"): the second token is shorter than the "
                     "continuing_subword_prefix", path, r + 1, pf__tok_show_len(m->a_len), m->a,
                     pf__tok_show_len(m->b_len), m->b);
            res = PF_ERROR_FORMAT;
            break;
        }
        if (m->a_len + m->b_len > buf_cap) {
            char *p = (char *)realloc(buf, m->a_len + m->b_len);
            if (!p) {
                snprintf(err, err_size, "%s: out of memory", path);
                res = PF_ERROR_OUT_OF_MEMORY;
                break;
            }
            buf = p;
            buf_cap = m->a_len + m->b_len;
        }
        if (m->a_len + b_len) {
            memcpy(buf, m->a, m->a_len);
            memcpy(buf + m->a_len, m->b + skip, b_len);
        }
        ab = pf__tok_vocab_find(t, buf ? buf : "", m->a_len + b_len);
        if (!missing && ab < 0) {
            missing = buf;
            missing_len = m->a_len + b_len;
        }
        if (missing) {
            snprintf(err, err_size, "%s: merge %zu (\"%.*s\" \"%.*s\"): token \"%.*s\" is not in the vocab",
                     path, r + 1, pf__tok_show_len(m->a_len), m->a, pf__tok_show_len(m->b_len), m->b,
                     pf__tok_show_len(missing_len), missing);
            res = PF_ERROR_FORMAT;
            break;
        }
        pf__tok_merge_put(t, a, b, (uint32_t)r, ab);
    }
    free(buf);
    return res;
}

/* Adds an added token (its content copied). A content added twice keeps the later entry. */
static pf_result pf__tok_add_token(pf_tokenizer *t, const char *content, size_t len, int32_t id,
                                   int special, int normalized, int lstrip, int rstrip, int single_word) {
    pf__tok_added *a;
    size_t i;
    for (i = 0; i < t->num_added; i++)
        if (t->added[i].len == len && !memcmp(t->added[i].content, content, len)) break;
    if (i == t->num_added) {
        if (t->num_added == t->added_cap) {
            size_t cap = t->added_cap ? 2 * t->added_cap : 8;
            pf__tok_added *p = (pf__tok_added *)realloc(t->added, cap * sizeof *p);
            if (!p) return PF_ERROR_OUT_OF_MEMORY;
            t->added = p;
            t->added_cap = cap;
        }
        a = &t->added[t->num_added];
        a->match = NULL;
        a->content = (char *)malloc(len + 1);
        if (!a->content) return PF_ERROR_OUT_OF_MEMORY;
        memcpy(a->content, content, len);
        a->content[len] = 0;
        a->len = len;
        a->unmatched = 0;
        t->num_added++;
    }
    a = &t->added[i];
    a->id = id;
    a->special = (unsigned char)special;
    a->normalized = (unsigned char)normalized;
    a->lstrip = (unsigned char)lstrip;
    a->rstrip = (unsigned char)rstrip;
    a->single_word = (unsigned char)single_word;
    return PF_OK;
}

/* Reads one added token object ({"id", "content", "special", "normalized", "lstrip", "rstrip",
   "single_word"}) with the id `id`; or, when `id` < 0 (tokenizer.json), with the id HF's
   AddedVocabulary::add_tokens gives it, whatever its "id" says: the id it was added with before,
   else its id in the model vocab, else *next_id++. */
static pf_result pf__tok_read_added(pf_tokenizer *t, const pf__json *o, int32_t id, int32_t *next_id,
                                    const char *path, char *err, size_t err_size) {
    int bad = 0, special, normalized, lstrip, rstrip, single_word;
    const pf__json *content = pf__tok_json_str(o, "content", &bad);
    int32_t given = id >= 0 ? id : pf__tok_json_id(pf__json_get(o, "id"));
    special = pf__tok_json_bool(o, "special", 0);
    normalized = pf__tok_json_bool(o, "normalized", !special);
    lstrip = pf__tok_json_bool(o, "lstrip", 0);
    rstrip = pf__tok_json_bool(o, "rstrip", 0);
    single_word = pf__tok_json_bool(o, "single_word", 0);
    if (!o || o->type != PF__JSON_OBJECT || !content || given < 0 || special < 0 || normalized < 0 ||
        lstrip < 0 || rstrip < 0 || single_word < 0) {
        snprintf(err, err_size, "%s: an added token is not an object with an integer \"id\", a string "
                 "\"content\" and boolean flags", path);
        return PF_ERROR_FORMAT;
    }
    if (content->string_len == 0) return PF_OK; /* HF ignores it */
    if (id < 0) {
        size_t i;
        for (i = 0; i < t->num_added; i++)
            if (t->added[i].len == content->string_len &&
                !memcmp(t->added[i].content, content->string, content->string_len))
                break;
        if (i < t->num_added) id = t->added[i].id;
        else if ((id = pf__tok_vocab_find(t, content->string, content->string_len)) < 0) {
            if (*next_id == INT32_MAX) {
                snprintf(err, err_size, "%s: too many added tokens", path);
                return PF_ERROR_FORMAT;
            }
            id = (*next_id)++;
        }
    }
    if (pf__tok_add_token(t, content->string, content->string_len, id, special, normalized, lstrip,
                          rstrip, single_word)) {
        snprintf(err, err_size, "%s: out of memory", path);
        return PF_ERROR_OUT_OF_MEMORY;
    }
    return PF_OK;
}


/* A malloc'd, NUL-terminated copy of s[0 .. n), or NULL. */
static char *pf__tok_dup(const char *s, size_t n) {
    char *p = (char *)malloc(n + 1);
    if (!p) return NULL;
    if (n) memcpy(p, s, n);
    p[n] = 0;
    return p;
}

/* A JSON member that must be a string holding exactly one character: its UTF-8 copied to a new
   string in *out; -1 when it is not that. */
static int pf__tok_json_char(const pf__json *obj, const char *key, char **out, size_t *len) {
    int bad = 0;
    const pf__json *v = pf__tok_json_str(obj, key, &bad);
    uint32_t cp;
    if (!v || !v->string_len || pf__utf8_decode((const unsigned char *)v->string, v->string_len, &cp) != v->string_len ||
        cp == PF__UTF8_INVALID)
        return -1;
    *out = pf__tok_dup(v->string, v->string_len);
    *len = v->string_len;
    return *out ? 0 : -2;
}

/* Metaspace's prepend_scheme (default "always"; an add_prefix_space false means "never" and
   contradicts any other scheme, as in HF); -1 when malformed. */
static int pf__tok_json_prepend(const pf__json *o) {
    int bad = 0, add = pf__tok_json_bool(o, "add_prefix_space", -2);
    const pf__json *v = pf__tok_json_str(o, "prepend_scheme", &bad);
    int scheme = PF__PREPEND_ALWAYS;
    if (bad || add == -1) return -1;
    if (v) {
        if (!strcmp(v->string, "always")) scheme = PF__PREPEND_ALWAYS;
        else if (!strcmp(v->string, "first")) scheme = PF__PREPEND_FIRST;
        else if (!strcmp(v->string, "never")) scheme = PF__PREPEND_NEVER;
        else return -1;
    }
    if (add == 0) {
        if (scheme != PF__PREPEND_NEVER) return -1;
    }
    return scheme;
}

/* A non-negative integer member (absent: def); -1 when of another type. */
static long pf__tok_json_count(const pf__json *o, const char *key, long def) {
    const pf__json *v = pf__json_get(o, key);
    if (!v || v->type == PF__JSON_NULL) return def;
    if (v->type != PF__JSON_NUMBER || !(v->number >= 0 && v->number < 1e9) || v->number != (double)(long)v->number)
        return -1;
    return (long)v->number;
}

/* The text a regex matches when it is a literal: characters without a meaning in a regex, and
   escapes of punctuation or of \n \r \t (Pegasus' Replace "\n"). Written into out (the regex's
   length at most); its length, or -1 when the regex is not a literal. */
static long pf__tok_regex_literal(const char *re, size_t len, char *out) {
    size_t i, n = 0;
    for (i = 0; i < len; i++) {
        unsigned char c = (unsigned char)re[i];
        if (c == '\\') {
            if (++i == len) return -1;
            c = (unsigned char)re[i];
            if (c == 'n') c = '\n';
            else if (c == 'r') c = '\r';
            else if (c == 't') c = '\t';
            else if (!strchr(".^$*+?()[]{}|\\/-", c)) return -1; /* \s, \d, \p{..}, ...: classes */
        } else if (strchr(".^$*+?()[]{}|", c)) {
            return -1;
        }
        out[n++] = (char)c;
    }
    return n ? (long)n : -1; /* an empty regex matches between characters: not a literal */
}

/* A Replace's pattern {"String": s}, or a Regex that is a literal (copied into *out); other
   Regex patterns are not supported. */
static pf_result pf__tok_json_pattern(const pf__json *o, const char *what, char **out, size_t *len, const char *path,
                                      char *err, size_t err_size) {
    int bad = 0;
    const pf__json *pattern = pf__json_get(o, "pattern"), *v = pf__tok_json_str(pattern, "String", &bad), *re;
    if (!v && !bad && (re = pf__tok_json_str(pattern, "Regex", &bad)) != NULL) {
        long n;
        if (!(*out = (char *)malloc(re->string_len + 1))) {
            snprintf(err, err_size, "%s: out of memory", path);
            return PF_ERROR_OUT_OF_MEMORY;
        }
        if ((n = pf__tok_regex_literal(re->string, re->string_len, *out)) >= 0) {
            (*out)[n] = 0;
            *len = (size_t)n;
            return PF_OK;
        }
        free(*out);
        *out = NULL;
        snprintf(err, err_size, "%s: %s with the Regex pattern \"%.40s\" is not supported (only String, a literal "
                 "Regex, and \" {2,}\" in a normalizer)", path, what, re->string);
        return PF_ERROR_UNSUPPORTED;
    }
    if (!v) {
        snprintf(err, err_size, "%s: %s has no \"pattern\" {\"String\": ...}", path, what);
        return PF_ERROR_FORMAT;
    }
    if (!(*out = pf__tok_dup(v->string, v->string_len))) {
        snprintf(err, err_size, "%s: out of memory", path);
        return PF_ERROR_OUT_OF_MEMORY;
    }
    *len = v->string_len;
    return PF_OK;
}

static pf_result pf__tok_too_many(const char *path, const char *what, char *err, size_t err_size) {
    snprintf(err, err_size, "%s: more than 16 %s steps", path, what);
    return PF_ERROR_UNSUPPORTED;
}

/* Decodes standard base64 (padded, as Rust's base64 STANDARD engine wants it) into a new buffer;
   -1 when malformed, -2 out of memory. */
static int pf__base64_decode(const char *s, size_t n, unsigned char **out, size_t *out_len) {
    size_t i, len = 0;
    uint32_t acc = 0;
    int pad = 0;
    if (n % 4) return -1;
    if (!(*out = (unsigned char *)malloc(n / 4 * 3 + 1))) return -2;
    for (i = 0; i < n; i++) {
        char c = s[i];
        int v = c >= 'A' && c <= 'Z' ? c - 'A' : c >= 'a' && c <= 'z' ? c - 'a' + 26 : c >= '0' && c <= '9' ? c - '0' + 52
              : c == '+' ? 62 : c == '/' ? 63 : -1;
        if (c == '=' && i >= n - 2 && (pad || i == n - 1 || s[n - 1] == '=')) {
            pad++;
            v = 0;
        } else if (v < 0 || pad) {
            free(*out);
            *out = NULL;
            return -1;
        }
        acc = acc << 6 | (uint32_t)v;
        if (i % 4 == 3) {
            (*out)[len++] = (unsigned char)(acc >> 16);
            (*out)[len++] = (unsigned char)(acc >> 8);
            (*out)[len++] = (unsigned char)acc;
            acc = 0;
        }
    }
    if ((pad == 2 && (*out)[len - 2]) || (pad == 1 && (*out)[len - 1])) { /* bits past the data */
        free(*out);
        *out = NULL;
        return -1;
    }
    *out_len = len - (size_t)pad;
    return 0;
}

/* A SentencePiece charsmap (the trie's size in bytes, u32 little-endian; the trie's u32 units;
   the replacements, each ended by a NUL) into n; `what` names it in messages. */
static pf_result pf__tok_set_charsmap(pf__tok_norm *n, const unsigned char *data, size_t len, const char *what,
                                      const char *path, char *err, size_t err_size) {
    size_t trie_bytes, i;
    uint32_t cp;
    if (len < 4 || (trie_bytes = (size_t)data[0] | (size_t)data[1] << 8 | (size_t)data[2] << 16 | (size_t)data[3] << 24) / 4 == 0 ||
        trie_bytes > len - 4) {
        snprintf(err, err_size, "%s: %s is not a SentencePiece charsmap", path, what);
        return PF_ERROR_FORMAT;
    }
    n->num_units = trie_bytes / 4;
    if (!(n->units = (uint32_t *)malloc(n->num_units * sizeof *n->units))) goto oom;
    for (i = 0; i < n->num_units; i++)
        n->units[i] = (uint32_t)data[4 + 4 * i] | (uint32_t)data[5 + 4 * i] << 8 | (uint32_t)data[6 + 4 * i] << 16 |
                      (uint32_t)data[7 + 4 * i] << 24;
    n->b_len = len - 4 - 4 * n->num_units; /* what follows the whole units, as HF reads it */
    if (!(n->b = pf__tok_dup((const char *)data + 4 + 4 * n->num_units, n->b_len))) goto oom;
    for (i = 0; i < n->b_len; i += pf__utf8_decode((const unsigned char *)n->b + i, n->b_len - i, &cp))
        if (pf__utf8_decode((const unsigned char *)n->b + i, n->b_len - i, &cp) == 1 && cp == PF__UTF8_INVALID) {
            snprintf(err, err_size, "%s: %s: the charsmap's replacements are not UTF-8", path, what);
            return PF_ERROR_FORMAT;
        }
    return PF_OK;
oom:
    snprintf(err, err_size, "%s: out of memory", path);
    return PF_ERROR_OUT_OF_MEMORY;
}

/* Reads a Precompiled normalizer's precompiled_charsmap (base64 of a SentencePiece charsmap) into n. */
static pf_result pf__tok_read_charsmap(pf__tok_norm *n, const pf__json *j, const char *path, char *err, size_t err_size) {
    int bad = 0, rc = -1;
    const pf__json *v = pf__tok_json_str(j, "precompiled_charsmap", &bad);
    unsigned char *data = NULL;
    size_t len = 0;
    pf_result r;
    if (v && (rc = pf__base64_decode(v->string, v->string_len, &data, &len)) == -2) {
        snprintf(err, err_size, "%s: out of memory", path);
        return PF_ERROR_OUT_OF_MEMORY;
    }
    if (rc) {
        snprintf(err, err_size, "%s: normalizer Precompiled: \"precompiled_charsmap\" is not the base64 of a "
                 "SentencePiece charsmap", path);
        return PF_ERROR_FORMAT;
    }
    r = pf__tok_set_charsmap(n, data, len, "normalizer Precompiled's \"precompiled_charsmap\"", path, err, err_size);
    free(data);
    return r;
}

static pf__tok_norm *pf__tok_add_norm(pf_tokenizer *t, pf__tok_norm_kind kind) {
    pf__tok_norm *n;
    if (t->num_norms == PF__TOK_MAX_NORMS) return NULL;
    n = &t->norms[t->num_norms++];
    memset(n, 0, sizeof *n);
    n->kind = kind;
    return n;
}

/* Reads a normalizer object into t->norms. */
static pf_result pf__tok_read_normalizer(pf_tokenizer *t, const pf__json *j, int depth, const char *path, char *err,
                                         size_t err_size) {
    int bad = 0;
    const pf__json *type = pf__tok_json_str(j, "type", &bad);
    const char *name;
    pf__tok_norm *n;
    pf_result r;
    if (!j || j->type == PF__JSON_NULL) return PF_OK;
    if (!type) {
        snprintf(err, err_size, "%s: a normalizer has no \"type\"", path);
        return PF_ERROR_FORMAT;
    }
    name = type->string;
    if (!strcmp(name, "Sequence")) {
        const pf__json *list = pf__json_get(j, "normalizers"), *e;
        if (!list || list->type != PF__JSON_ARRAY || depth > 4) {
            snprintf(err, err_size, "%s: normalizer Sequence has no \"normalizers\" array", path);
            return PF_ERROR_FORMAT;
        }
        for (e = list->first; e; e = e->next) {
            if (!e || e->type != PF__JSON_OBJECT) {
                snprintf(err, err_size, "%s: a normalizer of a Sequence is not an object", path);
                return PF_ERROR_FORMAT;
            }
            if ((r = pf__tok_read_normalizer(t, e, depth + 1, path, err, err_size)) != PF_OK) return r;
        }
        return PF_OK;
    }
    if (!strcmp(name, "BertNormalizer")) {
        int clean = pf__tok_json_bool(j, "clean_text", 1), cjk = pf__tok_json_bool(j, "handle_chinese_chars", 1);
        int lower = pf__tok_json_bool(j, "lowercase", 1), strip;
        if (clean < 0 || cjk < 0 || lower < 0 || (strip = pf__tok_json_bool(j, "strip_accents", lower)) < 0) {
            snprintf(err, err_size, "%s: normalizer BertNormalizer has a non-boolean option", path);
            return PF_ERROR_FORMAT;
        }
        if ((clean && !pf__tok_add_norm(t, PF__NORM_BERT_CLEAN)) || (cjk && !pf__tok_add_norm(t, PF__NORM_BERT_CJK)) ||
            (strip && !pf__tok_add_norm(t, PF__NORM_STRIP_ACCENTS)) || (lower && !pf__tok_add_norm(t, PF__NORM_LOWERCASE)))
            return pf__tok_too_many(path, "normalizer", err, err_size);
        return PF_OK;
    }
    {
        static const struct {
            const char *name;
            pf__tok_norm_kind kind;
        } plain[] = {{"NFC", PF__NORM_NFC}, {"NFD", PF__NORM_NFD}, {"NFKC", PF__NORM_NFKC}, {"NFKD", PF__NORM_NFKD},
                     {"Lowercase", PF__NORM_LOWERCASE}, {"StripAccents", PF__NORM_STRIP_MARKS}};
        size_t i;
        for (i = 0; i < PF__TOK_LEN(plain); i++)
            if (!strcmp(name, plain[i].name)) {
                if (!pf__tok_add_norm(t, plain[i].kind)) return pf__tok_too_many(path, "normalizer", err, err_size);
                return PF_OK;
            }
    }
    if (!strcmp(name, "Precompiled")) {
        if (!(n = pf__tok_add_norm(t, PF__NORM_PRECOMPILED))) return pf__tok_too_many(path, "normalizer", err, err_size);
        return pf__tok_read_charsmap(n, j, path, err, err_size);
    }
    if (!strcmp(name, "Replace")) { /* the regex " {2,}" of SentencePiece converters, recognised by its source */
        const pf__json *re = pf__tok_json_str(pf__json_get(j, "pattern"), "Regex", &bad),
                       *content = pf__tok_json_str(j, "content", &bad);
        if (re && content && !strcmp(re->string, " {2,}")) {
            if (!(n = pf__tok_add_norm(t, PF__NORM_REPLACE_SPACES)))
                return pf__tok_too_many(path, "normalizer", err, err_size);
            if (!(n->b = pf__tok_dup(content->string, content->string_len))) goto oom;
            n->b_len = content->string_len;
            return PF_OK;
        }
        bad = 0;
    }
    if (!strcmp(name, "Prepend") || !strcmp(name, "Replace") || !strcmp(name, "Strip")) {
        const pf__json *s = NULL;
        int left = 0, right = 0;
        if (name[0] == 'P' && !(s = pf__tok_json_str(j, "prepend", &bad))) {
            snprintf(err, err_size, "%s: normalizer Prepend has no string \"prepend\"", path);
            return PF_ERROR_FORMAT;
        }
        if (name[0] == 'R' && !(s = pf__tok_json_str(j, "content", &bad))) {
            snprintf(err, err_size, "%s: normalizer Replace has no string \"content\"", path);
            return PF_ERROR_FORMAT;
        }
        if (name[0] == 'S' && ((left = pf__tok_json_bool(j, "strip_left", 0)) < 0 ||
                               (right = pf__tok_json_bool(j, "strip_right", 0)) < 0)) {
            snprintf(err, err_size, "%s: normalizer Strip has a non-boolean option", path);
            return PF_ERROR_FORMAT;
        }
        n = pf__tok_add_norm(t, name[0] == 'P' ? PF__NORM_PREPEND : name[0] == 'R' ? PF__NORM_REPLACE : PF__NORM_STRIP);
        if (!n) return pf__tok_too_many(path, "normalizer", err, err_size);
        n->left = left;
        n->right = right;
        if (name[0] == 'R') {
            if ((r = pf__tok_json_pattern(j, "normalizer Replace", &n->a, &n->a_len, path, err, err_size)) != PF_OK)
                return r;
            n->b = pf__tok_dup(s->string, s->string_len);
            n->b_len = s->string_len;
            if (!n->b) goto oom;
        } else if (name[0] == 'P') {
            if (!(n->a = pf__tok_dup(s->string, s->string_len))) goto oom;
            n->a_len = s->string_len;
        }
        return PF_OK;
    }
    snprintf(err, err_size, "%s: normalizer %.40s is not supported", path, name);
    return PF_ERROR_UNSUPPORTED;
oom:
    snprintf(err, err_size, "%s: out of memory", path);
    return PF_ERROR_OUT_OF_MEMORY;
}

static pf__tok_pre *pf__tok_add_pre(pf_tokenizer *t, pf__tok_pre_kind kind) {
    pf__tok_pre *p;
    if (t->num_pres == PF__TOK_MAX_PRE) return NULL;
    p = &t->pres[t->num_pres++];
    memset(p, 0, sizeof *p);
    p->kind = kind;
    return p;
}

static pf_result pf__tok_add_split(pf_tokenizer *t, pf__tok_pattern pattern, unsigned flags, pf__tok_behavior behavior,
                                   const char *path, char *err, size_t err_size) {
    pf__tok_pre *p = pf__tok_add_pre(t, PF__PRE_SPLIT);
    if (!p) return pf__tok_too_many(path, "pre_tokenizer", err, err_size);
    p->pattern = pattern;
    p->flags = flags;
    p->behavior = behavior;
    return PF_OK;
}

/* A Split's "behavior" (def when absent); -1 when unknown. */
static int pf__tok_json_behavior(const pf__json *o, int def) {
    int bad = 0;
    size_t i;
    const pf__json *v = pf__tok_json_str(o, "behavior", &bad);
    if (!v) return bad ? -1 : def;
    for (i = 0; i < PF__TOK_LEN(pf__tok_behaviors); i++)
        if (!strcmp(v->string, pf__tok_behaviors[i])) return (int)i;
    return -1;
}

/* Reads a pre_tokenizer object into t->pres. ByteLevel must come last: what follows it would
   see byte-level characters. */
static pf_result pf__tok_read_pretok(pf_tokenizer *t, const pf__json *p, int depth, const char *path, char *err,
                                     size_t err_size) {
    int bad = 0;
    const pf__json *type = pf__tok_json_str(p, "type", &bad);
    const char *name = type ? type->string : "?";
    pf_result r;
    if (!p || p->type == PF__JSON_NULL) return PF_OK;
    if (t->byte_level) {
        snprintf(err, err_size, "%s: pre_tokenizer %.40s after ByteLevel is not supported", path, name);
        return PF_ERROR_UNSUPPORTED;
    }
    if (!type) {
        snprintf(err, err_size, "%s: a pre_tokenizer has no \"type\"", path);
        return PF_ERROR_FORMAT;
    }
    if (!strcmp(name, "Sequence")) {
        const pf__json *list = pf__json_get(p, "pretokenizers"), *e;
        if (!list || list->type != PF__JSON_ARRAY || depth > 4) {
            snprintf(err, err_size, "%s: pre_tokenizer Sequence has no \"pretokenizers\" array", path);
            return PF_ERROR_FORMAT;
        }
        for (e = list->first; e; e = e->next) {
            if (e->type != PF__JSON_OBJECT) {
                snprintf(err, err_size, "%s: a pre_tokenizer of a Sequence is not an object", path);
                return PF_ERROR_FORMAT;
            }
            if ((r = pf__tok_read_pretok(t, e, depth + 1, path, err, err_size)) != PF_OK) return r;
        }
        return PF_OK;
    }
    if (!strcmp(name, "ByteLevel")) {
        int add_prefix_space = pf__tok_json_bool(p, "add_prefix_space", 1);
        int use_regex = pf__tok_json_bool(p, "use_regex", 1);
        if (add_prefix_space < 0 || use_regex < 0) {
            snprintf(err, err_size, "%s: pre_tokenizer ByteLevel has a non-boolean option", path);
            return PF_ERROR_FORMAT;
        }
        if (add_prefix_space && !pf__tok_add_pre(t, PF__PRE_PREFIX_SPACE))
            return pf__tok_too_many(path, "pre_tokenizer", err, err_size);
        if (use_regex && (r = pf__tok_add_split(t, PF__PAT_GPT2, 0, PF__SPLIT_ISOLATED, path, err, err_size)) != PF_OK)
            return r;
        t->byte_level = 1;
        return PF_OK;
    }
    if (!strcmp(name, "Split")) {
        const pf__json *pattern = pf__json_get(p, "pattern"), *re, *lit;
        int behavior = pf__tok_json_behavior(p, -1), invert = pf__tok_json_bool(p, "invert", 0);
        pf__tok_pre *st;
        size_t i;
        re = pf__tok_json_str(pattern, "Regex", &bad);
        lit = pf__tok_json_str(pattern, "String", &bad);
        if ((!re && !lit) || bad || behavior < 0 || invert < 0) {
            snprintf(err, err_size, "%s: pre_tokenizer Split needs a \"pattern\" {\"Regex\" or \"String\": ...}, a "
                     "\"behavior\" (Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous) and a "
                     "boolean \"invert\"", path);
            return PF_ERROR_FORMAT;
        }
        if (re) {
            for (i = 0; i < PF__TOK_LEN(pf__tok_regexes); i++)
                if (!strcmp(re->string, pf__tok_regexes[i].regex)) break;
            if (i == PF__TOK_LEN(pf__tok_regexes)) {
                snprintf(err, err_size, "%s: pre_tokenizer Split pattern \"%.80s\" is not supported (known: the GPT-2, "
                         "LLaMA-3, Qwen2, BLOOM and CTRL patterns)", path, re->string);
                return PF_ERROR_UNSUPPORTED;
            }
        } else if (!lit->string_len) {
            snprintf(err, err_size, "%s: pre_tokenizer Split with an empty String pattern is not supported", path);
            return PF_ERROR_UNSUPPORTED;
        }
        if ((r = pf__tok_add_split(t, re ? pf__tok_regexes[i].pattern : PF__PAT_LITERAL, 0,
                                   (pf__tok_behavior)behavior, path, err, err_size)) != PF_OK)
            return r;
        st = &t->pres[t->num_pres - 1];
        st->invert = invert;
        if (lit) {
            if (!(st->lit = pf__tok_dup(lit->string, lit->string_len))) {
                snprintf(err, err_size, "%s: out of memory", path);
                return PF_ERROR_OUT_OF_MEMORY;
            }
            st->lit_len = lit->string_len;
        }
        return PF_OK;
    }
    if (!strcmp(name, "Metaspace")) {
        int scheme = pf__tok_json_prepend(p), split = pf__tok_json_bool(p, "split", 1), rc;
        pf__tok_pre *st;
        if (scheme < 0 || split < 0) {
            snprintf(err, err_size, "%s: pre_tokenizer Metaspace has a bad prepend_scheme, split or add_prefix_space", path);
            return PF_ERROR_FORMAT;
        }
        if (!(st = pf__tok_add_pre(t, PF__PRE_METASPACE))) return pf__tok_too_many(path, "pre_tokenizer", err, err_size);
        st->prepend = (pf__tok_prepend)scheme;
        st->split = split;
        if ((rc = pf__tok_json_char(p, "replacement", &st->lit, &st->lit_len)) != 0) {
            snprintf(err, err_size, rc == -2 ? "%s: out of memory" : "%s: pre_tokenizer Metaspace's \"replacement\" is not "
                     "one character", path);
            return rc == -2 ? PF_ERROR_OUT_OF_MEMORY : PF_ERROR_FORMAT;
        }
        return PF_OK;
    }
    if (!strcmp(name, "BertPreTokenizer")) {
        if ((r = pf__tok_add_split(t, PF__PAT_FLAGS, PF__UC_WS, PF__SPLIT_REMOVED, path, err, err_size)) != PF_OK) return r;
        return pf__tok_add_split(t, PF__PAT_FLAGS, PF__UC_PUNCT, PF__SPLIT_ISOLATED, path, err, err_size);
    }
    if (!strcmp(name, "WhitespaceSplit"))
        return pf__tok_add_split(t, PF__PAT_FLAGS, PF__UC_WS, PF__SPLIT_REMOVED, path, err, err_size);
    if (!strcmp(name, "Punctuation")) {
        int behavior = pf__tok_json_behavior(p, PF__SPLIT_ISOLATED);
        if (behavior < 0) {
            snprintf(err, err_size, "%s: pre_tokenizer Punctuation has an unknown \"behavior\"", path);
            return PF_ERROR_FORMAT;
        }
        return pf__tok_add_split(t, PF__PAT_FLAGS, PF__UC_PUNCT, (pf__tok_behavior)behavior, path, err, err_size);
    }
    snprintf(err, err_size, "%s: pre_tokenizer %.40s is not supported", path, name);
    return PF_ERROR_UNSUPPORTED;
}

static pf__tok_dec *pf__tok_add_dec(pf_tokenizer *t, pf__tok_dec_kind kind) {
    pf__tok_dec *d;
    if (t->num_decs == PF__TOK_MAX_DECS) return NULL;
    d = &t->decs[t->num_decs++];
    memset(d, 0, sizeof *d);
    d->kind = kind;
    return d;
}

/* Reads a decoder object into t->decs. */
static pf_result pf__tok_read_decoder(pf_tokenizer *t, const pf__json *j, int depth, const char *path, char *err,
                                      size_t err_size) {
    int bad = 0, rc;
    const pf__json *type = pf__tok_json_str(j, "type", &bad), *v;
    const char *name;
    pf__tok_dec *d;
    pf_result r;
    if (!j || j->type == PF__JSON_NULL) return PF_OK;
    t->has_decoder = 1;
    if (!type) {
        snprintf(err, err_size, "%s: a decoder has no \"type\"", path);
        return PF_ERROR_FORMAT;
    }
    name = type->string;
    if (!strcmp(name, "Sequence")) {
        const pf__json *list = pf__json_get(j, "decoders"), *e;
        if (!list || list->type != PF__JSON_ARRAY || depth > 4) {
            snprintf(err, err_size, "%s: decoder Sequence has no \"decoders\" array", path);
            return PF_ERROR_FORMAT;
        }
        for (e = list->first; e; e = e->next) {
            if (e->type != PF__JSON_OBJECT) {
                snprintf(err, err_size, "%s: a decoder of a Sequence is not an object", path);
                return PF_ERROR_FORMAT;
            }
            if ((r = pf__tok_read_decoder(t, e, depth + 1, path, err, err_size)) != PF_OK) return r;
        }
        return PF_OK;
    }
    if (!strcmp(name, "ByteLevel") || !strcmp(name, "ByteFallback") || !strcmp(name, "Fuse")) {
        if (!pf__tok_add_dec(t, name[0] == 'F' ? PF__DEC_FUSE : name[4] == 'L' ? PF__DEC_BYTELEVEL : PF__DEC_BYTEFALLBACK))
            return pf__tok_too_many(path, "decoder", err, err_size);
        return PF_OK;
    }
    if (!strcmp(name, "Replace")) {
        if (!(v = pf__tok_json_str(j, "content", &bad))) {
            snprintf(err, err_size, "%s: decoder Replace has no string \"content\"", path);
            return PF_ERROR_FORMAT;
        }
        if (!(d = pf__tok_add_dec(t, PF__DEC_REPLACE))) return pf__tok_too_many(path, "decoder", err, err_size);
        if ((r = pf__tok_json_pattern(j, "decoder Replace", &d->a, &d->a_len, path, err, err_size)) != PF_OK) return r;
        if (!(d->b = pf__tok_dup(v->string, v->string_len))) goto oom;
        d->b_len = v->string_len;
        return PF_OK;
    }
    if (!strcmp(name, "BPEDecoder")) {
        v = pf__tok_json_str(j, "suffix", &bad);
        if (bad) {
            snprintf(err, err_size, "%s: decoder BPEDecoder's \"suffix\" is not a string", path);
            return PF_ERROR_FORMAT;
        }
        if (!(d = pf__tok_add_dec(t, PF__DEC_BPE))) return pf__tok_too_many(path, "decoder", err, err_size);
        if (!(d->a = pf__tok_dup(v ? v->string : "</w>", v ? v->string_len : 4))) goto oom;
        d->a_len = v ? v->string_len : 4;
        return PF_OK;
    }
    if (!strcmp(name, "WordPiece")) { /* prefix "##" and cleanup true where absent */
        int cleanup = pf__tok_json_bool(j, "cleanup", 1);
        v = pf__tok_json_str(j, "prefix", &bad);
        if (bad || cleanup < 0) {
            snprintf(err, err_size, "%s: decoder WordPiece's \"prefix\" or \"cleanup\" has the wrong type", path);
            return PF_ERROR_FORMAT;
        }
        if (!(d = pf__tok_add_dec(t, PF__DEC_WORDPIECE))) return pf__tok_too_many(path, "decoder", err, err_size);
        d->cleanup = cleanup;
        if (!(d->a = pf__tok_dup(v ? v->string : "##", v ? v->string_len : 2))) goto oom;
        d->a_len = v ? v->string_len : 2;
        return PF_OK;
    }
    if (!strcmp(name, "Metaspace") || !strcmp(name, "Strip")) {
        int meta = name[0] == 'M', scheme = meta ? pf__tok_json_prepend(j) : 0;
        long start = meta ? 0 : pf__tok_json_count(j, "start", 0), stop = meta ? 0 : pf__tok_json_count(j, "stop", 0);
        if (scheme < 0 || start < 0 || stop < 0) {
            snprintf(err, err_size, "%s: decoder %s has a bad %s", path, name, meta ? "prepend_scheme or add_prefix_space" :
                     "start or stop");
            return PF_ERROR_FORMAT;
        }
        if (!(d = pf__tok_add_dec(t, meta ? PF__DEC_METASPACE : PF__DEC_STRIP)))
            return pf__tok_too_many(path, "decoder", err, err_size);
        d->prepend = (pf__tok_prepend)scheme;
        d->start = (size_t)start;
        d->stop = (size_t)stop;
        if ((rc = pf__tok_json_char(j, meta ? "replacement" : "content", &d->a, &d->a_len)) != 0) {
            if (rc == -2) goto oom;
            snprintf(err, err_size, "%s: decoder %s's \"%s\" is not one character", path, name, meta ? "replacement" : "content");
            return PF_ERROR_FORMAT;
        }
        return PF_OK;
    }
    snprintf(err, err_size, "%s: decoder %.40s is not supported", path, name);
    return PF_ERROR_UNSUPPORTED;
oom:
    snprintf(err, err_size, "%s: out of memory", path);
    return PF_ERROR_OUT_OF_MEMORY;
}

/* Sets one post-processor template (which: 0 one text, 1 a pair) from n items. */
static pf_result pf__tok_set_post(pf_tokenizer *t, int which, const pf__tok_post_item *items, size_t n,
                                  const char *path, char *err, size_t err_size) {
    size_t i;
    pf__tok_post_item *p;
    if (n > 1024 || !(p = (pf__tok_post_item *)malloc((n ? n : 1) * sizeof *p))) {
        snprintf(err, err_size, n > 1024 ? "%s: the post_processor adds too many tokens" : "%s: out of memory", path);
        return n > 1024 ? PF_ERROR_UNSUPPORTED : PF_ERROR_OUT_OF_MEMORY;
    }
    if (n) memcpy(p, items, n * sizeof *p);
    free(t->post[which]);
    t->post[which] = p;
    t->post_len[which] = n;
    t->post_added[which] = 0;
    for (i = 0; i < n; i++) t->post_added[which] += items[i].id >= 0;
    return PF_OK;
}

/* [token, id] of Bert/RobertaProcessing: the id, or -1. */
static int32_t pf__tok_json_pair_id(const pf__json *o, const char *key) {
    const pf__json *v = pf__json_get(o, key);
    if (!v || v->type != PF__JSON_ARRAY || v->count != 2 || v->first->type != PF__JSON_STRING) return -1;
    return pf__tok_json_id(v->first->next);
}

/* One of TemplateProcessing's templates (which: 0 "single", 1 "pair") into t->post[which]. */
static pf_result pf__tok_read_template(pf_tokenizer *t, const pf__json *j, int which, const char *path, char *err,
                                       size_t err_size) {
    const char *key = which ? "pair" : "single";
    const pf__json *list = pf__json_get(j, key), *specials = pf__json_get(j, "special_tokens"), *e;
    pf__tok_post_item *items;
    size_t n = 0;
    int bad = 0;
    pf_result r;
    if (which && (!list || list->type == PF__JSON_NULL)) { /* leniency: A, then B of type id 1 */
        static const pf__tok_post_item plain[2] = {{PF__TOK_SEQ_A, 0}, {PF__TOK_SEQ_B, 1}};
        return pf__tok_set_post(t, 1, plain, 2, path, err, err_size);
    }
    if (!list || list->type != PF__JSON_ARRAY ||
        (specials && specials->type != PF__JSON_OBJECT && specials->type != PF__JSON_NULL)) {
        snprintf(err, err_size, "%s: post_processor TemplateProcessing needs a \"%s\" array", path, key);
        return PF_ERROR_FORMAT;
    }
    items = (pf__tok_post_item *)malloc((list->count + 1) * 64 * sizeof *items);
    if (!items) {
        snprintf(err, err_size, "%s: out of memory", path);
        return PF_ERROR_OUT_OF_MEMORY;
    }
    for (e = list->first; e; e = e->next) {
        const pf__json *seq = pf__json_get(e, "Sequence"), *sp = pf__json_get(e, "SpecialToken");
        const pf__json *piece = seq ? seq : sp, *id = pf__tok_json_str(piece, "id", &bad), *tok, *ids, *x;
        long type_id = pf__tok_json_count(piece, "type_id", 0);
        if (!id || (seq && sp) || type_id < 0 ||
            (seq && strcmp(id->string, "A") && (strcmp(id->string, "B") || !which))) {
            snprintf(err, err_size, "%s: post_processor TemplateProcessing: a \"%s\" item is not {\"Sequence\": "
                     "{\"id\": %s, \"type_id\": n}} or {\"SpecialToken\": {\"id\": ..., \"type_id\": n}}", path, key,
                     which ? "\"A\" or \"B\"" : "\"A\"");
            free(items);
            return PF_ERROR_FORMAT;
        }
        if (seq) {
            items[n].id = id->string[0] == 'A' ? PF__TOK_SEQ_A : PF__TOK_SEQ_B;
            items[n++].type_id = (uint32_t)type_id;
            continue;
        }
        tok = pf__json_get(specials, id->string);
        ids = pf__json_get(tok, "ids");
        if (!ids || ids->type != PF__JSON_ARRAY || ids->count > 64) {
            snprintf(err, err_size, "%s: post_processor TemplateProcessing: special token \"%.40s\" has no \"ids\" in "
                     "special_tokens", path, id->string);
            free(items);
            return PF_ERROR_FORMAT;
        }
        for (x = ids->first; x; x = x->next) {
            items[n].type_id = (uint32_t)type_id;
            if ((items[n++].id = pf__tok_json_id(x)) < 0) {
                snprintf(err, err_size, "%s: post_processor TemplateProcessing: special token \"%.40s\" has a bad id",
                         path, id->string);
                free(items);
                return PF_ERROR_FORMAT;
            }
        }
    }
    r = pf__tok_set_post(t, which, items, n, path, err, err_size);
    free(items);
    return r;
}

/* Reads a post_processor object: its templates for one text and for a pair. A Sequence may
   hold one processor that adds tokens (HF applies a second one to the pieces the first made,
   which works only by accident) and any number of ByteLevel ones, which change offsets only. */
static pf_result pf__tok_read_post(pf_tokenizer *t, const pf__json *j, int depth, const char *path, char *err,
                                   size_t err_size) {
    int bad = 0;
    const pf__json *type = pf__tok_json_str(j, "type", &bad);
    const char *name;
    pf_result r;
    if (!j || j->type == PF__JSON_NULL) return PF_OK;
    if (!type) {
        snprintf(err, err_size, "%s: a post_processor has no \"type\"", path);
        return PF_ERROR_FORMAT;
    }
    name = type->string;
    if (!strcmp(name, "Sequence")) {
        const pf__json *list = pf__json_get(j, "processors"), *e;
        if (!list || list->type != PF__JSON_ARRAY || depth > 4) {
            snprintf(err, err_size, "%s: post_processor Sequence has no \"processors\" array", path);
            return PF_ERROR_FORMAT;
        }
        for (e = list->first; e; e = e->next)
            if ((r = pf__tok_read_post(t, e, depth + 1, path, err, err_size)) != PF_OK) return r;
        return PF_OK;
    }
    if (!strcmp(name, "ByteLevel")) return PF_OK; /* it changes offsets only */
    if (strcmp(name, "BertProcessing") && strcmp(name, "RobertaProcessing") && strcmp(name, "TemplateProcessing")) {
        snprintf(err, err_size, "%s: post_processor %.40s is not supported", path, name);
        return PF_ERROR_UNSUPPORTED;
    }
    if (t->has_post) {
        snprintf(err, err_size, "%s: a post_processor Sequence with two processors that add tokens (%.40s the second) "
                 "is not supported", path, name);
        return PF_ERROR_UNSUPPORTED;
    }
    t->has_post = 1;
    if (name[0] == 'B' || name[0] == 'R') {
        /* Bert: [CLS] A [SEP] B:1 [SEP]:1; Roberta: <s> A </s> </s> B </s>, every type id 0 */
        int32_t cls = pf__tok_json_pair_id(j, "cls"), sep = pf__tok_json_pair_id(j, "sep");
        uint32_t b = name[0] == 'B';
        pf__tok_post_item single[3], pair[6];
        if (cls < 0 || sep < 0) {
            snprintf(err, err_size, "%s: post_processor %s needs \"cls\" and \"sep\" as [token, id]", path, name);
            return PF_ERROR_FORMAT;
        }
        single[0].id = pair[0].id = cls;
        single[1].id = pair[1].id = PF__TOK_SEQ_A;
        single[2].id = pair[2].id = sep;
        single[0].type_id = single[1].type_id = single[2].type_id = pair[0].type_id = pair[1].type_id = pair[2].type_id = 0;
        if (b) {
            pair[3].id = PF__TOK_SEQ_B;
            pair[4].id = sep;
            pair[3].type_id = pair[4].type_id = 1;
        } else {
            pair[3].id = sep;
            pair[4].id = PF__TOK_SEQ_B;
            pair[5].id = sep;
            pair[3].type_id = pair[4].type_id = pair[5].type_id = 0;
        }
        if ((r = pf__tok_set_post(t, 0, single, 3, path, err, err_size)) != PF_OK) return r;
        return pf__tok_set_post(t, 1, pair, b ? 5 : 6, path, err, err_size);
    }
    if ((r = pf__tok_read_template(t, j, 0, path, err, err_size)) != PF_OK) return r;
    return pf__tok_read_template(t, j, 1, path, err, err_size);
}

/* After vocab, merges, components and added tokens are in: the id range, the id strings, the byte
   maps, the byte-fallback ids, the added tokens' normalized forms and their index. */
static pf_result pf__tok_finish(pf_tokenizer *t, const char *path, char *err, size_t err_size) {
    int32_t max_id = -1;
    size_t i, count, found = 0;
    int b;
    uint32_t k;
    pf__tok_ctx c;
    for (i = 0; i <= t->vocab_mask; i++)
        if (t->vocab[i].id > max_id) max_id = t->vocab[i].id;
    for (i = 0; i < t->num_added; i++)
        if (t->added[i].id > max_id) max_id = t->added[i].id;
    count = t->vocab_count + t->num_added;
    if ((size_t)max_id + 1 > 4 * count + 65536) {
        snprintf(err, err_size, "%s: the ids are too sparse: the largest is %d for %zu tokens", path,
                 (int)max_id, count);
        return PF_ERROR_FORMAT;
    }
    t->num_ids = max_id + 1;
    if (!t->has_post) { /* HF's default: the texts as they are, the second of type id 1 */
        static const pf__tok_post_item plain[2] = {{PF__TOK_SEQ_A, 0}, {PF__TOK_SEQ_B, 1}};
        pf_result r;
        if ((r = pf__tok_set_post(t, 0, plain, 1, path, err, err_size)) != PF_OK ||
            (r = pf__tok_set_post(t, 1, plain, 2, path, err, err_size)) != PF_OK)
            return r;
    }
    t->id_str = (const char **)malloc((size_t)(t->num_ids ? t->num_ids : 1) * sizeof *t->id_str);
    t->id_len = (int32_t *)malloc((size_t)(t->num_ids ? t->num_ids : 1) * sizeof *t->id_len);
    if (!t->id_str || !t->id_len) goto oom;
    for (i = 0; i < (size_t)t->num_ids; i++) t->id_len[i] = -1;
    for (i = 0; i <= t->vocab_mask; i++) {
        const pf__tok_vocab_slot *slot = &t->vocab[i];
        if (slot->id < 0) continue;
        t->id_str[slot->id] = t->vocab_text + slot->offset;
        t->id_len[slot->id] = (int32_t)slot->len;
    }
    for (i = 0; i < t->num_pieces; i++) { /* a repeated Unigram piece: both ids */
        t->id_str[i] = t->vocab_text + t->pieces[i].offset;
        t->id_len[i] = (int32_t)t->pieces[i].len;
    }

    pf__tok_byte_map(t->byte_char);
    for (i = 0; i < 512; i++) t->char_byte[i] = -1;
    for (b = 0; b < 256; b++) {
        char name[8];
        t->char_byte[t->byte_char[b]] = (int16_t)b;
        t->byte_str_len[b] = (unsigned char)pf__utf8_encode(t->byte_char[b], t->byte_str[b]);
        t->byte_id[b] = pf__tok_vocab_find(t, (const char *)t->byte_str[b], t->byte_str_len[b]);
        snprintf(name, sizeof name, "<0x%02X>", b);
        t->fallback_id[b] = t->byte_fallback ? pf__tok_vocab_find(t, name, 6) : -1;
        found += t->fallback_id[b] >= 0;
    }
    if (t->byte_fallback && !found && t->model == PF__MODEL_BPE) {
        snprintf(err, err_size, "%s: BPE byte_fallback is set but the vocab has none of the byte tokens <0x00> .. <0xFF>",
                 path);
        return PF_ERROR_FORMAT;
    }

    /* what each added token is looked for as: normalized tokens through the normalizer */
    memset(&c, 0, sizeof c);
    c.t = t;
    for (i = 0; i < t->num_added; i++) {
        pf__tok_added *a = &t->added[i];
        const unsigned char *m = (const unsigned char *)a->content;
        size_t len = a->len;
        int first = 1;
        if (a->normalized && pf__tok_normalize(&c, m, len, &m, &len, &first)) break;
        if (!(a->match = pf__tok_dup((const char *)m, len))) break;
        a->match_len = len;
    }
    pf__tok_ctx_free(&c);
    if (i < t->num_added) goto oom;
    for (i = 0; i < t->num_added; i++) { /* HF decodes an added token to its content, normalized if it is */
        t->id_str[t->added[i].id] = t->added[i].normalized ? t->added[i].match : t->added[i].content;
        t->id_len[t->added[i].id] = (int32_t)(t->added[i].normalized ? t->added[i].match_len : t->added[i].len);
    }

    /* added tokens by pass, then first byte (a counting sort); an empty match is never looked for */
    t->added_order = (uint32_t *)malloc((t->num_added ? t->num_added : 1) * sizeof *t->added_order);
    if (!t->added_order) goto oom;
    memset(t->added_first, 0, sizeof t->added_first);
    for (i = 0; i < t->num_added; i++)
        if (t->added[i].match_len && !t->added[i].unmatched)
            t->added_first[t->added[i].normalized][(unsigned char)t->added[i].match[0] + 1]++;
    for (b = 0; b < 2; b++) {
        uint32_t base = b ? t->added_first[0][256] : 0;
        t->added_first[b][0] = base;
        for (k = 1; k <= 256; k++) t->added_first[b][k] += t->added_first[b][k - 1];
    }
    {
        uint32_t fill[2][256];
        for (b = 0; b < 2; b++) memcpy(fill[b], t->added_first[b], sizeof fill[b]);
        for (i = 0; i < t->num_added; i++)
            if (t->added[i].match_len && !t->added[i].unmatched)
                t->added_order[fill[t->added[i].normalized][(unsigned char)t->added[i].match[0]]++] = (uint32_t)i;
    }
    return PF_OK;
oom:
    snprintf(err, err_size, "%s: out of memory", path);
    return PF_ERROR_OUT_OF_MEMORY;
}

/* A string or null BPE option (continuing_subword_prefix, end_of_word_suffix) copied to *out
   (NULL for null); -1 when of another type, -2 out of memory. */
static int pf__tok_json_affix(const pf__json *model, const char *key, char **out, size_t *len) {
    int bad = 0;
    const pf__json *v = pf__tok_json_str(model, key, &bad);
    if (bad) return -1;
    if (!v) return 0;
    if (!(*out = pf__tok_dup(v->string, v->string_len))) return -2;
    *len = v->string_len;
    return 0;
}

/* model BPE: vocab, merges and options. */
static pf_result pf__tok_read_bpe(pf_tokenizer *t, const pf__json *model, const char *path, char *err,
                                  size_t err_size) {
    const pf__json *merges, *e, *v;
    pf__tok_merge_text *mt;
    size_t n;
    int bad = 0, rc;
    pf_result r;
    v = pf__json_get(model, "dropout");
    if (v && v->type != PF__JSON_NULL && !(v->type == PF__JSON_NUMBER && v->number == 0)) {
        snprintf(err, err_size, "%s: BPE dropout is not supported", path);
        return PF_ERROR_UNSUPPORTED;
    }
    if ((rc = pf__tok_json_affix(model, "continuing_subword_prefix", &t->prefix, &t->prefix_len)) == 0)
        rc = pf__tok_json_affix(model, "end_of_word_suffix", &t->suffix, &t->suffix_len);
    if (rc == -2) {
        snprintf(err, err_size, "%s: out of memory", path);
        return PF_ERROR_OUT_OF_MEMORY;
    }
    v = pf__tok_json_str(model, "unk_token", &bad);
    t->fuse_unk = pf__tok_json_bool(model, "fuse_unk", 0);
    t->ignore_merges = pf__tok_json_bool(model, "ignore_merges", 0);
    t->byte_fallback = pf__tok_json_bool(model, "byte_fallback", 0);
    if (rc || bad || t->fuse_unk < 0 || t->ignore_merges < 0 || t->byte_fallback < 0) {
        snprintf(err, err_size, "%s: a BPE option of the model has the wrong type", path);
        return PF_ERROR_FORMAT;
    }

    if ((r = pf__tok_set_vocab(t, pf__json_get(model, "vocab"), "model.vocab", path, err, err_size)) != PF_OK)
        return r;
    merges = pf__json_get(model, "merges");
    if (!merges || merges->type != PF__JSON_ARRAY) {
        snprintf(err, err_size, "%s: model.merges is %s, not an array", path, merges ? "of another type" : "missing");
        return PF_ERROR_FORMAT;
    }
    mt = (pf__tok_merge_text *)malloc((merges->count ? merges->count : 1) * sizeof *mt);
    if (!mt) {
        snprintf(err, err_size, "%s: out of memory", path);
        return PF_ERROR_OUT_OF_MEMORY;
    }
    for (n = 0, e = merges->first; e; e = e->next, n++) { /* "a b", or ["a", "b"] */
        const pf__json *a = e->first, *b = a ? a->next : NULL;
        if (e->type == PF__JSON_STRING && !pf__tok_split_merge_line(e->string, e->string_len, &mt[n])) continue;
        if (e->type == PF__JSON_ARRAY && e->count == 2 && a->type == PF__JSON_STRING && b->type == PF__JSON_STRING) {
            mt[n].a = a->string;
            mt[n].a_len = a->string_len;
            mt[n].b = b->string;
            mt[n].b_len = b->string_len;
            continue;
        }
        snprintf(err, err_size, "%s: merge %zu is neither \"a b\" nor [\"a\", \"b\"]", path, n + 1);
        free(mt);
        return PF_ERROR_FORMAT;
    }
    r = pf__tok_set_merges(t, mt, n, path, err, err_size);
    free(mt);
    if (r != PF_OK) return r;

    /* an unk_token missing from the vocab is no unk token: HF fails only when it is needed */
    v = pf__tok_json_str(model, "unk_token", &bad);
    t->unk_id = v ? pf__tok_vocab_find(t, v->string, v->string_len) : -1;
    return PF_OK;
}

/* model WordPiece: vocab, unk_token ("[UNK]"), continuing_subword_prefix ("##"),
   max_input_chars_per_word (100); HF's defaults where absent. */
static pf_result pf__tok_read_wordpiece(pf_tokenizer *t, const pf__json *model, const char *path, char *err,
                                        size_t err_size) {
    int bad = 0;
    const pf__json *unk = pf__tok_json_str(model, "unk_token", &bad), *prefix;
    long max_chars = pf__tok_json_count(model, "max_input_chars_per_word", 100);
    pf_result r;
    prefix = pf__tok_json_str(model, "continuing_subword_prefix", &bad);
    if (bad || max_chars < 0) {
        snprintf(err, err_size, "%s: a WordPiece option of the model has the wrong type", path);
        return PF_ERROR_FORMAT;
    }
    t->model = PF__MODEL_WORDPIECE;
    t->max_word_chars = (size_t)max_chars;
    if (!(t->prefix = pf__tok_dup(prefix ? prefix->string : "##", prefix ? prefix->string_len : 2))) {
        snprintf(err, err_size, "%s: out of memory", path);
        return PF_ERROR_OUT_OF_MEMORY;
    }
    t->prefix_len = prefix ? prefix->string_len : 2;
    if ((r = pf__tok_set_vocab(t, pf__json_get(model, "vocab"), "model.vocab", path, err, err_size)) != PF_OK)
        return r;
    t->unk_id = pf__tok_vocab_find(t, unk ? unk->string : "[UNK]", unk ? unk->string_len : 5);
    return PF_OK;
}

/* model Unigram: vocab as [piece, score] pairs (ids in order), unk_id, byte_fallback. */
static pf_result pf__tok_read_unigram(pf_tokenizer *t, const pf__json *model, const char *path, char *err,
                                      size_t err_size) {
    const pf__json *vocab = pf__json_get(model, "vocab"), *unk = pf__json_get(model, "unk_id"), *e;
    size_t text_len = 0, i;
    double min_score = INFINITY;
    pf_result r;
    t->model = PF__MODEL_UNIGRAM;
    t->byte_fallback = pf__tok_json_bool(model, "byte_fallback", 0);
    t->unk_id = unk && unk->type != PF__JSON_NULL ? pf__tok_json_id(unk) : -1;
    if (!vocab || vocab->type != PF__JSON_ARRAY || t->byte_fallback < 0 || (unk && unk->type != PF__JSON_NULL && t->unk_id < 0)) {
        snprintf(err, err_size, "%s: model Unigram needs a \"vocab\" array of [piece, score], an integer or null "
                 "\"unk_id\" and a boolean \"byte_fallback\"", path);
        return PF_ERROR_FORMAT;
    }
    if (t->unk_id >= 0 && (size_t)t->unk_id >= vocab->count) {
        snprintf(err, err_size, "%s: model Unigram's unk_id %d is not in its vocab of %zu pieces", path, (int)t->unk_id,
                 vocab->count);
        return PF_ERROR_FORMAT;
    }
    for (i = 0, e = vocab->first; e; e = e->next, i++) {
        if (e->type != PF__JSON_ARRAY || e->count != 2 || e->first->type != PF__JSON_STRING ||
            e->first->next->type != PF__JSON_NUMBER || e->first->string_len > UINT32_MAX - 1) {
            snprintf(err, err_size, "%s: model Unigram: vocab entry %zu is not [piece, score]", path, i);
            return PF_ERROR_FORMAT;
        }
        text_len += e->first->string_len + 1;
    }
    if (vocab->count >= INT32_MAX) {
        snprintf(err, err_size, "%s: model Unigram has too many pieces", path);
        return PF_ERROR_FORMAT;
    }
    if ((r = pf__tok_vocab_alloc(t, vocab->count, text_len, path, err, err_size)) != PF_OK) return r;
    if (!(t->pieces = (pf__tok_piece *)malloc((vocab->count ? vocab->count : 1) * sizeof *t->pieces))) {
        snprintf(err, err_size, "%s: out of memory", path);
        return PF_ERROR_OUT_OF_MEMORY;
    }
    for (i = 0, e = vocab->first; e; e = e->next, i++) {
        pf__tok_piece *p = &t->pieces[i];
        p->len = (uint32_t)e->first->string_len;
        p->score = e->first->next->number;
        p->offset = pf__tok_vocab_insert(t, e->first->string, p->len, (int32_t)i);
        if (p->score < min_score) min_score = p->score;
    }
    t->num_pieces = i;
    t->unk_score = min_score - 10.0;
    return PF_OK;
}

/* tokenizer.json: model, added_tokens, normalizer, pre_tokenizer, decoder, post_processor. */
static pf_result pf__tok_from_json(pf_tokenizer *t, const pf__json *root, const char *path, char *err,
                                   size_t err_size) {
    const pf__json *model = pf__json_get(root, "model"), *added, *e, *v;
    int bad = 0;
    pf_result r;
    if (!root || root->type != PF__JSON_OBJECT || !model || model->type != PF__JSON_OBJECT) {
        snprintf(err, err_size, "%s: no \"model\" object", path);
        return PF_ERROR_FORMAT;
    }
    v = pf__tok_json_str(model, "type", &bad);
    if (!v || !strcmp(v->string, "BPE")) r = pf__tok_read_bpe(t, model, path, err, err_size);
    else if (!strcmp(v->string, "WordPiece")) r = pf__tok_read_wordpiece(t, model, path, err, err_size);
    else if (!strcmp(v->string, "Unigram")) r = pf__tok_read_unigram(t, model, path, err, err_size);
    else {
        snprintf(err, err_size, "%s: model type %.40s is not supported (only BPE, WordPiece and Unigram)", path,
                 v->string);
        return PF_ERROR_UNSUPPORTED;
    }
    if (r != PF_OK) return r;

    added = pf__json_get(root, "added_tokens");
    if (added && added->type != PF__JSON_NULL) {
        if (added->type != PF__JSON_ARRAY) {
            snprintf(err, err_size, "%s: added_tokens is not an array", path);
            return PF_ERROR_FORMAT;
        }
        /* HF: the model's vocab size (a Unigram's counts its pieces, repeated ones too) */
        int32_t next_id = (int32_t)(t->model == PF__MODEL_UNIGRAM ? t->num_pieces : t->vocab_count);
        for (e = added->first; e; e = e->next)
            if ((r = pf__tok_read_added(t, e, -1, &next_id, path, err, err_size)) != PF_OK) return r;
    }

    if ((r = pf__tok_read_normalizer(t, pf__json_get(root, "normalizer"), 0, path, err, err_size)) != PF_OK ||
        (r = pf__tok_read_pretok(t, pf__json_get(root, "pre_tokenizer"), 0, path, err, err_size)) != PF_OK ||
        (r = pf__tok_read_decoder(t, pf__json_get(root, "decoder"), 0, path, err, err_size)) != PF_OK ||
        (r = pf__tok_read_post(t, pf__json_get(root, "post_processor"), 0, path, err, err_size)) != PF_OK)
        return r;
    return pf__tok_finish(t, path, err, err_size);
}
/* Reads and parses a JSON file; *root NULL and PF_OK when optional and absent. */
static pf_result pf__tok_read_json(const char *path, int optional, pf__json **root, char *err, size_t err_size) {
    char *data = NULL, jerr[160];
    size_t len;
    *root = NULL;
    if (optional && !pf__file_exists(path)) return PF_OK;
    pf_result r = pf__read_file(path, PF__MAX_TEXT_FILE, &data, &len, err, err_size);
    if (r) return r;
    jerr[0] = 0;
    *root = pf__json_parse(data, len, jerr, sizeof jerr);
    free(data);
    if (!*root) {
        snprintf(err, err_size, "%s: %s", path, jerr[0] ? jerr : "not valid JSON");
        return strstr(jerr, "out of memory") ? PF_ERROR_OUT_OF_MEMORY : PF_ERROR_FORMAT;
    }
    return PF_OK;
}

/* The added tokens of a tokenizer_config.json's added_tokens_decoder ({"id": {"content": ...}});
   PF_OK when it has none. */
static pf_result pf__tok_read_added_decoder(pf_tokenizer *t, const pf__json *config, const char *path, char *err,
                                            size_t err_size) {
    const pf__json *atd = pf__json_get(config, "added_tokens_decoder"), *e;
    pf_result r;
    if (atd && atd->type != PF__JSON_OBJECT && atd->type != PF__JSON_NULL) {
        snprintf(err, err_size, "%s: added_tokens_decoder is not an object", path);
        return PF_ERROR_FORMAT;
    }
    for (e = atd && atd->type == PF__JSON_OBJECT ? atd->first : NULL; e; e = e->next) {
        char *endp;
        long id;
        errno = 0;
        id = strtol(e->key, &endp, 10);
        if (!e->key_len || *endp || errno || id < 0 || id >= INT32_MAX) {
            snprintf(err, err_size, "%s: added_tokens_decoder key \"%.40s\" is not an id", path, e->key);
            return PF_ERROR_FORMAT;
        }
        if ((r = pf__tok_read_added(t, e, (int32_t)id, NULL, path, err, err_size)) != PF_OK) return r;
    }
    return PF_OK;
}

/* vocab.json + merges.txt (+ tokenizer_config.json), as transformers builds a GPT-2 tokenizer from
   them: ByteLevel pre-tokenizer and decoder, add_prefix_space from the config (default false),
   added tokens from the config's added_tokens_decoder, and <|endoftext|> special when in the vocab. */
static pf_result pf__tok_from_files(pf_tokenizer *t, const char *dir, char *err, size_t err_size) {
    char path[4096];
    pf__json *vocab = NULL, *config = NULL;
    char *text = NULL;
    size_t len, n = 0, cap = 0, line = 0, i;
    pf__tok_merge_text *mt = NULL;
    pf_result r;
    int add_prefix_space = 0;
    static const char eot[] = "<|endoftext|>";

    if (pf__path_join(path, sizeof path, dir, "vocab.json")) goto too_long;
    if ((r = pf__tok_read_json(path, 0, &vocab, err, err_size)) != PF_OK) goto done;
    if ((r = pf__tok_set_vocab(t, vocab, NULL, path, err, err_size)) != PF_OK) goto done;

    if (pf__path_join(path, sizeof path, dir, "merges.txt")) goto too_long;
    if ((r = pf__read_file(path, PF__MAX_TEXT_FILE, &text, &len, err, err_size)) != PF_OK) goto done;
    for (i = 0; i < len;) { /* lines; "#version" lines and blank ones are skipped */
        size_t end = i, l;
        const char *s = text + i;
        while (end < len && text[end] != '\n') end++;
        l = end - i;
        line++;
        i = end + 1;
        if (l && s[l - 1] == '\r') l--;
        if (l == 0 || (l >= 8 && !memcmp(s, "#version", 8))) continue;
        if (n == cap) {
            size_t c2 = cap ? 2 * cap : 1024;
            pf__tok_merge_text *p = (pf__tok_merge_text *)realloc(mt, c2 * sizeof *p);
            if (!p) {
                snprintf(err, err_size, "%s: out of memory", path);
                r = PF_ERROR_OUT_OF_MEMORY;
                goto done;
            }
            mt = p;
            cap = c2;
        }
        if (pf__tok_split_merge_line(s, l, &mt[n])) {
            snprintf(err, err_size, "%s: line %zu is not two tokens separated by one space", path, line);
            r = PF_ERROR_FORMAT;
            goto done;
        }
        n++;
    }
    if ((r = pf__tok_set_merges(t, mt, n, path, err, err_size)) != PF_OK) goto done;

    if (pf__path_join(path, sizeof path, dir, "tokenizer_config.json")) goto too_long;
    if ((r = pf__tok_read_json(path, 1, &config, err, err_size)) != PF_OK) goto done;
    if (config) {
        add_prefix_space = pf__tok_json_bool(config, "add_prefix_space", 0);
        if (add_prefix_space < 0 || config->type != PF__JSON_OBJECT) {
            snprintf(err, err_size, "%s: add_prefix_space has the wrong type", path);
            r = PF_ERROR_FORMAT;
            goto done;
        }
        if ((r = pf__tok_read_added_decoder(t, config, path, err, err_size)) != PF_OK) goto done;
    }
    {
        int32_t id = pf__tok_vocab_find(t, eot, sizeof eot - 1);
        for (i = 0; i < t->num_added; i++)
            if (t->added[i].len == sizeof eot - 1 && !memcmp(t->added[i].content, eot, sizeof eot - 1)) break;
        if (id >= 0 && i == t->num_added && pf__tok_add_token(t, eot, sizeof eot - 1, id, 1, 0, 0, 0, 0)) {
            snprintf(err, err_size, "%s: out of memory", dir);
            r = PF_ERROR_OUT_OF_MEMORY;
            goto done;
        }
    }
    t->unk_id = -1;
    t->byte_level = 1;
    t->has_decoder = 1;
    t->num_decs = 1;
    t->decs[0].kind = PF__DEC_BYTELEVEL;
    if (add_prefix_space) t->pres[t->num_pres++].kind = PF__PRE_PREFIX_SPACE;
    t->pres[t->num_pres].kind = PF__PRE_SPLIT;
    t->pres[t->num_pres].pattern = PF__PAT_GPT2;
    t->pres[t->num_pres++].behavior = PF__SPLIT_ISOLATED;
    if (pf__path_join(path, sizeof path, dir, "merges.txt")) goto too_long;
    r = pf__tok_finish(t, path, err, err_size);
    goto done;
too_long:
    snprintf(err, err_size, "%.200s: the path is too long", dir);
    r = PF_ERROR_INVALID_ARGUMENT;
done:
    pf__json_free(vocab);
    pf__json_free(config);
    free(text);
    free(mt);
    return r;
}

/* The id of a tokenizer_config.json special token (a string, or an object with "content"): an
   added token's, else the vocab's; -1 when absent or unknown. */
static int32_t pf__tok_config_token(const pf_tokenizer *t, const pf__json *config, const char *key) {
    const pf__json *v = pf__json_get(config, key);
    size_t i;
    if (v && v->type == PF__JSON_OBJECT) v = pf__json_get(v, "content");
    if (!v || v->type != PF__JSON_STRING) return -1;
    for (i = 0; i < t->num_added; i++)
        if (t->added[i].len == v->string_len && !memcmp(t->added[i].content, v->string, v->string_len))
            return t->added[i].id;
    return pf__tok_vocab_find(t, v->string, v->string_len);
}

/* ByT5 (tokenizer_config.json's tokenizer_class "ByT5Tokenizer", no tokenizer.json), as
   transformers' ByT5Tokenizer: each UTF-8 byte is id byte + 3, after <pad> <eos> <unk> (which
   strip the spaces around them); the extra ids and other added tokens from added_tokens_decoder,
   or, in configs older than it, additional_special_tokens (else <extra_id_0> .. extra_ids - 1) from
   id 259 on; "$A </s>" and "$A </s> $B </s>" (type ids 0), without a second </s> when the text's
   ids end with one; decode drops the bytes that are not valid UTF-8. The tokens the config names
   (pad_token, eos_token, ...) are special, as transformers' decode(skip_special_tokens=True) skips them. */
static pf_result pf__tok_from_byt5(pf_tokenizer *t, const pf__json *config, const char *path, char *err,
                                   size_t err_size) {
    static const char *const named[] = {"pad_token", "eos_token", "unk_token", "bos_token",
                                        "sep_token", "cls_token", "mask_token"};
    static const char *const first[PF__BYTES_OFFSET] = {"<pad>", "</s>", "<unk>"};
    pf__tok_post_item single[2] = {{PF__TOK_SEQ_A, 0}, {-1, 0}}, pair[4] = {{PF__TOK_SEQ_A, 0}, {-1, 0},
                                                                          {PF__TOK_SEQ_B, 0}, {-1, 0}};
    int32_t eos;
    size_t i, k;
    pf_result r;
    t->model = PF__MODEL_BYTES;
    if ((r = pf__tok_vocab_alloc(t, 256, 2 * 256, path, err, err_size)) != PF_OK) return r;
    for (i = 0; i < 256; i++) {
        char byte = (char)(unsigned char)i;
        pf__tok_vocab_insert(t, &byte, 1, (int32_t)i + PF__BYTES_OFFSET);
    }
    if (pf__json_get(config, "added_tokens_decoder")) {
        if ((r = pf__tok_read_added_decoder(t, config, path, err, err_size)) != PF_OK) return r;
    } else {
        const pf__json *list = pf__json_get(config, "additional_special_tokens"), *e;
        long extra = pf__tok_json_count(config, "extra_ids", 125);
        int32_t id = 256 + PF__BYTES_OFFSET;
        if (!list) list = pf__json_get(config, "extra_special_tokens");
        if (extra < 0 || extra > 65536 || (list && list->type != PF__JSON_ARRAY)) {
            snprintf(err, err_size, "%s: extra_ids or additional_special_tokens has the wrong type", path);
            return PF_ERROR_FORMAT;
        }
        for (i = 0; i < PF__BYTES_OFFSET; i++)
            if (pf__tok_add_token(t, first[i], strlen(first[i]), (int32_t)i, 0, 1, 1, 1, 0)) goto oom;
        for (e = list ? list->first : NULL; e; e = e->next) {
            if (e->type != PF__JSON_STRING) {
                snprintf(err, err_size, "%s: additional_special_tokens holds a non-string", path);
                return PF_ERROR_FORMAT;
            }
            if (pf__tok_add_token(t, e->string, e->string_len, id++, 1, 0, 0, 0, 0)) goto oom;
        }
        for (k = 0; !list && k < (size_t)extra; k++) {
            char name[32];
            snprintf(name, sizeof name, "<extra_id_%zu>", k);
            if (pf__tok_add_token(t, name, strlen(name), id++, 1, 0, 0, 0, 0)) goto oom;
        }
    }
    for (k = 0; k < sizeof named / sizeof named[0]; k++) {
        int32_t id = pf__tok_config_token(t, config, named[k]);
        for (i = 0; id >= 0 && i < t->num_added; i++)
            if (t->added[i].id == id) t->added[i].special = 1;
    }
    eos = pf__json_get(config, "eos_token") ? pf__tok_config_token(t, config, "eos_token") : 1;
    if (eos < 0) {
        snprintf(err, err_size, "%s: ByT5Tokenizer's eos_token is not one of its tokens", path);
        return PF_ERROR_FORMAT;
    }
    single[1].id = pair[1].id = pair[3].id = eos;
    if ((r = pf__tok_set_post(t, 0, single, 2, path, err, err_size)) != PF_OK ||
        (r = pf__tok_set_post(t, 1, pair, 4, path, err, err_size)) != PF_OK)
        return r;
    t->has_post = 1;
    t->eos_once = 1;
    t->unk_id = -1; /* every byte has its id */
    t->has_decoder = 1;
    t->num_decs = 1;
    t->decs[0].kind = PF__DEC_UTF8_IGNORE;
    return pf__tok_finish(t, path, err, err_size);
oom:
    snprintf(err, err_size, "%s: out of memory", path);
    return PF_ERROR_OUT_OF_MEMORY;
}

/* ---- SentencePiece model files (Marian's source.spm, M2M100's sentencepiece.bpe.model) ---- */

typedef struct pf__spm_piece { /* a piece of a ModelProto; its string points into the file's bytes */
    const unsigned char *s;
    size_t len;
    float score;
    int type;
} pf__spm_piece;

typedef struct pf__spm_model { /* what of a ModelProto changes the tokens (the rest is skipped) */
    pf__spm_piece *pieces; /* [num_pieces] (malloc'd) */
    size_t num_pieces, cap;
    int model_type, byte_fallback, treat_whitespace_as_suffix;
    unsigned flags; /* PF__SPM_DUMMY_PREFIX | PF__SPM_REMOVE_SPACES | PF__SPM_ESCAPE */
    const unsigned char *charsmap, *unk_surface;
    size_t charsmap_len, unk_surface_len;
    int has_unk_surface, denormalizer;
} pf__spm_model;

typedef struct pf__pb { /* a protobuf message being read */
    const unsigned char *p, *end;
} pf__pb;

/* A varint; -1 when it runs past the message or past 10 bytes. */
static int pf__pb_varint(pf__pb *b, uint64_t *v) {
    int shift;
    *v = 0;
    for (shift = 0; shift < 70 && b->p < b->end; shift += 7) {
        unsigned char c = *b->p++;
        if (shift < 64) *v |= (uint64_t)(c & 0x7F) << shift;
        if (!(c & 0x80)) return 0;
    }
    return -1;
}

/* The next field of a message: its number and wire type, its value in *v (varint, fixed32,
   fixed64) or its bytes in *s, *n (length-delimited). 1 at the message's end, -1 when malformed
   (a length past the end, a group, an unknown wire type). */
static int pf__pb_field(pf__pb *b, uint32_t *field, int *wire, uint64_t *v, const unsigned char **s, size_t *n) {
    uint64_t key;
    int k;
    if (b->p == b->end) return 1;
    if (pf__pb_varint(b, &key) || (key >> 3) == 0 || (key >> 3) > 0x1FFFFFFF) return -1;
    *field = (uint32_t)(key >> 3);
    *wire = (int)(key & 7);
    *v = 0;
    switch (*wire) {
    case 0:
        return pf__pb_varint(b, v);
    case 1:
    case 5:
        k = *wire == 1 ? 8 : 4;
        if (b->end - b->p < k) return -1;
        while (k--) *v = *v << 8 | b->p[k];
        b->p += *wire == 1 ? 8 : 4;
        return 0;
    case 2:
        if (pf__pb_varint(b, v) || *v > (uint64_t)(b->end - b->p)) return -1;
        *s = b->p;
        *n = (size_t)*v;
        b->p += *n;
        return 0;
    default:
        return -1;
    }
}

/* Reads a ModelProto message `which` (1 a piece, 2 trainer_spec, 3 normalizer_spec, 5
   denormalizer_spec) from s[0 .. n) into m; -1 when malformed, -2 out of memory. */
static int pf__spm_read_message(pf__spm_model *m, int which, const unsigned char *s, size_t n) {
    pf__pb b;
    uint32_t field;
    int wire, rc;
    uint64_t v;
    const unsigned char *bytes = NULL;
    size_t len = 0;
    pf__spm_piece piece = {NULL, 0, 0.0f, PF__SPM_NORMAL};
    b.p = s;
    b.end = s + n;
    while ((rc = pf__pb_field(&b, &field, &wire, &v, &bytes, &len)) == 0) {
        /* a known field of the wrong wire type is malformed; unknown fields are skipped */
        int want = which == 1 ? (field == 1 ? 2 : field == 2 ? 5 : field == 3 ? 0 : -1)
                 : which == 2 ? (field == 3 || field == 24 || field == 35 ? 0 : field == 44 ? 2 : -1)
                              : (field == 2 ? 2 : field >= 3 && field <= 5 ? 0 : -1);
        if (want < 0) continue;
        if (wire != want) return -1;
        if (which == 1) {
            if (field == 1) piece.s = bytes, piece.len = len;
            else if (field == 3) piece.type = v >= PF__SPM_NORMAL && v <= PF__SPM_BYTE ? (int)v : 0;
            else {
                uint32_t bits = (uint32_t)v;
                memcpy(&piece.score, &bits, sizeof piece.score);
            }
        } else if (which == 2) {
            if (field == 3) m->model_type = v <= PF__SPM_CHAR ? (int)v : 0;
            else if (field == 24) m->treat_whitespace_as_suffix = v != 0;
            else if (field == 35) m->byte_fallback = v != 0;
            else m->unk_surface = bytes, m->unk_surface_len = len, m->has_unk_surface = 1;
        } else if (field == 2) {
            if (which == 5) m->denormalizer = len > 0;
            else m->charsmap = bytes, m->charsmap_len = len;
        } else if (which == 3) {
            unsigned flag = field == 3 ? PF__SPM_DUMMY_PREFIX : field == 4 ? PF__SPM_REMOVE_SPACES : PF__SPM_ESCAPE;
            m->flags = v ? m->flags | flag : m->flags & ~flag;
        }
    }
    if (rc < 0) return -1;
    if (which == 1) {
        if (m->num_pieces == m->cap) {
            size_t cap = m->cap ? 2 * m->cap : 1024;
            pf__spm_piece *p = (pf__spm_piece *)realloc(m->pieces, cap * sizeof *p);
            if (!p) return -2;
            m->pieces = p;
            m->cap = cap;
        }
        m->pieces[m->num_pieces++] = piece;
    }
    return 0;
}

/* Parses a SentencePiece ModelProto (sentencepiece_model.proto) from data[0 .. len), every length
   checked against the buffer; the pieces point into data. */
static pf_result pf__spm_parse(const unsigned char *data, size_t len, pf__spm_model *m, const char *path, char *err,
                               size_t err_size) {
    pf__pb b;
    uint32_t field;
    int wire, rc = 0;
    uint64_t v;
    const unsigned char *s = NULL;
    size_t n = 0;
    memset(m, 0, sizeof *m);
    m->model_type = PF__SPM_UNIGRAM;
    m->flags = PF__SPM_DUMMY_PREFIX | PF__SPM_REMOVE_SPACES | PF__SPM_ESCAPE;
    b.p = data;
    b.end = data + len;
    while ((rc = pf__pb_field(&b, &field, &wire, &v, &s, &n)) == 0) {
        if (field != 1 && field != 2 && field != 3 && field != 5) continue; /* self_test_data, ... */
        if (wire != 2) {
            rc = -1;
            break;
        }
        if ((rc = pf__spm_read_message(m, (int)field, s, n)) != 0) break;
        if (m->num_pieces >= INT32_MAX) {
            rc = -1;
            break;
        }
    }
    if (rc == -2) {
        snprintf(err, err_size, "%s: out of memory", path);
        return PF_ERROR_OUT_OF_MEMORY;
    }
    if (rc < 0) {
        snprintf(err, err_size, "%s: not a SentencePiece model: the protobuf is malformed near byte %zu of %zu", path,
                 (size_t)(b.p - data), len);
        return PF_ERROR_FORMAT;
    }
    return PF_OK;
}

/* Orders piece ids by score, highest first (ties by id). */
typedef struct pf__spm_rank {
    float score;
    int32_t id;
} pf__spm_rank;

static int pf__spm_rank_cmp(const void *a, const void *b) {
    const pf__spm_rank *x = (const pf__spm_rank *)a, *y = (const pf__spm_rank *)b;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* SentencePiece BPE as merges: a normal piece is the merge of any two normal pieces it splits
   into, ranked by its score (higher first; equal scores, equal ranks: then the leftmost pair, as
   SentencePiece's agenda). */
static pf_result pf__spm_set_merges(pf_tokenizer *sp, const pf__spm_model *m, const char *path, char *err,
                                    size_t err_size) {
    size_t i, k, splits = 0, n = 0;
    uint32_t rank = 0;
    uint32_t *ranks = (uint32_t *)malloc((m->num_pieces ? m->num_pieces : 1) * sizeof *ranks);
    pf__spm_rank *order = (pf__spm_rank *)malloc((m->num_pieces ? m->num_pieces : 1) * sizeof *order);
    if (!ranks || !order) goto oom;
    for (i = 0; i < m->num_pieces; i++)
        if (m->pieces[i].type == PF__SPM_NORMAL) {
            order[n].score = m->pieces[i].score;
            order[n++].id = (int32_t)i;
            splits += m->pieces[i].len;
        }
    qsort(order, n, sizeof *order, pf__spm_rank_cmp);
    for (i = 0; i < n; i++) {
        if (i > 0 && order[i].score != order[i - 1].score) rank++;
        ranks[order[i].id] = rank;
    }
    sp->merges_mask = pf__tok_pow2_at_least(2 * splits + 1) - 1;
    if (!(sp->merges = (pf__tok_merge_slot *)malloc((sp->merges_mask + 1) * sizeof *sp->merges))) goto oom;
    memset(sp->merges, 0xFF, (sp->merges_mask + 1) * sizeof *sp->merges);
    for (i = 0; i < m->num_pieces; i++) {
        const pf__spm_piece *p = &m->pieces[i];
        uint32_t cp;
        if (p->type != PF__SPM_NORMAL) continue;
        for (k = pf__utf8_decode(p->s, p->len, &cp); k < p->len; k += pf__utf8_decode(p->s + k, p->len - k, &cp)) {
            int32_t a = pf__tok_vocab_find(sp, (const char *)p->s, k), b = pf__tok_vocab_find(sp, (const char *)p->s + k, p->len - k);
            if (a >= 0 && b >= 0 && sp->spm_types[a] == PF__SPM_NORMAL && sp->spm_types[b] == PF__SPM_NORMAL)
                pf__tok_merge_put(sp, a, b, ranks[i], (int32_t)i);
        }
    }
    free(ranks);
    free(order);
    return PF_OK;
oom:
    free(ranks);
    free(order);
    snprintf(err, err_size, "%s: out of memory", path);
    return PF_ERROR_OUT_OF_MEMORY;
}

/* The tokenizer of a SentencePiece model: its pieces by id (a Unigram's with their scores, a
   BPE's as merges), its unk piece; what SentencePiece would do differently from what is
   implemented here is refused, naming it. */
static pf_result pf__spm_build(const pf__spm_model *m, pf_tokenizer **out, const char *path, char *err, size_t err_size) {
    static const char default_unk_surface[] = " \xE2\x81\x87 ";
    pf_tokenizer *sp;
    size_t i, text_len = 0;
    float min_score = 3.40282347e38f; /* FLT_MAX, as SentencePiece starts */
    const char *refused = NULL;
    pf_result r;
    *out = NULL;
    if (m->model_type != PF__SPM_UNIGRAM && m->model_type != PF__SPM_BPE)
        refused = "trainer_spec.model_type other than UNIGRAM and BPE";
    else if (m->byte_fallback) refused = "trainer_spec.byte_fallback";
    else if (m->treat_whitespace_as_suffix) refused = "trainer_spec.treat_whitespace_as_suffix";
    else if (m->denormalizer) refused = "a denormalizer_spec with rules";
    for (i = 0; !refused && i < m->num_pieces; i++) {
        int type = m->pieces[i].type;
        if (type == PF__SPM_USER_DEFINED) refused = "USER_DEFINED pieces";
        else if (type == PF__SPM_BYTE) refused = "BYTE pieces";
        else if (type == PF__SPM_UNUSED && m->model_type == PF__SPM_BPE) refused = "UNUSED pieces in a BPE model";
    }
    if (refused) {
        snprintf(err, err_size, "%s: this SentencePiece model has %s, which is not supported", path, refused);
        return PF_ERROR_UNSUPPORTED;
    }
    if (!(sp = (pf_tokenizer *)calloc(1, sizeof *sp))) goto oom;
    *out = sp;
    sp->unk_id = sp->bos_id = sp->eos_id = -1;
    sp->model = m->model_type == PF__SPM_BPE ? PF__MODEL_BPE : PF__MODEL_UNIGRAM;
    sp->spm_flags = m->flags;
    for (i = 0; i < m->num_pieces; i++) {
        const pf__spm_piece *p = &m->pieces[i];
        if (!p->len || !p->type || p->len > UINT32_MAX - 1) {
            snprintf(err, err_size, "%s: SentencePiece piece %zu is %s", path, i, p->len ? "of an unknown type" : "empty");
            return PF_ERROR_FORMAT;
        }
        text_len += p->len + 1;
    }
    if ((r = pf__tok_vocab_alloc(sp, m->num_pieces, text_len, path, err, err_size)) != PF_OK) return r;
    sp->pieces = (pf__tok_piece *)malloc((m->num_pieces ? m->num_pieces : 1) * sizeof *sp->pieces);
    sp->spm_types = (unsigned char *)malloc(m->num_pieces ? m->num_pieces : 1);
    if (!sp->pieces || !sp->spm_types) goto oom;
    for (i = 0; i < m->num_pieces; i++) {
        const pf__spm_piece *p = &m->pieces[i];
        if (pf__tok_vocab_find(sp, (const char *)p->s, p->len) >= 0) {
            snprintf(err, err_size, "%s: SentencePiece piece \"%.*s\" is there twice", path, pf__tok_show_len(p->len),
                     (const char *)p->s);
            return PF_ERROR_FORMAT;
        }
        if (p->type == PF__SPM_UNKNOWN) {
            if (sp->unk_id >= 0) {
                snprintf(err, err_size, "%s: the SentencePiece model has two UNKNOWN pieces", path);
                return PF_ERROR_FORMAT;
            }
            sp->unk_id = (int32_t)i;
        }
        if (p->type == PF__SPM_NORMAL && p->score < min_score) min_score = p->score;
        sp->pieces[i].offset = pf__tok_vocab_insert(sp, (const char *)p->s, p->len, (int32_t)i);
        sp->pieces[i].len = (uint32_t)p->len;
        sp->pieces[i].score = p->score;
        sp->spm_types[i] = (unsigned char)p->type;
    }
    sp->num_pieces = m->num_pieces;
    if (sp->unk_id < 0) {
        snprintf(err, err_size, "%s: the SentencePiece model has no UNKNOWN piece", path);
        return PF_ERROR_FORMAT;
    }
    sp->unk_score = (double)(min_score - 10.0f); /* SentencePiece's kUnkPenalty, in float as it computes */
    sp->spm_unk_surface = pf__tok_dup(m->has_unk_surface ? (const char *)m->unk_surface : default_unk_surface,
                                      m->has_unk_surface ? m->unk_surface_len : sizeof default_unk_surface - 1);
    if (!sp->spm_unk_surface) goto oom;
    sp->spm_unk_surface_len = m->has_unk_surface ? m->unk_surface_len : sizeof default_unk_surface - 1;
    if (sp->model == PF__MODEL_BPE && (r = pf__spm_set_merges(sp, m, path, err, err_size)) != PF_OK) return r;
    return pf__tok_finish(sp, path, err, err_size);
oom:
    snprintf(err, err_size, "%s: out of memory", path);
    return PF_ERROR_OUT_OF_MEMORY;
}

/* M2M100Tokenizer's language codes (transformers' FAIRSEQ_LANGUAGE_CODES), each the token __xx__
   with the id len(vocab.json) + its index. */
static const char *const pf__m2m100_langs[] = {
    "af", "am", "ar", "ast", "az", "ba", "be", "bg", "bn", "br", "bs", "ca", "ceb", "cs", "cy", "da", "de", "el", "en",
    "es", "et", "fa", "ff", "fi", "fr", "fy", "ga", "gd", "gl", "gu", "ha", "he", "hi", "hr", "ht", "hu", "hy", "id",
    "ig", "ilo", "is", "it", "ja", "jv", "ka", "kk", "km", "kn", "ko", "lb", "lg", "ln", "lo", "lt", "lv", "mg", "mk",
    "ml", "mn", "mr", "ms", "my", "ne", "nl", "no", "ns", "oc", "or", "pa", "pl", "ps", "pt", "ro", "ru", "sd", "si",
    "sk", "sl", "so", "sq", "sr", "ss", "su", "sv", "sw", "ta", "th", "tl", "tn", "tr", "uk", "ur", "uz", "vi", "wo",
    "xh", "yi", "yo", "zh", "zu"};
static const char *const pf__wmt21_langs[] = {"en", "ha", "is", "ja", "cs", "ru", "zh", "de"};

/* A special token of tokenizer_config.json ("key": a string or {"content": ...}; def when absent)
   made a special added token with its vocab.json id, unless it is one already; the token's id, or
   -1 when the vocab lacks it. */
static int32_t pf__spm_named_special(pf_tokenizer *t, const pf__json *config, const char *key, const char *def,
                                     int *oom) {
    const pf__json *v = pf__json_get(config, key);
    const char *s = def;
    size_t len = strlen(def), i;
    int32_t id;
    if (v && v->type == PF__JSON_OBJECT) v = pf__json_get(v, "content");
    if (v && v->type == PF__JSON_STRING) s = v->string, len = v->string_len;
    for (i = 0; i < t->num_added; i++)
        if (t->added[i].len == len && !memcmp(t->added[i].content, s, len)) return t->added[i].id;
    if ((id = len ? pf__tok_vocab_find(t, s, len) : -1) >= 0 && pf__tok_add_token(t, s, len, id, 1, 0, 0, 0, 0)) *oom = 1;
    return id;
}

/* SentencePiece files mapped through vocab.json, as transformers' slow MarianTokenizer (m2m 0:
   source.spm for the text and for decode, as transformers 5 decodes with a shared vocab; a leading
   ">>xx<<" its own token) and M2M100Tokenizer (m2m 1: sentencepiece.bpe.model; "__src__ $A </s>";
   its language codes addressable, special when the config lists them) read them. The pieces go
   through vocab.json (unknown ones to unk), the model runs on the whole text between added tokens
   as SentencePiece does, and decode is their convert_tokens_to_string. */
static pf_result pf__tok_from_spm_files(pf_tokenizer *t, const char *dir, const pf__json *config, int m2m,
                                        const char *config_path, char *err, size_t err_size) {
    char path[4096];
    pf__json *vocab = NULL;
    char *data = NULL;
    size_t len = 0, i, num_langs = 0;
    const char *const *langs = NULL;
    const char *src_lang = "en";
    pf__spm_model m;
    pf__tok_post_item single[3], pair[4];
    pf__tok_norm *nm;
    const pf__json *list, *e;
    int32_t eos, next_id;
    int oom = 0, bad = 0, cleanup = pf__tok_json_bool(config, "clean_up_tokenization_spaces", 0);
    pf_result r;
    memset(&m, 0, sizeof m);
    if (cleanup < 0) {
        snprintf(err, err_size, "%s: clean_up_tokenization_spaces is not a boolean", config_path);
        return PF_ERROR_FORMAT;
    }
    if (!m2m) {
        int separate = pf__tok_json_bool(config, "separate_vocabs", 0);
        if (separate) {
            snprintf(err, err_size, separate < 0 ? "%s: separate_vocabs is not a boolean" : "%s: MarianTokenizer with "
                     "separate_vocabs (a target vocabulary of its own) is not supported", config_path);
            return separate < 0 ? PF_ERROR_FORMAT : PF_ERROR_UNSUPPORTED;
        }
    } else {
        const pf__json *codes = pf__tok_json_str(config, "language_codes", &bad), *src = pf__tok_json_str(config, "src_lang", &bad);
        langs = pf__m2m100_langs;
        num_langs = PF__TOK_LEN(pf__m2m100_langs);
        if (codes && !strcmp(codes->string, "wmt21")) {
            langs = pf__wmt21_langs;
            num_langs = PF__TOK_LEN(pf__wmt21_langs);
        } else if (bad || (codes && strcmp(codes->string, "m2m100"))) {
            snprintf(err, err_size, "%s: M2M100Tokenizer's language_codes must be \"m2m100\" or \"wmt21\"", config_path);
            return bad ? PF_ERROR_FORMAT : PF_ERROR_UNSUPPORTED;
        }
        if (src) src_lang = src->string;
    }
    if (pf__path_join(path, sizeof path, dir, "vocab.json")) goto too_long;
    if ((r = pf__tok_read_json(path, 0, &vocab, err, err_size)) != PF_OK ||
        (r = pf__tok_set_vocab(t, vocab, NULL, path, err, err_size)) != PF_OK)
        goto done;
    /* the added tokens: the config's, the language codes, the named special tokens, the listed ones */
    if ((r = pf__tok_read_added_decoder(t, config, config_path, err, err_size)) != PF_OK) goto done;
    for (i = 0; i < num_langs; i++) {
        char name[16];
        size_t k, n = (size_t)snprintf(name, sizeof name, "__%s__", langs[i]);
        for (k = 0; k < t->num_added && (t->added[k].len != n || memcmp(t->added[k].content, name, n)); k++) {}
        if (k < t->num_added) continue;
        if (pf__tok_add_token(t, name, n, (int32_t)(t->vocab_count + i), 0, 0, 0, 0, 0)) goto oom;
        t->added[t->num_added - 1].unmatched = 1;
    }
    pf__spm_named_special(t, config, "eos_token", "</s>", &oom);
    pf__spm_named_special(t, config, "pad_token", "<pad>", &oom);
    if (m2m) {
        pf__spm_named_special(t, config, "bos_token", "<s>", &oom);
        pf__spm_named_special(t, config, "sep_token", "</s>", &oom);
    }
    if ((t->unk_id = pf__spm_named_special(t, config, "unk_token", "<unk>", &oom)) < 0 && !oom) {
        snprintf(err, err_size, "%s: the unk_token is not in vocab.json", dir);
        r = PF_ERROR_FORMAT;
        goto done;
    }
    if (oom) goto oom;
    list = pf__json_get(config, "additional_special_tokens");
    if (!list || list->type == PF__JSON_NULL) list = pf__json_get(config, "extra_special_tokens");
    if (list && list->type != PF__JSON_ARRAY && list->type != PF__JSON_NULL) {
        snprintf(err, err_size, "%s: additional_special_tokens is not a list", config_path);
        r = PF_ERROR_FORMAT;
        goto done;
    }
    next_id = (int32_t)(t->vocab_count + num_langs);
    for (i = 0; i < t->num_added; i++)
        if (t->added[i].id >= next_id) next_id = t->added[i].id + 1;
    for (e = list && list->type == PF__JSON_ARRAY ? list->first : NULL; e; e = e->next) {
        const pf__json *c = e->type == PF__JSON_OBJECT ? pf__json_get(e, "content") : e;
        size_t k;
        int32_t id;
        if (!c || c->type != PF__JSON_STRING || !c->string_len) {
            snprintf(err, err_size, "%s: additional_special_tokens holds a non-string", config_path);
            r = PF_ERROR_FORMAT;
            goto done;
        }
        for (k = 0; k < t->num_added && (t->added[k].len != c->string_len || memcmp(t->added[k].content, c->string, c->string_len)); k++) {}
        if (k < t->num_added) {
            t->added[k].special = 1;
            t->added[k].unmatched = 0;
            continue;
        }
        if ((id = pf__tok_vocab_find(t, c->string, c->string_len)) < 0) id = next_id++;
        if (pf__tok_add_token(t, c->string, c->string_len, id, 1, 0, 0, 0, 0)) goto oom;
    }

    /* the SentencePiece model, its pieces' ids here */
    if (pf__path_join(path, sizeof path, dir, m2m ? "sentencepiece.bpe.model" : "source.spm")) goto too_long;
    if ((r = pf__read_file(path, PF__MAX_TEXT_FILE, &data, &len, err, err_size)) != PF_OK ||
        (r = pf__spm_parse((const unsigned char *)data, len, &m, path, err, err_size)) != PF_OK ||
        (r = pf__spm_build(&m, &t->spm, path, err, err_size)) != PF_OK)
        goto done;
    if (!(t->spm_ids = (int32_t *)malloc((m.num_pieces ? m.num_pieces : 1) * sizeof *t->spm_ids))) goto oom;
    for (i = 0; i < m.num_pieces; i++) t->spm_ids[i] = pf__tok_spm_lookup(t, m.pieces[i].s, m.pieces[i].len);
    if (!(nm = pf__tok_add_norm(t, PF__NORM_SPM))) goto oom;
    nm->spm = m.flags;
    if (m.charsmap_len) {
        size_t trie_bytes = m.charsmap_len >= 4 ? (size_t)m.charsmap[0] | (size_t)m.charsmap[1] << 8 |
                                                  (size_t)m.charsmap[2] << 16 | (size_t)m.charsmap[3] << 24 : 1;
        if (trie_bytes % 4) { /* SentencePiece reads the replacements from its end, HF from the last whole unit */
            snprintf(err, err_size, "%s: normalizer_spec.precompiled_charsmap is not a SentencePiece charsmap", path);
            r = PF_ERROR_FORMAT;
            goto done;
        }
        if ((r = pf__tok_set_charsmap(nm, m.charsmap, m.charsmap_len, "normalizer_spec.precompiled_charsmap", path, err,
                                      err_size)) != PF_OK)
            goto done;
    }

    /* "$A </s>" (M2M100: the source language first), a pair "$A $B </s>"; decode as the class does */
    if ((eos = pf__spm_named_special(t, config, "eos_token", "</s>", &oom)) < 0) {
        snprintf(err, err_size, "%s: the eos_token is not in vocab.json", dir);
        r = oom ? PF_ERROR_OUT_OF_MEMORY : PF_ERROR_FORMAT;
        goto done;
    }
    {
        size_t n = 0, k;
        if (m2m) {
            char name[64];
            int32_t lang = -1;
            snprintf(name, sizeof name, "__%.40s__", src_lang);
            for (k = 0; k < t->num_added; k++)
                if (!strcmp(t->added[k].content, name)) lang = t->added[k].id;
            for (k = 0; k < num_langs && strcmp(langs[k], src_lang); k++) {}
            if (k == num_langs || lang < 0) {
                snprintf(err, err_size, "%s: src_lang \"%.40s\" is not one of M2M100Tokenizer's language codes", config_path,
                         src_lang);
                r = PF_ERROR_FORMAT;
                goto done;
            }
            single[n].id = pair[n].id = lang;
            single[n].type_id = pair[n].type_id = 0;
            n++;
        }
        single[n].id = pair[n].id = PF__TOK_SEQ_A;
        pair[n + 1].id = PF__TOK_SEQ_B;
        single[n + 1].id = pair[n + 2].id = eos;
        single[n].type_id = single[n + 1].type_id = pair[n].type_id = pair[n + 1].type_id = pair[n + 2].type_id = 0;
        if ((r = pf__tok_set_post(t, 0, single, n + 2, path, err, err_size)) != PF_OK ||
            (r = pf__tok_set_post(t, 1, pair, n + 3, path, err, err_size)) != PF_OK)
            goto done;
        t->has_post = 1;
    }
    t->model = t->spm->model;
    t->spm_marian = !m2m;
    t->spm_cleanup = cleanup;
    t->has_decoder = 1;
    if (!pf__tok_add_dec(t, PF__DEC_SPM)) goto oom;
    r = pf__tok_finish(t, path, err, err_size);
    goto done;
too_long:
    snprintf(err, err_size, "%.200s: the path is too long", dir);
    r = PF_ERROR_INVALID_ARGUMENT;
    goto done;
oom:
    snprintf(err, err_size, "%s: out of memory", dir);
    r = PF_ERROR_OUT_OF_MEMORY;
done:
    pf__json_free(vocab);
    free(m.pieces);
    free(data);
    return r;
}

/* Tokenizers transformers has in Python only (no tokenizer.json) that are not ByT5's: each
   tokenizer_class and what it would need. */
static const struct {
    const char *name, *needs;
} pf__tok_slow_only[] = {
    {"BlenderbotSmallTokenizer", "its own lowercasing BPE with \"@@\" continuations in vocab.json + merges.txt"},
    {"FSMTTokenizer", "Moses tokenization and BPE in vocab-src.json / vocab-tgt.json + merges.txt"},
    {"XLMTokenizer", "Moses tokenization and BPE in vocab.json + merges.txt"},
    {"CTRLTokenizer", "its own BPE with \"@@\" continuations in vocab.json + merges.txt"},
    {"OpenAIGPTTokenizer", "BERT-style splitting and BPE with </w> in vocab.json + merges.txt"},
};

/* The index of tokenizer_class in pf__tok_slow_only, or its count when it is not there. */
static size_t pf__tok_slow_index(const char *tokenizer_class) {
    size_t i, n = sizeof pf__tok_slow_only / sizeof pf__tok_slow_only[0];
    for (i = 0; i < n; i++)
        if (!strcmp(tokenizer_class, pf__tok_slow_only[i].name)) break;
    return i;
}

static char *pf__tok_copy_text(const char *s) {
    char *p = (char *)malloc(strlen(s) + 1);
    if (p) memcpy(p, s, strlen(s) + 1);
    return p;
}

/* A copy of a tokenizer_config.json special token's text (a string, or an object with "content");
   NULL when absent. Returns -1 when out of memory. */
static int pf__tok_config_token_text(const pf__json *config, const char *key, char **out) {
    const pf__json *v = pf__json_get(config, key);
    *out = NULL;
    if (v && v->type == PF__JSON_OBJECT) v = pf__json_get(v, "content");
    if (!v || v->type != PF__JSON_STRING) return 0;
    *out = (char *)malloc(v->string_len + 1);
    if (!*out) return -1;
    memcpy(*out, v->string, v->string_len + 1);
    return 0;
}

/* The chat template as transformers picks it: chat_template.jinja beside the config wins; else
   the config's chat_template, a string or a list of {name, template} from which "default" is
   taken (a list without one leaves a note for pf_apply_chat_template to report). */
static pf_result pf__tok_read_chat_template(pf_tokenizer *t, const char *dir, const pf__json *config, char *err,
                                            size_t err_size) {
    char path[4096];
    const pf__json *v = config ? pf__json_get(config, "chat_template") : NULL;
    if (pf__path_join(path, sizeof path, dir, "chat_template.jinja")) {
        snprintf(err, err_size, "%.200s: the path is too long", dir);
        return PF_ERROR_INVALID_ARGUMENT;
    }
    if (pf__file_exists(path)) {
        size_t len;
        return pf__read_file(path, PF__MAX_TEXT_FILE, &t->chat_template, &len, err, err_size);
    }
    if (v && v->type == PF__JSON_ARRAY) {
        const pf__json *e, *chosen = NULL;
        for (e = v->first; e; e = e->next) {
            const pf__json *name = pf__json_get(e, "name"), *tmpl = pf__json_get(e, "template");
            if (e->type != PF__JSON_OBJECT || !name || name->type != PF__JSON_STRING || !tmpl || tmpl->type != PF__JSON_STRING) {
                snprintf(err, err_size, "%.200s/tokenizer_config.json: chat_template: a list entry is not {\"name\": ..., \"template\": ...}", dir);
                return PF_ERROR_FORMAT;
            }
            if (!strcmp(name->string, "default")) chosen = tmpl;
        }
        if (!chosen) {
            const char note[] = "the model has several chat templates and none is named \"default\": give one in pf_chat_options";
            t->chat_template_note = (char *)malloc(sizeof note);
            if (t->chat_template_note) memcpy(t->chat_template_note, note, sizeof note);
        }
        v = chosen;
    }
    if (v && v->type != PF__JSON_STRING && v->type != PF__JSON_NULL) {
        snprintf(err, err_size, "%.200s/tokenizer_config.json: chat_template is neither a string nor a list of named templates", dir);
        return PF_ERROR_FORMAT;
    }
    if (v && v->type == PF__JSON_STRING) {
        t->chat_template = (char *)malloc(v->string_len + 1);
        if (!t->chat_template) {
            snprintf(err, err_size, "%.200s: out of memory", dir);
            return PF_ERROR_OUT_OF_MEMORY;
        }
        memcpy(t->chat_template, v->string, v->string_len + 1);
    }
    return PF_OK;
}

/* bos / eos from dir's tokenizer_config.json, when there is one; from vocab.json + merges.txt,
   <|endoftext|> where the config names none (transformers' GPT-2 tokenizer's defaults). Also the
   tokens' text and the chat template. */
static pf_result pf__tok_read_specials(pf_tokenizer *t, const char *dir, int gpt2_defaults, char *err,
                                       size_t err_size) {
    char path[4096];
    pf__json *config = NULL;
    pf_result r;
    t->bos_id = t->eos_id = -1;
    if (gpt2_defaults) t->bos_id = t->eos_id = pf__tok_vocab_find(t, "<|endoftext|>", 13);
    if (pf__path_join(path, sizeof path, dir, "tokenizer_config.json")) {
        snprintf(err, err_size, "%.200s: the path is too long", dir);
        return PF_ERROR_INVALID_ARGUMENT;
    }
    if ((r = pf__tok_read_json(path, 1, &config, err, err_size)) != PF_OK) return r;
    if (config) {
        if (!gpt2_defaults || pf__json_get(config, "bos_token")) t->bos_id = pf__tok_config_token(t, config, "bos_token");
        if (!gpt2_defaults || pf__json_get(config, "eos_token")) t->eos_id = pf__tok_config_token(t, config, "eos_token");
        if (pf__tok_config_token_text(config, "bos_token", &t->bos_token) ||
            pf__tok_config_token_text(config, "eos_token", &t->eos_token)) {
            snprintf(err, err_size, "%s: out of memory", path);
            pf__json_free(config);
            return PF_ERROR_OUT_OF_MEMORY;
        }
    }
    if (gpt2_defaults && !t->bos_token && t->bos_id >= 0 && !(t->bos_token = pf__tok_copy_text("<|endoftext|>"))) r = PF_ERROR_OUT_OF_MEMORY;
    if (gpt2_defaults && !t->eos_token && t->eos_id >= 0 && !(t->eos_token = pf__tok_copy_text("<|endoftext|>"))) r = PF_ERROR_OUT_OF_MEMORY;
    if (r != PF_OK) snprintf(err, err_size, "%s: out of memory", path);
    else r = pf__tok_read_chat_template(t, dir, config, err, err_size);
    pf__json_free(config);
    return r;
}

/* Loads from dir: tokenizer.json if present, else vocab.json + merges.txt. Returns PF_OK, or an
   error with a message naming the file (and what is wrong) in err. */
static pf_result pf__tokenizer_load_dir(const char *dir, pf_tokenizer **out, char *err, size_t err_size) {
    char path[4096], local_err[8];
    pf_tokenizer *t;
    pf_result r;
    int from_files = 0;
    if (!err || !err_size) { /* messages are then cut short, never written out of bounds */
        err = local_err;
        err_size = sizeof local_err;
    }
    err[0] = 0;
    if (out) *out = NULL;
    if (!dir || !out) {
        snprintf(err, err_size, "pf_tokenizer_load: NULL argument");
        return PF_ERROR_INVALID_ARGUMENT;
    }
    t = (pf_tokenizer *)calloc(1, sizeof *t);
    if (!t) {
        snprintf(err, err_size, "%s: out of memory", dir);
        return PF_ERROR_OUT_OF_MEMORY;
    }
    t->unk_id = t->bos_id = t->eos_id = -1;
    if (pf__path_join(path, sizeof path, dir, "tokenizer.json")) {
        snprintf(err, err_size, "%.200s: the path is too long", dir);
        r = PF_ERROR_INVALID_ARGUMENT;
    } else if (pf__file_exists(path)) {
        pf__json *root;
        r = pf__tok_read_json(path, 0, &root, err, err_size);
        if (r == PF_OK) r = pf__tok_from_json(t, root, path, err, err_size);
        pf__json_free(root);
    } else {
        char vocab[4096], merges[4096], config_path[4096];
        pf__json *config = NULL;
        const pf__json *cls = NULL;
        size_t i, n_slow = sizeof pf__tok_slow_only / sizeof pf__tok_slow_only[0];
        if (pf__path_join(vocab, sizeof vocab, dir, "vocab.json") ||
            pf__path_join(merges, sizeof merges, dir, "merges.txt") ||
            pf__path_join(config_path, sizeof config_path, dir, "tokenizer_config.json")) {
            snprintf(err, err_size, "%.200s: the path is too long", dir);
            r = PF_ERROR_INVALID_ARGUMENT;
        } else if ((r = pf__tok_read_json(config_path, 1, &config, err, err_size)) != PF_OK) {
            /* the message names the config */
        } else if ((cls = pf__json_get(config, "tokenizer_class")) != NULL && cls->type == PF__JSON_STRING &&
                   !strcmp(cls->string, "ByT5Tokenizer")) {
            r = pf__tok_from_byt5(t, config, config_path, err, err_size);
        } else if (cls && cls->type == PF__JSON_STRING &&
                   (!strcmp(cls->string, "MarianTokenizer") || !strcmp(cls->string, "M2M100Tokenizer"))) {
            r = pf__tok_from_spm_files(t, dir, config, cls->string[0] == 'M' && cls->string[1] == '2', config_path, err,
                                       err_size);
        } else if (cls && cls->type == PF__JSON_STRING &&
                   (i = pf__tok_slow_index(cls->string)) < n_slow) {
            snprintf(err, err_size, "%s: %s has no tokenizer.json (transformers has no fast version of it) and is "
                     "not supported: it needs %s. Supported without tokenizer.json: vocab.json + merges.txt of a "
                     "byte-level BPE (GPT-2, RoBERTa, BART, ...) and ByT5Tokenizer", dir, pf__tok_slow_only[i].name,
                     pf__tok_slow_only[i].needs);
            r = PF_ERROR_UNSUPPORTED;
        } else if (pf__file_exists(vocab) && pf__file_exists(merges)) {
            from_files = 1;
            r = pf__tok_from_files(t, dir, err, err_size);
        } else {
            snprintf(err, err_size, "%s: no tokenizer.json, nor vocab.json and merges.txt", dir);
            r = PF_ERROR_IO;
        }
        pf__json_free(config);
    }
    if (r == PF_OK) r = pf__tok_read_specials(t, dir, from_files, err, err_size);
    if (r != PF_OK) {
        pf_tokenizer_free(t);
        return r;
    }
    *out = t;
    return PF_OK;
}

pf_result pf_tokenizer_load(const char *dir, pf_tokenizer **tokenizer, char *error, size_t error_size) {
    return pf__tokenizer_load_dir(dir, tokenizer, error, error_size);
}

/* =============================================================================================== */
/* chat templates: the subset of Jinja that instruct checkpoints' templates use                   */
/* =============================================================================================== */

/* tokenizer_config.json's chat_template is a Jinja template that transformers renders with
   jinja2's ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, loopcontrols), the
   variables messages, add_generation_prompt, tools / documents (None), the tokenizer's special
   tokens, and the globals raise_exception, strftime_now and namespace. This section lexes and
   parses such a template into a tree, refusing what it does not know by name, then renders it.
   Every allocation of a render lives in one arena freed at the end, and failures longjmp back to
   the entry point with their message: a hostile template cannot leak, and is bounded in nesting,
   steps, memory and output. */

#include <setjmp.h>
#include <time.h>

#define PF__CHAT_MAX_DEPTH 64                 /* nesting of expressions and blocks */
#define PF__CHAT_MAX_VALUE_DEPTH 200          /* nesting of lists and dicts printed or compared */
#define PF__CHAT_MAX_STEPS 20000000L          /* expressions evaluated and statements run */
#define PF__CHAT_MAX_MEMORY ((size_t)256 << 20) /* the arena: values, tree and tokens */
#define PF__CHAT_MAX_OUTPUT ((size_t)64 << 20)

typedef union pf__chat_align { long double ld; void *p; int64_t i; double d; } pf__chat_align;

typedef struct pf__arena_block {
    struct pf__arena_block *next;
    size_t used, cap;
    pf__chat_align data[]; /* aligned for any value */
} pf__arena_block;

typedef enum pf__jtype {
    PF__JV_UNDEFINED = 0, PF__JV_NONE, PF__JV_BOOL, PF__JV_INT, PF__JV_FLOAT, PF__JV_STRING, PF__JV_LIST,
    PF__JV_DICT, PF__JV_FUNC
} pf__jtype;

typedef enum pf__jfunc { PF__FN_RAISE = 1, PF__FN_STRFTIME, PF__FN_NAMESPACE, PF__FN_DICT, PF__FN_RANGE } pf__jfunc;

struct pf__jlist;
struct pf__jdict;

/* A value. Strings are UTF-8 and never change; an UNDEFINED value keeps the name that was
   looked up, for messages. */
typedef struct pf__jv {
    pf__jtype type;
    union {
        int b;
        int64_t i;
        double f;
        struct { const char *s; size_t n; } str;
        struct pf__jlist *list;
        struct pf__jdict *dict;
        pf__jfunc func;
    } u;
} pf__jv;

typedef struct pf__jlist {
    size_t n;
    int tuple; /* printed (a, b), as items() gives pairs */
    pf__jv *items;
} pf__jlist;

typedef struct pf__jdict {
    size_t n, cap;
    int namespace_; /* the one mutable kind: {% set ns.key = ... %} */
    pf__jv *keys, *values;
} pf__jdict;

typedef enum pf__jtok {
    PF__JT_EOF = 0, PF__JT_TEXT, PF__JT_VAR_BEGIN, PF__JT_VAR_END, PF__JT_BLOCK_BEGIN, PF__JT_BLOCK_END,
    PF__JT_NAME, PF__JT_STRING, PF__JT_INT, PF__JT_FLOAT, PF__JT_OP
} pf__jtok;

typedef struct pf__jtoken {
    pf__jtok kind;
    int line;
    const char *s; /* TEXT, NAME, STRING (decoded), OP */
    size_t n;
    int64_t i;
    double f;
} pf__jtoken;

typedef enum pf__jnode_kind {
    /* statements */
    PF__JN_TEXT, PF__JN_OUTPUT, PF__JN_IF, PF__JN_FOR, PF__JN_SET, PF__JN_SET_BLOCK, PF__JN_BREAK, PF__JN_CONTINUE,
    /* expressions */
    PF__JN_CONST, PF__JN_NAME, PF__JN_LIST, PF__JN_TUPLE, PF__JN_DICT, PF__JN_ATTR, PF__JN_ITEM, PF__JN_SLICE,
    PF__JN_CALL, PF__JN_KWARG, PF__JN_FILTER, PF__JN_TEST, PF__JN_NEG, PF__JN_POS, PF__JN_NOT, PF__JN_AND, PF__JN_OR,
    PF__JN_BINARY, PF__JN_COND
} pf__jnode_kind;

/* A node of the tree. Children in a, b, c, d, e (what each kind keeps there is written where it
   is parsed); lists of statements, arguments and names chain through next. */
typedef struct pf__jnode {
    pf__jnode_kind kind;
    int line;
    int op;      /* BINARY: the operator's code; TEST: 1 when negated */
    const char *s; /* TEXT, NAME, ATTR, KWARG, FILTER, TEST, SET target: the text */
    size_t n;
    pf__jv value; /* CONST */
    struct pf__jnode *a, *b, *c, *d, *e, *next;
} pf__jnode;

typedef struct pf__jvar {
    const char *name;
    size_t n;
    pf__jv value;
} pf__jvar;

/* A string built piecewise in the arena. */
typedef struct pf__chat_buf {
    char *s;
    size_t n, cap;
} pf__chat_buf;

typedef struct pf__chat {
    jmp_buf fail;
    char *error;
    size_t error_size;
    pf_result code;
    pf__arena_block *arena;
    size_t arena_total;
    /* lexing and parsing */
    const char *src;
    size_t src_len;
    pf__jtoken *tokens;
    size_t num_tokens, cap_tokens, pos;
    int depth;
    /* rendering */
    pf__jvar *vars;
    size_t num_vars, cap_vars, scope_base;
    long steps;
    char *out;
    size_t out_len, out_cap;
    pf__chat_buf *capture; /* {% set x %}...{% endset %}: output goes here (the arena) */
    const char *date; /* strftime_now's "YYYY-MM-DD[ HH:MM[:SS]]"; NULL: now */
} pf__chat;

#if defined(__GNUC__)
__attribute__((noreturn, format(printf, 3, 4)))
#endif
static void pf__chat_fail(pf__chat *c, pf_result code, const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    if (c->error && c->error_size) vsnprintf(c->error, c->error_size, fmt, args);
    va_end(args);
    c->code = code;
    longjmp(c->fail, 1);
}

static void *pf__chat_alloc(pf__chat *c, size_t size) {
    size_t need = (size + sizeof(pf__chat_align) - 1) / sizeof(pf__chat_align) * sizeof(pf__chat_align);
    pf__arena_block *b = c->arena;
    if (size > PF__CHAT_MAX_MEMORY) pf__chat_fail(c, PF_ERROR_OUT_OF_MEMORY, "chat template: needs more than %zu MiB", PF__CHAT_MAX_MEMORY >> 20);
    if (!b || b->cap - b->used < need) {
        size_t cap = need > ((size_t)64 << 10) ? need : ((size_t)64 << 10);
        if (c->arena_total + cap > PF__CHAT_MAX_MEMORY)
            pf__chat_fail(c, PF_ERROR_OUT_OF_MEMORY, "chat template: needs more than %zu MiB", PF__CHAT_MAX_MEMORY >> 20);
        b = (pf__arena_block *)malloc(sizeof *b + cap);
        if (!b) pf__chat_fail(c, PF_ERROR_OUT_OF_MEMORY, "chat template: out of memory");
        b->next = c->arena;
        b->used = 0;
        b->cap = cap;
        c->arena = b;
        c->arena_total += cap;
    }
    void *p = (char *)b->data + b->used;
    b->used += need;
    return p;
}

/* count * size bytes, refusing products that overflow. */
static void *pf__chat_array(pf__chat *c, size_t count, size_t size) {
    if (size && count > PF__CHAT_MAX_MEMORY / size)
        pf__chat_fail(c, PF_ERROR_OUT_OF_MEMORY, "chat template: needs more than %zu MiB", PF__CHAT_MAX_MEMORY >> 20);
    return pf__chat_alloc(c, count && size ? count * size : 1);
}

/* ---- values ---- */

static pf__jv pf__jv_none(void) { pf__jv v; memset(&v, 0, sizeof v); v.type = PF__JV_NONE; return v; }
static pf__jv pf__jv_undefined(const char *name, size_t n) {
    pf__jv v;
    v.type = PF__JV_UNDEFINED;
    v.u.str.s = name;
    v.u.str.n = n;
    return v;
}
static pf__jv pf__jv_bool(int b) { pf__jv v; memset(&v, 0, sizeof v); v.type = PF__JV_BOOL; v.u.b = !!b; return v; }
static pf__jv pf__jv_int(int64_t i) { pf__jv v; v.type = PF__JV_INT; v.u.i = i; return v; }
static pf__jv pf__jv_float(double f) { pf__jv v; v.type = PF__JV_FLOAT; v.u.f = f; return v; }
static pf__jv pf__jv_str(const char *s, size_t n) { pf__jv v; v.type = PF__JV_STRING; v.u.str.s = s; v.u.str.n = n; return v; }
static pf__jv pf__jv_cstr(const char *s) { return pf__jv_str(s, strlen(s)); }

static pf__jv pf__jv_new_list(pf__chat *c, size_t n, int tuple) {
    pf__jv v;
    v.type = PF__JV_LIST;
    v.u.list = (pf__jlist *)pf__chat_alloc(c, sizeof *v.u.list);
    v.u.list->n = n;
    v.u.list->tuple = tuple;
    v.u.list->items = (pf__jv *)pf__chat_array(c, n, sizeof(pf__jv));
    return v;
}

static pf__jv pf__jv_new_dict(pf__chat *c, int namespace_) {
    pf__jv v;
    v.type = PF__JV_DICT;
    v.u.dict = (pf__jdict *)pf__chat_alloc(c, sizeof *v.u.dict);
    memset(v.u.dict, 0, sizeof *v.u.dict);
    v.u.dict->namespace_ = namespace_;
    return v;
}

/* The name jinja2's messages give a value's type. */
static const char *pf__jv_type_name(pf__jv v) {
    switch (v.type) {
    case PF__JV_UNDEFINED: return "undefined";
    case PF__JV_NONE: return "NoneType";
    case PF__JV_BOOL: return "bool";
    case PF__JV_INT: return "int";
    case PF__JV_FLOAT: return "float";
    case PF__JV_STRING: return "str";
    case PF__JV_LIST: return v.u.list->tuple ? "tuple" : "list";
    case PF__JV_DICT: return v.u.dict->namespace_ ? "namespace" : "dict";
    case PF__JV_FUNC: return "function";
    }
    return "?";
}

static int pf__jv_equal(pf__chat *c, pf__jv a, pf__jv b, int depth);

/* The value of key in a dict, or NULL. */
static pf__jv *pf__jdict_find(pf__chat *c, pf__jdict *d, pf__jv key) {
    for (size_t i = 0; i < d->n; i++)
        if (pf__jv_equal(c, d->keys[i], key, 0)) return &d->values[i];
    return NULL;
}

static void pf__jdict_set(pf__chat *c, pf__jdict *d, pf__jv key, pf__jv value) {
    pf__jv *slot = pf__jdict_find(c, d, key);
    if (slot) {
        *slot = value;
        return;
    }
    if (d->n == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 8;
        pf__jv *keys = (pf__jv *)pf__chat_array(c, cap, sizeof(pf__jv));
        pf__jv *values = (pf__jv *)pf__chat_array(c, cap, sizeof(pf__jv));
        if (d->n) {
            memcpy(keys, d->keys, d->n * sizeof *keys);
            memcpy(values, d->values, d->n * sizeof *values);
        }
        d->keys = keys;
        d->values = values;
        d->cap = cap;
    }
    d->keys[d->n] = key;
    d->values[d->n++] = value;
}

static void pf__jdict_set_cstr(pf__chat *c, pf__jdict *d, const char *key, pf__jv value) {
    pf__jdict_set(c, d, pf__jv_cstr(key), value);
}

/* Python's str.isspace for one code point. */
static int pf__chat_is_space(uint32_t cp) {
    return (cp >= 9 && cp <= 13) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
           cp == 0x3000;
}

/* The code point at s[i] (an invalid byte counts as one), its length in *len. */
static uint32_t pf__chat_cp(const char *s, size_t n, size_t i, size_t *len) {
    uint32_t cp;
    *len = pf__utf8_decode((const unsigned char *)s + i, n - i, &cp);
    return cp;
}

/* The start of the whitespace that ends s[0..n) (Python's rstrip). */
static size_t pf__chat_rstrip_len(const char *s, size_t n) {
    size_t keep = 0, i = 0, len;
    while (i < n) {
        uint32_t cp = pf__chat_cp(s, n, i, &len);
        i += len;
        if (!pf__chat_is_space(cp)) keep = i;
    }
    return keep;
}

static size_t pf__chat_lstrip_len(const char *s, size_t n) {
    size_t i = 0, len;
    while (i < n) {
        uint32_t cp = pf__chat_cp(s, n, i, &len);
        if (!pf__chat_is_space(cp)) break;
        i += len;
    }
    return i;
}

/* Code points in s (Python's len of a str). */
static size_t pf__chat_cp_count(const char *s, size_t n) {
    size_t count = 0, i = 0, len;
    while (i < n) {
        pf__chat_cp(s, n, i, &len);
        i += len;
        count++;
    }
    return count;
}

/* The byte offset of code point k of s (n for k at or past the end). */
static size_t pf__chat_cp_offset(const char *s, size_t n, size_t k) {
    size_t i = 0, len;
    while (i < n && k) {
        pf__chat_cp(s, n, i, &len);
        i += len;
        k--;
    }
    return i;
}

/* ---- output buffers ---- */

/* Appends to an arena buffer (values built piecewise: repr, tojson, join). */
static void pf__chat_buf_add(pf__chat *c, pf__chat_buf *b, const char *s, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->n + n + 1) {
            if (cap > PF__CHAT_MAX_OUTPUT) pf__chat_fail(c, PF_ERROR_INVALID_ARGUMENT, "chat template: a string grew past %zu MiB", PF__CHAT_MAX_OUTPUT >> 20);
            cap *= 2;
        }
        char *p = (char *)pf__chat_alloc(c, cap);
        if (b->n) memcpy(p, b->s, b->n);
        b->s = p;
        b->cap = cap;
    }
    if (n) memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = 0;
}

static void pf__chat_buf_cstr(pf__chat *c, pf__chat_buf *b, const char *s) { pf__chat_buf_add(c, b, s, strlen(s)); }

static pf__jv pf__chat_buf_value(pf__chat_buf *b) { return pf__jv_str(b->s ? b->s : "", b->n); }

/* The rendered text (malloc'd: it is what the caller gets). */
static void pf__chat_emit(pf__chat *c, const char *s, size_t n) {
    if (!n) return;
    if (c->capture) {
        pf__chat_buf_add(c, c->capture, s, n);
        return;
    }
    if (c->out_len + n + 1 > c->out_cap) {
        size_t cap = c->out_cap ? c->out_cap : 1024;
        while (cap < c->out_len + n + 1) {
            if (cap > PF__CHAT_MAX_OUTPUT) pf__chat_fail(c, PF_ERROR_INVALID_ARGUMENT, "chat template: the output grew past %zu MiB", PF__CHAT_MAX_OUTPUT >> 20);
            cap *= 2;
        }
        char *p = (char *)realloc(c->out, cap);
        if (!p) pf__chat_fail(c, PF_ERROR_OUT_OF_MEMORY, "chat template: out of memory");
        c->out = p;
        c->out_cap = cap;
    }
    memcpy(c->out + c->out_len, s, n);
    c->out_len += n;
    c->out[c->out_len] = 0;
}

/* ---- printing values as Python does ---- */

/* repr(float): the shortest digits that read back the same, in exponent form outside 1e-4..1e16. */
static void pf__chat_float_text(double f, char *out, size_t cap) {
    char digits[40];
    int precision, exponent;
    if (isnan(f)) { snprintf(out, cap, "nan"); return; }
    if (isinf(f)) { snprintf(out, cap, f < 0 ? "-inf" : "inf"); return; }
    for (precision = 1; precision <= 17; precision++) {
        snprintf(digits, sizeof digits, "%.*e", precision - 1, f);
        if (strtod(digits, NULL) == f) break;
    }
    /* digits: [-]d[.ddd]e[+-]xx */
    char mantissa[40], *e = strchr(digits, 'e');
    int neg = digits[0] == '-', m = 0;
    exponent = atoi(e + 1);
    for (char *p = digits + neg; p < e; p++)
        if (*p != '.') mantissa[m++] = *p;
    mantissa[m] = 0;
    if (exponent < -4 || exponent >= 16) {
        char buf[64];
        int k = snprintf(buf, sizeof buf, "%s%c", neg ? "-" : "", mantissa[0]);
        if (m > 1) k += snprintf(buf + k, sizeof buf - (size_t)k, ".%s", mantissa + 1);
        snprintf(buf + k, sizeof buf - (size_t)k, "e%c%02d", exponent < 0 ? '-' : '+', exponent < 0 ? -exponent : exponent);
        snprintf(out, cap, "%s", buf);
        return;
    }
    char buf[64];
    int k = 0;
    if (neg) buf[k++] = '-';
    if (exponent < 0) {
        buf[k++] = '0';
        buf[k++] = '.';
        for (int z = -1; z > exponent; z--) buf[k++] = '0';
        for (int d = 0; d < m; d++) buf[k++] = mantissa[d];
    } else {
        for (int d = 0; d <= exponent; d++) buf[k++] = d < m ? mantissa[d] : '0';
        buf[k++] = '.';
        if (m > exponent + 1)
            for (int d = exponent + 1; d < m; d++) buf[k++] = mantissa[d];
        else
            buf[k++] = '0';
    }
    buf[k] = 0;
    snprintf(out, cap, "%s", buf);
}

static void pf__chat_repr(pf__chat *c, pf__chat_buf *b, pf__jv v, int depth);

/* str(v) into b. */
static void pf__chat_str_into(pf__chat *c, pf__chat_buf *b, pf__jv v, int depth) {
    char num[64];
    switch (v.type) {
    case PF__JV_UNDEFINED: return;
    case PF__JV_NONE: pf__chat_buf_cstr(c, b, "None"); return;
    case PF__JV_BOOL: pf__chat_buf_cstr(c, b, v.u.b ? "True" : "False"); return;
    case PF__JV_INT: snprintf(num, sizeof num, "%lld", (long long)v.u.i); pf__chat_buf_cstr(c, b, num); return;
    case PF__JV_FLOAT: pf__chat_float_text(v.u.f, num, sizeof num); pf__chat_buf_cstr(c, b, num); return;
    case PF__JV_STRING: pf__chat_buf_add(c, b, v.u.str.s, v.u.str.n); return;
    default: pf__chat_repr(c, b, v, depth); return;
    }
}

static pf__jv pf__chat_str(pf__chat *c, pf__jv v) {
    pf__chat_buf b = {0};
    if (v.type == PF__JV_STRING) return v;
    pf__chat_str_into(c, &b, v, 0);
    return pf__chat_buf_value(&b);
}

/* repr(v), as Python prints lists and dicts. */
static void pf__chat_repr(pf__chat *c, pf__chat_buf *b, pf__jv v, int depth) {
    if (depth > PF__CHAT_MAX_VALUE_DEPTH) pf__chat_fail(c, PF_ERROR_INVALID_ARGUMENT, "chat template: a value nests deeper than %d", PF__CHAT_MAX_VALUE_DEPTH);
    if (v.type == PF__JV_STRING) {
        const char *s = v.u.str.s;
        size_t n = v.u.str.n;
        char quote = memchr(s, '\'', n) && !memchr(s, '"', n) ? '"' : '\'';
        pf__chat_buf_add(c, b, &quote, 1);
        for (size_t i = 0; i < n; i++) {
            unsigned char ch = (unsigned char)s[i];
            char esc[8];
            if (ch == '\\' || ch == (unsigned char)quote) {
                esc[0] = '\\';
                esc[1] = (char)ch;
                pf__chat_buf_add(c, b, esc, 2);
            } else if (ch == '\n') pf__chat_buf_cstr(c, b, "\\n");
            else if (ch == '\r') pf__chat_buf_cstr(c, b, "\\r");
            else if (ch == '\t') pf__chat_buf_cstr(c, b, "\\t");
            else if (ch < 0x20 || ch == 0x7F) {
                snprintf(esc, sizeof esc, "\\x%02x", ch);
                pf__chat_buf_cstr(c, b, esc);
            } else pf__chat_buf_add(c, b, (const char *)&ch, 1);
        }
        pf__chat_buf_add(c, b, &quote, 1);
    } else if (v.type == PF__JV_LIST) {
        pf__chat_buf_cstr(c, b, v.u.list->tuple ? "(" : "[");
        for (size_t i = 0; i < v.u.list->n; i++) {
            if (i) pf__chat_buf_cstr(c, b, ", ");
            pf__chat_repr(c, b, v.u.list->items[i], depth + 1);
        }
        if (v.u.list->tuple && v.u.list->n == 1) pf__chat_buf_cstr(c, b, ",");
        pf__chat_buf_cstr(c, b, v.u.list->tuple ? ")" : "]");
    } else if (v.type == PF__JV_DICT) {
        pf__chat_buf_cstr(c, b, v.u.dict->namespace_ ? "<Namespace {" : "{");
        for (size_t i = 0; i < v.u.dict->n; i++) {
            if (i) pf__chat_buf_cstr(c, b, ", ");
            pf__chat_repr(c, b, v.u.dict->keys[i], depth + 1);
            pf__chat_buf_cstr(c, b, ": ");
            pf__chat_repr(c, b, v.u.dict->values[i], depth + 1);
        }
        pf__chat_buf_cstr(c, b, v.u.dict->namespace_ ? "}>" : "}");
    } else if (v.type == PF__JV_FUNC) {
        pf__chat_buf_cstr(c, b, "<function>");
    } else if (v.type == PF__JV_UNDEFINED) {
        pf__chat_buf_cstr(c, b, "Undefined");
    } else {
        pf__chat_str_into(c, b, v, depth);
    }
}

/* json.dumps(v, ensure_ascii=False, indent=indent (-1: none), sort_keys=sort_keys) */
static void pf__chat_json(pf__chat *c, pf__chat_buf *b, pf__jv v, int indent, int sort_keys, int level) {
    char num[64];
    if (level > PF__CHAT_MAX_VALUE_DEPTH) pf__chat_fail(c, PF_ERROR_INVALID_ARGUMENT, "chat template: a value nests deeper than %d", PF__CHAT_MAX_VALUE_DEPTH);
    switch (v.type) {
    case PF__JV_UNDEFINED: pf__chat_fail(c, PF_ERROR_INVALID_ARGUMENT, "chat template: tojson of the undefined '%.*s'", (int)v.u.str.n, v.u.str.s);
    case PF__JV_NONE: pf__chat_buf_cstr(c, b, "null"); return;
    case PF__JV_BOOL: pf__chat_buf_cstr(c, b, v.u.b ? "true" : "false"); return;
    case PF__JV_INT:
    case PF__JV_FLOAT:
        if (v.type == PF__JV_FLOAT && isnan(v.u.f)) pf__chat_buf_cstr(c, b, "NaN");
        else if (v.type == PF__JV_FLOAT && isinf(v.u.f)) pf__chat_buf_cstr(c, b, v.u.f < 0 ? "-Infinity" : "Infinity");
        else pf__chat_str_into(c, b, v, level);
        return;
    case PF__JV_STRING: {
        pf__chat_buf_cstr(c, b, "\"");
        for (size_t i = 0; i < v.u.str.n; i++) {
            unsigned char ch = (unsigned char)v.u.str.s[i];
            if (ch == '"') pf__chat_buf_cstr(c, b, "\\\"");
            else if (ch == '\\') pf__chat_buf_cstr(c, b, "\\\\");
            else if (ch == '\n') pf__chat_buf_cstr(c, b, "\\n");
            else if (ch == '\r') pf__chat_buf_cstr(c, b, "\\r");
            else if (ch == '\t') pf__chat_buf_cstr(c, b, "\\t");
            else if (ch == '\b') pf__chat_buf_cstr(c, b, "\\b");
            else if (ch == '\f') pf__chat_buf_cstr(c, b, "\\f");
            else if (ch < 0x20) {
                snprintf(num, sizeof num, "\\u%04x", ch);
                pf__chat_buf_cstr(c, b, num);
            } else pf__chat_buf_add(c, b, (const char *)&ch, 1);
        }
        pf__chat_buf_cstr(c, b, "\"");
        return;
    }
    case PF__JV_LIST:
    case PF__JV_DICT: {
        int is_list = v.type == PF__JV_LIST;
        size_t n = is_list ? v.u.list->n : v.u.dict->n;
        size_t *order = NULL;
        pf__chat_buf_cstr(c, b, is_list ? "[" : "{");
        if (!n) {
            pf__chat_buf_cstr(c, b, is_list ? "]" : "}");
            return;
        }
        if (!is_list) {
            order = (size_t *)pf__chat_array(c, n, sizeof *order);
            for (size_t i = 0; i < n; i++) {
                if (v.u.dict->keys[i].type != PF__JV_STRING)
                    pf__chat_fail(c, PF_ERROR_UNSUPPORTED, "chat template: tojson of a dict with %s keys", pf__jv_type_name(v.u.dict->keys[i]));
                order[i] = i;
            }
            if (sort_keys) /* insertion sort: dicts in templates are small */
                for (size_t i = 1; i < n; i++)
                    for (size_t j = i; j > 0; j--) {
                        pf__jv x = v.u.dict->keys[order[j - 1]], y = v.u.dict->keys[order[j]];
                        size_t m = x.u.str.n < y.u.str.n ? x.u.str.n : y.u.str.n;
                        int cmp = memcmp(x.u.str.s, y.u.str.s, m);
                        if (cmp < 0 || (cmp == 0 && x.u.str.n <= y.u.str.n)) break;
                        size_t t = order[j];
                        order[j] = order[j - 1];
                        order[j - 1] = t;
                    }
        }
        for (size_t i = 0; i < n; i++) {
            if (i) pf__chat_buf_cstr(c, b, indent >= 0 ? "," : ", ");
            if (indent >= 0) {
                pf__chat_buf_cstr(c, b, "\n");
                for (int k = 0; k < indent * (level + 1); k++) pf__chat_buf_cstr(c, b, " ");
            }
            if (is_list) {
                pf__chat_json(c, b, v.u.list->items[i], indent, sort_keys, level + 1);
            } else {
                pf__chat_json(c, b, v.u.dict->keys[order[i]], indent, sort_keys, level + 1);
                pf__chat_buf_cstr(c, b, ": ");
                pf__chat_json(c, b, v.u.dict->values[order[i]], indent, sort_keys, level + 1);
            }
        }
        if (indent >= 0) {
            pf__chat_buf_cstr(c, b, "\n");
            for (int k = 0; k < indent * level; k++) pf__chat_buf_cstr(c, b, " ");
        }
        pf__chat_buf_cstr(c, b, is_list ? "]" : "}");
        return;
    }
    case PF__JV_FUNC: pf__chat_fail(c, PF_ERROR_INVALID_ARGUMENT, "chat template: tojson of a function");
    }
}

/* ---- the lexer ---- */

static void pf__chat_push_token(pf__chat *c, pf__jtok kind, int line, const char *s, size_t n) {
    if (c->num_tokens == c->cap_tokens) {
        size_t cap = c->cap_tokens ? 2 * c->cap_tokens : 256;
        pf__jtoken *t = (pf__jtoken *)pf__chat_array(c, cap, sizeof *t);
        if (c->num_tokens) memcpy(t, c->tokens, c->num_tokens * sizeof *t);
        c->tokens = t;
        c->cap_tokens = cap;
    }
    pf__jtoken *t = &c->tokens[c->num_tokens++];
    memset(t, 0, sizeof *t);
    t->kind = kind;
    t->line = line;
    t->s = s;
    t->n = n;
}

static int pf__chat_lines(const char *s, size_t n) {
    int lines = 0;
    for (size_t i = 0; i < n; i++) lines += s[i] == '\n';
    return lines;
}

/* A string literal's escapes, as Python's unicode-escape decodes them. */
static void pf__chat_lex_string(pf__chat *c, const char *s, size_t n, int line, pf__chat_buf *out) {
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '\\' || i + 1 == n) {
            pf__chat_buf_add(c, out, s + i, 1);
            continue;
        }
        char e = s[++i];
        const char *simple = strchr("\\'\"abfnrtv\n", e);
        if (simple && e) {
            static const char from[] = "\\'\"abfnrtv\n", to[] = "\\'\"\a\b\f\n\r\t\v";
            if (e != '\n') pf__chat_buf_add(c, out, &to[strchr(from, e) - from], 1); /* \<newline> is dropped */
        } else if (e == 'x' || e == 'u' || e == 'U') {
            int digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
            uint32_t cp = 0;
            for (int k = 0; k < digits; k++) {
                char h = i + 1 + (size_t)k < n ? s[i + 1 + k] : 0;
                int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
                if (d < 0) pf__chat_fail(c, PF_ERROR_FORMAT, "chat template: line %d: a truncated \\%c escape in a string", line, e);
                cp = cp * 16 + (uint32_t)d;
            }
            i += (size_t)digits;
            if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
                pf__chat_fail(c, PF_ERROR_UNSUPPORTED, "chat template: line %d: the escape \\%c names no character we can write", line, e);
            char u[4];
            size_t len = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
            if (len == 1) u[0] = (char)cp;
            else if (len == 2) { u[0] = (char)(0xC0 | cp >> 6); u[1] = (char)(0x80 | (cp & 0x3F)); }
            else if (len == 3) { u[0] = (char)(0xE0 | cp >> 12); u[1] = (char)(0x80 | ((cp >> 6) & 0x3F)); u[2] = (char)(0x80 | (cp & 0x3F)); }
            else { u[0] = (char)(0xF0 | cp >> 18); u[1] = (char)(0x80 | ((cp >> 12) & 0x3F)); u[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); u[3] = (char)(0x80 | (cp & 0x3F)); }
            pf__chat_buf_add(c, out, u, len);
        } else if (e >= '0' && e <= '7') {
            pf__chat_fail(c, PF_ERROR_UNSUPPORTED, "chat template: line %d: octal escapes in strings are not supported", line);
        } else if (e == 'N') {
            pf__chat_fail(c, PF_ERROR_UNSUPPORTED, "chat template: line %d: \\N{...} escapes in strings are not supported", line);
        } else {
            pf__chat_buf_add(c, out, s + i - 1, 2); /* an unknown escape stays as written */
        }
    }
}

/* The tokens inside {{ }} or {% %} from *pos, up to and including the end tag. Returns the
   position after it, with trim_blocks (a newline after %}) or '-' (all whitespace) applied. */
static size_t pf__chat_lex_tag(pf__chat *c, size_t pos, int block, int *line, int *line_starting) {
    const char *s = c->src;
    size_t n = c->src_len;
    int depth = 0;
    for (;;) {
        while (pos < n && (s[pos] == ' ' || s[pos] == '\t' || s[pos] == '\n' || s[pos] == '\r' || s[pos] == '\f' || s[pos] == '\v')) {
            if (s[pos] == '\n') (*line)++;
            pos++;
        }
        if (pos >= n) pf__chat_fail(c, PF_ERROR_FORMAT, "chat template: line %d: a %s is not closed", *line, block ? "{% tag" : "{{ expression");
        /* the end tag: "-%}" strips what follows, "+%}" keeps it, "%}" drops one newline */
        const char *end = block ? "%}" : "}}";
        int sign = depth == 0 && (s[pos] == '-' || (block && s[pos] == '+')) && pos + 2 < n && !strncmp(s + pos + 1, end, 2);
        if (sign || (depth == 0 && pos + 1 < n && !strncmp(s + pos, end, 2))) {
            char mark = sign ? s[pos] : 0;
            pf__chat_push_token(c, block ? PF__JT_BLOCK_END : PF__JT_VAR_END, *line, NULL, 0);
            pos += sign ? 3 : 2;
            *line_starting = 0;
            if (mark == '-') {
                size_t skip = pf__chat_lstrip_len(s + pos, n - pos);
                *line += pf__chat_lines(s + pos, skip);
                *line_starting = skip && s[pos + skip - 1] == '\n';
                pos += skip;
            } else if (block && mark != '+' && pos < n && s[pos] == '\n') {
                pos++;
                (*line)++;
                *line_starting = 1;
            }
            return pos;
        }
        char ch = s[pos];
        if (ch == '_' || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')) {
            size_t start = pos;
            while (pos < n && (s[pos] == '_' || (s[pos] >= 'a' && s[pos] <= 'z') || (s[pos] >= 'A' && s[pos] <= 'Z') || (s[pos] >= '0' && s[pos] <= '9'))) pos++;
            pf__chat_push_token(c, PF__JT_NAME, *line, s + start, pos - start);
        } else if (ch >= '0' && ch <= '9') {
            size_t start = pos;
            int is_float = 0;
            while (pos < n && ((s[pos] >= '0' && s[pos] <= '9') || s[pos] == '_')) pos++;
            if (pos + 1 < n && s[pos] == '.' && s[pos + 1] >= '0' && s[pos + 1] <= '9') {
                is_float = 1;
                pos++;
                while (pos < n && ((s[pos] >= '0' && s[pos] <= '9') || s[pos] == '_')) pos++;
            }
            if (pos < n && (s[pos] == 'e' || s[pos] == 'E')) {
                size_t e = pos + 1;
                if (e < n && (s[e] == '+' || s[e] == '-')) e++;
                if (e < n && s[e] >= '0' && s[e] <= '9') {
                    is_float = 1;
                    pos = e;
                    while (pos < n && s[pos] >= '0' && s[pos] <= '9') pos++;
                }
            }
            char num[64];
            size_t k = 0;
            for (size_t i = start; i < pos && k + 1 < sizeof num; i++)
                if (s[i] != '_') num[k++] = s[i];
            num[k] = 0;
            if (pos - start >= sizeof num) pf__chat_fail(c, PF_ERROR_UNSUPPORTED, "chat template: line %d: a number too long", *line);
            pf__chat_push_token(c, is_float ? PF__JT_FLOAT : PF__JT_INT, *line, s + start, pos - start);
            errno = 0;
            if (is_float) c->tokens[c->num_tokens - 1].f = strtod(num, NULL);
            else {
                c->tokens[c->num_tokens - 1].i = strtoll(num, NULL, 10);
                if (errno) pf__chat_fail(c, PF_ERROR_UNSUPPORTED, "chat template: line %d: the integer %s is too large", *line, num);
            }
        } else if (ch == '\'' || ch == '"') {
            size_t start = ++pos;
            int start_line = *line;
            while (pos < n && s[pos] != ch) {
                if (s[pos] == '\\' && pos + 1 < n) pos++;
                if (s[pos] == '\n') (*line)++;
                pos++;
            }
            if (pos >= n) pf__chat_fail(c, PF_ERROR_FORMAT, "chat template: line %d: a string is not closed", start_line);
            pf__chat_buf b = {0};
            pf__chat_lex_string(c, s + start, pos - start, start_line, &b);
            pf__chat_push_token(c, PF__JT_STRING, start_line, b.s ? b.s : "", b.n);
            pos++;
        } else {
            static const char *const ops[] = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "/", "*", "%", "~", "[", "]", "(", ")",
                                              "{", "}", ">", "<", "=", ".", ":", "|", ",", ";"};
            size_t k;
            for (k = 0; k < sizeof ops / sizeof ops[0]; k++)
                if (!strncmp(s + pos, ops[k], strlen(ops[k])) && pos + strlen(ops[k]) <= n) break;
            if (k == sizeof ops / sizeof ops[0])
                pf__chat_fail(c, PF_ERROR_FORMAT, "chat template: line %d: unexpected character '%c'", *line, ch);
            if (ops[k][0] == '(' || ops[k][0] == '[' || ops[k][0] == '{') depth++;
            if ((ops[k][0] == ')' || ops[k][0] == ']' || ops[k][0] == '}') && depth > 0) depth--;
            pf__chat_push_token(c, PF__JT_OP, *line, ops[k], strlen(ops[k]));
            pos += strlen(ops[k]);
        }
    }
}

/* Splits the (newline-normalised) source into text and tag tokens, with jinja2's whitespace
   control: "{%-" strips the whitespace before a tag, lstrip_blocks the spaces before a block or
   comment tag alone on its line. */
static void pf__chat_lex(pf__chat *c) {
    const char *s = c->src;
    size_t n = c->src_len, pos = 0;
    int line = 1, line_starting = 1;
    while (pos < n) {
        size_t tag = pos;
        while (tag + 1 < n && !(s[tag] == '{' && (s[tag + 1] == '{' || s[tag + 1] == '%' || s[tag + 1] == '#'))) tag++;
        if (tag + 1 >= n) tag = n;
        size_t text_len = tag - pos;
        char kind = tag < n ? s[tag + 1] : 0;
        char sign = tag + 2 < n ? s[tag + 2] : 0;
        if (kind && sign == '-') {
            text_len = pf__chat_rstrip_len(s + pos, text_len);
        } else if (kind && sign != '+' && kind != '{') {
            size_t l_pos = text_len;
            while (l_pos > 0 && s[pos + l_pos - 1] != '\n') l_pos--;
            if ((l_pos > 0 || line_starting) && l_pos < text_len &&
                pf__chat_lstrip_len(s + pos + l_pos, text_len - l_pos) == text_len - l_pos)
                text_len = l_pos;
        }
        if (text_len) pf__chat_push_token(c, PF__JT_TEXT, line, s + pos, text_len);
        line += pf__chat_lines(s + pos, tag - pos);
        if (!kind) break;
        pos = tag + 2 + (sign == '-' || sign == '+');
        if (kind == '#') {
            size_t end = pos;
            while (end + 1 < n && !(s[end] == '#' && s[end + 1] == '}')) end++;
            if (end + 1 >= n) pf__chat_fail(c, PF_ERROR_FORMAT, "chat template: line %d: a {# comment is not closed", line);
            char mark = end > pos && (s[end - 1] == '-' || s[end - 1] == '+') ? s[end - 1] : 0;
            line += pf__chat_lines(s + pos, end - pos);
            pos = end + 2;
            line_starting = 0;
            if (mark == '-') {
                size_t skip = pf__chat_lstrip_len(s + pos, n - pos);
                line += pf__chat_lines(s + pos, skip);
                line_starting = skip && s[pos + skip - 1] == '\n';
                pos += skip;
            } else if (mark != '+' && pos < n && s[pos] == '\n') {
                pos++;
                line++;
                line_starting = 1;
            }
            continue;
        }
        if (kind == '%') { /* raw blocks lex differently: refuse them before lexing their inside */
            size_t name = pos;
            while (name < n && (s[name] == ' ' || s[name] == '\t' || s[name] == '\n')) name++;
            if (n - name >= 3 && !memcmp(s + name, "raw", 3) && (name + 3 == n || !(s[name + 3] == '_' || isalnum((unsigned char)s[name + 3]))))
                pf__chat_fail(c, PF_ERROR_UNSUPPORTED, "chat template: line %d: the tag 'raw' is not supported", line);
        }
        pf__chat_push_token(c, kind == '{' ? PF__JT_VAR_BEGIN : PF__JT_BLOCK_BEGIN, line, NULL, 0);
        pos = pf__chat_lex_tag(c, pos, kind == '%', &line, &line_starting);
    }
    pf__chat_push_token(c, PF__JT_EOF, line, NULL, 0);
}

/* ---- the parser ---- */

static pf__jtoken *pf__chat_peek(pf__chat *c) { return &c->tokens[c->pos]; }
static pf__jtoken *pf__chat_next(pf__chat *c) {
    pf__jtoken *t = &c->tokens[c->pos];
    if (t->kind != PF__JT_EOF) c->pos++;
    return t;
}
static int pf__chat_is_op(const pf__jtoken *t, const char *op) {
    return t->kind == PF__JT_OP && t->n == strlen(op) && !memcmp(t->s, op, t->n);
}
static int pf__chat_is_name(const pf__jtoken *t, const char *name) {
    return t->kind == PF__JT_NAME && t->n == strlen(name) && !memcmp(t->s, name, t->n);
}

static const char *pf__chat_token_text(pf__chat *c, const pf__jtoken *t) {
    switch (t->kind) {
    case PF__JT_EOF: return "the end of the template";
    case PF__JT_TEXT: return "text";
    case PF__JT_VAR_BEGIN: return "'{{'";
    case PF__JT_VAR_END: return "'}}'";
    case PF__JT_BLOCK_BEGIN: return "'{%'";
    case PF__JT_BLOCK_END: return "'%}'";
    case PF__JT_STRING: return "a string";
    default: {
        char *p = (char *)pf__chat_alloc(c, t->n + 3);
        snprintf(p, t->n + 3, "'%.*s'", (int)t->n, t->s);
        return p;
    }
    }
}

static void pf__chat_expect_op(pf__chat *c, const char *op) {
    pf__jtoken *t = pf__chat_next(c);
    if (!pf__chat_is_op(t, op))
        pf__chat_fail(c, PF_ERROR_FORMAT, "chat template: line %d: expected '%s', found %s", t->line, op, pf__chat_token_text(c, t));
}

static pf__jtoken *pf__chat_expect_name(pf__chat *c, const char *what) {
    pf__jtoken *t = pf__chat_next(c);
    if (t->kind != PF__JT_NAME)
        pf__chat_fail(c, PF_ERROR_FORMAT, "chat template: line %d: expected %s, found %s", t->line, what, pf__chat_token_text(c, t));
    return t;
}

static pf__jnode *pf__chat_node(pf__chat *c, pf__jnode_kind kind, int line) {
    pf__jnode *node = (pf__jnode *)pf__chat_alloc(c, sizeof *node);
    memset(node, 0, sizeof *node);
    node->kind = kind;
    node->line = line;
    return node;
}

static void pf__chat_enter(pf__chat *c, int line) {
    if (++c->depth > PF__CHAT_MAX_DEPTH)
        pf__chat_fail(c, PF_ERROR_UNSUPPORTED, "chat template: line %d: nests deeper than %d", line, PF__CHAT_MAX_DEPTH);
}

static pf__jnode *pf__chat_parse_expr(pf__chat *c);
static pf__jnode *pf__chat_parse_or(pf__chat *c);
static pf__jnode *pf__chat_parse_unary(pf__chat *c, int with_filters);

/* Binary operator codes. */
enum { PF__OP_ADD = 1, PF__OP_SUB, PF__OP_MUL, PF__OP_DIV, PF__OP_FLOORDIV, PF__OP_MOD, PF__OP_POW, PF__OP_CONCAT,
       PF__OP_EQ, PF__OP_NE, PF__OP_LT, PF__OP_LE, PF__OP_GT, PF__OP_GE, PF__OP_IN, PF__OP_NOT_IN };

/* Call arguments after '(' up to ')': positional ones, then name=value ones as KWARG nodes. */
static pf__jnode *pf__chat_parse_args(pf__chat *c) {
    pf__jnode *first = NULL, **tail = &first;
    while (!pf__chat_is_op(pf__chat_peek(c), ")")) {
        pf__jtoken *t = pf__chat_peek(c);
        pf__jnode *arg;
        if (t->kind == PF__JT_NAME && pf__chat_is_op(&c->tokens[c->pos + 1], "=")) {
            arg = pf__chat_node(c, PF__JN_KWARG, t->line);
            arg->s = t->s;
            arg->n = t->n;
            c->pos += 2;
            arg->a = pf__chat_parse_expr(c);
        } else {
            arg = pf__chat_parse_expr(c);
        }
        *tail = arg;
        tail = &arg->next;
        if (!pf__chat_is_op(pf__chat_peek(c), ",")) break;
        pf__chat_next(c);
    }
    pf__chat_expect_op(c, ")");
    return first;
}

static pf__jnode *pf__chat_parse_primary(pf__chat *c) {
    pf__jtoken *t = pf__chat_next(c);
    pf__jnode *node;
    switch (t->kind) {
    case PF__JT_NAME:
        node = pf__chat_node(c, PF__JN_CONST, t->line);
        if (pf__chat_is_name(t, "true") || pf__chat_is_name(t, "True")) node->value = pf__jv_bool(1);
        else if (pf__chat_is_name(t, "false") || pf__chat_is_name(t, "False")) node->value = pf__jv_bool(0);
        else if (pf__chat_is_name(t, "none") || pf__chat_is_name(t, "None")) node->value = pf__jv_none();
        else {
            node->kind = PF__JN_NAME;
            node->s = t->s;
            node->n = t->n;
        }
        return node;
    case PF__JT_STRING: {
        pf__chat_buf b = {0};
        pf__chat_buf_add(c, &b, t->s, t->n);
        while (pf__chat_peek(c)->kind == PF__JT_STRING) { /* "a" "b" is "ab" */
            pf__jtoken *more = pf__chat_next(c);
            pf__chat_buf_add(c, &b, more->s, more->n);
        }
        node = pf__chat_node(c, PF__JN_CONST, t->line);
        node->value = pf__chat_buf_value(&b);
        return node;
    }
    case PF__JT_INT:
        node = pf__chat_node(c, PF__JN_CONST, t->line);
        node->value = pf__jv_int(t->i);
        return node;
    case PF__JT_FLOAT:
        node = pf__chat_node(c, PF__JN_CONST, t->line);
        node->value = pf__jv_float(t->f);
        return node;
    case PF__JT_OP:
        if (pf__chat_is_op(t, "(")) { /* a parenthesised expression or a tuple */
            pf__jnode *first = NULL, **tail = &first;
            int count = 0, comma = 0;
            while (!pf__chat_is_op(pf__chat_peek(c), ")")) {
                pf__jnode *item = pf__chat_parse_expr(c);
                *tail = item;
                tail = &item->next;
                count++;
                if (!pf__chat_is_op(pf__chat_peek(c), ",")) break;
                pf__chat_next(c);
                comma = 1;
            }
            pf__chat_expect_op(c, ")");
            if (count == 1 && !comma) return first;
            node = pf__chat_node(c, PF__JN_TUPLE, t->line);
            node->a = first;
            return node;
        }
        if (pf__chat_is_op(t, "[")) {
            pf__jnode *first = NULL, **tail = &first;
            while (!pf__chat_is_op(pf__chat_peek(c), "]")) {
                pf__jnode *item = pf__chat_parse_expr(c);
                *tail = item;
                tail = &item->next;
                if (!pf__chat_is_op(pf__chat_peek(c), ",")) break;
                pf__chat_next(c);
            }
            pf__chat_expect_op(c, "]");
            node = pf__chat_node(c, PF__JN_LIST, t->line);
            node->a = first;
            return node;
        }
        if (pf__chat_is_op(t, "{")) { /* keys and values alternate in a */
            pf__jnode *first = NULL, **tail = &first;
            while (!pf__chat_is_op(pf__chat_peek(c), "}")) {
                pf__jnode *key = pf__chat_parse_expr(c);
                pf__chat_expect_op(c, ":");
                pf__jnode *value = pf__chat_parse_expr(c);
                key->next = value;
                *tail = key;
                tail = &value->next;
                if (!pf__chat_is_op(pf__chat_peek(c), ",")) break;
                pf__chat_next(c);
            }
            pf__chat_expect_op(c, "}");
            node = pf__chat_node(c, PF__JN_DICT, t->line);
            node->a = first;
            return node;
        }
        break;
    default: break;
    }
    pf__chat_fail(c, PF_ERROR_FORMAT, "chat template: line %d: unexpected %s in an expression", t->line, pf__chat_token_text(c, t));
}

/* obj.name, obj[index], obj[start:stop:step], callee(args) */
static pf__jnode *pf__chat_parse_postfix(pf__chat *c, pf__jnode *node) {
    for (;;) {
        pf__jtoken *t = pf__chat_peek(c);
        if (pf__chat_is_op(t, ".")) {
            pf__chat_next(c);
            pf__jtoken *name = pf__chat_next(c);
            if (name->kind == PF__JT_INT) { /* x.0 is x[0] */
                pf__jnode *item = pf__chat_node(c, PF__JN_ITEM, t->line), *index = pf__chat_node(c, PF__JN_CONST, t->line);
                index->value = pf__jv_int(name->i);
                item->a = node;
                item->b = index;
                node = item;
                continue;
            }
            if (name->kind != PF__JT_NAME)
                pf__chat_fail(c, PF_ERROR_FORMAT, "chat template: line %d: expected a name after '.', found %s", t->line, pf__chat_token_text(c, name));
            pf__jnode *attr = pf__chat_node(c, PF__JN_ATTR, t->line);
            attr->a = node;
            attr->s = name->s;
            attr->n = name->n;
            node = attr;
        } else if (pf__chat_is_op(t, "[")) {
            pf__chat_next(c);
            pf__jnode *parts[3] = {NULL, NULL, NULL};
            int colons = 0;
            for (;;) {
                pf__jtoken *u = pf__chat_peek(c);
                if (pf__chat_is_op(u, "]")) break;
                if (pf__chat_is_op(u, ":")) {
                    if (++colons > 2) pf__chat_fail(c, PF_ERROR_FORMAT, "chat template: line %d: a slice with three colons", u->line);
                    pf__chat_next(c);
                    continue;
                }
                if (parts[colons]) pf__chat_fail(c, PF_ERROR_FORMAT, "chat template: line %d: expected ']' or ':' in a subscript", u->line);
                parts[colons] = pf__chat_parse_expr(c);
            }
            pf__chat_expect_op(c, "]");
            pf__jnode *item;
            if (colons) {
                item = pf__chat_node(c, PF__JN_SLICE, t->line);
                item->b = parts[0];
                item->c = parts[1];
                item->d = parts[2];
            } else {
                if (!parts[0]) pf__chat_fail(c, PF_ERROR_FORMAT, "chat template: line %d: an empty subscript", t->line);
                item = pf__chat_node(c, PF__JN_ITEM, t->line);
                item->b = parts[0];
            }
            item->a = node;
            node = item;
        } else if (pf__chat_is_op(t, "(")) {
            pf__chat_next(c);
            pf__jnode *call = pf__chat_node(c, PF__JN_CALL, t->line);
            call->a = node;
            call->b = pf__chat_parse_args(c);
            node = call;
        } else {
            return node;
        }
    }
}

/* value | filter(args), value is [not] test [arg] */
static pf__jnode *pf__chat_parse_filters(pf__chat *c, pf__jnode *node) {
    for (;;) {
        pf__jtoken *t = pf__chat_peek(c);
        if (pf__chat_is_op(t, "|")) {
            pf__chat_next(c);
            pf__jtoken *name = pf__chat_expect_name(c, "a filter name");
            pf__jnode *filter = pf__chat_node(c, PF__JN_FILTER, t->line);
            filter->a = node;
            filter->s = name->s;
            filter->n = name->n;
            if (pf__chat_is_op(pf__chat_peek(c), "(")) {
                pf__chat_next(c);
                filter->b = pf__chat_parse_args(c);
            }
            node = filter;
        } else if (pf__chat_is_name(t, "is")) {
            pf__chat_next(c);
            pf__jnode *test = pf__chat_node(c, PF__JN_TEST, t->line);
            if (pf__chat_is_name(pf__chat_peek(c), "not")) {
                pf__chat_next(c);
                test->op = 1;
            }
            pf__jtoken *name = pf__chat_next(c);
            if (name->kind != PF__JT_NAME) /* "is none", "is true" are names here */
                pf__chat_fail(c, PF_ERROR_FORMAT, "chat template: line %d: expected a test name after 'is', found %s", t->line, pf__chat_token_text(c, name));
            test->a = node;
            test->s = name->s;
            test->n = name->n;
            pf__jtoken *u = pf__chat_peek(c);
            if (pf__chat_is_op(u, "(")) {
                pf__chat_next(c);
                test->b = pf__chat_parse_args(c);
            } else if (u->kind == PF__JT_STRING || u->kind == PF__JT_INT || u->kind == PF__JT_FLOAT ||
                       (u->kind == PF__JT_NAME && !pf__chat_is_name(u, "else") && !pf__chat_is_name(u, "or") &&
                        !pf__chat_is_name(u, "and") && !pf__chat_is_name(u, "if") && !pf__chat_is_name(u, "is") &&
                        !pf__chat_is_name(u, "in") && !pf__chat_is_name(u, "not"))) {
                test->b = pf__chat_parse_postfix(c, pf__chat_parse_primary(c)); /* "is divisibleby 3" */
            }
            node = test;
        } else if (pf__chat_is_op(t, "(")) {
            pf__chat_next(c);
            pf__jnode *call = pf__chat_node(c, PF__JN_CALL, t->line);
            call->a = node;
            call->b = pf__chat_parse_args(c);
            node = call;
        } else {
            return node;
        }
    }
}

static pf__jnode *pf__chat_parse_unary(pf__chat *c, int with_filters) {
    pf__jtoken *t = pf__chat_peek(c);
    pf__jnode *node;
    pf__chat_enter(c, t->line);
    if (pf__chat_is_op(t, "-") || pf__chat_is_op(t, "+")) {
        pf__chat_next(c);
        node = pf__chat_node(c, pf__chat_is_op(t, "-") ? PF__JN_NEG : PF__JN_POS, t->line);
        node->a = pf__chat_parse_unary(c, 0);
    } else {
        node = pf__chat_parse_postfix(c, pf__chat_parse_primary(c));
    }
    if (with_filters) node = pf__chat_parse_filters(c, node);
    c->depth--;
    return node;
}

static pf__jnode *pf__chat_binary(pf__chat *c, int op, pf__jnode *a, pf__jnode *b, int line) {
    pf__jnode *node = pf__chat_node(c, PF__JN_BINARY, line);
    node->op = op;
    node->a = a;
    node->b = b;
    return node;
}

static pf__jnode *pf__chat_parse_pow(pf__chat *c) {
    pf__jnode *node = pf__chat_parse_unary(c, 1);
    while (pf__chat_is_op(pf__chat_peek(c), "**")) {
        int line = pf__chat_next(c)->line;
        node = pf__chat_binary(c, PF__OP_POW, node, pf__chat_parse_unary(c, 1), line);
    }
    return node;
}

static pf__jnode *pf__chat_parse_mul(pf__chat *c) {
    pf__jnode *node = pf__chat_parse_pow(c);
    for (;;) {
        pf__jtoken *t = pf__chat_peek(c);
        int op = pf__chat_is_op(t, "*") ? PF__OP_MUL : pf__chat_is_op(t, "/") ? PF__OP_DIV
               : pf__chat_is_op(t, "//") ? PF__OP_FLOORDIV : pf__chat_is_op(t, "%") ? PF__OP_MOD : 0;
        if (!op) return node;
        pf__chat_next(c);
        node = pf__chat_binary(c, op, node, pf__chat_parse_pow(c), t->line);
    }
}

static pf__jnode *pf__chat_parse_concat(pf__chat *c) {
    pf__jnode *node = pf__chat_parse_mul(c);
    while (pf__chat_is_op(pf__chat_peek(c), "~")) {
        int line = pf__chat_next(c)->line;
        node = pf__chat_binary(c, PF__OP_CONCAT, node, pf__chat_parse_mul(c), line);
    }
    return node;
}

static pf__jnode *pf__chat_parse_add(pf__chat *c) {
    pf__jnode *node = pf__chat_parse_concat(c);
    for (;;) {
        pf__jtoken *t = pf__chat_peek(c);
        int op = pf__chat_is_op(t, "+") ? PF__OP_ADD : pf__chat_is_op(t, "-") ? PF__OP_SUB : 0;
        if (!op) return node;
        pf__chat_next(c);
        node = pf__chat_binary(c, op, node, pf__chat_parse_concat(c), t->line);
    }
}

static pf__jnode *pf__chat_parse_compare(pf__chat *c) {
    pf__jnode *node = pf__chat_parse_add(c);
    for (;;) {
        pf__jtoken *t = pf__chat_peek(c);
        int op = pf__chat_is_op(t, "==") ? PF__OP_EQ : pf__chat_is_op(t, "!=") ? PF__OP_NE : pf__chat_is_op(t, "<") ? PF__OP_LT
               : pf__chat_is_op(t, "<=") ? PF__OP_LE : pf__chat_is_op(t, ">") ? PF__OP_GT : pf__chat_is_op(t, ">=") ? PF__OP_GE
               : pf__chat_is_name(t, "in") ? PF__OP_IN : 0;
        if (!op && pf__chat_is_name(t, "not") && pf__chat_is_name(&c->tokens[c->pos + 1], "in")) {
            op = PF__OP_NOT_IN;
            pf__chat_next(c);
        }
        if (!op) return node;
        pf__chat_next(c);
        node = pf__chat_binary(c, op, node, pf__chat_parse_add(c), t->line); /* a < b < c chains left */
    }
}

static pf__jnode *pf__chat_parse_not(pf__chat *c) {
    pf__jtoken *t = pf__chat_peek(c);
    if (pf__chat_is_name(t, "not")) {
        pf__chat_next(c);
        pf__chat_enter(c, t->line);
        pf__jnode *node = pf__chat_node(c, PF__JN_NOT, t->line);
        node->a = pf__chat_parse_not(c);
        c->depth--;
        return node;
    }
    return pf__chat_parse_compare(c);
}

static pf__jnode *pf__chat_parse_and(pf__chat *c) {
    pf__jnode *node = pf__chat_parse_not(c);
    while (pf__chat_is_name(pf__chat_peek(c), "and")) {
        pf__jnode *and_ = pf__chat_node(c, PF__JN_AND, pf__chat_next(c)->line);
        and_->a = node;
        and_->b = pf__chat_parse_not(c);
        node = and_;
    }
    return node;
}

static pf__jnode *pf__chat_parse_or(pf__chat *c) {
    pf__jnode *node = pf__chat_parse_and(c);
    while (pf__chat_is_name(pf__chat_peek(c), "or")) {
        pf__jnode *or_ = pf__chat_node(c, PF__JN_OR, pf__chat_next(c)->line);
        or_->a = node;
        or_->b = pf__chat_parse_and(c);
        node = or_;
    }
    return node;
}

/* a if cond else b (b may be absent: undefined) */
static pf__jnode *pf__chat_parse_expr(pf__chat *c) {
    pf__chat_enter(c, pf__chat_peek(c)->line);
    pf__jnode *node = pf__chat_parse_or(c);
    while (pf__chat_is_name(pf__chat_peek(c), "if")) {
        pf__jnode *cond = pf__chat_node(c, PF__JN_COND, pf__chat_next(c)->line);
        cond->b = node;
        cond->a = pf__chat_parse_or(c);
        if (pf__chat_is_name(pf__chat_peek(c), "else")) {
            pf__chat_next(c);
            cond->c = pf__chat_parse_expr(c); /* "a if b else c if d else e" nests to the right */
        }
        node = cond;
    }
    c->depth--;
    return node;
}

static void pf__chat_expect_block_end(pf__chat *c) {
    pf__jtoken *t = pf__chat_next(c);
    if (t->kind != PF__JT_BLOCK_END)
        pf__chat_fail(c, PF_ERROR_FORMAT, "chat template: line %d: expected '%%}', found %s", t->line, pf__chat_token_text(c, t));
}

/* Statements up to a {% tag %} whose name is one of ends (NULL-terminated; NULL: the end of the
   template). Leaves the position on that name. */
static pf__jnode *pf__chat_parse_body(pf__chat *c, const char *const *ends);

static pf__jnode *pf__chat_parse_if(pf__chat *c, int line) {
    static const char *const ends[] = {"elif", "else", "endif", NULL};
    pf__jnode *node = pf__chat_node(c, PF__JN_IF, line); /* a: condition, b: body, c: else */
    node->a = pf__chat_parse_expr(c);
    pf__chat_expect_block_end(c);
    node->b = pf__chat_parse_body(c, ends);
    pf__jtoken *t = pf__chat_next(c);
    if (pf__chat_is_name(t, "elif")) {
        node->c = pf__chat_parse_if(c, t->line);
        return node; /* the nested if consumed endif */
    }
    if (pf__chat_is_name(t, "else")) {
        static const char *const endif[] = {"endif", NULL};
        pf__chat_expect_block_end(c);
        node->c = pf__chat_parse_body(c, endif);
        pf__chat_next(c);
    }
    pf__chat_expect_block_end(c);
    return node;
}

static pf__jnode *pf__chat_parse_for(pf__chat *c, int line) {
    static const char *const ends[] = {"else", "endfor", NULL}, *const endfor[] = {"endfor", NULL};
    pf__jnode *node = pf__chat_node(c, PF__JN_FOR, line); /* a: names, b: iterable, e: filter, c: body, d: else */
    pf__jnode **tail = &node->a;
    int parens = pf__chat_is_op(pf__chat_peek(c), "(");
    if (parens) pf__chat_next(c);
    for (;;) {
        pf__jtoken *name = pf__chat_expect_name(c, "a loop variable");
        pf__jnode *var = pf__chat_node(c, PF__JN_NAME, name->line);
        var->s = name->s;
        var->n = name->n;
        *tail = var;
        tail = &var->next;
        if (!pf__chat_is_op(pf__chat_peek(c), ",")) break;
        pf__chat_next(c);
    }
    if (parens) pf__chat_expect_op(c, ")");
    if (!pf__chat_is_name(pf__chat_next(c), "in"))
        pf__chat_fail(c, PF_ERROR_FORMAT, "chat template: line %d: expected 'in' in a for tag", line);
    node->b = pf__chat_parse_or(c); /* not parse_expr: "if" here filters the loop */
    if (pf__chat_is_name(pf__chat_peek(c), "if")) {
        pf__chat_next(c);
        node->e = pf__chat_parse_expr(c);
    }
    if (pf__chat_is_name(pf__chat_peek(c), "recursive"))
        pf__chat_fail(c, PF_ERROR_UNSUPPORTED, "chat template: line %d: recursive loops are not supported", line);
    pf__chat_expect_block_end(c);
    node->c = pf__chat_parse_body(c, ends);
    if (pf__chat_is_name(pf__chat_next(c), "else")) {
        pf__chat_expect_block_end(c);
        node->d = pf__chat_parse_body(c, endfor);
        pf__chat_next(c);
    }
    pf__chat_expect_block_end(c);
    return node;
}

static pf__jnode *pf__chat_parse_set(pf__chat *c, int line) {
    pf__jtoken *name = pf__chat_expect_name(c, "a variable name");
    pf__jnode *node = pf__chat_node(c, PF__JN_SET, line); /* s: name, b: attribute (ns.attr), a: value */
    node->s = name->s;
    node->n = name->n;
    if (pf__chat_is_op(pf__chat_peek(c), ".")) {
        pf__chat_next(c);
        pf__jtoken *attr = pf__chat_expect_name(c, "an attribute name");
        node->b = pf__chat_node(c, PF__JN_CONST, attr->line);
        node->b->value = pf__jv_str(attr->s, attr->n);
    }
    if (pf__chat_is_op(pf__chat_peek(c), ","))
        pf__chat_fail(c, PF_ERROR_UNSUPPORTED, "chat template: line %d: set with several targets is not supported", line);
    if (pf__chat_peek(c)->kind == PF__JT_BLOCK_END && !node->b) { /* {% set x %}...{% endset %} */
        static const char *const endset[] = {"endset", NULL};
        pf__chat_next(c);
        node->kind = PF__JN_SET_BLOCK;
        node->a = pf__chat_parse_body(c, endset);
        pf__chat_next(c);
        pf__chat_expect_block_end(c);
        return node;
    }
    if (pf__chat_is_op(pf__chat_peek(c), "|"))
        pf__chat_fail(c, PF_ERROR_UNSUPPORTED, "chat template: line %d: filtered set blocks are not supported", line);
    pf__chat_expect_op(c, "=");
    node->a = pf__chat_parse_expr(c);
    pf__chat_expect_block_end(c);
    return node;
}

static pf__jnode *pf__chat_parse_body(pf__chat *c, const char *const *ends) {
    pf__jnode *first = NULL, **tail = &first, *node;
    pf__chat_enter(c, pf__chat_peek(c)->line);
    for (;;) {
        pf__jtoken *t = pf__chat_next(c);
        if (t->kind == PF__JT_EOF) {
            if (ends) {
                const char *const *last = ends;
                while (last[1]) last++;
                pf__chat_fail(c, PF_ERROR_FORMAT, "chat template: the template ends inside a block: expected {%% %s %%}", *last);
            }
            break;
        }
        if (t->kind == PF__JT_TEXT) {
            node = pf__chat_node(c, PF__JN_TEXT, t->line);
            node->s = t->s;
            node->n = t->n;
        } else if (t->kind == PF__JT_VAR_BEGIN) {
            node = pf__chat_node(c, PF__JN_OUTPUT, t->line);
            node->a = pf__chat_parse_expr(c);
            pf__jtoken *end = pf__chat_next(c);
            if (end->kind != PF__JT_VAR_END)
                pf__chat_fail(c, PF_ERROR_FORMAT, "chat template: line %d: expected '}}', found %s", end->line, pf__chat_token_text(c, end));
        } else if (t->kind == PF__JT_BLOCK_BEGIN) {
            pf__jtoken *name = pf__chat_expect_name(c, "a tag name");
            int is_end = 0;
            for (const char *const *e = ends; e && *e; e++) is_end |= pf__chat_is_name(name, *e);
            if (is_end) {
                c->pos--; /* leave the name for the caller */
                break;
            }
            if (pf__chat_is_name(name, "if")) node = pf__chat_parse_if(c, name->line);
            else if (pf__chat_is_name(name, "for")) node = pf__chat_parse_for(c, name->line);
            else if (pf__chat_is_name(name, "set")) node = pf__chat_parse_set(c, name->line);
            else if (pf__chat_is_name(name, "break") || pf__chat_is_name(name, "continue")) {
                node = pf__chat_node(c, pf__chat_is_name(name, "break") ? PF__JN_BREAK : PF__JN_CONTINUE, name->line);
                pf__chat_expect_block_end(c);
            } else {
                pf__chat_fail(c, PF_ERROR_UNSUPPORTED, "chat template: line %d: the tag '%.*s' is not supported%s", name->line,
                              (int)name->n, name->s, ends ? "" : " (or closes no open block)");
            }
        } else {
            pf__chat_fail(c, PF_ERROR_FORMAT, "chat template: line %d: unexpected %s", t->line, pf__chat_token_text(c, t));
        }
        *tail = node;
        tail = &node->next;
    }
    c->depth--;
    return first;
}

/* ---- rendering ---- */

static pf__jv pf__chat_eval(pf__chat *c, pf__jnode *node);

static void pf__chat_step(pf__chat *c, int line) {
    if (++c->steps > PF__CHAT_MAX_STEPS)
        pf__chat_fail(c, PF_ERROR_INVALID_ARGUMENT, "chat template: line %d: runs more than %ld steps", line, PF__CHAT_MAX_STEPS);
}

static int pf__chat_truthy(pf__jv v) {
    switch (v.type) {
    case PF__JV_UNDEFINED:
    case PF__JV_NONE: return 0;
    case PF__JV_BOOL: return v.u.b;
    case PF__JV_INT: return v.u.i != 0;
    case PF__JV_FLOAT: return v.u.f != 0;
    case PF__JV_STRING: return v.u.str.n != 0;
    case PF__JV_LIST: return v.u.list->n != 0;
    case PF__JV_DICT: return v.u.dict->namespace_ || v.u.dict->n != 0;
    case PF__JV_FUNC: return 1;
    }
    return 0;
}

static int pf__jv_is_number(pf__jv v) { return v.type == PF__JV_INT || v.type == PF__JV_FLOAT || v.type == PF__JV_BOOL; }
static double pf__jv_number(pf__jv v) {
    return v.type == PF__JV_FLOAT ? v.u.f : v.type == PF__JV_INT ? (double)v.u.i : (double)v.u.b;
}

static int pf__jv_equal(pf__chat *c, pf__jv a, pf__jv b, int depth) {
    if (depth > PF__CHAT_MAX_VALUE_DEPTH) pf__chat_fail(c, PF_ERROR_INVALID_ARGUMENT, "chat template: a value nests deeper than %d", PF__CHAT_MAX_VALUE_DEPTH);
    if (pf__jv_is_number(a) && pf__jv_is_number(b)) {
        if (a.type != PF__JV_FLOAT && b.type != PF__JV_FLOAT)
            return (a.type == PF__JV_INT ? a.u.i : a.u.b) == (b.type == PF__JV_INT ? b.u.i : b.u.b);
        return pf__jv_number(a) == pf__jv_number(b);
    }
    if (a.type != b.type) return 0;
    switch (a.type) {
    case PF__JV_UNDEFINED:
    case PF__JV_NONE: return 1;
    case PF__JV_STRING: return a.u.str.n == b.u.str.n && !memcmp(a.u.str.s, b.u.str.s, a.u.str.n);
    case PF__JV_LIST:
        if (a.u.list->n != b.u.list->n || a.u.list->tuple != b.u.list->tuple) return 0;
        for (size_t i = 0; i < a.u.list->n; i++)
            if (!pf__jv_equal(c, a.u.list->items[i], b.u.list->items[i], depth + 1)) return 0;
        return 1;
    case PF__JV_DICT:
        if (a.u.dict->namespace_ || b.u.dict->namespace_) return a.u.dict == b.u.dict;
        if (a.u.dict->n != b.u.dict->n) return 0;
        for (size_t i = 0; i < a.u.dict->n; i++) {
            pf__jv *other = pf__jdict_find(c, b.u.dict, a.u.dict->keys[i]);
            if (!other || !pf__jv_equal(c, a.u.dict->values[i], *other, depth + 1)) return 0;
        }
        return 1;
    case PF__JV_FUNC: return a.u.func == b.u.func;
    default: return 0;
    }
}

/* The items a for loop or a filter walks: a list's items, a dict's keys, a string's characters. */
static pf__jlist *pf__chat_iterable(pf__chat *c, pf__jv v, int line) {
    if (v.type == PF__JV_LIST) return v.u.list;
    if (v.type == PF__JV_UNDEFINED) return pf__jv_new_list(c, 0, 0).u.list;
    if (v.type == PF__JV_DICT && !v.u.dict->namespace_) {
        pf__jv keys = pf__jv_new_list(c, v.u.dict->n, 0);
        for (size_t i = 0; i < v.u.dict->n; i++) keys.u.list->items[i] = v.u.dict->keys[i];
        return keys.u.list;
    }
    if (v.type == PF__JV_STRING) {
        pf__jv chars = pf__jv_new_list(c, pf__chat_cp_count(v.u.str.s, v.u.str.n), 0);
        size_t i = 0, k = 0, len;
        while (i < v.u.str.n) {
            pf__chat_cp(v.u.str.s, v.u.str.n, i, &len);
            chars.u.list->items[k++] = pf__jv_str(v.u.str.s + i, len);
            i += len;
        }
        return chars.u.list;
    }
    pf__chat_fail(c, PF_ERROR_INVALID_ARGUMENT, "chat template: line %d: '%s' object is not iterable", line, pf__jv_type_name(v));
}

static void pf__chat_undefined_fail(pf__chat *c, pf__jv v, int line) {
    pf__chat_fail(c, PF_ERROR_INVALID_ARGUMENT, "chat template: line %d: '%.*s' is undefined", line, (int)v.u.str.n, v.u.str.s);
}

/* obj.name / obj["name"]: a dict's entry; undefined where there is none. */
static pf__jv pf__chat_get_attr(pf__chat *c, pf__jv obj, const char *name, size_t n, int line) {
    if (obj.type == PF__JV_UNDEFINED) pf__chat_undefined_fail(c, obj, line);
    if (obj.type == PF__JV_DICT) {
        pf__jv *v = pf__jdict_find(c, obj.u.dict, pf__jv_str(name, n));
        if (v) return *v;
    }
    return pf__jv_undefined(name, n);
}

static int64_t pf__chat_index(pf__chat *c, pf__jv v, const char *what, int line) {
    if (v.type == PF__JV_INT) return v.u.i;
    if (v.type == PF__JV_BOOL) return v.u.b;
    pf__chat_fail(c, PF_ERROR_INVALID_ARGUMENT, "chat template: line %d: %s must be an integer, not %s", line, what, pf__jv_type_name(v));
}

static pf__jv pf__chat_get_item(pf__chat *c, pf__jv obj, pf__jv key, int line) {
    if (obj.type == PF__JV_UNDEFINED) pf__chat_undefined_fail(c, obj, line);
    if (obj.type == PF__JV_DICT) {
        pf__jv *v = pf__jdict_find(c, obj.u.dict, key);
        if (v) return *v;
        return key.type == PF__JV_STRING ? pf__jv_undefined(key.u.str.s, key.u.str.n) : pf__jv_undefined("item", 4);
    }
    if ((obj.type == PF__JV_LIST || obj.type == PF__JV_STRING) && (key.type == PF__JV_INT || key.type == PF__JV_BOOL)) {
        int64_t i = pf__chat_index(c, key, "an index", line);
        if (obj.type == PF__JV_LIST) {
            int64_t n = (int64_t)obj.u.list->n;
            if (i < 0) i += n;
            if (i < 0 || i >= n) return pf__jv_undefined("item", 4);
            return obj.u.list->items[i];
        }
        int64_t n = (int64_t)pf__chat_cp_count(obj.u.str.s, obj.u.str.n);
        if (i < 0) i += n;
        if (i < 0 || i >= n) return pf__jv_undefined("item", 4);
        size_t at = pf__chat_cp_offset(obj.u.str.s, obj.u.str.n, (size_t)i), len;
        pf__chat_cp(obj.u.str.s, obj.u.str.n, at, &len);
        return pf__jv_str(obj.u.str.s + at, len);
    }
    if (key.type == PF__JV_STRING) return pf__chat_get_attr(c, obj, key.u.str.s, key.u.str.n, line);
    return pf__jv_undefined("item", 4);
}

/* Python's slice indices for a sequence of n. */
static pf__jv pf__chat_slice(pf__chat *c, pf__jv obj, pf__jv start_v, pf__jv stop_v, pf__jv step_v, int line) {
    int is_string = obj.type == PF__JV_STRING;
    if (obj.type != PF__JV_LIST && !is_string)
        pf__chat_fail(c, PF_ERROR_INVALID_ARGUMENT, "chat template: line %d: cannot slice a %s", line, pf__jv_type_name(obj));
    int64_t n = is_string ? (int64_t)pf__chat_cp_count(obj.u.str.s, obj.u.str.n) : (int64_t)obj.u.list->n;
    int64_t step = step_v.type == PF__JV_NONE || step_v.type == PF__JV_UNDEFINED ? 1 : pf__chat_index(c, step_v, "a slice step", line);
    if (step == 0) pf__chat_fail(c, PF_ERROR_INVALID_ARGUMENT, "chat template: line %d: slice step cannot be zero", line);
    if (step < -n - 1) step = -n - 1; /* a step past the whole sequence takes at most one item */
    if (step > n + 1) step = n + 1;
    int64_t lo = step < 0 ? -1 : 0, hi = step < 0 ? n - 1 : n, start, stop;
    if (start_v.type == PF__JV_NONE || start_v.type == PF__JV_UNDEFINED) start = step < 0 ? hi : lo;
    else {
        start = pf__chat_index(c, start_v, "a slice index", line);
        if (start < 0) start = start + n < lo ? lo : start + n;
        else if (start > hi) start = hi;
    }
    if (stop_v.type == PF__JV_NONE || stop_v.type == PF__JV_UNDEFINED) stop = step < 0 ? lo : hi;
    else {
        stop = pf__chat_index(c, stop_v, "a slice index", line);
        if (stop < 0) stop = stop + n < lo ? lo : stop + n;
        else if (stop > hi) stop = hi;
    }
    size_t count = 0;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) count++;
    if (!is_string) {
        pf__jv out = pf__jv_new_list(c, count, obj.u.list->tuple);
        size_t k = 0;
        for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) out.u.list->items[k++] = obj.u.list->items[i];
        return out;
    }
    pf__jlist *chars = pf__chat_iterable(c, obj, line);
    pf__chat_buf b = {0};
    pf__chat_buf_add(c, &b, "", 0);
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step)
        pf__chat_buf_add(c, &b, chars->items[i].u.str.s, chars->items[i].u.str.n);
    return pf__chat_buf_value(&b);
}

/* Call arguments, evaluated: positional ones in order, keyword ones by name. */
typedef struct pf__chat_args {
    pf__jv pos[8];
    int num_pos;
    const char *kw_names[8];
    size_t kw_lens[8];
    pf__jv kw[8];
    int num_kw;
    int line;
    const char *callee; /* for messages */
} pf__chat_args;

static void pf__chat_eval_args(pf__chat *c, pf__jnode *arg, pf__chat_args *out, const char *callee, int line) {
    memset(out, 0, sizeof *out);
    out->line = line;
    out->callee = callee;
    for (; arg; arg = arg->next) {
        if (arg->kind == PF__JN_KWARG) {
            if (out->num_kw == 8) pf__chat_fail(c, PF_ERROR_UNSUPPORTED, "chat template: line %d: %s: too many arguments", line, callee);
            out->kw_names[out->num_kw] = arg->s;
            out->kw_lens[out->num_kw] = arg->n;
            out->kw[out->num_kw++] = pf__chat_eval(c, arg->a);
        } else {
            if (out->num_pos == 8) pf__chat_fail(c, PF_ERROR_UNSUPPORTED, "chat template: line %d: %s: too many arguments", line, callee);
            out->pos[out->num_pos++] = pf__chat_eval(c, arg);
        }
    }
}

/* Argument i, or the keyword argument name, or NULL. Unknown keywords are refused by
   pf__chat_args_check. */
static pf__jv *pf__chat_arg(pf__chat_args *a, int i, const char *name) {
    if (i >= 0 && i < a->num_pos) return &a->pos[i];
    for (int k = 0; k < a->num_kw; k++)
        if (name && a->kw_lens[k] == strlen(name) && !memcmp(a->kw_names[k], name, a->kw_lens[k])) return &a->kw[k];
    return NULL;
}

/* Refuses more than max positional arguments and keywords not in names (comma-separated). */
static void pf__chat_args_check(pf__chat *c, pf__chat_args *a, int max, const char *names) {
    if (a->num_pos > max)
        pf__chat_fail(c, PF_ERROR_UNSUPPORTED, "chat template: line %d: %s takes at most %d argument%s", a->line, a->callee, max, max == 1 ? "" : "s");
    for (int k = 0; k < a->num_kw; k++) {
        const char *p = names;
        int found = 0;
        while (p && *p) {
            const char *comma = strchr(p, ',');
            size_t len = comma ? (size_t)(comma - p) : strlen(p);
            if (len == a->kw_lens[k] && !memcmp(p, a->kw_names[k], len)) found = 1;
            p = comma ? comma + 1 : NULL;
        }
        if (!found)
            pf__chat_fail(c, PF_ERROR_UNSUPPORTED, "chat template: line %d: %s has no argument '%.*s' we support", a->line, a->callee,
                          (int)a->kw_lens[k], a->kw_names[k]);
    }
}

static pf__jv pf__chat_need_string(pf__chat *c, pf__jv v, const char *what, int line) {
    if (v.type != PF__JV_STRING)
        pf__chat_fail(c, PF_ERROR_INVALID_ARGUMENT, "chat template: line %d: %s needs a string, not %s", line, what, pf__jv_type_name(v));
    return v;
}

/* ASCII case mapping; other letters are refused rather than mapped wrongly. */
static pf__jv pf__chat_case(pf__chat *c, pf__jv s, int mode /* 0 lower, 1 upper, 2 capitalize, 3 title */, const char *what, int line) {
    char *p = (char *)pf__chat_alloc(c, s.u.str.n + 1);
    int word_start = 1;
    for (size_t i = 0; i < s.u.str.n; i++) {
        unsigned char ch = (unsigned char)s.u.str.s[i];
        if (ch >= 0x80)
            pf__chat_fail(c, PF_ERROR_UNSUPPORTED, "chat template: line %d: %s of non-ASCII text is not supported", line, what);
        int upper = mode == 1 || (mode == 2 && i == 0) || (mode == 3 && word_start);
        p[i] = (char)(upper ? (ch >= 'a' && ch <= 'z' ? ch - 32 : ch) : (ch >= 'A' && ch <= 'Z' ? ch + 32 : ch));
        word_start = !((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z'));
    }
    p[s.u.str.n] = 0;
    return pf__jv_str(p, s.u.str.n);
}

/* str.strip / lstrip / rstrip with optional chars (which: 1 left, 2 right, 3 both). */
static pf__jv pf__chat_strip(pf__chat *c, pf__jv s, pf__jv *chars, int which, int line) {
    size_t start = 0, end = s.u.str.n, len;
    if (chars && chars->type != PF__JV_NONE) {
        pf__chat_need_string(c, *chars, "strip's characters", line);
        for (int guard = 0; which & 1 && start < end; guard++) {
            uint32_t cp = pf__chat_cp(s.u.str.s, end, start, &len);
            size_t k = 0, l2;
            int found = 0;
            while (k < chars->u.str.n) {
                if (pf__chat_cp(chars->u.str.s, chars->u.str.n, k, &l2) == cp && len == l2 && !memcmp(chars->u.str.s + k, s.u.str.s + start, len)) found = 1;
                k += l2;
            }
            if (!found) break;
            start += len;
        }
        while (which & 2 && end > start) {
            size_t back = end - 1;
            while (back > start && ((unsigned char)s.u.str.s[back] & 0xC0) == 0x80) back--;
            size_t k = 0, l2;
            int found = 0;
            while (k < chars->u.str.n) {
                pf__chat_cp(chars->u.str.s, chars->u.str.n, k, &l2);
                if (l2 == end - back && !memcmp(chars->u.str.s + k, s.u.str.s + back, l2)) found = 1;
                k += l2;
            }
            if (!found) break;
            end = back;
        }
        return pf__jv_str(s.u.str.s + start, end - start);
    }
    if (which & 2) end = pf__chat_rstrip_len(s.u.str.s, end);
    if (which & 1) start = pf__chat_lstrip_len(s.u.str.s, end);
    return pf__jv_str(s.u.str.s + start, end - start);
}

static pf__jv pf__chat_split(pf__chat *c, pf__jv s, pf__jv *sep, pf__jv *maxsplit_v, int line) {
    int64_t maxsplit = maxsplit_v ? pf__chat_index(c, *maxsplit_v, "split's maxsplit", line) : -1;
    pf__jv parts[1];
    (void)parts;
    size_t count = 0, cap = 8;
    pf__jv *items = (pf__jv *)pf__chat_array(c, cap, sizeof *items);
#define PF__CHAT_PUSH_PART(v)                                                            \
    do {                                                                                 \
        if (count == cap) {                                                              \
            pf__jv *grown = (pf__jv *)pf__chat_array(c, cap * 2, sizeof *grown);         \
            memcpy(grown, items, count * sizeof *items);                                 \
            items = grown;                                                               \
            cap *= 2;                                                                    \
        }                                                                                \
        items[count++] = (v);                                                            \
    } while (0)
    const char *p = s.u.str.s;
    size_t n = s.u.str.n, i = 0;
    if (!sep || sep->type == PF__JV_NONE) { /* runs of whitespace, no empty parts */
        size_t len;
        for (;;) {
            while (i < n && pf__chat_is_space(pf__chat_cp(p, n, i, &len))) i += len;
            if (i >= n) break;
            if (maxsplit >= 0 && (int64_t)count == maxsplit) {
                PF__CHAT_PUSH_PART(pf__jv_str(p + i, pf__chat_rstrip_len(p + i, n - i)));
                break;
            }
            size_t start = i;
            while (i < n && !pf__chat_is_space(pf__chat_cp(p, n, i, &len))) i += len;
            PF__CHAT_PUSH_PART(pf__jv_str(p + start, i - start));
        }
    } else {
        pf__chat_need_string(c, *sep, "split's separator", line);
        if (!sep->u.str.n) pf__chat_fail(c, PF_ERROR_INVALID_ARGUMENT, "chat template: line %d: split: empty separator", line);
        size_t start = 0;
        for (i = 0; i + sep->u.str.n <= n;) {
            if ((maxsplit < 0 || (int64_t)count < maxsplit) && !memcmp(p + i, sep->u.str.s, sep->u.str.n)) {
                PF__CHAT_PUSH_PART(pf__jv_str(p + start, i - start));
                i += sep->u.str.n;
                start = i;
            } else {
                i++;
            }
        }
        PF__CHAT_PUSH_PART(pf__jv_str(p + start, n - start));
    }
#undef PF__CHAT_PUSH_PART
    pf__jv out = pf__jv_new_list(c, 0, 0);
    out.u.list->n = count;
    out.u.list->items = items;
    return out;
}

static pf__jv pf__chat_replace(pf__chat *c, pf__jv s, pf__jv old, pf__jv new_, pf__jv *count_v, int line) {
    pf__chat_need_string(c, old, "replace", line);
    pf__chat_need_string(c, new_, "replace", line);
    int64_t count = count_v ? pf__chat_index(c, *count_v, "replace's count", line) : -1;
    if (!old.u.str.n) pf__chat_fail(c, PF_ERROR_UNSUPPORTED, "chat template: line %d: replace of an empty string is not supported", line);
    pf__chat_buf b = {0};
    pf__chat_buf_add(c, &b, "", 0);
    size_t i = 0, done = 0;
    while (i < s.u.str.n) {
        if ((count < 0 || (int64_t)done < count) && i + old.u.str.n <= s.u.str.n && !memcmp(s.u.str.s + i, old.u.str.s, old.u.str.n)) {
            pf__chat_buf_add(c, &b, new_.u.str.s, new_.u.str.n);
            i += old.u.str.n;
            done++;
        } else {
            pf__chat_buf_add(c, &b, s.u.str.s + i, 1);
            i++;
        }
    }
    return pf__chat_buf_value(&b);
}

/* The methods of strings and dicts that templates call: name(args) on obj. */
static pf__jv pf__chat_method(pf__chat *c, pf__jv obj, const char *name, size_t n, pf__jnode *arg_nodes, int line) {
    char callee[64];
    pf__chat_args a;
    snprintf(callee, sizeof callee, "%.*s()", (int)(n < 40 ? n : 40), name);
#define PF__IS(m) (n == strlen(m) && !memcmp(name, m, n))
    if (obj.type == PF__JV_UNDEFINED) pf__chat_undefined_fail(c, obj, line);
    pf__chat_eval_args(c, arg_nodes, &a, callee, line);
    if (obj.type == PF__JV_STRING) {
        if (PF__IS("strip") || PF__IS("lstrip") || PF__IS("rstrip")) {
            pf__chat_args_check(c, &a, 1, "");
            return pf__chat_strip(c, obj, pf__chat_arg(&a, 0, NULL), PF__IS("strip") ? 3 : PF__IS("lstrip") ? 1 : 2, line);
        }
        if (PF__IS("split")) {
            pf__chat_args_check(c, &a, 2, "sep,maxsplit");
            return pf__chat_split(c, obj, pf__chat_arg(&a, 0, "sep"), pf__chat_arg(&a, 1, "maxsplit"), line);
        }
        if (PF__IS("startswith") || PF__IS("endswith")) {
            pf__chat_args_check(c, &a, 1, "");
            pf__jv *x = pf__chat_arg(&a, 0, NULL);
            if (!x) pf__chat_fail(c, PF_ERROR_INVALID_ARGUMENT, "chat template: line %d: %s needs an argument", line, callee);
            pf__jlist *options = NULL;
            if (x->type == PF__JV_LIST && x->u.list->tuple) options = x->u.list;
            for (size_t k = 0; k < (options ? options->n : 1); k++) {
                pf__jv p = pf__chat_need_string(c, options ? options->items[k] : *x, callee, line);
                if (p.u.str.n <= obj.u.str.n &&
                    !memcmp(obj.u.str.s + (PF__IS("endswith") ? obj.u.str.n - p.u.str.n : 0), p.u.str.s, p.u.str.n))
                    return pf__jv_bool(1);
            }
            return pf__jv_bool(0);
        }
        if (PF__IS("upper") || PF__IS("lower") || PF__IS("capitalize") || PF__IS("title")) {
            pf__chat_args_check(c, &a, 0, "");
            return pf__chat_case(c, obj, PF__IS("lower") ? 0 : PF__IS("upper") ? 1 : PF__IS("capitalize") ? 2 : 3, callee, line);
        }
        if (PF__IS("replace")) {
            pf__chat_args_check(c, &a, 3, "");
            if (a.num_pos < 2) pf__chat_fail(c, PF_ERROR_INVALID_ARGUMENT, "chat template: line %d: replace() needs two arguments", line);
            return pf__chat_replace(c, obj, a.pos[0], a.pos[1], pf__chat_arg(&a, 2, NULL), line);
        }
    } else if (obj.type == PF__JV_DICT && !obj.u.dict->namespace_) {
        if (PF__IS("items") || PF__IS("keys") || PF__IS("values")) {
            pf__chat_args_check(c, &a, 0, "");
            pf__jv out = pf__jv_new_list(c, obj.u.dict->n, 0);
            for (size_t i = 0; i < obj.u.dict->n; i++) {
                if (PF__IS("items")) {
                    pf__jv pair = pf__jv_new_list(c, 2, 1);
                    pair.u.list->items[0] = obj.u.dict->keys[i];
                    pair.u.list->items[1] = obj.u.dict->values[i];
                    out.u.list->items[i] = pair;
                } else {
                    out.u.list->items[i] = PF__IS("keys") ? obj.u.dict->keys[i] : obj.u.dict->values[i];
                }
            }
            return out;
        }
        if (PF__IS("get")) {
            pf__chat_args_check(c, &a, 2, "");
            if (a.num_pos < 1) pf__chat_fail(c, PF_ERROR_INVALID_ARGUMENT, "chat template: line %d: get() needs a key", line);
            pf__jv *v = pf__jdict_find(c, obj.u.dict, a.pos[0]);
            return v ? *v : a.num_pos > 1 ? a.pos[1] : pf__jv_none();
        }
    }
#undef PF__IS
    pf__chat_fail(c, PF_ERROR_UNSUPPORTED, "chat template: line %d: the method %.*s of a %s is not supported", line, (int)n, name,
                  pf__jv_type_name(obj));
}

static int pf__chat_is(const char *name, size_t n, const char *what) { return n == strlen(what) && !memcmp(name, what, n); }

/* strftime_now(format) on the options' date (or now): the directives templates use. */
static pf__jv pf__chat_strftime(pf__chat *c, pf__jv format, int line) {
    static const char *const months[] = {"January", "February", "March", "April", "May", "June", "July", "August",
                                         "September", "October", "November", "December"};
    static const char *const days[] = {"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"};
    int year, month, day, hour = 0, minute = 0, second = 0;
    pf__chat_need_string(c, format, "strftime_now", line);
    if (c->date) {
        int used = 0;
        if (sscanf(c->date, "%4d-%2d-%2d%n", &year, &month, &day, &used) != 3 ||
            (c->date[used] && sscanf(c->date + used, " %2d:%2d:%2d", &hour, &minute, &second) < 2) || month < 1 ||
            month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60 || year < 1)
            pf__chat_fail(c, PF_ERROR_INVALID_ARGUMENT, "chat template: the date \"%.40s\" is not YYYY-MM-DD [HH:MM[:SS]]", c->date);
    } else {
        time_t now = time(NULL);
        struct tm tm;
        if (!localtime_r(&now, &tm)) pf__chat_fail(c, PF_ERROR_INVALID_ARGUMENT, "chat template: the local time is unknown");
        year = tm.tm_year + 1900, month = tm.tm_mon + 1, day = tm.tm_mday;
        hour = tm.tm_hour, minute = tm.tm_min, second = tm.tm_sec;
    }
    /* days since 1970-01-01 (proleptic Gregorian), for the weekday and the day of the year */
    int y = month <= 2 ? year - 1 : year;
    long era = (y >= 0 ? y : y - 399) / 400;
    long yoe = y - era * 400, mp = (month + 9) % 12, doy = (153 * mp + 2) / 5 + day - 1;
    long days_since = era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719468;
    int weekday = (int)(((days_since % 7) + 7 + 4) % 7); /* 1970-01-01 was a Thursday */
    static const int before[] = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334};
    int leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    int yday = before[month - 1] + day + (leap && month > 2);
    pf__chat_buf b = {0};
    pf__chat_buf_add(c, &b, "", 0);
    for (size_t i = 0; i < format.u.str.n; i++) {
        char ch = format.u.str.s[i], part[32];
        if (ch != '%' || i + 1 == format.u.str.n) {
            pf__chat_buf_add(c, &b, &ch, 1);
            continue;
        }
        switch (format.u.str.s[++i]) {
        case 'Y': snprintf(part, sizeof part, "%d", year); break;
        case 'y': snprintf(part, sizeof part, "%02d", year % 100); break;
        case 'm': snprintf(part, sizeof part, "%02d", month); break;
        case 'd': snprintf(part, sizeof part, "%02d", day); break;
        case 'e': snprintf(part, sizeof part, "%2d", day); break;
        case 'j': snprintf(part, sizeof part, "%03d", yday); break;
        case 'H': snprintf(part, sizeof part, "%02d", hour); break;
        case 'I': snprintf(part, sizeof part, "%02d", hour % 12 ? hour % 12 : 12); break;
        case 'p': snprintf(part, sizeof part, "%s", hour < 12 ? "AM" : "PM"); break;
        case 'M': snprintf(part, sizeof part, "%02d", minute); break;
        case 'S': snprintf(part, sizeof part, "%02d", second); break;
        case 'B': snprintf(part, sizeof part, "%s", months[month - 1]); break;
        case 'b': snprintf(part, sizeof part, "%.3s", months[month - 1]); break;
        case 'A': snprintf(part, sizeof part, "%s", days[weekday]); break;
        case 'a': snprintf(part, sizeof part, "%.3s", days[weekday]); break;
        case '%': snprintf(part, sizeof part, "%%"); break;
        default:
            pf__chat_fail(c, PF_ERROR_UNSUPPORTED, "chat template: line %d: strftime_now: the directive %%%c is not supported", line,
                          format.u.str.s[i]);
        }
        pf__chat_buf_cstr(c, &b, part);
    }
    return pf__chat_buf_value(&b);
}

static pf__jv pf__chat_call(pf__chat *c, pf__jnode *node) {
    pf__jnode *callee = node->a;
    if (callee->kind == PF__JN_ATTR) {
        pf__jv obj = pf__chat_eval(c, callee->a);
        return pf__chat_method(c, obj, callee->s, callee->n, node->b, node->line);
    }
    pf__jv f = pf__chat_eval(c, callee);
    if (f.type != PF__JV_FUNC) {
        if (f.type == PF__JV_UNDEFINED)
            pf__chat_fail(c, PF_ERROR_UNSUPPORTED, "chat template: line %d: the function '%.*s' is not supported", node->line, (int)f.u.str.n, f.u.str.s);
        pf__chat_fail(c, PF_ERROR_INVALID_ARGUMENT, "chat template: line %d: a %s is not callable", node->line, pf__jv_type_name(f));
    }
    pf__chat_args a;
    static const char *const names[] = {"", "raise_exception()", "strftime_now()", "namespace()", "dict()", "range()"};
    pf__chat_eval_args(c, node->b, &a, names[f.u.func], node->line);
    switch (f.u.func) {
    case PF__FN_RAISE: {
        pf__jv message = a.num_pos ? pf__chat_str(c, a.pos[0]) : pf__jv_cstr("");
        pf__chat_fail(c, PF_ERROR_INVALID_ARGUMENT, "chat template: %.*s", (int)(message.u.str.n < 400 ? message.u.str.n : 400), message.u.str.s);
    }
    case PF__FN_STRFTIME:
        pf__chat_args_check(c, &a, 1, "");
        if (!a.num_pos) pf__chat_fail(c, PF_ERROR_INVALID_ARGUMENT, "chat template: line %d: strftime_now() needs a format", node->line);
        return pf__chat_strftime(c, a.pos[0], node->line);
    case PF__FN_NAMESPACE:
    case PF__FN_DICT: {
        if (a.num_pos > (f.u.func == PF__FN_DICT ? 1 : 1))
            pf__chat_fail(c, PF_ERROR_UNSUPPORTED, "chat template: line %d: %s takes keyword arguments", node->line, a.callee);
        pf__jv d = pf__jv_new_dict(c, f.u.func == PF__FN_NAMESPACE);
        if (a.num_pos) {
            if (a.pos[0].type != PF__JV_DICT)
                pf__chat_fail(c, PF_ERROR_UNSUPPORTED, "chat template: line %d: %s of a %s is not supported", node->line, a.callee, pf__jv_type_name(a.pos[0]));
            for (size_t i = 0; i < a.pos[0].u.dict->n; i++) pf__jdict_set(c, d.u.dict, a.pos[0].u.dict->keys[i], a.pos[0].u.dict->values[i]);
        }
        for (int k = 0; k < a.num_kw; k++) pf__jdict_set(c, d.u.dict, pf__jv_str(a.kw_names[k], a.kw_lens[k]), a.kw[k]);
        return d;
    }
    case PF__FN_RANGE: {
        pf__chat_args_check(c, &a, 3, "");
        int64_t start = 0, stop, step = 1;
        if (a.num_pos == 0) pf__chat_fail(c, PF_ERROR_INVALID_ARGUMENT, "chat template: line %d: range() needs an argument", node->line);
        if (a.num_pos == 1) stop = pf__chat_index(c, a.pos[0], "range's stop", node->line);
        else {
            start = pf__chat_index(c, a.pos[0], "range's start", node->line);
            stop = pf__chat_index(c, a.pos[1], "range's stop", node->line);
            if (a.num_pos == 3) step = pf__chat_index(c, a.pos[2], "range's step", node->line);
        }
        if (step == 0) pf__chat_fail(c, PF_ERROR_INVALID_ARGUMENT, "chat template: line %d: range() step must not be zero", node->line);
        double count_f = step > 0 ? ((double)stop - (double)start) / (double)step : ((double)start - (double)stop) / (double)-step;
        if (count_f > 1e7) pf__chat_fail(c, PF_ERROR_INVALID_ARGUMENT, "chat template: line %d: range() of more than 10^7 items", node->line);
        size_t count = 0;
        for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) count++;
        pf__jv out = pf__jv_new_list(c, count, 0);
        size_t k = 0;
        for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) out.u.list->items[k++] = pf__jv_int(i);
        return out;
    }
    }
    pf__chat_fail(c, PF_ERROR_UNSUPPORTED, "chat template: line %d: an unknown function", node->line);
}

/* The value of attribute attr of each item (a dotted path like "a.b" walks dicts). */
static pf__jv pf__chat_attribute_path(pf__chat *c, pf__jv item, pf__jv attr, int line) {
    if (attr.type == PF__JV_INT) return pf__chat_get_item(c, item, attr, line);
    pf__chat_need_string(c, attr, "attribute", line);
    size_t start = 0;
    for (size_t i = 0; i <= attr.u.str.n; i++)
        if (i == attr.u.str.n || attr.u.str.s[i] == '.') {
            if (item.type == PF__JV_UNDEFINED) return item;
            item = pf__chat_get_item(c, item, pf__jv_str(attr.u.str.s + start, i - start), line);
            start = i + 1;
        }
    return item;
}

static int pf__chat_test(pf__chat *c, pf__jv v, const char *name, size_t n, pf__chat_args *a, int line);

static pf__jv pf__chat_filter(pf__chat *c, pf__jnode *node, pf__jv v) {
    const char *name = node->s;
    size_t n = node->n;
    int line = node->line;
    char callee[64];
    pf__chat_args a;
    snprintf(callee, sizeof callee, "the filter %.*s", (int)(n < 40 ? n : 40), name);
    pf__chat_eval_args(c, node->b, &a, callee, line);
#define PF__IS(f) pf__chat_is(name, n, f)
    if (PF__IS("default") || PF__IS("d")) {
        pf__chat_args_check(c, &a, 2, "default_value,boolean");
        pf__jv *fallback = pf__chat_arg(&a, 0, "default_value"), *boolean = pf__chat_arg(&a, 1, "boolean");
        int use = v.type == PF__JV_UNDEFINED || (boolean && pf__chat_truthy(*boolean) && !pf__chat_truthy(v));
        return use ? (fallback ? *fallback : pf__jv_cstr("")) : v;
    }
    /* an undefined value reads as "" in the string filters and as empty in the others, as jinja2's
       Undefined converts; tojson and arithmetic refuse it */
    if (PF__IS("trim")) {
        pf__chat_args_check(c, &a, 1, "chars");
        return pf__chat_strip(c, pf__chat_str(c, v), pf__chat_arg(&a, 0, "chars"), 3, line);
    }
    if (PF__IS("length") || PF__IS("count")) {
        pf__chat_args_check(c, &a, 0, "");
        if (v.type == PF__JV_UNDEFINED) return pf__jv_int(0);
        if (v.type == PF__JV_STRING) return pf__jv_int((int64_t)pf__chat_cp_count(v.u.str.s, v.u.str.n));
        if (v.type == PF__JV_LIST) return pf__jv_int((int64_t)v.u.list->n);
        if (v.type == PF__JV_DICT && !v.u.dict->namespace_) return pf__jv_int((int64_t)v.u.dict->n);
        pf__chat_fail(c, PF_ERROR_INVALID_ARGUMENT, "chat template: line %d: object of type '%s' has no len()", line, pf__jv_type_name(v));
    }
    if (PF__IS("tojson")) {
        pf__chat_args_check(c, &a, 1, "indent,sort_keys,ensure_ascii");
        pf__jv *indent = pf__chat_arg(&a, 0, "indent"), *sort = pf__chat_arg(&a, -1, "sort_keys"), *ascii = pf__chat_arg(&a, -1, "ensure_ascii");
        if (ascii && pf__chat_truthy(*ascii))
            pf__chat_fail(c, PF_ERROR_UNSUPPORTED, "chat template: line %d: tojson(ensure_ascii=true) is not supported", line);
        int width = -1;
        if (indent && indent->type != PF__JV_NONE) {
            int64_t w = pf__chat_index(c, *indent, "tojson's indent", line);
            width = w < 0 ? 0 : w > 64 ? 64 : (int)w;
        }
        pf__chat_buf b = {0};
        pf__chat_buf_add(c, &b, "", 0);
        pf__chat_json(c, &b, v, width, sort && pf__chat_truthy(*sort), 0);
        return pf__chat_buf_value(&b);
    }
    if (PF__IS("upper") || PF__IS("lower") || PF__IS("capitalize") || PF__IS("title")) {
        pf__chat_args_check(c, &a, 0, "");
        return pf__chat_case(c, pf__chat_str(c, v), PF__IS("lower") ? 0 : PF__IS("upper") ? 1 : PF__IS("capitalize") ? 2 : 3, callee, line);
    }
    if (PF__IS("string")) {
        pf__chat_args_check(c, &a, 0, "");
        return pf__chat_str(c, v);
    }
    if (PF__IS("safe") || PF__IS("e") || PF__IS("escape")) {
        if (!PF__IS("safe")) pf__chat_fail(c, PF_ERROR_UNSUPPORTED, "chat template: line %d: %s is not supported", line, callee);
        return v;
    }
    if (PF__IS("first") || PF__IS("last")) {
        pf__chat_args_check(c, &a, 0, "");
        pf__jlist *items = pf__chat_iterable(c, v, line);
        if (!items->n) return pf__jv_undefined("item", 4);
        return items->items[PF__IS("first") ? 0 : items->n - 1];
    }
    if (PF__IS("list")) {
        pf__chat_args_check(c, &a, 0, "");
        pf__jlist *items = pf__chat_iterable(c, v, line);
        pf__jv out = pf__jv_new_list(c, items->n, 0);
        if (items->n) memcpy(out.u.list->items, items->items, items->n * sizeof *items->items);
        return out;
    }
    if (PF__IS("join")) {
        pf__chat_args_check(c, &a, 2, "d,attribute");
        pf__jv *sep = pf__chat_arg(&a, 0, "d"), *attr = pf__chat_arg(&a, 1, "attribute");
        pf__jlist *items = pf__chat_iterable(c, v, line);
        pf__chat_buf b = {0};
        pf__chat_buf_add(c, &b, "", 0);
        pf__jv sep_s = sep ? pf__chat_str(c, *sep) : pf__jv_cstr("");
        for (size_t i = 0; i < items->n; i++) {
            if (i) pf__chat_buf_add(c, &b, sep_s.u.str.s, sep_s.u.str.n);
            pf__jv item = attr ? pf__chat_attribute_path(c, items->items[i], *attr, line) : items->items[i];
            pf__chat_str_into(c, &b, item, 0);
        }
        return pf__chat_buf_value(&b);
    }
    if (PF__IS("items")) {
        pf__chat_args_check(c, &a, 0, "");
        if (v.type == PF__JV_UNDEFINED) return pf__jv_new_list(c, 0, 0);
        if (v.type != PF__JV_DICT || v.u.dict->namespace_)
            pf__chat_fail(c, PF_ERROR_INVALID_ARGUMENT, "chat template: line %d: items needs a dict, not %s", line, pf__jv_type_name(v));
        return pf__chat_method(c, v, "items", 5, NULL, line);
    }
    if (PF__IS("replace")) {
        pf__chat_args_check(c, &a, 3, "");
        if (a.num_pos < 2) pf__chat_fail(c, PF_ERROR_INVALID_ARGUMENT, "chat template: line %d: replace needs two arguments", line);
        return pf__chat_replace(c, pf__chat_str(c, v), a.pos[0], a.pos[1], pf__chat_arg(&a, 2, NULL), line);
    }
    if (PF__IS("int")) {
        pf__chat_args_check(c, &a, 1, "default");
        if (v.type == PF__JV_INT) return v;
        if (v.type == PF__JV_UNDEFINED || v.type == PF__JV_NONE) return pf__jv_int(0);
        if (v.type == PF__JV_BOOL) return pf__jv_int(v.u.b);
        if (v.type == PF__JV_FLOAT && v.u.f > -9e18 && v.u.f < 9e18) return pf__jv_int((int64_t)v.u.f);
        pf__chat_fail(c, PF_ERROR_UNSUPPORTED, "chat template: line %d: int of a %s is not supported", line, pf__jv_type_name(v));
    }
    if (PF__IS("selectattr") || PF__IS("rejectattr") || PF__IS("select") || PF__IS("reject")) {
        int by_attr = PF__IS("selectattr") || PF__IS("rejectattr"), keep_if = PF__IS("selectattr") || PF__IS("select");
        pf__jlist *items = pf__chat_iterable(c, v, line);
        if (a.num_kw) pf__chat_fail(c, PF_ERROR_UNSUPPORTED, "chat template: line %d: %s with keyword arguments is not supported", line, callee);
        if (by_attr && a.num_pos < 1) pf__chat_fail(c, PF_ERROR_INVALID_ARGUMENT, "chat template: line %d: %s needs an attribute", line, callee);
        int first_test = by_attr ? 1 : 0;
        pf__jv out = pf__jv_new_list(c, items->n, 0);
        size_t count = 0;
        pf__chat_args test_args;
        memset(&test_args, 0, sizeof test_args);
        test_args.line = line;
        test_args.callee = callee;
        for (int k = first_test + 1; k < a.num_pos; k++) test_args.pos[test_args.num_pos++] = a.pos[k];
        if (a.num_pos > first_test) pf__chat_need_string(c, a.pos[first_test], "the test name", line);
        for (size_t i = 0; i < items->n; i++) {
            pf__jv x = by_attr ? pf__chat_attribute_path(c, items->items[i], a.pos[0], line) : items->items[i];
            int pass = a.num_pos > first_test ? pf__chat_test(c, x, a.pos[first_test].u.str.s, a.pos[first_test].u.str.n, &test_args, line)
                                              : pf__chat_truthy(x);
            if (pass == keep_if) out.u.list->items[count++] = items->items[i];
        }
        out.u.list->n = count;
        return out;
    }
    if (PF__IS("map")) {
        pf__chat_args_check(c, &a, 0, "attribute,default");
        pf__jv *attr = pf__chat_arg(&a, -1, "attribute"), *fallback = pf__chat_arg(&a, -1, "default");
        if (!attr) pf__chat_fail(c, PF_ERROR_UNSUPPORTED, "chat template: line %d: map without attribute= is not supported", line);
        pf__jlist *items = pf__chat_iterable(c, v, line);
        pf__jv out = pf__jv_new_list(c, items->n, 0);
        for (size_t i = 0; i < items->n; i++) {
            pf__jv x = pf__chat_attribute_path(c, items->items[i], *attr, line);
            out.u.list->items[i] = x.type == PF__JV_UNDEFINED && fallback ? *fallback : x;
        }
        return out;
    }
    if (PF__IS("abs")) {
        pf__chat_args_check(c, &a, 0, "");
        if (v.type == PF__JV_UNDEFINED) pf__chat_undefined_fail(c, v, line);
        if (v.type == PF__JV_INT && v.u.i != INT64_MIN) return pf__jv_int(v.u.i < 0 ? -v.u.i : v.u.i);
        if (v.type == PF__JV_FLOAT) return pf__jv_float(fabs(v.u.f));
        pf__chat_fail(c, PF_ERROR_INVALID_ARGUMENT, "chat template: line %d: abs of a %s", line, pf__jv_type_name(v));
    }
#undef PF__IS
    pf__chat_fail(c, PF_ERROR_UNSUPPORTED, "chat template: line %d: the filter '%.*s' is not supported", line, (int)n, name);
}

static int pf__chat_compare(pf__chat *c, int op, pf__jv a, pf__jv b, int line);

static int pf__chat_contains(pf__chat *c, pf__jv container, pf__jv item, int line) {
    if (container.type == PF__JV_UNDEFINED) return 0;
    if (container.type == PF__JV_STRING) {
        pf__chat_need_string(c, item, "'in <string>'", line);
        if (!item.u.str.n) return 1;
        for (size_t i = 0; i + item.u.str.n <= container.u.str.n; i++)
            if (!memcmp(container.u.str.s + i, item.u.str.s, item.u.str.n)) return 1;
        return 0;
    }
    if (container.type == PF__JV_LIST) {
        for (size_t i = 0; i < container.u.list->n; i++)
            if (pf__jv_equal(c, container.u.list->items[i], item, 0)) return 1;
        return 0;
    }
    if (container.type == PF__JV_DICT && !container.u.dict->namespace_) return pf__jdict_find(c, container.u.dict, item) != NULL;
    pf__chat_fail(c, PF_ERROR_INVALID_ARGUMENT, "chat template: line %d: argument of type '%s' is not iterable", line, pf__jv_type_name(container));
}

static int pf__chat_test(pf__chat *c, pf__jv v, const char *name, size_t n, pf__chat_args *a, int line) {
#define PF__IS(t) pf__chat_is(name, n, t)
    pf__jv *arg = pf__chat_arg(a, 0, NULL);
    if (PF__IS("defined")) return v.type != PF__JV_UNDEFINED;
    if (PF__IS("undefined")) return v.type == PF__JV_UNDEFINED;
    if (PF__IS("none")) return v.type == PF__JV_NONE;
    if (PF__IS("string")) return v.type == PF__JV_STRING;
    if (PF__IS("mapping")) return v.type == PF__JV_DICT && !v.u.dict->namespace_;
    if (PF__IS("iterable")) return v.type == PF__JV_STRING || v.type == PF__JV_LIST || (v.type == PF__JV_DICT && !v.u.dict->namespace_) || v.type == PF__JV_UNDEFINED;
    if (PF__IS("sequence")) return v.type == PF__JV_STRING || v.type == PF__JV_LIST || (v.type == PF__JV_DICT && !v.u.dict->namespace_) || v.type == PF__JV_UNDEFINED;
    if (PF__IS("number")) return v.type == PF__JV_INT || v.type == PF__JV_FLOAT || v.type == PF__JV_BOOL;
    if (PF__IS("integer")) return v.type == PF__JV_INT;
    if (PF__IS("float")) return v.type == PF__JV_FLOAT;
    if (PF__IS("boolean")) return v.type == PF__JV_BOOL;
    if (PF__IS("true")) return v.type == PF__JV_BOOL && v.u.b;
    if (PF__IS("false")) return v.type == PF__JV_BOOL && !v.u.b;
    if (PF__IS("callable")) return v.type == PF__JV_FUNC;
    if (PF__IS("odd") || PF__IS("even") || PF__IS("divisibleby")) {
        int64_t x = pf__chat_index(c, v, "the value tested", line);
        if (PF__IS("divisibleby")) {
            if (!arg) pf__chat_fail(c, PF_ERROR_INVALID_ARGUMENT, "chat template: line %d: divisibleby needs a number", line);
            int64_t d = pf__chat_index(c, *arg, "divisibleby's argument", line);
            if (d == 0) pf__chat_fail(c, PF_ERROR_INVALID_ARGUMENT, "chat template: line %d: divisibleby 0", line);
            return d == -1 || x % d == 0;
        }
        return (x % 2 != 0) == PF__IS("odd");
    }
    if (PF__IS("lower") || PF__IS("upper")) {
        if (v.type != PF__JV_STRING) return 0;
        pf__jv mapped = pf__chat_case(c, v, PF__IS("upper"), "the test lower/upper", line);
        int has_letter = 0;
        for (size_t i = 0; i < v.u.str.n; i++) has_letter |= (v.u.str.s[i] | 32) >= 'a' && (v.u.str.s[i] | 32) <= 'z';
        return has_letter && !memcmp(mapped.u.str.s, v.u.str.s, v.u.str.n);
    }
    static const char *const comparisons[] = {"eq", "equalto", "==", "ne", "!=", "lt", "lessthan", "<", "le", "<=", "gt", "greaterthan", ">", "ge", ">=", "in", "sameas"};
    static const int ops[] = {PF__OP_EQ, PF__OP_EQ, PF__OP_EQ, PF__OP_NE, PF__OP_NE, PF__OP_LT, PF__OP_LT, PF__OP_LT, PF__OP_LE, PF__OP_LE,
                              PF__OP_GT, PF__OP_GT, PF__OP_GT, PF__OP_GE, PF__OP_GE, PF__OP_IN, PF__OP_EQ};
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
        if (PF__IS(comparisons[k])) {
            if (!arg) pf__chat_fail(c, PF_ERROR_INVALID_ARGUMENT, "chat template: line %d: the test %s needs an argument", line, comparisons[k]);
            if (ops[k] == PF__OP_IN) return pf__chat_contains(c, *arg, v, line);
            if (k == sizeof ops / sizeof ops[0] - 1 && v.type != arg->type) return 0; /* sameas: same type and value */
            return pf__chat_compare(c, ops[k], v, *arg, line);
        }
#undef PF__IS
    pf__chat_fail(c, PF_ERROR_UNSUPPORTED, "chat template: line %d: the test '%.*s' is not supported", line, (int)n, name);
}

static int pf__chat_compare(pf__chat *c, int op, pf__jv a, pf__jv b, int line) {
    if (op == PF__OP_EQ) return pf__jv_equal(c, a, b, 0);
    if (op == PF__OP_NE) return !pf__jv_equal(c, a, b, 0);
    if (op == PF__OP_IN) return pf__chat_contains(c, b, a, line);
    if (op == PF__OP_NOT_IN) return !pf__chat_contains(c, b, a, line);
    int cmp;
    if (pf__jv_is_number(a) && pf__jv_is_number(b)) {
        if (a.type == PF__JV_INT && b.type == PF__JV_INT) cmp = a.u.i < b.u.i ? -1 : a.u.i > b.u.i;
        else {
            double x = pf__jv_number(a), y = pf__jv_number(b);
            if (isnan(x) || isnan(y)) return 0;
            cmp = x < y ? -1 : x > y;
        }
    } else if (a.type == PF__JV_STRING && b.type == PF__JV_STRING) {
        size_t m = a.u.str.n < b.u.str.n ? a.u.str.n : b.u.str.n;
        cmp = memcmp(a.u.str.s, b.u.str.s, m);
        if (!cmp) cmp = a.u.str.n < b.u.str.n ? -1 : a.u.str.n > b.u.str.n;
    } else {
        pf__chat_fail(c, PF_ERROR_INVALID_ARGUMENT, "chat template: line %d: cannot order a %s and a %s", line, pf__jv_type_name(a), pf__jv_type_name(b));
    }
    return op == PF__OP_LT ? cmp < 0 : op == PF__OP_LE ? cmp <= 0 : op == PF__OP_GT ? cmp > 0 : cmp >= 0;
}

/* Whether x * y leaves int64_t (dividing instead of multiplying). */
static int pf__chat_mul_overflows(int64_t x, int64_t y) {
    if (x == 0 || y == 0) return 0;
    if (x > 0) return y > 0 ? x > INT64_MAX / y : y < INT64_MIN / x;
    return y > 0 ? x < INT64_MIN / y : x < INT64_MAX / y;
}

static pf__jv pf__chat_arith(pf__chat *c, int op, pf__jv a, pf__jv b, int line) {
    if (a.type == PF__JV_UNDEFINED) pf__chat_undefined_fail(c, a, line);
    if (b.type == PF__JV_UNDEFINED) pf__chat_undefined_fail(c, b, line);
    if (op == PF__OP_ADD && a.type == PF__JV_STRING && b.type == PF__JV_STRING) {
        pf__chat_buf buf = {0};
        pf__chat_buf_add(c, &buf, a.u.str.s, a.u.str.n);
        pf__chat_buf_add(c, &buf, b.u.str.s, b.u.str.n);
        return pf__chat_buf_value(&buf);
    }
    if (op == PF__OP_ADD && a.type == PF__JV_LIST && b.type == PF__JV_LIST) {
        pf__jv out = pf__jv_new_list(c, a.u.list->n + b.u.list->n, a.u.list->tuple);
        if (a.u.list->n) memcpy(out.u.list->items, a.u.list->items, a.u.list->n * sizeof(pf__jv));
        if (b.u.list->n) memcpy(out.u.list->items + a.u.list->n, b.u.list->items, b.u.list->n * sizeof(pf__jv));
        return out;
    }
    if (op == PF__OP_MUL && ((a.type == PF__JV_STRING && b.type == PF__JV_INT) || (a.type == PF__JV_INT && b.type == PF__JV_STRING))) {
        pf__jv s = a.type == PF__JV_STRING ? a : b;
        int64_t times = a.type == PF__JV_INT ? a.u.i : b.u.i;
        pf__chat_buf buf = {0};
        pf__chat_buf_add(c, &buf, "", 0);
        for (int64_t k = 0; k < times; k++) pf__chat_buf_add(c, &buf, s.u.str.s, s.u.str.n);
        return pf__chat_buf_value(&buf);
    }
    if (!pf__jv_is_number(a) || !pf__jv_is_number(b))
        pf__chat_fail(c, PF_ERROR_INVALID_ARGUMENT, "chat template: line %d: unsupported operand types for an arithmetic operator: %s and %s", line,
                      pf__jv_type_name(a), pf__jv_type_name(b));
    if (a.type != PF__JV_FLOAT && b.type != PF__JV_FLOAT && op != PF__OP_DIV) {
        int64_t x = a.type == PF__JV_INT ? a.u.i : a.u.b, y = b.type == PF__JV_INT ? b.u.i : b.u.b, r = 0;
        int overflow = 0;
        switch (op) {
        case PF__OP_ADD: overflow = (y > 0 && x > INT64_MAX - y) || (y < 0 && x < INT64_MIN - y); r = overflow ? 0 : x + y; break;
        case PF__OP_SUB: overflow = (y < 0 && x > INT64_MAX + y) || (y > 0 && x < INT64_MIN + y); r = overflow ? 0 : x - y; break;
        case PF__OP_MUL: overflow = pf__chat_mul_overflows(x, y); r = overflow ? 0 : x * y; break;
        case PF__OP_FLOORDIV:
        case PF__OP_MOD:
            if (y == 0) pf__chat_fail(c, PF_ERROR_INVALID_ARGUMENT, "chat template: line %d: integer division or modulo by zero", line);
            if (x == INT64_MIN && y == -1) overflow = 1;
            else {
                int64_t q = x / y, m = x % y;
                if (m != 0 && ((m < 0) != (y < 0))) { q--; m += y; }
                r = op == PF__OP_FLOORDIV ? q : m;
            }
            break;
        case PF__OP_POW:
            if (y < 0) return pf__jv_float(pow((double)x, (double)y));
            r = 1;
            for (int64_t k = 0; k < y && !overflow; k++) {
                overflow = pf__chat_mul_overflows(r, x);
                if (!overflow) r *= x;
                if (r == 0 || r == 1) break; /* 0 ** y and 1 ** y need no more steps */
            }
            break;
        }
        if (overflow) pf__chat_fail(c, PF_ERROR_UNSUPPORTED, "chat template: line %d: integers past 64 bits are not supported", line);
        return pf__jv_int(r);
    }
    double x = pf__jv_number(a), y = pf__jv_number(b);
    switch (op) {
    case PF__OP_ADD: return pf__jv_float(x + y);
    case PF__OP_SUB: return pf__jv_float(x - y);
    case PF__OP_MUL: return pf__jv_float(x * y);
    case PF__OP_POW: return pf__jv_float(pow(x, y));
    default:
        if (y == 0) pf__chat_fail(c, PF_ERROR_INVALID_ARGUMENT, "chat template: line %d: division by zero", line);
        if (op == PF__OP_DIV) return pf__jv_float(x / y);
        if (op == PF__OP_FLOORDIV) return pf__jv_float(floor(x / y));
        double m = fmod(x, y);
        if (m != 0 && ((m < 0) != (y < 0))) m += y;
        return pf__jv_float(m);
    }
}

static pf__jv pf__chat_lookup(pf__chat *c, const char *name, size_t n) {
    for (size_t i = c->num_vars; i-- > 0;)
        if (c->vars[i].n == n && !memcmp(c->vars[i].name, name, n)) return c->vars[i].value;
    static const struct { const char *name; pf__jfunc func; } globals[] = {
        {"raise_exception", PF__FN_RAISE}, {"strftime_now", PF__FN_STRFTIME}, {"namespace", PF__FN_NAMESPACE},
        {"dict", PF__FN_DICT}, {"range", PF__FN_RANGE}};
    for (size_t k = 0; k < sizeof globals / sizeof globals[0]; k++)
        if (pf__chat_is(name, n, globals[k].name)) {
            pf__jv f;
            f.type = PF__JV_FUNC;
            f.u.func = globals[k].func;
            return f;
        }
    return pf__jv_undefined(name, n);
}

/* Binds name in the innermost scope (a loop iteration's, else the template's). */
static void pf__chat_bind(pf__chat *c, const char *name, size_t n, pf__jv value) {
    for (size_t i = c->num_vars; i-- > c->scope_base;)
        if (c->vars[i].n == n && !memcmp(c->vars[i].name, name, n)) {
            c->vars[i].value = value;
            return;
        }
    if (c->num_vars == c->cap_vars) {
        size_t cap = c->cap_vars ? 2 * c->cap_vars : 32;
        pf__jvar *vars = (pf__jvar *)pf__chat_array(c, cap, sizeof *vars);
        if (c->num_vars) memcpy(vars, c->vars, c->num_vars * sizeof *vars);
        c->vars = vars;
        c->cap_vars = cap;
    }
    c->vars[c->num_vars].name = name;
    c->vars[c->num_vars].n = n;
    c->vars[c->num_vars++].value = value;
}

static pf__jv pf__chat_eval(pf__chat *c, pf__jnode *node) {
    pf__chat_step(c, node->line);
    switch (node->kind) {
    case PF__JN_CONST: return node->value;
    case PF__JN_NAME: return pf__chat_lookup(c, node->s, node->n);
    case PF__JN_LIST:
    case PF__JN_TUPLE: {
        size_t n = 0;
        for (pf__jnode *item = node->a; item; item = item->next) n++;
        pf__jv out = pf__jv_new_list(c, n, node->kind == PF__JN_TUPLE);
        n = 0;
        for (pf__jnode *item = node->a; item; item = item->next) out.u.list->items[n++] = pf__chat_eval(c, item);
        return out;
    }
    case PF__JN_DICT: {
        pf__jv out = pf__jv_new_dict(c, 0);
        for (pf__jnode *key = node->a; key; key = key->next->next) {
            pf__jv k = pf__chat_eval(c, key);
            pf__jdict_set(c, out.u.dict, k, pf__chat_eval(c, key->next));
        }
        return out;
    }
    case PF__JN_ATTR: return pf__chat_get_attr(c, pf__chat_eval(c, node->a), node->s, node->n, node->line);
    case PF__JN_ITEM: {
        pf__jv obj = pf__chat_eval(c, node->a);
        return pf__chat_get_item(c, obj, pf__chat_eval(c, node->b), node->line);
    }
    case PF__JN_SLICE: {
        pf__jv obj = pf__chat_eval(c, node->a), none = pf__jv_none();
        if (obj.type == PF__JV_UNDEFINED) pf__chat_undefined_fail(c, obj, node->line);
        pf__jv start = node->b ? pf__chat_eval(c, node->b) : none, stop = node->c ? pf__chat_eval(c, node->c) : none;
        pf__jv step = node->d ? pf__chat_eval(c, node->d) : none;
        return pf__chat_slice(c, obj, start, stop, step, node->line);
    }
    case PF__JN_CALL: return pf__chat_call(c, node);
    case PF__JN_FILTER: return pf__chat_filter(c, node, pf__chat_eval(c, node->a));
    case PF__JN_TEST: {
        pf__jv v = pf__chat_eval(c, node->a);
        pf__chat_args a;
        char callee[64];
        snprintf(callee, sizeof callee, "the test %.*s", (int)(node->n < 40 ? node->n : 40), node->s);
        pf__chat_eval_args(c, node->b, &a, callee, node->line);
        return pf__jv_bool(pf__chat_test(c, v, node->s, node->n, &a, node->line) != node->op);
    }
    case PF__JN_NEG:
    case PF__JN_POS: {
        pf__jv v = pf__chat_eval(c, node->a);
        if (v.type == PF__JV_BOOL) v = pf__jv_int(v.u.b);
        if (v.type == PF__JV_INT && node->kind == PF__JN_NEG) {
            if (v.u.i == INT64_MIN) pf__chat_fail(c, PF_ERROR_UNSUPPORTED, "chat template: line %d: integers past 64 bits are not supported", node->line);
            return pf__jv_int(-v.u.i);
        }
        if (v.type == PF__JV_FLOAT && node->kind == PF__JN_NEG) return pf__jv_float(-v.u.f);
        if (v.type == PF__JV_INT || v.type == PF__JV_FLOAT) return v;
        pf__chat_fail(c, PF_ERROR_INVALID_ARGUMENT, "chat template: line %d: bad operand type for unary %c: '%s'", node->line,
                      node->kind == PF__JN_NEG ? '-' : '+', pf__jv_type_name(v));
    }
    case PF__JN_NOT: return pf__jv_bool(!pf__chat_truthy(pf__chat_eval(c, node->a)));
    case PF__JN_AND: {
        pf__jv a = pf__chat_eval(c, node->a);
        return pf__chat_truthy(a) ? pf__chat_eval(c, node->b) : a;
    }
    case PF__JN_OR: {
        pf__jv a = pf__chat_eval(c, node->a);
        return pf__chat_truthy(a) ? a : pf__chat_eval(c, node->b);
    }
    case PF__JN_COND:
        if (pf__chat_truthy(pf__chat_eval(c, node->a))) return pf__chat_eval(c, node->b);
        return node->c ? pf__chat_eval(c, node->c) : pf__jv_undefined("", 0);
    case PF__JN_BINARY: {
        pf__jv a = pf__chat_eval(c, node->a), b = pf__chat_eval(c, node->b);
        if (node->op == PF__OP_CONCAT) {
            pf__chat_buf buf = {0};
            pf__chat_buf_add(c, &buf, "", 0);
            pf__chat_str_into(c, &buf, a, 0);
            pf__chat_str_into(c, &buf, b, 0);
            return pf__chat_buf_value(&buf);
        }
        if (node->op >= PF__OP_EQ) return pf__jv_bool(pf__chat_compare(c, node->op, a, b, node->line));
        return pf__chat_arith(c, node->op, a, b, node->line);
    }
    default: break;
    }
    pf__chat_fail(c, PF_ERROR_UNSUPPORTED, "chat template: line %d: an expression we cannot evaluate", node->line);
}

enum { PF__CHAT_NEXT = 0, PF__CHAT_BREAK, PF__CHAT_CONTINUE };

static int pf__chat_exec(pf__chat *c, pf__jnode *node);

static int pf__chat_exec_for(pf__chat *c, pf__jnode *node) {
    pf__jlist *items = pf__chat_iterable(c, pf__chat_eval(c, node->b), node->line);
    size_t saved_vars = c->num_vars, saved_base = c->scope_base, num_names = 0;
    int body_completed = 0;
    for (pf__jnode *name = node->a; name; name = name->next) num_names++;
    c->scope_base = c->num_vars;
#define PF__CHAT_BIND_TARGETS(item)                                                                                      \
    do {                                                                                                                 \
        if (num_names == 1) pf__chat_bind(c, node->a->s, node->a->n, (item));                                           \
        else {                                                                                                           \
            pf__jv it_ = (item);                                                                                         \
            if (it_.type != PF__JV_LIST || it_.u.list->n != num_names)                                                   \
                pf__chat_fail(c, PF_ERROR_INVALID_ARGUMENT, "chat template: line %d: cannot unpack a %s into %zu names", \
                              node->line, pf__jv_type_name(it_), num_names);                                             \
            size_t k_ = 0;                                                                                               \
            for (pf__jnode *name_ = node->a; name_; name_ = name_->next) pf__chat_bind(c, name_->s, name_->n, it_.u.list->items[k_++]); \
        }                                                                                                                \
    } while (0)
    if (node->e) { /* {% for x in xs if cond %}: loop.length counts what passes */
        pf__jv kept = pf__jv_new_list(c, items->n, 0);
        size_t count = 0;
        for (size_t i = 0; i < items->n; i++) {
            c->num_vars = c->scope_base;
            PF__CHAT_BIND_TARGETS(items->items[i]);
            if (pf__chat_truthy(pf__chat_eval(c, node->e))) kept.u.list->items[count++] = items->items[i];
        }
        kept.u.list->n = count;
        items = kept.u.list;
    }
    for (size_t i = 0; i < items->n; i++) {
        c->num_vars = c->scope_base;
        pf__jv loop = pf__jv_new_dict(c, 0);
        int64_t n = (int64_t)items->n, k = (int64_t)i;
        pf__jdict_set_cstr(c, loop.u.dict, "index", pf__jv_int(k + 1));
        pf__jdict_set_cstr(c, loop.u.dict, "index0", pf__jv_int(k));
        pf__jdict_set_cstr(c, loop.u.dict, "revindex", pf__jv_int(n - k));
        pf__jdict_set_cstr(c, loop.u.dict, "revindex0", pf__jv_int(n - k - 1));
        pf__jdict_set_cstr(c, loop.u.dict, "first", pf__jv_bool(i == 0));
        pf__jdict_set_cstr(c, loop.u.dict, "last", pf__jv_bool(i + 1 == items->n));
        pf__jdict_set_cstr(c, loop.u.dict, "length", pf__jv_int(n));
        pf__jdict_set_cstr(c, loop.u.dict, "depth", pf__jv_int(1));
        pf__jdict_set_cstr(c, loop.u.dict, "depth0", pf__jv_int(0));
        if (i > 0) pf__jdict_set_cstr(c, loop.u.dict, "previtem", items->items[i - 1]);
        if (i + 1 < items->n) pf__jdict_set_cstr(c, loop.u.dict, "nextitem", items->items[i + 1]);
        pf__chat_bind(c, "loop", 4, loop);
        PF__CHAT_BIND_TARGETS(items->items[i]);
        int flow = PF__CHAT_NEXT;
        for (pf__jnode *s = node->c; s && flow == PF__CHAT_NEXT; s = s->next) flow = pf__chat_exec(c, s);
        if (flow == PF__CHAT_NEXT) body_completed = 1;
        if (flow == PF__CHAT_BREAK) break;
    }
#undef PF__CHAT_BIND_TARGETS
    c->num_vars = saved_vars;
    c->scope_base = saved_base;
    if (!body_completed) /* jinja2 marks an iteration at the end of its body: break and continue skip it */
        for (pf__jnode *s = node->d; s; s = s->next) {
            int flow = pf__chat_exec(c, s);
            if (flow != PF__CHAT_NEXT) return flow;
        }
    return PF__CHAT_NEXT;
}

static void pf__chat_output(pf__chat *c, pf__jv v) {
    if (v.type == PF__JV_STRING) {
        pf__chat_emit(c, v.u.str.s, v.u.str.n);
        return;
    }
    pf__jv s = pf__chat_str(c, v);
    pf__chat_emit(c, s.u.str.s, s.u.str.n);
}

static int pf__chat_exec(pf__chat *c, pf__jnode *node) {
    pf__chat_step(c, node->line);
    switch (node->kind) {
    case PF__JN_TEXT: pf__chat_emit(c, node->s, node->n); return PF__CHAT_NEXT;
    case PF__JN_OUTPUT: pf__chat_output(c, pf__chat_eval(c, node->a)); return PF__CHAT_NEXT;
    case PF__JN_IF: {
        pf__jnode *body = pf__chat_truthy(pf__chat_eval(c, node->a)) ? node->b : node->c;
        for (pf__jnode *s = body; s; s = s->next) {
            int flow = pf__chat_exec(c, s);
            if (flow != PF__CHAT_NEXT) return flow;
        }
        return PF__CHAT_NEXT;
    }
    case PF__JN_FOR: return pf__chat_exec_for(c, node);
    case PF__JN_SET: {
        pf__jv value = pf__chat_eval(c, node->a);
        if (node->b) {
            pf__jv ns = pf__chat_lookup(c, node->s, node->n);
            if (ns.type != PF__JV_DICT || !ns.u.dict->namespace_)
                pf__chat_fail(c, PF_ERROR_INVALID_ARGUMENT, "chat template: line %d: cannot assign an attribute of '%.*s', which is not a namespace",
                              node->line, (int)node->n, node->s);
            pf__jdict_set(c, ns.u.dict, node->b->value, value);
        } else {
            pf__chat_bind(c, node->s, node->n, value);
        }
        return PF__CHAT_NEXT;
    }
    case PF__JN_SET_BLOCK: { /* render the body into a string */
        pf__chat_buf text = {0}, *saved = c->capture;
        pf__chat_buf_add(c, &text, "", 0);
        c->capture = &text;
        int flow = PF__CHAT_NEXT;
        for (pf__jnode *s = node->a; s && flow == PF__CHAT_NEXT; s = s->next) flow = pf__chat_exec(c, s);
        c->capture = saved;
        pf__chat_bind(c, node->s, node->n, pf__chat_buf_value(&text));
        return flow;
    }
    case PF__JN_BREAK: return PF__CHAT_BREAK;
    case PF__JN_CONTINUE: return PF__CHAT_CONTINUE;
    default: break;
    }
    pf__chat_fail(c, PF_ERROR_UNSUPPORTED, "chat template: line %d: a statement we cannot run", node->line);
}

/* ---- the public entry points ---- */

pf_chat_options pf_chat_options_init(void) {
    pf_chat_options o;
    memset(&o, 0, sizeof o);
    o.add_generation_prompt = 1;
    return o;
}

const char *pf_tokenizer_chat_template(const pf_tokenizer *tokenizer) {
    return tokenizer ? tokenizer->chat_template : NULL;
}

/* Lexes, parses and renders; every failure longjmps here. Kept apart from the entry point so
   that nothing it changes after setjmp lives in its own locals. */
static void pf__chat_run(pf__chat *c, const char *template_text, const pf_chat_message *messages, int count,
                         const pf_chat_options *options, const char *bos, const char *eos) {
    /* jinja2 reads \r\n and \r as \n, and drops one newline that ends the template */
    size_t n = strlen(template_text), k = 0;
    char *src = (char *)pf__chat_alloc(c, n + 1);
    for (size_t i = 0; i < n; i++) {
        if (template_text[i] == '\r') {
            src[k++] = '\n';
            if (i + 1 < n && template_text[i + 1] == '\n') i++;
        } else {
            src[k++] = template_text[i];
        }
    }
    if (k && src[k - 1] == '\n') k--;
    src[k] = 0;
    c->src = src;
    c->src_len = k;
    pf__chat_lex(c);
    pf__jnode *body = pf__chat_parse_body(c, NULL);

    pf__jv list = pf__jv_new_list(c, (size_t)count, 0);
    for (int i = 0; i < count; i++) {
        pf__jv m = pf__jv_new_dict(c, 0);
        if (!messages[i].role) pf__chat_fail(c, PF_ERROR_INVALID_ARGUMENT, "pf_apply_chat_template: message %d has no role", i);
        pf__jdict_set_cstr(c, m.u.dict, "role", pf__jv_cstr(messages[i].role));
        if (messages[i].content) pf__jdict_set_cstr(c, m.u.dict, "content", pf__jv_cstr(messages[i].content));
        list.u.list->items[i] = m;
    }
    pf__chat_bind(c, "messages", 8, list);
    pf__chat_bind(c, "add_generation_prompt", 21, pf__jv_bool(options->add_generation_prompt));
    pf__chat_bind(c, "tools", 5, pf__jv_none());
    pf__chat_bind(c, "documents", 9, pf__jv_none());
    if (bos) pf__chat_bind(c, "bos_token", 9, pf__jv_cstr(bos));
    if (eos) pf__chat_bind(c, "eos_token", 9, pf__jv_cstr(eos));
    c->scope_base = c->num_vars;
    for (pf__jnode *s = body; s; s = s->next)
        if (pf__chat_exec(c, s) != PF__CHAT_NEXT)
            pf__chat_fail(c, PF_ERROR_FORMAT, "chat template: line %d: break or continue outside a loop", s->line);
    if (!c->out) c->out = (char *)calloc(1, 1);
    if (!c->out) pf__chat_fail(c, PF_ERROR_OUT_OF_MEMORY, "chat template: out of memory");
}

/* Runs pf__chat_run under the failure jump; nothing here changes after setjmp. */
static pf_result pf__chat_render(pf__chat *c, const char *template_text, const pf_chat_message *messages, int count,
                                 const pf_chat_options *options, const char *bos, const char *eos) {
    if (setjmp(c->fail)) return c->code;
    pf__chat_run(c, template_text, messages, count, options, bos, eos);
    return PF_OK;
}

pf_result pf_apply_chat_template(const pf_tokenizer *tokenizer, const pf_chat_message *messages, int count,
                                 const pf_chat_options *options, char **text, char *error, size_t error_size) {
    pf__chat c;
    pf_chat_options defaults = pf_chat_options_init();
    const char *template_text;
    char local_error[8];
    pf_result r;
    if (!error || !error_size) {
        error = local_error;
        error_size = sizeof local_error;
    }
    error[0] = 0;
    if (text) *text = NULL;
    if (!options) options = &defaults;
    if (!text || count < 0 || (count > 0 && !messages)) {
        snprintf(error, error_size, "pf_apply_chat_template: NULL or negative argument");
        return PF_ERROR_INVALID_ARGUMENT;
    }
    if (count == 0) { /* as transformers */
        snprintf(error, error_size, "pf_apply_chat_template: an empty conversation: give at least one message");
        return PF_ERROR_INVALID_ARGUMENT;
    }
    template_text = options->chat_template ? options->chat_template : tokenizer ? tokenizer->chat_template : NULL;
    if (!template_text) {
        snprintf(error, error_size, "%s", tokenizer && tokenizer->chat_template_note ? tokenizer->chat_template_note
                                          : "pf_apply_chat_template: the tokenizer has no chat template (tokenizer_config.json's "
                                            "chat_template, or chat_template.jinja) and none was given");
        return PF_ERROR_INVALID_ARGUMENT;
    }
    memset(&c, 0, sizeof c);
    c.error = error;
    c.error_size = error_size;
    c.date = options->date;
    r = pf__chat_render(&c, template_text, messages, count, options,
                        options->bos_token ? options->bos_token : tokenizer ? tokenizer->bos_token : NULL,
                        options->eos_token ? options->eos_token : tokenizer ? tokenizer->eos_token : NULL);
    while (c.arena) {
        pf__arena_block *next = c.arena->next;
        free(c.arena);
        c.arena = next;
    }
    if (r != PF_OK) {
        free(c.out);
        return r;
    }
    *text = c.out;
    return PF_OK;
}

/* =============================================================================================== */
/* preprocessing: images and audio as the Hugging Face processors compute them                     */
/* =============================================================================================== */

/* Everything here reads preprocessor_config.json and turns pixels or samples into a model's input
   floats, bit for bit where transformers works in integers (the resampling of 8-bit images) and
   within float rounding elsewhere. Loaded processors are read-only: any thread, any time. */

#define PF__MAX_IMAGE_SIDE 32768        /* pixels on a side, in or out: a bound against absurd sizes */
#define PF__MAX_AUDIO_SAMPLES ((size_t)1 << 31)

/* The number under key, or *out unchanged when absent or null; -1 (message) when not a number. */
static pf_result pf__pre_number(const pf__json *config, const char *key, double *out, const char *path, char *error,
                                size_t error_size) {
    int got = pf__json_number(pf__json_get(config, key), out);
    if (got < 0) return pf__format(error, error_size, PF_ERROR_FORMAT, "%s: \"%s\" is not a number", path, key);
    return PF_OK;
}

/* A whole number in [low, high] under key; absent or null keeps *out. */
static pf_result pf__pre_int(const pf__json *config, const char *key, int low, int high, int *out, const char *path,
                             char *error, size_t error_size) {
    double v = NAN;
    pf_result r = pf__pre_number(config, key, &v, path, error, error_size);
    if (r || isnan(v)) return r; /* absent or null: unchanged */
    if (v != floor(v) || v < low || v > high)
        return pf__format(error, error_size, PF_ERROR_FORMAT, "%s: \"%s\" is %g, not a whole number in [%d, %d]", path, key,
                          v, low, high);
    *out = (int)v;
    return PF_OK;
}

/* A JSON bool under key; absent or null keeps *out. */
static pf_result pf__pre_bool(const pf__json *config, const char *key, int *out, const char *path, char *error,
                              size_t error_size) {
    const pf__json *v = pf__json_get(config, key);
    if (!v || v->type == PF__JSON_NULL) return PF_OK;
    if (v->type != PF__JSON_BOOL) return pf__format(error, error_size, PF_ERROR_FORMAT, "%s: \"%s\" is not true or false", path, key);
    *out = v->boolean;
    return PF_OK;
}

/* Refuses the first key of config not in `known` (a NULL-ended list), naming it: a key we do not
   read may change the result. */
static pf_result pf__pre_known_keys(const pf__json *config, const char *const *known, const char *what, const char *path,
                                    char *error, size_t error_size) {
    for (const pf__json *c = config->first; c; c = c->next) {
        int found = 0;
        for (const char *const *k = known; *k && !found; k++) found = strcmp(*k, c->key) == 0;
        if (!found)
            return pf__format(error, error_size, PF_ERROR_UNSUPPORTED, "%s: %s key \"%s\" is not implemented", path, what,
                              c->key);
    }
    return PF_OK;
}

/* Reads DIR/preprocessor_config.json, an object; the class named by image_processor_type (else
   feature_extractor_type) into class_name ("" when neither), "Fast" / "Pil" / "FeatureExtractor"
   spelled as the base image processor's name. */
static pf_result pf__pre_read_config(const char *dir, pf__json **config, char *path, size_t path_size, char *class_name,
                                     size_t class_size, char *error, size_t error_size) {
    if (pf__path_join(path, path_size, dir, "preprocessor_config.json"))
        return pf__format(error, error_size, PF_ERROR_INVALID_ARGUMENT, "%s: path too long", dir);
    pf_result r = pf__json_load(path, config, error, error_size);
    if (r) return r;
    if ((*config)->type != PF__JSON_OBJECT) {
        pf__json_free(*config);
        *config = NULL;
        return pf__format(error, error_size, PF_ERROR_FORMAT, "%s: not a JSON object", path);
    }
    class_name[0] = 0;
    const pf__json *type = pf__json_get(*config, "image_processor_type");
    if (!type || type->type != PF__JSON_STRING) type = pf__json_get(*config, "feature_extractor_type");
    if (type && type->type == PF__JSON_STRING && type->string_len < class_size) memcpy(class_name, type->string, type->string_len + 1);
    return PF_OK;
}

/* ---- image processors ---- */

typedef enum { PF__RESAMPLE_BILINEAR = 2, PF__RESAMPLE_BICUBIC = 3 } pf__resample_filter; /* PIL's codes */

struct pf_image_processor {
    pf_image_backend backend;
    int do_resize, size_height, size_width, size_shortest_edge; /* shortest_edge 0: height x width */
    int resample;
    int do_center_crop, crop_height, crop_width;
    int do_rescale;
    double rescale_factor;
    int do_normalize;
    double mean[3], std[3];
};

/* A size dict of height and width (or shortest_edge, where allowed), or an int read as transformers'
   get_size_dict reads it (square, or the shortest edge when default_to_square is false). */
static pf_result pf__image_size(const pf__json *v, const char *key, int default_to_square, int allow_shortest, int *height,
                                int *width, int *shortest, const char *path, char *error, size_t error_size) {
    if (!v || v->type == PF__JSON_NULL) return PF_OK;
    int h = 0, w = 0, s = 0;
    pf_result r;
    if (v->type == PF__JSON_NUMBER) {
        int n;
        if (v->number != floor(v->number) || v->number < 1 || v->number > PF__MAX_IMAGE_SIDE)
            return pf__format(error, error_size, PF_ERROR_FORMAT, "%s: \"%s\" is %g, not a size in [1, %d]", path, key,
                              v->number, PF__MAX_IMAGE_SIDE);
        n = (int)v->number;
        if (default_to_square) h = w = n;
        else s = n;
    } else if (v->type == PF__JSON_OBJECT) {
        for (const pf__json *c = v->first; c; c = c->next)
            if (strcmp(c->key, "height") && strcmp(c->key, "width") && strcmp(c->key, "shortest_edge"))
                return pf__format(error, error_size, PF_ERROR_UNSUPPORTED, "%s: \"%s\" key \"%s\" is not implemented", path,
                                  key, c->key);
        if ((r = pf__pre_int(v, "height", 1, PF__MAX_IMAGE_SIDE, &h, path, error, error_size)) ||
            (r = pf__pre_int(v, "width", 1, PF__MAX_IMAGE_SIDE, &w, path, error, error_size)) ||
            (r = pf__pre_int(v, "shortest_edge", 1, PF__MAX_IMAGE_SIDE, &s, path, error, error_size)))
            return r;
        if (s ? (h || w) : !(h && w))
            return pf__format(error, error_size, PF_ERROR_FORMAT,
                              "%s: \"%s\" needs height and width, or shortest_edge alone", path, key);
    } else {
        return pf__format(error, error_size, PF_ERROR_FORMAT, "%s: \"%s\" is neither a number nor an object", path, key);
    }
    if (s && !allow_shortest)
        return pf__format(error, error_size, PF_ERROR_UNSUPPORTED, "%s: \"%s\" as shortest_edge is not implemented", path,
                          key);
    *height = h;
    *width = w;
    *shortest = s;
    return PF_OK;
}

/* image_mean / image_std: one number for every channel, or three. */
static pf_result pf__image_channels(const pf__json *v, const char *key, double out[3], const char *path, char *error,
                                    size_t error_size) {
    if (!v || v->type == PF__JSON_NULL) return PF_OK;
    if (v->type == PF__JSON_NUMBER) {
        out[0] = out[1] = out[2] = v->number;
        return PF_OK;
    }
    if (v->type != PF__JSON_ARRAY || v->count != 3)
        return pf__format(error, error_size, PF_ERROR_FORMAT, "%s: \"%s\" is not a number or a list of 3 numbers", path, key);
    int i = 0;
    for (const pf__json *c = v->first; c; c = c->next, i++) {
        if (c->type != PF__JSON_NUMBER)
            return pf__format(error, error_size, PF_ERROR_FORMAT, "%s: \"%s\" holds a value that is not a number", path, key);
        out[i] = c->number;
    }
    return PF_OK;
}

/* The class defaults of transformers' ViTImageProcessor, DeiTImageProcessor and
   CLIPImageProcessor (their *Fast and *Pil variants save the same names); 0 for another class. */
static int pf__image_class_defaults(const char *name, pf_image_processor *p, int *default_to_square) {
    static const double imagenet_standard[3] = {0.5, 0.5, 0.5};
    static const double clip_mean[3] = {0.48145466, 0.4578275, 0.40821073};
    static const double clip_std[3] = {0.26862954, 0.26130258, 0.27577711};
    char base[64];
    size_t n = strlen(name);
    if (n >= sizeof base) return 0;
    memcpy(base, name, n + 1);
    if (n > 4 && strcmp(base + n - 4, "Fast") == 0) base[n -= 4] = 0;
    else if (n > 3 && strcmp(base + n - 3, "Pil") == 0) base[n -= 3] = 0;
    if (n > 16 && strcmp(base + n - 16, "FeatureExtractor") == 0) base[n - 16] = 0;
    else if (n > 14 && strcmp(base + n - 14, "ImageProcessor") == 0) base[n - 14] = 0;
    else return 0;
    p->do_resize = p->do_rescale = p->do_normalize = 1;
    p->rescale_factor = 1.0 / 255;
    *default_to_square = 1;
    if (strcmp(base, "ViT") == 0) {
        p->resample = PF__RESAMPLE_BILINEAR;
        p->size_height = p->size_width = 224;
        memcpy(p->mean, imagenet_standard, sizeof p->mean);
        memcpy(p->std, imagenet_standard, sizeof p->std);
    } else if (strcmp(base, "DeiT") == 0) {
        p->resample = PF__RESAMPLE_BICUBIC;
        p->size_height = p->size_width = 256;
        p->do_center_crop = 1;
        p->crop_height = p->crop_width = 224;
        memcpy(p->mean, imagenet_standard, sizeof p->mean);
        memcpy(p->std, imagenet_standard, sizeof p->std);
    } else if (strcmp(base, "CLIP") == 0) {
        p->resample = PF__RESAMPLE_BICUBIC;
        p->size_shortest_edge = 224;
        p->do_center_crop = 1;
        p->crop_height = p->crop_width = 224;
        memcpy(p->mean, clip_mean, sizeof p->mean);
        memcpy(p->std, clip_std, sizeof p->std);
        *default_to_square = 0;
    } else {
        return 0;
    }
    return 1;
}

/* The class of a config without image_processor_type: transformers then goes by config.json's
   model_type. */
static void pf__image_class_from_model(const char *dir, char *class_name, size_t class_size) {
    char path[PF__PATH_SIZE];
    pf__json *config = NULL;
    char ignored[PF__MESSAGE_SIZE];
    if (pf__path_join(path, sizeof path, dir, "config.json") || pf__json_load(path, &config, ignored, sizeof ignored)) return;
    const pf__json *type = pf__json_get(config, "model_type");
    const char *name = NULL;
    if (type && type->type == PF__JSON_STRING) {
        if (strcmp(type->string, "vit") == 0) name = "ViTImageProcessor";
        else if (strcmp(type->string, "deit") == 0) name = "DeiTImageProcessor";
        else if (strcmp(type->string, "clip") == 0 || strcmp(type->string, "clip_vision_model") == 0)
            name = "CLIPImageProcessor";
    }
    if (name && strlen(name) < class_size) strcpy(class_name, name);
    pf__json_free(config);
}

static pf_result pf__image_processor_read(pf_image_processor *p, const pf__json *config, const char *class_name,
                                          const char *path, char *error, size_t error_size) {
    static const char *const known[] = {
        "image_processor_type", "feature_extractor_type", "processor_class", "do_resize", "size", "resample",
        "do_center_crop", "crop_size", "do_rescale", "rescale_factor", "do_normalize", "image_mean", "image_std",
        "do_convert_rgb", "default_to_square", "do_pad", "pad_size", "data_format", "input_data_format", NULL};
    int default_to_square = 1;
    pf_result r;
    if (!pf__image_class_defaults(class_name, p, &default_to_square))
        return pf__format(error, error_size, PF_ERROR_UNSUPPORTED,
                          "%s: image processor \"%s\" is not implemented (ViT, DeiT and CLIP are)", path,
                          class_name[0] ? class_name : "(unnamed)");
    if ((r = pf__pre_known_keys(config, known, "image processor", path, error, error_size)) ||
        (r = pf__pre_bool(config, "default_to_square", &default_to_square, path, error, error_size)) ||
        (r = pf__pre_bool(config, "do_resize", &p->do_resize, path, error, error_size)) ||
        (r = pf__image_size(pf__json_get(config, "size"), "size", default_to_square, 1, &p->size_height, &p->size_width,
                            &p->size_shortest_edge, path, error, error_size)) ||
        (r = pf__pre_int(config, "resample", 0, 5, &p->resample, path, error, error_size)) ||
        (r = pf__pre_bool(config, "do_center_crop", &p->do_center_crop, path, error, error_size)))
        return r;
    int crop_shortest = 0;
    if ((r = pf__image_size(pf__json_get(config, "crop_size"), "crop_size", 1, 0, &p->crop_height, &p->crop_width,
                            &crop_shortest, path, error, error_size)) ||
        (r = pf__pre_bool(config, "do_rescale", &p->do_rescale, path, error, error_size)) ||
        (r = pf__pre_number(config, "rescale_factor", &p->rescale_factor, path, error, error_size)) ||
        (r = pf__pre_bool(config, "do_normalize", &p->do_normalize, path, error, error_size)) ||
        (r = pf__image_channels(pf__json_get(config, "image_mean"), "image_mean", p->mean, path, error, error_size)) ||
        (r = pf__image_channels(pf__json_get(config, "image_std"), "image_std", p->std, path, error, error_size)))
        return r;
    int do_convert_rgb = 1, do_pad = 0; /* converting RGB to RGB changes nothing */
    if ((r = pf__pre_bool(config, "do_convert_rgb", &do_convert_rgb, path, error, error_size)) ||
        (r = pf__pre_bool(config, "do_pad", &do_pad, path, error, error_size)))
        return r;
    if (do_pad) return pf__format(error, error_size, PF_ERROR_UNSUPPORTED, "%s: \"do_pad\": true is not implemented", path);
    const pf__json *pad_size = pf__json_get(config, "pad_size");
    if (pad_size && pad_size->type != PF__JSON_NULL)
        return pf__format(error, error_size, PF_ERROR_UNSUPPORTED, "%s: \"pad_size\" is not implemented", path);
    const char *layouts[] = {"data_format", "input_data_format"};
    for (int i = 0; i < 2; i++) {
        const pf__json *v = pf__json_get(config, layouts[i]);
        if (v && v->type != PF__JSON_NULL && !(v->type == PF__JSON_STRING && strcmp(v->string, "channels_first") == 0 && i == 0))
            return pf__format(error, error_size, PF_ERROR_UNSUPPORTED, "%s: \"%s\" other than the default is not implemented",
                              path, layouts[i]);
    }
    if (p->do_resize && p->resample != PF__RESAMPLE_BILINEAR && p->resample != PF__RESAMPLE_BICUBIC)
        return pf__format(error, error_size, PF_ERROR_UNSUPPORTED,
                          "%s: \"resample\": %d is not implemented (2, bilinear, and 3, bicubic, are)", path, p->resample);
    if (p->do_center_crop && !(p->crop_height && p->crop_width))
        return pf__format(error, error_size, PF_ERROR_FORMAT, "%s: \"do_center_crop\" without a \"crop_size\"", path);
    if (p->do_rescale && !(isfinite(p->rescale_factor) && p->rescale_factor != 0))
        return pf__format(error, error_size, PF_ERROR_FORMAT, "%s: \"rescale_factor\" is %g", path, p->rescale_factor);
    for (int c = 0; c < 3 && p->do_normalize; c++)
        if (!isfinite(p->mean[c]) || !isfinite(p->std[c]) || p->std[c] == 0)
            return pf__format(error, error_size, PF_ERROR_FORMAT, "%s: \"image_mean\" / \"image_std\" channel %d is %g / %g",
                              path, c, p->mean[c], p->std[c]);
    return PF_OK;
}

pf_result pf_image_processor_load(const char *dir, pf_image_backend backend, pf_image_processor **out, char *error,
                                  size_t error_size) {
    if (error && error_size) error[0] = 0;
    if (out) *out = NULL;
    if (!dir || !out) return pf__format(error, error_size, PF_ERROR_INVALID_ARGUMENT, "NULL directory or result pointer");
    if (backend != PF_IMAGE_BACKEND_TORCHVISION && backend != PF_IMAGE_BACKEND_PIL)
        return pf__format(error, error_size, PF_ERROR_INVALID_ARGUMENT, "unknown image backend %d", (int)backend);
    char path[PF__PATH_SIZE], class_name[128];
    pf__json *config;
    pf_result r = pf__pre_read_config(dir, &config, path, sizeof path, class_name, sizeof class_name, error, error_size);
    if (r) return r;
    if (!class_name[0]) pf__image_class_from_model(dir, class_name, sizeof class_name);
    pf_image_processor *p = (pf_image_processor *)calloc(1, sizeof *p);
    if (!p) r = pf__format(error, error_size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    else r = pf__image_processor_read(p, config, class_name, path, error, error_size);
    pf__json_free(config);
    if (r) {
        free(p);
        return r;
    }
    p->backend = backend;
    *out = p;
    return PF_OK;
}

void pf_image_processor_free(pf_image_processor *processor) { free(processor); }

/* The size after resizing, as transformers' get_resize_output_image_size computes it. */
static void pf__image_resized_size(const pf_image_processor *p, int width, int height, int *out_width, int *out_height) {
    if (!p->do_resize) {
        *out_width = width;
        *out_height = height;
    } else if (!p->size_shortest_edge) {
        *out_width = p->size_width;
        *out_height = p->size_height;
    } else {
        int short_side = width <= height ? width : height, long_side = width <= height ? height : width;
        double scaled = (double)p->size_shortest_edge * long_side / short_side;
        int new_long = scaled > PF__MAX_IMAGE_SIDE ? PF__MAX_IMAGE_SIDE + 1 : (int)scaled;
        *out_width = width <= height ? p->size_shortest_edge : new_long;
        *out_height = width <= height ? new_long : p->size_shortest_edge;
    }
}

static pf_result pf__image_check_size(int width, int height, char *error, size_t error_size) {
    if (width < 1 || height < 1 || width > PF__MAX_IMAGE_SIDE || height > PF__MAX_IMAGE_SIDE)
        return pf__format(error, error_size, PF_ERROR_INVALID_ARGUMENT, "image of %d x %d pixels: each side must be in [1, %d]",
                          width, height, PF__MAX_IMAGE_SIDE);
    return PF_OK;
}

pf_result pf_image_output_size(const pf_image_processor *p, int width, int height, int *out_width, int *out_height,
                               char *error, size_t error_size) {
    if (error && error_size) error[0] = 0;
    if (!p || !out_width || !out_height) return pf__format(error, error_size, PF_ERROR_INVALID_ARGUMENT, "NULL argument");
    *out_width = *out_height = 0;
    pf_result r = pf__image_check_size(width, height, error, error_size);
    if (r) return r;
    int w, h;
    pf__image_resized_size(p, width, height, &w, &h);
    if ((r = pf__image_check_size(w, h, error, error_size))) return r;
    *out_width = p->do_center_crop ? p->crop_width : w;
    *out_height = p->do_center_crop ? p->crop_height : h;
    return PF_OK;
}

/* ---- resampling: the separable fixed-point filters of PIL and of torch's uint8 path ---- */

/* One axis of a resize: output i reads `count[i]` inputs from `first[i]` with fixed-point weights
   weights[i * taps ...], each sum shifted down by `precision` bits. */
typedef struct pf__resample_axis {
    int *first, *count;
    int32_t *weights; /* [out][taps] */
    int taps, precision;
} pf__resample_axis;

static double pf__filter_bilinear(double x) {
    x = fabs(x);
    return x < 1.0 ? 1.0 - x : 0.0;
}

/* Keys' cubic with a = -0.5, in PIL's order of operations (Resample.c's bicubic_filter) ... */
static double pf__filter_bicubic_pil(double x) {
    const double a = -0.5;
    if (x < 0.0) x = -x;
    if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
    if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
    return 0.0;
}

/* ... and in torch's (UpSample.h's cubic_convolution1/2): the weights can differ in the last bit,
   which can move a rounding. */
static double pf__filter_bicubic_torch(double x) {
    const double a = -0.5;
    x = fabs(x);
    if (x < 1.0) return ((a + 2) * x - (a + 3)) * x * x + 1;
    if (x < 2.0) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
    return 0.0;
}

static void pf__resample_axis_free(pf__resample_axis *a) {
    free(a->first);
    free(a->count);
    free(a->weights);
    memset(a, 0, sizeof *a);
}

/* Coefficients of one axis as PIL's precompute_coeffs and torch's
   _compute_indices_min_size_weights_aa compute them (the filter's support widened by the
   downscale factor, normalised to sum 1), then in fixed point: PIL with 22 fraction bits, torch
   as int16 with the most bits that keep the largest weight below 2^15. */
static pf_result pf__resample_axis_init(pf__resample_axis *a, int in, int out, int filter, pf_image_backend backend) {
    memset(a, 0, sizeof *a);
    double (*fn)(double) = filter == PF__RESAMPLE_BILINEAR                ? pf__filter_bilinear
                           : backend == PF_IMAGE_BACKEND_PIL ? pf__filter_bicubic_pil
                                                             : pf__filter_bicubic_torch;
    double scale = (double)in / out, filterscale = scale < 1.0 ? 1.0 : scale;
    double support = (filter == PF__RESAMPLE_BILINEAR ? 1.0 : 2.0) * filterscale;
    a->taps = (int)ceil(support) * 2 + 1;
    double *w = (double *)malloc((size_t)out * (size_t)a->taps * sizeof *w);
    a->first = (int *)malloc((size_t)out * sizeof(int));
    a->count = (int *)malloc((size_t)out * sizeof(int));
    a->weights = (int32_t *)calloc((size_t)out * (size_t)a->taps, sizeof(int32_t));
    if (!w || !a->first || !a->count || !a->weights) {
        free(w);
        pf__resample_axis_free(a);
        return PF_ERROR_OUT_OF_MEMORY;
    }
    double largest = 0.0;
    for (int i = 0; i < out; i++) {
        double center = (i + 0.5) * scale, total = 0.0, *k = w + (size_t)i * a->taps;
        int xmin = (int)(center - support + 0.5), xmax = (int)(center + support + 0.5);
        if (xmin < 0) xmin = 0;
        if (xmax > in) xmax = in;
        int n = xmax - xmin;
        if (n < 0) n = 0;
        if (n > a->taps) n = a->taps;
        for (int j = 0; j < n; j++) {
            k[j] = fn((j + xmin - center + 0.5) / filterscale);
            total += k[j];
        }
        if (total != 0.0)
            for (int j = 0; j < n; j++) {
                k[j] /= total;
                if (k[j] > largest) largest = k[j];
            }
        a->first[i] = xmin;
        a->count[i] = n;
    }
    if (backend == PF_IMAGE_BACKEND_PIL) {
        a->precision = 22;
    } else {
        for (a->precision = 0; a->precision < 22; a->precision++)
            if ((int)(0.5 + largest * (1 << (a->precision + 1))) >= (1 << 15)) break;
    }
    for (int i = 0; i < out; i++)
        for (int j = 0; j < a->count[i]; j++) {
            double v = w[(size_t)i * a->taps + j] * (1 << a->precision);
            a->weights[(size_t)i * a->taps + j] = (int32_t)(v < 0 ? -0.5 + v : 0.5 + v);
        }
    free(w);
    return PF_OK;
}

/* One pass over 8-bit RGB: along x (horizontal) or y. in is in_w x in_h, out out_w x out_h, one of
   the sides equal. Each sum starts at half a unit (rounding) and is clipped to 0..255. */
static void pf__resample_pass(const pf__resample_axis *a, int horizontal, const uint8_t *in, int in_w, uint8_t *out,
                              int out_w, int out_h) {
    for (int y = 0; y < out_h; y++)
        for (int x = 0; x < out_w; x++) {
            int i = horizontal ? x : y;
            const int32_t *k = a->weights + (size_t)i * a->taps;
            for (int c = 0; c < 3; c++) {
                int64_t sum = (int64_t)1 << (a->precision - 1);
                for (int j = 0; j < a->count[i]; j++) {
                    size_t at = horizontal ? ((size_t)y * in_w + (size_t)(a->first[i] + j)) * 3
                                           : ((size_t)(a->first[i] + j) * in_w + (size_t)x) * 3;
                    sum += (int64_t)in[at + c] * k[j];
                }
                int64_t v = sum < 0 ? 0 : sum >> a->precision;
                out[((size_t)y * out_w + x) * 3 + c] = (uint8_t)(v > 255 ? 255 : v);
            }
        }
}

/* Resizes 8-bit RGB as the backend does: torch resamples the width first; Pillow 13 picks the
   order by the reductions (width first unless the height shrinks by more than twice what the
   width does: found by testing every shape against its wheel, which is not the order of Pillow's
   older Resample.c). A side that keeps its length is not resampled. *resized is the caller's. */
static pf_result pf__image_resize(const uint8_t *rgb, int w, int h, int ow, int oh, int filter, pf_image_backend backend,
                                  uint8_t **resized) {
    int horizontal_first = backend == PF_IMAGE_BACKEND_TORCHVISION ||
                           2 * (int64_t)(w > ow ? w - ow : 0) >= (int64_t)(h > oh ? h - oh : 0);
    const uint8_t *cur = rgb;
    uint8_t *owned = NULL;
    int cw = w, ch = h;
    for (int step = 0; step < 2; step++) {
        int horizontal = (step == 0) == horizontal_first;
        int in_len = horizontal ? cw : ch, out_len = horizontal ? ow : oh;
        if (in_len == out_len) continue;
        pf__resample_axis a;
        if (pf__resample_axis_init(&a, in_len, out_len, filter, backend)) {
            free(owned);
            return PF_ERROR_OUT_OF_MEMORY;
        }
        int nw = horizontal ? ow : cw, nh = horizontal ? ch : oh;
        uint8_t *next = (uint8_t *)malloc((size_t)nw * (size_t)nh * 3);
        if (!next) {
            pf__resample_axis_free(&a);
            free(owned);
            return PF_ERROR_OUT_OF_MEMORY;
        }
        pf__resample_pass(&a, horizontal, cur, cw, next, nw, nh);
        pf__resample_axis_free(&a);
        free(owned);
        cur = owned = next;
        cw = nw;
        ch = nh;
    }
    if (!owned) { /* nothing to resample: a copy, so that the caller owns what it gets */
        owned = (uint8_t *)malloc((size_t)w * (size_t)h * 3);
        if (!owned) return PF_ERROR_OUT_OF_MEMORY;
        memcpy(owned, rgb, (size_t)w * (size_t)h * 3);
    }
    *resized = owned;
    return PF_OK;
}

/* Where a centre crop of `crop` from `side` starts (negative: zero padding before the image).
   torchvision pads (crop - side) / 2 before, rounding down; transformers' numpy center_crop
   rounds the padding up. */
static int pf__crop_start(int side, int crop, pf_image_backend backend) {
    int d = side - crop;
    if (backend == PF_IMAGE_BACKEND_TORCHVISION || d >= 0) return d / 2;
    return -((-d + 1) / 2);
}

pf_result pf_image_preprocess(const pf_image_processor *p, const uint8_t *rgb, int width, int height, float *out,
                              size_t out_capacity, char *error, size_t error_size) {
    int ow, oh;
    pf_result r = pf_image_output_size(p, width, height, &ow, &oh, error, error_size);
    if (r) return r;
    if (!rgb || !out) return pf__format(error, error_size, PF_ERROR_INVALID_ARGUMENT, "NULL image or output");
    size_t need = (size_t)3 * ow * oh;
    if (out_capacity < need)
        return pf__format(error, error_size, PF_ERROR_BUFFER_TOO_SMALL, "the output needs %zu floats (3 x %d x %d), has room for %zu",
                          need, oh, ow, out_capacity);
    int rw = width, rh = height;
    uint8_t *resized = NULL;
    if (p->do_resize) {
        pf__image_resized_size(p, width, height, &rw, &rh);
        if (pf__image_resize(rgb, width, height, rw, rh, p->resample, p->backend, &resized))
            return pf__format(error, error_size, PF_ERROR_OUT_OF_MEMORY, "out of memory resizing to %d x %d", rw, rh);
    }
    const uint8_t *pixels = resized ? resized : rgb;
    int top = p->do_center_crop ? pf__crop_start(rh, oh, p->backend) : 0;
    int left = p->do_center_crop ? pf__crop_start(rw, ow, p->backend) : 0;
    /* rescale and normalise as each backend does in float32: torchvision folds the rescale into
       mean and std (mean / factor), numpy rescales in double, then normalises in float32 */
    float mean[3], std[3];
    for (int c = 0; c < 3; c++) {
        mean[c] = (float)p->mean[c];
        std[c] = (float)p->std[c];
        if (p->backend == PF_IMAGE_BACKEND_TORCHVISION && p->do_rescale && p->do_normalize) {
            mean[c] = mean[c] * (float)(1.0 / p->rescale_factor);
            std[c] = std[c] * (float)(1.0 / p->rescale_factor);
        }
    }
    for (int c = 0; c < 3; c++)
        for (int y = 0; y < oh; y++)
            for (int x = 0; x < ow; x++) {
                int sy = y + top, sx = x + left;
                int value = sy >= 0 && sy < rh && sx >= 0 && sx < rw ? pixels[((size_t)sy * rw + sx) * 3 + c] : 0;
                float v = (float)value;
                if (p->backend == PF_IMAGE_BACKEND_TORCHVISION) {
                    if (p->do_normalize) v = (v - mean[c]) / std[c];
                    else if (p->do_rescale) v = v * (float)p->rescale_factor;
                } else {
                    if (p->do_rescale) v = (float)(value * p->rescale_factor);
                    if (p->do_normalize) v = (v - mean[c]) / std[c];
                }
                out[((size_t)c * oh + y) * ow + x] = v;
            }
    free(resized);
    return PF_OK;
}

/* ---- FFT: mixed radix, any length ---- */

typedef struct pf__fft {
    int n, num_factors;
    int factors[40];
    double *twiddle; /* [n][2]: e^(-2 pi i k / n) */
} pf__fft;

static pf_result pf__fft_init(pf__fft *f, int n) {
    memset(f, 0, sizeof *f);
    f->n = n;
    for (int m = n, p = 2; m > 1;) { /* smallest factors first; fours pair up the twos */
        while (m % p) p = p * p > m ? m : p + 1;
        f->factors[f->num_factors++] = p;
        m /= p;
    }
    f->twiddle = (double *)malloc((size_t)n * 2 * sizeof(double));
    if (!f->twiddle) return PF_ERROR_OUT_OF_MEMORY;
    for (int k = 0; k < n; k++) {
        double angle = -2.0 * 3.14159265358979323846 * k / n;
        f->twiddle[2 * k] = cos(angle);
        f->twiddle[2 * k + 1] = sin(angle);
    }
    return PF_OK;
}

static void pf__fft_free(pf__fft *f) {
    free(f->twiddle);
    f->twiddle = NULL;
}

/* Decimation in time: the length-m transforms of the p interleaved subsequences (input stride
   `stride`), then each output's p butterflies with the twiddles of length m * p. */
static void pf__fft_step(const pf__fft *f, const double *in, size_t stride, double *out, int m, int level) {
    if (m == 1) {
        out[0] = in[0];
        out[1] = in[1];
        return;
    }
    int p = f->factors[level], sub = m / p;
    for (int q = 0; q < p; q++) pf__fft_step(f, in + 2 * q * stride, stride * p, out + 2 * q * sub, sub, level + 1);
    size_t tw_step = (size_t)f->n / m; /* W_m^j = W_n^(j * n / m) */
    double tmp[2 * 64];
    double *t = p <= 64 ? tmp : (double *)malloc((size_t)2 * p * sizeof(double));
    if (!t) return; /* lengths here factor into small primes (checked at load) */
    for (int k = 0; k < sub; k++) {
        for (int q = 0; q < p; q++) {
            t[2 * q] = out[2 * (q * sub + k)];
            t[2 * q + 1] = out[2 * (q * sub + k) + 1];
        }
        for (int r = 0; r < p; r++) {
            int j = k + r * sub;
            double re = 0, im = 0;
            for (int q = 0; q < p; q++) {
                size_t idx = ((size_t)q * j % m) * tw_step;
                double wr = f->twiddle[2 * idx], wi = f->twiddle[2 * idx + 1];
                re += t[2 * q] * wr - t[2 * q + 1] * wi;
                im += t[2 * q] * wi + t[2 * q + 1] * wr;
            }
            out[2 * j] = re;
            out[2 * j + 1] = im;
        }
    }
    if (t != tmp) free(t);
}

/* out[n][2] = the DFT of in[n][2] (interleaved complex doubles). */
static void pf__fft_run(const pf__fft *f, const double *in, double *out) { pf__fft_step(f, in, 1, out, f->n, 0); }

/* ---- audio feature extractors ---- */

struct pf_audio_processor {
    pf_audio_kind kind;
    int sampling_rate;
    int do_normalize;                 /* Wav2Vec2 */
    int num_mel_bins;                 /* Whisper: feature_size; Speech2Text: num_mel_bins */
    int n_fft, hop_length, frame_length;
    size_t n_samples;                 /* Whisper: the padded length, chunk_length seconds */
    double padding_value;
    int cmvn, normalize_means, normalize_vars; /* Speech2Text */
    double *window;                   /* [frame_length] */
    double *mel_filters;              /* [n_fft / 2 + 1][num_mel_bins] */
    pf__fft fft;
};

static double pf__mel_from_hz(double hz, int kaldi) {
    if (kaldi) return 1127.0 * log(1.0 + hz / 700.0);
    if (hz < 1000.0) return 3.0 * hz / 200.0; /* Slaney: linear below 1 kHz, logarithmic above */
    return 15.0 + log(hz / 1000.0) * (27.0 / log(6.4));
}

static double pf__hz_from_mel(double mel, int kaldi) {
    if (kaldi) return 700.0 * (exp(mel / 1127.0) - 1.0);
    if (mel < 15.0) return 200.0 * mel / 3.0;
    return 1000.0 * exp(log(6.4) / 27.0 * (mel - 15.0));
}

/* transformers' mel_filter_bank: triangles between mel-spaced edges over the FFT bins, Slaney's
   (edges in Hz, area-normalised) or Kaldi's (triangles in mel space, not normalised). */
static void pf__mel_filters(double *filters, int num_bins, int num_mels, double min_hz, double max_hz, int sampling_rate,
                            int kaldi) {
    double mel_min = pf__mel_from_hz(min_hz, kaldi), mel_max = pf__mel_from_hz(max_hz, kaldi);
    double step = (mel_max - mel_min) / (num_mels + 1);
    for (int f = 0; f < num_bins; f++) {
        double bin = kaldi ? pf__mel_from_hz((double)sampling_rate / ((num_bins - 1) * 2) * f, 1)
                           : (double)(sampling_rate / 2) / (num_bins - 1) * f;
        for (int m = 0; m < num_mels; m++) {
            double edge[3];
            for (int e = 0; e < 3; e++) {
                double mel = m + e == num_mels + 1 ? mel_max : mel_min + (m + e) * step;
                edge[e] = kaldi ? mel : pf__hz_from_mel(mel, 0);
            }
            double down = (bin - edge[0]) / (edge[1] - edge[0]), up = (edge[2] - bin) / (edge[2] - edge[1]);
            double v = down < up ? down : up;
            if (v < 0) v = 0;
            if (!kaldi) v *= 2.0 / (edge[2] - edge[0]);
            filters[(size_t)f * num_mels + m] = v;
        }
    }
}

static pf_result pf__audio_read(pf_audio_processor *p, const pf__json *config, const char *class_name, const char *path,
                                char *error, size_t error_size) {
    static const char *const common[] = {"feature_extractor_type", "processor_class", "feature_size", "sampling_rate",
                                         "padding_value", "padding_side", "return_attention_mask", NULL};
    static const char *const wav2vec2[] = {"do_normalize", NULL};
    static const char *const whisper[] = {"n_fft", "hop_length", "chunk_length", "n_samples", "nb_max_frames", "dither", NULL};
    static const char *const speech2text[] = {"num_mel_bins", "dither", "do_ceptral_normalize", "normalize_means",
                                              "normalize_vars", NULL};
    const char *const *own;
    int feature_size;
    if (strcmp(class_name, "Wav2Vec2FeatureExtractor") == 0) {
        p->kind = PF_AUDIO_WAVEFORM;
        own = wav2vec2;
        feature_size = 1;
        p->do_normalize = 1;
    } else if (strcmp(class_name, "WhisperFeatureExtractor") == 0) {
        p->kind = PF_AUDIO_LOG_MEL;
        own = whisper;
        feature_size = 80;
        p->n_fft = 400;
        p->hop_length = 160;
    } else if (strcmp(class_name, "Speech2TextFeatureExtractor") == 0) {
        p->kind = PF_AUDIO_FBANK;
        own = speech2text;
        feature_size = 80;
        p->num_mel_bins = 80;
        p->cmvn = p->normalize_means = p->normalize_vars = 1;
        /* transformers' numpy Kaldi fbank: 25 ms frames, 10 ms hops, a 512-point FFT */
        p->frame_length = 400;
        p->hop_length = 160;
        p->n_fft = 512;
    } else {
        return pf__format(error, error_size, PF_ERROR_UNSUPPORTED,
                          "%s: feature extractor \"%s\" is not implemented (Wav2Vec2, Whisper and Speech2Text are)", path,
                          class_name[0] ? class_name : "(unnamed)");
    }
    const char *known[24];
    int n = 0;
    for (const char *const *k = common; *k; k++) known[n++] = *k;
    for (const char *const *k = own; *k; k++) known[n++] = *k;
    known[n] = NULL;
    int chunk_length = 30, ignored_int = 0, return_mask = 0;
    double dither = 0.0;
    p->sampling_rate = 16000;
    pf_result r;
    if ((r = pf__pre_known_keys(config, known, "feature extractor", path, error, error_size)) ||
        (r = pf__pre_int(config, "feature_size", 1, 4096, &feature_size, path, error, error_size)) ||
        (r = pf__pre_int(config, "sampling_rate", 1, 1000000, &p->sampling_rate, path, error, error_size)) ||
        (r = pf__pre_number(config, "padding_value", &p->padding_value, path, error, error_size)) ||
        (r = pf__pre_bool(config, "return_attention_mask", &return_mask, path, error, error_size)) ||
        (r = pf__pre_bool(config, "do_normalize", &p->do_normalize, path, error, error_size)) ||
        (r = pf__pre_int(config, "n_fft", 2, 1 << 16, &p->n_fft, path, error, error_size)) ||
        (r = pf__pre_int(config, "hop_length", 1, 1 << 16, &p->hop_length, path, error, error_size)) ||
        (r = pf__pre_int(config, "chunk_length", 1, 3600, &chunk_length, path, error, error_size)) ||
        (r = pf__pre_int(config, "n_samples", 0, INT_MAX, &ignored_int, path, error, error_size)) ||
        (r = pf__pre_int(config, "nb_max_frames", 0, INT_MAX, &ignored_int, path, error, error_size)) ||
        (r = pf__pre_number(config, "dither", &dither, path, error, error_size)) ||
        (r = pf__pre_int(config, "num_mel_bins", 1, 4096, &p->num_mel_bins, path, error, error_size)) ||
        (r = pf__pre_bool(config, "do_ceptral_normalize", &p->cmvn, path, error, error_size)) ||
        (r = pf__pre_bool(config, "normalize_means", &p->normalize_means, path, error, error_size)) ||
        (r = pf__pre_bool(config, "normalize_vars", &p->normalize_vars, path, error, error_size)))
        return r;
    const pf__json *side = pf__json_get(config, "padding_side");
    if (side && side->type != PF__JSON_NULL && !(side->type == PF__JSON_STRING && strcmp(side->string, "right") == 0))
        return pf__format(error, error_size, PF_ERROR_UNSUPPORTED, "%s: \"padding_side\" other than \"right\" is not implemented",
                          path);
    if (dither != 0.0)
        return pf__format(error, error_size, PF_ERROR_UNSUPPORTED,
                          "%s: \"dither\": %g is not implemented (it adds random noise; 0 is deterministic)", path, dither);
    if (!isfinite(p->padding_value))
        return pf__format(error, error_size, PF_ERROR_FORMAT, "%s: \"padding_value\" is not finite", path);
    if (p->kind == PF_AUDIO_WAVEFORM) {
        if (feature_size != 1)
            return pf__format(error, error_size, PF_ERROR_UNSUPPORTED, "%s: \"feature_size\": %d (only 1, mono, is implemented)",
                              path, feature_size);
        return PF_OK;
    }
    if (p->kind == PF_AUDIO_LOG_MEL) {
        p->num_mel_bins = feature_size;
        p->frame_length = p->n_fft;
        p->n_samples = (size_t)chunk_length * (size_t)p->sampling_rate;
        if (p->n_samples <= (size_t)p->n_fft / 2 || p->n_samples / p->hop_length < 1)
            return pf__format(error, error_size, PF_ERROR_FORMAT, "%s: %d s chunks are too short for n_fft %d", path, chunk_length,
                              p->n_fft);
    }
    for (int m = p->n_fft, q = 2; m > 1;) { /* the FFT's butterflies are plain sums: keep its factors small */
        while (m % q) q++;
        if (q > 64)
            return pf__format(error, error_size, PF_ERROR_UNSUPPORTED, "%s: an FFT length (%d) with a prime factor above 64", path,
                              p->n_fft);
        m /= q;
    }
    int bins = p->n_fft / 2 + 1;
    p->window = (double *)malloc((size_t)p->frame_length * sizeof(double));
    p->mel_filters = (double *)malloc((size_t)bins * (size_t)p->num_mel_bins * sizeof(double));
    if (!p->window || !p->mel_filters || pf__fft_init(&p->fft, p->n_fft))
        return pf__format(error, error_size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    const double pi = 3.14159265358979323846;
    if (p->kind == PF_AUDIO_LOG_MEL) { /* the periodic Hann window, filters from 0 to 8 kHz */
        for (int i = 0; i < p->frame_length; i++) p->window[i] = 0.5 - 0.5 * cos(2.0 * pi * i / p->frame_length);
        pf__mel_filters(p->mel_filters, bins, p->num_mel_bins, 0.0, 8000.0, p->sampling_rate, 0);
    } else { /* Povey's window (a symmetric Hann to the power 0.85), Kaldi's filters from 20 Hz */
        for (int i = 0; i < p->frame_length; i++)
            p->window[i] = pow(0.5 - 0.5 * cos(2.0 * pi * i / (p->frame_length - 1)), 0.85);
        pf__mel_filters(p->mel_filters, bins, p->num_mel_bins, 20.0, (double)(p->sampling_rate / 2), p->sampling_rate, 1);
    }
    return PF_OK;
}

void pf_audio_processor_free(pf_audio_processor *processor) {
    if (!processor) return;
    free(processor->window);
    free(processor->mel_filters);
    pf__fft_free(&processor->fft);
    free(processor);
}

pf_result pf_audio_processor_load(const char *dir, pf_audio_processor **out, char *error, size_t error_size) {
    if (error && error_size) error[0] = 0;
    if (out) *out = NULL;
    if (!dir || !out) return pf__format(error, error_size, PF_ERROR_INVALID_ARGUMENT, "NULL directory or result pointer");
    char path[PF__PATH_SIZE], class_name[128];
    pf__json *config;
    pf_result r = pf__pre_read_config(dir, &config, path, sizeof path, class_name, sizeof class_name, error, error_size);
    if (r) return r;
    pf_audio_processor *p = (pf_audio_processor *)calloc(1, sizeof *p);
    if (!p) r = pf__format(error, error_size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    else r = pf__audio_read(p, config, class_name, path, error, error_size);
    pf__json_free(config);
    if (r) {
        pf_audio_processor_free(p);
        return r;
    }
    *out = p;
    return PF_OK;
}

pf_audio_processor_info pf_audio_processor_get_info(const pf_audio_processor *p) {
    pf_audio_processor_info info;
    memset(&info, 0, sizeof info);
    if (!p) return info;
    info.kind = p->kind;
    info.sampling_rate = p->sampling_rate;
    info.num_mel_bins = p->kind == PF_AUDIO_WAVEFORM ? 0 : p->num_mel_bins;
    info.padded_samples = p->kind == PF_AUDIO_LOG_MEL ? p->n_samples : 0;
    return info;
}

/* Frames of a Kaldi fbank (no padding: frames that fit whole) or of Whisper's padded chunk. */
static size_t pf__audio_frames(const pf_audio_processor *p, size_t num_samples) {
    if (p->kind == PF_AUDIO_LOG_MEL) return p->n_samples / (size_t)p->hop_length; /* centred frames, the last dropped */
    if (p->kind == PF_AUDIO_FBANK)
        return num_samples < (size_t)p->frame_length ? 0 : 1 + (num_samples - (size_t)p->frame_length) / (size_t)p->hop_length;
    return num_samples;
}

pf_result pf_audio_features_size(const pf_audio_processor *p, size_t num_samples, size_t *rows, size_t *columns,
                                 char *error, size_t error_size) {
    if (error && error_size) error[0] = 0;
    if (!p || !rows || !columns) return pf__format(error, error_size, PF_ERROR_INVALID_ARGUMENT, "NULL argument");
    *rows = *columns = 0;
    if (num_samples == 0 || num_samples > PF__MAX_AUDIO_SAMPLES)
        return pf__format(error, error_size, PF_ERROR_INVALID_ARGUMENT, "%zu samples: must be in [1, %zu]", num_samples,
                          PF__MAX_AUDIO_SAMPLES);
    size_t frames = pf__audio_frames(p, num_samples);
    if (frames == 0)
        return pf__format(error, error_size, PF_ERROR_INVALID_ARGUMENT,
                          "%zu samples are shorter than one %d-sample frame of the filter bank", num_samples, p->frame_length);
    switch (p->kind) {
    case PF_AUDIO_WAVEFORM: *rows = 1, *columns = num_samples; break;
    case PF_AUDIO_LOG_MEL: *rows = (size_t)p->num_mel_bins, *columns = frames; break;
    case PF_AUDIO_FBANK: *rows = frames, *columns = (size_t)p->num_mel_bins; break;
    }
    return PF_OK;
}

/* Wav2Vec2's zero-mean unit-variance normalisation of the utterance (epsilon 1e-7 under the root). */
static void pf__audio_normalize(const float *samples, size_t n, float *out) {
    double mean = 0.0, var = 0.0;
    for (size_t i = 0; i < n; i++) mean += samples[i];
    mean /= (double)n;
    for (size_t i = 0; i < n; i++) var += ((double)samples[i] - mean) * ((double)samples[i] - mean);
    var /= (double)n;
    double scale = 1.0 / sqrt(var + 1e-7);
    for (size_t i = 0; i < n; i++) out[i] = (float)(((double)samples[i] - mean) * scale);
}

/* The power spectrum of one frame: frame[frame_length] windowed, zero-padded to n_fft, then
   |X_k|^2 for k = 0 .. n_fft / 2 into power. buf holds 4 * n_fft doubles. */
static void pf__audio_power(const pf_audio_processor *p, const double *frame, double *buf, double *power) {
    double *in = buf, *spectrum = buf + 2 * p->n_fft;
    for (int i = 0; i < p->n_fft; i++) {
        in[2 * i] = i < p->frame_length ? frame[i] * p->window[i] : 0.0;
        in[2 * i + 1] = 0.0;
    }
    pf__fft_run(&p->fft, in, spectrum);
    for (int k = 0; k <= p->n_fft / 2; k++)
        power[k] = spectrum[2 * k] * spectrum[2 * k] + spectrum[2 * k + 1] * spectrum[2 * k + 1];
}

static double pf__audio_mel(const pf_audio_processor *p, const double *power, int m) {
    double sum = 0.0;
    for (int k = 0; k <= p->n_fft / 2; k++) sum += p->mel_filters[(size_t)k * p->num_mel_bins + m] * power[k];
    return sum;
}

/* Whisper: the utterance padded (or cut) to the chunk, centred frames with reflected edges, log10
   of the mel power floored at 1e-10, then at the maximum - 8, and (x + 4) / 4. out[mel][frame]. */
static pf_result pf__audio_log_mel(const pf_audio_processor *p, const float *samples, size_t n, float *out) {
    size_t total = p->n_samples, frames = pf__audio_frames(p, n), half = (size_t)p->n_fft / 2;
    int bins = p->n_fft / 2 + 1;
    double *frame = (double *)malloc((size_t)p->n_fft * sizeof(double));
    double *buf = (double *)malloc((size_t)4 * p->n_fft * sizeof(double));
    double *power = (double *)malloc((size_t)bins * sizeof(double));
    if (!frame || !buf || !power) {
        free(frame), free(buf), free(power);
        return PF_ERROR_OUT_OF_MEMORY;
    }
    double largest = -HUGE_VAL;
    for (size_t t = 0; t < frames; t++) {
        for (int i = 0; i < p->n_fft; i++) {
            /* position in the padded chunk, reflected at its ends (numpy's and torch's "reflect") */
            long long at = (long long)(t * (size_t)p->hop_length) + i - (long long)half;
            if (at < 0) at = -at;
            if (at >= (long long)total) at = 2 * ((long long)total - 1) - at;
            frame[i] = (size_t)at < n ? (double)samples[at] : p->padding_value;
        }
        pf__audio_power(p, frame, buf, power);
        for (int m = 0; m < p->num_mel_bins; m++) {
            double mel = pf__audio_mel(p, power, m);
            double v = log10(mel > 1e-10 ? mel : 1e-10);
            if (v > largest) largest = v;
            out[(size_t)m * frames + t] = (float)v;
        }
    }
    for (size_t i = 0; i < frames * (size_t)p->num_mel_bins; i++) {
        double v = out[i] < largest - 8.0 ? largest - 8.0 : out[i];
        out[i] = (float)((v + 4.0) / 4.0);
    }
    free(frame), free(buf), free(power);
    return PF_OK;
}

/* Speech2Text: transformers' numpy Kaldi fbank of the samples scaled to 16-bit range: per frame
   the DC offset removed, pre-emphasis 0.97, Povey's window, the mel power floored at float32's
   epsilon, natural log; then the utterance's mean and standard deviation per bin normalised
   (CMVN) where configured. out[frame][mel]. */
static pf_result pf__audio_fbank(const pf_audio_processor *p, const float *samples, size_t n, float *out) {
    size_t frames = pf__audio_frames(p, n);
    int bins = p->n_fft / 2 + 1, mels = p->num_mel_bins, len = p->frame_length;
    double *frame = (double *)malloc((size_t)len * sizeof(double));
    double *buf = (double *)malloc((size_t)4 * p->n_fft * sizeof(double));
    double *power = (double *)malloc((size_t)bins * sizeof(double));
    if (!frame || !buf || !power) {
        free(frame), free(buf), free(power);
        return PF_ERROR_OUT_OF_MEMORY;
    }
    for (size_t t = 0; t < frames; t++) {
        const float *x = samples + t * (size_t)p->hop_length;
        double mean = 0.0;
        for (int i = 0; i < len; i++) mean += (double)x[i] * 32768.0;
        mean /= len;
        for (int i = len - 1; i >= 0; i--) {
            double v = (double)x[i] * 32768.0 - mean;
            frame[i] = i ? v - 0.97 * ((double)x[i - 1] * 32768.0 - mean) : v * (1.0 - 0.97);
        }
        pf__audio_power(p, frame, buf, power);
        for (int m = 0; m < mels; m++) {
            double mel = pf__audio_mel(p, power, m);
            out[t * mels + m] = (float)log(mel > 1.192092955078125e-07 ? mel : 1.192092955078125e-07);
        }
    }
    if (p->cmvn) /* numpy's utterance_cmvn: the standard deviation is about the mean either way */
        for (int m = 0; m < mels; m++) {
            double mean = 0.0, var = 0.0;
            for (size_t t = 0; t < frames; t++) mean += out[t * mels + m];
            mean /= (double)frames;
            for (size_t t = 0; t < frames; t++) var += (out[t * mels + m] - mean) * (out[t * mels + m] - mean);
            double std = sqrt(var / (double)frames);
            for (size_t t = 0; t < frames; t++) {
                double v = out[t * mels + m] - (p->normalize_means ? mean : 0.0);
                out[t * mels + m] = (float)(p->normalize_vars ? v / std : v);
            }
        }
    free(frame), free(buf), free(power);
    return PF_OK;
}

pf_result pf_audio_features(const pf_audio_processor *p, const float *samples, size_t num_samples, float *out,
                            size_t out_capacity, char *error, size_t error_size) {
    size_t rows, columns;
    pf_result r = pf_audio_features_size(p, num_samples, &rows, &columns, error, error_size);
    if (r) return r;
    if (!samples || !out) return pf__format(error, error_size, PF_ERROR_INVALID_ARGUMENT, "NULL samples or output");
    if (out_capacity < rows * columns)
        return pf__format(error, error_size, PF_ERROR_BUFFER_TOO_SMALL, "the features need %zu floats (%zu x %zu), room for %zu",
                          rows * columns, rows, columns, out_capacity);
    for (size_t i = 0; i < num_samples; i++)
        if (!isfinite(samples[i]))
            return pf__format(error, error_size, PF_ERROR_INVALID_ARGUMENT, "sample %zu is not a finite number", i);
    switch (p->kind) {
    case PF_AUDIO_WAVEFORM:
        if (p->do_normalize) pf__audio_normalize(samples, num_samples, out);
        else memcpy(out, samples, num_samples * sizeof(float));
        return PF_OK;
    case PF_AUDIO_LOG_MEL: r = pf__audio_log_mel(p, samples, num_samples, out); break;
    case PF_AUDIO_FBANK: r = pf__audio_fbank(p, samples, num_samples, out); break;
    }
    if (r) return pf__format(error, error_size, r, "out of memory");
    return PF_OK;
}

/* =============================================================================================== */
/* backends: the operation table and the CPU backend                                               */
/* =============================================================================================== */

typedef struct pf__rank pf__rank;
typedef struct pf__group pf__group;

/* Flags the ranks read between operations (a failure, aborted communicators): atomic loads and
   stores (GCC's and Clang's builtins), so that readers need no lock. */
#define PF__LOAD_FLAG(flag) __atomic_load_n(&(flag), __ATOMIC_ACQUIRE)
#define PF__STORE_FLAG(flag, value) __atomic_store_n(&(flag), (value), __ATOMIC_RELEASE)

/* A weight on a rank's device, logical [rows (out), cols (in)] row-major; vectors have cols 1. */
typedef struct pf__weight {
    void *data; /* NULL when the slot is absent or the slice is empty */
    pf__dtype dtype;
    size_t rows, cols;
    size_t col_begin; /* the slice's first column in the whole tensor (row-split weights) */
} pf__weight;

/* What one forward call computes, the same on every rank. */
typedef struct pf__step {
    const int32_t *ids;     /* host, [batch][seq_len] */
    int batch, seq_len;
    int past;               /* tokens already in the KV cache of each sequence */
    const float *inv_freq;  /* host, [rotary_dim / 2]: rotary frequencies for this step, or NULL */
    const int *pad;         /* host, [batch]: left pads of each sequence (masked keys; positions
                               count from the first real token), or NULL */
    const int32_t *type_ids;/* host, [batch][seq_len]: token type (segment) ids; set whenever the
                               model has a token type table */
    int cross_len;          /* an encoder-decoder's decoder step: the encoder's positions per row
                               (its output's keys and values are in the ranks' cross caches) */
    const int *cross_pad;   /* host, [batch]: the encoder input's left pads, or NULL */
    const float *patches;   /* host, [batch][patches][channels * patch^2]: an image encoder's input
                               (its positions after the class and distillation tokens), or NULL */
    const int *cache_rows;  /* host, [batch]: the KV cache row of each sequence (continuous
                               batching places requests in free rows), or NULL: row b */
} pf__step;

/* Which keys a query sees (pf__attn_shape.mask). */
enum {
    PF__MASK_BIDIRECTIONAL, /* every key of its sequence (encoders); a relative bias bucketed both ways */
    PF__MASK_CAUSAL,        /* keys up to its own position (decoders); a relative bias towards the past */
    PF__MASK_CROSS          /* all cache_len keys of its row, the step's left pads excepted, q rows
                               packed [heads * head_dim] (a decoder's attention over the encoder) */
};

/* The attention of one layer on one rank. Local query head h reads key/value head
   (head_begin + h) / kv_group - kv_begin of the rank's cache. */
typedef struct pf__attn_shape {
    int heads, kv_heads, head_dim;
    int head_begin, kv_begin, kv_group;
    int cache_len;
    int window;             /* keys j with pos - j < window; 0: all earlier keys */
    int mask;               /* PF__MASK_*: the keys a query sees, left pads always excepted */
    int rotary_dim;         /* for the rotary op */
    pf__dtype cache_dtype;  /* how the cache read (and appended to) stores keys and values */
    float scale;
    const float *alibi;     /* device, [heads]: score += slope * key position; NULL: none */
    const float *rel_bias;  /* device, [heads][rel_rows]: score += rel_bias[h][bucket(key - query)],
                               bucketed as T5 does (bidirectional); NULL: none */
    int rel_rows, rel_buckets, rel_max_distance;
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
    /* rows of row_bytes each, strided on both sides (a rank's columns of the host logits) */
    void (*download_rows)(pf__rank *r, void *host, size_t host_stride, const void *src, size_t src_stride,
                          size_t row_bytes, size_t rows);
    /* device to device */
    void (*copy)(pf__rank *r, void *dst, const void *src, size_t bytes);
    /* out[b*T+t] = tokens[ids[b][t] - first] * scale for ids among the rank's tokens rows
       (first..first + tokens->rows), zeros for the others' */
    void (*embed)(pf__rank *r, float *out, const pf__weight *tokens, const pf__step *s, float scale, int first);
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
    /* Appends this step's k, v to the caches [rows][cache_len][kv_heads*head_dim] at positions
       past..past+T-1, sequence b in row s->cache_rows[b] (or b). qkv rows are [q (heads*head_dim)
       | k (kv_heads*head_dim) | v (same)]. */
    void (*kv_append)(pf__rank *r, void *k_cache, void *v_cache, const float *qkv, const pf__step *s,
                      const pf__attn_shape *a);
    /* out[b*T+t] = softmax(q k^T * scale + alibi + relative bias) v over the cached keys the
       query may see (a->mask, a->window, left pads), q from the qkv rows (a q row for
       PF__MASK_CROSS). */
    void (*attend)(pf__rank *r, float *out, const float *qkv, const void *k_cache, const void *v_cache,
                   const pf__step *s, const pf__attn_shape *a);
    /* x = sum of x over all ranks, identical on every rank afterwards */
    void (*all_reduce)(pf__rank *r, float *x, size_t count);
    /* Beam search: row dst[k] of a cache [rows][row_bytes] becomes old row src[k], k < count
       (host arrays; the rows that change only), for the first used_bytes of each row. */
    void (*reorder_rows)(pf__rank *r, void *cache, const int *dst, const int *src, int count, size_t row_bytes,
                         size_t used_bytes);
    /* The whole device's memory in use and in all, as the system reports it; from any thread.
       -1 when it cannot say. */
    int (*device_memory)(int device, size_t *used, size_t *total);
    /* Before a forward's first operation (NULL: nothing to do): the step's host arrays the ops
       read (left pads, the sources' pads, rotary frequencies) to the device, so that no upload
       happens between the forward's collectives. */
    void (*prepare)(pf__rank *r, const pf__step *s);
    /* Keys and values cached in the weights' dtype when that is 16-bit (half the memory and the
       bytes a decode step reads); 0: always fp32. Cross caches stay fp32 either way. */
    int cache_in_weight_dtype;
} pf__backend;

/* A share of the split dimensions held by one rank. */
typedef struct pf__share {
    int head_begin, heads;
    int kv_begin, kv_heads; /* the key/value heads its query heads read (replicated if shared) */
    int mlp_begin, mlp_width;
    int vocab_begin, vocab_rows; /* token embedding and LM head rows */
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
    float *rel_bias;          /* [heads][rel rows]: the rank's heads of the relative bias table, or NULL */
    float *enc_rel_bias;      /* the same of an encoder-decoder's encoder tower */
    void *k_cache, *v_cache;  /* [pf__cache_layers][max_batch][cache_len][kv_heads * head_dim] in cache_dtype */
    pf__dtype cache_dtype;
    float *cross_k, *cross_v; /* encoder-decoders: [decoder blocks][max_batch][cache_len][kv width], each
                                 row's encoder keys (values) packed by the request's cross_len */
    /* scratch, [max_tokens][width] */
    float *x, *h, *part;      /* width hidden */
    float *embed;             /* width embed_dim, when the embedding is projected in */
    float *qkv;               /* width (heads + 2 kv_heads) * head_dim */
    float *attn;              /* width heads * head_dim */
    float *mlp;               /* width mlp_width (times 2 when gated) */
    float *mlp_act;           /* width mlp_width, when gated */
    float *logits;            /* rank 0 only: [logit_rows][vocab] */
    float *head_out;          /* rank 0, classification heads: [max_tokens][num_labels or 2] */
    float *patch_in;          /* image encoders: [max_batch][patches][channels * patch^2] */
    float *scores;            /* CPU attention: [cache_len] */
    float *reduce_tmp;        /* CPU all-reduce: [max_tokens * hidden] */
    float *reorder_tmp;       /* CPU beam reorder: one layer's cache, when max_batch > 1 */
    pf__allocation *allocations;
    size_t num_allocations, allocations_cap;
    size_t bytes[PF__MEM_KINDS];
    pf__mem_kind allocating;  /* the kind new allocations count under */
    size_t device_used, device_total; /* the device's memory after the last job (group mutex) */
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

#if defined(__GNUC__) || defined(__clang__)
#define PF__UNROLL _Pragma("GCC unroll 8")
#define PF__INLINE __attribute__((always_inline)) inline
#else
#define PF__UNROLL
#define PF__INLINE
#endif

/* Weight i of w, stored as wt, in fp32 (wt a constant in the kernels, which then need no branch).
   Q8: i counts the values of whole rows of whole blocks. */
static PF__INLINE float pf__weight_value(const void *w, size_t i, const int wt) {
    if (wt == PF__DTYPE_Q8) {
        const unsigned char *block = (const unsigned char *)w + i / PF__Q8_BLOCK * PF__Q8_BYTES;
        uint16_t d;
        memcpy(&d, block, 2);
        return pf__f16_to_f32(d) * (float)(int8_t)block[2 + i % PF__Q8_BLOCK];
    }
    if (wt == PF__DTYPE_F16) return pf__f16_to_f32(((const uint16_t *)w)[i]);
    if (wt == PF__DTYPE_BF16) return pf__bf16_to_f32(((const uint16_t *)w)[i]);
    return ((const float *)w)[i];
}

static void pf__cpu_embed(pf__rank *r, float *out, const pf__weight *tokens, const pf__step *s, float scale,
                          int first) {
    (void)r;
    size_t d = tokens->cols, n = (size_t)s->batch * s->seq_len;
    for (size_t row = 0; row < n; row++) {
        size_t id = (size_t)(s->ids[row] - first); /* wraps for ids below first */
        for (size_t i = 0; i < d; i++) out[row * d + i] = id < tokens->rows ? pf__weight_value(tokens->data, id * d + i, tokens->dtype) * scale : 0.0f;
    }
}

static void pf__cpu_download_rows(pf__rank *r, void *host, size_t host_stride, const void *src, size_t src_stride,
                                  size_t row_bytes, size_t rows) {
    (void)r;
    for (size_t i = 0; i < rows && row_bytes; i++)
        memcpy((char *)host + i * host_stride, (const char *)src + i * src_stride, row_bytes);
}

static void pf__cpu_add_positions(pf__rank *r, float *x, const pf__weight *table, const pf__step *s, int offset) {
    (void)r;
    size_t d = table->cols;
    for (int b = 0; b < s->batch; b++)
        for (int t = 0; t < s->seq_len; t++) {
            float *row = x + ((size_t)b * s->seq_len + t) * d;
            int position = s->past + t - (s->pad ? s->pad[b] : 0);
            size_t first = (size_t)(offset + (position > 0 ? position : 0)) * d;
            for (size_t i = 0; i < d; i++) row[i] += pf__weight_value(table->data, first + i, table->dtype);
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

/* Attention's dot product where AVX2 is missing: in double with four independent sums, which
   the compiler can vectorise without -ffast-math. */
static float pf__dot(const float *a, const float *b, size_t n) {
    double s[4] = {0, 0, 0, 0};
    size_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (int k = 0; k < 4; k++) s[k] += (double)a[i + k] * b[i + k];
    double sum = (s[0] + s[1]) + (s[2] + s[3]);
    for (; i < n; i++) sum += (double)a[i] * b[i];
    return (float)sum;
}

/* The CPU matrix product, out[r][o] = sum_i x[r][i] w[o][i] + bias[o]. Products are summed in
   fp32 over chunks of PF__CHUNK inputs, and the chunk sums in double. Chunk boundaries are fixed
   in the whole tensor's columns (w->col_begin), so a rank holding columns a..b sums the very chunks
   one rank sums there (except the one a boundary cuts), in the same lanes when the boundary is a
   multiple of 8, and in the same order: a split sum then differs from the whole by
   little more than each rank's rounding of its partial to fp32, which the 1e-5 bound between rank
   counts needs; one fp32 sum per dot product missed it. Tiles of PF__TILE_ROWS rows of x by
   PF__TILE_OUTS weight rows keep 12 accumulators in registers; blocks of PF__KBLOCK inputs,
   PF__OBLOCK weight rows and PF__RBLOCK rows of x keep what a tile reads in cache. */
#define PF__CHUNK 256
#define PF__KBLOCK (4 * PF__CHUNK)
#define PF__OBLOCK 96
#define PF__RBLOCK 48 /* whole tiles of 4, 6 or 8 rows */
#define PF__TILE_ROWS 4
#define PF__TILE_OUTS 3
#define PF__ROW_OUTS_AVX2 8     /* one row of x (decode): more weight rows in flight, 10% faster */
#define PF__ROW_OUTS_PORTABLE 4 /* its double lanes spill beyond 4 */
#define PF__MAX_OUTS 8
#define PF__MAX_ROWS 8

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__) && !defined(PF_NO_AVX2)
#define PF__AVX2 1
#include <cpuid.h>
#include <immintrin.h>
#define PF__AVX2_TARGET __attribute__((target("avx2,fma,f16c")))

/* Lanes of a vector below `count`, as a maskload mask. */
PF__AVX2_TARGET static __m256i pf__lanes_below(size_t count) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(count < 8 ? count : 8)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
#else
#define PF__AVX2_TARGET
#endif

/* A tile adds sum over inputs [begin, end) of x[i][.] w[j][.] to acc[i * ld + j], for mr rows of x
   (stride k) and nr weight rows (stride k) stored in one dtype; chunks end at first_end, then
   every PF__CHUNK. */
typedef void (*pf__tile_fn)(double *acc, size_t ld, const float *x, const void *w, size_t k, size_t begin,
                            size_t end, size_t first_end);


/* Without AVX2 and FMA, the products are rounded to fp32 before an fp32 add, which makes the sums
   across a split chunk drift further apart (1.2e-5 between rank counts on OPT-350m's shape):
   this version sums exact products in double instead, so it needs no chunks. */
static PF__INLINE void pf__tile_portable(double *acc, size_t ld, const float *x, const void *w, size_t k,
                                         size_t begin, size_t end, size_t first_end, const int mr, const int nr,
                                         const int wt) {
    double lanes[PF__TILE_ROWS][PF__MAX_OUTS][4] = {{{0}}};
    (void)first_end;
    size_t p = begin;
    for (; p + 4 <= end; p += 4)
        PF__UNROLL for (int i = 0; i < mr; i++)
            PF__UNROLL for (int j = 0; j < nr; j++)
                PF__UNROLL for (int l = 0; l < 4; l++)
                    lanes[i][j][l] += (double)x[i * k + p + l] * pf__weight_value(w, j * k + p + l, wt);
    for (int i = 0; i < mr; i++)
        for (int j = 0; j < nr; j++) {
            double sum = (lanes[i][j][0] + lanes[i][j][1]) + (lanes[i][j][2] + lanes[i][j][3]);
            for (size_t q = p; q < end; q++) sum += (double)x[i * k + q] * pf__weight_value(w, j * k + q, wt);
            acc[i * ld + j] += sum;
        }
}

#ifdef PF__AVX2
/* The same sums with AVX2 and FMA: lane l of a chunk holds the products of inputs l, l + 8, ... */
/* Where weight i of w, stored as wt, is (for prefetching: it may be past the end). */
static PF__INLINE const char *pf__weight_address(const void *w, size_t i, const int wt) {
    return (const char *)w + i * (wt == PF__DTYPE_F32 ? sizeof(float) : sizeof(uint16_t));
}

/* Weights i.. of w, stored as wt, as eight fp32 lanes; with count < 8, lanes from count on are 0. */
PF__AVX2_TARGET static PF__INLINE __m256 pf__load_weights_avx2(const void *w, size_t i, size_t count, const int wt) {
    __m128i half;
    if (wt == PF__DTYPE_F32)
        return count >= 8 ? _mm256_loadu_ps((const float *)w + i) : _mm256_maskload_ps((const float *)w + i, pf__lanes_below(count));
    if (count >= 8) {
        half = _mm_loadu_si128((const __m128i *)((const uint16_t *)w + i));
    } else {
        uint16_t part[8] = {0};
        memcpy(part, (const uint16_t *)w + i, count * sizeof(uint16_t));
        half = _mm_loadu_si128((const __m128i *)part);
    }
    if (wt == PF__DTYPE_BF16) return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(half), 16));
    return _mm256_cvtph_ps(half);
}

PF__AVX2_TARGET static PF__INLINE void pf__tile_avx2(double *acc, size_t ld, const float *x, const void *w, size_t k,
                                                     size_t begin, size_t end, size_t first_end, const int mr,
                                                     const int nr, const int wt) {
    __m256d sums[PF__MAX_ROWS][PF__MAX_OUTS];
    PF__UNROLL for (int i = 0; i < mr; i++)
        PF__UNROLL for (int j = 0; j < nr; j++) sums[i][j] = _mm256_setzero_pd();
    for (size_t c0 = begin; c0 < end;) {
        size_t c1 = c0 < first_end ? first_end : c0 + PF__CHUNK;
        if (c1 > end) c1 = end;
        __m256 lanes[PF__MAX_ROWS][PF__MAX_OUTS];
        PF__UNROLL for (int i = 0; i < mr; i++)
            PF__UNROLL for (int j = 0; j < nr; j++) lanes[i][j] = _mm256_setzero_ps();
        size_t p = c0;
        /* One row of x against 16-bit weights (decode): one 32-byte load gives 16 inputs of a row
           (two steps of 8, in the same order per lane as the loop below), half the loads per byte
           streamed. With more rows of x, their registers would not fit. */
        for (; wt != PF__DTYPE_F32 && mr == 1 && p + 16 <= c1; p += 16) {
            __m256 x_low[PF__MAX_ROWS], x_high[PF__MAX_ROWS];
            PF__UNROLL for (int i = 0; i < mr; i++) {
                x_low[i] = _mm256_loadu_ps(x + i * k + p);
                x_high[i] = _mm256_loadu_ps(x + i * k + p + 8);
            }
            PF__UNROLL for (int j = 0; j < nr; j++) {
                _mm_prefetch(pf__weight_address(w, (size_t)(j + nr) * k + p, wt), _MM_HINT_T0);
                __m256i both = _mm256_loadu_si256((const __m256i *)((const uint16_t *)w + j * k + p));
                __m256 low, high;
                if (wt == PF__DTYPE_BF16) {
                    low = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm256_castsi256_si128(both)), 16));
                    high = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm256_extracti128_si256(both, 1)), 16));
                } else {
                    low = _mm256_cvtph_ps(_mm256_castsi256_si128(both));
                    high = _mm256_cvtph_ps(_mm256_extracti128_si256(both, 1));
                }
                PF__UNROLL for (int i = 0; i < mr; i++) {
                    lanes[i][j] = _mm256_fmadd_ps(x_low[i], low, lanes[i][j]);
                    lanes[i][j] = _mm256_fmadd_ps(x_high[i], high, lanes[i][j]);
                }
            }
        }
        for (; p + 8 <= c1; p += 8) {
            __m256 wv[PF__MAX_OUTS];
            if (mr == 1) /* decode streams the weights: fetch the next tile's rows meanwhile */
                PF__UNROLL for (int j = 0; j < nr; j++)
                    _mm_prefetch(pf__weight_address(w, (size_t)(j + nr) * k + p, wt), _MM_HINT_T0);
            PF__UNROLL for (int j = 0; j < nr; j++) wv[j] = pf__load_weights_avx2(w, j * k + p, 8, wt);
            PF__UNROLL for (int i = 0; i < mr; i++) {
                __m256 xv = _mm256_loadu_ps(x + i * k + p);
                PF__UNROLL for (int j = 0; j < nr; j++) lanes[i][j] = _mm256_fmadd_ps(xv, wv[j], lanes[i][j]);
            }
        }
        if (p < c1) { /* the chunk's last few inputs: the lanes past them load zeros */
            __m256 wv[PF__MAX_OUTS];
            __m256i mask = pf__lanes_below(c1 - p);
            PF__UNROLL for (int j = 0; j < nr; j++) wv[j] = pf__load_weights_avx2(w, j * k + p, c1 - p, wt);
            PF__UNROLL for (int i = 0; i < mr; i++) {
                __m256 xv = _mm256_maskload_ps(x + i * k + p, mask);
                PF__UNROLL for (int j = 0; j < nr; j++) lanes[i][j] = _mm256_fmadd_ps(xv, wv[j], lanes[i][j]);
            }
        }
        PF__UNROLL for (int i = 0; i < mr; i++)
            PF__UNROLL for (int j = 0; j < nr; j++) {
                __m256d low = _mm256_cvtps_pd(_mm256_castps256_ps128(lanes[i][j]));
                __m256d high = _mm256_cvtps_pd(_mm256_extractf128_ps(lanes[i][j], 1));
                sums[i][j] = _mm256_add_pd(sums[i][j], _mm256_add_pd(low, high));
            }
        c0 = c1;
    }
    for (int i = 0; i < mr; i++)
        for (int j = 0; j < nr; j++) {
            double d[4];
            _mm256_storeu_pd(d, sums[i][j]);
            acc[i * ld + j] += (d[0] + d[1]) + (d[2] + d[3]);
        }
}
#endif

/* The tile shapes the blocked loop needs, for one instruction set and weight dtype: full tiles,
   then the weight rows left at a panel's end, then single rows of x (all of decode) against `outs`
   weight rows. */
#define PF__TILE_SHAPES_OF(isa, target, outs, dt, wt)                                                                  \
    target static void pf__tile_##isa##_##dt##_full(double *a, size_t ld, const float *x, const void *w, size_t k,    \
                                                    size_t b, size_t e, size_t f) {                                   \
        pf__tile_##isa(a, ld, x, w, k, b, e, f, PF__TILE_ROWS, PF__TILE_OUTS, wt);                                    \
    }                                                                                                                  \
    target static void pf__tile_##isa##_##dt##_rows(double *a, size_t ld, const float *x, const void *w, size_t k,    \
                                                    size_t b, size_t e, size_t f) {                                   \
        pf__tile_##isa(a, ld, x, w, k, b, e, f, PF__TILE_ROWS, 1, wt);                                                \
    }                                                                                                                  \
    target static void pf__tile_##isa##_##dt##_outs(double *a, size_t ld, const float *x, const void *w, size_t k,    \
                                                    size_t b, size_t e, size_t f) {                                   \
        pf__tile_##isa(a, ld, x, w, k, b, e, f, 1, outs, wt);                                                         \
    }                                                                                                                  \
    target static void pf__tile_##isa##_##dt##_one(double *a, size_t ld, const float *x, const void *w, size_t k,     \
                                                   size_t b, size_t e, size_t f) {                                    \
        pf__tile_##isa(a, ld, x, w, k, b, e, f, 1, 1, wt);                                                            \
    }                                                                                                                  \
    static const pf__tile_fn pf__tiles_##isa##_##dt[4] = {pf__tile_##isa##_##dt##_full, pf__tile_##isa##_##dt##_rows, \
                                                          pf__tile_##isa##_##dt##_outs, pf__tile_##isa##_##dt##_one};
/* ... for each weight dtype, indexed by pf__dtype. */
#define PF__TILE_SHAPES(isa, target, outs)                                                                             \
    PF__TILE_SHAPES_OF(isa, target, outs, f32, PF__DTYPE_F32)                                                          \
    PF__TILE_SHAPES_OF(isa, target, outs, f16, PF__DTYPE_F16)                                                          \
    PF__TILE_SHAPES_OF(isa, target, outs, bf16, PF__DTYPE_BF16)                                                        \
    static const pf__tile_fn *const pf__tiles_##isa[3] = {pf__tiles_##isa##_f32, pf__tiles_##isa##_f16,               \
                                                          pf__tiles_##isa##_bf16};
PF__TILE_SHAPES(portable, , PF__ROW_OUTS_PORTABLE)
#ifdef PF__AVX2
PF__TILE_SHAPES(avx2, PF__AVX2_TARGET, PF__ROW_OUTS_AVX2)
#endif


/* Q8 matrix products. The activations are quantized like the weights, per block of PF__Q8_BLOCK
   inputs (an fp32 scale dx and int8 values in -127..127), so each block's product is an exact
   int32 dot of 32 int8 pairs; out[r][o] sums the blocks' dots times dx[r][b] * d_o[b] in fp32. A
   pf__q8_rows_fn computes that for `rows` rows of x (qx [rows][nb * 32], dx [rows][nb]) against
   n_out weight rows, into out (rows ld apart). */
typedef void pf__q8_rows_fn(float *out, size_t ld, const int8_t *qx, const float *dx, size_t rows,
                            const unsigned char *w, size_t nb, size_t n_out);

static float pf__q8_scale(const unsigned char *block) {
    uint16_t d;
    memcpy(&d, block, 2);
    return pf__f16_to_f32(d);
}

static void pf__q8_rows_portable(float *out, size_t ld, const int8_t *qx, const float *dx, size_t rows,
                                 const unsigned char *w, size_t nb, size_t n_out) {
    size_t row_bytes = nb * PF__Q8_BYTES, k = nb * PF__Q8_BLOCK;
    for (size_t r = 0; r < rows; r++)
        for (size_t o = 0; o < n_out; o++) {
            const unsigned char *row = w + o * row_bytes;
            float sum = 0;
            for (size_t b = 0; b < nb; b++) {
                const unsigned char *block = row + b * PF__Q8_BYTES;
                int32_t dot = 0;
                for (int i = 0; i < PF__Q8_BLOCK; i++) dot += (int32_t)qx[r * k + b * PF__Q8_BLOCK + i] * (int8_t)block[2 + i];
                sum += (float)dot * (dx[r * nb + b] * pf__q8_scale(block));
            }
            out[r * ld + o] = sum;
        }
}

#ifdef PF__AVX2
/* A block's scale by F16C: calling the portable pf__f16_to_f32 (SSE code) from these loops cost
   20x, SSE instructions stalling on the dirty upper halves of the ymm registers. */
PF__AVX2_TARGET static PF__INLINE float pf__q8_scale_f16c(const unsigned char *block) {
    uint16_t d;
    memcpy(&d, block, 2);
    return _cvtsh_ss(d);
}

/* Eight int32 sums of products of 32 int8 pairs: maddubs wants one unsigned operand, so x's sign
   moves onto w (|x| <= 127 and |w| <= 127: no pair sum saturates 16 bits). */
PF__AVX2_TARGET static PF__INLINE __m256i pf__q8_dot_avx2(__m256i x, __m256i w) {
    __m256i pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(x, x), _mm256_sign_epi8(w, x));
    return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
}

PF__AVX2_TARGET static float pf__hsum_avx2(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

/* The tile of both SIMD kernels: R rows of x by 4 weight rows, each weight block loaded once for
   the R rows; dot() is the block's int8 dot product (maddubs on AVX2, vpdpbusd with VNNI). R is a
   constant where it is inlined, so acc stays in registers (4 x 4 needs AVX-512VL's 32). */
#define PF__Q8_AHEAD 8 /* blocks: the weight rows stream from memory (decode) */
#define PF__Q8_TILE(name, target, R, dot)                                                                              \
    target static void name(float *out, size_t ld, const int8_t *qx, const float *dx, size_t rows,                   \
                            const unsigned char *w, size_t nb, size_t n_out) {                                       \
        size_t row_bytes = nb * PF__Q8_BYTES, k = nb * PF__Q8_BLOCK;                                                \
        for (size_t r0 = 0; r0 < rows; r0 += R) {                                                                   \
            size_t nr = rows - r0 < R ? rows - r0 : R;                                                              \
            for (size_t o = 0; o < n_out; o += 4) {                                                                 \
                size_t no = n_out - o < 4 ? n_out - o : 4;                                                          \
                const unsigned char *wr[4];                                                                         \
                __m256 acc[R][4];                                                                                   \
                PF__UNROLL for (int j = 0; j < 4; j++) wr[j] = w + (o + ((size_t)j < no ? (size_t)j : 0)) * row_bytes; \
                PF__UNROLL for (int r = 0; r < R; r++) PF__UNROLL for (int j = 0; j < 4; j++) acc[r][j] = _mm256_setzero_ps(); \
                for (size_t b = 0; b < nb; b++) {                                                                   \
                    __m256i wv[4];                                                                                  \
                    float dw[4];                                                                                    \
                    PF__UNROLL for (int j = 0; j < 4; j++) {                                                        \
                        _mm_prefetch((const char *)(wr[j] + (b + PF__Q8_AHEAD) * PF__Q8_BYTES), _MM_HINT_T0);      \
                        wv[j] = _mm256_loadu_si256((const __m256i *)(wr[j] + b * PF__Q8_BYTES + 2));                \
                        dw[j] = pf__q8_scale_f16c(wr[j] + b * PF__Q8_BYTES);                                       \
                    }                                                                                               \
                    PF__UNROLL for (int r = 0; r < R; r++) {                                                        \
                        size_t rr = r0 + ((size_t)r < nr ? (size_t)r : 0);                                          \
                        __m256i xv = _mm256_loadu_si256((const __m256i *)(qx + rr * k + b * PF__Q8_BLOCK));         \
                        float xd = dx[rr * nb + b];                                                                 \
                        PF__UNROLL for (int j = 0; j < 4; j++)                                                      \
                            acc[r][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot(xv, wv[j])), _mm256_set1_ps(xd * dw[j]), \
                                                        acc[r][j]);                                                 \
                    }                                                                                               \
                }                                                                                                   \
                for (size_t r = 0; r < nr; r++)                                                                     \
                    for (size_t j = 0; j < no; j++) out[(r0 + r) * ld + o + j] = pf__hsum_avx2(acc[r][j]);          \
            }                                                                                                       \
        }                                                                                                           \
    }

PF__Q8_TILE(pf__q8_rows_avx2, PF__AVX2_TARGET, 2, pf__q8_dot_avx2)
PF__Q8_TILE(pf__q8_row_avx2, PF__AVX2_TARGET, 1, pf__q8_dot_avx2) /* decode: one row, no idle lanes of the tile */
#endif

#if defined(PF__AVX2) && !defined(PF_NO_AVX512) && (defined(__clang__) || __GNUC__ >= 5)
#define PF__AVX512 1
#define PF__AVX512_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")))
/* AVX-512VL gives the 256-bit code 32 registers: the AVX2 tile, the same sums bit for bit, in 4
   rows of x by 6 weight rows (24 accumulators; each step loads 10 vectors for 24 FMAs, the 4x3
   tile 7 for 12), 5-13% faster alone on Zen 4. 512-bit lanes were slower there (Zen 4 splits them
   in two, and converting 16 lanes to double at a chunk's end cost a quarter of the time), and so
   was a packed outer-product GEMM: to stay within 1e-5 between rank counts it must move its sums
   to double every 8-16 inputs (see BENCHMARKS.md). */
#define PF__TILE_ROWS_AVX512 4
#define PF__TILE_OUTS_AVX512 6

/* Many rows take the wider tiles; single rows (decode, bandwidth-bound) keep the AVX2 ones. */
#define PF__TILE_SHAPES_AVX512(dt, wt)                                                                                 \
    PF__AVX512_TARGET static void pf__tile_avx512_##dt##_full(double *a, size_t ld, const float *x, const void *w,     \
                                                              size_t k, size_t b, size_t e, size_t f) {                \
        pf__tile_avx2(a, ld, x, w, k, b, e, f, PF__TILE_ROWS_AVX512, PF__TILE_OUTS_AVX512, wt);                      \
    }                                                                                                                  \
    PF__AVX512_TARGET static void pf__tile_avx512_##dt##_rows(double *a, size_t ld, const float *x, const void *w,     \
                                                              size_t k, size_t b, size_t e, size_t f) {                \
        pf__tile_avx2(a, ld, x, w, k, b, e, f, PF__TILE_ROWS_AVX512, 1, wt);                                         \
    }                                                                                                                  \
    static const pf__tile_fn pf__tiles_avx512_##dt[4] = {pf__tile_avx512_##dt##_full, pf__tile_avx512_##dt##_rows,    \
                                                         pf__tile_avx2_##dt##_outs, pf__tile_avx2_##dt##_one};
PF__TILE_SHAPES_AVX512(f32, PF__DTYPE_F32)
PF__TILE_SHAPES_AVX512(f16, PF__DTYPE_F16)
PF__TILE_SHAPES_AVX512(bf16, PF__DTYPE_BF16)
static const pf__tile_fn *const pf__tiles_avx512[3] = {pf__tiles_avx512_f32, pf__tiles_avx512_f16, pf__tiles_avx512_bf16};

/* AVX512-VNNI (256-bit, with AVX-512VL): vpdpbusd sums 4 u8 x s8 products into each int32
   lane in one instruction, where AVX2 takes maddubs and madd; the 32 ymm registers hold a 4 x 4
   tile. */
#define PF__AVX512_VNNI_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))

PF__AVX512_VNNI_TARGET static PF__INLINE __m256i pf__q8_dot_vnni(__m256i x, __m256i w) {
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_sign_epi8(x, x), _mm256_sign_epi8(w, x));
}

PF__Q8_TILE(pf__q8_rows_vnni, PF__AVX512_VNNI_TARGET, 4, pf__q8_dot_vnni)
PF__Q8_TILE(pf__q8_row_vnni, PF__AVX512_VNNI_TARGET, 1, pf__q8_dot_vnni)
#endif

/* Attention's two loops: the scores of nq (1 to PF__QUERY_BLOCK) queries against `count` keys
   `stride` floats apart (out[i * ld + j] = q[i] . key j), and the sum of `count` value rows
   weighted by w. Portable versions first. */
#define PF__QUERY_BLOCK 4
static void pf__scores(float *out, size_t ld, const float *const *q, int nq, const float *keys, size_t stride,
                       size_t count, size_t n) {
    for (int i = 0; i < nq; i++)
        for (size_t j = 0; j < count; j++) out[(size_t)i * ld + j] = pf__dot(q[i], keys + j * stride, n);
}

static void pf__weighted_sum(float *out, const float *w, const float *values, size_t stride, size_t count, size_t n) {
    memset(out, 0, n * sizeof(float));
    for (size_t j = 0; j < count; j++)
        for (size_t i = 0; i < n; i++) out[i] += w[j] * values[j * stride + i];
}

#ifdef PF__AVX2
/* The four sums of acc[0..3], each as ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)). */
PF__AVX2_TARGET static PF__INLINE __m128 pf__sum4_avx2(const __m256 *acc) {
    __m256 pairs = _mm256_hadd_ps(_mm256_hadd_ps(acc[0], acc[1]), _mm256_hadd_ps(acc[2], acc[3]));
    return _mm_add_ps(_mm256_castps256_ps128(pairs), _mm256_extractf128_ps(pairs, 1));
}

/* One query: four keys at a time, sharing each load of q. Several: each key's load serves every
   query. Either way a score is summed in the same lanes and order. */
PF__AVX2_TARGET static void pf__scores_avx2(float *out, size_t ld, const float *const *q, int nq, const float *keys,
                                            size_t stride, size_t count, size_t n) {
    size_t full = n / 8 * 8;
    __m256i tail = pf__lanes_below(n - full);
    float sums[4];
    if (nq == 1) {
        for (size_t j = 0; j < count; j += 4) {
            const float *k[4];
            __m256 acc[4];
            int m = count - j < 4 ? (int)(count - j) : 4;
            PF__UNROLL for (int t = 0; t < 4; t++) {
                k[t] = keys + (j + (size_t)(t < m ? t : 0)) * stride; /* past the end: key j again, result unused */
                acc[t] = _mm256_setzero_ps();
            }
            for (size_t i = 0; i < full; i += 8) {
                __m256 qv = _mm256_loadu_ps(q[0] + i);
                PF__UNROLL for (int t = 0; t < 4; t++) acc[t] = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k[t] + i), acc[t]);
            }
            if (full < n) {
                __m256 qv = _mm256_maskload_ps(q[0] + full, tail);
                PF__UNROLL for (int t = 0; t < 4; t++) acc[t] = _mm256_fmadd_ps(qv, _mm256_maskload_ps(k[t] + full, tail), acc[t]);
            }
            _mm_storeu_ps(sums, pf__sum4_avx2(acc));
            for (int t = 0; t < m; t++) out[j + (size_t)t] = sums[t];
        }
        return;
    }
    const float *qs[4];
    for (int i = 0; i < 4; i++) qs[i] = q[i < nq ? i : 0]; /* past nq: query 0 again, result unused */
    for (size_t j = 0; j < count; j++) {
        const float *k = keys + j * stride;
        __m256 acc[4];
        PF__UNROLL for (int i = 0; i < 4; i++) acc[i] = _mm256_setzero_ps();
        for (size_t x = 0; x < full; x += 8) {
            __m256 kv = _mm256_loadu_ps(k + x);
            PF__UNROLL for (int i = 0; i < 4; i++) acc[i] = _mm256_fmadd_ps(_mm256_loadu_ps(qs[i] + x), kv, acc[i]);
        }
        if (full < n) {
            __m256 kv = _mm256_maskload_ps(k + full, tail);
            PF__UNROLL for (int i = 0; i < 4; i++) acc[i] = _mm256_fmadd_ps(_mm256_maskload_ps(qs[i] + full, tail), kv, acc[i]);
        }
        _mm_storeu_ps(sums, pf__sum4_avx2(acc));
        for (int i = 0; i < nq; i++) out[(size_t)i * ld + j] = sums[i];
    }
}

/* 64 outputs at a time in eight registers, over all the rows. */
PF__AVX2_TARGET static void pf__weighted_sum_avx2(float *out, const float *w, const float *values, size_t stride,
                                                  size_t count, size_t n) {
    for (size_t i0 = 0; i0 < n; i0 += 64) {
        size_t width = n - i0 < 64 ? n - i0 : 64;
        __m256i mask[8];
        __m256 acc[8];
        PF__UNROLL for (int b = 0; b < 8; b++) {
            mask[b] = pf__lanes_below(width > (size_t)b * 8 ? width - (size_t)b * 8 : 0);
            acc[b] = _mm256_setzero_ps();
        }
        if (width == 64) {
            for (size_t j = 0; j < count; j++) {
                __m256 p = _mm256_set1_ps(w[j]);
                const float *v = values + j * stride + i0;
                PF__UNROLL for (int b = 0; b < 8; b++) acc[b] = _mm256_fmadd_ps(p, _mm256_loadu_ps(v + 8 * b), acc[b]);
            }
        } else {
            for (size_t j = 0; j < count; j++) {
                __m256 p = _mm256_set1_ps(w[j]);
                const float *v = values + j * stride + i0;
                PF__UNROLL for (int b = 0; b < 8; b++) acc[b] = _mm256_fmadd_ps(p, _mm256_maskload_ps(v + 8 * b, mask[b]), acc[b]);
            }
        }
        PF__UNROLL for (int b = 0; b < 8; b++) _mm256_maskstore_ps(out + i0 + 8 * b, mask[b], acc[b]);
    }
}
#endif

/* The CPU backend's inner loops, for one instruction set. Attention is computed whole on one rank,
   so its sums need no care for rank counts: fp32 is enough there. */
typedef struct pf__cpu_kernels {
    const pf__tile_fn *const *tiles; /* [weight dtype][shape] */
    size_t tile_rows, tile_outs;     /* of the full tile, tiles[0] */
    size_t row_outs; /* weight rows of the one-row tile, tiles[2] */
    void (*scores)(float *out, size_t ld, const float *const *q, int nq, const float *keys, size_t stride, size_t count,
                   size_t n);
    void (*weighted_sum)(float *out, const float *w, const float *values, size_t stride, size_t count, size_t n);
    pf__q8_rows_fn *q8_rows, *q8_row; /* many rows of x; one (decode) */
} pf__cpu_kernels;

static const pf__cpu_kernels pf__cpu_portable = {pf__tiles_portable, PF__TILE_ROWS, PF__TILE_OUTS, PF__ROW_OUTS_PORTABLE,
                                                 pf__scores, pf__weighted_sum, pf__q8_rows_portable,
                                                 pf__q8_rows_portable};
#ifdef PF__AVX2
static const pf__cpu_kernels pf__cpu_avx2 = {pf__tiles_avx2, PF__TILE_ROWS, PF__TILE_OUTS, PF__ROW_OUTS_AVX2,
                                             pf__scores_avx2, pf__weighted_sum_avx2, pf__q8_rows_avx2,
                                             pf__q8_row_avx2};
#endif
#ifdef PF__AVX512
static const pf__cpu_kernels pf__cpu_avx512 = {pf__tiles_avx512, PF__TILE_ROWS_AVX512, PF__TILE_OUTS_AVX512,
                                               PF__ROW_OUTS_AVX2, pf__scores_avx2, pf__weighted_sum_avx2,
                                               pf__q8_rows_avx2, pf__q8_row_avx2};
static const pf__cpu_kernels pf__cpu_avx512_vnni = {pf__tiles_avx512, PF__TILE_ROWS_AVX512, PF__TILE_OUTS_AVX512,
                                                    PF__ROW_OUTS_AVX2, pf__scores_avx2, pf__weighted_sum_avx2,
                                                    pf__q8_rows_vnni, pf__q8_row_vnni};
#endif

#ifdef PF_TESTING
/* Test hook: nonzero makes the CPU backend use its portable kernels even where AVX2 is present. */
int pf_testing_portable_cpu = 0;
/* Test hook: nonzero makes it use the AVX2 kernels even where AVX-512 is present. */
int pf_testing_avx2_cpu = 0;
#define PF__AVX2_ASKED pf_testing_avx2_cpu
#else
#define PF__AVX2_ASKED 0
#endif

#ifdef PF__AVX2
/* Whether this processor runs the AVX2 kernels. F16C (fp16 conversions) comes with every AVX2
   processor made, but is a flag of its own, which clang's __builtin_cpu_supports cannot name; the
   cpuid instruction costs microseconds in a virtual machine, so the answer is kept. */
static int pf__cpu_avx2_usable, pf__cpu_avx512_usable, pf__cpu_vnni_usable;
static pthread_once_t pf__cpu_probe_once = PTHREAD_ONCE_INIT;

static void pf__cpu_probe(void) {
    unsigned a, b, c, d;
    pf__cpu_avx2_usable = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                          __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
    /* __builtin_cpu_supports also asks the OS (XGETBV) whether it saves the zmm registers */
    pf__cpu_avx512_usable = pf__cpu_avx2_usable && __builtin_cpu_supports("avx512f") &&
                            __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
    pf__cpu_vnni_usable = pf__cpu_avx512_usable && __builtin_cpu_supports("avx512vnni");
}
#endif

static const pf__cpu_kernels *pf__cpu_kernels_here(void) {
#ifdef PF__AVX2
#ifdef PF_TESTING
    if (pf_testing_portable_cpu) return &pf__cpu_portable;
#endif
    pthread_once(&pf__cpu_probe_once, pf__cpu_probe);
#ifdef PF__AVX512
    if (pf__cpu_avx512_usable && !PF__AVX2_ASKED) return pf__cpu_vnni_usable ? &pf__cpu_avx512_vnni : &pf__cpu_avx512;
#endif
    if (pf__cpu_avx2_usable) return &pf__cpu_avx2;
#endif
    return &pf__cpu_portable;
}


/* out[rows][w->rows] = x w^T + bias for Q8 weights: x quantized per block (pf__q8_rows_fn), then
   weight rows in groups that stay in the cache while every row of x passes over them. */
#define PF__Q8_GROUP 64
static void pf__cpu_matmul_q8(float *out, const float *x, const pf__weight *w, const float *bias, size_t rows) {
    size_t n_out = w->rows, k = w->cols, nb = k / PF__Q8_BLOCK, row_bytes = nb * PF__Q8_BYTES;
    int8_t *qx = (int8_t *)malloc(rows * k + 1);
    float *dx = (float *)malloc((rows * nb + 1) * sizeof(float));
    if (!qx || !dx) { /* no memory for a few KB: zeros rather than a crash (the caller cannot fail here) */
        free(qx);
        free(dx);
        memset(out, 0, rows * n_out * sizeof(float));
        return;
    }
    for (size_t b = 0; b < rows * nb; b++) {
        const float *v = x + b * PF__Q8_BLOCK; /* rows are whole blocks: block b of the whole x */
        float largest = 0;
        for (int i = 0; i < PF__Q8_BLOCK; i++) largest = fabsf(v[i]) > largest ? fabsf(v[i]) : largest;
        float d = largest / 127.0f, inverse = d > 0 ? 1.0f / d : 0.0f;
        dx[b] = d;
        for (int i = 0; i < PF__Q8_BLOCK; i++) qx[b * PF__Q8_BLOCK + i] = (int8_t)roundf(v[i] * inverse);
    }
    const pf__cpu_kernels *kernels = pf__cpu_kernels_here();
    pf__q8_rows_fn *kernel = rows == 1 ? kernels->q8_row : kernels->q8_rows;
    const unsigned char *W = (const unsigned char *)w->data;
    for (size_t o0 = 0; o0 < n_out; o0 += PF__Q8_GROUP) {
        size_t n = n_out - o0 < PF__Q8_GROUP ? n_out - o0 : PF__Q8_GROUP;
        kernel(out + o0, n_out, qx, dx, rows, W + o0 * row_bytes, nb, n);
    }
    if (bias)
        for (size_t r = 0; r < rows; r++)
            for (size_t o = 0; o < n_out; o++) out[r * n_out + o] += bias[o];
    free(qx);
    free(dx);
}

/* out[rows][w->rows] = x[rows][w->cols] times w transposed, plus bias. */
static void pf__cpu_matmul_rows(float *out, const float *x, const pf__weight *w, const float *bias, size_t rows) {
    if (w->dtype == PF__DTYPE_Q8) {
        pf__cpu_matmul_q8(out, x, w, bias, rows);
        return;
    }
    const pf__cpu_kernels *kernels = pf__cpu_kernels_here();
    const pf__tile_fn *tiles = kernels->tiles[w->dtype];
    const char *W = (const char *)w->data;
    size_t wsize = pf__dtype_size(w->dtype);
    size_t n_out = w->rows, k = w->cols, first_end = PF__CHUNK - w->col_begin % PF__CHUNK;
    double acc[PF__RBLOCK * PF__OBLOCK];
    for (size_t o0 = 0; o0 < n_out; o0 += PF__OBLOCK) {
        size_t o1 = o0 + PF__OBLOCK < n_out ? o0 + PF__OBLOCK : n_out, ld = o1 - o0;
        for (size_t r0 = 0; r0 < rows; r0 += PF__RBLOCK) {
            size_t r1 = r0 + PF__RBLOCK < rows ? r0 + PF__RBLOCK : rows;
            memset(acc, 0, sizeof acc);
            for (size_t p0 = 0; p0 < k;) { /* blocks of whole chunks, fixed in the whole tensor too */
                size_t p1 = ((w->col_begin + p0) / PF__KBLOCK + 1) * PF__KBLOCK - w->col_begin;
                if (p1 > k) p1 = k;
                size_t r = r0;
                for (; r + kernels->tile_rows <= r1; r += kernels->tile_rows) {
                    size_t o = o0;
                    for (; o + kernels->tile_outs <= o1; o += kernels->tile_outs)
                        tiles[0](acc + (r - r0) * ld + (o - o0), ld, x + r * k, W + o * k * wsize, k, p0, p1, first_end);
                    for (; o < o1; o++) tiles[1](acc + (r - r0) * ld + (o - o0), ld, x + r * k, W + o * k * wsize, k, p0, p1, first_end);
                }
                for (; r < r1; r++) {
                    size_t o = o0;
                    for (; o + kernels->row_outs <= o1; o += kernels->row_outs) tiles[2](acc + (r - r0) * ld + (o - o0), ld, x + r * k, W + o * k * wsize, k, p0, p1, first_end);
                    for (; o < o1; o++) tiles[3](acc + (r - r0) * ld + (o - o0), ld, x + r * k, W + o * k * wsize, k, p0, p1, first_end);
                }
                p0 = p1;
            }
            for (size_t r = r0; r < r1; r++)
                for (size_t o = o0; o < o1; o++)
                    out[r * n_out + o] = (float)acc[(r - r0) * ld + (o - o0)] + (bias ? bias[o] : 0.0f);
        }
    }
}

#ifdef PF_TESTING
/* Test hook: the CPU matmul on plain arrays (w is [n_out][k] of dtype 0 f32, 1 f16, 2 bf16, 3 Q8
   blocks, columns col_begin.. of a whole). */
void pf_testing_cpu_matmul(float *out, const float *x, const void *w, int dtype, const float *bias, size_t rows,
                           size_t n_out, size_t k, size_t col_begin) {
    pf__weight weight = {(void *)w, (pf__dtype)dtype, n_out, k, col_begin};
    pf__cpu_matmul_rows(out, x, &weight, bias, rows);
}

/* Test hook: pf__q8_quantize on plain arrays (rows x cols fp32 in place into Q8 blocks). */
void pf_testing_q8_quantize(float *data, size_t rows, size_t cols) { pf__q8_quantize(data, rows, cols); }

/* Test hooks: attention's two loops, as the CPU backend picks them. */
void pf_testing_cpu_scores(float *out, size_t ld, const float *const *q, int nq, const float *keys, size_t stride,
                           size_t count, size_t n) {
    pf__cpu_kernels_here()->scores(out, ld, q, nq, keys, stride, count, n);
}
void pf_testing_cpu_weighted_sum(float *out, const float *w, const float *values, size_t stride, size_t count, size_t n) {
    pf__cpu_kernels_here()->weighted_sum(out, w, values, stride, count, n);
}
#endif

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
    pf__cpu_matmul_rows(out, x, w, bias ? (const float *)bias->data : NULL, rows);
}

static float pf__act(float v, pf__activation act) {
    switch (act) {
    case PF__ACT_GELU_TANH: /* 0.5 v (1 + tanh(u)) = v / (1 + exp(-2u)): one expf, cheaper than tanhf */
        return v / (1.0f + expf(-2.0f * 0.7978845608028654f * (v + 0.044715f * v * v * v)));
    case PF__ACT_GELU_ERF: return 0.5f * v * (1.0f + erff(v * 0.7071067811865476f));
    case PF__ACT_RELU: return v > 0 ? v : 0;
    case PF__ACT_SILU: return v / (1.0f + expf(-v));
    case PF__ACT_TANH: return tanhf(v);
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
    if (!rotated_heads) return; /* a rank without heads has no qkv buffer to point into */
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

/* T5's bidirectional bucket of a relative distance (key position - query position): half the
   buckets for keys after the query; exact below a quarter of them, then logarithmic up to
   max_distance, computed in fp32 as transformers does. */
/* T5's bucket of a relative distance (key position - query position), in fp32 as transformers
   computes it: both ways (half the buckets for keys after the query), or towards the past only
   (later keys share bucket 0). */
static int pf__relative_bucket(int distance, int num_buckets, int max_distance, int bidirectional) {
    int bucket = 0, n = distance < 0 ? -distance : 0;
    if (bidirectional) {
        num_buckets /= 2;
        bucket = distance > 0 ? num_buckets : 0;
        n = distance < 0 ? -distance : distance;
    }
    int max_exact = num_buckets / 2;
    if (n < max_exact) return bucket + n;
    float scaled = logf((float)n / (float)max_exact) / (float)log((double)max_distance / max_exact) *
                   (float)(num_buckets - max_exact);
    int large = max_exact + (int)scaled;
    return bucket + (large < num_buckets - 1 ? large : num_buckets - 1);
}

static void pf__cpu_kv_append(pf__rank *r, void *k_cache, void *v_cache, const float *qkv, const pf__step *s,
                              const pf__attn_shape *a) {
    size_t hd = (size_t)a->head_dim, q_width = (size_t)a->heads * hd, kv_width = (size_t)a->kv_heads * hd;
    size_t row_width = q_width + 2 * kv_width, T = (size_t)s->seq_len;
    (void)r;
    if (!a->heads) return;
    for (int b = 0; b < s->batch; b++) {
        size_t cache_row = s->cache_rows ? (size_t)s->cache_rows[b] : (size_t)b;
        float *kc = (float *)k_cache + cache_row * a->cache_len * kv_width;
        float *vc = (float *)v_cache + cache_row * a->cache_len * kv_width;
        for (size_t t = 0; t < T; t++) {
            const float *row = qkv + ((size_t)b * T + t) * row_width;
            memcpy(kc + (s->past + t) * kv_width, row + q_width, kv_width * sizeof(float));
            memcpy(vc + (s->past + t) * kv_width, row + q_width + kv_width, kv_width * sizeof(float));
        }
    }
}

static void pf__cpu_attend(pf__rank *r, float *out, const float *qkv, const void *k_cache, const void *v_cache,
                           const pf__step *s, const pf__attn_shape *a) {
    size_t hd = (size_t)a->head_dim, q_width = (size_t)a->heads * hd, kv_width = (size_t)a->kv_heads * hd;
    size_t row_width = a->mask == PF__MASK_CROSS ? q_width : q_width + 2 * kv_width, T = (size_t)s->seq_len;
    const pf__cpu_kernels *kernels = pf__cpu_kernels_here();
    if (!a->heads) return;
    for (int b = 0; b < s->batch; b++) {
        size_t cache_row = s->cache_rows ? (size_t)s->cache_rows[b] : (size_t)b;
        const float *kc = (const float *)k_cache + cache_row * a->cache_len * kv_width;
        const float *vc = (const float *)v_cache + cache_row * a->cache_len * kv_width;
        size_t pad = s->pad ? (size_t)s->pad[b] : 0; /* left pads are never keys */
        /* Queries in blocks that share each key's load for their scores; each query then takes
           the keys it may see (first..last) out of the block's range (lo..hi). */
        for (size_t t0 = 0; t0 < T; t0 += PF__QUERY_BLOCK) {
            int nq = T - t0 < PF__QUERY_BLOCK ? (int)(T - t0) : PF__QUERY_BLOCK;
            size_t first[PF__QUERY_BLOCK], last[PF__QUERY_BLOCK], lo = SIZE_MAX, hi = 0;
            for (int i = 0; i < nq; i++) {
                size_t pos = (size_t)s->past + t0 + (size_t)i;
                last[i] = a->mask == PF__MASK_CAUSAL ? pos
                          : a->mask == PF__MASK_CROSS ? (size_t)a->cache_len - 1 : (size_t)s->past + T - 1;
                first[i] = pad;
                if (a->window && pos + 1 > (size_t)a->window && pos + 1 - (size_t)a->window > first[i])
                    first[i] = pos + 1 - (size_t)a->window;
                if (first[i] > last[i]) { /* a pad's own query: nothing to see, and nobody reads it */
                    memset(out + ((size_t)b * T + t0 + (size_t)i) * q_width, 0, q_width * sizeof(float));
                    continue;
                }
                if (first[i] < lo) lo = first[i];
                if (last[i] > hi) hi = last[i];
            }
            if (lo > hi) continue;
            for (int h = 0; h < a->heads; h++) {
                const float *q[PF__QUERY_BLOCK];
                for (int i = 0; i < nq; i++) q[i] = qkv + ((size_t)b * T + t0 + (size_t)i) * row_width + (size_t)h * hd;
                size_t kv = (size_t)((a->head_begin + h) / a->kv_group - a->kv_begin) * hd;
                kernels->scores(r->scores, (size_t)a->cache_len, q, nq, kc + lo * kv_width + kv, kv_width, hi + 1 - lo, hd);
                float slope = a->alibi ? a->alibi[h] : 0.0f;
                const float *rel = a->rel_bias ? a->rel_bias + (size_t)h * a->rel_rows : NULL;
                for (int i = 0; i < nq; i++) {
                    if (first[i] > last[i]) continue;
                    float max = -INFINITY, *p = r->scores + (size_t)i * a->cache_len + (first[i] - lo);
                    size_t count = last[i] + 1 - first[i], pos = (size_t)s->past + t0 + (size_t)i;
                    for (size_t j = 0; j < count; j++) {
                        p[j] = p[j] * a->scale + slope * (float)(first[i] + j - pad);
                        if (rel)
                            p[j] += rel[pf__relative_bucket((int)(first[i] + j) - (int)pos, a->rel_buckets,
                                                            a->rel_max_distance, a->mask != PF__MASK_CAUSAL)];
                        if (p[j] > max) max = p[j];
                    }
                    double sum = 0;
                    for (size_t j = 0; j < count; j++) {
                        p[j] = expf(p[j] - max);
                        sum += p[j];
                    }
                    for (size_t j = 0; j < count; j++) p[j] = (float)(p[j] / sum);
                    float *o = out + ((size_t)b * T + t0 + (size_t)i) * q_width + (size_t)h * hd;
                    kernels->weighted_sum(o, p, vc + first[i] * kv_width + kv, kv_width, count, hd);
                }
            }
        }
    }
}

static void pf__cpu_reorder_rows(pf__rank *r, void *cache, const int *dst, const int *src, int count, size_t row_bytes,
                                 size_t used_bytes) {
    unsigned char *rows = (unsigned char *)cache, *tmp = (unsigned char *)r->reorder_tmp;
    for (int k = 0; k < count; k++) /* every source read before any row is written */
        memcpy(tmp + k * used_bytes, rows + src[k] * row_bytes, used_bytes);
    for (int k = 0; k < count; k++)
        memcpy(rows + dst[k] * row_bytes, tmp + k * used_bytes, used_bytes);
}

static int pf__barrier(pf__group *g);
static void pf__cpu_all_reduce(pf__rank *r, float *x, size_t count);

/* The host's memory: physical pages, less the free ones. */
static int pf__cpu_device_memory(int device, size_t *used, size_t *total) {
    (void)device;
#if defined(_SC_PHYS_PAGES) && defined(_SC_AVPHYS_PAGES) && defined(_SC_PAGESIZE)
    long pages = sysconf(_SC_PHYS_PAGES), free_pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && free_pages >= 0 && free_pages <= pages && page > 0) {
        *total = (size_t)pages * (size_t)page;
        *used = (size_t)(pages - free_pages) * (size_t)page;
        return 0;
    }
#endif
    return -1;
}

static const pf__backend pf__cpu_backend = {
    "cpu", 1, NULL, NULL, pf__cpu_rank_begin, pf__cpu_rank_end, pf__cpu_alloc, pf__cpu_free, pf__cpu_copy,
    pf__cpu_copy, pf__cpu_download_rows, pf__cpu_copy, pf__cpu_embed, pf__cpu_add_positions, pf__cpu_norm, pf__cpu_matmul, pf__cpu_activation,
    pf__cpu_gated_activation, pf__cpu_add_residual, pf__cpu_rotary, pf__cpu_kv_append, pf__cpu_attend, pf__cpu_all_reduce,
    pf__cpu_reorder_rows, pf__cpu_device_memory, NULL, 0,
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
    float *hidden;        /* FORWARD, encoders: host [batch][seq_len][hidden], rank 0 writes the
                             last hidden state; or NULL */
    float *pooled;        /* FORWARD, encoders with a pooler: host [batch][hidden], or NULL */
    int encoder_pass;     /* FORWARD, encoder-decoders: the encoder tower on step's ids, its output
                             into the cross caches (rows 0..batch-1) and `hidden` */
    const int *reorder_dst, *reorder_src; /* REORDER: host [reorder_count]: cache row reorder_dst[k]
                             becomes old row reorder_src[k] (the rows that change); the first
                             step.past positions move */
    int reorder_count;
    int reorder_cross;    /* REORDER: the cross caches' first step.cross_len positions move too */
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
    int32_t *zero_ids;    /* [max_batch] zeros: row 0 of a one-row table for every sequence */
    size_t max_tokens, logit_rows;
    float **gather;      /* PF__JOB_GATHER: host arrays, one per slot, filled by the ranks */
    /* PF__JOB_SETUP: weight bytes copied, of about progress_total (under mutex) */
    pf_progress_callback progress;
    void *progress_user;
    uint64_t progress_done, progress_total;
#ifdef PF_TESTING
    struct pf__collective { const char *site; size_t count; } *collectives; /* [num_ranks] (pf__collective_check) */
#endif
};

typedef struct pf__batcher pf__batcher;

struct pf_model {
    char *dir;
    pf_load_options load_options;
    int loaded;
    pf__config config;
    pf__st_index st;
    pf__source *sources;  /* [pf__num_slots] */
    float *scaled[6];     /* sources scaled at load (pf__scale_source), owned */
    int num_scaled;
    pf_tokenizer *tokenizer;
    struct pf__batcher *batcher;  /* continuous batching's scheduler, from the first batched request */
    pthread_mutex_t batcher_start;
    int exclusive_waiting;        /* calls waiting for the request lock (atomic): no admissions then */
    char tokenizer_missing[PF__MESSAGE_SIZE]; /* why a tokenizer the directory has is not loaded, or "" */
    pf__group *group;
    pf_parallel_options parallel_options;
    float *logits;        /* host: [max_batch][vocab], the last positions' logits */
    float *inv_freq;      /* host: [rotary_dim / 2], the rotary frequencies of the current step */
    pf_generate_options generate_defaults; /* pf_generate_options_init() + generation_config.json */
    int rope_cached_len;  /* dynamic rope: the longest sequence its frequencies were grown for */
    pthread_mutex_t request_lock; /* requests from several threads run one after another; error
                                     checking, so that a request made from inside one (a stream
                                     callback) is refused instead of waiting for itself */
    struct pf__sentence {         /* sentence-transformers' modules (modules.json), for pf_embed */
        pf_pooling pooling;       /* never PF_POOLING_MODEL */
        int normalize;
        int max_seq_length;       /* sentence_bert_config.json's; 0: the model's positions */
        char unsupported[PF__PATH_SIZE + 160]; /* a module or mode we do not run, or "" */
    } sentence;
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
    PF__STORE_FLAG(g->aborted, 1);
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

/* Read between operations and in spin loops: an atomic load, not the group mutex, so that ranks
   that wait do not contend with the ones that work. */
static int pf__rank_failed(pf__rank *r) {
    return r->error || PF__LOAD_FLAG(r->group->aborted);
}

#ifdef PF_TESTING
/* Test hook: rank pf_testing_skip_reduce_rank skips its pf_testing_skip_reduce_countdown-th
   all-reduce, so that the tests can see pf__collective_check catch a rank that does. */
int pf_testing_skip_reduce_rank = -1, pf_testing_skip_reduce_countdown = 0;

/* Every rank must enter the same collectives in the same order with the same sizes, decided from
   facts all ranks share: a rank that enters one the others skip pairs its all-reduce with a
   different one (wrong sums, reads past the smaller buffer), and waits forever for the last.
   Test builds check it before each collective and at the end of each job (which counts as one,
   so an extra collective on one rank meets the others' end): each rank publishes what it enters,
   and after a barrier compares every rank's entry with its own. */
static void pf__collective_check(pf__rank *r, const char *site, size_t count) {
    pf__group *g = r->group;
    /* after a failure, entries are no longer fenced by barriers: leave them */
    if (g->num_ranks == 1 || pf__rank_failed(r)) return;
    g->collectives[r->index].site = site;
    g->collectives[r->index].count = count;
    if (pf__barrier(g)) return;
    for (int k = 0; k < g->num_ranks; k++) {
        const struct pf__collective *other = &g->collectives[k];
        if (strcmp(other->site, site) != 0 || other->count != count) {
            pf__rank_fail(r, PF_ERROR_DEVICE, "collective mismatch: rank %d enters %s (%zu floats) while rank %d enters %s (%zu floats)",
                          r->index, site, count, k, other->site, other->count);
            return;
        }
    }
    pf__barrier(g); /* the entries stay until every rank has compared them */
}
#endif

/* x = the sum of x over all ranks. Every rank calls it at the same point of the forward pass;
   site names that point for pf__collective_check. */
static void pf__all_reduce(pf__rank *r, float *x, size_t count, const char *site) {
#ifdef PF_TESTING
    if (r->index == pf_testing_skip_reduce_rank && --pf_testing_skip_reduce_countdown == 0) return;
    pf__collective_check(r, site, count);
#else
    (void)site;
#endif
    r->backend->all_reduce(r, x, count);
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
#ifdef PF_TESTING
        pf__collective_check(r, "the end of the job", 0);
#endif
        /* the device's memory, asked on this thread (whose device is current: asking from the
           caller's would make a CUDA context there) */
        size_t used = 0, total = 0;
        int known = began && r->backend->device_memory(r->device, &used, &total) == 0;
        pthread_mutex_lock(&g->mutex);
        r->device_used = known ? used : 0;
        r->device_total = known ? total : 0;
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
    PF__STORE_FLAG(g->aborted, 0);
    g->barrier_count = 0;
    for (int i = 0; i < g->num_ranks; i++) g->ranks[i].error = PF_OK;
    g->job_seq++;
    pthread_cond_broadcast(&g->work);
    uint64_t reported = UINT64_MAX;
    while (g->jobs_done < g->threads_started) {
        if (kind != PF__JOB_SETUP || !g->progress) {
            pthread_cond_wait(&g->done, &g->mutex);
            continue;
        }
        /* weights being copied: report on this thread, five times a second */
        uint64_t done = g->progress_done, total = g->progress_total;
        if (done != reported) {
            reported = done;
            pthread_mutex_unlock(&g->mutex);
            g->progress(g->progress_user, done, total);
            pthread_mutex_lock(&g->mutex);
        }
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 200 * 1000000L;
        if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&g->done, &g->mutex, &until);
    }
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
    free(g->zero_ids);
#ifdef PF_TESTING
    free(g->collectives);
#endif
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
    s.vocab_begin = (int)((long long)r * c->vocab_size / n);
    s.vocab_rows = (int)((long long)(r + 1) * c->vocab_size / n) - s.vocab_begin;
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
    case PF__SPLIT_VOCAB: p->row_begin = (size_t)s->vocab_begin, p->rows = (size_t)s->vocab_rows; break;
    }
    return 0;
}

static size_t pf__plan_row(const pf__plan *p, size_t i) { return p->row_map ? p->row_map[i] : p->row_begin + i; }

/* n consecutive values of a source in file order, from element index first, as fp32. */
static void pf__source_run(float *dst, const pf__source *src, size_t first, size_t n) {
    const unsigned char *at = src->data + first * pf__dtype_size(src->dtype);
    switch (src->dtype) {
    case PF__DTYPE_F32: memcpy(dst, at, n * sizeof(float)); break;
    case PF__DTYPE_F16:
        for (size_t k = 0; k < n; k++) dst[k] = pf__f16_to_f32((uint16_t)(at[2 * k] | (at[2 * k + 1] << 8)));
        break;
    case PF__DTYPE_BF16:
        for (size_t k = 0; k < n; k++) dst[k] = pf__bf16_to_f32((uint16_t)(at[2 * k] | (at[2 * k + 1] << 8)));
        break;
    default: memset(dst, 0, n * sizeof(float));
    }
}

/* How many plan rows from i on (at most max) are consecutive rows of the source. */
static size_t pf__plan_run(const pf__plan *p, size_t i, size_t max) {
    size_t n = 1;
    if (!p->row_map) return max;
    while (n < max && p->row_map[i + n] == p->row_map[i] + n) n++;
    return n;
}

#define PF__TRANSPOSE_BLOCK 64

/* Copies the rank's slice of src into dst ([plan rows, plan cols] fp32), converting dtype and
   layout on the way, in runs of consecutive file values. */
static void pf__slice_copy(float *dst, const pf__source *src, const pf__plan *p) {
    if (src->layout != PF__LAYOUT_IN_OUT) {
        for (size_t i = 0; i < p->rows; i++)
            pf__source_run(dst + i * p->cols, src, pf__plan_row(p, i) * src->cols + p->col_begin, p->cols);
        return;
    }
    /* The file holds [cols][rows]: transpose through square blocks, so that reads and writes
       both go along rows of the block. */
    float block[PF__TRANSPOSE_BLOCK][PF__TRANSPOSE_BLOCK];
    for (size_t c0 = 0; c0 < p->cols; c0 += PF__TRANSPOSE_BLOCK) {
        size_t nc = p->cols - c0 < PF__TRANSPOSE_BLOCK ? p->cols - c0 : PF__TRANSPOSE_BLOCK;
        for (size_t i0 = 0; i0 < p->rows; i0 += PF__TRANSPOSE_BLOCK) {
            size_t ni = p->rows - i0 < PF__TRANSPOSE_BLOCK ? p->rows - i0 : PF__TRANSPOSE_BLOCK;
            for (size_t c = 0; c < nc; c++)
                for (size_t i = 0, run; i < ni; i += run) {
                    run = pf__plan_run(p, i0 + i, ni - i);
                    pf__source_run(&block[c][i], src, (p->col_begin + c0 + c) * src->rows + pf__plan_row(p, i0 + i), run);
                }
            for (size_t i = 0; i < ni; i++)
                for (size_t c = 0; c < nc; c++) dst[(i0 + i) * p->cols + c0 + c] = block[c][i];
        }
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

/* Whether a rank's slice of a source can be stored as Q8: a matrix (or embedding) whose slice
   starts and ends at block boundaries of the whole tensor's columns. */
static int pf__q8_fits(const pf__source *src, const pf__plan *p) {
    return (src->layout == PF__LAYOUT_OUT_IN || src->layout == PF__LAYOUT_IN_OUT) && p->cols % PF__Q8_BLOCK == 0 &&
           p->col_begin % PF__Q8_BLOCK == 0;
}

/* The dtype a source is stored in on the ranks: the group's, except that the CPU backend keeps
   1-D tensors (norms, biases: a tiny share of the bytes) in fp32 for its ops to read as they are,
   their values rounded to the group's dtype so that they are what the dtype would hold; and
   that a Q8 group keeps in fp16 the slices Q8 cannot hold (pf__q8_fits). */
static pf__dtype pf__storage_dtype(const pf__group *g, const pf__source *src, const pf__plan *p) {
    if (g->backend->host_memory && src->layout == PF__LAYOUT_VECTOR) return PF__DTYPE_F32;
    if (g->dtype == PF__DTYPE_Q8) return pf__q8_fits(src, p) ? PF__DTYPE_Q8 : PF__DTYPE_F16;
    return g->dtype;
}

/* Slices one source into rank memory at dst ([plan rows, plan cols] in pf__storage_dtype). */
/* A rank copied `bytes` of checkpoint data: counted for the progress callback. */
static void pf__progress_add(pf__group *g, uint64_t bytes) {
    if (!g->progress) return;
    pthread_mutex_lock(&g->mutex);
    g->progress_done += bytes;
    if (g->progress_done > g->progress_total) g->progress_done = g->progress_total;
    pthread_mutex_unlock(&g->mutex);
}

/* Quantizes rows [rows][cols] of fp32 values in place into Q8 blocks (cols a multiple of
   PF__Q8_BLOCK). The scale is rounded to fp16 before the values are divided by it, so that
   quantizing the dequantized weights again gives them back (pf_to_cpu then pf_parallelize). */
static void pf__q8_quantize(void *data, size_t rows, size_t cols) {
    const float *in = (const float *)data;
    unsigned char *out = (unsigned char *)data; /* block b written at 34b, read from 128b: behind */
    for (size_t b = 0; b < rows * cols / PF__Q8_BLOCK; b++) {
        float v[PF__Q8_BLOCK], largest = 0;
        memcpy(v, in + b * PF__Q8_BLOCK, sizeof v);
        for (int i = 0; i < PF__Q8_BLOCK; i++) largest = fabsf(v[i]) > largest ? fabsf(v[i]) : largest;
        uint16_t d16 = pf__f32_to_f16(largest / 127.0f);
        float d = pf__f16_to_f32(d16), inverse = d > 0 ? 1.0f / d : 0.0f;
        unsigned char *block = out + b * PF__Q8_BYTES;
        memcpy(block, &d16, 2);
        for (int i = 0; i < PF__Q8_BLOCK; i++) {
            float q = roundf(v[i] * inverse);
            block[2 + i] = (unsigned char)(int8_t)(q > 127 ? 127 : q < -127 ? -127 : q);
        }
    }
}

static void pf__rank_fill(pf__rank *r, void *dst, pf__dtype dtype, const pf__source *src, const pf__plan *p,
                          float **staging, size_t *staging_size) {
    /* vectors kept in fp32 hold what the group's dtype would (Q8 groups keep them as they are) */
    pf__dtype rounding = r->group->dtype == PF__DTYPE_Q8 ? PF__DTYPE_F32 : r->group->dtype;
    size_t numel = p->rows * p->cols;
    if (!numel) return;
    if (r->backend->host_memory && dtype == PF__DTYPE_F32) {
        float *f = (float *)dst;
        pf__slice_copy(f, src, p);
        for (size_t k = 0; rounding != PF__DTYPE_F32 && k < numel; k++)
            f[k] = rounding == PF__DTYPE_F16 ? pf__f16_to_f32(pf__f32_to_f16(f[k])) : pf__bf16_to_f32(pf__f32_to_bf16(f[k]));
        pf__progress_add(r->group, numel * pf__dtype_size(src->dtype));
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
    if (dtype == PF__DTYPE_Q8) {
        pf__q8_quantize(f, p->rows, p->cols);
    } else if (dtype != PF__DTYPE_F32) { /* convert in place: 2-byte values behind the 4-byte ones */
        uint16_t *half = (uint16_t *)f;
        for (size_t k = 0; k < numel; k++) half[k] = dtype == PF__DTYPE_F16 ? pf__f32_to_f16(f[k]) : pf__f32_to_bf16(f[k]);
    }
    r->backend->upload(r, dst, f, pf__weight_bytes(dtype, p->rows, p->cols));
    pf__progress_add(r->group, numel * pf__dtype_size(src->dtype));
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
/* Row p: the sines of p * rate_k, then the cosines, k < d/2, with each family's rates and
   precision: CTRL's 10000^(-2k/d) in fp32, Marian's and Pegasus' the same in fp64,
   tensor2tensor's (M2M100) exp(-k ln(10000) / (d/2 - 1)) in fp32. */
static void pf__sinusoid_table(float *out, size_t positions, size_t d, int kind) {
    for (size_t pos = 0; pos < positions; pos++)
        for (size_t k = 0; k < d / 2; k++) {
            float sine, cosine;
            if (kind == PF__SINUSOID_F64) {
                double angle = (double)pos / pow(10000.0, (double)(2 * k) / (double)d);
                sine = (float)sin(angle), cosine = (float)cos(angle);
            } else {
                float rate = kind == PF__SINUSOID_T2T ? expf((float)k * -(float)(log(10000.0) / (double)(d / 2 - 1)))
                                                      : 1.0f / powf(10000.0f, (float)(2 * k) / (float)d);
                float angle = (float)pos * rate;
                sine = sinf(angle), cosine = cosf(angle);
            }
            out[pos * d + k] = sine;
            out[pos * d + d / 2 + k] = cosine;
        }
}

/* Blocks by tower: an encoder-decoder's encoder blocks come first; an encoder's are all encoder
   blocks, a decoder's all decoder blocks. */
static int pf__encoder_blocks(const pf__config *c) {
    pf__kind kind = pf__archs[c->arch].kind;
    return kind == PF__KIND_ENCODER ? c->num_layers : kind == PF__KIND_SEQ2SEQ ? c->encoder_layers : 0;
}

/* Cache layers: one per decoder block (its keys stay for the next steps), and one that every
   encoder block reuses (its keys live for the block only). */
static int pf__cache_layers(const pf__config *c) {
    int encoder = pf__encoder_blocks(c);
    return c->num_layers - encoder + (encoder > 0);
}

static int pf__cache_layer(const pf__config *c, int block) {
    int encoder = pf__encoder_blocks(c);
    return block < encoder ? c->num_layers - encoder : block - encoder;
}

/* A relative bias table's rank heads, transposed to [head][bucket] in fp32, on the rank; NULL
   without one (or without heads). */
static float *pf__rank_rel_table(pf__rank *r, const pf__source *rel) {
    if (!rel->data || !r->share.heads) return NULL;
    size_t rows = rel->rows, count = (size_t)r->share.heads * rows;
    float *bias = (float *)malloc(count * sizeof(float));
    if (!bias) {
        pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory");
        return NULL;
    }
    for (int h = 0; h < r->share.heads; h++)
        for (size_t k = 0; k < rows; k++)
            bias[(size_t)h * rows + k] = pf__weight_value(rel->data, k * rel->cols + (size_t)(r->share.head_begin + h), rel->dtype);
    float *table = (float *)pf__rank_upload_table(r, bias, count);
    free(bias);
    return table;
}

/* One all-reduce of a single float at the end of setup, waited for: NCCL connects its
   communicators lazily at the first collective, and a rank that fails then (or before) is seen
   during pf_parallelize rather than inside a forward's collectives. */
static void pf__rank_warm_up(pf__rank *r) {
    float value = 0;
    if (r->group->num_ranks < 2 || r->error || !r->x) return;
    r->backend->upload(r, r->x, &value, sizeof value);
    pf__all_reduce(r, r->x, 1, "the communicators' warm-up");
    r->backend->download(r, &value, r->x, sizeof value);
}

/* Runs on the rank's thread: slices every weight into the rank's memory (stacked slots as one
   allocation with their members as views into it), then the KV cache and scratch. */
static void pf__rank_setup(pf__rank *r) {
    pf__group *g = r->group;
    const pf_model *m = g->model;
    const pf__config *c = &m->config;
    const pf__arch *a = &pf__archs[c->arch];
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
        pf__slot slot = (pf__slot)(i < PF__SLOT_FIRST_LAYER ? i : PF__SLOT_FIRST_LAYER + (i - PF__SLOT_FIRST_LAYER) % PF__LAYER_SLOTS);
        size_t layer_base = i - (size_t)slot;
        const struct pf__stack *stack = NULL;
        for (size_t k = 0; k < PF__COUNT(pf__stacks); k++)
            if (pf__stacks[k].target == slot) stack = &pf__stacks[k];
        if (stack) { /* one allocation, the members' slices one after another */
            pf__plan plans[4];
            size_t rows = 0, cols = 0;
            int n = 0;
            pf__dtype dtype = g->dtype; /* the members' (all matrices, or all vectors) */
            for (int k = 0; k < stack->num_members; k++) {
                const pf__source *src = &m->sources[layer_base + stack->members[k]];
                if (!src->data) continue;
                if (pf__plan_for(c, &r->share, src, &plans[n])) {
                    pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory");
                    break;
                }
                pf__dtype own = pf__storage_dtype(g, src, &plans[n]);
                if (n == 0 || own != PF__DTYPE_Q8) dtype = own; /* Q8 only if every member fits it */
                rows += plans[n].rows;
                cols = plans[n++].cols;
            }
            pf__weight *w = &r->weights[i];
            w->dtype = dtype;
            w->rows = rows;
            w->cols = cols;
            w->data = r->error ? NULL : pf__rank_alloc(r, pf__weight_bytes(dtype, rows, cols));
            size_t offset = 0;
            n = 0;
            for (int k = 0; k < stack->num_members; k++) {
                const pf__source *src = &m->sources[layer_base + stack->members[k]];
                if (!src->data) continue;
                pf__plan *p = &plans[n++];
                pf__weight *member = &r->weights[layer_base + stack->members[k]];
                member->dtype = dtype;
                member->rows = p->rows;
                member->cols = p->cols;
                member->col_begin = p->col_begin;
                member->data = w->data ? (char *)w->data + pf__weight_bytes(dtype, offset, cols) : NULL;
                if (member->data) pf__rank_fill(r, member->data, dtype, src, p, &staging, &staging_size);
                offset += p->rows;
                free(p->row_map);
            }
            continue;
        }
        const pf__source *src = &m->sources[i];
        if (!src->data || pf__stack_of(slot) || slot == PF__SLOT_REL_BIAS || slot == PF__SLOT_ENC_REL_BIAS)
            continue; /* the biases: tables below */
        pf__plan p;
        if (pf__plan_for(c, &r->share, src, &p)) {
            pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory");
            break;
        }
        pf__weight *w = &r->weights[i];
        w->rows = p.rows;
        w->cols = p.cols;
        w->col_begin = p.col_begin;
        w->dtype = pf__storage_dtype(g, src, &p);
        w->data = pf__rank_alloc(r, pf__weight_bytes(w->dtype, p.rows, p.cols));
        if (w->data) pf__rank_fill(r, w->data, w->dtype, src, &p, &staging, &staging_size);
        free(p.row_map);
    }
    free(staging);
    if (r->error) return;
    if (pf__slot_tied(m, PF__SLOT_LM_HEAD)) r->weights[PF__SLOT_LM_HEAD] = r->weights[PF__SLOT_TOKEN_EMBED];

    size_t hd = (size_t)c->head_dim, hidden = (size_t)c->hidden_size, T = g->max_tokens;
    /* Tables computed here rather than read: the sinusoid (where the file has no copy of it; one
       per tower) and the ALiBi slopes, in fp32. */
    size_t sinusoid_rows = (size_t)g->cache_len + (size_t)c->position_offset;
    size_t table_size = a->positions == PF__POS_SINUSOIDAL ? sinusoid_rows * hidden : (size_t)r->share.heads;
    float *table = table_size ? (float *)malloc(table_size * sizeof(float)) : NULL;
    if (table_size && !table) {
        pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory");
        return;
    }
    if (a->positions == PF__POS_SINUSOIDAL) {
        pf__sinusoid_table(table, sinusoid_rows, hidden, c->sinusoid);
        for (int k = 0; k < (a->kind == PF__KIND_SEQ2SEQ ? 2 : 1); k++) {
            pf__weight *w = &r->weights[k ? PF__SLOT_ENC_POSITION_EMBED : PF__SLOT_POSITION_EMBED];
            if (w->data) continue; /* read from the file */
            w->dtype = PF__DTYPE_F32;
            w->rows = sinusoid_rows;
            w->cols = hidden;
            w->data = pf__rank_upload_table(r, table, table_size);
        }
    } else if (a->positions == PF__POS_ALIBI && r->share.heads) {
        pf__alibi_slopes(c->num_heads, r->share.head_begin, r->share.heads, table);
        r->alibi = (float *)pf__rank_upload_table(r, table, table_size);
    }
    free(table);
    r->rel_bias = pf__rank_rel_table(r, &m->sources[PF__SLOT_REL_BIAS]);
    r->enc_rel_bias = pf__rank_rel_table(r, &m->sources[PF__SLOT_ENC_REL_BIAS]);
    if (r->error) return;

    size_t q_width = (size_t)r->share.heads * hd, kv_width = (size_t)r->share.kv_heads * hd;
    size_t mlp_in = (size_t)r->share.mlp_width * (c->gated_mlp ? 2 : 1);
    size_t layer_cache = (size_t)g->max_batch * g->cache_len * kv_width * sizeof(float);
    r->cache_dtype = r->backend->cache_in_weight_dtype ? g->dtype : PF__DTYPE_F32;
    size_t self_layer_cache = layer_cache / sizeof(float) * pf__dtype_size(r->cache_dtype);
    r->allocating = PF__MEM_CACHE;
    r->k_cache = pf__rank_alloc(r, (size_t)pf__cache_layers(c) * self_layer_cache);
    r->v_cache = pf__rank_alloc(r, (size_t)pf__cache_layers(c) * self_layer_cache);
    if (a->kind == PF__KIND_SEQ2SEQ && c->num_layers > c->encoder_layers) {
        r->cross_k = (float *)pf__rank_alloc(r, (size_t)(c->num_layers - c->encoder_layers) * layer_cache);
        r->cross_v = (float *)pf__rank_alloc(r, (size_t)(c->num_layers - c->encoder_layers) * layer_cache);
    }
    r->allocating = PF__MEM_SCRATCH;
    size_t wide = hidden > (size_t)c->embed_dim ? hidden : (size_t)c->embed_dim; /* OPT's project_out */
    r->x = (float *)pf__rank_alloc(r, T * hidden * sizeof(float));
    r->h = (float *)pf__rank_alloc(r, T * hidden * sizeof(float));
    r->part = (float *)pf__rank_alloc(r, T * wide * sizeof(float));
    if (m->sources[PF__SLOT_PROJECT_IN].data) r->embed = (float *)pf__rank_alloc(r, T * c->embed_dim * sizeof(float));
    r->qkv = (float *)pf__rank_alloc(r, T * (q_width + 2 * kv_width) * sizeof(float));
    r->attn = (float *)pf__rank_alloc(r, T * q_width * sizeof(float));
    r->mlp = (float *)pf__rank_alloc(r, T * mlp_in * sizeof(float));
    if (c->gated_mlp) r->mlp_act = (float *)pf__rank_alloc(r, T * r->share.mlp_width * sizeof(float));
    r->logits = (float *)pf__rank_alloc(r, g->logit_rows * r->share.vocab_rows * sizeof(float));
    if (m->sources[PF__SLOT_PATCH_WEIGHT].data)
        r->patch_in = (float *)pf__rank_alloc(r, (size_t)g->max_batch * (size_t)(c->max_positions - 1 - c->distillation) *
                                                     m->sources[PF__SLOT_PATCH_WEIGHT].cols * sizeof(float));
    if (r->index == 0 && (m->sources[PF__SLOT_CLASSIFIER_WEIGHT].data || m->sources[PF__SLOT_SPAN_WEIGHT].data))
        r->head_out = (float *)pf__rank_alloc(r, T * (size_t)(c->num_labels > 2 ? c->num_labels : 2) * sizeof(float));
    if (r->backend == &pf__cpu_backend) {
        r->scores = (float *)pf__rank_alloc(r, PF__QUERY_BLOCK * (size_t)g->cache_len * sizeof(float));
        if (g->num_ranks > 1) r->reduce_tmp = (float *)pf__rank_alloc(r, T * wide * sizeof(float));
        if (g->max_batch > 1) r->reorder_tmp = (float *)pf__rank_alloc(r, (size_t)g->max_batch * g->cache_len * kv_width * sizeof(float));
    }
    pf__rank_warm_up(r);
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
            w.data = (char *)w.data + pf__weight_bytes(w.dtype, hd, w.cols);
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
            r->backend->download(r, slice, w.data, pf__weight_bytes(w.dtype, w.rows, w.cols));
            if (w.dtype != PF__DTYPE_F32) { /* widen in place, from the back (Q8 too: a value's block lies before it) */
                for (size_t k = numel; k-- > 0;) slice[k] = pf__weight_value(slice, k, w.dtype);
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

static void pf__rank_vocab_logits(pf__rank *r, const pf__job *job, const float *h_rows, size_t rows, size_t width);

/* The blocks and the embedding, norm and bias slots of one tower: a decoder's or an encoder's
   whole model, or one side of an encoder-decoder. */
typedef struct pf__tower {
    int first_block, end_block;
    int mask;                /* its self-attention's PF__MASK_CAUSAL or PF__MASK_BIDIRECTIONAL */
    int cross;               /* 1: its blocks attend to the encoder's output after their own attention */
    pf__slot token_embed, positions, embed_norm, final_norm; /* norms: the weight, its bias the slot after */
    const float *rel_bias;   /* the rank's table, or NULL */
} pf__tower;

static pf__tower pf__tower_of(const pf__rank *r, int encoder) {
    const pf__config *c = &r->group->model->config;
    pf__tower t;
    int split = pf__archs[c->arch].kind == PF__KIND_SEQ2SEQ;
    int enc_blocks = pf__encoder_blocks(c);
    t.first_block = encoder ? 0 : enc_blocks;
    t.end_block = encoder ? enc_blocks : c->num_layers;
    t.mask = encoder ? PF__MASK_BIDIRECTIONAL : PF__MASK_CAUSAL;
    t.cross = split && !encoder;
    t.token_embed = split && encoder && r->weights[PF__SLOT_ENC_TOKEN_EMBED].data ? PF__SLOT_ENC_TOKEN_EMBED : PF__SLOT_TOKEN_EMBED;
    t.positions = split && encoder ? PF__SLOT_ENC_POSITION_EMBED : PF__SLOT_POSITION_EMBED;
    t.embed_norm = split && encoder ? PF__SLOT_ENC_EMBED_NORM_WEIGHT : PF__SLOT_EMBED_NORM_WEIGHT;
    t.final_norm = split && encoder ? PF__SLOT_ENC_FINAL_NORM_WEIGHT : PF__SLOT_FINAL_NORM_WEIGHT;
    t.rel_bias = split && encoder ? r->enc_rel_bias : r->rel_bias;
    return t;
}

static void pf__rank_vocab_logits(pf__rank *r, const pf__job *job, const float *h_rows, size_t rows, size_t width);

#define PF__HAS(w) ((w).data != NULL)
#define PF__OR_NULL(w) (PF__HAS(w) ? &(w) : NULL)

/* x (rows of `width`) += position table row + token type row, then the embedding norm: what
   follows the token embedding, each where the model has it. */
static void pf__rank_embed_extras(pf__rank *r, const pf__step *s, const pf__tower *t, float *x, size_t width) {
    const pf__config *c = &r->group->model->config;
    const pf__weight *W = r->weights;
    const pf__backend *be = r->backend;
    size_t N = (size_t)s->batch * s->seq_len;
    int norm_first = c->decoder_norm_before_positions && t->mask == PF__MASK_CAUSAL;
    if (norm_first && PF__HAS(W[t->embed_norm]))
        be->norm(r, x, x, &W[t->embed_norm], PF__OR_NULL(W[t->embed_norm + 1]), N, width, (float)c->norm_eps,
                 pf__archs[c->arch].norm);
    if (PF__HAS(W[t->positions])) be->add_positions(r, x, &W[t->positions], s, c->position_offset);
    if (PF__HAS(W[PF__SLOT_TOKEN_TYPE_EMBED])) { /* the segment table is whole on every rank */
        pf__step types = *s;
        types.ids = s->type_ids; /* the callers give zeros when the user gives none */
        be->embed(r, r->part, &W[PF__SLOT_TOKEN_TYPE_EMBED], &types, 1.0f, 0);
        be->add_residual(r, x, r->part, NULL, N, width);
    }
    if (!norm_first && PF__HAS(W[t->embed_norm]))
        be->norm(r, x, x, &W[t->embed_norm], PF__OR_NULL(W[t->embed_norm + 1]), N, width, (float)c->norm_eps,
                 pf__archs[c->arch].norm);
}

/* x = token embedding (* sqrt(hidden)) (projected in) (+ position table) (normed); each rank
   holds some of the vocabulary's rows, so the embedding is summed over ranks (one term each).
   Whether it is split is a fact of the model and the rank count, the same on every rank: a
   rank's own row count is not (with fewer rows than ranks, one holds all and another none). */
/* An image encoder's embedding stage: x = [class token, (distillation token,) patches W^T + b]
   per image, plus the position table. The patch projection is whole on every rank (a small
   matrix); the tokens are one-row tables read through the embed op. */
static void pf__rank_embed_patches(pf__rank *r, const pf__step *s, const pf__tower *t) {
    const pf__group *g = r->group;
    const pf__config *c = &g->model->config;
    const pf__backend *be = r->backend;
    const pf__weight *W = r->weights;
    size_t d = (size_t)c->hidden_size, S = (size_t)s->seq_len, B = (size_t)s->batch;
    size_t prefix = 1 + (size_t)c->distillation, n = S - prefix, in = W[PF__SLOT_PATCH_WEIGHT].cols;
    be->upload(r, r->patch_in, s->patches, B * n * in * sizeof(float));
    be->matmul(r, r->h, r->patch_in, &W[PF__SLOT_PATCH_WEIGHT], PF__OR_NULL(W[PF__SLOT_PATCH_BIAS]), B * n);
    for (size_t b = 0; b < B; b++) be->copy(r, r->x + (b * S + prefix) * d, r->h + b * n * d, n * d * sizeof(float));
    pf__step one;
    memset(&one, 0, sizeof one);
    one.ids = g->zero_ids;
    one.batch = s->batch;
    one.seq_len = 1;
    for (size_t k = 0; k < prefix; k++) {
        be->embed(r, r->part, &W[k ? PF__SLOT_DIST_TOKEN : PF__SLOT_CLS_TOKEN], &one, 1.0f, 0);
        for (size_t b = 0; b < B; b++) be->copy(r, r->x + (b * S + k) * d, r->part + b * d, d * sizeof(float));
    }
    pf__rank_embed_extras(r, s, t, r->x, d);
}

static void pf__rank_embed(pf__rank *r, const pf__step *s, const pf__tower *t) {
    const pf__group *g = r->group;
    if (s->patches) {
        pf__rank_embed_patches(r, s, t);
        return;
    }
    const pf__config *c = &g->model->config;
    const pf__backend *be = r->backend;
    const pf__weight *W = r->weights;
    size_t N = (size_t)s->batch * s->seq_len, d = (size_t)c->hidden_size;
    float embed_scale = c->embed_scale_sqrt ? sqrtf((float)d) : 1.0f;
    int vocab_split = g->num_ranks > 1 && g->model->sources[t->token_embed].split == PF__SPLIT_VOCAB;
    float *embedded = PF__HAS(W[PF__SLOT_PROJECT_IN]) ? r->embed : r->x;
    be->embed(r, embedded, &W[t->token_embed], s, embed_scale, vocab_split ? r->share.vocab_begin : 0);
    if (vocab_split) pf__all_reduce(r, embedded, N * (size_t)c->embed_dim, "the token embedding's all-reduce");
    if (c->embed_norm_before_project && PF__HAS(W[PF__SLOT_PROJECT_IN])) { /* ELECTRA, ALBERT: the embedding stage at its own width */
        pf__rank_embed_extras(r, s, t, embedded, (size_t)c->embed_dim);
        be->matmul(r, r->x, embedded, &W[PF__SLOT_PROJECT_IN], PF__OR_NULL(W[PF__SLOT_PROJECT_IN_BIAS]), N);
    } else {
        if (PF__HAS(W[PF__SLOT_PROJECT_IN])) be->matmul(r, r->x, r->embed, &W[PF__SLOT_PROJECT_IN], NULL, N);
        pf__rank_embed_extras(r, s, t, r->x, d);
    }
}

/* The attention shape every block of a tower shares on this rank; scale and window are set per block. */
static pf__attn_shape pf__rank_attn_shape(const pf__rank *r, const pf__tower *t) {
    const pf__config *c = &r->group->model->config;
    pf__attn_shape shape;
    memset(&shape, 0, sizeof shape);
    shape.heads = r->share.heads;
    shape.kv_heads = r->share.kv_heads;
    shape.head_dim = c->head_dim;
    shape.head_begin = r->share.head_begin;
    shape.kv_begin = r->share.kv_begin;
    shape.kv_group = c->num_heads / c->num_kv_heads;
    shape.cache_len = r->group->cache_len;
    shape.rotary_dim = c->rotary_dim;
    shape.cache_dtype = r->cache_dtype;
    shape.alibi = r->alibi;
    shape.rel_bias = t->rel_bias;
    shape.rel_rows = c->rel_table_rows;
    shape.rel_buckets = c->rel_buckets;
    shape.rel_max_distance = c->rel_max_distance;
    shape.mask = t->mask;
    return shape;
}

/* A decoder block's attention over the encoder's output: x += sum over ranks of
   attend(norm(x) Wq_r, the cached encoder keys and values) Wo_r, + bo once (post-norm: then
   x = norm(x)). Block l's cross keys and values are in the rank's cross caches, packed by the
   step's cross_len. */
static void pf__rank_cross_attention(pf__rank *r, const pf__step *s, const pf__weight *L, int decoder_block,
                                     const pf__attn_shape *self_shape) {
    const pf__config *c = &r->group->model->config;
    const pf__backend *be = r->backend;
    size_t N = (size_t)s->batch * s->seq_len, d = (size_t)c->hidden_size;
    size_t layer = (size_t)r->group->max_batch * r->group->cache_len * r->share.kv_heads * c->head_dim;
    pf__norm kind = pf__archs[c->arch].norm;
    float eps = (float)c->norm_eps;
    const pf__weight *norm_b = PF__OR_NULL(L[PF__SLOT_CROSS_NORM_BIAS]);
    pf__attn_shape shape = *self_shape;
    shape.mask = PF__MASK_CROSS;
    shape.cache_dtype = PF__DTYPE_F32; /* written by a matmul, once per request */
    shape.cache_len = s->cross_len;
    shape.window = 0;
    shape.alibi = NULL;
    shape.rel_bias = NULL;
    pf__step keys = *s; /* the encoder's left pads are the keys to skip */
    keys.pad = s->cross_pad;
    const float *in = r->x;
    if (c->pre_norm) {
        be->norm(r, r->h, r->x, &L[PF__SLOT_CROSS_NORM_WEIGHT], norm_b, N, d, eps, kind);
        in = r->h;
    }
    be->matmul(r, r->qkv, in, &L[PF__SLOT_CROSS_Q_WEIGHT], PF__OR_NULL(L[PF__SLOT_CROSS_Q_BIAS]), N);
    if (r->cross_k)
        be->attend(r, r->attn, r->qkv, r->cross_k + decoder_block * layer, r->cross_v + decoder_block * layer, &keys, &shape);
    be->matmul(r, r->part, r->attn, &L[PF__SLOT_CROSS_OUT_WEIGHT], NULL, N);
    pf__all_reduce(r, r->part, N * d, "the cross-attention output's all-reduce");
    be->add_residual(r, r->x, r->part, PF__OR_NULL(L[PF__SLOT_CROSS_OUT_BIAS]), N, d);
    if (!c->pre_norm) be->norm(r, r->x, r->x, &L[PF__SLOT_CROSS_NORM_WEIGHT], norm_b, N, d, eps, kind);
}

/* One block l of a tower on x: attention over the cache (appending this step's keys), the
   encoder's output for a decoder tower of an encoder-decoder, then the MLP. */
static void pf__rank_block(pf__rank *r, const pf__step *s, const pf__tower *t, int l, pf__attn_shape *shape) {
    const pf__group *g = r->group;
    const pf__config *c = &g->model->config;
    const pf__arch *a = &pf__archs[c->arch];
    const pf__backend *be = r->backend;
    size_t N = (size_t)s->batch * s->seq_len, d = (size_t)c->hidden_size;
    float eps = (float)c->norm_eps;
    size_t cache_stride = (size_t)g->max_batch * g->cache_len * r->share.kv_heads * c->head_dim *
                          pf__dtype_size(r->cache_dtype); /* one layer's cache, in bytes */
    int rotary = a->positions == PF__POS_ROTARY_HALVES || a->positions == PF__POS_ROTARY_PAIRS;
    size_t mlp_width = (size_t)r->share.mlp_width;
    const pf__weight *L = r->weights + pf__slot_index(PF__SLOT_FIRST_LAYER, l) - PF__SLOT_FIRST_LAYER;
    shape->scale = c->scale_attn_weights ? 1.0f / sqrtf((float)c->head_dim) : 1.0f;
    if (c->scale_attn_by_inverse_layer_idx) shape->scale /= (float)(l + 1);
    shape->window = c->layer_window[l];
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
    if (rotary) be->rotary(r, r->qkv, s, shape, a->positions == PF__POS_ROTARY_PAIRS);
    /* attn = softmax(q k^T * scale + alibi + relative bias) v over the cache, k and v appended to it */
    size_t cache_layer = (size_t)pf__cache_layer(c, l);
    void *k_cache = r->k_cache ? (char *)r->k_cache + cache_layer * cache_stride : NULL; /* NULL: a rank without heads */
    void *v_cache = r->v_cache ? (char *)r->v_cache + cache_layer * cache_stride : NULL;
    be->kv_append(r, k_cache, v_cache, r->qkv, s, shape);
    be->attend(r, r->attn, r->qkv, k_cache, v_cache, s, shape);
    /* part = attn Wo_r^T: this rank's share of the output projection */
    be->matmul(r, r->part, r->attn, &L[PF__SLOT_ATTN_OUT_WEIGHT], NULL, N);

    if (c->parallel_residual) {
        /* part += act(norm2(x) Win_r^T) Wdown_r^T, with GPT-J's single norm reused; then
           x += sum over ranks of part + bo + bdown: one all-reduce for both sublayers */
        if (PF__HAS(L[PF__SLOT_MLP_NORM_WEIGHT])) /* h = norm2(x); norm1's h is spent */
            be->norm(r, r->h, r->x, &L[PF__SLOT_MLP_NORM_WEIGHT], mlp_norm_b, N, d, eps, a->norm);
        be->matmul(r, r->mlp, r->h, &L[PF__SLOT_MLP_IN_WEIGHT], PF__OR_NULL(L[PF__SLOT_MLP_IN_BIAS]), N);
        const float *act = r->mlp;
        if (c->gated_mlp) be->gated_activation(r, r->mlp_act, r->mlp, N, mlp_width, c->activation), act = r->mlp_act;
        else be->activation(r, r->mlp, N * mlp_width, c->activation);
        be->matmul(r, r->h, act, &L[PF__SLOT_MLP_DOWN_WEIGHT], NULL, N);
        be->add_residual(r, r->part, r->h, NULL, N, d);
        pf__all_reduce(r, r->part, N * d, "the parallel block's all-reduce");
        be->add_residual(r, r->x, r->part, PF__OR_NULL(L[PF__SLOT_ATTN_OUT_BIAS]), N, d);
        if (PF__HAS(L[PF__SLOT_MLP_DOWN_BIAS])) be->add_residual(r, r->x, NULL, &L[PF__SLOT_MLP_DOWN_BIAS], N, d);
        return;
    }
    /* x += sum over ranks of part, + bo once; post-norm: x = norm1(x); BLOOM's
       residual-from-norm: x = h + ... */
    if (c->residual_from_norm) be->copy(r, r->x, r->h, N * d * sizeof(float));
    pf__all_reduce(r, r->part, N * d, "the attention output's all-reduce");
    be->add_residual(r, r->x, r->part, PF__OR_NULL(L[PF__SLOT_ATTN_OUT_BIAS]), N, d);
    if (!c->pre_norm) be->norm(r, r->x, r->x, &L[PF__SLOT_ATTN_NORM_WEIGHT], attn_norm_b, N, d, eps, a->norm);
    if (t->cross) pf__rank_cross_attention(r, s, L, l - t->first_block, shape);
    const float *mlp_in = r->x;
    if (c->pre_norm) {
        be->norm(r, r->h, r->x, &L[PF__SLOT_MLP_NORM_WEIGHT], mlp_norm_b, N, d, eps, a->norm);
        mlp_in = r->h;
        if (c->residual_from_norm) be->copy(r, r->x, r->h, N * d * sizeof(float));
    }
    /* mlp = act(h Win_r^T + bin_r), or act(gate) * up: this rank's columns */
    be->matmul(r, r->mlp, mlp_in, &L[PF__SLOT_MLP_IN_WEIGHT], PF__OR_NULL(L[PF__SLOT_MLP_IN_BIAS]), N);
    const float *act = r->mlp;
    if (c->gated_mlp) be->gated_activation(r, r->mlp_act, r->mlp, N, mlp_width, c->activation), act = r->mlp_act;
    else be->activation(r, r->mlp, N * mlp_width, c->activation);
    /* part = mlp Wdown_r^T, summed over ranks; x += part + bdown; post-norm: x = norm2(x) */
    be->matmul(r, r->part, act, &L[PF__SLOT_MLP_DOWN_WEIGHT], NULL, N);
    pf__all_reduce(r, r->part, N * d, "the MLP output's all-reduce");
    be->add_residual(r, r->x, r->part, PF__OR_NULL(L[PF__SLOT_MLP_DOWN_BIAS]), N, d);
    if (!c->pre_norm) be->norm(r, r->x, r->x, &L[PF__SLOT_MLP_NORM_WEIGHT], mlp_norm_b, N, d, eps, a->norm);
}

/* A tower's stages on the step's tokens: the embedding, then its blocks; x holds the result. */
static void pf__rank_tower(pf__rank *r, const pf__step *s, const pf__tower *t) {
    pf__rank_embed(r, s, t);
    pf__attn_shape shape = pf__rank_attn_shape(r, t);
    for (int l = t->first_block; l < t->end_block && !pf__rank_failed(r); l++) pf__rank_block(r, s, t, l, &shape);
}

/* x = the tower's final norm of x, where it has one (pre-norm towers). */
static void pf__rank_final_norm(pf__rank *r, const pf__tower *t, float *out, const float *x, size_t rows) {
    const pf__config *c = &r->group->model->config;
    const pf__weight *W = r->weights;
    if (PF__HAS(W[t->final_norm]))
        r->backend->norm(r, out, x, &W[t->final_norm], PF__OR_NULL(W[t->final_norm + 1]), rows, (size_t)c->hidden_size,
                         (float)c->final_norm_eps, pf__archs[c->arch].norm);
    else if (out != x)
        r->backend->copy(r, out, x, rows * c->hidden_size * sizeof(float));
}

/* An encoder-decoder's encoder pass: the encoder tower on the step's rows, its output (rank 0
   downloads it when asked), and each decoder block's keys and values of it into the cross caches
   (rows 0..batch-1, packed by the step's seq_len) for the decoder steps that follow. */
static void pf__rank_encoder_pass(pf__rank *r, const pf__job *job) {
    const pf__config *c = &r->group->model->config;
    const pf__step *s = &job->step;
    pf__tower t = pf__tower_of(r, 1);
    size_t N = (size_t)s->batch * s->seq_len, d = (size_t)c->hidden_size;
    size_t layer = (size_t)r->group->max_batch * r->group->cache_len * r->share.kv_heads * c->head_dim;
    pf__rank_tower(r, s, &t);
    if (pf__rank_failed(r)) return;
    pf__rank_final_norm(r, &t, r->x, r->x, N);
    for (int l = c->encoder_layers; l < c->num_layers && r->cross_k; l++) {
        const pf__weight *L = r->weights + pf__slot_index(PF__SLOT_FIRST_LAYER, l) - PF__SLOT_FIRST_LAYER;
        size_t k = (size_t)(l - c->encoder_layers);
        r->backend->matmul(r, r->cross_k + k * layer, r->x, &L[PF__SLOT_CROSS_K_WEIGHT], PF__OR_NULL(L[PF__SLOT_CROSS_K_BIAS]), N);
        r->backend->matmul(r, r->cross_v + k * layer, r->x, &L[PF__SLOT_CROSS_V_WEIGHT], PF__OR_NULL(L[PF__SLOT_CROSS_V_BIAS]), N);
    }
    if (r->index == 0 && job->hidden && !r->error) r->backend->download(r, job->hidden, r->x, N * d * sizeof(float));
}

static void pf__rank_encoder_outputs(pf__rank *r, const pf__job *job, const pf__tower *t);

/* Runs on every rank's thread with the same step; rank 0 also computes the logits. */
static void pf__rank_forward(pf__rank *r, const pf__job *job) {
    const pf__group *g = r->group;
    const pf__config *c = &g->model->config;
    const pf__arch *a = &pf__archs[c->arch];
    const pf__step *s = &job->step;
    const pf__weight *W = r->weights;
    size_t N = (size_t)s->batch * s->seq_len, d = (size_t)c->hidden_size;
    if (r->backend->prepare) r->backend->prepare(r, s);
    if (job->encoder_pass) {
        pf__rank_encoder_pass(r, job);
        return;
    }
    pf__tower t = pf__tower_of(r, a->kind == PF__KIND_ENCODER);
    pf__rank_tower(r, s, &t);
    if (pf__rank_failed(r)) return;
    if (a->kind == PF__KIND_ENCODER) {
        pf__rank_encoder_outputs(r, job, &t);
        return;
    }

    /* h = final norm(x) for the rows wanted (or x itself); then the vocabulary logits */
    size_t rows = job->all_positions ? N : (size_t)s->batch;
    if (!W[PF__SLOT_LM_HEAD].rows) return; /* more ranks than vocabulary rows */
    /* the wanted rows of x: all of them, or each sequence's last (contiguous when one per row) */
    const float *wanted = r->x;
    if (!job->all_positions && s->seq_len > 1) {
        for (size_t b = 0; b < rows; b++) r->backend->copy(r, r->h + b * d, r->x + (b * s->seq_len + s->seq_len - 1) * d, d * sizeof(float));
        wanted = r->h;
    }
    if (PF__HAS(W[t.final_norm])) {
        pf__rank_final_norm(r, &t, r->h, wanted, rows);
        wanted = r->h;
    }
    pf__rank_vocab_logits(r, job, wanted, rows, d);
}

/* logits = h (projected out) Wlm^T (+ b) for the rank's vocabulary rows, written into its columns
   of the host logits, in chunks of logit_rows; h_rows are `width` apart. */
static void pf__rank_vocab_logits(pf__rank *r, const pf__job *job, const float *h_rows, size_t rows, size_t width) {
    const pf__group *g = r->group;
    const pf__config *c = &g->model->config;
    const pf__weight *W = r->weights;
    size_t vocab = (size_t)c->vocab_size, mine = W[PF__SLOT_LM_HEAD].rows;
    if (!mine) return; /* more ranks than vocabulary rows */
    for (size_t first = 0; first < rows && !r->error; first += g->logit_rows) {
        size_t n = rows - first < g->logit_rows ? rows - first : g->logit_rows;
        const float *h = h_rows + first * width;
        if (PF__HAS(W[PF__SLOT_PROJECT_OUT])) {
            r->backend->matmul(r, r->part, h, &W[PF__SLOT_PROJECT_OUT], NULL, n);
            h = r->part;
        }
        r->backend->matmul(r, r->logits, h, &W[PF__SLOT_LM_HEAD], PF__OR_NULL(W[PF__SLOT_LM_HEAD_BIAS]), n);
        r->backend->download_rows(r, job->logits + first * vocab + r->share.vocab_begin, vocab * sizeof(float),
                                  r->logits, mine * sizeof(float), mine * sizeof(float), n);
    }
}

/* An encoder's outputs from its last hidden state x: x itself, the pooler's dense + tanh of each
   sequence's first token, and the head. The masked-LM head (dense + act + norm, then the
   vocabulary rows) runs on every rank; the small replicated ones (pooler, classifiers) on rank 0
   alone, after the last collective. */
static void pf__rank_encoder_outputs(pf__rank *r, const pf__job *job, const pf__tower *t) {
    const pf__group *g = r->group;
    const pf__config *c = &g->model->config;
    const pf__arch *a = &pf__archs[c->arch];
    const pf__backend *be = r->backend;
    const pf__step *s = &job->step;
    const pf__weight *W = r->weights;
    size_t N = (size_t)s->batch * s->seq_len, d = (size_t)c->hidden_size, B = (size_t)s->batch;
    pf__rank_final_norm(r, t, r->x, r->x, N); /* pre-norm encoders end with a norm */
    if (c->head == PF_HEAD_MASKED_LM) { /* to the head's width: hidden, or the embedding's (ELECTRA, ALBERT) */
        size_t width = W[PF__SLOT_HEAD_TRANSFORM_WEIGHT].rows;
        float *h = width <= d ? r->h : r->part;
        be->matmul(r, h, r->x, &W[PF__SLOT_HEAD_TRANSFORM_WEIGHT], PF__OR_NULL(W[PF__SLOT_HEAD_TRANSFORM_BIAS]), N);
        be->activation(r, h, N * width, c->head_activation < 0 ? c->activation : (pf__activation)c->head_activation);
        be->norm(r, h, h, &W[PF__SLOT_HEAD_NORM_WEIGHT], PF__OR_NULL(W[PF__SLOT_HEAD_NORM_BIAS]), N, width,
                 (float)c->norm_eps, a->norm);
        if (job->logits) pf__rank_vocab_logits(r, job, h, N, width);
    }
    if (r->index != 0 || r->error) return;
    if (job->hidden) be->download(r, job->hidden, r->x, N * d * sizeof(float));
    float *pooled = r->part; /* [batch][hidden] */
    if (PF__HAS(W[PF__SLOT_POOLER_WEIGHT])) {
        for (size_t b = 0; b < B; b++) { /* the first real token: after the left pads */
            size_t first = b * (size_t)s->seq_len + (size_t)(s->pad ? s->pad[b] : 0);
            be->copy(r, r->h + b * d, r->x + first * d, d * sizeof(float));
        }
        be->matmul(r, pooled, r->h, &W[PF__SLOT_POOLER_WEIGHT], PF__OR_NULL(W[PF__SLOT_POOLER_BIAS]), B);
        be->activation(r, pooled, B * d, c->pooler_activation < 0 ? c->activation : (pf__activation)c->pooler_activation);
        if (job->pooled) be->download(r, job->pooled, pooled, B * d * sizeof(float));
    }
    if (!job->logits) return;
    if (c->head == PF_HEAD_SEQUENCE_CLASSIFICATION) {
        be->matmul(r, r->head_out, pooled, &W[PF__SLOT_CLASSIFIER_WEIGHT], PF__OR_NULL(W[PF__SLOT_CLASSIFIER_BIAS]), B);
        be->download(r, job->logits, r->head_out, B * (size_t)c->num_labels * sizeof(float));
    } else if (c->head == PF_HEAD_TOKEN_CLASSIFICATION) {
        be->matmul(r, r->head_out, r->x, &W[PF__SLOT_CLASSIFIER_WEIGHT], PF__OR_NULL(W[PF__SLOT_CLASSIFIER_BIAS]), N);
        be->download(r, job->logits, r->head_out, N * (size_t)c->num_labels * sizeof(float));
    } else if (c->head == PF_HEAD_QUESTION_ANSWERING) {
        be->matmul(r, r->head_out, r->x, &W[PF__SLOT_SPAN_WEIGHT], PF__OR_NULL(W[PF__SLOT_SPAN_BIAS]), N);
        be->download(r, job->logits, r->head_out, N * 2 * sizeof(float));
    } else if (c->head == PF_HEAD_IMAGE_CLASSIFICATION) { /* the class token's head (+ the distillation token's) */
        size_t labels = (size_t)c->num_labels;
        for (size_t b = 0; b < B; b++) be->copy(r, r->h + b * d, r->x + b * (size_t)s->seq_len * d, d * sizeof(float));
        be->matmul(r, r->head_out, r->h, &W[PF__SLOT_CLASSIFIER_WEIGHT], PF__OR_NULL(W[PF__SLOT_CLASSIFIER_BIAS]), B);
        if (PF__HAS(W[PF__SLOT_DIST_CLASSIFIER_WEIGHT])) { /* both heads were halved at load: their sum is the mean */
            for (size_t b = 0; b < B; b++)
                be->copy(r, r->h + b * d, r->x + (b * (size_t)s->seq_len + 1) * d, d * sizeof(float));
            be->matmul(r, r->part, r->h, &W[PF__SLOT_DIST_CLASSIFIER_WEIGHT], PF__OR_NULL(W[PF__SLOT_DIST_CLASSIFIER_BIAS]), B);
            be->add_residual(r, r->head_out, r->part, NULL, B, labels);
        }
        be->download(r, job->logits, r->head_out, B * labels * sizeof(float));
    }
}
#undef PF__HAS
#undef PF__OR_NULL

/* Runs on every rank's thread: reorders the decoder blocks' cache rows for beam search, and the
   cross caches too when asked (a prompt's encoder output copied to its beams, once). */
static void pf__rank_reorder(pf__rank *r, const pf__job *job) {
    const pf__group *g = r->group;
    const pf__config *c = &g->model->config;
    size_t kv_width = (size_t)r->share.kv_heads * c->head_dim, self_size = pf__dtype_size(r->cache_dtype);
    size_t row = (size_t)g->cache_len * kv_width, layer = (size_t)g->max_batch * row; /* in elements */
    size_t used = (size_t)job->step.past * kv_width, cross = (size_t)job->step.cross_len * kv_width;
    int decoder_blocks = c->num_layers - pf__encoder_blocks(c);
    const int *dst = job->reorder_dst, *src = job->reorder_src;
    int n = job->reorder_count;
    if (!kv_width) return;
    for (int l = 0; l < decoder_blocks && !pf__rank_failed(r); l++) {
        size_t self_layer = l * layer * self_size;
        r->backend->reorder_rows(r, (char *)r->k_cache + self_layer, dst, src, n, row * self_size, used * self_size);
        r->backend->reorder_rows(r, (char *)r->v_cache + self_layer, dst, src, n, row * self_size, used * self_size);
        if (!job->reorder_cross || !r->cross_k) continue; /* cross caches: fp32 */
        size_t f = sizeof(float);
        r->backend->reorder_rows(r, r->cross_k + l * layer, dst, src, n, cross * f, cross * f);
        r->backend->reorder_rows(r, r->cross_v + l * layer, dst, src, n, cross * f, cross * f);
    }
}

/* =============================================================================================== */
/* CUDA backend (kernels.cu), when built with PF_CUDA                                              */
/* =============================================================================================== */

#ifdef PF_CUDA
/* The CUDA backend's side, compiled with PF_CUDA. It fills a pf__backend table whose
   operations call the pf_cuda_* C ABI of kernels.cu (see the top of that file), turning a
   failed call into pf__rank_fail with the message kernels.cu wrote.

   Per rank (r->backend_state, a pf__cuda_rank_state): the pf_cuda_rank (device, stream, cuBLAS
   handle), made on the rank's thread by rank_begin (cudaSetDevice first), and the scratch the
   CUDA ops need beyond the forward pass's buffers, allocated through pf__rank_alloc as
   PF__MEM_SCRATCH on the rank's first upload (during pf_parallelize), so pf_memory_allocated is
   exact once pf_parallelize returns. The scratch includes device copies of the step's host
   arrays: the rotary frequencies (pf__step.inv_freq), the left pads of a padded batch
   (pf__step.pad) and beam search's row order (reorder_rows' src), each queued from a host copy
   kept in the rank state whenever the step's differ from it; and, with max_batch > 1, the beam
   reorder's buffer (one layer's K or V cache, as the CPU backend's).

   Each op mirrors the CPU backend's (the reference): weights are in the group's dtype, except
   CTRL's fp32 sinusoid table, so every weight passes its own dtype to kernels.cu.

   Per group (g->backend_state, a pf__cuda_group_state): ranks on distinct GPUs all-reduce with
   NCCL (ncclCommInitAll in group_begin, on the caller's thread). Ranks sharing a GPU (device ids
   such as {0, 0}), which NCCL refuses, use a device-memory reduction through g->reduce_in and two
   barriers instead (peer copies where some ranks are on other GPUs).

   Failures with NCCL: a rank that fails skips its remaining collectives, so its peers' NCCL
   kernels would wait for it forever. The failing rank marks the group's communicators broken;
   every rank then aborts its own communicator (ncclCommAbort, on its own thread) before it could
   wait on one: in download (a wait that watches the group's abort flag), in every later
   operation, in free and in rank_end. Later requests fail with a message asking for
   pf_parallelize again, which builds new communicators. */
#include <sched.h>

/* ---- the C ABI of kernels.cu (keep in step with it) ---- */

typedef struct pf_cuda_rank pf_cuda_rank;

#define PF__CUDA_OK 0
#define PF__CUDA_ERROR_DEVICE 1
#define PF__CUDA_ERROR_OUT_OF_MEMORY 2
#define PF__CUDA_F32 0
#define PF__CUDA_F16 1
#define PF__CUDA_BF16 2
#define PF__CUDA_GELU_TANH 0
#define PF__CUDA_GELU_ERF 1
#define PF__CUDA_RELU 2
#define PF__CUDA_SILU 3
#define PF__CUDA_TANH 4

int pf_cuda_device_count(int *count, const char **reason);
int pf_cuda_device_memory(int device, size_t *free_bytes, size_t *total_bytes);
int pf_cuda_rank_create(int device, pf_cuda_rank **out, char *message, size_t size);
void pf_cuda_rank_destroy(pf_cuda_rank *st);
const char *pf_cuda_rank_message(const pf_cuda_rank *st);
int pf_cuda_set_workspace(pf_cuda_rank *st, void *workspace, size_t bytes);
size_t pf_cuda_workspace_bytes(void);
int pf_cuda_malloc(pf_cuda_rank *st, void **ptr, size_t bytes);
int pf_cuda_free(pf_cuda_rank *st, void *ptr);
int pf_cuda_upload(pf_cuda_rank *st, void *dst, const void *host, size_t bytes);
int pf_cuda_upload_async(pf_cuda_rank *st, void *dst, const void *host, size_t bytes);
int pf_cuda_download(pf_cuda_rank *st, void *host, const void *src, size_t bytes);
int pf_cuda_copy_async(pf_cuda_rank *st, void *dst, const void *src, size_t bytes);
int pf_cuda_copy_peer_async(pf_cuda_rank *st, void *dst, const void *src, int src_device, size_t bytes);
int pf_cuda_stream_sync(pf_cuda_rank *st);
int pf_cuda_stream_query(pf_cuda_rank *st, int *done);
int pf_cuda_download_rows(pf_cuda_rank *st, void *host, size_t host_stride, const void *src, size_t src_stride,
                          size_t row_bytes, size_t rows);
int pf_cuda_embed(pf_cuda_rank *st, float *out, const void *tokens, int dtype, const int32_t *ids_host,
                  int32_t *ids_device, size_t rows, size_t d, float scale, int first, size_t table_rows);
int pf_cuda_add_positions(pf_cuda_rank *st, float *x, const void *table, int dtype, const int *pad, int batch, int T,
                          int past, size_t offset, size_t d);
int pf_cuda_norm(pf_cuda_rank *st, float *out, const float *x, const void *weight, int weight_dtype, const void *bias,
                 int bias_dtype, size_t rows, size_t n, float eps, int rms);
int pf_cuda_matmul(pf_cuda_rank *st, float *out, const float *x, const void *w, int w_dtype, const void *bias,
                   int bias_dtype, size_t rows, size_t n_out, size_t k, void *x_scratch);
int pf_cuda_activation(pf_cuda_rank *st, float *x, size_t count, int act);
int pf_cuda_gated_activation(pf_cuda_rank *st, float *out, const float *in, size_t rows, size_t width, int act);
int pf_cuda_add_residual(pf_cuda_rank *st, float *x, const float *y, const void *bias, int dtype, size_t rows,
                         size_t n);
int pf_cuda_sum(pf_cuda_rank *st, float *sum, const float *in, size_t count, int first);
int pf_cuda_rotary(pf_cuda_rank *st, float *qkv, const float *inv_freq, const int *pad, int batch, int T, int past,
                   int heads, int kv_heads, int head_dim, int rotary_dim, int pairs);
size_t pf_cuda_attention_scratch_floats(int max_batch, int heads, int head_dim);
int pf_cuda_kv_append(pf_cuda_rank *st, void *k_cache, void *v_cache, int cache_dtype, const float *qkv, const int *rows,
                      int batch, int T, int past, int heads, int kv_heads, int head_dim, int cache_len);
int pf_cuda_attend(pf_cuda_rank *st, float *out, const float *qkv, const void *k_cache, const void *v_cache,
                      int cache_dtype, float *partials,
                      const float *alibi, const int *pad, const int *rows, int batch, int T, int past, int heads, int kv_heads,
                      int head_dim, int head_begin, int kv_begin, int kv_group, int cache_len, int window,
                      int mask, float scale, const float *rel_bias, int rel_rows, int rel_buckets,
                      int rel_max_distance);
int pf_cuda_reorder_rows(pf_cuda_rank *st, void *cache, void *scratch, const int *dst, const int *src, int count,
                         size_t row_bytes, size_t used_bytes);
int pf_cuda_nccl_create(int n, const int *devices, void **comms, char *message, size_t size);
void pf_cuda_nccl_destroy(void *comm);
void pf_cuda_nccl_abort(void *comm);
int pf_cuda_nccl_async_error(void *comm, char *message, size_t size);
int pf_cuda_nccl_all_reduce(pf_cuda_rank *st, void *comm, float *x, size_t count);

/* ---- state ---- */

typedef struct pf__cuda_rank_state {
    pf_cuda_rank *cu;         /* NULL when rank_begin could not set the device up */
    pf_result init_error;     /* then: why, reported by the rank's first operation */
    char init_message[PF__MESSAGE_SIZE];
    int scratch_done;
    void *workspace;          /* cuBLAS workspace, pf_cuda_workspace_bytes() */
    int32_t *ids;             /* [max_tokens]: the step's token ids */
    void *x16;                /* [max_tokens][widest GEMM input] fp16/bf16: GEMM input */
    float *partials;          /* decode attention partial sums, per local query head */
    float *inv_freq;          /* [rotary_dim / 2]: the rotary frequencies on the device */
    float *inv_freq_host;     /* [rotary_dim / 2], malloc'd: what inv_freq holds (or is queued to) */
    int inv_freq_loaded;      /* inv_freq_host has been queued to inv_freq */
    float *reduce_sum;        /* [max_tokens * hidden]: device-memory all-reduce */
    float *reduce_tmp;        /* [max_tokens * hidden]: a peer's buffer copied from another GPU */
    int *pad;                 /* [max_batch]: the step's left pads on the device */
    int *pad_host;            /* [max_batch], malloc'd: what pad holds (or is queued to) */
    int pad_count;            /* entries of pad_host queued to pad; 0: none yet */
    int *cross_pad, *cross_pad_host, cross_pad_count; /* the same of the sources' pads (encoder-decoders) */
    int *cache_rows, *cache_rows_host, cache_rows_count; /* the step's KV cache rows (pf__step.cache_rows) */
    int32_t *type_ids;        /* [max_tokens]: the step's segment ids, staged by prepare */
    const int32_t *type_ids_from; /* the host array they were staged from this step, or NULL */
    int *src;                 /* [2 max_batch]: a beam reorder's rows that change, then their old rows, on the device */
    int *src_host;            /* [2 max_batch], malloc'd: what src holds (or is queued to) */
    int src_count;            /* entries of src_host queued to src */
    float *reorder_tmp;       /* [max_batch * cache_len * kv_width]: beam reorder, when max_batch > 1 */
} pf__cuda_rank_state;

typedef struct pf__cuda_group_state {
    int use_nccl;      /* more than one rank, all on distinct GPUs */
    int mixed;         /* device-memory reduction with some ranks on other GPUs */
    void **comms;      /* [num_ranks] NCCL communicators, rank i's at i */
    int *comm_gone;    /* [num_ranks]: rank i aborted its communicator (written by rank i only) */
    int broken;        /* a rank failed: communicators may hold operations that never finish
                          (under g->mutex) */
} pf__cuda_group_state;

static pf_result pf__cuda_result(int status) {
    return status == PF__CUDA_ERROR_OUT_OF_MEMORY ? PF_ERROR_OUT_OF_MEMORY : PF_ERROR_DEVICE;
}

static int pf__cuda_dtype(pf__dtype t) {
    return t == PF__DTYPE_F16 ? PF__CUDA_F16 : t == PF__DTYPE_BF16 ? PF__CUDA_BF16 : PF__CUDA_F32;
}

static int pf__cuda_broken(pf__group *g) {
    pf__cuda_group_state *gs = (pf__cuda_group_state *)g->backend_state;
    if (!gs || !gs->use_nccl) return 0;
    return PF__LOAD_FLAG(gs->broken); /* every op asks: no lock */
}

static void pf__cuda_break(pf__group *g) {
    pf__cuda_group_state *gs = (pf__cuda_group_state *)g->backend_state;
    if (!gs || !gs->use_nccl) return;
    PF__STORE_FLAG(gs->broken, 1);
}

/* On rank r's thread: ends whatever its communicator still waits for. */
static void pf__cuda_abort_own_comm(pf__rank *r) {
    pf__cuda_group_state *gs = (pf__cuda_group_state *)r->group->backend_state;
    if (!gs || !gs->use_nccl || gs->comm_gone[r->index]) return;
    pf_cuda_nccl_abort(gs->comms[r->index]);
    gs->comm_gone[r->index] = 1;
}

/* 1 when a kernels.cu call succeeded; else records its failure on the rank and returns 0. */
static int pf__cuda_ok(pf__rank *r, int status) {
    if (status == PF__CUDA_OK) return 1;
    pf__cuda_rank_state *rs = (pf__cuda_rank_state *)r->backend_state;
    pf__rank_fail(r, pf__cuda_result(status), "GPU %d: %s", r->device, pf_cuda_rank_message(rs->cu));
    pf__cuda_break(r->group);
    return 0;
}

static int pf__cuda_alloc_scratch(pf__rank *r, pf__cuda_rank_state *rs);

/* The rank's state when an operation should run, else NULL (after recording why, if it is news):
   the rank already failed, its device could not be set up, or the NCCL communicators broke. */
static pf__cuda_rank_state *pf__cuda_begin(pf__rank *r, int need_scratch) {
    pf__cuda_rank_state *rs = (pf__cuda_rank_state *)r->backend_state;
    if (r->error || !rs) return NULL;
    if (!rs->cu) {
        pf__rank_fail(r, rs->init_error, "GPU %d: %s", r->device, rs->init_message);
        return NULL;
    }
    if (pf__cuda_broken(r->group)) {
        pf__cuda_abort_own_comm(r);
        pf__rank_fail(r, PF_ERROR_DEVICE,
                      "the NCCL communicators were aborted after a rank failed; call pf_parallelize again");
        return NULL;
    }
    if (need_scratch && !rs->scratch_done && pf__cuda_alloc_scratch(r, rs)) return NULL;
    return rs;
}

/* Sized for the largest step pf_parallelize allows (g->max_tokens rows, g->max_batch sequences);
   allocated once. The GEMM inputs (x16) are hidden wide (qkv, MLP in, project_out), embed_dim
   (project_in, and the LM head after project_out), heads * head_dim (attention out) or mlp_width
   (MLP down); the decode partials are per local query head (the kv heads they read do not
   matter); the beam reorder's buffer holds one layer's K or V cache, as the CPU backend's. */
static int pf__cuda_alloc_scratch(pf__rank *r, pf__cuda_rank_state *rs) {
    pf__group *g = r->group;
    const pf__config *c = &g->model->config;
    const pf__cuda_group_state *gs = (const pf__cuda_group_state *)g->backend_state;
    size_t T = g->max_tokens, hidden = (size_t)c->hidden_size;
    size_t width = (size_t)r->share.heads * c->head_dim, mlp = (size_t)r->share.mlp_width;
    size_t k_max = hidden;
    if ((size_t)c->embed_dim > k_max) k_max = (size_t)c->embed_dim;
    if (width > k_max) k_max = width;
    if (mlp > k_max) k_max = mlp;
    size_t half = c->rotary_dim > 0 ? (size_t)c->rotary_dim / 2 : 0;
    size_t batch = (size_t)g->max_batch, kv_width = (size_t)r->share.kv_heads * c->head_dim;
    pf__mem_kind kind = r->allocating;
    rs->scratch_done = 1; /* once, even if it fails: the failure is the rank's error */
    r->allocating = PF__MEM_SCRATCH;
    rs->workspace = pf__rank_alloc(r, pf_cuda_workspace_bytes());
    if (rs->workspace) pf__cuda_ok(r, pf_cuda_set_workspace(rs->cu, rs->workspace, pf_cuda_workspace_bytes()));
    rs->ids = (int32_t *)pf__rank_alloc(r, T * sizeof(int32_t));
    if (g->dtype != PF__DTYPE_F32) rs->x16 = pf__rank_alloc(r, T * k_max * pf__dtype_size(g->dtype));
    if (width)
        rs->partials = (float *)pf__rank_alloc(
            r, pf_cuda_attention_scratch_floats(g->max_batch, r->share.heads, c->head_dim) * sizeof(float));
    if (half) {
        rs->inv_freq = (float *)pf__rank_alloc(r, half * sizeof(float));
        rs->inv_freq_host = (float *)malloc(half * sizeof(float));
        if (!rs->inv_freq_host) pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory");
    }
    if (g->num_ranks > 1 && !gs->use_nccl) { /* all-reduces sum hidden-wide rows, or embed_dim-wide ones */
        size_t wide = hidden > (size_t)c->embed_dim ? hidden : (size_t)c->embed_dim;
        rs->reduce_sum = (float *)pf__rank_alloc(r, T * wide * sizeof(float));
        if (gs->mixed) rs->reduce_tmp = (float *)pf__rank_alloc(r, T * wide * sizeof(float));
    }
    rs->pad = (int *)pf__rank_alloc(r, batch * sizeof(int));
    rs->pad_host = (int *)malloc(batch * sizeof(int));
    rs->cache_rows = (int *)pf__rank_alloc(r, batch * sizeof(int));
    if (g->model->sources[PF__SLOT_TOKEN_TYPE_EMBED].data)
        rs->type_ids = (int32_t *)pf__rank_alloc(r, T * sizeof(int32_t));
    rs->cache_rows_host = (int *)malloc(batch * sizeof(int));
    if (!rs->cache_rows_host) pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory");
    if (g->model->config.num_layers > g->model->config.encoder_layers && g->model->config.encoder_layers) {
        rs->cross_pad = (int *)pf__rank_alloc(r, batch * sizeof(int));
        rs->cross_pad_host = (int *)malloc(batch * sizeof(int));
        if (!rs->cross_pad_host) pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory");
    }
    if (batch > 1) {
        rs->src = (int *)pf__rank_alloc(r, 2 * batch * sizeof(int)); /* a reorder's rows: dst, then src */
        rs->src_host = (int *)malloc(2 * batch * sizeof(int));
        if (kv_width)
            rs->reorder_tmp = (float *)pf__rank_alloc(r, batch * g->cache_len * kv_width * sizeof(float));
    }
    if (!rs->pad_host || (batch > 1 && !rs->src_host)) pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory");
    r->allocating = kind;
    return r->error ? -1 : 0;
}

/* Waits for the rank's stream. With NCCL it polls, and gives up when another rank failed (its
   collectives would never finish) or NCCL reports an asynchronous error, aborting this rank's
   communicator. */
static int pf__cuda_wait(pf__rank *r, pf__cuda_rank_state *rs) {
    pf__cuda_group_state *gs = (pf__cuda_group_state *)r->group->backend_state;
    if (!gs->use_nccl) return pf__cuda_ok(r, pf_cuda_stream_sync(rs->cu)) ? 0 : -1;
    for (unsigned spins = 0;; spins++) {
        int done = 0;
        if (!pf__cuda_ok(r, pf_cuda_stream_query(rs->cu, &done))) return -1;
        if (done) return 0;
        char message[256];
        if (spins % 256 == 255 && pf_cuda_nccl_async_error(gs->comms[r->index], message, sizeof message)) {
            pf__rank_fail(r, PF_ERROR_DEVICE, "rank %d: %s", r->index, message);
            pf__cuda_break(r->group);
            pf__cuda_abort_own_comm(r);
            return -1;
        }
        if (pf__rank_failed(r)) { /* not this rank's error: the failing rank reports it */
            pf__cuda_break(r->group);
            pf__cuda_abort_own_comm(r);
            return -1;
        }
        if (spins >= 1000) sched_yield();
    }
}

/* ---- the group: device ordinals and communicators, on the caller's thread ---- */

/* Whether pf_parallelize got a device list (then an id beyond the visible GPUs is an error; without
   one, rank i goes to GPU i modulo their count). pf_parallelize keeps num_device_ids. */
static int pf__cuda_device_ids_given(const pf__group *g) { return g->model->parallel_options.num_device_ids > 0; }

static pf_result pf__cuda_group_begin(pf__group *g, char *message, size_t size) {
    int count = 0;
    const char *reason = NULL;
    if (pf_cuda_device_count(&count, &reason) != PF__CUDA_OK || count < 1)
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "no CUDA device: %s",
                          reason ? reason : "none is visible");
    int n = g->num_ranks, distinct = 1, mixed = 0;
    for (int i = 0; i < n; i++) {
        pf__rank *r = &g->ranks[i];
        if (!pf__cuda_device_ids_given(g)) r->device = i % count;
        else if (r->device < 0 || r->device >= count)
            return pf__format(message, size, PF_ERROR_INVALID_ARGUMENT,
                              "device id %d (rank %d) is not a CUDA device: %d visible (ids 0..%d)", r->device, i,
                              count, count - 1);
    }
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            if (g->ranks[i].device == g->ranks[j].device) distinct = 0;
            else mixed = 1;
        }
    pf__cuda_group_state *gs = (pf__cuda_group_state *)calloc(1, sizeof *gs);
    if (!gs) return pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    gs->use_nccl = n > 1 && distinct;
    gs->mixed = !gs->use_nccl && mixed;
    if (gs->use_nccl) {
        int *devices = (int *)calloc((size_t)n, sizeof *devices);
        gs->comms = (void **)calloc((size_t)n, sizeof *gs->comms);
        gs->comm_gone = (int *)calloc((size_t)n, sizeof *gs->comm_gone);
        pf_result res = PF_OK;
        if (!devices || !gs->comms || !gs->comm_gone) {
            res = pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
        } else {
            for (int i = 0; i < n; i++) devices[i] = g->ranks[i].device;
            int status = pf_cuda_nccl_create(n, devices, gs->comms, message, size);
            if (status) res = pf__cuda_result(status);
        }
        free(devices);
        if (res) {
            free(gs->comms);
            free(gs->comm_gone);
            free(gs);
            return res;
        }
    }
    g->backend_state = gs;
    return PF_OK;
}

/* After the rank threads stopped: free the communicators (abort the ones that may be stuck). */
static void pf__cuda_group_end(pf__group *g) {
    pf__cuda_group_state *gs = (pf__cuda_group_state *)g->backend_state;
    if (!gs) return;
    for (int i = 0; gs->comms && i < g->num_ranks; i++) {
        if (gs->comm_gone[i]) continue;
        if (PF__LOAD_FLAG(gs->broken)) pf_cuda_nccl_abort(gs->comms[i]);
        else pf_cuda_nccl_destroy(gs->comms[i]);
    }
    free(gs->comms);
    free(gs->comm_gone);
    free(gs);
    g->backend_state = NULL;
}

/* ---- the rank: its thread's device, stream and cuBLAS handle ---- */

static int pf__cuda_rank_begin(pf__rank *r) {
    pf__cuda_rank_state *rs = (pf__cuda_rank_state *)calloc(1, sizeof *rs);
    if (!rs) return -1;
    r->backend_state = rs;
    /* cudaSetDevice is its first CUDA call. A failure is kept and reported, with its message, by
       the rank's first operation: pf__rank_main would replace it with a generic one. */
    int status = pf_cuda_rank_create(r->device, &rs->cu, rs->init_message, sizeof rs->init_message);
    if (status) rs->init_error = pf__cuda_result(status);
    return 0;
}

static void pf__cuda_rank_end(pf__rank *r) {
    pf__cuda_rank_state *rs = (pf__cuda_rank_state *)r->backend_state;
    if (!rs) return;
    if (rs->cu) {
        if (pf__cuda_broken(r->group)) pf__cuda_abort_own_comm(r); /* cuBLAS's destroy waits for the device */
        pf_cuda_rank_destroy(rs->cu);
    }
    free(rs->inv_freq_host);
    free(rs->pad_host);
    free(rs->cross_pad_host);
    free(rs->cache_rows_host);
    free(rs->src_host);
    free(rs);
    r->backend_state = NULL;
}

/* ---- operations, on the rank's thread ---- */

static void *pf__cuda_alloc(pf__rank *r, size_t bytes) {
    /* No scratch here: pf__rank_alloc is not reentrant. */
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 0);
    void *ptr = NULL;
    if (!rs || !pf__cuda_ok(r, pf_cuda_malloc(rs->cu, &ptr, bytes))) return NULL;
    return ptr;
}

/* Runs when the rank stops (pf__rank_free_all), whatever happened before. */
static void pf__cuda_free(pf__rank *r, void *ptr) {
    pf__cuda_rank_state *rs = (pf__cuda_rank_state *)r->backend_state;
    if (!rs || !rs->cu || !ptr) return;
    if (pf__cuda_broken(r->group)) pf__cuda_abort_own_comm(r); /* cudaFree waits for the device */
    (void)pf_cuda_free(rs->cu, ptr); /* nobody to tell: the rank is going away */
}

static void pf__cuda_upload(pf__rank *r, void *dst, const void *host, size_t bytes) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1); /* the first upload allocates the scratch */
    if (rs) pf__cuda_ok(r, pf_cuda_upload(rs->cu, dst, host, bytes));
}

static void pf__cuda_download(pf__rank *r, void *host, const void *src, size_t bytes) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 0);
    if (!rs || pf__cuda_wait(r, rs)) return;
    pf__cuda_ok(r, pf_cuda_download(rs->cu, host, src, bytes));
}

static void pf__cuda_download_rows(pf__rank *r, void *host, size_t host_stride, const void *src, size_t src_stride,
                                   size_t row_bytes, size_t rows) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 0);
    if (!rs || pf__cuda_wait(r, rs)) return;
    pf__cuda_ok(r, pf_cuda_download_rows(rs->cu, host, host_stride, src, src_stride, row_bytes, rows));
}

static void pf__cuda_copy(pf__rank *r, void *dst, const void *src, size_t bytes) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 0);
    if (rs) pf__cuda_ok(r, pf_cuda_copy_async(rs->cu, dst, src, bytes));
}

/* Puts n ints of a host array (the caller's, changing from step to step) on the device at `device`
   through the rank's own copy `host` ([max_batch], malloc'd): queued without a wait, and only when
   they differ from what was queued last (*count entries). The runtime has read pageable memory by
   the time pf_cuda_upload_async returns; and `host` is only rewritten by a later job, after the
   device has run this one's copy (rank 0 waited for its logits, which need every rank's
   all-reduces, queued after the copy). Returns 0, or -1 after recording the failure. */
static int pf__cuda_stage_ints(pf__rank *r, pf__cuda_rank_state *rs, int *device, int *host, int *count,
                               const int *values, int n) {
    if (n < 0 || n > 2 * r->group->max_batch || !device || !host) { /* a reorder stages 2 per row */
        pf__rank_fail(r, PF_ERROR_DEVICE, "%d rows for a group of max_batch %d", n, r->group->max_batch);
        pf__cuda_break(r->group);
        return -1;
    }
    if (*count == n && !memcmp(host, values, (size_t)n * sizeof(int))) return 0;
    memcpy(host, values, (size_t)n * sizeof(int));
    *count = 0;
    if (!pf__cuda_ok(r, pf_cuda_upload_async(rs->cu, device, host, (size_t)n * sizeof(int)))) return -1;
    *count = n;
    return 0;
}

/* The step's left pads on the device for add_positions, rotary and attention: NULL without pads
   (none given, or all 0: the unpadded kernels' path) or after a failure (recorded on the rank:
   check r->error). */
static const int *pf__cuda_pads(pf__rank *r, pf__cuda_rank_state *rs, const pf__step *s) {
    if (!s->pad) return NULL;
    int any = 0;
    for (int b = 0; b < s->batch; b++) {
        if (s->pad[b] < 0) {
            pf__rank_fail(r, PF_ERROR_DEVICE, "sequence %d has %d left pads", b, s->pad[b]);
            pf__cuda_break(r->group);
            return NULL;
        }
        any |= s->pad[b] > 0;
    }
    if (!any) return NULL;
    if (s->pad == s->cross_pad && rs->cross_pad) { /* the sources' pads, kept apart from the decoder's */
        if (pf__cuda_stage_ints(r, rs, rs->cross_pad, rs->cross_pad_host, &rs->cross_pad_count, s->pad, s->batch)) return NULL;
        return rs->cross_pad;
    }
    if (pf__cuda_stage_ints(r, rs, rs->pad, rs->pad_host, &rs->pad_count, s->pad, s->batch)) return NULL;
    return rs->pad;
}

/* The step's cache rows on the device (NULL without a mapping, or after a failure: check r->error). */
static const int *pf__cuda_cache_rows(pf__rank *r, pf__cuda_rank_state *rs, const pf__step *s) {
    if (!s->cache_rows) return NULL;
    for (int b = 0; b < s->batch; b++)
        if (s->cache_rows[b] < 0 || s->cache_rows[b] >= r->group->max_batch) {
            pf__rank_fail(r, PF_ERROR_DEVICE, "sequence %d in cache row %d of %d", b, s->cache_rows[b], r->group->max_batch);
            pf__cuda_break(r->group);
            return NULL;
        }
    if (pf__cuda_stage_ints(r, rs, rs->cache_rows, rs->cache_rows_host, &rs->cache_rows_count, s->cache_rows, s->batch))
        return NULL;
    return rs->cache_rows;
}

static void pf__cuda_embed(pf__rank *r, float *out, const pf__weight *tokens, const pf__step *s, float scale,
                           int first) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs) return;
    int staged = s->ids && s->ids == rs->type_ids_from; /* the segment ids prepare uploaded */
    pf__cuda_ok(r, pf_cuda_embed(rs->cu, out, tokens->data, pf__cuda_dtype(tokens->dtype), staged ? NULL : s->ids,
                                 staged ? rs->type_ids : rs->ids, (size_t)s->batch * s->seq_len, tokens->cols, scale,
                                 first, tokens->rows));
}

/* Row offset + position of the table for each token, position = past + t - pad[b] (0 at least). */
static void pf__cuda_add_positions(pf__rank *r, float *x, const pf__weight *table, const pf__step *s, int offset) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs || !s->batch || !s->seq_len) return;
    const int *pad = pf__cuda_pads(r, rs, s);
    if (r->error) return;
    long long least = -1, most = -1; /* the positions read: least..most */
    for (int b = 0; b < s->batch; b++) {
        long long p = s->pad ? s->pad[b] : 0, lo = s->past - p, hi = (long long)s->past + s->seq_len - 1 - p;
        lo = lo > 0 ? lo : 0;
        hi = hi > 0 ? hi : 0;
        if (least < 0 || lo < least) least = lo;
        if (hi > most) most = hi;
    }
    long long first = offset + least, last = offset + most;
    if (first < 0 || (unsigned long long)last >= table->rows) {
        pf__rank_fail(r, PF_ERROR_INVALID_ARGUMENT, "positions %lld..%lld are beyond the position table's %zu rows",
                      first, last, table->rows);
        pf__cuda_break(r->group); /* NCCL peers must not wait for this rank */
        return;
    }
    pf__cuda_ok(r, pf_cuda_add_positions(rs->cu, x, table->data, pf__cuda_dtype(table->dtype), pad, s->batch,
                                         s->seq_len, s->past, (size_t)offset, table->cols));
}

static void pf__cuda_norm(pf__rank *r, float *out, const float *x, const pf__weight *weight, const pf__weight *bias,
                          size_t rows, size_t n, float eps, pf__norm kind) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs) return;
    pf__cuda_ok(r, pf_cuda_norm(rs->cu, out, x, weight ? weight->data : NULL,
                                pf__cuda_dtype(weight ? weight->dtype : PF__DTYPE_F32), bias ? bias->data : NULL,
                                pf__cuda_dtype(bias ? bias->dtype : PF__DTYPE_F32), rows, n, eps,
                                kind == PF__NORM_RMS));
}

static void pf__cuda_matmul(pf__rank *r, float *out, const float *x, const pf__weight *w, const pf__weight *bias,
                            size_t rows) {
#ifdef PF_TESTING
    if (r->index == pf_testing_fail_rank && --pf_testing_fail_countdown == 0) {
        pf__rank_fail(r, PF_ERROR_DEVICE, "injected failure (test)");
        pf__cuda_break(r->group);
        return;
    }
#endif
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs) return;
    pf__cuda_ok(r, pf_cuda_matmul(rs->cu, out, x, w->data, pf__cuda_dtype(w->dtype), bias ? bias->data : NULL,
                                  pf__cuda_dtype(bias ? bias->dtype : PF__DTYPE_F32), rows, w->rows, w->cols, rs->x16));
}

static int pf__cuda_act(pf__activation act) {
    switch (act) {
    case PF__ACT_GELU_TANH: return PF__CUDA_GELU_TANH;
    case PF__ACT_GELU_ERF: return PF__CUDA_GELU_ERF;
    case PF__ACT_RELU: return PF__CUDA_RELU;
    case PF__ACT_SILU: return PF__CUDA_SILU;
    case PF__ACT_TANH: return PF__CUDA_TANH;
    }
    return PF__CUDA_GELU_TANH;
}

static void pf__cuda_activation(pf__rank *r, float *x, size_t count, pf__activation act) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (rs) pf__cuda_ok(r, pf_cuda_activation(rs->cu, x, count, pf__cuda_act(act)));
}

static void pf__cuda_gated_activation(pf__rank *r, float *out, const float *in, size_t rows, size_t width,
                                      pf__activation act) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (rs) pf__cuda_ok(r, pf_cuda_gated_activation(rs->cu, out, in, rows, width, pf__cuda_act(act)));
}

static void pf__cuda_add_residual(pf__rank *r, float *x, const float *y, const pf__weight *bias, size_t rows,
                                  size_t n) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs) return;
    pf__cuda_ok(r, pf_cuda_add_residual(rs->cu, x, y, bias ? bias->data : NULL,
                                        pf__cuda_dtype(bias ? bias->dtype : PF__DTYPE_F32), rows, n));
}

static int pf__cuda_stage_inv_freq(pf__rank *r, pf__cuda_rank_state *rs, const pf__step *s, size_t half) {
    if (rs->inv_freq_loaded && !memcmp(rs->inv_freq_host, s->inv_freq, half * sizeof(float))) return 0;
    memcpy(rs->inv_freq_host, s->inv_freq, half * sizeof(float));
    rs->inv_freq_loaded = 0;
    if (!pf__cuda_ok(r, pf_cuda_upload_async(rs->cu, rs->inv_freq, rs->inv_freq_host, half * sizeof(float)))) return -1;
    rs->inv_freq_loaded = 1;
    return 0;
}

/* Stages what the ops will read before the first collective (pf__backend.prepare): the step's
   pads, the sources' pads and the rotary frequencies; the ops then find them staged. */
static void pf__cuda_prepare(pf__rank *r, const pf__step *s) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs) return;
    rs->type_ids_from = NULL; /* segment ids: every rank embeds them, heads or not */
    size_t tokens = (size_t)s->batch * s->seq_len;
    if (s->type_ids && rs->type_ids && tokens <= r->group->max_tokens &&
        pf__cuda_ok(r, pf_cuda_upload_async(rs->cu, rs->type_ids, s->type_ids, tokens * sizeof(int32_t))))
        rs->type_ids_from = s->type_ids;
    if (!r->share.heads) return; /* without heads, no attention or rotary reads the rest */
    pf__cuda_pads(r, rs, s);
    pf__cuda_cache_rows(r, rs, s);
    if (s->cross_pad) {
        pf__step keys = *s;
        keys.pad = s->cross_pad;
        pf__cuda_pads(r, rs, &keys);
    }
    size_t half = (size_t)r->group->model->config.rotary_dim / 2;
    if (half && s->inv_freq && rs->inv_freq) pf__cuda_stage_inv_freq(r, rs, s, half);
}

/* The step's frequencies (a host array the caller may rewrite between steps) go to the device
   through inv_freq_host, queued without a wait whenever they differ from what was queued last:
   once per step at most, and once per pf_parallelize without dynamic scaling. The copy is from
   malloc'd (pageable) memory, which the runtime has read when pf_cuda_upload_async returns. */
static void pf__cuda_rotary(pf__rank *r, float *qkv, const pf__step *s, const pf__attn_shape *a, int pairs) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs) return;
    size_t half = a->rotary_dim > 0 ? (size_t)a->rotary_dim / 2 : 0;
    if (!half || !s->batch || !s->seq_len) return;
    if (!s->inv_freq || !rs->inv_freq || (size_t)a->rotary_dim != (size_t)r->group->model->config.rotary_dim) {
        pf__rank_fail(r, PF_ERROR_DEVICE, "rotary positions without their frequencies (rotary_dim %d)", a->rotary_dim);
        pf__cuda_break(r->group);
        return;
    }
    if (pf__cuda_stage_inv_freq(r, rs, s, half)) return;
    const int *pad = pf__cuda_pads(r, rs, s);
    if (r->error) return;
    pf__cuda_ok(r, pf_cuda_rotary(rs->cu, qkv, rs->inv_freq, pad, s->batch, s->seq_len, s->past, a->heads,
                                  a->kv_heads, a->head_dim, a->rotary_dim, pairs));
}

static void pf__cuda_kv_append(pf__rank *r, void *k_cache, void *v_cache, const float *qkv, const pf__step *s,
                               const pf__attn_shape *a) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs || !a->heads) return;
    const int *rows = pf__cuda_cache_rows(r, rs, s);
    if (r->error) return;
    pf__cuda_ok(r, pf_cuda_kv_append(rs->cu, k_cache, v_cache, pf__cuda_dtype(a->cache_dtype), qkv, rows, s->batch,
                                     s->seq_len, s->past, a->heads, a->kv_heads, a->head_dim, a->cache_len));
}

static void pf__cuda_attend(pf__rank *r, float *out, const float *qkv, const void *k_cache, const void *v_cache,
                            const pf__step *s, const pf__attn_shape *a) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs) return;
    const int *pad = a->heads > 0 ? pf__cuda_pads(r, rs, s) : NULL;
    const int *rows = a->heads > 0 && a->mask != PF__MASK_CROSS ? pf__cuda_cache_rows(r, rs, s) : NULL;
    if (r->error) return;
    pf__cuda_ok(r, pf_cuda_attend(rs->cu, out, qkv, k_cache, v_cache, pf__cuda_dtype(a->cache_dtype), rs->partials,
                                     a->alibi, pad, rows, s->batch,
                                     s->seq_len, s->past, a->heads, a->kv_heads, a->head_dim, a->head_begin,
                                     a->kv_begin, a->kv_group, a->cache_len, a->window, a->mask, a->scale,
                                     a->rel_bias, a->rel_rows, a->rel_buckets, a->rel_max_distance));
}

/* Beam search, per layer for the K and V caches: row i of cache [rows][row_bytes] becomes old row
   src[i] (host), for the first used_bytes of each row. Nothing moves when every row keeps its
   own; otherwise src goes to the device (pf__cuda_stage_ints: once per reorder job, as every
   layer has the same) and kernels.cu gathers into reorder_tmp and copies back. */
static void pf__cuda_reorder_rows(pf__rank *r, void *cache, const int *dst, const int *src, int count,
                                  size_t row_bytes, size_t used_bytes) {
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs || count <= 0 || !used_bytes) return;
    const pf__group *g = r->group;
    for (int k = 0; k < count; k++) {
        if (src[k] < 0 || src[k] >= g->max_batch || dst[k] < 0 || dst[k] >= g->max_batch) {
            pf__rank_fail(r, PF_ERROR_DEVICE, "beam reorder: row %d from row %d of %d", dst[k], src[k], g->max_batch);
            pf__cuda_break(r->group);
            return;
        }
    }
    size_t room = (size_t)g->max_batch * g->cache_len * (size_t)r->share.kv_heads * g->model->config.head_dim *
                  sizeof(float); /* reorder_tmp's bytes: one fp32 layer */
    if (count > g->max_batch || used_bytes > row_bytes || (size_t)count * used_bytes > room || !rs->reorder_tmp) {
        pf__rank_fail(r, PF_ERROR_DEVICE, "beam reorder of %d rows of %zu bytes does not fit its buffer", count,
                      used_bytes);
        pf__cuda_break(r->group);
        return;
    }
    int *moves = (int *)malloc(2 * (size_t)count * sizeof(int)); /* dst then src, staged as one array */
    if (!moves) {
        pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory");
        pf__cuda_break(r->group);
        return;
    }
    memcpy(moves, dst, (size_t)count * sizeof(int));
    memcpy(moves + count, src, (size_t)count * sizeof(int));
    int staged = pf__cuda_stage_ints(r, rs, rs->src, rs->src_host, &rs->src_count, moves, 2 * count);
    free(moves);
    if (staged) return;
    pf__cuda_ok(r, pf_cuda_reorder_rows(rs->cu, cache, rs->reorder_tmp, rs->src, rs->src + count, count, row_bytes,
                                        used_bytes));
}

/* NCCL between distinct GPUs. Otherwise every rank publishes its buffer, and after a barrier
   sums all of them in rank order into its own scratch (bit-identical on every rank); a second
   barrier keeps the buffers alive until all have read them. Streams are synchronised before
   each barrier: the barrier orders host threads, not GPU work. */
static void pf__cuda_all_reduce(pf__rank *r, float *x, size_t count) {
    pf__group *g = r->group;
    if (g->num_ranks == 1) return;
    pf__cuda_rank_state *rs = pf__cuda_begin(r, 1);
    if (!rs) return;
    pf__cuda_group_state *gs = (pf__cuda_group_state *)g->backend_state;
    if (gs->use_nccl) {
        if (pf__rank_failed(r)) return; /* a peer failed: it will not join */
        pf__cuda_ok(r, pf_cuda_nccl_all_reduce(rs->cu, gs->comms[r->index], x, count));
        return;
    }
    g->reduce_in[r->index] = x;
    if (!pf__cuda_ok(r, pf_cuda_stream_sync(rs->cu)) || pf__barrier(g)) return;
    for (int k = 0; k < g->num_ranks; k++) {
        const float *in = g->reduce_in[k];
        int device = g->ranks[k].device;
        if (device != r->device) {
            if (!pf__cuda_ok(r, pf_cuda_copy_peer_async(rs->cu, rs->reduce_tmp, in, device, count * sizeof(float))))
                return;
            in = rs->reduce_tmp;
        }
        if (!pf__cuda_ok(r, pf_cuda_sum(rs->cu, rs->reduce_sum, in, count, k == 0))) return;
    }
    if (!pf__cuda_ok(r, pf_cuda_stream_sync(rs->cu)) || pf__barrier(g)) return;
    pf__cuda_ok(r, pf_cuda_copy_async(rs->cu, x, rs->reduce_sum, count * sizeof(float)));
}

static int pf__cuda_device_memory(int device, size_t *used, size_t *total) {
    size_t free_bytes = 0;
    if (pf_cuda_device_memory(device, &free_bytes, total) != PF__CUDA_OK || free_bytes > *total) return -1;
    *used = *total - free_bytes;
    return 0;
}

static const pf__backend pf__cuda_table = {
    .name = "cuda",
    .host_memory = 0,
    .group_begin = pf__cuda_group_begin,
    .group_end = pf__cuda_group_end,
    .rank_begin = pf__cuda_rank_begin,
    .rank_end = pf__cuda_rank_end,
    .alloc = pf__cuda_alloc,
    .free = pf__cuda_free,
    .upload = pf__cuda_upload,
    .download = pf__cuda_download,
    .download_rows = pf__cuda_download_rows,
    .copy = pf__cuda_copy,
    .embed = pf__cuda_embed,
    .add_positions = pf__cuda_add_positions,
    .norm = pf__cuda_norm,
    .matmul = pf__cuda_matmul,
    .activation = pf__cuda_activation,
    .gated_activation = pf__cuda_gated_activation,
    .add_residual = pf__cuda_add_residual,
    .rotary = pf__cuda_rotary,
    .kv_append = pf__cuda_kv_append,
    .attend = pf__cuda_attend,
    .all_reduce = pf__cuda_all_reduce,
    .reorder_rows = pf__cuda_reorder_rows,
    .device_memory = pf__cuda_device_memory,
    .prepare = pf__cuda_prepare,
    .cache_in_weight_dtype = 1,
};

/* A device is present and the runtime works; quiet (0) when the driver or the device is missing. */
static int pf__cuda_usable(void) {
    int count = 0;
    return pf_cuda_device_count(&count, NULL) == PF__CUDA_OK && count > 0;
}

static const char *pf__cuda_unavailable_reason(void) {
    int count = 0;
    const char *reason = NULL;
    if (pf_cuda_device_count(&count, &reason) != PF__CUDA_OK) return reason ? reason : "the CUDA runtime failed";
    return count > 0 ? "a CUDA device is visible" : "no CUDA device is visible";
}

static const pf__backend *pf__cuda_backend(void) { return &pf__cuda_table; }
#else
static int pf__cuda_usable(void) { return 0; }
static const char *pf__cuda_unavailable_reason(void) { return "this build has no CUDA backend (build with nvcc)"; }
static const pf__backend *pf__cuda_backend(void) { return NULL; }
#endif

/* =============================================================================================== */
/* parallel groups                                                                                 */
/* =============================================================================================== */

static void pf__log(const pf_model *m, pf_log_level level, const char *fmt, ...) {
    if (!m->load_options.log || level > m->load_options.log_level) return;
    char line[256];
    va_list args;
    va_start(args, fmt);
    vsnprintf(line, sizeof line, fmt, args);
    va_end(args);
    m->load_options.log(m->load_options.log_user, level, line);
}

static void pf__log_memory_table(const pf_model *m, pf_log_level level) {
    const pf__group *g = m->group;
    pf__log(m, level, "rank  device  heads  mlp    weights(B)   kv-cache(B)  scratch(B)   total(B)     device used/total(B)");
    for (int i = 0; i < g->num_ranks; i++) {
        const pf__rank *r = &g->ranks[i];
        pf_memory_info info;
        pf_get_memory_info(m, i, &info);
        pf__log(m, level, "%-5d %-7s %-6d %-6d %-12zu %-12zu %-12zu %-12zu %zu/%zu", i, r->backend->name, r->share.heads,
                r->share.mlp_width, info.weights, info.kv_cache, info.scratch, info.allocated, info.device_used,
                info.device_total);
    }
}

/* The name of the first operation a backend lacks, or NULL: a table that grew an entry its
   backend does not fill yet is refused, not called through NULL. */
static const char *pf__backend_missing(const pf__backend *b) {
#define PF__NEED(op) if (!b->op) return #op;
    PF__NEED(rank_begin) PF__NEED(rank_end) PF__NEED(alloc) PF__NEED(free) PF__NEED(upload) PF__NEED(download)
    PF__NEED(download_rows)
    PF__NEED(copy) PF__NEED(embed) PF__NEED(add_positions) PF__NEED(norm) PF__NEED(matmul) PF__NEED(activation)
    PF__NEED(gated_activation) PF__NEED(add_residual) PF__NEED(rotary) PF__NEED(kv_append) PF__NEED(attend) PF__NEED(all_reduce)
    PF__NEED(reorder_rows) PF__NEED(device_memory)
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
    /* Scratch for the tokens of one step: a whole batch of full sequences for an encoder (its
       attention needs every position at once), a chunk of positions for a decoder (longer prompts
       run in chunks, pf__forward_in_chunks), never less than one token per sequence. */
    g->max_tokens = (size_t)g->max_batch * g->cache_len;
    size_t chunk = o->prefill_chunk > 0 ? (size_t)o->prefill_chunk : 512;
    if (chunk < (size_t)g->max_batch) chunk = (size_t)g->max_batch;
    if (pf__archs[c->arch].kind == PF__KIND_DECODER && g->max_tokens > chunk) g->max_tokens = chunk;
    g->logit_rows = g->max_tokens < 64 ? g->max_tokens : (g->max_batch > 64 ? (size_t)g->max_batch : 64);
    g->progress = o->progress ? o->progress : m->load_options.progress;
    g->progress_user = o->progress ? o->progress_user : m->load_options.progress_user;
    for (size_t i = 0; i < pf__num_slots(c); i++) { /* split tensors read once, replicated ones by every rank */
        const pf__source *src = &m->sources[i];
        if (src->data)
            g->progress_total += (uint64_t)src->rows * src->cols * pf__dtype_size(src->dtype) *
                                 (src->split == PF__SPLIT_NONE ? (uint64_t)num_ranks : 1);
    }
    g->ranks = (pf__rank *)calloc((size_t)num_ranks, sizeof *g->ranks);
    g->reduce_in = (float **)calloc((size_t)num_ranks, sizeof *g->reduce_in);
#ifdef PF_TESTING
    g->collectives = (struct pf__collective *)calloc((size_t)num_ranks, sizeof *g->collectives);
    if (!g->collectives) {
        pf__group_destroy(g);
        return pf__format(pf__error_buffer(m), PF__MESSAGE_SIZE, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    }
#endif
    size_t logit_floats = (size_t)g->max_batch * c->vocab_size;
    float *logits = (float *)realloc(m->logits, logit_floats * sizeof(float));
    if (logits) { /* zeros rather than garbage for a row read before a forward writes it */
        m->logits = logits;
        memset(logits, 0, logit_floats * sizeof(float));
    }
    g->zero_ids = (int32_t *)calloc((size_t)g->max_batch, sizeof(int32_t));
    if (!g->ranks || !g->reduce_in || !logits || !g->zero_ids) {
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
    if (g->progress) g->progress(g->progress_user, g->progress_total, g->progress_total);
    pf__log_memory_table(m, o->verbose ? PF_LOG_INFO : PF_LOG_DEBUG);
    if (num_ranks > c->num_kv_heads)
        pf__log(m, PF_LOG_INFO, "%d ranks outnumber the %d key/value heads: ranks share them, each holding a copy",
                num_ranks, c->num_kv_heads);
    if (c->num_heads % num_ranks)
        pf__log(m, PF_LOG_INFO, "%d heads do not divide by %d ranks: the ranks hold different head counts", c->num_heads,
                num_ranks);
    return PF_OK;
}

/* =============================================================================================== */
/* public API                                                                                      */
/* =============================================================================================== */

/* Features as compiled, as flags and as words; PF__AVX2 and PF__AVX512 come from the CPU
   backend's section (compiled in; the processor picks at run time). */
#ifdef PF_CUDA
#define PF__HAS_CUDA 1
#define PF__CUDA_WORD " +cuda"
#else
#define PF__HAS_CUDA 0
#define PF__CUDA_WORD " -cuda"
#endif
#ifdef PF__AVX2
#define PF__HAS_AVX2 1
#define PF__AVX2_WORD " +avx2"
#else
#define PF__HAS_AVX2 0
#define PF__AVX2_WORD " -avx2"
#endif
#ifdef PF__AVX512
#define PF__HAS_AVX512 1
#define PF__AVX512_WORD " +avx512"
#else
#define PF__HAS_AVX512 0
#define PF__AVX512_WORD " -avx512"
#endif

pf_build_info pf_get_build_info(void) {
    pf_build_info info;
    memset(&info, 0, sizeof info);
    info.version_major = PF_VERSION_MAJOR;
    info.version_minor = PF_VERSION_MINOR;
    info.version_patch = PF_VERSION_PATCH;
    info.cuda = PF__HAS_CUDA;
    info.avx2 = PF__HAS_AVX2;
    info.avx512 = PF__HAS_AVX512;
    return info;
}

const char *pf_version_string(void) {
    return PF_VERSION_STRING PF__CUDA_WORD PF__AVX2_WORD PF__AVX512_WORD;
}

pf_load_options pf_load_options_init(void) {
    pf_load_options o;
    memset(&o, 0, sizeof o);
    o.log_level = PF_LOG_INFO;
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
    o.forced_bos_token_id = o.forced_eos_token_id = o.decoder_start_token_id = -1;
    return o;
}

pf_generate_options pf_model_generate_options(const pf_model *m) {
    return m && m->loaded ? m->generate_defaults : pf_generate_options_init();
}

const char *pf_error_message(const pf_model *m) {
    if (!m) return "no model";
    return pf__error_model == (const void *)m ? pf__error_text : "";
}

#define PF__FAIL(m, code, ...) pf__format(pf__error_buffer(m), PF__MESSAGE_SIZE, code, __VA_ARGS__)

/* Takes the model's request lock. The thread that holds it already is inside a request on this
   model (calling from a stream callback): refused, since it would wait for itself forever. */
static pf_result pf__request_lock(pf_model *m, const char *call) {
    __atomic_add_fetch(&m->exclusive_waiting, 1, __ATOMIC_ACQ_REL); /* the batcher stops admitting */
    int e = pthread_mutex_lock(&m->request_lock);
    __atomic_sub_fetch(&m->exclusive_waiting, 1, __ATOMIC_ACQ_REL);
    if (!e) pf__lock_holder = m;
    if (e == EDEADLK)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT,
                        "%s was called from inside a request on the same model (a stream callback?); it would wait "
                        "for that request forever", call);
    if (e) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "%s: cannot take the model's request lock: %s", call, strerror(e));
    return PF_OK;
}

static void pf__request_unlock(pf_model *m) {
    pf__lock_holder = NULL;
    pthread_mutex_unlock(&m->request_lock);
}

/* Every tensor of the checkpoint must be consumed by a slot or be a known buffer (a causal mask,
   rotary frequencies): a tensor we do not compute with is a model we would compute wrongly. */
static pf_result pf__account_tensors(pf_model *m, const char *prefix) {
    const pf__config *c = &m->config;
    for (size_t i = 0; i < PF__COUNT(pf__arch_buffers); i++) {
        if (pf__arch_buffers[i].arch != pf__tensor_rows(c->arch)) continue;
        const char *pattern = pf__arch_buffers[i].pattern;
        int layers = strstr(pattern, "%d") ? c->num_layers : 1;
        for (int l = 0; l < layers; l++) {
            char bare[256], name[300];
            snprintf(bare, sizeof bare, pattern, l);
            snprintf(name, sizeof name, "%s%s", prefix, bare);
            if (!pf__st_take(&m->st, name)) pf__st_take(&m->st, bare);
        }
    }
    for (size_t i = 0; i < m->st.num_tensors; i++)
        if (!m->st.tensors[i].used)
            return PF__FAIL(m, PF_ERROR_UNSUPPORTED,
                            "%s: tensor '%s' is not used by model_type \"%s\" as its config.json describes it (a "
                            "checkpoint with weights we would not compute with is refused)",
                            m->st.tensors[i].file->path, m->st.tensors[i].name, c->model_type);
    return PF_OK;
}

/* For a PF__IF_ need: 1 if the config wants the tensor, 0 if it rules it out, with *why the
   config's say in words; -1 for the needs that do not follow the config. */
static int pf__need_by_config(const pf__config *c, pf__need need, const char **why) {
    switch (need) {
    case PF__IF_ATTENTION_BIAS:
        *why = c->attention_bias ? "attention_bias is true" : "attention_bias is false";
        return c->attention_bias != 0;
    case PF__IF_MLP_BIAS:
        *why = c->mlp_bias ? "mlp_bias is true" : "mlp_bias is false";
        return c->mlp_bias != 0;
    case PF__IF_FINAL_NORM:
        *why = !c->pre_norm ? "the blocks are post-norm (do_layer_norm_before false), without a final norm"
               : c->remove_final_norm ? "_remove_final_layer_norm is true" : "the blocks are pre-norm, with a final norm";
        return c->pre_norm && !c->remove_final_norm;
    case PF__IF_GATED:
        *why = c->gated_mlp ? "the MLP is gated" : "the MLP is not gated";
        return c->gated_mlp;
    case PF__IF_PROJECTION:
        *why = c->embed_dim != c->hidden_size ? "the embedding width differs from hidden_size"
                                              : "the embedding width equals hidden_size";
        return c->embed_dim != c->hidden_size;
    case PF__IF_EMBED_NORM:
        *why = c->embed_norm ? "the family norms its embeddings" : "the family does not norm its embeddings";
        return c->embed_norm;
    case PF__POSITION_TABLE:
        *why = "the positions are learned";
        return pf__archs[c->arch].positions == PF__POS_LEARNED ? 1 : -2;
    case PF__IF_DISTILLATION:
        *why = c->distillation ? "the family has a distillation token" : "the family has no distillation token";
        return c->distillation;
    case PF__IF_DECODER:
        *why = c->num_layers > c->encoder_layers ? "architectures names an encoder-decoder"
                                                 : "architectures names the encoder alone";
        return c->num_layers > c->encoder_layers;
    default: return -1;
    }
}

/* The slots of each output head: those it needs, and those that belong to some head. A head's
   tensors in a checkpoint whose "architectures" names another head would go unused: refused. */
static const struct pf__head_slots {
    pf_head head;
    pf__slot needs[3];
    int num_needs;
} pf__head_slots[] = {
    {PF_HEAD_MASKED_LM, {PF__SLOT_HEAD_TRANSFORM_WEIGHT, PF__SLOT_HEAD_NORM_WEIGHT}, 2},
    {PF_HEAD_SEQUENCE_CLASSIFICATION, {PF__SLOT_POOLER_WEIGHT, PF__SLOT_CLASSIFIER_WEIGHT}, 2},
    {PF_HEAD_TOKEN_CLASSIFICATION, {PF__SLOT_CLASSIFIER_WEIGHT}, 1},
    {PF_HEAD_QUESTION_ANSWERING, {PF__SLOT_SPAN_WEIGHT}, 1},
    {PF_HEAD_IMAGE_CLASSIFICATION, {PF__SLOT_CLASSIFIER_WEIGHT}, 1},
};
static const pf__slot pf__head_only_slots[] = {
    PF__SLOT_HEAD_TRANSFORM_WEIGHT, PF__SLOT_HEAD_TRANSFORM_BIAS, PF__SLOT_HEAD_NORM_WEIGHT, PF__SLOT_HEAD_NORM_BIAS,
    PF__SLOT_CLASSIFIER_WEIGHT, PF__SLOT_CLASSIFIER_BIAS, PF__SLOT_SPAN_WEIGHT, PF__SLOT_SPAN_BIAS,
    PF__SLOT_DIST_CLASSIFIER_WEIGHT, PF__SLOT_DIST_CLASSIFIER_BIAS,
};

static const char *pf__head_name(pf_head head) {
    switch (head) {
    case PF_HEAD_NONE: return "the bare encoder";
    case PF_HEAD_CAUSAL_LM: return "a causal LM";
    case PF_HEAD_MASKED_LM: return "a masked LM";
    case PF_HEAD_SEQUENCE_CLASSIFICATION: return "sequence classification";
    case PF_HEAD_TOKEN_CLASSIFICATION: return "token classification";
    case PF_HEAD_QUESTION_ANSWERING: return "question answering";
    case PF_HEAD_IMAGE_CLASSIFICATION: return "image classification";
    }
    return "?";
}

static pf_result pf__check_head_slots(pf_model *m) {
    const pf__config *c = &m->config;
    const struct pf__head_slots *mine = NULL;
    for (size_t i = 0; i < PF__COUNT(pf__head_slots); i++)
        if (pf__head_slots[i].head == c->head) mine = &pf__head_slots[i];
    for (int i = 0; mine && i < mine->num_needs; i++) {
        const pf__arch_tensor *t = pf__arch_tensor_for(c->arch, mine->needs[i]);
        if (!m->sources[mine->needs[i]].data)
            return PF__FAIL(m, PF_ERROR_FORMAT, "%s: config.json's architectures names %s, but tensor '%s' is missing",
                            m->dir, pf__head_name(c->head), t ? t->pattern : "?");
    }
    if (c->teacher_head && !m->sources[PF__SLOT_DIST_CLASSIFIER_WEIGHT].data)
        return PF__FAIL(m, PF_ERROR_FORMAT, "%s: config.json's architectures names a head with teacher, but the "
                        "distillation classifier is missing", m->dir);
    for (size_t i = 0; i < PF__COUNT(pf__head_only_slots); i++) {
        pf__slot slot = pf__head_only_slots[i];
        int used = 0;
        for (int j = 0; mine && j < mine->num_needs; j++)
            used |= mine->needs[j] == slot || mine->needs[j] + 1 == slot; /* a weight's bias follows it */
        if (slot == PF__SLOT_DIST_CLASSIFIER_WEIGHT || slot == PF__SLOT_DIST_CLASSIFIER_BIAS) used = c->teacher_head;
        if (m->sources[slot].data && !used)
            return PF__FAIL(m, PF_ERROR_FORMAT, "%s: tensor '%s' belongs to a head that config.json's architectures (%s) "
                            "does not use", m->dir, pf__arch_tensor_for(c->arch, slot)->pattern, pf__head_name(c->head));
    }
    return PF_OK;
}

/* The tensor of one slot and layer: the first of the slot's rows (alternative spellings, in
   table order) present under the prefix, or bare (lm_head.weight sits outside it). *row is the
   row that matched (the first row when none did) and name its full name; a second spelling
   present too is *other. */
static const pf__st_tensor *pf__take_slot(pf_model *m, const char *prefix, pf__slot slot, int layer,
                                          const pf__arch_tensor **row, char *name, size_t name_size,
                                          const pf__st_tensor **other) {
    const pf__st_tensor *found = NULL;
    /* an encoder-decoder's encoder blocks come first, each tower counting its own from 0 */
    int encoder = slot >= PF__SLOT_FIRST_LAYER && layer < m->config.encoder_layers;
    int index = encoder || slot < PF__SLOT_FIRST_LAYER ? layer : layer - m->config.encoder_layers;
    *row = NULL;
    *other = NULL;
    for (size_t i = 0; i < PF__COUNT(pf__arch_tensors) && !*other; i++) {
        const pf__arch_tensor *t = &pf__arch_tensors[i];
        char pattern[256], full[300];
        if (t->arch != pf__tensor_rows(m->config.arch) || t->slot != slot || t->encoder != encoder) continue;
        snprintf(pattern, sizeof pattern, t->pattern, index);
        snprintf(full, sizeof full, "%s%s", prefix, pattern);
        const pf__st_tensor *st = pf__st_take(&m->st, full);
        if (!st) st = pf__st_take(&m->st, pattern);
        if (!*row || (st && !found)) {
            *row = t;
            snprintf(name, name_size, "%s", full);
        }
        if (st && found) *other = st;
        else if (st) found = st;
    }
    return found;
}

/* A slot's source times a constant: an fp32 copy (owned by the model) becomes its source. A
   scale of what a linear op reads, folded in rather than computed on every backend. */
static pf_result pf__scale_source(pf_model *m, pf__slot slot, float scale) {
    pf__source *src = &m->sources[slot];
    size_t n = src->rows * src->cols;
    if (!src->data) return PF_OK;
    if (m->num_scaled == PF__COUNT(m->scaled)) return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "too many scaled tensors");
    float *copy = (float *)malloc(n * sizeof(float));
    if (!copy) return PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; i < n; i++) copy[i] = pf__weight_value(src->data, i, src->dtype) * scale;
    m->scaled[m->num_scaled++] = copy;
    src->data = (const uint8_t *)copy;
    src->dtype = PF__DTYPE_F32; /* the layout stays: the copy keeps the file's order */
    return PF_OK;
}

/* T5's decoder output times hidden^-0.5 before the LM head, folded into the final norm's weight:
   the norm's output is scaled by it, which the logits of every backend then inherit. */
static pf_result pf__scale_final_norm(pf_model *m) {
    if (!m->sources[PF__SLOT_FINAL_NORM_WEIGHT].data || m->sources[PF__SLOT_FINAL_NORM_BIAS].data)
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "%s: scale_decoder_outputs needs a final norm without bias", m->dir);
    return pf__scale_source(m, PF__SLOT_FINAL_NORM_WEIGHT, 1.0f / sqrtf((float)m->config.hidden_size));
}

/* Finds the source tensor of every slot, checking presence, dtype and shape. */
static pf_result pf__resolve_sources(pf_model *m) {
    const pf__config *c = &m->config;
    size_t num_slots = pf__num_slots(c);
    m->sources = (pf__source *)calloc(num_slots, sizeof *m->sources);
    if (!m->sources) return PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");

    const char *prefix = NULL;
    const pf__arch_tensor *embed = pf__arch_tensor_for(c->arch, PF__SLOT_TOKEN_EMBED); /* anchors the prefix */
    if (!embed) embed = pf__arch_tensor_for(c->arch, PF__SLOT_PATCH_WEIGHT);
    for (size_t i = 0; i < PF__COUNT(pf__arch_prefixes) && !prefix; i++) {
        char name[256];
        if (pf__arch_prefixes[i].arch != pf__tensor_rows(c->arch)) continue;
        snprintf(name, sizeof name, "%s%s", pf__arch_prefixes[i].prefix, embed->pattern);
        if (pf__st_find(&m->st, name)) prefix = pf__arch_prefixes[i].prefix;
    }
    if (!prefix) return PF__FAIL(m, PF_ERROR_FORMAT, "%s: missing tensor '%s' (under any known prefix)", m->dir, embed->pattern);

    for (int slot = 0; slot < PF__SLOT_COUNT; slot++) {
        if (!pf__arch_tensor_for(c->arch, (pf__slot)slot)) continue;
        int layers = slot < PF__SLOT_FIRST_LAYER ? 1 : c->num_layers;
        for (int l = 0; l < layers; l++) {
            char name[300];
            const pf__arch_tensor *t = NULL;
            const pf__st_tensor *other = NULL, *st = pf__take_slot(m, prefix, (pf__slot)slot, l, &t, name, sizeof name, &other);
            if (!t) continue; /* a slot of the other tower only */
            if (other)
                return PF__FAIL(m, PF_ERROR_FORMAT, "%s: tensors '%s' and '%s' are two spellings of one weight", m->dir,
                                st->name, other->name);
            const char *why = NULL;
            int by_config = pf__need_by_config(c, t->need, &why), wanted = by_config > 0;
            if (by_config >= 0 && st && !wanted)
                return PF__FAIL(m, PF_ERROR_FORMAT, "%s: tensor '%s' is in the checkpoint but config.json says %s",
                                m->dir, st->name, why);
            if (!st) {
                if (t->need == PF__OPTIONAL || by_config == -2 || (by_config >= 0 && !wanted)) continue;
                if (by_config >= 0)
                    return PF__FAIL(m, PF_ERROR_FORMAT, "%s: missing tensor '%s' (config.json says %s)", m->dir, name, why);
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
            if (t->layout == PF__LAYOUT_ROW) { /* [1, n] */
                want[1] = want[0];
                want[0] = 1;
            }
            if (t->layout == PF__LAYOUT_IN_OUT) {
                want[0] = src->cols;
                want[1] = src->rows;
            }
            pf__st_tensor flat = *st; /* SQUEEZED and CONV tensors checked as the 2-D [out, in] they are read as */
            if (t->layout == PF__LAYOUT_SQUEEZED || t->layout == PF__LAYOUT_CONV) {
                int leading_ones = t->layout == PF__LAYOUT_SQUEEZED, ok = st->ndim >= 2;
                for (int k = 0; ok && leading_ones && k < st->ndim - 2; k++) ok = st->shape[k] == 1;
                if (t->layout == PF__LAYOUT_CONV && st->ndim != 4) ok = 0;
                flat.ndim = ok ? 2 : 0;
                if (ok) {
                    flat.shape[0] = leading_ones ? st->shape[st->ndim - 2] : st->shape[0];
                    flat.shape[1] = leading_ones ? st->shape[st->ndim - 1] : (st->shape[0] ? st->numel / st->shape[0] : 0);
                }
            }
            if (flat.ndim != want_dims || flat.shape[0] != want[0] || (want_dims == 2 && flat.shape[1] != want[1]))
                return PF__FAIL(m, PF_ERROR_FORMAT, "%s: tensor '%s' has shape [%zu%s%zu] but the config needs [%zu%s%zu]",
                                st->file->path, st->name, st->shape[0], st->ndim > 1 ? ", " : "",
                                st->ndim > 1 ? st->shape[1] : 0, want[0], want_dims > 1 ? ", " : "",
                                want_dims > 1 ? want[1] : 0);
            src->data = st->data;
            src->dtype = st->dtype;
            src->layout = t->layout == PF__LAYOUT_ROW                                       ? PF__LAYOUT_VECTOR
                          : t->layout == PF__LAYOUT_SQUEEZED || t->layout == PF__LAYOUT_CONV ? PF__LAYOUT_OUT_IN
                                                                                            : t->layout;
            src->split = t->split;
        }
    }
    pf_result r = pf__check_head_slots(m);
    if (r) return r;
    /* Tied: the head is the embedding, and a head in the file too must hold the same values. */
    pf__source *head = &m->sources[PF__SLOT_LM_HEAD];
    const pf__source *embed_src = &m->sources[PF__SLOT_TOKEN_EMBED];
    int vocab_logits = c->head == PF_HEAD_CAUSAL_LM || c->head == PF_HEAD_MASKED_LM;
    if (!vocab_logits && (head->data || m->sources[PF__SLOT_LM_HEAD_BIAS].data))
        return PF__FAIL(m, PF_ERROR_FORMAT, "%s: the checkpoint has an LM head that config.json's architectures (%s) does "
                        "not use", m->dir, pf__head_name(c->head));
    if (c->tie_word_embeddings && head->data) {
        if (head->dtype != embed_src->dtype || head->rows != embed_src->rows || head->cols != embed_src->cols ||
            memcmp(head->data, embed_src->data, head->rows * head->cols * pf__dtype_size(head->dtype)))
            return PF__FAIL(m, PF_ERROR_FORMAT,
                            "%s: config.json's tie_word_embeddings is true, but the checkpoint's LM head differs from its "
                            "token embedding", m->dir);
        head->data = NULL;
    }
    if (vocab_logits && !head->data && !c->tie_word_embeddings)
        return PF__FAIL(m, PF_ERROR_FORMAT, "%s: missing the LM head (config.json's tie_word_embeddings is false)", m->dir);
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
    r = pf__account_tensors(m, prefix);
    if (r) return r;
    if (c->scale_decoder_outputs && c->num_layers > c->encoder_layers && pf__archs[c->arch].kind == PF__KIND_SEQ2SEQ)
        if ((r = pf__scale_final_norm(m))) return r;
    static const pf__slot teacher_heads[] = {PF__SLOT_CLASSIFIER_WEIGHT, PF__SLOT_CLASSIFIER_BIAS,
                                             PF__SLOT_DIST_CLASSIFIER_WEIGHT, PF__SLOT_DIST_CLASSIFIER_BIAS};
    for (size_t i = 0; c->teacher_head && i < PF__COUNT(teacher_heads); i++) /* DeiT: the mean of two heads */
        if ((r = pf__scale_source(m, teacher_heads[i], 0.5f))) return r;
    if (c->num_kv_heads != c->num_heads && pf__arch_tensor_for(c->arch, PF__SLOT_QKV_FUSED_WEIGHT))
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "%s: grouped-query attention with a fused QKV tensor", m->dir);
    if (pf__archs[c->arch].qkv_layout == PF__QKV_CODEGEN && c->num_heads % 4)
        return PF__FAIL(m, PF_ERROR_FORMAT, "%s: CodeGen's fused QKV needs heads divisible by 4", m->dir);
    return PF_OK;
}

/* ---- sentence-transformers' modules ---- */

/* A Pooling module's config.json: "pooling_mode" (a name, or a list of one), or the older
   pooling_mode_* flags with exactly one set. */
static pf_result pf__sentence_pooling_read(const char *path, struct pf__sentence *s, char *message, size_t size) {
    static const struct { const char *name, *flag; pf_pooling pooling; } modes[] = {
        {"mean", "pooling_mode_mean_tokens", PF_POOLING_MEAN}, {"cls", "pooling_mode_cls_token", PF_POOLING_CLS},
        {"max", "pooling_mode_max_tokens", PF_POOLING_MAX},
        {"mean_sqrt_len_tokens", "pooling_mode_mean_sqrt_len_tokens", PF_POOLING_MEAN_SQRT_LEN},
        {"weightedmean", "pooling_mode_weightedmean_tokens", PF_POOLING_WEIGHTED_MEAN},
        {"lasttoken", "pooling_mode_lasttoken", PF_POOLING_LAST_TOKEN},
    };
    pf__json *json;
    pf_result r = pf__json_load(path, &json, message, size);
    if (r) return r;
    const pf__json *mode = pf__json_get(json, "pooling_mode");
    if (mode && mode->type == PF__JSON_ARRAY && mode->count == 1) mode = mode->first;
    int found = 0;
    for (size_t i = 0; i < PF__COUNT(modes); i++) {
        double flag = 0;
        int named = mode && mode->type == PF__JSON_STRING && !strcmp(mode->string, modes[i].name);
        if (named || (!mode && pf__json_number(pf__json_get(json, modes[i].flag), &flag) == 1 && flag != 0)) {
            s->pooling = modes[i].pooling;
            found++;
        }
    }
    if (found != 1)
        snprintf(s->unsupported, sizeof s->unsupported, "%s: a pooling other than one of mean, cls, max, "
                 "mean_sqrt_len_tokens, weightedmean and lasttoken", path);
    pf__json_free(json);
    return PF_OK;
}

/* modules.json (sentence-transformers): a Transformer, then a Pooling and optionally a
   Normalize module; without the file, mean pooling and no normalisation, as sentence-transformers
   makes of a plain checkpoint. sentence_bert_config.json's max_seq_length bounds the tokens. */
static pf_result pf__sentence_config_read(const char *dir, struct pf__sentence *s, char *message, size_t size) {
    char path[PF__PATH_SIZE];
    pf__json *json = NULL;
    memset(s, 0, sizeof *s);
    s->pooling = PF_POOLING_MEAN;
    if (pf__path_join(path, sizeof path, dir, "sentence_bert_config.json") == 0 && pf__file_exists(path)) {
        pf_result r = pf__json_load(path, &json, message, size);
        if (r) return r;
        double length = 0;
        if (pf__json_number(pf__json_get(json, "max_seq_length"), &length) == 1 && length >= 1 && length < 1e9)
            s->max_seq_length = (int)length;
        pf__json_free(json);
    }
    if (pf__path_join(path, sizeof path, dir, "modules.json") || !pf__file_exists(path)) return PF_OK;
    pf_result r = pf__json_load(path, &json, message, size);
    if (r) return r;
    for (const pf__json *module = json->type == PF__JSON_ARRAY ? json->first : NULL; module && !r; module = module->next) {
        const pf__json *type = pf__json_get(module, "type"), *where = pf__json_get(module, "path");
        const char *name = type && type->type == PF__JSON_STRING ? type->string : "";
        const char *kind = strrchr(name, '.') ? strrchr(name, '.') + 1 : name;
        char pooling_path[PF__PATH_SIZE], sub[PF__PATH_SIZE];
        if (!strcmp(kind, "Transformer")) continue;
        if (!strcmp(kind, "Normalize")) s->normalize = 1;
        else if (!strcmp(kind, "Pooling") && where && where->type == PF__JSON_STRING &&
                 !pf__path_join(sub, sizeof sub, dir, where->string) &&
                 !pf__path_join(pooling_path, sizeof pooling_path, sub, "config.json"))
            r = pf__sentence_pooling_read(pooling_path, s, message, size);
        else if (!s->unsupported[0])
            snprintf(s->unsupported, sizeof s->unsupported, "%s: module \"%s\"", path, name);
    }
    pf__json_free(json);
    return r;
}

/* The model's tokenizer, where its directory has one (tokenizer.json, vocab.json, or a
   tokenizer_config.json naming a class without them, such as ByT5's). A tokenizer of a kind we
   do not read (Marian's SentencePiece files, say) leaves the model without one: ids still run,
   and the text calls say why there is no tokenizer. */
static pf_result pf__load_tokenizer(pf_model *m, const char *dir) {
    static const char *const files[] = {"tokenizer.json", "vocab.json", "tokenizer_config.json"};
    int present[3];
    for (size_t i = 0; i < PF__COUNT(files); i++) {
        char path[PF__PATH_SIZE];
        if (pf__path_join(path, sizeof path, dir, files[i])) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "path too long: %s", dir);
        present[i] = pf__file_exists(path);
    }
    if (m->load_options.skip_tokenizer || !(present[0] || present[1] || present[2])) return PF_OK;
    pf_result r = pf__tokenizer_load_dir(dir, &m->tokenizer, m->tokenizer_missing, sizeof m->tokenizer_missing);
    if (r == PF_ERROR_UNSUPPORTED || (r && !present[0] && !present[1])) { /* a kind we lack, or no vocabulary files */
        pf__log(m, PF_LOG_WARNING, "no tokenizer: %s", m->tokenizer_missing);
        return PF_OK;
    }
    if (r) r = PF__FAIL(m, r, "%s", m->tokenizer_missing);
    m->tokenizer_missing[0] = 0;
    return r;
}

pf_result pf_load(const char *model_dir, const pf_load_options *options, pf_model **model) {
    if (!model) return PF_ERROR_INVALID_ARGUMENT;
    pf_model *m = (pf_model *)calloc(1, sizeof *m);
    *model = m;
    if (!m) return PF_ERROR_OUT_OF_MEMORY;
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutex_init(&m->request_lock, &attr);
    pthread_mutex_init(&m->batcher_start, NULL);
    pthread_mutexattr_destroy(&attr);
    m->load_options = options ? *options : pf_load_options_init();
    if (!model_dir) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "model_dir is NULL");
    m->dir = strdup(model_dir);
    if (!m->dir) return PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    pf_result r = pf__config_read(model_dir, &m->config, pf__error_buffer(m), PF__MESSAGE_SIZE);
    m->generate_defaults = pf_generate_options_init();
    if (!r && !m->load_options.skip_generation_config)
        r = pf__generation_config_read(model_dir, &m->config, &m->generate_defaults, pf__error_buffer(m), PF__MESSAGE_SIZE);
    if (!r) r = pf__config_check_token_ids(&m->config, model_dir, pf__error_buffer(m), PF__MESSAGE_SIZE);
    if (!r) r = pf__st_open(model_dir, &m->st, pf__error_buffer(m), PF__MESSAGE_SIZE);
    if (!r) r = pf__resolve_sources(m);
    if (!r && pf__archs[m->config.arch].kind == PF__KIND_ENCODER)
        r = pf__sentence_config_read(model_dir, &m->sentence, pf__error_buffer(m), PF__MESSAGE_SIZE);
    if (!r) r = pf__load_tokenizer(m, model_dir);
    if (!r && m->config.rotary_dim) {
        m->inv_freq = (float *)malloc((size_t)m->config.rotary_dim / 2 * sizeof(float));
        if (!m->inv_freq) r = PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    if (r) return r;
    m->loaded = 1;
    return PF_OK;
}

static void pf__batcher_stop(pf_model *m);

void pf_free(pf_model *m) {
    if (!m) return;
    pf__batcher_stop(m);
    pf__group_destroy(m->group);
    pf_tokenizer_free(m->tokenizer);
    pf__st_close(&m->st);
    free(m->sources);
    for (int i = 0; i < m->num_scaled; i++) free(m->scaled[i]);
    free(m->logits);
    free(m->inv_freq);
    free(m->config.layer_window);
    free(m->config.eos_ids);
    free(m->config.suppress_ids);
    free(m->config.begin_suppress_ids);
    free(m->dir);
    pthread_mutex_destroy(&m->request_lock);
    pthread_mutex_destroy(&m->batcher_start);
    free(m);
}

pf_model_info pf_get_info(const pf_model *m) {
    pf_model_info info;
    memset(&info, 0, sizeof info);
    info.eos_token_id = info.bos_token_id = info.pad_token_id = info.decoder_start_token_id = -1;
    if (!m || !m->loaded) return info;
    info.model_type = m->config.model_type;
    info.vocab_size = m->config.vocab_size;
    info.hidden_size = m->config.hidden_size;
    info.num_layers = m->config.num_layers;
    info.num_heads = m->config.num_heads;
    info.max_positions = m->config.max_positions;
    const pf__config *c = &m->config;
    pf__kind kind = pf__archs[c->arch].kind;
    info.is_encoder_decoder = kind == PF__KIND_SEQ2SEQ && c->num_layers > c->encoder_layers;
    info.is_encoder = kind == PF__KIND_ENCODER || (kind == PF__KIND_SEQ2SEQ && !info.is_encoder_decoder);
    info.num_encoder_layers = kind == PF__KIND_SEQ2SEQ ? c->encoder_layers : 0;
    if (c->patch_size) info.image_size = c->image_size, info.patch_size = c->patch_size, info.num_channels = c->num_channels;
    info.head = c->head;
    info.num_labels = c->num_labels;
    info.eos_token_ids = c->eos_ids;
    info.num_eos_token_ids = c->num_eos_ids;
    info.eos_token_id = c->num_eos_ids ? c->eos_ids[0] : -1;
    info.bos_token_id = c->bos_token_id;
    info.pad_token_id = c->pad_token_id;
    info.decoder_start_token_id = c->decoder_start_token_id;
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
    if (o.max_queued_requests < 0)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "max_queued_requests %d is negative", o.max_queued_requests);
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
    if (o.dtype < PF_DTYPE_AUTO || o.dtype > PF_DTYPE_Q8_0)
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
    static const pf__dtype dtypes[] = {PF__DTYPE_F32, PF__DTYPE_F32, PF__DTYPE_F16, PF__DTYPE_BF16, PF__DTYPE_Q8};
    pf__dtype dtype = o.dtype == PF_DTYPE_AUTO && backend != &pf__cpu_backend ? PF__DTYPE_F16 : dtypes[o.dtype];
    if (dtype == PF__DTYPE_Q8 && backend != &pf__cpu_backend)
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "dtype q8_0 runs on CPU ranks only (the CUDA backend has no int8 kernels)");
    if (backend == &pf__cpu_backend) o.device_ids = NULL; /* CPU ranks have no device to pick */
    pf__group_destroy(m->group);
    m->group = NULL;
    m->parallel_options = o;
    m->parallel_options.device_ids = NULL; /* not ours to keep */
    return pf__group_create(m, num_ranks, &o, backend, dtype);
}

pf_result pf_parallelize(pf_model *m, int num_ranks, const pf_parallel_options *options) {
    if (!m) return PF_ERROR_INVALID_ARGUMENT;
    pf_result r = pf__request_lock(m, "pf_parallelize");
    if (r) return r;
    r = pf__parallelize_locked(m, num_ranks, options);
    pf__request_unlock(m);
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
        if (gathered[i].layout == PF__LAYOUT_IN_OUT) gathered[i].layout = PF__LAYOUT_OUT_IN; /* gathered as [rows][cols] */
        if ((i == PF__SLOT_REL_BIAS || i == PF__SLOT_ENC_REL_BIAS) && full[i]) /* no rank holds it as a weight (each has a table): from the source */
            for (size_t k = 0; k < m->sources[i].rows * m->sources[i].cols; k++)
                full[i][k] = pf__weight_value(m->sources[i].data, k, m->sources[i].dtype);
    }
    if (!r) {
        g->gather = full;
        r = pf__group_run(g, PF__JOB_GATHER, NULL);
    }
    if (!r) {
        /* The CPU rank stores the weights as the ranks did (its fp16/bf16 lose nothing more). */
        pf__dtype dtype = g->dtype;
        pf_parallel_options o = m->parallel_options;
        o.device = PF_DEVICE_CPU;
        o.dtype = pf_model_dtype(m);
        pf__group_destroy(g);
        m->group = NULL;
        pf__source *mapped = m->sources;
        m->sources = gathered;
        r = pf__group_create(m, 1, &o, &pf__cpu_backend, dtype);
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
    pf_result r = pf__request_lock(m, "pf_to_cpu");
    if (r) return r;
    r = pf__to_cpu_locked(m);
    pf__request_unlock(m);
    return r;
}

int pf_num_ranks(const pf_model *m) { return m && m->group ? m->group->num_ranks : 1; }

pf_device pf_model_device(const pf_model *m) {
    return m && m->group && m->group->backend != &pf__cpu_backend ? PF_DEVICE_CUDA : PF_DEVICE_CPU;
}

pf_dtype pf_model_dtype(const pf_model *m) {
    pf__dtype dtype = m && m->group ? m->group->dtype : PF__DTYPE_F32;
    return dtype == PF__DTYPE_F16    ? PF_DTYPE_F16
           : dtype == PF__DTYPE_BF16 ? PF_DTYPE_BF16
           : dtype == PF__DTYPE_Q8   ? PF_DTYPE_Q8_0
                                     : PF_DTYPE_F32;
}

size_t pf_memory_allocated(const pf_model *m, int rank) {
    if (!m || !m->group || rank < 0 || rank >= m->group->num_ranks) return 0;
    const pf__rank *r = &m->group->ranks[rank];
    return r->bytes[PF__MEM_WEIGHTS] + r->bytes[PF__MEM_CACHE] + r->bytes[PF__MEM_SCRATCH];
}

pf_result pf_get_memory_info(const pf_model *m, int rank, pf_memory_info *info) {
    if (info) memset(info, 0, sizeof *info);
    if (!m) return PF_ERROR_INVALID_ARGUMENT;
    if (!info) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "pf_get_memory_info: info (the output) is NULL");
    if (!m->group || rank < 0 || rank >= m->group->num_ranks)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "rank %d: the model runs on %d rank(s)", rank,
                        m->group ? m->group->num_ranks : 0);
    const pf__rank *r = &m->group->ranks[rank];
    info->weights = r->bytes[PF__MEM_WEIGHTS];
    info->kv_cache = r->bytes[PF__MEM_CACHE];
    info->scratch = r->bytes[PF__MEM_SCRATCH];
    info->allocated = info->weights + info->kv_cache + info->scratch;
    pthread_mutex_lock(&m->group->mutex); /* as the rank read it after its last job */
    info->device_used = r->device_used;
    info->device_total = r->device_total;
    pthread_mutex_unlock(&m->group->mutex);
    return PF_OK;
}

/* Requests on a model that was never parallelized run on one CPU rank. */
static pf_result pf__ensure_group(pf_model *m) {
    if (!m->loaded) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "the model did not load");
    if (m->group) return PF_OK;
    pf_parallel_options o = pf_parallel_options_init();
    o.device = PF_DEVICE_CPU;
    return pf__parallelize_locked(m, 1, &o);
}

static pf_result pf__check_ids_below(pf_model *m, const int32_t *ids, size_t n, int vocab) {
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= vocab)
            return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "token id %d at index %zu is outside the vocabulary (0..%d)",
                            (int)ids[i], i, vocab - 1);
    return PF_OK;
}

static pf_result pf__check_ids(pf_model *m, const int32_t *ids, size_t n) {
    return pf__check_ids_below(m, ids, n, m->config.vocab_size);
}

/* An encoder-decoder's source ids: its encoder's vocabulary (FSMT's src_vocab_size). */
static pf_result pf__check_source_ids(pf_model *m, const int32_t *ids, size_t n) {
    return pf__check_ids_below(m, ids, n, m->config.src_vocab_size ? m->config.src_vocab_size : m->config.vocab_size);
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

static pf_result pf__encode_locked(pf_model *m, const int32_t *const *ids, const int32_t *const *types,
                                   const int *lengths, int batch, pf_encoding **out);
static pf_result pf__forward_in_chunks(pf_model *m, const pf__job *job);

static pf_result pf__forward_locked(pf_model *m, const int32_t *ids, int batch, int seq_len, float *logits) {
    if (!ids || !logits || batch < 1 || seq_len < 1)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "pf_forward needs ids, logits, batch >= 1 and seq_len >= 1");
    pf_result r = pf__ensure_group(m);
    if (r) return r;
    if (m->config.head != PF_HEAD_CAUSAL_LM && m->config.head != PF_HEAD_MASKED_LM)
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "pf_forward gives vocabulary logits; this model computes %s (pf_encode runs it)",
                        pf__head_name(m->config.head));
    if (pf__archs[m->config.arch].kind == PF__KIND_SEQ2SEQ)
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "model_type \"%s\" is an encoder-decoder: pf_forward_seq2seq gives its "
                        "logits for a source and decoder inputs", m->config.model_type);
    if (m->config.head == PF_HEAD_MASKED_LM) { /* rows of equal length: the encoding's logits are the array */
        pf_encoding *e = NULL;
        const int32_t **rows = (const int32_t **)malloc((size_t)batch * sizeof *rows);
        int *lengths = (int *)malloc((size_t)batch * sizeof(int));
        r = rows && lengths ? PF_OK : PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
        for (int b = 0; !r && b < batch; b++) {
            rows[b] = ids + (size_t)b * seq_len;
            lengths[b] = seq_len;
        }
        if (!r) r = pf__encode_locked(m, rows, NULL, lengths, batch, &e);
        if (!r) memcpy(logits, e->logits, (size_t)batch * seq_len * m->config.vocab_size * sizeof(float));
        pf_encoding_free(e);
        free(rows), free(lengths);
        return r;
    }
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
    return pf__forward_in_chunks(m, &job);
}

void pf_encoding_free(pf_encoding *e) {
    if (!e) return;
    free(e->offsets);
    free(e->last_hidden_state);
    free(e->pooled);
    free(e->logits);
    free(e);
}

/* Fills the host arrays of one encoder request: rows left-padded to the longest (pads are
   masked and take positions from the first real token, so every row computes what it would
   alone), and its outputs compacted into e. */
static pf_result pf__encode_locked(pf_model *m, const int32_t *const *ids, const int32_t *const *types,
                                   const int *lengths, int batch, pf_encoding **out) {
    const pf__config *c = &m->config;
    *out = NULL;
    pf_result r = pf__ensure_group(m);
    if (r) return r;
    int seq2seq = pf__archs[c->arch].kind == PF__KIND_SEQ2SEQ; /* its encoder tower's output */
    if (m->sources[PF__SLOT_PATCH_WEIGHT].data)
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "model_type \"%s\" is an image encoder: pf_encode_images runs it", c->model_type);
    if (pf__archs[c->arch].kind == PF__KIND_DECODER)
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "model_type \"%s\" is a decoder: pf_forward and pf_generate run it",
                        c->model_type);
    if (!ids || !lengths || batch < 1) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "pf_encode needs ids, lengths and batch >= 1");
    const pf__group *g = m->group;
    if (batch > g->max_batch) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "batch %d exceeds max_batch %d", batch, g->max_batch);
    int T = 0;
    for (int b = 0; b < batch; b++) {
        if (!ids[b] || lengths[b] < 1 || lengths[b] > g->cache_len)
            return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "row %d: %d tokens (1 to %d fit)", b, ids[b] ? lengths[b] : 0, g->cache_len);
        if ((r = seq2seq ? pf__check_source_ids(m, ids[b], (size_t)lengths[b]) : pf__check_ids(m, ids[b], (size_t)lengths[b])))
            return r;
        for (int t = 0; types && types[b] && t < lengths[b]; t++)
            if (types[b][t] < 0 || types[b][t] >= (c->type_vocab_size > 0 ? c->type_vocab_size : 1))
                return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "row %d: token type %d is outside 0..%d", b, (int)types[b][t],
                                (c->type_vocab_size > 0 ? c->type_vocab_size : 1) - 1);
        if (lengths[b] > T) T = lengths[b];
    }
    size_t N = (size_t)batch * T, d = (size_t)c->hidden_size;
    int per_token = c->head != PF_HEAD_SEQUENCE_CLASSIFICATION;
    int num_logits = seq2seq ? 0
                     : c->head == PF_HEAD_MASKED_LM ? c->vocab_size
                     : c->head == PF_HEAD_QUESTION_ANSWERING ? 2
                     : c->head == PF_HEAD_NONE ? 0 : c->num_labels;
    int32_t *padded = (int32_t *)calloc(N, sizeof(int32_t)), *padded_types = (int32_t *)calloc(N, sizeof(int32_t));
    int *pads = (int *)calloc((size_t)batch, sizeof(int));
    float *hidden = (float *)malloc(N * d * sizeof(float));
    float *logits = num_logits ? (float *)malloc((per_token ? N : (size_t)batch) * (size_t)num_logits * sizeof(float)) : NULL;
    pf_encoding *e = (pf_encoding *)calloc(1, sizeof *e);
    if (e) {
        e->offsets = (int *)calloc((size_t)batch + 1, sizeof(int));
        e->pooled = m->sources[PF__SLOT_POOLER_WEIGHT].data ? (float *)malloc((size_t)batch * d * sizeof(float)) : NULL;
    }
    if (!padded || !padded_types || !pads || !hidden || (num_logits && !logits) || !e || !e->offsets ||
        (m->sources[PF__SLOT_POOLER_WEIGHT].data && !e->pooled))
        r = PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    for (int b = 0; !r && b < batch; b++) {
        pads[b] = T - lengths[b];
        memcpy(padded + (size_t)b * T + pads[b], ids[b], (size_t)lengths[b] * sizeof(int32_t));
        if (types && types[b]) memcpy(padded_types + (size_t)b * T + pads[b], types[b], (size_t)lengths[b] * sizeof(int32_t));
    }
    if (!r) {
        pf__job job;
        memset(&job, 0, sizeof job);
        job.step.ids = padded;
        job.step.type_ids = padded_types;
        job.step.batch = batch;
        job.step.seq_len = T;
        job.step.pad = pads;
        pf__rope_reset(m);
        job.step.inv_freq = pf__rope_frequencies(m, T);
        job.all_positions = 1;
        job.hidden = hidden;
        job.pooled = e->pooled;
        job.logits = logits;
        job.encoder_pass = seq2seq;
        r = pf__group_run(m->group, PF__JOB_FORWARD, &job);
    }
    if (!r) { /* drop the pads: row b's real tokens are its last lengths[b] */
        e->batch = batch;
        e->hidden_size = (int)d;
        e->head = seq2seq ? PF_HEAD_NONE : c->head;
        e->num_logits = num_logits;
        e->logits_per_token = num_logits ? per_token : 0;
        for (int b = 0; b < batch; b++) e->offsets[b + 1] = e->offsets[b] + lengths[b];
        e->last_hidden_state = hidden;
        for (int b = 0; b < batch; b++)
            memmove(hidden + (size_t)e->offsets[b] * d, hidden + ((size_t)b * T + pads[b]) * d, (size_t)lengths[b] * d * sizeof(float));
        hidden = NULL;
        if (logits && per_token)
            for (int b = 0; b < batch; b++)
                memmove(logits + (size_t)e->offsets[b] * num_logits, logits + ((size_t)b * T + pads[b]) * num_logits,
                        (size_t)lengths[b] * num_logits * sizeof(float));
        e->logits = logits;
        logits = NULL;
        *out = e;
        e = NULL;
    }
    pf_encoding_free(e);
    free(padded), free(padded_types), free(pads), free(hidden), free(logits);
    return r;
}

/* An image encoder's request: each image [channels][size][size] cut into patches (row-major,
   each patch's values channel-major as the patch convolution's weight is), then the encoder. */
static pf_result pf__encode_images_locked(pf_model *m, const float *pixels, int batch, pf_encoding **out) {
    const pf__config *c = &m->config;
    *out = NULL;
    pf_result r = pf__ensure_group(m);
    if (r) return r;
    if (!m->sources[PF__SLOT_PATCH_WEIGHT].data)
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "model_type \"%s\" takes token ids, not images", c->model_type);
    if (!pixels || batch < 1) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "pf_encode_images needs pixels and batch >= 1");
    const pf__group *g = m->group;
    if (batch > g->max_batch) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "batch %d exceeds max_batch %d", batch, g->max_batch);
    int p = c->patch_size, side = c->image_size / p, S = c->max_positions, channels = c->num_channels;
    if (S > g->cache_len)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "an image's %d positions exceed max_sequence_length %d", S, g->cache_len);
    size_t n = (size_t)side * side, in = (size_t)channels * p * p, d = (size_t)c->hidden_size, B = (size_t)batch;
    size_t image = (size_t)channels * c->image_size * c->image_size;
    int num_logits = c->head == PF_HEAD_IMAGE_CLASSIFICATION ? c->num_labels : 0;
    float *patches = (float *)malloc(B * n * in * sizeof(float));
    float *hidden = (float *)malloc(B * (size_t)S * d * sizeof(float));
    float *logits = num_logits ? (float *)malloc(B * (size_t)num_logits * sizeof(float)) : NULL;
    pf_encoding *e = (pf_encoding *)calloc(1, sizeof *e);
    if (e) {
        e->offsets = (int *)calloc(B + 1, sizeof(int));
        e->pooled = m->sources[PF__SLOT_POOLER_WEIGHT].data ? (float *)malloc(B * d * sizeof(float)) : NULL;
    }
    if (!patches || !hidden || (num_logits && !logits) || !e || !e->offsets || (m->sources[PF__SLOT_POOLER_WEIGHT].data && !e->pooled))
        r = PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    for (size_t b = 0; !r && b < B; b++)
        for (size_t py = 0; py < (size_t)side; py++)
            for (size_t px = 0; px < (size_t)side; px++) {
                float *patch = patches + ((b * side + py) * side + px) * in;
                for (int ch = 0; ch < channels; ch++)
                    for (int ky = 0; ky < p; ky++)
                        memcpy(patch + ((size_t)ch * p + ky) * p,
                               pixels + b * image + ((size_t)ch * c->image_size + py * p + ky) * c->image_size + px * p,
                               (size_t)p * sizeof(float));
            }
    for (size_t i = 0; !r && i < B * n * in; i++)
        if (!isfinite(patches[i])) r = PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "pixel values must be finite");
    if (!r) {
        pf__job job;
        memset(&job, 0, sizeof job);
        job.step.patches = patches;
        job.step.batch = batch;
        job.step.seq_len = S;
        job.all_positions = 1;
        job.hidden = hidden;
        job.pooled = e->pooled;
        job.logits = logits;
        r = pf__group_run(m->group, PF__JOB_FORWARD, &job);
    }
    if (!r) {
        e->batch = batch;
        e->hidden_size = (int)d;
        e->head = c->head;
        e->num_logits = num_logits;
        for (int b = 0; b < batch; b++) e->offsets[b + 1] = e->offsets[b] + S;
        e->last_hidden_state = hidden;
        e->logits = logits;
        hidden = logits = NULL;
        *out = e;
        e = NULL;
    }
    pf_encoding_free(e);
    free(patches), free(hidden), free(logits);
    return r;
}

pf_result pf_encode_images(pf_model *m, const float *pixels, int batch, pf_encoding **out) {
    if (!m) return PF_ERROR_INVALID_ARGUMENT;
    if (out) *out = NULL;
    if (!out) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "pf_encode_images needs an output");
    pf_result r = pf__request_lock(m, "pf_encode_images");
    if (r) return r;
    r = pf__encode_images_locked(m, pixels, batch, out);
    pf__request_unlock(m);
    return r;
}

pf_result pf_encode(pf_model *m, const int32_t *const *ids, const int32_t *const *token_type_ids, const int *lengths,
                    int batch, pf_encoding **out) {
    if (!m || !out) return PF_ERROR_INVALID_ARGUMENT;
    pf_result r = pf__request_lock(m, "pf_encode");
    if (r) return r;
    r = pf__encode_locked(m, ids, token_type_ids, lengths, batch, out);
    pf__request_unlock(m);
    return r;
}

pf_embed_options pf_embed_options_init(void) {
    pf_embed_options o;
    o.pooling = PF_POOLING_MODEL;
    o.normalize = -1;
    return o;
}

/* One row's tokens [n][d] pooled into out[d], as sentence-transformers' Pooling does. */
static void pf__pool(const float *tokens, size_t n, size_t d, pf_pooling pooling, float *out) {
    if (pooling == PF_POOLING_CLS || pooling == PF_POOLING_LAST_TOKEN) {
        memcpy(out, tokens + (pooling == PF_POOLING_CLS ? 0 : n - 1) * d, d * sizeof(float));
        return;
    }
    for (size_t i = 0; i < d; i++) {
        double sum = 0, weights = 0;
        float max = -INFINITY;
        for (size_t t = 0; t < n; t++) {
            float v = tokens[t * d + i];
            double w = pooling == PF_POOLING_WEIGHTED_MEAN ? (double)(t + 1) : 1.0;
            sum += w * v;
            weights += w;
            if (v > max) max = v;
        }
        out[i] = pooling == PF_POOLING_MAX ? max
                 : pooling == PF_POOLING_MEAN_SQRT_LEN ? (float)(sum / sqrt((double)n))
                 : (float)(sum / weights);
    }
}

static pf_result pf__embed_locked(pf_model *m, const int32_t *const *ids, const int *lengths, int batch,
                                  const pf_embed_options *o, float *out) {
    pf_embed_options defaults = pf_embed_options_init();
    if (!o) o = &defaults;
    if (!ids || !lengths || !out || batch < 1)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "pf_embed needs ids, lengths, embeddings and batch >= 1");
    if (o->pooling < PF_POOLING_MODEL || o->pooling > PF_POOLING_LAST_TOKEN || o->normalize < -1 || o->normalize > 1)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "pf_embed: pooling %d or normalize %d is not an option",
                        (int)o->pooling, o->normalize);
    pf_result r = pf__ensure_group(m);
    if (r) return r;
    if (o->pooling == PF_POOLING_MODEL && m->sentence.unsupported[0])
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "sentence embeddings: %s is not supported (choose a pooling to embed without it)",
                        m->sentence.unsupported);
    pf_pooling pooling = o->pooling == PF_POOLING_MODEL ? m->sentence.pooling : o->pooling;
    int normalize = o->normalize < 0 ? m->sentence.normalize : o->normalize;
    size_t d = (size_t)m->config.hidden_size;
    for (int first = 0; first < batch && !r; first += m->group->max_batch) {
        int n = batch - first < m->group->max_batch ? batch - first : m->group->max_batch;
        pf_encoding *e = NULL;
        r = pf__encode_locked(m, ids + first, NULL, lengths + first, n, &e);
        for (int b = 0; !r && b < n; b++) {
            float *row = out + (size_t)(first + b) * d;
            pf__pool(e->last_hidden_state + (size_t)e->offsets[b] * d, (size_t)lengths[first + b], d, pooling, row);
            if (!normalize) continue;
            double norm = 0;
            for (size_t i = 0; i < d; i++) norm += (double)row[i] * row[i];
            norm = sqrt(norm);
            for (size_t i = 0; i < d; i++) row[i] = (float)(row[i] / (norm > 1e-12 ? norm : 1e-12));
        }
        pf_encoding_free(e);
    }
    return r;
}

/* text's ids with the post-processor's special tokens, cut to max as transformers truncates
   (the words, before the specials are added). *ids is malloc'ed. */
static pf_result pf__tokenize_truncated(pf_model *m, const char *text, int max, int32_t **ids, int *count) {
    pf_tokenize_options to = pf_tokenize_options_init();
    to.max_length = (size_t)max;
    size_t n = 0, len = strlen(text);
    pf_result r = pf_tokenize_pair(m->tokenizer, text, len, NULL, 0, &to, NULL, NULL, 0, &n);
    if (r && r != PF_ERROR_BUFFER_TOO_SMALL) return PF__FAIL(m, r, "tokenizing: %s", pf_result_string(r));
    *ids = (int32_t *)malloc((n ? n : 1) * sizeof(int32_t));
    if (!*ids) return PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    r = pf_tokenize_pair(m->tokenizer, text, len, NULL, 0, &to, *ids, NULL, n, &n);
    if (r) return PF__FAIL(m, r, "tokenizing: %s", pf_result_string(r));
    *count = (int)n;
    return PF_OK;
}

static pf_result pf__embed_texts_locked(pf_model *m, const char *const *texts, int count, const pf_embed_options *o,
                                        float *out) {
    if (!texts || count < 1 || !out) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "pf_embed_texts needs texts, count >= 1 and embeddings");
    if (!m->tokenizer) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "the model has no tokenizer (pf_embed takes ids)");
    pf_result r = pf__ensure_group(m);
    if (r) return r;
    int max = m->group->cache_len;
    if (m->sentence.max_seq_length > 0 && m->sentence.max_seq_length < max) max = m->sentence.max_seq_length;
    int32_t **rows = (int32_t **)calloc((size_t)count, sizeof *rows);
    int *lengths = (int *)calloc((size_t)count, sizeof(int));
    if (!rows || !lengths) r = PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; !r && i < count; i++) {
        if (!texts[i]) r = PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "text %d is NULL", i);
        else r = pf__tokenize_truncated(m, texts[i], max, &rows[i], &lengths[i]);
        if (!r && lengths[i] < 1) r = PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "text %d has no tokens", i);
    }
    if (!r) r = pf__embed_locked(m, (const int32_t *const *)rows, lengths, count, o, out);
    for (int i = 0; rows && i < count; i++) free(rows[i]);
    free(rows), free(lengths);
    return r;
}

pf_result pf_embed_texts(pf_model *m, const char *const *texts, int count, const pf_embed_options *o, float *embeddings) {
    if (!m) return PF_ERROR_INVALID_ARGUMENT;
    pf_result r = pf__request_lock(m, "pf_embed_texts");
    if (r) return r;
    r = pf__embed_texts_locked(m, texts, count, o, embeddings);
    pf__request_unlock(m);
    return r;
}

pf_result pf_embed(pf_model *m, const int32_t *const *ids, const int *lengths, int batch, const pf_embed_options *o,
                   float *embeddings) {
    if (!m) return PF_ERROR_INVALID_ARGUMENT;
    pf_result r = pf__request_lock(m, "pf_embed");
    if (r) return r;
    r = pf__embed_locked(m, ids, lengths, batch, o, embeddings);
    pf__request_unlock(m);
    return r;
}

pf_result pf_forward(pf_model *m, const int32_t *ids, int batch, int seq_len, float *logits) {
    if (!m) return PF_ERROR_INVALID_ARGUMENT;
    pf_result r = pf__request_lock(m, "pf_forward");
    if (r) return r;
    r = pf__forward_locked(m, ids, batch, seq_len, logits);
    pf__request_unlock(m);
    return r;
}

/* Left-pads rows of ids to the longest: *width, ids [batch][width] and pads [batch] (malloc'd,
   the caller frees both); checks the ids and that each row fits the cache. */
static pf_result pf__pad_rows(pf_model *m, const char *what, const int32_t *const *rows, const int *lengths, int batch,
                              int source, int *width, int32_t **ids, int **pads) {
    *ids = NULL;
    *pads = NULL;
    *width = 0;
    pf_result r;
    if (batch < 1) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "no %s rows", what);
    for (int b = 0; b < batch; b++) {
        if (!rows[b] || lengths[b] < 1 || lengths[b] > m->group->cache_len)
            return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "%s %d: %d tokens (1 to %d fit)", what, b, rows[b] ? lengths[b] : 0,
                            m->group->cache_len);
        if ((r = source ? pf__check_source_ids(m, rows[b], (size_t)lengths[b]) : pf__check_ids(m, rows[b], (size_t)lengths[b])))
            return r;
        if (lengths[b] > *width) *width = lengths[b];
    }
    *ids = (int32_t *)calloc((size_t)batch * *width, sizeof(int32_t));
    *pads = (int *)calloc((size_t)batch, sizeof(int));
    if (!*ids || !*pads) return PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    for (int b = 0; b < batch; b++) {
        (*pads)[b] = *width - lengths[b];
        memcpy(*ids + (size_t)b * *width + (*pads)[b], rows[b], (size_t)lengths[b] * sizeof(int32_t));
    }
    return PF_OK;
}

/* An encoder-decoder's encoder over rows of sources [batch][width] (left pads): its output's keys
   and values in every decoder block's cross cache, rows 0..batch-1. */
static pf_result pf__encoder_pass(pf_model *m, const int32_t *sources, const int *pads, int batch, int width) {
    pf__job job;
    memset(&job, 0, sizeof job);
    job.step.ids = sources;
    job.step.batch = batch;
    job.step.seq_len = width;
    job.step.pad = pads;
    job.encoder_pass = 1;
    return pf__group_run(m->group, PF__JOB_FORWARD, &job);
}

static pf_result pf__forward_seq2seq_locked(pf_model *m, const int32_t *const *sources, const int *source_lengths,
                                            const int32_t *const *decoder_ids, const int *decoder_lengths, int batch,
                                            float *logits) {
    if (!sources || !source_lengths || !decoder_ids || !decoder_lengths || !logits || batch < 1)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "pf_forward_seq2seq needs sources, decoder inputs, their lengths, "
                        "logits and batch >= 1");
    pf_result r = pf__ensure_group(m);
    if (r) return r;
    if (!pf_get_info(m).is_encoder_decoder)
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "model_type \"%s\" (as loaded) is not an encoder-decoder",
                        m->config.model_type);
    if (batch > m->group->max_batch)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "batch %d exceeds max_batch %d", batch, m->group->max_batch);
    int32_t *src = NULL, *dec = NULL;
    int *src_pads = NULL, *dec_pads = NULL, src_width, dec_width;
    size_t vocab = (size_t)m->config.vocab_size;
    float *all = NULL;
    r = pf__pad_rows(m, "source", sources, source_lengths, batch, 1, &src_width, &src, &src_pads);
    if (!r) r = pf__pad_rows(m, "decoder input", decoder_ids, decoder_lengths, batch, 0, &dec_width, &dec, &dec_pads);
    if (!r && !(all = (float *)malloc((size_t)batch * dec_width * vocab * sizeof(float))))
        r = PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    if (!r) r = pf__encoder_pass(m, src, src_pads, batch, src_width);
    if (!r) {
        pf__job job;
        memset(&job, 0, sizeof job);
        job.step.ids = dec;
        job.step.batch = batch;
        job.step.seq_len = dec_width;
        job.step.pad = dec_pads;
        job.step.cross_len = src_width;
        job.step.cross_pad = src_pads;
        job.logits = all;
        job.all_positions = 1;
        r = pf__group_run(m->group, PF__JOB_FORWARD, &job);
    }
    for (int b = 0, row = 0; !r && b < batch; row += decoder_lengths[b++]) /* drop the pads */
        memcpy(logits + (size_t)row * vocab, all + ((size_t)b * dec_width + dec_pads[b]) * vocab,
               (size_t)decoder_lengths[b] * vocab * sizeof(float));
    free(src), free(src_pads), free(dec), free(dec_pads), free(all);
    return r;
}

pf_result pf_forward_seq2seq(pf_model *m, const int32_t *const *source_ids, const int *source_lengths,
                             const int32_t *const *decoder_ids, const int *decoder_lengths, int batch, float *logits) {
    if (!m) return PF_ERROR_INVALID_ARGUMENT;
    pf_result r = pf__request_lock(m, "pf_forward_seq2seq");
    if (r) return r;
    r = pf__forward_seq2seq_locked(m, source_ids, source_lengths, decoder_ids, decoder_lengths, batch, logits);
    pf__request_unlock(m);
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
    /* suppressed tokens, and at the first new token the begin-suppressed ones */
    for (int i = 0; i < o->num_suppress_tokens; i++) scores[o->suppress_tokens[i]] = -INFINITY;
    if (row->length == row->pad + row->prompt)
        for (int i = 0; i < o->num_begin_suppress_tokens; i++) scores[o->begin_suppress_tokens[i]] = -INFINITY;
}

/* forced_bos_token_id at the first generated position of a one-token prompt (an encoder-decoder's
   start token), forced_eos_token_id at the last one max_length allows: every other token -inf,
   the forced one 0, after the other processors, as transformers orders them. */
static void pf__force_tokens(const pf_generate_options *o, const pf__row *row, float *scores, int vocab, long long max_length) {
    int32_t forced = row->length == 1 ? o->forced_bos_token_id : row->length == max_length - 1 ? o->forced_eos_token_id : -1;
    if (forced < 0 || forced >= vocab) return;
    for (int i = 0; i < vocab; i++) scores[i] = -INFINITY;
    scores[forced] = 0.0f;
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

/* A row's streaming state: its text is decoded from new token `window` on, of which `emitted`
   bytes went out. Decoding a window rather than the whole output keeps each token's cost small;
   the window keeps one token before the text still to come, so that what a decoder does to a
   text's first token (Metaspace drops its space) happens to text already emitted. */
typedef struct pf__stream_state {
    int window;
    size_t emitted;
} pf__stream_state;

#define PF__STREAM_WINDOW 8 /* tokens a window grows to before it moves up */

/* Decodes new tokens [from, n) of a row into *buffer (grown as needed); the text's length, or
   (size_t)-1 without memory. */
static size_t pf__stream_decode(pf_model *m, const int32_t *fresh, int from, int n, char **buffer, size_t *buffer_cap) {
    size_t len = 0;
    pf_detokenize(m->tokenizer, fresh + from, (size_t)(n - from), *buffer, *buffer_cap, &len);
    if (len + 1 > *buffer_cap) {
        char *grown = (char *)realloc(*buffer, 2 * len + 64);
        if (!grown) return (size_t)-1;
        *buffer = grown;
        *buffer_cap = 2 * len + 64;
        pf_detokenize(m->tokenizer, fresh + from, (size_t)(n - from), *buffer, *buffer_cap, &len);
    }
    return len;
}

/* Emits the text a row's new tokens complete since the last call: whole UTF-8 characters only. */
static int pf__stream(pf_model *m, const pf_generate_options *o, int row_index, const pf__row *row,
                      pf__stream_state *state, char **buffer, size_t *buffer_cap) {
    int32_t token = row->tokens[row->length - 1];
    const int32_t *fresh = row->tokens + row->pad + row->prompt;
    int n = row->length - row->pad - row->prompt;
    if (!m->tokenizer) return o->stream(o->stream_user, row_index, token, NULL, 0);
    size_t len = pf__stream_decode(m, fresh, state->window, n, buffer, buffer_cap);
    if (len == (size_t)-1) return o->stream(o->stream_user, row_index, token, NULL, 0);
    size_t end = len; /* hold back an incomplete trailing character */
    for (size_t back = 1; back <= 3 && back <= len; back++) {
        unsigned char c = (unsigned char)(*buffer)[len - back];
        if ((c & 0xc0) == 0x80) continue;
        size_t need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
        if (need > back) end = len - back;
        break;
    }
    size_t from = state->emitted < end ? state->emitted : end;
    state->emitted = end > state->emitted ? end : state->emitted;
    int stop = o->stream(o->stream_user, row_index, token, *buffer + from, end - from);
    if (end == len && n - state->window > PF__STREAM_WINDOW) { /* all of it is out: move the window up */
        size_t kept = pf__stream_decode(m, fresh, n - 1, n, buffer, buffer_cap);
        if (kept != (size_t)-1) state->window = n - 1, state->emitted = kept;
    }
    return stop;
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
    else if (o->encoder_no_repeat_ngram_size < 0) bad = "encoder_no_repeat_ngram_size must not be negative";
    else if (o->encoder_no_repeat_ngram_size > 0 && pf__archs[m->config.arch].kind != PF__KIND_SEQ2SEQ)
        bad = "encoder_no_repeat_ngram_size needs an encoder-decoder";
    else if (o->early_stopping < PF_EARLY_STOPPING_HEURISTIC || o->early_stopping > PF_EARLY_STOPPING_NEVER) bad = "unknown early_stopping";
    else if (o->stream && o->num_beams > 1) bad = "streaming needs greedy search or sampling, not beam search";
    else if (o->num_eos_token_ids < 0 || (o->num_eos_token_ids > 0 && !o->eos_token_ids)) bad = "eos_token_ids and their count disagree";
    else if (o->num_bad_words < 0 || (o->num_bad_words > 0 && !o->bad_words)) bad = "bad_words and their count disagree";
    else if (o->num_stop_sequences < 0 || (o->num_stop_sequences > 0 && !o->stop_sequences)) bad = "stop_sequences and their count disagree";
    else if (o->num_suppress_tokens < 0 || (o->num_suppress_tokens > 0 && !o->suppress_tokens) ||
             o->num_begin_suppress_tokens < 0 || (o->num_begin_suppress_tokens > 0 && !o->begin_suppress_tokens))
        bad = "suppress_tokens (or begin_suppress_tokens) and their count disagree";
    if (bad) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "generate options: %s", bad);
    int vocab = m->config.vocab_size;
    for (int i = 0; i < o->num_suppress_tokens + o->num_begin_suppress_tokens; i++) {
        int32_t id = i < o->num_suppress_tokens ? o->suppress_tokens[i] : o->begin_suppress_tokens[i - o->num_suppress_tokens];
        if (id < 0 || id >= vocab)
            return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "suppressed token id %d is outside the vocabulary", (int)id);
    }
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
    /* in long long: an int product wraps for large counts and would pass the check */
    long long rows = (long long)batch * (o->num_beams > 1 ? o->num_beams : o->num_return_sequences);
    if (rows > m->group->max_batch)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT,
                        "%d prompts x %d beams or samples need max_batch %lld in pf_parallelize (it is %d)", batch,
                        o->num_beams > 1 ? o->num_beams : o->num_return_sequences, rows, m->group->max_batch);
    return PF_OK;
}

/* Runs one forward step for all rows: the prefill (step == NULL rows' whole padded prompts) or
   one new token per row. Leaves each row's last-position logits in m->logits. */
/* A decoder's forward step, in chunks of positions when batch x length exceeds the tokens the
   ranks' scratch holds (a long prompt): each chunk appends to the KV cache after the one before,
   with the step's rotary frequencies (as transformers computes the whole prompt's), and the
   logits of its positions (all of them, or each row's last, which the last chunk writes). */
static pf_result pf__forward_in_chunks(pf_model *m, const pf__job *job) {
    const pf__group *g = m->group;
    const pf__step *s = &job->step;
    size_t per_chunk = g->max_tokens / (size_t)s->batch;
    if ((size_t)s->batch * s->seq_len <= g->max_tokens) return pf__group_run(m->group, PF__JOB_FORWARD, job);
    size_t vocab = (size_t)m->config.vocab_size;
    int32_t *ids = (int32_t *)malloc((size_t)s->batch * per_chunk * sizeof(int32_t));
    float *logits = job->all_positions ? (float *)malloc((size_t)s->batch * per_chunk * vocab * sizeof(float)) : NULL;
    pf_result r = ids && (logits || !job->all_positions) ? PF_OK : PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    for (int first = 0; !r && first < s->seq_len; first += (int)per_chunk) {
        int len = s->seq_len - first < (int)per_chunk ? s->seq_len - first : (int)per_chunk;
        pf__job chunk = *job;
        for (int b = 0; b < s->batch; b++)
            memcpy(ids + (size_t)b * len, s->ids + (size_t)b * s->seq_len + first, (size_t)len * sizeof(int32_t));
        chunk.step.ids = ids;
        chunk.step.seq_len = len;
        chunk.step.past = s->past + first;
        if (logits) chunk.logits = logits;
        r = pf__group_run(m->group, PF__JOB_FORWARD, &chunk);
        for (int b = 0; !r && logits && b < s->batch; b++) /* [batch][len] rows into [batch][seq_len] */
            memcpy(job->logits + ((size_t)b * s->seq_len + first) * vocab, logits + (size_t)b * len * vocab,
                   (size_t)len * vocab * sizeof(float));
    }
    free(ids);
    free(logits);
    return r;
}

/* cross_pads, cross_len: an encoder-decoder's source pads of each row and the sources' width
   (the cross caches hold the rows' encoder outputs); NULL, 0 for a decoder. */
static pf_result pf__generate_step(pf_model *m, pf__row *rows, int num_rows, int prefill, int32_t *ids, int *pads,
                                   const int *cross_pads, int cross_len) {
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
    job.step.cross_pad = cross_pads;
    job.step.cross_len = cross_len;
    job.logits = m->logits;
    return pf__forward_in_chunks(m, &job);
}

/* Row i of the caches becomes old row src[i]: the first `length` positions of the decoder's, and
   the first cross_len of the cross caches when cross_len > 0. */
static pf_result pf__reorder_rows(pf_model *m, const int *src, int num_rows, int length, int cross_len) {
    pf__job job;
    memset(&job, 0, sizeof job);
    int *moves = (int *)malloc(2 * (size_t)num_rows * sizeof(int)); /* the rows that change: dst, then src */
    if (!moves) return PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; i < num_rows; i++)
        if (src[i] != i) moves[job.reorder_count] = i, moves[num_rows + job.reorder_count++] = src[i];
    memmove(moves + job.reorder_count, moves + num_rows, (size_t)job.reorder_count * sizeof(int));
    job.reorder_dst = moves;
    job.reorder_src = moves + job.reorder_count;
    job.step.batch = num_rows;
    job.step.past = length;
    job.step.cross_len = cross_len;
    job.reorder_cross = cross_len > 0;
    pf_result r = job.reorder_count ? pf__group_run(m->group, PF__JOB_REORDER, &job) : PF_OK;
    free(moves);
    return r;
}

#ifdef PF_TESTING
/* Test builds poison the logits before each generation and check every row it scores: a row no
   forward wrote (read uninitialised in a release build, where only valgrind would see it) fails
   the request instead. */
static void pf__testing_poison_logits(pf_model *m) {
    size_t count = (size_t)m->group->max_batch * m->config.vocab_size;
    for (size_t i = 0; i < count; i++) m->logits[i] = NAN;
}

static int pf__testing_unwritten(const float *row, int vocab) {
    for (int i = 0; i < vocab; i++)
        if (isnan(row[i])) return 1;
    return 0;
}
#endif

/* The generation itself, with the model's request lock held. */
/* Whether a row whose tokens are tokens[0..length) followed by next ends at next: an eos id, or
   the last token of a stop sequence. The one test of where a row ends, for every search. */
static int pf__ends_here(const pf_generate_options *o, const int32_t *eos, int num_eos, const int32_t *tokens,
                         int length, int32_t next) {
    if (pf__is_eos(o, eos, num_eos, next)) return 1;
    for (int k = 0; k < o->num_stop_sequences; k++) {
        const pf_token_sequence *q = &o->stop_sequences[k];
        int before = q->length - 1; /* the ids before its last */
        if (q->ids[before] == next && length >= before &&
            !memcmp(tokens + length - before, q->ids, (size_t)before * sizeof(int32_t)))
            return 1;
    }
    return 0;
}

/* One generate request: its resolved lengths and ids, the running rows, and (beam search) the
   candidates and finished hypotheses of each prompt. */
typedef struct pf__generation_state {
    pf_model *m;
    const pf_generate_options *o;
    int batch, vocab, width;      /* width: the longest prompt, every row left-padded to it */
    const int32_t *eos;
    int num_eos;
    int32_t pad_token;
    long long max_length;
    int min_length;
    int beams, per_prompt, num_rows, num_candidates;
    size_t capacity;              /* tokens a row can hold */
    pf__row *rows;
    int32_t *pool[2];             /* the rows' tokens; beam search swaps them when beams move */
    int current;                  /* the pool the rows point into */
    float *logits;                /* [num_rows][vocab]: the step's logits of the rows (m->logits, or
                                     a batched request's part of it) */
    int32_t *ids;                 /* scratch for pf__generate_step */
    int *pads, *src;              /* src: beam search's parent row of each row */
    unsigned char *seen;
    pf__candidate *candidates;
    pf__hypothesis *hyps;         /* [batch][beams] */
    int *num_hyps, *open;         /* open: the prompt's search goes on */
    int32_t *next_tokens;
    float *next_scores;
    pf__stream_state *streams;
    char *stream_text;
    size_t stream_cap;
    uint64_t rng;
    /* encoder-decoders: the prompts are the sources, each row's decoder starts at the start token */
    int32_t *sources;             /* [batch][source_width], left-padded; NULL for a decoder */
    int *source_pads;             /* [batch] */
    int *cross_pads;              /* [num_rows]: the source pads of each row's prompt */
    int source_width;
} pf__generation_state;

/* Phase 1: the prompts fit the model and the cache; the lengths as transformers resolves them
   (20 new tokens by default), bounded by the cache. */
static pf_result pf__generation_resolve(pf__generation_state *st, const int32_t *const *prompts, const int *lengths) {
    pf_model *m = st->m;
    const pf_generate_options *o = st->o;
    const pf__group *g = m->group;
    pf_result r;
    for (int b = 0; b < st->batch; b++) {
        if (!prompts[b] || lengths[b] < 1) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "prompt %d is empty", b);
        if ((r = pf__check_ids(m, prompts[b], (size_t)lengths[b]))) return r;
        if (lengths[b] > st->width) st->width = lengths[b];
    }
    if (st->width >= g->cache_len)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "the prompt (%d tokens) leaves no room in the KV cache (%d)", st->width,
                        g->cache_len);
    int width = st->width;
    st->vocab = m->config.vocab_size;
    st->eos = o->num_eos_token_ids ? o->eos_token_ids : m->config.eos_ids;
    st->num_eos = o->num_eos_token_ids ? o->num_eos_token_ids : m->config.num_eos_ids;
    st->pad_token = o->pad_token_id >= 0 ? o->pad_token_id : st->num_eos ? st->eos[0] : 0;
    st->max_length = o->max_new_tokens ? (long long)width + o->max_new_tokens
                     : o->max_length   ? o->max_length
                                       : (width + 20 < m->config.max_positions ? width + 20 : m->config.max_positions);
    if (st->max_length > g->cache_len) st->max_length = g->cache_len;
    long long min_new = o->min_new_tokens ? (long long)width + o->min_new_tokens : o->min_length;
    st->min_length = min_new < INT_MAX ? (int)min_new : INT_MAX; /* longer than any row can grow */
    st->beams = o->num_beams;
    st->per_prompt = st->beams > 1 ? st->beams : o->num_return_sequences;
    st->num_rows = st->batch * st->per_prompt;
    st->capacity = (size_t)(st->max_length > width ? st->max_length : width) + 1;
    /* Beam search keeps transformers' top K of beams x vocab: 2 per beam, or one more than the eos
       ids so that num_beams of them do not end; never more than the beams x vocab that exist. */
    long long per_beam = st->num_eos + 1LL > 2 ? st->num_eos + 1LL : 2;
    st->num_candidates = (int)((per_beam < st->vocab ? per_beam : st->vocab) * st->beams);
    st->rng = o->seed;
    return PF_OK;
}

/* Phase 2: the buffers, and every row as left pads then its prompt. */
static pf_result pf__generation_alloc(pf__generation_state *st, const int32_t *const *prompts, const int *lengths) {
    size_t rows = (size_t)st->num_rows, batch = (size_t)st->batch, beams = (size_t)st->beams;
    st->rows = (pf__row *)calloc(rows, sizeof *st->rows);
    st->pool[0] = (int32_t *)malloc(rows * st->capacity * sizeof(int32_t));
    st->pool[1] = beams > 1 ? (int32_t *)malloc(rows * st->capacity * sizeof(int32_t)) : NULL;
    st->ids = (int32_t *)malloc(rows * (size_t)st->width * sizeof *st->ids);
    st->pads = (int *)malloc(rows * sizeof *st->pads);
    st->src = (int *)malloc(rows * sizeof *st->src);
    st->seen = (unsigned char *)malloc((size_t)st->vocab);
    st->candidates = (pf__candidate *)malloc((size_t)st->vocab * beams * sizeof *st->candidates);
    st->hyps = (pf__hypothesis *)calloc(batch * beams, sizeof *st->hyps);
    st->num_hyps = (int *)calloc(batch, sizeof *st->num_hyps);
    st->open = (int *)malloc(batch * sizeof *st->open);
    st->next_tokens = (int32_t *)malloc(rows * sizeof *st->next_tokens);
    st->next_scores = (float *)malloc(rows * sizeof *st->next_scores);
    st->streams = (pf__stream_state *)calloc(rows, sizeof *st->streams);
    if (!st->rows || !st->pool[0] || (beams > 1 && !st->pool[1]) || !st->candidates || !st->ids || !st->pads ||
        !st->src || !st->seen || !st->hyps || !st->num_hyps || !st->open || !st->next_tokens || !st->next_scores ||
        !st->streams)
        return PF__FAIL(st->m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; i < st->num_rows; i++) {
        int b = i / st->per_prompt;
        pf__row *row = &st->rows[i];
        row->tokens = st->pool[0] + (size_t)i * st->capacity;
        row->pad = st->width - lengths[b];
        row->prompt = lengths[b];
        row->length = st->width;
        for (int t = 0; t < row->pad; t++) row->tokens[t] = st->pad_token;
        memcpy(row->tokens + row->pad, prompts[b], (size_t)lengths[b] * sizeof(int32_t));
        row->score = st->beams == 1 || i % st->beams == 0 ? 0.0f : -1e9f; /* beam 0 alone starts live */
    }
    for (int b = 0; b < st->batch; b++) st->open[b] = 1;
    return PF_OK;
}

/* encoder_no_repeat_ngram_size: row i never completes an n-gram of its prompt's source (its
   last n - 1 tokens followed by the banned one), as transformers' encoder n-gram processor. */
static void pf__ban_source_ngrams(const pf__generation_state *st, int i, float *scores) {
    int n = st->o->encoder_no_repeat_ngram_size;
    const pf__row *row = &st->rows[i];
    if (n <= 0 || !st->sources || row->length < n - 1) return;
    int b = i / st->per_prompt, pad = st->source_pads[b];
    const int32_t *source = st->sources + (size_t)b * st->source_width + pad, *tail = row->tokens + row->length - (n - 1);
    for (int start = 0; start + n <= st->source_width - pad; start++)
        if (!memcmp(source + start, tail, (size_t)(n - 1) * sizeof(int32_t))) scores[source[start + n - 1]] = -INFINITY;
}

/* Phase 3 of an encoder-decoder: the sources through the encoder once per prompt, its output's
   keys and values copied to the prompt's rows (beams or samples), then the start tokens through
   the decoder. */
static pf_result pf__generation_prefill_seq2seq(pf__generation_state *st) {
    pf_model *m = st->m;
    pf_result r = pf__encoder_pass(m, st->sources, st->source_pads, st->batch, st->source_width);
    for (int i = 0; i < st->num_rows; i++) {
        st->src[i] = i / st->per_prompt;
        st->cross_pads[i] = st->source_pads[i / st->per_prompt];
    }
    if (!r && st->per_prompt > 1) r = pf__reorder_rows(m, st->src, st->num_rows, 0, st->source_width);
    return r ? r : pf__generate_step(m, st->rows, st->num_rows, 1, st->ids, st->pads, st->cross_pads, st->source_width);
}

/* Phase 3: the prompts through the model. Beams share their prompt: beam 0 of each prompt is
   prefilled into cache rows 0..batch-1, then copied into its beams' rows, and its logits to each
   beam's place (the first step reads every beam's, which are the same: unwritten rows would be
   read uninitialised). */
static pf_result pf__generation_prefill(pf__generation_state *st) {
    pf_model *m = st->m;
    int beams = st->beams, vocab = st->vocab;
    if (st->sources) return pf__generation_prefill_seq2seq(st);
    if (beams == 1) return pf__generate_step(m, st->rows, st->num_rows, 1, st->ids, st->pads, NULL, 0);
    pf__row *firsts = (pf__row *)malloc((size_t)st->batch * sizeof *firsts);
    if (!firsts) return PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    for (int b = 0; b < st->batch; b++) firsts[b] = st->rows[b * beams];
    pf_result r = pf__generate_step(m, firsts, st->batch, 1, st->ids, st->pads, NULL, 0);
    free(firsts);
    for (int b = st->batch - 1; !r && b >= 0; b--) {
        float *first = m->logits + (size_t)b * beams * vocab;
        if (b > 0) memmove(first, m->logits + (size_t)b * vocab, (size_t)vocab * sizeof(float));
        for (int k = 1; k < beams; k++) memcpy(first + (size_t)k * vocab, first, (size_t)vocab * sizeof(float));
    }
    for (int i = 0; i < st->num_rows; i++) st->src[i] = i / beams;
    return r ? r : pf__reorder_rows(m, st->src, st->num_rows, st->width, 0);
}

/* Phase 4a, greedy or sampling: one token per row (finished rows are fed the pad token); *finished
   when every row has ended or a stream callback stopped the request. */
static pf_result pf__generation_sample_step(pf__generation_state *st, int *finished) {
    pf_model *m = st->m;
    const pf_generate_options *o = st->o;
    int last_step = st->rows[0].length + 1 >= st->max_length, all_done = 1, stopped = 0;
    for (int i = 0; i < st->num_rows; i++) {
        pf__row *row = &st->rows[i];
        float *s = st->logits + (size_t)i * st->vocab;
        int32_t t = st->pad_token;
#ifdef PF_TESTING
        if (!row->done && pf__testing_unwritten(s, st->vocab))
            return PF__FAIL(m, PF_ERROR_DEVICE, "generation read logits row %d holding NaN: no forward wrote it (or the model computed NaN)", i);
#endif
        int live = !row->done, ends = 0;
        if (live) {
            pf__process_scores(o, row, s, st->vocab, st->eos, st->num_eos, st->min_length, st->seen);
            pf__ban_source_ngrams(st, i, s);
            pf__force_tokens(o, row, s, st->vocab, st->max_length);
            t = o->do_sample ? pf__sample(o, s, st->vocab, &st->rng, st->candidates) : pf__argmax(s, st->vocab);
            ends = last_step || pf__ends_here(o, st->eos, st->num_eos, row->tokens, row->length, t);
        }
        row->tokens[row->length++] = t;
        if (live && o->stream && pf__stream(m, o, i, row, &st->streams[i], &st->stream_text, &st->stream_cap)) stopped = 1;
        if (ends) row->done = 1;
        all_done &= row->done;
    }
    *finished = all_done || stopped;
    return PF_OK;
}
/* Beam search, one prompt's candidates: every live beam's log-probabilities (processed) plus its
   score, and the top K of them to the front, best first, in one pass in which a candidate enters
   only if it beats the K-th (a decode step must not sort beams x vocab); when sampling, K drawn
   without replacement from their softmax instead. */
static pf_result pf__beam_candidates(pf__generation_state *st, int b) {
    const pf_generate_options *o = st->o;
    pf__candidate *candidates = st->candidates;
    int n = 0, vocab = st->vocab, K = st->num_candidates;
    for (int k = 0; k < st->beams; k++) {
        int i = b * st->beams + k;
        float *s = st->logits + (size_t)i * vocab;
#ifdef PF_TESTING
        if (pf__testing_unwritten(s, vocab))
            return PF__FAIL(st->m, PF_ERROR_DEVICE, "beam search read logits row %d holding NaN: no forward wrote it (or the model computed NaN)", i);
#endif
        pf__log_softmax(s, vocab);
        pf__process_scores(o, &st->rows[i], s, vocab, st->eos, st->num_eos, st->min_length, st->seen);
        pf__ban_source_ngrams(st, i, s);
        pf__force_tokens(o, &st->rows[i], s, vocab, st->max_length);
        for (int t = 0; t < vocab; t++) {
            candidates[n].score = s[t] + st->rows[i].score;
            candidates[n].beam = k;
            candidates[n++].token = t;
        }
    }
    if (o->do_sample) {
        float max = -INFINITY;
        for (int c = 0; c < n; c++)
            if (candidates[c].score > max) max = candidates[c].score;
        for (int c = 0; c < K; c++) {
            double total = 0, sum = 0, u;
            int pick;
            for (int j = c; j < n; j++) total += exp((double)candidates[j].score - max);
            u = pf__random_unit(&st->rng) * total;
            for (pick = c; pick < n - 1; pick++)
                if ((sum += exp((double)candidates[pick].score - max)) > u) break;
            pf__candidate t = candidates[c];
            candidates[c] = candidates[pick];
            candidates[pick] = t;
        }
        return PF_OK;
    }
    int top = 0; /* candidates[0..top) hold the best so far, in order */
    for (int j = 0; j < n; j++) {
        if (top == K && pf__candidate_cmp(&candidates[j], &candidates[top - 1]) >= 0) continue;
        pf__candidate cand = candidates[j]; /* every slot it may overwrite is read already */
        int at = top < K ? top++ : K - 1;
        for (; at > 0 && pf__candidate_cmp(&cand, &candidates[at - 1]) < 0; at--) candidates[at] = candidates[at - 1];
        candidates[at] = cand;
    }
    return PF_OK;
}

/* A finished beam (parent's new tokens and `token`) with its length-penalised score into the
   prompt's hypotheses: a free slot, or over the worst when better. */
static pf_result pf__beam_hypothesis(pf__generation_state *st, int b, const pf__row *parent, int32_t token, float score) {
    pf__hypothesis *hyps = st->hyps + (size_t)b * st->beams, *slot = NULL;
    if (st->num_hyps[b] < st->beams) {
        slot = &hyps[st->num_hyps[b]++];
    } else {
        slot = &hyps[0];
        for (int h = 1; h < st->beams; h++)
            if (hyps[h].score < slot->score) slot = &hyps[h];
        if (!(score > slot->score)) return PF_OK;
    }
    int new_len = parent->length - st->width;
    int32_t *tokens = (int32_t *)realloc(slot->tokens, (size_t)(new_len + 1) * sizeof(int32_t));
    if (!tokens) return PF__FAIL(st->m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    memcpy(tokens, parent->tokens + st->width, (size_t)new_len * sizeof(int32_t));
    tokens[new_len] = token;
    slot->tokens = tokens;
    slot->length = new_len + 1;
    slot->score = score;
    return PF_OK;
}

/* Beam search, one prompt's choice among its top K as transformers 5 makes it: those of the
   first num_beams that end become hypotheses (kept best num_beams), and the best num_beams that
   do not end run on (src, next_tokens, next_scores); then whether the best running beam can
   still beat the worst hypothesis (open, sticky per prompt). */
static pf_result pf__beam_choose(pf__generation_state *st, int b, int cur_len, int last_step) {
    const pf_generate_options *o = st->o;
    int beams = st->beams, kept = 0, base = b * beams;
    int accept = st->open[b] && !(st->num_hyps[b] == beams && o->early_stopping == PF_EARLY_STOPPING_ON);
    float penalty = powf((float)(cur_len + 1 - st->width), o->length_penalty);
    for (int c = 0; c < st->num_candidates; c++) {
        const pf__candidate *cand = &st->candidates[c];
        const pf__row *parent = &st->rows[base + cand->beam];
        if (!last_step && !pf__ends_here(o, st->eos, st->num_eos, parent->tokens, parent->length, cand->token)) {
            if (kept < beams) { /* runs on */
                st->src[base + kept] = base + cand->beam;
                st->next_tokens[base + kept] = cand->token;
                st->next_scores[base + kept++] = cand->score;
            }
            continue;
        }
        if (c >= beams || !accept) continue;
        pf_result r = pf__beam_hypothesis(st, b, parent, cand->token, cand->score / penalty);
        if (r) return r;
    }
    for (; kept < beams; kept++) { /* every candidate ended: placeholders nobody reads */
        st->src[base + kept] = base;
        st->next_tokens[base + kept] = st->pad_token;
        st->next_scores[base + kept] = -1e9f;
    }
    if (st->open[b] && st->num_hyps[b] == beams) {
        int length = o->early_stopping == PF_EARLY_STOPPING_NEVER && o->length_penalty > 0 ? (int)st->max_length - st->width
                                                                                            : cur_len + 1 - st->width;
        float best = st->next_scores[base] / powf((float)length, o->length_penalty), worst = INFINITY;
        for (int h = 0; h < beams; h++)
            if (st->hyps[base + h].score < worst) worst = st->hyps[base + h].score;
        if (!(best > worst)) st->open[b] = 0;
    }
    return PF_OK;
}

/* Phase 4b, beam search: each prompt's candidates and choice, then the running beams (their
   parents' tokens plus the new one) into the other pool; *finished when the search is over,
   else the cache rows follow their beams. */
static pf_result pf__generation_beam_step(pf__generation_state *st, int *finished) {
    int cur_len = st->rows[0].length, last_step = cur_len + 1 >= st->max_length, any_open = 0, all_full = 1;
    pf_result r = PF_OK;
    for (int b = 0; b < st->batch && !r; b++) {
        r = pf__beam_candidates(st, b);
        if (!r) r = pf__beam_choose(st, b, cur_len, last_step);
        any_open |= st->open[b];
        all_full &= st->num_hyps[b] == st->beams;
    }
    if (r) return r;
    int32_t *next = st->pool[!st->current];
    for (int i = 0; i < st->num_rows; i++) {
        int32_t *dst = next + (size_t)i * st->capacity;
        memcpy(dst, st->rows[st->src[i]].tokens, (size_t)cur_len * sizeof(int32_t));
        dst[cur_len] = st->next_tokens[i];
    }
    st->current = !st->current;
    for (int i = 0; i < st->num_rows; i++) {
        st->rows[i].tokens = next + (size_t)i * st->capacity;
        st->rows[i].length = cur_len + 1;
        st->rows[i].score = st->next_scores[i];
    }
    *finished = last_step || !any_open || (st->o->early_stopping == PF_EARLY_STOPPING_ON && all_full);
    return *finished ? PF_OK : pf__reorder_rows(st->m, st->src, st->num_rows, cur_len, 0);
}

/* Phase 5: each prompt's hypotheses best first (beam search), or each row's new tokens up to
   where it ended. */
static pf_result pf__generation_results(pf__generation_state *st, pf_generation *result) {
    const pf_generate_options *o = st->o;
    int n = st->batch * o->num_return_sequences, beams = st->beams;
    result->tokens = (int32_t **)calloc((size_t)n, sizeof(int32_t *));
    result->lengths = (int *)calloc((size_t)n, sizeof(int));
    result->scores = (float *)calloc((size_t)n, sizeof(float));
    if (!result->tokens || !result->lengths || !result->scores) return PF__FAIL(st->m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    result->num_sequences = n;
    for (int b = 0; b < st->batch; b++) {
        if (beams > 1) qsort(st->hyps + b * beams, (size_t)st->num_hyps[b], sizeof *st->hyps, pf__hypothesis_cmp);
        for (int k = 0; k < o->num_return_sequences; k++) {
            int out = b * o->num_return_sequences + k, length = 0;
            const int32_t *tokens = NULL;
            if (beams > 1 && k < st->num_hyps[b]) {
                tokens = st->hyps[b * beams + k].tokens;
                length = st->hyps[b * beams + k].length;
                result->scores[out] = st->hyps[b * beams + k].score;
            } else if (beams == 1) {
                const pf__row *row = &st->rows[b * st->per_prompt + k];
                tokens = row->tokens + st->width;
                length = row->length - st->width;
                for (int t = 0; t < length; t++) /* cut the pad tokens after its end */
                    if (pf__ends_here(o, st->eos, st->num_eos, row->tokens, st->width + t, tokens[t])) {
                        length = t + 1;
                        break;
                    }
            }
            result->lengths[out] = length;
            result->tokens[out] = (int32_t *)malloc((size_t)(length ? length : 1) * sizeof(int32_t));
            if (!result->tokens[out]) return PF__FAIL(st->m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
            if (length) memcpy(result->tokens[out], tokens, (size_t)length * sizeof(int32_t));
        }
    }
    return PF_OK;
}

static void pf__generation_free(pf__generation_state *st) {
    for (int i = 0; st->hyps && i < st->batch * st->beams; i++) free(st->hyps[i].tokens);
    free(st->rows), free(st->pool[0]), free(st->pool[1]), free(st->ids), free(st->pads), free(st->src), free(st->seen);
    free(st->candidates), free(st->hyps), free(st->num_hyps), free(st->open), free(st->next_tokens), free(st->next_scores);
    free(st->streams), free(st->stream_text);
    free(st->sources), free(st->source_pads), free(st->cross_pads);
}

static pf_result pf__generate_locked(pf_model *m, const int32_t *const *prompts, const int *lengths, int batch,
                                     const pf_generate_options *o, pf_generation *result) {
    pf_result r = pf__ensure_group(m);
    if (r) return r;
    if (m->config.head != PF_HEAD_CAUSAL_LM)
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "model_type \"%s\" is an encoder: it does not generate (pf_encode runs it)",
                        m->config.model_type);
    if ((r = pf__check_generate_options(m, o, batch))) return r;
    pf__generation_state st;
    memset(&st, 0, sizeof st);
    st.m = m;
    st.o = o;
    st.batch = batch;
    st.logits = m->logits;
    memset(result, 0, sizeof *result);
    int32_t start = o->decoder_start_token_id >= 0 ? o->decoder_start_token_id : m->config.decoder_start_token_id;
    const int32_t **starts = NULL; /* an encoder-decoder's decoder prompts: its start token */
    int *start_lengths = NULL;
    if (pf__archs[m->config.arch].kind == PF__KIND_SEQ2SEQ) {
        if (start < 0 || start >= m->config.vocab_size)
            return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "the decoder start token %d is not in the vocabulary (config.json's "
                            "decoder_start_token_id, or the options')", (int)start);
        r = pf__pad_rows(m, "prompt", prompts, lengths, batch, 1, &st.source_width, &st.sources, &st.source_pads);
        starts = (const int32_t **)malloc((size_t)batch * sizeof *starts);
        start_lengths = (int *)malloc((size_t)batch * sizeof *start_lengths);
        if (!r && (!starts || !start_lengths)) r = PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
        for (int b = 0; !r && b < batch; b++) starts[b] = &start, start_lengths[b] = 1;
        if (!r) prompts = starts, lengths = start_lengths;
    }
    if (!r) r = pf__generation_resolve(&st, prompts, lengths);
    if (!r) r = pf__generation_alloc(&st, prompts, lengths);
    if (!r && st.sources && !(st.cross_pads = (int *)malloc((size_t)st.num_rows * sizeof(int))))
        r = PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    pf__rope_reset(m);
#ifdef PF_TESTING
    if (!r) pf__testing_poison_logits(m);
#endif
    if (!r) r = pf__generation_prefill(&st);
    for (int finished = 0; !r && !finished;) {
        r = st.beams > 1 ? pf__generation_beam_step(&st, &finished) : pf__generation_sample_step(&st, &finished);
        if (!r && !finished)
            r = pf__generate_step(m, st.rows, st.num_rows, 0, st.ids, st.pads, st.cross_pads, st.source_width);
    }
    if (!r) r = pf__generation_results(&st, result);
    if (r) pf_generation_free(result);
    pf__generation_free(&st);
    free(starts), free(start_lengths);
    return r;
}

/* =============================================================================================== */
/* continuous batching                                                                             */
/* =============================================================================================== */

/* Greedy and sampling requests from any threads share the forward steps: a scheduler thread
   (started at a model's first such request) admits queued requests into free KV cache rows,
   prefills them, and then runs one decode step for every running row of every admitted request
   at a time; each request samples its own rows with its own options and seed, and leaves when
   they end. All running rows share a clock: the cache position of the next token. A request of
   prompt width W admitted at clock C puts its prompt at positions C - W .. C - 1, the positions
   before as left pads (tokens count their positions from the first real token), so each row
   computes exactly what it would alone; it is admitted only while that holds (W <= C, and its
   max_length fits from C - W) and otherwise waits for the running requests to end (the clock
   starts again at 0 when none runs). While it has requests to run, the scheduler holds the
   model's request lock: the other calls (beam search, streaming, encoder-decoders, pf_forward,
   pf_parallelize, ...) run in between, and a waiting one stops new admissions. */

typedef enum { PF__BATCH_QUEUED, PF__BATCH_RUNNING, PF__BATCH_DONE } pf__batch_state;

typedef struct pf__batch_request {
    pf__generation_state st;
    const int32_t *const *prompts;
    const int *lengths;
    pf_generate_options options;
    pf_generation *result;
    int *cache_rows;               /* [num_rows]: the rows' KV cache rows */
    int *pads;                     /* [num_rows]: their left pads, in cache positions */
    pf__batch_state state;
    pf_result error;
    char message[PF__MESSAGE_SIZE];
    struct pf__batch_request *next;
} pf__batch_request;

struct pf__batcher {
    pthread_mutex_t mutex;
    pthread_cond_t work, done;
    pthread_t thread;
    int stopping;
    pf__batch_request *queue, *running;
    int queued;
    unsigned char *row_used;       /* [max_batch of the busy period's group] */
    int clock;
    int32_t *ids;                  /* a decode step's: [max_batch] */
    int *pads, *cache_rows;        /* [max_batch] */
};

#define PF__BATCH_QUEUE_MAX 1024   /* requests waiting at once by default; more get PF_ERROR_BUSY */
#ifdef PF_TESTING
int pf_testing_batch_rows; /* test hook: the most rows one batched decode step ran */
int pf_testing_batch_queued(pf_model *m); /* test hook: requests waiting in the batcher's queue */
int pf_testing_batch_queued(pf_model *m) {
    pthread_mutex_lock(&m->batcher_start); /* the batcher may be starting on another thread */
    pf__batcher *b = m->batcher;
    pthread_mutex_unlock(&m->batcher_start);
    if (!b) return 0;
    pthread_mutex_lock(&b->mutex);
    int n = b->queued;
    pthread_mutex_unlock(&b->mutex);
    return n;
}
#endif

/* Whether a request shares the steps: greedy or sampling on a decoder, without a stream callback
   (called on the caller's thread, inside its request) and without dynamic rope frequencies (they
   follow the longest sequence of a step). */
static int pf__batchable(const pf_model *m, const pf_generate_options *o) {
    return pf__archs[m->config.arch].kind == PF__KIND_DECODER && o->num_beams == 1 && !o->stream &&
           m->config.rope_type != PF__ROPE_DYNAMIC;
}

static void pf__batch_request_free(pf__batch_request *q) {
    pf__generation_free(&q->st);
    free(q->cache_rows), free(q->pads);
}

/* Ends a request: its result (or failure), its rows given back, its caller woken. The batcher's
   mutex is held. */
static void pf__batch_finish(pf__batcher *b, pf__batch_request *q, pf_result r, const char *message) {
    for (int i = 0; q->cache_rows && i < q->st.num_rows; i++)
        if (q->cache_rows[i] >= 0) b->row_used[q->cache_rows[i]] = 0;
    q->error = r;
    if (r) snprintf(q->message, sizeof q->message, "%s", message);
    q->state = PF__BATCH_DONE;
    pthread_cond_broadcast(&b->done);
}

/* A request's set-up (the checks and lengths of an exclusive request), on the scheduler's thread
   with the request lock held. */
static pf_result pf__batch_prepare(pf_model *m, pf__batch_request *q) {
    pf_result r = pf__ensure_group(m);
    if (r) return r;
    if (m->config.head != PF_HEAD_CAUSAL_LM)
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "model_type \"%s\" is an encoder: it does not generate (pf_encode runs it)",
                        m->config.model_type);
    if ((r = pf__check_generate_options(m, &q->options, q->st.batch))) return r;
    q->st.m = m;
    q->st.o = &q->options;
    if ((r = pf__generation_resolve(&q->st, q->prompts, q->lengths))) return r;
    if ((r = pf__generation_alloc(&q->st, q->prompts, q->lengths))) return r;
    size_t rows = (size_t)q->st.num_rows;
    q->cache_rows = (int *)malloc(rows * sizeof(int));
    q->pads = (int *)malloc(rows * sizeof(int));
    if (!q->cache_rows || !q->pads)
        return PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; i < rows; i++) q->cache_rows[i] = -1;
    return PF_OK;
}

/* Whether the queue's head fits now: free rows for it, and (with requests running or admitted
   with it) its prompt and its whole generation inside the cache at the clock. */
static int pf__batch_fits(const pf__batcher *b, const pf__group *g, const pf__batch_request *q, int busy) {
    int free_rows = 0;
    for (int i = 0; i < g->max_batch; i++) free_rows += !b->row_used[i];
    if (free_rows < q->st.num_rows) return 0;
    if (!busy) return 1;
    return q->st.width <= b->clock && (long long)b->clock - q->st.width + q->st.max_length <= g->cache_len;
}

/* Gives a request free cache rows, its prompt at the clock's positions. */
static void pf__batch_place(pf__batcher *b, pf__batch_request *q) {
    for (int i = 0, k = 0; i < q->st.num_rows; i++) {
        while (b->row_used[k]) k++;
        b->row_used[k] = 1;
        q->cache_rows[i] = k;
        q->pads[i] = b->clock - q->st.width + q->st.rows[i].pad;
    }
}

/* The prefill of the requests admitted together (one forward over all their rows, prompts
   right-aligned at the clock), and their first tokens. A request that ends there, or fails, is
   finished; the others run. */
static void pf__batch_prefill(pf_model *m, pf__batcher *b, pf__batch_request *admitted) {
    int rows = 0, width = 0, vocab = m->config.vocab_size;
    for (pf__batch_request *q = admitted; q; q = q->next) {
        rows += q->st.num_rows;
        if (q->st.width > width) width = q->st.width;
    }
    int32_t *ids = (int32_t *)malloc((size_t)rows * width * sizeof(int32_t));
    int *pads = (int *)malloc((size_t)rows * sizeof(int)), *cache_rows = (int *)malloc((size_t)rows * sizeof(int));
    pf_result r = ids && pads && cache_rows ? PF_OK : PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    int n = 0;
    for (pf__batch_request *q = admitted; !r && q; q = q->next)
        for (int i = 0; i < q->st.num_rows; i++, n++) { /* each row's tokens end at the clock */
            const pf__row *row = &q->st.rows[i];
            int32_t *dst = ids + (size_t)n * width;
            for (int t = 0; t < width - q->st.width; t++) dst[t] = q->st.pad_token;
            memcpy(dst + width - q->st.width, row->tokens, (size_t)q->st.width * sizeof(int32_t));
            pads[n] = q->pads[i];
            cache_rows[n] = q->cache_rows[i];
        }
    if (!r) {
        pf__job job;
        memset(&job, 0, sizeof job);
        job.step.ids = ids;
        job.step.batch = rows;
        job.step.seq_len = width;
        job.step.past = b->clock - width;
        job.step.pad = pads;
        job.step.cache_rows = cache_rows;
        job.step.inv_freq = pf__rope_frequencies(m, width);
        job.logits = m->logits;
        r = pf__forward_in_chunks(m, &job);
    }
    free(ids), free(pads), free(cache_rows);
    int offset = 0;
    for (pf__batch_request *q = admitted, *next; q; q = next) {
        next = q->next;
        int finished = 0;
        pf_result qr = r;
        q->st.logits = m->logits + (size_t)offset * vocab;
        offset += q->st.num_rows;
        if (!qr) qr = pf__generation_sample_step(&q->st, &finished);
        if (!qr && finished) qr = pf__generation_results(&q->st, q->result);
        pthread_mutex_lock(&b->mutex);
        if (qr || finished) {
            pf__batch_finish(b, q, qr, qr ? pf_error_message(m) : "");
        } else {
            q->state = PF__BATCH_RUNNING;
            q->next = b->running;
            b->running = q;
        }
        pthread_mutex_unlock(&b->mutex);
    }
}

/* One decode step of every running row at the clock, then each request's sampling. Requests that
   end are finished (the batcher's mutex is taken for that). */
static pf_result pf__batch_step(pf_model *m, pf__batcher *b) {
    int n = 0, vocab = m->config.vocab_size;
    for (pf__batch_request *q = b->running; q; q = q->next)
        for (int i = 0; i < q->st.num_rows; i++, n++) {
            const pf__row *row = &q->st.rows[i];
            b->ids[n] = row->tokens[row->length - 1];
            b->pads[n] = q->pads[i];
            b->cache_rows[n] = q->cache_rows[i];
        }
    pf__job job;
    memset(&job, 0, sizeof job);
    job.step.ids = b->ids;
    job.step.batch = n;
    job.step.seq_len = 1;
    job.step.past = b->clock;
    job.step.pad = b->pads;
    job.step.cache_rows = b->cache_rows;
    job.step.inv_freq = pf__rope_frequencies(m, b->clock + 1);
    job.logits = m->logits;
    pf_result r = pf__group_run(m->group, PF__JOB_FORWARD, &job);
    if (r) return r;
#ifdef PF_TESTING
    if (n > pf_testing_batch_rows) pf_testing_batch_rows = n;
#endif
    b->clock++;
    int offset = 0;
    for (pf__batch_request *q = b->running, **link = &b->running; q;) {
        pf__batch_request *next = q->next;
        int finished = 0;
        q->st.logits = m->logits + (size_t)offset * vocab;
        offset += q->st.num_rows;
        pf_result qr = pf__generation_sample_step(&q->st, &finished);
        if (!qr && finished) qr = pf__generation_results(&q->st, q->result);
        if (qr || finished) {
            pthread_mutex_lock(&b->mutex);
            *link = next;
            pf__batch_finish(b, q, qr, qr ? pf_error_message(m) : "");
            pthread_mutex_unlock(&b->mutex);
        } else {
            link = &q->next;
        }
        q = next;
    }
    return PF_OK;
}

/* Admits what fits from the queue's head (none while an exclusive call waits for the request
   lock: the running requests then drain) and prefills them together. */
static void pf__batch_admit(pf_model *m, pf__batcher *b) {
    pf__batch_request *admitted = NULL, **tail = &admitted;
    int busy = b->running != NULL;
    for (;;) {
        pthread_mutex_lock(&b->mutex);
        pf__batch_request *q = b->queue;
        if (!q || PF__LOAD_FLAG(m->exclusive_waiting)) {
            pthread_mutex_unlock(&b->mutex);
            break;
        }
        b->queue = q->next;
        b->queued--;
        pthread_mutex_unlock(&b->mutex);
        pf_result r = pf__batch_prepare(m, q);
        if (r) {
            pthread_mutex_lock(&b->mutex);
            pf__batch_finish(b, q, r, pf_error_message(m));
            pthread_mutex_unlock(&b->mutex);
            continue;
        }
        if (!pf__batch_fits(b, m->group, q, busy)) { /* back to the head, prepared anew when it fits */
            int batch = q->st.batch;
            pf__batch_request_free(q);
            memset(&q->st, 0, sizeof q->st);
            q->st.batch = batch;
            q->cache_rows = q->pads = NULL;
            pthread_mutex_lock(&b->mutex);
            q->next = b->queue;
            b->queue = q;
            b->queued++;
            pthread_mutex_unlock(&b->mutex);
            break;
        }
        if (!busy) b->clock = q->st.width;
        busy = 1;
        pf__batch_place(b, q);
        q->next = NULL;
        *tail = q;
        tail = &q->next;
    }
    if (admitted) pf__batch_prefill(m, b, admitted);
}

/* Fails every running request with r (a forward step failed: their caches are no longer known). */
static void pf__batch_fail_running(pf_model *m, pf__batcher *b, pf_result r) {
    pthread_mutex_lock(&b->mutex);
    for (pf__batch_request *q = b->running, *next; q; q = next) {
        next = q->next;
        pf__batch_finish(b, q, r, pf_error_message(m));
    }
    b->running = NULL;
    pthread_mutex_unlock(&b->mutex);
}

/* The scheduler: waits for requests, takes the request lock for a busy period, admits, steps,
   and gives the lock back whenever nothing runs. */
static void *pf__batcher_main(void *arg) {
    pf_model *m = (pf_model *)arg;
    pf__batcher *b = m->batcher;
    int holding = 0;
    pthread_mutex_lock(&b->mutex);
    for (;;) {
        while (!b->stopping && !b->queue && !b->running) pthread_cond_wait(&b->work, &b->mutex);
        if (b->stopping && !b->queue && !b->running) break;
        pthread_mutex_unlock(&b->mutex);
        if (!holding) {
            pthread_mutex_lock(&m->request_lock);
            holding = 1;
            pf_result r = pf__ensure_group(m);
            int cap = m->group ? m->group->max_batch : 0;
            free(b->row_used), free(b->ids), free(b->pads), free(b->cache_rows);
            b->row_used = (unsigned char *)calloc((size_t)(cap ? cap : 1), 1);
            b->ids = (int32_t *)malloc((size_t)(cap ? cap : 1) * sizeof(int32_t));
            b->pads = (int *)malloc((size_t)(cap ? cap : 1) * sizeof(int));
            b->cache_rows = (int *)malloc((size_t)(cap ? cap : 1) * sizeof(int));
            if (!r && (!b->row_used || !b->ids || !b->pads || !b->cache_rows))
                r = PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
            if (r) { /* every queued request fails with it */
                pthread_mutex_lock(&b->mutex);
                for (pf__batch_request *q = b->queue, *next; q; q = next) {
                    next = q->next;
                    q->error = r;
                    snprintf(q->message, sizeof q->message, "%s", pf_error_message(m));
                    q->state = PF__BATCH_DONE;
                }
                b->queue = NULL;
                b->queued = 0;
                pthread_cond_broadcast(&b->done);
                pthread_mutex_unlock(&m->request_lock);
                holding = 0;
                continue; /* with the batcher's mutex held */
            }
        }
        pf__batch_admit(m, b);
        if (b->running) {
            pf_result r = pf__batch_step(m, b);
            if (r) pf__batch_fail_running(m, b, r);
        }
        pthread_mutex_lock(&b->mutex);
        if (!b->running) { /* idle: the exclusive calls may run */
            b->clock = 0;
            pthread_mutex_unlock(&b->mutex);
            pthread_mutex_unlock(&m->request_lock);
            holding = 0;
            pthread_mutex_lock(&b->mutex);
        }
    }
    pthread_mutex_unlock(&b->mutex);
    if (holding) pthread_mutex_unlock(&m->request_lock);
    return NULL;
}

/* The model's batcher, started at its first batched request (under m->batcher_start). */
static pf__batcher *pf__batcher_get(pf_model *m) {
    pthread_mutex_lock(&m->batcher_start);
    if (!m->batcher) {
        pf__batcher *b = (pf__batcher *)calloc(1, sizeof *b);
        if (b) {
            pthread_mutex_init(&b->mutex, NULL);
            pthread_cond_init(&b->work, NULL);
            pthread_cond_init(&b->done, NULL);
            m->batcher = b;
            if (pthread_create(&b->thread, NULL, pf__batcher_main, m)) {
                m->batcher = NULL;
                pthread_mutex_destroy(&b->mutex);
                pthread_cond_destroy(&b->work);
                pthread_cond_destroy(&b->done);
                free(b);
            }
        }
    }
    pthread_mutex_unlock(&m->batcher_start);
    return m->batcher;
}

/* Stops the scheduler (pf_free: no request can be waiting then). */
static void pf__batcher_stop(pf_model *m) {
    pf__batcher *b = m->batcher;
    if (!b) return;
    pthread_mutex_lock(&b->mutex);
    b->stopping = 1;
    pthread_cond_broadcast(&b->work);
    pthread_mutex_unlock(&b->mutex);
    pthread_join(b->thread, NULL);
    pthread_mutex_destroy(&b->mutex);
    pthread_cond_destroy(&b->work);
    pthread_cond_destroy(&b->done);
    free(b->row_used), free(b->ids), free(b->pads), free(b->cache_rows);
    free(b);
    m->batcher = NULL;
}

/* A batched request from the caller's thread: queued, then waited for. */
static pf_result pf__generate_batched(pf_model *m, const int32_t *const *prompts, const int *lengths, int batch,
                                      const pf_generate_options *o, pf_generation *result) {
    if (pf__lock_holder == m) /* a stream callback of an exclusive request: the scheduler would wait for it */
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "pf_generate was called from inside a request on the same model (a "
                        "stream callback?); it would wait for that request forever");
    pf__batcher *b = pf__batcher_get(m);
    if (!b) return PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "cannot start the batching thread");
    pf__batch_request q;
    memset(&q, 0, sizeof q);
    q.prompts = prompts;
    q.lengths = lengths;
    q.options = *o;
    q.result = result;
    q.st.batch = batch;
    int most = m->parallel_options.max_queued_requests > 0 ? m->parallel_options.max_queued_requests : PF__BATCH_QUEUE_MAX;
    pthread_mutex_lock(&b->mutex);
    if (b->queued >= most) {
        pthread_mutex_unlock(&b->mutex);
        return PF__FAIL(m, PF_ERROR_BUSY, "%d requests are waiting already (max_queued_requests): try again later", most);
    }
    pf__batch_request **tail = &b->queue;
    while (*tail) tail = &(*tail)->next;
    *tail = &q;
    b->queued++;
    pthread_cond_signal(&b->work);
    while (q.state != PF__BATCH_DONE) pthread_cond_wait(&b->done, &b->mutex);
    pthread_mutex_unlock(&b->mutex);
    pf_result r = q.error;
    if (r) {
        pf_generation_free(result);
        PF__FAIL(m, r, "%s", q.message);
    }
    pf__batch_request_free(&q);
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
    pf_generate_options o = options ? *options : m->generate_defaults;
    if (pf__batchable(m, &o)) return pf__generate_batched(m, prompts, prompt_lengths, batch, &o, result);
    pf_result r = pf__request_lock(m, "pf_generate");
    if (r) return r;
    r = pf__generate_locked(m, prompts, prompt_lengths, batch, &o, result);
    pf__request_unlock(m);
    return r;
}

pf_result pf_generate(pf_model *m, const int32_t *prompt, int prompt_len, const pf_generate_options *options,
                      int32_t *out, int out_capacity, int *num_out) {
    if (!m) return PF_ERROR_INVALID_ARGUMENT;
    if (num_out) *num_out = 0;
    if (!prompt || prompt_len < 1 || !out || out_capacity < 0 || !num_out)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "pf_generate needs a prompt of at least one id, out and num_out");
    pf_generate_options o = options ? *options : m->generate_defaults;
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
    if (!m->tokenizer)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "the model has no tokenizer%s%s", m->tokenizer_missing[0] ? ": " : "",
                        m->tokenizer_missing);
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
    size_t kept = 0; /* special tokens left out, as transformers' decode(skip_special_tokens=True) */
    for (int i = 0; i < g.lengths[0]; i++)
        if (!pf_tokenizer_is_special(m->tokenizer, g.tokens[0][i])) g.tokens[0][kept++] = g.tokens[0][i];
    g.lengths[0] = (int)kept;
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
