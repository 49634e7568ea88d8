#!/usr/bin/env python3
"""Whisper fixtures for test_whisper.c (issue 16): a tiny random WhisperForConditionalGeneration
saved by transformers 5.24 (save_pretrained: its tensor names, proj_out tied to the decoder's
embedding), a byte-level BPE WhisperTokenizer with Whisper's special tokens, its
WhisperFeatureExtractor (one-second chunks: 100 mel frames, so max_source_positions 50), a
generation_config.json naming the prompt, and what transformers computes.

Run from the repository root: python3 test/make_whisper_fixtures.py

test/fixtures/whisper/ holds config.json, generation_config.json, model.safetensors,
preprocessor_config.json, the tokenizer files and
    samples.bin        float32 LE [2][12000]: two waveforms (16 kHz)
    features.bin       float32 LE [2][80][100]: WhisperFeatureExtractor's input_features of them
    encoder_hidden.bin float32 LE [2][50][48]: the encoder's last_hidden_state
    decoder_ids.txt    one line of ids: a teacher-forced decoder input (the prompt, then text)
    decoder_logits.bin float32 LE [2][len][vocab]: the logits of that input for each row
    prompt.txt         the decoder prompt generate() builds from generation_config.json
    greedy.txt         one line per row: generate(input_features, max_new_tokens=12)'s tokens after
                       the prompt
    beam.txt           the same with num_beams=3, max_new_tokens=8
    translate.txt      the prompt of language="fr", task="translate", then greedy's tokens after it
    detect.txt         with forced_decoder_ids [[1, null], [2, <|transcribe|>]] (no language: detected):
                       the language token detect_language picks for each row, then greedy's tokens
    no_generation_config.txt  greedy's tokens after <|startoftranscript|> alone, with the generation
                       config transformers makes from config.json (no generation_config.json)
    speech.wav         the first waveform as 16-bit PCM; speech.txt: the text transformers
                       transcribes from it (batch_decode, skip_special_tokens=True); speech_fr.txt:
                       the same with language="fr", task="translate"

test/fixtures/whisper-ts/ (Whisper's timestamps, issue 16's follow-up): the same tokenizer with the
51 timestamp tokens <|0.00|> ... <|1.00|> after <|notimestamps|> (one-second windows, 0.02 s apart),
a model of the same shape over that vocabulary (seed TS_SEED: the seed whose greedy generation emits
timestamps in pairs and ends a segment, with these lengths; token embeddings of scale TS_EMBED), a generation_config.json with
"return_timestamps": true and max_initial_timestamp_index, and
    timestamps.txt     one line per row of whisper/features.bin: generate(input_features,
                       max_new_tokens=TS_NEW_TOKENS, return_timestamps=True)'s tokens (the text and
                       timestamp tokens, no prompt, no eos; the batch's right padding cut off)
    no_rule.txt        the same with the "timestamps' probability beats every text token" rule off
                       (_detect_timestamp_from_logprob False): it differs, so the rule is exercised
    speech.wav         the second waveform as 32-bit float; speech_timestamps.txt: transformers'
                       decode(generate(..., return_timestamps=True)[0], decode_with_timestamps=True,
                       skip_special_tokens=True) of it; speech.txt: batch_decode(..., skip_special_tokens=True)
                       of the same tokens (the timestamps left out)
"""
import copy
import json
import shutil
import tempfile
import struct
from pathlib import Path

import numpy as np
import torch
import transformers
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

OUT = Path(__file__).resolve().parent / "fixtures" / "whisper"
CORPUS = ["the cat sat on the mat", "hello world, this is a small test", "speech to text with whisper",
          "a quick brown fox jumps over the lazy dog", "transcribe this audio please"] * 4
SPECIALS = ["<|endoftext|>", "<|startoftranscript|>", "<|en|>", "<|fr|>", "<|de|>", "<|translate|>",
            "<|transcribe|>", "<|startoflm|>", "<|startofprev|>", "<|nospeech|>", "<|notimestamps|>"]


def make_tokenizer():
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=300, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(CORPUS, trainer)
    spec = json.loads(tok.to_str())
    vocab, merges = spec["model"]["vocab"], [tuple(m) for m in spec["model"]["merges"]]
    tokenizer = transformers.WhisperTokenizer(vocab=vocab, merges=merges)
    tokenizer.add_special_tokens({"additional_special_tokens": SPECIALS[1:]})
    return tokenizer


