#include "internal.h"
/* Requests on a model that was never parallelized run on one CPU rank. */
PF_PRIVATE pf_result pf__ensure_group(pf_model *m) {
    if (!m->loaded) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "the model did not load");
    if (m->towers[0])
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "model_type \"%s\" is a dual encoder: pf_encode runs its texts, "
                        "pf_encode_images its images, pf_image_text_logits both", m->config.model_type);
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

PF_PRIVATE pf_result pf__check_ids(pf_model *m, const int32_t *ids, size_t n) {
    return pf__check_ids_below(m, ids, n, m->config.vocab_size);
}

/* An encoder-decoder's source ids: its encoder's vocabulary (FSMT's src_vocab_size). */
static pf_result pf__check_source_ids(pf_model *m, const int32_t *ids, size_t n) {
    if (m->config.conv_subsampler)
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "model_type \"%s\"'s encoder takes filter-bank features, not token ids "
                        "(pf_encode_audio_features, pf_forward_audio, pf_generate_audio)", m->config.model_type);
    return pf__check_ids_below(m, ids, n, m->config.src_vocab_size ? m->config.src_vocab_size : m->config.vocab_size);
}

/* YaRN's frequency i of the rotary dims, pos_freq = base^(2i / dim) in fp32: between 1 / pos_freq
   (extrapolated, the fast dims) and 1 / (factor pos_freq) (interpolated, the slow ones), with a
   linear ramp over the dims whose number of rotations within the pretraining length lies between
   beta_slow and beta_fast (transformers' find_correction_range, in double; the ramp in fp32). */
static float pf__yarn_frequency(const pf__config *c, int i, float pos_freq) {
    int dim = c->rotary_dim;
    double base = c->rope_theta, original = c->rope_original_max_positions, pi = 3.14159265358979323846;
    double low = dim * log(original / (c->rope_beta_fast * 2 * pi)) / (2 * log(base));
    double high = dim * log(original / (c->rope_beta_slow * 2 * pi)) / (2 * log(base));
    if (c->rope_truncate) low = floor(low), high = ceil(high);
    if (low < 0) low = 0;
    if (high > dim - 1) high = dim - 1;
    if (low == high) high += 0.001; /* transformers' guard against a zero-width ramp */
    float ramp = ((float)i - (float)low) / (float)(high - low);
    ramp = ramp < 0 ? 0 : ramp > 1 ? 1 : ramp;
    float extrapolation = 1 - ramp; /* the share of the unscaled frequency */
    float extrapolated = 1.0f / pos_freq, interpolated = 1.0f / ((float)c->rope_factor * pos_freq);
    return interpolated * (1 - extrapolation) + extrapolated * extrapolation;
}

/* The rotary frequencies for a step whose sequences reach `length` tokens, as transformers
   computes them (fp32), or NULL without rotary positions. Dynamic scaling follows transformers
   within one request (the frequencies grow with the longest sequence seen, and reset below the
   original length); each request starts afresh (pf__rope_reset), so a call's result does not
   depend on earlier calls, as it would on a reused transformers model. */
PF_PRIVATE const float *pf__rope_frequencies(pf_model *m, int length) {
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
        } else if (c->rope_type == PF__ROPE_LONGROPE) { /* the long factors once the sequence outgrows pretraining */
            const float *ext = length > c->rope_original_max_positions ? c->rope_long_factor : c->rope_short_factor;
            f = 1.0f / (ext[i] * powf((float)base, (float)(2 * i) / (float)dim));
        } else if (c->rope_type == PF__ROPE_YARN) {
            f = pf__yarn_frequency(c, i, powf((float)base, (float)(2 * i) / (float)dim));
        }
        m->inv_freq[i] = f;
    }
    for (int i = 0; c->rope_local_theta > 0 && i < dim / 2; i++) /* the local layers': plain, their own base */
        m->inv_freq[dim / 2 + i] = 1.0f / powf((float)c->rope_local_theta, (float)(2 * i) / (float)dim);
    return m->inv_freq;
}

PF_PRIVATE void pf__rope_reset(pf_model *m) { m->rope_cached_len = m->config.max_positions; }

/* What some encoders take beside ids and token types, each NULL for none (the struct itself too). */
typedef struct pf__encode_extras {
    const int32_t *const *boxes;  /* pf_encode_layout's: 4 values a token (NULL, or a row's NULL: all zero) */
    const int32_t *const *global; /* pf_encode_global's: 0 or 1 a token (NULL, or a row's NULL: the head's default) */
    const float *const *regions;  /* pf_encode_regions': num_regions[b] x visual_embedding_dim floats a row */
    const float *const *boxes_of_regions; /* pf_encode_region_boxes': num_regions[b] x visual_pos_dim floats a row */
    const int *num_regions;       /* NULL: no row has regions */
    const int32_t *const *entity_ids;       /* pf_encode_entities': num_entities[b] entity ids a row */
    const int32_t *const *entity_positions; /* num_entities[b] x mention_length word positions a row, -1 after a
                                               mention's last */
    const int *num_entities;                /* NULL: no row has entities */
    int mention_length;
    const int32_t *const *table_types; /* pf_encode_table's: PF__TABLE_TYPES values a token (NULL, or a row's
                                          NULL: all zero; then the segment is the token types') */
} pf__encode_extras;

static pf_result pf__encode_locked(pf_model *m, const int32_t *const *ids, const int32_t *const *types,
                                   const pf__encode_extras *extras, const int *lengths, int batch, pf_encoding **out);

static pf_result pf__forward_locked(pf_model *m, const int32_t *ids, int batch, int seq_len, float *logits) {
    if (!ids || !logits || batch < 1 || seq_len < 1)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "pf_forward needs ids, logits, batch >= 1 and seq_len >= 1");
    pf_result r = pf__ensure_group(m);
    if (r) return r;
    if (m->config.head != PF_HEAD_CAUSAL_LM && m->config.head != PF_HEAD_MASKED_LM)
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "pf_forward gives vocabulary logits; this model computes %s (pf_encode runs it)",
                        m->config.head == PF_HEAD_NONE ? "hidden states alone (the bare model)" : pf__head_name(m->config.head));
    if (m->config.xlnet) /* its logits come from the query stream at the position after the tokens */
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "XLNetLMHeadModel's logits predict the token after a prompt through its "
                        "query stream: pf_generate runs it (pf_encode gives its hidden states)");
    if (pf__archs[m->config.arch].kind == PF__KIND_SEQ2SEQ)
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "model_type \"%s\" is an encoder-decoder: %s gives its logits for a "
                        "source and decoder inputs", m->config.model_type,
                        m->config.mel_frontend || m->config.conv_subsampler ? "pf_forward_audio" : "pf_forward_seq2seq");
    const pf__group *g = m->group;
    if (batch > g->max_batch || seq_len > g->cache_len) /* before the rows are set up or read */
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT,
                        "batch %d x length %d exceeds what pf_parallelize sized (max_batch %d, max_sequence_length %d)",
                        batch, seq_len, g->max_batch, g->cache_len);
    if (m->config.head == PF_HEAD_MASKED_LM) { /* rows of equal length: the encoding's logits are the array */
        pf_encoding *e = NULL;
        const int32_t **rows = (const int32_t **)malloc((size_t)batch * sizeof *rows);
        int *lengths = (int *)malloc((size_t)batch * sizeof(int));
        r = rows && lengths ? PF_OK : PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
        for (int b = 0; !r && b < batch; b++) {
            rows[b] = ids + (size_t)b * seq_len;
            lengths[b] = seq_len;
        }
        if (!r) r = pf__encode_locked(m, rows, NULL, NULL, lengths, batch, &e);
        if (!r) memcpy(logits, e->logits, (size_t)batch * seq_len * m->config.vocab_size * sizeof(float));
        pf_encoding_free(e);
        free(rows), free(lengths);
        return r;
    }
    if ((r = pf__check_ids(m, ids, (size_t)batch * seq_len))) return r;
    pf__rope_reset(m);
    pf__job job = {.step = {.ids = ids, .batch = batch, .seq_len = seq_len, .inv_freq = pf__rope_frequencies(m, seq_len)},
                   .logits = logits,
                   .all_positions = 1};
    return pf__forward_in_chunks(m, &job);
}

void pf_encoding_free(pf_encoding *e) {
    if (!e) return;
    free(e->offsets);
    free(e->last_hidden_state);
    free(e->pooled);
    free(e->embeds);
    free(e->doc_embeds);
    free(e->logits);
    free(e->aggregation_logits);
    free(e);
}

/* The pooled output and the projection of an encoding, where the model has them. */
/* Whether the head pools each row's last token (ConvBERT's multiple choice; XLNet's
   SequenceSummary under classification and multiple choice). */
static int pf__choice_pools_last(const pf__config *c) {
    return (c->choice_pool_last && c->head == PF_HEAD_MULTIPLE_CHOICE) ||
           (c->summary_last && (c->head == PF_HEAD_SEQUENCE_CLASSIFICATION || c->head == PF_HEAD_MULTIPLE_CHOICE));
}

static pf_result pf__encoding_pooled(pf_model *m, pf_encoding *e, int batch) {
    const pf__config *c = &m->config;
    int pools = m->sources[PF__SLOT_POOLER_WEIGHT].data || m->sources[PF__SLOT_POOLER_NORM_WEIGHT].data ||
                c->pool_eos_id >= 0 || c->pool_first_token || pf__choice_pools_last(c);
    if (pools) e->pooled = (float *)malloc((size_t)batch * c->hidden_size * sizeof(float));
    if (m->sources[PF__SLOT_PROJECTION].data) {
        e->projection_dim = c->projection_dim;
        e->embeds = (float *)malloc((size_t)batch * c->projection_dim * sizeof(float));
    }
    if (m->sources[PF__SLOT_DOC_PROJECTION].data &&
        !(e->doc_embeds = (float *)malloc((size_t)batch * c->projection_dim * sizeof(float))))
        return PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    if ((pools && !e->pooled) || (e->projection_dim && !e->embeds)) return PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    return PF_OK;
}

/* The token CLIP's text tower pools, as transformers picks it: the first of the end-of-text id,
   or (eos_token_id 2, configs before transformers 4.31) the first of the row's largest id; the
   first token when the row has no end-of-text. */
static int pf__eos_position(const pf__config *c, const int32_t *ids, int length) {
    int at = 0;
    for (int t = 0; t < length; t++) {
        if (c->pool_eos_id == 2 ? ids[t] > ids[at] : ids[t] == c->pool_eos_id) {
            at = t;
            if (c->pool_eos_id != 2) break;
        }
    }
    return c->pool_eos_id != 2 && (length < 1 || ids[at] != c->pool_eos_id) ? 0 : at;
}

/* The token a decoder's sequence-classification head scores, as transformers picks it: the row's
   last that is not pad_token_id (the first when every token is), or the last without a pad id. */
static int pf__score_position(const pf__config *c, const int32_t *ids, int length) {
    if (c->pad_token_id < 0) return length - 1;
    for (int t = length - 1; t > 0; t--)
        if (ids[t] != c->pad_token_id) return t;
    return 0;
}

/* The position of a row's last eos token (config.json's eos_token_id), where an encoder-decoder's
   sequence classifier reads its decoder's state (BartForSequenceClassification); -1 for none. */
static int pf__last_eos_position(const pf__config *c, const int32_t *ids, int length) {
    for (int t = length - 1; c->num_eos_ids > 0 && t >= 0; t--)
        if (ids[t] == c->eos_ids[0]) return t;
    return -1;
}

/* An encoder-decoder's task head after its encoder pass over sources [batch][width] (left pads):
   its decoder over the sources shifted right behind decoder_start_token_id (transformers' default
   decoder inputs for these heads), then the head on the decoder's last states: scores of each
   row's token pool_at (from its first real token) through the pooler, or span logits per token. */
