#include "internal.h"
/* =============================================================================================== */
/* constrained JSON output: a JSON Schema subset compiled to a pushdown automaton over bytes, and   */
/* the mask it puts on a row's scores through the vocabulary's token texts                         */
/* =============================================================================================== */

/* A compiled schema is a graph of nodes (indices, so that $ref may recurse). A value being read is
   a path: a stack of frames, one per open container or scalar. anyOf forks a path into one per
   alternative, so a matcher holds a small set of paths; every other choice is decided by the
   next byte (a declared key or a literal by the bytes typed so far; a number ends at the first
   byte that cannot continue it). */

enum { PF__JS_ANY, PF__JS_OBJECT, PF__JS_ARRAY, PF__JS_STRING, PF__JS_NUMBER, PF__JS_INTEGER, PF__JS_LITERALS, PF__JS_ANYOF };

typedef struct pf__js_node {
    int kind;
    int first, count;   /* OBJECT: its properties in props; LITERALS: texts in texts; ANYOF: nodes in alts */
    int values;         /* OBJECT with free keys: the values' node; ARRAY: the items' node */
    int free_keys;      /* OBJECT: any key (no properties declared, additionalProperties not false) */
    uint64_t required;  /* OBJECT: a bit per property */
    int min_items, max_items; /* ARRAY; max_items -1: none */
} pf__js_node;

typedef struct pf__js_text {
    char *bytes; /* a literal or a key, as JSON text (a key with its quotes) */
    size_t len;
} pf__js_text;

typedef struct pf__js_property {
    int key;  /* in texts */
    int node;
} pf__js_property;

struct pf__json_schema {
    pf__js_node *nodes;
    int num_nodes, nodes_cap;
    pf__js_property *props;
    int num_props, props_cap;
    pf__js_text *texts;
    int num_texts, texts_cap;
    int *alts;
    int num_alts, alts_cap;
    int root;
    int true_false_null; /* the LITERALS node an untyped value starting with t, f or n reads */
};

#define PF__JS_MAX_CHOICES 64   /* properties of an object, literals of an enum: a bit each */
#define PF__JS_MAX_WHITESPACE 16 /* consecutive whitespace bytes between tokens: a model cannot pad forever */
#define PF__JS_MAX_DIGITS 24     /* bytes of a number */
#define PF__JS_MAX_REFS 64

/* ---- compiling ---- */

typedef struct pf__js_compiler {
    pf__json_schema *s;
    const pf__json *root;
    char *err;
    size_t err_size;
    struct { const char *name; int node; } refs[PF__JS_MAX_REFS];
    int num_refs, depth;
} pf__js_compiler;

static int pf__js_grow(void **items, int *cap, int need, size_t size) {
    if (need <= *cap) return 0;
    int cap2 = *cap ? *cap * 2 : 16;
    while (cap2 < need) cap2 *= 2;
    void *grown = realloc(*items, (size_t)cap2 * size);
    if (!grown) return -1;
    *items = grown;
    *cap = cap2;
    return 0;
}

static int pf__js_fail(pf__js_compiler *c, const char *fmt, const char *what) {
    if (c->err && c->err_size && !c->err[0]) snprintf(c->err, c->err_size, fmt, what);
    return -1;
}

static int pf__js_new_node(pf__js_compiler *c, int kind) {
    pf__json_schema *s = c->s;
    if (pf__js_grow((void **)&s->nodes, &s->nodes_cap, s->num_nodes + 1, sizeof *s->nodes))
        return pf__js_fail(c, "%s", "out of memory");
    pf__js_node *n = &s->nodes[s->num_nodes];
    memset(n, 0, sizeof *n);
    n->kind = kind;
    n->max_items = -1;
    return s->num_nodes++;
}

/* Reserves count consecutive entries of an array; the first's index, -1 without memory. */
static int pf__js_reserve(pf__js_compiler *c, void **items, int *num, int *cap, int count, size_t size) {
    if (pf__js_grow(items, cap, *num + count, size)) return pf__js_fail(c, "%s", "out of memory");
    int first = *num;
    if (count > 0) memset((char *)*items + (size_t)first * size, 0, (size_t)count * size);
    *num += count;
    return first;
}

typedef struct pf__js_buffer {
    char *bytes;
    size_t len, cap;
    int failed;
} pf__js_buffer;

static void pf__js_put(pf__js_buffer *b, const char *bytes, size_t n) {
    if (b->failed) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = (b->len + n + 1) * 2;
        char *grown = (char *)realloc(b->bytes, cap);
        if (!grown) {
            b->failed = 1;
            return;
        }
        b->bytes = grown, b->cap = cap;
    }
    memcpy(b->bytes + b->len, bytes, n);
    b->len += n;
    b->bytes[b->len] = 0;
}

static void pf__js_put_string(pf__js_buffer *b, const char *text, size_t len) {
    pf__js_put(b, "\"", 1);
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)text[i];
        char esc[8];
        if (ch == '"' || ch == '\\') esc[0] = '\\', esc[1] = (char)ch, pf__js_put(b, esc, 2);
        else if (ch < 0x20) snprintf(esc, sizeof esc, "\\u%04x", ch), pf__js_put(b, esc, 6);
        else pf__js_put(b, (const char *)&text[i], 1);
    }
    pf__js_put(b, "\"", 1);
}