SCALE, SCALE_EMBED = 0.3, 1.0


def non_letters(tokenizer):
    """Suppressed: the byte tokens other than lower-case letters and the space, so that the
    transcript is readable text (and the suppression is exercised on many ids)."""
    keep = set("abcdefghijklmnopqrstuvwxyz\u0120")
    return sorted(i for t, i in tokenizer.get_vocab().items() if len(t) == 1 and t not in keep)


def randomise(model, embed=SCALE_EMBED):
    """Weights larger than the default init, so that a wrong trait shows far above 1e-4."""
    with torch.no_grad():
        for key, p in model.named_parameters():
            if p.dim() > 1:
                p.normal_(0, 0.3 if "conv" in key else embed if "embed_tokens" in key else SCALE)
            else:
                p.normal_(1.0 if "norm" in key and key.endswith("weight") else 0.0, 0.1)


def write_wav_float(path, samples):
    data = samples.astype("<f4").tobytes()
    header = b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVE"
    header += b"fmt " + struct.pack("<IHHIIHH", 16, 3, 1, 16000, 64000, 4, 32)
    path.write_bytes(header + b"data" + struct.pack("<I", len(data)) + data)


def write_wav(path, pcm):
    data = pcm.astype("<i2").tobytes()
    header = b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVE"
    header += b"fmt " + struct.pack("<IHHIIHH", 16, 1, 1, 16000, 32000, 2, 16)
    path.write_bytes(header + b"data" + struct.pack("<I", len(data)) + data)


def ids_line(ids):
    return " ".join(str(int(i)) for i in ids) + "\n"


# the seed and lengths whose greedy rows emit pairs and end a segment; the token embeddings at 0.3
# (every token's, not the timestamps' alone) flatten the distribution enough that the timestamps'
# summed probability decides some steps
def make_model(tokenizer, sid, out, embed=SCALE_EMBED):
    """The tiny multilingual Whisper both fixtures use (random weights, from the caller's seed), saved to out."""
    eot, space = sid["<|endoftext|>"], tokenizer.convert_tokens_to_ids("\u0120")
    config = transformers.WhisperConfig(
        vocab_size=len(tokenizer), num_mel_bins=80, d_model=48, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=6, decoder_attention_heads=6, encoder_ffn_dim=96, decoder_ffn_dim=96,
        max_source_positions=50, max_target_positions=40, decoder_start_token_id=sid["<|startoftranscript|>"],
        pad_token_id=eot, bos_token_id=eot, eos_token_id=eot,
        suppress_tokens=non_letters(tokenizer), begin_suppress_tokens=[space, eot])
    model = transformers.WhisperForConditionalGeneration(config).eval()
    randomise(model, embed)
    model.tie_weights()
    model.save_pretrained(out)
    return config, model


def save_generation_config(config, model, sid, out, return_timestamps, **extra):
    """generation_config.json as a multilingual checkpoint has it (language and task ids, the
    English transcribe prompt), plus extra attributes; the model reads it back."""
    generation = transformers.GenerationConfig.from_model_config(config)
    generation.decoder_start_token_id = sid["<|startoftranscript|>"]
    generation.lang_to_id = {t: sid[t] for t in ("<|en|>", "<|fr|>", "<|de|>")}
    generation.task_to_id = {"translate": sid["<|translate|>"], "transcribe": sid["<|transcribe|>"]}
    generation.no_timestamps_token_id = sid["<|notimestamps|>"]
    generation.forced_decoder_ids = [[1, sid["<|en|>"]], [2, sid["<|transcribe|>"]]]
    generation.is_multilingual = True
    generation.return_timestamps = return_timestamps
    for key, value in extra.items():
        setattr(generation, key, value)
    generation.max_length = 40
    generation._from_model_config = False  # else generate() rebuilds it from config.json, dropping the keys above
    generation.save_pretrained(out)
    model.generation_config = transformers.GenerationConfig.from_pretrained(out)


TS_SEED, TS_NEW_TOKENS, TS_MAX_INITIAL, TS_EMBED = 4, 7, 10, 0.3


