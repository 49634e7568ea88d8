#include "internal.h"
/* ---- the Python classes' word splits: Moses (XLM, FlauBERT), BertJapanese's basic split ---- */

/* What transformers' XLMTokenizer, FlaubertTokenizer and FSMTTokenizer do to a text (each piece
   between added tokens) before their BPE, written from the rules of sacremoses 0.2.0 (which they
   call) and of their own moses_pipeline; our own code, sacremoses read to learn the rules:

     replace_unicode_punct (transformers' own: full-width punctuation and digits to ASCII)
     MosesPunctNormalizer(lang).normalize: regex substitutions in its order (penn quotes,
       dashes, French quotes, no-break spaces; "," / "." after quotes and between digits by
       language), then strip()
     remove_non_printing_char: characters of Unicode category C* dropped
     MosesTokenizer(lang).tokenize: spaces collapsed, everything outside its alphanumeric class
       padded with spaces, multi-dots protected, commas split outside numbers, apostrophes by
       language, a final period split unless a nonbreaking prefix (the language's list) or the
       next word keeps it; FSMT's aggressive_dash_splits ("a-b" -> "a @-@ b") and XML escapes.

   Each substitution runs as Python's re.sub does: left to right, a match resumes after the
   previous one's end (or before a lookahead). Character classes are what sacremoses' compiled
   regexes match (its Perl property lists pasted into classes) and Python's \d, \s and
   categories, in src/moses_tables.c (test/gen_moses_tables.py). */


/* One code point of a pattern. */
enum { PF__MEL_CP = 1, PF__MEL_ASCII, PF__MEL_FLAGS, PF__MEL_NOT_FLAGS, PF__MEL_BELOW };
typedef struct pf__moses_el {
    unsigned char kind;
    uint32_t value;  /* CP: the code point; FLAGS, NOT_FLAGS: PF__MOSES_*; BELOW: the bound */
    const char *set; /* ASCII: the characters */
} pf__moses_el;

/* The steps: a pattern of up to 3 code points and its replacement (bytes 1 .. 3 in repl stand for
   what element 1 .. 3 matched), or an operation of its own (op). */
enum {
    PF__MOP_PATTERN, PF__MOP_UNICODE_PUNCT, PF__MOP_STRIP, PF__MOP_DOTS_QUOTE, PF__MOP_NFC, PF__MOP_LOWER,
    PF__MOP_MULTIDOTS, PF__MOP_RESTORE_DOTS, PF__MOP_PREFIXES
};
typedef struct pf__moses_step {
    unsigned char op;
    unsigned char langs;  /* PF__ML_* it applies to; 0: all */
    unsigned char needs;  /* PF__MOSES_OPT_* it applies with; 0: always */
    unsigned char n;      /* pattern elements */
    unsigned char plus;   /* the last element matches a run (greedy +) */
    unsigned char at_end; /* only a match that ends the text ($) */
    unsigned char lookahead; /* the last element is not consumed ((?=...)) */
    pf__moses_el el[3];
    const char *repl;
} pf__moses_step;

#define PF__M_CP(x) {PF__MEL_CP, (x), NULL}
#define PF__M_IN(s) {PF__MEL_ASCII, 0, (s)}
#define PF__M_F(f) {PF__MEL_FLAGS, (f), NULL}
#define PF__M_NF(f) {PF__MEL_NOT_FLAGS, (f), NULL}
#define PF__M_BELOW(x) {PF__MEL_BELOW, (x), NULL}
#define PF__M1(langs, needs, a, repl) {PF__MOP_PATTERN, langs, needs, 1, 0, 0, 0, {a}, repl}
#define PF__M2(langs, needs, a, b, repl) {PF__MOP_PATTERN, langs, needs, 2, 0, 0, 0, {a, b}, repl}
#define PF__M3(langs, needs, a, b, c, repl) {PF__MOP_PATTERN, langs, needs, 3, 0, 0, 0, {a, b, c}, repl}
#define PF__MOP(op, langs, needs) {op, langs, needs, 0, 0, 0, 0, {{0, 0, NULL}}, NULL}
#define PF__M_LETTERS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

