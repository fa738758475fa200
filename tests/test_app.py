"""The chat app in a subprocess on a free port: through gradio_client (one client, eight at
once, a login), and in a real headless Chromium driven by playwright."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

import assistant  # noqa: F401 - sets HF_HUB_OFFLINE before gradio_client is imported

from browser import CHROMIUM, CHROMIUM_FLAGS, Watched, start_app, stop
from conftest import ChromaServer, free_port, wait_until_up
from scholarly_server import ScholarlyServer, arxiv_entry, openalex_work

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"
FORMATS = ROOT / "tests" / "data" / "formats"
QUESTION = "What technique did the Pangu Ultra team introduce to eliminate loss spikes?"
PANGU_FILE, OTHER_FILE = "000_f4a0e3667c329c35.txt", "003_459aabd20c272f9c.txt"
XSS_TITLE = '<img src=x onerror="window.__xss=1;alert(1)"> Krypton-selective hexagonal zeolite membranes'
XSS_RECORD = {
    "id": "xss-1",
    "title": XSS_TITLE,
    "abstract": "Hexagonal zeolite membranes separate krypton from xenon with a selectivity of 42 at room "
                "temperature. <script>window.__xss=2;alert(2)</script> The membranes are grown on porous "
                "alumina and stay stable for 300 hours of continuous operation.",
    "url": "javascript:window.__xss=3",
}
XSS_QUESTION = "What selectivity do hexagonal zeolite membranes reach for krypton over xenon?"


def reply_text(chat: list[dict[str, Any]]) -> str:
    """The text of the last chat message as gradio_client returns it (a string or parts)."""
    content = chat[-1]["content"]
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content)
    return str(content)


@pytest.fixture(scope="module")
def app_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The app on the bundled corpus (indexed at start, as on a first run)."""
    process, url = start_app(tmp_path_factory.mktemp("app-index"), tmp_path_factory.mktemp("app") / "app.log")
    yield url
    stop(process)


@pytest.mark.slow
def test_chat_endpoint_answers_with_citations(app_url: str) -> None:
    from gradio_client import Client

    message, chat, panel = Client(app_url, verbose=False).predict(QUESTION, api_name="/chat")
    assert message == ""
    reply = reply_text(chat)
    assert 'href="#t1-source-1"' in reply and 'id="t1-source-1"' in reply and "sandwich" in reply.lower()
    assert 'id="source-1"' in panel and "Pangu Ultra" in panel


@pytest.mark.slow
def test_chat_endpoints_first_update_already_carries_the_sources(app_url: str) -> None:
    from gradio_client import Client

    job = Client(app_url, verbose=False).submit(QUESTION, api_name="/chat")
    updates = list(job)
    _, first_chat, first_panel = updates[0]
    assert "retrieved-note" in first_panel and "Pangu Ultra" in first_panel
    first_reply = reply_text(first_chat)
    assert 'class="findings"' in first_reply and "Pangu Ultra" in first_reply, "the findings come with the sources"
    assert "Reading" in first_reply and "[1]" not in first_reply, "the first update came after the answer"
    assert 'id="source-1"' in job.outputs()[-1][2]


@pytest.mark.slow
def test_search_endpoint_returns_ranked_abstracts_without_the_model(app_url: str) -> None:
    from gradio_client import Client

    client = Client(app_url, verbose=False)
    results, records = client.predict("depth-scaled sandwich normalization loss spikes", 3, api_name="/search")
    assert [r["rank"] for r in records] == [1, 2, 3] and "Pangu Ultra" in records[0]["passage"] + records[0]["title"]
    assert 'id="result-1"' in results and '<mark class="passage">' in results
    _, filtered = client.predict("sandwich normalization", 5, OTHER_FILE, api_name="/search")
    assert filtered and {r["source"] for r in filtered} == {OTHER_FILE}
    message, none = client.predict("sandwich normalization", 5, "All sources", "20x", api_name="/search")
    assert "is not a year: type one such as 2021" in message and none == []
    _, dated = client.predict("sandwich normalization", 5, "All sources", "2020", "2024", api_name="/search")
    assert dated == []  # the bundled Daily Papers abstracts carry no year


@pytest.mark.slow
def test_number_of_sources_and_source_filter_restrict_retrieval(app_url: str) -> None:
    from gradio_client import Client

    _, _, panel = Client(app_url, verbose=False).predict(QUESTION, 1, OTHER_FILE, api_name="/chat")
    assert "Pangu Ultra" not in panel
    assert panel.count(OTHER_FILE) == 1 and PANGU_FILE not in panel


