"""What accounts and private libraries cost a search: 10,000 abstracts, 10 users.

    python benchmarks/libraries.py [--scifact ../shared/data/scifact] [--queries 100] [--work DIR]

The index: 5,000 shared abstracts and 500 private ones for each of 10 users (synthetic
abstracts recombined from SciFact's sentences, as in benchmarks/scale.py). Their vectors are
*sampled* (a real chunk vector of a pool of 2,000, plus noise) and recorded under the real
model's name, so that the app opens the index; questions are embedded by the real model, so
every search pays the real embedding cost. Figures:

- per-user filtering: hybrid `search(k=10)` p50/p95 in Python, the operator's view (every
  library, no filter: the search as it was before libraries) against a user's view (the
  shared library and one private one; each query asked for one of the 10 users in turn);
- login: the app's ``/search`` endpoint through gradio_client, p50/p95, without accounts
  against logged in as a user (login plus filtering; the Python difference is the filtering).

Never part of the test run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from assistant import Abstract, Assistant, corpus
from assistant.evaluation import latency_summary, time_calls
from results import row, save
from scale import SampledEmbedder, write_corpus

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from browser import start_app, stop  # noqa: E402

USERS = [f"user{n}" for n in range(10)]
SHARED, PRIVATE_EACH, POOL = 5_000, 500, 2_000


def build(work: Path, scifact: Path) -> Assistant:
    """The index: shared abstracts by the operator, then each user's private ones."""
    operator = Assistant(data_dir=work / "data", auto_ingest=False)
    real = operator.embedder
    texts = [a.text for a in corpus.load([scifact / "corpus.jsonl"]) if isinstance(a, Abstract)][:POOL]
    operator.embedder = SampledEmbedder(real.embed(texts), real.model_id)
    operator.embedder.model_id = real.model_id  # so that the app, with the real embedder, opens it
    write_corpus(scifact, SHARED, work / "shared.jsonl", seed=1, prefix="shared")
    operator.ingest([work / "shared.jsonl"])
    for n, name in enumerate(USERS):
        operator.accounts.add(name, f"{name}-password")
        write_corpus(scifact, PRIVATE_EACH, work / f"{name}.jsonl", seed=100 + n, prefix=name)
        operator.as_user(name).ingest([work / f"{name}.jsonl"])
    operator.embedder = real
    return operator


def python_latencies(operator: Assistant, queries: list[str]) -> dict[str, dict[str, float]]:
    """Hybrid search p50/p95 (ms): the operator's view, and users' views in turn."""
    views = [operator.as_user(name) for name in USERS]
    for view in views:
        view.embedder = operator.embedder
    turn = iter(range(10**9))
    return {
        "operator": time_calls(lambda q: operator.search(q, k=10), queries),
        "user": time_calls(lambda q: views[next(turn) % len(views)].search(q, k=10), queries),
    }


def app_latencies(work: Path, queries: list[str], login: bool) -> dict[str, float]:
    """The app's /search p50/p95 (ms) through gradio_client, logged in as user0 or without accounts."""
    from gradio_client import Client

    accounts, aside = work / "data" / "users.json", work / "users.json.aside"
    if not login:
        accounts.rename(aside)
    try:
        process, url = start_app(work / "data", work / f"app-{login}.log", auto_ingest="false")
        try:
            client = Client(url, auth=("user0", "user0-password") if login else None, verbose=False)
            client.predict(queries[0], 10, api_name="/search")
            seconds = []
            for query in queries:
                started = time.perf_counter()
                client.predict(query, 10, api_name="/search")
                seconds.append(time.perf_counter() - started)
        finally:
            stop(process)
    finally:
        if not login:
            aside.rename(accounts)
    return latency_summary(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scifact", type=Path, default=ROOT.parent / "shared" / "data" / "scifact")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--work", type=Path, help="folder for the index (default: a temporary one, removed)")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="libraries-"))
    work.mkdir(parents=True, exist_ok=True)
    queries = [json.loads(line)["text"] for line in (args.scifact / "queries.jsonl").read_text().splitlines()]
    queries = queries[: args.queries]
    try:
        started = time.perf_counter()
        operator = build(work, args.scifact)
        built = time.perf_counter() - started
        python = python_latencies(operator, queries)
        del operator
        apps = {login: app_latencies(work, queries, login) for login in (False, True)}
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)

    def pair(figures: dict[str, float]) -> str:
        return f"{figures['p50_ms']:.0f} / {figures['p95_ms']:.0f} ms"

    filtering = python["user"]["p95_ms"] / python["operator"]["p95_ms"] - 1
    login_cost = apps[True]["p95_ms"] - apps[False]["p95_ms"]
    rows = [
        row("libraries_filter_p95", "hybrid search p50 / p95, operator's view (no filter) / a user's view",
            f"{pair(python['operator'])} / {pair(python['user'])} (filtering {100 * filtering:+.0f}% at p95)"),
        row("libraries_login_p95", "app /search p50 / p95, no accounts / logged in (login and filtering)",
            f"{pair(apps[False])} / {pair(apps[True])} ({login_cost:+.0f} ms at p95)"),
    ]
    details: dict[str, Any] = {"python": python, "app": {"no_accounts": apps[False], "logged_in": apps[True]},
                               "build_seconds": round(built, 1)}
    path = save(
        "libraries", f"Accounts and private libraries: {SHARED + PRIVATE_EACH * len(USERS):,} abstracts, "
        f"{len(USERS)} users", rows,
        note=f"{SHARED:,} shared abstracts and {PRIVATE_EACH} private ones for each of {len(USERS)} users; sampled "
             f"vectors (questions embedded by the real model); {len(queries)} SciFact queries.", **details)
    print(json.dumps({r["figure"]: r["value"] for r in rows}, indent=2))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
