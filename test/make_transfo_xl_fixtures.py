#!/usr/bin/env python3
"""Writes the Transformer-XL fixtures (issue 36) that test_encoders.c checks: tiny TransfoXL models
saved by save_pretrained, with what transformers computes.

transformers 5 dropped Transformer-XL: this script runs under the last 4.x release that has it
(transformers 4.57, its deprecated transfo_xl module), from the repository root:

    /work/venv-tf4/bin/python test/make_transfo_xl_fixtures.py

Each dir test/fixtures/<name>/ holds config.json, model.safetensors and
    reference.txt   rows=<n>, then per row ids<i>=<comma ids> (each row run alone: TransfoXL
                    takes no attention mask, so transformers pads nothing); the LM heads also
                    prompt_text, prompt_ids, greedy_ids, max_new_tokens, vocab_size
    hidden.bin      float32 LE [sum of lengths][d_model]: last_hidden_state (mems=None: the
                    memory transformers starts with, mem_len zero rows, attended to)
    logits.bin      the LM heads: float32 LE [sum of lengths][vocab]: prediction_scores with
                    labels=None, the adaptive softmax's log-probabilities of every token;
                    the sequence classifier: [rows][num_labels]
greedy_ids: transformers 4.57's TransfoXLLMHeadModel has no generate() (it does not inherit
GenerationMixin, which 4.50 stopped giving every PreTrainedModel), so the script decodes greedily
by hand as its prepare_inputs_for_generation feeds the model: the prompt, then each step's last
token alone with the mems of the step before (mem_len 0: no mems, every token again). 4.57.6's
TransfoXLModel.forward raises as released (Tensor.type_as(dtype=...)): the script mends that one
call (below) and nothing else.
"""
import shutil
import sys
from pathlib import Path

import torch
import transformers
from transformers.models.deprecated.transfo_xl import (TransfoXLConfig, TransfoXLForSequenceClassification,
                                                         TransfoXLLMHeadModel, TransfoXLModel)

assert transformers.__version__.startswith("4."), "transformers 4.x (Transformer-XL is gone from 5)"

# transformers 4.57.6's TransfoXLModel.forward builds its relative positions with
# torch.arange(klen - 1, -1, -1.0, dtype=torch.int64).type_as(dtype=word_emb.dtype), which raises
# (type_as takes a tensor): a refactoring slip; 4.35 wrote arange(..., dtype=word_emb.dtype). So
# that the rest of its code runs as it is, type_as here also takes that keyword, casting to it.
_type_as = torch.Tensor.type_as


def _type_as_dtype(self, other=None, dtype=None):
    return self.to(dtype) if other is None and dtype is not None else _type_as(self, other)


torch.Tensor.type_as = _type_as_dtype
ROOT = Path(__file__).resolve().parent
FIXTURES = ROOT / "fixtures"

# 3 heads of 10 (3 * 10 is not d_model: TransfoXL's d_head is its own), so that 2 ranks split
# them unevenly (2, 1); ids across every cluster of the cutoffs below.
SHAPE = dict(vocab_size=120, d_model=24, n_head=3, d_head=10, d_inner=40, n_layer=2, dropout=0.0, dropatt=0.0,
             eos_token_id=0)
ROWS = [
    [17, 45, 88, 9, 63, 101, 3],
    [21, 77, 31, 101, 4, 54, 12, 96, 40, 8, 115, 3],
    [119, 64, 33, 71],
]
PROMPT = [17, 45, 88, 9, 63, 101, 3]

FIXTURES_LIST = [
    # name, class, config changes
    # adaptive input over 3 clusters of widths 32, 16, 8 projected to d_model; post-norm, a
    # layer's own r_w_bias / r_r_bias, same_length (each token sees mem_len keys), clamp_len 4
    ("transfo-xl", TransfoXLModel, dict(d_embed=32, div_val=2, cutoffs=[40, 80], mem_len=5, same_length=True,
                                        clamp_len=4, untie_r=True, pre_lnorm=False)),
    # pre-norm, shared r_w_bias / r_r_bias, one table of d_embed 32 projected to d_model, no clamp
    ("transfo-xl-pre", TransfoXLModel, dict(d_embed=32, div_val=1, cutoffs=[60], mem_len=3, same_length=False,
                                            clamp_len=0, untie_r=False, pre_lnorm=True)),
    # the adaptive softmax over 2 clusters of one table (tied, no projections), a memory of 4 rows
    # that generation slides past the prompt, same_length, clamp_len 3
    ("transfo-xl-lm", TransfoXLLMHeadModel, dict(d_embed=24, div_val=1, cutoffs=[50], mem_len=4, same_length=True,
                                                 clamp_len=3, untie_r=True, pre_lnorm=False)),
    # 3 clusters of their own tables (div_val 2) and projections, tied (tie_projs [F, T, T]:
    # the head's out_projs.0 its own), pre-norm, shared biases, mem_len 6, not same_length
    ("transfo-xl-lm-div", TransfoXLLMHeadModel, dict(d_embed=32, div_val=2, cutoffs=[30, 70], mem_len=6,
                                                     same_length=False, clamp_len=0, untie_r=False, pre_lnorm=True)),
    # one table projected (d_embed 32), each cluster's out_projs its own (proj_share_all_but_first
    # false), no memory (mem_len 0: generate() runs every token each step)
    ("transfo-xl-lm-proj", TransfoXLLMHeadModel, dict(d_embed=32, div_val=1, cutoffs=[60],
                                                      proj_share_all_but_first=False, mem_len=0, same_length=False,
                                                      clamp_len=5, untie_r=True, pre_lnorm=False)),
    # TransfoXLForSequenceClassification: score (d_embed == d_model) on each row's last token
    ("transfo-xl-cls", TransfoXLForSequenceClassification,
     dict(d_embed=24, div_val=1, cutoffs=[50], mem_len=4, same_length=False, clamp_len=0, untie_r=True,
          pre_lnorm=False, num_labels=3)),
]


