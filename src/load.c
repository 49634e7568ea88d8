#include "internal.h"
/* The name prefix the checkpoint's tensors carry ("transformer.", "model.", ""): the first of the
   family's that finds its anchor tensor (the token embedding, patch or speech front end). */
static pf_result pf__find_prefix(pf_model *m, const char **out) {
    const pf__config *c = &m->config;
    const pf__arch_tensor *embed = pf__arch_tensor_for(c->arch, PF__SLOT_TOKEN_EMBED); /* anchors the prefix */
    if (!embed) embed = pf__arch_tensor_for(c->arch, PF__SLOT_PATCH_WEIGHT);
    if (!embed) embed = pf__arch_tensor_for(c->arch, PF__SLOT_FEATURE_PROJECTION_WEIGHT); /* speech: the front end's */
    const char *anchor = embed ? embed->pattern : "(no anchor row)";
    const pf__policy_rows *rows = pf__rows(c->arch);
    /* the family's prefixes, or a multimodal checkpoint's for its text model */
    size_t count = c->text_tower_of[0] ? 0 : rows->num_prefixes;
    for (size_t i = 0; c->text_tower_of[0] && pf__text_towers[i].model_type[0]; i++) count++;
    for (size_t i = 0; i < count; i++) {
        const char *prefix = c->text_tower_of[0] ? pf__text_towers[i].prefix : rows->prefixes[i].prefix;
        if (c->text_tower_of[0] ? !pf__text_towers[i].text || strcmp(pf__text_towers[i].model_type, c->text_tower_of)
                                : rows->prefixes[i].arch != c->arch)
            continue;
        for (size_t j = 0; j < rows->num_tensors; j++) { /* each spelling of the anchor (Marian's two) */
            const pf__arch_tensor *t = &rows->tensors[j];
            char name[256];
            if (embed && (t->arch != c->arch || t->slot != embed->slot || t->encoder != embed->encoder)) continue;
            snprintf(name, sizeof name, "%s%s", prefix, embed ? t->pattern : anchor);
            if (pf__st_find(&m->st, name)) {
                *out = prefix;
                return PF_OK;
            }
        }
    }
    return PF__FAIL(m, PF_ERROR_FORMAT, "%s: missing tensor '%s' (under any known prefix)", m->dir, anchor);
}

/* The checkpoint's tensor st as slot row t's source src (rows and cols set by the config),
   after checking its shape in t's layout. */
static pf_result pf__take_source(pf_model *m, const pf__arch_tensor *t, const pf__st_tensor *st, pf__source *src) {
    size_t want[2] = {src->rows, src->cols};
    int want_dims = 2;
    if (t->layout == PF__LAYOUT_VECTOR) want_dims = 1;
    if (t->layout == PF__LAYOUT_ROW) { /* [1, n] */
        want[1] = want[0];
        want[0] = 1;
    }
    if (t->layout == PF__LAYOUT_IN_OUT || t->layout == PF__LAYOUT_HEADS_IN_OUT) {
        want[0] = src->cols;
        want[1] = src->rows;
    }
    if (t->layout == PF__LAYOUT_COLUMN) want[1] = 1; /* [n, 1] */
    pf__st_tensor flat = *st; /* SQUEEZED and CONV tensors checked as the 2-D [out, in] they are read as */
    if (t->layout == PF__LAYOUT_VECTOR && want[0] == 1 && st->ndim == 0) { /* a scalar nn.Parameter (TAPAS's biases) */
        flat.ndim = 1;
        flat.shape[0] = 1;
    }
    if (t->layout == PF__LAYOUT_SQUEEZED || t->layout == PF__LAYOUT_CONV) {
        /* a 1-D SQUEEZED tensor is one row (CLIP's class_embedding) */
        int leading_ones = t->layout == PF__LAYOUT_SQUEEZED, ok = st->ndim >= 2 || (leading_ones && st->ndim == 1);
        for (int k = 0; ok && leading_ones && k < st->ndim - 2; k++) ok = st->shape[k] == 1;
        if (t->layout == PF__LAYOUT_CONV && st->ndim != 4 && st->ndim != 3) ok = 0; /* 2-D or 1-D convolutions */
        flat.ndim = ok ? 2 : 0;
        if (ok && st->ndim == 1) {
            flat.shape[1] = st->shape[0];
            flat.shape[0] = 1;
        } else if (ok) {
            flat.shape[0] = leading_ones ? st->shape[st->ndim - 2] : st->shape[0];
            flat.shape[1] = leading_ones ? st->shape[st->ndim - 1] : (st->shape[0] ? st->numel / st->shape[0] : 0);
        }
    }
    /* blocks pack along the input: an [experts, in, out] slot's blocks are [experts, out, in] (MXFP4's) */
    int blocked_experts = t->layout == PF__LAYOUT_EXPERTS_IN_OUT && PF__BLOCKED(st->dtype);
    if (t->layout == PF__LAYOUT_EXPERTS || blocked_experts) { /* [experts, rows / experts, cols] checked as [rows, cols] */
        size_t experts = (size_t)m->config.num_experts;
        int ok = st->ndim == 3 && st->shape[0] == experts;
        flat.ndim = ok ? 2 : 0;
        flat.shape[0] = ok ? st->shape[0] * st->shape[1] : 0;
        flat.shape[1] = ok ? st->shape[2] : 0;
    } else if (t->layout == PF__LAYOUT_EXPERTS_IN_OUT) { /* [experts, in, out] checked as [experts * out, in] */
        size_t experts = (size_t)m->config.num_experts;
        int ok = st->ndim == 3 && st->shape[0] == experts;
        flat.ndim = ok ? 2 : 0;
        flat.shape[0] = ok ? st->shape[0] * st->shape[2] : 0;
        flat.shape[1] = ok ? st->shape[1] : 0;
    }
    if (t->layout == PF__LAYOUT_EXPERT_VECTORS) { /* [experts, n] checked as the vector of its values */
        int ok = st->ndim == 2 && st->shape[0] == (size_t)m->config.num_experts;
        flat.ndim = ok ? 1 : 0;
        flat.shape[0] = ok ? st->shape[0] * st->shape[1] : 0;
        want_dims = 1;
    }
    int grouped = t->layout == PF__LAYOUT_GROUPED || t->layout == PF__LAYOUT_GROUPED_IN_OUT;
    size_t groups = grouped ? (size_t)pf__slot_groups(&m->config, t->slot) : 1;
    if (grouped && (src->cols % groups || src->rows % groups))
        return PF__FAIL(m, PF_ERROR_FORMAT, "%s: tensor '%s': config.json's %zu groups do not divide its %zu inputs "
                        "and %zu outputs", st->file->path, st->name, groups, src->cols, src->rows);
    if (t->layout == PF__LAYOUT_GROUPED_IN_OUT && groups > 1) { /* [groups, in / groups, out / groups] checked as [out, in] */
        if (st->ndim != 3 || st->shape[0] != groups || st->shape[1] != src->cols / groups || st->shape[2] != src->rows / groups)
            return PF__FAIL(m, PF_ERROR_FORMAT, "%s: tensor '%s' is not [%zu, %zu, %zu] as the config needs (%zu groups of "
                            "%zu inputs and %zu outputs)", st->file->path, st->name, groups, src->cols / groups,
                            src->rows / groups, groups, src->cols, src->rows);
        flat.ndim = 2;
        flat.shape[0] = src->rows;
        flat.shape[1] = src->cols;
    }
    if (t->layout == PF__LAYOUT_GROUPED) { /* [out, in / groups, 1] checked as [out, in] */
        if (st->ndim != 3 || st->shape[0] != src->rows || st->shape[1] != src->cols / groups || st->shape[2] != 1)
            return PF__FAIL(m, PF_ERROR_FORMAT, "%s: tensor '%s' is not [%zu, %zu, 1] as the config needs (%zu inputs in "
                            "%zu groups)", st->file->path, st->name, src->rows, src->cols / groups, src->cols, groups);
        flat.ndim = 2;
        flat.shape[1] = src->cols;
    }
    if (t->layout == PF__LAYOUT_HEADS_IN_OUT || t->layout == PF__LAYOUT_HEADS_ROWS) { /* [n, heads, head_dim] checked as [n, heads * head_dim] */
        int ok = st->ndim == 3 && st->shape[2] == (size_t)m->config.head_dim;
        flat.ndim = ok ? 2 : 0;
        flat.shape[1] = ok ? st->shape[1] * st->shape[2] : 0;
    }
    if (t->layout == PF__LAYOUT_HEADS) { /* [heads, head_dim] checked as the vector of its values */
        int ok = st->ndim == 2 && st->shape[1] == (size_t)m->config.head_dim;
        flat.ndim = ok ? 1 : 0;
        flat.shape[0] = ok ? st->shape[0] * st->shape[1] : 0;
        want_dims = 1;
    }
    if (flat.ndim != want_dims || flat.shape[0] != want[0] || (want_dims == 2 && flat.shape[1] != want[1]))
        return PF__FAIL(m, PF_ERROR_FORMAT, "%s: tensor '%s' has shape [%zu%s%zu] but the config needs [%zu%s%zu]",
                        st->file->path, st->name, st->shape[0], st->ndim > 1 ? ", " : "",
                        st->ndim > 1 ? st->shape[1] : 0, want[0], want_dims > 1 ? ", " : "",
                        want_dims > 1 ? want[1] : 0);
    if (st->packed && t->layout != PF__LAYOUT_OUT_IN && !blocked_experts) /* decoded by [out, in] rows */
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "%s: tensor '%s' is quantized, which is implemented for linear layers' "
                        "[out, in] weights only", st->file->path, st->name);
    src->data = st->data;
    src->dtype = st->dtype;
    src->packed = st->packed;
    src->layout = t->layout == PF__LAYOUT_ROW || t->layout == PF__LAYOUT_COLUMN      ? PF__LAYOUT_VECTOR
                  : t->layout == PF__LAYOUT_GROUPED_IN_OUT && groups == 1            ? PF__LAYOUT_OUT_IN /* an nn.Linear */
                  : t->layout == PF__LAYOUT_SQUEEZED || t->layout == PF__LAYOUT_CONV ? PF__LAYOUT_OUT_IN
                  : t->layout == PF__LAYOUT_HEADS || t->layout == PF__LAYOUT_EXPERT_VECTORS ? PF__LAYOUT_VECTOR
                  : t->layout == PF__LAYOUT_EXPERTS || blocked_experts              ? PF__LAYOUT_OUT_IN
                  : t->layout == PF__LAYOUT_HEADS_IN_OUT                            ? PF__LAYOUT_IN_OUT
                  : t->layout == PF__LAYOUT_HEADS_ROWS                              ? PF__LAYOUT_OUT_IN
                                                                                    : t->layout;
    src->split = t->split;
    src->groups = groups;
    return PF_OK;
}

