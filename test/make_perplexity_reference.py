#!/usr/bin/env python3
"""Writes test/fixtures/perplexity/: text.txt (the fixture training text's first 2000 characters)
and reference.txt, transformers' perplexity of gpt2-tiny on it for windows of 16 and 64 tokens
(`window_<n>=<perplexity> <scored tokens>`), which test_cli compares `generate --perplexity` with.

The recipe is `generate --perplexity`'s: the text tokenized as tokenizer(text) does, cut into
windows of n tokens that do not overlap; every token but a window's first is scored by the
log-softmax of the logits before it, in float64; perplexity = exp(mean negative log-likelihood).
"""

import sys
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_fixtures import FIXTURES, TRAINING_TEXT  # noqa: E402

WINDOWS = (16, 64)


def perplexity(model, ids, window):
    nll, scored = 0.0, 0
    for start in range(0, len(ids) - 1, window):
        chunk = ids[start:start + window]
        with torch.no_grad():
            logits = model(torch.tensor([chunk])).logits[0].double()
        logp = torch.log_softmax(logits, dim=-1)
        for t in range(len(chunk) - 1):
            nll -= float(logp[t, chunk[t + 1]])
            scored += 1
    return torch.exp(torch.tensor(nll / scored, dtype=torch.float64)).item(), scored


def main():
    source = FIXTURES / "gpt2-tiny"
    out = FIXTURES / "perplexity"
    out.mkdir(exist_ok=True)
    text = TRAINING_TEXT[:2000]
    (out / "text.txt").write_text(text, encoding="utf-8")
    tok = AutoTokenizer.from_pretrained(source)
    model = AutoModelForCausalLM.from_pretrained(source, dtype=torch.float32, attn_implementation="eager").eval()
    ids = tok(text)["input_ids"]
    lines = [f"model=gpt2-tiny", f"tokens={len(ids)}"]
    for window in WINDOWS:
        value, scored = perplexity(model, ids, window)
        lines.append(f"window_{window}={value:.9g} {scored}")
    (out / "reference.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
