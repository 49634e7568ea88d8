#include "internal.h"
/* ---- registering policies at run time ---- */

/* Each trait's names: the enumerator's own name without its prefix, matched in lower case
   ("rotary_halves" is PF__POS_ROTARY_HALVES), so every value has one spelling; -Wswitch names an
   enumerator added without one. NULL: not a value a policy may name. */
#define PF__NAME(prefix, name) case prefix##name: return #name;
static const char *pf__kind_name(int v) {
    switch ((pf__kind)v) {
        PF__NAME(PF__KIND_, DECODER) PF__NAME(PF__KIND_, ENCODER) PF__NAME(PF__KIND_, SEQ2SEQ)
    case PF__KIND_DUAL: return NULL; /* its loader names its two towers' compiled-in rows: not a policy's */
    }
    return NULL;
}
static const char *pf__norm_name(int v) {
    switch ((pf__norm)v) {
        PF__NAME(PF__NORM_, LAYER) PF__NAME(PF__NORM_, RMS) PF__NAME(PF__NORM_, RMS_PLUS_ONE)
    case PF__NORM_ELEMENTWISE: return NULL; /* a config field's (elementwise_norm), not a row's norm */
    }
    return NULL;
}
static const char *pf__positions_name(int v) {
    switch ((pf__positions)v) {
        PF__NAME(PF__POS_, LEARNED) PF__NAME(PF__POS_, ROTARY_HALVES) PF__NAME(PF__POS_, ROTARY_PAIRS)
        PF__NAME(PF__POS_, ALIBI) PF__NAME(PF__POS_, SINUSOIDAL) PF__NAME(PF__POS_, RELATIVE)
    }
    return NULL;
}
static const char *pf__qkv_layout_name(int v) {
    switch ((pf__qkv_layout)v) {
        PF__NAME(PF__QKV_, BLOCKS) PF__NAME(PF__QKV_, PER_HEAD) PF__NAME(PF__QKV_, CODEGEN) PF__NAME(PF__QKV_, GROUPED)
    }
    return NULL;
}
static const char *pf__mlp_name(int v) {
    switch ((pf__mlp)v) { PF__NAME(PF__MLP_, PLAIN) PF__NAME(PF__MLP_, GATED) PF__NAME(PF__MLP_, GATED_IF_NAMED) }
    return NULL;
}
static const char *pf__activation_name(int v) {
    switch ((pf__activation)v) {
        PF__NAME(PF__ACT_, GELU_TANH) PF__NAME(PF__ACT_, GELU_ERF) PF__NAME(PF__ACT_, RELU) PF__NAME(PF__ACT_, SILU)
        PF__NAME(PF__ACT_, TANH) PF__NAME(PF__ACT_, QUICK_GELU)
    }
    return NULL;
}
static const char *pf__layout_name(int v) {
    switch ((pf__layout)v) {
        PF__NAME(PF__LAYOUT_, OUT_IN) PF__NAME(PF__LAYOUT_, IN_OUT) PF__NAME(PF__LAYOUT_, VECTOR)
        PF__NAME(PF__LAYOUT_, ROW) PF__NAME(PF__LAYOUT_, SQUEEZED) PF__NAME(PF__LAYOUT_, CONV) PF__NAME(PF__LAYOUT_, HEADS)
        PF__NAME(PF__LAYOUT_, EXPERTS) PF__NAME(PF__LAYOUT_, PER_EXPERT) PF__NAME(PF__LAYOUT_, EXPERTS_IN_OUT)
        PF__NAME(PF__LAYOUT_, EXPERT_VECTORS) PF__NAME(PF__LAYOUT_, PER_HEAD) PF__NAME(PF__LAYOUT_, GROUPED)
        PF__NAME(PF__LAYOUT_, COLUMN) PF__NAME(PF__LAYOUT_, GROUPED_IN_OUT) PF__NAME(PF__LAYOUT_, HEADS_IN_OUT)
        PF__NAME(PF__LAYOUT_, HEADS_ROWS)
    }
    return NULL;
}
static const char *pf__split_name(int v) {
    switch ((pf__split)v) {
        PF__NAME(PF__SPLIT_, NONE) PF__NAME(PF__SPLIT_, QKV_COLUMNS) PF__NAME(PF__SPLIT_, HEAD_COLUMNS)
        PF__NAME(PF__SPLIT_, KV_COLUMNS) PF__NAME(PF__SPLIT_, MLP_COLUMNS) PF__NAME(PF__SPLIT_, HEAD_ROWS)
        PF__NAME(PF__SPLIT_, MLP_ROWS) PF__NAME(PF__SPLIT_, VOCAB) PF__NAME(PF__SPLIT_, GATE_UP_COLUMNS) PF__NAME(PF__SPLIT_, LATENT_KV_COLUMNS)
        PF__NAME(PF__SPLIT_, EXPERTS_GATE_UP) PF__NAME(PF__SPLIT_, EXPERTS_DOWN) PF__NAME(PF__SPLIT_, SHARED_COLUMNS)
        PF__NAME(PF__SPLIT_, SHARED_ROWS) PF__NAME(PF__SPLIT_, HEADS) PF__NAME(PF__SPLIT_, EXPERTS_OUTPUT) PF__NAME(PF__SPLIT_, SHARED_GATE_UP_COLUMNS)
    }
    return NULL;
}
static const char *pf__need_name(int v) {
    switch ((pf__need)v) {
        PF__NAME(PF__, OPTIONAL) PF__NAME(PF__, REQUIRED) PF__NAME(PF__, IF_ATTENTION_BIAS) PF__NAME(PF__, IF_MLP_BIAS)
        PF__NAME(PF__, IF_FINAL_NORM) PF__NAME(PF__, IF_PROJECTION) PF__NAME(PF__, IF_GATED) PF__NAME(PF__, IF_DECODER)
        PF__NAME(PF__, IF_EMBED_NORM) PF__NAME(PF__, POSITION_TABLE) PF__NAME(PF__, IF_DISTILLATION) PF__NAME(PF__, IF_QK_NORM)
        PF__NAME(PF__, IF_WITH_PROJECTION) PF__NAME(PF__, IF_Q_LORA) PF__NAME(PF__, IF_NO_Q_LORA)
        PF__NAME(PF__, IF_POSITION_BIASED) PF__NAME(PF__, IF_REL_EMBED_NORM) PF__NAME(PF__, IF_POS_PROJ)
        PF__NAME(PF__, IF_SPARSE_LAYER) PF__NAME(PF__, IF_DENSE_LAYER) PF__NAME(PF__, IF_SEPARATE_VOCAB)
        PF__NAME(PF__, IF_TASK_ID) PF__NAME(PF__, IF_SHARED_EXPERT) PF__NAME(PF__, IF_LM_HEAD_BIAS)
    }
    return NULL;
}
static const char *pf__slot_name(int v) {
    switch ((pf__slot)v) {
        PF__NAME(PF__SLOT_, TOKEN_EMBED) PF__NAME(PF__SLOT_, POSITION_EMBED) PF__NAME(PF__SLOT_, EMBED_NORM_WEIGHT)
        PF__NAME(PF__SLOT_, EMBED_NORM_BIAS) PF__NAME(PF__SLOT_, PROJECT_IN) PF__NAME(PF__SLOT_, PROJECT_IN_BIAS)
        PF__NAME(PF__SLOT_, PROJECT_OUT) PF__NAME(PF__SLOT_, FINAL_NORM_WEIGHT) PF__NAME(PF__SLOT_, FINAL_NORM_BIAS)
        PF__NAME(PF__SLOT_, LM_HEAD) PF__NAME(PF__SLOT_, LM_HEAD_BIAS) PF__NAME(PF__SLOT_, TOKEN_TYPE_EMBED)
        PF__NAME(PF__SLOT_, POOLER_WEIGHT) PF__NAME(PF__SLOT_, POOLER_BIAS) PF__NAME(PF__SLOT_, POOLER_NORM_WEIGHT)
        PF__NAME(PF__SLOT_, POOLER_NORM_BIAS) PF__NAME(PF__SLOT_, PROJECTION) PF__NAME(PF__SLOT_, DOC_PROJECTION) PF__NAME(PF__SLOT_, LOGIT_SCALE) PF__NAME(PF__SLOT_, LM_HEAD_EXTRA)
        PF__NAME(PF__SLOT_, HEAD_TRANSFORM_WEIGHT)
        PF__NAME(PF__SLOT_, HEAD_TRANSFORM_BIAS) PF__NAME(PF__SLOT_, HEAD_NORM_WEIGHT) PF__NAME(PF__SLOT_, HEAD_NORM_BIAS)
        PF__NAME(PF__SLOT_, CLASSIFIER_WEIGHT) PF__NAME(PF__SLOT_, CLASSIFIER_BIAS) PF__NAME(PF__SLOT_, SPAN_WEIGHT)
        PF__NAME(PF__SLOT_, SPAN_BIAS) PF__NAME(PF__SLOT_, REL_BIAS) PF__NAME(PF__SLOT_, REL_EMBED)
        PF__NAME(PF__SLOT_, REL_EMBED_NORM_WEIGHT) PF__NAME(PF__SLOT_, REL_EMBED_NORM_BIAS) PF__NAME(PF__SLOT_, ENC_POSITION_EMBED)
        PF__NAME(PF__SLOT_, ENC_EMBED_NORM_WEIGHT) PF__NAME(PF__SLOT_, ENC_EMBED_NORM_BIAS)
        PF__NAME(PF__SLOT_, ENC_FINAL_NORM_WEIGHT) PF__NAME(PF__SLOT_, ENC_FINAL_NORM_BIAS) PF__NAME(PF__SLOT_, ENC_REL_BIAS)
        PF__NAME(PF__SLOT_, ENC_TOKEN_EMBED) PF__NAME(PF__SLOT_, ENC_TOKEN_TYPE_EMBED) PF__NAME(PF__SLOT_, PATCH_WEIGHT) PF__NAME(PF__SLOT_, PATCH_BIAS)
        PF__NAME(PF__SLOT_, CLS_TOKEN) PF__NAME(PF__SLOT_, DIST_TOKEN) PF__NAME(PF__SLOT_, DIST_CLASSIFIER_WEIGHT)
        PF__NAME(PF__SLOT_, DIST_CLASSIFIER_BIAS) PF__NAME(PF__SLOT_, DISCRIMINATOR_WEIGHT)
        PF__NAME(PF__SLOT_, DISCRIMINATOR_BIAS) PF__NAME(PF__SLOT_, DISCRIMINATOR_OUT_WEIGHT)
        PF__NAME(PF__SLOT_, DISCRIMINATOR_OUT_BIAS) PF__NAME(PF__SLOT_, NEXT_SENTENCE_WEIGHT)
        PF__NAME(PF__SLOT_, NEXT_SENTENCE_BIAS) PF__NAME(PF__SLOT_, CLASSIFIER_DENSE_WEIGHT)
        PF__NAME(PF__SLOT_, CLASSIFIER_DENSE_BIAS) PF__NAME(PF__SLOT_, TASK_TYPE_EMBED) PF__NAME(PF__SLOT_, MASK_EMBED)
        PF__NAME(PF__SLOT_, TXL_EMBED_1) PF__NAME(PF__SLOT_, TXL_EMBED_2) PF__NAME(PF__SLOT_, TXL_EMBED_3)
        PF__NAME(PF__SLOT_, TXL_EMBED_PROJ_0) PF__NAME(PF__SLOT_, TXL_EMBED_PROJ_1) PF__NAME(PF__SLOT_, TXL_EMBED_PROJ_2)
        PF__NAME(PF__SLOT_, TXL_EMBED_PROJ_3) PF__NAME(PF__SLOT_, TXL_OUT_WEIGHT_0) PF__NAME(PF__SLOT_, TXL_OUT_WEIGHT_1)
        PF__NAME(PF__SLOT_, TXL_OUT_WEIGHT_2) PF__NAME(PF__SLOT_, TXL_OUT_WEIGHT_3) PF__NAME(PF__SLOT_, TXL_OUT_BIAS_0)
        PF__NAME(PF__SLOT_, TXL_OUT_BIAS_1) PF__NAME(PF__SLOT_, TXL_OUT_BIAS_2) PF__NAME(PF__SLOT_, TXL_OUT_BIAS_3)
        PF__NAME(PF__SLOT_, TXL_OUT_PROJ_0) PF__NAME(PF__SLOT_, TXL_OUT_PROJ_1) PF__NAME(PF__SLOT_, TXL_OUT_PROJ_2)
        PF__NAME(PF__SLOT_, TXL_OUT_PROJ_3) PF__NAME(PF__SLOT_, TXL_CLUSTER_WEIGHT) PF__NAME(PF__SLOT_, TXL_CLUSTER_BIAS)
        PF__NAME(PF__SLOT_, TXL_R_W_BIAS) PF__NAME(PF__SLOT_, TXL_R_R_BIAS)
        PF__NAME(PF__SLOT_, X_POSITION_EMBED) PF__NAME(PF__SLOT_, Y_POSITION_EMBED) PF__NAME(PF__SLOT_, H_POSITION_EMBED)
        PF__NAME(PF__SLOT_, W_POSITION_EMBED) PF__NAME(PF__SLOT_, VISUAL_PROJECTION_WEIGHT)
        PF__NAME(PF__SLOT_, VISUAL_PROJECTION_BIAS) PF__NAME(PF__SLOT_, VISUAL_TOKEN_TYPE_EMBED)
        PF__NAME(PF__SLOT_, VISUAL_POSITION_EMBED) PF__NAME(PF__SLOT_, VISUAL_NORM_WEIGHT) PF__NAME(PF__SLOT_, VISUAL_NORM_BIAS)
        PF__NAME(PF__SLOT_, BOX_PROJECTION_WEIGHT) PF__NAME(PF__SLOT_, BOX_PROJECTION_BIAS) PF__NAME(PF__SLOT_, BOX_NORM_WEIGHT)
        PF__NAME(PF__SLOT_, BOX_NORM_BIAS) PF__NAME(PF__SLOT_, ANSWER_DENSE_WEIGHT) PF__NAME(PF__SLOT_, ANSWER_DENSE_BIAS)
        PF__NAME(PF__SLOT_, ANSWER_NORM_WEIGHT) PF__NAME(PF__SLOT_, ANSWER_NORM_BIAS) PF__NAME(PF__SLOT_, NGRAM_EMBED) PF__NAME(PF__SLOT_, AXIAL_ROW_EMBED)
        PF__NAME(PF__SLOT_, AXIAL_COLUMN_EMBED) PF__NAME(PF__SLOT_, ENTITY_EMBED) PF__NAME(PF__SLOT_, ENTITY_DENSE)
        PF__NAME(PF__SLOT_, ENTITY_POSITION_EMBED) PF__NAME(PF__SLOT_, ENTITY_TYPE_EMBED)
        PF__NAME(PF__SLOT_, ENTITY_NORM_WEIGHT) PF__NAME(PF__SLOT_, ENTITY_NORM_BIAS)
        PF__NAME(PF__SLOT_, COLUMN_TYPE_EMBED) PF__NAME(PF__SLOT_, ROW_TYPE_EMBED) PF__NAME(PF__SLOT_, PREV_LABEL_TYPE_EMBED)
        PF__NAME(PF__SLOT_, COLUMN_RANK_TYPE_EMBED) PF__NAME(PF__SLOT_, INV_COLUMN_RANK_TYPE_EMBED)
        PF__NAME(PF__SLOT_, NUMERIC_RELATION_TYPE_EMBED) PF__NAME(PF__SLOT_, CELL_SELECTION_WEIGHT)
        PF__NAME(PF__SLOT_, CELL_SELECTION_BIAS) PF__NAME(PF__SLOT_, COLUMN_SELECTION_WEIGHT)
        PF__NAME(PF__SLOT_, COLUMN_SELECTION_BIAS) PF__NAME(PF__SLOT_, AGGREGATION_WEIGHT) PF__NAME(PF__SLOT_, AGGREGATION_BIAS)
        PF__NAME(PF__SLOT_, FRONT_CONV_WEIGHT) PF__NAME(PF__SLOT_, FRONT_CONV_BIAS)
        PF__NAME(PF__SLOT_, FRONT_CONV_NORM_WEIGHT) PF__NAME(PF__SLOT_, FRONT_CONV_NORM_BIAS)
        PF__NAME(PF__SLOT_, FEATURE_NORM_WEIGHT) PF__NAME(PF__SLOT_, FEATURE_NORM_BIAS)
        PF__NAME(PF__SLOT_, FEATURE_PROJECTION_WEIGHT) PF__NAME(PF__SLOT_, FEATURE_PROJECTION_BIAS)
        PF__NAME(PF__SLOT_, POS_CONV_WEIGHT) PF__NAME(PF__SLOT_, POS_CONV_WEIGHT_G) PF__NAME(PF__SLOT_, POS_CONV_WEIGHT_V)
        PF__NAME(PF__SLOT_, POS_CONV_BIAS) PF__NAME(PF__SLOT_, MEL_CONV1_WEIGHT) PF__NAME(PF__SLOT_, MEL_CONV1_BIAS)
        PF__NAME(PF__SLOT_, MEL_CONV2_WEIGHT) PF__NAME(PF__SLOT_, MEL_CONV2_BIAS)
        PF__NAME(PF__SLOT_, ATTN_NORM_WEIGHT) PF__NAME(PF__SLOT_, ATTN_NORM_BIAS)
        PF__NAME(PF__SLOT_, QKV_FUSED_WEIGHT) PF__NAME(PF__SLOT_, QKV_FUSED_BIAS) PF__NAME(PF__SLOT_, Q_WEIGHT)
        PF__NAME(PF__SLOT_, Q_BIAS) PF__NAME(PF__SLOT_, K_WEIGHT) PF__NAME(PF__SLOT_, K_BIAS) PF__NAME(PF__SLOT_, V_WEIGHT)
        PF__NAME(PF__SLOT_, V_BIAS) PF__NAME(PF__SLOT_, Q_NORM_WEIGHT) PF__NAME(PF__SLOT_, K_NORM_WEIGHT)
        PF__NAME(PF__SLOT_, Q_NORM_BIAS) PF__NAME(PF__SLOT_, K_NORM_BIAS)
        PF__NAME(PF__SLOT_, Q_A_WEIGHT) PF__NAME(PF__SLOT_, Q_A_BIAS) PF__NAME(PF__SLOT_, Q_A_NORM_WEIGHT)
        PF__NAME(PF__SLOT_, Q_B_WEIGHT) PF__NAME(PF__SLOT_, KV_A_WEIGHT) PF__NAME(PF__SLOT_, KV_A_BIAS)
        PF__NAME(PF__SLOT_, KV_A_NORM_WEIGHT) PF__NAME(PF__SLOT_, KV_B_WEIGHT)
        PF__NAME(PF__SLOT_, ATTN_OUT_WEIGHT) PF__NAME(PF__SLOT_, ATTN_OUT_BIAS)
        PF__NAME(PF__SLOT_, MLP_NORM_WEIGHT) PF__NAME(PF__SLOT_, MLP_NORM_BIAS) PF__NAME(PF__SLOT_, MLP_GATE_WEIGHT)
        PF__NAME(PF__SLOT_, MLP_GATE_BIAS) PF__NAME(PF__SLOT_, MLP_UP_WEIGHT) PF__NAME(PF__SLOT_, MLP_UP_BIAS)
        PF__NAME(PF__SLOT_, MLP_DOWN_WEIGHT) PF__NAME(PF__SLOT_, MLP_DOWN_BIAS) PF__NAME(PF__SLOT_, MLP_GATE_UP_WEIGHT)
        PF__NAME(PF__SLOT_, MLP_GATE_UP_BIAS) PF__NAME(PF__SLOT_, ROUTER_WEIGHT) PF__NAME(PF__SLOT_, EXPERTS_GATE_UP)
        PF__NAME(PF__SLOT_, EXPERTS_DOWN) PF__NAME(PF__SLOT_, SHARED_GATE_WEIGHT) PF__NAME(PF__SLOT_, SHARED_GATE_BIAS)
        PF__NAME(PF__SLOT_, SHARED_UP_WEIGHT) PF__NAME(PF__SLOT_, SHARED_UP_BIAS) PF__NAME(PF__SLOT_, SHARED_DOWN_WEIGHT)
        PF__NAME(PF__SLOT_, SHARED_EXPERT_GATE) PF__NAME(PF__SLOT_, ROUTER_CHOICE_BIAS)
        PF__NAME(PF__SLOT_, ROUTER_BIAS) PF__NAME(PF__SLOT_, EXPERTS_GATE_UP_BIAS)
        PF__NAME(PF__SLOT_, EXPERTS_DOWN_BIAS) PF__NAME(PF__SLOT_, ATTN_SINKS)
        PF__NAME(PF__SLOT_, SHARED_GATE_UP_WEIGHT) PF__NAME(PF__SLOT_, SHARED_GATE_UP_BIAS) PF__NAME(PF__SLOT_, ATTN_POST_NORM_WEIGHT)
        PF__NAME(PF__SLOT_, ATTN_POST_NORM_BIAS) PF__NAME(PF__SLOT_, MLP_POST_NORM_WEIGHT) PF__NAME(PF__SLOT_, MLP_POST_NORM_BIAS)
        PF__NAME(PF__SLOT_, CROSS_NORM_WEIGHT)
        PF__NAME(PF__SLOT_, CROSS_NORM_BIAS) PF__NAME(PF__SLOT_, CROSS_Q_WEIGHT) PF__NAME(PF__SLOT_, CROSS_Q_BIAS)
        PF__NAME(PF__SLOT_, CROSS_K_WEIGHT) PF__NAME(PF__SLOT_, CROSS_K_BIAS) PF__NAME(PF__SLOT_, CROSS_V_WEIGHT)
        PF__NAME(PF__SLOT_, CROSS_V_BIAS) PF__NAME(PF__SLOT_, CROSS_OUT_WEIGHT) PF__NAME(PF__SLOT_, CROSS_OUT_BIAS)
        PF__NAME(PF__SLOT_, POS_Q_WEIGHT) PF__NAME(PF__SLOT_, POS_Q_BIAS) PF__NAME(PF__SLOT_, POS_K_WEIGHT) PF__NAME(PF__SLOT_, POS_K_BIAS)
        PF__NAME(PF__SLOT_, Q_GLOBAL_WEIGHT) PF__NAME(PF__SLOT_, Q_GLOBAL_BIAS) PF__NAME(PF__SLOT_, K_GLOBAL_WEIGHT)
        PF__NAME(PF__SLOT_, K_GLOBAL_BIAS) PF__NAME(PF__SLOT_, V_GLOBAL_WEIGHT) PF__NAME(PF__SLOT_, V_GLOBAL_BIAS)
        PF__NAME(PF__SLOT_, W2E_Q_WEIGHT) PF__NAME(PF__SLOT_, W2E_Q_BIAS) PF__NAME(PF__SLOT_, E2W_Q_WEIGHT)
        PF__NAME(PF__SLOT_, E2W_Q_BIAS) PF__NAME(PF__SLOT_, E2E_Q_WEIGHT) PF__NAME(PF__SLOT_, E2E_Q_BIAS)
        PF__NAME(PF__SLOT_, BOTTLENECK_IN_WEIGHT) PF__NAME(PF__SLOT_, BOTTLENECK_IN_BIAS) PF__NAME(PF__SLOT_, BOTTLENECK_IN_NORM_WEIGHT)
        PF__NAME(PF__SLOT_, BOTTLENECK_IN_NORM_BIAS) PF__NAME(PF__SLOT_, BOTTLENECK_QK_WEIGHT) PF__NAME(PF__SLOT_, BOTTLENECK_QK_BIAS)
        PF__NAME(PF__SLOT_, BOTTLENECK_QK_NORM_WEIGHT) PF__NAME(PF__SLOT_, BOTTLENECK_QK_NORM_BIAS)
        PF__NAME(PF__SLOT_, BOTTLENECK_OUT_WEIGHT) PF__NAME(PF__SLOT_, BOTTLENECK_OUT_BIAS)
        PF__NAME(PF__SLOT_, BOTTLENECK_OUT_NORM_WEIGHT) PF__NAME(PF__SLOT_, BOTTLENECK_OUT_NORM_BIAS)
        PF__NAME(PF__SLOT_, FFN1_UP_WEIGHT) PF__NAME(PF__SLOT_, FFN1_UP_BIAS) PF__NAME(PF__SLOT_, FFN1_DOWN_WEIGHT)
        PF__NAME(PF__SLOT_, FFN1_DOWN_BIAS) PF__NAME(PF__SLOT_, FFN1_NORM_WEIGHT) PF__NAME(PF__SLOT_, FFN1_NORM_BIAS)
        PF__NAME(PF__SLOT_, FFN2_UP_WEIGHT) PF__NAME(PF__SLOT_, FFN2_UP_BIAS) PF__NAME(PF__SLOT_, FFN2_DOWN_WEIGHT)
        PF__NAME(PF__SLOT_, FFN2_DOWN_BIAS) PF__NAME(PF__SLOT_, FFN2_NORM_WEIGHT) PF__NAME(PF__SLOT_, FFN2_NORM_BIAS)
        PF__NAME(PF__SLOT_, FFN3_UP_WEIGHT) PF__NAME(PF__SLOT_, FFN3_UP_BIAS) PF__NAME(PF__SLOT_, FFN3_DOWN_WEIGHT)
        PF__NAME(PF__SLOT_, FFN3_DOWN_BIAS) PF__NAME(PF__SLOT_, FFN3_NORM_WEIGHT) PF__NAME(PF__SLOT_, FFN3_NORM_BIAS)
        PF__NAME(PF__SLOT_, CONV_DEPTHWISE_WEIGHT) PF__NAME(PF__SLOT_, CONV_KEY_WEIGHT) PF__NAME(PF__SLOT_, CONV_KEY_BIAS)
        PF__NAME(PF__SLOT_, CONV_KERNEL_WEIGHT) PF__NAME(PF__SLOT_, CONV_KERNEL_BIAS) PF__NAME(PF__SLOT_, CONV_VALUE_WEIGHT)
        PF__NAME(PF__SLOT_, CONV_VALUE_BIAS) PF__NAME(PF__SLOT_, ATTN_JOINED_OUT_WEIGHT) PF__NAME(PF__SLOT_, CONV_OUT_WEIGHT)
        PF__NAME(PF__SLOT_, FUNNEL_R_KERNEL) PF__NAME(PF__SLOT_, FUNNEL_R_R_BIAS) PF__NAME(PF__SLOT_, FUNNEL_R_S_BIAS)
        PF__NAME(PF__SLOT_, FUNNEL_SEG_EMBED) PF__NAME(PF__SLOT_, NGRAM_REL_WEIGHT) PF__NAME(PF__SLOT_, NGRAM_REL_BIAS)
    /* built on each rank from the slots above, never read from files */
    case PF__SLOT_QKV_WEIGHT: case PF__SLOT_QKV_BIAS: case PF__SLOT_MLP_IN_WEIGHT: case PF__SLOT_MLP_IN_BIAS:
    case PF__SLOT_SHARED_IN_WEIGHT: case PF__SLOT_SHARED_IN_BIAS: case PF__SLOT_POS_QK_WEIGHT: case PF__SLOT_POS_QK_BIAS:
    case PF__SLOT_QKV_GLOBAL_WEIGHT: case PF__SLOT_QKV_GLOBAL_BIAS: case PF__SLOT_ENTITY_Q_WEIGHT: case PF__SLOT_ENTITY_Q_BIAS:
    case PF__SLOT_COUNT: return NULL;
    }
    return NULL;
}
#undef PF__NAME

