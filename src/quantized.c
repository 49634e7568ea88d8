#include "internal.h"
/* =============================================================================================== */
/* quantized safetensors checkpoints: FP8 (block or tensor scales), GPTQ, AWQ, compressed-tensors  */
/* =============================================================================================== */

/* config.json's quantization_config names the format; its matrices are read where the file
   holds them and decoded value by value as the ranks slice them (src/slicing.c), into the
   ranks' dtype (fp32 by default; bf16, fp16, q8_0 or q4_0 when asked): no second copy of the
   model is made at load, and a rank's slice may start anywhere in a block or group, whose scale
   (and zero) follows the element. The decoding is each format's dequantization in fp32:
     FP8 (transformers' FineGrainedFP8, DeepSeek V3, Qwen3-FP8): e4m3 value x weight_scale_inv of
       its [block_rows x block_cols] block (weight_block_size), or of the tensor;
     GPTQ (AutoGPTQ / GPTQModel): scale[g][o] x (q - zero[g][o]), g = g_idx[i] (act order) or
       i / group_size, q packed along the input (qweight [in * bits / 32][out]), zeros along the
       output; the "gptq" (v1) format stores each zero less one;
     AWQ (GEMM): the same with q packed along the output (qweight [in][out * bits / 32]) in AWQ's
       order of the 8 nibbles of a word, groups of group_size inputs;
     compressed-tensors (llm-compressor's checkpoints): (q - zero) x scale of the input's group (a
       tensor's, an output's or group_size inputs'), q int4 / int8 packed along the input
       (pack-quantized) or int8 (naive-quantized), zeros (asymmetric) packed along the output,
       or e4m3 x scale (float-quantized), in fp32 as transformers decompresses them into an fp32
       model (the package computes in the scales' dtype: with BF16 scales, in a BF16 model);
     MXFP4 (gpt-oss's experts, transformers' Mxfp4 integration): e2m1 nibble x 2^(E8M0 - 127) of its
       32 inputs, `<name>_blocks` U8 [..., out, in / 32, 16] (input 2k in byte k's low nibble) beside
       `<name>_scales` U8 [..., out, in / 32]. These are not decoded where the ranks keep blocks
       (CPU ranks, dtype auto or q8_0): each row's blocks become ggml's MXFP4 blocks as they are
       copied, the same bits reordered, and the products run on them (PF__DTYPE_MXFP4).
   A 4-bit GPTQ, AWQ or compressed-tensors matrix whose every 32 inputs lie in one group, with
   scales fp16 holds, is kept so too: each 32 inputs of a row become a Q4_G block (its group's fp16
   scale, zero and nibbles: src/blocks.c), the same values, rather than Q4_1's d and m = -scale x
   zero, whose m fp16 would round (a bias of up to 0.7 % of a step over the block, in half of
   llama-awq's groups). Act order's permuted groups (GPTQ's g_idx, desc_act) are kept in these
   blocks too: each rank orders its inputs group by group, each group's run padded with zero
   weights to whole blocks of 32 (pf__input_order: a row-parallel layer's rank holds a share of
   every group), and its products gather the activations in that order. An 8-bit one (GPTQ's; compressed-tensors' pack- and naive-quantized int8)
   whose every 32 inputs lie in one group becomes Q8_G blocks: the group's scale in fp32, its zero
   and the 32 values, a byte each (37 bytes: 1.16 bytes a weight for the file's 1 and its scales).
   An FP8 matrix whose scale grid falls on 32 inputs (one scale, or blocks a multiple of 32 wide;
   compressed-tensors' float channels and groups too) is kept as E4M3 blocks: 32 codes as the file
   holds them after their scale in fp32, 36 bytes (1.125 bytes a weight; the file's 1 and its
   scales), multiplied through a table of the 256 codes' values. */

/* ---- decoding ---- */

/* The e4m3 table of src/blocks.c (what the E4M3 blocks' kernels read too). */
PF_PRIVATE float pf__e4m3_to_f32(uint8_t code) { return pf__e4m3_values[code]; }

static uint32_t pf__le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Field `index` (bits wide, from the low bits up) of the little-endian 32-bit words at words. */
static unsigned pf__packed_field(const uint8_t *words, size_t index, int bits) {
    size_t per_word = 32 / (size_t)bits;
    return (unsigned)(pf__le32(words + 4 * (index / per_word)) >> (index % per_word * (size_t)bits)) & ((1u << bits) - 1);
}

static float pf__packed_scale(const pf__packed *p, size_t index) {
    if (p->scale_e8m0) return p->scales[index] == 255 ? NAN : ldexpf(1.0f, (int)p->scales[index] - 127);
    return pf__weight_value(p->scales, index, p->scale_dtype);
}

/* AWQ packs the 8 outputs of a word in the order 0, 2, 4, 6, 1, 3, 5, 7: output j of the word is
   its field pf__awq_field[j]. */
static const unsigned char pf__awq_field[8] = {0, 4, 1, 5, 2, 6, 3, 7};

/* A GPTQ or AWQ zero (of output row, group g) and value (of row, input col). */
static int pf__int_zero(const pf__packed *p, size_t row, size_t g) {
    size_t per_word = 32 / (size_t)p->bits, words = p->rows / per_word;
    size_t field = p->format == PF__PACKED_AWQ ? row / per_word * per_word + pf__awq_field[row % per_word] : row;
    unsigned zero = pf__packed_field(p->zeros + 4 * g * words, field, p->bits);
    return (int)((zero + (unsigned)p->zero_offset) & ((1u << p->bits) - 1)); /* v1: the +1 wraps as GPTQ's kernels do */
}

static int pf__int_value(const pf__packed *p, size_t row, size_t col) {
    size_t per_word = 32 / (size_t)p->bits;
    if (p->format == PF__PACKED_GPTQ) /* word [col / per_word][row], field col % per_word */
        return (int)pf__packed_field(p->values + 4 * (col / per_word * p->rows + row), col % per_word, p->bits);
    size_t words = p->rows / per_word; /* AWQ: word [col][row / per_word], fields in AWQ's order */
    return (int)pf__packed_field(p->values + 4 * col * words, row / per_word * per_word + pf__awq_field[row % per_word],
                                 p->bits);
}

static size_t pf__int_group(const pf__packed *p, size_t col) {
    if (p->group_of) return pf__le32(p->group_of + 4 * col);
    return p->group_size ? col / p->group_size : 0;
}

/* compressed-tensors' q of (row, col), signed (pack-quantized stores it plus 2^(bits - 1)); bits is
   4 or 8, so no field crosses a word. */
static int pf__ct_q(const pf__packed *p, size_t row, size_t col) {
    if (p->values_i8) return (int8_t)p->values[row * p->cols + col];
    size_t words = (p->cols * (size_t)p->bits + 31) / 32;
    return (int)pf__packed_field(p->values + 4 * row * words, col, p->bits) - (1 << (p->bits - 1));
}

/* The index of compressed-tensors' scale (and I8 zero) of (row, col). */
static size_t pf__ct_scale_at(const pf__packed *p, size_t row, size_t col) {
    return (p->scale_rows > 1 ? row : 0) * p->scale_cols + col / p->group_size;
}

/* compressed-tensors' zero of (row, col), signed: 0 where symmetric. */
static int pf__ct_zero(const pf__packed *p, size_t row, size_t col) {
    if (p->zero_layout == PF__CT_ZERO_I8) return (int8_t)p->zeros[pf__ct_scale_at(p, row, col)];
    if (p->zero_layout != PF__CT_ZERO_PACKED) return 0;
    size_t bit = row * (size_t)p->bits, g = col / p->group_size; /* group g's outputs packed in words down the rows */
    return (int)((pf__le32(p->zeros + 4 * (bit / 32 * p->scale_cols + g)) >> (bit % 32)) & ((1u << p->bits) - 1)) -
           (1 << (p->bits - 1));
}

/* compressed-tensors' value (row, col): the package's (q - zero) * scale. */
static float pf__ct_value(const pf__packed *p, size_t row, size_t col) {
    return (float)(pf__ct_q(p, row, col) - pf__ct_zero(p, row, col)) * pf__packed_scale(p, pf__ct_scale_at(p, row, col));
}

/* MXFP4 input c of row `row`: its nibble (0..15, an index of pf__mxfp4_levels). */
static unsigned pf__mxfp4_nibble(const pf__packed *p, size_t row, size_t c) {
    uint8_t byte = p->values[(row * p->cols + c) / 2];
    return c % 2 ? byte >> 4 : byte & 15u;
}

/* The 32 inputs from col of row `row` of a GPTQ, AWQ or compressed-tensors integer matrix, which lie
   in one group (pf__int_blocks_dtype checked it): its scale (returned), zero and values, the zero
   and values unsigned as Q4_G and Q8_G hold them (compressed-tensors' signed ones plus 2^(bits - 1):
   the same differences). */
