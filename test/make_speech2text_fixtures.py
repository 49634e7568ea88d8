#!/usr/bin/env python3
"""Speech2Text fixtures for test_seq2seq.c (issue 16): a tiny random Speech2TextForConditionalGeneration
saved by transformers 5.24 (save_pretrained: its tensor names), its feature extractor's
preprocessor_config.json, and what transformers computes for a padded batch of two waveforms of
different lengths.

Run from the repository root: python3 test/make_speech2text_fixtures.py

test/fixtures/speech2text-s2s/ holds config.json, generation_config.json, model.safetensors,
preprocessor_config.json, a Speech2TextTokenizer (vocab.json and sentencepiece.bpe.model: a SentencePiece
BPE trained here on a tiny corpus to the model's vocab_size, ids as fairseq's S2T models number them;
tokenizer_config.json with do_upper_case and do_lower_case true, as facebook/s2t-small-librispeech-asr) and
    waveforms.bin        float32 LE: the two waveforms one after the other (lengths in reference.txt)
    fbank_features.bin   float32 LE [2][frames][mel]: the extractor's padded batch (zeros after the
                         shorter row's own frames)
    encoder_hidden.bin   float32 LE: encoder last_hidden_state of the padded batch run with its
                         attention mask, each row's own (subsampled) frames, row 0's then row 1's
    encoder_alone.bin    float32 LE: the shorter row's last_hidden_state run alone (no padding: its
                         convolutions see no padded frames, so it differs from the batch's)
    teacher_logits.bin   float32 LE: teacher-forced logits of the decoder inputs in reference.txt,
                         each row's own positions, row 0's then row 1's
    model.bf16.safetensors, teacher_logits.bf16.bin: the checkpoint rounded to bfloat16, and the
                         logits transformers computes in float32 from those rounded weights (the
                         16-bit path, the host subsampler included)
    speech.wav           the first waveform as 16-bit PCM; speech.txt: the text transformers' extractor,
                         generate() and batch_decode(skip_special_tokens=True) give for it
    sentencepiece_non_ascii.model  a BPE like it with pieces beyond ASCII ("\u00e9"), for the refusal of
                         do_upper_case there
    tokenizer.txt        tab-separated lines: "decode<TAB>ID,ID,...<TAB>TEXT" (decode(ids,
                         skip_special_tokens=True): every generation of reference.txt and a few more) and
                         "encode<TAB>TEXT<TAB>ID,ID,..." (tokenizer(text).input_ids)
reference.txt lines:
    samples N0 N1              the waveforms' lengths
    feature_frames F0 F1       the extractor's frames of each (its attention mask's sums)
    encoder_frames E0 E1       the encoder's frames of each (transformers' _get_feat_extract_output_lengths)
    decoder_ids ID,ID,...      one line per row: the teacher-forced decoder inputs
    NAME ID,ID,...             one line per row for each generate() case of GENERATE_CASES
                               (model.generate(input_features, attention_mask=..., **kwargs)), with
                               the decoder start token, up to the first eos
"""
import io
import json
import struct
from pathlib import Path

import numpy as np
import torch
import transformers
from safetensors.torch import load_file, save_file

FIXTURES = Path(__file__).resolve().parent / "fixtures"
MEL = 20
SHAPE = dict(vocab_size=60, d_model=48, encoder_layers=2, decoder_layers=2, encoder_attention_heads=6,
             decoder_attention_heads=6, encoder_ffn_dim=96, decoder_ffn_dim=96, num_conv_layers=2,
             conv_kernel_sizes=[3, 5], conv_channels=16, input_feat_per_channel=MEL, max_source_positions=100,
             max_target_positions=64, activation_function="relu", scale_embedding=True, dropout=0.0,
             attention_dropout=0.0, activation_dropout=0.0, encoder_layerdrop=0.0, decoder_layerdrop=0.0,
             pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2)
DECODER_IDS = [[2, 17, 5, 40, 23, 9, 31], [2, 44, 12, 6]]
GENERATE_CASES = [  # name, generate() kwargs over generation_config.json (greedy, max_new_tokens 12)
    ("generated", {}),
    ("generated_eos", {"eos_token_id": 4}),  # row 0 ends early, row 1 runs on: the batch's finished rows
    ("generated_forced", {"forced_bos_token_id": 7}),
    ("generated_beams", {"num_beams": 2}),
]


def randomise(model):
    """Weights larger than the default init, so that a wrong trait shows far above 1e-4."""
    with torch.no_grad():
        for key, p in model.named_parameters():
            if p.dim() > 1:
                p.normal_(0, 0.25)
            else:
                p.normal_(1.0 if "norm" in key and key.endswith("weight") else 0.0, 0.1)


