"""The soak benchmark's short version: two minutes of mixed traffic on a shared server, with
accounts: users asking and searching, one uploading, a password guesser (benchmarks/soak.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from soak import run  # noqa: E402


@pytest.mark.slow
def test_two_minutes_of_mixed_traffic_lose_nothing_and_fail_no_one() -> None:
    figures = run(minutes=2, users=4)
    assert figures["errors"] == []
    assert figures["questions"] >= 4 and figures["searches"] >= 4, figures
    assert figures["uploads"] >= 2, "every upload was indexed once (an error otherwise)"
    assert figures["guesses"] >= 5 and figures["guesses_let_in"] == 0
