#!/usr/bin/env python3
"""Writes test/fixtures/blocks/ (issue 38): one matrix per GGUF block format our CPU kernels multiply
in its blocks, as raw blocks (NAME.blocks, the bytes a GGUF file holds for the tensor) and as the
gguf package's dequantization of those blocks (NAME.values, float32 little-endian, [rows][cols]),
the reference test_cpu_kernels.c checks the products and pf__block_dequantize against.

    pip install gguf numpy
    python3 test/make_block_fixtures.py

Each format twice: "FMT" quantized from a random normal matrix (gguf.quants.quantize for Q8_0,
Q4_0, Q4_1, Q5_0, Q5_1, MXFP4; the small K quantizers of make_gguf_fixtures.py, and Q5_K's below, which
gguf-py cannot quantize), and "FMT-random", blocks of random bytes with finite fp16 factors, so that
every bit of the scales, minimums and values is exercised (a Q8_0 weight of -128 too; MXFP4's E8M0
scales drawn where the weights stay finite, with 0 and 1, whose factors are fp32 subnormals).
Matrices are 11 x 512: 8-row groups and a tail, and two 256-weight blocks a row for column splits.
"""
from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType as Q
from gguf.quants import dequantize

from make_gguf_fixtures import encode, f16_bytes

OUT = Path(__file__).resolve().parent / "fixtures" / "blocks"
ROWS, COLS = 11, 512
# bytes of each format's block, and where its fp16 factors sit (offsets in the block)
LAYOUT = {Q.Q8_0: (34, [0]), Q.Q4_0: (18, [0]), Q.Q4_1: (20, [0, 2]), Q.Q5_0: (22, [0]), Q.Q5_1: (24, [0, 2]),
          Q.Q4_K: (144, [0, 2]), Q.Q5_K: (176, [0, 2]), Q.Q6_K: (210, [208]), Q.Q3_K: (110, [108]),
          Q.IQ4_NL: (18, [0]), Q.IQ4_XS: (136, [0]), Q.Q2_K: (84, [80, 82]), Q.MXFP4: (17, [])}
SUPER_BLOCKS = (Q.Q4_K, Q.Q5_K, Q.Q6_K, Q.Q3_K, Q.IQ4_XS, Q.Q2_K)  # 256 weights a block


def quantize_q5_k(w):
    """[rows][cols] (cols % 256 == 0) into Q5_K blocks: d, dmin, 12 bytes of 6-bit sub-block scales
    and mins (as Q4_K), 32 bytes of fifth bits (bit j of byte i: weight i of sub-block j), 128 bytes
    of nibbles (sub-blocks 2k low, 2k + 1 high); x ~ d * sc * q - dmin * m, q in 0..31."""
    blocks = w.reshape(-1, 8, 32).astype(np.float32)
    lo = np.minimum(blocks.min(axis=2), 0)
    scale = (blocks.max(axis=2) - lo) / 31
    offset = -lo
    d = (np.maximum(scale.max(axis=1), 1e-8) / 63).astype(np.float16).astype(np.float32)
    dmin = (np.maximum(offset.max(axis=1), 1e-8) / 63).astype(np.float16).astype(np.float32)
    sc = np.clip(np.round(scale / d[:, None]), 1, 63).astype(np.int32)
    m = np.clip(np.round(offset / dmin[:, None]), 0, 63).astype(np.int32)
    q = np.clip(np.round((blocks + (dmin[:, None] * m)[:, :, None]) / (d[:, None] * sc)[:, :, None]), 0, 31).astype(np.uint8)
    packed = np.zeros((blocks.shape[0], 12), dtype=np.uint8)
    packed[:, 0:4] = (sc[:, 0:4] & 63) | ((sc[:, 4:8] >> 4) << 6)
    packed[:, 4:8] = (m[:, 0:4] & 63) | ((m[:, 4:8] >> 4) << 6)
    packed[:, 8:12] = (sc[:, 4:8] & 15) | ((m[:, 4:8] & 15) << 4)
    qh = np.zeros((blocks.shape[0], 32), dtype=np.uint8)
    for j in range(8):
        qh |= ((q[:, j, :] >> 4) & 1).astype(np.uint8) << j
    low = q & 15
    qs = (low[:, 0::2, :] | (low[:, 1::2, :] << 4)).reshape(-1, 128)
    out = np.concatenate([f16_bytes(d), f16_bytes(dmin), packed, qh, qs], axis=1)
    return out.reshape(w.shape[0], -1)


def quantized(w, qtype):
    if qtype == Q.Q5_K:
        return quantize_q5_k(w)
    return encode(w, qtype)


def random_blocks(rng, qtype):
    size, factors = LAYOUT[qtype]
    per_row = COLS // (256 if qtype in SUPER_BLOCKS else 32)
    blocks = rng.integers(0, 256, size=(ROWS * per_row, size), dtype=np.uint8)
    for at in factors:  # finite factors of a weight's size
        blocks[:, at:at + 2] = f16_bytes(rng.uniform(-0.05, 0.05, size=ROWS * per_row)).reshape(-1, 2)
    if qtype == Q.MXFP4:  # E8M0 scales of a weight's size (2^-18 .. 2^-2 halved), and the two subnormal ones
        blocks[:, 0] = rng.integers(110, 126, size=ROWS * per_row)
        blocks[:2, 0] = [0, 1]
    return blocks.reshape(ROWS, -1)


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(38)
    for qtype in LAYOUT:
        w = rng.standard_normal((ROWS, COLS)).astype(np.float32) * 0.1
        for name, blocks in [(qtype.name, quantized(w, qtype)), (qtype.name + "-random", random_blocks(rng, qtype))]:
            blocks = np.ascontiguousarray(blocks, dtype=np.uint8)
            values = dequantize(blocks, qtype).astype("<f4")
            assert values.shape == (ROWS, COLS) and np.isfinite(values).all(), name
            if not name.endswith("-random"):  # the quantizers are sane: within a block's step of w
                step = 0.2 if qtype == Q.Q2_K else 0.1  # Q2_K: 4 levels over a group of 16's range (~0.5)
                assert np.abs(values - w).max() < step, (name, np.abs(values - w).max())
            (OUT / f"{name}.blocks").write_bytes(blocks.tobytes())
            (OUT / f"{name}.values").write_bytes(values.tobytes())


if __name__ == "__main__":
    main()
