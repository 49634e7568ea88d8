#include "internal.h"
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
    pf__slot token_embed, positions, token_types, embed_norm, final_norm; /* norms: the weight, its bias the slot after */
    const float *rel_bias;   /* the rank's table, or NULL */
    int across_jobs;         /* pipeline stages, micro-batches: the hidden state comes from the stage
                                before's previous job and goes on to the next stage's next job */
} pf__tower;

static pf__tower pf__tower_of(const pf__rank *r, int encoder) {
    const pf__config *c = &r->group->model->config;
    pf__tower t;
    int split = pf__archs[c->arch].kind == PF__KIND_SEQ2SEQ;
    int enc_blocks = pf__encoder_blocks(c);
    t.first_block = encoder ? 0 : enc_blocks;
    t.end_block = encoder ? enc_blocks : c->num_layers;
    t.mask = encoder && !c->causal_encoder ? PF__MASK_BIDIRECTIONAL : PF__MASK_CAUSAL;
    t.cross = split && !encoder;
    t.token_embed = split && encoder && r->weights[PF__SLOT_ENC_TOKEN_EMBED].data ? PF__SLOT_ENC_TOKEN_EMBED : PF__SLOT_TOKEN_EMBED;
    t.positions = split && encoder ? PF__SLOT_ENC_POSITION_EMBED : PF__SLOT_POSITION_EMBED;
    t.token_types = split && encoder ? PF__SLOT_ENC_TOKEN_TYPE_EMBED : PF__SLOT_TOKEN_TYPE_EMBED;
    t.embed_norm = split && encoder ? PF__SLOT_ENC_EMBED_NORM_WEIGHT : PF__SLOT_EMBED_NORM_WEIGHT;
    t.final_norm = split && encoder ? PF__SLOT_ENC_FINAL_NORM_WEIGHT : PF__SLOT_FINAL_NORM_WEIGHT;
    t.rel_bias = split && encoder ? r->enc_rel_bias : r->rel_bias;
    t.across_jobs = 0;
    if (!encoder && r->group->stages > 1) { /* pipeline stages (decoders): this stage's layers */
        t.first_block = r->group->stage_first_layer;
        t.end_block = r->group->stage_end_layer;
    }
    return t;
}

#define PF__HAS(w) ((w).data != NULL)
#define PF__OR_NULL(w) (PF__HAS(w) ? &(w) : NULL)

/* The norm of the embedding stage and the blocks: the family's, or MobileBERT's NoNorm. */
static pf__norm pf__body_norm(const pf__config *c) {
    return c->elementwise_norm ? PF__NORM_ELEMENTWISE : pf__archs[c->arch].norm;
}

/* VisualBERT's regions: row b's last num_regions[b] positions take its region features through
   visual_projection, plus row 0 of the visual position table, plus the visual token type table's
   row of the step's type id there (1), in transformers' order of summation, in place of the text
   embedding computed there (before the embedding norm, which follows for every position). The
   projection and both tables are whole on every rank; the text positions' rows of h are unused. */
static void pf__rank_embed_regions(pf__rank *r, const pf__step *s, float *x) {
    const pf__config *c = &r->group->model->config;
    const pf__backend *be = r->backend;
    const pf__weight *W = r->weights;
    size_t T = (size_t)s->seq_len, N = (size_t)s->batch * T, d = (size_t)c->hidden_size;
    be->upload(r, r->region_in, s->regions, N * (size_t)c->visual_embedding_dim * sizeof(float));
    be->matmul(r, r->h, r->region_in, &W[PF__SLOT_VISUAL_PROJECTION_WEIGHT],
               PF__OR_NULL(W[PF__SLOT_VISUAL_PROJECTION_BIAS]), N);
    pf__step rows = *s;
    rows.ids = r->group->zero_ids; /* transformers' visual position ids: all 0 without image_text_alignment */
    be->embed(r, r->part, &W[PF__SLOT_VISUAL_POSITION_EMBED], &rows, 1.0f, 0);
    be->add_residual(r, r->h, r->part, NULL, N, d);
    rows.ids = s->type_ids; /* 1 at the regions (transformers' default visual_token_type_ids) */
    be->embed(r, r->part, &W[PF__SLOT_VISUAL_TOKEN_TYPE_EMBED], &rows, 1.0f, 0);
    be->add_residual(r, r->h, r->part, NULL, N, d);
    for (size_t b = 0; b < (size_t)s->batch; b++) {
        size_t first = (b + 1) * T - (size_t)s->num_regions[b];
        if (s->num_regions[b]) be->copy(r, x + first * d, r->h + first * d, (size_t)s->num_regions[b] * d * sizeof(float));
    }
}

/* LUKE's entities, the last num_entities[b] positions of row b of x (after the words' embedding
   and its norm, whose values there they replace): e = the entity table's row (through
   entity_embedding_dense, when narrower than hidden) + the mean of the entity position table's rows
   at the mention's positions + the entity type table's row 0, normed by the entities' own norm,
   each sum in transformers' order. The tables are whole on every rank; the entities are computed
   in rows 0..E-1 of h, one step of E rows (embed gives zeros for a position of -1, outside the
   table). */
static void pf__rank_embed_entities(pf__rank *r, const pf__step *s, float *x) {
    const pf__config *c = &r->group->model->config;
    const pf__backend *be = r->backend;
    const pf__weight *W = r->weights;
    size_t E = (size_t)s->num_entity_rows, d = (size_t)c->hidden_size, T = (size_t)s->seq_len;
    if (!E) return;
    int32_t *identity = r->entity_gather + r->group->max_tokens * 7 * (size_t)r->share.heads;
    pf__step rows;
    memset(&rows, 0, sizeof rows);
    rows.batch = 1;
    rows.seq_len = (int)E;
    rows.ids = s->entity_ids;
    float *e = r->h;
    if (PF__HAS(W[PF__SLOT_ENTITY_DENSE])) {
        be->embed(r, r->entity_rows, &W[PF__SLOT_ENTITY_EMBED], &rows, 1.0f, 0);
        be->matmul(r, e, r->entity_rows, &W[PF__SLOT_ENTITY_DENSE], NULL, E);
    } else {
        be->embed(r, e, &W[PF__SLOT_ENTITY_EMBED], &rows, 1.0f, 0);
    }
    /* part = the sum of the mention's position rows, then entity_rows = part / count */
    for (int k = 0; k < s->mention_length; k++) {
        rows.ids = s->entity_positions + (size_t)k * E;
        be->embed(r, k ? r->entity_rows : r->part, &W[PF__SLOT_ENTITY_POSITION_EMBED], &rows, 1.0f, 0);
        if (k) be->add_residual(r, r->part, r->entity_rows, NULL, E, d);
    }
    for (size_t i = 0; i < E; i++) identity[i] = (int32_t)i;
    be->gather_rows(r, r->entity_rows, r->part, identity, s->entity_scales, E, d);
    be->add_residual(r, e, r->entity_rows, NULL, E, d);
    rows.ids = r->group->zero_ids; /* transformers' entity_token_type_ids: 0 */
    be->embed(r, r->part, &W[PF__SLOT_ENTITY_TYPE_EMBED], &rows, 1.0f, 0);
    be->add_residual(r, e, r->part, NULL, E, d);
    be->norm(r, e, e, &W[PF__SLOT_ENTITY_NORM_WEIGHT], PF__OR_NULL(W[PF__SLOT_ENTITY_NORM_BIAS]), E, d,
             (float)c->norm_eps, PF__NORM_LAYER);
    for (size_t b = 0, first = 0; b < (size_t)s->batch; first += (size_t)s->num_entities[b++])
        if (s->num_entities[b])
            be->copy(r, x + ((b + 1) * T - (size_t)s->num_entities[b]) * d, e + first * d,
                     (size_t)s->num_entities[b] * d * sizeof(float));
}

/* LUKE's entity-aware attention as attend over doubled heads (pf__rank_entity_attention): the host
   rows its two gathers read, for the step's shape, and the zero head they read uploaded after the
   pool. Head h of a position's qkv row [q' | k' | v'] (heads of 2 head_dim) gathers from the pool
   [N][q | k | v] then [N][w2e | e2w | e2e] (heads of head_dim; the zero head after them):
     a word:    q' = [q | w2e],   k' = [k | 0], v' = [v | 0]
     an entity: q' = [e2w | e2e], k' = [0 | k], v' = [v | 0]
   so that q'.k' is a word's query for a word's key, w2e's for an entity's, and an entity's e2w for
   a word's, e2e for an entity's; the output's head h is the first half of attend's. */
static void pf__rank_entity_gathers(pf__rank *r, const pf__step *s) {
    const pf__config *c = &r->group->model->config;
    size_t heads = (size_t)r->share.heads, T = (size_t)s->seq_len, N = (size_t)s->batch * T, hd = (size_t)c->head_dim;
    if (!heads) return;
    int32_t *q = r->entity_gather, *out = q + N * 6 * heads;
    int32_t second = (int32_t)(N * 3 * heads), zero = (int32_t)(r->group->max_tokens * 6 * heads); /* in heads */
    for (size_t n = 0; n < N; n++) {
        size_t b = n / T, t = n % T;
        int entity = s->num_entities && t >= T - (size_t)s->num_entities[b];
        int32_t own = (int32_t)(n * 3 * heads), *row = q + n * 6 * heads;
        for (size_t h = 0; h < heads; h++) {
            int32_t query = own + (int32_t)h, key = own + (int32_t)(heads + h), value = own + (int32_t)(2 * heads + h);
            int32_t w2e = second + query, e2w = w2e + (int32_t)heads, e2e = e2w + (int32_t)heads;
            row[2 * h] = entity ? e2w : query;
            row[2 * h + 1] = entity ? e2e : w2e;
            row[2 * heads + 2 * h] = entity ? zero : key;
            row[2 * heads + 2 * h + 1] = entity ? key : zero;
            row[4 * heads + 2 * h] = value;
            row[4 * heads + 2 * h + 1] = zero;
            out[n * heads + h] = (int32_t)(n * 2 * heads + 2 * h);
        }
    }
    r->backend->upload(r, r->entity_pool + (size_t)zero * hd,
                       r->entity_gather + pf__entity_gather_count(c, r->share.heads, r->group->max_tokens) - hd,
                       hd * sizeof(float));
}

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
                 pf__body_norm(c));
    if (PF__HAS(W[t->positions]) && s->table_rows) { /* TAPAS: each token's position as the host gives it */
        pf__step positions = *s;
        positions.ids = s->table_rows;
        be->embed(r, r->part, &W[t->positions], &positions, 1.0f, 0);
        be->add_residual(r, x, r->part, NULL, N, width);
    } else if (PF__HAS(W[t->positions])) {
        be->add_positions(r, x, &W[t->positions], s, c->position_offset);
    }
    if (PF__HAS(W[PF__SLOT_X_POSITION_EMBED])) { /* LayoutLM: each box's rows, the tables whole on every rank */
        static const pf__slot tables[PF__BOX_LOOKUPS] = {PF__SLOT_X_POSITION_EMBED, PF__SLOT_Y_POSITION_EMBED,
                                                        PF__SLOT_X_POSITION_EMBED, PF__SLOT_Y_POSITION_EMBED,
                                                        PF__SLOT_H_POSITION_EMBED, PF__SLOT_W_POSITION_EMBED};
        for (int k = 0; k < PF__BOX_LOOKUPS; k++) {
            pf__step rows = *s;
            rows.ids = s->box_rows + (size_t)k * N;
            be->embed(r, r->part, &W[tables[k]], &rows, 1.0f, 0);
            be->add_residual(r, x, r->part, NULL, N, width);
        }
    }
    if (PF__HAS(W[t->token_types]) && (s->type_ids || !c->types_are_languages)) { /* the segment table is whole on every rank */
        pf__step types = *s;
        /* an encoder's callers give zeros when the user gives none; an encoder-decoder's steps
           have none: segment 0, as transformers' BERT towers take it */
        types.ids = s->type_ids ? s->type_ids : r->group->zero_ids;
        be->embed(r, r->part, &W[t->token_types], &types, 1.0f, 0);
        be->add_residual(r, x, r->part, NULL, N, width);
    }
    for (int k = 1; k < PF__TABLE_TYPES && PF__HAS(W[PF__SLOT_COLUMN_TYPE_EMBED]); k++) { /* TAPAS: types 1 .. 6, after the segment's */
        pf__step types = *s;
        types.ids = s->table_rows ? s->table_rows + (size_t)k * N : r->group->zero_ids;
        be->embed(r, r->part, &W[PF__SLOT_COLUMN_TYPE_EMBED + k - 1], &types, 1.0f, 0);
        be->add_residual(r, x, r->part, NULL, N, width);
    }
    if (PF__HAS(W[PF__SLOT_TASK_TYPE_EMBED])) { /* ERNIE: task 0's row on every token, as transformers' default */
        pf__step tasks = *s;
        tasks.ids = r->group->zero_ids;
        be->embed(r, r->part, &W[PF__SLOT_TASK_TYPE_EMBED], &tasks, 1.0f, 0);
        be->add_residual(r, x, r->part, NULL, N, width);
    }
    if (s->regions && PF__HAS(W[PF__SLOT_VISUAL_POSITION_EMBED])) pf__rank_embed_regions(r, s, x); /* VisualBERT's */
    if (!norm_first && PF__HAS(W[t->embed_norm]))
        be->norm(r, x, x, &W[t->embed_norm], PF__OR_NULL(W[t->embed_norm + 1]), N, width, (float)c->norm_eps,
                 pf__body_norm(c));
    if (s->entity_ids) pf__rank_embed_entities(r, s, x);
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

/* MobileBERT's trigram input: each token's embedding row e[N] becomes [e[t+1], e[t], e[t-1]], zeros
   beyond its row's real tokens (the left pads before them, the row's end after), gathered as 3N
   rows of E into the [N, 3E] that project_in reads; row N of embedded is made zero for the gaps. */
static const float *pf__rank_trigrams(pf__rank *r, const pf__step *s, float *embedded) {
    size_t E = (size_t)r->group->model->config.embed_dim, T = (size_t)s->seq_len, N = (size_t)s->batch * T;
    float *zero = embedded + N * E, *joined = zero + E;
    r->backend->copy(r, zero, embedded, E * sizeof(float));
    r->backend->scale(r, zero, E, 0.0f); /* finite embedding values times 0 */
    int32_t *rows = r->trigram_rows;
    for (size_t b = 0; b < (size_t)s->batch; b++)
        for (size_t t = 0; t < T; t++) {
            size_t i = b * T + t, pad = s->pad ? (size_t)s->pad[b] : 0;
            rows[3 * i] = (int32_t)(t + 1 < T ? i + 1 : N);
            rows[3 * i + 1] = (int32_t)i;
            rows[3 * i + 2] = (int32_t)(t > pad ? i - 1 : N);
        }
    r->backend->gather_rows(r, joined, embedded, rows, NULL, 3 * N, E);
    return joined;
}

