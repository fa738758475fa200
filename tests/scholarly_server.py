"""A local stand-in for OpenAlex, Crossref, arXiv, PubMed E-utilities and the Zotero Web API,
answering in each service's documented format: OpenAlex works (JSON, the abstract as an
inverted index), Crossref ``{"status": "ok", "message": …}`` with a JATS abstract, arXiv's
Atom feed (an empty feed for an unknown ID, an ``Error`` entry for a malformed one), efetch's
PubmedArticleSet and esearch's JSON, and Zotero's ``/users/ID/items`` (items as JSON with
``Last-Modified-Version``, ``format=versions``, ``itemKey=``; trashed items left out; a private
library's key checked). Queued failures (`fail`) answer before the records do: 429 with
``Retry-After``, 5xx, a malformed body.

    with ScholarlyServer() as server:
        Assistant(**server.settings(), ...).add(["10.1234/oa.1"])
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit
from xml.sax.saxutils import escape


def inverted_index(text: str) -> dict[str, list[int]]:
    """OpenAlex's ``abstract_inverted_index`` of a text."""
    index: dict[str, list[int]] = defaultdict(list)
    for position, word in enumerate(text.split()):
        index[word].append(position)
    return dict(index)


def openalex_work(doi: str, title: str, abstract: str | None, authors: list[str], year: int) -> dict:
    return {
        "id": f"https://openalex.org/W{abs(hash(doi)) % 10**9}",
        "doi": f"https://doi.org/{doi}",
        "title": title,
        "display_name": title,
        "publication_year": year,
        "publication_date": f"{year}-03-01",
        "ids": {"openalex": "https://openalex.org/W1", "doi": f"https://doi.org/{doi}"},
        "primary_location": {"is_oa": True, "landing_page_url": f"https://doi.org/{doi}", "pdf_url": None,
                             "source": {"id": "https://openalex.org/S1", "display_name": "Journal of Tests",
                                        "type": "journal"}},
        "type": "article",
        "authorships": [{"author_position": "first", "author": {"id": "https://openalex.org/A1", "display_name": a},
                         "institutions": [], "raw_author_name": a} for a in authors],
        "abstract_inverted_index": inverted_index(abstract) if abstract else None,
    }


def crossref_work(doi: str, title: str, abstract: str | None, authors: list[tuple[str, str]], year: int) -> dict:
    message = {"DOI": doi, "type": "journal-article", "title": [title], "container-title": ["Crossref Letters"],
               "author": [{"given": g, "family": f, "sequence": "first", "affiliation": []} for g, f in authors],
               "issued": {"date-parts": [[year, 5, 2]]}, "URL": f"https://doi.org/{doi}"}
    if abstract:
        message["abstract"] = f"<jats:title>Abstract</jats:title><jats:p>{escape(abstract)}</jats:p>"
    return {"status": "ok", "message-type": "work", "message-version": "1.0.0", "message": message}


def arxiv_entry(arxiv: str, title: str, abstract: str, authors: list[str], year: int, comment: str | None = None,
                doi: str | None = None) -> str:
    extra = (f"<arxiv:comment>{escape(comment)}</arxiv:comment>" if comment else "") + (
        f"<arxiv:doi>{doi}</arxiv:doi>" if doi else "")
    names = "".join(f"<author><name>{escape(a)}</name></author>" for a in authors)
    return (f"<entry><id>http://arxiv.org/abs/{arxiv}v2</id><updated>{year}-02-01T00:00:00Z</updated>"
            f"<published>{year}-01-15T18:00:00Z</published><title>{escape(title)}</title>"
            f"<summary>  {escape(abstract)}\n</summary>{names}{extra}"
            f'<link href="http://arxiv.org/abs/{arxiv}v2" rel="alternate" type="text/html"/>'
            f'<link title="pdf" href="http://arxiv.org/pdf/{arxiv}v2" rel="related" type="application/pdf"/>'
            f'<arxiv:primary_category term="cs.LG" scheme="http://arxiv.org/schemas/atom"/></entry>')


