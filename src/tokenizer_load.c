#include "internal.h"
/* ---- loading ---- */

/* GPT-2's byte-to-unicode map: printable Latin-1 bytes stand for themselves, the others (control
   characters, space, 0x7F-0xA0, 0xAD) for U+0100, U+0101, ... in byte order. */
static void pf__tok_byte_map(uint16_t byte_char[256]) {
    int b, n = 0;
    for (b = 0; b < 256; b++) {
        int printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        byte_char[b] = (uint16_t)(printable ? b : 256 + n++);
    }
}

/* A JSON boolean member: its value, `def` when absent or null, -1 when of another type. */
PF_PRIVATE int pf__tok_json_bool(const pf__json *obj, const char *key, int def) {
    const pf__json *v = pf__json_get(obj, key);
    if (!v || v->type == PF__JSON_NULL) return def;
    return v->type == PF__JSON_BOOL ? v->boolean : -1;
}

/* A JSON string member, or NULL when absent or null; *bad is set when it is of another type. */
PF_PRIVATE const pf__json *pf__tok_json_str(const pf__json *obj, const char *key, int *bad) {
    const pf__json *v = pf__json_get(obj, key);
    if (!v || v->type == PF__JSON_NULL) return NULL;
    if (v->type != PF__JSON_STRING) {
        *bad = 1;
        return NULL;
    }
    return v;
}

/* An id from a JSON number: 0 .. INT32_MAX - 1, integral; -1 otherwise. */
static int32_t pf__tok_json_id(const pf__json *v) {
    if (!v || v->type != PF__JSON_NUMBER || !(v->number >= 0 && v->number < (double)INT32_MAX) ||
        v->number != (double)(int32_t)v->number)
        return -1;
    return (int32_t)v->number;
}

/* A token string for a message: at most 40 bytes of it, quoted by the caller. */
PF_PRIVATE int pf__tok_show_len(size_t len) {
    return len > 40 ? 40 : (int)len;
}

/* Makes room for a vocab of `count` tokens whose strings take text_len bytes (NULs included). */
PF_PRIVATE pf_result pf__tok_vocab_alloc(pf_tokenizer *t, size_t count, size_t text_len, const char *path, char *err,
                                     size_t err_size) {
    size_t cap = pf__tok_pow2_at_least(2 * count);
    t->vocab = (pf__tok_vocab_slot *)malloc(cap * sizeof *t->vocab);
    t->vocab_text = (char *)malloc(text_len ? text_len : 1);
    if (!t->vocab || !t->vocab_text) {
        snprintf(err, err_size, "%s: out of memory for %zu tokens", path, count);
        return PF_ERROR_OUT_OF_MEMORY;
    }
    t->vocab_mask = cap - 1;
    memset(t->vocab, 0xFF, cap * sizeof *t->vocab); /* id -1 everywhere */
    return PF_OK;
}

/* Maps a token string to id (a string already there takes the new id, as a later duplicate key
   does in serde); the string is copied to vocab_text either way, and its offset returned. */
PF_PRIVATE size_t pf__tok_vocab_insert(pf_tokenizer *t, const char *s, size_t len, int32_t id) {
    uint32_t h = pf__tok_hash(s, len);
    size_t i, offset = t->vocab_text_len;
    memcpy(t->vocab_text + offset, s, len);
    t->vocab_text[offset + len] = 0;
    t->vocab_text_len += len + 1;
    for (i = h & t->vocab_mask;; i = (i + 1) & t->vocab_mask) {
        pf__tok_vocab_slot *slot = &t->vocab[i];
        if (slot->id < 0) {
            slot->hash = h;
            slot->len = (uint32_t)len;
            slot->offset = offset;
            t->vocab_count++;
            break;
        }
        if (slot->hash == h && slot->len == len && !memcmp(t->vocab_text + slot->offset, s, len)) break;
    }
    t->vocab[i].id = id;
    if (len > t->max_token_len) t->max_token_len = len;
    return offset;
}

/* Fills the vocab from a JSON object token -> id. A later duplicate key wins, as in serde. */
PF_PRIVATE pf_result pf__tok_set_vocab(pf_tokenizer *t, const pf__json *vocab, const char *what,
                                   const char *path, char *err, size_t err_size) {
    const pf__json *m;
    size_t text_len = 0;
    pf_result r;
    if (!vocab || vocab->type != PF__JSON_OBJECT) {
        snprintf(err, err_size, "%s: %s is %s, not an object of token -> id", path, what ? what : "the vocab",
                 vocab ? "of another type" : "missing");
        return PF_ERROR_FORMAT;
    }
    for (m = vocab->first; m; m = m->next) text_len += m->key_len + 1;
    if ((r = pf__tok_vocab_alloc(t, vocab->count, text_len, path, err, err_size)) != PF_OK) return r;
    for (m = vocab->first; m; m = m->next) {
        int32_t id = pf__tok_json_id(m);
        if (id < 0) {
            snprintf(err, err_size, "%s: %s%sthe id of token \"%.*s\" is not an integer in 0..%d", path,
                     what ? what : "", what ? ": " : "", pf__tok_show_len(m->key_len), m->key, INT32_MAX - 1);
            return PF_ERROR_FORMAT;
        }
        if (m->key_len > UINT32_MAX - 1) {
            snprintf(err, err_size, "%s: a token is too long", path);
            return PF_ERROR_FORMAT;
        }
        pf__tok_vocab_insert(t, m->key, m->key_len, id);
    }
    return PF_OK;
}

/* Splits "a b" into its two tokens; -1 unless it has exactly one space (HF's rule). */
static int pf__tok_split_merge_line(const char *s, size_t len, pf__tok_merge_text *m) {
    const char *sp = (const char *)memchr(s, ' ', len);
    if (!sp || memchr(sp + 1, ' ', len - (size_t)(sp + 1 - s))) return -1;
    m->a = s;
    m->a_len = (size_t)(sp - s);
    m->b = sp + 1;
    m->b_len = len - m->a_len - 1;
    return 0;
}

/* Sets the merge of the pair (a, b) into ab, with its rank (a pair set before is overwritten). */
PF_PRIVATE void pf__tok_merge_put(pf_tokenizer *t, int32_t a, int32_t b, uint32_t rank, int32_t ab) {
    uint64_t pair = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
    size_t i;
    for (i = pf__tok_pair_slot(pair, t->merges_mask);; i = (i + 1) & t->merges_mask)
        if (t->merges[i].rank == UINT32_MAX || t->merges[i].pair == pair) break;
    t->merges[i].pair = pair;
    t->merges[i].rank = rank;
    t->merges[i].new_id = ab;
}

/* Resolves merge rules to ids; the rank is the index. Every token, and each pair's concatenation
   (less the continuing_subword_prefix's length at the start of the second, as HF does), must be
   in the vocab. A repeated pair keeps its last rank, as HF's hash map does. */
PF_PRIVATE pf_result pf__tok_set_merges(pf_tokenizer *t, const pf__tok_merge_text *merges, size_t n,
                                    const char *path, char *err, size_t err_size) {
    size_t cap = pf__tok_pow2_at_least(2 * n + 1), r, buf_cap = 0;
    char *buf = NULL;
    pf_result res = PF_OK;
    if (n >= UINT32_MAX) {
        snprintf(err, err_size, "%s: too many merges (%zu)", path, n);
        return PF_ERROR_FORMAT;
    }
    t->merges = (pf__tok_merge_slot *)malloc(cap * sizeof *t->merges);
    if (!t->merges) {
        snprintf(err, err_size, "%s: out of memory for %zu merges", path, n);
        return PF_ERROR_OUT_OF_MEMORY;
    }
    memset(t->merges, 0xFF, cap * sizeof *t->merges); /* rank UINT32_MAX everywhere */
    t->merges_mask = cap - 1;
    for (r = 0; r < n; r++) {
        const pf__tok_merge_text *m = &merges[r];
        int32_t a = pf__tok_vocab_find(t, m->a, m->a_len), b = pf__tok_vocab_find(t, m->b, m->b_len), ab;
        const char *missing = a < 0 ? m->a : b < 0 ? m->b : NULL;
        size_t missing_len = a < 0 ? m->a_len : m->b_len;
        size_t skip = t->prefix_len, b_len = m->b_len - skip;
        if (m->b_len < skip) {
            snprintf(err, err_size, "%s: merge %zu (\"%.*s\" \"%.*s\"): the second token is shorter than the "
                     "continuing_subword_prefix", path, r + 1, pf__tok_show_len(m->a_len), m->a,
                     pf__tok_show_len(m->b_len), m->b);
            res = PF_ERROR_FORMAT;
            break;
        }
        if (m->a_len + m->b_len > buf_cap) {
            char *p = (char *)realloc(buf, m->a_len + m->b_len);
            if (!p) {
                snprintf(err, err_size, "%s: out of memory", path);
                res = PF_ERROR_OUT_OF_MEMORY;
                break;
            }
            buf = p;
            buf_cap = m->a_len + m->b_len;
        }
        if (m->a_len + b_len) {
            memcpy(buf, m->a, m->a_len);
            memcpy(buf + m->a_len, m->b + skip, b_len);
        }
        ab = pf__tok_vocab_find(t, buf ? buf : "", m->a_len + b_len);
        if (!missing && ab < 0) {
            missing = buf;
            missing_len = m->a_len + b_len;
        }
        if (missing) {
            snprintf(err, err_size, "%s: merge %zu (\"%.*s\" \"%.*s\"): token \"%.*s\" is not in the vocab",
                     path, r + 1, pf__tok_show_len(m->a_len), m->a, pf__tok_show_len(m->b_len), m->b,
                     pf__tok_show_len(missing_len), missing);
            res = PF_ERROR_FORMAT;
            break;
        }
        pf__tok_merge_put(t, a, b, (uint32_t)r, ab);
    }
    free(buf);
    return res;
}

/* merges.txt as tokenizers reads it: a line "a b" per merge, ranked in order; "#version" lines
   and blank ones skipped. *text holds the strings *mt points into (both the caller's to free, also
   on failure); *word_ends counts the merges whose line ends with "</w>". */
PF_PRIVATE pf_result pf__tok_read_merges_txt(const char *path, char **text, pf__tok_merge_text **mt, size_t *n,
                                             size_t *word_ends, char *err, size_t err_size) {
    size_t len, cap = 0, line = 0, i;
    pf_result r;
    *text = NULL;
    *mt = NULL;
    *n = *word_ends = 0;
    if ((r = pf__read_file(path, PF__MAX_TEXT_FILE, text, &len, err, err_size)) != PF_OK) return r;
    for (i = 0; i < len;) {
        size_t end = i, l;
        const char *s = *text + i;
        while (end < len && (*text)[end] != '\n') end++;
        l = end - i;
        line++;
        i = end + 1;
        if (l && s[l - 1] == '\r') l--;
        if (l == 0 || (l >= 8 && !memcmp(s, "#version", 8))) continue;
        *word_ends += l >= 4 && !memcmp(s + l - 4, "</w>", 4);
        if (*n == cap) {
            size_t c2 = cap ? 2 * cap : 1024;
            pf__tok_merge_text *p = (pf__tok_merge_text *)realloc(*mt, c2 * sizeof *p);
            if (!p) {
                snprintf(err, err_size, "%s: out of memory", path);
                return PF_ERROR_OUT_OF_MEMORY;
            }
            *mt = p;
            cap = c2;
        }
        if (pf__tok_split_merge_line(s, l, &(*mt)[*n])) {
            snprintf(err, err_size, "%s: line %zu is not two tokens separated by one space", path, line);
            return PF_ERROR_FORMAT;
        }
        (*n)++;
    }
    return PF_OK;
}

