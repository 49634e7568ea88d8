#!/usr/bin/env python3
"""Generates the Unicode tables of parallelformers' tokenizer (src/unicode_tables.c).

Run from the repository root, with the `tokenizers` and `regex` wheels installed (it probes
every code point several times: about 10 minutes):

    python3 test/gen_unicode.py                     # prints the tables
    python3 test/gen_unicode.py --write src/unicode_tables.c
                                                    # replaces the text between the markers
                                                    # "BEGIN GENERATED UNICODE TABLES" and
                                                    # "END GENERATED UNICODE TABLES" there

Every table is what HF tokenizers itself does, probed through the `tokenizers` wheel code point
by code point, because its pieces use different Unicode versions:

  - the Oniguruma regexes (GPT-2 / LLaMA-3 / Qwen2 / BLOOM patterns): \\p{L}, \\p{N}, \\s, Unicode
    16.0 in tokenizers 0.23. Probed through the ByteLevel pre-tokenizer:
      "a"+c is one piece <=> c is \\p{L};  "1"+c one piece <=> c is \\p{N};
      "!"+c one piece <=> c is neither \\s, \\p{L} nor \\p{N}; otherwise c is \\s.
  - \\w of Rust's regex crate (added tokens' single_word): from the `regex` module, minus letters
    and numbers the probe above says the tokenizer does not know yet.
  - Rust's char::is_whitespace (BertPreTokenizer, WhitespaceSplit, BertNormalizer): probed
    through WhitespaceSplit.
  - BertNormalizer's clean_text (drops Cc/Cf/Cn/Co of the old unicode_categories crate, NUL and
    U+FFFD), strip_accents (drops Mn of that crate after NFD) and BertPreTokenizer's punctuation:
    probed through BertNormalizer / BertPreTokenizer.
  - Lowercase (Rust's char::to_lowercase, Unicode 16): probed through the Lowercase normalizer.
  - NFKD / NFKC: HF's NFKD of every code point where it differs from its NFD, taken as it is;
    StripAccents: the code points it drops, probed one by one.
  - NFC / NFD (the unicode-normalization-alignments crate: older Unicode than Python's
    unicodedata 14.0 -- its combining classes stop at Unicode 9, and it lacks U+11938's
    decomposition). The decompositions, combining classes and compositions are taken from Python's
    unicodedata and corrected where a probe shows that HF differs; then a reference NFD / NFC
    written here on these tables is checked against HF's on every code point and on random
    strings of combining sequences (the script fails if any differs).

Output tables (C99):
  pf__unicode_ascii    the PF__UC_* flags of U+0000..U+007F
  pf__unicode_classes  start << 8 | flags (PF__UC_*), sorted; flags hold until the next start
  pf__unicode_lower_runs  lowercase runs: start << 43 | count << 33 | (stride - 1) << 32 | delta
                       (uint32 two's complement); code point start + k*stride (k < count) maps
                       to itself + delta. U+0130 (the only multi-character mapping) is handled
                       in C.
  pf__unicode_ccc_runs    start << 8 | combining class, sorted; holds until the next start
  pf__unicode_decomp   cp << 42 | first << 21 | second (0: a singleton), sorted by cp; one level
                       (apply recursively); Hangul syllables are algorithmic and not listed
  pf__unicode_comp     first << 42 | second << 21 | composite, sorted by (first, second)
  pf__unicode_compat_runs     NFKD where it differs from NFD, one code point: start << 43 | count << 33 |
                       delta (uint32 two's complement): start + k (k < count) maps to itself + delta
  pf__unicode_compat_multi    ... several: cp << 32 | offset << 8 | length into pf__unicode_compat_chars
                       (HF's full NFKD of the code point, ordered)
  pf__unicode_mark_runs       start << 1 | 1 where StripAccents drops code points from start on (the
                       normalization crate's is_combining_mark), | 0 where it keeps them
  pf__unicode_grapheme_runs  start << 8 | Grapheme_Cluster_Break (0-13, the order of GCB_NAMES)
                       | 0x10 Extended_Pictographic | Indic_Conjunct_Break << 5 (1 Consonant, 2
                       Linker, 3 Extend), sorted; Hangul syllables are algorithmic and not listed.
                       From the regex module, corrected where HF's Precompiled normalizer (the
                       unicode-segmentation crate) shows otherwise, then checked against it on
                       random strings (see grapheme_props).
"""
import random
import sys
import unicodedata

import regex
import tokenizers
from tokenizers import normalizers, pre_tokenizers

