#include "internal.h"
/* =============================================================================================== */
/* chat templates: the subset of Jinja that instruct checkpoints' templates use                   */
/* =============================================================================================== */

/* tokenizer_config.json's chat_template is a Jinja template that transformers renders with
   jinja2's ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, loopcontrols), the
   variables messages, add_generation_prompt, tools (the caller's, else None) / documents (None), enable_thinking when
   the caller gives it, the tokenizer's special tokens, and the globals raise_exception,
   strftime_now and namespace. This section lexes and parses such a template into a tree, refusing what it does not know by name, then renders it.
   Every allocation of a render lives in one arena freed at the end, and failures longjmp back to
   the entry point with their message: a hostile template cannot leak, and is bounded in nesting,
   steps, memory and output. */

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

#if defined(__MINGW32__) /* its printf is C99's (__USE_MINGW_ANSI_STDIO), which GCC calls gnu_printf there */
__attribute__((noreturn, format(gnu_printf, 3, 4)))
#elif defined(__GNUC__)
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

/* Days in a month of the proleptic Gregorian calendar (2024-02 has 29, 2023-02 and 1900-02 28). */
static int pf__chat_days_in_month(int year, int month) {
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (month < 1 || month > 12) return 0;
    int leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    return days[month - 1] + (month == 2 && leap);
}

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
            month > 12 || day < 1 || day > pf__chat_days_in_month(year, month) || hour > 23 || minute > 59 ||
            second > 60 || year < 1)
            pf__chat_fail(c, PF_ERROR_INVALID_ARGUMENT, "chat template: the date \"%.40s\" is not YYYY-MM-DD [HH:MM[:SS]] "
                          "(a day that exists)", c->date);
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