def bf16_example(model, features, mask, decoder, out_dir):
    """The checkpoint in bfloat16, and the float32 teacher-forced logits of its rounded weights."""
    tensors = load_file(out_dir / "model.safetensors")
    save_file({k: v.to(torch.bfloat16) for k, v in tensors.items()}, out_dir / "model.bf16.safetensors",
              metadata={"format": "pt"})
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.to(torch.bfloat16).float())
        logits = model(features, attention_mask=mask, decoder_input_ids=decoder).logits
    np.concatenate([logits[b, :len(r)].numpy() for b, r in enumerate(DECODER_IDS)]).astype("<f4").tofile(
        out_dir / "teacher_logits.bf16.bin")


def waveforms():
    rng = np.random.default_rng(5)
    t = np.arange(4000) / 16000.0
    long = 0.4 * np.sin(2 * np.pi * 300 * t) * np.sin(2 * np.pi * 5 * t) + 0.05 * rng.standard_normal(t.shape)
    t = np.arange(2650) / 16000.0
    short = 0.3 * np.sin(2 * np.pi * (200 + 2000 * t) * t) + 0.05 * rng.standard_normal(t.shape)
    return [long.astype(np.float32), short.astype(np.float32)]


CORPUS = ["the cat sat on the mat", "a rat ran at the cat", "ten men ate a tart", "the mean hen sat near the tent",
          "near the sea a seal ate", "rain ran on the tame hare", "the earth is neat", "an ant in the rain"]
EXTRA_DECODES = [[0, 7, 25, 3, 27, 2], [47, 3, 50, 3, 53, 48], [1, 1, 9, 2, 21, 2], []]
ENCODES = ["the cat sat", "near the sea a seal ate", "The Cat SAT", "zebra quiz", "ab<s>cd</s> the", "  the   rat  "]


def write_tokenizer(out_dir, vocab_size):
    """A SentencePiece BPE of vocab_size pieces, <s> <pad> </s> <unk> first (fairseq's S2T ids), its
    vocab.json, and the Speech2TextTokenizer over them saved beside the model; the tokenizer as
    AutoTokenizer loads it back."""
    import sentencepiece
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(sentence_iterator=iter(CORPUS * 5), model_writer=model, model_type="bpe",
                                             vocab_size=vocab_size, bos_id=0, pad_id=1, eos_id=2, unk_id=3,
                                             character_coverage=1.0, normalization_rule_name="identity",
                                             minloglevel=2)
    (out_dir / "sentencepiece.bpe.model").write_bytes(model.getvalue())
    sp = sentencepiece.SentencePieceProcessor(model_file=str(out_dir / "sentencepiece.bpe.model"))
    assert sp.get_piece_size() == vocab_size
    (out_dir / "vocab.json").write_text(json.dumps({sp.id_to_piece(i): i for i in range(vocab_size)}, indent=2))
    model = io.BytesIO()  # pieces beyond ASCII, which the library's do_upper_case refuses
    sentencepiece.SentencePieceTrainer.train(sentence_iterator=iter(CORPUS * 5 + ["un caf\u00e9 d\u00e9j\u00e0"] * 5),
                                             model_writer=model, model_type="bpe", vocab_size=vocab_size, bos_id=0,
                                             pad_id=1, eos_id=2, unk_id=3, character_coverage=1.0,
                                             normalization_rule_name="identity", minloglevel=2)
    (out_dir / "sentencepiece_non_ascii.model").write_bytes(model.getvalue())
    tokenizer = transformers.Speech2TextTokenizer(str(out_dir / "vocab.json"), str(out_dir / "sentencepiece.bpe.model"),
                                                  do_upper_case=True, do_lower_case=True)
    tokenizer.save_pretrained(out_dir)
    return transformers.AutoTokenizer.from_pretrained(out_dir)


def write_wav(path, pcm):
    data = pcm.astype("<i2").tobytes()
    header = b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVE"
    header += b"fmt " + struct.pack("<IHHIIHH", 16, 1, 1, 16000, 32000, 2, 16)
    path.write_bytes(header + b"data" + struct.pack("<I", len(data)) + data)


