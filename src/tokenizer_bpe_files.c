#include "internal.h"
/* ---- BPE from vocab and merges files ---- */

/* The BPE tokenizers transformers builds from vocab / merges files (no tokenizer.json), picked by
   tokenizer_config.json's tokenizer_class ("...Fast" the same), as transformers 5 builds them:

     OpenAIGPTTokenizer, HerbertTokenizer: a tokenizers pipeline its __init__ writes down (read
       here from PF__BPE_FILES_PIPELINES, one place): BertNormalizer (OpenAI GPT lowercases and
       strips accents, HerBERT neither), BertPreTokenizer, BPE on vocab.json + merges.txt with
       end_of_word_suffix "</w>" and unk, BPEDecoder; HerBERT's BertProcessing with the ids 0 and
       2 its __init__ writes, whatever its cls and sep tokens are.
     CTRLTokenizer, BlenderbotSmallTokenizer (vocab.json + merges.txt), PhobertTokenizer,
       BertweetTokenizer (fastBPE's vocab.txt + bpe.codes): Python classes whose _tokenize takes
       the words \S+\n? of each text between added tokens and runs bpe() on each: merges on
       strings, the pieces looked up with "@@" after all but the last (PF__MODEL_WORD_BPE, with
       t->word_bpe); decode joins the tokens with spaces and drops "@@ ". Blenderbot-small
       rewrites and lowercases each word first; PhoBERT and BERTweet (whose texts are expected
       word-segmented and normalized by the user) put <s> A </s> (</s></s> B </s>) around a text.
     XLMTokenizer, FlaubertTokenizer: Python classes whose _tokenize runs the Moses pipeline
       (src/moses.c; XLM's language is "en", as transformers 5's tokenize() passes it none;
       FlauBERT's "fr") and bpe() on each word: the merges.txt pairs (a line's first two fields,
       no header skipped), the pieces looked up as they are, the last ending with "</w>". XLM's
       do_lowercase_and_remove_accent (default true) lowercases each word and drops its accents;
       FlauBERT's do_lowercase lowercases after NFC. <s> A </s>, pair <s> A </s> B </s>, type ids 0;
       decode joins the tokens and turns each "</w>" into a space.

   Each class's special tokens (its defaults, or the config's) are special added tokens, as
   transformers adds them. Config keys that would change the ids and are not implemented are
   refused by name: split_special_tokens, add_bos_token / add_eos_token (a pipeline class's
   post-processor), do_lower_case (the Python classes' lowercasing of added tokens), BERTweet's
   normalization (NLTK's TweetTokenizer rules and the emoji package's names). */

enum {
    PF__BPE_FILES_OPENAI_GPT = 1, PF__BPE_FILES_HERBERT, PF__BPE_FILES_CTRL, PF__BPE_FILES_BLENDERBOT_SMALL,
    PF__BPE_FILES_PHOBERT, PF__BPE_FILES_BERTWEET, PF__BPE_FILES_XLM, PF__BPE_FILES_FLAUBERT
};

/* XLM's and FlauBERT's additional_special_tokens when the config lists none. */
static const char *const pf__bpe_files_xlm_extra[] = {"<special0>", "<special1>", "<special2>", "<special3>",
                                                      "<special4>", "<special5>", "<special6>", "<special7>",
                                                      "<special8>", "<special9>"};

/* Each class: its kind, and its special tokens' defaults in transformers' SPECIAL_TOKENS_ATTRIBUTES
   order (bos, eos, unk, sep, pad, cls, mask; NULL: none). */
static const struct {
    const char *name;
    int kind;
    const char *specials[7];
} pf__bpe_files_classes[] = {
    {"OpenAIGPTTokenizer", PF__BPE_FILES_OPENAI_GPT, {NULL, NULL, "<unk>", NULL, NULL, NULL, NULL}},
    {"HerbertTokenizer", PF__BPE_FILES_HERBERT, {NULL, NULL, "<unk>", "</s>", "<pad>", "<s>", "<mask>"}},
    {"CTRLTokenizer", PF__BPE_FILES_CTRL, {NULL, NULL, "<unk>", NULL, NULL, NULL, NULL}},
    {"BlenderbotSmallTokenizer", PF__BPE_FILES_BLENDERBOT_SMALL, {"__start__", "__end__", "__unk__", NULL, "__null__", NULL, NULL}},
    {"PhobertTokenizer", PF__BPE_FILES_PHOBERT, {"<s>", "</s>", "<unk>", "</s>", "<pad>", "<s>", "<mask>"}},
    {"BertweetTokenizer", PF__BPE_FILES_BERTWEET, {"<s>", "</s>", "<unk>", "</s>", "<pad>", "<s>", "<mask>"}},
    {"XLMTokenizer", PF__BPE_FILES_XLM, {"<s>", NULL, "<unk>", "</s>", "<pad>", "</s>", "<special1>"}},
    {"FlaubertTokenizer", PF__BPE_FILES_FLAUBERT, {"<s>", NULL, "<unk>", "</s>", "<pad>", "</s>", "<special1>"}},
};
static const char *const pf__bpe_files_special_keys[7] = {"bos_token", "eos_token", "unk_token", "sep_token",
                                                          "pad_token", "cls_token", "mask_token"};

/* The tokenizers pipelines of OpenAI GPT's and HerBERT's __init__, as a tokenizer.json has them. */
static const char pf__bpe_files_openai_gpt[] =
    "{\"normalizer\": {\"type\": \"BertNormalizer\", \"lowercase\": true},"
    " \"pre_tokenizer\": {\"type\": \"BertPreTokenizer\"}, \"decoder\": {\"type\": \"BPEDecoder\", \"suffix\": \"</w>\"}}";
