#include "internal.h"
/* =============================================================================================== */
/* policies and config                                                                             */
/* =============================================================================================== */

PF_PRIVATE const struct pf__stack pf__stacks[] = {
    {PF__SLOT_QKV_WEIGHT, {PF__SLOT_QKV_FUSED_WEIGHT, PF__SLOT_Q_WEIGHT, PF__SLOT_K_WEIGHT, PF__SLOT_V_WEIGHT}, 4},
    {PF__SLOT_QKV_BIAS, {PF__SLOT_QKV_FUSED_BIAS, PF__SLOT_Q_BIAS, PF__SLOT_K_BIAS, PF__SLOT_V_BIAS}, 4},
    {PF__SLOT_MLP_IN_WEIGHT, {PF__SLOT_MLP_GATE_UP_WEIGHT, PF__SLOT_MLP_GATE_WEIGHT, PF__SLOT_MLP_UP_WEIGHT}, 3},
    {PF__SLOT_MLP_IN_BIAS, {PF__SLOT_MLP_GATE_UP_BIAS, PF__SLOT_MLP_GATE_BIAS, PF__SLOT_MLP_UP_BIAS}, 3},
    {PF__SLOT_SHARED_IN_WEIGHT, {PF__SLOT_SHARED_GATE_UP_WEIGHT, PF__SLOT_SHARED_GATE_WEIGHT, PF__SLOT_SHARED_UP_WEIGHT}, 3},
    {PF__SLOT_SHARED_IN_BIAS, {PF__SLOT_SHARED_GATE_UP_BIAS, PF__SLOT_SHARED_GATE_BIAS, PF__SLOT_SHARED_UP_BIAS}, 3},
    {PF__SLOT_POS_QK_WEIGHT, {PF__SLOT_POS_Q_WEIGHT, PF__SLOT_POS_K_WEIGHT}, 2},
    {PF__SLOT_POS_QK_BIAS, {PF__SLOT_POS_Q_BIAS, PF__SLOT_POS_K_BIAS}, 2},
    {PF__SLOT_QKV_GLOBAL_WEIGHT, {PF__SLOT_Q_GLOBAL_WEIGHT, PF__SLOT_K_GLOBAL_WEIGHT, PF__SLOT_V_GLOBAL_WEIGHT}, 3},
    {PF__SLOT_QKV_GLOBAL_BIAS, {PF__SLOT_Q_GLOBAL_BIAS, PF__SLOT_K_GLOBAL_BIAS, PF__SLOT_V_GLOBAL_BIAS}, 3},
    {PF__SLOT_ENTITY_Q_WEIGHT, {PF__SLOT_W2E_Q_WEIGHT, PF__SLOT_E2W_Q_WEIGHT, PF__SLOT_E2E_Q_WEIGHT}, 3},
    {PF__SLOT_ENTITY_Q_BIAS, {PF__SLOT_W2E_Q_BIAS, PF__SLOT_E2W_Q_BIAS, PF__SLOT_E2E_Q_BIAS}, 3},
};
PF_PRIVATE const size_t pf__stacks_count = sizeof pf__stacks / sizeof pf__stacks[0]; /* for the files that see no size */

PF_PRIVATE pf__arch pf__archs[PF__ARCH_COUNT + PF__MAX_REGISTERED] = {
#define PF_ARCH(id, model_type, kind, norm, positions, qkv, mlp, mlp_ratio, act_key, act_default, tied) \
    {model_type, kind, norm, positions, qkv, mlp, mlp_ratio, act_key, act_default, tied},
#include "policies.inc"
};

PF_PRIVATE const pf__arch_alias pf__arch_aliases[] = {
#define PF_ARCH_ALIAS(id, model_type) {PF__ARCH_##id, model_type},
#include "policies.inc"
};
static const struct pf__arch_class { pf__arch_id arch; const char *name; } pf__arch_classes[] = {
#define PF_ARCH_CLASS(id, class_name) {PF__ARCH_##id, class_name},
#include "policies.inc"
};

PF_PRIVATE const size_t pf__arch_aliases_count = sizeof pf__arch_aliases / sizeof pf__arch_aliases[0]; /* for the files that see no size */

PF_PRIVATE const pf__text_tower pf__text_towers[] = {
#define PF_ARCH_TEXT_TOWER(id, model_type, prefix) {PF__ARCH_##id, model_type, prefix, 1},
#define PF_ARCH_OTHER_TOWER(model_type, prefix) {PF__ARCH_COUNT, model_type, prefix, 0},
#include "policies.inc"
    {PF__ARCH_COUNT, "", "", 0} /* the end, so that the table is never empty */
};

/* ---- the tables of rows, as policies.inc's blocks write them ---- */

/* What a row of a family's block does: adds its own row, stands for its base's rows
   (PF_ARCH_LIKE), or leaves out its base's rows of a key (PF_ARCH_NO_*). */
typedef enum { PF__ROW_OWN, PF__ROW_LIKE, PF__ROW_NO } pf__row_op;
typedef struct pf__row_head { pf__row_op op; pf__arch_id base; } pf__row_head;
#define PF__OWN {.op = PF__ROW_OWN}
#define PF__NO {.op = PF__ROW_NO}
#define PF__LIKE(id, base_) {{.op = PF__ROW_LIKE, .base = PF__ARCH_##base_}, {.arch = PF__ARCH_##id}},

static const struct pf__src_tensor { pf__row_head head; pf__arch_tensor row; } pf__src_tensors[] = {
#define PF_ARCH_LIKE PF__LIKE
#define PF_ARCH_TENSOR(id, slot, pattern, layout, split, need) {PF__OWN, {PF__ARCH_##id, slot, pattern, layout, split, need, 0}},
#define PF_ARCH_ENCODER_TENSOR(id, slot, pattern, layout, split, need) {PF__OWN, {PF__ARCH_##id, slot, pattern, layout, split, need, 1}},
#define PF_ARCH_NO_TENSOR(id, slot_) {PF__NO, {.arch = PF__ARCH_##id, .slot = slot_}},
#define PF_ARCH_NO_ENCODER_TENSOR(id, slot_) {PF__NO, {.arch = PF__ARCH_##id, .slot = slot_, .encoder = 1}},
#include "policies.inc"
};

