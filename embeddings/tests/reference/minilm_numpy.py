"""Reference sentence vectors for the `embeddings` crate's tests, computed independently of it.

Reads a sentence-transformers BERT directory (all-MiniLM-L6-v2) with nothing but numpy and the
standard library: its own WordPiece tokenizer over vocab.txt, its own safetensors reader and its
own forward pass (post-LayerNorm BERT, exact erf GELU), then the attention-masked mean of the
last layer, L2-normalised, as sentence-transformers computes it.

Usage: minilm_numpy.py MODEL_DIR < texts.json > vectors.json   (a JSON list of strings in, a JSON
list of float lists out); or import it and embed with `Model(MODEL_DIR).embed(texts)`. The tokenizer handles what the tests send (English text, accents,
punctuation); it does not implement BERT's handling of CJK characters.
"""

import json
import math
import struct
import sys
import unicodedata
from pathlib import Path

import numpy as np


def read_safetensors(path):
    data = Path(path).read_bytes()
    (header_len,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + header_len])
    body = data[8 + header_len :]
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] != "F32":
            continue
        start, end = info["data_offsets"]
        tensors[name] = np.frombuffer(body[start:end], dtype="<f4").reshape(info["shape"])
    return tensors


class WordPiece:
    def __init__(self, vocab_path, max_len):
        words = Path(vocab_path).read_text(encoding="utf-8").split("\n")
        self.vocab = {w: i for i, w in enumerate(words) if w}
        self.max_len = max_len

    @staticmethod
    def basic_tokens(text):
        # BertNormalizer: drop control characters, whitespace to spaces, strip accents, lower case.
        text = "".join(" " if c.isspace() else c for c in text if unicodedata.category(c) not in ("Cc", "Cf") or c in "\t\n\r")
        text = unicodedata.normalize("NFD", text.lower())
        text = "".join(c for c in text if unicodedata.category(c) != "Mn")
        # BertPreTokenizer: split on whitespace, and every punctuation character is a token.
        tokens, word = [], ""
        for c in text:
            if c.isspace():
                if word:
                    tokens.append(word)
                word = ""
            elif is_punctuation(c):
                if word:
                    tokens.append(word)
                tokens.append(c)
                word = ""
            else:
                word += c
        if word:
            tokens.append(word)
        return tokens

    def wordpiece(self, word):
        if len(word) > 100:
            return ["[UNK]"]
        pieces, start = [], 0
        while start < len(word):
            end, found = len(word), None
            while start < end:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in self.vocab:
                    found = piece
                    break
                end -= 1
            if found is None:
                return ["[UNK]"]
            pieces.append(found)
            start = end
        return pieces

    def encode(self, text):
        pieces = [p for w in self.basic_tokens(text) for p in self.wordpiece(w)]
        pieces = ["[CLS]"] + pieces[: self.max_len - 2] + ["[SEP]"]
        return [self.vocab[p] for p in pieces]


def is_punctuation(c):
    cp = ord(c)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(c).startswith("P")


def layer_norm(x, weight, bias, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


erf = np.vectorize(math.erf)


def gelu(x):
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def linear(t, prefix, x):
    return x @ t[prefix + ".weight"].T + t[prefix + ".bias"]


class Model:
    """A model directory read once, to embed many batches (tests/python/embeddings_server.py)."""

    def __init__(self, model_dir):
        model_dir = Path(model_dir)
        self.config = json.loads((model_dir / "config.json").read_text())
        max_len = json.loads((model_dir / "sentence_bert_config.json").read_text())["max_seq_length"]
        self.t = read_safetensors(model_dir / "model.safetensors")
        self.tokenizer = WordPiece(model_dir / "vocab.txt", max_len)

    def embed(self, texts):
        config, t, tokenizer = self.config, self.t, self.tokenizer
        heads, eps = config["num_attention_heads"], config["layer_norm_eps"]
        out = []
        for text in texts:  # one at a time: no padding, so no mask to get wrong
            out.append(self.embed_one(tokenizer.encode(text), heads, eps))
        return out

    def embed_one(self, ids, heads, eps):
        config, t = self.config, self.t
        ids = np.array(ids)
        n = len(ids)
        x = (
            t["embeddings.word_embeddings.weight"][ids]
            + t["embeddings.position_embeddings.weight"][:n]
            + t["embeddings.token_type_embeddings.weight"][np.zeros(n, dtype=int)]
        ).astype(np.float64)
        x = layer_norm(x, t["embeddings.LayerNorm.weight"], t["embeddings.LayerNorm.bias"], eps)
        for i in range(config["num_hidden_layers"]):
            p = f"encoder.layer.{i}"
            q, k, v = (linear(t, f"{p}.attention.self.{m}", x) for m in ("query", "key", "value"))
            d = q.shape[-1] // heads
            split = lambda m: m.reshape(n, heads, d).transpose(1, 0, 2)
            scores = split(q) @ split(k).transpose(0, 2, 1) / math.sqrt(d)
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ split(v)).transpose(1, 0, 2).reshape(n, heads * d)
            x = layer_norm(
                linear(t, f"{p}.attention.output.dense", context) + x,
                t[f"{p}.attention.output.LayerNorm.weight"],
                t[f"{p}.attention.output.LayerNorm.bias"],
                eps,
            )
            hidden = gelu(linear(t, f"{p}.intermediate.dense", x))
            x = layer_norm(
                linear(t, f"{p}.output.dense", hidden) + x,
                t[f"{p}.output.LayerNorm.weight"],
                t[f"{p}.output.LayerNorm.bias"],
                eps,
            )
        mean = x.mean(0)
        return (mean / max(np.linalg.norm(mean), 1e-12)).tolist()


def embed(model_dir, texts):
    return Model(model_dir).embed(texts)


if __name__ == "__main__":
    json.dump(embed(sys.argv[1], json.load(sys.stdin)), sys.stdout)