static float pf__int_block(const pf__packed *p, size_t row, size_t col, int *zero, int *q) {
    if (p->format == PF__PACKED_CT_INT) {
        int offset = 1 << (p->bits - 1);
        *zero = pf__ct_zero(p, row, col) + offset;
        for (int i = 0; i < 32; i++) q[i] = pf__ct_q(p, row, col + (size_t)i) + offset;
        return pf__packed_scale(p, pf__ct_scale_at(p, row, col));
    }
    size_t g = pf__int_group(p, col);
    *zero = pf__int_zero(p, row, g);
    for (int i = 0; i < 32; i++) q[i] = pf__int_value(p, row, col + (size_t)i);
    return pf__packed_scale(p, g * p->rows + row);
}

/* A Q4_G block (4 bits: the scale in fp16, which holds it exactly: checked) or Q8_G block (8 bits:
   the scale in fp32) of 32 values q under one scale and zero. */
static void pf__int_block_write(int bits, float scale, int zero, const int *q, uint8_t *out) {
    if (bits == 4) { /* the scale, the zero, then input i in the low nibble, i + 16 in the high one */
        uint16_t half = pf__f32_to_f16(scale);
        out[0] = (uint8_t)(half & 255), out[1] = (uint8_t)(half >> 8), out[2] = (uint8_t)zero;
        for (int i = 0; i < 16; i++) out[3 + i] = (uint8_t)(q[i] | q[i + 16] << 4);
    } else { /* the scale, the zero, then the 32 values */
        memcpy(out, &scale, sizeof scale);
        out[4] = (uint8_t)zero;
        for (int i = 0; i < 32; i++) out[5 + i] = (uint8_t)q[i];
    }
}

/* An integer matrix's blocks of 32 inputs as Q4_G or Q8_G blocks. */
static void pf__int_row_blocks(const pf__packed *p, size_t row, size_t first, size_t count, uint8_t *out) {
    size_t bytes = pf__block_bytes(p->bits == 4 ? PF__DTYPE_Q4_G : PF__DTYPE_Q8_G);
    for (size_t b = first; b < first + count; b++, out += bytes) {
        int zero, q[32];
        float scale = pf__int_block(p, row, b * 32, &zero, q);
        pf__int_block_write(p->bits, scale, zero, q, out);
    }
}

PF_PRIVATE size_t pf__input_order(const pf__packed *p, size_t col_begin, size_t cols, uint32_t *order) {
    size_t groups = (p->cols + p->group_size - 1) / p->group_size, width = 0;
    size_t *at = (size_t *)calloc(groups + 1, sizeof *at); /* each group's count, then where its run starts */
    if (!at) return 0;
    for (size_t c = col_begin; c < col_begin + cols; c++) at[pf__int_group(p, c)]++;
    for (size_t g = 0; g < groups; g++) {
        size_t count = at[g];
        at[g] = width;
        width += (count + 31) / 32 * 32;
    }
    if (order) {
        for (size_t j = 0; j < width; j++) order[j] = PF__NO_INPUT;
        for (size_t c = col_begin; c < col_begin + cols; c++) order[at[pf__int_group(p, c)]++] = (uint32_t)(c - col_begin);
    }
    free(at);
    return width;
}

PF_PRIVATE void pf__packed_row_blocks_ordered(const pf__packed *p, size_t row, const uint32_t *order, size_t col_begin,
                                              size_t count, uint8_t *out) {
    size_t bytes = pf__block_bytes(p->bits == 4 ? PF__DTYPE_Q4_G : PF__DTYPE_Q8_G);
    for (size_t b = 0; b < count; b++, out += bytes) {
        const uint32_t *inputs = order + 32 * b; /* one group's inputs, then pads: a block's first is an input */
        size_t g = pf__int_group(p, col_begin + inputs[0]);
        int zero = pf__int_zero(p, row, g), q[32];
        for (int i = 0; i < 32; i++) /* a pad's q is the zero: its weight is 0 */
            q[i] = inputs[i] == PF__NO_INPUT ? zero : pf__int_value(p, row, col_begin + inputs[i]);
        pf__int_block_write(p->bits, pf__packed_scale(p, g * p->rows + row), zero, q, out);
    }
}

/* FP8's blocks of 32 inputs as E4M3 blocks: each block lies in one block of the scale grid
   (pf__e4m3_holds), whose scale it carries in fp32 (exact from F32, BF16, F16 and E8M0). */
static void pf__e4m3_row_blocks(const pf__packed *p, size_t row, size_t first, size_t count, uint8_t *out) {
    for (size_t b = first; b < first + count; b++, out += 36) {
        size_t col = b * 32;
        float scale = pf__packed_scale(p, p->scale_cols ? row / p->block_rows * p->scale_cols + col / p->block_cols : 0);
        memcpy(out, &scale, sizeof scale);
        memcpy(out + 4, p->values + row * p->cols + col, 32);
    }
}

PF_PRIVATE void pf__packed_row_blocks(const pf__packed *p, size_t row, size_t first, size_t count, uint8_t *out) {
    if (p->format == PF__PACKED_FP8) {
        pf__e4m3_row_blocks(p, row, first, count, out);
        return;
    }
    if (p->format != PF__PACKED_MXFP4) {
        pf__int_row_blocks(p, row, first, count, out);
        return;
    }
    for (size_t b = first; b < first + count; b++, out += 17) {
        const uint8_t *in = p->values + (row * p->cols + b * 32) / 2; /* the block's 16 bytes: inputs 2k, 2k + 1 in byte k */
        out[0] = p->scales[row * (p->cols / 32) + b];
        for (int i = 0; i < 16; i++) { /* input i (low nibble) and i + 16 (high): byte i / 2 and 8 + i / 2 */
            int shift = i % 2 * 4;
            out[1 + i] = (uint8_t)((in[i / 2] >> shift & 15) | (in[8 + i / 2] >> shift & 15) << 4);
        }
    }
}

PF_PRIVATE void pf__packed_row_run(const pf__packed *p, size_t row, size_t col, size_t n, float *out) {
    if (p->format == PF__PACKED_MXFP4) { /* the levels are e2m1 doubled, the scale halved: exact */
        for (size_t c = col, end = col + n; c < end; c++)
            *out++ = (float)pf__mxfp4_levels[pf__mxfp4_nibble(p, row, c)] * pf__e8m0_half(p->scales[row * (p->cols / 32) + c / 32]);
        return;
    }
    if (p->format == PF__PACKED_FP8) { /* block by block: one scale for each stretch of the run */
        const uint8_t *codes = p->values + row * p->cols;
        int one_scale = p->scale_cols == 0;
        for (size_t c = col, end = col + n; c < end;) {
            size_t block = one_scale ? 0 : c / p->block_cols, stop = one_scale ? end : (block + 1) * p->block_cols;
            float scale = pf__packed_scale(p, one_scale ? 0 : row / p->block_rows * p->scale_cols + block);
            for (stop = stop < end ? stop : end; c < stop; c++) *out++ = pf__e4m3_to_f32(codes[c]) * scale;
        }
        return;
    }
    if (p->format == PF__PACKED_CT_INT) {
        for (size_t c = col, end = col + n; c < end; c++) *out++ = pf__ct_value(p, row, c);
        return;
    }
    for (size_t c = col, end = col + n; c < end;) { /* group by group (input by input with g_idx) */
        size_t g = pf__int_group(p, c), stop = p->group_of ? c + 1 : (g + 1) * p->group_size;
        float scale = pf__packed_scale(p, g * p->rows + row);
        int zero = pf__int_zero(p, row, g);
        for (stop = stop < end ? stop : end; c < stop; c++) *out++ = scale * (float)(pf__int_value(p, row, c) - zero);
    }
}

/* ---- quantization_config ---- */

/* How a quantization_config key is treated: read below (HONOURED), or one that does not change
   the weights' values (how they were calibrated, which kernel a GPU library picks: IGNORABLE). */
typedef enum { PF__QKEY_HONOURED, PF__QKEY_IGNORABLE } pf__qkey_kind;
typedef struct pf__qkey {
    const char *key;
    pf__qkey_kind kind;
} pf__qkey;

static const pf__qkey pf__fp8_keys[] = {
    {"quant_method", PF__QKEY_HONOURED}, {"weight_block_size", PF__QKEY_HONOURED}, {"activation_scheme", PF__QKEY_HONOURED},
    {"fmt", PF__QKEY_HONOURED}, {"scale_fmt", PF__QKEY_HONOURED}, {"modules_to_not_convert", PF__QKEY_HONOURED},
    {"ignored_layers", PF__QKEY_HONOURED}, {"modules_to_convert", PF__QKEY_HONOURED}, {"expert_dtype", PF__QKEY_HONOURED},
    {"dequantize", PF__QKEY_IGNORABLE}, /* transformers' loading switch: we always compute on the decoded values */
};

