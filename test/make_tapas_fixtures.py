#!/usr/bin/env python3
"""Writes the TAPAS fixtures that test_encoders.c checks (issue 35): a tiny TapasModel and its heads
saved by transformers' save_pretrained (5.24, which ships the family), with what transformers
computes for rows of token ids and their 7 table token types.

Run from the repository root (transformers 5, torch 2):

    python3 test/make_tapas_fixtures.py

Each dir test/fixtures/<name>/ holds config.json, model.safetensors and
    reference.txt   rows=<n>, then per row ids<i>= and table<i>= (each token's 7 table types, token
                    after token: segment, column, row, previous label, column rank, inverse column
                    rank, numeric relation, as TapasTokenizer gives token_type_ids)
    hidden.bin      float32 LE [sum of tokens][hidden]: the last hidden state
    pooled.bin      float32 LE [rows][hidden]: the pooler's output (absent for the masked LM)
    logits.bin      the head's: [sum of tokens][vocab] (masked LM), [rows][num_labels] (sequence
                    classification), [sum of tokens][1] (question answering: transformers' logits,
                    its cell selection without labels)
    aggregation.bin float32 LE [rows][num_aggregation_labels]: the QA head's logits_aggregation
Every row runs alone (no padding), as the library computes each row of a batch: transformers' QA
head averages its logits over cells that padding tokens would join (the question's cell, row 0 and
column 0), so a padded batch would give other logits for the question's tokens.
"""
import shutil
from pathlib import Path

import torch
import transformers

FIXTURES = Path(__file__).resolve().parent / "fixtures"

# 4 heads (3 ranks split them unevenly), small type tables (the 7 sizes all different, so that a
# table read for another fails its shape check), position table of 64 rows, weights of 0.2 so that
# a wrong trait moves the outputs well past the tests' 1e-4.
TYPE_SIZES = [3, 6, 8, 2, 7, 6, 4]
SHAPE = dict(vocab_size=120, hidden_size=48, num_hidden_layers=2, num_attention_heads=4, intermediate_size=96,
             max_position_embeddings=64, type_vocab_sizes=TYPE_SIZES, initializer_range=0.2, hidden_act="gelu",
             hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, pad_token_id=0)


def table_row(question, cells):
    """ids and table types of [CLS] question [SEP] then the cells: question a list of ids; cells a
    list of (column, row, ids, prev_label, rank, inverse rank, numeric relation), the header's row 0."""
    ids, types = [101 % 120], [[0] * 7]
    for q in question:
        ids.append(q)
        types.append([0] * 7)
    ids.append(102 % 120)
    types.append([0] * 7)
    for column, row, cell_ids, prev, rank, inverse, relation in cells:
        for i in cell_ids:
            ids.append(i)
            types.append([1, column, row, prev, rank, inverse, relation])
    return ids, types


