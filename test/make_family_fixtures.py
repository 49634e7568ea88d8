#!/usr/bin/env python3
"""Regenerate the decoder-family test fixtures (issue 5) under test/fixtures/.

Run as `python3 test/make_family_fixtures.py [dir ...]` (no argument: all of them). Deterministic
(fixed seeds); it rewrites only the directories listed in FAMILIES and WIDE below plus FAMILIES.md, and
reuses the GPT-2 fixture script's constants and helpers (training text, hard strings, prompt,
reference format).

For every family a tiny random model is built with transformers (float32, eval, eager
attention), with large weights and random norm weights / biases so that a wrong implementation
gives clearly different logits, saved with save_pretrained (safetensors), and loaded back to
write:

  reference.txt          prompt_text, prompt_ids (as the dir's tokenizer encodes prompt_text by
                         default, i.e. with BOS where the tokenizer adds one), max_new_tokens,
                         greedy_ids (the new ids generate() returns, eos included if it stops),
                         vocab_size
  reference_logits.bin   float32 LE [n_prompt][vocab_size], logits of the prompt

The seed of each model is the first from its base seed whose greedy steps all have a margin
(top-1 minus top-2 logit) above MIN_GREEDY_MARGIN, whose greedy run is not short (eos), stuck on
a few tokens or on padding ids, and whose generate() ids equal those of a cache-free argmax
loop (except with dynamic NTK rope, where the two legitimately differ; see evaluate()).
Each trait that a config switch can turn off (windows, rope scaling, parallel residual, rotary
fraction) is checked to change the prompt logits by more than TRAIT_MIN_EFFECT.
Families marked beam_and_batch (LongRoPE, YaRN, Granite: traits that follow the sequence length
or change what beams score) also record transformers' best of 3 beams and a left-padded batch's
greedy tokens in reference.txt (beam_ids, batch_skip, batch_ids_0, batch_ids_1; see
beam_and_batch_lines), which test_models checks on 1 to 4 ranks.

Each model dir gets a tokenizer trained here with `tokenizers` on make_fixtures.TRAINING_TEXT in
its family's style, saved through the transformers tokenizer class of that family (so
tokenizer.json / tokenizer_config.json are what transformers writes); the ids of
AutoTokenizer.from_pretrained(dir) and of tokenizers.Tokenizer.from_file(dir/tokenizer.json)
are checked to be equal on every hard string. One dir per tokenizer style gets cases.txt
(`<hex utf-8>\t<ids>`, no special tokens added); those whose tokenizer adds a BOS (opt, llama,
llama3-rope, mistral) also cases_special.txt (special tokens added). FAMILIES.md lists them all.
"""

import json
import shutil
import sys
import tempfile
from pathlib import Path

import torch
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
from transformers.utils import logging as hf_logging

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_fixtures import (  # noqa: E402
    FIXTURES,
    MAX_NEW_TOKENS,
    MIN_GREEDY_MARGIN,
    TOKENIZER_CASES,
    TRAINING_TEXT,
    ids_str,
    reset_dir,
)

TRAIT_MIN_EFFECT = 1e-2  # max |logit difference| when a trait is switched off
LOGITS_TOLERANCE = 1e-4  # the C tests' tolerance on logits; a subtler trait must still exceed it
SEED_TRIES = 200
MIN_NEW_TOKENS = 16  # a seed whose greedy run hits eos sooner is skipped
MIN_DISTINCT = 8  # nor one whose greedy run settles into repeating a few tokens
MAX_RUN = 3  # or repeats one token more than this many times in a row

BLOOM_PATTERN = r" ?[^(\s|[.,!?…。，、।۔،])]+"
LLAMA3_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
QWEN2_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
LLAMA3_SPECIALS = [
    "<|begin_of_text|>",
    "<|end_of_text|>",
    "<|reserved_special_token_0|>",
    "<|reserved_special_token_1|>",
    "<|finetune_right_pad_id|>",
    "<|reserved_special_token_2|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
    "<|eom_id|>",
    "<|eot_id|>",
    "<|python_tag|>",
]
QWEN2_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
# CodeGen's tokenizer adds runs of spaces and tabs as (non-special) added tokens after <|endoftext|>.
CODEGEN_WHITESPACE = [" " * n for n in range(8, 1, -1)] + ["\t" * n for n in range(4, 1, -1)]

PROMPTS = [
    "Hello world, this is a test of 12 tokens",
    "Hello world, this is a test",
    "The quick brown fox jumps over the lazy dog",
    "Hello again, world. Is this a test?",
    "the dog is sleeping in the sun",
    "A model is a function from tokens to logits",
]


# ----------------------------------------------------------------------------
# tokenizers
# ----------------------------------------------------------------------------


def _trained_bpe(tok: Tokenizer, trainer, texts) -> tuple[dict[str, int], list[tuple[str, str]]]:
    tok.train_from_iterator(texts, trainer)
    model = json.loads(tok.to_str())["model"]
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
    return dict(model["vocab"]), merges


def _place(front: list[str], vocab: dict[str, int], back: list[str]) -> dict[str, int]:
    """front tokens, then the trained vocab in its order, then back tokens."""
    out = {t: i for i, t in enumerate(front)}
    for t, _ in sorted(vocab.items(), key=lambda kv: kv[1]):
        assert t not in out, t
        out[t] = len(out)
    for t in back:
        assert t not in out, t
        out[t] = len(out)
    return out


def train_byte_level(size: int, pre_tokenizer, front=(), back=(), normalizer=None):
    """Byte-level BPE of `size` tokens in all (specials in front/back included)."""
    tok = Tokenizer(models.BPE())
    if normalizer is not None:
        tok.normalizer = normalizer
    tok.pre_tokenizer = pre_tokenizer
    trainer = trainers.BpeTrainer(
        vocab_size=size - len(front) - len(back),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=[],
        show_progress=False,
    )
    vocab, merges = _trained_bpe(tok, trainer, TRAINING_TEXT.split("\n\n"))
    assert len(vocab) == size - len(front) - len(back), f"trained only {len(vocab)} tokens"
    return _place(list(front), vocab, list(back)), merges


def split_then_byte_level(pattern: str):
    return pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False),
        ]
    )


def gpt2_style_tokenizer(size: int):
    """GPT-Neo / GPT-J: the GPT-2 pipeline, <|endoftext|> last (bos = eos = unk)."""
    from transformers import GPT2Tokenizer

    eot = "<|endoftext|>"
    vocab, merges = train_byte_level(size, pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True), back=[eot])
    return GPT2Tokenizer(vocab=vocab, merges=merges, bos_token=eot, eos_token=eot, unk_token=eot)


def codegen_tokenizer(size: int):
    """CodeGen: GPT-2 vocab + <|endoftext|>, then runs of spaces/tabs as added tokens."""
    from transformers import CodeGenTokenizer

    eot = "<|endoftext|>"
    vocab, merges = train_byte_level(size - len(CODEGEN_WHITESPACE), pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True), back=[eot])
    tok = CodeGenTokenizer(vocab=vocab, merges=merges, bos_token=eot, eos_token=eot, unk_token=eot)
    tok.add_tokens([AddedToken(w, special=False, normalized=True, lstrip=False, rstrip=False) for w in CODEGEN_WHITESPACE])
    return tok


def opt_tokenizer(size: int):
    """OPT: GPT-2 pipeline, <s> <pad> </s> <unk> at 0..3, </s> prepended as BOS."""
    from transformers import GPT2Tokenizer

    front = ["<s>", "<pad>", "</s>", "<unk>"]
    vocab, merges = train_byte_level(size, pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True), front=front)
    return GPT2Tokenizer(
        vocab=vocab,
        merges=merges,
        bos_token="</s>",
        eos_token="</s>",
        unk_token="</s>",
        pad_token="<pad>",
        add_bos_token=True,
    )


def neox_tokenizer(size: int):
    """GPT-NeoX / Pythia: NFC, GPT-2 pre-tokenizer, <|endoftext|> = 0, <|padding|> = 1."""
    from transformers import GPTNeoXTokenizer

    front = ["<|endoftext|>", "<|padding|>"]
    vocab, merges = train_byte_level(
        size, pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True), front=front, normalizer=normalizers.NFC()
    )
    return GPTNeoXTokenizer(vocab=vocab, merges=merges, add_bos_token=False, add_eos_token=False)


def bloom_tokenizer(size: int):
    """BLOOM: Split on its own regex, then byte-level without regex; <unk> <s> </s> <pad> at 0..3.

    transformers 5 has no BLOOM tokenizer class (tokenizer_class BloomTokenizerFast maps to
    TokenizersBackend, which takes tokenizer.json as it is), so tokenizer.json is built here the
    way bigscience/bloom's is."""
    from transformers import TokenizersBackend

    front = ["<unk>", "<s>", "</s>", "<pad>"]
    pre = split_then_byte_level(BLOOM_PATTERN)
    vocab, merges = train_byte_level(size, pre, front=front)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, continuing_subword_prefix="", end_of_word_suffix="", fuse_unk=False))
    tok.pre_tokenizer = pre
    tok.post_processor = processors.ByteLevel(add_prefix_space=True, trim_offsets=False, use_regex=False)
    tok.decoder = decoders.ByteLevel(add_prefix_space=True, trim_offsets=True, use_regex=False)
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in front])
    return TokenizersBackend(
        tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>", pad_token="<pad>", tokenizer_class="BloomTokenizerFast"
    ), tok


def llama3_tokenizer(size: int):
    """LLaMA-3: byte-level BPE behind a Split on the LLaMA-3 regex, ignore_merges, specials at the
    end, BOS added by a TemplateProcessing post-processor (as meta-llama/Llama-3.x ships it,
    tokenizer_class PreTrainedTokenizerFast)."""
    from transformers import TokenizersBackend

    pre = split_then_byte_level(LLAMA3_PATTERN)
    vocab, merges = train_byte_level(size, pre, back=LLAMA3_SPECIALS)
    bos, eos = LLAMA3_SPECIALS[0], LLAMA3_SPECIALS[1]
    tok = Tokenizer(
        models.BPE(vocab=vocab, merges=merges, continuing_subword_prefix="", end_of_word_suffix="", fuse_unk=False, ignore_merges=True)
    )
    tok.pre_tokenizer = pre
    tok.post_processor = processors.Sequence(
        [
            processors.ByteLevel(add_prefix_space=True, trim_offsets=False, use_regex=True),
            processors.TemplateProcessing(
                single=f"{bos}:0 $A:0", pair=f"{bos}:0 $A:0 {bos}:1 $B:1", special_tokens=[(bos, vocab[bos])]
            ),
        ]
    )
    tok.decoder = decoders.ByteLevel(add_prefix_space=True, trim_offsets=True, use_regex=True)
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in LLAMA3_SPECIALS])
    return TokenizersBackend(
        tokenizer_object=tok, bos_token=bos, eos_token=eos, tokenizer_class="PreTrainedTokenizerFast"
    ), tok


def qwen2_tokenizer(size: int):
    """Qwen2: NFC, Split on Qwen2's regex (single digits), byte-level; specials at the end; no BOS."""
    from transformers import Qwen2Tokenizer

    vocab, merges = train_byte_level(size, split_then_byte_level(QWEN2_PATTERN), back=QWEN2_SPECIALS, normalizer=normalizers.NFC())
    return Qwen2Tokenizer(
        vocab=vocab,
        merges=merges,
        unk_token=None,
        bos_token=None,
        eos_token="<|endoftext|>",
        pad_token="<|endoftext|>",
        extra_special_tokens=QWEN2_SPECIALS[1:],
    )


def train_llama2_pieces(size: int):
    """SentencePiece-style BPE: <unk> <s> </s>, the 256 byte tokens <0x00>..<0xFF>, then pieces
    learnt on '▁'-joined words (no newline or tab pieces: those fall back to bytes)."""
    front = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    tok = Tokenizer(models.BPE(byte_fallback=True, unk_token="<unk>", fuse_unk=True))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    trainer = trainers.BpeTrainer(vocab_size=size - len(front), special_tokens=[], show_progress=False)
    lines = [line for line in TRAINING_TEXT.split("\n") if line.strip()]
    vocab, merges = _trained_bpe(tok, trainer, lines)
    assert len(vocab) == size - len(front), f"trained only {len(vocab)} pieces"
    return _place(front, vocab, []), merges


def llama2_tokenizer(size: int):
    """LLaMA-2 as transformers 5 writes it: LlamaTokenizer (Metaspace pre-tokenizer, prepend
    'first', no split; byte fallback; BOS by TemplateProcessing)."""
    from transformers import LlamaTokenizer

    vocab, merges = train_llama2_pieces(size)
    return LlamaTokenizer(vocab=vocab, merges=merges, add_bos_token=True, add_eos_token=False, legacy=False)


def mistral_tokenizer(size: int):
    """Mistral-7B-v0.1 as the hub ships its tokenizer.json: normalizer Prepend('▁') + Replace(' ',
    '▁'), no pre-tokenizer, BPE with byte fallback, BOS by TemplateProcessing, tokenizer_class
    LlamaTokenizer (AutoTokenizer loads it for model_type mistral as TokenizersBackend, verbatim)."""
    from transformers import TokenizersBackend

    vocab, merges = train_llama2_pieces(size)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>", fuse_unk=True, byte_fallback=True))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    tok.pre_tokenizer = None
    tok.post_processor = processors.TemplateProcessing(
        single="<s>:0 $A:0", pair="<s>:0 $A:0 <s>:1 $B:1", special_tokens=[("<s>", 1)]
    )
    tok.decoder = decoders.Sequence(
        [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)]
    )
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in ("<unk>", "<s>", "</s>")])
    return TokenizersBackend(
        tokenizer_object=tok,
        unk_token="<unk>",
        bos_token="<s>",
        eos_token="</s>",
        add_bos_token=True,
        add_eos_token=False,
        legacy=False,
        tokenizer_class="LlamaTokenizer",
    ), tok


def gemma_tokenizer(size: int):
    """Gemma as transformers 5 writes it (GemmaTokenizer): <pad> <eos> <bos> <unk> <mask> = 0..4,
    the byte tokens, then pieces; normalizer Replace(' ', '▁'), no prefix space, byte fallback,
    <bos> added."""
    from transformers import GemmaTokenizer

    pieces, merges = train_llama2_pieces(size)
    front = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>", "<start_of_turn>", "<end_of_turn>"]
    vocab = {t: i for i, t in enumerate(front)}
    for t, _ in sorted(pieces.items(), key=lambda kv: kv[1]):
        if t not in vocab and t not in ("<s>", "</s>"):
            vocab[t] = len(vocab)
    tok = GemmaTokenizer(vocab=vocab, merges=merges)
    tok.add_special_tokens({"additional_special_tokens": ["<start_of_turn>", "<end_of_turn>"]})
    return tok


def train_suffix_bpe(tok: Tokenizer, texts, size: int):
    """BPE with '</w>' on each word's last symbol, trained here in Python: the tokenizers trainer
    orders the '</w>' alphabet and breaks ties between equal pair counts differently from run to
    run. Ties go to the lexicographically smallest pair; vocab = sorted alphabet, then merges."""
    from collections import Counter

    freq = Counter()
    for text in texts:
        if tok.normalizer is not None:
            text = tok.normalizer.normalize_str(text)
        for word, _ in tok.pre_tokenizer.pre_tokenize_str(text):
            freq[word] += 1
    words = [[*w[:-1], w[-1] + "</w>"] for w in sorted(freq)]
    counts = [freq[w] for w in sorted(freq)]
    vocab = {t: i for i, t in enumerate(sorted({s for w in words for s in w}))}
    merges = []
    while len(vocab) < size:
        pairs = Counter()
        for w, c in zip(words, counts):
            for pair in zip(w, w[1:]):
                pairs[pair] += c
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p))
        merges.append(best)
        joined = best[0] + best[1]
        vocab.setdefault(joined, len(vocab))
        for w in words:
            i = 0
            while i < len(w) - 1:
                if (w[i], w[i + 1]) == best:
                    w[i:i + 2] = [joined]
                i += 1
    assert len(vocab) == size, f"trained only {len(vocab)} tokens"
    return vocab, merges


