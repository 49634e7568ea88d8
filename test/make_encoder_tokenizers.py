#!/usr/bin/env python3
"""Writes the tokenizer fixtures of encoder models (test/fixtures/tokenizer-*/), each with the
ids and decodes HF tokenizers gives.

Run from the repository root (tokenizers 0.23, transformers 5, sentencepiece installed):

    python3 test/make_encoder_tokenizers.py
    python3 test/make_tokenizer_cases.py      # then: the decodes of every fixture's cases

Each tokenizer is trained here on a small corpus (deterministic), then saved the way
transformers saves it (save_pretrained: tokenizer.json, tokenizer_config.json):

  tokenizer-bert        WordPiece (tokenizers' WordPieceTrainer, kept in vocab.txt: the trainer is
                        not deterministic), as transformers' BertTokenizer
                        builds it: BertNormalizer (lowercase, strip_accents following it),
                        BertPreTokenizer, TemplateProcessing "[CLS] $A [SEP]" / "... $B:1 [SEP]:1",
                        WordPiece decoder
  tokenizer-bert-cased  the same vocab cased, accents stripped anyway, no CJK spacing,
                        BertProcessing, max_input_chars_per_word 12, WordPiece decoder without
                        cleanup
  tokenizer-roberta     a byte-level BPE as transformers' RobertaTokenizer builds it:
                        RobertaProcessing "<s> A </s></s> B </s>" (every type id 0)
  tokenizer-unigram     Unigram (tokenizers' UnigramTrainer, kept like the WordPiece vocab) in T5's layout: Lowercase,
                        WhitespaceSplit + Metaspace, TemplateProcessing "$A </s>" / "$A </s> $B:1
                        </s>:1", Metaspace decoder
  tokenizer-unigram-fallback  its pieces with byte_fallback and the <0xXX> pieces, Metaspace
                        prepend_scheme "first" without split, LLaMA's decoder chain

Every dir gets, from the hard strings of make_fixtures.py and random strings of the pieces of
make_tokenizer_cases.py:
  cases.txt          <hex of UTF-8 input> \\t <ids>                 (add_special_tokens=False)
  cases_special.txt  the same with add_special_tokens=True
  cases_pair.txt     <hex a> \\t <hex b, or - for none> \\t <special 0/1> \\t <max_length, 0: none>
                     \\t <strategy: longest_first, only_first, only_second> \\t <ids> \\t <type ids>
                     (a failed truncation, which HF refuses, has "error" for ids and type ids)
"""
import json
import random
import shutil
import sys
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import AutoTokenizer, BertTokenizer, RobertaTokenizer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_fixtures import TOKENIZER_CASES, TRAINING_TEXT  # noqa: E402  the hard strings, defined once
from make_tokenizer_cases import random_text  # noqa: E402  random strings of the tricky pieces

FIXTURES = Path(__file__).resolve().parent / "fixtures"
RANDOM_CASES = 200

# More than English: accents, other scripts, CJK, so that the vocab has pieces for them.
EXTRA_TEXT = """\
Café, naïve résumé; Ångström über façade. Élève déjà vu, coöperate, São Paulo, Zürich.
東京都は日本の首都です。你好，世界！中文分词很有趣。 한국어 문장도 조금 있습니다. 안녕하세요 세계.
Ελληνικά γράμματα, русский язык, مرحبا بالعالم, नमस्ते दुनिया, ภาษาไทย.
Unbelievable, unaffordable, tokenization, tokenizers, subwords; the word-piece model splits them.
"""
CORPUS = (TRAINING_TEXT + EXTRA_TEXT).splitlines()
BERT_SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]

PAIRS = [
    ("Hello world", "How are you?"),
    ("", "only the second"),
    ("only the first", ""),
    ("", ""),
    ("The quick brown fox jumps over the lazy dog.", "A dog."),
    ("short", "The quick brown fox jumps over the lazy dog again and again."),
    ("café naïve", "東京都 你好"),
]
TRUNCATIONS = [(0, "longest_first"), (3, "longest_first"), (4, "longest_first"), (5, "longest_first"),
               (8, "longest_first"), (9, "longest_first"), (12, "longest_first"), (13, "longest_first"),
               (40, "longest_first"), (6, "only_first"), (9, "only_first"), (6, "only_second"),
               (12, "only_second")]