/* pf__need_by_config, and the needs that follow the layer: a mixture of experts' layers have a
   router and experts (layer_sparse), the others a dense MLP. */
static int pf__need_by_layer(const pf__config *c, pf__need need, int layer, const char **key, const char **why) {
    *key = NULL;
    if (!pf__need_follows_layer(need)) return pf__need_by_config(c, need, key, why);
    int sparse = c->layer_sparse && c->layer_sparse[layer];
    if (need == PF__IF_SHARED_EXPERT) {
        *why = !sparse ? "the layer has a dense MLP (num_experts, decoder_sparse_step, mlp_only_layers)"
               : c->shared_intermediate_size ? "the layer has experts and shared_intermediate_size is above 0"
                                             : "shared_intermediate_size is 0";
        return sparse && c->shared_intermediate_size > 0;
    }
    *why = sparse ? "the layer has experts (num_experts, decoder_sparse_step, mlp_only_layers)"
                  : "the layer has a dense MLP (num_experts, decoder_sparse_step, mlp_only_layers)";
    return need == PF__IF_SPARSE_LAYER ? sparse : !sparse;
}

/* A PF__LAYOUT_PER_EXPERT slot of layer l: every expert's tensor of every part of row t's
   pattern, each [rows / (experts * parts), cols] of one dtype, joined as src's pieces (no copy);
   a PF__LAYOUT_PER_HEAD one: every head's [head_dim] vector, joined likewise. */
static pf_result pf__take_expert_pieces(pf_model *m, const char *prefix, const pf__arch_tensor *t, int l, pf__source *src) {
    const pf__config *c = &m->config;
    int parts = pf__pattern_parts(t->pattern), per_head = t->layout == PF__LAYOUT_PER_HEAD;
    size_t count = per_head ? src->rows / (size_t)c->head_dim : (size_t)c->num_experts * (size_t)parts;
    size_t piece_rows = src->rows / count;
    src->pieces = (const uint8_t **)calloc(count, sizeof *src->pieces);
    if (!src->pieces) return PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    src->piece_rows = piece_rows;
    for (size_t k = 0; k < count; k++) {
        char bare[256], name[300];
        pf__pattern_name(bare, sizeof bare, t, l, (int)(k / (size_t)parts), (int)(k % (size_t)parts));
        snprintf(name, sizeof name, "%s%s", prefix, bare);
        const pf__st_tensor *st = pf__take_prefixed(m, prefix, bare);
        if (!st) return PF__FAIL(m, PF_ERROR_FORMAT, "%s: missing tensor '%s'", m->dir, name);
        if (st->dtype == PF__DTYPE_OTHER || (k && st->dtype != src->dtype))
            return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "%s: tensor '%s' has %s", st->file->path, st->name,
                            k ? "another dtype than its layer's other experts" : "an unsupported dtype (F32, F16 and BF16 are)");
        if (st->packed && !src->packed_pieces &&
            !(src->packed_pieces = (const pf__packed **)calloc(count, sizeof *src->packed_pieces)))
            return PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
        if (src->packed_pieces) src->packed_pieces[k] = st->packed;
        if (per_head ? st->ndim != 1 || st->shape[0] != piece_rows
                     : st->ndim != 2 || st->shape[0] != piece_rows || st->shape[1] != src->cols)
            return PF__FAIL(m, PF_ERROR_FORMAT, per_head ? "%s: tensor '%s' is not [%zu] as the config needs"
                                                         : "%s: tensor '%s' is not [%zu, %zu] as the config needs",
                            st->file->path, st->name, piece_rows, src->cols);
        src->pieces[k] = st->data;
        src->dtype = st->dtype;
    }
    src->data = src->pieces[0];
    /* experts whose act order would reorder their inputs are decoded (pf__packed.reordered: the
       ranks' expert products take their inputs as they are) */
    for (size_t k = 0; src->packed_pieces && k < count; k++)
        if (src->packed_pieces[k] && src->packed_pieces[k]->reordered) src->dtype = PF__DTYPE_PACKED;
    src->layout = per_head ? PF__LAYOUT_VECTOR : PF__LAYOUT_OUT_IN;
    src->split = t->split;
    return PF_OK;
}

/* Every slot's tensor under prefix: present where the family and config.json need it, absent
   where config.json says it is not used, one spelling only, a dtype we read, the right shape. */
static pf_result pf__take_slots(pf_model *m, const char *prefix) {
    const pf__config *c = &m->config;
    for (int slot = 0; slot < PF__SLOT_COUNT; slot++) {
        if (slot == PF__SLOT_FIRST_FRONT_END) slot = PF__SLOT_FIRST_LAYER; /* the front end reads its own */
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
            const char *key = NULL, *why = NULL;
            int by_config = pf__need_by_layer(c, t->need, l, &key, &why), wanted = by_config > 0;
            if (by_config >= 0 && st && !wanted)
                return PF__FAIL(m, PF_ERROR_FORMAT, "%s: tensor '%s' is in the checkpoint but config.json says %s%s%s",
                                m->dir, st->name, key ? key : "", key ? " " : "", why);
            if (!st) {
                if (t->need == PF__OPTIONAL || by_config == -2 || (by_config >= 0 && !wanted)) continue;
                if (by_config >= 0)
                    return PF__FAIL(m, PF_ERROR_FORMAT, "%s: missing tensor '%s' (config.json says %s%s%s)", m->dir, name,
                                    key ? key : "", key ? " " : "", why);
                return PF__FAIL(m, PF_ERROR_FORMAT, "%s: missing tensor '%s'", m->dir, name);
            }
            if (st->dtype == PF__DTYPE_OTHER)
                return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "%s: tensor '%s' has an unsupported dtype %s (F32, F16 and BF16 "
                                "are; F8_E4M3 and I32 where config.json's quantization_config says how to read them)",
                                st->file->path, st->name, st->file_dtype ? st->file_dtype : "");
            pf__source *src = &m->sources[pf__slot_index((pf__slot)slot, l)];
            pf__slot_shape(c, (pf__slot)slot, &src->rows, &src->cols);
            pf_result r = t->layout == PF__LAYOUT_PER_EXPERT || t->layout == PF__LAYOUT_PER_HEAD
                              ? pf__take_expert_pieces(m, prefix, t, l, src)
                                                             : pf__take_source(m, t, st, src);
            if (r) return r;
        }
    }
    return PF_OK;
}

/* Reformer's tensors against config.json: key weights exactly on its local layers (attn_layers),
   the axial tables or the position table as axial_pos_embds says. */
