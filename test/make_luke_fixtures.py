#!/usr/bin/env python3
"""Writes the LUKE fixtures that test_encoders.c checks (issue 35): a tiny LukeModel and its heads
saved by transformers' save_pretrained (5.24, which ships the family), with what transformers
computes for rows of word tokens and the entities the caller names in them.

Run from the repository root (transformers 5, torch 2):

    python3 test/make_luke_fixtures.py

Each dir test/fixtures/<name>/ holds config.json, model.safetensors and
    reference.txt   rows=<n>, then per row ids<i>=, types<i>= (as make_encoder_fixtures.py's),
                    entities<i>=<entity ids> (empty: none) and mentions<i>=<positions of entity 0>;
                    <of entity 1>;... (each entity's word positions, transformers'
                    entity_position_ids without the -1 padding); mention_length=<n>: the width
                    the rows are padded to with -1 (transformers' max_mention_length here)
    hidden.bin      float32 LE [sum of (tokens + entities)][hidden]: each row's words' last hidden
                    state, then its entities' (transformers' entity_last_hidden_state)
    pooled.bin      float32 LE [rows][hidden]: the pooler's output (the first word's)
    logits.bin      the head's, as the library lays them out: [rows][num_labels] for the entity
                    classification (the first entity's state), entity pair (the first two's,
                    side by side) and sequence classification heads, [rows][1] for multiple
                    choice (each row the one choice of a question); per position [sum of (tokens +
                    entities)][num_labels] (question answering: [..][2], start then end) for token
                    classification, the entities' rows the head's layer on their states
                    (transformers gives the words' alone)
Fixture luke-entity-text (make_entity_text): the references of build/classify --entities.
Every row runs alone (no padding), as the library computes each row of a batch; a row without
entities runs without entity_ids (the words alone). The heads on entities get a last row with two. The entity token types are all 0 (what LUKE's
tokenizer gives, and the library's only choice).
"""
import json
import shutil
from pathlib import Path

import torch
import transformers

FIXTURES = Path(__file__).resolve().parent / "fixtures"

# 4 heads (3 ranks split them unevenly), entity embeddings of 20 (not the hidden width, so that
# entity_embedding_dense is read), position tables of 40 rows, weights of 0.2 so that a wrong
# trait moves the outputs well past the tests' 1e-4. pad_token_id 1: RoBERTa's word positions.
SHAPE = dict(vocab_size=120, entity_vocab_size=30, hidden_size=48, entity_emb_size=20, num_hidden_layers=2,
             num_attention_heads=4, intermediate_size=96, max_position_embeddings=40, type_vocab_size=2,
             initializer_range=0.2, hidden_act="gelu", hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
             pad_token_id=1, bos_token_id=0, eos_token_id=2)
ROWS = [  # (ids, token types, entities: (entity id, word positions)); no id is the pad id 1
    ([0, 17, 45, 88, 9, 63, 2], [0] * 7, [(5, [1, 2]), (11, [4]), (7, [3, 4, 5])]),
    ([0, 5, 77, 31, 101, 2, 2, 54, 12, 96, 40, 2], [0] * 12, [(3, [7, 8, 9]), (29, [1])]),
    ([0, 119, 64, 2], [0] * 4, []),  # the words alone
]
# The heads on entities read the first one or two of each row: the last row gets two.
ENTITY_ROWS = ROWS[:2] + [(ROWS[2][0], ROWS[2][1], [(9, [1, 2]), (4, [2])])]
MENTION_LENGTH = 4  # entity_position_ids' width: every mention padded with -1 to it
FIXTURE_HEADS = [  # dir, model class, label count, config changes, rows
    ("luke", "LukeModel", None, {}, ROWS),
    ("luke-plain", "LukeModel", None, dict(use_entity_aware_attention=False, entity_emb_size=48), ROWS),
    ("luke-entity", "LukeForEntityClassification", 3, {}, ENTITY_ROWS),
    ("luke-pair", "LukeForEntityPairClassification", 3, {}, ENTITY_ROWS),
    ("luke-seq", "LukeForSequenceClassification", 3, {}, ROWS),
    ("luke-token", "LukeForTokenClassification", 3, {}, ROWS),
    ("luke-qa", "LukeForQuestionAnswering", 2, {}, ROWS),
    ("luke-mc", "LukeForMultipleChoice", None, {}, ROWS),
]
# A trait the fixtures exist to test must move the outputs well past the tests' 1e-4.
TRAIT_MIN_EFFECT = 1e-2