/* GPTQConfig's keys (AwqConfig derives from it and writes them too). */
static const pf__qkey pf__gptq_keys[] = {
    {"quant_method", PF__QKEY_HONOURED}, {"bits", PF__QKEY_HONOURED}, {"group_size", PF__QKEY_HONOURED},
    {"desc_act", PF__QKEY_HONOURED}, {"checkpoint_format", PF__QKEY_HONOURED}, {"format", PF__QKEY_HONOURED},
    {"dynamic", PF__QKEY_HONOURED}, {"pack_dtype", PF__QKEY_HONOURED}, {"is_marlin_format", PF__QKEY_HONOURED},
    {"zero_point", PF__QKEY_HONOURED}, {"version", PF__QKEY_HONOURED}, {"rotation", PF__QKEY_HONOURED},
    {"adapter", PF__QKEY_HONOURED}, {"modules_to_not_convert", PF__QKEY_HONOURED},
    /* the zeros are read from qzeros whatever sym says; which modules are quantized, from the file */
    {"sym", PF__QKEY_IGNORABLE}, {"lm_head", PF__QKEY_IGNORABLE}, {"modules_in_block_to_quantize", PF__QKEY_IGNORABLE},
    {"block_name_to_quantize", PF__QKEY_IGNORABLE}, {"module_name_preceding_first_block", PF__QKEY_IGNORABLE},
    /* calibration */
    {"tokenizer", PF__QKEY_IGNORABLE}, {"dataset", PF__QKEY_IGNORABLE}, {"damp_percent", PF__QKEY_IGNORABLE},
    {"damp_auto_increment", PF__QKEY_IGNORABLE}, {"true_sequential", PF__QKEY_IGNORABLE},
    {"act_group_aware", PF__QKEY_IGNORABLE}, {"static_groups", PF__QKEY_IGNORABLE}, {"mse", PF__QKEY_IGNORABLE},
    {"model_seqlen", PF__QKEY_IGNORABLE}, {"batch_size", PF__QKEY_IGNORABLE}, {"pad_token_id", PF__QKEY_IGNORABLE},
    {"max_input_length", PF__QKEY_IGNORABLE}, {"cache_block_outputs", PF__QKEY_IGNORABLE}, {"meta", PF__QKEY_IGNORABLE},
    {"quantizer", PF__QKEY_IGNORABLE}, {"model_name_or_path", PF__QKEY_IGNORABLE},
    {"model_file_base_name", PF__QKEY_IGNORABLE},
    /* GPU kernels */
    {"backend", PF__QKEY_IGNORABLE}, {"use_exllama", PF__QKEY_IGNORABLE}, {"exllama_config", PF__QKEY_IGNORABLE},
    {"use_cuda_fp16", PF__QKEY_IGNORABLE}, {"do_fuse", PF__QKEY_IGNORABLE}, {"fuse_max_seq_len", PF__QKEY_IGNORABLE},
    {"modules_to_fuse", PF__QKEY_IGNORABLE},
};

/* Mxfp4Config's keys: which modules are quantized is read from the tensors (their _blocks). */
static const pf__qkey pf__mxfp4_keys[] = {
    {"quant_method", PF__QKEY_HONOURED}, {"modules_to_not_convert", PF__QKEY_IGNORABLE},
    {"dequantize", PF__QKEY_IGNORABLE}, /* transformers' loading switch: the values are the same */
};

/* compressed-tensors' QuantizationConfig, its one scheme (config_groups' group) and the scheme's
   weights (QuantizationArgs). */
static const pf__qkey pf__ct_keys[] = {
    {"quant_method", PF__QKEY_HONOURED}, {"format", PF__QKEY_HONOURED}, {"config_groups", PF__QKEY_HONOURED},
    {"ignore", PF__QKEY_HONOURED}, {"kv_cache_scheme", PF__QKEY_HONOURED}, {"quantization_status", PF__QKEY_HONOURED},
    {"sparsity_config", PF__QKEY_HONOURED}, {"transform_config", PF__QKEY_HONOURED},
    {"moe_sparsity_config", PF__QKEY_HONOURED},
    /* bookkeeping: the ratio achieved, the package's version, the tool; transformers' loading switch */
    {"global_compression_ratio", PF__QKEY_IGNORABLE}, {"version", PF__QKEY_IGNORABLE}, {"provider", PF__QKEY_IGNORABLE},
    {"run_compressed", PF__QKEY_IGNORABLE},
};
static const pf__qkey pf__ct_scheme_keys[] = {
    {"targets", PF__QKEY_HONOURED}, {"weights", PF__QKEY_HONOURED}, {"input_activations", PF__QKEY_HONOURED},
    {"output_activations", PF__QKEY_HONOURED}, {"format", PF__QKEY_HONOURED},
};
static const pf__qkey pf__ct_weight_keys[] = {
    {"num_bits", PF__QKEY_HONOURED}, {"type", PF__QKEY_HONOURED}, {"symmetric", PF__QKEY_HONOURED},
    {"group_size", PF__QKEY_HONOURED}, {"strategy", PF__QKEY_HONOURED}, {"block_structure", PF__QKEY_HONOURED},
    {"dynamic", PF__QKEY_HONOURED}, {"actorder", PF__QKEY_HONOURED},
    /* the scales' and zeros' dtypes are the tensors' own (scale_dtype shapes only the MX and NVFP4
       formats); how the scales were found */
    {"scale_dtype", PF__QKEY_IGNORABLE}, {"zp_dtype", PF__QKEY_IGNORABLE}, {"observer", PF__QKEY_IGNORABLE},
    {"observer_kwargs", PF__QKEY_IGNORABLE},
};

static const char *pf__json_string_of(const pf__json *o, const char *key) {
    const pf__json *v = pf__json_get(o, key);
    return v && v->type == PF__JSON_STRING ? v->string : NULL;
}

/* A key given a value other than its default's (null, false, an empty list or object) */
static int pf__json_set(const pf__json *o, const char *key) {
    const pf__json *v = pf__json_get(o, key);
    if (!v || v->type == PF__JSON_NULL) return 0;
    if (v->type == PF__JSON_BOOL) return v->boolean;
    if (v->type == PF__JSON_ARRAY || v->type == PF__JSON_OBJECT) return v->count > 0;
    return 1;
}

/* Every key of the config is in keys (or refused by name). */
static pf_result pf__check_qkeys(const pf__json *qc, const char *method, const pf__qkey *keys, size_t count,
                                 const char *path, char *message, size_t size) {
    for (const pf__json *e = qc->first; e; e = e->next) {
        size_t i = 0;
        while (i < count && strcmp(keys[i].key, e->key)) i++;
        if (i == count)
            return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: quantization_config's \"%s\" (quant_method \"%s\") is "
                              "not supported", path, e->key, method);
    }
    return PF_OK;
}

/* What the config says of the format, before the tensors are looked at. */
typedef struct pf__qconfig {
    pf__packed_format format;
    const char *method;
    size_t block_rows, block_cols; /* FP8; 0: scales per tensor */
    int scale_e8m0;
    int bits, zero_offset, desc_act;
    long group_size;               /* -1: one group */
    const pf__json *not_converted; /* modules_to_not_convert (or ignored_layers; compressed-tensors' ignore), or NULL */
    /* compressed-tensors */
    int ct_packed, ct_float, ct_symmetric; /* pack-quantized; float (e4m3) weights; no zero points */
    enum { PF__CT_TENSOR, PF__CT_CHANNEL, PF__CT_GROUP, PF__CT_BLOCK } ct_strategy;
} pf__qconfig;

static pf_result pf__fp8_config(const pf__json *qc, const char *path, pf__qconfig *q, char *message, size_t size) {
    const char *scheme = pf__json_string_of(qc, "activation_scheme"), *fmt = pf__json_string_of(qc, "fmt");
    const char *scale_fmt = pf__json_string_of(qc, "scale_fmt"), *expert = pf__json_string_of(qc, "expert_dtype");
    if (pf__json_get(qc, "activation_scheme") && (!scheme || strcmp(scheme, "dynamic")))
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: quantization_config's \"activation_scheme\" is not "
                          "\"dynamic\" (static activation scales are not implemented)", path);
    if (pf__json_get(qc, "fmt") && (!fmt || strcmp(fmt, "e4m3")))
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: quantization_config's \"fmt\" is not \"e4m3\" (the "
                          "one FP8 format implemented)", path);
    if (pf__json_get(qc, "scale_fmt") && (!scale_fmt || (strcmp(scale_fmt, "float") && strcmp(scale_fmt, "ue8m0"))))
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: quantization_config's \"scale_fmt\" is not \"float\" "
                          "or \"ue8m0\"", path);
    q->scale_e8m0 = scale_fmt && !strcmp(scale_fmt, "ue8m0");
    if (pf__json_get(qc, "expert_dtype") && (!expert || strcmp(expert, "fp8")))
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: quantization_config's \"expert_dtype\" is not "
                          "\"fp8\" (FP4 experts are not implemented)", path);
    if (pf__json_set(qc, "modules_to_convert"))
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: quantization_config's \"modules_to_convert\" (FP8 "
                          "embeddings) is not implemented", path);
    const pf__json *block = pf__json_get(qc, "weight_block_size");
    if (block && block->type != PF__JSON_NULL) {
        double r = 0, c = 0;
        if (block->type != PF__JSON_ARRAY || block->count != 2 || pf__json_number(block->first, &r) != 1 ||
            pf__json_number(block->first->next, &c) != 1 || r < 1 || c < 1 || r > 1e9 || c > 1e9 || r != floor(r) ||
            c != floor(c))
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: quantization_config's \"weight_block_size\" is not two "
                              "positive integers", path);
        q->block_rows = (size_t)r;
        q->block_cols = (size_t)c;
    }
    q->not_converted = pf__json_get(qc, "modules_to_not_convert");
    if (!q->not_converted || q->not_converted->type == PF__JSON_NULL) q->not_converted = pf__json_get(qc, "ignored_layers");
    return PF_OK;
}

