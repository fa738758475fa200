"""Serving cost of the app: start-up time on a built index, memory while answering, and what
a user waits for in the browser.

    python benchmarks/serving.py [--data-dir DIR] [--runs 3] [--questions 10]

Indexes the bundled corpus into DIR (a temp dir by default) unless it is there already,
then starts ``python app.py`` on it several times: seconds until the page answers, then
one question through gradio_client, then the app's peak and current RSS from /proc.
Then, in headless Chromium (the browser tests' harness, ``tests/browser.py``), for the first
``--questions`` dev questions: from Enter to the retrieved sources on screen, to the papers'
findings table, and to the answer's first words, and from Enter in the search tab to its results. Writes
``benchmarks/results/serving.json``. Never part of the test run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from assistant import Assistant
from assistant.evaluation import latency_summary, load_qa
from assistant.settings import BUNDLED_CORPUS
from results import row, save

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from browser import CHROMIUM, CHROMIUM_FLAGS, Watched, start_app, stop  # noqa: E402
from conftest import free_port  # noqa: E402
QUESTION = "What technique did the Pangu Ultra team introduce to eliminate loss spikes?"


def memory_mb(pid: int) -> dict[str, float]:
    """Peak (VmHWM) and current (VmRSS) resident memory of a process, in MB."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return {key: int(fields[key].split()[0]) / 1024 for key in ("VmHWM", "VmRSS")}


def one_start(data_dir: Path) -> dict[str, float]:
    """Start the app, time it until it answers, ask one question, read its memory."""
    from gradio_client import Client

    port = free_port()
    env = {**os.environ, "ASSISTANT_DATA_DIR": str(data_dir), "ASSISTANT_APP_PORT": str(port)}
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, str(ROOT / "app.py")], env=env, cwd=ROOT,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/"
    try:
        while True:
            try:
                if httpx.get(url, timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.05)
            if process.poll() is not None:
                raise RuntimeError("the app exited")
        startup = time.perf_counter() - started
        asked = time.perf_counter()
        Client(url, verbose=False).predict(QUESTION, api_name="/chat")
        first_answer = time.perf_counter() - asked
        return {"startup_s": startup, "first_answer_s": first_answer, **memory_mb(process.pid)}
    finally:
        process.terminate()
        process.wait(timeout=30)


def in_the_browser(data_dir: Path, questions: list[str]) -> dict[str, dict[str, float]]:
    """p50/p95 (ms) from Enter to the sources on screen, to the findings table, to the answer's
    first words, and from Enter in the search tab to its results, one fresh page per question."""
    from playwright.sync_api import sync_playwright

    process, url = start_app(data_dir, Path(tempfile.mkdtemp(prefix="serving-log-")) / "app.log")
    sources, table, first_text, search = [], [], [], []
    try:
        with sync_playwright() as playwright:
            chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS)
            for question in questions:
                watched = Watched(chromium, url)
                watched.ask(question)
                sources.append(watched.marks["sources"] / 1000)
                table.append(watched.marks["findings"] / 1000)
                first_text.append(watched.marks["first_text"] / 1000)
                page = watched.page
                page.get_by_role("tab", name="Search").click()
                page.locator("#search-query textarea").fill(question)
                started = time.perf_counter()
                page.locator("#search-query textarea").press("Enter")
                page.locator("#search-results #result-1").wait_for(timeout=30_000)
                search.append(time.perf_counter() - started)
                page.close()
            chromium.close()
    finally:
        stop(process)
    return {"sources": latency_summary(sources), "findings": latency_summary(table),
            "first_text": latency_summary(first_text),
            "search": latency_summary(search)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--questions", type=int, default=10, help="dev questions asked in the browser")
    args = parser.parse_args()
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="serving-"))
    assistant = Assistant(data_dir=data_dir, auto_ingest=False)
    if assistant.store.count() == 0:
        print(assistant.ingest([BUNDLED_CORPUS]).summary(), file=sys.stderr)
    del assistant
    runs = [one_start(data_dir) for _ in range(args.runs)]
    print("| run | start-up s (index built) | first answer s (model load included) | peak RSS MB | RSS after MB |")
    print("|---|---|---|---|---|")
    for number, run in enumerate(runs, start=1):
        print(f"| {number} | {run['startup_s']:.1f} | {run['first_answer_s']:.1f} | {run['VmHWM']:.0f} | {run['VmRSS']:.0f} |")
    print(f"\nmedian start-up {statistics.median(r['startup_s'] for r in runs):.1f} s, "
          f"highest peak RSS {max(r['VmHWM'] for r in runs):.0f} MB")

    def span(key: str, unit: str, digits: int = 1) -> str:
        low, high = (f"{v:.{digits}f}" for v in (min(r[key] for r in runs), max(r[key] for r in runs)))
        return f"{low} {unit}" if low == high else f"{low}–{high} {unit}"

    questions = [q["question"] for q in load_qa(ROOT / "tests" / "data" / "dev.jsonl")][: args.questions]
    browser = in_the_browser(data_dir, questions)
    for name, figures in browser.items():
        print(f"browser, {name}: p50 {figures['p50_ms']:.0f} ms, p95 {figures['p95_ms']:.0f} ms")

    def ms(name: str) -> str:
        return f"{browser[name]['p50_ms']:.0f} / {browser[name]['p95_ms']:.0f} ms"

    save("serving", "Serving: the app's start-up, memory, and what a user waits for in the browser", [
        row("app_startup", f"`python app.py` start-up on a built index, {len(runs)} starts", span("startup_s", "s")),
        row("", "first answer after start-up (local model load included)", span("first_answer_s", "s")),
        row("app_rss", "peak RSS of the app process", span("VmHWM", "MB", 0)),
        row("ui_sources", f"browser: Enter to retrieved sources on screen, p50 / p95 ({len(questions)} dev questions)",
            ms("sources")),
        row("ui_findings", "browser: Enter to the papers' findings table on screen, p50 / p95 (local model)",
            ms("findings")),
        row("", "browser: Enter to the answer's first words, p50 / p95 (local model)", ms("first_text")),
        row("ui_search", "browser: Enter in the search tab to its results, p50 / p95", ms("search")),
    ])


if __name__ == "__main__":
    main()
