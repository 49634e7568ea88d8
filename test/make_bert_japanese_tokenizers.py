#!/usr/bin/env python3
"""Writes the fixtures of BertJapaneseTokenizer (a Python class of transformers 5.24, the reference;
no tokenizer.json) with its basic word split:

    python3 test/make_bert_japanese_tokenizers.py
    python3 test/make_tokenizer_cases.py        # the decodes of every fixture

  tokenizer-bert-japanese-char   subword_tokenizer_type "character": vocab.txt of the special tokens
                                 and the characters of the corpus (NFKC), every 13th left out (unk)
  tokenizer-bert-japanese-wp     subword_tokenizer_type "wordpiece": a WordPiece vocabulary trained
                                 here (tokenizers' WordPieceTrainer) on the basic split's words
  tokenizer-bert-japanese-lower  "character" with do_lower_case (lower() and accents stripped)

Each dir gets cases.txt and cases_special.txt (transformers' ids without / with special tokens for
texts() + SLOW_TEXTS + JAPANESE_TEXTS) and the decodes of make_seq2seq_tokenizers.write_decodes.
MeCab, Sudachi and Juman++ need dictionaries: parallelformers refuses them by name (test_tokenizer.c).
"""
import json
import sys
import unicodedata
from pathlib import Path

from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from transformers import AutoTokenizer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_encoder_tokenizers import CORPUS, hexs, reset  # noqa: E402
from make_seq2seq_tokenizers import SLOW_TEXTS, texts, write_decodes  # noqa: E402

JAPANESE_TEXTS = ["東京都は日本の首都です。", "ｶﾀｶﾅ と ﾊﾝｶｸ、全角ＡＢＣ１２３！", "吾輩は猫である。名前はまだ無い。",
                  "ＣＡＦÉ Café café ÀÉÎ", "（括弧）「引用」『二重』【隅付き】", "①②③ ㍻ ㌔ ｷﾛ", "a\u3000b\u00a0c\u2028d\x85e",
                  "[CLS] 文 [SEP] [MASK] [UNK] [PAD]", "\x00a\ufffdb\u200bc\x07d", "ΣΟΣ İ", "東京タワー😀👍🏽"]
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def basic_words(lower):
    from transformers.models.bert_japanese.tokenization_bert_japanese import BasicTokenizer
    basic = BasicTokenizer(do_lower_case=lower, tokenize_chinese_chars=False)
    return [w for line in CORPUS + JAPANESE_TEXTS for w in basic.tokenize(line)]


def write_config(out: Path, **config):
    (out / "tokenizer_config.json").write_text(
        json.dumps(dict(tokenizer_class="BertJapaneseTokenizer", word_tokenizer_type="basic", **config)) + "\n",
        encoding="utf-8")


def write_cases(out: Path):
    auto = AutoTokenizer.from_pretrained(str(out))
    assert type(auto).__name__ == "BertJapaneseTokenizer", type(auto)
    for name, special in (("cases.txt", False), ("cases_special.txt", True)):
        lines = [hexs(t) + "\t" + ",".join(map(str, auto(t, add_special_tokens=special)["input_ids"]))
                 for t in texts() + SLOW_TEXTS + JAPANESE_TEXTS]
        (out / name).write_text("\n".join(lines) + "\n", encoding="ascii")
    write_decodes(out)


def make_char(name, lower):
    out = reset(name)
    chars = []
    for w in basic_words(lower):
        for ch in unicodedata.normalize("NFKC", w):
            if ch not in chars:
                chars.append(ch)
    tokens = SPECIALS + [c for i, c in enumerate(chars) if i % 13 != 12]
    (out / "vocab.txt").write_text("".join(t + "\n" for t in tokens), encoding="utf-8")
    write_config(out, subword_tokenizer_type="character", do_lower_case=lower)
    write_cases(out)


def make_wordpiece():
    out = reset("tokenizer-bert-japanese-wp")
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    trainer = trainers.WordPieceTrainer(vocab_size=600, special_tokens=SPECIALS, show_progress=False)
    tok.train_from_iterator([" ".join(basic_words(False))], trainer)
    vocab = json.loads(tok.to_str())["model"]["vocab"]
    tokens = sorted(vocab, key=vocab.get)
    (out / "vocab.txt").write_text("".join(t + "\n" for t in tokens), encoding="utf-8")
    write_config(out, subword_tokenizer_type="wordpiece")
    write_cases(out)


def main():
    make_char("tokenizer-bert-japanese-char", False)
    make_char("tokenizer-bert-japanese-lower", True)
    make_wordpiece()


if __name__ == "__main__":
    main()
