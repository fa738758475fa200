"""CSV and TSV files with a header row naming the fields."""

from __future__ import annotations

import csv
import io

from assistant.corpus.base import NO_LIMITS, LoadResult, RecordLimits, read_text
from assistant.corpus.records import to_abstract
from assistant.corpus.sources import Source
from assistant.types import Rejected

suffixes = (".csv", ".tsv")

csv.field_size_limit(10_000_000)


def load(file: Source, limits: RecordLimits = NO_LIMITS) -> LoadResult:
    """Yield one abstract per row; a row the csv module cannot parse is rejected alone."""
    source = file.location
    delimiter = "\t" if file.suffix == ".tsv" else ","
    reader = csv.DictReader(io.StringIO(read_text(file), newline=""), delimiter=delimiter)
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            yield Rejected(source, reader.line_num, f"malformed CSV row: {error}")
            continue
        if None in row:
            yield Rejected(source, reader.line_num, "more values than header columns")
            continue
        yield to_abstract(row, file, reader.line_num, limits)