static pf_result pf__reformer_check_tensors(pf_model *m) {
    const pf__config *c = &m->config;
    if (!c->reformer) return PF_OK;
    for (int l = 0; l < c->num_layers; l++) {
        int has_key = m->sources[pf__slot_index(PF__SLOT_K_WEIGHT, l)].data != NULL;
        if (has_key == c->reformer_lsh[l])
            return PF__FAIL(m, PF_ERROR_FORMAT, "%s: layer %d is %s in config.json's attn_layers but its tensors are %s "
                            "attention's", m->dir, l, c->reformer_lsh[l] ? "\"lsh\"" : "\"local\"",
                            has_key ? "local" : "LSH");
    }
    int axial = m->sources[PF__SLOT_AXIAL_ROW_EMBED].data && m->sources[PF__SLOT_AXIAL_COLUMN_EMBED].data;
    int table = m->sources[PF__SLOT_POSITION_EMBED].data != NULL;
    if (c->reformer_axial ? !axial || table : !table || m->sources[PF__SLOT_AXIAL_ROW_EMBED].data ||
                                                  m->sources[PF__SLOT_AXIAL_COLUMN_EMBED].data)
        return PF__FAIL(m, PF_ERROR_FORMAT, "%s: config.json's axial_pos_embds is %s but the checkpoint's position "
                        "tensors are %s", m->dir, c->reformer_axial ? "true" : "false",
                        axial && !table ? "axial ones" : table && !axial ? "a table" : "neither or both kinds");
    return PF_OK;
}

/* The LM head: none where the head type has no vocabulary logits; tied, the embedding (and a
   head in the file too must hold the same values); untied, present. */
static pf_result pf__resolve_lm_head(pf_model *m) {
    const pf__config *c = &m->config;
    pf__source *head = &m->sources[PF__SLOT_LM_HEAD];
    const pf__source *embed_src = &m->sources[PF__SLOT_TOKEN_EMBED];
    if (c->transfo_xl) return PF_OK; /* its adaptive softmax: pf__transfo_xl_sources */
    int vocab_logits = c->head == PF_HEAD_CAUSAL_LM || c->head == PF_HEAD_MASKED_LM || c->head == PF_HEAD_CTC;
    if (!vocab_logits && (head->data || m->sources[PF__SLOT_LM_HEAD_BIAS].data))
        return PF__FAIL(m, PF_ERROR_FORMAT, "%s: the checkpoint has an LM head that config.json's architectures (%s) does "
                        "not use", m->dir, pf__head_name(c->head));
    if (c->tie_word_embeddings && head->data) {
        if (head->dtype != embed_src->dtype || head->rows != embed_src->rows || head->cols != embed_src->cols ||
            memcmp(head->data, embed_src->data, pf__weight_bytes(head->dtype, head->rows, head->cols)))
            return PF__FAIL(m, PF_ERROR_FORMAT,
                            "%s: config.json's tie_word_embeddings is true, but the checkpoint's LM head differs from its "
                            "token embedding", m->dir);
        head->data = NULL;
    }
    if (vocab_logits && !head->data && !c->tie_word_embeddings)
        return PF__FAIL(m, PF_ERROR_FORMAT, "%s: missing the LM head (config.json's tie_word_embeddings is false)", m->dir);
    return PF_OK;
}

/* An encoder-decoder whose towers' token tables the file holds beside the shared one (older files,
   and transformers 5's with tie_word_embeddings false, which then embeds each tower by its own):
   the forward embeds both towers by the shared table, so each copy (a buffer row) must hold its
   values. */
static pf_result pf__check_tower_embeddings(pf_model *m, const char *prefix) {
    static const char *const towers[] = {"encoder.embed_tokens.weight", "decoder.embed_tokens.weight"};
    const pf__arch_tensor *embed = pf__arch_tensor_for(m->config.arch, PF__SLOT_TOKEN_EMBED);
    char name[256];
    if (pf__archs[m->config.arch].kind != PF__KIND_SEQ2SEQ || !embed) return PF_OK;
    snprintf(name, sizeof name, "%s%s", prefix, embed->pattern);
    const pf__st_tensor *shared = pf__st_find(&m->st, name);
    for (size_t i = 0; shared && i < PF__COUNT(towers); i++) {
        snprintf(name, sizeof name, "%s%s", prefix, towers[i]);
        const pf__st_tensor *t = pf__is_buffer(pf__rows(m->config.arch), m->config.arch, towers[i]) ? pf__st_find(&m->st, name)
                                                                                                     : NULL; /* FSMT's own tables */
        if (t && t != shared &&
            (t->dtype != shared->dtype || t->bytes != shared->bytes || memcmp(t->data, shared->data, t->bytes)))
            return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "%s: the checkpoint's %s differs from its shared token embedding "
                            "(separate tower tables, as transformers 5 keeps them with tie_word_embeddings false): not "
                            "supported", m->dir, name);
    }
    return PF_OK;
}

/* A zero key bias where the layer's query projection has a bias and its key one none, so that
   the stack lines up: Whisper's k (with k_bias_zero), DeBERTa v1's pos_proj beside pos_q_proj. */
static pf_result pf__add_zero_k_bias(pf_model *m) {
    const pf__config *c = &m->config;
    static const struct { pf__slot q_bias, k_bias, k_weight; } pairs[] = {
        {PF__SLOT_Q_BIAS, PF__SLOT_K_BIAS, PF__SLOT_K_WEIGHT}, {PF__SLOT_POS_Q_BIAS, PF__SLOT_POS_K_BIAS, PF__SLOT_POS_K_WEIGHT}};
    size_t width = (size_t)c->num_kv_heads * c->head_dim; /* pf__slot_shape's rows of a key bias */
    for (int l = 0; l < c->num_layers; l++)
        for (size_t i = c->k_bias_zero ? 0 : 1; i < PF__COUNT(pairs); i++) {
            size_t base = pf__slot_index(PF__SLOT_FIRST_LAYER, l) - PF__SLOT_FIRST_LAYER;
            pf__source *k = &m->sources[base + pairs[i].k_bias];
            if (k->data || !m->sources[base + pairs[i].q_bias].data || !m->sources[base + pairs[i].k_weight].data) continue;
            if (!m->zero_bias && !(m->zero_bias = (float *)calloc(width, sizeof(float))))
                return PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
            k->data = (const uint8_t *)m->zero_bias;
            k->dtype = PF__DTYPE_F32;
            k->layout = PF__LAYOUT_VECTOR;
            k->split = PF__SPLIT_KV_COLUMNS;
            pf__slot_shape(c, pairs[i].k_bias, &k->rows, &k->cols);
        }
    return PF_OK;
}

/* The routers' choice biases (PF__SLOT_ROUTER_CHOICE_BIAS) as fp32 on the host, where the routing
   reads them; zeros for layers without experts. */
static pf_result pf__load_router_choice_bias(pf_model *m) {
    const pf__config *c = &m->config;
    size_t E = (size_t)c->num_experts;
    for (int l = 0; l < c->num_layers; l++) {
        const pf__source *src = &m->sources[pf__slot_index(PF__SLOT_FIRST_LAYER, l) - PF__SLOT_FIRST_LAYER + PF__SLOT_ROUTER_CHOICE_BIAS];
        if (!src->data) continue;
        if (!m->router_choice_bias && !(m->router_choice_bias = (float *)calloc((size_t)c->num_layers * E, sizeof(float))))
            return PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
        for (size_t e = 0; e < E; e++) m->router_choice_bias[(size_t)l * E + e] = pf__weight_value(src->data, e, src->dtype);
    }
    return PF_OK;
}

/* A fused QKV weight with separate q and v biases (DeBERTa v1's in_proj, q_bias, v_bias): one fused
   bias in the weight's row order (per head: q, k, v for PF__QKV_PER_HEAD; else all q, all k, all
   v), its key part zero, in place of the two. */
