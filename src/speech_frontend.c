#include "internal.h"
/* ---- speech encoders' front end (Wav2Vec2, XLSR, HuBERT) ---- */

PF_PRIVATE size_t pf__speech_bytes(const pf__speech *sp) { return sp->bytes; }

PF_PRIVATE void pf__speech_free(pf__speech *sp) {
    if (!sp) return;
    for (int l = 0; l < 16; l++) free(sp->conv_weight[l]), free(sp->conv_bias[l]), free(sp->conv_norm_weight[l]), free(sp->conv_norm_bias[l]);
    free(sp->projection_norm_weight), free(sp->projection_norm_bias), free(sp->projection_weight), free(sp->projection_bias);
    free(sp->pos_weight), free(sp->pos_bias);
    free(sp->mel_conv1_weight), free(sp->mel_conv1_bias), free(sp->mel_conv2_weight), free(sp->mel_conv2_bias);
    for (int i = 0; i < sp->num_tokens; i++) free(sp->tokens[i]);
    free(sp->tokens), free(sp->pad), free(sp->delimiter), free(sp->unk);
    free(sp);
}

/* Frames a waveform of n samples makes: each conv keeps (n - kernel) / stride + 1; 0 if too few. */
PF_PRIVATE int pf__speech_frames(const pf__config *c, long long n) {
    const struct pf__speech_config *sc = &c->speech_config;
    for (int l = 0; l < sc->num_convs; l++) {
        if (n < sc->conv_kernel[l]) return 0;
        n = (n - sc->conv_kernel[l]) / sc->conv_stride[l] + 1;
    }
    return n > INT_MAX ? INT_MAX : (int)n;
}

/* The pattern of the family's nth row (0: the first) for a front-end slot, policies.inc's; NULL
   when there is none. */
static const char *pf__front_pattern(const pf_model *m, pf__slot slot, int nth) {
    const pf__policy_rows *rows = pf__rows(m->config.arch);
    for (size_t i = 0; i < rows->num_tensors; i++)
        if (rows->tensors[i].arch == m->config.arch && rows->tensors[i].slot == slot && nth-- == 0)
            return rows->tensors[i].pattern;
    return NULL;
}

/* The front-end slot's tensor name, its %d the convolution l. */
static void pf__front_name(const pf_model *m, pf__slot slot, int l, char *name, size_t size) {
    const char *pattern = pf__front_pattern(m, slot, 0);
    snprintf(name, size, pattern ? pattern : "(no row)", l);
}

/* Tensor prefix + name as an fp32 copy into *out, its shape checked (dims in shape[ndim]);
   absent: *out NULL, an error where required. The tensor counts as consumed. */
static pf_result pf__speech_tensor(pf_model *m, const char *prefix, const char *name, const size_t *shape, int ndim,
                                   int required, float **out) {
    char full[300];
    *out = NULL;
    snprintf(full, sizeof full, "%s%s", prefix, name);
    const pf__st_tensor *st = pf__st_take(&m->st, full);
    if (!st) return required ? PF__FAIL(m, PF_ERROR_FORMAT, "%s: missing tensor '%s'", m->dir, full) : PF_OK;
    if (st->dtype == PF__DTYPE_OTHER)
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "%s: tensor '%s' has an unsupported dtype (F32, F16 and BF16 are)",
                        st->file->path, st->name);
    int ok = st->ndim == ndim;
    for (int k = 0; ok && k < ndim; k++) ok = st->shape[k] == shape[k];
    if (!ok) {
        char want[96] = "", got[96] = "";
        for (int k = 0; k < ndim; k++)
            snprintf(want + strlen(want), sizeof want - strlen(want), "%s%zu", k ? ", " : "", shape[k]);
        for (int k = 0; k < st->ndim && k < 6; k++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%zu", k ? ", " : "", st->shape[k]);
        return PF__FAIL(m, PF_ERROR_FORMAT, "%s: tensor '%s' has shape [%s] but the config needs [%s]", st->file->path,
                        st->name, got, want);
    }
    *out = (float *)malloc((st->numel ? st->numel : 1) * sizeof(float));
    if (!*out) return PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    size_t width = pf__dtype_size(st->dtype);
    m->speech->bytes += st->numel * sizeof(float);
    for (size_t i = 0; i < st->numel; i++) { /* memcpy: a file's header need not leave the data aligned */
        uint32_t f32 = 0;
        uint16_t half = 0;
        if (st->dtype == PF__DTYPE_F32) memcpy(&f32, st->data + i * width, 4), memcpy(&(*out)[i], &f32, 4);
        else memcpy(&half, st->data + i * width, 2), (*out)[i] = st->dtype == PF__DTYPE_F16 ? pf__f16_to_f32(half) : pf__bf16_to_f32(half);
    }
    return PF_OK;
}

