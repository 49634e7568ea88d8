#!/usr/bin/env python3
"""Regenerate the GPT-2 test fixtures under test/fixtures/ (overwriting them).

Run as `python3 test/make_fixtures.py`. Deterministic (fixed seeds). Makes:

  gpt2-tiny/       tiny GPT-2 (32 dims, 4 heads, 2 layers) saved with transformers'
                   save_pretrained (F32 safetensors, `transformer.` names, tied lm_head
                   dropped), plus a ~500-token byte-level BPE trained here with
                   `tokenizers` (tokenizer.json, vocab.json, merges.txt, tokenizer_config.json)
  gpt2-hub/        odd-shaped GPT-2 (48 dims, 3 heads, 3 layers, n_inner=75, vocab = tokenizer
                   + 3) written by hand in the layout of the original hub `gpt2` checkpoint:
                   no `transformer.` prefix, old `h.N.attn.bias` / `h.N.attn.masked_bias`
                   buffers, no lm_head; tokenizer only as vocab.json + merges.txt
  gpt2-tiny-f16/   gpt2-tiny with F16 weights
  gpt2-tiny-bf16/  gpt2-tiny with BF16 weights
  gpt2-sharded/    gpt2-tiny split into >= 2 safetensors shards + model.safetensors.index.json
  tokenizer-gpt2/  the real GPT-2 tokenizer (50257 tokens) as compact tokenizer.json,
                   rebuilt from gpt2.tiktoken shipped in the `openai-whisper` sdist on PyPI

Every model dir gets reference.txt (prompt, prompt ids, greedy new ids, vocab size) and
reference_logits.bin (float32 LE [n_prompt][vocab_size], logits of the prompt), computed by
transformers (eager attention, float32) from the checkpoint as loaded back from disk.
Tokenizer dirs (gpt2-tiny, tokenizer-gpt2) get cases.txt: `<hex utf-8 input>\t<ids>` lines.

The GPT-2 vocabulary source is looked up in $GPT2_TIKTOKEN, an installed `whisper` package,
or fetched with `pip download openai-whisper==20250625`; if none works, tokenizer-gpt2/
tokenizer.json is left as it is (its cases.txt is still regenerated from it).
"""

import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save_file
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import GPT2Config, GPT2LMHeadModel, GPT2Tokenizer
from transformers.utils import logging as hf_logging

FIXTURES = Path(__file__).resolve().parent / "fixtures"
EOT = "<|endoftext|>"
SMALL_VOCAB = 500  # trained tokenizer size, <|endoftext|> included (it is the last id)
PROMPT = "Hello world, this is a test of 12 tokens"
MAX_NEW_TOKENS = 20
MIN_GREEDY_MARGIN = 1e-2  # top-1 minus top-2 logit at each greedy step

WHISPER_SDIST = "openai-whisper==20250625"
WHISPER_MEMBER = "openai_whisper-20250625/whisper/assets/gpt2.tiktoken"
GPT2_TIKTOKEN_SHA256 = "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930"
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

TRAINING_TEXT = """\
Hello world! This is a small corpus for training a byte-level BPE tokenizer. It's not
much, but it's enough: we'll learn a few hundred merges from it, and that's all we need.

The quick brown fox jumps over the lazy dog. The dog doesn't care; it's sleeping in the
sun. "Why won't you play?" asked the fox. "Because I'm tired," said the dog, "and you've
been running around since 6:30 this morning."

In 1969, people walked on the Moon for the first time. The trip took about 3 days, and
the distance is roughly 384,400 km. Pi is 3.14159, e is 2.71828, and the answer is 42.
Prices went up by 12.5% in 2023 -- from $19.99 to $22.49 -- which isn't great.

They're testing the tokenizer with words like: world, words, work, worker, working,
test, tests, tested, testing, token, tokens, tokenizer, tokenize. We've tried it before
and they'd say it works well. I'll write more text here so the merges are varied: this,
that, these, those, there, their, then, than, the, them, they, we, you, he, she, it.

def main():
    for i in range(10):
        print("line", i, "of", 10)
    return 0

Questions? Answers! Lists: apples, oranges, bananas; numbers: 1, 2, 3, 4, 5, 6, 7, 8, 9, 0.
A model is a function from tokens to logits; a test checks that the logits are the same.
Hello again, world. Is this a test? Yes, this is a test of 12 tokens, or maybe more.
"""