/* Puts added token i into the content hash (which has room). */
static void pf__tok_added_slot(pf_tokenizer *t, size_t i) {
    size_t k;
    for (k = t->added[i].hash & t->added_mask; t->added_slots[k]; k = (k + 1) & t->added_mask) {}
    t->added_slots[k] = (uint32_t)(i + 1);
}

/* Adds an added token (its content copied). A content added twice keeps the later entry. The
   contents are found by hash: tokenizers with 10^5 added tokens exist, and a linear search per
   token made loading them quadratic. */
PF_PRIVATE pf_result pf__tok_add_token(pf_tokenizer *t, const char *content, size_t len, int32_t id,
                                   int special, int normalized, int lstrip, int rstrip, int single_word) {
    pf__tok_added *a = pf__tok_added_find(t, content, len);
    if (!a) {
        if (t->num_added >= UINT32_MAX - 1) return PF_ERROR_OUT_OF_MEMORY;
        if (t->num_added == t->added_cap) {
            size_t cap = t->added_cap ? 2 * t->added_cap : 8;
            pf__tok_added *p = (pf__tok_added *)realloc(t->added, cap * sizeof *p);
            if (!p) return PF_ERROR_OUT_OF_MEMORY;
            t->added = p;
            t->added_cap = cap;
        }
        if (2 * (t->num_added + 1) > (t->added_slots ? t->added_mask + 1 : 0)) { /* at most half full */
            size_t slots = pf__tok_pow2_at_least(4 * (t->num_added + 1)), i;
            uint32_t *p = (uint32_t *)calloc(slots, sizeof *p);
            if (!p) return PF_ERROR_OUT_OF_MEMORY;
            free(t->added_slots);
            t->added_slots = p;
            t->added_mask = slots - 1;
            for (i = 0; i < t->num_added; i++) pf__tok_added_slot(t, i);
        }
        a = &t->added[t->num_added];
        a->match = NULL;
        a->content = (char *)malloc(len + 1);
        if (!a->content) return PF_ERROR_OUT_OF_MEMORY;
        if (len) memcpy(a->content, content, len);
        a->content[len] = 0;
        a->len = len;
        a->hash = pf__tok_hash(content, len);
        a->unmatched = 0;
        pf__tok_added_slot(t, t->num_added++);
    }
    a->id = id;
    a->special = (unsigned char)special;
    a->normalized = (unsigned char)normalized;
    a->lstrip = (unsigned char)lstrip;
    a->rstrip = (unsigned char)rstrip;
    a->single_word = (unsigned char)single_word;
    return PF_OK;
}

/* Reads one added token object ({"id", "content", "special", "normalized", "lstrip", "rstrip",
   "single_word"}) with the id `id`; or, when `id` < 0 (tokenizer.json), with the id HF's
   AddedVocabulary::add_tokens gives it, whatever its "id" says: the id it was added with before,
   else its id in the model vocab, else *next_id++. */
static pf_result pf__tok_read_added(pf_tokenizer *t, const pf__json *o, int32_t id, int32_t *next_id,
                                    const char *path, char *err, size_t err_size) {
    int bad = 0, special, normalized, lstrip, rstrip, single_word;
    const pf__json *content = pf__tok_json_str(o, "content", &bad);
    int32_t given = id >= 0 ? id : pf__tok_json_id(pf__json_get(o, "id"));
    special = pf__tok_json_bool(o, "special", 0);
    normalized = pf__tok_json_bool(o, "normalized", !special);
    lstrip = pf__tok_json_bool(o, "lstrip", 0);
    rstrip = pf__tok_json_bool(o, "rstrip", 0);
    single_word = pf__tok_json_bool(o, "single_word", 0);
    if (!o || o->type != PF__JSON_OBJECT || !content || given < 0 || special < 0 || normalized < 0 ||
        lstrip < 0 || rstrip < 0 || single_word < 0) {
        snprintf(err, err_size, "%s: an added token is not an object with an integer \"id\", a string "
                 "\"content\" and boolean flags", path);
        return PF_ERROR_FORMAT;
    }
    if (content->string_len == 0) return PF_OK; /* HF ignores it */
    if (id < 0) {
        const pf__tok_added *before = pf__tok_added_find(t, content->string, content->string_len);
        if (before) id = before->id;
        else if ((id = pf__tok_vocab_find(t, content->string, content->string_len)) < 0) {
            if (*next_id == INT32_MAX) {
                snprintf(err, err_size, "%s: too many added tokens", path);
                return PF_ERROR_FORMAT;
            }
            id = (*next_id)++;
        }
    }
    if (pf__tok_add_token(t, content->string, content->string_len, id, special, normalized, lstrip,
                          rstrip, single_word)) {
        snprintf(err, err_size, "%s: out of memory", path);
        return PF_ERROR_OUT_OF_MEMORY;
    }
    return PF_OK;
}

/* A malloc'd, NUL-terminated copy of s[0 .. n), or NULL. */
PF_PRIVATE char *pf__tok_dup(const char *s, size_t n) {
    char *p = (char *)malloc(n + 1);
    if (!p) return NULL;
    if (n) memcpy(p, s, n);
    p[n] = 0;
    return p;
}

/* A JSON member that must be a string holding exactly one character: its UTF-8 copied to a new
   string in *out; -1 when it is not that. */
static int pf__tok_json_char(const pf__json *obj, const char *key, char **out, size_t *len) {
    int bad = 0;
    const pf__json *v = pf__tok_json_str(obj, key, &bad);
    uint32_t cp;
    if (!v || !v->string_len || pf__utf8_decode((const unsigned char *)v->string, v->string_len, &cp) != v->string_len ||
        cp == PF__UTF8_INVALID)
        return -1;
    *out = pf__tok_dup(v->string, v->string_len);
    *len = v->string_len;
    return *out ? 0 : -2;
}

/* Metaspace's prepend_scheme (default "always"; an add_prefix_space false means "never" and
   contradicts any other scheme, as in HF); -1 when malformed. */
static int pf__tok_json_prepend(const pf__json *o) {
    int bad = 0, add = pf__tok_json_bool(o, "add_prefix_space", -2);
    const pf__json *v = pf__tok_json_str(o, "prepend_scheme", &bad);
    int scheme = PF__PREPEND_ALWAYS;
    if (bad || add == -1) return -1;
    if (v) {
        if (!strcmp(v->string, "always")) scheme = PF__PREPEND_ALWAYS;
        else if (!strcmp(v->string, "first")) scheme = PF__PREPEND_FIRST;
        else if (!strcmp(v->string, "never")) scheme = PF__PREPEND_NEVER;
        else return -1;
    }
    if (add == 0) {
        if (scheme != PF__PREPEND_NEVER) return -1;
    }
    return scheme;
}

/* A non-negative integer member (absent: def); -1 when of another type. */
static long pf__tok_json_count(const pf__json *o, const char *key, long def) {
    const pf__json *v = pf__json_get(o, key);
    if (!v || v->type == PF__JSON_NULL) return def;
    if (v->type != PF__JSON_NUMBER || !(v->number >= 0 && v->number < 1e9) || v->number != (double)(long)v->number)
        return -1;
    return (long)v->number;
}

/* The text a regex matches when it is a literal: characters without a meaning in a regex, and
   escapes of punctuation or of \n \r \t (Pegasus' Replace "\n"). Written into out (the regex's
   length at most); its length, or -1 when the regex is not a literal. */
static long pf__tok_regex_literal(const char *re, size_t len, char *out) {
    size_t i, n = 0;
    for (i = 0; i < len; i++) {
        unsigned char c = (unsigned char)re[i];
        if (c == '\\') {
            if (++i == len) return -1;
            c = (unsigned char)re[i];
            if (c == 'n') c = '\n';
            else if (c == 'r') c = '\r';
            else if (c == 't') c = '\t';
            else if (!strchr(".^$*+?()[]{}|\\/-", c)) return -1; /* \s, \d, \p{..}, ...: classes */
        } else if (strchr(".^$*+?()[]{}|", c)) {
            return -1;
        }
        out[n++] = (char)c;
    }
    return n ? (long)n : -1; /* an empty regex matches between characters: not a literal */
}

/* A Replace's pattern {"String": s}, or a Regex that is a literal (copied into *out); other
   Regex patterns are not supported. */
static pf_result pf__tok_json_pattern(const pf__json *o, const char *what, char **out, size_t *len, const char *path,
                                      char *err, size_t err_size) {
    int bad = 0;
    const pf__json *pattern = pf__json_get(o, "pattern"), *v = pf__tok_json_str(pattern, "String", &bad), *re;
    if (!v && !bad && (re = pf__tok_json_str(pattern, "Regex", &bad)) != NULL) {
        long n;
        if (!(*out = (char *)malloc(re->string_len + 1))) {
            snprintf(err, err_size, "%s: out of memory", path);
            return PF_ERROR_OUT_OF_MEMORY;
        }
        if ((n = pf__tok_regex_literal(re->string, re->string_len, *out)) >= 0) {
            (*out)[n] = 0;
            *len = (size_t)n;
            return PF_OK;
        }
        free(*out);
        *out = NULL;
        snprintf(err, err_size, "%s: %s with the Regex pattern \"%.40s\" is not supported (only String, a literal "
                 "Regex, \" {2,}\" and \"\\s{2,}|[\\n\\r\\t]\" in a normalizer)", path, what, re->string);
        return PF_ERROR_UNSUPPORTED;
    }
    if (!v) {
        snprintf(err, err_size, "%s: %s has no \"pattern\" {\"String\": ...}", path, what);
        return PF_ERROR_FORMAT;
    }
    if (!(*out = pf__tok_dup(v->string, v->string_len))) {
        snprintf(err, err_size, "%s: out of memory", path);
        return PF_ERROR_OUT_OF_MEMORY;
    }
    *len = v->string_len;
    return PF_OK;
}

static pf_result pf__tok_too_many(const char *path, const char *what, char *err, size_t err_size) {
    snprintf(err, err_size, "%s: more than 16 %s steps", path, what);
    return PF_ERROR_UNSUPPORTED;
}

/* Decodes standard base64 (padded, as Rust's base64 STANDARD engine wants it) into a new buffer;
   -1 when malformed, -2 out of memory. */
