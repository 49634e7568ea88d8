#include "internal.h"
/* ---- SentencePiece model files (Marian's source.spm, M2M100's sentencepiece.bpe.model) ---- */

typedef struct pf__spm_piece { /* a piece of a ModelProto; its string points into the file's bytes */
    const unsigned char *s;
    size_t len;
    float score;
    int type;
} pf__spm_piece;

typedef struct pf__spm_model { /* what of a ModelProto changes the tokens (the rest is skipped) */
    pf__spm_piece *pieces; /* [num_pieces] (malloc'd) */
    size_t num_pieces, cap;
    int model_type, byte_fallback, treat_whitespace_as_suffix;
    unsigned flags; /* PF__SPM_DUMMY_PREFIX | PF__SPM_REMOVE_SPACES | PF__SPM_ESCAPE */
    const unsigned char *charsmap, *unk_surface;
    size_t charsmap_len, unk_surface_len;
    int has_unk_surface, denormalizer;
} pf__spm_model;

typedef struct pf__pb { /* a protobuf message being read */
    const unsigned char *p, *end;
} pf__pb;

/* A varint; -1 when it runs past the message or past 10 bytes. */
static int pf__pb_varint(pf__pb *b, uint64_t *v) {
    int shift;
    *v = 0;
    for (shift = 0; shift < 70 && b->p < b->end; shift += 7) {
        unsigned char c = *b->p++;
        if (shift < 64) *v |= (uint64_t)(c & 0x7F) << shift;
        if (!(c & 0x80)) return 0;
    }
    return -1;
}

/* The next field of a message: its number and wire type, its value in *v (varint, fixed32,
   fixed64) or its bytes in *s, *n (length-delimited). 1 at the message's end, -1 when malformed
   (a length past the end, a group, an unknown wire type). */
static int pf__pb_field(pf__pb *b, uint32_t *field, int *wire, uint64_t *v, const unsigned char **s, size_t *n) {
    uint64_t key;
    int k;
    if (b->p == b->end) return 1;
    if (pf__pb_varint(b, &key) || (key >> 3) == 0 || (key >> 3) > 0x1FFFFFFF) return -1;
    *field = (uint32_t)(key >> 3);
    *wire = (int)(key & 7);
    *v = 0;
    switch (*wire) {
    case 0:
        return pf__pb_varint(b, v);
    case 1:
    case 5:
        k = *wire == 1 ? 8 : 4;
        if (b->end - b->p < k) return -1;
        while (k--) *v = *v << 8 | b->p[k];
        b->p += *wire == 1 ? 8 : 4;
        return 0;
    case 2:
        if (pf__pb_varint(b, v) || *v > (uint64_t)(b->end - b->p)) return -1;
        *s = b->p;
        *n = (size_t)*v;
        b->p += *n;
        return 0;
    default:
        return -1;
    }
}

/* Reads a ModelProto message `which` (1 a piece, 2 trainer_spec, 3 normalizer_spec, 5
   denormalizer_spec) from s[0 .. n) into m; -1 when malformed, -2 out of memory. */
static int pf__spm_read_message(pf__spm_model *m, int which, const unsigned char *s, size_t n) {
    pf__pb b;
    uint32_t field;
    int wire, rc;
    uint64_t v;
    const unsigned char *bytes = NULL;
    size_t len = 0;
    pf__spm_piece piece = {NULL, 0, 0.0f, PF__SPM_NORMAL};
    b.p = s;
    b.end = s + n;
    while ((rc = pf__pb_field(&b, &field, &wire, &v, &bytes, &len)) == 0) {
        /* a known field of the wrong wire type is malformed; unknown fields are skipped */
        int want = which == 1 ? (field == 1 ? 2 : field == 2 ? 5 : field == 3 ? 0 : -1)
                 : which == 2 ? (field == 3 || field == 24 || field == 35 ? 0 : field == 44 ? 2 : -1)
                              : (field == 2 ? 2 : field >= 3 && field <= 5 ? 0 : -1);
        if (want < 0) continue;
        if (wire != want) return -1;
        if (which == 1) {
            if (field == 1) piece.s = bytes, piece.len = len;
            else if (field == 3) piece.type = v >= PF__SPM_NORMAL && v <= PF__SPM_BYTE ? (int)v : 0;
            else {
                uint32_t bits = (uint32_t)v;
                memcpy(&piece.score, &bits, sizeof piece.score);
            }
        } else if (which == 2) {
            if (field == 3) m->model_type = v <= PF__SPM_CHAR ? (int)v : 0;
            else if (field == 24) m->treat_whitespace_as_suffix = v != 0;
            else if (field == 35) m->byte_fallback = v != 0;
            else m->unk_surface = bytes, m->unk_surface_len = len, m->has_unk_surface = 1;
        } else if (field == 2) {
            if (which == 5) m->denormalizer = len > 0;
            else m->charsmap = bytes, m->charsmap_len = len;
        } else if (which == 3) {
            unsigned flag = field == 3 ? PF__SPM_DUMMY_PREFIX : field == 4 ? PF__SPM_REMOVE_SPACES : PF__SPM_ESCAPE;
            m->flags = v ? m->flags | flag : m->flags & ~flag;
        }
    }
    if (rc < 0) return -1;
    if (which == 1) {
        if (m->num_pieces == m->cap) {
            size_t cap = m->cap ? 2 * m->cap : 1024;
            pf__spm_piece *p = (pf__spm_piece *)realloc(m->pieces, cap * sizeof *p);
            if (!p) return -2;
            m->pieces = p;
            m->cap = cap;
        }
        m->pieces[m->num_pieces++] = piece;
    }
    return 0;
}

