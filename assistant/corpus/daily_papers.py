"""The "Daily Papers" text format: a header line, then one abstract per paragraph.

Paragraph 0 is the header when it is a single short line; abstracts are numbered from 1,
matching the ``para`` index of the evaluation files. Records carry no title or id, so
ids are content hashes and titles are derived from the text.
"""

from __future__ import annotations


from assistant.corpus.base import NO_LIMITS, LoadResult, RecordLimits, paragraphs, read_text
from assistant.corpus.records import to_abstract
from assistant.corpus.sources import Source
from assistant.types import Rejected

suffixes = (".txt", ".md")
HEADER_MAX_CHARS = 80


def load(file: Source, limits: RecordLimits = NO_LIMITS) -> LoadResult:
    """Yield the abstracts of a Daily Papers file (header paragraph skipped)."""
    source = file.location
    paras = paragraphs(read_text(file))
    if paras and "\n" not in paras[0][1] and len(paras[0][1]) <= HEADER_MAX_CHARS:
        paras = paras[1:]
    for index, (line, para) in enumerate(paras, start=1):
        result = to_abstract({"abstract": para, "para": index}, file, line, limits)
        if isinstance(result, Rejected):
            yield Rejected(source, line, f"paragraph {index}: {result.reason}")
        else:
            yield result
