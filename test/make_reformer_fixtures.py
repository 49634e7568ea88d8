#!/usr/bin/env python3
"""Writes the Reformer fixtures (issue 36) that test_reformer.c checks: tiny models saved by
transformers 5's save_pretrained (transformers 5.24 still ships Reformer), with what transformers
computes for them, and torch.randn's values that the library's copy of torch's CPU generator must
reproduce bit for bit (the LSH rotations are torch.randn after torch.manual_seed(hash_seed)).

Run from the repository root (transformers 5, torch 2):

    python3 test/make_reformer_fixtures.py

test/fixtures/reformer/ (ReformerModel: local and LSH layers, axial positions, factorised buckets,
2 hashes, chunks before and after) and reformer-lm/ (ReformerModelWithLMHead: is_decoder, plain
positions, 2 hashes) hold config.json, model.safetensors and
    reference.txt   rows=<n>, ids<i>=<comma ids> (reformer); prompt_ids, greedy_ids,
                    max_new_tokens, logits_ids (reformer-lm)
    reformer_hidden.bin  float32 LE [sum of lengths][2 hidden]: last_hidden_state of each row run alone
    logits.bin      (reformer-lm) float32 LE [len(logits_ids)][vocab]: every position's logits
reformer-lm's greedy_ids are transformers' generate() with use_cache=False: every step runs the
whole sequence again, as the library does (transformers' cache of past buckets and states is a
different computation: see README). test/fixtures/torch-randn/randn_cases.txt lists "seed count" per line
and randn.bin holds torch.randn(count) after torch.manual_seed(seed) for each, float32 LE.
"""
import shutil
import struct
from pathlib import Path

import torch
import transformers

FIXTURES = Path(__file__).resolve().parent / "fixtures"

# 4 heads so that 3 ranks split them unevenly (2, 1, 1); chunks of 4 so that the 13-token row is
# padded to 16 and hashed into 4 chunks a round; the 3-token row is within a chunk (no hashing).
ENCODER = dict(vocab_size=64, hidden_size=32, num_attention_heads=4, attention_head_size=8,
               num_hidden_layers=4, attn_layers=["local", "lsh", "local", "lsh"], feed_forward_size=48,
               hidden_act="relu", axial_pos_embds=True, axial_pos_shape=[4, 8], axial_pos_embds_dim=[12, 20],
               max_position_embeddings=32, lsh_attn_chunk_length=4, local_attn_chunk_length=4, num_hashes=2,
               num_buckets=[2, 4], lsh_num_chunks_before=1, lsh_num_chunks_after=1, local_num_chunks_before=1,
               local_num_chunks_after=1, is_decoder=False, hash_seed=7, chunk_size_feed_forward=1, pad_token_id=0,
               hidden_dropout_prob=0.0, lsh_attention_probs_dropout_prob=0.0,
               local_attention_probs_dropout_prob=0.0, initializer_range=0.3, layer_norm_eps=1e-12)
ROWS = [[5, 17, 45, 8, 9, 63, 3, 22, 31, 40, 11, 2, 57], [4, 5, 6, 7, 19, 28, 37, 46], [12, 50, 33]]
# The LM: causal, LSH (2 hashes of 4 buckets, chunks of 4, one before) and local (chunks of 2)
# layers, a plain position table; the sequences grow from 6 to 15 tokens while generating.
DECODER = dict(ENCODER, attn_layers=["lsh", "local", "lsh"], num_hidden_layers=3, axial_pos_embds=False,
               num_buckets=4, local_attn_chunk_length=2, lsh_num_chunks_after=0, local_num_chunks_after=0,
               is_decoder=True, hash_seed=5, hidden_act="gelu", chunk_size_feed_forward=0, eos_token_id=2)
PROMPT = [7, 21, 3, 44, 9, 60]
LOGITS_IDS = [7, 21, 3, 44, 9, 60, 13, 29, 5, 38, 51, 17, 26, 33]
NEW_TOKENS = 9
RANDN_CASES = [(7, 4 * 8 * 2 * 3), (5, 4 * 8 * 2 * 2), (1234, 5), (3, 15), (9, 16), (11, 37), (0, 1)]


def floats(path, tensor):
    data = tensor.detach().to(torch.float32).contiguous().view(-1).tolist()
    path.write_bytes(struct.pack("<%df" % len(data), *data))


