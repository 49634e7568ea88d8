#!/usr/bin/env python3
"""Writes the fixtures of the slow-only tokenizers that run the Moses pipeline before a "</w>" BPE
(XLMTokenizer, FlaubertTokenizer), with the ids and decodes transformers 5 gives (both classes are in
transformers 5.24, the reference; they call sacremoses, installed for this script only:
pip install sacremoses; 0.2.0 here).

Run from the repository root, then the decodes of every fixture:

    python3 test/make_moses_tokenizers.py        # or only some: xlm flaubert ...
    python3 test/make_tokenizer_cases.py

There is no network to the hub, so each vocabulary is trained here (tokenizers' BpeTrainer with
end_of_word_suffix "</w>") on the words the class's own pipeline makes of the encoder corpus and
MOSES_TEXTS, written as the checkpoints ship them, and loaded with AutoTokenizer:

  tokenizer-xlm-files          XLMTokenizer, do_lowercase_and_remove_accent (its default): the
                               words lowercased and stripped of accents; merges.txt lines
                               "a b <count>" as XLM's files have them
  tokenizer-xlm-cased          XLMTokenizer with do_lowercase_and_remove_accent false
  tokenizer-flaubert-files     FlaubertTokenizer (French rules), do_lowercase false
  tokenizer-flaubert-lower     FlaubertTokenizer with do_lowercase true

Each vocabulary lacks every 13th token the merges make, so unknown pieces map to <unk>. Each dir
gets cases.txt and cases_special.txt (transformers' ids without / with special tokens for texts() +
SLOW_TEXTS + BPE_TEXTS + MOSES_TEXTS) and the decodes of make_seq2seq_tokenizers.write_decodes.
"""
import json
import sys
from pathlib import Path

from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from transformers import AutoTokenizer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_bpe_file_tokenizers import BPE_TEXTS  # noqa: E402
from make_encoder_tokenizers import CORPUS, hexs, reset  # noqa: E402
from make_seq2seq_tokenizers import SLOW_TEXTS, texts, write_decodes  # noqa: E402

# What the Moses rules treat apart: contractions and apostrophes (English, French), nonbreaking
# prefixes (listed, numeric-only, a lowercase word after), final periods, multi-dots and a text
# that says DOTMULTI, commas in and out of numbers, quotes before / after , and ., no-break spaces
# (French quotes, digits, units), full-width punctuation and digits, dashes, symbols, slashes,
# escapes FSMT would make, control and format characters, accents, sigma, CJK, emoji.
MOSES_TEXTS = [
    "Mr. Smith went to Washington. He didn't go.", "I can't, won't, shouldn't've. It's Jones' house.",
    "the 90's and 'quoted' words", "rock 'n' roll 'tis", "L'homme qu'il a vu aujourd'hui, c'est l'été.",
    "Dr. No. 5 and No. six; e.g. this, i.e. that. U.S.A. is big.", "Art. 3 Abs. 2 bzw. z.B. der 3. Mai",
    "Wait... what?! Really..?  Yes.... ok . .", "a..b...c", "DOTMULTI DOTDOTMULTI x.DOTMULTI",
    "5,300 and 1,2,3 a,b , c,", "1,000.50 $ 3.14 % 42%", "\"Hello,\" she said. \"Bye\".",
    "«\u00a0Bonjour\u00a0» dit-il « salut »", "1\u00a0000\u00a0000 n\u00ba\u00a05 20\u00a0\u00baC 3\u00a0cm !",
    "a\u00a0:b\u00a0;c\u00a0?d\u00a0!e,\u00a0f 5\u00a0%", "„Anführung“ und ‚so‘ – oder — nicht",
    "it’s don’t ‘quote’ ´acute´´ `grave` ''two''", "Full，width。  stop．x：y？（z）！【a】《b》「c」 ％ １２３ ～ ━ 〈d〉",
    "and/or a-b--c well-known co-operate -x- @user #tag $5 £3 €2 ¥1 © ® ™ ° § ¶ • ^ _ + = * & | < > [ ] { } \\",
    "http://example.com/a/b.html user@example.com <b>bold</b> &amp; x&y", "(a) ( b ) (c)). d) : e ;",
    "tab\there\nnew\r\nline\x0bvt\x0cff\x1c\x1d\x1e\x1f end", "zero\u200bwidth\u200djoiner\ufeffbom\u00adshy",
    "Ça été ÉLÈVE Über Straße naïve coöperate", "ΣΟΣ ΟΔΟΣ. Σ aΣ İstanbul", "東京都は日本。你好，世界！",
    "emoji 😀👍🏽 🇫🇷 ❤️ x", "  lots   of    spaces  ", "'", "''", "\"", ".", "..", "...", ",", "a.", "A.",
    "end.'", "He said 'hi.'", "x . '", "3.", "No. 7", "no. 7", "St. Louis", "etc. and", "Jan. 5th", "p. 12",
    "word.", "Word. Word.", "ABC. def", "x' y' 'z", "5's 5'x", "'s 'S 'm 'd 'll 're 've n't", "\x00\x01a\x7f",
    "\u0301acute alone", "\ue000private \U000e0001tag", "\ufff0unassigned\U0003ffff", "----", "--a--", "a -- b",
]


