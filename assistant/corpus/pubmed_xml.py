"""PubMed XML (``.xml`` holding a ``PubmedArticleSet``): efetch results and the annual baseline
(``.xml.gz``, read as it decompresses), journal articles and NCBI Bookshelf books and chapters.

Parsed with ``defusedxml`` (no entity expansion, no external entities: a hostile file cannot
blow up memory or read local files) as a stream: each ``PubmedArticle`` (or ``PubmedBookArticle``) is read, turned into
an abstract and freed, so a baseline file of 30,000 articles is never held whole. Structured
abstracts keep their section labels, in order ("BACKGROUND: … METHODS: …"), and the NLM
category of each label (``extra["nlm_categories"]``, read by `sections`); the publication types
are kept too (``extra["publication_type"]``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO
from xml.etree.ElementTree import Element, ParseError

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import iterparse

from assistant.corpus.base import NO_LIMITS, LoadResult, RecordLimits
from assistant.corpus.records import to_abstract
from assistant.corpus.sources import Source
from assistant.types import Rejected

suffixes = (".xml",)
ROOT = "PubmedArticleSet"
_YEAR = re.compile(r"\b(1[89]\d\d|20\d\d)\b")


class NotPubmedError(ValueError):
    """The XML file is not a PubMed article set."""


def _text(element: Element | None) -> str:
    """An element's text with its inline markup (``<i>``, ``<sup>``) flattened."""
    return " ".join("".join(element.itertext()).split()) if element is not None else ""


@dataclass(frozen=True)
class _Layout:
    """Where a record kind keeps its parts: a journal article (``PubmedArticle``) or a book
    or chapter of NCBI Bookshelf (``PubmedBookArticle``)."""

    pmid: str
    article: str  # holds ArticleTitle, Abstract, AuthorList
    ids: tuple[str, ...]
    dates: tuple[str, ...]  # the first one present is its date
    venue: str
    kinds: str


_LAYOUTS = {
    "PubmedArticle": _Layout(
        pmid="MedlineCitation/PMID",
        article="MedlineCitation/Article",
        ids=("PubmedData/ArticleIdList/ArticleId",),
        dates=("MedlineCitation/Article/Journal/JournalIssue/PubDate",),
        venue="MedlineCitation/Article/Journal/Title",
        kinds="MedlineCitation/Article/PublicationTypeList/PublicationType",
    ),
    "PubmedBookArticle": _Layout(
        pmid="BookDocument/PMID",
        article="BookDocument",
        ids=("BookDocument/ArticleIdList/ArticleId", "PubmedBookData/ArticleIdList/ArticleId"),
        dates=("BookDocument/ContributionDate", "BookDocument/Book/PubDate"),  # a chapter's own, else its book's
        venue="BookDocument/Book/BookTitle",
        kinds="BookDocument/PublicationType",
    ),
}


def _abstract(article: Element, layout: _Layout) -> tuple[str, dict[str, str]]:
    """The abstract's text, each section opening with its label as PubMed writes it ("RESULTS:
    …"), and each label's NLM category where the record gives one ({"FINDINGS": "RESULTS"})."""
    parts, categories = [], {}
    for section in article.iterfind(f"{layout.article}/Abstract/AbstractText"):
        text, category = _text(section), section.get("NlmCategory")
        label = section.get("Label") or (category if category and category != "UNASSIGNED" else None)
        if text:
            parts.append(f"{label}: {text}" if label else text)
            if label and category and category != "UNASSIGNED":
                categories[label.upper()] = category
    return " ".join(parts), categories


def _authors(article: Element, layout: _Layout) -> list[str]:
    names = []
    for author in article.iterfind(f"{layout.article}/AuthorList/Author"):
        last, fore = _text(author.find("LastName")), _text(author.find("ForeName"))
        name = f"{last}, {fore}" if last and fore else last or _text(author.find("CollectiveName"))
        if name:
            names.append(name)
    return names


def _year(article: Element, layout: _Layout) -> str | None:
    date = next((d for path in layout.dates if (d := article.find(path)) is not None), None)
    match = _YEAR.search(" ".join(date.itertext())) if date is not None else None  # <Year>2024</Year><Month>…
    return match.group(1) if match else None


def fields(article: Element) -> dict[str, Any]:
    """A ``PubmedArticle`` or ``PubmedBookArticle`` mapped onto the generic field names of
    `records.to_abstract`. A book chapter's venue is its book; a whole book's title is the
    book's."""
    layout = _LAYOUTS[article.tag]
    ids = {i.get("IdType"): _text(i) for path in layout.ids for i in article.iterfind(path)}
    pmid = _text(article.find(layout.pmid)) or ids.get("pubmed")
    doi = ids.get("doi") or next(
        (_text(e) for e in article.iterfind(f"{layout.article}/ELocationID") if e.get("EIdType") == "doi"), None
    )
    text, categories = _abstract(article, layout)
    kinds = [_text(t) for t in article.iterfind(layout.kinds)]
    title = _text(article.find(f"{layout.article}/ArticleTitle"))
    venue = _text(article.find(layout.venue))
    return {
        "id": f"pmid:{pmid}" if pmid else None,
        "title": title or venue,
        "abstract": text,
        "nlm_categories": json.dumps(categories) if categories else None,
        "publication_type": kinds,  # `records` joins them
        "authors": _authors(article, layout),
        "year": _year(article, layout),
        "journal": venue if title else None,
        "doi": doi,
        "pmid": pmid,
    }


def _articles(stream: BinaryIO) -> Iterator[Element]:
    """Each article (``PubmedArticle``, ``PubmedBookArticle``) as it is parsed, freed once
    the caller moves on."""
    root = None
    for event, element in iterparse(stream, events=("start", "end")):
        if event == "start":
            if root is None:
                root = element
                if element.tag != ROOT:
                    raise NotPubmedError(f"not a PubMed XML file: its root element is <{element.tag}>, not <{ROOT}>")
            continue
        if element.tag in _LAYOUTS:
            yield element
            root.clear()  # drop the finished article (and any before it) from the tree


def load(file: Source, limits: RecordLimits = NO_LIMITS) -> LoadResult:
    """Yield one abstract per article; an article without an abstract is rejected with its
    position and PMID. Malformed XML stops the file there, with
    the line where it broke: the articles before it are kept."""
    source = file.location
    number = 0
    try:
        with file.open() as stream:
            for number, article in enumerate(_articles(stream), start=1):
                record = fields(article)
                where = f"article {number} (PMID {record['pmid'] or 'unknown'})"
                if not record["abstract"]:
                    yield Rejected(source, None, f"{where}: no abstract (no AbstractText element)")
                    continue
                result = to_abstract(record, file, None, limits)
                yield Rejected(source, None, f"{where}: {result.reason}") if isinstance(result, Rejected) else result
    except ParseError as error:
        line = error.position[0] if error.position else None
        yield Rejected(source, line, f"malformed XML after article {number}: {error}; the articles before it were read")
    except DefusedXmlException as error:
        yield Rejected(source, None, f"refused: the XML declares entities or external references ({error})")
    except NotPubmedError as error:
        yield Rejected(source, None, str(error))
