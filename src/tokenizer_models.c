#include "internal.h"
/* ---- the tokenizer ---- */

PF_PRIVATE const pf__tok_regex pf__tok_regexes[] = {
    {PF__PAT_GPT2, "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"},
    {PF__PAT_LLAMA3, "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
                     "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
    {PF__PAT_QWEN2, "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
                    "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
    {PF__PAT_BLOOM, " ?[^(\\s|[.,!?\xe2\x80\xa6\xe3\x80\x82\xef\xbc\x8c\xe3\x80\x81\xe0\xa5\xa4\xdb\x94\xd8\x8c])]+"},
    {PF__PAT_WORD_NL, "\\S+\\n?"},
};
PF_PRIVATE const size_t pf__tok_regexes_count = sizeof pf__tok_regexes / sizeof pf__tok_regexes[0]; /* for the files that see no size */

PF_PRIVATE const char *const pf__tok_behaviors[] = {"Removed", "Isolated", "MergedWithPrevious", "MergedWithNext",
                                                "Contiguous"};
PF_PRIVATE const size_t pf__tok_behaviors_count = sizeof pf__tok_behaviors / sizeof pf__tok_behaviors[0]; /* for the files that see no size */

void pf_tokenizer_free(pf_tokenizer *tokenizer) {
    size_t i;
    int k;
    if (!tokenizer) return;
    for (i = 0; i < tokenizer->num_added; i++) {
        free(tokenizer->added[i].content);
        free(tokenizer->added[i].match);
    }
    for (k = 0; k < tokenizer->num_norms; k++) {
        free(tokenizer->norms[k].a);
        free(tokenizer->norms[k].b);
        free(tokenizer->norms[k].units);
    }
    for (k = 0; k < tokenizer->num_pres; k++) free(tokenizer->pres[k].lit);
    for (k = 0; k < tokenizer->num_decs; k++) {
        free(tokenizer->decs[k].a);
        free(tokenizer->decs[k].b);
    }
    free(tokenizer->added);
    free(tokenizer->added_slots);
    free(tokenizer->added_of_id);
    pf__trie_free(&tokenizer->added_ac[0]);
    pf__trie_free(&tokenizer->added_ac[1]);
    free(tokenizer->vocab);
    free(tokenizer->vocab_text);
    free(tokenizer->merges);
    free(tokenizer->id_str);
    free(tokenizer->id_len);
    free(tokenizer->prefix);
    free(tokenizer->suffix);
    free(tokenizer->pieces);
    free(tokenizer->post[0]);
    free(tokenizer->post[1]);
    free(tokenizer->bos_token);
    free(tokenizer->eos_token);
    free(tokenizer->chat_template);
    free(tokenizer->chat_template_note);
    pf_tokenizer_free(tokenizer->spm);
    free(tokenizer->spm_ids);
    free(tokenizer->spm_types);
    free(tokenizer->spm_unk_surface);
    pf_tokenizer_free(tokenizer->word_bpe);
    free(tokenizer->py_cased);
    free(tokenizer);
}

int pf_tokenizer_vocab_size(const pf_tokenizer *tokenizer) {
    return tokenizer ? (int)tokenizer->num_ids : 0;
}

int32_t pf_tokenizer_bos_id(const pf_tokenizer *tokenizer) { return tokenizer ? tokenizer->bos_id : -1; }

int32_t pf_tokenizer_eos_id(const pf_tokenizer *tokenizer) { return tokenizer ? tokenizer->eos_id : -1; }

int pf_tokenizer_is_special(const pf_tokenizer *tokenizer, int32_t id) {
    if (!tokenizer || id < 0) return 0;
    if (id == tokenizer->bos_id || id == tokenizer->eos_id) return 1;
    if (!tokenizer->added_of_id || id >= tokenizer->num_ids || tokenizer->added_of_id[id] < 0) return 0;
    return tokenizer->added[tokenizer->added_of_id[id]].special;
}

/* FNV-1a, 32 bits. */
PF_PRIVATE uint32_t pf__tok_hash(const char *s, size_t len) {
    uint32_t h = 2166136261u;
    size_t i;
    for (i = 0; i < len; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

PF_PRIVATE size_t pf__tok_pow2_at_least(size_t n) {
    size_t c = 16;
    while (c < n) c *= 2;
    return c;
}

/* The vocab id of a token string whose pf__tok_hash is h, or -1. */
static int32_t pf__tok_vocab_find_hashed(const pf_tokenizer *t, const char *s, size_t len, uint32_t h) {
    size_t i = h & t->vocab_mask;
    if (!t->vocab) return -1;
    for (;; i = (i + 1) & t->vocab_mask) {
        const pf__tok_vocab_slot *slot = &t->vocab[i];
        if (slot->id < 0) return -1;
        if (slot->hash == h && slot->len == len && !memcmp(t->vocab_text + slot->offset, s, len))
            return slot->id;
    }
}

/* The vocab id of a token string, or -1. */
PF_PRIVATE int32_t pf__tok_vocab_find(const pf_tokenizer *t, const char *s, size_t len) {
    return pf__tok_vocab_find_hashed(t, s, len, pf__tok_hash(s, len));
}

/* The added token whose content is s[0 .. len), or NULL. */
PF_PRIVATE pf__tok_added *pf__tok_added_find(const pf_tokenizer *t, const char *s, size_t len) {
    uint32_t h = pf__tok_hash(s, len);
    size_t i;
    if (!t->added_slots) return NULL;
    for (i = h & t->added_mask; t->added_slots[i]; i = (i + 1) & t->added_mask) {
        pf__tok_added *a = &t->added[t->added_slots[i] - 1];
        if (a->hash == h && a->len == len && !memcmp(a->content, s, len)) return a;
    }
    return NULL;
}

int32_t pf_tokenizer_token_id(const pf_tokenizer *tokenizer, const char *token) {
    size_t len;
    const pf__tok_added *a;
    if (!tokenizer || !token) return -1;
    len = strlen(token);
    if ((a = pf__tok_added_find(tokenizer, token, len))) return a->id; /* an added token wins, as in HF's convert_tokens_to_ids */
    return len ? pf__tok_vocab_find(tokenizer, token, len) : -1;
}

PF_PRIVATE size_t pf__tok_pair_slot(uint64_t pair, size_t mask) {
    return (size_t)((pair * 0x9E3779B97F4A7C15ull) >> 32) & mask;
}

/* The merge of the pair (left, right), or NULL. */
static const pf__tok_merge_slot *pf__tok_merge_find(const pf_tokenizer *t, int32_t left, int32_t right) {
    uint64_t pair = (uint64_t)(uint32_t)left << 32 | (uint32_t)right;
    size_t i = pf__tok_pair_slot(pair, t->merges_mask);
    if (!t->merges) return NULL;
    for (;; i = (i + 1) & t->merges_mask) {
        const pf__tok_merge_slot *slot = &t->merges[i];
        if (slot->rank == UINT32_MAX) return NULL;
        if (slot->pair == pair) return slot;
    }
}

/* ---- byte tries ---- */

static unsigned char pf__trie_byte(const pf__trie_key *k, size_t d, int reversed) {
    return k->s[reversed ? k->len - 1 - d : d];
}

/* Keys in byte order (a prefix first), equal ones by value. */
static int pf__trie_key_cmp(const void *a, const void *b) {
    const pf__trie_key *x = (const pf__trie_key *)a, *y = (const pf__trie_key *)b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = n ? memcmp(x->s, y->s, n) : 0;
    if (c) return c;
    if (x->len != y->len) return x->len < y->len ? -1 : 1;
    return x->value < y->value ? -1 : x->value > y->value;
}

/* The same order for the keys read from their ends. */
static int pf__trie_key_cmp_reversed(const void *a, const void *b) {
    const pf__trie_key *x = (const pf__trie_key *)a, *y = (const pf__trie_key *)b;
    size_t n = x->len < y->len ? x->len : y->len, d;
    for (d = 0; d < n; d++) {
        unsigned char p = pf__trie_byte(x, d, 1), q = pf__trie_byte(y, d, 1);
        if (p != q) return p < q ? -1 : 1;
    }
    if (x->len != y->len) return x->len < y->len ? -1 : 1;
    return x->value < y->value ? -1 : x->value > y->value;
}

/* Builds the trie of keys[0 .. n) (sorted in place), read from their ends when reversed: once
   sorted, each node's keys are a range that their next byte splits into its children, so building
   is linear in the keys' total length. 0, or -1 when out of memory or past 2^32 nodes. */
PF_PRIVATE int pf__trie_build(pf__trie *tr, pf__trie_key *keys, size_t n, int reversed) {
    typedef struct { uint32_t lo, hi, depth; } span_t; /* a node's keys while it is built */
    span_t *span = NULL;
    size_t node_cap = 0, span_cap = 0, num = 1, head;
    memset(tr, 0, sizeof *tr);
    for (head = 0; head < n; head++)
        if (keys[head].len >= UINT32_MAX) return -1;
    if (n >= UINT32_MAX) return -1;
    if (n) qsort(keys, n, sizeof *keys, reversed ? pf__trie_key_cmp_reversed : pf__trie_key_cmp);
    if (pf__tok_grow((void **)&tr->nodes, &node_cap, 1, sizeof *tr->nodes) ||
        pf__tok_grow((void **)&span, &span_cap, 1, sizeof *span))
        goto fail;
    tr->nodes[0].byte = 0;
    tr->nodes[0].value = -1;
    span[0].lo = 0, span[0].hi = (uint32_t)n, span[0].depth = 0;
    for (head = 0; head < num; head++) {
        size_t lo = span[head].lo, hi = span[head].hi, d = span[head].depth;
        tr->nodes[head].first = (uint32_t)num;
        tr->nodes[head].count = 0;
        if (lo < hi && keys[lo].len == d) tr->nodes[head].value = keys[lo].value;
        while (lo < hi && keys[lo].len == d) lo++;
        while (lo < hi) {
            unsigned char b = pf__trie_byte(&keys[lo], d, reversed);
            size_t end = lo + 1;
            while (end < hi && pf__trie_byte(&keys[end], d, reversed) == b) end++;
            if (num >= UINT32_MAX || pf__tok_grow((void **)&span, &span_cap, num + 1, sizeof *span) ||
                pf__tok_grow((void **)&tr->nodes, &node_cap, num + 1, sizeof *tr->nodes))
                goto fail;
            tr->nodes[num].byte = b;
            tr->nodes[num].value = -1;
            span[num].lo = (uint32_t)lo, span[num].hi = (uint32_t)end, span[num].depth = (uint32_t)d + 1;
            num++;
            tr->nodes[head].count++;
            lo = end;
        }
    }
    free(span);
    tr->num_nodes = (uint32_t)num;
    if (num < node_cap) { /* what it grew beyond */
        pf__trie_node *fit = (pf__trie_node *)realloc(tr->nodes, num * sizeof *fit);
        if (fit) tr->nodes = fit;
    }
    return 0;
fail:
    free(span);
    pf__trie_free(tr);
    return -1;
}

/* The child of node by byte, or 0 (the root is no one's child). */
PF_PRIVATE uint32_t pf__trie_child(const pf__trie *tr, uint32_t node, unsigned char byte) {
    uint32_t lo = tr->nodes[node].first, end = lo + tr->nodes[node].count, hi = end;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (tr->nodes[mid].byte < byte) lo = mid + 1;
        else hi = mid;
    }
    return lo < end && tr->nodes[lo].byte == byte ? lo : 0;
}

/* The Aho-Corasick links: a node's suffix link from its parent's, in breadth-first order (a
   suffix is shallower, so its links are known). 0, or -1 when out of memory. */
PF_PRIVATE int pf__trie_link(pf__trie *tr) {
    uint32_t u, v;
    tr->fail = (uint32_t *)malloc(tr->num_nodes * sizeof *tr->fail);
    tr->out = (int32_t *)malloc(tr->num_nodes * sizeof *tr->out);
    if (!tr->fail || !tr->out) return -1;
    tr->fail[0] = 0;
    tr->out[0] = tr->nodes[0].value;
    for (u = 0; u < tr->num_nodes; u++)
        for (v = tr->nodes[u].first; v < tr->nodes[u].first + tr->nodes[u].count; v++) {
            uint32_t f = tr->fail[u], w = 0;
            while (u && !(w = pf__trie_child(tr, f, tr->nodes[v].byte)) && f) f = tr->fail[f];
            tr->fail[v] = w;
            tr->out[v] = tr->nodes[v].value >= 0 ? tr->nodes[v].value : tr->out[w];
        }
    return 0;
}

PF_PRIVATE void pf__trie_free(pf__trie *tr) {
    free(tr->nodes);
    free(tr->fail);
    free(tr->out);
    memset(tr, 0, sizeof *tr);
}

/* ---- encoding: scratch memory ---- */

PF_PRIVATE void pf__tok_ctx_free(pf__tok_ctx *c) {
    int k;
    free(c->ids);
    free(c->sym);
    free(c->heap);
    free(c->norm[0].p);
    free(c->norm[1].p);
    free(c->cps.p);
    free(c->cps_tmp.p);
    for (k = 0; k < PF__TOK_MAX_PRE; k++) free(c->pre[k].p);
    free(c->unit.p);
    free(c->mapped.p);
    free(c->word[0].p);
    free(c->word[1].p);
    free(c->moses[0].p);
    free(c->moses[1].p);
    free(c->lattice);
    free(c->path);
    free(c->added_at[0]);
    free(c->added_at[1]);
}

/* Appends an id; running out of memory is reported once the encoding ends. */
PF_PRIVATE void pf__tok_emit(pf__tok_ctx *c, int32_t id) {
    if (pf__tok_grow((void **)&c->ids, &c->ids_cap, c->count + 1, sizeof *c->ids)) {
        c->out_of_memory = 1;
        return;
    }
    c->ids[c->count++] = id;
}

/* The id of a token string as the slow tokenizers' convert_tokens_to_ids: an added token's, else
   the vocab's, else unk's. */
PF_PRIVATE int32_t pf__tok_spm_lookup(const pf_tokenizer *t, const unsigned char *s, size_t len) {
    const pf__tok_added *a = pf__tok_added_find(t, (const char *)s, len);
    int32_t id;
    if (a) return a->id;
    id = len ? pf__tok_vocab_find(t, (const char *)s, len) : -1;
    return id >= 0 ? id : t->unk_id;
}

/* Emits a model's piece: its id, or, for a SentencePiece model, the id its string has outside. */
static void pf__tok_emit_piece(pf__tok_ctx *c, int32_t id) {
    pf__tok_emit(c, c->outer ? c->outer->spm_ids[id] : id);
}

/* ---- normalizers ---- */

static int pf__tok_is_cjk(uint32_t cp) { /* BertNormalizer's is_chinese_char */
    return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
           (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
           (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

/* The replacement a Precompiled charsmap has for s[0 .. n): that of the shortest prefix of s it
   holds (HF's spm_precompiled takes the first of its common-prefix search: a longer key never
   wins), into *rep; 0 when it holds none. The search stops at a NUL byte. The trie is darts-clone's
   double array: a unit holds a label (bits 0-7, and 31 set in value units), a leaf flag (bit 8)
   and the offset of its children (bits 10-30, times 256 when bit 9 is set). */
static size_t pf__charsmap_offset(uint32_t unit) {
    return ((size_t)unit >> 10) << ((unit & (1u << 9)) >> 6);
}

static int pf__charsmap_find(const pf__tok_norm *nm, const unsigned char *s, size_t n, const char **rep, size_t *rep_len) {
    const uint32_t *u = nm->units;
    size_t pos = pf__charsmap_offset(u[0]), i, value, end;
    for (i = 0; i < n && s[i]; i++) {
        uint32_t unit;
        pos ^= s[i];
        if (pos >= nm->num_units || ((unit = u[pos]) & 0x800000FFu) != s[i]) return 0;
        pos ^= pf__charsmap_offset(unit);
        if (!(unit & (1u << 8))) continue;
        if (pos >= nm->num_units) return 0; /* a malformed trie (HF would panic) */
        value = u[pos] & 0x7FFFFFFFu;
        if (value > nm->b_len) value = nm->b_len; /* likewise */
        for (end = value; end < nm->b_len && nm->b[end]; end++) {}
        *rep = nm->b + value;
        *rep_len = end - value;
        return 1;
    }
    return 0;
}

/* SentencePiece's own charsmap lookup (its Normalizer::NormalizePrefix): the replacement of the
   longest key the charsmap holds at the start of s, into *rep; that key's length, 0 when none. */
static size_t pf__charsmap_longest(const pf__tok_norm *nm, const unsigned char *s, size_t n, const char **rep,
                                   size_t *rep_len) {
    const uint32_t *u = nm->units;
    size_t pos = pf__charsmap_offset(u[0]), i, value, end, best = 0;
    for (i = 0; i < n && s[i]; i++) {
        uint32_t unit;
        pos ^= s[i];
        if (pos >= nm->num_units || ((unit = u[pos]) & 0x800000FFu) != s[i]) break;
        pos ^= pf__charsmap_offset(unit);
        if (!(unit & (1u << 8))) continue;
        if (pos >= nm->num_units) break; /* a malformed trie */
        value = u[pos] & 0x7FFFFFFFu;
        if (value > nm->b_len) value = nm->b_len;
        for (end = value; end < nm->b_len && nm->b[end]; end++) {}
        *rep = nm->b + value;
        *rep_len = end - value;
        best = i + 1;
    }
    return best;
}

/* What SentencePiece's normalizer makes of the start of s: the charsmap's replacement, else the
   character itself, U+FFFD for a byte that is not UTF-8; *used: the bytes it takes. */
static void pf__spm_prefix(const pf__tok_norm *nm, const unsigned char *s, size_t n, const char **rep, size_t *rep_len,
                           size_t *used) {
    uint32_t cp;
    if (nm->units && (*used = pf__charsmap_longest(nm, s, n, rep, rep_len)) > 0) return;
    *used = pf__utf8_decode(s, n, &cp);
    *rep = cp == PF__UTF8_INVALID ? "\xEF\xBF\xBD" : (const char *)s;
    *rep_len = cp == PF__UTF8_INVALID ? 3 : *used;
}

/* SentencePiece's Normalizer::Normalize: each character through the charsmap; with
   remove_extra_whitespaces, the spaces at the start and end go and runs of them become one; with
   add_dummy_prefix, a space in front of a text that has anything left; with escape_whitespaces,
   spaces become U+2581. */
static int pf__tok_spm_normalize(const pf__tok_norm *nm, const unsigned char *s, size_t n, pf__tok_buf *out) {
    static const char meta[] = "\xE2\x96\x81";
    int remove = (nm->spm & PF__SPM_REMOVE_SPACES) != 0, escape = (nm->spm & PF__SPM_ESCAPE) != 0, prev_space;
    const char *space = escape ? meta : " ", *rep;
    size_t space_len = escape ? 3 : 1, rep_len, used, i = 0, k;
    out->len = 0;
    for (; remove && i < n; i += used) {
        pf__spm_prefix(nm, s + i, n - i, &rep, &rep_len, &used);
        if (rep_len != 1 || rep[0] != ' ') break;
    }
    if (i == n) return 0;
    if ((nm->spm & PF__SPM_DUMMY_PREFIX) && pf__buf_put(out, space, space_len)) return -1;
    for (prev_space = remove; i < n; i += used) {
        pf__spm_prefix(nm, s + i, n - i, &rep, &rep_len, &used);
        for (k = 0; prev_space && k < rep_len && rep[k] == ' '; k++) {}
        if (k < rep_len) {
            for (; k < rep_len; k++)
                if (rep[k] == ' ' ? pf__buf_put(out, space, space_len) : pf__buf_put(out, rep + k, 1)) return -1;
            prev_space = rep[rep_len - 1] == ' ';
        }
        prev_space = prev_space && remove;
    }
    while (remove && out->len >= space_len && !memcmp(out->p + out->len - space_len, space, space_len))
        out->len -= space_len;
    return 0;
}

/* The normalizer steps below write s[0 .. n) to out; *first is cleared when a step drops the
   first character (then the text no longer starts where the original did: Metaspace's
   prepend_scheme "first"). */

/* NFC, NFD, NFKC, NFKD and StripAccents: decomposed, reordered, and composed or stripped. */
static int pf__tok_norm_unicode(pf__tok_ctx *c, pf__tok_norm_kind kind, const unsigned char *s, size_t n,
                                pf__tok_buf *out, int *first) {
    if (pf__tok_is_ascii(s, n)) return pf__buf_put(out, s, n);
    pf__tok_cps *d = &c->cps;
    int compat = kind == PF__NORM_NFKC || kind == PF__NORM_NFKD, rc = 0;
    size_t k;
    uint32_t cp;
    c->cps_tmp.len = 0;
    d->len = 0;
    for (size_t i = 0; i < n; i += k) {
        k = pf__utf8_decode(s + i, n - i, &cp);
        if (compat && (rc = pf__nf_decompose_compat(d, cp)) != 0) {
            if (rc < 0) return -1;
            continue;
        }
        if (pf__nf_decompose(d, cp == PF__UTF8_INVALID ? PF__CP_RAW | s[i] : cp, 0)) return -1;
        if (i == 0 && kind == PF__NORM_STRIP_ACCENTS) { /* all of the first character dropped? */
            size_t j;
            for (j = 0; j < d->len && (pf__unicode_class(d->p[j]) & PF__UC_MN); j++) {}
            if (j == d->len) *first = 0;
        }
    }
    if (pf__nf_reorder(d, &c->cps_tmp)) return -1;
    if (kind == PF__NORM_NFC || kind == PF__NORM_NFKC) pf__nf_compose(d);
    if (kind == PF__NORM_STRIP_ACCENTS) {
        size_t m = 0;
        for (size_t j = 0; j < d->len; j++)
            if (!(pf__unicode_class(d->p[j]) & PF__UC_MN)) d->p[m++] = d->p[j];
        d->len = m;
    }
    return pf__tok_from_cps(out, d);
}

static int pf__tok_norm_lowercase(const unsigned char *s, size_t n, pf__tok_buf *out) {
    size_t k;
    uint32_t cp;
    for (size_t i = 0; i < n; i += k) {
        k = pf__utf8_decode(s + i, n - i, &cp);
        if (cp == PF__UTF8_INVALID || cp < 0x41) {
            if (pf__buf_put(out, s + i, k)) return -1;
        } else if (cp == 0x130) {
            if (pf__buf_put(out, "i\xcc\x87", 3)) return -1;
        } else if (pf__buf_put_cp(out, pf__unicode_lower(cp))) {
            return -1;
        }
    }
    return 0;
}

/* Strip: whitespace off the left and/or right end. */
static int pf__tok_norm_strip(const pf__tok_norm *nm, const unsigned char *s, size_t n, pf__tok_buf *out, int *first) {
    size_t lo = 0, hi = n, k;
    uint32_t cp;
    if (nm->left)
        while (lo < hi) {
            k = pf__utf8_decode(s + lo, hi - lo, &cp);
            if (!(pf__unicode_class(cp) & PF__UC_WS)) break;
            lo += k;
        }
    if (nm->right)
        while (hi > lo) {
            cp = pf__utf8_decode_before(s, lo, hi, &k);
            if (!(pf__unicode_class(cp) & PF__UC_WS)) break;
            hi -= k;
        }
    if (lo > 0) *first = 0;
    return pf__buf_put(out, s + lo, hi - lo);
}

/* BertNormalizer's clean_text: drop NUL, U+FFFD and controls; whitespace becomes a space. */
static int pf__tok_norm_bert_clean(const unsigned char *s, size_t n, pf__tok_buf *out, int *first) {
    size_t k;
    uint32_t cp;
    for (size_t i = 0; i < n; i += k) {
        k = pf__utf8_decode(s + i, n - i, &cp);
        unsigned f = pf__unicode_class(cp);
        if (cp == 0 || cp == 0xFFFD || (f & PF__UC_CTRL)) {
            if (i == 0) *first = 0;
            continue;
        }
        if (pf__buf_put(out, f & PF__UC_WS ? (const unsigned char *)" " : s + i, f & PF__UC_WS ? 1 : k)) return -1;
    }
    return 0;
}

/* HF's Precompiled: a grapheme cluster shorter than 6 bytes goes whole to the charsmap; otherwise
   (or when it has nothing for it) each character does. */
static int pf__tok_norm_precompiled(const pf__tok_norm *nm, const unsigned char *s, size_t n, pf__tok_buf *out,
                                    int *first) {
    size_t k;
    uint32_t cp;
    for (size_t i = 0; i < n; i = k) {
        const char *rep;
        size_t rep_len, m, start = out->len;
        k = pf__grapheme_end(s, i, n);
        if (k - i < 6 && pf__charsmap_find(nm, s + i, k - i, &rep, &rep_len)) {
            if (pf__buf_put(out, rep, rep_len)) return -1;
        } else {
            for (size_t j = i; j < k; j += m) {
                m = pf__utf8_decode(s + j, k - j, &cp);
                if (pf__charsmap_find(nm, s + j, m, &rep, &rep_len) ? pf__buf_put(out, rep, rep_len)
                                                                     : pf__buf_put(out, s + j, m))
                    return -1;
                if (j == 0 && out->len == start) *first = 0; /* the first character went */
            }
        }
        if (i == 0 && out->len == start) *first = 0;
    }
    return 0;
}

/* One normalizer step: s[0 .. n) -> out. */
static int pf__tok_norm_step(pf__tok_ctx *c, const pf__tok_norm *nm, const unsigned char *s, size_t n,
                             pf__tok_buf *out, int *first) {
    size_t i, k;
    uint32_t cp;
    out->len = 0;
    switch (nm->kind) {
    case PF__NORM_NFC:
    case PF__NORM_NFD:
    case PF__NORM_NFKC:
    case PF__NORM_NFKD:
    case PF__NORM_STRIP_ACCENTS:
        return pf__tok_norm_unicode(c, nm->kind, s, n, out, first);
    case PF__NORM_LOWERCASE:
        return pf__tok_norm_lowercase(s, n, out);
    case PF__NORM_PREPEND:
        if (n && pf__buf_put(out, nm->a, nm->a_len)) return -1;
        return pf__buf_put(out, s, n);
    case PF__NORM_REPLACE:
        return pf__buf_replace(out, s, n, nm->a, nm->a_len, nm->b, nm->b_len);
    case PF__NORM_STRIP:
        return pf__tok_norm_strip(nm, s, n, out, first);
    case PF__NORM_BERT_CLEAN:
        return pf__tok_norm_bert_clean(s, n, out, first);
    case PF__NORM_STRIP_MARKS:
        for (i = 0; i < n; i += k) {
            k = pf__utf8_decode(s + i, n - i, &cp);
            if (pf__unicode_is_mark(cp)) {
                if (i == 0) *first = 0;
            } else if (pf__buf_put(out, s + i, k)) {
                return -1;
            }
        }
        return 0;
    case PF__NORM_REPLACE_SPACES:
        for (i = 0; i < n; i = k) {
            for (k = i; k < n && s[k] == ' '; k++) {}
            if (k - i >= 2) {
                if (pf__buf_put(out, nm->b, nm->b_len)) return -1;
            } else {
                k = i + 1;
                if (pf__buf_put(out, s + i, 1)) return -1;
            }
        }
        return 0;
    case PF__NORM_REPLACE_WHITESPACE: /* leftmost first: a run of two or more \s, else one \n \r \t */
        for (i = 0; i < n; i = k) {
            size_t run = 0, first_len = 0;
            for (k = i; k < n;) {
                size_t len = pf__utf8_decode(s + k, n - k, &cp);
                if (!(pf__unicode_class(cp) & PF__UC_S)) break;
                if (!run++) first_len = len;
                k += len;
            }
            if (run >= 2 || (run == 1 && (s[i] == '\n' || s[i] == '\r' || s[i] == '\t'))) {
                if (pf__buf_put(out, nm->b, nm->b_len)) return -1;
            } else {
                k = i + (run ? first_len : 1);
                if (pf__buf_put(out, s + i, k - i)) return -1;
            }
        }
        return 0;
    case PF__NORM_SPM:
        return pf__tok_spm_normalize(nm, s, n, out);
    case PF__NORM_PRECOMPILED:
        return pf__tok_norm_precompiled(nm, s, n, out, first);
    case PF__NORM_BERT_CJK: /* spaces around CJK ideographs */
        for (i = 0; i < n; i += k) {
            k = pf__utf8_decode(s + i, n - i, &cp);
            if (pf__tok_is_cjk(cp)) {
                if (pf__buf_put(out, " ", 1) || pf__buf_put(out, s + i, k) || pf__buf_put(out, " ", 1)) return -1;
            } else if (pf__buf_put(out, s + i, k)) {
                return -1;
            }
        }
        return 0;
    }
    return -1;
}

/* Runs the normalizer on s[0 .. n): the result in *out (c->norm memory, or s itself when there
   is no normalizer). */
PF_PRIVATE int pf__tok_normalize(pf__tok_ctx *c, const unsigned char *s, size_t n, const unsigned char **out,
                             size_t *out_len, int *first) {
    int k;
    *out = s;
    *out_len = n;
    for (k = 0; k < c->t->num_norms; k++) {
        pf__tok_buf *b = &c->norm[k & 1];
        if (pf__tok_norm_step(c, &c->t->norms[k], *out, *out_len, b, first)) return -1;
        *out = b->p ? b->p : (const unsigned char *)"";
        *out_len = b->len;
    }
    return 0;
}

/* ---- the BPE model ---- */

static int pf__tok_cand_less(const pf__tok_cand *a, const pf__tok_cand *b) {
    return a->rank < b->rank || (a->rank == b->rank && a->pos < b->pos);
}

static void pf__tok_heap_push(pf__tok_cand *heap, size_t *n, pf__tok_cand c) {
    size_t i = (*n)++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!pf__tok_cand_less(&c, &heap[parent])) break;
        heap[i] = heap[parent];
        i = parent;
    }
    heap[i] = c;
}

static pf__tok_cand pf__tok_heap_pop(pf__tok_cand *heap, size_t *n) {
    pf__tok_cand top = heap[0], last = heap[--*n];
    size_t i = 0, m = *n;
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= m) break;
        if (child + 1 < m && pf__tok_cand_less(&heap[child + 1], &heap[child])) child++;
        if (!pf__tok_cand_less(&heap[child], &last)) break;
        heap[i] = heap[child];
        i = child;
    }
    if (m > 0) heap[i] = last;
    return top;
}

/* Pushes the merge candidate of the symbol at pos and its next symbol, if the merges have one. */
static void pf__tok_push_pair(const pf_tokenizer *t, pf__tok_ctx *c, size_t *n, uint32_t pos) {
    const pf__tok_merge_slot *m;
    uint32_t next = c->sym[pos].next;
    if (next == UINT32_MAX) return;
    m = pf__tok_merge_find(t, c->sym[pos].id, c->sym[next].id);
    if (m) {
        pf__tok_cand cand;
        cand.rank = m->rank;
        cand.pos = pos;
        cand.new_id = m->new_id;
        pf__tok_heap_push(c->heap, n, cand);
    }
}

static int pf__tok_sym_add(pf__tok_ctx *c, size_t *n, int32_t id) {
    if (*n >= UINT32_MAX / 4 || pf__tok_grow((void **)&c->sym, &c->sym_cap, *n + 1, sizeof *c->sym)) return -1;
    c->sym[(*n)++].id = id;
    return 0;
}

/* A SentencePiece BPE's symbols (each unknown character an unk of its own) as SentencePiece gives
   them: a run of unknown characters is one piece, mapped by its text. */
static int pf__tok_bpe_emit_spm(pf__tok_ctx *c, const unsigned char *s, size_t len) {
    const pf_tokenizer *t = c->t;
    size_t off = 0, run = (size_t)-1;
    uint32_t pos, cp;
    for (pos = 0; pos != UINT32_MAX; pos = c->sym[pos].next) {
        int32_t id = c->sym[pos].id;
        if (id == t->unk_id) {
            if (run == (size_t)-1) run = off;
            off += pf__utf8_decode(s + off, len - off, &cp);
            continue;
        }
        if (run != (size_t)-1) pf__tok_emit(c, pf__tok_spm_lookup(c->outer, s + run, off - run));
        run = (size_t)-1;
        pf__tok_emit_piece(c, id);
        off += t->pieces[id].len;
    }
    if (run != (size_t)-1) pf__tok_emit(c, pf__tok_spm_lookup(c->outer, s + run, off - run));
    return 0;
}

static int pf__tok_bpe_merge(const pf_tokenizer *t, pf__tok_ctx *c, size_t nsym);

/* The BPE model on one word, s[0 .. len): emits its ids. 0, or -1 when out of memory. As HF's
   BPE::merge_word: each unit (a byte's character when byte-level, else a character), with the
   continuing_subword_prefix when not first and the end_of_word_suffix when last, is its token;
   else its bytes' <0xXX> tokens (byte_fallback); else unk (a run of them fused with fuse_unk;
   like HF, a pending unk goes in only before the next unit found in the vocab, so byte-fallback
   tokens can come before it); else nothing. Then the merges. */
static int pf__tok_bpe(pf__tok_ctx *c, const unsigned char *s, size_t len) {
    const pf_tokenizer *t = c->t;
    size_t i, k, nsym = 0;
    int32_t unk = -1;
    uint32_t pos, cp;
    if (len == 0) return 0;
    if (t->ignore_merges) { /* a word that is a whole token is taken as it is */
        int32_t id;
        if (t->byte_level) {
            c->mapped.len = 0;
            for (i = 0; i < len; i++)
                if (pf__buf_put(&c->mapped, t->byte_str[s[i]], t->byte_str_len[s[i]])) return -1;
            id = pf__tok_vocab_find(t, (const char *)c->mapped.p, c->mapped.len);
        } else {
            id = pf__tok_vocab_find(t, (const char *)s, len);
        }
        if (id >= 0) {
            pf__tok_emit(c, id);
            return 0;
        }
    }
    for (i = 0; i < len; i += k) {
        const unsigned char *u;
        size_t ulen;
        int32_t id;
        int affixed;
        if (t->byte_level) {
            k = 1;
            u = t->byte_str[s[i]];
            ulen = t->byte_str_len[s[i]];
        } else {
            k = pf__utf8_decode(s + i, len - i, &cp);
            u = s + i;
            ulen = k;
        }
        affixed = (i > 0 && t->prefix) || (i + k == len && t->suffix);
        if (affixed) {
            c->unit.len = 0;
            if ((i > 0 && pf__buf_put(&c->unit, t->prefix, t->prefix_len)) || pf__buf_put(&c->unit, u, ulen) ||
                (i + k == len && pf__buf_put(&c->unit, t->suffix, t->suffix_len)))
                return -1;
            u = c->unit.p;
            ulen = c->unit.len;
        }
        id = !affixed && t->byte_level ? t->byte_id[s[i]] : pf__tok_vocab_find(t, (const char *)u, ulen);
        if (id >= 0 && t->spm_types && t->spm_types[id] != PF__SPM_NORMAL) id = -1;
        if (id >= 0) {
            if (unk >= 0 && pf__tok_sym_add(c, &nsym, unk)) return -1;
            unk = -1;
            if (pf__tok_sym_add(c, &nsym, id)) return -1;
            continue;
        }
        if (t->byte_fallback) {
            size_t j;
            for (j = 0; j < ulen && t->fallback_id[u[j]] >= 0; j++) {}
            if (j == ulen) {
                for (j = 0; j < ulen; j++)
                    if (pf__tok_sym_add(c, &nsym, t->fallback_id[u[j]])) return -1;
                continue;
            }
        }
        if (t->unk_id >= 0) {
            if (unk >= 0 && t->fuse_unk) continue;
            if (unk >= 0 && pf__tok_sym_add(c, &nsym, unk)) return -1;
            unk = t->unk_id;
        }
    }
    if (unk >= 0 && pf__tok_sym_add(c, &nsym, unk)) return -1;
    if (nsym == 0) return 0;
    if (pf__tok_bpe_merge(t, c, nsym)) return -1;
    if (c->outer) return pf__tok_bpe_emit_spm(c, s, len);
    for (pos = 0; pos != UINT32_MAX; pos = c->sym[pos].next) pf__tok_emit(c, c->sym[pos].id);
    return 0;
}

/* Merges the symbols c->sym[0 .. nsym) (nsym > 0) by t's merges, lowest rank first (leftmost on
   ties), as HF's Word::merge_all: the symbols left are a list from 0 (next). 0, or -1 when out of memory. */
static int pf__tok_bpe_merge(const pf_tokenizer *t, pf__tok_ctx *c, size_t nsym) {
    size_t nheap = 0;
    uint32_t pos;
    for (pos = 0; pos < nsym; pos++) {
        c->sym[pos].prev = pos == 0 ? UINT32_MAX : pos - 1;
        c->sym[pos].next = pos + 1 == nsym ? UINT32_MAX : pos + 1;
    }
    if (pf__tok_grow((void **)&c->heap, &c->heap_cap, 2 * nsym, sizeof *c->heap)) return -1;
    for (pos = 0; pos + 1 < nsym; pos++) pf__tok_push_pair(t, c, &nheap, pos);
    while (nheap > 0) {
        pf__tok_cand top = pf__tok_heap_pop(c->heap, &nheap);
        pf__tok_sym *left = &c->sym[top.pos];
        const pf__tok_merge_slot *m;
        uint32_t right;
        if (left->id < 0 || left->next == UINT32_MAX) continue;
        right = left->next;
        /* stale candidate: one of the two symbols changed since it was pushed */
        m = pf__tok_merge_find(t, left->id, c->sym[right].id);
        if (!m || m->new_id != top.new_id) continue;
        left->id = top.new_id;
        left->next = c->sym[right].next;
        c->sym[right].id = -1;
        if (left->next != UINT32_MAX) c->sym[left->next].prev = top.pos;
        if (left->prev != UINT32_MAX) pf__tok_push_pair(t, c, &nheap, left->prev);
        pf__tok_push_pair(t, c, &nheap, top.pos);
    }
    return 0;
}

/* ---- the Python classes' BPE (CTRL, Blenderbot-small, PhoBERT, BERTweet) ---- */

/* Python's _PyUnicode_IsCaseIgnorable, near enough: nonspacing and enclosing marks, format
   characters, modifier letters and symbols, and the apostrophes, periods and colons that join words. */
static int pf__py_case_ignorable(uint32_t cp) {
    static const uint32_t ranges[][2] = {
        {0x27, 0x27}, {0x2E, 0x2E}, {0x3A, 0x3A}, {0x5E, 0x5E}, {0x60, 0x60}, {0xA8, 0xA8}, {0xAD, 0xAD}, {0xAF, 0xAF},
        {0xB4, 0xB4}, {0xB7, 0xB8}, {0x2B0, 0x2FF}, {0x374, 0x375}, {0x37A, 0x37A}, {0x384, 0x385}, {0x387, 0x387},
        {0x488, 0x489}, {0x559, 0x559}, {0x55F, 0x55F}, {0x5F4, 0x5F4}, {0x640, 0x640}, {0x6E5, 0x6E6},
        {0x1ABE, 0x1ABE}, {0x1D2C, 0x1D6A}, {0x1D78, 0x1D78}, {0x1D9B, 0x1DBF}, {0x2018, 0x2019}, {0x2024, 0x2024},
        {0x2027, 0x2027}, {0x2071, 0x2071}, {0x207F, 0x207F}, {0x2090, 0x209C}, {0x20DD, 0x20E0}, {0x20E2, 0x20E4},
        {0x2C7C, 0x2C7D}, {0x2E2F, 0x2E2F}, {0x3005, 0x3005}, {0x3031, 0x3035}, {0x303B, 0x303B}, {0x309B, 0x309E},
        {0x30FC, 0x30FE}, {0xA670, 0xA672}, {0xFE13, 0xFE13}, {0xFE52, 0xFE52}, {0xFE55, 0xFE55}, {0xFF07, 0xFF07},
        {0xFF0E, 0xFF0E}, {0xFF1A, 0xFF1A}, {0xFF3E, 0xFF3E}, {0xFF40, 0xFF40}, {0xFF70, 0xFF70}, {0xFF9E, 0xFF9F},
        {0xFFE3, 0xFFE3}, {0x1F3FB, 0x1F3FF}};
    unsigned cls = pf__unicode_class(cp);
    size_t i;
    if (cp == PF__UTF8_INVALID) return 0;
    if (cls & PF__UC_MN) return 1;
    if ((cls & PF__UC_CTRL) && cp >= 0x20 && !(cp >= 0x7F && cp <= 0x9F) && !(cp >= 0xE000 && cp <= 0xF8FF) &&
        cp < 0xF0000) /* Cf (not Cc, nor private use) */
        return 1;
    for (i = 0; i < PF__TOK_LEN(ranges); i++)
        if (cp >= ranges[i][0] && cp <= ranges[i][1]) return 1;
    return 0;
}

/* The bitmap of tokenizer t's py_cased: the code points that have a lowercase or are one, and the
   lowercase letters and modifiers without a capital that Python counts as cased. NULL when out of memory. */
PF_PRIVATE unsigned char *pf__py_cased_bitmap(void) {
    static const uint32_t more[][2] = { /* Ll without an uppercase, Other_Lowercase */
        {0xAA, 0xAA}, {0xBA, 0xBA}, {0x130, 0x130}, {0x138, 0x138}, {0x149, 0x149}, {0x17F, 0x17F}, {0x18D, 0x18D},
        {0x19B, 0x19B}, {0x1AA, 0x1AB}, {0x1BA, 0x1BA}, {0x1BE, 0x1BE}, {0x221, 0x221}, {0x234, 0x239},
        {0x250, 0x2B8}, {0x2C0, 0x2C1}, {0x2E0, 0x2E4}, {0x345, 0x345}, {0x37A, 0x37A}, {0x390, 0x390},
        {0x3B0, 0x3B0}, {0x1D00, 0x1DBF}, {0x1E96, 0x1E9D}, {0x2071, 0x2071}, {0x207F, 0x207F}, {0x2090, 0x209C},
        {0x2C7C, 0x2C7D}, {0xA69C, 0xA69D}, {0xA770, 0xA770}, {0xA7F8, 0xA7F9}, {0xAB5C, 0xAB5F}};
    unsigned char *bits = (unsigned char *)calloc(PF__PY_CASED_END / 8, 1);
    uint32_t cp;
    size_t i;
    if (!bits) return NULL;
    for (cp = 0; cp < PF__PY_CASED_END; cp++) {
        uint32_t lower = pf__unicode_lower(cp);
        if (lower == cp) continue;
        bits[cp / 8] |= (unsigned char)(1u << (cp % 8));
        if (lower < PF__PY_CASED_END) bits[lower / 8] |= (unsigned char)(1u << (lower % 8));
    }
    for (i = 0; i < PF__TOK_LEN(more); i++)
        for (cp = more[i][0]; cp <= more[i][1]; cp++) bits[cp / 8] |= (unsigned char)(1u << (cp % 8));
    return bits;
}

static int pf__py_cased(const pf_tokenizer *t, uint32_t cp) {
    return cp < PF__PY_CASED_END && (t->py_cased[cp / 8] >> (cp % 8) & 1);
}

/* Python's str.lower() of s[0 .. n), appended to out: each character's lowercase (U+0130 two of
   them), and a capital sigma final (U+03C2) after a cased character and before none, case-ignorable
   ones skipped on both sides (CPython's handle_capital_sigma). */
PF_PRIVATE int pf__py_lower(const pf_tokenizer *t, const unsigned char *s, size_t n, pf__tok_buf *out) {
    size_t i, k, j, m;
    uint32_t cp, other = 0;
    for (i = 0; i < n; i += k) {
        k = pf__utf8_decode(s + i, n - i, &cp);
        if (cp == PF__UTF8_INVALID) {
            if (pf__buf_put(out, s + i, k)) return -1;
            continue;
        }
        if (cp == 0x130) {
            if (pf__buf_put(out, "i\xcc\x87", 3)) return -1;
            continue;
        }
        if (cp == 0x3A3) {
            int final = 0;
            for (j = i; j > 0; j -= m) { /* back over the case-ignorable ones */
                other = pf__utf8_decode_before(s, 0, j, &m);
                if (!pf__py_case_ignorable(other)) break;
            }
            final = j > 0 && pf__py_cased(t, other);
            for (j = i + k; final && j < n; j += m) {
                m = pf__utf8_decode(s + j, n - j, &other);
                if (!pf__py_case_ignorable(other)) {
                    final = !pf__py_cased(t, other);
                    break;
                }
            }
            if (pf__buf_put_cp(out, final ? 0x3C2 : 0x3C3)) return -1;
            continue;
        }
        if (pf__buf_put_cp(out, pf__unicode_lower(cp))) return -1;
    }
    return 0;
}

/* One piece through the Python classes' bpe(): its characters, the last with "</w>", merged by
   the rank of their strings' pair (t->word_bpe); then each symbol's text, with "@@" unless last,
   looked up as their convert_tokens_to_ids (an added token's id, the vocab's, else unk's). */
static int pf__tok_word_bpe_piece(pf__tok_ctx *c, const unsigned char *s, size_t len) {
    const pf_tokenizer *t = c->t, *sy = t->word_bpe;
    size_t i, k, nsym = 0, off = 0;
    uint32_t pos, cp;
    for (i = 0; i < len; i += k) {
        int32_t id;
        k = pf__utf8_decode(s + i, len - i, &cp);
        if (i + k < len) {
            id = pf__tok_vocab_find(sy, (const char *)s + i, k);
        } else {
            c->unit.len = 0;
            if (pf__buf_put(&c->unit, s + i, k) || pf__buf_put(&c->unit, "</w>", 4)) return -1;
            id = pf__tok_vocab_find(sy, (const char *)c->unit.p, c->unit.len);
        }
        if (pf__tok_sym_add(c, &nsym, id < 0 ? 0 : id)) return -1;
    }
    if (nsym == 0) return 0;
    if (pf__tok_bpe_merge(sy, c, nsym)) return -1;
    for (pos = 0; pos != UINT32_MAX; pos = c->sym[pos].next) {
        int last = c->sym[pos].next == UINT32_MAX;
        int32_t id = c->sym[pos].id;
        size_t n = id > 0 ? (size_t)sy->id_len[id] - (last ? 4 : 0) : pf__utf8_decode(s + off, len - off, &cp);
        c->unit.len = 0;
        if (pf__buf_put(&c->unit, s + off, n) ||
            (t->word_bpe_suffix ? last && pf__buf_put(&c->unit, "</w>", 4) : !last && pf__buf_put(&c->unit, "@@", 2)))
            return -1;
        id = pf__tok_spm_lookup(t, c->unit.p, c->unit.len);
        if (id < 0) c->needs_unk = 1; /* transformers fails too: no unk token to map it to */
        else pf__tok_emit(c, id);
        off += n;
    }
    return 0;
}

/* Blenderbot-small's bpe() before its merges, its re.sub calls in order: . , ! ? ( ) get a space
   before them, ' one on each side, a run of two or more whitespace characters becomes a space,
   a newline " __newln__". s[0 .. n) into out (tmp scratch). */
static int pf__tok_blenderbot_rewrite(const unsigned char *s, size_t n, pf__tok_buf *tmp, pf__tok_buf *out) {
    size_t i, k, run;
    uint32_t cp;
    tmp->len = out->len = 0;
    for (i = 0; i < n; i++) {
        int before = memchr(".,!?()'", s[i], 7) != NULL && s[i];
        if ((before && pf__buf_put(tmp, " ", 1)) || pf__buf_put(tmp, s + i, 1) || (s[i] == '\'' && pf__buf_put(tmp, " ", 1)))
            return -1;
    }
    for (i = 0; i < tmp->len; i += k) {
        k = pf__utf8_decode(tmp->p + i, tmp->len - i, &cp);
        if (!(pf__unicode_class(cp) & PF__UC_S)) {
            if (pf__buf_put(out, tmp->p + i, k)) return -1;
            continue;
        }
        for (run = 1; i + k < tmp->len; run++) { /* the rest of the whitespace run */
            uint32_t next;
            size_t nk = pf__utf8_decode(tmp->p + i + k, tmp->len - i - k, &next);
            if (!(pf__unicode_class(next) & PF__UC_S)) break;
            k += nk;
        }
        if (run >= 2 ? pf__buf_put(out, " ", 1)
                     : cp == '\n' ? pf__buf_put(out, " __newln__", 10) : pf__buf_put(out, tmp->p + i, k))
            return -1;
    }
    return 0;
}

/* The Python classes' BPE on one word (\S+\n?); Blenderbot-small's cuts it at spaces after its
   rewrite and lowercases each piece. 0, or -1 when out of memory. */
static int pf__tok_word_bpe(pf__tok_ctx *c, const unsigned char *s, size_t len) {
    const pf_tokenizer *t = c->t;
    pf__tok_buf *w = &c->word[0], *low = &c->word[1];
    size_t i, start;
    if (!t->word_bpe_blenderbot) return pf__tok_word_bpe_piece(c, s, len);
    if (pf__tok_blenderbot_rewrite(s, len, &c->mapped, w)) return -1;
    for (start = i = 0; i <= w->len; i++) {
        if (i < w->len && w->p[i] != ' ') continue;
        if (i > start) {
            low->len = 0;
            if (pf__py_lower(t, w->p + start, i - start, low) || pf__tok_word_bpe_piece(c, low->p, low->len)) return -1;
        }
        start = i + 1;
    }
    return 0;
}

/* ---- the WordPiece model ---- */

/* The end of the longest run of whole units from s[i] that is at most `room` bytes long. */
static size_t pf__tok_units_within(const unsigned char *s, size_t i, size_t len, size_t room) {
    size_t end = i, k;
    uint32_t cp;
    while (end < len) {
        k = pf__utf8_decode(s + end, len - end, &cp);
        if (end + k - i > room) break;
        end += k;
    }
    return end;
}

/* The vocab id of prefix + s[0 .. len) (prefix_len 0: s alone), or -1. unit is scratch. */
static int32_t pf__tok_find_prefixed(pf__tok_ctx *c, const char *prefix, size_t prefix_len, const unsigned char *s,
                                     size_t len) {
    if (!prefix_len) return pf__tok_vocab_find(c->t, (const char *)s, len);
    c->unit.len = 0;
    if (pf__buf_put(&c->unit, prefix, prefix_len) || pf__buf_put(&c->unit, s, len)) {
        c->out_of_memory = 1;
        return -1;
    }
    return pf__tok_vocab_find(c->t, (const char *)c->unit.p, c->unit.len);
}

/* The WordPiece model on one word, as HF's WordPiece::tokenize: the longest vocab piece at its
   start, then the longest with the continuing_subword_prefix at each later place; a word with
   a place no piece starts, or longer than max_input_chars_per_word characters, is unk alone. */
static void pf__tok_wordpiece(pf__tok_ctx *c, const unsigned char *s, size_t len) {
    const pf_tokenizer *t = c->t;
    size_t start = 0, chars = 0, mark = c->count, k;
    uint32_t cp;
    for (k = 0; k < len && chars <= t->max_word_chars; k += pf__utf8_decode(s + k, len - k, &cp)) chars++;
    while (chars <= t->max_word_chars && start < len) {
        size_t prefix_len = start ? t->prefix_len : 0;
        /* no piece is longer than the longest token: start below that */
        size_t end = t->max_token_len < prefix_len ? start
                     : pf__tok_units_within(s, start, len, t->max_token_len - prefix_len);
        int32_t id = -1;
        while (end > start && (id = pf__tok_find_prefixed(c, t->prefix, prefix_len, s + start, end - start)) < 0) {
            pf__utf8_decode_before(s, start, end, &k);
            end -= k;
        }
        if (id < 0) break;
        pf__tok_emit(c, id);
        start = end;
    }
    if (start == len && chars <= t->max_word_chars) return;
    c->count = mark; /* the word is unk as a whole */
    if (t->unk_id < 0) c->needs_unk = 1;
    else pf__tok_emit(c, t->unk_id);
}

/* ---- the Unigram model ---- */

/* Emits the ids of an unknown run s[0 .. len) (HF's fused unk pieces, looked up again as a whole):
   its own id if the vocab has it, else its bytes' <0xXX> tokens (byte_fallback, all of them
   there), else unk. */
static void pf__tok_unigram_unknown(pf__tok_ctx *c, const unsigned char *s, size_t len) {
    const pf_tokenizer *t = c->t;
    int32_t id;
    size_t i;
    if (c->outer) { /* SentencePiece's merged unknown piece, mapped by its text */
        pf__tok_emit(c, pf__tok_spm_lookup(c->outer, s, len));
        return;
    }
    id = pf__tok_vocab_find(t, (const char *)s, len);
    if (id < 0 && t->byte_fallback) {
        for (i = 0; i < len && t->fallback_id[s[i]] >= 0; i++) {}
        if (i == len) {
            for (i = 0; i < len; i++) pf__tok_emit(c, t->fallback_id[s[i]]);
            return;
        }
    }
    pf__tok_emit(c, id >= 0 ? id : t->unk_id);
}

/* The Unigram model on one word: the segmentation with the highest total score (Viterbi, as HF's
   Unigram::encode_optimized: pieces at each character, ties kept by the piece found first, a
   character no piece covers alone scored as unk), its runs of unk fused into one. -1 when out of
   memory. */
static int pf__tok_unigram(pf__tok_ctx *c, const unsigned char *s, size_t len) {
    const pf_tokenizer *t = c->t;
    size_t start, end, k, n_path = 0;
    pf__tok_node *nodes;
    uint32_t cp;
    if (pf__tok_grow((void **)&c->lattice, &c->lattice_cap, len + 1, sizeof *c->lattice) ||
        pf__tok_grow((void **)&c->path, &c->path_cap, len + 1, sizeof *c->path))
        return -1;
    nodes = c->lattice;
    memset(nodes, 0, (len + 1) * sizeof *nodes);
    nodes[0].reached = 1;
    for (start = 0; start < len; start += k) {
        double base = nodes[start].score, score;
        uint32_t h = 2166136261u; /* pf__tok_hash, a byte at a time */
        int single = 0;
        size_t j = start, unit;
        k = pf__utf8_decode(s + start, len - start, &cp);
        if (!nodes[start].reached) continue; /* only after a character HF refuses (needs_unk) */
        for (end = start; end < len && end - start < t->max_token_len; end += unit) {
            int32_t id;
            unit = pf__utf8_decode(s + end, len - end, &cp);
            if (end + unit - start > t->max_token_len) break;
            for (; j < end + unit; j++) h = (h ^ s[j]) * 16777619u;
            if (cp == PF__UTF8_INVALID) break; /* no piece holds a byte that is not UTF-8 */
            if ((id = pf__tok_vocab_find_hashed(t, (const char *)s + start, end + unit - start, h)) < 0) continue;
            if (t->spm_types && t->spm_types[id] != PF__SPM_NORMAL) continue; /* SentencePiece matches no other */
            score = t->spm_types ? (double)((float)base + (float)t->pieces[id].score) : base + t->pieces[id].score;
            if (!nodes[end + unit].reached || score > nodes[end + unit].score) {
                nodes[end + unit].score = score;
                nodes[end + unit].start = start;
                nodes[end + unit].id = id;
                nodes[end + unit].reached = 1;
            }
            if (end == start) single = 1;
        }
        if (single) continue;
        if (t->unk_id < 0) {
            c->needs_unk = 1;
            continue;
        }
        score = t->spm_types ? (double)((float)base + (float)t->unk_score) : base + t->unk_score;
        if (!nodes[start + k].reached || score > nodes[start + k].score) {
            nodes[start + k].score = score;
            nodes[start + k].start = start;
            nodes[start + k].id = t->unk_id;
            nodes[start + k].reached = 1;
        }
    }
    if (c->needs_unk || !nodes[len].reached) return 0;
    for (end = len; end > 0; end = nodes[end].start) c->path[n_path++] = end;
    for (start = 0; n_path > 0; start = end) {
        end = c->path[--n_path];
        if (nodes[end].id != t->unk_id) {
            pf__tok_emit_piece(c, nodes[end].id);
            continue;
        }
        while (n_path > 0 && nodes[c->path[n_path - 1]].id == t->unk_id) end = c->path[--n_path];
        pf__tok_unigram_unknown(c, s + start, end - start);
    }
    return 0;
}

/* ---- BertJapanese's character subwords ---- */

/* The character subwords of one word: NFKC, then each character's vocab id (as convert_tokens_to_ids
   gives it: an added token's first), or unk's. */
static void pf__bj_chars(pf__tok_ctx *c, const unsigned char *s, size_t n) {
    pf__tok_buf *nfkc = &c->unit;
    size_t i, k;
    uint32_t cp;
    nfkc->len = 0;
    if (pf__py_normalize(c, PF__NORM_NFKC, s, n, nfkc)) {
        c->out_of_memory = 1;
        return;
    }
    for (i = 0; i < nfkc->len; i += k) {
        k = pf__utf8_decode(nfkc->p + i, nfkc->len - i, &cp);
        if (pf__tok_vocab_find(c->t, (const char *)nfkc->p + i, k) >= 0) pf__tok_emit(c, pf__tok_spm_lookup(c->t, nfkc->p + i, k));
        else if (c->t->unk_id >= 0) pf__tok_emit(c, c->t->unk_id);
        else c->needs_unk = 1;
    }
}

/* The model on one pre-tokenized word: emits its ids. 0, or -1 when out of memory. */
PF_PRIVATE int pf__tok_model(pf__tok_ctx *c, const unsigned char *s, size_t len) {
    size_t i;
    if (len == 0) return 0;
    if (c->t->spm) { /* the SentencePiece model on the whole normalized text, as SentencePiece runs it */
        const pf_tokenizer *outer = c->t;
        int rc;
        c->t = outer->spm;
        c->outer = outer;
        rc = c->t->model == PF__MODEL_UNIGRAM ? pf__tok_unigram(c, s, len) : pf__tok_bpe(c, s, len);
        c->t = outer;
        c->outer = NULL;
        return rc;
    }
    if (c->t->model == PF__MODEL_BYTES) {
        for (i = 0; i < len; i++) pf__tok_emit(c, (int32_t)s[i] + PF__BYTES_OFFSET);
        return 0;
    }
    if (c->t->model == PF__MODEL_WORDPIECE) {
        pf__tok_wordpiece(c, s, len);
        return 0;
    }
    if (c->t->model == PF__MODEL_UNIGRAM) return pf__tok_unigram(c, s, len);
    if (c->t->model == PF__MODEL_WORD_BPE) return pf__tok_word_bpe(c, s, len);
    if (c->t->model == PF__MODEL_CHARS) {
        pf__bj_chars(c, s, len);
        return 0;
    }
    return pf__tok_bpe(c, s, len);
}

