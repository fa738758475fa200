"""JSON Lines (one record per line) and JSON (a list of records, or an object holding one).

Each record is read as what it is: an OpenAlex work (`openalex`), a CSL JSON item
(`csl_json`), or a record with common field names (`records`). Both are read as a stream,
a record at a time (a JSON document with `ijson`), so a gigabyte of OpenAlex works is never
held whole.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, BinaryIO

import ijson

from assistant.corpus import csl_json, openalex
from assistant.corpus.base import NO_LIMITS, LoadResult, RecordLimits, open_text, open_utf8
from assistant.corpus.records import TEXT_FIELDS, to_abstract
from assistant.corpus.sources import Source
from assistant.types import Abstract, Rejected

suffixes = (".jsonl", ".ndjson", ".json")
DIALECTS = (openalex, csl_json)


def _records_at(document: object) -> str | None:
    """Where a JSON document keeps its records, as an `ijson` prefix: ``item`` (a list),
    ``results.item`` (an API page: OpenAlex, Semantic Scholar), ``""`` (the document is one
    record), ``KEY.item`` (its only list); None if there are none. ``document`` may be an
    outline (`_outline`) holding only its top-level keys."""
    if isinstance(document, list):
        return "item"
    if isinstance(document, Mapping):
        if isinstance(document.get("results"), list):
            return "results.item"
        if any(d.recognises(document) for d in DIALECTS) or any(name in document for name in TEXT_FIELDS):
            return ""  # one record, whatever lists it holds (an OpenAlex work's authorships)
        lists = [key for key, value in document.items() if isinstance(value, list)]
        return f"{lists[0]}.item" if len(lists) == 1 else ""
    return None


def _outline(stream: BinaryIO) -> object:
    """A JSON document's top level without reading its lists and objects into memory: a list
    stands for ``[]``, an object for its keys, each with its scalar value or an empty list or
    object."""
    outline: dict[str, Any] = {}
    key = None
    for prefix, event, value in ijson.parse(stream):
        if prefix == "" and event == "start_array":
            return []
        if prefix == "" and event == "map_key":
            key = value
        elif prefix == key and event in ("start_array", "start_map"):
            outline[key] = [] if event == "start_array" else {}
            if key == "results" and event == "start_array":
                return outline
        elif prefix == key and event not in ("end_array", "end_map"):
            outline[key] = value
        elif prefix == "" and event not in ("start_map", "end_map"):
            return value  # a bare string or number
    return outline


def _convert(record: object, source: Source, line: int | None, limits: RecordLimits) -> Abstract | Rejected:
    """One record as an abstract, read in the dialect whose fields it carries."""
    if isinstance(record, Mapping):
        dialect = next((d for d in DIALECTS if d.recognises(record)), None)
        if dialect is not None:
            record = dialect.fields(record)
            if not record["abstract"]:
                return Rejected(source.location, line, dialect.NO_ABSTRACT)
    return to_abstract(record, source, line, limits)


def _document(source: Source, limits: RecordLimits) -> LoadResult:
    """The records of a JSON document, streamed; malformed JSON stops it where it broke,
    keeping the records before. A file of one JSON value per line is read as JSON Lines."""
    where = source.location
    try:
        with open_utf8(source) as stream:
            prefix = _records_at(_outline(stream))
    except ijson.JSONError as error:
        detail = str(error).splitlines()[0]
        if "trailing garbage" in detail:  # one value after another: JSON Lines named .json
            yield from _lines(source, limits)
        else:
            yield Rejected(where, None, f"invalid JSON: {detail}")
        return
    if prefix is None:
        yield Rejected(where, None, "no list of records found in the JSON document")
        return
    number = 0
    try:
        with open_utf8(source) as stream:
            for number, record in enumerate(ijson.items(stream, prefix, use_float=True), start=1):
                result = _convert(record, source, None, limits)
                yield Rejected(where, None, f"record {number}: {result.reason}") if isinstance(
                    result, Rejected
                ) else result
    except ijson.JSONError as error:
        detail = str(error).splitlines()[0]
        yield Rejected(where, None, f"invalid JSON after record {number}: {detail}; the records before it were read")


def _lines(source: Source, limits: RecordLimits) -> LoadResult:
    """One record per line; a line that is not valid JSON is rejected alone. A line holding a
    page of records (a minified API response) yields each of them."""
    with open_text(source) as stream:
        for line_number, line in enumerate(stream, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                yield Rejected(source.location, line_number, f"invalid JSON: {error.msg}")
                continue
            for item in _page(record):
                yield _convert(item, source, line_number, limits)


def _page(record: object) -> list:
    """The records one parsed JSON value holds: itself, or an API page's results."""
    return record["results"] if _records_at(record) == "results.item" else [record]  # type: ignore[index]


def load(file: Source, limits: RecordLimits = NO_LIMITS) -> LoadResult:
    """Yield one abstract per record (a `Rejected` for each bad one)."""
    if file.suffix == ".json":
        yield from _document(file, limits)
    else:
        yield from _lines(file, limits)
