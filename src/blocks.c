#include "internal.h"
/* =============================================================================================== */
/* llama.cpp's block formats (GGUF's quantized tensors): sizes, dequantization, integer sub-blocks */
/* =============================================================================================== */

/* Each format stores a row of weights in blocks: 32 weights (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1,
   IQ4_NL, MXFP4) or 256 in 8 sub-blocks of 32 (Q4_K, Q5_K, Q6_K, Q3_K, IQ4_XS, Q2_K), little-endian, as
   ggml's block_* structs lay them out. Q4_G is not ggml's: GPTQ's and AWQ's 4-bit groups (src/quantized.c)
   a block of 32 inputs at a time, each block the fp16 scale of its group and output, its zero (a byte,
   0..15), then Q4_0's 16 bytes of nibbles q; weight = scale * (q - zero), the formats' own
   dequantization in fp32 (19 bytes: a group of 128 in the file takes 16.6 bytes a 32 weights).
   E4M3 is not ggml's either: FP8 checkpoints' e4m3 weights (src/quantized.c), 32 inputs of a row
   with the fp32 value of their scale (a tensor's, or its block's), then the 32 codes; weight =
   e4m3 value * scale, the format's dequantization (36 bytes: the file's 32, and its scales). Q8_G
   is ours too: 8-bit integer weights (GPTQ's, compressed-tensors'), 32 inputs of a row with their
   group's scale in fp32 (exact from F16, BF16 and F32 scales), their zero as a byte, then the 32
   values as bytes, each offset as the zero is (compressed-tensors' signed q and zero plus 128);
   weight = (q - zero) * scale, the formats' own dequantization in fp32 (37 bytes: the file's 32,
   and its scales and zeros). q - zero spans -255..255, no int8: Q8_G has no sub-blocks.
   Dequantization is ggml's dequantize_row_* arithmetic in fp32 (what the gguf package's
   gguf.quants computes); the sub-block form is the same numbers as integers and two fp32 factors,
   for the integer products of the CPU backend. */

static const struct { const char *name; unsigned char values_log2, bytes; } pf__block_table[] = {
    [PF__DTYPE_F32] = {"F32", 0, 4},   [PF__DTYPE_F16] = {"F16", 0, 2},     [PF__DTYPE_BF16] = {"BF16", 0, 2},
    [PF__DTYPE_Q8] = {"Q8_0", 5, 34},  [PF__DTYPE_Q4] = {"Q4_0", 5, 18},    [PF__DTYPE_Q4_1] = {"Q4_1", 5, 20},
    [PF__DTYPE_Q5_0] = {"Q5_0", 5, 22}, [PF__DTYPE_Q5_1] = {"Q5_1", 5, 24}, [PF__DTYPE_Q4_K] = {"Q4_K", 8, 144},
    [PF__DTYPE_Q5_K] = {"Q5_K", 8, 176}, [PF__DTYPE_Q6_K] = {"Q6_K", 8, 210}, [PF__DTYPE_Q3_K] = {"Q3_K", 8, 110},
    [PF__DTYPE_IQ4_NL] = {"IQ4_NL", 5, 18}, [PF__DTYPE_IQ4_XS] = {"IQ4_XS", 8, 136}, [PF__DTYPE_Q2_K] = {"Q2_K", 8, 84},
    [PF__DTYPE_MXFP4] = {"MXFP4", 5, 17}, [PF__DTYPE_Q4_G] = {"Q4_G (GPTQ / AWQ int4)", 5, 19},
    [PF__DTYPE_E4M3] = {"E4M3 (FP8)", 5, 36}, [PF__DTYPE_Q8_G] = {"Q8_G (GPTQ / compressed-tensors int8)", 5, 37},
    [PF__DTYPE_PACKED] = {"packed (FP8, GPTQ, AWQ)", 0, 0}, [PF__DTYPE_OTHER] = {"other", 0, 0},
};

/* The IQ4 formats' 16 levels a nibble stands for (ggml's kvalues_iq4nl): a non-linear 4-bit grid. */
PF_PRIVATE const int8_t pf__iq4_levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