def hexs(s):
    return s.encode("utf-8").hex()


def case_texts():
    rng = random.Random("encoder-tokenizers")
    texts = list(TOKENIZER_CASES)
    while len(texts) < len(TOKENIZER_CASES) + RANDOM_CASES:
        t = random_text(rng)
        if t not in texts:
            texts.append(t)
    return texts


def write_cases(out: Path):
    """cases.txt, cases_special.txt and cases_pair.txt from tokenizers' encodings of the saved
    tokenizer.json (checked against transformers' AutoTokenizer for the plain and special ids)."""
    tok = Tokenizer.from_file(str(out / "tokenizer.json"))
    auto = AutoTokenizer.from_pretrained(str(out))
    for name, special in (("cases.txt", False), ("cases_special.txt", True)):
        lines = []
        for text in case_texts():
            ids = tok.encode(text, add_special_tokens=special).ids
            assert ids == auto(text, add_special_tokens=special)["input_ids"], (out.name, text)
            lines.append(hexs(text) + "\t" + ",".join(map(str, ids)))
        (out / name).write_text("\n".join(lines) + "\n", encoding="ascii")
    lines = []
    for a, b in PAIRS + [(TOKENIZER_CASES[-1], TOKENIZER_CASES[-2]), (TOKENIZER_CASES[-2], None)]:
        for special in (False, True):
            for max_length, strategy in TRUNCATIONS:
                if max_length:
                    tok.enable_truncation(max_length, strategy=strategy)
                else:
                    tok.no_truncation()
                added = tok.post_processor.num_special_tokens_to_add(b is not None) if tok.post_processor else 0
                try:
                    enc = tok.encode(a, b, add_special_tokens=special) if b is not None else \
                        tok.encode(a, add_special_tokens=special)
                    ids, types = ",".join(map(str, enc.ids)), ",".join(map(str, enc.type_ids))
                except Exception:  # a truncation HF refuses (sequence too short, no second one)
                    ids = types = "error"
                if special and 0 < max_length < added:
                    # HF's max_length - added wraps around (usize): no truncation at all. We refuse.
                    ids = types = "error"
                lines.append("\t".join([hexs(a), "-" if b is None else hexs(b), str(int(special)), str(max_length),
                                        strategy, ids, types]))
    tok.no_truncation()
    (out / "cases_pair.txt").write_text("\n".join(lines) + "\n", encoding="ascii")


def reset(name: str) -> Path:
    out = FIXTURES / name
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    return out


def keep_tokenizer_files(out: Path):
    """Only what a model directory needs for its tokenizer."""
    for p in out.iterdir():
        if p.name not in ("tokenizer.json", "tokenizer_config.json"):
            p.unlink()


def train_wordpiece() -> dict:
    """The WordPiece vocab, trained once: tokenizers' WordPieceTrainer breaks ties differently from
    run to run, so the vocab is kept (tokenizer-bert/vocab.txt, as BERT checkpoints ship it) and
    trained again only when that file is missing."""
    kept = FIXTURES / "tokenizer-bert" / "vocab.txt"
    if kept.exists():
        return {t: i for i, t in enumerate(kept.read_text(encoding="utf-8").split("\n")[:-1])}
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(vocab_size=420, special_tokens=BERT_SPECIALS, show_progress=False)
    tok.train_from_iterator(CORPUS, trainer)
    return tok.get_vocab()


def make_bert(vocab: dict):
    out = reset("tokenizer-bert")
    BertTokenizer(vocab=vocab).save_pretrained(str(out))
    keep_tokenizer_files(out)
    (out / "vocab.txt").write_text("".join(t + "\n" for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])),
                                   encoding="utf-8")
    write_cases(out)


