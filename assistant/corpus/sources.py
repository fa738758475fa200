"""Where a file's bytes come from: a plain file, a gzip-compressed one, or a member of a zip.

Big sources come compressed: the PubMed baseline as ``.xml.gz`` files, the OpenAlex snapshot
as gzipped JSON Lines parts (``part_000.gz``). They are read as they decompress, never
extracted to disk or held whole. Compression is told by the file's first bytes (a gzipped
file named ``papers.jsonl`` is read too); the format inside, by the name without ``.gz``.
"""

from __future__ import annotations

import gzip
import io
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

GZIP_MAGIC = b"\x1f\x8b"
ZIP_MAGIC = b"PK\x03\x04"
COMPRESSED_SUFFIXES = (".gz", ".gzip", ".zip")
DAMAGED = (EOFError, gzip.BadGzipFile, zlib.error, zipfile.BadZipFile)  # a cut-off or corrupt archive


class Meter:
    """How far into its file (in bytes as stored: compressed, for a gzip file) a source has
    been read, for progress and an ETA. Shared by every copy of a `Source`."""

    def __init__(self) -> None:
        self.position = 0


class _Metered(io.RawIOBase):
    """A file whose read position is kept in a `Meter` (the furthest one reached: a file read
    twice, its head first, is not counted twice)."""

    def __init__(self, raw: BinaryIO, meter: Meter) -> None:
        self.raw, self.meter = raw, meter

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        size = self.raw.readinto(buffer)
        self.meter.position = max(self.meter.position, self.raw.tell())
        return size


@dataclass(frozen=True)
class Source:
    """One file to read: ``path`` on disk, or its zip ``member``; ``gzipped`` when its bytes
    are gzip-compressed (read decompressed)."""

    path: Path
    member: str | None = None
    gzipped: bool = False
    format_suffix: str | None = None  # the format found in its content, when its name has none
    meter: Meter = field(default_factory=Meter, compare=False, repr=False)

    @property
    def location(self) -> str:
        """Where it is, for messages: the path, or ``archive.zip/member``."""
        return f"{self.path}/{self.member}" if self.member else str(self.path)

    @property
    def name(self) -> str:
        """Its file name, as users filter and count abstracts by (``pubmed25n0001.xml.gz``)."""
        return Path(self.member).name if self.member else self.path.name

    @property
    def suffix(self) -> str:
        """The suffix of the format inside: ``.xml`` for ``pubmed25n0001.xml.gz``, ``""`` for
        ``part_000.gz``, unless its content told (``format_suffix``)."""
        if self.format_suffix:
            return self.format_suffix
        name = Path(self.name)
        if self.gzipped and name.suffix.lower() in (".gz", ".gzip"):
            name = Path(name.stem)
        return name.suffix.lower()

    @property
    def compressed(self) -> bool:
        return self.gzipped or self.member is not None

    @property
    def size(self) -> int:
        """Its size in bytes as stored (a zip member's, uncompressed by zip); 0 if it is gone."""
        try:
            if self.member is None:
                return self.path.stat().st_size
            with zipfile.ZipFile(self.path) as archive:
                return archive.getinfo(self.member).file_size
        except (OSError, KeyError, zipfile.BadZipFile):
            return 0

    @property
    def fingerprint(self) -> str:
        """Where it is, its size and when it last changed: equal while its content is."""
        try:
            stat = self.path.stat()
        except OSError:
            return f"{self.location}|gone"
        return f"{self.location}|{stat.st_size}|{stat.st_mtime_ns}"

    @contextmanager
    def open(self) -> Iterator[BinaryIO]:
        """Its bytes, decompressed, as a stream (the read position kept in ``meter``)."""
        with ExitStack() as stack:
            if self.member is None:
                raw: BinaryIO = stack.enter_context(self.path.open("rb", buffering=0))
                raw = io.BufferedReader(_Metered(raw, self.meter))
            else:
                archive = stack.enter_context(zipfile.ZipFile(self.path))
                raw = io.BufferedReader(_Metered(stack.enter_context(archive.open(self.member)), self.meter))
            yield stack.enter_context(gzip.GzipFile(fileobj=raw, mode="rb")) if self.gzipped else raw


def _starts_with(stream: BinaryIO, magic: bytes) -> bool:
    return stream.read(len(magic)) == magic


def sources_in(path: Path, wanted: tuple[str, ...]) -> Iterator[Source]:
    """The sources one file holds: itself, or, for a zip archive, each member whose name ends in
    one of the ``wanted`` suffixes or is compressed. `OSError` or `zipfile.BadZipFile` when it
    cannot be read."""
    with path.open("rb") as file:
        head = file.read(4)
    if head.startswith(ZIP_MAGIC):
        with zipfile.ZipFile(path) as archive:
            members = [m.filename for m in archive.infolist() if not m.is_dir()]
            for member in sorted(members):
                if not member.lower().endswith(wanted + COMPRESSED_SUFFIXES):
                    continue
                with archive.open(member) as stream:
                    yield Source(path, member, gzipped=_starts_with(stream, GZIP_MAGIC))
        return
    yield Source(path, gzipped=head.startswith(GZIP_MAGIC))
