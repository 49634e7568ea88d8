#!/usr/bin/env python3
"""Speech encoder fixtures for test_encoders.c (issue 16): tiny Wav2Vec2ForCTC / HubertForCTC
models saved by transformers 5.24 (save_pretrained: its tensor names) with a CTC tokenizer
(vocab.json), and what transformers computes for a batch of two random waveforms.

Run from the repository root: python3 test/make_audio_fixtures.py

Each dir test/fixtures/<name>/ holds config.json, model.safetensors, vocab.json,
tokenizer_config.json and
    samples.bin       float32 LE [2][2400]: the input values (already normalised)
    audio_hidden.bin  float32 LE [2][frames][48]: last_hidden_state
    audio_logits.bin  float32 LE [2][frames][vocab]: the CTC head's logits
    ctc_text.txt      one line per waveform: Wav2Vec2Processor.batch_decode of the logits' argmax
The three variants:
    wav2vec2-ctc  the base layout: feat_extract_norm "group", post-norm blocks, an even
                  positional kernel (its last frame dropped), masked_spec_embed present
    xlsr-ctc      do_stable_layer_norm (XLSR, large): feat_extract_norm "layer", conv_bias,
                  pre-norm blocks and a final norm, an odd positional kernel, no masked_spec_embed
    hubert-ctc    HubertForCTC without the feature projection's norm, conv_bias, and the
                  positional conv saved under the old weight_g / weight_v names
xlsr-ctc also holds audio_masked_hidden.bin: float32 LE [89][48], last_hidden_state of the second
waveform cut to its first 1800 samples, in a batch padded with zeros to 2400 and run with the
attention mask (as XLSR's feature extractor returns one): the frames of its 1800 samples.
hubert-ctc also holds model.bf16.safetensors (its tensors rounded to bfloat16) and
audio_logits.bf16.bin (the logits transformers computes in float32 from those rounded weights): the
16-bit checkpoint path, front end included.
wav2vec2-ctc also holds speech.wav (16 kHz mono 16-bit PCM), preprocessor_config.json and
speech.txt: the text transformers transcribes from that file through Wav2Vec2Processor (for
examples/transcribe.c).
"""
import json
import struct
from pathlib import Path

import numpy as np
import torch
import transformers
from safetensors.torch import load_file, save_file

FIXTURES = Path(__file__).resolve().parent / "fixtures"
VOCAB = ["<pad>", "<s>", "</s>", "<unk>", "|", "a", "b", "c", "d", "e", "'", "x", "y"]
SHAPE = dict(hidden_size=48, num_hidden_layers=2, num_attention_heads=6, intermediate_size=96,
             conv_dim=(16, 16, 16), conv_kernel=(10, 3, 3), conv_stride=(5, 2, 2), num_conv_pos_embeddings=16,
             num_conv_pos_embedding_groups=4, vocab_size=len(VOCAB), pad_token_id=0, hidden_dropout=0.0,
             activation_dropout=0.0, attention_dropout=0.0, feat_proj_dropout=0.0, final_dropout=0.0, layerdrop=0.0)
VARIANTS = [  # dir, config class, model class, config overrides
    ("wav2vec2-ctc", "Wav2Vec2Config", "Wav2Vec2ForCTC", dict(feat_extract_norm="group", conv_bias=False)),
    ("xlsr-ctc", "Wav2Vec2Config", "Wav2Vec2ForCTC",
     dict(feat_extract_norm="layer", conv_bias=True, do_stable_layer_norm=True, num_conv_pos_embeddings=15,
          mask_time_prob=0.0)),
    ("hubert-ctc", "HubertConfig", "HubertForCTC",
     dict(feat_extract_norm="group", conv_bias=True, feat_proj_layer_norm=False)),
]


def randomise(model):
    """Weights larger than the default init, so that a wrong trait shows far above 1e-4."""
    with torch.no_grad():
        for key, p in model.named_parameters():
            if "original0" in key or key.endswith("weight_g"):
                p.uniform_(0.5, 1.5)
            elif key == "lm_head.weight":  # logits that follow the frames, so that the text has many tokens
                p.normal_(0, 1.0)
            elif p.dim() > 1:
                p.normal_(0, 0.3 if "conv" in key else 0.2)
            else:
                p.normal_(1.0 if "norm" in key and key.endswith("weight") else 0.0, 0.1)


def rename_weight_norm(path):
    """The spelling of torch's old weight_norm: weight_g / weight_v instead of parametrizations."""
    tensors = load_file(path)
    renamed = {k.replace("parametrizations.weight.original0", "weight_g").replace("parametrizations.weight.original1",
                                                                                   "weight_v"): v
               for k, v in tensors.items()}
    assert renamed.keys() != tensors.keys()
    save_file(renamed, path, metadata={"format": "pt"})


