"""Papers by identifier (DOI, arXiv ID, PubMed ID) or by an arXiv or PubMed search, fetched
from the public services without a key and written as files the corpus readers already read:
an OpenAlex work (JSON; Crossref's record when OpenAlex has no abstract), an arXiv entry (a
JSON record) or a PubMed article as efetch gives it (XML, so sections keep their labels).

Every fetched record is kept as a file in ``folder``, so asking again costs no request, and
identifiers the library already holds are not fetched at all. Nothing here writes the index:
the caller ingests the files once every request has succeeded, and a service that cannot be
reached raises `ServiceError` before anything is ingested.
"""

from __future__ import annotations

import html
import io
import json
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote
from xml.etree.ElementTree import Element, ParseError, tostring

from defusedxml.ElementTree import parse as parse_xml

from assistant import identifiers
from assistant.corpus import openalex, pubmed_xml
from assistant.corpus.records import MIN_ABSTRACT_CHARS
from assistant.remote.http import NotFound, PoliteClient, Service, ServiceError
from assistant.settings import Settings
from assistant.types import Rejected

Kind = Literal["doi", "arxiv", "pmid"]
LABELS = {"doi": "doi", "arxiv": "arXiv", "pmid": "PMID"}
ATOM, ARXIV_NS = "{http://www.w3.org/2005/Atom}", "{http://arxiv.org/schemas/atom}"
EFETCH_BATCH = 200
UNKNOWN_FORM = ("not a DOI, arXiv ID or PubMed ID (for example 10.1038/nature14539, arXiv:1706.03762 "
                "or PMID:31452104)")


def parse(text: str) -> tuple[Kind, str] | None:
    """The kind and normalised value of an identifier as a researcher writes it: a DOI (bare,
    ``doi:…`` or a doi.org link; an arXiv DOI counts as its arXiv ID), an arXiv ID (new or old
    style, ``arXiv:…`` or an arxiv.org link) or a PubMed ID (digits, ``PMID:…`` or a link)."""
    text = text.strip()
    if doi := identifiers.doi(text):
        arxiv = identifiers.arxiv_id(doi) if doi.startswith("10.48550/") else None
        return ("arxiv", arxiv) if arxiv else ("doi", doi)
    if arxiv := identifiers.arxiv_id(text):
        return "arxiv", arxiv
    if pmid := identifiers.pmid(text):
        return "pmid", pmid
    return None


@dataclass
class Fetched:
    """What a lookup gave: the files to ingest, what could not be had (by identifier, with why),
    and how many identifiers the library already held (not fetched)."""

    files: list[Path] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    known: int = 0


def services(settings: Settings) -> dict[str, Service]:
    """The four services, where the settings put them, at the rates their terms ask for."""
    return {
        "openalex": Service("OpenAlex", settings.openalex_url, "ASSISTANT_OPENALEX_URL", 0.1),
        "crossref": Service("Crossref", settings.crossref_url, "ASSISTANT_CROSSREF_URL", 0.2),
        "arxiv": Service("arXiv", settings.arxiv_url, "ASSISTANT_ARXIV_URL", 3.0),
        "eutils": Service("PubMed E-utilities", settings.eutils_url, "ASSISTANT_EUTILS_URL", 0.34),
    }


def user_agent(contact: str | None) -> str:
    """How we name ourselves to the services, with the contact address they ask for."""
    return f"abstract-assistant/0.1 (mailto:{contact})" if contact else "abstract-assistant/0.1"


def _jats_text(value: str) -> str:
    """Crossref's JATS abstract as plain text, without its "Abstract" heading."""
    value = re.sub(r"<jats:title>\s*Abstract\s*</jats:title>", " ", value, flags=re.IGNORECASE)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", value)).split())


def crossref_record(work: dict[str, Any]) -> dict[str, Any]:
    """A Crossref work (``message``) as a record of the generic field names."""
    def first(name: str) -> Any:
        value = work.get(name)
        return value[0] if isinstance(value, list) and value else None
    parts = (work.get("issued") or work.get("published") or {}).get("date-parts") or [[None]]
    authors = [" ".join(p for p in (a.get("given"), a.get("family")) if p) or a.get("name")
               for a in work.get("author") or [] if isinstance(a, dict)]
    return {"id": f"doi:{identifiers.doi(work.get('DOI'))}", "title": first("title"),
            "abstract": _jats_text(work.get("abstract") or ""), "authors": [a for a in authors if a],
            "year": parts[0][0] if parts and parts[0] else None, "journal": first("container-title"),
            "doi": work.get("DOI"), "publication_type": (work.get("type") or "").replace("-", " ") or None}


