#!/usr/bin/env python3
"""Writes the tokenizer test data that test_tokenizer.c checks against HF tokenizers.

Run from the repository root (tokenizers 0.23 and transformers 5 installed):

    python3 test/make_tokenizer_cases.py            # writes the two files below
    python3 test/make_tokenizer_cases.py --many N OUT
                                                    # a style-case file with N cases per style
                                                    # (for a long check: PF_TOKENIZER_STYLE_CASES=OUT)

test/tokenizer_decode_cases.txt: for every fixture dir with cases.txt / cases_special.txt, what
HF's decode gives for each case's ids, a line per case in the order of cases.txt then
cases_special.txt:
    dir <TAB> <name> <TAB> <1 if byte-level without a normalizer nor a prefix space (decode is a byte-exact round trip),
    else 0>
    <hex of the decoded UTF-8; = when it is the case's input, - when empty>
The decodes are tokenizers' (Tokenizer.from_file(tokenizer.json).decode(ids), special tokens
kept; transformers' decode where there is no tokenizer.json, as for ByT5); transformers' AutoTokenizer decodes the same except for CTRL, whose Python tokenizer
joins tokens with spaces around <unk> (tokenizer.json's BPEDecoder does not): those cases are
counted on stdout.

test/tokenizer_style_cases.txt: random strings through small tokenizers, one per
normalizer / pre-tokenizer / decoder style:
    style <TAB> <name> <TAB> <tokenizer.json with "@VOCAB@" for the vocab>
    <hex of the UTF-8 input> <TAB> <comma ids> <TAB> <hex of the decode, or = when it is the input>
The vocab (built the same way by the C test) makes every pre-token's boundaries visible in the
ids: a word's last unit carries the end_of_word_suffix "</w>" (ids 256 + byte), others are
plain (id = byte); byte-level styles have GPT-2's byte characters, the others byte_fallback
tokens <0xXX> only (the suffix then shows as the bytes of "</w>").
"""
import json
import random
import sys
from pathlib import Path

from tokenizers import Tokenizer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_fixtures import bytes_to_unicode  # noqa: E402  GPT-2's byte -> char map, defined once

ROOT = Path(__file__).resolve().parent
FIXTURES = ROOT / "fixtures"


def vocab(kind):
    """The JSON text of the probe vocab (the C test builds the same)."""
    if kind == "bytelevel":
        m = bytes_to_unicode()
        items = [(m[b], b) for b in range(256)] + [(m[b] + "</w>", 256 + b) for b in range(256)]
    else:
        items = [("<0x%02X>" % b, b) for b in range(256)]
    return "{" + ",".join(json.dumps(k) + ":" + str(v) for k, v in items) + "}"


BL = '{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":false}'
BL_DEC = '{"type":"ByteLevel","add_prefix_space":true,"trim_offsets":true,"use_regex":true}'
LLAMA_DEC = ('{"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"\u2581"},"content":" "},'
             '{"type":"ByteFallback"},{"type":"Fuse"},{"type":"Strip","content":" ","start":1,"stop":0}]}')
FB_DEC = '{"type":"Sequence","decoders":[{"type":"ByteFallback"},{"type":"Fuse"}]}'
LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
          r"\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2 = LLAMA3.replace(r"\p{N}{1,3}", r"\p{N}")
BLOOM = r" ?[^(\s|[.,!?…。，、।۔،])]+"


def split(pattern, behavior="Isolated", invert=False, kind="Regex"):
    return json.dumps({"type": "Split", "pattern": {kind: pattern}, "behavior": behavior, "invert": invert})


def seq(key, *items):
    return '{"type":"Sequence","%s":[%s]}' % (key, ",".join(items))


def bert_norm(clean, cjk, strip, lower):
    return json.dumps({"type": "BertNormalizer", "clean_text": clean, "handle_chinese_chars": cjk,
                       "strip_accents": strip, "lowercase": lower})


