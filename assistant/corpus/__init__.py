"""Corpus loading: files and folders in any supported format → `Abstract` records.

Formats are chosen by file suffix; each lives in its own module with a ``load`` function.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from assistant.corpus import bibtex, daily_papers, jsonl, tabular
from assistant.corpus.base import NO_LIMITS, NotTextError, RecordLimits
from assistant.types import Abstract, Rejected

LOADERS = {suffix: module.load for module in (daily_papers, jsonl, tabular, bibtex) for suffix in module.suffixes}


def _files(path: Path) -> Iterator[Path]:
    if path.is_dir():
        yield from sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in LOADERS)
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
            loader = LOADERS.get(file.suffix.lower())
            if loader is None:
                yield Rejected(str(file), None, f"unsupported file type {file.suffix or '(none)'}; "
                               f"supported: {', '.join(sorted(LOADERS))}")
                continue
            try:
                yield from loader(file, limits)
            except OSError as error:
                yield Rejected(str(file), None, f"cannot read file: {error.strerror or error}")
            except NotTextError as error:
                yield Rejected(str(file), None, str(error))


__all__ = ["LOADERS", "RecordLimits", "load"]