static const char pf__bpe_files_herbert[] =
    "{\"normalizer\": {\"type\": \"BertNormalizer\", \"lowercase\": false, \"strip_accents\": false,"
    " \"clean_text\": true, \"handle_chinese_chars\": true},"
    " \"pre_tokenizer\": {\"type\": \"BertPreTokenizer\"}, \"decoder\": {\"type\": \"BPEDecoder\", \"suffix\": \"</w>\"},"
    " \"post_processor\": {\"type\": \"BertProcessing\", \"sep\": [\"</s>\", 2], \"cls\": [\"<s>\", 0]}}";

/* The index of tokenizer_class (less a "Fast" suffix) in pf__bpe_files_classes, or its count. */
static size_t pf__bpe_files_index(const char *tokenizer_class) {
    size_t i, n = strlen(tokenizer_class);
    if (n > 4 && !strcmp(tokenizer_class + n - 4, "Fast")) n -= 4;
    for (i = 0; i < PF__TOK_LEN(pf__bpe_files_classes); i++)
        if (strlen(pf__bpe_files_classes[i].name) == n && !strncmp(tokenizer_class, pf__bpe_files_classes[i].name, n))
            break;
    return i;
}

/* Is tokenizer_class one of these (1), or not (0)? */
PF_PRIVATE int pf__tok_bpe_files_class(const char *tokenizer_class) {
    return pf__bpe_files_index(tokenizer_class) < PF__TOK_LEN(pf__bpe_files_classes);
}

/* The text of special token `key`: the config's (a string or {"content": ...}), NULL when the
   config sets it to null, else def. *bad when it is of another type. */
static const char *pf__bpe_files_special_text(const pf__json *config, const char *key, const char *def, size_t *len,
                                              int *bad) {
    const pf__json *v = pf__json_get(config, key);
    if (v && v->type == PF__JSON_OBJECT) v = pf__json_get(v, "content");
    if (v && v->type == PF__JSON_NULL) return NULL;
    if (v && v->type != PF__JSON_STRING) {
        *bad = 1;
        return NULL;
    }
    if (v) {
        *len = v->string_len;
        return v->string;
    }
    if (def) *len = strlen(def);
    return def;
}

/* The id of the class's special token number `which` (in pf__bpe_files_special_keys), as
   convert_tokens_to_ids gives it: the added token's, else the vocab's; -1 when none. */
static int32_t pf__bpe_files_special_id(const pf_tokenizer *t, const pf__json *config, size_t cls, int which) {
    size_t len = 0;
    int bad = 0;
    const char *s = pf__bpe_files_special_text(config, pf__bpe_files_special_keys[which],
                                               pf__bpe_files_classes[cls].specials[which], &len, &bad);
    const pf__tok_added *a = s && len ? pf__tok_added_find(t, s, len) : NULL;
    if (a) return a->id;
    return s && len ? pf__tok_vocab_find(t, s, len) : -1;
}

/* The config's added tokens, then the class's special tokens, as transformers' _add_tokens: one
   already added stays as it is, another becomes a special added token with its vocab id or the
   next id after the vocab and the added tokens; then additional_special_tokens. The unk token's
   vocab id in t->unk_id (the Python classes map a piece the vocab lacks to it). */
static pf_result pf__bpe_files_specials(pf_tokenizer *t, const pf__json *config, size_t cls, const char *config_path,
                                        char *err, size_t err_size) {
    int32_t next_id = 0;
    size_t i, len = 0;
    int bad = 0;
    pf_result r;
    const char *unk;
    if ((r = pf__tok_read_added_decoder(t, config, config_path, err, err_size)) != PF_OK) return r;
    for (i = 0; i <= t->vocab_mask; i++)
        if (t->vocab[i].id >= next_id) next_id = t->vocab[i].id + 1;
    for (i = 0; i < t->num_added; i++)
        if (t->added[i].id >= next_id) next_id = t->added[i].id + 1;
    for (i = 0; i < 7; i++) {
        const char *s = pf__bpe_files_special_text(config, pf__bpe_files_special_keys[i],
                                                   pf__bpe_files_classes[cls].specials[i], &len, &bad);
        int32_t id;
        if (bad) {
            snprintf(err, err_size, "%s: %s is neither a string nor {\"content\": ...}", config_path,
                     pf__bpe_files_special_keys[i]);
            return PF_ERROR_FORMAT;
        }
        if (!s || !len || pf__tok_added_find(t, s, len)) continue;
        if ((id = pf__tok_vocab_find(t, s, len)) < 0) id = next_id++;
        if (pf__tok_add_token(t, s, len, id, 1, 0, 0, 0, 0)) return pf__tok_out_of_memory(config_path, err, err_size);
    }
    unk = pf__bpe_files_special_text(config, "unk_token", pf__bpe_files_classes[cls].specials[2], &len, &bad);
    t->unk_id = unk && len ? pf__tok_vocab_find(t, unk, len) : -1;
    if ((pf__bpe_files_classes[cls].kind == PF__BPE_FILES_XLM || pf__bpe_files_classes[cls].kind == PF__BPE_FILES_FLAUBERT) &&
        !pf__json_get(config, "additional_special_tokens") && !pf__json_get(config, "extra_special_tokens")) {
        for (i = 0; i < PF__TOK_LEN(pf__bpe_files_xlm_extra); i++) { /* the class's defaults */
            const char *s = pf__bpe_files_xlm_extra[i];
            pf__tok_added *a = pf__tok_added_find(t, s, strlen(s));
            int32_t id;
            if (a) {
                a->special = 1;
                continue;
            }
            if ((id = pf__tok_vocab_find(t, s, strlen(s))) < 0) id = next_id++;
            if (pf__tok_add_token(t, s, strlen(s), id, 1, 0, 0, 0, 0)) return pf__tok_out_of_memory(config_path, err, err_size);
        }
    }
    return pf__tok_listed_specials(t, config, next_id, config_path, err, err_size);
}

