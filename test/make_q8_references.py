#!/usr/bin/env python3
"""References for the Q8_0 and Q4_0 weight formats (PF_DTYPE_Q8_0 / _Q4_0, `--dtype q8|q4`) of the CPU ranks.

Run as `python3 test/make_q8_references.py`. Deterministic (fixed seeds). It writes

  test/fixtures/llama-q8/        a tiny random LlamaForCausalLM whose every matrix splits on the
                                 32-column block grid on 1 and 2 ranks (hidden 64, 4 heads of 16,
                                 2 key/value heads, MLP 128, vocabulary 512, untied head), with
                                 reference.txt and reference_logits.bin as the other fixtures
                                 (transformers in fp32)
  <fixture>/q8/reference.txt     for llama-q8 and gpt2-wide: the prompt, and the greedy ids of the
  <fixture>/q8/reference_logits.bin   same model run with Q8_0 arithmetic, and its prompt logits
  <fixture>/q4/...               the same with Q4_0 weights
  <fixture>/bf16p/...            the same with bf16 products (pf_parallel_options.bf16_products):
                                 every weight rounded to bf16 and every matrix product's input too

`python3 test/make_q8_references.py bf16p` writes the bf16p references alone, from the saved
fixtures (the other files stay as they are).

"bf16 products" are what CPU ranks compute with dtype bf16 and bf16_products: every parameter
rounded to bf16 (to nearest even, as the library stores them), every matrix product's input rounded
the same way, the exact products summed in fp32; embeddings, norms, attention and the rest in fp32.

"Q8_0 arithmetic" is what the library computes, simulated in torch: every weight matrix and
embedding table quantized in blocks of 32 along its input dimension (an fp16 scale
d = max|w| / 127, then round(w / d) in -127..127, used as d * q), and the input of every matrix
product quantized per block of 32 the same way with an fp32 scale; norms, biases, attention and
everything else in fp32. Q4_0 is the same with the weights as llama.cpp's Q4_0 (d = m / -8 for
the value m of largest magnitude, rounded to fp16, then q = min(15, floor(w / d + 8.5)), used as
d * (q - 8)); the inputs stay Q8 blocks. The C test compares the library's q8 ranks with these logits and
greedy ids (which it can match only if it quantizes what and how this says), and reports the
distance to the fp32 logits, which is the format's own error.
"""

import json
import sys
from pathlib import Path

import numpy as np
import torch
import transformers.pytorch_utils as hf_utils
from transformers import AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_fixtures import FIXTURES, MAX_NEW_TOKENS, ids_str, reset_dir  # noqa: E402

BLOCK = 32
PROMPT_IDS = [1, 417, 33, 250, 8, 91, 302, 77, 5, 160, 444]
MIN_MARGIN = 0.05  # each Q8 greedy step's top-1 minus top-2 logit, well above the C test's bound


def quantize_weight(w: torch.Tensor) -> torch.Tensor:
    """w [out][in] as Q8_0 holds it (in a multiple of BLOCK)."""
    blocks = w.reshape(-1, BLOCK)
    d = (blocks.abs().amax(1, keepdim=True) / 127).half().float()
    inverse = torch.where(d > 0, 1 / d, torch.zeros_like(d))
    return (torch.round(blocks * inverse).clamp(-127, 127) * d).reshape(w.shape)


def quantize_weight_q4(w: torch.Tensor) -> torch.Tensor:
    blocks = w.reshape(-1, BLOCK)
    extreme = torch.gather(blocks, 1, blocks.abs().argmax(1, keepdim=True))
    d = (extreme / -8).half().float()
    inverse = torch.where(d != 0, 1 / d, torch.zeros_like(d))
    q = torch.floor(blocks * inverse + 8.5).clamp(0, 15)
    return ((q - 8) * d).reshape(w.shape)


def quantize_input(x: torch.Tensor) -> torch.Tensor:
    blocks = x.reshape(-1, BLOCK)
    d = blocks.abs().amax(1, keepdim=True) / 127
    inverse = torch.where(d > 0, 1 / d, torch.zeros_like(d))
    return (torch.round(blocks * inverse) * d).reshape(x.shape)


def make_bf16_products(model) -> None:
    """Turns the model's parameters into bf16 values and its matrix products' inputs too, in place."""
    for p in model.parameters():
        p.data = p.data.bfloat16().float()
    for module in model.modules():
        if isinstance(module, (torch.nn.Linear, hf_utils.Conv1D)):
            module.register_forward_pre_hook(lambda _, args: (args[0].bfloat16().float(),))


def write_bf16_products() -> None:
    for name in ("llama-q8", "gpt2-wide"):
        path = FIXTURES / name
        prompt = [int(v) for v in
                  next(l for l in (path / "reference.txt").read_text().splitlines() if l.startswith("prompt_ids="))
                  .split("=", 1)[1].split(",")]
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
        make_bf16_products(model)
        vocab = json.loads((path / "config.json").read_text())["vocab_size"]
        margins = write_reference(model, path / "bf16p", prompt, vocab)
        if min(margins) < MIN_MARGIN:
            raise SystemExit(f"{name}: bf16 products' greedy margin {min(margins):.3f} is too small to test")
        print(f"{name}: smallest bf16p greedy margin {min(margins):.3f}")