def _root(text: str, service: str) -> Element:
    """The root of an XML answer; a `ServiceError` when it is not XML (arXiv's "Rate exceeded.")."""
    try:
        return parse_xml(io.StringIO(text)).getroot()
    except ParseError:
        raise ServiceError(f"{service} answered with something other than XML ({text.strip()[:80]!r}); "
                           "try again later") from None


def _text(element: Element | None) -> str:
    return " ".join("".join(element.itertext()).split()) if element is not None else ""


def arxiv_record(entry: Element) -> dict[str, Any]:
    """An arXiv Atom entry as a record of the generic field names."""
    arxiv = identifiers.arxiv_id(_text(entry.find(f"{ATOM}id")))
    return {"id": arxiv, "arxiv_id": arxiv, "title": _text(entry.find(f"{ATOM}title")),
            "abstract": _text(entry.find(f"{ATOM}summary")),
            "authors": [_text(a.find(f"{ATOM}name")) for a in entry.iterfind(f"{ATOM}author")],
            "year": _text(entry.find(f"{ATOM}published"))[:4] or None,
            "doi": _text(entry.find(f"{ARXIV_NS}doi")) or None,
            "journal": _text(entry.find(f"{ARXIV_NS}journal_ref")) or None,
            "comment": _text(entry.find(f"{ARXIV_NS}comment")) or None}


