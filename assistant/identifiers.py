"""Paper identifiers (DOI, PubMed id, arXiv id), normalised so that one paper exported by two
tools compares equal: Zotero writes ``10.1000/ABC``, PubMed ``https://doi.org/10.1000/abc``,
OpenAlex ``https://pubmed.ncbi.nlm.nih.gov/123``, arXiv ``2101.00001v2``.

A leaf module: the loaders normalise with it, ingest deduplicates by `keys`, and the
reference exports write the normalised forms.
"""

from __future__ import annotations

import re

ARXIV_ID = re.compile(r"^(\d{4}\.\d{4,5}|[a-z\-]+(\.[A-Z]{2})?/\d{7})(v\d+)?$")  # new and old style
_ARXIV_IN = re.compile(
    r"(?:arxiv\.org/(?:abs|pdf)/|arxiv[:.]\s*)(\d{4}\.\d{4,5}|[a-z\-]+(?:\.[A-Z]{2})?/\d{7})(?:v\d+)?", re.IGNORECASE
)
_DOI = re.compile(r"10\.\d{4,9}/\S+")
_DOI_PREFIX = re.compile(r"^(?:https?://(?:dx\.)?doi\.org/|doi:\s*)", re.IGNORECASE)
_PMID = re.compile(r"^(?:https?://(?:www\.)?(?:pubmed\.)?ncbi\.nlm\.nih\.gov/(?:pubmed/)?|pmid:\s*)?(\d{1,9})/?$",
                   re.IGNORECASE)


def doi(value: object) -> str | None:
    """A DOI in lower case without its resolver prefix (DOIs are case-insensitive), or None
    when ``value`` holds none. Trailing punctuation from running text is dropped."""
    if not isinstance(value, str):
        return None
    match = _DOI.search(_DOI_PREFIX.sub("", value.strip()))
    return match.group(0).rstrip(".,;)]}").lower() if match else None


def pmid(value: object) -> str | None:
    """A PubMed id as its digits (from ``123``, ``PMID: 123`` or a PubMed URL), or None."""
    if isinstance(value, int) and value > 0:
        return str(value)
    match = _PMID.match(value.strip()) if isinstance(value, str) else None
    return str(int(match.group(1))) if match and int(match.group(1)) > 0 else None


def arxiv_id(value: object) -> str | None:
    """An arXiv id without its version (``2101.00001``, ``hep-th/9901001``) from a bare id,
    ``arXiv:…``, an arxiv.org link or an arXiv DOI (``10.48550/arXiv.…``), or None."""
    if not isinstance(value, str):
        return None
    value = value.strip()
    if ARXIV_ID.match(value):
        return re.sub(r"v\d+$", "", value)
    match = _ARXIV_IN.search(value)
    return match.group(1) if match else None


def keys(doi_: str | None, pmid_: str | None, arxiv: str | None) -> tuple[str, ...]:
    """The identity keys of a paper: two records sharing any key are the same paper."""
    return tuple(f"{kind}:{value}" for kind, value in (("doi", doi_), ("pmid", pmid_), ("arxiv", arxiv)) if value)
