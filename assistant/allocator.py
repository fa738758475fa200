"""The C allocator's settings for a long-running process (glibc): what is freed goes back to
the system, so a server answering questions all day grows less.

By default glibc gives threads that allocate at the same time arenas of their own (up to 8
per core), whose freed holes stay with them; and after the first large buffer is freed it
raises the size from which a buffer gets pages of its own, so later large ones (the local
model's saved prompt states, tens of MB each, one per answer) come from those arenas too.
The app grew 2.6 MB per question under 20 users (`benchmarks/soak.py`); with these settings
its 30-minute soak grew 21% instead of 30%: something else still grows.
"""

from __future__ import annotations

import ctypes

ARENAS = 2  # the arenas that threads share
MAPPED_FROM_BYTES = 1 << 20  # buffers this large get pages of their own, unmapped when freed
_M_ARENA_MAX, _M_MMAP_THRESHOLD = -8, -3  # glibc's mallopt parameters


def give_back_freed_memory() -> bool:
    """Apply both settings, process-wide (arenas made before stay: call it before threads
    start); returns whether they apply (not on a C library other than glibc)."""
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return False
    return bool(libc.mallopt(_M_ARENA_MAX, ARENAS)) and bool(libc.mallopt(_M_MMAP_THRESHOLD, MAPPED_FROM_BYTES))
