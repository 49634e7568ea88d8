#include "internal.h"
/* ---- split patterns ---- */

/* L, N or S of a code point; 0 for the rest ("other": neither letter, number nor space). */
static unsigned pf__tok_lns(uint32_t cp) {
    return pf__unicode_class(cp) & (PF__UC_L | PF__UC_N | PF__UC_S);
}

/* The end of the run of units from j whose pf__tok_lns is `want`. */
static size_t pf__tok_run(const unsigned char *s, size_t j, size_t end, unsigned want) {
    uint32_t cp;
    size_t n;
    for (; j < end; j += n) {
        n = pf__utf8_decode(s + j, end - j, &cp);
        if (pf__tok_lns(cp) != want) break;
    }
    return j;
}

/* \s+(?!\S)|\s+ at s[i], a space: the run of spaces; when a non-space follows, the run less its
   last space (which then goes with what follows), or the single space when the run has one. */
static size_t pf__tok_match_spaces(const unsigned char *s, size_t i, size_t end) {
    uint32_t cp;
    size_t j, n, k = i; /* k: start of the run's last unit */
    for (j = i + pf__utf8_decode(s + i, end - i, &cp); j < end; j += n) {
        n = pf__utf8_decode(s + j, end - j, &cp);
        if (!(pf__unicode_class(cp) & PF__UC_S)) break;
        k = j;
    }
    if (j == end || k == i) return j;
    return k;
}

/* Matches GPT-2's regex at s[i] (i < end) and returns the end of the match:
   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
   The alternatives are tried in order, as a backtracking engine does. */
static size_t pf__tok_match_gpt2(const unsigned char *s, size_t i, size_t end) {
    uint32_t cp;
    size_t j, n;
    unsigned cls;
    if (s[i] == '\'' && i + 1 < end) {
        unsigned char a = s[i + 1], b = i + 2 < end ? s[i + 2] : 0;
        if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
        if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
    }
    /* ' ?X+' with X one of \p{L}, \p{N}, [^\s\p{L}\p{N}]: the optional space is U+0020 only */
    j = s[i] == ' ' && i + 1 < end ? i + 1 : i;
    n = pf__utf8_decode(s + j, end - j, &cp);
    cls = pf__tok_lns(cp);
    if (!(cls & PF__UC_S)) return pf__tok_run(s, j + n, end, cls); /* 0 is the "other" class */
    return pf__tok_match_spaces(s, i, end); /* a space then a space: no ' ?X+' matches */
}

/* Folds an ASCII letter to lower case (other bytes unchanged). */
static unsigned char pf__tok_fold(unsigned char c) {
    return c >= 'A' && c <= 'Z' ? (unsigned char)(c + 32) : c;
}

/* Matches LLaMA-3's regex (max_digits 3) or Qwen2's (max_digits 1) at s[i] (i < end):
   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|
   \s*[\r\n]+|\s+(?!\S)|\s+ */
static size_t pf__tok_match_llama3(const unsigned char *s, size_t i, size_t end, int max_digits) {
    uint32_t cp, cp2;
    size_t j, n, n2, last_nl;
    unsigned cls;
    int digits;
    if (s[i] == '\'' && i + 1 < end) { /* case-insensitive: Oniguruma folds U+017F (long s) to s */
        unsigned char a = pf__tok_fold(s[i + 1]), b = i + 2 < end ? pf__tok_fold(s[i + 2]) : 0;
        if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
        if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
        if (a == 0xC5 && i + 2 < end && s[i + 2] == 0xBF) return i + 3;
    }
    n = pf__utf8_decode(s + i, end - i, &cp);
    cls = pf__tok_lns(cp);
    /* [^\r\n\p{L}\p{N}]?\p{L}+ */
    if (!(cls & (PF__UC_L | PF__UC_N)) && cp != '\r' && cp != '\n' && i + n < end) {
        n2 = pf__utf8_decode(s + i + n, end - i - n, &cp2);
        if (pf__tok_lns(cp2) == PF__UC_L) return pf__tok_run(s, i + n + n2, end, PF__UC_L);
    }
    if (cls == PF__UC_L) return pf__tok_run(s, i + n, end, PF__UC_L);
    if (cls == PF__UC_N) { /* \p{N}{1,max_digits} */
        for (j = i + n, digits = 1; j < end && digits < max_digits; j += n, digits++) {
            n = pf__utf8_decode(s + j, end - j, &cp);
            if (pf__tok_lns(cp) != PF__UC_N) break;
        }
        return j;
    }
    /* ' ?[^\s\p{L}\p{N}]+[\r\n]*' */
    j = i;
    if (cp == ' ' && i + 1 < end) {
        n2 = pf__utf8_decode(s + i + 1, end - i - 1, &cp2);
        if (pf__tok_lns(cp2) == 0) j = i + 1;
    }
    if (j > i || cls == 0) {
        j = pf__tok_run(s, j, end, 0);
        while (j < end && (s[j] == '\r' || s[j] == '\n')) j++;
        return j;
    }
    /* a space: \s*[\r\n]+ takes the run of spaces up to its last \r or \n, if it has one */
    last_nl = i;
    for (j = i; j < end; j += n) {
        n = pf__utf8_decode(s + j, end - j, &cp);
        if (!(pf__unicode_class(cp) & PF__UC_S)) break;
        if (cp == '\r' || cp == '\n') last_nl = j + 1;
    }
    if (last_nl > i) return last_nl;
    return pf__tok_match_spaces(s, i, end);
}

