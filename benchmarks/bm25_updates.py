"""What keeping BM25 in step with Chroma costs as the corpus grows: a full build, then an
ingest's update that adds 100 abstracts; and what the lexical side of one search costs.

    python benchmarks/bm25_updates.py [--sizes 100000,1000000] [--scifact ../shared/data/scifact]
                                      [--work DIR]

The lexical index alone (`assistant.index.bm25.Bm25Index`, words, phrases and acronyms),
on synthetic abstracts recombined from SciFact's sentences (`scale.write_corpus`), with no
Chroma and no embedding: `scale.py` measures the whole ingest. Each step runs in its own
process, so each peak RSS is its own. The full build reads the corpus file as a stream, as
`Assistant.refresh_lexical` streams Chroma's ledger a page at a time, so its time includes
parsing the file. The update holds and reads only the 100 new abstracts, as after an
ingest. The search step loads the index and times, per SciFact query (warm), all that a
hybrid search asks of it (`HybridRetriever.rank` and `.search`): words and phrases to the
fusion depth, the subject bonus, and the coverage of the top 10. Never part of the test run.
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

from assistant import Abstract, corpus, evaluation
from assistant.index.bm25 import Bm25Index
from assistant.retrieval import subject_bonuses
from assistant.settings import Settings
from scale import write_corpus

ROOT = Path(__file__).resolve().parent.parent
ADDED = 100
QUERIES = 400  # SciFact queries timed by the search step


def _rss_gb() -> float:
    return int(Path("/proc/self/statm").read_text().split()[1]) * 4096 / 1e9


def _index(size: int, work: Path, settings: Settings) -> Bm25Index:
    """The lexical index of ``size`` abstracts, as the product's settings make it."""
    return Bm25Index(work / f"bm25-{size}", settings.bm25_k1, settings.bm25_b, settings.bm25_title_weight)


def lexical_side(index: Bm25Index, settings: Settings, question: str) -> None:
    """What one hybrid search asks of the lexical index."""
    words = index.search(question, settings.fusion_depth)
    index.search_phrases(question, settings.fusion_depth)
    subject_bonuses(question, index, settings.subject_weight, settings.unique_subject_weight)
    index.coverage(question, [i for i, _ in words[:10]])


def search_step(size: int, work: Path, scifact: Path) -> dict[str, float]:
    """Load time and p50/p95 (ms) of `lexical_side` over the index of ``size`` abstracts."""
    settings = Settings()
    started = time.perf_counter()
    index = _index(size, work, settings)
    loaded = time.perf_counter() - started
    with (scifact / "queries.jsonl").open() as lines:
        questions = [json.loads(line)["text"] for line in lines][:QUERIES]
    return {"load_s": loaded, **evaluation.time_calls(lambda q: lexical_side(index, settings, q), questions)}


def step(name: str, size: int, work: Path) -> dict[str, float]:
    """Build the index over the corpus file, read as a stream ("build"), or add the 100
    extra abstracts to it ("update": in memory, only those and the ids of the others)."""
    if name == "update":
        with (work / f"corpus-{size}.jsonl").open() as lines:
            indexed = [json.loads(line)["id"] for line in lines]
        added = {a.id: a for a in corpus.load([work / f"extra-{size}.jsonl"]) if isinstance(a, Abstract)}
    settings = Settings()
    gc.collect()
    loaded = _rss_gb()
    started = time.perf_counter()
    index = _index(size, work, settings)
    if name == "build":
        index.build(a for a in corpus.load([work / f"corpus-{size}.jsonl"]) if isinstance(a, Abstract))
    else:
        index.update(indexed + list(added), lambda ids: [added[i] for i in ids])
    return {
        "seconds": time.perf_counter() - started,
        "loaded_gb": loaded,
        "peak_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--scifact", type=Path, default=ROOT.parent / "shared" / "data" / "scifact")
    parser.add_argument("--work", type=Path, default=Path("/tmp/bm25-updates"))
    parser.add_argument("--step", help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.step:
        result = search_step(args.size, args.work, args.scifact) if args.step == "search" else step(
            args.step, args.size, args.work)
        print(json.dumps(result))
        return
    args.work.mkdir(parents=True, exist_ok=True)
    print("| abstracts | RSS at start | full build | peak RSS | update, +100 | peak RSS | load | lexical side p50 / p95 |")
    print("|---|---|---|---|---|---|---|---|")
    for size in (int(s) for s in args.sizes.split(",")):
        if not (args.work / f"corpus-{size}.jsonl").exists():
            write_corpus(args.scifact, size, args.work / f"corpus-{size}.jsonl", seed=size)
            write_corpus(args.scifact, ADDED, args.work / f"extra-{size}.jsonl", seed=size + 1, prefix="extra")
        runs = {}
        for name in ("build", "update", "search"):
            command = [sys.executable, __file__, "--step", name, "--size", str(size), "--work", str(args.work),
                       "--scifact", str(args.scifact)]
            output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
            runs[name] = json.loads(output.strip().splitlines()[-1])
        build, update, search = runs["build"], runs["update"], runs["search"]
        print(
            f"| {size:,} | {build['loaded_gb']:.1f} GB | {build['seconds']:.1f} s | {build['peak_gb']:.1f} GB "
            f"| {update['seconds']:.1f} s | {update['peak_gb']:.1f} GB | {search['load_s']:.1f} s "
            f"| {search['p50_ms']:.1f} / {search['p95_ms']:.1f} ms |",
            flush=True,
        )


if __name__ == "__main__":
    main()
