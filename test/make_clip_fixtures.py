#!/usr/bin/env python3
"""CLIP fixture for test_encoders.c (issue 16): a tiny random CLIPModel saved by transformers
(save_pretrained: its tensor names and config.json), towers of different widths, heads and depths,
with what transformers computes for four padded texts and two images.

Run from the repository root: python3 test/make_clip_fixtures.py

test/fixtures/clip/ holds config.json, model.safetensors and
    text_ids.txt      one text per line: its token ids, comma-separated (unpadded; the batch was right-padded with
                      pad_token_id and an attention mask, as CLIP's tokenizer pads)
    text_hidden.bin   float32 LE [sum of lengths][32]: the text tower's last_hidden_state, each
                      text's real tokens one after another
    text_pooled.bin   float32 LE [4][32]: the text tower's pooler_output (the end-of-text token)
    text_embeds.bin   float32 LE [4][24]: get_text_features (projected, not normalised)
    pixels.bin        float32 LE [2][3][32][32]: the images (pixel_values, already normalised)
    image_hidden.bin  float32 LE [2][17][48]: the vision tower's last_hidden_state
    image_pooled.bin  float32 LE [2][48]: its pooler_output (class token through post_layernorm)
    image_embeds.bin  float32 LE [2][24]: get_image_features
    logits_per_image.bin float32 LE [2][4]
The texts' end-of-text id (eos_token_id 40) is not their largest id, so the pooled token differs
from the one configs with eos_token_id 2 pool (the largest id's position): text_pooled_argmax.bin
holds the pooled output under that rule, for the same texts.

The towers saved alone with the same weights (so clip/'s references are theirs):
test/fixtures/clip-text (CLIPTextModel: no projection) and test/fixtures/clip-vision
(CLIPVisionModelWithProjection), config.json and model.safetensors each.
"""
from pathlib import Path

import numpy as np
import torch
import transformers

FIXTURES = Path(__file__).resolve().parent / "fixtures"
EOS, PAD, BOS = 40, 1, 0
TEXTS = [  # each ends with the end-of-text id, some with larger ids before it
    [BOS, 5, 77, 12, EOS],
    [BOS, 90, 3, 64, 8, 51, 97, EOS],
    [BOS, EOS],
    [BOS, 14, 98, 2, 33, 45, 60, 71, 22, EOS],
]


def main():
    torch.manual_seed(0)
    text = dict(vocab_size=99, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                max_position_embeddings=16, eos_token_id=EOS, pad_token_id=PAD, bos_token_id=BOS)
    vision = dict(hidden_size=48, intermediate_size=96, num_hidden_layers=3, num_attention_heads=6, image_size=32,
                  patch_size=8, num_channels=3)
    config = transformers.CLIPConfig(text_config=text, vision_config=vision, projection_dim=24)
    model = transformers.CLIPModel(config).eval()
    with torch.no_grad():  # weights larger than the default init, so a wrong trait shows far above 1e-4
        for key, p in model.named_parameters():
            if key == "logit_scale":
                p.fill_(2.0)
            elif p.dim() > 1 or "embedding" in key:
                p.normal_(0, 0.2)
            else:
                p.normal_(1.0 if "norm" in key else 0.0, 0.1)
    out_dir = FIXTURES / "clip"
    model.save_pretrained(out_dir)

    width = max(len(t) for t in TEXTS)
    ids = torch.tensor([t + [PAD] * (width - len(t)) for t in TEXTS])
    mask = torch.tensor([[1] * len(t) + [0] * (width - len(t)) for t in TEXTS])
    pixels = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        out = model(input_ids=ids, attention_mask=mask, pixel_values=pixels)
        text_out = model.text_model(input_ids=ids, attention_mask=mask)  # CLIPOutput's pooler_output is projected
        vision_out = model.vision_model(pixel_values=pixels)
        text_embeds = model.text_projection(text_out.pooler_output)
        image_embeds = model.visual_projection(vision_out.pooler_output)
        model.text_model.eos_token_id = 2  # the rule of configs before transformers 4.31
        pooled_argmax = model.text_model(input_ids=ids, attention_mask=mask).pooler_output
    assert torch.allclose(out.text_embeds, text_embeds / text_embeds.norm(dim=-1, keepdim=True), atol=1e-6)

    def save(name, tensor):
        tensor.numpy().astype("<f4").tofile(out_dir / name)

    (out_dir / "text_ids.txt").write_text("".join(",".join(map(str, t)) + "\n" for t in TEXTS))
    save("text_hidden.bin", torch.cat([text_out.last_hidden_state[b, :len(t)] for b, t in enumerate(TEXTS)]))
    save("text_pooled.bin", text_out.pooler_output)
    save("text_pooled_argmax.bin", pooled_argmax)
    save("text_embeds.bin", text_embeds)
    save("pixels.bin", pixels)
    save("image_hidden.bin", vision_out.last_hidden_state)
    save("image_pooled.bin", vision_out.pooler_output)
    save("image_embeds.bin", image_embeds)
    save("logits_per_image.bin", out.logits_per_image)
    save_towers(model, config)


def save_towers(model, config):
    """Each tower alone, as transformers saves it, with the CLIPModel's weights."""
    text_config, vision_config = config.text_config, config.vision_config
    vision_config.projection_dim = config.projection_dim
    text = transformers.CLIPTextModel(text_config).eval()
    vision = transformers.CLIPVisionModelWithProjection(vision_config).eval()
    weights = model.state_dict()
    for tower, prefix in ((text, "text_model."), (vision, "vision_model.")):
        # transformers 5's CLIPTextModel holds the tower's modules itself (its names lack the prefix)
        mine = {k: weights[k if k in weights else prefix + k] for k in tower.state_dict()}
        tower.load_state_dict(mine)
    text.save_pretrained(FIXTURES / "clip-text")
    vision.save_pretrained(FIXTURES / "clip-vision")


if __name__ == "__main__":
    main()
