#include "internal.h"
/* ---- growable buffers ---- */

PF_PRIVATE int pf__tok_grow(void **p, size_t *cap, size_t need, size_t elem) {
    size_t c = *cap ? *cap : 64;
    void *q;
    if (need <= *cap) return 0;
    while (c < need) {
        if (c > ((size_t)-1) / 4 / elem) return -1;
        c *= 2;
    }
    q = realloc(*p, c * elem);
    if (!q) return -1;
    *p = q;
    *cap = c;
    return 0;
}

PF_PRIVATE int pf__buf_put(pf__tok_buf *b, const void *s, size_t n) {
    if (b->len + n < b->len || pf__tok_grow((void **)&b->p, &b->cap, b->len + n, 1)) return -1;
    if (n) memcpy(b->p + b->len, s, n);
    b->len += n;
    return 0;
}

PF_PRIVATE int pf__buf_put_cp(pf__tok_buf *b, uint32_t cp) {
    unsigned char u[4];
    return pf__buf_put(b, u, pf__utf8_encode(cp, u));
}

PF_PRIVATE int pf__cps_put(pf__tok_cps *b, uint32_t cp) {
    if (pf__tok_grow((void **)&b->p, &b->cap, b->len + 1, sizeof *b->p)) return -1;
    b->p[b->len++] = cp;
    return 0;
}

/* Replaces every occurrence of pat in s[0 .. n) by rep, leftmost first and not overlapping (an
   empty pat matches at every character boundary, as Rust's str::replace), appending to out. */
PF_PRIVATE int pf__buf_replace(pf__tok_buf *out, const unsigned char *s, size_t n, const char *pat, size_t pat_len,
                           const char *rep, size_t rep_len) {
    size_t i = 0, done = 0;
    uint32_t cp;
    if (pat_len == 0) {
        for (i = 0; i < n; i += pf__utf8_decode(s + i, n - i, &cp))
            if (pf__buf_put(out, rep, rep_len) || pf__buf_put(out, s + i, pf__utf8_decode(s + i, n - i, &cp)))
                return -1;
        return pf__buf_put(out, rep, rep_len);
    }
    while (i + pat_len <= n) {
        if (s[i] == (unsigned char)pat[0] && !memcmp(s + i, pat, pat_len)) {
            if (pf__buf_put(out, s + done, i - done) || pf__buf_put(out, rep, rep_len)) return -1;
            i += pat_len;
            done = i;
        } else {
            i++;
        }
    }
    return pf__buf_put(out, s + done, n - done);
}

/* ---- canonical normalization (NFD / NFC) ---- */

/* Appends the full canonical decomposition of cp. */
PF_PRIVATE int pf__nf_decompose(pf__tok_cps *out, uint32_t cp, int depth) {
    long k;
    if (cp - PF__HANGUL_S < PF__HANGUL_SCOUNT) {
        uint32_t s = cp - PF__HANGUL_S, t = s % PF__HANGUL_TCOUNT;
        if (pf__cps_put(out, PF__HANGUL_L + s / (PF__HANGUL_VCOUNT * PF__HANGUL_TCOUNT)) ||
            pf__cps_put(out, PF__HANGUL_V + s % (PF__HANGUL_VCOUNT * PF__HANGUL_TCOUNT) / PF__HANGUL_TCOUNT))
            return -1;
        return t ? pf__cps_put(out, PF__HANGUL_T + t) : 0;
    }
    k = depth < 8 ? pf__unicode_decomp_find(cp) : -1;
    if (k < 0) return pf__cps_put(out, cp);
    {
        uint32_t a = (uint32_t)(pf__unicode_decomp[k] >> 21) & 0x1FFFFF, b = (uint32_t)pf__unicode_decomp[k] & 0x1FFFFF;
        if (pf__nf_decompose(out, a, depth + 1)) return -1;
        return b ? pf__nf_decompose(out, b, depth + 1) : 0;
    }
}