/* The whole pipeline, in order (the classes pick their steps by needs; the language by langs). */
static const pf__moses_step pf__moses_steps[] = {
    /* FSMT's do_lower_case: text.lower() first */
    PF__MOP(PF__MOP_LOWER, 0, PF__MOSES_OPT_LOWER_FIRST),
    /* FlauBERT's preprocess_text: `` and '' to ", NFC, lower() with do_lowercase */
    PF__M2(0, PF__MOSES_OPT_FLAUBERT, PF__M_CP('`'), PF__M_CP('`'), "\""),
    PF__M2(0, PF__MOSES_OPT_FLAUBERT, PF__M_CP('\''), PF__M_CP('\''), "\""),
    PF__MOP(PF__MOP_NFC, 0, PF__MOSES_OPT_FLAUBERT),
    PF__MOP(PF__MOP_LOWER, 0, PF__MOSES_OPT_LOWER_NFC),
    /* transformers' replace_unicode_punct */
    PF__MOP(PF__MOP_UNICODE_PUNCT, 0, 0),
    /* MosesPunctNormalizer: EXTRA_WHITESPACE */
    PF__M1(0, 0, PF__M_CP('\r'), ""),
    PF__M1(0, 0, PF__M_CP('('), " ("),
    PF__M1(0, 0, PF__M_CP(')'), ") "),
    {PF__MOP_PATTERN, 0, 0, 1, 1, 0, 0, {PF__M_CP(' ')}, " "},
    PF__M3(0, 0, PF__M_CP(')'), PF__M_CP(' '), PF__M_IN(".!:?;,"), ")\3"),
    PF__M2(0, 0, PF__M_CP('('), PF__M_CP(' '), "("),
    PF__M2(0, 0, PF__M_CP(' '), PF__M_CP(')'), ")"),
    PF__M3(0, 0, PF__M_F(PF__MOSES_PY_DIGIT), PF__M_CP(' '), PF__M_CP('%'), "\1%"),
    PF__M2(0, 0, PF__M_CP(' '), PF__M_CP(':'), ":"),
    PF__M2(0, 0, PF__M_CP(' '), PF__M_CP(';'), ";"),
    /* NORMALIZE_UNICODE_IF_NOT_PENN (penn=True puts it here) */
    PF__M1(0, 0, PF__M_CP('`'), "'"),
    PF__M2(0, 0, PF__M_CP('\''), PF__M_CP('\''), " \" "),
    /* NORMALIZE_UNICODE */
    PF__M1(0, 0, PF__M_CP(0x201E), "\""),
    PF__M1(0, 0, PF__M_CP(0x201C), "\""),
    PF__M1(0, 0, PF__M_CP(0x201D), "\""),
    PF__M1(0, 0, PF__M_CP(0x2013), "-"),
    PF__M1(0, 0, PF__M_CP(0x2014), " - "),
    {PF__MOP_PATTERN, 0, 0, 1, 1, 0, 0, {PF__M_CP(' ')}, " "},
    PF__M1(0, 0, PF__M_CP(0xB4), "'"),
    PF__M3(0, 0, PF__M_IN(PF__M_LETTERS), PF__M_CP(0x2018), PF__M_IN(PF__M_LETTERS), "\1'\3"),
    PF__M3(0, 0, PF__M_IN(PF__M_LETTERS), PF__M_CP(0x2019), PF__M_IN(PF__M_LETTERS), "\1'\3"),
    PF__M1(0, 0, PF__M_CP(0x2018), "'"),
    PF__M1(0, 0, PF__M_CP(0x201A), "'"),
    PF__M1(0, 0, PF__M_CP(0x2019), "'"),
    PF__M2(0, 0, PF__M_CP('\''), PF__M_CP('\''), "\""),
    PF__M2(0, 0, PF__M_CP(0xB4), PF__M_CP(0xB4), "\""),
    PF__M1(0, 0, PF__M_CP(0x2026), "..."),
    /* FRENCH_QUOTES (every language) */
    PF__M3(0, 0, PF__M_CP(0xA0), PF__M_CP(0xAB), PF__M_CP(0xA0), "\""),
    PF__M2(0, 0, PF__M_CP(0xAB), PF__M_CP(0xA0), "\""),
    PF__M1(0, 0, PF__M_CP(0xAB), "\""),
    PF__M3(0, 0, PF__M_CP(0xA0), PF__M_CP(0xBB), PF__M_CP(0xA0), "\""),
    PF__M2(0, 0, PF__M_CP(0xA0), PF__M_CP(0xBB), "\""),
    PF__M1(0, 0, PF__M_CP(0xBB), "\""),
    /* HANDLE_PSEUDO_SPACES */
    PF__M2(0, 0, PF__M_CP(0xA0), PF__M_CP('%'), "%"),
    PF__M3(0, 0, PF__M_CP('n'), PF__M_CP(0xBA), PF__M_CP(0xA0), "n\xC2\xBA "),
    PF__M2(0, 0, PF__M_CP(0xA0), PF__M_CP(':'), ":"),
    PF__M3(0, 0, PF__M_CP(0xA0), PF__M_CP(0xBA), PF__M_CP('C'), " \xC2\xBA" "C"),
    PF__M3(0, 0, PF__M_CP(0xA0), PF__M_CP('c'), PF__M_CP('m'), " cm"),
    PF__M2(0, 0, PF__M_CP(0xA0), PF__M_CP('?'), "?"),
    PF__M2(0, 0, PF__M_CP(0xA0), PF__M_CP('!'), "!"),
    PF__M2(0, 0, PF__M_CP(0xA0), PF__M_CP(';'), ";"),
    PF__M2(0, 0, PF__M_CP(','), PF__M_CP(0xA0), ", "),
    {PF__MOP_PATTERN, 0, 0, 1, 1, 0, 0, {PF__M_CP(' ')}, " "},
    /* quotes and commas: English moves ,. before a closing quote, German and French after */
    {PF__MOP_PATTERN, PF__ML_EN, 0, 2, 1, 0, 0, {PF__M_CP('"'), PF__M_IN(",.")}, "\2\""},
    PF__M2(PF__ML_DE | PF__ML_FR, 0, PF__M_CP(','), PF__M_CP('"'), "\","),
    PF__MOP(PF__MOP_DOTS_QUOTE, PF__ML_DE | PF__ML_FR, 0),
    /* numbers: a no-break space between digits */
    PF__M3(PF__ML_DE | PF__ML_FR, 0, PF__M_F(PF__MOSES_PY_DIGIT), PF__M_CP(0xA0), PF__M_F(PF__MOSES_PY_DIGIT), "\1,\3"),
    PF__M3(PF__ML_EN | PF__ML_RU, 0, PF__M_F(PF__MOSES_PY_DIGIT), PF__M_CP(0xA0), PF__M_F(PF__MOSES_PY_DIGIT), "\1.\3"),
    PF__MOP(PF__MOP_STRIP, 0, 0),
    /* remove_non_printing_char */
    PF__M1(0, 0, PF__M_F(PF__MOSES_PY_OTHER), ""),
    /* MosesTokenizer.tokenize */
    {PF__MOP_PATTERN, 0, 0, 1, 1, 0, 0, {PF__M_F(PF__MOSES_PY_SPACE)}, " "},
    PF__M1(0, 0, PF__M_BELOW(0x20), ""),
    PF__MOP(PF__MOP_STRIP, 0, 0),
    PF__M1(0, 0, PF__M_F(PF__MOSES_PAD), " \1 "),
    {PF__MOP_PATTERN, 0, PF__MOSES_OPT_DASHES, 3, 0, 0, 1,
     {PF__M_F(PF__MOSES_ALNUM), PF__M_CP('-'), PF__M_F(PF__MOSES_ALNUM)}, "\1 @-@ "},
    PF__MOP(PF__MOP_MULTIDOTS, 0, 0),
    PF__M2(0, 0, PF__M_NF(PF__MOSES_N), PF__M_CP(','), "\1 , "),
    PF__M2(0, 0, PF__M_CP(','), PF__M_NF(PF__MOSES_N), " , \2"),
    {PF__MOP_PATTERN, 0, 0, 2, 0, 1, 0, {PF__M_F(PF__MOSES_N), PF__M_CP(',')}, "\1 , "},
    PF__M3(PF__ML_EN, 0, PF__M_NF(PF__MOSES_ALPHA), PF__M_CP('\''), PF__M_NF(PF__MOSES_ALPHA), "\1 ' \3"),
    PF__M3(PF__ML_EN, 0, PF__M_NF(PF__MOSES_ALPHA | PF__MOSES_N), PF__M_CP('\''), PF__M_F(PF__MOSES_ALPHA), "\1 ' \3"),
    PF__M3(PF__ML_EN, 0, PF__M_F(PF__MOSES_ALPHA), PF__M_CP('\''), PF__M_NF(PF__MOSES_ALPHA), "\1 ' \3"),
    PF__M3(PF__ML_EN, 0, PF__M_F(PF__MOSES_ALPHA), PF__M_CP('\''), PF__M_F(PF__MOSES_ALPHA), "\1 '\3"),
    PF__M3(PF__ML_EN, 0, PF__M_F(PF__MOSES_N), PF__M_CP('\''), PF__M_CP('s'), "\1 '\3"),
    PF__M3(PF__ML_FR, 0, PF__M_NF(PF__MOSES_ALPHA), PF__M_CP('\''), PF__M_NF(PF__MOSES_ALPHA), "\1 ' \3"),
    PF__M3(PF__ML_FR, 0, PF__M_NF(PF__MOSES_ALPHA), PF__M_CP('\''), PF__M_F(PF__MOSES_ALPHA), "\1 ' \3"),
    PF__M3(PF__ML_FR, 0, PF__M_F(PF__MOSES_ALPHA), PF__M_CP('\''), PF__M_NF(PF__MOSES_ALPHA), "\1 ' \3"),
    PF__M3(PF__ML_FR, 0, PF__M_F(PF__MOSES_ALPHA), PF__M_CP('\''), PF__M_F(PF__MOSES_ALPHA), "\1' \3"),
    PF__M1(PF__ML_DE | PF__ML_RU, 0, PF__M_CP('\''), " ' "),
    PF__MOP(PF__MOP_PREFIXES, 0, 0),
    {PF__MOP_PATTERN, 0, 0, 1, 1, 0, 0, {PF__M_F(PF__MOSES_PY_SPACE)}, " "},
    PF__MOP(PF__MOP_STRIP, 0, 0),
    {PF__MOP_PATTERN, 0, 0, 2, 0, 1, 0, {PF__M_CP('.'), PF__M_CP('\'')}, " . ' "},
    PF__MOP(PF__MOP_RESTORE_DOTS, 0, 0),
    /* escape_xml (FSMT), & first */
    PF__M1(0, PF__MOSES_OPT_ESCAPE, PF__M_CP('&'), "&amp;"),
    PF__M1(0, PF__MOSES_OPT_ESCAPE, PF__M_CP('|'), "&#124;"),
    PF__M1(0, PF__MOSES_OPT_ESCAPE, PF__M_CP('<'), "&lt;"),
    PF__M1(0, PF__MOSES_OPT_ESCAPE, PF__M_CP('>'), "&gt;"),
    PF__M1(0, PF__MOSES_OPT_ESCAPE, PF__M_CP('\''), "&apos;"),
    PF__M1(0, PF__MOSES_OPT_ESCAPE, PF__M_CP('"'), "&quot;"),
    PF__M1(0, PF__MOSES_OPT_ESCAPE, PF__M_CP('['), "&#91;"),
    PF__M1(0, PF__MOSES_OPT_ESCAPE, PF__M_CP(']'), "&#93;"),
};