static pf_result pf__seq2seq_head(pf_model *m, const int32_t *sources, const int *pads, int batch, int width,
                                  const int *pool_at, float *pooled, float *logits) {
    const pf__config *c = &m->config;
    if (c->decoder_start_token_id < 0)
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "%s: config.json names no decoder_start_token_id", c->class_name);
    size_t B = (size_t)batch, T = (size_t)width;
    int32_t *shifted = (int32_t *)calloc(B * T, sizeof(int32_t));
    float *states = (float *)malloc(B * T * (size_t)c->hidden_size * sizeof(float));
    pf_result r = shifted && states ? PF_OK : PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    for (size_t b = 0; !r && b < B; b++) {
        size_t first = b * T + (size_t)pads[b];
        shifted[first] = (int32_t)c->decoder_start_token_id;
        memcpy(shifted + first + 1, sources + first, (T - (size_t)pads[b] - 1) * sizeof(int32_t));
    }
    if (!r) {
        pf__job job = {.step = {.ids = shifted, .batch = batch, .seq_len = width, .pad = pads, .cross_len = width,
                                .cross_pad = pads, .inv_freq = pf__rope_frequencies(m, width)},
                       .all_positions = 1,
                       .hidden = states,
                       .pooled = pooled,
                       .pool_at = pool_at,
                       .logits = logits};
        r = pf__group_run(m->group, PF__JOB_FORWARD, &job);
    }
    free(shifted), free(states);
    return r;
}

/* A decoder's encoding (job: its left-padded rows, job->pool_at the scored token's column in
   them or NULL) in chunks of the positions the ranks' scratch holds, as pf__forward_in_chunks
   runs a prompt: each chunk's hidden states into their columns of job->hidden, each row's scores
   from the chunk that holds its scored token. */
static pf_result pf__encode_decoder_in_chunks(pf_model *m, const pf__job *job) {
    const pf__config *c = &m->config;
    const pf__step *s = &job->step;
    size_t B = (size_t)s->batch, T = (size_t)s->seq_len, d = (size_t)c->hidden_size;
    size_t per_chunk = m->group->max_tokens / B < T ? m->group->max_tokens / B : T;
    size_t token_logits = !job->logits ? 0 : c->head == PF_HEAD_TOKEN_CLASSIFICATION ? (size_t)c->num_labels
                          : c->head == PF_HEAD_QUESTION_ANSWERING ? 2 : 0; /* a head's logits per position */
    int32_t *ids = (int32_t *)malloc(B * per_chunk * sizeof(int32_t));
    float *hidden = (float *)malloc(B * per_chunk * d * sizeof(float));
    float *logits = token_logits ? (float *)malloc(B * per_chunk * token_logits * sizeof(float)) : NULL;
    int *pool_at = (int *)malloc(B * sizeof(int));
    pf_result r = ids && hidden && pool_at && (logits || !token_logits) ? PF_OK
                                                                        : PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    for (size_t first = 0; !r && first < T; first += per_chunk) {
        size_t len = T - first < per_chunk ? T - first : per_chunk;
        pf__job chunk = *job;
        for (size_t b = 0; b < B; b++) {
            memcpy(ids + b * len, s->ids + b * T + first, len * sizeof(int32_t));
            if (job->pool_at)
                pool_at[b] = (size_t)job->pool_at[b] >= first && (size_t)job->pool_at[b] < first + len
                                 ? job->pool_at[b] - (int)first : -1;
        }
        chunk.step.ids = ids;
        chunk.step.type_ids = NULL; /* refused above: a decoder has none */
        chunk.step.seq_len = (int)len;
        chunk.step.past = s->past + (int)first;
        chunk.step.segment_before = s->segment_before + (int)first; /* Transformer-XL: one segment still */
        chunk.hidden = hidden;
        chunk.pool_at = job->pool_at ? pool_at : NULL;
        if (logits) chunk.logits = logits;
        r = pf__group_run(m->group, PF__JOB_FORWARD, &chunk);
        for (size_t b = 0; !r && b < B; b++) { /* [batch][len] rows into [batch][seq_len] */
            memcpy(job->hidden + (b * T + first) * d, hidden + b * len * d, len * d * sizeof(float));
            if (logits)
                memcpy(job->logits + (b * T + first) * token_logits, logits + b * len * token_logits,
                       len * token_logits * sizeof(float));
        }
    }
    free(ids), free(hidden), free(logits), free(pool_at);
    return r;
}

/* Row b's boxes (x0, y0, x1, y1 per token) against the 2-D position tables' rows: each coordinate,
   width and height within 0 .. max_2d_positions - 1 (transformers' lookups fail on any other). */
static pf_result pf__check_boxes(pf_model *m, const int32_t *boxes, int b, int length) {
    int most = m->config.max_2d_positions - 1;
    for (int t = 0; t < length; t++) {
        const int32_t *box = boxes + 4 * (size_t)t;
        int inside = 1;
        for (int k = 0; k < 4; k++) inside &= box[k] >= 0 && box[k] <= most;
        if (!inside || box[2] < box[0] || box[3] < box[1])
            return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "row %d, token %d: box (%d, %d, %d, %d) is not x0 <= x1 and "
                            "y0 <= y1 within 0..%d (max_2d_position_embeddings - 1)", b, t, (int)box[0], (int)box[1],
                            (int)box[2], (int)box[3], most);
    }
    return PF_OK;
}

/* Row b's rows of the 2-D position tables at its padded place (PF__BOX_LOOKUPS arrays of N). */
static void pf__box_rows(int32_t *rows, size_t N, size_t first, const int32_t *boxes, int length) {
    for (int t = 0; t < length; t++) {
        const int32_t *box = boxes + 4 * (size_t)t;
        int32_t values[PF__BOX_LOOKUPS] = {box[0], box[1], box[2], box[3], box[3] - box[1], box[2] - box[0]};
        for (int k = 0; k < PF__BOX_LOOKUPS; k++) rows[(size_t)k * N + first + (size_t)t] = values[k];
    }
}

static const char *const pf__table_type_names[PF__TABLE_TYPES] = {
    "segment", "column", "row", "previous label", "column rank", "inverse column rank", "numeric relation"};

/* Row b's table types (PF__TABLE_TYPES a token): each within its table (type_vocab_sizes). */
static pf_result pf__check_table_types(pf_model *m, const int32_t *types, int b, int length) {
    const int *sizes = m->config.table_type_sizes;
    for (int t = 0; t < length; t++)
        for (int k = 0; k < PF__TABLE_TYPES; k++) {
            int32_t v = types[(size_t)t * PF__TABLE_TYPES + (size_t)k];
            if (v < 0 || v >= sizes[k])
                return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "row %d, token %d: table type %d (%s) %d is outside 0..%d "
                                "(type_vocab_sizes)", b, t, k, pf__table_type_names[k], (int)v, sizes[k] - 1);
        }
    return PF_OK;
}

/* Row b's table rows (pf__step.table_rows, arrays of N) at its padded place first: each token's
   position, from the first token of its cell (its column and row ids) where reset_positions_per_cell,
   else from the row's start, at most max_positions - 1 (as transformers' TapasEmbeddings), then its
   types 1 .. 6; segments (type 0) into segments[length]. types NULL: all 0. */
static void pf__table_rows(const pf__config *c, int32_t *rows, size_t N, size_t first, int32_t *segments,
                           const int32_t *types, int length) {
    size_t K = PF__TABLE_TYPES;
    for (int t = 0; t < length; t++) {
        int cell_start = 0; /* all types 0: one cell, the row's start */
        if (types && c->reset_positions_per_cell) {
            const int32_t *own = types + (size_t)t * K;
            cell_start = t;
            for (int u = 0; u < t; u++)
                if (types[(size_t)u * K + 1] == own[1] && types[(size_t)u * K + 2] == own[2]) {
                    cell_start = u;
                    break;
                }
        }
        int position = t - cell_start, most = c->max_positions - 1;
        rows[first + (size_t)t] = position < most ? position : most;
        for (size_t k = 1; k < K; k++) rows[k * N + first + (size_t)t] = types ? types[(size_t)t * K + k] : 0;
        if (types) segments[t] = types[(size_t)t * K];
    }
}

/* TapasForQuestionAnswering's logits from e's states, each row's tokens alone (transformers'
   forward without labels on that row): a token's cell logit is the mean over its cell (the tokens
   of its clamped row and column ids) of (state . output_weights + output_bias) / temperature; the
   column chosen is the one whose cells' mean logits (state . column_output_weights +
   column_output_bias, averaged per cell, then over the column's cells) are highest, a column
   without cells and, unless allow_empty_column_selection, column 0 taking 10000 less; a token
   keeps its cell's logit in that column (not column 0) and takes 10000 less elsewhere, in float as
   transformers adds it. The aggregation logits: aggregation_classifier on the pooled output. */
#define PF__TAPAS_LOG_ZERO (-10000.0f) /* transformers' CLOSE_ENOUGH_TO_LOG_ZERO */
static pf_result pf__table_head(pf_model *m, pf_encoding *e, const int32_t *const *table_types, const int *lengths) {
    const pf__config *c = &m->config;
    const pf__source *w = &m->sources[PF__SLOT_CELL_SELECTION_WEIGHT], *wb = &m->sources[PF__SLOT_CELL_SELECTION_BIAS];
    const pf__source *v = &m->sources[PF__SLOT_COLUMN_SELECTION_WEIGHT], *vb = &m->sources[PF__SLOT_COLUMN_SELECTION_BIAS];
    const pf__source *agg = &m->sources[PF__SLOT_AGGREGATION_WEIGHT], *agg_b = &m->sources[PF__SLOT_AGGREGATION_BIAS];
    size_t d = (size_t)e->hidden_size, A = (size_t)c->num_aggregation_labels, C = (size_t)c->max_table_columns;
    size_t most = 0;
    for (int b = 0; b < e->batch; b++) most = (size_t)lengths[b] > most ? (size_t)lengths[b] : most;
    /* per token its cell; per cell its key, token count and logit sums; per column its logit */
    size_t *cell_of = (size_t *)malloc(most * sizeof(size_t)), *cell_key = (size_t *)malloc(most * sizeof(size_t));
    double *cell_sums = (double *)malloc(most * 2 * sizeof(double));
    int *cell_count = (int *)malloc(most * sizeof(int));
    float *columns = (float *)malloc(C * sizeof(float));
    e->logits = (float *)malloc((size_t)e->offsets[e->batch] * sizeof(float));
    e->aggregation_logits = A ? (float *)malloc((size_t)e->batch * A * sizeof(float)) : NULL;
    pf_result r = PF_OK;
    if (!cell_of || !cell_key || !cell_sums || !cell_count || !columns || !e->logits || (A && !e->aggregation_logits))
        r = PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    if (!r && agg->packed) /* read value by value here; a quantized checkpoint's matrices are decoded by rows */
        r = PF__FAIL(m, PF_ERROR_UNSUPPORTED, "%s: a quantized aggregation_classifier is not supported", c->class_name);
    float bias = wb->data ? pf__weight_value(wb->data, 0, wb->dtype) : 0.0f; /* absent: transformers' zeros */
    float column_bias = vb->data ? pf__weight_value(vb->data, 0, vb->dtype) : 0.0f;
    for (int b = 0; !r && b < e->batch; b++) {
        const float *h = e->last_hidden_state + (size_t)e->offsets[b] * d;
        const int32_t *types = table_types ? table_types[b] : NULL;
        size_t L = (size_t)lengths[b], cells = 0;
        for (size_t t = 0; t < L; t++) {
            size_t row = types ? (size_t)types[t * PF__TABLE_TYPES + 2] : 0, col = types ? (size_t)types[t * PF__TABLE_TYPES + 1] : 0;
            size_t key = (row < (size_t)c->max_table_rows ? row : (size_t)c->max_table_rows - 1) * C + (col < C ? col : C - 1);
            double cell = 0, column = 0;
            for (size_t i = 0; i < d; i++) {
                cell += (double)h[t * d + i] * pf__weight_value(w->data, i, w->dtype);
                column += (double)h[t * d + i] * pf__weight_value(v->data, i, v->dtype);
            }
            float cell_logit = ((float)cell + bias) / (float)c->cell_selection_temperature, column_logit = (float)column + column_bias;
            size_t k = 0;
            while (k < cells && cell_key[k] != key) k++;
            if (k == cells) cell_key[cells] = key, cell_count[cells] = 0, cell_sums[2 * cells] = cell_sums[2 * cells + 1] = 0, cells++;
            cell_of[t] = k;
            cell_count[k]++;
            cell_sums[2 * k] += cell_logit;
            cell_sums[2 * k + 1] += column_logit;
        }
        /* each column: the mean of its cells' mean column logits (0 without cells), 10000 less where it has none */
        for (size_t col = 0; col < C; col++) columns[col] = 0;
        int *column_cells = (int *)calloc(C, sizeof(int));
        if (!column_cells) {
            r = PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
            break;
        }
        for (size_t k = 0; k < cells; k++) {
            columns[cell_key[k] % C] += (float)(cell_sums[2 * k + 1] / cell_count[k]);
            column_cells[cell_key[k] % C]++;
        }
        size_t chosen = 0;
        for (size_t col = 0; col < C; col++) {
            columns[col] /= (float)column_cells[col] + 1e-10f; /* transformers' EPSILON_ZERO_DIVISION */
            if (column_cells[col] == 0 && col != 0) columns[col] += PF__TAPAS_LOG_ZERO;
            if (col == 0 && !c->allow_empty_column_selection) columns[col] += PF__TAPAS_LOG_ZERO;
            if (columns[col] > columns[chosen]) chosen = col; /* the first of equal ones, as torch.argmax */
        }
        free(column_cells);
        for (size_t t = 0; t < L; t++) {
            size_t k = cell_of[t], col = cell_key[k] % C;
            float selected = col == chosen && col != 0 ? 1.0f : 0.0f;
            e->logits[(size_t)e->offsets[b] + t] = (float)(cell_sums[2 * k] / cell_count[k]) + PF__TAPAS_LOG_ZERO * (1.0f - selected);
        }
        for (size_t a = 0; a < A; a++) {
            double sum = agg_b->data ? pf__weight_value(agg_b->data, a, agg_b->dtype) : 0.0;
            for (size_t i = 0; i < d; i++)
                sum += (double)e->pooled[(size_t)b * d + i] * pf__weight_value(agg->data, a * d + i, agg->dtype);
            e->aggregation_logits[(size_t)b * A + a] = (float)sum;
        }
    }
    if (!r) {
        e->head = PF_HEAD_TABLE_QUESTION_ANSWERING;
        e->num_logits = 1;
        e->logits_per_token = 1;
        e->num_aggregation_logits = (int)A;
    }
    free(cell_of), free(cell_key), free(cell_sums), free(cell_count), free(columns);
    return r;
}

