"""BibTeX files: entries with an ``abstract`` field; the entry key is the id."""

from __future__ import annotations

import re
from pathlib import Path

import bibtexparser

from assistant.corpus.base import NO_LIMITS, LoadResult, RecordLimits, read_text
from assistant.corpus.records import to_abstract
from assistant.types import Rejected

suffixes = (".bib", ".bibtex")
_ESCAPED = re.compile(r"\\([&%$#_{}])")


def _clean(value: str) -> str:
    """Drop BibTeX's protective braces and unescape the common escaped characters."""
    return _ESCAPED.sub(r"\1", value.replace("{", "").replace("}", "")) if "\\" in value or "{" in value else value


def load(path: Path, limits: RecordLimits = NO_LIMITS) -> LoadResult:
    """Yield one abstract per entry that has an abstract; report the others."""
    source = str(path)
    library = bibtexparser.parse_string(read_text(path))
    for block in library.failed_blocks:
        yield Rejected(source, block.start_line + 1, "malformed BibTeX entry")
    for entry in library.entries:
        fields = {name: _clean(str(f.value)) for name, f in entry.fields_dict.items()}
        line = entry.start_line + 1
        if "abstract" not in {name.lower() for name in fields}:
            yield Rejected(source, line, f"entry {entry.key} has no abstract field")
            continue
        yield to_abstract({"id": entry.key, **fields}, path, line, limits, bibtex=True)
