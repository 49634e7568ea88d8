#!/usr/bin/env python3
"""Writes the GGUF test fixtures (issue 12) with the gguf package, as llama.cpp's
convert_hf_to_gguf.py lays models out, and records transformers' outputs on exactly the weights
each file holds (read back and dequantized by the gguf package, not by our code).

    pip install gguf
    python3 test/make_gguf_fixtures.py

writes test/fixtures/gguf/:
  llama-f32.gguf    the llama fixture, F32 (LLaMA's q and k rows permuted as llama.cpp does; its
                    tokenizer as llama.cpp writes a SentencePiece vocabulary, tokenizer.ggml.model
                    "llama": pieces, scores (the fixture's merge order), token types)
  llama-f16.gguf    the same, matrices F16 (norms F32, as llama.cpp keeps vectors)
  llama-quant.gguf  a random LLaMA whose rows are 256 wide, each matrix in one of Q8_0, Q4_0, Q4_1,
                    Q4_K, Q6_K (every type in each layer's slots, rotated per layer), norms BF16
  llama-q3k.gguf    the same random LLaMA, every matrix Q3_K
  llama-q2k.gguf    a random LLaMA whose rows are 512 wide (whole K blocks on 2 ranks), every matrix Q2_K
  llama-iq4.gguf    the same, matrices IQ4_XS, the embedding and output IQ4_NL
  llama-bias.gguf   a random LLaMA with attention and MLP biases and a tied head, F32
  gpt2-f32.gguf     the gpt2-tiny fixture, F32, with its byte-level BPE tokenizer ("gpt2", "gpt-2")
  gpt2-q8.gguf      the same, matrices Q8_0 / Q4_0 / Q4_1
  llama3-rope-rope-freqs.gguf  the llama3-rope fixture, F32, with LLaMA 3.1's rope scaling as
                    llama.cpp's converter stores it: a rope_freqs tensor of per-frequency factors
                    (computed with the fixture's original_max_position_embeddings) and no scaling keys
  llama-rope-yarn-f32.gguf  the llama-rope-yarn fixture with rope.scaling.type yarn, its factor and
                    original_context_length (the converter's generic rope scaling keys)
  llama-split-0000K-of-00003.gguf  the llama fixture, F32, split over 3 files as gguf-split and the
                    gguf package write them (split.no / split.count / split.tensors.count)
  qwen2-f32.gguf    the qwen2 fixture as the converter writes Qwen2 (no q/k permutation, biases, tied)
  mistral-f32.gguf  the mistral fixture as the converter writes MistralForCausalLM: arch "llama"
                    (permuted q/k) and no sliding window, so its reference is LLaMA's math on those
                    weights (transformers' Mistral without the window)
  gpt_neox-f32.gguf, gpt_neox-seq-f32.gguf  the gpt_neox fixtures (fused qkv regrouped as all q, all
                    k, all v; rope.dimension_count; use_parallel_residual)
  bloom-f32.gguf    the bloom fixture (fused qkv regrouped; the tied head written as output.weight)
  granite-f32.gguf  the granite fixture: LLaMA's layout under arch "granite", the multipliers as
                    granite.embedding_scale / residual_scale / attention.scale / logit_scale
  qwen3moe-quant.gguf, olmoe-quant.gguf, qwen2moe-quant.gguf  a random Qwen3-MoE, OLMoE and Qwen2-MoE
                    (its shared expert and gate) whose rows are 256 wide as the
                    converter writes them (experts stacked [experts, rows, cols], gate and up Q4_K,
                    down Q6_K / Q8_0, the router F32)
  gpt-oss-mxfp4.gguf  a random gpt-oss whose experts are MXFP4 (gate and up apart, their biases split),
                    attention Q8_0, as llama.cpp's converter writes the released checkpoints
                    (write_gpt_oss; `make_gguf_fixtures.py gpt-oss` writes it alone)
  deepseek2-v3.gguf  a random DeepSeek V3 (q_lora, kv_b split into k_b / v_b, a dense layer then 4
                    experts with sigmoid group routing and a shared expert, YaRN with yarn_log_multiplier)
                    as llama.cpp's converter writes it (write_deepseek; `make_gguf_fixtures.py deepseek2`);
  deepseek2-v3-older.gguf  one without q_lora as older converters wrote it (attn_kv_b whole, no _mla
                    keys) and without the routing keys (llama.cpp's defaults: no groups, norm or scale)
  deepseek2-v2.gguf  a random DeepSeek V2 (V2-Lite's form: q_proj, softmax routing greedy, scaled)
                    (`make_gguf_fixtures.py deepseek2-v2` writes it alone)
  deepseek2-v2-groups.gguf  the same with group_limited_greedy over 2 groups of 2 experts, 1 kept
                    (`make_gguf_fixtures.py deepseek2-v2-groups`)
  cohere2-f32.gguf  the cohere2 fixture (its window and window pattern as keys)
  starcoder-f32.gguf  the gpt_bigcode fixture as the converter writes StarCoder (multi-query c_attn as it is)
  bert-f32.gguf     the bert-save directory (sentence-transformers: CLS pooling, Normalize) as the
                    converter writes BERT: no pooler, pooling_type, its WordPiece vocabulary as "bert"
                    (write_bert; `make_gguf_fixtures.py bert`; checked against bert-save's own files)
  The fixtures' logits are transformers' on the fixture directories themselves: F32 files hold
  exactly their weights.
  gguf_reference.txt  a line per file: name, prompt ids, transformers' greedy new ids (8),
                    transformers' logits at every prompt position (comma floats)
and test/fuzz_seeds/gguf/tiny-gpt2.gguf and tiny-llama-spm.gguf, the fuzz target's seeds.
Q2_K, Q3_K, Q4_K, Q6_K, IQ4_NL and IQ4_XS blocks are packed by the small quantizers below (gguf-py has dequantizers for
them, no quantizers); the gguf package's dequantizer reads them back for the reference.
"""
import json
import math
from pathlib import Path

import gguf
import numpy as np
import torch
from gguf import GGMLQuantizationType as Q
from gguf import GGUFReader, GGUFWriter, TokenType
from gguf.quants import dequantize, quantize
from safetensors.numpy import load_file
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

ROOT = Path(__file__).resolve().parent
FIXTURES = ROOT / "fixtures"
OUT = FIXTURES / "gguf"
NEW_TOKENS = 8


def f16_bytes(x):
    return np.asarray(x, dtype=np.float16).reshape(-1, 1).view(np.uint8)


def quantize_q4_k(w):
    """[rows][cols] (cols % 256 == 0) into Q4_K blocks: d, dmin, 12 bytes of 6-bit sub-block
    scales and mins, 128 bytes of nibbles; x ~ d * sc * q - dmin * m."""
    blocks = w.reshape(-1, 8, 32).astype(np.float32)
    lo = np.minimum(blocks.min(axis=2), 0)
    scale = (blocks.max(axis=2) - lo) / 15
    offset = -lo
    d = np.maximum(scale.max(axis=1), 1e-8) / 63
    dmin = np.maximum(offset.max(axis=1), 1e-8) / 63
    d, dmin = d.astype(np.float16).astype(np.float32), dmin.astype(np.float16).astype(np.float32)
    sc = np.clip(np.round(scale / d[:, None]), 1, 63).astype(np.int32)
    m = np.clip(np.round(offset / dmin[:, None]), 0, 63).astype(np.int32)
    q = np.clip(np.round((blocks + (dmin[:, None] * m)[:, :, None]) / (d[:, None] * sc)[:, :, None]), 0, 15).astype(np.uint8)
    packed = np.zeros((blocks.shape[0], 12), dtype=np.uint8)
    packed[:, 0:4] = (sc[:, 0:4] & 63) | ((sc[:, 4:8] >> 4) << 6)
    packed[:, 4:8] = (m[:, 0:4] & 63) | ((m[:, 4:8] >> 4) << 6)
    packed[:, 8:12] = (sc[:, 4:8] & 15) | ((m[:, 4:8] & 15) << 4)
    qs = (q[:, 0::2, :] | (q[:, 1::2, :] << 4)).reshape(-1, 128)  # sub-blocks 2k low, 2k + 1 high
    out = np.concatenate([f16_bytes(d), f16_bytes(dmin), packed, qs], axis=1)
    return out.reshape(w.shape[0], -1)


def quantize_q6_k(w):
    """[rows][cols] (cols % 256 == 0) into Q6_K blocks: 128 bytes of low nibbles, 64 of 2-bit
    highs, 16 int8 scales (one per 16 weights), d; x ~ d * sc * (q - 32)."""
    blocks = w.reshape(-1, 16, 16).astype(np.float32)
    scale = np.abs(blocks).max(axis=2) / 31
    d = np.maximum(np.abs(scale).max(axis=1), 1e-8) / 127
    d = d.astype(np.float16).astype(np.float32)
    sc = np.clip(np.round(scale / d[:, None]), 1, 127).astype(np.int8)
    q = np.clip(np.round(blocks / (d[:, None] * sc)[:, :, None]) + 32, 0, 63).astype(np.uint8).reshape(-1, 2, 4, 32)
    # per half of 128: the four runs of 32 (y[l], y[l+32], y[l+64], y[l+96])
    ql = (np.concatenate([q[:, :, 0] & 15 | (q[:, :, 2] & 15) << 4, q[:, :, 1] & 15 | (q[:, :, 3] & 15) << 4], axis=2)
          .reshape(-1, 128))
    qh = ((q[:, :, 0] >> 4) | (q[:, :, 1] >> 4) << 2 | (q[:, :, 2] >> 4) << 4 | (q[:, :, 3] >> 4) << 6).reshape(-1, 64)
    out = np.concatenate([ql.astype(np.uint8), qh.astype(np.uint8), sc.view(np.uint8), f16_bytes(d)], axis=1)
    return out.reshape(w.shape[0], -1)