static pf_result pf__int_config(const pf__json *qc, const char *path, pf__qconfig *q, char *message, size_t size) {
    int awq = q->format == PF__PACKED_AWQ;
    double bits = 0, group = 0;
    if (pf__json_number(pf__json_get(qc, "bits"), &bits) != 1 || (bits != 4 && (bits != 8 || awq)))
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: quantization_config's \"bits\" is not %s", path,
                          awq ? "4 (AWQ's GEMM format packs 4 bits)" : "4 or 8 (the widths implemented)");
    q->bits = (int)bits;
    if (pf__json_number(pf__json_get(qc, "group_size"), &group) != 1 || (group < 1 && group != -1) || group > 1e9 ||
        group != floor(group) || (awq && group == -1))
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: quantization_config's \"group_size\" is not a positive "
                          "integer%s", path, awq ? "" : " or -1");
    q->group_size = (long)group;
    const char *format = pf__json_string_of(qc, "checkpoint_format");
    const char *format_key = format ? "checkpoint_format" : "format";
    if (!format) format = pf__json_string_of(qc, "format");
    if (awq) {
        const char *version = pf__json_string_of(qc, "version");
        if (version) format = version, format_key = "version";
        if (format && strcmp(format, "gemm") && strcmp(format, "GEMM"))
            return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: quantization_config's \"%s\" is \"%s\": AWQ's "
                              "\"gemm\" layout is implemented, not the GEMV, exllama, marlin or ipex ones", path,
                              format_key, format);
        if (pf__json_get(qc, "zero_point") && !pf__json_set(qc, "zero_point"))
            return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: quantization_config's \"zero_point\" is false "
                              "(AWQ without zeros is not implemented)", path);
        if (pf__json_set(qc, "desc_act"))
            return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: quantization_config's \"desc_act\" is true for AWQ",
                              path);
    } else {
        if (format && strcmp(format, "gptq") && strcmp(format, "gptq_v2"))
            return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: quantization_config's \"%s\" is \"%s\": the gptq "
                              "(v1) and gptq_v2 layouts are implemented, not marlin, bitblas or the others", path,
                              format_key, format);
        q->zero_offset = !format || !strcmp(format, "gptq");
        q->desc_act = pf__json_set(qc, "desc_act");
        if (pf__json_get(qc, "version"))
            return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: quantization_config's \"version\" (an AWQ key) in "
                              "a GPTQ config", path);
        if (pf__json_get(qc, "zero_point"))
            return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: quantization_config's \"zero_point\" (an AWQ "
                              "key) in a GPTQ config", path);
    }
    static const char *const refused[] = {"dynamic", "is_marlin_format", "rotation", "adapter"};
    for (size_t i = 0; i < PF__COUNT(refused); i++)
        if (pf__json_set(qc, refused[i]))
            return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: quantization_config's \"%s\" is set: not "
                              "implemented", path, refused[i]);
    const char *pack = pf__json_string_of(qc, "pack_dtype");
    if (pf__json_get(qc, "pack_dtype") && (!pack || strcmp(pack, "int32")))
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: quantization_config's \"pack_dtype\" is not \"int32\"",
                          path);
    q->not_converted = pf__json_get(qc, "modules_to_not_convert");
    return PF_OK;
}

/* compressed-tensors: one scheme for every quantized module (targets ["Linear"]), its weights'
   arguments; anything that quantizes activations, the KV cache or sparsifies is refused. Which
   modules are quantized is read from the tensors (weight_scale beside them); ignore's names are
   checked against them (its "re:" patterns are not matched: the tensors decide). */
static pf_result pf__ct_config(const pf__json *qc, const char *path, pf__qconfig *q, char *message, size_t size) {
#define PF__CT_REFUSE(...) return pf__format(message, size, PF_ERROR_UNSUPPORTED, __VA_ARGS__)
    const char *status = pf__json_string_of(qc, "quantization_status");
    if (pf__json_get(qc, "quantization_status") && (!status || strcmp(status, "compressed")))
        PF__CT_REFUSE("%s: quantization_config's \"quantization_status\" is not \"compressed\" (the weights as the "
                      "package compresses them are what is implemented)", path);
    static const char *const refused[] = {"kv_cache_scheme", "sparsity_config", "transform_config", "moe_sparsity_config"};
    for (size_t i = 0; i < PF__COUNT(refused); i++)
        if (pf__json_set(qc, refused[i]))
            PF__CT_REFUSE("%s: quantization_config's \"%s\" is set: not implemented", path, refused[i]);
    const pf__json *groups = pf__json_get(qc, "config_groups");
    if (!groups || groups->type != PF__JSON_OBJECT || groups->count != 1 || groups->first->type != PF__JSON_OBJECT)
        PF__CT_REFUSE("%s: quantization_config's \"config_groups\" does not hold one scheme (one scheme for every "
                      "quantized module is implemented)", path);
    const pf__json *scheme = groups->first, *targets = pf__json_get(scheme, "targets"), *w = pf__json_get(scheme, "weights");
    pf_result r = pf__check_qkeys(scheme, "compressed-tensors", pf__ct_scheme_keys, PF__COUNT(pf__ct_scheme_keys), path,
                                  message, size);
    if (r) return r;
    if (!targets || targets->type != PF__JSON_ARRAY || targets->count != 1 || targets->first->type != PF__JSON_STRING ||
        strcmp(targets->first->string, "Linear"))
        PF__CT_REFUSE("%s: quantization_config's scheme \"targets\" is not [\"Linear\"] (quantized embeddings or "
                      "attention are not implemented)", path);
    if (pf__json_set(scheme, "input_activations") || pf__json_set(scheme, "output_activations"))
        PF__CT_REFUSE("%s: quantization_config's scheme has \"%s\": quantized activations are not implemented", path,
                      pf__json_set(scheme, "input_activations") ? "input_activations" : "output_activations");
    const char *format = pf__json_string_of(qc, "format"), *scheme_format = pf__json_string_of(scheme, "format");
    if (!format || !strcmp(format, "mixed-precision")) format = scheme_format;
    else if (scheme_format && strcmp(scheme_format, format))
        PF__CT_REFUSE("%s: quantization_config's \"format\" \"%s\" and its scheme's \"%s\" differ", path, format,
                      scheme_format);
    if (!format || (strcmp(format, "pack-quantized") && strcmp(format, "naive-quantized") &&
                    strcmp(format, "int-quantized") && strcmp(format, "float-quantized")))
        PF__CT_REFUSE("%s: quantization_config's \"format\" is \"%s\": pack-quantized, naive-quantized, int-quantized "
                      "and float-quantized are implemented", path, format ? format : "(none)");
    q->ct_packed = !strcmp(format, "pack-quantized");
    if (!w || w->type != PF__JSON_OBJECT)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: quantization_config's scheme has no \"weights\"", path);
    if ((r = pf__check_qkeys(w, "compressed-tensors", pf__ct_weight_keys, PF__COUNT(pf__ct_weight_keys), path, message,
                             size)))
        return r;
    const char *type = pf__json_string_of(w, "type"), *strategy = pf__json_string_of(w, "strategy");
    const char *actorder = pf__json_string_of(w, "actorder");
    q->ct_float = type && !strcmp(type, "float");
    if (type && !q->ct_float && strcmp(type, "int"))
        PF__CT_REFUSE("%s: quantization_config's weights \"type\" is \"%s\", not int or float", path, type);
    double bits = 8, group = 0;
    if (pf__json_get(w, "num_bits") && pf__json_number(pf__json_get(w, "num_bits"), &bits) != 1) bits = 0;
    int bits_ok = q->ct_float ? bits == 8 && !q->ct_packed : q->ct_packed ? bits == 4 || bits == 8 : bits == 8;
    if (!bits_ok || (q->ct_float && !strcmp(format, "int-quantized")))
        PF__CT_REFUSE("%s: quantization_config's weights \"num_bits\" %g of type %s in format %s: int4 and int8 "
                      "pack-quantized, int8 naive-quantized and e4m3 float-quantized are implemented", path, bits,
                      q->ct_float ? "float" : "int", format);
    q->bits = (int)bits;
    const pf__json *symmetric = pf__json_get(w, "symmetric");
    q->ct_symmetric = !symmetric || symmetric->type == PF__JSON_NULL || pf__json_set(w, "symmetric");
    if (q->ct_float && !q->ct_symmetric)
        PF__CT_REFUSE("%s: quantization_config's weights are float and not \"symmetric\": not implemented", path);
    if (pf__json_set(w, "dynamic"))
        PF__CT_REFUSE("%s: quantization_config's weights are \"dynamic\": not implemented", path);
    if (pf__json_set(w, "actorder") && (!actorder || (strcmp(actorder, "weight") && strcmp(actorder, "static"))))
        PF__CT_REFUSE("%s: quantization_config's weights \"actorder\" is not \"weight\" (group act order, a "
                      "weight_g_idx, is not implemented)", path);
    const pf__json *group_json = pf__json_get(w, "group_size");
    if (group_json && group_json->type != PF__JSON_NULL &&
        (pf__json_number(group_json, &group) != 1 || group != floor(group) || group < -1 || group > 1e9))
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: quantization_config's weights \"group_size\" is not an "
                          "integer", path);
    if (!strategy) strategy = group > 0 ? "group" : group == -1 ? "channel" : "tensor"; /* as the package infers it */
    if (group > 0 && strcmp(strategy, "group"))
        PF__CT_REFUSE("%s: quantization_config's weights have a \"group_size\" and strategy \"%s\"", path, strategy);
    if (!strcmp(strategy, "tensor")) q->ct_strategy = PF__CT_TENSOR;
    else if (!strcmp(strategy, "channel")) q->ct_strategy = PF__CT_CHANNEL;
    else if (!strcmp(strategy, "group") && group >= 1) q->ct_strategy = PF__CT_GROUP, q->group_size = (long)group;
    else if (!strcmp(strategy, "block") && q->ct_float) q->ct_strategy = PF__CT_BLOCK;
    else
        PF__CT_REFUSE("%s: quantization_config's weights \"strategy\" \"%s\"%s: tensor, channel, group (with a "
                      "group_size) and, for float weights, block are implemented", path, strategy,
                      !strcmp(strategy, "group") ? " without a positive group_size" : "");
    const pf__json *block = pf__json_get(w, "block_structure");
    double br = 0, bc = 0;
    if (q->ct_strategy == PF__CT_BLOCK &&
        (!block || block->type != PF__JSON_ARRAY || block->count != 2 || pf__json_number(block->first, &br) != 1 ||
         pf__json_number(block->first->next, &bc) != 1 || br < 1 || bc < 1 || br > 1e9 || bc > 1e9 || br != floor(br) ||
         bc != floor(bc)))
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: quantization_config's weights \"block_structure\" is not "
                          "two positive integers", path);
    if (q->ct_strategy != PF__CT_BLOCK && pf__json_set(w, "block_structure"))
        PF__CT_REFUSE("%s: quantization_config's weights have a \"block_structure\" and strategy \"%s\"", path, strategy);
    q->block_rows = (size_t)br;
    q->block_cols = (size_t)bc;
    q->not_converted = pf__json_get(qc, "ignore");
    return PF_OK;