ROWS = [
    # a 3-column table: header and 2 rows, cells of 1 to 3 tokens
    table_row([17, 45, 88, 9], [
        (1, 0, [30, 31], 0, 0, 0, 0), (2, 0, [32], 0, 0, 0, 0), (3, 0, [33, 34], 0, 0, 0, 0),
        (1, 1, [40, 41, 42], 1, 0, 0, 0), (2, 1, [43], 0, 2, 1, 1), (3, 1, [44, 46], 0, 1, 2, 2),
        (1, 2, [47], 0, 0, 0, 0), (2, 2, [48, 49], 1, 1, 2, 3), (3, 2, [50], 0, 2, 1, 1)]),
    # 2 columns, rows 1 to 5 (max_num_rows 4 in tapas-qa: rows 4 and 5 share row 3's cells there)
    table_row([5, 77, 31], [
        (1, 0, [60], 0, 0, 0, 0), (2, 0, [61, 62], 0, 0, 0, 0),
        (1, 1, [63, 64], 0, 0, 0, 0), (2, 1, [65], 0, 5, 1, 0),
        (1, 2, [66], 0, 0, 0, 0), (2, 2, [67, 68], 1, 4, 2, 1),
        (1, 3, [69], 0, 0, 0, 0), (2, 3, [70], 0, 3, 3, 2),
        (1, 4, [71, 72], 1, 0, 0, 0), (2, 4, [73], 0, 2, 4, 3),
        (1, 5, [74], 0, 0, 0, 0), (2, 5, [75, 76], 0, 1, 5, 0)]),
    # the question alone (no table: every type 0)
    table_row([119, 64, 3], []),
]
FIXTURE_HEADS = [  # dir, model class, config changes, seed
    ("tapas", "TapasModel", {}, 4100),
    ("tapas-absolute", "TapasModel", dict(reset_position_index_per_cell=False), 4101),
    ("tapas-mlm", "TapasForMaskedLM", {}, 4102),
    ("tapas-cls", "TapasForSequenceClassification", dict(num_labels=3), 4103),
    # aggregation, a temperature, rows clamped to 4
    ("tapas-qa", "TapasForQuestionAnswering", dict(num_aggregation_labels=4, temperature=0.7, max_num_rows=4), 4104),
    # column 0 allowed, columns clamped to 3 (row 0's columns 2 and 3 one column), no aggregation; the
    # seed one where row 0 keeps that joined column and row 1 chooses column 0 (no cell)
    ("tapas-qa-empty", "TapasForQuestionAnswering", dict(allow_empty_column_selection=True, max_num_columns=3), 4106),
]
# A trait the fixtures exist to test must move the outputs well past the tests' 1e-4.
TRAIT_MIN_EFFECT = 1e-2


def run_row(model, ids, types):
    """transformers' outputs for one row alone: (last hidden state, pooled output or None, the head's
    logits as the library lays them out or None, logits_aggregation or None)."""
    kwargs = dict(input_ids=torch.tensor([ids]), token_type_ids=torch.tensor([types]))
    name = type(model).__name__
    with torch.no_grad():
        base = getattr(model, "tapas", model)
        base_out = base(**kwargs)
        logits = aggregation = None
        if name != "TapasModel":
            out = model(**kwargs)
            if name == "TapasForQuestionAnswering":
                logits = out.logits[0].reshape(-1, 1)
                aggregation = out.logits_aggregation
            elif name == "TapasForMaskedLM":
                logits = out.logits[0]
            else:
                logits = out.logits.reshape(1, -1)
    pooled = base_out.pooler_output[0] if base_out.pooler_output is not None else None
    return base_out.last_hidden_state[0], pooled, logits, aggregation


def perturb_head_biases(model):
    """transformers initialises the QA head's biases to 0: give them values, so that a bias left out fails."""
    with torch.no_grad():
        if hasattr(model, "output_bias"):
            model.output_bias.fill_(0.3)
            model.column_output_bias.fill_(-0.45)
        if hasattr(model, "aggregation_classifier"):
            model.aggregation_classifier.bias.normal_(0, 0.5)
        if hasattr(model, "classifier"):
            model.classifier.bias.normal_(0, 0.5)


def make(name, class_name, changes, seed):
    torch.manual_seed(seed)
    config = transformers.TapasConfig(**dict(SHAPE, **changes))
    model = getattr(transformers, class_name)(config).eval()
    perturb_head_biases(model)
    out = FIXTURES / name
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    model.save_pretrained(out)
    reloaded = getattr(transformers, class_name).from_pretrained(out, attn_implementation="eager").eval()
    results = [run_row(reloaded, ids, types) for ids, types in ROWS]
    hidden = torch.cat([r[0] for r in results])
    if name == "tapas":
        check_traits_matter(reloaded, hidden)
    if class_name == "TapasForQuestionAnswering":
        check_head_traits(reloaded, name)
    lines = [f"rows={len(ROWS)}"]
    for i, (ids, types) in enumerate(ROWS):
        lines += [f"ids{i}=" + ",".join(map(str, ids)), f"table{i}=" + ",".join(str(v) for t in types for v in t)]
    (out / "reference.txt").write_text("\n".join(lines) + "\n", encoding="ascii")
    hidden.numpy().astype("<f4").tofile(out / "hidden.bin")
    if results[0][1] is not None:
        torch.stack([r[1] for r in results]).numpy().astype("<f4").tofile(out / "pooled.bin")
    if results[0][2] is not None:
        torch.cat([r[2] for r in results]).numpy().astype("<f4").tofile(out / "logits.bin")
    if results[0][3] is not None:
        torch.cat([r[3] for r in results]).numpy().astype("<f4").tofile(out / "aggregation.bin")
    print(f"  {name}: {class_name}, hidden std {float(hidden.std()):.2f}")


