"""Soak: a shared server under mixed traffic for a long while, watched for errors, leaks and loss.

    python benchmarks/soak.py [--minutes 30] [--users 20]

Starts ``python app.py`` with accounts on an index of the bundled corpus, then for
``--minutes``: ``--users`` logged-in gradio_client users each ask a question (dev and held-out
questions, in turn), search, and pause a few seconds, again and again; one more user uploads a
file of two new papers every ``UPLOAD_EVERY_S`` seconds; and a guesser tries a wrong password
every ``GUESS_EVERY_S`` seconds. The app's memory (RSS) is read every ``RSS_EVERY_S`` seconds.

Counted: questions and searches, errors (a reply that is a "⚠" message, an exception, an upload
not reported added), the first update (sources and findings) of every question from sending,
RSS growth from the end of the first minute to the end, and, at the end, whether every uploaded
paper is indexed exactly once in its uploader's library. A wrong password is never let in.

Writes ``benchmarks/results/soak.json`` (`run` returns the figures: tests/test_soak.py runs a
two-minute version). Never part of the test run itself.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from assistant import Assistant
from assistant.accounts import Accounts
from assistant.settings import BUNDLED_CORPUS

ROOT = Path(__file__).resolve().parent.parent
UPLOAD_EVERY_S = 60.0
GUESS_EVERY_S = 20.0
RSS_EVERY_S = 5.0
PASSWORD = "soak-test-password"


@dataclass
class Tally:
    """What the soak saw, filled by every thread (under ``lock``)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    questions: int = 0
    searches: int = 0
    first_updates: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    uploaded: list[str] = field(default_factory=list)  # the unique word of each uploaded paper
    guesses_let_in: int = 0
    guesses: int = 0
    rss_mb: list[tuple[float, float]] = field(default_factory=list)  # (seconds since start, MB)

    def error(self, what: str) -> None:
        with self.lock:
            self.errors.append(what[:300])


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _reply(chat: object) -> str:
    content = chat[-1]["content"] if isinstance(chat, list) and chat else ""  # type: ignore[index]
    return content if isinstance(content, str) else "".join(p.get("text", "") for p in content)


def asker(url: str, name: str, questions: list[str], until: float, tally: Tally) -> None:
    """Ask, search, pause; again until ``until``."""
    from gradio_client import Client

    client = Client(url, auth=(name, PASSWORD), verbose=False)
    turn = random.Random(name)
    while time.monotonic() < until:
        question = turn.choice(questions)
        try:
            sent = time.perf_counter()
            job = client.submit(question, api_name="/chat")
            first = None
            while not job.done():
                outputs = [o for o in job.outputs() if isinstance(o[1], list)]
                if first is None and outputs:
                    first = time.perf_counter() - sent
                time.sleep(0.05)
            _, chat, _ = job.result()
            reply = _reply(chat)
            with tally.lock:
                tally.questions += 1
                if first is not None:
                    tally.first_updates.append(first)
            if reply.startswith("⚠"):
                tally.error(f"{name} asked {question!r}: {reply}")
            client.predict(question, 5, api_name="/search")
            with tally.lock:
                tally.searches += 1
        except Exception as error:  # noqa: BLE001 - every failure is a counted error
            tally.error(f"{name}: {type(error).__name__}: {error}")
        time.sleep(turn.uniform(0, 5))


def uploader(url: str, name: str, folder: Path, until: float, tally: Tally) -> None:
    """Upload a file of two new papers every ``UPLOAD_EVERY_S`` seconds."""
    from gradio_client import Client, handle_file

    client = Client(url, auth=(name, PASSWORD), verbose=False)
    number = 0
    while time.monotonic() < until:
        number += 1
        words = [f"soakword{number}a", f"soakword{number}b"]
        path = folder / f"upload{number}.jsonl"
        path.write_text("".join(json.dumps({
            "id": f"soak-{word}", "title": f"Paper {word}",
            "abstract": f"We study {word} membranes. They filter salt at {number}0% higher flux than before.",
        }) + "\n" for word in words))
        try:
            report, *_ = client.predict([handle_file(str(path))], False, "All sources", "All sources",
                                        api_name="/add_papers")
            if "added 2 abstracts" not in report:
                tally.error(f"upload {number}: {report}")
            with tally.lock:
                tally.uploaded += words
        except Exception as error:  # noqa: BLE001
            tally.error(f"upload {number}: {type(error).__name__}: {error}")
        time.sleep(UPLOAD_EVERY_S)


def guesser(url: str, names: list[str], until: float, tally: Tally) -> None:
    """A wrong password every ``GUESS_EVERY_S`` seconds, for a known or unknown name."""
    turn = random.Random(0)
    while time.monotonic() < until:
        name = turn.choice(names + ["root", "admin"])
        status = httpx.post(url + "login", data={"username": name, "password": "wrong guess"}, timeout=60).status_code
        with tally.lock:
            tally.guesses += 1
            tally.guesses_let_in += status == 200
        time.sleep(GUESS_EVERY_S)