/* The positional convolution's weight: saved weight-normalised (torch's weight_norm with dim=2,
   under its old names weight_g / weight_v or its parametrizations' original0 / original1), or
   plain. Effective weight = g[k] * v[o][i][k] / ||v[:][:][k]||. */
static pf_result pf__speech_pos_weight(pf_model *m, const char *prefix, size_t hidden, size_t per_group, size_t kernel) {
    pf__speech *sp = m->speech;
    size_t g_shape[3] = {1, 1, kernel}, v_shape[3] = {hidden, per_group, kernel};
    float *g = NULL, *v = NULL, *plain = NULL;
    const char *plain_name = pf__front_pattern(m, PF__SLOT_POS_CONV_WEIGHT, 0), *last_g = NULL;
    pf_result r = plain_name ? pf__speech_tensor(m, prefix, plain_name, v_shape, 3, 0, &plain) : PF_OK;
    int found = plain != NULL;
    for (int i = 0; !r && pf__front_pattern(m, PF__SLOT_POS_CONV_WEIGHT_G, i); i++) { /* g and v: their i-th spellings */
        const char *names[2] = {pf__front_pattern(m, PF__SLOT_POS_CONV_WEIGHT_G, i),
                                pf__front_pattern(m, PF__SLOT_POS_CONV_WEIGHT_V, i)};
        float *gi = NULL, *vi = NULL;
        last_g = names[0];
        if (!names[1]) r = PF__FAIL(m, PF_ERROR_UNSUPPORTED, "policies.inc: a spelling of g without one of v");
        if (!r) r = pf__speech_tensor(m, prefix, names[0], g_shape, 3, 0, &gi);
        if (!r) r = pf__speech_tensor(m, prefix, names[1], v_shape, 3, 0, &vi);
        if (!r && (!gi) != (!vi))
            r = PF__FAIL(m, PF_ERROR_FORMAT, "%s: tensor '%s%s' without '%s%s'", m->dir, prefix, names[gi ? 0 : 1], prefix,
                         names[gi ? 1 : 0]);
        if (!r && gi && found)
            r = PF__FAIL(m, PF_ERROR_FORMAT, "%s: two spellings of the positional convolution's weight", m->dir);
        if (!r && gi) found = 1, g = gi, v = vi, gi = vi = NULL;
        free(gi), free(vi);
    }
    if (!r && !found)
        r = PF__FAIL(m, PF_ERROR_FORMAT, "%s: missing tensor '%s%s' (or weight_g and weight_v)", m->dir, prefix,
                     last_g ? last_g : plain_name ? plain_name : "(no row)");
    if (!r && plain) {
        sp->pos_weight = plain;
        plain = NULL;
    } else if (!r) {
        for (size_t k = 0; k < kernel; k++) {
            double sum = 0;
            for (size_t j = 0; j < hidden * per_group; j++) sum += (double)v[j * kernel + k] * v[j * kernel + k];
            float scale = sum > 0 ? (float)(g[k] / sqrt(sum)) : 0.0f;
            for (size_t j = 0; j < hidden * per_group; j++) v[j * kernel + k] *= scale;
        }
        sp->pos_weight = v;
        v = NULL;
        sp->bytes -= kernel * sizeof(float); /* g, folded in */
    }
    free(g), free(v), free(plain);
    return r;
}