def check_traits_matter(model, hidden):
    """The fixture fails to test a trait if dropping it leaves the outputs within reach: the table
    types 1 .. 6 (all 0 but the segment), and the positions restarting in each cell."""
    plain = torch.cat([run_row(model, ids, [[t[0]] + [0] * 6 for t in types])[0] for ids, types in ROWS])
    effect = float((plain - hidden).abs().max())
    assert effect > TRAIT_MIN_EFFECT, f"tapas: the table types move the states by only {effect}"
    print(f"  tapas with types 1..6 all 0: the states move by {effect:.3f}")
    model.config.reset_position_index_per_cell = False
    absolute = torch.cat([run_row(model, ids, types)[0] for ids, types in ROWS])
    model.config.reset_position_index_per_cell = True
    effect = float((absolute - hidden).abs().max())
    assert effect > TRAIT_MIN_EFFECT, f"tapas: the per-cell positions move the states by only {effect}"
    print(f"  tapas with positions from the row's start: the states move by {effect:.3f}")
    for k in range(1, 7):  # each type table on its own
        one = [[v if j != k else 0 for j, v in enumerate(t)] for t in ROWS[0][1]]
        effect = float((run_row(model, ROWS[0][0], one)[0] - hidden[:len(ROWS[0][0])]).abs().max())
        assert effect > TRAIT_MIN_EFFECT, f"tapas: type {k} moves row 0 by only {effect}"


def check_head_traits(model, name):
    """The cell logits of a chosen column are cell means (a token's own logit differs), some row keeps
    cells, allow_empty_column_selection changes the choice where it is set, and select_one_column
    false gives transformers no logits (the library refuses it)."""
    kept_rows = []
    for ids, types in ROWS:
        logits = run_row(model, ids, types)[2][:, 0]
        kept = logits > -5000
        if not kept.any():
            continue
        kept_rows.append(len(kept_rows))
        with torch.no_grad():
            states = model.tapas(input_ids=torch.tensor([ids]), token_type_ids=torch.tensor([types])).last_hidden_state[0]
            own = (states @ model.output_weights + model.output_bias) / model.config.temperature
        effect = float((own[kept] - logits[kept]).abs().max())
        assert effect > TRAIT_MIN_EFFECT, f"{name}: the cell means move the kept logits by only {effect}"
        print(f"  {name}: a row keeps {int(kept.sum())} tokens; the per-cell means move them by {effect:.3f}")
    assert kept_rows, f"{name}: no row keeps a cell"
    if model.config.allow_empty_column_selection:
        chosen = torch.cat([run_row(model, ids, types)[2] for ids, types in ROWS])
        model.config.allow_empty_column_selection = False
        forced = torch.cat([run_row(model, ids, types)[2] for ids, types in ROWS])
        model.config.allow_empty_column_selection = True
        effect = float((chosen - forced).abs().max())
        assert effect > TRAIT_MIN_EFFECT, f"{name}: allow_empty_column_selection moves the logits by only {effect}"
        print(f"  {name}: column 0 not allowed moves the logits by {effect:.3f}")
    ids, types = ROWS[0]
    model.config.select_one_column = False
    try:
        run_row(model, ids, types)
        raise AssertionError(f"{name}: transformers gave logits with select_one_column false")
    except ValueError:
        pass
    finally:
        model.config.select_one_column = True


def main():
    for name, class_name, changes, seed in FIXTURE_HEADS:
        make(name, class_name, changes, seed)


if __name__ == "__main__":
    main()