/* Config keys that change the ids and are not implemented: PF_ERROR_UNSUPPORTED naming them. */
static pf_result pf__bpe_files_refused(const pf__json *config, size_t cls, const char *config_path, char *err,
                                       size_t err_size) {
    int kind = pf__bpe_files_classes[cls].kind, pipeline = kind == PF__BPE_FILES_OPENAI_GPT || kind == PF__BPE_FILES_HERBERT;
    static const char *const keys[] = {"split_special_tokens", "add_bos_token", "add_eos_token", "do_lower_case",
                                       "normalization"};
    size_t i;
    for (i = 0; i < PF__TOK_LEN(keys); i++) {
        int on = pf__tok_json_bool(config, keys[i], 0);
        const char *why = NULL;
        if (i == 0) why = "the added tokens then are not looked for in a text";
        else if (i <= 2 && pipeline) why = "a post-processor that adds <s> / </s>";
        else if (i == 3 && !pipeline) why = "added tokens lowercased";
        else if (i == 4 && kind == PF__BPE_FILES_BERTWEET)
            why = "BERTweet's tweet normalization: NLTK's TweetTokenizer rules, and emoji turned into their names "
                  "by the emoji package when it is installed; normalize the text before, as PhoBERT expects";
        if (!why) continue;
        if (on < 0) {
            snprintf(err, err_size, "%s: %s is not a boolean", config_path, keys[i]);
            return PF_ERROR_FORMAT;
        }
        if (on) {
            snprintf(err, err_size, "%s: %s with %s true is not supported (%s)", config_path,
                     pf__bpe_files_classes[cls].name, keys[i], why);
            return PF_ERROR_UNSUPPORTED;
        }
    }
    return PF_OK;
}

/* OpenAI GPT's and HerBERT's pipeline: vocab.json, merges.txt (as tokenizers reads it), the
   components of their __init__. */
static pf_result pf__bpe_files_pipeline(pf_tokenizer *t, const char *dir, const pf__json *config, size_t cls,
                                        const char *config_path, char *err, size_t err_size) {
    char path[4096], jerr[160];
    pf__json *vocab = NULL, *components = NULL;
    char *text = NULL;
    pf__tok_merge_text *mt = NULL;
    size_t n = 0, word_ends = 0;
    pf_result r;
    const char *spec = pf__bpe_files_classes[cls].kind == PF__BPE_FILES_HERBERT ? pf__bpe_files_herbert
                                                                                : pf__bpe_files_openai_gpt;
    if (pf__path_join(path, sizeof path, dir, "vocab.json")) goto too_long;
    if ((r = pf__tok_read_json(path, 0, &vocab, err, err_size)) != PF_OK ||
        (r = pf__tok_set_vocab(t, vocab, NULL, path, err, err_size)) != PF_OK)
        goto done;
    if (pf__path_join(path, sizeof path, dir, "merges.txt")) goto too_long;
    if ((r = pf__tok_read_merges_txt(path, &text, &mt, &n, &word_ends, err, err_size)) != PF_OK ||
        (r = pf__tok_set_merges(t, mt, n, path, err, err_size)) != PF_OK)
        goto done;
    if (!(t->suffix = pf__tok_dup("</w>", 4))) goto oom;
    t->suffix_len = 4;
    jerr[0] = 0;
    if (!(components = pf__json_parse(spec, strlen(spec), jerr, sizeof jerr))) {
        if (strstr(jerr, "out of memory")) goto oom;
        snprintf(err, err_size, "%s: the pipeline of %s does not parse: %s", dir, pf__bpe_files_classes[cls].name, jerr);
        r = PF_ERROR_FORMAT;
        goto done;
    }
    if ((r = pf__tok_read_components(t, components, config_path, err, err_size)) != PF_OK ||
        (r = pf__bpe_files_specials(t, config, cls, config_path, err, err_size)) != PF_OK)
        goto done;
    t->has_decoder = 1;
    r = pf__tok_finish(t, path, err, err_size);
    goto done;
oom:
    r = pf__tok_out_of_memory(dir, err, err_size);
    goto done;
too_long:
    snprintf(err, err_size, "%.200s: the path is too long", dir);
    r = PF_ERROR_INVALID_ARGUMENT;
done:
    pf__json_free(vocab);
    pf__json_free(components);
    free(text);
    free(mt);
    return r;
}

/* The lines of text[0 .. len) as Python's text files split them (universal newlines: \n, \r\n and
   \r end a line): the start and length of line *i at each call; 0 when none is left. A last piece
   without a line end is a line when keep_last. */
static int pf__py_next_line(const char *text, size_t len, size_t *at, size_t *start, size_t *line_len, int keep_last) {
    size_t i = *at;
    if (i >= len) return 0;
    while (i < len && text[i] != '\n' && text[i] != '\r') i++;
    if (i == len && !keep_last) return 0;
    *start = *at;
    *line_len = i - *at;
    if (i < len && text[i] == '\r' && i + 1 < len && text[i + 1] == '\n') i++;
    *at = i + 1;
    return 1;
}

/* Python's str.split() of s[0 .. n): up to max fields (start, length) whitespace-separated; the count. */
static size_t pf__py_fields(const char *s, size_t n, size_t *starts, size_t *lens, size_t max) {
    size_t i = 0, k, count = 0;
    uint32_t cp;
    while (i < n) {
        size_t start;
        while (i < n && (k = pf__utf8_decode((const unsigned char *)s + i, n - i, &cp), pf__py_space(cp))) i += k;
        if (i == n) break;
        start = i;
        while (i < n && (k = pf__utf8_decode((const unsigned char *)s + i, n - i, &cp), !pf__py_space(cp))) i += k;
        if (count < max) {
            starts[count] = start;
            lens[count] = i - start;
        }
        count++;
    }
    return count;
}

