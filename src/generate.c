#include "internal.h"
/* =============================================================================================== */
/* generation                                                                                      */
/* =============================================================================================== */

/* splitmix64: a small, seedable generator whose draws are made on the caller's thread only, so
   every rank sees the same choices by construction. */
static uint64_t pf__random(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double pf__random_unit(uint64_t *state) { return (double)(pf__random(state) >> 11) * (1.0 / 9007199254740992.0); }

static int pf__is_eos(const pf_generate_options *o, const int32_t *eos, int num_eos, int32_t token) {
    if (o->ignore_eos) return 0;
    for (int i = 0; i < num_eos; i++)
        if (eos[i] == token) return 1;
    return 0;
}

/* Whether the row's tokens end with seq's first `length` ids. */
static int pf__ends_with(const pf__row *row, const int32_t *seq, int length, int from) {
    if (row->length - from < length) return 0;
    return memcmp(row->tokens + row->length - length, seq, (size_t)length * sizeof(int32_t)) == 0;
}

/* When the length processors act: eos banned below the minimum length; the begin-suppressed
   tokens at the first new token. */
static int pf__min_length_active(const pf_generate_options *o, const pf__row *row, int min_length) {
    return row->length < min_length || row->length - row->pad - row->prompt < o->min_new_tokens;
}

static int pf__at_first_new_token(const pf__row *row) { return row->length == row->pad + row->prompt; }

/* transformers' logits processors, in its order, on one row's scores. */
static void pf__process_scores(const pf_generate_options *o, const pf__row *row, float *scores, int vocab,
                               const int32_t *eos, int num_eos, int min_length, unsigned char *seen) {
    for (int i = 0; i < o->num_logit_bias; i++) scores[o->logit_bias[i].token] += o->logit_bias[i].bias;
    /* repetition penalty over the row's tokens, left pads excepted: divide positive scores,
       multiply negative ones, once per distinct token */
    if (o->repetition_penalty != 1.0f) {
        memset(seen, 0, (size_t)vocab);
        for (int i = row->pad; i < row->length; i++) {
            int32_t t = row->tokens[i];
            if (t < 0 || t >= vocab || seen[t]) continue;
            seen[t] = 1;
            scores[t] = scores[t] < 0 ? scores[t] * o->repetition_penalty : scores[t] / o->repetition_penalty;
        }
    }
    /* presence and frequency penalties over the row's new tokens */
    if (o->presence_penalty != 0 || o->frequency_penalty != 0) {
        memset(seen, 0, (size_t)vocab);
        for (int i = row->pad + row->prompt; i < row->length; i++) {
            int32_t t = row->tokens[i];
            if (t < 0 || t >= vocab) continue;
            scores[t] -= o->frequency_penalty + (seen[t] ? 0 : o->presence_penalty);
            seen[t] = 1;
        }
    }
    /* no repeated n-gram: ban the token that would complete an n-gram already present (over the
       whole row, pads included, as transformers does) */
    int n = o->no_repeat_ngram_size;
    if (n > 0 && row->length + 1 >= n) {
        const int32_t *tail = row->tokens + row->length - (n - 1);
        for (int start = 0; start + n <= row->length; start++)
            if (memcmp(row->tokens + start, tail, (size_t)(n - 1) * sizeof(int32_t)) == 0) {
                int32_t t = row->tokens[start + n - 1];
                if (t >= 0 && t < vocab) scores[t] = -INFINITY;
            }
    }
    /* bad words: a single id is always banned (unless it is an eos id); a longer sequence's last
       id is banned when the row ends with the rest */
    for (int i = 0; i < o->num_bad_words; i++) {
        const pf_token_sequence *w = &o->bad_words[i];
        int32_t last = w->ids[w->length - 1];
        if (w->length == 1 && pf__is_eos(o, eos, num_eos, last)) continue;
        if (w->length == 1 || pf__ends_with(row, w->ids, w->length - 1, 0)) scores[last] = -INFINITY;
    }
    /* minimum length: no eos before it */
    if (pf__min_length_active(o, row, min_length))
        for (int i = 0; i < num_eos; i++) scores[eos[i]] = -INFINITY;
    /* suppressed tokens, and at the first new token the begin-suppressed ones */
    for (int i = 0; i < o->num_suppress_tokens; i++) scores[o->suppress_tokens[i]] = -INFINITY;
    if (pf__at_first_new_token(row))
        for (int i = 0; i < o->num_begin_suppress_tokens; i++) scores[o->begin_suppress_tokens[i]] = -INFINITY;
}

/* forced_bos_token_id at the first generated position of a one-token prompt (an encoder-decoder's
   start token), forced_eos_token_id at the last one max_length allows: every other token -inf,
   the forced one 0, after the other processors, as transformers orders them. */
static int32_t pf__forced_token(const pf_generate_options *o, const pf__row *row, int vocab, long long max_length) {
    int32_t forced = row->length == 1 ? o->forced_bos_token_id : row->length == max_length - 1 ? o->forced_eos_token_id : -1;
    return forced >= 0 && forced < vocab ? forced : -1;
}

static void pf__force_tokens(const pf_generate_options *o, const pf__row *row, float *scores, int vocab, long long max_length) {
    int32_t forced = pf__forced_token(o, row, vocab, max_length);
    if (forced < 0) return;
    for (int i = 0; i < vocab; i++) scores[i] = -INFINITY;
    scores[forced] = 0.0f;
}

/* Whisper's timestamp rules on one row's processed scores, as transformers'
   WhisperTimeStampLogitsProcessor applies them after the other processors (begin: the first
   timestamp token, no_timestamps_token_id + 1; the row's generated tokens are those after its
   prompt): <|notimestamps|> never; after a timestamp that follows another (or starts the
   generation) no timestamp, after one that follows text no text token below eos; no timestamp
   below the last one (below the last one + 1 unless it closes a pair); at the first generated
   token timestamps only, up to max_initial_timestamp_index; then where the timestamps'
   probabilities (log-softmax, summed by logsumexp) beat every other token's, timestamps only. */
static void pf__timestamp_rules(const pf__config *c, const pf__row *row, float *scores, int vocab, int32_t eos) {
    int begin = c->timestamp_begin, from = row->pad + row->prompt, n = row->length - from;
    const int32_t *seq = row->tokens + from;
    if (begin <= 0 || begin > vocab) return;
    scores[begin - 1] = -INFINITY;
    int last = n >= 1 && seq[n - 1] >= begin, penultimate = n < 2 || seq[n - 2] >= begin;
    if (last && penultimate)
        for (int i = begin; i < vocab; i++) scores[i] = -INFINITY;
    else if (last)
        for (int i = 0; i < eos && i < vocab; i++) scores[i] = -INFINITY;
    int floor_id = begin;
    for (int i = n - 1; i >= 0; i--)
        if (seq[i] >= begin) {
            floor_id = last && !penultimate ? seq[i] : seq[i] + 1; /* no <|0.00|> twice */
            break;
        }
    for (int i = begin; i < floor_id && i < vocab; i++) scores[i] = -INFINITY;
    if (n == 0) {
        for (int i = 0; i < begin; i++) scores[i] = -INFINITY;
        if (c->max_initial_timestamp > 0)
            for (int i = begin + c->max_initial_timestamp; i < vocab; i++) scores[i] = -INFINITY;
    }
    /* log-softmax in float as torch computes it, then the two sides compared */
    float max = -INFINITY;
    for (int i = 0; i < vocab; i++)
        if (scores[i] > max) max = scores[i];
    if (max == -INFINITY) return;
    double sum = 0;
    for (int i = 0; i < vocab; i++) sum += exp((double)(scores[i] - max));
    float lse = max + (float)log(sum), stamp_max = -INFINITY, text_max = -INFINITY;
    for (int i = 0; i < vocab; i++) {
        float lp = scores[i] - lse;
        if (i < begin) text_max = lp > text_max ? lp : text_max;
        else stamp_max = lp > stamp_max ? lp : stamp_max;
    }
    if (stamp_max == -INFINITY) return;
    double stamp_sum = 0;
    for (int i = begin; i < vocab; i++) stamp_sum += exp((double)(scores[i] - lse - stamp_max));
    float stamp_logprob = stamp_max + (float)log(stamp_sum);
    if (stamp_logprob > text_max)
        for (int i = 0; i < begin; i++) scores[i] = -INFINITY;
}

static int pf__candidate_cmp(const void *a, const void *b);

static int pf__candidate_token_cmp(const void *a, const void *b) {
    return ((const pf__candidate *)a)->token - ((const pf__candidate *)b)->token;
}

/* top_p over the kept candidates (best first): the sum in id order first, then from the least
   likely up, the dropped to -inf while the dropped mass stays <= 1 - top_p. */
static void pf__top_p_candidates(const pf_generate_options *o, pf__candidate *kept, int n) {
    float max = kept[0].score;
    double total = 0, dropped = 0;
    qsort(kept, (size_t)n, sizeof *kept, pf__candidate_token_cmp);
    for (int j = 0; j < n; j++) total += kept[j].score == -INFINITY ? 0 : exp((double)kept[j].score - max);
    qsort(kept, (size_t)n, sizeof *kept, pf__candidate_cmp);
    for (int j = n - 1; j > 0; j--) {
        if (kept[j].score == -INFINITY) continue;
        dropped += exp((double)kept[j].score - max) / total;
        if (dropped > 1.0 - o->top_p) break;
        kept[j].score = -INFINITY;
    }
}

/* Top-k (the k-th's ties kept), top-p, min-p and the draw from the softmax over list [n], sorted best
   first (k <= n): pf__sample's over a whole row, pf__sample_candidates' over the ranks' best. The
   tokens left out only ever add exact zeros to the sums, so both draw the same. */
static int32_t pf__sample_sorted(const pf_generate_options *o, pf__candidate *list, int n, int k, uint64_t *rng) {
    float kth = list[k - 1].score;
    int kept = k;
    while (kept < n && list[kept].score >= kth) kept++;
    if (o->top_p < 1.0f) pf__top_p_candidates(o, list, kept);
    if (o->min_p > 0) { /* p < min_p * p_max, that is score < max + log(min_p); the likeliest stays */
        float floor_score = list[0].score + logf(o->min_p);
        for (int j = 1; j < kept; j++)
            if (list[j].score < floor_score) list[j].score = -INFINITY;
    }
    qsort(list, (size_t)kept, sizeof *list, pf__candidate_token_cmp); /* the draw runs in id order */
    float max = -INFINITY;
    for (int j = 0; j < kept; j++)
        if (list[j].score > max) max = list[j].score;
    double total = 0;
    for (int j = 0; j < kept; j++) total += exp((double)list[j].score - max);
    double u = pf__random_unit(rng) * total, sum = 0;
    int32_t last = 0;
    for (int j = 0; j < kept; j++) {
        if (list[j].score == -INFINITY) continue;
        sum += exp((double)list[j].score - max);
        last = list[j].token;
        if (sum > u) return list[j].token;
    }
    return last;
}

/* Sampling warpers (temperature, top-k, top-p, min-p) as transformers applies them, then a draw from
   the softmax. sorted: scratch of vocab entries. */
static int32_t pf__sample(const pf_generate_options *o, float *scores, int vocab, uint64_t *rng, pf__candidate *sorted) {
    if (o->temperature != 1.0f)
        for (int i = 0; i < vocab; i++) scores[i] /= o->temperature;
    int k = o->top_k > 0 && o->top_k < vocab ? o->top_k : vocab;
    if (k < vocab || o->top_p < 1.0f || o->min_p > 0) {
        for (int i = 0; i < vocab; i++) {
            sorted[i].score = scores[i];
            sorted[i].beam = 0;
            sorted[i].token = i;
        }
        qsort(sorted, (size_t)vocab, sizeof *sorted, pf__candidate_cmp); /* best first */
        return pf__sample_sorted(o, sorted, vocab, k, rng);
    }
    float max = -INFINITY; /* neither warper: the draw over the row as it is */
    for (int i = 0; i < vocab; i++)
        if (scores[i] > max) max = scores[i];
    double total = 0;
    for (int i = 0; i < vocab; i++) total += exp((double)scores[i] - max);
    double u = pf__random_unit(rng) * total, sum = 0;
    int32_t last = 0;
    for (int i = 0; i < vocab; i++) {
        if (scores[i] == -INFINITY) continue;
        sum += exp((double)scores[i] - max);
        last = i;
        if (sum > u) return i;
    }
    return last;
}

static int pf__argmax(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

/* log_softmax in fp32, as transformers computes beam scores. */
static void pf__log_softmax(float *x, int n) {
    float max = -INFINITY;
    for (int i = 0; i < n; i++)
        if (x[i] > max) max = x[i];
    double sum = 0;
    for (int i = 0; i < n; i++) sum += exp((double)x[i] - max);
    float log_sum = (float)log(sum);
    for (int i = 0; i < n; i++) x[i] = x[i] - max - log_sum;
}

static int pf__candidate_cmp(const void *a, const void *b) {
    const pf__candidate *x = (const pf__candidate *)a, *y = (const pf__candidate *)b;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    return x->beam != y->beam ? x->beam - y->beam : x->token - y->token;
}

static int pf__hypothesis_cmp(const void *a, const void *b) {
    const pf__hypothesis *x = (const pf__hypothesis *)a, *y = (const pf__hypothesis *)b;
    return x->score > y->score ? -1 : x->score < y->score;
}

#define PF__STREAM_WINDOW 8 /* tokens a window grows to before it moves up */

/* Decodes new tokens [from, n) of a row into *buffer (grown as needed); the text's length, or
   (size_t)-1 without memory. */
static size_t pf__stream_decode(pf_model *m, const int32_t *fresh, int from, int n, char **buffer, size_t *buffer_cap) {
    size_t len = 0;
    pf_detokenize(m->tokenizer, fresh + from, (size_t)(n - from), *buffer, *buffer_cap, &len);
    if (len + 1 > *buffer_cap) {
        char *grown = (char *)realloc(*buffer, 2 * len + 64);
        if (!grown) return (size_t)-1;
        *buffer = grown;
        *buffer_cap = 2 * len + 64;
        pf_detokenize(m->tokenizer, fresh + from, (size_t)(n - from), *buffer, *buffer_cap, &len);
    }
    return len;
}

/* Emits the text a row's new tokens complete since the last call: whole UTF-8 characters only. */
PF_PRIVATE int pf__stream(pf_model *m, const pf_generate_options *o, int row_index, const pf__row *row,
                      pf__stream_state *state, char **buffer, size_t *buffer_cap) {
    int32_t token = row->tokens[row->length - 1];
    const int32_t *fresh = row->tokens + row->pad + row->prompt;
    int n = row->length - row->pad - row->prompt;
    if (!m->tokenizer) return o->stream(o->stream_user, row_index, token, NULL, 0);
    size_t len = pf__stream_decode(m, fresh, state->window, n, buffer, buffer_cap);
    if (len == (size_t)-1) return o->stream(o->stream_user, row_index, token, NULL, 0);
    size_t end = len; /* hold back an incomplete trailing character */
    for (size_t back = 1; back <= 3 && back <= len; back++) {
        unsigned char c = (unsigned char)(*buffer)[len - back];
        if ((c & 0xc0) == 0x80) continue;
        size_t need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
        if (need > back) end = len - back;
        break;
    }
    size_t from = state->emitted < end ? state->emitted : end;
    state->emitted = end > state->emitted ? end : state->emitted;
    int stop = o->stream(o->stream_user, row_index, token, *buffer + from, end - from);
    if (end == len && n - state->window > PF__STREAM_WINDOW) { /* all of it is out: move the window up */
        size_t kept = pf__stream_decode(m, fresh, n - 1, n, buffer, buffer_cap);
        if (kept != (size_t)-1) state->window = n - 1, state->emitted = kept;
    }
    return stop;
}

/* The most entries an option's list takes (eos ids, suppressed ids, bad words, stop sequences;
   as many as generation_config.json's lists may hold): a bound to check a count against before
   its array is read. */
#define PF__MAX_OPTION_LIST 1000000
#define PF__MAX_STOP_STRING 4096 /* bytes: a stop string's text */

/* Checks options against each other and the model, as transformers does. */
PF_PRIVATE pf_result pf__check_generate_options(pf_model *m, const pf_generate_options *o, int batch) {
    const char *bad = NULL;
    if (o->max_new_tokens < 0 || o->max_length < 0 || o->min_length < 0 || o->min_new_tokens < 0) bad = "negative lengths";
    else if (o->num_beams < 1) bad = "num_beams must be at least 1";
    else if (o->num_return_sequences < 1) bad = "num_return_sequences must be at least 1";
    else if (!o->do_sample && o->num_beams == 1 && o->num_return_sequences > 1)
        bad = "greedy search returns one sequence per prompt: num_return_sequences needs sampling or beams";
    else if (o->num_beams > 1 && o->num_return_sequences > o->num_beams) bad = "num_return_sequences is larger than num_beams";
    else if (o->do_sample && !(o->temperature > 0)) bad = "temperature must be positive when sampling";
    else if (!(o->top_p > 0 && o->top_p <= 1)) bad = "top_p must be in (0, 1]";
    else if (o->top_k < 0) bad = "top_k must not be negative";
    else if (!(o->repetition_penalty > 0)) bad = "repetition_penalty must be positive";
    else if (!(o->min_p >= 0 && o->min_p <= 1)) bad = "min_p must be in [0, 1]";
    else if (!isfinite(o->presence_penalty) || !isfinite(o->frequency_penalty)) bad = "presence_penalty and frequency_penalty must be finite";
    else if (o->num_logit_bias < 0 || (o->num_logit_bias > 0 && !o->logit_bias)) bad = "logit_bias and its count disagree";
    else if (o->num_stop_strings < 0 || (o->num_stop_strings > 0 && !o->stop_strings)) bad = "stop_strings and their count disagree";
    else if (o->num_stop_strings > 0 && !m->tokenizer) bad = "stop_strings need the model's tokenizer";
    else if (o->num_stop_strings > 0 && o->num_beams > 1) bad = "stop_strings need greedy search or sampling, not beam search";
    else if (!isfinite(o->length_penalty)) bad = "length_penalty must be finite";
    else if (o->no_repeat_ngram_size < 0) bad = "no_repeat_ngram_size must not be negative";
    else if (o->encoder_no_repeat_ngram_size < 0) bad = "encoder_no_repeat_ngram_size must not be negative";
    else if (o->encoder_no_repeat_ngram_size > 0 && pf__archs[m->config.arch].kind != PF__KIND_SEQ2SEQ)
        bad = "encoder_no_repeat_ngram_size needs an encoder-decoder";
    else if (o->early_stopping < PF_EARLY_STOPPING_HEURISTIC || o->early_stopping > PF_EARLY_STOPPING_NEVER) bad = "unknown early_stopping";
    else if (o->stream && o->num_beams > 1) bad = "streaming needs greedy search or sampling, not beam search";
    else if (o->logprobs && o->num_beams > 1) bad = "logprobs need greedy search or sampling, not beam search";
    else if (o->top_logprobs < 0 || o->top_logprobs > PF_MAX_TOP_LOGPROBS) bad = "top_logprobs must be in 0..PF_MAX_TOP_LOGPROBS";
    else if (o->top_logprobs > 0 && !o->logprobs) bad = "top_logprobs needs logprobs";
    else if (o->json_constraint && o->num_beams > 1) bad = "json_constraint needs greedy search or sampling, not beam search";
    else if (o->json_constraint && pf__json_constraint_vocab(o->json_constraint) != m->config.vocab_size)
        bad = "json_constraint was made for a model of another vocabulary";
    else if (o->return_timestamps && (m->config.timestamp_begin <= 0 || m->config.timestamp_begin >= m->config.vocab_size))
        bad = "return_timestamps needs a Whisper model with timestamp tokens (the ids after its generation config's "
              "no_timestamps_token_id)";
    else if (o->return_timestamps && (o->num_beams > 1 || o->do_sample))
        bad = "return_timestamps is supported with greedy search only (not beam search or sampling)";
    else if (o->num_eos_token_ids < 0 || (o->num_eos_token_ids > 0 && !o->eos_token_ids)) bad = "eos_token_ids and their count disagree";
    else if (o->num_bad_words < 0 || (o->num_bad_words > 0 && !o->bad_words)) bad = "bad_words and their count disagree";
    else if (o->num_stop_sequences < 0 || (o->num_stop_sequences > 0 && !o->stop_sequences)) bad = "stop_sequences and their count disagree";
    else if (o->num_suppress_tokens < 0 || (o->num_suppress_tokens > 0 && !o->suppress_tokens) ||
             o->num_begin_suppress_tokens < 0 || (o->num_begin_suppress_tokens > 0 && !o->begin_suppress_tokens))
        bad = "suppress_tokens (or begin_suppress_tokens) and their count disagree";
    if (bad) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "generate options: %s", bad);
    if (o->global_attention && !(pf__archs[m->config.arch].kind == PF__KIND_SEQ2SEQ && m->config.local_attention))
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "generate options: global_attention needs an encoder-decoder whose encoder "
                        "has Longformer's global attention (LED); model_type \"%s\" has none%s", m->config.model_type,
                        m->config.sparse_block > 0 ? " (BigBird's global tokens are its first and last blocks: fixed, not "
                                                     "chosen)" : "");
    if ((m->config.xlnet || m->config.transfo_xl) && (batch != 1 || o->num_beams > 1 || o->num_return_sequences > 1))
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "generate options: %s generates one prompt, one sequence at a time "
                        "(%d prompts, num_beams %d, num_return_sequences %d): its memory is one row's",
                        m->config.xlnet ? "XLNet" : "Transformer-XL", batch, o->num_beams, o->num_return_sequences);
    if (m->config.reformer && (batch != 1 || o->num_beams > 1 || o->num_return_sequences > 1))
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "generate options: Reformer generates one prompt, one sequence at a time "
                        "(%d prompts, num_beams %d, num_return_sequences %d): each step runs the row's every position "
                        "again", batch, o->num_beams, o->num_return_sequences);
    int vocab = m->config.vocab_size;
    /* Every count against its limit before its array is read: a count past the caller's array
       would read beyond it. */
    const struct { const char *name; int count; } lists[] = {
        {"num_eos_token_ids", o->num_eos_token_ids}, {"num_suppress_tokens", o->num_suppress_tokens},
        {"num_begin_suppress_tokens", o->num_begin_suppress_tokens}, {"num_bad_words", o->num_bad_words},
        {"num_stop_sequences", o->num_stop_sequences}, {"num_logit_bias", o->num_logit_bias},
        {"num_stop_strings", o->num_stop_strings}};
    for (size_t k = 0; k < sizeof lists / sizeof lists[0]; k++)
        if (lists[k].count > PF__MAX_OPTION_LIST)
            return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "generate options: %s %d is above %d", lists[k].name,
                            lists[k].count, PF__MAX_OPTION_LIST);
    for (int k = 0; k < 2; k++) {
        const int32_t *list = k ? o->begin_suppress_tokens : o->suppress_tokens;
        for (int i = 0; i < (k ? o->num_begin_suppress_tokens : o->num_suppress_tokens); i++)
            if (list[i] < 0 || list[i] >= vocab)
                return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "suppressed token id %d is outside the vocabulary", (int)list[i]);
    }
    for (int i = 0; i < o->num_logit_bias; i++)
        if (o->logit_bias[i].token < 0 || o->logit_bias[i].token >= vocab || isnan(o->logit_bias[i].bias) ||
            o->logit_bias[i].bias == INFINITY)
            return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "logit_bias %d: token %d outside the vocabulary, or a bias that is NaN or +inf",
                            i, (int)o->logit_bias[i].token);
    for (int i = 0; i < o->num_stop_strings; i++) {
        size_t length = o->stop_strings[i] ? strnlen(o->stop_strings[i], PF__MAX_STOP_STRING + 1) : 0;
        if (length < 1 || length > PF__MAX_STOP_STRING)
            return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "stop string %d is NULL, empty or longer than %d bytes", i,
                            PF__MAX_STOP_STRING);
    }
    for (int i = 0; i < o->num_eos_token_ids; i++)
        if (o->eos_token_ids[i] < 0 || o->eos_token_ids[i] >= vocab)
            return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "eos token id %d is outside the vocabulary", (int)o->eos_token_ids[i]);
    if (o->pad_token_id < -1 || o->pad_token_id >= vocab)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "pad token id %d is outside the vocabulary", o->pad_token_id);
    for (int k = 0; k < 2; k++) {
        const pf_token_sequence *list = k ? o->stop_sequences : o->bad_words;
        int count = k ? o->num_stop_sequences : o->num_bad_words;
        for (int i = 0; i < count; i++) {
            if (list[i].length < 1 || !list[i].ids)
                return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "%s %d is empty", k ? "stop sequence" : "bad word", i);
            /* no row holds more tokens than the cache: a longer sequence could never match */
            if (list[i].length > m->group->cache_len)
                return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "%s %d: %d ids, more than max_sequence_length %d",
                                k ? "stop sequence" : "bad word", i, list[i].length, m->group->cache_len);
            pf_result r = pf__check_ids(m, list[i].ids, (size_t)list[i].length);
            if (r) return r;
        }
    }
    /* in long long: an int product wraps for large counts and would pass the check */
    long long rows = (long long)batch * (o->num_beams > 1 ? o->num_beams : o->num_return_sequences);
    if (rows > m->group->max_batch)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT,
                        "%d prompts x %d beams or samples need max_batch %lld in pf_parallelize (it is %d)", batch,
                        o->num_beams > 1 ? o->num_beams : o->num_return_sequences, rows, m->group->max_batch);
    return PF_OK;
}