def perturb(model):
    """Weights well away from TransfoXL's tiny init, so that each trait moves the outputs."""
    with torch.no_grad():
        for pname, p in model.named_parameters():
            last = pname.split(".")[-1]
            if "layer_norm" in pname and last == "weight":
                p.copy_(1.0 + 0.3 * torch.randn_like(p))
            elif last in ("r_w_bias", "r_r_bias") or pname.endswith(".bias") or last == "cluster_bias":
                p.normal_(0.0, 0.3)
            else:
                p.normal_(0.0, 0.3)


def save(model, out):
    """save_pretrained; with untie_r false (every layer's r_w_bias / r_r_bias the model's one
    parameter) 4.57 refuses safetensors for the shared tensors, so the file is written with the
    model's names and each layer's (copies), as the state dict names them, and transformers'
    from_pretrained of it must give the same outputs."""
    if model.config.untie_r:
        model.save_pretrained(out)
        return
    from safetensors.torch import save_file
    model.config.architectures = [type(model).__name__]  # as save_pretrained records it
    model.config.save_pretrained(out)
    state = {k: v.clone().contiguous() for k, v in model.state_dict().items()}
    if isinstance(model, TransfoXLLMHeadModel):  # tied: the input's tensors alone, as save_pretrained drops them
        for i, tie in enumerate(model.config.tie_projs):
            if tie and (model.config.div_val != 1 or model.config.d_model != model.config.d_embed):
                state.pop(f"crit.out_projs.{i}", None)
        state = {k: v for k, v in state.items() if not k.startswith("crit.out_layers.") or not k.endswith(".weight")}
    save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})
    again = type(model).from_pretrained(out).eval()
    with torch.no_grad():
        ids = torch.tensor([ROWS[1]])
        a, b = model(input_ids=ids, output_hidden_states=True), again(input_ids=ids, output_hidden_states=True)
        assert torch.equal(a.hidden_states[-1], b.hidden_states[-1]), "the shared biases did not load back"


def manual_greedy(model, prompt, new_tokens):
    """Greedy decoding by hand: the prompt, then each token alone over the mems of the step before
    (mem_len 0 keeps none: every token again, as generate() feeds them)."""
    with torch.no_grad():
        out = model(input_ids=torch.tensor([prompt]))
        tokens = []
        for _ in range(new_tokens):
            token = int(out.prediction_scores[0, -1].argmax())
            tokens.append(token)
            if token == model.config.eos_token_id:
                break
            if out.mems is None:
                out = model(input_ids=torch.tensor([prompt + tokens]))
            else:
                out = model(input_ids=torch.tensor([[token]]), mems=out.mems)
    return tokens


def make(name, cls, changes, seed):
    lm = cls is TransfoXLLMHeadModel
    for attempt in range(50):
        torch.manual_seed(seed + 1000 * attempt)
        config = TransfoXLConfig(**dict(SHAPE, **changes))
        model = cls(config).eval()
        perturb(model)
        if lm:
            model.tie_weights()
        out = FIXTURES / name
        if out.exists():
            shutil.rmtree(out)
        out.mkdir(parents=True)
        save(model, out)
        model = cls.from_pretrained(out).eval()
        if not lm:
            generated = []
            break
        new_tokens = 12
        generated = manual_greedy(model, PROMPT, new_tokens)
        # the memory's length changes the tokens (else a test could not tell it), unless there is none
        model.transformer.reset_memory_length(1000)
        longer = manual_greedy(model, PROMPT, new_tokens) if config.mem_len > 0 else None
        model.transformer.reset_memory_length(config.mem_len)
        if len(generated) == new_tokens and len(set(generated)) >= 4 and longer != generated:
            break
    else:
        raise SystemExit(f"{name}: no weights in 50 draws generate tokens that the memory's length changes")
    hidden, logits = [], []
    with torch.no_grad():
        for ids in ROWS:
            result = model(input_ids=torch.tensor([ids]), output_hidden_states=True)
            hidden.append(result.hidden_states[-1][0])
            if lm:
                logits.append(result.prediction_scores[0])
                probs = result.prediction_scores[0].exp().sum(-1)
                assert float((probs - 1).abs().max()) < 1e-4, f"{name}: log-probabilities do not sum to 1"
            elif hasattr(result, "logits"):
                logits.append(result.logits[0])
    lines = [f"rows={len(ROWS)}"] + [f"ids{i}=" + ",".join(map(str, ids)) for i, ids in enumerate(ROWS)]
    if lm:
        lines += ["prompt_text=(ids)", "prompt_ids=" + ",".join(map(str, PROMPT)),
                  "greedy_ids=" + ",".join(map(str, generated)), f"max_new_tokens={len(generated)}",
                  f"vocab_size={model.config.vocab_size}"]
    (out / "reference.txt").write_text("\n".join(lines) + "\n", encoding="ascii")
    torch.cat(hidden).numpy().astype("<f4").tofile(out / "hidden.bin")
    if logits:
        torch.cat(logits).reshape(-1).numpy().astype("<f4").tofile(out / "logits.bin")
    print(f"  {name}: {cls.__name__}, draw {attempt}, hidden std {float(torch.cat(hidden).std()):.2f}"
          + (f", greedy {generated}, mem_len 1000: {longer}" if lm else ""))


def main() -> None:
    torch.set_num_threads(1)
    only = set(sys.argv[1:])
    for i, (name, cls, changes) in enumerate(FIXTURES_LIST):
        if not only or name in only:
            make(name, cls, changes, seed=3600 + i)


if __name__ == "__main__":
    main()
