#!/usr/bin/env python3
"""Generates the data of parallelformers' Moses tokenization (src/moses_tables.c): the character
classes sacremoses' regexes use and the nonbreaking prefixes of the languages we read.

Run from the repository root with sacremoses installed (pip install sacremoses; 0.2.0 made these):

    python3 test/gen_moses_tables.py                     # prints the file
    python3 test/gen_moses_tables.py --write src/moses_tables.c

sacremoses builds its classes by pasting Perl's Unicode property lists (an older Unicode than
Python's) into regex character classes, so each class here is what the compiled regex itself
matches, probed code point by code point, not what the property's name suggests. The script
checks the identities the C code relies on (a complement class is the complement of its class,
the concatenated class the union of its parts). Python's own classes that the XLM / FlauBERT /
FSMT pipelines use come from the same interpreter: re's \\d and \\s, unicodedata's C* (their
remove_non_printing_char) and Mn (XLM's accent removal).

Output (C99):
  pf__moses_class_runs   start << 11 | flags (PF__MOSES_*), sorted; flags hold until the next start
  pf__moses_prefix_data  "lang\\0prefix\\0" ... : each language's nonbreaking prefixes, kind first
                         ('P' plain, 'N' numeric only: a period after it stays when a number follows)
  pf__py_nf_extra        where Python's unicodedata (14.0) normalizes differently from HF's tables
                         (probed through tokenizers' NFD / NFKD / NFC normalizers): records
                         cp, kind (1 NFD and NFKD, 2 NFKD only, 3 a composition: cp is the first,
                         the second follows, then what they make), count, code points; 0 ends
"""
import re
import sys
import unicodedata

from sacremoses import MosesTokenizer

LANGS = ["en", "fr", "de", "ru"]  # the languages whose prefixes we carry (others are refused by name)

FLAGS = [  # name, bit, probe
    ("PAD", 0x001, None),      # PAD_NOT_ISALNUM's class: padded with spaces
    ("ALNUM", 0x002, None),    # [IsAlnum] (aggressive hyphen split)
    ("N", 0x004, None),        # [IsN]
    ("ALPHA", 0x008, None),    # [IsAlpha]
    ("LOWER", 0x010, None),    # the IsLower set (islower of a token's first character)
    ("PY_DIGIT", 0x020, None), # re's \d
    ("PY_SPACE", 0x040, None), # re's \s
    ("PY_OTHER", 0x080, None), # unicodedata.category C*
    ("PY_MN", 0x100, None),    # unicodedata.category Mn
    ("PY_ZS", 0x200, None),    # unicodedata.category Zs
    ("PY_PUNCT", 0x400, None), # unicodedata.category P*
]


def classes():
    tok = MosesTokenizer(lang="en")
    pad = tok.PAD_NOT_ISALNUM[0]
    alnum = re.compile("[%s]" % tok.IsAlnum)
    hyphen = tok.AGGRESSIVE_HYPHEN_SPLIT[0]
    n_class = re.compile("[%s]" % tok.IsN)
    not_n = re.compile(r"[^%s]" % tok.IsN)
    alpha = re.compile("[%s]" % tok.IsAlpha)
    not_alpha = re.compile(r"[^%s]" % tok.IsAlpha)
    not_alpha_n = re.compile(r"[^%s%s]" % (tok.IsAlpha, tok.IsN))
    alpha_set, lower_set = set(tok.IsAlpha), set(tok.IsLower)
    digit, space = re.compile(r"\d"), re.compile(r"\s")
    flags = []
    for cp in range(0x110000):
        c = chr(cp)
        f = 0
        if pad.fullmatch(c):
            f |= 0x001
        if alnum.fullmatch(c):
            f |= 0x002
            assert hyphen.match(c + "-a") and hyphen.match("a-" + c), hex(cp)
        else:
            assert not hyphen.match(c + "-a") and not hyphen.match("a-" + c), hex(cp)
        if n_class.fullmatch(c):
            f |= 0x004
        assert bool(not_n.fullmatch(c)) != bool(f & 0x004), hex(cp)
        if alpha.fullmatch(c):
            f |= 0x008
        assert bool(not_alpha.fullmatch(c)) != bool(f & 0x008), hex(cp)
        assert bool(not_alpha_n.fullmatch(c)) == (not f & 0x00C), hex(cp)
        if not space.fullmatch(c):  # isanyalpha sees characters of a whitespace-split token only
            assert (c in alpha_set) == bool(f & 0x008), hex(cp)
        if c in lower_set:
            f |= 0x010
        if digit.fullmatch(c):
            f |= 0x020
        if space.fullmatch(c):
            f |= 0x040
        cat = unicodedata.category(c)
        if cat.startswith("C"):
            f |= 0x080
        if cat == "Mn":
            f |= 0x100
        if cat == "Zs":
            f |= 0x200
        if cat.startswith("P"):
            f |= 0x400
        flags.append(f)
    runs = []
    for cp, f in enumerate(flags):
        if not runs or runs[-1][1] != f:
            runs.append((cp, f))
    return runs