/* Reads the front end's tensors (under the prefix the blocks' tensors have). */
PF_PRIVATE pf_result pf__speech_load(pf_model *m, const char *prefix) {
    const pf__config *c = &m->config;
    const struct pf__speech_config *sc = &c->speech_config;
    m->speech = (pf__speech *)calloc(1, sizeof *m->speech);
    if (!m->speech) return PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    pf__speech *sp = m->speech;
    pf_result r = PF_OK;
    size_t in = 1;
    for (int l = 0; l < sc->num_convs && !r; l++) {
        size_t out = (size_t)sc->conv_dim[l], weight[3] = {out, in, (size_t)sc->conv_kernel[l]}, vec[1] = {out};
        char name[256];
        int normed = sc->layer_norm_convs || l == 0;
        pf__front_name(m, PF__SLOT_FRONT_CONV_WEIGHT, l, name, sizeof name);
        r = pf__speech_tensor(m, prefix, name, weight, 3, 1, &sp->conv_weight[l]);
        pf__front_name(m, PF__SLOT_FRONT_CONV_BIAS, l, name, sizeof name);
        if (!r) r = pf__speech_tensor(m, prefix, name, vec, 1, sc->conv_bias, &sp->conv_bias[l]);
        if (!r && sp->conv_bias[l] && !sc->conv_bias)
            r = PF__FAIL(m, PF_ERROR_FORMAT, "%s: tensor '%s%s' is in the checkpoint but config.json says conv_bias is "
                         "false", m->dir, prefix, name);
        pf__front_name(m, PF__SLOT_FRONT_CONV_NORM_WEIGHT, l, name, sizeof name);
        if (!r) r = pf__speech_tensor(m, prefix, name, vec, 1, normed, &sp->conv_norm_weight[l]);
        pf__front_name(m, PF__SLOT_FRONT_CONV_NORM_BIAS, l, name, sizeof name);
        if (!r) r = pf__speech_tensor(m, prefix, name, vec, 1, normed, &sp->conv_norm_bias[l]);
        if (!r && !normed && (sp->conv_norm_weight[l] || sp->conv_norm_bias[l]))
            r = PF__FAIL(m, PF_ERROR_FORMAT, "%s: conv layer %d has a norm but config.json's feat_extract_norm is "
                         "\"group\" (a norm on the first layer only)", m->dir, l);
        in = out;
    }
    size_t hidden = (size_t)c->hidden_size, vec[1] = {in}, projection[2] = {hidden, in}, hvec[1] = {hidden};
    int norm = c->feature_projection_norm;
    char name[256];
    pf__front_name(m, PF__SLOT_FEATURE_NORM_WEIGHT, 0, name, sizeof name);
    if (!r) r = pf__speech_tensor(m, prefix, name, vec, 1, norm, &sp->projection_norm_weight);
    pf__front_name(m, PF__SLOT_FEATURE_NORM_BIAS, 0, name, sizeof name);
    if (!r) r = pf__speech_tensor(m, prefix, name, vec, 1, norm, &sp->projection_norm_bias);
    if (!r && !norm && (sp->projection_norm_weight || sp->projection_norm_bias))
        r = PF__FAIL(m, PF_ERROR_FORMAT, "%s: the feature projection has a norm but config.json's feat_proj_layer_norm is "
                     "false", m->dir);
    pf__front_name(m, PF__SLOT_FEATURE_PROJECTION_WEIGHT, 0, name, sizeof name);
    if (!r) r = pf__speech_tensor(m, prefix, name, projection, 2, 1, &sp->projection_weight);
    pf__front_name(m, PF__SLOT_FEATURE_PROJECTION_BIAS, 0, name, sizeof name);
    if (!r) r = pf__speech_tensor(m, prefix, name, hvec, 1, 1, &sp->projection_bias);
    if (!r) r = pf__speech_pos_weight(m, prefix, hidden, hidden / (size_t)sc->pos_groups, (size_t)sc->pos_kernel);
    pf__front_name(m, PF__SLOT_POS_CONV_BIAS, 0, name, sizeof name);
    if (!r) r = pf__speech_tensor(m, prefix, name, hvec, 1, 1, &sp->pos_bias);
    /* encoder.layer_norm fills two optional slots: keep the one the config means */
    pf__slot unused = c->pre_norm ? PF__SLOT_EMBED_NORM_WEIGHT : PF__SLOT_FINAL_NORM_WEIGHT;
    pf__slot kept = c->pre_norm ? PF__SLOT_FINAL_NORM_WEIGHT : PF__SLOT_EMBED_NORM_WEIGHT;
    m->sources[unused].data = m->sources[unused + 1].data = NULL;
    const pf__arch_tensor *kept_row = pf__arch_tensor_for(c->arch, kept);
    if (!r && (!m->sources[kept].data || !m->sources[kept + 1].data))
        r = PF__FAIL(m, PF_ERROR_FORMAT, "%s: missing tensor '%s%s' or its bias", m->dir, prefix,
                     kept_row ? kept_row->pattern : "(no row)");
    return r;
}