typedef const char *(*pf__name_of)(int value);
#define PF__MAX_TRAIT_VALUE 512 /* above every enumerator a name table spells (checked for the slots, the longest) */
typedef char pf__slots_under_max_trait_value[PF__SLOT_COUNT < PF__MAX_TRAIT_VALUE ? 1 : -1];

/* name (as spelled by a pf__*_name table, upper case) equals text in lower case. */
static int pf__name_is(const char *name, const char *text) {
    for (; *name && *text; name++, text++)
        if (*text != tolower((unsigned char)*name)) return 0;
    return !*name && !*text;
}

/* The value named text; -1 if none. */
static int pf__trait_value(pf__name_of name_of, const char *text) {
    for (int v = 0; v < PF__MAX_TRAIT_VALUE; v++) {
        const char *name = name_of(v);
        if (name && pf__name_is(name, text)) return v;
    }
    return -1;
}

/* "a, b, c": the names a table has, in lower case, for messages. */
static void pf__trait_names(pf__name_of name_of, int (*allowed)(int value, const void *context), const void *context,
                            char *out, size_t size) {
    size_t used = 0;
    out[0] = 0;
    for (int v = 0; v < PF__MAX_TRAIT_VALUE && used + 1 < size; v++) {
        const char *name = name_of(v);
        if (!name || (allowed && !allowed(v, context))) continue;
        if (used) used += (size_t)snprintf(out + used, size - used, ", ");
        for (; *name && used + 1 < size; name++) out[used++] = (char)tolower((unsigned char)*name);
        out[used < size ? used : size - 1] = 0;
    }
}

