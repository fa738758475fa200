"""The app with accounts, probed as an outsider, as bob and as alice (each holding a private
paper), through gradio_client and plain HTTP, and in headless Chromium; on embedded Chroma and
on a `chroma run` server. Accounts are made with the CLI; the private papers are ingested
through ``Assistant(user=...)`` while the app runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from assistant import Assistant
from browser import Watched, start_app, stop
from conftest import ChromaServer
from test_app import XSS_QUESTION, XSS_RECORD, browser, reply_text  # noqa: F401 - browser: a fixture
from test_libraries import ALICE_PAPER, SECRET, SHARED_RECORDS, _jsonl

PASSWORDS = {"alice": "alice's password", "bob": "bob's password", "carol": "carol's password"}
BOB_SECRET = "tarnwick"
BOB_PAPER = {"id": "bob-unpublished", "title": "Tarnwick sediment cores",
             "abstract": "Tarnwick sediment cores record 12,000 years of monsoon variability in layered clay."}
ALICE_QUESTION = "How efficiently do velmorite crystals conduct protons?"
UPLOADED = {"id": "alice-upload", "title": "Quellinite batteries",
            "abstract": "Quellinite cathodes keep 91 percent of their capacity after 5,000 cycles."}


def _cli(data_dir: Path, *args: str, stdin: str = "", **settings: str) -> subprocess.CompletedProcess:
    command = [str(Path(sys.executable).parent / "assistant"), *args]
    env = {**os.environ, "ASSISTANT_DATA_DIR": str(data_dir), **{f"ASSISTANT_{k.upper()}": v for k, v in settings.items()}}
    return subprocess.run(command, input=stdin, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module", params=["embedded", "chroma-server"])
def lab(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The app over a shared library, with alice, bob and carol made through the CLI, and
    alice's and bob's private papers ingested through the Python API once the app is up."""
    folder = tmp_path_factory.mktemp("lab")
    data = folder / "data"
    server = ChromaServer(folder / "server").start() if request.param == "chroma-server" else None
    settings = {"chroma_host": "127.0.0.1", "chroma_port": str(server.port)} if server else {}
    Assistant(data_dir=data, auto_ingest=False, **settings).ingest([_jsonl(folder / "shared.jsonl", SHARED_RECORDS)])
    for name, password in PASSWORDS.items():
        made = _cli(data, "users", "add", name, stdin=password + "\n")
        assert made.returncode == 0, made.stderr
    assert _cli(data, "users", "list").stdout.split() == ["alice", "bob", "carol"]
    uploads = folder / "gradio"
    os.environ["GRADIO_TEMP_DIR"] = str(uploads)  # the app's upload folder, inherited by its process
    try:
        process, url = start_app(data, folder / "app.log", auto_ingest="false", **settings)
    finally:
        del os.environ["GRADIO_TEMP_DIR"]
    alice = Assistant(data_dir=data, user="alice", **settings)
    assert alice.ingest([_jsonl(folder / "alice_private.jsonl", [ALICE_PAPER, XSS_RECORD])]).added == 2
    assert Assistant(data_dir=data, user="bob", **settings).ingest([_jsonl(folder / "bob.jsonl", [BOB_PAPER])]).added == 1
    time.sleep(1.5)  # the app looks for changes to the index once a second
    yield {"url": url, "data": data, "uploads": uploads, "folder": folder, "settings": settings}
    stop(process)
    if server:
        server.stop()


def _client(url: str, name: str) -> Any:
    from gradio_client import Client

    return Client(url, auth=(name, PASSWORDS[name]), verbose=False)


@contextmanager
def _logged_in(url: str, name: str) -> Iterator[httpx.Client]:
    """An HTTP session holding the login cookie."""
    with httpx.Client(base_url=url, timeout=60) as session:
        assert session.post("login", data={"username": name, "password": PASSWORDS[name]}).status_code == 200
        yield session