# Hard strings for cases.txt.
TOKENIZER_CASES = [
    "",
    " ",
    "          ",
    "   leading spaces",
    "trailing spaces   ",
    "  both  ",
    "\n",
    "\n\n",
    " \n ",
    "a\nb\n\nc",
    "\t",
    "\tindented\twith\ttabs\t",
    "\r\n",
    "line one\r\nline two\r\n",
    "12345",
    "3.14159",
    "1,000,000",
    "0123456789 9876543210",
    "Hello world",
    " Hello world",
    "Hello, world!",
    "I'm",
    "don't",
    "they'RE",
    "we'll",
    "it's",
    "'s",
    "I'M HERE AND YOU'LL SEE, THEY'VE SAID IT'S DONE",
    "She'd've",
    "café naïve résumé",
    "Ångström",
    "e\u0301 cafe\u0301",
    "東京都",
    "你好，世界",
    "안녕하세요 세계",
    "مرحبا بالعالم",
    "नमस्ते दुनिया",
    "👍",
    "👨\u200d👩\u200d👧\u200d👦",
    "🏳\ufe0f\u200d🌈",
    "👋🏻 👋🏿 thumbs 👍🏽",
    "!!!???",
    "...",
    "--",
    "Wait... what?! -- no way!!! (really?) [yes] {ok}",
    "https://example.com/path?query=1&x=y#frag",
    "user@example.org",
    "def f(x):\n    if x:\n        return {\"a\": [1, 2]}\n    return None\n",
    "int main(void) {\n\tprintf(\"%d\\n\", 42);\n}",
    "Hello<|endoftext|>World",
    "end of doc.<|endoftext|> Next doc",
    "<|endoftext|>",
    "non\u00a0breaking\u00a0space",
    "ideographic\u3000space",
    "€100 © 2024 Acme™ ®",
    "∑ x² ≤ ∞ ∀ε>0 ∃δ √2 ≈ 1.414",
    "mixedCASE camelCase snake_case kebab-case SCREAMING_CASE",
    "The quick brown fox jumps over the lazy dog. " * 3,
    (
        "In the beginning was the tokenizer, and the tokenizer split the text into "
        "pieces. Some pieces were words, like 'hello' and 'world'; others were numbers "
        "such as 2024 or 3.5, and some were just punctuation -- commas, periods, and the "
        "occasional exclamation mark! A good test covers all of them, including "
        "contractions (don't, won't, I'd), odd spacing   like this, and text in other "
        "scripts: 日本語, Ελληνικά, русский. It's long enough to exercise many merges."
    ),
]


# ----------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------