static int pf__base64_decode(const char *s, size_t n, unsigned char **out, size_t *out_len) {
    size_t i, len = 0;
    uint32_t acc = 0;
    int pad = 0;
    if (n % 4) return -1;
    if (!(*out = (unsigned char *)malloc(n / 4 * 3 + 1))) return -2;
    for (i = 0; i < n; i++) {
        char c = s[i];
        int v = c >= 'A' && c <= 'Z' ? c - 'A' : c >= 'a' && c <= 'z' ? c - 'a' + 26 : c >= '0' && c <= '9' ? c - '0' + 52
              : c == '+' ? 62 : c == '/' ? 63 : -1;
        if (c == '=' && i >= n - 2 && (pad || i == n - 1 || s[n - 1] == '=')) {
            pad++;
            v = 0;
        } else if (v < 0 || pad) {
            free(*out);
            *out = NULL;
            return -1;
        }
        acc = acc << 6 | (uint32_t)v;
        if (i % 4 == 3) {
            (*out)[len++] = (unsigned char)(acc >> 16);
            (*out)[len++] = (unsigned char)(acc >> 8);
            (*out)[len++] = (unsigned char)acc;
            acc = 0;
        }
    }
    if ((pad == 2 && (*out)[len - 2]) || (pad == 1 && (*out)[len - 1])) { /* bits past the data */
        free(*out);
        *out = NULL;
        return -1;
    }
    *out_len = len - (size_t)pad;
    return 0;
}

/* A SentencePiece charsmap (the trie's size in bytes, u32 little-endian; the trie's u32 units;
   the replacements, each ended by a NUL) into n; `what` names it in messages. */
PF_PRIVATE pf_result pf__tok_set_charsmap(pf__tok_norm *n, const unsigned char *data, size_t len, const char *what,
                                      const char *path, char *err, size_t err_size) {
    size_t trie_bytes, i;
    uint32_t cp;
    if (len < 4 || (trie_bytes = (size_t)data[0] | (size_t)data[1] << 8 | (size_t)data[2] << 16 | (size_t)data[3] << 24) / 4 == 0 ||
        trie_bytes > len - 4) {
        snprintf(err, err_size, "%s: %s is not a SentencePiece charsmap", path, what);
        return PF_ERROR_FORMAT;
    }
    n->num_units = trie_bytes / 4;
    if (!(n->units = (uint32_t *)malloc(n->num_units * sizeof *n->units))) goto oom;
    for (i = 0; i < n->num_units; i++)
        n->units[i] = (uint32_t)data[4 + 4 * i] | (uint32_t)data[5 + 4 * i] << 8 | (uint32_t)data[6 + 4 * i] << 16 |
                      (uint32_t)data[7 + 4 * i] << 24;
    n->b_len = len - 4 - 4 * n->num_units; /* what follows the whole units, as HF reads it */
    if (!(n->b = pf__tok_dup((const char *)data + 4 + 4 * n->num_units, n->b_len))) goto oom;
    for (i = 0; i < n->b_len; i += pf__utf8_decode((const unsigned char *)n->b + i, n->b_len - i, &cp))
        if (pf__utf8_decode((const unsigned char *)n->b + i, n->b_len - i, &cp) == 1 && cp == PF__UTF8_INVALID) {
            snprintf(err, err_size, "%s: %s: the charsmap's replacements are not UTF-8", path, what);
            return PF_ERROR_FORMAT;
        }
    return PF_OK;
oom:
    snprintf(err, err_size, "%s: out of memory", path);
    return PF_ERROR_OUT_OF_MEMORY;
}

/* Reads a Precompiled normalizer's precompiled_charsmap (base64 of a SentencePiece charsmap) into n. */
static pf_result pf__tok_read_charsmap(pf__tok_norm *n, const pf__json *j, const char *path, char *err, size_t err_size) {
    int bad = 0, rc = -1;
    const pf__json *v = pf__tok_json_str(j, "precompiled_charsmap", &bad);
    unsigned char *data = NULL;
    size_t len = 0;
    pf_result r;
    if (v && (rc = pf__base64_decode(v->string, v->string_len, &data, &len)) == -2) {
        snprintf(err, err_size, "%s: out of memory", path);
        return PF_ERROR_OUT_OF_MEMORY;
    }
    if (rc) {
        snprintf(err, err_size, "%s: normalizer Precompiled: \"precompiled_charsmap\" is not the base64 of a "
                 "SentencePiece charsmap", path);
        return PF_ERROR_FORMAT;
    }
    r = pf__tok_set_charsmap(n, data, len, "normalizer Precompiled's \"precompiled_charsmap\"", path, err, err_size);
    free(data);
    return r;
}

PF_PRIVATE pf__tok_norm *pf__tok_add_norm(pf_tokenizer *t, pf__tok_norm_kind kind) {
    pf__tok_norm *n;
    if (t->num_norms == PF__TOK_MAX_NORMS) return NULL;
    n = &t->norms[t->num_norms++];
    memset(n, 0, sizeof *n);
    n->kind = kind;
    return n;
}

PF_PRIVATE pf_result pf__tok_out_of_memory(const char *path, char *err, size_t err_size) {
    snprintf(err, err_size, "%s: out of memory", path);
    return PF_ERROR_OUT_OF_MEMORY;
}

/* Prepend (its string), Replace (a pattern and its content) and Strip (left and/or right). */
static pf_result pf__tok_read_edit_normalizer(pf_tokenizer *t, const pf__json *j, const char *name, const char *path,
                                              char *err, size_t err_size) {
    int bad = 0;
    pf__tok_norm *n;
    pf_result r;
    const pf__json *s = NULL;
    int left = 0, right = 0;
    if (name[0] == 'P' && !(s = pf__tok_json_str(j, "prepend", &bad))) {
        snprintf(err, err_size, "%s: normalizer Prepend has no string \"prepend\"", path);
        return PF_ERROR_FORMAT;
    }
    if (name[0] == 'R' && !(s = pf__tok_json_str(j, "content", &bad))) {
        snprintf(err, err_size, "%s: normalizer Replace has no string \"content\"", path);
        return PF_ERROR_FORMAT;
    }
    if (name[0] == 'S' && ((left = pf__tok_json_bool(j, "strip_left", 0)) < 0 ||
                           (right = pf__tok_json_bool(j, "strip_right", 0)) < 0)) {
        snprintf(err, err_size, "%s: normalizer Strip has a non-boolean option", path);
        return PF_ERROR_FORMAT;
    }
    n = pf__tok_add_norm(t, name[0] == 'P' ? PF__NORM_PREPEND : name[0] == 'R' ? PF__NORM_REPLACE : PF__NORM_STRIP);
    if (!n) return pf__tok_too_many(path, "normalizer", err, err_size);
    n->left = left;
    n->right = right;
    if (name[0] == 'R') {
        if ((r = pf__tok_json_pattern(j, "normalizer Replace", &n->a, &n->a_len, path, err, err_size)) != PF_OK)
            return r;
        n->b = pf__tok_dup(s->string, s->string_len);
        n->b_len = s->string_len;
        if (!n->b) return pf__tok_out_of_memory(path, err, err_size);
    } else if (name[0] == 'P') {
        if (!(n->a = pf__tok_dup(s->string, s->string_len))) return pf__tok_out_of_memory(path, err, err_size);
        n->a_len = s->string_len;
    }
    return PF_OK;
}

/* Reads a normalizer object into t->norms. */
static pf_result pf__tok_read_normalizer(pf_tokenizer *t, const pf__json *j, int depth, const char *path, char *err,
                                         size_t err_size) {
    int bad = 0;
    const pf__json *type = pf__tok_json_str(j, "type", &bad);
    const char *name;
    pf__tok_norm *n;
    pf_result r;
    if (!j || j->type == PF__JSON_NULL) return PF_OK;
    if (!type) {
        snprintf(err, err_size, "%s: a normalizer has no \"type\"", path);
        return PF_ERROR_FORMAT;
    }
    name = type->string;
    if (!strcmp(name, "Sequence")) {
        const pf__json *list = pf__json_get(j, "normalizers"), *e;
        if (!list || list->type != PF__JSON_ARRAY || depth > 4) {
            snprintf(err, err_size, "%s: normalizer Sequence has no \"normalizers\" array", path);
            return PF_ERROR_FORMAT;
        }
        for (e = list->first; e; e = e->next) {
            if (!e || e->type != PF__JSON_OBJECT) {
                snprintf(err, err_size, "%s: a normalizer of a Sequence is not an object", path);
                return PF_ERROR_FORMAT;
            }
            if ((r = pf__tok_read_normalizer(t, e, depth + 1, path, err, err_size)) != PF_OK) return r;
        }
        return PF_OK;
    }
    if (!strcmp(name, "BertNormalizer")) {
        int clean = pf__tok_json_bool(j, "clean_text", 1), cjk = pf__tok_json_bool(j, "handle_chinese_chars", 1);
        int lower = pf__tok_json_bool(j, "lowercase", 1), strip;
        if (clean < 0 || cjk < 0 || lower < 0 || (strip = pf__tok_json_bool(j, "strip_accents", lower)) < 0) {
            snprintf(err, err_size, "%s: normalizer BertNormalizer has a non-boolean option", path);
            return PF_ERROR_FORMAT;
        }
        if ((clean && !pf__tok_add_norm(t, PF__NORM_BERT_CLEAN)) || (cjk && !pf__tok_add_norm(t, PF__NORM_BERT_CJK)) ||
            (strip && !pf__tok_add_norm(t, PF__NORM_STRIP_ACCENTS)) || (lower && !pf__tok_add_norm(t, PF__NORM_LOWERCASE)))
            return pf__tok_too_many(path, "normalizer", err, err_size);
        return PF_OK;
    }
    {
        static const struct {
            const char *name;
            pf__tok_norm_kind kind;
        } plain[] = {{"NFC", PF__NORM_NFC}, {"NFD", PF__NORM_NFD}, {"NFKC", PF__NORM_NFKC}, {"NFKD", PF__NORM_NFKD},
                     {"Lowercase", PF__NORM_LOWERCASE}, {"StripAccents", PF__NORM_STRIP_MARKS}};
        size_t i;
        for (i = 0; i < PF__TOK_LEN(plain); i++)
            if (!strcmp(name, plain[i].name)) {
                if (!pf__tok_add_norm(t, plain[i].kind)) return pf__tok_too_many(path, "normalizer", err, err_size);
                return PF_OK;
            }
    }
    if (!strcmp(name, "Precompiled")) {
        if (!(n = pf__tok_add_norm(t, PF__NORM_PRECOMPILED))) return pf__tok_too_many(path, "normalizer", err, err_size);
        return pf__tok_read_charsmap(n, j, path, err, err_size);
    }
    if (!strcmp(name, "Replace")) { /* the regexes " {2,}" of SentencePiece converters and "\s{2,}|[\n\r\t]" of
                                       DeBERTa-v2's tokenizer, recognised by their source */
        const pf__json *re = pf__tok_json_str(pf__json_get(j, "pattern"), "Regex", &bad),
                       *content = pf__tok_json_str(j, "content", &bad);
        int spaces = re && !strcmp(re->string, " {2,}"), whitespace = re && !strcmp(re->string, "\\s{2,}|[\\n\\r\\t]");
        if (content && (spaces || whitespace)) {
            if (!(n = pf__tok_add_norm(t, spaces ? PF__NORM_REPLACE_SPACES : PF__NORM_REPLACE_WHITESPACE)))
                return pf__tok_too_many(path, "normalizer", err, err_size);
            if (!(n->b = pf__tok_dup(content->string, content->string_len))) return pf__tok_out_of_memory(path, err, err_size);
            n->b_len = content->string_len;
            return PF_OK;
        }
        bad = 0;
    }
    if (!strcmp(name, "Prepend") || !strcmp(name, "Replace") || !strcmp(name, "Strip"))
        return pf__tok_read_edit_normalizer(t, j, name, path, err, err_size);
    snprintf(err, err_size, "%s: normalizer %.40s is not supported", path, name);
    return PF_ERROR_UNSUPPORTED;
}