static int pf__moses_el_match(const pf__moses_el *e, uint32_t cp) {
    switch (e->kind) {
    case PF__MEL_CP: return cp == e->value;
    case PF__MEL_ASCII: return cp > 0 && cp < 0x80 && strchr(e->set, (int)cp) != NULL;
    case PF__MEL_FLAGS: return (pf__moses_class(cp) & e->value) != 0;
    case PF__MEL_NOT_FLAGS: return (pf__moses_class(cp) & e->value) == 0;
    case PF__MEL_BELOW: return cp < e->value;
    }
    return 0;
}

/* A pattern step over s[0 .. n) into out, as re.sub. */
static int pf__moses_pattern(const pf__moses_step *st, const unsigned char *s, size_t n, pf__tok_buf *out) {
    size_t i = 0, k;
    uint32_t cp;
    while (i < n) {
        size_t at[4], pos = i;
        int e;
        at[0] = i;
        for (e = 0; e < st->n && pos < n; e++) {
            k = pf__utf8_decode(s + pos, n - pos, &cp);
            if (!pf__moses_el_match(&st->el[e], cp)) break;
            pos += k;
            if (st->plus && e + 1 == st->n)
                while (pos < n && (k = pf__utf8_decode(s + pos, n - pos, &cp), pf__moses_el_match(&st->el[e], cp))) pos += k;
            at[e + 1] = pos;
        }
        if (e == st->n && (!st->at_end || pos == n)) {
            const char *r;
            for (r = st->repl; *r; r++) {
                unsigned g = (unsigned char)*r;
                if (g >= 1 && g <= 3 ? pf__buf_put(out, s + at[g - 1], at[g] - at[g - 1]) : pf__buf_put(out, r, 1))
                    return -1;
            }
            i = st->lookahead ? at[st->n - 1] : pos;
            continue;
        }
        k = pf__utf8_decode(s + i, n - i, &cp);
        if (pf__buf_put(out, s + i, k)) return -1;
        i += k;
    }
    return 0;
}

