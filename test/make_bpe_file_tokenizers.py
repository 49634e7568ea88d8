#!/usr/bin/env python3
"""Writes the fixtures of the BPE tokenizers transformers builds from vocab / merges files without a
tokenizer.json (test/fixtures/tokenizer-<family>-files/), with the ids and decodes transformers 5
gives (all six classes are in transformers 5.24, the reference here).

Run from the repository root (transformers 5, tokenizers installed), then the decodes of every
fixture:

    python3 test/make_bpe_file_tokenizers.py       # or only some: openai_gpt herbert ...
    python3 test/make_tokenizer_cases.py

There is no network to the hub, so each vocabulary is trained here on the corpus of
make_encoder_tokenizers.py (tokenizers' BpeTrainer with end_of_word_suffix "</w>"; its ties fall
differently from run to run, so a rerun writes other vocabularies and ids), written in the files
its checkpoints ship, and loaded with AutoTokenizer:

  tokenizer-openai-gpt-files   OpenAIGPTTokenizer: vocab.json + merges.txt of a lowercased corpus,
                               tokenizer_config.json as save_pretrained writes it (no tokenizer.json)
  tokenizer-herbert-files      HerbertTokenizer: cased; a config that names the class only (the
                               special tokens are the class's defaults)
  tokenizer-ctrl-files         CTRLTokenizer: "@@" pieces in vocab.json, "</w>" merges in merges.txt
  tokenizer-blenderbot-small   BlenderbotSmallTokenizer: the same, lowercased, with __newln__, as
                               save_pretrained writes it
  tokenizer-blenderbot-small-cleanup  the same with clean_up_tokenization_spaces true (its decodes)
  tokenizer-phobert-files      PhobertTokenizer: fastBPE's vocab.txt ("<token> <count>") + bpe.codes
                               ("a b <count>"), as save_pretrained writes it
  tokenizer-bertweet-files     BertweetTokenizer (normalization false): the same files, a config that
                               names the class only

The Python classes' vocabularies lack some of the tokens their merges make (every 13th), so
unknown pieces map to unk (tokenizers refuses such merges: OpenAI GPT's and HerBERT's unknown pieces
are the characters the corpus lacks). Each dir gets cases.txt and cases_special.txt (transformers' ids without / with special
tokens for texts() + SLOW_TEXTS + BPE_TEXTS) and the decodes of make_seq2seq_tokenizers.write_decodes.
"""
import json
import sys
from pathlib import Path

from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from transformers import AutoTokenizer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_encoder_tokenizers import CORPUS, hexs, reset  # noqa: E402
from make_seq2seq_tokenizers import SLOW_TEXTS, texts, write_decodes  # noqa: E402

# What these classes treat apart: punctuation and apostrophes (Blenderbot-small), newlines
# (__newln__, the "\n" a word keeps), Python's whitespace (U+001C .. U+001F are \s for re, not for
# the regex module), the capital sigma lower() makes final, "@@" in the text, the special tokens.
BPE_TEXTS = ["Hello, world! (yes) it's \"quoted\"...", "x'\ny", "'\n", "a.\nb", "ends\n", "a\n\nb\n", "a \x1c b\x1fc",
             "\x1d", "\u03a3\u039f\u03a3 \u039f\u0394\u039f\u03a3. \u03a3 a\u03a3 \u03a3\u0301 \u6771\u03a3",
             "\u0130stanbul \u0130", "hello@@ world", "@@ @@@", "a@@ b", "__newln__ __start__ hi __end__ __unk__",
             "<s> x </s> <pad> <mask> <unk>", "tokenization tokenizers unbelievable", "CAFÉ Café café",
             "  spaced   out  ", "(a)(b).c,d!e?f", "Ünïcödé wörds ÀÉÎÕÜ"]


# Greek words with "\u03c3" and the final "\u03c2" that lower() makes of a capital sigma, so that
# Blenderbot-small's vocab tells them apart.
SIGMAS = "\u03c3\u03bf\u03c2 \u03bf\u03b4\u03bf\u03c2 \u03c3 \u03c2 \u03c3\u03c3 \u03b1\u03c3"


def train(lowercase: bool, bert_split: bool, extra=()):
    """A "</w>" BPE of the corpus (and `extra` lines): its vocab (a dict) and merges (pairs)."""
    tok = Tokenizer(models.BPE(unk_token="<unk>", end_of_word_suffix="</w>"))
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer() if bert_split else pre_tokenizers.WhitespaceSplit()
    trainer = trainers.BpeTrainer(vocab_size=600, end_of_word_suffix="</w>", show_progress=False)
    tok.train_from_iterator([line.lower() if lowercase else line for line in CORPUS + list(extra)], trainer)
    spec = json.loads(tok.to_str())
    return spec["model"]["vocab"], [tuple(m) for m in spec["model"]["merges"]]


def thinned(tokens):
    """Every 13th token left out: pieces the merges make that the vocab lacks."""
    return [t for i, t in enumerate(tokens) if i % 13 != 12]


def at_at_tokens(vocab):
    """The "@@" form of a "</w>" vocab: a word's last piece plain, the others with "@@"."""
    out = []
    for t in sorted(vocab, key=vocab.get):
        t = t[:-4] if t.endswith("</w>") else t + "@@"
        if t not in out:
            out.append(t)
    return thinned(out)