def run_row(model, row, entities=True):
    """transformers' outputs for one row: (words' then entities' last hidden states, pooled output,
    the head's logits as the library lays them out, or None)."""
    ids, types, row_entities = row
    kwargs = dict(input_ids=torch.tensor([ids]), token_type_ids=torch.tensor([types]))
    if entities and row_entities:
        positions = [p + [-1] * (MENTION_LENGTH - len(p)) for _, p in row_entities]
        kwargs.update(entity_ids=torch.tensor([[e for e, _ in row_entities]]),
                      entity_position_ids=torch.tensor([positions]))
    name = type(model).__name__
    with torch.no_grad():
        base = getattr(model, "luke", model)
        base_out = base(**kwargs)
        if name.endswith("ForMultipleChoice"):  # the row as the one choice of a question
            out = model(**{k: v[None] for k, v in kwargs.items()})
        elif name != "LukeModel":
            out = model(**kwargs)
        entity_states = base_out.entity_last_hidden_state
        if name.endswith("ForTokenClassification"):  # the words' logits, then the head on the entities' states
            logits = out.logits[0]
            if entity_states is not None:
                logits = torch.cat([logits, model.classifier(entity_states[0])])
        elif name.endswith("ForQuestionAnswering"):  # start and end a position
            logits = torch.stack([out.start_logits[0], out.end_logits[0]], dim=-1)
            if entity_states is not None:
                logits = torch.cat([logits, model.qa_outputs(entity_states[0])])
        elif name != "LukeModel":
            logits = out.logits.reshape(1, -1)
        else:
            logits = None
    hidden = base_out.last_hidden_state[0]
    if entity_states is not None:
        hidden = torch.cat([hidden, entity_states[0]])
    pooled = base_out.pooler_output[0] if base_out.pooler_output is not None else None
    return hidden, pooled, logits


def make(name, class_name, labels, changes, rows, seed):
    torch.manual_seed(seed)
    kwargs = dict(SHAPE, **changes)
    if labels:
        kwargs["num_labels"] = labels
    config = transformers.LukeConfig(**kwargs)
    model = getattr(transformers, class_name)(config).eval()
    out = FIXTURES / name
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    model.save_pretrained(out)
    reloaded = getattr(transformers, class_name).from_pretrained(out, attn_implementation="eager").eval()
    hidden, pooled, logits = [], [], []
    for row in rows:
        h, p, l = run_row(reloaded, row)
        hidden.append(h)
        pooled.append(p)
        logits.append(l)
    hidden = torch.cat(hidden)
    if name == "luke":
        check_traits_matter(reloaded, hidden)
    lines = [f"rows={len(ROWS)}", f"mention_length={MENTION_LENGTH}"]
    for i, (ids, types, entities) in enumerate(rows):
        lines += [f"ids{i}=" + ",".join(map(str, ids)), f"types{i}=" + ",".join(map(str, types)),
                  f"entities{i}=" + ",".join(str(e) for e, _ in entities),
                  f"mentions{i}=" + ";".join(",".join(map(str, p)) for _, p in entities)]
    (out / "reference.txt").write_text("\n".join(lines) + "\n", encoding="ascii")
    hidden.numpy().astype("<f4").tofile(out / "hidden.bin")
    if pooled[0] is not None:
        torch.stack(pooled).numpy().astype("<f4").tofile(out / "pooled.bin")
    if logits[0] is not None:
        torch.cat(logits).numpy().astype("<f4").tofile(out / "logits.bin")
    print(f"  {name}: {class_name}, hidden std {float(hidden.std()):.2f}")