static float pf__speech_gelu(float v) { return 0.5f * v * (1.0f + erff(v * 0.7071067811865476f)); }

/* y = (x - mean) / sqrt(var + eps) * weight + bias over n values `step` apart. */
static void pf__speech_norm(float *x, size_t n, size_t step, const float *weight, const float *bias, size_t wi, size_t wstep,
                            double eps) {
    double mean = 0, var = 0;
    for (size_t i = 0; i < n; i++) mean += x[i * step];
    mean /= (double)n;
    for (size_t i = 0; i < n; i++) var += (x[i * step] - mean) * (x[i * step] - mean);
    float inv = (float)(1.0 / sqrt(var / (double)n + eps));
    for (size_t i = 0; i < n; i++)
        x[i * step] = (float)(x[i * step] - mean) * inv * weight[wi + i * wstep] + bias[wi + i * wstep];
}

/* The columns of the front end's im2col blocks: the widest of in * kernel over the convs and the
   positional convolution's group width * kernel. */
PF_PRIVATE size_t pf__speech_col_width(const pf__config *c) {
    const struct pf__speech_config *sc = &c->speech_config;
    size_t widest = (size_t)c->hidden_size / (size_t)sc->pos_groups * (size_t)sc->pos_kernel, in = 1;
    for (int l = 0; l < sc->num_convs; l++) {
        if (in * (size_t)sc->conv_kernel[l] > widest) widest = in * (size_t)sc->conv_kernel[l];
        in = (size_t)sc->conv_dim[l];
    }
    return widest;
}

/* The float matrix w [rows][cols] as the CPU backend's matmul reads weights. */
static pf__weight pf__speech_weight(const float *w, size_t rows, size_t cols) {
    pf__weight weight;
    memset(&weight, 0, sizeof weight);
    weight.data = (void *)w;
    weight.dtype = PF__DTYPE_F32;
    weight.rows = rows;
    weight.cols = cols;
    return weight;
}

/* One waveform's frames, out [frames][hidden]: the conv stack, the feature projection, plus the
   positional convolution. Every convolution gathers PF__SPEECH_BLOCK frames' inputs (im2col, in
   the weight's [in][kernel] order) and multiplies them by its weight with the CPU backend's
   matmul. work_a and work_b hold the largest conv output (frames x channels), work_h frames x
   hidden, col PF__SPEECH_BLOCK x pf__speech_col_width. */