static const struct pf__src_config { pf__row_head head; pf__arch_config row; } pf__src_configs[] = {
#define PF_ARCH_LIKE PF__LIKE
#define PF_ARCH_CONFIG(id, field, key, fallback) \
    {PF__OWN, {PF__ARCH_##id, offsetof(pf__config, field), PF__FIELD_IS_DOUBLE(field), key, fallback}},
#define PF_ARCH_NO_CONFIG(id, field) {PF__NO, {.arch = PF__ARCH_##id, .offset = offsetof(pf__config, field)}},
#include "policies.inc"
};

static const struct pf__src_prefix { pf__row_head head; pf__arch_prefix row; } pf__src_prefixes[] = {
#define PF_ARCH_LIKE PF__LIKE
#define PF_ARCH_PREFIX(id, prefix) {PF__OWN, {PF__ARCH_##id, prefix}},
#define PF_ARCH_NO_PREFIX(id, prefix) {PF__NO, {PF__ARCH_##id, prefix}},
#include "policies.inc"
};

static const struct pf__src_buffer { pf__row_head head; pf__arch_buffer row; } pf__src_buffers[] = {
#define PF_ARCH_LIKE PF__LIKE
#define PF_ARCH_BUFFER(id, pattern) {PF__OWN, {PF__ARCH_##id, pattern}},
#define PF_ARCH_NO_BUFFER(id, pattern) {PF__NO, {PF__ARCH_##id, pattern}},
#include "policies.inc"
};

static const struct pf__src_activation { pf__row_head head; pf__arch_activation row; } pf__src_activations[] = {
#define PF_ARCH_LIKE PF__LIKE
#define PF_ARCH_ACTIVATION(id, name, activation) {PF__OWN, {PF__ARCH_##id, name, activation}},
#define PF_ARCH_NO_ACTIVATION(id, name_) {PF__NO, {.arch = PF__ARCH_##id, .name = name_}},
#include "policies.inc"
};

static const struct pf__src_layer_types { pf__row_head head; pf__arch_layer_types row; } pf__src_layer_types[] = {
#define PF_ARCH_LIKE PF__LIKE
#define PF_ARCH_LAYER_TYPES(id, key, needed) {PF__OWN, {PF__ARCH_##id, key, needed}},
#define PF_ARCH_NO_LAYER_TYPES(id, key_) {PF__NO, {.arch = PF__ARCH_##id, .key = key_}},
#include "policies.inc"
};

static const struct pf__src_null { pf__row_head head; pf__arch_null row; } pf__src_nulls[] = {
#define PF_ARCH_LIKE PF__LIKE
#define PF_ARCH_NULL(id, key, value) {PF__OWN, {PF__ARCH_##id, key, value}},
#define PF_ARCH_NO_NULL(id, key_) {PF__NO, {.arch = PF__ARCH_##id, .key = key_}},
#include "policies.inc"
};

static const struct pf__src_require { pf__row_head head; pf__arch_require row; } pf__src_requires[] = {
#define PF_ARCH_LIKE PF__LIKE
#define PF_ARCH_REQUIRE(id, key, value) {PF__OWN, {PF__ARCH_##id, key, value}},
#define PF_ARCH_NO_REQUIRE(id, key_) {PF__NO, {.arch = PF__ARCH_##id, .key = key_}},
#include "policies.inc"
};

/* ---- PF_ARCH_LIKE: each family's rows with its base's copied in, once ---- */

/* Bounds known to the compiler: per table, a struct with a struct per family holding a byte per
   row of its block and, for its LIKE row, its base's struct. A block ends at the next PF_ARCH
   row, and a base's struct is complete only below its block: a LIKE row naming a family further
   down does not compile. The whole struct's size bounds the table's expanded rows. */
#define PF__BOUND_FAMILY(table, id) ]; } before_##id; struct pf__bound_##table##_##id { char rows[1
#define PF__BOUND_BASE(table, base) + sizeof(struct pf__bound_##table##_##base)

struct pf__bound_tensors { struct { char rows[1
#define PF_ARCH(id, ...) PF__BOUND_FAMILY(tensor, id)
#define PF_ARCH_LIKE(id, base) PF__BOUND_BASE(tensor, base)
#define PF_ARCH_TENSOR(...) + 1
#define PF_ARCH_ENCODER_TENSOR(...) + 1
#include "policies.inc"
]; } last; };

struct pf__bound_configs { struct { char rows[1
#define PF_ARCH(id, ...) PF__BOUND_FAMILY(config, id)
#define PF_ARCH_LIKE(id, base) PF__BOUND_BASE(config, base)
#define PF_ARCH_CONFIG(...) + 1
#include "policies.inc"
]; } last; };

struct pf__bound_prefixes { struct { char rows[1
#define PF_ARCH(id, ...) PF__BOUND_FAMILY(prefix, id)
#define PF_ARCH_LIKE(id, base) PF__BOUND_BASE(prefix, base)
#define PF_ARCH_PREFIX(...) + 1
#include "policies.inc"
]; } last; };

struct pf__bound_buffers { struct { char rows[1
#define PF_ARCH(id, ...) PF__BOUND_FAMILY(buffer, id)
#define PF_ARCH_LIKE(id, base) PF__BOUND_BASE(buffer, base)
#define PF_ARCH_BUFFER(...) + 1
#include "policies.inc"
]; } last; };

struct pf__bound_activations { struct { char rows[1
#define PF_ARCH(id, ...) PF__BOUND_FAMILY(activation, id)
#define PF_ARCH_LIKE(id, base) PF__BOUND_BASE(activation, base)
#define PF_ARCH_ACTIVATION(...) + 1
#include "policies.inc"
]; } last; };

struct pf__bound_layer_types { struct { char rows[1
#define PF_ARCH(id, ...) PF__BOUND_FAMILY(layer_types, id)
#define PF_ARCH_LIKE(id, base) PF__BOUND_BASE(layer_types, base)
#define PF_ARCH_LAYER_TYPES(...) + 1
#include "policies.inc"
]; } last; };

struct pf__bound_nulls { struct { char rows[1
#define PF_ARCH(id, ...) PF__BOUND_FAMILY(null, id)
#define PF_ARCH_LIKE(id, base) PF__BOUND_BASE(null, base)
#define PF_ARCH_NULL(...) + 1
#include "policies.inc"
]; } last; };

struct pf__bound_requires { struct { char rows[1
#define PF_ARCH(id, ...) PF__BOUND_FAMILY(require, id)
#define PF_ARCH_LIKE(id, base) PF__BOUND_BASE(require, base)
#define PF_ARCH_REQUIRE(...) + 1
#include "policies.inc"
]; } last; };

static pf__arch_tensor pf__expanded_tensors[sizeof(struct pf__bound_tensors)];
static pf__arch_config pf__expanded_configs[sizeof(struct pf__bound_configs)];
static pf__arch_prefix pf__expanded_prefixes[sizeof(struct pf__bound_prefixes)];
static pf__arch_buffer pf__expanded_buffers[sizeof(struct pf__bound_buffers)];
static pf__arch_activation pf__expanded_activations[sizeof(struct pf__bound_activations)];
static pf__arch_layer_types pf__expanded_layer_types[sizeof(struct pf__bound_layer_types)];
static pf__arch_null pf__expanded_nulls[sizeof(struct pf__bound_nulls)];
static pf__arch_require pf__expanded_requires[sizeof(struct pf__bound_requires)];

/* Rows with the same key: a base's rows of it give way to the family's own (or its NO row). */
static int pf__same_tensor(const void *a, const void *b) {
    const pf__arch_tensor *x = (const pf__arch_tensor *)a, *y = (const pf__arch_tensor *)b;
    return x->slot == y->slot && x->encoder == y->encoder;
}
static int pf__same_config(const void *a, const void *b) {
    return ((const pf__arch_config *)a)->offset == ((const pf__arch_config *)b)->offset;
}
static int pf__same_prefix(const void *a, const void *b) {
    return !strcmp(((const pf__arch_prefix *)a)->prefix, ((const pf__arch_prefix *)b)->prefix);
}
static int pf__same_buffer(const void *a, const void *b) {
    return !strcmp(((const pf__arch_buffer *)a)->pattern, ((const pf__arch_buffer *)b)->pattern);
}
static int pf__same_activation(const void *a, const void *b) {
    return !strcmp(((const pf__arch_activation *)a)->name, ((const pf__arch_activation *)b)->name);
}
static int pf__same_layer_types(const void *a, const void *b) {
    return !strcmp(((const pf__arch_layer_types *)a)->key, ((const pf__arch_layer_types *)b)->key);
}
static int pf__same_null(const void *a, const void *b) {
    return !strcmp(((const pf__arch_null *)a)->key, ((const pf__arch_null *)b)->key);
}
static int pf__same_require(const void *a, const void *b) {
    return !strcmp(((const pf__arch_require *)a)->key, ((const pf__arch_require *)b)->key);
}

/* One table: its rows as written (each a pf__row_head, then the row at row_at; every row starts
   with its pf__arch_id), where the expanded rows go, and each family's span there. */
typedef struct pf__table {
    const char *name;
    const char *src;
    size_t count, stride, row_at, row_size;
    char *out;
    size_t cap, used;
    int (*same)(const void *a, const void *b);
    size_t first[PF__ARCH_COUNT], num[PF__ARCH_COUNT];
} pf__table;

#define PF__TABLE(name, src, out, same) \
    {name, (const char *)src, PF__COUNT(src), sizeof src[0], offsetof(struct pf__src_##same, row), sizeof out[0], \
     (char *)out, PF__COUNT(out), 0, pf__same_##same, {0}, {0}}

static pf__table pf__tables[] = {
    PF__TABLE("tensor", pf__src_tensors, pf__expanded_tensors, tensor),
    PF__TABLE("config", pf__src_configs, pf__expanded_configs, config),
    PF__TABLE("prefix", pf__src_prefixes, pf__expanded_prefixes, prefix),
    PF__TABLE("buffer", pf__src_buffers, pf__expanded_buffers, buffer),
    PF__TABLE("activation", pf__src_activations, pf__expanded_activations, activation),
    PF__TABLE("layer types", pf__src_layer_types, pf__expanded_layer_types, layer_types),
    PF__TABLE("null", pf__src_nulls, pf__expanded_nulls, null),
    PF__TABLE("require", pf__src_requires, pf__expanded_requires, require),
};

static char pf__table_error[200]; /* the first mistake the expansion met in policies.inc; "" when none */

static const pf__row_head *pf__src_head(const pf__table *t, size_t i) { return (const pf__row_head *)(t->src + i * t->stride); }
static const void *pf__src_row(const pf__table *t, size_t i) { return t->src + i * t->stride + t->row_at; }
static pf__arch_id pf__row_arch(const void *row) { return *(const pf__arch_id *)row; } /* every row's first member */

static void pf__table_fail(const pf__table *t, pf__arch_id arch, const char *what) {
    if (!pf__table_error[0])
        snprintf(pf__table_error, sizeof pf__table_error, "policies.inc: \"%s\"'s %s rows: %s", pf__archs[arch].model_type,
                 t->name, what);
}

/* The first of arch's rows [from, to) of the table that does op with row's key; to when none does. */
static size_t pf__block_find(const pf__table *t, pf__arch_id arch, pf__row_op op, const void *row, size_t from, size_t to) {
    for (size_t i = from; i < to; i++)
        if (pf__row_arch(pf__src_row(t, i)) == arch && pf__src_head(t, i)->op == op && t->same(pf__src_row(t, i), row))
            return i;
    return to;
}

/* Whether base's expanded rows hold a row of row's key. */
static int pf__base_has(const pf__table *t, pf__arch_id base, const void *row) {
    for (size_t j = 0; j < t->num[base]; j++)
        if (t->same(t->out + (t->first[base] + j) * t->row_size, row)) return 1;
    return 0;
}

static void pf__table_add(pf__table *t, pf__arch_id arch, const void *row) {
    if (t->used == t->cap) {
        pf__table_fail(t, arch, "more than the bound (a row outside its family's block?)");
        return;
    }
    char *to = t->out + t->used++ * t->row_size;
    memcpy(to, row, t->row_size);
    memcpy(to, &arch, sizeof arch); /* a base's row copied becomes the family's */
}

/* arch's own row i above its LIKE row, then the rows of keys base lacks that follow it (each
   goes right after the row above it). */
static void pf__table_add_run(pf__table *t, pf__arch_id arch, pf__arch_id base, size_t i, size_t like) {
    pf__table_add(t, arch, pf__src_row(t, i));
    for (i++; i < like; i++) {
        if (pf__row_arch(pf__src_row(t, i)) != arch || pf__src_head(t, i)->op != PF__ROW_OWN) continue;
        if (pf__base_has(t, base, pf__src_row(t, i))) break;
        pf__table_add(t, arch, pf__src_row(t, i));
    }
}

/* Checks arch's block against its base: every NO row takes out a key of base's, and no key is
   written both above and below the LIKE row, or written and taken out. */
static void pf__table_check(pf__table *t, pf__arch_id arch, pf__arch_id base, size_t like) {
    for (size_t i = 0; i < t->count; i++) {
        const void *row = pf__src_row(t, i);
        pf__row_op op = pf__src_head(t, i)->op;
        if (pf__row_arch(row) != arch || op == PF__ROW_LIKE) continue;
        if (op == PF__ROW_NO && !pf__base_has(t, base, row))
            pf__table_fail(t, arch, "a PF_ARCH_NO_ row takes out none of its base's rows");
        if (op == PF__ROW_OWN && (pf__block_find(t, arch, PF__ROW_NO, row, 0, t->count) < t->count ||
                                  pf__block_find(t, arch, PF__ROW_OWN, row, i < like ? like : 0, i < like ? t->count : like) <
                                      (i < like ? t->count : like)))
            pf__table_fail(t, arch, "a key written both above and below the LIKE row, or written and taken out");
    }
}

/* arch's rows of table t as policies.inc means them (a base's are expanded before). Without a
   LIKE row: its own rows. With one: base's expanded rows, where a row above the LIKE row takes
   the place of base's rows of its key (a key base lacks: right after the row above it, or first),
   rows below it come after base's, and NO rows take a key out. */
static void pf__table_expand(pf__table *t, pf__arch_id arch) {
    t->first[arch] = t->used;
    size_t like = t->count;
    for (size_t i = 0; i < t->count; i++)
        if (pf__row_arch(pf__src_row(t, i)) == arch && pf__src_head(t, i)->op == PF__ROW_LIKE) {
            if (like < t->count || pf__src_head(t, i)->base >= arch)
                pf__table_fail(t, arch, "two PF_ARCH_LIKE rows, or a base below the family");
            else like = i;
        }
    if (like == t->count) {
        for (size_t i = 0; i < t->count; i++) {
            if (pf__row_arch(pf__src_row(t, i)) != arch) continue;
            if (pf__src_head(t, i)->op == PF__ROW_NO) pf__table_fail(t, arch, "a PF_ARCH_NO_ row without a PF_ARCH_LIKE row");
            else pf__table_add(t, arch, pf__src_row(t, i));
        }
        t->num[arch] = t->used - t->first[arch];
        return;
    }
    pf__arch_id base = pf__src_head(t, like)->base;
    pf__table_check(t, arch, base, like);
    size_t first = 0; /* the first own row above the LIKE row: when base lacks its key, it comes first */
    while (first < like && !(pf__row_arch(pf__src_row(t, first)) == arch && pf__src_head(t, first)->op == PF__ROW_OWN)) first++;
    if (first < like && !pf__base_has(t, base, pf__src_row(t, first))) pf__table_add_run(t, arch, base, first, like);
    for (size_t j = 0; j < t->num[base]; j++) {
        const char *inherited = t->out + (t->first[base] + j) * t->row_size;
        int seen = 0; /* the key's rows are placed at its first row in base */
        for (size_t k = 0; k < j; k++) seen |= t->same(t->out + (t->first[base] + k) * t->row_size, inherited);
        if (pf__block_find(t, arch, PF__ROW_OWN, inherited, 0, like) < like) {
            for (size_t i = 0; !seen && i < like; i++)
                if (pf__row_arch(pf__src_row(t, i)) == arch && pf__src_head(t, i)->op == PF__ROW_OWN &&
                    t->same(pf__src_row(t, i), inherited))
                    pf__table_add_run(t, arch, base, i, like);
        } else if (pf__block_find(t, arch, PF__ROW_OWN, inherited, like, t->count) == t->count &&
                   pf__block_find(t, arch, PF__ROW_NO, inherited, 0, t->count) == t->count) {
            pf__table_add(t, arch, inherited);
        }
    }
    for (size_t i = like + 1; i < t->count; i++)
        if (pf__row_arch(pf__src_row(t, i)) == arch && pf__src_head(t, i)->op == PF__ROW_OWN)
            pf__table_add(t, arch, pf__src_row(t, i));
    t->num[arch] = t->used - t->first[arch];
}

static pf__policy_rows pf__builtin_rows[PF__ARCH_COUNT];
static pthread_once_t pf__builtin_once = PTHREAD_ONCE_INIT;

static void pf__expand_builtin(void) {
    for (size_t k = 0; k < PF__COUNT(pf__tables); k++)
        for (int a = 0; a < PF__ARCH_COUNT; a++) pf__table_expand(&pf__tables[k], (pf__arch_id)a);
    for (int a = 0; a < PF__ARCH_COUNT; a++) {
        pf__policy_rows *r = &pf__builtin_rows[a];
        r->tensors = pf__expanded_tensors + pf__tables[0].first[a], r->num_tensors = pf__tables[0].num[a];
        r->configs = pf__expanded_configs + pf__tables[1].first[a], r->num_configs = pf__tables[1].num[a];
        r->prefixes = pf__expanded_prefixes + pf__tables[2].first[a], r->num_prefixes = pf__tables[2].num[a];
        r->buffers = pf__expanded_buffers + pf__tables[3].first[a], r->num_buffers = pf__tables[3].num[a];
        r->activations = pf__expanded_activations + pf__tables[4].first[a], r->num_activations = pf__tables[4].num[a];
        r->layer_types = pf__expanded_layer_types + pf__tables[5].first[a], r->num_layer_types = pf__tables[5].num[a];
        r->nulls = pf__expanded_nulls + pf__tables[6].first[a], r->num_nulls = pf__tables[6].num[a];
        r->required_values = pf__expanded_requires + pf__tables[7].first[a], r->num_required_values = pf__tables[7].num[a];
    }
}

/* The mistake in policies.inc's rows that the expansion met, or NULL. */
PF_PRIVATE const char *pf__policy_table_error(void) {
    pthread_once(&pf__builtin_once, pf__expand_builtin);
    return pf__table_error[0] ? pf__table_error : NULL;
}

/* Neutral values for fields an architecture's rows do not name. */
PF_PRIVATE void pf__config_defaults(pf__config *c) {
    memset(c, 0, sizeof *c);
    c->scale_attn_weights = 1;
    c->pre_norm = 1;
    c->rotary_pct = 1.0;
    c->rope_theta = 10000.0;
    c->bos_token_id = c->pad_token_id = c->decoder_start_token_id = -1;
    c->rope_factor = 1.0;
    c->rope_attention_factor = 1.0;
    c->use_sliding_window = 1;
    c->attention_bias = c->mlp_bias = -1;
    c->pooler_activation = PF__ACT_TANH;
    c->head_activation = -1;
    c->pool_eos_id = -1;
    c->multi_query = -1;
}

/* ---- an architecture's rows: compiled in, or registered at run time ---- */

PF_PRIVATE pf__registered pf__registered_policies[PF__MAX_REGISTERED];
PF_PRIVATE pthread_mutex_t pf__policy_lock = PTHREAD_MUTEX_INITIALIZER;

PF_PRIVATE const pf__policy_rows *pf__rows(pf__arch_id arch) {
    if ((int)arch >= PF__ARCH_COUNT) return &pf__registered_policies[arch - PF__ARCH_COUNT].rows;
    pthread_once(&pf__builtin_once, pf__expand_builtin);
    return &pf__builtin_rows[arch];
}

/* The registered architecture named model_type, held for a model (unregistering it is refused
   until pf__policy_release); -1 when none is. */
static int pf__policy_acquire(const char *model_type) {
    int arch = -1;
    pthread_mutex_lock(&pf__policy_lock);
    for (int i = 0; i < PF__MAX_REGISTERED && arch < 0; i++)
        if (pf__registered_policies[i].in_use && !strcmp(pf__archs[PF__ARCH_COUNT + i].model_type, model_type)) {
            pf__registered_policies[i].live_models++;
            arch = PF__ARCH_COUNT + i;
        }
    pthread_mutex_unlock(&pf__policy_lock);
    return arch;
}

PF_PRIVATE void pf__policy_release(pf__arch_id arch) {
    if ((int)arch < PF__ARCH_COUNT) return;
    pthread_mutex_lock(&pf__policy_lock);
    pf__registered_policies[arch - PF__ARCH_COUNT].live_models--;
    pthread_mutex_unlock(&pf__policy_lock);
}

PF_PRIVATE const pf__arch_tensor *pf__arch_tensor_for(pf__arch_id arch, pf__slot slot) {
    const pf__policy_rows *rows = pf__rows(arch);
    for (size_t i = 0; i < rows->num_tensors; i++)
        if (rows->tensors[i].arch == arch && rows->tensors[i].slot == slot) return &rows->tensors[i];
    return NULL;
}

/* The config.json key an architecture reads a field from (its first alias), for messages. */
PF_PRIVATE const char *pf__config_key(pf__arch_id arch, size_t offset) {
    const pf__policy_rows *rows = pf__rows(arch);
    for (size_t i = 0; i < rows->num_configs; i++)
        if (rows->configs[i].arch == arch && rows->configs[i].offset == offset && rows->configs[i].key)
            return rows->configs[i].key;
    return "(derived)";
}

/* HF activation names to the function we compute: the family's own table (PF_ARCH_ACTIVATION)
   where it has one, else transformers' ACT2FN. */
static int pf__activation_from_name(pf__arch_id arch, const char *name, pf__activation *out) {
    const pf__policy_rows *rows = pf__rows(arch);
    int family_table = 0;
    for (size_t i = 0; i < rows->num_activations; i++) {
        if (rows->activations[i].arch != arch) continue;
        family_table = 1;
        if (strcmp(rows->activations[i].name, name) == 0) {
            *out = rows->activations[i].activation;
            return 0;
        }
    }
    if (family_table) return -1;
    return pf__activation_from_hf_name(name, out);
}

/* transformers' ACT2FN names. */
PF_PRIVATE int pf__activation_from_hf_name(const char *name, pf__activation *out) {
    static const struct { const char *name; pf__activation act; } names[] = {
        {"gelu_new", PF__ACT_GELU_TANH}, {"gelu_pytorch_tanh", PF__ACT_GELU_TANH},
        {"gelu_fast", PF__ACT_GELU_TANH}, {"bloom_gelu", PF__ACT_GELU_TANH}, {"gelu", PF__ACT_GELU_ERF},
        {"relu", PF__ACT_RELU}, {"silu", PF__ACT_SILU}, {"swish", PF__ACT_SILU}, {"quick_gelu", PF__ACT_QUICK_GELU},
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
PF_PRIVATE int pf__json_number(const pf__json *v, double *out) {
    if (!v || v->type == PF__JSON_NULL) return 0;
    if (v->type == PF__JSON_NUMBER) *out = v->number;
    else if (v->type == PF__JSON_BOOL) *out = v->boolean;
    else return -1;
    return 1;
}

/* LongRoPE's short_factor or long_factor list into out; its length, or -1 if it is not a list of
   positive numbers that fits. */
static int pf__config_rope_list(const pf__json *list, float *out) {
    if (!list || list->type != PF__JSON_ARRAY || list->count > PF__MAX_ROPE_FACTORS) return -1;
    int n = 0;
    for (const pf__json *v = list->first; v; v = v->next) {
        if (v->type != PF__JSON_NUMBER || !(v->number > 0 && v->number < 1e30)) return -1;
        out[n++] = (float)v->number; /* transformers makes an fp32 tensor of them */
    }
    return n;
}

/* YaRN and LongRoPE (modeling_rope_utils' _compute_yarn_parameters and
   _compute_longrope_parameters): the pretraining length (a top-level
   original_max_position_embeddings wins over the dict's, as transformers' standardize_rope_params
   does; else max_position_embeddings), the factor (absent: the ratio of the two lengths), and the
   attention factor that multiplies cos and sin. The frequencies themselves are computed per step
   (pf__rope_frequencies). */
static pf_result pf__config_rope_extended(const pf__json *json, const pf__json *rope, pf__config *c, const char *path,
                                          char *message, size_t size) {
    const char *name = c->rope_type == PF__ROPE_YARN ? "yarn" : "longrope";
    double original = c->max_positions, v;
    if (pf__json_number(pf__json_get(json, "original_max_position_embeddings"), &original) != 1 &&
        pf__json_number(pf__json_get(rope, "original_max_position_embeddings"), &original) < 0)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: %s rope: \"original_max_position_embeddings\" is not a number", path, name);
    if (!(original >= 1 && original < 1e9))
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: %s rope: \"original_max_position_embeddings\" %g is not a "
                          "positive length", path, name, original);
    c->rope_original_max_positions = (int)original;
    int has_factor = pf__json_number(pf__json_get(rope, "factor"), &c->rope_factor);
    if (has_factor < 0) return pf__format(message, size, PF_ERROR_FORMAT, "%s: %s rope: \"factor\" is not a number", path, name);
    if (!has_factor) c->rope_factor = (double)c->max_positions / c->rope_original_max_positions;
    if (!(c->rope_factor > 0 && c->rope_factor < 1e6))
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: %s rope: factor %g is not a positive number", path, name,
                          c->rope_factor);
    int has_attention = pf__json_number(pf__json_get(rope, "attention_factor"), &v);
    if (has_attention < 0 || (has_attention && !(v >= 0 && v < 1e6)))
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: %s rope: \"attention_factor\" is not a number >= 0", path, name);
    double factor = c->rope_factor;
    if (c->rope_type == PF__ROPE_YARN) {
        double mscale = 0, mscale_all_dim = 0;
        if (pf__json_number(pf__json_get(rope, "mscale"), &mscale) < 0 ||
            pf__json_number(pf__json_get(rope, "mscale_all_dim"), &mscale_all_dim) < 0 ||
            pf__json_number(pf__json_get(rope, "beta_fast"), &c->rope_beta_fast) < 0 ||
            pf__json_number(pf__json_get(rope, "beta_slow"), &c->rope_beta_slow) < 0)
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: yarn rope: mscale, mscale_all_dim, beta_fast and beta_slow "
                              "must be numbers", path);
        if (c->rope_beta_fast == 0) c->rope_beta_fast = 32; /* transformers: `or 32`, `or 1` */
        if (c->rope_beta_slow == 0) c->rope_beta_slow = 1;
        double truncate = 1;
        if (pf__json_number(pf__json_get(rope, "truncate"), &truncate) < 0)
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: yarn rope: \"truncate\" is not a boolean", path);
        c->rope_truncate = truncate != 0;
        /* the paper's 0.1 ln(s) + 1, or DeepSeek's ratio of two such with their own mscales */
#define PF__MSCALE(scale, m) ((scale) <= 1 ? 1.0 : 0.1 * (m) * log(scale) + 1.0)
        c->rope_mscale_all_dim = mscale_all_dim;
        if (has_attention) c->rope_attention_factor = v;
        else if (mscale != 0 && mscale_all_dim != 0)
            c->rope_attention_factor = PF__MSCALE(factor, mscale) / PF__MSCALE(factor, mscale_all_dim);
        else c->rope_attention_factor = PF__MSCALE(factor, 1.0);
#undef PF__MSCALE
        if (!(c->rope_beta_fast > 0 && c->rope_beta_slow > 0 && isfinite(c->rope_beta_fast) && isfinite(c->rope_beta_slow)))
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: yarn rope: beta_fast %g and beta_slow %g must be positive",
                              path, c->rope_beta_fast, c->rope_beta_slow);
        return PF_OK;
    }
    if (has_attention) c->rope_attention_factor = v;
    else c->rope_attention_factor = factor <= 1 ? 1.0 : sqrt(1 + log(factor) / log((double)c->rope_original_max_positions));
    if (c->rope_mscales) { /* PhiMoE: cos and sin times short_mscale, or long_mscale past pretraining */
        double short_mscale = 0, long_mscale = 0;
        if (pf__json_number(pf__json_get(rope, "short_mscale"), &short_mscale) != 1 ||
            pf__json_number(pf__json_get(rope, "long_mscale"), &long_mscale) != 1 || !(short_mscale > 0 && short_mscale < 1e6))
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: longrope rope needs \"short_mscale\" and \"long_mscale\": "
                              "positive numbers (model_type \"%s\")", path, c->model_type);
        if (long_mscale != short_mscale) /* Phi-3.5-MoE's are equal: one factor for every length */
            return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: longrope's short_mscale %g and long_mscale %g differ: "
                              "not supported", path, short_mscale, long_mscale);
        c->rope_attention_factor = short_mscale;
    }
    int n_short = pf__config_rope_list(pf__json_get(rope, "short_factor"), c->rope_short_factor);
    int n_long = pf__config_rope_list(pf__json_get(rope, "long_factor"), c->rope_long_factor);
    if (n_short < 1 || n_short != n_long)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: longrope rope needs \"short_factor\" and \"long_factor\": "
                          "lists of positive numbers of one length (one per rotary frequency)", path);
    c->rope_num_factors = n_short; /* checked against the rotary width once it is known */
    return PF_OK;
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
    double v, partial = 1;
    if (c->rope_local_theta > 0) { /* rope_parameters per layer kind (Gemma 3); rope_scaling updates the global one */
        const pf__json *params = pf__json_get(json, "rope_parameters");
        if (params && params->type != PF__JSON_OBJECT) params = NULL;
        const pf__json *full = pf__json_get(params, "full_attention"), *local = pf__json_get(params, "sliding_attention");
        if (full && full->type != PF__JSON_OBJECT) full = NULL;
        if (local && local->type != PF__JSON_OBJECT) local = NULL;
        if (params && params->count && !full && !local)
            return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: \"rope_parameters\" has neither "
                              "\"full_attention\" nor \"sliding_attention\" (model_type \"%s\" reads one per kind of layer)",
                              path, c->model_type);
        const pf__json *local_type = pf__json_get(local, "rope_type");
        if (!local_type) local_type = pf__json_get(local, "type");
        if (local_type && (local_type->type != PF__JSON_STRING || strcmp(local_type->string, "default")))
            return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: a scaled rope on the sliding layers "
                              "(\"rope_parameters.sliding_attention.rope_type\") is not supported", path);
        if (pf__json_number(pf__json_get(local, "rope_theta"), &v) == 1) c->rope_local_theta = v;
        if (!(c->rope_local_theta > 0))
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: the sliding layers' rope_theta is not positive", path);
        if (pf__json_number(pf__json_get(full, "rope_theta"), &v) == 1) c->rope_theta = v;
        rope = pf__json_get(json, "rope_scaling");
        if (!rope || rope->type != PF__JSON_OBJECT || !rope->count) rope = full;
    }
    const pf__json *type = pf__json_get(rope, "rope_type");
    if (!type) type = pf__json_get(rope, "type");
    if (!type && c->rope_dict_needed)
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: no \"rope_parameters\" (nor \"rope_scaling\") with a "
                          "rope_type: model_type \"%s\" then defaults to a scaled rope, which is not assumed", path,
                          c->model_type);
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
        else if (c->rope_legacy_longrope && (!strcmp(type->string, "su") || !strcmp(type->string, "yarn")))
            c->rope_type = PF__ROPE_LONGROPE;
        else if (strcmp(type->string, "yarn") == 0) c->rope_type = PF__ROPE_YARN;
        else if (strcmp(type->string, "longrope") == 0) c->rope_type = PF__ROPE_LONGROPE;
        else return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: rope type \"%s\" is not supported", path, type->string);
    }
    /* LLaMA's default rope rotates whole heads whatever the factor; its scaled ropes shorten the
       frequencies and then fail in transformers */
    if (has_partial && c->partial_rotary_ignored && partial != 1 && c->rope_type != PF__ROPE_DEFAULT)
        return pf__format(message, size, PF_ERROR_UNSUPPORTED,
                          "%s: \"partial_rotary_factor\" = %g with rope type \"%s\" is not supported (transformers "
                          "cannot run it either)", path, partial, type->string);
    if (c->rope_type == PF__ROPE_DEFAULT) return PF_OK;
    if (c->rope_type == PF__ROPE_YARN || c->rope_type == PF__ROPE_LONGROPE) return pf__config_rope_extended(json, rope, c, path, message, size);
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
/* Which layers rotate q and k, where the family has NoPE layers (a no_rope_interval row): config.json's
   no_rope_layers, one 1 (rotary) or 0 (none) a layer, or when it is absent or null every
   no_rope_interval-th layer without (layer l rotates unless (l + 1) % interval is 0), as
   SmolLM3Config derives it. */
