#!/usr/bin/env python3
"""Writes test/fixtures/llama-bpe/, the LLaMA directory that test_gguf.c saves as GGUF
(pf_quantize_gguf of a directory) beside gpt2-tiny: llama3-rope's shape and its LLaMA-3 byte-level
BPE tokenizer (tokenizer.ggml.pre "llama-bpe" backwards), with the default rope (a llama3 rope
scaling becomes llama.cpp's rope_freqs tensor, which the writer does not make yet) and weights of
its own (seed 1200), untied head, GQA 6/2, eos one id.

    python3 test/make_gguf_save_fixtures.py
"""
import json
import shutil
from pathlib import Path

import torch
from transformers import LlamaConfig, LlamaForCausalLM

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def main():
    source, out = FIXTURES / "llama3-rope", FIXTURES / "llama-bpe"
    spec = json.loads((source / "config.json").read_text())
    config = LlamaConfig(vocab_size=spec["vocab_size"], hidden_size=48, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=6, num_key_value_heads=2, head_dim=8, max_position_embeddings=2048,
                         rms_norm_eps=1e-5, rope_theta=500000.0, bos_token_id=spec["bos_token_id"],
                         eos_token_id=spec["eos_token_id"], tie_word_embeddings=False, initializer_range=0.3)
    torch.manual_seed(1200)
    model = LlamaForCausalLM(config).eval()
    out.mkdir(exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    for name in ("tokenizer.json", "tokenizer_config.json"):  # its tokenizer cases are llama3-rope's
        shutil.copy(source / name, out / name)


if __name__ == "__main__":
    main()
