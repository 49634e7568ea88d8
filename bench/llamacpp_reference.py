#!/usr/bin/env python3
"""The second other engine for build/bench: llama.cpp (its llama-bench) on the same checkpoint.

    python3 bench/llamacpp_reference.py MODEL_DIR --llama-cpp DIR --prompt N --new N [--runs R]
                                        [--threads 1,2] [--dtype f32|f16|bf16|q8|q4]

MODEL_DIR may also be a .gguf file, benched as it is (build/bench --gguf). DIR is a llama.cpp source tree with llama-bench and llama-quantize built in DIR/build/bin (`make
llama-cpp` builds the one that the PyPI package llama-cpp-python ships). The checkpoint (a
GPT-2, LLaMA, Qwen3 or OLMoE directory that build/bench writes: config.json and model.safetensors) is written
once as an F32 GGUF with llama.cpp's own gguf-py (tensor names from its name map; LLaMA's q and k
rows permuted for its rotary layout, GPT-2's Conv1D weights transposed, as its converter does; a
stand-in vocabulary of the model's size, since the timing never tokenizes text), then converted by
llama-quantize to the dtype asked: F16, BF16, Q8_0 or Q4_0, every tensor in that type (--pure),
as our q8/q4 quantize every matrix. Cached next to the checkpoint.

Prefill: llama-bench's prompt test (-p N -n 0), tokens/s. Decode: its generation test after a
prompt of the same length in the cache (-p 0 -n NEW -d PROMPT), tokens/s: what the bench times for
us. Each with -r R runs (llama-bench reports their mean) and no GPU layers.

Prints one line per thread count:
    threads T prefill_tok_s X decode_tok_s Y
and "note: ..." lines. On failure: one line "error: ..." and exit status 1.
"""
import argparse
import json
import os
import subprocess
import sys

QUANT_TYPES = {"f16": "F16", "bf16": "BF16", "q8": "Q8_0", "q4": "Q4_0"}


def fail(message):
    print(f"error: {message}")
    sys.exit(1)


def stand_in_vocab(gguf, writer, model_type, vocab_size):
    """Token strings llama.cpp accepts for a vocabulary of vocab_size: SentencePiece style for
    LLaMA (byte tokens, then filler), byte-level BPE style for GPT-2 (a single merge: the timing never tokenizes)."""
    if model_type == "llama":
        tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
        types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL] + [gguf.TokenType.BYTE] * 256
        tokens += [f"\u2581t{i}" for i in range(vocab_size - len(tokens))]
        types += [gguf.TokenType.NORMAL] * (vocab_size - len(types))
        writer.add_tokenizer_model("llama")
        writer.add_token_list(tokens)
        writer.add_token_scores([0.0] * vocab_size)
        writer.add_token_types(types)
        writer.add_bos_token_id(1)
        writer.add_eos_token_id(2)
        writer.add_unk_token_id(0)
    else:
        tokens = ["t", "0"] + [f"t{i}" for i in range(vocab_size - 2)]
        writer.add_tokenizer_model("gpt2")
        writer.add_tokenizer_pre("qwen2" if model_type == "qwen3" else "gpt-2")
        writer.add_token_list(tokens)
        writer.add_token_types([gguf.TokenType.NORMAL] * vocab_size)
        writer.add_token_merges(["t 0"])  # llama.cpp wants the key; one merge, "t0", is in the list
        writer.add_bos_token_id(vocab_size - 1)
        writer.add_eos_token_id(vocab_size - 1)