/* BLOOM's excluded characters: ( | ) \s . , ! ? … 。 ， 、 । ۔ ، */
static int pf__tok_bloom_excluded(uint32_t cp) {
    switch (cp) {
    case '(': case ')': case '|': case '.': case ',': case '!': case '?':
    case 0x2026: case 0x3002: case 0xFF0C: case 0x3001: case 0x0964: case 0x06D4: case 0x060C:
        return 1;
    }
    return (pf__unicode_class(cp) & PF__UC_S) != 0;
}

/* BLOOM's regex at s[i]:  ?[^(\s|[.,!?…。，、।۔،])]+ ; returns i when it does not match there. */
static size_t pf__tok_match_bloom(const unsigned char *s, size_t i, size_t end) {
    uint32_t cp;
    size_t j = i, start, n;
    if (s[i] == ' ' && i + 1 < end) {
        pf__utf8_decode(s + i + 1, end - i - 1, &cp);
        if (!pf__tok_bloom_excluded(cp)) j = i + 1;
    }
    for (start = j; j < end; j += n) {
        n = pf__utf8_decode(s + j, end - j, &cp);
        if (pf__tok_bloom_excluded(cp)) break;
    }
    return j > start ? j : i;
}

/* \s of the pattern \S+\n?: HF's (the regex module's), or, PF__PAT_WORD_NL_PY, Python re's. */
static int pf__tok_word_space(pf__tok_pattern pattern, uint32_t cp) {
    return pattern == PF__PAT_WORD_NL_PY ? pf__py_space(cp) : (pf__unicode_class(cp) & PF__UC_S) != 0;
}

/* The leftmost match of a split pattern in s[i .. end) (i < end): 1 and its bounds, or 0. */
static int pf__tok_find(const pf__tok_pre *p, const unsigned char *s, size_t i, size_t end, size_t *ms, size_t *me) {
    uint32_t cp;
    size_t n, j;
    switch (p->pattern) {
    case PF__PAT_GPT2:
        *ms = i;
        *me = pf__tok_match_gpt2(s, i, end);
        return 1;
    case PF__PAT_LLAMA3:
    case PF__PAT_QWEN2:
        *ms = i;
        *me = pf__tok_match_llama3(s, i, end, p->pattern == PF__PAT_LLAMA3 ? 3 : 1);
        return 1;
    case PF__PAT_BLOOM:
        for (; i < end; i += pf__utf8_decode(s + i, end - i, &cp)) {
            j = pf__tok_match_bloom(s, i, end);
            if (j > i) {
                *ms = i;
                *me = j;
                return 1;
            }
        }
        return 0;
    case PF__PAT_WORD_NL: /* \S+\n? */
    case PF__PAT_WORD_NL_PY:
        for (; i < end; i += n) {
            n = pf__utf8_decode(s + i, end - i, &cp);
            if (!pf__tok_word_space(p->pattern, cp)) break;
        }
        if (i == end) return 0;
        for (j = i; j < end; j += n) {
            n = pf__utf8_decode(s + j, end - j, &cp);
            if (pf__tok_word_space(p->pattern, cp)) break;
        }
        if (j < end && s[j] == '\n') j++;
        *ms = i;
        *me = j;
        return 1;
    case PF__PAT_LITERAL:
        for (; i + p->lit_len <= end; i++)
            if (s[i] == (unsigned char)p->lit[0] && !memcmp(s + i, p->lit, p->lit_len)) {
                *ms = i;
                *me = i + p->lit_len;
                return 1;
            }
        return 0;
    case PF__PAT_FLAGS:
        for (; i < end; i += n) {
            n = pf__utf8_decode(s + i, end - i, &cp);
            if (pf__unicode_class(cp) & p->flags) {
                *ms = i;
                *me = i + n;
                return 1;
            }
        }
        return 0;
    }
    return 0;
}

/* Splits s[0 .. len) on the pattern of p as HF's NormalizedString::split with p's behavior (and
   invert), and passes each non-empty piece on to stage `next`. */
static int pf__tok_split(pf__tok_ctx *c, const pf__tok_pre *p, int next, const unsigned char *s, size_t len,
                         int first) {
    size_t i = 0, ms = 0, me = 0, ps = 0, pe = 0;
    int found = 0, have = 0, prev_match = 0, mergeable = 0;
    if (len == 0) return 0;
    found = pf__tok_find(p, s, 0, len, &ms, &me);
    while (i < len) {
        size_t ss = i, se;
        int is_match, emit_alone;
        if (found && ms == i) {
            se = me;
            is_match = 1;
            found = se < len && pf__tok_find(p, s, se, len, &ms, &me);
        } else {
            se = found ? ms : len;
            is_match = 0;
        }
        i = se;
        if (p->invert) is_match = !is_match;
        switch (p->behavior) {
        case PF__SPLIT_REMOVED:
            if (!is_match && pf__tok_pre_run(c, next, s + ss, se - ss, first && ss == 0)) return -1;
            continue;
        case PF__SPLIT_ISOLATED:
            if (pf__tok_pre_run(c, next, s + ss, se - ss, first && ss == 0)) return -1;
            continue;
        case PF__SPLIT_MERGED_PREVIOUS:
            emit_alone = !(have && is_match && !prev_match);
            break;
        case PF__SPLIT_MERGED_NEXT:
            emit_alone = !(have && mergeable && !is_match);
            break;
        default: /* PF__SPLIT_CONTIGUOUS */
            emit_alone = !(have && is_match == prev_match);
            break;
        }
        prev_match = is_match;
        if (!emit_alone) {
            pe = se;
            mergeable = 0;
            continue;
        }
        if (have && pf__tok_pre_run(c, next, s + ps, pe - ps, first && ps == 0)) return -1;
        have = 1;
        ps = ss;
        pe = se;
        mergeable = is_match;
    }
    if (have && pf__tok_pre_run(c, next, s + ps, pe - ps, first && ps == 0)) return -1;
    return 0;
}

