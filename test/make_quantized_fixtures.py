#!/usr/bin/env python3
"""Quantized safetensors checkpoints (issue 38): tiny LLaMA and Qwen3-MoE models whose linear layers
are stored as FP8, GPTQ or AWQ store them, with the reference logits of transformers running the
dequantized weights in fp32.

    pip install torch transformers safetensors accelerate
    python3 test/make_quantized_fixtures.py [dir ...]

Writes under test/fixtures/ (reference.txt and reference_logits.bin as the other fixtures):

  llama-fp8          e4m3 weights with 128 x 128 block scales (weight_scale_inv), quantized by
                     transformers' own FineGrainedFP8 quantizer op (Fp8Quantize: transformers
                     quantizes FP8 only on a GPU through from_pretrained, so its op is called on the
                     state dict); the reference is transformers loading the checkpoint itself (on CPU
                     it dequantizes, dequantize=True), after checking its dequantized weights equal
                     the e4m3 values times their block's scale computed here
  llama-fp8-tensor   the same with one scale per tensor (weight_block_size null)
  llama-fp8-ue8m0    scales as E8M0 exponents (scale_fmt "ue8m0", DeepSeek V4's), 32 x 32 blocks
  qwen3_moe-fp8      a Qwen3-MoE (7 experts, top 2) with every expert's matrices FP8 in 16 x 16 blocks
  llama-gptq         GPTQ's v1 "gptq" format, 4 bits, groups of 32, desc_act (act order: g_idx a
                     permuted grouping), asymmetric zeros (zero 0 included: v1 stores it as 15)
  llama-gptq8        GPTQ's "gptq_v2" format, 8 bits, one group (group_size -1), no g_idx
  llama-gptq8-g64    GPTQ's v1 "gptq" format, 8 bits, groups of 64, asymmetric zeros (0 and 255 included), 256
                     wide: kept in Q8_G blocks on 1 to 4 ranks
  llama-gptq8-act    GPTQ v1, 8 bits, groups of 64, desc_act (a permuted g_idx), 256 wide: kept in Q8_G blocks,
                     each rank's inputs reordered group by group
  llama-awq          AWQ's GEMM format, 4 bits, groups of 32
  llama-gptq-static  GPTQ v1, 4 bits, groups of 64, desc_act with static groups (static_groups: g_idx is
                     input // 64, what act order writes when the groups are fixed before it permutes)
  qwen3_moe-gptq     the Qwen3-MoE with every expert's matrices in GPTQ v1, 4 bits, groups of 16, act order
  qwen3_moe-gptq32   the same in groups of 32 without act order (no g_idx), its experts only (the attention's
                     heads of 16 would put 3 ranks' o_proj columns inside 32-input blocks): the experts'
                     gate and up (64 inputs) are kept in Q4_G blocks, their down (48 inputs) decoded
  llama-ct-int4      compressed-tensors "pack-quantized": 4 bits, asymmetric (packed zero points), groups of
                     32, BF16 scales
  llama-ct-int8      compressed-tensors "pack-quantized": 8 bits, symmetric, a scale per output (channel), F16
                     scales
  llama-ct-naive     compressed-tensors "naive-quantized": int8 weights as I8, asymmetric, one scale and zero
                     for the tensor
  llama-ct-fp8       compressed-tensors "float-quantized": e4m3 weights, a BF16 scale per output (channel)
  llama-ct-int8-g64  compressed-tensors "pack-quantized": 8 bits, asymmetric (zero points packed along the
                     outputs), groups of 64, BF16 scales, 256 wide (1 to 4 ranks keep whole Q8_G blocks)
  llama-ct-int4-ch   compressed-tensors "pack-quantized": 4 bits, symmetric, a scale per output (channel), BF16
                     scales, 256 wide (Q4_G blocks on 1 to 4 ranks)
  gpt_oss-mxfp4      a gpt-oss (5 experts, top 3) whose experts are MXFP4 as the released checkpoints hold them
                     (quant_method "mxfp4": *_blocks and E8M0 *_scales), quantized here as the gguf package's
                     MXFP4 quantizer rounds; the reference is transformers dequantizing them on CPU

compressed-tensors: the `compressed-tensors` package (pip install compressed-tensors loguru) quantizes
and packs them itself: its QuantizationConfig applied to the model, each weight's scales and zero
points from its own min-max (compute_dynamic_scales_and_zp), compressed by its ModelCompressor in
the format named, and the config written by its update_config. The reference is transformers
loading the checkpoint in fp32 (it decompresses it with the package on the first forward, the
scales cast to fp32) after checking its weights equal the package's own decompression into an fp32
model. transformers 5.23 cannot load packed zero points (it expects them unpacked: a size
mismatch), and leaves naive- and float-quantized weights as stored (int8 / e4m3 in a Linear) on
CPU, so llama-ct-int4's, -naive's and -fp8's reference is the package's decompression (fp32)
loaded by transformers as a plain checkpoint. The models are made in the scales' dtype (BF16, F16),
so their other tensors are stored so too.

GPTQ and AWQ: optimum / gptqmodel / autoawq need CUDA builds (no CPU wheels), so the tensors are
packed here from the formats' published layouts (round to nearest, not the GPTQ or AWQ
algorithms: the layout is what a reader must get right), unpacked again by a separate
dequantization written from the same spec (checked to give back the integers packed), and the
reference is transformers loading those dequantized weights as a checkpoint.

llama-fp8-tensor, llama-gptq8 and llama-ct-int4 also hold dequantized/: the reference model's weights saved
unquantized by transformers, which the C test stores in every dtype beside the packed checkpoint.

The models are 256 wide (4 heads of 64, 2 key/value heads), MLP 384, 2 layers, vocabulary 512 with
tied embeddings (the tensor form and 8-bit GPTQ: 64 wide, MLP 96), so that 2 and 3 ranks cut
128 x 128 blocks and groups. The seed of each is the first whose greedy steps all have a margin
above MIN_GREEDY_MARGIN. The prompt and tokenizer are the llama fixture's.
"""

