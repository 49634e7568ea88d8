#!/usr/bin/env python3
"""Writes the tokenizer fixtures of encoder-decoder models (test/fixtures/tokenizer-<family>/),
each with the ids and decodes transformers gives.

Run from the repository root (transformers 5, tokenizers, sentencepiece installed), then the
decodes and special ids of every fixture:

    python3 test/make_seq2seq_tokenizers.py        # or only some: ... marian m2m100 refused
    python3 test/make_tokenizer_cases.py
    python3 test/make_special_ids.py

There is no network to the hub, so each tokenizer is built here the way its checkpoints are: a
SentencePiece model trained on a small corpus (make_encoder_tokenizers.train_spm, one thread,
deterministic) or a byte-level BPE trained by tokenizers, handed to the transformers tokenizer
class of the family, and saved with save_pretrained (tokenizer.json, tokenizer_config.json, ...):

  tokenizer-t5s        T5Tokenizer from the .model (SentencePiece's nmt_nfkc charsmap; the others
                       are trained without a normalizer), 100 <extra_id_N> sentinels, "$A </s>"
  tokenizer-mbart      MBartTokenizer (fairseq ids: <s> <pad> </s> <unk>, pieces + 1, language
                       codes en_XX ... as special tokens, <mask>), src_lang ro_RO: "$A </s> ro_RO"
  tokenizer-mbart50    MBart50Tokenizer, src_lang en_XX: "en_XX $A </s>"
  tokenizer-pegasus    PegasusTokenizer (<pad> 0, </s> 1, <mask_1>, <mask_2>, <unk_2> ..
                       <unk_102>: the pieces from offset 103), "$A </s>"
  tokenizer-bart       BartTokenizer (byte-level BPE, "<s> $A </s>")
  tokenizer-blenderbot BlenderbotTokenizer (byte-level BPE with add_prefix_space, "$A </s>")
  tokenizer-byt5       ByT5Tokenizer (no tokenizer.json: UTF-8 bytes + 3, 125 extra ids, "$A </s>")
  tokenizer-byt5-old   the same from a tokenizer_config.json without added_tokens_decoder

Tokenizers transformers has no fast (tokenizer.json) version of, saved as their checkpoints ship
them, with cases from the slow tokenizer itself (write_slow: no pairs, texts() + SLOW_TEXTS):
  tokenizer-marian     MarianTokenizer: source.spm = target.spm (a Unigram whose charsmap is
                       compiled from MARIAN_RULES), vocab.json without "\u2581a" and with two
                       strings the model lacks
  tokenizer-m2m100     M2M100Tokenizer: sentencepiece.bpe.model a SentencePiece BPE, as saved by
                       transformers 5 (language codes not special); tokenizer-m2m100-listed: the
                       same with the codes listed in additional_special_tokens, src_lang fr
  tokenizer-cpm-refused  CpmTokenizer's files (jieba + SentencePiece), which parallelformers refuses
                       with a message naming the class (test_tokenizer.c checks it); Blenderbot-small's
                       "@@" BPE is read now (make_bpe_file_tokenizers.py), XLM's and FlauBERT's Moses
                       + BPE too (make_moses_tokenizers.py)

Each supported dir gets cases.txt, cases_special.txt and cases_pair.txt as
make_encoder_tokenizers.write_cases writes them (ByT5: from ByT5Tokenizer itself, no pairs), and
decode_skip.txt: for each case of cases_special.txt, the hex of transformers'
decode(ids, skip_special_tokens=True) (= when it is the input, - when empty); decode_random.txt
and token_ids.txt (see write_decodes).
"""
import json
import random
import shutil
import sys
import tempfile
from pathlib import Path

from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from transformers import (AutoTokenizer, BartTokenizer, BlenderbotTokenizer,
                          ByT5Tokenizer, M2M100Tokenizer, MarianTokenizer, MBart50Tokenizer, MBartTokenizer,
                          PegasusTokenizer, T5Tokenizer)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_encoder_tokenizers import CORPUS, case_texts, hexs, reset, train_spm, write_cases  # noqa: E402
from spm_charsmap import read_model  # noqa: E402