/* The hyperparameters a config row may set: the pf__config fields some compiled-in
   PF_ARCH_CONFIG row names (repeats and all; the first of a name is the one looked at). */
static const struct pf__config_field {
    const char *name;
    size_t offset;
    int is_double;
} pf__config_fields[] = {
#define PF_ARCH_CONFIG(id, field, key, fallback) {#field, offsetof(pf__config, field), PF__FIELD_IS_DOUBLE(field)},
#include "policies.inc"
};

static const struct pf__config_field *pf__config_field_named(const char *name) {
    for (size_t i = 0; i < PF__COUNT(pf__config_fields); i++)
        if (!strcmp(pf__config_fields[i].name, name)) return &pf__config_fields[i];
    return NULL;
}

/* A slot's layouts and splits: those some compiled-in tensor row gives it, the combinations the
   slicing and the forward pass have run with. */
typedef struct pf__slot_column { pf__slot slot; int is_split; } pf__slot_column;
static int pf__builtin_combination(int value, const void *context) {
    const pf__slot_column *c = (const pf__slot_column *)context;
    for (int a = 0; a < PF__ARCH_COUNT; a++) {
        const pf__policy_rows *rows = pf__rows((pf__arch_id)a);
        for (size_t i = 0; i < rows->num_tensors; i++)
            if (rows->tensors[i].slot == c->slot && (c->is_split ? (int)rows->tensors[i].split : (int)rows->tensors[i].layout) == value)
                return 1;
    }
    return 0;
}

#define PF__POLICY_MAX_ROWS 4096   /* rows of one table in a registered policy */
#define PF__POLICY_MAX_NAME 63     /* model_type (pf__config keeps 64 bytes), config keys */
#define PF__POLICY_MAX_PATTERN 200 /* tensor names are built in 256-byte buffers with the prefix */
#define PF__POLICY_MAX_PREFIX 48

/* A policy being registered: checked and copied before it is installed under the lock. */
typedef struct pf__policy_draft {
    pf__arch arch;
    pf__arch_tensor *tensors;
    pf__arch_config *configs;
    pf__arch_prefix *prefixes;
    pf__arch_buffer *buffers;
    pf__arch_require *required_values;
    pf__arch_null *nulls;
    pf__arch_layer_types *layer_types;
    pf__arch_activation *activations;
    size_t num_tensors, num_configs, num_prefixes, num_buffers, num_required_values, num_nulls, num_layer_types, num_activations;
    char **strings;
    size_t num_strings;
    const char *model_type; /* for messages: the caller's until copied */
    char *error;
    size_t error_size;
} pf__policy_draft;

static void pf__draft_free(pf__policy_draft *d) {
    for (size_t i = 0; i < d->num_strings; i++) free(d->strings[i]);
    free(d->strings);
    free(d->tensors);
    free(d->configs);
    free(d->prefixes);
    free(d->buffers);
    free(d->required_values);
    free(d->nulls);
    free(d->layer_types);
    free(d->activations);
}

/* "policy \"my-llama\": what", the message of every refusal. */
static pf_result pf__draft_fail(pf__policy_draft *d, pf_result code, const char *fmt, ...) {
    char what[2048]; /* room for the names a trait has */
    va_list args;
    va_start(args, fmt);
    vsnprintf(what, sizeof what, fmt, args);
    va_end(args);
    if (d->model_type) return pf__format(d->error, d->error_size, code, "policy \"%.63s\": %s", d->model_type, what);
    return pf__format(d->error, d->error_size, code, "policy: %s", what);
}

/* A checked copy of a string field (what names it in messages); NULL after a failure. */
static const char *pf__draft_text(pf__policy_draft *d, const char *what, const char *text, size_t max_len, pf_result *r) {
    size_t len = text ? strlen(text) : 0;
    if (*r) return NULL;
    if (!text || !len) {
        *r = pf__draft_fail(d, PF_ERROR_INVALID_ARGUMENT, "%s is missing", what);
        return NULL;
    }
    if (len > max_len) {
        *r = pf__draft_fail(d, PF_ERROR_INVALID_ARGUMENT, "%s is %zu bytes long (at most %zu)", what, len, max_len);
        return NULL;
    }
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)text[i] < 0x20) {
            *r = pf__draft_fail(d, PF_ERROR_INVALID_ARGUMENT, "%s holds a control character", what);
            return NULL;
        }
    char **grown = (char **)realloc(d->strings, (d->num_strings + 1) * sizeof *grown);
    char *copy = (char *)malloc(len + 1);
    if (grown) d->strings = grown;
    if (!grown || !copy) {
        free(copy);
        *r = pf__draft_fail(d, PF_ERROR_OUT_OF_MEMORY, "out of memory");
        return NULL;
    }
    memcpy(copy, text, len + 1);
    return d->strings[d->num_strings++] = copy;
}

/* A trait by name (NULL: fallback_name, or missing when that is NULL too); -1 after a failure. */
static int pf__draft_trait(pf__policy_draft *d, const char *what, const char *text, const char *fallback_name,
                           pf__name_of name_of, pf_result *r) {
    if (*r) return -1;
    if (!text) text = fallback_name;
    if (!text) {
        *r = pf__draft_fail(d, PF_ERROR_INVALID_ARGUMENT, "%s is missing", what);
        return -1;
    }
    int v = pf__trait_value(name_of, text);
    if (v < 0) {
        char known[1500];
        pf__trait_names(name_of, NULL, NULL, known, sizeof known);
        *r = pf__draft_fail(d, PF_ERROR_INVALID_ARGUMENT, "%s: unknown name \"%.100s\" (known: %s)", what, text, known);
    }
    return v;
}

/* How many '|'-separated parts a PF__LAYOUT_PER_EXPERT pattern has. */
PF_PRIVATE int pf__pattern_parts(const char *pattern) {
    int n = 1;
    for (const char *p = pattern; (p = strchr(p, '|')) != NULL; p++) n++;
    return n;
}

/* How many "%d" a name pattern has; -1 when it has another '%' (patterns are printf formats). */
static int pf__pattern_layers(const char *pattern) {
    int n = 0;
    for (const char *p = pattern; *p; p++) {
        if (*p != '%') continue;
        if (p[1] != 'd') return -1;
        n++;
        p++;
    }
    return n;
}

/* A table's row count: 0 .. PF__POLICY_MAX_ROWS, with rows when there are some. */
static pf_result pf__draft_count(pf__policy_draft *d, const char *what, const void *rows, int count) {
    if (count < 0 || count > PF__POLICY_MAX_ROWS)
        return pf__draft_fail(d, PF_ERROR_INVALID_ARGUMENT, "num_%s = %d is not in 0..%d", what, count, PF__POLICY_MAX_ROWS);
    if (count && !rows) return pf__draft_fail(d, PF_ERROR_INVALID_ARGUMENT, "num_%s = %d but %s is NULL", what, count, what);
    return PF_OK;
}

