#include "internal.h"
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
#ifdef PF__AMX
#define PF__HAS_AMX 1
#define PF__AMX_WORD " +amx"
#else
#define PF__HAS_AMX 0
#define PF__AMX_WORD " -amx"
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
    info.amx = PF__HAS_AMX;
    return info;
}

const char *pf_version_string(void) {
    return PF_VERSION_STRING PF__CUDA_WORD PF__AVX2_WORD PF__AVX512_WORD PF__AMX_WORD;
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

/* A dual model's failure as its tower's: the tower's message (in the same per-thread buffer) copied first. */
PF_PRIVATE pf_result pf__fail_from(pf_model *m, pf_result r, const pf_model *tower) {
    char message[PF__MESSAGE_SIZE];
    snprintf(message, sizeof message, "%s", pf_error_message(tower));
    return PF__FAIL(m, r, "%s", message);
}

/* A request begins: pf_free waits for it to end (pf__call_end). Once pf_free has begun it is
   refused, counted all the same until its message is written, so that pf_free cannot free the
   model under it. */
PF_PRIVATE pf_result pf__call_begin(pf_model *m, const char *call) {
    pthread_mutex_lock(&m->calls_mutex);
    m->active_calls++;
    int closing = m->closing;
    pthread_mutex_unlock(&m->calls_mutex);
    if (!closing) return PF_OK;
    pf_result r = PF__FAIL(m, PF_ERROR_CANCELLED, "%s: the model is being freed (pf_free)", call);
    pf__call_end(m);
    return r;
}

PF_PRIVATE void pf__call_end(pf_model *m) {
    pthread_mutex_lock(&m->calls_mutex);
    if (--m->active_calls == 0) pthread_cond_broadcast(&m->calls_done);
    pthread_mutex_unlock(&m->calls_mutex);
}

#ifdef PF_TESTING
int pf_testing_active_calls(pf_model *m); /* test hook: requests pf_free would wait for, and */
int pf_testing_closing(pf_model *m);      /* whether pf_free has begun */
int pf_testing_active_calls(pf_model *m) {
    pthread_mutex_lock(&m->calls_mutex);
    int n = m->active_calls;
    pthread_mutex_unlock(&m->calls_mutex);
    return n;
}
int pf_testing_closing(pf_model *m) { return PF__LOAD_FLAG(m->closing); }
#endif

/* Where a request may stop early: PF_ERROR_CANCELLED once pf_free has begun. */
PF_PRIVATE pf_result pf__check_closing(pf_model *m) {
    if (!PF__LOAD_FLAG(m->closing)) return PF_OK;
    return PF__FAIL(m, PF_ERROR_CANCELLED, "cancelled: the model is being freed (pf_free)");
}

/* Takes the model's request lock, as a request pf_free waits for. The thread that holds it
   already is inside a request on this model (calling from a stream callback): refused, since it
   would wait for itself forever. */
PF_PRIVATE pf_result pf__request_lock(pf_model *m, const char *call) {
    pf_result r = pf__call_begin(m, call);
    if (r) return r;
    /* this thread is inside a request on the model (a stream callback): an exclusive one holds the
       lock itself (EDEADLK below), a batched one has the scheduler hold it for the caller */
    int e = pf__lock_holder == m ? EDEADLK : 0;
    if (!e) {
        __atomic_add_fetch(&m->exclusive_waiting, 1, __ATOMIC_ACQ_REL); /* the batcher stops admitting */
        e = pthread_mutex_lock(&m->request_lock);
        __atomic_sub_fetch(&m->exclusive_waiting, 1, __ATOMIC_ACQ_REL);
    }
    if (!e) pf__lock_holder = m;
    if (e == EDEADLK)
        r = PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT,
                     "%s was called from inside a request on the same model (a stream callback?); it would wait "
                     "for that request forever", call);
    else if (e)
        r = PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "%s: cannot take the model's request lock: %s", call, strerror(e));
    else if ((r = pf__check_closing(m))) /* pf_free began while this one waited */
        pf__request_unlock(m);
    if (r && e) pf__call_end(m);
    return r;
}