static pf__tok_pre *pf__tok_add_pre(pf_tokenizer *t, pf__tok_pre_kind kind) {
    pf__tok_pre *p;
    if (t->num_pres == PF__TOK_MAX_PRE) return NULL;
    p = &t->pres[t->num_pres++];
    memset(p, 0, sizeof *p);
    p->kind = kind;
    return p;
}

static pf_result pf__tok_add_split(pf_tokenizer *t, pf__tok_pattern pattern, unsigned flags, pf__tok_behavior behavior,
                                   const char *path, char *err, size_t err_size) {
    pf__tok_pre *p = pf__tok_add_pre(t, PF__PRE_SPLIT);
    if (!p) return pf__tok_too_many(path, "pre_tokenizer", err, err_size);
    p->pattern = pattern;
    p->flags = flags;
    p->behavior = behavior;
    return PF_OK;
}

/* A Split's "behavior" (def when absent); -1 when unknown. */
static int pf__tok_json_behavior(const pf__json *o, int def) {
    int bad = 0;
    size_t i;
    const pf__json *v = pf__tok_json_str(o, "behavior", &bad);
    if (!v) return bad ? -1 : def;
    for (i = 0; i < pf__tok_behaviors_count; i++)
        if (!strcmp(v->string, pf__tok_behaviors[i])) return (int)i;
    return -1;
}

/* ByteLevel: the prefix space and the GPT-2 split as its options say; byte-level from here on. */
static pf_result pf__tok_read_byte_level(pf_tokenizer *t, const pf__json *p, const char *path, char *err, size_t err_size) {
    pf_result r;
    int add_prefix_space = pf__tok_json_bool(p, "add_prefix_space", 1);
    int use_regex = pf__tok_json_bool(p, "use_regex", 1);
    if (add_prefix_space < 0 || use_regex < 0) {
        snprintf(err, err_size, "%s: pre_tokenizer ByteLevel has a non-boolean option", path);
        return PF_ERROR_FORMAT;
    }
    if (add_prefix_space && !pf__tok_add_pre(t, PF__PRE_PREFIX_SPACE))
        return pf__tok_too_many(path, "pre_tokenizer", err, err_size);
    if (use_regex && (r = pf__tok_add_split(t, PF__PAT_GPT2, 0, PF__SPLIT_ISOLATED, path, err, err_size)) != PF_OK)
        return r;
    t->byte_level = 1;
    return PF_OK;
}

/* Split: one of the known regexes, or a literal string, with its behavior and invert. */
static pf_result pf__tok_read_split(pf_tokenizer *t, const pf__json *p, const char *path, char *err, size_t err_size) {
    int bad = 0;
    pf_result r;
    const pf__json *pattern = pf__json_get(p, "pattern"), *re, *lit;
    int behavior = pf__tok_json_behavior(p, -1), invert = pf__tok_json_bool(p, "invert", 0);
    pf__tok_pre *st;
    size_t i;
    re = pf__tok_json_str(pattern, "Regex", &bad);
    lit = pf__tok_json_str(pattern, "String", &bad);
    if ((!re && !lit) || bad || behavior < 0 || invert < 0) {
        snprintf(err, err_size, "%s: pre_tokenizer Split needs a \"pattern\" {\"Regex\" or \"String\": ...}, a "
                 "\"behavior\" (Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous) and a "
                 "boolean \"invert\"", path);
        return PF_ERROR_FORMAT;
    }
    if (re) {
        for (i = 0; i < pf__tok_regexes_count; i++)
            if (!strcmp(re->string, pf__tok_regexes[i].regex)) break;
        if (i == pf__tok_regexes_count) {
            snprintf(err, err_size, "%s: pre_tokenizer Split pattern \"%.80s\" is not supported (known: the GPT-2, "
                     "LLaMA-3, Qwen2, BLOOM and CTRL patterns)", path, re->string);
            return PF_ERROR_UNSUPPORTED;
        }
    } else if (!lit->string_len) {
        snprintf(err, err_size, "%s: pre_tokenizer Split with an empty String pattern is not supported", path);
        return PF_ERROR_UNSUPPORTED;
    }
    if ((r = pf__tok_add_split(t, re ? pf__tok_regexes[i].pattern : PF__PAT_LITERAL, 0,
                               (pf__tok_behavior)behavior, path, err, err_size)) != PF_OK)
        return r;
    st = &t->pres[t->num_pres - 1];
    st->invert = invert;
    if (lit) {
        if (!(st->lit = pf__tok_dup(lit->string, lit->string_len))) return pf__tok_out_of_memory(path, err, err_size);
        st->lit_len = lit->string_len;
    }
    return PF_OK;
}

/* Metaspace: its replacement character, prepend scheme and split. */
static pf_result pf__tok_read_metaspace(pf_tokenizer *t, const pf__json *p, const char *path, char *err, size_t err_size) {
    int scheme = pf__tok_json_prepend(p), split = pf__tok_json_bool(p, "split", 1), rc;
    pf__tok_pre *st;
    if (scheme < 0 || split < 0) {
        snprintf(err, err_size, "%s: pre_tokenizer Metaspace has a bad prepend_scheme, split or add_prefix_space", path);
        return PF_ERROR_FORMAT;
    }
    if (!(st = pf__tok_add_pre(t, PF__PRE_METASPACE))) return pf__tok_too_many(path, "pre_tokenizer", err, err_size);
    st->prepend = (pf__tok_prepend)scheme;
    st->split = split;
    if ((rc = pf__tok_json_char(p, "replacement", &st->lit, &st->lit_len)) != 0) {
        snprintf(err, err_size, rc == -2 ? "%s: out of memory" : "%s: pre_tokenizer Metaspace's \"replacement\" is not "
                 "one character", path);
        return rc == -2 ? PF_ERROR_OUT_OF_MEMORY : PF_ERROR_FORMAT;
    }
    return PF_OK;
}

/* Reads a pre_tokenizer object into t->pres. ByteLevel must come last: what follows it would
   see byte-level characters. */
static pf_result pf__tok_read_pretok(pf_tokenizer *t, const pf__json *p, int depth, const char *path, char *err,
                                     size_t err_size) {
    int bad = 0;
    const pf__json *type = pf__tok_json_str(p, "type", &bad);
    const char *name = type ? type->string : "?";
    pf_result r;
    if (!p || p->type == PF__JSON_NULL) return PF_OK;
    if (t->byte_level) {
        snprintf(err, err_size, "%s: pre_tokenizer %.40s after ByteLevel is not supported", path, name);
        return PF_ERROR_UNSUPPORTED;
    }
    if (!type) {
        snprintf(err, err_size, "%s: a pre_tokenizer has no \"type\"", path);
        return PF_ERROR_FORMAT;
    }
    if (!strcmp(name, "Sequence")) {
        const pf__json *list = pf__json_get(p, "pretokenizers"), *e;
        if (!list || list->type != PF__JSON_ARRAY || depth > 4) {
            snprintf(err, err_size, "%s: pre_tokenizer Sequence has no \"pretokenizers\" array", path);
            return PF_ERROR_FORMAT;
        }
        for (e = list->first; e; e = e->next) {
            if (e->type != PF__JSON_OBJECT) {
                snprintf(err, err_size, "%s: a pre_tokenizer of a Sequence is not an object", path);
                return PF_ERROR_FORMAT;
            }
            if ((r = pf__tok_read_pretok(t, e, depth + 1, path, err, err_size)) != PF_OK) return r;
        }
        return PF_OK;
    }
    if (!strcmp(name, "ByteLevel")) return pf__tok_read_byte_level(t, p, path, err, err_size);
    if (!strcmp(name, "Split")) return pf__tok_read_split(t, p, path, err, err_size);
    if (!strcmp(name, "Metaspace")) return pf__tok_read_metaspace(t, p, path, err, err_size);
    if (!strcmp(name, "BertPreTokenizer")) {
        if ((r = pf__tok_add_split(t, PF__PAT_FLAGS, PF__UC_WS, PF__SPLIT_REMOVED, path, err, err_size)) != PF_OK) return r;
        return pf__tok_add_split(t, PF__PAT_FLAGS, PF__UC_PUNCT, PF__SPLIT_ISOLATED, path, err, err_size);
    }
    if (!strcmp(name, "Digits")) { /* numbers apart from the rest: each digit alone, or runs of them */
        int individual = pf__tok_json_bool(p, "individual_digits", 0);
        if (individual < 0) {
            snprintf(err, err_size, "%s: pre_tokenizer Digits' individual_digits is not a boolean", path);
            return PF_ERROR_FORMAT;
        }
        return pf__tok_add_split(t, PF__PAT_FLAGS, PF__UC_N, individual ? PF__SPLIT_ISOLATED : PF__SPLIT_CONTIGUOUS, path,
                                 err, err_size);
    }
    if (!strcmp(name, "WhitespaceSplit"))
        return pf__tok_add_split(t, PF__PAT_FLAGS, PF__UC_WS, PF__SPLIT_REMOVED, path, err, err_size);
    if (!strcmp(name, "Punctuation")) {
        int behavior = pf__tok_json_behavior(p, PF__SPLIT_ISOLATED);
        if (behavior < 0) {
            snprintf(err, err_size, "%s: pre_tokenizer Punctuation has an unknown \"behavior\"", path);
            return PF_ERROR_FORMAT;
        }
        return pf__tok_add_split(t, PF__PAT_FLAGS, PF__UC_PUNCT, (pf__tok_behavior)behavior, path, err, err_size);
    }
    snprintf(err, err_size, "%s: pre_tokenizer %.40s is not supported", path, name);
    return PF_ERROR_UNSUPPORTED;
}

PF_PRIVATE pf__tok_dec *pf__tok_add_dec(pf_tokenizer *t, pf__tok_dec_kind kind) {
    pf__tok_dec *d;
    if (t->num_decs == PF__TOK_MAX_DECS) return NULL;
    d = &t->decs[t->num_decs++];
    memset(d, 0, sizeof *d);
    d->kind = kind;
    return d;
}

