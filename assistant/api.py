"""The `Assistant`: one configured index with its embedder, and the operations on it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from functools import cached_property
from pathlib import Path
from typing import Any

from assistant import retrieval
from assistant.index import embedders
from assistant.index.ingest import ingest as run_ingest
from assistant.index.store import ChromaStore
from assistant.settings import Settings
from assistant.types import Answer, Hit, IngestReport

MAX_QUESTION_CHARS = 4000


class QuestionError(ValueError):
    """The question cannot be searched or answered (empty, too long)."""


def check_question(question: str) -> str:
    """Return the stripped question, or raise a `QuestionError` saying what is wrong."""
    if not isinstance(question, str) or not question.strip():
        raise QuestionError("the question is empty; ask something about the indexed abstracts")
    question = question.strip()
    if len(question) > MAX_QUESTION_CHARS:
        raise QuestionError(
            f"the question is {len(question):,} characters long; the limit is "
            f"{MAX_QUESTION_CHARS:,}. Ask a shorter question."
        )
    return question


class Assistant:
    """A question-answering assistant over one index of abstracts.

    Any `Settings` field can be passed as a keyword (``Assistant(data_dir="...")``);
    the rest come from the environment and ``.env``. Models and the store open lazily.
    """

    def __init__(self, settings: Settings | None = None, **overrides: Any) -> None:
        if settings is None:
            self.settings = Settings(**overrides)
        else:
            self.settings = Settings(**{**settings.model_dump(), **overrides}) if overrides else settings

    @cached_property
    def embedder(self) -> embedders.Embedder:
        """The configured embedding model (loaded on first use)."""
        return embedders.create(self.settings)

    @cached_property
    def store(self) -> ChromaStore:
        """The Chroma store, checked against the configured embedder."""
        return ChromaStore(self.settings, self.embedder.model_id)

    def ingest(
        self,
        paths: Iterable[str | Path] | str | Path,
        progress: bool = False,
        on_batch: Callable[[int, int], None] | None = None,
    ) -> IngestReport:
        """Index the abstracts in these files/folders; already indexed ones are skipped."""
        if isinstance(paths, str | Path):
            paths = [paths]
        return run_ingest(paths, self.store, self.embedder, self.settings, progress, on_batch)

    def ensure_corpus(self) -> IngestReport | None:
        """Ingest the bundled corpus if the index is empty and auto_ingest is on."""
        if self.settings.auto_ingest and self.store.count() == 0:
            return self.ingest([self.settings.bundled_corpus])
        return None

    def search(self, question: str, k: int = 10) -> list[Hit]:
        """The ``k`` abstracts that best match the question, best first."""
        question = check_question(question)
        if k < 1:
            raise ValueError("k must be at least 1")
        self.ensure_corpus()
        return retrieval.dense_search(question, k, self.store, self.embedder)

    def ask(self, question: str) -> Answer:
        """Answer a question with citations (not built yet: see the answering issue)."""
        check_question(question)
        raise NotImplementedError(
            "answering with citations is not implemented yet; use search() for now"
        )

    def stats(self) -> dict[str, Any]:
        """Counts of the index: abstracts, chunks, abstracts per source."""
        by_source: Counter[str] = self.store.counts_by_source()
        return {
            "abstracts": sum(by_source.values()),
            "chunks": self.store.chunk_count(),
            "by_source": dict(sorted(by_source.items())),
            "embedder": self.embedder.model_id,
            "location": (
                f"chroma server {self.settings.chroma_host}:{self.settings.chroma_port}"
                if self.settings.chroma_host
                else str(self.settings.chroma_dir)
            ),
            "collection": self.settings.collection,
        }

    def reset(self) -> None:
        """Delete everything in this index."""
        self.store.reset()