static pf_result pf__config_layer_rope(const pf__json *json, pf__config *c, const char *path, char *message,
                                       size_t size) {
    const char *interval_key = pf__config_key(c->arch, offsetof(pf__config, no_rope_interval));
    if (!strcmp(interval_key, "(derived)")) return PF_OK; /* every layer rotates */
    const pf__json *list = pf__json_get(json, "no_rope_layers");
    if (list && (list->type == PF__JSON_NULL || (c->no_rope_empty_default && list->type == PF__JSON_ARRAY && !list->count)))
        list = NULL;
    if (list && (list->type != PF__JSON_ARRAY || list->count != (size_t)c->num_layers))
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"no_rope_layers\" is not a list of %d layers", path,
                          c->num_layers);
    if (!list && c->no_rope_interval <= 0) /* transformers divides by it */
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"%s\" %d is not a positive number", path,
                          interval_key, c->no_rope_interval);
    c->layer_rope = (int *)calloc((size_t)c->num_layers, sizeof(int));
    if (!c->layer_rope) return pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    const pf__json *v = list ? list->first : NULL;
    for (int l = 0; l < c->num_layers; l++, v = v ? v->next : NULL) {
        double x = 0;
        if (list && (pf__json_number(v, &x) != 1 || (x != 0 && x != 1)))
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"no_rope_layers\" holds something other than 0 or 1",
                              path);
        c->layer_rope[l] = list ? x != 0 : (l + 1) % c->no_rope_interval != 0;
    }
    return PF_OK;
}

/* Group-limited routing (DeepSeek): topk_method where the family names its routing so (V2:
   "greedy" takes no groups, "group_limited_greedy" groups scored by their best expert), n_group
   equal groups of experts, topk_group of them kept; and the shared experts' width. */
static pf_result pf__config_router_groups(const pf__json *json, pf__config *c, const char *path, char *message,
                                          size_t size) {
    if (c->router_method_named) {
        const pf__json *method = pf__json_get(json, "topk_method");
        const char *name = method && method->type == PF__JSON_STRING ? method->string : method && method->type != PF__JSON_NULL ? "?" : "greedy";
        if (!strcmp(name, "greedy")) c->router_groups = 0;
        else if (strcmp(name, "group_limited_greedy"))
            return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: \"topk_method\" \"%s\" is not supported (\"greedy\" "
                              "and \"group_limited_greedy\" are)", path, name);
    }
    if (c->router_groups > 256)
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: n_group %d (up to 256 are supported)", path, c->router_groups);
    if (c->router_groups > 1) {
        int per_group = c->num_experts / c->router_groups;
        if (c->num_experts % c->router_groups || c->router_topk_groups < 1 || c->router_topk_groups > c->router_groups ||
            c->router_topk_groups * per_group < c->experts_per_token)
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: n_group %d and topk_group %d do not fit %d experts, %d "
                              "per token", path, c->router_groups, c->router_topk_groups, c->num_experts, c->experts_per_token);
    }
    if (c->shared_experts > 0) {
        if (c->shared_experts > 1024)
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: n_shared_experts %d", path, c->shared_experts);
        c->shared_intermediate_size = c->moe_intermediate_size * c->shared_experts;
    }
    return PF_OK;
}

/* Which layers have experts, where the family has them (num_experts > 0): layer l unless it is
   one of the first first_dense_layers (DeepSeek's first_k_dense_replace), (l + 1) %
   decoder_sparse_step != 0 or l is in mlp_only_layers, as Qwen2-MoE's layers decide; and, where a
   layer has experts, the routing's sizes checked. */
static pf_result pf__config_router_groups(const pf__json *json, pf__config *c, const char *path, char *message,
                                          size_t size);

static pf_result pf__config_layer_sparse(const pf__json *json, pf__config *c, const char *path, char *message,
                                         size_t size) {
    if (c->num_experts <= 0) return PF_OK;
    if (c->decoder_sparse_step < 0)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"decoder_sparse_step\" %d is negative", path,
                          c->decoder_sparse_step);
    c->layer_sparse = (int *)calloc((size_t)c->num_layers, sizeof(int));
    if (!c->layer_sparse) return pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    for (int l = 0; l < c->num_layers; l++) c->layer_sparse[l] = c->decoder_sparse_step <= 1 || (l + 1) % c->decoder_sparse_step == 0;
    const pf__json *dense = pf__json_get(json, "mlp_only_layers");
    if (dense && dense->type == PF__JSON_NULL) dense = NULL;
    if (dense && dense->type != PF__JSON_ARRAY)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"mlp_only_layers\" is not a list", path);
    for (const pf__json *v = dense ? dense->first : NULL; v; v = v->next) {
        double x = -1;
        if (pf__json_number(v, &x) != 1 || x != floor(x))
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"mlp_only_layers\" holds something other than a layer index", path);
        if (x >= 0 && x < c->num_layers) c->layer_sparse[(int)x] = 0; /* others name no layer, as in transformers */
    }
    const pf__json *listed = c->moe_layers_listed ? pf__json_get(json, "moe_layers") : NULL;
    if (listed && listed->type == PF__JSON_NULL) listed = NULL;
    if (listed && listed->type != PF__JSON_ARRAY)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"moe_layers\" is not a list", path);
    if (listed) memset(c->layer_sparse, 0, (size_t)c->num_layers * sizeof(int)); /* the list overrides the interleave */
    for (const pf__json *v = listed ? listed->first : NULL; v; v = v->next) {
        double x = -1;
        if (pf__json_number(v, &x) != 1 || x != floor(x))
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"moe_layers\" holds something other than a layer index", path);
        if (x >= 0 && x < c->num_layers) c->layer_sparse[(int)x] = 1; /* others name no layer, as in transformers */
    }
    int sparse = 0;
    for (int l = 0; l < c->num_layers; l++) sparse |= c->layer_sparse[l] &= l >= c->first_dense_layers;
    if (!sparse) return PF_OK; /* every layer dense: the routing's keys unread, as transformers builds no router */
    if (c->experts_per_token < 1 || c->experts_per_token > c->num_experts || c->moe_intermediate_size < 1 ||
        c->num_experts > 65536)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: %d experts, %d per token, expert width %d do not fit",
                          path, c->num_experts, c->experts_per_token, c->moe_intermediate_size);
    return pf__config_router_groups(json, c, path, message, size);
}

static pf_result pf__config_layer_windows(const pf__json *json, pf__config *c, const char *path, char *message,
                                          size_t size) {
    if (!c->use_sliding_window) c->sliding_window = 0;
    c->layer_window = (int *)calloc(4 * (size_t)c->num_layers, sizeof(int));
    if (!c->layer_window) return pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    c->layer_local = c->layer_window + c->num_layers;
    c->layer_chunk = c->layer_local + c->num_layers;
    c->layer_local_window = c->layer_chunk + c->num_layers;
    const pf__json *types = NULL;
    const char *key = NULL;
    int needed = 0;
    const pf__policy_rows *rows = pf__rows(c->arch);
    for (size_t i = 0; i < rows->num_layer_types && !types; i++) {
        if (rows->layer_types[i].arch != c->arch) continue;
        key = rows->layer_types[i].key;
        needed |= rows->layer_types[i].needed;
        types = pf__json_get(json, key);
        if (types && types->type == PF__JSON_NULL) types = NULL;
        if (types && types->type != PF__JSON_ARRAY)
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"%s\" is not a list", path, key);
    }
    if (!types) {
        if (needed) return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"%s\" is missing", path, key);
        for (int l = 0; l < c->num_layers; l++) {
            c->layer_local[l] = c->nope_windowed && c->layer_rope ? !c->layer_rope[l]
                                : c->window_pattern > 0 ? (l + 1) % c->window_pattern != 0
                                : l >= c->first_window_layer;
            c->layer_window[l] = c->layer_local[l] ? c->sliding_window : 0;
            /* a family with chunks (Llama 4) chunks its rotated layers, as its config's default kinds say */
            c->layer_chunk[l] = c->layer_rope && c->layer_rope[l] ? c->attention_chunk : 0;
        }
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
                if (!strcmp(kind->string, "local")) c->layer_window[l] = c->local_window, c->layer_local[l] = 1;
                else if (!strcmp(kind->string, "sliding_attention")) c->layer_window[l] = c->sliding_window, c->layer_local[l] = 1;
                else if (!strcmp(kind->string, "chunked_attention") && c->attention_chunk > 0) c->layer_chunk[l] = c->attention_chunk;
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

/* Longformer's attention_window: one even window for every layer, or a list of one a layer (LED:
   an encoder layer) (transformers asserts both, and that each is above 0); absent, LongformerConfig's
   and LEDConfig's 512. Each layer keeps its one-sided width, attention_window / 2. */
static pf_result pf__config_local_windows(const pf__json *json, pf__config *c, const char *path, char *message,
                                          size_t size) {
    int layers = pf__archs[c->arch].kind == PF__KIND_SEQ2SEQ ? c->encoder_layers : c->num_layers; /* LED's encoder's */
    const pf__json *windows = pf__json_get(json, "attention_window");
    if (windows && windows->type == PF__JSON_ARRAY && windows->count != (size_t)layers)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"attention_window\" lists %zu windows, the model has %d "
                          "%slayers", path, windows->count, layers, layers == c->num_layers ? "" : "encoder ");
    const pf__json *v = windows && windows->type == PF__JSON_ARRAY ? windows->first : windows;
    for (int l = 0; l < layers; l++) {
        double window = 512; /* absent */
        if (windows) window = v && v->type == PF__JSON_NUMBER ? v->number : -1; /* -1: refused below */
        if (!(window >= 2 && window <= 1e9) || window != floor(window) || fmod(window, 2) != 0)
            return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: \"attention_window\" of layer %d is not an even "
                              "number above 0", path, l);
        c->layer_local_window[l] = (int)(window / 2);
        if (windows && windows->type == PF__JSON_ARRAY) v = v->next;
    }
    return PF_OK;
}

/* Keys we implement for one value only (PF_ARCH_REQUIRE): any other is refused by name. */
static pf_result pf__config_requires(const pf__json *json, pf__arch_id arch, const char *path, char *message, size_t size) {
    const pf__policy_rows *rows = pf__rows(arch);
    for (size_t i = 0; i < rows->num_required_values; i++) {
        const pf__arch_require *q = &rows->required_values[i];
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
        const pf__policy_rows *rows = pf__rows(c->arch);
        for (size_t i = 0; i < rows->num_configs; i++)
            read |= rows->configs[i].arch == c->arch && rows->configs[i].key && !strcmp(rows->configs[i].key, keys[k]);
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
    {"min_p", offsetof(pf_generate_options, min_p), 'f', 0, 1},
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
    {"typical_p", 1}, {"epsilon_cutoff", 0}, {"eta_cutoff", 0}, {"top_h", 0},
    {"diversity_penalty", 0}, {"num_beam_groups", 1}, {"penalty_alpha", 0}, {"encoder_repetition_penalty", 1},
    {"guidance_scale", 1}, {"renormalize_logits", 0},
    {"exponential_decay_length_penalty", NAN},
    {"forced_decoder_ids", NAN},
    {"sequence_bias", NAN}, {"bad_words_ids", NAN}, {"force_words_ids", NAN}, {"constraints", NAN},
    {"stop_strings", NAN}, {"watermarking_config", NAN}, {"max_time", NAN}, {"token_healing", 0},
    {"dola_layers", NAN}, {"prompt_lookup_num_tokens", NAN}, {"assistant_early_exit", NAN},
    /* Whisper's fallback: a segment regenerated at higher temperatures, or dropped as silence */
    {"no_speech_threshold", NAN}, {"logprob_threshold", NAN}, {"compression_ratio_threshold", NAN},
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

/* Whisper's decoder prompt, as its generate() builds the init tokens from generation_config.json:
   the start token; the language (the "language" key, a "<|xx|>" token or a code "xx" of
   lang_to_id) else forced_decoder_ids' entries at positions 1, 2, ...; the task ("task" through
   task_to_id, which replaces a task token already there), or "transcribe" where a language was
   named and no task token is; then <|notimestamps|> (no_timestamps_token_id). A multilingual
   config (lang_to_id) with no language asks for language detection: c->detect_language, refused
   when generating without a prompt of the caller's. return_timestamps (the defaults' option),
   no_timestamps_token_id and max_initial_timestamp_index are kept for the timestamp rules. */
static pf_result pf__whisper_prompt(const pf__json *json, pf__config *c, pf_generate_options *defaults, const char *path,
                                    char *message, size_t size) {
    const pf__json *language = pf__json_get(json, "language"), *task = pf__json_get(json, "task");
    const pf__json *lang_to_id = pf__json_get(json, "lang_to_id"), *task_to_id = pf__json_get(json, "task_to_id");
    const pf__json *forced = pf__json_get(json, "forced_decoder_ids"), *multilingual = pf__json_get(json, "is_multilingual");
    const pf__json *timestamps = pf__json_get(json, "return_timestamps");
    const pf__json *max_initial = pf__json_get(json, "max_initial_timestamp_index");
    int32_t prompt[64];
    int n = 0, no_timestamps = -1, start = c->decoder_start_token_id, lang_given = 0;
    if (language && language->type == PF__JSON_NULL) language = NULL;
    if (task && task->type == PF__JSON_NULL) task = NULL;
    if (timestamps && timestamps->type != PF__JSON_NULL && timestamps->type != PF__JSON_BOOL)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"return_timestamps\" is not true or false", path);
    defaults->return_timestamps = timestamps && timestamps->type == PF__JSON_BOOL && timestamps->boolean;
    int initial = -1;
    if (max_initial && max_initial->type != PF__JSON_NULL && pf__json_token_id(max_initial, &initial) != 1)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"max_initial_timestamp_index\" is not a non-negative "
                          "integer", path);
    if (multilingual && multilingual->type == PF__JSON_BOOL && !multilingual->boolean && (language || task))
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: a language or task for an English-only model", path);
    if (pf__json_token_id(pf__json_get(json, "no_timestamps_token_id"), &no_timestamps) < 0)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"no_timestamps_token_id\" is not a token id", path);
    c->max_initial_timestamp = initial + 1;
    c->timestamp_begin = no_timestamps + 1;
    if (defaults->return_timestamps && no_timestamps < 0)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"return_timestamps\" is true without a "
                          "\"no_timestamps_token_id\" (the timestamp tokens follow it)", path);
    if (start < 0) return PF_OK; /* no start token: nothing to build on */
    prompt[n++] = start;
    int lang_undefined = 1;
    if (!language && !task && forced && forced->type == PF__JSON_ARRAY) { /* [[1, id], [2, id], ...] */
        int position = 1;
        for (const pf__json *e = forced->first; e; e = e->next, position++) {
            const pf__json *at = e->type == PF__JSON_ARRAY && e->count == 2 ? e->first : NULL;
            int id = -1, index = -1, got = at ? pf__json_token_id(at->next, &id) : -1;
            if (!at || pf__json_token_id(at, &index) != 1 || index != position || got < 0 || n >= 60)
                return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"forced_decoder_ids\" does not follow Whisper's "
                                  "prompt pattern ([1, id], [2, id], ...)", path);
            if (position == 1) lang_undefined = got != 1; /* [1, null]: detect the language */
            if (got == 1) prompt[n++] = id;
        }
    }
    if (language) {
        char token[80];
        const char *name = language->type == PF__JSON_STRING ? language->string : "";
        if (strlen(name) < 2 || strlen(name) > 60) name = "";
        snprintf(token, sizeof token, name[0] == '<' ? "%s" : "<|%s|>", name);
        for (char *q = token; *q; q++) *q = (char)tolower((unsigned char)*q);
        int id = -1;
        if (!name[0] || pf__json_token_id(lang_to_id ? pf__json_get(lang_to_id, token) : NULL, &id) != 1)
            return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: \"language\" is not a code of lang_to_id (give "
                              "\"en\" or \"<|en|>\", not a language's name)", path);
        if (n > 1 && lang_undefined == 0) prompt[1] = id;
        else memmove(prompt + 2, prompt + 1, (size_t)(n - 1) * sizeof *prompt), prompt[1] = id, n++;
        lang_undefined = 0;
        lang_given = 1;
    }
    if (lang_undefined && lang_to_id && lang_to_id->type == PF__JSON_OBJECT && lang_to_id->count > 0) {
        c->detect_language = 1;
        if (!(c->lang_ids = (int32_t *)malloc(lang_to_id->count * sizeof(int32_t))))
            return pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
        for (const pf__json *e = lang_to_id->first; e; e = e->next) {
            int id = -1, k = c->num_lang_ids;
            if (pf__json_token_id(e, &id) != 1)
                return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"lang_to_id\" holds a value that is not a token id", path);
            while (k > 0 && c->lang_ids[k - 1] > id) c->lang_ids[k] = c->lang_ids[k - 1], k--; /* kept ascending */
            c->lang_ids[k] = id;
            c->num_lang_ids++;
        }
    }
    if (task || (lang_given && task_to_id)) { /* a named language without a task: transcribe */
        const char *name = task && task->type == PF__JSON_STRING ? task->string : task ? "" : "transcribe";
        int id = -1, found = 0;
        if (pf__json_token_id(task_to_id ? pf__json_get(task_to_id, name) : NULL, &id) != 1)
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: task \"%s\" is not in task_to_id", path, name);
        for (int i = 1; i < n; i++) /* a task token already there is replaced (the given task), or kept */
            for (const pf__json *e = task_to_id->first; e; e = e->next)
                if (e->type == PF__JSON_NUMBER && e->number == prompt[i]) {
                    if (task) prompt[i] = id;
                    found = 1;
                }
        if (!found) prompt[n++] = id;
    }
    if (no_timestamps >= 0 && prompt[n - 1] != no_timestamps) prompt[n++] = no_timestamps;
    c->decoder_prompt_ids = (int32_t *)malloc((size_t)n * sizeof(int32_t));
    if (!c->decoder_prompt_ids) return pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    memcpy(c->decoder_prompt_ids, prompt, (size_t)n * sizeof(int32_t));
    c->num_decoder_prompt_ids = n;
    return PF_OK;
}