/* The filters with more than a few lines, each given its evaluated arguments a. */
static pf__jv pf__chat_filter_tojson(pf__chat *c, pf__chat_args *a, pf__jv v, int line) {
    pf__chat_args_check(c, a, 1, "indent,sort_keys,ensure_ascii");
    pf__jv *indent = pf__chat_arg(a, 0, "indent"), *sort = pf__chat_arg(a, -1, "sort_keys"), *ascii = pf__chat_arg(a, -1, "ensure_ascii");
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

static pf__jv pf__chat_filter_join(pf__chat *c, pf__chat_args *a, pf__jv v, int line) {
    pf__chat_args_check(c, a, 2, "d,attribute");
    pf__jv *sep = pf__chat_arg(a, 0, "d"), *attr = pf__chat_arg(a, 1, "attribute");
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

/* select / reject (by_attr: selectattr / rejectattr), keeping the items whose test is keep_if. */
static pf__jv pf__chat_filter_select(pf__chat *c, pf__chat_args *a, pf__jv v, int by_attr, int keep_if,
                                     const char *callee, int line) {
    pf__jlist *items = pf__chat_iterable(c, v, line);
    if (a->num_kw) pf__chat_fail(c, PF_ERROR_UNSUPPORTED, "chat template: line %d: %s with keyword arguments is not supported", line, callee);
    if (by_attr && a->num_pos < 1) pf__chat_fail(c, PF_ERROR_INVALID_ARGUMENT, "chat template: line %d: %s needs an attribute", line, callee);
    int first_test = by_attr ? 1 : 0;
    pf__jv out = pf__jv_new_list(c, items->n, 0);
    size_t count = 0;
    pf__chat_args test_args;
    memset(&test_args, 0, sizeof test_args);
    test_args.line = line;
    test_args.callee = callee;
    for (int k = first_test + 1; k < a->num_pos; k++) test_args.pos[test_args.num_pos++] = a->pos[k];
    if (a->num_pos > first_test) pf__chat_need_string(c, a->pos[first_test], "the test name", line);
    for (size_t i = 0; i < items->n; i++) {
        pf__jv x = by_attr ? pf__chat_attribute_path(c, items->items[i], a->pos[0], line) : items->items[i];
        int pass = a->num_pos > first_test ? pf__chat_test(c, x, a->pos[first_test].u.str.s, a->pos[first_test].u.str.n, &test_args, line)
                                          : pf__chat_truthy(x);
        if (pass == keep_if) out.u.list->items[count++] = items->items[i];
    }
    out.u.list->n = count;
    return out;
}

static pf__jv pf__chat_filter_map(pf__chat *c, pf__chat_args *a, pf__jv v, int line) {
    pf__chat_args_check(c, a, 0, "attribute,default");
    pf__jv *attr = pf__chat_arg(a, -1, "attribute"), *fallback = pf__chat_arg(a, -1, "default");
    if (!attr) pf__chat_fail(c, PF_ERROR_UNSUPPORTED, "chat template: line %d: map without attribute= is not supported", line);
    pf__jlist *items = pf__chat_iterable(c, v, line);
    pf__jv out = pf__jv_new_list(c, items->n, 0);
    for (size_t i = 0; i < items->n; i++) {
        pf__jv x = pf__chat_attribute_path(c, items->items[i], *attr, line);
        out.u.list->items[i] = x.type == PF__JV_UNDEFINED && fallback ? *fallback : x;
    }
    return out;
}

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
    if (PF__IS("tojson")) return pf__chat_filter_tojson(c, &a, v, line);
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
    if (PF__IS("join")) return pf__chat_filter_join(c, &a, v, line);
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
    if (PF__IS("selectattr") || PF__IS("rejectattr") || PF__IS("select") || PF__IS("reject"))
        return pf__chat_filter_select(c, &a, v, PF__IS("selectattr") || PF__IS("rejectattr"),
                                      PF__IS("selectattr") || PF__IS("select"), callee, line);
    if (PF__IS("map")) return pf__chat_filter_map(c, &a, v, line);
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

/* x ** y on floats as Python computes it: 0.0 to a negative power raises ZeroDivisionError, a
   negative base to a fractional power gives a complex number, and a finite result too large for
   a float raises OverflowError; C's pow would give inf or NaN for each. */
static pf__jv pf__chat_float_pow(pf__chat *c, double x, double y, int line) {
    if (x == 0 && y < 0)
        pf__chat_fail(c, PF_ERROR_INVALID_ARGUMENT, "chat template: line %d: 0.0 cannot be raised to a negative power "
                      "(ZeroDivisionError)", line);
    if (x < 0 && isfinite(x) && isfinite(y) && y != floor(y))
        pf__chat_fail(c, PF_ERROR_UNSUPPORTED, "chat template: line %d: a negative number to a fractional power is a "
                      "complex number, which is not supported", line);
    double r = pow(x, y);
    if (isinf(r) && isfinite(x) && isfinite(y))
        pf__chat_fail(c, PF_ERROR_INVALID_ARGUMENT, "chat template: line %d: %g ** %g is too large for a float "
                      "(OverflowError)", line, x, y);
    return pf__jv_float(r);
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
            if (y < 0) return pf__chat_float_pow(c, (double)x, (double)y, line);
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
    case PF__OP_POW: return pf__chat_float_pow(c, x, y, line);
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

/* ---- values from JSON: messages and tools given as JSON text ---- */

/* A parsed JSON value as the template sees Python's json.loads of it: objects keep their key
   order (the last of repeated keys wins, in the first one's place), integers stay integers.
   Building a dict costs a step per key already in it (keys are found by a scan). */
static pf__jv pf__chat_from_json(pf__chat *c, const pf__json *j) {
    switch (j->type) {
    case PF__JSON_NULL: return pf__jv_none();
    case PF__JSON_BOOL: return pf__jv_bool(j->boolean);
    case PF__JSON_NUMBER: return j->integral ? pf__jv_int(j->integer) : pf__jv_float(j->number);
    case PF__JSON_STRING: return pf__jv_str(j->string, j->string_len);
    case PF__JSON_ARRAY: {
        pf__jv list = pf__jv_new_list(c, j->count, 0);
        size_t i = 0;
        for (const pf__json *item = j->first; item; item = item->next) list.u.list->items[i++] = pf__chat_from_json(c, item);
        return list;
    }
    case PF__JSON_OBJECT: {
        pf__jv dict = pf__jv_new_dict(c, 0);
        for (const pf__json *member = j->first; member; member = member->next) {
            c->steps += (long)dict.u.dict->n;
            pf__chat_step(c, 0);
            pf__jdict_set(c, dict.u.dict, pf__jv_str(member->key, member->key_len), pf__chat_from_json(c, member));
        }
        return dict;
    }
    }
    return pf__jv_none();
}

/* transformers' _alias_reasoning_fields: a message with reasoning under any of its names gets it
   as "thinking" (first) and "reasoning_content" (last) too, as {"thinking": r, **m,
   "reasoning_content": r} builds it. */
static pf__jv pf__chat_alias_reasoning(pf__chat *c, pf__jv message) {
    static const char *const names[] = {"reasoning_content", "thinking", "reasoning"};
    pf__jv *reasoning = NULL;
    for (int k = 0; k < 3 && !reasoning; k++) {
        pf__jv *v = pf__jdict_find(c, message.u.dict, pf__jv_cstr(names[k]));
        if (v && v->type != PF__JV_NONE) reasoning = v;
    }
    if (!reasoning) return message;
    pf__jv value = *reasoning, aliased = pf__jv_new_dict(c, 0);
    pf__jdict_set_cstr(c, aliased.u.dict, "thinking", value);
    for (size_t i = 0; i < message.u.dict->n; i++) pf__jdict_set(c, aliased.u.dict, message.u.dict->keys[i], message.u.dict->values[i]);
    pf__jdict_set_cstr(c, aliased.u.dict, "reasoning_content", value);
    return aliased;
}

/* The messages variable from a JSON array of message objects, each with a string "role". */
static pf__jv pf__chat_messages_from_json(pf__chat *c, const pf__json *messages) {
    pf__jv list = pf__jv_new_list(c, messages->count, 0);
    size_t i = 0;
    for (const pf__json *m = messages->first; m; m = m->next, i++) {
        const pf__json *role = pf__json_get(m, "role");
        if (m->type != PF__JSON_OBJECT)
            pf__chat_fail(c, PF_ERROR_INVALID_ARGUMENT, "pf_apply_chat_template_json: message %zu is not an object", i);
        if (!role || role->type != PF__JSON_STRING)
            pf__chat_fail(c, PF_ERROR_INVALID_ARGUMENT, "pf_apply_chat_template_json: message %zu has no \"role\" string", i);
        list.u.list->items[i] = pf__chat_alias_reasoning(c, pf__chat_from_json(c, m));
    }
    return list;
}

/* ---- the public entry points ---- */

pf_chat_options pf_chat_options_init(void) {
    pf_chat_options o;
    memset(&o, 0, sizeof o);
    o.add_generation_prompt = 1;
    o.enable_thinking = -1; /* undefined, as transformers leaves it when not given */
    return o;
}

const char *pf_tokenizer_chat_template(const pf_tokenizer *tokenizer) {
    return tokenizer ? tokenizer->chat_template : NULL;
}

/* Lexes, parses and renders; every failure longjmps here. Kept apart from the entry point so
   that nothing it changes after setjmp lives in its own locals. */
static void pf__chat_run(pf__chat *c, const char *template_text, const pf_chat_message *messages, int count,
                         const pf__json *json_messages, const pf__json *tools, const pf_chat_options *options,
                         const char *bos, const char *eos) {
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

    pf__jv list = json_messages ? pf__chat_messages_from_json(c, json_messages) : pf__jv_new_list(c, (size_t)count, 0);
    for (int i = 0; !json_messages && i < count; i++) {
        pf__jv m = pf__jv_new_dict(c, 0);
        if (!messages[i].role) pf__chat_fail(c, PF_ERROR_INVALID_ARGUMENT, "pf_apply_chat_template: message %d has no role", i);
        pf__jdict_set_cstr(c, m.u.dict, "role", pf__jv_cstr(messages[i].role));
        if (messages[i].content) pf__jdict_set_cstr(c, m.u.dict, "content", pf__jv_cstr(messages[i].content));
        list.u.list->items[i] = m;
    }
    pf__chat_bind(c, "messages", 8, list);
    pf__chat_bind(c, "add_generation_prompt", 21, pf__jv_bool(options->add_generation_prompt));
    pf__chat_bind(c, "tools", 5, tools ? pf__chat_from_json(c, tools) : pf__jv_none());
    pf__chat_bind(c, "documents", 9, pf__jv_none());
    if (options->enable_thinking == 0 || options->enable_thinking == 1)
        pf__chat_bind(c, "enable_thinking", 15, pf__jv_bool(options->enable_thinking));
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
                                 const pf__json *json_messages, const pf__json *tools, const pf_chat_options *options,
                                 const char *bos, const char *eos) {
    if (setjmp(c->fail)) return c->code;
    pf__chat_run(c, template_text, messages, count, json_messages, tools, options, bos, eos);
    return PF_OK;
}

/* Parses optional JSON text that must be an array; *out NULL when text is NULL. */
static pf_result pf__chat_parse_json_list(const char *text, const char *what, pf__json **out, char *error, size_t error_size) {
    char message[256];
    *out = NULL;
    if (!text) return PF_OK;
    message[0] = 0;
    if (!(*out = pf__json_parse(text, strlen(text), message, sizeof message))) {
        snprintf(error, error_size, "%s is not JSON: %s", what, message);
        return PF_ERROR_INVALID_ARGUMENT;
    }
    if ((*out)->type != PF__JSON_ARRAY) {
        pf__json_free(*out);
        *out = NULL;
        snprintf(error, error_size, "%s must be a JSON array", what);
        return PF_ERROR_INVALID_ARGUMENT;
    }
    return PF_OK;
}

/* pf_apply_chat_template and pf_apply_chat_template_json: the conversation as role/content pairs
   (messages, count) or as JSON text (messages_json). */
static pf_result pf__chat_apply(const pf_tokenizer *tokenizer, const pf_chat_message *messages, int count,
                                const char *messages_json, const pf_chat_options *options, char **text, char *error,
                                size_t error_size) {
    pf__chat c;
    pf_chat_options defaults = pf_chat_options_init();
    const char *template_text;
    const char *call = messages_json ? "pf_apply_chat_template_json" : "pf_apply_chat_template";
    pf__json *json_messages = NULL, *tools = NULL;
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
        snprintf(error, error_size, "%s: NULL or negative argument", call);
        return PF_ERROR_INVALID_ARGUMENT;
    }
    if (!messages_json && count == 0) { /* as transformers */
        snprintf(error, error_size, "%s: an empty conversation: give at least one message", call);
        return PF_ERROR_INVALID_ARGUMENT;
    }
    if (options->enable_thinking < -1 || options->enable_thinking > 1) {
        snprintf(error, error_size, "%s: enable_thinking is %d: give -1 (undefined), 0 or 1", call, options->enable_thinking);
        return PF_ERROR_INVALID_ARGUMENT;
    }
    template_text = options->chat_template ? options->chat_template : tokenizer ? tokenizer->chat_template : NULL;
    if (!template_text) {
        snprintf(error, error_size, "%s", tokenizer && tokenizer->chat_template_note ? tokenizer->chat_template_note
                                          : "pf_apply_chat_template: the tokenizer has no chat template (tokenizer_config.json's "
                                            "chat_template, or chat_template.jinja) and none was given");
        return PF_ERROR_INVALID_ARGUMENT;
    }
    if ((r = pf__chat_parse_json_list(messages_json, "pf_apply_chat_template_json: the messages", &json_messages, error,
                                      error_size)) ||
        (r = pf__chat_parse_json_list(options->tools, "pf_chat_options.tools", &tools, error, error_size))) {
        pf__json_free(json_messages);
        return r;
    }
    if (json_messages && json_messages->count == 0) {
        snprintf(error, error_size, "%s: an empty conversation: give at least one message", call);
        pf__json_free(json_messages);
        pf__json_free(tools);
        return PF_ERROR_INVALID_ARGUMENT;
    }
    memset(&c, 0, sizeof c);
    c.error = error;
    c.error_size = error_size;
    c.date = options->date;
    r = pf__chat_render(&c, template_text, messages, count, json_messages, tools, options,
                        options->bos_token ? options->bos_token : tokenizer ? tokenizer->bos_token : NULL,
                        options->eos_token ? options->eos_token : tokenizer ? tokenizer->eos_token : NULL);
    while (c.arena) {
        pf__arena_block *next = c.arena->next;
        free(c.arena);
        c.arena = next;
    }
    pf__json_free(json_messages);
    pf__json_free(tools);
    if (r != PF_OK) {
        free(c.out);
        return r;
    }
    *text = c.out;
    return PF_OK;
}

pf_result pf_apply_chat_template(const pf_tokenizer *tokenizer, const pf_chat_message *messages, int count,
                                 const pf_chat_options *options, char **text, char *error, size_t error_size) {
    return pf__chat_apply(tokenizer, messages, count, NULL, options, text, error, error_size);
}

pf_result pf_apply_chat_template_json(const pf_tokenizer *tokenizer, const char *messages_json,
                                      const pf_chat_options *options, char **text, char *error, size_t error_size) {
    if (!messages_json) {
        if (error && error_size) snprintf(error, error_size, "pf_apply_chat_template_json: NULL messages");
        if (text) *text = NULL;
        return PF_ERROR_INVALID_ARGUMENT;
    }
    return pf__chat_apply(tokenizer, NULL, 0, messages_json, options, text, error, error_size);
}