def arxiv_feed(entries: list[str]) -> str:
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<feed xmlns="http://www.w3.org/2005/Atom" '
            'xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/" xmlns:arxiv="http://arxiv.org/schemas/atom">'
            '<title type="html">ArXiv Query</title><id>http://arxiv.org/api/x</id>'
            f"<opensearch:totalResults>{len(entries)}</opensearch:totalResults>"
            f"<opensearch:startIndex>0</opensearch:startIndex>{''.join(entries)}</feed>")


def pubmed_article(pmid: str, title: str, sections: list[tuple[str, str]], authors: list[tuple[str, str]],
                   year: int, doi: str | None = None) -> str:
    abstract = "".join(f'<AbstractText Label="{label}" NlmCategory="{label}">{escape(text)}</AbstractText>'
                       for label, text in sections)
    names = "".join(f'<Author ValidYN="Y"><LastName>{last}</LastName><ForeName>{first}</ForeName></Author>'
                    for first, last in authors)
    ids = f'<ArticleId IdType="pubmed">{pmid}</ArticleId>' + (f'<ArticleId IdType="doi">{doi}</ArticleId>' if doi else "")
    return (f'<PubmedArticle><MedlineCitation Status="MEDLINE" Owner="NLM"><PMID Version="1">{pmid}</PMID>'
            f'<Article PubModel="Print"><Journal><Title>Journal of Clinical Tests</Title><JournalIssue>'
            f"<PubDate><Year>{year}</Year><Month>Jan</Month></PubDate></JournalIssue></Journal>"
            f"<ArticleTitle>{escape(title)}</ArticleTitle>" + (f"<Abstract>{abstract}</Abstract>" if sections else "")
            + f'<AuthorList CompleteYN="Y">{names}</AuthorList><PublicationTypeList>'
            f'<PublicationType UI="D016428">Journal Article</PublicationType></PublicationTypeList></Article>'
            f"</MedlineCitation><PubmedData><ArticleIdList>{ids}</ArticleIdList></PubmedData></PubmedArticle>")


def pubmed_set(articles: list[str]) -> str:
    return ('<?xml version="1.0" ?>\n<!DOCTYPE PubmedArticleSet PUBLIC "-//NLM//DTD PubMedArticle, 1st January '
            '2025//EN" "https://dtd.nlm.nih.gov/ncbi/pubmed/out/pubmed_250101.dtd">\n'
            f"<PubmedArticleSet>{''.join(articles)}</PubmedArticleSet>")


@dataclass
class Reply:
    status: int
    body: str
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Request:
    service: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    at: float