/* The merges of a Python class as it reads them: the file's lines (the last piece, after the last
   line end, dropped, and the first line too with skip_first: merges.txt's version line); each
   line's whitespace-separated fields the pair, less the last one with drop_last (bpe.codes' count),
   or its first two with first_two (XLM's split()[:2]). A line without two fields takes a rank and
   makes no merge, so ranks keep their order
   without them. The strings and what each pair makes go into sy's vocab (ids from 1), the pairs
   into its merges. */
static pf_result pf__bpe_files_word_merges(pf_tokenizer *sy, const char *path, int skip_first, int drop_last,
                                           int first_two, char *err, size_t err_size) {
    char *text = NULL, *joined = NULL;
    size_t len = 0, at = 0, start, line_len, n = 0, lines = 0, i;
    pf__tok_merge_text *mt = NULL;
    int32_t next_id = 1;
    pf_result r;
    if ((r = pf__read_file(path, PF__MAX_TEXT_FILE, &text, &len, err, err_size)) != PF_OK) return r;
    while (pf__py_next_line(text, len, &at, &start, &line_len, 0)) lines++;
    mt = (pf__tok_merge_text *)malloc((lines ? lines : 1) * sizeof *mt);
    joined = (char *)malloc(len + 1);
    if (!mt || !joined) goto oom;
    for (at = 0, i = 0; pf__py_next_line(text, len, &at, &start, &line_len, 0); i++) {
        size_t starts[3], lens[3], count = pf__py_fields(text + start, line_len, starts, lens, 3);
        if (i == 0 && skip_first) continue;
        if (drop_last && count > 0) count--;
        if (first_two && count > 2) count = 2;
        if (count != 2) continue;
        mt[n].a = text + start + starts[0];
        mt[n].a_len = lens[0];
        mt[n].b = text + start + starts[1];
        mt[n].b_len = lens[1];
        n++;
    }
    if ((r = pf__tok_vocab_alloc(sy, 3 * n + 1, 2 * len + 3 * n + 1, path, err, err_size)) != PF_OK) goto done;
    for (i = 0; i < n; i++) { /* each string once, by first appearance */
        const char *s[3];
        size_t l[3], k;
        memcpy(joined, mt[i].a, mt[i].a_len);
        memcpy(joined + mt[i].a_len, mt[i].b, mt[i].b_len);
        s[0] = mt[i].a, l[0] = mt[i].a_len;
        s[1] = mt[i].b, l[1] = mt[i].b_len;
        s[2] = joined, l[2] = mt[i].a_len + mt[i].b_len;
        for (k = 0; k < 3; k++)
            if (pf__tok_vocab_find(sy, s[k], l[k]) < 0) pf__tok_vocab_insert(sy, s[k], l[k], next_id++);
    }
    r = pf__tok_set_merges(sy, mt, n, path, err, err_size);
    if (r == PF_OK) {
        sy->model = PF__MODEL_BPE;
        r = pf__tok_finish(sy, path, err, err_size);
    }
    goto done;
oom:
    r = pf__tok_out_of_memory(path, err, err_size);
done:
    free(text);
    free(joined);
    free(mt);
    return r;
}

/* fastBPE's vocab.txt as PhoBERT's and BERTweet's add_from_file reads it, after their bos, pad,
   eos and unk (ids 0 .. 3): a line "<token> <count>" each (stripped; the token is what comes before
   the last space), ids in order. A token listed twice is refused (transformers would give two
   tokens one id). */
static pf_result pf__bpe_files_vocab_txt(pf_tokenizer *t, const char *path, const pf__json *config, size_t cls,
                                         const char *config_path, char *err, size_t err_size) {
    static const int order[4] = {0, 4, 1, 2}; /* bos, pad, eos, unk among the special keys */
    char *text = NULL;
    size_t len = 0, at = 0, start, line_len, lines = 0, extra = 0, i, line = 0;
    const char *special[4];
    size_t special_len[4];
    int bad = 0;
    int32_t id = 0;
    pf_result r;
    for (i = 0; i < 4; i++) {
        special_len[i] = 0;
        special[i] = pf__bpe_files_special_text(config, pf__bpe_files_special_keys[order[i]],
                                                pf__bpe_files_classes[cls].specials[order[i]], &special_len[i], &bad);
        if (!special[i] || bad) {
            snprintf(err, err_size, "%s: %s must be a string for %s (its vocab.txt ids start after it)", config_path,
                     pf__bpe_files_special_keys[order[i]], pf__bpe_files_classes[cls].name);
            return PF_ERROR_FORMAT;
        }
        extra += special_len[i] + 1;
    }
    if ((r = pf__read_file(path, PF__MAX_TEXT_FILE, &text, &len, err, err_size)) != PF_OK) return r;
    while (pf__py_next_line(text, len, &at, &start, &line_len, 1)) lines++;
    if ((r = pf__tok_vocab_alloc(t, lines + 4, len + lines + extra + 1, path, err, err_size)) != PF_OK) goto done;
    for (i = 0; i < 4; i++) {
        if (pf__tok_vocab_find(t, special[i], special_len[i]) >= 0) {
            snprintf(err, err_size, "%s: the special tokens bos, pad, eos and unk are not four different strings "
                     "(transformers then gives one of them two ids)", config_path);
            r = PF_ERROR_UNSUPPORTED;
            goto done;
        }
        pf__tok_vocab_insert(t, special[i], special_len[i], id++);
    }
    for (at = 0; pf__py_next_line(text, len, &at, &start, &line_len, 1);) {
        const char *s = text + start;
        size_t lo = 0, hi = line_len, k, sp;
        uint32_t cp;
        line++;
        while (lo < hi && (k = pf__utf8_decode((const unsigned char *)s + lo, hi - lo, &cp), pf__py_space(cp))) lo += k;
        while (hi > lo) { /* Python's strip() of the end */
            size_t m = hi - 1;
            while (m > lo && ((unsigned char)s[m] & 0xC0) == 0x80) m--;
            if (pf__utf8_decode((const unsigned char *)s + m, hi - m, &cp) != hi - m || !pf__py_space(cp)) break;
            hi = m;
        }
        for (sp = hi; sp > lo && s[sp - 1] != ' '; sp--) {}
        if (sp == lo) {
            snprintf(err, err_size, "%s: line %zu is not \"<token> <count>\"", path, line);
            r = PF_ERROR_FORMAT;
            goto done;
        }
        if (pf__tok_vocab_find(t, s + lo, sp - 1 - lo) >= 0) {
            snprintf(err, err_size, "%s: line %zu: token \"%.*s\" is listed twice (transformers then gives two tokens "
                     "one id)", path, line, pf__tok_show_len(sp - 1 - lo), s + lo);
            r = PF_ERROR_FORMAT;
            goto done;
        }
        if (id == INT32_MAX) {
            snprintf(err, err_size, "%s: too many tokens", path);
            r = PF_ERROR_FORMAT;
            goto done;
        }
        pf__tok_vocab_insert(t, s + lo, sp - 1 - lo, id++);
    }
done:
    free(text);
    return r;
}