@pytest.mark.slow
def test_eight_simultaneous_clients_all_get_answers(app_url: str) -> None:
    from gradio_client import Client

    questions = [json.loads(line)["question"] for line in (ROOT / "tests/data/dev.jsonl").open()][:8]

    def ask(question: str) -> str:
        return reply_text(Client(app_url, verbose=False).predict(question, api_name="/chat")[1])

    with ThreadPoolExecutor(len(questions)) as pool:
        replies = list(pool.map(ask, questions))
    assert len(replies) == 8
    for reply in replies:
        assert reply.strip() and not reply.startswith("⚠"), reply


@pytest.mark.slow
def test_idle_connections_hold_no_worker_and_an_oversized_question_is_refused_at_once(app_url: str) -> None:
    """Two hundred connections that send nothing, or half a request, while one user asks: the
    user is answered. A question over the size limit is told so before any search."""
    from gradio_client import Client

    host, port = httpx.URL(app_url).host, httpx.URL(app_url).port
    idle = [socket.create_connection((host, port)) for _ in range(100)]
    half = [socket.create_connection((host, port)) for _ in range(100)]
    try:
        for connection in half:
            connection.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")  # headers never finished
        client = Client(app_url, verbose=False)
        answer = reply_text(client.predict(QUESTION, api_name="/chat")[1])
        started = time.perf_counter()
        refused = reply_text(client.predict("Why? " * 20_000, api_name="/chat")[1])
        seconds = time.perf_counter() - started
    finally:
        for connection in idle + half:
            connection.close()
    assert "Pangu" in answer or "[1]" in answer, answer
    assert refused.startswith("⚠") and "99,999 characters long; the limit is 4,000" in refused, refused[:300]
    assert seconds < 5, "refused without waiting for search or the model"


@pytest.mark.slow
def test_every_user_gets_the_evidence_before_the_model_is_free(app_url: str) -> None:
    """Six users ask at once: each first update carries the sources and findings before the
    model has finished even one answer; those waiting see their place."""
    from gradio_client import Client

    questions = [json.loads(line)["question"] for line in (ROOT / "tests/data/dev.jsonl").open()][:6]

    def ask(question: str) -> tuple[float, float, list[str]]:
        job = Client(app_url, verbose=False).submit(question, api_name="/chat")
        first, replies = None, []
        for _, chat, panel in job:
            if not isinstance(chat, list):  # an update that changes nothing (a waiting question's heartbeat)
                continue
            if first is None:
                first = time.perf_counter()
                assert "retrieved-note" in panel, "the first update carries the sources"
            replies.append(reply_text(chat))
        assert 'class="findings"' in replies[0], "and the findings"
        return first, time.perf_counter(), replies

    with ThreadPoolExecutor(len(questions)) as pool:
        runs = list(pool.map(ask, questions))
    first_answer = min(done for _, done, _ in runs)
    assert all(first < first_answer for first, _, _ in runs), "someone's evidence waited for the model"
    assert any("Waiting for the model: " in reply and "ahead of yours in the queue" in reply
               for _, _, replies in runs for reply in replies)
    assert not [replies[-1] for _, _, replies in runs if replies[-1].startswith("⚠")]


@pytest.mark.slow
def test_users_behind_a_stuck_model_server_each_hear_what_to_do_within_about_one_timeout(tmp_path: Path) -> None:
    """The openai backend, one answer at a time, and a model server that accepts requests and
    never answers: the first question waits out the timeout; the three waiting behind it get
    the same advice at their turn, not a timeout each."""
    from gradio_client import Client
    from scripted_server import MODEL, ScriptedServer

    with ScriptedServer() as server:
        server.stall_s = 60.0
        process, url = start_app(tmp_path / "index", tmp_path / "app.log", llm_backend="openai", llm_model=MODEL,
                                 openai_base_url=server.base_url, openai_timeout="4", openai_max_retries="0",
                                 app_concurrency="1")
        try:
            clients = [Client(url, verbose=False) for _ in range(4)]
            started = time.monotonic()
            with ThreadPoolExecutor(len(clients)) as pool:
                replies = list(pool.map(lambda c: reply_text(c.predict(QUESTION, api_name="/chat")[1]), clients))
            seconds = time.monotonic() - started
        finally:
            stop(process)
    assert all(r.startswith("⚠") and "did not answer within 4.0 s" in r and "ASSISTANT_OPENAI_TIMEOUT" in r
               for r in replies), replies
    assert sum("asked again in" in r for r in replies) == 3, "the three behind heard without asking it again"
    assert seconds < 3 * 4, f"the line drained in about one timeout, not one per user ({seconds:.1f} s)"