def main():
    out_dir = FIXTURES / "speech2text-s2s"
    out_dir.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(33)  # a seed whose greedy rows change tokens
    config = transformers.Speech2TextConfig(**SHAPE)
    model = transformers.Speech2TextForConditionalGeneration(config).eval()
    randomise(model)
    model.generation_config.max_new_tokens = 12
    model.generation_config.num_beams = 1
    model.generation_config.do_sample = False
    model.save_pretrained(out_dir)
    extractor = transformers.Speech2TextFeatureExtractor(feature_size=MEL, num_mel_bins=MEL, sampling_rate=16000,
                                                          padding_value=0.0, do_ceptral_normalize=True,
                                                          normalize_means=True, normalize_vars=True)
    extractor.save_pretrained(out_dir)

    waves = waveforms()
    inputs = extractor(waves, sampling_rate=16000, padding=True, return_attention_mask=True, return_tensors="pt")
    features, mask = inputs.input_features, inputs.attention_mask
    feature_frames = mask.sum(-1)
    encoder_frames = model.model._get_feat_extract_output_lengths(feature_frames)
    with torch.no_grad():
        encoded = model.model.encoder(features, attention_mask=mask).last_hidden_state
        alone = model.model.encoder(features[1:, :int(feature_frames[1])]).last_hidden_state[0]
        width = max(len(r) for r in DECODER_IDS)
        decoder = torch.tensor([r + [config.pad_token_id] * (width - len(r)) for r in DECODER_IDS])
        logits = model(features, attention_mask=mask, decoder_input_ids=decoder).logits
        generated = {name: model.generate(features, attention_mask=mask, **kwargs) for name, kwargs in GENERATE_CASES}
    assert not torch.allclose(alone[:int(encoder_frames[1])], encoded[1, :int(encoder_frames[1])], atol=1e-3), \
        "the padded batch should change the shorter row's frames"

    np.concatenate(waves).astype("<f4").tofile(out_dir / "waveforms.bin")
    features.numpy().astype("<f4").tofile(out_dir / "fbank_features.bin")
    np.concatenate([encoded[b, :int(encoder_frames[b])].numpy() for b in range(2)]).astype("<f4").tofile(
        out_dir / "encoder_hidden.bin")
    alone.numpy().astype("<f4").tofile(out_dir / "encoder_alone.bin")
    np.concatenate([logits[b, :len(r)].numpy() for b, r in enumerate(DECODER_IDS)]).astype("<f4").tofile(
        out_dir / "teacher_logits.bin")
    cases = {}
    for name, kwargs in GENERATE_CASES:
        eos = kwargs.get("eos_token_id", config.eos_token_id)
        cases[name] = []
        for b in range(2):  # generate pads finished rows with pad_token_id: keep up to the first eos
            ids = generated[name][b].tolist()
            if eos in ids[1:]:
                ids = ids[:ids.index(eos, 1) + 1]
            cases[name].append(ids)
    bf16_example(model, features, mask, decoder, out_dir)
    rows = cases["generated"]
    assert all(len(set(r)) >= 3 for r in rows), "too few distinct tokens for a useful test"
    assert len(cases["generated_eos"][0]) < len(cases["generated_eos"][1]), "the eos case should end one row early"
    with open(out_dir / "reference.txt", "w") as f:
        f.write("samples %d %d\n" % tuple(len(w) for w in waves))
        f.write("feature_frames %d %d\n" % tuple(feature_frames.tolist()))
        f.write("encoder_frames %d %d\n" % tuple(encoder_frames.tolist()))
        for r in DECODER_IDS:
            f.write("decoder_ids %s\n" % ",".join(map(str, r)))
        for name, _ in GENERATE_CASES:
            for r in cases[name]:
                f.write("%s %s\n" % (name, ",".join(map(str, r))))

    tokenizer = write_tokenizer(out_dir, config.vocab_size)
    assert type(tokenizer).__name__ == "Speech2TextTokenizer", type(tokenizer)
    pcm = np.clip(np.round(waves[0] * 32767), -32768, 32767).astype(np.int16)
    write_wav(out_dir / "speech.wav", pcm)
    one = extractor(pcm.astype(np.float32) / 32768.0, sampling_rate=16000, return_tensors="pt")
    with torch.no_grad():
        sequence = model.generate(one.input_features, attention_mask=one.attention_mask)
    transcript = tokenizer.batch_decode(sequence, skip_special_tokens=True)[0]
    assert len(transcript) > 4, "too short a transcript for a useful test: %r" % transcript
    (out_dir / "speech.txt").write_text(transcript + "\n")
    with open(out_dir / "tokenizer.txt", "w") as f:
        for ids in [r for name, _ in GENERATE_CASES for r in cases[name]] + EXTRA_DECODES:
            text = tokenizer.decode(ids, skip_special_tokens=True)
            assert "\t" not in text and "\n" not in text
            f.write("decode\t%s\t%s\n" % (",".join(map(str, ids)), text))
        for text in ENCODES:
            f.write("encode\t%s\t%s\n" % (text, ",".join(map(str, tokenizer(text).input_ids))))
    print(tuple(features.shape), feature_frames.tolist(), encoder_frames.tolist(), cases)


if __name__ == "__main__":
    main()