PF_PRIVATE void pf__speech_frontend(const pf_model *m, const float *samples, int num_samples, float *out, float *work_a,
                                float *work_b, float *work_h, float *col) {
    const pf__config *c = &m->config;
    const struct pf__speech_config *sc = &c->speech_config;
    const pf__speech *sp = m->speech;
    const float *x = samples; /* [length][in] */
    size_t in = 1, length = (size_t)num_samples;
    float *y = work_a;
    for (int l = 0; l < sc->num_convs; l++) {
        size_t outc = (size_t)sc->conv_dim[l], K = (size_t)sc->conv_kernel[l], S = (size_t)sc->conv_stride[l];
        size_t frames = (length - K) / S + 1, width = in * K;
        pf__weight w = pf__speech_weight(sp->conv_weight[l], outc, width);
        for (size_t t0 = 0; t0 < frames; t0 += PF__SPEECH_BLOCK) {
            size_t n = frames - t0 < PF__SPEECH_BLOCK ? frames - t0 : PF__SPEECH_BLOCK;
            for (size_t j = 0; j < n; j++)
                for (size_t i = 0; i < in; i++)
                    for (size_t k = 0; k < K; k++) col[j * width + i * K + k] = x[((t0 + j) * S + k) * in + i];
            pf__cpu_matmul_rows(y + t0 * outc, col, &w, sp->conv_bias[l], n, NULL);
        }
        if (sp->conv_norm_weight[l] && sc->layer_norm_convs) /* LayerNorm over the channels of each frame */
            for (size_t t = 0; t < frames; t++)
                pf__speech_norm(y + t * outc, outc, 1, sp->conv_norm_weight[l], sp->conv_norm_bias[l], 0, 1, 1e-5);
        else if (sp->conv_norm_weight[l]) /* GroupNorm, a group per channel: over the frames of each channel */
            for (size_t o = 0; o < outc; o++)
                pf__speech_norm(y + o, frames, outc, sp->conv_norm_weight[l], sp->conv_norm_bias[l], o, 0, 1e-5);
        for (size_t i = 0; i < outc * frames; i++) y[i] = pf__speech_gelu(y[i]);
        x = y;
        y = y == work_a ? work_b : work_a;
        in = outc;
        length = frames;
    }
    /* features [frames][channels]: normed (in place: the buffer is ours), projected to hidden */
    size_t T = length, C = in, H = (size_t)c->hidden_size;
    float *features = (float *)x;
    if (sp->projection_norm_weight)
        for (size_t t = 0; t < T; t++)
            pf__speech_norm(features + t * C, C, 1, sp->projection_norm_weight, sp->projection_norm_bias, 0, 1, c->norm_eps);
    pf__weight projection = pf__speech_weight(sp->projection_weight, H, C);
    pf__cpu_matmul_rows(work_h, features, &projection, sp->projection_bias, T, NULL);
    /* + GELU(grouped conv over the frames, zero-padded by kernel / 2 on both sides; an even kernel
       makes one frame too many, the last, never computed), group by group into y */
    size_t K = (size_t)sc->pos_kernel, per_group = H / (size_t)sc->pos_groups, pad = K / 2, width = per_group * K;
    float *pos = y; /* [PF__SPEECH_BLOCK][per_group] */
    for (size_t g = 0; g < (size_t)sc->pos_groups; g++) {
        pf__weight w = pf__speech_weight(sp->pos_weight + g * per_group * width, per_group, width);
        for (size_t t0 = 0; t0 < T; t0 += PF__SPEECH_BLOCK) {
            size_t n = T - t0 < PF__SPEECH_BLOCK ? T - t0 : PF__SPEECH_BLOCK;
            for (size_t j = 0; j < n; j++)
                for (size_t k = 0; k < K; k++) {
                    size_t t = t0 + j + k; /* the input frame, plus pad */
                    const float *h = t >= pad && t - pad < T ? work_h + (t - pad) * H + g * per_group : NULL;
                    for (size_t i = 0; i < per_group; i++) col[j * width + i * K + k] = h ? h[i] : 0.0f;
                }
            pf__cpu_matmul_rows(pos, col, &w, sp->pos_bias + g * per_group, n, NULL);
            for (size_t j = 0; j < n; j++)
                for (size_t i = 0; i < per_group; i++) {
                    size_t at = (t0 + j) * H + g * per_group + i;
                    out[at] = work_h[at] + pf__speech_gelu(pos[j * per_group + i]);
                }
        }
    }
}

/* ---- Speech2Text's convolutional subsampler ---- */

/* Its weights, [out][in][kernel] and [out] per layer, as fp32 copies in the speech struct (the
   front end's home; its other arrays stay NULL). */
PF_PRIVATE pf_result pf__subsampler_load(pf_model *m, const char *prefix) {
    const struct pf__speech_config *sc = &m->config.speech_config;
    m->speech = (pf__speech *)calloc(1, sizeof *m->speech);
    if (!m->speech) return PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    pf_result r = PF_OK;
    size_t in = (size_t)sc->feature_width;
    for (int l = 0; l < sc->num_convs && !r; l++) {
        size_t out = (size_t)sc->conv_dim[l], weight[3] = {out, in, (size_t)sc->conv_kernel[l]}, bias[1] = {out};
        char name[256];
        pf__front_name(m, PF__SLOT_FRONT_CONV_WEIGHT, l, name, sizeof name);
        r = pf__speech_tensor(m, prefix, name, weight, 3, 1, &m->speech->conv_weight[l]);
        pf__front_name(m, PF__SLOT_FRONT_CONV_BIAS, l, name, sizeof name);
        if (!r) r = pf__speech_tensor(m, prefix, name, bias, 1, 1, &m->speech->conv_bias[l]);
        in = out / 2; /* the GLU's */
    }
    return r;
}

/* Encoder frames of n input frames: each convolution keeps (n - 1) / 2 + 1 (odd kernels, padded
   by half of one), as transformers' _get_feat_extract_output_lengths counts them. */
