"""RIS files (``.ris``), as Zotero, EndNote, Mendeley, Scopus and Web of Science export them.

Records are found here, from ``TY  -`` to ``ER  -``, so that each keeps its line number and a
broken one (no ``ER``, text between records) is rejected alone; ``rispy`` parses each record's
tags. Tag choices follow what exporters write: the abstract in ``AB`` (or ``N2``), authors in
``AU`` (or ``A1``), the journal in ``JO``/``JF``/``T2``/``J2``, the PubMed id in ``AN`` or a
``PMID:`` note.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import rispy

from assistant import identifiers
from assistant.corpus.base import NO_LIMITS, LoadResult, RecordLimits, read_text
from assistant.corpus.records import to_abstract
from assistant.corpus.sources import Source
from assistant.types import Rejected

suffixes = (".ris",)
_TAG = re.compile(r"^([A-Z][A-Z0-9])  -(?: |$)")
_COUNTER = re.compile(r"^\s*\d+\.\s*$")  # "1." before a record, as some exporters write


def _records(text: str) -> Iterator[tuple[int, str, str | None]]:
    """(first line, record text, None) per record, or (line, "", why) for what is not one."""
    start, lines, stray = 0, [], False
    for number, line in enumerate(text.splitlines(), start=1):
        tag = (match.group(1) if (match := _TAG.match(line)) else None)
        if tag == "TY":
            if start:
                yield start, "", "the record has no end tag 'ER  -' before the next 'TY  -'"
            start, lines, stray = number, [line], False
        elif start:
            lines.append(line)
            if tag == "ER":
                yield start, "\n".join(lines), None
                start = 0
        elif line.strip() and not stray and not _COUNTER.match(line):
            stray = True
            yield number, "", "text outside a record (a RIS record starts with 'TY  -' and ends with 'ER  -')"
    if start:
        yield start, "", "the record has no end tag 'ER  -' (a truncated export?)"


def _first(entry: dict[str, Any], *names: str) -> Any:
    for name in names:
        value = entry.get(name)
        if isinstance(value, list):
            value = next((v for v in value if v), None)
        if value:
            return value
    return None


def fields(entry: dict[str, Any]) -> dict[str, Any]:
    """A parsed RIS record mapped onto the generic field names of `records.to_abstract`."""
    notes = [n for n in entry.get("notes", []) if isinstance(n, str)]
    pmid = identifiers.pmid(entry.get("accession_number")) or next(
        (p for n in notes if (p := identifiers.pmid(n.strip()))), None
    )
    return {
        "id": entry.get("id"),
        "title": _first(entry, "title", "primary_title"),
        "abstract": _first(entry, "abstract", "notes_abstract"),
        "authors": entry.get("authors") or entry.get("first_authors"),
        "year": _first(entry, "year", "publication_year", "date"),
        "journal": _first(entry, "journal_name", "alternate_title3", "secondary_title", "alternate_title1"),
        "publication_type": rispy.TYPE_OF_REFERENCE_MAPPING.get(entry.get("type_of_reference", ""))
        or entry.get("type_of_reference"),
        "doi": entry.get("doi"),
        "pmid": pmid,
        "url": _first(entry, "urls"),
    }


def load(file: Source, limits: RecordLimits = NO_LIMITS) -> LoadResult:
    """Yield one abstract per RIS record; a record without an abstract, or a broken one, is
    rejected with its first line."""
    source = file.location
    for line, text, problem in _records(read_text(file)):
        if problem:
            yield Rejected(source, line, problem)
            continue
        record = fields(rispy.loads(text)[0])
        if not record["abstract"]:
            yield Rejected(source, line, f"the record {record['title'] or '(untitled)'!r} has no abstract (tag AB or N2)")
            continue
        yield to_abstract(record, file, line, limits)