/* Runs one forward step for all rows: the prefill (step == NULL rows' whole padded prompts) or
   one new token per row. Leaves each row's last-position logits in m->logits. */
#ifdef PF_TESTING
int pf_testing_device_choices; /* test hook: tokens the devices chose (pf__combine_choices) */
int pf_testing_device_samples; /* test hook: tokens drawn from the devices' top-k candidates */
#endif

/* Each row's greedy token from the ranks' candidates (g->choices) of the last forward: the
   larger logit, the lower id on ties. The candidates are each slice's first maximum, so this is
   the first maximum of the whole row, as pf__argmax finds it on the host. */
static void pf__combine_choices(const pf__group *g, int rows, int32_t *tokens) {
    for (int b = 0; b < rows; b++) {
        pf__choice best = {-INFINITY, -1};
        for (int k = 0; k < g->world_ranks; k++) {
            if (!g->lm_rows[k]) continue; /* no vocabulary: wrote none */
            pf__choice c = g->choices[(size_t)k * g->max_batch + b];
            if (c.index >= 0 &&
                (best.index < 0 || c.value > best.value || (c.value == best.value && c.index < best.index)))
                best = c;
        }
        tokens[b] = best.index >= 0 ? best.index : 0; /* the slice holding id 0 always has a candidate */
    }
#ifdef PF_TESTING
    pf_testing_device_choices += rows;
#endif
}

