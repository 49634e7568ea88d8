#!/usr/bin/env python3
"""Writes the LXMERT fixtures that test_encoders.c checks (issue 36): a tiny LxmertModel and its
heads saved by transformers' save_pretrained (5.24, which still ships the family), with what
transformers computes for a batch of rows of text and object regions.

Run from the repository root (transformers 5, torch 2):

    python3 test/make_lxmert_fixtures.py

Each dir test/fixtures/<name>/ holds config.json, model.safetensors and
    reference.txt   rows=<n>, then per row ids<i>=, types<i>= (as make_encoder_fixtures.py's) and
                    regions<i>=<count>: how many object regions the row's image has
    regions.bin     float32 LE [sum of counts][visual_feat_dim]: the regions' features
                    (transformers' visual_feats), row after row
    boxes.bin       float32 LE [sum of counts][visual_pos_dim]: their boxes (visual_pos)
    hidden.bin      float32 LE [sum of (tokens + regions)][hidden]: each row's language_output,
                    then its vision_output
    pooled.bin      float32 LE [rows][hidden]: pooled_output
    logits.bin      the head's: ForQuestionAnswering's question_answering_score [rows][num_qa_labels]
lxmert-vqa-text holds an answer head with BERT's tokenizer, a question (text.txt), its regions and
boxes, and the softmax of transformers' scores (vqa.txt), for build/classify --regions --boxes.
transformers takes the batch right-padded: the text's pads masked by attention_mask, the regions
padded to the most with visual_attention_mask 0. The library pads both on the left; both give
every row what it gives alone, which the script asserts.
"""
import shutil
from pathlib import Path

import torch
import transformers

FIXTURES = Path(__file__).resolve().parent / "fixtures"

# BERT's fixture shape in 4 heads (3 ranks split them unevenly), 2 language, 1 relation and 2
# cross-modality layers, regions of 20 features and boxes of 4 (neither the hidden width, so that
# a projection read the wrong way round fails), weights of 0.2 so that a wrong trait moves the
# outputs well past the tests' 1e-4.
SHAPE = dict(vocab_size=120, hidden_size=48, num_attention_heads=4, intermediate_size=96, max_position_embeddings=32,
             type_vocab_size=2, initializer_range=0.2, hidden_act="gelu", hidden_dropout_prob=0.0,
             attention_probs_dropout_prob=0.0, l_layers=2, r_layers=1, x_layers=2, visual_feat_dim=20, visual_pos_dim=4,
             num_qa_labels=5)
ROWS = [  # (ids, token types): lengths 7, 12, 4; the second row is a pair of segments
    ([2, 17, 45, 88, 9, 63, 3], [0] * 7),
    ([2, 5, 77, 31, 101, 3, 54, 12, 96, 40, 8, 3], [0] * 6 + [1] * 6),
    ([2, 119, 64, 3], [0] * 4),
]
REGION_COUNTS = [3, 5, 1]
FIXTURE_HEADS = [  # dir, model class
    ("lxmert", "LxmertModel"),
    ("lxmert-vqa", "LxmertForQuestionAnswering"),
]
# A trait the fixtures exist to test must move the outputs well past the tests' 1e-4.
TRAIT_MIN_EFFECT = 1e-2


def region_inputs(seed):
    generator = torch.Generator().manual_seed(seed)
    features = [torch.randn(n, SHAPE["visual_feat_dim"], generator=generator) for n in REGION_COUNTS]
    boxes = [torch.rand(n, SHAPE["visual_pos_dim"], generator=generator) for n in REGION_COUNTS]
    return features, boxes


def run_rows(model, rows, counts, features, boxes):
    """transformers' outputs for the padded batch, as float32 tensors: each row's language output
    then its vision output (real positions only), the pooled output, the head's scores."""
    width, most = max(len(ids) for ids, _ in rows), max(counts)
    ids = torch.tensor([r + [0] * (width - len(r)) for r, _ in rows])
    types = torch.tensor([t + [0] * (width - len(t)) for _, t in rows])
    mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r, _ in rows])
    visual_mask = torch.tensor([[1] * n + [0] * (most - n) for n in counts])
    visual = torch.zeros(len(rows), most, SHAPE["visual_feat_dim"])
    pos = torch.zeros(len(rows), most, SHAPE["visual_pos_dim"])
    for b, n in enumerate(counts):
        visual[b, :n], pos[b, :n] = features[b][:n], boxes[b][:n]
    base = getattr(model, "lxmert", model)
    with torch.no_grad():
        kwargs = dict(input_ids=ids, token_type_ids=types, attention_mask=mask, visual_feats=visual, visual_pos=pos,
                      visual_attention_mask=visual_mask)
        out = base(**kwargs)
        head = model(**kwargs) if model is not base else None
    hidden = torch.cat([torch.cat([out.language_output[b, :len(rows[b][0])], out.vision_output[b, :counts[b]]])
                        for b in range(len(rows))])
    logits = head.question_answering_score if head is not None else None
    return hidden, out.pooled_output, logits