/* Reads DIR/generation_config.json when present: its token ids into c (see pf__config_token_ids)
   and the generate() defaults it sets into *defaults (which starts as pf_generate_options_init()). */
PF_PRIVATE pf_result pf__generation_config_read(const char *dir, pf__config *c, pf_generate_options *defaults,
                                            char *message, size_t size) {
    char path[PF__PATH_SIZE];
    pf__json *json;
    if (pf__path_join(path, sizeof path, dir, "generation_config.json"))
        return pf__format(message, size, PF_ERROR_INVALID_ARGUMENT, "path too long: %s", dir);
    /* Whisper without the file: transformers makes its generation config from config.json's keys
       (from_model_config: suppress_tokens, begin_suppress_tokens, forced_decoder_ids, ...) */
    if (!pf__file_exists(path) && c->whisper_prompt && pf__path_join(path, sizeof path, dir, "config.json"))
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
        if (c->whisper_prompt && !strcmp(pf__generation_unsupported[i].key, "forced_decoder_ids")) continue; /* the prompt */
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
    if (!r && c->whisper_prompt) r = pf__whisper_prompt(json, c, defaults, path, message, size);
    if (!r && c->num_decoder_prompt_ids) {
        defaults->decoder_prompt = c->decoder_prompt_ids;
        defaults->decoder_prompt_length = c->num_decoder_prompt_ids;
    }
    pf__json_free(json);
    if (!r && c->pad_token_id >= 0) defaults->pad_token_id = c->pad_token_id;
    return r;
}

/* Token ids must name rows of the vocabulary: finished rows are fed the pad id. */
PF_PRIVATE pf_result pf__config_check_token_ids(const pf__config *c, const char *dir, char *message, size_t size) {
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
static int pf__has_suffix(const char *s, const char *suffix) {
    size_t len = strlen(s), n = strlen(suffix);
    return len >= n && !strcmp(s + len - n, suffix);
}

/* An encoder-decoder's towers by its class: ...ForConditionalGeneration (or no architectures) has
   both and the LM head; ...EncoderModel the encoder alone, as pf_encode's bare encoder; the bare
   ...Model both towers without a head (pf_encode gives its encoder's output; it does not generate). */
static pf_result pf__config_seq2seq_head(const pf__json *first, pf__config *c, const char *path, char *message,
                                         size_t size) {
    const char *name = first && first->type == PF__JSON_STRING ? first->string : NULL;
    if (c->decoder_layers == 0) c->decoder_layers = c->encoder_layers; /* T5: num_decoder_layers absent or null */
    if (name && pf__has_suffix(name, "EncoderModel")) {
        c->head = PF_HEAD_NONE;
        c->decoder_layers = 0;
    } else if (!name || pf__has_suffix(name, "ForConditionalGeneration") || pf__has_suffix(name, "MTModel") || /* MarianMTModel */
               !strcmp(name, "EncoderDecoderModel")) {
        c->head = PF_HEAD_CAUSAL_LM;
    } else if (pf__has_suffix(name, "ForSequenceClassification") &&
               pf__arch_tensor_for(c->arch, PF__SLOT_CLASSIFIER_WEIGHT)) { /* bart-large-mnli */
        c->head = PF_HEAD_SEQUENCE_CLASSIFICATION;
    } else if (pf__has_suffix(name, "ForQuestionAnswering") && pf__arch_tensor_for(c->arch, PF__SLOT_SPAN_WEIGHT)) {
        c->head = PF_HEAD_QUESTION_ANSWERING;
    } else if (pf__has_suffix(name, "Model") && !pf__has_suffix(name, "HeadModel") &&
               !pf__arch_tensor_for(c->arch, PF__SLOT_FRONT_CONV_WEIGHT) && !pf__arch_tensor_for(c->arch, PF__SLOT_MEL_CONV1_WEIGHT)) {
        c->head = PF_HEAD_NONE; /* the bare model of a text encoder-decoder (BigBirdPegasusModel, BartModel): pf_encode
                                   gives its encoder's output; speech ones' bare models stay refused */
    } else { /* the families whose rows name these heads' tensors: BART's */
        return pf__format(message, size, PF_ERROR_UNSUPPORTED,
                          "%s: architecture \"%s\" is not supported (its head; ...ForConditionalGeneration, "
                          "MarianMTModel, EncoderDecoderModel, ...EncoderModel and the bare ...Model are; BART's "
                          "...ForSequenceClassification and "
                          "...ForQuestionAnswering)",
                          path, name);
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

/* VisualBERT's heads by class: ...Model (the pooler), ...ForPreTraining (its masked LM over the
   text and the regions; the sentence-image head unused, as BERT's next-sentence head),
   ...ForVisualReasoning (NLVR2) and ...ForMultipleChoice (a classifier on the pooled output), and
   ...ForQuestionAnswering (VQA: answer scores from the state of the text's token before its last,
   transformers' attention_mask.sum(1) - 2, without the pooler). ...ForRegionToPhraseAlignment
   needs each token's region (region_to_phrase_position), an input we do not take. */
static pf_result pf__config_two_streams(const pf__json *first, pf__config *c, const char *path, char *message,
                                        size_t size);
static pf_result pf__config_region_head(const pf__json *first, pf__config *c, const char *path, char *message,
                                        size_t size) {
    if (strcmp(pf__config_key(c->arch, offsetof(pf__config, cross_layers)), "(derived)"))
        return pf__config_two_streams(first, c, path, message, size);
    static const struct { const char *suffix; pf_head head; } heads[] = {
        {"Model", PF_HEAD_NONE}, {"ForPreTraining", PF_HEAD_MASKED_LM}, {"ForVisualReasoning", PF_HEAD_SEQUENCE_CLASSIFICATION},
        {"ForMultipleChoice", PF_HEAD_MULTIPLE_CHOICE}, {"ForQuestionAnswering", PF_HEAD_SEQUENCE_CLASSIFICATION},
    };
    if (c->visual_embedding_dim < 1 || c->visual_embedding_dim > 1000000)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"visual_embedding_dim\" %d is not a width", path,
                          c->visual_embedding_dim);
    c->head = PF_HEAD_NONE;
    if (!first || first->type != PF__JSON_STRING) return PF_OK;
    for (size_t i = 0; i < PF__COUNT(heads); i++)
        if (pf__has_suffix(first->string, heads[i].suffix)) {
            c->head = heads[i].head;
            c->classify_before_last_token = pf__has_suffix(first->string, "ForQuestionAnswering");
            if (c->head == PF_HEAD_MULTIPLE_CHOICE) c->num_labels = 1; /* a score per choice */
            return PF_OK;
        }
    return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: architecture \"%s\" is not supported (%s's ...Model, "
                      "...ForPreTraining, ...ForVisualReasoning, ...ForMultipleChoice and ...ForQuestionAnswering are; "
                      "region-to-phrase alignment takes region_to_phrase_position, which pf_encode_regions does not)",
                      path, first->string, c->model_type);
}

/* LXMERT's blocks (pf__config.two_streams: the language layers, the relation layers, then each
   cross-modality layer as two blocks) and heads: ...Model (the pooler) and ...ForQuestionAnswering
   (its answer head on the pooled output, num_qa_labels scores). ...ForPreTraining is refused: its
   cross_relationship_score and question_answering_score are outputs a pf_encoding has no place
   for. The keys only it reads are then without effect: task_matched, task_mask_lm,
   task_obj_predict and task_qa choose its heads and losses, visual_obj_loss, visual_attr_loss,
   visual_feat_loss, visual_loss_normalizer, num_object_labels and num_attr_labels its object
   head's outputs and loss (training alone reads them). */
static pf_result pf__config_two_streams(const pf__json *first, pf__config *c, const char *path, char *message,
                                        size_t size) {
    long long blocks = (long long)c->language_layers + c->relation_layers + 2LL * c->cross_layers;
    if (c->language_layers < 0 || c->relation_layers < 0 || c->cross_layers < 0 || blocks < 1 || blocks > 100000)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: l_layers %d, r_layers %d and x_layers %d are not layer "
                          "counts", path, c->language_layers, c->relation_layers, c->cross_layers);
    if (c->visual_embedding_dim < 1 || c->visual_embedding_dim > 1000000 || c->visual_pos_dim < 1 ||
        c->visual_pos_dim > 1000000)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"visual_feat_dim\" %d or \"visual_pos_dim\" %d is not a "
                          "width", path, c->visual_embedding_dim, c->visual_pos_dim);
    c->two_streams = 1;
    c->num_layers = (int)blocks;
    c->head = PF_HEAD_NONE;
    const char *name = first && first->type == PF__JSON_STRING ? first->string : "";
    if (!*name || pf__has_suffix(name, "Model")) return PF_OK;
    if (pf__has_suffix(name, "ForQuestionAnswering")) {
        if (c->num_qa_labels < 1 || c->num_qa_labels > 1000000)
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"num_qa_labels\" %d is not a count", path,
                              c->num_qa_labels);
        c->head = PF_HEAD_SEQUENCE_CLASSIFICATION;
        c->num_labels = c->num_qa_labels;
        return PF_OK;
    }
    return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: architecture \"%s\" is not supported (%s's ...Model and "
                      "...ForQuestionAnswering are; ...ForPreTraining's three outputs have no place in a pf_encoding)",
                      path, name, c->model_type);
}

/* LUKE's heads on entities: ...ForEntityClassification (the first entity's state) and
   ...ForEntityPairClassification (the first two's side by side) classify a row as sequence
   classification does; ...ForEntitySpanClassification and ForMaskedLM's entity predictions are not
   implemented. 1: the head is one of these (set), 0: the generic heads decide, else an error. */
static int pf__config_entity_head(const pf__json *first, pf__config *c) {
    const char *name = first && first->type == PF__JSON_STRING ? first->string : "";
    c->classify_entities = pf__has_suffix(name, "ForEntityClassification") ? 1
                           : pf__has_suffix(name, "ForEntityPairClassification") ? 2 : 0;
    if (!c->classify_entities) return 0;
    c->head = PF_HEAD_SEQUENCE_CLASSIFICATION;
    return 1;
}

static pf_result pf__config_head(const pf__json *json, pf__config *c, const char *path, char *message, size_t size) {
    static const struct { const char *suffix; pf_head head; } heads[] = {
        {"ForMaskedLM", PF_HEAD_MASKED_LM}, {"ForSequenceClassification", PF_HEAD_SEQUENCE_CLASSIFICATION},
        {"ForTokenClassification", PF_HEAD_TOKEN_CLASSIFICATION}, {"ForQuestionAnswering", PF_HEAD_QUESTION_ANSWERING},
        {"ForImageClassification", PF_HEAD_IMAGE_CLASSIFICATION}, {"ForImageClassificationWithTeacher", PF_HEAD_IMAGE_CLASSIFICATION},
        {"ForCTC", PF_HEAD_CTC}, {"ForPreTraining", PF_HEAD_REPLACED_TOKEN_DETECTION}, /* ELECTRA's; not BERT's */
        {"ForMultipleChoice", PF_HEAD_MULTIPLE_CHOICE}, {"ForNextSentencePrediction", PF_HEAD_NEXT_SENTENCE},
        {"QuestionEncoder", PF_HEAD_NONE}, {"ContextEncoder", PF_HEAD_NONE}, /* DPR's */
        {"WithLMHeadModel", PF_HEAD_MASKED_LM}, {"ForQuestionAnsweringSimple", PF_HEAD_QUESTION_ANSWERING}, /* XLM's */
        {"Model", PF_HEAD_NONE}, {"ModelWithProjection", PF_HEAD_NONE}, /* CLIP's towers, with their projection */
    };
    const pf__json *labels = pf__json_get(json, "id2label");
    double count = 2;
    if (labels && labels->type == PF__JSON_OBJECT) count = (double)labels->count;
    else if (pf__json_number(pf__json_get(json, "num_labels"), &count) < 0 || !(count >= 1 && count <= 1e6) || count != floor(count))
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"num_labels\" is not a count", path);
    c->num_labels = count >= 1 ? (int)count : 1;
    const pf__json *names = pf__json_get(json, "architectures");
    const pf__json *first = names && names->type == PF__JSON_ARRAY ? names->first : NULL;
    if (first && first->type == PF__JSON_STRING && strlen(first->string) < sizeof c->class_name)
        memcpy(c->class_name, first->string, strlen(first->string) + 1);
    if (c->reformer) { /* its classes: pf__config_reformer */
        c->head = PF_HEAD_NONE;
        return PF_OK;
    }
    if (pf__archs[c->arch].kind == PF__KIND_DECODER) {
        /* besides the causal LM: reward models (LlamaForSequenceClassification's score) and the bare
           model that decoder-based embedders ship (e5-mistral's MistralModel); GPT2LMHeadModel and
           GPT2DoubleHeadsModel are causal LMs */
        const char *name = first && first->type == PF__JSON_STRING ? first->string : "";
        c->head = pf__has_suffix(name, "ForSequenceClassification") ? PF_HEAD_SEQUENCE_CLASSIFICATION
                  : pf__has_suffix(name, "ForTokenClassification")  ? PF_HEAD_TOKEN_CLASSIFICATION
                  : pf__has_suffix(name, "ForQuestionAnswering")    ? PF_HEAD_QUESTION_ANSWERING
                  : pf__has_suffix(name, "Model") && !pf__has_suffix(name, "HeadModel") && !pf__has_suffix(name, "HeadsModel")
                      ? PF_HEAD_NONE
                      : PF_HEAD_CAUSAL_LM;
        return PF_OK;
    }
    if (pf__archs[c->arch].kind == PF__KIND_SEQ2SEQ) return pf__config_seq2seq_head(first, c, path, message, size);
    if (strcmp(pf__config_key(c->arch, offsetof(pf__config, visual_embedding_dim)), "(derived)"))
        return pf__config_region_head(first, c, path, message, size);
    if (strcmp(pf__config_key(c->arch, offsetof(pf__config, entity_vocab_size)), "(derived)")) { /* LUKE */
        if (pf__config_entity_head(first, c)) return PF_OK;
        const char *name = first && first->type == PF__JSON_STRING ? first->string : "";
        if (pf__has_suffix(name, "ForEntitySpanClassification") || pf__has_suffix(name, "ForMaskedLM"))
            return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: architecture \"%s\" is not supported yet (%s's "
                              "...Model, ...ForEntityClassification, ...ForEntityPairClassification, "
                              "...ForSequenceClassification, ...ForTokenClassification, ...ForQuestionAnswering and "
                              "...ForMultipleChoice are)", path, name, c->model_type);
    }
    c->head = PF_HEAD_NONE;
    if (!first || first->type != PF__JSON_STRING) return PF_OK; /* the tensors must then be the bare encoder's */
    size_t len = strlen(first->string);
    c->teacher_head = len >= 11 && !strcmp(first->string + len - 11, "WithTeacher");
    if (len >= 14 && !strcmp(first->string + len - 14, "WithProjection")) c->with_projection = 1;
    const pf__json *pooler_act = pf__json_get(json, "pooler_act"); /* ViT's pooler activation */
    if (pooler_act && pooler_act->type == PF__JSON_STRING && strcmp(pooler_act->string, "tanh"))
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: \"pooler_act\" = \"%s\" is not supported (tanh is)", path,
                          pooler_act->string);
    for (size_t i = 0; i < PF__COUNT(heads); i++) {
        size_t n = strlen(heads[i].suffix);
        if (len >= n && !strcmp(first->string + len - n, heads[i].suffix)) {
            c->head = heads[i].head;
            if (c->head == PF_HEAD_REPLACED_TOKEN_DETECTION && !pf__arch_tensor_for(c->arch, PF__SLOT_DISCRIMINATOR_WEIGHT)) {
                /* BertForPreTraining: its masked LM, as transformers' AutoModelForMaskedLM loads it
                   (the next-sentence head a pretraining leftover); others we lack */
                if (!pf__arch_tensor_for(c->arch, PF__SLOT_NEXT_SENTENCE_WEIGHT)) break;
                c->head = PF_HEAD_MASKED_LM;
            }
            if (c->head == PF_HEAD_MULTIPLE_CHOICE) c->num_labels = 1; /* a score per choice, whatever id2label says */
            if (c->head == PF_HEAD_NEXT_SENTENCE) c->num_labels = 2;
            return PF_OK;
        }
    }
    return pf__format(message, size, PF_ERROR_UNSUPPORTED,
                      "%s: architecture \"%s\" is not supported (its head; the encoder alone, ForMaskedLM, "
                      "ForSequenceClassification, ForTokenClassification and ForQuestionAnswering are)", path, first->string);
}

/* A list of positive ints (conv_dim, ...): *count of them into out[max]; 1 if present. */
static int pf__config_int_list(const pf__json *json, const char *key, int *out, int max, int *count) {
    const pf__json *list = pf__json_get(json, key);
    if (!list) return 0;
    if (list->type != PF__JSON_ARRAY || list->count < 1 || list->count > (size_t)max) return -1;
    int n = 0;
    for (const pf__json *v = list->first; v; v = v->next) {
        double x = 0;
        if (pf__json_number(v, &x) != 1 || !(x >= 1 && x <= 1e6) || x != floor(x)) return -1;
        out[n++] = (int)x;
    }
    *count = n;
    return 1;
}

/* A speech encoder's front end (Wav2Vec2, HuBERT): the keys that change its math, each read or
   refused by name. Keys that only matter in training are safe to ignore: apply_spec_augment and
   mask_time_* / mask_feature_* (SpecAugment masks frames only when the model trains, or when a
   caller passes mask_time_indices), the dropouts and layerdrop, ctc_loss_reduction and
   ctc_zero_infinity (the loss). Heads other than CTC are refused, and so are adapters. */