def run(minutes: float, users: int) -> dict[str, object]:
    """The soak (see the module docstring); its figures."""
    work = Path(tempfile.mkdtemp(prefix="soak-"))
    data = work / "index"
    Assistant(data_dir=data, auto_ingest=False).ingest([BUNDLED_CORPUS])
    names = [f"user{n:02d}" for n in range(users)] + ["ingester"]
    accounts = Accounts(data)
    for name in names:
        accounts.add(name, PASSWORD)
    questions = [json.loads(line)["question"] for file in ("dev.jsonl", "heldout.jsonl")
                 for line in (ROOT / "tests/data" / file).read_text().splitlines()]
    port = _free_port()
    env = {**os.environ, "ASSISTANT_DATA_DIR": str(data), "ASSISTANT_APP_PORT": str(port),
           "ASSISTANT_AUTO_INGEST": "false"}
    app = subprocess.Popen([sys.executable, str(ROOT / "app.py")], env=env, cwd=ROOT,
                           stdout=(work / "app.log").open("w"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    tally = Tally()
    try:
        _wait_up(url, app)
        started = time.monotonic()
        until = started + minutes * 60
        threads = [threading.Thread(target=asker, args=(url, name, questions, until, tally)) for name in names[:-1]]
        threads += [threading.Thread(target=uploader, args=(url, names[-1], work, until, tally)),
                    threading.Thread(target=guesser, args=(url, names, until, tally))]
        for thread in threads:
            thread.start()
        while any(t.is_alive() for t in threads):
            if app.poll() is not None:
                tally.error(f"the app exited with {app.returncode}")
                break
            tally.rss_mb.append((time.monotonic() - started, _rss_mb(app.pid)))
            time.sleep(RSS_EVERY_S)
        for thread in threads:
            thread.join()
    finally:
        app.terminate()
        app.wait(timeout=60)
    ingester = Assistant(data_dir=data, user="ingester", auto_ingest=False)
    for word in tally.uploaded:
        found = [h for h in ingester.search(word, k=5) if word in h.abstract.text]
        if len(found) != 1:
            tally.error(f"uploaded paper {word} is indexed {len(found)} times")
    return _figures(tally, minutes, users)


def _figures(tally: Tally, minutes: float, users: int) -> dict[str, object]:
    after_first_minute = [mb for at, mb in tally.rss_mb if at >= 60] or [mb for _, mb in tally.rss_mb]
    growth = after_first_minute[-1] / after_first_minute[0] - 1 if after_first_minute else 0.0
    firsts = sorted(tally.first_updates)
    return {
        "minutes": minutes, "users": users, "questions": tally.questions, "searches": tally.searches,
        "uploads": len(tally.uploaded) // 2, "errors": tally.errors, "guesses": tally.guesses,
        "guesses_let_in": tally.guesses_let_in,
        "first_update_p50": statistics.median(firsts) if firsts else None,
        "first_update_p95": firsts[min(len(firsts) - 1, round(0.95 * (len(firsts) - 1)))] if firsts else None,
        "rss_first_mb": after_first_minute[0] if after_first_minute else None,
        "rss_last_mb": after_first_minute[-1] if after_first_minute else None, "rss_growth": growth,
        "rss_by_minute_mb": [round(mb) for at, mb in tally.rss_mb if at % 60 < RSS_EVERY_S],
    }


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_up(url: str, app: subprocess.Popen) -> None:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if app.poll() is not None:
            raise RuntimeError(f"the app exited with {app.returncode}")
        try:
            if httpx.get(url, timeout=1).status_code in (200, 401):
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise RuntimeError("the app did not start within 300 s")


def main() -> None:
    from results import row, save

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--users", type=int, default=20)
    args = parser.parse_args()
    f = run(args.minutes, args.users)
    print(json.dumps(f, indent=1))
    label = f"{f['users']} users asking and searching, one uploading, a password guesser, {f['minutes']:g} min"
    rows = [
        row("soak_errors", f"{label}: errors", f"{len(f['errors'])} (of {f['questions']} questions, "
            f"{f['searches']} searches, {f['uploads']} uploads)"),
        row("soak_first", f"{label}: first update (sources, findings), p50 / p95",
            f"{f['first_update_p50']:.1f} / {f['first_update_p95']:.1f} s"),
        row("soak_rss", f"{label}: app RSS after the first minute → at the end",
            f"{f['rss_first_mb']:.0f} → {f['rss_last_mb']:.0f} MB ({f['rss_growth']:+.1%})"),
        row("", f"{label}: uploaded papers indexed exactly once", "all" if not any(
            "indexed" in e for e in f["errors"]) else "not all"),
        row("", f"{label}: wrong passwords let in", f"{f['guesses_let_in']} of {f['guesses']}"),
    ]
    save("soak", "Soak: mixed traffic on a shared server", rows, note="; ".join(f["errors"][:5]),
         rss_by_minute_mb=f["rss_by_minute_mb"])


if __name__ == "__main__":
    main()
