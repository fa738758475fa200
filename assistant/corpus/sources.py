"""Where a file's bytes come from: a plain file, a gzip-compressed one, or a member of a zip.

Big sources come compressed: the PubMed baseline as ``.xml.gz`` files, the OpenAlex snapshot
as gzipped JSON Lines parts (``part_000.gz``). They are read as they decompress, never
extracted to disk or held whole. Compression is told by the file's first bytes (a gzipped
file named ``papers.jsonl`` is read too); the format inside, by the name without ``.gz``.
"""

from __future__ import annotations

import gzip
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

GZIP_MAGIC = b"\x1f\x8b"
ZIP_MAGIC = b"PK\x03\x04"
COMPRESSED_SUFFIXES = (".gz", ".gzip", ".zip")
DAMAGED = (EOFError, gzip.BadGzipFile, zlib.error, zipfile.BadZipFile)  # a cut-off or corrupt archive


@dataclass(frozen=True)
class Source:
    """One file to read: ``path`` on disk, or its zip ``member``; ``gzipped`` when its bytes
    are gzip-compressed (read decompressed)."""

    path: Path
    member: str | None = None
    gzipped: bool = False
    format_suffix: str | None = None  # the format found in its content, when its name has none

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

    @contextmanager
    def open(self) -> Iterator[BinaryIO]:
        """Its bytes, decompressed, as a stream."""
        with ExitStack() as stack:
            if self.member is None:
                raw: BinaryIO = stack.enter_context(self.path.open("rb"))
            else:
                archive = stack.enter_context(zipfile.ZipFile(self.path))
                raw = stack.enter_context(archive.open(self.member))
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
