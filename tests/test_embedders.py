"""The local ONNX embedder (real model) and backend selection."""

from __future__ import annotations

import numpy as np
import pytest

from assistant.index import embedders
from assistant.index.embedders import EmbeddingError
from assistant.settings import Settings


@pytest.fixture(scope="module")
def minilm() -> embedders.Embedder:
    return embedders.create(Settings())


def test_vectors_are_normalised_and_similar_texts_are_close(minilm: embedders.Embedder) -> None:
    vectors = minilm.embed(["A man is eating food.", "A man is eating a piece of bread.", "The girl is carrying a baby."])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    similarity = vectors @ vectors.T
    # all-MiniLM-L6-v2 (fp32, sentence-transformers) scores the first pair 0.755.
    assert similarity[0, 1] == pytest.approx(0.755, abs=0.02)
    assert similarity[0, 2] < 0.1


def test_batching_and_ordering_do_not_change_vectors(minilm: embedders.Embedder) -> None:
    texts = ["short", "a somewhat longer sentence about proteins", "x " * 400, "medium length text here"]
    together = minilm.embed(texts)
    alone = np.vstack([minilm.embed([t]) for t in texts])
    assert np.allclose(together, alone, atol=1e-4)
    assert minilm.embed([]).shape == (0, 384)


def test_long_texts_are_truncated_at_256_word_pieces(minilm: embedders.Embedder) -> None:
    base = "protein folding " * 130
    assert np.allclose(minilm.embed([base])[0], minilm.embed([base + "galaxies " * 50])[0], atol=1e-5)
    assert minilm.model_id.endswith("max256")


def test_the_onnx_backend_refuses_other_model_names() -> None:
    with pytest.raises(EmbeddingError, match="ships only all-MiniLM-L6-v2"):
        embedders.create(Settings(embed_model="bge-small-en-v1.5"))