@pytest.mark.slow
def test_a_newer_question_from_the_same_chat_takes_the_waiting_ones_place(tmp_path: Path) -> None:
    """One answer at a time and a model busy for a few seconds: a chat that asks again while its
    question still waits has that question told it was replaced, and only the newer one goes
    to the model."""
    from gradio_client import Client
    from scripted_server import MODEL, ScriptedServer

    with ScriptedServer() as server:
        server.stall_s = 4.0
        server.script(QUESTION, "Pangu Ultra uses depth-scaled sandwich normalization [@0].",
                      ["We present Pangu Ultra, a Large Language Model (LLM) with 135 billion parameters"])
        process, url = start_app(tmp_path / "index", tmp_path / "app.log", llm_backend="openai", llm_model=MODEL,
                                 openai_base_url=server.base_url, openai_timeout="30", app_concurrency="1")
        try:
            busy = Client(url, verbose=False).submit(QUESTION, api_name="/chat")
            chat = Client(url, verbose=False)  # one client, one session: one chat
            waiting = chat.submit(QUESTION, api_name="/chat")
            deadline = time.monotonic() + 60
            while not any(isinstance(o[1], list) and "Waiting for the model" in reply_text(o[1])
                          for o in waiting.outputs()):
                assert time.monotonic() < deadline and not waiting.done(), "the second question never waited"
                time.sleep(0.05)
            newer = chat.submit(QUESTION, api_name="/chat")
            replaced, answered = reply_text(waiting.result()[1]), reply_text(newer.result()[1])
            busy.result()
        finally:
            stop(process)
    assert "A newer question from this chat took this one's place in the queue" in html.unescape(replaced), replaced[-300:]
    assert "sandwich normalization" in answered and "[1]" in answered, answered[:300]
    assert len(server.prompts) == 2, "the replaced question never reached the model"


@pytest.mark.slow
def test_an_unusable_index_stops_the_app_with_its_fix(tmp_path: Path) -> None:
    """An index the store refuses (here: built with another embedder) ends `python app.py`
    with the store's message and the command that fixes it, not a traceback."""
    from assistant.index.store import ChromaStore
    from assistant.settings import Settings

    ChromaStore(Settings(data_dir=tmp_path), embedder_id="openai:text-embedding-3-small")
    env = {**os.environ, "ASSISTANT_DATA_DIR": str(tmp_path), "ASSISTANT_APP_PORT": str(free_port())}
    finished = subprocess.run([sys.executable, str(ROOT / "app.py")], env=env, cwd=ROOT,
                              capture_output=True, text=True, timeout=300)
    assert finished.returncode == 1
    assert "built with embedder 'openai:text-embedding-3-small'" in finished.stderr
    assert "assistant reset" in finished.stderr
    assert "Traceback" not in finished.stderr


@pytest.mark.slow
def test_ctrl_c_while_the_app_computes_sentence_vectors_ends_it_cleanly(sample_index: Any, tmp_path: Path) -> None:
    """Ctrl-C while the app computes sentence vectors ahead of questions (a daemon thread in
    onnxruntime): the app exits 0, where it used to abort as Python finalized ("terminate
    called without an active exception", SIGABRT)."""
    data_dir, port, log = tmp_path / "index", free_port(), tmp_path / "app.log"
    shutil.copytree(sample_index.settings.data_dir, data_dir)
    env = {**os.environ, "ASSISTANT_DATA_DIR": str(data_dir), "ASSISTANT_APP_PORT": str(port),
           "ASSISTANT_CACHE_DIR": str(tmp_path / "cache")}  # no sentence vectors kept yet
    process = subprocess.Popen([sys.executable, str(ROOT / "app.py")], env=env, cwd=ROOT, stdout=log.open("w"),
                               stderr=subprocess.STDOUT,  # SIGINT as a terminal's Ctrl-C delivers it
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    wait_until_up(f"http://127.0.0.1:{port}/", process, 300)
    time.sleep(3)  # into the warm-up: the bundled corpus's sentences take it 15-30 s
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=60) == 0, log.read_text()[-2000:]
    assert "terminate called" not in log.read_text()