static pf_result pf__fuse_qv_bias(pf_model *m) {
    const pf__config *c = &m->config;
    size_t hd = (size_t)c->head_dim, H = (size_t)c->num_heads, width = 3 * H * hd;
    int per_head = pf__archs[c->arch].qkv_layout == PF__QKV_PER_HEAD;
    for (int l = 0; l < c->num_layers; l++) {
        pf__source *layer = &m->sources[pf__slot_index(PF__SLOT_FIRST_LAYER, l) - PF__SLOT_FIRST_LAYER];
        pf__source *q = &layer[PF__SLOT_Q_BIAS], *v = &layer[PF__SLOT_V_BIAS], *fused = &layer[PF__SLOT_QKV_FUSED_BIAS];
        if (!layer[PF__SLOT_QKV_FUSED_WEIGHT].data || (!q->data && !v->data)) continue;
        if (c->num_kv_heads != c->num_heads || fused->data || layer[PF__SLOT_K_BIAS].data)
            return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "%s: layer %d: separate q and v biases beside a fused QKV weight need "
                            "as many key/value heads as heads, and no other bias", m->dir, l);
        if (!m->fused_qkv_bias && !(m->fused_qkv_bias = (float *)calloc((size_t)c->num_layers * width, sizeof(float))))
            return PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
        float *out = m->fused_qkv_bias + (size_t)l * width;
        for (size_t h = 0; h < H; h++)
            for (size_t i = 0; i < hd; i++) {
                size_t q_at = per_head ? h * 3 * hd + i : h * hd + i, v_at = per_head ? h * 3 * hd + 2 * hd + i : 2 * H * hd + h * hd + i;
                out[q_at] = q->data ? pf__weight_value(q->data, h * hd + i, q->dtype) : 0.0f;
                out[v_at] = v->data ? pf__weight_value(v->data, h * hd + i, v->dtype) : 0.0f;
            }
        *fused = q->data ? *q : *v;
        fused->data = (const uint8_t *)out;
        fused->dtype = PF__DTYPE_F32;
        fused->split = PF__SPLIT_QKV_COLUMNS;
        fused->pieces = NULL;
        pf__slot_shape(c, PF__SLOT_QKV_FUSED_BIAS, &fused->rows, &fused->cols);
        q->data = v->data = NULL;
    }
    return PF_OK;
}

/* A source replaced by fp32 host values [rows, cols] in [out, in] order (owned elsewhere). */
static void pf__source_to_host(pf__source *src, const float *values, size_t rows, size_t cols) {
    src->data = (const uint8_t *)values;
    src->dtype = PF__DTYPE_F32;
    src->layout = PF__LAYOUT_OUT_IN;
    src->rows = rows;
    src->cols = cols;
    src->groups = 1;
    src->pieces = NULL;
    src->packed = NULL;
    src->packed_pieces = NULL;
}

/* MobileBERT's shared bottleneck (key_query_shared_bottleneck): q = (s(h) * nw + nb) Wq^T + bq with
   s(h) = h Ws^T + bs is affine in h, so q's weight becomes Wq diag(nw) Ws [Q, hidden] and its bias
   Wq (nw * bs + nb) + bq (k's the same): then q, k and v all read the block's input, as one fused
   projection, and the shared input's tensors leave the ranks. Sums in double. */
static pf_result pf__fold_bottleneck_qk(pf_model *m) {
    const pf__config *c = &m->config;
    size_t B = (size_t)c->bottleneck_width, h = (size_t)c->hidden_size, q = (size_t)c->num_heads * c->head_dim;
    size_t per_layer = 2 * q * (h + 1);
    for (int l = 0; l < c->num_layers; l++) {
        pf__source *layer = &m->sources[pf__slot_index(PF__SLOT_FIRST_LAYER, l) - PF__SLOT_FIRST_LAYER];
        pf__source *shared = &layer[PF__SLOT_BOTTLENECK_QK_WEIGHT], *sb = &layer[PF__SLOT_BOTTLENECK_QK_BIAS];
        pf__source *nw = &layer[PF__SLOT_BOTTLENECK_QK_NORM_WEIGHT], *nb = &layer[PF__SLOT_BOTTLENECK_QK_NORM_BIAS];
        if (!shared->data) continue;
        if (!m->folded_qk && !(m->folded_qk = (float *)malloc((size_t)c->num_layers * per_layer * sizeof(float))))
            return PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
        float *out = m->folded_qk + (size_t)l * per_layer;
        double *row = (double *)malloc(B * sizeof(double));
        if (!row) return PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
        static const pf__slot sides[2][2] = {{PF__SLOT_Q_WEIGHT, PF__SLOT_Q_BIAS}, {PF__SLOT_K_WEIGHT, PF__SLOT_K_BIAS}};
        for (int side = 0; side < 2; side++) {
            pf__source *w = &layer[sides[side][0]], *b = &layer[sides[side][1]];
            float *fw = out + (size_t)side * q * (h + 1), *fb = fw + q * h;
            for (size_t o = 0; o < q; o++) {
                double bias = b->data ? pf__weight_value(b->data, o, b->dtype) : 0.0;
                for (size_t i = 0; i < B; i++) { /* Wq[o][i] * nw[i], and the bias's terms */
                    double wi = pf__weight_value(w->data, o * B + i, w->dtype);
                    double gain = nw->data ? pf__weight_value(nw->data, i, nw->dtype) : 1.0;
                    row[i] = wi * gain;
                    bias += wi * (gain * (sb->data ? pf__weight_value(sb->data, i, sb->dtype) : 0.0) +
                                  (nb->data ? pf__weight_value(nb->data, i, nb->dtype) : 0.0));
                }
                for (size_t j = 0; j < h; j++) {
                    double sum = 0;
                    for (size_t i = 0; i < B; i++) sum += row[i] * pf__weight_value(shared->data, i * h + j, shared->dtype);
                    fw[o * h + j] = (float)sum;
                }
                fb[o] = (float)bias;
            }
            pf__source_to_host(w, fw, q, h);
            pf__source *bias_src = b;
            if (!bias_src->data) bias_src->split = side ? PF__SPLIT_KV_COLUMNS : PF__SPLIT_HEAD_COLUMNS;
            pf__source_to_host(bias_src, fb, q, 1);
            bias_src->layout = PF__LAYOUT_VECTOR;
        }
        free(row);
        shared->data = sb->data = nw->data = nb->data = NULL;
    }
    return PF_OK;
}

/* MobileBERT's LM head: each vocabulary row is its decoder row (the token embedding's, tied) then
   that id's column of cls.predictions.dense [hidden - E, vocab], as transformers multiplies by
   cat([decoder.weight^T, dense.weight]); joined once into a [vocab, hidden] source. */
static pf_result pf__join_lm_head_extra(pf_model *m) {
    const pf__config *c = &m->config;
    pf__source *extra = &m->sources[PF__SLOT_LM_HEAD_EXTRA], *head = &m->sources[PF__SLOT_LM_HEAD];
    if (!c->lm_head_extra || c->head != PF_HEAD_MASKED_LM) {
        if (extra->data)
            return PF__FAIL(m, PF_ERROR_FORMAT, "%s: the checkpoint has an LM head that config.json's architectures (%s) "
                            "does not use", m->dir, pf__head_name(c->head));
        return PF_OK;
    }
    size_t V = (size_t)c->vocab_size, E = (size_t)c->embed_dim, H = (size_t)c->hidden_size;
    if (!extra->data && H > E)
        return PF__FAIL(m, PF_ERROR_FORMAT, "%s: missing tensor '%s' (the LM head's rows beyond the embedding's %zu "
                        "values)", m->dir, pf__arch_tensor_for(c->arch, PF__SLOT_LM_HEAD_EXTRA)->pattern, E);
    const pf__source *first = head->data ? head : &m->sources[PF__SLOT_TOKEN_EMBED];
    if (!(m->joined_lm_head = (float *)malloc(V * H * sizeof(float))))
        return PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    for (size_t v = 0; v < V; v++) {
        float *row = m->joined_lm_head + v * H;
        for (size_t i = 0; i < E; i++) row[i] = pf__weight_value(first->data, v * E + i, first->dtype);
        for (size_t k = 0; k + E < H; k++) row[E + k] = pf__weight_value(extra->data, k * V + v, extra->dtype);
    }
    pf__split split = m->sources[PF__SLOT_TOKEN_EMBED].split;
    pf__source_to_host(head, m->joined_lm_head, V, H);
    head->split = split;
    extra->data = NULL;
    return PF_OK;
}

/* ConvBERT's output projection [hidden, 2 Q] reads the attention heads' outputs, then the
   convolution heads': split into its two [hidden, Q] halves (fp32 on the host), PF__SLOT_ATTN_OUT_WEIGHT
   and PF__SLOT_CONV_OUT_WEIGHT, which the ranks split by heads as any attention output (a rank's
   convolution heads are its attention heads' numbers), so that each rank's inputs of it are two
   ranges of the file's columns. */