/* Pre-tokenizer stage `stage` on a piece; past the last stage, the model. `first`: the piece
   starts where the original text does (Metaspace's prepend_scheme "first"). */
PF_PRIVATE int pf__tok_pre_run(pf__tok_ctx *c, int stage, const unsigned char *s, size_t len, int first) {
    const pf_tokenizer *t = c->t;
    const pf__tok_pre *p;
    pf__tok_buf *b;
    if (len == 0) return 0;
    if (stage == t->num_pres) return pf__tok_model(c, s, len);
    p = &t->pres[stage];
    b = &c->pre[stage];
    switch (p->kind) {
    case PF__PRE_SPLIT:
        return pf__tok_split(c, p, stage + 1, s, len, first);
    case PF__PRE_MOSES: /* the Python classes' word splits: each word (no spaces in one) on */
    case PF__PRE_BASIC_JA: {
        pf__tok_buf *words;
        size_t i, start = 0;
        if (p->kind == PF__PRE_MOSES ? pf__moses_words(c, s, len, &words) : pf__bj_words(c, s, len, p->lower, &words))
            return -1;
        for (i = 0; i <= words->len; i++) {
            if (i < words->len && words->p[i] != ' ') continue;
            if (i > start && pf__tok_pre_run(c, stage + 1, words->p + start, i - start, 0)) return -1;
            start = i + 1;
        }
        return 0;
    }
    case PF__PRE_PREFIX_SPACE: /* ByteLevel's add_prefix_space, on every piece */
        if (s[0] == ' ') return pf__tok_pre_run(c, stage + 1, s, len, first);
        b->len = 0;
        if (pf__buf_put(b, " ", 1) || pf__buf_put(b, s, len)) return -1;
        return pf__tok_pre_run(c, stage + 1, b->p, b->len, first);
    case PF__PRE_METASPACE: {
        /* spaces become the replacement, which is prepended (always, or to the first piece)
           unless the piece starts with it; then split before each replacement */
        pf__tok_pre split;
        b->len = 0;
        if ((p->prepend == PF__PREPEND_ALWAYS || (p->prepend == PF__PREPEND_FIRST && first)) && s[0] != ' ' &&
            !(len >= p->lit_len && !memcmp(s, p->lit, p->lit_len)) && pf__buf_put(b, p->lit, p->lit_len))
            return -1;
        if (pf__buf_replace(b, s, len, " ", 1, p->lit, p->lit_len)) return -1;
        if (!p->split) return pf__tok_pre_run(c, stage + 1, b->p, b->len, first);
        split = *p;
        split.kind = PF__PRE_SPLIT;
        split.pattern = PF__PAT_LITERAL;
        split.behavior = PF__SPLIT_MERGED_NEXT;
        split.invert = 0;
        return pf__tok_split(c, &split, stage + 1, b->p, b->len, first);
    }
    }
    return -1;
}

/* ---- added tokens ---- */

/* c->added_at[pass][p - lo]: the longest added token of `pass` at s[p] within s[lo .. hi) (of equal
   ones the first added), or -1; for every p at once, reading s backwards through the automaton of
   the reversed matches: its state at p is the longest string from p that ends a match, whose
   longest match in turn is its out value. Linear in hi - lo, whatever the tokens. */
static int pf__tok_added_matches(pf__tok_ctx *c, int pass, const unsigned char *s, size_t lo, size_t hi) {
    const pf__trie *tr = &c->t->added_ac[pass];
    uint32_t state = 0, w;
    size_t p;
    if (pf__tok_grow((void **)&c->added_at[pass], &c->added_at_cap[pass], hi - lo, sizeof *c->added_at[pass])) return -1;
    for (p = hi; p-- > lo;) {
        while (!(w = pf__trie_child(tr, state, s[p])) && state) state = tr->fail[state];
        state = w;
        c->added_at[pass][p - lo] = tr->out[state];
    }
    return 0;
}

static int pf__tok_encode_added(pf__tok_ctx *c, int pass, const unsigned char *s, size_t lo, size_t hi, int first);

/* A piece of the raw text between added tokens: normalized, then its normalized added tokens. */
static int pf__tok_encode_segment(pf__tok_ctx *c, const unsigned char *s, size_t lo, size_t hi) {
    const unsigned char *n;
    size_t len;
    int first = lo == 0;
    if (c->t->spm_marian && hi - lo > 2 && s[lo] == '>' && s[lo + 1] == '>') {
        /* Marian's remove_language_code: a piece that starts with ">>xx<<" has that as its first token */
        size_t e;
        for (e = lo + 2; e + 1 < hi && (s[e] != '<' || s[e + 1] != '<'); e++) {}
        if (e + 1 < hi) {
            pf__tok_emit(c, pf__tok_spm_lookup(c->t, s + lo, e + 2 - lo));
            if ((lo = e + 2) == hi) return 0;
        }
    }
    if (c->t->num_norms == 0) return pf__tok_encode_added(c, 1, s, lo, hi, first);
    if (pf__tok_normalize(c, s + lo, hi - lo, &n, &len, &first)) return -1;
    return pf__tok_encode_added(c, 1, n, 0, len, first);
}