class ScholarlyServer:
    """The four services on one free localhost port, each under its own path."""

    def __init__(self) -> None:
        self.openalex: dict[str, dict] = {}  # doi -> work
        self.crossref: dict[str, dict] = {}  # doi -> {"status": "ok", "message": …}
        self.arxiv: dict[str, str] = {}  # arXiv ID -> entry
        self.arxiv_searches: dict[str, list[str]] = {}  # search_query -> arXiv IDs
        self.pubmed: dict[str, str] = {}  # PMID -> PubmedArticle
        self.pubmed_searches: dict[str, list[str]] = {}  # term -> PMIDs
        self.zotero: dict[str, dict] = {}  # item key -> data (with "version"; "deleted": 1 when trashed)
        self.zotero_library = ("users", "4242")
        self.zotero_key: str | None = None  # the API key a request must send, if any
        self.zotero_deleted_at = 0  # the library's version when an item was last deleted for good
        self.failures: dict[str, list[Reply]] = defaultdict(list)
        self.requests: list[Request] = []
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.base_url = f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def settings(self) -> dict[str, str]:
        """The settings that point the assistant at this server."""
        return {"openalex_url": f"{self.base_url}/openalex", "crossref_url": f"{self.base_url}/crossref",
                "arxiv_url": f"{self.base_url}/arxiv", "eutils_url": f"{self.base_url}/eutils",
                "zotero_url": f"{self.base_url}/zotero", "zotero_library_id": self.zotero_library[1],
                "zotero_library_type": self.zotero_library[0][:-1]}

    def fail(self, service: str, *replies: Reply) -> None:
        """Answer the next requests to ``service`` with these replies, in order."""
        self.failures[service].extend(replies)

    def asked(self, service: str) -> list[Request]:
        return [r for r in self.requests if r.service == service]

    def _answer(self, service: str, path: str, query: dict[str, list[str]]) -> Reply:
        if self.failures[service]:
            return self.failures[service].pop(0)
        one = {k: v[0] for k, v in query.items()}
        if service == "openalex" and path.startswith("works/doi:"):
            work = self.openalex.get(path.removeprefix("works/doi:").lower())
            return Reply(200, json.dumps(work)) if work else Reply(404, json.dumps(
                {"error": "404 Not Found", "message": "The requested URL was not found on the server."}))
        if service == "crossref" and path.startswith("works/"):
            work = self.crossref.get(path.removeprefix("works/").lower())
            return Reply(200, json.dumps(work)) if work else Reply(404, "Resource not found.")
        if service == "arxiv" and path == "query":
            if "id_list" in one:
                ids = one["id_list"].split(",")
                if bad := [i for i in ids if not i[:1].isdigit() and "/" not in i]:
                    error = (f"<entry><id>http://arxiv.org/api/errors#incorrect_id_format_for_{bad[0]}</id>"
                             f"<title>Error</title><summary>incorrect id format for {bad[0]}</summary></entry>")
                    return Reply(200, arxiv_feed([error]))
                return Reply(200, arxiv_feed([self.arxiv[i] for i in ids if i in self.arxiv]))
            found = self.arxiv_searches.get(one.get("search_query", ""), [])[: int(one.get("max_results", 10))]
            return Reply(200, arxiv_feed([self.arxiv[i] for i in found]))
        if service == "eutils" and path == "esearch.fcgi":
            ids = self.pubmed_searches.get(one.get("term", ""), [])
            shown = ids[: int(one.get("retmax", 20))]
            return Reply(200, json.dumps({"header": {"type": "esearch", "version": "0.3"}, "esearchresult": {
                "count": str(len(ids)), "retmax": str(len(shown)), "retstart": "0", "idlist": shown,
                "translationset": [], "querytranslation": one.get("term", "")}}))
        if service == "eutils" and path == "efetch.fcgi":
            ids = one.get("id", "").split(",")
            return Reply(200, pubmed_set([self.pubmed[i] for i in ids if i in self.pubmed]))
        if service == "zotero":
            return self._zotero(path, one)
        return Reply(404, "not found")

    def _zotero(self, path: str, one: dict[str, str]) -> Reply:
        kind, library = self.zotero_library
        if path != f"{kind}/{library}/items":
            return Reply(404, "Not found")
        version = max([self.zotero_deleted_at, *(d["version"] for d in self.zotero.values())])
        headers = {"Content-Type": "application/json", "Last-Modified-Version": str(version), "Zotero-API-Version": "3"}
        listed = {k: d for k, d in self.zotero.items() if not d.get("deleted") and
                  d["version"] > int(one.get("since", -1))}
        if one.get("format") == "versions":
            return Reply(200, json.dumps({k: d["version"] for k, d in listed.items()}), headers)
        keys = one["itemKey"].split(",") if "itemKey" in one else list(listed)[: int(one.get("limit", 25))]
        items = [{"key": k, "version": self.zotero[k]["version"], "library": {"type": kind[:-1], "id": int(library)},
                  "meta": {}, "data": {"key": k, **self.zotero[k]}} for k in keys if k in self.zotero]
        return Reply(200, json.dumps(items), {**headers, "Total-Results": str(len(listed))})

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                parts = urlsplit(self.path)
                service, _, path = unquote(parts.path).lstrip("/").partition("/")
                query = parse_qs(parts.query)
                server.requests.append(Request(service, path, query, dict(self.headers), time.monotonic()))
                sent = {self.headers.get("Zotero-API-Key"), self.headers.get("Authorization")}  # the API takes either
                if service == "zotero" and server.zotero_key and not {server.zotero_key, f"Bearer {server.zotero_key}"} & sent:
                    reply = Reply(403, "Forbidden")
                else:
                    reply = server._answer(service, path, query)
                body = reply.body.encode()
                self.send_response(reply.status)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        return Handler

    def __enter__(self) -> ScholarlyServer:
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
