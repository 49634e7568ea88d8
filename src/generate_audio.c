#include "internal.h"
/* ---- speech encoder-decoders: logits and generation from audio features ---- */

static pf_result pf__forward_audio_locked(pf_model *m, const float *const *features, const int *num_frames,
                                          const int32_t *const *decoder_ids, const int *decoder_lengths, int batch,
                                          float *logits) {
    pf_result r = pf__ensure_group(m);
    if (r) return r;
    if (!decoder_ids || !decoder_lengths || !logits)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "pf_forward_audio needs decoder inputs, their lengths and logits");
    if (batch > m->group->max_batch) /* before the lengths are read: a batch past the caller's arrays */
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "batch %d exceeds max_batch %d", batch, m->group->max_batch);
    for (int b = 0; b < batch; b++)
        if (decoder_lengths[b] > m->config.max_positions)
            return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "row %d: %d decoder tokens exceed the decoder's %d positions", b,
                            decoder_lengths[b], m->config.max_positions);
    float *rows = NULL;
    int *src_pads = NULL, T = 0;
    if ((r = pf__audio_source_rows(m, "pf_forward_audio", features, num_frames, batch, &rows, &T, &src_pads))) return r;
    r = pf__encoder_pass(m, NULL, rows, src_pads, batch, T, NULL, NULL);
    if (!r) r = pf__decoder_logits(m, decoder_ids, decoder_lengths, batch, T, src_pads, logits);
    free(rows), free(src_pads);
    return r;
}

pf_result pf_forward_audio(pf_model *m, const float *const *features, const int *num_frames,
                           const int32_t *const *decoder_ids, const int *decoder_lengths, int batch, float *logits) {
    if (!m) return PF_ERROR_INVALID_ARGUMENT;
    pf_result r = pf__request_lock(m, "pf_forward_audio");
    if (r) return r;
    r = pf__forward_audio_locked(m, features, num_frames, decoder_ids, decoder_lengths, batch, logits);
    pf__request_unlock(m);
    return r;
}

/* Whisper's language detection, row by row: the decoder's logits after the start token alone, the
   likeliest of the language tokens (the lowest id on ties, as torch's argmax) into langs[b]. */
static pf_result pf__detect_languages(pf_model *m, const float *rows, const int *source_pads, int batch, int width,
                                      int32_t *langs) {
    const pf__config *c = &m->config;
    size_t vocab = (size_t)c->vocab_size;
    int32_t *starts = (int32_t *)malloc((size_t)batch * sizeof(int32_t));
    int *pads = (int *)calloc((size_t)batch, sizeof(int)); /* the decoder's: none */
    float *logits = (float *)malloc((size_t)batch * vocab * sizeof(float));
    pf_result r = starts && pads && logits ? PF_OK : PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    for (int b = 0; !r && b < batch; b++) starts[b] = c->decoder_start_token_id;
    if (!r) r = pf__encoder_pass(m, NULL, rows, source_pads, batch, width, NULL, NULL);
    if (!r) {
        pf__job job = {.step = {.ids = starts, .batch = batch, .seq_len = 1, .pad = pads, .cross_len = width,
                                .cross_pad = source_pads},
                       .logits = logits,
                       .all_positions = 1};
        r = pf__group_run(m->group, PF__JOB_FORWARD, &job);
    }
    for (int b = 0; !r && b < batch; b++) {
        const float *row = logits + (size_t)b * vocab;
        int best = -1;
        for (int i = 0; i < c->num_lang_ids; i++) /* ascending ids: a strict > keeps the first of equal ones */
            if (c->lang_ids[i] < c->vocab_size && (best < 0 || row[c->lang_ids[i]] > row[best])) best = c->lang_ids[i];
        if (best < 0) r = PF__FAIL(m, PF_ERROR_FORMAT, "%s: lang_to_id names no token of the vocabulary", m->dir);
        else langs[b] = best;
    }
    free(starts), free(pads), free(logits);
    return r;
}