def save_tokenizer(out_dir):
    vocab_path = out_dir / "vocab.json"
    vocab_path.write_text(json.dumps({t: i for i, t in enumerate(VOCAB)}, indent=2) + "\n")
    tokenizer = transformers.Wav2Vec2CTCTokenizer(str(vocab_path), word_delimiter_token="|")
    tokenizer.save_pretrained(out_dir)
    return tokenizer


def write_wav(path, pcm):
    data = pcm.astype("<i2").tobytes()
    header = b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVE"
    header += b"fmt " + struct.pack("<IHHIIHH", 16, 1, 1, 16000, 32000, 2, 16)
    path.write_bytes(header + b"data" + struct.pack("<I", len(data)) + data)


def masked_example(base, samples, out_dir):
    """A padded batch with its attention mask: the shorter row's own frames."""
    padded = samples.clone()
    padded[1, 1800:] = 0
    mask = torch.ones(2, 2400, dtype=torch.long)
    mask[1, 1800:] = 0
    frames = int(base._get_feat_extract_output_lengths(torch.tensor(1800)))
    with torch.no_grad():
        hidden = base(padded, attention_mask=mask).last_hidden_state[1, :frames]
    hidden.numpy().astype("<f4").tofile(out_dir / "audio_masked_hidden.bin")


def bf16_example(model, samples, out_dir):
    """The checkpoint in bfloat16, and the float32 logits of its rounded weights."""
    tensors = load_file(out_dir / "model.safetensors")
    save_file({k: v.to(torch.bfloat16) for k, v in tensors.items()}, out_dir / "model.bf16.safetensors",
              metadata={"format": "pt"})
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.to(torch.bfloat16).float())
        model(samples).logits.numpy().astype("<f4").tofile(out_dir / "audio_logits.bf16.bin")


def transcribe_example(model, tokenizer, out_dir):
    """A WAV file, and the text transformers makes of it through the processor."""
    extractor = transformers.Wav2Vec2FeatureExtractor(feature_size=1, sampling_rate=16000, padding_value=0.0,
                                                      do_normalize=True, return_attention_mask=False)
    processor = transformers.Wav2Vec2Processor(feature_extractor=extractor, tokenizer=tokenizer)
    processor.save_pretrained(out_dir)
    extractor.save_pretrained(out_dir)  # preprocessor_config.json, which pf_audio_processor reads
    rng = np.random.default_rng(11)
    t = np.arange(3000) / 16000.0
    wave = 0.4 * np.sin(2 * np.pi * 220 * t) * np.sin(2 * np.pi * 3 * t) + 0.05 * rng.standard_normal(t.shape)
    pcm = np.clip(np.round(wave * 32767), -32768, 32767).astype(np.int16)
    write_wav(out_dir / "speech.wav", pcm)
    audio = pcm.astype(np.float32) / 32768.0
    inputs = processor(audio, sampling_rate=16000, return_tensors="pt")
    with torch.no_grad():
        logits = model(inputs.input_values).logits
    text = processor.batch_decode(logits.argmax(-1))[0]
    (out_dir / "speech.txt").write_text(text + "\n")


def main():
    torch.manual_seed(0)
    samples = torch.randn(2, 2400)
    for index, (name, config_class, model_class, overrides) in enumerate(VARIANTS):
        torch.manual_seed(100 + index)  # seeds whose logits pick several tokens
        config = getattr(transformers, config_class)(**{**SHAPE, **overrides})
        model = getattr(transformers, model_class)(config).eval()
        randomise(model)
        out_dir = FIXTURES / name
        out_dir.mkdir(parents=True, exist_ok=True)
        tokenizer = save_tokenizer(out_dir)
        base = model.wav2vec2 if hasattr(model, "wav2vec2") else model.hubert
        with torch.no_grad():  # the head centred on these frames' mean, so that its argmax follows the frames
            mean = base(samples).last_hidden_state.mean((0, 1))
            model.lm_head.bias.copy_(-model.lm_head.weight @ mean + 0.1 * torch.randn(len(VOCAB)))
            hidden = base(samples).last_hidden_state
            logits = model(samples).logits
        model.save_pretrained(out_dir)
        if name == "hubert-ctc":
            rename_weight_norm(out_dir / "model.safetensors")
        ids = logits.argmax(-1)
        texts = tokenizer.batch_decode(ids)
        assert len(set(ids.flatten().tolist())) > 3, "too few distinct tokens for a useful test"
        samples.numpy().astype("<f4").tofile(out_dir / "samples.bin")
        hidden.numpy().astype("<f4").tofile(out_dir / "audio_hidden.bin")
        logits.numpy().astype("<f4").tofile(out_dir / "audio_logits.bin")
        (out_dir / "ctc_text.txt").write_text("".join(t + "\n" for t in texts))
        print(name, tuple(hidden.shape), tuple(logits.shape), texts)
        if name == "wav2vec2-ctc":
            transcribe_example(model, tokenizer, out_dir)
        if name == "xlsr-ctc":
            masked_example(base, samples, out_dir)
        if name == "hubert-ctc":
            bf16_example(model, samples, out_dir)


if __name__ == "__main__":
    main()