def nf_extra():
    from tokenizers import normalizers
    nfd, nfkd, nfc = normalizers.NFD(), normalizers.NFKD(), normalizers.NFC()
    out = []
    for cp in range(0x110000):
        if 0xD800 <= cp < 0xE000:
            continue
        c = chr(cp)
        py_d, py_kd = unicodedata.normalize("NFD", c), unicodedata.normalize("NFKD", c)
        if py_d != nfd.normalize_str(c):
            out.append([cp, 1, len(py_d)] + [ord(x) for x in py_d])
        elif py_kd != nfkd.normalize_str(c):
            out.append([cp, 2, len(py_kd)] + [ord(x) for x in py_kd])
        if py_d != nfd.normalize_str(c) and len(py_d) == 2 and unicodedata.normalize("NFC", py_d) == c:
            assert nfc.normalize_str(py_d) == py_d, hex(cp)  # HF composes none of these
            out.append([ord(py_d[0]), 3, 2, ord(py_d[1]), cp])
    return out


def prefixes():
    out = []
    for lang in LANGS:
        tok = MosesTokenizer(lang=lang)
        numeric = set(tok.NUMERIC_ONLY_PREFIXES)
        plain = [p for p in tok.NONBREAKING_PREFIXES if not re.search(r"\s", p)]
        seen = set()
        for p in plain + sorted(numeric):
            if p in seen or not p:
                continue
            seen.add(p)
            out.append((lang, ("N" if p in numeric else "P") + p))
    return out


def c_string(s):
    return '"' + "".join(ch if 0x20 <= ord(ch) < 0x7F and ch not in '"\\?' else
                         "".join("\\%03o" % b for b in ch.encode("utf-8")) for ch in s) + '"'


def render():
    lines = ["/* BEGIN GENERATED MOSES TABLES (test/gen_moses_tables.py; do not edit) */"]
    runs = classes()
    lines.append("static const uint32_t pf__moses_class_runs[%d] = {" % len(runs))
    row = []
    for cp, f in runs:
        row.append("0x%08X" % (cp << 11 | f))
        if len(row) == 8:
            lines.append("    " + ", ".join(row) + ",")
            row = []
    if row:
        lines.append("    " + ", ".join(row) + ",")
    lines.append("};")
    lines.append("static const char pf__moses_prefix_data[] =")
    for lang in LANGS:
        entries = [p for l, p in prefixes() if l == lang]
        body = lang + "\0" + "".join(p + "\0" for p in entries) + "\0"
        for i in range(0, len(body), 60):
            lines.append("    " + c_string(body[i:i + 60]))
    lines[-1] += ";"
    extra = [x for rec in nf_extra() for x in rec] + [0]
    lines.append("static const uint32_t pf__py_nf_extra[%d] = {" % len(extra))
    for i in range(0, len(extra), 8):
        lines.append("    " + ", ".join("0x%X" % x for x in extra[i:i + 8]) + ",")
    lines.append("};")
    lines.append("/* END GENERATED MOSES TABLES */")
    return "\n".join(lines) + "\n"


def main():
    text = render()
    if len(sys.argv) == 3 and sys.argv[1] == "--write":
        path = sys.argv[2]
        old = open(path, encoding="utf-8").read()
        a = old.index("/* BEGIN GENERATED MOSES TABLES")
        b = old.index("/* END GENERATED MOSES TABLES */") + len("/* END GENERATED MOSES TABLES */\n")
        open(path, "w", encoding="utf-8").write(old[:a] + text + old[b:])
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