def openai_tokenizer(size: int):
    """OpenAI GPT: BertNormalizer (lowercase, accents stripped), BertPreTokenizer, BPE with '</w>'."""
    from transformers import OpenAIGPTTokenizer

    tok = Tokenizer(models.BPE(unk_token="<unk>", end_of_word_suffix="</w>"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    vocab, merges = train_suffix_bpe(tok, TRAINING_TEXT.split("\n\n"), size - 1)
    vocab = _place([], vocab, ["<unk>"])
    return OpenAIGPTTokenizer(vocab=vocab, merges=merges, unk_token="<unk>")


CTRL_WORD = r"\S+\n?"


def ctrl_tokenizer(size: int, out: Path):
    """CTRL: words are `\\S+\\n?` matches, BPE with '</w>' on the last symbol; vocab.json spells a
    non-final piece 'xx@@' and a final one 'xx'. Writes vocab.json + merges.txt (what the hub
    ships; CTRLTokenizer is a Python tokenizer) and a tokenizer.json equivalent to them: the same
    BPE with end_of_word_suffix '</w>', its token strings renamed ('xx' = 'xx@@', 'xx</w>' = 'xx')
    under the same ids, behind Split(`\\S+\\n?`, removed, invert)."""
    from transformers import CTRLTokenizer

    pre = pre_tokenizers.Split(Regex(CTRL_WORD), behavior="removed", invert=True)
    tok = Tokenizer(models.BPE(unk_token="<unk>", end_of_word_suffix="</w>"))
    tok.pre_tokenizer = pre
    # Trained line by line: a merge with a newline in it could not be written to merges.txt, so
    # a word's trailing newline is an unknown symbol (<unk>), as any other unseen character.
    vocab, merges = train_suffix_bpe(tok, TRAINING_TEXT.split("\n"), size - 1)
    assert not any("\n" in t for t in vocab)
    vocab = _place([], vocab, ["<unk>"])
    ctrl_vocab = {}
    for t, i in vocab.items():
        name = t if t == "<unk>" else (t[: -len("</w>")] if t.endswith("</w>") else t + "@@")
        assert name not in ctrl_vocab, name
        ctrl_vocab[name] = i
    (out / "vocab.json").write_text(json.dumps(ctrl_vocab, ensure_ascii=False), encoding="utf-8")
    (out / "merges.txt").write_text("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges), encoding="utf-8")
    hf_tok = CTRLTokenizer(vocab_file=str(out / "vocab.json"), merges_file=str(out / "merges.txt"))
    with tempfile.TemporaryDirectory() as tmp:
        hf_logging.set_verbosity_error()  # it warns that merges.txt ranks "are not consecutive" (they are)
        hf_tok.save_pretrained(tmp)
        hf_logging.set_verbosity_warning()
        for name in ("vocab.json", "merges.txt"):
            assert json.loads(Path(tmp, name).read_text()) == ctrl_vocab if name == "vocab.json" else (
                Path(tmp, name).read_text().splitlines()[1:] == (out / name).read_text().splitlines()[1:]
            ), name
        shutil.copy(Path(tmp, "tokenizer_config.json"), out)

    fast = Tokenizer(
        models.BPE(vocab=vocab, merges=merges, unk_token="<unk>", end_of_word_suffix="</w>", fuse_unk=False)
    )
    fast.pre_tokenizer = pre
    fast.decoder = decoders.BPEDecoder(suffix="</w>")
    fast.add_special_tokens([AddedToken("<unk>", special=True, normalized=False)])
    fast.save(str(out / "tokenizer.json"), pretty=False)
    return hf_tok


def check_tokenizer_dir(out: Path, reference) -> None:
    """AutoTokenizer from the dir, the tokenizer object we saved, and the raw tokenizer.json agree."""
    auto = AutoTokenizer.from_pretrained(out)
    raw = Tokenizer.from_file(str(out / "tokenizer.json"))
    assert len(auto) == len(reference), (len(auto), len(reference))
    for text in TOKENIZER_CASES + PROMPTS + [TRAINING_TEXT]:
        for special in (False, True):
            a = auto.encode(text, add_special_tokens=special)
            b = raw.encode(text, add_special_tokens=special).ids
            c = reference.encode(text, add_special_tokens=special)
            assert a == b == c, (out.name, special, text, a, b, c)


def write_cases(out: Path, tok, special: bool = False) -> None:
    lines = []
    for text in TOKENIZER_CASES:
        ids = tok.encode(text, add_special_tokens=special)
        lines.append(text.encode("utf-8").hex() + "\t" + ",".join(map(str, ids)))
    name = "cases_special.txt" if special else "cases.txt"
    (out / name).write_text("\n".join(lines) + "\n", encoding="ascii")


# ----------------------------------------------------------------------------
# models
# ----------------------------------------------------------------------------


def randomize(model: torch.nn.Module, seed: int) -> None:
    """Norm weights 1 + 0.2 N(0,1), norm and linear biases 0.1 N(0,1) (they init to 1 / 0)."""
    gen = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for _, module in sorted(model.named_modules()):
            is_norm = isinstance(module, torch.nn.LayerNorm) or "Norm" in type(module).__name__
            for pname, p in sorted(module.named_parameters(recurse=False)):
                if is_norm and pname == "weight":
                    p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=gen))
                elif pname == "bias":
                    p.copy_(0.1 * torch.randn(p.shape, generator=gen))


# The attention implementation the references are computed with: eager, but for a family whose
# eager path computes other math than its default one (make_family sets it from the family's "attn").
ATTENTION = {"implementation": "eager"}


def experts_eager(config) -> dict:
    """Mixtures of experts run their experts one after another (transformers' loop), so that the
    saved model computes what the built one did, to the bit."""
    is_moe = any(hasattr(config, k) for k in ("num_experts", "num_local_experts"))
    return {"experts_implementation": "eager"} if is_moe else {}


def causal_lm_class(config):
    """The class a family's checkpoints ship as: AutoModelForCausalLM's, but for Llama 4's multimodal
    config, which it maps to the text model alone (Llama4ForCausalLM) where the hub has the whole
    Llama4ForConditionalGeneration."""
    if config.model_type == "llama4":
        from transformers import Llama4ForConditionalGeneration
        return Llama4ForConditionalGeneration
    if config.model_type == "mistral3":
        from transformers import Mistral3ForConditionalGeneration
        return Mistral3ForConditionalGeneration
    return AutoModelForCausalLM


def build_model(config, seed: int, tweak=None):
    torch.manual_seed(seed)
    cls = causal_lm_class(config)
    model = (cls.from_config if cls is AutoModelForCausalLM else cls._from_config)(config, dtype=torch.float32, attn_implementation=ATTENTION["implementation"],
                                             **experts_eager(config)).eval()
    randomize(model, seed)
    if tweak is not None:
        with torch.no_grad():
            tweak(model)
    return model


def scale_params(factors: dict[str, float]):
    """Multiply the parameters whose name ends with a key by its factor. With tied embeddings a
    token's own embedding can dominate the residual stream so that the model predicts the token
    it was given, over and over; smaller embeddings and a larger last norm (to keep the logits
    large) avoid that."""
    def tweak(model):
        for name, p in model.named_parameters():
            for suffix, factor in factors.items():
                if name.endswith(suffix):
                    p.mul_(factor)
    return tweak


def load_model(path: Path, config=None):
    kwargs = {} if config is None else {"config": config}
    config = config or AutoConfig.from_pretrained(path)
    kwargs.update(experts_eager(config))
    return causal_lm_class(config).from_pretrained(path, dtype=torch.float32, attn_implementation=ATTENTION["implementation"],
                                                **kwargs).eval()


def prompt_logits(model, prompt_ids) -> torch.Tensor:
    with torch.no_grad():
        return model(torch.tensor([prompt_ids])).logits[0].float()


def greedy_generate(model, prompt_ids, eos, pad):
    """generate()'s new ids (KV cache) and the top-1 minus top-2 margin of each step."""
    x = torch.tensor([prompt_ids])
    with torch.no_grad():
        out = model.generate(
            x,
            attention_mask=torch.ones_like(x),
            max_new_tokens=MAX_NEW_TOKENS,
            do_sample=False,
            num_beams=1,
            eos_token_id=eos,
            pad_token_id=pad,
            output_logits=True,
            return_dict_in_generate=True,
        )
    new_ids = out.sequences[0, len(prompt_ids):].tolist()
    margins = []
    for step in out.logits:
        top2 = torch.topk(step[0].float(), 2).values
        margins.append(float(top2[0] - top2[1]))
    assert [int(s[0].argmax()) for s in out.logits] == new_ids
    return new_ids, min(margins), torch.stack([s[0] for s in out.logits])


def greedy_no_cache(model, prompt_ids, eos):
    """Plain argmax loop re-running the whole sequence each step (no cache)."""
    seq, new, last = list(prompt_ids), [], []
    with torch.no_grad():
        for _ in range(MAX_NEW_TOKENS):
            logits = model(torch.tensor([seq])).logits[0, -1]
            last.append(logits)
            nxt = int(logits.argmax())
            new.append(nxt)
            seq.append(nxt)
            if eos is not None and nxt == eos:
                break
    return new, torch.stack(last)


def beam_generate(model, prompt_ids, eos, pad, beams=3):
    """generate()'s best of `beams` beams (new ids)."""
    x = torch.tensor([prompt_ids])
    with torch.no_grad():
        out = model.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=MAX_NEW_TOKENS, do_sample=False,
                             num_beams=beams, eos_token_id=eos, pad_token_id=pad)
    return out[0, len(prompt_ids):].tolist()


PADDED_EXTRA = 3  # the other row of the left-padded batch: the prompt with its first 3 ids repeated in front


def padded_generate(model, prompt_ids, eos, pad):
    """Greedy new ids of the prompt as the second row of a batch whose first row is
    prompt_ids[:PADDED_EXTRA] + prompt_ids: the prompt left-padded by PADDED_EXTRA."""
    pad_id = pad if pad is not None else (eos if eos is not None else 0)
    long = prompt_ids[:PADDED_EXTRA] + prompt_ids
    x = torch.tensor([long, [pad_id] * PADDED_EXTRA + prompt_ids])
    mask = torch.tensor([[1] * len(long), [0] * PADDED_EXTRA + [1] * len(prompt_ids)])
    with torch.no_grad():
        out = model.generate(x, attention_mask=mask, max_new_tokens=MAX_NEW_TOKENS, do_sample=False, num_beams=1,
                             eos_token_id=eos, pad_token_id=pad_id)
    ids = out[1, len(long):].tolist()
    if eos is not None and eos in ids:  # generate() pads a finished row after its eos
        ids = ids[:ids.index(eos) + 1]
    return ids


# ----------------------------------------------------------------------------
# the families
# ----------------------------------------------------------------------------

INIT_STD = 0.3


def _ids(tok):
    """bos / eos / pad ids of a transformers tokenizer (None where it has none)."""
    return tok.bos_token_id, tok.eos_token_id, tok.pad_token_id


def cfg_gpt_neo(v, tok):
    from transformers import GPTNeoConfig

    bos, eos, _ = _ids(tok)
    return GPTNeoConfig(
        vocab_size=v, max_position_embeddings=64, hidden_size=48, num_layers=2, num_heads=6, intermediate_size=96,
        attention_types=[[["global", "local"], 1]], window_size=8, activation_function="gelu_new",
        initializer_range=INIT_STD, bos_token_id=bos, eos_token_id=eos,
    )


def cfg_gptj(v, tok):
    from transformers import GPTJConfig

    bos, eos, _ = _ids(tok)
    return GPTJConfig(
        vocab_size=v, n_positions=64, n_embd=48, n_layer=2, n_head=6, rotary_dim=4, n_inner=96,
        activation_function="gelu_new", initializer_range=INIT_STD, bos_token_id=bos, eos_token_id=eos,
    )


def cfg_gpt_neox(v, tok, hidden=96, rotary_pct=0.25, parallel=True):
    from transformers import GPTNeoXConfig

    bos, eos, pad = _ids(tok)
    return GPTNeoXConfig(
        vocab_size=v, max_position_embeddings=64, hidden_size=hidden, num_hidden_layers=2, num_attention_heads=6,
        intermediate_size=64, hidden_act="gelu", rotary_pct=rotary_pct, rotary_emb_base=10000,
        use_parallel_residual=parallel, initializer_range=INIT_STD, bos_token_id=bos, eos_token_id=eos,
        pad_token_id=pad, tie_word_embeddings=False,
    )


def cfg_gpt_neox_seq(v, tok):
    return cfg_gpt_neox(v, tok, hidden=48, rotary_pct=0.5, parallel=False)


def cfg_opt(v, tok, proj=None, pre_norm=True):
    from transformers import OPTConfig

    bos, eos, pad = _ids(tok)
    return OPTConfig(
        vocab_size=v, hidden_size=48, num_hidden_layers=2, ffn_dim=96, num_attention_heads=6, max_position_embeddings=64,
        do_layer_norm_before=pre_norm, word_embed_proj_dim=proj, activation_function="relu", init_std=INIT_STD,
        bos_token_id=bos, eos_token_id=eos, pad_token_id=pad, dropout=0.0,
    )


def cfg_opt_350m(v, tok):
    return cfg_opt(v, tok, proj=32, pre_norm=False)


def cfg_bloom(v, tok):
    from transformers import BloomConfig

    bos, eos, pad = _ids(tok)
    return BloomConfig(
        vocab_size=v, hidden_size=48, n_layer=2, n_head=6, initializer_range=INIT_STD,
        bos_token_id=bos, eos_token_id=eos, pad_token_id=pad,
    )


def cfg_llama(v, tok, rope=None, max_pos=64, kv=2):
    from transformers import LlamaConfig

    bos, eos, pad = _ids(tok)
    return LlamaConfig(
        vocab_size=v, hidden_size=48, intermediate_size=64, num_hidden_layers=2, num_attention_heads=6,
        num_key_value_heads=kv, max_position_embeddings=max_pos, rms_norm_eps=1e-5, initializer_range=INIT_STD,
        rope_parameters=rope or {"rope_type": "default", "rope_theta": 10000.0}, tie_word_embeddings=False,
        bos_token_id=bos, eos_token_id=eos, pad_token_id=pad,
    )


def cfg_llama_linear(v, tok):
    return cfg_llama(v, tok, rope={"rope_type": "linear", "factor": 2.0, "rope_theta": 10000.0})


def cfg_llama_dynamic(v, tok, n_prompt):
    # max_position_embeddings below the prompt length: NTK scaling is on for the prompt logits
    # already and grows at every generated token.
    return cfg_llama(v, tok, rope={"rope_type": "dynamic", "factor": 2.0, "rope_theta": 10000.0}, max_pos=n_prompt - 4)


def cfg_llama3(v, tok):
    # head_dim 8, theta 5e5: wavelengths 6.3, 167, 4.4e3, 1.2e5 against 64 (high) and 256 (low):
    # one kept, one smoothed, two divided by the factor.
    rope = {
        "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
        "original_max_position_embeddings": 256, "rope_theta": 500000.0,
    }
    return cfg_llama(v, tok, rope=rope, max_pos=2048)


def cfg_llama_yarn(v, tok):
    # head_dim 8, theta 1e4, original 32: find_correction_range gives dims 0..1 (beta_fast 32, beta_slow
    # 1, truncated), so frequency 0 is kept, 1..3 divided by the factor; attention factor 0.1 ln 4 + 1.
    rope = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32, "rope_theta": 10000.0}
    return cfg_llama(v, tok, rope=rope, max_pos=128)


def cfg_qwen2_yarn(v, tok):
    # Qwen2's shape (q/k/v biases, 6 q heads / 1 kv head, tied) with YaRN as Qwen2.5 / DeepSeek spell
    # it: beta_fast 4 and beta_slow 0.5 put the ramp over dims 0.41 .. 1.31 untruncated (a fractional
    # ramp), and mscale / mscale_all_dim make the attention factor their ratio.
    from transformers import Qwen2Config

    bos, eos, pad = _ids(tok)
    rope = {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 64, "rope_theta": 10000.0,
            "beta_fast": 4.0, "beta_slow": 0.5, "truncate": False, "mscale": 1.0, "mscale_all_dim": 0.5}
    return Qwen2Config(
        vocab_size=v, hidden_size=48, intermediate_size=64, num_hidden_layers=2, num_attention_heads=6,
        num_key_value_heads=1, max_position_embeddings=512, rms_norm_eps=1e-6, initializer_range=INIT_STD,
        rope_parameters=rope, use_sliding_window=False,
        tie_word_embeddings=True, bos_token_id=bos, eos_token_id=eos, pad_token_id=pad,
    )


LONGROPE_SHORT = [1.0, 1.5, 2.5, 4.0]
LONGROPE_LONG = [1.2, 3.0, 9.0, 20.0]


def cfg_llama_longrope(v, tok, original):
    # factor absent: max_position_embeddings / original (4), attention factor sqrt(1 + ln 4 / ln original).
    rope = {"rope_type": "longrope", "short_factor": LONGROPE_SHORT, "long_factor": LONGROPE_LONG,
            "original_max_position_embeddings": original, "rope_theta": 10000.0}
    return cfg_llama(v, tok, rope=rope, max_pos=4 * original)


def cfg_llama_longrope_short(v, tok, n_prompt):
    # the prompt within the original length (short factors), generation past it: each decode step past
    # original_max_position_embeddings rotates its token with the long factors, the cached keys keep theirs
    return cfg_llama_longrope(v, tok, n_prompt + 5)


def cfg_llama_longrope_long(v, tok, n_prompt):
    # the prompt already past the original length: long factors from the first token
    return cfg_llama_longrope(v, tok, n_prompt - 4)


def cfg_granite(v, tok):
    # Granite 3's multipliers at tiny-model strength (granite-3.x: embedding 12, residual 0.22,
    # attention 1/128 at head_dim 128, logits 8); tied head, as Granite 3 ships it.
    from transformers import GraniteConfig

    bos, eos, pad = _ids(tok)
    return GraniteConfig(
        vocab_size=v, hidden_size=48, intermediate_size=64, num_hidden_layers=2, num_attention_heads=6,
        num_key_value_heads=2, max_position_embeddings=64, rms_norm_eps=1e-5, initializer_range=INIT_STD,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, tie_word_embeddings=True,
        embedding_multiplier=3.0, residual_multiplier=0.6, attention_multiplier=0.2, logits_scaling=2.5,
        bos_token_id=bos, eos_token_id=eos, pad_token_id=pad,
    )


def cfg_mistral(v, tok):
    from transformers import MistralConfig

    bos, eos, pad = _ids(tok)
    return MistralConfig(
        vocab_size=v, hidden_size=48, intermediate_size=64, num_hidden_layers=2, num_attention_heads=6,
        num_key_value_heads=2, max_position_embeddings=128, sliding_window=8, rms_norm_eps=1e-5,
        initializer_range=INIT_STD, rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        tie_word_embeddings=False, bos_token_id=bos, eos_token_id=eos, pad_token_id=pad,
    )


def cfg_mistral3(v, tok):
    """Mistral Small 3.1's checkpoint: Mistral3ForConditionalGeneration, the mistral text model above
    (its head untied, said at the top level too, as transformers 5 ties by that key) beside a tiny Pixtral
    tower and projector that the text model never reads."""
    from transformers import Mistral3Config

    vision = dict(hidden_size=32, intermediate_size=48, num_hidden_layers=1, num_attention_heads=2, image_size=28,
                  patch_size=14, head_dim=16)
    return Mistral3Config(text_config=cfg_mistral(v, tok).to_dict(), vision_config=vision, image_token_index=v,
                          spatial_merge_size=2, tie_word_embeddings=False)


def cfg_qwen2(v, tok):
    from transformers import Qwen2Config

    bos, eos, pad = _ids(tok)
    return Qwen2Config(
        vocab_size=v, hidden_size=48, intermediate_size=64, num_hidden_layers=2, num_attention_heads=6,
        num_key_value_heads=1, max_position_embeddings=128, rms_norm_eps=1e-6, initializer_range=INIT_STD,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}, use_sliding_window=False,
        tie_word_embeddings=True, bos_token_id=bos, eos_token_id=eos, pad_token_id=pad,
    )


def cfg_gemma(v, tok):
    from transformers import GemmaConfig

    bos, eos, pad = _ids(tok)
    # head_dim 12 with hidden 48 and 6 heads: q is 72 wide, not hidden; 2 kv heads (GQA)
    return GemmaConfig(
        vocab_size=v, hidden_size=48, intermediate_size=64, num_hidden_layers=2, num_attention_heads=6,
        num_key_value_heads=2, head_dim=12, max_position_embeddings=128, rms_norm_eps=1e-6,
        initializer_range=INIT_STD, rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        hidden_act="gelu_pytorch_tanh", tie_word_embeddings=True, bos_token_id=bos, eos_token_id=eos,
        pad_token_id=pad,
    )


def cfg_gemma2(v, tok):
    from transformers import Gemma2Config

    bos, eos, pad = _ids(tok)
    # 3 layers: sliding (window 8), full, sliding; multi-query; head_dim 16 but scores scaled by
    # query_pre_attn_scalar 24 ** -0.5; caps low enough to bite on these large random weights
    return Gemma2Config(
        vocab_size=v, hidden_size=48, intermediate_size=64, num_hidden_layers=3, num_attention_heads=6,
        num_key_value_heads=1, head_dim=16, max_position_embeddings=128, rms_norm_eps=1e-6,
        initializer_range=INIT_STD, rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        hidden_activation="gelu_pytorch_tanh", query_pre_attn_scalar=24, sliding_window=8,
        attn_logit_softcapping=4.0, final_logit_softcapping=6.0, tie_word_embeddings=True, bos_token_id=bos,
        eos_token_id=eos, pad_token_id=pad,
    )


def cfg_gemma3(v, tok):
    from transformers import Gemma3TextConfig

    bos, eos, pad = _ids(tok)
    # 6 layers: 5 sliding (window 8, local rope base 1e4) then 1 global (base 1e6, linear scaling 8,
    # as Gemma 3 4B+); q/k RMSNorms (1 + w) per head; GQA 6/2 with head_dim 16
    return Gemma3TextConfig(
        vocab_size=v, hidden_size=48, intermediate_size=64, num_hidden_layers=6, num_attention_heads=6,
        num_key_value_heads=2, head_dim=16, max_position_embeddings=256, rms_norm_eps=1e-6,
        initializer_range=INIT_STD, hidden_activation="gelu_pytorch_tanh", query_pre_attn_scalar=16,
        sliding_window=8, tie_word_embeddings=True, bos_token_id=bos, eos_token_id=eos, pad_token_id=pad,
        rope_parameters={
            "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
            "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0},
        },
    )


