"""Adding papers by identifier and by search, through the real HTTP client, parsers and ingest,
against a local server that answers as OpenAlex, Crossref, arXiv and PubMed do."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from assistant import Assistant
from assistant.cli import main
from assistant.remote.http import ServiceError
from assistant.remote.papers import parse
from conftest import free_port
from scholarly_server import (
    Reply,
    ScholarlyServer,
    arxiv_entry,
    crossref_work,
    openalex_work,
    pubmed_article,
)

OA_TEXT = ("We measure how coral reef fish populations recover after marine heatwaves across 40 sites and find that "
           "recovery takes a median of six years where fishing is restricted.")
CR_TEXT = ("A survey of glacier retreat in the Andes shows that 80 percent of the glaciers lost more than a third of "
           "their area between 1990 and 2020.")
ARXIV_TEXT = ("We introduce Sparse Lattice Attention, which restricts each token to a lattice of neighbours and "
              "reduces the cost of attention from quadratic to linear with no loss in perplexity.")
PUBMED_SECTIONS = [("BACKGROUND", "Statins are widely prescribed to lower cholesterol in older adults."),
                   ("RESULTS", "Among 1,200 patients, statin use lowered the rate of stroke by 21 percent."),
                   ("CONCLUSIONS", "Statins reduce stroke in adults over seventy.")]


def _fill(server: ScholarlyServer) -> None:
    server.openalex["10.1234/oa.1"] = openalex_work("10.1234/oa.1", "Reef fish recover after heatwaves", OA_TEXT,
                                                    ["Ana Lima", "Ben Okafor"], 2021)
    server.openalex["10.1234/noabs"] = openalex_work("10.1234/noabs", "A paper with no abstract", None, ["X Y"], 2020)
    server.crossref["10.1234/cr.1"] = crossref_work("10.1234/cr.1", "Andean glaciers in retreat", CR_TEXT,
                                                    [("Rosa", "Quispe")], 2022)
    server.arxiv["2401.00001"] = arxiv_entry("2401.00001", "Sparse Lattice Attention", ARXIV_TEXT,
                                             ["Chen Wei", "Dana Fox"], 2024)
    server.arxiv["2401.00002"] = arxiv_entry("2401.00002", "A retracted idea", "This paper has been withdrawn by the "
                                             "author due to an error in the main proof of the second theorem.",
                                             ["Ed Withdrawn"], 2024, comment="This paper has been withdrawn")
    server.pubmed["31000001"] = pubmed_article("31000001", "Statins and stroke in older adults", PUBMED_SECTIONS,
                                               [("Maria", "Rossi")], 2019, doi="10.1000/pm.1")
    server.pubmed["31000002"] = pubmed_article("31000002", "A letter without an abstract", [], [("Tom", "Lee")], 2018)


@pytest.fixture
def server() -> Iterator[ScholarlyServer]:
    with ScholarlyServer() as server:
        _fill(server)
        yield server


@pytest.fixture
def assistant(server: ScholarlyServer, tmp_path: Path) -> Assistant:
    return Assistant(data_dir=tmp_path / "index", auto_ingest=False, contact_email="lab@example.org",
                     **server.settings())


@pytest.mark.parametrize("text, expected", [
    ("10.1038/nature14539", ("doi", "10.1038/nature14539")),
    ("https://doi.org/10.1038/NATURE14539", ("doi", "10.1038/nature14539")),
    ("doi:10.48550/arXiv.1706.03762", ("arxiv", "1706.03762")),
    ("arXiv:1706.03762v5", ("arxiv", "1706.03762")),
    ("https://arxiv.org/pdf/hep-th/9901001v2", ("arxiv", "hep-th/9901001")),
    ("PMID: 31452104", ("pmid", "31452104")),
    ("https://pubmed.ncbi.nlm.nih.gov/31452104/", ("pmid", "31452104")),
    ("not an id", None),
])
def test_identifiers_are_read_in_the_forms_researchers_write(text: str, expected: tuple[str, str] | None) -> None:
    assert parse(text) == expected


def test_a_doi_an_arxiv_id_and_a_pmid_are_added_with_their_metadata_then_not_again(
        assistant: Assistant, server: ScholarlyServer) -> None:
    report = assistant.add(["https://doi.org/10.1234/OA.1", "arXiv:2401.00001v2", "PMID:31000001"])
    assert (report.added, report.rejected) == (3, [])
    hits = {h.abstract.title: h.abstract for h in assistant.search("reef fish heatwave statins stroke lattice", k=10)}
    reef, lattice, statins = (hits["Reef fish recover after heatwaves"], hits["Sparse Lattice Attention"],
                              hits["Statins and stroke in older adults"])
    assert (reef.doi, reef.year, reef.authors) == ("10.1234/oa.1", 2021, ("Ana Lima", "Ben Okafor"))
    assert (lattice.arxiv_id, lattice.year, lattice.authors) == ("2401.00001", 2024, ("Chen Wei", "Dana Fox"))
    assert (statins.pmid, statins.doi, statins.year) == ("31000001", "10.1000/pm.1", 2019)
    assert statins.text.startswith("BACKGROUND: Statins") and "CONCLUSIONS: Statins reduce stroke" in statins.text
    assert all("mailto:lab@example.org" in r.headers["User-Agent"] for r in server.requests)
    asked = len(server.requests)

    again = assistant.add(["10.1234/oa.1", "2401.00001", "31000001"])
    assert (again.added, again.duplicates, again.by_identifier) == (0, 3, 3)
    assert len(server.requests) == asked  # held papers are not fetched again


def test_crossref_fills_in_when_openalex_lacks_the_doi(assistant: Assistant, server: ScholarlyServer) -> None:
    report = assistant.add(["10.1234/cr.1"])
    assert report.added == 1
    [hit] = assistant.search("Andean glacier retreat", k=1)
    assert hit.abstract.title == "Andean glaciers in retreat"
    assert hit.abstract.text == CR_TEXT  # the JATS markup and its "Abstract" heading are gone
    assert hit.abstract.authors == ("Rosa Quispe",)
    assert [r.service for r in server.requests] == ["openalex", "crossref"]


def test_what_cannot_be_had_is_reported_by_name_and_the_rest_added(assistant: Assistant) -> None:
    report = assistant.add(["10.1234/oa.1", "10.1234/missing", "10.1234/noabs", "2401.00002", "2401.99999",
                            "31000002", "31000009", "hello"])
    assert report.added == 1
    why = {r.source: r.reason for r in report.rejected}
    assert why["doi:10.1234/missing"].startswith("no such DOI")
    assert "has no abstract" in why["doi:10.1234/noabs"]
    assert why["arXiv:2401.00002"].startswith("withdrawn")
    assert why["arXiv:2401.99999"].startswith("no such arXiv ID")
    assert why["PMID:31000002"].startswith("PubMed holds no abstract")
    assert why["PMID:31000009"].startswith("no such PubMed ID")
    assert "not a DOI, arXiv ID or PubMed ID" in why["hello"]
    assert "doi:10.1234/missing" in report.summary()


def test_a_429_is_retried_after_its_retry_after(assistant: Assistant, server: ScholarlyServer) -> None:
    server.fail("eutils", Reply(429, '{"error":"API rate limit exceeded","count":"4","limit":"3"}',
                                {"Retry-After": "2", "Content-Type": "application/json"}))
    report = assistant.add(["31000001"])
    assert report.added == 1
    first, second = server.asked("eutils")
    assert second.at - first.at >= 1.9


def test_a_malformed_record_is_rejected_by_name(assistant: Assistant, server: ScholarlyServer) -> None:
    server.fail("openalex", Reply(200, '{"id": "https://openalex.org/W1", "title": "cut off'))
    report = assistant.add(["10.1234/oa.1"])
    assert report.added == 0
    assert [(r.source, r.reason) for r in report.rejected] == [
        ("doi:10.1234/oa.1", "OpenAlex sent a record that cannot be read; try again later")]


def test_a_service_down_says_so_in_one_line_and_adds_nothing(assistant: Assistant, server: ScholarlyServer) -> None:
    server.fail("arxiv", *[Reply(503, "Service Unavailable", {"Retry-After": "0"})] * 4)
    assistant.fetcher.client.sleep = lambda seconds: None  # arXiv's pace is tested elsewhere
    with pytest.raises(ServiceError, match=r"^arXiv answered HTTP 503 4 times: it is busy or down. Try again later$"):
        assistant.add(["10.1234/oa.1", "2401.00001"])
    assert assistant.sources() == {}  # the DOI fetched before the failure was not indexed either


def test_offline_says_what_to_do_and_changes_nothing(tmp_path: Path) -> None:
    closed = f"http://127.0.0.1:{free_port()}"
    assistant = Assistant(data_dir=tmp_path / "index", auto_ingest=False, arxiv_url=closed)
    assistant.fetcher.client.sleep = lambda seconds: None  # the retries' backoff is not what is tested here
    with pytest.raises(ServiceError) as raised:
        assistant.add(["2401.00001"])
    message = str(raised.value)
    assert "cannot reach arXiv" in message and "ASSISTANT_ARXIV_URL" in message and "Errno" not in message
    assert "\n" not in message
    assert assistant.sources() == {}


def test_a_search_adds_the_papers_it_finds(assistant: Assistant, server: ScholarlyServer) -> None:
    for n in range(3, 8):
        server.pubmed[f"3100000{n}"] = pubmed_article(f"3100000{n}", f"Exercise trial number {n}", [(
            "RESULTS", f"Walking {n} thousand steps a day lowered blood pressure in trial {n} of our series.")],
            [("Ann", "Bo")], 2020)
    server.pubmed_searches["walking blood pressure"] = [f"3100000{n}" for n in range(3, 8)]
    report = assistant.add_search("pubmed", "walking blood pressure", limit=3)
    assert report.added == 3
    assert server.asked("eutils")[0].query["retmax"] == ["3"]

    server.arxiv_searches["all:lattice AND all:attention"] = ["2401.00001"]
    assert assistant.add_search("arxiv", "lattice attention", limit=5).added == 1
    assert assistant.add_search("arxiv", "lattice attention", limit=5).duplicates == 1
    first, second = server.asked("arxiv")
    assert second.at - first.at >= 2.9  # arXiv asks for one request every three seconds


def test_the_cli_adds_by_identifier(server: ScholarlyServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("ASSISTANT_DATA_DIR", str(tmp_path / "index"))
    monkeypatch.setenv("ASSISTANT_AUTO_INGEST", "false")
    for name, url in server.settings().items():
        monkeypatch.setenv(f"ASSISTANT_{name.upper()}", url)
    assert main(["add", "10.1234/oa.1", "arXiv:2401.00001", "PMID:31000001", "10.1234/missing"]) == 0
    out = capsys.readouterr().out
    assert "added 3 abstracts" in out and "doi:10.1234/missing: no such DOI" in out
    assert main(["add", "10.1234/oa.1"]) == 0
    assert "added 0 abstracts" in capsys.readouterr().out
    monkeypatch.setenv("ASSISTANT_ARXIV_URL", f"http://127.0.0.1:{free_port()}")
    monkeypatch.setenv("ASSISTANT_REMOTE_TIMEOUT", "1")
    started = time.monotonic()
    assert main(["add", "2401.99998"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: cannot reach arXiv") and err.count("\n") == 1
    assert time.monotonic() - started < 20
