#!/usr/bin/env python3
"""Writes test/fixtures/llama-bpe/, the LLaMA directory that test_gguf.c saves as GGUF
(pf_quantize_gguf of a directory) beside gpt2-tiny: llama3-rope's shape and its LLaMA-3 byte-level
BPE tokenizer (tokenizer.ggml.pre "llama-bpe" backwards), with the default rope (a llama3 rope
scaling becomes llama.cpp's rope_freqs tensor, which the writer does not make yet) and weights of
its own (seed 1200), untied head, GQA 6/2, eos one id.

Also tiny mixtures of experts whose configs are what llama.cpp's architectures fix, which the
family fixtures (made to exercise the other settings: dense layers, routing not renormalised) are
not; each with its family fixture's tokenizer, 64 wide so that Q8_0 and Q4_0 files convert their
matrices:

  qwen3_moe-save   Qwen3-MoE: experts in every layer, the chosen weights renormalised (qwen3moe)
  qwen2_moe-save   Qwen2-MoE: experts in every layer, not renormalised, a shared expert behind its
                   gate, q/k/v biases (qwen2moe)
  olmoe-save       OLMoE: not renormalised, no grouped-query attention (olmoe: its k norm is n_embd wide)

No reference logits: the test compares the saved file's logits with the directory's (whose forward
the family fixtures check against transformers).

And a sentence-transformers BERT, which llama.cpp's "bert" architecture and "bert" (WordPiece)
vocabulary hold:

  bert-save        BertModel 64 wide with tokenizer-bert's tokenizer (its 420 pieces), CLS pooling
                   and Normalize modules; last_hidden_state.bin: transformers' last_hidden_state for the ids
                   in hidden_ids.txt, embed.bin: the pooled, normalised vectors sentence-transformers
                   computes from it (the first token's, over its L2 norm)

    python3 test/make_gguf_save_fixtures.py
"""
import json
import shutil
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, BertConfig, BertModel, LlamaConfig, LlamaForCausalLM, OlmoeConfig, Qwen2MoeConfig, Qwen3MoeConfig

FIXTURES = Path(__file__).resolve().parent / "fixtures"
MOE_COMMON = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                  max_position_embeddings=128, rms_norm_eps=1e-6, initializer_range=0.3, tie_word_embeddings=False)


def moe_configs():
    return {
        "qwen3_moe": Qwen3MoeConfig(vocab_size=384, intermediate_size=96, moe_intermediate_size=64, num_experts=6,
                                    num_experts_per_tok=2, norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[],
                                    head_dim=16, rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
                                    **MOE_COMMON),
        "qwen2_moe": Qwen2MoeConfig(vocab_size=384, intermediate_size=96, moe_intermediate_size=64,
                                    shared_expert_intermediate_size=96, num_experts=6, num_experts_per_tok=2,
                                    norm_topk_prob=False, decoder_sparse_step=1, mlp_only_layers=[], qkv_bias=True,
                                    rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}, **MOE_COMMON),
        # as many key/value heads as heads: llama.cpp's OLMoE takes the k norm n_embd wide
        "olmoe": OlmoeConfig(vocab_size=384, intermediate_size=64, num_experts=6, num_experts_per_tok=2, norm_topk_prob=False,
                             clip_qkv=None, rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
                             **dict(MOE_COMMON, num_key_value_heads=4)),
    }


def write_moe():
    for i, (family, config) in enumerate(moe_configs().items()):
        spec = json.loads((FIXTURES / family / "config.json").read_text())  # its tokenizer's special ids
        config.bos_token_id, config.eos_token_id, config.pad_token_id = (spec.get(k) for k in
                                                                         ("bos_token_id", "eos_token_id", "pad_token_id"))
        torch.manual_seed(7000 + i)
        model = AutoModelForCausalLM.from_config(config).eval()
        out = FIXTURES / f"{family}-save"
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()
        model.save_pretrained(out, safe_serialization=True)
        for name in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copy(FIXTURES / family / name, out / name)


def write_bert():
    source, out = FIXTURES / "tokenizer-bert", FIXTURES / "bert-save"
    vocab = json.loads((source / "tokenizer.json").read_text())["model"]["vocab"]
    config = BertConfig(vocab_size=len(vocab), hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                        num_attention_heads=4, max_position_embeddings=64, type_vocab_size=2, pad_token_id=0,
                        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, initializer_range=0.3)
    torch.manual_seed(1300)
    model = BertModel(config, add_pooling_layer=True).eval()
    with torch.no_grad():  # norms and biases away from 1 and 0, so that a misplaced one shows
        for n, p in model.named_parameters():
            if p.ndim == 1:
                p.copy_((1 if n.endswith("LayerNorm.weight") else 0) + 0.3 * torch.randn_like(p))
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    model.save_pretrained(out, safe_serialization=True)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(source / name, out / name)
    (out / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}], indent=2))
    (out / "1_Pooling").mkdir()
    (out / "1_Pooling" / "config.json").write_text(json.dumps({"word_embedding_dimension": 64, "pooling_mode_cls_token": True,
                                                               "pooling_mode_mean_tokens": False}, indent=2))
    (out / "2_Normalize").mkdir()
    ids = [[2, 17, 45, 301, 88, 9, 140, 3], [2, 250, 33, 71, 5, 3, 0, 0]]
    mask = [[1] * 8, [1] * 6 + [0] * 2]
    with torch.no_grad():
        hidden = model(torch.tensor(ids), attention_mask=torch.tensor(mask)).last_hidden_state
    cls = hidden[:, 0]
    embed = cls / cls.norm(dim=1, keepdim=True)
    (out / "hidden_ids.txt").write_text("\n".join(",".join(map(str, row[:sum(m)])) for row, m in zip(ids, mask)) + "\n")
    hidden.numpy().astype("<f4").tofile(out / "last_hidden_state.bin")  # not hidden.bin: the test programs take a directory with one for an encoder fixture of theirs
    embed.numpy().astype("<f4").tofile(out / "embed.bin")


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
    write_moe()
    write_bert()


if __name__ == "__main__":
    import sys
    if sys.argv[1:] == ["bert"]:  # this one alone
        write_bert()
    else:
        main()