@pytest.mark.slow
def test_an_outsider_gets_nothing_from_any_route(lab: dict[str, Any]) -> None:
    from gradio_client.exceptions import AuthenticationError

    url = lab["url"]
    with pytest.raises(AuthenticationError):
        _client(url, "alice").__class__(url, verbose=False)
    for path in ("config", "gradio_api/info", "gradio_api/openapi.json", "gradio_api/queue/data?session_hash=x"):
        assert httpx.get(url + path).status_code == 401, path
    assert httpx.get(url + f"gradio_api/file={lab['uploads']}/x/secret.jsonl").status_code == 403  # served to no one
    for path in ("gradio_api/call/search", "gradio_api/call/chat", "gradio_api/queue/join", "gradio_api/upload"):
        assert httpx.post(url + path, json={"data": [SECRET, 5]}).status_code == 401, path
    page = httpx.get(url).text
    assert SECRET not in page.lower() and "alice_private" not in page
    assert httpx.post(url + "login", data={"username": "bob", "password": "wrong password"}).status_code == 400
    assert httpx.post(url + "login", data={"username": "nobody", "password": PASSWORDS["bob"]}).status_code == 400


@pytest.mark.slow
def test_bob_never_sees_alices_private_paper(lab: dict[str, Any]) -> None:
    bob = _client(lab["url"], "bob")
    html, records = bob.predict("velmorite proton conductors", 50, api_name="/search")
    assert records and {r["id"] for r in records} == {BOB_PAPER["id"], *(r["id"] for r in SHARED_RECORDS)}
    assert SECRET not in html.lower() and "alice_private" not in html
    _, none = bob.predict("velmorite", 10, "alice_private.jsonl", api_name="/search")
    assert none == []
    _, chat, panel = bob.predict(ALICE_QUESTION, api_name="/chat")
    assert "cerium" not in reply_text(chat).lower() and SECRET not in panel.lower()  # the reply may echo the question
    with _logged_in(lab["url"], "bob") as session:
        config = session.get("config").text
        assert "alice_private" not in config and SECRET not in config.lower()


@pytest.mark.slow
def test_alice_finds_and_is_answered_from_her_private_paper_and_sees_nothing_of_bobs(lab: dict[str, Any]) -> None:
    alice = _client(lab["url"], "alice")
    _, records = alice.predict("velmorite proton conductors", 5, api_name="/search")
    assert records[0]["id"] == ALICE_PAPER["id"]
    _, chat, panel = alice.predict(ALICE_QUESTION, api_name="/chat")
    assert "Velmorite proton conductors" in panel
    html, records = alice.predict("tarnwick sediment cores monsoon", 50, api_name="/search")
    assert BOB_PAPER["id"] not in {r["id"] for r in records} and BOB_SECRET not in html.lower()
    _, chat, panel = alice.predict("What do Tarnwick sediment cores record?", api_name="/chat")
    assert "layered clay" not in reply_text(chat).lower() and BOB_SECRET not in panel.lower()
    _, bobs = _client(lab["url"], "bob").predict("tarnwick sediment cores monsoon", 5, api_name="/search")
    assert bobs[0]["id"] == BOB_PAPER["id"], "the probe would have found it"


@pytest.mark.slow
def test_a_removed_users_session_and_library_are_gone(lab: dict[str, Any]) -> None:
    carol = _client(lab["url"], "carol")
    paper = _jsonl(lab["folder"] / "carol.jsonl", [{**BOB_PAPER, "id": "carol-1", "title": "Carol's cores"}])
    assert Assistant(data_dir=lab["data"], user="carol", **lab["settings"]).ingest([paper]).added == 1
    time.sleep(1.5)
    _, records = carol.predict("tarnwick sediment cores", 5, api_name="/search")
    assert records[0]["id"] == "carol-1"
    removed = _cli(lab["data"], "users", "remove", "carol", **lab["settings"])
    assert removed.returncode == 0 and "the 1 abstracts of their private library" in removed.stdout, removed.stderr
    message, records = carol.predict("tarnwick sediment cores", 5, api_name="/search")
    assert records == [] and "the account carol no longer exists" in message, "her open session ends with her account"
    assert httpx.post(lab["url"] + "login", data={"username": "carol", "password": PASSWORDS["carol"]}).status_code == 400
    _, records = _client(lab["url"], "bob").predict("tarnwick sediment cores", 10, api_name="/search")
    assert "carol-1" not in {r["id"] for r in records}


