"""JSON Lines (one record per line) and JSON (a list of records, or an object holding one).

Each record is read as what it is: an OpenAlex work (`openalex`), a CSL JSON item
(`csl_json`), or a record with common field names (`records`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from assistant.corpus import csl_json, openalex
from assistant.corpus.base import NO_LIMITS, LoadResult, RecordLimits, read_text
from assistant.corpus.records import TEXT_FIELDS, to_abstract
from assistant.types import Abstract, Rejected

suffixes = (".jsonl", ".ndjson", ".json")
DIALECTS = (openalex, csl_json)


def _records_of(document: object) -> list | None:
    """The list of records in a JSON document, or None if there is none."""
    if isinstance(document, list):
        return document
    if isinstance(document, Mapping):
        if isinstance(document.get("results"), list):  # an API page: OpenAlex, Semantic Scholar
            return document["results"]
        if any(d.recognises(document) for d in DIALECTS) or any(name in document for name in TEXT_FIELDS):
            return [document]  # one record, whatever lists it holds (an OpenAlex work's authorships)
        lists = [v for v in document.values() if isinstance(v, list)]
        if len(lists) == 1:
            return lists[0]
        return [document]
    return None


def _convert(record: object, path: Path, line: int | None, limits: RecordLimits) -> Abstract | Rejected:
    """One record as an abstract, read in the dialect whose fields it carries."""
    if isinstance(record, Mapping):
        dialect = next((d for d in DIALECTS if d.recognises(record)), None)
        if dialect is not None:
            record = dialect.fields(record)
            if not record["abstract"]:
                return Rejected(str(path), line, dialect.NO_ABSTRACT)
    return to_abstract(record, path, line, limits)


def load(path: Path, limits: RecordLimits = NO_LIMITS) -> LoadResult:
    """Yield one abstract per record; a line that is not valid JSON is rejected alone."""
    source = str(path)
    text = read_text(path)
    if path.suffix.lower() == ".json":
        try:
            records = _records_of(json.loads(text))
        except json.JSONDecodeError as error:
            yield Rejected(source, error.lineno, f"invalid JSON: {error.msg}")
            return
        if records is None:
            yield Rejected(source, None, "no list of records found in the JSON document")
            return
        for number, record in enumerate(records, start=1):
            result = _convert(record, path, None, limits)
            yield Rejected(source, None, f"record {number}: {result.reason}") if isinstance(
                result, Rejected
            ) else result
        return
    for line_number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            yield Rejected(source, line_number, f"invalid JSON: {error.msg}")
            continue
        yield _convert(record, path, line_number, limits)