/* The rest of XLM's and FlauBERT's classes (t's vocab, merges and special tokens read): the Moses
   pipeline as the pre-tokenizer, <s> A </s> (B </s>), the "</w>" decoder. */
static pf_result pf__bpe_files_moses(pf_tokenizer *t, const char *dir, const pf__json *config, size_t cls,
                                     const char *config_path, const char *path, char *err, size_t err_size) {
    int xlm = pf__bpe_files_classes[cls].kind == PF__BPE_FILES_XLM;
    const char *key = xlm ? "do_lowercase_and_remove_accent" : "do_lowercase";
    int lower = pf__tok_json_bool(config, key, xlm);
    int32_t bos = pf__bpe_files_special_id(t, config, cls, 0), sep = pf__bpe_files_special_id(t, config, cls, 3);
    pf__tok_post_item single[3], pair[5];
    pf__tok_pre *pre;
    pf_result r;
    if (lower < 0) {
        snprintf(err, err_size, "%s: %s is not a boolean", config_path, key);
        return PF_ERROR_FORMAT;
    }
    if (bos < 0 || sep < 0) {
        snprintf(err, err_size, "%s: %s needs a bos_token and a sep_token in its vocab", config_path,
                 pf__bpe_files_classes[cls].name);
        return PF_ERROR_FORMAT;
    }
    t->word_bpe_suffix = 1;
    t->moses_lang = pf__moses_lang(xlm ? "en" : "fr");
    t->moses_prefixes = pf__moses_prefix_list(t->moses_lang);
    t->moses_opts = xlm ? (lower ? PF__MOSES_OPT_XLM_LOWER : 0u)
                        : PF__MOSES_OPT_FLAUBERT | (lower ? PF__MOSES_OPT_LOWER_NFC : 0u);
    if (!(t->py_cased = pf__py_cased_bitmap())) return pf__tok_out_of_memory(dir, err, err_size);
    pre = &t->pres[t->num_pres++];
    memset(pre, 0, sizeof *pre);
    pre->kind = PF__PRE_MOSES;
    if (!pf__tok_add_dec(t, PF__DEC_SUFFIX_BPE)) return pf__tok_out_of_memory(dir, err, err_size);
    t->has_decoder = 1;
    single[0].id = pair[0].id = bos;
    single[1].id = pair[1].id = PF__TOK_SEQ_A;
    single[2].id = pair[2].id = pair[4].id = sep;
    pair[3].id = PF__TOK_SEQ_B;
    for (size_t i = 0; i < 5; i++) single[i % 3].type_id = pair[i].type_id = 0;
    t->has_post = 1;
    if ((r = pf__tok_set_post(t, 0, single, 3, config_path, err, err_size)) != PF_OK ||
        (r = pf__tok_set_post(t, 1, pair, 5, config_path, err, err_size)) != PF_OK)
        return r;
    return pf__tok_finish(t, path, err, err_size);
}