def words_of(pipeline, lines):
    out = []
    for line in lines:
        out.extend(pipeline(line))
    return out


def train(words):
    """A "</w>" BPE of the words: its vocab (tokens by id) and merges (pairs)."""
    tok = Tokenizer(models.BPE(unk_token="<unk>", end_of_word_suffix="</w>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    trainer = trainers.BpeTrainer(vocab_size=700, end_of_word_suffix="</w>", show_progress=False)
    tok.train_from_iterator([" ".join(words)], trainer)
    spec = json.loads(tok.to_str())
    vocab = spec["model"]["vocab"]
    return sorted(vocab, key=vocab.get), [tuple(m) for m in spec["model"]["merges"]]


def moses_words(lang, lowercase, flaubert=False):
    """The words XLM's / FlauBERT's _tokenize gives a text (before bpe), from the class's own code."""
    import unicodedata

    import sacremoses
    from transformers.models.xlm.tokenization_xlm import (lowercase_and_remove_accent, remove_non_printing_char,
                                                          replace_unicode_punct)

    norm = sacremoses.MosesPunctNormalizer(lang=lang)
    tok = sacremoses.MosesTokenizer(lang=lang)

    def run(text):
        if flaubert:
            text = unicodedata.normalize("NFC", text.replace("``", '"').replace("''", '"'))
            if lowercase:
                text = text.lower()
        text = remove_non_printing_char(norm.normalize(replace_unicode_punct(text)))
        words = tok.tokenize(text, return_str=False, escape=False)
        if lowercase and not flaubert:
            words = lowercase_and_remove_accent(words)
        return [w for w in words if w]
    return run


def write_files(out: Path, tokens, merges, counts: bool):
    first = ["<s>", "</s>", "<pad>", "<unk>"] + [f"<special{i}>" for i in range(10)]
    vocab = {t: i for i, t in enumerate(first)}
    for i, t in enumerate(tokens):
        if i % 13 != 12:
            vocab.setdefault(t, len(vocab))
    (out / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False, indent=2), encoding="utf-8")
    lines = [f"{a} {b} {1000 - i}" if counts else f"{a} {b}" for i, (a, b) in enumerate(merges)]
    (out / "merges.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_cases(out: Path, class_name: str):
    auto = AutoTokenizer.from_pretrained(str(out))
    assert type(auto).__name__ == class_name, type(auto)
    assert not (out / "tokenizer.json").exists(), out
    for name, special in (("cases.txt", False), ("cases_special.txt", True)):
        lines = [hexs(t) + "\t" + ",".join(map(str, auto(t, add_special_tokens=special)["input_ids"]))
                 for t in texts() + SLOW_TEXTS + BPE_TEXTS + MOSES_TEXTS]
        (out / name).write_text("\n".join(lines) + "\n", encoding="ascii")
    write_decodes(out)


def make(name, class_name, config, lang, lowercase, flaubert, counts):
    out = reset(name)
    tokens, merges = train(words_of(moses_words(lang, lowercase, flaubert), CORPUS + MOSES_TEXTS))
    write_files(out, tokens, merges, counts)
    (out / "tokenizer_config.json").write_text(json.dumps(dict(tokenizer_class=class_name, **config)) + "\n",
                                               encoding="utf-8")
    write_cases(out, class_name)


def make_xlm():
    make("tokenizer-xlm-files", "XLMTokenizer", {}, "en", True, False, True)


def make_xlm_cased():
    make("tokenizer-xlm-cased", "XLMTokenizer", {"do_lowercase_and_remove_accent": False}, "en", False, False, False)


def make_flaubert():
    make("tokenizer-flaubert-files", "FlaubertTokenizer", {}, "fr", False, True, False)


def make_flaubert_lower():
    make("tokenizer-flaubert-lower", "FlaubertTokenizer", {"do_lowercase": True}, "fr", True, True, True)


def main():
    for name in sys.argv[1:] or ["xlm", "xlm_cased", "flaubert", "flaubert_lower"]:
        globals()["make_" + name]()


if __name__ == "__main__":
    main()