/* Reads a decoder object into t->decs. */
static pf_result pf__tok_read_decoder(pf_tokenizer *t, const pf__json *j, int depth, const char *path, char *err,
                                      size_t err_size) {
    int bad = 0, rc;
    const pf__json *type = pf__tok_json_str(j, "type", &bad), *v;
    const char *name;
    pf__tok_dec *d;
    pf_result r;
    if (!j || j->type == PF__JSON_NULL) return PF_OK;
    t->has_decoder = 1;
    if (!type) {
        snprintf(err, err_size, "%s: a decoder has no \"type\"", path);
        return PF_ERROR_FORMAT;
    }
    name = type->string;
    if (!strcmp(name, "Sequence")) {
        const pf__json *list = pf__json_get(j, "decoders"), *e;
        if (!list || list->type != PF__JSON_ARRAY || depth > 4) {
            snprintf(err, err_size, "%s: decoder Sequence has no \"decoders\" array", path);
            return PF_ERROR_FORMAT;
        }
        for (e = list->first; e; e = e->next) {
            if (e->type != PF__JSON_OBJECT) {
                snprintf(err, err_size, "%s: a decoder of a Sequence is not an object", path);
                return PF_ERROR_FORMAT;
            }
            if ((r = pf__tok_read_decoder(t, e, depth + 1, path, err, err_size)) != PF_OK) return r;
        }
        return PF_OK;
    }
    if (!strcmp(name, "ByteLevel") || !strcmp(name, "ByteFallback") || !strcmp(name, "Fuse")) {
        if (!pf__tok_add_dec(t, name[0] == 'F' ? PF__DEC_FUSE : name[4] == 'L' ? PF__DEC_BYTELEVEL : PF__DEC_BYTEFALLBACK))
            return pf__tok_too_many(path, "decoder", err, err_size);
        return PF_OK;
    }
    if (!strcmp(name, "Replace")) {
        if (!(v = pf__tok_json_str(j, "content", &bad))) {
            snprintf(err, err_size, "%s: decoder Replace has no string \"content\"", path);
            return PF_ERROR_FORMAT;
        }
        if (!(d = pf__tok_add_dec(t, PF__DEC_REPLACE))) return pf__tok_too_many(path, "decoder", err, err_size);
        if ((r = pf__tok_json_pattern(j, "decoder Replace", &d->a, &d->a_len, path, err, err_size)) != PF_OK) return r;
        if (!(d->b = pf__tok_dup(v->string, v->string_len))) goto oom;
        d->b_len = v->string_len;
        return PF_OK;
    }
    if (!strcmp(name, "BPEDecoder")) {
        v = pf__tok_json_str(j, "suffix", &bad);
        if (bad) {
            snprintf(err, err_size, "%s: decoder BPEDecoder's \"suffix\" is not a string", path);
            return PF_ERROR_FORMAT;
        }
        if (!(d = pf__tok_add_dec(t, PF__DEC_BPE))) return pf__tok_too_many(path, "decoder", err, err_size);
        if (!(d->a = pf__tok_dup(v ? v->string : "</w>", v ? v->string_len : 4))) goto oom;
        d->a_len = v ? v->string_len : 4;
        return PF_OK;
    }
    if (!strcmp(name, "WordPiece")) { /* prefix "##" and cleanup true where absent */
        int cleanup = pf__tok_json_bool(j, "cleanup", 1);
        v = pf__tok_json_str(j, "prefix", &bad);
        if (bad || cleanup < 0) {
            snprintf(err, err_size, "%s: decoder WordPiece's \"prefix\" or \"cleanup\" has the wrong type", path);
            return PF_ERROR_FORMAT;
        }
        if (!(d = pf__tok_add_dec(t, PF__DEC_WORDPIECE))) return pf__tok_too_many(path, "decoder", err, err_size);
        d->cleanup = cleanup;
        if (!(d->a = pf__tok_dup(v ? v->string : "##", v ? v->string_len : 2))) goto oom;
        d->a_len = v ? v->string_len : 2;
        return PF_OK;
    }
    if (!strcmp(name, "Metaspace") || !strcmp(name, "Strip")) {
        int meta = name[0] == 'M', scheme = meta ? pf__tok_json_prepend(j) : 0;
        long start = meta ? 0 : pf__tok_json_count(j, "start", 0), stop = meta ? 0 : pf__tok_json_count(j, "stop", 0);
        if (scheme < 0 || start < 0 || stop < 0) {
            snprintf(err, err_size, "%s: decoder %s has a bad %s", path, name, meta ? "prepend_scheme or add_prefix_space" :
                     "start or stop");
            return PF_ERROR_FORMAT;
        }
        if (!(d = pf__tok_add_dec(t, meta ? PF__DEC_METASPACE : PF__DEC_STRIP)))
            return pf__tok_too_many(path, "decoder", err, err_size);
        d->prepend = (pf__tok_prepend)scheme;
        d->start = (size_t)start;
        d->stop = (size_t)stop;
        if ((rc = pf__tok_json_char(j, meta ? "replacement" : "content", &d->a, &d->a_len)) != 0) {
            if (rc == -2) goto oom;
            snprintf(err, err_size, "%s: decoder %s's \"%s\" is not one character", path, name, meta ? "replacement" : "content");
            return PF_ERROR_FORMAT;
        }
        return PF_OK;
    }
    snprintf(err, err_size, "%s: decoder %.40s is not supported", path, name);
    return PF_ERROR_UNSUPPORTED;
oom:
    snprintf(err, err_size, "%s: out of memory", path);
    return PF_ERROR_OUT_OF_MEMORY;
}

/* Sets one post-processor template (which: 0 one text, 1 a pair) from n items. */
PF_PRIVATE pf_result pf__tok_set_post(pf_tokenizer *t, int which, const pf__tok_post_item *items, size_t n,
                                  const char *path, char *err, size_t err_size) {
    size_t i;
    pf__tok_post_item *p;
    if (n > 1024 || !(p = (pf__tok_post_item *)malloc((n ? n : 1) * sizeof *p))) {
        snprintf(err, err_size, n > 1024 ? "%s: the post_processor adds too many tokens" : "%s: out of memory", path);
        return n > 1024 ? PF_ERROR_UNSUPPORTED : PF_ERROR_OUT_OF_MEMORY;
    }
    if (n) memcpy(p, items, n * sizeof *p);
    free(t->post[which]);
    t->post[which] = p;
    t->post_len[which] = n;
    t->post_added[which] = 0;
    for (i = 0; i < n; i++) t->post_added[which] += items[i].id >= 0;
    return PF_OK;
}

/* [token, id] of Bert/RobertaProcessing: the id, or -1. */
static int32_t pf__tok_json_pair_id(const pf__json *o, const char *key) {
    const pf__json *v = pf__json_get(o, key);
    if (!v || v->type != PF__JSON_ARRAY || v->count != 2 || v->first->type != PF__JSON_STRING) return -1;
    return pf__tok_json_id(v->first->next);
}

/* One of TemplateProcessing's templates (which: 0 "single", 1 "pair") into t->post[which]. */
static pf_result pf__tok_read_template(pf_tokenizer *t, const pf__json *j, int which, const char *path, char *err,
                                       size_t err_size) {
    const char *key = which ? "pair" : "single";
    const pf__json *list = pf__json_get(j, key), *specials = pf__json_get(j, "special_tokens"), *e;
    pf__tok_post_item *items;
    size_t n = 0;
    int bad = 0;
    pf_result r;
    if (which && (!list || list->type == PF__JSON_NULL)) { /* leniency: A, then B of type id 1 */
        static const pf__tok_post_item plain[2] = {{PF__TOK_SEQ_A, 0}, {PF__TOK_SEQ_B, 1}};
        return pf__tok_set_post(t, 1, plain, 2, path, err, err_size);
    }
    if (!list || list->type != PF__JSON_ARRAY ||
        (specials && specials->type != PF__JSON_OBJECT && specials->type != PF__JSON_NULL)) {
        snprintf(err, err_size, "%s: post_processor TemplateProcessing needs a \"%s\" array", path, key);
        return PF_ERROR_FORMAT;
    }
    items = (pf__tok_post_item *)malloc((list->count + 1) * 64 * sizeof *items);
    if (!items) {
        snprintf(err, err_size, "%s: out of memory", path);
        return PF_ERROR_OUT_OF_MEMORY;
    }
    for (e = list->first; e; e = e->next) {
        const pf__json *seq = pf__json_get(e, "Sequence"), *sp = pf__json_get(e, "SpecialToken");
        const pf__json *piece = seq ? seq : sp, *id = pf__tok_json_str(piece, "id", &bad), *tok, *ids, *x;
        long type_id = pf__tok_json_count(piece, "type_id", 0);
        if (!id || (seq && sp) || type_id < 0 ||
            (seq && strcmp(id->string, "A") && (strcmp(id->string, "B") || !which))) {
            snprintf(err, err_size, "%s: post_processor TemplateProcessing: a \"%s\" item is not {\"Sequence\": "
                     "{\"id\": %s, \"type_id\": n}} or {\"SpecialToken\": {\"id\": ..., \"type_id\": n}}", path, key,
                     which ? "\"A\" or \"B\"" : "\"A\"");
            free(items);
            return PF_ERROR_FORMAT;
        }
        if (seq) {
            items[n].id = id->string[0] == 'A' ? PF__TOK_SEQ_A : PF__TOK_SEQ_B;
            items[n++].type_id = (uint32_t)type_id;
            continue;
        }
        tok = pf__json_get(specials, id->string);
        ids = pf__json_get(tok, "ids");
        if (!ids || ids->type != PF__JSON_ARRAY || ids->count > 64) {
            snprintf(err, err_size, "%s: post_processor TemplateProcessing: special token \"%.40s\" has no \"ids\" in "
                     "special_tokens", path, id->string);
            free(items);
            return PF_ERROR_FORMAT;
        }
        for (x = ids->first; x; x = x->next) {
            items[n].type_id = (uint32_t)type_id;
            if ((items[n++].id = pf__tok_json_id(x)) < 0) {
                snprintf(err, err_size, "%s: post_processor TemplateProcessing: special token \"%.40s\" has a bad id",
                         path, id->string);
                free(items);
                return PF_ERROR_FORMAT;
            }
        }
    }
    r = pf__tok_set_post(t, which, items, n, path, err, err_size);
    free(items);
    return r;
}

/* Reads a post_processor object: its templates for one text and for a pair. A Sequence may
   hold one processor that adds tokens (HF applies a second one to the pieces the first made,
   which works only by accident) and any number of ByteLevel ones, which change offsets only. */