def make_bert_cased(vocab: dict):
    """The other BertNormalizer options, BertProcessing, a short max_input_chars_per_word."""
    out = reset("tokenizer-bert-cased")
    BertTokenizer(vocab=vocab, do_lower_case=False, strip_accents=True, tokenize_chinese_chars=False).save_pretrained(
        str(out))
    keep_tokenizer_files(out)
    spec = json.loads((out / "tokenizer.json").read_text(encoding="utf-8"))
    spec["model"]["max_input_chars_per_word"] = 12
    spec["post_processor"] = {"type": "BertProcessing", "sep": ["[SEP]", vocab["[SEP]"]], "cls": ["[CLS]", vocab["[CLS]"]]}
    spec["decoder"]["cleanup"] = False
    (out / "tokenizer.json").write_text(json.dumps(spec, ensure_ascii=False, indent=2), encoding="utf-8")
    write_cases(out)


def make_roberta():
    """A byte-level BPE as transformers' RobertaTokenizer builds it: RobertaProcessing."""
    out = reset("tokenizer-roberta")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=420, special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(CORPUS, trainer)
    spec = json.loads(tok.to_str())
    RobertaTokenizer(vocab=spec["model"]["vocab"], merges=[tuple(m) for m in spec["model"]["merges"]]).save_pretrained(
        str(out))
    keep_tokenizer_files(out)
    write_cases(out)


def train_unigram() -> Tokenizer:
    """Lowercase, WhitespaceSplit + Metaspace, and Unigram pieces trained once: like the WordPiece
    trainer, tokenizers' UnigramTrainer differs from run to run, so the pieces are kept (those of
    tokenizer-unigram/tokenizer.json) and trained again only when that file is missing."""
    tok = Tokenizer(models.Unigram())
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(),
                                                 pre_tokenizers.Metaspace(prepend_scheme="always")])
    kept = FIXTURES / "tokenizer-unigram" / "tokenizer.json"
    if kept.exists():
        model = json.loads(kept.read_text(encoding="utf-8"))["model"]
        tok.model = models.Unigram([tuple(p) for p in model["vocab"]], model["unk_id"], False)
        tok.add_special_tokens(["<pad>", "</s>", "<unk>"])
        return tok
    trainer = trainers.UnigramTrainer(vocab_size=300, special_tokens=["<pad>", "</s>", "<unk>"], unk_token="<unk>",
                                      show_progress=False)
    tok.train_from_iterator(CORPUS, trainer)
    return tok


def make_unigram():
    """T5's layout on a Unigram trained by tokenizers: WhitespaceSplit then Metaspace, "$A </s>"."""
    tok = train_unigram()
    out = reset("tokenizer-unigram")
    eos = tok.token_to_id("</s>")
    tok.post_processor = processors.TemplateProcessing(single="$A </s>", pair="$A </s> $B:1 </s>:1",
                                                       special_tokens=[("</s>", eos)])
    tok.decoder = decoders.Metaspace(prepend_scheme="always")
    tok.save(str(out / "tokenizer.json"))
    (out / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "PreTrainedTokenizerFast",
                                                           "eos_token": "</s>", "unk_token": "<unk>",
                                                           "pad_token": "<pad>"}, indent=2) + "\n")
    write_cases(out)


def make_unigram_fallback():
    """The same pieces with byte_fallback (<0x00> .. <0xFF> scored below every piece), Metaspace
    prepending to the first piece only and not splitting, LLaMA's decoder chain."""
    out = reset("tokenizer-unigram-fallback")
    tok = train_unigram()
    spec = json.loads(tok.to_str())
    low = min(score for _, score in spec["model"]["vocab"])
    spec["model"]["vocab"] += [["<0x%02X>" % b, low - 1.0] for b in range(256)]
    spec["model"]["byte_fallback"] = True
    spec["normalizer"] = None
    spec["pre_tokenizer"] = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": False}
    spec["decoder"] = json.loads(
        '{"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"\u2581"},"content":" "},'
        '{"type":"ByteFallback"},{"type":"Fuse"},{"type":"Strip","content":" ","start":1,"stop":0}]}')
    Tokenizer.from_str(json.dumps(spec)).save(str(out / "tokenizer.json"))
    (out / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "PreTrainedTokenizerFast",
                                                           "unk_token": "<unk>"}, indent=2) + "\n")
    write_cases(out)


def main():
    vocab = train_wordpiece()
    make_bert(vocab)
    make_bert_cased(vocab)
    make_roberta()
    make_unigram()
    make_unigram_fallback()


if __name__ == "__main__":
    main()