static void pf__rank_embed(pf__rank *r, const pf__step *s, const pf__tower *t) {
    const pf__group *g = r->group;
    if (s->patches) {
        pf__rank_embed_patches(r, s, t);
        return;
    }
    if (s->features) { /* a speech encoder's frames: (normed, when its blocks are post-norm) */
        size_t n = (size_t)s->batch * s->seq_len * g->model->config.hidden_size;
        r->backend->upload(r, r->x, s->features, n * sizeof(float));
        pf__rank_embed_extras(r, s, t, r->x, (size_t)g->model->config.hidden_size);
        return;
    }
    const pf__config *c = &g->model->config;
    const pf__backend *be = r->backend;
    const pf__weight *W = r->weights;
    size_t N = (size_t)s->batch * s->seq_len, d = (size_t)c->hidden_size;
    float embed_scale = c->embed_scale_sqrt ? sqrtf((float)d) : 1.0f;
    if (c->embed_multiplier) embed_scale *= (float)c->embed_multiplier; /* Granite: embeddings x embedding_multiplier */
    int vocab_split = g->world_ranks > 1 && g->model->sources[t->token_embed].split == PF__SPLIT_VOCAB;
    float *embedded = PF__HAS(W[PF__SLOT_PROJECT_IN]) ? r->embed : r->x;
    be->embed(r, embedded, &W[t->token_embed], s, embed_scale, vocab_split ? r->share.vocab_begin : 0);
    if (vocab_split) pf__all_reduce(r, embedded, N * (size_t)c->embed_dim, "the token embedding's all-reduce");
    if (c->embed_norm_before_project && PF__HAS(W[PF__SLOT_PROJECT_IN])) { /* ELECTRA, ALBERT: the embedding stage at its own width */
        pf__rank_embed_extras(r, s, t, embedded, (size_t)c->embed_dim);
        be->matmul(r, r->x, embedded, &W[PF__SLOT_PROJECT_IN], PF__OR_NULL(W[PF__SLOT_PROJECT_IN_BIAS]), N);
    } else if (c->trigram_input) { /* MobileBERT: project_in (with its bias) of each token's trigram */
        be->matmul(r, r->x, pf__rank_trigrams(r, s, r->embed), &W[PF__SLOT_PROJECT_IN],
                   PF__OR_NULL(W[PF__SLOT_PROJECT_IN_BIAS]), N);
        pf__rank_embed_extras(r, s, t, r->x, d);
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
    shape.latent_rank = c->kv_lora_rank;
    shape.v_head_dim = pf__value_head_dim(c);
    shape.rope_scale = (float)c->rope_attention_factor;
    shape.cache_dtype = r->cache_dtype;
    shape.alibi = r->alibi;
    shape.alibi_rounded = c->alibi_rounded;
    shape.rel_bias = t->rel_bias;
    shape.rel_rows = c->rel_table_rows;
    shape.rel_buckets = c->rel_buckets;
    shape.rel_max_distance = c->rel_max_distance;
    shape.mask = t->mask;
    return shape;
}

/* x += y (+ bias), then out = norm(x): one op where the backend fuses them (one launch, the
   residual stream read once), else add_residual and norm. */
static void pf__rank_residual_norm(pf__rank *r, float *x, const float *y, const pf__weight *bias, float *out,
                                   const pf__weight *weight, const pf__weight *norm_bias, size_t rows, size_t n,
                                   float eps, pf__norm kind) {
    const pf__backend *be = r->backend;
    if (be->add_residual_norm) {
        be->add_residual_norm(r, x, y, bias, out, weight, norm_bias, rows, n, eps, kind);
        return;
    }
    be->add_residual(r, x, y, bias, rows, n);
    be->norm(r, out, x, weight, norm_bias, rows, n, eps, kind);
}

/* out = act(in W^T + bias), a non-gated MLP's first projection (rows of width W->rows): the bias
   folded into the activation's launch where the backend can, else added by the GEMM. */
static void pf__rank_mlp_in(pf__rank *r, float *out, const float *in, const pf__weight *W, const pf__weight *bias,
                            size_t rows, pf__activation act) {
    const pf__backend *be = r->backend;
    if (bias && be->bias_activation) {
        be->matmul(r, out, in, W, NULL, rows);
        be->bias_activation(r, out, bias, rows, W->rows, act);
        return;
    }
    be->matmul(r, out, in, W, bias, rows);
    be->activation(r, out, rows * W->rows, act);
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
    size_t layer = pf__rank_cache_layer(r);
    pf__norm kind = pf__archs[c->arch].norm;
    float eps = (float)c->norm_eps;
    const pf__weight *norm_b = PF__OR_NULL(L[PF__SLOT_CROSS_NORM_BIAS]);
    pf__attn_shape shape = *self_shape;
    shape.mask = PF__MASK_CROSS;
    shape.cache_dtype = PF__DTYPE_F32; /* written by a matmul, once per request */
    shape.cache_len = s->cross_len;
    shape.window = 0;
    shape.chunk = 0;
    shape.local_window = 0;
    shape.sparse_block = 0;
    shape.sinks = NULL;
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
    if (c->pre_norm) be->add_residual(r, r->x, r->part, PF__OR_NULL(L[PF__SLOT_CROSS_OUT_BIAS]), N, d);
    else pf__rank_residual_norm(r, r->x, r->part, PF__OR_NULL(L[PF__SLOT_CROSS_OUT_BIAS]), r->x,
                                &L[PF__SLOT_CROSS_NORM_WEIGHT], norm_b, N, d, eps, kind);
}

/* A pre-norm block's last residual add, left for the next block's first norm to do in the same
   op (pf__rank_residual_norm): x += part (+ bias) is pending while `pending`. */
typedef struct pf__residual {
    int pending;
    const pf__weight *bias; /* or NULL */
} pf__residual;

/* A parallel block's MLP on x, beside the attention whose output projection is in part:
   part += act(norm2(x) Win_r^T) Wdown_r^T, with GPT-J's single norm reused; then
   x += sum over ranks of part + bo + bdown: one all-reduce for both sublayers. */
static void pf__rank_parallel_mlp(pf__rank *r, const pf__step *s, const pf__weight *L) {
    const pf__config *c = &r->group->model->config;
    const pf__backend *be = r->backend;
    size_t N = (size_t)s->batch * s->seq_len, d = (size_t)c->hidden_size, mlp_width = (size_t)r->share.mlp_width;
    if (PF__HAS(L[PF__SLOT_MLP_NORM_WEIGHT])) /* h = norm2(x); norm1's h is spent */
        be->norm(r, r->h, r->x, &L[PF__SLOT_MLP_NORM_WEIGHT], PF__OR_NULL(L[PF__SLOT_MLP_NORM_BIAS]), N, d,
                 (float)c->norm_eps, pf__archs[c->arch].norm);
    const float *act = r->mlp;
    if (c->gated_mlp) {
        be->matmul(r, r->mlp, r->h, &L[PF__SLOT_MLP_IN_WEIGHT], PF__OR_NULL(L[PF__SLOT_MLP_IN_BIAS]), N);
        be->gated_activation(r, r->mlp_act, r->mlp, N, mlp_width, c->activation), act = r->mlp_act;
    } else {
        pf__rank_mlp_in(r, r->mlp, r->h, &L[PF__SLOT_MLP_IN_WEIGHT], PF__OR_NULL(L[PF__SLOT_MLP_IN_BIAS]), N,
                        c->activation);
    }
    be->matmul(r, r->h, act, &L[PF__SLOT_MLP_DOWN_WEIGHT], NULL, N);
    be->add_residual(r, r->part, r->h, NULL, N, d);
    pf__all_reduce(r, r->part, N * d, "the parallel block's all-reduce");
    const pf__weight *out_b = PF__OR_NULL(L[PF__SLOT_ATTN_OUT_BIAS]), *down_b = PF__OR_NULL(L[PF__SLOT_MLP_DOWN_BIAS]);
    if (down_b && be->add_residual_biases) { /* both biases in one pass */
        be->add_residual_biases(r, r->x, r->part, out_b, down_b, N, d);
    } else {
        be->add_residual(r, r->x, r->part, out_b, N, d);
        if (down_b) be->add_residual(r, r->x, NULL, down_b, N, d);
    }
}

/* part (a sublayer's output, summed over ranks) = (part + bias) * residual_multiplier where the
   config has one (Granite); the bias still to add with the residual (NULL once added). */
static const pf__weight *pf__rank_scale_output(pf__rank *r, float *part, const pf__weight *bias, size_t rows, size_t n) {
    const pf__config *c = &r->group->model->config;
    if (!c->residual_multiplier) return bias;
    if (bias) r->backend->add_residual(r, part, NULL, bias, rows, n);
    r->backend->scale(r, part, rows * n, (float)c->residual_multiplier);
    return NULL;
}

/* OLMo 2's qk-norm over the whole projection widths Q and KV, which the ranks hold parts of: each
   rank's sums of squares of its q and of the key/value heads it counts (those whose first query
   head is its own: a head replicated on several ranks counts once), summed over the ranks, then
   q, k = gain * x / sqrt(sum / width + eps). The sums live in part, free between the block's
   first norm (which took any pending residual from it) and the output projection. */
static void pf__rank_projection_qk_norm(pf__rank *r, const pf__weight *q_norm, const pf__weight *k_norm, size_t N,
                                        const pf__attn_shape *shape, float eps) {
    const pf__config *c = &r->group->model->config;
    int group = c->num_heads / c->num_kv_heads, hb = shape->head_begin;
    int first = (hb + group - 1) / group, end = shape->heads ? (hb + shape->heads - 1) / group + 1 : first;
    float *sums = r->part; /* [N][2] */
    r->backend->qk_sum_squares(r, sums, r->qkv, N, shape, first - shape->kv_begin, end - first);
    pf__all_reduce(r, sums, 2 * N, "the qk-norm's all-reduce");
    r->backend->qk_scale(r, r->qkv, sums, q_norm, k_norm, N, shape, (float)((size_t)c->num_heads * c->head_dim),
                         (float)((size_t)c->num_kv_heads * c->head_dim), eps);
}

/* DeBERTa's relative embeddings for this request, normed once (norm_rel_ebd) into r->rel_normed:
   every layer projects them with its own query and key weights. */
static void pf__rank_rel_embeddings(pf__rank *r) {
    const pf__config *c = &r->group->model->config;
    const pf__weight *W = r->weights;
    size_t rows = 2 * (size_t)c->rel_span, d = (size_t)c->hidden_size;
    if (!PF__HAS(W[PF__SLOT_REL_EMBED]) || !r->backend->disentangled_bias) { /* a registered backend may lack the op */
        pf__rank_fail(r, PF_ERROR_UNSUPPORTED, PF__HAS(W[PF__SLOT_REL_EMBED])
                      ? "DeBERTa's disentangled attention has no kernel on this backend (the CPU backend has one)"
                      : "relative_attention is true but the checkpoint has no encoder.rel_embeddings.weight");
        return;
    }
    /* the table in its storage dtype, read as sequences of ids 0, 1, ... of at most a step's
       tokens (what a backend stages ids for) */
    for (size_t done = 0, most = r->group->max_tokens; done < rows; done += most) {
        pf__step table;
        memset(&table, 0, sizeof table);
        table.ids = r->group->rel_ids + done;
        table.batch = 1;
        table.seq_len = (int)(rows - done < most ? rows - done : most);
        r->backend->embed(r, r->rel_normed + done * d, &W[PF__SLOT_REL_EMBED], &table, 1.0f, 0);
    }
    if (PF__HAS(W[PF__SLOT_REL_EMBED_NORM_WEIGHT]))
        r->backend->norm(r, r->rel_normed, r->rel_normed, &W[PF__SLOT_REL_EMBED_NORM_WEIGHT],
                         PF__OR_NULL(W[PF__SLOT_REL_EMBED_NORM_BIAS]), rows, d, (float)c->norm_eps, PF__NORM_LAYER);
}

/* DeBERTa's c2p and p2c terms of block l as a dense score bias: the rank's heads of the layer's
   query and key projections of the relative embeddings (the same slice of heads as its q and k),
   then each query's and key's dot products with them at their bucketed distance. The projections
   are the attention's own (share_att_key: rows of q | k | v) or the position ones (q | k). */
static void pf__rank_disentangled(pf__rank *r, const pf__step *s, const pf__weight *L, pf__attn_shape *shape) {
    const pf__config *c = &r->group->model->config;
    shape->dense_bias = NULL;
    if (!shape->heads) return;
    pf__slot weight = c->share_att_key ? PF__SLOT_QKV_WEIGHT : PF__SLOT_POS_QK_WEIGHT;
    pf__slot bias = c->share_att_key ? PF__SLOT_QKV_BIAS : PF__SLOT_POS_QK_BIAS;
    r->backend->matmul(r, r->rel_qkv, r->rel_normed, &L[weight], PF__OR_NULL(L[bias]), 2 * (size_t)c->rel_span);
    r->backend->disentangled_bias(r, r->dense_bias, r->qkv, r->rel_qkv, s, shape, c);
    shape->dense_bias = r->dense_bias;
}

/* ConvBERT's span-based dynamic convolution heads beside the attention's, on the block's input h
   (q in the qkv rows, its bias added), into conv_out (the rank's heads, head_dim each): key =
   depthwise(h) Wk_r^T + bk_r (a separable convolution over the tokens); each head's kernel
   softmax(sum over ranks of (key * q) Wl_r^T, + bl) [conv_kernel] weighs the values h Wv_r^T + bv_r
   at the tokens around. The kernel logits read every head's inputs: one all-reduce of
   [tokens, heads * conv_kernel], small beside the attention's. */
static void pf__rank_span_conv(pf__rank *r, const pf__step *s, const pf__weight *L, const float *in,
                               const pf__attn_shape *shape) {
    const pf__config *c = &r->group->model->config;
    const pf__backend *be = r->backend;
    size_t N = (size_t)s->batch * s->seq_len, hd = (size_t)shape->head_dim, K = (size_t)c->conv_kernel;
    size_t q_width = (size_t)shape->heads * hd, qkv_width = (size_t)(shape->heads + 2 * shape->kv_heads) * hd;
    size_t logits_width = (size_t)c->num_heads * K;
    be->depthwise_conv(r, r->conv_in, in, &L[PF__SLOT_CONV_DEPTHWISE_WEIGHT], s, (size_t)c->hidden_size);
    be->matmul(r, r->conv_key, r->conv_in, &L[PF__SLOT_CONV_KEY_WEIGHT], &L[PF__SLOT_CONV_KEY_BIAS], N);
    be->multiply(r, r->conv_key, r->qkv, qkv_width, N, q_width);
    be->matmul(r, r->conv_logits, r->conv_key, &L[PF__SLOT_CONV_KERNEL_WEIGHT], NULL, N);
    pf__all_reduce(r, r->conv_logits, N * logits_width, "the convolution kernels' all-reduce");
    be->add_residual(r, r->conv_logits, NULL, &L[PF__SLOT_CONV_KERNEL_BIAS], N, logits_width);
    be->matmul(r, r->conv_key, in, &L[PF__SLOT_CONV_VALUE_WEIGHT], &L[PF__SLOT_CONV_VALUE_BIAS], N); /* the values */
    be->span_conv(r, r->conv_out, r->conv_logits + (size_t)shape->head_begin * K, logits_width, r->conv_key, s,
                  shape->heads, (int)hd, (int)K);
}

/* The attention of every family but latent attention's, on the block's input h, into attn:
   qkv = h Wqkv_r^T + bqkv_r (clamped, qk-normed, rotated, as the config says), k and v appended to
   the caches, attend. */
static void pf__rank_attention(pf__rank *r, const pf__step *s, const pf__weight *L, int l, const float *in,
                               void *k_cache, void *v_cache, pf__attn_shape *shape) {
    const pf__config *c = &r->group->model->config;
    const pf__arch *a = &pf__archs[c->arch];
    const pf__backend *be = r->backend;
    size_t N = (size_t)s->batch * s->seq_len;
    float eps = (float)c->norm_eps;
    int rotary = (a->positions == PF__POS_ROTARY_HALVES || a->positions == PF__POS_ROTARY_PAIRS) && !c->alibi_rounded &&
                 (!c->layer_rope || c->layer_rope[l]); /* NoPE layers rotate nothing; Falcon-RW's ALiBi */
    /* qkv = h Wqkv_r^T + bqkv_r: this rank's query and key/value heads only (+ bqkv_r by the
       first op after the GEMM where the backend folds it in there) */
    const pf__weight *qkv_bias = PF__OR_NULL(L[PF__SLOT_QKV_BIAS]);
    const pf__weight *q_norm = PF__OR_NULL(L[PF__SLOT_Q_NORM_WEIGHT]), *k_norm = PF__OR_NULL(L[PF__SLOT_K_NORM_WEIGHT]);
    const pf__weight *q_norm_b = PF__OR_NULL(L[PF__SLOT_Q_NORM_BIAS]), *k_norm_b = PF__OR_NULL(L[PF__SLOT_K_NORM_BIAS]);
    if (c->qk_norm_l2) /* Llama 4's L2 norm: the gain 1, on the rotated layers only */
        q_norm = k_norm = rotary ? &r->unit_gain : NULL;
    int qk_norm = c->qk_norm == PF__QK_NORM_HEAD && (q_norm || k_norm);
    int temperature = c->temperature_tuning && c->layer_rope && !c->layer_rope[l]; /* Llama 4's NoPE layers */
    /* the qk-norms, the clip and the temperature need the bias added first */
    shape->qkv_bias = be->qkv_bias_in_attention && c->qk_norm == PF__QK_NORM_NONE && !(c->clip_qkv > 0) && !c->disentangled &&
                      !c->conv_kernel && !temperature ? qkv_bias : NULL; /* DeBERTa's terms, ConvBERT's convolution read q with its bias */
    be->matmul(r, r->qkv, in, &L[PF__SLOT_QKV_WEIGHT], shape->qkv_bias ? NULL : qkv_bias, N);
    if (c->conv_kernel) pf__rank_span_conv(r, s, L, in, shape);
    /* q, k, v = clamp(q, k, v, -clip, clip) (OLMo's clip_qkv) */
    if (c->clip_qkv > 0)
        be->clamp(r, r->qkv, N * (size_t)(shape->heads + 2 * shape->kv_heads) * (size_t)c->head_dim, (float)c->clip_qkv);
    /* q, k = norm(q), norm(k): each head over its head_dim values (qk-norm), before the rotary;
       or over the whole projection, its statistics summed over the ranks */
    if (qk_norm)
        be->head_norm(r, r->qkv, q_norm, k_norm, q_norm_b, k_norm_b, N, shape, eps, a->norm, c->qk_norm_per_head);
    /* (every rank enters its all-reduce, one without heads too: the model decides, not the slice) */
    const pf__source *sources = r->group->model->sources;
    if (c->qk_norm == PF__QK_NORM_PROJECTION && (sources[pf__slot_index(PF__SLOT_Q_NORM_WEIGHT, l)].data ||
                                                 sources[pf__slot_index(PF__SLOT_K_NORM_WEIGHT, l)].data))
        pf__rank_projection_qk_norm(r, q_norm, k_norm, N, shape, eps);
    /* q, k = rotate(q, k) by position (not on NoPE layers: layer_rope, SmolLM3's list or Cohere2's global layers) */
    if (rotary) {
        be->rotary(r, r->qkv, s, shape, a->positions == PF__POS_ROTARY_PAIRS);
        shape->qkv_bias = NULL; /* added */
    }
    /* q = q * (1 + attn_scale * log1p(floor((p + 1) / floor_scale))) by position p (Llama 4's NoPE layers) */
    if (temperature) be->scale_queries(r, r->qkv, s, shape, (float)c->temperature_floor, (float)c->temperature_scale);
    /* DeBERTa: bias = (c2p q.pk + p2c k.pq) * scale at each query's and key's bucketed distance */
    if (c->disentangled) pf__rank_disentangled(r, s, L, shape);
    /* attn = softmax(q k^T * scale + alibi + relative bias (+ bias)) v over the cache, k and v appended to it */
    be->kv_append(r, k_cache, v_cache, r->qkv, s, shape);
    shape->qkv_bias = NULL;
    be->attend(r, r->attn, r->qkv, k_cache, v_cache, s, shape);
    /* Longformer: the global tokens' rows of attn again, softmax(q_g k_g^T * scale) v_g over every
       key, q_g, k_g, v_g = h Wqkv_global_r^T + b (their keys and values replace the layer's cache) */
    if (c->local_attention && s->global_tokens && shape->mask == PF__MASK_BIDIRECTIONAL) { /* LED: its encoder's */
        pf__attn_shape global = *shape;
        global.local_window = 0;
        global.global_queries = 1;
        be->matmul(r, r->qkv, in, &L[PF__SLOT_QKV_GLOBAL_WEIGHT], PF__OR_NULL(L[PF__SLOT_QKV_GLOBAL_BIAS]), N);
        be->kv_append(r, k_cache, v_cache, r->qkv, s, &global);
        be->attend(r, r->attn, r->qkv, k_cache, v_cache, s, &global);
    }
}

/* LUKE's entity-aware attention on the block's input h, into attn: the rank's heads of q, k, v and
   of the entity-aware queries w2e, e2w, e2e into the pool, gathered into doubled heads (see
   pf__rank_entity_gathers) that attend runs at 2 head_dim with the scale of head_dim, and the
   first half of each output head gathered back. A row without entities runs as the words' plain
   attention (their keys' second halves zero). */
static void pf__rank_entity_attention(pf__rank *r, const pf__step *s, const pf__weight *L, const float *in,
                                      void *k_cache, void *v_cache, const pf__attn_shape *shape) {
    const pf__config *c = &r->group->model->config;
    const pf__backend *be = r->backend;
    size_t N = (size_t)s->batch * s->seq_len, heads = (size_t)shape->heads, hd = (size_t)c->head_dim;
    if (!heads) return; /* a rank without heads: nothing to attend, its output rows none */
    be->matmul(r, r->entity_pool, in, &L[PF__SLOT_QKV_WEIGHT], PF__OR_NULL(L[PF__SLOT_QKV_BIAS]), N);
    be->matmul(r, r->entity_pool + N * 3 * heads * hd, in, &L[PF__SLOT_ENTITY_Q_WEIGHT],
               PF__OR_NULL(L[PF__SLOT_ENTITY_Q_BIAS]), N);
    be->gather_rows(r, r->qkv, r->entity_pool, r->entity_gather, NULL, N * 6 * heads, hd);
    pf__attn_shape doubled = *shape;
    doubled.head_dim = 2 * shape->head_dim;
    doubled.qkv_bias = NULL;
    be->kv_append(r, k_cache, v_cache, r->qkv, s, &doubled);
    be->attend(r, r->entity_pool, r->qkv, k_cache, v_cache, s, &doubled);
    be->gather_rows(r, r->attn, r->entity_pool, r->entity_gather + N * 6 * heads, NULL, N * heads, hd);
}

/* Multi-head latent attention (DeepSeek V2/V3) on the block's input h, into attn (the rank's heads,
   v_head_dim each): q = h Wq_r^T, or low-rank q_b_r(norm(q_a(h))); the latent row [c | k_rope] =
   h Wkv_a^T (whole on every rank), appended to the cache as norm(c) and rotated k_rope; then
   attention through kv_b_r's rows of the rank's heads. */
static void pf__rank_latent_attention(pf__rank *r, const pf__step *s, const pf__weight *L, const float *in,
                                      void *cache, const pf__attn_shape *shape) {
    const pf__config *c = &r->group->model->config;
    const pf__backend *be = r->backend;
    size_t N = (size_t)s->batch * s->seq_len, latent_width = (size_t)c->kv_lora_rank + c->qk_rope_head_dim;
    int pairs = pf__archs[c->arch].positions == PF__POS_ROTARY_PAIRS;
    float eps = (float)c->latent_norm_eps;
    if (!shape->heads) return; /* a rank without heads: nothing to attend, its output rows none */
    if (c->q_lora_rank) { /* q = q_b(norm(q_a(h))) */
        float *q_low = r->latent + N * latent_width;
        be->matmul(r, q_low, in, &L[PF__SLOT_Q_A_WEIGHT], PF__OR_NULL(L[PF__SLOT_Q_A_BIAS]), N);
        be->norm(r, q_low, q_low, &L[PF__SLOT_Q_A_NORM_WEIGHT], NULL, N, (size_t)c->q_lora_rank, eps, PF__NORM_RMS);
        be->matmul(r, r->qkv, q_low, &L[PF__SLOT_Q_B_WEIGHT], NULL, N);
    } else {
        be->matmul(r, r->qkv, in, &L[PF__SLOT_QKV_WEIGHT], NULL, N); /* q_proj alone */
    }
    be->matmul(r, r->latent, in, &L[PF__SLOT_KV_A_WEIGHT], PF__OR_NULL(L[PF__SLOT_KV_A_BIAS]), N);
    be->latent_append(r, cache, r->latent, &L[PF__SLOT_KV_A_NORM_WEIGHT], s, shape, pairs, eps);
    be->latent_attend(r, r->attn, r->qkv, cache, &L[PF__SLOT_KV_B_WEIGHT], s, shape, pairs);
}

/* One block l of a tower on x: attention over the cache (appending this step's keys), the
   encoder's output for a decoder tower of an encoder-decoder, then the MLP. *residual: the
   previous block's residual add still to do on entry; this block's on return. */
static void pf__rank_block(pf__rank *r, const pf__step *s, const pf__tower *t, int l, pf__attn_shape *shape,
                           pf__residual *residual) {
    const pf__group *g = r->group;
    const pf__config *c = &g->model->config;
    const pf__arch *a = &pf__archs[c->arch];
    const pf__backend *be = r->backend;
    size_t N = (size_t)s->batch * s->seq_len, d = (size_t)c->hidden_size;
    float eps = (float)c->norm_eps;
    size_t cache_stride = pf__rank_cache_layer(r) * pf__dtype_size(r->cache_dtype); /* one layer's cache, in bytes */
    size_t mlp_width = (size_t)r->share.mlp_width;
    const pf__weight *L = r->weights + pf__slot_index(PF__SLOT_FIRST_LAYER, l) - PF__SLOT_FIRST_LAYER;
    shape->scale = c->scale_attn_weights ? 1.0f / sqrtf((float)c->head_dim) : 1.0f;
    if (c->attention_multiplier) shape->scale = (float)c->attention_multiplier; /* Granite's own scale */
    if (c->query_pre_attn_scalar > 0) shape->scale = (float)pow(c->query_pre_attn_scalar, -0.5);
    shape->softcap = (float)c->attn_softcap;
    if (c->scale_attn_by_inverse_layer_idx) shape->scale /= (float)(l + 1);
    shape->window = c->layer_window[l];
    shape->chunk = c->layer_chunk[l];
    shape->local_window = c->local_attention && t->mask == PF__MASK_BIDIRECTIONAL ? c->layer_local_window[l] : 0;
    shape->sparse_block = c->block_sparse && t->mask == PF__MASK_BIDIRECTIONAL ? c->sparse_block : 0;
    shape->sparse_random = c->sparse_random;
    shape->sinks = PF__OR_NULL(L[PF__SLOT_ATTN_SINKS]);
    shape->rope_table = c->rope_local_theta > 0 && c->layer_local[l];
    const pf__weight *attn_norm_b = PF__OR_NULL(L[PF__SLOT_ATTN_NORM_BIAS]);
    const pf__weight *mlp_norm_b = PF__OR_NULL(L[PF__SLOT_MLP_NORM_BIAS]);

    /* h = norm1(x) (pre-norm; x += the previous block's part + bdown first, when pending), or x
       itself (post-norm) */
    const float *attn_in = r->x;
    /* OLMo 2 norms outputs only; OLMo's weightless norms are there without tensors */
    int attn_pre_norm = c->pre_norm && (PF__HAS(L[PF__SLOT_ATTN_NORM_WEIGHT]) || c->norm_weightless);
    int mlp_pre_norm = c->pre_norm && (PF__HAS(L[PF__SLOT_MLP_NORM_WEIGHT]) || c->norm_weightless);
    if (c->pre_norm && !attn_pre_norm) {
        if (residual->pending) be->add_residual(r, r->x, r->part, residual->bias, N, d);
        residual->pending = 0;
    } else if (c->pre_norm) {
        if (residual->pending)
            pf__rank_residual_norm(r, r->x, r->part, residual->bias, r->h, &L[PF__SLOT_ATTN_NORM_WEIGHT], attn_norm_b,
                                   N, d, eps, a->norm);
        else
            be->norm(r, r->h, r->x, &L[PF__SLOT_ATTN_NORM_WEIGHT], attn_norm_b, N, d, eps, a->norm);
        residual->pending = 0;
        attn_in = r->h;
    }
    size_t cache_layer = (size_t)(pf__cache_layer(c, l) - g->stage_first_layer); /* a stage caches its layers alone */
    void *k_cache = r->k_cache ? (char *)r->k_cache + cache_layer * cache_stride : NULL; /* NULL: a rank without heads */
    void *v_cache = r->v_cache ? (char *)r->v_cache + cache_layer * cache_stride : NULL;
    if (c->kv_lora_rank) pf__rank_latent_attention(r, s, L, attn_in, k_cache, shape);
    else if (c->entity_aware_attention) pf__rank_entity_attention(r, s, L, attn_in, k_cache, v_cache, shape);
    else pf__rank_attention(r, s, L, l, attn_in, k_cache, v_cache, shape);
    /* part = attn Wo_r^T: this rank's share of the output projection */
    be->matmul(r, r->part, r->attn, &L[PF__SLOT_ATTN_OUT_WEIGHT], NULL, N);
    if (c->conv_kernel) { /* ConvBERT: part += conv Wco_r^T, its convolution heads' inputs of the projection */
        be->matmul(r, r->conv_in, r->conv_out, &L[PF__SLOT_CONV_OUT_WEIGHT], NULL, N);
        be->add_residual(r, r->part, r->conv_in, NULL, N, d);
    }

    if (c->parallel_residual) {
        pf__rank_parallel_mlp(r, s, L);
        return;
    }
    /* x += sum over ranks of part, + bo once; post-norm: x = norm1(x); BLOOM's
       residual-from-norm: x = h + ...; pre-norm without cross-attention: h = norm2(x) at once */
    if (c->residual_from_norm) be->copy(r, r->x, r->h, N * d * sizeof(float));
    pf__all_reduce(r, r->part, N * d, "the attention output's all-reduce");
    const pf__weight *attn_out_b = PF__OR_NULL(L[PF__SLOT_ATTN_OUT_BIAS]);
    if (PF__HAS(L[PF__SLOT_ATTN_POST_NORM_WEIGHT])) { /* part = post-norm(part + bo): the sublayer's output normed */
        if (attn_out_b) be->add_residual(r, r->part, NULL, attn_out_b, N, d);
        attn_out_b = NULL;
        be->norm(r, r->part, r->part, &L[PF__SLOT_ATTN_POST_NORM_WEIGHT], PF__OR_NULL(L[PF__SLOT_ATTN_POST_NORM_BIAS]),
                 N, d, eps, a->norm);
    }
    attn_out_b = pf__rank_scale_output(r, r->part, attn_out_b, N, d); /* Granite */
    int mlp_norm_done = mlp_pre_norm && !t->cross;
    if (!c->pre_norm)
        pf__rank_residual_norm(r, r->x, r->part, attn_out_b, r->x, &L[PF__SLOT_ATTN_NORM_WEIGHT], attn_norm_b, N, d,
                               eps, a->norm);
    else if (mlp_norm_done)
        pf__rank_residual_norm(r, r->x, r->part, attn_out_b, r->h, &L[PF__SLOT_MLP_NORM_WEIGHT], mlp_norm_b, N, d, eps,
                               a->norm);
    else
        be->add_residual(r, r->x, r->part, attn_out_b, N, d);
    if (t->cross) pf__rank_cross_attention(r, s, L, l - t->first_block, shape);
    const float *mlp_in = r->x;
    if (mlp_pre_norm) {
        if (!mlp_norm_done) be->norm(r, r->h, r->x, &L[PF__SLOT_MLP_NORM_WEIGHT], mlp_norm_b, N, d, eps, a->norm);
        mlp_in = r->h;
        if (c->residual_from_norm) be->copy(r, r->x, r->h, N * d * sizeof(float));
    }
    /* mlp = act(h Win_r^T + bin_r), or act(gate) * up: this rank's columns; then
       part = mlp Wdown_r^T. A layer with experts: part = its experts' share of this rank */
    const float *act = r->mlp;
    int sparse = c->layer_sparse && c->layer_sparse[l];
    if (sparse) {
        pf__rank_experts(r, L, l, mlp_in, r->part, N);
    } else if (c->gated_mlp) {
        be->matmul(r, r->mlp, mlp_in, &L[PF__SLOT_MLP_IN_WEIGHT], PF__OR_NULL(L[PF__SLOT_MLP_IN_BIAS]), N);
        be->gated_activation(r, r->mlp_act, r->mlp, N, mlp_width, c->activation), act = r->mlp_act;
    } else {
        pf__rank_mlp_in(r, r->mlp, mlp_in, &L[PF__SLOT_MLP_IN_WEIGHT], PF__OR_NULL(L[PF__SLOT_MLP_IN_BIAS]), N,
                        c->activation);
    }
    /* part summed over ranks; x += part + bdown; post-norm: x = norm2(x) */
    if (!sparse) be->matmul(r, r->part, act, &L[PF__SLOT_MLP_DOWN_WEIGHT], NULL, N);
    pf__all_reduce(r, r->part, N * d, "the MLP output's all-reduce");
    const pf__weight *down_b = PF__OR_NULL(L[PF__SLOT_MLP_DOWN_BIAS]);
    if (PF__HAS(L[PF__SLOT_MLP_POST_NORM_WEIGHT])) { /* part = post-norm(part + bdown) */
        if (down_b) be->add_residual(r, r->part, NULL, down_b, N, d);
        down_b = NULL;
        be->norm(r, r->part, r->part, &L[PF__SLOT_MLP_POST_NORM_WEIGHT], PF__OR_NULL(L[PF__SLOT_MLP_POST_NORM_BIAS]),
                 N, d, eps, a->norm);
    }
    down_b = pf__rank_scale_output(r, r->part, down_b, N, d); /* Granite */
    if (c->pre_norm) *residual = (pf__residual){1, down_b}; /* x += part + bdown: next */
    else pf__rank_residual_norm(r, r->x, r->part, down_b, r->x,
                                &L[PF__SLOT_MLP_NORM_WEIGHT], mlp_norm_b, N, d, eps, a->norm);
}

/* x = norm(x + act(x Wup_r^T + bup_r) Wdown_r^T summed over ranks + bdown): a post-norm MLP of
   MobileBERT's blocks on their stream x [N][width], its slots from `up` on in PF__SLOT_FFN1_*'s
   order (up weight, up bias, down weight, down bias, norm weight, norm bias). */
static void pf__rank_stream_mlp(pf__rank *r, float *x, const pf__weight *L, const pf__slot slots[6], size_t N,
                                size_t width) {
    const pf__config *c = &r->group->model->config;
    const pf__backend *be = r->backend;
    pf__rank_mlp_in(r, r->mlp, x, &L[slots[0]], PF__OR_NULL(L[slots[1]]), N, c->activation);
    be->matmul(r, r->part, r->mlp, &L[slots[2]], NULL, N);
    pf__all_reduce(r, r->part, N * width, "a stacked MLP's all-reduce");
    pf__rank_residual_norm(r, x, r->part, PF__OR_NULL(L[slots[3]]), x, &L[slots[4]], PF__OR_NULL(L[slots[5]]), N, width,
                           (float)c->norm_eps, pf__body_norm(c));
}

/* MobileBERT's block l on x [N][hidden]: its stream h = norm(x Win^T + bin) [N][B]; attention of
   x (q and k folded with their shared bottleneck at load, v of x itself), heads split over the
   ranks; h = norm(h + attn Wo^T + bo); the stacked MLPs and the block's own, each
   h = norm(h + mlp(h)); then x = norm(x + h Wout^T + bout). The projections in and out are
   whole on every rank (small); the attention and MLPs end in an all-reduce each. */
static void pf__rank_bottleneck_block(pf__rank *r, const pf__step *s, int l, pf__attn_shape *shape) {
    const pf__config *c = &r->group->model->config;
    const pf__backend *be = r->backend;
    size_t N = (size_t)s->batch * s->seq_len, d = (size_t)c->hidden_size, B = (size_t)c->bottleneck_width;
    float eps = (float)c->norm_eps;
    pf__norm kind = pf__body_norm(c);
    const pf__weight *L = r->weights + pf__slot_index(PF__SLOT_FIRST_LAYER, l) - PF__SLOT_FIRST_LAYER;
    size_t cache_stride = pf__rank_cache_layer(r) * pf__dtype_size(r->cache_dtype), cache_layer = (size_t)pf__cache_layer(c, l);
    void *k_cache = r->k_cache ? (char *)r->k_cache + cache_layer * cache_stride : NULL; /* NULL: a rank without heads */
    void *v_cache = r->v_cache ? (char *)r->v_cache + cache_layer * cache_stride : NULL;
    shape->scale = 1.0f / sqrtf((float)c->head_dim);
    shape->window = c->layer_window[l];
    /* h = norm(x Win^T + bin) */
    be->matmul(r, r->h, r->x, &L[PF__SLOT_BOTTLENECK_IN_WEIGHT], PF__OR_NULL(L[PF__SLOT_BOTTLENECK_IN_BIAS]), N);
    be->norm(r, r->h, r->h, &L[PF__SLOT_BOTTLENECK_IN_NORM_WEIGHT], PF__OR_NULL(L[PF__SLOT_BOTTLENECK_IN_NORM_BIAS]), N,
             B, eps, kind);
    /* h = norm(h + sum over ranks of attn Wo_r^T + bo) */
    pf__rank_attention(r, s, L, l, r->x, k_cache, v_cache, shape);
    be->matmul(r, r->part, r->attn, &L[PF__SLOT_ATTN_OUT_WEIGHT], NULL, N);
    pf__all_reduce(r, r->part, N * B, "the attention output's all-reduce");
    pf__rank_residual_norm(r, r->h, r->part, PF__OR_NULL(L[PF__SLOT_ATTN_OUT_BIAS]), r->h, &L[PF__SLOT_ATTN_NORM_WEIGHT],
                           PF__OR_NULL(L[PF__SLOT_ATTN_NORM_BIAS]), N, B, eps, kind);
    /* the stacked MLPs, then the block's own */
    static const pf__slot stacked[3][6] = {
        {PF__SLOT_FFN1_UP_WEIGHT, PF__SLOT_FFN1_UP_BIAS, PF__SLOT_FFN1_DOWN_WEIGHT, PF__SLOT_FFN1_DOWN_BIAS, PF__SLOT_FFN1_NORM_WEIGHT, PF__SLOT_FFN1_NORM_BIAS},
        {PF__SLOT_FFN2_UP_WEIGHT, PF__SLOT_FFN2_UP_BIAS, PF__SLOT_FFN2_DOWN_WEIGHT, PF__SLOT_FFN2_DOWN_BIAS, PF__SLOT_FFN2_NORM_WEIGHT, PF__SLOT_FFN2_NORM_BIAS},
        {PF__SLOT_FFN3_UP_WEIGHT, PF__SLOT_FFN3_UP_BIAS, PF__SLOT_FFN3_DOWN_WEIGHT, PF__SLOT_FFN3_DOWN_BIAS, PF__SLOT_FFN3_NORM_WEIGHT, PF__SLOT_FFN3_NORM_BIAS}};
    static const pf__slot own[6] = {PF__SLOT_MLP_IN_WEIGHT, PF__SLOT_MLP_IN_BIAS, PF__SLOT_MLP_DOWN_WEIGHT,
                                    PF__SLOT_MLP_DOWN_BIAS, PF__SLOT_MLP_NORM_WEIGHT, PF__SLOT_MLP_NORM_BIAS};
    for (int k = 0; k + 1 < c->stacked_ffns; k++) pf__rank_stream_mlp(r, r->h, L, stacked[k], N, B);
    pf__rank_stream_mlp(r, r->h, L, own, N, B);
    /* x = norm(x + h Wout^T + bout) */
    be->matmul(r, r->part, r->h, &L[PF__SLOT_BOTTLENECK_OUT_WEIGHT], NULL, N);
    pf__rank_residual_norm(r, r->x, r->part, PF__OR_NULL(L[PF__SLOT_BOTTLENECK_OUT_BIAS]), r->x,
                           &L[PF__SLOT_BOTTLENECK_OUT_NORM_WEIGHT], PF__OR_NULL(L[PF__SLOT_BOTTLENECK_OUT_NORM_BIAS]), N, d,
                           eps, kind);
}

/* Whether the rank's stage computes the outputs (the last of the pipeline stages; with one stage,
   always). */
static int pf__rank_last_stage(const pf__rank *r) { return r->group->stage == r->group->stages - 1; }

/* Pipeline stages: x (count floats) from the stage before, which the process's rank 0 receives and
   the others copy (a barrier before, so that it has arrived, and after, so that rank 0 changes it
   only once all have it). across_jobs: the stage before sent it in the job before (micro-batches). */
static void pf__rank_stage_receive(pf__rank *r, size_t count, int across_jobs) {
    pf__group *g = r->group;
    if (r->index == 0) pf__mpi_stage_receive(r, r->x, count, across_jobs);
    if (pf__barrier(g)) return;
    if (r->index != 0) r->backend->upload(r, r->x, g->ranks[0].x, count * sizeof(float)); /* CPU ranks: host memory */
    pf__barrier(g);
}

/* ---- ProphetNet's n-gram decoder (pf__config.ngram) ------------------------------------------ */

/* One ProphetNet decoder block l (post-norm) on the stream in x: n-gram self-attention, the
   encoder's output, the MLP. The main stream (predict 0) appends its keys and values to the cache
   first; the predict stream (1), run after it, attends to them and to its own. */
static void pf__rank_ngram_block(pf__rank *r, const pf__step *s, const pf__tower *t, int l, pf__attn_shape *shape,
                                 int predict) {
    const pf__config *c = &r->group->model->config;
    const pf__backend *be = r->backend;
    size_t N = (size_t)s->batch * s->seq_len, d = (size_t)c->hidden_size;
    float eps = (float)c->norm_eps;
    const pf__weight *L = r->weights + pf__slot_index(PF__SLOT_FIRST_LAYER, l) - PF__SLOT_FIRST_LAYER;
    size_t cache_stride = pf__rank_cache_layer(r) * pf__dtype_size(r->cache_dtype); /* one layer's cache, in bytes */
    size_t cache_layer = (size_t)(pf__cache_layer(c, l) - r->group->stage_first_layer);
    void *k_cache = r->k_cache ? (char *)r->k_cache + cache_layer * cache_stride : NULL; /* NULL: a rank without heads */
    void *v_cache = r->v_cache ? (char *)r->v_cache + cache_layer * cache_stride : NULL;
    shape->scale = 1.0f / sqrtf((float)c->head_dim);
    /* attn = softmax(q k^T * scale + each query's relative bias) v; x = norm(x + attn Wo (summed) + bo) */
    be->matmul(r, r->qkv, r->x, &L[PF__SLOT_QKV_WEIGHT], PF__OR_NULL(L[PF__SLOT_QKV_BIAS]), N);
    if (shape->heads) {
        if (!predict) be->kv_append(r, k_cache, v_cache, r->qkv, s, shape);
        be->matmul(r, r->ngram_rel, r->x, &L[PF__SLOT_NGRAM_REL_WEIGHT], PF__OR_NULL(L[PF__SLOT_NGRAM_REL_BIAS]), N);
        be->ngram_attend(r, r->attn, r->qkv, r->ngram_rel, c->num_heads, r->ngram_buckets, k_cache, v_cache, s, shape,
                         predict);
    }
    be->matmul(r, r->part, r->attn, &L[PF__SLOT_ATTN_OUT_WEIGHT], NULL, N);
    pf__all_reduce(r, r->part, N * d, "the attention output's all-reduce");
    pf__rank_residual_norm(r, r->x, r->part, PF__OR_NULL(L[PF__SLOT_ATTN_OUT_BIAS]), r->x, &L[PF__SLOT_ATTN_NORM_WEIGHT],
                           PF__OR_NULL(L[PF__SLOT_ATTN_NORM_BIAS]), N, d, eps, PF__NORM_LAYER);
    pf__rank_cross_attention(r, s, L, l - t->first_block, shape);
    /* x = norm(x + act(x Win_r^T + bin_r) Wdown_r^T (summed) + bdown) */
    pf__rank_mlp_in(r, r->mlp, r->x, &L[PF__SLOT_MLP_IN_WEIGHT], PF__OR_NULL(L[PF__SLOT_MLP_IN_BIAS]), N, c->activation);
    be->matmul(r, r->part, r->mlp, &L[PF__SLOT_MLP_DOWN_WEIGHT], NULL, N);
    pf__all_reduce(r, r->part, N * d, "the MLP output's all-reduce");
    pf__rank_residual_norm(r, r->x, r->part, PF__OR_NULL(L[PF__SLOT_MLP_DOWN_BIAS]), r->x, &L[PF__SLOT_MLP_NORM_WEIGHT],
                           PF__OR_NULL(L[PF__SLOT_MLP_NORM_BIAS]), N, d, eps, PF__NORM_LAYER);
}

/* ProphetNet's decoder tower: the main stream (the tokens' embedding, positions and norm, as any
   decoder's) in x and the first predict stream in ngram_x (the n-gram embedding's row ngram - 1
   plus the position table's row after the token's, as transformers' ngram_embeddings[ngram - 1] +
   position_embeddings(position_ids + 1) for stream 0, then the same norm), each block on one
   stream then the other; x holds the predict stream's rows at the end, whose logits
   transformers' generate() reads. */
static void pf__rank_ngram_tower(pf__rank *r, const pf__step *s, const pf__tower *t) {
    const pf__config *c = &r->group->model->config;
    const pf__backend *be = r->backend;
    const pf__weight *W = r->weights;
    size_t N = (size_t)s->batch * s->seq_len, d = (size_t)c->hidden_size;
    /* the predict stream reads one position past the last token's */
    if ((size_t)c->position_offset + 1 + (size_t)s->past + (size_t)s->seq_len > W[PF__SLOT_POSITION_EMBED].rows) {
        pf__rank_fail(r, PF_ERROR_INVALID_ARGUMENT, "the decoder's position %d is past its position table (%zu rows)",
                      s->past + s->seq_len, W[PF__SLOT_POSITION_EMBED].rows);
        return;
    }
    pf__rank_embed(r, s, t);
    /* the n-gram table's row ngram - 1 as a one-row table (kept unquantized), read at row 0 for every
       token, as the zeros the backends stage for a step without segment ids */
    pf__weight ngram_row = W[PF__SLOT_NGRAM_EMBED];
    ngram_row.data = (char *)ngram_row.data + (size_t)(c->ngram - 1) * ngram_row.cols * pf__dtype_size(ngram_row.dtype);
    ngram_row.rows = 1;
    pf__step predict_rows = *s;
    predict_rows.ids = r->group->zero_ids;
    be->embed(r, r->ngram_x, &ngram_row, &predict_rows, 1.0f, 0);
    be->add_positions(r, r->ngram_x, &W[PF__SLOT_POSITION_EMBED], s, c->position_offset + 1);
    be->norm(r, r->ngram_x, r->ngram_x, &W[PF__SLOT_EMBED_NORM_WEIGHT], PF__OR_NULL(W[PF__SLOT_EMBED_NORM_BIAS]), N, d,
             (float)c->norm_eps, PF__NORM_LAYER);
    pf__attn_shape shape = pf__rank_attn_shape(r, t);
    float *main_rows = r->x;
    for (int l = t->first_block; l < t->end_block && !pf__rank_failed(r); l++) {
        pf__rank_ngram_block(r, s, t, l, &shape, 0);
        r->x = r->ngram_x; /* the block's ops work on x: the predict stream's rows in its place */
        pf__rank_ngram_block(r, s, t, l, &shape, 1);
        r->x = main_rows;
    }
    be->copy(r, r->x, r->ngram_x, N * d * sizeof(float));
}

/* A tower's stages on the step's tokens: the embedding, then its blocks; x holds the result. With
   pipeline stages, a stage after the first starts from the stage before's x instead of the
   embedding, and one before the last sends its x on (the ranks of a stage hold the same x). */
static void pf__rank_tower(pf__rank *r, const pf__step *s, const pf__tower *t) {
    size_t N = (size_t)s->batch * s->seq_len, d = (size_t)r->group->model->config.hidden_size;
    if (r->group->model->config.ngram && t->cross) {
        pf__rank_ngram_tower(r, s, t);
        return;
    }
    int staged = r->group->stages > 1;
    if (staged && r->group->stage > 0) {
        pf__rank_stage_receive(r, N * d, t->across_jobs);
    } else {
        pf__rank_embed(r, s, t);
        if (r->group->model->config.disentangled) pf__rank_rel_embeddings(r);
    }
    if (r->group->model->config.entity_aware_attention) pf__rank_entity_gathers(r, s);
    pf__attn_shape shape = pf__rank_attn_shape(r, t);
    pf__residual residual = {0, NULL};
    for (int l = t->first_block; l < t->end_block && !pf__rank_failed(r); l++) {
        if (r->group->model->config.bottleneck_width) pf__rank_bottleneck_block(r, s, l, &shape);
        else pf__rank_block(r, s, t, l, &shape, &residual);
    }
    if (residual.pending) r->backend->add_residual(r, r->x, r->part, residual.bias, N, d); /* the last block's */
    if (staged && !pf__rank_last_stage(r) && r->index == 0 && !pf__rank_failed(r))
        pf__mpi_stage_send(r, r->x, N * d, t->across_jobs);
}

/* x = the tower's final norm of x, where it has one (pre-norm towers). */
static void pf__rank_final_norm(pf__rank *r, const pf__tower *t, float *out, const float *x, size_t rows) {
    const pf__config *c = &r->group->model->config;
    const pf__weight *W = r->weights;
    if (PF__HAS(W[t->final_norm]) || c->norm_weightless)
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
    size_t layer = pf__rank_cache_layer(r);
    pf__rank_tower(r, s, &t);
    if (pf__rank_failed(r)) return;
    pf__rank_final_norm(r, &t, r->x, r->x, N);
    for (int l = c->encoder_layers; l < c->num_layers && r->cross_k; l++) {
        const pf__weight *L = r->weights + pf__slot_index(PF__SLOT_FIRST_LAYER, l) - PF__SLOT_FIRST_LAYER;
        size_t k = (size_t)(l - c->encoder_layers);
        r->backend->matmul(r, r->cross_k + k * layer, r->x, &L[PF__SLOT_CROSS_K_WEIGHT], PF__OR_NULL(L[PF__SLOT_CROSS_K_BIAS]), N);
        r->backend->matmul(r, r->cross_v + k * layer, r->x, &L[PF__SLOT_CROSS_V_WEIGHT], PF__OR_NULL(L[PF__SLOT_CROSS_V_BIAS]), N);
    }
    if (r->world == 0 && job->hidden && !r->error) r->backend->download(r, job->hidden, r->x, N * d * sizeof(float));
}

static void pf__rank_encoder_outputs(pf__rank *r, const pf__job *job, const pf__tower *t);

/* Where pf__rank_decoder_hidden leaves the rows whose logits are wanted: h when it copied or
   normed them there, else x. */
static const float *pf__rank_decoder_rows(const pf__rank *r, const pf__job *job) {
    const pf__tower t = pf__tower_of(r, 0);
    int picked = !job->all_positions && job->step.seq_len > 1;
    return picked || PF__HAS(r->weights[t.final_norm]) || r->group->model->config.norm_weightless ||
                   PF__HAS(r->weights[PF__SLOT_HEAD_TRANSFORM_WEIGHT])
               ? r->h
               : r->x;
}

/* A decoder's device work up to the logits, with no wait and no host copy (a backend may capture
   it: pf__backend.run_decoder_step): the tower, then h = final norm of the rows wanted (all, or
   each sequence's last), or x itself. */
static void pf__rank_decoder_hidden(pf__rank *r, const pf__job *job) {
    const pf__step *s = &job->step;
    pf__tower t = pf__tower_of(r, 0);
    size_t d = (size_t)r->group->model->config.hidden_size;
    size_t rows = job->all_positions ? (size_t)s->batch * s->seq_len : (size_t)s->batch;
    t.across_jobs = job->hidden_across_jobs;
    pf__rank_tower(r, s, &t);
    if (pf__rank_failed(r) || !pf__rank_last_stage(r) || !r->weights[PF__SLOT_LM_HEAD].rows) return; /* more ranks than vocabulary rows */
    /* the wanted rows of x: all of them, or each sequence's last (contiguous when one per row) */
    const float *wanted = r->x;
    if (!job->all_positions && s->seq_len > 1) {
        for (size_t b = 0; b < rows; b++) r->backend->copy(r, r->h + b * d, r->x + (b * s->seq_len + s->seq_len - 1) * d, d * sizeof(float));
        wanted = r->h;
    }
    if (PF__HAS(r->weights[t.final_norm]) || r->group->model->config.norm_weightless) {
        pf__rank_final_norm(r, &t, r->h, wanted, rows);
        wanted = r->h;
    }
    const pf__weight *W = r->weights;
    if (PF__HAS(W[PF__SLOT_HEAD_TRANSFORM_WEIGHT])) { /* h = norm(act(wanted W^T + b)): BERT's LM head as a decoder's */
        const pf__config *c = &r->group->model->config;
        r->backend->matmul(r, r->part, wanted, &W[PF__SLOT_HEAD_TRANSFORM_WEIGHT], PF__OR_NULL(W[PF__SLOT_HEAD_TRANSFORM_BIAS]),
                           rows);
        r->backend->activation(r, r->part, rows * d, c->head_activation < 0 ? c->activation : (pf__activation)c->head_activation);
        r->backend->norm(r, r->h, r->part, &W[PF__SLOT_HEAD_NORM_WEIGHT], PF__OR_NULL(W[PF__SLOT_HEAD_NORM_BIAS]), rows, d,
                         (float)c->norm_eps, pf__archs[c->arch].norm);
    }
}

/* A decoder run as an encoder (pf_encode, pf_embed), one chunk of positions: rank 0 downloads the
   final norm of every position; a token classifier's or span head's logits for each (transformers'
   generic ...ForTokenClassification, ...ForQuestionAnswering); or a sequence-classification head's
   scores (...ForSequenceClassification: the score of each row's last token that is not padding)
   for the rows whose pooled token is in this chunk: job->pool_at[b] its column here, -1 for none. */
static void pf__rank_decoder_encoding(pf__rank *r, const pf__job *job, const pf__tower *t) {
    const pf__config *c = &r->group->model->config;
    const pf__backend *be = r->backend;
    const pf__step *s = &job->step;
    size_t B = (size_t)s->batch, N = B * (size_t)s->seq_len, d = (size_t)c->hidden_size, labels = (size_t)c->num_labels;
    pf__rank_final_norm(r, t, r->x, r->x, N);
    if (r->world != 0 || r->error) return;
    be->download(r, job->hidden, r->x, N * d * sizeof(float));
    if (job->logits && (c->head == PF_HEAD_TOKEN_CLASSIFICATION || c->head == PF_HEAD_QUESTION_ANSWERING)) { /* every position's */
        pf__slot head = c->head == PF_HEAD_TOKEN_CLASSIFICATION ? PF__SLOT_CLASSIFIER_WEIGHT : PF__SLOT_SPAN_WEIGHT;
        size_t outputs = c->head == PF_HEAD_TOKEN_CLASSIFICATION ? labels : 2;
        be->matmul(r, r->head_out, r->x, &r->weights[head], PF__OR_NULL(r->weights[head + 1]), N);
        be->download(r, job->logits, r->head_out, N * outputs * sizeof(float));
        return;
    }
    if (c->head != PF_HEAD_SEQUENCE_CLASSIFICATION || !job->logits || !job->pool_at) return;
    for (size_t b = 0; b < B; b++) {
        size_t column = job->pool_at[b] >= 0 ? (size_t)job->pool_at[b] : (size_t)s->seq_len - 1; /* unused when -1 */
        be->copy(r, r->h + b * d, r->x + (b * (size_t)s->seq_len + column) * d, d * sizeof(float));
    }
    be->matmul(r, r->head_out, r->h, &r->weights[PF__SLOT_CLASSIFIER_WEIGHT], NULL, B);
    for (size_t b = 0; b < B; b++)
        if (job->pool_at[b] >= 0) be->download(r, job->logits + b * labels, r->head_out + b * labels, labels * sizeof(float));
}

/* ---- Funnel Transformer ---------------------------------------------------------------------- */

/* The tokens a row of `length` has after one pooling (transformers' pool_tensor: with
   separate_cls the first token kept apart and, truncate_seq, the last dropped; then each pair one
   token, a lone last one its own). */
PF_PRIVATE int pf__funnel_pooled_length(const pf__config *c, int length) {
    if (!c->funnel_separate_cls) return (length + 1) / 2;
    int rest = c->funnel_truncate_seq ? length - 2 : length - 1; /* after the first token */
    return 1 + (rest > 0 ? (rest + 1) / 2 : 0);
}

/* The tokens a Funnel model gives a row of `length` (FunnelBaseModel: those of its last block;
   with the decoder: `length`), or -1 for a row too short to pool before some block (transformers
   leaves it unpooled there, but reads position terms made for the pooled length: refused). */
PF_PRIVATE int pf__funnel_output_length(const pf__config *c, int length) {
    int pooled = length;
    for (int b = 1; b < c->funnel_blocks; b++) {
        if (pooled <= (c->funnel_separate_cls ? 2 : 1)) return -1;
        pooled = pf__funnel_pooled_length(c, pooled);
    }
    return c->funnel_decoder ? length : pooled;
}

/* The fewest tokens a row may have (pf__funnel_output_length not -1). */
PF_PRIVATE int pf__funnel_shortest_row(const pf__config *c) {
    int n = 1;
    while (pf__funnel_output_length(c, n) < 0) n++;
    return n;
}

/* One level of pooling of a Funnel step: each row's tokens after its left pads. */
typedef struct pf__funnel_level {
    int len;           /* tokens a row, pads included (the longest row's) */
    int first, stride; /* a row's token t at position first + (t - pad) * stride: 0, 1, 2 ... before any
                          pooling; then the pairs' first tokens', and with separate_cls the class token
                          one stride before the second token (transformers' stride_pool_pos) */
    int *pad;          /* host [batch] */
    int32_t *types;    /* host [batch][len]: segment ids, pooled as transformers' stride_pool (a pair's first) */
} pf__funnel_level;

/* next = cur pooled, and x (cur's rows) pooled into out (next's rows): the mean of each pair (or
   their max, as b + relu(a - b)), the class token alone with separate_cls; a pad's row is its
   row's first token's (finite, never read). part is scratch. */
static void pf__rank_funnel_pool(pf__rank *r, float *out, const float *x, const pf__funnel_level *cur,
                                 pf__funnel_level *next, int batch) {
    const pf__config *c = &r->group->model->config;
    const pf__backend *be = r->backend;
    size_t d = (size_t)c->hidden_size, tokens = r->group->max_tokens;
    next->len = 0;
    for (int b = 0; b < batch; b++) {
        int pooled = pf__funnel_pooled_length(c, cur->len - cur->pad[b]);
        if (pooled > next->len) next->len = pooled;
    }
    next->stride = 2 * cur->stride;
    next->first = c->funnel_separate_cls ? 1 - next->stride : 0;
    int32_t *lo_rows = r->funnel_rows, *hi_rows = r->funnel_rows + tokens;
    float *lo_scale = r->funnel_scales, *hi_scale = r->funnel_scales + tokens;
    for (int b = 0; b < batch; b++) {
        int length = cur->len - cur->pad[b], pooled = pf__funnel_pooled_length(c, length);
        int last = c->funnel_separate_cls && c->funnel_truncate_seq ? length - 2 : length - 1; /* the last pooled */
        size_t row = (size_t)b * cur->len + (size_t)cur->pad[b];
        next->pad[b] = next->len - pooled;
        for (int t = 0; t < next->len; t++) {
            size_t n = (size_t)b * next->len + (size_t)t;
            int k = t - next->pad[b], lo = 0, hi = 0; /* the window of pooled token k */
            if (k > 0 || (k == 0 && !c->funnel_separate_cls)) {
                lo = c->funnel_separate_cls ? 2 * k - 1 : 2 * k;
                hi = lo + 1 <= last ? lo + 1 : lo;
            }
            lo_rows[n] = (int32_t)(row + (size_t)lo);
            hi_rows[n] = (int32_t)(row + (size_t)hi);
            next->types[n] = k >= 0 ? cur->types[row + (size_t)lo] : 0;
            lo_scale[n] = c->funnel_pool_max || hi == lo ? 1.0f : 0.5f;
            hi_scale[n] = c->funnel_pool_max ? -1.0f : hi == lo ? 0.0f : 0.5f;
        }
    }
    size_t count = (size_t)batch * next->len;
    be->gather_rows(r, out, x, lo_rows, lo_scale, count, d);
    be->gather_rows(r, r->part, x, hi_rows, hi_scale, count, d);
    be->add_residual(r, out, r->part, NULL, count, d); /* mean: a/2 + b/2; max: a - b */
    if (c->funnel_pool_max) { /* max(a, b) = b + relu(a - b) */
        be->activation(r, out, count * d, PF__ACT_RELU);
        be->gather_rows(r, r->part, x, hi_rows, NULL, count, d);
        be->add_residual(r, out, r->part, NULL, count, d);
    }
}

/* The relative terms' inputs of queries at level q over keys at level k, into the rank's
   memory: funnel_bias's ints, and the sinusoids of the distances p_q - p_k (row m: rel_first +
   m k_stride, XLNet's clamped to +-rel_clamp_len; its first hidden / 2 values sin(distance f_i),
   then cos, f_i = 10000^(-i / (hidden / 2)) as transformers computes them in fp32: XLNet's
   10000^(-2i / hidden) is the same value). Returns the shape, f->heads 0 for a rank without heads;
   *rows the sinusoids' rows. */
static pf__funnel_shape pf__rank_funnel_terms(pf__rank *r, const pf__funnel_level *q, const pf__funnel_level *k, int batch,
                                              size_t *rows) {
    const pf__config *c = &r->group->model->config;
    pf__funnel_shape f = {batch, q->len, k->len, r->share.heads, c->head_dim, q->first, q->stride, k->first, k->stride,
                          0, c->funnel_separate_cls, c->xlnet, c->rel_causal, 0, 1.0f / sqrtf((float)c->head_dim)};
    f.rel_first = q->first - k->first - (k->len - 1) * k->stride;
    *rows = (size_t)(((q->len - 1) * q->stride + (k->len - 1) * k->stride) / k->stride + 1);
    int32_t *ints = r->funnel_host_ints;
    size_t B = (size_t)batch;
    for (size_t b = 0; b < B; b++) ints[b] = q->pad[b], ints[B + b] = k->pad[b];
    memcpy(ints + 2 * B, q->types, B * q->len * sizeof(int32_t));
    memcpy(ints + 2 * B + B * q->len, k->types, B * k->len * sizeof(int32_t));
    r->backend->upload(r, r->funnel_ints, ints, (2 * B + B * (q->len + k->len)) * sizeof(int32_t));
    size_t d = (size_t)c->hidden_size, half = d / 2;
    float *table = r->funnel_sinusoid_host;
    for (size_t m = 0; m < *rows; m++) {
        int at = f.rel_first + (int)m * k->stride, clamp = c->rel_clamp_len;
        float distance = (float)(clamp > 0 && at > clamp ? clamp : clamp > 0 && at < -clamp ? -clamp : at);
        for (size_t i = 0; i < half; i++) {
            float angle = distance * (1.0f / powf(10000.0f, (float)i / (float)half));
            table[m * d + i] = sinf(angle);
            table[m * d + half + i] = cosf(angle);
        }
    }
    r->backend->upload(r, r->funnel_sinusoid, table, *rows * d * sizeof(float));
    return f;
}

/* The attention and MLP of a Funnel, XLNet or Transformer-XL layer (weights L) for the f->batch *
   f->q_len query rows q_rows over the keys k and values v (attend's cross layout: f->k_len of them a
   row, k_pads the rows' left pads), r->funnel_rel the layer's projected sinusoids, ints
   funnel_bias's: score = ((q + r_w_bias) . k + the position and segment terms (funnel_bias; no
   segment term without seg_embed)) / sqrt(head_dim), softmax over the row's keys, q projected from
   q_in (q_rows, or pre-norm their norm). Post-norm (BERT's): q_rows = norm(q_rows + attn Wo^T + bo),
   then = norm(q_rows + MLP(q_rows)); pre-norm (Transformer-XL's pre_lnorm): q_rows += attn Wo^T +
   bo, then += MLP(norm(q_rows)); each sum over the ranks. */
static void pf__rank_relative_block(pf__rank *r, const pf__weight *L, float *q_rows, const float *q_in, const float *k,
                                    const float *v, int *k_pads, const int32_t *ints, const pf__funnel_shape *f) {
    const pf__config *c = &r->group->model->config;
    const pf__backend *be = r->backend;
    size_t Nq = (size_t)f->batch * f->q_len, d = (size_t)c->hidden_size;
    float eps = (float)c->norm_eps;
    const pf__weight *seg = PF__OR_NULL(L[PF__SLOT_FUNNEL_SEG_EMBED]); /* read value by value: not in blocks */
    if (f->heads && seg && seg->dtype != PF__DTYPE_F32 && seg->dtype != PF__DTYPE_F16 && seg->dtype != PF__DTYPE_BF16) {
        pf__rank_fail(r, PF_ERROR_UNSUPPORTED, "%s's seg_embed stored as %s is not supported (dtype f32, f16 or bf16 "
                      "is)", c->xlnet ? "XLNet" : "Funnel", pf__dtype_name(seg->dtype));
        return;
    }
    be->matmul(r, r->qkv, q_in, &L[PF__SLOT_CROSS_Q_WEIGHT], NULL, Nq);
    be->funnel_bias(r, r->funnel_bias, r->qkv, r->funnel_rel, &L[PF__SLOT_FUNNEL_R_R_BIAS],
                    seg ? &L[PF__SLOT_FUNNEL_R_S_BIAS] : NULL, seg, ints, f);
    be->add_residual(r, r->qkv, NULL, &L[PF__SLOT_CROSS_Q_BIAS], Nq, (size_t)f->heads * f->head_dim); /* q + r_w_bias */
    pf__tower t = pf__tower_of(r, 1);
    pf__attn_shape shape = pf__rank_attn_shape(r, &t);
    shape.mask = PF__MASK_CROSS; /* queries and keys of the layer's own rows: the keys' left pads excepted */
    shape.cache_len = f->k_len;
    shape.cache_dtype = PF__DTYPE_F32;
    shape.scale = f->scale;
    shape.dense_bias = r->funnel_bias;
    pf__step keys;
    memset(&keys, 0, sizeof keys);
    keys.batch = f->batch;
    keys.seq_len = f->q_len;
    keys.pad = k_pads;
    be->attend(r, r->attn, r->qkv, k, v, &keys, &shape);
    be->matmul(r, r->part, r->attn, &L[PF__SLOT_ATTN_OUT_WEIGHT], NULL, Nq);
    pf__all_reduce(r, r->part, Nq * d, "the attention output's all-reduce");
    if (c->pre_norm) {
        be->add_residual(r, q_rows, r->part, PF__OR_NULL(L[PF__SLOT_ATTN_OUT_BIAS]), Nq, d);
        be->norm(r, r->h, q_rows, &L[PF__SLOT_MLP_NORM_WEIGHT], PF__OR_NULL(L[PF__SLOT_MLP_NORM_BIAS]), Nq, d, eps,
                 PF__NORM_LAYER);
        pf__rank_mlp_in(r, r->mlp, r->h, &L[PF__SLOT_MLP_IN_WEIGHT], PF__OR_NULL(L[PF__SLOT_MLP_IN_BIAS]), Nq, c->activation);
    } else {
        pf__rank_residual_norm(r, q_rows, r->part, PF__OR_NULL(L[PF__SLOT_ATTN_OUT_BIAS]), q_rows,
                               &L[PF__SLOT_ATTN_NORM_WEIGHT], PF__OR_NULL(L[PF__SLOT_ATTN_NORM_BIAS]), Nq, d, eps,
                               PF__NORM_LAYER);
        pf__rank_mlp_in(r, r->mlp, q_rows, &L[PF__SLOT_MLP_IN_WEIGHT], PF__OR_NULL(L[PF__SLOT_MLP_IN_BIAS]), Nq, c->activation);
    }
    be->matmul(r, r->part, r->mlp, &L[PF__SLOT_MLP_DOWN_WEIGHT], NULL, Nq);
    pf__all_reduce(r, r->part, Nq * d, "the MLP output's all-reduce");
    if (c->pre_norm)
        be->add_residual(r, q_rows, r->part, PF__OR_NULL(L[PF__SLOT_MLP_DOWN_BIAS]), Nq, d);
    else
        pf__rank_residual_norm(r, q_rows, r->part, PF__OR_NULL(L[PF__SLOT_MLP_DOWN_BIAS]), q_rows,
                               &L[PF__SLOT_MLP_NORM_WEIGHT], PF__OR_NULL(L[PF__SLOT_MLP_NORM_BIAS]), Nq, d, eps,
                               PF__NORM_LAYER);
}

/* Layer l's weights on this rank. */
static const pf__weight *pf__rank_layer_weights(const pf__rank *r, int l) {
    return r->weights + pf__slot_index(PF__SLOT_FIRST_LAYER, l) - PF__SLOT_FIRST_LAYER;
}

/* One Funnel layer l: queries from q_rows (f's level), keys and values from kv_rows (level kl; the
   same rows but after a pooling); the layer's output into q_rows (pf__rank_relative_block). f:
   pf__rank_funnel_terms' for these levels. */
static void pf__rank_funnel_layer(pf__rank *r, int l, float *q_rows, const float *kv_rows, const pf__funnel_level *kl,
                                  const pf__funnel_shape *f, size_t rel_rows) {
    const pf__backend *be = r->backend;
    const pf__weight *L = pf__rank_layer_weights(r, l);
    size_t Nk = (size_t)f->batch * kl->len;
    be->matmul(r, r->funnel_k, kv_rows, &L[PF__SLOT_CROSS_K_WEIGHT], PF__OR_NULL(L[PF__SLOT_CROSS_K_BIAS]), Nk);
    be->matmul(r, r->funnel_v, kv_rows, &L[PF__SLOT_CROSS_V_WEIGHT], PF__OR_NULL(L[PF__SLOT_CROSS_V_BIAS]), Nk);
    be->matmul(r, r->funnel_rel, r->funnel_sinusoid, &L[PF__SLOT_FUNNEL_R_KERNEL], NULL, rel_rows);
    pf__rank_relative_block(r, L, q_rows, q_rows, r->funnel_k, r->funnel_v, kl->pad, r->funnel_ints, f);
}

/* FunnelModel's decoder input (FunnelDecoder's upsample) into out at the input's level: each row's
   last-level rows repeated 2^(blocks - 1) times (the class token alone with separate_cls; rows past
   the repeats zero, as transformers pads them), plus first, the first block's output. */
static void pf__rank_funnel_upsample(pf__rank *r, float *out, const float *x, const pf__funnel_level *last,
                                     const pf__funnel_level *input, const float *first, int batch) {
    const pf__config *c = &r->group->model->config;
    size_t d = (size_t)c->hidden_size, count = (size_t)batch * input->len;
    int stride = last->stride / input->stride;
    int32_t *rows = r->funnel_rows;
    float *scales = r->funnel_scales;
    for (int b = 0; b < batch; b++) {
        int kept = last->len - last->pad[b];
        size_t row = (size_t)b * last->len + (size_t)last->pad[b]; /* the row's first last-level token */
        for (int t = 0; t < input->len; t++) {
            size_t n = (size_t)b * input->len + (size_t)t;
            int k = t - input->pad[b], from = 0; /* the last-level token k repeats */
            if (k > 0) from = c->funnel_separate_cls ? 1 + (k - 1) / stride : k / stride;
            int inside = k >= 0 && from < kept;
            rows[n] = (int32_t)(row + (size_t)(inside ? from : 0));
            scales[n] = inside ? 1.0f : 0.0f; /* beyond the repeats (and pads): 0 times a finite row */
        }
    }
    r->backend->gather_rows(r, out, x, rows, scales, count, d);
    r->backend->add_residual(r, out, first, NULL, count, d);
}

/* FunnelBaseModel (FunnelEncoder) on the step's rows: the embedding, then each block's layers,
   each run its block_repeats times; before each block after the first the sequence pooled (its
   first layer's queries alone with pool_q_only, its keys and values the rows before the pooling).
   FunnelModel then upsamples and runs its decoder layers at the input's level. Then the encoder's
   outputs over the last rows (the base model's: its last level's, its first token pooled). Each
   row as alone: its tokens after its left pads. */
static void pf__rank_funnel(pf__rank *r, const pf__job *job) {
    const pf__config *c = &r->group->model->config;
    const pf__backend *be = r->backend;
    const pf__step *s = &job->step;
    int B = s->batch;
    size_t d = (size_t)c->hidden_size, tokens = r->group->max_tokens, max_batch = (size_t)r->group->max_batch;
    pf__funnel_level levels[3] = {{s->seq_len, 0, 1, r->funnel_pads, r->funnel_types},
                                  {0, 0, 1, r->funnel_pads + max_batch, r->funnel_types + tokens},
                                  {0, 0, 1, r->funnel_pads + 2 * max_batch, r->funnel_types + 2 * tokens}};
    pf__funnel_level *input = &levels[0], *cur = input, *next = &levels[1]; /* input kept for the decoder */
    for (int b = 0; b < B; b++) cur->pad[b] = s->pad ? s->pad[b] : 0;
    for (size_t n = 0; n < (size_t)B * s->seq_len; n++) cur->types[n] = s->type_ids ? s->type_ids[n] : 0;
    pf__tower t = pf__tower_of(r, 1);
    pf__rank_embed(r, s, &t);
    size_t rel_rows = 0;
    int applied = 0; /* layers run */
    pf__funnel_shape f = pf__rank_funnel_terms(r, cur, cur, B, &rel_rows);
    for (int block = 0, l = 0; block < c->funnel_blocks && !pf__rank_failed(r); block++) {
        if (block > 0) { /* h = x pooled; the first layer's queries */
            pf__rank_funnel_pool(r, r->h, r->x, cur, next, B);
            if (c->funnel_pool_q_only) {
                f = pf__rank_funnel_terms(r, next, cur, B, &rel_rows);
                pf__rank_funnel_layer(r, l, r->h, r->x, cur, &f, rel_rows);
                be->copy(r, r->x, r->h, (size_t)B * next->len * d * sizeof(float));
            } else {
                be->copy(r, r->x, r->h, (size_t)B * next->len * d * sizeof(float));
            }
            pf__funnel_level *spent = cur;
            cur = next, next = spent == input ? &levels[2] : spent;
            f = pf__rank_funnel_terms(r, cur, cur, B, &rel_rows);
        }
        for (int i = 0; i < c->funnel_block_sizes[block] && !pf__rank_failed(r); i++, l++)
            for (int k = 0; k < c->funnel_block_repeats[block]; k++) {
                if (!(block > 0 && c->funnel_pool_q_only && i == 0 && k == 0)) /* that one ran with the pooling */
                    pf__rank_funnel_layer(r, l, r->x, r->x, cur, &f, rel_rows);
                /* the decoder's skip input: the state after block_sizes[0] layers run (transformers'
                   hidden_states[block_sizes[0]], which with block_repeats[0] > 1 is inside block 0) */
                if (c->funnel_decoder && ++applied == c->funnel_block_sizes[0])
                    be->copy(r, r->funnel_first, r->x, (size_t)B * input->len * d * sizeof(float));
            }
    }
    if (c->funnel_decoder && !pf__rank_failed(r)) { /* FunnelDecoder: upsampled, then its layers at the input's level */
        pf__rank_funnel_upsample(r, r->h, r->x, cur, input, r->funnel_first, B);
        be->copy(r, r->x, r->h, (size_t)B * input->len * d * sizeof(float));
        cur = input;
        f = pf__rank_funnel_terms(r, cur, cur, B, &rel_rows);
        for (int l = c->num_layers - c->funnel_decoder_layers; l < c->num_layers && !pf__rank_failed(r); l++)
            pf__rank_funnel_layer(r, l, r->x, r->x, cur, &f, rel_rows);
    }
    if (pf__rank_failed(r)) return;
    pf__job out = *job; /* the last rows */
    out.step.seq_len = cur->len;
    out.step.pad = cur->pad;
    pf__rank_encoder_outputs(r, &out, &t);
}

/* The memory rows an XLNet generation step at position `past` attends to before its own (its
   keys and values at positions past - mlen .. past - 1): with xlnet_mems the rows before the
   step's (transformers keeps the last mem_len rows of memory and step, then drops the last 2,
   which the next step runs again: mem_len - 2 at most); without, the step runs every token. */
static int pf__xlnet_memory_rows(const pf__config *c, int past) {
    if (!c->xlnet_mems || c->xlnet_mem_len <= 0) return past;
    int kept = c->xlnet_mem_len - 2 > 0 ? c->xlnet_mem_len - 2 : 0;
    return past < kept ? past : kept;
}

/* XLNetLMHeadModel's step as its generate() runs it (one row): the step's tokens through the
   content stream over the memory's keys and values and their own (transformers' dummy token after
   them is seen by no one and kept nowhere: not run), and the query stream: mask_emb at the dummy's
   position through each layer's attention over the same keys and values, then its MLP, with its
   own residuals; its logits predict the next token. Each layer's keys and values of a position
   stay in xlnet_mem_k / _v until a later step runs the position again; positions relative to the
   memory's first row, as transformers counts them. */
static void pf__rank_xlnet_generate(pf__rank *r, const pf__job *job) {
    const pf__config *c = &r->group->model->config;
    const pf__backend *be = r->backend;
    const pf__step *s = &job->step;
    size_t d = (size_t)c->hidden_size, kv = (size_t)r->share.kv_heads * (size_t)c->head_dim;
    size_t cache = (size_t)r->group->cache_len, T = r->group->max_tokens;
    int w = s->seq_len, past = s->past, mlen = pf__xlnet_memory_rows(c, past), first = past - mlen;
    if (s->batch != 1 || past + w > (int)cache) {
        pf__rank_fail(r, PF_ERROR_INVALID_ARGUMENT, "XLNet generates one row at a time within the cache (batch %d, "
                      "positions %d)", s->batch, past + w);
        return;
    }
    /* the content queries at positions mlen.. and the query stream's at mlen + w, over keys 0..mlen + w - 1:
       one sinusoid table serves both; no pads, no segments (generate() gives no token_type_ids) */
    memset(r->funnel_pads, 0, 2 * sizeof(int));
    memset(r->funnel_types, 0, 2 * T * sizeof(int32_t));
    pf__funnel_level queries = {w + 1, mlen, 1, r->funnel_pads, r->funnel_types};
    pf__funnel_level keys = {mlen + w, 0, 1, r->funnel_pads + 1, r->funnel_types + T};
    size_t rel_rows = 0;
    pf__funnel_shape content = pf__rank_funnel_terms(r, &queries, &keys, 1, &rel_rows), query = content;
    content.q_len = w;
    query.q_len = 1;
    query.q_first = mlen + w;
    pf__tower t = pf__tower_of(r, 1);
    pf__rank_embed(r, s, &t);
    pf__step stream = *s;
    stream.seq_len = 1;
    stream.ids = r->group->zero_ids;
    stream.pad = NULL;
    be->embed(r, r->xlnet_g, &r->weights[PF__SLOT_MASK_EMBED], &stream, 1.0f, 0);
    for (int l = 0; l < c->num_layers && !pf__rank_failed(r); l++) {
        const pf__weight *L = pf__rank_layer_weights(r, l);
        float *k = r->xlnet_mem_k + (size_t)l * cache * kv, *v = r->xlnet_mem_v + (size_t)l * cache * kv;
        be->matmul(r, k + (size_t)past * kv, r->x, &L[PF__SLOT_CROSS_K_WEIGHT], PF__OR_NULL(L[PF__SLOT_CROSS_K_BIAS]), w);
        be->matmul(r, v + (size_t)past * kv, r->x, &L[PF__SLOT_CROSS_V_WEIGHT], PF__OR_NULL(L[PF__SLOT_CROSS_V_BIAS]), w);
        be->matmul(r, r->funnel_rel, r->funnel_sinusoid, &L[PF__SLOT_FUNNEL_R_KERNEL], NULL, rel_rows);
        k += (size_t)first * kv, v += (size_t)first * kv;
        pf__rank_relative_block(r, L, r->x, r->x, k, v, keys.pad, r->funnel_ints, &content);
        pf__rank_relative_block(r, L, r->xlnet_g, r->xlnet_g, k, v, keys.pad, r->funnel_ints, &query);
    }
    if (!pf__rank_failed(r) && job->logits) pf__rank_vocab_logits(r, job, r->xlnet_g, 1, d);
}

/* ---- Transformer-XL ------------------------------------------------------------------------- */

/* Transformer-XL's adaptive input of the step's tokens into x (pf__config.txl_*): each cluster's
   table row of the tokens in it (embed's zeros for the others), through the cluster's projection
   where it has one, summed over the clusters, then times sqrt(d_model) (transformers' emb_scale,
   a double made fp32 by the multiply). The tables are whole on every rank. */
static void pf__rank_txl_embed(pf__rank *r, const pf__step *s) {
    const pf__config *c = &r->group->model->config;
    const pf__backend *be = r->backend;
    const pf__weight *W = r->weights;
    size_t N = (size_t)s->batch * s->seq_len, d = (size_t)c->hidden_size;
    int tables = c->txl_div_val == 1 ? 1 : c->txl_clusters;
    for (int i = 0; i < tables && !pf__rank_failed(r); i++) {
        const pf__weight *table = &W[i ? PF__SLOT_TXL_EMBED_1 + i - 1 : PF__SLOT_TOKEN_EMBED];
        const pf__weight *proj = &W[PF__SLOT_TXL_EMBED_PROJ_0 + i];
        float *into = i ? r->part : r->x;
        if (PF__HAS(*proj)) {
            be->embed(r, r->txl_embed, table, s, 1.0f, c->txl_cutoff_ends[i]);
            be->matmul(r, into, r->txl_embed, proj, NULL, N);
        } else {
            be->embed(r, into, table, s, 1.0f, c->txl_cutoff_ends[i]);
        }
        if (i) be->add_residual(r, r->x, r->part, NULL, N, d);
    }
    be->scale(r, r->x, N * d, (float)sqrt((double)d));
}

/* A layer's keys and values of the txl_mem_len zero rows a row's memory starts with (transformers'
   init_mems): those of one zero row (pre-norm: of its norm, the norm's bias), copied down the rows
   in doublings. x: any finite row, scaled by 0 into the zero row. */
static void pf__rank_txl_zero_memory(pf__rank *r, const pf__weight *L, float *k, float *v, const float *x) {
    const pf__config *c = &r->group->model->config;
    const pf__backend *be = r->backend;
    size_t d = (size_t)c->hidden_size, kv = (size_t)r->share.kv_heads * (size_t)c->head_dim, M = (size_t)c->txl_mem_len;
    be->copy(r, r->part, x, d * sizeof(float));
    be->scale(r, r->part, d, 0.0f);
    if (c->pre_norm)
        be->norm(r, r->part, r->part, &L[PF__SLOT_ATTN_NORM_WEIGHT], PF__OR_NULL(L[PF__SLOT_ATTN_NORM_BIAS]), 1, d,
                 (float)c->norm_eps, PF__NORM_LAYER);
    be->matmul(r, k, r->part, &L[PF__SLOT_CROSS_K_WEIGHT], NULL, 1);
    be->matmul(r, v, r->part, &L[PF__SLOT_CROSS_V_WEIGHT], NULL, 1);
    for (size_t done = 1; done < M; done *= 2) {
        size_t more = M - done < done ? M - done : done;
        be->copy(r, k + done * kv, k, more * kv * sizeof(float));
        be->copy(r, v + done * kv, v, more * kv * sizeof(float));
    }
}

/* Rows [first, first + count) of a weight stored plainly (f32, f16 or bf16) as a weight of their
   own; 0 for one stored otherwise (blocks, a stack, reordered inputs). */
static int pf__weight_rows(const pf__weight *w, size_t first, size_t count, pf__weight *rows) {
    if ((w->dtype != PF__DTYPE_F32 && w->dtype != PF__DTYPE_F16 && w->dtype != PF__DTYPE_BF16) || w->parts ||
        w->input_order || first + count > w->rows)
        return 0;
    *rows = *w;
    rows->data = (char *)w->data + pf__weight_bytes(w->dtype, first, w->cols);
    rows->rows = count;
    return 1;
}

/* log(sum(exp(x))) over two spans of values, from their maximum, as log_softmax takes it. */
static float pf__log_sum_exp(const float *a, size_t na, const float *b, size_t nb) {
    float max = -INFINITY;
    for (size_t i = 0; i < na; i++) max = a[i] > max ? a[i] : max;
    for (size_t i = 0; i < nb; i++) max = b[i] > max ? b[i] : max;
    double sum = 0;
    for (size_t i = 0; i < na; i++) sum += exp((double)(a[i] - max));
    for (size_t i = 0; i < nb; i++) sum += exp((double)(b[i] - max));
    return max + (float)log(sum);
}

/* TransfoXLLMHeadModel's adaptive softmax (ProjectedAdaptiveLogSoftmax, labels None) of `rows`
   hidden rows, on rank 0: each cluster's logits (its rows of the table, or its own table, through
   its projection where it has one; the head's also the tail clusters' logits, cluster_weight's),
   on the device; then on the host the head's log-softmax over its ids and the tail clusters', each
   tail id's log-probability its cluster's plus its log-softmax within the cluster; into
   job->logits' rows, the log-probability of every id. */
static void pf__rank_txl_log_softmax(pf__rank *r, const pf__job *job, const float *h_rows, size_t rows) {
    const pf__group *g = r->group;
    const pf__config *c = &g->model->config;
    const pf__backend *be = r->backend;
    const pf__weight *W = r->weights;
    if (r->world != 0 || !job->logits) return;
    size_t d = (size_t)c->hidden_size, V = (size_t)c->vocab_size, C = (size_t)c->txl_clusters - 1, width = V + C;
    const int *ends = c->txl_cutoff_ends;
    for (size_t first = 0; first < rows && !pf__rank_failed(r); first += g->logit_rows) {
        size_t n = rows - first < g->logit_rows ? rows - first : g->logit_rows;
        const float *h = h_rows + first * d;
        for (int i = 0; i <= (int)C; i++) { /* cluster i's logits [n][its ids] at n * ends[i]; the head's tails' at n * V */
            int table = c->txl_div_val == 1 ? 0 : i;
            size_t lo = (size_t)ends[i], count = (size_t)(ends[i + 1] - ends[i]), at = c->txl_div_val == 1 ? lo : 0;
            pf__weight weight, bias;
            if (!pf__weight_rows(&W[PF__SLOT_TXL_OUT_WEIGHT_0 + table], at, count, &weight) ||
                !pf__weight_rows(&W[PF__SLOT_TXL_OUT_BIAS_0 + table], at, count, &bias)) {
                pf__rank_fail(r, PF_ERROR_UNSUPPORTED, "Transformer-XL's adaptive softmax reads its weights in f32, f16 "
                              "or bf16 (they are stored as %s here)", pf__dtype_name(W[PF__SLOT_TXL_OUT_WEIGHT_0 + table].dtype));
                return;
            }
            const float *projected = h;
            if (PF__HAS(W[PF__SLOT_TXL_OUT_PROJ_0 + i])) {
                be->matmul(r, r->txl_proj, h, &W[PF__SLOT_TXL_OUT_PROJ_0 + i], NULL, n);
                projected = r->txl_proj;
            }
            be->matmul(r, r->txl_logits + n * lo, projected, &weight, &bias, n);
            if (i == 0 && C)
                be->matmul(r, r->txl_logits + n * V, projected, &W[PF__SLOT_TXL_CLUSTER_WEIGHT],
                           &W[PF__SLOT_TXL_CLUSTER_BIAS], n);
        }
        be->download(r, r->txl_logits_host, r->txl_logits, n * width * sizeof(float));
        if (pf__rank_failed(r)) return;
        for (size_t k = 0; k < n; k++) {
            float *out = job->logits + (first + k) * V;
            const float *head = r->txl_logits_host + k * (size_t)ends[1], *tails = r->txl_logits_host + n * V + k * C;
            float head_norm = pf__log_sum_exp(head, (size_t)ends[1], tails, C);
            for (int j = 0; j < ends[1]; j++) out[j] = head[j] - head_norm;
            for (size_t i = 1; i <= C; i++) {
                size_t count = (size_t)(ends[i + 1] - ends[i]);
                const float *tail = r->txl_logits_host + n * (size_t)ends[i] + k * count;
                float cluster = tails[i - 1] - head_norm, tail_norm = pf__log_sum_exp(tail, count, NULL, 0);
                for (size_t j = 0; j < count; j++) out[(size_t)ends[i] + j] = cluster + (tail[j] - tail_norm);
            }
        }
    }
}

/* A Transformer-XL step (pf__config.transfo_xl), each row alone, as transformers runs each forward
   call a segment: the row's tokens in the step (real positions q0 .. q0 + n - 1, its left pads
   excepted); each layer's keys and values of them kept in the row's memory (txl_mem_k / _v: the
   txl_mem_len zero rows transformers starts with, then position p at txl_mem_len + p), its queries
   over the keys from txl_mem_len positions before the segment's first (mem_len 0: from the first;
   same_length: the txl_mem_len keys ending at the query's own) to their own. Then the bare model's
   or the sequence classifier's outputs, or rank 0's log-probabilities (all positions, or each row's
   last). */
static void pf__rank_transfo_xl(pf__rank *r, const pf__job *job) {
    const pf__group *g = r->group;
    const pf__config *c = &g->model->config;
    const pf__backend *be = r->backend;
    const pf__step *s = &job->step;
    size_t d = (size_t)c->hidden_size, kv = (size_t)r->share.kv_heads * (size_t)c->head_dim, T = (size_t)s->seq_len;
    size_t layers = (size_t)c->num_layers, keys_per_row = (size_t)c->txl_mem_len + (size_t)g->cache_len;
    int M = c->txl_mem_len;
    if (s->past + s->seq_len > g->cache_len || s->segment_before > s->past) {
        pf__rank_fail(r, PF_ERROR_INVALID_ARGUMENT, "Transformer-XL: positions %d..%d past its memory of %d", s->past,
                      s->past + s->seq_len, g->cache_len);
        return;
    }
    pf__rank_txl_embed(r, s);
    for (int b = 0; b < s->batch && !pf__rank_failed(r); b++) {
        int pad = s->pad ? s->pad[b] : 0, from = s->past > pad ? s->past : pad; /* the step's first real column */
        int n = s->past + (int)T - from, q0 = from - pad, segment = s->past - s->segment_before - pad;
        if (n <= 0) continue; /* the step holds the row's pads alone */
        int k_first = M > 0 && segment > 0 ? segment : 0; /* the first key the segment sees: its mem_len before it */
        int k_len = M + q0 + n - k_first;
        float *x = r->x + ((size_t)b * T + (size_t)(from - s->past)) * d;
        /* the queries at memory rows M + q0.., the keys k_first..: one table of distances serves every layer */
        pf__funnel_level queries = {n, M + q0 - k_first, 1, r->funnel_pads, r->funnel_types};
        pf__funnel_level keys = {k_len, 0, 1, r->funnel_pads + 1, r->funnel_types};
        size_t rel_rows = 0;
        pf__funnel_shape f = pf__rank_funnel_terms(r, &queries, &keys, 1, &rel_rows);
        f.causal = 1;
        f.exact_segments = 0;
        f.window = c->txl_same_length ? M : 0;
        for (size_t l = 0; l < layers && !pf__rank_failed(r); l++) {
            const pf__weight *L = pf__rank_layer_weights(r, (int)l);
            float *k = r->txl_mem_k + ((size_t)b * layers + l) * keys_per_row * kv;
            float *v = r->txl_mem_v + ((size_t)b * layers + l) * keys_per_row * kv;
            if (q0 == 0 && M > 0) pf__rank_txl_zero_memory(r, L, k, v, x);
            const float *in = x; /* the keys', values' and queries' rows: pre-norm, normed */
            if (c->pre_norm) {
                be->norm(r, r->h, x, &L[PF__SLOT_ATTN_NORM_WEIGHT], PF__OR_NULL(L[PF__SLOT_ATTN_NORM_BIAS]), (size_t)n, d,
                         (float)c->norm_eps, PF__NORM_LAYER);
                in = r->h;
            }
            be->matmul(r, k + (size_t)(M + q0) * kv, in, &L[PF__SLOT_CROSS_K_WEIGHT], NULL, (size_t)n);
            be->matmul(r, v + (size_t)(M + q0) * kv, in, &L[PF__SLOT_CROSS_V_WEIGHT], NULL, (size_t)n);
            be->matmul(r, r->funnel_rel, r->funnel_sinusoid, &L[PF__SLOT_FUNNEL_R_KERNEL], NULL, rel_rows);
            pf__rank_relative_block(r, L, x, in, k + (size_t)k_first * kv, v + (size_t)k_first * kv, keys.pad,
                                    r->funnel_ints, &f);
        }
    }
    if (pf__rank_failed(r)) return;
    if (job->hidden) { /* pf_encode: the last layer's output (no final norm), or the classifier's score */
        pf__tower t = pf__tower_of(r, 0);
        pf__rank_decoder_encoding(r, job, &t);
        return;
    }
    if (job->all_positions) {
        pf__rank_txl_log_softmax(r, job, r->x, (size_t)s->batch * T);
        return;
    }
    for (int b = 0; b < s->batch; b++) /* each row's last position */
        be->copy(r, r->h + (size_t)b * d, r->x + ((size_t)b * T + T - 1) * d, d * sizeof(float));
    pf__rank_txl_log_softmax(r, job, r->h, (size_t)s->batch);
}

/* A decoder step's positions in chunks of job->chunk_positions, one after another within the job
   (pipeline stages: pf__forward_in_chunks), each run as a step of its own: its ids, the positions
   after the chunk before, the step's rotary frequencies; a single row's logits of every position
   written at the chunk's place, each row's last by the last chunk. */
static void pf__rank_forward_chunks(pf__rank *r, const pf__job *job) {
    const pf__step *s = &job->step;
    size_t per = (size_t)job->chunk_positions, vocab = (size_t)r->group->model->config.vocab_size;
    int32_t *ids = (int32_t *)malloc((size_t)s->batch * per * sizeof(int32_t));
    if (!ids) {
        pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory");
        return;
    }
    for (size_t first = 0; first < (size_t)s->seq_len && !pf__rank_failed(r); first += per) {
        size_t len = (size_t)s->seq_len - first < per ? (size_t)s->seq_len - first : per;
        pf__job chunk = *job;
        chunk.chunk_positions = 0;
        for (int b = 0; b < s->batch; b++)
            memcpy(ids + (size_t)b * len, s->ids + (size_t)b * s->seq_len + first, len * sizeof(int32_t));
        chunk.step.ids = ids;
        chunk.step.seq_len = (int)len;
        chunk.step.past = s->past + (int)first;
        chunk.step.segment_before = s->segment_before + (int)first;
        if (job->all_positions) chunk.logits = job->logits + first * vocab; /* one row (pf__forward_in_chunks) */
        pf__rank_forward(r, &chunk);
    }
    free(ids);
}

/* A decode step of micro-batches (job->stage_rows): this stage's rows alone, at their place in the
   step's arrays and at their own past, as a step of its own whose hidden state crosses jobs. */
static void pf__rank_forward_stage_rows(pf__rank *r, const pf__job *job) {
    const pf__group *g = r->group;
    int first = 0;
    for (int s = 0; s < g->stage; s++) first += job->stage_rows[2 * s];
    pf__job mine = *job;
    mine.stage_rows = NULL;
    mine.hidden_across_jobs = 1;
    mine.step.batch = job->stage_rows[2 * g->stage];
    mine.step.past = job->stage_rows[2 * g->stage + 1];
    /* the state sent in the job before goes first: the next stage takes it now, and waits for it */
    if (r->index == 0 && g->stage < g->stages - 1) pf__mpi_stage_sent(r);
    if (!mine.step.batch || pf__rank_failed(r)) return; /* the pipeline fills or empties: nothing in this stage */
    mine.step.ids = job->step.ids + first; /* one position a row */
    if (job->step.pad) mine.step.pad = job->step.pad + first;
    if (job->step.cache_rows) mine.step.cache_rows = job->step.cache_rows + first;
    pf__rank_forward(r, &mine);
}

/* ---- LXMERT's two streams (pf__config.two_streams) ------------------------------------------- */

/* The rows of one stream in the step's rows (row b: its pads, its tokens, then its regions): each
   row's tokens (vision 0) or regions (1), left-padded to the stream's longest as a step of its own
   whose pads are stream_pads[vision]. */
static pf__step pf__stream_step(pf__rank *r, const pf__step *s, int vision) {
    pf__step t = *s;
    int *pads = r->stream_pads + (size_t)vision * (size_t)r->group->max_batch, longest = 0;
    for (int b = 0; b < s->batch; b++) {
        int regions = s->num_regions[b], n = vision ? regions : s->seq_len - (s->pad ? s->pad[b] : 0) - regions;
        pads[b] = n; /* its length, until the longest is known */
        if (n > longest) longest = n;
    }
    for (int b = 0; b < s->batch; b++) pads[b] = longest - pads[b];
    t.seq_len = longest;
    t.pad = pads;
    t.regions = NULL, t.num_regions = NULL, t.box_rows = NULL;
    return t;
}

/* Copies each row's stream rows between the step's rows (x) and the stream's (stream): into the
   stream (to_stream), or back. */
static void pf__stream_rows(pf__rank *r, const pf__step *s, const pf__step *stream, int vision, float *x,
                            float *rows, int to_stream) {
    size_t d = (size_t)r->group->model->config.hidden_size, T = (size_t)s->seq_len;
    for (size_t b = 0; b < (size_t)s->batch; b++) {
        size_t n = (size_t)(stream->seq_len - stream->pad[b]);
        size_t at = vision ? (b + 1) * T - n : b * T + (size_t)(s->pad ? s->pad[b] : 0), in_stream = (b + 1) * (size_t)stream->seq_len - n;
        if (to_stream) r->backend->copy(r, rows + in_stream * d, x + at * d, n * d * sizeof(float));
        else r->backend->copy(r, x + at * d, rows + in_stream * d, n * d * sizeof(float));
    }
}

/* The regions' embedding into h (every position of the step's rows; the tokens' rows unused):
   norm(features Wv^T + bv) / 2 + norm(box Wb^T + bb) / 2, the halves folded into the norms. */
static void pf__rank_embed_boxes(pf__rank *r, const pf__step *s) {
    const pf__config *c = &r->group->model->config;
    const pf__backend *be = r->backend;
    const pf__weight *W = r->weights;
    size_t N = (size_t)s->batch * s->seq_len, d = (size_t)c->hidden_size;
    float *boxes = r->region_in + N * (size_t)c->visual_embedding_dim;
    be->upload(r, r->region_in, s->regions, N * (size_t)pf__region_floats(c) * sizeof(float));
    be->matmul(r, r->h, r->region_in, &W[PF__SLOT_VISUAL_PROJECTION_WEIGHT], PF__OR_NULL(W[PF__SLOT_VISUAL_PROJECTION_BIAS]), N);
    be->norm(r, r->h, r->h, &W[PF__SLOT_VISUAL_NORM_WEIGHT], PF__OR_NULL(W[PF__SLOT_VISUAL_NORM_BIAS]), N, d,
             (float)c->norm_eps, PF__NORM_LAYER);
    be->matmul(r, r->part, boxes, &W[PF__SLOT_BOX_PROJECTION_WEIGHT], PF__OR_NULL(W[PF__SLOT_BOX_PROJECTION_BIAS]), N);
    be->norm(r, r->part, r->part, &W[PF__SLOT_BOX_NORM_WEIGHT], PF__OR_NULL(W[PF__SLOT_BOX_NORM_BIAS]), N, d,
             (float)c->norm_eps, PF__NORM_LAYER);
    be->add_residual(r, r->h, r->part, NULL, N, d);
}

/* The cross-attention of a cross-modality layer (block l, its language side) for one stream:
   x = norm(x + sum over ranks of attend(x Wq_r, the other stream's keys and values) Wo_r + bo),
   the keys' pads the other stream's. */
static void pf__rank_stream_cross(pf__rank *r, const pf__step *queries, const pf__step *keys, int l, float *x,
                                  const float *k, const float *v, const pf__attn_shape *self_shape) {
    const pf__config *c = &r->group->model->config;
    const pf__backend *be = r->backend;
    const pf__weight *L = r->weights + pf__slot_index(PF__SLOT_FIRST_LAYER, l) - PF__SLOT_FIRST_LAYER;
    size_t N = (size_t)queries->batch * queries->seq_len, d = (size_t)c->hidden_size;
    pf__attn_shape shape = *self_shape;
    shape.mask = PF__MASK_CROSS;
    shape.cache_dtype = PF__DTYPE_F32; /* written by a matmul */
    shape.cache_len = keys->seq_len;
    shape.scale = 1.0f / sqrtf((float)c->head_dim);
    shape.qkv_bias = NULL; /* added by the matmul */
    pf__step step = *queries;
    step.pad = keys->pad; /* the keys to skip: the other stream's pads */
    be->matmul(r, r->qkv, x, &L[PF__SLOT_CROSS_Q_WEIGHT], PF__OR_NULL(L[PF__SLOT_CROSS_Q_BIAS]), N);
    if (shape.heads) be->attend(r, r->attn, r->qkv, k, v, &step, &shape);
    be->matmul(r, r->part, r->attn, &L[PF__SLOT_CROSS_OUT_WEIGHT], NULL, N);
    pf__all_reduce(r, r->part, N * d, "the cross-attention output's all-reduce");
    pf__rank_residual_norm(r, x, r->part, PF__OR_NULL(L[PF__SLOT_CROSS_OUT_BIAS]), x, &L[PF__SLOT_CROSS_NORM_WEIGHT],
                           PF__OR_NULL(L[PF__SLOT_CROSS_NORM_BIAS]), N, d, (float)c->norm_eps, PF__NORM_LAYER);
}

/* LXMERT: the text's embedding and the regions' into their streams, the language layers on the
   first, the relation layers on the second, then each cross-modality layer: both streams' cross-
   attention over the other (the keys and values of both taken before either changes), then each
   stream's own block (self-attention, MLP); the streams back into x's rows (tokens, then regions)
   for the encoder's outputs. */
static void pf__rank_two_streams(pf__rank *r, const pf__job *job) {
    const pf__config *c = &r->group->model->config;
    const pf__backend *be = r->backend;
    const pf__step *s = &job->step;
    size_t d = (size_t)c->hidden_size, kv_rows = r->group->max_tokens * (size_t)r->share.kv_heads * (size_t)c->head_dim;
    pf__tower t = pf__tower_of(r, 1);
    pf__step streams[2] = {pf__stream_step(r, s, 0), pf__stream_step(r, s, 1)};
    float *x = r->x;
    pf__rank_embed(r, s, &t);
    pf__rank_embed_boxes(r, s);
    for (int k = 0; k < 2; k++) { /* every row finite first (the pads' too), then the stream's own rows */
        size_t rows = (size_t)s->batch * (size_t)streams[k].seq_len;
        be->copy(r, r->stream_x[k], k ? r->h : x, rows * d * sizeof(float));
        pf__stream_rows(r, s, &streams[k], k, k ? r->h : x, r->stream_x[k], 1);
    }
    pf__attn_shape shape = pf__rank_attn_shape(r, &t);
    pf__residual residual = {0, NULL}; /* post-norm blocks: never pending */
    int first_cross = c->language_layers + c->relation_layers;
    for (int l = 0; l < first_cross && !pf__rank_failed(r); l++) {
        int k = l >= c->language_layers;
        r->x = r->stream_x[k];
        pf__rank_block(r, &streams[k], &t, l, &shape, &residual);
    }
    for (int l = first_cross; l < c->num_layers && !pf__rank_failed(r); l += 2) {
        const pf__weight *L = r->weights + pf__slot_index(PF__SLOT_FIRST_LAYER, l) - PF__SLOT_FIRST_LAYER;
        for (int k = 0; k < 2; k++) { /* the keys and values of stream k, before either stream changes */
            size_t rows = (size_t)s->batch * (size_t)streams[k].seq_len;
            be->matmul(r, r->stream_k + k * kv_rows, r->stream_x[k], &L[PF__SLOT_CROSS_K_WEIGHT],
                       PF__OR_NULL(L[PF__SLOT_CROSS_K_BIAS]), rows);
            be->matmul(r, r->stream_v + k * kv_rows, r->stream_x[k], &L[PF__SLOT_CROSS_V_WEIGHT],
                       PF__OR_NULL(L[PF__SLOT_CROSS_V_BIAS]), rows);
        }
        for (int k = 0; k < 2; k++)
            pf__rank_stream_cross(r, &streams[k], &streams[1 - k], l, r->stream_x[k], r->stream_k + (1 - k) * kv_rows,
                                  r->stream_v + (1 - k) * kv_rows, &shape);
        for (int k = 0; k < 2 && !pf__rank_failed(r); k++) {
            r->x = r->stream_x[k];
            pf__rank_block(r, &streams[k], &t, l + k, &shape, &residual);
        }
    }
    r->x = x;
    for (int k = 0; k < 2; k++) pf__stream_rows(r, s, &streams[k], k, x, r->stream_x[k], 0);
    if (!pf__rank_failed(r)) pf__rank_encoder_outputs(r, job, &t);
}

/* Reformer (src/reformer.c hashes and lists the keys): out [rows][a_width + b_width] = [a | b] row by
   row, through the host. */
static void pf__reformer_join(pf__rank *r, float *out, const float *a, size_t a_width, const float *b, size_t b_width,
                              size_t rows) {
    const pf__backend *be = r->backend;
    float *staging = r->reformer_host->staging;
    size_t width = a_width + b_width, f = sizeof(float);
    be->download_rows(r, staging, width * f, a, a_width * f, a_width * f, rows);
    be->download_rows(r, staging + a_width, width * f, b, b_width * f, b_width * f, rows);
    be->upload(r, out, staging, rows * width * f);
}

/* count floats of zeros at x (through the host: a fresh buffer may hold any bits, NaN's too). */
static void pf__reformer_zero(pf__rank *r, float *x, size_t count) {
    float *staging = r->reformer_host->staging;
    memset(staging, 0, count * sizeof(float));
    r->backend->upload(r, x, staging, count * sizeof(float));
}

/* x1 = x2 = the row's embedding: its tokens' rows plus its positions' (the table's, or axial:
   [rows table at p / shape[1] | columns table at p % shape[1]]). */
static void pf__reformer_embed(pf__rank *r, const int32_t *ids, int len) {
    const pf__group *g = r->group;
    const pf__config *c = &g->model->config;
    const pf__backend *be = r->backend;
    const pf__weight *W = r->weights;
    size_t d = (size_t)c->hidden_size, N = (size_t)len;
    pf__step row;
    memset(&row, 0, sizeof row);
    row.ids = ids;
    row.batch = 1;
    row.seq_len = len;
    int vocab_split = g->world_ranks > 1 && g->model->sources[PF__SLOT_TOKEN_EMBED].split == PF__SPLIT_VOCAB;
    be->embed(r, r->reformer_x1, &W[PF__SLOT_TOKEN_EMBED], &row, 1.0f, vocab_split ? r->share.vocab_begin : 0);
    if (vocab_split) pf__all_reduce(r, r->reformer_x1, N * d, "the token embedding's all-reduce");
    if (!c->reformer_axial) {
        be->add_positions(r, r->reformer_x1, &W[PF__SLOT_POSITION_EMBED], &row, 0);
    } else {
        int32_t *at = r->reformer_host->gather;
        size_t d0 = (size_t)c->reformer_axial_dims[0], d1 = (size_t)c->reformer_axial_dims[1];
        for (int t = 0; t < len; t++) at[t] = t / c->reformer_axial_shape[1], at[len + t] = t % c->reformer_axial_shape[1];
        row.ids = at;
        be->embed(r, r->reformer_k, &W[PF__SLOT_AXIAL_ROW_EMBED], &row, 1.0f, 0);
        row.ids = at + len;
        be->embed(r, r->reformer_v, &W[PF__SLOT_AXIAL_COLUMN_EMBED], &row, 1.0f, 0);
        pf__reformer_join(r, r->reformer_in, r->reformer_k, d0, r->reformer_v, d1, N);
        be->add_residual(r, r->reformer_x1, r->reformer_in, NULL, N, d);
    }
    be->copy(r, r->reformer_x2, r->reformer_x1, N * d * sizeof(float));
}

/* Layer l on a row of len positions (length real): x1 += attention(norm(x2)) summed over the
   ranks, then x2 += feed-forward(norm(x1)) (the reversible residual's forward: in eval mode the
   two-stream sum, no inversion; chunk_size_feed_forward only splits the rows). */
static void pf__reformer_layer(pf__rank *r, int l, int len, int length) {
    const pf__config *c = &r->group->model->config;
    const pf__backend *be = r->backend;
    const pf__weight *L = r->weights + pf__slot_index(PF__SLOT_FIRST_LAYER, l) - PF__SLOT_FIRST_LAYER;
    size_t d = (size_t)c->hidden_size, N = (size_t)len, heads = (size_t)r->share.heads, hd = (size_t)c->head_dim;
    float eps = (float)c->norm_eps;
    int lsh = c->reformer_lsh[l];
    be->norm(r, r->reformer_in, r->reformer_x2, &L[PF__SLOT_ATTN_NORM_WEIGHT], PF__OR_NULL(L[PF__SLOT_ATTN_NORM_BIAS]), N, d,
             eps, PF__NORM_LAYER);
    if (heads) {
        struct pf__reformer_host *host = r->reformer_host;
        be->matmul(r, r->reformer_q, r->reformer_in, &L[PF__SLOT_Q_WEIGHT], NULL, N); /* LSH: the shared query-key */
        if (!lsh) be->matmul(r, r->reformer_k, r->reformer_in, &L[PF__SLOT_K_WEIGHT], NULL, N);
        be->matmul(r, r->reformer_v, r->reformer_in, &L[PF__SLOT_V_WEIGHT], NULL, N);
        if (lsh && len > c->reformer_lsh_chunk) be->download(r, host->qk, r->reformer_q, N * heads * hd * sizeof(float));
        if (pf__rank_failed(r)) return;
        pf__reformer_shape shape = {len, (int)heads, (int)hd, 1, 0, lsh};
        shape.listed = pf__reformer_keys(c, host, lsh, (int)heads, len, length, &shape.rounds);
        be->upload(r, r->reformer_keys, host->keys, heads * N * (size_t)shape.rounds * (size_t)shape.listed * sizeof(int32_t));
        be->reformer_attend(r, r->reformer_out, r->reformer_q, lsh ? r->reformer_q : r->reformer_k, r->reformer_v,
                            r->reformer_keys, &shape);
        be->matmul(r, r->reformer_part, r->reformer_out, &L[PF__SLOT_ATTN_OUT_WEIGHT], NULL, N);
    } else {
        pf__reformer_zero(r, r->reformer_part, N * d); /* no heads here: nothing to add to the sum */
    }
    pf__all_reduce(r, r->reformer_part, N * d, "the attention output's all-reduce");
    be->add_residual(r, r->reformer_x1, r->reformer_part, NULL, N, d);
    be->norm(r, r->reformer_in, r->reformer_x1, &L[PF__SLOT_MLP_NORM_WEIGHT], PF__OR_NULL(L[PF__SLOT_MLP_NORM_BIAS]), N, d, eps,
             PF__NORM_LAYER);
    if (r->share.mlp_width) {
        be->matmul(r, r->reformer_mlp, r->reformer_in, &L[PF__SLOT_MLP_UP_WEIGHT], PF__OR_NULL(L[PF__SLOT_MLP_UP_BIAS]), N);
        be->activation(r, r->reformer_mlp, N * (size_t)r->share.mlp_width, c->activation);
        be->matmul(r, r->reformer_part, r->reformer_mlp, &L[PF__SLOT_MLP_DOWN_WEIGHT], NULL, N);
    } else {
        pf__reformer_zero(r, r->reformer_part, N * d);
    }
    pf__all_reduce(r, r->reformer_part, N * d, "the feed-forward output's all-reduce");
    be->add_residual(r, r->reformer_x2, r->reformer_part, PF__OR_NULL(L[PF__SLOT_MLP_DOWN_BIAS]), N, d);
}

/* A FORWARD job on a Reformer: each row alone, as transformers runs it (its real tokens, padded
   on the right to the chunks' multiple with pad_token_id, the pads masked and hashed apart), the
   layers, then norm([x1 | x2]) at twice the hidden width; the real rows of every row into
   reformer_final at the step's place (left pads zero), then the encoder's hidden state or the LM
   head's logits (every position's, or each row's last). */
static void pf__rank_reformer(pf__rank *r, const pf__job *job) {
    const pf__group *g = r->group;
    const pf__config *c = &g->model->config;
    const pf__backend *be = r->backend;
    const pf__step *s = &job->step;
    size_t d = (size_t)c->hidden_size, wide = 2 * d, T = (size_t)s->seq_len, B = (size_t)s->batch;
    size_t most = pf__reformer_rows(c, g->cache_len);
    if (s->past) {
        pf__rank_fail(r, PF_ERROR_UNSUPPORTED, "Reformer runs every position of a row at once (no cache): a step "
                      "after %d positions is not supported", s->past);
        return;
    }
    for (size_t b = 0; b < B && !pf__rank_failed(r); b++) {
        int pad = s->pad ? s->pad[b] : 0, length = (int)T - pad, len = pf__reformer_padded_length(c, length);
        int limit = c->reformer_axial ? c->reformer_axial_shape[0] * c->reformer_axial_shape[1] : c->max_positions;
        if (len > limit || (size_t)len > most) {
            pf__rank_fail(r, PF_ERROR_INVALID_ARGUMENT, "Reformer row %zu: %d tokens run padded to %d positions, beyond "
                          "the model's %d (%s)", b, length, len, limit,
                          c->reformer_axial ? "axial_pos_shape's product" : "max_position_embeddings");
            return;
        }
        int32_t *ids = r->reformer_host->ids;
        memcpy(ids, s->ids + b * T + (size_t)pad, (size_t)length * sizeof(int32_t));
        for (int t = length; t < len; t++) ids[t] = c->pad_token_id;
        pf__reformer_embed(r, ids, len);
        for (int l = 0; l < c->num_layers && !pf__rank_failed(r); l++) pf__reformer_layer(r, l, len, length);
        if (pf__rank_failed(r)) return;
        pf__reformer_zero(r, r->reformer_final + b * T * wide, (size_t)pad * wide); /* the left pads' rows */
        float *out = r->reformer_final + (b * T + (size_t)pad) * wide;
        pf__reformer_join(r, r->reformer_in, r->reformer_x1, d, r->reformer_x2, d, (size_t)length);
        be->norm(r, out, r->reformer_in, &r->weights[PF__SLOT_FINAL_NORM_WEIGHT], PF__OR_NULL(r->weights[PF__SLOT_FINAL_NORM_BIAS]),
                 (size_t)length, wide, (float)c->norm_eps, PF__NORM_LAYER);
    }
    if (pf__rank_failed(r)) return;
    if (c->head == PF_HEAD_CAUSAL_LM && job->logits) {
        if (job->all_positions) {
            pf__rank_vocab_logits(r, job, r->reformer_final, B * T, wide);
            return;
        }
        for (size_t b = 0; b < B; b++) /* each row's last position */
            be->copy(r, r->reformer_in + b * wide, r->reformer_final + ((b + 1) * T - 1) * wide, wide * sizeof(float));
        pf__rank_vocab_logits(r, job, r->reformer_in, B, wide);
        return;
    }
    if (r->world == 0 && job->hidden) be->download(r, job->hidden, r->reformer_final, B * T * wide * sizeof(float));
}

/* Runs on every rank's thread with the same step; rank 0 also computes the logits. */
PF_PRIVATE void pf__rank_forward(pf__rank *r, const pf__job *job) {
    const pf__group *g = r->group;
    const pf__config *c = &g->model->config;
    const pf__step *s = &job->step;
    size_t N = (size_t)s->batch * s->seq_len, d = (size_t)c->hidden_size;
    if (job->chunk_positions) {
        pf__rank_forward_chunks(r, job);
        return;
    }
    if (job->stage_rows) {
        pf__rank_forward_stage_rows(r, job);
        return;
    }
    if (r->backend->prepare) r->backend->prepare(r, s);
    if (job->encoder_pass) {
        pf__rank_encoder_pass(r, job);
        return;
    }
    if (c->reformer) {
        pf__rank_reformer(r, job);
        return;
    }
    if (c->xlnet && c->head == PF_HEAD_CAUSAL_LM && !job->hidden) {
        pf__rank_xlnet_generate(r, job);
        return;
    }
    if (c->transfo_xl) {
        pf__rank_transfo_xl(r, job);
        return;
    }
    if (c->funnel) {
        pf__rank_funnel(r, job);
        return;
    }
    if (c->two_streams) {
        pf__rank_two_streams(r, job);
        return;
    }
    if (pf__archs[c->arch].kind == PF__KIND_ENCODER) {
        pf__tower t = pf__tower_of(r, 1);
        pf__rank_tower(r, s, &t);
        if (!pf__rank_failed(r)) pf__rank_encoder_outputs(r, job, &t);
        return;
    }
    if (job->hidden) { /* pf_encode on a decoder, or an encoder-decoder's head on its decoder's states */
        pf__tower t = pf__tower_of(r, 0);
        pf__rank_tower(r, s, &t);
        if (pf__rank_failed(r) || !pf__rank_last_stage(r)) return;
        if (pf__archs[c->arch].kind == PF__KIND_SEQ2SEQ) pf__rank_encoder_outputs(r, job, &t);
        else pf__rank_decoder_encoding(r, job, &t);
        return;
    }
    /* h = final norm(x) for the rows wanted (or x itself); then the vocabulary logits */
    const pf__backend *be = r->backend;
    if (!be->run_decoder_step || !be->run_decoder_step(r, job, pf__rank_decoder_hidden)) pf__rank_decoder_hidden(r, job);
    if (pf__rank_failed(r) || !pf__rank_last_stage(r) || !r->weights[PF__SLOT_LM_HEAD].rows) return;
    pf__rank_vocab_logits(r, job, pf__rank_decoder_rows(r, job), job->all_positions ? N : (size_t)s->batch, d);
}

/* logits = h (projected out) Wlm^T (+ b) for the rank's vocabulary rows, written into its columns
   of the host logits, in chunks of logit_rows; h_rows are `width` apart. A greedy step
   (job->tokens) keeps them on the device and writes the rank's arg-max candidates instead. */
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
        if (c->logits_scaling) r->backend->scale(r, r->logits, n * mine, 1.0f / (float)c->logits_scaling); /* Granite */
        if (c->final_softcap > 0) r->backend->softcap(r, r->logits, n * mine, (float)c->final_softcap); /* elementwise: each rank its share */
        if (job->tokens)
            r->backend->argmax(r, g->choices + (size_t)r->world * g->max_batch + first, r->logits, n, mine,
                               r->share.vocab_begin);
        if (job->candidates) {
            size_t per_row = job->candidates_per_row;
            r->backend->top_k(r, job->candidates + ((size_t)r->world * rows + first) * per_row, per_row, r->logits, n,
                              mine, r->share.vocab_begin, per_row < mine ? per_row : mine);
        }
        if ((!job->tokens && !job->candidates) || pf__check_device_choices)
            r->backend->download_rows(r, job->logits + first * vocab + r->share.vocab_begin, vocab * sizeof(float),
                                      r->logits, mine * sizeof(float), mine * sizeof(float), n);
    }
}

