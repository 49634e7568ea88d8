#!/usr/bin/env python3
"""ProphetNet fixtures for test/test_seq2seq.c (issue 36): tiny ...ForConditionalGeneration models
saved by transformers, in make_seq2seq_fixtures.py's format (config.json, model.safetensors,
reference.txt, encoder_hidden.bin, decoder_logits.bin, generation_cases.txt).

Run from the repository root:
    python3 test/make_prophetnet_fixtures.py        # prophetnet-s2s (transformers 5.24)
    python3 test/make_prophetnet_fixtures.py xlm    # xlm-prophetnet-s2s

xlm-prophetnet-s2s: transformers 5 dropped XLM-ProphetNet, so the model is made and saved by
transformers 4.57 (/work/venv-tf4, run by this script: its `xlm-save` step), the last 4.x with it
(under models/deprecated). That copy cannot decode with a cache (its position embedding calls
get_seq_length on the legacy tuple it returns) and has no generate(), so its references come from
transformers 5.24's ProphetNet on the same files, after checking that both give the same
several-token forward (the same code: XLMProphetNet* is ProphetNet* renamed).

The logits are those of the first predict stream (transformers' `logits = predict_logits[:, 0]`,
what generate() reads). decoder_logits.bin holds transformers' logits computed one decoder token a
step over its cache, as generate() runs the decoder: transformers' forward over several decoder
tokens at once reads the predict stream's relative position bias from the wrong rows
(get_predict_relative_pos_embeddings permutes [batch, ngram, len, buckets, heads] by
(0, 2, 1, 4, 3), so that query t of stream s takes another position's or stream's row unless the
decoder input is one token long). The script checks that claim: with that permutation replaced by
(0, 1, 4, 2, 3) the several-token forward gives the step-by-step logits (within 1e-5), and
without it it does not.
"""
import json
import sys
from pathlib import Path

import numpy as np
import torch
import transformers

SAVE_XLM = sys.argv[1:2] == ['xlm-save']  # transformers 4.57's step: make and save the XLM model
XLM = sys.argv[1:] == ['xlm'] or SAVE_XLM
if SAVE_XLM:
    from transformers.models.deprecated.xlm_prophetnet import modeling_xlm_prophetnet as modeling
    CONFIG, MODEL = modeling.XLMProphetNetConfig, modeling.XLMProphetNetForConditionalGeneration
else:
    from transformers.models.prophetnet import modeling_prophetnet as modeling
    CONFIG, MODEL = transformers.ProphetNetConfig, transformers.ProphetNetForConditionalGeneration
NAME = 'xlm-prophetnet-s2s' if XLM else 'prophetnet-s2s'
FIXTURES = Path(__file__).resolve().parent / 'fixtures'
TF4_PYTHON = '/work/venv-tf4/bin/python'
src = [[5, 17, 45, 88, 9, 63, 2], [5, 77, 31, 101, 3, 54, 12, 96, 40, 8, 33, 2], [19, 64, 3, 2]]
# 5 heads (2 and 3 ranks split them unevenly); 8 buckets reaching 16 positions, so that the
# decoder's distances (up to 13) reach the log buckets; ngram 3: the first predict stream adds row
# 2 of the n-gram embeddings (transformers' ngram_embeddings[ngram - 1] for stream 0)
# As many encoder as decoder layers: transformers 5.24 sizes the generation cache by
# num_hidden_layers, which ProphetNetConfig answers with num_encoder_layers, so a longer decoder
# breaks its cached decoding (and generate()).
KW = dict(vocab_size=120, hidden_size=40, encoder_ffn_dim=80, decoder_ffn_dim=80, num_encoder_layers=3,
          num_decoder_layers=3, num_encoder_attention_heads=5, num_decoder_attention_heads=5, max_position_embeddings=64,
          ngram=3, num_buckets=8, relative_max_distance=16, dropout=0.0, attention_dropout=0.0, activation_dropout=0.0,
          pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=0)
torch.manual_seed(36 if not XLM else 37)
cfg = CONFIG(**KW)
m = MODEL(cfg).eval()
# The embeddings (tokens, positions, n-gram rows, relative projections) large and the sublayers'
# output projections small: with make_seq2seq_fixtures.py's 0.2 everywhere the post-norm towers
# collapse (every encoder row alike, cosine 0.999) and greedy decoding repeats one token.
with torch.no_grad():
    for n, p in m.named_parameters():
        if p.dim() > 1:
            p.normal_(0, 1.0 if 'embeddings' in n else 0.05 if 'out_proj' in n or 'feed_forward' in n else 0.2)
        else:
            p.normal_(1.0 if 'norm' in n.lower() else 0.0, 0.1)
d = FIXTURES / NAME
if XLM and not SAVE_XLM:  # transformers 4.57 makes and saves it, and writes its several-token forward
    import subprocess
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([TF4_PYTHON, __file__, 'xlm-save', tmp], check=True)
        tf4_whole = [np.load(Path(tmp) / f'whole{i}.npy') for i in range(len(src))]
    m = MODEL.from_pretrained(d).eval()  # transformers 5's ProphetNet on the XLM files
else:
    m.save_pretrained(d)
    m = MODEL.from_pretrained(d).eval()

CACHE_KW = 'cache'  # transformers 5's name


def stepwise(src, dec):
    """The decoder's logits one token a step over its cache (generate()'s way)."""
    with torch.no_grad():
        enc = m.get_encoder()(input_ids=torch.tensor([src]))
        cache, rows = None, []
        for t in range(len(dec)):
            out = m(encoder_outputs=enc, decoder_input_ids=torch.tensor([dec[t:t + 1]]), use_cache=True,
                    **{CACHE_KW: cache})
            cache = getattr(out, CACHE_KW)
            rows.append(out.logits[0, 0])
    return enc.last_hidden_state[0], torch.stack(rows)


