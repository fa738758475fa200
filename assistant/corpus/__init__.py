"""Corpus loading: files and folders in any supported format → `Abstract` records.

Each format lives in its own module with a ``load`` function and the file suffixes it reads.
Where formats share a suffix (``.txt``: MEDLINE or Daily Papers; ``.json``/``.jsonl``: any
records, CSL JSON and OpenAlex, told apart per record by the JSON loader), the file's first
lines decide: every module but the last one listed for a suffix has a ``recognises(head)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from types import ModuleType

from assistant.corpus import bibtex, daily_papers, jsonl, medline, pubmed_xml, ris, tabular
from assistant.corpus.base import NO_LIMITS, NotTextError, RecordLimits, read_head
from assistant.types import Abstract, Rejected

FORMATS: tuple[ModuleType, ...] = (medline, daily_papers, jsonl, tabular, bibtex, ris, pubmed_xml)
SUFFIXES = tuple(sorted({suffix for module in FORMATS for suffix in module.suffixes}))


def format_of(file: Path) -> ModuleType | None:
    """The format module that reads this file, by suffix and, for a shared suffix, content."""
    candidates = [module for module in FORMATS if file.suffix.lower() in module.suffixes]
    if len(candidates) > 1:
        head = read_head(file)
        return next((m for m in candidates[:-1] if m.recognises(head)), candidates[-1])
    return candidates[0] if candidates else None


def _files(path: Path) -> Iterator[Path]:
    if path.is_dir():
        yield from sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in SUFFIXES)
    else:
        yield path


def load(paths: Iterable[str | Path], limits: RecordLimits = NO_LIMITS) -> Iterator[Abstract | Rejected]:
    """Yield every abstract found in the given files and folders (folders are walked).

    Problems never stop the load: a missing file, an unsupported format or a bad record
    (one longer than ``limits`` allow, among others) is yielded as a `Rejected` saying
    where and why, and loading goes on.
    """
    for given in paths:
        path = Path(given)
        if not path.exists():
            yield Rejected(str(path), None, "no such file or folder")
            continue
        for file in _files(path):
            try:
                module = format_of(file)
                if module is None:
                    yield Rejected(str(file), None, f"unsupported file type {file.suffix or '(none)'}; "
                                   f"supported: {', '.join(SUFFIXES)}")
                    continue
                yield from module.load(file, limits)
            except OSError as error:
                yield Rejected(str(file), None, f"cannot read file: {error.strerror or error}")
            except NotTextError as error:
                yield Rejected(str(file), None, str(error))


__all__ = ["FORMATS", "SUFFIXES", "RecordLimits", "format_of", "load"]
