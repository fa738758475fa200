"""JSON Lines (one record per line) and JSON (a list of records, or an object holding one)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from assistant.corpus.base import NO_LIMITS, LoadResult, RecordLimits, read_text
from assistant.corpus.records import to_abstract
from assistant.types import Rejected

suffixes = (".jsonl", ".ndjson", ".json")


def _records_of(document: object) -> list | None:
    """The list of records in a JSON document, or None if there is none."""
    if isinstance(document, list):
        return document
    if isinstance(document, Mapping):
        lists = [v for v in document.values() if isinstance(v, list)]
        if len(lists) == 1:
            return lists[0]
        return [document]
    return None


def load(path: Path, limits: RecordLimits = NO_LIMITS) -> LoadResult:
    """Yield one abstract per record; a line that is not valid JSON is rejected alone."""
    source = str(path)
    text = read_text(path)
    if path.suffix == ".json":
        try:
            records = _records_of(json.loads(text))
        except json.JSONDecodeError as error:
            yield Rejected(source, error.lineno, f"invalid JSON: {error.msg}")
            return
        if records is None:
            yield Rejected(source, None, "no list of records found in the JSON document")
            return
        for number, record in enumerate(records, start=1):
            result = to_abstract(record, path, None, limits)
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
        yield to_abstract(record, path, line_number, limits)
