"""Map a record with common field names (JSON, CSV, BibTeX) onto an `Abstract`.

Recognised without options: generic records (title, abstract|text|summary, id, authors,
year|date, url, doi, pmid, arxiv_id, journal|venue, publication_type), the arXiv metadata snapshot (id, authors,
versions, update_date, categories) and BEIR ``corpus.jsonl`` (``_id``, ``title``, ``text``,
``metadata``). The format modules that read other field names (RIS, MEDLINE, CSL JSON, ...)
map their records onto these names first.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from assistant import identifiers
from assistant.corpus.base import NO_LIMITS, RecordLimits
from assistant.corpus.display import content_id, derive_title, find_link, normalize_text
from assistant.corpus.sources import Source
from assistant.tokens import over_limit, trim_to_tokens
from assistant.types import Abstract, Rejected

TEXT_FIELDS = ("abstract", "text", "summary")
ID_FIELDS = ("_id", "id", "paper_id", "arxiv_id", "doc_id", "key")
DATE_FIELDS = ("year", "date", "published", "publication_date", "update_date", "created")
URL_FIELDS = ("url", "link", "pdf_url", "html_url")
AUTHOR_FIELDS = ("authors", "author")
ARXIV_FIELDS = ("arxiv_id", "arxiv", "eprint")
VENUE_FIELDS = ("journal", "venue")
KIND_FIELDS = ("publication_type", "publication_types", "pub_type")
MIN_ABSTRACT_CHARS = 40

_YEAR = re.compile(r"\b(1[89]\d\d|20\d\d)\b")
_KNOWN = set(
    TEXT_FIELDS + ID_FIELDS + DATE_FIELDS + URL_FIELDS + AUTHOR_FIELDS + ARXIV_FIELDS + VENUE_FIELDS + KIND_FIELDS
) | {
    "title",
    "doi",
    "pmid",
    "versions",
    "authors_parsed",
    "metadata",
}


def _first(record: Mapping[str, Any], names: tuple[str, ...]) -> Any:
    for name in names:
        value = record.get(name)
        if value not in (None, "", [], {}):
            return value
    return None


def _authors(value: Any, bibtex: bool) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        parts = re.split(r"\s+and\s+" if bibtex else r",\s*|\s+and\s+", value)
    else:
        parts = [a.get("name", "") if isinstance(a, Mapping) else str(a) for a in value]
    return tuple(normalize_text(p) for p in parts if p and p.strip())


def _year(record: Mapping[str, Any]) -> int | None:
    versions = record.get("versions")
    if isinstance(versions, list) and versions and isinstance(versions[0], Mapping):
        candidates: list[Any] = [versions[0].get("created")]
    else:
        candidates = []
    candidates += [record.get(name) for name in DATE_FIELDS]
    for value in candidates:
        if isinstance(value, int) and 1800 <= value <= 2100:
            return value
        match = _YEAR.search(str(value)) if value is not None else None
        if match:
            return int(match.group(1))
    return None


def _url(record: Mapping[str, Any], ids: tuple[str | None, str | None, str | None], text: str) -> str | None:
    url = _first(record, URL_FIELDS)
    if url:
        return str(url)
    doi, pmid, arxiv = ids
    if doi:
        return f"https://doi.org/{doi}"
    if arxiv:
        return f"https://arxiv.org/abs/{arxiv}"
    if pmid:
        return f"https://pubmed.ncbi.nlm.nih.gov/{pmid}/"
    return find_link(text)


def _identifiers(record: Mapping[str, Any], record_id: str | None) -> tuple[str | None, str | None, str | None]:
    """(DOI, PMID, arXiv id), each normalised, from their own fields or else from the link
    (a doi.org or arxiv.org URL) or, for the arXiv id, the record's id (the arXiv snapshot)."""
    url = _first(record, URL_FIELDS)
    link = str(url) if url else None
    doi = identifiers.doi(record.get("doi")) or (identifiers.doi(link) if link and "doi.org/" in link else None)
    arxiv = (
        identifiers.arxiv_id(_first(record, ARXIV_FIELDS))
        or (identifiers.arxiv_id(record_id) if record_id and identifiers.ARXIV_ID.match(record_id) else None)
        or identifiers.arxiv_id(link)
        or identifiers.arxiv_id(doi)
    )
    return doi, identifiers.pmid(record.get("pmid")), arxiv


def _extra(record: Mapping[str, Any]) -> dict[str, Any]:
    extra = {k: v for k, v in record.items() if k.lower() not in _KNOWN and v not in (None, "")}
    metadata = record.get("metadata")
    if isinstance(metadata, Mapping):
        extra.update(metadata)
    return {k: v for k, v in extra.items() if isinstance(v, str | int | float | bool)}


def to_abstract(
    record: Any, file: Source, line: int | None, limits: RecordLimits = NO_LIMITS, bibtex: bool = False
) -> Abstract | Rejected:
    """Turn one loaded record into an `Abstract`, or a `Rejected` saying what is missing
    or wrong: no text, or a text longer than ``limits`` allow (a full-text dump or a corrupt
    export would take minutes to embed; it is judged in milliseconds).

    The abstract's ``source`` is the file name (what users filter and count by); a
    rejection names the full path, so the record can be found and fixed.
    """
    source = file.location
    if not isinstance(record, Mapping):
        return Rejected(source, line, f"expected an object, got {type(record).__name__}")
    lowered = {str(k).lower(): v for k, v in record.items()}
    raw = _first(lowered, TEXT_FIELDS)
    text = normalize_text(raw) if isinstance(raw, str) else ""
    if len(text) < MIN_ABSTRACT_CHARS:
        return Rejected(
            source,
            line,
            "no abstract text (expected a field abstract, text or summary "
            f"of at least {MIN_ABSTRACT_CHARS} characters)",
        )
    if limits.max_tokens is not None and over_limit(text, limits.max_tokens):
        if not limits.truncate:
            return Rejected(
                source,
                line,
                f"the text is longer than {limits.max_tokens:,} tokens ({len(text):,} characters), where an abstract "
                "has a few hundred: a full text or a broken export? Raise ASSISTANT_MAX_RECORD_TOKENS to keep it, "
                "or set ASSISTANT_TRUNCATE_LONG_RECORDS=true to index its beginning",
            )
        text = trim_to_tokens(text, limits.max_tokens)
    own_id = _first(lowered, ID_FIELDS)
    record_id = str(own_id).strip() if own_id is not None else None
    title = normalize_text(str(lowered.get("title") or ""))
    doi, pmid, arxiv = ids = _identifiers(lowered, record_id)
    extra = _extra(lowered)
    venue = _first(lowered, VENUE_FIELDS)
    if isinstance(venue, str) and venue.strip():
        extra["journal"] = normalize_text(venue)
    kind = _first(lowered, KIND_FIELDS)
    if isinstance(kind, list):
        kind = "; ".join(str(k) for k in kind if k)
    if isinstance(kind, str) and kind.strip():
        extra["publication_type"] = normalize_text(kind)
    return Abstract(
        id=record_id or content_id(text),
        text=text,
        title=title or derive_title(text),
        titled=bool(title),
        source=file.name,
        url=_url(lowered, ids, text),
        authors=_authors(_first(lowered, AUTHOR_FIELDS), bibtex),
        year=_year(lowered),
        doi=doi,
        pmid=pmid,
        arxiv_id=arxiv,
        extra=extra,
    )
