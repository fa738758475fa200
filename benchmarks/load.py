"""Load: many simultaneous chat users against the app, and what a pathological upload costs.

    python benchmarks/load.py [--users 8,32]

Starts ``python app.py`` on an index of the bundled corpus (built first), then, for each
number of users, that many gradio_client users connect, then send a dev question at the same
moment. The index's sentence vectors are computed first, as the app does in the background
after start-up (`Assistant.warm_sentences`); ``--cold`` runs the app keeping none
(``ASSISTANT_SENTENCE_CACHE_MB=0``: every question embeds its papers' sentences, as before
they were kept).
For each user, from sending: the *first update* (its first streamed output, which carries the
retrieved sources and the findings) and the *answer* (the final one). Every question gets its
evidence at once; the model answers ``Settings.answers_at_once`` at a time (1 with the local
model), the others waiting in its line (`waiting_line`) and shown their place in it.

Then the time to ingest a JSONL file holding one 10 MB record (a full-text dump: rejected
with its line) and one valid record (added).

Writes ``benchmarks/results/load.json``. Never part of the test run.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from assistant import Assistant
from assistant.settings import BUNDLED_CORPUS
from results import row, save

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def one_user(url: str, question: str, ready: threading.Barrier | None = None) -> dict[str, float]:
    """Connect, then (with ``ready``: once every user has connected) send one question; the
    seconds until its first streamed update (which must carry the retrieved sources) and until
    its answer, both from sending."""
    from gradio_client import Client

    client = Client(url, verbose=False)
    if ready is not None:
        ready.wait()
    sent = time.perf_counter()
    job = client.submit(question, api_name="/chat")
    first = None
    while not job.done():
        if first is None and job.outputs():
            first = time.perf_counter()
            _, _, panel = job.outputs()[0]
            assert "retrieved-note" in str(panel), f"the first update carries the sources, not {str(panel)[:200]}"
        time.sleep(0.02)
    job.result()
    finished = time.perf_counter()
    return {"first": (first or finished) - sent, "answer": finished - sent}


def _last_reply(job: object) -> str:
    """The last chat message of a job's latest streamed update."""
    outputs = [o for o in job.outputs() if isinstance(o[1], list)]  # type: ignore[attr-defined]
    if not outputs:  # none yet, or only updates that change nothing
        return ""
    content = outputs[-1][1][-1]["content"]
    return content if isinstance(content, str) else "".join(p.get("text", "") for p in content)


def _until(condition: object, timeout: float = 120.0) -> float:
    """Poll ``condition`` until it holds; the moment it did."""
    deadline = time.perf_counter() + timeout
    while not condition():  # type: ignore[operator]
        if time.perf_counter() > deadline:
            raise TimeoutError("the app never got there")
        time.sleep(0.02)
    return time.perf_counter()


def cancel_frees(url: str, first: str, second: str) -> float:
    """Seconds from cancelling a question the model is writing to the next waiting
    question's turn (its place in line gone from its update)."""
    from gradio_client import Client

    writing = Client(url, verbose=False).submit(first, api_name="/chat")
    _until(lambda: 'class="streaming"' in _last_reply(writing))
    waiting = Client(url, verbose=False).submit(second, api_name="/chat")
    _until(lambda: "Waiting for the model" in _last_reply(waiting))
    cancelled = time.perf_counter()
    writing.cancel()
    freed = _until(lambda: "Waiting for the model" not in _last_reply(waiting))
    waiting.result()
    return freed - cancelled


def percentiles(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"{statistics.median(ordered):.1f} / {p95:.1f} s"


def oversized_upload(folder: Path) -> float:
    """Seconds to ingest a file with one 10 MB record and one valid one."""
    papers = folder / "dump.jsonl"
    papers.write_text(json.dumps({"id": "dump", "abstract": "word " * 2_000_000}) + "\n" + json.dumps(
        {"id": "ok", "title": "Graphene", "abstract": "Graphene membranes filter salt from seawater at high flux."}))
    assistant = Assistant(data_dir=folder / "index", auto_ingest=False)
    assistant.store.count()  # open the store and the embedder before the clock starts
    assistant.embedder.embed(["warm"])
    started = time.perf_counter()
    report = assistant.ingest([papers])
    seconds = time.perf_counter() - started
    assert report.added == 1 and len(report.rejected) == 1, report.summary()
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", default="8,32", help="numbers of simultaneous users, comma-separated")
    parser.add_argument("--cold", action="store_true", help="keep no sentence vectors (each question embeds its own)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="load-bench-"))
    index = Assistant(data_dir=work / "index", auto_ingest=False)
    index.ingest([BUNDLED_CORPUS])
    port = free_port()
    env = {**os.environ, "ASSISTANT_DATA_DIR": str(work / "index"), "ASSISTANT_APP_PORT": str(port)}
    mode = "cold: no sentence vectors kept" if args.cold else "sentence vectors kept"
    if args.cold:
        env["ASSISTANT_SENTENCE_CACHE_MB"] = "0"
    else:
        started = time.perf_counter()
        embedded = index.warm_sentences()
        print(f"sentence vectors of {embedded} abstracts computed in {time.perf_counter() - started:.1f} s")
    questions = [json.loads(line)["question"] for line in (ROOT / "tests/data/dev.jsonl").read_text().splitlines()]
    app = subprocess.Popen([sys.executable, str(ROOT / "app.py")], env=env, cwd=ROOT,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/"
    rows = []
    try:
        while True:
            try:
                if httpx.get(url, timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        one_user(url, questions[0])  # loads the model
        for users in (int(n) for n in args.users.split(",")):
            asked = [questions[i % len(questions)] for i in range(users)]
            ready = threading.Barrier(users)  # all connect first, then send at the same moment
            started = time.perf_counter()
            with ThreadPoolExecutor(users) as pool:
                runs = list(pool.map(lambda q: one_user(url, q, ready), asked))
            wall = time.perf_counter() - started
            print(f"{users} users: first update {percentiles([r['first'] for r in runs])}, answer "
                  f"{percentiles([r['answer'] for r in runs])}, all done in {wall:.0f} s")
            tag = "_cold" if args.cold else ""
            rows += [
                row(f"load_{users}_first{tag}", f"{users} simultaneous users ({mode}): first update (sources, "
                    "findings), p50 / p95", percentiles([r["first"] for r in runs])),
                row(f"load_{users}_answer{tag}", f"{users} simultaneous users ({mode}): answer, p50 / p95",
                    percentiles([r["answer"] for r in runs])),
                row("", f"{users} simultaneous users ({mode}): until the last answer", f"{wall:.0f} s"),
            ]
        if not args.cold:
            seconds = cancel_frees(url, questions[1], questions[2])
            print(f"a cancelled question freed the model for the next in {seconds:.2f} s")
            rows.append(row("cancel_frees", "a question cancelled while the model writes: the next one's turn after",
                            f"{seconds:.2f} s"))
    finally:
        app.terminate()
        app.wait(timeout=30)
    note = (f"the app answers {index.settings.answers_at_once} question(s) at a time (the local model); the others "
            "wait in its line, their evidence already shown.")
    if args.cold:
        save("load_cold", "Load, keeping no sentence vectors: simultaneous chat users", rows, note=note)
        return
    seconds = oversized_upload(work)
    print(f"a file with a 10 MB record and a valid one: ingested in {seconds:.2f} s")
    rows.append(row("oversized_record", "ingest of a file with a 10 MB record (rejected) and a valid one (added)",
                    f"{seconds:.2f} s"))
    save("load", "Load: simultaneous chat users, and a pathological upload", rows, note=note)


if __name__ == "__main__":
    main()
