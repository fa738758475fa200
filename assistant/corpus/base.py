"""What every corpus loader shares: its interface and tolerant file reading."""

from __future__ import annotations

import codecs
import io
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, BinaryIO, Protocol, TextIO

from assistant.corpus.sources import Source
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

    def load(self, source: Source, limits: RecordLimits = NO_LIMITS) -> LoadResult:
        """Yield every abstract in the file, and a `Rejected` for each bad record."""
        ...


class NotTextError(ValueError):
    """The file holds binary data (compressed, an office document, ...), not text."""


def _encoding(data: bytes, head: bool = False) -> str:
    """The encoding bytes most likely have.

    UTF-8 (with or without a BOM) and UTF-16 with a BOM (spreadsheet "Unicode text"
    exports) are read as such. Bytes with no valid UTF-8 multi-byte character are taken to be
    Windows-1252/Latin-1, the usual single-byte export, so "caf\xe9" reads as "café";
    otherwise stray bytes in UTF-8 become U+FFFD. For a file's ``head``, a character cut
    where the head ends does not count against UTF-8.
    """
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    try:
        data.decode("utf-8-sig")
        return "utf-8-sig"
    except UnicodeDecodeError as error:
        if head and error.start >= len(data) - 3:
            return "utf-8-sig"
    utf8 = data.decode("utf-8-sig", errors="replace")
    return "utf-8-sig" if any(ord(char) > 127 and char != "\ufffd" for char in utf8) else "cp1252"


def decode(data: bytes) -> str:
    """Bytes as text in the encoding they most likely have (`_encoding`)."""
    return data.decode(_encoding(data), errors="replace")


def _check_text(head: bytes) -> None:
    """`NotTextError` when the first bytes hold NULs (binary data) and no UTF-16 BOM: such a
    file is rejected whole rather than as one malformed record per line."""
    if not head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) and b"\x00" in head:
        raise NotTextError("binary data, not a text file (an office document or another format?)")


def read_text(source: Source) -> str:
    """A whole file as text (`decode`); `NotTextError` for binary data."""
    with source.open() as stream:
        data = stream.read()
    _check_text(data[:65536])
    return decode(data)


@contextmanager
def open_text(source: Source) -> Iterator[TextIO]:
    """A file as a text stream, read as it comes (a big JSON file is never held whole), in the
    encoding its first 64 KB suggest (`decode`); `NotTextError` for binary data."""
    with source.open() as stream:
        head = stream.read(65536)
    _check_text(head)
    with source.open() as stream:
        yield io.TextIOWrapper(stream, encoding=_encoding(head, head=True), errors="replace")


class _Utf8(io.RawIOBase):
    """A text stream's characters as UTF-8 bytes, for parsers that read bytes."""

    def __init__(self, text: TextIO) -> None:
        self.text, self.pending = text, b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while len(self.pending) < len(buffer) and (chunk := self.text.read(65536)):
            self.pending += chunk.encode()
        size = min(len(buffer), len(self.pending))
        buffer[:size], self.pending = self.pending[:size], self.pending[size:]
        return size


@contextmanager
def open_utf8(source: Source) -> Iterator[BinaryIO]:
    """A file as a stream of UTF-8 bytes without a BOM, whatever its encoding (`open_text`),
    for parsers that read bytes."""
    with open_text(source) as text:
        yield io.BufferedReader(_Utf8(text))


def read_head(source: Source, size: int = 8192) -> str:
    """The first ``size`` bytes of a file as text, enough to tell formats apart (a MEDLINE
    ``.txt`` opens with ``PMID-``)."""
    with source.open() as stream:
        data = stream.read(size)
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