def cfg_gemma3_multimodal(v, tok):
    """Gemma 3 4B+'s checkpoint: Gemma3ForConditionalGeneration, the text model above beside a tiny
    SigLIP vision tower and its projector (whose tensors the text model never reads)."""
    from transformers import Gemma3Config

    bos, eos, pad = _ids(tok)
    vision = dict(hidden_size=32, intermediate_size=48, num_hidden_layers=1, num_attention_heads=2, image_size=28,
                  patch_size=14)
    return Gemma3Config(text_config=cfg_gemma3(v, tok).to_dict(), vision_config=vision, mm_tokens_per_image=4,
                        image_token_index=v, boi_token_index=bos, eoi_token_index=eos, bos_token_id=bos,
                        eos_token_id=eos, pad_token_id=pad)


def gemma3_hub_style_config(cfg: dict) -> dict:
    """config.json as the Gemma 3 hub repos spell it: rope_theta, rope_local_base_freq, rope_scaling
    and sliding_window_pattern, no rope_parameters nor layer_types."""
    rope = cfg.pop("rope_parameters")
    cfg.pop("layer_types")
    full, local = dict(rope["full_attention"]), rope["sliding_attention"]
    cfg["rope_theta"] = full.pop("rope_theta")
    cfg["rope_local_base_freq"] = local["rope_theta"]
    cfg["rope_scaling"] = full
    cfg.pop("_sliding_window_pattern", None)
    cfg["sliding_window_pattern"] = 6
    return cfg


def set_rope_kind(kind, **kv):
    def apply(cfg):
        cfg.rope_parameters = dict(cfg.rope_parameters)
        cfg.rope_parameters[kind] = dict(cfg.rope_parameters[kind], **kv)
    return apply


def plain_global_rope(cfg):
    cfg.rope_parameters = dict(cfg.rope_parameters)
    cfg.rope_parameters["full_attention"] = {"rope_type": "default",
                                             "rope_theta": cfg.rope_parameters["full_attention"]["rope_theta"]}


def gemma3_no_qk_norms(model):
    for layer in model.model.layers:
        layer.self_attn.q_norm.forward = lambda x: x
        layer.self_attn.k_norm.forward = lambda x: x


def gemma2_no_post_norms(model):
    for layer in model.model.layers:
        layer.post_attention_layernorm.forward = lambda x: x
        layer.post_feedforward_layernorm.forward = lambda x: x


def gemma_plain_norms(model):
    """RMSNorm gains w instead of 1 + w (LLaMA's): a patch, no config switch selects it."""
    def plain(module):
        def forward(x):
            out = module._norm(x.float()) * module.weight.float()
            return out.type_as(x)
        return forward
    for name, module in model.named_modules():
        if type(module).__name__.endswith("RMSNorm"):
            module.forward = plain(module)


def gemma_no_embed_scale(model):
    model.model.embed_tokens.embed_scale.fill_(1.0)


def patch_only(patch):
    return lambda cfg: patch
ROUTER_SCALE = 2.0  # the routers' weights times this: routing far from ties
MIN_ROUTING_MARGIN = 0.05  # k-th minus (k+1)-th router logit of every token at every sparse layer


def cfg_qwen3_moe(v, tok):
    from transformers import Qwen3MoeConfig

    bos, eos, pad = _ids(tok)
    # 7 experts (uneven on 2 and 3 ranks), 2 a token, not renormalised; layer 1 dense (mlp_only_layers)
    return Qwen3MoeConfig(
        vocab_size=v, hidden_size=48, intermediate_size=64, moe_intermediate_size=40, num_experts=7,
        num_experts_per_tok=2, norm_topk_prob=False, decoder_sparse_step=1, mlp_only_layers=[1], num_hidden_layers=3,
        num_attention_heads=6, num_key_value_heads=2, head_dim=12, max_position_embeddings=128, rms_norm_eps=1e-6,
        initializer_range=INIT_STD, rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
        tie_word_embeddings=False, bos_token_id=bos, eos_token_id=eos, pad_token_id=pad,
    )


def cfg_mixtral(v, tok):
    from transformers import MixtralConfig

    bos, eos, pad = _ids(tok)
    # 5 experts, 3 a token (renormalised, as Mixtral always does)
    return MixtralConfig(
        vocab_size=v, hidden_size=48, intermediate_size=40, num_local_experts=5, num_experts_per_tok=3,
        num_hidden_layers=2, num_attention_heads=6, num_key_value_heads=2, max_position_embeddings=128,
        rms_norm_eps=1e-6, initializer_range=INIT_STD, sliding_window=None, tie_word_embeddings=False,
        bos_token_id=bos, eos_token_id=eos, pad_token_id=pad,
    )


def cfg_phimoe(v, tok):
    from transformers import PhimoeConfig

    bos, eos, pad = _ids(tok)
    # Phi-3.5-MoE's block: LayerNorms, q/k/v/o and LM head biases, 5 experts (sparsemixer picks 2, each
    # weighed by a softmax over the logits within 2 x router_jitter_noise of it: 0.2 here, so that
    # neighbours join it often), LongRoPE with short/long factors and one mscale for cos and sin
    return PhimoeConfig(
        vocab_size=v, hidden_size=48, intermediate_size=40, num_local_experts=5, num_experts_per_tok=2,
        num_hidden_layers=2, num_attention_heads=6, num_key_value_heads=2, max_position_embeddings=128,
        rms_norm_eps=1e-5, initializer_range=INIT_STD, sliding_window=None, tie_word_embeddings=False,
        attention_bias=True, lm_head_bias=True, router_jitter_noise=0.2,
        rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0, "short_factor": [1.0, 1.3, 2.1, 3.7],
                         "long_factor": [1.2, 2.5, 4.0, 6.5], "short_mscale": 1.25, "long_mscale": 1.25,
                         "original_max_position_embeddings": 64},
        bos_token_id=bos, eos_token_id=eos, pad_token_id=pad,
    )


def cfg_qwen2_moe(v, tok):
    from transformers import Qwen2MoeConfig

    bos, eos, pad = _ids(tok)
    # 8 experts, 2 a token; a shared expert of width 56 behind its sigmoid gate; every 2nd layer
    # sparse (decoder_sparse_step 2), layers 0 and 2 dense; q/k/v biases
    return Qwen2MoeConfig(
        vocab_size=v, hidden_size=48, intermediate_size=64, moe_intermediate_size=40, shared_expert_intermediate_size=56,
        num_experts=8, num_experts_per_tok=2, norm_topk_prob=False, decoder_sparse_step=2, num_hidden_layers=3,
        num_attention_heads=6, num_key_value_heads=2, max_position_embeddings=128, rms_norm_eps=1e-6,
        initializer_range=INIT_STD, rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}, qkv_bias=True,
        tie_word_embeddings=False, bos_token_id=bos, eos_token_id=eos, pad_token_id=pad,
    )


def zeroed(part):
    """An ablation: the parameters whose name contains `part` zeroed (a shared expert's output
    projection switches it off), as a model patch."""
    def switch_off(cfg):
        def patch(model):
            with torch.no_grad():
                for name, p in model.named_parameters():
                    if part in name:
                        p.zero_()
        return patch
    return switch_off


def cfg_olmoe(v, tok):
    from transformers import OlmoeConfig

    bos, eos, pad = _ids(tok)
    # 9 experts, 4 a token, renormalised; q/k norms over the whole projection
    return OlmoeConfig(
        vocab_size=v, hidden_size=48, intermediate_size=40, num_experts=9, num_experts_per_tok=4, norm_topk_prob=True,
        num_hidden_layers=2, num_attention_heads=6, num_key_value_heads=2, max_position_embeddings=128,
        rms_norm_eps=1e-5, initializer_range=INIT_STD, rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        clip_qkv=None, tie_word_embeddings=False, bos_token_id=bos, eos_token_id=eos, pad_token_id=pad,
    )


def cfg_granitemoe(v, tok):
    from transformers import GraniteMoeConfig

    bos, eos, pad = _ids(tok)
    # Granite's multipliers (as the granite fixture), 6 experts, 1 a token; tied head
    return GraniteMoeConfig(
        vocab_size=v, hidden_size=48, intermediate_size=40, num_local_experts=6, num_experts_per_tok=1,
        num_hidden_layers=2, num_attention_heads=6, num_key_value_heads=2, max_position_embeddings=64,
        rms_norm_eps=1e-5, initializer_range=INIT_STD, rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        tie_word_embeddings=True, embedding_multiplier=3.0, residual_multiplier=0.6, attention_multiplier=0.2,
        logits_scaling=2.5, bos_token_id=bos, eos_token_id=eos, pad_token_id=pad,
    )


def cfg_gpt_oss(v, tok):
    from transformers import GptOssConfig

    bos, eos, pad = _ids(tok)
    # 5 experts, 3 a token (softmax over the chosen router logits); heads 4 / kv heads 2; 4 layers
    # sliding (window 5, under the prompt's length) and full in turn; YaRN factor 4 over 32
    # positions; the SwiGLU clamped at 3 (7 by default: rarely reached by these activations)
    return GptOssConfig(
        vocab_size=v, hidden_size=48, intermediate_size=40, num_local_experts=5, num_experts_per_tok=3,
        num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2, head_dim=12, sliding_window=5,
        max_position_embeddings=128, rms_norm_eps=1e-5, initializer_range=INIT_STD, swiglu_limit=3.0,
        rope_parameters={"rope_type": "yarn", "rope_theta": 150000.0, "factor": 4.0, "beta_fast": 32.0, "beta_slow": 1.0,
                         "truncate": False, "original_max_position_embeddings": 32},
        tie_word_embeddings=False, bos_token_id=bos, eos_token_id=eos, pad_token_id=pad,
    )


def cfg_llama4(v, tok):
    from transformers import Llama4TextConfig

    bos, eos, pad = _ids(tok)
    # 4 layers: layer 2 rotates nothing (no_rope_layer_interval 3) and its q takes the attention
    # temperature (floor_scale 3: it grows past position 2); the others rotate pairs (llama3 scaling)
    # with the L2 qk-norm and attend within chunks of 4; layers 1 and 3 mixtures (interleave 2) of
    # 5 experts, 1 a token, beside the shared expert (width 40); the dense MLP 64 wide
    return Llama4TextConfig(
        vocab_size=v, hidden_size=48, intermediate_size=40, intermediate_size_mlp=64, num_hidden_layers=4,
        num_attention_heads=4, num_key_value_heads=2, head_dim=12, max_position_embeddings=128, rms_norm_eps=1e-5,
        initializer_range=INIT_STD, num_local_experts=5, num_experts_per_tok=1, interleave_moe_layer_step=2,
        no_rope_layer_interval=3, attention_chunk_size=4, floor_scale=3, attn_scale=0.5,
        rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
                         "high_freq_factor": 4.0, "original_max_position_embeddings": 16},
        tie_word_embeddings=False, bos_token_id=bos, eos_token_id=eos, pad_token_id=pad,
    )


def cfg_llama4_multimodal(v, tok):
    """Llama 4 Scout's and Maverick's checkpoint: Llama4ForConditionalGeneration, the text model above
    beside a tiny vision model and its projector (whose tensors the text model never reads)."""
    from transformers import Llama4Config

    bos, eos, pad = _ids(tok)
    vision = dict(hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32, vision_output_dim=16,
                  projector_input_dim=16, projector_output_dim=48, image_size=28, patch_size=14)
    return Llama4Config(text_config=cfg_llama4(v, tok).to_dict(), vision_config=vision, image_token_index=v,
                        boi_token_index=v + 1, eoi_token_index=v + 2)  # image tokens past the text vocabulary


def gpt_oss_tweak(model):
    """Routers x2 (routing far from ties) and q, k x0.6: softer attention over its 4 layers, so that
    the order of a sum over ranks moves the logits by less than the ranks' tolerance."""
    scale_routers(model)
    scale_params({"q_proj.weight": 0.6, "k_proj.weight": 0.6})(model)


def without_sinks(cfg):
    """The attention sinks at -inf (no term of theirs in any softmax), as a model patch."""
    def patch(model):
        with torch.no_grad():
            for name, p in model.named_parameters():
                if name.endswith("self_attn.sinks"):
                    p.fill_(-float("inf"))
    return patch


def cfg_granitemoeshared(v, tok):
    from transformers import GraniteMoeSharedConfig

    bos, eos, pad = _ids(tok)
    # granitemoe's multipliers; 7 experts (uneven on 2 and 3 ranks), 2 a token, and a shared MLP of
    # width 56 (uneven on 3 ranks); 6 heads / 2 KV heads; untied head
    return GraniteMoeSharedConfig(
        vocab_size=v, hidden_size=48, intermediate_size=40, num_local_experts=7, num_experts_per_tok=2,
        shared_intermediate_size=56, num_hidden_layers=2, num_attention_heads=6, num_key_value_heads=2,
        max_position_embeddings=64, rms_norm_eps=1e-5, initializer_range=INIT_STD,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, tie_word_embeddings=False,
        embedding_multiplier=3.0, residual_multiplier=0.6, attention_multiplier=0.2, logits_scaling=2.5,
        bos_token_id=bos, eos_token_id=eos, pad_token_id=pad,
    )


def scale_routers(model, factor=ROUTER_SCALE):
    for name, p in model.named_parameters():
        if name.endswith(("mlp.gate.weight", "block_sparse_moe.gate.weight", "router.layer.weight", "router.weight")):
            p.mul_(factor)


def deepseek_choice_margin(router, logits) -> float:
    """DeepSeek's routing margins from its router logits: between the topk_group-th and next group
    score where groups limit the choice, and between the k-th and (k+1)-th choice score among the
    kept groups' experts (the scores: V3's sigmoid plus its choice bias; V2's softmax, which orders
    the experts as the logits do, so measured on those: tiny probabilities are not ties)."""
    v3 = hasattr(router, "e_score_correction_bias")
    scores = (logits.float().sigmoid() + router.e_score_correction_bias if v3 else logits.float()).detach()
    margins = []
    groups = router.num_group or 1
    if groups > 1 and (v3 or router.topk_method == "group_limited_greedy"):
        grouped = scores.view(-1, groups, scores.shape[-1] // groups)
        group_scores = grouped.topk(2, dim=-1).values.sum(-1) if v3 else grouped.max(-1).values
        if router.topk_group < groups:
            top = group_scores.topk(router.topk_group + 1, dim=-1)
            margins.append(float((top.values[:, -2] - top.values[:, -1]).min()))
            kept = torch.zeros_like(group_scores, dtype=torch.bool).scatter_(1, top.indices[:, :-1], True)
            scores = scores.masked_fill(~kept.repeat_interleave(grouped.shape[-1], dim=1), float("-inf"))
    top = scores.topk(router.top_k + 1, dim=-1).values
    gap = top[:, -2] - top[:, -1]
    margins.append(float(gap[torch.isfinite(gap)].min()) if torch.isfinite(gap).any() else float("inf"))
    return min(margins)


def routing_margin(model, prompt_ids, eos, pad) -> float:
    """The smallest gap between the k-th and (k+1)-th router logit over every token and sparse
    layer of the prompt and the greedy run (a near tie would make the routing a matter of rounding)."""
    margins = []

    def hook(module, args, output):
        logits = output[0] if isinstance(output, tuple) else output
        top = torch.topk(logits.float(), module.top_k + 1, dim=-1).values
        margins.append(float((top[:, -2] - top[:, -1]).min()))

    def deepseek_hook(module, args, output):
        margins.append(deepseek_choice_margin(module, output[0]))

    def llama4_hook(module, args, output):  # (scores, logits): the choice is made on the logits
        top = torch.topk(output[1].float(), module.top_k + 1, dim=-1).values
        margins.append(float((top[:, -2] - top[:, -1]).min()))

    handles = [m.register_forward_hook(hook) for m in model.modules() if type(m).__name__.endswith("TopKRouter")]
    handles += [m.register_forward_hook(llama4_hook) for m in model.modules() if type(m).__name__ == "Llama4Router"]
    handles += [m.register_forward_hook(deepseek_hook) for m in model.modules() if type(m).__name__.endswith("TopkRouter")]
    assert handles, "no router found"
    greedy_generate(model, prompt_ids, eos, pad)
    for h in handles:
        h.remove()
    return min(margins)


def cfg_qwen3(v, tok, window=False):
    from transformers import Qwen3Config

    bos, eos, pad = _ids(tok)
    # head_dim 12, not hidden / heads = 8: q is [72], k and v [24]; with window, 3 layers, the
    # window (8, shorter than the prompt) from layer 1 on, and q/k/v/o biases
    return Qwen3Config(
        vocab_size=v, hidden_size=48, intermediate_size=64, num_hidden_layers=3 if window else 2, num_attention_heads=6,
        num_key_value_heads=2, head_dim=12, max_position_embeddings=128, rms_norm_eps=1e-6, initializer_range=INIT_STD,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}, use_sliding_window=window,
        sliding_window=8, max_window_layers=1, attention_bias=window, tie_word_embeddings=not window,
        bos_token_id=bos, eos_token_id=eos, pad_token_id=pad,
    )


def cfg_qwen3_window_bias(v, tok):
    return cfg_qwen3(v, tok, window=True)


def cfg_olmo(v, tok, clip=None):
    from transformers import OlmoConfig

    bos, eos, pad = _ids(tok)
    return OlmoConfig(
        vocab_size=v, hidden_size=48, intermediate_size=64, num_hidden_layers=2, num_attention_heads=6,
        num_key_value_heads=2, max_position_embeddings=128, initializer_range=INIT_STD,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, attention_bias=clip is not None,
        clip_qkv=clip, tie_word_embeddings=False, bos_token_id=bos, eos_token_id=eos, pad_token_id=pad,
    )


def cfg_olmo_clip(v, tok):
    # q, k, v of this tiny model reach about 10: a limit of 3 clips many of them
    return cfg_olmo(v, tok, clip=3.0)


def cfg_smollm3(v, tok, window=False):
    from transformers import SmolLM3Config

    bos, eos, pad = _ids(tok)
    # 3 layers, layer 1 without rotary (a list unlike the every-4th default); with window, 4 layers,
    # every 2nd without rotary (no_rope_layer_interval 2) and those windowed (sliding_window 8)
    return SmolLM3Config(
        vocab_size=v, hidden_size=48, intermediate_size=64, num_hidden_layers=4 if window else 3,
        num_attention_heads=6, num_key_value_heads=2, max_position_embeddings=128, rms_norm_eps=1e-6,
        initializer_range=INIT_STD, rope_parameters={"rope_type": "default", "rope_theta": 2000000.0},
        no_rope_layers=None if window else [1, 0, 1], no_rope_layer_interval=2 if window else 4,
        use_sliding_window=window, sliding_window=8 if window else None, tie_word_embeddings=not window,
        bos_token_id=bos, eos_token_id=eos, pad_token_id=pad,
    )


def cfg_smollm3_window(v, tok):
    return cfg_smollm3(v, tok, window=True)


def cfg_olmo2(v, tok, bias=False):
    from transformers import Olmo2Config

    bos, eos, pad = _ids(tok)
    # 6 query heads / 2 key-value heads: on 4 ranks the query heads split 1, 2, 1, 2 and key-value
    # head 0 sits on ranks 0 and 1 (counted once in the k norm's statistics)
    return Olmo2Config(
        vocab_size=v, hidden_size=48, intermediate_size=64, num_hidden_layers=2, num_attention_heads=6,
        num_key_value_heads=2, max_position_embeddings=128, rms_norm_eps=1e-6, initializer_range=INIT_STD,
        rope_parameters={"rope_type": "default", "rope_theta": 500000.0}, attention_bias=bias,
        tie_word_embeddings=False, bos_token_id=bos, eos_token_id=eos, pad_token_id=pad,
    )


