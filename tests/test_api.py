"""The public API: Assistant, search, ask; question validation; auto-ingest."""

from __future__ import annotations

import pytest

import assistant as package
from assistant import Assistant, Hit, QuestionError

from conftest import SAMPLE_UNIQUE


@pytest.mark.parametrize("question", ["", "   \n\t", "x" * 100_000], ids=["empty", "whitespace", "100k-chars"])
def test_empty_and_huge_questions_are_rejected_clearly(sample_index: Assistant, question: str) -> None:
    with pytest.raises(QuestionError, match="empty|characters long"):
        sample_index.search(question)


def test_search_returns_ranked_abstract_hits(sample_index: Assistant) -> None:
    hits = sample_index.search("adaptive gradient clipping normalizer-free networks ImageNet", k=5)
    assert [h.rank for h in hits] == [1, 2, 3, 4, 5]
    assert all(isinstance(h, Hit) for h in hits)
    assert hits[0].abstract.text.startswith("Batch normalization is a key component of most image classif")
    assert hits[0].passage and hits[0].passage in hits[0].abstract.text
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert len({h.abstract.id for h in hits}) == 5


@pytest.mark.slow
def test_module_level_search_ingests_the_bundled_corpus_into_an_empty_index() -> None:
    package._default = None
    try:
        hits = package.search("Pangu Ultra depth-scaled sandwich normalization", k=1)
        assert hits[0].abstract.text.startswith("We present Pangu Ultra")
        assert package.default_assistant().stats()["abstracts"] == SAMPLE_UNIQUE
    finally:
        package._default = None