def check_traits_matter(model, hidden):
    """The fixture fails to test a trait if dropping it leaves the outputs within reach: the
    entities themselves (row 0's words attend to them), the entity-aware queries, and each
    mention's several positions averaged (not the first alone)."""
    words = len(ROWS[0][0])
    alone = run_row(model, ROWS[0], entities=False)[0]
    effect = float((alone - hidden[:words]).abs().max())
    assert effect > TRAIT_MIN_EFFECT, f"luke: the entities move row 0's words by only {effect}"
    print(f"  luke without its entities: row 0's words move by {effect:.3f}")
    rows = len(ROWS[0][0]) + len(ROWS[0][2])
    saved = model.config.use_entity_aware_attention
    for layer in model.encoder.layer:
        layer.attention.self.use_entity_aware_attention = False
    plain = run_row(model, ROWS[0])[0]
    for layer in model.encoder.layer:
        layer.attention.self.use_entity_aware_attention = saved
    effect = float((plain - hidden[:rows]).abs().max())
    assert effect > TRAIT_MIN_EFFECT, f"luke: the entity-aware queries move row 0 by only {effect}"
    print(f"  luke with the word query for every pair: row 0 moves by {effect:.3f}")
    first_only = (ROWS[0][0], ROWS[0][1], [(e, p[:1]) for e, p in ROWS[0][2]])
    effect = float((run_row(model, first_only)[0] - hidden[:rows]).abs().max())
    assert effect > TRAIT_MIN_EFFECT, f"luke: the mentions' later positions move row 0 by only {effect}"
    print(f"  luke with each mention's first position alone: row 0 moves by {effect:.3f}")


ENTITY_TEXT = "Beyonce lives in Los Angeles."
ENTITY_SPANS = [(0, 7), (17, 28)]  # Beyonce, Los Angeles
ENTITY_LABELS = {0: "person", 1: "place", 2: "other"}


def make_entity_text(name="luke-entity-text", seed=3900):
    """An entity classification head with LUKE's tokenizer (transformers 5's LukeTokenizer over
    tokenizer-roberta's BPE and a 5-entity vocabulary, saved as tokenizer.json), a text and two
    entity spans: entities.txt holds build/classify's --entities for them (the ids and token
    positions LUKE's tokenizer gives), entity.txt the softmax of transformers' logits for the
    tokenized text with them (the head reads the first)."""
    torch.manual_seed(seed)
    out = FIXTURES / name
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    words = json.loads((FIXTURES / "tokenizer-roberta" / "tokenizer.json").read_text(encoding="utf-8"))["model"]
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in words["merges"]]
    entity_vocab = {"[UNK]": 0, "[PAD]": 1, "[MASK]": 2, "[MASK2]": 3, "Beyonce": 4, "Los Angeles": 5}
    tokenizer = transformers.LukeTokenizer(vocab=words["vocab"], merges=merges, entity_vocab=entity_vocab)
    tokenizer.save_pretrained(out)
    config = transformers.LukeConfig(**dict(SHAPE, vocab_size=len(tokenizer)), id2label=ENTITY_LABELS,
                                     label2id={v: k for k, v in ENTITY_LABELS.items()})
    model = transformers.LukeForEntityClassification(config).eval()
    model.save_pretrained(out)
    tokenizer = transformers.AutoTokenizer.from_pretrained(out)
    model = transformers.LukeForEntityClassification.from_pretrained(out, attn_implementation="eager").eval()
    inputs = tokenizer(ENTITY_TEXT, entities=["Beyonce", "Los Angeles"], entity_spans=ENTITY_SPANS, return_tensors="pt")
    with torch.no_grad():
        logits = model(**inputs).logits[0]
    arg = ";".join(f"{int(e)}@" + ",".join(str(int(p)) for p in positions if p >= 0)
                   for e, positions in zip(inputs["entity_ids"][0], inputs["entity_position_ids"][0]))
    scores = torch.softmax(logits, dim=-1)
    pairs = sorted(((ENTITY_LABELS[i], float(p)) for i, p in enumerate(scores)), key=lambda x: -x[1])
    (out / "entity.txt").write_text("".join(f"{score:.6f} {label}\n" for label, score in pairs), encoding="ascii")
    (out / "entities.txt").write_text(arg + "\n", encoding="ascii")
    (out / "text.txt").write_text(ENTITY_TEXT + "\n", encoding="utf-8")
    print(f"  {name}: {inputs['input_ids'].shape[1]} tokens, --entities {arg}, {(out / 'entity.txt').read_text().split()}")


def main() -> None:
    torch.set_num_threads(1)
    for i, (name, class_name, labels, changes, rows) in enumerate(FIXTURE_HEADS):
        make(name, class_name, labels, changes, rows, 3800 + 10 * i)
    make_entity_text()


if __name__ == "__main__":
    main()