/* transformers' replace_unicode_punct: its str.replace calls in one pass (each writes ASCII that
   no other one matches); "。" and "．" take the whitespace after them (\s*). */
static int pf__moses_unicode_punct(const unsigned char *s, size_t n, pf__tok_buf *out) {
    static const struct {
        uint32_t cp;
        const char *to;
    } map[] = {{0xFF0C, ","}, {0x3002, ". "}, {0x3001, ","}, {0x201D, "\""}, {0x201C, "\""}, {0x2236, ":"},
               {0xFF1A, ":"}, {0xFF1F, "?"}, {0x300A, "\""}, {0x300B, "\""}, {0xFF09, ")"}, {0xFF01, "!"},
               {0xFF08, "("}, {0xFF1B, ";"}, {0xFF11, "1"}, {0x300D, "\""}, {0x300C, "\""}, {0xFF10, "0"},
               {0xFF13, "3"}, {0xFF12, "2"}, {0xFF15, "5"}, {0xFF16, "6"}, {0xFF19, "9"}, {0xFF17, "7"},
               {0xFF18, "8"}, {0xFF14, "4"}, {0xFF0E, ". "}, {0xFF5E, "~"}, {0x2019, "'"}, {0x2026, "..."},
               {0x2501, "-"}, {0x3008, "<"}, {0x3009, ">"}, {0x3010, "["}, {0x3011, "]"}, {0xFF05, "%"}};
    size_t i = 0, k, m;
    uint32_t cp;
    while (i < n) {
        k = pf__utf8_decode(s + i, n - i, &cp);
        for (m = 0; m < PF__TOK_LEN(map) && map[m].cp != cp; m++) {}
        if (m == PF__TOK_LEN(map)) {
            if (pf__buf_put(out, s + i, k)) return -1;
            i += k;
            continue;
        }
        if (pf__buf_put(out, map[m].to, strlen(map[m].to))) return -1;
        i += k;
        if (cp == 0x3002 || cp == 0xFF0E)
            while (i < n && (k = pf__utf8_decode(s + i, n - i, &cp), pf__moses_class(cp) & PF__MOSES_PY_SPACE)) i += k;
    }
    return 0;
}

