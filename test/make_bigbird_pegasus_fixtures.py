#!/usr/bin/env python3
"""BigBirdPegasus fixtures (issue 36): tiny checkpoints saved by transformers 5 with what it
computes, for test/test_seq2seq.c (bigbird-pegasus-s2s, in make_seq2seq_fixtures.py's format) and
test/test_encoders.c (bigbird-pegasus-cls, -qa, and the bare model bigbird-pegasus, in
make_encoder_fixtures.py's format).

Run from the repository root: python3 test/make_bigbird_pegasus_fixtures.py [names]

The encoder is BigBird's block-sparse attention in eval mode (its random blocks all block 0); a
source of at most (5 + 2 num_random_blocks) * block_size tokens makes transformers switch the model
to original_full, which it then keeps for later calls: every call here starts from the config's
attention_type again. In a padded batch transformers picks full or sparse attention, and cuts the
blocks, by the batch's width; the library computes each row as it is alone, so every output here
is its row's alone (generate() cases of several prompts: each prompt's generate() alone, joined).
Sources of 41 and 30 tokens run block-sparse (blocks of 4, 1 random block: more than 28 tokens;
transformers pads them to 44 and 32 with pad embeddings that no query sees), those of 28 (the
most that is not sparse) and 12 fully; the script asserts both, and that full attention or one
random block more moves the sparse rows' outputs.
"""
import json
import shutil
import sys
from pathlib import Path

import torch
import transformers

FIXTURES = Path(__file__).resolve().parent / "fixtures"
ONLY = set(sys.argv[1:])
TRAIT_MIN_EFFECT = 1e-2  # a trait a fixture exists to test moves its outputs well past the tests' 1e-4

# 4 heads (3 ranks split them 2, 1, 1), gelu_new, learned positions from row 0, blocks of 4 tokens
SHAPE = dict(vocab_size=120, d_model=48, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
             decoder_attention_heads=4, encoder_ffn_dim=96, decoder_ffn_dim=96, max_position_embeddings=64,
             dropout=0.0, attention_dropout=0.0, activation_dropout=0.0, block_size=4, num_random_blocks=1,
             pad_token_id=0, eos_token_id=1, bos_token_id=2, decoder_start_token_id=2, use_bias=True,
             scale_embedding=True)
EOS = SHAPE["eos_token_id"]
SOURCES = [
    [(7 * t + 5) % 115 + 3 for t in range(40)] + [EOS],   # 41 tokens: block-sparse (11 blocks after padding)
    [(11 * t + 17) % 115 + 3 for t in range(29)] + [EOS],  # 30: block-sparse (8 blocks)
    [(13 * t + 29) % 115 + 3 for t in range(27)] + [EOS],  # 28 = (5 + 2 * 1) * 4: still full
    [5, 77, 31, 101, 3, 54, 12, 96, 40, 8, 33, EOS],       # 12: full
]
SPARSE_ROWS = [0, 1]
DECODER_INPUTS = [[2, 7, 9, 11, 13], [2, 21, 22], [2, 30, 31, 32, 33, 34], [2, 44]]


def randomize(model):
    """Weights and biases at a scale where every trait shows (biases away from 0, norms away from 1)."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            norm_gain = "norm" in name.lower() and name.endswith(".weight")
            if p.dim() > 1:
                p.normal_(0, 0.2)
            else:
                p.normal_(1.0 if norm_gain else 0.0, 0.1 if "norm" in name.lower() else 0.2)
        if hasattr(model, "final_logits_bias"):
            model.final_logits_bias.normal_(0, 0.5)


def save(name, class_name, changes, seed, labels=None):
    torch.manual_seed(seed)
    kwargs = dict(SHAPE, **changes)
    if labels:
        kwargs["num_labels"] = labels
    model = getattr(transformers, class_name)(transformers.BigBirdPegasusConfig(**kwargs)).eval()
    randomize(model)
    out = FIXTURES / name
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    model.save_pretrained(out)
    return out, getattr(transformers, class_name).from_pretrained(out).eval()


def reset(model):
    """The config's attention type again: transformers keeps original_full after a short source."""
    base = getattr(model, "model", model)
    base.encoder.set_attention_type(model.config.attention_type)
    return base.encoder