def write_merges_txt(out: Path, merges):
    (out / "merges.txt").write_text("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges), encoding="utf-8")


def write_vocab_json(out: Path, first, tokens):
    vocab = {t: i for i, t in enumerate(first)}
    for t in tokens:
        vocab.setdefault(t, len(vocab))
    (out / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")


def config_only(out: Path, tokenizer_class: str):
    (out / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": tokenizer_class}) + "\n",
                                               encoding="utf-8")


def saved_config(out: Path, files):
    """tokenizer_config.json as transformers' save_pretrained writes it for the class (the vocab
    files written here kept, anything else it writes, tokenizer.json among them, removed)."""
    auto = AutoTokenizer.from_pretrained(str(out))
    keep = {p.name: p.read_bytes() for p in out.iterdir() if p.name in files}
    auto.save_pretrained(str(out))
    for p in out.iterdir():
        if p.name not in files and p.name != "tokenizer_config.json":
            p.unlink()
    for name, data in keep.items():
        (out / name).write_bytes(data)
    config = json.loads((out / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert "tokenizer_file" not in config, config


def write_cases(out: Path, class_name: str):
    auto = AutoTokenizer.from_pretrained(str(out))
    assert type(auto).__name__ == class_name, type(auto)
    assert not (out / "tokenizer.json").exists(), out
    for name, special in (("cases.txt", False), ("cases_special.txt", True)):
        lines = [hexs(t) + "\t" + ",".join(map(str, auto(t, add_special_tokens=special)["input_ids"]))
                 for t in texts() + SLOW_TEXTS + BPE_TEXTS]
        (out / name).write_text("\n".join(lines) + "\n", encoding="ascii")
    write_decodes(out)


def make_openai_gpt():
    out = reset("tokenizer-openai-gpt-files")
    vocab, merges = train(lowercase=True, bert_split=True)
    write_vocab_json(out, ["<unk>"], sorted(vocab, key=vocab.get))
    write_merges_txt(out, merges)
    config_only(out, "OpenAIGPTTokenizer")
    saved_config(out, ("vocab.json", "merges.txt"))
    write_cases(out, "OpenAIGPTTokenizer")


def make_herbert():
    out = reset("tokenizer-herbert-files")
    vocab, merges = train(lowercase=False, bert_split=True)
    write_vocab_json(out, ["<s>", "<pad>", "</s>", "<unk>", "<mask>"], sorted(vocab, key=vocab.get))
    write_merges_txt(out, merges)
    config_only(out, "HerbertTokenizer")
    write_cases(out, "HerbertTokenizer")


def make_ctrl():
    out = reset("tokenizer-ctrl-files")
    vocab, merges = train(lowercase=False, bert_split=False)
    write_vocab_json(out, [], at_at_tokens(vocab) + ["<unk>"])
    write_merges_txt(out, merges)
    config_only(out, "CTRLTokenizer")
    write_cases(out, "CTRLTokenizer")


def make_blenderbot_small():
    out = reset("tokenizer-blenderbot-small")
    vocab, merges = train(lowercase=True, bert_split=False, extra=[SIGMAS] * 3)
    write_vocab_json(out, ["__start__", "__end__", "__unk__", "__null__", "__newln__"], at_at_tokens(vocab))
    write_merges_txt(out, merges + [("_", "_"), ("__", "n"), ("__n", "e"), ("__ne", "w"), ("__new", "l"),
                                    ("__newl", "n"), ("__newln", "_"), ("__newln_", "_</w>")])
    config_only(out, "BlenderbotSmallTokenizer")
    saved_config(out, ("vocab.json", "merges.txt"))
    write_cases(out, "BlenderbotSmallTokenizer")
    cleanup = reset("tokenizer-blenderbot-small-cleanup")  # the same, decoded with clean_up_tokenization_spaces
    for name in ("vocab.json", "merges.txt"):
        (cleanup / name).write_bytes((out / name).read_bytes())
    config = json.loads((out / "tokenizer_config.json").read_text(encoding="utf-8"))
    config["clean_up_tokenization_spaces"] = True
    (cleanup / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    write_cases(cleanup, "BlenderbotSmallTokenizer")


def write_fastbpe(out: Path, tokens, merges):
    """fastBPE's files: vocab.txt "<token> <count>", bpe.codes "a b <count>" (made-up counts)."""
    (out / "vocab.txt").write_text("".join(f"{t} {1000 - i}\n" for i, t in enumerate(tokens)), encoding="utf-8")
    (out / "bpe.codes").write_text("".join(f"{a} {b} {5000 - i}\n" for i, (a, b) in enumerate(merges)),
                                   encoding="utf-8")


def make_phobert():
    out = reset("tokenizer-phobert-files")
    vocab, merges = train(lowercase=False, bert_split=False)
    write_fastbpe(out, [t for t in at_at_tokens(vocab) if t not in ("<s>", "</s>", "<pad>", "<unk>")], merges)
    config_only(out, "PhobertTokenizer")
    saved_config(out, ("vocab.txt", "bpe.codes"))
    write_cases(out, "PhobertTokenizer")


def make_bertweet():
    out = reset("tokenizer-bertweet-files")
    vocab, merges = train(lowercase=False, bert_split=False)
    write_fastbpe(out, [t for t in at_at_tokens(vocab) if t not in ("<s>", "</s>", "<pad>", "<unk>")], merges)
    config_only(out, "BertweetTokenizer")
    write_cases(out, "BertweetTokenizer")


def main():
    for name in sys.argv[1:] or ["openai_gpt", "herbert", "ctrl", "blenderbot_small", "phobert", "bertweet"]:
        globals()["make_" + name]()


if __name__ == "__main__":
    main()