/* Python's str.strip() (re's \s is the same set). */
static int pf__moses_strip(const unsigned char *s, size_t n, pf__tok_buf *out) {
    size_t lo = 0, hi = n, k;
    uint32_t cp;
    while (lo < hi && (k = pf__utf8_decode(s + lo, hi - lo, &cp), pf__moses_class(cp) & PF__MOSES_PY_SPACE)) lo += k;
    while (hi > lo) {
        uint32_t last = pf__utf8_decode_before(s, lo, hi, &k);
        if (!(pf__moses_class(last) & PF__MOSES_PY_SPACE)) break;
        hi -= k;
    }
    return pf__buf_put(out, s + lo, hi - lo);
}

/* German and French: (\.+)"(\s*[^<]) -> "\1\2, a run of periods moved after the quote that follows it
   unless only "<" or the end comes after the quote (the whitespace run backtracks to give [^<]
   one of its own). The match takes the run, the quote, the whitespace and the character after. */
static int pf__moses_dots_quote(const unsigned char *s, size_t n, pf__tok_buf *out) {
    size_t i = 0, k;
    uint32_t cp;
    while (i < n) {
        size_t j = i, q, ws, end = 0;
        while (j < n && s[j] == '.') j++;
        if (j > i && j < n && s[j] == '"') {
            for (q = j + 1, ws = q; ws < n && (k = pf__utf8_decode(s + ws, n - ws, &cp), pf__moses_class(cp) & PF__MOSES_PY_SPACE);)
                ws += k;
            if (ws < n && (pf__utf8_decode(s + ws, n - ws, &cp), cp != '<')) end = ws + pf__utf8_decode(s + ws, n - ws, &cp);
            else if (ws > q) end = ws;
            if (end) {
                if (pf__buf_put(out, "\"", 1) || pf__buf_put(out, s + i, j - i) || pf__buf_put(out, s + q, end - q)) return -1;
                i = end;
                continue;
            }
        }
        if (j > i) { /* a run of periods without its quote: none of them starts a match */
            if (pf__buf_put(out, s + i, j - i)) return -1;
            i = j;
            continue;
        }
        k = pf__utf8_decode(s + i, n - i, &cp);
        if (pf__buf_put(out, s + i, k)) return -1;
        i += k;
    }
    return 0;
}

