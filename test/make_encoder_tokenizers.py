#!/usr/bin/env python3
"""Writes the tokenizer fixtures of encoder models (test/fixtures/tokenizer-*/), each with the
ids and decodes HF tokenizers gives.

Run from the repository root (tokenizers 0.23, transformers 5, sentencepiece installed; the
SentencePiece models are read without protobuf, by spm_charsmap.py):

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
  tokenizer-xlmr        a SentencePiece Unigram (the sentencepiece trainer, nmt_nfkc) as
                        transformers' XLMRobertaTokenizer builds it: Precompiled with
                        SentencePiece's own charsmap (240 KB), WhitespaceSplit + Metaspace,
                        "<s> $A </s>" / "<s> $A </s> </s> $B </s>"
  tokenizer-t5          T5's layout on a charsmap built here (spm_charsmap.py) that shows grapheme
                        clusters in the ids, with Strip and Replace " {2,}" after it; its cases
                        add random strings of GRAPHEME_POOL
  tokenizer-albert      ALBERT's chain as transformers' AlbertTokenizer builds it: Replace, NFKD,
                        StripAccents, Lowercase, Precompiled (the same grapheme charsmap)
  tokenizer-deberta-v3  a SentencePiece Unigram in DeBERTa-v3's layout ([PAD] [CLS] [SEP] [UNK], the
                        pieces, [MASK] last) as transformers' DebertaV2Tokenizer builds it: Replace
                        "\s{2,}|[\n\r\t]" by a space, NFC, Strip right, Metaspace (prepend always),
                        "[CLS] $A [SEP]" / "... $B:1 [SEP]:1"
  tokenizer-big-bird    a SentencePiece Unigram in BigBird's layout (<pad> </s> <s> <unk>, the pieces;
                        [SEP] [CLS] [MASK] added) as transformers' BigBirdTokenizer builds it: Strip,
                        Replace " {2,}", Metaspace (prepend always), "[CLS] $A [SEP]" / "... $B:1 [SEP]:1"
  tokenizer-barthez     BARThez's sentencepiece.bpe.model (<s> <pad> </s> <unk>) converted by transformers 5's
                        BarthezTokenizer and saved as tokenizer.json (Replace "\\s{2,}|[\\n\\r\\t]", NFC,
                        Strip right, Metaspace, Unigram)

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

import tempfile

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import (AlbertTokenizer, AutoTokenizer, BertTokenizer, BigBirdTokenizer, DebertaV2Tokenizer,
                          RobertaTokenizer, T5Tokenizer, XLMRobertaTokenizer)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_fixtures import TOKENIZER_CASES, TRAINING_TEXT  # noqa: E402  the hard strings, defined once
from make_tokenizer_cases import PIECES, random_text  # noqa: E402  random strings of the tricky pieces
from spm_charsmap import build_charsmap, read_model  # noqa: E402

FIXTURES = Path(__file__).resolve().parent / "fixtures"
RANDOM_CASES = 200
GRAPHEME_CASES = 300

# Characters of every grapheme-cluster class (UAX #29): CR, LF, controls, Extend, ZWJ, SpacingMark,
# Prepend, regional indicators, Hangul jamo and syllables, pictographs, Indic conjunct parts, and
# letters of 1 to 4 bytes (a cluster shorter than 6 bytes goes whole to a Precompiled charsmap).
GRAPHEME_POOL = [
    0x0D, 0x0A, 0x01, 0x7F, 0x85, 0x200B, 0x2028, 0xFEFF, 0xE0001, 0x20, 0x61, 0x62, 0x65, 0x41, 0x31, 0x21,
    0xE9, 0xF1, 0x3B1, 0x416, 0x5D0, 0x627, 0xFF21, 0x2460, 0xBD, 0x1100, 0x1161, 0x11A8, 0xAC00, 0xAC01, 0x4E2D,
    0x301, 0x300, 0x345, 0x20E3, 0xFE0F, 0x1F3FB, 0xE0020, 0x200D, 0x200C, 0x903, 0x93E, 0x1D166, 0x600, 0x605,
    0x6DD, 0x110BD, 0x1F1E6, 0x1F1FA, 0x1F1F8, 0xA9, 0x2764, 0x1F468, 0x1F469, 0x915, 0x937, 0x94D, 0x93C,
    0x10400, 0x1F600, 0x20000,
]

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


def case_texts(grapheme_cases=False):
    rng = random.Random("encoder-tokenizers")
    texts = list(TOKENIZER_CASES)
    while len(texts) < len(TOKENIZER_CASES) + RANDOM_CASES:
        t = random_text(rng)
        if t not in texts:
            texts.append(t)
    while grapheme_cases and len(texts) < len(TOKENIZER_CASES) + RANDOM_CASES + GRAPHEME_CASES:
        t = "".join(chr(rng.choice(GRAPHEME_POOL)) for _ in range(rng.randint(1, 10)))
        if t not in texts:
            texts.append(t)
    return texts


def write_cases(out: Path, grapheme_cases=False, extra_texts=()):
    """cases.txt, cases_special.txt and cases_pair.txt from tokenizers' encodings of the saved
    tokenizer.json (transformers' AutoTokenizer is compared: the cases it encodes differently are
    counted on stdout); with grapheme_cases, random strings of GRAPHEME_POOL too; extra_texts last."""
    tok = Tokenizer.from_file(str(out / "tokenizer.json"))
    auto = AutoTokenizer.from_pretrained(str(out))
    differ = 0
    for name, special in (("cases.txt", False), ("cases_special.txt", True)):
        lines = []
        for text in case_texts(grapheme_cases) + list(extra_texts):
            ids = tok.encode(text, add_special_tokens=special).ids
            differ += ids != auto(text, add_special_tokens=special)["input_ids"]
            lines.append(hexs(text) + "\t" + ",".join(map(str, ids)))
        (out / name).write_text("\n".join(lines) + "\n", encoding="ascii")
    print(f"{out.name}: transformers encodes {differ} cases differently")
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


def train_spm(model_type="unigram", **options) -> Path:
    """A SentencePiece model (Unigram unless asked) of the corpus (and of the random strings' pieces, so that most of
    their characters are pieces), deterministic with one thread; its path."""
    import sentencepiece as spm
    lines = CORPUS + ["".join(PIECES), "".join(chr(cp) for cp in GRAPHEME_POOL)]
    path = Path(tempfile.mkdtemp()) / "spm.model"
    with open(path, "wb") as f:
        spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_writer=f, vocab_size=360,
                                       model_type=model_type, character_coverage=1.0, num_threads=1, minloglevel=2,
                                       hard_vocab_limit=False, **options)
    return path


def make_xlmr():
    """SentencePiece's own nmt_nfkc charsmap, as transformers' XLMRobertaTokenizer builds the
    tokenizer from a SentencePiece model (fairseq's ids: <s> <pad> </s> <unk>, the pieces, <mask>)."""
    pieces, _, charsmap = read_model(train_spm())
    vocab = [("<s>", 0.0), ("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0)] + [(p, sc) for p, sc, _ in pieces[3:]]
    vocab.append(("<mask>", 0.0))
    out = reset("tokenizer-xlmr")
    XLMRobertaTokenizer(vocab=vocab, _spm_precompiled_charsmap=charsmap).save_pretrained(str(out))
    keep_tokenizer_files(out)
    write_cases(out)


def grapheme_rules() -> dict:
    """A charsmap that shows grapheme clusters in ids: every pool character maps to itself (a
    cluster shorter than 6 bytes keeps its first character only), a few as SentencePiece's
    nmt_nfkc maps them (a key of two characters, a deletion, a replacement longer than its key)."""
    rules = {chr(cp): chr(cp) for cp in GRAPHEME_POOL}
    rules.update({"\r": " ", "\u200b": "", "\uff21": "A", "e\u0301": "\u00e9", "\u2460": "(1)", "\u00bd": "1/2",
                  "\u1100\u1161": "\uac00"})
    return rules


def make_t5():
    """T5's layout (pad, eos, unk first; "$A </s>"; extra ids) with the normalizer of transformers'
    older SpmConverter (Precompiled, Strip right, Replace " {2,}" by the meta space), on the
    grapheme charsmap; every pool character is a piece, so that the ids show what it became."""
    pieces, _, _ = read_model(train_spm(pad_id=0, eos_id=1, unk_id=2, bos_id=-1, normalization_rule_name="identity"))
    vocab = [(p, sc) for p, sc, _ in pieces]
    low = min(sc for _, sc in vocab) - 1.0
    have = {p for p, _ in vocab}
    vocab += [(chr(cp), low) for cp in GRAPHEME_POOL if chr(cp) not in have and not chr(cp).isspace()]
    out = reset("tokenizer-t5")
    tok = T5Tokenizer(vocab=vocab, _spm_precompiled_charsmap=build_charsmap(grapheme_rules()), extra_ids=3)
    tok.backend_tokenizer.normalizer = normalizers.Sequence([
        tok.backend_tokenizer.normalizer, normalizers.Strip(left=False, right=True),
        normalizers.Replace(Regex(" {2,}"), "\u2581")])
    tok.save_pretrained(str(out))
    keep_tokenizer_files(out)
    write_cases(out, grapheme_cases=True)


def make_albert():
    """ALBERT's normalizer chain as transformers' AlbertTokenizer builds it (Replace `` and '' by ",
    NFKD, StripAccents, Lowercase, Precompiled), on the grapheme charsmap; "[CLS] $A [SEP]"."""
    pieces, _, _ = read_model(train_spm(pad_id=0, unk_id=1, bos_id=-1, eos_id=-1, normalization_rule_name="identity",
                                        control_symbols=["[CLS]", "[SEP]", "[MASK]"]))
    out = reset("tokenizer-albert")
    AlbertTokenizer(vocab=[(p, sc) for p, sc, _ in pieces], _spm_precompiled_charsmap=build_charsmap(grapheme_rules())
                    ).save_pretrained(str(out))
    keep_tokenizer_files(out)
    write_cases(out, grapheme_cases=True)


def make_deberta_v3():
    """DeBERTa-v3's spm.model layout ([PAD] [CLS] [SEP] [UNK] = 0..3, [MASK] after the pieces), saved
    by DebertaV2Tokenizer as transformers 5 saves a DeBERTa-v3 checkpoint's tokenizer."""
    pieces, _, _ = read_model(train_spm(pad_id=0, bos_id=1, eos_id=2, unk_id=3, pad_piece="[PAD]", bos_piece="[CLS]",
                                        eos_piece="[SEP]", unk_piece="[UNK]", normalization_rule_name="identity"))
    vocab = [(p, sc) for p, sc, _ in pieces] + [("[MASK]", 0.0)]
    out = reset("tokenizer-deberta-v3")
    DebertaV2Tokenizer(vocab=vocab).save_pretrained(str(out))
    keep_tokenizer_files(out)
    write_cases(out)


def make_big_bird():
    """BigBird's spiece.model layout (<pad> </s> <s> <unk> = 0..3, then the pieces), saved by
    BigBirdTokenizer as transformers 5 saves a BigBird checkpoint's tokenizer: Strip, Replace " {2,}",
    Metaspace (prepend always, split), Unigram; [SEP], [CLS] and [MASK] added after the pieces;
    "[CLS] $A [SEP]" / "... $B:1 [SEP]:1"."""
    pieces, _, _ = read_model(train_spm(pad_id=0, eos_id=1, bos_id=2, unk_id=3, normalization_rule_name="identity"))
    out = reset("tokenizer-big-bird")
    BigBirdTokenizer(vocab=[(p, sc) for p, sc, _ in pieces]).save_pretrained(str(out))
    keep_tokenizer_files(out)
    write_cases(out)


def make_barthez():
    """BARThez as its checkpoints ship it (moussaKam/barthez: sentencepiece.bpe.model, fairseq's <s> <pad>
    </s> <unk> = 0..3): transformers 5's BarthezTokenizer converts the model (Replace "\\s{2,}|[\\n\\r\\t]",
    NFC, Strip right, Metaspace, Unigram) and saves it as tokenizer.json, which parallelformers reads."""
    model = train_spm(bos_id=0, pad_id=1, eos_id=2, unk_id=3, normalization_rule_name="identity")
    out = reset("tokenizer-barthez")
    shutil.copy(model, out / "sentencepiece.bpe.model")
    (out / "tokenizer_config.json").write_text('{"tokenizer_class": "BarthezTokenizer"}\n', encoding="utf-8")
    auto = AutoTokenizer.from_pretrained(str(out))
    assert type(auto).__name__ == "BarthezTokenizer", type(auto)
    auto.save_pretrained(str(out))
    keep_tokenizer_files(out)
    write_cases(out)


def main():
    if len(sys.argv) > 1:  # only some: bert roberta ... barthez
        for name in sys.argv[1:]:
            globals()["make_" + name]()
        return
    vocab = train_wordpiece()
    make_bert(vocab)
    make_bert_cased(vocab)
    make_roberta()
    make_unigram()
    make_unigram_fallback()
    make_xlmr()
    make_t5()
    make_albert()
    make_deberta_v3()
    make_big_bird()
    make_barthez()


if __name__ == "__main__":
    main()