static pf_result pf__generate_audio_locked(pf_model *m, const float *const *features, const int *num_frames, int batch,
                                           const pf_generate_options *o, pf_generation *result) {
    const pf__config *c = &m->config;
    pf_result r = pf__ensure_group(m);
    if (r) return r;
    float *rows = NULL;
    int T = 0, *pads = NULL;
    /* before the prompt's last id is read below (and the front end's work) */
    int longest = c->max_positions < m->group->cache_len ? c->max_positions : m->group->cache_len;
    if (o->decoder_prompt && (o->decoder_prompt_length < 1 || o->decoder_prompt_length >= longest))
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "decoder_prompt_length %d is not in 1..%d", o->decoder_prompt_length,
                        longest - 1);
    if ((r = pf__audio_source_rows(m, "pf_generate_audio", features, num_frames, batch, &rows, &T, &pads))) return r;
    /* the model's prompt, which names no language: each row's detected language token after its start token */
    int own = c->num_decoder_prompt_ids > 0 && o->decoder_prompt == c->decoder_prompt_ids &&
              o->decoder_prompt_length == c->num_decoder_prompt_ids;
    int detect = c->detect_language && own;
    /* timestamps: the model's prompt without its <|notimestamps|>, as generate() drops it */
    pf_generate_options stamped = *o;
    int ends_untimed = c->timestamp_begin > 0 && o->decoder_prompt && o->decoder_prompt_length > 0 &&
                       o->decoder_prompt[o->decoder_prompt_length - 1] == c->timestamp_begin - 1;
    if (o->return_timestamps && ends_untimed) {
        if (own) stamped.decoder_prompt_length--, o = &stamped;
        else r = PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "pf_generate_audio: return_timestamps with a decoder_prompt "
                          "that ends with <|notimestamps|> (leave it out)");
    }
    int32_t *langs = NULL, *prompts = NULL;
    const int32_t **rows_prompts = NULL;
    int *lengths = NULL, n = o->decoder_prompt_length + 1;
    if (detect && !r) {
        langs = (int32_t *)malloc((size_t)batch * sizeof(int32_t));
        prompts = (int32_t *)malloc((size_t)batch * n * sizeof(int32_t));
        rows_prompts = (const int32_t **)malloc((size_t)batch * sizeof *rows_prompts);
        lengths = (int *)malloc((size_t)batch * sizeof(int));
        if (!langs || !prompts || !rows_prompts || !lengths) r = PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
        if (!r) r = pf__detect_languages(m, rows, pads, batch, T, langs);
        for (int b = 0; !r && b < batch; b++) {
            int32_t *p = prompts + (size_t)b * n;
            p[0] = c->decoder_prompt_ids[0];
            p[1] = langs[b];
            memcpy(p + 2, c->decoder_prompt_ids + 1, (size_t)(n - 2) * sizeof(int32_t));
            rows_prompts[b] = p;
            lengths[b] = n;
        }
    }
    if (!r) r = pf__generate_locked(m, rows_prompts, lengths, batch, o, result, rows, pads, T);
    /* with timestamps transformers returns the tokens without the eos that ended them */
    const int32_t *eos = o->num_eos_token_ids ? o->eos_token_ids : c->eos_ids;
    int num_eos = o->num_eos_token_ids ? o->num_eos_token_ids : c->num_eos_ids;
    for (int i = 0; !r && o->return_timestamps && num_eos > 0 && i < result->num_sequences; i++)
        if (result->lengths[i] > 0 && result->tokens[i][result->lengths[i] - 1] == eos[0]) result->lengths[i]--;
    free(rows), free(pads), free(langs), free(prompts), free(rows_prompts), free(lengths);
    return r;
}

pf_result pf_generate_audio(pf_model *m, const float *const *features, const int *num_frames, int batch,
                            const pf_generate_options *options, pf_generation *result) {
    if (!m) return PF_ERROR_INVALID_ARGUMENT;
    if (result) memset(result, 0, sizeof *result);
    if (!result) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "pf_generate_audio needs a result");
    pf_generate_options o = options ? *options : m->generate_defaults;
    pf_result r = pf__request_lock(m, "pf_generate_audio");
    if (r) return r;
    r = pf__generate_audio_locked(m, features, num_frames, batch, &o, result);
    pf__request_unlock(m);
    return r;
}
