"""What every corpus loader shares: its interface and tolerant file reading."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

from assistant.types import Abstract, Rejected

LoadResult = Iterator[Abstract | Rejected]


class Loader(Protocol):
    """Reads one file format. A new format is one new module with one `load` function."""

    suffixes: tuple[str, ...]

    def load(self, path: Path) -> LoadResult:
        """Yield every abstract in the file, and a `Rejected` for each bad record."""
        ...


def read_text(path: Path) -> str:
    """Read a file as UTF-8; undecodable bytes become U+FFFD instead of an exception."""
    return path.read_bytes().decode("utf-8-sig", errors="replace")