static pf_result pf__config_speech(const pf__json *json, pf__config *c, const char *path, char *message, size_t size) {
    struct pf__speech_config *sc = &c->speech_config;
    static const int base_dims[] = {512, 512, 512, 512, 512, 512, 512}, base_kernels[] = {10, 3, 3, 3, 3, 2, 2},
                     base_strides[] = {5, 2, 2, 2, 2, 2, 2};
    if (!c->speech)
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: a CTC head on model_type \"%s\", which is not a "
                          "speech encoder", path, c->model_type);
    if (c->head != PF_HEAD_NONE && c->head != PF_HEAD_CTC)
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: model_type \"%s\" runs as the bare encoder (...Model) "
                          "or with its CTC head (...ForCTC); config.json's architectures names another head", path,
                          c->model_type);
    memcpy(sc->conv_dim, base_dims, sizeof base_dims);
    memcpy(sc->conv_kernel, base_kernels, sizeof base_kernels);
    memcpy(sc->conv_stride, base_strides, sizeof base_strides);
    int dims = 7, kernels = 7, strides = 7;
    if (pf__config_int_list(json, "conv_dim", sc->conv_dim, 16, &dims) < 0 ||
        pf__config_int_list(json, "conv_kernel", sc->conv_kernel, 16, &kernels) < 0 ||
        pf__config_int_list(json, "conv_stride", sc->conv_stride, 16, &strides) < 0 || dims != kernels || dims != strides)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: conv_dim, conv_kernel and conv_stride must be lists of "
                          "one length (1 to 16) of positive integers", path);
    sc->num_convs = dims;
    double x = 0;
    const pf__json *v = pf__json_get(json, "conv_bias");
    if (pf__json_number(v, &x) < 0) return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"conv_bias\" is not a boolean", path);
    sc->conv_bias = v && x != 0;
    const pf__json *norm = pf__json_get(json, "feat_extract_norm");
    const char *norm_name = norm && norm->type == PF__JSON_STRING ? norm->string : norm ? "?" : "group";
    if (strcmp(norm_name, "group") && strcmp(norm_name, "layer"))
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: \"feat_extract_norm\" = \"%s\" (\"group\" and "
                          "\"layer\" are implemented)", path, norm_name);
    sc->layer_norm_convs = !strcmp(norm_name, "layer");
    const pf__json *act = pf__json_get(json, "feat_extract_activation");
    if (act && (act->type != PF__JSON_STRING || strcmp(act->string, "gelu")))
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: \"feat_extract_activation\" = \"%s\" (\"gelu\" is "
                          "implemented)", path, act->type == PF__JSON_STRING ? act->string : "?");
    double kernel = 128, groups = 16;
    if (pf__json_number(pf__json_get(json, "num_conv_pos_embeddings"), &kernel) < 0 ||
        pf__json_number(pf__json_get(json, "num_conv_pos_embedding_groups"), &groups) < 0 || !(kernel >= 1 && kernel <= 65536) ||
        kernel != floor(kernel) || !(groups >= 1 && groups <= 65536) || groups != floor(groups) || c->hidden_size <= 0 ||
        c->hidden_size % (int)groups)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: num_conv_pos_embeddings %g and num_conv_pos_embedding_groups "
                          "%g do not fit hidden_size %d", path, kernel, groups, c->hidden_size);
    sc->pos_kernel = (int)kernel;
    sc->pos_groups = (int)groups;
    v = pf__json_get(json, "adapter_attn_dim"); /* MMS's per-language adapters in every block */
    if (v && v->type != PF__JSON_NULL)
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: \"adapter_attn_dim\" (attention adapters) is not "
                          "supported", path);
    /* One frame needs kernel samples of the last conv, each of those stride apart, and so on down. */
    long long need = 1, stride = 1;
    for (int l = sc->num_convs - 1; l >= 0 && need <= 1 << 24; l--) need = (need - 1) * sc->conv_stride[l] + sc->conv_kernel[l];
    for (int l = 0; l < sc->num_convs && stride <= 1 << 24; l++) stride *= sc->conv_stride[l]; /* each factor <= 1e6 */
    if (need > 1 << 24 || stride > 1 << 24)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: the feature encoder's kernels and strides are absurd", path);
    sc->min_samples = (int)need;
    sc->stride = (int)stride;
    c->embed_norm = !c->pre_norm; /* encoder.layer_norm: after the positions, or the final norm */
    return PF_OK;
}

/* Speech2Text's convolutional subsampler: num_conv_layers convolutions of stride 2 over the
   frames, kernel conv_kernel_sizes[l] zero-padded by its half, conv_channels out (the last:
   2 * d_model), each followed by a GLU that halves the channels. An even kernel is refused: it
   makes one frame more than transformers' attention mask counts (_get_feat_extract_output_lengths). */
static pf_result pf__config_subsampler(const pf__json *json, pf__config *c, const char *path, char *message, size_t size) {
    struct pf__speech_config *sc = &c->speech_config;
    double layers = 2, channels = 1024, per_channel = 80, input_channels = 1;
    int kernels = 2;
    sc->conv_kernel[0] = sc->conv_kernel[1] = 5;
    if (pf__json_number(pf__json_get(json, "num_conv_layers"), &layers) < 0 || !(layers >= 1 && layers <= 16) ||
        layers != floor(layers))
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"num_conv_layers\" is not in 1..16", path);
    if (pf__config_int_list(json, "conv_kernel_sizes", sc->conv_kernel, 16, &kernels) < 0 || kernels != (int)layers)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"conv_kernel_sizes\" must list num_conv_layers (%d) "
                          "positive integers", path, (int)layers);
    for (int l = 0; l < kernels; l++)
        if (sc->conv_kernel[l] % 2 == 0 || sc->conv_kernel[l] > 1023)
            return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: \"conv_kernel_sizes\" [%d] = %d: odd kernels up to "
                              "1023 are supported", path, l, sc->conv_kernel[l]);
    if (pf__json_number(pf__json_get(json, "conv_channels"), &channels) < 0 || !(channels >= 2 && channels <= 1e6) ||
        channels != floor(channels) || (int)channels % 2)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"conv_channels\" is not an even count", path);
    if (pf__json_number(pf__json_get(json, "input_feat_per_channel"), &per_channel) < 0 ||
        pf__json_number(pf__json_get(json, "input_channels"), &input_channels) < 0 ||
        !(per_channel >= 1 && per_channel <= 65536) || per_channel != floor(per_channel) ||
        !(input_channels >= 1 && input_channels <= 64) || input_channels != floor(input_channels))
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"input_feat_per_channel\" or \"input_channels\" is not a "
                          "count", path);
    if (c->position_offset <= 0) /* read from pad_token_id: 0 would give every frame position 0, as transformers does */
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: \"pad_token_id\" 0 (the encoder's positions would all "
                          "be the padding row) is not supported", path);
    if (c->hidden_size <= 0 || c->hidden_size > (1 << 20))
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: d_model %d", path, c->hidden_size);
    sc->num_convs = (int)layers;
    for (int l = 0; l < sc->num_convs; l++) {
        sc->conv_stride[l] = 2;
        sc->conv_dim[l] = l + 1 < sc->num_convs ? (int)channels : 2 * c->hidden_size;
    }
    sc->conv_bias = 1;
    sc->feature_width = (int)(per_channel * input_channels);
    return PF_OK;
}

/* The text-tower row of a multimodal model_type (PF_ARCH_TEXT_TOWER), or NULL. */
static const pf__text_tower *pf__text_tower_of(const pf__json *type) {
    for (size_t i = 0; type && type->type == PF__JSON_STRING && pf__text_towers[i].model_type[0]; i++)
        if (pf__text_towers[i].text && !strcmp(pf__text_towers[i].model_type, type->string)) return &pf__text_towers[i];
    return NULL;
}

/* A multimodal checkpoint's text model: text_config read as the text row's config. The LM head of
   a ...ForConditionalGeneration is the text model's; other classes (its classifiers) are refused.
   transformers 5 ties by the top-level tie_word_embeddings (Mistral3Config's defaults to true over a
   text_config of false, and its checkpoints then hold no LM head); where config.json has none, as
   the hub's checkpoints written by transformers 4 (which tied by text_config's), text_config's. */
static pf_result pf__config_text_tower(const pf__json *json, const pf__text_tower *tower, const char *path, pf__config *cfg,
                                       char *message, size_t size) {
    const pf__json *text = pf__json_get(json, "text_config");
    if (!text || text->type != PF__JSON_OBJECT)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: model_type \"%s\" without a \"text_config\" object", path,
                          tower->model_type);
    const pf__json *names = pf__json_get(json, "architectures");
    const pf__json *first = names && names->type == PF__JSON_ARRAY ? names->first : NULL;
    if (first && (first->type != PF__JSON_STRING || !pf__has_suffix(first->string, "ForConditionalGeneration")))
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: architecture \"%s\" is not supported (model_type \"%s\": "
                          "the text model of a ...ForConditionalGeneration is)", path,
                          first->type == PF__JSON_STRING ? first->string : "?", tower->model_type);
    const pf__json *type = pf__json_get(text, "model_type");
    if (type && (type->type != PF__JSON_STRING || strcmp(type->string, pf__archs[tower->arch].model_type)))
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: text_config's model_type \"%s\" is not supported "
                          "(model_type \"%s\": \"%s\" is)", path, type->type == PF__JSON_STRING ? type->string : "?",
                          tower->model_type, pf__archs[tower->arch].model_type);
    char where[PF__PATH_SIZE + 16];
    snprintf(where, sizeof where, "%s: text_config", path);
    pf_result r = pf__config_parse(text, where, (int)tower->arch, cfg, message, size);
    const pf__json *tie = pf__json_get(json, "tie_word_embeddings");
    double tied = 0;
    if (!r && tie) {
        if (pf__json_number(tie, &tied) < 0)
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"tie_word_embeddings\" is not a boolean", path);
        cfg->tie_word_embeddings = tied != 0;
    }
    if (!r) snprintf(cfg->text_tower_of, sizeof cfg->text_tower_of, "%s", tower->model_type);
    return r;
}

/* transformers' EncoderDecoderModel (model_type "encoder-decoder"): two towers whose configs are
   config.json's "encoder" and "decoder" objects, read by the row of the encoder's family (its
   PF_ARCH_CONFIG keys name them as "encoder.x" and "decoder.x"). One forward serves both towers,
   so the pairs whose blocks share their traits are the ones run: BERT -> BERT and BertGeneration
   -> BertGeneration (post-norm blocks, the decoder's with BERT's cross-attention); the values the
   towers share are checked equal here. */
static const struct { const char *family; pf__arch_id arch; } pf__encoder_decoder_pairs[] = {
    {"bert", PF__ARCH_ENCODER_DECODER}, {"bert-generation", PF__ARCH_BERT_GENERATION},
    {"roberta", PF__ARCH_ROBERTA_ENCODER_DECODER}, {"xlm-roberta", PF__ARCH_ROBERTA_ENCODER_DECODER},
    {"camembert", PF__ARCH_ROBERTA_ENCODER_DECODER},
};

static pf_result pf__config_encoder_decoder(const pf__json *json, const char *path, pf__config *cfg, char *message,
                                            size_t size) {
    const pf__json *encoder = pf__json_get(json, "encoder"), *decoder = pf__json_get(json, "decoder");
    if (!encoder || encoder->type != PF__JSON_OBJECT || !decoder || decoder->type != PF__JSON_OBJECT)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: model_type \"encoder-decoder\" without \"encoder\" and "
                          "\"decoder\" objects", path);
    const pf__json *types[2] = {pf__json_get(encoder, "model_type"), pf__json_get(decoder, "model_type")};
    const char *names[2];
    for (int k = 0; k < 2; k++) names[k] = types[k] && types[k]->type == PF__JSON_STRING ? types[k]->string : "?";
    int arch = -1;
    for (size_t i = 0; i < PF__COUNT(pf__encoder_decoder_pairs); i++)
        if (!strcmp(names[0], pf__encoder_decoder_pairs[i].family) && !strcmp(names[1], names[0])) /* one family */
            arch = (int)pf__encoder_decoder_pairs[i].arch;
    if (arch < 0)
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: an encoder-decoder of a \"%s\" encoder and a \"%s\" "
                          "decoder is not supported (two towers of bert, bert-generation or roberta / xlm-roberta / camembert "
                          "are: one forward runs both, so their blocks must share norm placement and positions)", path, names[0],
                          names[1]);
    /* values the two towers must share: one field holds each */
    static const char *const shared[] = {"hidden_size", "hidden_act", "layer_norm_eps", "max_position_embeddings",
                                         "type_vocab_size", "position_embedding_type",
                                         "pad_token_id"}; /* RoBERTa's positions start after it */
    for (size_t i = 0; i < PF__COUNT(shared); i++) {
        const pf__json *a = pf__json_get(encoder, shared[i]), *b = pf__json_get(decoder, shared[i]);
        double x = 0, y = 0;
        int same = (!a || a->type == PF__JSON_NULL) && (!b || b->type == PF__JSON_NULL);
        if (a && b && a->type == PF__JSON_STRING && b->type == PF__JSON_STRING) same = !strcmp(a->string, b->string);
        else if (a && b && pf__json_number(a, &x) == 1 && pf__json_number(b, &y) == 1) same = x == y;
        if (!same)
            return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: the encoder's and the decoder's \"%s\" differ (or "
                              "one lacks it): not supported (one forward runs both towers)", path, shared[i]);
        if (b && b->type == PF__JSON_STRING && !strcmp(shared[i], "position_embedding_type") && strcmp(b->string, "absolute"))
            return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: \"position_embedding_type\" \"%s\" is not "
                              "supported (absolute is)", path, b->string);
    }
    pf_result r = pf__config_parse(json, path, arch, cfg, message, size);
    if (r) return r;
    /* the decoder's LM head is tied (or not) by the decoder's config, as its own model ties it */
    const pf__json *tie = pf__json_get(decoder, "tie_word_embeddings");
    double tied = 1;
    if (tie && pf__json_number(tie, &tied) < 0)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: decoder's \"tie_word_embeddings\" is not a boolean", path);
    cfg->tie_word_embeddings = tied != 0;
    snprintf(cfg->model_type, sizeof cfg->model_type, "encoder-decoder");
    return PF_OK;
}

/* Reads config.json into cfg, choosing the architecture row by model_type. */
PF_PRIVATE pf_result pf__config_read(const char *dir, pf__config *cfg, char *message, size_t size) {
    char path[PF__PATH_SIZE];
    pf__json *json;
    pf__config_defaults(cfg);
    if (pf__path_join(path, sizeof path, dir, "config.json"))
        return pf__format(message, size, PF_ERROR_INVALID_ARGUMENT, "path too long: %s", dir);
    pf_result r = pf__json_load(path, &json, message, size);
    if (r) return r;
    const pf__json *type = pf__json_get(json, "model_type");
    const pf__text_tower *tower = pf__text_tower_of(type);
    int is_type_string = type && type->type == PF__JSON_STRING;
    if (is_type_string && !strcmp(type->string, "encoder-decoder"))
        r = pf__config_encoder_decoder(json, path, cfg, message, size);
    else if (is_type_string && !strcmp(type->string, "bert-generation"))
        r = pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: a BertGeneration tower alone (BertGenerationEncoder, "
                       "BertGenerationDecoder) is not supported; an EncoderDecoderModel of two is", path);
    else
        r = tower ? pf__config_text_tower(json, tower, path, cfg, message, size) : pf__config_parse(json, path, -1, cfg, message, size);
    pf__json_free(json);
    return r;
}

/* The architecture row of a config: arch itself, or the row (built in, alias or registered) of
   the object's model_type when arch is -1; -1 after writing the message. */
/* A model_type no row knows, with "architectures" naming a transformers class whose code runs it
   (PF_ARCH_CLASS: LLaMA's clones with a model_type of their own): that row, or -1. */
static int pf__config_arch_by_class(const pf__json *json) {
    const pf__json *classes = pf__json_get(json, "architectures");
    if (!classes || classes->type != PF__JSON_ARRAY) return -1;
    for (const pf__json *c = classes->first; c; c = c->next)
        for (size_t i = 0; c->type == PF__JSON_STRING && i < PF__COUNT(pf__arch_classes); i++)
            if (!strcmp(c->string, pf__arch_classes[i].name)) return (int)pf__arch_classes[i].arch;
    return -1;
}

static int pf__config_arch(const pf__json *json, const char *path, int arch, pf__config *cfg, pf_result *r,
                           char *message, size_t size) {
    const pf__json *type = pf__json_get(json, "model_type");
    if (arch < 0 && (!type || type->type != PF__JSON_STRING)) {
        *r = pf__format(message, size, PF_ERROR_FORMAT, "%s: no \"model_type\" string", path);
        return -1;
    }
    int by_type = arch < 0; /* else the caller's row, whatever the object says */
    snprintf(cfg->model_type, sizeof cfg->model_type, "%s", by_type ? type->string : pf__archs[arch].model_type);
    for (int a = 0; by_type && a < PF__ARCH_COUNT; a++)
        if (strcmp(pf__archs[a].model_type, type->string) == 0) arch = a;
    for (size_t i = 0; by_type && i < PF__COUNT(pf__arch_aliases); i++)
        if (strcmp(pf__arch_aliases[i].model_type, type->string) == 0) arch = (int)pf__arch_aliases[i].arch;
    if (arch < 0) arch = pf__policy_acquire(type->string); /* a registered one, held until pf_free */
    if (arch < 0 && by_type) arch = pf__config_arch_by_class(json);
    if (arch >= 0) return arch;
    char supported[1024] = "";
    for (int a = 0; a < PF__ARCH_COUNT; a++) {
        size_t used = strlen(supported);
        snprintf(supported + used, sizeof supported - used, "%s%s", a ? ", " : "", pf__archs[a].model_type);
    }
    for (size_t i = 0; i < PF__COUNT(pf__arch_aliases); i++) {
        size_t used = strlen(supported);
        snprintf(supported + used, sizeof supported - used, ", %s", pf__arch_aliases[i].model_type);
    }
    pthread_mutex_lock(&pf__policy_lock);
    for (int i = 0; i < PF__MAX_REGISTERED; i++) {
        size_t used = strlen(supported);
        if (pf__registered_policies[i].in_use)
            snprintf(supported + used, sizeof supported - used, ", %s", pf__archs[PF__ARCH_COUNT + i].model_type);
    }
    pthread_mutex_unlock(&pf__policy_lock);
    *r = pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: model_type \"%s\" is not supported (supported: %s)",
                    path, type->string, supported);
    return -1;
}