static pf_result pf__split_conv_output(pf_model *m) {
    const pf__config *c = &m->config;
    size_t h = (size_t)c->hidden_size, q = (size_t)c->num_heads * c->head_dim;
    for (int l = 0; l < c->num_layers; l++) {
        pf__source *layer = &m->sources[pf__slot_index(PF__SLOT_FIRST_LAYER, l) - PF__SLOT_FIRST_LAYER];
        pf__source *joined = &layer[PF__SLOT_ATTN_JOINED_OUT_WEIGHT];
        if (!joined->data) continue;
        if (joined->packed || joined->pieces)
            return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "%s: layer %d's attention output projection is quantized, which is "
                            "not implemented for ConvBERT's", m->dir, l);
        if (!m->split_attn_out && !(m->split_attn_out = (float *)malloc((size_t)c->num_layers * 2 * h * q * sizeof(float))))
            return PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
        float *attn = m->split_attn_out + (size_t)l * 2 * h * q, *conv = attn + h * q;
        for (size_t o = 0; o < h; o++)
            for (size_t i = 0; i < q; i++) {
                attn[o * q + i] = pf__weight_value(joined->data, o * 2 * q + i, joined->dtype);
                conv[o * q + i] = pf__weight_value(joined->data, o * 2 * q + q + i, joined->dtype);
            }
        static const pf__slot halves[2] = {PF__SLOT_ATTN_OUT_WEIGHT, PF__SLOT_CONV_OUT_WEIGHT};
        for (int k = 0; k < 2; k++) {
            pf__source_to_host(&layer[halves[k]], k ? conv : attn, h, q);
            layer[halves[k]].split = PF__SPLIT_HEAD_ROWS;
        }
        joined->data = NULL;
    }
    return PF_OK;
}

/* MobileBERT's stacked MLPs: the layer has num_feedforward_networks - 1 besides its own. */
static pf_result pf__check_stacked_ffns(pf_model *m) {
    const pf__config *c = &m->config;
    static const pf__slot ups[] = {PF__SLOT_FFN1_UP_WEIGHT, PF__SLOT_FFN2_UP_WEIGHT, PF__SLOT_FFN3_UP_WEIGHT};
    for (int l = 0; c->bottleneck_width && l < c->num_layers; l++)
        for (int k = 0; k < (int)PF__COUNT(ups); k++) {
            int present = m->sources[pf__slot_index(ups[k], l)].data != NULL, wanted = k + 1 < c->stacked_ffns;
            if (present != wanted)
                return PF__FAIL(m, PF_ERROR_FORMAT, "%s: layer %d %s stacked MLP %d, but config.json's "
                                "num_feedforward_networks is %d", m->dir, l, present ? "has" : "lacks", k, c->stacked_ffns);
        }
    return PF_OK;
}

/* Transformer-XL's tensors as its forward reads them (pf__rank_transfo_xl): each layer's qkv_net
   as cross-attention's q, k and v (views of its three blocks of rows); the adaptive input's tables
   and projections that the clusters need; TransfoXLLMHeadModel's adaptive softmax, its weights the
   tables (tie_word_embeddings) and its projections the input's (tie_projs), a tied copy in the file
   holding the same values. */
static pf_result pf__transfo_xl_sources(pf_model *m) {
    const pf__config *c = &m->config;
    if (!c->transfo_xl) return PF_OK;
    size_t q = (size_t)c->num_heads * c->head_dim, h = (size_t)c->hidden_size;
    for (int l = 0; l < c->num_layers; l++) {
        pf__source *layer = &m->sources[pf__slot_index(PF__SLOT_FIRST_LAYER, l) - PF__SLOT_FIRST_LAYER];
        pf__source fused = layer[PF__SLOT_QKV_FUSED_WEIGHT];
        if (fused.pieces || fused.packed ||
            (fused.dtype != PF__DTYPE_F32 && fused.dtype != PF__DTYPE_F16 && fused.dtype != PF__DTYPE_BF16))
            return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "%s: layer %d's qkv_net is stored as %s, which Transformer-XL does "
                            "not read (F32, F16 and BF16 it does)", m->dir, l, pf__dtype_name(fused.dtype));
        static const pf__slot parts[3] = {PF__SLOT_CROSS_Q_WEIGHT, PF__SLOT_CROSS_K_WEIGHT, PF__SLOT_CROSS_V_WEIGHT};
        for (int k = 0; k < 3; k++) {
            pf__source *part = &layer[parts[k]];
            *part = fused;
            part->data = fused.data + (size_t)k * pf__weight_bytes(fused.dtype, q, h);
            part->rows = q;
            part->split = k ? PF__SPLIT_KV_COLUMNS : PF__SPLIT_HEAD_COLUMNS;
        }
        layer[PF__SLOT_QKV_FUSED_WEIGHT].data = NULL;
        /* untie_r false: the model's r_w_bias and r_r_bias, which a file may hold each layer's copy of too */
        static const pf__slot shared[2] = {PF__SLOT_TXL_R_W_BIAS, PF__SLOT_TXL_R_R_BIAS};
        static const pf__slot own[2] = {PF__SLOT_CROSS_Q_BIAS, PF__SLOT_FUNNEL_R_R_BIAS};
        for (int k = 0; k < 2; k++) {
            const pf__source *model_bias = &m->sources[shared[k]];
            pf__source *bias = &layer[own[k]];
            const char *name = k ? "r_r_bias" : "r_w_bias";
            if (c->txl_untie_r ? !bias->data : !model_bias->data)
                return PF__FAIL(m, PF_ERROR_FORMAT, "%s: missing tensor %s%s (config.json's untie_r is %s)", m->dir,
                                c->txl_untie_r ? "of layer " : "", name, c->txl_untie_r ? "true" : "false");
            if (c->txl_untie_r) continue;
            if (bias->data && (bias->dtype != model_bias->dtype ||
                               memcmp(bias->data, model_bias->data, pf__weight_bytes(bias->dtype, q, 1))))
                return PF__FAIL(m, PF_ERROR_FORMAT, "%s: layer %d's %s differs from the model's, which untie_r false "
                                "makes every layer's", m->dir, l, name);
            *bias = *model_bias;
            bias->split = PF__SPLIT_HEAD_COLUMNS;
        }
    }
    if (c->txl_untie_r && (m->sources[PF__SLOT_TXL_R_W_BIAS].data || m->sources[PF__SLOT_TXL_R_R_BIAS].data))
        return PF__FAIL(m, PF_ERROR_FORMAT, "%s: tensors r_w_bias and r_r_bias are in the checkpoint but config.json's "
                        "untie_r true gives each layer its own", m->dir);
    m->sources[PF__SLOT_TXL_R_W_BIAS].data = m->sources[PF__SLOT_TXL_R_R_BIAS].data = NULL;
    int tables = c->txl_div_val == 1 ? 1 : c->txl_clusters, lm = c->head == PF_HEAD_CAUSAL_LM;
    for (int i = 0; i < PF__TXL_MAX_CLUSTERS; i++) {
        pf__slot table = i ? (pf__slot)(PF__SLOT_TXL_EMBED_1 + i - 1) : PF__SLOT_TOKEN_EMBED;
        pf__source *embed = &m->sources[table], *proj = &m->sources[PF__SLOT_TXL_EMBED_PROJ_0 + i];
        pf__source *out = &m->sources[PF__SLOT_TXL_OUT_WEIGHT_0 + i], *bias = &m->sources[PF__SLOT_TXL_OUT_BIAS_0 + i];
        pf__source *out_proj = &m->sources[PF__SLOT_TXL_OUT_PROJ_0 + i];
        /* transformers' AdaptiveEmbedding: one table (projected when d_embed is not d_model) or one
           table and projection a cluster; its softmax a projection a cluster (none when one table
           needs none) */
        int has_table = i < tables, has_proj = c->txl_div_val == 1 ? i == 0 && c->txl_d_embed != c->hidden_size : has_table;
        int has_out_proj = i < c->txl_clusters && (c->txl_div_val != 1 || c->txl_d_embed != c->hidden_size);
        const char *missing = has_table && !embed->data ? "word_emb.emb_layers" : has_proj && !proj->data ? "word_emb.emb_projs"
                              : lm && has_table && !bias->data ? "crit.out_layers' bias" : NULL;
        if (missing)
            return PF__FAIL(m, PF_ERROR_FORMAT, "%s: missing tensor %s of cluster %d (cutoffs %d, div_val %d, d_embed %d, "
                            "d_model %d)", m->dir, missing, i, c->txl_clusters - 1, c->txl_div_val, c->txl_d_embed,
                            c->hidden_size);
        const char *extra = !has_table && embed->data ? "word_emb.emb_layers" : !has_proj && proj->data ? "word_emb.emb_projs"
                            : (!lm || !has_table) && (out->data || bias->data) ? "crit.out_layers"
                            : (!lm || !has_out_proj) && out_proj->data ? "crit.out_projs" : NULL;
        if (extra)
            return PF__FAIL(m, PF_ERROR_FORMAT, "%s: tensor %s of cluster %d is in the checkpoint but config.json's "
                            "architectures, cutoffs, div_val, d_embed and d_model make none", m->dir, extra, i);
        if (!lm) continue;
        /* tie_weights(): each table is its cluster's softmax weight; the projection tied with the
           input's (one table: emb_projs.0) read as the softmax multiplies by it, [hidden, e_i] */
        const pf__source *input_proj = &m->sources[PF__SLOT_TXL_EMBED_PROJ_0 + (c->txl_div_val == 1 ? 0 : i)];
        struct { pf__source *dst; const pf__source *src; int tied; const char *name; } ties[2] = {
            {out, embed, has_table && c->tie_word_embeddings, "crit.out_layers"},
            {out_proj, input_proj, has_out_proj && c->txl_tie_projs[i], "crit.out_projs"}};
        for (int k = 0; k < 2; k++) {
            if (!ties[k].tied) {
                if ((k ? has_out_proj : has_table) && !ties[k].dst->data)
                    return PF__FAIL(m, PF_ERROR_FORMAT, "%s: missing tensor %s of cluster %d (config.json ties it to "
                                    "nothing)", m->dir, ties[k].name, i);
                continue;
            }
            const pf__source *src = ties[k].src;
            if (ties[k].dst->data && (ties[k].dst->dtype != src->dtype ||
                                      memcmp(ties[k].dst->data, src->data, pf__weight_bytes(src->dtype, src->rows, src->cols))))
                return PF__FAIL(m, PF_ERROR_FORMAT, "%s: %s of cluster %d differs from the input's tensor config.json "
                                "ties it to", m->dir, ties[k].name, i);
            size_t rows = ties[k].dst->rows, cols = ties[k].dst->cols;
            pf__slot_shape(c, (pf__slot)(k ? PF__SLOT_TXL_OUT_PROJ_0 + i : PF__SLOT_TXL_OUT_WEIGHT_0 + i), &rows, &cols);
            *ties[k].dst = *src;
            ties[k].dst->rows = rows; /* the projection: the same values, [e_i, hidden] as stored [hidden, e_i] */
            ties[k].dst->cols = cols;
            if (k) ties[k].dst->layout = PF__LAYOUT_IN_OUT;
        }
    }
    int clusters_needed = lm && c->txl_clusters > 1;
    if (!clusters_needed != !m->sources[PF__SLOT_TXL_CLUSTER_WEIGHT].data ||
        !clusters_needed != !m->sources[PF__SLOT_TXL_CLUSTER_BIAS].data)
        return PF__FAIL(m, PF_ERROR_FORMAT, "%s: crit.cluster_weight and crit.cluster_bias are %s, but %s", m->dir,
                        clusters_needed ? "missing" : "in the checkpoint",
                        clusters_needed ? "the adaptive softmax has tail clusters" : "nothing reads them");
    (void)h;
    return PF_OK;
}

