"""Sentence vectors computed once and kept: the real embedder, a real on-disk store."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from assistant import Assistant
from assistant.index import embedders
from assistant.index.sentence_vectors import SentenceVectors
from assistant.settings import Settings
from assistant.types import Abstract


class Counting:
    """The real embedder, counting the texts it is asked to embed."""

    def __init__(self, inner: embedders.Embedder, model_id: str | None = None) -> None:
        self.inner, self.texts = inner, []
        self.model_id, self.dimension = model_id or inner.model_id, inner.dimension

    def embed(self, texts: list[str]) -> np.ndarray:
        self.texts.extend(texts)
        return self.inner.embed(texts)


@pytest.fixture(scope="module")
def minilm() -> embedders.Embedder:
    return embedders.create(Settings())


SENTENCES = ["Sparse attention halves the memory of long-context transformers.",
             "We evaluate on three summarisation benchmarks.", "Accuracy rose from 71.2% to 74.9%."]


def test_a_sentence_is_embedded_once_and_its_vector_is_the_embedders(minilm: embedders.Embedder, tmp_path: Path) -> None:
    counting = Counting(minilm)
    kept = SentenceVectors(tmp_path, counting)
    first = kept.embed(SENTENCES[:2])
    again = kept.embed(SENTENCES)  # two kept, one new
    assert counting.texts == SENTENCES[:2] + SENTENCES[2:]
    np.testing.assert_allclose(again[:2], first, atol=1e-6)
    np.testing.assert_allclose(again, minilm.embed(SENTENCES), atol=1e-5)
    assert again.dtype == np.float32 and again.shape == (3, minilm.dimension)


def test_the_vectors_outlive_the_process_and_are_not_shared_across_models(minilm: embedders.Embedder, tmp_path: Path) -> None:
    SentenceVectors(tmp_path, minilm).embed(SENTENCES)
    reopened = Counting(minilm)
    SentenceVectors(tmp_path, reopened).embed(SENTENCES)
    assert reopened.texts == []
    other = Counting(minilm, model_id="another-model")
    SentenceVectors(tmp_path, other).embed(SENTENCES)
    assert other.texts == SENTENCES


def test_warming_embeds_what_is_not_kept_and_waits_while_busy(minilm: embedders.Embedder, tmp_path: Path) -> None:
    papers = [Abstract(id=f"p{i}", title=f"Paper {i}", text=f"We study method {i}. It improves recall by {i}0%.",
                       source="s") for i in range(4)]
    counting = Counting(minilm)
    kept = SentenceVectors(tmp_path, counting)
    kept.embed(["We study method 0.", "It improves recall by 00%."])
    answers, asked = [True, True, False, False], []
    busy = lambda: asked.append(1) or answers[len(asked) - 1]  # noqa: E731
    assert kept.warm(papers, busy=busy, most=3) == 2  # p0 kept already; p3 past `most`
    assert not any("method 0" in text or "method 3" in text for text in counting.texts[2:])
    assert len(asked) == 4  # before p1: busy twice, then free; before p2: free

def test_warming_ends_at_the_next_abstract_once_told_to_stop(minilm: embedders.Embedder, tmp_path: Path) -> None:
    """The app stops the warm-up at exit: before another abstract, and while it waits for a question."""
    papers = [Abstract(id=f"p{i}", title=f"Paper {i}", text=f"We study method {i}. It improves recall by {i}0%.",
                       source="s") for i in range(4)]
    counting = Counting(minilm)
    assert SentenceVectors(tmp_path / "a", counting).warm(papers, stop=lambda: bool(counting.texts)) == 1
    assert all("method 0" in text or "00%" in text for text in counting.texts)
    asked: list[int] = []
    busy = lambda: asked.append(1) or True  # noqa: E731 - a question never ends
    assert SentenceVectors(tmp_path / "b", counting).warm(papers, busy=busy, stop=lambda: len(asked) >= 3) == 0
    assert len(asked) == 3


def test_kept_vectors_give_the_same_findings(sample_index: Assistant) -> None:
    question = "How much faster is speculative decoding with a retrieval datastore?"
    kept = Assistant(data_dir=sample_index.settings.data_dir, auto_ingest=False)
    fresh = Assistant(data_dir=sample_index.settings.data_dir, sentence_cache_mb=0, auto_ingest=False)
    assert isinstance(kept.sentence_vectors, SentenceVectors) and fresh.sentence_vectors is fresh.embedder
    kept.sentence_vectors.cache.clear()  # kept vectors are a cache: clearing it loses nothing
    expected = [(f.abstract.id, f.text) for f in fresh.findings(question)]
    assert expected and [(f.abstract.id, f.text) for f in kept.findings(question)] == expected
    assert kept.warm_sentences() > 0  # the rest of the index
    assert [(f.abstract.id, f.text) for f in kept.findings(question)] == expected
    assert kept.warm_sentences() == 0