/* The policy's numeric config rows into cfg's fields. */
static pf_result pf__config_read_rows(const pf__json *json, const char *path, pf__config *cfg, char *message,
                                      size_t size) {
    pf_result r = PF_OK;
    /* Each field: the first alias present wins; later rows for the same field are aliases. */
    unsigned char done[sizeof(pf__config)] = {0};
    const pf__policy_rows *rows = pf__rows(cfg->arch);
    for (size_t i = 0; i < rows->num_configs && !r; i++) {
        const pf__arch_config *c = &rows->configs[i];
        if (c->arch != cfg->arch || done[c->offset]) continue;
        int last_alias = 1;
        for (size_t j = i + 1; j < rows->num_configs; j++)
            if (rows->configs[j].arch == cfg->arch && rows->configs[j].offset == c->offset) last_alias = 0;
        double value = c->fallback;
        const pf__json *v = c->key ? pf__json_get_path(json, c->key) : NULL; /* "decoder.x": an encoder-decoder's */
        int found = pf__json_number(v, &value);
        for (size_t j = 0; v && v->type == PF__JSON_NULL && j < rows->num_nulls; j++)
            if (rows->nulls[j].arch == cfg->arch && !strcmp(rows->nulls[j].key, c->key)) {
                value = rows->nulls[j].value;
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
    return r;
}

/* A "|"-separated name or a list of names (DeBERTa's pos_att_type, norm_rel_ebd): 1 when `name`
   is among them (lowercase, spaces trimmed, as transformers reads them), 0 when not, -1 when the
   value is neither a string nor a list of strings. */
static int pf__config_names_have(const pf__json *v, const char *name) {
    if (!v || v->type == PF__JSON_NULL) return 0;
    const pf__json *item = v->type == PF__JSON_ARRAY ? v->first : v;
    if (v->type != PF__JSON_ARRAY && v->type != PF__JSON_STRING) return -1;
    size_t n = strlen(name);
    for (; item; item = v->type == PF__JSON_ARRAY ? item->next : NULL) {
        if (item->type != PF__JSON_STRING) return -1;
        for (const char *p = item->string; *p;) {
            while (*p == ' ' || *p == '|') p++;
            const char *end = p;
            while (*end && *end != '|') end++;
            const char *last = end;
            while (last > p && last[-1] == ' ') last--;
            size_t k = 0;
            while (k < n && p + k < last && tolower((unsigned char)p[k]) == name[k]) k++;
            if (k == n && p + n == last) return 1;
            p = end;
        }
    }
    return 0;
}

/* DeBERTa's disentangled attention (a family whose rows read relative_attention): pos_att_type's
   terms, norm_rel_ebd, the span of the relative embeddings and the scores' scale; its pooler's
   activation by name. */
static pf_result pf__config_disentangled(const pf__json *json, pf__config *c, const char *path, char *message, size_t size) {
    const pf__json *types = pf__json_get(json, "pos_att_type"), *norm = pf__json_get(json, "norm_rel_ebd");
    c->rel_c2p = pf__config_names_have(types, "c2p");
    c->rel_p2c = pf__config_names_have(types, "p2c");
    c->rel_embed_norm = pf__config_names_have(norm, "layer_norm");
    if (c->rel_c2p < 0 || c->rel_p2c < 0 || c->rel_embed_norm < 0)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"pos_att_type\" or \"norm_rel_ebd\" is not a name or a list of names",
                          path);
    if (pf__config_names_have(types, "p2p") || pf__config_names_have(types, "c2c"))
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: \"pos_att_type\" p2p (DeBERTa v1's research "
                          "term) is not supported: c2p and p2c are", path);
    if (c->max_relative_positions < 1) c->max_relative_positions = c->max_positions;
    c->rel_span = c->position_buckets > 0 ? c->position_buckets : c->max_relative_positions;
    c->disentangled = c->relative_attention && (c->rel_c2p || c->rel_p2c);
    if (!c->relative_attention) c->rel_embed_norm = 0; /* transformers builds the norm, the embeddings absent */
    if (c->disentangled && !c->share_att_key && !(c->rel_c2p && c->rel_p2c))
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: \"pos_att_type\" with one of c2p and p2c and the "
                          "positions' own projections (share_att_key false) is not supported: both terms are", path);
    if (c->disentangled && (c->rel_span > (1 << 16) || (c->position_buckets > 0 && c->max_relative_positions <= c->position_buckets / 2 + 1)))
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: position_buckets %d and max_relative_positions %d do not fit",
                          path, c->position_buckets, c->max_relative_positions);
    if (c->embed_dim && c->embed_dim != c->hidden_size)
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: \"embedding_size\" %d != hidden_size %d (DeBERTa's "
                          "embed_proj before the embedding norm) is not supported yet", path, c->embed_dim, c->hidden_size);
    if (c->pooler_activation == PF__POOLER_ACT_NAMED) {
        const pf__json *act = pf__json_get(json, "pooler_hidden_act");
        const char *name = act && act->type == PF__JSON_STRING ? act->string : "gelu";
        pf__activation named;
        if (pf__activation_from_name(c->arch, name, &named))
            return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: pooler_hidden_act \"%s\" is not supported", path, name);
        c->pooler_activation = (int)named;
    }
    return PF_OK;
}

/* MobileBERT's bottleneck blocks (a family whose rows read bottleneck_width): heads of
   bottleneck_width / heads values, 1 to 4 stacked MLPs, normalization_type's NoNorm. */
static pf_result pf__config_bottleneck(const pf__json *json, pf__config *c, const char *path, char *message, size_t size) {
    const pf__json *norm = pf__json_get(json, "normalization_type");
    const char *norm_name = norm && norm->type == PF__JSON_STRING ? norm->string : "no_norm";
    if (norm && norm->type != PF__JSON_STRING && norm->type != PF__JSON_NULL)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"normalization_type\" is not a string", path);
    if (strcmp(norm_name, "no_norm")) /* "layer_norm": the q and k inputs' norm could not be folded into their weights */
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: \"normalization_type\" \"%s\" is not supported "
                          "(\"no_norm\", the released checkpoints', is)", path, norm_name);
    c->elementwise_norm = 1;
    if (c->stacked_ffns < 1 || c->stacked_ffns > 4)
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: \"num_feedforward_networks\" %d is not supported "
                          "(1 to 4 are)", path, c->stacked_ffns);
    if (c->bottleneck_width < 1 || c->num_heads < 1 || c->bottleneck_width % c->num_heads)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"intra_bottleneck_size\" %d is not a multiple of the "
                          "%d heads", path, c->bottleneck_width, c->num_heads);
    c->head_dim = c->bottleneck_width / c->num_heads;
    return PF_OK;
}

/* ConvBERT's heads (a family whose rows read conv_kernel): num_attention_heads / head_ratio attention
   heads (at least 1) of half hidden / heads values each, and as many convolution heads beside them;
   kernels odd (transformers pads the depthwise convolution by k / 2 and the span by (k - 1) / 2: an
   even kernel's lengths disagree there). */
static pf_result pf__config_span_conv(const char *path, pf__config *c, char *message, size_t size) {
    if (c->conv_kernel < 1 || c->conv_kernel % 2 == 0 || c->conv_kernel > 1023)
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: \"%s\" %d is not supported (odd kernels up to 1023 "
                          "are)", path, pf__config_key(c->arch, offsetof(pf__config, conv_kernel)), c->conv_kernel);
    if (c->head_ratio < 1 || c->num_heads < 1)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"%s\" %d or num_attention_heads %d is below 1", path,
                          pf__config_key(c->arch, offsetof(pf__config, head_ratio)), c->head_ratio, c->num_heads);
    c->num_heads = c->num_heads / c->head_ratio > 0 ? c->num_heads / c->head_ratio : 1;
    if (c->hidden_size < 1 || c->hidden_size % (2 * c->num_heads))
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: hidden_size %d is not a multiple of twice the %d heads "
                          "(num_attention_heads / %s)", path, c->hidden_size, c->num_heads,
                          pf__config_key(c->arch, offsetof(pf__config, head_ratio)));
    c->num_kv_heads = c->num_heads;
    c->head_dim = c->hidden_size / c->num_heads / 2;
    return PF_OK;
}

/* A head through XLM's SequenceSummary (which reads keys by getattr, so that ConvBERT's config,
   without them, takes the class's defaults): summary_type `type` ("last": ConvBERT's multiple
   choice; "first": XLM's classification), a projection (to the labels) or none as `projection`, no
   activation; other summaries refused by name. */
static pf_result pf__config_summary(const pf__json *json, const char *path, const char *type_name, int projection,
                                    char *message, size_t size) {
    const pf__json *type = pf__json_get(json, "summary_type");
    if (type && !(type->type == PF__JSON_STRING && !strcmp(type->string, type_name)))
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: \"summary_type\" %s%s%s is not supported (\"%s\", "
                          "the default, is)", path, type->type == PF__JSON_STRING ? "\"" : "",
                          type->type == PF__JSON_STRING ? type->string : "other than a name",
                          type->type == PF__JSON_STRING ? "\"" : "", type_name);
    double use_proj = projection, to_labels = 1;
    if (pf__json_number(pf__json_get(json, "summary_use_proj"), &use_proj) < 0 || (use_proj != 0) != projection)
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: \"summary_use_proj\" is not supported (%s, the "
                          "default, is)", path, projection ? "true" : "false");
    if (projection && (pf__json_number(pf__json_get(json, "summary_proj_to_labels"), &to_labels) < 0 || to_labels == 0))
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: \"summary_proj_to_labels\" is not supported (true, "
                          "the default, is)", path);
    const pf__json *act = pf__json_get(json, "summary_activation");
    if (act && act->type != PF__JSON_NULL && !(act->type == PF__JSON_STRING && !act->string[0]))
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: \"summary_activation\" is not supported (null, the "
                          "default, is)", path);
    return PF_OK;
}

/* XLM's heads (summary_heads): XLMForQuestionAnswering's beam search head and XLMForMultipleChoice
   (a summary projection to the labels, then another to one score) are not implemented. */
static pf_result pf__config_summary_heads(const pf__json *json, const pf__config *c, const char *path, char *message,
                                          size_t size) {
    if ((c->head == PF_HEAD_QUESTION_ANSWERING && !pf__has_suffix(c->class_name, "ForQuestionAnsweringSimple")) ||
        c->head == PF_HEAD_MULTIPLE_CHOICE)
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: architecture \"%s\" is not supported (%s's "
                          "...ForQuestionAnsweringSimple, ...WithLMHeadModel, ...ForSequenceClassification and "
                          "...ForTokenClassification are)", path, c->class_name, c->model_type);
    if (c->head == PF_HEAD_SEQUENCE_CLASSIFICATION) return pf__config_summary(json, path, "first", 1, message, size);
    return PF_OK;
}

/* Funnel Transformer's blocks and pooling (pf__config.funnel): block_sizes (transformers' default
   [4, 4, 4]) and block_repeats (null: 1 each) give num_layers and the repeats; pooling_type "mean"
   or "max"; attention_type "relative_shift" or "factorized", the same terms (the factorized form's
   sums of sin and cos products are the sinusoid of the distance; the class token's positions,
   which differ, are masked out of both); other values refused by name. FunnelModel and the heads
   on it (masked LM, token classification, question answering, pretraining's discriminator) have
   the upsampling decoder: num_decoder_layers more layers; the base model's classes none. */
static pf_result pf__config_funnel(const pf__json *json, pf__config *c, const char *path, char *message, size_t size) {
    int repeats = 0;
    int given = pf__config_int_list(json, "block_sizes", c->funnel_block_sizes, PF__FUNNEL_MAX_BLOCKS, &c->funnel_blocks);
    if (given < 0)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"block_sizes\" is not a list of 1 to %d positive counts",
                          path, PF__FUNNEL_MAX_BLOCKS);
    if (!given) {
        c->funnel_blocks = 3;
        for (int b = 0; b < 3; b++) c->funnel_block_sizes[b] = 4;
    }
    const pf__json *repeat_list = pf__json_get(json, "block_repeats");
    if (repeat_list && repeat_list->type != PF__JSON_NULL &&
        (pf__config_int_list(json, "block_repeats", c->funnel_block_repeats, PF__FUNNEL_MAX_BLOCKS, &repeats) < 0 ||
         repeats != c->funnel_blocks))
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"block_repeats\" is not a list of %d positive counts (one "
                          "per block_sizes entry)", path, c->funnel_blocks);
    if (c->head_dim < 1 || c->head_dim > 1024) /* the CPU's relative terms keep a head's query on the stack */
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: \"d_head\" %d is not supported (1 to 1024 are)", path,
                          c->head_dim);
    c->funnel_decoder = !strcmp(c->class_name, "FunnelModel") || c->head == PF_HEAD_MASKED_LM ||
                        c->head == PF_HEAD_TOKEN_CLASSIFICATION || c->head == PF_HEAD_QUESTION_ANSWERING ||
                        c->head == PF_HEAD_REPLACED_TOKEN_DETECTION;
    if (!c->funnel_decoder) c->funnel_decoder_layers = 0;
    if (c->funnel_decoder_layers < 0 || c->funnel_decoder_layers > 1000)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"num_decoder_layers\" %d is not a count of layers", path,
                          c->funnel_decoder_layers);
    c->num_layers = c->funnel_decoder_layers;
    for (int b = 0; b < c->funnel_blocks; b++) {
        if (!repeats) c->funnel_block_repeats[b] = 1;
        c->num_layers += c->funnel_block_sizes[b];
    }
    static const char *const pooling[] = {"mean", "max"}, *const attention[] = {"relative_shift", "factorized"};
    static const char *const keys[] = {"pooling_type", "attention_type"};
    for (int k = 0; k < 2; k++) {
        const pf__json *v = pf__json_get(json, keys[k]);
        const char *const *names = k ? attention : pooling;
        if (!v || v->type == PF__JSON_NULL) continue; /* the first, transformers' default */
        int which = v->type != PF__JSON_STRING ? -1 : !strcmp(v->string, names[0]) ? 0 : !strcmp(v->string, names[1]) ? 1 : -1;
        if (which < 0)
            return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: \"%s\" %s%s%s is not supported (\"%s\" and \"%s\" "
                              "are)", path, keys[k], v->type == PF__JSON_STRING ? "\"" : "",
                              v->type == PF__JSON_STRING ? v->string : "other than a name",
                              v->type == PF__JSON_STRING ? "\"" : "", names[0], names[1]);
        if (!k) c->funnel_pool_max = which;
    }
    return PF_OK;
}

/* BigBird's attention_type (BigBirdPegasus's encoder's): "block_sparse" (transformers' default) or
   "original_full" (BERT's attention, block_sparse 0); block_size and num_random_blocks sized for the blocks' arithmetic.
   BigBirdForQuestionAnswering is refused: its own head (a BERT feed-forward block before qa_outputs)
   and its logits' question mask (question_lengths) are not implemented. */
static pf_result pf__config_block_sparse(const pf__json *json, pf__config *c, const char *path, char *message,
                                         size_t size) {
    const pf__json *type = pf__json_get(json, "attention_type");
    if (type && type->type != PF__JSON_NULL) {
        int full = type->type == PF__JSON_STRING && !strcmp(type->string, "original_full");
        if (!full && !(type->type == PF__JSON_STRING && !strcmp(type->string, "block_sparse")))
            return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: \"attention_type\" %s%s%s is not supported "
                              "(\"block_sparse\" and \"original_full\" are)", path, type->type == PF__JSON_STRING ? "\"" : "",
                              type->type == PF__JSON_STRING ? type->string : "other than a name",
                              type->type == PF__JSON_STRING ? "\"" : "");
        c->block_sparse = !full;
    }
    if (c->sparse_block < 1 || c->sparse_block > 65536 || c->sparse_random < 0 || c->sparse_random > 1024)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"block_size\" %d or \"num_random_blocks\" %d does not fit "
                          "(1 to 65536 tokens, 0 to 1024 blocks)", path, c->sparse_block, c->sparse_random);
    if (c->block_sparse && c->sparse_random == 0) /* its gathered random keys: an empty view */
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: \"num_random_blocks\" 0 with block-sparse attention "
                          "is not supported (transformers' fails on it)", path);
    if (c->head == PF_HEAD_QUESTION_ANSWERING && pf__archs[c->arch].kind == PF__KIND_ENCODER) /* BigBirdPegasus's: BART's */
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: architecture \"BigBirdForQuestionAnswering\" is not "
                          "supported (its own head, a feed-forward block before qa_outputs, and its question mask)", path);
    return PF_OK;
}

/* A string key of XLNet's config among `names` (absent: names[0], the config class's default; null
   is no name to transformers either): its index, or -1 after writing the refusal. */
static int pf__config_choice(const pf__json *json, const char *key, const char *const *names, int count, const char *path,
                             char *message, size_t size) {
    const pf__json *v = pf__json_get(json, key);
    if (!v) return 0;
    for (int i = 0; v->type == PF__JSON_STRING && i < count; i++)
        if (!strcmp(v->string, names[i])) return i;
    pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: \"%s\" %s%s%s is not supported (\"%s\"%s%s%s are)", path, key,
               v->type == PF__JSON_STRING ? "\"" : "", v->type == PF__JSON_STRING ? v->string : "other than a name",
               v->type == PF__JSON_STRING ? "\"" : "", names[0], count > 1 ? " and \"" : "", count > 1 ? names[1] : "",
               count > 1 ? "\"" : "");
    return -1;
}

/* XLNet (pf__config.xlnet): its n_layer layers are one Funnel block without pooling (funnel 1),
   the segment term XLNet's; attn_type "bi" (every token sees every other) or "uni" (causal; with
   same_length, which masks all but a token's own, refused); clamp_len > 0 clamps the distances.
   SequenceSummary (classification, multiple choice): summary_type "last" with summary_use_proj to
   the hidden width (summary_proj_to_labels would make it the labels', which logits_proj cannot
   read) and summary_activation "tanh": the pooler on each row's last token. XLNetLMHeadModel
   generates (a causal LM to the API): use_mems_eval and mem_len shape its memory (reuse_len > 0,
   which keeps only a step's first tokens, refused); the encoders' outputs read no memory.
   ...ForQuestionAnswering's beam-search head is not implemented. */
static pf_result pf__config_xlnet(const pf__json *json, pf__config *c, const char *path, char *message, size_t size) {
    if (c->head == PF_HEAD_QUESTION_ANSWERING && !pf__has_suffix(c->class_name, "ForQuestionAnsweringSimple"))
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: architecture \"%s\" is not supported (XLNetModel, "
                          "XLNetLMHeadModel, ...ForSequenceClassification, ...ForTokenClassification, ...ForMultipleChoice "
                          "and ...ForQuestionAnsweringSimple are: the beam-search question answering head is not "
                          "implemented)", path, c->class_name);
    if (pf__has_suffix(c->class_name, "LMHeadModel")) {
        double reuse_len = 0;
        c->head = PF_HEAD_CAUSAL_LM;
        if (pf__json_number(pf__json_get(json, "reuse_len"), &reuse_len) < 0 || reuse_len > 0)
            return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: \"reuse_len\" is not supported for generation "
                              "(null or 0 is)", path);
        if (c->xlnet_mem_len < 0)
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"mem_len\" %d is not a count of rows", path,
                              c->xlnet_mem_len);
    }
    if (!c->head_dim && c->num_heads > 0) c->head_dim = c->hidden_size / c->num_heads;
    if (c->num_heads < 1 || c->hidden_size % c->num_heads || c->head_dim != c->hidden_size / c->num_heads)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"d_head\" %d is not d_model / n_head (%d / %d), as XLNet "
                          "requires", path, c->head_dim, c->hidden_size, c->num_heads);
    if (c->head_dim > 1024) /* the CPU's relative terms keep a head's query on the stack */
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: \"d_head\" %d is not supported (1 to 1024 are)", path,
                          c->head_dim);
    static const char *const attn_types[] = {"bi", "uni"}, *const summaries[] = {"last"}, *const tanh_only[] = {"tanh"};
    int uni = pf__config_choice(json, "attn_type", attn_types, 2, path, message, size);
    if (uni < 0) return PF_ERROR_UNSUPPORTED;
    double same_length = 0;
    if (pf__json_number(pf__json_get(json, "same_length"), &same_length) < 0 || (uni && same_length != 0))
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: \"same_length\" is not supported with attn_type \"uni\" "
                          "(false is)", path);
    c->rel_causal = uni;
    if (c->rel_clamp_len < 0) c->rel_clamp_len = 0; /* transformers clamps when clamp_len > 0 */
    c->funnel_blocks = 1;
    c->funnel_block_sizes[0] = c->num_layers;
    c->funnel_block_repeats[0] = 1;
    c->funnel_separate_cls = c->funnel_truncate_seq = c->funnel_pool_q_only = c->funnel_pool_max = 0;
    c->funnel_decoder = c->funnel_decoder_layers = 0;
    if (c->head != PF_HEAD_SEQUENCE_CLASSIFICATION && c->head != PF_HEAD_MULTIPLE_CHOICE) return PF_OK;
    double use_proj = 1, to_labels = 0;
    if (pf__config_choice(json, "summary_type", summaries, 1, path, message, size) < 0 ||
        pf__config_choice(json, "summary_activation", tanh_only, 1, path, message, size) < 0)
        return PF_ERROR_UNSUPPORTED;
    if (pf__json_number(pf__json_get(json, "summary_use_proj"), &use_proj) < 0 || use_proj == 0)
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: \"summary_use_proj\" is not supported (true, the "
                          "default, is)", path);
    if (pf__json_number(pf__json_get(json, "summary_proj_to_labels"), &to_labels) < 0 || to_labels != 0)
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: \"summary_proj_to_labels\" is not supported (absent "
                          "or false is: logits_proj reads the summary at the hidden width)", path);
    return PF_OK;
}

