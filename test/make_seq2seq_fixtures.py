#!/usr/bin/env python3
"""Encoder-decoder fixtures for test/test_seq2seq.c and test_cuda (issue 11): tiny
XForConditionalGeneration models saved by transformers, with what transformers computes.

Run from the repository root: python3 test/make_seq2seq_fixtures.py

Each dir test/fixtures/<name>/ holds config.json, generation_config.json, model.safetensors and
    reference.txt          rows=<n>, src<i>=<comma ids> (encoder input), dec<i>=<comma ids> (decoder
                           input, starting with decoder_start_token_id)
    encoder_hidden.bin     float32 LE [sum of src lengths][d_model]: the encoder's last_hidden_state
    decoder_logits.bin     float32 LE [sum of dec lengths][vocab]: the LM logits of every decoder position
    generation_cases.txt   generate() cases in make_generation_fixtures.py's format; prompt= is the
                           encoder input, output= the new decoder tokens (after the start token)
Each row runs alone (no padding); the library pads on the left and must give the same.
T5 has as many decoder as encoder layers: transformers 5.23's cache breaks on T5 with
num_decoder_layers != num_layers, so generate() could not record such a model.
"""
import json
import sys
from pathlib import Path

import numpy as np
import torch
import transformers

FIXTURES = Path(__file__).resolve().parent / 'fixtures'
ONLY = set(sys.argv[1:])  # names given: write only those fixtures (each seeds itself where it must)
torch.manual_seed(0)
def make(name, cfg_cls, model_cls, kw, scale=0.2):
    if ONLY and name not in ONLY:
        return
    cfg = cfg_cls(**kw) if callable(cfg_cls) else getattr(transformers, cfg_cls)(**kw)
    m = getattr(transformers, model_cls)(cfg).eval()
    with torch.no_grad():
        for n, p in m.named_parameters():
            if not p.requires_grad:  # frozen: a computed sinusoid
                continue
            if p.dim() > 1:
                p.normal_(0, scale)
            else:
                p.normal_(1.0 if 'norm' in n.lower() else 0.0, 0.1)  # BERT's LayerNorm too
        if hasattr(m, 'final_logits_bias'):
            m.final_logits_bias.normal_(0, 0.5)
    d = FIXTURES / name
    m.save_pretrained(d)
    src = [[5, 17, 45, 88, 9, 63, 2], [5, 77, 31, 101, 3, 54, 12, 96, 40, 8, 33, 2], [19, 64, 3, 2]]
    start = cfg.decoder_start_token_id
    dec = [[start, 7, 9, 11, 13], [start, 21, 22], [start, 30, 31, 32, 33, 34]]
    hid, log = [], []
    for s, t in zip(src, dec):
        with torch.no_grad():
            enc = m.get_encoder()(input_ids=torch.tensor([s])).last_hidden_state[0]
            out = m(input_ids=torch.tensor([s]), decoder_input_ids=torch.tensor([t]), use_cache=False).logits[0]  # FSMT masks causally only without the cache
        hid.append(enc.numpy()); log.append(out.numpy())
    np.concatenate(hid).astype('<f4').tofile(d / 'encoder_hidden.bin')
    np.concatenate(log).astype('<f4').tofile(d / 'decoder_logits.bin')
    with open(d / 'reference.txt', 'w') as f:
        f.write(f"rows={len(src)}\n")
        for i, s in enumerate(src): f.write(f"src{i}=" + ",".join(map(str, s)) + "\n")
        for i, s in enumerate(dec): f.write(f"dec{i}=" + ",".join(map(str, s)) + "\n")