FIXTURES = Path(__file__).resolve().parent / "fixtures"
RANDOM_DECODES = 100
# Sentinels and language codes in the texts too: they must come out as their own ids.
SPECIAL_TEXTS = ["<extra_id_0> and <extra_id_99>", "en_XX hello ro_RO", "<mask_1> summary <mask_2>",
                 "x<extra_id_1>y", "<s>a</s>b<pad>", "<mask>", "  <extra_id_2>  spaced  ", "ends with </s>",
                 "</s>", "a </s> b <pad> c <unk>"]


def texts():
    return case_texts() + SPECIAL_TEXTS


def write_all(out: Path):
    """The cases of the saved tokenizer (tokenizer.json), and transformers' decodes and ids."""
    write_cases(out, extra_texts=SPECIAL_TEXTS)
    write_decodes(out)


def write_decodes(out: Path, vocab_tokens=True):
    """decode_skip.txt (above); decode_random.txt: random ids (any of the vocab, specials too)
    <TAB> hex of decode(ids) <TAB> hex of decode(ids, skip_special_tokens=True) (- when empty), but
    none whose decode has U+FFFD;
    token_ids.txt: hex of a token's text <TAB> convert_tokens_to_ids of it, for the added tokens
    and, with vocab_tokens, every vocab token."""
    auto = AutoTokenizer.from_pretrained(str(out))
    lines = []
    for line in (out / "cases_special.txt").read_text(encoding="ascii").splitlines():
        h, ids = line.split("\t")
        text = auto.decode([int(x) for x in ids.split(",") if x], skip_special_tokens=True)
        lines.append("=" if text == bytes.fromhex(h).decode() else hexs(text) or "-")
    (out / "decode_skip.txt").write_text("\n".join(lines) + "\n", encoding="ascii")
    rng = random.Random(out.name)
    lines = []
    while len(lines) < RANDOM_DECODES:
        ids = [rng.randrange(len(auto)) for _ in range(rng.randint(1, 12))]
        if "\ufffd" in auto.decode(ids):
            continue  # bytes that are not UTF-8, which a byte-level decode keeps (parallelformers.c says why)
        lines.append("\t".join([",".join(map(str, ids)), hexs(auto.decode(ids)) or "-",
                                hexs(auto.decode(ids, skip_special_tokens=True)) or "-"]))
    (out / "decode_random.txt").write_text("\n".join(lines) + "\n", encoding="ascii")
    tokens = sorted(set(auto.get_added_vocab()) | (set(auto.get_vocab()) if vocab_tokens else set()))
    lines = [f"{hexs(t)}\t{auto.convert_tokens_to_ids(t)}" for t in tokens]
    (out / "token_ids.txt").write_text("\n".join(lines) + "\n", encoding="ascii")


def spm_model(charsmap=False, **options) -> Path:
    """A SentencePiece Unigram .model of the corpus; with SentencePiece's own nmt_nfkc charsmap
    (240 KB, as the checkpoints have) or without a normalizer (identity), to keep fixtures small."""
    return train_spm(**options) if charsmap else train_spm(normalization_rule_name="identity", **options)


def from_spm(cls, file_name, model: Path, **kwargs):
    """transformers' slow -> fast conversion of a SentencePiece model (needs protobuf), as
    from_pretrained does it for a checkpoint that ships file_name only."""
    d = Path(tempfile.mkdtemp())
    shutil.copy(model, d / file_name)
    return cls.from_pretrained(str(d), **kwargs)


def make_t5():
    out = reset("tokenizer-t5s")
    model = spm_model(charsmap=True, pad_id=0, eos_id=1, unk_id=2, bos_id=-1)
    from_spm(T5Tokenizer, "spiece.model", model, extra_ids=100).save_pretrained(str(out))
    keep(out)
    write_all(out)


def make_mbart():
    out = reset("tokenizer-mbart")
    model = spm_model()
    from_spm(MBartTokenizer, "sentencepiece.bpe.model", model, src_lang="ro_RO", tgt_lang="en_XX").save_pretrained(str(out))
    keep(out)
    write_all(out)


def make_mbart50():
    out = reset("tokenizer-mbart50")
    model = spm_model()
    from_spm(MBart50Tokenizer, "sentencepiece.bpe.model", model, src_lang="en_XX", tgt_lang="ro_RO").save_pretrained(str(out))
    keep(out)
    write_all(out)