/* Splits s[lo .. hi) on the added tokens of `pass` (HF's AddedVocabulary::find_matches): the
   pieces between go on to normalization (pass 0) or to the pre-tokenizer (pass 1). */
static int pf__tok_encode_added(pf__tok_ctx *c, int pass, const unsigned char *s, size_t lo, size_t hi, int first) {
    const pf_tokenizer *t = c->t;
    size_t p = lo, done = lo, len;
    uint32_t cp;
    if (lo == hi) return 0;
    if (t->added_ac[pass].num_nodes <= 1) {
        if (pass == 0) return pf__tok_encode_segment(c, s, lo, hi);
        return pf__tok_pre_run(c, 0, s + lo, hi - lo, first);
    }
    if (pf__tok_added_matches(c, pass, s, lo, hi)) return -1;
    while (p < hi) {
        int32_t k = c->added_at[pass][p - lo];
        const pf__tok_added *a = k >= 0 ? &t->added[k] : NULL;
        size_t start = p, stop;
        if (!a) {
            p++;
            continue;
        }
        stop = p + a->match_len;
        p = stop;
        /* single_word: no word character (\w) may touch it; a rejected match is skipped whole,
           as by HF's non-overlapping match iterator */
        if (a->single_word) {
            if (start > lo && (pf__unicode_class(pf__utf8_decode_before(s, lo, start, &len)) & PF__UC_W))
                continue;
            if (stop < hi) {
                pf__utf8_decode(s + stop, hi - stop, &cp);
                if (pf__unicode_class(cp) & PF__UC_W) continue;
            }
        }
        if (a->lstrip) /* takes the spaces before it, down to the previous match */
            while (start > done &&
                   (pf__unicode_class(pf__utf8_decode_before(s, done, start, &len)) & PF__UC_S))
                start -= len;
        if (a->rstrip) /* and the spaces after it */
            while (stop < hi) {
                len = pf__utf8_decode(s + stop, hi - stop, &cp);
                if (!(pf__unicode_class(cp) & PF__UC_S)) break;
                stop += len;
            }
        if (done < start) {
            if (pass == 0 ? pf__tok_encode_segment(c, s, done, start)
                          : pf__tok_pre_run(c, 0, s + done, start - done, first && done == lo))
                return -1;
        }
        pf__tok_emit(c, a->id);
        done = p = stop;
    }
    if (done < hi)
        return pass == 0 ? pf__tok_encode_segment(c, s, done, hi) : pf__tok_pre_run(c, 0, s + done, hi - done, first && done == lo);
    return 0;
}

pf_tokenize_options pf_tokenize_options_init(void) {
    pf_tokenize_options o;
    memset(&o, 0, sizeof o);
    o.truncation = PF_TRUNCATION_LONGEST_FIRST;
    return o;
}

/* Cuts the encoded texts (*na ids, and *nb of the pair) to max_length ids in all, as HF's
   truncate_encodings; -1 where HF fails (the text to cut is too short, or there is no pair). */
static int pf__tok_truncate(size_t max_length, pf_truncation strategy, int pair, size_t *na, size_t *nb) {
    size_t total = *na + (pair ? *nb : 0), n1, n2, *target;
    if (max_length == 0) { /* HF empties both, whatever the strategy */
        *na = *nb = 0;
        return 0;
    }
    if (total <= max_length) return 0;
    if (strategy == PF_TRUNCATION_LONGEST_FIRST) {
        if (!pair) {
            *na = max_length;
            return 0;
        }
        /* the shorter keeps its length when the longer can take the rest; else both get about half,
           the longer the odd one */
        n1 = *na < *nb ? *na : *nb;
        n2 = n1 > max_length ? n1 : (n1 > max_length - n1 ? n1 : max_length - n1);
        if (n1 + n2 > max_length) {
            n1 = max_length / 2;
            n2 = n1 + max_length % 2;
        }
        if (*na > *nb) {
            size_t swap = n1;
            n1 = n2;
            n2 = swap;
        }
        if (*na > n1) *na = n1;
        if (*nb > n2) *nb = n2;
        return 0;
    }
    if (strategy == PF_TRUNCATION_ONLY_SECOND && !pair) return -1;
    target = strategy == PF_TRUNCATION_ONLY_FIRST ? na : nb;
    if (*target <= total - max_length) return -1;
    *target -= total - max_length;
    return 0;
}

/* Encodes a text, or a pair (pair_text non-NULL), laid out by the post-processor's template
   (with its special tokens unless the options say not), after truncation. */