/* replace_multidots: a run of k >= 2 periods becomes " " "DOT" * k "MULTI", and a space after it
   when the text goes on. */
static int pf__moses_multidots(const unsigned char *s, size_t n, pf__tok_buf *out) {
    size_t i = 0, j, m;
    while (i < n) {
        for (j = i; j < n && s[j] == '.'; j++) {}
        if (j - i >= 2) {
            if (pf__buf_put(out, " ", 1)) return -1;
            for (m = i; m < j; m++)
                if (pf__buf_put(out, "DOT", 3)) return -1;
            if (pf__buf_put(out, "MULTI", 5) || (j < n && pf__buf_put(out, " ", 1))) return -1;
            i = j;
            continue;
        }
        if (pf__buf_put(out, s + i, j > i ? j - i : 1)) return -1;
        i = j > i ? j : i + 1;
    }
    return 0;
}

/* restore_multidots: (?:DOT)+MULTI becomes as many periods as it has DOTs (wherever it comes
   from: a text that says "DOTMULTI" gets a period too, as in sacremoses). */
static int pf__moses_restore_dots(const unsigned char *s, size_t n, pf__tok_buf *out) {
    size_t i = 0, j, dots;
    while (i < n) {
        for (j = i, dots = 0; j + 3 <= n && !memcmp(s + j, "DOT", 3); j += 3) dots++;
        if (dots && j + 5 <= n && !memcmp(s + j, "MULTI", 5)) {
            for (; dots; dots--)
                if (pf__buf_put(out, ".", 1)) return -1;
            i = j + 5;
            continue;
        }
        if (pf__buf_put(out, s + i, 1)) return -1;
        i++;
    }
    return 0;
}

/* The kind of prefix p in the language's list: 'P' (keeps its period), 'N' (keeps it before a
   number), 0 (not listed). */
static char pf__moses_prefix_kind(const char *list, const unsigned char *p, size_t len) {
    for (const char *e = list; *e; e += strlen(e) + 1)
        if (strlen(e + 1) == len && !memcmp(e + 1, p, len)) return e[0];
    return 0;
}

/* handles_nonbreaking_prefixes: of the whitespace-split words, one that ends with a period
   (and has something before it) keeps the period attached when what comes before it holds a
   period and a letter, is a listed prefix, or the next word starts with a lowercase letter; or
   when it is a numeric-only prefix and the next word starts with a digit; otherwise the period
   is split off. The words joined by single spaces. */
static int pf__moses_prefixes(const char *list, const unsigned char *s, size_t n, pf__tok_buf *out) {
    size_t i = 0, k, words = 0;
    uint32_t cp;
    while (i < n) {
        size_t start, end, next, next_end;
        while (i < n && (k = pf__utf8_decode(s + i, n - i, &cp), pf__moses_class(cp) & PF__MOSES_PY_SPACE)) i += k;
        if (i == n) break;
        for (start = i; i < n && (k = pf__utf8_decode(s + i, n - i, &cp), !(pf__moses_class(cp) & PF__MOSES_PY_SPACE));) i += k;
        end = i;
        for (next = i; next < n && (k = pf__utf8_decode(s + next, n - next, &cp), pf__moses_class(cp) & PF__MOSES_PY_SPACE);)
            next += k;
        next_end = next < n; /* is there a next word? */
        if (words++ && pf__buf_put(out, " ", 1)) return -1;
        if (end - start >= 2 && s[end - 1] == '.') {
            size_t plen = end - 1 - start, j;
            int keep = 0, has_dot = memchr(s + start, '.', plen) != NULL, has_alpha = 0;
            char kind = pf__moses_prefix_kind(list, s + start, plen);
            for (j = start; has_dot && j < end - 1 && !has_alpha; j += k) {
                k = pf__utf8_decode(s + j, end - 1 - j, &cp);
                has_alpha = (pf__moses_class(cp) & PF__MOSES_ALPHA) != 0;
            }
            if ((has_dot && has_alpha) || kind == 'P') keep = 1;
            else if (next_end && (pf__utf8_decode(s + next, n - next, &cp), pf__moses_class(cp) & PF__MOSES_LOWER)) keep = 1;
            else if (kind == 'N' && next_end && s[next] >= '0' && s[next] <= '9') keep = 1;
            if (!keep) {
                if (pf__buf_put(out, s + start, plen) || pf__buf_put(out, " .", 2)) return -1;
                continue;
            }
        }
        if (pf__buf_put(out, s + start, end - start)) return -1;
    }
    return 0;
}