/* Row b's Longformer global attention into out[length]: the caller's mask (given: 0 or 1 a token),
   or without one the head's default as transformers' Longformer heads compute it: the first token
   (sequence classification), the question before the first separator (question answering) or the
   tokens after the first two (multiple choice; both need exactly 3 separators a row), none else. */
static pf_result pf__global_tokens(pf_model *m, const int32_t *given, const int32_t *ids, int b, int length,
                                   int32_t *out) {
    const pf__config *c = &m->config;
    for (int t = 0; given && t < length; t++) {
        if (given[t] != 0 && given[t] != 1)
            return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "row %d, token %d: global attention %d is not 0 or 1", b, t,
                            (int)given[t]);
        out[t] = given[t];
    }
    if (given || pf__archs[c->arch].kind != PF__KIND_ENCODER) return PF_OK; /* LED's heads take none by default */
    if (c->head == PF_HEAD_SEQUENCE_CLASSIFICATION) out[0] = 1;
    if (c->head != PF_HEAD_QUESTION_ANSWERING && c->head != PF_HEAD_MULTIPLE_CHOICE) return PF_OK;
    int separators = 0, first = -1;
    for (int t = 0; t < length; t++)
        if (ids[t] == c->sep_token_id) {
            if (first < 0) first = t;
            separators++;
        }
    if (separators != 3)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "row %d holds %d separators (sep_token_id %d), not 3: Longformer's %s "
                        "head finds its global tokens by them (pf_encode_global takes them given)", b, separators,
                        c->sep_token_id, pf__head_name(c->head));
    for (int t = 0; t < length; t++) out[t] = c->head == PF_HEAD_QUESTION_ANSWERING ? t < first : t > first + 1;
    return PF_OK;
}

/* Row b's regions (pf_encode_regions): a count of 0 or more, features for a count above 0, every
   feature finite, and room for them after the row's tokens. */
static pf_result pf__check_regions(pf_model *m, const pf__encode_extras *extras, int b, int length) {
    const pf__config *c = &m->config;
    int count = extras->num_regions[b], width = c->visual_embedding_dim, room = m->group->cache_len - length;
    if (count < 0) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "row %d: %d regions", b, count);
    if (count > 0 && (!extras->regions || !extras->regions[b]))
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "row %d: %d regions without their features (NULL)", b, count);
    if (c->two_streams && count < 1) /* transformers' cross-attention over no region is a softmax of nothing */
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "row %d: %d regions: model_type \"%s\" takes 1 or more a row", b,
                        count, c->model_type);
    if (c->two_streams && (!extras->boxes_of_regions || !extras->boxes_of_regions[b]))
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "row %d: %d regions without their boxes (NULL)", b, count);
    if (count > room)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "row %d: %d tokens and %d regions exceed max_sequence_length %d "
                        "(%d regions fit after its tokens)", b, length, count, m->group->cache_len, room);
    if (count > 0 && c->type_vocab_size < 2 && !c->two_streams)
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "model_type \"%s\" with type_vocab_size %d has no visual token type 1 "
                        "for its regions", c->model_type, c->type_vocab_size);
    for (size_t i = 0; i < (size_t)count * width; i++)
        if (!isfinite(extras->regions[b][i]))
            return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "row %d, region %d: feature %d is not finite", b,
                            (int)(i / (size_t)width), (int)(i % (size_t)width));
    for (size_t i = 0; c->two_streams && i < (size_t)count * (size_t)c->visual_pos_dim; i++)
        if (!isfinite(extras->boxes_of_regions[b][i]))
            return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "row %d, region %d: box value %d is not finite", b,
                            (int)(i / (size_t)c->visual_pos_dim), (int)(i % (size_t)c->visual_pos_dim));
    return PF_OK;
}

/* Row b's entities (pf_encode_entities): a count of 0 or more, ids and positions for a count above
   0, each id in the entity vocabulary, each position one of the row's words or -1, and room for
   them after the row's words. */
static pf_result pf__check_entities(pf_model *m, const pf__encode_extras *extras, int b, int length, int regions) {
    const pf__config *c = &m->config;
    int count = extras->num_entities[b], room = m->group->cache_len - length - regions, width = extras->mention_length;
    if (count < 0) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "row %d: %d entities", b, count);
    if (count > 0 && (!extras->entity_ids || !extras->entity_ids[b] || !extras->entity_positions ||
                      !extras->entity_positions[b]))
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "row %d: %d entities without their ids or positions (NULL)", b, count);
    if (count > room)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "row %d: %d tokens and %d entities exceed max_sequence_length %d "
                        "(%d entities fit after its tokens)", b, length, count, m->group->cache_len, room);
    for (int k = 0; k < count; k++) {
        int32_t id = extras->entity_ids[b][k];
        if (id < 0 || id >= c->entity_vocab_size)
            return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "row %d, entity %d: id %d is outside the entity vocabulary "
                            "(0..%d)", b, k, (int)id, c->entity_vocab_size - 1);
        for (int i = 0; i < width; i++) {
            int32_t p = extras->entity_positions[b][(size_t)k * width + i];
            if (p < -1 || p >= length)
                return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "row %d, entity %d: position %d is neither one of the "
                                "row's %d tokens (0..%d) nor -1", b, k, (int)p, length, length - 1);
        }
    }
    return PF_OK;
}

/* The step's entity arrays (pf__step's layout) from the rows', into one allocation: ids [E], then
   positions [mention_length][E], then scales [E] (1 / the mention's positions; 1 for none, whose
   sum is zero as transformers' is). */
static int32_t *pf__entity_rows(const pf__encode_extras *extras, int batch, int total) {
    size_t E = (size_t)total, width = (size_t)extras->mention_length;
    int32_t *rows = (int32_t *)malloc(E * (width + 2) * sizeof(int32_t));
    if (!rows) return NULL;
    int32_t *positions = rows + E;
    float *scales = (float *)(positions + width * E);
    for (int b = 0, e = 0; b < batch; b++)
        for (int k = 0; k < extras->num_entities[b]; k++, e++) {
            rows[e] = extras->entity_ids[b][k];
            int count = 0;
            for (size_t i = 0; i < width; i++) {
                positions[i * E + (size_t)e] = extras->entity_positions[b][(size_t)k * width + i];
                count += positions[i * E + (size_t)e] >= 0;
            }
            scales[e] = count ? 1.0f / (float)count : 1.0f;
        }
    return rows;
}

/* Fills the host arrays of one encoder request: rows left-padded to the longest (pads are
   masked and take positions from the first real token, so every row computes what it would
   alone), and its outputs compacted into e; extras: pf_encode_layout's boxes, pf_encode_global's
   global tokens, pf_encode_regions' regions (after each row's tokens, its outputs' too). */
