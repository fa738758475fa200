"""References to take away: BibTeX, RIS and CSL JSON records, and Markdown reference lines,
for cited abstracts.

A record that came from a ``.bib`` file keeps its own entry (stored at ingest under
``Abstract.extra["bibtex"]``). Any other record gets an entry built from its title, authors,
year, link, DOI and arXiv id: ``@article`` when it names a journal, else ``@misc``. The key
is the abstract's id, so it is stable, and an exported file ingested again is recognised as
the abstracts it came from (ingest de-duplicates by id). Values are escaped with `escape`,
which `unescape` (used by the ``.bib`` loader) inverts exactly. RIS (written by ``rispy``)
and CSL JSON carry the same fields and the abstract's id (RIS ``ID``, CSL ``id``), so they
round-trip the same way.

A leaf module: it describes what it reads of an abstract (`Paper`) instead of importing
the record types, so `assistant.types` can use it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Protocol

import rispy

from assistant import identifiers

BIBTEX_FIELD = "bibtex"  # Abstract.extra key holding a .bib record's own entry

_LATEX_CHARS = {"\\": "textbackslash", "~": "textasciitilde", "^": "textasciicircum"}
_COMMAND_CHAR = {command: char for char, command in _LATEX_CHARS.items()}
_SPECIAL = re.compile(r"[&%$#_{}\\~^]")
_TOKEN = re.compile(r"\\(textbackslash|textasciitilde|textasciicircum)(?:\{\})?|\\([&%$#_{}])|[{}]")
_KEY_UNSAFE = re.compile(r"[^A-Za-z0-9_:.\-/+]")
_MARKDOWN_LINK_TEXT = re.compile(r"([\[\]\\])")


class Paper(Protocol):
    """What a reference is made from (an `assistant.types.Abstract` is one)."""

    id: str
    title: str
    text: str
    source: str
    url: str | None
    authors: tuple[str, ...]
    year: int | None
    doi: str | None
    pmid: str | None
    arxiv_id: str | None
    extra: Mapping[str, Any]


def escape(value: str) -> str:
    """``value`` as BibTeX field text: LaTeX's special characters escaped."""

    def one(match: re.Match[str]) -> str:
        char = match.group(0)
        return f"\\{_LATEX_CHARS[char]}{{}}" if char in _LATEX_CHARS else f"\\{char}"

    return _SPECIAL.sub(one, value)


def unescape(value: str) -> str:
    """A BibTeX field's text: escaped characters restored, protective braces dropped."""

    def one(match: re.Match[str]) -> str:
        if match.group(1):
            return _COMMAND_CHAR[match.group(1)]
        return match.group(2) or ""

    return _TOKEN.sub(one, value)


def bibtex_key(paper: Paper) -> str:
    """The entry key: the abstract's id, with characters BibTeX keys cannot hold replaced."""
    return _KEY_UNSAFE.sub("-", paper.id) or "abstract"


def web_url(paper: Paper) -> str | None:
    """The abstract's link when it is a web address (an http(s) URL); a reference never
    carries another scheme (``javascript:`` from a hostile record, a local path)."""
    url = (paper.url or "").strip()
    return url if url.startswith(("https://", "http://")) else None


def _arxiv_id(paper: Paper) -> str | None:
    return paper.arxiv_id or identifiers.arxiv_id(paper.id) or identifiers.arxiv_id(web_url(paper) or "")


def _doi(paper: Paper) -> str | None:
    url = web_url(paper) or ""
    return paper.doi or (identifiers.doi(url) if "doi.org/" in url else None)


def _journal(paper: Paper) -> str | None:
    journal = paper.extra.get("journal") or paper.extra.get("venue")
    return str(journal) if journal else None


def bibtex_entry(paper: Paper) -> str:
    """One BibTeX entry for this abstract (its own, when it came from a ``.bib`` file)."""
    own = paper.extra.get(BIBTEX_FIELD)
    if isinstance(own, str) and own.strip():
        return own.strip()
    journal = _journal(paper)
    fields: list[tuple[str, str]] = [("title", f"{{{escape(paper.title)}}}")]
    if paper.authors:
        fields.append(("author", escape(" and ".join(paper.authors))))
    if paper.year:
        fields.append(("year", str(paper.year)))
    if journal:
        fields.append(("journal", escape(str(journal))))
    arxiv = _arxiv_id(paper)
    if arxiv:
        fields += [("eprint", arxiv), ("archiveprefix", "arXiv")]
    doi = _doi(paper)
    if doi:
        fields.append(("doi", escape(doi)))
    if paper.pmid:
        fields.append(("pmid", paper.pmid))
    url = web_url(paper)
    if url:
        fields.append(("url", escape(url)))
    fields.append(("abstract", escape(paper.text)))
    body = ",\n".join(f"  {name} = {{{value}}}" for name, value in fields)
    return f"@{'article' if journal else 'misc'}{{{bibtex_key(paper)},\n{body}\n}}"