@pytest.mark.slow
def test_the_zotero_button_syncs_the_servers_library_for_admins_only(tmp_path: Path) -> None:
    from gradio_client import Client

    from assistant.accounts import Accounts

    with ScholarlyServer() as server:
        for n in range(3):
            server.zotero[f"KEY{n:05d}"] = {
                "version": 5, "itemType": "journalArticle", "title": f"Seagrass study {n}", "creators": [],
                "abstractNote": f"Seagrass meadows at site {n} store twice as much carbon per hectare as forests do."}
        accounts = Accounts(tmp_path / "index")
        accounts.add("ann", "a long password")
        accounts.add("root", "a long password", admin=True)
        process, url = start_app(tmp_path / "index", tmp_path / "app.log", auto_ingest="false", **server.settings())
        try:
            sources = ("All sources", "All sources")
            refused, *_ = Client(url, auth=("ann", "a long password"), verbose=False).predict(
                *sources, api_name="/sync_zotero")
            assert "only admins sync the server&#x27;s Zotero library" in refused
            report, status, *_ = Client(url, auth=("root", "a long password"), verbose=False).predict(
                *sources, api_name="/sync_zotero")
            assert "fetched 3 changed items, took out 0; added 3 abstracts" in report, report
        finally:
            stop(process)


def test_login_is_required_when_configured(tmp_path: Path) -> None:
    from gradio_client import Client
    from gradio_client.exceptions import AuthenticationError

    process, url = start_app(tmp_path / "index", tmp_path / "app.log", auto_ingest="false",
                             app_username="ann", app_password="s3cret")
    try:
        assert httpx.get(url + "config").status_code == 401
        assert httpx.post(url + "login", data={"username": "ann", "password": "wrong"}).status_code == 400
        with pytest.raises(AuthenticationError):
            Client(url, verbose=False)
        _, chat, _ = Client(url, auth=("ann", "s3cret"), verbose=False).predict(QUESTION, api_name="/chat")
        assert "No indexed abstract is close enough" in reply_text(chat)  # the index is empty: an abstention, not an error
    finally:
        stop(process)


@pytest.mark.slow
def test_two_app_replicas_on_one_chroma_server_find_what_either_adds(tmp_path: Path) -> None:
    """Two app processes, their own data dirs, one `chroma run` server: a gzipped PubMed file
    uploaded to one is found by the other's search within a minute. The first takes one upload
    an hour from each user (here: each session)."""
    import gzip

    from gradio_client import Client, handle_file

    server = ChromaServer(tmp_path / "server").start()
    settings = {"auto_ingest": "false", "chroma_host": "127.0.0.1", "chroma_port": str(server.port)}
    first, first_url = start_app(tmp_path / "first", tmp_path / "first.log", app_uploads_per_hour="1", **settings)
    second, second_url = start_app(tmp_path / "second", tmp_path / "second.log", **settings)
    try:
        query = "intermittent fasting insulin sensitivity prediabetes"
        reader = Client(second_url, verbose=False)
        assert reader.predict(query, 5, api_name="/search")[1] == []
        upload = tmp_path / "pubmed25n0001.xml.gz"
        upload.write_bytes(gzip.compress((FORMATS / "pubmed.xml").read_bytes()))
        uploader = Client(first_url, verbose=False)
        report, *_ = uploader.predict([handle_file(str(upload))], False, "All sources", "All sources", api_name="/add_papers")
        assert "pubmed25n0001.xml.gz" in report and "added 2 abstracts" in report
        again, *_ = uploader.predict([handle_file(str(upload))], False, "All sources", "All sources", api_name="/add_papers")
        assert "this server takes 1 uploads an hour from each user; try again in 60 min" in again
        other, *_ = Client(first_url, verbose=False).predict(
            [handle_file(str(upload))], False, "All sources", "All sources", api_name="/add_papers")
        assert "takes 1 uploads an hour" not in other and "added 0 abstracts, skipped 2 already indexed" in other, other
        deadline, found = time.monotonic() + 60, []
        while time.monotonic() < deadline and not found:
            found = [r for r in reader.predict(query, 5, api_name="/search")[1] if r["id"] == "pmid:99000001"]
            time.sleep(0.5)
        assert found and found[0]["source"] == "pubmed25n0001.xml.gz"
    finally:
        stop(first)
        stop(second)
        server.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's Chromium, headless, driven by playwright."""
    from playwright.sync_api import sync_playwright

    if not CHROMIUM.exists():
        pytest.fail("the browser tests need Debian's Chromium: apt-get install chromium chromium-driver")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS)
        yield chromium
        chromium.close()