from spm_charsmap import build_charsmap

L, N, S, W, RS, BC, MN, BP = 1, 2, 4, 8, 16, 32, 64, 128
SURROGATES = range(0xD800, 0xE000)
ALL = [cp for cp in range(0x110000) if cp not in SURROGATES]

BEGIN = "/* BEGIN GENERATED UNICODE TABLES (test/gen_unicode.py) */"
END = "/* END GENERATED UNICODE TABLES */"


# ---- classes ----

def classes():
    bl = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    one = lambda s: len(bl.pre_tokenize_str(s)) == 1
    ws = pre_tokenizers.WhitespaceSplit()
    bert_pre = pre_tokenizers.BertPreTokenizer()
    clean = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=False, strip_accents=False,
                                       lowercase=False)
    strip = normalizers.BertNormalizer(clean_text=False, handle_chinese_chars=False, strip_accents=True,
                                       lowercase=False)
    nfd = normalizers.NFD()
    re_w, re_l, re_n = regex.compile(r"\w"), regex.compile(r"\p{L}"), regex.compile(r"\p{N}")
    out = {}
    for cp in ALL:
        c = chr(cp)
        if one("a" + c):
            f = L
        elif one("1" + c):
            f = N
        elif one("!" + c):
            f = 0
        else:
            f = S
        if re_w.match(c):
            newer = (re_l.match(c) and not f & L) or (re_n.match(c) and not f & N)
            if not newer:
                f |= W
        if len(ws.pre_tokenize_str("a" + c + "b")) == 2:
            f |= RS
        r = clean.normalize_str("a" + c + "b")
        if r == "ab":
            f |= BC
        elif r == "a b":
            assert f & RS or c in "\t\n\r", hex(cp)
        else:
            assert r == "a" + c + "b", hex(cp)
        if nfd.normalize_str(c) == c:
            r = strip.normalize_str(c)
            if r == "":
                f |= MN
            else:
                assert r == c, hex(cp)
        elif unicodedata.category(c) == "Mn":
            f |= MN  # never seen after NFD; keeps the runs long
        p = bert_pre.pre_tokenize_str("a" + c + "b")
        if len(p) == 3 and p[1][0] == c:
            f |= BP
        else:
            assert [x[0] for x in p] in (["a" + c + "b"], ["a", "b"]), (hex(cp), p)
        out[cp] = f
    return out


def runs_of(values, default=0):
    """[(start, value)] with a new entry wherever the value changes (surrogates take the value
    before them, so that they do not break runs)."""
    entries, prev = [], None
    for cp in range(0x110000):
        v = values.get(cp, default) if cp not in SURROGATES else prev
        if v != prev:
            entries.append((cp, v))
            prev = v
    return entries


# ---- lowercase ----

def lowercase():
    low = normalizers.Lowercase()
    maps, multi = {}, {}
    for cp in ALL:
        c = chr(cp)
        r = low.normalize_str(c)
        if r != c:
            if len(r) == 1:
                maps[cp] = ord(r)
            else:
                multi[cp] = r
    assert multi == {0x130: "i\u0307"}, multi
    runs = []
    for cp in sorted(maps):
        d = maps[cp] - cp
        if runs:
            s, n, st, dl = runs[-1]
            if dl == d and ((n == 1 and cp - s in (1, 2)) or (n > 1 and cp == s + n * st)):
                runs[-1] = (s, n + 1, cp - s if n == 1 else st, dl)
                continue
        runs.append((cp, 1, 1, d))
    assert all(n < 1024 for _, n, _, _ in runs)  # 10 bits in the table
    return runs, maps


# ---- normalization ----

def hf_ccc_and_decomp():
    """Python's combining classes and canonical decompositions, corrected to HF's."""
    nfd = normalizers.NFD()
    ccc = {cp: unicodedata.combining(chr(cp)) for cp in ALL if unicodedata.combining(chr(cp))}
    decomp = {}
    for cp in ALL:
        d = unicodedata.decomposition(chr(cp))
        if d and not d.startswith("<"):
            decomp[cp] = [int(x, 16) for x in d.split()]
    # decompositions HF does not have: its NFD leaves the code point alone
    for cp in list(decomp):
        if nfd.normalize_str(chr(cp)) == chr(cp):
            del decomp[cp]
    # combining classes HF does not have (it treats the mark as a starter): probe against marks of
    # classes 1, 230 and 240 on both sides
    refs = ["\u0334", "\u0301", "\u0345"]
    for cp in list(ccc):
        c = chr(cp)
        probes = ["a" + r + c for r in refs] + ["a" + c + r for r in refs]
        want = [nfd.normalize_str(p) for p in probes]
        if want != [ref_nfd(p, ccc, decomp) for p in probes]:
            saved = ccc.pop(cp)
            if want != [ref_nfd(p, ccc, decomp) for p in probes]:
                raise SystemExit(f"U+{cp:04X}: HF's combining class is neither {saved} nor 0")
    return ccc, decomp