/* A value as compact JSON text: the one spelling an enum or const value is matched in. */
static void pf__js_serialize(pf__js_buffer *b, const pf__json *v) {
    char number[40];
    const pf__json *child;
    switch (v->type) {
    case PF__JSON_NULL: pf__js_put(b, "null", 4); break;
    case PF__JSON_BOOL: v->boolean ? pf__js_put(b, "true", 4) : pf__js_put(b, "false", 5); break;
    case PF__JSON_NUMBER:
        if (v->number == floor(v->number) && fabs(v->number) < 1e15) snprintf(number, sizeof number, "%.0f", v->number);
        else snprintf(number, sizeof number, "%.17g", v->number);
        pf__js_put(b, number, strlen(number));
        break;
    case PF__JSON_STRING: pf__js_put_string(b, v->string, v->string_len); break;
    case PF__JSON_ARRAY:
        pf__js_put(b, "[", 1);
        for (child = v->first; child; child = child->next) {
            if (child != v->first) pf__js_put(b, ",", 1);
            pf__js_serialize(b, child);
        }
        pf__js_put(b, "]", 1);
        break;
    case PF__JSON_OBJECT:
        pf__js_put(b, "{", 1);
        for (child = v->first; child; child = child->next) {
            if (child != v->first) pf__js_put(b, ",", 1);
            pf__js_put_string(b, child->key, child->key_len);
            pf__js_put(b, ":", 1);
            pf__js_serialize(b, child);
        }
        pf__js_put(b, "}", 1);
        break;
    }
}

/* Stores text i (a literal's or a key's spelling). */
static int pf__js_set_text(pf__js_compiler *c, int i, const pf__json *value, const char *key, size_t key_len) {
    pf__js_buffer b = {0};
    if (value) pf__js_serialize(&b, value);
    else pf__js_put_string(&b, key, key_len);
    if (b.failed || !b.bytes) {
        free(b.bytes);
        return pf__js_fail(c, "%s", "out of memory");
    }
    c->s->texts[i].bytes = b.bytes;
    c->s->texts[i].len = b.len;
    return 0;
}

/* A LITERALS node of `count` values: the array's elements, or one value. */
static int pf__js_literals(pf__js_compiler *c, const pf__json *values, const pf__json *one) {
    int count = one ? 1 : (int)values->count;
    if (count < 1) return pf__js_fail(c, "%s", "enum must list at least one value");
    if (count > PF__JS_MAX_CHOICES) return pf__js_fail(c, "enum lists more than %s values", "64");
    int n = pf__js_new_node(c, PF__JS_LITERALS);
    if (n < 0) return -1;
    int first = pf__js_reserve(c, (void **)&c->s->texts, &c->s->num_texts, &c->s->texts_cap, count, sizeof *c->s->texts);
    if (first < 0) return -1;
    int i = 0;
    for (const pf__json *v = one ? one : values->first; v && i < count; v = one ? NULL : v->next, i++)
        if (pf__js_set_text(c, first + i, v, NULL, 0)) return -1;
    c->s->nodes[n].first = first;
    c->s->nodes[n].count = count;
    return n;
}

static int pf__js_compile(pf__js_compiler *c, const pf__json *schema);

/* Keywords that only annotate a schema: they constrain no value. */
static int pf__js_is_annotation(const char *key) {
    static const char *const names[] = {"title", "description", "default", "examples", "$schema", "$id", "$comment",
                                        "$defs", "definitions", "deprecated", "readOnly", "writeOnly"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(key, names[i])) return 1;
    return 0;
}

/* Whether the keyword is one a node of this type reads. */
static int pf__js_keyword_known(const char *key) {
    static const char *const names[] = {"type", "properties", "required", "additionalProperties", "items", "minItems",
                                        "maxItems", "enum", "const", "anyOf", "$ref"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(key, names[i])) return 1;
    return pf__js_is_annotation(key);
}

static int pf__js_count(pf__js_compiler *c, const pf__json *v, const char *name, int *out) {
    if (!v) return 0;
    if (v->type != PF__JSON_NUMBER || v->number < 0 || v->number > 1e9 || v->number != floor(v->number))
        return pf__js_fail(c, "%s must be a non-negative integer", name);
    *out = (int)v->number;
    return 0;
}

static int pf__js_object(pf__js_compiler *c, const pf__json *schema) {
    const pf__json *properties = pf__json_get(schema, "properties"), *required = pf__json_get(schema, "required");
    const pf__json *additional = pf__json_get(schema, "additionalProperties");
    if (properties && properties->type != PF__JSON_OBJECT) return pf__js_fail(c, "%s must be an object", "properties");
    if (required && required->type != PF__JSON_ARRAY) return pf__js_fail(c, "%s must be an array", "required");
    if (additional && additional->type != PF__JSON_BOOL && additional->type != PF__JSON_OBJECT)
        return pf__js_fail(c, "%s must be a boolean or a schema", "additionalProperties");
    int closed = additional && additional->type == PF__JSON_BOOL && !additional->boolean;
    int count = properties ? (int)properties->count : 0;
    if (count > PF__JS_MAX_CHOICES) return pf__js_fail(c, "an object declares more than %s properties", "64");
    int n = pf__js_new_node(c, PF__JS_OBJECT);
    if (n < 0) return -1;
    if (count == 0 && !closed) { /* a map: any keys, values per additionalProperties */
        if (required && required->count) return pf__js_fail(c, "%s names a property the object does not declare", "required");
        int values = additional && additional->type == PF__JSON_OBJECT ? pf__js_compile(c, additional) : pf__js_new_node(c, PF__JS_ANY);
        if (values < 0) return -1;
        c->s->nodes[n].free_keys = 1;
        c->s->nodes[n].values = values;
        return n;
    }
    /* declared properties: only those are written (an instance valid under additionalProperties true too) */
    int first = pf__js_reserve(c, (void **)&c->s->props, &c->s->num_props, &c->s->props_cap, count, sizeof *c->s->props);
    int keys = first < 0 ? -1 : pf__js_reserve(c, (void **)&c->s->texts, &c->s->num_texts, &c->s->texts_cap, count, sizeof *c->s->texts);
    if (keys < 0) return -1;
    int i = 0;
    for (const pf__json *p = properties ? properties->first : NULL; p; p = p->next, i++) {
        if (pf__js_set_text(c, keys + i, NULL, p->key, p->key_len)) return -1;
        int node = pf__js_compile(c, p);
        if (node < 0) return -1;
        c->s->props[first + i].key = keys + i;
        c->s->props[first + i].node = node;
    }
    uint64_t need = 0;
    for (const pf__json *r = required ? required->first : NULL; r; r = r->next) {
        const pf__json *p = properties && r->type == PF__JSON_STRING ? properties->first : NULL;
        int at = 0;
        while (p && strcmp(p->key, r->string)) p = p->next, at++;
        if (!p) return pf__js_fail(c, "required names \"%s\", which properties does not declare", r->type == PF__JSON_STRING ? r->string : "?");
        need |= 1ull << at;
    }
    pf__js_node *node = &c->s->nodes[n];
    node->first = first;
    node->count = count;
    node->required = need;
    return n;
}