PF_PRIVATE void pf__request_unlock(pf_model *m) {
    pf__lock_holder = NULL;
    pthread_mutex_unlock(&m->request_lock);
    pf__call_end(m);
}

/* A tensor named prefix + bare, or bare alone (the LM head outside the prefix), marked consumed. A
   multimodal checkpoint's text model (prefix "language_model.model.") keeps its LM head one level
   up ("language_model.lm_head.weight"), which is tried in between. */
PF_PRIVATE const pf__st_tensor *pf__take_prefixed(pf_model *m, const char *prefix, const char *bare) {
    char name[300];
    snprintf(name, sizeof name, "%s%s", prefix, bare);
    const pf__st_tensor *st = pf__st_take(&m->st, name);
    size_t len = strlen(prefix), model = strlen("model.");
    if (!st && m->config.text_tower_of[0] && len > model && !strcmp(prefix + len - model, "model.")) {
        snprintf(name, sizeof name, "%.*s%s", (int)(len - model), prefix, bare);
        st = pf__st_take(&m->st, name);
    }
    return st ? st : pf__st_take(&m->st, bare);
}

/* Marks as read the tensors of layers num_layers .. num_layers + unread_layers - 1 (named as the
   family's first layer row names its layers: "layers.%d." under the prefix); returns how many. */
static size_t pf__mark_unread_layers(pf_model *m, const char *prefix) {
    const pf__config *c = &m->config;
    const pf__arch_tensor *row = pf__arch_tensor_for(c->arch, PF__SLOT_ATTN_NORM_WEIGHT);
    const char *at = row ? strstr(row->pattern, "%d.") : NULL;
    size_t count = 0;
    for (int l = c->num_layers; at && l < c->num_layers + c->unread_layers; l++) {
        char layer[256];
        snprintf(layer, sizeof layer, "%s%.*s%d.", prefix, (int)(at - row->pattern), row->pattern, l);
        for (size_t i = 0; i < m->st.num_tensors; i++)
            if (!m->st.tensors[i].used && !strncmp(m->st.tensors[i].name, layer, strlen(layer))) {
                m->st.tensors[i].used = 1;
                count++;
            }
    }
    return count;
}

/* Every tensor of the checkpoint must be consumed by a slot or be a known buffer (a causal mask,
   rotary frequencies): a tensor we do not compute with is a model we would compute wrongly. */
PF_PRIVATE pf_result pf__account_tensors(pf_model *m, const char *prefix) {
    const pf__config *c = &m->config;
    const pf__policy_rows *rows = pf__rows(c->arch);
    for (size_t i = 0; i < rows->num_buffers; i++) {
        if (rows->buffers[i].arch != c->arch) continue;
        const char *pattern = rows->buffers[i].pattern;
        int layers = strstr(pattern, "%d") ? c->num_layers : 1;
        for (int l = 0; l < layers; l++) {
            char bare[256];
            snprintf(bare, sizeof bare, pattern, l);
            pf__take_prefixed(m, prefix, bare);
        }
    }
    size_t unread = 0; /* a multimodal checkpoint's other towers (PF_ARCH_OTHER_TOWER) */
    for (size_t k = 0; c->text_tower_of[0] && pf__text_towers[k].model_type[0]; k++) {
        const pf__text_tower *other = &pf__text_towers[k];
        if (other->text || strcmp(other->model_type, c->text_tower_of)) continue;
        for (size_t i = 0; i < m->st.num_tensors; i++)
            if (!m->st.tensors[i].used && !strncmp(m->st.tensors[i].name, other->prefix, strlen(other->prefix))) {
                m->st.tensors[i].used = 1;
                unread++;
            }
    }
    if (unread)
        pf__log(m, PF_LOG_INFO, "%s: model_type \"%s\": its text model (\"%s\") loaded; %zu tensors of its other towers "
                "(images) left unread", m->dir, c->text_tower_of, c->model_type, unread);
    if (c->unread_layers > 0 && (unread = pf__mark_unread_layers(m, prefix)))
        pf__log(m, PF_LOG_INFO, "%s: %zu tensors of %d layers past num_hidden_layers (multi-token prediction) left unread, "
                "as transformers leaves them", m->dir, unread, c->unread_layers);
    for (size_t i = 0; i < m->st.num_tensors; i++)
        if (!m->st.tensors[i].used)
            return PF__FAIL(m, PF_ERROR_UNSUPPORTED,
                            "%s: tensor '%s' is not used by model_type \"%s\" as its config.json describes it (a "
                            "checkpoint with weights we would not compute with is refused)",
                            m->st.tensors[i].file->path, m->st.tensors[i].name, c->model_type);
    return PF_OK;
}