def quantize_q3_k(w):
    """[rows][cols] (cols % 256 == 0) into Q3_K blocks: 32 bytes of high bits (bit 4 h + k of byte
    i: weight i of sub-block 4 h + k's third bit), 64 bytes of 2-bit lows (half h's 32 bytes, bits
    2k: sub-block 4 h + k), 12 bytes of 6-bit scales per 16 weights (low nibbles in bytes 0..7,
    high bit pairs in bytes 8..11), d; x ~ d * (sc - 32) * q, q in -4..3."""
    groups = w.reshape(-1, 16, 16).astype(np.float32)
    step = np.abs(groups).max(axis=2) / 4
    d = (np.maximum(step.max(axis=1), 1e-8) / 31).astype(np.float16).astype(np.float32)
    sc = np.clip(np.round(step / d[:, None]), 1, 31).astype(np.int32) + 32
    q = np.clip(np.round(groups / (d[:, None] * (sc - 32))[:, :, None]), -4, 3).astype(np.int32) + 4  # 0..7
    q = q.reshape(-1, 2, 4, 32)  # [block][half][k][weight]
    hmask = np.zeros((q.shape[0], 32), dtype=np.uint8)
    qs = np.zeros((q.shape[0], 2, 32), dtype=np.uint8)
    for h in range(2):
        for k in range(4):
            hmask |= ((q[:, h, k] >> 2) & 1).astype(np.uint8) << (4 * h + k)
            qs[:, h] |= (q[:, h, k] & 3).astype(np.uint8) << (2 * k)
    packed = np.zeros((q.shape[0], 12), dtype=np.uint8)
    for s in range(16):
        low, high = sc[:, s] & 15, (sc[:, s] >> 4) & 3
        packed[:, s if s < 8 else s - 8] |= (low << (0 if s < 8 else 4)).astype(np.uint8)
        packed[:, 8 + s % 4] |= (high << (2 * (s // 4))).astype(np.uint8)
    out = np.concatenate([hmask, qs.reshape(-1, 64), packed, f16_bytes(d)], axis=1)
    return out.reshape(w.shape[0], -1)


def quantize_q2_k(w):
    """[rows][cols] (cols % 256 == 0) into Q2_K blocks: 16 bytes of 4-bit scales (low nibble) and
    minimums (high nibble), one per 16 weights, 64 bytes of 2-bit values (half h's 32 bytes, bits
    2k: sub-block 4 h + k), d, dmin; x ~ d * sc * q - dmin * m, q in 0..3."""
    groups = w.reshape(-1, 16, 16).astype(np.float32)
    lo = np.minimum(groups.min(axis=2), 0)
    step = (groups.max(axis=2) - lo) / 3
    d = (np.maximum(step.max(axis=1), 1e-8) / 15).astype(np.float16).astype(np.float32)
    dmin = (np.maximum((-lo).max(axis=1), 1e-8) / 15).astype(np.float16).astype(np.float32)
    sc = np.clip(np.round(step / d[:, None]), 1, 15).astype(np.int32)
    m = np.clip(np.round(-lo / dmin[:, None]), 0, 15).astype(np.int32)
    q = np.clip(np.round((groups + (dmin[:, None] * m)[:, :, None]) / (d[:, None] * sc)[:, :, None]), 0, 3)
    q = q.astype(np.uint8).reshape(-1, 2, 4, 32)  # [block][half][k][weight]
    qs = np.zeros((q.shape[0], 2, 32), dtype=np.uint8)
    for k in range(4):
        qs |= q[:, :, k] << (2 * k)
    scales = (sc | m << 4).astype(np.uint8)
    out = np.concatenate([scales, qs.reshape(-1, 64), f16_bytes(d), f16_bytes(dmin)], axis=1)
    return out.reshape(w.shape[0], -1)


IQ4_LEVELS = np.array([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113], dtype=np.float32)


def iq4_nibbles(groups, step):
    """groups [n][32] over step [n]: the nearest of the IQ4 levels' indices, packed as Q4_0 packs
    (weight i low nibble, i + 16 high)."""
    ratio = groups / np.where(step == 0, 1, step)[:, None]
    idx = np.abs(ratio[:, :, None] - IQ4_LEVELS[None, None, :]).argmin(axis=2).astype(np.uint8)
    return idx[:, :16] | (idx[:, 16:] << 4)


def quantize_iq4_nl(w):
    """[rows][cols] (cols % 32 == 0) into IQ4_NL blocks: d, 16 bytes of level indices; x ~ d * level."""
    groups = w.reshape(-1, 32).astype(np.float32)
    d = (np.abs(groups).max(axis=1) / 127).astype(np.float16).astype(np.float32)
    return np.concatenate([f16_bytes(d), iq4_nibbles(groups, d)], axis=1).reshape(w.shape[0], -1)


def quantize_iq4_xs(w):
    """[rows][cols] (cols % 256 == 0) into IQ4_XS blocks: d, 16 bits of the 8 sub-block scales' high
    bit pairs, 4 bytes of their low nibbles, 8 x 16 bytes of level indices; x ~ d * (ls - 32) * level."""
    groups = w.reshape(-1, 8, 32).astype(np.float32)
    step = np.abs(groups).max(axis=2) / 127
    d = (np.maximum(step.max(axis=1), 1e-8) / 31).astype(np.float16).astype(np.float32)
    ls = np.clip(np.round(step / d[:, None]), 1, 31).astype(np.int32) + 32
    nibbles = iq4_nibbles(groups.reshape(-1, 32), (d[:, None] * (ls - 32)).reshape(-1)).reshape(-1, 128)
    high = np.zeros(groups.shape[0], dtype=np.uint32)
    low = np.zeros((groups.shape[0], 4), dtype=np.uint8)
    for j in range(8):
        high |= ((ls[:, j] >> 4) & 3).astype(np.uint32) << (2 * j)
        low[:, j // 2] |= ((ls[:, j] & 15) << (4 * (j % 2))).astype(np.uint8)
    scales_h = np.stack([high & 255, high >> 8], axis=1).astype(np.uint8)
    return np.concatenate([f16_bytes(d), scales_h, low, nibbles], axis=1).reshape(w.shape[0], -1)


# the formats gguf-py dequantizes but cannot quantize: our small quantizers above
QUANTIZERS = {Q.Q2_K: quantize_q2_k, Q.Q3_K: quantize_q3_k, Q.Q4_K: quantize_q4_k, Q.Q6_K: quantize_q6_k, Q.IQ4_NL: quantize_iq4_nl,
              Q.IQ4_XS: quantize_iq4_xs}


def encode(w, qtype):
    """w ([rows][cols] float32) as qtype's bytes, for GGUFWriter.add_tensor with raw_dtype."""
    if qtype == Q.F32:
        return w.astype(np.float32)
    if qtype == Q.F16:
        return w.astype(np.float16)
    if qtype in QUANTIZERS:
        return QUANTIZERS[qtype](w)
    return quantize(w.astype(np.float32), qtype)


def permute(w, n_head):
    """convert_hf_to_gguf.py's LlamaModel.permute: each head's rows i and D/2 + i side by side."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def unpermute(w, n_head):
    return w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def add(writer, name, w, qtype):
    data = encode(w, qtype)
    writer.add_tensor(name, data, raw_dtype=None if qtype in (Q.F32, Q.F16) else qtype)


def read_back(path):
    """Each tensor of the file dequantized by the gguf package, in numpy order."""
    return {t.name: dequantize(t.data, t.tensor_type).astype(np.float32).reshape([int(x) for x in reversed(t.shape)])
            for t in GGUFReader(str(path)).tensors}


LLAMA_BLOCK = {"input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
               "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
               "post_attention_layernorm": "ffn_norm", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
               "mlp.down_proj": "ffn_down"}


def llama_state_to_gguf(state):
    """transformers' LLaMA names to llama.cpp's."""
    out = {}
    for name, w in state.items():
        if name == "model.embed_tokens.weight":
            out["token_embd.weight"] = w
        elif name == "model.norm.weight":
            out["output_norm.weight"] = w
        elif name == "lm_head.weight":
            out["output.weight"] = w
        else:
            _, _, layer, rest = name.split(".", 3)
            module, kind = rest.rsplit(".", 1)
            out[f"blk.{layer}.{LLAMA_BLOCK[module]}.{kind}"] = w
    return out


def write_llama(path, config, state, types, tokenizer=None):
    """types(name, w): the GGML type of each tensor."""
    w = GGUFWriter(str(path), "llama")
    w.add_context_length(config.max_position_embeddings)
    w.add_embedding_length(config.hidden_size)
    w.add_block_count(config.num_hidden_layers)
    w.add_feed_forward_length(config.intermediate_size)
    w.add_head_count(config.num_attention_heads)
    w.add_head_count_kv(config.num_key_value_heads)
    w.add_layer_norm_rms_eps(config.rms_norm_eps)
    w.add_rope_freq_base(config.rope_parameters["rope_theta"])
    w.add_rope_dimension_count(config.hidden_size // config.num_attention_heads)
    w.add_vocab_size(config.vocab_size)
    if tokenizer:
        tokenizer(w)
    for name, t in llama_state_to_gguf(state).items():
        if name.endswith(("attn_q.weight", "attn_q.bias")):  # as the converter permutes q_proj's weight and bias
            t = permute(t, config.num_attention_heads)
        elif name.endswith(("attn_k.weight", "attn_k.bias")):
            t = permute(t, config.num_key_value_heads)
        add(w, name, t, types(name, t))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def llama_from_gguf(path, config):
    hf = {}
    inverse = {f"blk.%d.{v}": f"model.layers.%d.{k}" for k, v in LLAMA_BLOCK.items()}
    for name, t in read_back(path).items():
        if name.endswith(("attn_q.weight", "attn_q.bias")):
            t = unpermute(t, config.num_attention_heads)
        elif name.endswith(("attn_k.weight", "attn_k.bias")):
            t = unpermute(t, config.num_key_value_heads)
        fixed = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight",
                 "output.weight": "lm_head.weight"}
        if name in fixed:
            hf[fixed[name]] = t
        else:
            _, layer, module, kind = name.split(".")
            hf[inverse[f"blk.%d.{module}"] % int(layer) + "." + kind] = t
    model = LlamaForCausalLM(config).eval()
    missing, unexpected = model.load_state_dict({k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in hf.items()},
                                                strict=False)
    assert not unexpected and set(missing) <= ({"lm_head.weight"} if config.tie_word_embeddings else set())
    model.tie_weights()
    return model


def spm_tokenizer(directory):
    """tokenizer.ggml.model "llama" as llama.cpp's converter writes a SentencePiece vocabulary."""
    spec = json.loads((directory / "tokenizer.json").read_text())
    vocab = sorted(spec["model"]["vocab"].items(), key=lambda kv: kv[1])
    special = {t["id"] for t in spec["added_tokens"]}

    def add(w):
        w.add_tokenizer_model("llama")
        w.add_token_list([t for t, _ in vocab])
        w.add_token_scores([-float(i) for _, i in vocab])
        w.add_token_types([TokenType.CONTROL if i in special else TokenType.BYTE if t.startswith("<0x") else
                           TokenType.NORMAL for t, i in vocab])
        w.add_bos_token_id(1)
        w.add_eos_token_id(2)
        w.add_unk_token_id(0)
        w.add_add_bos_token(True)
    return add


def gpt2_tokenizer(directory):
    spec = json.loads((directory / "tokenizer.json").read_text())
    vocab = sorted(spec["model"]["vocab"].items(), key=lambda kv: kv[1])
    special = {t["id"] for t in spec["added_tokens"]}
    merges = [m if isinstance(m, str) else " ".join(m) for m in spec["model"]["merges"]]

    def add(w):
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre("gpt-2")
        w.add_token_list([t for t, _ in vocab])
        w.add_token_types([TokenType.CONTROL if i in special else TokenType.NORMAL for _, i in vocab])
        w.add_token_merges(merges)
        w.add_bos_token_id(499)
        w.add_eos_token_id(499)
    return add


def bpe_tokenizer(directory, pre, add_bos):
    """A byte-level BPE tokenizer.json as llama.cpp's converter writes it: model "gpt2", the
    pre-tokenizer's llama.cpp name, tokens by id (specials CONTROL), merges, special ids."""
    spec = json.loads((directory / "tokenizer.json").read_text())
    vocab = dict(spec["model"]["vocab"])
    for t in spec["added_tokens"]:
        vocab[t["content"]] = t["id"]
    vocab = sorted(vocab.items(), key=lambda kv: kv[1])
    assert [i for _, i in vocab] == list(range(len(vocab)))
    special = {t["id"] for t in spec["added_tokens"] if t["special"]}
    merges = [m if isinstance(m, str) else " ".join(m) for m in spec["model"]["merges"]]
    config = json.loads((directory / "config.json").read_text())

    def add(w):
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre(pre)
        w.add_token_list([t for t, _ in vocab])
        w.add_token_types([TokenType.CONTROL if i in special else TokenType.NORMAL for _, i in vocab])
        w.add_token_merges(merges)
        if config.get("bos_token_id") is not None:
            w.add_bos_token_id(config["bos_token_id"])
        w.add_eos_token_id(config["eos_token_id"])
        w.add_add_bos_token(add_bos)
    return add


GPT2_BLOCK = {"ln_1": "attn_norm", "attn.c_attn": "attn_qkv", "attn.c_proj": "attn_output", "ln_2": "ffn_norm",
              "mlp.c_fc": "ffn_up", "mlp.c_proj": "ffn_down"}
CONV1D = ("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight")


def write_gpt2(path, config, state, types, tokenizer):
    w = GGUFWriter(str(path), "gpt2")
    w.add_context_length(config.n_positions)
    w.add_embedding_length(config.n_embd)
    w.add_feed_forward_length(4 * config.n_embd)
    w.add_block_count(config.n_layer)
    w.add_head_count(config.n_head)
    w.add_layer_norm_eps(config.layer_norm_epsilon)
    tokenizer(w)
    for name, t in state.items():
        if name.endswith((".attn.bias", ".attn.masked_bias")):
            continue
        if name.endswith(CONV1D):  # llama.cpp stores them [out][in]
            t = t.T.copy()
        if name == "wte.weight":
            add(w, "token_embd.weight", t, types("token_embd.weight", t))
            add(w, "output.weight", t, types("output.weight", t))  # GPT-2's head is the embedding
            continue
        fixed = {"wpe.weight": "position_embd.weight", "ln_f.weight": "output_norm.weight", "ln_f.bias": "output_norm.bias"}
        if name in fixed:
            gname = fixed[name]
        else:
            _, layer, rest = name.split(".", 2)
            module, kind = rest.rsplit(".", 1)
            gname = f"blk.{layer}.{GPT2_BLOCK[module]}.{kind}"
        add(w, gname, t, types(gname, t))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def gpt2_from_gguf(path, config):
    inverse = {v: k for k, v in GPT2_BLOCK.items()}
    hf = {}
    for name, t in read_back(path).items():
        fixed = {"token_embd.weight": "transformer.wte.weight", "position_embd.weight": "transformer.wpe.weight",
                 "output_norm.weight": "transformer.ln_f.weight", "output_norm.bias": "transformer.ln_f.bias",
                 "output.weight": "lm_head.weight"}
        if name in fixed:
            hf[fixed[name]] = t
            continue
        _, layer, module, kind = name.split(".")
        hf_name = f"transformer.h.{layer}.{inverse[module]}.{kind}"
        hf[hf_name] = t.T.copy() if hf_name.endswith(CONV1D) else t
    config = GPT2Config(**{**config.to_dict(), "tie_word_embeddings": False})
    model = GPT2LMHeadModel(config).eval()
    model.load_state_dict({k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in hf.items()}, strict=False)
    return model


def reference_line(name, model, ids, eos):
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0]
        out = model.generate(torch.tensor([ids]), max_new_tokens=NEW_TOKENS, do_sample=False, pad_token_id=eos,
                             eos_token_id=eos)
    greedy = out[0, len(ids):].tolist()
    return "\t".join([name, ",".join(map(str, ids)), ",".join(map(str, greedy)),
                      ",".join(f"{v:.8e}" for v in logits.flatten().tolist())])


def write_fuzz_seed():
    """test/fuzz_seeds/gguf/tiny-gpt2.gguf: a GPT-2 small enough for the fuzzer (under its 64 KiB
    inputs) with every part a file has: metadata of several types, a tokenizer, F32 and Q8_0."""
    torch.manual_seed(3)
    config = GPT2Config(vocab_size=12, n_embd=32, n_layer=1, n_head=2, n_positions=8, bos_token_id=11,
                        eos_token_id=11)
    state = {k.removeprefix("transformer."): v.detach().numpy().copy() for k, v in GPT2LMHeadModel(config).state_dict().items()
             if k != "lm_head.weight"}
    tokens = ["H", "e", "l", "o", "\u0120", "w", "r", "d", "1", "2", "He", "<|endoftext|>"]

    def tokenizer(w):
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre("gpt-2")
        w.add_token_list(tokens)
        w.add_token_types([TokenType.CONTROL if t.startswith("<|") else TokenType.NORMAL for t in tokens])
        w.add_token_merges(["H e"])
        w.add_bos_token_id(11)
        w.add_eos_token_id(11)
    seeds = ROOT / "fuzz_seeds" / "gguf"
    seeds.mkdir(exist_ok=True)
    write_gpt2(seeds / "tiny-gpt2.gguf", config, state,
               lambda n, t: Q.Q8_0 if t.ndim == 2 and n.startswith("blk.") else Q.F32, tokenizer)

    # and a LLaMA with a SentencePiece vocabulary (byte pieces, scores, a user-defined token)
    pieces = ["<unk>", "<s>", "</s>", "<0x0A>", "<0x41>", "\u2581", "a", "b", "l", "\u2581a", "ab", "\u2581ab", "<tool>",
              "1", "2", "\u2581l"]
    kinds = [TokenType.UNKNOWN, TokenType.CONTROL, TokenType.CONTROL, TokenType.BYTE, TokenType.BYTE] + \
        [TokenType.NORMAL] * 7 + [TokenType.USER_DEFINED] + [TokenType.NORMAL] * 3
    config = LlamaConfig(vocab_size=len(pieces), hidden_size=32, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=16, rms_norm_eps=1e-5,
                         rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, tie_word_embeddings=True)
    state = {k: v.detach().numpy().copy() for k, v in LlamaForCausalLM(config).state_dict().items() if k != "lm_head.weight"}

    def spm(w):
        w.add_tokenizer_model("llama")
        w.add_token_list(pieces)
        w.add_token_scores([-float(i) for i in range(len(pieces))])
        w.add_token_types(kinds)
        w.add_bos_token_id(1)
        w.add_eos_token_id(2)
        w.add_unk_token_id(0)
        w.add_add_bos_token(True)
    write_llama(seeds / "tiny-llama-spm.gguf", config, state, lambda n, t: Q.Q4_0 if t.ndim == 2 else Q.F32, spm)


def hf_block_names(state, fixed, block, prefix):
    """transformers' names to llama.cpp's: fixed names, then prefix + N.module.kind via block."""
    out = {}
    for name, w in state.items():
        if name in fixed:
            out[fixed[name]] = w
            continue
        assert name.startswith(prefix), name
        layer, rest = name[len(prefix):].split(".", 1)
        module, kind = rest.rsplit(".", 1)
        out[f"blk.{layer}.{block[module]}.{kind}"] = w
    return out


def regroup_qkv(w, n_head):
    """convert_hf_to_gguf.py's GPT-NeoX and BLOOM reshaping: [head][q, k, v] rows to [q, k, v][head]."""
    head_rows = w.shape[0] // n_head // 3
    return w.reshape(n_head, 3, head_rows, *w.shape[1:]).swapaxes(0, 1).reshape(w.shape)


def finish(w, tensors):
    for name, t in tensors.items():
        add(w, name, np.ascontiguousarray(t), Q.F32)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def fixture_reference(name, directory, gguf_name, config_class=None, **overrides):
    """transformers on the fixture directory (or its weights under config_class), the fixture's prompt;
    overrides: config values changed to what llama.cpp's reading of the file means."""
    from transformers import AutoConfig, AutoModelForCausalLM
    ids = [int(x) for x in next(line for line in (directory / "reference.txt").read_text().splitlines()
                                if line.startswith("prompt_ids=")).split("=", 1)[1].split(",")]
    if overrides:
        config = AutoConfig.from_pretrained(directory)
        for k, v in overrides.items():
            assert getattr(config, k) != v, k  # the override changes the model
            setattr(config, k, v)
        model = AutoModelForCausalLM.from_pretrained(directory, config=config, dtype=torch.float32,
                                                     attn_implementation="eager").eval()
    elif config_class is None:
        model = AutoModelForCausalLM.from_pretrained(directory, dtype=torch.float32, attn_implementation="eager").eval()
    else:
        model = config_class.from_pretrained(directory, dtype=torch.float32, attn_implementation="eager").eval()
    eos = model.config.eos_token_id
    return reference_line(gguf_name, model, ids, eos if isinstance(eos, int) else eos[0])


def special_ids(w, config):
    if config.bos_token_id is not None:
        w.add_bos_token_id(config.bos_token_id)
    eos = config.eos_token_id
    if eos is not None:
        w.add_eos_token_id(eos if isinstance(eos, int) else eos[0])


def llama3_rope_factors(rope, dim):
    """convert_hf_to_gguf.py's rope_freqs for a llama3 rope scaling: a factor per rotary frequency."""
    freqs = 1.0 / (rope["rope_theta"] ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    old, low, high, factor = (rope["original_max_position_embeddings"], rope["low_freq_factor"],
                              rope["high_freq_factor"], rope["factor"])
    factors = []
    for freq in freqs.tolist():
        wavelen = 2 * math.pi / freq
        if wavelen < old / high:
            factors.append(1)
        elif wavelen > old / low:
            factors.append(factor)
        else:
            smooth = (old / wavelen - low) / (high - low)
            factors.append(1 / ((1 - smooth) / factor + smooth))
    assert len(set(factors)) == 3, factors  # kept, divided and smoothed frequencies
    return factors


def write_dense_families(lines):
    """Families llama.cpp writes under their own architectures (and Mistral under llama's)."""
    from transformers import BloomConfig, GPTNeoXConfig, MistralConfig, Qwen2Config

    # LLaMA 3.1's rope scaling as a rope_freqs tensor (convert_hf_to_gguf.py's LlamaModel
    # generate_extra_tensors), its factors from the fixture's own rope parameters
    directory = FIXTURES / "llama3-rope"
    config = LlamaConfig.from_pretrained(directory)
    factors = llama3_rope_factors(config.rope_parameters, config.hidden_size // config.num_attention_heads)
    state = load_file(str(directory / "model.safetensors"))
    path = OUT / "llama3-rope-rope-freqs.gguf"
    w = GGUFWriter(str(path), "llama")
    llama_metadata(w, config)
    bpe_tokenizer(directory, "llama-bpe", True)(w)
    tensors = {}
    for name, t in llama_state_to_gguf(state).items():
        if name.endswith("attn_q.weight"):
            t = permute(t, config.num_attention_heads)
        elif name.endswith("attn_k.weight"):
            t = permute(t, config.num_key_value_heads)
        tensors[name] = t
    tensors["rope_freqs.weight"] = np.array(factors, dtype=np.float32)
    finish(w, tensors)
    lines.append(fixture_reference("llama3-rope", directory, path.stem))

    # YaRN as the converter's generic rope scaling writes it (type, factor, original context length)
    directory = FIXTURES / "llama-rope-yarn"
    config = LlamaConfig.from_pretrained(directory)
    rope = config.rope_parameters
    assert set(rope) == {"rope_type", "factor", "original_max_position_embeddings", "rope_theta"}, rope
    state = load_file(str(directory / "model.safetensors"))
    path = OUT / "llama-rope-yarn-f32.gguf"
    w = GGUFWriter(str(path), "llama")
    llama_metadata(w, config)
    w.add_rope_scaling_type(gguf.RopeScalingType.YARN)
    w.add_rope_scaling_factor(rope["factor"])
    w.add_rope_scaling_orig_ctx_len(rope["original_max_position_embeddings"])
    special_ids(w, config)
    tensors = {}
    for name, t in llama_state_to_gguf(state).items():
        if name.endswith("attn_q.weight"):
            t = permute(t, config.num_attention_heads)
        elif name.endswith("attn_k.weight"):
            t = permute(t, config.num_key_value_heads)
        tensors[name] = t
    finish(w, tensors)
    lines.append(fixture_reference("llama-rope-yarn", directory, path.stem))

    # the llama fixture split over 3 files
    directory = FIXTURES / "llama"
    config = LlamaConfig.from_pretrained(directory)
    state = load_file(str(directory / "model.safetensors"))
    for old_part in OUT.glob("llama-split-*.gguf"):
        old_part.unlink()
    w = GGUFWriter(str(OUT / "llama-split.gguf"), "llama", split_max_tensors=8)
    llama_metadata(w, config)
    special_ids(w, config)
    tensors = {}
    for name, t in llama_state_to_gguf(state).items():
        if name.endswith("attn_q.weight"):
            t = permute(t, config.num_attention_heads)
        elif name.endswith("attn_k.weight"):
            t = permute(t, config.num_key_value_heads)
        tensors[name] = t
    finish(w, tensors)
    parts = sorted(OUT.glob("llama-split-*.gguf"))
    assert [p.name for p in parts] == [f"llama-split-{i:05d}-of-00003.gguf" for i in (1, 2, 3)], parts
    lines.append(fixture_reference("llama", directory, "llama-split-00001-of-00003"))

    # Qwen2: the generic TextModel metadata, transformers' rows as they are, tied head
    directory = FIXTURES / "qwen2"
    config = Qwen2Config.from_pretrained(directory)
    state = load_file(str(directory / "model.safetensors"))
    path = OUT / "qwen2-f32.gguf"
    w = GGUFWriter(str(path), "qwen2")
    w.add_block_count(config.num_hidden_layers)
    w.add_context_length(config.max_position_embeddings)
    w.add_embedding_length(config.hidden_size)
    w.add_feed_forward_length(config.intermediate_size)
    w.add_head_count(config.num_attention_heads)
    w.add_head_count_kv(config.num_key_value_heads)
    w.add_rope_freq_base(config.rope_parameters["rope_theta"])
    w.add_layer_norm_rms_eps(config.rms_norm_eps)
    bpe_tokenizer(directory, "qwen2", False)(w)
    assert "lm_head.weight" not in state
    finish(w, llama_state_to_gguf(state))
    lines.append(fixture_reference("qwen2", directory, path.stem))

    # Mistral: LlamaModel converts MistralForCausalLM to arch "llama", with no sliding window
    directory = FIXTURES / "mistral"
    config = MistralConfig.from_pretrained(directory)
    state = load_file(str(directory / "model.safetensors"))
    llama_config = LlamaConfig(**{k: v for k, v in config.to_dict().items() if k not in ("model_type", "sliding_window")})
    path = OUT / "mistral-f32.gguf"
    write_llama(path, llama_config, state, lambda n, t: Q.F32)
    model = llama_from_gguf(path, llama_config)
    ids = [1, 464, 398, 266, 372, 340, 323, 339, 320, 422, 357, 271, 342, 312]
    lines.append(reference_line(path.stem, model, ids, config.eos_token_id))

    # GPT-NeoX, parallel and sequential
    neox_block = {"input_layernorm": "attn_norm", "attention.query_key_value": "attn_qkv",
                  "attention.dense": "attn_output", "post_attention_layernorm": "ffn_norm",
                  "mlp.dense_h_to_4h": "ffn_up", "mlp.dense_4h_to_h": "ffn_down"}
    neox_fixed = {"gpt_neox.embed_in.weight": "token_embd.weight", "gpt_neox.final_layer_norm.weight": "output_norm.weight",
                  "gpt_neox.final_layer_norm.bias": "output_norm.bias", "embed_out.weight": "output.weight"}
    for fixture in ("gpt_neox", "gpt_neox-seq"):
        directory = FIXTURES / fixture
        config = GPTNeoXConfig.from_pretrained(directory)
        state = {k: v for k, v in load_file(str(directory / "model.safetensors")).items()
                 if not k.endswith((".attention.bias", ".attention.masked_bias", ".rotary_emb.inv_freq"))}
        head_dim = config.hidden_size // config.num_attention_heads
        path = OUT / f"{fixture}-f32.gguf"
        w = GGUFWriter(str(path), "gptneox")
        w.add_context_length(config.max_position_embeddings)
        w.add_embedding_length(config.hidden_size)
        w.add_block_count(config.num_hidden_layers)
        w.add_feed_forward_length(config.intermediate_size)
        w.add_rope_dimension_count(int(config.rope_parameters["partial_rotary_factor"] * head_dim))
        w.add_head_count(config.num_attention_heads)
        w.add_parallel_residual(config.use_parallel_residual)
        w.add_layer_norm_eps(config.layer_norm_eps)
        special_ids(w, config)
        tensors = hf_block_names(state, neox_fixed, neox_block, "gpt_neox.layers.")
        for name in list(tensors):
            if ".attn_qkv." in name:
                tensors[name] = regroup_qkv(tensors[name], config.num_attention_heads)
        finish(w, tensors)
        lines.append(fixture_reference(fixture, directory, path.stem))

    # Granite: LLaMA's layout (q/k permuted) under arch "granite", its multipliers as *_scale keys
    from transformers import GraniteConfig
    directory = FIXTURES / "granite"
    config = GraniteConfig.from_pretrained(directory)
    state = load_file(str(directory / "model.safetensors"))
    path = OUT / "granite-f32.gguf"
    w = GGUFWriter(str(path), "granite")
    llama_metadata(w, config)
    w.add_attention_scale(config.attention_multiplier)
    w.add_embedding_scale(config.embedding_multiplier)
    w.add_residual_scale(config.residual_multiplier)
    w.add_logit_scale(config.logits_scaling)
    special_ids(w, config)
    tensors = {}
    for name, t in llama_state_to_gguf(state).items():
        if name.endswith("attn_q.weight"):
            t = permute(t, config.num_attention_heads)
        elif name.endswith("attn_k.weight"):
            t = permute(t, config.num_key_value_heads)
        tensors[name] = t
    assert "output.weight" not in tensors  # tied
    finish(w, tensors)
    lines.append(fixture_reference("granite", directory, path.stem))

    # BLOOM: context length is seq_length or n_embed; the tied head written out as output.weight
    directory = FIXTURES / "bloom"
    config = BloomConfig.from_pretrained(directory)
    state = {k.removeprefix("transformer."): v for k, v in load_file(str(directory / "model.safetensors")).items()}
    path = OUT / "bloom-f32.gguf"
    w = GGUFWriter(str(path), "bloom")
    w.add_context_length(getattr(config, "seq_length", None) or config.hidden_size)
    w.add_embedding_length(config.hidden_size)
    w.add_feed_forward_length(4 * config.hidden_size)
    w.add_block_count(config.n_layer)
    w.add_head_count(config.n_head)
    w.add_head_count_kv(config.n_head)
    w.add_layer_norm_eps(config.layer_norm_epsilon)
    special_ids(w, config)
    bloom_block = {"input_layernorm": "attn_norm", "self_attention.query_key_value": "attn_qkv",
                   "self_attention.dense": "attn_output", "post_attention_layernorm": "ffn_norm",
                   "mlp.dense_h_to_4h": "ffn_up", "mlp.dense_4h_to_h": "ffn_down"}
    bloom_fixed = {"word_embeddings.weight": "token_embd.weight", "word_embeddings_layernorm.weight": "token_embd_norm.weight",
                   "word_embeddings_layernorm.bias": "token_embd_norm.bias", "ln_f.weight": "output_norm.weight",
                   "ln_f.bias": "output_norm.bias"}
    tensors = hf_block_names(state, bloom_fixed, bloom_block, "h.")
    for name in list(tensors):
        if ".attn_qkv." in name:
            tensors[name] = regroup_qkv(tensors[name], config.n_head)
    tensors["output.weight"] = tensors["token_embd.weight"]
    finish(w, tensors)
    lines.append(fixture_reference("bloom", directory, path.stem))


QK_NORM_BLOCK = {**LLAMA_BLOCK, "self_attn.q_norm": "attn_q_norm", "self_attn.k_norm": "attn_k_norm"}
LLAMA_FIXED = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
               "lm_head.weight": "output.weight"}


def text_model_metadata(w, config):
    """convert_hf_to_gguf.py's TextModel.set_gguf_parameters: the generic keys (head_dim as the key
    and value lengths where the config has one)."""
    w.add_block_count(config.num_hidden_layers)
    w.add_context_length(config.max_position_embeddings)
    w.add_embedding_length(config.hidden_size)
    w.add_feed_forward_length(config.intermediate_size)
    w.add_head_count(config.num_attention_heads)
    w.add_head_count_kv(config.num_key_value_heads)
    w.add_rope_freq_base(config.rope_parameters["rope_theta"])
    w.add_layer_norm_rms_eps(config.rms_norm_eps)
    if getattr(config, "head_dim", None) is not None:
        w.add_key_length(config.head_dim)
        w.add_value_length(config.head_dim)


def converter_names(state, arch):
    """transformers' names to llama.cpp's, by the gguf package's own tensor name map for arch."""
    names = gguf.get_tensor_name_map(arch, 64)
    out = {}
    for name, t in state.items():
        gname = names.get_name(name, try_suffixes=(".weight", ".bias"))
        assert gname, name
        out[gname] = t
    return out


def gemma_metadata(w, config):
    """GemmaModel's and Gemma2Model's set_gguf_parameters (no rope base: llama.cpp's 10000)."""
    w.add_context_length(config.max_position_embeddings)
    w.add_embedding_length(config.hidden_size)
    w.add_block_count(config.num_hidden_layers)
    w.add_feed_forward_length(config.intermediate_size)
    w.add_head_count(config.num_attention_heads)
    w.add_head_count_kv(config.num_key_value_heads)
    w.add_layer_norm_rms_eps(config.rms_norm_eps)
    w.add_key_length(config.head_dim)
    w.add_value_length(config.head_dim)


def plus_one_norms(tensors):
    """The converter's Gemma norms: 1 + w (the scale its norm applies)."""
    for name in tensors:
        if name.endswith("norm.weight"):
            assert np.abs(tensors[name]).max() > 0.05, name  # norms away from 0: a missed 1 shows
            tensors[name] = tensors[name] + 1
    return tensors


MOE_BLOCK = {**QK_NORM_BLOCK, "mlp.gate": "ffn_gate_inp", "mlp.shared_expert.gate_proj": "ffn_gate_shexp",
             "mlp.shared_expert.up_proj": "ffn_up_shexp", "mlp.shared_expert.down_proj": "ffn_down_shexp",
             "mlp.shared_expert_gate": "ffn_gate_inp_shexp"}


def moe_state_to_gguf(state, experts_inner):
    """transformers 5's Qwen3-MoE and OLMoE (fused experts: gate_up_proj [E, 2 I, H] gate then up, down_proj
    [E, H, I]) as llama.cpp's converter writes it: ffn_gate_exps / ffn_up_exps [E, I, H],
    ffn_down_exps [E, H, I], the router as ffn_gate_inp."""
    out, rest = {}, {}
    for name, w in state.items():
        if name.endswith("mlp.experts.gate_up_proj"):
            layer = name.split(".")[2]
            out[f"blk.{layer}.ffn_gate_exps.weight"] = w[:, :experts_inner]
            out[f"blk.{layer}.ffn_up_exps.weight"] = w[:, experts_inner:]
        elif name.endswith("mlp.experts.down_proj"):
            out[f"blk.{name.split('.')[2]}.ffn_down_exps.weight"] = w
        elif name.endswith("mlp.shared_expert_gate.weight"):  # [1, hidden] kept as the vector [hidden]
            out[f"blk.{name.split('.')[2]}.ffn_gate_inp_shexp.weight"] = w.reshape(-1)
        else:
            rest[name] = w
    out.update(hf_block_names(rest, LLAMA_FIXED, MOE_BLOCK, "model.layers."))
    return out


def moe_from_gguf(path, config, model_class):
    """The file read back by the gguf package, as transformers' model_class (Qwen3-MoE's or OLMoE's
    fused experts)."""
    inverse = {v: k for k, v in MOE_BLOCK.items()}
    fixed = {v: k for k, v in LLAMA_FIXED.items()}
    back, hf = read_back(path), {}
    for name, t in back.items():
        if name in fixed:
            hf[fixed[name]] = t
            continue
        _, layer, module, kind = name.split(".")
        E, H = config.num_experts, config.hidden_size
        I = getattr(config, "moe_intermediate_size", config.intermediate_size)
        if module == "ffn_gate_exps":
            hf[f"model.layers.{layer}.mlp.experts.gate_up_proj"] = np.concatenate(
                [t.reshape(E, I, H), back[f"blk.{layer}.ffn_up_exps.weight"].reshape(E, I, H)], axis=1)
        elif module == "ffn_down_exps":
            hf[f"model.layers.{layer}.mlp.experts.down_proj"] = t.reshape(E, H, I)
        elif module == "ffn_gate_inp_shexp":
            hf[f"model.layers.{layer}.mlp.shared_expert_gate.weight"] = t.reshape(1, -1)
        elif module != "ffn_up_exps":
            hf[f"model.layers.{layer}.{inverse[module]}.{kind}"] = t
    model = model_class._from_config(config, experts_implementation="eager").eval()
    missing, unexpected = model.load_state_dict({k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in hf.items()},
                                                strict=False)
    assert not missing and not unexpected, (missing, unexpected)
    return model


def routing_margin(model, ids):
    """The smallest gap between the k-th and (k+1)-th router logit over the prompt and its greedy
    run: far from ties, quantized products route as transformers does. Llama 4's router returns
    (scores, logits), the others their logits first."""
    margins = []

    def hook(module, args, output):
        logits = output[1] if type(module).__name__ == "Llama4Router" else output[0]
        top = torch.topk(logits.float(), module.top_k + 1, dim=-1).values
        margins.append(float((top[:, -2] - top[:, -1]).min()))
    handles = [m.register_forward_hook(hook) for m in model.modules()
               if type(m).__name__.endswith("TopKRouter") or type(m).__name__ == "Llama4Router"]
    assert handles
    with torch.no_grad():
        model.generate(torch.tensor([ids]), max_new_tokens=NEW_TOKENS, do_sample=False, pad_token_id=2, eos_token_id=2)
    for h in handles:
        h.remove()
    return min(margins)


def random_moe(model_class, config):
    """A random mixture of experts: norms away from 1, routers 4x the other weights (routing far from ties)."""
    model = model_class._from_config(config, experts_implementation="eager")
    with torch.no_grad():
        for n, p in model.named_parameters():
            if p.ndim == 1:
                p.copy_(1 + 0.3 * torch.randn_like(p))
            elif n.endswith("mlp.gate.weight"):  # OLMoE's router starts at zeros: drawn here for both
                p.copy_(0.4 * torch.randn_like(p))
    return {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}


def write_moe_file(path, arch, config, state, metadata):
    """state as llama.cpp's converter writes a mixture (experts stacked [experts, rows, cols]) in a
    Q4_K_M file's types: attention Q8_0, the experts' gate and up Q4_K, down Q6_K then Q8_0, the
    router F32 (as the converter keeps it), output Q6_K."""
    experts = {"ffn_gate_exps": [Q.Q4_K, Q.Q4_K], "ffn_up_exps": [Q.Q4_K, Q.Q4_K], "ffn_down_exps": [Q.Q6_K, Q.Q8_0]}

    def qtype(name, t):
        if t.ndim == 1 or name.endswith(("ffn_gate_inp.weight", "ffn_gate_inp_shexp.weight")):
            return Q.F32
        if name == "output.weight":
            return Q.Q6_K
        if not name.startswith("blk."):
            return Q.Q8_0
        return experts.get(name.split(".")[2], [Q.Q8_0] * 2)[int(name.split(".")[1])]
    w = GGUFWriter(str(path), arch)
    metadata(w)
    w.add_expert_count(config.num_experts)
    w.add_expert_used_count(config.num_experts_per_tok)
    special_ids(w, config)
    for name, t in moe_state_to_gguf(state, config.intermediate_size if arch == "olmoe"
                                     else config.moe_intermediate_size).items():
        q = qtype(name, t)
        if t.ndim == 3:  # the quantizers take rows: each expert's rows, stacked back as [experts, rows, bytes]
            data = encode(np.ascontiguousarray(t.reshape(-1, t.shape[-1])), q)
            w.add_tensor(name, data.reshape(t.shape[0], t.shape[1], -1), raw_dtype=q)
        else:
            add(w, name, np.ascontiguousarray(t), q)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def write_moe_families(lines):
    """Mixtures of experts as llama.cpp's converter writes them: a random Qwen3-MoE and a random OLMoE
    whose rows are 256 wide."""
    from transformers import OlmoeConfig, OlmoeForCausalLM, Qwen3MoeConfig, Qwen3MoeForCausalLM
    ids = [1, 17, 42, 5, 88, 23, 61, 9]
    common = dict(vocab_size=96, hidden_size=256, num_hidden_layers=2, num_attention_heads=4, num_experts=4,
                  num_experts_per_tok=2, max_position_embeddings=64, tie_word_embeddings=False, bos_token_id=1,
                  eos_token_id=2, initializer_range=0.1)
    # Qwen3-MoE: llama.cpp renormalises the chosen weights (norm_topk_prob true); per-head q/k norms
    torch.manual_seed(31)
    config = Qwen3MoeConfig(intermediate_size=256, moe_intermediate_size=256, num_key_value_heads=2, head_dim=64,
                            norm_topk_prob=True, rms_norm_eps=1e-6,
                            rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}, **common)
    path = OUT / "qwen3moe-quant.gguf"

    def qwen3moe_metadata(w):
        text_model_metadata(w, config)
        w.add_expert_feed_forward_length(config.moe_intermediate_size)
    write_moe_file(path, "qwen3moe", config, random_moe(Qwen3MoeForCausalLM, config), qwen3moe_metadata)
    moe_reference(lines, "qwen3moe-quant", moe_from_gguf(path, config, Qwen3MoeForCausalLM), ids)
    # OLMoE: not renormalised; q/k norms over the whole projections; intermediate_size the experts'
    torch.manual_seed(36)
    config = OlmoeConfig(intermediate_size=256, num_key_value_heads=4, norm_topk_prob=False, rms_norm_eps=1e-5,
                         pad_token_id=95,  # its default, 1, is the prompt's first token: a zero embedding row
                         rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, **common)
    path = OUT / "olmoe-quant.gguf"
    write_moe_file(path, "olmoe", config, random_moe(OlmoeForCausalLM, config), lambda w: text_model_metadata(w, config))
    moe_reference(lines, "olmoe-quant", moe_from_gguf(path, config, OlmoeForCausalLM), ids)
    # Qwen2-MoE: not renormalised; q/k/v biases; a shared expert behind a sigmoid gate, which the
    # converter writes as the vector ffn_gate_inp_shexp (transformers' [1, hidden] row)
    from transformers import Qwen2MoeConfig, Qwen2MoeForCausalLM
    torch.manual_seed(43)
    config = Qwen2MoeConfig(intermediate_size=256, moe_intermediate_size=256, shared_expert_intermediate_size=256,
                            num_key_value_heads=2, norm_topk_prob=False, rms_norm_eps=1e-6,
                            rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}, **common)
    path = OUT / "qwen2moe-quant.gguf"

    def qwen2moe_metadata(w):
        text_model_metadata(w, config)
        w.add_expert_feed_forward_length(config.moe_intermediate_size)
        w.add_expert_shared_feed_forward_length(config.shared_expert_intermediate_size)
    write_moe_file(path, "qwen2moe", config, random_moe(Qwen2MoeForCausalLM, config), qwen2moe_metadata)
    moe_reference(lines, "qwen2moe-quant", moe_from_gguf(path, config, Qwen2MoeForCausalLM), ids)


def llama4_to_gguf(state):
    """convert_hf_to_gguf.py's Llama4Model: q and k as they are; each layer's experts [E, in, out]
    (gate | up fused) as stacked [E, out, in] gate, up and down; the rest by the gguf package's names."""
    out, rest = {}, {}
    for name, t in state.items():
        layer = name.split(".")[2] if name.startswith("model.layers.") else None
        if name.endswith("experts.gate_up_proj"):
            both = t.swapaxes(-1, -2)
            half = both.shape[1] // 2
            out[f"blk.{layer}.ffn_gate_exps.weight"], out[f"blk.{layer}.ffn_up_exps.weight"] = both[:, :half], both[:, half:]
        elif name.endswith("experts.down_proj"):
            out[f"blk.{layer}.ffn_down_exps.weight"] = t.swapaxes(-1, -2)
        else:
            rest[name] = t
    return {**converter_names(rest, gguf.MODEL_ARCH.LLAMA4), **out}


def write_llama4(lines):
    """Llama 4 as llama.cpp reads it: transformers' defaults for what llama.cpp fixes (chunks of 8192,
    every 4th layer unrotated, the temperature's floor 8192 and scale 0.1), llama3 rope scaling as a
    rope_freqs tensor. A Scout-like model (5 experts in layers 1 and 3, qk-norm) and a Maverick-like
    one (128 experts in layer 3, which llama.cpp takes to mean no qk-norm), in F32: on these random
    models int8 activations move the logits 5-8 % (and flip 128-way routing), past the bound the
    GGUF test holds files in blocks to; experts kept in blocks are the qwen3moe fixture's."""
    from transformers import Llama4ForCausalLM, Llama4TextConfig
    ids = [1, 17, 42, 5, 88, 23, 61, 9, 30, 12]
    for name, experts, step, width, seed in [("llama4-f32", 5, 2, 32, 40), ("llama4-128e-f32", 128, 4, 16, 41)]:
        torch.manual_seed(seed)
        config = Llama4TextConfig(
            vocab_size=96, hidden_size=32, intermediate_size=width, intermediate_size_mlp=64, num_hidden_layers=4,
            num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=256, rms_norm_eps=1e-5,
            num_local_experts=experts, num_experts_per_tok=1, interleave_moe_layer_step=step, use_qk_norm=experts != 128,
            rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
                             "high_freq_factor": 4.0, "original_max_position_embeddings": 200},
            tie_word_embeddings=False, bos_token_id=1, eos_token_id=2, initializer_range=0.2,
            attn_implementation="eager")
        assert (config.attention_chunk_size, config.floor_scale, config.attn_scale, config.no_rope_layers) == \
            (8192, 8192, 0.1, [1, 1, 1, 0])
        model = Llama4ForCausalLM._from_config(config, experts_implementation="eager")
        with torch.no_grad():
            for n, p in model.named_parameters():
                if p.ndim == 1:
                    p.copy_(1 + 0.3 * torch.randn_like(p))
                elif n.endswith("router.weight"):  # routing far from ties, as random_moe's
                    p.mul_(4)
        model.eval()
        margin = routing_margin(model, ids)
        assert margin > 0.05, f"{name}: router logits only {margin} apart"
        state = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
        path = OUT / f"{name}.gguf"
        w = GGUFWriter(str(path), "llama4")
        llama_metadata(w, Llama4TextConfig(**{**config.to_dict(), "intermediate_size": config.intermediate_size_mlp}))
        w.add_key_length(config.head_dim)
        w.add_value_length(config.head_dim)
        w.add_interleave_moe_layer_step(config.interleave_moe_layer_step)
        w.add_expert_feed_forward_length(config.intermediate_size)
        w.add_expert_count(experts)
        w.add_expert_used_count(config.num_experts_per_tok)
        if experts == 5:  # llama.cpp reads chunks of 8192 whatever a nonzero window says (0: none, refused)
            w.add_sliding_window(config.attention_chunk_size)
        special_ids(w, config)
        tensors = llama4_to_gguf(state)
        tensors["rope_freqs.weight"] = np.array(llama3_rope_factors(config.rope_parameters, config.head_dim), np.float32)
        finish(w, tensors)
        lines.append(reference_line(name, model, ids, 2))


GPT_OSS_BLOCK = {"input_layernorm": "attn_norm", "post_attention_layernorm": "post_attention_norm",
                 "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
                 "self_attn.o_proj": "attn_output", "mlp.router": "ffn_gate_inp"}


def gpt_oss_state_to_gguf(state):
    """transformers' gpt-oss as llama.cpp's converter writes it: gate_up_proj [E, H, 2 I] (gate and up
    interleaved) as ffn_gate_exps / ffn_up_exps [E, I, H], down_proj [E, I, H] as ffn_down_exps
    [E, H, I], their biases split likewise (ffn_gate_exps.bias ...), the sinks as attn_sinks.weight."""
    out, rest = {}, {}
    for name, w in state.items():
        parts = name.split(".")
        if name.endswith("mlp.experts.gate_up_proj"):
            out[f"blk.{parts[2]}.ffn_gate_exps.weight"] = w[:, :, 0::2].transpose(0, 2, 1)
            out[f"blk.{parts[2]}.ffn_up_exps.weight"] = w[:, :, 1::2].transpose(0, 2, 1)
        elif name.endswith("mlp.experts.gate_up_proj_bias"):
            out[f"blk.{parts[2]}.ffn_gate_exps.bias"] = w[:, 0::2]
            out[f"blk.{parts[2]}.ffn_up_exps.bias"] = w[:, 1::2]
        elif name.endswith("mlp.experts.down_proj"):
            out[f"blk.{parts[2]}.ffn_down_exps.weight"] = w.transpose(0, 2, 1)
        elif name.endswith("mlp.experts.down_proj_bias"):
            out[f"blk.{parts[2]}.ffn_down_exps.bias"] = w
        elif name.endswith("self_attn.sinks"):
            out[f"blk.{parts[2]}.attn_sinks.weight"] = w
        else:
            rest[name] = w
    out.update(hf_block_names(rest, LLAMA_FIXED, GPT_OSS_BLOCK, "model.layers."))
    return {k: np.ascontiguousarray(v) for k, v in out.items()}


def gpt_oss_from_gguf(path, config):
    """The file read back by the gguf package (MXFP4 dequantized by its own code), as transformers' gpt-oss."""
    from transformers import GptOssForCausalLM
    inverse = {v: k for k, v in GPT_OSS_BLOCK.items()}
    fixed = {v: k for k, v in LLAMA_FIXED.items()}
    back, hf = read_back(path), {}
    E, H, I = config.num_local_experts, config.hidden_size, config.intermediate_size
    for name, t in back.items():
        if name in fixed:
            hf[fixed[name]] = t
            continue
        _, layer, module, kind = name.split(".")
        stem = f"model.layers.{layer}"
        if module == "ffn_gate_exps" and kind == "weight":
            gate_up = np.empty((E, H, 2 * I), dtype=np.float32)
            gate_up[:, :, 0::2] = t.reshape(E, I, H).transpose(0, 2, 1)
            gate_up[:, :, 1::2] = back[f"blk.{layer}.ffn_up_exps.weight"].reshape(E, I, H).transpose(0, 2, 1)
            hf[f"{stem}.mlp.experts.gate_up_proj"] = gate_up
        elif module == "ffn_gate_exps":
            bias = np.empty((E, 2 * I), dtype=np.float32)
            bias[:, 0::2], bias[:, 1::2] = t.reshape(E, I), back[f"blk.{layer}.ffn_up_exps.bias"].reshape(E, I)
            hf[f"{stem}.mlp.experts.gate_up_proj_bias"] = bias
        elif module == "ffn_down_exps" and kind == "weight":
            hf[f"{stem}.mlp.experts.down_proj"] = t.reshape(E, H, I).transpose(0, 2, 1)
        elif module == "ffn_down_exps":
            hf[f"{stem}.mlp.experts.down_proj_bias"] = t.reshape(E, H)
        elif module == "attn_sinks":
            hf[f"{stem}.self_attn.sinks"] = t
        elif module != "ffn_up_exps":
            hf[f"{stem}.{inverse[module]}.{kind}"] = t
    model = GptOssForCausalLM._from_config(config, experts_implementation="eager").eval()
    missing, unexpected = model.load_state_dict({k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in hf.items()},
                                                strict=False)
    assert not missing and not unexpected, (missing, unexpected)
    return model


def write_gpt_oss(lines):
    """gpt-oss as llama.cpp's converter writes the released checkpoints: the experts MXFP4 (stacked
    [experts, rows, cols], gate and up apart), their biases F32; here the attention and the
    embedding and head Q8_0, the router, sinks and norms F32. A random model 64 wide (2 MXFP4 blocks
    a row), 4 experts of 64 (2 a token), YaRN as the file's rope scaling keys (truncated corrections:
    ggml's), sliding and full layers in turn (window 4), the SwiGLU clamped at llama.cpp's fixed 7."""
    from transformers import GptOssConfig, GptOssForCausalLM
    torch.manual_seed(40)  # 39 gave a router margin of 0.04, under the fixtures' 0.05
    config = GptOssConfig(vocab_size=96, hidden_size=64, intermediate_size=64, num_local_experts=4, num_experts_per_tok=2,
                          num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                          sliding_window=4, max_position_embeddings=64, rms_norm_eps=1e-5, tie_word_embeddings=False,
                          rope_parameters={"rope_type": "yarn", "rope_theta": 150000.0, "factor": 4.0, "beta_fast": 32.0,
                                           "beta_slow": 1.0, "truncate": True, "original_max_position_embeddings": 16},
                          bos_token_id=1, eos_token_id=2, pad_token_id=0, initializer_range=0.1)
    model = GptOssForCausalLM._from_config(config, experts_implementation="eager")
    with torch.no_grad():  # norms away from 1, biases and sinks away from 0, routers 4x (routing far from ties)
        for n, p in model.named_parameters():
            if n.endswith("norm.weight"):
                p.copy_(1 + 0.3 * torch.randn_like(p))
            elif n.endswith(("bias", "sinks")):
                p.copy_(0.3 * torch.randn_like(p))
            elif n.endswith("mlp.router.weight"):
                p.copy_(0.4 * torch.randn_like(p))
    state = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    path = OUT / "gpt-oss-mxfp4.gguf"
    w = GGUFWriter(str(path), "gpt-oss")
    text_model_metadata(w, config)
    w.add_rope_scaling_type(gguf.RopeScalingType.YARN)
    w.add_rope_scaling_factor(4.0)
    w.add_rope_scaling_orig_ctx_len(16)
    w.add_sliding_window(config.sliding_window)
    w.add_expert_feed_forward_length(config.intermediate_size)
    w.add_expert_count(config.num_local_experts)
    w.add_expert_used_count(config.num_experts_per_tok)
    special_ids(w, config)
    for name, t in gpt_oss_state_to_gguf(state).items():
        if name.endswith("_exps.weight"):  # the quantizer takes rows: each expert's, stacked back
            data = encode(np.ascontiguousarray(t.reshape(-1, t.shape[-1])), Q.MXFP4)
            w.add_tensor(name, data.reshape(t.shape[0], t.shape[1], -1), raw_dtype=Q.MXFP4)
        elif t.ndim == 2 and "_exps" not in name and "ffn_gate_inp" not in name:
            add(w, name, t, Q.Q8_0)
        else:
            add(w, name, t.astype(np.float32), Q.F32)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    moe_reference(lines, "gpt-oss-mxfp4", gpt_oss_from_gguf(path, config), [1, 17, 42, 5, 88, 23, 61, 9])


DEEPSEEK_BLOCK = {"input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm",
                  "self_attn.q_proj": "attn_q", "self_attn.q_a_proj": "attn_q_a", "self_attn.q_a_layernorm": "attn_q_a_norm",
                  "self_attn.q_b_proj": "attn_q_b", "self_attn.kv_a_proj_with_mqa": "attn_kv_a_mqa",
                  "self_attn.kv_a_layernorm": "attn_kv_a_norm", "self_attn.kv_b_proj": "attn_kv_b",
                  "self_attn.o_proj": "attn_output",
                  "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down",
                  "mlp.gate": "ffn_gate_inp", "mlp.shared_experts.gate_proj": "ffn_gate_shexp",
                  "mlp.shared_experts.up_proj": "ffn_up_shexp", "mlp.shared_experts.down_proj": "ffn_down_shexp"}


def deepseek_state_to_gguf(state, config, split_kv_b=True):
    """transformers 5's DeepSeek V3 as llama.cpp's converter writes it: kv_b_proj split per head into
    attn_k_b [heads, kv_lora, nope] (transposed) and attn_v_b [heads, v, kv_lora]; the fused experts
    (gate_up_proj [E, 2 I, H] gate then up) as ffn_gate_exps / ffn_up_exps [E, I, H]; the choice bias
    as exp_probs_b.bias."""
    H, nope, v, I = config.num_attention_heads, config.qk_nope_head_dim, config.v_head_dim, config.moe_intermediate_size
    out, rest = {}, {}
    for name, w in state.items():
        parts = name.split(".")
        if name.endswith("kv_b_proj.weight") and split_kv_b:
            kv_b = w.reshape(H, nope + v, -1)
            out[f"blk.{parts[2]}.attn_k_b.weight"] = kv_b[:, :nope].transpose(0, 2, 1)
            out[f"blk.{parts[2]}.attn_v_b.weight"] = kv_b[:, nope:]
        elif name.endswith("mlp.experts.gate_up_proj"):
            out[f"blk.{parts[2]}.ffn_gate_exps.weight"] = w[:, :I]
            out[f"blk.{parts[2]}.ffn_up_exps.weight"] = w[:, I:]
        elif name.endswith("mlp.experts.down_proj"):
            out[f"blk.{parts[2]}.ffn_down_exps.weight"] = w
        elif name.endswith("e_score_correction_bias"):
            out[f"blk.{parts[2]}.exp_probs_b.bias"] = w
        else:
            rest[name] = w
    out.update(hf_block_names(rest, LLAMA_FIXED, DEEPSEEK_BLOCK, "model.layers."))
    return {k: np.ascontiguousarray(t) for k, t in out.items()}


def deepseek_from_gguf(path, config, model_class):
    """The file read back by the gguf package, as transformers' DeepSeek V2 or V3 (kv_b_proj put back together)."""
    inverse = {v: k for k, v in DEEPSEEK_BLOCK.items()}
    fixed = {v: k for k, v in LLAMA_FIXED.items()}
    H, nope, v = config.num_attention_heads, config.qk_nope_head_dim, config.v_head_dim
    E, I, D, L = config.n_routed_experts, config.moe_intermediate_size, config.hidden_size, config.kv_lora_rank
    back, hf = read_back(path), {}
    for name, t in back.items():
        if name in fixed:
            hf[fixed[name]] = t
            continue
        _, layer, module, kind = name.split(".")
        stem = f"model.layers.{layer}"
        if module == "attn_k_b":
            k_b = t.reshape(H, L, nope).transpose(0, 2, 1)
            v_b = back[f"blk.{layer}.attn_v_b.weight"].reshape(H, v, L)
            hf[f"{stem}.self_attn.kv_b_proj.weight"] = np.concatenate([k_b, v_b], axis=1).reshape(H * (nope + v), L)
        elif module == "ffn_gate_exps":
            hf[f"{stem}.mlp.experts.gate_up_proj"] = np.concatenate(
                [t.reshape(E, I, D), back[f"blk.{layer}.ffn_up_exps.weight"].reshape(E, I, D)], axis=1)
        elif module == "ffn_down_exps":
            hf[f"{stem}.mlp.experts.down_proj"] = t.reshape(E, D, I)
        elif module == "exp_probs_b":
            hf[f"{stem}.mlp.gate.e_score_correction_bias"] = t
        elif module not in ("attn_v_b", "ffn_up_exps"):
            hf[f"{stem}.{inverse[module]}.{kind}"] = t
    model = model_class._from_config(config, experts_implementation="eager").eval()
    missing, unexpected = model.load_state_dict({k: torch.from_numpy(np.ascontiguousarray(t)) for k, t in hf.items()},
                                                strict=False)
    assert not missing and not unexpected, (missing, unexpected)
    return model


def deepseek_routing_margin(model, config, ids):
    """DeepSeek's choices far from ties, in its own choice space (V3: sigmoid scores plus the choice
    bias; V2: the router logits, whose order its softmax keeps, in one group): the smallest gap between the kept groups (by the sum of their best 2) and the next, and
    between the k-th chosen expert of the kept groups and the next, over the prompt and its greedy run."""
    margins = []
    groups, per = config.n_group, config.n_routed_experts // config.n_group

    def hook(module, args, output):
        if type(module).__name__ == "DeepseekV2TopkRouter":  # softmax keeps the logits' order: part them there
            choice = output[0].float()
        else:
            choice = output[0].float().sigmoid() + module.e_score_correction_bias
        best = 1 if type(module).__name__ == "DeepseekV2TopkRouter" else 2  # a group's score: its best 1 (V2) or 2 (V3)
        score = choice.view(-1, groups, per).topk(best, dim=-1).values.sum(-1)
        group = score.sort(-1, descending=True).values
        if config.topk_group < groups:
            margins.append(float((group[:, config.topk_group - 1] - group[:, config.topk_group]).min()))
        kept = group[:, config.topk_group - 1:config.topk_group]
        in_kept = score >= kept
        masked = choice.masked_fill(~in_kept.repeat_interleave(per, dim=-1), float("-inf")).sort(-1, descending=True).values
        gap = masked[:, config.num_experts_per_tok - 1] - masked[:, config.num_experts_per_tok]
        if torch.isfinite(gap).all():
            margins.append(float(gap.min()))
    handles = [m.register_forward_hook(hook) for m in model.modules()
               if type(m).__name__ in ("DeepseekV2TopkRouter", "DeepseekV3TopkRouter")]
    assert handles
    with torch.no_grad():
        model.generate(torch.tensor([ids]), max_new_tokens=NEW_TOKENS, do_sample=False, pad_token_id=2, eos_token_id=2)
    for h in handles:
        h.remove()
    return min(margins)


def write_deepseek(lines, older=False, v2=False, groups=False):
    """DeepSeek V3 as llama.cpp's converter writes it (general.architecture deepseek2): multi-head
    latent attention with q_lora (kv_b split into k_b, transposed, and v_b, key_length kv_lora_rank +
    rope width, the widths in the _mla keys), a dense first layer, then 4 experts (2 a token, sigmoid
    routing with the choice bias, 2 groups of which 1 is kept, renormalised, x2.5) beside a shared
    expert; YaRN with yarn_log_multiplier (mscale_all_dim 1, as mscale). Experts and dense MLP Q8_0,
    v_b Q8_0, k_b F16 (its rows are 16 wide), the rest F32. older: as older converters wrote the
    file (attn_kv_b whole, key_length and value_length the heads' widths, no _mla keys), and a V3
    without q_lora (q_proj) whose file leaves out the group, weight-norm and weight-scale keys
    (llama.cpp then neither limits groups, renormalises nor scales: the reference's config says so).
    v2: DeepSeek V2 (V2-Lite's form: no q_lora, softmax routing greedy over one group, not
    renormalised, here x2 to show the scale), as newer converters write it; with groups, V2's
    group_limited_greedy (2 groups of 2 experts, 1 kept, a group scored by its best expert, as
    DeepSeek V2 and transformers route; llama.cpp scores a group by its best 2)."""
    from transformers import DeepseekV2Config, DeepseekV2ForCausalLM, DeepseekV3Config, DeepseekV3ForCausalLM
    torch.manual_seed(57 if groups else 55 if v2 else 51 if older else 50)  # 50 gave the older file's choices a margin of 0.0497
    if v2:
        config_class, model_class = DeepseekV2Config, DeepseekV2ForCausalLM
        routing = dict(n_group=2, topk_group=1, topk_method="group_limited_greedy", routed_scaling_factor=2.0,
                       norm_topk_prob=False) if groups else \
            dict(n_group=1, topk_group=1, topk_method="greedy", routed_scaling_factor=2.0, norm_topk_prob=False)
    else:
        config_class, model_class = DeepseekV3Config, DeepseekV3ForCausalLM
        routing = dict(n_group=1, topk_group=1, routed_scaling_factor=1.0, norm_topk_prob=False) if older else \
            dict(n_group=2, topk_group=1, routed_scaling_factor=2.5, norm_topk_prob=True)
    config = config_class(vocab_size=96, hidden_size=64, intermediate_size=128, moe_intermediate_size=64,
                              num_hidden_layers=2, first_k_dense_replace=1, n_routed_experts=4, num_experts_per_tok=2,
                              n_shared_experts=1, **routing,
                              num_attention_heads=4, num_key_value_heads=4, q_lora_rank=None if older or v2 else 32,
                              kv_lora_rank=32,
                              qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16, max_position_embeddings=64,
                              rms_norm_eps=1e-6, tie_word_embeddings=False, bos_token_id=1, eos_token_id=2,
                              initializer_range=0.1,
                              rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0,
                                               "original_max_position_embeddings": 16, "mscale": 1.0, "mscale_all_dim": 1.0,
                                               "beta_fast": 32.0, "beta_slow": 1.0})
    model = model_class._from_config(config, experts_implementation="eager")
    with torch.no_grad():  # norms away from 1; the router 4x and its choice bias drawn (routing far from ties)
        for n, p in model.named_parameters():
            if p.ndim == 1 and n.endswith("norm.weight"):
                p.copy_(1 + 0.3 * torch.randn_like(p))
            elif n.endswith("mlp.gate.weight"):
                p.copy_(0.4 * torch.randn_like(p))
        for n, b in model.named_buffers():
            if n.endswith("e_score_correction_bias"):
                b.copy_(0.5 * torch.randn_like(b))
    state = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    name = "deepseek2-v2-groups" if groups else "deepseek2-v2" if v2 else "deepseek2-v3-older" if older else "deepseek2-v3"
    path = OUT / f"{name}.gguf"
    w = GGUFWriter(str(path), "deepseek2")
    w.add_block_count(config.num_hidden_layers)
    w.add_context_length(config.max_position_embeddings)
    w.add_embedding_length(config.hidden_size)
    w.add_feed_forward_length(config.intermediate_size)
    w.add_head_count(config.num_attention_heads)
    w.add_head_count_kv(1)  # MLA written as one key/value head
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(config.rms_norm_eps)
    w.add_expert_used_count(config.num_experts_per_tok)
    w.add_expert_gating_func(gguf.ExpertGatingFuncType.SOFTMAX if v2 else gguf.ExpertGatingFuncType.SIGMOID)
    if not older:
        w.add_expert_group_count(config.n_group)
        w.add_expert_group_used_count(config.topk_group)
    w.add_leading_dense_block_count(config.first_k_dense_replace)
    w.add_vocab_size(config.vocab_size)
    if not older and not v2:
        w.add_q_lora_rank(config.q_lora_rank)
    w.add_kv_lora_rank(config.kv_lora_rank)
    if older:
        w.add_key_length(config.qk_nope_head_dim + config.qk_rope_head_dim)
        w.add_value_length(config.v_head_dim)
    else:
        w.add_key_length(config.kv_lora_rank + config.qk_rope_head_dim)
        w.add_value_length(config.kv_lora_rank)
        w.add_key_length_mla(config.qk_nope_head_dim + config.qk_rope_head_dim)
        w.add_value_length_mla(config.v_head_dim)
    w.add_expert_feed_forward_length(config.moe_intermediate_size)
    w.add_expert_count(config.n_routed_experts)
    w.add_expert_shared_count(config.n_shared_experts)
    if not older:
        w.add_expert_weights_scale(config.routed_scaling_factor)
        w.add_expert_weights_norm(config.norm_topk_prob)
    w.add_rope_dimension_count(config.qk_rope_head_dim)
    w.add_rope_scaling_type(gguf.RopeScalingType.YARN)
    w.add_rope_scaling_factor(4.0)
    w.add_rope_scaling_orig_ctx_len(16)
    w.add_rope_scaling_yarn_log_mul(0.1 * 1.0)
    special_ids(w, config)
    for tname, t in deepseek_state_to_gguf(state, config, split_kv_b=not older).items():
        if t.ndim == 3 and tname.endswith(("_exps.weight", "attn_v_b.weight")):  # each expert's (head's) rows, stacked back
            data = encode(np.ascontiguousarray(t.reshape(-1, t.shape[-1])), Q.Q8_0)
            w.add_tensor(tname, data.reshape(t.shape[0], t.shape[1], -1), raw_dtype=Q.Q8_0)
        elif tname.endswith("attn_k_b.weight"):
            w.add_tensor(tname, t.astype(np.float16))
        elif t.ndim == 2 and tname.split(".")[-2] in ("ffn_gate", "ffn_up", "ffn_down", "ffn_gate_shexp", "ffn_up_shexp",
                                                      "ffn_down_shexp", "attn_kv_b"):
            add(w, tname, t, Q.Q8_0)
        else:
            add(w, tname, t.astype(np.float32), Q.F32)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    ids = [1, 17, 42, 5, 88, 23, 61, 9]
    reference = deepseek_from_gguf(path, config, model_class)
    margin = deepseek_routing_margin(reference, config, ids)
    assert margin > 0.05, f"{name}: choices only {margin} apart"
    if groups:  # the group limit changes what the file computes
        greedy = deepseek_from_gguf(path, config_class(**{**config.to_dict(), "topk_method": "greedy"}), model_class)
        with torch.no_grad():
            apart = (greedy(torch.tensor([ids])).logits - reference(torch.tensor([ids])).logits).abs().max()
        assert apart > 1e-2, f"{name}: routing without the group limit moves the logits by only {apart}"
    lines.append(reference_line(name, reference, ids, 2))