static int pf__js_array(pf__js_compiler *c, const pf__json *schema) {
    const pf__json *items = pf__json_get(schema, "items");
    if (items && items->type != PF__JSON_OBJECT) return pf__js_fail(c, "%s must be a schema (tuples are not supported)", "items");
    int n = pf__js_new_node(c, PF__JS_ARRAY), min = 0, max = -1;
    if (n < 0 || pf__js_count(c, pf__json_get(schema, "minItems"), "minItems", &min) ||
        pf__js_count(c, pf__json_get(schema, "maxItems"), "maxItems", &max))
        return -1;
    if (max >= 0 && max < min) return pf__js_fail(c, "%s is below minItems", "maxItems");
    int item = items ? pf__js_compile(c, items) : pf__js_new_node(c, PF__JS_ANY);
    if (item < 0) return -1;
    c->s->nodes[n].values = item;
    c->s->nodes[n].min_items = min;
    c->s->nodes[n].max_items = max;
    return n;
}

/* One type's node from the schema's keywords. */
static int pf__js_typed(pf__js_compiler *c, const pf__json *schema, const char *type) {
    if (!strcmp(type, "object")) return pf__js_object(c, schema);
    if (!strcmp(type, "array")) return pf__js_array(c, schema);
    if (!strcmp(type, "string")) return pf__js_new_node(c, PF__JS_STRING);
    if (!strcmp(type, "number")) return pf__js_new_node(c, PF__JS_NUMBER);
    if (!strcmp(type, "integer")) return pf__js_new_node(c, PF__JS_INTEGER);
    if (!strcmp(type, "boolean") || !strcmp(type, "null")) {
        pf__json values[2];
        memset(values, 0, sizeof values);
        values[0].type = values[1].type = !strcmp(type, "null") ? PF__JSON_NULL : PF__JSON_BOOL;
        values[1].boolean = 1;
        values[0].next = values[0].type == PF__JSON_BOOL ? &values[1] : NULL;
        pf__json list;
        memset(&list, 0, sizeof list);
        list.type = PF__JSON_ARRAY;
        list.first = &values[0];
        list.count = values[0].next ? 2 : 1;
        return pf__js_literals(c, &list, NULL);
    }
    return pf__js_fail(c, "unsupported JSON Schema type \"%s\"", type);
}

/* "#/$defs/Name" or "#/definitions/Name": compiled once, so that a definition may refer to itself. */
static int pf__js_ref(pf__js_compiler *c, const pf__json *ref) {
    if (ref->type != PF__JSON_STRING) return pf__js_fail(c, "%s must be a string", "$ref");
    for (int i = 0; i < c->num_refs; i++)
        if (!strcmp(c->refs[i].name, ref->string)) return c->refs[i].node;
    const char *name = NULL, *table = NULL;
    if (!strncmp(ref->string, "#/$defs/", 8)) table = "$defs", name = ref->string + 8;
    else if (!strncmp(ref->string, "#/definitions/", 14)) table = "definitions", name = ref->string + 14;
    const pf__json *defs = table ? pf__json_get(c->root, table) : NULL, *def = defs ? pf__json_get(defs, name) : NULL;
    if (!def || strchr(name, '/') || strchr(name, '~'))
        return pf__js_fail(c, "$ref \"%s\" is not a definition of the schema's $defs or definitions", ref->string);
    if (c->num_refs == PF__JS_MAX_REFS) return pf__js_fail(c, "more than %s definitions referred to", "64");
    int placeholder = pf__js_new_node(c, PF__JS_ANY);
    if (placeholder < 0) return -1;
    c->refs[c->num_refs].name = ref->string;
    c->refs[c->num_refs++].node = placeholder;
    int body = pf__js_compile(c, def);
    if (body < 0) return -1;
    c->s->nodes[placeholder] = c->s->nodes[body];
    return placeholder;
}

