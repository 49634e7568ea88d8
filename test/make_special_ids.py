"""Writes test/fixtures/special_ids.txt: for every fixture directory with a tokenizer, the
bos_token_id and eos_token_id that transformers' AutoTokenizer gives (-1 for None), one
`<dir> <bos> <eos>` line each. test_tokenizer.c checks pf_tokenizer_bos_id / eos_id against it.
Also test/fixtures/skipped_special_ids.txt: `<dir> <id>,<id>,...`, the ids that
decode(..., skip_special_tokens=True) leaves out, for pf_tokenizer_is_special.

Run from the repository root: python3 test/make_special_ids.py
"""
import json
from pathlib import Path

from transformers import AutoTokenizer

FIXTURES = Path(__file__).resolve().parent / "fixtures"
# Slow-only tokenizers parallelformers refuses (make_seq2seq_tokenizers.py): no ids to compare.
REFUSED = {"CpmTokenizer"}


def main():
    lines, skipped_lines = [], []
    for d in sorted(p for p in FIXTURES.iterdir() if p.is_dir()):
        config = d / "tokenizer_config.json"
        cls = json.loads(config.read_text(encoding="utf-8")).get("tokenizer_class") if config.exists() else None
        if cls in REFUSED or not ((d / "tokenizer.json").exists() or (d / "vocab.json").exists() or
                                  (d / "bpe.codes").exists() or (d / "vocab.txt").exists() or
                                  cls == "ByT5Tokenizer"):
            continue
        tok = AutoTokenizer.from_pretrained(d)
        ids = [tok.bos_token_id, tok.eos_token_id]
        lines.append(" ".join([d.name] + [str(-1 if i is None else i) for i in ids]))
        skipped = [i for i in range(len(tok)) if tok.decode([i]) and not tok.decode([i], skip_special_tokens=True)]
        skipped_lines.append(f"{d.name} {','.join(map(str, skipped))}")
    (FIXTURES / "special_ids.txt").write_text("\n".join(lines) + "\n")
    print(f"wrote {len(lines)} lines to {FIXTURES / 'special_ids.txt'}")
    (FIXTURES / "skipped_special_ids.txt").write_text("\n".join(skipped_lines) + "\n")
    print(f"wrote {len(skipped_lines)} lines to {FIXTURES / 'skipped_special_ids.txt'}")


if __name__ == "__main__":
    main()