/* A generation step's forward, its logits into m->logits; with a choice, what the devices choose
   (greedy tokens, combined here from the ranks', or top-k candidates) lands there instead. */
PF_PRIVATE pf_result pf__forward_choosing(pf_model *m, pf__job *job, const pf__device_choice *choice) {
    job->logits = m->logits;
    if (choice) {
        job->tokens = choice->tokens;
        job->candidates = choice->candidates;
        job->candidates_per_row = choice->per_row;
    }
    pf_result r = pf__forward_in_chunks(m, job);
    if (!r && job->tokens) pf__combine_choices(m->group, pf__job_output_rows(m->group, job), job->tokens);
    return r;
}

/* The tokens a decode step runs in rows of `length`: the last (the KV cache holds the others), or
   XLNet's as its generate() feeds them: with memory the last two (transformers' offset 2: the
   memory holds the others), without it every token again; Reformer's every token again. */
static int pf__decode_width(const pf__config *c, int length) {
    if (c->reformer) return length; /* no cache: every position again (src/reformer.c) */
    if (!c->xlnet) return 1;
    return !c->xlnet_mems ? length : length < 2 ? length : 2;
}

/* cross_pads, cross_len: an encoder-decoder's source pads of each row and the sources' width
   (the cross caches hold the rows' encoder outputs); NULL, 0 for a decoder. choice: what the
   devices choose instead of the logits landing in m->logits, or NULL. */