def record_timing(name: str, milliseconds: float) -> None:
    """Keep a figure measured in the browser in test-artifacts/ui-timings.json (a figure to
    read, never a pass/fail threshold; benchmarks/serving.py measures it properly)."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / "ui-timings.json"
    figures = json.loads(path.read_text()) if path.exists() else {}
    figures[name] = round(milliseconds, 1)
    path.write_text(json.dumps(figures, indent=2) + "\n")
    print(f"{name}: {milliseconds:.0f} ms")


@pytest.mark.slow
def test_browser_chat_streams_an_answer_with_linked_citations(browser: Any, app_url: str) -> None:
    watched = Watched(browser, app_url)
    page = watched.page
    assert "330 abstracts indexed" in page.locator("#status").inner_text()
    seen = watched.ask(QUESTION)
    assert len(set(seen)) >= 3, f"the answer did not stream: {seen}"
    answer = page.locator('#chat [data-testid="bot"]').last
    assert "sandwich" in answer.inner_text().lower()
    markers = answer.locator("a.cite")
    assert markers.count() >= 1
    for i in range(markers.count()):
        target = markers.nth(i).get_attribute("href")
        assert answer.locator(target).count() == 1, target
    first = page.locator("#sources #source-1")
    assert "Pangu Ultra" in first.inner_text() and first.locator("mark.evidence").count() >= 1
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "chat.png"), full_page=True)
    assert watched.outside == [] and watched.dialogs == []


@pytest.mark.slow
def test_browser_example_questions_the_index_answers_appear_and_fill_the_question_box(
    browser: Any, app_url: str
) -> None:
    """The examples are chosen by searching the index, once the page is up (at a million
    abstracts the first search waits for Chroma's vector index): the page does not wait."""
    watched = Watched(browser, app_url)
    examples = watched.page.locator("#examples")
    examples.get_by_text("How does Pangu Ultra keep training stable").click(timeout=60_000)  # shown shortened
    from playwright.sync_api import expect

    expect(watched.page.locator("#question textarea")).to_have_value(
        "How does Pangu Ultra keep training stable without loss spikes?", timeout=30_000)
    assert "What makes recurrent spiking neural networks efficient?" in examples.inner_text()
    assert watched.outside == []


@pytest.mark.slow
def test_browser_sources_and_findings_are_on_screen_before_the_answers_first_word(browser: Any, app_url: str) -> None:
    watched = Watched(browser, app_url)
    watched.ask(QUESTION)
    marks = watched.marks
    assert "sources" in marks and "findings" in marks and "first_text" in marks, marks
    assert marks["sources"] < marks["first_text"] and marks["findings"] < marks["first_text"], marks
    record_timing("sources_on_screen_after_enter_ms", marks["sources"])
    record_timing("findings_on_screen_after_enter_ms", marks["findings"])
    record_timing("first_answer_text_after_enter_ms", marks["first_text"])
    assert watched.outside == []


@pytest.mark.slow
def test_browser_the_findings_table_quotes_each_paper_and_highlights_it_in_its_abstract(
    browser: Any, app_url: str
) -> None:
    watched = Watched(browser, app_url)
    page = watched.page
    watched.ask("Does Pangu Ultra use depth-scaled sandwich normalization to stabilize training?")
    answer = page.locator('#chat [data-testid="bot"]').last
    table = answer.locator("table.findings")
    assert table.count() == 1 and table.locator("th").all_inner_texts() == ["Paper", "Result", "Authors' conclusion"]
    first, details = table.locator("tbody tr").nth(0), table.locator("tbody tr").nth(1)
    assert "Pangu Ultra" in first.inner_text()
    quoted = first.locator("td").nth(1).locator("mark.result").inner_text()
    details.locator("summary").click()
    abstract = details.locator("details p")
    assert abstract.locator("mark.result").inner_text() == quoted and quoted in abstract.inner_text()
    text = answer.inner_text()
    assert "The authors of [1] " in text and "Verdict" not in text, "the paper's own words lead; no verdict"
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "findings.png"), full_page=True)
    assert watched.outside == [] and watched.dialogs == []


