#!/usr/bin/env python3
"""Regenerate test/fixtures/my-llama: a checkpoint of an architecture that is not compiled in,
for the registered-policy tests (test/test_policies.c; issue 15 item 2).

Run as `python3 test/make_policy_fixture.py` (standard library only). It is test/fixtures/llama
(a tiny LLaMA saved by transformers' save_pretrained, made by make_family_fixtures.py) written
under other names, as a program with its own training code would save it:

  - every tensor renamed (model.layers.N.self_attn.q_proj.weight -> net.blocks.N.attn.query, ...;
    lm_head.weight -> head.weight, outside the "net." prefix), the bytes unchanged;
  - config.json's keys renamed (hidden_size -> d_model, ...) and its model_type "my-llama";
  - reference.txt and reference_logits.bin copied: transformers' outputs for these same weights
    (recorded from the original model by make_family_fixtures.py);
  - policy.json: the policy that maps the names back (test_policies.c spells the same policy as
    a pf_policy struct). The library loads the directory only through a registered policy.
"""

import json
import re
import shutil
import struct
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SOURCE = FIXTURES / "llama"
OUT = FIXTURES / "my-llama"

# transformers' names -> ours, with (\d+) the layer.
TENSOR_NAMES = [
    (r"model\.embed_tokens\.weight", "net.embed.weight"),
    (r"model\.layers\.(\d+)\.input_layernorm\.weight", r"net.blocks.\1.norm1.scale"),
    (r"model\.layers\.(\d+)\.self_attn\.q_proj\.weight", r"net.blocks.\1.attn.query"),
    (r"model\.layers\.(\d+)\.self_attn\.k_proj\.weight", r"net.blocks.\1.attn.key"),
    (r"model\.layers\.(\d+)\.self_attn\.v_proj\.weight", r"net.blocks.\1.attn.value"),
    (r"model\.layers\.(\d+)\.self_attn\.o_proj\.weight", r"net.blocks.\1.attn.out"),
    (r"model\.layers\.(\d+)\.post_attention_layernorm\.weight", r"net.blocks.\1.norm2.scale"),
    (r"model\.layers\.(\d+)\.mlp\.gate_proj\.weight", r"net.blocks.\1.ffn.gate"),
    (r"model\.layers\.(\d+)\.mlp\.up_proj\.weight", r"net.blocks.\1.ffn.up"),
    (r"model\.layers\.(\d+)\.mlp\.down_proj\.weight", r"net.blocks.\1.ffn.down"),
    (r"model\.norm\.weight", "net.final_norm.scale"),
    (r"lm_head\.weight", "head.weight"),
]

# transformers' config.json keys -> ours (others are left out)
CONFIG_KEYS = {
    "hidden_size": "d_model",
    "num_attention_heads": "n_heads",
    "num_key_value_heads": "n_kv_heads",
    "num_hidden_layers": "n_layers",
    "vocab_size": "vocab_size",
    "max_position_embeddings": "max_seq_len",
    "intermediate_size": "ffn_dim",
    "rms_norm_eps": "norm_eps",
    "hidden_act": "act",
    "bos_token_id": "bos_token_id",
    "eos_token_id": "eos_token_id",
    "tie_word_embeddings": "tie_word_embeddings",
}

# The policy, in policies.inc's vocabulary: (slot, pattern after the prefix, layout, split, need).
TENSORS = [
    ("token_embed", "embed.weight", "out_in", "vocab", "required"),
    ("attn_norm_weight", "blocks.%d.norm1.scale", "vector", "none", "required"),
    ("q_weight", "blocks.%d.attn.query", "out_in", "head_columns", "required"),
    ("k_weight", "blocks.%d.attn.key", "out_in", "kv_columns", "required"),
    ("v_weight", "blocks.%d.attn.value", "out_in", "kv_columns", "required"),
    ("attn_out_weight", "blocks.%d.attn.out", "out_in", "head_rows", "required"),
    ("mlp_norm_weight", "blocks.%d.norm2.scale", "vector", "none", "required"),
    ("mlp_gate_weight", "blocks.%d.ffn.gate", "out_in", "mlp_columns", "required"),
    ("mlp_up_weight", "blocks.%d.ffn.up", "out_in", "mlp_columns", "required"),
    ("mlp_down_weight", "blocks.%d.ffn.down", "out_in", "mlp_rows", "required"),
    ("final_norm_weight", "final_norm.scale", "vector", "none", "required"),
    ("lm_head", "head.weight", "out_in", "vocab", "optional"),  # tied checkpoints have none
]
POLICY = {
    "model_type": "my-llama",
    "kind": "decoder",
    "norm": "rms",
    "positions": "rotary_halves",
    "mlp": "gated",
    "activation_key": "act",
    "activation_default": "silu",
    "tied_lm_head": 0,
    "prefixes": ["net."],
    "config": [
        {"field": "hidden_size", "key": "d_model"},
        {"field": "num_heads", "key": "n_heads"},
        {"field": "num_kv_heads", "key": "n_kv_heads", "fallback": 0},
        {"field": "head_dim", "key": "head_dim", "fallback": 0},
        {"field": "num_layers", "key": "n_layers"},
        {"field": "vocab_size", "key": "vocab_size"},
        {"field": "max_positions", "key": "max_seq_len"},
        {"field": "intermediate_size", "key": "ffn_dim"},
        {"field": "norm_eps", "key": "norm_eps", "fallback": 1e-6},
        {"field": "rope_theta", "key": "rope_base", "fallback": 10000},
    ],
    "tensors": [dict(zip(("slot", "pattern", "layout", "split", "need"), t)) for t in TENSORS],
}


def rename(name: str) -> str:
    for pattern, ours in TENSOR_NAMES:
        if re.fullmatch(pattern, name):
            return re.sub(pattern, ours, name)
    raise SystemExit(f"{SOURCE}: no new name for tensor {name}")


def main() -> None:
    data = (SOURCE / "model.safetensors").read_bytes()
    (header_len,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + header_len])
    renamed = {k if k == "__metadata__" else rename(k): v for k, v in header.items()}
    text = json.dumps(renamed, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the data stays 8-byte aligned, as safetensors writes it

    config = json.loads((SOURCE / "config.json").read_text())
    ours = {"model_type": "my-llama", "architectures": ["MyLlamaForCausalLM"],
            "rope_base": config["rope_parameters"]["rope_theta"]}
    for theirs, key in CONFIG_KEYS.items():
        ours[key] = config[theirs]
    assert config["head_dim"] * config["num_attention_heads"] == config["hidden_size"]  # derived, not written

    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir()
    (OUT / "model.safetensors").write_bytes(struct.pack("<Q", len(text)) + text + data[8 + header_len:])
    (OUT / "config.json").write_text(json.dumps(ours, indent=2, sort_keys=True) + "\n")
    for name in ("reference.txt", "reference_logits.bin"):
        shutil.copyfile(SOURCE / name, OUT / name)
    (OUT / "policy.json").write_text(json.dumps(POLICY, indent=1) + "\n")
    print(f"{OUT.name}: {len(renamed) - 1} tensors renamed from {SOURCE.name}")


if __name__ == "__main__":
    main()
