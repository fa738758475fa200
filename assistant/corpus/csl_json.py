"""CSL JSON items (Zotero, Better BibTeX, Pandoc, Mendeley), read by the JSON loader.

Told apart from other JSON records by CSL's own fields: a ``type`` from CSL's list of item
types, with a ``title``, ``issued``, ``container-title``, ``DOI``, ``citation-key`` or
structured ``author`` names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from assistant import identifiers

NO_ABSTRACT = "the item has no abstract (CSL field abstract)"
_SIGNS = ("issued", "container-title", "DOI", "citation-key", "PMID")
TYPES = {  # CSL 1.0.2's item types
    "article", "article-journal", "article-magazine", "article-newspaper", "bill", "book", "broadcast", "chapter",
    "classic", "collection", "dataset", "document", "entry", "entry-dictionary", "entry-encyclopedia", "event",
    "figure", "graphic", "hearing", "interview", "legal_case", "legislation", "manuscript", "map",
    "motion_picture", "musical_score", "pamphlet", "paper-conference", "patent", "performance", "periodical",
    "personal_communication", "post", "post-weblog", "regulation", "report", "review", "review-book", "software",
    "song", "speech", "standard", "thesis", "treaty", "webpage",
}


def recognises(record: Mapping[str, Any]) -> bool:
    """Whether a JSON record is a CSL JSON item."""
    authors = record.get("author")
    structured = isinstance(authors, list) and any(
        isinstance(a, Mapping) and ("family" in a or "literal" in a) for a in authors
    )
    return record.get("type") in TYPES and (structured or any(name in record for name in _SIGNS) or "title" in record)


def _name(author: Any) -> str | None:
    if not isinstance(author, Mapping):
        return str(author) if author else None
    family, given = author.get("family"), author.get("given")
    if family:
        return f"{family}, {given}" if given else str(family)
    return author.get("literal")


def _year(issued: Any) -> Any:
    if isinstance(issued, Mapping):
        parts = issued.get("date-parts")
        if isinstance(parts, list) and parts and isinstance(parts[0], list) and parts[0]:
            return parts[0][0]
        return issued.get("raw") or issued.get("literal")
    return issued


_KIND = {"article-journal": "Journal article", "paper-conference": "Conference paper", "article": "Article"}


def fields(item: Mapping[str, Any]) -> dict[str, Any]:
    """A CSL JSON item mapped onto the generic field names of `records.to_abstract`."""
    names = [_name(a) for a in item.get("author") or []] if isinstance(item.get("author"), list) else []
    arxiv = next((a for name in ("number", "archive_location", "URL", "DOI") if (a := identifiers.arxiv_id(item.get(name)))),
                 None)
    return {
        "id": item.get("id"),
        "title": item.get("title"),
        "abstract": item.get("abstract"),
        "authors": [n for n in names if n],
        "year": _year(item.get("issued")),
        "journal": item.get("container-title"),
        "publication_type": _KIND.get(str(item.get("type")), str(item.get("type", "")).replace("-", " ").capitalize()),
        "doi": item.get("DOI"),
        "pmid": item.get("PMID"),
        "arxiv_id": arxiv,
        "url": item.get("URL"),
    }
