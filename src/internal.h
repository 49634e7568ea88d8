/* internal.h: what the files under src/ share, the one place it is declared: the types (slots,
   config, weights, the backend table, ranks, groups, jobs, pf_model), the macros, the small inline
   helpers, and each file's functions and data that other files use, under the file's name and in
   src/ORDER's order. Every src/ file includes it first; tool/amalgamate.sh puts it once at the top
   of the shipped parallelformers.c. A function or datum that only its own file uses stays static
   there and is not listed here. */
#ifndef PF_INTERNAL_H
#define PF_INTERNAL_H

/* PF_PRIVATE marks what one file defines for the others: static in the shipped file (one
   translation unit, which tool/amalgamate.sh marks with PF_AMALGAMATION), hidden from the
   library's users in the development build of several objects. */
#ifdef PF_AMALGAMATION
#define PF_PRIVATE static
#elif defined(_WIN32)
#define PF_PRIVATE /* a DLL exports only what is marked for it: nothing to hide */
#else
#define PF_PRIVATE __attribute__((visibility("hidden")))
#endif

/* ---- src/util.c ---- */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#if defined(__MINGW32__) && !defined(__USE_MINGW_ANSI_STDIO)
#define __USE_MINGW_ANSI_STDIO 1 /* C99 formatting (%zu, %lld) in snprintf, not msvcrt's */
#endif
#include "parallelformers.h"
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _WIN32 /* Windows (mingw-w64): file mappings, memory and processor counts from the Win32 API */
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <io.h>
#include <windows.h>
#else
#include <sys/mman.h>
#endif
#include <sys/stat.h>
#include <unistd.h>
#define PF__MESSAGE_SIZE 512
#define PF__PATH_SIZE 4096
/* Thread-local storage, so that threads sharing a model each read their own last error (C99 has
   no keyword for it; every compiler we target has one). */
#if defined(_MSC_VER)
#define PF__THREAD_LOCAL __declspec(thread)
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__STDC_NO_THREADS__)
#define PF__THREAD_LOCAL _Thread_local
#else
#define PF__THREAD_LOCAL __thread
#endif
#ifndef PF_AMALGAMATION /* the shipped file defines it before any reader */
extern PF_PRIVATE PF__THREAD_LOCAL const void *pf__error_model;
extern PF_PRIVATE PF__THREAD_LOCAL char pf__error_text[PF__MESSAGE_SIZE];
extern PF_PRIVATE PF__THREAD_LOCAL const void *pf__lock_holder;
#endif
PF_PRIVATE char *pf__error_buffer(const void *model);
PF_PRIVATE pf_result pf__format(char *message, size_t size, pf_result code, const char *fmt, ...);
PF_PRIVATE int pf__path_join(char *out, size_t cap, const char *dir, const char *name);
PF_PRIVATE int pf__file_exists(const char *path);
PF_PRIVATE pf_result pf__open_regular(const char *path, int *fd, size_t *file_size, char *message, size_t size);

/* The JSON and text files we read whole (config, tokenizer, merges): the largest real ones are
   tens of MiB; more is a mistake or an attack, refused before it takes the memory. */
#define PF__MAX_TEXT_FILE ((size_t)256 << 20)
PF_PRIVATE pf_result pf__read_file(const char *path, size_t max_bytes, char **data, size_t *len, char *message, size_t size);
PF_PRIVATE int pf__mul_size(size_t a, size_t b, size_t *out);
PF_PRIVATE float pf__f16_to_f32(uint16_t h);
PF_PRIVATE float pf__bf16_to_f32(uint16_t b);
PF_PRIVATE uint16_t pf__f32_to_f16(float f);
PF_PRIVATE uint16_t pf__f32_to_bf16(float f);

/* ---- src/json.c ---- */

typedef enum {
    PF__JSON_NULL,
    PF__JSON_BOOL,
    PF__JSON_NUMBER,
    PF__JSON_STRING,
    PF__JSON_ARRAY,
    PF__JSON_OBJECT
} pf__json_type;

typedef struct pf__json {
    pf__json_type type;
    int boolean;                           /* BOOL */
    double number;                         /* NUMBER */
    int integral;                          /* NUMBER written without '.' or exponent, within int64: integer */
    long long integer;
    const char *string;                    /* STRING: decoded UTF-8, NUL-terminated */
    size_t string_len;
    const char *key;                       /* member of an OBJECT: decoded key, NUL-terminated */
    size_t key_len;
    struct pf__json *first, *next;         /* ARRAY/OBJECT: children in document order */
    size_t count;                          /* ARRAY/OBJECT: number of children */
} pf__json;
PF_PRIVATE void pf__json_free(pf__json *root);
PF_PRIVATE pf__json *pf__json_parse(const char *text, size_t len, char *err, size_t err_size);
PF_PRIVATE const pf__json *pf__json_get(const pf__json *obj, const char *key);
PF_PRIVATE const pf__json *pf__json_get_path(const pf__json *obj, const char *path);
PF_PRIVATE pf_result pf__json_load(const char *path, pf__json **out, char *message, size_t size);

/* ---- src/safetensors.c ---- */

/* PF__DTYPE_Q8 and _Q4 are llama.cpp's Q8_0 and Q4_0 blocks: our quantizers' formats (see
   PF__Q8_BLOCK), and a GGUF's. Q4_1 to Q2_K are GGUF's other block formats, kept as the file
   holds them (src/blocks.c); MXFP4 is ggml's block of 32 e2m1 values and an E8M0 scale (a GGUF's,
   or a safetensors checkpoint's *_blocks and *_scales, src/quantized.c); Q4_G is ours, GPTQ's and
   AWQ's (and compressed-tensors') 4-bit groups cut into blocks of 32, E4M3 FP8 weights a block of 32
   with their fp32 scale, and Q8_G 8-bit integer weights (GPTQ's, compressed-tensors') a block of 32
   with their fp32 scale and zero (src/blocks.c); PF__BLOCKED names them all. */
typedef enum { PF__DTYPE_F32, PF__DTYPE_F16, PF__DTYPE_BF16, PF__DTYPE_Q8, PF__DTYPE_Q4, PF__DTYPE_Q4_1, PF__DTYPE_Q5_0,
               PF__DTYPE_Q5_1, PF__DTYPE_Q4_K, PF__DTYPE_Q5_K, PF__DTYPE_Q6_K, PF__DTYPE_Q3_K, PF__DTYPE_IQ4_NL,
               PF__DTYPE_IQ4_XS, PF__DTYPE_Q2_K, PF__DTYPE_MXFP4, PF__DTYPE_Q4_G, PF__DTYPE_E4M3, PF__DTYPE_Q8_G,
               PF__DTYPE_PACKED, PF__DTYPE_OTHER } pf__dtype;
/* PF__DTYPE_PACKED: a quantized safetensors checkpoint's matrix (FP8, GPTQ, AWQ: src/quantized.c),
   its values in the file's tensors and decoded as the ranks slice it (pf__st_tensor.packed). An
   MXFP4 checkpoint's matrix is PF__DTYPE_MXFP4 with a packed decoding too: its blocks are
   assembled from the file's two tensors where the ranks keep them, its values decoded elsewhere;
   so is a 4-bit GPTQ, AWQ or compressed-tensors matrix that Q4_G holds exactly (PF__DTYPE_Q4_G:
   pf__packed_row_blocks), an 8-bit one that Q8_G holds (PF__DTYPE_Q8_G), and an FP8 one whose
   scale grid falls on 32 inputs (PF__DTYPE_E4M3). E4M3's values are no integers, and Q8_G's (q less
   its zero: -255..255) no int8s: they have no sub-blocks (pf__sub_block_decode) and are multiplied
   against fp32 x only (PF__INT8_PRODUCTS). */
#define PF__BLOCKED(t) ((t) >= PF__DTYPE_Q8 && (t) <= PF__DTYPE_Q8_G)
/* Whether a block format has int8 sub-blocks, which the int8 products (dtype q8_0) multiply as they are. */
#define PF__INT8_PRODUCTS(t) (PF__BLOCKED(t) && (t) != PF__DTYPE_E4M3 && (t) != PF__DTYPE_Q8_G)
#define PF__MAX_DIMS 8

typedef struct pf__file_map {
    char *path;
    const uint8_t *data; /* the whole file, mapped read-only */
    size_t size;
    int fd;              /* kept open: pf__maps_unchanged asks it whether the file changed */
    long long mtime_s, mtime_ns; /* the file's modification time when mapped */
} pf__file_map;

typedef struct pf__st_tensor {
    const char *name;             /* points into the header JSON kept alive by the index */
    pf__dtype dtype;
    int ndim;
    size_t shape[PF__MAX_DIMS];
    size_t numel;
    const uint8_t *data;          /* inside the file map */
    size_t bytes;
    const pf__file_map *file;
    int used;                     /* consumed by a slot or a known buffer (see pf__account_tensors) */
    const char *file_dtype;       /* the header's dtype ("F8_E4M3", "I32", ...), in the header JSON */
    const struct pf__packed *packed; /* PF__DTYPE_PACKED, an MXFP4 checkpoint's PF__DTYPE_MXFP4: how to decode
                                        it (src/quantized.c) */
} pf__st_tensor;

/* All tensors of a checkpoint (one file or shards), sorted by name. */
typedef struct pf__st_index {
    pf__file_map *files;
    int num_files;
    pf__json **headers;           /* one parsed header per file, owning the names */
    pf__st_tensor *tensors;
    size_t num_tensors;
    void **owned;                 /* a GGUF's converted tensors and their names (see pf__gguf_load),
                                     a quantized checkpoint's packed matrices (src/quantized.c) */
    size_t num_owned;
} pf__st_index;
PF_PRIVATE size_t pf__dtype_size(pf__dtype t);

/* Q8 weights (PF_DTYPE_Q8_0): each row in blocks of PF__Q8_BLOCK inputs, a block being an fp16
   scale d then PF__Q8_BLOCK int8 values q in -127..127 (weight = d * q), the layout of
   llama.cpp's Q8_0: 34 bytes for 32 weights. Blocks start at multiples of PF__Q8_BLOCK in the
   whole tensor's columns, so a split at such a column quantizes every rank's share as one rank. */
#define PF__Q8_BLOCK 32
#define PF__Q8_BYTES (2 + PF__Q8_BLOCK)

/* Q4 weights (PF_DTYPE_Q4_0), llama.cpp's Q4_0: blocks of the same 32 inputs, an fp16 scale d then
   16 bytes whose low nibbles are values 0..15 and high nibbles values 16..31, each q in 0..15
   standing for d * (q - 8): 18 bytes for 32 weights. */
#define PF__Q4_BYTES (2 + PF__Q8_BLOCK / 2)
#define PF__QUANTIZED(t) ((t) == PF__DTYPE_Q8 || (t) == PF__DTYPE_Q4)
PF_PRIVATE float pf__q8_scale(const unsigned char *block);
PF_PRIVATE size_t pf__weight_bytes(pf__dtype t, size_t rows, size_t cols);

/* ---- src/blocks.c ---- */
/* A block format's weights per block (32, or 256 for the K formats; 1 for F32, F16, BF16) and
   bytes per block; its name as GGUF spells it. */
PF_PRIVATE size_t pf__block_values(pf__dtype t);
PF_PRIVATE size_t pf__block_bytes(pf__dtype t);
PF_PRIVATE const char *pf__dtype_name(pf__dtype t);
/* Q3_K's 16-weight scale s (of 16) from its 12 scale bytes, and IQ4_XS's sub-block j scale from
   its block, as stored (Q3_K's less 32; IQ4_XS's 0..63): what every kernel set decodes them with. */
PF_PRIVATE int pf__q3_k_scale(const uint8_t *sc, int s);
PF_PRIVATE int pf__iq4_xs_scale(const uint8_t *b, int j);
/* MXFP4's E8M0 scale byte as the factor of its doubled levels: 2^(e - 128) (ggml's
   GGML_E8M0_TO_FP32_HALF; 0 and 1 give fp32 subnormals), exact. Inline: the block kernels take
   one a sub-block. */
static inline float pf__e8m0_half(uint8_t e) {
    uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}
#ifndef PF_AMALGAMATION /* the shipped file defines it before any reader */
extern PF_PRIVATE const int8_t pf__iq4_levels[16]; /* the IQ4 formats' levels (ggml's kvalues_iq4nl) */
extern PF_PRIVATE const int8_t pf__mxfp4_levels[16]; /* e2m1's values doubled (ggml's kvalues_mxfp4) */
extern PF_PRIVATE const float pf__e4m3_values[256]; /* each e4m3 (float8_e4m3fn) code's value; 0x7f, 0xff NaN */
#endif
PF_PRIVATE void pf__block_dequantize(pf__dtype t, const uint8_t *block, float *out);
PF_PRIVATE float pf__block_value(pf__dtype t, const void *w, size_t i);
/* Sub-block j (32 weights) of a block in integers: weight i is dw * s_i * v[i] + mw * m_i, s_i
   being scales16[i / 16] (Q6_K's, Q3_K's and Q2_K's 16-weight scales; 1 for the others), m_i
   mins16[i / 16] (Q2_K's 16-weight minimums; 1 for the others) and mw 0 for the formats without
   a minimum (Q8_0, Q4_0, Q5_0, Q6_K, Q3_K, IQ4_NL, IQ4_XS, MXFP4, Q4_G). What the integer matrix products
   multiply. */
typedef struct pf__sub_block {
    int8_t v[32];
    int16_t scales16[2], mins16[2];
    float dw, mw;
} pf__sub_block;
PF_PRIVATE void pf__sub_block_decode(pf__dtype t, const uint8_t *block, int j, pf__sub_block *out);
PF_PRIVATE int pf__block_has_min(pf__dtype t);
PF_PRIVATE pf_result pf__map_file(const char *path, pf__file_map *map, char *message, size_t size);
PF_PRIVATE void pf__unmap_file(pf__file_map *map);
PF_PRIVATE int pf__tensor_cmp(const void *a, const void *b);
PF_PRIVATE void pf__st_close(pf__st_index *index);
PF_PRIVATE pf_result pf__maps_unchanged(const pf__st_index *index, char *message, size_t size);
PF_PRIVATE const pf__st_tensor *pf__st_find(const pf__st_index *index, const char *name);
PF_PRIVATE const pf__st_tensor *pf__st_take(pf__st_index *index, const char *name);
PF_PRIVATE pf_result pf__st_open(const char *dir, const char *class_name, pf__st_index *index, char *message, size_t size);
PF_PRIVATE int pf__st_own(pf__st_index *index, void *p);
PF_PRIVATE size_t pf__st_file_dtype_size(const char *dtype);

/* ---- src/quantized.c ---- */

/* A quantized checkpoint's [rows = out, cols = in] matrix, decoded value by value where a rank's
   slice needs it (any run of a row: a rank's columns may start inside a block or group, whose
   scale follows the element). */
typedef enum { PF__PACKED_FP8, PF__PACKED_GPTQ, PF__PACKED_AWQ, PF__PACKED_CT_INT, PF__PACKED_MXFP4 } pf__packed_format;
typedef struct pf__packed {
    pf__packed_format format;
    size_t rows, cols;
    const uint8_t *values;     /* FP8: e4m3 [rows][cols]; GPTQ: I32 [cols * bits / 32][rows] (packed along
                                  the input); AWQ: I32 [cols][rows * bits / 32] (packed along the output);
                                  MXFP4: e2m1 nibbles [rows][cols / 2], input 2k in byte k's low nibble */
    const uint8_t *scales;     /* FP8: [ceil(rows / block_rows)][scale_cols], or one for the tensor;
                                  GPTQ, AWQ: [groups][rows]; in scale_dtype (F32, F16, BF16);
                                  MXFP4: E8M0 bytes [rows][cols / 32] */
    const uint8_t *zeros;      /* GPTQ, AWQ: I32 [groups][rows * bits / 32], packed as the format packs */
    const uint8_t *group_of;   /* GPTQ: I32 [cols], each input's group (g_idx); NULL: input / group_size */
    size_t block_rows, block_cols, scale_cols; /* FP8's scale grid */
    size_t group_size;         /* GPTQ, AWQ: inputs per group */
    int bits;                  /* GPTQ, AWQ, CT_INT: 4 or 8 */
    int zero_offset;           /* GPTQ's v1 format: stored zeros are one less than the zeros */
    pf__dtype scale_dtype;
    int scale_e8m0;            /* FP8 scales stored as E8M0 exponents instead: 2^(byte - 127) */
    /* compressed-tensors (CT_INT: int weights; FP8 with the scale grid above for its float ones) */
    int values_i8;             /* CT_INT: I8 [rows][cols] (naive-quantized); else I32 words [rows][ceil(cols *
                                  bits / 32)], value c at bit c * bits, stored plus 2^(bits - 1) (pack-quantized) */
    size_t scale_rows;         /* CT_INT: scales (and I8 zeros) [scale_rows: 1 or rows][scale_cols], groups of
                                  group_size inputs */
    int zero_layout;           /* CT_INT: PF__CT_ZERO_* */
    int reordered;             /* GPTQ act order whose groups are not whole blocks of 32 inputs (a permuted
                                  g_idx), kept in Q4_G or Q8_G blocks all the same: each rank's inputs
                                  reordered group by group (pf__input_order) */
} pf__packed;
/* compressed-tensors' zero points: none (symmetric), I8 laid out as the scales, or I32 words packed
   along the outputs ([ceil(rows * bits / 32)][scale_cols], stored plus 2^(bits - 1)). */
enum { PF__CT_ZERO_NONE, PF__CT_ZERO_I8, PF__CT_ZERO_PACKED };
/* e4m3 (float8_e4m3fn) byte as fp32: every code exact; 0x7f and 0xff are NaN. */
PF_PRIVATE float pf__e4m3_to_f32(uint8_t code);
/* Values [col, col + n) of row `row` of p, as fp32. */
PF_PRIVATE void pf__packed_row_run(const pf__packed *p, size_t row, size_t col, size_t n, float *out);
/* Blocks [first, first + count) of row `row` of a matrix kept in blocks (its tensor's dtype): an
   MXFP4 matrix's as ggml's MXFP4 blocks (the E8M0 byte, then inputs i and i + 16 in byte i's
   nibbles), a 4-bit GPTQ, AWQ or compressed-tensors one's as Q4_G blocks, an 8-bit one's as Q8_G
   blocks, an FP8 one's as E4M3 blocks. What the ranks keep. */
PF_PRIVATE void pf__packed_row_blocks(const pf__packed *p, size_t row, size_t first, size_t count, uint8_t *out);
/* A reordered matrix's (pf__packed.reordered) inputs [col_begin, col_begin + cols), a rank's, in
   the order its blocks hold them: group by group (in the order of the inputs within a group), each
   group's run padded with PF__NO_INPUT to a whole number of blocks of 32, so that every block lies
   in one group. Writes order[j] = the input (less col_begin) of the blocks' column j, where order
   is not NULL; returns the blocks' width (0: out of memory). */
#define PF__NO_INPUT UINT32_MAX
PF_PRIVATE size_t pf__input_order(const pf__packed *p, size_t col_begin, size_t cols, uint32_t *order);
/* count blocks of row `row` of a reordered matrix in that order (a pad's weight 0) as Q4_G or Q8_G blocks. */
PF_PRIVATE void pf__packed_row_blocks_ordered(const pf__packed *p, size_t row, const uint32_t *order, size_t col_begin,
                                              size_t count, uint8_t *out);
/* config.json's quantization_config: its matrices become PF__DTYPE_PACKED tensors named as their
   unquantized weights ("....weight"), their parts marked consumed; keys that change the math and
   that we do not implement are refused by name. No quantization_config: nothing to do. */
PF_PRIVATE pf_result pf__quantized_open(const char *dir, pf__st_index *index, char *message, size_t size);

/* ---- src/config.c ---- */

/* The tensors the forward pass knows. Per-layer slots come after PF__SLOT_FIRST_LAYER. Shapes
   are logical [out, in]; E is the embedding width (hidden, or OPT's word_embed_proj_dim),
   Q = heads * head_dim, KV = kv_heads * head_dim, I = intermediate size. */
