"""The model's waiting line, for a server shared by many users (the app).

Retrieval and the findings need no model, and every user gets them at once; only the answer
waits for the model, which writes ``slots`` answers at a time (one for the local model on 2
cores). Questions are answered in the order they came (first come, first served), and:

- each owner (a chat session) holds at most one waiting question: a newer one from the same
  chat takes the older one's place in line, and the older one is told it was replaced;
- a waiting question whose reader left (a closed tab, a client that went away) stops checking
  in (its handler asks `wait` for its place about every second), and is dropped from the line
  ``stale_after_s`` later: no turn goes to a reader who left;
- the wait is estimated from the recent answers' durations: "2 questions ahead of yours,
  about 10 s".
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import deque
from dataclasses import dataclass, field

RECENT_ANSWERS = 20


@dataclass
class Ticket:
    """One question's place in line (`WaitingLine.join`)."""

    owner: str
    number: int
    checked_in: float = field(default_factory=time.monotonic)
    replaced: bool = False
    dropped: bool = False
    started: float | None = None


@dataclass(frozen=True)
class Place:
    """Where a waiting question stands: the questions answered or waiting before it, and the
    estimated wait in seconds."""

    ahead: int
    seconds: float

    def line(self) -> str:
        """The place in words: "2 questions ahead of yours in the queue, about 10 s" (the
        wait for its turn)."""
        ahead = "1 question" if self.ahead == 1 else f"{self.ahead} questions"
        return f"{ahead} ahead of yours in the queue, about {max(1, round(self.seconds))} s"


class WaitingLine:
    """A first-come, first-served line for the model's ``slots`` (see the module docstring).
    ``first_estimate_s``: what one answer is expected to take before any was timed."""

    def __init__(self, slots: int, first_estimate_s: float = 8.0, stale_after_s: float = 3.0) -> None:
        self.slots = slots
        self.stale_after_s = stale_after_s
        self._changed = threading.Condition()
        self._waiting: list[Ticket] = []
        self._serving: list[Ticket] = []
        self._durations: deque[float] = deque([first_estimate_s], maxlen=RECENT_ANSWERS)
        self._numbers = itertools.count(1)

    def join(self, owner: str) -> Ticket:
        """A new question from ``owner`` joins the end of the line; one of theirs still
        waiting leaves it, marked ``replaced``."""
        with self._changed:
            for old in [t for t in self._waiting if t.owner == owner]:
                old.replaced = True
                self._waiting.remove(old)
            ticket = Ticket(owner, next(self._numbers))
            self._waiting.append(ticket)
            self._changed.notify_all()
            return ticket

    def wait(self, ticket: Ticket, timeout: float) -> Place | None:
        """Wait up to ``timeout`` seconds for the ticket's turn: None once it is answering
        (it holds a slot until `leave`), else its `Place`. Each call checks the ticket in.
        Raises `Replaced` when a newer question of its owner took its place."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                ticket.checked_in = time.monotonic()
                if ticket.replaced:
                    raise Replaced("a newer question from this chat took this one's place in the queue")
                self._drop_stale()
                if ticket in self._serving:
                    return None
                if ticket.dropped:  # it stopped checking in, and is back: the end of the line
                    ticket.dropped = False
                    self._waiting.append(ticket)
                if len(self._serving) < self.slots and self._waiting and self._waiting[0] is ticket:
                    self._waiting.pop(0)
                    ticket.started = time.monotonic()
                    self._serving.append(ticket)
                    self._changed.notify_all()
                    return None
                left = deadline - time.monotonic()
                if left <= 0:
                    return self.place(ticket)
                self._changed.wait(min(left, self.stale_after_s))

    def busy(self) -> bool:
        """Whether any question is waiting or being answered (background work waits for it)."""
        with self._changed:
            return bool(self._waiting or self._serving)

    def place(self, ticket: Ticket) -> Place:
        """Where ``ticket`` stands now."""
        with self._changed:
            ahead = len(self._serving) + (self._waiting.index(ticket) if ticket in self._waiting else 0)
            per_answer = sum(self._durations) / len(self._durations)
            return Place(ahead, per_answer * ahead / self.slots)

    def leave(self, ticket: Ticket) -> None:
        """The ticket's question is done (answered, failed or abandoned): its slot, or its
        place in line, goes to the next."""
        with self._changed:
            if ticket in self._serving:
                self._serving.remove(ticket)
                if ticket.started is not None:
                    self._durations.append(time.monotonic() - ticket.started)
            elif ticket in self._waiting:
                self._waiting.remove(ticket)
            self._changed.notify_all()

    def _drop_stale(self) -> None:
        """Waiting tickets not checked in for ``stale_after_s``: their readers left."""
        now = time.monotonic()
        for ticket in [t for t in self._waiting if now - t.checked_in > self.stale_after_s]:
            self._waiting.remove(ticket)
            ticket.dropped = True
            self._changed.notify_all()


class Replaced(Exception):
    """A waiting question was replaced by a newer one from the same chat."""