/* The words of s[0 .. n) as the class's pipeline makes them, separated by single spaces, in out
   (c->moses[] are the steps' scratch). 0, or -1 when out of memory. */
static int pf__moses_run(pf__tok_ctx *c, const unsigned char *s, size_t n, pf__tok_buf **out) {
    const pf_tokenizer *t = c->t;
    unsigned lang_bit = 1u << t->moses_lang;
    int cur = 0;
    size_t i;
    c->moses[0].len = 0;
    if (pf__buf_put(&c->moses[0], s, n)) return -1;
    for (i = 0; i < PF__TOK_LEN(pf__moses_steps); i++) {
        const pf__moses_step *st = &pf__moses_steps[i];
        const unsigned char *in;
        pf__tok_buf *dst = &c->moses[1 - cur];
        size_t len;
        int rc = 0;
        if ((st->langs && !(st->langs & lang_bit)) || (st->needs && !(st->needs & t->moses_opts))) continue;
        in = c->moses[cur].p;
        len = c->moses[cur].len;
        dst->len = 0;
        switch (st->op) {
        case PF__MOP_PATTERN: rc = pf__moses_pattern(st, in, len, dst); break;
        case PF__MOP_UNICODE_PUNCT: rc = pf__moses_unicode_punct(in, len, dst); break;
        case PF__MOP_STRIP: rc = pf__moses_strip(in, len, dst); break;
        case PF__MOP_DOTS_QUOTE: rc = pf__moses_dots_quote(in, len, dst); break;
        case PF__MOP_NFC: rc = pf__py_normalize(c, PF__NORM_NFC, in, len, dst); break;
        case PF__MOP_LOWER: rc = pf__py_lower(t, in, len, dst); break;
        case PF__MOP_MULTIDOTS: rc = pf__moses_multidots(in, len, dst); break;
        case PF__MOP_RESTORE_DOTS: rc = pf__moses_restore_dots(in, len, dst); break;
        case PF__MOP_PREFIXES: rc = pf__moses_prefixes(t->moses_prefixes, in, len, dst); break;
        }
        if (rc) return -1;
        cur = 1 - cur;
    }
    *out = &c->moses[cur];
    return 0;
}

/* XLM's lowercase_and_remove_accent of one word: lower(), NFD, the Mn characters dropped, lower()
   again; into out (c->word[0] scratch). */
static int pf__moses_xlm_lower(pf__tok_ctx *c, const unsigned char *s, size_t n, pf__tok_buf *out) {
    pf__tok_buf *tmp = &c->word[0];
    size_t i, k, kept = 0;
    uint32_t cp;
    tmp->len = out->len = 0;
    if (pf__py_lower(c->t, s, n, tmp) || pf__py_normalize(c, PF__NORM_NFD, tmp->p, tmp->len, out)) return -1;
    for (i = 0; i < out->len; i += k) { /* drop Mn in place */
        k = pf__utf8_decode(out->p + i, out->len - i, &cp);
        if (pf__moses_class(cp) & PF__MOSES_PY_MN) continue;
        memmove(out->p + kept, out->p + i, k);
        kept += k;
    }
    out->len = kept;
    tmp->len = 0;
    if (pf__py_lower(c->t, out->p, out->len, tmp)) return -1;
    out->len = 0;
    return pf__buf_put(out, tmp->p, tmp->len);
}

/* The words of a piece between added tokens (the pipeline's, lowercased with XLM's
   do_lowercase_and_remove_accent, the empty ones dropped), separated by single spaces, in *out
   (one of c->moses[]). */
