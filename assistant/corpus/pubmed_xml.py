"""PubMed XML (``.xml`` holding a ``PubmedArticleSet``): efetch results and the annual baseline.

Parsed with ``defusedxml`` (no entity expansion, no external entities: a hostile file cannot
blow up memory or read local files) as a stream: each ``PubmedArticle`` is read, turned into
an abstract and freed, so a baseline file of 30,000 articles is never held whole. Structured
abstracts keep their section labels, in order ("BACKGROUND: … METHODS: …"), and the NLM
category of each label (``extra["nlm_categories"]``, read by `sections`); the publication types
are kept too (``extra["publication_type"]``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from xml.etree.ElementTree import Element, ParseError

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import iterparse

from assistant.corpus.base import NO_LIMITS, LoadResult, RecordLimits
from assistant.corpus.records import to_abstract
from assistant.types import Rejected

suffixes = (".xml",)
ROOT = "PubmedArticleSet"
_YEAR = re.compile(r"\b(1[89]\d\d|20\d\d)\b")
_RECORDS = ("PubmedArticle", "PubmedBookArticle")


class NotPubmedError(ValueError):
    """The XML file is not a PubMed article set."""


def _text(element: Element | None) -> str:
    """An element's text with its inline markup (``<i>``, ``<sup>``) flattened."""
    return " ".join("".join(element.itertext()).split()) if element is not None else ""


def _abstract(article: Element) -> tuple[str, dict[str, str]]:
    """The abstract's text, each section opening with its label as PubMed writes it ("RESULTS:
    …"), and each label's NLM category where the record gives one ({"FINDINGS": "RESULTS"})."""
    parts, categories = [], {}
    for section in article.iterfind("MedlineCitation/Article/Abstract/AbstractText"):
        text, category = _text(section), section.get("NlmCategory")
        label = section.get("Label") or (category if category and category != "UNASSIGNED" else None)
        if text:
            parts.append(f"{label}: {text}" if label else text)
            if label and category and category != "UNASSIGNED":
                categories[label.upper()] = category
    return " ".join(parts), categories


def _authors(article: Element) -> list[str]:
    names = []
    for author in article.iterfind("MedlineCitation/Article/AuthorList/Author"):
        last, fore = _text(author.find("LastName")), _text(author.find("ForeName"))
        name = f"{last}, {fore}" if last and fore else last or _text(author.find("CollectiveName"))
        if name:
            names.append(name)
    return names


def _year(article: Element) -> str | None:
    date = article.find("MedlineCitation/Article/Journal/JournalIssue/PubDate")
    match = _YEAR.search(" ".join(date.itertext())) if date is not None else None  # <Year>2024</Year><Month>…
    return match.group(1) if match else None


def fields(article: Element) -> dict[str, Any]:
    """A ``PubmedArticle`` mapped onto the generic field names of `records.to_abstract`."""
    ids = {i.get("IdType"): _text(i) for i in article.iterfind("PubmedData/ArticleIdList/ArticleId")}
    pmid = _text(article.find("MedlineCitation/PMID")) or ids.get("pubmed")
    doi = ids.get("doi") or next(
        (_text(e) for e in article.iterfind("MedlineCitation/Article/ELocationID") if e.get("EIdType") == "doi"), None
    )
    text, categories = _abstract(article)
    kinds = [_text(t) for t in article.iterfind("MedlineCitation/Article/PublicationTypeList/PublicationType")]
    return {
        "id": f"pmid:{pmid}" if pmid else None,
        "title": _text(article.find("MedlineCitation/Article/ArticleTitle")),
        "abstract": text,
        "nlm_categories": json.dumps(categories) if categories else None,
        "publication_type": kinds,  # `records` joins them
        "authors": _authors(article),
        "year": _year(article),
        "journal": _text(article.find("MedlineCitation/Article/Journal/Title")),
        "doi": doi,
        "pmid": pmid,
    }


def _articles(path: Path) -> Iterator[Element]:
    """Each article (``PubmedArticle``, ``PubmedBookArticle``) as it is parsed, freed once
    the caller moves on."""
    root = None
    for event, element in iterparse(str(path), events=("start", "end")):
        if event == "start":
            if root is None:
                root = element
                if element.tag != ROOT:
                    raise NotPubmedError(f"not a PubMed XML file: its root element is <{element.tag}>, not <{ROOT}>")
            continue
        if element.tag in _RECORDS:
            yield element
            root.clear()  # drop the finished article (and any before it) from the tree


def load(path: Path, limits: RecordLimits = NO_LIMITS) -> LoadResult:
    """Yield one abstract per article; an article without an abstract is rejected with its
    position and PMID. Malformed XML stops the file there, with the line where it broke:
    the articles before it are kept."""
    source = str(path)
    number = 0
    try:
        for number, article in enumerate(_articles(path), start=1):
            if article.tag != "PubmedArticle":
                yield Rejected(source, None, f"article {number}: a {article.tag} (book chapter), which is not read")
                continue
            record = fields(article)
            where = f"article {number} (PMID {record['pmid'] or 'unknown'})"
            if not record["abstract"]:
                yield Rejected(source, None, f"{where}: no abstract (no AbstractText element)")
                continue
            result = to_abstract(record, path, None, limits)
            yield Rejected(source, None, f"{where}: {result.reason}") if isinstance(result, Rejected) else result
    except ParseError as error:
        line = error.position[0] if error.position else None
        yield Rejected(source, line, f"malformed XML after article {number}: {error}; the articles before it were read")
    except DefusedXmlException as error:
        yield Rejected(source, None, f"refused: the XML declares entities or external references ({error})")
    except NotPubmedError as error:
        yield Rejected(source, None, str(error))
