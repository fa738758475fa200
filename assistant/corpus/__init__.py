"""Corpus loading: files and folders in any supported format → `Abstract` records.

Each format lives in its own module with a ``load`` function and the file suffixes it reads.
Where formats share a suffix (``.txt``: MEDLINE or Daily Papers; ``.json``/``.jsonl``: any
records, CSL JSON and OpenAlex, told apart per record by the JSON loader), the file's first
lines decide: every module but the last one listed for a suffix has a ``recognises(head)``.
Compressed files (``.gz``, ``.zip``; `sources`) are read as they decompress; when the name
inside says nothing of the format (OpenAlex's ``part_000.gz``), the first bytes do.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from types import ModuleType

from assistant.corpus import bibtex, daily_papers, jsonl, medline, pubmed_xml, ris, tabular
from assistant.corpus.base import NO_LIMITS, NotTextError, RecordLimits, read_head
from assistant.corpus.sources import COMPRESSED_SUFFIXES, DAMAGED, Source, sources_in
from assistant.types import Abstract, Rejected

FORMATS: tuple[ModuleType, ...] = (medline, daily_papers, jsonl, tabular, bibtex, ris, pubmed_xml)
SUFFIXES = tuple(sorted({suffix for module in FORMATS for suffix in module.suffixes}))


def _suffix_by_content(head: str) -> str | None:
    """The suffix a file's first characters imply, for a compressed file whose inner name has
    none: XML, a JSON document (``[``, or ``{`` alone on the first line: pretty-printed), JSON
    Lines (an object on the first line), MEDLINE, RIS or BibTeX."""
    text = head.lstrip()
    first_line = text.split("\n", 1)[0].strip()
    if text.startswith("<"):
        return ".xml"
    if text.startswith("[") or first_line == "{":
        return ".json"
    if text.startswith("{"):
        return ".jsonl"
    if text.startswith("PMID-"):
        return ".txt"
    if text.startswith("TY  -"):
        return ".ris"
    if text.startswith("@"):
        return ".bib"
    return None


def _typed(source: Source) -> Source:
    """The source, its format suffix found from its content when it is compressed and its
    inner name has no known suffix."""
    if source.suffix not in SUFFIXES and source.compressed:
        found = _suffix_by_content(read_head(source))
        return replace(source, format_suffix=found) if found else source
    return source


def format_of(source: Source | Path) -> ModuleType | None:
    """The format module that reads this file, by suffix and, for a shared suffix, content."""
    source = _typed(source if isinstance(source, Source) else Source(source))
    candidates = [module for module in FORMATS if source.suffix in module.suffixes]
    if len(candidates) > 1:
        head = read_head(source)
        return next((m for m in candidates[:-1] if m.recognises(head)), candidates[-1])
    return candidates[0] if candidates else None


def _readable(file: Path) -> bool:
    return file.suffix.lower() in SUFFIXES + COMPRESSED_SUFFIXES


def _files(path: Path) -> Iterator[Path]:
    if path.is_dir():
        yield from sorted(p for p in path.rglob("*") if p.is_file() and _readable(p))
    else:
        yield path


def sources(paths: Iterable[str | Path]) -> Iterator[Source | Rejected]:
    """Every file to read under the given files and folders (folders are walked, zip archives
    opened), in order; a `Rejected` for each one that is missing or not a supported type."""
    for given in paths:
        path = Path(given)
        if not path.exists():
            yield Rejected(str(path), None, "no such file or folder")
            continue
        for file in _files(path):
            if not _readable(file):
                yield Rejected(str(file), None, f"unsupported file type {file.suffix or '(none)'}; "
                               f"supported: {', '.join(SUFFIXES)}, and any of them compressed (.gz, .zip)")
                continue
            try:
                yield from sources_in(file, SUFFIXES)
            except OSError as error:
                yield Rejected(str(file), None, f"cannot read file: {error.strerror or error}")
            except zipfile.BadZipFile as error:
                yield Rejected(str(file), None, f"not a readable zip archive ({error})")


def read(source: Source, limits: RecordLimits = NO_LIMITS) -> Iterator[Abstract | Rejected]:
    """Every abstract in one file, and a `Rejected` for each bad record, or for the file when
    it cannot be read at all. A compressed file cut off midway keeps the records before the
    cut."""
    try:
        source = _typed(source)
        module = format_of(source)
        if module is None:
            what = f"the file {source.name} does not say its format" if source.compressed and not source.suffix \
                else f"unsupported file type {source.suffix or '(none)'}"
            yield Rejected(source.location, None, f"{what}; supported: {', '.join(SUFFIXES)}")
            return
        yield from module.load(source, limits)
    except DAMAGED as error:  # before OSError, which gzip's BadGzipFile is
        yield Rejected(source.location, None, f"the compressed file is cut off or damaged ({error}); "
                       "the records before the damage were read")
    except OSError as error:
        yield Rejected(source.location, None, f"cannot read file: {error.strerror or error}")
    except NotTextError as error:
        yield Rejected(source.location, None, str(error))


def load(paths: Iterable[str | Path], limits: RecordLimits = NO_LIMITS) -> Iterator[Abstract | Rejected]:
    """Yield every abstract found in the given files and folders.

    Problems never stop the load: a missing file, an unsupported format or a bad record
    (one longer than ``limits`` allow, among others) is yielded as a `Rejected` saying
    where and why, and loading goes on.
    """
    for item in sources(paths):
        yield from [item] if isinstance(item, Rejected) else read(item, limits)


__all__ = ["COMPRESSED_SUFFIXES", "FORMATS", "SUFFIXES", "RecordLimits", "Source", "format_of", "load", "read", "sources"]