typedef enum {
    PF__SLOT_TOKEN_EMBED,      /* [vocab, E] */
    PF__SLOT_POSITION_EMBED,   /* [max_positions + offset, hidden]: learned, or the sinusoid table */
    PF__SLOT_EMBED_NORM_WEIGHT,/* [hidden] BLOOM's norm right after the embedding */
    PF__SLOT_EMBED_NORM_BIAS,  /* [hidden] */
    PF__SLOT_PROJECT_IN,       /* [hidden, E] */
    PF__SLOT_PROJECT_IN_BIAS,  /* [hidden] */
    PF__SLOT_PROJECT_OUT,      /* [E, hidden] */
    PF__SLOT_FINAL_NORM_WEIGHT,/* [hidden] */
    PF__SLOT_FINAL_NORM_BIAS,  /* [hidden] */
    PF__SLOT_LM_HEAD,          /* [vocab, E] */
    PF__SLOT_LM_HEAD_BIAS,     /* [vocab] */
    PF__SLOT_TOKEN_TYPE_EMBED, /* [type_vocab, hidden]: BERT's segment embeddings */
    PF__SLOT_POOLER_WEIGHT,    /* [hidden, hidden]: dense + tanh on each sequence's first token */
    PF__SLOT_POOLER_BIAS,      /* [hidden] */
    PF__SLOT_HEAD_TRANSFORM_WEIGHT, /* [hidden, hidden]: the masked-LM head's dense + act + norm */
    PF__SLOT_HEAD_TRANSFORM_BIAS,   /* [hidden] */
    PF__SLOT_HEAD_NORM_WEIGHT, /* [hidden] */
    PF__SLOT_HEAD_NORM_BIAS,   /* [hidden] */
    PF__SLOT_CLASSIFIER_WEIGHT,/* [num_labels, hidden]: sequence or token classification */
    PF__SLOT_CLASSIFIER_BIAS,  /* [num_labels] */
    PF__SLOT_SPAN_WEIGHT,      /* [2, hidden]: question answering's start and end logits */
    PF__SLOT_SPAN_BIAS,        /* [2] */
    PF__SLOT_REL_BIAS,         /* [rel_table_rows, heads]: a learned score bias per head and bucket
                                  of relative distance, shared by the layers (MPNet, T5) */
    PF__SLOT_REL_EMBED,        /* [2 rel_span, hidden]: DeBERTa's relative position embeddings, projected by
                                  every layer's own query and key weights (disentangled attention) */
    PF__SLOT_REL_EMBED_NORM_WEIGHT, /* [hidden]: their LayerNorm (norm_rel_ebd "layer_norm") */
    PF__SLOT_REL_EMBED_NORM_BIAS,   /* [hidden] */
    /* An encoder-decoder's encoder tower has its own (the slots above being the decoder's): */
    PF__SLOT_ENC_POSITION_EMBED,    /* as PF__SLOT_POSITION_EMBED */
    PF__SLOT_ENC_EMBED_NORM_WEIGHT, /* [hidden] BART's layernorm_embedding */
    PF__SLOT_ENC_EMBED_NORM_BIAS,
    PF__SLOT_ENC_FINAL_NORM_WEIGHT, /* [hidden] */
    PF__SLOT_ENC_FINAL_NORM_BIAS,
    PF__SLOT_ENC_REL_BIAS,          /* as PF__SLOT_REL_BIAS, bucketed both ways */
    PF__SLOT_ENC_TOKEN_EMBED,       /* [src_vocab, E]: an encoder vocabulary of its own (FSMT), whole on
                                       every rank; absent: the towers share PF__SLOT_TOKEN_EMBED */
    PF__SLOT_ENC_TOKEN_TYPE_EMBED,  /* [type_vocab, hidden]: the encoder's segment embeddings (BERT's towers in
                                       an EncoderDecoderModel); PF__SLOT_TOKEN_TYPE_EMBED is then the decoder's */
    /* Image encoders (ViT): patches instead of token ids */
    PF__SLOT_PATCH_WEIGHT,          /* [hidden, channels * patch^2]: the patch embedding (a strided conv) */
    PF__SLOT_PATCH_BIAS,            /* [hidden] */
    PF__SLOT_CLS_TOKEN,             /* [1, hidden]: the class token before the patches */
    PF__SLOT_DIST_TOKEN,            /* [1, hidden]: DeiT's distillation token after it */
    PF__SLOT_DIST_CLASSIFIER_WEIGHT,/* [num_labels, hidden]: DeiT's head on the distillation token */
    PF__SLOT_DIST_CLASSIFIER_BIAS,  /* [num_labels] */
    PF__SLOT_DISCRIMINATOR_WEIGHT,  /* [hidden, hidden]: ELECTRA's discriminator head: dense + act, */
    PF__SLOT_DISCRIMINATOR_BIAS,    /* [hidden] */
    PF__SLOT_DISCRIMINATOR_OUT_WEIGHT, /* [1, hidden]: then one logit per token */
    PF__SLOT_DISCRIMINATOR_OUT_BIAS,   /* [1] */
    PF__SLOT_NEXT_SENTENCE_WEIGHT,  /* [2, hidden]: BERT's next-sentence head on the pooled output */
    PF__SLOT_NEXT_SENTENCE_BIAS,    /* [2] */
    PF__SLOT_CLASSIFIER_DENSE_WEIGHT, /* [hidden, hidden]: a sequence classifier's own dense + the model's
                                       activation on the first token, beside the model's pooler (BigBird's) */
    PF__SLOT_CLASSIFIER_DENSE_BIAS, /* [hidden] */
    PF__SLOT_TASK_TYPE_EMBED,       /* [task_type_vocab, hidden]: ERNIE's task embedding (row 0 added to every token) */
    PF__SLOT_MASK_EMBED,            /* [1, hidden]: XLNet's mask_emb, the query stream's input (generation) */
    /* Transformer-XL's adaptive input and softmax (pf__config.txl_*): cluster i's table is
       PF__SLOT_TOKEN_EMBED for i = 0, else PF__SLOT_TXL_EMBED_1 + i - 1; its width e_i = d_embed /
       div_val^i, its rows the cluster's ids (all of the vocabulary with div_val 1). Whole on every rank. */
    PF__SLOT_TXL_EMBED_1,           /* [ids of cluster 1, e_1] */
    PF__SLOT_TXL_EMBED_2,
    PF__SLOT_TXL_EMBED_3,
    PF__SLOT_TXL_EMBED_PROJ_0,      /* [hidden, e_i]: cluster i's rows into the hidden width (absent: e_0 is it) */
    PF__SLOT_TXL_EMBED_PROJ_1,
    PF__SLOT_TXL_EMBED_PROJ_2,
    PF__SLOT_TXL_EMBED_PROJ_3,
    PF__SLOT_TXL_OUT_WEIGHT_0,      /* [rows of cluster i's table, e_i]: the softmax's (tied: the table, load.c) */
    PF__SLOT_TXL_OUT_WEIGHT_1,
    PF__SLOT_TXL_OUT_WEIGHT_2,
    PF__SLOT_TXL_OUT_WEIGHT_3,
    PF__SLOT_TXL_OUT_BIAS_0,        /* [rows of cluster i's table] */
    PF__SLOT_TXL_OUT_BIAS_1,
    PF__SLOT_TXL_OUT_BIAS_2,
    PF__SLOT_TXL_OUT_BIAS_3,
    PF__SLOT_TXL_OUT_PROJ_0,        /* [e_i, hidden]: the hidden state into cluster i's width (stored [hidden, e_i]) */
    PF__SLOT_TXL_OUT_PROJ_1,
    PF__SLOT_TXL_OUT_PROJ_2,
    PF__SLOT_TXL_OUT_PROJ_3,
    PF__SLOT_TXL_CLUSTER_WEIGHT,    /* [clusters - 1, e_0]: the head's logits of the tail clusters */
    PF__SLOT_TXL_CLUSTER_BIAS,      /* [clusters - 1] */
    PF__SLOT_TXL_R_W_BIAS,          /* [heads * head_dim]: untie_r false: every layer's r_w_bias (load.c), */
    PF__SLOT_TXL_R_R_BIAS,          /* and r_r_bias */
    /* LayoutLM's 2-D positions: each token's box (x0, y0, x1, y1) adds rows x0 and x1 of the x table,
       y0 and y1 of the y table, y1 - y0 of the height table and x1 - x0 of the width table */
    PF__SLOT_X_POSITION_EMBED,      /* [max_2d_positions, hidden] */
    PF__SLOT_Y_POSITION_EMBED,      /* [max_2d_positions, hidden] */
    PF__SLOT_H_POSITION_EMBED,      /* [max_2d_positions, hidden] */
    PF__SLOT_W_POSITION_EMBED,      /* [max_2d_positions, hidden] */
    /* VisualBERT's object regions (the last positions of a row): features x visual_projection^T + bias,
       plus row 0 of the visual position table and the visual token type table's row 1 */
    PF__SLOT_VISUAL_PROJECTION_WEIGHT, /* [hidden, visual_embedding_dim] */
    PF__SLOT_VISUAL_PROJECTION_BIAS,   /* [hidden] */
    PF__SLOT_VISUAL_TOKEN_TYPE_EMBED,  /* [type_vocab_size, hidden] */
    PF__SLOT_VISUAL_POSITION_EMBED,    /* [max_positions, hidden] */
    /* LXMERT's regions (pf__config.two_streams): (norm(features x visual_projection^T + b) + norm(box
       x box_projection^T + b)) / 2, the halves folded into both norms at load */
    PF__SLOT_VISUAL_NORM_WEIGHT,       /* [hidden] */
    PF__SLOT_VISUAL_NORM_BIAS,         /* [hidden] */
    PF__SLOT_BOX_PROJECTION_WEIGHT,    /* [hidden, visual_pos_dim] */
    PF__SLOT_BOX_PROJECTION_BIAS,      /* [hidden] */
    PF__SLOT_BOX_NORM_WEIGHT,          /* [hidden] */
    PF__SLOT_BOX_NORM_BIAS,            /* [hidden] */
    /* LXMERT's answer head on the pooled output: dense to 2 hidden, GELU, norm, then the classifier
       (PF__SLOT_CLASSIFIER_*, [num_labels, 2 hidden]) */
    PF__SLOT_ANSWER_DENSE_WEIGHT,      /* [2 hidden, hidden] */
    PF__SLOT_ANSWER_DENSE_BIAS,        /* [2 hidden] */
    PF__SLOT_ANSWER_NORM_WEIGHT,       /* [2 hidden] */
    PF__SLOT_ANSWER_NORM_BIAS,         /* [2 hidden] */
    /* ProphetNet's decoder (pf__config.ngram > 0): the predict stream's input, in place of a token's */
    PF__SLOT_NGRAM_EMBED,           /* [ngram, hidden]: the first predict stream adds row ngram - 1 */
    /* Reformer's axial positions: position p is [row p / shape[1] of the first | row p % shape[1] of the second] */
    PF__SLOT_AXIAL_ROW_EMBED,       /* [axial_pos_shape[0], axial_pos_embds_dim[0]] (stored [shape[0], 1, dim[0]]) */
    PF__SLOT_AXIAL_COLUMN_EMBED,    /* [axial_pos_shape[1], axial_pos_embds_dim[1]] (stored [1, shape[1], dim[1]]) */
    /* LUKE's entities (the last positions of a row, pf_encode_entities): the entity table's row through
       the dense projection (when entity_emb_size is not hidden), plus the mean of the position table's
       rows at the entity's mention positions, plus the type table's row 0, then their own norm */
    PF__SLOT_ENTITY_EMBED,             /* [entity_vocab_size, entity_emb_size] */
    PF__SLOT_ENTITY_DENSE,             /* [hidden, entity_emb_size] (no bias) */
    PF__SLOT_ENTITY_POSITION_EMBED,    /* [max_positions, hidden] */
    PF__SLOT_ENTITY_TYPE_EMBED,        /* [type_vocab_size, hidden] */
    PF__SLOT_ENTITY_NORM_WEIGHT,       /* [hidden] */
    PF__SLOT_ENTITY_NORM_BIAS,         /* [hidden] */
    /* TAPAS's table (pf_encode_table): token types 1 .. 6 each add their table's row, after the
       segment's (type 0, PF__SLOT_TOKEN_TYPE_EMBED); consecutive, in TapasTokenizer's order */
    PF__SLOT_COLUMN_TYPE_EMBED,        /* [type_vocab_sizes[1], hidden]: the column (1..: the table's; 0 outside) */
    PF__SLOT_ROW_TYPE_EMBED,           /* [type_vocab_sizes[2], hidden]: the row (1..: the body's; 0 outside) */
    PF__SLOT_PREV_LABEL_TYPE_EMBED,    /* [type_vocab_sizes[3], hidden]: the previous answer's cells (SQA) */
    PF__SLOT_COLUMN_RANK_TYPE_EMBED,   /* [type_vocab_sizes[4], hidden]: the cell's rank in its column */
    PF__SLOT_INV_COLUMN_RANK_TYPE_EMBED, /* [type_vocab_sizes[5], hidden]: the rank from the other end */
    PF__SLOT_NUMERIC_RELATION_TYPE_EMBED, /* [type_vocab_sizes[6], hidden]: the cell against the question's numbers */
    /* TapasForQuestionAnswering's head, read on the host from the encoding (encode.c's pf__table_head) */
    PF__SLOT_CELL_SELECTION_WEIGHT,    /* [hidden]: output_weights, a token's cell logit */
    PF__SLOT_CELL_SELECTION_BIAS,      /* [1]: output_bias (stored 0-d) */
    PF__SLOT_COLUMN_SELECTION_WEIGHT,  /* [hidden]: column_output_weights, a token's column logit */
    PF__SLOT_COLUMN_SELECTION_BIAS,    /* [1]: column_output_bias (stored 0-d) */
    PF__SLOT_AGGREGATION_WEIGHT,       /* [num_aggregation_labels, hidden]: aggregation_classifier, on the pooled output */
    PF__SLOT_AGGREGATION_BIAS,         /* [num_aggregation_labels] */
    /* Dual encoders (CLIP): */
    PF__SLOT_POOLER_NORM_WEIGHT,    /* [hidden]: a norm of the pooled token (CLIP vision's post_layernorm) */
    PF__SLOT_POOLER_NORM_BIAS,      /* [hidden] */
    PF__SLOT_PROJECTION,            /* [projection_dim, hidden]: the pooled output into the shared space, no bias */
    PF__SLOT_DOC_PROJECTION,        /* [projection_dim, hidden]: RetriBERT's second one, of documents (the first: of
                                       questions), no bias */
    PF__SLOT_LOGIT_SCALE,           /* [1]: the dual model's log temperature (read at load, never on a rank) */
    PF__SLOT_LM_HEAD_EXTRA,         /* [hidden - E, vocab]: MobileBERT's decoder columns beyond the embedding's:
                                       the LM head is [E | extra^T] per vocabulary row, joined at load */
    /* Speech front ends, run on the host (speech_frontend.c reads these rows; never on a rank). In
       their patterns %d counts the front end's convolutions, not the blocks. Which of them a
       checkpoint must hold follows config.json (conv_bias, feat_extract_norm, ...): the front end
       decides, the rows' need says only what is always there. */
    PF__SLOT_FIRST_FRONT_END,
    PF__SLOT_FRONT_CONV_WEIGHT = PF__SLOT_FIRST_FRONT_END, /* [out, in, kernel]: convolution %d (Wav2Vec2's
                                       feature encoder, Speech2Text's subsampler) */
    PF__SLOT_FRONT_CONV_BIAS,       /* [out] */
    PF__SLOT_FRONT_CONV_NORM_WEIGHT,/* [out]: the norm after convolution %d (Wav2Vec2) */
    PF__SLOT_FRONT_CONV_NORM_BIAS,  /* [out] */
    PF__SLOT_FEATURE_NORM_WEIGHT,   /* [conv_dim[-1]]: the norm before the feature projection (Wav2Vec2) */
    PF__SLOT_FEATURE_NORM_BIAS,     /* [conv_dim[-1]] */
    PF__SLOT_FEATURE_PROJECTION_WEIGHT, /* [hidden, conv_dim[-1]] */
    PF__SLOT_FEATURE_PROJECTION_BIAS,   /* [hidden] */
    PF__SLOT_POS_CONV_WEIGHT,       /* [hidden, hidden / groups, kernel]: the positional convolution, saved
                                       plain, */
    PF__SLOT_POS_CONV_WEIGHT_G,     /* [1, 1, kernel]: or weight-normalised, as g (the i-th spelling of g */
    PF__SLOT_POS_CONV_WEIGHT_V,     /* [hidden, hidden / groups, kernel]: goes with the i-th of v) */
    PF__SLOT_POS_CONV_BIAS,         /* [hidden] */
    PF__SLOT_MEL_CONV1_WEIGHT,      /* [hidden, num_mel_bins, 3]: Whisper's first convolution */
    PF__SLOT_MEL_CONV1_BIAS,        /* [hidden] */
    PF__SLOT_MEL_CONV2_WEIGHT,      /* [hidden, hidden, 3]: its second (stride 2) */
    PF__SLOT_MEL_CONV2_BIAS,        /* [hidden] */
    PF__SLOT_FIRST_LAYER,
    PF__SLOT_ATTN_NORM_WEIGHT = PF__SLOT_FIRST_LAYER, /* [hidden] */
    PF__SLOT_ATTN_NORM_BIAS,   /* [hidden] */
    PF__SLOT_QKV_FUSED_WEIGHT, /* [Q + 2 KV, hidden], rows in the policy's qkv_layout */
    PF__SLOT_QKV_FUSED_BIAS,   /* [Q + 2 KV] */
    PF__SLOT_Q_WEIGHT,         /* [Q, hidden] */
    PF__SLOT_Q_BIAS,           /* [Q] */
    PF__SLOT_K_WEIGHT,         /* [KV, hidden] */
    PF__SLOT_K_BIAS,           /* [KV] */
    PF__SLOT_V_WEIGHT,         /* [KV, hidden] */
    PF__SLOT_V_BIAS,           /* [KV] */
    /* A norm of q and of k before the rotary (qk-norm), as the config's qk_norm says (PF__QK_NORM_*): */
    PF__SLOT_Q_NORM_WEIGHT,    /* [head_dim]: one gain for every query head (PF__QK_NORM_HEAD); [Q] (_PROJECTION, qk_norm_per_head) */
    PF__SLOT_K_NORM_WEIGHT,    /* [head_dim]: the same for every key head; [KV] (_PROJECTION, qk_norm_per_head) */
    PF__SLOT_Q_NORM_BIAS,      /* [head_dim]: PF__QK_NORM_HEAD's LayerNorm bias, shared by the heads (Phi's qk_layernorm) */
    PF__SLOT_K_NORM_BIAS,      /* [head_dim]: the same for the key heads */
    /* Multi-head latent attention (DeepSeek V2/V3; config.kv_lora_rank > 0), Q's heads being
       qk_nope_head_dim + qk_rope_head_dim wide (head_dim), each its nope part then its rope part: */
    PF__SLOT_Q_A_WEIGHT,       /* [q_lora_rank, hidden]: low-rank q's down projection, whole on every rank */
    PF__SLOT_Q_A_BIAS,         /* [q_lora_rank] */
    PF__SLOT_Q_A_NORM_WEIGHT,  /* [q_lora_rank]: the compressed q's RMSNorm gain */
    PF__SLOT_Q_B_WEIGHT,       /* [Q, q_lora_rank]: its up projection, split with the heads */
    PF__SLOT_KV_A_WEIGHT,      /* [kv_lora_rank + qk_rope_head_dim, hidden]: the latent, then the rotary key
                                  every head shares; whole on every rank */
    PF__SLOT_KV_A_BIAS,        /* [kv_lora_rank + qk_rope_head_dim] */
    PF__SLOT_KV_A_NORM_WEIGHT, /* [kv_lora_rank]: the latent's RMSNorm gain */
    PF__SLOT_KV_B_WEIGHT,      /* [heads * (qk_nope_head_dim + v_head_dim), kv_lora_rank]: per head its
                                  key rows (nope part) then its value rows, split with the heads */
    PF__SLOT_ATTN_OUT_WEIGHT,  /* [hidden, heads * value head width (v_head_dim, else head_dim)] */
    PF__SLOT_ATTN_OUT_BIAS,    /* [hidden] */
    PF__SLOT_MLP_NORM_WEIGHT,  /* [hidden] */
    PF__SLOT_MLP_NORM_BIAS,    /* [hidden] */
    PF__SLOT_MLP_GATE_WEIGHT,  /* [I, hidden] */
    PF__SLOT_MLP_GATE_BIAS,    /* [I] */
    PF__SLOT_MLP_UP_WEIGHT,    /* [I, hidden] */
    PF__SLOT_MLP_UP_BIAS,      /* [I] */
    PF__SLOT_MLP_DOWN_WEIGHT,  /* [hidden, I] */
    PF__SLOT_MLP_DOWN_BIAS,    /* [hidden] */
    PF__SLOT_MLP_GATE_UP_WEIGHT, /* [2 I, hidden]: gate's rows, then up's (Phi-3's fused gate_up_proj) */
    PF__SLOT_MLP_GATE_UP_BIAS,   /* [2 I] */
    /* A mixture-of-experts layer's (pf__config.layer_sparse), in place of the MLP's: */
    PF__SLOT_ROUTER_WEIGHT,      /* [experts, hidden]: the router, whole on every rank */
    PF__SLOT_EXPERTS_GATE_UP,    /* [experts * 2 I_e, hidden]: expert e's gate rows, then its up rows */
    PF__SLOT_EXPERTS_DOWN,       /* [experts * hidden, I_e]: expert e's down projection */
    PF__SLOT_SHARED_GATE_WEIGHT, /* [I_s, hidden]: the shared expert every token runs (Qwen2-MoE), split as a dense MLP */
    PF__SLOT_SHARED_GATE_BIAS,   /* [I_s] (no family has it: the stack's bias pair) */
    PF__SLOT_SHARED_UP_WEIGHT,   /* [I_s, hidden] */
    PF__SLOT_SHARED_UP_BIAS,     /* [I_s] */
    PF__SLOT_SHARED_DOWN_WEIGHT, /* [hidden, I_s] */
    PF__SLOT_SHARED_EXPERT_GATE, /* [1, hidden]: the shared expert's output times sigmoid(x w), whole on every rank */
    PF__SLOT_ROUTER_CHOICE_BIAS, /* [experts]: added to the scores to choose experts, not to weigh them (DeepSeek V3's
                                    e_score_correction_bias); read on the host (pf_model.router_choice_bias) */
    PF__SLOT_ROUTER_BIAS,        /* [experts]: the router's bias (gpt-oss), whole on every rank */
    PF__SLOT_EXPERTS_GATE_UP_BIAS, /* [experts * 2 I_e]: expert e's gate bias, then its up bias */
    PF__SLOT_EXPERTS_DOWN_BIAS,  /* [experts * hidden]: expert e's down bias, added by the rank holding its first columns */
    PF__SLOT_ATTN_SINKS,         /* [heads]: a learned logit per head that joins its softmax's denominator (gpt-oss) */
    PF__SLOT_SHARED_GATE_UP_WEIGHT, /* [2 I_s, hidden]: the shared expert's gate rows, then its up rows (GraniteMoeShared's input_linear) */
    PF__SLOT_SHARED_GATE_UP_BIAS,   /* [2 I_s] (no family has it: the stack's bias pair) */
    /* Norms of a sublayer's output before its residual add ("sandwich" norms: Gemma 2; OLMo 2's,
       which has no pre-norms), each used where present, independent of the pre-norms: */
    PF__SLOT_ATTN_POST_NORM_WEIGHT, /* [hidden] */
    PF__SLOT_ATTN_POST_NORM_BIAS,   /* [hidden] */
    PF__SLOT_MLP_POST_NORM_WEIGHT,  /* [hidden] */
    PF__SLOT_MLP_POST_NORM_BIAS,    /* [hidden] */
    /* A decoder block's attention over the encoder's output (encoder-decoders): */
    PF__SLOT_CROSS_NORM_WEIGHT,/* [hidden] */
    PF__SLOT_CROSS_NORM_BIAS,  /* [hidden] */
    PF__SLOT_CROSS_Q_WEIGHT,   /* [Q, hidden] */
    PF__SLOT_CROSS_Q_BIAS,     /* [Q] */
    PF__SLOT_CROSS_K_WEIGHT,   /* [KV, hidden] */
    PF__SLOT_CROSS_K_BIAS,     /* [KV] */
    PF__SLOT_CROSS_V_WEIGHT,   /* [KV, hidden] */
    PF__SLOT_CROSS_V_BIAS,     /* [KV] */
    PF__SLOT_CROSS_OUT_WEIGHT, /* [hidden, Q] */
    PF__SLOT_CROSS_OUT_BIAS,   /* [hidden] */
    /* DeBERTa's own projections of the relative embeddings (share_att_key false; v1's pos_q_proj, pos_proj): */
    PF__SLOT_POS_Q_WEIGHT,     /* [Q, hidden]: for the p2c term, in place of the query weight */
    PF__SLOT_POS_Q_BIAS,       /* [Q] */
    PF__SLOT_POS_K_WEIGHT,     /* [KV, hidden]: for the c2p term, in place of the key weight */
    PF__SLOT_POS_K_BIAS,       /* [KV] (zeros where the query's has one and it has none: v1) */
    /* Longformer's projections of the tokens with global attention (pf__config.local_attention): a
       global token's query, and the keys and values every token gives it, split with the heads */
    PF__SLOT_Q_GLOBAL_WEIGHT,  /* [Q, hidden] */
    PF__SLOT_Q_GLOBAL_BIAS,    /* [Q] */
    PF__SLOT_K_GLOBAL_WEIGHT,  /* [KV, hidden] */
    PF__SLOT_K_GLOBAL_BIAS,    /* [KV] */
    PF__SLOT_V_GLOBAL_WEIGHT,  /* [KV, hidden] */
    PF__SLOT_V_GLOBAL_BIAS,    /* [KV] */
    /* LUKE's entity-aware attention (use_entity_aware_attention): the queries of a word for the
       entities' keys (w2e), of an entity for the words' (e2w) and for the entities' (e2e), split
       with the heads as the query is */
    PF__SLOT_W2E_Q_WEIGHT,     /* [Q, hidden] */
    PF__SLOT_W2E_Q_BIAS,       /* [Q] */
    PF__SLOT_E2W_Q_WEIGHT,     /* [Q, hidden] */
    PF__SLOT_E2W_Q_BIAS,       /* [Q] */
    PF__SLOT_E2E_Q_WEIGHT,     /* [Q, hidden] */
    PF__SLOT_E2E_Q_BIAS,       /* [Q] */
    /* MobileBERT's bottleneck blocks (bottleneck_width B > 0): the block works at width B between
       a projection in and one out; its attention output, MLPs and their norms are [B] wide */
    PF__SLOT_BOTTLENECK_IN_WEIGHT,      /* [B, hidden]: the block's input into its residual stream, */
    PF__SLOT_BOTTLENECK_IN_BIAS,        /* [B] */
    PF__SLOT_BOTTLENECK_IN_NORM_WEIGHT, /* [B]: then normed */
    PF__SLOT_BOTTLENECK_IN_NORM_BIAS,   /* [B] */
    PF__SLOT_BOTTLENECK_QK_WEIGHT,      /* [B, hidden]: the query's and key's shared input (key_query_shared_bottleneck), */
    PF__SLOT_BOTTLENECK_QK_BIAS,        /* [B]  normed by the two below: folded into the q and k weights at load */
    PF__SLOT_BOTTLENECK_QK_NORM_WEIGHT, /* [B] */
    PF__SLOT_BOTTLENECK_QK_NORM_BIAS,   /* [B] */
    PF__SLOT_BOTTLENECK_OUT_WEIGHT,     /* [hidden, B]: the block's stream back out, added to its input, */
    PF__SLOT_BOTTLENECK_OUT_BIAS,       /* [hidden] */
    PF__SLOT_BOTTLENECK_OUT_NORM_WEIGHT,/* [hidden]: and normed */
    PF__SLOT_BOTTLENECK_OUT_NORM_BIAS,  /* [hidden] */
    PF__SLOT_FFN1_UP_WEIGHT,   /* [I, B]: the first of the MLPs stacked before the block's own */
    PF__SLOT_FFN1_UP_BIAS,     /* [I]     (num_feedforward_networks - 1 of them), each post-norm: */
    PF__SLOT_FFN1_DOWN_WEIGHT, /* [B, I]  x = norm(x + down(act(up(x)))) */
    PF__SLOT_FFN1_DOWN_BIAS,   /* [B] */
    PF__SLOT_FFN1_NORM_WEIGHT, /* [B] */
    PF__SLOT_FFN1_NORM_BIAS,   /* [B] */
    PF__SLOT_FFN2_UP_WEIGHT, PF__SLOT_FFN2_UP_BIAS, PF__SLOT_FFN2_DOWN_WEIGHT, PF__SLOT_FFN2_DOWN_BIAS,
    PF__SLOT_FFN2_NORM_WEIGHT, PF__SLOT_FFN2_NORM_BIAS, /* the second, as the first */
    PF__SLOT_FFN3_UP_WEIGHT, PF__SLOT_FFN3_UP_BIAS, PF__SLOT_FFN3_DOWN_WEIGHT, PF__SLOT_FFN3_DOWN_BIAS,
    PF__SLOT_FFN3_NORM_WEIGHT, PF__SLOT_FFN3_NORM_BIAS, /* the third */
    /* ConvBERT's span-based dynamic convolution beside the attention (conv_kernel > 0): as many
       heads as the attention's, as wide (Q = heads * head_dim), their outputs after the attention's
       as the output projection's inputs: */
    PF__SLOT_CONV_DEPTHWISE_WEIGHT, /* [hidden, conv_kernel]: the key's depthwise convolution over the tokens, */
    PF__SLOT_CONV_KEY_WEIGHT,       /* [Q, hidden]: then its pointwise one (key_conv_attn_layer), */
    PF__SLOT_CONV_KEY_BIAS,         /* [Q] */
    PF__SLOT_CONV_KERNEL_WEIGHT,    /* [heads * conv_kernel, Q]: each head's kernel logits from key * query */
    PF__SLOT_CONV_KERNEL_BIAS,      /* [heads * conv_kernel] */
    PF__SLOT_CONV_VALUE_WEIGHT,     /* [Q, hidden]: the values the kernels weigh (conv_out_layer) */
    PF__SLOT_CONV_VALUE_BIAS,       /* [Q] */
    PF__SLOT_ATTN_JOINED_OUT_WEIGHT,/* [hidden, 2 Q]: the output projection as the file holds it, split at load
                                       into PF__SLOT_ATTN_OUT_WEIGHT (its first Q inputs) and: */
    PF__SLOT_CONV_OUT_WEIGHT,       /* [hidden, Q]: the convolution heads' inputs */
    /* Funnel's relative attention (pf__config.funnel; its q, k, v in PF__SLOT_CROSS_Q_* ... since its
       queries are other rows than its keys after a pooling, CROSS_Q_BIAS holding r_w_bias): */
    PF__SLOT_FUNNEL_R_KERNEL,       /* [Q, hidden]: the sinusoidal relative positions into each head (r_kernel) */
    PF__SLOT_FUNNEL_R_R_BIAS,       /* [Q]: the query's bias for the position term */
    PF__SLOT_FUNNEL_R_S_BIAS,       /* [Q]: the query's bias for the segment term */
    PF__SLOT_FUNNEL_SEG_EMBED,      /* [2, Q]: each head's vectors of a key in another segment (row 0) or the query's (row 1) */
    /* ProphetNet's n-gram self-attention (pf__config.ngram > 0): each query's own relative bias per
       bucket and head, a projection of its row (relative_pos_embeddings), whole on every rank: */
    PF__SLOT_NGRAM_REL_WEIGHT,      /* [rel_buckets * heads, hidden]: output bucket * heads + head */
    PF__SLOT_NGRAM_REL_BIAS,        /* [rel_buckets * heads] */
    /* Built on each rank by stacking the slices above (see pf__stacks), never read from files: */
    PF__SLOT_QKV_WEIGHT,       /* [q_r | k_r | v_r, hidden]: one matmul for the rank's heads */
    PF__SLOT_QKV_BIAS,
    PF__SLOT_MLP_IN_WEIGHT,    /* [gate_r | up_r, hidden], or up_r alone */
    PF__SLOT_MLP_IN_BIAS,
    PF__SLOT_SHARED_IN_WEIGHT, /* [gate_r | up_r, hidden] of the shared expert */
    PF__SLOT_SHARED_IN_BIAS,
    PF__SLOT_POS_QK_WEIGHT,    /* [q_r | k_r, hidden] of the position projections */
    PF__SLOT_POS_QK_BIAS,
    PF__SLOT_QKV_GLOBAL_WEIGHT,/* [q_r | k_r | v_r, hidden] of Longformer's global projections */
    PF__SLOT_QKV_GLOBAL_BIAS,
    PF__SLOT_ENTITY_Q_WEIGHT,  /* [w2e_r | e2w_r | e2e_r, hidden] of LUKE's entity-aware queries */
    PF__SLOT_ENTITY_Q_BIAS,
    PF__SLOT_COUNT
} pf__slot;
#define PF__LAYER_SLOTS (PF__SLOT_COUNT - PF__SLOT_FIRST_LAYER)

/* Rank weights stacked from several tensors' slices, in this order (absent ones skipped). */
struct pf__stack {
    pf__slot target;
    pf__slot members[4];
    int num_members;
};
#ifndef PF_AMALGAMATION /* the shipped file defines it before any reader */
extern PF_PRIVATE const struct pf__stack pf__stacks[];
extern PF_PRIVATE const size_t pf__stacks_count;
#endif

/* PF__LAYOUT_ROW: a vector stored as [1, n] (BART's final_logits_bias); read as PF__LAYOUT_VECTOR.
   PF__LAYOUT_SQUEEZED: [1, ..., 1, rows, cols] (ViT's class token, position table), or [cols] for
   one row (CLIP's class_embedding); read as OUT_IN.
   PF__LAYOUT_CONV: [out, channels, kh, kw] (ViT's patch embedding); read as OUT_IN [out, c kh kw].
   PF__LAYOUT_HEADS: [heads, head_dim] (Cohere's per-head qk-norm gains); read as the VECTOR of its
   heads * head_dim values, head after head.
   PF__LAYOUT_EXPERTS: [experts, rows / experts, cols], every expert's [out, in] (transformers 5's fused
   experts.gate_up_proj, Granite-MoE's input_linear); read as OUT_IN [rows, cols].
   PF__LAYOUT_EXPERTS_IN_OUT: [experts, in, out], every expert's [in, out] (gpt-oss's gate_up_proj and
   down_proj); read as OUT_IN [experts * out, in], each expert transposed.
   PF__LAYOUT_EXPERT_VECTORS: [experts, n] (gpt-oss's expert biases); read as the VECTOR of its
   experts * n values, expert after expert.
   PF__LAYOUT_PER_EXPERT: one [out, in] tensor per expert and part, the pattern's second %d the
   expert, its parts separated by '|' (gate_proj|up_proj): expert 0's parts, then expert 1's ...;
   read as OUT_IN, the pieces joined without a copy (pf__source.pieces).
   PF__LAYOUT_PER_HEAD: one [head_dim] vector per head, the pattern's second %d the head (StableLM 2's
   q_layernorm.norms.N.weight); read as the VECTOR of heads * head_dim values, the pieces joined
   without a copy.
   PF__LAYOUT_COLUMN: a vector stored as [n, 1] (ConvBERT's separable convolution's bias); read as VECTOR.
   PF__LAYOUT_GROUPED_IN_OUT: [groups, in / groups, out / groups], each group's [in, out] (ConvBERT's
   GroupedLinearLayer: output block g of x's input block g times weight[g]), groups from the slot's
   config field; with 1 group an nn.Linear's [out, in]. Read as OUT_IN, block-diagonal as GROUPED.
   PF__LAYOUT_HEADS_IN_OUT: [in, heads, head_dim] (Funnel's r_kernel); read as IN_OUT [in, heads * head_dim].
   PF__LAYOUT_HEADS_ROWS: [n, heads, head_dim] (Funnel's seg_embed); read as OUT_IN [n, heads * head_dim].
   PF__LAYOUT_GROUPED: [out, in / groups, 1], a 1-D convolution of kernel 1 in `groups` groups
   (SqueezeBERT's conv1d; groups from the slot's config field, pf__slot_groups): output o reads
   only the inputs of its group o / (out / groups). Read as OUT_IN, the block-diagonal [out, in]
   with zeros outside the groups, so that the ranks split it as the dense layer it stands for. */