def randomise(model):
    """Biases and norms away from 0 and 1, so that each trait moves the outputs."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(".bias"):
                p.normal_(0.0, 0.2)
            elif "layer_norm.weight" in name:
                p.normal_(1.0, 0.2)


def fresh(out):
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)


def make_encoder():
    out = FIXTURES / "reformer"
    torch.manual_seed(3600)
    model = transformers.ReformerModel(transformers.ReformerConfig(**ENCODER)).eval()
    randomise(model)
    fresh(out)
    model.save_pretrained(out)
    model = transformers.ReformerModel.from_pretrained(out).eval()
    hidden = []
    with torch.no_grad():
        for row in ROWS:
            h = model(torch.tensor([row])).last_hidden_state[0]
            again = model(torch.tensor([row])).last_hidden_state[0]
            assert torch.equal(h, again), "hash_seed makes the rotations the same every call"
            hidden.append(h)
        # the traits the test relies on move the outputs: another seed, one hash, no chunks after
        for changes in (dict(hash_seed=8), dict(num_hashes=1), dict(lsh_num_chunks_after=0)):
            other = transformers.ReformerModel(transformers.ReformerConfig(**dict(ENCODER, **changes))).eval()
            other.load_state_dict(model.state_dict())
            moved = (other(torch.tensor([ROWS[0]])).last_hidden_state[0] - hidden[0]).abs().max().item()
            assert moved > 1e-2, f"{changes} moves the 13-token row by {moved} only"
            print(f"  reformer: {changes} moves the 13-token row by {moved:.3f}")
    floats(out / "reformer_hidden.bin", torch.cat(hidden))
    lines = [f"rows={len(ROWS)}"] + [f"ids{i}=" + ",".join(map(str, r)) for i, r in enumerate(ROWS)]
    (out / "reference.txt").write_text("\n".join(lines) + "\n", encoding="ascii")


def make_lm():
    out = FIXTURES / "reformer-lm"
    for attempt in range(50):
        torch.manual_seed(3700 + attempt)
        model = transformers.ReformerModelWithLMHead(transformers.ReformerConfig(**DECODER)).eval()
        randomise(model)
        fresh(out)
        model.save_pretrained(out)
        model = transformers.ReformerModelWithLMHead.from_pretrained(out).eval()
        with torch.no_grad():
            generated = model.generate(torch.tensor([PROMPT]), max_new_tokens=NEW_TOKENS, do_sample=False, num_beams=1,
                                       use_cache=False)[0, len(PROMPT):].tolist()
            try:  # transformers' own cached decoding, for the record (5.24's fails: see README)
                cached = model.generate(torch.tensor([PROMPT]), max_new_tokens=NEW_TOKENS, do_sample=False, num_beams=1,
                                        use_cache=True)[0, len(PROMPT):].tolist()
            except RuntimeError as error:
                cached = f"fails: {str(error)[:90]}"
        if len(generated) == NEW_TOKENS and len(set(generated)) >= 3:
            break
    else:
        raise SystemExit("reformer-lm: no weights in 50 draws generate %d varied tokens" % NEW_TOKENS)
    with torch.no_grad():
        logits = model(torch.tensor([LOGITS_IDS])).logits[0]
        hidden = model.reformer(torch.tensor([LOGITS_IDS])).last_hidden_state[0]
    floats(out / "logits.bin", logits)
    floats(out / "reformer_hidden.bin", hidden)
    lines = ["prompt_text=(ids)", "prompt_ids=" + ",".join(map(str, PROMPT)), "greedy_ids=" + ",".join(map(str, generated)),
             f"max_new_tokens={NEW_TOKENS}", "logits_ids=" + ",".join(map(str, LOGITS_IDS)),
             f"vocab_size={model.config.vocab_size}"]
    (out / "reference.txt").write_text("\n".join(lines) + "\n", encoding="ascii")
    print(f"  reformer-lm: draw {attempt}, greedy {generated}; with transformers' cache {cached}")


def make_randn():
    out = FIXTURES / "torch-randn"
    fresh(out)
    values = []
    for seed, count in RANDN_CASES:
        torch.manual_seed(seed)
        values.append(torch.randn(count, dtype=torch.float32))
    floats(out / "randn.bin", torch.cat(values))
    (out / "randn_cases.txt").write_text("".join(f"{s} {c}\n" for s, c in RANDN_CASES), encoding="ascii")
    print(f"  torch-randn: {len(RANDN_CASES)} cases, torch {torch.__version__}, CPU capability "
          f"{torch.backends.cpu.get_cpu_capability()}")


def main():
    torch.set_num_threads(1)
    print(f"transformers {transformers.__version__}")
    make_randn()
    make_encoder()
    make_lm()


if __name__ == "__main__":
    main()