static int pf__js_compile(pf__js_compiler *c, const pf__json *schema) {
    if (schema->type == PF__JSON_BOOL) {
        if (!schema->boolean) return pf__js_fail(c, "%s", "the schema false accepts no value");
        return pf__js_new_node(c, PF__JS_ANY);
    }
    if (schema->type != PF__JSON_OBJECT) return pf__js_fail(c, "%s", "a schema must be an object");
    if (++c->depth > 64) return pf__js_fail(c, "%s", "the schema nests too deep");
    for (const pf__json *k = schema->first; k; k = k->next)
        if (!pf__js_keyword_known(k->key)) return pf__js_fail(c, "unsupported JSON Schema keyword \"%s\"", k->key);
    const pf__json *type = pf__json_get(schema, "type"), *any_of = pf__json_get(schema, "anyOf");
    const pf__json *enumeration = pf__json_get(schema, "enum"), *constant = pf__json_get(schema, "const");
    const pf__json *ref = pf__json_get(schema, "$ref");
    int n;
    if (ref || any_of) {
        for (const pf__json *k = schema->first; k; k = k->next)
            if (strcmp(k->key, ref ? "$ref" : "anyOf") && !pf__js_is_annotation(k->key))
                return pf__js_fail(c, "\"%s\" beside $ref or anyOf is not supported", k->key);
    }
    if (ref) n = pf__js_ref(c, ref);
    else if (constant) n = pf__js_literals(c, NULL, constant);
    else if (enumeration) {
        if (enumeration->type != PF__JSON_ARRAY) return pf__js_fail(c, "%s must be an array", "enum");
        n = pf__js_literals(c, enumeration, NULL);
    } else if (any_of || (type && type->type == PF__JSON_ARRAY)) {
        const pf__json *list = any_of ? any_of : type;
        if (list->type != PF__JSON_ARRAY || list->count == 0) return pf__js_fail(c, "%s must be a non-empty array", any_of ? "anyOf" : "type");
        int count = (int)list->count;
        n = pf__js_new_node(c, PF__JS_ANYOF);
        int first = n < 0 ? -1 : pf__js_reserve(c, (void **)&c->s->alts, &c->s->num_alts, &c->s->alts_cap, count, sizeof *c->s->alts);
        if (first < 0) return -1;
        int i = 0;
        for (const pf__json *alt = list->first; alt; alt = alt->next, i++) {
            if (!any_of && alt->type != PF__JSON_STRING) return pf__js_fail(c, "%s lists a non-string", "type");
            int a = any_of ? pf__js_compile(c, alt) : pf__js_typed(c, schema, alt->string);
            if (a < 0) return -1;
            c->s->alts[first + i] = a;
        }
        c->s->nodes[n].first = first;
        c->s->nodes[n].count = count;
    } else if (type) {
        if (type->type != PF__JSON_STRING) return pf__js_fail(c, "%s must be a string or an array of strings", "type");
        n = pf__js_typed(c, schema, type->string);
    } else if (pf__json_get(schema, "properties") || pf__json_get(schema, "additionalProperties") || pf__json_get(schema, "required")) {
        n = pf__js_object(c, schema);
    } else if (pf__json_get(schema, "items")) {
        n = pf__js_array(c, schema);
    } else n = pf__js_new_node(c, PF__JS_ANY);
    c->depth--;
    return n;
}

PF_PRIVATE void pf__json_schema_free(pf__json_schema *s) {
    if (!s) return;
    for (int i = 0; i < s->num_texts; i++) free(s->texts[i].bytes);
    free(s->nodes), free(s->props), free(s->texts), free(s->alts), free(s);
}

PF_PRIVATE pf__json_schema *pf__json_schema_compile(const char *schema_text, char *err, size_t err_size) {
    if (err && err_size) err[0] = 0;
    pf__json_schema *s = (pf__json_schema *)calloc(1, sizeof *s);
    if (!s) {
        if (err && err_size) snprintf(err, err_size, "out of memory");
        return NULL;
    }
    pf__js_compiler c;
    memset(&c, 0, sizeof c);
    c.s = s, c.err = err, c.err_size = err_size;
    pf__json *parsed = NULL;
    if (schema_text) {
        char parse_err[128] = "";
        parsed = pf__json_parse(schema_text, strlen(schema_text), parse_err, sizeof parse_err);
        if (!parsed) {
            if (err && err_size) snprintf(err, err_size, "the schema is not JSON: %s", parse_err);
            pf__json_schema_free(s);
            return NULL;
        }
    }
    c.root = parsed;
    pf__json tfn[3], list;
    memset(tfn, 0, sizeof tfn), memset(&list, 0, sizeof list);
    tfn[0].type = tfn[1].type = PF__JSON_BOOL, tfn[1].boolean = 1, tfn[2].type = PF__JSON_NULL;
    tfn[0].next = &tfn[1], tfn[1].next = &tfn[2];
    list.type = PF__JSON_ARRAY, list.first = tfn, list.count = 3;
    s->true_false_null = pf__js_literals(&c, &list, NULL);
    /* no schema: any JSON object (response_format json_object) */
    s->root = s->true_false_null < 0 ? -1 : parsed ? pf__js_compile(&c, parsed) : pf__js_typed(&c, NULL, "object");
    pf__json_free(parsed);
    if (s->root < 0) {
        pf__json_schema_free(s);
        return NULL;
    }
    return s;
}

/* ---- matching ---- */

enum {
    PF__JS_VALUE,                                    /* a value of the node is to start */
    PF__JS_OBJ_OPEN, PF__JS_OBJ_KEY, PF__JS_OBJ_FREE_KEY, PF__JS_OBJ_COLON, PF__JS_OBJ_VALUE, PF__JS_OBJ_AFTER,
    PF__JS_OBJ_NEXT,
    PF__JS_ARR_OPEN, PF__JS_ARR_VALUE, PF__JS_ARR_AFTER, PF__JS_ARR_NEXT,
    PF__JS_STR, PF__JS_STR_ESCAPE, PF__JS_STR_HEX,
    PF__JS_NUM_MINUS, PF__JS_NUM_ZERO, PF__JS_NUM_INT, PF__JS_NUM_DOT, PF__JS_NUM_FRAC, PF__JS_NUM_E, PF__JS_NUM_E_SIGN,
    PF__JS_NUM_EXP,
    PF__JS_LIT
};

static int pf__js_is_space(int b) { return b == ' ' || b == '\n' || b == '\t' || b == '\r'; }

static pf__js_frame *pf__js_push(pf__js_path *p, int node, int phase) {
    if (p->depth == PF__JS_MAX_DEPTH) return NULL;
    pf__js_frame *f = &p->frames[p->depth++];
    memset(f, 0, sizeof *f);
    f->node = node;
    f->phase = (uint8_t)phase;
    return f;
}

/* Whether a number frame's phase may end the number, or a literal frame has a complete candidate. */
static int pf__js_frame_may_end(const pf__json_schema *s, const pf__js_frame *f) {
    if (f->phase == PF__JS_NUM_ZERO || f->phase == PF__JS_NUM_INT || f->phase == PF__JS_NUM_FRAC || f->phase == PF__JS_NUM_EXP) return 1;
    if (f->phase != PF__JS_LIT) return 0;
    const pf__js_node *n = &s->nodes[f->node];
    for (int i = 0; i < n->count; i++)
        if ((f->mask >> i & 1) && s->texts[n->first + i].len == f->pos) return 1;
    return 0;
}