@pytest.mark.slow
def test_an_upload_goes_to_the_uploaders_library_and_its_file_cannot_be_fetched(lab: dict[str, Any]) -> None:
    from gradio_client import handle_file

    upload = _jsonl(lab["folder"] / "quellinite.jsonl", [UPLOADED])
    with _logged_in(lab["url"], "alice") as session:  # the server path the upload gets (content-addressed)
        with upload.open("rb") as handle:
            [path] = session.post("gradio_api/upload", files={"files": handle}).json()
    report, *_ = _client(lab["url"], "alice").predict(
        [handle_file(str(upload))], False, "All sources", "All sources", api_name="/add_papers")
    assert "added 1 abstracts" in report
    for name in ("alice", "bob"):
        with _logged_in(lab["url"], name) as session:
            assert session.get(f"gradio_api/file={path}").status_code in (403, 404), name
    left = [p for p in lab["uploads"].rglob("*") if p.is_file() and b"Quellinite" in p.read_bytes()]
    assert left == [], "the uploaded file is deleted once indexed"
    _, mine = _client(lab["url"], "alice").predict("quellinite cathodes", 3, api_name="/search")
    _, his = _client(lab["url"], "bob").predict("quellinite cathodes", 3, api_name="/search")
    assert mine[0]["id"] == UPLOADED["id"] and UPLOADED["id"] not in {r["id"] for r in his}
    refused, *_ = _client(lab["url"], "bob").predict(
        [handle_file(str(upload))], True, "All sources", "All sources", api_name="/add_papers")
    assert "only admins add to the shared library" in refused


@pytest.mark.slow
def test_an_upload_waiting_to_be_indexed_is_served_to_no_one(lab: dict[str, Any]) -> None:
    """Between Gradio's upload and its indexing the file sits in the upload folder: no user,
    the uploader included, is served it, by any spelling of its path."""
    waiting = _jsonl(lab["folder"] / "waiting.jsonl", [{**UPLOADED, "id": "alice-waiting", "title": "Vorstane"}])
    with _logged_in(lab["url"], "alice") as session, waiting.open("rb") as handle:
        [path] = session.post("gradio_api/upload", files={"files": handle}).json()
    assert Path(path).is_relative_to(lab["uploads"]) and b"Vorstane" in Path(path).read_bytes()
    parent = Path(path).parent
    spellings = [f"gradio_api/file={path}", f"gradio_api/file/{path}",
                 f"gradio_api/file={parent}/../{parent.name}/{Path(path).name}"]
    for name in ("alice", "bob"):
        with _logged_in(lab["url"], name) as session:
            for spelling in spellings:
                refused = session.get(spelling)
                assert refused.status_code == 403 and b"Vorstane" not in refused.content, (name, spelling)
                assert "not served" in refused.text
    assert Path(path).exists(), "refused by the app, not gone"


def _log_in(browser: Any, url: str, name: str) -> Watched:
    watched = Watched(browser, url)
    page = watched.page
    page.locator("input[type=text]").first.fill(name)
    page.locator("input[type=password]").first.fill(PASSWORDS[name])
    page.locator("input[type=password]").first.press("Enter")
    page.locator("#question textarea").wait_for(timeout=60_000)
    return watched


def _search(watched: Watched, query: str) -> str:
    """The search tab's results for this query (an empty search first clears the previous
    ones, which another query may render alike)."""
    page = watched.page
    page.locator("#search-tab-button, button[role=tab]:has-text('Search')").first.click()
    box, results = page.locator("#search-query textarea"), page.locator("#search-results")
    box.fill("")
    box.press("Enter")
    results.get_by_text("Type a query").wait_for(timeout=60_000)
    box.fill(query)
    box.press("Enter")
    results.locator(".results, .no-results").first.wait_for(timeout=60_000)
    return results.inner_html()