/* Parses a SentencePiece ModelProto (sentencepiece_model.proto) from data[0 .. len), every length
   checked against the buffer; the pieces point into data. */
static pf_result pf__spm_parse(const unsigned char *data, size_t len, pf__spm_model *m, const char *path, char *err,
                               size_t err_size) {
    pf__pb b;
    uint32_t field;
    int wire, rc = 0;
    uint64_t v;
    const unsigned char *s = NULL;
    size_t n = 0;
    memset(m, 0, sizeof *m);
    m->model_type = PF__SPM_UNIGRAM;
    m->flags = PF__SPM_DUMMY_PREFIX | PF__SPM_REMOVE_SPACES | PF__SPM_ESCAPE;
    b.p = data;
    b.end = data + len;
    while ((rc = pf__pb_field(&b, &field, &wire, &v, &s, &n)) == 0) {
        if (field != 1 && field != 2 && field != 3 && field != 5) continue; /* self_test_data, ... */
        if (wire != 2) {
            rc = -1;
            break;
        }
        if ((rc = pf__spm_read_message(m, (int)field, s, n)) != 0) break;
        if (m->num_pieces >= INT32_MAX) {
            rc = -1;
            break;
        }
    }
    if (rc == -2) {
        snprintf(err, err_size, "%s: out of memory", path);
        return PF_ERROR_OUT_OF_MEMORY;
    }
    if (rc < 0) {
        snprintf(err, err_size, "%s: not a SentencePiece model: the protobuf is malformed near byte %zu of %zu", path,
                 (size_t)(b.p - data), len);
        return PF_ERROR_FORMAT;
    }
    return PF_OK;
}

/* Orders piece ids by score, highest first (ties by id). */
typedef struct pf__spm_rank {
    float score;
    int32_t id;
} pf__spm_rank;