def make_quantized(model, quantize=quantize_weight) -> None:
    """Turns the model's matrix products and embeddings into Q8_0 (or Q4_0) arithmetic, in place."""
    seen = set()
    for module in model.modules():
        conv1d = isinstance(module, hf_utils.Conv1D)  # GPT-2's [in][out] matrices
        if not isinstance(module, (torch.nn.Embedding, torch.nn.Linear)) and not conv1d:
            continue
        w = module.weight
        inputs = w.shape[0] if conv1d else w.shape[1]
        assert inputs % BLOCK == 0, f"{module}: {inputs} inputs"
        if id(w) not in seen:  # a tied head shares the embedding's (already quantized) table
            seen.add(id(w))
            w.data = quantize(w.data.t().contiguous()).t().contiguous() if conv1d else quantize(w.data)
        if not isinstance(module, torch.nn.Embedding):
            module.register_forward_pre_hook(lambda _, args: (quantize_input(args[0]),))


@torch.no_grad()
def greedy(model, ids):
    """Greedy ids (no cache: each step's full forward, as the logits above) and each step's margin."""
    ids, out, margins = list(ids), [], []
    for _ in range(MAX_NEW_TOKENS):
        logits = model(torch.tensor([ids])).logits[0, -1]
        top = torch.topk(logits, 2)
        margins.append(float(top.values[0] - top.values[1]))
        out.append(int(top.indices[0]))
        ids.append(out[-1])
    return out, margins


@torch.no_grad()
def write_reference(model, out_dir: Path, prompt_ids, vocab: int) -> list[float]:
    logits = model(torch.tensor([prompt_ids])).logits[0].float().numpy()
    ids, margins = greedy(model, prompt_ids)
    out_dir.mkdir(exist_ok=True)
    (out_dir / "reference.txt").write_text(
        f"prompt_text=(ids only)\nprompt_ids={ids_str(prompt_ids)}\nmax_new_tokens={MAX_NEW_TOKENS}\n"
        f"greedy_ids={ids_str(ids)}\nvocab_size={vocab}\n")
    logits.astype("<f4").tofile(out_dir / "reference_logits.bin")
    return margins


def llama_q8(seed: int) -> LlamaForCausalLM:
    config = LlamaConfig(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                         rms_norm_eps=1e-5, tie_word_embeddings=False, bos_token_id=1, eos_token_id=2)
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config).eval()
    with torch.no_grad():  # large weights and random norm weights, as the family fixtures
        for name, p in model.named_parameters():
            p.copy_(torch.randn_like(p) * (0.3 if p.dim() == 2 else 0.5) + (1.0 if "norm" in name else 0.0))
    return model


def main() -> None:
    torch.set_grad_enabled(False)
    if sys.argv[1:] == ["bf16p"]:
        write_bf16_products()
        return
    # llama-q8: the first seed whose Q8 greedy steps all have a clear margin
    # llama-q8: the first seed whose Q8 and Q4 greedy steps all have a clear margin
    for seed in range(100):
        model, q8, q4 = llama_q8(seed), llama_q8(seed), llama_q8(seed)
        make_quantized(q8)
        make_quantized(q4, quantize_weight_q4)
        if min(greedy(q8, PROMPT_IDS)[1]) >= MIN_MARGIN and min(greedy(q4, PROMPT_IDS)[1]) >= MIN_MARGIN:
            break
    else:
        raise SystemExit("no seed gives clear Q8 and Q4 margins")
    out = reset_dir(FIXTURES / "llama-q8")
    model.save_pretrained(out, safe_serialization=True)
    (out / "generation_config.json").unlink(missing_ok=True)
    write_reference(model, out, PROMPT_IDS, 512)
    for name, quantized in (("q8", q8), ("q4", q4)):
        margins = write_reference(quantized, out / name, PROMPT_IDS, 512)
        print(f"llama-q8: seed {seed}, smallest {name} greedy margin {min(margins):.3f}")

    # gpt2-wide: the existing fixture (32 wide: every matrix on the grid at 1 rank)
    path = FIXTURES / "gpt2-wide"
    prompt = [int(v) for v in
              next(l for l in (path / "reference.txt").read_text().splitlines() if l.startswith("prompt_ids="))
              .split("=", 1)[1].split(",")]
    for name, quantize in (("q8", quantize_weight), ("q4", quantize_weight_q4)):
        quantized = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
        make_quantized(quantized, quantize)
        vocab = json.loads((path / "config.json").read_text())["vocab_size"]
        margins = write_reference(quantized, path / name, prompt, vocab)
        print(f"gpt2-wide: smallest {name} greedy margin {min(margins):.3f}")
    write_bf16_products()


if __name__ == "__main__":
    main()
