"""Writes test/fixtures/preprocessing: synthetic images and audio with what transformers'
processors make of them, for test/test_preprocessing.c.

Images are raw 8-bit RGB (rows of R, G, B bytes); every float file is little-endian float32.
preprocessing_cases.txt lists what the C test reads:
  image NAME WIDTH HEIGHT
  image_case PROCESSOR IMAGE BACKEND OUT_WIDTH OUT_HEIGHT     (expected: PROCESSOR.IMAGE.BACKEND.f32, [3][H][W])
  audio NAME SAMPLES                                         (samples: audio/NAME.f32)
  audio_case PROCESSOR AUDIO ROWS COLUMNS                    (expected: PROCESSOR.AUDIO.f32)
  audio_ill_conditioned PROCESSOR AUDIO                      (transformers' output is rounding noise: see below)
  backend_default CLASS_NAME                                 (the class AutoImageProcessor picks by default)

Needs transformers 5 with Pillow and torchvision importable (neither is a dependency of the
library or of make test): e.g. pip install --target DIR pillow torchvision --no-deps, then run with
PYTHONPATH=DIR python test/make_preprocessing_fixtures.py."""

import json
import os
import shutil

import numpy as np
from transformers import AutoFeatureExtractor, AutoImageProcessor

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "preprocessing")

# Small targets keep the fixtures small; the code paths are those of the real 224-pixel configs.
IMAGE_PROCESSORS = {
    # ViT: a square resize, bilinear, no crop
    "vit": {"image_processor_type": "ViTImageProcessor", "size": {"height": 24, "width": 20}},
    # DeiT as saved by transformers 4 (feature extractor names, int sizes, ImageNet statistics)
    "deit-legacy": {
        "feature_extractor_type": "DeiTFeatureExtractor",
        "size": 30,
        "crop_size": 24,
        "do_center_crop": True,
        "do_normalize": True,
        "do_resize": True,
        "image_mean": [0.485, 0.456, 0.406],
        "image_std": [0.229, 0.224, 0.225],
        "resample": 3,
    },
    # CLIP: shortest edge, bicubic, centre crop, CLIP's statistics (a *Fast config's name)
    "clip": {"image_processor_type": "CLIPImageProcessorFast", "size": {"shortest_edge": 20}, "crop_size": {"height": 16, "width": 16}},
    # CLIP with a crop larger than the resized image on one side: padding, odd amounts
    "clip-pad": {
        "image_processor_type": "CLIPImageProcessor",
        "size": {"shortest_edge": 13},
        "crop_size": {"height": 18, "width": 16},
    },
    # rescale without normalising, and a crop without a resize
    "vit-crop-only": {
        "image_processor_type": "ViTImageProcessor",
        "do_resize": False,
        "do_center_crop": True,
        "crop_size": {"height": 9, "width": 12},
        "do_normalize": False,
    },
}

AUDIO_PROCESSORS = {
    "wav2vec2": {"feature_extractor_type": "Wav2Vec2FeatureExtractor", "feature_size": 1, "sampling_rate": 16000,
                 "padding_value": 0.0, "do_normalize": True, "return_attention_mask": False},
    "wav2vec2-raw": {"feature_extractor_type": "Wav2Vec2FeatureExtractor", "feature_size": 1, "sampling_rate": 16000,
                     "padding_value": 0.0, "do_normalize": False, "return_attention_mask": True},
    # Whisper's extractor with one- and two-second chunks (30 s in the real configs)
    "whisper-80": {"feature_extractor_type": "WhisperFeatureExtractor", "feature_size": 80, "sampling_rate": 16000,
                   "hop_length": 160, "chunk_length": 1, "n_fft": 400, "padding_value": 0.0, "dither": 0.0,
                   "return_attention_mask": False},
    "whisper-128": {"feature_extractor_type": "WhisperFeatureExtractor", "feature_size": 128, "sampling_rate": 16000,
                    "hop_length": 160, "chunk_length": 2, "n_fft": 400, "padding_value": 0.0, "dither": 0.0,
                    "return_attention_mask": False},
    "speech2text": {"feature_extractor_type": "Speech2TextFeatureExtractor", "feature_size": 80, "num_mel_bins": 80,
                    "sampling_rate": 16000, "padding_value": 0.0, "do_ceptral_normalize": True,
                    "normalize_means": True, "normalize_vars": True, "return_attention_mask": True},
    "speech2text-nocmvn": {"feature_extractor_type": "Speech2TextFeatureExtractor", "feature_size": 40,
                           "num_mel_bins": 40, "sampling_rate": 16000, "do_ceptral_normalize": False},
}