def cfg_olmo2_bias(v, tok):
    return cfg_olmo2(v, tok, bias=True)


def per_head_qk_norm(cfg):
    """Qwen3's qk-norm in place of OLMo 2's: q and k RMSNormed per head, the same gains reused for
    every head's slice (the statistics per head, not over the whole projection)."""
    def patch(model):
        for layer in model.model.layers:
            attn = layer.self_attn
            for name in ("q_norm", "k_norm"):
                norm = getattr(attn, name)
                hd = attn.head_dim
                weight = norm.weight.detach().clone()
                eps = norm.variance_epsilon

                def per_head(x, weight=weight, eps=eps, hd=hd):
                    shape = x.shape
                    h = x.view(*shape[:-1], -1, hd).float()
                    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
                    return weight * h.view(shape)
                norm.forward = per_head
    return patch


def cfg_codegen(v, tok):
    from transformers import CodeGenConfig

    bos, eos, _ = _ids(tok)
    return CodeGenConfig(
        vocab_size=v, n_positions=64, n_ctx=64, n_embd=72, n_layer=2, n_head=12, rotary_dim=4, n_inner=64,
        activation_function="gelu_new", initializer_range=INIT_STD, bos_token_id=bos, eos_token_id=eos,
        tie_word_embeddings=False,
    )


def cfg_openai(v, tok):
    from transformers import OpenAIGPTConfig

    return OpenAIGPTConfig(
        vocab_size=v, n_positions=64, n_embd=48, n_layer=2, n_head=6, afn="gelu", initializer_range=INIT_STD,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
    )


def cfg_ctrl(v, tok):
    from transformers import CTRLConfig

    return CTRLConfig(
        vocab_size=v, n_positions=64, n_embd=48, dff=96, n_layer=2, n_head=6, initializer_range=INIT_STD,
        resid_pdrop=0.0, embd_pdrop=0.0,
    )


def cfg_gpt_bigcode(v, tok, multi_query=True):
    from transformers import GPTBigCodeConfig

    bos, eos, _ = _ids(tok)
    return GPTBigCodeConfig(
        vocab_size=v, n_positions=64, n_embd=48, n_layer=2, n_head=6, n_inner=96, multi_query=multi_query,
        activation_function="gelu_pytorch_tanh", initializer_range=INIT_STD, bos_token_id=bos, eos_token_id=eos,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
    )


def cfg_gpt_bigcode_mha(v, tok):
    return cfg_gpt_bigcode(v, tok, multi_query=False)


def cfg_phi3(v, tok):
    from transformers import Phi3Config

    bos, eos, pad = _ids(tok)
    return Phi3Config(
        vocab_size=v, hidden_size=48, intermediate_size=64, num_hidden_layers=2, num_attention_heads=6,
        num_key_value_heads=2, max_position_embeddings=128, original_max_position_embeddings=128, rms_norm_eps=1e-5,
        initializer_range=INIT_STD, sliding_window=8,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5},
        tie_word_embeddings=False, bos_token_id=bos, eos_token_id=eos, pad_token_id=pad,
    )


def cfg_phi3_longrope(v, tok, n_prompt):
    # Phi-3.5's LongRoPE at tiny size: the prompt within original_max_position_embeddings (short
    # factors), generation past it, where Phi-3's generate() drops the cache and recomputes every
    # position with the long factors (partial rotary: 4 of 8 dims, so 2 factors each)
    config = cfg_phi3(v, tok)
    original = n_prompt + 5
    config.original_max_position_embeddings = original
    config.max_position_embeddings = 4 * original
    config.rope_parameters = {"rope_type": "longrope", "short_factor": [1.0, 2.5], "long_factor": [1.5, 9.0],
                              "original_max_position_embeddings": original, "rope_theta": 10000.0,
                              "partial_rotary_factor": 0.5}
    config.sliding_window = None
    return config


def cfg_phi(v, tok, qk_layernorm=False):
    from transformers import PhiConfig

    bos, eos, pad = _ids(tok)
    return PhiConfig(
        vocab_size=v, hidden_size=48, intermediate_size=96, num_hidden_layers=2, num_attention_heads=6,
        num_key_value_heads=2, max_position_embeddings=128, layer_norm_eps=1e-5, hidden_act="gelu_new",
        initializer_range=INIT_STD, qk_layernorm=qk_layernorm,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5},
        tie_word_embeddings=False, bos_token_id=bos, eos_token_id=eos, pad_token_id=pad,
    )


def cfg_phi_qk_layernorm(v, tok):
    return cfg_phi(v, tok, qk_layernorm=True)


def cfg_starcoder2(v, tok):
    from transformers import Starcoder2Config

    bos, eos, pad = _ids(tok)
    return Starcoder2Config(
        vocab_size=v, hidden_size=48, intermediate_size=96, num_hidden_layers=2, num_attention_heads=6,
        num_key_value_heads=2, max_position_embeddings=128, norm_epsilon=1e-5, hidden_act="gelu_pytorch_tanh",
        initializer_range=INIT_STD, sliding_window=8, use_bias=True,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        tie_word_embeddings=False, bos_token_id=bos, eos_token_id=eos, pad_token_id=pad,
    )


def cfg_falcon(v, tok, **kw):
    from transformers import FalconConfig

    bos, eos, pad = _ids(tok)
    args = dict(
        vocab_size=v, hidden_size=48, num_hidden_layers=2, num_attention_heads=6, ffn_hidden_size=96,
        max_position_embeddings=128, layer_norm_epsilon=1e-5, activation="gelu", initializer_range=INIT_STD,
        alibi=False, new_decoder_architecture=False, multi_query=True, parallel_attn=True, bias=False,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, tie_word_embeddings=False,
        bos_token_id=bos, eos_token_id=eos, pad_token_id=pad,
    )
    args.update(kw)
    return FalconConfig(**args)


def cfg_falcon_new(v, tok):
    return cfg_falcon(v, tok, new_decoder_architecture=True, num_kv_heads=2)


def cfg_falcon_new_one_norm(v, tok):
    return cfg_falcon(v, tok, new_decoder_architecture=True, num_kv_heads=3, num_ln_in_parallel_attn=1, bias=True)


def cfg_falcon_sequential(v, tok):
    return cfg_falcon(v, tok, multi_query=False, parallel_attn=False, bias=True)


def cfg_falcon_alibi(v, tok):
    # Falcon-RW-1B's shape: ALiBi instead of the rotary, sequential blocks, a k and v per head, biases;
    # 12 heads, so that 4 slopes are odd powers of 2^-0.5, whose bf16 rounding shows (powers of two
    # times positions below 256 are exact in bf16)
    return cfg_falcon(v, tok, alibi=True, multi_query=False, parallel_attn=False, bias=True, hidden_size=96,
                      num_attention_heads=12)


def cfg_stablelm(v, tok, parallel=False, qkv_bias=True, qk_layernorm=False):
    from transformers import StableLmConfig

    bos, eos, pad = _ids(tok)
    return StableLmConfig(
        vocab_size=v, hidden_size=48, intermediate_size=64, num_hidden_layers=2, num_attention_heads=6,
        num_key_value_heads=2, max_position_embeddings=128, layer_norm_eps=1e-5, hidden_act="silu",
        initializer_range=INIT_STD, use_qkv_bias=qkv_bias, qk_layernorm=qk_layernorm, use_parallel_residual=parallel,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25},
        tie_word_embeddings=False, bos_token_id=bos, eos_token_id=eos, pad_token_id=pad,
    )


def cfg_stablelm_parallel(v, tok):
    return cfg_stablelm(v, tok, parallel=True, qkv_bias=False)


def cfg_stablelm_qk_layernorm(v, tok):
    """StableLM 2 12B's block: parallel, no q/k/v biases, a LayerNorm without bias for each q and k head."""
    return cfg_stablelm(v, tok, parallel=True, qkv_bias=False, qk_layernorm=True)


def cfg_cohere(v, tok, qk_norm=False):
    from transformers import CohereConfig

    bos, eos, pad = _ids(tok)
    return CohereConfig(
        vocab_size=v, hidden_size=48, intermediate_size=64, num_hidden_layers=2, num_attention_heads=6,
        num_key_value_heads=2, max_position_embeddings=128, layer_norm_eps=1e-5, hidden_act="silu",
        initializer_range=INIT_STD, logit_scale=0.5, attention_bias=True, use_qk_norm=qk_norm,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        tie_word_embeddings=True, bos_token_id=bos, eos_token_id=eos, pad_token_id=pad,
    )


def cfg_cohere_qk_norm(v, tok):
    return cfg_cohere(v, tok, qk_norm=True)


def cfg_cohere2(v, tok):
    from transformers import Cohere2Config

    bos, eos, pad = _ids(tok)
    # 3 layers, pattern 3: sliding (rotary), sliding (rotary), full (no positions)
    return Cohere2Config(
        vocab_size=v, hidden_size=48, intermediate_size=64, num_hidden_layers=3, num_attention_heads=6,
        num_key_value_heads=2, max_position_embeddings=128, layer_norm_eps=1e-5, hidden_act="silu",
        initializer_range=INIT_STD, logit_scale=0.5, attention_bias=False, sliding_window=8,
        sliding_window_pattern=3, rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        tie_word_embeddings=True, bos_token_id=bos, eos_token_id=eos, pad_token_id=pad,
    )


def cfg_deepseek_v2(v, tok, **changes):
    # Multi-head latent attention with q straight from q_proj (q_lora_rank null); 5 heads (not a
    # multiple of 2 or 3 ranks); qk head 8 + 4 rotary dims, v head 6; YaRN with mscale_all_dim (the
    # softmax scale times mscale^2); all layers dense (first_k_dense_replace = num_hidden_layers).
    from transformers import DeepseekV2Config

    bos, eos, pad = _ids(tok)
    rope = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32, "rope_theta": 10000.0,
            "beta_fast": 32.0, "beta_slow": 1.0, "mscale": 0.707, "mscale_all_dim": 0.707}
    settings = dict(
        vocab_size=v, hidden_size=40, intermediate_size=64, num_hidden_layers=2, num_attention_heads=5,
        num_key_value_heads=5, max_position_embeddings=128, rms_norm_eps=1e-5, initializer_range=INIT_STD,
        q_lora_rank=None, kv_lora_rank=12, qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=6,
        first_k_dense_replace=2, rope_parameters=rope, tie_word_embeddings=False,
        bos_token_id=bos, eos_token_id=eos, pad_token_id=pad,
    )
    return DeepseekV2Config(**dict(settings, **changes))


def cfg_deepseek_v3(v, tok, **changes):
    # Latent attention with low-rank q (q_a_proj, q_a_layernorm, q_b_proj), attention biases,
    # interleaved rotary pairs (rope_interleave), 5 heads, plain rope; all layers dense.
    from transformers import DeepseekV3Config

    bos, eos, pad = _ids(tok)
    settings = dict(
        vocab_size=v, hidden_size=40, intermediate_size=64, num_hidden_layers=2, num_attention_heads=5,
        num_key_value_heads=5, max_position_embeddings=128, rms_norm_eps=1e-5, initializer_range=INIT_STD,
        q_lora_rank=16, kv_lora_rank=12, qk_nope_head_dim=6, qk_rope_head_dim=4, v_head_dim=12,
        first_k_dense_replace=2, attention_bias=True, rope_interleave=True,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, tie_word_embeddings=False,
        bos_token_id=bos, eos_token_id=eos, pad_token_id=pad,
    )
    return DeepseekV3Config(**dict(settings, **changes))


def cfg_deepseek_v2_moe(v, tok):
    # V2's latent attention (as deepseek_v2) and 3 layers: layer 0 dense (first_k_dense_replace 1),
    # layers 1-2 mixtures: 8 experts of width 16 (uneven on 3 ranks), 3 a token from softmax scores
    # within the 2 best of 4 groups (group_limited_greedy: a group scored by its best), times
    # routed_scaling_factor 1.5, and 2 shared experts (one ungated MLP of width 32)
    return cfg_deepseek_v2(v, tok, num_hidden_layers=3, first_k_dense_replace=1, n_routed_experts=8,
                           num_experts_per_tok=3, moe_intermediate_size=16, n_shared_experts=2,
                           routed_scaling_factor=1.5, topk_method="group_limited_greedy", n_group=4, topk_group=2,
                           rope_parameters={"rope_type": "default", "rope_theta": 10000.0})


def cfg_deepseek_v3_moe(v, tok):
    # V3's latent attention (as deepseek_v3) and 3 layers: layer 0 dense, layers 1-2 mixtures: 8
    # experts of width 16, 2 a token chosen by sigmoid score + e_score_correction_bias within the 2
    # best of 4 groups (a group scored by its 2 best), weighed by their scores renormalised, times
    # routed_scaling_factor 2.5, and 1 shared expert
    return cfg_deepseek_v3(v, tok, num_hidden_layers=3, first_k_dense_replace=1, n_routed_experts=8,
                           num_experts_per_tok=2, moe_intermediate_size=16, n_shared_experts=1,
                           routed_scaling_factor=2.5, n_group=4, topk_group=2, norm_topk_prob=True)


def deepseek_router_tweak(model):
    """Router weights x ROUTER_SCALE (clear margins) and, for V3, a choice bias that moves choices."""
    scale_routers(model)
    gen = torch.Generator().manual_seed(77)
    for name, b in model.named_buffers():
        if name.endswith("e_score_correction_bias"):
            b.copy_(0.3 * torch.randn(b.shape, generator=gen))  # a buffer: saved, not randomized


def deepseek_v3_router_tweak(model):
    """V3's sigmoid saturates under large router logits (choice scores then differ by less than bf16
    moves them): router weights x 1/8, and a wider choice bias."""
    scale_routers(model, 0.125)
    gen = torch.Generator().manual_seed(77)
    for name, b in model.named_buffers():
        if name.endswith("e_score_correction_bias"):
            b.copy_(0.5 * torch.randn(b.shape, generator=gen))


def without_choice_bias(cfg):
    def patch(model):
        with torch.no_grad():
            for name, b in model.named_buffers():
                if name.endswith("e_score_correction_bias"):
                    b.zero_()
    return patch


def without_groups(cfg):
    """Every group kept (topk_group = n_group): the group limit switched off."""
    cfg.topk_group = cfg.n_group


# --- ways to switch one trait off (applied to the config loaded from the dir) ---


# --- issue 9: config keys that change the math, and older spellings of them ---


def cfg_gpt_neo_types(v, tok):
    # local first, so that the default ("global", "local") order and the all-global reading differ
    cfg = cfg_gpt_neo(v, tok)
    cfg.attention_types = [[["local", "global"], 1]]
    cfg.attention_layers = ["local", "global"]
    return cfg


def cfg_bloom_post_ln(v, tok):
    cfg = cfg_bloom(v, tok)
    cfg.apply_residual_connection_post_layernorm = True
    return cfg


def cfg_llama_biases(v, tok):
    cfg = cfg_llama(v, tok)
    cfg.mlp_bias = True
    cfg.attention_bias = True
    return cfg


def cfg_qwen2_window_layers(v, tok):
    from transformers import Qwen2Config

    bos, eos, pad = _ids(tok)
    # 3 layers, the window (8, shorter than the prompt) from layer 1 on: transformers derives
    # layer_types [full, sliding, sliding] from use_sliding_window and max_window_layers
    return Qwen2Config(
        vocab_size=v, hidden_size=48, intermediate_size=64, num_hidden_layers=3, num_attention_heads=6,
        num_key_value_heads=2, max_position_embeddings=128, rms_norm_eps=1e-6, initializer_range=INIT_STD,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, use_sliding_window=True,
        sliding_window=8, max_window_layers=1, tie_word_embeddings=False, bos_token_id=bos, eos_token_id=eos,
        pad_token_id=pad,
    )


def qwen3_hub_config(cfg: dict) -> dict:
    """config.json as the Qwen3 checkpoints on the hub spell it (transformers 4.51+): rope_theta and
    rope_scaling null at the top level, no layer_types, torch_dtype."""
    rope = cfg.pop("rope_parameters")
    cfg["rope_theta"] = rope["rope_theta"]
    cfg["rope_scaling"] = None
    cfg.pop("layer_types")
    cfg["torch_dtype"] = cfg.pop("dtype")
    return cfg


def drop_keys(*keys):
    """config.json as hub checkpoints older than the derived key spell it: the derived key left out."""
    def rewrite(cfg: dict) -> dict:
        for k in keys:
            cfg.pop(k)
        return cfg
    return rewrite


def set_attr(**kv):
    def apply(cfg):
        for k, v in kv.items():
            setattr(cfg, k, v)
    return apply


def exact_gelu(cfg):
    """OpenAI GPT's afn "gelu" is gelu_new (its own ACT_FNS, not ACT2FN); the exact gelu, which
    no config value selects, is patched into the model to show the fixture tells them apart."""
    def patch(model):
        for block in model.transformer.h:
            block.mlp.act = torch.nn.GELU()
    return patch


def without_qk_norm(cfg):
    """q and k unnormed (Qwen3's q_norm, k_norm replaced by the identity), which no config value selects."""
    def patch(model):
        for layer in model.model.layers:
            layer.self_attn.q_norm = torch.nn.Identity()
            layer.self_attn.k_norm = torch.nn.Identity()
    return patch


def shared_qk_gains(cfg):
    """Every head's q (k) LayerNorm gain replaced by head 0's: the per-head gains' effect."""
    def patch(model):
        with torch.no_grad():
            for layer in model.model.layers:
                for name in ("q_norm", "k_norm"):
                    w = getattr(layer.self_attn, name).weight
                    w.copy_(w[0:1].expand_as(w))
    return patch


def phi_no_qk_norm_bias(cfg):
    """Phi's q and k LayerNorms without their biases: the biases' effect."""
    def patch(model):
        with torch.no_grad():
            for layer in model.model.layers:
                layer.self_attn.q_layernorm.bias.zero_()
                layer.self_attn.k_layernorm.bias.zero_()
    return patch


def set_rope(**kv):
    def apply(cfg):
        cfg.rope_parameters = dict(cfg.rope_parameters, **kv)
    return apply


def plain_rope(cfg):
    cfg.rope_parameters = {"rope_type": "default", "rope_theta": cfg.rope_parameters["rope_theta"]}


# --- config.json as older hub checkpoints spell it (transformers 5 writes rope_parameters) ---


def pythia_style_config(cfg: dict) -> dict:
    rope = cfg.pop("rope_parameters")
    assert rope["rope_type"] == "default", rope
    cfg["rotary_pct"] = rope["partial_rotary_factor"]
    cfg["rotary_emb_base"] = rope["rope_theta"]
    return cfg


def rope_scaling_style_config(type_key: str):
    """rope_theta at the top and rope_scaling with the scaling keys; type_key "type" (Llama 2 era)
    or "rope_type" (Llama 3.1)."""
    def rewrite(cfg: dict) -> dict:
        rope = dict(cfg.pop("rope_parameters"))
        cfg["rope_theta"] = rope.pop("rope_theta")
        scaling = {type_key: rope.pop("rope_type")}
        scaling.update(rope)
        cfg["rope_scaling"] = scaling
        return cfg
    return rewrite