/* The frame below a finished value moves on. */
static void pf__js_pop(pf__js_path *p) {
    p->depth--;
    if (p->depth == 0) return;
    pf__js_frame *parent = &p->frames[p->depth - 1];
    parent->ws = 0;
    if (parent->phase == PF__JS_OBJ_FREE_KEY) parent->phase = PF__JS_OBJ_COLON;
    else if (parent->phase == PF__JS_OBJ_VALUE) parent->phase = PF__JS_OBJ_AFTER;
    else if (parent->phase == PF__JS_ARR_VALUE) parent->phase = PF__JS_ARR_AFTER;
}

typedef struct pf__js_sink {
    pf__json_matcher *out; /* NULL: only whether some path survives */
    int found;
    /* anyOf forks left to this feed, and forks open within forks: a schema whose anyOf refers to
       itself (directly or through others) can neither recurse nor multiply without end */
    int forks, nested;
} pf__js_sink;

#define PF__JS_MAX_FORKS 256 /* a feed's forks */
#define PF__JS_MAX_NESTED 16 /* forks open within forks along one path of a feed */

static void pf__js_run(const pf__json_schema *s, pf__js_path *p, const unsigned char *b, size_t n, pf__js_sink *sink);

/* Whitespace where the grammar allows it, a bounded run of it. 1: taken. */
static int pf__js_space(pf__js_frame *f, int b) {
    if (!pf__js_is_space(b) || f->ws >= PF__JS_MAX_WHITESPACE) return 0;
    f->ws++;
    return 1;
}