static pf_result pf__encode_locked(pf_model *m, const int32_t *const *ids, const int32_t *const *types,
                                   const pf__encode_extras *extras, const int *lengths, int batch, pf_encoding **out) {
    const pf__config *c = &m->config;
    static const pf__encode_extras none;
    if (!extras) extras = &none;
    const int32_t *const *boxes = extras->boxes, *const *global = extras->global;
    const int *num_regions = extras->num_regions, *num_entities = extras->num_entities;
    const int32_t *const *table_types = extras->table_types;
    *out = NULL;
    pf_result r = pf__ensure_group(m);
    if (r) return r;
    int seq2seq = pf__archs[c->arch].kind == PF__KIND_SEQ2SEQ; /* its encoder tower's output */
    if (m->sources[PF__SLOT_PATCH_WEIGHT].data)
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "model_type \"%s\" is an image encoder: pf_encode_images runs it", c->model_type);
    if (c->speech)
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "model_type \"%s\" is a speech encoder: pf_encode_audio runs it", c->model_type);
    if (c->mel_frontend)
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "model_type \"%s\" takes audio features: pf_encode_audio_features runs "
                        "its encoder", c->model_type);
    int decoder = pf__archs[c->arch].kind == PF__KIND_DECODER;
    if (decoder && m->sources[PF__SLOT_PROJECT_OUT].data)
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "model_type \"%s\" with \"word_embed_proj_dim\" below the hidden size: "
                        "pf_encode does not give its projected hidden states", c->model_type);
    if (!ids || !lengths || batch < 1) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "pf_encode needs ids, lengths and batch >= 1");
    if (c->two_streams && !extras->boxes_of_regions)
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "model_type \"%s\" takes object regions with their boxes: "
                        "pf_encode_region_boxes runs it", c->model_type);
    if (c->two_streams && !num_regions)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "model_type \"%s\" takes 1 or more regions a row: num_regions is NULL",
                        c->model_type);
    int has_boxes = m->sources[PF__SLOT_X_POSITION_EMBED].data != NULL; /* boxes: only pf_encode_layout's */
    int has_table = m->sources[PF__SLOT_COLUMN_TYPE_EMBED].data != NULL; /* table types: only pf_encode_table's */
    const pf__group *g = m->group;
    if (batch > g->max_batch) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "batch %d exceeds max_batch %d", batch, g->max_batch);
    int T = 0;
    for (int b = 0; b < batch; b++) {
        if (!ids[b] || lengths[b] < 1 || lengths[b] > g->cache_len)
            return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "row %d: %d tokens (1 to %d fit)", b, ids[b] ? lengths[b] : 0, g->cache_len);
        if ((r = seq2seq ? pf__check_source_ids(m, ids[b], (size_t)lengths[b]) : pf__check_ids(m, ids[b], (size_t)lengths[b])))
            return r;
        for (int t = 0; decoder && types && types[b] && t < lengths[b]; t++)
            if (types[b][t])
                return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "row %d: token types on a decoder are not supported", b);
        if (c->types_are_languages && types && types[b] && !m->sources[PF__SLOT_TOKEN_TYPE_EMBED].data)
            return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "row %d: model_type \"%s\" without language embeddings (n_langs %d, "
                            "use_lang_emb %d) takes no token_type_ids (transformers would add word-table rows for them)",
                            b, c->model_type, c->type_vocab_size, c->use_lang_emb);
        if (c->types_are_languages && types && !types[b] != !types[0])
            return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "row %d: %s languages, row 0 %s: model_type \"%s\" takes "
                            "languages for every row of a batch or for none", b, types[b] ? "gives" : "gives no",
                            types[0] ? "does" : "does not", c->model_type);
        for (int t = 0; types && types[b] && t < lengths[b]; t++)
            if (types[b][t] < 0 || types[b][t] >= (c->type_vocab_size > 0 ? c->type_vocab_size : 1))
                return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "row %d: token type %d is outside 0..%d", b, (int)types[b][t],
                                (c->type_vocab_size > 0 ? c->type_vocab_size : 1) - 1);
        if (boxes && boxes[b] && (r = pf__check_boxes(m, boxes[b], b, lengths[b]))) return r;
        if (table_types && table_types[b] && (r = pf__check_table_types(m, table_types[b], b, lengths[b]))) return r;
        if (c->funnel && pf__funnel_output_length(c, lengths[b]) < 0)
            return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "row %d: %d tokens are too few for Funnel's %d poolings (%d at "
                            "least: transformers leaves a shorter row unpooled but reads position terms made for a pooled "
                            "one)", b, lengths[b], c->funnel_blocks - 1, pf__funnel_shortest_row(c));
        if (num_regions && (r = pf__check_regions(m, extras, b, lengths[b]))) return r;
        if (num_entities &&
            (r = pf__check_entities(m, extras, b, lengths[b], num_regions ? num_regions[b] : 0)))
            return r;
        if (c->classify_entities && (num_entities ? num_entities[b] : 0) < c->classify_entities)
            return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "row %d: %d entit%s: %s classifies %s (pf_encode_entities)", b,
                            num_entities ? num_entities[b] : 0, num_entities && num_entities[b] == 1 ? "y" : "ies",
                            c->class_name, c->classify_entities == 1 ? "its first entity" : "its first two entities");
        if (c->classify_before_last_token && lengths[b] < 2)
            return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "row %d: %d token: %s reads the token before the text's last",
                            b, lengths[b], c->class_name);
        int row = lengths[b] + (num_regions ? num_regions[b] : 0) + (num_entities ? num_entities[b] : 0);
        if (row > T) T = row;
    }
    int num_entity_rows = 0;
    for (int b = 0; num_entities && b < batch; b++) num_entity_rows += num_entities[b];
    int most = c->max_positions + c->position_offset; /* the entity position table's rows */
    if (num_entity_rows && (extras->mention_length < 1 || extras->mention_length > most))
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "mention_length %d: an entity's positions take 1 to %d values "
                        "(max_position_embeddings)", extras->mention_length, most);
    size_t N = (size_t)batch * T, d = (size_t)pf__output_width(c); /* the hidden rows' width */
    int per_token = c->head != PF_HEAD_SEQUENCE_CLASSIFICATION && c->head != PF_HEAD_MULTIPLE_CHOICE &&
                    c->head != PF_HEAD_NEXT_SENTENCE;
    int num_logits = c->head == PF_HEAD_MASKED_LM ? c->vocab_size
                     : c->head == PF_HEAD_QUESTION_ANSWERING ? 2
                     : c->head == PF_HEAD_REPLACED_TOKEN_DETECTION ? 1
                     : c->head == PF_HEAD_NONE || c->head == PF_HEAD_CAUSAL_LM ||
                             c->head == PF_HEAD_TABLE_QUESTION_ANSWERING /* on the host, after the ranks */
                         ? 0
                         : c->num_labels;
    int32_t *padded = (int32_t *)calloc(N, sizeof(int32_t)), *padded_types = (int32_t *)calloc(N, sizeof(int32_t));
    int *pads = (int *)calloc((size_t)batch, sizeof(int));
    int32_t *box_rows = has_boxes ? (int32_t *)calloc(PF__BOX_LOOKUPS * N, sizeof(int32_t)) : NULL; /* none given: rows 0 */
    int32_t *table_rows = has_table ? (int32_t *)calloc(PF__TABLE_TYPES * N, sizeof(int32_t)) : NULL;
    int32_t *global_tokens = c->local_attention ? (int32_t *)calloc(N, sizeof(int32_t)) : NULL;
    int any_regions = 0;
    for (int b = 0; num_regions && b < batch; b++) any_regions |= num_regions[b] > 0;
    size_t width = (size_t)c->visual_embedding_dim, box_width = (size_t)c->visual_pos_dim;
    float *region_rows = any_regions ? (float *)calloc(N * (size_t)pf__region_floats(c), sizeof(float)) : NULL; /* zeros at the text */
    int32_t *entity_rows = num_entity_rows ? pf__entity_rows(extras, batch, num_entity_rows) : NULL;
    float *hidden = (float *)malloc(N * d * sizeof(float));
    float *logits = num_logits ? (float *)malloc((per_token ? N : (size_t)batch) * (size_t)num_logits * sizeof(float)) : NULL;
    pf_encoding *e = (pf_encoding *)calloc(1, sizeof *e);
    if (e) {
        e->offsets = (int *)calloc((size_t)batch + 1, sizeof(int));
        r = pf__encoding_pooled(m, e, batch);
    }
    int pools = c->pool_eos_id >= 0 || c->pool_first_token || pf__choice_pools_last(c) ||
                ((decoder || seq2seq) && c->head == PF_HEAD_SEQUENCE_CLASSIFICATION);
    int *pool_at = pools ? (int *)calloc((size_t)batch, sizeof(int)) : NULL;
    if (!r && (!padded || !padded_types || !pads || (has_boxes && !box_rows) || (has_table && !table_rows) ||
               (c->local_attention && !global_tokens) ||
               (any_regions && !region_rows) || (num_entity_rows && !entity_rows) || !hidden || (num_logits && !logits) || !e || !e->offsets || (pools && !pool_at)))
        r = PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    for (int b = 0; !r && pool_at && b < batch; b++) {
        pool_at[b] = decoder                ? T - lengths[b] + pf__score_position(c, ids[b], lengths[b])
                     : seq2seq              ? pf__last_eos_position(c, ids[b], lengths[b])
                     : c->pool_first_token ? 0
                     : pf__choice_pools_last(c) ? lengths[b] - 1
                                            : pf__eos_position(c, ids[b], lengths[b]);
        if (pool_at[b] < 0)
            r = PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "row %d holds no eos token (id %d): %s classifies at the last one",
                         b, c->num_eos_ids ? (int)c->eos_ids[0] : -1, c->class_name);
    }
    for (int b = 0; !r && b < batch; b++) {
        int regions = num_regions ? num_regions[b] : 0;
        pads[b] = T - lengths[b] - regions - (num_entities ? num_entities[b] : 0);
        for (int k = 0; k < regions; k++) padded_types[(size_t)(b + 1) * T - regions + k] = 1; /* visual_token_type_ids */
        if (regions)
            memcpy(region_rows + ((size_t)(b + 1) * T - regions) * width, extras->regions[b], regions * width * sizeof(float));
        if (regions && box_width) /* LXMERT's boxes, after every position's features */
            memcpy(region_rows + N * width + ((size_t)(b + 1) * T - regions) * box_width, extras->boxes_of_regions[b],
                   regions * box_width * sizeof(float));
        memcpy(padded + (size_t)b * T + pads[b], ids[b], (size_t)lengths[b] * sizeof(int32_t));
        if (types && types[b]) memcpy(padded_types + (size_t)b * T + pads[b], types[b], (size_t)lengths[b] * sizeof(int32_t));
        if (boxes && boxes[b]) pf__box_rows(box_rows, N, (size_t)b * T + pads[b], boxes[b], lengths[b]);
        if (table_rows)
            pf__table_rows(c, table_rows, N, (size_t)b * T + pads[b], padded_types + (size_t)b * T + pads[b],
                           table_types ? table_types[b] : NULL, lengths[b]);
        if (global_tokens)
            r = pf__global_tokens(m, global ? global[b] : NULL, ids[b], b, lengths[b], global_tokens + (size_t)b * T + pads[b]);
    }
    int any_global = 0; /* none: the layers' global pass is skipped */
    for (size_t i = 0; global_tokens && i < N; i++) any_global |= global_tokens[i];
    if (!r) {
        pf__rope_reset(m);
        pf__job job = {.step = {.ids = padded,
                                /* XLM's languages: none given, none added */
                                .type_ids = c->types_are_languages && !(types && types[0]) ? NULL : padded_types,
                                .box_rows = box_rows,
                                .table_rows = table_rows,
                                .global_tokens = any_global ? global_tokens : NULL,
                                .regions = region_rows,
                                .num_regions = any_regions ? num_regions : NULL,
                                .entity_ids = entity_rows,
                                .entity_positions = entity_rows ? entity_rows + num_entity_rows : NULL,
                                .entity_scales = entity_rows ? (const float *)(entity_rows + (size_t)num_entity_rows *
                                                                               (1 + (size_t)extras->mention_length))
                                                             : NULL,
                                .num_entities = entity_rows ? num_entities : NULL,
                                .num_entity_rows = num_entity_rows,
                                .mention_length = extras->mention_length,
                                .batch = batch,
                                .seq_len = T,
                                .pad = pads,
                                .inv_freq = pf__rope_frequencies(m, T)},
                       .all_positions = 1,
                       .hidden = hidden,
                       .pooled = e->pooled,
                       .embeds = e->embeds,
                       .doc_embeds = e->doc_embeds,
                       .pool_at = pool_at,
                       .logits = logits,
                       .encoder_pass = seq2seq};
        if (seq2seq) job.pooled = NULL, job.logits = NULL, job.pool_at = NULL; /* the decoder's, below */
        r = decoder ? pf__encode_decoder_in_chunks(m, &job) : pf__group_run(m->group, PF__JOB_FORWARD, &job);
        if (!r && seq2seq && num_logits)
            r = pf__seq2seq_head(m, padded, pads, batch, T, pool_at, e->pooled, logits);
    }
    if (!r) { /* drop the pads: row b's real positions are its last T - pads[b] (tokens, then regions; Funnel's:
               as many as its poolings leave) */
        e->batch = batch;
        e->hidden_size = (int)d;
        e->head = seq2seq && !num_logits ? PF_HEAD_NONE : c->head;
        e->num_logits = num_logits;
        e->logits_per_token = num_logits ? per_token : 0;
        int out_T = c->funnel ? pf__funnel_output_length(c, T) : T;
        for (int b = 0; b < batch; b++) /* tokens, then regions */
            e->offsets[b + 1] = e->offsets[b] + (c->funnel ? pf__funnel_output_length(c, lengths[b]) : T - pads[b]);
        e->last_hidden_state = hidden;
        for (int b = 0; b < batch; b++) {
            int kept = e->offsets[b + 1] - e->offsets[b];
            memmove(hidden + (size_t)e->offsets[b] * d, hidden + ((size_t)b * out_T + (out_T - kept)) * d,
                    (size_t)kept * d * sizeof(float));
        }
        hidden = NULL;
        if (logits && per_token)
            for (int b = 0; b < batch; b++)
                memmove(logits + (size_t)e->offsets[b] * num_logits, logits + ((size_t)b * T + pads[b]) * num_logits,
                        (size_t)(T - pads[b]) * num_logits * sizeof(float));
        e->logits = logits;
        logits = NULL;
        if (c->head == PF_HEAD_TABLE_QUESTION_ANSWERING) r = pf__table_head(m, e, table_types, lengths);
    }
    if (!r) {
        *out = e;
        e = NULL;
    }
    pf_encoding_free(e);
    free(padded), free(padded_types), free(pads), free(box_rows), free(table_rows), free(global_tokens), free(region_rows);
    free(hidden);
    free(entity_rows);
    free(logits);
    free(pool_at);
    return r;
}

/* An image encoder's request: each image [channels][size][size] cut into patches (row-major,
   each patch's values channel-major as the patch convolution's weight is), then the encoder. */