#undef PF__CT_REFUSE
}

/* ---- the tensors ---- */

static int pf__has_suffix_of(const char *name, const char *suffix, size_t *stem) {
    size_t n = strlen(name), k = strlen(suffix);
    if (n <= k || strcmp(name + n - k, suffix)) return 0;
    *stem = n - k;
    return 1;
}

/* Whether module (a tensor name less its last part) is one modules_to_not_convert names: the
   name itself, or a whole dotted part of it ("lm_head", "model.layers.0.mlp"). */
static int pf__module_listed(const pf__json *list, const char *module, size_t length) {
    for (const pf__json *e = list && list->type == PF__JSON_ARRAY ? list->first : NULL; e; e = e->next) {
        if (e->type != PF__JSON_STRING || !e->string[0]) continue;
        size_t k = strlen(e->string);
        for (size_t at = 0; at + k <= length; at++)
            if ((at == 0 || module[at - 1] == '.') && (at + k == length || module[at + k] == '.') &&
                !strncmp(module + at, e->string, k))
                return 1;
    }
    return 0;
}

static const pf__st_tensor *pf__part(const pf__st_index *index, const char *stem, size_t length, const char *part) {
    char name[512];
    if (length + strlen(part) >= sizeof name) return NULL;
    memcpy(name, stem, length);
    strcpy(name + length, part);
    return pf__st_find(index, name);
}

static int pf__file_dtype_is(const pf__st_tensor *t, const char *dtype) { return !strcmp(t->file_dtype, dtype); }

static int pf__shape_is(const pf__st_tensor *t, size_t rows, size_t cols) {
    return t->ndim == 2 && t->shape[0] == rows && t->shape[1] == cols;
}

static pf__packed *pf__packed_new(pf__st_index *index) {
    pf__packed *p = (pf__packed *)calloc(1, sizeof *p);
    if (p && pf__st_own(index, p)) return NULL;
    return p;
}

/* Whether an FP8 matrix (p) is E4M3 blocks: every 32 inputs of a row under one scale (one for the
   tensor, or blocks of the grid a multiple of 32 inputs wide). The others (16 x 16 blocks) are
   decoded into the ranks' dtype. */
static int pf__e4m3_holds(const pf__packed *p) {
    return p->cols % 32 == 0 && (!p->scale_cols || p->block_cols % 32 == 0);
}

/* FP8's and compressed-tensors' scales: a scale that is not a finite number (or an E8M0 255) is
   refused, naming the tensor. */
static pf_result pf__scales_finite(const pf__packed *p, const pf__st_tensor *scale, char *message, size_t size) {
    for (size_t i = 0; i < scale->numel; i++)
        if (!isfinite(pf__packed_scale(p, i)))
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: tensor '%s' holds a scale that is not a finite number "
                              "(%g, scale %zu)", scale->file->path, scale->name, pf__packed_scale(p, i), i);
    return PF_OK;
}

/* An FP8 weight (.weight, F8_E4M3 [out, in]) and its .weight_scale_inv: the weight becomes packed
   (E4M3 blocks where they hold it, pf__e4m3_holds). */
static pf_result pf__fp8_take(pf__st_index *index, const pf__qconfig *q, pf__st_tensor *scale, size_t stem,
                              char *message, size_t size) {
    pf__st_tensor *w = (pf__st_tensor *)pf__part(index, scale->name, stem, ".weight");
    if (!w)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: tensor '%s' scales no '%.*s.weight'", scale->file->path,
                          scale->name, (int)stem, scale->name);
    if (!pf__file_dtype_is(w, "F8_E4M3") || w->ndim != 2)
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: tensor '%s' is %s [%d dims] beside its "
                          "weight_scale_inv: an F8_E4M3 matrix is what quant_method \"fp8\" reads", w->file->path, w->name,
                          w->file_dtype, w->ndim);
    if (pf__module_listed(q->not_converted, w->name, stem))
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: tensor '%s' is FP8, but quantization_config's "
                          "modules_to_not_convert lists its module", w->file->path, w->name);
    size_t rows = w->shape[0], cols = w->shape[1];
    pf__packed p = {PF__PACKED_FP8, rows, cols, w->data, scale->data, NULL, NULL, 0, 0, 0, 0, 0, 0, PF__DTYPE_F32, q->scale_e8m0,
                    0, 0, PF__CT_ZERO_NONE, 0};
    int bytes_ok = q->scale_e8m0 ? pf__file_dtype_is(scale, "F8_E8M0") || pf__file_dtype_is(scale, "U8")
                                 : scale->dtype == PF__DTYPE_F32 || scale->dtype == PF__DTYPE_BF16 || scale->dtype == PF__DTYPE_F16;
    if (!bytes_ok)
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: tensor '%s' is %s, not %s (quantization_config's "
                          "scale_fmt)", scale->file->path, scale->name, scale->file_dtype,
                          q->scale_e8m0 ? "F8_E8M0 or U8" : "F32, BF16 or F16");
    p.scale_dtype = scale->dtype;
    if (scale->numel != 1) { /* else one scale for the tensor */
        if (!q->block_rows)
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: tensor '%s' holds %zu scales, but quantization_config "
                              "has no weight_block_size", scale->file->path, scale->name, scale->numel);
        p.block_rows = q->block_rows;
        p.block_cols = q->block_cols;
        p.scale_cols = (cols + q->block_cols - 1) / q->block_cols;
        if (!pf__shape_is(scale, (rows + q->block_rows - 1) / q->block_rows, p.scale_cols))
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: tensor '%s' is not the [%zu, %zu] scales of [%zu, %zu] "
                              "in %zu x %zu blocks (weight_block_size)", scale->file->path, scale->name,
                              (rows + q->block_rows - 1) / q->block_rows, p.scale_cols, rows, cols, q->block_rows,
                              q->block_cols);
    }
    pf_result r = pf__scales_finite(&p, scale, message, size);
    if (r) return r;
    pf__packed *kept = pf__packed_new(index);
    if (!kept) return pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    *kept = p;
    w->dtype = pf__e4m3_holds(kept) ? PF__DTYPE_E4M3 : PF__DTYPE_PACKED;
    w->packed = kept;
    scale->used = 1;
    return PF_OK;
}