typedef enum { PF__LAYOUT_OUT_IN, PF__LAYOUT_IN_OUT, PF__LAYOUT_VECTOR, PF__LAYOUT_ROW, PF__LAYOUT_SQUEEZED, PF__LAYOUT_CONV, PF__LAYOUT_HEADS,
               PF__LAYOUT_EXPERTS, PF__LAYOUT_PER_EXPERT, PF__LAYOUT_EXPERTS_IN_OUT, PF__LAYOUT_EXPERT_VECTORS,
               PF__LAYOUT_PER_HEAD, PF__LAYOUT_GROUPED, PF__LAYOUT_COLUMN, PF__LAYOUT_GROUPED_IN_OUT,
               PF__LAYOUT_HEADS_IN_OUT, PF__LAYOUT_HEADS_ROWS } pf__layout;

typedef enum {
    PF__SPLIT_NONE,
    PF__SPLIT_QKV_COLUMNS,
    PF__SPLIT_HEAD_COLUMNS,
    PF__SPLIT_KV_COLUMNS,
    PF__SPLIT_MLP_COLUMNS,
    PF__SPLIT_GATE_UP_COLUMNS, /* a fused [gate | up]: the rank's gate columns, then the same up columns */
    PF__SPLIT_HEAD_ROWS,       /* input features, value head by value head (pf__value_head_dim) */
    PF__SPLIT_MLP_ROWS,
    PF__SPLIT_VOCAB,
    PF__SPLIT_LATENT_KV_COLUMNS, /* kv_b_proj's rows: qk_nope_head_dim + v_head_dim per query head */
    /* experts stacked expert after expert: each rank the rows of its experts (pf__share.experts;
       expert parallelism: all of each one's), and of each its expert columns (expert slicing: all
       experts, each split as a dense MLP is) */
    PF__SPLIT_EXPERTS_GATE_UP, /* [experts * 2 I, hidden]: the columns of gate and of up */
    PF__SPLIT_EXPERTS_DOWN,    /* [experts * hidden, I]: the input columns */
    PF__SPLIT_SHARED_COLUMNS,  /* the shared expert's output features (pf__share.shared_begin, .shared_width) */
    PF__SPLIT_SHARED_ROWS,     /* its input features */
    PF__SPLIT_HEADS,           /* [heads]: one value per query head, the rank's heads' */
    PF__SPLIT_EXPERTS_OUTPUT,  /* [experts * hidden]: the rank's experts' whole rows (the down projection's bias) */
    PF__SPLIT_SHARED_GATE_UP_COLUMNS /* its fused [gate | up]: the rank's columns of each half */
} pf__split;

/* Whether a tensor must be in the file: the PF__IF_ needs follow a config field (present exactly
   when it is true). */
typedef enum {
    PF__OPTIONAL,
    PF__REQUIRED,
    PF__IF_ATTENTION_BIAS,
    PF__IF_MLP_BIAS,
    PF__IF_FINAL_NORM,
    PF__IF_PROJECTION,
    PF__IF_GATED,
    PF__IF_DECODER,     /* present exactly when an encoder-decoder has its decoder (not "...EncoderModel") */
    PF__IF_EMBED_NORM,  /* present exactly when the config field embed_norm is 1 (BART's layernorm_embedding) */
    PF__POSITION_TABLE, /* required with learned positions; with sinusoidal ones optional (a saved copy
                           of the sinusoid, used as it is; computed when absent) */
    PF__IF_DISTILLATION, /* present exactly when the family has a distillation token (DeiT) */
    PF__IF_WITH_PROJECTION, /* present exactly when the config field with_projection is 1 (CLIP's towers) */
    PF__IF_QK_NORM, /* present exactly when the config field qk_norm is not PF__QK_NORM_NONE (Cohere's use_qk_norm) */
    PF__IF_Q_LORA,  /* present exactly when the config field q_lora_rank is above 0 (latent attention's low-rank q) */
    PF__IF_NO_Q_LORA, /* present exactly when it is 0 (q_proj straight from the hidden state) */
    PF__IF_POSITION_BIASED, /* present exactly when the config field position_biased_input is 1 (DeBERTa's
                               absolute positions beside its relative ones) */
    PF__IF_REL_EMBED_NORM,  /* present exactly when the config field rel_embed_norm is 1 (DeBERTa's norm_rel_ebd) */
    PF__IF_POS_PROJ,        /* present exactly when the disentangled terms project positions with their own weights
                               (share_att_key 0) */
    PF__IF_SPARSE_LAYER, /* present exactly in the layers with experts (pf__config.layer_sparse) */
    PF__IF_DENSE_LAYER,  /* present exactly in the layers without (a dense MLP) */
    PF__IF_SEPARATE_VOCAB, /* present exactly when the config field shared_vocab is 0 (Marian's
                              share_encoder_decoder_embeddings false: each tower its vocabulary) */
    PF__IF_TASK_ID,        /* present exactly when the config field use_task_id is 1 (ERNIE's) */
    PF__IF_SHARED_EXPERT,  /* present exactly in the layers with experts when shared_intermediate_size is above 0 */
    PF__IF_LM_HEAD_BIAS    /* present exactly when the config field lm_head_bias is 1 (PhiMoE's) */
} pf__need;
/* The needs that follow the layer (whether it has experts) rather than the config alone. */
static inline int pf__need_follows_layer(pf__need need) {
    return need == PF__IF_SPARSE_LAYER || need == PF__IF_DENSE_LAYER || need == PF__IF_SHARED_EXPERT;
}

typedef enum { PF__KIND_DECODER, PF__KIND_ENCODER, PF__KIND_SEQ2SEQ, PF__KIND_DUAL } pf__kind;

typedef enum {
    PF__NORM_LAYER, PF__NORM_RMS,
    PF__NORM_RMS_PLUS_ONE, /* RMSNorm whose gain is 1 + w, added in fp32 (Gemma) */
    PF__NORM_ELEMENTWISE   /* x * w + b, no statistics (MobileBERT's NoNorm); eps unused */
} pf__norm;

typedef enum { PF__SINUSOID_F32, PF__SINUSOID_F64, PF__SINUSOID_T2T } pf__sinusoid_kind; /* pf__sinusoid_table */

typedef enum {
    PF__POS_LEARNED,
    PF__POS_ROTARY_HALVES,
    PF__POS_ROTARY_PAIRS,
    PF__POS_ALIBI,
    PF__POS_SINUSOIDAL,
    PF__POS_RELATIVE
} pf__positions;

typedef enum { PF__QKV_BLOCKS, PF__QKV_PER_HEAD, PF__QKV_CODEGEN, PF__QKV_GROUPED } pf__qkv_layout;

typedef enum { PF__MLP_PLAIN, PF__MLP_GATED, PF__MLP_GATED_IF_NAMED } pf__mlp;

/* How q and k are normed after their projection, before the rotary (pf__config.qk_norm), by a
   norm of the family's kind (its pf__arch.norm), with the gains of PF__SLOT_Q_NORM_WEIGHT and
   PF__SLOT_K_NORM_WEIGHT (and, per head only, the biases of PF__SLOT_Q_NORM_BIAS and
   PF__SLOT_K_NORM_BIAS [head_dim] where present: Phi's qk_layernorm):
   PF__QK_NORM_NONE  no such norm;
   PF__QK_NORM_HEAD  each head over its head_dim values, one gain [head_dim] shared by the heads
                     (Qwen3; Gemma 3 with its RMSNorm kind);
   PF__QK_NORM_PROJECTION  an RMSNorm of q over the whole projection (num_heads * head_dim values)
                     and of k over its (num_kv_heads * head_dim), gains [Q] and [KV] split with the
                     heads (OLMo 2): the ranks' sums of squares are all-reduced, each key/value
                     head counted once (by the rank holding its first query head).
   With _HEAD, pf__config.qk_norm_per_head gives each head a gain of its own: [Q] and [KV], head
   after head, split with the heads as _PROJECTION's (a replicated key/value head's gains go with
   it) (Cohere's use_qk_norm, Command R+). StableLM 2 12B's per-head gains (one tensor a head,
   q_layernorm.norms.<h>.weight) are still to come. */
typedef enum { PF__QK_NORM_NONE, PF__QK_NORM_HEAD, PF__QK_NORM_PROJECTION } pf__qk_norm;

typedef enum { PF__ACT_GELU_TANH, PF__ACT_GELU_ERF, PF__ACT_RELU, PF__ACT_SILU, PF__ACT_TANH, PF__ACT_QUICK_GELU } pf__activation;

typedef enum { PF__ROPE_DEFAULT, PF__ROPE_LINEAR, PF__ROPE_DYNAMIC, PF__ROPE_LLAMA3, PF__ROPE_YARN, PF__ROPE_LONGROPE } pf__rope_type;
#define PF__MAX_ROPE_FACTORS 512 /* LongRoPE's short and long factors: one per rotary frequency */
#define PF__NEEDED PF_POLICY_NEEDED
#define PF__FUNNEL_MAX_BLOCKS 8 /* Funnel's blocks (block_sizes' entries) a config may have */
#define PF__TXL_MAX_CLUSTERS 4   /* Transformer-XL's adaptive clusters (cutoffs + 1) a config may have */
#define PF__REFORMER_MAX_LAYERS 64    /* Reformer's attn_layers entries a config may have */
#define PF__REFORMER_MAX_FACTORS 8    /* num_buckets' factors a config may have */
#define PF__REFORMER_MAX_ROTATION 1024 /* half the sum of num_buckets' factors, at most */

typedef enum {
#define PF_ARCH(id, ...) PF__ARCH_##id,
#include "policies.inc"
    PF__ARCH_COUNT
} pf__arch_id;

typedef struct pf__arch {
    const char *model_type;
    pf__kind kind;
    pf__norm norm;
    pf__positions positions;
    pf__qkv_layout qkv_layout;
    pf__mlp mlp;
    int mlp_ratio;
    const char *activation_key, *activation_default;
    int tied_lm_head;
} pf__arch;

/* Policies registered at run time (pf_register_policy) at once, at most: architecture ids
   PF__ARCH_COUNT + 0 .. PF__MAX_REGISTERED - 1, whose traits are written into pf__archs under
   pf__policy_lock. A fixed array, so that a model reads its row without a lock while other
   threads register. */
#define PF__MAX_REGISTERED 128
#ifndef PF_AMALGAMATION /* the shipped file defines it before any reader */
extern PF_PRIVATE pf__arch pf__archs[PF__ARCH_COUNT + PF__MAX_REGISTERED];
#endif

typedef struct pf__arch_alias { pf__arch_id arch; const char *model_type; } pf__arch_alias;
#ifndef PF_AMALGAMATION /* the shipped file defines it before any reader */
extern PF_PRIVATE const pf__arch_alias pf__arch_aliases[];
extern PF_PRIVATE const size_t pf__arch_aliases_count;
#endif

/* PF_ARCH_TEXT_TOWER rows (text 1: arch's tensors under prefix) and PF_ARCH_OTHER_TOWER rows (text 0),
   ended by a row whose model_type is "" */
typedef struct pf__text_tower { pf__arch_id arch; const char *model_type, *prefix; int text; } pf__text_tower;
#ifndef PF_AMALGAMATION /* the shipped file defines it before any reader */
extern PF_PRIVATE const pf__text_tower pf__text_towers[];
#endif

typedef struct pf__arch_activation { pf__arch_id arch; const char *name; pf__activation activation; } pf__arch_activation;

typedef struct pf__arch_layer_types { pf__arch_id arch; const char *key; int needed; } pf__arch_layer_types;

typedef struct pf__arch_null { pf__arch_id arch; const char *key; double value; } pf__arch_null;

typedef struct pf__arch_prefix { pf__arch_id arch; const char *prefix; } pf__arch_prefix;

typedef struct pf__arch_tensor {
    pf__arch_id arch;
    pf__slot slot;
    const char *pattern;
    pf__layout layout;
    pf__split split;
    pf__need need;
    int encoder; /* 1: a block of an encoder-decoder's encoder tower (PF_ARCH_ENCODER_TENSOR) */
} pf__arch_tensor;

/* Config keys whose other values we do not implement: refused unless absent, null or `value`. */
typedef struct pf__arch_require { pf__arch_id arch; const char *key; double value; } pf__arch_require;

typedef struct pf__arch_buffer { pf__arch_id arch; const char *pattern; } pf__arch_buffer;

/* TAPAS's token types a token has (type_vocab_sizes): segment, column, row, previous label, column
   rank, inverse column rank, numeric relation, as TapasTokenizer gives them. */
#define PF__TABLE_TYPES 7