/* Appends HF's NFKD of cp where it differs from its NFD: 1 when it did, 0 when cp has none, -1
   when out of memory. */
PF_PRIVATE int pf__nf_decompose_compat(pf__tok_cps *out, uint32_t cp) {
    size_t lo = 0, hi = PF__TOK_LEN(pf__unicode_compat_runs), i, n;
    if (cp > 0x10FFFF) return 0;
    if (cp >= (uint32_t)(pf__unicode_compat_runs[0] >> 43)) {
        while (hi - lo > 1) {
            size_t mid = lo + (hi - lo) / 2;
            if ((uint32_t)(pf__unicode_compat_runs[mid] >> 43) <= cp) lo = mid;
            else hi = mid;
        }
        if (cp - (uint32_t)(pf__unicode_compat_runs[lo] >> 43) < ((pf__unicode_compat_runs[lo] >> 33) & 0x3FF))
            return pf__cps_put(out, cp + (uint32_t)pf__unicode_compat_runs[lo]) ? -1 : 1; /* delta, modulo 2^32 */
    }
    lo = 0;
    hi = PF__TOK_LEN(pf__unicode_compat_multi);
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uint32_t key = (uint32_t)(pf__unicode_compat_multi[mid] >> 32);
        if (key == cp) {
            i = (size_t)(pf__unicode_compat_multi[mid] >> 8) & 0xFFFFFF;
            for (n = i + (pf__unicode_compat_multi[mid] & 0xFF); i < n; i++)
                if (pf__cps_put(out, pf__unicode_compat_chars[i])) return -1;
            return 1;
        }
        if (key < cp) lo = mid + 1;
        else hi = mid;
    }
    return 0;
}

/* Sorts each run of non-starters by combining class, stably (insertion sort for short runs,
   counting sort for long ones, so that no input is quadratic). tmp is scratch. */
PF_PRIVATE int pf__nf_reorder(pf__tok_cps *cps, pf__tok_cps *tmp) {
    size_t i = 0, n = cps->len;
    uint32_t *p = cps->p;
    while (i < n) {
        size_t j = i, k;
        while (j < n && pf__unicode_ccc(p[j])) j++;
        if (j == i) {
            i++;
            continue;
        }
        if (j - i <= 32) {
            for (k = i + 1; k < j; k++) {
                uint32_t v = p[k];
                unsigned cv = pf__unicode_ccc(v);
                size_t m = k;
                while (m > i && pf__unicode_ccc(p[m - 1]) > cv) {
                    p[m] = p[m - 1];
                    m--;
                }
                p[m] = v;
            }
        } else {
            size_t count[257], c;
            memset(count, 0, sizeof count);
            tmp->len = 0;
            if (pf__tok_grow((void **)&tmp->p, &tmp->cap, j - i, sizeof *tmp->p)) return -1;
            for (k = i; k < j; k++) count[pf__unicode_ccc(p[k]) + 1]++;
            for (c = 1; c < 257; c++) count[c] += count[c - 1];
            for (k = i; k < j; k++) tmp->p[count[pf__unicode_ccc(p[k])]++] = p[k];
            memcpy(p + i, tmp->p, (j - i) * sizeof *p);
        }
        i = j;
    }
    return 0;
}

/* Canonical composition in place: a character composes with the last starter unless a character
   between them has class 0 or a class >= its own. */
PF_PRIVATE void pf__nf_compose(pf__tok_cps *cps) {
    size_t i, n = cps->len, out = 0, starter = (size_t)-1;
    unsigned last = 0;
    uint32_t *p = cps->p;
    for (i = 0; i < n; i++) {
        uint32_t cp = p[i], x;
        unsigned k = pf__unicode_ccc(cp);
        if (starter != (size_t)-1 && (out - 1 == starter || (last != 0 && last < k)) &&
            (x = pf__unicode_compose(p[starter], cp)) != 0) {
            p[starter] = x;
            continue;
        }
        if (k == 0) starter = out;
        last = k;
        p[out++] = cp;
    }
    cps->len = out;
}