PF_PRIVATE int pf__moses_words(pf__tok_ctx *c, const unsigned char *s, size_t len, pf__tok_buf **out) {
    pf__tok_buf *words, *lowered;
    size_t i = 0, start;
    if (pf__moses_run(c, s, len, &words)) return -1;
    *out = words;
    if (!(c->t->moses_opts & PF__MOSES_OPT_XLM_LOWER)) return 0;
    lowered = words == &c->moses[0] ? &c->moses[1] : &c->moses[0];
    lowered->len = 0;
    while (i < words->len) {
        for (start = i; i < words->len && words->p[i] != ' '; i++) {}
        if (i > start) {
            if (pf__moses_xlm_lower(c, words->p + start, i - start, &c->word[1])) return -1;
            if (c->word[1].len && ((lowered->len && pf__buf_put(lowered, " ", 1)) ||
                                   pf__buf_put(lowered, c->word[1].p, c->word[1].len)))
                return -1;
        }
        i++;
    }
    *out = lowered;
    return 0;
}

/* ---- BertJapaneseTokenizer's basic split ---- */

/* _is_punctuation: ASCII that is neither a letter nor a digit, or Unicode P*. */
static int pf__bj_punct(uint32_t cp) {
    if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126)) return 1;
    return (pf__moses_class(cp) & PF__MOSES_PY_PUNCT) != 0;
}

/* One word of the basic split: lowered and stripped of accents (lower), then cut at punctuation;
   the pieces appended to out, each after a space. */
static int pf__bj_word(pf__tok_ctx *c, const unsigned char *s, size_t n, int lower, pf__tok_buf *out) {
    size_t i, k, start;
    uint32_t cp;
    if (lower) {
        pf__tok_buf *low = &c->word[0], *nfd = &c->word[1];
        size_t kept = 0;
        low->len = nfd->len = 0;
        if (pf__py_lower(c->t, s, n, low) || pf__py_normalize(c, PF__NORM_NFD, low->p, low->len, nfd)) return -1;
        for (i = 0; i < nfd->len; i += k) {
            k = pf__utf8_decode(nfd->p + i, nfd->len - i, &cp);
            if (pf__moses_class(cp) & PF__MOSES_PY_MN) continue;
            memmove(nfd->p + kept, nfd->p + i, k);
            kept += k;
        }
        nfd->len = kept;
        s = nfd->p;
        n = nfd->len;
    }
    for (start = i = 0; i < n; i += k) {
        k = pf__utf8_decode(s + i, n - i, &cp);
        if (!pf__bj_punct(cp)) continue;
        if ((i > start && (pf__buf_put(out, " ", 1) || pf__buf_put(out, s + start, i - start))) ||
            pf__buf_put(out, " ", 1) || pf__buf_put(out, s + i, k))
            return -1;
        start = i + k;
    }
    return i > start && (pf__buf_put(out, " ", 1) || pf__buf_put(out, s + start, i - start)) ? -1 : 0;
}

/* The pieces of BasicTokenizer.tokenize (without Chinese-character splitting; lower: its
   do_lower_case) of a piece between added tokens, separated by spaces, in *out (c->moses[0]):
   control characters, NUL and U+FFFD dropped, whitespace to spaces, NFC, Python's split(), each
   word lowered and cut at punctuation. */
PF_PRIVATE int pf__bj_words(pf__tok_ctx *c, const unsigned char *s, size_t n, int lower, pf__tok_buf **out) {
    pf__tok_buf *clean = &c->moses[0], *nfc = &c->moses[1];
    size_t i, k, start;
    uint32_t cp;
    clean->len = nfc->len = 0;
    for (i = 0; i < n; i += k) { /* _clean_text */
        unsigned cls;
        k = pf__utf8_decode(s + i, n - i, &cp);
        cls = pf__moses_class(cp);
        if (cp == 0 || cp == 0xFFFD || ((cls & PF__MOSES_PY_OTHER) && cp != '\t' && cp != '\n' && cp != '\r')) continue;
        if (cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r' || (cls & PF__MOSES_PY_ZS) ? pf__buf_put(clean, " ", 1)
                                                                                            : pf__buf_put(clean, s + i, k))
            return -1;
    }
    if (pf__py_normalize(c, PF__NORM_NFC, clean->p, clean->len, nfc)) return -1;
    clean->len = 0;
    *out = clean;
    for (start = i = 0; i <= nfc->len; i += k) { /* whitespace_tokenize: Python's split() */
        k = 1;
        if (i < nfc->len) {
            k = pf__utf8_decode(nfc->p + i, nfc->len - i, &cp);
            if (!(pf__moses_class(cp) & PF__MOSES_PY_SPACE)) continue;
        }
        if (i > start && pf__bj_word(c, nfc->p + start, i - start, lower, clean)) return -1;
        start = i + k;
    }
    return 0;
}