/* out: the module's "<stem>.weight" (stem: the first `stem` bytes of named's name), a [rows, cols]
   PF__DTYPE_PACKED tensor decoded by p from the bytes of `bytes`, whose file it names. */
static pf_result pf__packed_weight(pf__st_index *index, pf__st_tensor *out, const char *named, size_t stem, size_t rows,
                                   size_t cols, const pf__st_tensor *bytes, const pf__packed *p, char *message,
                                   size_t size) {
    char *name = (char *)malloc(stem + sizeof ".weight");
    if (!name || pf__st_own(index, name)) return pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    memcpy(name, named, stem);
    strcpy(name + stem, ".weight");
    memset(out, 0, sizeof *out);
    out->name = name;
    out->dtype = PF__DTYPE_PACKED;
    out->file_dtype = "I32";
    out->ndim = 2;
    out->shape[0] = rows;
    out->shape[1] = cols;
    out->numel = rows * cols;
    out->data = bytes->data;
    out->bytes = bytes->bytes;
    out->file = bytes->file;
    out->packed = p;
    return PF_OK;
}

/* The block format that holds a GPTQ, AWQ or compressed-tensors integer matrix exactly: Q4_G (4
   bits) or Q8_G (8 bits) where every 32 inputs of a row lie in one group (groups of a multiple of
   32, or a row's or the tensor's; with g_idx, constant over each 32: desc_act with static groups)
   and, for Q4_G, fp16 holds every scale (F16 scales always do; BF16 and F32 ones are checked value
   by value: a BF16 scale below fp16's normal range may not be, an F32 one rarely is; Q8_G's fp32
   holds any). Act order's permuted groups (a g_idx not constant over each 32 inputs) are kept so
   too, their inputs reordered on each rank (*reordered set: pf__input_order). Else
   PF__DTYPE_PACKED: decoded into the ranks' dtype (fp32 by default). */
static pf__dtype pf__int_blocks_dtype(const pf__packed *p, int *reordered) {
    *reordered = 0;
    if (p->group_of) {
        for (size_t c = 0; c < p->cols && !*reordered; c++)
            *reordered = c % 32 == 0 && p->cols - c < 32 ? 1 /* a last block cut short */
                         : pf__le32(p->group_of + 4 * c) != pf__le32(p->group_of + 4 * (c / 32 * 32));
    } else if (p->cols % 32 || (p->group_size % 32 && p->group_size < p->cols)) {
        return PF__DTYPE_PACKED;
    }
    if (p->bits == 8) return PF__DTYPE_Q8_G;
    size_t scales = p->format == PF__PACKED_CT_INT ? p->scale_rows * p->scale_cols
                                                   : (p->cols + p->group_size - 1) / p->group_size * p->rows;
    for (size_t i = 0; p->scale_dtype != PF__DTYPE_F16 && i < scales; i++) {
        float scale = pf__packed_scale(p, i);
        if (pf__f16_to_f32(pf__f32_to_f16(scale)) != scale) return *reordered = 0, PF__DTYPE_PACKED;
    }
    return PF__DTYPE_Q4_G;
}

/* A GPTQ or AWQ module's qweight, qzeros, scales (and GPTQ's g_idx) as a packed [out, in] matrix;
   its tensor, named as the unquantized weight, is written to *out: Q4_G or Q8_G where those blocks
   hold it exactly (pf__int_blocks_dtype), else decoded (PF__DTYPE_PACKED). A scale that is not a
   finite number is refused. */
static pf_result pf__int_take(pf__st_index *index, const pf__qconfig *q, pf__st_tensor *qweight, size_t stem,
                              pf__st_tensor *out, char *message, size_t size) {
    const char *path = qweight->file->path;
    int awq = q->format == PF__PACKED_AWQ;
    size_t per_word = 32 / (size_t)q->bits;
    pf__st_tensor *zeros = (pf__st_tensor *)pf__part(index, qweight->name, stem, ".qzeros");
    pf__st_tensor *scales = (pf__st_tensor *)pf__part(index, qweight->name, stem, ".scales");
    pf__st_tensor *g_idx = awq ? NULL : (pf__st_tensor *)pf__part(index, qweight->name, stem, ".g_idx");
    if (!zeros || !scales)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: tensor '%s' lacks its %s", path, qweight->name,
                          zeros ? "scales" : "qzeros");
    if (pf__part(index, qweight->name, stem, ".weight"))
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: module '%.*s' has both a qweight and a weight", path,
                          (int)stem, qweight->name);
    if (pf__module_listed(q->not_converted, qweight->name, stem))
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: module '%.*s' is quantized, but quantization_config's "
                          "modules_to_not_convert lists it", path, (int)stem, qweight->name);
    if (!pf__file_dtype_is(qweight, "I32") || !pf__file_dtype_is(zeros, "I32") || qweight->ndim != 2 ||
        (g_idx && !pf__file_dtype_is(g_idx, "I32")))
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: module '%.*s': qweight, qzeros and g_idx are not I32 "
                          "matrices (and vector)", path, (int)stem, qweight->name);
    if (scales->dtype != PF__DTYPE_F16 && scales->dtype != PF__DTYPE_BF16 && scales->dtype != PF__DTYPE_F32)
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: tensor '%s' is %s, not F16, BF16 or F32", path,
                          scales->name, scales->file_dtype);
    size_t rows = awq ? qweight->shape[1] * per_word : qweight->shape[1];
    size_t cols = awq ? qweight->shape[0] : qweight->shape[0] * per_word;
    size_t group = q->group_size > 0 ? (size_t)q->group_size : cols, groups = cols ? (cols + group - 1) / group : 0;
    if (!rows || !cols || rows % per_word || !pf__shape_is(scales, groups, rows) ||
        !pf__shape_is(zeros, groups, rows / per_word))
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: module '%.*s': qweight [%zu, %zu] (%d-bit), qzeros [%zu, "
                          "%zu] and scales [%zu, %zu] are not one [%zu, %zu] matrix in groups of %zu inputs", path,
                          (int)stem, qweight->name, qweight->shape[0], qweight->shape[1], q->bits, zeros->shape[0],
                          zeros->ndim > 1 ? zeros->shape[1] : 0, scales->shape[0], scales->ndim > 1 ? scales->shape[1] : 0,
                          rows, cols, group);
    if (q->desc_act && !g_idx)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: module '%.*s' has no g_idx, which quantization_config's "
                          "desc_act (act order) needs", path, (int)stem, qweight->name);
    if (g_idx) {
        if (g_idx->ndim != 1 || g_idx->shape[0] != cols)
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: tensor '%s' is not [%zu]", path, g_idx->name, cols);
        for (size_t i = 0; i < cols; i++) /* a group past the scales would read outside them */
            if (pf__le32(g_idx->data + 4 * i) >= groups)
                return pf__format(message, size, PF_ERROR_FORMAT, "%s: tensor '%s' names group %u of %zu at input %zu",
                                  path, g_idx->name, (unsigned)pf__le32(g_idx->data + 4 * i), groups, i);
        g_idx->used = 1;
    }
    pf__packed *p = pf__packed_new(index);
    if (!p) return pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    *p = (pf__packed){q->format, rows, cols, qweight->data, scales->data, zeros->data, g_idx ? g_idx->data : NULL,
                      0, 0, 0, group, q->bits, q->zero_offset, scales->dtype, 0, 0, 0, PF__CT_ZERO_NONE, 0};
    for (size_t i = 0; i < groups * rows; i++)
        if (!isfinite(pf__packed_scale(p, i)))
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: tensor '%s' holds a scale that is not a finite number "
                              "(%g, group %zu of output %zu)", path, scales->name, pf__packed_scale(p, i), i / rows,
                              i % rows);
    pf_result r = pf__packed_weight(index, out, qweight->name, stem, rows, cols, qweight, p, message, size);
    if (!r) out->dtype = pf__int_blocks_dtype(p, &p->reordered);
    if (!r) qweight->used = zeros->used = scales->used = 1;
    return r;
}