PF_PRIVATE int pf__tok_from_cps(pf__tok_buf *out, const pf__tok_cps *cps) {
    size_t i;
    for (i = 0; i < cps->len; i++)
        if (pf__buf_put_cp(out, cps->p[i])) return -1;
    return 0;
}

PF_PRIVATE int pf__tok_is_ascii(const unsigned char *s, size_t n) {
    size_t i;
    for (i = 0; i < n; i++)
        if (s[i] >= 0x80) return 0;
    return 1;
}

/* Python's unicodedata.normalize(kind: NFC, NFD, NFKC or NFKD) of s[0 .. n) into out (c's code point
   buffers scratch): HF's normalization (the tables above) with the decompositions and compositions
   of Python's Unicode 14 that HF lacks (pf__py_nf_find; the combining classes stay HF's). */
PF_PRIVATE int pf__py_normalize(pf__tok_ctx *c, pf__tok_norm_kind kind, const unsigned char *s, size_t n,
                                pf__tok_buf *out) {
    int compat = kind == PF__NORM_NFKC || kind == PF__NORM_NFKD, rc;
    pf__tok_cps *d = &c->cps;
    size_t i, k, j;
    uint32_t cp;
    if (pf__tok_is_ascii(s, n)) return pf__buf_put(out, s, n);
    d->len = c->cps_tmp.len = 0;
    for (i = 0; i < n; i += k) {
        const uint32_t *r;
        k = pf__utf8_decode(s + i, n - i, &cp);
        if ((r = pf__py_nf_find(cp, 1)) || (compat && (r = pf__py_nf_find(cp, 2)))) {
            for (j = 0; j < r[2]; j++)
                if (pf__cps_put(d, r[3 + j])) return -1;
            continue;
        }
        if (compat && (rc = pf__nf_decompose_compat(d, cp)) != 0) {
            if (rc < 0) return -1;
            continue;
        }
        if (pf__nf_decompose(d, cp == PF__UTF8_INVALID ? PF__CP_RAW | s[i] : cp, 0)) return -1;
    }
    if (pf__nf_reorder(d, &c->cps_tmp)) return -1;
    if (kind == PF__NORM_NFC || kind == PF__NORM_NFKC) {
        size_t m = 0;
        pf__nf_compose(d);
        for (j = 0; j < d->len; j++) { /* Python's compositions of two adjacent starters */
            const uint32_t *r = j + 1 < d->len ? pf__py_nf_find(d->p[j], 3) : NULL;
            if (r && r[3] == d->p[j + 1]) {
                d->p[m++] = r[4];
                j++;
                continue;
            }
            d->p[m++] = d->p[j];
        }
        d->len = m;
    }
    return pf__tok_from_cps(out, d);
}

/* ---- grapheme clusters ---- */

/* Unicode's extended grapheme clusters (UAX #29), as the unicode-segmentation crate finds them for
   HF's Precompiled normalizer. A code point's properties: its Grapheme_Cluster_Break value,
   Extended_Pictographic, and its Indic_Conjunct_Break value. */
enum {
    PF__GCB_OTHER, PF__GCB_CR, PF__GCB_LF, PF__GCB_CONTROL, PF__GCB_EXTEND, PF__GCB_ZWJ, PF__GCB_RI,
    PF__GCB_PREPEND, PF__GCB_SPACINGMARK, PF__GCB_L, PF__GCB_V, PF__GCB_T, PF__GCB_LV, PF__GCB_LVT,
    PF__GCB_MASK = 0x0F,
    PF__GCB_EXTPICT = 0x10,
    PF__INCB_CONSONANT = 0x20, PF__INCB_LINKER = 0x40, PF__INCB_EXTEND = 0x60, PF__INCB_MASK = 0x60
};