def bibtex(papers: list[Paper]) -> str:
    """A ``.bib`` file's text for these abstracts (empty when there are none)."""
    return "".join(bibtex_entry(p) + "\n\n" for p in papers).rstrip("\n") + "\n" if papers else ""


def _present(fields: dict[str, Any]) -> dict[str, Any]:
    """The fields that have a value, in order (a reference leaves unknown fields out)."""
    return {name: value for name, value in fields.items() if value}


def ris_record(paper: Paper) -> dict[str, Any]:
    """One RIS record (as ``rispy`` field names): ``JOUR`` when it names a journal, else
    ``GEN``; the PubMed id goes in ``AN`` (accession number), as PubMed-derived RIS has it."""
    journal, arxiv = _journal(paper), _arxiv_id(paper)
    urls = [u for u in (web_url(paper), f"https://arxiv.org/abs/{arxiv}" if arxiv else None) if u]
    return _present({
        "type_of_reference": "JOUR" if journal else "GEN",
        "id": paper.id,
        "title": paper.title,
        "authors": list(paper.authors),
        "year": str(paper.year) if paper.year else None,
        "journal_name": journal,
        "doi": _doi(paper),
        "accession_number": paper.pmid,
        "urls": list(dict.fromkeys(urls)),
        "abstract": paper.text,
    })


class _RisWriter(rispy.RisWriter):
    """rispy's writer without the "1." line it puts before each record, which is not RIS."""

    def set_header(self, count: int) -> str:
        return ""


def ris(papers: list[Paper]) -> str:
    """A ``.ris`` file's text for these abstracts (empty when there are none)."""
    return rispy.dumps([ris_record(p) for p in papers], implementation=_RisWriter) if papers else ""


def _csl_name(author: str) -> dict[str, str]:
    """A CSL name: "Family, Given" split at its comma, any other form kept whole (``literal``):
    guessing which word of "Ludwig van Beethoven" is the family name would get some wrong."""
    family, comma, given = author.partition(",")
    return {"family": family.strip(), "given": given.strip()} if comma and given.strip() else {"literal": author}


def csl_item(paper: Paper) -> dict[str, Any]:
    """One CSL JSON item: ``article-journal`` when it names a journal, else ``article`` (CSL's
    type for preprints), with the arXiv id as Zotero writes it (``number``: ``arXiv:…``)."""
    journal, arxiv = _journal(paper), _arxiv_id(paper)
    return _present({
        "id": paper.id,
        "type": "article-journal" if journal else "article",
        "title": paper.title,
        "author": [_csl_name(a) for a in paper.authors],
        "issued": {"date-parts": [[paper.year]]} if paper.year else None,
        "container-title": journal,
        "DOI": _doi(paper),
        "PMID": paper.pmid,
        "number": f"arXiv:{arxiv}" if arxiv else None,
        "URL": web_url(paper),
        "abstract": paper.text,
    })


def csl_json(papers: list[Paper]) -> str:
    """A CSL JSON file's text (an array of items) for these abstracts."""
    return json.dumps([csl_item(p) for p in papers], ensure_ascii=False, indent=2) + "\n"


def markdown_reference(number: int, paper: Paper) -> str:
    """One numbered Markdown reference: linked title, authors, year, and the file it came from.
    The link is written ``<url>`` so that parentheses in it cannot end it early."""
    title = _MARKDOWN_LINK_TEXT.sub(r"\\\1", paper.title)
    url = web_url(paper)
    line = f"{number}. " + (f"[{title}](<{url}>)" if url else title)
    if paper.authors:
        line += ". " + ", ".join(paper.authors[:3]) + (" et al." if len(paper.authors) > 3 else "")
    if paper.year:
        line += f" ({paper.year})"
    return line + f". `{paper.source}`"