static pf_result pf__draft_tensors(pf__policy_draft *d, const pf_policy *p) {
    pf_result r = pf__draft_count(d, "tensors", p->tensors, p->num_tensors);
    if (r) return r;
    d->tensors = (pf__arch_tensor *)calloc((size_t)p->num_tensors + 1, sizeof *d->tensors);
    if (!d->tensors) return pf__draft_fail(d, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    int anchored = 0; /* a token embedding or patch embedding row anchors the prefix (pf__resolve_sources) */
    int position_table = 0;
    for (int i = 0; i < p->num_tensors && !r; i++) {
        const pf_policy_tensor *in = &p->tensors[i];
        pf__arch_tensor *t = &d->tensors[d->num_tensors++];
        char what[64];
        snprintf(what, sizeof what, "tensors[%d].slot", i);
        int slot = pf__draft_trait(d, what, in->slot, NULL, pf__slot_name, &r);
        snprintf(what, sizeof what, "tensors[%d].layout", i);
        int layout = pf__draft_trait(d, what, in->layout, "out_in", pf__layout_name, &r);
        snprintf(what, sizeof what, "tensors[%d].split", i);
        int split = pf__draft_trait(d, what, in->split, "none", pf__split_name, &r);
        snprintf(what, sizeof what, "tensors[%d].need", i);
        int need = pf__draft_trait(d, what, in->need, "required", pf__need_name, &r);
        snprintf(what, sizeof what, "tensors[%d].pattern", i);
        t->pattern = pf__draft_text(d, what, in->pattern, PF__POLICY_MAX_PATTERN, &r);
        if (r) break;
        if (slot >= PF__SLOT_FIRST_FRONT_END && slot < PF__SLOT_FIRST_LAYER)
            return pf__draft_fail(d, PF_ERROR_UNSUPPORTED, "tensors[%d].slot: \"%s\": a speech front end (Wav2Vec2, HuBERT, "
                                  "Whisper, Speech2Text) is compiled in, not a policy's", i, in->slot);
        /* a per-layer pattern without "%d" is one tensor all layers share (ALBERT) */
        int per_layer = slot >= PF__SLOT_FIRST_LAYER, layers = pf__pattern_layers(t->pattern);
        if ((layout == PF__LAYOUT_PER_EXPERT || layout == PF__LAYOUT_PER_HEAD) && per_layer) /* each '|' part: the layer's %d, then the expert's (head's) */
            layers = layers == 2 * pf__pattern_parts(t->pattern) ? 1 : -1;
        if (layers < 0 || layers > 2 * per_layer)
            return pf__draft_fail(d, PF_ERROR_INVALID_ARGUMENT, "%s \"%s\": %s", what, t->pattern,
                                  per_layer ? "a per-layer slot's pattern takes one \"%d\" (the layer) at most, or two (the "
                                              "block of block_sizes, then the layer's place in it; per_expert: two in each "
                                              "'|' part, the layer's and the expert's), and no other '%'"
                                            : "a slot outside the layers takes no '%' in its pattern");
        for (int column = 0; column < 2; column++) {
            pf__slot_column c = {(pf__slot)slot, column};
            if (pf__builtin_combination(column ? split : layout, &c)) continue;
            char known[300];
            pf__trait_names(column ? pf__split_name : pf__layout_name, pf__builtin_combination, &c, known, sizeof known);
            return pf__draft_fail(d, PF_ERROR_INVALID_ARGUMENT,
                                  "tensors[%d]: slot \"%s\" with %s \"%s\": no compiled-in policy gives the slot that %s "
                                  "(those that do: %s)", i, in->slot, column ? "split" : "layout",
                                  column ? in->split : (in->layout ? in->layout : "out_in"), column ? "split" : "layout",
                                  known[0] ? known : "none");
        }
        if (in->encoder != 0 && in->encoder != 1)
            return pf__draft_fail(d, PF_ERROR_INVALID_ARGUMENT, "tensors[%d].encoder = %d is not 0 or 1", i, in->encoder);
        if (in->encoder && (!per_layer || d->arch.kind != PF__KIND_SEQ2SEQ))
            return pf__draft_fail(d, PF_ERROR_INVALID_ARGUMENT, "tensors[%d].encoder: encoder rows are per-layer slots of a "
                                  "seq2seq kind", i);
        t->slot = (pf__slot)slot;
        t->layout = (pf__layout)layout;
        t->split = (pf__split)split;
        t->need = (pf__need)need;
        t->encoder = in->encoder;
        anchored |= slot == PF__SLOT_TOKEN_EMBED || slot == PF__SLOT_PATCH_WEIGHT;
        position_table |= slot == PF__SLOT_POSITION_EMBED || slot == PF__SLOT_ENC_POSITION_EMBED;
    }
    if (!r && !anchored)
        r = pf__draft_fail(d, PF_ERROR_INVALID_ARGUMENT, "no tensor row has the slot \"token_embed\" (or \"patch_weight\")");
    /* without a table, learned positions would silently be none */
    if (!r && d->arch.positions == PF__POS_LEARNED && !position_table)
        r = pf__draft_fail(d, PF_ERROR_INVALID_ARGUMENT, "positions \"learned\" needs a tensor row with the slot \"position_embed\"");
    return r;
}

/* A per-layer pattern of two %d (a block, then the layer's place in it) is Funnel's: the policy
   must set the config field funnel, whose block_sizes name the blocks. */
static pf_result pf__draft_block_patterns(pf__policy_draft *d) {
    int funnel = 0;
    for (size_t i = 0; i < d->num_configs; i++)
        if (d->configs[i].offset == offsetof(pf__config, funnel) && d->configs[i].fallback != 0) funnel = 1;
    for (size_t i = 0; i < d->num_tensors && !funnel; i++) {
        const pf__arch_tensor *t = &d->tensors[i];
        if (t->slot >= PF__SLOT_FIRST_LAYER && t->layout != PF__LAYOUT_PER_EXPERT && t->layout != PF__LAYOUT_PER_HEAD &&
            pf__pattern_layers(t->pattern) == 2)
            return pf__draft_fail(d, PF_ERROR_INVALID_ARGUMENT, "tensors[%zu].pattern \"%s\": a per-layer slot's pattern "
                                  "takes one \"%%d\" (the layer) at most, or two (the block, then the layer's place in "
                                  "it) with the config field funnel set", i, t->pattern);
    }
    return PF_OK;
}

static pf_result pf__draft_configs(pf__policy_draft *d, const pf_policy *p) {
    pf_result r = pf__draft_count(d, "config", p->config, p->num_config);
    if (r) return r;
    d->configs = (pf__arch_config *)calloc((size_t)p->num_config + 1, sizeof *d->configs);
    if (!d->configs) return pf__draft_fail(d, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; i < p->num_config && !r; i++) {
        const pf_policy_config *in = &p->config[i];
        pf__arch_config *c = &d->configs[d->num_configs++];
        const struct pf__config_field *field = in->field ? pf__config_field_named(in->field) : NULL;
        if (!field) {
            char known[1200] = "";
            size_t used = 0;
            for (size_t j = 0; j < PF__COUNT(pf__config_fields) && used + 1 < sizeof known; j++)
                if (pf__config_field_named(pf__config_fields[j].name) == &pf__config_fields[j]) /* first of its name */
                    used += (size_t)snprintf(known + used, sizeof known - used, "%s%s", used ? ", " : "", pf__config_fields[j].name);
            return pf__draft_fail(d, PF_ERROR_INVALID_ARGUMENT, "config[%d].field: %s%.100s%s (known: %s)", i,
                                  in->field ? "unknown field \"" : "missing", in->field ? in->field : "", in->field ? "\"" : "", known);
        }
        if (field->offset == offsetof(pf__config, speech) || field->offset == offsetof(pf__config, mel_frontend) ||
            field->offset == offsetof(pf__config, conv_subsampler))
            return pf__draft_fail(d, PF_ERROR_UNSUPPORTED, "config[%d].field: \"%s\": a speech front end "
                                  "(Wav2Vec2, HuBERT, Whisper, Speech2Text) is compiled in, not a policy's", i, field->name);
        char what[64];
        snprintf(what, sizeof what, "config[%d].key", i);
        c->key = in->key ? pf__draft_text(d, what, in->key, PF__POLICY_MAX_NAME, &r) : NULL;
        if (r) break;
        double v = in->fallback;
        if (v == PF__NEEDED && !in->key)
            return pf__draft_fail(d, PF_ERROR_INVALID_ARGUMENT, "config[%d]: field \"%s\" has no key and no fallback", i, field->name);
        if (v != PF__NEEDED && (!isfinite(v) || fabs(v) > 1e12 ||
                                (!field->is_double && (v != floor(v) || v < -1 || v > 1e9))))
            return pf__draft_fail(d, PF_ERROR_INVALID_ARGUMENT, "config[%d].fallback = %g is absurd for field \"%s\"%s", i, v,
                                  field->name, field->is_double ? "" : " (an integer in -1..1e9)");
        c->offset = field->offset;
        c->is_double = field->is_double;
        c->fallback = v;
    }
    return r;
}

/* Prefixes and buffers: lists of patterns. */
static pf_result pf__draft_names(pf__policy_draft *d, const pf_policy *p) {
    pf_result r = pf__draft_count(d, "prefixes", p->prefixes, p->num_prefixes);
    if (!r) r = pf__draft_count(d, "buffers", p->buffers, p->num_buffers);
    if (r) return r;
    d->prefixes = (pf__arch_prefix *)calloc((size_t)p->num_prefixes + 1, sizeof *d->prefixes);
    d->buffers = (pf__arch_buffer *)calloc((size_t)p->num_buffers + 1, sizeof *d->buffers);
    if (!d->prefixes || !d->buffers) return pf__draft_fail(d, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    char what[64];
    for (int i = 0; i < p->num_prefixes && !r; i++) {
        snprintf(what, sizeof what, "prefixes[%d]", i);
        const char *prefix = p->prefixes[i];
        if (prefix && !prefix[0]) prefix = ""; /* the bare names: kept as the empty string */
        else if ((prefix = pf__draft_text(d, what, prefix, PF__POLICY_MAX_PREFIX, &r)) && strchr(prefix, '%'))
            r = pf__draft_fail(d, PF_ERROR_INVALID_ARGUMENT, "%s \"%s\" holds a '%%'", what, prefix);
        d->prefixes[d->num_prefixes++].prefix = prefix;
    }
    if (!p->num_prefixes) d->prefixes[d->num_prefixes++].prefix = ""; /* none given: the names as they are */
    for (int i = 0; i < p->num_buffers && !r; i++) {
        snprintf(what, sizeof what, "buffers[%d]", i);
        const char *pattern = pf__draft_text(d, what, p->buffers[i], PF__POLICY_MAX_PATTERN, &r);
        if (!r && pf__pattern_layers(pattern) > 1) r = pf__draft_fail(d, PF_ERROR_INVALID_ARGUMENT, "%s \"%s\" has more than one \"%%d\"", what, pattern);
        if (!r && pf__pattern_layers(pattern) < 0) r = pf__draft_fail(d, PF_ERROR_INVALID_ARGUMENT, "%s \"%s\" holds a '%%' that is not \"%%d\"", what, pattern);
        d->buffers[d->num_buffers++].pattern = pattern;
    }
    return r;
}

/* Requires, nulls, layer types and the family's activation names. */
static pf_result pf__draft_keyed_rows(pf__policy_draft *d, const pf_policy *p) {
    pf_result r = pf__draft_count(d, "required_values", p->required_values, p->num_required_values);
    if (!r) r = pf__draft_count(d, "nulls", p->nulls, p->num_nulls);
    if (!r) r = pf__draft_count(d, "layer_types", p->layer_types, p->num_layer_types);
    if (!r) r = pf__draft_count(d, "activations", p->activations, p->num_activations);
    if (r) return r;
    d->required_values = (pf__arch_require *)calloc((size_t)p->num_required_values + 1, sizeof *d->required_values);
    d->nulls = (pf__arch_null *)calloc((size_t)p->num_nulls + 1, sizeof *d->nulls);
    d->layer_types = (pf__arch_layer_types *)calloc((size_t)p->num_layer_types + 1, sizeof *d->layer_types);
    d->activations = (pf__arch_activation *)calloc((size_t)p->num_activations + 1, sizeof *d->activations);
    if (!d->required_values || !d->nulls || !d->layer_types || !d->activations)
        return pf__draft_fail(d, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    char what[64];
    for (int i = 0; i < p->num_required_values && !r; i++) {
        pf__arch_require *q = &d->required_values[d->num_required_values++];
        snprintf(what, sizeof what, "required_values[%d].key", i);
        q->key = pf__draft_text(d, what, p->required_values[i].key, PF__POLICY_MAX_NAME, &r);
        q->value = p->required_values[i].value;
        if (!r && !isfinite(q->value))
            r = pf__draft_fail(d, PF_ERROR_INVALID_ARGUMENT, "required_values[%d].value = %g is not a number", i, q->value);
    }
    for (int i = 0; i < p->num_nulls && !r; i++) {
        pf__arch_null *n = &d->nulls[d->num_nulls++];
        snprintf(what, sizeof what, "nulls[%d].key", i);
        n->key = pf__draft_text(d, what, p->nulls[i].key, PF__POLICY_MAX_NAME, &r);
        n->value = p->nulls[i].value;
        if (!r && n->value != PF__NEEDED && !(isfinite(n->value) && fabs(n->value) <= 1e12))
            r = pf__draft_fail(d, PF_ERROR_INVALID_ARGUMENT, "nulls[%d].value = %g is absurd", i, n->value);
    }
    for (int i = 0; i < p->num_layer_types && !r; i++) {
        pf__arch_layer_types *t = &d->layer_types[d->num_layer_types++];
        snprintf(what, sizeof what, "layer_types[%d].key", i);
        t->key = pf__draft_text(d, what, p->layer_types[i].key, PF__POLICY_MAX_NAME, &r);
        t->needed = p->layer_types[i].needed;
        if (!r && t->needed != 0 && t->needed != 1)
            r = pf__draft_fail(d, PF_ERROR_INVALID_ARGUMENT, "layer_types[%d].needed = %d is not 0 or 1", i, t->needed);
    }
    for (int i = 0; i < p->num_activations && !r; i++) {
        pf__arch_activation *a = &d->activations[d->num_activations++];
        snprintf(what, sizeof what, "activations[%d].name", i);
        a->name = pf__draft_text(d, what, p->activations[i].name, PF__POLICY_MAX_NAME, &r);
        snprintf(what, sizeof what, "activations[%d].activation", i);
        a->activation = (pf__activation)pf__draft_trait(d, what, p->activations[i].activation, NULL, pf__activation_name, &r);
    }
    return r;
}

/* The row's traits. */
static pf_result pf__draft_arch(pf__policy_draft *d, const pf_policy *p) {
    pf_result r = PF_OK;
    pf__arch *a = &d->arch;
    a->model_type = pf__draft_text(d, "model_type", p->model_type, PF__POLICY_MAX_NAME, &r);
    a->kind = (pf__kind)pf__draft_trait(d, "kind", p->kind, "decoder", pf__kind_name, &r);
    a->norm = (pf__norm)pf__draft_trait(d, "norm", p->norm, "layer", pf__norm_name, &r);
    a->positions = (pf__positions)pf__draft_trait(d, "positions", p->positions, "learned", pf__positions_name, &r);
    a->qkv_layout = (pf__qkv_layout)pf__draft_trait(d, "qkv_layout", p->qkv_layout, "blocks", pf__qkv_layout_name, &r);
    a->mlp = (pf__mlp)pf__draft_trait(d, "mlp", p->mlp, "plain", pf__mlp_name, &r);
    a->activation_key = p->activation_key ? pf__draft_text(d, "activation_key", p->activation_key, PF__POLICY_MAX_NAME, &r) : NULL;
    a->activation_default = pf__draft_text(d, "activation_default", p->activation_default, PF__POLICY_MAX_NAME, &r);
    if (r) return r;
    a->mlp_ratio = p->mlp_ratio ? p->mlp_ratio : 4;
    if (a->mlp_ratio < 1 || a->mlp_ratio > 64)
        return pf__draft_fail(d, PF_ERROR_INVALID_ARGUMENT, "mlp_ratio = %d is not in 1..64", p->mlp_ratio);
    if (p->tied_lm_head != 0 && p->tied_lm_head != 1)
        return pf__draft_fail(d, PF_ERROR_INVALID_ARGUMENT, "tied_lm_head = %d is not 0 or 1", p->tied_lm_head);
    a->tied_lm_head = p->tied_lm_head;
    return PF_OK;
}

/* Whether a model_type names a compiled-in architecture or alias. */
static int pf__builtin_model_type(const char *model_type) {
    for (int a = 0; a < PF__ARCH_COUNT; a++)
        if (!strcmp(pf__archs[a].model_type, model_type)) return 1;
    for (size_t i = 0; i < pf__arch_aliases_count; i++)
        if (!strcmp(pf__arch_aliases[i].model_type, model_type)) return 1;
    return 0;
}

pf_result pf_register_policy(const pf_policy *policy, char *error, size_t error_size) {
    pf__policy_draft d;
    memset(&d, 0, sizeof d);
    d.error = error;
    d.error_size = error_size;
    if (error && error_size) error[0] = 0;
    if (!policy) return pf__draft_fail(&d, PF_ERROR_INVALID_ARGUMENT, "the policy is NULL");
    if (policy->model_type && strlen(policy->model_type) <= PF__POLICY_MAX_NAME) d.model_type = policy->model_type;
    pf_result r = pf__draft_arch(&d, policy);
    if (!r && pf__builtin_model_type(d.arch.model_type))
        r = pf__draft_fail(&d, PF_ERROR_INVALID_ARGUMENT, "model_type \"%s\" is compiled in", d.arch.model_type);
    if (!r) r = pf__draft_tensors(&d, policy);
    if (!r) r = pf__draft_configs(&d, policy);
    if (!r) r = pf__draft_block_patterns(&d);
    if (!r) r = pf__draft_names(&d, policy);
    if (!r) r = pf__draft_keyed_rows(&d, policy);
    if (!r) { /* the default activation: in the family's table when it has one, else an HF name */
        pf__activation act;
        int known = d.num_activations ? 0 : !pf__activation_from_hf_name(d.arch.activation_default, &act);
        for (size_t i = 0; i < d.num_activations; i++) known |= !strcmp(d.activations[i].name, d.arch.activation_default);
        if (!known)
            r = pf__draft_fail(&d, PF_ERROR_INVALID_ARGUMENT, "activation_default \"%s\" is not an activation we compute%s",
                               d.arch.activation_default, d.num_activations ? " (not in the policy's activations)" : "");
    }
    if (r) {
        pf__draft_free(&d);
        return r;
    }

    pthread_mutex_lock(&pf__policy_lock);
    int free_index = -1;
    for (int i = PF__MAX_REGISTERED - 1; i >= 0; i--) {
        if (!pf__registered_policies[i].in_use) free_index = i;
        else if (!strcmp(pf__archs[PF__ARCH_COUNT + i].model_type, d.arch.model_type))
            r = pf__draft_fail(&d, PF_ERROR_INVALID_ARGUMENT, "model_type \"%s\" is registered already", d.arch.model_type);
    }
    if (!r && free_index < 0)
        r = pf__draft_fail(&d, PF_ERROR_UNSUPPORTED, "%d policies are registered already (pf_unregister_policy some)",
                           PF__MAX_REGISTERED);
    if (!r) {
        pf__arch_id id = (pf__arch_id)(PF__ARCH_COUNT + free_index);
        for (size_t i = 0; i < d.num_tensors; i++) d.tensors[i].arch = id;
        for (size_t i = 0; i < d.num_configs; i++) d.configs[i].arch = id;
        for (size_t i = 0; i < d.num_prefixes; i++) d.prefixes[i].arch = id;
        for (size_t i = 0; i < d.num_buffers; i++) d.buffers[i].arch = id;
        for (size_t i = 0; i < d.num_required_values; i++) d.required_values[i].arch = id;
        for (size_t i = 0; i < d.num_nulls; i++) d.nulls[i].arch = id;
        for (size_t i = 0; i < d.num_layer_types; i++) d.layer_types[i].arch = id;
        for (size_t i = 0; i < d.num_activations; i++) d.activations[i].arch = id;
        pf__registered *e = &pf__registered_policies[free_index];
        memset(e, 0, sizeof *e);
        e->in_use = 1;
        e->rows.tensors = d.tensors;
        e->rows.num_tensors = d.num_tensors;
        e->rows.configs = d.configs;
        e->rows.num_configs = d.num_configs;
        e->rows.prefixes = d.prefixes;
        e->rows.num_prefixes = d.num_prefixes;
        e->rows.buffers = d.buffers;
        e->rows.num_buffers = d.num_buffers;
        e->rows.required_values = d.required_values;
        e->rows.num_required_values = d.num_required_values;
        e->rows.nulls = d.nulls;
        e->rows.num_nulls = d.num_nulls;
        e->rows.layer_types = d.layer_types;
        e->rows.num_layer_types = d.num_layer_types;
        e->rows.activations = d.activations;
        e->rows.num_activations = d.num_activations;
        e->strings = d.strings;
        e->num_strings = d.num_strings;
        pf__archs[id] = d.arch;
    }
    pthread_mutex_unlock(&pf__policy_lock);
    if (r) pf__draft_free(&d);
    return r;
}

pf_result pf_unregister_policy(const char *model_type, char *error, size_t error_size) {
    if (error && error_size) error[0] = 0;
    if (!model_type) return pf__format(error, error_size, PF_ERROR_INVALID_ARGUMENT, "model_type is NULL");
    pf_result r = PF_OK;
    int found = 0;
    pthread_mutex_lock(&pf__policy_lock);
    for (int i = 0; i < PF__MAX_REGISTERED && !found; i++) {
        pf__registered *e = &pf__registered_policies[i];
        if (!e->in_use || strcmp(pf__archs[PF__ARCH_COUNT + i].model_type, model_type)) continue;
        found = 1;
        if (e->live_models) {
            r = pf__format(error, error_size, PF_ERROR_BUSY,
                           "policy \"%.63s\": %d model%s loaded through it %s alive (pf_free %s first)", model_type,
                           e->live_models, e->live_models == 1 ? "" : "s", e->live_models == 1 ? "is" : "are",
                           e->live_models == 1 ? "it" : "them");
            break;
        }
        pf__policy_draft d; /* frees as a draft: the same allocations */
        memset(&d, 0, sizeof d);
        d.tensors = (pf__arch_tensor *)e->rows.tensors;
        d.configs = (pf__arch_config *)e->rows.configs;
        d.prefixes = (pf__arch_prefix *)e->rows.prefixes;
        d.buffers = (pf__arch_buffer *)e->rows.buffers;
        d.required_values = (pf__arch_require *)e->rows.required_values;
        d.nulls = (pf__arch_null *)e->rows.nulls;
        d.layer_types = (pf__arch_layer_types *)e->rows.layer_types;
        d.activations = (pf__arch_activation *)e->rows.activations;
        d.strings = e->strings;
        d.num_strings = e->num_strings;
        pf__draft_free(&d);
        memset(e, 0, sizeof *e);
        memset(&pf__archs[PF__ARCH_COUNT + i], 0, sizeof pf__archs[0]);
    }
    pthread_mutex_unlock(&pf__policy_lock);
    if (!found)
        r = pf__format(error, error_size, PF_ERROR_INVALID_ARGUMENT, "no registered policy has model_type \"%.63s\"%s",
                       model_type, pf__builtin_model_type(model_type) ? " (compiled-in ones cannot be removed)" : "");
    return r;
}

/* ---- policies from JSON: the same fields under the same names ---- */

/* A JSON value's string (null: NULL, when may_be_null); what names it in messages. */
static pf_result pf__policy_json_text(const pf__json *v, const char *what, int may_be_null, const char **out, char *error,
                                      size_t size) {
    *out = NULL;
    if (!v || (v->type == PF__JSON_NULL && may_be_null)) return PF_OK;
    if (v->type != PF__JSON_STRING)
        return pf__format(error, size, PF_ERROR_FORMAT, "policy JSON: \"%s\" is not a string%s", what,
                          may_be_null ? " or null" : "");
    if (strlen(v->string) != v->string_len)
        return pf__format(error, size, PF_ERROR_FORMAT, "policy JSON: \"%s\" holds a NUL character", what);
    *out = v->string;
    return PF_OK;
}

/* A JSON number (or boolean) that is an int in lo..hi. */
static pf_result pf__policy_json_int(const pf__json *v, const char *what, int lo, int hi, int *out, char *error, size_t size) {
    double x = 0;
    if (!v) return PF_OK;
    if (pf__json_number(v, &x) != 1 || x != floor(x) || x < lo || x > hi)
        return pf__format(error, size, PF_ERROR_FORMAT, "policy JSON: \"%s\" is not an integer in %d..%d", what, lo, hi);
    *out = (int)x;
    return PF_OK;
}

/* Every key of an object is one of names; what names the object. */
static pf_result pf__policy_json_keys(const pf__json *obj, const char *what, const char *const *names, size_t count,
                                      char *error, size_t size) {
    if (!obj || obj->type != PF__JSON_OBJECT) return pf__format(error, size, PF_ERROR_FORMAT, "policy JSON: %s is not an object", what);
    for (const pf__json *e = obj->first; e; e = e->next) {
        size_t i = 0;
        while (i < count && strcmp(names[i], e->key)) i++;
        if (i < count) continue;
        char known[400] = "";
        for (size_t j = 0, used = 0; j < count && used + 1 < sizeof known; j++)
            used += (size_t)snprintf(known + used, sizeof known - used, "%s%s", j ? ", " : "", names[j]);
        return pf__format(error, size, PF_ERROR_FORMAT, "policy JSON: %s: unknown key \"%.100s\" (known: %s)", what, e->key,
                          known);
    }
    return PF_OK;
}

/* A list under key (absent or null: empty): its length, at most PF__POLICY_MAX_ROWS. */
static pf_result pf__policy_json_list(const pf__json *v, const char *key, int *count, char *error, size_t size) {
    *count = 0;
    if (!v || v->type == PF__JSON_NULL) return PF_OK;
    if (v->type != PF__JSON_ARRAY) return pf__format(error, size, PF_ERROR_FORMAT, "policy JSON: \"%s\" is not a list", key);
    if (v->count > PF__POLICY_MAX_ROWS)
        return pf__format(error, size, PF_ERROR_FORMAT, "policy JSON: \"%s\" has %zu rows (at most %d)", key, v->count,
                          PF__POLICY_MAX_ROWS);
    *count = (int)v->count;
    return PF_OK;
}

/* A policy JSON list's items, in order: the first, then each next (count of them, checked before). */
#define PF__POLICY_ITEMS(e, list, i, count) \
    for (const pf__json *e = (list) ? (list)->first : NULL; !r && e && i < (count); i++, e = e->next)

/* The policy's top-level texts and numbers, and the lengths of its lists. */
static pf_result pf__policy_json_scalars(const pf__json *json, pf_policy *p, char *error, size_t size) {
    static const char *const text_keys[] = {"model_type", "kind", "norm", "positions", "qkv_layout", "mlp"};
    const char **texts[] = {&p->model_type, &p->kind, &p->norm, &p->positions, &p->qkv_layout, &p->mlp};
    pf_result r = PF_OK;
    for (size_t i = 0; i < PF__COUNT(texts) && !r; i++)
        r = pf__policy_json_text(pf__json_get(json, text_keys[i]), text_keys[i], i > 0, texts[i], error, size);
    if (!r) r = pf__policy_json_int(pf__json_get(json, "mlp_ratio"), "mlp_ratio", 0, 64, &p->mlp_ratio, error, size);
    if (!r) r = pf__policy_json_text(pf__json_get(json, "activation_key"), "activation_key", 1, &p->activation_key, error, size);
    if (!r) r = pf__policy_json_text(pf__json_get(json, "activation_default"), "activation_default", 0, &p->activation_default, error, size);
    if (!r) r = pf__policy_json_int(pf__json_get(json, "tied_lm_head"), "tied_lm_head", 0, 1, &p->tied_lm_head, error, size);
    static const char *const list_keys[] = {"prefixes", "buffers", "config", "tensors", "required_values", "nulls",
                                            "layer_types", "activations"};
    int *counts[] = {&p->num_prefixes, &p->num_buffers, &p->num_config, &p->num_tensors, &p->num_required_values,
                     &p->num_nulls, &p->num_layer_types, &p->num_activations};
    for (size_t i = 0; i < PF__COUNT(list_keys) && !r; i++)
        r = pf__policy_json_list(pf__json_get(json, list_keys[i]), list_keys[i], counts[i], error, size);
    return r;
}

/* "prefixes" and "buffers": lists of texts. */
static pf_result pf__policy_json_texts(const pf__json *list, const char *name, int count, const char **out, char *error,
                                       size_t size) {
    pf_result r = PF_OK;
    char what[64];
    int i = 0;
    PF__POLICY_ITEMS(e, list, i, count) {
        snprintf(what, sizeof what, "%s[%d]", name, i);
        r = pf__policy_json_text(e, what, 0, &out[i], error, size);
    }
    return r;
}

/* How a member of a list's row reads from its JSON object. */
typedef enum pf__member_kind {
    PF__MEMBER_TEXT,           /* a string (absent: NULL, which registration refuses where it matters) */
    PF__MEMBER_TEXT_OR_NULL,   /* a string or null (absent or null: NULL, the row's default) */
    PF__MEMBER_PRESENT_TEXT,   /* a string or null, written out: null has a meaning of its own */
    PF__MEMBER_FLAG,           /* 0 or 1 (absent: 0) */
    PF__MEMBER_NUMBER,         /* a number, needed */
    PF__MEMBER_NUMBER_OR_NEEDED /* a number (absent: PF_POLICY_NEEDED) */
} pf__member_kind;

typedef struct pf__policy_member {
    const char *name;
    pf__member_kind kind;
    size_t offset; /* in the row's struct */
} pf__policy_member;

/* A list of rows under a top-level key: each row an object of these members, read into a struct of row_size. */
typedef struct pf__policy_list {
    const char *name;
    size_t row_size;
    const pf__policy_member *members;
    size_t num_members;
    const char *null_means; /* PF__MEMBER_PRESENT_TEXT: what its null does, for the message */
} pf__policy_list;

#define PF__MEMBER(type, member, kind) {#member, kind, offsetof(type, member)}
static const pf__policy_member pf__config_members[] = {
    PF__MEMBER(pf_policy_config, field, PF__MEMBER_TEXT), PF__MEMBER(pf_policy_config, key, PF__MEMBER_PRESENT_TEXT),
    PF__MEMBER(pf_policy_config, fallback, PF__MEMBER_NUMBER_OR_NEEDED)};
static const pf__policy_member pf__tensor_members[] = {
    PF__MEMBER(pf_policy_tensor, slot, PF__MEMBER_TEXT), PF__MEMBER(pf_policy_tensor, pattern, PF__MEMBER_TEXT),
    PF__MEMBER(pf_policy_tensor, layout, PF__MEMBER_TEXT_OR_NULL), PF__MEMBER(pf_policy_tensor, split, PF__MEMBER_TEXT_OR_NULL),
    PF__MEMBER(pf_policy_tensor, need, PF__MEMBER_TEXT_OR_NULL), PF__MEMBER(pf_policy_tensor, encoder, PF__MEMBER_FLAG)};
static const pf__policy_member pf__required_value_members[] = {
    PF__MEMBER(pf_policy_key_value, key, PF__MEMBER_TEXT), PF__MEMBER(pf_policy_key_value, value, PF__MEMBER_NUMBER)};
static const pf__policy_member pf__null_members[] = {
    PF__MEMBER(pf_policy_key_value, key, PF__MEMBER_TEXT), PF__MEMBER(pf_policy_key_value, value, PF__MEMBER_NUMBER_OR_NEEDED)};
static const pf__policy_member pf__layer_types_members[] = {
    PF__MEMBER(pf_policy_layer_types, key, PF__MEMBER_TEXT), PF__MEMBER(pf_policy_layer_types, needed, PF__MEMBER_FLAG)};
static const pf__policy_member pf__activation_members[] = {
    PF__MEMBER(pf_policy_activation, name, PF__MEMBER_TEXT), PF__MEMBER(pf_policy_activation, activation, PF__MEMBER_TEXT)};
#undef PF__MEMBER

#define PF__POLICY_LIST(name, type, members, null_means) {name, sizeof(type), members, PF__COUNT(members), null_means}
static const pf__policy_list pf__config_list =
    PF__POLICY_LIST("config", pf_policy_config, pf__config_members, "the field is fixed to fallback");
static const pf__policy_list pf__tensor_list = PF__POLICY_LIST("tensors", pf_policy_tensor, pf__tensor_members, NULL);
static const pf__policy_list pf__required_value_list =
    PF__POLICY_LIST("required_values", pf_policy_key_value, pf__required_value_members, NULL);
static const pf__policy_list pf__null_list = PF__POLICY_LIST("nulls", pf_policy_key_value, pf__null_members, NULL);
static const pf__policy_list pf__layer_types_list =
    PF__POLICY_LIST("layer_types", pf_policy_layer_types, pf__layer_types_members, NULL);
static const pf__policy_list pf__activation_list =
    PF__POLICY_LIST("activations", pf_policy_activation, pf__activation_members, NULL);
#undef PF__POLICY_LIST

/* One member of a row from its object e; what names it in messages ("config[2].key"). */
static pf_result pf__policy_json_member(const pf__json *e, const pf__policy_member *m, const char *what,
                                        const char *null_means, char *row, char *error, size_t size) {
    const pf__json *v = pf__json_get(e, m->name);
    void *at = row + m->offset;
    switch (m->kind) {
    case PF__MEMBER_PRESENT_TEXT:
        if (!v) return pf__format(error, size, PF_ERROR_FORMAT, "policy JSON: %s is missing (null: %s)", what, null_means);
        /* fall through */
    case PF__MEMBER_TEXT_OR_NULL:
    case PF__MEMBER_TEXT: {
        const char *text;
        pf_result r = pf__policy_json_text(v, what, m->kind != PF__MEMBER_TEXT, &text, error, size);
        if (!r) memcpy(at, &text, sizeof text);
        return r;
    }
    case PF__MEMBER_FLAG: return pf__policy_json_int(v, what, 0, 1, (int *)at, error, size);
    case PF__MEMBER_NUMBER:
    case PF__MEMBER_NUMBER_OR_NEEDED: {
        double x = PF_POLICY_NEEDED;
        if ((v || m->kind == PF__MEMBER_NUMBER) && pf__json_number(v, &x) != 1)
            return pf__format(error, size, PF_ERROR_FORMAT, "policy JSON: %s is %s", what, v ? "not a number" : "missing");
        memcpy(at, &x, sizeof x);
        return PF_OK;
    }
    }
    return PF_OK;
}

/* A list's count rows (counted before) into out, an array of list->row_size structs. */
static pf_result pf__policy_json_rows(const pf__json *json, const pf__policy_list *list, int count, void *out, char *error,
                                      size_t size) {
    const char *names[8]; /* a row has at most 6 members */
    for (size_t k = 0; k < list->num_members; k++) names[k] = list->members[k].name;
    pf_result r = PF_OK;
    char what[64];
    int i = 0;
    PF__POLICY_ITEMS(e, pf__json_get(json, list->name), i, count) {
        char *row = (char *)out + (size_t)i * list->row_size;
        snprintf(what, sizeof what, "%s[%d]", list->name, i);
        r = pf__policy_json_keys(e, what, names, list->num_members, error, size);
        for (size_t k = 0; k < list->num_members && !r; k++) {
            snprintf(what, sizeof what, "%s[%d].%s", list->name, i, names[k]);
            r = pf__policy_json_member(e, &list->members[k], what, list->null_means, row, error, size);
        }
    }
    return r;
}

pf_result pf_register_policy_json(const char *text, size_t len, char *error, size_t size) {
    static const char *const keys[] = {"model_type", "kind", "norm", "positions", "qkv_layout", "mlp", "mlp_ratio",
                                       "activation_key", "activation_default", "tied_lm_head", "prefixes", "config",
                                       "tensors", "buffers", "required_values", "nulls", "layer_types", "activations"};
    if (error && size) error[0] = 0;
    if (!text) return pf__format(error, size, PF_ERROR_INVALID_ARGUMENT, "policy JSON: the text is NULL");
    char err[256];
    pf__json *json = pf__json_parse(text, len, err, sizeof err);
    if (!json) return pf__format(error, size, PF_ERROR_FORMAT, "policy JSON: %s", err);
    pf_policy p;
    memset(&p, 0, sizeof p);
    pf_result r = pf__policy_json_keys(json, "the policy", keys, PF__COUNT(keys), error, size);
    if (!r) r = pf__policy_json_scalars(json, &p, error, size);
    /* the lists' rows, each with one spare so that no calloc is of zero bytes */
    const char **prefixes = (const char **)calloc((size_t)p.num_prefixes + 1, sizeof *prefixes);
    const char **buffers = (const char **)calloc((size_t)p.num_buffers + 1, sizeof *buffers);
    pf_policy_config *config = (pf_policy_config *)calloc((size_t)p.num_config + 1, sizeof *config);
    pf_policy_tensor *tensors = (pf_policy_tensor *)calloc((size_t)p.num_tensors + 1, sizeof *tensors);
    pf_policy_key_value *required_values =
        (pf_policy_key_value *)calloc((size_t)p.num_required_values + 1, sizeof *required_values);
    pf_policy_key_value *nulls = (pf_policy_key_value *)calloc((size_t)p.num_nulls + 1, sizeof *nulls);
    pf_policy_layer_types *layer_types = (pf_policy_layer_types *)calloc((size_t)p.num_layer_types + 1, sizeof *layer_types);
    pf_policy_activation *activations = (pf_policy_activation *)calloc((size_t)p.num_activations + 1, sizeof *activations);
    if (!r && (!prefixes || !buffers || !config || !tensors || !required_values || !nulls || !layer_types || !activations))
        r = pf__format(error, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    if (!r) r = pf__policy_json_texts(pf__json_get(json, "prefixes"), "prefixes", p.num_prefixes, prefixes, error, size);
    if (!r) r = pf__policy_json_texts(pf__json_get(json, "buffers"), "buffers", p.num_buffers, buffers, error, size);
    if (!r) r = pf__policy_json_rows(json, &pf__config_list, p.num_config, config, error, size);
    if (!r) r = pf__policy_json_rows(json, &pf__tensor_list, p.num_tensors, tensors, error, size);
    if (!r) r = pf__policy_json_rows(json, &pf__required_value_list, p.num_required_values, required_values, error, size);
    if (!r) r = pf__policy_json_rows(json, &pf__null_list, p.num_nulls, nulls, error, size);
    if (!r) r = pf__policy_json_rows(json, &pf__layer_types_list, p.num_layer_types, layer_types, error, size);
    if (!r) r = pf__policy_json_rows(json, &pf__activation_list, p.num_activations, activations, error, size);
    if (!r) {
        p.prefixes = prefixes;
        p.buffers = buffers;
        p.config = config;
        p.tensors = tensors;
        p.required_values = required_values;
        p.nulls = nulls;
        p.layer_types = layer_types;
        p.activations = activations;
        r = pf_register_policy(&p, error, size);
    }
    free(prefixes);
    free(buffers);
    free(config);
    free(tensors);
    free(required_values);
    free(nulls);
    free(layer_types);
    free(activations);
    pf__json_free(json);
    return r;
}

pf_result pf_register_policy_file(const char *path, char *error, size_t size) {
    if (error && size) error[0] = 0;
    if (!path) return pf__format(error, size, PF_ERROR_INVALID_ARGUMENT, "the policy file's path is NULL");
    char *text;
    size_t len;
    pf_result r = pf__read_file(path, PF__MAX_TEXT_FILE, &text, &len, error, size);
    if (r) return r;
    r = pf_register_policy_json(text, len, error, size);
    free(text);
    if (r && error && size) { /* name the file */
        char inner[PF__MESSAGE_SIZE];
        snprintf(inner, sizeof inner, "%s", error);
        pf__format(error, size, r, "%s: %s", path, inner);
    }
    return r;
}

/* ---- a policy as JSON: the rows of a compiled-in or registered architecture ---- */

/* A growing text; on a failed allocation it stays failed and the result is refused. */
typedef struct pf__text { char *data; size_t len, cap; int failed; } pf__text;

static void pf__text_add(pf__text *t, const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, args);
    va_end(args);
    if (n < 0 || t->failed) {
        t->failed = 1;
        return;
    }
    if (t->len + (size_t)n + 1 > t->cap) {
        size_t cap = 2 * t->cap + (size_t)n + 4096;
        char *grown = (char *)realloc(t->data, cap);
        if (!grown) {
            t->failed = 1;
            return;
        }
        t->data = grown;
        t->cap = cap;
    }
    if ((size_t)n < sizeof small) memcpy(t->data + t->len, small, (size_t)n + 1);
    else {
        va_start(args, fmt);
        vsnprintf(t->data + t->len, (size_t)n + 1, fmt, args);
        va_end(args);
    }
    t->len += (size_t)n;
}

/* A JSON string (null for NULL): our strings hold no control characters, so only " and \ need escapes. */
static void pf__text_string(pf__text *t, const char *s) {
    if (!s) {
        pf__text_add(t, "null");
        return;
    }
    pf__text_add(t, "\"");
    for (const char *p = s; *p; p++) pf__text_add(t, *p == '"' || *p == '\\' ? "\\%c" : "%c", *p);
    pf__text_add(t, "\"");
}

/* A trait's name in lower case, as policies spell it. */
static void pf__text_trait(pf__text *t, pf__name_of name_of, int value) {
    const char *name = name_of(value);
    char lower[64];
    size_t i = 0;
    for (; name && name[i] && i + 1 < sizeof lower; i++) lower[i] = (char)tolower((unsigned char)name[i]);
    lower[i] = 0;
    pf__text_string(t, lower);
}

static const char *pf__config_field_at(size_t offset) {
    for (size_t i = 0; i < PF__COUNT(pf__config_fields); i++)
        if (pf__config_fields[i].offset == offset) return pf__config_fields[i].name;
    return NULL;
}

/* Writes arch's rows under model_type (a compiled-in family's with its base's copied in,
   PF_ARCH_LIKE). */
static void pf__policy_write(pf__text *t, pf__arch_id arch, const char *model_type) {
    const pf__arch *a = &pf__archs[arch];
    const pf__policy_rows *rows = pf__rows(arch);
    pf__text_add(t, "{\"model_type\": ");
    pf__text_string(t, model_type);
    pf__text_add(t, ",\n \"kind\": ");
    pf__text_trait(t, pf__kind_name, a->kind);
    pf__text_add(t, ", \"norm\": ");
    pf__text_trait(t, pf__norm_name, a->norm);
    pf__text_add(t, ", \"positions\": ");
    pf__text_trait(t, pf__positions_name, a->positions);
    pf__text_add(t, ", \"qkv_layout\": ");
    pf__text_trait(t, pf__qkv_layout_name, a->qkv_layout);
    pf__text_add(t, ", \"mlp\": ");
    pf__text_trait(t, pf__mlp_name, a->mlp);
    pf__text_add(t, ",\n \"mlp_ratio\": %d, \"activation_key\": ", a->mlp_ratio);
    pf__text_string(t, a->activation_key);
    pf__text_add(t, ", \"activation_default\": ");
    pf__text_string(t, a->activation_default);
    pf__text_add(t, ", \"tied_lm_head\": %d,\n \"prefixes\": [", a->tied_lm_head);
    int n = 0;
    for (size_t i = 0; i < rows->num_prefixes; i++) {
        if (rows->prefixes[i].arch != arch) continue;
        pf__text_add(t, n++ ? ", " : "");
        pf__text_string(t, rows->prefixes[i].prefix);
    }
    pf__text_add(t, "],\n \"config\": [");
    n = 0;
    for (size_t i = 0; i < rows->num_configs; i++) {
        const pf__arch_config *c = &rows->configs[i];
        if (c->arch != arch) continue;
        pf__text_add(t, n++ ? ",\n  {\"field\": " : "\n  {\"field\": ");
        pf__text_string(t, pf__config_field_at(c->offset));
        pf__text_add(t, ", \"key\": ");
        pf__text_string(t, c->key);
        if (c->fallback != PF__NEEDED) pf__text_add(t, ", \"fallback\": %.17g", c->fallback);
        pf__text_add(t, "}");
    }
    pf__text_add(t, "],\n \"tensors\": [");
    n = 0;
    for (size_t i = 0; i < rows->num_tensors; i++) {
        const pf__arch_tensor *r = &rows->tensors[i];
        if (r->arch != arch) continue;
        pf__text_add(t, n++ ? ",\n  {\"slot\": " : "\n  {\"slot\": ");
        pf__text_trait(t, pf__slot_name, r->slot);
        pf__text_add(t, ", \"pattern\": ");
        pf__text_string(t, r->pattern);
        pf__text_add(t, ", \"layout\": ");
        pf__text_trait(t, pf__layout_name, r->layout);
        pf__text_add(t, ", \"split\": ");
        pf__text_trait(t, pf__split_name, r->split);
        pf__text_add(t, ", \"need\": ");
        pf__text_trait(t, pf__need_name, r->need);
        pf__text_add(t, r->encoder ? ", \"encoder\": 1}" : "}");
    }
    pf__text_add(t, "],\n \"buffers\": [");
    n = 0;
    for (size_t i = 0; i < rows->num_buffers; i++) {
        if (rows->buffers[i].arch != arch) continue;
        pf__text_add(t, n++ ? ", " : "");
        pf__text_string(t, rows->buffers[i].pattern);
    }
    pf__text_add(t, "],\n \"required_values\": [");
    n = 0;
    for (size_t i = 0; i < rows->num_required_values; i++) {
        if (rows->required_values[i].arch != arch) continue;
        pf__text_add(t, n++ ? ", {\"key\": " : "{\"key\": ");
        pf__text_string(t, rows->required_values[i].key);
        pf__text_add(t, ", \"value\": %.17g}", rows->required_values[i].value);
    }
    pf__text_add(t, "],\n \"nulls\": [");
    n = 0;
    for (size_t i = 0; i < rows->num_nulls; i++) {
        if (rows->nulls[i].arch != arch) continue;
        pf__text_add(t, n++ ? ", {\"key\": " : "{\"key\": ");
        pf__text_string(t, rows->nulls[i].key);
        if (rows->nulls[i].value != PF__NEEDED) pf__text_add(t, ", \"value\": %.17g", rows->nulls[i].value);
        pf__text_add(t, "}");
    }
    pf__text_add(t, "],\n \"layer_types\": [");
    n = 0;
    for (size_t i = 0; i < rows->num_layer_types; i++) {
        if (rows->layer_types[i].arch != arch) continue;
        pf__text_add(t, n++ ? ", {\"key\": " : "{\"key\": ");
        pf__text_string(t, rows->layer_types[i].key);
        pf__text_add(t, ", \"needed\": %d}", rows->layer_types[i].needed);
    }
    pf__text_add(t, "],\n \"activations\": [");
    n = 0;
    for (size_t i = 0; i < rows->num_activations; i++) {
        if (rows->activations[i].arch != arch) continue;
        pf__text_add(t, n++ ? ", {\"name\": " : "{\"name\": ");
        pf__text_string(t, rows->activations[i].name);
        pf__text_add(t, ", \"activation\": ");
        pf__text_trait(t, pf__activation_name, rows->activations[i].activation);
        pf__text_add(t, "}");
    }
    pf__text_add(t, "]}\n");
}

/* Whether a row's config sets a speech front end (PF_ARCH_CONFIG(id, speech, NULL, 1), or
   mel_frontend, conv_subsampler): the front end is compiled in and no policy can register one,
   so the row does not export (the test hook writes it). */
static int pf__arch_is_speech(pf__arch_id arch) {
    const pf__policy_rows *rows = pf__rows(arch);
    for (size_t i = 0; i < rows->num_configs; i++)
        if (rows->configs[i].arch == arch && rows->configs[i].fallback != 0 &&
            (rows->configs[i].offset == offsetof(pf__config, speech) ||
             rows->configs[i].offset == offsetof(pf__config, mel_frontend) ||
             rows->configs[i].offset == offsetof(pf__config, conv_subsampler)))
            return 1;
    return 0;
}

/* pf_policy_to_json; every: the rows of a dual model and of a speech model too, which the public
   call refuses (their loaders name tensors in code), for the test that compares every row. */
static pf_result pf__policy_to_json(const char *model_type, char *json, size_t capacity, size_t *length, int every) {
    if (length) *length = 0;
    if (!model_type || (!json && capacity)) return PF_ERROR_INVALID_ARGUMENT;
    int arch = -1;
    for (int a = 0; a < PF__ARCH_COUNT && arch < 0; a++)
        if (!strcmp(pf__archs[a].model_type, model_type)) arch = a;
    for (size_t i = 0; i < pf__arch_aliases_count && arch < 0; i++)
        if (!strcmp(pf__arch_aliases[i].model_type, model_type)) arch = (int)pf__arch_aliases[i].arch;
    pf__text t;
    memset(&t, 0, sizeof t);
    pthread_mutex_lock(&pf__policy_lock); /* a registered one stays while it is written */
    for (int i = 0; i < PF__MAX_REGISTERED && arch < 0; i++)
        if (pf__registered_policies[i].in_use && !strcmp(pf__archs[PF__ARCH_COUNT + i].model_type, model_type))
            arch = PF__ARCH_COUNT + i;
    /* a dual model's loader names its towers' rows in code; a speech front end is compiled in */
    int dual = !every && arch >= 0 && (pf__archs[arch].kind == PF__KIND_DUAL || pf__arch_is_speech((pf__arch_id)arch));
    if (arch >= 0 && !dual) pf__policy_write(&t, (pf__arch_id)arch, model_type); /* an alias's as its own */
    pthread_mutex_unlock(&pf__policy_lock);
    pf_result r = arch < 0 ? PF_ERROR_INVALID_ARGUMENT : dual ? PF_ERROR_UNSUPPORTED : t.failed ? PF_ERROR_OUT_OF_MEMORY : PF_OK;
    if (!r && length) *length = t.len;
    if (!r && capacity < t.len + 1) r = PF_ERROR_BUFFER_TOO_SMALL;
    if (!r) memcpy(json, t.data, t.len + 1);
    free(t.data);
    return r;
}

pf_result pf_policy_to_json(const char *model_type, char *json, size_t capacity, size_t *length) {
    return pf__policy_to_json(model_type, json, capacity, length, 0);
}

#ifdef PF_TESTING
/* Test hook: the i-th compiled-in model_type (rows, then aliases); NULL past the last. */
const char *pf_testing_builtin_model_type(int i);
const char *pf_testing_builtin_model_type(int i) {
    if (i >= 0 && i < PF__ARCH_COUNT) return pf__archs[i].model_type;
    i -= PF__ARCH_COUNT;
    return i >= 0 && (size_t)i < pf__arch_aliases_count ? pf__arch_aliases[i].model_type : NULL;
}

/* Test hook: pf_policy_to_json for every compiled-in model_type, the dual and speech ones too. */
pf_result pf_testing_policy_json(const char *model_type, char *json, size_t capacity, size_t *length);
pf_result pf_testing_policy_json(const char *model_type, char *json, size_t capacity, size_t *length) {
    return pf__policy_to_json(model_type, json, capacity, length, 1);
}
#endif

/* Transformer-XL's adaptive cluster i: its table's rows (the cluster's ids; with div_val 1 the one
   table of the whole vocabulary, cluster 0's, the others none) and its width (d_embed /
   div_val^i); 0, 0 past the clusters. */
PF_PRIVATE void pf__txl_cluster_shape(const pf__config *c, int i, size_t *rows, size_t *width) {
    *rows = *width = 0;
    if (i >= c->txl_clusters) return;
    size_t divisor = 1;
    for (int k = 0; k < i; k++) divisor *= (size_t)c->txl_div_val;
    *width = (size_t)c->txl_d_embed / divisor;
    if (c->txl_div_val != 1) *rows = (size_t)(c->txl_cutoff_ends[i + 1] - c->txl_cutoff_ends[i]);
    else if (i == 0) *rows = (size_t)c->vocab_size;
}

/* Logical [rows (out), cols (in)] of a slot; cols 1 for vectors. */
PF_PRIVATE void pf__slot_shape(const pf__config *c, pf__slot slot, size_t *rows, size_t *cols) {
    size_t h = (size_t)c->hidden_size, in = (size_t)c->intermediate_size, e = (size_t)c->embed_dim;
    size_t q = (size_t)c->num_heads * c->head_dim, kv = (size_t)c->num_kv_heads * c->head_dim;
    size_t inner = c->bottleneck_width ? (size_t)c->bottleneck_width : h; /* the blocks' own width */
    *cols = 1;
    switch (slot) {
    case PF__SLOT_ATTN_OUT_BIAS: case PF__SLOT_ATTN_NORM_WEIGHT: case PF__SLOT_ATTN_NORM_BIAS: case PF__SLOT_MLP_DOWN_BIAS:
    case PF__SLOT_MLP_NORM_WEIGHT: case PF__SLOT_MLP_NORM_BIAS: case PF__SLOT_BOTTLENECK_IN_BIAS:
    case PF__SLOT_BOTTLENECK_IN_NORM_WEIGHT: case PF__SLOT_BOTTLENECK_IN_NORM_BIAS: case PF__SLOT_BOTTLENECK_QK_BIAS:
    case PF__SLOT_BOTTLENECK_QK_NORM_WEIGHT: case PF__SLOT_BOTTLENECK_QK_NORM_BIAS: case PF__SLOT_FFN1_DOWN_BIAS:
    case PF__SLOT_FFN1_NORM_WEIGHT: case PF__SLOT_FFN1_NORM_BIAS: case PF__SLOT_FFN2_DOWN_BIAS: case PF__SLOT_FFN2_NORM_WEIGHT:
    case PF__SLOT_FFN2_NORM_BIAS: case PF__SLOT_FFN3_DOWN_BIAS: case PF__SLOT_FFN3_NORM_WEIGHT: case PF__SLOT_FFN3_NORM_BIAS:
        *rows = inner;
        break;
    case PF__SLOT_BOTTLENECK_IN_WEIGHT: case PF__SLOT_BOTTLENECK_QK_WEIGHT: *rows = inner; *cols = h; break;
    case PF__SLOT_BOTTLENECK_OUT_WEIGHT: *rows = h; *cols = inner; break;
    case PF__SLOT_FFN1_UP_WEIGHT: case PF__SLOT_FFN2_UP_WEIGHT: case PF__SLOT_FFN3_UP_WEIGHT: *rows = in; *cols = inner; break;
    case PF__SLOT_FFN1_UP_BIAS: case PF__SLOT_FFN2_UP_BIAS: case PF__SLOT_FFN3_UP_BIAS: *rows = in; break;
    case PF__SLOT_FFN1_DOWN_WEIGHT: case PF__SLOT_FFN2_DOWN_WEIGHT: case PF__SLOT_FFN3_DOWN_WEIGHT: *rows = inner; *cols = in; break;
    case PF__SLOT_LM_HEAD_EXTRA: *rows = h > e ? h - e : 0; *cols = (size_t)c->vocab_size; break;
    case PF__SLOT_TOKEN_EMBED:
        *rows = (size_t)c->vocab_size;
        *cols = e;
        if (c->transfo_xl) pf__txl_cluster_shape(c, 0, rows, cols);
        break;
    case PF__SLOT_LM_HEAD: *rows = (size_t)c->vocab_size; *cols = c->reformer ? 2 * h : e; break; /* Reformer's reads [x1 | x2] */
    case PF__SLOT_FINAL_NORM_WEIGHT: case PF__SLOT_FINAL_NORM_BIAS: *rows = c->reformer ? 2 * h : h; break;
    case PF__SLOT_TXL_EMBED_1: case PF__SLOT_TXL_EMBED_2: case PF__SLOT_TXL_EMBED_3:
        pf__txl_cluster_shape(c, 1 + (int)(slot - PF__SLOT_TXL_EMBED_1), rows, cols);
        break;
    case PF__SLOT_TXL_OUT_WEIGHT_0: case PF__SLOT_TXL_OUT_WEIGHT_1: case PF__SLOT_TXL_OUT_WEIGHT_2: case PF__SLOT_TXL_OUT_WEIGHT_3:
        pf__txl_cluster_shape(c, (int)(slot - PF__SLOT_TXL_OUT_WEIGHT_0), rows, cols);
        break;
    case PF__SLOT_TXL_OUT_BIAS_0: case PF__SLOT_TXL_OUT_BIAS_1: case PF__SLOT_TXL_OUT_BIAS_2: case PF__SLOT_TXL_OUT_BIAS_3:
        pf__txl_cluster_shape(c, (int)(slot - PF__SLOT_TXL_OUT_BIAS_0), rows, cols);
        *cols = 1;
        break;
    case PF__SLOT_TXL_EMBED_PROJ_0: case PF__SLOT_TXL_EMBED_PROJ_1: case PF__SLOT_TXL_EMBED_PROJ_2: case PF__SLOT_TXL_EMBED_PROJ_3:
        pf__txl_cluster_shape(c, (int)(slot - PF__SLOT_TXL_EMBED_PROJ_0), rows, cols); /* its width in */
        *rows = h;
        break;
    case PF__SLOT_TXL_OUT_PROJ_0: case PF__SLOT_TXL_OUT_PROJ_1: case PF__SLOT_TXL_OUT_PROJ_2: case PF__SLOT_TXL_OUT_PROJ_3:
        pf__txl_cluster_shape(c, (int)(slot - PF__SLOT_TXL_OUT_PROJ_0), cols, rows); /* the hidden state into its width */
        *cols = h; /* (the table's rows went to cols first) */
        break;
    case PF__SLOT_TXL_CLUSTER_WEIGHT:
        *rows = c->txl_clusters > 1 ? (size_t)c->txl_clusters - 1 : 0;
        *cols = (size_t)c->txl_d_embed;
        break;
    case PF__SLOT_TXL_CLUSTER_BIAS: *rows = c->txl_clusters > 1 ? (size_t)c->txl_clusters - 1 : 0; break;
    case PF__SLOT_TXL_R_W_BIAS: case PF__SLOT_TXL_R_R_BIAS: *rows = q; break;
    case PF__SLOT_ENC_TOKEN_EMBED: *rows = (size_t)(c->src_vocab_size ? c->src_vocab_size : c->vocab_size); *cols = e; break;
    case PF__SLOT_PATCH_WEIGHT: *rows = h; *cols = (size_t)c->num_channels * c->patch_size * c->patch_size; break;
    case PF__SLOT_CLS_TOKEN: case PF__SLOT_DIST_TOKEN: *rows = 1; *cols = h; break;
    case PF__SLOT_DIST_CLASSIFIER_WEIGHT: *rows = (size_t)c->num_labels; *cols = h; break;
    case PF__SLOT_DIST_CLASSIFIER_BIAS: *rows = (size_t)c->num_labels; break;
    case PF__SLOT_LM_HEAD_BIAS: *rows = (size_t)c->vocab_size; break;
    case PF__SLOT_POSITION_EMBED: case PF__SLOT_ENC_POSITION_EMBED:
        *rows = (size_t)(slot == PF__SLOT_ENC_POSITION_EMBED && c->encoder_max_positions ? c->encoder_max_positions
                                                                                          : c->max_positions) +
                c->position_offset;
        *cols = c->embed_norm_before_project ? e : h;
        break;
    case PF__SLOT_EMBED_NORM_WEIGHT: case PF__SLOT_EMBED_NORM_BIAS: *rows = c->embed_norm_before_project ? e : h; break;
    case PF__SLOT_PROJECT_IN: *rows = h; *cols = c->trigram_input ? 3 * e : e; break; /* trigrams: next, self, previous */
    case PF__SLOT_PROJECT_OUT: *rows = e; *cols = h; break;
    case PF__SLOT_QKV_FUSED_WEIGHT: *rows = q + 2 * kv; *cols = h; break;
    case PF__SLOT_QKV_FUSED_BIAS: *rows = q + 2 * kv; break;
    case PF__SLOT_Q_WEIGHT: case PF__SLOT_CROSS_Q_WEIGHT: case PF__SLOT_POS_Q_WEIGHT: case PF__SLOT_Q_GLOBAL_WEIGHT:
    case PF__SLOT_W2E_Q_WEIGHT: case PF__SLOT_E2W_Q_WEIGHT: case PF__SLOT_E2E_Q_WEIGHT:
        *rows = q;
        *cols = slot == PF__SLOT_Q_WEIGHT ? inner : h; /* a bottleneck's q reads its shared input (then folded into q) */
        break;
    case PF__SLOT_Q_BIAS: case PF__SLOT_CROSS_Q_BIAS: case PF__SLOT_POS_Q_BIAS: case PF__SLOT_Q_GLOBAL_BIAS:
    case PF__SLOT_W2E_Q_BIAS: case PF__SLOT_E2W_Q_BIAS: case PF__SLOT_E2E_Q_BIAS: *rows = q; break;
    case PF__SLOT_K_WEIGHT: case PF__SLOT_V_WEIGHT: case PF__SLOT_CROSS_K_WEIGHT: case PF__SLOT_CROSS_V_WEIGHT: case PF__SLOT_POS_K_WEIGHT:
    case PF__SLOT_K_GLOBAL_WEIGHT: case PF__SLOT_V_GLOBAL_WEIGHT:
        *rows = kv;
        *cols = slot == PF__SLOT_K_WEIGHT ? inner : h; /* as q's */
        break;
    case PF__SLOT_K_BIAS: case PF__SLOT_V_BIAS: case PF__SLOT_CROSS_K_BIAS: case PF__SLOT_CROSS_V_BIAS: case PF__SLOT_POS_K_BIAS:
    case PF__SLOT_K_GLOBAL_BIAS: case PF__SLOT_V_GLOBAL_BIAS: *rows = kv; break;
    case PF__SLOT_ATTN_OUT_WEIGHT: case PF__SLOT_CONV_OUT_WEIGHT: *rows = inner; *cols = (size_t)c->num_heads * pf__value_head_dim(c); break;
    case PF__SLOT_ATTN_JOINED_OUT_WEIGHT: *rows = h; *cols = 2 * q; break;
    case PF__SLOT_CONV_DEPTHWISE_WEIGHT: *rows = h; *cols = (size_t)c->conv_kernel; break;
    case PF__SLOT_CONV_KEY_WEIGHT: case PF__SLOT_CONV_VALUE_WEIGHT: *rows = q; *cols = h; break;
    case PF__SLOT_CONV_KEY_BIAS: case PF__SLOT_CONV_VALUE_BIAS: *rows = q; break;
    case PF__SLOT_CONV_KERNEL_WEIGHT: *rows = (size_t)c->num_heads * c->conv_kernel; *cols = q; break;
    case PF__SLOT_CONV_KERNEL_BIAS: *rows = (size_t)c->num_heads * c->conv_kernel; break;
    case PF__SLOT_FUNNEL_R_KERNEL: *rows = q; *cols = h; break;
    case PF__SLOT_FUNNEL_R_R_BIAS: case PF__SLOT_FUNNEL_R_S_BIAS: *rows = q; break;
    case PF__SLOT_FUNNEL_SEG_EMBED: *rows = 2; *cols = q; break;
    case PF__SLOT_CROSS_OUT_WEIGHT: *rows = h; *cols = q; break;
    case PF__SLOT_Q_A_WEIGHT: *rows = (size_t)c->q_lora_rank; *cols = h; break;
    case PF__SLOT_Q_A_BIAS: case PF__SLOT_Q_A_NORM_WEIGHT: *rows = (size_t)c->q_lora_rank; break;
    case PF__SLOT_Q_B_WEIGHT: *rows = q; *cols = (size_t)c->q_lora_rank; break;
    case PF__SLOT_KV_A_WEIGHT: *rows = (size_t)c->kv_lora_rank + (size_t)c->qk_rope_head_dim; *cols = h; break;
    case PF__SLOT_KV_A_BIAS: *rows = (size_t)c->kv_lora_rank + (size_t)c->qk_rope_head_dim; break;
    case PF__SLOT_KV_A_NORM_WEIGHT: *rows = (size_t)c->kv_lora_rank; break;
    case PF__SLOT_KV_B_WEIGHT:
        *rows = (size_t)c->num_heads * ((size_t)c->qk_nope_head_dim + (size_t)c->v_head_dim);
        *cols = (size_t)c->kv_lora_rank;
        break;
    case PF__SLOT_Q_NORM_WEIGHT: *rows = c->qk_norm == PF__QK_NORM_PROJECTION || c->qk_norm_per_head ? q : (size_t)c->head_dim; break;
    case PF__SLOT_K_NORM_WEIGHT: *rows = c->qk_norm == PF__QK_NORM_PROJECTION || c->qk_norm_per_head ? kv : (size_t)c->head_dim; break;
    case PF__SLOT_Q_NORM_BIAS: case PF__SLOT_K_NORM_BIAS: *rows = (size_t)c->head_dim; break;
    case PF__SLOT_MLP_GATE_WEIGHT: case PF__SLOT_MLP_UP_WEIGHT: *rows = in; *cols = inner; break;
    case PF__SLOT_MLP_GATE_BIAS: case PF__SLOT_MLP_UP_BIAS: *rows = in; break;
    case PF__SLOT_MLP_GATE_UP_WEIGHT: *rows = 2 * in; *cols = h; break;
    case PF__SLOT_MLP_GATE_UP_BIAS: *rows = 2 * in; break;
    case PF__SLOT_MLP_DOWN_WEIGHT: *rows = inner; *cols = in; break;
    case PF__SLOT_ROUTER_WEIGHT: *rows = (size_t)c->num_experts; *cols = h; break;
    case PF__SLOT_EXPERTS_GATE_UP: *rows = (size_t)c->num_experts * 2 * (size_t)c->moe_intermediate_size; *cols = h; break;
    case PF__SLOT_EXPERTS_DOWN: *rows = (size_t)c->num_experts * h; *cols = (size_t)c->moe_intermediate_size; break;
    case PF__SLOT_SHARED_GATE_WEIGHT: case PF__SLOT_SHARED_UP_WEIGHT: *rows = (size_t)c->shared_intermediate_size; *cols = h; break;
    case PF__SLOT_SHARED_GATE_BIAS: case PF__SLOT_SHARED_UP_BIAS: *rows = (size_t)c->shared_intermediate_size; break;
    case PF__SLOT_SHARED_DOWN_WEIGHT: *rows = h; *cols = (size_t)c->shared_intermediate_size; break;
    case PF__SLOT_SHARED_EXPERT_GATE: *rows = 1; *cols = h; break;
    case PF__SLOT_ROUTER_CHOICE_BIAS: *rows = (size_t)c->num_experts; *cols = 1; break;
    case PF__SLOT_ROUTER_BIAS: *rows = (size_t)c->num_experts; break;
    case PF__SLOT_EXPERTS_GATE_UP_BIAS: *rows = (size_t)c->num_experts * 2 * (size_t)c->moe_intermediate_size; break;
    case PF__SLOT_EXPERTS_DOWN_BIAS: *rows = (size_t)c->num_experts * h; break;
    case PF__SLOT_ATTN_SINKS: *rows = (size_t)c->num_heads; break;
    case PF__SLOT_SHARED_GATE_UP_WEIGHT: *rows = 2 * (size_t)c->shared_intermediate_size; *cols = h; break;
    case PF__SLOT_SHARED_GATE_UP_BIAS: *rows = 2 * (size_t)c->shared_intermediate_size; break;
    case PF__SLOT_TOKEN_TYPE_EMBED: case PF__SLOT_ENC_TOKEN_TYPE_EMBED: *rows = (size_t)c->type_vocab_size; *cols = c->embed_norm_before_project ? e : h; break;
    case PF__SLOT_HEAD_TRANSFORM_WEIGHT: *rows = c->embed_norm_before_project ? e : h; *cols = h; break;
    case PF__SLOT_HEAD_TRANSFORM_BIAS: case PF__SLOT_HEAD_NORM_WEIGHT: case PF__SLOT_HEAD_NORM_BIAS:
        *rows = c->embed_norm_before_project ? e : h;
        break;
    case PF__SLOT_POOLER_WEIGHT: case PF__SLOT_CLASSIFIER_DENSE_WEIGHT: *rows = h; *cols = h; break;
    case PF__SLOT_CLASSIFIER_WEIGHT: /* LUKE's entity pairs: two entities' states side by side */
        *rows = (size_t)c->num_labels;
        *cols = h * (c->classify_entities > 1 ? (size_t)c->classify_entities : 1) * (c->two_streams ? 2 : 1); /* LXMERT's
            answer head: after its dense to 2 hidden */
        break;
    case PF__SLOT_CLASSIFIER_BIAS: *rows = (size_t)c->num_labels; break;
    case PF__SLOT_SPAN_WEIGHT: *rows = 2; *cols = h; break;
    case PF__SLOT_PROJECTION:
    case PF__SLOT_DOC_PROJECTION: *rows = (size_t)c->projection_dim; *cols = h; break;
    case PF__SLOT_LOGIT_SCALE: *rows = 1; break;
    case PF__SLOT_SPAN_BIAS: *rows = 2; break;
    case PF__SLOT_DISCRIMINATOR_WEIGHT: *rows = h; *cols = h; break;
    case PF__SLOT_DISCRIMINATOR_OUT_WEIGHT: *rows = 1; *cols = h; break;
    case PF__SLOT_DISCRIMINATOR_OUT_BIAS: *rows = 1; break;
    case PF__SLOT_NEXT_SENTENCE_WEIGHT: *rows = 2; *cols = h; break;
    case PF__SLOT_NEXT_SENTENCE_BIAS: *rows = 2; break;
    case PF__SLOT_TASK_TYPE_EMBED: *rows = (size_t)c->task_type_vocab_size; *cols = h; break;
    case PF__SLOT_MASK_EMBED: *rows = 1; *cols = h; break;
    case PF__SLOT_X_POSITION_EMBED: case PF__SLOT_Y_POSITION_EMBED: case PF__SLOT_H_POSITION_EMBED:
    case PF__SLOT_W_POSITION_EMBED: *rows = (size_t)c->max_2d_positions; *cols = h; break;
    case PF__SLOT_VISUAL_PROJECTION_WEIGHT: *rows = h; *cols = (size_t)c->visual_embedding_dim; break;
    case PF__SLOT_VISUAL_TOKEN_TYPE_EMBED: *rows = (size_t)c->type_vocab_size; *cols = h; break;
    case PF__SLOT_VISUAL_POSITION_EMBED: *rows = (size_t)c->max_positions; *cols = h; break;
    case PF__SLOT_BOX_PROJECTION_WEIGHT: *rows = h; *cols = (size_t)c->visual_pos_dim; break;
    case PF__SLOT_ANSWER_DENSE_WEIGHT: *rows = 2 * h; *cols = h; break;
    case PF__SLOT_ANSWER_DENSE_BIAS: case PF__SLOT_ANSWER_NORM_WEIGHT: case PF__SLOT_ANSWER_NORM_BIAS: *rows = 2 * h; break;
    case PF__SLOT_NGRAM_EMBED: *rows = (size_t)c->ngram; *cols = h; break;
    case PF__SLOT_AXIAL_ROW_EMBED: *rows = (size_t)c->reformer_axial_shape[0]; *cols = (size_t)c->reformer_axial_dims[0]; break;
    case PF__SLOT_AXIAL_COLUMN_EMBED: *rows = (size_t)c->reformer_axial_shape[1]; *cols = (size_t)c->reformer_axial_dims[1]; break;
    case PF__SLOT_NGRAM_REL_WEIGHT: *rows = (size_t)c->rel_buckets * c->num_heads; *cols = h; break;
    case PF__SLOT_NGRAM_REL_BIAS: *rows = (size_t)c->rel_buckets * c->num_heads; break;
    case PF__SLOT_ENTITY_EMBED: *rows = (size_t)c->entity_vocab_size; *cols = (size_t)c->entity_emb_size; break;
    case PF__SLOT_ENTITY_DENSE: *rows = h; *cols = (size_t)c->entity_emb_size; break;
    case PF__SLOT_ENTITY_POSITION_EMBED: *rows = (size_t)(c->max_positions + c->position_offset); *cols = h; break;
    case PF__SLOT_ENTITY_TYPE_EMBED: *rows = (size_t)c->type_vocab_size; *cols = h; break;
    case PF__SLOT_COLUMN_TYPE_EMBED: case PF__SLOT_ROW_TYPE_EMBED: case PF__SLOT_PREV_LABEL_TYPE_EMBED:
    case PF__SLOT_COLUMN_RANK_TYPE_EMBED: case PF__SLOT_INV_COLUMN_RANK_TYPE_EMBED: case PF__SLOT_NUMERIC_RELATION_TYPE_EMBED:
        *rows = (size_t)c->table_type_sizes[1 + (slot - PF__SLOT_COLUMN_TYPE_EMBED)];
        *cols = h;
        break;
    case PF__SLOT_CELL_SELECTION_BIAS: case PF__SLOT_COLUMN_SELECTION_BIAS: *rows = 1; break;
    case PF__SLOT_AGGREGATION_WEIGHT: *rows = (size_t)c->num_aggregation_labels; *cols = h; break;
    case PF__SLOT_AGGREGATION_BIAS: *rows = (size_t)c->num_aggregation_labels; break;
    case PF__SLOT_REL_BIAS: case PF__SLOT_ENC_REL_BIAS: *rows = (size_t)c->rel_table_rows; *cols = (size_t)c->num_heads; break;
    case PF__SLOT_REL_EMBED: *rows = 2 * (size_t)c->rel_span; *cols = h; break;
    default: *rows = h; break; /* norms and the remaining biases */
    }
}

/* The groups of a slot stored PF__LAYOUT_GROUPED or _GROUPED_IN_OUT (its config field); 1 for the other slots. */
PF_PRIVATE int pf__slot_groups(const pf__config *c, pf__slot slot) {
    int groups = 1;
    switch (slot) {
    case PF__SLOT_Q_WEIGHT: groups = c->q_groups; break;
    case PF__SLOT_K_WEIGHT: groups = c->k_groups; break;
    case PF__SLOT_V_WEIGHT: groups = c->v_groups; break;
    case PF__SLOT_ATTN_OUT_WEIGHT: groups = c->attn_out_groups; break;
    case PF__SLOT_MLP_UP_WEIGHT: groups = c->mlp_up_groups; break;
    case PF__SLOT_MLP_DOWN_WEIGHT: groups = c->mlp_down_groups; break;
    default: break;
    }
    return groups > 1 ? groups : 1;
}

