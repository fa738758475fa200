"""References to take away: BibTeX entries and Markdown reference lines for cited abstracts.

A record that came from a ``.bib`` file keeps its own entry (stored at ingest under
``Abstract.extra["bibtex"]``). Any other record gets an entry built from its title, authors,
year, link, DOI and arXiv id: ``@article`` when it names a journal, else ``@misc``. The key
is the abstract's id, so it is stable, and an exported file ingested again is recognised as
the abstracts it came from (ingest de-duplicates by id). Values are escaped with `escape`,
which `unescape` (used by the ``.bib`` loader) inverts exactly.

A leaf module: it describes what it reads of an abstract (`Paper`) instead of importing
the record types, so `assistant.types` can use it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Protocol

BIBTEX_FIELD = "bibtex"  # Abstract.extra key holding a .bib record's own entry

_LATEX_CHARS = {"\\": "textbackslash", "~": "textasciitilde", "^": "textasciicircum"}
_COMMAND_CHAR = {command: char for char, command in _LATEX_CHARS.items()}
_SPECIAL = re.compile(r"[&%$#_{}\\~^]")
_TOKEN = re.compile(r"\\(textbackslash|textasciitilde|textasciicircum)(?:\{\})?|\\([&%$#_{}])|[{}]")
_KEY_UNSAFE = re.compile(r"[^A-Za-z0-9_:.\-/+]")
_ARXIV_URL = re.compile(r"arxiv\.org/(?:abs|pdf)/(.+?)(?:v\d+)?(?:\.pdf)?$")
ARXIV_ID = re.compile(r"^(\d{4}\.\d{4,5}|[a-z\-]+(\.[A-Z]{2})?/\d{7})(v\d+)?$")  # new and old style
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
    if ARXIV_ID.match(paper.id):
        return paper.id
    match = _ARXIV_URL.search(web_url(paper) or "")
    return match.group(1) if match else None


def bibtex_entry(paper: Paper) -> str:
    """One BibTeX entry for this abstract (its own, when it came from a ``.bib`` file)."""
    own = paper.extra.get(BIBTEX_FIELD)
    if isinstance(own, str) and own.strip():
        return own.strip()
    journal = paper.extra.get("journal") or paper.extra.get("venue")
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
    url = web_url(paper)
    if url:
        if url.startswith("https://doi.org/"):
            fields.append(("doi", escape(url.removeprefix("https://doi.org/"))))
        fields.append(("url", escape(url)))
    fields.append(("abstract", escape(paper.text)))
    body = ",\n".join(f"  {name} = {{{value}}}" for name, value in fields)
    return f"@{'article' if journal else 'misc'}{{{bibtex_key(paper)},\n{body}\n}}"


def bibtex(papers: list[Paper]) -> str:
    """A ``.bib`` file's text for these abstracts (empty when there are none)."""
    return "".join(bibtex_entry(p) + "\n\n" for p in papers).rstrip("\n") + "\n" if papers else ""


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
