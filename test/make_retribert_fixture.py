#!/usr/bin/env python3
"""Writes test/fixtures/retribert: a tiny RetriBERT (transformers 4's RetriBertModel; transformers 5
dropped the family, so this runs in an environment with the last 4.x release:

    python3 -m venv --system-site-packages /work/venv-tf4
    /work/venv-tf4/bin/pip install "transformers==4.57.*"
    /work/venv-tf4/bin/python test/make_retribert_fixture.py

saved by save_pretrained, with what it computes for the encoder fixtures' rows (as
make_encoder_fixtures.py lays them out; token types all 0, as its embed_* pass none):
hidden.bin (bert_query's last hidden state of the real tokens), pooled.bin (its pooler),
embeds.bin (embed_questions: the pooled output through project_query) and doc_embeds.bin
(embed_answers: through project_doc, with the encoders shared)."""
import shutil
from pathlib import Path

import torch
import transformers
from transformers import RetriBertConfig, RetriBertModel

assert transformers.__version__.startswith("4."), "RetriBERT needs transformers 4 (see the docstring)"
OUT = Path(__file__).resolve().parent / "fixtures" / "retribert"
ROWS = [[2, 17, 45, 88, 9, 63, 3], [2, 5, 77, 31, 101, 3, 54, 12, 96, 40, 8, 3], [2, 119, 64, 3]]

torch.manual_seed(1307)
# 6 heads (1, 2 and 3 ranks split them evenly, as the other encoder fixtures); weights larger than
# the default init so that a wrong trait moves the outputs well beyond the tests' 1e-4
config = RetriBertConfig(vocab_size=120, hidden_size=48, num_hidden_layers=2, num_attention_heads=6,
                         intermediate_size=96, max_position_embeddings=32, type_vocab_size=2, initializer_range=0.2,
                         hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, projection_dim=24,
                         share_encoders=True, position_embedding_type="absolute")  # 4.57 leaves it unset, which BertModel reads
model = RetriBertModel(config).eval()
with torch.no_grad():  # its init leaves the projections at the default scale; larger ones part the outputs
    model.project_query.weight.normal_(0.0, 0.2)
    model.project_doc.weight.normal_(0.0, 0.2)
shutil.rmtree(OUT, ignore_errors=True)
OUT.mkdir(parents=True)
model.save_pretrained(OUT, safe_serialization=True)
model = RetriBertModel.from_pretrained(OUT).eval()
width = max(len(r) for r in ROWS)
ids = torch.tensor([r + [0] * (width - len(r)) for r in ROWS])
mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in ROWS])
with torch.no_grad():
    out = model.bert_query(ids, attention_mask=mask)
    questions = model.embed_questions(ids, mask)
    answers = model.embed_answers(ids, mask)
hidden = torch.cat([out.last_hidden_state[b, :len(r)] for b, r in enumerate(ROWS)])
assert float((questions - answers).abs().max()) > 0.1, "the two projections should give apart embeddings"
lines = [f"rows={len(ROWS)}"]
for i, r in enumerate(ROWS):
    lines += [f"ids{i}=" + ",".join(map(str, r)), f"types{i}=" + ",".join(["0"] * len(r))]
(OUT / "reference.txt").write_text("\n".join(lines) + "\n", encoding="ascii")
hidden.numpy().astype("<f4").tofile(OUT / "hidden.bin")
out.pooler_output.numpy().astype("<f4").tofile(OUT / "pooled.bin")
questions.numpy().astype("<f4").tofile(OUT / "embeds.bin")
answers.numpy().astype("<f4").tofile(OUT / "doc_embeds.bin")
print(f"  retribert: hidden std {float(hidden.std()):.2f}, embeds std {float(questions.std()):.2f} / "
      f"{float(answers.std()):.2f} (transformers {transformers.__version__})")