/* A bias switch's say: *key the config.json key the family reads it from (BigBird's use_bias,
   Falcon's bias, ...), *why "is true" / "is false"; a family that fixes it has no key: *key NULL,
   *why the whole phrase. */
static int pf__bias_need(const pf__config *c, size_t field, int value, const char *what, const char **key, const char **why) {
    const char *name = pf__config_key(c->arch, field);
    int derived = !strcmp(name, "(derived)");
    *key = derived ? NULL : name;
    *why = !derived ? (value ? "is true" : "is false") : value ? what : "the family has none of them";
    return value != 0;
}

/* For a PF__IF_ need: 1 if the config wants the tensor, 0 if it rules it out, with the config's
   say in words: *key a config.json key and *why what it says ("is false"), or *key NULL and *why
   the whole of it; -1 for the needs that do not follow the config. */
PF_PRIVATE int pf__need_by_config(const pf__config *c, pf__need need, const char **key, const char **why) {
    *key = NULL;
    switch (need) {
    case PF__IF_ATTENTION_BIAS:
        return pf__bias_need(c, offsetof(pf__config, attention_bias), c->attention_bias,
                             "the family has attention biases", key, why);
    case PF__IF_MLP_BIAS:
        return pf__bias_need(c, offsetof(pf__config, mlp_bias), c->mlp_bias, "the family has MLP biases", key, why);
    case PF__IF_LM_HEAD_BIAS:
        return pf__bias_need(c, offsetof(pf__config, lm_head_bias), c->lm_head_bias, "the family has an LM head bias",
                             key, why);
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
    case PF__IF_QK_NORM:
        *why = c->qk_norm ? "q and k are normed (use_qk_norm / qk_layernorm is true)"
                           : "q and k are not normed (use_qk_norm / qk_layernorm is false)";
        return c->qk_norm != PF__QK_NORM_NONE;
    case PF__IF_Q_LORA: case PF__IF_NO_Q_LORA:
        *why = c->q_lora_rank ? "q is low-rank (q_lora_rank is set)" : "q is q_proj's (q_lora_rank is null)";
        return (c->q_lora_rank > 0) == (need == PF__IF_Q_LORA);
    case PF__POSITION_TABLE:
        *why = "the positions are learned";
        return pf__archs[c->arch].positions == PF__POS_LEARNED ? 1 : -2;
    case PF__IF_POSITION_BIASED:
        *why = c->position_biased_input ? "position_biased_input is true" : "position_biased_input is false";
        return c->position_biased_input;
    case PF__IF_TASK_ID:
        *why = c->use_task_id ? "use_task_id is true" : "use_task_id is false";
        return c->use_task_id;
    case PF__IF_SEPARATE_VOCAB:
        *why = c->shared_vocab ? "share_encoder_decoder_embeddings is true" : "share_encoder_decoder_embeddings is false";
        return !c->shared_vocab;
    case PF__IF_POS_PROJ:
        *why = !c->disentangled ? "the attention has no disentangled terms"
               : c->share_att_key ? "share_att_key is true" : "share_att_key is false";
        return c->disentangled && !c->share_att_key;
    case PF__IF_REL_EMBED_NORM:
        *why = c->rel_embed_norm ? "norm_rel_ebd names layer_norm" : "norm_rel_ebd does not name layer_norm";
        return c->rel_embed_norm;
    case PF__IF_DISTILLATION:
        *why = c->distillation ? "the family has a distillation token" : "the family has no distillation token";
        return c->distillation;
    case PF__IF_WITH_PROJECTION:
        *why = c->with_projection ? "the model has its projection (architectures names ...WithProjection, or the "
                                    "tower is part of a dual model)"
                                  : "architectures names the tower without its projection";
        return c->with_projection;
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
    int decoder; /* 1: a decoder's head (its score reads the last token, with no pooler) */
    pf__slot needs[4];
    int num_needs;
} pf__head_slots[] = {
    {PF_HEAD_MASKED_LM, 0, {PF__SLOT_HEAD_TRANSFORM_WEIGHT, PF__SLOT_HEAD_NORM_WEIGHT}, 2},
    {PF_HEAD_SEQUENCE_CLASSIFICATION, 0, {PF__SLOT_POOLER_WEIGHT, PF__SLOT_CLASSIFIER_WEIGHT}, 2},
    {PF_HEAD_SEQUENCE_CLASSIFICATION, 1, {PF__SLOT_CLASSIFIER_WEIGHT}, 1},
    {PF_HEAD_TOKEN_CLASSIFICATION, 1, {PF__SLOT_CLASSIFIER_WEIGHT}, 1},
    {PF_HEAD_QUESTION_ANSWERING, 1, {PF__SLOT_SPAN_WEIGHT}, 1},
    {PF_HEAD_TOKEN_CLASSIFICATION, 0, {PF__SLOT_CLASSIFIER_WEIGHT}, 1},
    {PF_HEAD_QUESTION_ANSWERING, 0, {PF__SLOT_SPAN_WEIGHT}, 1},
    {PF_HEAD_IMAGE_CLASSIFICATION, 0, {PF__SLOT_CLASSIFIER_WEIGHT}, 1},
    {PF_HEAD_REPLACED_TOKEN_DETECTION, 0, {PF__SLOT_DISCRIMINATOR_WEIGHT, PF__SLOT_DISCRIMINATOR_OUT_WEIGHT}, 2},
    {PF_HEAD_MULTIPLE_CHOICE, 0, {PF__SLOT_POOLER_WEIGHT, PF__SLOT_CLASSIFIER_WEIGHT}, 2},
    {PF_HEAD_NEXT_SENTENCE, 0, {PF__SLOT_POOLER_WEIGHT, PF__SLOT_NEXT_SENTENCE_WEIGHT}, 2},
    {PF_HEAD_TABLE_QUESTION_ANSWERING, 0, {PF__SLOT_POOLER_WEIGHT, PF__SLOT_CELL_SELECTION_WEIGHT, PF__SLOT_COLUMN_SELECTION_WEIGHT}, 3},
};
static const pf__slot pf__head_only_slots[] = {
    PF__SLOT_HEAD_TRANSFORM_WEIGHT, PF__SLOT_HEAD_TRANSFORM_BIAS, PF__SLOT_HEAD_NORM_WEIGHT, PF__SLOT_HEAD_NORM_BIAS,
    PF__SLOT_CLASSIFIER_WEIGHT, PF__SLOT_CLASSIFIER_BIAS, PF__SLOT_SPAN_WEIGHT, PF__SLOT_SPAN_BIAS,
    PF__SLOT_DIST_CLASSIFIER_WEIGHT, PF__SLOT_DIST_CLASSIFIER_BIAS, PF__SLOT_DISCRIMINATOR_WEIGHT,
    PF__SLOT_DISCRIMINATOR_BIAS, PF__SLOT_DISCRIMINATOR_OUT_WEIGHT, PF__SLOT_DISCRIMINATOR_OUT_BIAS,
    PF__SLOT_NEXT_SENTENCE_WEIGHT, PF__SLOT_NEXT_SENTENCE_BIAS, PF__SLOT_CLASSIFIER_DENSE_WEIGHT,
    PF__SLOT_CLASSIFIER_DENSE_BIAS, PF__SLOT_CELL_SELECTION_WEIGHT, PF__SLOT_CELL_SELECTION_BIAS,
    PF__SLOT_COLUMN_SELECTION_WEIGHT, PF__SLOT_COLUMN_SELECTION_BIAS, PF__SLOT_AGGREGATION_WEIGHT, PF__SLOT_AGGREGATION_BIAS,
    PF__SLOT_ANSWER_DENSE_WEIGHT, PF__SLOT_ANSWER_DENSE_BIAS, PF__SLOT_ANSWER_NORM_WEIGHT, PF__SLOT_ANSWER_NORM_BIAS,
};

PF_PRIVATE const char *pf__head_name(pf_head head) {
    switch (head) {
    case PF_HEAD_NONE: return "the bare encoder";
    case PF_HEAD_CAUSAL_LM: return "a causal LM";
    case PF_HEAD_MASKED_LM: return "a masked LM";
    case PF_HEAD_SEQUENCE_CLASSIFICATION: return "sequence classification";
    case PF_HEAD_TOKEN_CLASSIFICATION: return "token classification";
    case PF_HEAD_QUESTION_ANSWERING: return "question answering";
    case PF_HEAD_IMAGE_CLASSIFICATION: return "image classification";
    case PF_HEAD_CTC: return "CTC";
    case PF_HEAD_REPLACED_TOKEN_DETECTION: return "replaced-token detection";
    case PF_HEAD_MULTIPLE_CHOICE: return "multiple choice";
    case PF_HEAD_NEXT_SENTENCE: return "next-sentence prediction";
    case PF_HEAD_TABLE_QUESTION_ANSWERING: return "table question answering";
    }
    return "?";
}

/* PF_OK for a model that generates (a causal LM head), else its refusal. */
PF_PRIVATE pf_result pf__check_generates(pf_model *m) {
    const pf__config *c = &m->config;
    if (c->head == PF_HEAD_CAUSAL_LM) return PF_OK;
    if (pf__archs[c->arch].kind == PF__KIND_ENCODER || (pf__archs[c->arch].kind == PF__KIND_SEQ2SEQ && !c->decoder_layers))
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "model_type \"%s\" is an encoder: it does not generate (pf_encode runs it)",
                        c->model_type);
    return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "%s: config.json's architectures names %s, not a causal LM: it does not "
                    "generate (pf_encode runs it)", c->model_type,
                    c->head == PF_HEAD_NONE ? "the bare model" : pf__head_name(c->head));
}