static pf_result pf__generate_step(pf_model *m, pf__row *rows, int num_rows, int prefill, int32_t *ids, int *pads,
                                   const int *cross_pads, int cross_len, const pf__device_choice *choice) {
    int width = prefill ? rows[0].length : pf__decode_width(&m->config, rows[0].length);
    for (int b = 0; b < num_rows; b++) {
        pads[b] = rows[b].pad;
        memcpy(ids + (size_t)b * width, rows[b].tokens + rows[b].length - width, (size_t)width * sizeof(int32_t));
    }
    pf__job job = {.step = {.ids = ids,
                            .batch = num_rows,
                            .seq_len = width,
                            .past = rows[0].length - width,
                            .pad = pads,
                            .inv_freq = pf__rope_frequencies(m, rows[0].length),
                            .cross_pad = cross_pads,
                            .cross_len = cross_len}};
    return pf__forward_choosing(m, &job, choice);
}

/* Row i of the caches becomes old row src[i]: the first `length` positions of the decoder's, and
   the first cross_len of the cross caches when cross_len > 0. */
static pf_result pf__reorder_rows(pf_model *m, const int *src, int num_rows, int length, int cross_len) {
    pf__job job = {.step = {.batch = num_rows, .past = length, .cross_len = cross_len}, .reorder_cross = cross_len > 0};
    int *moves = (int *)malloc(2 * (size_t)num_rows * sizeof(int)); /* the rows that change: dst, then src */
    if (!moves) return PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; i < num_rows; i++)
        if (src[i] != i) moves[job.reorder_count] = i, moves[num_rows + job.reorder_count++] = src[i];
    memmove(moves + job.reorder_count, moves + num_rows, (size_t)job.reorder_count * sizeof(int));
    job.reorder_dst = moves;
    job.reorder_src = moves + job.reorder_count;
    pf_result r = job.reorder_count ? pf__group_run(m->group, PF__JOB_REORDER, &job) : PF_OK;
    free(moves);
    return r;
}

#ifdef PF_TESTING
/* Test builds poison the logits before each generation and check every row it scores: a row no
   forward wrote (read uninitialised in a release build, where only valgrind would see it) fails
   the request instead. */
static void pf__testing_poison_logits(pf_model *m) {
    size_t count = (size_t)m->group->max_batch * m->config.vocab_size;
    for (size_t i = 0; i < count; i++) m->logits[i] = NAN;
}

static int pf__testing_unwritten(const float *row, int vocab) {
    for (int i = 0; i < vocab; i++)
        if (isnan(row[i])) return 1;
    return 0;
}
#endif

/* The generation itself, with the model's request lock held. */
/* Whether a row whose tokens are tokens[0..length) followed by next ends at next: an eos id, or
   the last token of a stop sequence. The one test of where a row ends, for every search. */
static int pf__ends_here(const pf_generate_options *o, const int32_t *eos, int num_eos, const int32_t *tokens,
                         int length, int32_t next) {
    if (pf__is_eos(o, eos, num_eos, next)) return 1;
    for (int k = 0; k < o->num_stop_sequences; k++) {
        const pf_token_sequence *q = &o->stop_sequences[k];
        int before = q->length - 1; /* the ids before its last */
        if (q->ids[before] == next && length >= before &&
            !memcmp(tokens + length - before, q->ids, (size_t)before * sizeof(int32_t)))
            return 1;
    }
    return 0;
}

/* Whether a row's next token is the plain arg-max of its logits: greedy, and none of the logits
   processors pf__generation_sample_step applies (pf__process_scores, pf__ban_source_ngrams,
   pf__timestamp_rules, pf__force_tokens) changes a score at this step. Only then may the devices
   choose it without the logits coming to the host; a processor added there must be ruled out
   here too (a test build checks every device choice against pf__argmax, not the processors). */
static int pf__processors_idle(const pf__generation_state *st, const pf__row *row);

static int pf__choice_is_argmax(const pf__generation_state *st, const pf__row *row) {
    return !st->o->do_sample && st->beams == 1 && pf__processors_idle(st, row);
}

/* The same for sampling from the devices' top-k candidates (pf__sample_candidates): no processor
   acts, and top_k leaves at most per_row - 1 tokens (top_p and temperature are the host's). */
static int pf__choice_is_top_k(const pf__generation_state *st, const pf__row *row) {
    return st->o->do_sample && st->beams == 1 && st->device.per_row && pf__processors_idle(st, row);
}

/* Whether every processor of a greedy or sampled step (pf__generation_sample_step) is idle for the
   row: those that may act at any step conservatively, the length and forcing ones by their own
   conditions. */
static int pf__processors_idle(const pf__generation_state *st, const pf__row *row) {
    const pf_generate_options *o = st->o;
    if (o->logprobs) return 0; /* not a processor, but it reads the whole row's logits */
    if (o->json_constraint) return 0;
    if (o->repetition_penalty != 1.0f || o->presence_penalty != 0 || o->frequency_penalty != 0 || o->num_logit_bias > 0 ||
        o->no_repeat_ngram_size > 0 || o->num_bad_words > 0 ||
        o->num_suppress_tokens > 0 || o->return_timestamps || (o->encoder_no_repeat_ngram_size > 0 && st->sources))
        return 0;
    if (st->num_eos > 0 && pf__min_length_active(o, row, st->min_length)) return 0;
    if (o->num_begin_suppress_tokens > 0 && pf__at_first_new_token(row)) return 0;
    return pf__forced_token(o, row, st->vocab, st->max_length) < 0;
}

/* Whether every live row of a request takes the plain arg-max at this step. */
PF_PRIVATE int pf__generation_argmax_only(const pf__generation_state *st) {
    for (int i = 0; i < st->num_rows; i++)
        if (!st->rows[i].done && !pf__choice_is_argmax(st, &st->rows[i])) return 0;
    return 1;
}

PF_PRIVATE int pf__generation_top_k_only(const pf__generation_state *st) {
    for (int i = 0; i < st->num_rows; i++)
        if (!st->rows[i].done && !pf__choice_is_top_k(st, &st->rows[i])) return 0;
    return 1;
}

/* Before a step of one request: what its forward leaves instead of the logits: the tokens, when
   the backend can choose them and every live row takes the plain arg-max; the ranks' top-k
   candidates, when every live row samples from them; else NULL (the logits). */
static const pf__device_choice *pf__choose_on_devices(pf__generation_state *st) {
    const pf__backend *be = st->m->group->backend;
    st->device_tokens = NULL;
    memset(&st->device_candidates, 0, sizeof st->device_candidates);
    if (st->m->config.transfo_xl) return NULL; /* its adaptive softmax's log-probabilities: rank 0's, on the host */
    if (be->argmax && st->argmax_tokens && pf__generation_argmax_only(st)) {
        st->device.tokens = st->argmax_tokens;
        st->device_tokens = st->argmax_tokens;
        st->device.candidates = NULL;
        return &st->device;
    }
    if (st->device.per_row && (size_t)st->num_rows <= st->m->group->logit_rows && pf__generation_top_k_only(st)) {
        st->device.tokens = NULL;
        st->device.candidates = st->top_k_candidates;
        st->device_candidates = (pf__candidate_view){st->top_k_candidates, (size_t)st->num_rows, st->device.per_row, 0,
                                                     st->logits};
        return &st->device;
    }
    return NULL;
}

/* Phase 1: the prompts fit the model and the cache; the lengths as transformers resolves them
   (20 new tokens by default), bounded by the cache. */
