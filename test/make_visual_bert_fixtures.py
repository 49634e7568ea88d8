#!/usr/bin/env python3
"""Writes the VisualBERT fixtures that test_encoders.c checks (issue 36): a tiny VisualBertModel and
its heads saved by transformers' save_pretrained (5.24, which still ships the family), with what
transformers computes for a batch of rows of text and object regions.

Run from the repository root (transformers 5, torch 2):

    python3 test/make_visual_bert_fixtures.py

Each dir test/fixtures/<name>/ holds config.json, model.safetensors and
    reference.txt   rows=<n>, then per row ids<i>=, types<i>= (as make_encoder_fixtures.py's) and
                    regions<i>=<count>: how many object regions follow the row's tokens
    regions.bin     float32 LE [sum of counts][visual_embedding_dim]: the regions' features
                    (transformers' visual_embeds), row after row
    hidden.bin      float32 LE [sum of (tokens + regions)][hidden]: each row's tokens' last hidden
                    state, then its regions'
    pooled.bin      float32 LE [rows][hidden]: the pooler's output (the first token's)
    logits.bin      the head's: ForPreTraining's prediction_logits per position [sum of (tokens +
                    regions)][vocab]; the VQA and NLVR2 heads' [rows][num_labels]; multiple
                    choice's [rows][1] (the rows the choices of one question, each with its regions)
transformers takes the batch right-padded: the text's pads masked by attention_mask, the regions
padded to the most with visual_attention_mask 0 (row 2 has none: all its slots masked). The
library pads each row's tokens and regions together on the left; both give every row what it
gives alone, which the script asserts (a row without regions run without visual_embeds).
"""
import shutil
from pathlib import Path

import torch
import transformers

FIXTURES = Path(__file__).resolve().parent / "fixtures"

# BERT's fixture shape in 4 heads (3 ranks split them unevenly), regions of 20 features (not the
# hidden width, so that a projection read the wrong way round fails), weights of 0.2 so that a
# wrong trait moves the outputs well past the tests' 1e-4.
SHAPE = dict(vocab_size=120, hidden_size=48, num_hidden_layers=2, num_attention_heads=4, intermediate_size=96,
             max_position_embeddings=32, type_vocab_size=2, initializer_range=0.2, hidden_act="gelu",
             hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, visual_embedding_dim=20)
ROWS = [  # (ids, token types): lengths 7, 12, 4; the second row is a pair of segments
    ([2, 17, 45, 88, 9, 63, 3], [0] * 7),
    ([2, 5, 77, 31, 101, 3, 54, 12, 96, 40, 8, 3], [0] * 6 + [1] * 6),
    ([2, 119, 64, 3], [0] * 4),
]
REGION_COUNTS = [3, 5, 0]  # row 2 text alone
FIXTURE_HEADS = [  # dir, model class, label count
    ("visual-bert", "VisualBertModel", None),
    ("visual-bert-pretraining", "VisualBertForPreTraining", None),  # its masked LM over tokens and regions
    ("visual-bert-vqa", "VisualBertForQuestionAnswering", 3),
    ("visual-bert-nlvr", "VisualBertForVisualReasoning", 2),
    ("visual-bert-mc", "VisualBertForMultipleChoice", None),
]
# A trait the fixtures exist to test must move the outputs well past the tests' 1e-4.
TRAIT_MIN_EFFECT = 1e-2


def region_features(seed):
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(count, SHAPE["visual_embedding_dim"], generator=generator) for count in REGION_COUNTS]