def meta(scheme, split_):
    return json.dumps({"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": scheme, "split": split_})


ADDED = json.dumps([
    {"id": 0, "content": "<s>", "single_word": False, "lstrip": True, "rstrip": False, "normalized": False,
     "special": True},
    {"id": 0, "content": "AB", "single_word": False, "lstrip": False, "rstrip": True, "normalized": True,
     "special": False},
    {"id": 0, "content": "x y", "single_word": True, "lstrip": False, "rstrip": False, "normalized": True,
     "special": False},
])

# name, kind, normalizer, pre_tokenizer, decoder, extra model options, added tokens, cases (of 100)
STYLES = [
    ("gpt2", "bytelevel", "null", '{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":true}', BL_DEC, "", "[]", 100),
    ("gpt2-prefix", "bytelevel", "null", '{"type":"ByteLevel","add_prefix_space":true,"trim_offsets":true,"use_regex":true}', BL_DEC, "",
     "[]", 40),
    ("llama3", "bytelevel", "null", seq("pretokenizers", split(LLAMA3), BL), BL_DEC, "", "[]", 100),
    ("qwen2", "bytelevel", '{"type":"NFC"}', seq("pretokenizers", split(QWEN2), BL), BL_DEC, "", "[]", 100),
    ("bloom", "bytelevel", "null", seq("pretokenizers", split(BLOOM), BL), BL_DEC, "", "[]", 100),
    ("ctrl", "fallback", "null", split(r"\S+\n?", "Removed", True), FB_DEC, "", "[]", 60),
    ("nfc", "bytelevel", '{"type":"NFC"}', BL, BL_DEC, "", "[]", 100),
    ("nfd", "bytelevel", '{"type":"NFD"}', BL, BL_DEC, "", "[]", 60),
    ("lowercase", "bytelevel", '{"type":"Lowercase"}', BL, BL_DEC, "", "[]", 60),
    ("nfkc", "bytelevel", '{"type":"NFKC"}', BL, BL_DEC, "", "[]", 100),
    ("nfkd", "bytelevel", '{"type":"NFKD"}', BL, BL_DEC, "", "[]", 60),
    ("albert-norm", "bytelevel", seq("normalizers", '{"type":"Replace","pattern":{"String":"``"},"content":"\\""}',
                                     '{"type":"NFKD"}', '{"type":"StripAccents"}', '{"type":"Lowercase"}',
                                     '{"type":"Replace","pattern":{"Regex":" {2,}"},"content":" "}'),
     BL, BL_DEC, "", "[]", 100),
    ("strip-accents", "bytelevel", '{"type":"StripAccents"}', BL, BL_DEC, "", "[]", 60),
    ("bert-norm", "bytelevel", bert_norm(True, True, None, True), BL, BL_DEC, "", "[]", 100),
    ("bert-norm-accents", "bytelevel", bert_norm(True, False, True, False), BL, BL_DEC, "", "[]", 60),
    ("bert-norm-cjk", "bytelevel", bert_norm(False, True, False, False), BL, BL_DEC, "", "[]", 30),
    ("openai-gpt", "fallback", bert_norm(True, True, None, True), '{"type":"BertPreTokenizer"}', FB_DEC,
     '"continuing_subword_prefix":"",', "[]", 100),
    ("llama", "fallback", "null", meta("first", False), LLAMA_DEC, "", "[]", 60),
    ("metaspace-always", "fallback", "null", meta("always", True),
     '{"type":"Sequence","decoders":[{"type":"ByteFallback"},{"type":"Metaspace","replacement":"\u2581",'
     '"prepend_scheme":"always","split":true}]}', "", "[]", 60),
    ("metaspace-never", "fallback", "null", meta("never", True), FB_DEC, "", "[]", 30),
    ("mistral", "fallback", seq("normalizers", '{"type":"Prepend","prepend":"\u2581"}',
                                '{"type":"Replace","pattern":{"String":" "},"content":"\u2581"}'),
     "null", LLAMA_DEC, "", "[]", 60),
    ("strip-replace", "bytelevel", seq("normalizers", '{"type":"Strip","strip_left":true,"strip_right":false}',
                                       '{"type":"Replace","pattern":{"String":"a"},"content":"xy"}'),
     BL, BL_DEC, "", "[]", 40),
    ("whitespace-prefix", "fallback", "null", '{"type":"WhitespaceSplit"}', FB_DEC,
     '"continuing_subword_prefix":"##",', "[]", 40),
    ("punctuation-contiguous", "bytelevel", "null",
     seq("pretokenizers", '{"type":"Punctuation","behavior":"Contiguous"}', BL), BL_DEC, "", "[]", 30),
    ("added-lowercase", "bytelevel", '{"type":"Lowercase"}', '{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":true}', BL_DEC,
     "", ADDED, 60),
    ("added-metaspace", "fallback", "null", meta("first", True), LLAMA_DEC, "", ADDED, 60),
    ("digits-individual", "bytelevel", "null",  # SmolLM2's (as its GGUF's tokenizer.ggml.pre "smollm")
     seq("pretokenizers", '{"type":"Digits","individual_digits":true}', BL), BL_DEC, "", "[]", 30),
    ("digits-contiguous", "bytelevel", "null",
     seq("pretokenizers", '{"type":"Digits","individual_digits":false}', BL), BL_DEC, "", "[]", 30),
]
for behavior in ["Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous"]:
    for invert in (False, True):
        STYLES.append((f"split-{behavior}-{'inverted' if invert else 'plain'}", "bytelevel", "null",
                       seq("pretokenizers", split("a", behavior, invert, "String"), BL), BL_DEC, "", "[]", 20))