def encoder_alone(model, source):
    """The encoder's last hidden state of one source, and the attention type it ran."""
    encoder = reset(model)
    with torch.no_grad():
        hidden = encoder(input_ids=torch.tensor([source])).last_hidden_state[0]
    return hidden, encoder.attention_type


def check_attention_types(name, model):
    config = model.config
    limit = (5 + 2 * config.num_random_blocks) * config.block_size
    for source in SOURCES:
        _, kind = encoder_alone(model, source)
        want = "block_sparse" if config.attention_type == "block_sparse" and len(source) > limit else "original_full"
        assert kind == want, f"{name}: a source of {len(source)} tokens ran {kind}, not {want}"


def check_blocks_matter(name, out, class_name, hidden):
    """Full attention, or one random block more (block 0 once more in eval mode), must move the
    sparse rows' encoder outputs, or the fixture could not tell the block-sparse attention apart."""
    random_blocks = transformers.BigBirdPegasusConfig.from_pretrained(out).num_random_blocks
    for what, changes in (("original_full", dict(attention_type="original_full")),
                          ("one random block more", dict(num_random_blocks=random_blocks + 1))):
        other = getattr(transformers, class_name).from_pretrained(out, **changes).eval()
        limit = (5 + 2 * other.config.num_random_blocks) * other.config.block_size
        rows = [i for i in SPARSE_ROWS if what == "original_full" or len(SOURCES[i]) > limit]
        effect = min(float((encoder_alone(other, SOURCES[i])[0] - hidden[i]).abs().max()) for i in rows)
        assert rows and effect > TRAIT_MIN_EFFECT, f"{name}: {what} moves the sparse rows by only {effect}"
        print(f"  {name} with {what}: sparse rows {rows} move by at least {effect:.3f}")


def write_floats(path, tensors):
    torch.cat([t.reshape(-1) for t in tensors]).numpy().astype("<f4").tofile(path)


def generate_alone(model, prompts, opts):
    """generate() of each prompt alone (the library's rows), joined: sequences and beam scores."""
    sequences, scores = [], []
    eos = model.generation_config.eos_token_id
    for prompt in prompts:
        reset(model)
        with torch.no_grad():
            g = model.generate(torch.tensor([prompt]), return_dict_in_generate=True, output_scores=True, **opts)
        if opts.get("num_beams", 1) == 1:  # each greedy choice decisive
            for step, step_scores in enumerate(g.scores):
                if eos in g.sequences[0, 1:step + 1].tolist():
                    break
                top = torch.topk(step_scores[0].float(), 2).values
                assert top[0] - top[1] > 1e-3 or not torch.isfinite(top[1]), f"step {step}: a near tie"
        for seq in g.sequences.tolist():
            new = seq[1:]
            if eos in new:
                new = new[:new.index(eos) + 1]
            sequences.append(new)
        if opts.get("num_beams", 1) > 1:
            scores += g.sequences_scores.tolist()
    return sequences, scores