import json
import shutil
import sys
import tempfile
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from transformers import AutoModelForCausalLM, GptOssConfig, LlamaConfig, Mxfp4Config, Qwen3MoeConfig
from transformers.integrations.finegrained_fp8 import Fp8Quantize
from transformers.quantizers.quantizer_finegrained_fp8 import FineGrainedFP8HfQuantizer
from transformers.utils.quantization_config import FineGrainedFP8Config

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_fixtures import FIXTURES, MAX_NEW_TOKENS, MIN_GREEDY_MARGIN, ids_str, reset_dir  # noqa: E402

LINEARS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
LLAMA = Path(FIXTURES) / "llama"
SEED_TRIES = 200


def prompt():
    lines = dict(line.split("=", 1) for line in (LLAMA / "reference.txt").read_text().splitlines())
    return lines["prompt_text"], [int(i) for i in lines["prompt_ids"].split(",")]


def llama_config(hidden, intermediate, heads):
    return LlamaConfig(vocab_size=512, hidden_size=hidden, intermediate_size=intermediate, num_hidden_layers=2,
                       num_attention_heads=heads, num_key_value_heads=2, head_dim=hidden // heads,
                       max_position_embeddings=64, tie_word_embeddings=True, initializer_range=2 / hidden ** 0.5, bos_token_id=1,
                       eos_token_id=2, rms_norm_eps=1e-5)


def qwen3_moe_config():
    """7 experts of 48 (16 x 16 blocks: a column split cuts them), every layer sparse."""
    return Qwen3MoeConfig(vocab_size=512, hidden_size=64, intermediate_size=64, moe_intermediate_size=48,
                          num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16, num_experts=7,
                          num_experts_per_tok=2, decoder_sparse_step=1, mlp_only_layers=[], norm_topk_prob=False,
                          max_position_embeddings=64, tie_word_embeddings=True, initializer_range=0.25, bos_token_id=1,
                          eos_token_id=2, rms_norm_eps=1e-6)


def random_model(config, seed):
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config).float().eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.uniform_(0.5, 1.5)
    return model