def tokenizer_json(kind, normalizer, pre, decoder, extra, added):
    model = ('{"type":"BPE","dropout":null,"unk_token":null,%s"end_of_word_suffix":"</w>","fuse_unk":false,'
             '"byte_fallback":%s,"ignore_merges":false,"vocab":"@VOCAB@","merges":[]}'
             % (extra, "true" if kind == "fallback" else "false"))
    return ('{"version":"1.0","added_tokens":%s,"normalizer":%s,"pre_tokenizer":%s,"post_processor":null,'
            '"decoder":%s,"model":%s}' % (added, normalizer, pre, decoder, model))


# Pieces random strings are made of: what the patterns, normalizers and splits care about.
PIECES = [
    "a", "b", "Z", "hello", "WORLD", "xy", "x y", "AB", "ab", "<s>", "</w>", " ", "  ", "   ", "\t", "\n", "\r\n",
    "\r", "\n\n", " \n ", "'s", "'S", "'re", "'RE", "'Ll", "'ve", "'m", "'D", "'t", "'x", "'\u017f", "'", "1", "12",
    "1234567", " 3", "\u0663\u0664", "\u00bd", "!", "?!", ".", ",", "...", "(", ")", "|", "-", "_", "\"", "$", "@",
    "\u2026", "\u3002", "\uff0c", "\u3001", "\u0964", "\u06d4", "\u060c", "caf\u00e9", "cafe\u0301", "e\u0301\u0327",
    "\u0041\u030a", "\u212b", "\u1e9b\u0323", "\u0323\u0307", "\u0f73", "\u0c3c\u0c3c", "\u1dfa", "\U00011935\U00011930",
    "\uac00", "\u1100\u1161\u11a8", "\u1100\u1161", "\ud55c\uad6d\uc5b4", "\u6771\u4eac", "\u4e2d\u6587", "\u3400",
    "\U00020000", "\u00a0", "\u3000", "\u2028", "\u0085", "\u1680", "\u200b", "\ufeff", "\u00ad", "\u0001", "\u007f",
    "\x00", "\ufffd", "\U0001f44d", "\U0001f1fa\U0001f1f8", "\u0130", "\u1e9e", "\u03a3\u039f\u03a3", "\u0130stanbul",
    "\u2581", "\u2581\u2581", "\u00dcber", "na\u00efve", "\u0928\u092e\u0938\u094d\u0924\u0947", "\u0645\u0631\u062d\u0628\u0627",
    "\u00c5ngstr\u00f6m", "\uff21\uff22", "\u2460", "\u00b2", "\u0300", "\u0345",
]