/* The pixel values the caller says it holds against what images of the model's size take, before
   any is read: a processor whose output size is not config.json's image_size gives fewer. */
static pf_result pf__check_pixel_values(pf_model *m, size_t num_values, int images) {
    const pf__config *c = &m->config;
    size_t image = (size_t)c->num_channels * c->image_size * c->image_size;
    if (num_values / image != (size_t)images || num_values % image)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "pixels hold %zu values; %d image%s of %d x %d x %d (config.json's "
                        "num_channels x image_size x image_size) take %zu: is the image processor's output another size?",
                        num_values, images, images == 1 ? "" : "s", c->num_channels, c->image_size, c->image_size,
                        image * (size_t)images);
    return PF_OK;
}

static pf_result pf__encode_images_locked(pf_model *m, const float *pixels, size_t num_values, int batch,
                                          pf_encoding **out) {
    const pf__config *c = &m->config;
    *out = NULL;
    pf_result r = pf__ensure_group(m);
    if (r) return r;
    if (!m->sources[PF__SLOT_PATCH_WEIGHT].data)
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "model_type \"%s\" takes token ids, not images", c->model_type);
    if (!pixels || batch < 1) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "pf_encode_images needs pixels and batch >= 1");
    const pf__group *g = m->group;
    if (batch > g->max_batch) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "batch %d exceeds max_batch %d", batch, g->max_batch);
    if ((r = pf__check_pixel_values(m, num_values, batch))) return r;
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
        r = pf__encoding_pooled(m, e, batch);
    }
    if (!r && (!patches || !hidden || (num_logits && !logits) || !e || !e->offsets))
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
        pf__job job = {.step = {.patches = patches, .batch = batch, .seq_len = S},
                       .all_positions = 1,
                       .hidden = hidden,
                       .pooled = e->pooled,
                       .embeds = e->embeds,
                       .logits = logits};
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

pf_result pf_encode_images(pf_model *m, const float *pixels, size_t num_pixel_values, int batch, pf_encoding **out) {
    if (!m) return PF_ERROR_INVALID_ARGUMENT;
    if (out) *out = NULL;
    if (!out) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "pf_encode_images needs an output");
    pf_result r = pf__request_lock(m, "pf_encode_images");
    if (r) return r;
    pf_model *tower = m->loaded && m->towers[1] ? m->towers[1] : m; /* a dual model's vision tower */
    r = pf__encode_images_locked(tower, pixels, num_pixel_values, batch, out);
    if (r && tower != m) r = pf__fail_from(m, r, tower);
    pf__request_unlock(m);
    return r;
}

/* Speech2Text's rows of filter-bank features (features[b]: num_frames[b] frames of feature_width)
   through the host subsampler: *out [batch][*width][hidden] (malloc'd, the caller frees it), each
   row's own encoder frames after its left pads (*pads, [batch], malloc'd; the pad rows zero). */
PF_PRIVATE pf_result pf__subsampler_rows(pf_model *m, const char *call, const float *const *features, const int *num_frames,
                                     int batch, float **out, int *width, int **pads) {
    const pf__config *c = &m->config;
    const pf__group *g = m->group;
    size_t feature_width = (size_t)c->speech_config.feature_width, longest = 0;
    for (int b = 0; b < batch; b++) {
        int n = num_frames[b];
        if (!features[b] || n < 1)
            return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "%s: row %d has %d feature frames (at least 1)", call, b,
                            features[b] ? n : 0);
        if (pf__subsampler_frames(c, n) > g->cache_len)
            return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "row %d: %d feature frames make %d encoder frames, above "
                            "max_sequence_length %d", b, n, pf__subsampler_frames(c, n), g->cache_len);
        for (size_t i = 0; i < (size_t)n * feature_width; i++)
            if (!isfinite(features[b][i]))
                return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "row %d: feature frame %zu, bin %zu is %g, not a finite "
                                "number (the extractor's variance normalisation makes NaN of a bin that is the same in "
                                "every frame: silent, constant or exactly periodic audio)", b, i / feature_width,
                                i % feature_width, (double)features[b][i]);
        if ((size_t)n > longest) longest = (size_t)n;
    }
    int T = pf__subsampler_frames(c, (int)longest);
    size_t B = (size_t)batch, d = (size_t)c->hidden_size, widest, col_width;
    pf__subsampler_sizes(c, longest, &widest, &col_width);
    float *work = (float *)malloc((2 * widest + (size_t)PF__SPEECH_BLOCK * col_width) * sizeof(float));
    float *rows = (float *)calloc(B * (size_t)T * d, sizeof(float)); /* pads: zeros, never attended to */
    int *row_pads = (int *)calloc(B, sizeof(int));
    if (!work || !rows || !row_pads) {
        free(work), free(rows), free(row_pads);
        return PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    for (size_t b = 0; b < B; b++) {
        int frames = pf__subsampler_frames(c, num_frames[b]);
        row_pads[b] = T - frames;
        pf__subsampler_frontend(m, features[b], (size_t)num_frames[b], longest, (size_t)frames,
                                rows + (b * (size_t)T + (size_t)row_pads[b]) * d, work, work + widest, work + 2 * widest);
    }
    free(work);
    *out = rows;
    *width = T;
    *pads = row_pads;
    return PF_OK;
}

/* A speech encoder-decoder's encoder on waveforms: each through the feature extractor of the
   model directory's preprocessor_config.json (read for the request), then as
   pf_encode_audio_features. */
static pf_result pf__encode_audio_mel(pf_model *m, const float *const *samples, const int *num_samples, int batch,
                                      pf_encoding **out) {
    const pf__config *c = &m->config;
    char error[PF__MESSAGE_SIZE];
    if (!samples || !num_samples || batch < 1)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "pf_encode_audio needs samples, their counts and batch >= 1");
    if (batch > m->group->max_batch) /* before any row is read or any feature computed */
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "batch %d exceeds max_batch %d", batch, m->group->max_batch);
    pf_audio_processor *processor = NULL;
    pf_result r = pf_audio_processor_load(m->dir, &processor, error, sizeof error);
    if (r) return PF__FAIL(m, r, "pf_encode_audio reads the model's feature extractor: %s", error);
    pf_audio_processor_info info = pf_audio_processor_get_info(processor);
    size_t rows = 0, columns = 0, size = (size_t)c->num_mel_bins * 2 * (size_t)c->encoder_max_positions;
    if (info.kind != PF_AUDIO_LOG_MEL || info.num_mel_bins != c->num_mel_bins ||
        pf_audio_features_size(processor, 1, &rows, &columns, error, sizeof error) || columns != size / (size_t)c->num_mel_bins)
        r = PF__FAIL(m, PF_ERROR_FORMAT, "%s: preprocessor_config.json's log-mel features (%zu x %zu) do not fit the model's "
                     "%d mel bins x %d frames", m->dir, rows, columns, c->num_mel_bins, 2 * c->encoder_max_positions);
    float *features = r ? NULL : (float *)malloc((size_t)batch * size * sizeof(float));
    const float **feature_rows = r ? NULL : (const float **)malloc((size_t)batch * sizeof *feature_rows);
    int *frames = r ? NULL : (int *)malloc((size_t)batch * sizeof(int));
    if (!r && (!features || !feature_rows || !frames)) r = PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    for (int b = 0; !r && b < batch; b++) {
        if (!samples[b] || num_samples[b] < 1)
            r = PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "row %d: no samples", b);
        else if ((r = pf_audio_features(processor, samples[b], (size_t)num_samples[b], features + (size_t)b * size, size,
                                        error, sizeof error)))
            r = PF__FAIL(m, r, "row %d: %s", b, error);
        feature_rows[b] = features + (size_t)b * size;
        frames[b] = 2 * c->encoder_max_positions;
    }
    if (!r) r = pf__encode_audio_features_locked(m, feature_rows, frames, batch, out);
    free(features), free(feature_rows), free(frames);
    pf_audio_processor_free(processor);
    return r;
}

/* Speech2Text's encoder on waveforms: each through the filter-bank extractor of the model
   directory's preprocessor_config.json (read for the request), then as pf_encode_audio_features
   (a batch padded as the extractor pads it). */
static pf_result pf__encode_audio_fbank(pf_model *m, const float *const *samples, const int *num_samples, int batch,
                                        pf_encoding **out) {
    const pf__config *c = &m->config;
    char error[PF__MESSAGE_SIZE];
    if (!samples || !num_samples || batch < 1)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "pf_encode_audio needs samples, their counts and batch >= 1");
    if (batch > m->group->max_batch) /* before any row is read or any feature computed */
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "batch %d exceeds max_batch %d", batch, m->group->max_batch);
    pf_audio_processor *processor = NULL;
    pf_result r = pf_audio_processor_load(m->dir, &processor, error, sizeof error);
    if (r) return PF__FAIL(m, r, "pf_encode_audio reads the model's feature extractor: %s", error);
    pf_audio_processor_info info = pf_audio_processor_get_info(processor);
    if (info.kind != PF_AUDIO_FBANK || info.num_mel_bins != c->speech_config.feature_width)
        r = PF__FAIL(m, PF_ERROR_FORMAT, "%s: preprocessor_config.json's features (%d mel bins) do not fit the model's %d "
                     "filter banks per frame", m->dir, info.num_mel_bins, c->speech_config.feature_width);
    float **features = r ? NULL : (float **)calloc((size_t)batch, sizeof *features);
    int *frames = r ? NULL : (int *)calloc((size_t)batch, sizeof(int));
    if (!r && (!features || !frames)) r = PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    for (int b = 0; !r && b < batch; b++) { /* every row's size against the cache before any work */
        size_t rows = 0, columns = 0;
        if (!samples[b] || num_samples[b] < 1) r = PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "row %d: no samples", b);
        else if ((r = pf_audio_features_size(processor, (size_t)num_samples[b], &rows, &columns, error, sizeof error)))
            r = PF__FAIL(m, r, "row %d: %s", b, error);
        else if (pf__subsampler_frames(c, (int)rows) > m->group->cache_len)
            r = PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "row %d: %d samples make %zu feature frames, %d encoder frames, above "
                         "max_sequence_length %d", b, num_samples[b], rows, pf__subsampler_frames(c, (int)rows),
                         m->group->cache_len);
    }
    for (int b = 0; !r && b < batch; b++) {
        size_t rows = 0, columns = 0;
        if ((r = pf_audio_features_size(processor, (size_t)num_samples[b], &rows, &columns, error, sizeof error)))
            r = PF__FAIL(m, r, "row %d: %s", b, error);
        else if (!(features[b] = (float *)malloc(rows * columns * sizeof(float))))
            r = PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
        else if ((r = pf_audio_features(processor, samples[b], (size_t)num_samples[b], features[b], rows * columns, error,
                                        sizeof error)))
            r = PF__FAIL(m, r, "row %d: %s", b, error);
        for (size_t i = 0; !r && i < rows * columns; i++) /* from finite samples: say why they are not */
            if (!isfinite(features[b][i]))
                r = PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "row %d: filter-bank bin %zu is the same in all %zu frames of "
                             "these samples (silent, constant or exactly periodic audio), so preprocessor_config.json's "
                             "variance normalisation divides it by zero (NaN, as in transformers)", b, i % columns, rows);
        if (!r) frames[b] = (int)rows;
    }
    if (!r) r = pf__encode_audio_features_locked(m, (const float *const *)features, frames, batch, out);
    for (int b = 0; features && b < batch; b++) free(features[b]);
    free(features), free(frames);
    pf_audio_processor_free(processor);
    return r;
}

/* A speech encoder's request: each waveform through the host front end, then the blocks on the
   ranks (and the CTC head's vocabulary rows, split like an LM head). */