/* Hyperparameters, whatever the config.json keys are called. */
typedef struct pf__config {
    pf__arch_id arch;
    char model_type[64];            /* config.json's: the row's, or one of its aliases */
    char text_tower_of[32];         /* a multimodal checkpoint's model_type whose text model this is (PF_ARCH_TEXT_TOWER), or "" */
    char class_name[96];            /* the transformers class config.json's "architectures" names first; "" if none */
    int hidden_size, num_heads, num_kv_heads, num_layers, vocab_size, max_positions, intermediate_size;
    int encoder_layers;             /* encoder-decoders: blocks 0..encoder_layers-1 are the encoder
                                       tower's, the rest (num_layers in all) the decoder's */
    int decoder_layers;             /* encoder-decoders, as read; 0: as many as the encoder (T5) */
    int src_vocab_size;             /* an encoder vocabulary of its own (FSMT's src_vocab_size); 0: vocab_size */
    int shared_vocab;               /* 0: the towers have vocabularies of their own (Marian's
                                       share_encoder_decoder_embeddings false): vocab_size is then
                                       decoder_vocab_size, the encoder's src_vocab_size */
    int decoder_vocab_size;         /* Marian's target vocabulary, read as it is; 0: none named */
    int use_task_id, task_type_vocab_size; /* ERNIE's task embedding, added with task 0 (transformers' default) */
    int max_2d_positions;           /* LayoutLM's box coordinates (and widths, heights) are 0 .. this - 1 */
    int visual_embedding_dim;       /* VisualBERT: the features of an object region (pf_encode_regions); 0: none taken */
    int visual_pos_dim;             /* LXMERT: the values of a region's box (pf_encode_region_boxes); 0: no boxes */
    /* LXMERT (two_streams): a language stream and a vision stream, language_layers blocks on the
       first, relation_layers on the second, then cross_layers cross-modality layers, each two blocks
       (the language side's, whose PF__SLOT_CROSS_* attention both streams share, then the vision
       side's): num_layers = language_layers + relation_layers + 2 cross_layers */
    int two_streams, language_layers, relation_layers, cross_layers;
    int num_qa_labels;              /* LXMERT's answer head's labels (num_labels for ...ForQuestionAnswering) */
    int entity_vocab_size;          /* LUKE: entity ids 0 .. this - 1 (pf_encode_entities); 0: no entities taken */
    int entity_emb_size;            /* LUKE: the entity table's width (projected to hidden when it differs) */
    int entity_aware_attention;     /* LUKE's use_entity_aware_attention: words' and entities' own queries for
                                       each other's keys (PF__SLOT_ENTITY_Q_*) */
    int classify_entities;          /* LUKE's heads on entities: the sequence classifier reads each row's first
                                       entity's state (1), or its first two's side by side (2: entity pairs),
                                       not the pooled output; 0: neither */
    /* TAPAS (pf_encode_table): */
    int table_type_sizes[PF__TABLE_TYPES]; /* type_vocab_sizes: each token type's table rows; [1] 0: no table */
    int reset_positions_per_cell;   /* reset_position_index_per_cell: a token's position counts from its cell's
                                       first token (the tokens of one column and row id) */
    int max_table_rows, max_table_columns; /* max_num_rows / _columns: the QA head's row and column ids clamped below */
    int select_one_column;          /* the QA head keeps one column's cells (0: refused; transformers fails without labels) */
    int allow_empty_column_selection; /* 1: column 0 (no cell) may be the one chosen, every cell then masked */
    double cell_selection_temperature; /* temperature: the QA head's cell logits are divided by it */
    int num_aggregation_labels;     /* the QA head's aggregation operators (aggregation_classifier); 0: none */
    int classify_before_last_token; /* 1: the sequence classifier reads the state of each row's text token before
                                       its last (VisualBERT's VQA head: transformers' attention_mask.sum(1) - 2,
                                       the token before [SEP]), not the pooled output */
    int image_size, patch_size, num_channels; /* image encoders: max_positions follows from them */
    int distillation;               /* 1: a distillation token after the class token (DeiT) */
    int causal_encoder;             /* 1: an encoder whose tokens attend to earlier ones only (CLIP's text) */
    int pool_eos_id;                /* >= 0: the pooled output is the token at the first of this id
                                       (2: at the largest id, as configs before transformers 4.31
                                       meant it; CLIP's text); -1: the first token */
    int pool_first_token;           /* 1: the pooled output is the first token's state as it is (DPR's
                                       encoders, which have no pooler) */
    int types_are_languages;        /* 1: pf_encode's token_type_ids are language ids into XLM's lang_embeddings
                                       (PF__SLOT_TOKEN_TYPE_EMBED), added only when given; a model without
                                       that table refuses them (XLM would add word-table rows) */
    int use_lang_emb;               /* XLM: with n_langs (type_vocab_size) > 1, the model has lang_embeddings */
    int summary_heads;              /* 1: XLM's heads: sequence classification is SequenceSummary's one
                                       projection of the first token; its beam QA and two-projection
                                       multiple choice refused */
    int choice_pool_last;           /* 1: a multiple-choice head scores each row's last token's state as
                                       it is (ConvBERT's sequence summary, summary_type "last") */
    int projection_dim;             /* PF__SLOT_PROJECTION's rows (CLIP) */
    int with_projection;            /* 1: the tower has its projection (PF__IF_WITH_PROJECTION) */
    int speech;                     /* 1: a speech encoder (Wav2Vec2, HuBERT): waveforms through the
                                       host front end of the speech section, then the blocks */
    int feature_projection_norm;    /* speech: a LayerNorm before the feature projection (policies.inc) */
    int conv_subsampler;            /* 1: an encoder-decoder whose encoder takes filter-bank frames
                                       through Speech2Text's convolutional subsampler on the host
                                       (pf__config_subsampler; speech_config holds its shape) */
    int mel_frontend;               /* 1: a speech encoder-decoder whose encoder takes log-mel features
                                       through two convolutions (Whisper's conv1, conv2: kernel 3, the
                                       second of stride 2, each followed by GELU), run on the host */
    int num_mel_bins;               /* mel_frontend: the features' mel bins (conv1's input channels) */
    int encoder_max_positions;      /* the encoder's position table when it differs from the decoder's
                                       (Whisper's max_source_positions); 0: max_positions */
    int k_bias_zero;                /* 1: the key projections have no bias where q and v have one
                                       (Whisper's k_proj): a zero bias stands in, so the stack lines up */
    int whisper_prompt;             /* 1: generation_config.json's language, task, forced_decoder_ids,
                                       lang_to_id, task_to_id and no_timestamps_token_id make the
                                       decoder prompt, as Whisper's generate() builds its init tokens */
    int32_t *decoder_prompt_ids;    /* [num_decoder_prompt_ids]: that prompt (the defaults point at it); owned */
    int num_decoder_prompt_ids;
    int detect_language;            /* 1: the prompt needs Whisper's language detection: its language
                                       token (after the start token) is the likeliest of lang_ids */
    int32_t *lang_ids;              /* [num_lang_ids]: lang_to_id's token ids, ascending; owned */
    int num_lang_ids;
    int timestamp_begin;            /* Whisper's first timestamp token: no_timestamps_token_id + 1;
                                       0: no no_timestamps_token_id */
    int max_initial_timestamp;      /* generation_config.json's max_initial_timestamp_index + 1; 0: none */
    struct pf__speech_config {      /* the front end's shape, from config.json (pf__config_speech) */
        int num_convs;              /* feature encoder layers: conv_dim, conv_kernel, conv_stride */
        int conv_dim[16], conv_kernel[16], conv_stride[16];
        int conv_bias;              /* the convolutions have biases */
        int layer_norm_convs;       /* feat_extract_norm "layer": a LayerNorm over channels after every
                                       conv; 0 ("group"): a GroupNorm (one group a channel) after the first */
        int pos_kernel, pos_groups; /* the positional convolution: num_conv_pos_embeddings, ..._groups */
        int stride, min_samples;    /* samples per frame; the fewest samples that make one frame */
        int feature_width;          /* conv_subsampler: features per input frame (input_feat_per_channel
                                       * input_channels), the first convolution's input channels */
    } speech_config;
    int teacher_head;               /* 1: the mean of the class and distillation tokens' heads (DeiT
                                       ...WithTeacher) */
    int decoder_num_heads, decoder_intermediate_size; /* the decoder's, where the config names them
                                       apart (BART); they must equal the encoder's; 0: unnamed */
    int embed_norm;                 /* 1: a norm after the embedding (PF__IF_EMBED_NORM tensors) */
    int decoder_norm_before_positions; /* 1: the decoder tower norms its token embeddings before it
                                       adds the positions (Blenderbot-small) */
    int sinusoid;                   /* the computed sinusoid table: PF__SINUSOID_* */
    int scale_decoder_outputs;      /* 1: the decoder's output times hidden^-0.5 before the LM head
                                       (T5); -1 in the table: as tie_word_embeddings */
    int head_dim;                   /* 0 in the file: hidden_size / num_heads */
    int multi_query;                /* 1: one key/value head; 0: one per query head; -1: num_kv_heads as read
                                       (GPT-BigCode's and Falcon's multi_query) */
    int grouped_qkv;                /* 1: num_kv_heads as read whatever multi_query says, and parallel blocks
                                       only (Falcon's new_decoder_architecture; its grouped fused QKV) */
    int embed_dim;                  /* OPT's word_embed_proj_dim; 0: hidden_size */
    double norm_eps;
    double final_norm_eps;          /* 0: norm_eps */
    int scale_attn_weights;         /* 0: scores are q.k unscaled (GPT-Neo) */
    int scale_attn_by_inverse_layer_idx;
    int32_t *eos_ids;               /* [num_eos_ids]: config.json's and generation_config.json's; owned */
    int num_eos_ids;
    int32_t *suppress_ids, *begin_suppress_ids; /* generation_config.json's suppress_tokens and
                                       begin_suppress_tokens (the defaults point at them); owned */
    int num_suppress_ids, num_begin_suppress_ids;
    int bos_token_id, pad_token_id, decoder_start_token_id; /* -1: none */
    int pre_norm;                   /* 0: post-norm blocks (OpenAI GPT, OPT-350m), without a final norm */
    int remove_final_norm;          /* 1: pre-norm blocks without a final norm (OPT's _remove_final_layer_norm) */
    int tie_word_embeddings;        /* 1: the LM head is the token embedding */
    int residual_from_norm;         /* 1: each block's residual is its norm's output (BLOOM's
                                       apply_residual_connection_post_layernorm) */
    int attention_bias, mlp_bias;   /* 1: the projections of attention (of the MLP) have biases */
    int qk_norm;                    /* a pf__qk_norm: q and k normed before the rotary */
    int qk_norm_per_head;           /* with PF__QK_NORM_HEAD: a gain per head, [heads][head_dim] */
    int qk_norm_l2;                 /* with PF__QK_NORM_HEAD: Llama 4's L2 norm, an RMSNorm without gain tensors
                                       (the gain 1), on the rotated layers only; transformers norms after the
                                       rotation, which keeps each head's sum of squares: the same norm */
    int norm_weightless;            /* 1: the blocks' and the final norms have no weight or bias tensors
                                       (OLMo's non-parametric LayerNorm): normed with the gain 1 */
    double clip_qkv;                /* > 0: q, k and v clamped to [-clip_qkv, clip_qkv] after their
                                       projection and bias, before the rotary (OLMo); 0: none */
    int parallel_residual;          /* x + attn(norm(x)) + mlp(norm'(x)) */
    int position_offset;            /* OPT's learned positions start at 2 */
    int embed_scale_sqrt;           /* token embeddings times sqrt(hidden) (CTRL) */
    double logit_scale;             /* the logits times this (Cohere), folded into the final norm at load; 0: none */
    int rotary_dim;                 /* rotated dims per head; 0: rotary_pct * head_dim */
    double rotary_pct;
    double rope_theta;
    double rope_local_theta;        /* > 0: the sliding-window layers rotate with their own table of this
                                       base, unscaled; rope_theta and the scaling are the global layers'
                                       (Gemma 3's rope_local_base_freq, rope_parameters.sliding_attention) */
    int reads_rope_dict;            /* 1: rope_scaling / rope_parameters apply (else transformers ignores them) */
    int rope_dict_needed;           /* 1: a config without them (or without their rope_type) is refused: the
                                       family's code then defaults to a scaled rope (gpt-oss's YaRN) */
    int partial_rotary_ignored;     /* 1: a partial_rotary_factor does not change the rotation (LLaMA) */
    int alibi_rounded;              /* 1: positions by ALiBi in place of the rotary (Falcon's "alibi"): the
                                       bias slope * position rounded to bf16 and, like q.k, times the scale */
    int rope_head_dim;              /* GPT-NeoX's head_dim key: the rotary width's base; 0: head_dim */
    int sliding_window;             /* keys within this distance of the query; 0: all */
    int window_pattern;             /* without a per-layer list: layer l uses the sliding window unless
                                       (l + 1) is a multiple of this (Gemma 2: 2, Gemma 3: 6, Cohere2's
                                       sliding_window_pattern); 0: first_window_layer rules */
    double query_pre_attn_scalar;   /* > 0: scores scaled by its -1/2 power instead of head_dim's (Gemma 2) */
    double attn_softcap;            /* > 0: scaled scores become tanh(s / cap) * cap before the mask (Gemma 2) */
    double final_softcap;           /* > 0: the same on the logits (Gemma 2's final_logit_softcapping) */
    int use_sliding_window;         /* 0: the config's sliding_window is only informative (Qwen2) */
    int local_window;               /* GPT-Neo's window for its "local" layers */
    int first_window_layer;         /* without a per-layer list: layers from this one on use the
                                       sliding window (Qwen2's max_window_layers) */
    int rope_windowed_only;         /* 1: only layers with a window are rotated (layer_rope made from the windows); the others have no
                                       positions (Cohere2's global layers) */
    pf__activation activation;
    pf__rope_type rope_type;
    double rope_factor, rope_low_freq_factor, rope_high_freq_factor;
    int rope_original_max_positions;
    double embed_multiplier;        /* token embeddings times this (Granite's embedding_multiplier); 0: 1 */
    double residual_multiplier;     /* each sublayer's output times this before its residual add (Granite); 0: 1 */
    double attention_multiplier;    /* the attention scores' scale in place of 1/sqrt(head_dim) (Granite); 0: none */
    double logits_scaling;          /* the vocabulary logits divided by this (Granite); 0: 1 */
    int rope_legacy_longrope;       /* 1: rope types "su" and "yarn" mean LongRoPE (Phi-3's config maps them) */
    int longrope_drops_cache;       /* 1: under LongRoPE, the generation step that takes the sequence past
                                       original_max_position_embeddings recomputes the whole cache with the
                                       long factors instead of appending to it (Phi-3's generate()) */
    double rope_attention_factor;   /* YaRN / LongRoPE: cos and sin times this (transformers' attention_scaling); 1 otherwise */
    int rope_mscales;               /* 1: LongRoPE's attention factor is the dict's short_mscale / long_mscale (PhiMoE) */
    double rope_beta_fast, rope_beta_slow; /* YaRN's ramp bounds, in rotations */
    int rope_truncate;              /* YaRN: the ramp's bounds rounded outwards to whole dims */
    int rope_num_factors;           /* LongRoPE: entries in each of the lists below (rotary_dim / 2) */
    float rope_short_factor[PF__MAX_ROPE_FACTORS], rope_long_factor[PF__MAX_ROPE_FACTORS]; /* LongRoPE's lists */
    int *layer_window;              /* [num_layers]: each layer's window, 0 for global; owned, with
                                       layer_local, layer_chunk and layer_local_window after it */
    int *layer_local;               /* [num_layers]: 1 where the layer is a sliding ("local") one by its
                                       kind, whatever its window; points into layer_window's block */
    int no_rope_interval;           /* > 0: some layers rotate nothing (NoPE): config.json's no_rope_layers
                                       list (1: rotary), or every no_rope_interval-th layer (SmolLM3) */
    int no_rope_empty_default;      /* 1: an empty no_rope_layers list is the default one, as absent (Llama 4's
                                       config tests the list's truth; SmolLM3's only None) */
    int nope_windowed;              /* 1: without a per-layer list of kinds, the sliding window is on the
                                       NoPE layers (SmolLM3) */
    int *layer_rope;                /* [num_layers]: 1 where the layer rotates q and k; NULL: every layer; owned */
    int attention_chunk;            /* the "chunked_attention" layers' chunk (Llama 4's attention_chunk_size) */
    int *layer_chunk;               /* [num_layers]: each layer's chunk, 0 for none: a query sees the keys of its
                                       chunk of attention_chunk positions (counted from the sequence's first
                                       token); points into layer_window's block */
    int local_attention;            /* 1: Longformer's attention: each token sees the keys within its layer's
                                       layer_local_window and the tokens with global attention, which see
                                       every key through their own projections (PF__SLOT_*_GLOBAL_*) */
    int *layer_local_window;        /* [num_layers]: the one-sided window, attention_window / 2 (config.json's
                                       attention_window: one even number, or one a layer); points into
                                       layer_window's block */
    int block_sparse;               /* 1: BigBird's block-sparse attention (attention_type "block_sparse"):
                                       a row of more than (5 + 2 sparse_random) * sparse_block tokens
                                       attends by pf__block_sparse_count, a shorter one fully */
    int sparse_block, sparse_random; /* its block_size and num_random_blocks */
    int sep_token_id;               /* Longformer's separator: its question-answering and multiple-choice heads
                                       put global attention on the tokens before / after the first one */
    int temperature_tuning;         /* 1: on the layers that rotate nothing, q times 1 + temperature_scale *
                                       log1p(floor((p + 1) / temperature_floor)) at position p (Llama 4's
                                       attn_temperature_tuning, floor_scale, attn_scale) */
    double temperature_floor, temperature_scale;
    /* Multi-head latent attention (DeepSeek V2/V3), on when kv_lora_rank > 0: head_dim is then
       qk_nope_head_dim + qk_rope_head_dim (q's and k's heads), rotary_dim qk_rope_head_dim (the
       end of each head, and of the latent row); the cache holds each token's normed latent and its
       rotated shared key, kv_lora_rank + qk_rope_head_dim values, whatever the heads. */
    int q_lora_rank;                /* > 0: q = q_b(norm(q_a(x))); 0: q = q_proj(x) */
    int kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim;
    int v_head_dim;                 /* the value heads' width; 0: head_dim */
    double latent_norm_eps;         /* the q_a and kv_a RMSNorms' epsilon (transformers' default, not rms_norm_eps) */
    double rope_mscale_all_dim;     /* YaRN's mscale_all_dim: latent attention's scores times mscale^2 (0: none) */
    int first_dense_layers;         /* layers before the first mixture-of-experts one (first_k_dense_replace) */
    /* Mixtures of experts: num_experts > 0 gives the layers in layer_sparse a router over
       num_experts experts (gated MLPs of width moe_intermediate_size) instead of the dense MLP */
    int num_experts;                /* 0: a dense model */
    int experts_per_token;          /* top-k: the experts each token is routed to */
    int norm_topk_prob;             /* 1: the top-k routing weights renormalised to sum 1 */
    int router_sigmoid;             /* 1: scores are sigmoid(logits) (DeepSeek V3); 0: softmax over the experts */
    double routed_scaling;          /* the routed experts' sum times this; 0: 1 (DeepSeek's routed_scaling_factor) */
    int router_groups;              /* > 1: the experts in this many equal groups, only the router_topk_groups best
                                       groups' experts chosen (DeepSeek's n_group, topk_group) */
    int router_topk_groups;
    int router_group_top2;          /* 1: a group's score is the sum of its 2 best scores (DeepSeek V3); 0: its best */
    int router_method_named;        /* 1: topk_method names the routing ("greedy": no groups; "group_limited_greedy") */
    int shared_experts;             /* > 0: an ungated shared MLP of moe_intermediate_size times this (DeepSeek's
                                       n_shared_experts) gives shared_intermediate_size */
    int unread_layers;              /* layers past num_layers whose tensors the model never reads (DeepSeek V3's
                                       multi-token prediction: num_nextn_predict_layers) */
    int moe_intermediate_size;      /* each expert's MLP width */
    int shared_intermediate_size;   /* the shared expert's width (Qwen2-MoE); 0: none */
    int decoder_sparse_step;        /* layer l has experts when (l + 1) % step == 0 (Qwen2-MoE); 0: every layer */
    int router_topk_softmax;        /* 1: the top_k of the raw router logits, then a softmax over those k
                                       (gpt-oss's router); 0: scores of all experts, then the top_k */
    int lm_head_bias;               /* 1: the LM head has a bias (PhiMoE's lm_head_bias) */
    int router_sparsemixer;         /* 1: PhiMoE's sparsemixer: the best logit, then the best of the rest, each
                                       weighed by a softmax over the logits within router_jitter of it (relative
                                       gap over max(|logit|, that logit) at most 2 jitter), the others masked */
    double router_jitter;           /* its router_jitter_noise */
    int router_topk_sigmoid;        /* 1: the top_k of the raw router logits, each weighed by the sigmoid of its
                                       logit, not renormalised (Llama 4's router) */
    int experts_scale_input;        /* 1: an expert runs on the token times its routing weight, its output
                                       added as it is (Llama 4); 0: the output times the weight */
    int moe_layers_listed;          /* 1: config.json's moe_layers, when present, lists the layers with experts
                                       (Llama 4's; else interleave_moe_layer_step as decoder_sparse_step) */
    int experts_interleaved;        /* 1: a fused gate_up's outputs alternate gate, up (gpt-oss's [..., ::2],
                                       [..., 1::2]); read into gate rows, then up rows (per-expert
                                       pieces, a GGUF's, are gate then up whatever this says) */
    double swiglu_limit;            /* > 0: the experts' clamped SwiGLU (gpt-oss): gate clamped above at
                                       this, up to [-limit, limit], out = (up + 1) * gate * sigmoid(alpha gate) */
    double swiglu_alpha;            /* that sigmoid's gain */
    int *layer_sparse;              /* [num_layers]: 1 where the layer has experts (decoder_sparse_step, minus
                                       mlp_only_layers); NULL for a dense model; owned */
    int type_vocab_size;            /* rows of the token type (segment) embedding */
    int gated_mlp;                  /* 1: act(x W_gate) * x W_up (the row's mlp, or T5's "gated-" activations) */
    int rel_table_rows;             /* rows of the relative bias table (its config key) */
    int rel_buckets, rel_max_distance; /* the bucketing: T5's function with these; bidirectional */
    int embed_norm_before_project;  /* 1: positions, segments and the embedding norm at the
                                       embedding's width E, then project_in with its bias (ELECTRA,
                                       ALBERT); 0: they follow the projection (OPT) */
    int position_offset_from_pad;   /* 1: position_offset was read as the pad id, positions start
                                       after it and the table's rows include them (RoBERTa); 2: the
                                       same over a computed table, the bound kept (M2M100) */
#define PF__POOLER_ACT_NAMED 99 /* above every pf__activation */
    int pooler_activation;          /* a pf__activation: tanh (BERT), relu (DistilBERT); -1: the model's;
                                       PF__POOLER_ACT_NAMED: config.json's pooler_hidden_act (DeBERTa) */
    /* DeBERTa's disentangled attention: score(i, j) = (q_i.k_j + c2p q_i.pk[d] + p2c k_j.pq[d]) /
       sqrt(head_dim * (1 + c2p + p2c)), d = clamp(bucket(i - j) + rel_span, 0, 2 rel_span - 1),
       pq and pk the layer's query and key projections of the (normed) relative embeddings */
    int disentangled;               /* 1: relative_attention with c2p and/or p2c (the terms below) */
    int rel_c2p, rel_p2c;           /* pos_att_type's terms */
    int rel_span;                   /* position_buckets when > 0, else max_relative_positions */
    int position_buckets;           /* > 0: log buckets (make_log_bucket_position) beyond position_buckets / 2 */
    int max_relative_positions;     /* the log buckets' reach (max_position_embeddings when < 1) */
    int position_biased_input;      /* 1: absolute position embeddings added (PF__IF_POSITION_BIASED) */
    int rel_embed_norm;             /* 1: the relative embeddings are LayerNormed (norm_rel_ebd "layer_norm") */
    int share_att_key;              /* 1: positions projected by the layer's query and key weights */
    int relative_attention;         /* DeBERTa: 1 adds the disentangled terms */
    int head_activation;            /* the masked-LM head's pf__activation; -1: the model's */
    /* Grouped linear layers (PF__LAYOUT_GROUPED, SqueezeBERT's q_groups ... output_groups): each
       slot's group count; 0 or 1: dense */
    int q_groups, k_groups, v_groups, attn_out_groups, mlp_up_groups, mlp_down_groups;
    /* ConvBERT: span-based dynamic convolution heads of conv_kernel taps (odd; 0: none) beside the
       attention's; num_heads is num_attention_heads / head_ratio (at least 1), head_dim half of
       hidden / num_heads (PF__SLOT_CONV_*) */
    int conv_kernel, head_ratio;
    /* Funnel Transformer (funnel 1): funnel_blocks blocks (at most PF__FUNNEL_MAX_BLOCKS) of
       funnel_block_sizes[b] layers, counted block after block (num_layers is their sum), each layer
       run funnel_block_repeats[b] times in a row. Before each block after the first the sequence is
       pooled by 2 (the mean of each pair, or the max with funnel_pool_max; pf__funnel_pooled_length),
       the first token apart (funnel_separate_cls) and then the last dropped (funnel_truncate_seq);
       the block's first layer takes the pooled rows as its queries alone (funnel_pool_q_only) or as
       its keys and values too. Attention: content, relative position and segment terms
       (PF__SLOT_FUNNEL_*, pf__backend.funnel_bias) */
    int funnel, funnel_blocks, funnel_pool_max, funnel_separate_cls, funnel_truncate_seq, funnel_pool_q_only;
    /* FunnelModel's upsampling decoder (funnel_decoder 1: FunnelModel and the heads on it): the last
       block's rows repeated back to each token, plus the first block's output, then
       funnel_decoder_layers layers (after the blocks' in num_layers) at the first block's level */
    int funnel_decoder, funnel_decoder_layers;
    int funnel_block_sizes[PF__FUNNEL_MAX_BLOCKS], funnel_block_repeats[PF__FUNNEL_MAX_BLOCKS];
    /* XLNet (xlnet 1): its layers run as one Funnel block without pooling (funnel 1, config.c), the
       segment term XLNet's (pf__funnel_shape.exact_segments); the relative distances clamped to
       +-rel_clamp_len (clamp_len > 0; 0: not clamped); rel_causal (attn_type "uni"): each token
       attends to itself and the tokens before it alone */
    int xlnet, rel_clamp_len, rel_causal;
    /* XLNetLMHeadModel's generation as its generate() runs it: with memory (xlnet_mems: use_mems_eval)
       each step recomputes the last two tokens over the memory of the others, which keeps the last
       xlnet_mem_len rows (mem_len; 0: all); without, every token again */
    int xlnet_mems, xlnet_mem_len;
    /* Transformer-XL (transfo_xl 1): a causal LM whose layers attend (rel_causal 1, rel_clamp_len) over
       a memory: each forward call is a segment whose queries see its own earlier tokens and the
       txl_mem_len positions before it (the first segment: txl_mem_len zero rows, transformers'
       init_mems); txl_same_length: each token sees the txl_mem_len keys ending at itself instead.
       The adaptive input and softmax: clusters of the vocabulary [txl_cutoff_ends[i],
       txl_cutoff_ends[i + 1]) (txl_clusters of them, the head's first), cluster i's table and
       projections d_embed / txl_div_val^i wide (txl_div_val 1: one table, cut by rows for the
       softmax); txl_tie_projs[i]: the softmax's projection i is the input's (transformers' tie_projs) */
    int transfo_xl, txl_mem_len, txl_same_length, txl_div_val, txl_clusters, txl_d_embed;
    int txl_untie_r; /* 1: each layer's r_w_bias and r_r_bias; 0: the model's (PF__SLOT_TXL_R_*_BIAS) */
    int txl_cutoff_ends[PF__TXL_MAX_CLUSTERS + 1], txl_tie_projs[PF__TXL_MAX_CLUSTERS];
    int summary_last;               /* 1: sequence classification and multiple choice pool each row's last
                                       token through the pooler's dense + tanh (XLNet's SequenceSummary,
                                       summary_type "last", summary_use_proj), then the classifier */
    /* MobileBERT: bottleneck blocks (PF__SLOT_BOTTLENECK_*) of width bottleneck_width (0: none),
       attention heads of bottleneck_width / heads; stacked_ffns MLPs a block (the last its own
       MLP slots, the others PF__SLOT_FFN1_* ...); the embedding's and blocks' norms x * w + b
       (elementwise_norm: normalization_type "no_norm"); the token embeddings of each token's
       next, itself and previous (zeros beyond the row) joined before project_in (trigram_input);
       the LM head joined from the embedding and PF__SLOT_LM_HEAD_EXTRA (lm_head_extra) */
    int bottleneck_width, stacked_ffns, elementwise_norm, trigram_input, lm_head_extra;
    /* ProphetNet: > 0, the decoder runs a main stream (the tokens) and the first of its ngram predict
       streams (each position's input PF__SLOT_NGRAM_EMBED's row ngram - 1 plus the position table's
       row after the token's), whose rows give the logits; its self-attention is pf__backend.ngram_attend
       with each query's relative bias projected from its row (PF__SLOT_NGRAM_REL_*), bucketed by
       rel_buckets and rel_max_distance. The other predict streams reach no logit that generation
       reads (transformers' logits_ngram): not computed. */
    int ngram;
    /* Reformer (reformer 1; src/reformer.c): reversible layers (x1 += attention(norm(x2)), then
       x2 += feed-forward(norm(x1)), both streams the embedding at first, the output norm([x1 | x2])
       at twice the hidden width), each layer's attention LSH (reformer_lsh[l]: shared query-key,
       hashed into buckets by random rotations, chunks of the bucket order) or local (chunks of the
       row); a row longer than the shorter chunk padded to the chunks' least common multiple; axial
       positions (reformer_axial: [rows table at p / shape[1] | columns table at p % shape[1]]) or a
       table; reformer_causal: is_decoder's causal masks (ReformerModelWithLMHead) */
    int reformer, reformer_causal, reformer_hashes, reformer_bucket_factors;
    int reformer_lsh_chunk, reformer_lsh_before, reformer_lsh_after;
    int reformer_local_chunk, reformer_local_before, reformer_local_after;
    int reformer_lcm_chunk, reformer_min_chunk;
    int reformer_buckets[PF__REFORMER_MAX_FACTORS]; /* num_buckets' factors (one for an int) */
    uint64_t reformer_hash_seed;    /* torch.manual_seed's before the rotations' draw */
    int reformer_axial, reformer_axial_shape[2], reformer_axial_dims[2];
    unsigned char reformer_lsh[PF__REFORMER_MAX_LAYERS];
    pf_head head;                   /* what the output stage computes */
    int num_labels;                 /* classification heads' outputs */
} pf__config;
PF_PRIVATE void pf__config_defaults(pf__config *c);

typedef struct pf__arch_config {
    pf__arch_id arch;
    size_t offset;  /* of the field in pf__config */
    int is_double;
    const char *key;
    double fallback;
} pf__arch_config;
/* BigBird's block-sparse attention as transformers computes it in eval mode, where its random
   blocks are all block 0: how many times key `key` enters the softmax of query `query` (both
   counted from the row's first token) in a row of `len` tokens, cut into blocks of `block` (the
   last one padded; its pads are no keys). A row of at most (5 + 2 random) blocks' worth of tokens
   attends fully, as transformers switches it to original_full: 1. Otherwise the first and last
   blocks of queries see every key once; the others see the first and last blocks, their own
   block and its neighbours (block 1: blocks 1 and 2; the one before the last: the two before
   the last), and block 0 `random` times more. kernels.cu and test/cuda_standin.c count alike. */
static inline int pf__block_sparse_count(int block, int random, int len, int query, int key) {
    if (len <= (5 + 2 * random) * block) return 1;
    int last = (len + block - 1) / block - 1, qb = query / block, kb = key / block;
    if (qb == 0 || qb == last) return 1;
    int near_lo = qb == 1 ? 1 : qb - 1, near_hi = qb == last - 1 ? last - 1 : qb + 1;
    return (kb >= near_lo && kb <= near_hi) + (kb == 0 ? 1 + random : 0) + (kb == last);
}

/* A region's floats in a step's regions: its features, then (LXMERT) its box, each block apart. */
static inline int pf__region_floats(const pf__config *c) { return c->visual_embedding_dim + c->visual_pos_dim; }
/* The value heads' width: latent attention's v_head_dim, else head_dim. */
static inline int pf__value_head_dim(const pf__config *c) { return c->v_head_dim ? c->v_head_dim : c->head_dim; }
/* The width of a head as attend sees it: LUKE's entity-aware attention runs each head doubled, its
   query the two queries for words' and entities' keys side by side, a word's key [k | 0] and an
   entity's [0 | k] (pf__rank_entity_attention) */
static inline int pf__attend_head_dim(const pf__config *c) { return c->entity_aware_attention ? 2 * c->head_dim : c->head_dim; }
/* LUKE's host gather rows of a rank of `heads` heads (pf__rank_entity_gathers): the doubled heads'
   [T][6 heads], the attention output's [T][heads], the entities' [T]; then head_dim zeros, uploaded
   as the zero half of the doubled heads */
static inline size_t pf__entity_gather_count(const pf__config *c, int heads, size_t T) {
    return T * (7 * (size_t)heads + 1) + (size_t)c->head_dim;
}
#define PF__FIELD_IS_DOUBLE(field) (sizeof(((pf__config *)0)->field) == sizeof(double))
#define PF__COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Each table's rows for an architecture: a compiled-in family's as policies.inc means them (its
   base's rows copied in, PF_ARCH_LIKE, once), or a registered policy's own copies; every row
   carries the architecture's id. Code reads the tables through pf__rows(arch) only. */
typedef struct pf__policy_rows {
    const pf__arch_tensor *tensors;
    size_t num_tensors;
    const pf__arch_config *configs;
    size_t num_configs;
    const pf__arch_prefix *prefixes;
    size_t num_prefixes;
    const pf__arch_buffer *buffers;
    size_t num_buffers;
    const pf__arch_activation *activations;
    size_t num_activations;
    const pf__arch_layer_types *layer_types;
    size_t num_layer_types;
    const pf__arch_null *nulls;
    size_t num_nulls;
    const pf__arch_require *required_values;
    size_t num_required_values;
} pf__policy_rows;

/* A policy registered at run time: its architecture id is PF__ARCH_COUNT + its index, its traits
   are pf__archs at that id. Registration writes only free entries; an entry is freed only while
   no model holds it, so a loaded model reads its own without the lock. */
typedef struct pf__registered {
    int in_use;
    int live_models;      /* models loaded through it, not yet freed: unregistering waits for 0 */
    pf__policy_rows rows; /* its own rows, every one with its arch id */
    char **strings;       /* [num_strings]: the copies the traits and rows point into; owned */
    size_t num_strings;
} pf__registered;
#ifndef PF_AMALGAMATION /* the shipped file defines it before any reader */
extern PF_PRIVATE pf__registered pf__registered_policies[PF__MAX_REGISTERED];
extern PF_PRIVATE pthread_mutex_t pf__policy_lock;
#endif
PF_PRIVATE const pf__policy_rows *pf__rows(pf__arch_id arch);
PF_PRIVATE int pf__is_buffer(const pf__policy_rows *rows, pf__arch_id arch, const char *pattern); /* a tensor a checkpoint may carry as a copy */
PF_PRIVATE const char *pf__policy_table_error(void);
PF_PRIVATE void pf__policy_release(pf__arch_id arch);
PF_PRIVATE const pf__arch_tensor *pf__arch_tensor_for(pf__arch_id arch, pf__slot slot);
PF_PRIVATE int pf__activation_from_hf_name(const char *name, pf__activation *out);
PF_PRIVATE int pf__json_number(const pf__json *v, double *out);
PF_PRIVATE pf_result pf__generation_config_read(const char *dir, pf__config *c, pf_generate_options *defaults,
                                            char *message, size_t size);
PF_PRIVATE pf_result pf__config_check_token_ids(const pf__config *c, const char *dir, char *message, size_t size);
PF_PRIVATE pf_result pf__config_read(const char *dir, pf__config *cfg, char *message, size_t size);
PF_PRIVATE pf_result pf__config_parse(const pf__json *json, const char *path, int arch, pf__config *cfg, char *message,
                                  size_t size);

/* ---- src/policy_registry.c ---- */
PF_PRIVATE void pf__slot_shape(const pf__config *c, pf__slot slot, size_t *rows, size_t *cols);
PF_PRIVATE void pf__txl_cluster_shape(const pf__config *c, int i, size_t *rows, size_t *width);
PF_PRIVATE int pf__slot_groups(const pf__config *c, pf__slot slot);

/* ---- src/tokenizer_utf8.c ---- */
#define PF__UTF8_INVALID 0xFFFFFFFFu /* the "code point" of a byte that is not valid UTF-8 */
#define PF__CP_RAW 0x80000000u       /* in code point buffers: PF__CP_RAW | byte, an invalid byte */
PF_PRIVATE size_t pf__utf8_decode(const unsigned char *s, size_t n, uint32_t *cp);
PF_PRIVATE uint32_t pf__utf8_decode_before(const unsigned char *s, size_t lo, size_t p, size_t *len);
PF_PRIVATE size_t pf__utf8_encode(uint32_t cp, unsigned char *out);

/* ---- src/unicode_tables.c ---- */

/* Code point flags, each as one piece of HF tokenizers sees it:
   PF__UC_L      \p{L} of its regexes (Oniguruma)      PF__UC_N      \p{N}
   PF__UC_S      \s of its regexes                     PF__UC_W      \w of Rust's regex crate
   PF__UC_WS     Rust's char::is_whitespace            PF__UC_CTRL   dropped by BertNormalizer's
   PF__UC_MN     dropped by BertNormalizer's                         clean_text (Cc Cf Cn Co)
                 strip_accents (Mn)                    PF__UC_PUNCT  BertPreTokenizer punctuation */
enum {
    PF__UC_L = 1, PF__UC_N = 2, PF__UC_S = 4, PF__UC_W = 8,
    PF__UC_WS = 16, PF__UC_CTRL = 32, PF__UC_MN = 64, PF__UC_PUNCT = 128
};
#define PF__TOK_LEN(a) (sizeof(a) / sizeof((a)[0]))
#ifndef PF_AMALGAMATION /* the shipped file defines it before any reader */
extern PF_PRIVATE const uint64_t pf__unicode_decomp[2060];
extern PF_PRIVATE const uint64_t pf__unicode_compat_runs[1162];
extern PF_PRIVATE const uint64_t pf__unicode_compat_multi[1185];
extern PF_PRIVATE const uint32_t pf__unicode_compat_chars[3106];
extern PF_PRIVATE const uint32_t pf__unicode_grapheme_runs[1369];
#endif
PF_PRIVATE unsigned pf__unicode_class(uint32_t cp);
PF_PRIVATE uint32_t pf__unicode_lower(uint32_t cp);
PF_PRIVATE unsigned pf__unicode_ccc(uint32_t cp);
#define PF__HANGUL_S 0xAC00u
#define PF__HANGUL_L 0x1100u
#define PF__HANGUL_V 0x1161u
#define PF__HANGUL_T 0x11A7u
#define PF__HANGUL_VCOUNT 21u
#define PF__HANGUL_TCOUNT 28u
#define PF__HANGUL_SCOUNT (19u * 21u * 28u)
PF_PRIVATE long pf__unicode_decomp_find(uint32_t cp);
PF_PRIVATE uint32_t pf__unicode_compose(uint32_t a, uint32_t b);
PF_PRIVATE int pf__unicode_is_mark(uint32_t cp);

/* ---- src/unicode.c ---- */

typedef struct pf__tok_buf { /* bytes */
    unsigned char *p;
    size_t len, cap;
} pf__tok_buf;

typedef struct pf__tok_cps { /* code points */
    uint32_t *p;
    size_t len, cap;
} pf__tok_cps;
PF_PRIVATE int pf__tok_grow(void **p, size_t *cap, size_t need, size_t elem);
PF_PRIVATE int pf__buf_put(pf__tok_buf *b, const void *s, size_t n);
PF_PRIVATE int pf__buf_put_cp(pf__tok_buf *b, uint32_t cp);
PF_PRIVATE int pf__buf_replace(pf__tok_buf *out, const unsigned char *s, size_t n, const char *pat, size_t pat_len,
                           const char *rep, size_t rep_len);
PF_PRIVATE int pf__cps_put(pf__tok_cps *b, uint32_t cp);
PF_PRIVATE int pf__nf_decompose(pf__tok_cps *out, uint32_t cp, int depth);
PF_PRIVATE int pf__nf_decompose_compat(pf__tok_cps *out, uint32_t cp);
PF_PRIVATE int pf__nf_reorder(pf__tok_cps *cps, pf__tok_cps *tmp);
PF_PRIVATE void pf__nf_compose(pf__tok_cps *cps);
PF_PRIVATE size_t pf__grapheme_end(const unsigned char *s, size_t i, size_t n);

/* ---- src/tokenizer_models.c ---- */

/* Split patterns matched by hand. HF names a regex by its source, which is how a tokenizer.json
   "Split" is recognised (ByteLevel's use_regex means GPT2). */
typedef enum pf__tok_pattern {
    PF__PAT_GPT2,    /* 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
    PF__PAT_LLAMA3,  /* (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
                        ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+ */
    PF__PAT_QWEN2,   /* as LLAMA3 with \p{N} one digit at a time */
    PF__PAT_BLOOM,   /*  ?[^(\s|[.,!?…。，、।۔،])]+ */
    PF__PAT_WORD_NL, /* \S+\n? (CTRL's words) */
    PF__PAT_WORD_NL_PY, /* the same with Python re's \s (str.isspace: U+001C .. U+001F too), PhoBERT's */
    PF__PAT_LITERAL, /* a string (a "String" pattern; Metaspace's replacement) */
    PF__PAT_FLAGS    /* one code point with any of the given PF__UC_* flags */
} pf__tok_pattern;