/* One byte. 1: taken; 0: dead; 2: the path forked (anyOf) and the forks took the rest. */
static int pf__js_step(const pf__json_schema *s, pf__js_path *p, const unsigned char *b, size_t n, pf__js_sink *sink) {
    int ch = b[0];
    for (;;) {
        if (p->depth == 0) return 0; /* the value is complete: nothing may follow */
        pf__js_frame *f = &p->frames[p->depth - 1];
        const pf__js_node *node = &s->nodes[f->node];
        switch (f->phase) {
        case PF__JS_VALUE:
            if (pf__js_space(f, ch)) return 1;
            switch (node->kind) {
            case PF__JS_ANYOF:
                if (sink->nested == PF__JS_MAX_NESTED) return 0;
                sink->nested++;
                for (int i = 0; i < node->count && !(sink->found && !sink->out) && sink->forks > 0; i++) {
                    sink->forks--;
                    pf__js_path fork = *p;
                    fork.frames[fork.depth - 1].node = s->alts[node->first + i];
                    pf__js_run(s, &fork, b, n, sink);
                }
                sink->nested--;
                return 2;
            case PF__JS_ANY:
                if (ch == '{' || ch == '[') {
                    f->phase = ch == '{' ? PF__JS_OBJ_OPEN : PF__JS_ARR_OPEN;
                    f->ws = 0;
                    return 1; /* an untyped container's frame is an ANY node: free keys, any items */
                }
                if (ch == 't' || ch == 'f' || ch == 'n') {
                    f->node = s->true_false_null;
                    continue;
                }
                if (ch == '"') f->phase = PF__JS_STR;
                else if (ch == '-') f->phase = PF__JS_NUM_MINUS;
                else if (ch == '0') f->phase = PF__JS_NUM_ZERO;
                else if (ch >= '1' && ch <= '9') f->phase = PF__JS_NUM_INT;
                else return 0;
                f->count = 1; /* a number's bytes so far */
                return 1;
            case PF__JS_OBJECT:
                if (ch != '{') return 0;
                f->phase = PF__JS_OBJ_OPEN, f->ws = 0;
                return 1;
            case PF__JS_ARRAY:
                if (ch != '[') return 0;
                f->phase = PF__JS_ARR_OPEN, f->ws = 0;
                return 1;
            case PF__JS_STRING:
                if (ch != '"') return 0;
                f->phase = PF__JS_STR;
                return 1;
            case PF__JS_NUMBER:
            case PF__JS_INTEGER:
                if (ch == '-') f->phase = PF__JS_NUM_MINUS;
                else if (ch == '0') f->phase = PF__JS_NUM_ZERO;
                else if (ch >= '1' && ch <= '9') f->phase = PF__JS_NUM_INT;
                else return 0;
                f->count = 1;
                return 1;
            case PF__JS_LITERALS:
                f->phase = PF__JS_LIT;
                f->pos = 0;
                f->mask = node->count >= 64 ? ~0ull : (1ull << node->count) - 1;
                continue;
            }
            return 0;
        case PF__JS_OBJ_OPEN:
        case PF__JS_OBJ_AFTER:
        case PF__JS_OBJ_NEXT: {
            if (pf__js_space(f, ch)) return 1;
            int free_keys = node->kind == PF__JS_ANY || node->free_keys;
            uint64_t all = node->count >= 64 ? ~0ull : (1ull << node->count) - 1;
            if (ch == '}' && f->phase != PF__JS_OBJ_NEXT && (free_keys || (node->required & ~f->seen) == 0)) {
                pf__js_pop(p);
                return 1;
            }
            if (ch == ',' && f->phase == PF__JS_OBJ_AFTER && (free_keys || (f->seen & all) != all)) {
                f->phase = PF__JS_OBJ_NEXT, f->ws = 0;
                return 1;
            }
            if (ch != '"' || f->phase == PF__JS_OBJ_AFTER) return 0;
            if (free_keys) {
                f->phase = PF__JS_OBJ_FREE_KEY;
                pf__js_frame *key = pf__js_push(p, s->true_false_null, PF__JS_STR); /* a string frame: its node is not read */
                return key ? 1 : 0;
            }
            f->phase = PF__JS_OBJ_KEY;
            f->mask = all & ~f->seen;
            f->pos = 0;
            continue; /* the quote is the key text's first byte */
        }
        case PF__JS_OBJ_KEY: {
            uint64_t mask = 0;
            for (int i = 0; i < node->count; i++) {
                const pf__js_text *key = &s->texts[s->props[node->first + i].key];
                if ((f->mask >> i & 1) && key->len > f->pos && (unsigned char)key->bytes[f->pos] == ch) mask |= 1ull << i;
            }
            if (!mask) return 0;
            f->mask = mask;
            f->pos++;
            for (int i = 0; i < node->count; i++) /* keys with their quotes: none is another's prefix */
                if ((mask >> i & 1) && s->texts[s->props[node->first + i].key].len == f->pos) {
                    f->phase = PF__JS_OBJ_COLON, f->ws = 0;
                    f->count = (uint32_t)i;
                    f->seen |= 1ull << i;
                }
            return 1;
        }
        case PF__JS_OBJ_COLON: {
            if (pf__js_space(f, ch)) return 1;
            if (ch != ':') return 0;
            f->phase = PF__JS_OBJ_VALUE;
            int value = node->kind == PF__JS_ANY ? f->node : node->free_keys ? node->values : s->props[node->first + f->count].node;
            return pf__js_push(p, value, PF__JS_VALUE) ? 1 : 0;
        }
        case PF__JS_ARR_OPEN:
        case PF__JS_ARR_AFTER:
        case PF__JS_ARR_NEXT: {
            if (pf__js_space(f, ch)) return 1;
            int min = node->kind == PF__JS_ANY ? 0 : node->min_items, max = node->kind == PF__JS_ANY ? -1 : node->max_items;
            if (ch == ']' && f->phase != PF__JS_ARR_NEXT && (int)f->count >= min) {
                pf__js_pop(p);
                return 1;
            }
            if (f->phase == PF__JS_ARR_AFTER) {
                if (ch != ',' || (max >= 0 && (int)f->count >= max)) return 0;
                f->phase = PF__JS_ARR_NEXT, f->ws = 0;
                return 1;
            }
            if (max >= 0 && (int)f->count >= max) return 0;
            f->count++;
            f->phase = PF__JS_ARR_VALUE;
            if (!pf__js_push(p, node->kind == PF__JS_ANY ? f->node : node->values, PF__JS_VALUE)) return 0;
            continue; /* the item's first byte */
        }
        case PF__JS_STR:
            if (ch == '"') {
                pf__js_pop(p);
                return 1;
            }
            if (ch == '\\') f->phase = PF__JS_STR_ESCAPE;
            return ch >= 0x20 && ch != 0x7f ? 1 : 0;
        case PF__JS_STR_ESCAPE:
            if (ch == 'u') f->phase = PF__JS_STR_HEX, f->pos = 0;
            else if (strchr("\"\\/bfnrt", ch) && ch) f->phase = PF__JS_STR;
            else return 0;
            return 1;
        case PF__JS_STR_HEX:
            if (!isxdigit(ch)) return 0;
            if (++f->pos == 4) f->phase = PF__JS_STR;
            return 1;
        case PF__JS_LIT: {
            uint64_t mask = 0;
            for (int i = 0; i < node->count; i++) {
                const pf__js_text *t = &s->texts[node->first + i];
                if ((f->mask >> i & 1) && t->len > f->pos && (unsigned char)t->bytes[f->pos] == ch) mask |= 1ull << i;
            }
            if (mask) { /* a longer literal continues (1 then 12): the parent never takes such a byte after a value */
                f->mask = mask;
                f->pos++;
                int open = 0;
                for (int i = 0; i < node->count; i++)
                    if ((mask >> i & 1) && s->texts[node->first + i].len > f->pos) open = 1;
                if (!open) pf__js_pop(p);
                return 1;
            }
            if (!pf__js_frame_may_end(s, f)) return 0;
            pf__js_pop(p);
            continue;
        }
        default: { /* numbers */
            int digit = ch >= '0' && ch <= '9', integer = node->kind == PF__JS_INTEGER;
            int next = -1;
            switch (f->phase) {
            case PF__JS_NUM_MINUS: next = ch == '0' ? PF__JS_NUM_ZERO : digit ? PF__JS_NUM_INT : -1; break;
            case PF__JS_NUM_ZERO:
            case PF__JS_NUM_INT:
                if (digit && f->phase == PF__JS_NUM_INT) next = PF__JS_NUM_INT;
                else if (!integer && ch == '.') next = PF__JS_NUM_DOT;
                else if (!integer && (ch == 'e' || ch == 'E')) next = PF__JS_NUM_E;
                break;
            case PF__JS_NUM_DOT: next = digit ? PF__JS_NUM_FRAC : -1; break;
            case PF__JS_NUM_FRAC: next = digit ? PF__JS_NUM_FRAC : ch == 'e' || ch == 'E' ? PF__JS_NUM_E : -1; break;
            case PF__JS_NUM_E: next = digit ? PF__JS_NUM_EXP : ch == '+' || ch == '-' ? PF__JS_NUM_E_SIGN : -1; break;
            case PF__JS_NUM_E_SIGN:
            case PF__JS_NUM_EXP: next = digit ? PF__JS_NUM_EXP : -1; break;
            }
            if (next >= 0 && f->count < PF__JS_MAX_DIGITS) {
                f->phase = (uint8_t)next;
                f->count++;
                return 1;
            }
            if (!pf__js_frame_may_end(s, f)) return 0;
            pf__js_pop(p); /* the byte is the parent's */
            continue;
        }
        }
    }
}

static void pf__js_keep(pf__js_sink *sink, const pf__js_path *p) {
    sink->found = 1;
    pf__json_matcher *out = sink->out;
    if (!out) return;
    for (int i = 0; i < out->num_paths; i++) /* the same path reached twice (anyOf of alike schemas) */
        if (out->paths[i].depth == p->depth && !memcmp(out->paths[i].frames, p->frames, (size_t)p->depth * sizeof *p->frames)) return;
    if (out->num_paths < PF__JS_MAX_PATHS) out->paths[out->num_paths++] = *p; /* past the cap a fork is dropped: never a wrong byte */
}