def is_linear(name):
    return name.endswith(".weight") and name.split(".")[-2] in LINEARS


# ---- FP8 ----

def fp8_quantize(state, block, scale_fmt):
    """transformers' own quantizer op on every linear weight: {name: e4m3, name_scale_inv: scales}."""
    quantizer = FineGrainedFP8HfQuantizer(FineGrainedFP8Config(weight_block_size=block, modules_to_not_convert=["lm_head"],
                                                               scale_fmt=scale_fmt))
    op = Fp8Quantize(quantizer)
    out = {}
    for name, value in state.items():
        out.update(op.convert({name: value}) if is_linear(name) else {name: value})
    return out


def fp8_dequantize(weight, scale):
    """The format: e4m3 value times its block's scale (blocks from the scale grid, ceil-sized)."""
    rows, cols = weight.shape
    s = scale.float().reshape(-1, scale.shape[-1]) if scale.dim() else scale.float().reshape(1, 1)  # e8m0: 2^(b-127)
    block_rows, block_cols = -(-rows // s.shape[0]), -(-cols // s.shape[1])
    grid = s.repeat_interleave(block_rows, 0)[:rows].repeat_interleave(block_cols, 1)[:, :cols]
    return weight.float() * grid


# ---- MXFP4 ----

E2M1 = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0])


def mxfp4_quantize(w):
    """w [..., out, in] as MXFP4 (gpt-oss's checkpoints, transformers' Mxfp4 integration): blocks
    [..., out, in / 32, 16] U8, input 2k in byte k's low nibble and 2k + 1 in its high one, and
    scales [..., out, in / 32] U8, E8M0 (2^(byte - 127)). The OCP MX scale (the largest magnitude's
    power of two over e2m1's largest, 4) and each value the nearest level (the first on a tie), as
    the gguf package's MXFP4 quantizer rounds."""
    blocks = w.float().reshape(*w.shape[:-1], w.shape[-1] // 32, 32)
    largest = blocks.abs().amax(-1)
    exponent = torch.where(largest > 0, torch.floor(torch.log2(largest)) - 2, torch.full_like(largest, -127))
    scaled = blocks / torch.exp2(exponent)[..., None]
    nibbles = (scaled[..., None] - E2M1).abs().argmin(-1).to(torch.uint8)
    packed = nibbles[..., 0::2] | (nibbles[..., 1::2] << 4)
    return packed.contiguous(), (exponent + 127).to(torch.uint8).contiguous()


def mxfp4_dequantize(blocks, scales):
    """The format, written from its spec: each nibble's e2m1 value x 2^(scale - 127), [..., out, in]."""
    nibbles = torch.stack([blocks & 15, blocks >> 4], -1).reshape(*blocks.shape[:-1], 32).long()
    values = E2M1[nibbles] * torch.exp2(scales.float() - 127)[..., None]
    return values.reshape(*blocks.shape[:-2], -1)


def gpt_oss_config():
    """5 experts (3 a token) 64 wide on 64 inputs: 2 MXFP4 blocks an expert row, so that 2 ranks
    splitting the experts by columns keep whole blocks; the family fixture's attention (sinks,
    sliding layers, YaRN) over 2 layers, 4 heads of 16."""
    return GptOssConfig(vocab_size=512, hidden_size=64, intermediate_size=64, num_local_experts=5, num_experts_per_tok=3,
                        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16, sliding_window=5,
                        max_position_embeddings=128, rms_norm_eps=1e-5, initializer_range=0.25, swiglu_limit=3.0,
                        rope_parameters={"rope_type": "yarn", "rope_theta": 150000.0, "factor": 4.0, "beta_fast": 32.0,
                                         "beta_slow": 1.0, "truncate": False, "original_max_position_embeddings": 32},
                        tie_word_embeddings=True, bos_token_id=1, eos_token_id=2, pad_token_id=0)


def mxfp4_fixture(name, config, base_seed):
    """gpt-oss's experts (gate_up_proj [experts, in, 2 I], down_proj [experts, I, in]) stored as
    MXFP4 [experts, out, in / 32, 16] as the released checkpoints are, the rest unquantized; the
    reference is transformers loading it (on CPU it dequantizes the experts: Mxfp4Config(dequantize=
    True)) in fp32, after checking its expert weights equal the format's values computed here."""
    def build(model, directory):
        with torch.no_grad():  # routers x2: routing far from ties; q, k x0.6: softer attention (the family fixture's)
            for layer in model.model.layers:
                layer.mlp.router.weight.mul_(2.0)
                layer.self_attn.q_proj.weight.mul_(0.6)
                layer.self_attn.k_proj.weight.mul_(0.6)
        state = {}
        for key, value in checkpoint_state(model).items():
            if key.endswith("experts.gate_up_proj") or key.endswith("experts.down_proj"):
                state[key + "_blocks"], state[key + "_scales"] = mxfp4_quantize(value.transpose(1, 2))
            else:
                state[key] = value
        qc = {"quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
                                                                  "model.embed_tokens", "lm_head"]}
        save_checkpoint(directory, config, state, qc)
        loaded = AutoModelForCausalLM.from_pretrained(directory, dtype=torch.float32,
                                                      quantization_config=Mxfp4Config(dequantize=True)).float().eval()
        loaded_state = loaded.state_dict()
        for key in state:
            if key.endswith("_blocks"):
                weight = key[: -len("_blocks")]
                want = mxfp4_dequantize(state[key], state[weight + "_scales"]).transpose(1, 2)
                assert torch.equal(loaded_state[weight], want), weight
        return loaded
    directory, reference, ids, text = first_seed(config, base_seed, build)
    write_fixture(name, config, directory, reference, ids, text, False)
    shutil.rmtree(directory)