/* What makes a weight from a packed source tensor (stem: the length of its module's name). */
typedef pf_result (*pf__take_fn)(pf__st_index *index, const pf__qconfig *q, pf__st_tensor *source, size_t stem,
                                 pf__st_tensor *out, char *message, size_t size);

/* Every tensor whose name ends in suffix given to take, which may make a weight of it (out's name
   set: a new tensor); those added to the index once all are made (the index is searched
   meanwhile), which is then sorted again: nothing points into its tensors yet. */
static pf_result pf__make_tensors(pf__st_index *index, const char *suffix, pf__take_fn take, const pf__qconfig *q,
                                  char *message, size_t size) {
    size_t count = 0, stem = 0, made = 0;
    for (size_t i = 0; i < index->num_tensors; i++) count += pf__has_suffix_of(index->tensors[i].name, suffix, &stem);
    if (!count) return PF_OK;
    pf__st_tensor *added = (pf__st_tensor *)calloc(count, sizeof *added);
    if (!added) return pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    pf_result r = PF_OK;
    for (size_t i = 0, n = index->num_tensors; i < n && !r; i++)
        if (pf__has_suffix_of(index->tensors[i].name, suffix, &stem) &&
            !(r = take(index, q, &index->tensors[i], stem, &added[made], message, size)) && added[made].name)
            made++;
    pf__st_tensor *grown = r || !made ? NULL : (pf__st_tensor *)realloc(index->tensors, (index->num_tensors + made) * sizeof *grown);
    if (!r && made && !grown) r = pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    if (!r && made) {
        index->tensors = grown;
        memcpy(index->tensors + index->num_tensors, added, made * sizeof *added);
        index->num_tensors += made;
        qsort(index->tensors, index->num_tensors, sizeof *index->tensors, pf__tensor_cmp);
    }
    free(added);
    return r;
}


/* A compressed-tensors module's weight_scale, with its weight (naive- and float-quantized: I8 or
   F8_E4M3 [out, in], made packed in place) or weight_packed and weight_shape (pack-quantized: a
   packed ".weight" tensor written to *out, *added set), and weight_zero_point (asymmetric): kept
   in Q4_G, Q8_G or E4M3 blocks where they hold it, else decoded. A scale that is not a finite
   number is refused. */
static pf_result pf__ct_take(pf__st_index *index, const pf__qconfig *q, pf__st_tensor *scale, size_t stem,
                             pf__st_tensor *out, char *message, size_t size) {
    const char *path = scale->file->path;
    pf__st_tensor *weight = (pf__st_tensor *)pf__part(index, scale->name, stem, ".weight");
    pf__st_tensor *packed = (pf__st_tensor *)pf__part(index, scale->name, stem, ".weight_packed");
    pf__st_tensor *shape = (pf__st_tensor *)pf__part(index, scale->name, stem, ".weight_shape");
    pf__st_tensor *zero = (pf__st_tensor *)pf__part(index, scale->name, stem, ".weight_zero_point");
    int stem_len = (int)stem;
    if (pf__module_listed(q->not_converted, scale->name, stem))
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: module '%.*s' is quantized, but quantization_config's "
                          "ignore lists it", path, stem_len, scale->name);
    if (scale->dtype != PF__DTYPE_F32 && scale->dtype != PF__DTYPE_BF16 && scale->dtype != PF__DTYPE_F16)
        return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: tensor '%s' is %s, not F32, BF16 or F16", path,
                          scale->name, scale->file_dtype);
    size_t rows = 0, cols = 0;
    if (q->ct_packed) {
        uint64_t dims[2] = {0, 0};
        if (!packed || !shape || weight || !pf__file_dtype_is(packed, "I32") || packed->ndim != 2 ||
            !pf__file_dtype_is(shape, "I64") || shape->numel != 2)
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: module '%.*s' is not an I32 weight_packed matrix and "
                              "its I64 weight_shape (format pack-quantized), without a weight", path, stem_len, scale->name);
        for (int d = 0; d < 2; d++)
            for (int b = 7; b >= 0; b--) dims[d] = dims[d] << 8 | shape->data[8 * d + b];
        rows = (size_t)dims[0], cols = (size_t)dims[1];
        if (dims[0] > ((uint64_t)1 << 40) || dims[1] > ((uint64_t)1 << 40) || !rows || !cols ||
            !pf__shape_is(packed, rows, (cols * (size_t)q->bits + 31) / 32))
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: module '%.*s': weight_packed [%zu, %zu] does not hold "
                              "the weight_shape [%llu, %llu] in %d-bit fields", path, stem_len, scale->name, packed->shape[0],
                              packed->shape[1], (unsigned long long)dims[0], (unsigned long long)dims[1], q->bits);
    } else {
        const char *want = q->ct_float ? "F8_E4M3" : "I8";
        if (!weight || packed || !pf__file_dtype_is(weight, want) || weight->ndim != 2 || !weight->numel)
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: module '%.*s' has no %s weight matrix beside its "
                              "weight_scale", path, stem_len, scale->name, want);
        rows = weight->shape[0], cols = weight->shape[1];
    }
    /* the scales' grid: a tensor's, an output's, groups of an output's inputs, or blocks */
    size_t group = cols, scale_rows = 1, scale_cols = 1;
    if (q->ct_strategy == PF__CT_CHANNEL) scale_rows = rows;
    else if (q->ct_strategy == PF__CT_GROUP) scale_rows = rows, group = (size_t)q->group_size, scale_cols = cols / group;
    else if (q->ct_strategy == PF__CT_BLOCK)
        scale_rows = (rows + q->block_rows - 1) / q->block_rows, scale_cols = (cols + q->block_cols - 1) / q->block_cols;
    int grid_ok = q->ct_strategy == PF__CT_TENSOR ? scale->numel == 1 : pf__shape_is(scale, scale_rows, scale_cols);
    if (!grid_ok || cols % group)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: tensor '%s' is not the scales of a [%zu, %zu] weight in the "
                          "scheme's grid (%zu x %zu scales%s)", path, scale->name, rows, cols, scale_rows, scale_cols,
                          cols % group ? ", inputs not a whole number of groups" : "");
    int zero_layout = PF__CT_ZERO_NONE;
    if (q->ct_symmetric && zero)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: tensor '%s': the scheme is symmetric, without zero points",
                          path, zero->name);
    if (!q->ct_symmetric) {
        int packs = q->ct_packed && (q->ct_strategy == PF__CT_GROUP || q->ct_strategy == PF__CT_CHANNEL);
        int ok = zero && (packs ? pf__file_dtype_is(zero, "I32") &&
                                      pf__shape_is(zero, (rows * (size_t)q->bits + 31) / 32, scale_cols)
                                : pf__file_dtype_is(zero, "I8") && zero->numel == scale->numel);
        if (!ok)
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: module '%.*s' has no %s weight_zero_point of its "
                              "scales' %s (the scheme is asymmetric)", path, stem_len, scale->name, packs ? "I32" : "I8",
                              packs ? "groups, packed along the outputs," : "shape");
        zero_layout = packs ? PF__CT_ZERO_PACKED : PF__CT_ZERO_I8;
        zero->used = 1;
    }
    pf__packed *p = pf__packed_new(index);
    if (!p) return pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    memset(p, 0, sizeof *p);
    p->rows = rows, p->cols = cols, p->scales = scale->data, p->scale_dtype = scale->dtype;
    if (q->ct_float) { /* e4m3 x scale, through FP8's grid: an output's row of blocks as wide as the input */
        p->format = PF__PACKED_FP8;
        p->values = weight->data;
        if (q->ct_strategy != PF__CT_TENSOR) {
            p->block_rows = q->ct_strategy == PF__CT_BLOCK ? q->block_rows : 1;
            p->block_cols = q->ct_strategy == PF__CT_BLOCK ? q->block_cols : group;
            p->scale_cols = scale_cols;
        }
    } else {
        p->format = PF__PACKED_CT_INT;
        p->values = q->ct_packed ? packed->data : weight->data;
        p->values_i8 = !q->ct_packed;
        p->zeros = zero_layout != PF__CT_ZERO_NONE ? zero->data : NULL;
        p->zero_layout = zero_layout;
        p->scale_rows = scale_rows, p->scale_cols = scale_cols, p->group_size = group, p->bits = q->bits;
    }
    scale->used = 1;
    pf_result r = pf__scales_finite(p, scale, message, size);
    if (r) return r;
    int reordered = 0; /* (compressed-tensors' group act order, a weight_g_idx, is refused) */
    pf__dtype kept = !q->ct_float ? pf__int_blocks_dtype(p, &reordered) : pf__e4m3_holds(p) ? PF__DTYPE_E4M3 : PF__DTYPE_PACKED;
    if (!q->ct_packed) {
        weight->dtype = kept;
        weight->packed = p;
        return PF_OK;
    }
    r = pf__packed_weight(index, out, scale->name, stem, rows, cols, packed, p, message, size);
    if (r) return r;
    out->dtype = kept;
    packed->used = shape->used = 1;
    return PF_OK;
}

