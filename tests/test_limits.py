"""Per-user allowances: a sliding window per owner."""

from __future__ import annotations

from assistant.limits import Allowance


def test_each_owner_gets_most_uses_per_window_and_then_waits_for_the_oldest_to_expire() -> None:
    now = [0.0]
    allowance = Allowance(most=3, window_s=3600, clock=lambda: now[0])
    for moment in (0.0, 100.0, 200.0):
        now[0] = moment
        assert allowance.take("alice") is None
    now[0] = 600.0
    assert allowance.take("alice") == 3000.0, "the first use frees its place an hour after it was made"
    assert allowance.take("bob") is None, "others are not affected"
    now[0] = 3600.0
    assert allowance.take("alice") is None
    assert allowance.take("alice") == 100.0, "the two others are still within the hour"