def reset_dir(path: Path) -> Path:
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable unicode char mapping."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def write_vocab_and_merges(out: Path, vocab: dict[str, int], merges: list[tuple[str, str]]) -> None:
    """vocab.json / merges.txt in the format of the hub's gpt2 repo."""
    ordered = dict(sorted(vocab.items(), key=lambda kv: kv[1]))
    (out / "vocab.json").write_text(json.dumps(ordered, ensure_ascii=False), encoding="utf-8")
    lines = ["#version: 0.2"] + [f"{a} {b}" for a, b in merges]
    (out / "merges.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_cases(out: Path, tok: Tokenizer) -> None:
    lines = []
    for text in TOKENIZER_CASES:
        ids = tok.encode(text, add_special_tokens=False).ids
        lines.append(text.encode("utf-8").hex() + "\t" + ",".join(map(str, ids)))
    (out / "cases.txt").write_text("\n".join(lines) + "\n", encoding="ascii")


def ids_str(ids) -> str:
    return ",".join(str(int(i)) for i in ids)


# ----------------------------------------------------------------------------
# 1. small trained byte-level BPE
# ----------------------------------------------------------------------------


def train_small_tokenizer() -> GPT2Tokenizer:
    """Train a GPT-2 style byte-level BPE; <|endoftext|> is appended as the last id."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=SMALL_VOCAB - 1,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=[],
        show_progress=False,
    )
    tok.train_from_iterator(TRAINING_TEXT.split("\n\n"), trainer)
    model = json.loads(tok.to_str())["model"]
    vocab = dict(model["vocab"])
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
    assert len(vocab) == SMALL_VOCAB - 1, f"trained only {len(vocab)} tokens; add training text"
    vocab[EOT] = len(vocab)
    # Built exactly as transformers builds a GPT-2 tokenizer from vocab.json + merges.txt.
    hf_tok = GPT2Tokenizer(vocab=vocab, merges=merges, bos_token=EOT, eos_token=EOT, unk_token=EOT)
    hf_tok._fixture_vocab, hf_tok._fixture_merges = vocab, merges
    assert len(hf_tok) == SMALL_VOCAB and hf_tok.eos_token_id == SMALL_VOCAB - 1
    return hf_tok


def save_small_tokenizer(hf_tok: GPT2Tokenizer, out: Path, with_tokenizer_json: bool = True) -> None:
    if with_tokenizer_json:
        hf_tok.save_pretrained(out)  # transformers 5 writes tokenizer.json + tokenizer_config.json only
    write_vocab_and_merges(out, hf_tok._fixture_vocab, hf_tok._fixture_merges)
    assert (out / "vocab.json").exists() and (out / "merges.txt").exists()
    assert (out / "tokenizer.json").exists() == with_tokenizer_json


def check_small_tokenizer(out: Path, hf_tok: GPT2Tokenizer) -> None:
    """tokenizer.json and vocab.json+merges.txt must tokenize identically."""
    from_json = Tokenizer.from_file(str(out / "tokenizer.json"))
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(out / "vocab.json", tmp)
        shutil.copy(out / "merges.txt", tmp)
        from_files = GPT2Tokenizer.from_pretrained(tmp)
    assert from_files.eos_token_id == hf_tok.eos_token_id
    for text in TOKENIZER_CASES + [PROMPT, TRAINING_TEXT]:
        a = from_json.encode(text, add_special_tokens=False).ids
        b = from_files.encode(text, add_special_tokens=False)
        c = hf_tok.encode(text, add_special_tokens=False)
        assert a == b == c, (text, a, b, c)
        assert from_json.decode(a, skip_special_tokens=False) == text, text


# ----------------------------------------------------------------------------
# 2./3. models and reference outputs
# ----------------------------------------------------------------------------


def build_model(config: GPT2Config, seed: int) -> GPT2LMHeadModel:
    """Random GPT-2 with non-trivial LayerNorm params and biases (all of which init to 1/0)."""
    torch.manual_seed(seed)
    model = GPT2LMHeadModel(config).eval()
    gen = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if ".ln_" in name and name.endswith(".weight"):
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=gen))
            elif name.endswith(".bias"):
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))
    return model


def load_model(path: Path) -> GPT2LMHeadModel:
    return GPT2LMHeadModel.from_pretrained(path, dtype=torch.float32, attn_implementation="eager").eval()


def greedy_reference(model: GPT2LMHeadModel, prompt_ids: list[int], eos: int):
    """Prompt logits + greedy ids from generate(), cross-checked with a hand-written loop."""
    input_ids = torch.tensor([prompt_ids])
    with torch.no_grad():
        logits = model(input_ids).logits[0].float()
        out = model.generate(
            input_ids,
            attention_mask=torch.ones_like(input_ids),
            max_new_tokens=MAX_NEW_TOKENS,
            do_sample=False,
            num_beams=1,
            pad_token_id=eos,
            eos_token_id=eos,
        )
    new_ids = out[0, len(prompt_ids):].tolist()

    # Plain argmax loop, no cache; also measures how decisive each step is.
    seq, manual, min_margin = list(prompt_ids), [], float("inf")
    with torch.no_grad():
        for _ in range(MAX_NEW_TOKENS):
            last = model(torch.tensor([seq])).logits[0, -1]
            top2 = torch.topk(last, 2).values
            min_margin = min(min_margin, float(top2[0] - top2[1]))
            nxt = int(last.argmax())
            manual.append(nxt)
            seq.append(nxt)
            if nxt == eos:
                break
    assert new_ids == manual, (new_ids, manual)
    assert min_margin > MIN_GREEDY_MARGIN, f"greedy step too close to a tie: {min_margin}"
    return logits, new_ids, min_margin


def write_reference(out: Path, model: GPT2LMHeadModel, prompt_ids: list[int]) -> None:
    config = model.config
    assert 8 <= len(prompt_ids) <= 16, len(prompt_ids)
    assert len(prompt_ids) + MAX_NEW_TOKENS <= config.n_positions
    logits, new_ids, margin = greedy_reference(model, prompt_ids, config.eos_token_id)
    assert logits.shape == (len(prompt_ids), config.vocab_size)
    lines = [
        f"prompt_text={PROMPT}",
        f"prompt_ids={ids_str(prompt_ids)}",
        f"max_new_tokens={MAX_NEW_TOKENS}",
        f"greedy_ids={ids_str(new_ids)}",
        f"vocab_size={config.vocab_size}",
    ]
    (out / "reference.txt").write_text("\n".join(lines) + "\n", encoding="ascii")
    logits.numpy().astype("<f4").tofile(out / "reference_logits.bin")
    print(f"  {out.name}: logits std {logits.std():.3f}, min greedy margin {margin:.4f}, new ids {new_ids}")


def tiny_config(vocab_size: int, eos: int) -> GPT2Config:
    return GPT2Config(
        vocab_size=vocab_size,
        n_positions=64,
        n_embd=32,
        n_layer=2,
        n_head=4,
        activation_function="gelu_new",
        initializer_range=0.5,
        bos_token_id=eos,
        eos_token_id=eos,
        attn_implementation="eager",
    )


def make_gpt2_tiny(hf_tok: GPT2Tokenizer) -> GPT2LMHeadModel:
    out = reset_dir(FIXTURES / "gpt2-tiny")
    eos = hf_tok.eos_token_id
    model = build_model(tiny_config(len(hf_tok), eos), seed=6)
    model.save_pretrained(out)
    save_small_tokenizer(hf_tok, out)
    check_small_tokenizer(out, hf_tok)
    write_cases(out, Tokenizer.from_file(str(out / "tokenizer.json")))

    loaded = load_model(out)
    prompt_ids = hf_tok.encode(PROMPT, add_special_tokens=False)
    with torch.no_grad():
        x = torch.tensor([prompt_ids])
        assert torch.equal(loaded(x).logits, model(x).logits)
    write_reference(out, loaded, prompt_ids)
    return model


def make_gpt2_hub(hf_tok: GPT2Tokenizer) -> None:
    out = reset_dir(FIXTURES / "gpt2-hub")
    eos = hf_tok.eos_token_id
    n_pos, n_layer = 40, 3
    config = GPT2Config(
        vocab_size=len(hf_tok) + 3,
        n_positions=n_pos,
        n_embd=48,
        n_layer=n_layer,
        n_head=3,
        n_inner=75,
        activation_function="gelu_new",
        initializer_range=0.5,
        bos_token_id=eos,
        eos_token_id=eos,
        attn_implementation="eager",
    )
    model = build_model(config, seed=23)  # this seed stops at eos after 17 new tokens

    # Weights named as in the original hub checkpoint, with its old attention buffers.
    tensors = {}
    for name, t in model.state_dict().items():
        if name == "lm_head.weight":
            continue
        assert name.startswith("transformer."), name
        tensors[name[len("transformer."):]] = t.detach().clone().contiguous()
    for i in range(n_layer):
        tensors[f"h.{i}.attn.bias"] = torch.tril(torch.ones(n_pos, n_pos)).view(1, 1, n_pos, n_pos)
        tensors[f"h.{i}.attn.masked_bias"] = torch.tensor(-10000.0)
    save_file(tensors, out / "model.safetensors", metadata={"format": "pt"})

    # config.json in the hub's style (it also carries n_ctx).
    hub_config = {
        "activation_function": "gelu_new",
        "architectures": ["GPT2LMHeadModel"],
        "attn_pdrop": 0.1,
        "bos_token_id": eos,
        "embd_pdrop": 0.1,
        "eos_token_id": eos,
        "initializer_range": 0.5,
        "layer_norm_epsilon": 1e-05,
        "model_type": "gpt2",
        "n_ctx": n_pos,
        "n_embd": 48,
        "n_head": 3,
        "n_inner": 75,
        "n_layer": n_layer,
        "n_positions": n_pos,
        "resid_pdrop": 0.1,
        "summary_activation": None,
        "summary_first_dropout": 0.1,
        "summary_proj_to_labels": True,
        "summary_type": "cls_index",
        "summary_use_proj": True,
        "task_specific_params": {"text-generation": {"do_sample": True, "max_length": 50}},
        "vocab_size": config.vocab_size,
    }
    (out / "config.json").write_text(json.dumps(hub_config, indent=2) + "\n", encoding="utf-8")
    save_small_tokenizer(hf_tok, out, with_tokenizer_json=False)

    # The reference comes from transformers loading this directory the way it loads the hub repo.
    hf_logging.set_verbosity_error()  # masked_bias is reported as an unexpected key
    loaded = load_model(out)
    hf_logging.set_verbosity_warning()
    tok = GPT2Tokenizer.from_pretrained(out)
    prompt_ids = tok.encode(PROMPT, add_special_tokens=False)
    assert prompt_ids == hf_tok.encode(PROMPT, add_special_tokens=False)
    with torch.no_grad():
        x = torch.tensor([prompt_ids])
        assert torch.equal(loaded(x).logits, model(x).logits), "hub-style checkpoint did not round-trip"
    write_reference(out, loaded, prompt_ids)


def copy_tokenizer_files(src: Path, dst: Path) -> None:
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt"):
        shutil.copy(src / name, dst / name)


def make_low_precision(model: GPT2LMHeadModel, hf_tok: GPT2Tokenizer, dtype: torch.dtype, name: str) -> None:
    out = reset_dir(FIXTURES / name)
    low = GPT2LMHeadModel(model.config).eval()
    low.load_state_dict(model.state_dict())
    low = low.to(dtype)
    low.config.dtype = dtype
    low.save_pretrained(out)
    copy_tokenizer_files(FIXTURES / "gpt2-tiny", out)

    cfg = json.loads((out / "config.json").read_text())
    assert cfg.get("dtype") == str(dtype).removeprefix("torch."), cfg.get("dtype")
    # Reference in float32 from the rounded weights.
    loaded = load_model(out)
    assert all(p.dtype == torch.float32 for p in loaded.parameters())
    write_reference(out, loaded, hf_tok.encode(PROMPT, add_special_tokens=False))


def make_sharded(model: GPT2LMHeadModel, hf_tok: GPT2Tokenizer) -> None:
    out = reset_dir(FIXTURES / "gpt2-sharded")
    model.save_pretrained(out, max_shard_size="60KB")
    copy_tokenizer_files(FIXTURES / "gpt2-tiny", out)
    shards = sorted(out.glob("model-*.safetensors"))
    assert len(shards) >= 2 and (out / "model.safetensors.index.json").exists(), shards
    assert not (out / "model.safetensors").exists()
    loaded = load_model(out)
    write_reference(out, loaded, hf_tok.encode(PROMPT, add_special_tokens=False))


# ----------------------------------------------------------------------------
# 4. the real GPT-2 tokenizer
# ----------------------------------------------------------------------------


def find_gpt2_tiktoken(tmp: str) -> bytes | None:
    env = os.environ.get("GPT2_TIKTOKEN")
    if env:
        return Path(env).read_bytes()
    try:
        import whisper  # type: ignore

        path = Path(whisper.__file__).parent / "assets" / "gpt2.tiktoken"
        if path.exists():
            return path.read_bytes()
    except Exception:
        pass
    try:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-q", "-d", tmp, WHISPER_SDIST],
            check=True,
            timeout=300,
        )
        (sdist,) = Path(tmp).glob("openai_whisper-*.tar.gz")
        with tarfile.open(sdist) as tar:
            return tar.extractfile(WHISPER_MEMBER).read()
    except Exception as exc:
        print(f"  could not fetch {WHISPER_SDIST}: {exc}")
        return None


def parse_tiktoken(data: bytes) -> dict[bytes, int]:
    ranks = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def bpe_split(ranks: dict[bytes, int], token: bytes, max_rank: int) -> list[bytes]:
    """Byte-level BPE of `token` using only merges whose result ranks below max_rank."""
    parts = [bytes([b]) for b in token]
    while True:
        best = None
        for i in range(len(parts) - 1):
            r = ranks.get(parts[i] + parts[i + 1])
            if r is not None and r < max_rank and (best is None or r < best[0]):
                best = (r, i)
        if best is None:
            return parts
        i = best[1]
        parts[i:i + 2] = [parts[i] + parts[i + 1]]


def gpt2_vocab_and_merges(ranks: dict[bytes, int]):
    b2u = bytes_to_unicode()
    to_str = lambda bs: "".join(b2u[b] for b in bs)  # noqa: E731
    vocab = {to_str(tok): rank for tok, rank in ranks.items()}
    merges = []
    for tok, rank in sorted(ranks.items(), key=lambda kv: kv[1]):
        if len(tok) == 1:
            continue
        parts = bpe_split(ranks, tok, rank)
        assert len(parts) == 2, (tok, parts)
        merges.append((to_str(parts[0]), to_str(parts[1])))
    vocab[EOT] = len(vocab)
    return vocab, merges


def build_gpt2_tokenizer(vocab: dict[str, int], merges: list[tuple[str, str]]) -> Tokenizer:
    """Same pipeline as the hub's gpt2 tokenizer.json."""
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, continuing_subword_prefix="", end_of_word_suffix="", fuse_unk=False))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)
    tok.post_processor = processors.ByteLevel(add_prefix_space=True, trim_offsets=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(EOT, special=True, normalized=False)])
    return tok


