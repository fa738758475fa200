"""A fault matrix, with real processes and real servers: each fault ends with nothing lost,
nothing duplicated, and a message that says what happened and what to do."""

from __future__ import annotations

import json
import os
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import chromadb
import pytest

from assistant import Assistant, GenerationError, corpus
from assistant.index.chunking import chunk
from assistant.index.store import StoreError
from assistant.settings import BUNDLED_CORPUS
from assistant.types import Abstract

from conftest import SAMPLE_UNIQUE, ChromaServer

ASSISTANT = str(Path(sys.executable).parent / "assistant")
pytestmark = pytest.mark.slow


def _run(*args: str, env: dict[str, str], **options: object) -> subprocess.Popen:
    return subprocess.Popen([ASSISTANT, *args], env={**os.environ, **env}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **options)


def _expected_chunks() -> int:
    unique = {a.id: a for a in corpus.load([BUNDLED_CORPUS]) if isinstance(a, Abstract)}
    return sum(len(chunk(a, 128, 16)) for a in unique.values())


def _assert_whole(assistant: Assistant) -> None:
    """The sample corpus, each abstract once, every chunk belonging to a committed abstract."""
    store = assistant.store
    assert store.count() == SAMPLE_UNIQUE and store.chunk_count() == _expected_chunks()
    owners = {m["abstract_id"] for m in store.chunks.get(include=["metadatas"])["metadatas"]}
    assert owners == store.indexed_ids(owners) and len(store.abstracts.get(include=[])["ids"]) == SAMPLE_UNIQUE


def _clear_failure(finished: subprocess.Popen, *expected: str) -> str:
    _, stderr = finished.communicate(timeout=600)
    assert finished.returncode == 2, stderr
    assert all(text in stderr for text in expected), stderr
    assert "Traceback" not in stderr and "[Errno" not in stderr, stderr
    return stderr


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ChromaServer]:
    chroma = ChromaServer(tmp_path / "server-data").start()
    yield chroma
    chroma.stop()


def test_a_chroma_server_killed_mid_ingest_then_restarted_ends_with_every_abstract_once(
    server: ChromaServer, tmp_path: Path
) -> None:
    env = {"ASSISTANT_DATA_DIR": str(tmp_path / "local"), "ASSISTANT_CHROMA_HOST": "127.0.0.1",
           "ASSISTANT_CHROMA_PORT": str(server.port), "ASSISTANT_INGEST_BATCH_SIZE": "16"}
    ingest = _run("ingest", "-q", str(BUNDLED_CORPUS), env=env)
    watcher = chromadb.HttpClient(host="127.0.0.1", port=server.port)
    deadline = time.monotonic() + 300
    while not (watcher.list_collections() and watcher.get_collection("abstracts_abstracts").count()):
        assert time.monotonic() < deadline and ingest.poll() is None, "the ingest never wrote a batch"
        time.sleep(0.2)
    server.kill()
    _clear_failure(ingest, f"lost the Chroma server at 127.0.0.1:{server.port}", "chroma run", "run again")
    server.start()
    again = _run("ingest", "-q", str(BUNDLED_CORPUS), env=env)
    stdout, stderr = again.communicate(timeout=600)
    assert again.returncode == 0 and f"index now holds {SAMPLE_UNIQUE} abstracts" in stdout, stderr
    _assert_whole(Assistant(data_dir=tmp_path / "local", chroma_host="127.0.0.1", chroma_port=server.port))


def test_a_chroma_server_down_during_search_is_named_and_searches_recover(server: ChromaServer, tmp_path: Path) -> None:
    assistant = Assistant(data_dir=tmp_path / "local", chroma_host="127.0.0.1", chroma_port=server.port,
                          auto_ingest=False, index_check_seconds=0)
    assistant.ingest([BUNDLED_CORPUS])
    question = "adaptive gradient clipping without batch normalization"
    top = assistant.search(question, k=1)[0].abstract.id
    server.kill()
    with pytest.raises(StoreError, match=f"lost the Chroma server at 127.0.0.1:{server.port}.*chroma run"):
        assistant.search(question, k=1)
    env = {"ASSISTANT_DATA_DIR": str(tmp_path / "local"), "ASSISTANT_CHROMA_HOST": "127.0.0.1",
           "ASSISTANT_CHROMA_PORT": str(server.port)}
    _clear_failure(_run("search", question, env=env), f"127.0.0.1:{server.port}", "chroma run")
    server.start()
    assert assistant.search(question, k=1)[0].abstract.id == top, "the same Assistant searches again"