/* Each layer's stacked biases line up with its stacked weights, and it has an attention projection. */
static pf_result pf__check_stacks(pf_model *m) {
    const pf__config *c = &m->config;
    for (int l = 0; l < c->num_layers; l++) {
        size_t base = pf__slot_index(PF__SLOT_FIRST_LAYER, l) - PF__SLOT_FIRST_LAYER;
        for (size_t k = 0; k + 1 < pf__stacks_count; k += 2) { /* weight stack, then its bias stack */
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
        if (!m->sources[base + PF__SLOT_QKV_FUSED_WEIGHT].data && !m->sources[base + PF__SLOT_Q_WEIGHT].data &&
            !m->sources[base + PF__SLOT_Q_B_WEIGHT].data && /* latent attention's low-rank q */
            !(m->config.funnel && m->sources[base + PF__SLOT_CROSS_Q_WEIGHT].data)) /* Funnel's, as cross-attention's */
            return PF__FAIL(m, PF_ERROR_FORMAT, "%s: layer %d has no attention projection", m->dir, l);
        if (pf__archs[c->arch].kind == PF__KIND_DECODER && c->pre_norm && !c->parallel_residual && !c->norm_weightless &&
            !m->sources[base + PF__SLOT_MLP_NORM_WEIGHT].data && !m->sources[base + PF__SLOT_MLP_POST_NORM_WEIGHT].data)
            /* only a parallel block may share one norm; OLMo 2 norms the MLP's output instead */
            return PF__FAIL(m, PF_ERROR_FORMAT, "%s: layer %d has no norm before its MLP", m->dir, l);
        if (c->parallel_residual && (m->sources[base + PF__SLOT_ATTN_POST_NORM_WEIGHT].data ||
                                     m->sources[base + PF__SLOT_MLP_POST_NORM_WEIGHT].data))
            return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "%s: layer %d norms its sublayers' outputs in a parallel block: not "
                            "implemented (no family has both)", m->dir, l);
    }
    return PF_OK;
}

/* LUKE's optional tensors against the config that says which it has: the entity-aware queries
   with use_entity_aware_attention (every layer, or none), the entity table's projection where its
   width is not the hidden size. */
static pf_result pf__check_entity_tensors(pf_model *m) {
    const pf__config *c = &m->config;
    if (!c->entity_vocab_size) return PF_OK;
    int projected = m->sources[PF__SLOT_ENTITY_DENSE].data != NULL;
    if (projected != (c->entity_emb_size != c->hidden_size))
        return PF__FAIL(m, PF_ERROR_FORMAT, "%s: \"entity_emb_size\" %d with hidden_size %d %s "
                        "entity_embeddings.entity_embedding_dense.weight, which the checkpoint %s", m->dir,
                        c->entity_emb_size, c->hidden_size, projected ? "takes no" : "needs", projected ? "has" : "lacks");
    for (int l = 0; l < c->num_layers; l++) {
        size_t base = pf__slot_index(PF__SLOT_FIRST_LAYER, l) - PF__SLOT_FIRST_LAYER;
        int has = m->sources[base + PF__SLOT_W2E_Q_WEIGHT].data && m->sources[base + PF__SLOT_E2W_Q_WEIGHT].data &&
                  m->sources[base + PF__SLOT_E2E_Q_WEIGHT].data;
        int any = m->sources[base + PF__SLOT_W2E_Q_WEIGHT].data || m->sources[base + PF__SLOT_E2W_Q_WEIGHT].data ||
                  m->sources[base + PF__SLOT_E2E_Q_WEIGHT].data;
        if (c->entity_aware_attention ? !has : any)
            return PF__FAIL(m, PF_ERROR_FORMAT, "%s: \"use_entity_aware_attention\" is %s but layer %d %s the "
                            "w2e_query, e2w_query and e2e_query projections", m->dir,
                            c->entity_aware_attention ? "true" : "false", l, c->entity_aware_attention ? "lacks" : "has");
    }
    return PF_OK;
}

/* Finds the source tensor of every slot, checking presence, dtype and shape; then the front ends,
   the tensors no slot consumed, and the scalings and limits that depend on what was found. */
static pf_result pf__resolve_sources(pf_model *m) {
    const pf__config *c = &m->config;
    m->sources = (pf__source *)calloc(pf__num_slots(c), sizeof *m->sources);
    if (!m->sources) return PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    const char *prefix = NULL;
    pf_result r;
    if ((r = pf__find_prefix(m, &prefix)) || (r = pf__take_slots(m, prefix)) || (r = pf__check_head_slots(m)) ||
        (r = pf__resolve_lm_head(m)) || (r = pf__reformer_check_tensors(m)) || (r = pf__check_tower_embeddings(m, prefix)))
        return r;
    if ((r = pf__add_zero_k_bias(m)) || (r = pf__fuse_qv_bias(m))) return r;
    if ((r = pf__fold_bottleneck_qk(m)) || (r = pf__join_lm_head_extra(m)) || (r = pf__check_stacked_ffns(m))) return r;
    if ((r = pf__split_conv_output(m))) return r;
    if ((r = pf__check_stacks(m)) || (r = pf__load_router_choice_bias(m)) || (r = pf__check_entity_tensors(m))) return r;
    if ((r = pf__transfo_xl_sources(m))) return r;
    if (c->speech && (r = pf__speech_load(m, prefix))) return r;
    if (c->conv_subsampler && (r = pf__subsampler_load(m, prefix))) return r;
    if (c->mel_frontend && (r = pf__mel_load(m, prefix))) return r;
    r = pf__account_tensors(m, prefix);
    if (r) return r;
    if (c->scale_decoder_outputs && c->num_layers > c->encoder_layers && pf__archs[c->arch].kind == PF__KIND_SEQ2SEQ &&
        c->head == PF_HEAD_CAUSAL_LM) /* the LM head's input alone: task heads read the states unscaled */
        if ((r = pf__scale_final_norm(m))) return r;
    if (c->logit_scale != 0 && c->logit_scale != 1) { /* Cohere's: (norm(x) w + b) W^T s = (norm(x) sw + sb) W^T */
        if (!m->sources[PF__SLOT_FINAL_NORM_WEIGHT].data)
            return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "%s: \"logit_scale\" needs a final norm to fold into", m->dir);
        static const pf__slot scaled[] = {PF__SLOT_FINAL_NORM_WEIGHT, PF__SLOT_FINAL_NORM_BIAS, PF__SLOT_LM_HEAD_BIAS};
        for (size_t i = 0; i < PF__COUNT(scaled); i++)
            if ((r = pf__scale_source(m, scaled[i], (float)c->logit_scale))) return r;
    }
    static const pf__slot teacher_heads[] = {PF__SLOT_CLASSIFIER_WEIGHT, PF__SLOT_CLASSIFIER_BIAS,
                                             PF__SLOT_DIST_CLASSIFIER_WEIGHT, PF__SLOT_DIST_CLASSIFIER_BIAS};
    for (size_t i = 0; c->teacher_head && i < PF__COUNT(teacher_heads); i++) /* DeiT: the mean of two heads */
        if ((r = pf__scale_source(m, teacher_heads[i], 0.5f))) return r;
    static const pf__slot region_norms[] = {PF__SLOT_VISUAL_NORM_WEIGHT, PF__SLOT_VISUAL_NORM_BIAS, PF__SLOT_BOX_NORM_WEIGHT,
                                            PF__SLOT_BOX_NORM_BIAS};
    for (size_t i = 0; c->two_streams && i < PF__COUNT(region_norms); i++) /* LXMERT: the mean of the two norms */
        if ((r = pf__scale_source(m, region_norms[i], 0.5f))) return r;
    pf__qkv_layout layout = pf__archs[c->arch].qkv_layout;
    if (c->num_kv_heads != c->num_heads && (layout == PF__QKV_PER_HEAD || layout == PF__QKV_CODEGEN) &&
        pf__arch_tensor_for(c->arch, PF__SLOT_QKV_FUSED_WEIGHT)) /* blocks and groups place fewer k/v heads */
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "%s: grouped-query attention with a fused QKV tensor interleaved per head", m->dir);
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