def rotary_rows(weight, heads):
    """HF's rotate-half rows of q or k, per head, in the interleaved order llama.cpp's rope reads."""
    rows = weight.shape[0]
    return weight.reshape(heads, 2, rows // heads // 2, *weight.shape[1:]).swapaxes(1, 2).reshape(weight.shape)


def stack_experts(tensors, experts):
    """A mixture of experts' per-expert matrices (model.layers.L.mlp.experts.E.gate_proj.weight, ...)
    as one [experts, out, in] tensor per layer and projection, under the name llama.cpp's map knows
    (model.layers.L.mlp.experts.gate_proj)."""
    import numpy as np

    stacked, groups = {}, {}
    for name, data in tensors.items():
        parts = name.split(".")
        if len(parts) == 8 and parts[3] == "mlp" and parts[4] == "experts":
            groups.setdefault((parts[2], parts[6]), {})[int(parts[5])] = data
        else:
            stacked[name] = data
    for (layer, projection), by_expert in groups.items():
        if sorted(by_expert) != list(range(experts)):
            fail(f"layer {layer} {projection}: experts {sorted(by_expert)}, expected 0..{experts - 1}")
        stacked[f"model.layers.{layer}.mlp.experts.{projection}.weight"] = np.stack([by_expert[e] for e in range(experts)])
    return stacked


def write_f32_gguf(gguf, model_dir, path):
    import numpy as np
    from safetensors.numpy import load_file

    with open(os.path.join(model_dir, "config.json")) as f:
        config = json.load(f)
    model_type = config["model_type"]
    tensors = load_file(os.path.join(model_dir, "model.safetensors"))
    if model_type == "gpt2":
        arch, layers = gguf.MODEL_ARCH.GPT2, config["n_layer"]
    elif model_type == "llama":
        arch, layers = gguf.MODEL_ARCH.LLAMA, config["num_hidden_layers"]
    elif model_type == "qwen3":  # NeoX rotary in llama.cpp too: q and k rows as they are
        arch, layers = gguf.MODEL_ARCH.QWEN3, config["num_hidden_layers"]
    elif model_type == "olmoe":  # NeoX rotary too; the experts stacked as llama.cpp's converter does
        arch, layers = gguf.MODEL_ARCH.OLMOE, config["num_hidden_layers"]
        tensors = stack_experts(tensors, config["num_experts"])
    else:
        fail(f"model_type {model_type}: only gpt2, llama, qwen3 and olmoe are written as GGUF here")
    names = gguf.get_tensor_name_map(arch, layers)
    writer = gguf.GGUFWriter(path, gguf.MODEL_ARCH_NAMES[arch])
    if model_type == "gpt2":
        writer.add_context_length(config["n_positions"])
        writer.add_embedding_length(config["n_embd"])
        writer.add_feed_forward_length(4 * config["n_embd"])
        writer.add_block_count(layers)
        writer.add_head_count(config["n_head"])
        writer.add_layer_norm_eps(config["layer_norm_epsilon"])
    else:
        heads, kv_heads = config["num_attention_heads"], config["num_key_value_heads"]
        writer.add_context_length(config["max_position_embeddings"])
        writer.add_embedding_length(config["hidden_size"])
        writer.add_feed_forward_length(config["intermediate_size"])
        writer.add_block_count(layers)
        writer.add_head_count(heads)
        writer.add_head_count_kv(kv_heads)
        writer.add_layer_norm_rms_eps(config["rms_norm_eps"])
        writer.add_rope_freq_base(config["rope_theta"])
        head_dim = config.get("head_dim") or config["hidden_size"] // heads
        writer.add_rope_dimension_count(head_dim)
        if model_type == "qwen3":
            writer.add_key_length(head_dim)
            writer.add_value_length(head_dim)
        if model_type == "olmoe":
            writer.add_expert_count(config["num_experts"])
            writer.add_expert_used_count(config["num_experts_per_tok"])
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    stand_in_vocab(gguf, writer, model_type, config["vocab_size"])
    for hf_name, data in tensors.items():
        data = data.astype(np.float32)
        if model_type == "gpt2" and hf_name.endswith((".c_attn.weight", ".c_proj.weight", ".c_fc.weight")):
            data = np.ascontiguousarray(data.T)  # Conv1D stores [in][out]
        if model_type == "llama" and hf_name.endswith("self_attn.q_proj.weight"):
            data = rotary_rows(data, heads)
        if model_type == "llama" and hf_name.endswith("self_attn.k_proj.weight"):
            data = rotary_rows(data, kv_heads)
        name = names.get_name(hf_name, try_suffixes=(".weight", ".bias"))
        if name is None:
            fail(f"no GGUF name for tensor {hf_name}")
        writer.add_tensor(name, data)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def ensure_gguf(llama_cpp, model_dir, dtype):
    sys.path.insert(0, os.path.join(llama_cpp, "gguf-py"))
    try:
        import gguf
    except Exception as e:  # noqa: BLE001
        fail(f"cannot import llama.cpp's gguf-py from {llama_cpp}: {e}")
    f32_path = os.path.join(model_dir, "llamacpp-f32.gguf")
    if not os.path.exists(f32_path):
        write_f32_gguf(gguf, model_dir, f32_path + ".part")
        os.replace(f32_path + ".part", f32_path)
    if dtype == "f32":
        return f32_path
    path = os.path.join(model_dir, f"llamacpp-{dtype}.gguf")
    if not os.path.exists(path):
        quantize = os.path.join(llama_cpp, "build", "bin", "llama-quantize")
        done = subprocess.run([quantize, "--pure", f32_path, path + ".part", QUANT_TYPES[dtype]],
                              capture_output=True, text=True)
        if done.returncode != 0:
            fail(f"llama-quantize to {QUANT_TYPES[dtype]}: {done.stderr.strip().splitlines()[-1:]}")
        os.replace(path + ".part", path)
    return path


def run_bench(llama_cpp, gguf_path, threads, runs, arguments):
    """tokens/s of llama-bench's one test with these arguments."""
    command = [os.path.join(llama_cpp, "build", "bin", "llama-bench"), "-m", gguf_path, "-t", str(threads),
               "-r", str(runs), "-ngl", "0", "-o", "json"] + arguments
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        fail(f"llama-bench {' '.join(arguments)}: {done.stderr.strip().splitlines()[-1:]}")
    results = json.loads(done.stdout)
    if len(results) != 1:
        fail(f"llama-bench gave {len(results)} results, expected one")
    return results[0]["avg_ts"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model_dir")
    ap.add_argument("--llama-cpp", required=True, help="llama.cpp source tree with build/bin/llama-bench")
    ap.add_argument("--prompt", type=int, required=True)
    ap.add_argument("--new", type=int, required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", default="1")
    ap.add_argument("--dtype", default="f32", choices=["f32"] + list(QUANT_TYPES))
    args = ap.parse_args()
    if not os.access(os.path.join(args.llama_cpp, "build", "bin", "llama-bench"), os.X_OK):
        fail(f"no {args.llama_cpp}/build/bin/llama-bench (make llama-cpp builds it)")
    if args.model_dir.endswith(".gguf"):  # a GGUF file as it is (build/bench --gguf)
        gguf_path = args.model_dir
    else:
        gguf_path = ensure_gguf(args.llama_cpp, args.model_dir, args.dtype)
    print(f"note: {os.path.basename(gguf_path)}")
    for threads in (int(t) for t in args.threads.split(",")):
        prefill = run_bench(args.llama_cpp, gguf_path, threads, args.runs, ["-p", str(args.prompt), "-n", "0"])
        decode = run_bench(args.llama_cpp, gguf_path, threads, args.runs,
                           ["-p", "0", "-n", str(args.new), "-d", str(args.prompt)])
        print(f"threads {threads} prefill_tok_s {prefill:.3f} decode_tok_s {decode:.3f}", flush=True)


if __name__ == "__main__":
    main()