static pf_result pf__tok_encode(const pf_tokenizer *tokenizer, const char *text, size_t text_len, const char *pair_text,
                                size_t pair_len, const pf_tokenize_options *options, int32_t *ids, int32_t *type_ids,
                                size_t capacity, size_t *num_ids) {
    pf_tokenize_options o = options ? *options : pf_tokenize_options_init();
    pf__tok_ctx c;
    int rc = 0, pair = pair_text != NULL, special = !o.no_special_tokens;
    size_t k, n = 0, i, na = 0, nb = 0, b_start = 0;
    pf_result result = PF_OK;
    if (num_ids) *num_ids = 0;
    if (!tokenizer || !num_ids || (!text && text_len) || (!ids && capacity) ||
        (unsigned)o.truncation > PF_TRUNCATION_ONLY_SECOND)
        return PF_ERROR_INVALID_ARGUMENT;
    if (o.max_length && special && o.max_length < tokenizer->post_added[pair]) return PF_ERROR_INVALID_ARGUMENT;
    memset(&c, 0, sizeof c);
    c.t = tokenizer;
    rc = text_len ? pf__tok_encode_added(&c, 0, (const unsigned char *)text, 0, text_len, 1) : 0;
    na = b_start = c.count;
    if (!rc && pair && pair_len) rc = pf__tok_encode_added(&c, 0, (const unsigned char *)pair_text, 0, pair_len, 1);
    nb = c.count - b_start;
    if (rc || c.out_of_memory) result = PF_ERROR_OUT_OF_MEMORY;
    else if (c.needs_unk) result = PF_ERROR_INVALID_ARGUMENT;
    else if (o.max_length &&
             pf__tok_truncate(o.max_length - (special ? tokenizer->post_added[pair] : 0), o.truncation, pair, &na, &nb))
        result = PF_ERROR_INVALID_ARGUMENT;
    for (k = 0; result == PF_OK && k < tokenizer->post_len[pair]; k++) {
        const pf__tok_post_item *item = &tokenizer->post[pair][k];
        const int32_t *from = item->id == PF__TOK_SEQ_A || !c.ids ? c.ids : c.ids + b_start; /* no ids: NULL, no offset */
        size_t count = item->id >= 0 ? (size_t)special : item->id == PF__TOK_SEQ_A ? na : nb;
        if (tokenizer->eos_once && item->id >= 0 && k > 0 && tokenizer->post[pair][k - 1].id < 0) {
            const pf__tok_post_item *prev = &tokenizer->post[pair][k - 1];
            size_t prev_n = prev->id == PF__TOK_SEQ_A ? na : nb;
            const int32_t *prev_ids = prev->id == PF__TOK_SEQ_A ? c.ids : c.ids + b_start;
            if (prev_n && prev_ids[prev_n - 1] == item->id) count = 0;
        }
        for (i = 0; i < count; i++, n++) {
            if (n >= capacity) continue;
            ids[n] = item->id >= 0 ? item->id : from[i];
            if (type_ids) type_ids[n] = (int32_t)item->type_id;
        }
    }
    pf__tok_ctx_free(&c);
    if (result != PF_OK) return result;
    *num_ids = n;
    return n > capacity ? PF_ERROR_BUFFER_TOO_SMALL : PF_OK;
}

pf_result pf_tokenize(const pf_tokenizer *tokenizer, const char *text, size_t text_len, int32_t *ids,
                      size_t capacity, size_t *num_ids) {
    pf_tokenize_options o = pf_tokenize_options_init();
    o.no_special_tokens = 1;
    return pf__tok_encode(tokenizer, text, text_len, NULL, 0, &o, ids, NULL, capacity, num_ids);
}

pf_result pf_tokenize_special(const pf_tokenizer *tokenizer, const char *text, size_t text_len, int32_t *ids,
                              size_t capacity, size_t *num_ids) {
    return pf__tok_encode(tokenizer, text, text_len, NULL, 0, NULL, ids, NULL, capacity, num_ids);
}

pf_result pf_tokenize_pair(const pf_tokenizer *tokenizer, const char *text, size_t text_len, const char *pair,
                           size_t pair_len, const pf_tokenize_options *options, int32_t *ids, int32_t *type_ids,
                           size_t capacity, size_t *num_ids) {
    if (!pair && pair_len) {
        if (num_ids) *num_ids = 0;
        return PF_ERROR_INVALID_ARGUMENT;
    }
    return pf__tok_encode(tokenizer, text, text_len, pair, pair_len, options, ids, type_ids, capacity, num_ids);
}

/* ---- decoding ---- */

typedef struct pf__tok_list { /* a list of token strings */
    pf__tok_buf text;
    size_t *off, *len;
    size_t n, cap;
    pf__tok_buf scratch[2]; /* for steps that rewrite a token in several passes */
} pf__tok_list;

/* Ends the token that began at text offset `start`. */
static int pf__list_push(pf__tok_list *l, size_t start) {
    if (!l->text.p && pf__tok_grow((void **)&l->text.p, &l->text.cap, 1, 1)) return -1; /* never NULL then */
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        size_t *o = (size_t *)realloc(l->off, cap * sizeof *o), *n;
        if (!o) return -1;
        l->off = o;
        n = (size_t *)realloc(l->len, cap * sizeof *n);
        if (!n) return -1;
        l->len = n;
        l->cap = cap;
    }
    l->off[l->n] = start;
    l->len[l->n] = l->text.len - start;
    l->n++;
    return 0;
}

static void pf__list_free(pf__tok_list *l) {
    free(l->scratch[0].p);
    free(l->scratch[1].p);
    free(l->text.p);
    free(l->off);
    free(l->len);
}

/* ByteLevel: a token whose characters are all in the byte map becomes those bytes, another its
   own bytes. Appends to out. */
static int pf__tok_unbyte(const pf_tokenizer *t, pf__tok_buf *out, const unsigned char *s, size_t n) {
    size_t i, k, start = out->len;
    uint32_t cp;
    for (i = 0; i < n; i += k) {
        unsigned char b;
        k = pf__utf8_decode(s + i, n - i, &cp);
        if (cp >= 512 || t->char_byte[cp] < 0) {
            out->len = start;
            return pf__buf_put(out, s, n);
        }
        b = (unsigned char)t->char_byte[cp];
        if (pf__buf_put(out, &b, 1)) return -1;
    }
    return 0;
}

