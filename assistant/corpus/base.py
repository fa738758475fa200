"""What every corpus loader shares: its interface and tolerant file reading."""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from assistant.types import Abstract, Rejected

LoadResult = Iterator[Abstract | Rejected]
_BLANK_LINES = re.compile(r"\n[ \t]*\n")


@dataclass(frozen=True)
class RecordLimits:
    """How long a record's text may be, in tokens (None: any length), and whether a longer
    one is cut to that length (``truncate``) instead of rejected."""

    max_tokens: int | None = None
    truncate: bool = False


NO_LIMITS = RecordLimits()


class Loader(Protocol):
    """Reads one file format. A new format is one new module with one `load` function, listed
    in `assistant.corpus.FORMATS`; one that shares a suffix with another also has
    ``recognises(head: str) -> bool``, which tells its files by their first lines."""

    suffixes: tuple[str, ...]

    def load(self, path: Path, limits: RecordLimits = NO_LIMITS) -> LoadResult:
        """Yield every abstract in the file, and a `Rejected` for each bad record."""
        ...


class NotTextError(ValueError):
    """The file holds binary data (compressed, an office document, ...), not text."""


def read_text(path: Path) -> str:
    """Read a text file in the encoding it most likely has.

    UTF-8 (with or without a BOM) and UTF-16 with a BOM (spreadsheet "Unicode text"
    exports) are decoded as such. A file with no valid UTF-8 multi-byte character is taken
    to be Windows-1252/Latin-1, the usual single-byte export, so "caf\xe9" reads as "café";
    otherwise stray bytes in UTF-8 become U+FFFD. NUL bytes mean binary data: rejected
    whole (`NotTextError`) rather than as one malformed record per line.
    """
    data = path.read_bytes()
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return data.decode("utf-16", errors="replace")
    if b"\x00" in data[:65536]:
        raise NotTextError("binary data, not a text file (compressed or another format?)")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        utf8 = data.decode("utf-8-sig", errors="replace")
    if any(ord(char) > 127 and char != "\ufffd" for char in utf8):
        return utf8
    return data.decode("cp1252", errors="replace")


def read_head(path: Path, size: int = 8192) -> str:
    """The first ``size`` bytes of a file as text, enough to tell formats that share a suffix
    apart (a MEDLINE ``.txt`` opens with ``PMID-``)."""
    with path.open("rb") as file:
        data = file.read(size)
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return data.decode("utf-16", errors="replace")
    return data.decode("utf-8-sig", errors="replace")


def paragraphs(text: str) -> list[tuple[int, str]]:
    """Split text into (starting line number, paragraph) pairs, blank lines between."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    result, line, position = [], 1, 0
    for match in [*_BLANK_LINES.finditer(text), None]:
        end = match.start() if match else len(text)
        chunk = text[position:end]
        stripped = chunk.strip("\n")
        if stripped.strip():
            leading = len(chunk) - len(chunk.lstrip("\n"))
            result.append((line + text.count("\n", position, position + leading), stripped))
        if match:
            line += text.count("\n", position, match.end())
            position = match.end()
    return result
