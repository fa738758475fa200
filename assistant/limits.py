"""Per-user allowances on a server shared by many (the app): what one user may do how often.

An upload is indexed on the server's own cores, in its one index: one user's uploads, sent
again and again, would hold the ingest lock and the CPU that everyone's questions need. Each
user (an account; without accounts, a browser session) gets ``most`` uses per ``window_s``
seconds, counted in a sliding window in memory.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable


class Allowance:
    """At most ``most`` uses per ``window_s`` seconds for each owner."""

    def __init__(self, most: int, window_s: float = 3600.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.most, self.window_s, self.clock = most, window_s, clock
        self._uses: defaultdict[str, deque[float]] = defaultdict(deque)
        self._lock = threading.Lock()

    def take(self, owner: str) -> float | None:
        """Use one of ``owner``'s allowance: None when allowed (and counted), else the seconds
        until the next use is."""
        with self._lock:
            now, uses = self.clock(), self._uses[owner]
            while uses and now - uses[0] >= self.window_s:
                uses.popleft()
            if len(uses) >= self.most:
                return self.window_s - (now - uses[0])
            uses.append(now)
            return None
