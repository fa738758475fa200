"""BibTeX files: entries with an ``abstract`` field; the entry key is the id.

Each abstract keeps its entry's own text (``extra["bibtex"]``), so a reference to it is
exported as the user wrote it (`assistant.references`).
"""

from __future__ import annotations

from dataclasses import replace

import bibtexparser

from assistant.corpus.base import NO_LIMITS, LoadResult, RecordLimits, read_text
from assistant.corpus.records import to_abstract
from assistant.corpus.sources import Source
from assistant.references import BIBTEX_FIELD, unescape
from assistant.types import Abstract, Rejected

suffixes = (".bib", ".bibtex")


def load(file: Source, limits: RecordLimits = NO_LIMITS) -> LoadResult:
    """Yield one abstract per entry that has an abstract; report the others."""
    source = file.location
    library = bibtexparser.parse_string(read_text(file))
    for block in library.failed_blocks:
        yield Rejected(source, block.start_line + 1, "malformed BibTeX entry")
    for entry in library.entries:
        fields = {name: unescape(str(f.value)) for name, f in entry.fields_dict.items()}
        line = entry.start_line + 1
        if "abstract" not in {name.lower() for name in fields}:
            yield Rejected(source, line, f"entry {entry.key} has no abstract field")
            continue
        loaded = to_abstract({"id": entry.key, **fields}, file, line, limits, bibtex=True)
        if isinstance(loaded, Abstract) and entry.raw:
            loaded = replace(loaded, extra={**loaded.extra, BIBTEX_FIELD: entry.raw.strip()})
        yield loaded