T5 = dict(vocab_size=120, d_model=48, d_kv=8, d_ff=96, num_layers=2, num_decoder_layers=2, num_heads=6, dropout_rate=0.0, decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
make('t5-s2s', 'T5Config', 'T5ForConditionalGeneration', dict(T5, feed_forward_proj='relu'))
make('t5v11-s2s', 'T5Config', 'T5ForConditionalGeneration', dict(T5, feed_forward_proj='gated-gelu', tie_word_embeddings=False))
BART = dict(vocab_size=120, d_model=48, encoder_layers=2, decoder_layers=3, encoder_attention_heads=6, decoder_attention_heads=6, encoder_ffn_dim=96, decoder_ffn_dim=96, max_position_embeddings=64, dropout=0.0, attention_dropout=0.0, activation_dropout=0.0, pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2, forced_eos_token_id=None)
make('bart-s2s', 'BartConfig', 'BartForConditionalGeneration', BART)
KIN = dict(BART, max_position_embeddings=64)
make('mbart-s2s', 'MBartConfig', 'MBartForConditionalGeneration', dict(KIN, forced_eos_token_id=2))
make('blenderbot-s2s', 'BlenderbotConfig', 'BlenderbotForConditionalGeneration', dict(KIN, decoder_start_token_id=0, encoder_no_repeat_ngram_size=3))
make('blenderbot-small-s2s', 'BlenderbotSmallConfig', 'BlenderbotSmallForConditionalGeneration', dict(KIN, decoder_start_token_id=0))
make('marian-s2s', 'MarianConfig', 'MarianMTModel', dict(KIN, scale_embedding=True, pad_token_id=1, decoder_start_token_id=1, activation_function='swish'))
make('m2m100-s2s', 'M2M100Config', 'M2M100ForConditionalGeneration', dict(KIN, pad_token_id=1, decoder_start_token_id=2))
make('fsmt-s2s', 'FSMTConfig', 'FSMTForConditionalGeneration',
     dict({k: v for k, v in KIN.items() if k != 'vocab_size'}, langs=['en', 'de'], src_vocab_size=130, tgt_vocab_size=110, decoder_start_token_id=2,
          forced_eos_token_id=None))
make('mt5-s2s', 'MT5Config', 'MT5ForConditionalGeneration', dict(T5, feed_forward_proj='gated-gelu'))
make('pegasus-s2s', 'PegasusConfig', 'PegasusForConditionalGeneration', dict(KIN, scale_embedding=True, pad_token_id=0, eos_token_id=1, decoder_start_token_id=0, activation_function='relu'))
# LED: BART's towers with Longformer's attention in the encoder: 4 heads (3 ranks split them
# unevenly), windows 4 and 8 (one-sided 2 and 4, below the 7- and 12-token sources), positions from
# row 0 in tables of their own. Its own seed, so that it is the same made alone. encoder_hidden.bin
# and the generate() cases run without global tokens (as LED's generate does unless given a mask) but for
# the global_* cases (global= lines: generate(global_attention_mask=...));
# encoder_hidden_global.bin is the encoder's output with the global tokens of reference.txt's
# global<i>= lines (pf_encode_global), decoder_logits_global.bin the decoder's logits over it
# (pf_forward_seq2seq_global).
LED = dict(vocab_size=120, d_model=48, encoder_layers=2, decoder_layers=3, encoder_attention_heads=4, decoder_attention_heads=4,
           encoder_ffn_dim=96, decoder_ffn_dim=96, max_encoder_position_embeddings=64, max_decoder_position_embeddings=64,
           attention_window=[4, 8], dropout=0.0, attention_dropout=0.0, activation_dropout=0.0, pad_token_id=1,
           bos_token_id=0, eos_token_id=2, decoder_start_token_id=2)
LED_GLOBAL = [[int(t == 0) for t in range(7)], [int(t in (0, 7)) for t in range(12)], [0] * 4]
if not ONLY or 'led-s2s' in ONLY:
    torch.manual_seed(36)
    make('led-s2s', 'LEDConfig', 'LEDForConditionalGeneration', LED)
    d = FIXTURES / 'led-s2s'
    m = transformers.LEDForConditionalGeneration.from_pretrained(d).eval()
    src = [[5, 17, 45, 88, 9, 63, 2], [5, 77, 31, 101, 3, 54, 12, 96, 40, 8, 33, 2], [19, 64, 3, 2]]
    dec = [[int(t) for t in line.split('=')[1].split(',')] for line in (d / 'reference.txt').read_text().splitlines()
           if line.startswith('dec')]  # make()'s decoder inputs
    hidden, logits = [], []
    with torch.no_grad():
        for s, g, t in zip(src, LED_GLOBAL, dec):
            out = m.get_encoder()(input_ids=torch.tensor([s]), global_attention_mask=torch.tensor([g])).last_hidden_state[0]
            plain = m.get_encoder()(input_ids=torch.tensor([s])).last_hidden_state[0]
            assert any(g) == bool((out - plain).abs().max() > 1e-2), "led-s2s: global tokens must move their rows' outputs"
            hidden.append(out.numpy())
            logits.append(m(input_ids=torch.tensor([s]), global_attention_mask=torch.tensor([g]),
                            decoder_input_ids=torch.tensor([t]), use_cache=False).logits[0].numpy())
    np.concatenate(hidden).astype('<f4').tofile(d / 'encoder_hidden_global.bin')
    np.concatenate(logits).astype('<f4').tofile(d / 'decoder_logits_global.bin')  # pf_forward_seq2seq_global's
    with open(d / 'reference.txt', 'a') as f:
        for i, g in enumerate(LED_GLOBAL): f.write(f"global{i}=" + ",".join(map(str, g)) + "\n")


def cases(name, model_cls):
    if ONLY and name not in ONLY:
        return
    d = FIXTURES / name
    m = getattr(transformers, model_cls).from_pretrained(d).eval()
    P = [[5, 17, 45, 88, 9, 63, 2], [5, 77, 31, 101, 3, 54, 12, 96, 40, 8, 33, 2], [19, 64, 3, 2]]
    out = []
    def run(case, prompts, opts, global_rows=None):
        L = max(map(len, prompts)); pad = m.config.pad_token_id
        ids = torch.tensor([p + [pad] * (L - len(p)) for p in prompts]); mask = torch.tensor([[1]*len(p) + [0]*(L-len(p)) for p in prompts])
        extra = {}
        if global_rows:  # LED: the encoder's global tokens, a global= line a prompt (pads 0)
            extra['global_attention_mask'] = torch.tensor([g + [0] * (L - len(g)) for g in global_rows])
        with torch.no_grad():
            g = m.generate(ids, attention_mask=mask, return_dict_in_generate=True, output_scores=True, **opts, **extra)
            if global_rows:  # the mask must change what generate() returns, or the case could not fail without it
                plain = m.generate(ids, attention_mask=mask, return_dict_in_generate=True, output_scores=True, **opts)
                moved = plain.sequences.shape != g.sequences.shape or (plain.sequences != g.sequences).any() or \
                    (opts.get("num_beams", 1) > 1 and (plain.sequences_scores - g.sequences_scores).abs().max() > 1e-3)
                assert moved, f"{name} {case}: the global tokens change nothing"
        global_lines = ["global=" + ",".join(map(str, r)) for r in global_rows] if global_rows else []
        eos = m.generation_config.eos_token_id
        if opts.get("num_beams", 1) == 1:  # each greedy choice decisive, as make_generation_fixtures.py asks
            for step, scores in enumerate(g.scores):
                for row, seq in enumerate(g.sequences.tolist()):
                    if eos in seq[1:step + 1]:
                        continue  # the row had ended: its pads are not choices
                    top = torch.topk(scores[row].float(), 2).values
                    if top[0] - top[1] <= 1e-3 and torch.isfinite(top[1]):
                        raise SystemExit(f"{name} {case}: step {step} row {row} is a near tie ({float(top[0] - top[1]):.2e})")
        lines = [f"case={case}", "options=" + json.dumps(opts)] + ["prompt=" + ",".join(map(str, p)) for p in prompts] + global_lines
        for i, seq in enumerate(g.sequences.tolist()):
            new = seq[1:]
            if eos in new: new = new[:new.index(eos) + 1]
            lines.append("output=" + ",".join(map(str, new)))
        if opts.get("num_beams", 1) > 1:
            for sc in g.sequences_scores.tolist(): lines.append(f"score={sc:.6f}")
        out.append("\n".join(lines))
    run("greedy", P[:1], dict(max_new_tokens=12, do_sample=False, num_beams=1))
    run("batch3", P, dict(max_new_tokens=10, do_sample=False, num_beams=1))
    run("beam4", P[:1], dict(max_new_tokens=10, do_sample=False, num_beams=4, length_penalty=1.0, early_stopping=True))
    run("beam3_ngram", P[1:2], dict(max_new_tokens=10, do_sample=False, num_beams=3, no_repeat_ngram_size=2))
    run("beam3_batch2", P[:2], dict(max_new_tokens=8, do_sample=False, num_beams=3, num_return_sequences=2))
    run("suppress", P[:2], dict(max_new_tokens=8, do_sample=False, num_beams=1, suppress_tokens=[4, 85],
                                begin_suppress_tokens=[43]))
    run("forced", P[2:], dict(max_new_tokens=6, do_sample=False, num_beams=1, forced_bos_token_id=7, forced_eos_token_id=m.generation_config.eos_token_id))
    if name == 'led-s2s':  # generate(global_attention_mask=...): reference.txt's global tokens (row 2 none)
        run("global_batch3", P, dict(max_new_tokens=10, do_sample=False, num_beams=1), LED_GLOBAL)
        run("global_beam3_batch2", P[:2], dict(max_new_tokens=8, do_sample=False, num_beams=3, num_return_sequences=2), LED_GLOBAL[:2])
        run("global_ngram", P[1:2], dict(max_new_tokens=12, do_sample=False, num_beams=1, no_repeat_ngram_size=1), [[int(t in (3, 11)) for t in range(12)]])
    if getattr(m.generation_config, 'encoder_no_repeat_ngram_size', 0):
        # a source holding the start of its own unbanned output, so that the ban changes the result
        for extra in range(1, 40):
            source = P[0][:-1] + [(extra * 7 + k) % 100 + 3 for k in range(extra % 5)]
            ids = torch.tensor([source])
            with torch.no_grad():
                free = m.generate(ids, max_new_tokens=10, do_sample=False, num_beams=1, encoder_no_repeat_ngram_size=0)[0, 1:].tolist()
                source = source + free[:4] + [P[0][-1]]
                a = m.generate(torch.tensor([source]), max_new_tokens=10, do_sample=False, num_beams=1, encoder_no_repeat_ngram_size=0)[0].tolist()
                b = m.generate(torch.tensor([source]), max_new_tokens=10, do_sample=False, num_beams=1, encoder_no_repeat_ngram_size=3)[0].tolist()
            if a != b:
                run("encoder_ngram", [source], dict(max_new_tokens=10, do_sample=False, num_beams=1, encoder_no_repeat_ngram_size=3))
                run("encoder_ngram_beam", [source], dict(max_new_tokens=10, do_sample=False, num_beams=3, encoder_no_repeat_ngram_size=3))
                break
        else:
            raise SystemExit(name + ": no source found on which the encoder n-gram ban matters")
    (d / 'generation_cases.txt').write_text("\n\n".join(out) + "\n")
for n, c in (('t5-s2s', 'T5ForConditionalGeneration'), ('t5v11-s2s', 'T5ForConditionalGeneration'),
             ('bart-s2s', 'BartForConditionalGeneration'), ('mbart-s2s', 'MBartForConditionalGeneration'),
             ('blenderbot-s2s', 'BlenderbotForConditionalGeneration'),
             ('blenderbot-small-s2s', 'BlenderbotSmallForConditionalGeneration'), ('marian-s2s', 'MarianMTModel'),
             ('pegasus-s2s', 'PegasusForConditionalGeneration'), ('m2m100-s2s', 'M2M100ForConditionalGeneration'),
             ('mt5-s2s', 'MT5ForConditionalGeneration'), ('fsmt-s2s', 'FSMTForConditionalGeneration'),
             ('led-s2s', 'LEDForConditionalGeneration')):
    cases(n, c)


def make_text(name, cfg_cls, model_cls, kw, tokenizer_dir):
    """A model whose vocabulary is a tokenizer fixture's, saved with it, and text_cases.txt: per
    case a source= line (the text) and an output= line, transformers' decode of greedy generate()
    (12 new tokens) with skip_special_tokens=True; the library's pf_generate_text and
    build/generate must print the same."""
    if ONLY and name not in ONLY:
        return
    tok = transformers.AutoTokenizer.from_pretrained(ROOT / 'fixtures' / tokenizer_dir)
    make(name, cfg_cls, model_cls, dict(kw, vocab_size=len(tok)))
    d = FIXTURES / name
    m = getattr(transformers, model_cls).from_pretrained(d).eval()
    if hasattr(m, 'final_logits_bias'):  # no lone bytes of a character: their text is U+FFFD in HF, the bytes in ours
        with torch.no_grad():
            for i in range(len(tok)):
                if '\ufffd' in tok.decode([i]):
                    m.final_logits_bias[0, i] -= 100.0
    for f in ('encoder_hidden.bin', 'decoder_logits.bin', 'reference.txt', 'generation_cases.txt'):
        (d / f).unlink(missing_ok=True)  # the outputs of the model before the change; these dirs test text alone
    m.save_pretrained(d)
    tok.save_pretrained(d)
    lines = []
    for text in ("Hello world", "The house is wonderful.", "Caf\u00e9 na\u00efve \u6771\u4eac", "a b c d e f g"):
        with torch.no_grad():
            out = m.generate(torch.tensor([tok(text).input_ids]), max_new_tokens=12, do_sample=False, num_beams=1)
        lines += ["source=" + text, "output=" + tok.decode(out[0], skip_special_tokens=True).replace("\n", " ")]
    (d / 'text_cases.txt').write_text("\n".join(lines) + "\n")


ROOT = Path(__file__).resolve().parent
make_text('t5-text-s2s', 'T5Config', 'T5ForConditionalGeneration', dict(T5, feed_forward_proj='relu'), 'tokenizer-t5s')
make_text('bart-text-s2s', 'BartConfig', 'BartForConditionalGeneration', BART, 'tokenizer-bart')
make_text('marian-text-s2s', 'MarianConfig', 'MarianMTModel',
          dict(KIN, scale_embedding=True, pad_token_id=2, eos_token_id=0, decoder_start_token_id=2, activation_function='swish'),
          'tokenizer-marian')
make_text('byt5-text-s2s', 'T5Config', 'T5ForConditionalGeneration', dict(T5, feed_forward_proj='gated-gelu', pad_token_id=0, eos_token_id=1), 'tokenizer-byt5')


def make_untied_t5():
    """t5v11-untied-s2s: a T5 v1.1 file as the hub has them (transformers 4 wrote them): its own
    lm_head.weight, tie_word_embeddings false and no scale_decoder_outputs key. transformers 5.23
    ties the head to the embedding whatever the file says; the math of these checkpoints (and of
    transformers 4) is the untied head on the unscaled decoder output, which the reference here
    computes from the decoder's last hidden state: decoder_logits.bin = hidden @ lm_head^T."""
    import json
    import shutil
    from safetensors.torch import load_file, save_file
    src, dst = FIXTURES / 't5v11-s2s', FIXTURES / 't5v11-untied-s2s'
    if dst.exists():
        shutil.rmtree(dst)
    dst.mkdir()
    m = transformers.T5ForConditionalGeneration.from_pretrained(src).eval()
    tensors = load_file(src / 'model.safetensors')
    generator = torch.Generator().manual_seed(11)
    head = torch.randn(m.config.vocab_size, m.config.d_model, generator=generator) * 0.2
    tensors['lm_head.weight'] = head
    save_file(tensors, dst / 'model.safetensors', metadata={'format': 'pt'})
    config = json.loads((src / 'config.json').read_text())
    config['tie_word_embeddings'] = False
    config.pop('scale_decoder_outputs', None)
    (dst / 'config.json').write_text(json.dumps(config, indent=2) + "\n")
    shutil.copy(src / 'reference.txt', dst / 'reference.txt')
    shutil.copy(src / 'encoder_hidden.bin', dst / 'encoder_hidden.bin')
    rows = [line.split('=', 1) for line in (src / 'reference.txt').read_text().split('\n') if '=' in line]
    ref = {k: [int(x) for x in v.split(',')] for k, v in rows if k != 'rows'}
    logits = []
    for i in range(int(dict(rows)['rows'])):
        with torch.no_grad():
            out = m(input_ids=torch.tensor([ref[f'src{i}']]), decoder_input_ids=torch.tensor([ref[f'dec{i}']]),
                    use_cache=False, output_hidden_states=True)
        logits.append((out.decoder_hidden_states[-1][0] @ head.T).numpy())
    np.concatenate(logits).astype('<f4').tofile(dst / 'decoder_logits.bin')


if not ONLY or "t5v11-untied-s2s" in ONLY:
    make_untied_t5()

# Marian with a vocabulary per tower (share_encoder_decoder_embeddings false, decoder_vocab_size
# below vocab_size: several opus-mt checkpoints), seeded on its own so that it can be written alone
torch.manual_seed(11)
make('marian-separate-s2s', 'MarianConfig', 'MarianMTModel',
     dict(KIN, scale_embedding=True, pad_token_id=1, decoder_start_token_id=1, activation_function='swish',
          share_encoder_decoder_embeddings=False, decoder_vocab_size=90))
cases('marian-separate-s2s', 'MarianMTModel')


# EncoderDecoderModel (model_type "encoder-decoder"): two towers of one family, the decoder with
# cross-attention, each its own vocabulary (the encoder's 110 ids, the decoder's 90); 5 heads, so
# that 2 and 3 ranks split them unevenly. BERT -> BERT (its LM head's transform, segment tables),
# BertGeneration -> BertGeneration (neither) and RoBERTa -> RoBERTa (positions after the pad id,
# RoBERTa's LM head), each seeded on its own.
def encoder_decoder(family):
    def config(**kw):
        shape = dict(hidden_size=40, num_attention_heads=5, intermediate_size=80, max_position_embeddings=64,
                     hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
        encoder = family(vocab_size=110, num_hidden_layers=2, **shape)
        decoder = family(vocab_size=90, num_hidden_layers=3, is_decoder=True, add_cross_attention=True, **shape)
        return transformers.EncoderDecoderConfig.from_encoder_decoder_configs(encoder, decoder, **kw)
    return config


for name, family, seed, ids in (('bert2bert-s2s', transformers.BertConfig, 21, (1, 0, 2)),
                                ('bert-generation-s2s', transformers.BertGenerationConfig, 22, (1, 0, 2)),
                                ('roberta2roberta-s2s', transformers.RobertaConfig, 23, (0, 1, 2))):  # RoBERTa: <s> 0, <pad> 1
    torch.manual_seed(seed)
    start, pad, eos = ids
    make(name, encoder_decoder(family), 'EncoderDecoderModel', dict(decoder_start_token_id=start, pad_token_id=pad, eos_token_id=eos))
    cases(name, 'EncoderDecoderModel')


# LED with the BART tokenizer's vocabulary (make_text's led-text-s2s), for the server's
# global_attention field (test/test_server.sh): server_global.txt holds a prompt's ids, the
# positions given global attention, and transformers' greedy text (10 new tokens, special tokens
# skipped) with generate(global_attention_mask=...) and without it, which must differ.
if not ONLY or 'led-text-s2s' in ONLY:
    torch.manual_seed(37)
    make_text('led-text-s2s', 'LEDConfig', 'LEDForConditionalGeneration', LED, 'tokenizer-bart')
    d = FIXTURES / 'led-text-s2s'
    m = transformers.LEDForConditionalGeneration.from_pretrained(d).eval()
    tok = transformers.AutoTokenizer.from_pretrained(d)
    def greedy_text(ids, global_positions):
        mask = torch.tensor([[int(t in global_positions) for t in range(len(ids))]])
        with torch.no_grad():
            out = m.generate(torch.tensor([ids]), global_attention_mask=mask, max_new_tokens=10, do_sample=False, num_beams=1)
        return tok.decode(out[0], skip_special_tokens=True)
    # the first prompt and global tokens that change the text (this random model repeats one token
    # whatever the source, under most)
    found = None
    for text in ("The house is wonderful, and the garden is green in the morning.", "Hello world", "a b c d e f g"):
        ids = tok(text).input_ids
        for positions in ([0, 5], [0, 3], [1], [0], [2, 4], [1, 3]):
            with_global, without = greedy_text(ids, positions), greedy_text(ids, [])
            if max(positions) < len(ids) and with_global != without:
                found = ids, positions, with_global, without
                break
        if found:
            break
    if not found:
        raise SystemExit("led-text-s2s: no global tokens found that change the greedy text")
    ids, positions, with_global, without = found
    (d / 'server_global.txt').write_text("prompt=" + ",".join(map(str, ids)) + "\nglobal=" + ",".join(map(str, positions))
                                         + "\nwith=" + json.dumps(with_global) + "\nwithout=" + json.dumps(without) + "\n")
