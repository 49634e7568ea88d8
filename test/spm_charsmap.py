"""SentencePiece's precompiled_charsmap and .model files, for the fixture scripts.

build_charsmap(rules) writes the charsmap of a {key: replacement} dict in SentencePiece's format
(what HF's Precompiled normalizer reads): the trie's size in bytes (u32 little-endian), the trie
as a darts-clone double array of u32 units, then the replacements, each ended by a NUL. A unit
holds a label (bits 0-7; bit 31 set in value units), a leaf flag (bit 8) and the offset of its
node's children (bits 10-30); a node's children sit at (its position ^ offset) ^ label, its value
at (its position ^ offset) ^ 0.

read_model(path) reads the pieces (piece, score, type), unk_id and the precompiled charsmap from
a SentencePiece .model (a protobuf ModelProto), without the protobuf package.
"""
import struct


def build_charsmap(rules: dict) -> bytes:
    blob, index = bytearray(), {}
    for rep in sorted(set(rules.values())):
        index[rep] = len(blob)
        blob += rep.encode("utf-8") + b"\0"
    root = {}
    for key, rep in rules.items():
        k = key.encode("utf-8")
        assert k and b"\0" not in k, repr(key)
        node = root
        for byte in k:
            node = node.setdefault(byte, {})
        node[None] = index[rep]  # the value of the key that ends here

    units, used, bases = [0], bytearray(1), set()  # a base serves one node: else a search could
    used[0] = 1                                      # step into another node's children
    block_free = [255]  # free slots left in each 256-unit block
    first_block = 0

    def grow(n):
        if len(units) < n:
            extra = n - len(units)
            units.extend([0] * extra)
            used.extend(bytes(extra))
            while len(block_free) * 256 < n:
                block_free.append(256)

    queue = [(root, 0)]
    for node, pos in queue:
        labels = sorted(b for b in node if b is not None)
        slots = labels + ([0] if None in node else [])
        if not slots:
            continue
        block = first_block
        while True:
            grow((block + 1) * 256)
            if block_free[block] >= len(slots):
                base = next((block * 256 + x for x in range(256) if block * 256 + x not in bases and
                             all(not used[block * 256 + (x ^ c)] for c in slots)), None)
                if base is not None:
                    break
            block += 1
        while first_block < len(block_free) and block_free[first_block] == 0:
            first_block += 1
        bases.add(base)
        offset = pos ^ base
        assert offset < 1 << 21, "charsmap too large for this builder"
        units[pos] |= offset << 10 | (1 << 8 if None in node else 0)
        for c in slots:
            used[base ^ c] = 1
            block_free[(base ^ c) >> 8] -= 1
        if None in node:
            units[base] = node[None] | 1 << 31
        for c in labels:
            units[base ^ c] = c
            queue.append((node[c], base ^ c))
    trie = struct.pack(f"<{len(units)}I", *units)
    return struct.pack("<I", len(trie)) + trie + bytes(blob)


def _fields(data: bytes):
    """(field number, wire type, value) of a protobuf message: ints, or bytes for length-delimited."""
    i = 0
    while i < len(data):
        key, i = _varint(data, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(data, i)
        elif wire == 1:
            value, i = data[i:i + 8], i + 8
        elif wire == 2:
            n, i = _varint(data, i)
            value, i = data[i:i + n], i + n
        elif wire == 5:
            value, i = data[i:i + 4], i + 4
        else:
            raise ValueError(f"wire type {wire}")
        yield field, wire, value


def _varint(data, i):
    shift = value = 0
    while True:
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, i


def read_model(path):
    """([(piece, score, type)], unk_id, precompiled_charsmap bytes) of a SentencePiece model."""
    pieces, unk_id, charsmap = [], 0, b""
    for field, _, value in _fields(open(path, "rb").read()):
        if field == 1:  # SentencePiece {piece = 1, score = 2, type = 3}
            piece, score, kind = "", 0.0, 1
            for f, _, v in _fields(value):
                if f == 1:
                    piece = v.decode("utf-8")
                elif f == 2:
                    score = struct.unpack("<f", v)[0]
                elif f == 3:
                    kind = v
            pieces.append((piece, score, kind))
        elif field == 2:  # TrainerSpec {unk_id = 40}
            for f, _, v in _fields(value):
                if f == 40:
                    unk_id = v
        elif field == 3:  # NormalizerSpec {precompiled_charsmap = 2}
            for f, _, v in _fields(value):
                if f == 2:
                    charsmap = bytes(v)
    return pieces, unk_id, charsmap
