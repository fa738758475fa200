"""PubMed/MEDLINE text (``.nbib``, ``.medline``, and ``.txt`` files opening with ``PMID-``),
what PubMed's "Send to: Citation manager" and "Save: PubMed format" write.

Records are separated by blank lines; each is parsed with Biopython's ``Bio.Medline``. A
record with a line that is neither a tag (``TI  - …``) nor a continuation (six spaces) is
rejected whole with that line's number: a corrupt record is not half-read.
"""

from __future__ import annotations

import io
import re
from typing import Any

from Bio import Medline

from assistant import identifiers
from assistant.corpus.base import NO_LIMITS, LoadResult, RecordLimits, paragraphs, read_text
from assistant.corpus.records import to_abstract
from assistant.corpus.sources import Source
from assistant.types import Rejected

suffixes = (".nbib", ".medline", ".txt")
_LINE = re.compile(r"^(?:[A-Z][A-Z0-9]{1,3} {0,3}- | {6}\S)")
_FIRST_TAG = re.compile(r"^\s*PMID- ")


def recognises(head: str) -> bool:
    """Whether a ``.txt`` file is MEDLINE: its first line is a ``PMID-`` tag."""
    return bool(_FIRST_TAG.match(head))


def _tagged(values: Any, tag: str) -> str | None:
    """The value of an ``AID``/``LID`` line of this type: "10.1/x [doi]" → "10.1/x"."""
    for value in values if isinstance(values, list) else [values]:
        if isinstance(value, str) and value.rstrip().endswith(f"[{tag}]"):
            return value.rstrip().removesuffix(f"[{tag}]").strip()
    return None


def fields(record: dict[str, Any]) -> dict[str, Any]:
    """A parsed MEDLINE record mapped onto the generic field names of `records.to_abstract`."""
    pmid = identifiers.pmid(record.get("PMID"))
    doi = _tagged(record.get("AID", []), "doi") or _tagged(record.get("LID"), "doi")
    return {
        "id": f"pmid:{pmid}" if pmid else None,
        "title": record.get("TI") or record.get("BTI"),
        "abstract": record.get("AB"),
        "authors": record.get("FAU") or record.get("AU"),
        "year": record.get("DP"),
        "journal": record.get("JT") or record.get("TA"),
        "publication_type": record.get("PT"),  # one or a list: `records` joins them
        "doi": doi,
        "pmid": pmid,
    }


def load(file: Source, limits: RecordLimits = NO_LIMITS) -> LoadResult:
    """Yield one abstract per MEDLINE record; a broken record, or one without an abstract
    (``AB``), is rejected with its first line."""
    source = file.location
    for line, text in paragraphs(read_text(file)):
        broken = next((n for n, row in enumerate(text.split("\n")) if not _LINE.match(row)), None)
        if broken is not None:
            yield Rejected(source, line + broken, "not a MEDLINE line (expected a tag such as 'TI  - ' or a "
                           "continuation indented by six spaces); the record is skipped")
            continue
        record = fields(Medline.read(io.StringIO(text)))
        if not record["abstract"]:
            yield Rejected(source, line, f"the record {record['title'] or '(untitled)'!r} has no abstract (tag AB)")
            continue
        yield to_abstract(record, file, line, limits)