PF_PRIVATE int pf__subsampler_frames(const pf__config *c, int n) {
    for (int l = 0; l < c->speech_config.num_convs; l++) n = (n - 1) / 2 + 1;
    return n;
}

/* The widest activation (frames x channels) of the subsampler on `frames` input frames, and its
   widest im2col row (in * kernel). */
PF_PRIVATE void pf__subsampler_sizes(const pf__config *c, size_t frames, size_t *widest, size_t *col_width) {
    const struct pf__speech_config *sc = &c->speech_config;
    size_t in = (size_t)sc->feature_width;
    *widest = frames * in;
    *col_width = 0;
    for (int l = 0; l < sc->num_convs; l++) {
        frames = (frames - 1) / 2 + 1;
        if (frames * (size_t)sc->conv_dim[l] > *widest) *widest = frames * (size_t)sc->conv_dim[l];
        if (in * (size_t)sc->conv_kernel[l] > *col_width) *col_width = in * (size_t)sc->conv_kernel[l];
        in = (size_t)sc->conv_dim[l] / 2;
    }
}

/* One row's encoder input, out [keep][hidden]: its features [n][feature_width] followed by zeros
   up to `frames` (the batch's longest row: transformers runs the convolutions over the padded
   batch, so a shorter row's last frames see the padding's convolved biases), each convolution
   (stride 2, zero-padded by kernel / 2, im2col blocks through the CPU backend's matmul) then
   GLU(a, b) = a * sigmoid(b) over its channel halves; the first `keep` frames times embed_scale.
   work_a and work_b hold the widest activation, col PF__SPEECH_BLOCK im2col rows. */
PF_PRIVATE void pf__subsampler_frontend(const pf_model *m, const float *features, size_t n, size_t frames, size_t keep,
                                    float *out, float *work_a, float *work_b, float *col) {
    const pf__config *c = &m->config;
    const struct pf__speech_config *sc = &c->speech_config;
    size_t in = (size_t)sc->feature_width, length = frames;
    memcpy(work_a, features, n * in * sizeof(float));
    memset(work_a + n * in, 0, (frames - n) * in * sizeof(float));
    float *x = work_a, *y = work_b;
    for (int l = 0; l < sc->num_convs; l++) {
        size_t outc = (size_t)sc->conv_dim[l], half = outc / 2, K = (size_t)sc->conv_kernel[l], pad = K / 2;
        size_t produced = (length - 1) / 2 + 1, width = in * K;
        pf__weight w = pf__speech_weight(m->speech->conv_weight[l], outc, width);
        for (size_t t0 = 0; t0 < produced; t0 += PF__SPEECH_BLOCK) {
            size_t rows = produced - t0 < PF__SPEECH_BLOCK ? produced - t0 : PF__SPEECH_BLOCK;
            for (size_t j = 0; j < rows; j++)
                for (size_t k = 0; k < K; k++) {
                    size_t t = (t0 + j) * 2 + k; /* the input frame, plus pad */
                    const float *src = t >= pad && t - pad < length ? x + (t - pad) * in : NULL;
                    for (size_t i = 0; i < in; i++) col[j * width + i * K + k] = src ? src[i] : 0.0f;
                }
            pf__cpu_matmul_rows(y + t0 * outc, col, &w, m->speech->conv_bias[l], rows, NULL);
        }
        for (size_t t = 0; t < produced; t++) /* GLU, in place: row t's halves into its first half-width */
            for (size_t i = 0; i < half; i++) {
                float a = y[t * outc + i], b = y[t * outc + half + i];
                y[t * half + i] = a / (1.0f + expf(-b));
            }
        float *spent = x;
        x = y;
        y = spent;
        in = half;
        length = produced;
    }
    float scale = c->embed_scale_sqrt ? sqrtf((float)c->hidden_size) : 1.0f;
    for (size_t i = 0; i < keep * in; i++) out[i] = x[i] * scale;
}