typedef struct pf__tok_regex {
    pf__tok_pattern pattern;
    const char *regex;
} pf__tok_regex;
#ifndef PF_AMALGAMATION /* the shipped file defines it before any reader */
extern PF_PRIVATE const pf__tok_regex pf__tok_regexes[];
extern PF_PRIVATE const size_t pf__tok_regexes_count;
#endif

/* HF's SplitDelimiterBehavior */
typedef enum pf__tok_behavior {
    PF__SPLIT_REMOVED, PF__SPLIT_ISOLATED, PF__SPLIT_MERGED_PREVIOUS, PF__SPLIT_MERGED_NEXT, PF__SPLIT_CONTIGUOUS
} pf__tok_behavior;
#ifndef PF_AMALGAMATION /* the shipped file defines it before any reader */
extern PF_PRIVATE const char *const pf__tok_behaviors[];
extern PF_PRIVATE const size_t pf__tok_behaviors_count;
#endif

typedef enum pf__tok_prepend { PF__PREPEND_ALWAYS, PF__PREPEND_FIRST, PF__PREPEND_NEVER } pf__tok_prepend;

/* Normalizer steps (a BertNormalizer is its four steps) */
typedef enum pf__tok_norm_kind {
    PF__NORM_NFC, PF__NORM_NFD, PF__NORM_LOWERCASE, PF__NORM_PREPEND, PF__NORM_REPLACE, PF__NORM_STRIP,
    PF__NORM_BERT_CLEAN, PF__NORM_BERT_CJK, PF__NORM_STRIP_ACCENTS,
    PF__NORM_NFKC, PF__NORM_NFKD,
    PF__NORM_STRIP_MARKS,    /* StripAccents: combining marks dropped (BertNormalizer's strip_accents is
                                NFD then its own marks: PF__NORM_STRIP_ACCENTS) */
    PF__NORM_REPLACE_SPACES, /* Replace with the regex " {2,}": runs of two or more spaces */
    PF__NORM_REPLACE_WHITESPACE, /* Replace with the regex "\s{2,}|[\n\r\t]" (DeBERTa-v2's): runs of two or
                                more \s, or one \n, \r or \t */
    PF__NORM_PRECOMPILED,    /* SentencePiece's precompiled_charsmap */
    PF__NORM_SPM             /* SentencePiece's own Normalizer: its charsmap (longest key first) and its
                                whitespace rules (flags in spm), for its .model files */
} pf__tok_norm_kind;

typedef struct pf__tok_norm {
    pf__tok_norm_kind kind;
    char *a, *b; /* Prepend: a; Replace: pattern a, content b; Precompiled: the replacements b (malloc'd) */
    size_t a_len, b_len;
    int left, right; /* Strip */
    uint32_t *units; /* Precompiled: the double-array trie of the keys [num_units] (malloc'd) */
    size_t num_units;
    unsigned spm;    /* PF__NORM_SPM: PF__SPM_DUMMY_PREFIX | PF__SPM_REMOVE_SPACES | PF__SPM_ESCAPE */
} pf__tok_norm;
#define PF__SPM_DUMMY_PREFIX 1u  /* normalizer_spec.add_dummy_prefix */
#define PF__SPM_REMOVE_SPACES 2u /* normalizer_spec.remove_extra_whitespaces */
#define PF__SPM_ESCAPE 4u        /* normalizer_spec.escape_whitespaces */

/* SentencePiece's piece types and model types (sentencepiece_model.proto) */
enum { PF__SPM_NORMAL = 1, PF__SPM_UNKNOWN, PF__SPM_CONTROL, PF__SPM_USER_DEFINED, PF__SPM_UNUSED, PF__SPM_BYTE };

enum { PF__SPM_UNIGRAM = 1, PF__SPM_BPE, PF__SPM_WORD, PF__SPM_CHAR };

/* Pre-tokenizer stages (a ByteLevel is a prefix-space stage and a GPT2 split; PF__PRE_MOSES: XLM's,
   FlauBERT's and FSMT's Moses pipeline, src/moses.c) */
typedef enum pf__tok_pre_kind {
    PF__PRE_SPLIT, PF__PRE_PREFIX_SPACE, PF__PRE_METASPACE, PF__PRE_MOSES,
    PF__PRE_BASIC_JA /* BertJapaneseTokenizer's basic split (src/moses.c) */
} pf__tok_pre_kind;

typedef struct pf__tok_pre {
    pf__tok_pre_kind kind;
    pf__tok_pattern pattern;    /* SPLIT */
    pf__tok_behavior behavior;  /* SPLIT */
    int invert;                 /* SPLIT */
    unsigned flags;             /* PF__PAT_FLAGS */
    char *lit;                  /* PF__PAT_LITERAL; METASPACE: the replacement (malloc'd) */
    size_t lit_len;
    pf__tok_prepend prepend;    /* METASPACE */
    int split;                  /* METASPACE */
    int lower;                  /* BASIC_JA: do_lower_case */
} pf__tok_pre;

typedef enum pf__tok_dec_kind {
    PF__DEC_BYTELEVEL, PF__DEC_REPLACE, PF__DEC_BYTEFALLBACK, PF__DEC_FUSE, PF__DEC_STRIP, PF__DEC_METASPACE,
    PF__DEC_BPE, PF__DEC_WORDPIECE,
    PF__DEC_UTF8_IGNORE, /* ByT5: the tokens' bytes as one token, less the bytes that are not valid UTF-8 */
    PF__DEC_SPM,         /* Marian's and M2M100's convert_tokens_to_string: runs between special tokens
                            decoded by SentencePiece (t->spm), then stripped */
    PF__DEC_JOINED_WORDPIECE, /* BertJapanese's convert_tokens_to_string: " ".join(tokens), " ##" removed, stripped */
    PF__DEC_SUFFIX_BPE,  /* XLM's and FlauBERT's convert_tokens_to_string: the tokens joined, each "</w>" a
                            space, stripped */
    PF__DEC_WORD_BPE     /* the Python BPE classes' (CTRL's, PhoBERT's, ...) convert_tokens_to_string: the tokens
                            joined by spaces, "@@ " removed, stripped */
} pf__tok_dec_kind;

typedef struct pf__tok_dec {
    pf__tok_dec_kind kind;
    char *a, *b; /* Replace: pattern a, content b; Metaspace, Strip: the character a; BPE: suffix a;
                    WordPiece: prefix a */
    size_t a_len, b_len;
    size_t start, stop;      /* Strip */
    pf__tok_prepend prepend; /* Metaspace */
    int cleanup;             /* WordPiece */
} pf__tok_dec;
#define PF__TOK_MAX_NORMS 16
#define PF__TOK_MAX_PRE 16
#define PF__TOK_MAX_DECS 16
#define PF__TOK_SEQ_A (-1) /* in a post-processor template: the first text's ids */
#define PF__TOK_SEQ_B (-2) /* ... and the second's */

typedef struct pf__tok_post_item { /* a piece of a post-processor template */
    int32_t id;       /* a special token's id, or PF__TOK_SEQ_A / PF__TOK_SEQ_B */
    uint32_t type_id; /* the token type id of its ids */
} pf__tok_post_item;

typedef struct pf__tok_added {
    char *content; /* malloc'd, NUL-terminated: what it decodes to */
    size_t len;
    uint32_t hash; /* pf__tok_hash of content (the added_slots index) */
    char *match;   /* what is looked for: content, normalized when normalized is set (malloc'd) */
    size_t match_len;
    int32_t id;
    unsigned char special, normalized, lstrip, rstrip, single_word;
    unsigned char unmatched; /* addressable by id and string, never looked for in a text (M2M100's
                                language codes when the config does not list them as special) */
} pf__tok_added;

/* A byte trie built at once from a list of strings (pf__trie_build): nodes[0] is the root, the
   others in breadth-first order; a node's children are nodes first .. first + count - 1, in the
   order of their bytes. With pf__trie_link, an Aho-Corasick automaton: fail[v] is the node of the
   longest proper suffix of v's string that is in the trie, out[v] the value of the longest key that
   v's string ends with (-1: none). */
typedef struct pf__trie_node {
    uint32_t first;
    uint16_t count;
    unsigned char byte; /* the byte from its parent */
    int32_t value;      /* the key that ends here (the smallest value of equal keys), or -1 */
} pf__trie_node;

typedef struct pf__trie {
    pf__trie_node *nodes;
    uint32_t num_nodes;
    uint32_t *fail;
    int32_t *out;
} pf__trie;

typedef struct pf__trie_key { /* a string to build from; reversed: read from its end */
    const unsigned char *s;
    size_t len;
    int32_t value;
} pf__trie_key;
PF_PRIVATE int pf__trie_build(pf__trie *tr, pf__trie_key *keys, size_t n, int reversed);
PF_PRIVATE int pf__trie_link(pf__trie *tr);
PF_PRIVATE uint32_t pf__trie_child(const pf__trie *tr, uint32_t node, unsigned char byte);
PF_PRIVATE void pf__trie_free(pf__trie *tr);

/* PF__MODEL_BYTES: ByT5, each byte of the text is id byte + PF__BYTES_OFFSET (no vocab file) */
/* PF__MODEL_WORD_BPE: the Python classes' BPE on strings (t->word_bpe), pieces looked up by their text */
typedef enum pf__tok_model_kind {
    PF__MODEL_BPE, PF__MODEL_WORDPIECE, PF__MODEL_UNIGRAM, PF__MODEL_BYTES, PF__MODEL_WORD_BPE,
    PF__MODEL_CHARS /* BertJapanese's character subwords: NFKC, each character its id */
} pf__tok_model_kind;
#define PF__BYTES_OFFSET 3 /* ByT5's <pad> <eos> <unk> come first */

typedef struct pf__tok_piece { /* a Unigram piece: its string in vocab_text, and its score */
    size_t offset;
    uint32_t len;
    double score;
} pf__tok_piece;

/* Vocab hash slot: a token string (in vocab_text) and its id; id -1 marks an empty slot. */
typedef struct pf__tok_vocab_slot {
    uint32_t hash, len;
    size_t offset;
    int32_t id;
} pf__tok_vocab_slot;

/* Merge hash slot: the pair (left id << 32 | right id), its rank and the id it merges into;
   rank UINT32_MAX marks an empty slot. */
typedef struct pf__tok_merge_slot {
    uint64_t pair;
    uint32_t rank;
    int32_t new_id;
} pf__tok_merge_slot;

struct pf_tokenizer {
    int32_t num_ids; /* ids are 0 .. num_ids-1; an id no token has is unknown */

    /* model vocab: token string -> id (open addressing, linear probing) */
    pf__tok_vocab_slot *vocab; /* [vocab_mask + 1] */
    size_t vocab_mask, vocab_count;
    char *vocab_text; /* the token strings, each NUL-terminated */
    size_t vocab_text_len;

    pf__tok_merge_slot *merges; /* [merges_mask + 1] */
    size_t merges_mask;

    /* model options */
    pf__tok_model_kind model;
    int byte_level;    /* the model sees each byte as its character in GPT-2's byte map */
    int32_t unk_id;    /* -1: none. BPE drops characters without a token then, as HF does; WordPiece
                          fails the encoding where it needs one, as HF does */
    int fuse_unk, ignore_merges, byte_fallback;
    char *prefix, *suffix; /* continuing_subword_prefix, end_of_word_suffix; NULL: none */
    size_t prefix_len, suffix_len;
    size_t max_word_chars; /* WordPiece: max_input_chars_per_word (a longer word is unk) */
    pf__tok_piece *pieces; /* Unigram: [num_pieces], by id (a string listed twice maps to its
                              last id, as HF's token map does, and both ids decode to it) */
    size_t num_pieces;
    double unk_score;      /* Unigram: what an unknown character costs: HF's lowest score less 10 */
    size_t max_token_len;  /* the longest vocab string, in bytes: no longer piece is looked up */

    /* byte-level: the character standing for each byte (UTF-8), the id of its one-character token
       (-1 when the vocab lacks it), and the inverse map */
    uint16_t byte_char[256];
    unsigned char byte_str[256][2];
    unsigned char byte_str_len[256];
    int32_t byte_id[256];
    int16_t char_byte[512];
    int32_t fallback_id[256]; /* byte_fallback: the id of <0xXX>, or -1 */

    /* each id's token string (into vocab_text or an added token); id_len -1: unknown id */
    const char **id_str;
    int32_t *id_len;

    /* added tokens (each content once); added_slots: their index + 1 by content hash (open
       addressing, 0 empty; [added_mask + 1]); added_of_id[id]: the first one with that id, or -1
       ([num_ids], once finished); added_ac[pass]: the reversed matches of pass 0 (normalized =
       false) and 1 (true), an automaton that finds the longest match at each place of a text in
       one pass from its end (values: indexes into added) */
    pf__tok_added *added;
    size_t num_added, added_cap;
    uint32_t *added_slots;
    size_t added_mask;
    int32_t *added_of_id;
    pf__trie added_ac[2];

    pf__tok_norm norms[PF__TOK_MAX_NORMS];
    int num_norms;
    pf__tok_pre pres[PF__TOK_MAX_PRE];
    int num_pres;
    pf__tok_dec decs[PF__TOK_MAX_DECS];
    int num_decs;
    int has_decoder; /* 0: tokens are joined with spaces, as HF does without a decoder */

    /* the post-processor's templates, [0] for one text, [1] for a pair (without one: A, and A
       then B of type id 1, as HF's default), and the special ids each adds */
    pf__tok_post_item *post[2];
    size_t post_len[2], post_added[2];
    int has_post; /* a post-processor that adds tokens or sets type ids was read */
    int eos_once;  /* ByT5: a text whose ids end with the template's special token does not get it
                      again (its _add_eos_if_not_present) */

    int32_t bos_id, eos_id; /* tokenizer_config.json's bos_token / eos_token; -1: unknown */
    char *bos_token, *eos_token; /* their text, for chat templates; NULL: not named */
    char *chat_template;      /* chat_template.jinja, else tokenizer_config.json's; NULL: none */
    char *chat_template_note; /* why there is none when the config's list names no "default" */

    /* SentencePiece files without tokenizer.json (Marian, M2M100): spm is the .model's own
       tokenizer (pieces by SentencePiece id, their scores or merges), this one's model step;
       spm_ids maps its ids to this vocab's (vocab.json), and a run of unknown characters is looked
       up here by its text, as the slow tokenizers map pieces through vocab.json */
    struct pf_tokenizer *spm;
    int32_t *spm_ids;           /* [spm->num_pieces] */
    int spm_marian;             /* decode: a space after each special token, "▁" replaced (Marian) */
    int cleanup_spaces;         /* decode: clean_up_tokenization_spaces (the Python classes' decode) */
    int spm_upper;              /* decode: each SentencePiece run upper-cased (Speech2Text's do_upper_case) */
    /* in spm itself: */
    unsigned char *spm_types;   /* [num_pieces]: each piece's SentencePiece type */
    unsigned spm_flags;         /* PF__SPM_DUMMY_PREFIX | ... of its normalizer_spec */
    char *spm_unk_surface;      /* what <unk> decodes to (trainer_spec.unk_surface) */
    size_t spm_unk_surface_len;

    /* the Python BPE classes (CTRL, Blenderbot-small, PhoBERT, BERTweet): word_bpe's vocab is the
       symbols their merges make (ids from 1; 0 stands for a character no merge has), its merges
       those of the strings, ranked */
    struct pf_tokenizer *word_bpe;
    int word_bpe_suffix;      /* XLM's, FlauBERT's and FSMT's bpe(): the pieces looked up as the merges make
                                 them, the last with "</w>" (no "@@") */
    int moses_lang;           /* XLM, FlauBERT, FSMT: the Moses pipeline's language (pf__moses_lang) */
    unsigned moses_opts;      /* ... and its PF__MOSES_OPT_* */
    const char *moses_prefixes; /* ... and the language's nonbreaking prefixes (pf__moses_prefix_list) */
    int word_bpe_blenderbot;  /* Blenderbot-small's bpe(): punctuation set apart, newlines as __newln__,
                                 each piece lowercased as Python's str.lower() */
    unsigned char *py_cased;  /* for that lower(): a bitmap of the code points below PF__PY_CASED_END that
                                 are cased (final sigma) */
};
#define PF__PY_CASED_END 0x20000u
PF_PRIVATE uint32_t pf__tok_hash(const char *s, size_t len);
PF_PRIVATE size_t pf__tok_pow2_at_least(size_t n);
PF_PRIVATE int32_t pf__tok_vocab_find(const pf_tokenizer *t, const char *s, size_t len);
PF_PRIVATE pf__tok_added *pf__tok_added_find(const pf_tokenizer *t, const char *s, size_t len);
PF_PRIVATE size_t pf__tok_pair_slot(uint64_t pair, size_t mask);

typedef struct pf__tok_sym {
    int32_t id;          /* -1: merged into its left neighbour */
    uint32_t prev, next; /* UINT32_MAX: none */
} pf__tok_sym;

typedef struct pf__tok_cand { /* a possible merge of the symbols at pos and its next */
    uint32_t rank, pos;
    int32_t new_id;
} pf__tok_cand;

typedef struct pf__tok_ctx {
    const pf_tokenizer *t;
    const pf_tokenizer *outer; /* while a SentencePiece model (t = outer->spm) runs: the tokenizer whose
                                  ids it emits */
    int32_t *ids;       /* [ids_cap]: the ids so far, count of them */
    size_t ids_cap, count;
    int out_of_memory;  /* an id could not be stored */
    int needs_unk;      /* a word needed the unk token the model lacks (HF fails too) */
    pf__tok_sym *sym;   /* [sym_cap] */
    pf__tok_cand *heap; /* [heap_cap]: a merge adds at most one candidate net */
    size_t sym_cap, heap_cap;
    pf__tok_buf norm[2];            /* normalizer steps, ping-pong */
    pf__tok_cps cps, cps_tmp;       /* NFC / NFD */
    pf__tok_buf pre[PF__TOK_MAX_PRE]; /* pre-tokenizer stages that rewrite text */
    pf__tok_buf unit;               /* a BPE unit with prefix / suffix */
    pf__tok_buf mapped;             /* a word as byte-level characters (ignore_merges) */
    pf__tok_buf word[2];            /* Blenderbot-small: a word rewritten, a piece of it lowercased; XLM:
                                       a word lowercased */
    pf__tok_buf moses[2];           /* the Moses pipeline's steps, ping-pong */
    struct pf__tok_node *lattice;   /* Unigram: [lattice_cap] */
    size_t *path;                   /* Unigram: [path_cap], the best path's piece ends */
    size_t lattice_cap, path_cap;
    int32_t *added_at[2];           /* per pass: the added token that is the longest match at each
                                       byte of the piece being split, or -1 */
    size_t added_at_cap[2];
} pf__tok_ctx;
PF_PRIVATE void pf__tok_ctx_free(pf__tok_ctx *c);
PF_PRIVATE void pf__tok_emit(pf__tok_ctx *c, int32_t id);
PF_PRIVATE int32_t pf__tok_spm_lookup(const pf_tokenizer *t, const unsigned char *s, size_t len);
PF_PRIVATE int pf__tok_normalize(pf__tok_ctx *c, const unsigned char *s, size_t n, const unsigned char **out,
                             size_t *out_len, int *first);

typedef struct pf__tok_node { /* the best segmentation of a word's bytes up to here */
    double score;  /* the sum of its pieces' scores */
    size_t start;  /* where its last piece starts */
    int32_t id;    /* its last piece */
    int reached;
} pf__tok_node;
PF_PRIVATE int pf__tok_model(pf__tok_ctx *c, const unsigned char *s, size_t len);
PF_PRIVATE unsigned char *pf__py_cased_bitmap(void);

/* ---- src/tokenizer_split.c ---- */
PF_PRIVATE int pf__py_space(uint32_t cp);
PF_PRIVATE int pf__py_lower(const pf_tokenizer *t, const unsigned char *s, size_t n, pf__tok_buf *out);
PF_PRIVATE int pf__tok_is_ascii(const unsigned char *s, size_t n);
PF_PRIVATE int pf__tok_pre_run(pf__tok_ctx *c, int stage, const unsigned char *s, size_t len, int first);
PF_PRIVATE int pf__tok_from_cps(pf__tok_buf *out, const pf__tok_cps *cps);
PF_PRIVATE int pf__py_normalize(pf__tok_ctx *c, pf__tok_norm_kind kind, const unsigned char *s, size_t n,
                                pf__tok_buf *out);

/* Moses (src/moses.c): what the pipeline does besides its language's rules */
#define PF__MOSES_OPT_XLM_LOWER 1u   /* XLM's do_lowercase_and_remove_accent, on each word */
#define PF__MOSES_OPT_FLAUBERT 2u    /* FlauBERT's preprocess_text: `` and '' to ", NFC */
#define PF__MOSES_OPT_LOWER_NFC 4u   /* ... and lower() after NFC (its do_lowercase) */
#define PF__MOSES_OPT_LOWER_FIRST 8u /* FSMT's do_lower_case: lower() before all */
#define PF__MOSES_OPT_DASHES 16u     /* FSMT's aggressive_dash_splits */
#define PF__MOSES_OPT_ESCAPE 32u     /* FSMT's XML escapes */
/* The classes of a code point (test/gen_moses_tables.py's FLAGS) */
#define PF__MOSES_PAD 0x001u      /* PAD_NOT_ISALNUM's class: set apart with a space on each side */
#define PF__MOSES_ALNUM 0x002u    /* [IsAlnum] */
#define PF__MOSES_N 0x004u        /* [IsN] */
#define PF__MOSES_ALPHA 0x008u    /* [IsAlpha] */
#define PF__MOSES_LOWER 0x010u    /* in IsLower */
#define PF__MOSES_PY_DIGIT 0x020u /* Python re's \d */
#define PF__MOSES_PY_SPACE 0x040u /* Python re's \s (str.isspace) */
#define PF__MOSES_PY_OTHER 0x080u /* Python's unicodedata.category C* */
#define PF__MOSES_PY_MN 0x100u    /* Python's unicodedata.category Mn */
#define PF__MOSES_PY_ZS 0x200u    /* Python's unicodedata.category Zs */
#define PF__MOSES_PY_PUNCT 0x400u /* Python's unicodedata.category P* */

#define PF__ML_EN 1u /* the languages' bits, in the order of pf__moses_lang (test/gen_moses_tables.py's LANGS) */
#define PF__ML_FR 2u
#define PF__ML_DE 4u
#define PF__ML_RU 8u
PF_PRIVATE unsigned pf__moses_class(uint32_t cp);
PF_PRIVATE const uint32_t *pf__py_nf_find(uint32_t cp, uint32_t kind);
PF_PRIVATE int pf__moses_lang(const char *lang);
PF_PRIVATE const char *pf__moses_prefix_list(int lang);
PF_PRIVATE int pf__moses_words(pf__tok_ctx *c, const unsigned char *s, size_t len, pf__tok_buf **out);
PF_PRIVATE int pf__bj_words(pf__tok_ctx *c, const unsigned char *s, size_t n, int lower, pf__tok_buf **out);
PF_PRIVATE pf_result pf__tok_from_bert_japanese(pf_tokenizer *t, const char *dir, const pf__json *config,
                                                const char *config_path, char *err, size_t err_size);

/* ---- src/tokenizer_load.c ---- */
PF_PRIVATE int pf__tok_json_bool(const pf__json *obj, const char *key, int def);
PF_PRIVATE const pf__json *pf__tok_json_str(const pf__json *obj, const char *key, int *bad);
PF_PRIVATE int pf__tok_show_len(size_t len);
PF_PRIVATE pf_result pf__tok_vocab_alloc(pf_tokenizer *t, size_t count, size_t text_len, const char *path, char *err,
                                     size_t err_size);
PF_PRIVATE size_t pf__tok_vocab_insert(pf_tokenizer *t, const char *s, size_t len, int32_t id);
PF_PRIVATE pf_result pf__tok_set_vocab(pf_tokenizer *t, const pf__json *vocab, const char *what,
                                   const char *path, char *err, size_t err_size);
PF_PRIVATE void pf__tok_merge_put(pf_tokenizer *t, int32_t a, int32_t b, uint32_t rank, int32_t ab);
typedef struct pf__tok_merge_text { /* a merge rule as read: two token strings */
    const char *a, *b;
    size_t a_len, b_len;
} pf__tok_merge_text;
PF_PRIVATE pf_result pf__tok_set_merges(pf_tokenizer *t, const pf__tok_merge_text *merges, size_t n,
                                    const char *path, char *err, size_t err_size);
PF_PRIVATE pf_result pf__tok_read_merges_txt(const char *path, char **text, pf__tok_merge_text **mt, size_t *n,
                                             size_t *word_ends, char *err, size_t err_size);
PF_PRIVATE pf_result pf__tok_read_components(pf_tokenizer *t, const pf__json *root, const char *path, char *err,
                                             size_t err_size);
PF_PRIVATE pf_result pf__tok_add_token(pf_tokenizer *t, const char *content, size_t len, int32_t id,
                                   int special, int normalized, int lstrip, int rstrip, int single_word);
PF_PRIVATE char *pf__tok_dup(const char *s, size_t n);
PF_PRIVATE pf_result pf__tok_set_charsmap(pf__tok_norm *n, const unsigned char *data, size_t len, const char *what,
                                      const char *path, char *err, size_t err_size);
PF_PRIVATE pf__tok_norm *pf__tok_add_norm(pf_tokenizer *t, pf__tok_norm_kind kind);
PF_PRIVATE pf_result pf__tok_out_of_memory(const char *path, char *err, size_t err_size);
PF_PRIVATE pf__tok_dec *pf__tok_add_dec(pf_tokenizer *t, pf__tok_dec_kind kind);
PF_PRIVATE pf_result pf__tok_set_post(pf_tokenizer *t, int which, const pf__tok_post_item *items, size_t n,
                                  const char *path, char *err, size_t err_size);
PF_PRIVATE pf_result pf__tok_finish(pf_tokenizer *t, const char *path, char *err, size_t err_size);
PF_PRIVATE pf_result pf__tok_from_json(pf_tokenizer *t, const pf__json *root, const char *path, char *err,
                                   size_t err_size);
PF_PRIVATE pf_result pf__tok_read_json(const char *path, int optional, pf__json **root, char *err, size_t err_size);
PF_PRIVATE pf_result pf__tok_read_added_decoder(pf_tokenizer *t, const pf__json *config, const char *path, char *err,
                                            size_t err_size);
PF_PRIVATE pf_result pf__tok_from_files(pf_tokenizer *t, const char *dir, char *err, size_t err_size);
PF_PRIVATE pf_result pf__tok_listed_specials(pf_tokenizer *t, const pf__json *config, int32_t next_id,
                                             const char *config_path, char *err, size_t err_size);
PF_PRIVATE int32_t pf__tok_config_token(const pf_tokenizer *t, const pf__json *config, const char *key);
PF_PRIVATE pf_result pf__tok_from_byt5(pf_tokenizer *t, const pf__json *config, const char *path, char *err,
                                   size_t err_size);

/* ---- src/tokenizer_bpe_files.c ---- */
PF_PRIVATE int pf__tok_bpe_files_class(const char *tokenizer_class);
PF_PRIVATE pf_result pf__tok_from_bpe_files(pf_tokenizer *t, const char *dir, const pf__json *config, const char *config_path,
                                            char *err, size_t err_size);

/* ---- src/sentencepiece.c ---- */
PF_PRIVATE pf_result pf__tokenizer_load_dir(const char *dir, pf_tokenizer **out, char *err, size_t err_size);

/* ---- src/chat_template.c ---- */
#include <setjmp.h>
#include <time.h>