static pf_result pf__encode_audio_locked(pf_model *m, const float *const *samples, const int *num_samples, int batch,
                                         pf_encoding **out) {
    const pf__config *c = &m->config;
    *out = NULL;
    pf_result r = pf__ensure_group(m);
    if (r) return r;
    if (c->mel_frontend) return pf__encode_audio_mel(m, samples, num_samples, batch, out);
    if (c->conv_subsampler) return pf__encode_audio_fbank(m, samples, num_samples, batch, out);
    if (!c->speech) return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "model_type \"%s\" is not a speech encoder", c->model_type);
    if (!samples || !num_samples || batch < 1)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "pf_encode_audio needs samples, their counts and batch >= 1");
    const pf__group *g = m->group;
    if (batch > g->max_batch) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "batch %d exceeds max_batch %d", batch, g->max_batch);
    const struct pf__speech_config *sc = &c->speech_config;
    int T = 0, longest = 0;
    for (int b = 0; b < batch; b++) {
        int n = num_samples[b], frames = n > 0 ? pf__speech_frames(c, n) : 0;
        if (!samples[b] || frames < 1)
            return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "row %d: %d samples are too few: the feature encoder needs at "
                            "least %d for a frame", b, samples[b] ? n : 0, sc->min_samples);
        if (frames > g->cache_len)
            return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "row %d: %d samples make %d frames, above max_sequence_length %d",
                            b, n, frames, g->cache_len);
        for (int i = 0; i < n; i++)
            if (!isfinite(samples[b][i])) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "row %d: samples must be finite", b);
        if (frames > T) T = frames;
        if (n > longest) longest = n;
    }
    size_t B = (size_t)batch, d = (size_t)c->hidden_size, frames = (size_t)T;
    size_t widest = 0, length = (size_t)longest; /* the largest conv output, and the projection's input */
    for (int l = 0; l < sc->num_convs; l++) {
        length = (length - (size_t)sc->conv_kernel[l]) / (size_t)sc->conv_stride[l] + 1;
        if ((size_t)sc->conv_dim[l] * length > widest) widest = (size_t)sc->conv_dim[l] * length;
    }
    int num_logits = c->head == PF_HEAD_CTC ? c->vocab_size : 0;
    size_t col = (size_t)PF__SPEECH_BLOCK * pf__speech_col_width(c);
    if (widest < (size_t)PF__SPEECH_BLOCK * d) widest = (size_t)PF__SPEECH_BLOCK * d; /* y holds the positional block too */
    float *work = (float *)malloc((2 * widest + frames * d + col) * sizeof(float));
    float *features = (float *)calloc(B * frames * d, sizeof(float)); /* pads: zeros, never attended to */
    float *hidden = (float *)malloc(B * frames * d * sizeof(float));
    float *logits = num_logits ? (float *)malloc(B * frames * (size_t)num_logits * sizeof(float)) : NULL;
    int *pads = (int *)calloc(B, sizeof(int)), *lengths = (int *)calloc(B, sizeof(int));
    pf_encoding *e = (pf_encoding *)calloc(1, sizeof *e);
    if (e) e->offsets = (int *)calloc(B + 1, sizeof(int));
    if (!work || !features || !hidden || (num_logits && !logits) || !pads || !lengths || !e || !e->offsets)
        r = PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    for (size_t b = 0; !r && b < B; b++) { /* each row's frames alone, after its left pads (as pf_encode's rows) */
        lengths[b] = pf__speech_frames(c, num_samples[b]);
        pads[b] = T - lengths[b];
        pf__speech_frontend(m, samples[b], num_samples[b], features + (b * frames + (size_t)pads[b]) * d, work, work + widest,
                            work + 2 * widest, work + 2 * widest + frames * d);
    }
    if (!r) {
        pf__job job = {.step = {.features = features, .batch = batch, .seq_len = T, .pad = pads},
                       .all_positions = 1,
                       .hidden = hidden,
                       .logits = logits};
        r = pf__group_run(m->group, PF__JOB_FORWARD, &job);
    }
    if (!r) { /* drop the pads: row b's frames are its last lengths[b] */
        e->batch = batch;
        e->hidden_size = (int)d;
        e->head = c->head;
        e->num_logits = num_logits;
        e->logits_per_token = 1;
        for (size_t b = 0; b < B; b++) {
            e->offsets[b + 1] = e->offsets[b] + lengths[b];
            memmove(hidden + (size_t)e->offsets[b] * d, hidden + (b * frames + (size_t)pads[b]) * d,
                    (size_t)lengths[b] * d * sizeof(float));
            if (logits)
                memmove(logits + (size_t)e->offsets[b] * num_logits, logits + (b * frames + (size_t)pads[b]) * num_logits,
                        (size_t)lengths[b] * num_logits * sizeof(float));
        }
        e->last_hidden_state = hidden;
        e->logits = logits;
        hidden = logits = NULL;
        *out = e;
        e = NULL;
    }
    pf_encoding_free(e);
    free(work), free(features), free(hidden), free(logits), free(pads), free(lengths);
    return r;
}

pf_result pf_encode_audio(pf_model *m, const float *const *samples, const int *num_samples, int batch, pf_encoding **out) {
    if (!m) return PF_ERROR_INVALID_ARGUMENT;
    if (out) *out = NULL;
    if (!out) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "pf_encode_audio needs an output");
    pf_result r = pf__request_lock(m, "pf_encode_audio");
    if (r) return r;
    r = pf__encode_audio_locked(m, samples, num_samples, batch, out);
    pf__request_unlock(m);
    return r;
}

int pf_encode_audio_frames(const pf_model *m, int num_samples) {
    if (m && m->loaded && m->config.mel_frontend && num_samples > 0) return m->config.encoder_max_positions; /* padded or cut */
    return m && m->loaded && m->config.speech && num_samples > 0 ? pf__speech_frames(&m->config, num_samples) : 0;
}

/* A token string of tokenizer_config.json, else of special_tokens_map.json (older checkpoints):
   a string, or an added token's {"content": ...}. */
static char *pf__speech_token_string(const pf__json *config, const pf__json *special, const char *key, const char *fallback) {
    const pf__json *v = config ? pf__json_get(config, key) : NULL;
    if ((!v || v->type == PF__JSON_NULL) && special) v = pf__json_get(special, key);
    if (v && v->type == PF__JSON_OBJECT) v = pf__json_get(v, "content");
    return strdup(v && v->type == PF__JSON_STRING ? v->string : fallback);
}

/* vocab.json (token -> id) and tokenizer_config.json's special tokens, read once. */
static pf_result pf__speech_read_vocab(pf_model *m) {
    pf__speech *sp = m->speech;
    char path[PF__PATH_SIZE];
    pf__json *vocab = NULL, *config = NULL, *special = NULL;
    char *message = pf__error_buffer(m);
    if (pf__path_join(path, sizeof path, m->dir, "vocab.json"))
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "path too long: %s", m->dir);
    pf_result r = pf__json_load(path, &vocab, message, PF__MESSAGE_SIZE);
    if (!r && vocab->type != PF__JSON_OBJECT) r = PF__FAIL(m, PF_ERROR_FORMAT, "%s: not an object of tokens", path);
    int most = -1;
    for (const pf__json *v = r ? NULL : vocab->first; v && !r; v = v->next) {
        double id = -1;
        if (pf__json_number(v, &id) != 1 || !(id >= 0 && id < 1e7) || id != floor(id))
            r = PF__FAIL(m, PF_ERROR_FORMAT, "%s: token \"%s\" has no id", path, v->key);
        else if (id > most) most = (int)id;
    }
    if (!r && (sp->tokens = (char **)calloc((size_t)most + 1, sizeof(char *))) == NULL && most >= 0)
        r = PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    if (!r) sp->num_tokens = most + 1;
    for (const pf__json *v = r ? NULL : vocab->first; v && !r; v = v->next) {
        int id = (int)v->number;
        if (sp->tokens[id]) r = PF__FAIL(m, PF_ERROR_FORMAT, "%s: id %d names two tokens", path, id);
        else if (!(sp->tokens[id] = strdup(v->key))) r = PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    if (!r && pf__path_join(path, sizeof path, m->dir, "tokenizer_config.json") == 0 && pf__file_exists(path))
        r = pf__json_load(path, &config, message, PF__MESSAGE_SIZE);
    if (!r && pf__path_join(path, sizeof path, m->dir, "special_tokens_map.json") == 0 && pf__file_exists(path))
        r = pf__json_load(path, &special, message, PF__MESSAGE_SIZE);
    if (!r) {
        sp->pad = pf__speech_token_string(config, special, "pad_token", "<pad>");
        sp->delimiter = pf__speech_token_string(config, special, "word_delimiter_token", "|");
        sp->unk = pf__speech_token_string(config, special, "unk_token", "<unk>");
        double flag = 0;
        sp->lower = config && pf__json_number(pf__json_get(config, "do_lower_case"), &flag) == 1 && flag != 0;
        flag = 0;
        sp->clean_up = config && pf__json_number(pf__json_get(config, "clean_up_tokenization_spaces"), &flag) == 1 && flag != 0;
        if (!sp->pad || !sp->delimiter || !sp->unk) r = PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    pf__json_free(vocab);
    pf__json_free(config);
    pf__json_free(special);
    if (!r) sp->vocab_read = 1;
    else { /* read again on the next call */
        for (int i = 0; i < sp->num_tokens; i++) free(sp->tokens[i]);
        free(sp->tokens), free(sp->pad), free(sp->delimiter), free(sp->unk);
        sp->tokens = NULL, sp->num_tokens = 0, sp->pad = sp->delimiter = sp->unk = NULL;
    }
    return r;
}

/* Replaces every `from` in text (NUL-terminated, in place: `to` is never longer). */
static void pf__speech_replace(char *text, const char *from, const char *to) {
    size_t nf = strlen(from), nt = strlen(to);
    char *w = text;
    for (const char *p = text; *p;) {
        if (!strncmp(p, from, nf)) {
            memmove(w, to, nt);
            w += nt, p += nf;
        } else {
            *w++ = *p++;
        }
    }
    *w = '\0';
}

static pf_result pf__ctc_decode_locked(pf_model *m, const pf_encoding *e, int row, char **text) {
    const pf__config *c = &m->config;
    if (!m->speech || c->head != PF_HEAD_CTC)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "model_type \"%s\" has no CTC head", c->model_type);
    if (!e || e->head != PF_HEAD_CTC || !e->logits || !e->offsets || !e->logits_per_token || e->num_logits != c->vocab_size)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "pf_ctc_decode needs an encoding with this model's CTC logits");
    if (row < 0 || row >= e->batch) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "row %d of %d", row, e->batch);
    pf__speech *sp = m->speech;
    pf_result r = sp->vocab_read ? PF_OK : pf__speech_read_vocab(m);
    if (r) return r;
    int first = e->offsets[row], frames = e->offsets[row + 1] - first;
    size_t V = (size_t)e->num_logits, cap = 1, used = 0;
    for (int i = 0; i < sp->num_tokens; i++) /* the longest token, frames times: an upper bound */
        if (sp->tokens[i] && strlen(sp->tokens[i]) + 1 > cap) cap = strlen(sp->tokens[i]) + 1;
    if (strlen(sp->unk) + 1 > cap) cap = strlen(sp->unk) + 1;
    cap = cap * (size_t)(frames > 0 ? frames : 0) + 1;
    char *out = (char *)malloc(cap);
    if (!out) return PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    const char *previous = NULL;
    for (int t = 0; t < frames; t++) {
        const float *l = e->logits + (size_t)(first + t) * V;
        size_t best = 0;
        for (size_t v = 1; v < V; v++)
            if (l[v] > l[best]) best = v; /* the first maximum, as torch's argmax */
        const char *token = best < (size_t)sp->num_tokens && sp->tokens[best] ? sp->tokens[best] : sp->unk;
        if (previous && !strcmp(token, previous)) continue; /* a run of one token is one */
        previous = token;
        if (!strcmp(token, sp->pad)) continue;              /* the blank */
        if (!strcmp(token, sp->delimiter)) token = " ";
        size_t n = strlen(token);
        memcpy(out + used, token, n);
        used += n;
    }
    out[used] = '\0';
    size_t begin = 0; /* Python's strip(), for the ASCII spaces a token can hold */
    while (out[begin] && strchr(" \t\n\r\v\f", out[begin])) begin++;
    while (used > begin && strchr(" \t\n\r\v\f", out[used - 1])) used--;
    memmove(out, out + begin, used - begin);
    out[used - begin] = '\0';
    if (sp->lower)
        for (char *p = out; *p; p++)
            if (*p >= 'A' && *p <= 'Z') *p = (char)(*p - 'A' + 'a');
    if (sp->clean_up) { /* transformers' clean_up_tokenization */
        static const char *const pairs[][2] = {{" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"},
                                               {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
        for (size_t i = 0; i < PF__COUNT(pairs); i++) pf__speech_replace(out, pairs[i][0], pairs[i][1]);
    }
    *text = out;
    return PF_OK;
}

pf_result pf_ctc_decode(pf_model *m, const pf_encoding *encoding, int row, char **text) {
    if (!m) return PF_ERROR_INVALID_ARGUMENT;
    if (text) *text = NULL;
    if (!text) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "pf_ctc_decode needs an output");
    pf_result r = pf__request_lock(m, "pf_ctc_decode");
    if (r) return r;
    r = pf__ctc_decode_locked(m, encoding, row, text);
    pf__request_unlock(m);
    return r;
}