/* compressed-tensors: every weight_scale's module decoded; pack-quantized modules become packed
   ".weight" tensors added to the index (as GPTQ's); activation scales are refused. */
static pf_result pf__ct_tensors(pf__st_index *index, const pf__qconfig *q, char *message, size_t size) {
    static const char *const activation_parts[] = {".input_scale", ".input_zero_point", ".output_scale",
                                                   ".output_zero_point", ".weight_g_idx", ".input_global_scale",
                                                   ".weight_global_scale"};
    size_t stem = 0;
    for (size_t i = 0; i < index->num_tensors; i++) {
        const pf__st_tensor *t = &index->tensors[i];
        for (size_t k = 0; k < PF__COUNT(activation_parts); k++)
            if (pf__has_suffix_of(t->name, activation_parts[k], &stem))
                return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: tensor '%s' (%s) is not implemented",
                                  t->file->path, t->name, activation_parts[k] + 1);
    }
    return pf__make_tensors(index, ".weight_scale", pf__ct_take, q, message, size);
}

/* FP8: every weight_scale_inv's weight packed; an F8 tensor left without one is refused. */
static pf_result pf__fp8_tensors(pf__st_index *index, const pf__qconfig *q, char *message, size_t size) {
    for (size_t i = 0; i < index->num_tensors; i++) {
        pf__st_tensor *t = &index->tensors[i];
        size_t stem = 0;
        pf_result r;
        if (pf__has_suffix_of(t->name, ".weight_scale_inv", &stem) && (r = pf__fp8_take(index, q, t, stem, message, size)))
            return r;
        if (pf__has_suffix_of(t->name, ".input_scale", &stem) || pf__has_suffix_of(t->name, ".activation_scale", &stem))
            return pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: tensor '%s': static activation scales are not "
                              "implemented", t->file->path, t->name);
    }
    for (size_t i = 0; i < index->num_tensors; i++) {
        const pf__st_tensor *t = &index->tensors[i];
        if (!t->packed && !t->used && !strncmp(t->file_dtype, "F8_", 3))
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: tensor '%s' is %s without a weight_scale_inv",
                              t->file->path, t->name, t->file_dtype);
    }
    return PF_OK;
}

/* MXFP4: a `<stem>_blocks` U8 [..., out, in / 32, 16] and its `<stem>_scales` U8 [..., out, in / 32]
   (1 or 2 leading dimensions: a matrix, or experts) become the PF__DTYPE_MXFP4 tensor `<stem>` of
   the weights' shape [..., out, in], written to *out. */
static pf_result pf__mxfp4_take(pf__st_index *index, const pf__qconfig *q, pf__st_tensor *blocks, size_t stem,
                                pf__st_tensor *out, char *message, size_t size) {
    (void)q; /* MXFP4's quantization_config says nothing of the blocks' layout */
    const char *path = blocks->file->path;
    pf__st_tensor *scales = (pf__st_tensor *)pf__part(index, blocks->name, stem, "_scales");
    int stem_len = (int)stem, n = blocks->ndim;
    if (!scales)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: tensor '%s' has no '%.*s_scales' beside it", path,
                          blocks->name, stem_len, blocks->name);
    if (pf__part(index, blocks->name, stem, ""))
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: '%.*s' is both in MXFP4 blocks and unquantized", path,
                          stem_len, blocks->name);
    int shape_ok = pf__file_dtype_is(blocks, "U8") && (pf__file_dtype_is(scales, "U8") || pf__file_dtype_is(scales, "F8_E8M0")) &&
                   (n == 3 || n == 4) && scales->ndim == n - 1 && blocks->shape[n - 1] == 16 && blocks->numel;
    for (int d = 0; shape_ok && d < n - 1; d++) shape_ok = scales->shape[d] == blocks->shape[d];
    if (!shape_ok)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: tensors '%s' and '%s' are not U8 MXFP4 blocks [..., out, "
                          "in / 32, 16] and their E8M0 scales [..., out, in / 32] (one or two leading dimensions)", path,
                          blocks->name, scales->name);
    char *name = (char *)malloc(stem + 1);
    pf__packed *p = pf__packed_new(index);
    if (!name || pf__st_own(index, name) || !p) return pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    memcpy(name, blocks->name, stem);
    name[stem] = 0;
    size_t cols = blocks->shape[n - 2] * 32, rows = blocks->numel / 16 / blocks->shape[n - 2];
    memset(p, 0, sizeof *p);
    p->format = PF__PACKED_MXFP4, p->rows = rows, p->cols = cols, p->values = blocks->data, p->scales = scales->data;
    memset(out, 0, sizeof *out);
    out->name = name;
    out->dtype = PF__DTYPE_MXFP4;
    out->file_dtype = "U8";
    out->ndim = n - 1;
    for (int d = 0; d < n - 2; d++) out->shape[d] = blocks->shape[d];
    out->shape[n - 2] = cols;
    out->numel = rows * cols;
    out->data = blocks->data;
    out->bytes = blocks->bytes + scales->bytes;
    out->file = blocks->file;
    out->packed = p;
    blocks->used = scales->used = 1;
    return PF_OK;
}


/* MXFP4: every `_blocks` tensor's weight; a `_scales` tensor no blocks took is an error. */
static pf_result pf__mxfp4_tensors(pf__st_index *index, char *message, size_t size) {
    size_t stem = 0;
    pf_result r = pf__make_tensors(index, "_blocks", pf__mxfp4_take, NULL, message, size);
    for (size_t i = 0; i < index->num_tensors && !r; i++)
        if (!index->tensors[i].used && pf__has_suffix_of(index->tensors[i].name, "_scales", &stem))
            r = pf__format(message, size, PF_ERROR_FORMAT, "%s: tensor '%s' has no '%.*s_blocks' beside it",
                           index->tensors[i].file->path, index->tensors[i].name, (int)stem, index->tensors[i].name);
    return r;
}

PF_PRIVATE pf_result pf__quantized_open(const char *dir, pf__st_index *index, char *message, size_t size) {
    char path[PF__PATH_SIZE];
    pf__json *json = NULL;
    if (pf__path_join(path, sizeof path, dir, "config.json"))
        return pf__format(message, size, PF_ERROR_INVALID_ARGUMENT, "path too long: %s", dir);
    pf_result r = pf__json_load(path, &json, message, size);
    if (r) return r;
    const pf__json *qc = pf__json_get(json, "quantization_config");
    pf__qconfig q;
    memset(&q, 0, sizeof q);
    q.method = qc ? pf__json_string_of(qc, "quant_method") : NULL;
    if (!qc || qc->type == PF__JSON_NULL) {
        r = PF_OK;
    } else if (qc->type != PF__JSON_OBJECT || !q.method) {
        r = pf__format(message, size, PF_ERROR_FORMAT, "%s: quantization_config is not an object with a quant_method", path);
    } else if (!strcmp(q.method, "fp8")) {
        q.format = PF__PACKED_FP8;
        if (!(r = pf__check_qkeys(qc, q.method, pf__fp8_keys, PF__COUNT(pf__fp8_keys), path, message, size)) &&
            !(r = pf__fp8_config(qc, path, &q, message, size)))
            r = pf__fp8_tensors(index, &q, message, size);
    } else if (!strcmp(q.method, "gptq") || !strcmp(q.method, "awq")) {
        q.format = !strcmp(q.method, "awq") ? PF__PACKED_AWQ : PF__PACKED_GPTQ;
        if (!(r = pf__check_qkeys(qc, q.method, pf__gptq_keys, PF__COUNT(pf__gptq_keys), path, message, size)) &&
            !(r = pf__int_config(qc, path, &q, message, size)))
            r = pf__make_tensors(index, ".qweight", pf__int_take, &q, message, size);
    } else if (!strcmp(q.method, "compressed-tensors")) {
        if (!(r = pf__check_qkeys(qc, q.method, pf__ct_keys, PF__COUNT(pf__ct_keys), path, message, size)) &&
            !(r = pf__ct_config(qc, path, &q, message, size)))
            r = pf__ct_tensors(index, &q, message, size);
    } else if (!strcmp(q.method, "mxfp4")) {
        if (!(r = pf__check_qkeys(qc, q.method, pf__mxfp4_keys, PF__COUNT(pf__mxfp4_keys), path, message, size)))
            r = pf__mxfp4_tensors(index, message, size);
    } else {
        r = pf__format(message, size, PF_ERROR_UNSUPPORTED, "%s: quantization_config's quant_method \"%s\" is not "
                       "supported (fp8, gptq, awq, compressed-tensors and mxfp4 are)", path, q.method);
    }
    pf__json_free(json);
    return r;
}

#ifdef PF_TESTING
/* Test hook: the e4m3 decoding, code by code. */
float pf_testing_e4m3_to_f32(unsigned code) { return pf__e4m3_to_f32((uint8_t)code); }
#endif