@pytest.mark.slow
def test_browser_search_tab_ranks_filters_and_hands_the_query_to_the_chat(browser: Any, app_url: str) -> None:
    watched = Watched(browser, app_url)
    page = watched.page
    page.get_by_role("tab", name="Search").click()
    box = page.locator("#search-query textarea")
    box.fill("sandwich normalization to eliminate loss spikes")
    started = time.monotonic()
    box.press("Enter")
    first = page.locator("#search-results #result-1")
    first.wait_for(timeout=30_000)
    record_timing("search_tab_results_after_enter_ms", 1000 * (time.monotonic() - started))
    assert "Pangu Ultra" in first.inner_text() and "loss spikes" in first.locator("mark.passage").first.inner_text()
    assert page.locator("#search-results .hit").count() == 10

    page.locator("#search-source input").click()
    page.get_by_role("option", name=OTHER_FILE).click()
    page.wait_for_function(
        "() => { const r = document.querySelector('#search-results'); return r && r.querySelectorAll('.hit').length"
        " && !r.innerText.includes('Pangu Ultra'); }", timeout=30_000)
    metas = page.locator("#search-results .hit .meta").all_inner_texts()
    assert metas and all(OTHER_FILE in m for m in metas)

    box.fill(QUESTION)
    page.locator("#search-source input").click()
    page.get_by_role("option", name="All sources").click()
    page.locator("#ask-about").click()
    page.locator("#chat [data-testid='user']").last.wait_for(timeout=30_000)
    assert page.locator("#chat [data-testid='user']").last.inner_text().strip() == QUESTION
    page.locator("#chat .turn-footer").first.wait_for(timeout=180_000)
    assert "sandwich" in page.locator('#chat [data-testid="bot"]').last.inner_text().lower()
    assert watched.outside == []


@pytest.mark.slow
def test_browser_an_earlier_answers_citation_shows_its_own_source(browser: Any, app_url: str) -> None:
    watched = Watched(browser, app_url)
    page = watched.page
    watched.ask(QUESTION)
    watched.ask("What ImageNet top-1 accuracy do normalizer-free networks reach?")
    first, second = page.locator('#chat [data-testid="bot"]').nth(0), page.locator('#chat [data-testid="bot"]').nth(1)
    assert second.locator("a.cite").count() >= 1
    latest_source = page.locator("#t2-source-1")
    assert "Pangu Ultra" not in latest_source.inner_text()
    assert "Pangu Ultra" not in page.locator("#sources #source-1").inner_text()

    first.locator("a.cite").first.click()
    shown = page.locator("#t1-source-1")
    shown.wait_for(state="visible", timeout=10_000)
    assert "Pangu Ultra" in shown.inner_text() and shown.locator("mark.evidence").count() >= 1
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "earlier-turn.png"), full_page=True)
    assert watched.outside == [] and watched.dialogs == []


@pytest.mark.slow
def test_browser_an_answers_references_download_as_bibtex_and_ris_and_copy_as_markdown(
    browser: Any, app_url: str, tmp_path: Path
) -> None:
    import bibtexparser

    from assistant import corpus
    from assistant.corpus import Source
    from assistant.corpus import bibtex as bib_loader

    watched = Watched(browser, app_url, permissions=["clipboard-read", "clipboard-write"])
    page = watched.page
    watched.ask(QUESTION)
    answer = page.locator('#chat [data-testid="bot"]').last
    with page.expect_download() as download:
        answer.get_by_role("button", name="Download .bib").click()
    assert download.value.suggested_filename == "answer-1.bib"
    path = tmp_path / "answer-1.bib"
    download.value.save_as(path)
    library = bibtexparser.parse_string(path.read_text())
    assert library.entries and not library.failed_blocks
    loaded = list(bib_loader.load(Source(path)))
    assert any("Pangu Ultra" in a.text for a in loaded)
    assert len(loaded) == answer.locator("a.cite").evaluate_all("els => new Set(els.map(e => e.textContent)).size")
    with page.expect_download() as ris_download:
        answer.get_by_role("button", name="Download .ris").click()
    assert ris_download.value.suggested_filename == "answer-1.ris"
    ris_download.value.save_as(tmp_path / "answer-1.ris")
    from_ris = list(corpus.load([tmp_path / "answer-1.ris"]))
    assert [a.id for a in from_ris] == [a.id for a in loaded]  # the same papers, as a reference manager gets them

    answer.get_by_role("button", name="Copy as Markdown").click()
    copied = page.evaluate("navigator.clipboard.readText()")
    assert "**References**" in copied and "[1]" in copied and "sandwich" in copied.lower()
    assert watched.outside == [] and watched.dialogs == []