static unsigned pf__grapheme_props(uint32_t cp) {
    size_t lo = 0, hi = PF__TOK_LEN(pf__unicode_grapheme_runs);
    if (cp == PF__UTF8_INVALID) return PF__GCB_CONTROL; /* a byte that is not UTF-8 stands alone */
    if (cp - PF__HANGUL_S < PF__HANGUL_SCOUNT)
        return (cp - PF__HANGUL_S) % PF__HANGUL_TCOUNT ? PF__GCB_LVT : PF__GCB_LV;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if ((pf__unicode_grapheme_runs[mid] >> 8) <= cp) lo = mid;
        else hi = mid;
    }
    return pf__unicode_grapheme_runs[lo] & 0xFF;
}

/* The end of the grapheme cluster that starts at s[i] (i < n). */
PF_PRIVATE size_t pf__grapheme_end(const unsigned char *s, size_t i, size_t n) {
    uint32_t cp;
    size_t j = i + pf__utf8_decode(s + i, n - i, &cp), k;
    unsigned first = pf__grapheme_props(cp), pg = first & PF__GCB_MASK; /* pg: the previous one's GCB */
    /* what GB9c, GB11 and GB12 look back at */
    int conjunct = (first & PF__INCB_MASK) == PF__INCB_CONSONANT ? 1 : 0; /* 1: consonant, 2: and a linker */
    int pict = first & PF__GCB_EXTPICT ? 1 : 0;                         /* 1: pictographic, 2: and a ZWJ */
    size_t ri = pg == PF__GCB_RI;                                        /* regional indicators in a row */
    for (; j < n; j += k) {
        unsigned cur, cg, incb;
        int join;
        k = pf__utf8_decode(s + j, n - j, &cp);
        cur = pf__grapheme_props(cp);
        cg = cur & PF__GCB_MASK;
        incb = cur & PF__INCB_MASK;
        if (pg == PF__GCB_CR && cg == PF__GCB_LF) join = 1;                                         /* GB3 */
        else if (pg == PF__GCB_CONTROL || pg == PF__GCB_CR || pg == PF__GCB_LF) join = 0;          /* GB4 */
        else if (cg == PF__GCB_CONTROL || cg == PF__GCB_CR || cg == PF__GCB_LF) join = 0;          /* GB5 */
        else if (pg == PF__GCB_L && (cg == PF__GCB_L || cg == PF__GCB_V || cg == PF__GCB_LV || cg == PF__GCB_LVT))
            join = 1;                                                                                /* GB6 */
        else if ((pg == PF__GCB_LV || pg == PF__GCB_V) && (cg == PF__GCB_V || cg == PF__GCB_T)) join = 1; /* GB7 */
        else if ((pg == PF__GCB_LVT || pg == PF__GCB_T) && cg == PF__GCB_T) join = 1;              /* GB8 */
        else if (cg == PF__GCB_EXTEND || cg == PF__GCB_ZWJ || cg == PF__GCB_SPACINGMARK) join = 1; /* GB9, 9a */
        else if (pg == PF__GCB_PREPEND) join = 1;                                                   /* GB9b */
        else if (incb == PF__INCB_CONSONANT && conjunct == 2) join = 1;                            /* GB9c */
        else if (pg == PF__GCB_ZWJ && (cur & PF__GCB_EXTPICT) && pict == 2) join = 1;              /* GB11 */
        else if (pg == PF__GCB_RI && cg == PF__GCB_RI && ri % 2 == 1) join = 1;                    /* GB12, 13 */
        else join = 0;
        if (!join) break;
        if (incb == PF__INCB_CONSONANT) conjunct = 1;
        else if (conjunct && incb == PF__INCB_LINKER) conjunct = 2;
        else if (!(conjunct && incb == PF__INCB_EXTEND)) conjunct = 0;
        if (cur & PF__GCB_EXTPICT) pict = 1;
        else if (pict == 1 && cg == PF__GCB_ZWJ) pict = 2;
        else if (!(pict == 1 && cg == PF__GCB_EXTEND)) pict = 0;
        ri = cg == PF__GCB_RI ? ri + 1 : 0;
        pg = cg;
    }
    return j;
}