pf_result pf_encode(pf_model *m, const int32_t *const *ids, const int32_t *const *token_type_ids, const int *lengths,
                    int batch, pf_encoding **out) {
    if (!m || !out) return PF_ERROR_INVALID_ARGUMENT;
    pf_result r = pf__request_lock(m, "pf_encode");
    if (r) return r;
    pf_model *tower = m->loaded && m->towers[0] ? m->towers[0] : m; /* a dual model's text tower */
    r = pf__encode_locked(tower, ids, token_type_ids, NULL, lengths, batch, out);
    if (r && tower != m) r = pf__fail_from(m, r, tower);
    pf__request_unlock(m);
    return r;
}

pf_result pf_encode_layout(pf_model *m, const int32_t *const *ids, const int32_t *const *token_type_ids,
                           const int32_t *const *boxes, const int *lengths, int batch, pf_encoding **out) {
    if (!m || !out) return PF_ERROR_INVALID_ARGUMENT;
    pf_result r = pf__request_lock(m, "pf_encode_layout");
    if (r) return r;
    if (!m->sources || !m->sources[PF__SLOT_X_POSITION_EMBED].data)
        r = PF__FAIL(m, PF_ERROR_UNSUPPORTED, "model_type \"%s\" has no 2-D position embeddings: pf_encode runs it",
                     m->config.model_type);
    else {
        pf__encode_extras extras = {.boxes = boxes};
        r = pf__encode_locked(m, ids, token_type_ids, &extras, lengths, batch, out);
    }
    pf__request_unlock(m);
    return r;
}

pf_result pf_encode_table(pf_model *m, const int32_t *const *ids, const int32_t *const *table_types, const int *lengths,
                          int batch, pf_encoding **out) {
    if (!m || !out) return PF_ERROR_INVALID_ARGUMENT;
    *out = NULL;
    pf_result r = pf__request_lock(m, "pf_encode_table");
    if (r) return r;
    if (!m->sources || !m->sources[PF__SLOT_COLUMN_TYPE_EMBED].data) {
        r = PF__FAIL(m, PF_ERROR_UNSUPPORTED, "model_type \"%s\" takes no table token types: pf_encode runs it",
                     m->config.model_type);
    } else {
        pf__encode_extras extras = {.table_types = table_types};
        r = pf__encode_locked(m, ids, NULL, &extras, lengths, batch, out);
    }
    pf__request_unlock(m);
    return r;
}

pf_result pf_encode_global(pf_model *m, const int32_t *const *ids, const int32_t *const *token_type_ids,
                           const int32_t *const *global_attention, const int *lengths, int batch, pf_encoding **out) {
    if (!m || !out) return PF_ERROR_INVALID_ARGUMENT;
    pf_result r = pf__request_lock(m, "pf_encode_global");
    if (r) return r;
    if (!m->config.local_attention)
        r = PF__FAIL(m, PF_ERROR_UNSUPPORTED, "model_type \"%s\" has no global attention: pf_encode runs it", m->config.model_type);
    else {
        pf__encode_extras extras = {.global = global_attention};
        r = pf__encode_locked(m, ids, token_type_ids, &extras, lengths, batch, out);
    }
    pf__request_unlock(m);
    return r;
}

/* pf_encode_regions and pf_encode_region_boxes (name: the caller's, for messages). */
static pf_result pf__encode_regions(pf_model *m, const char *name, const int32_t *const *ids,
                                    const int32_t *const *token_type_ids, const float *const *regions,
                                    const float *const *boxes, const int *num_regions, int region_dim, int box_dim,
                                    const int *lengths, int batch, pf_encoding **out) {
    if (!m || !out) return PF_ERROR_INVALID_ARGUMENT;
    *out = NULL;
    pf_result r = pf__request_lock(m, name);
    if (r) return r;
    const pf__config *c = &m->config;
    if (!m->sources || !m->sources[PF__SLOT_VISUAL_PROJECTION_WEIGHT].data) {
        r = PF__FAIL(m, PF_ERROR_UNSUPPORTED, "model_type \"%s\" takes no object regions: pf_encode runs it", c->model_type);
    } else if (region_dim != c->visual_embedding_dim) {
        r = PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "regions of %d features; model_type \"%s\" takes %d (%s)", region_dim,
                     c->model_type, c->visual_embedding_dim, c->two_streams ? "visual_feat_dim" : "visual_embedding_dim");
    } else if (box_dim != c->visual_pos_dim) {
        r = PF__FAIL(m, c->visual_pos_dim ? PF_ERROR_INVALID_ARGUMENT : PF_ERROR_UNSUPPORTED,
                     "boxes of %d values; model_type \"%s\" takes %d%s", box_dim, c->model_type, c->visual_pos_dim,
                     c->visual_pos_dim ? " (visual_pos_dim): pf_encode_region_boxes gives them" : " (pf_encode_regions runs it)");
    } else {
        pf__encode_extras extras = {.regions = regions, .boxes_of_regions = boxes, .num_regions = num_regions};
        r = pf__encode_locked(m, ids, token_type_ids, &extras, lengths, batch, out);
    }
    pf__request_unlock(m);
    return r;
}

pf_result pf_encode_regions(pf_model *m, const int32_t *const *ids, const int32_t *const *token_type_ids,
                            const float *const *regions, const int *num_regions, int region_dim, const int *lengths,
                            int batch, pf_encoding **out) {
    return pf__encode_regions(m, "pf_encode_regions", ids, token_type_ids, regions, NULL, num_regions, region_dim, 0,
                              lengths, batch, out);
}

pf_result pf_encode_region_boxes(pf_model *m, const int32_t *const *ids, const int32_t *const *token_type_ids,
                                 const float *const *regions, const float *const *boxes, const int *num_regions,
                                 int region_dim, int box_dim, const int *lengths, int batch, pf_encoding **out) {
    return pf__encode_regions(m, "pf_encode_region_boxes", ids, token_type_ids, regions, boxes, num_regions, region_dim,
                              box_dim, lengths, batch, out);
}

pf_result pf_encode_entities(pf_model *m, const int32_t *const *ids, const int32_t *const *token_type_ids,
                             const int32_t *const *entity_ids, const int32_t *const *entity_positions,
                             const int *num_entities, int mention_length, const int *lengths, int batch, pf_encoding **out) {
    if (!m || !out) return PF_ERROR_INVALID_ARGUMENT;
    *out = NULL;
    pf_result r = pf__request_lock(m, "pf_encode_entities");
    if (r) return r;
    if (!m->config.entity_vocab_size) {
        r = PF__FAIL(m, PF_ERROR_UNSUPPORTED, "model_type \"%s\" takes no entities: pf_encode runs it", m->config.model_type);
    } else if (m->group && m->group->mpi) {
        r = PF__FAIL(m, PF_ERROR_UNSUPPORTED, "entities across processes (MPI) are not implemented: run LUKE's ranks in "
                     "one process");
    } else {
        pf__encode_extras extras = {.entity_ids = entity_ids, .entity_positions = entity_positions,
                                    .num_entities = num_entities, .mention_length = mention_length};
        r = pf__encode_locked(m, ids, token_type_ids, &extras, lengths, batch, out);
    }
    pf__request_unlock(m);
    return r;
}

/* Rows of one tower's projected embeddings, each scaled to unit length, max_batch at a time:
   texts (ids, lengths) or images (pixels). */
static pf_result pf__unit_embeds(pf_model *tower, const int32_t *const *ids, const int *lengths, const float *pixels,
                                 int count, float *out) {
    pf_result r = pf__ensure_group(tower);
    const pf__config *c = &tower->config;
    size_t image = (size_t)c->num_channels * c->image_size * c->image_size, dim = (size_t)c->projection_dim;
    for (int first = 0; !r && first < count; first += tower->group->max_batch) {
        int n = count - first < tower->group->max_batch ? count - first : tower->group->max_batch;
        pf_encoding *e = NULL;
        r = pixels ? pf__encode_images_locked(tower, pixels + (size_t)first * image, (size_t)n * image, n, &e)
                   : pf__encode_locked(tower, ids + first, NULL, NULL, lengths + first, n, &e);
        for (int b = 0; !r && b < n; b++) { /* x / |x|, as transformers normalises (no epsilon) */
            const float *x = e->embeds + (size_t)b * dim;
            float sum = 0, *row = out + (size_t)(first + b) * dim;
            for (size_t i = 0; i < dim; i++) sum += x[i] * x[i];
            float norm = sqrtf(sum);
            for (size_t i = 0; i < dim; i++) row[i] = x[i] / norm;
        }
        pf_encoding_free(e);
    }
    return r;
}

static pf_result pf__image_text_logits_locked(pf_model *m, const int32_t *const *ids, const int *lengths, int num_texts,
                                              const float *pixels, size_t num_pixel_values, int num_images,
                                              float *logits) {
    if (!m->loaded) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "the model did not load");
    if (!m->towers[0])
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "model_type \"%s\" is not a dual encoder (CLIP): it has no image-text "
                        "similarity", m->config.model_type);
    if (!ids || !lengths || !pixels || !logits || num_texts < 1 || num_images < 1)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "pf_image_text_logits needs ids, lengths, pixels, logits, "
                        "num_texts >= 1 and num_images >= 1");
    pf_result r = pf__check_pixel_values(m->towers[1], num_pixel_values, num_images); /* before the texts' work */
    if (r) return pf__fail_from(m, r, m->towers[1]);
    size_t dim = (size_t)m->config.projection_dim;
    float *texts = (float *)malloc((size_t)num_texts * dim * sizeof(float));
    float *images = (float *)malloc((size_t)num_images * dim * sizeof(float));
    r = texts && images ? PF_OK : PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    if (!r && (r = pf__unit_embeds(m->towers[0], ids, lengths, NULL, num_texts, texts)))
        r = pf__fail_from(m, r, m->towers[0]);
    if (!r && (r = pf__unit_embeds(m->towers[1], NULL, NULL, pixels, num_images, images)))
        r = pf__fail_from(m, r, m->towers[1]);
    for (int i = 0; !r && i < num_images; i++) /* logit_scale.exp() * image . text, both of unit length */
        for (int t = 0; t < num_texts; t++) {
            float dot = 0;
            for (size_t k = 0; k < dim; k++) dot += images[(size_t)i * dim + k] * texts[(size_t)t * dim + k];
            logits[(size_t)i * num_texts + t] = m->logit_scale * dot;
        }
    free(texts), free(images);
    return r;
}

pf_result pf_image_text_logits(pf_model *m, const int32_t *const *ids, const int *lengths, int num_texts,
                               const float *pixels, size_t num_pixel_values, int num_images, float *logits_per_image) {
    if (!m) return PF_ERROR_INVALID_ARGUMENT;
    pf_result r = pf__request_lock(m, "pf_image_text_logits");
    if (r) return r;
    r = pf__image_text_logits_locked(m, ids, lengths, num_texts, pixels, num_pixel_values, num_images, logits_per_image);
    pf__request_unlock(m);
    return r;
}