static void pf__js_run(const pf__json_schema *s, pf__js_path *p, const unsigned char *b, size_t n, pf__js_sink *sink) {
    for (size_t i = 0; i < n; i++) {
        int r = pf__js_step(s, p, b + i, n - i, sink);
        if (r == 0 || r == 2) return;
    }
    pf__js_keep(sink, p);
}

PF_PRIVATE void pf__json_matcher_init(const pf__json_schema *s, pf__json_matcher *m) {
    m->num_paths = 1;
    m->paths[0].depth = 0;
    pf__js_push(&m->paths[0], s->root, PF__JS_VALUE);
}

/* Whether some path takes all the bytes; with advance, the matcher moves to the paths that do. */
PF_PRIVATE int pf__json_matcher_feed(const pf__json_schema *s, pf__json_matcher *m, const char *bytes, size_t n, int advance,
                                     pf__json_matcher *scratch) {
    pf__js_sink sink = {advance ? scratch : NULL, 0, PF__JS_MAX_FORKS, 0};
    if (advance) scratch->num_paths = 0;
    for (int i = 0; i < m->num_paths && !(sink.found && !advance); i++) {
        pf__js_path p;
        p.depth = m->paths[i].depth;
        memcpy(p.frames, m->paths[i].frames, (size_t)p.depth * sizeof *p.frames);
        pf__js_run(s, &p, (const unsigned char *)bytes, n, &sink);
    }
    if (advance && sink.found) {
        m->num_paths = scratch->num_paths;
        for (int i = 0; i < scratch->num_paths; i++) m->paths[i] = scratch->paths[i];
    }
    return sink.found;
}

/* Whether the text so far is a whole value: nothing open, or only a number or literal that may end. */
PF_PRIVATE int pf__json_matcher_complete(const pf__json_schema *s, const pf__json_matcher *m) {
    for (int i = 0; i < m->num_paths; i++) {
        const pf__js_path *p = &m->paths[i];
        if (p->depth == 0 || (p->depth == 1 && pf__js_frame_may_end(s, &p->frames[0]))) return 1;
    }
    return 0;
}

/* ---- the vocabulary ---- */

/* The vocabulary's texts as constraints read them: decoded once per model (the first constraint
   made on it), shared by every constraint after. */
struct pf__token_texts {
    int vocab;
    uint32_t *offsets; /* [vocab + 1]: token t's text is texts[offsets[t], offsets[t + 1]); empty: never allowed */
    char *texts;
};

struct pf_json_constraint {
    pf__json_schema *schema;
    int vocab;
    const uint32_t *offsets; /* the model's pf__token_texts */
    const char *texts;
};

PF_PRIVATE void pf__token_texts_free(pf__token_texts *t) {
    if (!t) return;
    free(t->offsets), free(t->texts), free(t);
}

/* A token's text as it continues other text: the decoding of [t, t] past that of [t] (a
   SentencePiece word-start token's space shows only after another token), for ids below vocab
   (the model's, which may pass the tokenizer's). NULL without memory. */
static pf__token_texts *pf__json_token_texts(const pf_tokenizer *tok, int vocab) {
    int tokenizer_vocab = pf_tokenizer_vocab_size(tok);
    size_t cap = (size_t)tokenizer_vocab * 8 + 64, used = 0;
    char one[256], two[512];
    pf__token_texts *c = (pf__token_texts *)calloc(1, sizeof *c);
    if (!c) return NULL;
    c->vocab = vocab;
    c->offsets = (uint32_t *)malloc(((size_t)vocab + 1) * sizeof *c->offsets);
    c->texts = (char *)malloc(cap);
    if (!c->offsets || !c->texts) return pf__token_texts_free(c), NULL;
    for (int t = 0; t < vocab; t++) {
        c->offsets[t] = (uint32_t)used;
        if (t >= tokenizer_vocab || pf_tokenizer_is_special(tok, t)) continue;
        int32_t ids[2] = {t, t};
        size_t len1 = 0, len2 = 0;
        if (pf_detokenize(tok, ids, 1, one, sizeof one, &len1) || pf_detokenize(tok, ids, 2, two, sizeof two, &len2) ||
            len1 >= sizeof one || len2 >= sizeof two)
            continue; /* a token too long to be worth allowing */
        const char *text = two + len1;
        size_t len = len2 - len1;
        if (len2 < len1 || memcmp(two, one, len1)) text = one, len = len1;
        if (used + len > cap) {
            char *grown = (char *)realloc(c->texts, cap * 2 + len);
            if (!grown) return pf__token_texts_free(c), NULL;
            c->texts = grown, cap = cap * 2 + len;
        }
        memcpy(c->texts + used, text, len);
        used += len;
    }
    c->offsets[vocab] = (uint32_t)used;
    return c;
}

/* The model's token texts, made by the first caller; threads that race each make them, and all
   but the one that installs its copy free theirs. NULL without memory. */