def check_gpt2_tokenizer(tok: Tokenizer, ranks: dict[bytes, int] | None) -> None:
    enc = lambda s: tok.encode(s, add_special_tokens=False).ids  # noqa: E731
    assert tok.get_vocab_size() == 50257
    assert enc("Hello world") == [15496, 995], enc("Hello world")
    assert enc(" Hello world") == [18435, 995]
    assert enc(" the") == [262]
    assert tok.token_to_id(EOT) == 50256 and enc(EOT) == [50256]
    texts = TOKENIZER_CASES + [PROMPT, TRAINING_TEXT]
    for text in texts:
        assert tok.decode(enc(text), skip_special_tokens=False) == text, text
    try:
        import tiktoken
    except ImportError:
        print("  tiktoken not installed: skipped the tiktoken cross-check")
        return
    if ranks is None:
        return
    ref = tiktoken.Encoding(name="gpt2_fixture", pat_str=GPT2_PATTERN, mergeable_ranks=ranks, special_tokens={EOT: 50256})
    for text in texts:
        assert enc(text) == ref.encode(text, allowed_special="all"), text
    print(f"  tiktoken cross-check passed on {len(texts)} texts")


def make_tokenizer_gpt2() -> None:
    out = FIXTURES / "tokenizer-gpt2"
    with tempfile.TemporaryDirectory() as tmp:
        data = find_gpt2_tiktoken(tmp)
    ranks = None
    if data is not None:
        digest = hashlib.sha256(data).hexdigest()
        assert digest == GPT2_TIKTOKEN_SHA256, f"unexpected gpt2.tiktoken ({digest})"
        ranks = parse_tiktoken(data)
        assert len(ranks) == 50256
        vocab, merges = gpt2_vocab_and_merges(ranks)
        assert len(merges) == 50000
        tok = build_gpt2_tokenizer(vocab, merges)
        reset_dir(out)
        tok.save(str(out / "tokenizer.json"), pretty=False)
    elif (out / "tokenizer.json").exists():
        print("  keeping the existing tokenizer-gpt2/tokenizer.json")
    else:
        raise SystemExit("no source for the GPT-2 vocabulary (set GPT2_TIKTOKEN=/path/to/gpt2.tiktoken)")
    tok = Tokenizer.from_file(str(out / "tokenizer.json"))
    check_gpt2_tokenizer(tok, ranks)
    write_cases(out, tok)


# ----------------------------------------------------------------------------


def main() -> None:
    torch.set_num_threads(1)  # avoid run-to-run float differences from threading
    hf_logging.disable_progress_bar()
    FIXTURES.mkdir(parents=True, exist_ok=True)
    print("training the small tokenizer")
    hf_tok = train_small_tokenizer()
    print("building models")
    tiny = make_gpt2_tiny(hf_tok)
    make_gpt2_hub(hf_tok)
    make_low_precision(tiny, hf_tok, torch.float16, "gpt2-tiny-f16")
    make_low_precision(tiny, hf_tok, torch.bfloat16, "gpt2-tiny-bf16")
    make_sharded(tiny, hf_tok)
    print("building the GPT-2 tokenizer")
    make_tokenizer_gpt2()
    print("done:", ", ".join(sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())))


if __name__ == "__main__":
    main()