PF_PRIVATE pf_result pf__generation_resolve(pf__generation_state *st, const int32_t *const *prompts, const int *lengths) {
    pf_model *m = st->m;
    const pf_generate_options *o = st->o;
    const pf__group *g = m->group;
    pf_result r;
    for (int b = 0; b < st->batch; b++) {
        if (!prompts[b] || lengths[b] < 1) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "prompt %d is empty", b);
        if (lengths[b] >= g->cache_len) /* before its ids are read: a length past the caller's array */
            return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "the prompt (%d tokens) leaves no room in the KV cache (%d)",
                            lengths[b], g->cache_len);
        if ((r = pf__check_ids(m, prompts[b], (size_t)lengths[b]))) return r;
        if (lengths[b] > st->width) st->width = lengths[b];
    }
    int width = st->width;
    st->vocab = m->config.vocab_size;
    st->eos = o->num_eos_token_ids ? o->eos_token_ids : m->config.eos_ids;
    st->num_eos = o->num_eos_token_ids ? o->num_eos_token_ids : m->config.num_eos_ids;
    st->pad_token = o->pad_token_id >= 0 ? o->pad_token_id : st->num_eos ? st->eos[0] : 0;
    st->max_length = o->max_new_tokens ? (long long)width + o->max_new_tokens
                     : o->max_length   ? o->max_length
                                       : (width + 20 < m->config.max_positions ? width + 20 : m->config.max_positions);
    if (m->config.whisper_prompt && !o->max_new_tokens && o->max_length) /* Whisper's generate(): max_length new tokens */
        st->max_length = (long long)o->max_length + width;
    if (m->config.whisper_prompt && o->max_new_tokens && (long long)width + o->max_new_tokens > m->config.max_positions)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "the decoder prompt (%d tokens) and max_new_tokens %d exceed the "
                        "decoder's %d positions (max_target_positions), as Whisper's generate() refuses", width,
                        o->max_new_tokens, m->config.max_positions);
    if (st->max_length > g->cache_len) st->max_length = g->cache_len;
    if (m->config.encoder_max_positions && st->max_length > m->config.max_positions) /* the cache outgrows the decoder's table */
        st->max_length = m->config.max_positions;
    long long min_new = o->min_new_tokens ? (long long)width + o->min_new_tokens : o->min_length;
    st->min_length = min_new < INT_MAX ? (int)min_new : INT_MAX; /* longer than any row can grow */
    st->beams = o->num_beams;
    st->per_prompt = st->beams > 1 ? st->beams : o->num_return_sequences;
    st->num_rows = st->batch * st->per_prompt;
    st->capacity = (size_t)(st->max_length > width ? st->max_length : width) + 1;
    /* Beam search keeps transformers' top K of beams x vocab: 2 per beam, or one more than the eos
       ids so that num_beams of them do not end; never more than the beams x vocab that exist. */
    long long per_beam = st->num_eos + 1LL > 2 ? st->num_eos + 1LL : 2;
    st->num_candidates = (int)((per_beam < st->vocab ? per_beam : st->vocab) * st->beams);
    st->rng = o->seed;
    return PF_OK;
}

/* A sampling request's buffer for the ranks' top-k candidates, when the backend takes them and
   top_k leaves few enough tokens: k + 1 a rank and row (one more than top_k keeps, so that a tie
   at the k-th shows). -1 when out of memory. */
static int pf__generation_alloc_top_k(pf__generation_state *st) {
    const pf__group *g = st->m->group;
    const pf_generate_options *o = st->o;
    size_t k = o->top_k > 0 && o->top_k < st->vocab ? (size_t)o->top_k : (size_t)st->vocab;
    if (!g->backend->top_k || !o->do_sample || st->beams > 1 || k + 1 > g->backend->top_k_max) return 0;
    st->top_k_candidates = (pf__choice *)malloc((size_t)g->world_ranks * st->num_rows * (k + 1) * sizeof(pf__choice));
    st->device.per_row = st->top_k_candidates ? k + 1 : 0;
    return st->top_k_candidates ? 0 : -1;
}

/* The width of the generation step that recomputes the cache instead of appending one position,
   or 0 where none does: Phi-3's generate() under LongRoPE drops the cache once the padded rows
   outgrow original_max_position_embeddings (their keys were rotated with the short factors) and runs
   every position again with the long ones. */
static int pf__recompute_width(const pf__config *c) {
    return c->rope_type == PF__ROPE_LONGROPE && c->longrope_drops_cache ? c->rope_original_max_positions + 1 : 0;
}