pf_embed_options pf_embed_options_init(void) {
    pf_embed_options o;
    o.pooling = PF_POOLING_MODEL;
    o.normalize = -1;
    o.max_length = 0;
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
        r = pf__encode_locked(m, ids + first, NULL, NULL, lengths + first, n, &e);
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
    int max = m->group->cache_len, wanted = o && o->max_length ? o->max_length : m->sentence.max_seq_length;
    if (o && o->max_length < 0) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "max_length %d is negative", o->max_length);
    if (wanted > 0 && wanted < max) max = wanted;
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
PF_PRIVATE pf_result pf__pad_rows(pf_model *m, const char *what, const int32_t *const *rows, const int *lengths, int batch,
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

/* An encoder-decoder's encoder over rows of sources [batch][width] (left pads), or of a speech
   encoder-decoder's front end output: its output's keys and values in every decoder block's cross
   cache, rows 0..batch-1, and its last hidden state into hidden (host [batch][width][hidden]) when
   given. global_tokens: LED's [batch][width] (1 for a token with global attention, pads 0), NULL
   for none. */
PF_PRIVATE pf_result pf__encoder_pass(pf_model *m, const int32_t *sources, const float *features, const int *pads, int batch,
                                  int width, const int32_t *global_tokens, float *hidden) {
    pf__job job = {.step = {.ids = sources,
                            .features = features, /* a speech encoder-decoder's front end output, or NULL */
                            .batch = batch,
                            .seq_len = width,
                            .pad = pads,
                            .global_tokens = global_tokens},
                   .hidden = hidden,
                   .encoder_pass = 1};
    return pf__group_run(m->group, PF__JOB_FORWARD, &job);
}

/* LED's global tokens of sources [batch][width] (left pads): global[b] (lengths[b] values, 0 or 1;
   NULL, or a row's NULL: none) into *out [batch][width], pads 0, the caller's to free; *out NULL
   when no token has global attention (the encoder's global pass is then skipped). */
PF_PRIVATE pf_result pf__source_global_rows(pf_model *m, const char *what, const int32_t *const *global, const int *lengths,
                                        int batch, int width, int32_t **out) {
    *out = NULL;
    if (!global) return PF_OK;
    int32_t *rows = (int32_t *)calloc((size_t)batch * width, sizeof(int32_t));
    if (!rows) return PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    int any = 0;
    for (int b = 0; b < batch; b++)
        for (int t = 0; global[b] && t < lengths[b]; t++) {
            if (global[b][t] != 0 && global[b][t] != 1) {
                free(rows);
                return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "%s %d, token %d: global attention %d is not 0 or 1", what, b, t,
                                (int)global[b][t]);
            }
            rows[(size_t)b * width + (width - lengths[b]) + t] = global[b][t];
            any |= global[b][t];
        }
    if (any) *out = rows;
    else free(rows);
    return PF_OK;
}

/* After pf__encoder_pass over sources of width cross_len (left pads cross_pads): the decoder over
   rows of decoder ids, the logits of every position into logits [sum of decoder_lengths][vocab],
   rows packed without their pads. */
PF_PRIVATE pf_result pf__decoder_logits(pf_model *m, const int32_t *const *decoder_ids, const int *decoder_lengths, int batch,
                                    int cross_len, const int *cross_pads, float *logits) {
    size_t vocab = (size_t)m->config.vocab_size;
    int32_t *ids = NULL;
    int *pads = NULL, width = 0;
    float *all = NULL;
    pf_result r = pf__pad_rows(m, "decoder input", decoder_ids, decoder_lengths, batch, 0, &width, &ids, &pads);
    if (!r && !(all = (float *)malloc((size_t)batch * width * vocab * sizeof(float))))
        r = PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    if (!r) {
        pf__job job = {.step = {.ids = ids, .batch = batch, .seq_len = width, .pad = pads, .cross_len = cross_len,
                                .cross_pad = cross_pads},
                       .logits = all,
                       .all_positions = 1};
        r = pf__group_run(m->group, PF__JOB_FORWARD, &job);
    }
    for (int b = 0, row = 0; !r && b < batch; row += decoder_lengths[b++]) /* drop the pads */
        memcpy(logits + (size_t)row * vocab, all + ((size_t)b * width + pads[b]) * vocab,
               (size_t)decoder_lengths[b] * vocab * sizeof(float));
    free(ids), free(pads), free(all);
    return r;
}

/* global: pf_forward_seq2seq_global's (NULL: none, and pf_forward_seq2seq's). */
static pf_result pf__forward_seq2seq_locked(pf_model *m, const int32_t *const *sources, const int32_t *const *global,
                                            const int *source_lengths, const int32_t *const *decoder_ids,
                                            const int *decoder_lengths, int batch, float *logits) {
    if (!sources || !source_lengths || !decoder_ids || !decoder_lengths || !logits || batch < 1)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "pf_forward_seq2seq needs sources, decoder inputs, their lengths, "
                        "logits and batch >= 1");
    pf_result r = pf__ensure_group(m);
    if (r) return r;
    if (!pf_get_info(m).is_encoder_decoder)
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "model_type \"%s\" (as loaded) is not an encoder-decoder",
                        m->config.model_type);
    if ((r = pf__check_generates(m))) return r; /* a task head has no vocabulary logits */
    if (m->config.mel_frontend)
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "model_type \"%s\" takes audio features: pf_forward_audio runs it",
                        m->config.model_type);
    if (global && !m->config.local_attention)
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "model_type \"%s\" has no global attention (pf_forward_seq2seq_global "
                        "takes an encoder with Longformer's: LED)", m->config.model_type);
    if (batch > m->group->max_batch)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "batch %d exceeds max_batch %d", batch, m->group->max_batch);
    int32_t *src = NULL, *src_global = NULL;
    int *src_pads = NULL, src_width;
    r = pf__pad_rows(m, "source", sources, source_lengths, batch, 1, &src_width, &src, &src_pads);
    if (!r) r = pf__source_global_rows(m, "source", global, source_lengths, batch, src_width, &src_global);
    if (!r) r = pf__encoder_pass(m, src, NULL, src_pads, batch, src_width, src_global, NULL);
    if (!r) r = pf__decoder_logits(m, decoder_ids, decoder_lengths, batch, src_width, src_pads, logits);
    free(src), free(src_global), free(src_pads);
    return r;
}

pf_result pf_forward_seq2seq(pf_model *m, const int32_t *const *source_ids, const int *source_lengths,
                             const int32_t *const *decoder_ids, const int *decoder_lengths, int batch, float *logits) {
    if (!m) return PF_ERROR_INVALID_ARGUMENT;
    pf_result r = pf__request_lock(m, "pf_forward_seq2seq");
    if (r) return r;
    r = pf__forward_seq2seq_locked(m, source_ids, NULL, source_lengths, decoder_ids, decoder_lengths, batch, logits);
    pf__request_unlock(m);
    return r;
}

pf_result pf_forward_seq2seq_global(pf_model *m, const int32_t *const *source_ids, const int32_t *const *global_attention,
                                    const int *source_lengths, const int32_t *const *decoder_ids, const int *decoder_lengths,
                                    int batch, float *logits) {
    if (!m) return PF_ERROR_INVALID_ARGUMENT;
    pf_result r = pf__request_lock(m, "pf_forward_seq2seq_global");
    if (r) return r;
    r = pf__forward_seq2seq_locked(m, source_ids, global_attention, source_lengths, decoder_ids, decoder_lengths, batch,
                                   logits);
    pf__request_unlock(m);
    return r;
}

/* ---- speech encoder-decoders: their encoder on audio features ---- */

/* Checks a batch of feature rows and runs each through the host front end: *out [batch][*width]
   [hidden] and *pads [batch], each row's frames after its left pads (never attended to; Whisper's
   rows are all one length; Speech2Text's, of any lengths, are padded to the longest), both the
   caller's to free. */
PF_PRIVATE pf_result pf__audio_source_rows(pf_model *m, const char *call, const float *const *features, const int *num_frames,
                                       int batch, float **out, int *width, int **pads) {
    const pf__config *c = &m->config;
    *out = NULL;
    *width = 0;
    *pads = NULL;
    if (!c->mel_frontend && !c->conv_subsampler)
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "model_type \"%s\" is not a speech encoder-decoder (%s takes audio "
                        "features)", c->model_type, call);
    if (!features || !num_frames || batch < 1)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "%s needs features, their frame counts and batch >= 1", call);
    const pf__group *g = m->group;
    if (batch > g->max_batch) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "batch %d exceeds max_batch %d", batch, g->max_batch);
    if (c->conv_subsampler) return pf__subsampler_rows(m, call, features, num_frames, batch, out, width, pads);
    int frames = 2 * c->encoder_max_positions, T = c->encoder_max_positions;
    if (T > g->cache_len)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "the encoder's %d positions exceed max_sequence_length %d", T, g->cache_len);
    size_t M = (size_t)c->num_mel_bins, d = (size_t)c->hidden_size;
    for (int b = 0; b < batch; b++) {
        if (!features[b] || num_frames[b] != frames)
            return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "row %d: %d frames of %zu mel bins; the model takes exactly %d "
                            "(max_source_positions x 2: pf_audio_features pads or cuts every input to them)", b,
                            features[b] ? num_frames[b] : 0, M, frames);
        for (size_t i = 0; i < M * (size_t)frames; i++)
            if (!isfinite(features[b][i]))
                return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "row %d: mel bin %zu, frame %zu is %g, not a finite number",
                                b, i / (size_t)frames, i % (size_t)frames, (double)features[b][i]);
    }
    size_t widest = M > d ? M : d;
    float *rows = (float *)malloc((size_t)batch * T * d * sizeof(float));
    float *work = (float *)malloc(((size_t)frames * d + (size_t)PF__SPEECH_BLOCK * widest * 3) * sizeof(float));
    *pads = (int *)calloc((size_t)batch, sizeof(int));
    if (!rows || !work || !*pads) {
        free(rows), free(work), free(*pads);
        *pads = NULL;
        return PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    for (int b = 0; b < batch; b++)
        pf__mel_frontend(m, features[b], frames, rows + (size_t)b * T * d, work, work + (size_t)frames * d);
    free(work);
    *out = rows;
    *width = T;
    return PF_OK;
}

PF_PRIVATE pf_result pf__encode_audio_features_locked(pf_model *m, const float *const *features, const int *num_frames,
                                                  int batch, pf_encoding **out) {
    pf_result r = pf__ensure_group(m);
    if (r) return r;
    float *rows = NULL, *hidden = NULL;
    int T = 0, *pads = NULL;
    size_t d = (size_t)m->config.hidden_size;
    if ((r = pf__audio_source_rows(m, "pf_encode_audio_features", features, num_frames, batch, &rows, &T, &pads))) return r;
    pf_encoding *e = (pf_encoding *)calloc(1, sizeof *e);
    hidden = (float *)malloc((size_t)batch * T * d * sizeof(float));
    if (e) e->offsets = (int *)calloc((size_t)batch + 1, sizeof(int));
    if (!e || !e->offsets || !hidden) r = PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    if (!r) r = pf__encoder_pass(m, NULL, rows, pads, batch, T, NULL, hidden);
    if (!r) { /* drop the pads: row b's frames are its last T - pads[b] */
        e->batch = batch;
        e->hidden_size = (int)d;
        e->head = PF_HEAD_NONE;
        for (int b = 0; b < batch; b++) {
            e->offsets[b + 1] = e->offsets[b] + T - pads[b];
            memmove(hidden + (size_t)e->offsets[b] * d, hidden + ((size_t)b * T + pads[b]) * d,
                    (size_t)(T - pads[b]) * d * sizeof(float));
        }
        e->last_hidden_state = hidden;
        hidden = NULL;
        *out = e;
        e = NULL;
    }
    pf_encoding_free(e);
    free(rows), free(pads), free(hidden);
    return r;
}

pf_result pf_encode_audio_features(pf_model *m, const float *const *features, const int *num_frames, int batch,
                                   pf_encoding **out) {
    if (!m) return PF_ERROR_INVALID_ARGUMENT;
    if (out) *out = NULL;
    if (!out) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "pf_encode_audio_features needs an output");
    pf_result r = pf__request_lock(m, "pf_encode_audio_features");
    if (r) return r;
    r = pf__encode_audio_features_locked(m, features, num_frames, batch, out);
    pf__request_unlock(m);
    return r;
}