static const pf__token_texts *pf__model_token_texts(pf_model *model) {
    pf__token_texts *texts = __atomic_load_n(&model->json_token_texts, __ATOMIC_ACQUIRE), *none = NULL;
    if (texts) return texts;
    if (!(texts = pf__json_token_texts(model->tokenizer, model->config.vocab_size))) return NULL;
    if (__atomic_compare_exchange_n(&model->json_token_texts, &none, texts, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return texts;
    pf__token_texts_free(texts);
    return none;
}

pf_result pf_json_constraint_new(pf_model *model, const char *schema, pf_json_constraint **out) {
    if (!out) return PF__FAIL(model, PF_ERROR_INVALID_ARGUMENT, "pf_json_constraint_new: out is NULL");
    *out = NULL;
    if (!model || !model->loaded) return PF__FAIL(model, PF_ERROR_INVALID_ARGUMENT, "pf_json_constraint_new: no loaded model");
    if (!model->tokenizer) return PF__FAIL(model, PF_ERROR_INVALID_ARGUMENT, "JSON output needs the model's tokenizer");
    char err[256];
    pf_json_constraint *c = (pf_json_constraint *)calloc(1, sizeof *c);
    if (!c) return PF__FAIL(model, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    c->schema = pf__json_schema_compile(schema, err, sizeof err);
    if (!c->schema) {
        free(c);
        return PF__FAIL(model, strstr(err, "out of memory") ? PF_ERROR_OUT_OF_MEMORY : PF_ERROR_INVALID_ARGUMENT, "json schema: %s", err);
    }
    const pf__token_texts *texts = pf__model_token_texts(model);
    if (!texts) {
        pf_json_constraint_free(c);
        return PF__FAIL(model, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    c->vocab = texts->vocab;
    c->offsets = texts->offsets;
    c->texts = texts->texts;
    *out = c;
    return PF_OK;
}

void pf_json_constraint_free(pf_json_constraint *c) {
    if (!c) return;
    pf__json_schema_free(c->schema);
    free(c);
}

PF_PRIVATE int pf__json_constraint_vocab(const pf_json_constraint *c) { return c->vocab; }

/* Bans every token whose text no path of the row's matcher takes; eos only once the value is
   complete (then nothing else). A dead end (no token fits, which the caps on forks and nesting may
   cause) leaves eos alone too. */
PF_PRIVATE void pf__json_constraint_mask(const pf_json_constraint *c, const pf__json_matcher *m, pf__json_matcher *scratch,
                                         float *scores, int vocab, const int32_t *eos, int num_eos) {
    const pf__json_schema *s = c->schema;
    int complete = pf__json_matcher_complete(s, m), any = 0;
    unsigned char first_ok[256];
    for (int b = 0; b < 256; b++) {
        char byte = (char)b;
        first_ok[b] = (unsigned char)pf__json_matcher_feed(s, (pf__json_matcher *)m, &byte, 1, 0, scratch);
    }
    for (int t = 0; t < vocab; t++) {
        if (scores[t] == -INFINITY) continue;
        uint32_t from = t < c->vocab ? c->offsets[t] : 0, to = t < c->vocab ? c->offsets[t + 1] : 0;
        int ok = to > from && first_ok[(unsigned char)c->texts[from]] &&
                 (to - from == 1 || pf__json_matcher_feed(s, (pf__json_matcher *)m, c->texts + from, to - from, 0, scratch));
        if (!ok) scores[t] = -INFINITY;
        any |= ok;
    }
    for (int i = 0; i < num_eos; i++)
        if (!complete && any) scores[eos[i]] = -INFINITY;
        else if (!any) scores[eos[i]] = scores[eos[i]] == -INFINITY ? 0.0f : scores[eos[i]];
}

/* The row chose token t: its matcher moves on (an eos or a banned token leaves it as it is). */
PF_PRIVATE void pf__json_constraint_advance(const pf_json_constraint *c, pf__json_matcher *m, pf__json_matcher *scratch, int32_t t) {
    if (t < 0 || t >= c->vocab || c->offsets[t + 1] == c->offsets[t]) return;
    pf__json_matcher_feed(c->schema, m, c->texts + c->offsets[t], c->offsets[t + 1] - c->offsets[t], 1, scratch);
}

PF_PRIVATE const pf__json_schema *pf__json_constraint_schema(const pf_json_constraint *c) { return c->schema; }

#ifdef PF_TESTING
static double pf__json_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Whether text is a prefix of a JSON value of the schema (1) or not (0); -1 when the schema is
   refused (err says why). *complete: whether it is a whole value. */
int pf_testing_json_prefix(const char *schema, const char *text, size_t len, int *complete, char *err, size_t err_size) {
    pf__json_schema *s = pf__json_schema_compile(schema, err, err_size);
    if (!s) return -1;
    pf__json_matcher *m = (pf__json_matcher *)malloc(2 * sizeof *m);
    int ok = -1;
    if (m) {
        pf__json_matcher_init(s, m);
        ok = 1;
        for (size_t i = 0; i < len && ok; i++) ok = pf__json_matcher_feed(s, m, text + i, 1, 1, m + 1);
        *complete = ok && pf__json_matcher_complete(s, m);
    }
    free(m);
    pf__json_schema_free(s);
    return ok;
}

/* The mask after prefix over a tokenizer's vocabulary, run `repeat` times: the tokens it allows
   (-1 on failure); *seconds: the time of one mask. */
int pf_testing_json_mask(const pf_tokenizer *tok, const char *schema, const char *prefix, int repeat, float *scores,
                         int32_t eos, double *seconds) {
    pf_json_constraint c;
    memset(&c, 0, sizeof c);
    c.vocab = pf_tokenizer_vocab_size(tok);
    char err[256];
    c.schema = pf__json_schema_compile(schema, err, sizeof err);
    pf__json_matcher *m = (pf__json_matcher *)malloc(2 * sizeof *m);
    pf__token_texts *texts = pf__json_token_texts(tok, c.vocab);
    int allowed = -1;
    if (c.schema && m && texts) {
        c.offsets = texts->offsets;
        c.texts = texts->texts;
        pf__json_matcher_init(c.schema, m);
        if (pf__json_matcher_feed(c.schema, m, prefix, strlen(prefix), 1, m + 1)) {
            double start = pf__json_seconds();
            for (int r = 0; r < repeat; r++) {
                for (int t = 0; t < c.vocab; t++) scores[t] = 0;
                pf__json_constraint_mask(&c, m, m + 1, scores, c.vocab, &eos, 1);
            }
            *seconds = (pf__json_seconds() - start) / repeat;
            allowed = 0;
            for (int t = 0; t < c.vocab; t++) allowed += scores[t] == 0;
        }
    }
    free(m);
    pf__token_texts_free(texts);
    pf__json_schema_free(c.schema);
    return allowed;
}
#endif