def whole(src, dec):
    with torch.no_grad():
        return m(input_ids=torch.tensor([src]), decoder_input_ids=torch.tensor([dec]), use_cache=False).logits[0]


start = cfg.decoder_start_token_id
dec = [[start, 7, 9, 11, 13], [start, 21, 22], [start, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42]]
if SAVE_XLM:
    for i, (s, t) in enumerate(zip(src, dec)):
        np.save(Path(sys.argv[2]) / f'whole{i}.npy', whole(s, t).numpy())
    sys.exit(0)
if XLM:  # the same files, the same several-token forward in transformers 4.57's XLM-ProphetNet and 5.24's ProphetNet
    for s, t, theirs in zip(src, dec, tf4_whole):
        gap = float((whole(s, t) - torch.tensor(theirs)).abs().max())
        assert gap < 1e-5, f"{NAME}: transformers 5's ProphetNet is {gap:.2e} from 4.57's XLM-ProphetNet"
hid, log = [], []
for s, t in zip(src, dec):
    enc, logits = stepwise(s, t)
    hid.append(enc.numpy()); log.append(logits.numpy())
    gap = float((whole(s, t) - logits).abs().max())
    assert gap > 1e-3, f"{NAME}: the several-token forward agrees with the cached steps ({gap:.2e}): the note is wrong"
# the several-token forward with the permutation fixed gives the cached steps' logits
ATTN = modeling.ProphetNetNgramSelfAttention
original_permute = torch.Tensor.permute
def fixed(self, *dims):
    if dims == (0, 2, 1, 4, 3):
        dims = (0, 1, 4, 2, 3)
    return original_permute(self, *dims)
original_predict = ATTN.get_predict_relative_pos_embeddings
def predict_fixed(self, *args, **kwargs):
    torch.Tensor.permute = fixed
    try:
        return original_predict(self, *args, **kwargs)
    finally:
        torch.Tensor.permute = original_permute
ATTN.get_predict_relative_pos_embeddings = predict_fixed
for s, t, logits in zip(src, dec, log):
    gap = float((whole(s, t) - torch.tensor(logits)).abs().max())
    assert gap < 1e-5, f"{NAME}: the fixed several-token forward is {gap:.2e} from the cached steps"
ATTN.get_predict_relative_pos_embeddings = original_predict
np.concatenate(hid).astype('<f4').tofile(d / 'encoder_hidden.bin')
np.concatenate(log).astype('<f4').tofile(d / 'decoder_logits.bin')
with open(d / 'reference.txt', 'w') as f:
    f.write(f"rows={len(src)}\n")
    for i, s in enumerate(src): f.write(f"src{i}=" + ",".join(map(str, s)) + "\n")
    for i, s in enumerate(dec): f.write(f"dec{i}=" + ",".join(map(str, s)) + "\n")

# generate() cases (make_seq2seq_fixtures.py's cases(), in make_generation_fixtures.py's format)
P = src
out = []


def run(case, prompts, opts):
    L = max(map(len, prompts)); pad = m.config.pad_token_id
    ids = torch.tensor([p + [pad] * (L - len(p)) for p in prompts])
    mask = torch.tensor([[1] * len(p) + [0] * (L - len(p)) for p in prompts])
    with torch.no_grad():
        g = m.generate(ids, attention_mask=mask, return_dict_in_generate=True, output_scores=True, **opts)
    eos = m.generation_config.eos_token_id
    if opts.get("num_beams", 1) == 1:  # each greedy choice decisive
        for step, scores in enumerate(g.scores):
            for row, seq in enumerate(g.sequences.tolist()):
                if eos in seq[1:step + 1]:
                    continue
                top = torch.topk(scores[row].float(), 2).values
                if top[0] - top[1] <= 1e-3 and torch.isfinite(top[1]):
                    raise SystemExit(f"{NAME} {case}: step {step} row {row} is a near tie ({float(top[0] - top[1]):.2e})")
    lines = [f"case={case}", "options=" + json.dumps(opts)] + ["prompt=" + ",".join(map(str, p)) for p in prompts]
    for seq in g.sequences.tolist():
        new = seq[1:]
        if eos in new: new = new[:new.index(eos) + 1]
        lines.append("output=" + ",".join(map(str, new)))
    if opts.get("num_beams", 1) > 1:
        for sc in g.sequences_scores.tolist(): lines.append(f"score={sc:.6f}")
    out.append("\n".join(lines))


run("greedy", P[:1], dict(max_new_tokens=16, do_sample=False, num_beams=1))
run("batch3", P, dict(max_new_tokens=12, do_sample=False, num_beams=1))
run("beam4", P[:1], dict(max_new_tokens=10, do_sample=False, num_beams=4, length_penalty=1.0, early_stopping=True))
run("beam3_batch2", P[:2], dict(max_new_tokens=8, do_sample=False, num_beams=3, num_return_sequences=2))
run("suppress", P[:2], dict(max_new_tokens=8, do_sample=False, num_beams=1, suppress_tokens=[4, 85],
                            begin_suppress_tokens=[43]))
run("forced", P[2:], dict(max_new_tokens=6, do_sample=False, num_beams=1, forced_bos_token_id=7,
                          forced_eos_token_id=m.generation_config.eos_token_id))
(d / 'generation_cases.txt').write_text("\n\n".join(out) + "\n")
print(NAME, "written with transformers", transformers.__version__, "(the model made by 4.57)" if XLM else "")
