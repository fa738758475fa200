"""Zotero sync through pyzotero's real client against a local stand-in of the Zotero Web API:
the first sync indexes the library, later ones fetch only what changed and take out what left."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from assistant import Assistant
from assistant.cli import main
from assistant.remote.http import ServiceError
from conftest import free_port
from scholarly_server import ScholarlyServer

TOPICS = ["glaciers", "coral reefs", "soil microbes", "tidal energy", "bird migration", "volcanic ash",
          "river deltas", "urban heat", "seagrass", "permafrost"]


def _item(n: int, version: int, abstract: bool = True, **fields: object) -> dict:
    topic = TOPICS[n % len(TOPICS)]
    return {"version": version, "itemType": "journalArticle", "title": f"Study {n} of {topic}",
            "creators": [{"creatorType": "author", "firstName": "Ana", "lastName": f"Author{n}"}],
            "abstractNote": (f"Study {n} measures {topic} at site {n} over {n % 9 + 2} years and reports a change "
                             f"of {n} percent in the main outcome.") if abstract else "",
            "date": f"{2000 + n % 20}-05-01", "DOI": f"10.5555/study.{n}", "extra": f"PMID: {90000 + n}", **fields}


@pytest.fixture
def server() -> Iterator[ScholarlyServer]:
    with ScholarlyServer() as server:
        for n in range(200):
            server.zotero[f"K{n:07d}"] = _item(n, version=10 + n % 7, abstract=n % 20 != 0)
        server.zotero["KNOTE000"] = {"version": 12, "itemType": "note", "note": "<p>reading list</p>"}
        yield server


def _indexed(assistant: Assistant) -> set[str]:
    return {key.removeprefix("zotero:users/4242/") for key in assistant.store.indexed_id_list()}


def _expected(server: ScholarlyServer) -> set[str]:
    return {k for k, d in server.zotero.items() if not d.get("deleted") and d.get("abstractNote")}


@pytest.mark.slow
def test_a_second_sync_fetches_only_what_changed_and_the_index_matches_the_library(
        server: ScholarlyServer, tmp_path: Path) -> None:
    assistant = Assistant(data_dir=tmp_path / "index", auto_ingest=False, **server.settings())
    first = assistant.zotero_sync()
    assert (first.fetched, first.ingest.added) == (201, 190)
    assert len(first.without_abstract) == 10 and first.without_abstract[0] == ("Study 0 of glaciers", "doi:10.5555/study.0")
    assert "assistant add doi:10.5555/study.0" in first.summary()
    assert _indexed(assistant) == _expected(server)

    server.zotero["K0000001"]["abstractNote"] = "Study 1 now reports that glaciers in the Alps lost 12 percent of ice."
    server.zotero["K0000001"]["version"] = 30
    server.zotero["K0000002"].update(title="Study 2, retitled", version=31)
    server.zotero["K9999999"] = _item(999, version=32)
    server.zotero["K0000003"].update(deleted=1, version=33)  # moved to the trash
    del server.zotero["K0000004"]  # deleted for good
    server.zotero_deleted_at = 34
    requests_before = len(server.requests)

    second = assistant.zotero_sync()
    asked = [r.query.get("itemKey", [""])[0] for r in server.requests[requests_before:]]
    assert sorted(k for keys in asked if keys for k in keys.split(",")) == ["K0000001", "K0000002", "K9999999"]
    assert (second.fetched, second.removed, second.ingest.added) == (3, 4, 3)
    assert _indexed(assistant) == _expected(server)
    [hit] = assistant.search("Alps glaciers lost 12 percent of ice", k=1)
    assert hit.abstract.text.startswith("Study 1 now reports") and hit.abstract.pmid == "90001"

    third = assistant.zotero_sync()
    assert (third.fetched, third.removed, third.ingest.added) == (0, 0, 0)
    assert len(server.requests) - requests_before == 3 + 1  # the second sync's 3 requests, then one version check


def test_a_group_library_goes_to_the_shared_library_and_a_users_to_their_own(
        server: ScholarlyServer, tmp_path: Path) -> None:
    for key in list(server.zotero)[5:]:
        del server.zotero[key]
    operator = Assistant(data_dir=tmp_path / "index", auto_ingest=False, **server.settings())
    operator.accounts.add("ann", "a long password")
    assert operator.as_user("ann").zotero_sync().ingest.added == 4
    assert operator.store.library_count("user:ann") == 4 and operator.store.library_count("shared") == 0

    server.zotero_library = ("groups", "77")
    group = Assistant(data_dir=tmp_path / "index", auto_ingest=False, **server.settings())
    with pytest.raises(ValueError, match="only admins add to the shared library"):
        group.as_user("ann").zotero_sync()
    assert group.zotero_sync().ingest.added == 4  # the operator may; the group's records are its own
    assert group.store.library_count("shared") == 4


def test_a_private_web_library_needs_its_key_and_an_unreachable_zotero_says_what_to_do(
        server: ScholarlyServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    server.zotero_key = "right-key"
    for key in list(server.zotero)[5:-1]:  # five items and the note
        del server.zotero[key]
    settings = {**server.settings(), "data_dir": str(tmp_path / "index"), "auto_ingest": "false"}
    for name, value in settings.items():
        monkeypatch.setenv(f"ASSISTANT_{name.upper()}", value)
    monkeypatch.setenv("ASSISTANT_ZOTERO_API_KEY", "wrong-key")
    assert main(["zotero", "sync"]) == 2
    assert "Zotero refused the sync of users/4242" in capsys.readouterr().err
    monkeypatch.setenv("ASSISTANT_ZOTERO_API_KEY", "right-key")
    assert main(["zotero", "sync"]) == 0
    assert "fetched 6 changed items" in capsys.readouterr().out

    closed = Assistant(data_dir=tmp_path / "other", auto_ingest=False, zotero_library_id="1",
                       zotero_url=f"http://127.0.0.1:{free_port()}")
    with pytest.raises(ServiceError, match="cannot reach Zotero at http://127.0.0.1:"):
        closed.zotero_sync()
    with pytest.raises(ValueError, match="ASSISTANT_ZOTERO_LIBRARY_ID"):
        Assistant(data_dir=tmp_path / "other", auto_ingest=False, zotero_library_id=None).zotero_sync()
