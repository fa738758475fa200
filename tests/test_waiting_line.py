"""The model's waiting line: first come first served, one waiting question per chat, readers
who left dropped, the wait estimated."""

from __future__ import annotations

import threading
import time

import pytest

from assistant.waiting_line import Place, Replaced, WaitingLine


def test_questions_are_answered_in_the_order_they_came() -> None:
    line = WaitingLine(slots=1, first_estimate_s=5.0)
    first, second, third = line.join("a"), line.join("b"), line.join("c")
    assert line.wait(first, 0.01) is None, "the first takes the free slot"
    assert line.wait(third, 0.01) == Place(2, 10.0), "one answering and one waiting ahead, 5 s each"
    assert line.wait(second, 0.01) == Place(1, 5.0)
    line.leave(first)
    assert line.wait(third, 0.01) is not None, "not its turn: the second came first"
    assert line.wait(second, 0.01) is None
    line.leave(second)
    assert line.wait(third, 0.01) is None


def test_the_line_is_busy_while_any_question_waits_or_is_answered() -> None:
    line = WaitingLine(slots=1)
    assert not line.busy()
    ticket = line.join("a")
    assert line.busy()
    assert line.wait(ticket, 0.01) is None and line.busy()
    line.leave(ticket)
    assert not line.busy()


def test_a_waiting_question_gets_its_turn_as_soon_as_the_slot_is_free() -> None:
    line = WaitingLine(slots=1)
    first, second = line.join("a"), line.join("b")
    assert line.wait(first, 0.01) is None
    threading.Timer(0.2, line.leave, args=(first,)).start()
    started = time.monotonic()
    assert line.wait(second, 5.0) is None
    assert time.monotonic() - started < 1.0


def test_several_slots_answer_several_at_once() -> None:
    line = WaitingLine(slots=2)
    tickets = [line.join(owner) for owner in "abc"]
    assert [line.wait(t, 0.01) is None for t in tickets] == [True, True, False]


def test_a_newer_question_from_the_same_chat_takes_the_waiting_ones_place() -> None:
    line = WaitingLine(slots=1)
    answering = line.join("other")
    assert line.wait(answering, 0.01) is None
    old = line.join("me")
    new = line.join("me")
    with pytest.raises(Replaced):
        line.wait(old, 0.01)
    assert line.wait(new, 0.01) == Place(1, line.place(new).seconds), "only the answering one is ahead"
    line.leave(old)  # what the replaced question's handler does: harmless
    line.leave(answering)
    assert line.wait(new, 0.01) is None


def test_a_reader_who_stopped_checking_in_loses_the_turn_to_the_next() -> None:
    line = WaitingLine(slots=1, stale_after_s=0.2)
    answering, gone, present = line.join("a"), line.join("gone"), line.join("present")
    assert line.wait(answering, 0.01) is None
    line.leave(answering)
    time.sleep(0.3)  # "gone" never asks again
    assert line.wait(present, 1.0) is None, "the slot went to the reader still there"
    assert line.wait(gone, 0.01) == Place(1, line.place(gone).seconds), "back: at the end of the line"


def test_the_estimate_follows_the_answers_timed() -> None:
    line = WaitingLine(slots=1, first_estimate_s=100.0)
    for owner in "abcd":
        ticket = line.join(owner)
        assert line.wait(ticket, 0.01) is None
        line.leave(ticket)  # answered at once
    waiting = line.join("e"), line.join("f")
    assert line.wait(waiting[0], 0.01) is None
    assert line.place(waiting[1]).seconds < 25, "four quick answers pull the first guess of 100 s down"
    assert Place(2, 9.6).line() == "2 questions ahead of yours in the queue, about 10 s"
    assert Place(1, 0.2).line() == "1 question ahead of yours in the queue, about 1 s"