/* TAPAS's table (its rows read the scalar keys). type_vocab_sizes: the 7 token types' tables (the
   segment's PF__SLOT_TOKEN_TYPE_EMBED, type_vocab_size here); transformers reads types 1 and 2 as
   the column and row, so another count is refused. ...ForQuestionAnswering is
   PF_HEAD_TABLE_QUESTION_ANSWERING, implemented with temperature, max_num_rows / max_num_columns
   (the row and column ids clamped below them), allow_empty_column_selection, num_aggregation_labels
   and select_one_column true (false is refused: transformers' head then computes no logits without
   labels, its column logits being None). Keys of training alone, which the logits never read:
   positive_label_weight, aggregation_loss_weight, use_answer_as_supervision,
   answer_loss_importance, use_normalized_answer_loss, huber_loss_delta, aggregation_temperature
   and use_gumbel_for_aggregation (the expected result of the regression loss; logits_aggregation
   is the classifier's plain output), use_gumbel_for_cells, average_approximation_function,
   cell_selection_preference, answer_loss_cutoff, disable_per_token_loss, average_logits_per_cell
   (the loss's per-cell means: the logits are averaged per cell whatever it says); initialisation:
   init_cell_selection_weights_to_zero; names: aggregation_labels, no_aggregation_label_index. */
static pf_result pf__config_table(const pf__json *json, pf__config *cfg, const char *path, char *message, size_t size) {
    static const int defaults[PF__TABLE_TYPES] = {3, 256, 256, 2, 256, 256, 10}; /* TapasConfig's */
    int sizes[64], count = PF__TABLE_TYPES, read = pf__config_int_list(json, "type_vocab_sizes", sizes, 64, &count);
    memcpy(cfg->table_type_sizes, read > 0 && count == PF__TABLE_TYPES ? sizes : defaults, sizeof defaults);
    if (read < 0 || count != PF__TABLE_TYPES)
        return pf__format(message, size, read < 0 ? PF_ERROR_FORMAT : PF_ERROR_UNSUPPORTED, "%s: \"type_vocab_sizes\" must "
                          "be a list of %d table sizes (segment, column, row, previous label, column rank, inverse "
                          "column rank, numeric relation), as TAPAS reads them", path, PF__TABLE_TYPES);
    cfg->type_vocab_size = cfg->table_type_sizes[0];
    if (cfg->max_table_rows < 1 || cfg->max_table_rows > 1000000 || cfg->max_table_columns < 1 ||
        cfg->max_table_columns > 1000000 || cfg->num_aggregation_labels < 0 || cfg->num_aggregation_labels > 1000000)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"max_num_rows\" %d, \"max_num_columns\" %d or "
                          "\"num_aggregation_labels\" %d is not a count", path, cfg->max_table_rows,
                          cfg->max_table_columns, cfg->num_aggregation_labels);
    if (cfg->head == PF_HEAD_QUESTION_ANSWERING) cfg->head = PF_HEAD_TABLE_QUESTION_ANSWERING;
    if (cfg->head != PF_HEAD_TABLE_QUESTION_ANSWERING) return PF_OK;
    if (!(cfg->cell_selection_temperature > 0) || !isfinite(cfg->cell_selection_temperature))
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"temperature\" %g is not above 0 (the cell logits are "
                          "divided by it)", path, cfg->cell_selection_temperature);
    if (!cfg->select_one_column)
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: \"select_one_column\" false is not supported: "
                          "transformers' %s computes no logits without labels then (true is)", path, cfg->class_name);
    return PF_OK;
}

/* Transformer-XL (pf__config.transfo_xl): the adaptive clusters (cutoffs: up to
   PF__TXL_MAX_CLUSTERS - 1 increasing ids inside the vocabulary; transformers' default when
   absent), each cluster's width d_embed / div_val^i (a whole number of values), tie_projs (or, for
   an older config without it, proj_share_all_but_first's: every cluster's but the head's); the
   memory's length (mem_len >= 0; same_length needs one, as transformers' mask would hide every key);
   sample_softmax > 0 (sampled softmax: training) refused. */
static pf_result pf__config_transfo_xl(const pf__json *json, pf__config *c, const char *path, char *message, size_t size) {
    static const int default_cutoffs[] = {20000, 40000, 200000};
    const pf__json *cutoffs = pf__json_get(json, "cutoffs");
    int count = cutoffs ? (int)cutoffs->count : (int)PF__COUNT(default_cutoffs);
    if (cutoffs && cutoffs->type != PF__JSON_ARRAY)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"cutoffs\" is not a list", path);
    if (count > PF__TXL_MAX_CLUSTERS - 1)
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: \"cutoffs\" of %d entries is not supported (up to %d "
                          "are)", path, count, PF__TXL_MAX_CLUSTERS - 1);
    c->txl_clusters = count + 1;
    c->txl_cutoff_ends[0] = 0;
    const pf__json *v = cutoffs ? cutoffs->first : NULL;
    for (int i = 0; i < count; i++, v = v ? v->next : NULL) {
        double x = cutoffs ? -1 : default_cutoffs[i];
        if (cutoffs && (pf__json_number(v, &x) != 1 || x != (double)(int)x)) x = -1;
        if (x <= c->txl_cutoff_ends[i] || x >= c->vocab_size)
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"cutoffs\" are not increasing ids inside the "
                              "vocabulary of %d", path, c->vocab_size);
        c->txl_cutoff_ends[i + 1] = (int)x;
    }
    c->txl_cutoff_ends[count + 1] = c->vocab_size;
    long divisor = 1;
    for (int i = 1; i < c->txl_clusters && c->txl_div_val > 0 && divisor <= c->txl_d_embed; i++) divisor *= c->txl_div_val;
    if (c->txl_div_val < 1 || c->txl_d_embed < 1 || c->txl_d_embed / divisor < 1)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"d_embed\" %d and \"div_val\" %d leave a cluster of no "
                          "width", path, c->txl_d_embed, c->txl_div_val);
    const pf__json *tie = pf__json_get(json, "tie_projs");
    double share = 1;
    if (tie && tie->type != PF__JSON_NULL && (tie->type != PF__JSON_ARRAY || tie->count != (size_t)c->txl_clusters))
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"tie_projs\" is not a list of %d booleans (one a "
                          "cluster)", path, c->txl_clusters);
    if (pf__json_number(pf__json_get(json, "proj_share_all_but_first"), &share) < 0)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"proj_share_all_but_first\" is not a boolean", path);
    v = tie && tie->type == PF__JSON_ARRAY ? tie->first : NULL;
    for (int i = 0; i < c->txl_clusters; i++, v = v ? v->next : NULL) {
        double x = i > 0 && share != 0;
        if (v && pf__json_number(v, &x) != 1)
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"tie_projs\" holds something other than booleans", path);
        c->txl_tie_projs[i] = x != 0;
    }
    double sample = -1;
    if (pf__json_number(pf__json_get(json, "sample_softmax"), &sample) < 0 || sample > 0)
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: \"sample_softmax\" above 0 (a sampled softmax) is not "
                          "supported", path);
    if (c->txl_mem_len < 0)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"mem_len\" %d is not a count of rows", path, c->txl_mem_len);
    if (c->txl_same_length && !c->txl_mem_len)
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: \"same_length\" with \"mem_len\" 0 is not supported "
                          "(transformers' mask hides every key)", path);
    if (c->head_dim < 1 || c->head_dim > 1024) /* the CPU's relative terms keep a head's query on the stack */
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: \"d_head\" %d is not supported (1 to 1024 are)", path,
                          c->head_dim);
    if (c->head == PF_HEAD_SEQUENCE_CLASSIFICATION && c->txl_d_embed != c->hidden_size) /* score reads d_embed values */
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: TransfoXLForSequenceClassification needs \"d_embed\" %d to "
                          "be \"d_model\" %d (its score reads the hidden state)", path, c->txl_d_embed, c->hidden_size);
    if (c->head != PF_HEAD_NONE && c->head != PF_HEAD_CAUSAL_LM && c->head != PF_HEAD_SEQUENCE_CLASSIFICATION)
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: architecture \"%s\" is not supported (TransfoXLModel, "
                          "TransfoXLLMHeadModel and TransfoXLForSequenceClassification are)", path, c->class_name);
    return PF_OK;
}

PF_PRIVATE int pf__output_width(const pf__config *c) { return c->reformer ? 2 * c->hidden_size : c->hidden_size; }

/* A Reformer config.json integer key (absent or null: fallback) into *out, refused naming it unless
   it is a whole number in [least, most]. */
static pf_result pf__config_reformer_int(const pf__json *json, const char *key, int fallback, int least, int most, int *out,
                                         const char *path, char *message, size_t size) {
    double v = fallback;
    if (pf__json_number(pf__json_get(json, key), &v) < 0 || v != floor(v) || v < least || v > most)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"%s\" is not a whole number from %d to %d", path, key,
                          least, most);
    *out = (int)v;
    return PF_OK;
}

/* A list key of two positive integers (absent: the config class's defaults a, b). */
static pf_result pf__config_reformer_pair(const pf__json *json, const char *key, int a, int b, int out[2], const char *path,
                                          char *message, size_t size) {
    const pf__json *v = pf__json_get(json, key);
    out[0] = a, out[1] = b;
    if (!v) return PF_OK;
    if (v->type != PF__JSON_ARRAY || v->count != 2 || v->first->type != PF__JSON_NUMBER || v->first->next->type != PF__JSON_NUMBER ||
        !(v->first->number >= 1 && v->first->number <= 1 << 20 && v->first->number == floor(v->first->number)) ||
        !(v->first->next->number >= 1 && v->first->next->number <= 1 << 20 && v->first->next->number == floor(v->first->next->number)))
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: \"%s\" is not supported unless it is two positive "
                          "integers (transformers' axial positions take two)", path, key);
    out[0] = (int)v->first->number, out[1] = (int)v->first->next->number;
    return PF_OK;
}

static int pf__gcd(int a, int b) { return b ? pf__gcd(b, a % b) : a; }

/* The seed of the LSH rotations when config.json has no hash_seed: transformers then draws them
   from torch's global generator (another draw each call: its outputs are not reproducible); we
   seed torch's generator with this, documented in the README. */
#define PF__REFORMER_DEFAULT_SEED 0

/* Reformer (pf__config.reformer): attn_layers ("lsh" and "local" layers: the layer count), the
   chunk lengths and neighbours of each kind, num_hashes, num_buckets (an even int, or a list of
   even factors; null, which transformers sets from the first input's length and keeps, refused),
   hash_seed, is_decoder (causal masks; ReformerModelWithLMHead requires it and no chunks after),
   axial positions or a table, pad_token_id (the padding's id). chunk_size_feed_forward and
   chunk_size_lm_head split rows alone: the same math. ReformerModel and ReformerModelWithLMHead
   are implemented; the other heads are refused. */
static pf_result pf__config_reformer(const pf__json *json, pf__config *c, const char *path, char *message, size_t size) {
    int lm = pf__has_suffix(c->class_name, "ModelWithLMHead");
    if (lm) c->head = PF_HEAD_CAUSAL_LM;
    else if (c->head != PF_HEAD_NONE || (c->class_name[0] && !pf__has_suffix(c->class_name, "Model")))
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: architecture \"%s\" is not supported (ReformerModel "
                          "and ReformerModelWithLMHead are: the masked LM, classification and question answering heads "
                          "are not implemented)", path, c->class_name);
    const pf__json *layers = pf__json_get(json, "attn_layers");
    static const char *const defaults[] = {"local", "lsh", "local", "lsh", "local", "lsh"};
    int count = layers ? (int)layers->count : 6;
    if ((layers && layers->type != PF__JSON_ARRAY) || count < 1 || count > PF__REFORMER_MAX_LAYERS)
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: \"attn_layers\" is not supported unless it lists 1 to "
                          "%d layers", path, PF__REFORMER_MAX_LAYERS);
    const pf__json *kind = layers ? layers->first : NULL;
    int any_lsh = 0, any_local = 0;
    for (int l = 0; l < count; l++, kind = kind ? kind->next : NULL) {
        const char *name = layers ? (kind->type == PF__JSON_STRING ? kind->string : "") : defaults[l];
        if (strcmp(name, "lsh") && strcmp(name, "local"))
            return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: \"attn_layers\" entry %d is not supported (\"lsh\" "
                              "and \"local\" are)", path, l);
        c->reformer_lsh[l] = !strcmp(name, "lsh");
        any_lsh |= c->reformer_lsh[l], any_local |= !c->reformer_lsh[l];
    }
    c->num_layers = count; /* transformers' num_hidden_layers is len(attn_layers) */
    double causal = 0, has_axial = 1;
    if (pf__json_number(pf__json_get(json, "is_decoder"), &causal) < 0 ||
        pf__json_number(pf__json_get(json, "axial_pos_embds"), &has_axial) < 0)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"is_decoder\" or \"axial_pos_embds\" is not a boolean", path);
    c->reformer_causal = causal != 0, c->reformer_axial = has_axial != 0;
    pf_result r = PF_OK;
    if ((r = pf__config_reformer_int(json, "lsh_attn_chunk_length", 64, 1, 1 << 16, &c->reformer_lsh_chunk, path, message, size)) ||
        (r = pf__config_reformer_int(json, "local_attn_chunk_length", 64, 1, 1 << 16, &c->reformer_local_chunk, path, message, size)) ||
        (r = pf__config_reformer_int(json, "lsh_num_chunks_before", 1, 0, 64, &c->reformer_lsh_before, path, message, size)) ||
        (r = pf__config_reformer_int(json, "lsh_num_chunks_after", 0, 0, 64, &c->reformer_lsh_after, path, message, size)) ||
        (r = pf__config_reformer_int(json, "local_num_chunks_before", 1, 0, 64, &c->reformer_local_before, path, message, size)) ||
        (r = pf__config_reformer_int(json, "local_num_chunks_after", 0, 0, 64, &c->reformer_local_after, path, message, size)) ||
        (r = pf__config_reformer_int(json, "num_hashes", 1, 1, 64, &c->reformer_hashes, path, message, size)) ||
        (r = pf__config_reformer_int(json, "pad_token_id", 0, 0, c->vocab_size - 1, &c->pad_token_id, path, message, size)))
        return r;
    if (lm && (!c->reformer_causal || c->reformer_lsh_after || c->reformer_local_after))
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: ReformerModelWithLMHead needs \"is_decoder\" true and "
                          "\"lsh_num_chunks_after\" and \"local_num_chunks_after\" 0, as transformers requires", path);
    /* the chunk lengths of the layer kinds present: transformers pads to their least common multiple */
    int lsh_chunk = c->reformer_lsh_chunk, local_chunk = c->reformer_local_chunk;
    c->reformer_lcm_chunk = any_lsh && any_local ? lsh_chunk / pf__gcd(lsh_chunk, local_chunk) * local_chunk
                            : any_lsh            ? lsh_chunk
                                                 : local_chunk;
    c->reformer_min_chunk = any_lsh && any_local ? (lsh_chunk < local_chunk ? lsh_chunk : local_chunk)
                            : any_lsh            ? lsh_chunk
                                                 : local_chunk;
    if (c->reformer_lcm_chunk > 1 << 16)
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: the chunk lengths' least common multiple %d is not "
                          "supported (65536 at most)", path, c->reformer_lcm_chunk);
    const pf__json *buckets = pf__json_get(json, "num_buckets");
    c->reformer_bucket_factors = 0;
    if (any_lsh && (!buckets || buckets->type == PF__JSON_NULL))
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: \"num_buckets\" null is not supported (transformers "
                          "sets it from the first input's length; give it)", path);
    int rotation = 0;
    for (const pf__json *b = buckets && buckets->type == PF__JSON_ARRAY ? buckets->first : buckets;
         any_lsh && b && b->type != PF__JSON_NULL; b = buckets->type == PF__JSON_ARRAY ? b->next : NULL) {
        if (b->type != PF__JSON_NUMBER || b->number != floor(b->number) || !(b->number >= 2 && b->number <= 2048) ||
            (int)b->number % 2 || c->reformer_bucket_factors == PF__REFORMER_MAX_FACTORS)
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"num_buckets\" is not an even count (2 to 2048) or a "
                              "list of %d such", path, PF__REFORMER_MAX_FACTORS);
        c->reformer_buckets[c->reformer_bucket_factors++] = (int)b->number;
        rotation += (int)b->number;
    }
    long long product = 1;
    for (int i = 0; i < c->reformer_bucket_factors; i++) product *= c->reformer_buckets[i];
    if (any_lsh && (!c->reformer_bucket_factors || rotation / 2 > PF__REFORMER_MAX_ROTATION || product > 1 << 24))
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: \"num_buckets\" is not supported (1 to %d factors whose "
                          "halves sum to %d at most, %d buckets at most)", path, PF__REFORMER_MAX_FACTORS,
                          PF__REFORMER_MAX_ROTATION, 1 << 24);
    const pf__json *seed = pf__json_get(json, "hash_seed");
    c->reformer_hash_seed = PF__REFORMER_DEFAULT_SEED;
    if (seed && seed->type != PF__JSON_NULL) {
        if (seed->type != PF__JSON_NUMBER || !seed->integral || seed->integer < 0)
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"hash_seed\" is not a non-negative integer", path);
        c->reformer_hash_seed = (uint64_t)seed->integer;
    }
    /* read even without axial positions: the axial tables' shapes, should a checkpoint hold them anyway */
    if ((r = pf__config_reformer_pair(json, "axial_pos_shape", 64, 64, c->reformer_axial_shape, path, message, size)) ||
        (r = pf__config_reformer_pair(json, "axial_pos_embds_dim", 64, 192, c->reformer_axial_dims, path, message, size)))
        return r;
    if (c->reformer_axial) {
        if (c->reformer_axial_dims[0] + c->reformer_axial_dims[1] != c->hidden_size)
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"axial_pos_embds_dim\" %d + %d is not hidden_size %d", path,
                              c->reformer_axial_dims[0], c->reformer_axial_dims[1], c->hidden_size);
    }
    if (c->head_dim < 1 || c->head_dim > 4096)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"attention_head_size\" %d is not in 1..4096", path, c->head_dim);
    return PF_OK;
}

/* What the rows do not hold: activation, rope, token ids, head, speech front end, tied embeddings,
   required values and attention windows (quantization_config: quantized.c, with the tensors). */