@pytest.mark.slow
def test_browser_upload_is_searchable_at_once_and_nothing_in_it_executes(
    browser: Any, app_url: str, tmp_path: Path
) -> None:
    upload = tmp_path / "membranes.jsonl"
    upload.write_text(json.dumps(XSS_RECORD) + "\n{not json\n")
    watched = Watched(browser, app_url)
    page = watched.page
    page.get_by_text("Add papers").click()
    page.locator("#upload input[type=file]").set_input_files(str(upload))
    report = page.locator("#upload-report")
    report.get_by_text("added 1 abstracts").wait_for(timeout=60_000)
    assert "membranes.jsonl line 2: invalid JSON" in report.inner_text()
    assert "331 abstracts indexed" in page.locator("#status").inner_text()

    watched.ask(XSS_QUESTION)
    panel = page.locator("#sources")
    assert XSS_TITLE in panel.inner_text()  # shown as text, not as an element
    assert panel.locator("img, script").count() == 0
    assert page.locator("#chat img[src='x'], #chat script").count() == 0
    assert page.evaluate("window.__xss") is None and watched.dialogs == []
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "upload-xss.png"), full_page=True)
    assert watched.outside == []


@pytest.mark.slow
def test_browser_papers_are_added_by_identifier_and_what_cannot_be_had_is_named(browser: Any, tmp_path: Path) -> None:
    with ScholarlyServer() as server:
        server.arxiv["2401.00001"] = arxiv_entry(
            "2401.00001", "Sparse Lattice Attention", "We introduce Sparse Lattice Attention, which restricts each "
            "token to a lattice of neighbours and makes attention linear in the sequence length.", ["Chen Wei"], 2024)
        server.openalex["10.1234/oa.1"] = openalex_work(
            "10.1234/oa.1", "Reef fish recover after heatwaves", "Reef fish populations recover within six years "
            "of a marine heatwave where fishing is restricted, across 40 sites.", ["Ana Lima"], 2021)
        process, url = start_app(tmp_path / "index", tmp_path / "app.log", auto_ingest="false", **server.settings())
        try:
            watched = Watched(browser, url)
            page = watched.page
            page.get_by_text("Add papers").click()
            page.locator("#add-ids textarea").fill("arXiv:2401.00001, https://doi.org/10.1234/OA.1\n10.1234/missing")
            page.locator("#add-ids-button").click()
            report = page.locator("#upload-report")
            report.get_by_text("added 2 abstracts").wait_for(timeout=60_000)
            assert "doi:10.1234/missing: no such DOI" in report.inner_text()
            assert "2 abstracts indexed" in page.locator("#status").inner_text()
            assert watched.outside == []
        finally:
            stop(process)


@pytest.mark.slow
def test_browser_a_waiting_user_sees_the_evidence_and_their_place_and_stop_frees_the_model(
    browser: Any, app_url: str
) -> None:
    """The app answers one question at a time with the local model; a second user, asking
    meanwhile, already has the findings and is shown their place in the model's line. The
    first user stops their answer: its unverified text goes, and the second user is answered."""
    first, second = Watched(browser, app_url), Watched(browser, app_url)
    for watched, question in ((first, QUESTION), (second, "How do normalizer-free networks train without batch norm?")):
        watched.page.locator("#question textarea").fill(question)
        watched.page.locator("#question textarea").press("Enter")
    waiting = second.page.locator("#chat").get_by_text(re.compile(r"ahead of yours in the queue"))
    waiting.first.wait_for(timeout=60_000)
    assert second.page.locator("#chat table.findings").count() == 1, "the evidence does not wait for the model"
    ARTIFACTS.mkdir(exist_ok=True)
    second.page.screenshot(path=str(ARTIFACTS / "queue.png"), full_page=True)
    first.page.locator("#stop").click()
    first.page.locator("#chat .stopped").first.wait_for(timeout=30_000)
    assert first.page.locator("#chat .streaming").count() == 0, "no unverified text is left on screen"
    second.page.locator("#sources .source, #sources .abstained").first.wait_for(timeout=180_000)
    assert first.outside == [] and second.outside == []


