"""The C allocator's settings: freed memory goes back to the system (`allocator`), measured in
a fresh process so that nothing else has touched the allocator."""

from __future__ import annotations

import subprocess
import sys


# One model thread saving prompt states of varying sizes (one per answer, the last 64 MB kept)
# while small objects pile up: the pattern that grew a long-running server's memory.
_STATES_THEN_FREED = """
import ctypes, random, sys, threading
from assistant.allocator import give_back_freed_memory
if sys.argv[1] == "given back":
    assert give_back_freed_memory()
def rss_mb():
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmRSS")) // 1024
def answers(small):
    turn, states = random.Random(0), []
    for _ in range(60):
        size = turn.randint(4, 24) << 20
        states.append(ctypes.string_at((ctypes.c_uint8 * size)(), size))
        small.extend(bytes(turn.randint(100, 5000)) for _ in range(50))
        while sum(map(len, states)) > 64 << 20:
            states.pop(0)
small, start = [], rss_mb()
thread = threading.Thread(target=answers, args=(small,))
thread.start()
thread.join()
print(rss_mb() - start)
"""


def test_freed_prompt_states_go_back_to_the_system() -> None:
    """Once the states are freed, the memory they held is the system's again: a few MB stay
    (the small objects), not the ~140 MB glibc keeps in its heaps by default."""
    def kept_mb(mode: str) -> int:
        run = subprocess.run([sys.executable, "-c", _STATES_THEN_FREED, mode], capture_output=True, text=True,
                             timeout=120, check=True)
        return int(run.stdout.split()[-1])

    assert kept_mb("given back") < 32
    assert kept_mb("default") > 64, "the pattern no longer holds memory by default: the test shows nothing"
