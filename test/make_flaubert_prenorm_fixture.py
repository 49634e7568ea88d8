#!/usr/bin/env python3
"""Writes test/fixtures/flaubert-prenorm and -prenorm-mlm: FlauBERT with pre_norm (each block's
norms before its attention and MLP, none after the last). transformers 5.24's FlaubertModel fails
on pre_norm (it indexes its EncoderDecoderCache per layer), so this runs with the last 4.x release:

    /work/venv-tf4/bin/python test/make_flaubert_prenorm_fixture.py

(the venv of test/make_retribert_fixture.py). The layout is make_encoder_fixtures.py's: the
encoder rows, each run alone and in the right-padded batch; the bare model given 3 languages per
token (n_langs 3), the masked LM none; pooled.bin the first token's state (SequenceSummary's input,
what the library pools)."""
import shutil
from pathlib import Path

import torch
import transformers
from transformers import FlaubertConfig, FlaubertModel, FlaubertWithLMHeadModel

assert transformers.__version__.startswith("4."), "pre_norm needs transformers 4 (see the docstring)"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
ROWS = [[2, 17, 45, 88, 9, 63, 3], [2, 5, 77, 31, 101, 3, 54, 12, 96, 40, 8, 3], [2, 119, 64, 3]]
LANGS = [[1] * 7, [0] * 6 + [2] * 6, [2] * 4]
# make_encoder_fixtures.py's XLM_SHAPE (4 heads: 3 ranks split them 2, 1, 1; weights of 0.2)
SHAPE = dict(vocab_size=120, emb_dim=48, n_layers=2, n_heads=4, max_position_embeddings=32, dropout=0.0,
             attention_dropout=0.0, embed_init_std=0.2, init_std=0.2, layer_norm_eps=1e-12, pre_norm=True)


def run(model, rows, langs):
    width = max(len(r) for r in rows)
    ids = torch.tensor([r + [2] * (width - len(r)) for r in rows])
    mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows])
    kwargs = dict(input_ids=ids, attention_mask=mask, output_hidden_states=True)
    if langs:
        kwargs["langs"] = torch.tensor([l + [0] * (width - len(l)) for l in langs])
    with torch.no_grad():
        out = model(**kwargs)
    last = out.hidden_states[-1] if hasattr(out, "hidden_states") and out.hidden_states else out.last_hidden_state
    real = mask.bool()
    logits = out.logits[real] if hasattr(out, "logits") else None
    return last[real], last[:, 0], logits


def make(name, model_class, seed, n_langs):
    torch.manual_seed(seed)
    out = FIXTURES / name
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    model_class(FlaubertConfig(**SHAPE, n_langs=n_langs)).eval().save_pretrained(out, safe_serialization=True)
    model = model_class.from_pretrained(out, attn_implementation="eager").eval()
    langs = LANGS if n_langs > 1 else None
    hidden, pooled, logits = run(model, ROWS, langs)
    alone = torch.cat([run(model, [r], langs and [langs[i]])[0] for i, r in enumerate(ROWS)])
    assert torch.allclose(alone, hidden, atol=1e-5), f"{name}: padding changed the outputs"
    post = model_class.from_pretrained(out, attn_implementation="eager", pre_norm=False).eval()
    effect = float((run(post, ROWS, langs)[0] - hidden).abs().max())
    assert effect > 1e-2, f"{name}: post-norm blocks move the hidden states by only {effect}"
    lines = [f"rows={len(ROWS)}"]
    for i, r in enumerate(ROWS):
        lines.append(f"ids{i}=" + ",".join(map(str, r)))
        if langs:
            lines.append(f"types{i}=" + ",".join(map(str, langs[i])))
    (out / "reference.txt").write_text("\n".join(lines) + "\n", encoding="ascii")
    hidden.numpy().astype("<f4").tofile(out / "hidden.bin")
    pooled.numpy().astype("<f4").tofile(out / "pooled.bin")
    if logits is not None:
        logits.numpy().astype("<f4").tofile(out / "logits.bin")
    print(f"  {name}: hidden std {float(hidden.std()):.2f}, post-norm blocks {effect:.2f} away "
          f"(transformers {transformers.__version__})")


make("flaubert-prenorm", FlaubertModel, 2400, 3)
make("flaubert-prenorm-mlm", FlaubertWithLMHeadModel, 2401, 1)