static pf_result pf__config_read_extras(const pf__json *json, const char *path, pf__config *cfg, char *message,
                                        size_t size) {
    const pf__arch *a = &pf__archs[cfg->arch];
    const pf__json *act = a->activation_key ? pf__json_get_path(json, a->activation_key) : NULL;
    const char *act_name = act && act->type == PF__JSON_STRING ? act->string : a->activation_default;
    double flag = 1;
    if (act && act->type != PF__JSON_STRING && act->type != PF__JSON_NULL) { /* XLM's gelu_activation: false is ReLU */
        if (pf__json_number(act, &flag) < 0)
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"%s\" is neither a name nor a boolean", path,
                              a->activation_key);
        act_name = flag != 0 ? a->activation_default : "relu";
    }
    if (pf__activation_from_name(cfg->arch, act_name, &cfg->activation))
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: activation \"%s\" is not supported", path, act_name);
    cfg->gated_mlp = a->mlp == PF__MLP_GATED || (a->mlp == PF__MLP_GATED_IF_NAMED && !strncmp(act_name, "gated-", 6));
    pf_result r = pf__config_rope(json, cfg, path, message, size);
    if (!r) r = pf__config_token_ids(cfg, json, path, message, size);
    if (!r) r = pf__config_head(json, cfg, path, message, size);
    if (!r && (cfg->speech || cfg->head == PF_HEAD_CTC)) r = pf__config_speech(json, cfg, path, message, size);
    if (!r && cfg->conv_subsampler) r = pf__config_subsampler(json, cfg, path, message, size);
    if (!r) {
        double tie = a->tied_lm_head;
        if (pf__json_number(pf__json_get(json, "tie_word_embeddings"), &tie) < 0)
            r = pf__format(message, size, PF_ERROR_FORMAT, "%s: \"tie_word_embeddings\" is not a boolean", path);
        cfg->tie_word_embeddings = tie != 0;
        if (cfg->scale_decoder_outputs < 0) cfg->scale_decoder_outputs = cfg->tie_word_embeddings;
    }
    if (!r) r = pf__config_requires(json, cfg->arch, path, message, size);
    if (!r && cfg->transfo_xl) r = pf__config_transfo_xl(json, cfg, path, message, size);
    if (!r && cfg->reformer) r = pf__config_reformer(json, cfg, path, message, size);
    if (!r && cfg->xlnet) r = pf__config_xlnet(json, cfg, path, message, size);
    else if (!r && cfg->funnel) r = pf__config_funnel(json, cfg, path, message, size);
    if (!r && strcmp(pf__config_key(cfg->arch, offsetof(pf__config, sparse_block)), "(derived)"))
        r = pf__config_block_sparse(json, cfg, path, message, size);
    if (!r && cfg->choice_pool_last && cfg->head == PF_HEAD_MULTIPLE_CHOICE) r = pf__config_summary(json, path, "last", 0, message, size);
    if (!r && cfg->summary_heads) r = pf__config_summary_heads(json, cfg, path, message, size);
    if (!r && pf__arch_tensor_for(cfg->arch, PF__SLOT_COLUMN_TYPE_EMBED)) r = pf__config_table(json, cfg, path, message, size);
    const pf__json *positions = pf__json_get(json, "position_embedding_type"); /* transformers 4's BERT-likes */
    if (!r && a->kind == PF__KIND_ENCODER && positions &&
        (positions->type != PF__JSON_STRING || strcmp(positions->string, "absolute")))
        r = pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: \"position_embedding_type\" %s%s%s is not supported "
                       "(\"absolute\" is: relative_key's distance embeddings are not)", path,
                       positions->type == PF__JSON_STRING ? "\"" : "",
                       positions->type == PF__JSON_STRING ? positions->string : "other than a name",
                       positions->type == PF__JSON_STRING ? "\"" : "");
    if (!r && strcmp(pf__config_key(cfg->arch, offsetof(pf__config, relative_attention)), "(derived)"))
        r = pf__config_disentangled(json, cfg, path, message, size);
    if (!r && strcmp(pf__config_key(cfg->arch, offsetof(pf__config, bottleneck_width)), "(derived)"))
        r = pf__config_bottleneck(json, cfg, path, message, size);
    const char *clip_key = pf__config_key(cfg->arch, offsetof(pf__config, clip_qkv));
    const pf__json *clip = strcmp(clip_key, "(derived)") ? pf__json_get(json, clip_key) : NULL;
    if (!r && clip && clip->type == PF__JSON_NUMBER && !(clip->number > 0)) /* torch's clamp(-c, c), c <= 0: all c */
        r = pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: \"%s\" %g is not supported (a limit above 0, or null)",
                       path, clip_key, clip->number);
    const char *swiglu_key = pf__config_key(cfg->arch, offsetof(pf__config, swiglu_limit));
    if (!r && strcmp(swiglu_key, "(derived)") && !(cfg->swiglu_limit > 0)) /* 0 would mean the plain SwiGLU here */
        r = pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: \"%s\" %g is not supported (a limit above 0)", path,
                       swiglu_key, cfg->swiglu_limit);
    if (!r && cfg->temperature_tuning && !(cfg->temperature_floor >= 1)) /* transformers divides positions by it */
        r = pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: \"%s\" %g is not supported (1 or more)", path,
                       pf__config_key(cfg->arch, offsetof(pf__config, temperature_floor)), cfg->temperature_floor);
    if (!r && cfg->attention_chunk < 0)
        r = pf__format(message, size, PF_ERROR_FORMAT, "%s: \"%s\" %d is negative", path,
                       pf__config_key(cfg->arch, offsetof(pf__config, attention_chunk)), cfg->attention_chunk);
    if (!r) r = pf__config_stray_windows(json, cfg, path, message, size);
    if (!r && cfg->num_layers > 0 && cfg->num_layers <= 100000) r = pf__config_layer_rope(json, cfg, path, message, size);
    if (!r && cfg->num_layers > 0 && cfg->num_layers <= 100000) r = pf__config_layer_windows(json, cfg, path, message, size);
    if (!r && cfg->local_attention && cfg->layer_window) r = pf__config_local_windows(json, cfg, path, message, size);
    if (!r && cfg->num_layers > 0 && cfg->num_layers <= 100000) r = pf__config_layer_sparse(json, cfg, path, message, size);
    if (!r && cfg->rope_windowed_only && cfg->layer_window && !cfg->layer_rope) { /* the global layers are NoPE ones */
        cfg->layer_rope = (int *)calloc((size_t)cfg->num_layers, sizeof(int));
        if (!cfg->layer_rope) r = pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
        for (int l = 0; !r && l < cfg->num_layers; l++) cfg->layer_rope[l] = cfg->layer_window[l] != 0;
    }
    return r;
}

/* Multi-head latent attention's sizes (DeepSeek V2/V3): q's and k's heads are nope + rope wide,
   the rope part rotated; the softmax scale is head_dim^-1/2 times YaRN's mscale(factor,
   mscale_all_dim)^2 where the rope is scaled (transformers' yarn_apply_mscale). Checked here:
   every head count, since each rank takes whole heads of kv_b_proj. */
static pf_result pf__config_latent(const char *path, pf__config *cfg, char *message, size_t size) {
    if (cfg->kv_lora_rank < 1 || cfg->kv_lora_rank > 65536 || cfg->q_lora_rank < 0 || cfg->q_lora_rank > 65536 ||
        cfg->qk_nope_head_dim < 1 || cfg->qk_nope_head_dim > 4096 || cfg->qk_rope_head_dim < 2 ||
        cfg->qk_rope_head_dim > 4096 || cfg->qk_rope_head_dim % 2 || cfg->v_head_dim < 1 || cfg->v_head_dim > 4096)
        return pf__format(message, size, PF_ERROR_FORMAT,
                          "%s: latent attention's sizes do not fit (kv_lora_rank %d, q_lora_rank %d, qk_nope_head_dim %d, "
                          "qk_rope_head_dim %d (even), v_head_dim %d)",
                          path, cfg->kv_lora_rank, cfg->q_lora_rank, cfg->qk_nope_head_dim, cfg->qk_rope_head_dim,
                          cfg->v_head_dim);
    if (cfg->num_kv_heads != cfg->num_heads) /* transformers repeats the expanded heads and fails */
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: \"num_key_value_heads\" %d must equal "
                          "\"num_attention_heads\" %d with latent attention", path, cfg->num_kv_heads, cfg->num_heads);
    cfg->head_dim = cfg->qk_nope_head_dim + cfg->qk_rope_head_dim;
    cfg->rotary_dim = cfg->qk_rope_head_dim;
    double scale = 1.0 / sqrt((double)cfg->head_dim), m = cfg->rope_mscale_all_dim, factor = cfg->rope_factor;
    if (cfg->rope_type != PF__ROPE_DEFAULT && m != 0 && factor > 1) {
        double mscale = 0.1 * m * log(factor) + 1.0;
        scale *= mscale * mscale;
    }
    cfg->attention_multiplier = scale;
    return PF_OK;
}

/* The sizes derived from the others, and the checks that they fit together. */
static pf_result pf__config_derive(const char *path, pf__config *cfg, char *message, size_t size) {
    const pf__arch *a = &pf__archs[cfg->arch];
    if (cfg->position_offset_from_pad) { /* RoBERTa's and M2M100's positions: pad_token_id + 1 + index */
        cfg->position_offset += 1;
        if (cfg->position_offset_from_pad == 1) cfg->max_positions -= cfg->position_offset;
    }
    /* an image encoder (a family that reads patch_size, even as 0): the class (and distillation)
       token, then the patches */
    if (cfg->patch_size || strcmp(pf__config_key(cfg->arch, offsetof(pf__config, patch_size)), "(derived)")) {
        if (cfg->patch_size < 1)
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"patch_size\" %d is not a positive number of pixels",
                              path, cfg->patch_size);
        /* a patch size that does not divide the image: the strided convolution drops the rest */
        if (cfg->image_size < cfg->patch_size || cfg->image_size > 65536 || cfg->num_channels < 1 || cfg->num_channels > 64)
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: image_size %d, patch_size %d, num_channels %d do not fit",
                              path, cfg->image_size, cfg->patch_size, cfg->num_channels);
        int side = cfg->image_size / cfg->patch_size;
        cfg->max_positions = side * side + 1 + cfg->distillation;
    }
    if (cfg->intermediate_size == 0) cfg->intermediate_size = a->mlp_ratio * cfg->hidden_size;
    if (strcmp(pf__config_key(cfg->arch, offsetof(pf__config, entity_vocab_size)), "(derived)") &&
        (cfg->entity_vocab_size < 1 || cfg->entity_vocab_size > 100000000 || cfg->entity_emb_size < 1 ||
         cfg->entity_emb_size > 1000000)) /* LUKE */
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"entity_vocab_size\" %d and \"entity_emb_size\" %d are not "
                          "sizes", path, cfg->entity_vocab_size, cfg->entity_emb_size);
    if (!cfg->shared_vocab && cfg->decoder_vocab_size > 0) { /* Marian's own target vocabulary */
        cfg->src_vocab_size = cfg->vocab_size;
        cfg->vocab_size = cfg->decoder_vocab_size;
    }
    if (strcmp(pf__config_key(cfg->arch, offsetof(pf__config, conv_kernel)), "(derived)")) {
        pf_result r = pf__config_span_conv(path, cfg, message, size);
        if (r) return r;
    }
    if (strcmp(pf__config_key(cfg->arch, offsetof(pf__config, ngram)), "(derived)")) { /* ProphetNet */
        /* the buckets below max_exact = num_buckets / 2 are exact, the others log-scaled up to
           relative_max_distance, which must lie beyond max_exact (transformers divides by its log) */
        if (cfg->ngram < 1 || cfg->ngram > 1000)
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"%s\" %d is not a number of predicted tokens", path,
                              pf__config_key(cfg->arch, offsetof(pf__config, ngram)), cfg->ngram);
        if (cfg->rel_buckets < 2 || cfg->rel_buckets > 4096 || cfg->rel_max_distance <= cfg->rel_buckets / 2 ||
            cfg->rel_max_distance > (1 << 24))
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"%s\" %d and \"%s\" %d do not make relative buckets", path,
                              pf__config_key(cfg->arch, offsetof(pf__config, rel_buckets)), cfg->rel_buckets,
                              pf__config_key(cfg->arch, offsetof(pf__config, rel_max_distance)), cfg->rel_max_distance);
    }
    if (cfg->multi_query >= 0 && !cfg->grouped_qkv) cfg->num_kv_heads = cfg->multi_query ? 1 : cfg->num_heads;
    if (cfg->num_kv_heads == 0) cfg->num_kv_heads = cfg->num_heads;
    if (cfg->grouped_qkv && !cfg->parallel_residual) /* transformers builds norms its forward does not use */
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: \"%s\" with \"%s\" false is not supported", path,
                          pf__config_key(cfg->arch, offsetof(pf__config, grouped_qkv)),
                          pf__config_key(cfg->arch, offsetof(pf__config, parallel_residual)));
    if (cfg->kv_lora_rank) {
        pf_result r = pf__config_latent(path, cfg, message, size);
        if (r) return r;
    }
    if (cfg->head_dim == 0 && cfg->num_heads > 0 && cfg->hidden_size % cfg->num_heads == 0)
        cfg->head_dim = cfg->hidden_size / cfg->num_heads; /* else inconsistent, below */
    if (cfg->embed_dim == 0) cfg->embed_dim = cfg->hidden_size;
    if (cfg->embed_dim != cfg->hidden_size && !pf__arch_tensor_for(cfg->arch, PF__SLOT_PROJECT_IN)) /* SqueezeBERT asserts them equal */
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: \"%s\" %d differs from hidden_size %d, and the family has "
                          "no projection between them", path, pf__config_key(cfg->arch, offsetof(pf__config, embed_dim)),
                          cfg->embed_dim, cfg->hidden_size);
    if (strcmp(pf__config_key(cfg->arch, offsetof(pf__config, relative_attention)), "(derived)"))
        /* DeBERTa scales by 1 / sqrt(head_dim * (1 + its terms)), whether it adds them or not */
        cfg->query_pre_attn_scalar = (double)cfg->head_dim * (1 + cfg->rel_c2p + cfg->rel_p2c);
    if (cfg->hidden_size <= 0 || cfg->num_heads <= 0 || cfg->num_layers <= 0 || cfg->num_layers > 100000 ||
        cfg->vocab_size <= 0 || cfg->max_positions <= 0 || cfg->intermediate_size <= 0 || cfg->head_dim <= 0 ||
        cfg->num_kv_heads <= 0 || cfg->num_heads % cfg->num_kv_heads)
        return pf__format(message, size, PF_ERROR_FORMAT,
                          "%s: inconsistent sizes (hidden %d, heads %d, kv heads %d, head dim %d, layers %d, vocab %d, "
                          "positions %d, intermediate %d)",
                          path, cfg->hidden_size, cfg->num_heads, cfg->num_kv_heads, cfg->head_dim, cfg->num_layers,
                          cfg->vocab_size, cfg->max_positions, cfg->intermediate_size);
    if (cfg->final_norm_eps == 0) cfg->final_norm_eps = cfg->norm_eps;
    /* Granite's multipliers: 0 in these fields means "none", so a config's 0 cannot be honoured */
    static const size_t multipliers[] = {offsetof(pf__config, embed_multiplier), offsetof(pf__config, residual_multiplier),
                                         offsetof(pf__config, attention_multiplier), offsetof(pf__config, logits_scaling)};
    for (size_t i = 0; i < PF__COUNT(multipliers); i++) {
        const char *key = pf__config_key(cfg->arch, multipliers[i]);
        double v = *(const double *)((const char *)cfg + multipliers[i]);
        if (strcmp(key, "(derived)") && !(v != 0 && fabs(v) < 1e30)) /* NaN included */
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"%s\" is %g: it must be a finite, non-zero number", path,
                              key, v);
    }
    if (cfg->mel_frontend && (cfg->num_mel_bins < 1 || cfg->num_mel_bins > 4096 || cfg->encoder_max_positions < 1 ||
                              cfg->encoder_max_positions > (1 << 20)))
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: num_mel_bins %d or max_source_positions %d out of range",
                          path, cfg->num_mel_bins, cfg->encoder_max_positions);
    if (!isfinite(cfg->logit_scale))
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"logit_scale\" %g is not a number", path, cfg->logit_scale);
    if (!(cfg->norm_eps > 0 && cfg->norm_eps < 1) || !(cfg->final_norm_eps > 0 && cfg->final_norm_eps < 1))
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: norm epsilon %g is not in (0, 1)", path, cfg->norm_eps);
    if (a->positions == PF__POS_ROTARY_HALVES || a->positions == PF__POS_ROTARY_PAIRS) {
        if (!(cfg->rotary_pct > 0 && cfg->rotary_pct <= 1)) /* NaN included: converted to an int below */
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: \"%s\" %g is not in (0, 1]", path,
                              pf__config_key(cfg->arch, offsetof(pf__config, rotary_pct)), cfg->rotary_pct);
        if (cfg->rotary_dim == 0)
            cfg->rotary_dim = (int)((cfg->rope_head_dim ? cfg->rope_head_dim : cfg->head_dim) * cfg->rotary_pct);
        if (!(cfg->rope_theta > 0)) /* NaN included; before the rotary width, which it does not concern */
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: the rotary base rope_theta is %g: it must be a positive "
                              "number", path, cfg->rope_theta);
        if (cfg->rotary_dim <= 0 || cfg->rotary_dim > cfg->head_dim || cfg->rotary_dim % 2)
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: rotary dims %d do not fit heads of %d", path,
                              cfg->rotary_dim, cfg->head_dim);
        if (cfg->rope_type == PF__ROPE_LONGROPE && cfg->rope_num_factors != cfg->rotary_dim / 2)
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: longrope's short_factor and long_factor have %d entries; "
                              "the %d rotary dims need %d", path, cfg->rope_num_factors, cfg->rotary_dim, cfg->rotary_dim / 2);
    }
    return PF_OK;
}

/* A config.json object (the file's, or a dual model's tower's) into cfg: the row of arch, or of
   its model_type when arch is -1. path names it in messages. */
PF_PRIVATE pf_result pf__config_parse(const pf__json *json, const char *path, int arch, pf__config *cfg, char *message,
                                  size_t size) {
    pf_result r = PF_OK;
    pf__config_defaults(cfg);
    const char *table_error = pf__policy_table_error(); /* a mistake in policies.inc's rows: no model is read wrongly */
    if (table_error) return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s", table_error);
    arch = pf__config_arch(json, path, arch, cfg, &r, message, size);
    if (arch < 0) return r;
    cfg->arch = (pf__arch_id)arch;
    if ((r = pf__config_read_rows(json, path, cfg, message, size)) != PF_OK) return r;
    if (pf__archs[arch].kind == PF__KIND_DUAL) return pf__config_requires(json, cfg->arch, path, message, size); /* its towers have the rest */
    if ((r = pf__config_read_extras(json, path, cfg, message, size)) != PF_OK) return r;
    return pf__config_derive(path, cfg, message, size);
}