static pf_result pf__tok_read_post(pf_tokenizer *t, const pf__json *j, int depth, const char *path, char *err,
                                   size_t err_size) {
    int bad = 0;
    const pf__json *type = pf__tok_json_str(j, "type", &bad);
    const char *name;
    pf_result r;
    if (!j || j->type == PF__JSON_NULL) return PF_OK;
    if (!type) {
        snprintf(err, err_size, "%s: a post_processor has no \"type\"", path);
        return PF_ERROR_FORMAT;
    }
    name = type->string;
    if (!strcmp(name, "Sequence")) {
        const pf__json *list = pf__json_get(j, "processors"), *e;
        if (!list || list->type != PF__JSON_ARRAY || depth > 4) {
            snprintf(err, err_size, "%s: post_processor Sequence has no \"processors\" array", path);
            return PF_ERROR_FORMAT;
        }
        for (e = list->first; e; e = e->next)
            if ((r = pf__tok_read_post(t, e, depth + 1, path, err, err_size)) != PF_OK) return r;
        return PF_OK;
    }
    if (!strcmp(name, "ByteLevel")) return PF_OK; /* it changes offsets only */
    if (strcmp(name, "BertProcessing") && strcmp(name, "RobertaProcessing") && strcmp(name, "TemplateProcessing")) {
        snprintf(err, err_size, "%s: post_processor %.40s is not supported", path, name);
        return PF_ERROR_UNSUPPORTED;
    }
    if (t->has_post) {
        snprintf(err, err_size, "%s: a post_processor Sequence with two processors that add tokens (%.40s the second) "
                 "is not supported", path, name);
        return PF_ERROR_UNSUPPORTED;
    }
    t->has_post = 1;
    if (name[0] == 'B' || name[0] == 'R') {
        /* Bert: [CLS] A [SEP] B:1 [SEP]:1; Roberta: <s> A </s> </s> B </s>, every type id 0 */
        int32_t cls = pf__tok_json_pair_id(j, "cls"), sep = pf__tok_json_pair_id(j, "sep");
        uint32_t b = name[0] == 'B';
        pf__tok_post_item single[3], pair[6];
        if (cls < 0 || sep < 0) {
            snprintf(err, err_size, "%s: post_processor %s needs \"cls\" and \"sep\" as [token, id]", path, name);
            return PF_ERROR_FORMAT;
        }
        single[0].id = pair[0].id = cls;
        single[1].id = pair[1].id = PF__TOK_SEQ_A;
        single[2].id = pair[2].id = sep;
        single[0].type_id = single[1].type_id = single[2].type_id = pair[0].type_id = pair[1].type_id = pair[2].type_id = 0;
        if (b) {
            pair[3].id = PF__TOK_SEQ_B;
            pair[4].id = sep;
            pair[3].type_id = pair[4].type_id = 1;
        } else {
            pair[3].id = sep;
            pair[4].id = PF__TOK_SEQ_B;
            pair[5].id = sep;
            pair[3].type_id = pair[4].type_id = pair[5].type_id = 0;
        }
        if ((r = pf__tok_set_post(t, 0, single, 3, path, err, err_size)) != PF_OK) return r;
        return pf__tok_set_post(t, 1, pair, b ? 5 : 6, path, err, err_size);
    }
    if ((r = pf__tok_read_template(t, j, 0, path, err, err_size)) != PF_OK) return r;
    return pf__tok_read_template(t, j, 1, path, err, err_size);
}

/* After vocab, merges, components and added tokens are in: the id range, the id strings, the byte
   maps, the byte-fallback ids, the added tokens' normalized forms and their index. */
PF_PRIVATE pf_result pf__tok_finish(pf_tokenizer *t, const char *path, char *err, size_t err_size) {
    int32_t max_id = -1;
    size_t i, count, found = 0;
    int b;
    pf__tok_ctx c;
    for (i = 0; i <= t->vocab_mask; i++)
        if (t->vocab[i].id > max_id) max_id = t->vocab[i].id;
    for (i = 0; i < t->num_added; i++)
        if (t->added[i].id > max_id) max_id = t->added[i].id;
    count = t->vocab_count + t->num_added;
    if ((size_t)max_id + 1 > 4 * count + 65536) {
        snprintf(err, err_size, "%s: the ids are too sparse: the largest is %d for %zu tokens", path,
                 (int)max_id, count);
        return PF_ERROR_FORMAT;
    }
    t->num_ids = max_id + 1;
    if (!t->has_post) { /* HF's default: the texts as they are, the second of type id 1 */
        static const pf__tok_post_item plain[2] = {{PF__TOK_SEQ_A, 0}, {PF__TOK_SEQ_B, 1}};
        pf_result r;
        if ((r = pf__tok_set_post(t, 0, plain, 1, path, err, err_size)) != PF_OK ||
            (r = pf__tok_set_post(t, 1, plain, 2, path, err, err_size)) != PF_OK)
            return r;
    }
    t->id_str = (const char **)malloc((size_t)(t->num_ids ? t->num_ids : 1) * sizeof *t->id_str);
    t->id_len = (int32_t *)malloc((size_t)(t->num_ids ? t->num_ids : 1) * sizeof *t->id_len);
    if (!t->id_str || !t->id_len) goto oom;
    for (i = 0; i < (size_t)t->num_ids; i++) t->id_len[i] = -1;
    for (i = 0; i <= t->vocab_mask; i++) {
        const pf__tok_vocab_slot *slot = &t->vocab[i];
        if (slot->id < 0) continue;
        t->id_str[slot->id] = t->vocab_text + slot->offset;
        t->id_len[slot->id] = (int32_t)slot->len;
    }
    for (i = 0; i < t->num_pieces; i++) { /* a repeated Unigram piece: both ids */
        t->id_str[i] = t->vocab_text + t->pieces[i].offset;
        t->id_len[i] = (int32_t)t->pieces[i].len;
    }

    pf__tok_byte_map(t->byte_char);
    for (i = 0; i < 512; i++) t->char_byte[i] = -1;
    for (b = 0; b < 256; b++) {
        char name[8];
        t->char_byte[t->byte_char[b]] = (int16_t)b;
        t->byte_str_len[b] = (unsigned char)pf__utf8_encode(t->byte_char[b], t->byte_str[b]);
        t->byte_id[b] = pf__tok_vocab_find(t, (const char *)t->byte_str[b], t->byte_str_len[b]);
        snprintf(name, sizeof name, "<0x%02X>", b);
        t->fallback_id[b] = t->byte_fallback ? pf__tok_vocab_find(t, name, 6) : -1;
        found += t->fallback_id[b] >= 0;
    }
    if (t->byte_fallback && !found && t->model == PF__MODEL_BPE) {
        snprintf(err, err_size, "%s: BPE byte_fallback is set but the vocab has none of the byte tokens <0x00> .. <0xFF>",
                 path);
        return PF_ERROR_FORMAT;
    }

    /* what each added token is looked for as: normalized tokens through the normalizer */
    memset(&c, 0, sizeof c);
    c.t = t;
    for (i = 0; i < t->num_added; i++) {
        pf__tok_added *a = &t->added[i];
        const unsigned char *m = (const unsigned char *)a->content;
        size_t len = a->len;
        int first = 1;
        if (a->normalized && pf__tok_normalize(&c, m, len, &m, &len, &first)) break;
        if (!(a->match = pf__tok_dup((const char *)m, len))) break;
        a->match_len = len;
    }
    pf__tok_ctx_free(&c);
    if (i < t->num_added) goto oom;
    t->added_of_id = (int32_t *)malloc((size_t)(t->num_ids ? t->num_ids : 1) * sizeof *t->added_of_id);
    if (!t->added_of_id) goto oom;
    for (i = 0; i < (size_t)t->num_ids; i++) t->added_of_id[i] = -1;
    for (i = 0; i < t->num_added; i++) { /* HF decodes an added token to its content, normalized if it is */
        t->id_str[t->added[i].id] = t->added[i].normalized ? t->added[i].match : t->added[i].content;
        t->id_len[t->added[i].id] = (int32_t)(t->added[i].normalized ? t->added[i].match_len : t->added[i].len);
        if (t->added_of_id[t->added[i].id] < 0) t->added_of_id[t->added[i].id] = (int32_t)i;
    }

    /* each pass's matcher (an empty match is never looked for); of equal matches the first added */
    for (b = 0; b < 2; b++) {
        pf__trie_key *keys = (pf__trie_key *)malloc((t->num_added ? t->num_added : 1) * sizeof *keys);
        size_t n = 0;
        if (!keys) goto oom;
        for (i = 0; i < t->num_added; i++)
            if (t->added[i].normalized == b && t->added[i].match_len && !t->added[i].unmatched) {
                keys[n].s = (const unsigned char *)t->added[i].match;
                keys[n].len = t->added[i].match_len;
                keys[n++].value = (int32_t)i;
            }
        int failed = pf__trie_build(&t->added_ac[b], keys, n, 1) || pf__trie_link(&t->added_ac[b]);
        free(keys);
        if (failed) goto oom;
    }
    return PF_OK;
oom:
    snprintf(err, err_size, "%s: out of memory", path);
    return PF_ERROR_OUT_OF_MEMORY;
}

/* A string or null BPE option (continuing_subword_prefix, end_of_word_suffix) copied to *out
   (NULL for null); -1 when of another type, -2 out of memory. */
static int pf__tok_json_affix(const pf__json *model, const char *key, char **out, size_t *len) {
    int bad = 0;
    const pf__json *v = pf__tok_json_str(model, key, &bad);
    if (bad) return -1;
    if (!v) return 0;
    if (!(*out = pf__tok_dup(v->string, v->string_len))) return -2;
    *len = v->string_len;
    return 0;
}

/* model BPE: vocab, merges and options. */
static pf_result pf__tok_read_bpe(pf_tokenizer *t, const pf__json *model, const char *path, char *err,
                                  size_t err_size) {
    const pf__json *merges, *e, *v;
    pf__tok_merge_text *mt;
    size_t n;
    int bad = 0, rc;
    pf_result r;
    v = pf__json_get(model, "dropout");
    if (v && v->type != PF__JSON_NULL && !(v->type == PF__JSON_NUMBER && v->number == 0)) {
        snprintf(err, err_size, "%s: BPE dropout is not supported", path);
        return PF_ERROR_UNSUPPORTED;
    }
    if ((rc = pf__tok_json_affix(model, "continuing_subword_prefix", &t->prefix, &t->prefix_len)) == 0)
        rc = pf__tok_json_affix(model, "end_of_word_suffix", &t->suffix, &t->suffix_len);
    if (rc == -2) {
        snprintf(err, err_size, "%s: out of memory", path);
        return PF_ERROR_OUT_OF_MEMORY;
    }
    v = pf__tok_json_str(model, "unk_token", &bad);
    t->fuse_unk = pf__tok_json_bool(model, "fuse_unk", 0);
    t->ignore_merges = pf__tok_json_bool(model, "ignore_merges", 0);
    t->byte_fallback = pf__tok_json_bool(model, "byte_fallback", 0);
    if (rc || bad || t->fuse_unk < 0 || t->ignore_merges < 0 || t->byte_fallback < 0) {
        snprintf(err, err_size, "%s: a BPE option of the model has the wrong type", path);
        return PF_ERROR_FORMAT;
    }

    if ((r = pf__tok_set_vocab(t, pf__json_get(model, "vocab"), "model.vocab", path, err, err_size)) != PF_OK)
        return r;
    merges = pf__json_get(model, "merges");
    if (!merges || merges->type != PF__JSON_ARRAY) {
        snprintf(err, err_size, "%s: model.merges is %s, not an array", path, merges ? "of another type" : "missing");
        return PF_ERROR_FORMAT;
    }
    mt = (pf__tok_merge_text *)malloc((merges->count ? merges->count : 1) * sizeof *mt);
    if (!mt) {
        snprintf(err, err_size, "%s: out of memory", path);
        return PF_ERROR_OUT_OF_MEMORY;
    }
    for (n = 0, e = merges->first; e; e = e->next, n++) { /* "a b", or ["a", "b"] */
        const pf__json *a = e->first, *b = a ? a->next : NULL;
        if (e->type == PF__JSON_STRING && !pf__tok_split_merge_line(e->string, e->string_len, &mt[n])) continue;
        if (e->type == PF__JSON_ARRAY && e->count == 2 && a->type == PF__JSON_STRING && b->type == PF__JSON_STRING) {
            mt[n].a = a->string;
            mt[n].a_len = a->string_len;
            mt[n].b = b->string;
            mt[n].b_len = b->string_len;
            continue;
        }
        snprintf(err, err_size, "%s: merge %zu is neither \"a b\" nor [\"a\", \"b\"]", path, n + 1);
        free(mt);
        return PF_ERROR_FORMAT;
    }
    r = pf__tok_set_merges(t, mt, n, path, err, err_size);
    free(mt);
    if (r != PF_OK) return r;

    /* an unk_token missing from the vocab is no unk token: HF fails only when it is needed */
    v = pf__tok_json_str(model, "unk_token", &bad);
    t->unk_id = v ? pf__tok_vocab_find(t, v->string, v->string_len) : -1;
    return PF_OK;
}

