#!/usr/bin/env python3
"""The encoder-decoder bench's checkpoint and reference (make bench; build/bench_seq2seq reads its
output): a T5-base-shaped model (d_model 768, 12 + 12 layers, 12 heads, d_ff 3072, vocab 32128,
ReLU, tied) with random weights saved by transformers into --dir when it is not there, and
transformers' generate() on it: one source of --source random ids, greedy, --new new tokens
(min_new_tokens too, so eos never stops it), use_cache, torch threads = each of --threads. Prints
one JSON line per thread count: the time to the first new token (generate with one new token:
the encoder and the first decoder step), the decode rate over the others, and the tokens.

    python3 bench/seq2seq_reference.py --dir DIR [--threads 1,2] [--source 512] [--new 64] [--runs 3]
"""
import argparse
import json
import time
from pathlib import Path

import torch
import transformers


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--source", type=int, default=512)
    ap.add_argument("--new", type=int, default=64)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    out = Path(args.dir)
    if not (out / "model.safetensors").exists():
        torch.manual_seed(1234)
        config = transformers.T5Config(vocab_size=32128, d_model=768, d_kv=64, d_ff=3072, num_layers=12,
                                       num_decoder_layers=12, num_heads=12, feed_forward_proj="relu",
                                       dropout_rate=0.0, decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
        transformers.T5ForConditionalGeneration(config).save_pretrained(out)
    model = transformers.T5ForConditionalGeneration.from_pretrained(out).eval()
    generator = torch.Generator().manual_seed(7)
    source = torch.randint(2, 32000, (1, args.source), generator=generator)
    (out / "bench_source.txt").write_text(",".join(map(str, source[0].tolist())) + "\n")
    for threads in [int(t) for t in args.threads.split(",")]:
        torch.set_num_threads(threads)

        def run(new):
            start = time.perf_counter()
            with torch.no_grad():
                ids = model.generate(source, max_new_tokens=new, min_new_tokens=new, do_sample=False, num_beams=1)
            return time.perf_counter() - start, ids[0, 1:].tolist()

        run(2)  # warm-up
        first = sorted(run(1)[0] for _ in range(args.runs))[args.runs // 2]
        totals, tokens = [], None
        for _ in range(args.runs):
            seconds, tokens = run(args.new)
            totals.append(seconds)
        total = sorted(totals)[args.runs // 2]
        print(json.dumps({"threads": threads, "first_token_s": first, "decode_tok_s": (args.new - 1) / (total - first),
                          "tokens": tokens}), flush=True)


if __name__ == "__main__":
    main()