SBASE, LBASE, VBASE, TBASE, LCOUNT, VCOUNT, TCOUNT = 0xAC00, 0x1100, 0x1161, 0x11A7, 19, 21, 28
NCOUNT, SCOUNT = VCOUNT * TCOUNT, LCOUNT * VCOUNT * TCOUNT


def ref_decompose(cp, decomp, out):
    if SBASE <= cp < SBASE + SCOUNT:
        s = cp - SBASE
        out.append(LBASE + s // NCOUNT)
        out.append(VBASE + s % NCOUNT // TCOUNT)
        if s % TCOUNT:
            out.append(TBASE + s % TCOUNT)
    elif cp in decomp:
        for d in decomp[cp]:
            ref_decompose(d, decomp, out)
    else:
        out.append(cp)


def ref_nfd_list(s, ccc, decomp):
    out = []
    for c in s:
        ref_decompose(ord(c), decomp, out)
    # canonical ordering: stable sort of each run of non-starters by class
    i = 0
    while i < len(out):
        if ccc.get(out[i], 0) == 0:
            i += 1
            continue
        j = i
        while j < len(out) and ccc.get(out[j], 0) != 0:
            j += 1
        out[i:j] = sorted(out[i:j], key=lambda x: ccc[x])
        i = j
    return out


def ref_nfd(s, ccc, decomp):
    return "".join(map(chr, ref_nfd_list(s, ccc, decomp)))


def ref_nfc(s, ccc, decomp, comp):
    """Canonical composition of the NFD: a character composes with the last starter unless a
    character between them has class 0 or a class >= its own (it is blocked)."""
    out = []
    starter = -1  # index in out of the last starter
    last = 0  # class of the last character appended after that starter
    for cp in ref_nfd_list(s, ccc, decomp):
        k = ccc.get(cp, 0)
        if starter >= 0 and (len(out) - 1 == starter or (last != 0 and last < k)):
            x = compose(out[starter], cp, comp)
            if x is not None:
                out[starter] = x
                continue
        if k == 0:
            starter = len(out)
        last = k
        out.append(cp)
    return "".join(map(chr, out))


def compose(a, b, comp):
    if LBASE <= a < LBASE + LCOUNT and VBASE <= b < VBASE + VCOUNT:
        return SBASE + ((a - LBASE) * VCOUNT + (b - VBASE)) * TCOUNT
    if SBASE <= a < SBASE + SCOUNT and (a - SBASE) % TCOUNT == 0 and TBASE < b < TBASE + TCOUNT:
        return a + (b - TBASE)
    return comp.get((a, b))


def compositions(ccc, decomp):
    comp = {}
    for cp, d in decomp.items():
        if len(d) != 2 or ccc.get(cp, 0) or ccc.get(d[0], 0):
            continue
        if unicodedata.normalize("NFC", chr(cp)) != chr(cp):
            continue  # a composition exclusion
        comp[(d[0], d[1])] = cp
    return comp


def check_normalization(ccc, decomp, comp):
    nfd, nfc = normalizers.NFD(), normalizers.NFC()
    for cp in ALL:
        c = chr(cp)
        assert nfd.normalize_str(c) == ref_nfd(c, ccc, decomp), f"NFD U+{cp:04X}"
        assert nfc.normalize_str(c) == ref_nfc(c, ccc, decomp, comp), f"NFC U+{cp:04X}"
    # random strings of starters, composites, marks and Hangul jamo
    pool = sorted(set(ccc) | set(decomp) | {a for a, _ in comp} | {b for _, b in comp} |
                  set(range(0x1100, 0x1113)) | set(range(0x1161, 0x1176)) | set(range(0x11A8, 0x11C3)) |
                  {0xAC00, 0xAC01, 0xD7A3, 0x61, 0x41, 0x20})
    rng = random.Random(1)
    for _ in range(200000):
        s = "".join(chr(rng.choice(pool)) for _ in range(rng.randint(1, 8)))
        assert nfd.normalize_str(s) == ref_nfd(s, ccc, decomp), ("NFD", s)
        assert nfc.normalize_str(s) == ref_nfc(s, ccc, decomp, comp), ("NFC", s)


# ---- compatibility decomposition (NFKD / NFKC) and StripAccents ----

def compat_and_marks(ccc, decomp, comp):
    """What HF's NFKD gives for each code point where it differs from its NFD (the full, ordered
    decomposition), checked on random strings for NFKD and NFKC; and the code points HF's
    StripAccents removes (the normalization crate's is_combining_mark)."""
    nfkd, nfd, nfkc, strip = normalizers.NFKD(), normalizers.NFD(), normalizers.NFKC(), normalizers.StripAccents()
    compat, marks = {}, set()
    for cp in ALL:
        c = chr(cp)
        k = nfkd.normalize_str(c)
        if k != nfd.normalize_str(c):
            compat[cp] = [ord(x) for x in k]
        if strip.normalize_str(c) == "":
            marks.add(cp)
        else:
            assert strip.normalize_str(c) == c, hex(cp)
    pool = sorted(set(compat) | set(ccc) | set(decomp) | {b for _, b in comp} | {0x61, 0x20, 0x3099, 0x309A})
    rng = random.Random(2)
    for _ in range(200000):
        s = "".join(chr(rng.choice(pool)) for _ in range(rng.randint(1, 8)))
        assert nfkd.normalize_str(s) == ref_nfkd(s, ccc, decomp, compat), ("NFKD", s)
        assert nfkc.normalize_str(s) == ref_nfkc(s, ccc, decomp, comp, compat), ("NFKC", s)
    return compat, marks


def ref_nfkd_list(s, ccc, decomp, compat):
    return ref_nfd_list("".join("".join(map(chr, compat[ord(c)])) if ord(c) in compat else c for c in s), ccc, decomp)


def ref_nfkd(s, ccc, decomp, compat):
    return "".join(map(chr, ref_nfkd_list(s, ccc, decomp, compat)))


def ref_nfkc(s, ccc, decomp, comp, compat):
    return ref_nfc(ref_nfkd(s, ccc, decomp, compat), ccc, decomp, comp)


def compat_tables(compat):
    """Single code point results as runs (start, count, delta); the others as (cp, offset, length)
    into one list of code points."""
    runs, multi, chars = [], [], []
    for cp in sorted(compat):
        d = compat[cp]
        if len(d) == 1:
            delta = d[0] - cp
            if runs and runs[-1][0] + runs[-1][1] == cp and runs[-1][2] == delta and runs[-1][1] < 1023:
                runs[-1][1] += 1
            else:
                runs.append([cp, 1, delta])
        else:
            multi.append((cp, len(chars), len(d)))
            chars += d
    assert len(chars) < 1 << 24 and all(n < 256 for _, _, n in multi)
    return runs, multi, chars


# ---- grapheme clusters ----

GCB_NAMES = ["Other", "CR", "LF", "Control", "Extend", "ZWJ", "Regional_Indicator", "Prepend", "SpacingMark", "L",
             "V", "T", "LV", "LVT"]
(G_OTHER, G_CR, G_LF, G_CONTROL, G_EXTEND, G_ZWJ, G_RI, G_PREPEND, G_SPACINGMARK, G_L, G_V, G_T, G_LV,
 G_LVT) = range(14)
EXTPICT, INCB_CONSONANT, INCB_LINKER, INCB_EXTEND, INCB_MASK = 0x10, 0x20, 0x40, 0x60, 0x60


def grapheme_props():
    """Grapheme_Cluster_Break | Extended_Pictographic | Indic_Conjunct_Break of every code point, from
    the regex module, corrected where HF's Precompiled normalizer (the unicode-segmentation crate)
    shows otherwise. What a probe can see: a cluster shorter than 6 bytes goes whole to the
    charsmap, which answers for its shortest key, so with a charsmap mapping x to itself,
    x + y normalizes to x alone exactly when x and y are one cluster (x + y < 6 bytes)."""
    gcb = [regex.compile(r"\p{GCB=%s}" % n) for n in GCB_NAMES[1:]]
    ep = regex.compile(r"\p{Extended_Pictographic}")
    incb = [regex.compile(r"\p{InCB=%s}" % n) for n in ("Consonant", "Linker", "Extend")]
    props = {}
    for cp in ALL:
        c = chr(cp)
        v = next((i + 1 for i, r in enumerate(gcb) if r.match(c)), G_OTHER)
        if ep.match(c):
            v |= EXTPICT
        v |= next((i + 1 for i, r in enumerate(incb) if r.match(c)), 0) << 5
        props[cp] = v
    joins_after = {G_EXTEND, G_ZWJ, G_SPACINGMARK}
    fixed = 0
    # what joins a preceding "a": Extend, ZWJ, SpacingMark (GB9, GB9a)
    a = normalizers.Precompiled(build_charsmap({"a": "a"}))
    for cp in ALL:
        if cp == ord("a"):
            continue
        joined = a.normalize_str("a" + chr(cp)) == "a"
        if joined != ((props[cp] & 15) in joins_after):
            props[cp] = (props[cp] & ~15) | (G_EXTEND if joined else G_OTHER)
            fixed += 1
    # what joins a following "a" (Prepend, GB9b), and what breaks before U+0301 (Control, CR, LF,
    # GB4): with charsmaps mapping every code point to itself, in chunks
    for lo in range(0, 0x110000, 0x28000):
        chunk = [cp for cp in ALL if lo <= cp < lo + 0x28000 and cp]
        pre = normalizers.Precompiled(build_charsmap({chr(cp): chr(cp) for cp in chunk}))
        for cp in chunk:
            c = chr(cp)
            g = props[cp] & 15
            joined = pre.normalize_str(c + "a") == c
            if joined != (g == G_PREPEND):
                props[cp] = (props[cp] & ~15) | (G_PREPEND if joined else G_OTHER)
                fixed += 1
            if len(c.encode()) <= 3 and cp != 0x301:
                breaks = pre.normalize_str(c + "\u0301") == c + "\u0301"
                if breaks != (props[cp] & 15 in (G_CONTROL, G_CR, G_LF)):
                    raise SystemExit(f"U+{cp:04X}: HF breaks before U+0301: {breaks}; the regex module's class: "
                                     f"{GCB_NAMES[props[cp] & 15]}")
    return props, fixed


def ref_clusters(s, props):
    """The extended grapheme clusters of s, as parallelformers.c's pf__grapheme_end finds them."""
    out, i = [], 0
    while i < len(s):
        j = i + 1
        p = props[ord(s[i])]
        pg = p & 15
        conjunct = 1 if p & INCB_MASK == INCB_CONSONANT else 0
        pict = 1 if p & EXTPICT else 0
        ri = int(pg == G_RI)
        while j < len(s):
            c = props[ord(s[j])]
            cg, ib = c & 15, c & INCB_MASK
            if pg == G_CR and cg == G_LF:
                join = True
            elif pg in (G_CONTROL, G_CR, G_LF) or cg in (G_CONTROL, G_CR, G_LF):
                join = False
            elif pg == G_L and cg in (G_L, G_V, G_LV, G_LVT):
                join = True
            elif pg in (G_LV, G_V) and cg in (G_V, G_T):
                join = True
            elif pg in (G_LVT, G_T) and cg == G_T:
                join = True
            elif cg in (G_EXTEND, G_ZWJ, G_SPACINGMARK) or pg == G_PREPEND:
                join = True
            elif ib == INCB_CONSONANT and conjunct == 2:
                join = True
            elif pg == G_ZWJ and c & EXTPICT and pict == 2:
                join = True
            else:
                join = pg == G_RI and cg == G_RI and ri % 2 == 1
            if not join:
                break
            if ib == INCB_CONSONANT:
                conjunct = 1
            elif conjunct and ib == INCB_LINKER:
                conjunct = 2
            elif not (conjunct and ib == INCB_EXTEND):
                conjunct = 0
            if c & EXTPICT:
                pict = 1
            elif pict == 1 and cg == G_ZWJ:
                pict = 2
            elif not (pict == 1 and cg == G_EXTEND):
                pict = 0
            ri = ri + 1 if cg == G_RI else 0
            pg = cg
            j += 1
        out.append(s[i:j])
        i = j
    return out


def grapheme_pool(props):
    """Code points of every class, for random strings."""
    by_class = {}
    for cp in ALL:
        by_class.setdefault(props[cp], []).append(cp)
    rng = random.Random(3)
    pool = []
    for v, cps in sorted(by_class.items()):
        pool += rng.sample(cps, min(len(cps), 12))
    return sorted(set(pool) | {0xD, 0xA, 0x61, 0x20, 0x301, 0x200D, 0x1F1E6, 0x1F1FA, 0x1F468, 0x915, 0x94D, 0x937})


def check_graphemes(props):
    """Random strings of the pool through HF's Precompiled (every pool character maps to itself:
    a cluster shorter than 6 bytes keeps its first character only) and through ref_clusters."""
    pool = grapheme_pool(props)
    hf = normalizers.Precompiled(build_charsmap({chr(cp): chr(cp) for cp in pool if cp}))
    rng = random.Random(4)
    for _ in range(200000):
        s = "".join(chr(rng.choice(pool)) for _ in range(rng.randint(1, 8)))
        want = "".join(g[0] if len(g.encode()) < 6 else g for g in ref_clusters(s, props))
        assert hf.normalize_str(s) == want, ("graphemes", s)


# ---- output ----

def c_array(ctype, name, values, width, per_line):
    out = [f"static const {ctype} {name}[{len(values)}] = {{"]
    for i in range(0, len(values), per_line):
        out.append("    " + ", ".join(f"0x{v:0{width}X}" for v in values[i:i + per_line]) + ",")
    out.append("};")
    return out


def main():
    cls = classes()
    class_runs = runs_of(cls)
    low_runs, _ = lowercase()
    ccc, decomp = hf_ccc_and_decomp()
    comp = compositions(ccc, decomp)
    check_normalization(ccc, decomp, comp)
    ccc_runs = runs_of(ccc)
    compat, marks = compat_and_marks(ccc, decomp, comp)
    compat_runs, compat_multi, compat_chars = compat_tables(compat)
    mark_runs = runs_of({cp: 1 for cp in marks})
    gprops, gfixed = grapheme_props()
    check_graphemes(gprops)
    # Hangul syllables (LV, LVT) are computed in C
    grapheme_runs = runs_of({cp: v for cp, v in gprops.items() if not SBASE <= cp < SBASE + SCOUNT})

    out = [BEGIN,
           f"/* From tokenizers {tokenizers.__version__} (probed), regex {regex.__version__}, Python "
           f"unicodedata {unicodedata.unidata_version} (corrected to HF's normalization). */"]
    out += c_array("unsigned char", "pf__unicode_ascii", [cls[cp] for cp in range(128)], 2, 16)
    out += c_array("uint32_t", "pf__unicode_classes", [s << 8 | f for s, f in class_runs], 8, 8)
    out += c_array("uint64_t", "pf__unicode_lower_runs",
                   [s << 43 | n << 33 | (st - 1) << 32 | (d & 0xFFFFFFFF) for s, n, st, d in low_runs], 16, 4)
    out += c_array("uint32_t", "pf__unicode_ccc_runs", [s << 8 | v for s, v in ccc_runs], 8, 8)
    out += c_array("uint64_t", "pf__unicode_decomp",
                   [cp << 42 | d[0] << 21 | (d[1] if len(d) > 1 else 0) for cp, d in sorted(decomp.items())], 16, 4)
    out += c_array("uint64_t", "pf__unicode_comp",
                   [a << 42 | b << 21 | x for (a, b), x in sorted(comp.items())], 16, 4)
    out += c_array("uint64_t", "pf__unicode_compat_runs",
                   [s << 43 | n << 33 | (d & 0xFFFFFFFF) for s, n, d in compat_runs], 16, 4)
    out += c_array("uint64_t", "pf__unicode_compat_multi", [cp << 32 | o << 8 | n for cp, o, n in compat_multi], 16, 4)
    out += c_array("uint32_t", "pf__unicode_compat_chars", compat_chars, 5, 12)
    out += c_array("uint32_t", "pf__unicode_mark_runs", [s << 1 | v for s, v in mark_runs], 6, 10)
    out += c_array("uint32_t", "pf__unicode_grapheme_runs", [s << 8 | v for s, v in grapheme_runs], 8, 8)
    out.append(END)
    text = "\n".join(out) + "\n"

    if len(sys.argv) == 3 and sys.argv[1] == "--write":
        path = sys.argv[2]
        src = open(path, encoding="utf-8").read()
        i, j = src.index(BEGIN), src.index(END) + len(END) + 1
        open(path, "w", encoding="utf-8").write(src[:i] + text + src[j:])
        print(f"{path}: {len(class_runs)} class runs, {len(low_runs)} lowercase runs, {len(ccc_runs)} ccc runs, "
              f"{len(decomp)} decompositions, {len(comp)} compositions, {len(compat_runs)} + {len(compat_multi)} "
              f"compatibility decompositions, {len(mark_runs)} mark runs, {len(grapheme_runs)} grapheme runs "
              f"({gfixed} code points corrected to HF's)")
    elif len(sys.argv) == 1:
        sys.stdout.write(text)
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