/* CTRL's, Blenderbot-small's, PhoBERT's and BERTweet's Python classes. */
static pf_result pf__bpe_files_python(pf_tokenizer *t, const char *dir, const pf__json *config, size_t cls,
                                      const char *config_path, char *err, size_t err_size) {
    int kind = pf__bpe_files_classes[cls].kind, fastbpe = kind == PF__BPE_FILES_PHOBERT || kind == PF__BPE_FILES_BERTWEET;
    int moses = kind == PF__BPE_FILES_XLM || kind == PF__BPE_FILES_FLAUBERT;
    char path[4096];
    pf__json *vocab = NULL;
    pf__tok_pre *pre;
    pf_result r;
    if (pf__path_join(path, sizeof path, dir, fastbpe ? "vocab.txt" : "vocab.json")) goto too_long;
    if (fastbpe) r = pf__bpe_files_vocab_txt(t, path, config, cls, config_path, err, err_size);
    else if ((r = pf__tok_read_json(path, 0, &vocab, err, err_size)) == PF_OK)
        r = pf__tok_set_vocab(t, vocab, NULL, path, err, err_size);
    pf__json_free(vocab);
    if (r != PF_OK) return r;
    if (!(t->word_bpe = (pf_tokenizer *)calloc(1, sizeof *t->word_bpe))) return pf__tok_out_of_memory(dir, err, err_size);
    t->word_bpe->unk_id = t->word_bpe->bos_id = t->word_bpe->eos_id = -1;
    if (pf__path_join(path, sizeof path, dir, fastbpe ? "bpe.codes" : "merges.txt")) goto too_long;
    if ((r = pf__bpe_files_word_merges(t->word_bpe, path, !fastbpe && !moses, fastbpe, moses, err, err_size)) != PF_OK ||
        (r = pf__bpe_files_specials(t, config, cls, config_path, err, err_size)) != PF_OK)
        return r;
    t->model = PF__MODEL_WORD_BPE;
    if (moses) return pf__bpe_files_moses(t, dir, config, cls, config_path, path, err, err_size);
    t->word_bpe_blenderbot = kind == PF__BPE_FILES_BLENDERBOT_SMALL;
    if (t->word_bpe_blenderbot && !(t->py_cased = pf__py_cased_bitmap())) return pf__tok_out_of_memory(dir, err, err_size);
    pre = &t->pres[t->num_pres++]; /* re.findall(r"\S+\n?"): CTRL and Blenderbot-small with the regex module */
    memset(pre, 0, sizeof *pre);
    pre->kind = PF__PRE_SPLIT;
    pre->pattern = fastbpe ? PF__PAT_WORD_NL_PY : PF__PAT_WORD_NL;
    pre->behavior = PF__SPLIT_REMOVED;
    pre->invert = 1;
    if (!pf__tok_add_dec(t, PF__DEC_WORD_BPE)) return pf__tok_out_of_memory(dir, err, err_size);
    t->has_decoder = 1;
    if (fastbpe || kind == PF__BPE_FILES_CTRL) { /* cls_double_sep, or none; token type ids all 0 */
        int32_t cls_id = fastbpe ? pf__bpe_files_special_id(t, config, cls, 5) : -1;
        int32_t sep_id = fastbpe ? pf__bpe_files_special_id(t, config, cls, 3) : -1;
        pf__tok_post_item single[3], pair[6];
        size_t ns = 0, np = 0;
        if (fastbpe && (cls_id < 0 || sep_id < 0)) {
            snprintf(err, err_size, "%s: %s needs a cls_token and a sep_token", config_path, pf__bpe_files_classes[cls].name);
            return PF_ERROR_FORMAT;
        }
        if (fastbpe) single[ns++].id = pair[np++].id = cls_id;
        single[ns++].id = pair[np++].id = PF__TOK_SEQ_A;
        if (fastbpe) {
            single[ns++].id = sep_id;
            pair[np++].id = sep_id;
            pair[np++].id = sep_id;
        }
        pair[np++].id = PF__TOK_SEQ_B;
        if (fastbpe) pair[np++].id = sep_id;
        for (size_t i = 0; i < 6; i++) single[i % 3].type_id = pair[i].type_id = 0;
        t->has_post = 1;
        if ((r = pf__tok_set_post(t, 0, single, ns, config_path, err, err_size)) != PF_OK ||
            (r = pf__tok_set_post(t, 1, pair, np, config_path, err, err_size)) != PF_OK)
            return r;
    }
    return pf__tok_finish(t, path, err, err_size);
too_long:
    snprintf(err, err_size, "%.200s: the path is too long", dir);
    return PF_ERROR_INVALID_ARGUMENT;
}

/* Loads one of the classes above from dir (config: its tokenizer_config.json). */
PF_PRIVATE pf_result pf__tok_from_bpe_files(pf_tokenizer *t, const char *dir, const pf__json *config, const char *config_path,
                                            char *err, size_t err_size) {
    const pf__json *cls_name = pf__json_get(config, "tokenizer_class");
    size_t cls = cls_name && cls_name->type == PF__JSON_STRING ? pf__bpe_files_index(cls_name->string)
                                                                : PF__TOK_LEN(pf__bpe_files_classes);
    int kind;
    pf_result r;
    if (cls == PF__TOK_LEN(pf__bpe_files_classes)) {
        snprintf(err, err_size, "%s: not a tokenizer_class read from BPE files", config_path);
        return PF_ERROR_INVALID_ARGUMENT;
    }
    if ((r = pf__bpe_files_refused(config, cls, config_path, err, err_size)) != PF_OK) return r;
    if ((t->cleanup_spaces = pf__tok_json_bool(config, "clean_up_tokenization_spaces", 0)) < 0) {
        snprintf(err, err_size, "%s: clean_up_tokenization_spaces is not a boolean", config_path);
        return PF_ERROR_FORMAT;
    }
    kind = pf__bpe_files_classes[cls].kind;
    r = kind == PF__BPE_FILES_OPENAI_GPT || kind == PF__BPE_FILES_HERBERT
            ? pf__bpe_files_pipeline(t, dir, config, cls, config_path, err, err_size)
            : pf__bpe_files_python(t, dir, config, cls, config_path, err, err_size);
    for (int which = 0; r == PF_OK && which < 2; which++) { /* bos and eos: the class's, or the config's */
        size_t len = 0;
        int bad = 0;
        const char *s = pf__bpe_files_special_text(config, pf__bpe_files_special_keys[which],
                                                   pf__bpe_files_classes[cls].specials[which], &len, &bad);
        char **text = which ? &t->eos_token : &t->bos_token;
        *(which ? &t->eos_id : &t->bos_id) = pf__bpe_files_special_id(t, config, cls, which);
        if (s && !(*text = pf__tok_dup(s, len))) r = pf__tok_out_of_memory(config_path, err, err_size);
    }
    return r;
}