def make_pegasus():
    out = reset("tokenizer-pegasus")
    model = spm_model(pad_id=0, eos_id=1, unk_id=2, bos_id=-1)
    from_spm(PegasusTokenizer, "spiece.model", model).save_pretrained(str(out))
    keep(out)
    write_all(out)


def train_bpe():
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=420, special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(CORPUS, trainer)
    spec = json.loads(tok.to_str())
    return spec["model"]["vocab"], [tuple(m) for m in spec["model"]["merges"]]


def make_bart(vocab, merges):
    out = reset("tokenizer-bart")
    BartTokenizer(vocab=vocab, merges=merges).save_pretrained(str(out))
    keep(out)
    write_all(out)


def make_blenderbot(vocab, merges):
    out = reset("tokenizer-blenderbot")
    BlenderbotTokenizer(vocab=vocab, merges=merges).save_pretrained(str(out))
    keep(out)
    write_all(out)


def make_byt5(name="tokenizer-byt5", old_config=False):
    """No tokenizer.json: cases straight from ByT5Tokenizer (no pairs). old_config: the
    tokenizer_config.json of checkpoints saved before added_tokens_decoder (extra_ids only)."""
    out = reset(name)
    if old_config:
        (out / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "ByT5Tokenizer", "extra_ids": 125,
                                                               "eos_token": "</s>", "unk_token": "<unk>",
                                                               "pad_token": "<pad>"}, indent=2) + "\n")
    else:
        ByT5Tokenizer().save_pretrained(str(out))
    keep(out)
    auto = AutoTokenizer.from_pretrained(str(out))
    assert type(auto).__name__ == "ByT5Tokenizer", type(auto)
    for name, special in (("cases.txt", False), ("cases_special.txt", True)):
        lines = [hexs(t) + "\t" + ",".join(map(str, auto(t, add_special_tokens=special)["input_ids"]))
                 for t in texts()]
        (out / name).write_text("\n".join(lines) + "\n", encoding="ascii")
    write_decodes(out, vocab_tokens=False)  # its vocab's byte tokens are chr(byte), not the byte


# Marian's and M2M100's texts: what only they do (a leading >>xx<< code, __xx__ codes, runs of
# characters the model lacks, one of them in vocab.json, the charsmap's keys with a longer key).
SLOW_TEXTS = [">>fr<< bonjour", ">>fr<<", ">>de<<x", ">> nope", "__fr__ hi __en__", "xᚠᚢy ᚠ",
              "①② x①", "a​b ​", "Ａ　　b", "\r\n x \r", "ends with </s>",
              " a ", "▁ a ▁", "▁▁x", "<unk>", "a<unk>b"]
# Rules compiled into Marian's SentencePiece model: a key that is the start of a longer one
# (SentencePiece takes the longest), a deletion, spaces, a key of two characters.
MARIAN_RULES = {"①": "(1)", "①②": "[12]", "​": "", "Ａ": "A", "\r": " ", "　": " ",
                "é": "é", "▁": "_"}


def write_slow(out: Path, auto):
    """cases.txt and cases_special.txt from a slow (Python-only) tokenizer, and its decodes."""
    for name, special in (("cases.txt", False), ("cases_special.txt", True)):
        lines = [hexs(t) + "\t" + ",".join(map(str, auto(t, add_special_tokens=special)["input_ids"]))
                 for t in texts() + SLOW_TEXTS]
        (out / name).write_text("\n".join(lines) + "\n", encoding="ascii")
    write_decodes(out)


def slow_vocab(model: Path, first: list, drop=(), extra=()) -> dict:
    """vocab.json of a SentencePiece model: the fairseq-style tokens first, then the pieces (less
    `drop`: they map to unk), then `extra` (strings the model does not have, as Marian's joint
    vocabularies of two languages hold)."""
    pieces, _, _ = read_model(model)
    vocab = {t: i for i, t in enumerate(first)}
    for p in [p for p, _, _ in pieces if p not in drop] + list(extra):
        vocab.setdefault(p, len(vocab))
    return vocab