/* ---- src/preprocess.c ---- */

typedef struct pf__fft {
    int n, num_factors;
    int factors[40];
    double *twiddle; /* [n][2]: e^(-2 pi i k / n) */
} pf__fft;

struct pf_audio_processor {
    pf_audio_kind kind;
    int sampling_rate;
    int do_normalize;                 /* Wav2Vec2 */
    int num_mel_bins;                 /* Whisper: feature_size; Speech2Text: num_mel_bins */
    int n_fft, hop_length, frame_length;
    size_t n_samples;                 /* Whisper: the padded length, chunk_length seconds */
    double padding_value;
    int cmvn, normalize_means, normalize_vars; /* Speech2Text */
    double *window;                   /* [frame_length] */
    double *mel_filters;              /* [n_fft / 2 + 1][num_mel_bins] */
    pf__fft fft;
};

/* ---- src/backend.c ---- */
typedef struct pf__rank pf__rank;
typedef struct pf__group pf__group;

/* Flags the ranks read between operations (a failure, aborted communicators): atomic loads and
   stores (GCC's and Clang's builtins), so that readers need no lock. */
#define PF__LOAD_FLAG(flag) __atomic_load_n(&(flag), __ATOMIC_ACQUIRE)
#define PF__STORE_FLAG(flag, value) __atomic_store_n(&(flag), (value), __ATOMIC_RELEASE)

/* A weight on a rank's device, logical [rows (out), cols (in)] row-major; vectors have cols 1. */
typedef struct pf__weight {
    void *data; /* NULL when the slot is absent or the slice is empty */
    pf__dtype dtype;
    size_t rows, cols;
    size_t col_begin; /* the slice's first column in the whole tensor (row-split weights) */
    /* A stack whose members keep different block formats (a GGUF's q, k and v in Q4_K, Q4_K and
       Q6_K): the stack's weight has no dtype of its own (PF__DTYPE_OTHER) and `parts` is its first
       member's weight, each member's `next` the following one; products run member by member. */
    const struct pf__weight *parts, *next;
    /* A reordered matrix's blocks (pf__packed.reordered; CPU ranks): input_order [cols] in rank
       memory, the blocks' column j multiplying x[input_order[j]] (PF__NO_INPUT: a pad, zero), x
       being [inputs] wide. NULL: x is [cols], as the blocks hold it. */
    const uint32_t *input_order;
    size_t inputs;
} pf__weight;

/* The rows of LayoutLM's 2-D position tables a token reads, in transformers' order of summation:
   x0, y0, x1, y1 (the x and y tables), y1 - y0 (the height table), x1 - x0 (the width table). */
#define PF__BOX_LOOKUPS 6

/* What one forward call computes, the same on every rank. */
typedef struct pf__step {
    const int32_t *ids;     /* host, [batch][seq_len] */
    int batch, seq_len;
    int past;               /* tokens already in the KV cache of each sequence */
    int segment_before;     /* a chunk of a longer step (pf__rank_forward_chunks): the step's positions
                               before it, which Transformer-XL's segment began with; 0 otherwise */
    const float *inv_freq;  /* host, [pf__rope_floats]: rotary frequencies for this step (the global
                               table, then the local one where the model has it), or NULL */
    const int *pad;         /* host, [batch]: left pads of each sequence (masked keys; positions
                               count from the first real token), or NULL */
    const int32_t *type_ids;/* host, [batch][seq_len]: token type (segment) ids; set whenever the
                               model has a token type table */
    const int32_t *box_rows;/* host, [PF__BOX_LOOKUPS][batch][seq_len]: the rows of LayoutLM's 2-D
                               position tables each token reads; set whenever the model has them */
    const int32_t *table_rows;/* host, [PF__TABLE_TYPES][batch][seq_len]: TAPAS: row 0 each token's position
                               (restarting in its cell where reset_positions_per_cell), rows 1 .. 6 its table
                               types 1 .. 6 (type 0 is type_ids); NULL: positions from the row's start, types 0 */
    const int32_t *global_tokens; /* host, [batch][seq_len]: 1 where a token has Longformer's global
                               attention, 0 elsewhere (pads too); NULL: no token has */
    const float *regions;   /* host, [batch][seq_len][visual_embedding_dim]: VisualBERT's region features at
                               their positions (row b's last num_regions[b]; zeros elsewhere), or NULL: none;
                               LXMERT's then [batch][seq_len][visual_pos_dim] their boxes likewise
                               (pf__region_floats) */
    /* LUKE's entities (pf_encode_entities), the last num_entities[b] positions of row b, numbered
       row after row (e < num_entity_rows): */
    const int32_t *entity_ids;       /* host, [num_entity_rows]: entity vocabulary ids; NULL: no entities */
    const int32_t *entity_positions; /* host, [mention_length][num_entity_rows]: the word positions (in the
                                        row's words, from 0) whose position rows an entity averages, -1 past
                                        its mention's end */
    const float *entity_scales;      /* host, [num_entity_rows]: 1 / the mention's position count */
    const int *num_entities;         /* host, [batch] */
    int num_entity_rows, mention_length;
    const int *num_regions; /* host, [batch]: the regions ending each row (its text before them); set with regions */
    int cross_len;          /* an encoder-decoder's decoder step: the encoder's positions per row
                               (its output's keys and values are in the ranks' cross caches) */
    const int *cross_pad;   /* host, [batch]: the encoder input's left pads, or NULL */
    const float *features;  /* host, [batch][seq_len][hidden]: a speech encoder's frames from its
                               front end (the blocks' input), or NULL */
    const float *patches;   /* host, [batch][patches][channels * patch^2]: an image encoder's input
                               (its positions after the class and distillation tokens), or NULL */
    const int *cache_rows;  /* host, [batch]: the KV cache row of each sequence (continuous
                               batching places requests in free rows), or NULL: row b */
} pf__step;

/* Which keys a query sees (pf__attn_shape.mask). */
enum {
    PF__MASK_BIDIRECTIONAL, /* every key of its sequence (encoders); a relative bias bucketed both ways */
    PF__MASK_CAUSAL,        /* keys up to its own position (decoders); a relative bias towards the past */
    PF__MASK_CROSS          /* all cache_len keys of its row, the step's left pads excepted, q rows
                               packed [heads * head_dim] (a decoder's attention over the encoder) */
};

/* The attention of one layer on one rank. Local query head h reads key/value head
   (head_begin + h) / kv_group - kv_begin of the rank's cache. */
/* The shape of Funnel's relative terms in one layer (pf__backend.funnel_bias): queries at one level
   of pooling, keys at the same or the one before. */
/* Reformer's attention over listed keys (pf__backend.reformer_attend): len positions of a row,
   the rank's heads of head_dim, rounds hash rounds of listed keys each; shared_qk 1 for LSH (the
   keys are the queries' vectors length-normalised: k / sqrt(mean(k^2) + 1e-6) / sqrt(head_dim)),
   0 for local attention (k / sqrt(head_dim)). */
typedef struct pf__reformer_shape {
    int len, heads, head_dim, rounds, listed, shared_qk;
} pf__reformer_shape;
/* A listed key is position * 4 + its code: */
enum { PF__REFORMER_PLAIN, PF__REFORMER_MASKED /* score -1e9 */, PF__REFORMER_SELF /* score -1e5 (LSH's own position) */ };

typedef struct pf__funnel_shape {
    int batch, q_len, k_len, heads, head_dim;
    int q_first, q_stride, k_first, k_stride; /* a row's token t at position first + (t - pad) * stride */
    int rel_first;     /* the distance of rel's row 0; row m is rel_first + m * k_stride */
    int separate_cls;
    /* 1 (XLNet): a query and a key are in the same segment when their ids are equal, seg_embed's row 0
       the same segment's vectors; 0 (Funnel): id 2 (the class token's) is the same as any, row 1 the
       same segment's */
    int exact_segments;
    int causal;        /* 1: a key after the query gets -inf (XLNet's attn_type "uni") */
    int window;        /* > 0: a key window or more positions before the query gets -inf too
                          (Transformer-XL's same_length); 0: none */
    float scale;
} pf__funnel_shape;

typedef struct pf__attn_shape {
    int heads, kv_heads, head_dim;
    int head_begin, kv_begin, kv_group;
    int cache_len;
    int window;             /* keys j with pos - j < window; 0: all earlier keys */
    int chunk;              /* > 0: keys j of the query's chunk, (j - pad) / chunk == (pos - pad) / chunk
                               (Llama 4's chunked attention); 0: none */
    int mask;               /* PF__MASK_*: the keys a query sees, left pads always excepted */
    int local_window;       /* > 0 (PF__MASK_BIDIRECTIONAL): Longformer's local attention: the keys j with
                               |pos - j| <= local_window, and the step's global tokens (s->global_tokens) */
    int global_queries;     /* 1 (PF__MASK_BIDIRECTIONAL): only the step's global tokens' queries, over every
                               key of their sequence; the other rows of out are left as they are */
    int sparse_block, sparse_random; /* sparse_block > 0 (PF__MASK_BIDIRECTIONAL, past 0): BigBird's
                               block-sparse attention, key j counted pf__block_sparse_count times
                               in query i's softmax (score + log count; 0: probability 0) */
    int rotary_dim;         /* for the rotary op */
    float rope_scale;       /* the rotary op's cos and sin times this (YaRN's and LongRoPE's attention
                               factor, transformers' attention_scaling); 0: 1 */
    int rope_table;         /* which of the step's frequency tables the layer rotates with (pf__rope_floats):
                               0 the global one, 1 the local layers' (rope_local_theta) */
    pf__dtype cache_dtype;  /* how the cache read (and appended to) stores keys and values */
    float scale;
    float softcap;          /* > 0: score = tanh(score * scale / softcap) * softcap, before ALiBi, bias and mask */
    const float *alibi;     /* device, [heads]: score += slope * key position; NULL: none */
    int alibi_rounded;      /* 1: score += bf16(slope * key position) * scale instead (Falcon's) */
    const float *dense_bias; /* device, [batch * seq_len][heads][seq_len]: score += dense_bias[query row][h][key]
                               after the scale (this step's keys, past 0: encoders); NULL: none */
    const float *rel_bias;  /* device, [heads][rel_rows]: score += rel_bias[h][bucket(key - query)],
                               bucketed as T5 does (bidirectional); NULL: none */
    int rel_rows, rel_buckets, rel_max_distance;
    int latent_rank, v_head_dim; /* latent attention: kv_lora_rank and the value heads' width (head_dim
                               is q's and k's: its last rotary_dim values rotated) */
    const pf__weight *sinks; /* [heads]: the rank's heads' sink logits, one more term exp(sink) in each
                               softmax's denominator with no value (gpt-oss); NULL: none */
    const pf__weight *qkv_bias; /* the QKV projection's bias, which its GEMM left out (a backend with
                               qkv_bias_in_attention): added to the whole qkv rows by rotary where
                               it runs, else by kv_append; NULL once added, or with none to add */
} pf__attn_shape;

/* One rank's candidate for a row's greedy token: its best logit and that token's vocabulary id
   (-1: none), as the backend's argmax finds it. */
typedef struct pf__choice {
    float value;
    int32_t index;
} pf__choice;

/* Operations a backend provides. All run on the rank's own thread, in order; activations are
   fp32 [tokens][features] row-major; an op never fails on its own except alloc (a backend whose
   calls can fail records it with pf__rank_fail). */
struct pf__job;

typedef struct pf__backend {
    const char *name;
    int host_memory; /* allocations are host memory the loader may write directly */
    int attention_sinks; /* 1: attend honours pf__attn_shape.sinks */
    /* Before the rank threads start / after they stopped, on the caller's thread (e.g. NCCL
       communicators for all ranks at once); NULL when there is nothing to do. */
    pf_result (*group_begin)(pf__group *g, char *message, size_t size);
    void (*group_end)(pf__group *g);
    /* First thing on the rank's thread (e.g. cudaSetDevice), and last. */
    int (*rank_begin)(pf__rank *r);
    void (*rank_end)(pf__rank *r);
    void *(*alloc)(pf__rank *r, size_t bytes);
    void (*free)(pf__rank *r, void *ptr);
    void (*upload)(pf__rank *r, void *dst, const void *host, size_t bytes);
    void (*download)(pf__rank *r, void *host, const void *src, size_t bytes);
    /* rows of row_bytes each, strided on both sides (a rank's columns of the host logits) */
    void (*download_rows)(pf__rank *r, void *host, size_t host_stride, const void *src, size_t src_stride,
                          size_t row_bytes, size_t rows);
    /* device to device */
    void (*copy)(pf__rank *r, void *dst, const void *src, size_t bytes);
    /* out[b*T+t] = tokens[ids[b][t] - first] * scale for ids among the rank's tokens rows
       (first..first + tokens->rows), zeros for the others' */
    void (*embed)(pf__rank *r, float *out, const pf__weight *tokens, const pf__step *s, float scale, int first);
    /* x[b*T+t] += table[offset + past + t] */
    void (*add_positions)(pf__rank *r, float *x, const pf__weight *table, const pf__step *s, int offset);
    /* LayerNorm: (x - mean) / sqrt(var + eps) * weight + bias; RMSNorm: x / sqrt(mean(x^2) + eps)
       * weight; per row of n; out may be x */
    void (*norm)(pf__rank *r, float *out, const float *x, const pf__weight *weight, const pf__weight *bias,
                 size_t rows, size_t n, float eps, pf__norm kind);
    /* out[rows][w.rows] = x[rows][w.cols] w^T (+ bias) */
    void (*matmul)(pf__rank *r, float *out, const float *x, const pf__weight *w, const pf__weight *bias, size_t rows);
    /* x = act(x) */
    void (*activation)(pf__rank *r, float *x, size_t count, pf__activation act);
    /* x = tanh(x / cap) * cap elementwise (soft-capped logits) */
    void (*softcap)(pf__rank *r, float *x, size_t count, float cap);
    /* out[row][i] = act(in[row][i]) * in[row][width + i]: gate and up side by side */
    void (*gated_activation)(pf__rank *r, float *out, const float *in, size_t rows, size_t width, pf__activation act);
    /* out[row][i] = (clamp(up, -limit, limit) + 1) * g * sigmoid(alpha g), g = min(gate, limit), gate =
       in[row][i], up = in[row][width + i] (gpt-oss's experts); NULL: the backend has none */
    void (*clamped_swiglu)(pf__rank *r, float *out, const float *in, size_t rows, size_t width, float alpha, float limit);
    /* x[rows][n] += y (+ bias); y may be NULL (bias alone) */
    void (*add_residual)(pf__rank *r, float *x, const float *y, const pf__weight *bias, size_t rows, size_t n);
    /* x[count] *= factor (Granite's residual multiplier and logits scaling) */
    void (*scale)(pf__rank *r, float *x, size_t count, float factor);
    /* Normalises, in place in the qkv rows [q (heads*head_dim) | k (kv_heads*head_dim) | v] of
       `rows` tokens, each q head and each k head over its head_dim values: a norm of `kind`
       (pf__backend.norm's math) with the gain q_weight (k_weight) [head_dim], shared by the heads,
       or with per_head [the rank's heads][head_dim], head h's gain at h * head_dim (NULL: that
       side is left as it is, as v always is), plus q_bias (k_bias) [head_dim], shared by the
       heads (NULL: none). a->qkv_bias is not added: the caller has the GEMM add it. */
    void (*head_norm)(pf__rank *r, float *qkv, const pf__weight *q_weight, const pf__weight *k_weight,
                      const pf__weight *q_bias, const pf__weight *k_bias, size_t rows, const pf__attn_shape *a,
                      float eps, pf__norm kind, int per_head);
    /* PF__QK_NORM_PROJECTION's statistics: sums[t][0] = the sum of squares of the rank's q values
       of token t of the qkv rows, sums[t][1] = of its k heads k_first..k_first + k_count - 1
       (local indices: the ones it counts); zeros on a rank without heads. */
    void (*qk_sum_squares)(pf__rank *r, float *sums, const float *qkv, size_t rows, const pf__attn_shape *a,
                           int k_first, int k_count);
    /* Then each q value x = gain * (x / sqrt(sums[t][0] / q_width + eps)), k the same with
       sums[t][1] and k_width, over all ranks' summed sums; gains [the rank's q] and [its k] (NULL:
       that side left as it is). */
    void (*qk_scale)(pf__rank *r, float *qkv, const float *sums, const pf__weight *q_weight, const pf__weight *k_weight,
                     size_t rows, const pf__attn_shape *a, float q_width, float k_width, float eps);
    /* Each q head of the qkv rows times 1 + scale * log1p(floor((p + 1) / floor)) at its position
       p = past + t - pad[b] (Llama 4's attention temperature on its NoPE layers), in fp32 as
       transformers computes it. */
    void (*scale_queries)(pf__rank *r, float *qkv, const pf__step *s, const pf__attn_shape *a, float floor, float scale);
    /* x[i] = min(max(x[i], -limit), limit) for count values (OLMo's clip_qkv over the qkv rows) */
    void (*clamp)(pf__rank *r, float *x, size_t count, float limit);
    /* Rotates (cos and sin times a->rope_scale when set) the first a->rotary_dim dims of every q and k head in the qkv rows by position
       past + t: dims (i, i + rotary_dim/2), or (2i, 2i + 1) when pairs; a->qkv_bias, when set,
       added to every element of the rows first. */
    void (*rotary)(pf__rank *r, float *qkv, const pf__step *s, const pf__attn_shape *a, int pairs);
    /* Appends this step's k, v to the caches [rows][cache_len][kv_heads*head_dim] at positions
       past..past+T-1, sequence b in row s->cache_rows[b] (or b). qkv rows are [q (heads*head_dim)
       | k (kv_heads*head_dim) | v (same)]; a->qkv_bias, when set, is added to them first (q too). */
    void (*kv_append)(pf__rank *r, void *k_cache, void *v_cache, float *qkv, const pf__step *s,
                      const pf__attn_shape *a);
    /* out[b*T+t] = softmax(q k^T * scale + alibi + relative bias) v over the cached keys the
       query may see (a->mask, a->window, left pads), q from the qkv rows (a q row for
       PF__MASK_CROSS). */
    void (*attend)(pf__rank *r, float *out, const float *qkv, const void *k_cache, const void *v_cache,
                   const pf__step *s, const pf__attn_shape *a);
    /* Multi-head latent attention (config.kv_lora_rank > 0; NULL: the backend has none, and such
       models are refused on it). latent_append: this step's rows of kv_a_proj, [latent (a->latent_rank)
       | shared key (a->rotary_dim)], into the cache [rows][cache_len][latent_rank + rotary_dim] at
       past..past+T-1 (as kv_append places them): the latent RMSNormed (gain norm, eps), the key
       rotated by position (pairs or halves, as rotary). latent_attend: out[b*T+t] = per head, softmax
       over the keys the query sees (as attend: mask, window, left pads) of q.k * a->scale, times v,
       where head h's key j is [kv_b's nope rows of h . latent_j | key_j] and its value kv_b's value
       rows of h . latent_j (kv_b: the rank's heads, [heads * (head_dim - rotary_dim + v_head_dim),
       latent_rank]); q rows [heads][head_dim], their last rotary_dim values rotated in place first;
       out rows [heads][v_head_dim]. */
    void (*latent_append)(pf__rank *r, void *cache, const float *latent, const pf__weight *norm, const pf__step *s,
                          const pf__attn_shape *a, int pairs, float eps);
    void (*latent_attend)(pf__rank *r, float *out, float *q, const void *cache, const pf__weight *kv_b,
                          const pf__step *s, const pf__attn_shape *a, int pairs);
    /* DeBERTa's disentangled terms as a dense bias (pf__attn_shape.dense_bias's layout), already
       scaled by a->scale: out[b*T+i][h][j] = (c2p q_i.pk_h[d] + p2c k_j.pq_h[d]) * scale, d as
       pf__config says; q, k from the qkv rows (biases added), pq | pk | (v) from rel_qkv rows
       [2 rel_span][q_r | k_r | v_r]. NULL: the backend has none (DeBERTa is refused on it). */
    void (*disentangled_bias)(pf__rank *r, float *out, const float *qkv, const float *rel_qkv, const pf__step *s,
                              const pf__attn_shape *a, const pf__config *c);
    /* x = sum of x over all ranks, identical on every rank afterwards */
    void (*all_reduce)(pf__rank *r, float *x, size_t count);
    /* Beam search: row dst[k] of a cache [rows][row_bytes] becomes old row src[k], k < count
       (host arrays; the rows that change only), for the first used_bytes of each row. */
    void (*reorder_rows)(pf__rank *r, void *cache, const int *dst, const int *src, int count, size_t row_bytes,
                         size_t used_bytes);
    /* The whole device's memory in use and in all, as the system reports it; from any thread.
       -1 when it cannot say. */
    int (*device_memory)(int device, size_t *used, size_t *total);
    /* Before a forward's first operation (NULL: nothing to do): the step's host arrays the ops
       read (left pads, the sources' pads, rotary frequencies) to the device, so that no upload
       happens between the forward's collectives. */
    void (*prepare)(pf__rank *r, const pf__step *s);
    /* Keys and values cached in the weights' dtype (16-bit weights: half the memory and the bytes
       a decode step reads); 0: as pf_parallel_options.kv_cache_dtype asks, fp32 by default. Cross
       caches stay fp32 either way. */
    int cache_in_weight_dtype;
    /* Greedy token choice where the logits are (NULL: they are downloaded and the host takes
       pf__argmax of them): for rows rows of logits ([rows][n], vocabulary ids first..first+n-1),
       each row's first maximum into best[row] (host), as pf__argmax's scan would find it in the
       rank's slice: a NaN never wins except at id 0, where it competes as +inf; index -1 when
       the slice has no candidate. pf__combine_choices picks among the ranks'. */
    void (*argmax)(pf__rank *r, pf__choice *best, const float *logits, size_t rows, size_t n, int first);
    /* add_residual(x, y, bias) then norm(out, x, weight, norm_bias) in one op, out may be x
       (NULL: the forward calls the two; see pf__rank_residual_norm) */
    void (*add_residual_norm)(pf__rank *r, float *x, const float *y, const pf__weight *bias, float *out,
                              const pf__weight *weight, const pf__weight *norm_bias, size_t rows, size_t n, float eps,
                              pf__norm kind);
    /* x[rows][n] = act(x + bias): a GEMM's bias folded into the activation after it (NULL: the
       GEMM adds it; see pf__rank_mlp_in) */
    void (*bias_activation)(pf__rank *r, float *x, const pf__weight *bias, size_t rows, size_t n, pf__activation act);
    /* A decoder step's device work up to the logits, body(r, job) (pf__rank_decoder_hidden), run
       the backend's way: CUDA replays a graph captured from an earlier step of the same shapes.
       Returns 1 when it ran it (or failed: see r->error), 0 when the caller should call body
       itself (NULL: always the caller). Every rank decides alike from the step. */
    int (*run_decoder_step)(pf__rank *r, const struct pf__job *job,
                            void (*body)(pf__rank *r, const struct pf__job *job));
    /* Sampling's candidates where the logits are (NULL: the logits are downloaded and the host
       samples from them): for rows rows of logits ([rows][n], vocabulary ids first..first+n-1),
       each row's count best of the slice (1 <= count <= n, count <= top_k_max) into
       best[row * stride ...] (host), best first: the larger value, the lower id on ties, a NaN
       before every number. pf__sample_candidates merges the ranks' as pf__sample would see them. */
    void (*top_k)(pf__rank *r, pf__choice *best, size_t stride, const float *logits, size_t rows, size_t n, int first,
                  size_t count);
    size_t top_k_max; /* the largest count top_k takes */
    /* 1: the QKV GEMM leaves its bias to rotary or kv_append (pf__attn_shape.qkv_bias), which
       add it in their own pass over the rows instead of a launch of its own; 0: the GEMM adds it */
    int qkv_bias_in_attention;
    /* add_residual(x, y, bias) then add_residual(x, NULL, bias2) in one op, bias2 never NULL (NULL:
       the forward calls the two; a parallel block's output biases) */
    void (*add_residual_biases)(pf__rank *r, float *x, const float *y, const pf__weight *bias,
                                const pf__weight *bias2, size_t rows, size_t n);
    /* The backend's own work space of a rank, after the scratch every backend shares (NULL: none,
       or made on demand) */
    void (*alloc_scratch)(pf__rank *r);
    /* Mixtures of experts (NULL: a backend that runs none; such models are refused on it). rows
       and scales are host arrays of count entries (the rows distinct: one expert's tokens), kept
       until the next routing. gather_rows: dst[i] = scales[i] * src[rows[i]]; scatter_add_rows:
       dst[rows[i]] += scales[i] * src[i]; scales NULL: 1 (the same bits). Rows of width values. */
    void (*gather_rows)(pf__rank *r, float *dst, const float *src, const int32_t *rows, const float *scales, size_t count,
                        size_t width);
    void (*scatter_add_rows)(pf__rank *r, float *dst, const float *src, const int32_t *rows, const float *scales,
                             size_t count, size_t width);
    /* ConvBERT's span-based dynamic convolution (NULL: a backend without it; such models are refused
       on it). Each sequence b of s's rows n = b * T + t reads only its real tokens (after its left
       pads; zeros beyond them), pad = (k - 1) / 2 on either side of t.
       depthwise_conv: out[n][c] = sum over j < k of w[c * k + j] x[n + j - pad][c], c < width (w a
       [width, k] weight, k = w->cols).
       multiply: x[row][i] *= y[row * y_stride + i], i < n.
       span_conv: per head h < heads, p = softmax over j < k of logits[n * logits_stride + h * k + j],
       out[n][h * head_dim + i] = sum over j of p[j] v[n + j - pad][h * head_dim + i] (v and out rows
       [heads * head_dim]). */
    void (*depthwise_conv)(pf__rank *r, float *out, const float *x, const pf__weight *w, const pf__step *s, size_t width);
    void (*multiply)(pf__rank *r, float *x, const float *y, size_t y_stride, size_t rows, size_t n);
    void (*span_conv)(pf__rank *r, float *out, const float *logits, size_t logits_stride, const float *v,
                      const pf__step *s, int heads, int head_dim, int k);
    /* Funnel's position and segment terms of a layer as attend's dense bias (NULL: a backend without
       it; Funnel is refused on it): for query row n = b * q_len + i and key j of row b, both real
       (i >= q_pad[b], j >= k_pad[b]; else 0), and per head h < f->heads of head_dim d,
       out[(n * heads + h) * k_len + j] = scale * cls(i, j) * ((q[n][h] + pos_bias[h]) . rel[row][h]
       + (q[n][h] + type_bias[h]) . seg[s][h]), where position p = first + (t - pad) * stride on
       each side, row = (p_i - p_j - f->rel_first) / f->k_stride, s = 1 when the types are equal or
       either is 2 (the class token's), else 0 (f->exact_segments: s = 0 when the types are equal,
       else 1; type_bias and seg NULL: no segment term), cls = 0 where f->separate_cls and i or j
       is its row's first token, else 1; -inf where f->causal and p_j > p_i, or where f->window > 0
       and p_i - p_j >= f->window. q, rel rows [heads * d] (rel: the rank's heads of the relative positions'
       projections); ints: q_pad [batch], k_pad [batch], q_types [batch][q_len], k_types
       [batch][k_len], in the backend's memory. */
    void (*funnel_bias)(pf__rank *r, float *out, const float *q, const float *rel, const pf__weight *pos_bias,
                        const pf__weight *type_bias, const pf__weight *seg, const int32_t *ints,
                        const struct pf__funnel_shape *f);
    /* ProphetNet's n-gram self-attention of one stream's rows (NULL: a backend without it; ProphetNet
       is refused on it): query row n = b * T + t (q from the qkv rows) at position p = past + t sees
       the cached keys j of its sequence, its left pads excepted, up to p, scored q.k_j * a->scale +
       rel[n][buckets[p + predict - j] * rel_heads + a->head_begin + h] for local head h (rel: its
       rows' projections for every head, rel_heads of them; buckets: [cache_len + 1], the bucket of
       each distance); predict 1 (the first predict stream): also the row's own key and value (the k
       and v of its qkv row), at distance 0. out[n] = softmax(scores) v per head, [heads * head_dim]. */
    void (*ngram_attend)(pf__rank *r, float *out, const float *qkv, const float *rel, int rel_heads,
                         const int32_t *buckets, const void *k_cache, const void *v_cache, const pf__step *s,
                         const pf__attn_shape *a, int predict);
    /* Reformer's attention (NULL: the backend has none; Reformer is refused on it): for head h <
       a->heads, query t < a->len and round r < a->rounds, the listed keys
       keys[((h * len + t) * rounds + r) * listed + j] (position * 4 + code): score s_j = q[t][h] .
       key(k[position][h]) (a->shared_qk: pf__reformer_shape's norms), -1e9 for a MASKED code and
       -1e5 for SELF instead; lse_r = logsumexp_j s_j, o_r = sum_j exp(s_j - lse_r) v[position][h];
       out[t][h] = sum_r exp(lse_r - logsumexp_r lse_r) o_r (o_0 with one round). q, k, v, out rows
       [heads * head_dim]; keys in the backend's memory. */
    void (*reformer_attend)(pf__rank *r, float *out, const float *q, const float *k, const float *v,
                            const int32_t *keys, const pf__reformer_shape *a);
} pf__backend;