/* ---- BertJapaneseTokenizer ---- */

/* transformers' BertJapaneseTokenizer is a Python class (no tokenizer.json). What is read here:
   word_tokenizer_type "basic" (its own BasicTokenizer without Chinese-character splitting: control
   characters, NUL and U+FFFD dropped, whitespace to spaces, NFC, split on Python's whitespace,
   with do_lower_case each word lower()ed and stripped of Mn after NFD, then split on punctuation:
   ASCII non-alphanumerics and Unicode P*), and subword_tokenizer_type "character" (each word NFKC,
   then each character its vocab id or unk) or "wordpiece" (greedy longest match, "##", 100
   characters at most). MeCab, Sudachi and Juman++ need their dictionaries and are refused by name,
   as the SentencePiece subwords, never_split, and do_word_tokenize / do_subword_tokenize false.
   [CLS] A [SEP], pair [CLS] A [SEP] B [SEP] (type ids 0, then 1 from B on); decode joins the
   tokens with spaces and drops " ##". Python's character classes come from the Moses table
   (pf__moses_class: Python's categories). */

/* vocab.txt as load_vocab reads it: each line (universal newlines, the last piece too) a token,
   ids in order. A token listed twice is refused (transformers keeps the later id for it). */
static pf_result pf__bj_vocab(pf_tokenizer *t, const char *path, char *err, size_t err_size) {
    char *text = NULL;
    size_t len = 0, i, start, lines = 0;
    int32_t id = 0;
    pf_result r;
    if ((r = pf__read_file(path, PF__MAX_TEXT_FILE, &text, &len, err, err_size)) != PF_OK) return r;
    for (i = 0; i < len; i++)
        if (text[i] == '\n' || (text[i] == '\r' && !(i + 1 < len && text[i + 1] == '\n'))) lines++;
    if ((r = pf__tok_vocab_alloc(t, lines + 1, len + lines + 1, path, err, err_size)) != PF_OK) goto done;
    for (start = i = 0; start < len; i++) {
        if (i < len && text[i] != '\n' && text[i] != '\r') continue;
        if (pf__tok_vocab_find(t, text + start, i - start) >= 0) {
            snprintf(err, err_size, "%s: line %d: token \"%.*s\" is listed twice (transformers then gives it the later "
                     "id)", path, (int)id + 1, pf__tok_show_len(i - start), text + start);
            r = PF_ERROR_FORMAT;
            goto done;
        }
        pf__tok_vocab_insert(t, text + start, i - start, id++);
        if (i + 1 < len && text[i] == '\r' && text[i + 1] == '\n') i++;
        start = i + 1;
    }
done:
    free(text);
    return r;
}

/* The config's string option `key` (def when absent) in *out; PF_ERROR_FORMAT when not a string. */
static pf_result pf__bj_option(const pf__json *config, const char *key, const char *def, const char **out,
                               const char *config_path, char *err, size_t err_size) {
    const pf__json *v = pf__json_get(config, key);
    *out = def;
    if (!v || v->type == PF__JSON_NULL) return PF_OK;
    if (v->type != PF__JSON_STRING) {
        snprintf(err, err_size, "%s: %s is not a string", config_path, key);
        return PF_ERROR_FORMAT;
    }
    *out = v->string;
    return PF_OK;
}

/* Options that change the ids and are not read: PF_ERROR_UNSUPPORTED naming them. */
static pf_result pf__bj_options(const pf__json *config, int *character, const char *config_path, char *err,
                                size_t err_size) {
    static const char *const bools[] = {"do_word_tokenize", "do_subword_tokenize", "split_special_tokens"};
    const char *word, *sub;
    const pf__json *never = pf__json_get(config, "never_split");
    pf_result r;
    if ((r = pf__bj_option(config, "word_tokenizer_type", "basic", &word, config_path, err, err_size)) != PF_OK ||
        (r = pf__bj_option(config, "subword_tokenizer_type", "wordpiece", &sub, config_path, err, err_size)) != PF_OK)
        return r;
    if (!strcmp(word, "mecab") || !strcmp(word, "sudachi") || !strcmp(word, "jumanpp")) {
        snprintf(err, err_size, "%s: BertJapaneseTokenizer with word_tokenizer_type \"%s\" is not supported: it needs %s "
                 "(a morphological analyzer and its dictionary, which this library does not carry); \"basic\" is",
                 config_path, word, !strcmp(word, "mecab") ? "MeCab (fugashi) and ipadic / unidic"
                                    : !strcmp(word, "sudachi") ? "SudachiPy and its dictionary" : "Juman++ (rhoknp)");
        return PF_ERROR_UNSUPPORTED;
    }
    if (strcmp(word, "basic")) {
        snprintf(err, err_size, "%s: word_tokenizer_type \"%.40s\" is not one of BertJapaneseTokenizer's", config_path, word);
        return PF_ERROR_FORMAT;
    }
    if (!strcmp(sub, "sentencepiece")) {
        snprintf(err, err_size, "%s: BertJapaneseTokenizer with subword_tokenizer_type \"sentencepiece\" is not "
                 "supported (\"wordpiece\" and \"character\" are)", config_path);
        return PF_ERROR_UNSUPPORTED;
    }
    if (strcmp(sub, "wordpiece") && strcmp(sub, "character")) {
        snprintf(err, err_size, "%s: subword_tokenizer_type \"%.40s\" is not one of BertJapaneseTokenizer's", config_path, sub);
        return PF_ERROR_FORMAT;
    }
    *character = !strcmp(sub, "character");
    for (size_t i = 0; i < PF__TOK_LEN(bools); i++) {
        int on = pf__tok_json_bool(config, bools[i], i < 2);
        if (on < 0) {
            snprintf(err, err_size, "%s: %s is not a boolean", config_path, bools[i]);
            return PF_ERROR_FORMAT;
        }
        if (on != (i < 2)) {
            snprintf(err, err_size, "%s: BertJapaneseTokenizer with %s %s is not supported", config_path, bools[i],
                     on ? "true" : "false");
            return PF_ERROR_UNSUPPORTED;
        }
    }
    if (never && never->type != PF__JSON_NULL && !(never->type == PF__JSON_ARRAY && !never->first)) {
        snprintf(err, err_size, "%s: BertJapaneseTokenizer with never_split is not supported (those words would keep "
                 "their case and punctuation)", config_path);
        return PF_ERROR_UNSUPPORTED;
    }
    return PF_OK;
}