def make_images(rng):
    images = {}
    h, w = 30, 40
    y, x = np.mgrid[0:h, 0:w]
    images["gradient"] = np.stack([x * 255 // (w - 1), y * 255 // (h - 1), (x + y) * 255 // (w + h - 2)], -1)
    images["noise-odd"] = rng.integers(0, 256, (23, 17, 3))
    images["small"] = rng.integers(0, 256, (7, 5, 3))           # smaller than every target: upscaling
    images["large"] = rng.integers(0, 256, (64, 97, 3))         # larger: downscaling, wide
    images["tall"] = rng.integers(0, 256, (50, 13, 3))          # non-square, tall
    yy, xx = np.mgrid[0:31, 0:29]
    images["rings"] = np.stack([((xx - 14) ** 2 + (yy - 15) ** 2) * 7 % 256, xx * 8 % 256, yy * 8 % 256], -1)
    return {k: v.astype(np.uint8) for k, v in images.items()}


def make_audio(rng):
    sr = 16000
    t = lambda seconds: np.arange(int(seconds * sr)) / sr
    audio = {}
    audio["sine"] = 0.5 * np.sin(2 * np.pi * 440 * t(0.5))
    audio["noise"] = 0.1 * rng.standard_normal(int(1.2 * sr))  # longer than the 1 s chunk: cut
    tc = t(0.8)
    audio["chirp"] = 0.3 * np.sin(2 * np.pi * (100 * tc + 0.5 * (4000 - 100) / 0.8 * tc ** 2))
    audio["short"] = 0.2 * np.sin(2 * np.pi * 1000 * t(0.05)) + 0.01 * rng.standard_normal(800)  # three fbank frames
    audio["long"] = 0.25 * np.sin(2 * np.pi * 220 * t(1.6)) * (1 + 0.5 * np.sin(2 * np.pi * 3 * t(1.6)))
    return {k: v.astype(np.float32) for k, v in audio.items()}


def write_config(directory, config):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "preprocessor_config.json"), "w") as f:
        json.dump(config, f, indent=2)


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(os.path.join(OUT, "images"))
    os.makedirs(os.path.join(OUT, "audio"))
    rng = np.random.default_rng(16)
    lines = []

    images = make_images(rng)
    for name, pixels in images.items():
        pixels.tofile(os.path.join(OUT, "images", name + ".rgb"))
        lines.append(f"image {name} {pixels.shape[1]} {pixels.shape[0]}")
    for proc_name, config in IMAGE_PROCESSORS.items():
        directory = os.path.join(OUT, proc_name)
        write_config(directory, config)
        for backend in ("torchvision", "pil"):
            kwargs = {} if backend == "torchvision" else {"backend": "pil"}
            processor = AutoImageProcessor.from_pretrained(directory, **kwargs)
            assert processor.backend == backend, (proc_name, backend, type(processor))
            if backend == "torchvision" and proc_name == "vit":
                lines.append(f"backend_default {type(processor).__name__}")
            for image_name, pixels in images.items():
                out = processor(pixels, input_data_format="channels_last", return_tensors="np")["pixel_values"][0]
                out = np.asarray(out, dtype=np.float32)
                out.tofile(os.path.join(directory, f"{image_name}.{backend}.f32"))
                lines.append(f"image_case {proc_name} {image_name} {backend} {out.shape[2]} {out.shape[1]}")

    audio = make_audio(rng)
    for name, samples in audio.items():
        samples.tofile(os.path.join(OUT, "audio", name + ".f32"))
        lines.append(f"audio {name} {samples.size}")
    for proc_name, config in AUDIO_PROCESSORS.items():
        directory = os.path.join(OUT, proc_name)
        write_config(directory, config)
        extractor = AutoFeatureExtractor.from_pretrained(directory)
        for audio_name, samples in audio.items():
            if proc_name.startswith("wav2vec2"):
                out = extractor(samples, sampling_rate=16000, return_tensors="np")["input_values"][0][None, :]
            else:
                out = extractor(samples, sampling_rate=16000, return_tensors="np")["input_features"][0]
            out = np.asarray(out, dtype=np.float32)
            if config.get("do_ceptral_normalize"):
                # Utterance CMVN divides by each bin's deviation over the frames. For a steady tone
                # or a few frames that deviation is ~1e-5 (of log values ~25), and transformers'
                # float32 arithmetic alone moves its output by up to 0.09 (its own utterance_cmvn
                # called directly on the same filter banks differs from __call__'s by 0.06, the
                # summation order following the arrays' layout): its result there is rounding
                # noise, no reference within the tolerance. Such an input is listed as
                # ill-conditioned instead; its filter banks are checked before CMVN (a processor
                # without it) like every other input's.
                features = extractor._extract_fbank_features(samples)
                in_float64 = extractor.utterance_cmvn(features.astype(np.float64), features.shape[0])
                if np.abs(out - in_float64).max() > 0.5e-4:
                    lines.append(f"audio_ill_conditioned {proc_name} {audio_name}")
                    continue
            out.tofile(os.path.join(directory, f"{audio_name}.f32"))
            lines.append(f"audio_case {proc_name} {audio_name} {out.shape[0]} {out.shape[1]}")

    with open(os.path.join(OUT, "preprocessing_cases.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