/* model WordPiece: vocab, unk_token ("[UNK]"), continuing_subword_prefix ("##"),
   max_input_chars_per_word (100); HF's defaults where absent. */
static pf_result pf__tok_read_wordpiece(pf_tokenizer *t, const pf__json *model, const char *path, char *err,
                                        size_t err_size) {
    int bad = 0;
    const pf__json *unk = pf__tok_json_str(model, "unk_token", &bad), *prefix;
    long max_chars = pf__tok_json_count(model, "max_input_chars_per_word", 100);
    pf_result r;
    prefix = pf__tok_json_str(model, "continuing_subword_prefix", &bad);
    if (bad || max_chars < 0) {
        snprintf(err, err_size, "%s: a WordPiece option of the model has the wrong type", path);
        return PF_ERROR_FORMAT;
    }
    t->model = PF__MODEL_WORDPIECE;
    t->max_word_chars = (size_t)max_chars;
    if (!(t->prefix = pf__tok_dup(prefix ? prefix->string : "##", prefix ? prefix->string_len : 2))) {
        snprintf(err, err_size, "%s: out of memory", path);
        return PF_ERROR_OUT_OF_MEMORY;
    }
    t->prefix_len = prefix ? prefix->string_len : 2;
    if ((r = pf__tok_set_vocab(t, pf__json_get(model, "vocab"), "model.vocab", path, err, err_size)) != PF_OK)
        return r;
    t->unk_id = pf__tok_vocab_find(t, unk ? unk->string : "[UNK]", unk ? unk->string_len : 5);
    return PF_OK;
}

/* model Unigram: vocab as [piece, score] pairs (ids in order), unk_id, byte_fallback. */
static pf_result pf__tok_read_unigram(pf_tokenizer *t, const pf__json *model, const char *path, char *err,
                                      size_t err_size) {
    const pf__json *vocab = pf__json_get(model, "vocab"), *unk = pf__json_get(model, "unk_id"), *e;
    size_t text_len = 0, i;
    double min_score = INFINITY;
    pf_result r;
    t->model = PF__MODEL_UNIGRAM;
    t->byte_fallback = pf__tok_json_bool(model, "byte_fallback", 0);
    t->unk_id = unk && unk->type != PF__JSON_NULL ? pf__tok_json_id(unk) : -1;
    if (!vocab || vocab->type != PF__JSON_ARRAY || t->byte_fallback < 0 || (unk && unk->type != PF__JSON_NULL && t->unk_id < 0)) {
        snprintf(err, err_size, "%s: model Unigram needs a \"vocab\" array of [piece, score], an integer or null "
                 "\"unk_id\" and a boolean \"byte_fallback\"", path);
        return PF_ERROR_FORMAT;
    }
    if (t->unk_id >= 0 && (size_t)t->unk_id >= vocab->count) {
        snprintf(err, err_size, "%s: model Unigram's unk_id %d is not in its vocab of %zu pieces", path, (int)t->unk_id,
                 vocab->count);
        return PF_ERROR_FORMAT;
    }
    for (i = 0, e = vocab->first; e; e = e->next, i++) {
        if (e->type != PF__JSON_ARRAY || e->count != 2 || e->first->type != PF__JSON_STRING ||
            e->first->next->type != PF__JSON_NUMBER || e->first->string_len > UINT32_MAX - 1) {
            snprintf(err, err_size, "%s: model Unigram: vocab entry %zu is not [piece, score]", path, i);
            return PF_ERROR_FORMAT;
        }
        text_len += e->first->string_len + 1;
    }
    if (vocab->count >= INT32_MAX) {
        snprintf(err, err_size, "%s: model Unigram has too many pieces", path);
        return PF_ERROR_FORMAT;
    }
    if ((r = pf__tok_vocab_alloc(t, vocab->count, text_len, path, err, err_size)) != PF_OK) return r;
    if (!(t->pieces = (pf__tok_piece *)malloc((vocab->count ? vocab->count : 1) * sizeof *t->pieces))) {
        snprintf(err, err_size, "%s: out of memory", path);
        return PF_ERROR_OUT_OF_MEMORY;
    }
    for (i = 0, e = vocab->first; e; e = e->next, i++) {
        pf__tok_piece *p = &t->pieces[i];
        p->len = (uint32_t)e->first->string_len;
        p->score = e->first->next->number;
        p->offset = pf__tok_vocab_insert(t, e->first->string, p->len, (int32_t)i);
        if (p->score < min_score) min_score = p->score;
    }
    t->num_pieces = i;
    t->unk_score = min_score - 10.0;
    return PF_OK;
}

/* A tokenizer.json's normalizer, pre_tokenizer, decoder and post_processor (each may be absent). */
PF_PRIVATE pf_result pf__tok_read_components(pf_tokenizer *t, const pf__json *root, const char *path, char *err,
                                             size_t err_size) {
    pf_result r;
    if ((r = pf__tok_read_normalizer(t, pf__json_get(root, "normalizer"), 0, path, err, err_size)) != PF_OK ||
        (r = pf__tok_read_pretok(t, pf__json_get(root, "pre_tokenizer"), 0, path, err, err_size)) != PF_OK ||
        (r = pf__tok_read_decoder(t, pf__json_get(root, "decoder"), 0, path, err, err_size)) != PF_OK)
        return r;
    return pf__tok_read_post(t, pf__json_get(root, "post_processor"), 0, path, err, err_size);
}

/* tokenizer.json: model, added_tokens, normalizer, pre_tokenizer, decoder, post_processor. */
PF_PRIVATE pf_result pf__tok_from_json(pf_tokenizer *t, const pf__json *root, const char *path, char *err,
                                   size_t err_size) {
    const pf__json *model = pf__json_get(root, "model"), *added, *e, *v;
    int bad = 0;
    pf_result r;
    if (!root || root->type != PF__JSON_OBJECT || !model || model->type != PF__JSON_OBJECT) {
        snprintf(err, err_size, "%s: no \"model\" object", path);
        return PF_ERROR_FORMAT;
    }
    v = pf__tok_json_str(model, "type", &bad);
    if (!v || !strcmp(v->string, "BPE")) r = pf__tok_read_bpe(t, model, path, err, err_size);
    else if (!strcmp(v->string, "WordPiece")) r = pf__tok_read_wordpiece(t, model, path, err, err_size);
    else if (!strcmp(v->string, "Unigram")) r = pf__tok_read_unigram(t, model, path, err, err_size);
    else {
        snprintf(err, err_size, "%s: model type %.40s is not supported (only BPE, WordPiece and Unigram)", path,
                 v->string);
        return PF_ERROR_UNSUPPORTED;
    }
    if (r != PF_OK) return r;

    added = pf__json_get(root, "added_tokens");
    if (added && added->type != PF__JSON_NULL) {
        if (added->type != PF__JSON_ARRAY) {
            snprintf(err, err_size, "%s: added_tokens is not an array", path);
            return PF_ERROR_FORMAT;
        }
        /* HF: the model's vocab size (a Unigram's counts its pieces, repeated ones too) */
        int32_t next_id = (int32_t)(t->model == PF__MODEL_UNIGRAM ? t->num_pieces : t->vocab_count);
        for (e = added->first; e; e = e->next)
            if ((r = pf__tok_read_added(t, e, -1, &next_id, path, err, err_size)) != PF_OK) return r;
    }

    if ((r = pf__tok_read_components(t, root, path, err, err_size)) != PF_OK) return r;
    return pf__tok_finish(t, path, err, err_size);
}
/* Reads and parses a JSON file; *root NULL and PF_OK when optional and absent. */
PF_PRIVATE pf_result pf__tok_read_json(const char *path, int optional, pf__json **root, char *err, size_t err_size) {
    char *data = NULL, jerr[160];
    size_t len;
    *root = NULL;
    if (optional && !pf__file_exists(path)) return PF_OK;
    pf_result r = pf__read_file(path, PF__MAX_TEXT_FILE, &data, &len, err, err_size);
    if (r) return r;
    jerr[0] = 0;
    *root = pf__json_parse(data, len, jerr, sizeof jerr);
    free(data);
    if (!*root) {
        snprintf(err, err_size, "%s: %s", path, jerr[0] ? jerr : "not valid JSON");
        return strstr(jerr, "out of memory") ? PF_ERROR_OUT_OF_MEMORY : PF_ERROR_FORMAT;
    }
    return PF_OK;
}

/* The added tokens of a tokenizer_config.json's added_tokens_decoder ({"id": {"content": ...}});
   PF_OK when it has none. */
PF_PRIVATE pf_result pf__tok_read_added_decoder(pf_tokenizer *t, const pf__json *config, const char *path, char *err,
                                            size_t err_size) {
    const pf__json *atd = pf__json_get(config, "added_tokens_decoder"), *e;
    pf_result r;
    if (atd && atd->type != PF__JSON_OBJECT && atd->type != PF__JSON_NULL) {
        snprintf(err, err_size, "%s: added_tokens_decoder is not an object", path);
        return PF_ERROR_FORMAT;
    }
    for (e = atd && atd->type == PF__JSON_OBJECT ? atd->first : NULL; e; e = e->next) {
        char *endp;
        long id;
        errno = 0;
        id = strtol(e->key, &endp, 10);
        if (!e->key_len || *endp || errno || id < 0 || id >= INT32_MAX) {
            snprintf(err, err_size, "%s: added_tokens_decoder key \"%.40s\" is not an id", path, e->key);
            return PF_ERROR_FORMAT;
        }
        if ((r = pf__tok_read_added(t, e, (int32_t)id, NULL, path, err, err_size)) != PF_OK) return r;
    }
    return PF_OK;
}