/* A model with its locks and options, before anything is read. */
static pf_model *pf__model_new(const pf_load_options *options) {
    pf_model *m = (pf_model *)calloc(1, sizeof *m);
    if (!m) return NULL;
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutex_init(&m->request_lock, &attr);
    pthread_mutex_init(&m->batcher_start, NULL);
    pthread_mutex_init(&m->calls_mutex, NULL);
    pthread_cond_init(&m->calls_done, NULL);
    pthread_mutexattr_destroy(&attr);
    m->load_options = options ? *options : pf_load_options_init();
    m->generate_defaults = pf_generate_options_init();
    return m;
}

/* The tensors of a dual model's checkpoint that are not this tower's: under the other tower's
   prefix, its bare names (its projection) and the dual row's own. Marked as consumed here so that
   the tower's accounting sees its own; the other tower accounts for its tensors. */
static void pf__mark_foreign_tensors(pf__st_index *st, pf__arch_id dual, pf__arch_id other) {
    const pf__policy_rows *others = pf__rows(other), *duals = pf__rows(dual);
    for (size_t i = 0; i < st->num_tensors; i++) {
        pf__st_tensor *t = &st->tensors[i];
        for (size_t k = 0; k < others->num_prefixes && !t->used; k++)
            if (others->prefixes[k].prefix[0] && !strncmp(t->name, others->prefixes[k].prefix, strlen(others->prefixes[k].prefix)))
                t->used = 1;
        for (size_t k = 0; k < others->num_tensors && !t->used; k++)
            if (!strcmp(t->name, others->tensors[k].pattern)) t->used = 1;
        for (size_t k = 0; k < duals->num_tensors && !t->used; k++)
            if (!strcmp(t->name, duals->tensors[k].pattern)) t->used = 1;
    }
}

/* A dual model (CLIP): each tower is loaded as a model of its own from config.json's
   text_config / vision_config (transformers' older text_config_dict / vision_config_dict win
   whole, as its CLIPConfig lets them), with its projection, over the same checkpoint; the
   similarity's temperature is read here. */
static pf_result pf__load_dual(pf_model *m) {
    static const char *const keys[2][2] = {{"text_config_dict", "text_config"}, {"vision_config_dict", "vision_config"}};
    static const char *const suffixes[2] = {"_text_model", "_vision_model"};
    char path[PF__PATH_SIZE];
    pf__json *json = NULL;
    if (pf__path_join(path, sizeof path, m->dir, "config.json")) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "path too long: %s", m->dir);
    pf_result r = pf__json_load(path, &json, pf__error_buffer(m), PF__MESSAGE_SIZE);
    if (r) return r;
    const pf__json *names = pf__json_get(json, "architectures");
    const pf__json *first = names && names->type == PF__JSON_ARRAY ? names->first : NULL;
    if (first && (first->type != PF__JSON_STRING || strlen(first->string) < 5 ||
                  strcmp(first->string + strlen(first->string) - 5, "Model")))
        r = PF__FAIL(m, PF_ERROR_UNSUPPORTED, "%s: architecture \"%s\" is not supported (model_type \"%s\": the two towers "
                     "and their similarity, an architecture named ...Model, are)", path,
                     first->type == PF__JSON_STRING ? first->string : "?", m->config.model_type);
    int tower_arch[2] = {-1, -1};
    for (int k = 0; k < 2 && !r; k++) {
        char type[80];
        snprintf(type, sizeof type, "%s%s", pf__archs[m->config.arch].model_type, suffixes[k]);
        for (int a = 0; a < PF__ARCH_COUNT; a++)
            if (!strcmp(pf__archs[a].model_type, type)) tower_arch[k] = a;
        if (tower_arch[k] < 0) r = PF__FAIL(m, PF_ERROR_UNSUPPORTED, "%s: no row for the tower \"%s\"", path, type);
    }
    for (int k = 0; k < 2 && !r; k++) {
        pf_model *t = m->towers[k] = pf__model_new(&m->load_options);
        if (!t || !(t->dir = strdup(m->dir))) {
            r = PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
            break;
        }
        const pf__json *sub = pf__json_get(json, keys[k][0]);
        const char *key = keys[k][0];
        if (!sub || sub->type == PF__JSON_NULL) sub = pf__json_get(json, key = keys[k][1]);
        if (sub && sub->type == PF__JSON_NULL) sub = NULL; /* transformers' defaults */
        if (sub && sub->type != PF__JSON_OBJECT) {
            r = PF__FAIL(m, PF_ERROR_FORMAT, "%s: \"%s\" is not an object", path, key);
            break;
        }
        char where[PF__PATH_SIZE + 32];
        snprintf(where, sizeof where, "%s: %s", path, key);
        r = pf__config_parse(sub, where, tower_arch[k], &t->config, pf__error_buffer(t), PF__MESSAGE_SIZE);
        t->config.with_projection = 1;
        t->config.projection_dim = m->config.projection_dim; /* CLIPModel projects to the top-level width */
        if (!r && pf__archs[t->config.arch].kind != PF__KIND_ENCODER)
            r = PF__FAIL(t, PF_ERROR_UNSUPPORTED, "%s: the tower is not an encoder", where);
        if (!r) r = pf__config_check_token_ids(&t->config, where, pf__error_buffer(t), PF__MESSAGE_SIZE);
        if (!r) r = pf__st_open(m->dir, m->config.class_name, &t->st, pf__error_buffer(t), PF__MESSAGE_SIZE);
        if (!r) r = pf__quantized_open(m->dir, &t->st, pf__error_buffer(t), PF__MESSAGE_SIZE);
        if (!r) pf__mark_foreign_tensors(&t->st, m->config.arch, (pf__arch_id)tower_arch[1 - k]);
        if (!r) r = pf__resolve_sources(t);
        if (r) {
            r = pf__fail_from(m, r, t);
            break;
        }
        t->loaded = 1;
    }
    const pf__arch_tensor *scale_row = pf__arch_tensor_for(m->config.arch, PF__SLOT_LOGIT_SCALE);
    const pf__st_tensor *scale = !r && scale_row ? pf__st_find(&m->towers[0]->st, scale_row->pattern) : NULL;
    if (!r && scale_row && !scale) r = PF__FAIL(m, PF_ERROR_FORMAT, "%s: missing tensor '%s'", m->dir, scale_row->pattern);
    if (!r && scale && (scale->numel != 1 || scale->ndim > 1 || scale->dtype == PF__DTYPE_OTHER))
        r = PF__FAIL(m, PF_ERROR_FORMAT, "%s: tensor '%s' is not one F32, F16 or BF16 number", m->dir, scale->name);
    if (!r && scale) {
        m->logit_scale = expf(pf__weight_value(scale->data, 0, scale->dtype));
        if (!isfinite(m->logit_scale)) r = PF__FAIL(m, PF_ERROR_FORMAT, "%s: tensor '%s' overflows when exponentiated", m->dir, scale->name);
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
    /* a kind we lack, no vocabulary files, or a speech model's CTC vocabulary (pf_ctc_decode reads it) */
    if (r == PF_ERROR_UNSUPPORTED || (r && !present[0] && !present[1]) || (r && m->config.speech)) {
        pf__log(m, PF_LOG_WARNING, "no tokenizer: %s", m->tokenizer_missing);
        return PF_OK;
    }
    if (r) r = PF__FAIL(m, r, "%s", m->tokenizer_missing);
    m->tokenizer_missing[0] = 0;
    return r;
}

