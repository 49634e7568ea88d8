#include "internal.h"
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

/* Row of element d of head h of part (0 q, 1 k, 2 v) in a fused QKV tensor; h counts query heads
   for q and key/value heads for k and v (fewer where grouped-query attention shares them). */
static size_t pf__qkv_row(const pf__config *c, pf__qkv_layout layout, int part, int h, int d) {
    size_t hd = (size_t)c->head_dim, H = (size_t)c->num_heads, KV = (size_t)c->num_kv_heads;
    switch (layout) {
    case PF__QKV_BLOCKS: return (part ? H * hd + (size_t)(part - 1) * KV * hd : 0) + (size_t)h * hd + (size_t)d;
    case PF__QKV_PER_HEAD: return (size_t)h * 3 * hd + (size_t)part * hd + (size_t)d;
    case PF__QKV_CODEGEN: { /* 4 blocks, each [q | v | k] of H/4 heads */
        size_t per_block = H / 4, local = per_block * hd, in_block[3] = {0, 2, 1};
        return ((size_t)h / per_block) * 3 * local + in_block[part] * local + ((size_t)h % per_block) * hd + (size_t)d;
    }
    case PF__QKV_GROUPED: { /* per key/value head: its H/KV query heads, then its k, then its v */
        size_t group = H / KV, block = (group + 2) * hd;
        if (part == 0) return ((size_t)h / group) * block + ((size_t)h % group) * hd + (size_t)d;
        return (size_t)h * block + (group + (size_t)part - 1) * hd + (size_t)d;
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
    case PF__SPLIT_QKV_COLUMNS: { /* the rank's q heads, then its k heads, then its v heads */
        p->rows = ((size_t)s->heads + 2 * (size_t)s->kv_heads) * hd;
        if (!p->rows) break;
        p->row_map = (size_t *)malloc(p->rows * sizeof *p->row_map);
        if (!p->row_map) return -1;
        size_t k = 0;
        for (int part = 0; part < 3; part++) {
            int first = part ? s->kv_begin : s->head_begin, count = part ? s->kv_heads : s->heads;
            for (int h = first; h < first + count; h++)
                for (size_t d = 0; d < hd; d++) p->row_map[k++] = pf__qkv_row(c, pf__archs[c->arch].qkv_layout, part, h, (int)d);
        }
        break;
    }
    case PF__SPLIT_HEAD_COLUMNS: p->row_begin = (size_t)s->head_begin * hd, p->rows = (size_t)s->heads * hd; break;
    case PF__SPLIT_KV_COLUMNS: p->row_begin = (size_t)s->kv_begin * hd, p->rows = (size_t)s->kv_heads * hd; break;
    case PF__SPLIT_MLP_COLUMNS: p->row_begin = (size_t)s->mlp_begin, p->rows = (size_t)s->mlp_width; break;
    case PF__SPLIT_GATE_UP_COLUMNS: { /* [gate | up] of intermediate_size each: the same columns of both */
        size_t w = (size_t)s->mlp_width, half = src->rows / 2;
        p->rows = 2 * w;
        if (!p->rows) break;
        p->row_map = (size_t *)malloc(p->rows * sizeof *p->row_map);
        if (!p->row_map) return -1;
        for (size_t i = 0; i < w; i++) p->row_map[i] = (size_t)s->mlp_begin + i, p->row_map[w + i] = half + (size_t)s->mlp_begin + i;
        break;
    }
    case PF__SPLIT_HEAD_ROWS: { /* value head by value head */
        size_t vd = (size_t)pf__value_head_dim(c);
        p->col_begin = (size_t)s->head_begin * vd, p->cols = (size_t)s->heads * vd;
        break;
    }
    case PF__SPLIT_LATENT_KV_COLUMNS: { /* per query head its key (nope) rows and its value rows */
        size_t per_head = (size_t)c->qk_nope_head_dim + (size_t)c->v_head_dim;
        p->row_begin = (size_t)s->head_begin * per_head, p->rows = (size_t)s->heads * per_head;
        break;
    }
    case PF__SPLIT_MLP_ROWS: p->col_begin = (size_t)s->mlp_begin, p->cols = (size_t)s->mlp_width; break;
    case PF__SPLIT_VOCAB: p->row_begin = (size_t)s->vocab_begin, p->rows = (size_t)s->vocab_rows; break;
    case PF__SPLIT_EXPERTS_GATE_UP: { /* of each of its experts, its columns of gate, then of up */
        size_t I = (size_t)c->moe_intermediate_size, w = (size_t)s->expert_width;
        /* a fused tensor's outputs alternate where the family's do; per-expert pieces (a GGUF's
           gate and up tensors) are gate, then up */
        int interleaved = c->experts_interleaved && !src->pieces;
        p->rows = (size_t)s->experts * 2 * w;
        if (!p->rows) break;
        p->row_map = (size_t *)malloc(p->rows * sizeof *p->row_map);
        if (!p->row_map) return -1;
        for (size_t e = 0, k = 0; e < (size_t)s->experts; e++)
            for (size_t half = 0; half < 2; half++)
                for (size_t i = 0, col; i < w; i++) {
                    col = (size_t)s->expert_col_begin + i;
                    /* interleaved: gate column i is output 2i, up's 2i + 1 (gpt-oss) */
                    p->row_map[k++] = ((size_t)s->expert_begin + e) * 2 * I + (interleaved ? 2 * col + half : half * I + col);
                }
        break;
    }
    case PF__SPLIT_EXPERTS_OUTPUT: { /* whole rows of the rank's experts */
        size_t per_expert = src->rows / (size_t)c->num_experts;
        p->row_begin = (size_t)s->expert_begin * per_expert, p->rows = (size_t)s->experts * per_expert;
        break;
    }
    case PF__SPLIT_HEADS: p->row_begin = (size_t)s->head_begin, p->rows = (size_t)s->heads; break;
    case PF__SPLIT_SHARED_COLUMNS: p->row_begin = (size_t)s->shared_begin, p->rows = (size_t)s->shared_width; break;
    case PF__SPLIT_SHARED_ROWS: p->col_begin = (size_t)s->shared_begin, p->cols = (size_t)s->shared_width; break;
    case PF__SPLIT_SHARED_GATE_UP_COLUMNS: { /* [gate | up] of shared_intermediate_size each: the same columns of both */
        size_t w = (size_t)s->shared_width, half = src->rows / 2;
        p->rows = 2 * w;
        if (!p->rows) break;
        p->row_map = (size_t *)malloc(p->rows * sizeof *p->row_map);
        if (!p->row_map) return -1;
        for (size_t i = 0; i < w; i++) p->row_map[i] = (size_t)s->shared_begin + i, p->row_map[w + i] = half + (size_t)s->shared_begin + i;
        break;
    }
    case PF__SPLIT_EXPERTS_DOWN: { /* each expert's [hidden, I] after the other: the experts' rows, its columns */
        size_t per_expert = src->rows / (size_t)c->num_experts;
        p->row_begin = (size_t)s->expert_begin * per_expert, p->rows = (size_t)s->experts * per_expert;
        p->col_begin = (size_t)s->expert_col_begin, p->cols = (size_t)s->expert_width;
        break;
    }
    }
    return 0;
}

static size_t pf__plan_row(const pf__plan *p, size_t i) { return p->row_map ? p->row_map[i] : p->row_begin + i; }

/* Where row `row` of a block-format source starts: in its piece where the source is joined from
   per-expert tensors (pf__source.pieces), else in its one tensor. */
static const uint8_t *pf__blocked_row(const pf__source *src, size_t row) {
    size_t row_bytes = pf__weight_bytes(src->dtype, 1, src->cols);
    if (src->pieces) return src->pieces[row / src->piece_rows] + row % src->piece_rows * row_bytes;
    return src->data + row * row_bytes;
}

/* Blocks [first, first + count) of row `row` of a block-format source into out: the file's bytes,
   or a quantized checkpoint's assembled from its tensors (pf__packed_row_blocks: MXFP4's, GPTQ's
   and AWQ's; per-expert pieces each their own). */
static void pf__copy_row_blocks(uint8_t *out, const pf__source *src, size_t row, size_t first, size_t count) {
    if (src->packed) pf__packed_row_blocks(src->packed, row, first, count, out);
    else if (src->packed_pieces)
        pf__packed_row_blocks(src->packed_pieces[row / src->piece_rows], row % src->piece_rows, first, count, out);
    else memcpy(out, pf__blocked_row(src, row) + first * pf__block_bytes(src->dtype), count * pf__block_bytes(src->dtype));
}

/* n consecutive values of a source in file order, from element index first, as fp32. */
static void pf__source_run(float *dst, const pf__source *src, size_t first, size_t n) {
    if (src->packed) { /* [out, in] (pf__take_source): a run lies in one row */
        pf__packed_row_run(src->packed, first / src->cols, first % src->cols, n, dst);
        return;
    }
    if (src->packed_pieces) { /* a run lies in one row of one piece */
        size_t piece = src->piece_rows * src->cols, local = first % piece;
        pf__packed_row_run(src->packed_pieces[first / piece], local / src->cols, local % src->cols, n, dst);
        return;
    }
    const unsigned char *at = PF__BLOCKED(src->dtype) ? src->data : src->data + first * pf__dtype_size(src->dtype);
    if (src->pieces) { /* a run never crosses a row's end, so it lies in one piece */
        size_t piece = src->piece_rows * src->cols;
        at = src->pieces[first / piece] + (first % piece) * pf__dtype_size(src->dtype);
    }
    switch (src->dtype) {
    case PF__DTYPE_F32: memcpy(dst, at, n * sizeof(float)); break;
    case PF__DTYPE_F16:
        for (size_t k = 0; k < n; k++) dst[k] = pf__f16_to_f32((uint16_t)(at[2 * k] | (at[2 * k + 1] << 8)));
        break;
    case PF__DTYPE_BF16:
        for (size_t k = 0; k < n; k++) dst[k] = pf__bf16_to_f32((uint16_t)(at[2 * k] | (at[2 * k + 1] << 8)));
        break;
    default:
        if (PF__BLOCKED(src->dtype)) { /* through whole blocks: runs start and end anywhere in them */
            size_t values = pf__block_values(src->dtype), bytes = pf__block_bytes(src->dtype);
            /* joined pieces: a run lies in one row of one piece; else the tensor is one run of blocks */
            const uint8_t *base = src->pieces ? pf__blocked_row(src, first / src->cols) : src->data;
            size_t start = src->pieces ? first % src->cols : first;
            float block[256];
            for (size_t done = 0; done < n;) {
                size_t i = start + done, in_block = i % values, take = values - in_block;
                if (take > n - done) take = n - done;
                pf__block_dequantize(src->dtype, base + i / values * bytes, block);
                memcpy(dst + done, block + in_block, take * sizeof(float));
                done += take;
            }
        } else
            memset(dst, 0, n * sizeof(float));
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

/* Element (row, col) of a transposed source's file order, and how many rows from row on (at most
   max) follow it there: IN_OUT holds [cols][rows]; EXPERTS_IN_OUT each expert's [cols][its rows]. */
static size_t pf__transposed_at(const pf__source *src, size_t row, size_t col, size_t *max, int experts) {
    if (src->layout != PF__LAYOUT_EXPERTS_IN_OUT) return col * src->rows + row;
    size_t per = src->rows / (size_t)experts, e = row / per, in_expert = row % per;
    if (*max > per - in_expert) *max = per - in_expert;
    return e * per * src->cols + col * per + in_expert;
}

/* The rank's slice of a PF__LAYOUT_GROUPED or _GROUPED_IN_OUT source as its dense block-diagonal
   rows: of each row, the columns of its output's group from the file, zeros elsewhere. */
static void pf__slice_copy_grouped(float *dst, const pf__source *src, const pf__plan *p) {
    size_t group_rows = src->rows / src->groups, group_cols = src->cols / src->groups;
    for (size_t i = 0; i < p->rows; i++) {
        size_t row = pf__plan_row(p, i), first = row / group_rows * group_cols, last = first + group_cols;
        size_t lo = first > p->col_begin ? first : p->col_begin;
        size_t hi = last < p->col_begin + p->cols ? last : p->col_begin + p->cols;
        float *out = dst + i * p->cols;
        memset(out, 0, p->cols * sizeof(float));
        if (src->layout == PF__LAYOUT_GROUPED) {
            if (lo < hi) pf__source_run(out + (lo - p->col_begin), src, row * group_cols + (lo - first), hi - lo);
        } else { /* [groups, in, out]: input col's row of its group's [in, out], at the row's output */
            for (size_t col = lo; col < hi; col++)
                pf__source_run(out + (col - p->col_begin), src, col * group_rows + row % group_rows, 1);
        }
    }
}

/* Copies the rank's slice of src into dst ([plan rows, plan cols] fp32), converting dtype and
   layout on the way, in runs of consecutive file values. */
static void pf__slice_copy(float *dst, const pf__source *src, const pf__plan *p, int experts) {
    if (src->layout == PF__LAYOUT_GROUPED || src->layout == PF__LAYOUT_GROUPED_IN_OUT) {
        pf__slice_copy_grouped(dst, src, p);
        return;
    }
    if (src->layout != PF__LAYOUT_IN_OUT && src->layout != PF__LAYOUT_EXPERTS_IN_OUT) {
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
                    size_t at = pf__transposed_at(src, pf__plan_row(p, i0 + i), p->col_begin + c0 + c, &run, experts);
                    pf__source_run(&block[c][i], src, at, run);
                }
            for (size_t i = 0; i < ni; i++)
                for (size_t c = 0; c < nc; c++) dst[(i0 + i) * p->cols + c0 + c] = block[c][i];
        }
    }
}

/* A plan row that pf__slice_scatter leaves alone (another rank writes it). */
#define PF__ROW_SKIPPED ((size_t)-1)

/* The inverse of pf__slice_copy into a full host array [rows, cols] (pf_to_cpu). */
static void pf__slice_scatter(float *full, size_t full_cols, const float *slice, const pf__plan *p) {
    for (size_t i = 0; i < p->rows; i++)
        if (pf__plan_row(p, i) != PF__ROW_SKIPPED)
            memcpy(full + pf__plan_row(p, i) * full_cols + p->col_begin, slice + i * p->cols, p->cols * sizeof(float));
}

/* Tied LM head: the slot has no source of its own and shares the token embedding. */
static int pf__slot_tied(const pf_model *m, size_t slot) {
    return slot == PF__SLOT_LM_HEAD && !m->sources[slot].data;
}

/* The stack a slot belongs to (as a member), or NULL. */
static const struct pf__stack *pf__stack_of(pf__slot slot) {
    for (size_t i = 0; i < pf__stacks_count; i++)
        for (int k = 0; k < pf__stacks[i].num_members; k++)
            if (pf__stacks[i].members[k] == slot) return &pf__stacks[i];
    return NULL;
}

/* Whether a rank's slice of a source can be stored as Q8: a matrix (or embedding) whose slice
   starts and ends at block boundaries of the whole tensor's columns. */
static int pf__q8_fits(const pf__source *src, const pf__plan *p) {
    return (src->layout == PF__LAYOUT_OUT_IN || src->layout == PF__LAYOUT_IN_OUT || src->layout == PF__LAYOUT_EXPERTS_IN_OUT ||
            src->layout == PF__LAYOUT_GROUPED || src->layout == PF__LAYOUT_GROUPED_IN_OUT) &&
           p->cols % PF__Q8_BLOCK == 0 &&
           p->col_begin % PF__Q8_BLOCK == 0;
}

/* Whether the ranks keep a GGUF's quantized matrices in their blocks: CPU ranks, where
   pf_parallel_options.dtype is PF_DTYPE_AUTO (any other dtype converts them, from their values). */
static int pf__keeps_blocks(const pf__group *g) {
    return g->backend->host_memory && g->options.dtype == PF_DTYPE_AUTO;
}

/* Whether a rank's slice of a block-format source keeps whole blocks: whole rows ([out, in]
   matrices split by rows always do), or columns starting and ending on the blocks' boundaries. */
static int pf__blocks_fit(const pf__source *src, const pf__plan *p) {
    size_t values = pf__block_values(src->dtype);
    if (src->packed && src->packed->reordered) return src->layout == PF__LAYOUT_OUT_IN; /* any columns: reordered */
    return src->layout == PF__LAYOUT_OUT_IN && p->cols % values == 0 && p->col_begin % values == 0;
}

/* Fails the rank where its slice of a source the ranks keep in blocks would cut blocks. */
static int pf__check_blocks_fit(pf__rank *r, const pf__source *src, const pf__plan *p) {
    if (!pf__keeps_blocks(r->group) || !PF__BLOCKED(src->dtype) || src->layout == PF__LAYOUT_VECTOR ||
        pf__blocks_fit(src, p))
        return 1;
    pf__rank_fail(r, PF_ERROR_UNSUPPORTED, "a %s weight of [%zu, %zu] would be cut inside its %zu-weight blocks on %d "
                  "ranks (rank %d's columns %zu..%zu): use fewer ranks, or dtype f32 (PF_DTYPE_F32) to expand it",
                  pf__dtype_name(src->dtype), src->rows, src->cols, pf__block_values(src->dtype), r->group->num_ranks,
                  r->index, p->col_begin, p->col_begin + p->cols);
    return 0;
}

/* The dtype a source is stored in on the ranks: the group's, except that the CPU backend keeps
   1-D tensors (norms, biases: a tiny share of the bytes) in fp32 for its ops to read as they are,
   their values rounded to the group's dtype so that they are what the dtype would hold; that
   a Q8 or Q4 group keeps in fp16 the slices the blocks cannot hold (pf__q8_fits); and that a
   file's blocks stay as they are by default (pf__keeps_blocks) and in a Q8 group. */
static pf__dtype pf__storage_dtype(const pf__group *g, const pf__source *src, const pf__plan *p) {
    if (g->backend->host_memory && src->layout == PF__LAYOUT_VECTOR) return PF__DTYPE_F32;
    if (pf__keeps_blocks(g) && PF__BLOCKED(src->dtype)) return src->dtype; /* pf__blocks_fit checked it */
    /* q8 products on a file's blocks: multiplied as they are, as llama.cpp does */
    if (g->dtype == PF__DTYPE_Q8 && PF__INT8_PRODUCTS(src->dtype) && pf__blocks_fit(src, p))
        return src->dtype; /* (E4M3 and Q8_G have no int8 sub-blocks: quantized to q8_0 from their values) */
    if (PF__QUANTIZED(g->dtype)) return pf__q8_fits(src, p) ? g->dtype : PF__DTYPE_F16;
    return g->dtype;
}

/* Slices one source into rank memory at dst ([plan rows, plan cols] in pf__storage_dtype). */
/* The checkpoint bytes that hold `count` values of src (blocks counted by the share of them). */
static uint64_t pf__source_bytes(const pf__source *src, size_t count) {
    if (PF__BLOCKED(src->dtype)) return (uint64_t)count * pf__block_bytes(src->dtype) / pf__block_values(src->dtype);
    return (uint64_t)count * pf__dtype_size(src->dtype);
}

/* A rank copied `bytes` of checkpoint data: counted for the progress callback. */
static void pf__progress_add(pf__group *g, uint64_t bytes) {
    if (!g->progress) return;
    pthread_mutex_lock(&g->mutex);
    g->progress_done += bytes;
    if (g->progress_done > g->progress_total) g->progress_done = g->progress_total;
    pthread_mutex_unlock(&g->mutex);
}


/* Whether a rank keeps a reordered matrix (pf__packed.reordered) in its blocks, stored in dtype:
   the file's format, in host memory (the products gather x in the blocks' order there). */
static int pf__reorders(const pf__rank *r, const pf__source *src, pf__dtype dtype) {
    return src->packed && src->packed->reordered && dtype == src->dtype && r->backend->host_memory;
}

/* A reordered matrix's weight w on the rank: its blocks' order of the plan's inputs (w->input_order,
   in rank memory: host memory, written here) and width (w->cols; w->inputs the plan's). 0: failed. */
static int pf__rank_order_inputs(pf__rank *r, pf__weight *w, const pf__source *src, const pf__plan *p) {
    size_t width = p->cols ? pf__input_order(src->packed, p->col_begin, p->cols, NULL) : 0;
    if (p->cols && !width) {
        pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory");
        return 0;
    }
    uint32_t *order = (uint32_t *)pf__rank_alloc(r, width * sizeof *order); /* NULL while counting */
    if (order) pf__input_order(src->packed, p->col_begin, p->cols, order);
    w->input_order = order;
    w->inputs = p->cols;
    w->cols = width;
    return !r->error;
}

/* order: a reordered matrix's w->input_order (its blocks [plan rows][width] are written in it), else NULL. */
static void pf__rank_fill(pf__rank *r, void *dst, pf__dtype dtype, const pf__source *src, const pf__plan *p,
                          const uint32_t *order, size_t width, float **staging, size_t *staging_size) {
    /* vectors kept in fp32 hold what the group's dtype would (Q8 groups keep them as they are) */
    pf__dtype rounding = PF__QUANTIZED(r->group->dtype) ? PF__DTYPE_F32 : r->group->dtype;
    size_t numel = p->rows * p->cols;
    if (!numel) return;
    if (r->backend->host_memory && dtype == PF__DTYPE_F32) {
        float *f = (float *)dst;
        pf__slice_copy(f, src, p, r->group->model->config.num_experts);
        for (size_t k = 0; rounding != PF__DTYPE_F32 && k < numel; k++)
            f[k] = rounding == PF__DTYPE_F16 ? pf__f16_to_f32(pf__f32_to_f16(f[k])) : pf__bf16_to_f32(pf__f32_to_bf16(f[k]));
        pf__progress_add(r->group, pf__source_bytes(src, numel));
        return;
    }
    size_t need = numel * sizeof(float), ordered_bytes = order ? pf__weight_bytes(dtype, p->rows, width) : 0;
    if (ordered_bytes > need) need = ordered_bytes; /* a slice of few inputs in many groups: mostly pads */
    if (need > *staging_size) { /* one slice at a time: never a second full copy */
        free(*staging);
        *staging_size = need;
        *staging = (float *)malloc(*staging_size);
        if (!*staging) {
            *staging_size = 0;
            pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory for a %zu-byte staging slice", need);
            return;
        }
    }
    float *f = *staging;
    if (order) { /* a reordered matrix's blocks, row by row, in its inputs' order */
        size_t slice_bytes = pf__weight_bytes(dtype, 1, width);
        for (size_t i = 0; i < p->rows; i++)
            pf__packed_row_blocks_ordered(src->packed, pf__plan_row(p, i), order, p->col_begin, width / 32,
                                          (uint8_t *)f + i * slice_bytes);
        r->backend->upload(r, dst, f, ordered_bytes);
        pf__progress_add(r->group, pf__source_bytes(src, numel));
        return;
    }
    if (PF__BLOCKED(dtype) && dtype == src->dtype && src->layout == PF__LAYOUT_OUT_IN) { /* the file's blocks, row by row (whole blocks: pf__blocks_fit) */
        size_t values = pf__block_values(dtype), slice_bytes = pf__weight_bytes(dtype, 1, p->cols);
        for (size_t i = 0; i < p->rows; i++)
            pf__copy_row_blocks((uint8_t *)f + i * slice_bytes, src, pf__plan_row(p, i), p->col_begin / values, p->cols / values);
        r->backend->upload(r, dst, f, slice_bytes * p->rows);
        pf__progress_add(r->group, slice_bytes * p->rows);
        return;
    }
    pf__slice_copy(f, src, p, r->group->model->config.num_experts);
    if (dtype == PF__DTYPE_Q8) {
        pf__q8_quantize(f, p->rows, p->cols);
    } else if (dtype == PF__DTYPE_Q4) {
        pf__q4_quantize(f, p->rows, p->cols);
    } else if (dtype != PF__DTYPE_F32) { /* convert in place: 2-byte values behind the 4-byte ones */
        uint16_t *half = (uint16_t *)f;
        for (size_t k = 0; k < numel; k++) half[k] = dtype == PF__DTYPE_F16 ? pf__f32_to_f16(f[k]) : pf__f32_to_bf16(f[k]);
    }
    r->backend->upload(r, dst, f, pf__weight_bytes(dtype, p->rows, p->cols));
    pf__progress_add(r->group, pf__source_bytes(src, numel));
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
PF_PRIVATE int pf__encoder_blocks(const pf__config *c) {
    pf__kind kind = pf__archs[c->arch].kind;
    return kind == PF__KIND_ENCODER ? c->num_layers : kind == PF__KIND_SEQ2SEQ ? c->encoder_layers : 0;
}

/* Cache layers: one per decoder block (its keys stay for the next steps), and one that every
   encoder block reuses (its keys live for the block only). */
static int pf__cache_layers(const pf__config *c) {
    int encoder = pf__encoder_blocks(c);
    return c->num_layers - encoder + (encoder > 0);
}

PF_PRIVATE int pf__cache_layer(const pf__config *c, int block) {
    int encoder = pf__encoder_blocks(c);
    return block < encoder ? c->num_layers - encoder : block - encoder;
}

/* ProphetNet's bucket of each distance 0..cache_len (a query's position minus a key's, one past it for
   the predict stream) that the n-gram attention reads (pf__backend.ngram_attend): transformers'
   compute_relative_buckets one way, in its fp32 and its order (max_exact added before the
   truncation, where T5's adds it after); one table that every backend reads alike. */
static int32_t *pf__rank_ngram_buckets(pf__rank *r) {
    const pf__config *c = &r->group->model->config;
    size_t count = (size_t)r->group->cache_len + 1;
    int32_t *buckets = (int32_t *)malloc(count * sizeof(int32_t));
    if (!buckets) {
        pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory");
        return NULL;
    }
    int max_exact = c->rel_buckets / 2;
    float last = (float)(c->rel_buckets - 1), reach = (float)log((double)c->rel_max_distance / max_exact);
    for (size_t d = 0; d < count; d++) {
        if ((int)d < max_exact) {
            buckets[d] = (int32_t)d;
            continue;
        }
        float large = (float)max_exact + logf((float)d / (float)max_exact) / reach * (float)(c->rel_buckets - max_exact);
        buckets[d] = (int32_t)(large < last ? large : last);
    }
    int32_t *table = (int32_t *)pf__rank_alloc(r, count * sizeof(int32_t));
    if (table) r->backend->upload(r, table, buckets, count * sizeof(int32_t));
    free(buckets);
    return table;
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
    if (r->group->world_ranks < 2 || r->error || !r->x) return;
    r->backend->upload(r, r->x, &value, sizeof value);
    pf__all_reduce(r, r->x, 1, "the communicators' warm-up");
    r->backend->download(r, &value, r->x, sizeof value);
}

/* Values in one layer's K (or V) cache of the rank, self or cross: [max_batch][cache_len][kv width];
   with latent attention its one cache, [max_batch][cache_len][kv_lora_rank + qk_rope_head_dim]
   whatever its heads. */
PF_PRIVATE size_t pf__rank_cache_layer(const pf__rank *r) {
    const pf__group *g = r->group;
    return (size_t)g->max_batch * g->cache_len * pf__rank_cache_width(r);
}

/* Values one cached position of a layer takes on the rank. */
PF_PRIVATE size_t pf__rank_cache_width(const pf__rank *r) {
    const pf__config *c = &r->group->model->config;
    if (c->kv_lora_rank) return r->share.heads ? (size_t)c->kv_lora_rank + (size_t)c->qk_rope_head_dim : 0;
    return (size_t)r->share.kv_heads * pf__attend_head_dim(c);
}

/* Runs on the rank's thread: slices every weight into the rank's memory (stacked slots as one
   allocation with their members as views into it), then the KV cache and scratch. */
/* A stack's members (q, k, v, say) as one allocation, their slices one after another; each member
   slot's weight points at its part. */
static void pf__rank_load_stack(pf__rank *r, const struct pf__stack *stack, size_t i, size_t layer_base,
                                float **staging, size_t *staging_size) {
    pf__group *g = r->group;
    const pf_model *m = g->model;
    const pf__config *c = &m->config;
    pf__plan plans[4];
    size_t rows = 0, cols = 0, widths[4];
    int n = 0;
    pf__dtype dtype = g->dtype, own[4]; /* the members' (all matrices, or all vectors) */
    /* members kept in different block formats, or reordered (each its own order of the inputs): the
       stack's weight is its parts */
    int mixed = 0;
    for (int k = 0; k < stack->num_members; k++) {
        const pf__source *src = &m->sources[layer_base + stack->members[k]];
        if (!src->data) continue;
        if (pf__plan_for(c, &r->share, src, &plans[n])) {
            pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory");
            break;
        }
        if (!pf__check_blocks_fit(r, src, &plans[n])) {
            free(plans[n].row_map);
            break;
        }
        own[n] = pf__storage_dtype(g, src, &plans[n]);
        if (!pf__keeps_blocks(g) && g->dtype != PF__DTYPE_Q8) {
            if (n == 0 || !PF__QUANTIZED(own[n])) dtype = own[n]; /* blocks only if every member fits them */
        } else if (n == 0) {
            dtype = own[n];
        } else if (own[n] != dtype) {
            mixed = 1;
        }
        widths[n] = pf__reorders(r, src, own[n]) && plans[n].cols ? pf__input_order(src->packed, plans[n].col_begin,
                                                                                    plans[n].cols, NULL) : plans[n].cols;
        if (!widths[n]) {
            pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory");
            free(plans[n].row_map);
            break;
        }
        if (widths[n] != plans[n].cols || pf__reorders(r, src, own[n])) mixed = 1;
        rows += plans[n].rows;
        cols = plans[n++].cols;
    }
    size_t bytes = 0;
    for (int k = 0; k < n; k++) bytes += pf__weight_bytes(mixed ? own[k] : dtype, plans[k].rows, mixed ? widths[k] : cols);
    pf__weight *w = &r->weights[i];
    w->dtype = mixed ? PF__DTYPE_OTHER : dtype;
    w->rows = rows;
    w->cols = cols;
    w->data = r->error ? NULL : pf__rank_alloc(r, bytes);
    size_t offset = 0;
    pf__weight *previous = NULL;
    for (int k = 0, at = 0; k < stack->num_members && at < n; k++) {
        const pf__source *src = &m->sources[layer_base + stack->members[k]];
        if (!src->data) continue;
        pf__plan *p = &plans[at];
        pf__weight *member = &r->weights[layer_base + stack->members[k]];
        member->dtype = mixed ? own[at] : dtype;
        member->rows = p->rows;
        member->cols = p->cols;
        member->col_begin = p->col_begin;
        member->data = w->data ? (char *)w->data + offset : NULL;
        if (pf__reorders(r, src, member->dtype) && !pf__rank_order_inputs(r, member, src, p)) member->data = NULL;
        if (member->data)
            pf__rank_fill(r, member->data, member->dtype, src, p, member->input_order, member->cols, staging, staging_size);
        offset += pf__weight_bytes(member->dtype, p->rows, member->cols);
        if (mixed) *(previous ? &previous->next : &w->parts) = member;
        previous = member;
        free(p->row_map);
        at++;
    }
}

/* The rank's slice of every weight, in its storage dtype (in r->counting mode: only counted). */
static void pf__rank_slice_weights(pf__rank *r) {
    pf__group *g = r->group;
    const pf_model *m = g->model;
    const pf__config *c = &m->config;
    size_t num_slots = pf__num_slots(c);
    float *staging = NULL;
    size_t staging_size = 0;
    for (size_t i = 0; i < num_slots && !r->error; i++) {
        pf__slot slot = (pf__slot)(i < PF__SLOT_FIRST_LAYER ? i : PF__SLOT_FIRST_LAYER + (i - PF__SLOT_FIRST_LAYER) % PF__LAYER_SLOTS);
        size_t layer_base = i - (size_t)slot;
        if (i >= PF__SLOT_FIRST_LAYER) { /* pipeline stages: the layers of this rank's stage alone */
            int layer = (int)((i - PF__SLOT_FIRST_LAYER) / PF__LAYER_SLOTS);
            if (layer < g->stage_first_layer || layer >= g->stage_end_layer) continue;
        }
        const struct pf__stack *stack = NULL;
        for (size_t k = 0; k < pf__stacks_count; k++)
            if (pf__stacks[k].target == slot) stack = &pf__stacks[k];
        if (stack) {
            pf__rank_load_stack(r, stack, i, layer_base, &staging, &staging_size);
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
        if (!pf__check_blocks_fit(r, src, &p)) {
            free(p.row_map);
            break;
        }
        w->rows = p.rows;
        w->cols = p.cols;
        w->col_begin = p.col_begin;
        w->dtype = pf__storage_dtype(g, src, &p);
        /* slivers of the weights that stay unquantized: a router, whose logits choose the experts
           (llama.cpp's quantizer leaves ffn_gate_inp alone too), and Funnel's segment embeddings,
           which its relative terms read value by value, not as a product; ProphetNet's n-gram
           embeddings, read as a one-row table from their row ngram - 1 (pf__rank_ngram_tower) */
        if ((slot == PF__SLOT_ROUTER_WEIGHT || slot == PF__SLOT_FUNNEL_SEG_EMBED || slot == PF__SLOT_NGRAM_EMBED) &&
            PF__QUANTIZED(w->dtype))
            w->dtype = PF__DTYPE_F32;
        /* an embedding is read row by row, not through a product: a reordered one is decoded */
        if (slot == PF__SLOT_TOKEN_EMBED && pf__reorders(r, src, w->dtype)) w->dtype = PF__DTYPE_F32;
        if (pf__reorders(r, src, w->dtype) && !pf__rank_order_inputs(r, w, src, &p)) {
            free(p.row_map);
            break;
        }
        w->data = pf__rank_alloc(r, pf__weight_bytes(w->dtype, p.rows, w->cols));
        if (w->data) pf__rank_fill(r, w->data, w->dtype, src, &p, w->input_order, w->cols, &staging, &staging_size);
        free(p.row_map);
    }
    free(staging);
}

/* What the ranks sharing r's memory (every rank, for host memory) need of it, published in
   g->room_needed after a barrier, against what it has available: 1 when more, with the sums. */
static int pf__shared_room_short(pf__rank *r, size_t *need, size_t *available, int *sharing) {
    pf__group *g = r->group;
    size_t used = 0, total = 0;
    *need = 0;
    *sharing = 0;
    for (int k = 0; k < g->num_ranks; k++)
        if (r->backend->host_memory || g->ranks[k].device == r->device) *need += g->room_needed[k], (*sharing)++;
    if (r->backend->device_memory(r->device, &used, &total) != 0 || used > total) return 0;
    *available = total - used;
    return *need > *available;
}

/* A quantized checkpoint's matrices expand as the ranks slice them (an FP8 byte to 4 in fp32, a
   4-bit weight to 8 bytes' worth): before any weight is allocated, the ranks' weights against the
   memory they share; more is refused unless skip_memory_check. Other checkpoints' weights take
   what their files take (or less). */
static void pf__rank_check_weights_room(pf__rank *r) {
    pf__group *g = r->group;
    const pf_model *m = g->model;
    size_t num_slots = pf__num_slots(&m->config), need = 0, available = 0;
    int packed = 0, sharing = 0;
    for (size_t i = 0; i < num_slots && !packed; i++) packed = m->sources[i].packed != NULL;
    if (!packed || g->options.skip_memory_check) return;
    r->counting = 1;
    r->counted = 0;
    pf__rank_slice_weights(r);
    r->counting = 0;
    memset(r->weights, 0, num_slots * sizeof *r->weights); /* the counting pass's shapes, without data */
    g->room_needed[r->index] = r->counted;
    if (pf__barrier(g)) return;
    if (pf__shared_room_short(r, &need, &available, &sharing)) {
        const double gib = 1024.0 * 1024.0 * 1024.0;
        pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "the quantized checkpoint's weights, expanded to %s on %d rank%s, need "
                      "%.2f GiB of %s memory, which has %.2f GiB available: store them smaller (dtype bf16, q8_0 or "
                      "q4_0), or set skip_memory_check", pf__dtype_name(g->dtype), sharing, sharing == 1 ? "" : "s",
                      (double)need / gib, r->backend->host_memory ? "host" : r->backend->name, (double)available / gib);
    }
    pf__barrier(g); /* every rank has read room_needed before pf__rank_check_room writes it again */
}

/* The rank's slice of every weight, in its storage dtype; a tied head is the embedding. */
static void pf__rank_load_weights(pf__rank *r) {
    pf__group *g = r->group;
    const pf_model *m = g->model;
    r->weights = (pf__weight *)calloc(pf__num_slots(&m->config), sizeof *r->weights);
    if (!r->weights) {
        pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory");
        return;
    }
    r->allocating = PF__MEM_WEIGHTS;
    pf__rank_check_weights_room(r);
    if (pf__rank_failed(r)) return;
    pf__rank_slice_weights(r);
    if (r->error) return;
    if (pf__slot_tied(m, PF__SLOT_LM_HEAD)) r->weights[PF__SLOT_LM_HEAD] = r->weights[PF__SLOT_TOKEN_EMBED];
}

/* r->unit_gain: n fp32 ones on the rank's device (the gain of a norm that has no tensor). */
static void pf__rank_unit_gain(pf__rank *r, size_t n) {
    float *ones = (float *)malloc(n * sizeof(float));
    if (!ones) {
        pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory");
        return;
    }
    for (size_t i = 0; i < n; i++) ones[i] = 1.0f;
    r->unit_gain.dtype = PF__DTYPE_F32;
    r->unit_gain.rows = n;
    r->unit_gain.cols = 1;
    r->unit_gain.data = pf__rank_upload_table(r, ones, n);
    free(ones);
}

/* Tables computed here rather than read: the sinusoid (where the file has no copy of it; one per
   tower), the ALiBi slopes, in fp32; T5's relative position biases. */
static void pf__rank_make_tables(pf__rank *r) {
    pf__group *g = r->group;
    const pf_model *m = g->model;
    const pf__config *c = &m->config;
    const pf__arch *a = &pf__archs[c->arch];
    size_t hidden = (size_t)c->hidden_size;
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
    } else if ((a->positions == PF__POS_ALIBI || c->alibi_rounded) && r->share.heads) {
        pf__alibi_slopes(c->num_heads, r->share.head_begin, r->share.heads, table);
        for (int h = 0; c->alibi_rounded && h < r->share.heads; h++) /* Falcon's slopes are bf16 */
            table[h] = pf__bf16_to_f32(pf__f32_to_bf16(table[h]));
        r->alibi = (float *)pf__rank_upload_table(r, table, table_size);
    }
    free(table);
    if (c->qk_norm_l2) pf__rank_unit_gain(r, (size_t)c->head_dim);
    r->rel_bias = pf__rank_rel_table(r, &m->sources[PF__SLOT_REL_BIAS]);
    r->enc_rel_bias = pf__rank_rel_table(r, &m->sources[PF__SLOT_ENC_REL_BIAS]);
    if (c->ngram) r->ngram_buckets = pf__rank_ngram_buckets(r);
}

/* The key/value caches (the cross-attention ones of encoder-decoders in fp32). */
static void pf__rank_alloc_caches(pf__rank *r) {
    pf__group *g = r->group;
    const pf__config *c = &g->model->config;
    const pf__arch *a = &pf__archs[c->arch];
    r->cache_dtype = g->cache_dtype;
    size_t self_layer = pf__rank_cache_layer(r) * pf__dtype_size(r->cache_dtype);
    size_t cross_layer = pf__rank_cache_layer(r) * sizeof(float);
    r->allocating = PF__MEM_CACHE;
    size_t layers = g->stages > 1 ? (size_t)(g->stage_end_layer - g->stage_first_layer) /* a stage's own */
                                  : (size_t)pf__cache_layers(c);
    r->k_cache = pf__rank_alloc(r, layers * self_layer);
    if (!c->kv_lora_rank) r->v_cache = pf__rank_alloc(r, layers * self_layer); /* latents: one cache */
    if (a->kind == PF__KIND_SEQ2SEQ && c->num_layers > c->encoder_layers) {
        r->cross_k = (float *)pf__rank_alloc(r, (size_t)(c->num_layers - c->encoder_layers) * cross_layer);
        r->cross_v = (float *)pf__rank_alloc(r, (size_t)(c->num_layers - c->encoder_layers) * cross_layer);
    }
}

/* Activations for up to max_tokens rows, logits, and the backend's own work space. */
static void pf__rank_alloc_scratch(pf__rank *r) {
    pf__group *g = r->group;
    const pf_model *m = g->model;
    const pf__config *c = &m->config;
    size_t hd = (size_t)c->head_dim, hidden = (size_t)c->hidden_size, T = g->max_tokens;
    size_t q_width = (size_t)r->share.heads * hd, kv_width = (size_t)r->share.kv_heads * hd;
    size_t mlp_in = (size_t)r->share.mlp_width * (c->gated_mlp ? 2 : 1);
    r->allocating = PF__MEM_SCRATCH;
    size_t wide = hidden > (size_t)c->embed_dim ? hidden : (size_t)c->embed_dim; /* OPT's project_out */
    r->x = (float *)pf__rank_alloc(r, T * hidden * sizeof(float));
    r->h = (float *)pf__rank_alloc(r, T * hidden * sizeof(float));
    r->part = (float *)pf__rank_alloc(r, T * wide * sizeof(float));
    if (m->sources[PF__SLOT_PROJECT_IN].data) /* trigrams: the rows, a zero row, then the 3 T rows gathered */
        r->embed = (float *)pf__rank_alloc(r, (c->trigram_input ? 4 * T + 1 : T) * c->embed_dim * sizeof(float));
    if (c->trigram_input && !r->counting && !r->trigram_rows && /* host memory: once, not in the counting pass */
        !(r->trigram_rows = (int32_t *)malloc(3 * T * sizeof(int32_t))))
        pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory");
    size_t attend_width = (size_t)pf__attend_head_dim(c) / hd; /* LUKE's doubled heads */
    r->qkv = (float *)pf__rank_alloc(r, T * (q_width + 2 * kv_width) * attend_width * sizeof(float));
    size_t v_width = (size_t)r->share.heads * pf__value_head_dim(c); /* latent attention's value heads may be wider */
    r->attn = (float *)pf__rank_alloc(r, T * (v_width > q_width ? v_width : q_width) * sizeof(float));
    if (c->kv_lora_rank) /* kv_a_proj's rows, then q_a_proj's */
        r->latent = (float *)pf__rank_alloc(r, T * ((size_t)c->kv_lora_rank + c->qk_rope_head_dim + c->q_lora_rank) * sizeof(float));
    if (c->disentangled) { /* DeBERTa: its relative embeddings, their projections, a layer's dense bias */
        size_t rel_rows = 2 * (size_t)c->rel_span;
        r->rel_normed = (float *)pf__rank_alloc(r, rel_rows * hidden * sizeof(float));
        r->rel_qkv = (float *)pf__rank_alloc(r, rel_rows * (q_width + 2 * kv_width) * sizeof(float));
        r->dense_bias = (float *)pf__rank_alloc(r, T * (size_t)r->share.heads * (size_t)g->cache_len * sizeof(float));
    }
    if (c->conv_kernel) { /* ConvBERT's convolution heads */
        r->conv_in = (float *)pf__rank_alloc(r, T * hidden * sizeof(float));
        r->conv_key = (float *)pf__rank_alloc(r, T * q_width * sizeof(float));
        r->conv_logits = (float *)pf__rank_alloc(r, T * (size_t)c->num_heads * (size_t)c->conv_kernel * sizeof(float));
        r->conv_out = (float *)pf__rank_alloc(r, T * q_width * sizeof(float));
    }
    if (c->funnel) { /* Funnel's keys and values, relative terms and pooling (pf__rank_funnel) */
        size_t rel_rows = 3 * (size_t)g->cache_len, B = (size_t)g->max_batch;
        r->funnel_k = (float *)pf__rank_alloc(r, T * kv_width * sizeof(float));
        r->funnel_v = (float *)pf__rank_alloc(r, T * kv_width * sizeof(float));
        r->funnel_bias = (float *)pf__rank_alloc(r, T * (size_t)r->share.heads * (size_t)g->cache_len * sizeof(float));
        r->funnel_sinusoid = (float *)pf__rank_alloc(r, rel_rows * hidden * sizeof(float));
        r->funnel_rel = (float *)pf__rank_alloc(r, rel_rows * q_width * sizeof(float));
        r->funnel_ints = (int32_t *)pf__rank_alloc(r, (2 * B + 2 * T) * sizeof(int32_t));
        if (c->funnel_decoder) r->funnel_first = (float *)pf__rank_alloc(r, T * hidden * sizeof(float));
        if (!r->counting && !r->funnel_pads) { /* host memory: once, not in the counting pass */
            r->funnel_pads = (int *)malloc(3 * B * sizeof(int));
            r->funnel_types = (int32_t *)malloc(3 * T * sizeof(int32_t));
            r->funnel_host_ints = (int32_t *)malloc((2 * B + 2 * T) * sizeof(int32_t));
            r->funnel_rows = (int32_t *)malloc(2 * T * sizeof(int32_t));
            r->funnel_scales = (float *)malloc(2 * T * sizeof(float));
            r->funnel_sinusoid_host = (float *)malloc(rel_rows * hidden * sizeof(float));
            if (!r->funnel_pads || !r->funnel_types || !r->funnel_host_ints || !r->funnel_rows || !r->funnel_scales ||
                !r->funnel_sinusoid_host)
                pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory");
        }
    }
    if (c->ngram) { /* ProphetNet's predict stream and a stream's relative bias projections */
        r->ngram_x = (float *)pf__rank_alloc(r, T * hidden * sizeof(float));
        r->ngram_rel = (float *)pf__rank_alloc(r, T * (size_t)c->rel_buckets * (size_t)c->num_heads * sizeof(float));
    }
    if (c->transfo_xl) { /* Transformer-XL (pf__rank_transfo_xl): the rows' memories, the relative terms, the
                            adaptive input and softmax */
        size_t keys = (size_t)c->txl_mem_len + (size_t)g->cache_len, B = (size_t)g->max_batch;
        size_t rel_rows = T + keys, e = (size_t)c->txl_d_embed, logits = (size_t)c->vocab_size + (size_t)c->txl_clusters - 1;
        r->txl_mem_k = (float *)pf__rank_alloc(r, B * (size_t)c->num_layers * keys * kv_width * sizeof(float));
        r->txl_mem_v = (float *)pf__rank_alloc(r, B * (size_t)c->num_layers * keys * kv_width * sizeof(float));
        r->funnel_bias = (float *)pf__rank_alloc(r, T * (size_t)r->share.heads * keys * sizeof(float));
        r->funnel_sinusoid = (float *)pf__rank_alloc(r, rel_rows * hidden * sizeof(float));
        r->funnel_rel = (float *)pf__rank_alloc(r, rel_rows * q_width * sizeof(float));
        r->funnel_ints = (int32_t *)pf__rank_alloc(r, (2 + T + keys) * sizeof(int32_t));
        r->txl_embed = (float *)pf__rank_alloc(r, T * e * sizeof(float));
        r->txl_proj = (float *)pf__rank_alloc(r, g->logit_rows * e * sizeof(float));
        r->txl_logits = (float *)pf__rank_alloc(r, g->logit_rows * logits * sizeof(float));
        if (!r->counting && !r->funnel_pads) { /* host memory: once, not in the counting pass */
            r->funnel_pads = (int *)calloc(2, sizeof(int));
            r->funnel_types = (int32_t *)calloc(T + keys, sizeof(int32_t));
            r->funnel_host_ints = (int32_t *)malloc((2 + T + keys) * sizeof(int32_t));
            r->funnel_sinusoid_host = (float *)malloc(rel_rows * hidden * sizeof(float));
            r->txl_logits_host = (float *)malloc(g->logit_rows * logits * sizeof(float));
            if (!r->funnel_pads || !r->funnel_types || !r->funnel_host_ints || !r->funnel_sinusoid_host ||
                !r->txl_logits_host)
                pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory");
        }
    }
    if (c->xlnet && c->head == PF_HEAD_CAUSAL_LM) { /* XLNet's generation: the memory, the query stream */
        size_t rows = (size_t)c->num_layers * (size_t)g->cache_len;
        r->xlnet_mem_k = (float *)pf__rank_alloc(r, rows * kv_width * sizeof(float));
        r->xlnet_mem_v = (float *)pf__rank_alloc(r, rows * kv_width * sizeof(float));
        r->xlnet_g = (float *)pf__rank_alloc(r, (size_t)g->max_batch * hidden * sizeof(float));
    }
    if (c->reformer) { /* a row at a time (pf__rank_reformer) */
        size_t rows = pf__reformer_rows(c, g->cache_len), kv = q_width > hidden ? q_width : hidden;
        size_t listed = pf__reformer_listed(c), R = (size_t)c->reformer_hashes;
        r->reformer_x1 = (float *)pf__rank_alloc(r, rows * hidden * sizeof(float));
        r->reformer_x2 = (float *)pf__rank_alloc(r, rows * hidden * sizeof(float));
        r->reformer_in = (float *)pf__rank_alloc(r, rows * 2 * hidden * sizeof(float));
        r->reformer_q = (float *)pf__rank_alloc(r, rows * q_width * sizeof(float));
        r->reformer_k = (float *)pf__rank_alloc(r, rows * kv * sizeof(float));
        r->reformer_v = (float *)pf__rank_alloc(r, rows * kv * sizeof(float));
        r->reformer_out = (float *)pf__rank_alloc(r, rows * q_width * sizeof(float));
        r->reformer_mlp = (float *)pf__rank_alloc(r, rows * (size_t)r->share.mlp_width * sizeof(float));
        r->reformer_part = (float *)pf__rank_alloc(r, rows * hidden * sizeof(float));
        r->reformer_final = (float *)pf__rank_alloc(r, T * 2 * hidden * sizeof(float));
        r->reformer_keys = (int32_t *)pf__rank_alloc(r, (size_t)r->share.heads * rows * R * listed * sizeof(int32_t));
        if (!r->counting && !r->reformer_host && /* host memory: once, not in the counting pass */
            !(r->reformer_host = pf__reformer_host_new(c, g->cache_len, r->share.head_begin, r->share.heads)))
            pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory");
    }
    r->mlp = (float *)pf__rank_alloc(r, T * mlp_in * sizeof(float));
    if (c->gated_mlp) r->mlp_act = (float *)pf__rank_alloc(r, T * r->share.mlp_width * sizeof(float));
    if (c->num_experts > 0) { /* the router's logits, and one expert's tokens at a time */
        size_t width = (size_t)(c->moe_intermediate_size > c->shared_intermediate_size ? c->moe_intermediate_size
                                                                                      : c->shared_intermediate_size);
        r->router = (float *)pf__rank_alloc(r, T * (size_t)c->num_experts * sizeof(float));
        r->expert_in = (float *)pf__rank_alloc(r, T * hidden * sizeof(float));
        r->expert_out = (float *)pf__rank_alloc(r, T * hidden * sizeof(float));
        r->expert_mid = (float *)pf__rank_alloc(r, T * 2 * width * sizeof(float));
        r->expert_act = (float *)pf__rank_alloc(r, T * width * sizeof(float));
    }
    r->logits = (float *)pf__rank_alloc(r, g->logit_rows * r->share.vocab_rows * sizeof(float));
    if (m->sources[PF__SLOT_PATCH_WEIGHT].data)
        r->patch_in = (float *)pf__rank_alloc(r, (size_t)g->max_batch * (size_t)(c->max_positions - 1 - c->distillation) *
                                                     m->sources[PF__SLOT_PATCH_WEIGHT].cols * sizeof(float));
    if (m->sources[PF__SLOT_VISUAL_PROJECTION_WEIGHT].data)
        r->region_in = (float *)pf__rank_alloc(r, T * (size_t)pf__region_floats(c) * sizeof(float));
    if (c->two_streams) { /* LXMERT's streams, their cross keys and values (pf__rank_two_streams) */
        for (int k = 0; k < 2; k++) r->stream_x[k] = (float *)pf__rank_alloc(r, T * hidden * sizeof(float));
        r->stream_k = (float *)pf__rank_alloc(r, 2 * T * kv_width * sizeof(float));
        r->stream_v = (float *)pf__rank_alloc(r, 2 * T * kv_width * sizeof(float));
        if (!r->counting && !r->stream_pads && /* host memory: once, not in the counting pass */
            !(r->stream_pads = (int *)malloc(2 * (size_t)g->max_batch * sizeof(int))))
            pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory");
    }
    if (c->entity_vocab_size) { /* LUKE: the entities' rows, the entity-aware attention's projections and gathers */
        size_t width = (size_t)c->entity_emb_size > hidden ? (size_t)c->entity_emb_size : hidden;
        r->entity_rows = (float *)pf__rank_alloc(r, T * width * sizeof(float));
        if (c->entity_aware_attention) /* then a zero head */
            r->entity_pool = (float *)pf__rank_alloc(r, (T * 6 * q_width + hd) * sizeof(float));
        if (!r->counting && !r->entity_gather && /* host memory: once, not in the counting pass; its zeros stay */
            !(r->entity_gather = (int32_t *)calloc(pf__entity_gather_count(c, r->share.heads, T), sizeof(int32_t))))
            pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory");
    }
    if (r->world == 0 && m->sources[PF__SLOT_PROJECTION].data)
        r->projected = (float *)pf__rank_alloc(r, (size_t)g->max_batch * c->projection_dim * sizeof(float));
    if (r->world == 0 && (m->sources[PF__SLOT_CLASSIFIER_WEIGHT].data || m->sources[PF__SLOT_SPAN_WEIGHT].data ||
                          m->sources[PF__SLOT_DISCRIMINATOR_OUT_WEIGHT].data || m->sources[PF__SLOT_NEXT_SENTENCE_WEIGHT].data))
        r->head_out = (float *)pf__rank_alloc(r, (T * (size_t)(c->num_labels > 2 ? c->num_labels : 2) +
                                                  (size_t)g->max_batch * m->sources[PF__SLOT_ANSWER_DENSE_WEIGHT].rows) *
                                                     sizeof(float));
    if (r->backend->alloc_scratch) r->backend->alloc_scratch(r);
}

/* Before the caches and scratch are allocated (operating systems grant large allocations lazily,
   so an allocation that succeeds proves nothing): what they will take on all the ranks sharing
   this rank's memory (every rank, for host memory) against what that memory has available after
   the weights; more is refused unless skip_memory_check. Every rank publishes its need, then each
   checks its own memory: ranks that share one compute the same sum. */
static void pf__rank_check_room(pf__rank *r) {
    pf__group *g = r->group;
    r->counting = 1;
    r->counted = 0;
    pf__rank_alloc_caches(r);
    pf__rank_alloc_scratch(r);
    r->counting = 0;
    g->room_needed[r->index] = r->counted;
    if (pf__barrier(g) || g->options.skip_memory_check) return;
    size_t need = 0, available = 0;
    int sharing = 0;
    if (!pf__shared_room_short(r, &need, &available, &sharing)) return;
    const double gib = 1024.0 * 1024.0 * 1024.0;
    pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY,
                  "the KV caches and scratch of %d rank%s need %.2f GiB of %s memory, which has %.2f GiB available "
                  "after the weights: lower max_sequence_length (%d) or max_batch (%d), or set skip_memory_check",
                  sharing, sharing == 1 ? "" : "s", (double)need / gib, r->backend->host_memory ? "host" : r->backend->name,
                  (double)available / gib, g->cache_len, g->max_batch);
}