@pytest.fixture
def stalled_server() -> Iterator[str]:
    """A server that accepts connections and reads requests but never answers."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    stop.set()
    thread.join()
    for connection in held:
        connection.close()
    listener.close()


def test_a_stalled_model_server_is_a_timeout_error_within_the_set_time(
    sample_index: Assistant, stalled_server: str
) -> None:
    assistant = Assistant(sample_index.settings, llm_backend="openai", llm_model="any", openai_base_url=stalled_server,
                          openai_timeout=2, openai_max_retries=1)
    started = time.monotonic()
    with pytest.raises(GenerationError, match=f"the model server at {stalled_server}/? did not answer within 2"):
        assistant.ask("What technique did the Pangu Ultra team introduce to eliminate loss spikes?")
    assert time.monotonic() - started < 30, "two tries of 2 s, and the retry's back-off"


def test_an_oversized_record_is_rejected_with_its_line_and_the_rest_of_the_file_loads(tmp_path: Path) -> None:
    papers = tmp_path / "dump.jsonl"
    papers.write_text("\n".join([
        json.dumps({"id": "dump", "title": "A full text", "abstract": "word " * 2_000_000}),
        json.dumps({"id": "ok", "title": "Graphene membranes", "abstract": "Graphene membranes filter salt from "
                    "seawater at high flux, which makes desalination cheaper."}),
    ]))
    assistant = Assistant(data_dir=tmp_path / "index", auto_ingest=False)
    report = assistant.ingest([papers])
    assert report.added == 1 and assistant.stats()["abstracts"] == 1
    (rejected,) = report.rejected
    assert (rejected.source, rejected.line) == (str(papers), 1) and "longer than 8,000 tokens" in rejected.reason
    cut = Assistant(data_dir=tmp_path / "cut", auto_ingest=False, truncate_long_records=True, max_record_tokens=200)
    assert cut.ingest([papers]).added == 2 and cut.store.get_abstracts(["dump"])["dump"].text.count("word") == 200


def test_a_corrupted_lexical_index_is_rebuilt_from_chroma(tmp_path: Path) -> None:
    assistant = Assistant(data_dir=tmp_path, auto_ingest=False)
    assistant.ingest([BUNDLED_CORPUS])
    question = "How does Pangu Ultra keep training stable?"
    before = [h.abstract.id for h in assistant.search(question, k=5)]
    files = [p for p in (tmp_path / "bm25").rglob("*") if p.is_file()]
    assert files
    for path in files:  # truncated, as by a crash or a full disk during the save
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
    reopened = Assistant(data_dir=tmp_path, auto_ingest=False)
    assert [h.abstract.id for h in reopened.search(question, k=5)] == before
    assert Assistant(data_dir=tmp_path, auto_ingest=False).bm25.model is not None, "saved again, whole"


def test_a_full_disk_during_ingest_is_a_clear_error_and_the_rerun_completes(tmp_path: Path) -> None:
    def small_disk() -> None:  # files may grow to 3 MB: the index of the sample corpus needs more
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (3 << 20, 3 << 20))

    env = {"ASSISTANT_DATA_DIR": str(tmp_path)}
    _clear_failure(_run("ingest", "-q", str(BUNDLED_CORPUS), env=env, preexec_fn=small_disk),
                   str(tmp_path / "chroma"), "disk", "run the ingest again")
    again = _run("ingest", "-q", str(BUNDLED_CORPUS), env=env)
    stdout, stderr = again.communicate(timeout=600)
    assert again.returncode == 0 and f"index now holds {SAMPLE_UNIQUE} abstracts" in stdout, stderr
    _assert_whole(Assistant(data_dir=tmp_path, auto_ingest=False))


def test_two_ingests_at_once_do_the_work_once_and_each_report_tells_the_truth(tmp_path: Path) -> None:
    env = {"ASSISTANT_DATA_DIR": str(tmp_path)}
    first, second = (_run("ingest", "-q", str(BUNDLED_CORPUS), env=env) for _ in range(2))
    outputs = sorted(process.communicate(timeout=600)[0] for process in (first, second))
    assert first.returncode == second.returncode == 0
    added = [line for out in outputs for line in out.splitlines() if line.startswith("added")]
    assert sorted(line.split()[1] for line in added) == ["0", str(SAMPLE_UNIQUE)], added
    assert any(f"skipped {SAMPLE_UNIQUE + 7} duplicates" in line for line in added), added
    _assert_whole(Assistant(data_dir=tmp_path, auto_ingest=False))