def moe_reference(lines, name, model, ids):
    margin = routing_margin(model, ids)
    assert margin > 0.05, f"{name}: router logits only {margin} apart"
    lines.append(reference_line(name, model, ids, 2))


def write_issue32_families(lines):
    """The dense families of issue 32 as llama.cpp's converter writes them."""
    from transformers import Qwen3Config

    # Qwen3: Qwen2's layout (no q/k permutation) with the per-head q/k norms, its head_dim as key_length
    directory = FIXTURES / "qwen3"
    config = Qwen3Config.from_pretrained(directory)
    state = load_file(str(directory / "model.safetensors"))
    assert config.head_dim * config.num_attention_heads != config.hidden_size  # key_length matters
    path = OUT / "qwen3-f32.gguf"
    w = GGUFWriter(str(path), "qwen3")
    text_model_metadata(w, config)
    special_ids(w, config)
    finish(w, hf_block_names(state, LLAMA_FIXED, QK_NORM_BLOCK, "model.layers."))
    lines.append(fixture_reference("qwen3", directory, path.stem))

    # Gemma: no q/k permutation, every norm weight stored as 1 + w (the scale its norm applies), no
    # rope base (llama.cpp's 10000, transformers' default), the head width as key_length, tied head
    from transformers import GemmaConfig
    directory = FIXTURES / "gemma"
    config = GemmaConfig.from_pretrained(directory)
    state = load_file(str(directory / "model.safetensors"))
    assert config.rope_parameters["rope_theta"] == 10000 and config.head_dim * config.num_attention_heads != config.hidden_size
    path = OUT / "gemma-f32.gguf"
    w = GGUFWriter(str(path), "gemma")
    w.add_context_length(config.max_position_embeddings)
    w.add_embedding_length(config.hidden_size)
    w.add_block_count(config.num_hidden_layers)
    w.add_feed_forward_length(config.intermediate_size)
    w.add_head_count(config.num_attention_heads)
    w.add_head_count_kv(config.num_key_value_heads)
    w.add_layer_norm_rms_eps(config.rms_norm_eps)
    w.add_key_length(config.head_dim)
    w.add_value_length(config.head_dim)
    special_ids(w, config)
    tensors = hf_block_names(state, LLAMA_FIXED, LLAMA_BLOCK, "model.layers.")
    assert "output.weight" not in tensors
    for name in tensors:
        if name.endswith("norm.weight"):
            assert np.abs(tensors[name]).max() > 0.05, name  # norms away from 0: a missed 1 shows
            tensors[name] = tensors[name] + 1
    finish(w, tensors)
    lines.append(fixture_reference("gemma", directory, path.stem))

    # Gemma 2: Gemma's layout, its sandwich norms, soft caps and window as keys; no
    # query_pre_attn_scalar in the file: llama.cpp scales scores by the key length (but for the
    # 27B), so the reference is the fixture's weights with query_pre_attn_scalar = head_dim
    from transformers import Gemma2Config
    directory = FIXTURES / "gemma2"
    config = Gemma2Config.from_pretrained(directory)
    state = load_file(str(directory / "model.safetensors"))
    assert config.rope_parameters["rope_theta"] == 10000 and config.num_hidden_layers != 46
    assert config.layer_types == ["sliding_attention" if i % 2 == 0 else "full_attention"
                                  for i in range(config.num_hidden_layers)]  # llama.cpp's fixed pattern
    path = OUT / "gemma2-f32.gguf"
    w = GGUFWriter(str(path), "gemma2")
    gemma_metadata(w, config)
    w.add_attn_logit_softcapping(config.attn_logit_softcapping)
    w.add_final_logit_softcapping(config.final_logit_softcapping)
    w.add_sliding_window(config.sliding_window)
    special_ids(w, config)
    finish(w, plus_one_norms(converter_names(state, gguf.MODEL_ARCH.GEMMA2)))
    lines.append(fixture_reference("gemma2", directory, path.stem, query_pre_attn_scalar=config.head_dim))

    # Gemma 3 (text): the generic keys (the global layers' rope base and linear scaling) with
    # Gemma's, q/k norms +1 too; llama.cpp fixes the sliding layers (5 of 6, base 10000, unscaled)
    from transformers import Gemma3TextConfig
    directory = FIXTURES / "gemma3_text"
    config = Gemma3TextConfig.from_pretrained(directory)
    state = load_file(str(directory / "model.safetensors"))
    full, local = config.rope_parameters["full_attention"], config.rope_parameters["sliding_attention"]
    assert local == {"rope_type": "default", "rope_theta": 10000.0} and full["rope_type"] == "linear", config.rope_parameters
    assert config.layer_types == ["full_attention" if (i + 1) % 6 == 0 else "sliding_attention"
                                  for i in range(config.num_hidden_layers)]
    assert config.query_pre_attn_scalar == config.head_dim and config.attn_logit_softcapping is None
    path = OUT / "gemma3_text-f32.gguf"
    w = GGUFWriter(str(path), "gemma3")
    gemma_metadata(w, config)
    w.add_rope_freq_base(full["rope_theta"])
    w.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
    w.add_rope_scaling_factor(full["factor"])
    if config.final_logit_softcapping:
        w.add_final_logit_softcapping(config.final_logit_softcapping)
    w.add_sliding_window(config.sliding_window)
    special_ids(w, config)
    finish(w, plus_one_norms(converter_names(state, gguf.MODEL_ARCH.GEMMA3)))
    lines.append(fixture_reference("gemma3_text", directory, path.stem))

    # Phi-3: Phi3MiniModel's keys (the rotated width as rope.dimension_count, the window, 0 for
    # none), fused qkv and gate_up as they are; Phi-3.5-mini's LongRoPE as rope_factors_short /
    # rope_factors_long tensors and rope.scaling.attn_factor (its generate_extra_tensors)
    from transformers import Phi3Config
    for fixture in ["phi3", "phi3-longrope"]:
        directory = FIXTURES / fixture
        config = Phi3Config.from_pretrained(directory)
        state = load_file(str(directory / "model.safetensors"))
        rope = config.rope_parameters
        assert rope["rope_type"] == ("default" if fixture == "phi3" else "longrope") and rope["partial_rotary_factor"] != 1, rope
        path = OUT / f"{fixture}-f32.gguf"
        w = GGUFWriter(str(path), "phi3")
        w.add_context_length(config.max_position_embeddings)
        w.add_rope_scaling_orig_ctx_len(config.original_max_position_embeddings)
        w.add_embedding_length(config.hidden_size)
        w.add_feed_forward_length(config.intermediate_size)
        w.add_block_count(config.num_hidden_layers)
        w.add_head_count(config.num_attention_heads)
        w.add_head_count_kv(config.num_key_value_heads)
        w.add_layer_norm_rms_eps(config.rms_norm_eps)
        w.add_rope_dimension_count(int(rope["partial_rotary_factor"] * config.hidden_size) // config.num_attention_heads)
        w.add_rope_freq_base(rope["rope_theta"])
        w.add_sliding_window(config.sliding_window or 0)
        special_ids(w, config)
        tensors = converter_names(state, gguf.MODEL_ARCH.PHI3)
        if rope["rope_type"] == "longrope":
            scale = config.max_position_embeddings / config.original_max_position_embeddings
            w.add_rope_scaling_attn_factors(math.sqrt(1 + math.log(scale) / math.log(config.original_max_position_embeddings)))
            tensors["rope_factors_long.weight"] = np.array(rope["long_factor"], np.float32)
            tensors["rope_factors_short.weight"] = np.array(rope["short_factor"], np.float32)
        finish(w, tensors)
        lines.append(fixture_reference(fixture, directory, path.stem))

    # StarCoder2: the generic keys (norm_epsilon as layer_norm_epsilon), no window: llama.cpp
    # attends to every key, so the reference is the fixture's weights without its window
    from transformers import Starcoder2Config
    directory = FIXTURES / "starcoder2"
    config = Starcoder2Config.from_pretrained(directory)
    state = load_file(str(directory / "model.safetensors"))
    assert getattr(config, "head_dim", None) is None and config.rope_parameters["rope_type"] == "default"
    path = OUT / "starcoder2-f32.gguf"
    w = GGUFWriter(str(path), "starcoder2")
    w.add_block_count(config.num_hidden_layers)
    w.add_context_length(config.max_position_embeddings)
    w.add_embedding_length(config.hidden_size)
    w.add_feed_forward_length(config.intermediate_size)
    w.add_head_count(config.num_attention_heads)
    w.add_head_count_kv(config.num_key_value_heads)
    w.add_rope_freq_base(config.rope_parameters["rope_theta"])
    w.add_layer_norm_eps(config.norm_epsilon)
    special_ids(w, config)
    finish(w, converter_names(state, gguf.MODEL_ARCH.STARCODER2))
    lines.append(fixture_reference("starcoder2", directory, path.stem, sliding_window=None))

    # StarCoder (gpt_bigcode): multi-query c_attn and nn.Linear weights as they are, learned positions;
    # the converter writes 4 x n_embd as the MLP width (StarCoder's n_inner), this fixture's n_inner
    # (2 x) is what its tensors hold
    from transformers import GPTBigCodeConfig
    directory = FIXTURES / "gpt_bigcode"
    config = GPTBigCodeConfig.from_pretrained(directory)
    state = load_file(str(directory / "model.safetensors"))
    assert config.multi_query and config.activation_function == "gelu_pytorch_tanh"
    path = OUT / "starcoder-f32.gguf"
    w = GGUFWriter(str(path), "starcoder")
    w.add_context_length(config.n_positions)
    w.add_embedding_length(config.n_embd)
    w.add_feed_forward_length(config.n_inner)
    w.add_block_count(config.n_layer)
    w.add_head_count(config.n_head)
    w.add_head_count_kv(1)
    w.add_layer_norm_eps(config.layer_norm_epsilon)
    special_ids(w, config)
    finish(w, converter_names(state, gguf.MODEL_ARCH.STARCODER))
    lines.append(fixture_reference("gpt_bigcode", directory, path.stem))

    # OLMo 2: the generic keys, its post-sublayer norms and whole-projection q/k norms, not permuted
    from transformers import Olmo2Config
    directory = FIXTURES / "olmo2"
    config = Olmo2Config.from_pretrained(directory)
    state = load_file(str(directory / "model.safetensors"))
    path = OUT / "olmo2-f32.gguf"
    w = GGUFWriter(str(path), "olmo2")
    text_model_metadata(w, config)
    special_ids(w, config)
    finish(w, converter_names(state, gguf.MODEL_ARCH.OLMO2))
    lines.append(fixture_reference("olmo2", directory, path.stem))

    # Phi-2: Phi2Model writes 4 x hidden as the MLP width and the heads as key/value heads, which
    # the phi fixture (MLP 2 x hidden, 2 key/value heads) is not: a random Phi of Phi-2's shape,
    # norms and biases away from 1 and 0, the fixture's other settings
    from transformers import PhiConfig, PhiForCausalLM
    base = PhiConfig.from_pretrained(FIXTURES / "phi")
    torch.manual_seed(32)
    config = PhiConfig(**{**base.to_dict(), "intermediate_size": 4 * base.hidden_size,
                          "num_key_value_heads": base.num_attention_heads}, attn_implementation="eager")
    model = PhiForCausalLM(config)
    with torch.no_grad():
        for n, p in model.named_parameters():
            if p.ndim == 1:
                p.copy_((1 if "layernorm" in n else 0) + 0.3 * torch.randn_like(p))
    model.eval()
    state = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    rope = config.rope_parameters
    assert rope["rope_theta"] == 10000 and rope["partial_rotary_factor"] != 1 and not config.qk_layernorm
    path = OUT / "phi2-f32.gguf"
    w = GGUFWriter(str(path), "phi2")
    w.add_context_length(config.max_position_embeddings)
    w.add_embedding_length(config.hidden_size)
    w.add_feed_forward_length(4 * config.hidden_size)
    w.add_block_count(config.num_hidden_layers)
    w.add_head_count(config.num_attention_heads)
    w.add_head_count_kv(config.num_attention_heads)
    w.add_layer_norm_eps(config.layer_norm_eps)
    w.add_rope_dimension_count(int(rope["partial_rotary_factor"] * config.hidden_size) // config.num_attention_heads)
    special_ids(w, config)
    finish(w, converter_names(state, gguf.MODEL_ARCH.PHI2))
    ids = [383, 17, 42, 5, 88, 23, 61, 9, 300, 12]
    lines.append(reference_line(path.stem, model, ids, config.eos_token_id))

    # StableLM: StableLMModel's keys (the rotated width, use_parallel_residual), q/k/v biases
    from transformers import StableLmConfig
    directory = FIXTURES / "stablelm"
    config = StableLmConfig.from_pretrained(directory)
    state = load_file(str(directory / "model.safetensors"))
    rope = config.rope_parameters
    assert rope["rope_theta"] == 10000 and not config.qk_layernorm and config.use_qkv_bias
    path = OUT / "stablelm-f32.gguf"
    w = GGUFWriter(str(path), "stablelm")
    w.add_context_length(config.max_position_embeddings)
    w.add_embedding_length(config.hidden_size)
    w.add_block_count(config.num_hidden_layers)
    w.add_feed_forward_length(config.intermediate_size)
    w.add_rope_dimension_count(int(rope["partial_rotary_factor"] * (config.hidden_size // config.num_attention_heads)))
    w.add_head_count(config.num_attention_heads)
    w.add_head_count_kv(config.num_key_value_heads)
    w.add_parallel_residual(config.use_parallel_residual)
    w.add_layer_norm_eps(config.layer_norm_eps)
    special_ids(w, config)
    finish(w, converter_names(state, gguf.MODEL_ARCH.STABLELM))
    lines.append(fixture_reference("stablelm", directory, path.stem))

    # Command-R: the generic keys, logit_scale, rope scaling "none", tied head, q/k as they are
    from transformers import CohereConfig
    directory = FIXTURES / "cohere"
    config = CohereConfig.from_pretrained(directory)
    state = load_file(str(directory / "model.safetensors"))
    assert not config.use_qk_norm and config.attention_bias and config.rope_parameters["rope_type"] == "default"
    path = OUT / "cohere-f32.gguf"
    w = GGUFWriter(str(path), "command-r")
    w.add_block_count(config.num_hidden_layers)
    w.add_context_length(config.max_position_embeddings)
    w.add_embedding_length(config.hidden_size)
    w.add_feed_forward_length(config.intermediate_size)
    w.add_head_count(config.num_attention_heads)
    w.add_head_count_kv(config.num_key_value_heads)
    w.add_rope_freq_base(config.rope_parameters["rope_theta"])
    w.add_layer_norm_eps(config.layer_norm_eps)
    w.add_logit_scale(config.logit_scale)
    w.add_rope_scaling_type(gguf.RopeScalingType.NONE)
    special_ids(w, config)
    tensors = converter_names(state, gguf.MODEL_ARCH.COMMAND_R)
    assert "output.weight" not in tensors
    finish(w, tensors)
    lines.append(fixture_reference("cohere", directory, path.stem))

    # Command R7B (cohere2): Command-R's layout, its window and window pattern as keys, tied head
    from transformers import Cohere2Config
    directory = FIXTURES / "cohere2"
    config = Cohere2Config.from_pretrained(directory)
    state = load_file(str(directory / "model.safetensors"))
    pattern = json.loads((directory / "config.json").read_text())["sliding_window_pattern"]  # 5.x: layer_types
    assert pattern != 4  # the key must be read: llama.cpp's default is 4
    path = OUT / "cohere2-f32.gguf"
    w = GGUFWriter(str(path), "cohere2")
    w.add_block_count(config.num_hidden_layers)
    w.add_context_length(config.max_position_embeddings)
    w.add_embedding_length(config.hidden_size)
    w.add_feed_forward_length(config.intermediate_size)
    w.add_head_count(config.num_attention_heads)
    w.add_head_count_kv(config.num_key_value_heads)
    w.add_rope_freq_base(config.rope_parameters["rope_theta"])
    w.add_layer_norm_eps(config.layer_norm_eps)
    w.add_logit_scale(config.logit_scale)
    w.add_sliding_window(config.sliding_window)
    w.add_sliding_window_pattern(pattern)
    special_ids(w, config)
    tensors = converter_names(state, gguf.MODEL_ARCH.COHERE2)
    assert "output.weight" not in tensors
    finish(w, tensors)
    lines.append(fixture_reference("cohere2", directory, path.stem))


def falcon_to_gguf(state, n_head, n_head_kv):
    """convert_hf_to_gguf.py's FalconModel: the fused qkv's groups (a key/value head's queries, its key,
    its value) stored as all queries, all keys, all values; the gguf package's names."""
    out = {}
    for name, t in state.items():
        if "query_key_value" in name:
            head_rows = t.shape[0] // (n_head + 2 * n_head_kv)
            groups = t.reshape(n_head_kv, n_head // n_head_kv + 2, head_rows, *t.shape[1:])
            t = np.concatenate([groups[:, :-2].reshape(n_head * head_rows, *t.shape[1:]),
                                groups[:, -2].reshape(n_head_kv * head_rows, *t.shape[1:]),
                                groups[:, -1].reshape(n_head_kv * head_rows, *t.shape[1:])])
        out[name] = t
    return converter_names(out, gguf.MODEL_ARCH.FALCON)


def write_falcon_smollm3(lines):
    """Falcon as the converter writes each variant, and SmolLM3 as llama.cpp reads it."""
    from transformers import FalconConfig
    # 40B's layout (grouped qkv, ln_attn and ln_mlp), Falcon 2's (grouped qkv, one norm, here with
    # biases) and 7B's (multi-query: the hub's config has no num_kv_heads, so the converter writes 1)
    for fixture, n_head_kv in [("falcon-new-arch", None), ("falcon-new-arch-one-norm", None), ("falcon", 1)]:
        directory = FIXTURES / fixture
        config = FalconConfig.from_pretrained(directory)
        state = load_file(str(directory / "model.safetensors"))
        assert config.new_decoder_architecture == (n_head_kv is None) and not config.alibi
        n_head_kv = n_head_kv or config.num_kv_heads
        path = OUT / f"{fixture}-f32.gguf"
        w = GGUFWriter(str(path), "falcon")
        w.add_context_length(2048)
        w.add_tensor_data_layout("jploski")
        w.add_embedding_length(config.hidden_size)
        w.add_feed_forward_length(config.ffn_hidden_size)  # the converter's 4 x hidden is Falcon's width; this fixture's is 2 x
        w.add_block_count(config.num_hidden_layers)
        w.add_head_count(config.num_attention_heads)
        w.add_head_count_kv(n_head_kv)
        w.add_layer_norm_eps(config.layer_norm_epsilon)
        special_ids(w, config)
        finish(w, falcon_to_gguf(state, config.num_attention_heads, n_head_kv))
        lines.append(fixture_reference(fixture, directory, path.stem))

    # OLMo: TextModel's generic keys, the LayerNorm's fixed 1e-5, clip_qkv as clamp_kqv, permuted q/k
    from transformers import OlmoConfig
    for fixture in ["olmo", "olmo-clip-qkv"]:
        directory = FIXTURES / fixture
        config = OlmoConfig.from_pretrained(directory)
        state = load_file(str(directory / "model.safetensors"))
        assert (config.clip_qkv is None) == (fixture == "olmo")
        path = OUT / f"{fixture}-f32.gguf"
        w = GGUFWriter(str(path), "olmo")
        w.add_context_length(config.max_position_embeddings)
        w.add_embedding_length(config.hidden_size)
        w.add_feed_forward_length(config.intermediate_size)
        w.add_block_count(config.num_hidden_layers)
        w.add_head_count(config.num_attention_heads)
        w.add_head_count_kv(config.num_key_value_heads)
        w.add_rope_freq_base(config.rope_parameters["rope_theta"])
        w.add_layer_norm_eps(1e-5)
        if config.clip_qkv is not None:
            w.add_clamp_kqv(config.clip_qkv)
        special_ids(w, config)
        for name in list(state):
            if "q_proj.weight" in name or "k_proj.weight" in name:
                state[name] = permute(state[name], config.num_attention_heads if "q_proj" in name else config.num_key_value_heads)
            elif name.endswith("_proj.bias"):  # the converter leaves q/k biases unpermuted: no OLMo has them,
                del state[name]                # so the file is written, and read, without the fixture's
        finish(w, llama_state_to_gguf(state))
        lines.append(fixture_reference(fixture, directory, path.stem, **({"attention_bias": False} if config.attention_bias else {})))

    # SmolLM3: LLaMA's keys and permuted q/k; llama.cpp leaves layers 4, 8, ... unrotated (no key
    # says so), which transformers' default no_rope_layers also does: a random 5-layer model
    from transformers import SmolLM3Config, SmolLM3ForCausalLM
    base = SmolLM3Config.from_pretrained(FIXTURES / "smollm3")
    torch.manual_seed(39)
    settings = {k: v for k, v in base.to_dict().items() if k not in ("no_rope_layers", "layer_types")}
    config = SmolLM3Config(**{**settings, "num_hidden_layers": 5}, attn_implementation="eager")
    assert config.no_rope_layers == [1, 1, 1, 0, 1] and not config.use_sliding_window and config.tie_word_embeddings
    model = SmolLM3ForCausalLM(config)
    with torch.no_grad():
        for n, p in model.named_parameters():
            if p.ndim == 1:
                p.copy_(1 + 0.3 * torch.randn_like(p))
    model.eval()
    state = {k: v.detach().numpy().copy() for k, v in model.state_dict().items() if k != "lm_head.weight"}
    for name in list(state):
        heads = config.num_attention_heads if "q_proj" in name else config.num_key_value_heads
        if "q_proj" in name or "k_proj" in name:
            state[name] = permute(state[name], heads)
    path = OUT / "smollm3-f32.gguf"
    w = GGUFWriter(str(path), "smollm3")
    llama_metadata(w, config)
    special_ids(w, config)
    finish(w, llama_state_to_gguf(state))
    lines.append(reference_line(path.stem, model, [383, 17, 42, 5, 88, 23, 61, 9, 30, 12], config.eos_token_id))


def llama_metadata(w, config):
    w.add_context_length(config.max_position_embeddings)
    w.add_embedding_length(config.hidden_size)
    w.add_block_count(config.num_hidden_layers)
    w.add_feed_forward_length(config.intermediate_size)
    w.add_head_count(config.num_attention_heads)
    w.add_head_count_kv(config.num_key_value_heads)
    w.add_layer_norm_rms_eps(config.rms_norm_eps)
    w.add_rope_freq_base(config.rope_parameters["rope_theta"])
    w.add_rope_dimension_count(config.hidden_size // config.num_attention_heads)
    w.add_vocab_size(config.vocab_size)


def main():
    OUT.mkdir(exist_ok=True)
    lines = []
    # the llama fixture, F32 and F16
    directory = FIXTURES / "llama"
    config = LlamaConfig.from_pretrained(directory)
    state = load_file(str(directory / "model.safetensors"))
    ids = [1, 464, 398, 266, 372, 340, 323, 339]
    for name, types in [("llama-f32", lambda n, t: Q.F32),
                        ("llama-f16", lambda n, t: Q.F16 if t.ndim == 2 else Q.F32)]:
        path = OUT / f"{name}.gguf"
        write_llama(path, config, state, types, spm_tokenizer(directory) if name == "llama-f32" else None)
        lines.append(reference_line(name, llama_from_gguf(path, config), ids, config.eos_token_id))

    # a LLaMA whose rows are 256 wide: every quantized type
    torch.manual_seed(12)
    config = LlamaConfig(vocab_size=96, hidden_size=256, intermediate_size=256, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64, rms_norm_eps=1e-5,
                         rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, tie_word_embeddings=False,
                         bos_token_id=1, eos_token_id=2, initializer_range=0.1)
    random_model = LlamaForCausalLM(config)
    with torch.no_grad():  # norms away from 1, so that a misplaced norm shows
        for n, p in random_model.named_parameters():
            if p.ndim == 1:
                p.copy_(1 + 0.3 * torch.randn_like(p))
    state = {k: v.detach().numpy().copy() for k, v in random_model.state_dict().items()}
    kinds = [Q.Q8_0, Q.Q4_0, Q.Q4_1, Q.Q4_K, Q.Q6_K]
    slots = ["attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"]

    def quant_types(name, t):
        if t.ndim == 1:
            return Q.BF16
        if name == "token_embd.weight":
            return Q.Q8_0
        if name == "output.weight":
            return Q.Q6_K
        layer, slot = int(name.split(".")[1]), name.split(".")[2]
        return kinds[(slots.index(slot) + 2 * layer) % len(kinds)]
    path = OUT / "llama-quant.gguf"
    write_llama(path, config, state, quant_types)
    back = llama_from_gguf(path, config).state_dict()
    for k, v in state.items():  # the quantizers above are sane: each weight within its block's step
        err = np.abs(back[k].numpy() - v).max() / max(np.abs(v).max(), 1e-6)
        assert err < 0.2, (k, err)
    lines.append(reference_line("llama-quant", llama_from_gguf(path, config), [1, 17, 42, 5, 88, 23, 61, 9], 2))
    # the same LLaMA with every matrix in Q3_K (3-bit weights, a 6-bit scale per 16: Q3_K_S files)
    path = OUT / "llama-q3k.gguf"
    write_llama(path, config, state, lambda name, t: Q.BF16 if t.ndim == 1 else Q.Q3_K)
    lines.append(reference_line("llama-q3k", llama_from_gguf(path, config), [1, 17, 42, 5, 88, 23, 61, 9], 2))
    # and with its matrices in IQ4_XS, the embedding and output IQ4_NL (IQ4_XS files' non-linear levels)
    path = OUT / "llama-iq4.gguf"
    write_llama(path, config, state, lambda name, t: Q.BF16 if t.ndim == 1 else
                Q.IQ4_NL if name in ("token_embd.weight", "output.weight") else Q.IQ4_XS)
    lines.append(reference_line("llama-iq4", llama_from_gguf(path, config), [1, 17, 42, 5, 88, 23, 61, 9], 2))
    # a LLaMA whose rows are 512 wide with every matrix in Q2_K (2-bit weights, a 4-bit scale and
    # minimum per 16: Q2_K files): on 2 ranks the row-split halves are whole 256-weight blocks
    torch.manual_seed(38)
    config = LlamaConfig(vocab_size=96, hidden_size=512, intermediate_size=512, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64, rms_norm_eps=1e-5,
                         rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, tie_word_embeddings=False,
                         bos_token_id=1, eos_token_id=2, initializer_range=0.1)
    wide = LlamaForCausalLM(config)
    with torch.no_grad():
        for n, p in wide.named_parameters():
            if p.ndim == 1:
                p.copy_(1 + 0.3 * torch.randn_like(p))
    path = OUT / "llama-q2k.gguf"
    write_llama(path, config, {k: v.detach().numpy().copy() for k, v in wide.state_dict().items()},
                lambda name, t: Q.BF16 if t.ndim == 1 else Q.Q2_K)
    lines.append(reference_line("llama-q2k", llama_from_gguf(path, config), [1, 17, 42, 5, 88, 23, 61, 9], 2))

    # a LLaMA with attention and MLP biases (q and k biases permuted like their rows), F32
    torch.manual_seed(7)
    config = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=1,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32, rms_norm_eps=1e-5,
                         rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, tie_word_embeddings=True,
                         attention_bias=True, mlp_bias=True, bos_token_id=1, eos_token_id=2, initializer_range=0.3)
    biased = LlamaForCausalLM(config)
    with torch.no_grad():  # biases and norms away from their initial 0 and 1
        for n, p in biased.named_parameters():
            if p.ndim == 1:
                p.copy_((1 if n.endswith("norm.weight") else 0) + 0.3 * torch.randn_like(p))
    state = {k: v.detach().numpy().copy() for k, v in biased.state_dict().items() if k != "lm_head.weight"}
    path = OUT / "llama-bias.gguf"
    write_llama(path, config, state, lambda n, t: Q.F32)
    lines.append(reference_line("llama-bias", llama_from_gguf(path, config), [1, 5, 9, 33, 12, 60], 2))

    # gpt2-tiny, F32 and quantized, with its tokenizer
    directory = FIXTURES / "gpt2-tiny"
    config = GPT2Config.from_pretrained(directory)
    state = load_file(str(directory / "model.safetensors"))
    state = {k.removeprefix("transformer."): v for k, v in state.items()}
    ids = [464, 3616, 286, 1204, 318, 257, 12, 99]
    ids = [i % config.vocab_size for i in ids]
    gpt2_q = {"attn_qkv": Q.Q8_0, "attn_output": Q.Q4_0, "ffn_up": Q.Q4_1, "ffn_down": Q.Q8_0}
    for name, types in [("gpt2-f32", lambda n, t: Q.F32),
                        ("gpt2-q8", lambda n, t: Q.Q8_0 if n in ("token_embd.weight", "output.weight") else
                         gpt2_q.get(n.split(".")[2], Q.F32) if t.ndim == 2 and n.startswith("blk.") else Q.F32)]:
        path = OUT / f"{name}.gguf"
        write_gpt2(path, config, state, types, gpt2_tokenizer(directory))
        lines.append(reference_line(name, gpt2_from_gguf(path, config), ids, config.eos_token_id))
    write_dense_families(lines)
    write_issue32_families(lines)
    write_falcon_smollm3(lines)
    write_llama4(lines)
    write_moe_families(lines)
    write_gpt_oss(lines)
    write_deepseek(lines)
    write_deepseek(lines, older=True)
    write_deepseek(lines, v2=True)
    write_deepseek(lines, v2=True, groups=True)
    write_bert(lines)
    # not reference.txt: a directory holding one is a model fixture to the test programs
    (OUT / "gguf_reference.txt").write_text("\n".join(lines) + "\n")
    write_fuzz_seed()
    for p in sorted(OUT.iterdir()):
        print(p.name, p.stat().st_size)


BERT_BLOCK = {"attention.self.query": "attn_q", "attention.self.key": "attn_k", "attention.self.value": "attn_v",
              "attention.output.dense": "attn_output", "attention.output.LayerNorm": "attn_output_norm",
              "intermediate.dense": "ffn_up", "output.dense": "ffn_down", "output.LayerNorm": "layer_output_norm"}


def write_bert(lines):
    """bert-f32.gguf: the bert-save directory (a sentence-transformers BERT: CLS pooling, Normalize)
    as llama.cpp's converter writes it: architecture "bert" without the pooler, pooling_type 2
    (cls), causal attention off, the WordPiece vocabulary as tokenizer.ggml.model "bert" (each
    word's first piece behind the phantom space, a continuing piece without its "##", control
    tokens as they are), the special ids and add_* flags its SpecialVocab takes from
    tokenizer.json. No reference line: test_gguf compares it with the directory and with
    bert-save's last_hidden_state.bin and embed.bin."""
    directory = FIXTURES / "bert-save"
    config = json.loads((directory / "config.json").read_text())
    spec = json.loads((directory / "tokenizer.json").read_text())
    state = load_file(str(directory / "model.safetensors"))
    special = {t["id"] for t in spec["added_tokens"] if t["special"]}
    vocab = sorted(spec["model"]["vocab"].items(), key=lambda kv: kv[1])
    assert [i for _, i in vocab] == list(range(len(vocab)))
    ids = {t: i for t, i in vocab}

    def phantom(text, i):
        return text if i in special else text[2:] if text.startswith("##") else "\u2581" + text
    w = GGUFWriter(str(OUT / "bert-f32.gguf"), "bert")
    w.add_block_count(config["num_hidden_layers"])
    w.add_context_length(config["max_position_embeddings"])
    w.add_embedding_length(config["hidden_size"])
    w.add_feed_forward_length(config["intermediate_size"])
    w.add_head_count(config["num_attention_heads"])
    w.add_layer_norm_eps(config["layer_norm_eps"])
    w.add_causal_attention(False)
    w.add_pooling_type(gguf.PoolingType.CLS)
    w.add_token_type_count(config["type_vocab_size"])
    w.add_tokenizer_model("bert")
    w.add_tokenizer_pre("jina-v2-en")  # what the converter names this vocabulary's hash; the reader does not read it
    w.add_token_list([phantom(t, i) for t, i in vocab])
    w.add_token_types([TokenType.CONTROL if i in special else TokenType.NORMAL for _, i in vocab])
    w.add_bos_token_id(ids["[CLS]"])
    w.add_eos_token_id(ids["[SEP]"])
    w.add_unk_token_id(ids["[UNK]"])
    w.add_sep_token_id(ids["[SEP]"])
    w.add_pad_token_id(ids["[PAD]"])
    w.add_mask_token_id(ids["[MASK]"])
    w.add_add_bos_token(True)
    w.add_add_eos_token(True)
    w.add_add_sep_token(False)
    w.add_bool("tokenizer.ggml.normalizer.lowercase", True)  # the gguf package on PyPI predates add_normalizer_lowercase
    fixed = {"embeddings.word_embeddings.weight": "token_embd.weight",
             "embeddings.token_type_embeddings.weight": "token_types.weight",
             "embeddings.position_embeddings.weight": "position_embd.weight",
             "embeddings.LayerNorm.weight": "token_embd_norm.weight", "embeddings.LayerNorm.bias": "token_embd_norm.bias"}
    for name, t in state.items():
        name = name.removeprefix("bert.")
        if name.startswith("pooler.") or name == "embeddings.position_ids":
            continue
        if name in fixed:
            gname = fixed[name]
        else:
            _, _, layer, rest = name.split(".", 3)
            module, kind = rest.rsplit(".", 1)
            gname = f"blk.{layer}.{BERT_BLOCK[module]}.{kind}"
        add(w, gname, t, Q.F32)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def update_one(write):
    """Only write's files, its lines replacing those of the same names in gguf_reference.txt (or
    added), the other fixtures untouched."""
    lines = []
    write(lines)
    path = OUT / "gguf_reference.txt"
    old = path.read_text().splitlines()
    names = {line.split("\t", 1)[0]: line for line in lines}
    kept = [names.pop(line.split("\t", 1)[0], line) for line in old]
    path.write_text("\n".join(kept + list(names.values())) + "\n")


if __name__ == "__main__":
    import sys
    if sys.argv[1:] == ["gpt-oss"]:  # this one alone
        update_one(write_gpt_oss)
    elif sys.argv[1:] == ["deepseek2"]:
        update_one(lambda lines: (write_deepseek(lines), write_deepseek(lines, older=True), write_deepseek(lines, v2=True),
                                  write_deepseek(lines, v2=True, groups=True)))
    elif sys.argv[1:] == ["bert"]:
        update_one(write_bert)
    elif sys.argv[1:] == ["deepseek2-v2"]:
        update_one(lambda lines: write_deepseek(lines, v2=True))
    elif sys.argv[1:] == ["deepseek2-v2-groups"]:
        update_one(lambda lines: write_deepseek(lines, v2=True, groups=True))
    else:
        main()