PF_PRIVATE void pf__rank_setup(pf__rank *r) {
    pf__rank_load_weights(r);
    if (!r->error) pf__rank_make_tables(r);
    if (r->error) return;
    pf__rank_check_room(r);
    if (r->error || pf__barrier(r->group)) return; /* every rank knows the verdict */
    pf__rank_alloc_caches(r); /* an allocation that fails leaves the rest NULL, and r->error set */
    pf__rank_alloc_scratch(r);
    pf__rank_warm_up(r);
}

/* Runs on the rank's thread: writes its slices into the group's full host arrays. */
PF_PRIVATE void pf__rank_gather(pf__rank *r) {
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
        if (src->split == PF__SPLIT_QKV_COLUMNS && p.row_map && r->share.head_begin % (m->config.num_heads / m->config.num_kv_heads)) {
            /* The same for a fused tensor: its first key and value head are the rank before's to write. */
            size_t hd = (size_t)m->config.head_dim, q = (size_t)r->share.heads * hd, kv = (size_t)r->share.kv_heads * hd;
            for (size_t d = 0; d < hd; d++) p.row_map[q + d] = p.row_map[q + kv + d] = PF__ROW_SKIPPED;
        }
        size_t numel = w.rows * w.cols;
        float *slice = numel ? (float *)malloc(numel * sizeof(float)) : NULL;
        if (numel && !slice) {
            free(p.row_map);
            pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory");
            return;
        }
        /* widened in place from the back (a value's 16-bit, Q8 or Q4 source lies before it); the
           other block formats keep factors behind their values (Q6_K) or read sub-block scales
           that the first values overwrite (Q4_K), so they widen from a copy */
        int in_place = w.dtype == PF__DTYPE_F16 || w.dtype == PF__DTYPE_BF16 || PF__QUANTIZED(w.dtype);
        size_t bytes = pf__weight_bytes(w.dtype, w.rows, w.cols);
        void *raw = numel && w.dtype != PF__DTYPE_F32 && !in_place ? malloc(bytes) : NULL;
        if (numel && w.dtype != PF__DTYPE_F32 && !in_place && !raw) {
            free(slice);
            free(p.row_map);
            pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory");
            return;
        }
        if (numel) {
            r->backend->download(r, raw ? raw : slice, w.data, bytes);
            if (w.dtype != PF__DTYPE_F32 && !w.input_order)
                for (size_t k = numel; k-- > 0;) slice[k] = pf__weight_value(raw ? raw : slice, k, w.dtype);
            if (w.input_order) /* a reordered matrix's blocks: each value back at its input, in place (raw holds the blocks) */
                for (size_t row = 0; row < w.rows; row++)
                    for (size_t j = 0; j < w.cols; j++)
                        if (w.input_order[j] != PF__NO_INPUT)
                            slice[row * w.inputs + w.input_order[j]] = pf__weight_value(raw, row * w.cols + j, w.dtype);
            pf__slice_scatter(g->gather[i], src->cols, slice, &p);
        }
        free(raw);
        free(slice);
        free(p.row_map);
    }
}