# ---- GPTQ and AWQ ----

AWQ_ORDER = [0, 2, 4, 6, 1, 3, 5, 7]  # the output each of a word's 8 nibbles holds


def rtn(w, group_of, groups, bits, sym):
    """Round-to-nearest integers of w [out][in] per (group, output): q, zeros, scales [groups][out]."""
    maxq = 2 ** bits - 1
    out = w.shape[0]
    scales = torch.zeros(groups, out)
    zeros = torch.zeros(groups, out, dtype=torch.int64)
    for g in range(groups):
        cols = w[:, group_of == g]
        lo, hi = cols.min(1).values.clamp(max=0), cols.max(1).values.clamp(min=0)
        if sym:
            scale = torch.maximum(-lo, hi) * 2 / maxq
            zero = torch.full((out,), (maxq + 1) // 2)
        else:
            scale = (hi - lo) / maxq
            zero = torch.round(-lo / scale).to(torch.int64)
        scales[g] = scale.half().float()
        zeros[g] = zero
    if not sym:
        zeros[0, 0] = 0  # v1's wrapped zero, and the top one, exercised
        zeros[0, 1] = maxq
    q = torch.clamp(torch.round(w / scales[group_of].T) + zeros[group_of].T, 0, maxq).to(torch.int64)
    return q, zeros, scales


def pack(values, bits, dim, order=None):
    """int values packed into int32 words along dim (32 / bits a word, low bits first)."""
    per = 32 // bits
    v = values.movedim(dim, -1)
    v = v.reshape(*v.shape[:-1], -1, per)
    if order is not None:
        v = v[..., order]
    words = torch.zeros(v.shape[:-1], dtype=torch.int64)
    for k in range(per):
        words |= (v[..., k] & (2 ** bits - 1)) << (bits * k)
    words = torch.where(words >= 2 ** 31, words - 2 ** 32, words).to(torch.int32)
    return words.movedim(-1, dim)


def unpack(words, bits, dim):
    per = 32 // bits
    w = words.movedim(dim, -1).to(torch.int64) & 0xFFFFFFFF
    fields = torch.stack([(w >> (bits * k)) & (2 ** bits - 1) for k in range(per)], -1)
    return fields.reshape(*w.shape[:-1], -1).movedim(-1, dim)


def gptq_tensors(w, bits, group_size, act_order, v1, generator):
    out_features, in_features = w.shape
    group = group_size if group_size > 0 else in_features
    groups = -(-in_features // group)
    if act_order == "static":  # act order with static groups: the groups fixed before the permutation
        g_idx = torch.arange(in_features) // group
    elif act_order:  # g_idx as act order leaves it: input perm[j] in group j // group
        perm = torch.randperm(in_features, generator=generator)
        g_idx = torch.empty(in_features, dtype=torch.int64)
        g_idx[perm] = torch.arange(in_features) // group
    else:
        g_idx = torch.arange(in_features) // group
    q, zeros, scales = rtn(w, g_idx, groups, bits, sym=False)
    stored_zeros = (zeros - 1) if v1 else zeros
    tensors = {"qweight": pack(q.T, bits, 0), "qzeros": pack(stored_zeros, bits, 1), "scales": scales.half()}
    if act_order:
        tensors["g_idx"] = g_idx.to(torch.int32)
    return tensors


def gptq_dequantize(t, bits, group_size, in_features, v1):
    """GPTQ's format: W[o][i] = scales[g][o] * (q[i][o] - zero[g][o]), g = g_idx[i] or i // group."""
    q = unpack(t["qweight"], bits, 0)  # [in][out]
    zeros = (unpack(t["qzeros"], bits, 1) + (1 if v1 else 0)) & (2 ** bits - 1)
    group = group_size if group_size > 0 else in_features
    g_idx = t["g_idx"].to(torch.int64) if "g_idx" in t else torch.arange(in_features) // group
    return (t["scales"].float()[g_idx] * (q - zeros[g_idx]).float()).T.contiguous()


def awq_tensors(w, group_size):
    in_features = w.shape[1]
    g = torch.arange(in_features) // group_size
    q, zeros, scales = rtn(w, g, in_features // group_size, 4, sym=False)
    return {"qweight": pack(q.T, 4, 1, AWQ_ORDER), "qzeros": pack(zeros, 4, 1, AWQ_ORDER), "scales": scales.half()}


def awq_dequantize(t, group_size):
    """AWQ GEMM: nibble k of a word holds output AWQ_ORDER[k] of its 8; W = scales * (q - zeros)."""
    def unorder(words):
        fields = unpack(words, 4, 1)
        fields = fields.reshape(fields.shape[0], -1, 8)
        out = torch.empty_like(fields)
        out[..., AWQ_ORDER] = fields
        return out.reshape(fields.shape[0], -1)
    q, zeros = unorder(t["qweight"]), unorder(t["qzeros"])  # [in][out], [groups][out]
    g = torch.arange(q.shape[0]) // group_size
    return (t["scales"].float()[g] * (q - zeros[g]).float()).T.contiguous()


# ---- fixtures ----

def greedy(model, ids):
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0]
        out = model.generate(torch.tensor([ids]), max_new_tokens=MAX_NEW_TOKENS, do_sample=False,
                             output_scores=True, return_dict_in_generate=True, pad_token_id=0)
    new = out.sequences[0, len(ids):].tolist()
    margins = [float(s[0].topk(2).values[0] - s[0].topk(2).values[1]) for s in out.scores]
    return logits, new, min(margins)


def write_fixture(name, config, directory, model_for_reference, ids, text, with_dequantized):
    logits, new, margin = greedy(model_for_reference, ids)
    out = reset_dir(Path(FIXTURES) / name)
    for f in directory.iterdir():
        shutil.copy(f, out / f.name)
    if with_dequantized:  # the reference's own weights in fp32 (save_pretrained would quantize them again)
        (out / "dequantized").mkdir()
        save_checkpoint(out / "dequantized", config, model_for_reference.state_dict(), None)
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(LLAMA / f, out / f)
    (out / "reference.txt").write_text(f"prompt_text={text}\nprompt_ids={ids_str(ids)}\n"
                                       f"max_new_tokens={MAX_NEW_TOKENS}\ngreedy_ids={ids_str(new)}\nvocab_size=512\n")
    logits.float().numpy().astype("<f4").tofile(out / "reference_logits.bin")
    print(f"{name}: greedy margin {margin:.3g}, {sum(f.stat().st_size for f in out.iterdir())} bytes")


def save_checkpoint(directory, config, tensors, quantization_config):
    config_dict = config.to_dict()
    if quantization_config is not None:
        config_dict["quantization_config"] = quantization_config
    config_dict["architectures"] = [type(AutoModelForCausalLM.from_config(config)).__name__]
    (directory / "config.json").write_text(json.dumps(config_dict, indent=2, sort_keys=True))
    save_file({k: v.contiguous() for k, v in tensors.items() if k != "lm_head.weight"}, directory / "model.safetensors")


def first_seed(config, base, build):
    """The first seed whose reference run's greedy steps all have a clear margin: (dir, model)."""
    text, ids = prompt()
    for seed in range(base, base + SEED_TRIES):
        model = random_model(config, seed)
        directory = Path(tempfile.mkdtemp())
        reference = build(model, directory)
        if greedy(reference, ids)[2] > MIN_GREEDY_MARGIN:
            return directory, reference, ids, text
        shutil.rmtree(directory)
    raise SystemExit("no seed with a clear greedy margin")


def checkpoint_state(model):
    """The tensors as save_pretrained writes them (a mixture's experts one by one, as checkpoints hold them)."""
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp)
        return load_file(Path(tmp) / "model.safetensors")


def loaded_weight(state, key):
    """A checkpoint weight in the model transformers loaded (a mixture's experts fused: gate_up_proj [e][gate; up])."""
    if ".experts." not in key:
        return state[key]
    stem, expert, proj = key.rsplit(".", 3)[0], int(key.split(".")[-3]), key.split(".")[-2]
    if proj == "down_proj":
        return state[f"{stem}.down_proj"][expert]
    fused = state[f"{stem}.gate_up_proj"][expert]
    half = fused.shape[0] // 2
    return fused[:half] if proj == "gate_proj" else fused[half:]


def fp8_fixture(name, config, block, base_seed, scale_fmt="float", with_dequantized=False):
    def build(model, directory):
        state = fp8_quantize(checkpoint_state(model), block, scale_fmt)
        qc = {"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": block,
              "modules_to_not_convert": ["lm_head"]}
        if scale_fmt != "float":
            qc["scale_fmt"] = scale_fmt
        save_checkpoint(directory, config, state, qc)
        loaded = AutoModelForCausalLM.from_pretrained(directory, dtype=torch.float32).eval()
        assert type(loaded.model.layers[0].self_attn.q_proj) is torch.nn.Linear, "transformers did not dequantize"
        loaded_state = loaded.state_dict()
        for key, value in state.items():
            if key.endswith("_scale_inv"):
                weight = key[: -len("_scale_inv")]
                assert state[weight].dtype == torch.float8_e4m3fn
                assert torch.equal(loaded_weight(loaded_state, weight), fp8_dequantize(state[weight], value)), weight
        return loaded
    directory, reference, ids, text = first_seed(config, base_seed, build)
    write_fixture(name, config, directory, reference, ids, text, with_dequantized)
    shutil.rmtree(directory)


def int_fixture(name, config, kind, bits, group_size, base_seed, act_order=False, v1=True, with_dequantized=False,
                experts_only=False):
    def build(model, directory):
        generator = torch.Generator().manual_seed(base_seed)
        state, dequantized = {}, {}
        for key, value in checkpoint_state(model).items():
            if not is_linear(key) or (experts_only and ".experts." not in key):
                state[key] = dequantized[key] = value
                continue
            stem = key[: -len(".weight")]
            if kind == "gptq":
                t = gptq_tensors(value, bits, group_size, act_order, v1, generator)
                w = gptq_dequantize(t, bits, group_size, value.shape[1], v1)
            else:
                t = awq_tensors(value, group_size)
                w = awq_dequantize(t, group_size)
            assert (w - value).abs().max() <= 2 ** bits * t["scales"].float().max(), key  # within the grid
            state.update({f"{stem}.{part}": tensor for part, tensor in t.items()})
            dequantized[key] = w
        if kind == "gptq":
            qc = {"quant_method": "gptq", "bits": bits, "group_size": group_size, "desc_act": bool(act_order), "sym": False,
                  "checkpoint_format": "gptq" if v1 else "gptq_v2", "true_sequential": True, "damp_percent": 0.01}
            if act_order == "static":
                qc["static_groups"] = True
        else:
            qc = {"quant_method": "awq", "bits": bits, "group_size": group_size, "zero_point": True, "version": "gemm",
                  "modules_to_not_convert": None}
        save_checkpoint(directory, config, state, qc)
        with tempfile.TemporaryDirectory() as plain:  # transformers loads the dequantized weights as a checkpoint
            save_checkpoint(Path(plain), config, dequantized, None)
            return AutoModelForCausalLM.from_pretrained(plain, dtype=torch.float32).eval()
    directory, reference, ids, text = first_seed(config, base_seed, build)
    write_fixture(name, config, directory, reference, ids, text, with_dequantized)
    shutil.rmtree(directory)


def ct_fixture(name, config, fmt, weights, base_seed, dtype=torch.float32, transformers_loads=True,
               with_dequantized=False):
    """compressed-tensors: `weights` the QuantizationArgs of every Linear but lm_head, compressed as fmt
    from the model in dtype (the scales' dtype, as the package makes them)."""
    from compressed_tensors.compressors import ModelCompressor
    from compressed_tensors.quantization import (QuantizationArgs, QuantizationConfig, QuantizationScheme,
                                                 apply_quantization_config)
    from compressed_tensors.quantization.utils import calculate_qparams, compute_dynamic_scales_and_zp

    def build(model, directory):
        model.to(dtype)
        names = set(model.state_dict())
        qc = QuantizationConfig(config_groups={"group_0": QuantizationScheme(targets=["Linear"],
                                                                             weights=QuantizationArgs(**weights))},
                                ignore=["lm_head"])
        apply_quantization_config(model, qc, show_progress=False)
        for _, module in model.named_modules():
            scheme = getattr(module, "quantization_scheme", None)
            if scheme is None:
                continue
            if scheme.weights.strategy == "channel":  # (the package's dynamic helper has no channel strategy)
                w = module.weight
                scale, zero = calculate_qparams(w.amin(1, keepdim=True), w.amax(1, keepdim=True), scheme.weights)
            else:
                scale, zero = compute_dynamic_scales_and_zp(value=module.weight, args=scheme.weights, module=module)
            module.weight_scale.data.copy_(scale)
            if hasattr(module, "weight_zero_point"):
                module.weight_zero_point.data.copy_(zero)
        compressor = ModelCompressor.from_pretrained_model(model, fmt)
        compressor.compress_model(model)
        with tempfile.TemporaryDirectory() as tmp:
            model.save_pretrained(tmp)
            state = load_file(Path(tmp) / "model.safetensors")
        save_checkpoint(directory, config, state, None)
        compressor.update_config(directory)
        model.float()  # the package's own decompression of those tensors, into an fp32 model (as transformers')
        compressor.decompress_model(model)
        unpacked = {k: v.float() for k, v in model.state_dict().items() if k in names}
        if not transformers_loads:
            with tempfile.TemporaryDirectory() as plain:
                save_checkpoint(Path(plain), config, unpacked, None)
                return AutoModelForCausalLM.from_pretrained(plain, dtype=torch.float32).eval()
        loaded = AutoModelForCausalLM.from_pretrained(directory, dtype=torch.float32).eval()
        with torch.no_grad():
            loaded(torch.tensor([[1]]))  # transformers decompresses on the first forward
        state = loaded.state_dict()
        for key, value in unpacked.items():
            assert torch.equal(state[key], value), key
        return loaded
    directory, reference, ids, text = first_seed(config, base_seed, build)
    write_fixture(name, config, directory, reference, ids, text, with_dequantized)
    shutil.rmtree(directory)


def e4m3_table():
    """Every e4m3 code as torch decodes it (float32 LE, NaN codes included), for the C decoder's test."""
    codes = torch.arange(256, dtype=torch.int64).to(torch.uint8).view(torch.float8_e4m3fn)
    out = Path(FIXTURES) / "blocks" / "F8_E4M3.values"
    codes.float().numpy().astype("<f4").tofile(out)
    print(f"{out}: 256 codes")


FIXTURE_BUILDERS = {
    "llama-fp8": lambda: fp8_fixture("llama-fp8", llama_config(256, 384, 4), [128, 128], 100),
    "llama-fp8-tensor": lambda: fp8_fixture("llama-fp8-tensor", llama_config(64, 96, 4), None, 200,
                                            with_dequantized=True),
    "llama-fp8-ue8m0": lambda: fp8_fixture("llama-fp8-ue8m0", llama_config(64, 96, 4), [32, 32], 600, "ue8m0"),
    "qwen3_moe-fp8": lambda: fp8_fixture("qwen3_moe-fp8", qwen3_moe_config(), [16, 16], 700),
    "llama-gptq": lambda: int_fixture("llama-gptq", llama_config(256, 384, 4), "gptq", 4, 32, 300, act_order=True),
    "llama-gptq8": lambda: int_fixture("llama-gptq8", llama_config(64, 96, 4), "gptq", 8, -1, 400, v1=False,
                                       with_dequantized=True),
    "qwen3_moe-gptq": lambda: int_fixture("qwen3_moe-gptq", qwen3_moe_config(), "gptq", 4, 16, 800, act_order=True),
    "qwen3_moe-gptq32": lambda: int_fixture("qwen3_moe-gptq32", qwen3_moe_config(), "gptq", 4, 32, 1600,
                                            experts_only=True),
    "llama-gptq8-g64": lambda: int_fixture("llama-gptq8-g64", llama_config(256, 384, 4), "gptq", 8, 64, 1700),
    "llama-gptq8-act": lambda: int_fixture("llama-gptq8-act", llama_config(256, 384, 4), "gptq", 8, 64, 2000,
                                           act_order=True),
    "llama-awq": lambda: int_fixture("llama-awq", llama_config(256, 384, 4), "awq", 4, 32, 500),
    "llama-gptq-static": lambda: int_fixture("llama-gptq-static", llama_config(256, 384, 4), "gptq", 4, 64, 1400,
                                             act_order="static"),
    "llama-ct-int4": lambda: ct_fixture("llama-ct-int4", llama_config(64, 96, 4), "pack-quantized",
                                        {"num_bits": 4, "symmetric": False, "strategy": "group", "group_size": 32},
                                        900, torch.bfloat16, transformers_loads=False, with_dequantized=True),
    "llama-ct-int8": lambda: ct_fixture("llama-ct-int8", llama_config(64, 96, 4), "pack-quantized",
                                        {"num_bits": 8, "strategy": "channel"}, 1000, torch.float16),
    "llama-ct-naive": lambda: ct_fixture("llama-ct-naive", llama_config(64, 96, 4), "naive-quantized",
                                         {"num_bits": 8, "symmetric": False, "strategy": "tensor"}, 1100,
                                         transformers_loads=False),
    "llama-ct-fp8": lambda: ct_fixture("llama-ct-fp8", llama_config(64, 96, 4), "float-quantized",
                                       {"num_bits": 8, "type": "float", "strategy": "channel"}, 1200, torch.bfloat16,
                                       transformers_loads=False),
    "llama-ct-int8-g64": lambda: ct_fixture("llama-ct-int8-g64", llama_config(256, 384, 4), "pack-quantized",
                                            {"num_bits": 8, "symmetric": False, "strategy": "group", "group_size": 64},
                                            1800, torch.bfloat16, transformers_loads=False),
    "llama-ct-int4-ch": lambda: ct_fixture("llama-ct-int4-ch", llama_config(256, 384, 4), "pack-quantized",
                                           {"num_bits": 4, "symmetric": True, "strategy": "channel"}, 1900,
                                           torch.bfloat16),
    "gpt_oss-mxfp4": lambda: mxfp4_fixture("gpt_oss-mxfp4", gpt_oss_config(), 1300),
    "e4m3": e4m3_table,
}

if __name__ == "__main__":
    for key in sys.argv[1:] or FIXTURE_BUILDERS:
        FIXTURE_BUILDERS[key]()