/* vocab.json + merges.txt (+ tokenizer_config.json), as transformers builds a GPT-2 tokenizer from
   them: ByteLevel pre-tokenizer and decoder, add_prefix_space from the config (default false),
   added tokens from the config's added_tokens_decoder, and <|endoftext|> special when in the vocab. */
PF_PRIVATE pf_result pf__tok_from_files(pf_tokenizer *t, const char *dir, char *err, size_t err_size) {
    char path[4096];
    pf__json *vocab = NULL, *config = NULL;
    char *text = NULL;
    size_t n = 0, word_ends = 0;
    pf__tok_merge_text *mt = NULL;
    pf_result r;
    int add_prefix_space = 0;
    static const char eot[] = "<|endoftext|>";

    if (pf__path_join(path, sizeof path, dir, "vocab.json")) goto too_long;
    if ((r = pf__tok_read_json(path, 0, &vocab, err, err_size)) != PF_OK) goto done;
    if ((r = pf__tok_set_vocab(t, vocab, NULL, path, err, err_size)) != PF_OK) goto done;

    if (pf__path_join(path, sizeof path, dir, "merges.txt")) goto too_long;
    if ((r = pf__tok_read_merges_txt(path, &text, &mt, &n, &word_ends, err, err_size)) != PF_OK) goto done;
    if (2 * word_ends > n) { /* most merges end words: OpenAI GPT's, CLIP's, HerBERT's kind, not bytes */
        snprintf(err, err_size, "%s: a BPE whose merges end words with </w>, not a byte-level BPE (the only kind read from "
                 "vocab.json + merges.txt); write its tokenizer.json once with transformers: python -c \"import transformers "
                 "as t; t.AutoTokenizer.from_pretrained('%s').save_pretrained('%s')\"", path, dir, dir);
        r = PF_ERROR_UNSUPPORTED;
        goto done;
    }
    if ((r = pf__tok_set_merges(t, mt, n, path, err, err_size)) != PF_OK) goto done;

    if (pf__path_join(path, sizeof path, dir, "tokenizer_config.json")) goto too_long;
    if ((r = pf__tok_read_json(path, 1, &config, err, err_size)) != PF_OK) goto done;
    if (config) {
        add_prefix_space = pf__tok_json_bool(config, "add_prefix_space", 0);
        if (add_prefix_space < 0 || config->type != PF__JSON_OBJECT) {
            snprintf(err, err_size, "%s: add_prefix_space has the wrong type", path);
            r = PF_ERROR_FORMAT;
            goto done;
        }
        if ((r = pf__tok_read_added_decoder(t, config, path, err, err_size)) != PF_OK) goto done;
    }
    {
        int32_t id = pf__tok_vocab_find(t, eot, sizeof eot - 1);
        if (id >= 0 && !pf__tok_added_find(t, eot, sizeof eot - 1) && pf__tok_add_token(t, eot, sizeof eot - 1, id, 1, 0, 0, 0, 0)) {
            snprintf(err, err_size, "%s: out of memory", dir);
            r = PF_ERROR_OUT_OF_MEMORY;
            goto done;
        }
    }
    t->unk_id = -1;
    t->byte_level = 1;
    t->has_decoder = 1;
    t->num_decs = 1;
    t->decs[0].kind = PF__DEC_BYTELEVEL;
    if (add_prefix_space) t->pres[t->num_pres++].kind = PF__PRE_PREFIX_SPACE;
    t->pres[t->num_pres].kind = PF__PRE_SPLIT;
    t->pres[t->num_pres].pattern = PF__PAT_GPT2;
    t->pres[t->num_pres++].behavior = PF__SPLIT_ISOLATED;
    if (pf__path_join(path, sizeof path, dir, "merges.txt")) goto too_long;
    r = pf__tok_finish(t, path, err, err_size);
    goto done;
too_long:
    snprintf(err, err_size, "%.200s: the path is too long", dir);
    r = PF_ERROR_INVALID_ARGUMENT;
done:
    pf__json_free(vocab);
    pf__json_free(config);
    free(text);
    free(mt);
    return r;
}

/* additional_special_tokens (or extra_special_tokens): special from now on where already added,
   else added with their vocab.json id or the next free one after next_id. */
PF_PRIVATE pf_result pf__tok_listed_specials(pf_tokenizer *t, const pf__json *config, int32_t next_id,
                                             const char *config_path, char *err, size_t err_size) {
    const pf__json *list = pf__json_get(config, "additional_special_tokens");
    if (!list || list->type == PF__JSON_NULL) list = pf__json_get(config, "extra_special_tokens");
    if (list && list->type != PF__JSON_ARRAY && list->type != PF__JSON_NULL) {
        snprintf(err, err_size, "%s: additional_special_tokens is not a list", config_path);
        return PF_ERROR_FORMAT;
    }
    for (size_t i = 0; i < t->num_added; i++)
        if (t->added[i].id >= next_id) next_id = t->added[i].id + 1;
    for (const pf__json *e = list && list->type == PF__JSON_ARRAY ? list->first : NULL; e; e = e->next) {
        const pf__json *c = e->type == PF__JSON_OBJECT ? pf__json_get(e, "content") : e;
        pf__tok_added *a;
        int32_t id;
        if (!c || c->type != PF__JSON_STRING || !c->string_len) {
            snprintf(err, err_size, "%s: additional_special_tokens holds a non-string", config_path);
            return PF_ERROR_FORMAT;
        }
        if ((a = pf__tok_added_find(t, c->string, c->string_len))) {
            a->special = 1;
            a->unmatched = 0;
            continue;
        }
        if ((id = pf__tok_vocab_find(t, c->string, c->string_len)) < 0) id = next_id++;
        if (pf__tok_add_token(t, c->string, c->string_len, id, 1, 0, 0, 0, 0)) return pf__tok_out_of_memory(config_path, err, err_size);
    }
    return PF_OK;
}

/* The id of a tokenizer_config.json special token (a string, or an object with "content"): an
   added token's, else the vocab's; -1 when absent or unknown. */
PF_PRIVATE int32_t pf__tok_config_token(const pf_tokenizer *t, const pf__json *config, const char *key) {
    const pf__json *v = pf__json_get(config, key);
    const pf__tok_added *a;
    if (v && v->type == PF__JSON_OBJECT) v = pf__json_get(v, "content");
    if (!v || v->type != PF__JSON_STRING) return -1;
    if ((a = pf__tok_added_find(t, v->string, v->string_len))) return a->id;
    return pf__tok_vocab_find(t, v->string, v->string_len);
}

/* ByT5 (tokenizer_config.json's tokenizer_class "ByT5Tokenizer", no tokenizer.json), as
   transformers' ByT5Tokenizer: each UTF-8 byte is id byte + 3, after <pad> <eos> <unk> (which
   strip the spaces around them); the extra ids and other added tokens from added_tokens_decoder,
   or, in configs older than it, additional_special_tokens (else <extra_id_0> .. extra_ids - 1) from
   id 259 on; "$A </s>" and "$A </s> $B </s>" (type ids 0), without a second </s> when the text's
   ids end with one; decode drops the bytes that are not valid UTF-8. The tokens the config names
   (pad_token, eos_token, ...) are special, as transformers' decode(skip_special_tokens=True) skips them. */
PF_PRIVATE pf_result pf__tok_from_byt5(pf_tokenizer *t, const pf__json *config, const char *path, char *err,
                                   size_t err_size) {
    static const char *const named[] = {"pad_token", "eos_token", "unk_token", "bos_token",
                                        "sep_token", "cls_token", "mask_token"};
    static const char *const first[PF__BYTES_OFFSET] = {"<pad>", "</s>", "<unk>"};
    pf__tok_post_item single[2] = {{PF__TOK_SEQ_A, 0}, {-1, 0}}, pair[4] = {{PF__TOK_SEQ_A, 0}, {-1, 0},
                                                                          {PF__TOK_SEQ_B, 0}, {-1, 0}};
    int32_t eos;
    size_t i, k;
    pf_result r;
    t->model = PF__MODEL_BYTES;
    if ((r = pf__tok_vocab_alloc(t, 256, 2 * 256, path, err, err_size)) != PF_OK) return r;
    for (i = 0; i < 256; i++) {
        char byte = (char)(unsigned char)i;
        pf__tok_vocab_insert(t, &byte, 1, (int32_t)i + PF__BYTES_OFFSET);
    }
    if (pf__json_get(config, "added_tokens_decoder")) {
        if ((r = pf__tok_read_added_decoder(t, config, path, err, err_size)) != PF_OK) return r;
    } else {
        const pf__json *list = pf__json_get(config, "additional_special_tokens"), *e;
        long extra = pf__tok_json_count(config, "extra_ids", 125);
        int32_t id = 256 + PF__BYTES_OFFSET;
        if (!list) list = pf__json_get(config, "extra_special_tokens");
        if (extra < 0 || extra > 65536 || (list && list->type != PF__JSON_ARRAY)) {
            snprintf(err, err_size, "%s: extra_ids or additional_special_tokens has the wrong type", path);
            return PF_ERROR_FORMAT;
        }
        for (i = 0; i < PF__BYTES_OFFSET; i++)
            if (pf__tok_add_token(t, first[i], strlen(first[i]), (int32_t)i, 0, 1, 1, 1, 0)) goto oom;
        for (e = list ? list->first : NULL; e; e = e->next) {
            if (e->type != PF__JSON_STRING) {
                snprintf(err, err_size, "%s: additional_special_tokens holds a non-string", path);
                return PF_ERROR_FORMAT;
            }
            if (pf__tok_add_token(t, e->string, e->string_len, id++, 1, 0, 0, 0, 0)) goto oom;
        }
        for (k = 0; !list && k < (size_t)extra; k++) {
            char name[32];
            snprintf(name, sizeof name, "<extra_id_%zu>", k);
            if (pf__tok_add_token(t, name, strlen(name), id++, 1, 0, 0, 0, 0)) goto oom;
        }
    }
    for (k = 0; k < sizeof named / sizeof named[0]; k++) {
        int32_t id = pf__tok_config_token(t, config, named[k]);
        for (i = 0; id >= 0 && i < t->num_added; i++)
            if (t->added[i].id == id) t->added[i].special = 1;
    }
    eos = pf__json_get(config, "eos_token") ? pf__tok_config_token(t, config, "eos_token") : 1;
    if (eos < 0) {
        snprintf(err, err_size, "%s: ByT5Tokenizer's eos_token is not one of its tokens", path);
        return PF_ERROR_FORMAT;
    }
    single[1].id = pair[1].id = pair[3].id = eos;
    if ((r = pf__tok_set_post(t, 0, single, 2, path, err, err_size)) != PF_OK ||
        (r = pf__tok_set_post(t, 1, pair, 4, path, err, err_size)) != PF_OK)
        return r;
    t->has_post = 1;
    t->eos_once = 1;
    t->unk_id = -1; /* every byte has its id */
    t->has_decoder = 1;
    t->num_decs = 1;
    t->decs[0].kind = PF__DEC_UTF8_IGNORE;
    return pf__tok_finish(t, path, err, err_size);
oom:
    snprintf(err, err_size, "%s: out of memory", path);
    return PF_ERROR_OUT_OF_MEMORY;
}

