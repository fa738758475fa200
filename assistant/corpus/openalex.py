"""OpenAlex works (``/works`` API results and snapshot lines), read by the JSON loader.

OpenAlex does not ship an abstract's text: it ships ``abstract_inverted_index``, each word
with the positions where it occurs, which is rebuilt here. Identifiers come as URLs
(``https://doi.org/…``, ``https://pubmed.ncbi.nlm.nih.gov/…``) and are normalised.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from assistant import identifiers

NO_ABSTRACT = "OpenAlex has no abstract for this work (abstract_inverted_index is empty)"


def recognises(record: Mapping[str, Any]) -> bool:
    """Whether a JSON record is an OpenAlex work."""
    return "abstract_inverted_index" in record or str(record.get("id", "")).startswith("https://openalex.org/W")


def abstract_text(inverted: Any) -> str:
    """The abstract rebuilt from its inverted index ({word: [positions]})."""
    if not isinstance(inverted, Mapping):
        return ""
    placed = sorted((p, word) for word, positions in inverted.items() if isinstance(positions, list)
                    for p in positions if isinstance(p, int))
    return " ".join(word for _, word in placed)


def _arxiv(work: Mapping[str, Any]) -> str | None:
    locations = [work.get("primary_location") or {}, *(work.get("locations") or [])]
    links = [loc.get(name) for loc in locations if isinstance(loc, Mapping) for name in ("landing_page_url", "pdf_url")]
    return next((a for link in links if (a := identifiers.arxiv_id(link))), None)


def fields(work: Mapping[str, Any]) -> dict[str, Any]:
    """An OpenAlex work mapped onto the generic field names of `records.to_abstract`."""
    ids = work.get("ids") if isinstance(work.get("ids"), Mapping) else {}
    primary = work.get("primary_location") if isinstance(work.get("primary_location"), Mapping) else {}
    source = primary.get("source") if isinstance(primary.get("source"), Mapping) else {}
    authors = [a.get("author", {}).get("display_name") for a in work.get("authorships") or [] if isinstance(a, Mapping)]
    doi = identifiers.doi(work.get("doi") or ids.get("doi"))
    return {
        "id": str(work.get("id", "")).removeprefix("https://openalex.org/") or None,
        "title": work.get("title") or work.get("display_name"),
        "abstract": abstract_text(work.get("abstract_inverted_index")),
        "authors": [a for a in authors if a],
        "year": work.get("publication_year") or work.get("publication_date"),
        "journal": source.get("display_name"),
        "publication_type": str(work.get("type") or "").replace("-", " ").capitalize() or None,
        "doi": doi,
        "pmid": identifiers.pmid(ids.get("pmid")),
        "arxiv_id": _arxiv(work) or identifiers.arxiv_id(doi),
        "url": None if doi else primary.get("landing_page_url"),
    }