/* Phase 2: the buffers, and every row as left pads then its prompt. */
PF_PRIVATE pf_result pf__generation_alloc(pf__generation_state *st, const int32_t *const *prompts, const int *lengths) {
    size_t rows = (size_t)st->num_rows, batch = (size_t)st->batch, beams = (size_t)st->beams;
    st->rows = (pf__row *)calloc(rows, sizeof *st->rows);
    st->pool[0] = (int32_t *)malloc(rows * st->capacity * sizeof(int32_t));
    st->pool[1] = beams > 1 ? (int32_t *)malloc(rows * st->capacity * sizeof(int32_t)) : NULL;
    size_t step_width = (size_t)st->width, recompute = (size_t)pf__recompute_width(&st->m->config);
    if (recompute > step_width && recompute <= st->capacity) step_width = recompute; /* that step's ids */
    if (st->m->config.xlnet || st->m->config.reformer) step_width = st->capacity; /* every token each step */
    st->ids = (int32_t *)malloc(rows * step_width * sizeof *st->ids);
    st->pads = (int *)malloc(rows * sizeof *st->pads);
    st->src = (int *)malloc(rows * sizeof *st->src);
    st->seen = (unsigned char *)malloc((size_t)st->vocab);
    st->candidates = (pf__candidate *)malloc((size_t)st->vocab * beams * sizeof *st->candidates);
    st->hyps = (pf__hypothesis *)calloc(batch * beams, sizeof *st->hyps);
    st->num_hyps = (int *)calloc(batch, sizeof *st->num_hyps);
    st->open = (int *)malloc(batch * sizeof *st->open);
    st->next_tokens = (int32_t *)malloc(rows * sizeof *st->next_tokens);
    st->next_scores = (float *)malloc(rows * sizeof *st->next_scores);
    st->streams = (pf__stream_state *)calloc(rows, sizeof *st->streams);
    for (int i = 0; i < st->o->num_stop_strings; i++) { /* a token is at least a byte, but for a few special ones */
        int bytes = (int)strlen(st->o->stop_strings[i]);
        if (bytes + 16 > st->stop_window) st->stop_window = bytes + 16;
    }
    st->argmax_tokens = (int32_t *)malloc(rows * sizeof *st->argmax_tokens);
    if (st->o->logprobs) {
        size_t top = (size_t)st->o->top_logprobs;
        st->raw_scores = (float *)malloc((size_t)st->vocab * sizeof(float));
        st->step_logprobs = (float *)malloc(rows * sizeof(float));
        st->step_top_tokens = (int32_t *)malloc((rows * top + 1) * sizeof(int32_t));
        st->step_top_logprobs = (float *)malloc((rows * top + 1) * sizeof(float));
        if (!st->raw_scores || !st->step_logprobs || !st->step_top_tokens || !st->step_top_logprobs)
            return PF__FAIL(st->m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    if (st->o->json_constraint) {
        st->json = (pf__json_matcher *)malloc((rows + 1) * sizeof *st->json);
        if (!st->json) return PF__FAIL(st->m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
        for (size_t i = 0; i < rows; i++) pf__json_matcher_init(pf__json_constraint_schema(st->o->json_constraint), &st->json[i]);
    }
    if (!st->rows || !st->pool[0] || (beams > 1 && !st->pool[1]) || !st->candidates || !st->ids || !st->pads ||
        !st->src || !st->seen || !st->hyps || !st->num_hyps || !st->open || !st->next_tokens || !st->next_scores ||
        !st->streams || !st->argmax_tokens || pf__generation_alloc_top_k(st))
        return PF__FAIL(st->m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; i < st->num_rows; i++) {
        int b = i / st->per_prompt;
        pf__row *row = &st->rows[i];
        row->tokens = st->pool[0] + (size_t)i * st->capacity;
        row->pad = st->width - lengths[b];
        row->prompt = lengths[b];
        row->length = st->width;
        for (int t = 0; t < row->pad; t++) row->tokens[t] = st->pad_token;
        memcpy(row->tokens + row->pad, prompts[b], (size_t)lengths[b] * sizeof(int32_t));
        row->score = st->beams == 1 || i % st->beams == 0 ? 0.0f : -1e9f; /* beam 0 alone starts live */
    }
    for (int b = 0; b < st->batch; b++) st->open[b] = 1;
    return PF_OK;
}

/* encoder_no_repeat_ngram_size: row i never completes an n-gram of its prompt's source (its
   last n - 1 tokens followed by the banned one), as transformers' encoder n-gram processor. */
static void pf__ban_source_ngrams(const pf__generation_state *st, int i, float *scores) {
    int n = st->o->encoder_no_repeat_ngram_size;
    const pf__row *row = &st->rows[i];
    if (n <= 0 || !st->sources || row->length < n - 1) return;
    int b = i / st->per_prompt, pad = st->source_pads[b];
    const int32_t *source = st->sources + (size_t)b * st->source_width + pad, *tail = row->tokens + row->length - (n - 1);
    for (int start = 0; start + n <= st->source_width - pad; start++)
        if (!memcmp(source + start, tail, (size_t)(n - 1) * sizeof(int32_t))) scores[source[start + n - 1]] = -INFINITY;
}

/* Phase 3 of an encoder-decoder: the sources through the encoder once per prompt, its output's
   keys and values copied to the prompt's rows (beams or samples), then the start tokens through
   the decoder. */
static pf_result pf__generation_prefill_seq2seq(pf__generation_state *st) {
    pf_model *m = st->m;
    pf_result r = pf__encoder_pass(m, st->sources, st->source_features, st->source_pads, st->batch, st->source_width,
                                  st->source_global, NULL);
    for (int i = 0; i < st->num_rows; i++) {
        st->src[i] = i / st->per_prompt;
        st->cross_pads[i] = st->source_pads[i / st->per_prompt];
    }
    if (!r && st->per_prompt > 1) r = pf__reorder_rows(m, st->src, st->num_rows, 0, st->source_width);
    return r ? r : pf__generate_step(m, st->rows, st->num_rows, 1, st->ids, st->pads, st->cross_pads, st->source_width,
                                     pf__choose_on_devices(st));
}

/* Phase 3: the prompts through the model. Beams share their prompt: beam 0 of each prompt is
   prefilled into cache rows 0..batch-1, then copied into its beams' rows, and its logits to each
   beam's place (the first step reads every beam's, which are the same: unwritten rows would be
   read uninitialised). */
static pf_result pf__generation_prefill(pf__generation_state *st) {
    pf_model *m = st->m;
    int beams = st->beams, vocab = st->vocab;
    if (st->seq2seq) return pf__generation_prefill_seq2seq(st);
    if (beams == 1) return pf__generate_step(m, st->rows, st->num_rows, 1, st->ids, st->pads, NULL, 0, pf__choose_on_devices(st));
    pf__row *firsts = (pf__row *)malloc((size_t)st->batch * sizeof *firsts);
    if (!firsts) return PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    for (int b = 0; b < st->batch; b++) firsts[b] = st->rows[b * beams];
    pf_result r = pf__generate_step(m, firsts, st->batch, 1, st->ids, st->pads, NULL, 0, NULL);
    free(firsts);
    for (int b = st->batch - 1; !r && b >= 0; b--) {
        float *first = m->logits + (size_t)b * beams * vocab;
        if (b > 0) memmove(first, m->logits + (size_t)b * vocab, (size_t)vocab * sizeof(float));
        for (int k = 1; k < beams; k++) memcpy(first + (size_t)k * vocab, first, (size_t)vocab * sizeof(float));
    }
    for (int i = 0; i < st->num_rows; i++) st->src[i] = i / beams;
    return r ? r : pf__reorder_rows(m, st->src, st->num_rows, st->width, 0);
}

/* Row i's candidates from every rank holding vocabulary (v),
   divided by the temperature as pf__sample does, into list; their count, or -1 when a NaN makes
   the host's order unknowable. *unseen: the best (divided) value a token no rank returned may
   have (-inf when every rank returned its whole slice). */
static int pf__gather_candidates(const pf__generation_state *st, int i, const pf__candidate_view *v, pf__candidate *list,
                                 float *unseen) {
    const pf__group *g = st->m->group;
    float temperature = st->o->temperature;
    size_t per_row = v->per_row;
    int n = 0;
    *unseen = -INFINITY;
    for (int k = 0; k < g->world_ranks; k++) {
        size_t mine = g->lm_rows[k];
        size_t count = per_row < mine ? per_row : mine;
        const pf__choice *c = v->all + ((size_t)k * v->rows + v->offset + (size_t)i) * per_row;
        for (size_t j = 0; j < count; j++, n++) {
            if (isnan(c[j].value)) return -1;
            list[n].score = temperature != 1.0f ? c[j].value / temperature : c[j].value;
            list[n].beam = 0;
            list[n].token = c[j].index;
        }
        if (count < mine && list[n - 1].score > *unseen) *unseen = list[n - 1].score; /* the rest are no better */
    }
    return n;
}

/* Row i's sampled token from the ranks' top-k candidates (v), the same token and the same one
   draw of rng as pf__sample over the row's whole logits: every token pf__sample would keep is
   among them, in the same order, and every sum runs in the same order over the same terms (the
   tokens it drops add exact zeros). -1 when the candidates cannot settle it (a NaN, or a token no
   rank returned may tie the k-th): then the host samples from the logits. rng NULL: only whether
   they settle it (0), without a draw. */
static int32_t pf__sample_candidates(pf__generation_state *st, int i, const pf__candidate_view *v, uint64_t *rng) {
    const pf_generate_options *o = st->o;
    pf__candidate *list = st->candidates; /* vocab entries: the ranks return at most their slices */
    float unseen;
    int n = pf__gather_candidates(st, i, v, list, &unseen);
    int k = o->top_k > 0 && o->top_k < st->vocab ? o->top_k : st->vocab;
    if (n < k) return -1;
    qsort(list, (size_t)n, sizeof *list, pf__candidate_cmp); /* best first, as pf__sample sorts */
    float kth = list[k - 1].score;
    if (unseen >= kth && kth != -INFINITY) return -1; /* a -inf tie is dropped or adds zeros: harmless */
    return rng ? pf__sample_sorted(o, list, n, k, rng) : 0;
}

/* A release build's step whose candidates leave a live row unsettled: the step's logits from the
   ranks (still there) for the host, once for all rows. */
static pf_result pf__fetch_unsettled_logits(pf__generation_state *st, const pf__candidate_view *v) {
    for (int i = 0; i < st->num_rows; i++)
        if (!st->rows[i].done && pf__sample_candidates(st, i, v, NULL) < 0) {
            pf__job job = {.step = {.batch = (int)v->rows}, .logits = v->logits};
            return pf__group_run(st->m->group, PF__JOB_LOGITS, &job);
        }
    return PF_OK;
}

/* Row i's logprobs of this step from its raw logits (st->raw_scores): the chosen token's
   log_softmax, and the top_logprobs best tokens (most likely first, ties by lower id), kept by
   insertion into a short sorted list in one pass over the vocabulary. */
static void pf__step_logprobs(pf__generation_state *st, int i, int32_t token) {
    const float *x = st->raw_scores;
    int vocab = st->vocab, top = st->o->top_logprobs, kept = 0;
    float max = -INFINITY;
    for (int v = 0; v < vocab; v++)
        if (x[v] > max) max = x[v];
    double sum = 0;
    for (int v = 0; v < vocab; v++) sum += exp((double)x[v] - max);
    float log_norm = max + (float)log(sum);
    st->step_logprobs[i] = x[token] - log_norm;
    int32_t *ids = st->step_top_tokens + (size_t)i * top;
    float *values = st->step_top_logprobs + (size_t)i * top;
    for (int v = 0; v < vocab && top > 0; v++) {
        if (kept == top && !(x[v] > values[top - 1])) continue; /* ties keep the lower id, seen first */
        int at = kept < top ? kept++ : top - 1;
        while (at > 0 && x[v] > values[at - 1]) {
            values[at] = values[at - 1];
            ids[at] = ids[at - 1];
            at--;
        }
        values[at] = x[v];
        ids[at] = v;
    }
    for (int k = 0; k < kept; k++) values[k] -= log_norm;
    for (int k = kept; k < top; k++) ids[k] = -1; /* fewer tokens than asked: never with top <= vocab */
}

PF_PRIVATE void pf__report_logprobs(const pf__generation_state *st, const pf_generate_options *o, int i, int32_t token) {
    int top = st->o->top_logprobs;
    if (!o->logprobs_callback) return;
    o->logprobs_callback(o->logprobs_user, i, token, st->step_logprobs[i], st->step_top_tokens + (size_t)i * top,
                         st->step_top_logprobs + (size_t)i * top, top < st->vocab ? top : st->vocab);
}

/* Live row i's next token: the devices' arg-max (chosen), a draw from the devices' candidates
   where they settle it, else the processors then pf__argmax or pf__sample over its logits. A test
   build checks each device choice against the host's over the same logits. */
static pf_result pf__choose_token(pf__generation_state *st, int i, const int32_t *chosen, const pf__candidate_view *v,
                                  int32_t *token) {
    pf_model *m = st->m;
    const pf_generate_options *o = st->o;
    pf__row *row = &st->rows[i];
    float *s = st->logits + (size_t)i * st->vocab;
    int settled = chosen || (v->all && pf__sample_candidates(st, i, v, NULL) >= 0);
#ifdef PF_TESTING
    if ((!settled || pf__check_device_choices) && pf__testing_unwritten(s, st->vocab))
        return PF__FAIL(m, PF_ERROR_DEVICE, "generation read logits row %d holding NaN: no forward wrote it (or the model computed NaN)", i);
#endif
    if (chosen) { /* the devices took the arg-max (pf__choice_is_argmax held) */
        *token = chosen[i];
#ifdef PF_TESTING
        if (pf__check_device_choices && *token != pf__argmax(s, st->vocab))
            return PF__FAIL(m, PF_ERROR_DEVICE, "row %d: the devices chose token %d, the host's arg-max of the same logits is %d",
                            i, (int)*token, pf__argmax(s, st->vocab));
#endif
        return PF_OK;
    }
    if (settled) { /* pf__choice_is_top_k held, and the candidates hold every token top-k keeps */
#ifdef PF_TESTING
        uint64_t rng_before = st->rng;
#endif
        *token = pf__sample_candidates(st, i, v, &st->rng);
#ifdef PF_TESTING
        pf_testing_device_samples++;
        int32_t host = pf__check_device_choices ? pf__sample(o, s, st->vocab, &rng_before, st->candidates) : *token;
        if (host != *token || (pf__check_device_choices && rng_before != st->rng))
            return PF__FAIL(m, PF_ERROR_DEVICE, "row %d: token %d drawn from the devices' top-k candidates, pf__sample of "
                            "the same logits draws %d", i, (int)*token, (int)host);
#endif
        return PF_OK;
    }
    if (o->logprobs) memcpy(st->raw_scores, s, (size_t)st->vocab * sizeof(float));
    pf__process_scores(o, row, s, st->vocab, st->eos, st->num_eos, st->min_length, st->seen);
    pf__ban_source_ngrams(st, i, s);
    if (o->return_timestamps) pf__timestamp_rules(&m->config, row, s, st->vocab, st->num_eos ? st->eos[0] : -1);
    if (o->json_constraint)
        pf__json_constraint_mask(o->json_constraint, &st->json[i], &st->json[st->num_rows], s, st->vocab, st->eos, st->num_eos);
    pf__force_tokens(o, row, s, st->vocab, st->max_length);
    *token = o->do_sample ? pf__sample(o, s, st->vocab, &st->rng, st->candidates) : pf__argmax(s, st->vocab);
    if (o->logprobs) pf__step_logprobs(st, i, *token);
    return PF_OK;
}

/* stop_strings: whether the row's last token completes one of them. Only the last stop_window new
   tokens are decoded (more than the longest stop string's bytes, so more than it can span): an
   earlier occurrence would have ended the row already. -1 without memory. */
static int pf__completes_stop_string(pf__generation_state *st, const pf__row *row) {
    const pf_generate_options *o = st->o;
    const int32_t *fresh = row->tokens + row->pad + row->prompt;
    int n = row->length - row->pad - row->prompt, from = n > st->stop_window ? n - st->stop_window : 0;
    size_t len = pf__stream_decode(st->m, fresh, from, n, &st->stop_text, &st->stop_cap);
    if (len == (size_t)-1) return -1;
    for (int i = 0; i < o->num_stop_strings; i++) {
        size_t stop_len = strlen(o->stop_strings[i]);
        for (size_t at = 0; at + stop_len <= len; at++)
            if (!memcmp(st->stop_text + at, o->stop_strings[i], stop_len)) return 1;
    }
    return 0;
}

/* Phase 4a, greedy or sampling: one token per row (finished rows are fed the pad token); *finished
   when every row has ended or a stream callback stopped the request. */
PF_PRIVATE pf_result pf__generation_sample_step(pf__generation_state *st, int *finished) {
    pf_model *m = st->m;
    const pf_generate_options *o = st->o;
    int last_step = st->rows[0].length + 1 >= st->max_length, all_done = 1, stopped = 0;
    const int32_t *chosen = st->device_tokens; /* this step's only */
    pf__candidate_view candidates = st->device_candidates; /* this step's only */
    st->device_tokens = NULL;
    memset(&st->device_candidates, 0, sizeof st->device_candidates);
    if (pf__check_closing(m)) return PF_ERROR_CANCELLED;
#ifdef PF_TESTING
    if (candidates.all && !pf__check_device_choices) /* as a release build: no logits unless fetched */
        for (size_t j = 0; j < (size_t)st->num_rows * st->vocab; j++) st->logits[j] = NAN;
#endif
    pf_result r = candidates.all && !pf__check_device_choices ? pf__fetch_unsettled_logits(st, &candidates) : PF_OK;
    for (int i = 0; !r && i < st->num_rows; i++) {
        pf__row *row = &st->rows[i];
        int32_t t = st->pad_token;
        int live = !row->done, ends = 0;
        if (live && (r = pf__choose_token(st, i, chosen, &candidates, &t))) break;
        if (live) ends = last_step || pf__ends_here(o, st->eos, st->num_eos, row->tokens, row->length, t);
        if (live && o->json_constraint) pf__json_constraint_advance(o->json_constraint, &st->json[i], &st->json[st->num_rows], t);
        row->tokens[row->length++] = t;
        if (live && !ends && o->num_stop_strings > 0) {
            int completes = pf__completes_stop_string(st, row);
            if (completes < 0) {
                r = PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
                break;
            }
            ends = completes;
        }
        if (live && o->logprobs) pf__report_logprobs(st, o, i, t);
        if (live && o->stream && pf__stream(m, o, i, row, &st->streams[i], &st->stream_text, &st->stream_cap)) stopped = 1;
        if (ends) row->done = 1;
        all_done &= row->done;
    }
    *finished = all_done || stopped;
    return r;
}
/* Beam search, one prompt's candidates: every live beam's log-probabilities (processed) plus its
   score, and the top K of them to the front, best first, in one pass in which a candidate enters
   only if it beats the K-th (a decode step must not sort beams x vocab); when sampling, K drawn
   without replacement from their softmax instead. */
static pf_result pf__beam_candidates(pf__generation_state *st, int b) {
    const pf_generate_options *o = st->o;
    pf__candidate *candidates = st->candidates;
    int n = 0, vocab = st->vocab, K = st->num_candidates;
    for (int k = 0; k < st->beams; k++) {
        int i = b * st->beams + k;
        float *s = st->logits + (size_t)i * vocab;
#ifdef PF_TESTING
        if (pf__testing_unwritten(s, vocab))
            return PF__FAIL(st->m, PF_ERROR_DEVICE, "beam search read logits row %d holding NaN: no forward wrote it (or the model computed NaN)", i);
#endif
        pf__log_softmax(s, vocab);
        pf__process_scores(o, &st->rows[i], s, vocab, st->eos, st->num_eos, st->min_length, st->seen);
        pf__ban_source_ngrams(st, i, s);
        pf__force_tokens(o, &st->rows[i], s, vocab, st->max_length);
        for (int t = 0; t < vocab; t++) {
            candidates[n].score = s[t] + st->rows[i].score;
            candidates[n].beam = k;
            candidates[n++].token = t;
        }
    }
    if (o->do_sample) {
        float max = -INFINITY;
        for (int c = 0; c < n; c++)
            if (candidates[c].score > max) max = candidates[c].score;
        for (int c = 0; c < K; c++) {
            double total = 0, sum = 0, u;
            int pick;
            for (int j = c; j < n; j++) total += exp((double)candidates[j].score - max);
            u = pf__random_unit(&st->rng) * total;
            for (pick = c; pick < n - 1; pick++)
                if ((sum += exp((double)candidates[pick].score - max)) > u) break;
            pf__candidate t = candidates[c];
            candidates[c] = candidates[pick];
            candidates[pick] = t;
        }
        return PF_OK;
    }
    int top = 0; /* candidates[0..top) hold the best so far, in order */
    for (int j = 0; j < n; j++) {
        if (top == K && pf__candidate_cmp(&candidates[j], &candidates[top - 1]) >= 0) continue;
        pf__candidate cand = candidates[j]; /* every slot it may overwrite is read already */
        int at = top < K ? top++ : K - 1;
        for (; at > 0 && pf__candidate_cmp(&cand, &candidates[at - 1]) < 0; at--) candidates[at] = candidates[at - 1];
        candidates[at] = cand;
    }
    return PF_OK;
}

/* A finished beam (parent's new tokens and `token`) with its length-penalised score into the
   prompt's hypotheses: a free slot, or over the worst when better. */
static pf_result pf__beam_hypothesis(pf__generation_state *st, int b, const pf__row *parent, int32_t token, float score) {
    pf__hypothesis *hyps = st->hyps + (size_t)b * st->beams, *slot = NULL;
    if (st->num_hyps[b] < st->beams) {
        slot = &hyps[st->num_hyps[b]++];
    } else {
        slot = &hyps[0];
        for (int h = 1; h < st->beams; h++)
            if (hyps[h].score < slot->score) slot = &hyps[h];
        if (!(score > slot->score)) return PF_OK;
    }
    int new_len = parent->length - st->width;
    int32_t *tokens = (int32_t *)realloc(slot->tokens, (size_t)(new_len + 1) * sizeof(int32_t));
    if (!tokens) return PF__FAIL(st->m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    memcpy(tokens, parent->tokens + st->width, (size_t)new_len * sizeof(int32_t));
    tokens[new_len] = token;
    slot->tokens = tokens;
    slot->length = new_len + 1;
    slot->score = score;
    return PF_OK;
}

/* Beam search, one prompt's choice among its top K as transformers 5 makes it: those of the
   first num_beams that end become hypotheses (kept best num_beams), and the best num_beams that
   do not end run on (src, next_tokens, next_scores); then whether the best running beam can
   still beat the worst hypothesis (open, sticky per prompt). */
static pf_result pf__beam_choose(pf__generation_state *st, int b, int cur_len, int last_step) {
    const pf_generate_options *o = st->o;
    int beams = st->beams, kept = 0, base = b * beams;
    int accept = st->open[b] && !(st->num_hyps[b] == beams && o->early_stopping == PF_EARLY_STOPPING_ON);
    float penalty = powf((float)(cur_len + 1 - st->width), o->length_penalty);
    for (int c = 0; c < st->num_candidates; c++) {
        const pf__candidate *cand = &st->candidates[c];
        const pf__row *parent = &st->rows[base + cand->beam];
        if (!last_step && !pf__ends_here(o, st->eos, st->num_eos, parent->tokens, parent->length, cand->token)) {
            if (kept < beams) { /* runs on */
                st->src[base + kept] = base + cand->beam;
                st->next_tokens[base + kept] = cand->token;
                st->next_scores[base + kept++] = cand->score;
            }
            continue;
        }
        if (c >= beams || !accept) continue;
        pf_result r = pf__beam_hypothesis(st, b, parent, cand->token, cand->score / penalty);
        if (r) return r;
    }
    for (; kept < beams; kept++) { /* every candidate ended: placeholders nobody reads */
        st->src[base + kept] = base;
        st->next_tokens[base + kept] = st->pad_token;
        st->next_scores[base + kept] = -1e9f;
    }
    if (st->open[b] && st->num_hyps[b] == beams) {
        int length = o->early_stopping == PF_EARLY_STOPPING_NEVER && o->length_penalty > 0 ? (int)st->max_length - st->width
                                                                                            : cur_len + 1 - st->width;
        float best = st->next_scores[base] / powf((float)length, o->length_penalty), worst = INFINITY;
        for (int h = 0; h < beams; h++)
            if (st->hyps[base + h].score < worst) worst = st->hyps[base + h].score;
        if (!(best > worst)) st->open[b] = 0;
    }
    return PF_OK;
}

/* Phase 4b, beam search: each prompt's candidates and choice, then the running beams (their
   parents' tokens plus the new one) into the other pool; *finished when the search is over,
   else the cache rows follow their beams. */
static pf_result pf__generation_beam_step(pf__generation_state *st, int *finished) {
    int cur_len = st->rows[0].length, last_step = cur_len + 1 >= st->max_length, any_open = 0, all_full = 1;
    pf_result r = pf__check_closing(st->m);
    for (int b = 0; b < st->batch && !r; b++) {
        r = pf__beam_candidates(st, b);
        if (!r) r = pf__beam_choose(st, b, cur_len, last_step);
        any_open |= st->open[b];
        all_full &= st->num_hyps[b] == st->beams;
    }
    if (r) return r;
    int32_t *next = st->pool[!st->current];
    for (int i = 0; i < st->num_rows; i++) {
        int32_t *dst = next + (size_t)i * st->capacity;
        memcpy(dst, st->rows[st->src[i]].tokens, (size_t)cur_len * sizeof(int32_t));
        dst[cur_len] = st->next_tokens[i];
    }
    st->current = !st->current;
    for (int i = 0; i < st->num_rows; i++) {
        st->rows[i].tokens = next + (size_t)i * st->capacity;
        st->rows[i].length = cur_len + 1;
        st->rows[i].score = st->next_scores[i];
    }
    *finished = last_step || !any_open || (st->o->early_stopping == PF_EARLY_STOPPING_ON && all_full);
    return *finished ? PF_OK : pf__reorder_rows(st->m, st->src, st->num_rows, cur_len, 0);
}

/* Phase 5: each prompt's hypotheses best first (beam search), or each row's new tokens up to
   where it ended. */
PF_PRIVATE pf_result pf__generation_results(pf__generation_state *st, pf_generation *result) {
    const pf_generate_options *o = st->o;
    int n = st->batch * o->num_return_sequences, beams = st->beams;
    result->tokens = (int32_t **)calloc((size_t)n, sizeof(int32_t *));
    result->lengths = (int *)calloc((size_t)n, sizeof(int));
    result->scores = (float *)calloc((size_t)n, sizeof(float));
    if (!result->tokens || !result->lengths || !result->scores) return PF__FAIL(st->m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    result->num_sequences = n;
    for (int b = 0; b < st->batch; b++) {
        if (beams > 1) qsort(st->hyps + b * beams, (size_t)st->num_hyps[b], sizeof *st->hyps, pf__hypothesis_cmp);
        for (int k = 0; k < o->num_return_sequences; k++) {
            int out = b * o->num_return_sequences + k, length = 0;
            const int32_t *tokens = NULL;
            if (beams > 1 && k < st->num_hyps[b]) {
                tokens = st->hyps[b * beams + k].tokens;
                length = st->hyps[b * beams + k].length;
                result->scores[out] = st->hyps[b * beams + k].score;
            } else if (beams == 1) {
                const pf__row *row = &st->rows[b * st->per_prompt + k];
                tokens = row->tokens + st->width;
                length = row->length - st->width;
                for (int t = 0; t < length; t++) /* cut the pad tokens after its end */
                    if (pf__ends_here(o, st->eos, st->num_eos, row->tokens, st->width + t, tokens[t])) {
                        length = t + 1;
                        break;
                    }
            }
            result->lengths[out] = length;
            result->tokens[out] = (int32_t *)malloc((size_t)(length ? length : 1) * sizeof(int32_t));
            if (!result->tokens[out]) return PF__FAIL(st->m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
            if (length) memcpy(result->tokens[out], tokens, (size_t)length * sizeof(int32_t));
        }
    }
    return PF_OK;
}

PF_PRIVATE void pf__generation_free(pf__generation_state *st) {
    for (int i = 0; st->hyps && i < st->batch * st->beams; i++) free(st->hyps[i].tokens);
    free(st->rows), free(st->pool[0]), free(st->pool[1]), free(st->ids), free(st->pads), free(st->src), free(st->seen);
    free(st->candidates), free(st->hyps), free(st->num_hyps), free(st->open), free(st->next_tokens), free(st->next_scores);
    free(st->streams), free(st->stream_text), free(st->stop_text), free(st->json);
    free(st->sources), free(st->source_global), free(st->source_pads), free(st->cross_pads), free(st->argmax_tokens);
    free(st->top_k_candidates);
    free(st->raw_scores), free(st->step_logprobs), free(st->step_top_tokens), free(st->step_top_logprobs);
}

/* features, feature_pads, feature_width: a speech encoder-decoder's front end output
   [batch][feature_width][hidden] and its rows' left pads, in place of the prompts (NULL for text);
   prompts, when given with them, are each row's decoder prompt. */
PF_PRIVATE pf_result pf__generate_locked(pf_model *m, const int32_t *const *prompts, const int *lengths, int batch,
                                     const pf_generate_options *o, pf_generation *result, const float *features,
                                     const int *feature_pads, int feature_width) {
    pf_result r = pf__ensure_group(m);
    if (r) return r;
    if ((r = pf__check_generates(m))) return r;
    if ((r = pf__check_generate_options(m, o, batch))) return r;
    if (m->config.mel_frontend && !features)
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "model_type \"%s\" takes audio features: pf_generate_audio runs it",
                        m->config.model_type);
    pf__generation_state st;
    memset(&st, 0, sizeof st);
    st.m = m;
    st.o = o;
    st.batch = batch;
    st.logits = m->logits;
    memset(result, 0, sizeof *result);
    int32_t start = o->decoder_start_token_id >= 0 ? o->decoder_start_token_id : m->config.decoder_start_token_id;
    const int32_t **starts = NULL; /* an encoder-decoder's decoder prompts: its start token, or options' decoder_prompt */
    int *start_lengths = NULL;
    if (pf__archs[m->config.arch].kind == PF__KIND_SEQ2SEQ) {
        const int32_t *first = o->decoder_prompt ? o->decoder_prompt : &start;
        int first_length = o->decoder_prompt ? o->decoder_prompt_length : 1;
        if (!o->decoder_prompt && (start < 0 || start >= m->config.vocab_size))
            return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "the decoder start token %d is not in the vocabulary (config.json's "
                            "decoder_start_token_id, or the options')", (int)start);
        if (o->decoder_prompt && (o->decoder_prompt_length < 1 || o->decoder_prompt_length >= m->config.max_positions))
            return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "decoder_prompt_length %d is not in 1..%d", o->decoder_prompt_length,
                            m->config.max_positions - 1);
        st.seq2seq = 1;
        if (features) {
            st.source_features = features;
            st.source_width = feature_width;
            if (!(st.source_pads = (int *)malloc((size_t)batch * sizeof(int)))) r = PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
            else memcpy(st.source_pads, feature_pads, (size_t)batch * sizeof(int));
        } else {
            r = pf__pad_rows(m, "prompt", prompts, lengths, batch, 1, &st.source_width, &st.sources, &st.source_pads);
            if (!r) r = pf__source_global_rows(m, "prompt", o->global_attention, lengths, batch, st.source_width, &st.source_global);
        }
        starts = (const int32_t **)malloc((size_t)batch * sizeof *starts);
        start_lengths = (int *)malloc((size_t)batch * sizeof *start_lengths);
        if (!r && (!starts || !start_lengths)) r = PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
        for (int b = 0; !r && b < batch; b++) /* a speech row's own prompt (a detected language), or the one for all */
            starts[b] = features && prompts ? prompts[b] : first, start_lengths[b] = features && prompts ? lengths[b] : first_length;
        if (!r) prompts = starts, lengths = start_lengths;
    }
    if (!r) r = pf__generation_resolve(&st, prompts, lengths);
    if (!r) r = pf__generation_alloc(&st, prompts, lengths);
    if (!r && st.seq2seq && !(st.cross_pads = (int *)malloc((size_t)st.num_rows * sizeof(int))))
        r = PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    pf__rope_reset(m);
#ifdef PF_TESTING
    if (!r) pf__testing_poison_logits(m);
#endif
    if (!r) r = pf__generation_prefill(&st);
    for (int finished = 0; !r && !finished;) {
        r = st.beams > 1 ? pf__generation_beam_step(&st, &finished) : pf__generation_sample_step(&st, &finished);
        int recompute = st.rows[0].length == pf__recompute_width(&m->config); /* all positions again */
        if (!r && !finished)
            r = pf__generate_step(m, st.rows, st.num_rows, recompute, st.ids, st.pads, st.cross_pads, st.source_width,
                                  pf__choose_on_devices(&st));
    }
    if (!r) r = pf__generation_results(&st, result);
    if (r) pf_generation_free(result);
    pf__generation_free(&st);
    free(starts), free(start_lengths);
    return r;
}