def make_s2s():
    name, class_name = "bigbird-pegasus-s2s", "BigBirdPegasusForConditionalGeneration"
    # a seed under which the sources' greedy outputs differ (the head tied to a random token table
    # repeats one token under most seeds, the same one for every source)
    out, model = save(name, class_name, {}, seed=3602)
    check_attention_types(name, model)
    hidden = [encoder_alone(model, s)[0] for s in SOURCES]
    logits = []
    for source, dec in zip(SOURCES, DECODER_INPUTS):
        reset(model)
        with torch.no_grad():
            logits.append(model(input_ids=torch.tensor([source]), decoder_input_ids=torch.tensor([dec]),
                                use_cache=False).logits[0])
    check_blocks_matter(name, out, class_name, hidden)
    write_floats(out / "encoder_hidden.bin", hidden)
    write_floats(out / "decoder_logits.bin", logits)
    lines = [f"rows={len(SOURCES)}"]
    lines += [f"src{i}=" + ",".join(map(str, s)) for i, s in enumerate(SOURCES)]
    lines += [f"dec{i}=" + ",".join(map(str, d)) for i, d in enumerate(DECODER_INPUTS)]
    (out / "reference.txt").write_text("\n".join(lines) + "\n", encoding="ascii")
    cases = [("greedy", SOURCES[:1], dict(max_new_tokens=12, do_sample=False, num_beams=1)),
             ("batch4", SOURCES, dict(max_new_tokens=10, do_sample=False, num_beams=1)),
             ("beam4", SOURCES[1:2], dict(max_new_tokens=10, do_sample=False, num_beams=4, length_penalty=1.0,
                                          early_stopping=True)),
             ("beam3_ngram", SOURCES[:1], dict(max_new_tokens=10, do_sample=False, num_beams=3, no_repeat_ngram_size=2)),
             ("beam3_batch2", SOURCES[:2], dict(max_new_tokens=8, do_sample=False, num_beams=3, num_return_sequences=2)),
             ("forced", SOURCES[3:], dict(max_new_tokens=6, do_sample=False, num_beams=1, forced_bos_token_id=7,
                                          forced_eos_token_id=EOS))]
    text = []
    for case, prompts, opts in cases:
        sequences, scores = generate_alone(model, prompts, opts)
        if case == "batch4":  # the source decides the output, or the cases could not tell a wrong encoder
            assert len({tuple(q) for q in sequences}) == len(sequences), f"{name}: sources give the same output"
        lines = [f"case={case}", "options=" + json.dumps(opts)] + ["prompt=" + ",".join(map(str, p)) for p in prompts]
        lines += ["output=" + ",".join(map(str, s)) for s in sequences] + [f"score={s:.6f}" for s in scores]
        text.append("\n".join(lines))
    (out / "generation_cases.txt").write_text("\n\n".join(text) + "\n", encoding="ascii")
    print(f"  {name}: encoder std {float(torch.cat(hidden).std()):.2f}, {len(cases)} generate() cases")


def make_head(name, class_name, changes, seed, labels=None):
    """A task head (or the bare model) over rows alone: hidden.bin the encoder's output (pf_encode's
    last_hidden_state), pooled.bin the classification head's dense + tanh, logits.bin the head's
    (per row for the classifier, start / end per token for QA); the bare model's encoder output
    alone (pf_encode gives no decoder states)."""
    out, model = save(name, class_name, changes, seed, labels)
    check_attention_types(name, model)
    hidden, logits = [], []
    head = getattr(model, "classification_head", None)
    captured = []
    hook = head.dense.register_forward_hook(lambda m, i, o: captured.append(torch.tanh(o[0]))) if head else None
    for source in SOURCES:
        reset(model)
        with torch.no_grad():
            result = model(input_ids=torch.tensor([source]))
        hidden.append(result.encoder_last_hidden_state[0])
        if hasattr(result, "start_logits"):
            logits.append(torch.stack([result.start_logits[0], result.end_logits[0]], dim=-1))
        elif hasattr(result, "logits"):
            logits.append(result.logits[0])
    if hook:
        hook.remove()
    if name == "bigbird-pegasus":
        check_blocks_matter(name, out, class_name, hidden)
    lines = [f"rows={len(SOURCES)}"]
    for i, source in enumerate(SOURCES):
        lines += [f"ids{i}=" + ",".join(map(str, source)), f"types{i}=" + ",".join("0" * len(source))]
    (out / "reference.txt").write_text("\n".join(lines) + "\n", encoding="ascii")
    write_floats(out / "hidden.bin", hidden)
    if captured:
        write_floats(out / "pooled.bin", captured)
    if logits:
        write_floats(out / "logits.bin", logits)
    print(f"  {name}: {class_name}, hidden std {float(torch.cat(hidden).std()):.2f}")


def main():
    torch.set_num_threads(1)
    if not ONLY or "bigbird-pegasus-s2s" in ONLY:
        make_s2s()
    # the classifier with the config's defaults for biases (use_bias false) and blocks of 3 with 2
    # random blocks (sparse above 27 tokens: the 41-, 30- and 28-token sources); QA with
    # attention_type original_full (every source fully)
    heads = [("bigbird-pegasus-cls", "BigBirdPegasusForSequenceClassification",
              dict(use_bias=False, block_size=3, num_random_blocks=2), 3),
             ("bigbird-pegasus-qa", "BigBirdPegasusForQuestionAnswering", dict(attention_type="original_full"), None),
             ("bigbird-pegasus", "BigBirdPegasusModel", {}, None)]
    for i, (name, class_name, changes, labels) in enumerate(heads):
        if not ONLY or name in ONLY:
            make_head(name, class_name, changes, 3610 + i, labels)


if __name__ == "__main__":
    main()