PF_PRIVATE pf_result pf__check_head_slots(pf_model *m) {
    pf__config *c = &m->config;
    const struct pf__head_slots *mine = NULL;
    int decoder = pf__archs[c->arch].kind == PF__KIND_DECODER;
    for (size_t i = 0; i < PF__COUNT(pf__head_slots); i++)
        if (pf__head_slots[i].head == c->head && pf__head_slots[i].decoder == decoder) mine = &pf__head_slots[i];
    /* ConvBERT's multiple choice: a classifier on the last token's state, no pooler */
    static const struct pf__head_slots last_token_choice = {PF_HEAD_MULTIPLE_CHOICE, 0, {PF__SLOT_CLASSIFIER_WEIGHT}, 1};
    if (c->head == PF_HEAD_MULTIPLE_CHOICE && c->choice_pool_last) mine = &last_token_choice;
    /* XLM's: the masked LM a bare projection (its bias: the weight is tied), classification one
       projection of the first token's state */
    static const struct pf__head_slots projection_lm = {PF_HEAD_MASKED_LM, 0, {PF__SLOT_LM_HEAD_BIAS}, 1};
    static const struct pf__head_slots first_token_class = {PF_HEAD_SEQUENCE_CLASSIFICATION, 0, {PF__SLOT_CLASSIFIER_WEIGHT}, 1};
    if ((c->summary_heads || c->funnel) && c->head == PF_HEAD_MASKED_LM) mine = &projection_lm; /* Funnel's too */
    if (c->summary_heads && c->head == PF_HEAD_SEQUENCE_CLASSIFICATION) mine = &first_token_class;
    /* LXMERT's answer head: dense, norm and classifier on the pooled output */
    static const struct pf__head_slots answer_head = {
        PF_HEAD_SEQUENCE_CLASSIFICATION, 0,
        {PF__SLOT_POOLER_WEIGHT, PF__SLOT_ANSWER_DENSE_WEIGHT, PF__SLOT_ANSWER_NORM_WEIGHT, PF__SLOT_CLASSIFIER_WEIGHT}, 4};
    if (c->two_streams && c->head == PF_HEAD_SEQUENCE_CLASSIFICATION) mine = &answer_head;
    /* XLM's language table: there exactly when n_langs > 1 and use_lang_emb, as transformers builds it */
    int languages = c->types_are_languages && c->type_vocab_size > 1 && c->use_lang_emb;
    if (c->types_are_languages && languages != (m->sources[PF__SLOT_TOKEN_TYPE_EMBED].data != NULL))
        return PF__FAIL(m, PF_ERROR_FORMAT, "%s: tensor '%s' is %s, but n_langs is %d and use_lang_emb %d", m->dir,
                        pf__arch_tensor_for(c->arch, PF__SLOT_TOKEN_TYPE_EMBED)->pattern, languages ? "missing" : "present",
                        c->type_vocab_size, c->use_lang_emb);
    int present = 0;
    for (int i = 0; mine && i < mine->num_needs; i++) present += m->sources[mine->needs[i]].data != NULL;
    if (mine && !present && pf__archs[c->arch].kind == PF__KIND_ENCODER && !c->teacher_head) {
        /* the bare encoder under a head's name (all-mpnet-base-v2 names MPNetForMaskedLM):
           transformers' AutoModel and sentence-transformers load it as the bare model */
        pf__log(m, PF_LOG_INFO, "config.json's architectures names %s, but the checkpoint holds none of its tensors: "
                "loaded as the bare encoder, as transformers' AutoModel loads it", pf__head_name(c->head));
        c->head = PF_HEAD_NONE;
        mine = NULL;
    }
    for (int i = 0; mine && i < mine->num_needs; i++) {
        const pf__arch_tensor *t = pf__arch_tensor_for(c->arch, mine->needs[i]);
        if (!m->sources[mine->needs[i]].data)
            return PF__FAIL(m, PF_ERROR_FORMAT, "%s: config.json's architectures names %s, but tensor '%s' is missing",
                            m->dir, pf__head_name(c->head), t ? t->pattern : "?");
    }
    if (c->head == PF_HEAD_MASKED_LM && m->sources[PF__SLOT_NEXT_SENTENCE_WEIGHT].data) {
        /* pretraining's next-sentence head beside the masked LM (bert-base-uncased names
           BertForMaskedLM and ships both): unused, as transformers leaves it */
        pf__log(m, PF_LOG_INFO, "the checkpoint's next-sentence head (%s) is not used by %s, as transformers leaves it",
                pf__arch_tensor_for(c->arch, PF__SLOT_NEXT_SENTENCE_WEIGHT)->pattern, pf__head_name(c->head));
        m->sources[PF__SLOT_NEXT_SENTENCE_WEIGHT].data = m->sources[PF__SLOT_NEXT_SENTENCE_BIAS].data = NULL;
    }
    if (c->teacher_head && !m->sources[PF__SLOT_DIST_CLASSIFIER_WEIGHT].data)
        return PF__FAIL(m, PF_ERROR_FORMAT, "%s: config.json's architectures names a head with teacher, but the "
                        "distillation classifier is missing", m->dir);
    if (c->head == PF_HEAD_TABLE_QUESTION_ANSWERING &&
        (c->num_aggregation_labels > 0) != (m->sources[PF__SLOT_AGGREGATION_WEIGHT].data != NULL))
        return PF__FAIL(m, PF_ERROR_FORMAT, "%s: tensor '%s' is %s, but num_aggregation_labels is %d", m->dir,
                        pf__arch_tensor_for(c->arch, PF__SLOT_AGGREGATION_WEIGHT)->pattern,
                        c->num_aggregation_labels > 0 ? "missing" : "present", c->num_aggregation_labels);
    for (size_t i = 0; i < PF__COUNT(pf__head_only_slots); i++) {
        pf__slot slot = pf__head_only_slots[i];
        int used = 0;
        for (int j = 0; mine && j < mine->num_needs; j++)
            used |= mine->needs[j] == slot || mine->needs[j] + 1 == slot; /* a weight's bias follows it */
        if (slot == PF__SLOT_DIST_CLASSIFIER_WEIGHT || slot == PF__SLOT_DIST_CLASSIFIER_BIAS) used = c->teacher_head;
        if (slot == PF__SLOT_CLASSIFIER_DENSE_WEIGHT || slot == PF__SLOT_CLASSIFIER_DENSE_BIAS)
            used = c->head == PF_HEAD_SEQUENCE_CLASSIFICATION; /* BigBird's, beside its pooler */
        if (slot == PF__SLOT_AGGREGATION_WEIGHT || slot == PF__SLOT_AGGREGATION_BIAS)
            used = c->head == PF_HEAD_TABLE_QUESTION_ANSWERING; /* TAPAS's, with num_aggregation_labels (below) */
        if (slot >= PF__SLOT_HEAD_TRANSFORM_WEIGHT && slot <= PF__SLOT_HEAD_NORM_BIAS && c->head == PF_HEAD_CAUSAL_LM &&
            pf__archs[c->arch].kind == PF__KIND_SEQ2SEQ)
            used = 1; /* a BERT decoder's LM head transforms its states first (its row requires the tensors) */
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
/* Row t's tensor name for layer `layer`: its pattern (a second %d: `expert`), or with
   PF__LAYOUT_PER_EXPERT (PER_HEAD) the part-th of its '|'-separated parts for expert (head)
   `expert` (the pattern's second %d). */
PF_PRIVATE void pf__pattern_name(char *out, size_t size, const pf__arch_tensor *t, int layer, int expert, int part) {
    if (t->layout != PF__LAYOUT_PER_EXPERT && t->layout != PF__LAYOUT_PER_HEAD) {
        snprintf(out, size, t->pattern, layer, expert);
        return;
    }
    const char *begin = t->pattern;
    for (int k = 0; k < part && strchr(begin, '|'); k++) begin = strchr(begin, '|') + 1;
    const char *end = strchr(begin, '|');
    char one[256];
    size_t n = end ? (size_t)(end - begin) : strlen(begin);
    if (n >= sizeof one) n = sizeof one - 1;
    memcpy(one, begin, n);
    one[n] = 0;
    snprintf(out, size, one, layer, expert);
}

/* Whether pattern names one of the family's buffers (tensors a checkpoint may carry as copies). */
PF_PRIVATE int pf__is_buffer(const pf__policy_rows *rows, pf__arch_id arch, const char *pattern) {
    for (size_t i = 0; i < rows->num_buffers; i++)
        if (rows->buffers[i].arch == arch && !strcmp(rows->buffers[i].pattern, pattern)) return 1;
    return 0;
}

/* LXMERT's per-layer rows by the group of blocks their pattern names (policies.inc's LXMERT block):
   0 the language layers, 1 the relation layers, 2 a cross-modality layer's language side (its
   cross-attention too), 3 its vision side. */
static int pf__stream_group_of(const char *pattern) {
    if (!strncmp(pattern, "encoder.r_layers.", 17)) return 1;
    if (!strncmp(pattern, "encoder.x_layers.", 17)) return strstr(pattern, ".visn_") ? 3 : 2;
    return 0;
}

/* Block l's group (as pf__stream_group_of's) and its layer there: the two sides of a
   cross-modality layer are consecutive blocks of one layer. */
static int pf__stream_group(const pf__config *c, int l, int *index) {
    int first_cross = c->language_layers + c->relation_layers;
    if (l < c->language_layers) return *index = l, 0;
    if (l < first_cross) return *index = l - c->language_layers, 1;
    *index = (l - first_cross) / 2;
    return 2 + (l - first_cross) % 2;
}

PF_PRIVATE const pf__st_tensor *pf__take_slot(pf_model *m, const char *prefix, pf__slot slot, int layer,
                                          const pf__arch_tensor **row, char *name, size_t name_size,
                                          const pf__st_tensor **other) {
    const pf__st_tensor *found = NULL;
    /* an encoder-decoder's encoder blocks come first, each tower counting its own from 0 */
    int encoder = slot >= PF__SLOT_FIRST_LAYER && layer < m->config.encoder_layers;
    int index = encoder || slot < PF__SLOT_FIRST_LAYER ? layer : layer - m->config.encoder_layers;
    int group = m->config.two_streams && slot >= PF__SLOT_FIRST_LAYER ? pf__stream_group(&m->config, layer, &index) : -1;
    *row = NULL;
    *other = NULL;
    const pf__policy_rows *rows = pf__rows(m->config.arch);
    for (size_t i = 0; i < rows->num_tensors && !*other; i++) {
        const pf__arch_tensor *t = &rows->tensors[i];
        char pattern[256], full[300];
        if (t->arch != m->config.arch || t->slot != slot || t->encoder != encoder) continue;
        if (group >= 0 && pf__stream_group_of(t->pattern) != group) continue; /* another group's blocks */
        const char *key = NULL, *why = NULL;
        if (!pf__need_follows_layer(t->need) && pf__need_by_config(&m->config, t->need, &key, &why) == 0 &&
            pf__is_buffer(rows, m->config.arch, t->pattern))
            continue; /* a spelling the config rules out that is also a copy of another: the buffers take it */
        /* a pattern of two %d (Funnel's blocks.B.L): the layer's block and its place in it; Funnel's
           one-%d patterns name its decoder's layers, counted from 0 after the blocks' (XLNet's, its
           one block's layers) */
        const char *second = strstr(t->pattern, "%d");
        int pieces = t->layout == PF__LAYOUT_PER_EXPERT || t->layout == PF__LAYOUT_PER_HEAD; /* their second %d: the piece's */
        int block = 0, place = index, blocks_pattern = !pieces && second && strstr(second + 2, "%d") != NULL;
        for (int b = 0; b < m->config.funnel_blocks && place >= m->config.funnel_block_sizes[b]; b++)
            place -= m->config.funnel_block_sizes[b], block = b + 1;
        int decoder_pattern = m->config.funnel_blocks && !m->config.xlnet && slot >= PF__SLOT_FIRST_LAYER && second &&
                              !blocks_pattern;
        if (decoder_pattern && block < m->config.funnel_blocks) continue; /* a block's layer */
        if (blocks_pattern && m->config.funnel_blocks && block >= m->config.funnel_blocks) continue; /* the decoder's */
        if (blocks_pattern) pf__pattern_name(pattern, sizeof pattern, t, block, place, 0);
        else pf__pattern_name(pattern, sizeof pattern, t, decoder_pattern ? place : index, 0, 0);
        snprintf(full, sizeof full, "%s%s", prefix, pattern);
        const pf__st_tensor *st = pf__take_prefixed(m, prefix, pattern);
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
PF_PRIVATE pf_result pf__scale_source(pf_model *m, pf__slot slot, float scale) {
    pf__source *src = &m->sources[slot];
    size_t n = src->rows * src->cols / (src->groups > 1 ? src->groups : 1); /* the file's values */
    if (!src->data) return PF_OK;
    if (m->num_scaled == PF__COUNT(m->scaled)) return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "too many scaled tensors");
    float *copy = (float *)malloc(n * sizeof(float));
    if (!copy) return PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    for (size_t row = 0; src->packed && row < src->rows; row++) /* [out, in]: decoded row by row */
        pf__packed_row_run(src->packed, row, 0, src->cols, copy + row * src->cols);
    for (size_t i = 0; i < n; i++) copy[i] = (src->packed ? copy[i] : pf__weight_value(src->data, i, src->dtype)) * scale;
    m->scaled[m->num_scaled++] = copy;
    src->data = (const uint8_t *)copy;
    src->dtype = PF__DTYPE_F32; /* the layout stays: the copy keeps the file's order */
    src->packed = NULL;
    return PF_OK;
}

/* T5's decoder output times hidden^-0.5 before the LM head, folded into the final norm's weight:
   the norm's output is scaled by it, which the logits of every backend then inherit. */
PF_PRIVATE pf_result pf__scale_final_norm(pf_model *m) {
    if (!m->sources[PF__SLOT_FINAL_NORM_WEIGHT].data || m->sources[PF__SLOT_FINAL_NORM_BIAS].data)
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "%s: scale_decoder_outputs needs a final norm without bias", m->dir);
    return pf__scale_source(m, PF__SLOT_FINAL_NORM_WEIGHT, 1.0f / sqrtf((float)m->config.hidden_size));
}

void pf_string_free(char *text) { free(text); }

pf_tokenizer *pf_model_tokenizer(pf_model *m) { return m ? m->tokenizer : NULL; }
