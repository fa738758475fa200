"""Citation-backed question answering over scientific paper abstracts.

    from assistant import Assistant, ask, search
    hits = search("How do normalizer-free networks train without batch norm?")

The module-level functions use a default `Assistant` configured from the environment.
"""

from __future__ import annotations

from assistant import offline

offline.apply()

from collections.abc import Iterator  # noqa: E402
from typing import Any  # noqa: E402

from assistant.accounts import AccountError  # noqa: E402
from assistant.answer.generators import GenerationError  # noqa: E402
from assistant.api import Assistant, Chat, QuestionError  # noqa: E402
from assistant.remote.http import ServiceError  # noqa: E402
from assistant.retrieval import SearchFilters  # noqa: E402
from assistant.settings import Settings  # noqa: E402
from assistant.types import (  # noqa: E402
    Abstract,
    Answer,
    Chunk,
    Citation,
    Finding,
    Hit,
    IngestProgress,
    IngestReport,
    Rejected,
    Retrieved,
    Study,
    SyncReport,
)

_default: Assistant | None = None


def default_assistant() -> Assistant:
    """The shared `Assistant` behind the module-level functions (created on first use)."""
    global _default
    if _default is None:
        _default = Assistant()
    return _default


def search(question: str, k: int = 10, filters: SearchFilters | dict | None = None) -> list[Hit]:
    """Search the default index; see `Assistant.search`."""
    return default_assistant().search(question, k, filters)


def ask(question: str, **options: Any) -> Answer:
    """Answer with the default assistant; see `Assistant.ask` for the options."""
    return default_assistant().ask(question, **options)


def ask_stream(question: str, **options: Any) -> Iterator[str | Answer]:
    """Stream an answer from the default assistant; see `Assistant.ask_stream`."""
    return default_assistant().ask_stream(question, **options)


__all__ = [
    "AccountError",
    "Abstract",
    "Answer",
    "Assistant",
    "Chat",
    "Chunk",
    "Citation",
    "Finding",
    "GenerationError",
    "Hit",
    "IngestProgress",
    "IngestReport",
    "QuestionError",
    "Rejected",
    "Retrieved",
    "SearchFilters",
    "ServiceError",
    "Settings",
    "Study",
    "SyncReport",
    "ask",
    "ask_stream",
    "default_assistant",
    "search",
]