def make(name, class_name, seed):
    torch.manual_seed(seed)
    config = transformers.LxmertConfig(**SHAPE)
    model = getattr(transformers, class_name)(config).eval()
    out = FIXTURES / name
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    model.save_pretrained(out)
    reloaded = getattr(transformers, class_name).from_pretrained(out, attn_implementation="eager").eval()
    features, boxes = region_inputs(seed + 1)
    hidden, pooled, logits = run_rows(reloaded, ROWS, REGION_COUNTS, features, boxes)
    first = 0
    for b, row in enumerate(ROWS):  # each row alone: padding changes nothing
        alone = run_rows(reloaded, [row], [REGION_COUNTS[b]], [features[b]], [boxes[b]])
        n = len(row[0]) + REGION_COUNTS[b]
        assert torch.allclose(alone[0], hidden[first:first + n], atol=1e-5), f"{name}: row {b} differs alone"
        assert torch.allclose(alone[1], pooled[b:b + 1], atol=1e-5), f"{name}: row {b}'s pooled output differs alone"
        if logits is not None:
            assert torch.allclose(alone[2], logits[b:b + 1], atol=1e-5), f"{name}: row {b}'s scores differ alone"
        first += n
    if name == "lxmert":
        check_traits_matter(reloaded, hidden, features, boxes)
    lines = [f"rows={len(ROWS)}"]
    for i, (ids, types) in enumerate(ROWS):
        lines += [f"ids{i}=" + ",".join(map(str, ids)), f"types{i}=" + ",".join(map(str, types)),
                  f"regions{i}={REGION_COUNTS[i]}"]
    (out / "reference.txt").write_text("\n".join(lines) + "\n", encoding="ascii")
    torch.cat(features).numpy().astype("<f4").tofile(out / "regions.bin")
    torch.cat(boxes).numpy().astype("<f4").tofile(out / "boxes.bin")
    hidden.numpy().astype("<f4").tofile(out / "hidden.bin")
    pooled.numpy().astype("<f4").tofile(out / "pooled.bin")
    if logits is not None:
        logits.numpy().astype("<f4").tofile(out / "logits.bin")
    print(f"  {name}: {class_name}, hidden std {float(hidden.std()):.2f}"
          + (f", logits {tuple(logits.shape)}" if logits is not None else ""))


def check_traits_matter(model, hidden, features, boxes):
    """The fixture fails to test a trait if dropping it leaves the outputs within reach: the
    boxes (box_fc), and the regions as the language stream's context (cross-modality layers)."""
    no_boxes = run_rows(model, ROWS, REGION_COUNTS, features, [torch.zeros_like(b) for b in boxes])[0]
    effect = float((no_boxes - hidden).abs().max())
    assert effect > TRAIT_MIN_EFFECT, f"lxmert: zero boxes move the outputs by only {effect}"
    print(f"  lxmert with zero boxes: outputs move by {effect:.3f}")
    other = run_rows(model, ROWS, REGION_COUNTS, [f.flip(0) for f in features], boxes)[0]
    effect = float((other - hidden)[:len(ROWS[0][0])].abs().max())
    assert effect > TRAIT_MIN_EFFECT, f"lxmert: features paired with other boxes move row 0's tokens by only {effect}"
    print(f"  lxmert with its features paired with other boxes: row 0's tokens move by {effect:.3f}")


VQA_QUESTION = "How many dogs are on the grass?"
VQA_LABELS = {0: "two", 1: "yes", 2: "no"}


def write_scores(path, logits):
    """softmax of one row's logits as "score label" lines, best first (build/classify's output)."""
    scores = torch.softmax(logits, dim=-1)
    pairs = sorted(((VQA_LABELS[i], float(p)) for i, p in enumerate(scores)), key=lambda x: -x[1])
    path.write_text("".join(f"{score:.6f} {label}\n" for label, score in pairs), encoding="ascii")


def make_vqa_text(name="lxmert-vqa-text", seed=3900):
    """An answer head with BERT's tokenizer (tokenizer-bert), a question and 4 regions with their
    boxes (regions.bin, boxes.bin, as build/classify --regions --boxes reads them): vqa.txt holds
    the softmax of transformers' question_answering_score."""
    torch.manual_seed(seed)
    out = FIXTURES / name
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    config = transformers.LxmertConfig(**dict(SHAPE, vocab_size=420, num_qa_labels=len(VQA_LABELS)), id2label=VQA_LABELS,
                                       label2id={v: k for k, v in VQA_LABELS.items()})
    transformers.LxmertForQuestionAnswering(config).eval().save_pretrained(out)
    for file in ("tokenizer.json", "tokenizer_config.json", "vocab.txt"):
        shutil.copy(FIXTURES / "tokenizer-bert" / file, out / file)
    tokenizer = transformers.AutoTokenizer.from_pretrained(out)
    model = transformers.LxmertForQuestionAnswering.from_pretrained(out, attn_implementation="eager").eval()
    inputs = tokenizer(VQA_QUESTION, return_tensors="pt")
    generator = torch.Generator().manual_seed(seed + 1)
    features = torch.randn(4, SHAPE["visual_feat_dim"], generator=generator)
    boxes = torch.rand(4, SHAPE["visual_pos_dim"], generator=generator)
    with torch.no_grad():
        scores = model(**inputs, visual_feats=features[None], visual_pos=boxes[None]).question_answering_score[0]
    features.numpy().astype("<f4").tofile(out / "regions.bin")
    boxes.numpy().astype("<f4").tofile(out / "boxes.bin")
    write_scores(out / "vqa.txt", scores)
    (out / "text.txt").write_text(VQA_QUESTION + "\n", encoding="utf-8")
    print(f"  {name}: {inputs['input_ids'].shape[1]} tokens, {(out / 'vqa.txt').read_text().split()}")


def main() -> None:
    torch.set_num_threads(1)
    for i, (name, class_name) in enumerate(FIXTURE_HEADS):
        make(name, class_name, 3800 + 10 * i)
    make_vqa_text()


if __name__ == "__main__":
    main()