@pytest.mark.slow
def test_in_the_browser_bob_sees_nothing_of_alices_and_her_abstracts_run_nothing(browser: Any, lab: dict[str, Any]) -> None:
    bob = _log_in(browser, lab["url"], "bob")
    bob.page.locator("#status").get_by_text("4 abstracts indexed").wait_for(timeout=30_000)  # his view, once loaded
    bob.ask(ALICE_QUESTION)
    answer = bob.page.locator('#chat [data-testid="bot"]').last.inner_text()
    assert answer and "cerium" not in answer.lower() and SECRET not in bob.page.locator("#sources").inner_text().lower()
    assert SECRET not in _search(bob, "velmorite proton conductors").lower()
    assert "zeolite" not in _search(bob, XSS_QUESTION).lower()
    assert "alice_private" not in bob.page.content()

    alice = _log_in(browser, lab["url"], "alice")
    alice.ask(XSS_QUESTION)
    assert "zeolite" in alice.page.locator("#sources").inner_text().lower()
    results = _search(alice, XSS_QUESTION)
    assert "Krypton-selective hexagonal zeolite membranes" in results and "&lt;script&gt;" in results
    assert alice.page.evaluate("window.__xss") is None and alice.dialogs == [] and bob.dialogs == []
    assert alice.outside == [] and bob.outside == []


@pytest.mark.slow
def test_behind_a_trusted_proxy_its_header_names_the_user(lab: dict[str, Any]) -> None:
    from gradio_client import Client

    process, url = start_app(lab["data"], lab["folder"] / "proxy.log", headers={"X-Forwarded-User": "bob"},
                             auto_ingest="false", app_auth_header="X-Forwarded-User", **lab["settings"])
    try:
        assert httpx.get(url + "config").status_code == 401
        assert httpx.get(url + "config", headers={"X-Forwarded-User": "mallory"}).status_code == 401, "not an account"
        assert httpx.get(url + "config", headers={"X-Forwarded-User": "bob"}).status_code == 200
        bob = Client(url, headers={"X-Forwarded-User": "bob"}, verbose=False)
        _, records = bob.predict("velmorite proton conductors", 10, api_name="/search")
        assert records and ALICE_PAPER["id"] not in {r["id"] for r in records}
        _, records = Client(url, headers={"X-Forwarded-User": "alice"}, verbose=False).predict(
            "velmorite proton conductors", 10, api_name="/search")
        assert records[0]["id"] == ALICE_PAPER["id"]
    finally:
        stop(process)


@pytest.mark.slow
def test_wrong_passwords_from_one_address_lock_it_out_across_a_restart(tmp_path: Path) -> None:
    """Gradio's login hands the check only a name and a password: the app's middleware gives it
    the client's address, and the counts are kept on disk."""
    data = tmp_path / "data"
    Assistant(data_dir=data, auto_ingest=False).ingest([_jsonl(tmp_path / "shared.jsonl", SHARED_RECORDS)])
    assert _cli(data, "users", "add", "alice", stdin=PASSWORDS["alice"] + "\n").returncode == 0
    process, url = start_app(data, tmp_path / "app.log", auto_ingest="false")
    try:
        login = lambda name, password: httpx.post(url + "login", data={"username": name, "password": password})  # noqa: E731
        assert all(login(f"guess{n}", "wrong password").status_code == 400 for n in range(20))
        assert login("alice", PASSWORDS["alice"]).status_code == 400, "this address is locked out, whatever the name"
    finally:
        stop(process)
    process, url = start_app(data, tmp_path / "app2.log", auto_ingest="false")
    try:
        assert httpx.post(url + "login", data={"username": "alice", "password": PASSWORDS["alice"]}).status_code == 400
    finally:
        stop(process)
    failures = json.loads((data / "login_failures.json").read_text())
    assert failures["address:127.0.0.1"][1] > time.time(), "locked, on disk, for this address"