def run_rows(model, rows, counts, features, visual_types=None):
    """transformers' outputs for the padded batch as float32 tensors of the real positions (each
    row's tokens, then its regions): hidden states, pooled output, logits."""
    width = max(len(ids) for ids, _ in rows)
    ids = torch.tensor([r + [0] * (width - len(r)) for r, _ in rows])
    types = torch.tensor([t + [0] * (width - len(t)) for _, t in rows])
    mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r, _ in rows])
    kwargs = dict(input_ids=ids, token_type_ids=types, attention_mask=mask, output_hidden_states=True)
    most = max(counts)
    visual_mask = torch.tensor([[1] * n + [0] * (most - n) for n in counts])
    if most:
        visual = torch.zeros(len(rows), most, SHAPE["visual_embedding_dim"])
        for b, n in enumerate(counts):
            visual[b, :n] = features[b][:n]
        kwargs.update(visual_embeds=visual, visual_attention_mask=visual_mask)
        if visual_types is not None:
            kwargs["visual_token_type_ids"] = torch.full((len(rows), most), visual_types)
    choices = type(model).__name__.endswith("ForMultipleChoice")
    if choices:  # the rows as the choices of one question
        kwargs = {k: v[None] if torch.is_tensor(v) else v for k, v in kwargs.items()}
    with torch.no_grad():
        out = model(**kwargs)
        last = out.hidden_states[-1].reshape(len(rows), width + most, -1)
        base = getattr(model, "visual_bert", model)
        pooled = base.pooler(last)
    real = torch.cat([mask, visual_mask], dim=1).bool() if most else mask.bool()
    if hasattr(out, "prediction_logits"):
        logits = out.prediction_logits.reshape(len(rows), width + most, -1)[real]
    elif hasattr(out, "logits"):
        logits = out.logits.reshape(len(rows), -1)
    else:
        logits = None
    return last[real], pooled, logits


def randomize_visual_tables(model):
    """special_visual_initialize copies the text's position and token type tables into the visual
    ones: drawn apart here, so that reading the text's table for the regions fails the tests."""
    embeddings = getattr(model, "visual_bert", model).embeddings
    with torch.no_grad():
        for table in (embeddings.visual_position_embeddings, embeddings.visual_token_type_embeddings):
            table.weight.normal_(0.0, SHAPE["initializer_range"])
    for visual, text, row in ((embeddings.visual_position_embeddings, embeddings.position_embeddings, 0),
                              (embeddings.visual_token_type_embeddings, embeddings.token_type_embeddings, 1)):
        assert float((visual.weight[row] - text.weight[row]).abs().max()) > TRAIT_MIN_EFFECT


def make(name, class_name, labels, seed):
    torch.manual_seed(seed)
    kwargs = dict(SHAPE)
    if labels:
        kwargs["num_labels"] = labels
    config = transformers.VisualBertConfig(**kwargs)
    model = getattr(transformers, class_name)(config).eval()
    randomize_visual_tables(model)
    out = FIXTURES / name
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    model.save_pretrained(out)
    reloaded = getattr(transformers, class_name).from_pretrained(out, attn_implementation="eager").eval()
    features = region_features(seed + 1)
    hidden, pooled, logits = run_rows(reloaded, ROWS, REGION_COUNTS, features)
    for b, row in enumerate(ROWS):  # each row alone: padding changes nothing
        alone = run_rows(reloaded, [row], [REGION_COUNTS[b]], [features[b]])
        first = sum(len(ids) + n for (ids, _), n in zip(ROWS[:b], REGION_COUNTS))
        rows_hidden = hidden[first:first + len(row[0]) + REGION_COUNTS[b]]
        assert torch.allclose(alone[0], rows_hidden, atol=1e-5), f"{name}: row {b} differs alone"
        if logits is not None and logits.shape[0] == len(ROWS):
            assert torch.allclose(alone[2], logits[b:b + 1], atol=1e-5), f"{name}: row {b}'s logits differ alone"
    if name == "visual-bert":
        check_traits_matter(reloaded, hidden, features)
    lines = [f"rows={len(ROWS)}"]
    for i, (ids, types) in enumerate(ROWS):
        lines += [f"ids{i}=" + ",".join(map(str, ids)), f"types{i}=" + ",".join(map(str, types)),
                  f"regions{i}={REGION_COUNTS[i]}"]
    (out / "reference.txt").write_text("\n".join(lines) + "\n", encoding="ascii")
    torch.cat(features).numpy().astype("<f4").tofile(out / "regions.bin")
    hidden.numpy().astype("<f4").tofile(out / "hidden.bin")
    pooled.numpy().astype("<f4").tofile(out / "pooled.bin")
    if logits is not None:
        logits.numpy().astype("<f4").tofile(out / "logits.bin")
    print(f"  {name}: {class_name}, hidden std {float(hidden.std()):.2f}"
          + (f", logits {tuple(logits.shape)}" if logits is not None else ""))