static int pf__spm_rank_cmp(const void *a, const void *b) {
    const pf__spm_rank *x = (const pf__spm_rank *)a, *y = (const pf__spm_rank *)b;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* SentencePiece BPE as merges: a normal piece is the merge of any two normal pieces it splits
   into, ranked by its score (higher first; equal scores, equal ranks: then the leftmost pair, as
   SentencePiece's agenda). */
static pf_result pf__spm_set_merges(pf_tokenizer *sp, const pf__spm_model *m, const char *path, char *err,
                                    size_t err_size) {
    size_t i, k, splits = 0, n = 0;
    uint32_t rank = 0;
    uint32_t *ranks = (uint32_t *)malloc((m->num_pieces ? m->num_pieces : 1) * sizeof *ranks);
    pf__spm_rank *order = (pf__spm_rank *)malloc((m->num_pieces ? m->num_pieces : 1) * sizeof *order);
    if (!ranks || !order) goto oom;
    for (i = 0; i < m->num_pieces; i++)
        if (m->pieces[i].type == PF__SPM_NORMAL) {
            order[n].score = m->pieces[i].score;
            order[n++].id = (int32_t)i;
            splits += m->pieces[i].len;
        }
    qsort(order, n, sizeof *order, pf__spm_rank_cmp);
    for (i = 0; i < n; i++) {
        if (i > 0 && order[i].score != order[i - 1].score) rank++;
        ranks[order[i].id] = rank;
    }
    sp->merges_mask = pf__tok_pow2_at_least(2 * splits + 1) - 1;
    if (!(sp->merges = (pf__tok_merge_slot *)malloc((sp->merges_mask + 1) * sizeof *sp->merges))) goto oom;
    memset(sp->merges, 0xFF, (sp->merges_mask + 1) * sizeof *sp->merges);
    for (i = 0; i < m->num_pieces; i++) {
        const pf__spm_piece *p = &m->pieces[i];
        uint32_t cp;
        if (p->type != PF__SPM_NORMAL) continue;
        for (k = pf__utf8_decode(p->s, p->len, &cp); k < p->len; k += pf__utf8_decode(p->s + k, p->len - k, &cp)) {
            int32_t a = pf__tok_vocab_find(sp, (const char *)p->s, k), b = pf__tok_vocab_find(sp, (const char *)p->s + k, p->len - k);
            if (a >= 0 && b >= 0 && sp->spm_types[a] == PF__SPM_NORMAL && sp->spm_types[b] == PF__SPM_NORMAL)
                pf__tok_merge_put(sp, a, b, ranks[i], (int32_t)i);
        }
    }
    free(ranks);
    free(order);
    return PF_OK;
oom:
    free(ranks);
    free(order);
    snprintf(err, err_size, "%s: out of memory", path);
    return PF_ERROR_OUT_OF_MEMORY;
}

/* The tokenizer of a SentencePiece model: its pieces by id (a Unigram's with their scores, a
   BPE's as merges), its unk piece; what SentencePiece would do differently from what is
   implemented here is refused, naming it. */
static pf_result pf__spm_build(const pf__spm_model *m, pf_tokenizer **out, const char *path, char *err, size_t err_size) {
    static const char default_unk_surface[] = " \xE2\x81\x87 ";
    pf_tokenizer *sp;
    size_t i, text_len = 0;
    float min_score = 3.40282347e38f; /* FLT_MAX, as SentencePiece starts */
    const char *refused = NULL;
    pf_result r;
    *out = NULL;
    if (m->model_type != PF__SPM_UNIGRAM && m->model_type != PF__SPM_BPE)
        refused = "trainer_spec.model_type other than UNIGRAM and BPE";
    else if (m->byte_fallback) refused = "trainer_spec.byte_fallback";
    else if (m->treat_whitespace_as_suffix) refused = "trainer_spec.treat_whitespace_as_suffix";
    else if (m->denormalizer) refused = "a denormalizer_spec with rules";
    for (i = 0; !refused && i < m->num_pieces; i++) {
        int type = m->pieces[i].type;
        if (type == PF__SPM_USER_DEFINED) refused = "USER_DEFINED pieces";
        else if (type == PF__SPM_BYTE) refused = "BYTE pieces";
        else if (type == PF__SPM_UNUSED && m->model_type == PF__SPM_BPE) refused = "UNUSED pieces in a BPE model";
    }
    if (refused) {
        snprintf(err, err_size, "%s: this SentencePiece model has %s, which is not supported", path, refused);
        return PF_ERROR_UNSUPPORTED;
    }
    if (!(sp = (pf_tokenizer *)calloc(1, sizeof *sp))) goto oom;
    *out = sp;
    sp->unk_id = sp->bos_id = sp->eos_id = -1;
    sp->model = m->model_type == PF__SPM_BPE ? PF__MODEL_BPE : PF__MODEL_UNIGRAM;
    sp->spm_flags = m->flags;
    for (i = 0; i < m->num_pieces; i++) {
        const pf__spm_piece *p = &m->pieces[i];
        if (!p->len || !p->type || p->len > UINT32_MAX - 1) {
            snprintf(err, err_size, "%s: SentencePiece piece %zu is %s", path, i, p->len ? "of an unknown type" : "empty");
            return PF_ERROR_FORMAT;
        }
        text_len += p->len + 1;
    }
    if ((r = pf__tok_vocab_alloc(sp, m->num_pieces, text_len, path, err, err_size)) != PF_OK) return r;
    sp->pieces = (pf__tok_piece *)malloc((m->num_pieces ? m->num_pieces : 1) * sizeof *sp->pieces);
    sp->spm_types = (unsigned char *)malloc(m->num_pieces ? m->num_pieces : 1);
    if (!sp->pieces || !sp->spm_types) goto oom;
    for (i = 0; i < m->num_pieces; i++) {
        const pf__spm_piece *p = &m->pieces[i];
        if (pf__tok_vocab_find(sp, (const char *)p->s, p->len) >= 0) {
            snprintf(err, err_size, "%s: SentencePiece piece \"%.*s\" is there twice", path, pf__tok_show_len(p->len),
                     (const char *)p->s);
            return PF_ERROR_FORMAT;
        }
        if (p->type == PF__SPM_UNKNOWN) {
            if (sp->unk_id >= 0) {
                snprintf(err, err_size, "%s: the SentencePiece model has two UNKNOWN pieces", path);
                return PF_ERROR_FORMAT;
            }
            sp->unk_id = (int32_t)i;
        }
        if (p->type == PF__SPM_NORMAL && p->score < min_score) min_score = p->score;
        sp->pieces[i].offset = pf__tok_vocab_insert(sp, (const char *)p->s, p->len, (int32_t)i);
        sp->pieces[i].len = (uint32_t)p->len;
        sp->pieces[i].score = p->score;
        sp->spm_types[i] = (unsigned char)p->type;
    }
    sp->num_pieces = m->num_pieces;
    if (sp->unk_id < 0) {
        snprintf(err, err_size, "%s: the SentencePiece model has no UNKNOWN piece", path);
        return PF_ERROR_FORMAT;
    }
    sp->unk_score = (double)(min_score - 10.0f); /* SentencePiece's kUnkPenalty, in float as it computes */
    sp->spm_unk_surface = pf__tok_dup(m->has_unk_surface ? (const char *)m->unk_surface : default_unk_surface,
                                      m->has_unk_surface ? m->unk_surface_len : sizeof default_unk_surface - 1);
    if (!sp->spm_unk_surface) goto oom;
    sp->spm_unk_surface_len = m->has_unk_surface ? m->unk_surface_len : sizeof default_unk_surface - 1;
    if (sp->model == PF__MODEL_BPE && (r = pf__spm_set_merges(sp, m, path, err, err_size)) != PF_OK) return r;
    return pf__tok_finish(sp, path, err, err_size);
oom:
    snprintf(err, err_size, "%s: out of memory", path);
    return PF_ERROR_OUT_OF_MEMORY;
}

/* M2M100Tokenizer's language codes (transformers' FAIRSEQ_LANGUAGE_CODES), each the token __xx__
   with the id len(vocab.json) + its index. */
static const char *const pf__m2m100_langs[] = {
    "af", "am", "ar", "ast", "az", "ba", "be", "bg", "bn", "br", "bs", "ca", "ceb", "cs", "cy", "da", "de", "el", "en",
    "es", "et", "fa", "ff", "fi", "fr", "fy", "ga", "gd", "gl", "gu", "ha", "he", "hi", "hr", "ht", "hu", "hy", "id",
    "ig", "ilo", "is", "it", "ja", "jv", "ka", "kk", "km", "kn", "ko", "lb", "lg", "ln", "lo", "lt", "lv", "mg", "mk",
    "ml", "mn", "mr", "ms", "my", "ne", "nl", "no", "ns", "oc", "or", "pa", "pl", "ps", "pt", "ro", "ru", "sd", "si",
    "sk", "sl", "so", "sq", "sr", "ss", "su", "sv", "sw", "ta", "th", "tl", "tn", "tr", "uk", "ur", "uz", "vi", "wo",
    "xh", "yi", "yo", "zh", "zu"};
static const char *const pf__wmt21_langs[] = {"en", "ha", "is", "ja", "cs", "ru", "zh", "de"};

/* A special token of tokenizer_config.json ("key": a string or {"content": ...}; def when absent)
   made a special added token with its vocab.json id, unless it is one already; the token's id, or
   -1 when the vocab lacks it. */
static int32_t pf__spm_named_special(pf_tokenizer *t, const pf__json *config, const char *key, const char *def,
                                     int *oom) {
    const pf__json *v = pf__json_get(config, key);
    const char *s = def;
    size_t len = strlen(def);
    int32_t id;
    const pf__tok_added *a;
    if (v && v->type == PF__JSON_OBJECT) v = pf__json_get(v, "content");
    if (v && v->type == PF__JSON_STRING) s = v->string, len = v->string_len;
    if ((a = pf__tok_added_find(t, s, len))) return a->id;
    if ((id = len ? pf__tok_vocab_find(t, s, len) : -1) >= 0 && pf__tok_add_token(t, s, len, id, 1, 0, 0, 0, 0)) *oom = 1;
    return id;
}

enum { PF__SPM_FILES_MARIAN, PF__SPM_FILES_M2M100, PF__SPM_FILES_SPEECH2TEXT };

/* Speech2TextTokenizer's do_upper_case turns each decoded run into Python's str.upper() of it,
   done here for ASCII: 1 when a piece of the model (whose text is all decode gives) holds a code
   point other than ASCII and those that Python leaves as they are through upper() (U+2581, the
   unk surface's U+2047). */
static int pf__spm_has_cased_non_ascii(const pf__spm_model *m) {
    size_t i, k, n;
    uint32_t cp;
    for (i = 0; i < m->num_pieces; i++)
        for (k = 0; k < m->pieces[i].len; k += n) {
            n = pf__utf8_decode(m->pieces[i].s + k, m->pieces[i].len - k, &cp);
            if (cp >= 0x80 && cp != 0x2581 && cp != 0x2047) return 1;
        }
    return 0;
}

/* What pf__tok_from_spm_files reads of the class's config before the files. */
typedef struct pf__spm_files_options {
    const char *const *langs; /* M2M100's language codes (NULL: none) */
    size_t num_langs;
    const char *src_lang;     /* M2M100's source language */
    int cleanup, upper;       /* clean_up_tokenization_spaces; Speech2Text's do_upper_case */
} pf__spm_files_options;

static pf_result pf__spm_files_options_read(const pf__json *config, int kind, const char *config_path,
                                            pf__spm_files_options *o, char *err, size_t err_size) {
    int bad = 0;
    memset(o, 0, sizeof *o);
    o->src_lang = "en";
    o->cleanup = pf__tok_json_bool(config, "clean_up_tokenization_spaces", 0);
    if (o->cleanup < 0) {
        snprintf(err, err_size, "%s: clean_up_tokenization_spaces is not a boolean", config_path);
        return PF_ERROR_FORMAT;
    }
    if (kind == PF__SPM_FILES_SPEECH2TEXT) {
        const pf__json *codes = pf__json_get(config, "lang_codes");
        int lower = pf__tok_json_bool(config, "do_lower_case", 0);
        o->upper = pf__tok_json_bool(config, "do_upper_case", 0);
        if (o->upper < 0 || lower < 0) {
            snprintf(err, err_size, "%s: %s is not a boolean", config_path, o->upper < 0 ? "do_upper_case" : "do_lower_case");
            return PF_ERROR_FORMAT;
        }
        if (codes && codes->type != PF__JSON_NULL) {
            snprintf(err, err_size, "%s: Speech2TextTokenizer with lang_codes (the multilingual models' <lang:xx> target "
                     "language prefix) is not supported", config_path);
            return PF_ERROR_UNSUPPORTED;
        }
    } else if (kind == PF__SPM_FILES_MARIAN) {
        int separate = pf__tok_json_bool(config, "separate_vocabs", 0);
        if (separate) {
            snprintf(err, err_size, separate < 0 ? "%s: separate_vocabs is not a boolean" : "%s: MarianTokenizer with "
                     "separate_vocabs (a target vocabulary of its own) is not supported", config_path);
            return separate < 0 ? PF_ERROR_FORMAT : PF_ERROR_UNSUPPORTED;
        }
    } else {
        const pf__json *codes = pf__tok_json_str(config, "language_codes", &bad), *src = pf__tok_json_str(config, "src_lang", &bad);
        o->langs = pf__m2m100_langs;
        o->num_langs = PF__TOK_LEN(pf__m2m100_langs);
        if (codes && !strcmp(codes->string, "wmt21")) {
            o->langs = pf__wmt21_langs;
            o->num_langs = PF__TOK_LEN(pf__wmt21_langs);
        } else if (bad || (codes && strcmp(codes->string, "m2m100"))) {
            snprintf(err, err_size, "%s: M2M100Tokenizer's language_codes must be \"m2m100\" or \"wmt21\"", config_path);
            return bad ? PF_ERROR_FORMAT : PF_ERROR_UNSUPPORTED;
        }
        if (src) o->src_lang = src->string;
    }
    return PF_OK;
}

/* The added tokens: the config's, the language codes, the named special tokens, the listed ones. */
static pf_result pf__spm_files_added(pf_tokenizer *t, const char *dir, const pf__json *config, int kind,
                                     const pf__spm_files_options *o, const char *config_path, char *err, size_t err_size) {
    int oom = 0;
    pf_result r = pf__tok_read_added_decoder(t, config, config_path, err, err_size);
    if (r != PF_OK) return r;
    for (size_t i = 0; i < o->num_langs; i++) {
        char name[16];
        size_t n = (size_t)snprintf(name, sizeof name, "__%s__", o->langs[i]);
        if (pf__tok_added_find(t, name, n)) continue;
        if (pf__tok_add_token(t, name, n, (int32_t)(t->vocab_count + i), 0, 0, 0, 0, 0)) {
            oom = 1;
            break;
        }
        t->added[t->num_added - 1].unmatched = 1;
    }
    pf__spm_named_special(t, config, "eos_token", "</s>", &oom);
    pf__spm_named_special(t, config, "pad_token", "<pad>", &oom);
    if (kind != PF__SPM_FILES_MARIAN) {
        pf__spm_named_special(t, config, "bos_token", "<s>", &oom);
        pf__spm_named_special(t, config, "sep_token", "</s>", &oom);
    }
    if (!oom && (t->unk_id = pf__spm_named_special(t, config, "unk_token", "<unk>", &oom)) < 0 && !oom) {
        snprintf(err, err_size, "%s: the unk_token is not in vocab.json", dir);
        return PF_ERROR_FORMAT;
    }
    if (oom) return pf__tok_out_of_memory(dir, err, err_size);
    return pf__tok_listed_specials(t, config, (int32_t)(t->vocab_count + o->num_langs), config_path, err, err_size);
}

/* The SentencePiece model (m, parsed from data, both the caller's to free), its pieces' ids
   through the vocabulary, and its normalizer. */
static pf_result pf__spm_files_model(pf_tokenizer *t, const char *path, const pf__spm_files_options *o, char **data,
                                     pf__spm_model *m, const char *config_path, char *err, size_t err_size) {
    size_t len = 0;
    pf__tok_norm *nm;
    pf_result r;
    if ((r = pf__read_file(path, PF__MAX_TEXT_FILE, data, &len, err, err_size)) != PF_OK ||
        (r = pf__spm_parse((const unsigned char *)*data, len, m, path, err, err_size)) != PF_OK ||
        (r = pf__spm_build(m, &t->spm, path, err, err_size)) != PF_OK)
        return r;
    if (o->upper && pf__spm_has_cased_non_ascii(m)) {
        snprintf(err, err_size, "%s: do_upper_case with pieces beyond ASCII is not supported (decode upper-cases ASCII "
                 "letters only)", config_path);
        return PF_ERROR_UNSUPPORTED;
    }
    if (!(t->spm_ids = (int32_t *)malloc((m->num_pieces ? m->num_pieces : 1) * sizeof *t->spm_ids)) ||
        !(nm = pf__tok_add_norm(t, PF__NORM_SPM))) return pf__tok_out_of_memory(path, err, err_size);
    for (size_t i = 0; i < m->num_pieces; i++) t->spm_ids[i] = pf__tok_spm_lookup(t, m->pieces[i].s, m->pieces[i].len);
    nm->spm = m->flags;
    if (!m->charsmap_len) return PF_OK;
    size_t trie_bytes = m->charsmap_len >= 4 ? (size_t)m->charsmap[0] | (size_t)m->charsmap[1] << 8 |
                                               (size_t)m->charsmap[2] << 16 | (size_t)m->charsmap[3] << 24 : 1;
    if (trie_bytes % 4) { /* SentencePiece reads the replacements from its end, HF from the last whole unit */
        snprintf(err, err_size, "%s: normalizer_spec.precompiled_charsmap is not a SentencePiece charsmap", path);
        return PF_ERROR_FORMAT;
    }
    return pf__tok_set_charsmap(nm, m->charsmap, m->charsmap_len, "normalizer_spec.precompiled_charsmap", path, err,
                                err_size);
}

/* "$A </s>" (M2M100: the source language first), a pair "$A $B </s>". */
static pf_result pf__spm_files_post(pf_tokenizer *t, const char *dir, const pf__json *config, const pf__spm_files_options *o,
                                    const char *config_path, const char *path, char *err, size_t err_size) {
    pf__tok_post_item single[3], pair[4];
    size_t n = 0, k;
    int oom = 0;
    int32_t eos = pf__spm_named_special(t, config, "eos_token", "</s>", &oom);
    if (eos < 0) {
        snprintf(err, err_size, "%s: the eos_token is not in vocab.json", dir);
        return oom ? PF_ERROR_OUT_OF_MEMORY : PF_ERROR_FORMAT;
    }
    if (o->langs) {
        char name[64];
        size_t name_len = (size_t)snprintf(name, sizeof name, "__%.40s__", o->src_lang);
        const pf__tok_added *a = pf__tok_added_find(t, name, name_len);
        int32_t lang = a ? a->id : -1;
        for (k = 0; k < o->num_langs && strcmp(o->langs[k], o->src_lang); k++) {}
        if (k == o->num_langs || lang < 0) {
            snprintf(err, err_size, "%s: src_lang \"%.40s\" is not one of M2M100Tokenizer's language codes", config_path,
                     o->src_lang);
            return PF_ERROR_FORMAT;
        }
        single[n].id = pair[n].id = lang;
        single[n].type_id = pair[n].type_id = 0;
        n++;
    }
    single[n].id = pair[n].id = PF__TOK_SEQ_A;
    pair[n + 1].id = PF__TOK_SEQ_B;
    single[n + 1].id = pair[n + 2].id = eos;
    single[n].type_id = single[n + 1].type_id = pair[n].type_id = pair[n + 1].type_id = pair[n + 2].type_id = 0;
    pf_result r = pf__tok_set_post(t, 0, single, n + 2, path, err, err_size);
    if (r == PF_OK) r = pf__tok_set_post(t, 1, pair, n + 3, path, err, err_size);
    if (r == PF_OK) t->has_post = 1;
    return r;
}

/* SentencePiece files mapped through vocab.json, as transformers' slow MarianTokenizer (kind
   PF__SPM_FILES_MARIAN: source.spm for the text and for decode, as transformers 5 decodes with a
   shared vocab; a leading ">>xx<<" its own token), M2M100Tokenizer (PF__SPM_FILES_M2M100:
   sentencepiece.bpe.model; "__src__ $A </s>"; its language codes addressable, special when the
   config lists them) and Speech2TextTokenizer (PF__SPM_FILES_SPEECH2TEXT: sentencepiece.bpe.model;
   "$A </s>"; do_upper_case upper-cases decode's text; do_lower_case changes nothing of the text in
   transformers 5, nor here; lang_codes, the multilingual models' "<lang:xx>" prefix, refused) read
   them. The pieces go through vocab.json (unknown ones to unk), the model runs on the whole text
   between added tokens as SentencePiece does, and decode is their convert_tokens_to_string. */
static pf_result pf__tok_from_spm_files(pf_tokenizer *t, const char *dir, const pf__json *config, int kind,
                                        const char *config_path, char *err, size_t err_size) {
    char path[4096];
    pf__json *vocab = NULL;
    char *data = NULL;
    pf__spm_model m;
    pf__spm_files_options o;
    memset(&m, 0, sizeof m);
    pf_result r = pf__spm_files_options_read(config, kind, config_path, &o, err, err_size);
    if (r != PF_OK) return r;
    if (pf__path_join(path, sizeof path, dir, "vocab.json")) goto too_long;
    if ((r = pf__tok_read_json(path, 0, &vocab, err, err_size)) != PF_OK ||
        (r = pf__tok_set_vocab(t, vocab, NULL, path, err, err_size)) != PF_OK ||
        (r = pf__spm_files_added(t, dir, config, kind, &o, config_path, err, err_size)) != PF_OK)
        goto done;
    if (pf__path_join(path, sizeof path, dir, kind == PF__SPM_FILES_MARIAN ? "source.spm" : "sentencepiece.bpe.model"))
        goto too_long;
    if ((r = pf__spm_files_model(t, path, &o, &data, &m, config_path, err, err_size)) != PF_OK ||
        (r = pf__spm_files_post(t, dir, config, &o, config_path, path, err, err_size)) != PF_OK)
        goto done;
    t->model = t->spm->model;
    t->spm_marian = kind == PF__SPM_FILES_MARIAN;
    t->spm_upper = o.upper;
    t->cleanup_spaces = o.cleanup;
    t->has_decoder = 1;
    r = pf__tok_add_dec(t, PF__DEC_SPM) ? pf__tok_finish(t, path, err, err_size) : pf__tok_out_of_memory(dir, err, err_size);
    goto done;
too_long:
    snprintf(err, err_size, "%.200s: the path is too long", dir);
    r = PF_ERROR_INVALID_ARGUMENT;
done:
    pf__json_free(vocab);
    free(m.pieces);
    free(data);
    return r;
}

/* Tokenizers transformers has in Python only (no tokenizer.json) that are not ByT5's: each
   tokenizer_class and what it would need. */
static const struct {
    const char *name, *needs;
} pf__tok_slow_only[] = {
    {"FSMTTokenizer", "a source and a target vocabulary (vocab-src.json encodes, vocab-tgt.json decodes) and the Moses "
                      "detokenizer on decode; its Moses tokenization is the one XLM's tokenizer runs here"},
    {"CpmTokenizer", "jieba's Chinese word segmentation (rjieba: a dictionary of about 350,000 words and an HMM, "
                     "data this library does not carry) before its SentencePiece model in transformers 4 and in "
                     "CpmTokenizerFast; transformers 5's CpmTokenizer runs the SentencePiece model without it "
                     "(XLNet's preprocessing, CPM's digit-comma split, its own decode), which is not written here either"},
    {"CpmTokenizerFast", "jieba's Chinese word segmentation (rjieba: a dictionary of about 350,000 words and an HMM, "
                         "data this library does not carry) before its SentencePiece model"},
    {"Wav2Vec2CTCTokenizer", "a character vocabulary for CTC output (pf_ctc_decode reads its vocab.json)"},
};

/* The tokenizer classes transformers builds as a byte-level BPE (GPT-2's bytes-to-unicode
   alphabet and split pattern) from vocab.json + merges.txt, with or without "Fast": the only kind
   read from those files (besides pf__tok_bpe_files_class). Any other class with them (CLIP's </w> BPE, Qwen2's own
   split pattern, ...) would give wrong ids: refused, with the way to write its tokenizer.json. */
static int pf__tok_byte_level_class(const char *tokenizer_class) {
    static const char *const classes[] = {"GPT2Tokenizer", "RobertaTokenizer", "BartTokenizer", "LongformerTokenizer",
                                          "LEDTokenizer", "BlenderbotTokenizer", "CodeGenTokenizer", "DebertaTokenizer",
                                          "MvpTokenizer", "WhisperTokenizer"};
    size_t n = strlen(tokenizer_class);
    if (n > 4 && !strcmp(tokenizer_class + n - 4, "Fast")) n -= 4;
    for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++)
        if (strlen(classes[i]) == n && !strncmp(tokenizer_class, classes[i], n)) return 1;
    return 0;
}

/* The index of tokenizer_class in pf__tok_slow_only, or its count when it is not there. */
static size_t pf__tok_slow_index(const char *tokenizer_class) {
    size_t i, n = sizeof pf__tok_slow_only / sizeof pf__tok_slow_only[0];
    for (i = 0; i < n; i++)
        if (!strcmp(tokenizer_class, pf__tok_slow_only[i].name)) break;
    return i;
}

static char *pf__tok_copy_text(const char *s) {
    char *p = (char *)malloc(strlen(s) + 1);
    if (p) memcpy(p, s, strlen(s) + 1);
    return p;
}

/* A copy of a tokenizer_config.json special token's text (a string, or an object with "content");
   NULL when absent. Returns -1 when out of memory. */
static int pf__tok_config_token_text(const pf__json *config, const char *key, char **out) {
    const pf__json *v = pf__json_get(config, key);
    *out = NULL;
    if (v && v->type == PF__JSON_OBJECT) v = pf__json_get(v, "content");
    if (!v || v->type != PF__JSON_STRING) return 0;
    *out = (char *)malloc(v->string_len + 1);
    if (!*out) return -1;
    memcpy(*out, v->string, v->string_len + 1);
    return 0;
}

/* The chat template as transformers picks it: chat_template.jinja beside the config wins; else
   the config's chat_template, a string or a list of {name, template} from which "default" is
   taken (a list without one leaves a note for pf_apply_chat_template to report). */
static pf_result pf__tok_read_chat_template(pf_tokenizer *t, const char *dir, const pf__json *config, char *err,
                                            size_t err_size) {
    char path[4096];
    const pf__json *v = config ? pf__json_get(config, "chat_template") : NULL;
    if (pf__path_join(path, sizeof path, dir, "chat_template.jinja")) {
        snprintf(err, err_size, "%.200s: the path is too long", dir);
        return PF_ERROR_INVALID_ARGUMENT;
    }
    if (pf__file_exists(path)) {
        size_t len;
        return pf__read_file(path, PF__MAX_TEXT_FILE, &t->chat_template, &len, err, err_size);
    }
    if (v && v->type == PF__JSON_ARRAY) {
        const pf__json *e, *chosen = NULL;
        for (e = v->first; e; e = e->next) {
            const pf__json *name = pf__json_get(e, "name"), *tmpl = pf__json_get(e, "template");
            if (e->type != PF__JSON_OBJECT || !name || name->type != PF__JSON_STRING || !tmpl || tmpl->type != PF__JSON_STRING) {
                snprintf(err, err_size, "%.200s/tokenizer_config.json: chat_template: a list entry is not {\"name\": ..., \"template\": ...}", dir);
                return PF_ERROR_FORMAT;
            }
            if (!strcmp(name->string, "default")) chosen = tmpl;
        }
        if (!chosen) {
            const char note[] = "the model has several chat templates and none is named \"default\": give one in pf_chat_options";
            t->chat_template_note = (char *)malloc(sizeof note);
            if (t->chat_template_note) memcpy(t->chat_template_note, note, sizeof note);
        }
        v = chosen;
    }
    if (v && v->type != PF__JSON_STRING && v->type != PF__JSON_NULL) {
        snprintf(err, err_size, "%.200s/tokenizer_config.json: chat_template is neither a string nor a list of named templates", dir);
        return PF_ERROR_FORMAT;
    }
    if (v && v->type == PF__JSON_STRING) {
        t->chat_template = (char *)malloc(v->string_len + 1);
        if (!t->chat_template) {
            snprintf(err, err_size, "%.200s: out of memory", dir);
            return PF_ERROR_OUT_OF_MEMORY;
        }
        memcpy(t->chat_template, v->string, v->string_len + 1);
    }
    return PF_OK;
}

/* bos / eos from dir's tokenizer_config.json, when there is one; from vocab.json + merges.txt,
   <|endoftext|> where the config names none (transformers' GPT-2 tokenizer's defaults); left as
   they are when the loader set them (bos_eos_set: the class's defaults, or the config's). Also the
   tokens' text and the chat template. */
static pf_result pf__tok_read_specials(pf_tokenizer *t, const char *dir, int gpt2_defaults, int bos_eos_set, char *err,
                                       size_t err_size) {
    char path[4096];
    pf__json *config = NULL;
    pf_result r;
    if (!bos_eos_set) t->bos_id = t->eos_id = -1;
    if (gpt2_defaults) t->bos_id = t->eos_id = pf__tok_vocab_find(t, "<|endoftext|>", 13);
    if (pf__path_join(path, sizeof path, dir, "tokenizer_config.json")) {
        snprintf(err, err_size, "%.200s: the path is too long", dir);
        return PF_ERROR_INVALID_ARGUMENT;
    }
    if ((r = pf__tok_read_json(path, 1, &config, err, err_size)) != PF_OK) return r;
    if (config && !bos_eos_set) {
        if (!gpt2_defaults || pf__json_get(config, "bos_token")) t->bos_id = pf__tok_config_token(t, config, "bos_token");
        if (!gpt2_defaults || pf__json_get(config, "eos_token")) t->eos_id = pf__tok_config_token(t, config, "eos_token");
        if (pf__tok_config_token_text(config, "bos_token", &t->bos_token) ||
            pf__tok_config_token_text(config, "eos_token", &t->eos_token)) {
            snprintf(err, err_size, "%s: out of memory", path);
            pf__json_free(config);
            return PF_ERROR_OUT_OF_MEMORY;
        }
    }
    if (gpt2_defaults && !t->bos_token && t->bos_id >= 0 && !(t->bos_token = pf__tok_copy_text("<|endoftext|>"))) r = PF_ERROR_OUT_OF_MEMORY;
    if (gpt2_defaults && !t->eos_token && t->eos_id >= 0 && !(t->eos_token = pf__tok_copy_text("<|endoftext|>"))) r = PF_ERROR_OUT_OF_MEMORY;
    if (r != PF_OK) snprintf(err, err_size, "%s: out of memory", path);
    else r = pf__tok_read_chat_template(t, dir, config, err, err_size);
    pf__json_free(config);
    return r;
}

/* Loads from dir: tokenizer.json if present, else vocab.json + merges.txt. Returns PF_OK, or an
   error with a message naming the file (and what is wrong) in err. */
PF_PRIVATE pf_result pf__tokenizer_load_dir(const char *dir, pf_tokenizer **out, char *err, size_t err_size) {
    char path[4096], local_err[8];
    pf_tokenizer *t;
    pf_result r;
    int from_files = 0, bos_eos_set = 0;
    if (!err || !err_size) { /* messages are then cut short, never written out of bounds */
        err = local_err;
        err_size = sizeof local_err;
    }
    err[0] = 0;
    if (out) *out = NULL;
    if (!dir || !out) {
        snprintf(err, err_size, "pf_tokenizer_load: NULL argument");
        return PF_ERROR_INVALID_ARGUMENT;
    }
    t = (pf_tokenizer *)calloc(1, sizeof *t);
    if (!t) {
        snprintf(err, err_size, "%s: out of memory", dir);
        return PF_ERROR_OUT_OF_MEMORY;
    }
    t->unk_id = t->bos_id = t->eos_id = -1;
    if (pf__path_join(path, sizeof path, dir, "tokenizer.json")) {
        snprintf(err, err_size, "%.200s: the path is too long", dir);
        r = PF_ERROR_INVALID_ARGUMENT;
    } else if (pf__file_exists(path)) {
        pf__json *root;
        r = pf__tok_read_json(path, 0, &root, err, err_size);
        if (r == PF_OK) r = pf__tok_from_json(t, root, path, err, err_size);
        pf__json_free(root);
    } else {
        char vocab[4096], merges[4096], config_path[4096];
        pf__json *config = NULL;
        const pf__json *cls = NULL;
        size_t i, n_slow = sizeof pf__tok_slow_only / sizeof pf__tok_slow_only[0];
        if (pf__path_join(vocab, sizeof vocab, dir, "vocab.json") ||
            pf__path_join(merges, sizeof merges, dir, "merges.txt") ||
            pf__path_join(config_path, sizeof config_path, dir, "tokenizer_config.json")) {
            snprintf(err, err_size, "%.200s: the path is too long", dir);
            r = PF_ERROR_INVALID_ARGUMENT;
        } else if ((r = pf__tok_read_json(config_path, 1, &config, err, err_size)) != PF_OK) {
            /* the message names the config */
        } else if ((cls = pf__json_get(config, "tokenizer_class")) != NULL && cls->type == PF__JSON_STRING &&
                   !strcmp(cls->string, "ByT5Tokenizer")) {
            r = pf__tok_from_byt5(t, config, config_path, err, err_size);
        } else if (cls && cls->type == PF__JSON_STRING &&
                   (!strcmp(cls->string, "MarianTokenizer") || !strcmp(cls->string, "M2M100Tokenizer") ||
                    !strcmp(cls->string, "Speech2TextTokenizer"))) {
            r = pf__tok_from_spm_files(t, dir, config, !strcmp(cls->string, "MarianTokenizer") ? PF__SPM_FILES_MARIAN
                                                       : !strcmp(cls->string, "M2M100Tokenizer") ? PF__SPM_FILES_M2M100
                                                                                                 : PF__SPM_FILES_SPEECH2TEXT,
                                       config_path, err, err_size);
        } else if (cls && cls->type == PF__JSON_STRING && !strcmp(cls->string, "BertJapaneseTokenizer")) {
            r = pf__tok_from_bert_japanese(t, dir, config, config_path, err, err_size);
        } else if (cls && cls->type == PF__JSON_STRING && pf__tok_bpe_files_class(cls->string)) {
            r = pf__tok_from_bpe_files(t, dir, config, config_path, err, err_size);
            bos_eos_set = 1;
        } else if (cls && cls->type == PF__JSON_STRING &&
                   (i = pf__tok_slow_index(cls->string)) < n_slow) {
            snprintf(err, err_size, "%s: %s has no tokenizer.json (transformers has no fast version of it) and is "
                     "not supported: it needs %s. Supported without tokenizer.json: vocab.json + merges.txt of a "
                     "byte-level BPE (GPT-2, RoBERTa, BART, ...), ByT5, Marian, M2M100, Speech2Text, OpenAI GPT, "
                     "HerBERT, CTRL, Blenderbot-small, PhoBERT, BERTweet, XLM, FlauBERT and BertJapanese", dir, pf__tok_slow_only[i].name,
                     pf__tok_slow_only[i].needs);
            r = PF_ERROR_UNSUPPORTED;
        } else if (cls && cls->type == PF__JSON_STRING && !pf__tok_byte_level_class(cls->string) &&
                   pf__file_exists(vocab) && pf__file_exists(merges)) {
            snprintf(err, err_size, "%s: %s with vocab.json + merges.txt and no tokenizer.json is not supported: these "
                     "files are read as a byte-level BPE (GPT-2, RoBERTa, BART, ...), which this class is not. Write its "
                     "tokenizer.json once with transformers: python -c \"import transformers as t; "
                     "t.AutoTokenizer.from_pretrained('%s').save_pretrained('%s')\"", dir, cls->string, dir, dir);
            r = PF_ERROR_UNSUPPORTED;
        } else if (pf__file_exists(vocab) && pf__file_exists(merges)) {
            from_files = 1;
            r = pf__tok_from_files(t, dir, err, err_size);
        } else {
            snprintf(err, err_size, "%s: no tokenizer.json, nor vocab.json and merges.txt", dir);
            r = PF_ERROR_IO;
        }
        pf__json_free(config);
    }
    if (r == PF_OK) r = pf__tok_read_specials(t, dir, from_files, bos_eos_set, err, err_size);
    if (r != PF_OK) {
        pf_tokenizer_free(t);
        return r;
    }
    *out = t;
    return PF_OK;
}

pf_result pf_tokenizer_load(const char *dir, pf_tokenizer **tokenizer, char *error, size_t error_size) {
    return pf__tokenizer_load_dir(dir, tokenizer, error, error_size);
}