def random_text(rng):
    out = []
    for _ in range(rng.randint(1, 6)):
        r = rng.random()
        if r < 0.12:
            while True:  # any code point, assigned or not
                cp = rng.choice([rng.randrange(0x80, 0x800), rng.randrange(0x800, 0x10000), rng.randrange(0x10000, 0x110000)])
                if not 0xD800 <= cp < 0xE000:
                    break
            out.append(chr(cp))
        else:
            out.append(rng.choice(PIECES))
    return "".join(out)


def hexs(s):
    return s.encode("utf-8").hex()


def style_cases(per_style_scale, seed=5):
    lines = []
    for name, kind, norm, pre, dec, extra, added, count in STYLES:
        js = tokenizer_json(kind, norm, pre, dec, extra, added)
        tok = Tokenizer.from_str(js.replace('"@VOCAB@"', vocab(kind)))
        lines.append(f"style\t{name}\t{js}")
        rng = random.Random(f"{seed}-{name}")
        seen = set()
        n = max(1, count * per_style_scale // 100)
        while len(seen) < n:
            text = random_text(rng)
            if text in seen:
                continue
            seen.add(text)
            ids = tok.encode(text, add_special_tokens=False).ids
            dec = tok.decode(ids, skip_special_tokens=False)
            lines.append(f"{hexs(text)}\t{','.join(map(str, ids))}\t{'=' if dec == text else hexs(dec)}")
    return lines


def decode_cases():
    from transformers import AutoTokenizer

    lines = []
    for d in sorted(p for p in FIXTURES.iterdir() if (p / "cases.txt").exists()):
        auto = AutoTokenizer.from_pretrained(str(d))
        if (d / "tokenizer.json").exists():
            tok = Tokenizer.from_file(str(d / "tokenizer.json"))
            spec = json.loads((d / "tokenizer.json").read_text(encoding="utf-8"))
            pre, dec = json.dumps(spec.get("pre_tokenizer")), spec.get("decoder") or {}
            byte_level = int('"ByteLevel"' in pre and '"add_prefix_space": true' not in pre and
                             dec.get("type") == "ByteLevel" and not spec.get("normalizer"))
        else:  # a tokenizer without a fast version (ByT5): transformers' own decode
            tok, byte_level = auto, 0
        lines.append(f"dir\t{d.name}\t{byte_level}")
        differ = 0
        for fn in ("cases.txt", "cases_special.txt"):
            if not (d / fn).exists():
                continue
            for line in (d / fn).read_text().splitlines():
                if not line:
                    continue
                h, ids = line.split("\t")
                ids = [int(x) for x in ids.split(",") if x]
                text = tok.decode(ids, skip_special_tokens=False)
                differ += auto.decode(ids) != text
                if byte_level and fn == "cases.txt":
                    assert text == bytes.fromhex(h).decode(), (d.name, h)
                lines.append("=" if text == bytes.fromhex(h).decode() else hexs(text) or "-")
        print(f"{d.name}: byte-level {byte_level}; transformers decodes {differ} cases differently")
    return lines


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--many":
        Path(sys.argv[3]).write_text("\n".join(style_cases(int(sys.argv[2]))) + "\n", encoding="utf-8")
        return
    if len(sys.argv) != 1:
        raise SystemExit(__doc__)
    (ROOT / "tokenizer_decode_cases.txt").write_text("\n".join(decode_cases()) + "\n", encoding="utf-8")
    (ROOT / "tokenizer_style_cases.txt").write_text("\n".join(style_cases(100)) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
