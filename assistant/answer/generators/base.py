"""The generator interface: one main method, `stream(messages) -> text deltas`."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

from assistant.types import Usage

Message = dict[str, str]

_BREAK = "\u200b"  # a zero-width space: breaks a control token's text and shows nothing
# The shapes chat templates give their control tokens, which a server's template reads as
# turn boundaries wherever a message holds their text: ChatML and Llama 3 "<|im_end|>",
# "<|eot_id|>"; DeepSeek "<｜end▁of▁sentence｜>"; Gemma "<end_of_turn>"; Llama 2 and Mistral
# "[INST]", "<<SYS>>", "</s>".
TEMPLATE_MARKERS = re.compile(r"<\|[^|<>\s]{1,64}\|>|<｜[^｜<>\s]{1,64}｜>|<(?:start|end)_of_turn>|\[/?INST\]|<</?SYS>>|</?s>")


def as_text(content: str, markers: re.Pattern[str] = TEMPLATE_MARKERS) -> str:
    """``content`` with each match of ``markers`` broken by a zero-width space after its first
    character, so that the model reads the characters it shows, not a control token: an
    abstract quoting "<|im_end|>" cannot end the turn and speak as another role."""
    return markers.sub(lambda match: match[0][0] + _BREAK + match[0][1:], content)


def as_text_messages(messages: list[Message], markers: re.Pattern[str] = TEMPLATE_MARKERS) -> list[Message]:
    """``messages`` with each content read as text (`as_text`)."""
    return [{**message, "content": as_text(message["content"], markers)} for message in messages]


class Generator(Protocol):
    """A chat model. ``model_name`` says which one answers (shown to users)."""

    model_name: str

    def stream(self, messages: list[Message], max_tokens: int, usage: Usage) -> Iterator[str]:
        """Yield the reply as text deltas (temperature 0) and record token counts in ``usage``."""
        ...


class Priority:
    """Work that goes before the model's next token: the evidence of questions (retrieval and
    the reading of the papers' sentences), which every asker waits for, while an answer only
    one of them reads is being written. A model sharing the CPU (the local one) waits while
    any is in flight (`waited`), before its prompt and between tokens, ``most_s`` at most each
    time, so a steady stream of questions slows answers and never stops them. On 2 cores, the
    model's threads otherwise take half the CPU from 16 questions' evidence."""

    def __init__(self, most_s: float = 0.5, pause_s: float = 0.005) -> None:
        self.most_s, self.pause_s = most_s, pause_s
        self._in_flight = 0
        self._lock = threading.Lock()

    @contextmanager
    def first(self) -> Iterator[None]:
        """Mark the work inside as going first."""
        with self._lock:
            self._in_flight += 1
        try:
            yield
        finally:
            with self._lock:
                self._in_flight -= 1

    @property
    def in_flight(self) -> int:
        """How many pieces of work marked to go first are running."""
        return self._in_flight

    def waited(self, stop: threading.Event | None = None) -> float:
        """Wait while any work goes first (``most_s`` at most, or until ``stop`` is set);
        returns the seconds waited."""
        started = time.monotonic()
        while self._in_flight and time.monotonic() - started < self.most_s and not (stop and stop.is_set()):
            time.sleep(self.pause_s)
        return time.monotonic() - started


class GenerationError(RuntimeError):
    """The model could not answer: server unreachable, bad key, unknown model, ..."""