def make_timestamp_fixtures(features, samples, extractor):
    """test/fixtures/whisper-ts: the timestamp tokens in the vocabulary, return_timestamps true."""
    out = OUT.parent / "whisper-ts"
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = make_tokenizer()
    stamps = ["<|%.2f|>" % (i * 0.02) for i in range(51)]
    tokenizer.add_tokens([transformers.AddedToken(t, special=False, normalized=False) for t in stamps])
    sid = {t: tokenizer.convert_tokens_to_ids(t) for t in SPECIALS}
    begin = sid["<|notimestamps|>"] + 1
    assert tokenizer.convert_tokens_to_ids("<|0.00|>") == begin and len(tokenizer) == begin + 51
    tokenizer.save_pretrained(out)
    eot = sid["<|endoftext|>"]
    torch.manual_seed(TS_SEED)
    config, model = make_model(tokenizer, sid, out, TS_EMBED)
    save_generation_config(config, model, sid, out, True, max_initial_timestamp_index=TS_MAX_INITIAL)
    extractor.save_pretrained(out)

    def rows(sequences):
        result = []
        for row in sequences.tolist():
            while row and row[-1] == eot:  # the batch's padding (the eos itself is not returned)
                row.pop()
            result.append(row)
        return result

    with torch.no_grad():
        stamped = rows(model.generate(features, max_new_tokens=TS_NEW_TOKENS, return_timestamps=True))
        # one window, one pass: the same as generate()'s own tokens for the window (after the prompt)
        single = model.generate(features, max_new_tokens=TS_NEW_TOKENS, return_timestamps=True,
                                force_unique_generate_call=True).tolist()
        prompt = [sid["<|startoftranscript|>"], sid["<|en|>"], sid["<|transcribe|>"]]
        assert [r[:3] for r in single] == [prompt] * 2
        assert stamped == rows(torch.tensor([r[3:] for r in single])), (stamped, single)
        ruleless = copy.deepcopy(model.generation_config)
        ruleless._detect_timestamp_from_logprob = False
        no_rule = rows(model.generate(features, generation_config=ruleless, max_new_tokens=TS_NEW_TOKENS,
                                      return_timestamps=True, force_unique_generate_call=True)[:, 3:])
        one = extractor(samples[1], sampling_rate=16000, return_tensors="pt").input_features
        sequence = model.generate(one, max_new_tokens=TS_NEW_TOKENS, return_timestamps=True)
        text = tokenizer.decode(sequence[0], decode_with_timestamps=True, skip_special_tokens=True)
        plain_text = tokenizer.batch_decode(sequence, skip_special_tokens=True)[0]
    is_stamp = [[t >= begin for t in r] for r in stamped]
    assert sum(map(sum, is_stamp)) >= 4, "too few timestamps for a useful test"
    assert any(s[i] and s[i + 1] for s in is_stamp for i in range(len(s) - 1)), "no pair of timestamps"
    assert no_rule != stamped, "the log-probability rule never decides"
    (out / "timestamps.txt").write_text("".join(ids_line(r) for r in stamped))
    (out / "no_rule.txt").write_text("".join(ids_line(r) for r in no_rule))
    write_wav_float(out / "speech.wav", samples[1])
    (out / "speech_timestamps.txt").write_text(text + "\n")
    (out / "speech.txt").write_text(plain_text + "\n")
    print("timestamps", stamped, "no rule", no_rule, "text", repr(text))


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    tokenizer = make_tokenizer()
    tokenizer.save_pretrained(OUT)
    sid = {t: tokenizer.convert_tokens_to_ids(t) for t in SPECIALS}
    torch.manual_seed(0)
    config, model = make_model(tokenizer, sid, OUT)
    save_generation_config(config, model, sid, OUT, False)

    extractor = transformers.WhisperFeatureExtractor(feature_size=80, sampling_rate=16000, hop_length=160,
                                                     chunk_length=1, n_fft=400, padding_value=0.0)
    extractor.save_pretrained(OUT)
    rng = np.random.default_rng(7)
    t = np.arange(12000) / 16000.0
    wave = 0.4 * np.sin(2 * np.pi * 330 * t) * np.sin(2 * np.pi * 2 * t) + 0.05 * rng.standard_normal(t.shape)
    pcm = np.clip(np.round(wave * 32767), -32768, 32767).astype(np.int16)
    write_wav(OUT / "speech.wav", pcm)
    samples = np.stack([pcm.astype(np.float32) / 32768.0, (0.3 * rng.standard_normal(12000)).astype(np.float32)])
    samples.astype("<f4").tofile(OUT / "samples.bin")
    features = extractor(list(samples), sampling_rate=16000, return_tensors="pt").input_features
    assert tuple(features.shape) == (2, 80, 100)
    features.numpy().astype("<f4").tofile(OUT / "features.bin")

    prompt = [sid["<|startoftranscript|>"], sid["<|en|>"], sid["<|transcribe|>"], sid["<|notimestamps|>"]]
    (OUT / "prompt.txt").write_text(ids_line(prompt))
    with torch.no_grad():
        hidden = model.model.encoder(features).last_hidden_state
        hidden.numpy().astype("<f4").tofile(OUT / "encoder_hidden.bin")
        text_ids = tokenizer.encode("the cat sat", add_special_tokens=False)
        decoder_ids = torch.tensor([prompt + text_ids] * 2)
        logits = model(input_features=features, decoder_input_ids=decoder_ids).logits
        logits.numpy().astype("<f4").tofile(OUT / "decoder_logits.bin")
        (OUT / "decoder_ids.txt").write_text(ids_line(decoder_ids[0]))

        def new_tokens(sequences, head):
            """Short-form generate() returns the tokens after the prompt; older versions the prompt too."""
            return [row[len(head):] if row[:len(head)] == head else row for row in sequences.tolist()]

        check = model.generate(features[:1], max_new_tokens=2, return_dict_in_generate=True).sequences[0].tolist()
        assert check[:len(prompt)] == prompt, (check, prompt)
        greedy = new_tokens(model.generate(features, max_new_tokens=12), prompt)
        (OUT / "greedy.txt").write_text("".join(ids_line(r) for r in greedy))
        beam = new_tokens(model.generate(features, max_new_tokens=8, num_beams=3), prompt)
        (OUT / "beam.txt").write_text("".join(ids_line(r) for r in beam))
        fr_prompt = [sid["<|startoftranscript|>"], sid["<|fr|>"], sid["<|translate|>"], sid["<|notimestamps|>"]]
        translate = new_tokens(model.generate(features, max_new_tokens=12, language="fr", task="translate"),
                               fr_prompt)
        (OUT / "translate.txt").write_text(ids_line(fr_prompt) + "".join(ids_line(r) for r in translate))
        # no language named (forced_decoder_ids [1, null], as openai's checkpoints ship): detection
        detecting = copy.deepcopy(model.generation_config)
        detecting.forced_decoder_ids = [[1, None], [2, sid["<|transcribe|>"]]]
        langs = model.detect_language(features, generation_config=detecting).tolist()
        detected = model.generate(features, generation_config=detecting, max_new_tokens=12)
        (OUT / "detect.txt").write_text(ids_line(langs) + "".join(ids_line(r) for r in new_tokens(detected, [])))
        # without generation_config.json: the model config's generation keys (suppress lists, start token)
        with tempfile.TemporaryDirectory() as bare_dir:
            for name in ("config.json", "model.safetensors"):
                shutil.copy(OUT / name, bare_dir)
            bare = transformers.WhisperForConditionalGeneration.from_pretrained(bare_dir).eval()
            assert not hasattr(bare.generation_config, "lang_to_id")
            plain = bare.generate(features, max_new_tokens=12)
        (OUT / "no_generation_config.txt").write_text("".join(ids_line(r) for r in new_tokens(plain, [])))
        one = extractor(samples[0], sampling_rate=16000, return_tensors="pt").input_features
        sequence = model.generate(one, max_new_tokens=12)
        text = tokenizer.batch_decode(sequence, skip_special_tokens=True)[0]
        (OUT / "speech.txt").write_text(text + "\n")
        sequence = model.generate(one, max_new_tokens=12, language="fr", task="translate")
        (OUT / "speech_fr.txt").write_text(tokenizer.batch_decode(sequence, skip_special_tokens=True)[0] + "\n")
    assert len({t for r in greedy for t in r}) > 3, "too few distinct tokens for a useful test"
    make_timestamp_fixtures(features, samples, extractor)
    print("greedy", greedy, "beam", beam, "translate", translate, "text", repr(text))


if __name__ == "__main__":
    main()