/* ByteFallback's test: "<0xXX>" (Rust's u8::from_str_radix on XX: a '+' sign is allowed). */
static int pf__tok_byte_token(const unsigned char *s, size_t n) {
    int hi, lo;
    if (n != 6 || memcmp(s, "<0x", 3) || s[5] != '>') return -1;
    lo = s[4] >= '0' && s[4] <= '9' ? s[4] - '0' : (s[4] | 0x20) >= 'a' && (s[4] | 0x20) <= 'f' ? (s[4] | 0x20) - 'a' + 10 : -1;
    if (s[3] == '+') return lo;
    hi = s[3] >= '0' && s[3] <= '9' ? s[3] - '0' : (s[3] | 0x20) >= 'a' && (s[3] | 0x20) <= 'f' ? (s[3] | 0x20) - 'a' + 10 : -1;
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

/* The WordPiece decoder's cleanup of a token (HF's decoders::wordpiece::cleanup): spaces before
   punctuation and contractions go, one replacement after the other; rewrites out->text from
   `start` on. */
static int pf__tok_wordpiece_cleanup(pf__tok_list *out, size_t start, int do_not) {
    static const char *const rules[][2] = {
        {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"}, {" n't", "n't"}, {" 'm", "'m"},
        {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
    size_t r;
    pf__tok_buf *from = &out->scratch[0], *to = &out->scratch[1], *swap;
    from->len = 0;
    if (pf__buf_put(from, out->text.p + start, out->text.len - start)) return -1;
    for (r = 0; r < PF__TOK_LEN(rules); r++) {
        if (r == 7 && !do_not) continue; /* transformers' clean_up_tokenization has no " do not" */
        to->len = 0;
        if (pf__buf_replace(to, from->p, from->len, rules[r][0], strlen(rules[r][0]), rules[r][1], strlen(rules[r][1])))
            return -1;
        swap = from;
        from = to;
        to = swap;
    }
    out->text.len = start;
    return pf__buf_put(&out->text, from->p, from->len);
}

/* Is s[0 .. n) the text of a special added token (transformers' all_special_tokens)? */
static int pf__tok_special_text(const pf_tokenizer *t, const unsigned char *s, size_t n) {
    const pf__tok_added *a = pf__tok_added_find(t, (const char *)s, n);
    return a && a->special;
}

/* SentencePiece's Decode of pieces in[from .. to) with the model sp, appended to out: a control
   piece is nothing, <unk> its unk_surface, a piece it does not know itself; otherwise U+2581 is a
   space, and while nothing is written yet a piece loses the one it starts with (with
   add_dummy_prefix or remove_extra_whitespaces; the latter for every such piece). */
static int pf__spm_decode(const pf_tokenizer *sp, const pf__tok_list *in, size_t from, size_t to, pf__tok_buf *out) {
    size_t i, start = out->len;
    int bos_ws_seen = 0, is_bos_ws = 1;
    for (i = from; i < to; i++) {
        const unsigned char *s = in->text.p + in->off[i];
        size_t n = in->len[i];
        int32_t id = n ? pf__tok_vocab_find(sp, (const char *)s, n) : -1;
        int type = id >= 0 ? sp->spm_types[id] : PF__SPM_UNKNOWN;
        if (bos_ws_seen || out->len > start) is_bos_ws = 0;
        bos_ws_seen = 0;
        if (type == PF__SPM_CONTROL) continue;
        if (type == PF__SPM_UNKNOWN) {
            int is_unk = id >= 0 && id == sp->unk_id;
            if (is_unk ? pf__buf_put(out, sp->spm_unk_surface, sp->spm_unk_surface_len) : pf__buf_put(out, s, n)) return -1;
            continue;
        }
        if (is_bos_ws && (sp->spm_flags & (PF__SPM_DUMMY_PREFIX | PF__SPM_REMOVE_SPACES)) && n >= 3 &&
            !memcmp(s, "\xE2\x96\x81", 3)) {
            s += 3;
            n -= 3;
            bos_ws_seen = !(sp->spm_flags & PF__SPM_REMOVE_SPACES);
        }
        if (pf__buf_replace(out, s, n, "\xE2\x96\x81", 3, " ", 1)) return -1;
    }
    return 0;
}

/* Python's str.isspace for one code point (what str.strip() removes). */
PF_PRIVATE int pf__py_space(uint32_t cp) {
    return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

/* Python's str.strip() of b, in place. */
static void pf__py_strip(pf__tok_buf *b) {
    size_t lo = 0, hi, k;
    uint32_t cp;
    for (hi = b->len; lo < hi; lo += k) {
        k = pf__utf8_decode(b->p + lo, hi - lo, &cp);
        if (!pf__py_space(cp)) break;
    }
    while (hi > lo) {
        size_t m = hi - 1;
        while (m > lo && (b->p[m] & 0xC0) == 0x80) m--;
        if (pf__utf8_decode(b->p + m, hi - m, &cp) != hi - m || !pf__py_space(cp)) break;
        hi = m;
    }
    if (lo) memmove(b->p, b->p + lo, hi - lo);
    b->len = hi - lo;
}

/* Marian's, M2M100's and Speech2Text's convert_tokens_to_string: the runs between special tokens
   decoded by SentencePiece (Speech2Text's do_upper_case: upper-cased), each special token as it is
   (Marian: and a space); Marian then turns U+2581 into spaces; the whole stripped as Python's
   str.strip() (clean_up_tokenization_spaces comes after the decoders, in pf_detokenize). One token. */
static int pf__tok_dec_spm(const pf_tokenizer *t, const pf__tok_list *in, pf__tok_list *out) {
    pf__tok_buf *b = &out->text;
    size_t i, from = 0;
    for (i = 0; i <= in->n; i++) {
        const unsigned char *s = i < in->n ? in->text.p + in->off[i] : NULL;
        size_t run = b->len;
        if (i < in->n && !pf__tok_special_text(t, s, in->len[i])) continue;
        if (pf__spm_decode(t->spm, in, from, i, b)) return -1;
        for (; t->spm_upper && run < b->len; run++)
            if (b->p[run] >= 'a' && b->p[run] <= 'z') b->p[run] = (unsigned char)(b->p[run] - ('a' - 'A'));
        if (i < in->n && (pf__buf_put(b, s, in->len[i]) || (t->spm_marian && pf__buf_put(b, " ", 1)))) return -1;
        from = i + 1;
    }
    if (t->spm_marian) {
        pf__tok_buf *tmp = &out->scratch[0];
        tmp->len = 0;
        if (pf__buf_replace(tmp, b->p, b->len, "\xE2\x96\x81", 3, " ", 1)) return -1;
        b->len = 0;
        if (pf__buf_put(b, tmp->p, tmp->len)) return -1;
    }
    pf__py_strip(b);
    return pf__list_push(out, 0);
}

/* The Python BPE classes' convert_tokens_to_string: " ".join(tokens).replace("@@ ", "").strip(). One token. */
static int pf__tok_dec_word_bpe(const pf__tok_list *in, pf__tok_list *out) {
    pf__tok_buf *joined = &out->scratch[0];
    size_t i;
    joined->len = 0;
    for (i = 0; i < in->n; i++)
        if ((i > 0 && pf__buf_put(joined, " ", 1)) || pf__buf_put(joined, in->text.p + in->off[i], in->len[i])) return -1;
    if (pf__buf_replace(&out->text, joined->p, joined->len, "@@ ", 3, "", 0)) return -1;
    pf__py_strip(&out->text);
    return pf__list_push(out, 0);
}

/* BertJapanese's convert_tokens_to_string: " ".join(tokens).replace(" ##", "").strip(). One token. */
static int pf__tok_dec_joined_wordpiece(const pf__tok_list *in, pf__tok_list *out) {
    pf__tok_buf *joined = &out->scratch[0];
    size_t i;
    joined->len = 0;
    for (i = 0; i < in->n; i++)
        if ((i > 0 && pf__buf_put(joined, " ", 1)) || pf__buf_put(joined, in->text.p + in->off[i], in->len[i])) return -1;
    if (pf__buf_replace(&out->text, joined->p, joined->len, " ##", 3, "", 0)) return -1;
    pf__py_strip(&out->text);
    return pf__list_push(out, 0);
}

/* XLM's and FlauBERT's convert_tokens_to_string: "".join(tokens).replace("</w>", " ").strip(). One token. */
static int pf__tok_dec_suffix_bpe(const pf__tok_list *in, pf__tok_list *out) {
    pf__tok_buf *joined = &out->scratch[0];
    size_t i;
    joined->len = 0;
    for (i = 0; i < in->n; i++)
        if (pf__buf_put(joined, in->text.p + in->off[i], in->len[i])) return -1;
    if (pf__buf_replace(&out->text, joined->p, joined->len, "</w>", 4, " ", 1)) return -1;
    pf__py_strip(&out->text);
    return pf__list_push(out, 0);
}

/* One decoder step: the tokens of `in` -> `out` (emptied first). */
static int pf__tok_dec_step(const pf_tokenizer *t, const pf__tok_dec *d, const pf__tok_list *in, pf__tok_list *out) {
    size_t i, start = 0, run = (size_t)-1;
    out->text.len = 0;
    out->n = 0;
    if (d->kind == PF__DEC_SPM) return pf__tok_dec_spm(t, in, out);
    if (d->kind == PF__DEC_WORD_BPE) return pf__tok_dec_word_bpe(in, out);
    if (d->kind == PF__DEC_SUFFIX_BPE) return pf__tok_dec_suffix_bpe(in, out);
    if (d->kind == PF__DEC_JOINED_WORDPIECE) return pf__tok_dec_joined_wordpiece(in, out);
    for (i = 0; i < in->n; i++) {
        const unsigned char *s = in->text.p + in->off[i];
        size_t n = in->len[i], j, k;
        uint32_t cp;
        switch (d->kind) {
        case PF__DEC_SPM: /* whole, above */
        case PF__DEC_WORD_BPE:
        case PF__DEC_SUFFIX_BPE:
        case PF__DEC_JOINED_WORDPIECE:
            continue;
        case PF__DEC_BYTELEVEL: /* one token in the end */
        case PF__DEC_FUSE:
        case PF__DEC_UTF8_IGNORE:
            if (d->kind == PF__DEC_BYTELEVEL ? pf__tok_unbyte(t, &out->text, s, n) : pf__buf_put(&out->text, s, n))
                return -1;
            continue;
        case PF__DEC_BYTEFALLBACK: {
            int b = pf__tok_byte_token(s, n);
            if (b >= 0) { /* a run of byte tokens is one token */
                unsigned char c = (unsigned char)b;
                if (run == (size_t)-1) run = out->text.len;
                if (pf__buf_put(&out->text, &c, 1)) return -1;
                continue;
            }
            if (run != (size_t)-1 && pf__list_push(out, run)) return -1;
            run = (size_t)-1;
            start = out->text.len;
            if (pf__buf_put(&out->text, s, n)) return -1;
            break;
        }
        case PF__DEC_REPLACE:
            start = out->text.len;
            if (pf__buf_replace(&out->text, s, n, d->a, d->a_len, d->b, d->b_len)) return -1;
            break;
        case PF__DEC_BPE:
            start = out->text.len;
            if (pf__buf_replace(&out->text, s, n, d->a, d->a_len, i + 1 == in->n ? "" : " ", i + 1 == in->n ? 0 : 1))
                return -1;
            break;
        case PF__DEC_METASPACE: /* the replacement becomes a space; in the first token it goes */
            start = out->text.len;
            for (j = 0; j < n; j += k) {
                k = pf__utf8_decode(s + j, n - j, &cp);
                if (k == d->a_len && !memcmp(s + j, d->a, k)) {
                    if (i == 0 && d->prepend != PF__PREPEND_NEVER) continue;
                    if (pf__buf_put(&out->text, " ", 1)) return -1;
                } else if (pf__buf_put(&out->text, s + j, k)) {
                    return -1;
                }
            }
            break;
        case PF__DEC_WORDPIECE: /* a token after the first loses the prefix, or gets a space before it */
            start = out->text.len;
            if (i > 0 && n >= d->a_len && !memcmp(s, d->a, d->a_len)) {
                if (pf__buf_put(&out->text, s + d->a_len, n - d->a_len)) return -1;
            } else if ((i > 0 && pf__buf_put(&out->text, " ", 1)) || pf__buf_put(&out->text, s, n)) {
                return -1;
            }
            if (d->cleanup && pf__tok_wordpiece_cleanup(out, start, 1)) return -1;
            break;
        case PF__DEC_STRIP: { /* up to `start` of the character at the start, `stop` at the end */
            size_t lo = 0, hi = n, m;
            for (m = 0; m < d->start && lo < n && n - lo >= d->a_len && !memcmp(s + lo, d->a, d->a_len); m++)
                lo += d->a_len;
            for (m = 0; m < d->stop && hi > lo && hi - lo >= d->a_len && !memcmp(s + hi - d->a_len, d->a, d->a_len); m++)
                hi -= d->a_len;
            start = out->text.len;
            if (pf__buf_put(&out->text, s + lo, hi - lo)) return -1;
            break;
        }
        }
        if (pf__list_push(out, start)) return -1;
    }
    if (d->kind == PF__DEC_UTF8_IGNORE) { /* as Python's bytes.decode("utf-8", errors="ignore") */
        size_t j, k, kept = 0;
        uint32_t cp;
        for (j = 0; j < out->text.len; j += k) {
            k = pf__utf8_decode(out->text.p + j, out->text.len - j, &cp);
            if (cp == PF__UTF8_INVALID) continue;
            memmove(out->text.p + kept, out->text.p + j, k);
            kept += k;
        }
        out->text.len = kept;
    }
    if (d->kind == PF__DEC_BYTELEVEL || d->kind == PF__DEC_FUSE || d->kind == PF__DEC_UTF8_IGNORE)
        return pf__list_push(out, 0);
    if (run != (size_t)-1 && pf__list_push(out, run)) return -1;
    return 0;
}

pf_result pf_detokenize(const pf_tokenizer *tokenizer, const int32_t *ids, size_t num_ids, char *text,
                        size_t capacity, size_t *text_len) {
    const pf_tokenizer *t = tokenizer;
    pf__tok_list lists[2];
    size_t i, n = 0;
    int cur = 0, k, rc = 0;
    if (text_len) *text_len = 0;
    if (!t || !text_len || (!ids && num_ids) || (!text && capacity)) return PF_ERROR_INVALID_ARGUMENT;
    for (i = 0; i < num_ids; i++)
        if (ids[i] < 0 || ids[i] >= t->num_ids || t->id_len[ids[i]] < 0) return PF_ERROR_INVALID_ARGUMENT;
    memset(lists, 0, sizeof lists);
    for (i = 0; i < num_ids && !rc; i++) { /* the tokens' strings; without a decoder, joined by spaces */
        size_t start = lists[0].text.len;
        rc = (!t->has_decoder && i > 0 && pf__buf_put(&lists[0].text, " ", 1)) ||
             pf__buf_put(&lists[0].text, t->id_str[ids[i]], (size_t)t->id_len[ids[i]]) || pf__list_push(&lists[0], start);
    }
    for (k = 0; k < t->num_decs && !rc; k++) {
        rc = pf__tok_dec_step(t, &t->decs[k], &lists[cur], &lists[1 - cur]);
        cur = 1 - cur;
    }
    if (!rc && t->cleanup_spaces) { /* transformers' clean_up_tokenization of the decoded text */
        pf__tok_list *l = &lists[cur];
        for (i = 1; i < l->n; i++) /* the tokens are contiguous in l->text: one token of them all */
            l->len[0] += l->len[i];
        l->n = l->n ? 1 : 0;
        rc = l->n && pf__tok_wordpiece_cleanup(l, l->off[0], 0);
        if (l->n) l->len[0] = l->text.len - l->off[0];
    }
    if (!rc) {
        for (i = 0; i < lists[cur].n; i++) {
            size_t len = lists[cur].len[i];
            if (n < capacity && len)
                memcpy(text + n, lists[cur].text.p + lists[cur].off[i], capacity - n < len ? capacity - n : len);
            n += len;
        }
    }
    pf__list_free(&lists[0]);
    pf__list_free(&lists[1]);
    if (rc) return PF_ERROR_OUT_OF_MEMORY;
    if (n < capacity) text[n] = 0;
    *text_len = n;
    return n > capacity ? PF_ERROR_BUFFER_TOO_SMALL : PF_OK;
}