def make_marian():
    """MarianTokenizer: source.spm (= target.spm) a Unigram with a rule charsmap; vocab.json
    without one piece and with a run of characters the model does not know."""
    out = reset("tokenizer-marian")
    rules = Path(tempfile.mkdtemp()) / "rules.tsv"
    rules.write_text("".join(" ".join("%X" % ord(c) for c in k) + "\t" + " ".join("%X" % ord(c) for c in v) + "\n"
                             for k, v in MARIAN_RULES.items()), encoding="utf-8")
    model = train_spm(pad_id=-1, eos_id=0, unk_id=1, bos_id=-1, normalization_rule_tsv=str(rules))
    vocab = slow_vocab(model, ["</s>", "<unk>", "<pad>"], drop=("▁a",), extra=("ᚠᚢ", ">>fr<<"))
    (out / "vocab.src.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    MarianTokenizer(str(model), str(model), str(out / "vocab.src.json")).save_pretrained(str(out))
    (out / "vocab.src.json").unlink()
    keep(out)
    write_slow(out, AutoTokenizer.from_pretrained(str(out)))


def make_m2m100():
    """M2M100Tokenizer on a SentencePiece BPE, src_lang en: as transformers 5 saves it (its
    tokenizer_config.json lists no language codes, which then are not special: transformers 5
    neither looks for them in a text nor skips them), and with them listed as
    additional_special_tokens, as the hub's checkpoints have them (tokenizer-m2m100-listed)."""
    from transformers.models.m2m_100.tokenization_m2m_100 import FAIRSEQ_LANGUAGE_CODES
    out = reset("tokenizer-m2m100")
    model = train_spm("bpe", normalization_rule_name="identity")
    vocab = slow_vocab(model, ["<s>", "<pad>", "</s>", "<unk>"], extra=("ᚠᚢ",))
    (out / "vocab.src.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    M2M100Tokenizer(str(out / "vocab.src.json"), str(model), src_lang="en", tgt_lang="fr").save_pretrained(str(out))
    (out / "vocab.src.json").unlink()
    keep(out)
    listed = reset("tokenizer-m2m100-listed")
    for f in ("vocab.json", "sentencepiece.bpe.model"):
        shutil.copy(out / f, listed / f)
    config = json.loads((out / "tokenizer_config.json").read_text(encoding="utf-8"))
    config.pop("extra_special_tokens", None)
    config["additional_special_tokens"] = [f"__{c}__" for c in FAIRSEQ_LANGUAGE_CODES["m2m100"]]
    config["src_lang"] = "fr"
    (listed / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    for d in (out, listed):
        auto = AutoTokenizer.from_pretrained(str(d))
        assert type(auto).__name__ == "M2M100Tokenizer", type(auto)
        write_slow(d, auto)


def make_refused():
    """A slow-only tokenizer parallelformers refuses (CPM's jieba segmentation), as its checkpoints
    ship it (spiece.model: Marian's model stands in; CpmTokenizer needs rjieba to load): written by hand."""
    out = reset("tokenizer-cpm-refused")
    (out / "spiece.model").write_bytes((FIXTURES / "tokenizer-marian" / "source.spm").read_bytes())
    (out / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "CpmTokenizer"}) + "\n", encoding="utf-8")
    for d in ("tokenizer-marian", "tokenizer-m2m100", "tokenizer-cpm-refused"):
        assert not (FIXTURES / d / "tokenizer.json").exists(), d


def keep(out: Path):
    """What a checkpoint's tokenizer needs; not chat templates and such."""
    for p in out.iterdir():
        if p.name not in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.json",
                          "merges.txt", "source.spm", "target.spm", "sentencepiece.bpe.model"):
            p.unlink()


def main():
    make_t5()
    make_mbart()
    make_mbart50()
    make_pegasus()
    vocab, merges = train_bpe()
    make_bart(vocab, merges)
    make_blenderbot(vocab, merges)
    make_byt5()
    make_byt5("tokenizer-byt5-old", old_config=True)
    make_marian()
    make_m2m100()
    make_refused()


if __name__ == "__main__":
    if sys.argv[1:]:  # some of them: marian m2m100 refused
        for name in sys.argv[1:]:
            globals()["make_" + name]()
    else:
        main()
