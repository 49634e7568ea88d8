#!/usr/bin/env python3
"""Image encoder fixtures for test_encoders.c (issue 16): tiny ViT / DeiT models saved by
transformers 5.23 (save_pretrained: its tensor names) with what transformers computes for a
batch of three preprocessed images.

Run from the repository root: python3 test/make_vision_fixtures.py

Each dir test/fixtures/<name>/ holds config.json, model.safetensors and
    pixels.bin    float32 LE [3][3][32][32]: the images (pixel_values, already normalised)
    image_hidden.bin float32 LE [3][tokens][48]: last_hidden_state (class token, (distillation
                  token,) then the 16 patches row by row)
    image_pooled.bin float32 LE [3][48]: the pooler's output (vit only)
    image_logits.bin float32 LE [3][5]: the classification logits (the -cls and -teacher dirs)
vit-cls also holds preprocessor_config.json (a ViT image processor for 32 x 32 images), image.ppm
(a 45 x 37 binary PPM) and image.txt: transformers' logits for that image through that processor
(the torchvision backend AutoImageProcessor picks), for examples/classify_image.c. The processor
needs Pillow and torchvision: pip install --target DIR pillow torchvision --no-deps, then
PYTHONPATH=DIR python3 test/make_vision_fixtures.py.
"""
import sys
from pathlib import Path

import numpy as np
import torch
import transformers

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SHAPE = dict(hidden_size=48, num_hidden_layers=2, num_attention_heads=6, intermediate_size=96, image_size=32,
             patch_size=8, num_labels=5, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
FIXTURE_CLASSES = [  # dir, config class, model class, changes to SHAPE
    ("vit", "ViTConfig", "ViTModel", {}),
    ("vit-cls", "ViTConfig", "ViTForImageClassification", {}),
    ("deit-cls", "DeiTConfig", "DeiTForImageClassification", {}),
    ("deit-teacher", "DeiTConfig", "DeiTForImageClassificationWithTeacher", {}),
    # a patch size that does not divide the image: the strided convolution drops the last 2 pixels
    # of each row and column (5 x 5 patches)
    ("vit-uneven", "ViTConfig", "ViTModel", {"patch_size": 6}),
    # the same remainder in DeiT (with its teacher head) and in CLIP's vision tower, each seeded on
    # its own so that it can be written alone
    ("deit-uneven", "DeiTConfig", "DeiTForImageClassificationWithTeacher", {"patch_size": 6}, 361),
    ("clip-vision-uneven", "CLIPVisionConfig", "CLIPVisionModel", {"patch_size": 6}, 362),
]
ONLY = set(sys.argv[1:])  # names given: write only those fixtures (the seeded ones come out the same)


def main():
    torch.manual_seed(0)
    pixels = torch.randn(3, 3, 32, 32)
    for name, config_class, model_class, changes, *seed in FIXTURE_CLASSES:
        if seed:
            torch.manual_seed(seed[0])
        if ONLY and name not in ONLY:
            continue
        config = getattr(transformers, config_class)(**dict(SHAPE, **changes))
        model = getattr(transformers, model_class)(config).eval()
        with torch.no_grad():  # weights larger than the default init, so a wrong trait shows far above 1e-4
            for key, p in model.named_parameters():
                if p.dim() > 1 or "token" in key or "position" in key:
                    p.normal_(0, 0.2)
                else:
                    p.normal_(1.0 if "norm" in key else 0.0, 0.1)  # ViT's layernorm*, CLIP's layer_norm1 / pre_layrnorm
        out_dir = FIXTURES / name
        model.save_pretrained(out_dir)
        with torch.no_grad():
            if model_class.endswith("Model"):
                out = model(pixel_values=pixels)
                hidden, pooled, logits = out.last_hidden_state, out.pooler_output, None
            else:
                base = model.vit if hasattr(model, "vit") else model.deit
                hidden = base(pixel_values=pixels).last_hidden_state
                pooled, logits = None, model(pixel_values=pixels).logits
        pixels.numpy().astype("<f4").tofile(out_dir / "pixels.bin")
        hidden.numpy().astype("<f4").tofile(out_dir / "image_hidden.bin")
        if pooled is not None:
            pooled.numpy().astype("<f4").tofile(out_dir / "image_pooled.bin")
        if logits is not None:
            logits.numpy().astype("<f4").tofile(out_dir / "image_logits.bin")
        if name == "vit-cls":
            classify_example(model, out_dir)


def classify_example(model, out_dir):
    """An image file and what transformers says of it, end to end."""
    from PIL import Image
    processor = transformers.ViTImageProcessor(size={"height": 32, "width": 32})
    processor.save_pretrained(out_dir)
    rng = np.random.default_rng(5)
    x, y = np.meshgrid(np.arange(45), np.arange(37))
    rgb = np.stack([(x * 5) % 256, (y * 7) % 256, rng.integers(0, 256, x.shape)], axis=-1).astype(np.uint8)
    (out_dir / "image.ppm").write_bytes(b"P6\n45 37\n255\n" + rgb.tobytes())
    auto = transformers.AutoImageProcessor.from_pretrained(out_dir)
    pixels = auto(images=Image.fromarray(rgb), return_tensors="pt").pixel_values
    with torch.no_grad():
        logits = model(pixel_values=pixels).logits[0]
    (out_dir / "image.txt").write_text(" ".join(f"{v:.6f}" for v in logits.tolist()) + "\n")


if __name__ == "__main__":
    main()
