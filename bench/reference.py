#!/usr/bin/env python3
"""The other engine for build/bench: Hugging Face transformers + torch on the same checkpoint.

    python3 bench/reference.py MODEL_DIR --prompt-file FILE --new N [--runs R] [--threads 1,2]
                               [--device cpu|cuda] [--dtype f32|f16|bf16]
    python3 bench/reference.py MODEL_DIR --encode --ids-file FILE [--token-types-file FILE]
                               [--attention sdpa,eager] [--dump-hidden FILE] [--runs R] [--threads 1,2]
                               [--device cpu|cuda] [--dtype f32|f16|bf16]

Measures what the bench measures for parallelformers: a greedy generation with the KV cache
(use_cache) from the prompt in FILE (token ids, space-separated), N new tokens, eos ignored.
Prefill: prompt tokens / the time to the first new token (one forward over the prompt, the last
position's logits only, and its argmax). Decode: (N - 1) / the time of the N - 1 one-token steps
after it. A warm-up run, then the median of R runs, for each torch thread count (CPU).

Prints one line per thread count (threads is 0 on CUDA):
    threads T prefill_tok_s X decode_tok_s Y
and the greedy tokens of the last run:
    tokens id id ...

With --encode: an encoder (AutoModel, e.g. BertModel) on one batch, what the bench measures with
pf_encode: the rows of FILE (one sentence of token ids a line, all the same length), segment ids
from the token-types file (zeros without one) and an all-ones attention mask, as a tokenizer
hands them over. One forward of the whole batch (last_hidden_state and the pooler) is timed: a
warm-up, then the median of R runs, for each attention implementation (transformers'
attn_implementation: sdpa is torch's scaled_dot_product_attention, eager its matmul-softmax-matmul)
and thread count. Prints one line per pair:
    threads T attention A sentences_s X
and writes the first pair's last_hidden_state [rows * length][hidden] as float32 to --dump-hidden.

On failure: one line "error: ..." and exit status 1.
"""
import argparse
import array
import inspect
import statistics
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model_dir")
    ap.add_argument("--prompt-file")
    ap.add_argument("--encode", action="store_true", help="time an encoder's forward on --ids-file instead")
    ap.add_argument("--ids-file")
    ap.add_argument("--token-types-file")
    ap.add_argument("--attention", default="sdpa", help="comma-separated attn_implementation values (--encode)")
    ap.add_argument("--dump-hidden", help="where --encode writes the first run's last_hidden_state (float32)")
    ap.add_argument("--new", type=int, default=32)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", default="0", help="comma-separated torch thread counts; 0: torch's default")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--dtype", default="f32", choices=["f32", "f16", "bf16"])
    args = ap.parse_args()

    try:
        import torch
        from transformers import AutoModelForCausalLM
    except Exception as e:  # noqa: BLE001 - any import failure means "not available"
        print(f"error: {e}")
        return 1
    if args.device == "cuda" and not torch.cuda.is_available():
        print("error: torch has no CUDA device")
        return 1
    if args.encode:
        return encode(args, torch)
    if not args.prompt_file:
        print("error: --prompt-file is needed (or --encode)")
        return 1

    with open(args.prompt_file) as f:
        prompt_ids = [int(x) for x in f.read().split()]
    dtype = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[args.dtype]
    try:
        model = AutoModelForCausalLM.from_pretrained(args.model_dir, dtype=dtype)
    except TypeError:  # transformers before 4.56 calls it torch_dtype
        model = AutoModelForCausalLM.from_pretrained(args.model_dir, torch_dtype=dtype)
    model.to(args.device).eval()
    # The prefill computes the last position's logits only, as generate() does, where supported.
    last_only = {"logits_to_keep": 1} if "logits_to_keep" in inspect.signature(model.forward).parameters else {}
    prompt = torch.tensor([prompt_ids], device=args.device)

    def sync():
        if args.device == "cuda":
            torch.cuda.synchronize()

    def generate(new):
        with torch.inference_mode():
            sync()
            t0 = time.perf_counter()
            out = model(input_ids=prompt, use_cache=True, **last_only)
            token = out.logits[:, -1, :].argmax(-1, keepdim=True)
            tokens = [int(token)]  # reading the token waits for the device, as ours does
            t1 = time.perf_counter()
            past = out.past_key_values
            for _ in range(new - 1):
                out = model(input_ids=token, past_key_values=past, use_cache=True)
                past = out.past_key_values
                token = out.logits[:, -1, :].argmax(-1, keepdim=True)
                tokens.append(int(token))
            t2 = time.perf_counter()
        decode = (new - 1) / (t2 - t1) if new > 1 else float("nan")
        return len(prompt_ids) / (t1 - t0), decode, tokens

    tokens = []
    for threads in [int(t) for t in args.threads.split(",")]:
        if args.device == "cpu" and threads > 0:
            torch.set_num_threads(threads)
        generate(min(args.new, 8))  # warm-up
        prefill, decode = [], []
        for _ in range(args.runs):
            p, d, tokens = generate(args.new)
            prefill.append(p)
            decode.append(d)
        print(f"threads {threads if args.device == 'cpu' else 0} prefill_tok_s {statistics.median(prefill):.3f} "
              f"decode_tok_s {statistics.median(decode):.3f}", flush=True)
    print("tokens " + " ".join(str(t) for t in tokens))
    return 0


def read_rows(path):
    with open(path) as f:
        return [[int(x) for x in line.split()] for line in f if line.strip()]


def encode(args, torch):
    """The --encode mode: see the module's docstring."""
    from transformers import AutoModel

    if not args.ids_file:
        print("error: --encode needs --ids-file")
        return 1
    ids = torch.tensor(read_rows(args.ids_file), device=args.device)
    types = torch.tensor(read_rows(args.token_types_file), device=args.device) if args.token_types_file else torch.zeros_like(ids)
    mask = torch.ones_like(ids)
    dtype = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[args.dtype]

    def sync():
        if args.device == "cuda":
            torch.cuda.synchronize()

    def forward(model):
        with torch.inference_mode():
            sync()
            t0 = time.perf_counter()
            out = model(input_ids=ids, token_type_ids=types, attention_mask=mask)
            sync()
            return time.perf_counter() - t0, out

    dumped = False
    for attention in args.attention.split(","):
        try:
            model = AutoModel.from_pretrained(args.model_dir, dtype=dtype, attn_implementation=attention)
        except TypeError:  # transformers before 4.56 calls it torch_dtype
            model = AutoModel.from_pretrained(args.model_dir, torch_dtype=dtype, attn_implementation=attention)
        except Exception as e:  # noqa: BLE001 - an attention this transformers lacks: say so, go on
            print(f"error: attention {attention}: {e}", flush=True)
            continue
        model.to(args.device).eval()
        for threads in [int(t) for t in args.threads.split(",")]:
            if args.device == "cpu" and threads > 0:
                torch.set_num_threads(threads)
            forward(model)  # warm-up
            seconds = []
            for _ in range(args.runs):
                s, out = forward(model)
                seconds.append(s)
            if args.dump_hidden and not dumped:
                # array, not numpy: torch runs without numpy; float32 in the machine's (little) endianness
                with open(args.dump_hidden, "wb") as f:
                    array.array("f", out.last_hidden_state.float().cpu().flatten().tolist()).tofile(f)
                dumped = True
            print(f"threads {threads if args.device == 'cpu' else 0} attention {attention} "
                  f"sentences_s {ids.shape[0] / statistics.median(seconds):.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
