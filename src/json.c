#include "internal.h"
/* =============================================================================================== */
/* JSON                                                                                            */
/* =============================================================================================== */

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
    if (!strpbrk(buf, ".eE")) { /* Python's json.loads gives an int: kept exact where int64 holds it */
        errno = 0;
        v->integer = strtoll(buf, &endp, 10);
        v->integral = errno == 0;
    }
    v->type = PF__JSON_NUMBER;
    p->at = q;
    return 0;
}

PF_PRIVATE void pf__json_free(pf__json *root) {
    if (!root) return;
    /* The block chain hangs before the root node (see pf__json_parse). */
    pf__json_block *b = *((pf__json_block **)root - 2);
    while (b) {
        pf__json_block *next = b->next;
        free(b);
        b = next;
    }
}

PF_PRIVATE pf__json *pf__json_parse(const char *text, size_t len, char *err, size_t err_size) {
    pf__json_parser p;
    memset(&p, 0, sizeof p);
    p.text = p.at = text;
    p.end = text + len;
    p.err = err;
    p.err_size = err_size;
    if (err && err_size) err[0] = 0;
    if (len > PF__MAX_TEXT_FILE) { /* what a file may hold, for text built or passed in memory too */
        pf__format(err, err_size, PF_ERROR_FORMAT, "the JSON text is larger than %zu MiB", PF__MAX_TEXT_FILE >> 20);
        return NULL;
    }
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
PF_PRIVATE const pf__json *pf__json_get(const pf__json *obj, const char *key) {
    const pf__json *found = NULL;
    if (!obj || obj->type != PF__JSON_OBJECT) return NULL;
    for (const pf__json *c = obj->first; c; c = c->next)
        if (strcmp(c->key, key) == 0) found = c;
    return found;
}

/* "a.b": key b of the object under key a (one level, as policies.inc's keys need). */
PF_PRIVATE const pf__json *pf__json_get_path(const pf__json *obj, const char *path) {
    const char *dot = strchr(path, '.');
    char outer[64];
    if (!dot) return pf__json_get(obj, path);
    if ((size_t)(dot - path) >= sizeof outer) return NULL;
    memcpy(outer, path, (size_t)(dot - path));
    outer[dot - path] = 0;
    return pf__json_get(pf__json_get(obj, outer), dot + 1);
}

/* Reads and parses a JSON file; on failure writes "FILE: what" into message. */
PF_PRIVATE pf_result pf__json_load(const char *path, pf__json **out, char *message, size_t size) {
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