static pf_result pf__load_dual(pf_model *m);

/* config.json's id2label: a name per label of a classification head (keys "0".."num_labels - 1"),
   for pf_label_name. */
static pf_result pf__label_names_read(pf_model *m, const char *dir) {
    char path[PF__PATH_SIZE];
    pf__json *json = NULL;
    if (pf__path_join(path, sizeof path, dir, "config.json")) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "path too long: %s", dir);
    pf_result r = pf__json_load(path, &json, pf__error_buffer(m), PF__MESSAGE_SIZE);
    if (r) return r;
    const pf__json *labels = pf__json_get(json, "id2label");
    int n = m->config.num_labels;
    if (labels && labels->type == PF__JSON_OBJECT && labels->count == (size_t)n && n > 0 &&
        !(m->label_names = (char **)calloc((size_t)n, sizeof *m->label_names)))
        r = PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    for (const pf__json *v = m->label_names ? labels->first : NULL; v && !r; v = v->next) {
        char *end = NULL;
        long index = strtol(v->key, &end, 10);
        if (!v->key[0] || *end || index < 0 || index >= n || m->label_names[index] || v->type != PF__JSON_STRING)
            r = PF__FAIL(m, PF_ERROR_FORMAT, "%s: id2label's \"%s\" is not a name for one of the %d labels", path, v->key, n);
        else if (!(m->label_names[index] = strdup(v->string)))
            r = PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    pf__json_free(json);
    return r;
}

/* A failure of pf_load always has a message: one from a part that gave none (a tokenizer out of
   memory, say) would leave callers printing "out of memory: " and nothing. */
static pf_result pf__load_failed(pf_model *m, const char *dir, pf_result r) {
    if (r && !pf_error_message(m)[0]) PF__FAIL(m, r, "%s: %s while loading", dir, pf_result_string(r));
    return r;
}

pf_result pf_load(const char *model_dir, const pf_load_options *options, pf_model **model) {
    if (!model) return PF_ERROR_INVALID_ARGUMENT;
    pf_model *m = pf__model_new(options);
    *model = m;
    if (!m) return PF_ERROR_OUT_OF_MEMORY;
    if (!model_dir) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "model_dir is NULL");
    m->dir = strdup(model_dir);
    if (!m->dir) return PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    /* a GGUF file gives the config, tensors and tokenizer a directory's files would */
    int gguf = pf__is_gguf(model_dir);
    pf_result r = gguf ? pf__gguf_load(m) : pf__config_read(model_dir, &m->config, pf__error_buffer(m), PF__MESSAGE_SIZE);
    if (!r && pf__archs[m->config.arch].kind == PF__KIND_DUAL) {
        if (!(r = pf__load_dual(m))) r = pf__load_tokenizer(m, model_dir);
        m->loaded = !r;
        return pf__load_failed(m, model_dir, r);
    }
    if (!r && !gguf && !m->load_options.skip_generation_config)
        r = pf__generation_config_read(model_dir, &m->config, &m->generate_defaults, pf__error_buffer(m), PF__MESSAGE_SIZE);
    if (!r) r = pf__config_check_token_ids(&m->config, model_dir, pf__error_buffer(m), PF__MESSAGE_SIZE);
    if (!r && !gguf) r = pf__st_open(model_dir, m->config.class_name, &m->st, pf__error_buffer(m), PF__MESSAGE_SIZE);
    if (!r && !gguf) r = pf__quantized_open(model_dir, &m->st, pf__error_buffer(m), PF__MESSAGE_SIZE);
    if (!r) r = pf__resolve_sources(m);
    /* encoders, and decoder-based embedders (a GGUF's pooling is in its metadata, read with it) */
    if (!r && !gguf && pf__archs[m->config.arch].kind != PF__KIND_SEQ2SEQ)
        r = pf__sentence_config_read(model_dir, &m->sentence, pf__error_buffer(m), PF__MESSAGE_SIZE);
    if (!r && !gguf) r = pf__load_tokenizer(m, model_dir);
    if (!r && !gguf && m->config.head != PF_HEAD_CAUSAL_LM) r = pf__label_names_read(m, model_dir);
    if (!r && m->config.rotary_dim) {
        m->inv_freq = (float *)malloc(pf__rope_floats(&m->config) * sizeof(float));
        if (!m->inv_freq) r = PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    if (r) return pf__load_failed(m, model_dir, r);
    m->loaded = 1;
    return PF_OK;
}

/* Refuses requests from now on and waits for the ones that began to end (a running generation
   stops at its next token: pf__check_closing). */
static void pf__drain_requests(pf_model *m) {
    pthread_mutex_lock(&m->calls_mutex);
    __atomic_store_n(&m->closing, 1, __ATOMIC_RELEASE);
    while (m->active_calls > 0) pthread_cond_wait(&m->calls_done, &m->calls_mutex);
    pthread_mutex_unlock(&m->calls_mutex);
}

void pf_free(pf_model *m) {
    if (!m) return;
    pf__drain_requests(m);
    pf_free(m->towers[0]);
    pf_free(m->towers[1]);
    pf__batcher_stop(m);
    pf__group_destroy(m->group);
    pf_tokenizer_free(m->tokenizer);
    pf__token_texts_free(m->json_token_texts);
    pf__st_close(&m->st);
    for (size_t i = 0; m->sources && i < pf__num_slots(&m->config); i++) {
        free((void *)m->sources[i].pieces);
        free((void *)m->sources[i].packed_pieces);
    }
    free(m->sources);
    for (int i = 0; i < m->num_scaled; i++) free(m->scaled[i]);
    pf__speech_free(m->speech);
    free(m->zero_bias);
    free(m->router_choice_bias);
    free(m->fused_qkv_bias);
    free(m->folded_qk);
    free(m->joined_lm_head);
    free(m->split_attn_out);
    for (int i = 0; m->label_names && i < m->config.num_labels; i++) free(m->label_names[i]);
    free(m->label_names);
    free(m->logits);
    free(m->inv_freq);
    free(m->config.layer_window);
    free(m->config.layer_rope);
    free(m->config.layer_sparse);
    pf__policy_release(m->config.arch);
    free(m->config.eos_ids);
    free(m->config.suppress_ids);
    free(m->config.begin_suppress_ids);
    free(m->config.decoder_prompt_ids);
    free(m->config.lang_ids);
    free(m->dir);
    pthread_mutex_destroy(&m->request_lock);
    pthread_mutex_destroy(&m->batcher_start);
    pthread_mutex_destroy(&m->calls_mutex);
    pthread_cond_destroy(&m->calls_done);
    free(m);
}

const char *pf_label_name(const pf_model *m, int label) {
    if (!m || !m->loaded || !m->label_names || label < 0 || label >= m->config.num_labels) return NULL;
    return m->label_names[label];
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
    if (c->speech) info.audio_stride = c->speech_config.stride, info.audio_min_samples = c->speech_config.min_samples;
    if (c->conv_subsampler) info.num_mel_bins = c->speech_config.feature_width; /* frame-major, any length */
    if (c->mel_frontend) info.num_mel_bins = c->num_mel_bins, info.mel_major = 1, info.audio_frames = 2 * c->encoder_max_positions;
    if (m->sources && m->sources[PF__SLOT_VISUAL_PROJECTION_WEIGHT].data)
        info.region_dim = c->visual_embedding_dim, info.region_box_dim = c->visual_pos_dim;
    info.entity_vocab_size = c->entity_vocab_size;
    info.head = c->head;
    info.num_labels = c->num_labels;
    info.eos_token_ids = c->eos_ids;
    info.num_eos_token_ids = c->num_eos_ids;
    info.eos_token_id = c->num_eos_ids ? c->eos_ids[0] : -1;
    info.bos_token_id = c->bos_token_id;
    info.pad_token_id = c->pad_token_id;
    info.decoder_start_token_id = c->decoder_start_token_id;
    if (m->towers[0]) { /* a dual model: the text tower's sizes, the vision tower's image */
        pf_model_info text = pf_get_info(m->towers[0]), vision = pf_get_info(m->towers[1]);
        text.model_type = info.model_type;
        text.image_size = vision.image_size, text.patch_size = vision.patch_size, text.num_channels = vision.num_channels;
        info = text;
    }
    return info;
}