/* MXFP4's 16 levels: e2m1 (sign, 2 exponent bits, 1 mantissa bit: 0, 0.5, 1, 1.5, 2, 3, 4, 6)
   doubled into integers, the block's scale halved to match (ggml's kvalues_mxfp4). */
PF_PRIVATE const int8_t pf__mxfp4_levels[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

/* e4m3 (float8_e4m3fn): sign, 4 exponent bits (bias 7), 3 mantissa bits; exponent 0 subnormal
   (mantissa / 8 x 2^-6), S.1111.111 NaN, no infinities. Every value is exact in fp32. */
#define PF__E4M3_POW2(e)                                                                                              \
    ((e) == 0 ? 1.0f / 128 : (e) == 1 ? 1.0f / 64 : (e) == 2 ? 1.0f / 32 : (e) == 3 ? 1.0f / 16 : (e) == 4 ? 1.0f / 8 \
     : (e) == 5 ? 1.0f / 4 : (e) == 6 ? 1.0f / 2 : (e) == 7 ? 1.0f : (e) == 8 ? 2.0f : (e) == 9 ? 4.0f : (e) == 10 ? 8.0f \
     : (e) == 11 ? 16.0f : (e) == 12 ? 32.0f : (e) == 13 ? 64.0f : (e) == 14 ? 128.0f : 256.0f)
#define PF__E4M3(c)                                                                                                   \
    (((c) & 127) == 127 ? NAN                                                                                         \
     : ((c) & 128 ? -1.0f : 1.0f) * (((c) >> 3 & 15) ? (1.0f + (float)((c) & 7) / 8) * PF__E4M3_POW2((c) >> 3 & 15)   \
                                                     : (float)((c) & 7) / 512))
#define PF__E4M3_4(c) PF__E4M3(c), PF__E4M3((c) + 1), PF__E4M3((c) + 2), PF__E4M3((c) + 3)
#define PF__E4M3_16(c) PF__E4M3_4(c), PF__E4M3_4((c) + 4), PF__E4M3_4((c) + 8), PF__E4M3_4((c) + 12)
#define PF__E4M3_64(c) PF__E4M3_16(c), PF__E4M3_16((c) + 16), PF__E4M3_16((c) + 32), PF__E4M3_16((c) + 48)
PF_PRIVATE const float pf__e4m3_values[256] = {PF__E4M3_64(0), PF__E4M3_64(64), PF__E4M3_64(128), PF__E4M3_64(192)};

/* An E4M3 or Q8_G block's scale (fp32, little-endian, as every platform we build for stores it). */
static float pf__block_f32_scale(const uint8_t *b) {
    float scale;
    memcpy(&scale, b, sizeof scale);
    return scale;
}

/* Weight i of a Q8_G block: its value less the zero, times the scale. */
static float pf__q8_g_value(const uint8_t *b, int i) {
    return (float)((int)b[5 + i] - (int)b[4]) * pf__block_f32_scale(b);
}

PF_PRIVATE size_t pf__block_values(pf__dtype t) { return (size_t)1 << pf__block_table[t].values_log2; }
PF_PRIVATE size_t pf__block_bytes(pf__dtype t) { return pf__block_table[t].bytes; }
PF_PRIVATE const char *pf__dtype_name(pf__dtype t) { return pf__block_table[t].name; }

static float pf__block_f16(const uint8_t *p) { return pf__f16_to_f32((uint16_t)(p[0] | p[1] << 8)); }

PF_PRIVATE int pf__block_has_min(pf__dtype t) {
    return t == PF__DTYPE_Q4_1 || t == PF__DTYPE_Q5_1 || t == PF__DTYPE_Q4_K || t == PF__DTYPE_Q5_K || t == PF__DTYPE_Q2_K;
}

/* The K formats' sub-block j scale and minimum: 6 bits each, j < 4 in the low bits of bytes j and
   j + 4, the others split over byte j + 4's nibbles and the top bits of bytes j - 4 and j (ggml's
   get_scale_min_k4). */
static void pf__k_scale_min(const uint8_t *sc, int j, int *scale, int *min) {
    if (j < 4) {
        *scale = sc[j] & 63;
        *min = sc[j + 4] & 63;
    } else {
        *scale = (sc[j + 4] & 15) | (sc[j - 4] >> 6) << 4;
        *min = (sc[j + 4] >> 4) | (sc[j] >> 6) << 4;
    }
}

/* Q3_K's 16-weight scale s (of 16): 6 bits, the low 4 in the nibbles of bytes 0..7, the high 2 in
   bytes 8..11 (ggml's kmask unpacking), less 32. */
PF_PRIVATE int pf__q3_k_scale(const uint8_t *sc, int s) {
    int low = s < 8 ? sc[s] & 15 : sc[s - 8] >> 4;
    int high = (sc[8 + s % 4] >> (2 * (s / 4))) & 3;
    return (low | high << 4) - 32;
}

/* IQ4_XS's sub-block j scale: 6 bits, the low 4 a nibble of bytes 4..7, the high 2 bits 2j of the
   16-bit word at byte 2 (ggml's scales_l and scales_h). */
PF_PRIVATE int pf__iq4_xs_scale(const uint8_t *b, int j) {
    int high = (int)(((unsigned)b[2] | (unsigned)b[3] << 8) >> (2 * j)) & 3;
    return ((b[4 + j / 2] >> (4 * (j % 2))) & 15) | high << 4;
}

/* Sub-block j's unsigned values (before any offset), for every format: v[i] in 0..255 (the IQ4
   formats' nibbles, which index pf__iq4_levels; MXFP4's, pf__mxfp4_levels). */
static void pf__sub_block_values(pf__dtype t, const uint8_t *b, int j, int *q) {
    switch (t) {
    case PF__DTYPE_Q8:
        for (int i = 0; i < 32; i++) q[i] = (int8_t)b[2 + i];
        break;
    case PF__DTYPE_Q4: /* 16 bytes: low nibbles weights 0..15, high 16..31 */
    case PF__DTYPE_Q4_1:
    case PF__DTYPE_Q4_G: { /* the scale, the zero byte, then Q4_0's nibbles */
        const uint8_t *qs = b + (t == PF__DTYPE_Q4 ? 2 : t == PF__DTYPE_Q4_G ? 3 : 4);
        for (int i = 0; i < 16; i++) q[i] = qs[i] & 15, q[i + 16] = qs[i] >> 4;
        break;
    }
    case PF__DTYPE_Q5_0: /* the Q4 nibbles, and weight i's fifth bit as bit i of a 32-bit word */
    case PF__DTYPE_Q5_1: {
        const uint8_t *qh = b + (t == PF__DTYPE_Q5_0 ? 2 : 4), *qs = qh + 4;
        uint32_t high = (uint32_t)qh[0] | (uint32_t)qh[1] << 8 | (uint32_t)qh[2] << 16 | (uint32_t)qh[3] << 24;
        for (int i = 0; i < 16; i++) {
            q[i] = (qs[i] & 15) | (int)((high >> i) & 1) << 4;
            q[i + 16] = (qs[i] >> 4) | (int)((high >> (i + 16)) & 1) << 4;
        }
        break;
    }
    case PF__DTYPE_Q4_K: { /* d, dmin, 12 bytes of scales, 128 of nibbles: sub-block 2k low, 2k + 1 high */
        const uint8_t *qs = b + 16 + (j / 2) * 32;
        for (int i = 0; i < 32; i++) q[i] = j % 2 ? qs[i] >> 4 : qs[i] & 15;
        break;
    }
    case PF__DTYPE_Q5_K: { /* d, dmin, 12 bytes of scales, 32 bytes of fifth bits (bit j), 128 of nibbles */
        const uint8_t *qh = b + 16, *qs = b + 48 + (j / 2) * 32;
        for (int i = 0; i < 32; i++) q[i] = (j % 2 ? qs[i] >> 4 : qs[i] & 15) | ((qh[i] >> j) & 1) << 4;
        break;
    }
    case PF__DTYPE_Q6_K: { /* halves of 128: 64 bytes of low nibbles, 32 of 2-bit highs; then 16 scales, d */
        int half = j / 4, k = j % 4;
        const uint8_t *ql = b + half * 64 + (k % 2) * 32, *qh = b + 128 + half * 32;
        for (int i = 0; i < 32; i++) q[i] = ((ql[i] >> (k / 2 * 4)) & 15) | ((qh[i] >> (2 * k)) & 3) << 4;
        break;
    }
    case PF__DTYPE_IQ4_NL: /* d, then Q4_0's nibbles */
    case PF__DTYPE_MXFP4: /* the E8M0 byte, then Q4_0's nibbles */
    case PF__DTYPE_IQ4_XS: { /* d, 2 bytes of the scales' high bits, 4 of their nibbles, 16 bytes of nibbles a sub-block */
        const uint8_t *qs = b + (t == PF__DTYPE_IQ4_NL ? 2 : t == PF__DTYPE_MXFP4 ? 1 : 8 + j * 16);
        for (int i = 0; i < 16; i++) q[i] = qs[i] & 15, q[i + 16] = qs[i] >> 4;
        break;
    }
    case PF__DTYPE_Q3_K: { /* 32 bytes of high bits (bit 4 half + k), 64 of 2-bit lows (halves of 32, by 2k) */
        int half = j / 4, k = j % 4;
        const uint8_t *hmask = b, *qs = b + 32 + half * 32;
        for (int i = 0; i < 32; i++) q[i] = ((qs[i] >> (2 * k)) & 3) | ((hmask[i] >> (4 * half + k)) & 1) << 2;
        break;
    }
    case PF__DTYPE_Q2_K: { /* 16 bytes of scales, then 64 of 2-bit values (halves of 32, by 2k) */
        const uint8_t *qs = b + 16 + j / 4 * 32;
        for (int i = 0; i < 32; i++) q[i] = (qs[i] >> (2 * (j % 4))) & 3;
        break;
    }
    default:
        for (int i = 0; i < 32; i++) q[i] = 0;
    }
}

PF_PRIVATE void pf__sub_block_decode(pf__dtype t, const uint8_t *b, int j, pf__sub_block *out) {
    int q[32], offset = t == PF__DTYPE_Q4 ? 8 : t == PF__DTYPE_Q5_0 ? 16 : t == PF__DTYPE_Q6_K ? 32 : t == PF__DTYPE_Q3_K ? 4
                      : t == PF__DTYPE_Q4_G ? b[2] : 0;
    pf__sub_block_values(t, b, j, q);
    int iq4 = t == PF__DTYPE_IQ4_NL || t == PF__DTYPE_IQ4_XS;
    for (int i = 0; i < 32; i++)
        out->v[i] = iq4 ? pf__iq4_levels[q[i]] : t == PF__DTYPE_MXFP4 ? pf__mxfp4_levels[q[i]] : (int8_t)(q[i] - offset);
    out->scales16[0] = out->scales16[1] = out->mins16[0] = out->mins16[1] = 1;
    out->mw = 0.0f;
    switch (t) {
    case PF__DTYPE_Q8: case PF__DTYPE_Q4: case PF__DTYPE_Q5_0: case PF__DTYPE_IQ4_NL: case PF__DTYPE_Q4_G:
        out->dw = pf__block_f16(b);
        break;
    case PF__DTYPE_IQ4_XS: out->dw = pf__block_f16(b) * (float)(pf__iq4_xs_scale(b, j) - 32); break;
    case PF__DTYPE_MXFP4: out->dw = pf__e8m0_half(b[0]); break;
    case PF__DTYPE_Q4_1: case PF__DTYPE_Q5_1: out->dw = pf__block_f16(b), out->mw = pf__block_f16(b + 2); break;
    case PF__DTYPE_Q4_K: case PF__DTYPE_Q5_K: {
        int scale, min;
        pf__k_scale_min(b + 4, j, &scale, &min);
        out->dw = pf__block_f16(b) * (float)scale;
        out->mw = -(pf__block_f16(b + 2) * (float)min);
        break;
    }
    case PF__DTYPE_Q6_K: {
        const int8_t *sc = (const int8_t *)(b + 192) + (j / 4) * 8 + (j % 4) * 2;
        out->scales16[0] = sc[0], out->scales16[1] = sc[1];
        out->dw = pf__block_f16(b + 208);
        break;
    }
    case PF__DTYPE_Q3_K: /* then 12 bytes of 6-bit scales, d */
        out->scales16[0] = (int16_t)pf__q3_k_scale(b + 96, 2 * j), out->scales16[1] = (int16_t)pf__q3_k_scale(b + 96, 2 * j + 1);
        out->dw = pf__block_f16(b + 108);
        break;
    case PF__DTYPE_Q2_K: /* a byte per 16 weights: the scale in the low nibble, the minimum high; then d, dmin */
        out->scales16[0] = b[2 * j] & 15, out->scales16[1] = b[2 * j + 1] & 15;
        out->mins16[0] = b[2 * j] >> 4, out->mins16[1] = b[2 * j + 1] >> 4;
        out->dw = pf__block_f16(b + 80);
        out->mw = -pf__block_f16(b + 82);
        break;
    default: out->dw = 0.0f;
    }
}

/* One block as fp32, in ggml's order of operations: d * q (Q8_0, Q4_0, Q5_0, MXFP4; Q4_G's scale * (q - zero)), d * q + m (Q4_1,
   Q5_1), (d * sc) * q - (dmin * m) (Q4_K, Q5_K, Q2_K: -(dmin * m) is (-dmin) * m exactly),
   (d * sc) * q (Q6_K, Q3_K), q offset as stored. */
PF_PRIVATE void pf__block_dequantize(pf__dtype t, const uint8_t *b, float *out) {
    if (t == PF__DTYPE_E4M3) { /* the format's order: the e4m3 value times the scale */
        for (int i = 0; i < 32; i++) out[i] = pf__e4m3_values[b[4 + i]] * pf__block_f32_scale(b);
        return;
    }
    if (t == PF__DTYPE_Q8_G) {
        for (int i = 0; i < 32; i++) out[i] = pf__q8_g_value(b, i);
        return;
    }
    int subs = (int)(pf__block_values(t) / 32);
    for (int j = 0; j < subs; j++) {
        pf__sub_block s;
        pf__sub_block_decode(t, b, j, &s);
        float *y = out + j * 32;
        switch (t) {
        case PF__DTYPE_Q4_1: case PF__DTYPE_Q5_1:
            for (int i = 0; i < 32; i++) y[i] = (float)s.v[i] * s.dw + s.mw;
            break;
        case PF__DTYPE_Q4_K: case PF__DTYPE_Q5_K:
            for (int i = 0; i < 32; i++) y[i] = s.dw * (float)s.v[i] + s.mw;
            break;
        case PF__DTYPE_Q6_K: case PF__DTYPE_Q3_K:
            for (int i = 0; i < 32; i++) y[i] = s.dw * (float)s.scales16[i / 16] * (float)s.v[i];
            break;
        case PF__DTYPE_Q2_K:
            for (int i = 0; i < 32; i++) y[i] = s.dw * (float)s.scales16[i / 16] * (float)s.v[i] + s.mw * (float)s.mins16[i / 16];
            break;
        default:
            for (int i = 0; i < 32; i++) y[i] = (float)s.v[i] * s.dw;
        }
    }
}

/* Weight i of a row-major array of whole blocks (embedding lookups, pf_to_cpu). */
PF_PRIVATE float pf__block_value(pf__dtype t, const void *w, size_t i) {
    size_t values = pf__block_values(t), j = i % values;
    const uint8_t *b = (const uint8_t *)w + i / values * pf__block_bytes(t);
    if (t == PF__DTYPE_E4M3) return pf__e4m3_values[b[4 + j]] * pf__block_f32_scale(b);
    if (t == PF__DTYPE_Q8_G) return pf__q8_g_value(b, (int)j);
    pf__sub_block s;
    pf__sub_block_decode(t, b, (int)(j / 32), &s);
    j %= 32;
    switch (t) {
    case PF__DTYPE_Q4_1: case PF__DTYPE_Q5_1: return (float)s.v[j] * s.dw + s.mw;
    case PF__DTYPE_Q4_K: case PF__DTYPE_Q5_K: return s.dw * (float)s.v[j] + s.mw;
    case PF__DTYPE_Q6_K: case PF__DTYPE_Q3_K: return s.dw * (float)s.scales16[j / 16] * (float)s.v[j];
    case PF__DTYPE_Q2_K: return s.dw * (float)s.scales16[j / 16] * (float)s.v[j] + s.mw * (float)s.mins16[j / 16];
    default: return (float)s.v[j] * s.dw;
    }
}