def save_tok(tok, out: Path, hub_class: str | None = None):
    """save_pretrained; hub_class replaces the tokenizer_class it writes (TokenizersBackend) with
    the one the family's hub repos name."""
    tok.save_pretrained(out)
    if hub_class:
        path = out / "tokenizer_config.json"
        cfg = json.loads(path.read_text(encoding="utf-8"))
        cfg["tokenizer_class"] = hub_class
        path.write_text(json.dumps(cfg, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return tok


def windows_everywhere(cfg):
    cfg.layer_types = ["sliding_attention"] * cfg.num_hidden_layers


GPT2_REGEX_STYLE = "byte-level BPE, GPT-2 regex (ByteLevel use_regex)"
LLAMA2_V5_STYLE = "LLaMA-2 SentencePiece-BPE, byte fallback; Metaspace pre-tokenizer (as transformers 5 writes it)"
LLAMA2_HUB_STYLE = "LLaMA-2 SentencePiece-BPE, byte fallback; Prepend+Replace normalizer (as the hub ships Mistral/Llama-2)"

FAMILIES = [
    dict(
        name="gpt_neo", config=cfg_gpt_neo, seed=100, vocab_pad=0, cases=True,
        tokenizer=lambda out: save_tok(gpt2_style_tokenizer(384), out), tok_style=GPT2_REGEX_STYLE + ", <|endoftext|> last",
        traits="learned positions; alternating global/local layers (window_size 8, current token included); "
               "no 1/sqrt(d) attention scaling; separate q/k/v without bias, out_proj with bias; gelu_new; tied head",
        ablations=[("local window off", set_attr(window_size=64))],
    ),
    dict(
        name="gptj", config=cfg_gptj, seed=200, vocab_pad=16, cases=False,
        tokenizer=lambda out: save_tok(gpt2_style_tokenizer(384), out), tok_style=GPT2_REGEX_STYLE + " (same as gpt_neo)",
        traits="interleaved (every-two) rotary on rotary_dim 4 of head_dim 8; parallel residual with one ln_1; "
               "no qkv/out bias; untied lm_head with bias; model vocab = tokenizer + 16",
        ablations=[("rotary over the full head", set_attr(rotary_dim=8))],
    ),
    dict(
        name="gpt_neox", config=cfg_gpt_neox, seed=300, vocab_pad=0, cases=True,
        tokenizer=lambda out: save_tok(neox_tokenizer(320), out), tok_style="byte-level BPE, GPT-2 regex, NFC normalizer (GPTNeoXTokenizer)",
        traits="fused query_key_value interleaved per head [q|k|v] of each head; rotary halves on 25% (4 of 16 dims); "
               "use_parallel_residual true (two norms); qkv/dense bias; untied embed_out",
        ablations=[("sequential residual", set_attr(use_parallel_residual=False)),
                   ("rotary on 50%", set_rope(partial_rotary_factor=0.5))],
    ),
    dict(
        name="gpt_neox-seq", config=cfg_gpt_neox_seq, seed=400, vocab_pad=0, cases=False,
        tokenizer=lambda out: save_tok(neox_tokenizer(320), out), tok_style="as gpt_neox",
        traits="as gpt_neox but use_parallel_residual false and rotary on 50% (4 of 8 dims); config.json in the "
               "Pythia hub spelling (rotary_pct, rotary_emb_base; no rope_parameters)",
        ablations=[("parallel residual", set_attr(use_parallel_residual=True)),
                   ("rotary on 100%", set_rope(partial_rotary_factor=1.0))],
        legacy=pythia_style_config,
    ),
    dict(
        name="opt", config=cfg_opt, seed=500, vocab_pad=8, cases=True, cases_special=True,
        tokenizer=lambda out: save_tok(opt_tokenizer(384), out),
        tok_style="byte-level BPE, GPT-2 regex; <s> <pad> </s> <unk> = 0..3; </s> prepended as BOS (TemplateProcessing)",
        traits="learned positions offset by 2; do_layer_norm_before true with final_layer_norm; relu; q/k/v/out bias; "
               "tied head; model vocab = tokenizer + 8",
        ablations=[],
    ),
    dict(
        name="opt-350m-style", config=cfg_opt_350m, seed=600, vocab_pad=8, cases=False,
        tokenizer=lambda out: save_tok(opt_tokenizer(384), out), tok_style="as opt",
        traits="word_embed_proj_dim 32 != hidden 48 (project_in / project_out, no bias); do_layer_norm_before false "
               "(post-norm, no final_layer_norm); positions offset by 2",
        ablations=[],
    ),
    dict(
        name="bloom", config=cfg_bloom, seed=700, vocab_pad=0, cases=True,
        tokenizer=lambda out: save_tok(bloom_tokenizer(384)[0], out, "BloomTokenizerFast"),
        tok_style="byte-level BPE behind Split on BLOOM's regex ` ?[^(\\s|[.,!?…。，、।۔،])]+` (also splits ( ) |); "
                  "<unk> <s> </s> <pad> = 0..3; no BOS added (TokenizersBackend, tokenizer_class BloomTokenizerFast)",
        traits="ALiBi with 6 heads (not a power of 2: extra interleaved slopes); word_embeddings_layernorm; fused "
               "query_key_value interleaved per head; gelu (tanh form); tied head",
        ablations=[],
    ),
    dict(
        name="llama", config=cfg_llama, seed=800, vocab_pad=0, cases=True, cases_special=True,
        tokenizer=lambda out: save_tok(llama2_tokenizer(512), out), tok_style=LLAMA2_V5_STYLE,
        traits="RMSNorm; SwiGLU; rotary halves over the full head_dim 8; GQA 6 q heads / 2 kv heads; untied lm_head",
        ablations=[],
    ),
    dict(
        name="llama-rope-linear", config=cfg_llama_linear, seed=900, vocab_pad=0, cases=False,
        tokenizer=lambda out: save_tok(llama2_tokenizer(512), out), tok_style="as llama",
        traits="llama + rope_parameters linear, factor 2 (positions divided by 2)",
        ablations=[("plain rope", plain_rope)],
    ),
    dict(
        name="llama-rope-dynamic", config=cfg_llama_dynamic, seed=1000, vocab_pad=0, cases=False, dynamic=True,
        tokenizer=lambda out: save_tok(llama2_tokenizer(512), out), tok_style="as llama",
        traits="llama + dynamic NTK rope, factor 2, max_position_embeddings 4 below the prompt length (scaled "
               "already for the prompt logits, rescaled at every generated token); config.json in the Llama-2 hub "
               "spelling (rope_theta + rope_scaling {type: dynamic})",
        ablations=[("plain rope", plain_rope)],
        legacy=rope_scaling_style_config("type"),
    ),
    dict(
        name="llama3-rope", config=cfg_llama3, seed=1100, vocab_pad=0, cases=True, cases_special=True,
        tokenizer=lambda out: save_tok(llama3_tokenizer(384)[0], out, "PreTrainedTokenizerFast"),
        tok_style="LLaMA-3 byte-level BPE: Split on the LLaMA-3 regex + ByteLevel(use_regex false), ignore_merges, "
                  "11 specials at the end, <|begin_of_text|> added by TemplateProcessing (tokenizer_class "
                  "PreTrainedTokenizerFast)",
        traits="llama + rope llama3 (factor 8, low 1, high 4, original 256, theta 5e5: all three frequency bands "
               "hit); config.json in the Llama-3.1 hub spelling (rope_theta + rope_scaling {rope_type: llama3})",
        ablations=[("plain rope", plain_rope)],
        legacy=rope_scaling_style_config("rope_type"),
    ),
    dict(
        name="llama-rope-yarn", beam_and_batch=True, config=cfg_llama_yarn, seed=1110, vocab_pad=0, cases=False,
        tokenizer=lambda out: save_tok(llama2_tokenizer(512), out), tok_style="as llama",
        traits="llama + rope yarn (factor 4, original 32, default betas, truncated ramp: one frequency kept, three "
               "interpolated; cos and sin times 0.1 ln 4 + 1)",
        ablations=[("plain rope", plain_rope), ("attention factor 1", set_rope(attention_factor=1.0))],
    ),
    dict(
        name="qwen2-rope-yarn", beam_and_batch=True, config=cfg_qwen2_yarn, seed=1120, vocab_pad=0, cases=False,
        tokenizer=lambda out: save_tok(qwen2_tokenizer(384), out), tok_style="as qwen2",
        traits="qwen2 + rope yarn in the hub spelling (rope_theta + rope_scaling {type: yarn}): factor 8, original 64, "
               "beta_fast 4, beta_slow 0.5, truncate false (a fractional ramp), mscale 1 / mscale_all_dim 0.5",
        ablations=[("plain rope", plain_rope), ("truncate true", set_rope(truncate=True)),
                   ("no mscale", set_rope(mscale=None, mscale_all_dim=None))],
        legacy=rope_scaling_style_config("type"),
    ),
    dict(
        name="llama-rope-longrope", beam_and_batch=True, config=cfg_llama_longrope_short, seed=1130, vocab_pad=0, cases=False, dynamic=True,
        tokenizer=lambda out: save_tok(llama2_tokenizer(512), out), tok_style="as llama",
        traits="llama + rope longrope (4 short and 4 long factors, original_max_position_embeddings = prompt + 5, "
               "max_position_embeddings 4x that: attention factor sqrt(1 + ln 4 / ln original)): prompt logits with "
               "the short factors; greedy steps past the original length rotate the new token with the long ones",
        ablations=[("plain rope", plain_rope), ("short factors 1", set_rope(short_factor=[1.0] * 4))],
    ),
    dict(
        name="llama-rope-longrope-long", beam_and_batch=True, config=cfg_llama_longrope_long, seed=1140, vocab_pad=0, cases=False,
        dynamic=True, tokenizer=lambda out: save_tok(llama2_tokenizer(512), out), tok_style="as llama",
        traits="llama + rope longrope with original_max_position_embeddings 4 below the prompt length: the long "
               "factors from the prompt on",
        ablations=[("plain rope", plain_rope), ("long factors 1", set_rope(long_factor=[1.0] * 4))],
    ),
    dict(
        name="granite", beam_and_batch=True, config=cfg_granite, seed=1150, vocab_pad=0, cases=False,
        tokenizer=lambda out: save_tok(gpt2_style_tokenizer(384), out), tok_style="as gpt_neo",
        traits="LLaMA's block (GQA 6/2, RMSNorm, SwiGLU, rotary halves) with embedding_multiplier 3, residual_multiplier "
               "0.6, attention_multiplier 0.2 (in place of 1/sqrt(8)), logits_scaling 2.5; tied head",
        ablations=[("embedding_multiplier 1", set_attr(embedding_multiplier=1.0)),
                   ("residual_multiplier 1", set_attr(residual_multiplier=1.0)),
                   ("attention_multiplier 1/sqrt(head_dim)", set_attr(attention_multiplier=8 ** -0.5)),
                   ("logits_scaling 1", set_attr(logits_scaling=1.0))],
    ),
    dict(
        name="mistral", config=cfg_mistral, seed=1200, vocab_pad=0, cases=True, cases_special=True,
        tokenizer=lambda out: save_tok(mistral_tokenizer(512)[0], out, "LlamaTokenizer"),
        tok_style=LLAMA2_HUB_STYLE,
        traits="sliding_window 8 (current token included) on every layer; GQA 6/2; RMSNorm; SwiGLU; rotary halves",
        ablations=[("no sliding window", set_attr(layer_types=["full_attention"] * 4))],
    ),
    dict(
        name="mistral3", config=cfg_mistral3, seed=1210, vocab_pad=0, cases=False, beam=True,
        tokenizer=lambda out: save_tok(mistral_tokenizer(512)[0], out, "LlamaTokenizer"),
        tok_style=LLAMA2_HUB_STYLE,
        traits="model_type mistral3 (Mistral3ForConditionalGeneration, as Mistral Small 3.1 / 3.2 ship): mistral's "
               "text model in text_config, saved under language_model.model. with language_model.lm_head, beside a "
               "Pixtral tower and projector that text generation never reads",
        ablations=[],
    ),
    dict(
        name="qwen2", config=cfg_qwen2, seed=1300, vocab_pad=0, cases=True,
        tokenizer=lambda out: save_tok(qwen2_tokenizer(384), out),
        tok_style="Qwen2 byte-level BPE: NFC, Split on Qwen2's regex (single digits) + ByteLevel; <|endoftext|> "
                  "<|im_start|> <|im_end|> at the end; no BOS",
        traits="q/k/v bias (no o bias); multi-query: 6 q heads / 1 kv head; tied embeddings; rope theta 1e6",
        ablations=[],
    ),
    dict(
        name="qwen3", config=cfg_qwen3, seed=2300, vocab_pad=0, cases=False, beam=True,
        tokenizer=lambda out: save_tok(qwen2_tokenizer(384), out), tok_style="as qwen2",
        traits="qk-norm: q and k RMSNormed per head (q_norm, k_norm [head_dim]) before the rotary; head_dim 12 "
               "explicit (hidden / heads is 8); GQA 6/2; no biases; tied embeddings; rope theta 1e6",
        ablations=[("no qk-norm", without_qk_norm)],
    ),
    dict(
        name="qwen3_moe", config=cfg_qwen3_moe, seed=5000, vocab_pad=0, cases=False, beam=True, moe=True,
        routing_margin=0.1,  # bf16 weights (CUDA's test) move its router logits by ~0.05
        tweak=scale_routers, tokenizer=lambda out: save_tok(qwen2_tokenizer(384), out), tok_style="as qwen2",
        traits="Qwen3's attention (qk-norm, GQA 6/2, head_dim 12); 7 experts of width 40, 2 a token, not "
               "renormalised; layer 1 dense (mlp_only_layers); experts saved per expert; router weights x2",
        ablations=[("renormalised top-k", set_attr(norm_topk_prob=True))],
    ),
    dict(
        name="qwen2_moe", config=cfg_qwen2_moe, seed=5400, vocab_pad=0, cases=False, beam=True, moe=True,
        tweak=scale_routers, tokenizer=lambda out: save_tok(qwen2_tokenizer(384), out), tok_style="as qwen2",
        traits="Qwen2's attention (q/k/v biases, GQA 6/2); layer 1 sparse (decoder_sparse_step 2): 8 experts of "
               "width 40, 2 a token, not renormalised, and a shared expert of width 56 scaled by "
               "sigmoid(shared_expert_gate); layers 0 and 2 dense; router weights x2",
        ablations=[("no shared expert", zeroed("shared_expert.down_proj"))],
    ),
    dict(
        name="mixtral", config=cfg_mixtral, seed=5100, vocab_pad=0, cases=False, beam=True, moe=True,
        tweak=scale_routers, tokenizer=lambda out: save_tok(mistral_tokenizer(512)[0], out, "LlamaTokenizer"),
        tok_style="as mistral",
        traits="Mistral's attention (GQA 6/2, no window); 5 experts (w1, w3, w2) of width 40, 3 a token, "
               "renormalised; router weights x2",
        ablations=[("2 experts a token", set_attr(num_experts_per_tok=2))],
    ),
    dict(
        name="phimoe", config=cfg_phimoe, seed=5160, vocab_pad=0, cases=False, beam=True, moe=True,
        tweak=scale_routers, tokenizer=lambda out: save_tok(mistral_tokenizer(512)[0], out, "LlamaTokenizer"),
        tok_style="as mistral",
        traits="Phi-3.5-MoE's block: LayerNorms with biases, q/k/v/o and LM head biases, GQA 6/2; 5 experts "
               "(w1, w3, w2) of width 40, sparsemixer's 2 a token (router_jitter_noise 0.2); LongRoPE (short "
               "factors within 64 positions) with mscale 1.25; router weights x2",
        ablations=[("no jitter", set_attr(router_jitter_noise=0.0)), ("no LM head bias", zeroed("lm_head.bias"))],
    ),
    dict(
        name="olmoe", config=cfg_olmoe, seed=5200, vocab_pad=0, cases=False, beam=True, moe=True,
        tweak=None,  # its 4 of 9 renormalised weights follow the logits closely: routers as initialised
        tokenizer=lambda out: save_tok(neox_tokenizer(384), out), tok_style="as gpt_neox",
        traits="LLaMA's pre-norm block, q and k RMSNormed over the whole projection; 9 experts of width 40, 4 a "
               "token, renormalised (norm_topk_prob); experts saved per expert",
        ablations=[("top-k not renormalised", set_attr(norm_topk_prob=False))],
    ),
    dict(
        name="granitemoe", config=cfg_granitemoe, seed=5300, vocab_pad=0, cases=False, beam=True, moe=True,
        tweak=scale_routers, tokenizer=lambda out: save_tok(gpt2_style_tokenizer(384), out), tok_style="as gpt_neo",
        traits="Granite's multipliers (embedding 3, residual 0.6, attention 0.2, logits 2.5); 6 experts of width 40, "
               "1 a token; experts fused as saved (input_linear [6, 80, 48], output_linear [6, 48, 40]); tied head; "
               "router weights x2",
        ablations=[("2 experts a token", set_attr(num_experts_per_tok=2))],
    ),
    dict(
        name="gpt_oss", config=cfg_gpt_oss, seed=5500, vocab_pad=0, cases=False, beam=True, moe=True,
        tweak=gpt_oss_tweak, tokenizer=lambda out: save_tok(qwen2_tokenizer(384), out), tok_style="as qwen2",
        traits="q/k/v/o biases, a sink logit per head (self_attn.sinks), GQA 4/2; layers sliding (window 5) and "
               "full in turn (layer_types); YaRN (factor 4, original 32, truncate false); router with a bias, top-3 "
               "of 5 then a softmax over the 3; experts fused [5, 48, 80] / [5, 40, 48] with biases, gate and up "
               "interleaved, SwiGLU clamped at 3 (swiglu_limit), alpha 1.702; router weights x2",
        ablations=[("no attention sinks", without_sinks), ("SwiGLU clamped at 7", set_attr(swiglu_limit=7.0)),
                   ("no sliding window", set_attr(layer_types=["full_attention"] * 4))],
    ),
    dict(
        name="llama4", config=cfg_llama4, seed=5900, vocab_pad=0, cases=False, beam=True, moe=True,
        tweak=scale_routers, tokenizer=lambda out: save_tok(qwen2_tokenizer(384), out), tok_style="as qwen2",
        traits="llama4_text: pairs rotated (its complex rotary) with llama3 scaling on layers 0, 1, 3, which attend "
               "within chunks of 4 (layer_types chunked_attention) and L2-norm q and k; layer 2 NoPE with the "
               "attention temperature (floor_scale 3, attn_scale 0.5); layers 1, 3 mixtures (interleave_moe_layer_step "
               "2): router top-1 of 5 on the logits, its sigmoid scaling the expert's input, experts fused "
               "[5, 48, 80] / [5, 40, 48], plus an ungated shared expert of width 40; dense MLP 64; router weights x2",
        ablations=[("no attention temperature", set_attr(attn_temperature_tuning=False)),
                   ("no qk-norm", set_attr(use_qk_norm=False)),
                   ("no chunks", set_attr(layer_types=["full_attention"] * 4)),
                   ("no shared expert", zeroed("shared_expert.down_proj"))],
    ),
    dict(
        name="llama4-multimodal", config=cfg_llama4_multimodal, seed=5900, vocab_pad=0, cases=False, beam=True, moe=True,
        tweak=scale_routers, tokenizer=lambda out: save_tok(qwen2_tokenizer(384), out), tok_style="as qwen2",
        traits="model_type llama4 (Llama4ForConditionalGeneration, as Llama 4 Scout and Maverick ship): llama4's "
               "text model in text_config, saved under language_model.model., beside a vision model and projector "
               "that text generation never reads",
        ablations=[],
    ),
    dict(
        name="granitemoeshared", config=cfg_granitemoeshared, seed=5500, vocab_pad=0, cases=False, beam=True, moe=True,
        tweak=scale_routers, tokenizer=lambda out: save_tok(gpt2_style_tokenizer(384), out), tok_style="as gpt_neo",
        traits="granitemoe's multipliers and fused experts; 7 experts of width 40, 2 a token; a shared MLP of width "
               "56 (shared_mlp.input_linear [112, 48] fused gate|up, output_linear [48, 56]) added to the experts' "
               "sum, no gate; untied head; router weights x2",
        ablations=[("no shared MLP", zeroed("shared_mlp.output_linear"))],
    ),
    dict(
        name="qwen3-window-bias", config=cfg_qwen3_window_bias, seed=2400, vocab_pad=0, cases=False, beam=True,
        tokenizer=lambda out: save_tok(qwen2_tokenizer(384), out), tok_style="as qwen2",
        traits="qwen3 with 3 layers, attention_bias true (q/k/v/o biases, added before the qk-norm), "
               "use_sliding_window true, sliding_window 8, max_window_layers 1; config.json in the Qwen3 hub "
               "spelling (rope_theta + rope_scaling null at the top, no layer_types): layers full, sliding, sliding",
        ablations=[("window on every layer", windows_everywhere), ("no qk-norm", without_qk_norm)],
        legacy=qwen3_hub_config,
    ),
    dict(
        name="olmo", config=cfg_olmo, seed=2500, vocab_pad=0, cases=False, beam=True,
        tokenizer=lambda out: save_tok(gpt2_style_tokenizer(384), out), tok_style="as gpt_neo",
        traits="LayerNorm without weight or bias (eps 1e-5 fixed) before attention, MLP and the head; SwiGLU; "
               "rotary halves; GQA 6/2; no biases; clip_qkv null; untied lm_head",
        ablations=[],
    ),
    dict(
        name="olmo-clip-qkv", config=cfg_olmo_clip, seed=2600, vocab_pad=0, cases=False, beam=True,
        tokenizer=lambda out: save_tok(gpt2_style_tokenizer(384), out), tok_style="as gpt_neo",
        traits="olmo with clip_qkv 3 (q, k, v clamped to [-3, 3] after their biases, before the rotary) and "
               "attention_bias true (q/k/v/o biases)",
        ablations=[("no clipping", set_attr(clip_qkv=None))],
    ),
    dict(
        name="smollm3", config=cfg_smollm3, seed=2700, vocab_pad=0, cases=False, beam=True,
        tokenizer=lambda out: save_tok(llama3_tokenizer(384)[0], out, "PreTrainedTokenizerFast"), tok_style="as llama3-rope",
        traits="no_rope_layers [1, 0, 1]: layer 1 attends without rotary (NoPE); GQA 6/2; rope theta 2e6; tied head",
        ablations=[("rotary on every layer", set_attr(no_rope_layers=[1, 1, 1]))],
    ),
    dict(
        name="smollm3-window", config=cfg_smollm3_window, seed=2800, vocab_pad=0, cases=False, beam=True,
        tokenizer=lambda out: save_tok(llama3_tokenizer(384)[0], out, "PreTrainedTokenizerFast"), tok_style="as llama3-rope",
        traits="4 layers, no_rope_layer_interval 2 (layers 1 and 3 NoPE), use_sliding_window true, sliding_window 8 "
               "on the NoPE layers; config.json without no_rope_layers and layer_types (both derived); untied head",
        ablations=[("rotary on every layer", set_attr(no_rope_layers=[1, 1, 1, 1])),
                   ("no window", set_attr(layer_types=["full_attention"] * 4))],
        legacy=drop_keys("no_rope_layers", "layer_types"),
    ),
    dict(
        name="olmo2", config=cfg_olmo2, seed=2900, vocab_pad=0, cases=False, beam=True,
        tokenizer=lambda out: save_tok(gpt2_style_tokenizer(384), out), tok_style="as gpt_neo",
        traits="norms after the sublayers only (post_attention_layernorm, post_feedforward_layernorm), no "
               "input_layernorm; q and k RMSNormed over the whole projection (48 and 16 values: 6 q heads, 2 kv "
               "heads of 8), split over the ranks; rope theta 5e5; untied lm_head",
        ablations=[("qk-norm per head", per_head_qk_norm)],
    ),
    dict(
        name="olmo2-bias", config=cfg_olmo2_bias, seed=3000, vocab_pad=0, cases=False, beam=True,
        tokenizer=lambda out: save_tok(gpt2_style_tokenizer(384), out), tok_style="as gpt_neo",
        traits="olmo2 with attention_bias true: q/k/v/o biases, q and k biases added before their norms",
        ablations=[("qk-norm per head", per_head_qk_norm)],
    ),
    dict(
        name="codegen", config=cfg_codegen, seed=1400, vocab_pad=12, cases=True,
        tokenizer=lambda out: save_tok(codegen_tokenizer(320), out),
        tok_style="byte-level BPE, GPT-2 regex; <|endoftext|> then added (non-special) tokens for 8..2 spaces and "
                  "4..2 tabs (CodeGenTokenizer)",
        traits="fused qkv_proj in mp_num=4 blocks, each [q|v|k] of 3 heads (12 heads do not align with the 4 blocks "
               "on 3 ranks); interleaved rotary on rotary_dim 4 of head_dim 6; parallel residual; untied lm_head "
               "with bias; model vocab = tokenizer + 12",
        ablations=[("rotary over the full head", set_attr(rotary_dim=6))],
    ),
    dict(
        name="openai-gpt", config=cfg_openai, seed=1500, vocab_pad=0, cases=True,
        tweak=scale_params({"tokens_embed.weight": 0.3, "h.1.ln_2.weight": 3.0, "h.1.ln_2.bias": 3.0,
                            "mlp.c_fc.weight": 2.0, "mlp.c_proj.weight": 8.0}),  # gelu's tails matter
        tokenizer=lambda out: save_tok(openai_tokenizer(384), out),
        tok_style="OpenAI GPT BPE with '</w>': BertNormalizer (lowercase, strip accents, CJK spacing), "
                  "BertPreTokenizer; <unk> last; no eos",
        traits="post-norm blocks (ln after each residual add), no final norm; learned positions; afn \"gelu\" "
               "is tanh gelu (OpenAI GPT's own ACT_FNS); Conv1D weights [in, out]; tied head; no eos (generation "
               "runs all 20 steps)",
        ablations=[("exact gelu", exact_gelu, 3 * LOGITS_TOLERANCE)],
    ),
    dict(
        name="ctrl", config=cfg_ctrl, seed=1600, vocab_pad=0, cases=True,
        tweak=scale_params({"transformer.w.weight": 0.15, "transformer.layernorm.weight": 4.0, "transformer.layernorm.bias": 4.0}),
        tokenizer=lambda out: ctrl_tokenizer(384, out),
        tok_style="CTRL BPE: words `\\S+\\n?`, '@@' continuation in vocab.json/merges.txt (CTRLTokenizer, Python); "
                  "tokenizer.json is an equivalent written here (HF ships none for CTRL); no eos",
        traits="sinusoidal positions ([sin | cos] halves); embeddings scaled by sqrt(48); pre-norm with final "
               "layernorm (block norms eps 1e-6 hard-coded); relu ffn; tied head with lm_head bias",
        ablations=[],
    ),
    dict(
        name="gpt_bigcode", config=cfg_gpt_bigcode, seed=2100, vocab_pad=0, cases=False, beam=True,
        tokenizer=lambda out: save_tok(gpt2_style_tokenizer(384), out), tok_style="as gpt_neo",
        traits="multi_query: fused c_attn [q of 6 heads | one k | one v] (nn.Linear); learned positions; "
               "gelu_pytorch_tanh; all biases; tied head",
        ablations=[("unscaled attention", set_attr(scale_attn_weights=False))],
    ),
    dict(
        name="gpt_bigcode-mha", config=cfg_gpt_bigcode_mha, seed=2200, vocab_pad=0, cases=False, beam=True,
        tokenizer=lambda out: save_tok(gpt2_style_tokenizer(384), out), tok_style="as gpt_neo",
        traits="gpt_bigcode with multi_query false: c_attn [q | k | v] of each of 6 heads",
        ablations=[],
    ),
    dict(
        name="phi3", config=cfg_phi3, seed=2300, vocab_pad=0, cases=False, beam=True,
        tokenizer=lambda out: save_tok(llama2_tokenizer(512), out), tok_style="as llama",
        traits="fused qkv_proj [q of 6 heads | k of 2 | v of 2]; fused gate_up_proj [gate | up]; rotary halves on "
               "partial_rotary_factor 0.5 (4 of 8 dims); sliding_window 8; RMSNorm; untied lm_head",
        ablations=[("no sliding window", set_attr(layer_types=["full_attention"] * 4)),
                   ("rotary over the full head", set_rope(partial_rotary_factor=1.0))],
    ),
    dict(
        name="phi3-longrope", beam_and_batch=True, config=cfg_phi3_longrope, seed=2350, vocab_pad=0, cases=False,
        dynamic=True, tokenizer=lambda out: save_tok(llama2_tokenizer(512), out), tok_style="as llama",
        traits="phi3 + rope longrope (2 short and 2 long factors on 4 of 8 dims, original_max_position_embeddings = "
               "prompt + 5): prompt logits with the short factors; the step past the original length recomputes "
               "every position with the long ones (Phi-3's generate() drops the cache there)",
        ablations=[("plain rope", lambda cfg: setattr(cfg, "rope_parameters", {"rope_type": "default", "rope_theta": 10000.0,
                                                                                  "partial_rotary_factor": 0.5})),
                   ("short factors 1", set_rope(short_factor=[1.0] * 2))],
    ),
    dict(
        name="phi", config=cfg_phi, seed=2400, vocab_pad=0, cases=False, beam=True,
        tokenizer=lambda out: save_tok(gpt2_style_tokenizer(384), out), tok_style="as gpt_neo",
        traits="parallel block with one input_layernorm (GPT-J's); rotary halves on partial_rotary_factor 0.5 "
               "(4 of 8 dims); q/k/v/dense and fc1/fc2 biases; lm_head with bias; GQA 6/2; gelu_new",
        ablations=[("rotary over the full head", set_rope(partial_rotary_factor=1.0))],
    ),
    dict(
        name="phi-qk-layernorm", config=cfg_phi_qk_layernorm, seed=2450, vocab_pad=0, cases=False, beam=True,
        tokenizer=lambda out: save_tok(gpt2_style_tokenizer(384), out), tok_style="as gpt_neo",
        traits="phi with qk_layernorm true: q and k LayerNormed per head (head_dim 8) before the rotary by one "
               "LayerNorm each, weight and bias [8] shared by the heads; GQA 6/2",
        ablations=[("no qk-norm biases", phi_no_qk_norm_bias)],
    ),
    dict(
        name="starcoder2", config=cfg_starcoder2, seed=2500, vocab_pad=0, cases=False, beam=True,
        tokenizer=lambda out: save_tok(gpt2_style_tokenizer(384), out), tok_style="as gpt_neo",
        traits="LayerNorms with biases; q/k/v/o and c_fc/c_proj biases (use_bias); GQA 6/2; rotary halves over the "
               "head; sliding_window 8; gelu_pytorch_tanh MLP; untied lm_head",
        ablations=[("no sliding window", set_attr(layer_types=["full_attention"] * 4))],
    ),
    dict(
        name="falcon", config=cfg_falcon, seed=2600, vocab_pad=0, cases=False, beam=True,
        tokenizer=lambda out: save_tok(gpt2_style_tokenizer(384), out), tok_style="as gpt_neo",
        traits="Falcon-7B style: multi_query (query_key_value [q of 6 heads | k | v]); parallel block with one "
               "input_layernorm; rotary halves; no biases; gelu; untied lm_head",
        ablations=[],
    ),
    dict(
        name="falcon-new-arch", config=cfg_falcon_new, seed=2700, vocab_pad=0, cases=False, beam=True,
        tokenizer=lambda out: save_tok(gpt2_style_tokenizer(384), out), tok_style="as gpt_neo",
        traits="Falcon-40B/180B style: new_decoder_architecture, num_kv_heads 2 (query_key_value per kv group "
               "[q q q | k | v]); parallel block with ln_attn and ln_mlp (num_ln_in_parallel_attn null = 2)",
        ablations=[],
    ),
    dict(
        name="falcon-new-arch-one-norm", config=cfg_falcon_new_one_norm, seed=2800, vocab_pad=0, cases=False, beam=True,
        tokenizer=lambda out: save_tok(gpt2_style_tokenizer(384), out), tok_style="as gpt_neo",
        traits="new_decoder_architecture with num_kv_heads 3 and num_ln_in_parallel_attn 1 (one input_layernorm "
               "feeds both); bias true",
        ablations=[],
    ),
    dict(
        name="falcon-sequential", config=cfg_falcon_sequential, seed=2900, vocab_pad=0, cases=False, beam=True,
        tokenizer=lambda out: save_tok(gpt2_style_tokenizer(384), out), tok_style="as gpt_neo",
        traits="multi_query false (query_key_value [q | k | v] per head), parallel_attn false (input_layernorm, "
               "attention, post_attention_layernorm, MLP in sequence), bias true",
        ablations=[],
    ),
    dict(
        name="falcon-alibi", config=cfg_falcon_alibi, seed=2950, vocab_pad=0, cases=False, beam=True, attn="sdpa",
        tokenizer=lambda out: save_tok(gpt2_style_tokenizer(384), out), tok_style="as gpt_neo",
        traits="alibi true (Falcon-RW), 12 heads of 8: no rotary; the bias bf16(bf16(slope) * position) joins the score before the "
               "1/sqrt(head_dim) scale; references from the sdpa attention (transformers' default: the eager path "
               "adds the bias a second time through the mask, unlike the original model); otherwise as falcon-sequential",
        ablations=[("no alibi", set_attr(alibi=False))],
    ),
    dict(
        name="stablelm", config=cfg_stablelm, seed=3000, vocab_pad=0, cases=False, beam=True,
        tokenizer=lambda out: save_tok(neox_tokenizer(320), out), tok_style="as gpt_neox",
        traits="LayerNorms with biases; SwiGLU without biases; q/k/v biases (use_qkv_bias), o without; rotary halves "
               "on partial_rotary_factor 0.25 (2 of 8 dims); sequential block; GQA 6/2; untied lm_head",
        ablations=[("rotary on 50%", set_rope(partial_rotary_factor=0.5))],
    ),
    dict(
        name="stablelm-parallel", config=cfg_stablelm_parallel, seed=3100, vocab_pad=0, cases=False, beam=True,
        tokenizer=lambda out: save_tok(neox_tokenizer(320), out), tok_style="as gpt_neox",
        traits="stablelm with use_parallel_residual true (input_layernorm feeds attention and MLP, no "
               "post_attention_layernorm) and use_qkv_bias false",
        ablations=[],
    ),
    dict(
        name="stablelm-qk-layernorm", config=cfg_stablelm_qk_layernorm, seed=3150, vocab_pad=0, cases=False, beam=True,
        tokenizer=lambda out: save_tok(neox_tokenizer(320), out), tok_style="as gpt_neox",
        traits="stablelm-parallel with qk_layernorm true (StableLM 2 12B): q_layernorm.norms.N / k_layernorm.norms.N, "
               "a LayerNorm [head_dim] without bias for each of the 6 q and 2 k heads, before the partial rotary",
        ablations=[("no qk-norm", set_attr(qk_layernorm=False))],
    ),
    dict(
        name="cohere", config=cfg_cohere, seed=3200, vocab_pad=0, cases=False, beam=True,
        tokenizer=lambda out: save_tok(gpt2_style_tokenizer(384), out), tok_style="as gpt_neo",
        traits="one LayerNorm (no bias) feeding a parallel block; SwiGLU; rotary on interleaved pairs over the head; "
               "logit_scale 0.5; q/k/v/o biases (attention_bias); GQA 6/2; tied embeddings",
        ablations=[("logit_scale 1", set_attr(logit_scale=1.0))],
    ),
    dict(
        name="cohere-qk-norm", config=cfg_cohere_qk_norm, seed=3250, vocab_pad=0, cases=False, beam=True,
        tokenizer=lambda out: save_tok(gpt2_style_tokenizer(384), out), tok_style="as gpt_neo",
        traits="cohere with use_qk_norm true (Command R+): q and k LayerNormed per head (no bias) before the "
               "rotary, a gain per head (q_norm [6, 8], k_norm [2, 8]); GQA 6/2: on 3 ranks kv heads 0 and 1 "
               "both on rank 1, with their gains",
        ablations=[("one gain for every head", shared_qk_gains)],
    ),
    dict(
        name="cohere2", config=cfg_cohere2, seed=3300, vocab_pad=0, cases=False, beam=True,
        tokenizer=lambda out: save_tok(gpt2_style_tokenizer(384), out), tok_style="as gpt_neo",
        traits="cohere's block; 3 layers sliding, sliding, full (config.json without layer_types: the hub's "
               "sliding_window_pattern 3); window 8 with rotary on pairs, the full layer without positions; "
               "logit_scale 0.5; tied embeddings",
        ablations=[("windows everywhere", windows_everywhere)],
        legacy=lambda cfg: dict(drop_keys("layer_types")(cfg), sliding_window_pattern=3),
    ),
    dict(
        name="gpt_neo-attention-types", config=cfg_gpt_neo_types, seed=1700, vocab_pad=0, cases=False,
        tokenizer=lambda out: save_tok(gpt2_style_tokenizer(384), out), tok_style="as gpt_neo",
        traits="gpt_neo with attention_types [[[local, global], 1]] and no attention_layers in config.json (hub "
               "configs before transformers wrote the derived list): layers local, global",
        ablations=[("global, local", set_attr(attention_layers=["global", "local"]))],
        legacy=drop_keys("attention_layers"),
    ),
    dict(
        name="bloom-post-ln-residual", config=cfg_bloom_post_ln, seed=1800, vocab_pad=0, cases=False,
        tokenizer=lambda out: save_tok(bloom_tokenizer(384)[0], out, "BloomTokenizerFast"), tok_style="as bloom",
        traits="bloom with apply_residual_connection_post_layernorm true: each block's residual is its "
               "layernorm's output",
        ablations=[("residual from the block input", set_attr(apply_residual_connection_post_layernorm=False))],
    ),
    dict(
        name="llama-biases", config=cfg_llama_biases, seed=1900, vocab_pad=0, cases=False,
        tokenizer=lambda out: save_tok(llama2_tokenizer(512), out), tok_style="as llama",
        traits="llama with mlp_bias and attention_bias true: gate/up/down and q/k/v/o biases",
        ablations=[],
    ),
    dict(
        name="gemma", config=cfg_gemma, seed=2100, vocab_pad=0, cases=True, cases_special=True, beam=True,
        tweak=scale_params({"embed_tokens.weight": 0.3}),
        tokenizer=lambda out: save_tok(gemma_tokenizer(512), out),
        tok_style="Gemma SentencePiece-BPE, byte fallback; Replace(' ', '▁') normalizer, no prefix space; <bos> "
                  "added (GemmaTokenizer)",
        traits="RMSNorm with gains 1 + w (fp32); embeddings times sqrt(48); explicit head_dim 12 (q 72 wide, "
               "hidden 48); GQA 6/2; gelu_pytorch_tanh gated MLP; tied head",
        ablations=[("norm gains w", patch_only(gemma_plain_norms)),
                   ("embeddings unscaled", patch_only(gemma_no_embed_scale)),
                   ("exact gelu", set_attr(hidden_act="gelu"), 3 * LOGITS_TOLERANCE)],
    ),
    dict(
        name="gemma2", config=cfg_gemma2, seed=2200, vocab_pad=0, cases=False, beam=True,
        tweak=scale_params({"embed_tokens.weight": 0.3}),
        tokenizer=lambda out: save_tok(gemma_tokenizer(512), out), tok_style="as gemma",
        traits="sandwich norms (post_attention_layernorm after attention, pre/post_feedforward_layernorm around "
               "the MLP); query_pre_attn_scalar 24 (head_dim 16); attention logits soft-capped at 4, final logits "
               "at 6; 3 layers sliding (window 8), full, sliding from the default pattern (config.json without "
               "layer_types, as the first hub configs); multi-query 6/1; hidden_activation; tied head",
        ablations=[("no post norms", patch_only(gemma2_no_post_norms)),
                   ("query_pre_attn_scalar = head_dim", set_attr(query_pre_attn_scalar=16)),
                   ("no attention soft-capping", set_attr(attn_logit_softcapping=None)),
                   ("no final soft-capping", set_attr(final_logit_softcapping=None)),
                   ("window 64", set_attr(sliding_window=64))],
        legacy=drop_keys("layer_types"),
    ),
    dict(
        name="gemma3_text", config=cfg_gemma3, seed=2300, vocab_pad=0, cases=False, beam=True,
        tweak=scale_params({"embed_tokens.weight": 0.3}),
        tokenizer=lambda out: save_tok(gemma_tokenizer(512), out), tok_style="as gemma",
        traits="Gemma 2's block with q/k RMSNorms (1 + w) per head before the rotary; 6 layers, 5 sliding (window 8) "
               "then 1 global; the sliding layers rotate with base 1e4 unscaled, the global one with base 1e6 and "
               "linear scaling 8 (rope_parameters per layer kind, as transformers 5 writes it); no soft-capping",
        ablations=[("no q/k norms", patch_only(gemma3_no_qk_norms)),
                   ("local rope base 1e6", set_rope_kind("sliding_attention", rope_theta=1000000.0)),
                   ("global rope unscaled", plain_global_rope),
                   ("global rope base 1e4", set_rope_kind("full_attention", rope_theta=10000.0))],
    ),
    dict(
        name="gemma3_text-hub", config=cfg_gemma3, seed=2400, vocab_pad=0, cases=False, beam=True,
        tweak=scale_params({"embed_tokens.weight": 0.3}),
        tokenizer=lambda out: save_tok(gemma_tokenizer(512), out), tok_style="as gemma",
        traits="gemma3_text with config.json in the hub spelling: rope_theta 1e6 + rope_scaling {linear, 8} for "
               "the global layers, rope_local_base_freq 1e4, sliding_window_pattern 6, no rope_parameters or "
               "layer_types",
        ablations=[],
        legacy=gemma3_hub_style_config,
    ),
    dict(
        name="gemma3-multimodal", config=cfg_gemma3_multimodal, seed=2500, vocab_pad=0, cases=False, beam=True,
        tweak=scale_params({"embed_tokens.weight": 0.3}),
        tokenizer=lambda out: save_tok(gemma_tokenizer(512), out), tok_style="as gemma",
        traits="model_type gemma3 (Gemma3ForConditionalGeneration, as Gemma 3 4B and up ship): gemma3_text's "
               "model in text_config, saved under language_model.model., beside a vision tower and projector "
               "that text generation never reads",
        ablations=[],
    ),
    dict(
        name="deepseek_v2-moe", config=cfg_deepseek_v2_moe, seed=5700, vocab_pad=0, cases=False, beam=True, moe=True,
        routing_margin=0.002, tweak=deepseek_router_tweak, tokenizer=lambda out: save_tok(llama2_tokenizer(512), out),
        tok_style="as llama",
        traits="deepseek_v2's latent attention; layer 0 dense (first_k_dense_replace 1), layers 1-2 mixtures: 8 "
               "experts of width 16, 3 a token from softmax scores within the 2 best of 4 groups "
               "(group_limited_greedy), times routed_scaling_factor 1.5; 2 shared experts (an ungated MLP of width "
               "32); router weights x2",
        ablations=[("no group limit", without_groups), ("no shared experts", zeroed("shared_experts.down_proj"))],
    ),
    dict(
        name="deepseek_v3-moe", config=cfg_deepseek_v3_moe, seed=5800, vocab_pad=0, cases=False, beam=True, moe=True,
        routing_margin=0.02,  # sigmoid + bias space: bf16 weights (the CUDA stand-in) move the scores by ~0.01
        tweak=deepseek_v3_router_tweak, tokenizer=lambda out: save_tok(llama2_tokenizer(512), out),
        tok_style="as llama",
        traits="deepseek_v3's latent attention; layer 0 dense, layers 1-2 mixtures: 8 experts of width 16, 2 a "
               "token by sigmoid score + e_score_correction_bias (0.5 N(0,1)) within the 2 best of 4 groups (a "
               "group scored by its 2 best), weighed by their scores renormalised, x routed_scaling_factor 2.5; 1 "
               "shared expert; router weights x1/8 (unsaturated scores)",
        ablations=[("no choice bias", without_choice_bias), ("no group limit", without_groups),
                   ("no shared expert", zeroed("shared_experts.down_proj"))],
    ),
    dict(
        name="qwen2-window-layers", config=cfg_qwen2_window_layers, seed=2000, vocab_pad=0, cases=False,
        tokenizer=lambda out: save_tok(qwen2_tokenizer(384), out), tok_style="as qwen2",
        traits="3 layers, use_sliding_window true, sliding_window 8, max_window_layers 1, config.json without "
               "layer_types (the Qwen2 hub spelling): layers full, sliding, sliding; GQA 6/2",
        ablations=[("window on every layer", windows_everywhere)],
        legacy=drop_keys("layer_types"),
    ),
    dict(
        name="deepseek_v2", beam=True, config=cfg_deepseek_v2, seed=3400, vocab_pad=0, cases=False,
        tokenizer=lambda out: save_tok(llama2_tokenizer(512), out), tok_style="as llama",
        traits="multi-head latent attention: q_proj (q_lora_rank null), kv_a_proj_with_mqa to a 12-wide latent and "
               "a shared 4-dim rotary key, kv_a_layernorm, kv_b_proj to 5 heads of k_nope 8 and v 6; rotary on "
               "interleaved pairs of the rope part only; YaRN (factor 4) with mscale_all_dim: scale 12^-1/2 mscale^2; "
               "all layers dense",
        ablations=[("no mscale_all_dim", set_rope(mscale_all_dim=0.0))],
    ),
    dict(
        name="deepseek_v3", beam=True, config=cfg_deepseek_v3, seed=3500, vocab_pad=0, cases=False,
        tokenizer=lambda out: save_tok(llama2_tokenizer(512), out), tok_style="as llama",
        traits="latent attention with low-rank q (q_a_proj 16, q_a_layernorm, q_b_proj), attention biases on "
               "q_a_proj, kv_a_proj_with_mqa and o_proj, v head 12 wider than the qk head 10 = 6 + 4, rope_interleave; "
               "5 heads; all layers dense",
        ablations=[],
    ),
]


# ----------------------------------------------------------------------------
# building one family
# ----------------------------------------------------------------------------


def pick_prompt(tok) -> tuple[str, list[int]]:
    for text in PROMPTS:
        ids = tok.encode(text)  # as the tokenizer encodes by default (BOS where it adds one)
        if 8 <= len(ids) <= 16:
            return text, ids
    raise SystemExit("no prompt of 8..16 tokens")


def evaluate(config, seed, prompt_ids, eos, pad, n_tok, cache_free_may_differ=False, tweak=None):
    """Prompt logits, generate() ids and margin, and the cache-free ids, each on a fresh model.

    With dynamic NTK rope the two legitimately differ: generate() keeps each cached key rotated
    with the base of the step that computed it, while a cache-free run re-rotates every key with
    the base of the current length."""
    base = build_model(config, seed, tweak)
    fresh = lambda: __import__("copy").deepcopy(base)  # noqa: E731  (dynamic rope keeps state)
    logits = prompt_logits(fresh(), prompt_ids)
    gen_ids, margin, gen_logits = greedy_generate(fresh(), prompt_ids, eos, pad)
    loop_ids, loop_logits = greedy_no_cache(fresh(), prompt_ids, eos)
    n = min(len(gen_logits), len(loop_logits))
    cache_diff = float((gen_logits[:n] - loop_logits[:n]).abs().max())
    ok = (
        margin > MIN_GREEDY_MARGIN
        and (gen_ids == loop_ids or cache_free_may_differ)
        and all(i < n_tok for i in gen_ids)  # no padding ids: the output must detokenize
        and len(gen_ids) >= MIN_NEW_TOKENS
        and len(set(gen_ids)) >= MIN_DISTINCT
        and not any(len(set(gen_ids[i:i + MAX_RUN + 1])) == 1 for i in range(len(gen_ids) - MAX_RUN))
    )
    diverge = next((i for i, (a, b) in enumerate(zip(gen_ids, loop_ids)) if a != b), None)
    return base, logits, gen_ids, margin, cache_diff, diverge, ok


BATCH_SKIP = 3  # the padded batch's second row: the prompt less its first 3 tokens


def beam_and_batch_lines(out: Path, prompt_ids, eos, pad):
    """reference.txt lines for the families whose traits follow the sequence length (LongRoPE) or
    change what beams score (logits scaling): beam_ids, transformers' best of 3 beams; and a
    left-padded batch of the prompt and prompt[BATCH_SKIP:] decoded greedily for MAX_NEW_TOKENS
    tokens without stopping at eos (batch_ids_0, batch_ids_1)."""
    model = load_model(out)
    x = torch.tensor([prompt_ids])
    with torch.no_grad():
        beams = model.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=MAX_NEW_TOKENS, do_sample=False,
                               num_beams=3, eos_token_id=eos, pad_token_id=pad if pad is not None else eos)
    beam_ids = beams[0, len(prompt_ids):].tolist()
    while beam_ids and pad is not None and beam_ids[-1] == pad and pad != eos:
        beam_ids.pop()
    short = prompt_ids[BATCH_SKIP:]
    pad_id = pad if pad is not None else eos
    rows = torch.tensor([prompt_ids, [pad_id] * BATCH_SKIP + short])
    mask = torch.tensor([[1] * len(prompt_ids), [0] * BATCH_SKIP + [1] * len(short)])
    with torch.no_grad():
        batch = load_model(out).generate(rows, attention_mask=mask, max_new_tokens=MAX_NEW_TOKENS, do_sample=False,
                                         num_beams=1, eos_token_id=None, pad_token_id=pad_id, min_new_tokens=MAX_NEW_TOKENS)
    batch_ids = [batch[b, len(prompt_ids):].tolist() for b in range(2)]
    assert all(len(r) == MAX_NEW_TOKENS for r in batch_ids), batch_ids
    return [f"beam_ids={ids_str(beam_ids)}", f"batch_skip={BATCH_SKIP}", f"batch_ids_0={ids_str(batch_ids[0])}",
            f"batch_ids_1={ids_str(batch_ids[1])}"]


def make_family(fam) -> dict:
    name = fam["name"]
    ATTENTION["implementation"] = fam.get("attn", "eager")
    out = reset_dir(FIXTURES / name)
    tok = fam["tokenizer"](out)  # the transformers tokenizer object that was saved
    prompt_text, prompt_ids = pick_prompt(tok)
    _, eos, pad = _ids(tok)
    n_tok = len(tok)
    vocab = n_tok + fam["vocab_pad"]
    make_config = fam["config"]
    config_of = (lambda: make_config(vocab, tok, len(prompt_ids))) if fam.get("dynamic") else (lambda: make_config(vocab, tok))

    for seed in range(fam["seed"], fam["seed"] + SEED_TRIES):
        model, logits, gen_ids, margin, cache_diff, diverge, ok = evaluate(
            config_of(), seed, prompt_ids, eos, pad, n_tok, bool(fam.get("dynamic")), fam.get("tweak")
        )
        if ok and fam.get("moe"):  # and decisive routing
            least = fam.get("routing_margin", MIN_ROUTING_MARGIN)
            ok = routing_margin(__import__("copy").deepcopy(model), prompt_ids, eos, pad) > least
        if ok:
            break
    else:
        raise SystemExit(f"{name}: no seed in {SEED_TRIES} gives a decisive greedy run")

    model.save_pretrained(out)
    if fam.get("legacy"):
        path = out / "config.json"
        cfg = fam["legacy"](json.loads(path.read_text()))
        path.write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    # With config.json there, AutoTokenizer takes the route it takes for a hub repo of this family.
    check_tokenizer_dir(out, tok)
    auto = AutoTokenizer.from_pretrained(out)
    assert auto.encode(prompt_text) == prompt_ids and _ids(auto)[1:] == (eos, pad) and len(auto) == n_tok

    # The reference is what transformers computes from the directory.
    disk_logits = prompt_logits(load_model(out), prompt_ids)
    # (Granite-MoE's reloaded experts sum in another order, by 1e-7: the reference is the disk's.)
    round_trip = float((disk_logits - logits).abs().max())
    assert round_trip == 0 or (fam.get("moe") and round_trip < 1e-5), f"{name}: checkpoint did not round-trip"
    disk_ids, disk_margin, _ = greedy_generate(load_model(out), prompt_ids, eos, pad)
    assert disk_ids == gen_ids and abs(disk_margin - margin) < (1e-4 if fam.get("moe") else 1e-5), (
        name, disk_ids, gen_ids, disk_margin, margin)
    assert disk_logits.shape == (len(prompt_ids), vocab)
    lines = [
        f"prompt_text={prompt_text}",
        f"prompt_ids={ids_str(prompt_ids)}",
        f"max_new_tokens={MAX_NEW_TOKENS}",
        f"greedy_ids={ids_str(gen_ids)}",
        f"vocab_size={vocab}",
    ]
    if fam.get("beam"):
        lines += [f"beam_ids={ids_str(beam_generate(load_model(out), prompt_ids, eos, pad))}",
                  f"padded_ids={ids_str(padded_generate(load_model(out), prompt_ids, eos, pad))}"]
    if fam.get("beam_and_batch"):
        lines += beam_and_batch_lines(out, prompt_ids, eos, pad)
    if fam.get("moe"):
        routing = routing_margin(load_model(out), prompt_ids, eos, pad)
        assert routing > fam.get("routing_margin", MIN_ROUTING_MARGIN), f"{name}: router logits only {routing} apart"
        print(f"  {name}: routing margin {routing:.3f}")
    (out / "reference.txt").write_text("\n".join(lines) + "\n", encoding="ascii")
    disk_logits.numpy().astype("<f4").tofile(out / "reference_logits.bin")

    effects = []
    for what, switch_off, *least in fam.get("ablations", []):
        cfg = AutoConfig.from_pretrained(out)
        patch = switch_off(cfg) or (lambda model: None)  # a config change, or also a model patch
        other = load_model(out, cfg)
        patch(other)
        diff = float((prompt_logits(other, prompt_ids) - disk_logits).abs().max())
        other = load_model(out, cfg)
        patch(other)
        other_ids, _, _ = greedy_generate(other, prompt_ids, eos, pad)
        assert diff > (least or [TRAIT_MIN_EFFECT])[0], f"{name}: '{what}' changes the logits by only {diff}"
        effects.append(f"{what}: logits {diff:.3g}, greedy {'differs' if other_ids != gen_ids else 'same'}")

    if fam.get("cases"):
        write_cases(out, auto)
    if fam.get("cases_special"):
        write_cases(out, auto, special=True)

    cfg = AutoConfig.from_pretrained(out).get_text_config()  # a multimodal model's text model's shape
    info = dict(
        name=name, model_type=cfg.model_type, seed=seed, n_prompt=len(prompt_ids), n_new=len(gen_ids),
        stopped=eos is not None and gen_ids[-1] == eos, margin=margin, cache_diff=cache_diff, diverge=diverge,
        logits_std=float(disk_logits.std()), vocab=vocab, n_tok=n_tok, effects=effects,
        hidden=cfg.hidden_size, layers=cfg.num_hidden_layers, heads=cfg.num_attention_heads,
        kv=getattr(cfg, "num_key_value_heads", cfg.num_attention_heads),
        size=sum(p.stat().st_size for p in out.iterdir()),
    )
    print(
        f"  {name}: seed {seed}, prompt {len(prompt_ids)}, new {len(gen_ids)}{' (eos)' if info['stopped'] else ''}, "
        f"margin {margin:.3f}, logits std {info['logits_std']:.2f}, cache/no-cache {cache_diff:.2g}"
        f"{'' if diverge is None else f' (cache-free ids differ from step {diverge})'}, "
        f"{info['size'] // 1024} KiB, AutoTokenizer {type(auto).__name__}" + "".join(f"\n    {e}" for e in effects)
    )
    return info


# ----------------------------------------------------------------------------
# FAMILIES.md
# ----------------------------------------------------------------------------


def _rope_value(v) -> str:
    if isinstance(v, list):
        return "[" + " ".join(f"{x:g}" for x in v) + "]"
    if isinstance(v, bool) or v is None:
        return str(v).lower()
    return f"{v:g}"


def describe_positions(cfg) -> str:
    mt = cfg.model_type
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    rope = getattr(cfg, "rope_parameters", None) or {}
    if mt == "gpt_neo":
        return f"learned; layers {'/'.join(cfg.attention_layers)}, local window {cfg.window_size}"
    if mt in ("gptj", "codegen"):
        return f"rotary interleaved on {cfg.rotary_dim} of {head_dim}"
    if mt == "gpt_neox":
        return f"rotary halves on {int(head_dim * rope['partial_rotary_factor'])} of {head_dim}, theta {rope['rope_theta']:g}"
    if mt == "opt":
        return "learned, offset 2"
    if mt == "bloom":
        return "ALiBi"
    if mt in ("openai-gpt", "gpt2", "gpt_bigcode"):
        return "learned"
    if mt == "falcon" and cfg.alibi:
        return "ALiBi"
    if mt in ("openai-gpt", "gpt2", "gpt_bigcode"):
        return "learned"
    if mt == "ctrl":
        return "sinusoidal"
    if mt in ("deepseek_v2", "deepseek_v3"):  # latent attention: only the rope part of each head rotates
        head = (f"rotary pairs on the last {cfg.qk_rope_head_dim} of {cfg.qk_nope_head_dim + cfg.qk_rope_head_dim} "
                f"(and on the shared key),")
    elif mt in ("llama4_text", "llama4"):  # its complex rotary: pairs
        head = f"rotary pairs on {head_dim} (not on NoPE layers),"
    elif "full_attention" in rope:  # Gemma 3: one rope per kind of layer
        local = rope["sliding_attention"]
        rope = rope["full_attention"]
        head = f"rotary halves on {head_dim}; sliding layers theta {local['rope_theta']:g}, global layers"
    else:
        head = f"rotary halves on {head_dim},"
    extra = {k: v for k, v in rope.items() if k not in ("rope_type", "type", "rope_theta")}
    text = f"{head} theta {rope['rope_theta']:g}"
    if rope.get("rope_type", "default") != "default":
        text += f"; {rope['rope_type']} " + ", ".join(f"{k} {_rope_value(v)}" for k, v in extra.items())
        text += f"; max_position_embeddings {cfg.max_position_embeddings}"
    if getattr(cfg, "sliding_window", None):
        text += f"; sliding window {cfg.sliding_window}"
    return text



# ----------------------------------------------------------------------------
# wide-margin fixtures (issue 3): every greedy step decisive enough for F16 / BF16
# ----------------------------------------------------------------------------

WIDE_MIN_MARGIN = 2.0  # top-1 minus top-2 logit at every greedy step, float32
WIDE_TARGET_MARGIN = 2.5  # the final norm is scaled so that the smallest margin is about this
WIDE_MIN_RELATIVE = 0.2  # smallest margin / that step's logit std, before scaling
WIDE_MIN_DISTINCT = 6
WIDE = [
    dict(name="gpt2-wide", base="gpt2-tiny", seed=14, norm=("transformer.ln_f.weight", "transformer.ln_f.bias"),
         tok_files=("tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt"),
         config=lambda tok: __import__("make_fixtures").tiny_config(len(tok), tok.eos_token_id),
         tok_style="as gpt2-tiny (copied)",
         traits="gpt2-tiny's shape; head (tied wte) weights cubed (sign kept, std kept) for heavy-tailed logits; "
                "ln_f scaled up; every greedy step has a margin >= 2 and the same greedy ids in torch float16 and bfloat16"),
    dict(name="llama-wide", base="llama", seed=21, norm=("model.norm.weight",),
         tok_files=("tokenizer.json", "tokenizer_config.json"),
         config=lambda tok: cfg_llama(512, tok),
         tok_style="as llama (copied)",
         traits="llama's shape; lm_head weights cubed (sign kept, std kept) for heavy-tailed logits; final norm "
                "scaled up; every greedy step has a margin >= 2 and the same greedy ids in torch float16 and bfloat16"),
]


def heavy_head(model) -> None:
    """Output embedding w -> sign(w) |w|^3 at the same std: a few large weights make the top logit
    stand out from the rest (Gaussian logits over 500 tokens leave top-1/top-2 gaps of ~1% of their
    spread at some step of 20)."""
    with torch.no_grad():
        w = model.get_output_embeddings().weight
        c = w.sign() * w.abs() ** 3
        w.copy_(c * (w.std() / c.std()))


def relative_margin(step_logits: torch.Tensor) -> float:
    top2 = torch.topk(step_logits, 2, dim=-1).values
    return float(((top2[:, 0] - top2[:, 1]) / step_logits.std(dim=-1)).min())


def make_wide(spec) -> dict:
    """A model with the shape and tokenizer of `spec['base']` whose greedy run is decisive at every
    step: the first seed from spec['seed'] whose heavy-headed model has a smallest relative margin of
    WIDE_MIN_RELATIVE, WIDE_MIN_DISTINCT distinct tokens and no early eos; then the final norm
    (weight and bias) is scaled so that the smallest margin is WIDE_TARGET_MARGIN. Checked: margin
    >= WIDE_MIN_MARGIN, generate() == cache-free loop, and the same greedy ids with the whole model
    (weights and activations) in torch float16 and bfloat16 on the CPU."""
    import copy

    name, src = spec["name"], FIXTURES / spec["base"]
    out = reset_dir(FIXTURES / name)
    for f in spec["tok_files"]:
        shutil.copy(src / f, out / f)
    tok = AutoTokenizer.from_pretrained(out)
    ref = dict(line.split("=", 1) for line in (src / "reference.txt").read_text().splitlines())
    prompt_text, prompt_ids = ref["prompt_text"], [int(i) for i in ref["prompt_ids"].split(",")]
    assert tok.encode(prompt_text) == prompt_ids, name
    _, eos, pad = _ids(tok)
    pad = eos if pad is None else pad

    for seed in range(spec["seed"], spec["seed"] + SEED_TRIES):
        model = build_model(spec["config"](tok), seed, heavy_head)
        ids, margin, steps = greedy_generate(copy.deepcopy(model), prompt_ids, eos, pad)
        if len(ids) == MAX_NEW_TOKENS and len(set(ids)) >= WIDE_MIN_DISTINCT and relative_margin(steps) >= WIDE_MIN_RELATIVE:
            break
    else:
        raise SystemExit(f"{name}: no seed in {SEED_TRIES} gives wide margins")
    factor = float(max(1, int(WIDE_TARGET_MARGIN / margin + 1)))
    with torch.no_grad():
        for pname, p in model.named_parameters():
            if pname in spec["norm"]:
                p.mul_(factor)

    model.save_pretrained(out)
    loaded = load_model(out)
    logits = prompt_logits(loaded, prompt_ids)
    ids2, margin2, steps2 = greedy_generate(copy.deepcopy(loaded), prompt_ids, eos, pad)
    assert ids2 == ids and margin2 >= WIDE_MIN_MARGIN, (name, ids2, ids, margin2)
    assert greedy_no_cache(copy.deepcopy(loaded), prompt_ids, eos)[0] == ids, name
    for dtype in (torch.float16, torch.bfloat16):
        low_ids, low_margin, _ = greedy_generate(copy.deepcopy(loaded).to(dtype), prompt_ids, eos, pad)
        assert low_ids == ids, (name, dtype, low_ids, ids)
    lines = [
        f"prompt_text={prompt_text}",
        f"prompt_ids={ids_str(prompt_ids)}",
        f"max_new_tokens={MAX_NEW_TOKENS}",
        f"greedy_ids={ids_str(ids)}",
        f"vocab_size={loaded.config.vocab_size}",
    ]
    (out / "reference.txt").write_text("\n".join(lines) + "\n", encoding="ascii")
    logits.numpy().astype("<f4").tofile(out / "reference_logits.bin")
    top2 = torch.topk(steps2, 2, dim=-1).values
    margins = (top2[:, 0] - top2[:, 1]).tolist()
    print(f"  {name}: seed {seed}, norm x{factor:g}, min margin {margin2:.3f} (relative {relative_margin(steps2):.3f}), "
          f"logits std {float(steps2.std()):.2f}, {len(set(ids))} distinct, margins {[round(m, 2) for m in margins]}")
    return dict(seed=seed, factor=factor, margin=margin2, std=float(steps2.std()))


# ----------------------------------------------------------------------------
# token-id fixtures (issue 9): llama's weights with eos ids and generate() defaults moved around
# ----------------------------------------------------------------------------

TOKEN_ID_BASE = "llama"
GENERATION_DEFAULTS = dict(num_beams=2, no_repeat_ngram_size=3, repetition_penalty=1.3, max_new_tokens=12,
                           length_penalty=0.7)


def first_new_token_at(ids: list[int], at: int) -> int:
    """ids[k] for the first k >= at whose token did not occur earlier (so that eos = it stops there)."""
    return next(ids[k] for k in range(at, len(ids)) if ids[k] not in ids[:k])


def make_token_ids(name: str) -> dict:
    """`llama-eos-list`: config.json's eos_token_id a list [2, X] and no generation_config.json
    (transformers then takes the list from config.json); X is a token of llama's greedy run, so
    generation stops there. `llama-generation-config`: config.json's single eos 2, while
    generation_config.json lists [2, Y] (as LLaMA-3 instruct checkpoints list end-of-turn ids only
    there) and sets GENERATION_DEFAULTS; reference.txt's default_ids are generate(prompt) with no
    arguments (the defaults taken from the file), greedy_ids an explicit greedy run."""
    src = FIXTURES / TOKEN_ID_BASE
    out = reset_dir(FIXTURES / name)
    for f in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"):
        shutil.copy(src / f, out / f)
    ref = dict(line.split("=", 1) for line in (src / "reference.txt").read_text().splitlines())
    prompt_ids = [int(i) for i in ref["prompt_ids"].split(",")]
    base_ids = [int(i) for i in ref["greedy_ids"].split(",")]
    cfg = json.loads((out / "config.json").read_text())
    extra = {}
    if name == "llama-eos-list":
        stop = first_new_token_at(base_ids, 8)
        cfg["eos_token_id"] = [cfg["eos_token_id"], stop]
    else:
        stop = first_new_token_at(base_ids, 5)
        gen = dict(bos_token_id=cfg["bos_token_id"], eos_token_id=[cfg["eos_token_id"], stop],
                   pad_token_id=0, **GENERATION_DEFAULTS)
        (out / "generation_config.json").write_text(json.dumps(gen, indent=2, sort_keys=True) + "\n")
    (out / "config.json").write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")

    model = load_model(out)
    x = torch.tensor([prompt_ids])
    neutral = dict(num_beams=1, no_repeat_ngram_size=0, repetition_penalty=1.0, length_penalty=1.0)
    with torch.no_grad():
        greedy = model.generate(x, attention_mask=torch.ones_like(x), do_sample=False, max_new_tokens=MAX_NEW_TOKENS,
                                **neutral)[0, len(prompt_ids):].tolist()
        if name == "llama-generation-config":
            defaults = model.generate(x, attention_mask=torch.ones_like(x))[0, len(prompt_ids):].tolist()
            extra["default_ids"] = ids_str(defaults)
    assert greedy == base_ids[:base_ids.index(stop) + 1], (name, greedy, base_ids, stop)
    logits = prompt_logits(model, prompt_ids)
    lines = [
        f"prompt_text={ref['prompt_text']}",
        f"prompt_ids={ids_str(prompt_ids)}",
        f"max_new_tokens={MAX_NEW_TOKENS}",
        f"greedy_ids={ids_str(greedy)}",
        f"vocab_size={ref['vocab_size']}",
    ] + [f"{k}={v}" for k, v in extra.items()]
    (out / "reference.txt").write_text("\n".join(lines) + "\n", encoding="ascii")
    logits.numpy().astype("<f4").tofile(out / "reference_logits.bin")
    print(f"  {name}: stops at {stop} after {len(greedy)} tokens; " + ", ".join(f"{k} {v}" for k, v in extra.items()))
    return {}


TOKEN_IDS = [
    dict(name="llama-eos-list", tok_style="as llama (copied)",
         traits="llama's weights; config.json eos_token_id [2, X] (a list), no generation_config.json: greedy "
                "generation stops at X, a token of llama's greedy run"),
    dict(name="llama-generation-config", tok_style="as llama (copied)",
         traits="llama's weights; config.json eos 2, generation_config.json eos [2, Y] and defaults num_beams 2, "
                "no_repeat_ngram_size 3, repetition_penalty 1.3, max_new_tokens 12, length_penalty 0.7: greedy "
                "stops at Y; generate() without arguments uses the defaults (default_ids)"),
]


AUDIT_MARKER = "## Config audit"


def write_families_md() -> None:
    rows, total = [], 0
    for fam in FAMILIES + WIDE + TOKEN_IDS:
        out = FIXTURES / fam["name"]
        if not (out / "config.json").exists():
            continue
        top = AutoConfig.from_pretrained(out)
        cfg = top.get_text_config()  # a multimodal model's text model
        ref = dict(line.split("=", 1) for line in (out / "reference.txt").read_text().splitlines())
        size = sum(p.stat().st_size for p in out.iterdir())
        total += size
        kv = getattr(cfg, "num_key_value_heads", None) or cfg.num_attention_heads
        tok_files = [n for n in ("cases.txt", "cases_special.txt") if (out / n).exists()]
        cells = [
            f"`{fam['name']}`", top.model_type, fam["traits"], f"{cfg.num_attention_heads} / {kv}",
            f"{cfg.hidden_size} / {cfg.num_hidden_layers}", describe_positions(cfg), str(cfg.vocab_size),
            f"{len(ref['prompt_ids'].split(','))} + {len(ref['greedy_ids'].split(','))}", fam["tok_style"],
            ", ".join(tok_files) or "-", str(size // 1024),
        ]
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    text = f"""# Decoder-family fixtures (issue 5)

Made by `python3 test/make_family_fixtures.py` (transformers 5.23, torch 2.15, tokenizers 0.23): tiny
random models saved by `save_pretrained` (float32 safetensors) with tokenizers trained on
`make_fixtures.TRAINING_TEXT`. Every dir has `config.json`, `generation_config.json`,
`model.safetensors`, `tokenizer.json`, `tokenizer_config.json`, `reference.txt` and
`reference_logits.bin` (float32 LE [n_prompt][vocab_size]: transformers' logits of the prompt,
eager attention). `greedy_ids` are the new ids of `generate()` (KV cache, greedy,
max_new_tokens 20, stopping after eos where the tokenizer has one); every greedy step has a
top-1 / top-2 logit margin above {MIN_GREEDY_MARGIN}. `prompt_ids` are the prompt as the dir's tokenizer
encodes it by default: with the BOS its post-processor adds (`opt`: `</s>` = 2; LLaMA-2 style:
`<s>` = 1; `llama3-rope`: `<|begin_of_text|>`), without for the others.

`cases.txt` lines are `<hex of UTF-8 input>\t<comma ids>` for make_fixtures' hard strings,
encoded without special tokens; `cases_special.txt` the same with special tokens added.
Transformers' ids (AutoTokenizer on the dir) equal tokenizers' on `tokenizer.json` for all of them.

Heads are 6 (or 12) so that 1, 2 and 3 ranks split them evenly; kv heads 2 (GQA: fewer than 3
ranks) and 1 (MQA) need replication. Windows (8) are shorter than the prompt, so the prompt
logits and every generated token see them.

| dir | model_type | traits | heads / kv | hidden / layers | positions | vocab | prompt + new | tokenizer | cases | KiB |
|---|---|---|---|---|---|---|---|---|---|---|
""" + "\n".join(rows) + f"""

Total {total // 1024} KiB.

`gpt2-wide` and `llama-wide` (issue 3, `make_wide`) have gpt2-tiny's / llama's shape, prompt and
copied tokenizer, heavy-tailed head weights and a final norm scaled up so that every greedy step
has a float32 top-1 / top-2 margin of at least {WIDE_MIN_MARGIN} (smallest: gpt2-wide 2.80, llama-wide 2.52;
logits std ~10), and the same greedy ids with the whole model (weights and activations) in torch
float16 and bfloat16 on the CPU: test_cuda compares their F16 / BF16 greedy tokens at every step.

Notes on transformers 5.23:

- Windows count the current token: GPT-Neo's local layers and Mistral's sliding window both let
  position i attend to keys i-w+1 .. i (w = window_size / sliding_window).
- transformers 5 writes rope settings as `rope_parameters` (`rope_type`, `rope_theta`, scaling
  keys, GPT-NeoX's `partial_rotary_factor`) and no `rope_theta` / `rope_scaling` / `rotary_pct` at the
  top. It still reads the older spellings, which hub checkpoints use: `gpt_neox-seq` has Pythia's
  `rotary_pct` + `rotary_emb_base`, `llama-rope-dynamic` Llama-2's `rope_theta` + `rope_scaling`
  with `type`, `llama3-rope` Llama-3.1's `rope_theta` + `rope_scaling` with `rope_type` (each checked
  to load to the same logits). A GPT-NeoX config with neither `rope_parameters.partial_rotary_factor`
  nor `rotary_pct` means 0.25.
- Dynamic NTK (`llama-rope-dynamic`, max_position_embeddings = prompt length - 4): the base is
  recomputed from L = max position + 1 whenever L exceeds what was seen, i.e. for the whole prompt
  at prefill (L = prompt length) and again at each generated token (L = its position + 1), with
  base' = theta * (factor * L / max_pos - (factor - 1)) ^ (dim / (dim - 2)). Only the new token's q/k
  get the new base; cached keys keep the rotation they were computed with. A cache-free loop that
  re-rotates every key at the current L gives different logits (by ~10) and different greedy ids
  from step 10: `greedy_ids` follow generate() (the cached behaviour).
- CodeGen's qkv_proj output is 4 blocks (mp_num = 4, fixed) of 3 * hidden / 4 rows, each block
  [q | v | k] (this order) of hidden / 4 rows = n_head / 4 heads; so n_head must be a multiple of 4.
- GPT-NeoX's query_key_value output is per head [q | k | v] (head_dim each); BLOOM's likewise.
- CTRL's block layer norms use eps 1e-6 whatever `layer_norm_epsilon` says (the final one uses it).
- LLaMA-2 tokenizers: for a dir whose tokenizer_class is LlamaTokenizer and model_type llama,
  AutoTokenizer keeps only the vocab, merges and post-processor of tokenizer.json and rebuilds the
  rest: no normalizer, Metaspace(prepend_scheme "first", split false). That Metaspace adds no '▁'
  when the text already starts with a space, so " Hello" is [▁Hello], where the hub's own
  tokenizer.json (normalizer Prepend('▁') + Replace(' ', '▁'), like sentencepiece) gives [▁, ▁Hello].
  The `llama*` dirs hold what transformers 5 writes and uses (Metaspace form); `mistral` holds the
  hub form, which AutoTokenizer takes verbatim (TokenizersBackend) for model_type mistral when
  mistral_common is not installed. Their cases.txt differ exactly on leading spaces.
  transformers 5's LlamaTokenizer also writes model.unk_token null (byte fallback covers all).
- TokenizersBackend.save_pretrained writes tokenizer_class "TokenizersBackend"; the `bloom`,
  `llama3-rope` and `mistral` tokenizer_config.json carry the hub's names instead
  (BloomTokenizerFast, PreTrainedTokenizerFast, LlamaTokenizer), which load the same.
- OPT's tokenizer prepends `</s>` (id 2) as BOS; GPT-2 style, NeoX, BLOOM, Qwen2, CodeGen,
  OpenAI GPT and CTRL add nothing.
- `openai-gpt` and `ctrl` have their token embeddings scaled down (and the last norm up) after the
  random init: with tied embeddings their greedy runs otherwise repeat the token they were given.
"""
    # The config audit below the marker is kept by hand (it is about the library, not the fixtures).
    old = (FIXTURES / "FAMILIES.md").read_text(encoding="utf-8") if (FIXTURES / "FAMILIES.md").exists() else ""
    if AUDIT_MARKER in old:
        text += "\n" + old[old.index(AUDIT_MARKER):]
    (FIXTURES / "FAMILIES.md").write_text(text, encoding="utf-8")
    print(f"FAMILIES.md: {len(rows)} dirs, {total // 1024} KiB")


def main() -> None:
    torch.set_num_threads(1)  # avoid run-to-run float differences from threading
    hf_logging.disable_progress_bar()
    only = set(sys.argv[1:])
    unknown = only - {f["name"] for f in FAMILIES + WIDE + TOKEN_IDS}
    if unknown:
        raise SystemExit(f"unknown: {sorted(unknown)}")
    for fam in FAMILIES:
        if not only or fam["name"] in only:
            make_family(fam)
    for spec in WIDE:
        if not only or spec["name"] in only:
            make_wide(spec)
    for spec in TOKEN_IDS:
        if not only or spec["name"] in only:
            make_token_ids(spec["name"])
    write_families_md()


if __name__ == "__main__":
    main()
