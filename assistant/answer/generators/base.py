"""The generator interface: one main method, `stream(messages) -> text deltas`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from assistant.types import Usage

Message = dict[str, str]


class Generator(Protocol):
    """A chat model. ``model_name`` says which one answers (shown to users)."""

    model_name: str

    def stream(self, messages: list[Message], max_tokens: int, usage: Usage) -> Iterator[str]:
        """Yield the reply as text deltas (temperature 0) and record token counts in ``usage``."""
        ...


class GenerationError(RuntimeError):
    """The model could not answer: server unreachable, bad key, unknown model, ..."""