@pytest.mark.slow
def test_browser_an_upload_over_the_size_cap_is_refused_with_a_message(browser: Any, tmp_path: Path) -> None:
    process, url = start_app(tmp_path / "index", tmp_path / "app.log", auto_ingest="false", app_max_upload_mb="1")
    try:
        big = tmp_path / "dump.jsonl"
        big.write_text(json.dumps({"id": "dump", "abstract": "word " * 400_000}))  # 2 MB
        watched = Watched(browser, url)
        page = watched.page
        page.get_by_text("Add papers").click()
        page.locator("#upload input[type=file]").set_input_files(str(big))
        page.get_by_text(re.compile(r"maximum|too large|exceeds", re.IGNORECASE)).first.wait_for(timeout=30_000)
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "upload-too-large.png"), full_page=True)
        assert "0 abstracts indexed" in page.locator("#status").inner_text()
        assert watched.outside == []
    finally:
        stop(process)


@pytest.fixture(scope="module")
def capable_app_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Any]]:
    """The app with the `openai` backend, answering through a scripted OpenAI-compatible server."""
    from scripted_server import MODEL, ScriptedServer

    with ScriptedServer() as server:
        process, url = start_app(tmp_path_factory.mktemp("capable-index"), tmp_path_factory.mktemp("capable") / "app.log",
                                 llm_backend="openai", llm_model=MODEL, openai_base_url=server.base_url)
        yield url, server
        stop(process)


@pytest.mark.slow
def test_browser_a_verdict_is_a_badge_and_an_abstention_shows_its_evidence(
    browser: Any, capable_app_url: tuple[str, Any]
) -> None:
    url, server = capable_app_url
    pangu = "We present Pangu Ultra, a Large Language Model (LLM) with 135 billion parameters"
    verdict_question = "Is Pangu Ultra a sparse mixture-of-experts model?"
    server.script(verdict_question, "No, Pangu Ultra is a dense Transformer model with 135B parameters [@0].", [pangu])
    declined_question = QUESTION  # retrieval is confident here: the evidence is offered
    server.script(declined_question, "The sources do not say how long training took.")
    watched = Watched(browser, url)
    page = watched.page
    watched.ask(verdict_question)
    badge = page.locator('#chat [data-testid="bot"]').last.locator(".verdict-no")
    assert badge.inner_text() == "Verdict: no [1]"
    watched = Watched(browser, url)  # a new chat: a second turn would be rewritten by the scripted model first
    page = watched.page
    watched.ask(declined_question)
    panel = page.locator("#sources")
    assert "The model did not find the answer" in panel.locator(".abstained").inner_text()
    evidence = panel.locator(".evidence-found mark.evidence").first
    assert evidence.is_visible(), "the closest evidence is shown expanded"
    assert "Pangu Ultra" in panel.locator(".evidence-found .source").first.inner_text()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "verdict-and-evidence.png"), full_page=True)
    assert watched.outside == [] and watched.dialogs == []


@pytest.mark.slow
def test_browser_reference_manager_and_pubmed_exports_upload_with_one_paper_indexed_once(
    browser: Any, capable_app_url: tuple[str, Any]
) -> None:
    """A Zotero RIS file, a PubMed .nbib and a PubMed XML file, uploaded together: the paper
    in all three is added once, and the records without an abstract are listed."""
    url, _ = capable_app_url
    formats = Path(__file__).parent / "data" / "formats"
    watched = Watched(browser, url)
    page = watched.page
    page.get_by_text("Add papers").click()
    page.locator("#upload input[type=file]").set_input_files(
        [str(formats / name) for name in ("library.ris", "pubmed.nbib", "pubmed.xml")])
    report = page.locator("#upload-report")
    report.get_by_text("added 4 abstracts").wait_for(timeout=120_000)
    text = report.inner_text()
    assert re.search(r"skipped 2 already indexed \([12] by DOI, PMID or arXiv id\), rejected 4", text), text
    assert "library.ris line 36: the record has no end tag" in text and "pubmed.nbib line 44: not a MEDLINE line" in text
    assert "334 abstracts indexed" in page.locator("#status").inner_text()
    assert watched.outside == [] and watched.dialogs == []