/* Loads BertJapaneseTokenizer's vocab.txt and options from dir (config: its tokenizer_config.json). */
PF_PRIVATE pf_result pf__tok_from_bert_japanese(pf_tokenizer *t, const char *dir, const pf__json *config,
                                                const char *config_path, char *err, size_t err_size) {
    static const char *const keys[5] = {"unk_token", "sep_token", "pad_token", "cls_token", "mask_token"};
    static const char *const defs[5] = {"[UNK]", "[SEP]", "[PAD]", "[CLS]", "[MASK]"};
    int32_t ids[5], next_id = 0;
    char path[4096];
    int character = 0, lower = pf__tok_json_bool(config, "do_lower_case", 0);
    pf__tok_post_item single[3], pair[5];
    pf__tok_pre *pre;
    pf_result r;
    if ((r = pf__bj_options(config, &character, config_path, err, err_size)) != PF_OK) return r;
    if (lower < 0 || (t->cleanup_spaces = pf__tok_json_bool(config, "clean_up_tokenization_spaces", 0)) < 0) {
        snprintf(err, err_size, "%s: do_lower_case or clean_up_tokenization_spaces is not a boolean", config_path);
        return PF_ERROR_FORMAT;
    }
    if (pf__path_join(path, sizeof path, dir, "vocab.txt")) {
        snprintf(err, err_size, "%.200s: the path is too long", dir);
        return PF_ERROR_INVALID_ARGUMENT;
    }
    if ((r = pf__bj_vocab(t, path, err, err_size)) != PF_OK ||
        (r = pf__tok_read_added_decoder(t, config, config_path, err, err_size)) != PF_OK)
        return r;
    next_id = (int32_t)t->vocab_count;
    for (size_t i = 0; i < t->num_added; i++)
        if (t->added[i].id >= next_id) next_id = t->added[i].id + 1;
    for (int i = 0; i < 5; i++) { /* the special tokens: an added token's id, the vocab's, or the next */
        const pf__json *v = pf__json_get(config, keys[i]);
        const char *s = defs[i];
        size_t n = strlen(s);
        const pf__tok_added *a;
        if (v && v->type == PF__JSON_OBJECT) v = pf__json_get(v, "content");
        if (v && v->type == PF__JSON_STRING) {
            s = v->string;
            n = v->string_len;
        } else if (v && v->type != PF__JSON_NULL) {
            snprintf(err, err_size, "%s: %s is neither a string nor {\"content\": ...}", config_path, keys[i]);
            return PF_ERROR_FORMAT;
        }
        ids[i] = -1;
        if (v && v->type == PF__JSON_NULL) continue;
        if ((a = pf__tok_added_find(t, s, n))) {
            ids[i] = a->id;
            continue;
        }
        if ((ids[i] = pf__tok_vocab_find(t, s, n)) < 0) ids[i] = next_id++;
        if (pf__tok_add_token(t, s, n, ids[i], 1, 0, 0, 0, 0)) return pf__tok_out_of_memory(config_path, err, err_size);
    }
    t->unk_id = ids[0];
    if (ids[1] < 0 || ids[3] < 0) {
        snprintf(err, err_size, "%s: BertJapaneseTokenizer needs a cls_token and a sep_token", config_path);
        return PF_ERROR_FORMAT;
    }
    if ((r = pf__tok_listed_specials(t, config, next_id, config_path, err, err_size)) != PF_OK) return r;
    pre = &t->pres[t->num_pres++];
    memset(pre, 0, sizeof *pre);
    pre->kind = PF__PRE_BASIC_JA;
    pre->lower = lower;
    if (!(t->py_cased = pf__py_cased_bitmap())) return pf__tok_out_of_memory(dir, err, err_size);
    if (character) {
        t->model = PF__MODEL_CHARS;
    } else {
        t->model = PF__MODEL_WORDPIECE;
        t->max_word_chars = 100;
        if (!(t->prefix = pf__tok_dup("##", 2))) return pf__tok_out_of_memory(dir, err, err_size);
        t->prefix_len = 2;
    }
    if (!pf__tok_add_dec(t, PF__DEC_JOINED_WORDPIECE)) return pf__tok_out_of_memory(dir, err, err_size);
    t->has_decoder = 1;
    single[0].id = pair[0].id = ids[3];
    single[1].id = pair[1].id = PF__TOK_SEQ_A;
    single[2].id = pair[2].id = pair[4].id = ids[1];
    pair[3].id = PF__TOK_SEQ_B;
    for (size_t i = 0; i < 5; i++) pair[i].type_id = i >= 3; /* bert_style, the specials counted */
    single[0].type_id = single[1].type_id = single[2].type_id = 0;
    t->has_post = 1;
    if ((r = pf__tok_set_post(t, 0, single, 3, config_path, err, err_size)) != PF_OK ||
        (r = pf__tok_set_post(t, 1, pair, 5, config_path, err, err_size)) != PF_OK)
        return r;
    return pf__tok_finish(t, path, err, err_size);
}