class PaperFetcher:
    """Looks papers up at the public services and keeps each record as a file in ``folder``."""

    def __init__(self, settings: Settings, folder: Path, client: PoliteClient | None = None) -> None:
        self.services = services(settings)
        self.contact = settings.contact_email
        self.folder = folder
        self.client = client or PoliteClient(user_agent(self.contact), timeout=settings.remote_timeout)

    def _path(self, kind: Kind, value: str) -> Path:
        return self.folder / f"{kind}-{quote(value, safe='.')}.{'xml' if kind == 'pmid' else 'json'}"

    def _keep(self, kind: Kind, value: str, content: str) -> Path:
        """Write a record's file whole or not at all."""
        path = self._path(kind, value)
        self.folder.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.partial")
        partial.write_text(content, encoding="utf-8")
        os.replace(partial, path)
        return path

    def by_ids(self, ids: Iterable[str], known: Callable[[list[str]], set[str]]) -> Fetched:
        """The files for these identifiers; ``known`` says which identity keys the library holds."""
        result, wanted = Fetched(), {}
        for given in ids:
            parsed = parse(given)
            if parsed is None:
                result.rejected.append(Rejected(given.strip() or "(empty)", None, UNKNOWN_FORM))
            else:
                wanted.setdefault(parsed, given)
        held = known([f"{kind}:{value}" for kind, value in wanted])
        result.known = sum(f"{kind}:{value}" in held for kind, value in wanted)
        missing = []
        for kind, value in (pair for pair in wanted if f"{pair[0]}:{pair[1]}" not in held):
            if (path := self._path(kind, value)).exists():
                result.files.append(path)  # fetched before: no request
            else:
                missing.append((kind, value))
        for kind, fetch in (("doi", self._doi), ("arxiv", self._arxiv), ("pmid", self._pmid)):
            if values := [v for k, v in missing if k == kind]:
                fetch(values, result)
        return result

    def search(self, where: Literal["arxiv", "pubmed"], query: str, limit: int,
               known: Callable[[list[str]], set[str]]) -> Fetched:
        """The files for the first ``limit`` papers an arXiv or PubMed search finds."""
        result = Fetched()
        if where == "arxiv":
            terms = query if ":" in query else " AND ".join(f"all:{word}" for word in query.split())
            self._read_feed(self._get("arxiv", "query", {"search_query": terms, "start": 0, "max_results": limit}),
                            None, result, known)
            return result
        found = self._get("eutils", "esearch.fcgi", {"db": "pubmed", "term": query, "retmax": limit, "retmode": "json",
                                                     **self._ncbi()})
        try:
            pmids = [str(p) for p in json.loads(found)["esearchresult"]["idlist"]][:limit]
        except (ValueError, KeyError, TypeError):
            raise ServiceError("PubMed's search answered in a form we cannot read; try again later") from None
        held = known([f"pmid:{p}" for p in pmids])
        result.known = len(held)
        self._pmid([p for p in pmids if f"pmid:{p}" not in held], result)
        return result

    def _get(self, name: str, path: str, params: dict[str, Any] | None = None) -> str:
        return self.client.get(self.services[name], path, params).text

    def _ncbi(self) -> dict[str, str]:
        return {"tool": "abstract-assistant", **({"email": self.contact} if self.contact else {})}

    def _doi(self, dois: list[str], result: Fetched) -> None:
        for doi in dois:
            name, title = f"doi:{doi}", None
            try:
                work = json.loads(self._get("openalex", f"works/doi:{doi}",
                                            {"mailto": self.contact} if self.contact else None))
                title = work.get("title")
                if openalex.abstract_text(work.get("abstract_inverted_index")):
                    result.files.append(self._keep("doi", doi, json.dumps(work)))
                    continue
            except NotFound:
                pass
            except (ValueError, AttributeError):
                result.rejected.append(Rejected(name, None, "OpenAlex sent a record that cannot be read; try again later"))
                continue
            try:
                work = json.loads(self._get("crossref", f"works/{doi}"))["message"]
                record = crossref_record(work)
                title = title or record["title"]
                if len(record["abstract"]) >= MIN_ABSTRACT_CHARS:
                    result.files.append(self._keep("doi", doi, json.dumps(record)))
                    continue
            except NotFound:
                pass
            except (ValueError, KeyError, TypeError, AttributeError):
                result.rejected.append(Rejected(name, None, "Crossref sent a record that cannot be read; try again later"))
                continue
            why = (f"{title!r} has no abstract at OpenAlex or Crossref; add it from a file that holds one" if title
                   else "no such DOI at OpenAlex or Crossref; check it for typos")
            result.rejected.append(Rejected(name, None, why))

    def _arxiv(self, ids: list[str], result: Fetched) -> None:
        feed = self._get("arxiv", "query", {"id_list": ",".join(ids), "max_results": len(ids)})
        self._read_feed(feed, ids, result, None)

    def _read_feed(self, feed: str, asked: list[str] | None, result: Fetched,
                   known: Callable[[list[str]], set[str]] | None) -> None:
        """Keep the entries of an arXiv feed; reject what was ``asked`` for and is not in it."""
        entries = list(_root(feed, "arXiv").iterfind(f"{ATOM}entry"))
        records = [arxiv_record(e) for e in entries]
        if (errors := [e for e in entries if _text(e.find(f"{ATOM}title")) == "Error"]):
            for arxiv in asked or []:
                result.rejected.append(Rejected(f"arXiv:{arxiv}", None, f"arXiv says: {_text(errors[0].find(f'{ATOM}summary'))}"))
            return
        held = known([f"arxiv:{r['arxiv_id']}" for r in records if r["arxiv_id"]]) if known else set()
        result.known += len(held)
        for record in records:
            arxiv = record["arxiv_id"]
            if not arxiv or f"arxiv:{arxiv}" in held:
                continue
            comment = record.pop("comment")
            if comment and "withdrawn" in comment.lower():
                result.rejected.append(Rejected(f"arXiv:{arxiv}", None, f"withdrawn by its authors ({comment})"))
            else:
                result.files.append(self._keep("arxiv", arxiv, json.dumps(record)))
        found = {r["arxiv_id"] for r in records}
        for arxiv in asked or []:
            if arxiv not in found:
                result.rejected.append(Rejected(f"arXiv:{arxiv}", None, "no such arXiv ID; check it for typos"))

    def _pmid(self, pmids: list[str], result: Fetched) -> None:
        for start in range(0, len(pmids), EFETCH_BATCH):
            batch = pmids[start:start + EFETCH_BATCH]
            answer = self._get("eutils", "efetch.fcgi", {"db": "pubmed", "id": ",".join(batch), "retmode": "xml",
                                                         **self._ncbi()})
            found = set()
            for article in (a for a in _root(answer, "PubMed") if a.tag in ("PubmedArticle", "PubmedBookArticle")):
                record = pubmed_xml.fields(article)
                pmid = record["pmid"]
                found.add(pmid)
                if record["abstract"]:
                    result.files.append(self._keep("pmid", pmid, f"<{pubmed_xml.ROOT}>{tostring(article, 'unicode')}"
                                                                 f"</{pubmed_xml.ROOT}>"))
                else:
                    result.rejected.append(Rejected(f"PMID:{pmid}", None,
                                                    f"PubMed holds no abstract for {record['title']!r}"))
            for pmid in batch:
                if pmid not in found:
                    result.rejected.append(Rejected(f"PMID:{pmid}", None, "no such PubMed ID; check it for typos"))