/* PF__JOB_LOGITS: the logits of the last forward's step.batch rows (one chunk: they are still in
   r->logits) into the rank's columns of job->logits, for the rows whose token the devices'
   candidates did not settle. */
PF_PRIVATE void pf__rank_logits_again(pf__rank *r, const pf__job *job) {
    size_t vocab = (size_t)r->group->model->config.vocab_size, rows = (size_t)job->step.batch;
    size_t mine = r->weights ? r->weights[PF__SLOT_LM_HEAD].rows : 0;
    if (!mine || !pf__rank_last_stage(r)) return; /* more ranks than vocabulary rows; a stage without the head */
    if (rows > r->group->logit_rows) {
        pf__rank_fail(r, PF_ERROR_INVALID_ARGUMENT, "the logits of %zu rows are no longer on the ranks", rows);
        return;
    }
    r->backend->download_rows(r, job->logits + r->share.vocab_begin, vocab * sizeof(float), r->logits,
                              mine * sizeof(float), mine * sizeof(float), rows);
}

/* An encoder's outputs from its last hidden state x (or an encoder-decoder's, from its decoder's:
   BartForSequenceClassification): x itself, the pooler's dense + tanh of each sequence's first
   token (or the one job->pool_at names), and the head. The masked-LM head (dense + act + norm, then the
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
    if (c->head == PF_HEAD_MASKED_LM && !PF__HAS(W[PF__SLOT_HEAD_TRANSFORM_WEIGHT])) { /* XLM's: the projection alone */
        if (job->logits) pf__rank_vocab_logits(r, job, r->x, N, d);
    } else if (c->head == PF_HEAD_MASKED_LM) { /* to the head's width: hidden, or the embedding's (ELECTRA, ALBERT) */
        size_t width = W[PF__SLOT_HEAD_TRANSFORM_WEIGHT].rows;
        float *h = width <= d ? r->h : r->part;
        be->matmul(r, h, r->x, &W[PF__SLOT_HEAD_TRANSFORM_WEIGHT], PF__OR_NULL(W[PF__SLOT_HEAD_TRANSFORM_BIAS]), N);
        be->activation(r, h, N * width, c->head_activation < 0 ? c->activation : (pf__activation)c->head_activation);
        be->norm(r, h, h, &W[PF__SLOT_HEAD_NORM_WEIGHT], PF__OR_NULL(W[PF__SLOT_HEAD_NORM_BIAS]), N, width,
                 (float)c->norm_eps, a->norm);
        if (job->logits) pf__rank_vocab_logits(r, job, h, N, width);
    }
    if (c->head == PF_HEAD_CTC && job->logits) pf__rank_vocab_logits(r, job, r->x, N, d); /* every rank its rows */
    if (r->world != 0 || r->error) return;
    if (job->hidden) be->download(r, job->hidden, r->x, N * d * sizeof(float));
    float *pooled = r->part; /* [batch][hidden] */
    if (PF__HAS(W[PF__SLOT_POOLER_WEIGHT]) || PF__HAS(W[PF__SLOT_POOLER_NORM_WEIGHT]) || job->pool_at) {
        for (size_t b = 0; b < B; b++) { /* the first real token (after the left pads), or the one named */
            size_t first = b * (size_t)s->seq_len + (size_t)(s->pad ? s->pad[b] : 0) + (size_t)(job->pool_at ? job->pool_at[b] : 0);
            be->copy(r, r->h + b * d, r->x + first * d, d * sizeof(float));
        }
        if (PF__HAS(W[PF__SLOT_POOLER_NORM_WEIGHT])) /* CLIP vision's post_layernorm */
            be->norm(r, r->h, r->h, &W[PF__SLOT_POOLER_NORM_WEIGHT], PF__OR_NULL(W[PF__SLOT_POOLER_NORM_BIAS]), B, d,
                     (float)c->norm_eps, a->norm);
        if (PF__HAS(W[PF__SLOT_POOLER_WEIGHT])) {
            be->matmul(r, pooled, r->h, &W[PF__SLOT_POOLER_WEIGHT], PF__OR_NULL(W[PF__SLOT_POOLER_BIAS]), B);
            be->activation(r, pooled, B * d, c->pooler_activation < 0 ? c->activation : (pf__activation)c->pooler_activation);
        } else {
            pooled = r->h;
        }
        if (job->pooled) be->download(r, job->pooled, pooled, B * d * sizeof(float));
        if (PF__HAS(W[PF__SLOT_PROJECTION])) { /* CLIP: into the space shared with the other tower */
            be->matmul(r, r->projected, pooled, &W[PF__SLOT_PROJECTION], NULL, B);
            if (job->embeds) be->download(r, job->embeds, r->projected, B * (size_t)c->projection_dim * sizeof(float));
        }
        if (PF__HAS(W[PF__SLOT_DOC_PROJECTION]) && job->doc_embeds) { /* RetriBERT's documents, after its questions */
            be->matmul(r, r->projected, pooled, &W[PF__SLOT_DOC_PROJECTION], NULL, B);
            be->download(r, job->doc_embeds, r->projected, B * (size_t)c->projection_dim * sizeof(float));
        }
    }
    if (!job->logits) return;
    if (c->head == PF_HEAD_SEQUENCE_CLASSIFICATION || c->head == PF_HEAD_MULTIPLE_CHOICE || c->head == PF_HEAD_NEXT_SENTENCE) {
        pf__slot head = c->head == PF_HEAD_NEXT_SENTENCE ? PF__SLOT_NEXT_SENTENCE_WEIGHT : PF__SLOT_CLASSIFIER_WEIGHT;
        const float *features = pooled;
        if (PF__HAS(W[PF__SLOT_CLASSIFIER_DENSE_WEIGHT])) { /* BigBird's: its own dense + act on the first token */
            for (size_t b = 0; b < B; b++)
                be->copy(r, r->h + b * d, r->x + (b * (size_t)s->seq_len + (size_t)(s->pad ? s->pad[b] : 0)) * d,
                         d * sizeof(float));
            be->matmul(r, r->part, r->h, &W[PF__SLOT_CLASSIFIER_DENSE_WEIGHT], PF__OR_NULL(W[PF__SLOT_CLASSIFIER_DENSE_BIAS]), B);
            be->activation(r, r->part, B * d, c->activation);
            features = r->part; /* the pooled output, already downloaded, is the model's pooler's */
        }
        if (c->classify_before_last_token) { /* VisualBERT's VQA: the text's token before its last, before any regions */
            for (size_t b = 0; b < B; b++) {
                size_t regions = s->num_regions ? (size_t)s->num_regions[b] : 0, at = (b + 1) * (size_t)s->seq_len - regions - 2;
                be->copy(r, r->h + b * d, r->x + at * d, d * sizeof(float));
            }
            features = r->h;
        }
        if (PF__HAS(W[PF__SLOT_ANSWER_DENSE_WEIGHT])) { /* LXMERT's answer head: dense to 2 hidden, GELU, norm */
            size_t width = W[PF__SLOT_ANSWER_DENSE_WEIGHT].rows;
            float *mid = r->head_out + g->max_tokens * (size_t)(c->num_labels > 2 ? c->num_labels : 2);
            be->matmul(r, mid, features, &W[PF__SLOT_ANSWER_DENSE_WEIGHT], PF__OR_NULL(W[PF__SLOT_ANSWER_DENSE_BIAS]), B);
            be->activation(r, mid, B * width, PF__ACT_GELU_ERF);
            be->norm(r, mid, mid, &W[PF__SLOT_ANSWER_NORM_WEIGHT], PF__OR_NULL(W[PF__SLOT_ANSWER_NORM_BIAS]), B, width,
                     (float)c->norm_eps, PF__NORM_LAYER);
            features = mid;
        }
        if (c->classify_entities) { /* LUKE: row b's first entity's state (and its second's after it) */
            size_t k = (size_t)c->classify_entities;
            for (size_t b = 0; b < B; b++)
                be->copy(r, r->h + b * k * d, r->x + ((b + 1) * (size_t)s->seq_len - (size_t)s->num_entities[b]) * d,
                         k * d * sizeof(float));
            features = r->h;
        }
        be->matmul(r, r->head_out, features, &W[head], PF__OR_NULL(W[head + 1]), B);
        be->download(r, job->logits, r->head_out, B * (size_t)c->num_labels * sizeof(float));
    } else if (c->head == PF_HEAD_TOKEN_CLASSIFICATION) {
        be->matmul(r, r->head_out, r->x, &W[PF__SLOT_CLASSIFIER_WEIGHT], PF__OR_NULL(W[PF__SLOT_CLASSIFIER_BIAS]), N);
        be->download(r, job->logits, r->head_out, N * (size_t)c->num_labels * sizeof(float));
    } else if (c->head == PF_HEAD_QUESTION_ANSWERING) {
        be->matmul(r, r->head_out, r->x, &W[PF__SLOT_SPAN_WEIGHT], PF__OR_NULL(W[PF__SLOT_SPAN_BIAS]), N);
        be->download(r, job->logits, r->head_out, N * 2 * sizeof(float));
    } else if (c->head == PF_HEAD_REPLACED_TOKEN_DETECTION) { /* dense + act, then one logit a token */
        be->matmul(r, r->h, r->x, &W[PF__SLOT_DISCRIMINATOR_WEIGHT], PF__OR_NULL(W[PF__SLOT_DISCRIMINATOR_BIAS]), N);
        be->activation(r, r->h, N * d, c->activation);
        be->matmul(r, r->head_out, r->h, &W[PF__SLOT_DISCRIMINATOR_OUT_WEIGHT], PF__OR_NULL(W[PF__SLOT_DISCRIMINATOR_OUT_BIAS]), N);
        be->download(r, job->logits, r->head_out, N * sizeof(float));
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
PF_PRIVATE int pf__job_output_rows(const pf__group *g, const pf__job *job) {
    return job->stage_rows ? job->stage_rows[2 * (g->stages - 1)] : job->step.batch;
}

/* The host arrays the functions above write in a FORWARD or LOGITS job, and who writes them: each
   rank its vocabulary columns of the logits and its choices or candidates, world rank 0 the
   encoders' hidden state, pooled output, projection and task head. (A group across processes sends
   them to every process after the job.) */
PF_PRIVATE void pf__job_host_outputs(const pf__group *g, const pf__job *job, pf__host_outputs *out) {
    const pf_model *m = g->model;
    const pf__config *c = &m->config;
    const pf__step *s = &job->step;
    size_t B = (size_t)s->batch, N = B * (size_t)s->seq_len, d = (size_t)c->hidden_size, f = sizeof(float);
    size_t width = (size_t)pf__output_width(c); /* the hidden rows' (Reformer's twice d) */
    memset(out, 0, sizeof *out);
#define PF__BY_FIRST_RANK(ptr, floats) \
    (out->by_first_rank[out->num_by_first_rank].data = (ptr), out->by_first_rank[out->num_by_first_rank++].bytes = (floats) * f)
    if (job->kind == PF__JOB_LOGITS) {
        out->vocab_rows = B;
    } else if (job->encoder_pass) {
        if (job->hidden) PF__BY_FIRST_RANK(job->hidden, N * d);
    } else if (pf__archs[c->arch].kind == PF__KIND_DECODER && job->hidden) { /* pf_encode on a decoder */
        PF__BY_FIRST_RANK(job->hidden, N * d);
        if (job->logits && job->pool_at && c->head == PF_HEAD_SEQUENCE_CLASSIFICATION)
            PF__BY_FIRST_RANK(job->logits, B * (size_t)c->num_labels);
        if (job->logits && c->head == PF_HEAD_TOKEN_CLASSIFICATION) PF__BY_FIRST_RANK(job->logits, N * (size_t)c->num_labels);
        if (job->logits && c->head == PF_HEAD_QUESTION_ANSWERING) PF__BY_FIRST_RANK(job->logits, N * 2);
    } else if ((pf__archs[c->arch].kind != PF__KIND_ENCODER || ((c->xlnet || c->reformer) && c->head == PF_HEAD_CAUSAL_LM)) &&
               !job->hidden) {
        /* a decoder's step, or XLNet's generation step (the query stream's logits), or Reformer's LM */
        size_t rows = job->all_positions ? N : (size_t)pf__job_output_rows(g, job);
        if ((!job->tokens && !job->candidates) || pf__check_device_choices) out->vocab_rows = rows;
        if (job->tokens) out->choice_rows = rows;
        if (job->candidates) out->candidate_rows = rows;
    } else {
        size_t labels = (size_t)c->num_labels;
        if ((c->head == PF_HEAD_MASKED_LM || c->head == PF_HEAD_CTC) && job->logits) out->vocab_rows = N;
        if (job->hidden) PF__BY_FIRST_RANK(job->hidden, N * width);
        if (m->sources[PF__SLOT_POOLER_WEIGHT].data || m->sources[PF__SLOT_POOLER_NORM_WEIGHT].data || job->pool_at) {
            if (job->pooled) PF__BY_FIRST_RANK(job->pooled, B * d);
            if (m->sources[PF__SLOT_PROJECTION].data && job->embeds) PF__BY_FIRST_RANK(job->embeds, B * (size_t)c->projection_dim);
            if (m->sources[PF__SLOT_DOC_PROJECTION].data && job->doc_embeds)
                PF__BY_FIRST_RANK(job->doc_embeds, B * (size_t)c->projection_dim);
        }
        if (job->logits && (c->head == PF_HEAD_SEQUENCE_CLASSIFICATION || c->head == PF_HEAD_IMAGE_CLASSIFICATION ||
                            c->head == PF_HEAD_MULTIPLE_CHOICE || c->head == PF_HEAD_NEXT_SENTENCE))
            PF__BY_FIRST_RANK(job->logits, B * labels);
        if (job->logits && c->head == PF_HEAD_TOKEN_CLASSIFICATION) PF__BY_FIRST_RANK(job->logits, N * labels);
        if (job->logits && c->head == PF_HEAD_QUESTION_ANSWERING) PF__BY_FIRST_RANK(job->logits, N * 2);
        if (job->logits && c->head == PF_HEAD_REPLACED_TOKEN_DETECTION) PF__BY_FIRST_RANK(job->logits, N);
    }
#undef PF__BY_FIRST_RANK
}

#undef PF__HAS
#undef PF__OR_NULL

/* Runs on every rank's thread: reorders the decoder blocks' cache rows for beam search, and the
   cross caches too when asked (a prompt's encoder output copied to its beams, once). */
PF_PRIVATE void pf__rank_reorder(pf__rank *r, const pf__job *job) {
    const pf__group *g = r->group;
    const pf__config *c = &g->model->config;
    size_t kv_width = pf__rank_cache_width(r), self_size = pf__dtype_size(r->cache_dtype);
    size_t row = (size_t)g->cache_len * kv_width, layer = pf__rank_cache_layer(r); /* in elements */
    size_t used = (size_t)job->step.past * kv_width, cross = (size_t)job->step.cross_len * kv_width;
    int decoder_blocks = g->stages > 1 ? g->stage_end_layer - g->stage_first_layer /* a stage's caches */
                                       : c->num_layers - pf__encoder_blocks(c);
    const int *dst = job->reorder_dst, *src = job->reorder_src;
    int n = job->reorder_count;
    if (!kv_width) return;
    for (int l = 0; l < decoder_blocks && !pf__rank_failed(r); l++) {
        size_t self_layer = l * layer * self_size;
        r->backend->reorder_rows(r, (char *)r->k_cache + self_layer, dst, src, n, row * self_size, used * self_size);
        if (r->v_cache) /* latent attention has one cache */
            r->backend->reorder_rows(r, (char *)r->v_cache + self_layer, dst, src, n, row * self_size, used * self_size);
        if (!job->reorder_cross || !r->cross_k) continue; /* cross caches: fp32 */
        size_t f = sizeof(float);
        r->backend->reorder_rows(r, r->cross_k + l * layer, dst, src, n, cross * f, cross * f);
        r->backend->reorder_rows(r, r->cross_v + l * layer, dst, src, n, cross * f, cross * f);
    }
}