/* Whisper's front end tensors (under the blocks' prefix), as fp32 copies the model owns. */
PF_PRIVATE pf_result pf__mel_load(pf_model *m, const char *prefix) {
    const pf__config *c = &m->config;
    m->speech = (pf__speech *)calloc(1, sizeof *m->speech);
    if (!m->speech) return PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    pf__speech *sp = m->speech;
    size_t d = (size_t)c->hidden_size, conv1[3] = {d, (size_t)c->num_mel_bins, 3}, conv2[3] = {d, d, 3}, bias[1] = {d};
    char name[256];
    pf__front_name(m, PF__SLOT_MEL_CONV1_WEIGHT, 0, name, sizeof name);
    pf_result r = pf__speech_tensor(m, prefix, name, conv1, 3, 1, &sp->mel_conv1_weight);
    pf__front_name(m, PF__SLOT_MEL_CONV1_BIAS, 0, name, sizeof name);
    if (!r) r = pf__speech_tensor(m, prefix, name, bias, 1, 1, &sp->mel_conv1_bias);
    pf__front_name(m, PF__SLOT_MEL_CONV2_WEIGHT, 0, name, sizeof name);
    if (!r) r = pf__speech_tensor(m, prefix, name, conv2, 3, 1, &sp->mel_conv2_weight);
    pf__front_name(m, PF__SLOT_MEL_CONV2_BIAS, 0, name, sizeof name);
    if (!r) r = pf__speech_tensor(m, prefix, name, bias, 1, 1, &sp->mel_conv2_bias);
    return r;
}

/* One row of log-mel features, mel [num_mel_bins][frames] (mel-major, as pf_audio_features gives
   them), through Whisper's front end into out [frames / 2][hidden]: GELU(conv1(x)), kernel 3,
   zero padding 1; then GELU(conv2(.)), kernel 3, stride 2, padding 1. The encoder's positions are
   added on the ranks. Each convolution gathers PF__SPEECH_BLOCK output frames' inputs (im2col, in
   the weight's [in][kernel] order) for the CPU backend's matmul. work holds frames x hidden, col
   PF__SPEECH_BLOCK x hidden x 3 (hidden >= num_mel_bins, or num_mel_bins x 3 where it is larger). */
PF_PRIVATE void pf__mel_frontend(const pf_model *m, const float *mel, int num_frames, float *out, float *work, float *col) {
    const pf__config *c = &m->config;
    const pf__speech *sp = m->speech;
    size_t d = (size_t)c->hidden_size, M = (size_t)c->num_mel_bins, F = (size_t)num_frames, half = (F + 1) / 2;
    pf__weight w1 = pf__speech_weight(sp->mel_conv1_weight, d, M * 3), w2 = pf__speech_weight(sp->mel_conv2_weight, d, d * 3);
    for (size_t t0 = 0; t0 < F; t0 += PF__SPEECH_BLOCK) { /* conv1: frame t reads frames t - 1 .. t + 1 */
        size_t n = F - t0 < PF__SPEECH_BLOCK ? F - t0 : PF__SPEECH_BLOCK;
        for (size_t j = 0; j < n; j++)
            for (size_t i = 0; i < M; i++)
                for (size_t k = 0; k < 3; k++) {
                    size_t t = t0 + j + k; /* the input frame, plus the padding of 1 */
                    col[j * M * 3 + i * 3 + k] = t >= 1 && t - 1 < F ? mel[i * F + t - 1] : 0.0f;
                }
        pf__cpu_matmul_rows(work + t0 * d, col, &w1, sp->mel_conv1_bias, n, NULL);
    }
    for (size_t i = 0; i < F * d; i++) work[i] = pf__speech_gelu(work[i]);
    for (size_t t0 = 0; t0 < half; t0 += PF__SPEECH_BLOCK) { /* conv2: frame t reads frames 2t - 1 .. 2t + 1 */
        size_t n = half - t0 < PF__SPEECH_BLOCK ? half - t0 : PF__SPEECH_BLOCK;
        for (size_t j = 0; j < n; j++)
            for (size_t k = 0; k < 3; k++) {
                size_t t = 2 * (t0 + j) + k; /* plus the padding of 1 */
                const float *h = t >= 1 && t - 1 < F ? work + (t - 1) * d : NULL;
                for (size_t i = 0; i < d; i++) col[j * d * 3 + i * 3 + k] = h ? h[i] : 0.0f;
            }
        pf__cpu_matmul_rows(out + t0 * d, col, &w2, sp->mel_conv2_bias, n, NULL);
    }
    for (size_t i = 0; i < half * d; i++) out[i] = pf__speech_gelu(out[i]);
}