/* A share of the split dimensions held by one rank. */
typedef struct pf__share {
    int head_begin, heads;
    int kv_begin, kv_heads; /* the key/value heads its query heads read (replicated if shared) */
    int mlp_begin, mlp_width;
    int expert_begin, experts;   /* the experts it holds a part of: some (expert parallelism) or all (slicing) */
    int expert_col_begin, expert_width; /* of each, these columns of moe_intermediate_size: all, or a share */
    int shared_begin, shared_width; /* the shared expert's columns (shared_expert_intermediate_size) */
    int vocab_begin, vocab_rows; /* token embedding and LM head rows */
} pf__share;

typedef struct pf__allocation {
    void *ptr;
    size_t bytes;
} pf__allocation;

typedef enum { PF__MEM_WEIGHTS, PF__MEM_CACHE, PF__MEM_SCRATCH, PF__MEM_KINDS } pf__mem_kind;

struct pf__rank {
    pf__group *group;
    int index;                /* in this process's group.ranks */
    int world;                /* in the whole group, every process's ranks (group.first_rank + index):
                                 what the rank's share of the weights and its outputs follow */
    const pf__backend *backend;
    void *backend_state;
    int device;               /* the backend's device ordinal */
    pthread_t thread;
    pf__share share;
    pf__weight *weights;      /* [pf__num_slots(config)] */
    float *alibi;             /* [heads]: the rank's ALiBi slopes, or NULL */
    pf__weight unit_gain;     /* [head_dim] of 1: the gain of a qk-norm without tensors (qk_norm_l2); data NULL otherwise */
    float *rel_bias;          /* [heads][rel rows]: the rank's heads of the relative bias table, or NULL */
    float *enc_rel_bias;      /* the same of an encoder-decoder's encoder tower */
    int32_t *ngram_buckets;   /* ProphetNet: [cache_len + 1], the relative bucket of each distance, or NULL */
    void *k_cache, *v_cache;  /* [pf__cache_layers][max_batch][cache_len][kv_heads * head_dim] in cache_dtype;
                                 latent attention: k_cache alone, of pf__rank_cache_width values a position */
    pf__dtype cache_dtype;
    float *cross_k, *cross_v; /* encoder-decoders: [decoder blocks][max_batch][cache_len][kv width], each
                                 row's encoder keys (values) packed by the request's cross_len */
    /* scratch, [max_tokens][width] */
    float *x, *h, *part;      /* width hidden */
    float *embed;             /* width embed_dim, when the embedding is projected in */
    float *qkv;               /* width (heads + 2 kv_heads) * head_dim */
    float *attn;              /* width heads * head_dim (or * v_head_dim, when wider) */
    float *latent;            /* latent attention: width kv_lora_rank + qk_rope_head_dim, then q_lora_rank */
    float *rel_normed;        /* DeBERTa: [2 rel_span][hidden], the relative embeddings normed; else NULL */
    float *rel_qkv;           /* DeBERTa: [2 rel_span][q_r | k_r | v_r], their projections by a layer */
    float *dense_bias;        /* DeBERTa: [max_tokens][heads_r][cache_len], a layer's disentangled terms */
    /* ConvBERT (pf__rank_span_conv): [max_tokens][hidden] the depthwise convolution's output (then the
       convolution heads' share of the output projection); [max_tokens][q_r] the key (then the
       values); [max_tokens][heads * conv_kernel] every head's kernel logits; [max_tokens][q_r] the
       rank's convolution heads' output */
    float *conv_in, *conv_key, *conv_logits, *conv_out;
    /* Funnel (pf__rank_funnel_layer): a layer's keys and values [max_tokens][kv_r] (attend's cross
       layout), its dense bias [max_tokens][heads_r][cache_len], the relative positions' sinusoids
       [3 cache_len][hidden] and their projections [3 cache_len][q_r]; funnel_bias's ints (device)
       and, host: each level's pads and types, and the pooling's gather rows and scales */
    float *funnel_k, *funnel_v, *funnel_bias, *funnel_sinusoid, *funnel_rel;
    float *funnel_first; /* [max_tokens][hidden]: the first block's output, for the decoder */
    int32_t *funnel_ints;        /* [2 max_batch + 2 max_tokens] */
    int *funnel_pads;            /* host, owned: [3][max_batch], the input's level and two others' */
    int32_t *funnel_types;       /* host, owned: [3][max_tokens] */
    int32_t *funnel_host_ints;   /* host, owned: funnel_ints' values */
    int32_t *funnel_rows;        /* host, owned: [2][max_tokens] the pooling's two gathers */
    float *funnel_scales;        /* host, owned: [2][max_tokens] */
    float *funnel_sinusoid_host; /* host, owned: [3 cache_len][hidden] */
    /* XLNet's generation (pf__rank_xlnet_generate): each layer's keys and values of the memory and the
       step's tokens [layers][cache_len][kv_r] (one row), the query stream [max_batch][hidden] */
    float *xlnet_mem_k, *xlnet_mem_v, *xlnet_g;
    /* Transformer-XL (pf__rank_transfo_xl): each row's memory, every layer's keys and values of its
       txl_mem_len zero rows and its tokens [max_batch][layers][txl_mem_len + cache_len][kv_r]; the
       adaptive input's rows of a cluster [max_tokens][d_embed]; the softmax's projected rows
       [logit_rows][d_embed] and logits [logit_rows][vocab + clusters - 1], and the latter on the host */
    float *txl_mem_k, *txl_mem_v, *txl_embed, *txl_proj, *txl_logits, *txl_logits_host;
    /* Reformer (src/reformer.c), a row at a time of up to pf__reformer_rows rows: its two streams,
       the layer's normed input (and joined rows, twice as wide), the query (or query-key), key and
       value rows (key and value also the axial tables' rows: hidden wide at least), the attention's
       output, the feed-forward's rows, the all-reduced part; every row's output [max_tokens][2 hidden];
       the listed keys (device) and the host's buffers */
    float *reformer_x1, *reformer_x2, *reformer_in, *reformer_q, *reformer_k, *reformer_v, *reformer_out;
    float *reformer_mlp, *reformer_part, *reformer_final;
    int32_t *reformer_keys;
    struct pf__reformer_host *reformer_host; /* owned */
    float *mlp;               /* width mlp_width (times 2 when gated) */
    float *mlp_act;           /* width mlp_width, when gated */
    /* mixtures of experts: the router's logits [max_tokens][experts]; an expert's tokens' rows
       [max_tokens] of width hidden (in, then out) and of its gate | up and activation (2 I_e, I_e) */
    float *router, *expert_in, *expert_out, *expert_mid, *expert_act;
    struct pf__routing *routing; /* host: the step's routing (src/moe.c), or NULL; owned */
    int32_t *trigram_rows; /* host [3 max_tokens]: MobileBERT's trigram gather (pf__rank_trigrams), or NULL; owned */
    /* ProphetNet (pf__config.ngram > 0): the predict stream's rows [max_tokens][hidden], and a
       stream's relative bias projections [max_tokens][rel_buckets * heads] */
    float *ngram_x, *ngram_rel;
    float *logits;            /* rank 0 only: [logit_rows][vocab] */
    float *head_out;          /* rank 0, classification heads: [max_tokens][num_labels or 2] (LXMERT's answer
                                 head: then its dense rows, [max_batch][2 hidden]) */
    float *projected;         /* rank 0, with a projection: [max_batch][projection_dim] */
    float *patch_in;          /* image encoders: [max_batch][patches][channels * patch^2] */
    float *region_in;         /* VisualBERT: [max_tokens][visual_embedding_dim], the step's region features
                                 (LXMERT: then [max_tokens][visual_pos_dim] their boxes) */
    /* LXMERT (pf__rank_two_streams): the language and vision streams [max_tokens][hidden] each; the
       cross-attention's keys and values of each stream [2][max_tokens][kv_r]; host, owned: the
       streams' left pads [2][max_batch] */
    float *stream_x[2], *stream_k, *stream_v;
    int *stream_pads;
    /* LUKE (pf__rank_embed_entities, pf__rank_entity_attention): [max_tokens][max(entity_emb_size, hidden)]
       the entities' rows; [max_tokens][6 q_r] + [head_dim] the projections the entity-aware attention
       gathers its doubled heads from (q | k | v, then w2e | e2w | e2e; a zero head_dim at the end);
       host, owned: the gathers' rows (pf__entity_gather_count) */
    float *entity_rows, *entity_pool;
    int32_t *entity_gather;
    pf__allocation *allocations;
    size_t num_allocations, allocations_cap;
    size_t bytes[PF__MEM_KINDS];
    pf__mem_kind allocating;  /* the kind new allocations count under */
    int counting;             /* nonzero: pf__rank_alloc allocates nothing, adding the bytes to counted */
    size_t counted;
    size_t device_used, device_total; /* the device's memory after the last job (group mutex) */
    pf_result error;
    char message[PF__MESSAGE_SIZE];
};
PF_PRIVATE void pf__rank_fail(pf__rank *r, pf_result code, const char *fmt, ...);

/* ---- src/reformer.c ---- */
/* What a rank keeps on the host for its Reformer rows (owned; pf__reformer_host_free). */
struct pf__reformer_host {
    float *rotations;  /* [heads][head_dim][hashes][rotation_size / 2]: the rank's heads' share of torch's draw */
    float *qk;         /* [rows][heads * head_dim]: a row's LSH query-keys, downloaded to hash them */
    float *staging;    /* [rows][2 hidden]: columns joined (axial positions, the two streams) */
    int32_t *ids;      /* [rows]: a row's ids, then its pads */
    int32_t *buckets;  /* [hashes * rows]: one head's buckets, the rounds' offsets added */
    int32_t *sorted;   /* [hashes * rows]: the round-and-position indices in bucket order */
    int64_t *order;    /* [hashes * rows]: sort keys bucket * count + index (unique) */
    int32_t *slot_of;  /* [hashes * rows]: each index's place in that order */
    int32_t *keys;     /* [heads][rows][hashes][listed]: what reformer_attend reads */
    int32_t *gather;   /* [rows]: axial positions' row and column ids */
};

PF_PRIVATE void pf__torch_randn(uint64_t seed, float *out, size_t count);
PF_PRIVATE struct pf__reformer_host *pf__reformer_host_new(const pf__config *c, int cache_len, int head_begin, int heads);
PF_PRIVATE void pf__reformer_host_free(struct pf__reformer_host *h);
PF_PRIVATE int pf__reformer_padded_length(const pf__config *c, int length);
PF_PRIVATE size_t pf__reformer_rows(const pf__config *c, int cache_len);
PF_PRIVATE size_t pf__reformer_listed(const pf__config *c);
PF_PRIVATE int pf__reformer_keys(const pf__config *c, struct pf__reformer_host *host, int lsh, int heads, int len,
                                 int length, int *rounds);
/* The width of an encoding's hidden rows: Reformer's output joins its two streams. */
PF_PRIVATE int pf__output_width(const pf__config *c);
#ifdef PF_TESTING
extern int pf_testing_fail_rank;
extern int pf_testing_fail_countdown;
#endif

/* ---- src/cpu_backend.c ---- */
#if defined(__GNUC__) || defined(__clang__)
#define PF__INLINE __attribute__((always_inline)) inline
#else
#define PF__INLINE
#endif

/* Weight i of w, stored as wt, in fp32 (wt a constant in the kernels, which then need no branch).
   Q8: i counts the values of whole rows of whole blocks. */
static PF__INLINE float pf__weight_value(const void *w, size_t i, const int wt) {
    if (wt == PF__DTYPE_Q8) {
        const unsigned char *block = (const unsigned char *)w + i / PF__Q8_BLOCK * PF__Q8_BYTES;
        return pf__q8_scale(block) * (float)(int8_t)block[2 + i % PF__Q8_BLOCK];
    }
    if (wt == PF__DTYPE_Q4) {
        const unsigned char *block = (const unsigned char *)w + i / PF__Q8_BLOCK * PF__Q4_BYTES;
        size_t j = i % PF__Q8_BLOCK;
        int q = j < PF__Q8_BLOCK / 2 ? block[2 + j] & 15 : block[2 + j - PF__Q8_BLOCK / 2] >> 4;
        return pf__q8_scale(block) * (float)(q - 8);
    }
    if (PF__BLOCKED(wt)) return pf__block_value((pf__dtype)wt, w, i);
    /* memcpy: a tensor of a file whose header length is not a multiple of 4 lies unaligned */
    if (wt == PF__DTYPE_F16 || wt == PF__DTYPE_BF16) {
        uint16_t h;
        memcpy(&h, (const char *)w + 2 * i, sizeof h);
        return wt == PF__DTYPE_F16 ? pf__f16_to_f32(h) : pf__bf16_to_f32(h);
    }
    float f;
    memcpy(&f, (const char *)w + 4 * i, sizeof f);
    return f;
}
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__) && !defined(PF_NO_AVX2)
#define PF__AVX2 1
#include <cpuid.h>
#include <immintrin.h>
#endif
/* ARM64: NEON is part of the base architecture; the dot product instructions (FEAT_DotProd) are
   asked of the processor at run time. */
#if (defined(__GNUC__) || defined(__clang__)) && defined(__aarch64__) && !defined(PF_NO_NEON)
#define PF__NEON 1
#include <arm_neon.h>
#endif

/* roundf (halves away from zero) to an int8 in [-127, 127], and floorf, for the quantizers' values:
   within int's range the truncating conversion is exact, and so is x minus it. libm's calls were
   5 % of a q8 bench run's samples (every weight at load, every input block at each step). NaN
   gives 0 and values beyond the range saturate, where a conversion would be undefined. */
static inline int8_t pf__round_to_int8(float x) {
    if (!(x > -127.5f)) return (int8_t)(x == x ? -127 : 0);
    if (x >= 127.5f) return 127;
    int t = (int)x;
    float rest = x - (float)t;
    return (int8_t)(t + (rest >= 0.5f) - (rest <= -0.5f));
}

static inline float pf__floor_small(float x) {
    if (!(x > -1e9f && x < 1e9f)) return x > 0 ? 1e9f : x < 0 ? -1e9f : 0.0f;
    int t = (int)x;
    return (float)(t - ((float)t > x));
}
#if defined(PF__AVX2) && !defined(PF_NO_AVX512) && (defined(__clang__) || __GNUC__ >= 5)
#define PF__AVX512 1
#if defined(__linux__) && !defined(PF_NO_AMX) && (defined(__clang__) ? __clang_major__ >= 12 : __GNUC__ >= 11)
#define PF__AMX 1
#include <sys/syscall.h>
#endif
#endif

/* Attention's two loops: the scores of nq (1 to PF__QUERY_BLOCK) queries against `count` keys
   `stride` floats apart (out[i * ld + j] = q[i] . key j), and the sum of `count` value rows
   weighted by w. Portable versions first. */
#define PF__QUERY_BLOCK 4
PF_PRIVATE void pf__cpu_matmul_rows(float *out, const float *x, const pf__weight *w, const float *bias, size_t rows,
                                float *widened);
#ifndef PF_AMALGAMATION /* the shipped file defines it before any reader */
extern PF_PRIVATE const pf__backend pf__cpu_backend;
#endif

/* Beam search moves cache rows through scratch of this many bytes per row, slice by slice (a
   whole layer's cache would be max_batch x max_sequence_length x the kv width). */
#define PF__REORDER_SLICE ((size_t)64 * 1024)

/* A CPU rank's own work space (its r->backend_state), made by its rank_begin, sized by its
   alloc_scratch, freed by its rank_end. */
typedef struct pf__cpu_rank {
    float *scores;            /* attention: [max(heads, PF__QUERY_BLOCK)][cache_len] */
    size_t *head_slices;      /* decode attention: [heads], each head's kv slice in a cache row */
    float *attn_pack;         /* attention over prompts: one kv head's keys, then its values, */
    size_t attn_pack_floats;  /* attn_pack_floats each ([cache_len][head_dim]) */
    float *reduce_tmp;        /* all-reduce: [max_tokens * hidden] */
    float *reorder_tmp;       /* beam reorder: [max_batch][PF__REORDER_SLICE bytes], when max_batch > 1 */
    void *matmul_scratch;     /* products: x's int8 values, scales and block sums for Q8/Q4
                                 weights, widened fp16/bf16 weight rows (grown on demand and kept, so
                                 a decode step allocates nothing) */
    size_t matmul_scratch_bytes;
    float *parts_out;         /* a stack's part's products (pf__weight.parts), grown on demand */
    size_t parts_out_bytes;
    float *ordered_x;         /* a reordered matrix's product: x's inputs in its blocks' order (pf__weight.input_order) */
    size_t ordered_x_bytes;
} pf__cpu_rank;

/* ---- jobs, groups and the model: the types of every layer above the backends ---- */

typedef enum { PF__JOB_SETUP, PF__JOB_FORWARD, PF__JOB_LOGITS, PF__JOB_GATHER, PF__JOB_REORDER, PF__JOB_QUIT } pf__job_kind;

/* What the group's ranks do next. Built with a designated initializer naming the step and the
   outputs wanted; every field it does not name is zero, which means "not wanted". */
typedef struct pf__job {
    pf__job_kind kind;
    pf__step step;        /* FORWARD */
    float *logits;        /* FORWARD: host, rank 0 writes [batch][seq_len or 1][vocab] */
    int all_positions;    /* FORWARD: logits of every position, else of each sequence's last */
    float *hidden;        /* FORWARD, encoders: host [batch][seq_len][hidden], rank 0 writes the
                             last hidden state; or NULL */
    float *pooled;        /* FORWARD, encoders with a pooler: host [batch][hidden], or NULL */
    const int *pool_at;   /* FORWARD, encoders: host [batch], the pooled token of each row (after
                             its left pads); NULL: the first */
    float *embeds;        /* FORWARD, encoders with a projection: host [batch][projection_dim], or NULL */
    float *doc_embeds;    /* FORWARD, encoders with a document projection: host [batch][projection_dim], or NULL */
    int encoder_pass;     /* FORWARD, encoder-decoders: the encoder tower on step's ids, its output
                             into the cross caches (rows 0..batch-1) and `hidden` */
    const int *reorder_dst, *reorder_src; /* REORDER: host [reorder_count]: cache row reorder_dst[k]
                             becomes old row reorder_src[k] (the rows that change); the first
                             step.past positions move */
    int reorder_count;
    int reorder_cross;    /* REORDER: the cross caches' first step.cross_len positions move too */
    int32_t *tokens;      /* FORWARD, greedy generation on a backend with argmax: host [batch], each
                             sequence's arg-max token, chosen where the logits are (a release build
                             then downloads no logits; a test build does, and checks the choice) */
    pf__choice *candidates; /* FORWARD, sampling on a backend with top_k: host [world_ranks][batch]
                             [candidates_per_row], each rank's best of its slice of each row's logits
                             (as job->tokens, no logits are downloaded in a release build).
                             LOGITS: the last forward's logits (still on the ranks) to job->logits */
    size_t candidates_per_row;
    int chunk_positions;  /* FORWARD, decoders in pipeline stages (pf__forward_in_chunks): > 0 runs the
                             step's positions in chunks of this many within this one job, so that a
                             stage starts the next chunk while the stages after it work on this one */
    const int *stage_rows; /* FORWARD, a decode step of micro-batches (pipeline stages; the batcher's
                             groups): host [stages][2], stage s's rows this job (0: none) and their
                             past; the step's rows are stage 0's, then stage 1's, ... Stage s > 0 runs
                             the rows stage s - 1 ran in the job before, from the hidden state it sent
                             then (kept across the job's end), so every stage works at once; the
                             outputs (logits, tokens, candidates) are the last stage's rows'. NULL: a
                             step through every stage in turn */
    int hidden_across_jobs; /* set on a rank's share of a stage_rows job (pf__rank_forward): its hidden
                             state comes from the job before and goes to the next one */
} pf__job;
#ifdef PF_TESTING
extern int pf_testing_check_device_choices;
#define pf__check_device_choices pf_testing_check_device_choices
#else

enum { pf__check_device_choices = 0 };
#endif

/* A weight source: a tensor in the memory map, or (after pf_to_cpu gathered them) a host array. */
typedef struct pf__source {
    const uint8_t *data; /* NULL: absent */
    pf__dtype dtype;
    pf__layout layout;
    pf__split split;
    size_t rows, cols;   /* logical [out, in] */
    const uint8_t **pieces; /* PF__LAYOUT_PER_EXPERT, _PER_HEAD: [rows / piece_rows] tensors of piece_rows rows each,
                               the source's rows in order (data is pieces[0]); NULL: data is the whole
                               tensor; owned by the model */
    size_t piece_rows;
    size_t groups;       /* PF__LAYOUT_GROUPED: the file holds [rows, cols / groups]; _GROUPED_IN_OUT:
                            [groups, cols / groups, rows / groups] */
    const pf__packed *packed; /* PF__DTYPE_PACKED, an MXFP4 checkpoint's PF__DTYPE_MXFP4: its decoding (the
                                 index owns it) */
    const pf__packed **packed_pieces; /* PER_EXPERT pieces that are PF__DTYPE_PACKED: each one's decoding
                                         (the array owned by the model, like pieces) */
} pf__source;

struct pf__group {
    pf_model *model;
    const pf__backend *backend;
    void *backend_state;
    pf__dtype dtype;      /* weight storage on every rank */
    pf__dtype cache_dtype; /* keys and values in the self-attention caches */
    int num_ranks;        /* this process's ranks (threads), in ranks */
    pf__rank *ranks;
    /* The whole group: world_ranks ranks, of which this process holds num_ranks from first_rank
       on. Across processes (MPI builds, across_processes) process p holds p x num_ranks on; in
       one process the world is its ranks. */
    int world_ranks, first_rank;
    /* Pipeline stages (pipeline_stages, across processes): the world above is this process's
       stage's ranks (tensor parallel), which hold decoder layers [stage_first_layer,
       stage_end_layer) of the model; stage `stage` of `stages`. One stage: 0, all the layers. */
    int stages, stage, stage_first_layer, stage_end_layer;
    struct pf__mpi *mpi;  /* the processes' communicator and exchanges (src/mpi.c); NULL in one process */
    size_t *lm_rows;      /* [world_ranks]: the vocabulary rows of each rank's LM head (known after setup) */
    int threads_started;
    pthread_mutex_t mutex;
    pthread_cond_t work, done, barrier_cond;
    uint64_t job_seq;
    int jobs_done;
    pf__job job;
    /* barrier (pf__barrier): ranks arrived, passes completed, waiters asleep (under the mutex), and
       whether waiters spin first (every rank has a core of its own) */
    int barrier_count;
    uint64_t barrier_generation;
    int barrier_sleepers, barrier_spin;
    int aborted;
    /* CPU all-reduce: each rank publishes its buffer here */
    float **reduce_in;
    const float *const *reduce_world; /* across processes: every world rank's buffer (src/mpi.c) */
    size_t *room_needed;  /* [num_ranks]: each rank's caches and scratch, published at setup */
    pf_parallel_options options; /* what pf_parallelize was asked (device_ids not kept) */
    /* sizes every rank shares */
    int max_batch, cache_len;
    int32_t *zero_ids;    /* [max_batch] zeros: row 0 of a one-row table for every sequence */
    int32_t *rel_ids;     /* DeBERTa: [2 rel_span] 0, 1, ...: its relative embeddings as one row of ids */
    size_t max_tokens, logit_rows;
    pf__choice *choices;  /* [world_ranks][max_batch]: the ranks' arg-max candidates of a step
                             (backend->argmax), or NULL without one */
    float **gather;      /* PF__JOB_GATHER: host arrays, one per slot, filled by the ranks */
    /* PF__JOB_SETUP: weight bytes copied, of about progress_total (under mutex) */
    pf_progress_callback progress;
    void *progress_user;
    uint64_t progress_done, progress_total;
#ifdef PF_TESTING
    struct pf__collective { const char *site; size_t count; } *collectives; /* [num_ranks] (pf__collective_check) */
#endif
};
typedef struct pf__batcher pf__batcher;

struct pf_model {
    char *dir;
    pf_load_options load_options;
    int loaded;
    pf__config config;
    pf__st_index st;
    pf__source *sources;  /* [pf__num_slots] */
    float *scaled[6];     /* sources scaled at load (pf__scale_source), owned */
    float *zero_bias;     /* [kv width] zeros: the key bias of models without one (k_bias_zero), owned */
    float *fused_qkv_bias; /* [layers][q + 2 kv]: a fused QKV weight's bias built from separate q and v biases
                              (DeBERTa v1's in_proj with q_bias, v_bias), in the weight's row order; owned */
    float *router_choice_bias; /* [layers][experts]: PF__SLOT_ROUTER_CHOICE_BIAS as fp32 for the routing on the host, or NULL; owned */
    float *folded_qk;     /* [layers][q, k][Q (hidden + 1)]: MobileBERT's q and k weights and biases with their
                             shared bottleneck folded in (pf__fold_bottleneck_qk), or NULL; owned */
    float *joined_lm_head; /* [vocab, hidden]: MobileBERT's LM head joined from two tensors, or NULL; owned */
    float *split_attn_out; /* [layers][attention, convolution][hidden, Q]: ConvBERT's output projection split
                              (pf__split_conv_output), or NULL; owned */
    struct pf__speech *speech; /* a speech encoder's front end and CTC vocabulary, owned; else NULL */
    int num_scaled;
    char **label_names;   /* [config.num_labels]: config.json's id2label, owned; NULL without one */
    pf_tokenizer *tokenizer;
    struct pf__batcher *batcher;  /* continuous batching's scheduler, from the first batched request */
    pthread_mutex_t batcher_start;
    int exclusive_waiting;        /* calls waiting for the request lock (atomic): no admissions then */
    char tokenizer_missing[PF__MESSAGE_SIZE]; /* why a tokenizer the directory has is not loaded, or "" */
    pf__group *group;
    pf_parallel_options parallel_options;
    int max_queued_requests;      /* parallel_options' own, for batched requests that read it without
                                     the request lock, while pf_parallelize may rewrite the options (atomic) */
    float *logits;        /* host: [max_batch][vocab], the last positions' logits */
    float *inv_freq;      /* host: [rotary_dim / 2], the rotary frequencies of the current step */
    pf_generate_options generate_defaults; /* pf_generate_options_init() + generation_config.json */
    int rope_cached_len;  /* dynamic rope: the longest sequence its frequencies were grown for */
    pthread_mutex_t calls_mutex;  /* guards active_calls and closing */
    pthread_cond_t calls_done;    /* active_calls fell to 0 */
    int active_calls;             /* requests that began (pf__call_begin) and have not ended */
    int closing;                  /* pf_free began: requests are refused, generations stop (atomic read) */
    pthread_mutex_t request_lock; /* requests from several threads run one after another; error
                                     checking, so that a request made from inside one (a stream
                                     callback) is refused instead of waiting for itself */
    struct pf__sentence {         /* sentence-transformers' modules (modules.json), for pf_embed */
        pf_pooling pooling;       /* never PF_POOLING_MODEL */
        int normalize;
        int max_seq_length;       /* sentence_bert_config.json's; 0: the model's positions */
        char unsupported[PF__PATH_SIZE + 160]; /* a module or mode we do not run, or "" */
    } sentence;
    struct pf_model *towers[2];   /* a dual model (CLIP): its text and vision towers, each a model of
                                     its own (own widths, own rank group), reached only through this
                                     one and under its request lock; NULL otherwise */
    float logit_scale;            /* a dual model's exp(logit_scale): the similarity's temperature */
    struct pf__token_texts *json_token_texts; /* the vocabulary's texts for JSON constraints: made by
                                     the first pf_json_constraint_new (atomic pointer); owned */
};