def check_traits_matter(model, hidden, features):
    """The fixture fails to test a trait if dropping it leaves the outputs within reach: the
    regions themselves (row 0's text attends to them), and the regions' visual token type 1."""
    text_alone = run_rows(model, ROWS[:1], [0], features[:1])[0]
    effect = float((text_alone - hidden[:len(ROWS[0][0])]).abs().max())
    assert effect > TRAIT_MIN_EFFECT, f"visual-bert: the regions move row 0's tokens by only {effect}"
    print(f"  visual-bert without its regions: row 0's tokens move by {effect:.3f}")
    type_0 = run_rows(model, ROWS, REGION_COUNTS, features, visual_types=0)[0]
    effect = float((type_0 - hidden).abs().max())
    assert effect > TRAIT_MIN_EFFECT, f"visual-bert: visual token type 0 moves the hidden states by only {effect}"
    print(f"  visual-bert with visual token type 0: hidden states move by {effect:.3f}")


VQA_QUESTION = "How many dogs are on the grass?"
VQA_LABELS = {0: "two", 1: "yes", 2: "no"}


def write_scores(path, logits):
    """softmax of one row's logits as "score label" lines, best first (build/classify's output)."""
    scores = torch.softmax(logits, dim=-1)
    pairs = sorted(((VQA_LABELS[i], float(p)) for i, p in enumerate(scores)), key=lambda x: -x[1])
    path.write_text("".join(f"{score:.6f} {label}\n" for label, score in pairs), encoding="ascii")


def make_vqa_text(name="visual-bert-vqa-text", seed=3700):
    """A VQA head with BERT's tokenizer (tokenizer-bert), a question and 4 regions (regions.bin, as
    build/classify --regions reads them): vqa.txt holds the softmax of transformers' logits for the
    tokenized question with the regions, text_alone.txt for the question without visual_embeds."""
    torch.manual_seed(seed)
    out = FIXTURES / name
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    config = transformers.VisualBertConfig(**dict(SHAPE, vocab_size=420), id2label=VQA_LABELS,
                                           label2id={v: k for k, v in VQA_LABELS.items()})
    model = transformers.VisualBertForQuestionAnswering(config).eval()
    randomize_visual_tables(model)
    model.save_pretrained(out)
    for file in ("tokenizer.json", "tokenizer_config.json", "vocab.txt"):
        shutil.copy(FIXTURES / "tokenizer-bert" / file, out / file)
    tokenizer = transformers.AutoTokenizer.from_pretrained(out)
    model = transformers.VisualBertForQuestionAnswering.from_pretrained(out, attn_implementation="eager").eval()
    inputs = tokenizer(VQA_QUESTION, return_tensors="pt")
    features = torch.randn(4, SHAPE["visual_embedding_dim"], generator=torch.Generator().manual_seed(seed + 1))
    with torch.no_grad():
        with_regions = model(**inputs, visual_embeds=features[None]).logits[0]
        alone = model(**inputs).logits[0]
    assert float((with_regions - alone).abs().max()) > TRAIT_MIN_EFFECT, "the regions must move the answer scores"
    features.numpy().astype("<f4").tofile(out / "regions.bin")
    write_scores(out / "vqa.txt", with_regions)
    write_scores(out / "text_alone.txt", alone)
    (out / "text.txt").write_text(VQA_QUESTION + "\n", encoding="utf-8")
    print(f"  {name}: {inputs['input_ids'].shape[1]} tokens, {(out / 'vqa.txt').read_text().split()}, "
          f"{(out / 'text_alone.txt').read_text().split()}")


def main() -> None:
    torch.set_num_threads(1)
    for i, (name, class_name, labels) in enumerate(FIXTURE_HEADS):
        make(name, class_name, labels, 3600 + 10 * i)
    make_vqa_text()


if __name__ == "__main__":
    main()