/* ---- src/backend.c (rank primitives) ---- */
PF_PRIVATE size_t pf__num_slots(const pf__config *c);
PF_PRIVATE size_t pf__slot_index(pf__slot slot, int layer);
PF_PRIVATE void pf__group_abort(pf__group *g);
PF_PRIVATE int pf__barrier(pf__group *g);
PF_PRIVATE int pf__online_cpus(void);
PF_PRIVATE int pf__rank_failed(pf__rank *r);
#ifdef PF_TESTING
PF_PRIVATE void pf__collective_check(pf__rank *r, const char *site, size_t count);
#endif
PF_PRIVATE void pf__all_reduce(pf__rank *r, float *x, size_t count, const char *site);
PF_PRIVATE void *pf__rank_alloc(pf__rank *r, size_t bytes);
PF_PRIVATE void pf__rank_free_all(pf__rank *r);

/* ---- src/mpi.c (ranks in several processes; stubs that refuse without PF_MPI) ---- */
PF_PRIVATE pf_result pf__mpi_group_begin(pf__group *g, char *error, size_t error_size);
PF_PRIVATE void pf__mpi_group_end(pf__group *g);
PF_PRIVATE int pf__mpi_agree(pf__group *g, int ok);
PF_PRIVATE const float *const *pf__mpi_exchange(pf__rank *leader, float *const *local, size_t count);
PF_PRIVATE pf_result pf__mpi_end_job(pf__group *g, pf_result local, char *message, size_t message_size);
PF_PRIVATE pf_result pf__mpi_begin_job(pf__group *g, pf__job_kind kind, const pf__job *job, char *error, size_t error_size);
PF_PRIVATE void pf__mpi_group_ready(pf__group *g);
PF_PRIVATE void pf__mpi_stage_send(pf__rank *leader, const float *x, size_t count, int across_jobs);
PF_PRIVATE void pf__mpi_stage_receive(pf__rank *leader, float *x, size_t count, int across_jobs);
PF_PRIVATE void pf__mpi_stage_sent(pf__rank *leader);
PF_PRIVATE pf_result pf__mpi_next_call(pf__group *const *groups, int n, unsigned char *ended, int *which, pf__job *job,
                                       char *error, size_t error_size);
PF_PRIVATE pf_result pf__mpi_broadcast_rows(pf__group *g, int root_rank, void *first, size_t rows, size_t row_bytes,
                                            size_t stride_bytes, char *error, size_t error_size);
#ifdef PF_CUDA /* for a backend whose collectives cross processes on their own (CUDA ranks over NCCL) */
PF_PRIVATE int pf__mpi_process(const pf__group *g);
PF_PRIVATE int pf__mpi_timeout_ms(const pf__group *g);
PF_PRIVATE double pf__mpi_job_timeout_s(const pf__group *g);
PF_PRIVATE pf_result pf__mpi_share_setup(pf__group *g, void *data, size_t bytes, char *error, size_t error_size);
PF_PRIVATE int pf__mpi_peer_failed(pf__rank *leader);
PF_PRIVATE void pf__mpi_note_peer_failed(pf__group *g);
#endif

/* ---- src/cpu_backend.c (the CPU's block formats, which slicing packs) ---- */
PF_PRIVATE void pf__q8_quantize(void *data, size_t rows, size_t cols);
PF_PRIVATE void pf__q4_quantize(void *data, size_t rows, size_t cols);

/* ---- src/speech_frontend.c ---- */

/* The convolutional front end runs on the host, once per request, before the blocks: the feature
   encoder (a stack of strided 1-D convolutions over the waveform), the feature projection (a
   LayerNorm over the last conv's channels, then a linear map to hidden_size) and the positional
   convolution (grouped, weight-normalised, GELU) added to the projected frames. Its tensors are
   policies.inc's rows of the front-end slots (PF__SLOT_FIRST_FRONT_END on), %d counting the
   convolutions conv_dim lists. They are read once at load into fp32 copies the model owns (the
   weight norm g * v / ||v|| folded in). */
typedef struct pf__speech {
    float *conv_weight[16];      /* [out][in][kernel] */
    float *conv_bias[16];        /* [out], or NULL (conv_bias false) */
    float *conv_norm_weight[16]; /* [out]: the GroupNorm (first layer) or LayerNorm (every layer), or NULL */
    float *conv_norm_bias[16];
    float *projection_norm_weight, *projection_norm_bias; /* [conv_dim[-1]], or NULL (HuBERT without it) */
    float *projection_weight;    /* [hidden][conv_dim[-1]] */
    float *projection_bias;      /* [hidden] */
    float *pos_weight;           /* [hidden][hidden / groups][pos_kernel]: the effective weight */
    float *pos_bias;             /* [hidden] */
    /* Whisper's log-mel front end (mel_frontend): two kernel-3 convolutions, their weights as
       [out][in][3], each followed by GELU */
    float *mel_conv1_weight, *mel_conv1_bias; /* [hidden][num_mel_bins][3], [hidden] */
    float *mel_conv2_weight, *mel_conv2_bias; /* [hidden][hidden][3] (stride 2), [hidden] */
    size_t bytes;                /* the arrays above: host memory outside every rank's */
    /* CTC decoding, read by the first pf_ctc_decode */
    int vocab_read;
    char **tokens;               /* [num_tokens]: vocab.json's strings by id; NULL for an id it lacks */
    int num_tokens;
    char *pad, *delimiter, *unk; /* tokenizer_config.json's pad (CTC blank), word delimiter, unk */
    int lower, clean_up;         /* do_lower_case, clean_up_tokenization_spaces */
} pf__speech;
PF_PRIVATE size_t pf__speech_bytes(const pf__speech *sp);
PF_PRIVATE void pf__speech_free(pf__speech *sp);
PF_PRIVATE int pf__speech_frames(const pf__config *c, long long n);
PF_PRIVATE pf_result pf__speech_load(pf_model *m, const char *prefix);

/* Frames the front end's convolutions gather at a time (im2col), for the CPU backend's matmul. */
#define PF__SPEECH_BLOCK 64
PF_PRIVATE size_t pf__speech_col_width(const pf__config *c);
PF_PRIVATE void pf__speech_frontend(const pf_model *m, const float *samples, int num_samples, float *out, float *work_a,
                                float *work_b, float *work_h, float *col);
PF_PRIVATE pf_result pf__subsampler_load(pf_model *m, const char *prefix);
PF_PRIVATE int pf__subsampler_frames(const pf__config *c, int n);
PF_PRIVATE void pf__subsampler_sizes(const pf__config *c, size_t frames, size_t *widest, size_t *col_width);
PF_PRIVATE void pf__subsampler_frontend(const pf_model *m, const float *features, size_t n, size_t frames, size_t keep,
                                    float *out, float *work_a, float *work_b, float *col);
PF_PRIVATE pf_result pf__mel_load(pf_model *m, const char *prefix);
PF_PRIVATE void pf__mel_frontend(const pf_model *m, const float *mel, int num_frames, float *out, float *work, float *col);

/* ---- src/slicing.c ---- */
PF_PRIVATE int pf__encoder_blocks(const pf__config *c);
PF_PRIVATE int pf__cache_layer(const pf__config *c, int block);
PF_PRIVATE size_t pf__rank_cache_layer(const pf__rank *r);
PF_PRIVATE size_t pf__rank_cache_width(const pf__rank *r);
PF_PRIVATE void pf__rank_setup(pf__rank *r);
PF_PRIVATE void pf__rank_gather(pf__rank *r);

/* ---- src/forward.c ---- */
PF_PRIVATE void pf__rank_forward(pf__rank *r, const pf__job *job);
PF_PRIVATE int pf__funnel_pooled_length(const pf__config *c, int length);
PF_PRIVATE int pf__funnel_output_length(const pf__config *c, int length);
PF_PRIVATE int pf__funnel_shortest_row(const pf__config *c);
PF_PRIVATE void pf__rank_logits_again(pf__rank *r, const pf__job *job);
/* What a FORWARD or LOGITS job leaves in host memory, as the forward writes it. */
typedef struct pf__host_outputs {
    size_t vocab_rows;     /* rows of job->logits (vocab floats each) whose columns each rank writes */
    size_t choice_rows;    /* rows of group.choices (from each rank's max_batch block) each rank writes */
    size_t candidate_rows; /* rows of job->candidates (candidates_per_row each) each rank writes */
    struct { void *data; size_t bytes; } by_first_rank[4]; /* what world rank 0 alone writes */
    int num_by_first_rank;
} pf__host_outputs;
PF_PRIVATE void pf__job_host_outputs(const pf__group *g, const pf__job *job, pf__host_outputs *out);
/* The rows of a decoder step's outputs (logits, tokens, candidates): each sequence's last, or the
   last stage's rows of a job of micro-batches (job->stage_rows). */
PF_PRIVATE int pf__job_output_rows(const pf__group *g, const pf__job *job);
PF_PRIVATE void pf__rank_reorder(pf__rank *r, const pf__job *job);

/* ---- src/ranks.c ---- */
PF_PRIVATE void *pf__rank_main(void *arg);
PF_PRIVATE pf_result pf__group_run(pf__group *g, pf__job_kind kind, const pf__job *job);
PF_PRIVATE pf_result pf__forward_in_chunks(pf_model *m, const pf__job *job);
PF_PRIVATE void pf__group_destroy(pf__group *g);
PF_PRIVATE void pf__rank_experts(pf__rank *r, const pf__weight *L, int l, const float *h, float *part, size_t N);
PF_PRIVATE pf__share pf__share_for(const pf__config *c, int r, int n, int slice_experts);

/* ---- src/cuda_backend.c ---- */
#ifdef PF_CUDA
#include <sched.h>
#endif
PF_PRIVATE int pf__cuda_devices(void); /* 0: none usable */
PF_PRIVATE const char *pf__cuda_unavailable_reason(void);
PF_PRIVATE const pf__backend *pf__cuda_backend(void);

/* ---- src/groups.c ---- */
PF_PRIVATE void pf__log(const pf_model *m, pf_log_level level, const char *fmt, ...);
PF_PRIVATE pf_result pf__group_create(pf_model *m, int num_ranks, const pf_parallel_options *o, const pf__backend *backend,
                                  pf__dtype dtype);

/* ---- src/gguf.c ---- */
PF_PRIVATE int pf__is_gguf(const char *path);
PF_PRIVATE pf_result pf__gguf_load(pf_model *m);

/* ---- src/api.c ---- */
#define PF__FAIL(m, code, ...) pf__format(pf__error_buffer(m), PF__MESSAGE_SIZE, code, __VA_ARGS__)
PF_PRIVATE pf_result pf__fail_from(pf_model *m, pf_result r, const pf_model *tower);
PF_PRIVATE pf_result pf__request_lock(pf_model *m, const char *call);
PF_PRIVATE pf_result pf__call_begin(pf_model *m, const char *call);
PF_PRIVATE void pf__call_end(pf_model *m);
PF_PRIVATE pf_result pf__check_closing(pf_model *m);
PF_PRIVATE void pf__request_unlock(pf_model *m);
PF_PRIVATE const pf__st_tensor *pf__take_prefixed(pf_model *m, const char *prefix, const char *bare);
PF_PRIVATE pf_result pf__account_tensors(pf_model *m, const char *prefix);
PF_PRIVATE int pf__need_by_config(const pf__config *c, pf__need need, const char **key, const char **why);
PF_PRIVATE const char *pf__config_key(pf__arch_id arch, size_t offset);
PF_PRIVATE const char *pf__head_name(pf_head head);
PF_PRIVATE pf_result pf__check_generates(pf_model *m);
PF_PRIVATE pf_result pf__check_head_slots(pf_model *m);
PF_PRIVATE void pf__pattern_name(char *out, size_t size, const pf__arch_tensor *t, int layer, int expert, int part);
PF_PRIVATE int pf__pattern_parts(const char *pattern);
PF_PRIVATE const pf__st_tensor *pf__take_slot(pf_model *m, const char *prefix, pf__slot slot, int layer,
                                          const pf__arch_tensor **row, char *name, size_t name_size,
                                          const pf__st_tensor **other);
PF_PRIVATE pf_result pf__scale_source(pf_model *m, pf__slot slot, float scale);
PF_PRIVATE pf_result pf__scale_final_norm(pf_model *m);

/* ---- src/parallelize.c ---- */
PF_PRIVATE pf_result pf__parallelize_locked(pf_model *m, int num_ranks, const pf_parallel_options *options);

/* ---- src/encode.c ---- */
PF_PRIVATE pf_result pf__ensure_group(pf_model *m);
PF_PRIVATE pf_result pf__check_ids(pf_model *m, const int32_t *ids, size_t n);
PF_PRIVATE const float *pf__rope_frequencies(pf_model *m, int length);
/* Floats of a step's rotary frequencies: rotary_dim / 2 per table, two tables with a local base. */
static inline size_t pf__rope_floats(const pf__config *c) {
    return c->rotary_dim > 0 ? (size_t)c->rotary_dim / 2 * (c->rope_local_theta > 0 ? 2 : 1) : 0;
}
PF_PRIVATE void pf__rope_reset(pf_model *m);
PF_PRIVATE pf_result pf__subsampler_rows(pf_model *m, const char *call, const float *const *features, const int *num_frames,
                                     int batch, float **out, int *width, int **pads);
PF_PRIVATE pf_result pf__pad_rows(pf_model *m, const char *what, const int32_t *const *rows, const int *lengths, int batch,
                              int source, int *width, int32_t **ids, int **pads);
PF_PRIVATE pf_result pf__encoder_pass(pf_model *m, const int32_t *sources, const float *features, const int *pads, int batch,
                                  int width, const int32_t *global_tokens, float *hidden);
PF_PRIVATE pf_result pf__source_global_rows(pf_model *m, const char *what, const int32_t *const *global, const int *lengths,
                                        int batch, int width, int32_t **out);
PF_PRIVATE pf_result pf__decoder_logits(pf_model *m, const int32_t *const *decoder_ids, const int *decoder_lengths, int batch,
                                    int cross_len, const int *cross_pads, float *logits);

PF_PRIVATE pf_result pf__encode_audio_features_locked(pf_model *m, const float *const *features, const int *num_frames,
                                                  int batch, pf_encoding **out);
PF_PRIVATE pf_result pf__audio_source_rows(pf_model *m, const char *call, const float *const *features,
                                          const int *num_frames, int batch, float **out, int *width, int **pads);

/* ---- src/json_schema.c ---- */

/* A JSON Schema subset compiled to an automaton; a matcher is where a text stands in it. */
typedef struct pf__json_schema pf__json_schema;
#define PF__JS_MAX_DEPTH 32 /* open containers and values */
#define PF__JS_MAX_PATHS 16 /* anyOf's alternatives alive at once */
typedef struct pf__js_frame {
    int32_t node;
    uint8_t phase, ws; /* ws: consecutive whitespace bytes */
    uint16_t pos;      /* bytes of a key or literal typed; a \u escape's hex digits */
    uint32_t count;    /* array items; a number's bytes; the key a declared-key object chose */
    uint64_t seen, mask; /* an object's properties written; the keys or literals still matching */
} pf__js_frame;
typedef struct pf__js_path {
    int depth;
    pf__js_frame frames[PF__JS_MAX_DEPTH];
} pf__js_path;
typedef struct pf__json_matcher {
    int num_paths;
    pf__js_path paths[PF__JS_MAX_PATHS];
} pf__json_matcher;
PF_PRIVATE pf__json_schema *pf__json_schema_compile(const char *schema_text, char *err, size_t err_size);
PF_PRIVATE void pf__json_schema_free(pf__json_schema *s);
PF_PRIVATE void pf__json_matcher_init(const pf__json_schema *s, pf__json_matcher *m);
PF_PRIVATE int pf__json_matcher_feed(const pf__json_schema *s, pf__json_matcher *m, const char *bytes, size_t n, int advance,
                                     pf__json_matcher *scratch);
PF_PRIVATE int pf__json_matcher_complete(const pf__json_schema *s, const pf__json_matcher *m);
typedef struct pf__token_texts pf__token_texts; /* the vocabulary's texts, once per model */
PF_PRIVATE void pf__token_texts_free(pf__token_texts *t);
PF_PRIVATE int pf__json_constraint_vocab(const pf_json_constraint *c);
PF_PRIVATE void pf__json_constraint_mask(const pf_json_constraint *c, const pf__json_matcher *m, pf__json_matcher *scratch,
                                         float *scores, int vocab, const int32_t *eos, int num_eos);
PF_PRIVATE void pf__json_constraint_advance(const pf_json_constraint *c, pf__json_matcher *m, pf__json_matcher *scratch, int32_t t);
PF_PRIVATE const pf__json_schema *pf__json_constraint_schema(const pf_json_constraint *c);

/* ---- src/generate.c ---- */

/* One running sequence: left pads, prompt, then new tokens. */
typedef struct pf__row {
    int32_t *tokens; /* [capacity] */
    int length;      /* tokens so far, pads included */
    int pad;         /* left pads */
    int prompt;      /* prompt tokens, pads excluded */
    int done;        /* greedy/sampling: finished, now fed pad tokens */
    float score;     /* beam search: running log-probability */
} pf__row;

/* A finished beam hypothesis of one prompt. */
typedef struct pf__hypothesis {
    int32_t *tokens; /* new tokens */
    int length;
    float score;
} pf__hypothesis;

typedef struct pf__candidate {
    float score;
    int beam, token;
} pf__candidate;

/* A row's streaming state: its text is decoded from new token `window` on, of which `emitted`
   bytes went out. Decoding a window rather than the whole output keeps each token's cost small;
   the window keeps one token before the text still to come, so that what a decoder does to a
   text's first token (Metaspace drops its space) happens to text already emitted. */
typedef struct pf__stream_state {
    int window;
    size_t emitted;
} pf__stream_state;
PF_PRIVATE pf_result pf__check_generate_options(pf_model *m, const pf_generate_options *o, int batch);

/* Where a generation step's forward leaves what the devices chose instead of the logits (a test
   build downloads those too). */
typedef struct pf__device_choice {
    int32_t *tokens;        /* host [num_rows]: each row's arg-max (backend->argmax), or NULL */
    pf__choice *candidates; /* host [num_ranks][num_rows][per_row]: each rank's best logits of each
                               row (backend->top_k), or NULL */
    size_t per_row;
} pf__device_choice;
PF_PRIVATE pf_result pf__forward_choosing(pf_model *m, pf__job *job, const pf__device_choice *choice);

/* One request's rows among a step's top-k candidates (a batched step holds several requests'). */
typedef struct pf__candidate_view {
    const pf__choice *all; /* [num_ranks][rows][per_row], NULL: the step took none */
    size_t rows, per_row;  /* the step's */
    size_t offset;         /* the request's first row among them */
    float *logits;         /* host [rows][vocab]: the step's logits, where pf__fetch_unsettled_logits puts them */
} pf__candidate_view;

/* One generate request: its resolved lengths and ids, the running rows, and (beam search) the
   candidates and finished hypotheses of each prompt. */
typedef struct pf__generation_state {
    pf_model *m;
    const pf_generate_options *o;
    int batch, vocab, width;      /* width: the longest prompt, every row left-padded to it */
    const int32_t *eos;
    int num_eos;
    int32_t pad_token;
    long long max_length;
    int min_length;
    int beams, per_prompt, num_rows, num_candidates;
    size_t capacity;              /* tokens a row can hold */
    pf__row *rows;
    int32_t *pool[2];             /* the rows' tokens; beam search swaps them when beams move */
    int current;                  /* the pool the rows point into */
    float *logits;                /* [num_rows][vocab]: the step's logits of the rows (m->logits, or
                                     a batched request's part of it) */
    int32_t *ids;                 /* scratch for pf__generate_step */
    int *pads, *src;              /* src: beam search's parent row of each row */
    unsigned char *seen;
    pf__candidate *candidates;
    pf__hypothesis *hyps;         /* [batch][beams] */
    int *num_hyps, *open;         /* open: the prompt's search goes on */
    int32_t *next_tokens;
    float *next_scores;
    pf__stream_state *streams;
    char *stream_text;
    size_t stream_cap;
    char *stop_text;              /* stop_strings: a row's last new tokens, decoded */
    size_t stop_cap;
    int stop_window;              /* stop_strings: new tokens decoded to look for them */
    uint64_t rng;
    /* encoder-decoders: the prompts are the sources, each row's decoder starts at the start token */
    int32_t *sources;             /* [batch][source_width], left-padded; NULL for a decoder */
    const float *source_features; /* a speech encoder-decoder's front end output [batch][source_width]
                                     [hidden] instead of sources; the caller's */
    int seq2seq;                  /* 1: an encoder-decoder (sources or source_features) */
    int *source_pads;             /* [batch] */
    int32_t *source_global;       /* LED: [batch][source_width], 1 for a source token with global
                                     attention (options' global_attention, pads 0); NULL: none */
    int *cross_pads;              /* [num_rows]: the source pads of each row's prompt */
    int source_width;
    int32_t *argmax_tokens;       /* [num_rows]: a step's greedy tokens, chosen on the devices */
    const int32_t *device_tokens; /* the last step's tokens when the devices chose them (argmax_tokens,
                                     or the batcher's), else NULL: chosen from the logits */
    pf__device_choice device;     /* what pf__choose_on_devices asks the forward for */
    pf__choice *top_k_candidates; /* [num_ranks][num_rows][device.per_row]: a sampled step's
                                     candidates, when the backend can take them (device.per_row > 0) */
    pf__candidate_view device_candidates; /* the last step's top-k candidates when the devices took
                                     them (device.candidates, or the batcher's), else .all NULL */
    /* logprobs: the last step's, per row, for pf__report_logprobs */
    float *raw_scores;            /* [vocab]: a row's logits before the processors change them */
    float *step_logprobs;         /* [num_rows]: the chosen token's */
    int32_t *step_top_tokens;     /* [num_rows][top_logprobs] */
    float *step_top_logprobs;     /* [num_rows][top_logprobs] */
    pf__json_matcher *json;       /* json_constraint: [num_rows + 1], the last one scratch */
} pf__generation_state;
PF_PRIVATE int pf__generation_argmax_only(const pf__generation_state *st);
PF_PRIVATE int pf__generation_top_k_only(const pf__generation_state *st);
PF_PRIVATE pf_result pf__generation_resolve(pf__generation_state *st, const int32_t *const *prompts, const int *lengths);
PF_PRIVATE pf_result pf__generation_alloc(pf__generation_state *st, const int32_t *const *prompts, const int *lengths);
PF_PRIVATE pf_result pf__generation_sample_step(pf__generation_state *st, int *finished);
/* Calls o->logprobs_callback with row i's token of the last step (o->logprobs set). */
PF_PRIVATE void pf__report_logprobs(const pf__generation_state *st, const pf_generate_options *o, int i, int32_t token);
PF_PRIVATE pf_result pf__generation_results(pf__generation_state *st, pf_generation *result);
PF_PRIVATE void pf__generation_free(pf__generation_state *st);
/* Calls o->stream with the text the row's last new token completes (state: the row's place in it). */
PF_PRIVATE int pf__stream(pf_model *m, const pf_generate_options *o, int row_index, const pf__row *row,
                          pf__stream_state *state, char **buffer, size_t *buffer_cap);
PF_PRIVATE pf_result pf__generate_locked(pf_model *m, const int32_t *const *prompts, const int *lengths, int batch,
                                     const pf_generate_options *o, pf_generation *result, const float *features,
                                     const int *feature_pads, int feature_width);

/* ---- src/batching.c ---- */

typedef enum { PF__BATCH_QUEUED, PF__BATCH_RUNNING, PF__BATCH_DONE } pf__batch_state;

typedef struct pf__batch_request {
    pf__generation_state st;
    const int32_t *const *prompts;
    const int *lengths;
    pf_generate_options options;
    pf_generation *result;
    int *cache_rows;               /* [num_rows]: the rows' KV cache rows */
    int *pads;                     /* [num_rows]: their left pads, in cache positions */
    pf__batch_state state;
    pf_result error;
    char message[PF__MESSAGE_SIZE];
    /* streaming: the caller's callback runs on the caller's thread (options.stream is NULL here);
       the scheduler hands it each step's tokens and waits for them to be streamed before the next
       step (under the batcher's mutex) */
    pf_stream_callback stream;
    void *stream_user;
    pf_logprobs_callback logprobs_callback; /* a stream's: called with its tokens, as stream is */
    int32_t *delivered;            /* [num_rows]: the last step's token of each row live in it, or -1 */
    int to_deliver;                /* delivered holds tokens not streamed yet */
    int stop_asked;                /* the callback returned nonzero: the request ends, its results so far */
    int micro_group;               /* its group of the micro-batches (pipeline stages), while they run */
    struct pf__batch_request *next;
} pf__batch_request;

struct pf__batcher {
    pthread_mutex_t mutex;
    pthread_cond_t work, done;
    pthread_cond_t streamed;       /* a caller streamed its request's tokens, or a request arrived */
    unsigned long arrived;         /* requests queued so far */
    unsigned long admission_seen;  /* `arrived` when admission last looked at the queue */
    unsigned long ended;           /* requests ended so far */
    unsigned long admission_blocked; /* arrived + ended when the queue's head last did not fit */
    pthread_t thread;
    int stopping;
    pf__batch_request *queue, *running;
    int queued;
    unsigned char *row_used;       /* [max_batch of the busy period's group] */
    int clock;
    int32_t *ids;                  /* a decode step's: [max_batch] */
    int32_t *tokens;               /* [max_batch]: a step's greedy tokens, chosen on the devices */
    int *pads, *cache_rows;        /* [max_batch] */
    pf__choice *candidates;        /* a sampled step's top-k candidates, [num_ranks][rows][per_row] */
    size_t candidates_cap;         /* its room, grown to the most a step asked */
    pf__device_choice choice;      /* what the step's forward leaves instead of the logits */
    /* micro-batches (pipeline stages: pf__batch_micro_step): the running requests in groups, each
       at a clock of its own, whose steps enter the first stage in turn while the later stages work
       on the groups that entered before */
    int micro;                     /* the requests run in groups now */
    int groups;                    /* how many (up to the stages) */
    int *group_clock;              /* [stages]: the cache position of each group's next step */
    unsigned char *group_busy;     /* [stages]: its step is in the stages */
    int *stage_group;              /* [stages]: the group each stage ran in the last job, or -1 */
    int *stage_rows;               /* [stages][2]: the job's (pf__job.stage_rows) */
};
PF_PRIVATE void pf__batcher_stop(pf_model *m);

#endif /* PF_INTERNAL_H */
