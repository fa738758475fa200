"""How ingest and search cost grow with the corpus: 10k, 100k, 1M synthetic abstracts.

    python benchmarks/scale.py [--sizes 10000,100000,1000000] [--scifact ../shared/data/scifact]
                               [--queries 100] [--work DIR] [--add 10000] [--ingest-budget-s S] [--resume]
                               [--steps build,search] [--cold] [--results NAME]

Synthetic abstracts recombine sentences of SciFact abstracts (seeded): 5–9 sentences each,
the title of a random SciFact paper, a DOI and a PMID. Their text is always real, so BM25
sees real term statistics. Vectors: up to 10,000 abstracts (``--real-up-to``) the real embedder (all-MiniLM-L6-v2,
ONNX) embeds every chunk; above that, each chunk's vector is *sampled*: the real vector
of a random chunk from a pool of 2,000, plus Gaussian noise (σ 0.02 per dimension),
renormalised. HNSW, disk and memory then behave as with real vectors, and the run fits
the machine. The table says which sizes used which. Questions are always embedded by the
real model, so search latency includes that cost at every size.

Each size is built in one process and searched in another, so each peak RSS is its own.
Build: ingest through `Assistant.ingest` (chunking, ledger, Chroma, BM25; progress in
``work/progress-SIZE.log`` as "done total seconds" lines), index size on disk, then the
cost of adding ``--add`` abstracts to the full index, split into Chroma writes (with their
embedding) and the BM25 update; at real-embedder sizes also the embedding throughput inside
ingest against raw onnxruntime on the same texts. Search: the app's start-up (a fresh
process to its page served; a question asked at that moment, to its sources and findings;
Chroma's vector index loaded), latency p50/p95 of the dense
side, the BM25 side and the hybrid `search(k=10)` on embedded Chroma, the cost of
deduplicating one ingest batch against the index, then `chroma run` on the same files: its
start-up and latencies. ``--steps search`` re-measures search on the indexes a previous run
left in ``--work``, ``--steps add`` adds ``--add`` more abstracts to one in a process of its
own (its peak RSS is then the add's); ``--steps ""`` only tabulates the results earlier runs
left there (sizes built at different times). A size too large for the time at hand can be
built in parts: ``--ingest-budget-s`` stops its ingest (at a committed batch) and measures
the index it reached, which the table shows as "N of SIZE"; ``--resume`` continues from
there; stop a build that way, not by killing it: once, at 515,000 abstracts, a killed build
resumed after its SQLite file's journal mode was changed left Chroma's vector files out of step
with its write log, and the index had to be built again. A build stopped by hand while other work is timed (``kill -STOP``) has its pauses
listed in ``work/pauses.log`` (see `ingest_timeline`); they are taken out of its ingest time,
which is shown over each tenth of the build too. ``--cold`` drops the page cache before the
search step, as after a reboot; ``--results NAME`` saves to ``benchmarks/results/NAME.json``
(a size built with other code than the rest). Never part of the test run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from assistant import Abstract, Assistant, corpus, evaluation
from assistant.corpus.display import sentences
from assistant.index.embedders import Embedder
from assistant.index.ingest import _Deduplicator
from assistant.index.ingest import ingest as run_ingest
from assistant.types import SHARED, IngestProgress, IngestReport, Retrieved
from results import row, save

ROOT = Path(__file__).resolve().parent.parent
POOL = 2_000


def write_corpus(scifact: Path, size: int, path: Path, seed: int, prefix: str = "syn") -> None:
    """``size`` synthetic abstracts as JSONL, recombined from SciFact's sentences, each with
    a DOI and a PMID of its own (so that deduplication by identifier has an index to search)."""
    source = [a for a in corpus.load([scifact / "corpus.jsonl"]) if isinstance(a, Abstract)]
    pool = [s for a in source for s in sentences(a.text) if len(s) > 40]
    titles = [a.title for a in source]
    rng = random.Random(seed)
    with path.open("w") as out:
        for i in range(size):
            text = " ".join(rng.sample(pool, rng.randint(5, 9)))
            record = {"id": f"{prefix}-{i}", "title": rng.choice(titles), "abstract": text,
                      "doi": f"10.5555/{prefix}.{i}", "pmid": str(seed * 10_000_000 + i)}
            out.write(json.dumps(record) + "\n")


class TimedEmbedder:
    """The real embedder, counting the texts it embeds and the seconds it takes."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.model_id, self.dimension = inner, inner.model_id, inner.dimension
        self.texts: list[str] = []
        self.seconds = 0.0

    def embed(self, texts: list[str]) -> np.ndarray:
        started = time.perf_counter()
        vectors = self.inner.embed(texts)
        self.seconds += time.perf_counter() - started
        self.texts += texts
        return vectors


class SampledEmbedder:
    """Real vectors of a pool of chunks, plus noise: stands in for the embedder at sizes
    the machine cannot embed in a benchmark run (stated in the output)."""

    def __init__(self, pool: np.ndarray, model_id: str) -> None:
        self.pool, self.dimension = pool, pool.shape[1]
        self.model_id = f"sampled:{model_id}"
        self.rng = np.random.default_rng(0)

    def embed(self, texts: list[str]) -> np.ndarray:
        vectors = self.pool[self.rng.integers(0, len(self.pool), len(texts))]
        vectors = vectors + self.rng.normal(0, 0.02, vectors.shape).astype(np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def raw_onnx_throughput(embedder: Any, texts: list[str]) -> float:
    """Chunks/s of onnxruntime alone on these texts: tokenized beforehand, same batches."""
    order = sorted(texts, key=len)
    batches = []
    for start in range(0, len(order), embedder.batch_size):
        encodings = embedder.tokenizer.encode_batch(order[start : start + embedder.batch_size])
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        batches.append((ids, np.array([e.attention_mask for e in encodings], dtype=np.int64)))
    started = time.perf_counter()
    for ids, mask in batches:
        embedder.session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})
    return len(texts) / (time.perf_counter() - started)


def latencies(assistant: Assistant, queries: list[str]) -> dict[str, dict[str, float]]:
    """p50/p95 of each retrieval side and of the hybrid search, warm."""
    retriever, depth = assistant.retriever, assistant.settings.fusion_depth
    sides = {
        "dense": lambda q: retriever.dense(q, depth, None),
        "bm25": lambda q: retriever.lexical(q, depth, None),
        "hybrid": lambda q: assistant.search(q, k=10),
    }
    return {name: evaluation.time_calls(call, queries) for name, call in sides.items()}


def disk_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20


def chroma_server(path: Path, port: int) -> subprocess.Popen:
    """`chroma run` on an index's Chroma files; returns once it answers."""
    import httpx

    process = subprocess.Popen(
        [str(Path(sys.executable).parent / "chroma"), "run", "--path", str(path), "--host", "127.0.0.1",
         "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(600):
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1).status_code == 200:
                return process
        except httpx.HTTPError:
            time.sleep(0.5)
    raise RuntimeError("the chroma server did not start")


class RealQueries:
    """The real embedder under the sampled index's model id: searches of a sampled index
    pay the real cost of embedding the question."""

    def __init__(self, inner: Embedder, model_id: str) -> None:
        self.inner, self.model_id, self.dimension = inner, model_id, inner.dimension

    def embed(self, texts: list[str]) -> np.ndarray:
        return self.inner.embed(texts)


def open_index(size: int, work: Path, real_up_to: int, timed: bool, searching: bool = False, **settings: Any) -> Assistant:
    """The assistant over one size's index, with the real or the sampled embedder (for
    searching a sampled index: the real one, relabelled); ``settings``: more `Settings`."""
    assistant = Assistant(**{"data_dir": work / f"index-{size}", "auto_ingest": False, "collection": "scale", **settings})
    if size > real_up_to:
        sampled = SampledEmbedder(np.load(work / "pool.npy"), assistant.embedder.model_id)
        assistant.embedder = RealQueries(assistant.embedder, sampled.model_id) if searching else sampled
    elif timed:
        assistant.embedder = TimedEmbedder(assistant.embedder)
    return assistant


def ingest_timeline(work: Path, size: int) -> tuple[list[tuple[int, float]], float]:
    """(abstracts committed, ingest seconds) after each batch of one size's build, and the
    seconds it was paused. Across resumes: a resumed run counts from 0 again (its own lines
    are added to what the runs before it committed; the seconds carry on). Less pauses:
    ``work/pauses.log`` lists spans when the build was stopped by hand to keep other timings
    clean (``kill -STOP``/``-CONT``; lines "STOP|CONT <epoch s> <abstracts> <progress s>"), and
    each span is taken out of every line after it. Empty if the progress log is gone."""
    log, pauses_log = work / f"progress-{size}.log", work / "pauses.log"
    if not log.exists():
        return [], 0.0
    pauses, stopped = [], None
    for line in pauses_log.read_text().splitlines() if pauses_log.exists() else []:
        kind, epoch, _, at = line.split()[:4]
        if kind == "STOP" and stopped is None:  # a second STOP before CONT: still the first one's span
            stopped = (float(epoch), float(at))
        elif kind == "CONT" and stopped:
            pauses.append((stopped[1], float(epoch) - stopped[0]))
            stopped = None
    timeline, before, last = [], 0, 0
    for line in log.read_text().splitlines():
        done, seconds = int(line.split()[0]), float(line.split()[1])
        if done < last:  # a resumed run
            before += last
        last = done
        timeline.append((before + done, seconds - sum(span for at, span in pauses if seconds > at)))
    return timeline, sum(span for _, span in pauses)


def rates_by_tenth(timeline: list[tuple[int, float]], size: int) -> list[float]:
    """Abstracts/s over each tenth of the build (0-10%, 10-20%, …) from its timeline."""
    marks = [next(((n, t) for n, t in timeline if n >= size * tenth // 10), None) for tenth in range(11)]
    marks[0] = (0, 0.0)
    return [(b[0] - a[0]) / (b[1] - a[1]) for a, b in zip(marks, marks[1:]) if a and b and b[1] > a[1]]


class BudgetSpent(Exception):
    """Raised from the progress callback to stop an ingest at its time budget."""


def peak_rss_mb() -> float:
    """This process's peak RSS (VmHWM: unlike ru_maxrss, not inherited from its parent)."""
    status = Path("/proc/self/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:"))) / 1024


def build(size: int, work: Path, scifact: Path, real_up_to: int, add: int, resume: bool = False,
          budget_s: float | None = None) -> dict[str, Any]:
    """Ingest one size: time, throughput, disk; then add ``add`` more abstracts to it.

    From scratch, or with ``resume`` continuing the ingest a stopped run left (the ingest is
    crash-safe, so only committed batches count; the seconds spent before are read from the
    progress log and added). With ``budget_s`` the ingest stops at the first batch past that
    many seconds (both runs together) and the index is measured at the size it reached.
    """
    data, corpus_file = work / f"index-{size}", work / f"corpus-{size}.jsonl"
    log_path = work / f"progress-{size}.log"
    earlier = 0.0
    if resume and corpus_file.exists() and log_path.exists():
        earlier = float(log_path.read_text().split()[-1])
    else:
        shutil.rmtree(data, ignore_errors=True)
        log_path.unlink(missing_ok=True)
        write_corpus(scifact, size, corpus_file, seed=size)
    assistant = open_index(size, work, real_up_to, timed=True)
    result: dict[str, Any] = {"size": size, "vectors": "sampled" if size > real_up_to else "real"}
    log = log_path.open("a")
    started = time.perf_counter()

    def progress(done: IngestProgress) -> None:
        """Abstracts done and seconds so far, kept even if the run is stopped."""
        elapsed = earlier + time.perf_counter() - started
        log.write(f"{done.added} {elapsed:.1f}\n")
        log.flush()
        if budget_s is not None and elapsed > budget_s:
            raise BudgetSpent

    stopped = False
    try:
        assistant.ingest([corpus_file], on_progress=progress)
    except BudgetSpent:
        stopped = True
        assistant.refresh_lexical(force=True)
    result["ingest_s"] = earlier + time.perf_counter() - started
    result["indexed"] = sum(not i.startswith("extra") for i in assistant.store.indexed_id_list())
    result["chunks"] = assistant.store.chunk_count()
    result["abstracts_per_s"] = result["indexed"] / result["ingest_s"]
    if isinstance(assistant.embedder, TimedEmbedder):
        embedder = assistant.embedder
        result["embed_in_ingest_chunks_per_s"] = len(embedder.texts) / embedder.seconds
        result["raw_onnx_chunks_per_s"] = raw_onnx_throughput(embedder.inner, embedder.texts[:4000])
    result["disk_mb"] = disk_mb(data)
    result["ingest_peak_rss_mb"] = peak_rss_mb()

    result["add"] = add_more(assistant, size, work, scifact, add, seed=size + 1)
    result["peak_rss_mb"] = peak_rss_mb()
    if not stopped:
        corpus_file.unlink()
    return result


def add_more(assistant: Assistant, size: int, work: Path, scifact: Path, add: int, seed: int) -> dict[str, Any]:
    """Add ``add`` new abstracts (ids, DOIs and PMIDs of their own, by ``seed``) to the index:
    seconds of Chroma writes (with their embedding), then of the BM25 update."""
    extra = work / f"extra-{size}.jsonl"
    write_corpus(scifact, add, extra, seed=seed, prefix=f"extra{seed}")
    started = time.perf_counter()
    report = run_ingest([extra], assistant.store, assistant.embedder, assistant.settings)
    written = time.perf_counter()
    assistant.refresh_lexical(force=True)
    return {"abstracts": report.added, "chroma_s": written - started, "bm25_update_s": time.perf_counter() - written}


def add_step(size: int, work: Path, scifact: Path, real_up_to: int, add: int) -> dict[str, Any]:
    """Adding to a built index in a process of its own, as a user's later ingest is: its
    time and this process's peak RSS."""
    assistant = open_index(size, work, real_up_to, timed=False)
    before = sum(assistant.sources().values())
    added = add_more(assistant, size, work, scifact, add, seed=size + 1 + before)
    return {"add": {**added, "before": before, "peak_rss_mb": peak_rss_mb()}}


def process_age_s() -> float:
    """Seconds since this process started (Python's start-up and imports included)."""
    started_ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
    return float(Path("/proc/uptime").read_text().split()[0]) - started_ticks / os.sysconf("SC_CLK_TCK")


def dedup_cost(assistant: Assistant, size: int, scifact: Path, work: Path) -> dict[str, float]:
    """Milliseconds to deduplicate one ingest batch against the index (median of 5): new
    abstracts; abstracts already indexed (found by id); the same under other ids (found by
    DOI and PMID)."""
    batch_size = assistant.settings.ingest_batch_size
    probe = work / f"probe-{size}.jsonl"
    write_corpus(scifact, batch_size, probe, seed=7, prefix="probe")
    new = [a for a in corpus.load([probe]) if isinstance(a, Abstract)]
    known = list(assistant.store.read_abstracts(assistant.store.indexed_id_list()[-batch_size:]))
    batches = {"new": new, "known_by_id": known,
               "known_by_identifier": [replace(a, id=f"other-{a.id}") for a in known]}
    costs = {"batch": float(batch_size)}
    for name, batch in batches.items():
        times = []
        for _ in range(5):
            started = time.perf_counter()
            _Deduplicator(assistant.store, IngestReport(), (SHARED,)).new(batch)
            times.append((time.perf_counter() - started) * 1000)
        costs[name] = sorted(times)[2]
    return costs


def app_startup(size: int, work: Path, real_up_to: int, question: str) -> tuple[Assistant, dict[str, float]]:
    """The app on this index, started as `python app.py` starts it (in this process: the
    index's sampled-embedder label keeps app.py itself from opening it): seconds from the
    process's start until its page is served; then ``question`` is asked at once, as a user
    would, while the app loads its indexes: seconds until its first update (sources and
    findings, `Retrieved`) and whether it was searched by keywords alone (Chroma's vector index
    still loading); then until a search is hybrid (the app's warm-up has loaded that index).
    Returns the assistant, warm."""
    import httpx

    sys.path.insert(0, str(ROOT))
    import app

    imported = process_age_s()
    port = 8700 + os.getpid() % 1000
    # As the app (auto_ingest: it checks that the index holds abstracts), but its warm-up only
    # loads the indexes: computing sentence vectors ahead of questions would run on both cores
    # under the latencies measured next (the app pauses it for questions, not for searches).
    assistant = open_index(size, work, real_up_to, timed=False, searching=True, app_host="127.0.0.1", app_port=port,
                           auto_ingest=True, warm_sentences=0)
    assistant.ensure_corpus()
    demo = app.launch(assistant, block=False)
    while httpx.get(f"http://127.0.0.1:{port}/", timeout=60).status_code != 200:
        time.sleep(0.1)
    served = process_age_s()
    events = assistant.ask_events(question)
    first = next(event for event in events if isinstance(event, Retrieved))
    events.close()  # the first update is what is timed, not the model's answer
    first_update = process_age_s()
    keyword_only = any(hit.keyword_only for hit in first.hits)
    hits = first.hits
    while hits and hits[0].keyword_only:  # until Chroma's vector index is loaded
        hits = assistant.search(question, k=1)
    ready = process_age_s()
    demo.close()
    return assistant, {"imports_s": imported, "page_s": served, "first_question_s": first_update - served,
                       "first_keyword_only": float(keyword_only), "search_ready_s": ready}


def measure(size: int, work: Path, scifact: Path, queries: list[str], real_up_to: int,
            cold: bool = False) -> dict[str, Any]:
    """App start-up (``cold``: from a dropped page cache), search latency and deduplication
    cost on one size's index: embedded Chroma, then the same files via `chroma run`."""
    if cold:
        os.sync()
        try:
            Path("/proc/sys/vm/drop_caches").write_text("3\n")
        except OSError as error:
            sys.exit(f"--cold needs root to drop the page cache ({error}); run without it for a warm start")
    assistant, startup = app_startup(size, work, real_up_to, queries[0])
    result: dict[str, Any] = {"startup": {**startup, "cold": cold}}
    result["embedded"] = latencies(assistant, queries)
    result["search_peak_rss_mb"] = peak_rss_mb()
    result["dedup_ms"] = dedup_cost(assistant, size, scifact, work)
    port = 8500 + size % 997
    started = time.perf_counter()
    server = chroma_server(work / f"index-{size}" / "chroma", port)
    try:
        answering = time.perf_counter()
        remote = Assistant(data_dir=work / f"index-{size}", auto_ingest=False, collection="scale",
                           chroma_host="127.0.0.1", chroma_port=port)
        remote.embedder = assistant.embedder
        remote.search(queries[0], k=10)
        result["server_startup"] = {"heartbeat_s": answering - started, "first_search_s": time.perf_counter() - answering}
        result["server"] = latencies(remote, queries)
    finally:
        server.terminate()
        server.wait(timeout=60)
    return result


def child(step: str, size: int, work: Path, scifact: Path, queries: list[str], real_up_to: int,
          add: int, resume: bool, budget_s: float | None, cold: bool) -> None:
    """One step (build, add or search) for one size; results are merged into work/result-SIZE.json."""
    path = work / f"result-{size}.json"
    if step == "build":
        path.write_text(json.dumps(build(size, work, scifact, real_up_to, add, resume, budget_s)))
    elif step == "add":
        path.write_text(json.dumps({**json.loads(path.read_text()), **add_step(size, work, scifact, real_up_to, add)}))
    else:
        path.write_text(json.dumps({**json.loads(path.read_text()), **measure(size, work, scifact, queries, real_up_to, cold)}))


def build_pool(scifact: Path, work: Path) -> None:
    """Real vectors of 2,000 synthetic chunks, for the sampled sizes."""
    pool_file = work / "pool-corpus.jsonl"
    write_corpus(scifact, POOL, pool_file, seed=1)
    assistant = Assistant(data_dir=work / "pool-index", auto_ingest=False)
    texts = [json.loads(line)["abstract"][:600] for line in pool_file.read_text().splitlines()]
    np.save(work / "pool.npy", assistant.embedder.embed(texts))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--scifact", type=Path, default=ROOT.parent / "shared/data/scifact")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--work", type=Path, default=None, help="where indexes are built (default: a temp dir)")
    parser.add_argument("--real-up-to", type=int, default=10_000, help="largest size embedded for real")
    parser.add_argument("--steps", default="build,search",
                        help="what to run for each size, in order: build, add (to a built index, in its own process), "
                        "search; none (\"\") tabulates earlier results")
    parser.add_argument("--resume", action="store_true",
                        help="continue the ingest a stopped run left in --work instead of starting over")
    parser.add_argument("--ingest-budget-s", type=float, default=None,
                        help="stop each ingest after this many seconds and measure the size reached")
    parser.add_argument("--add", type=int, default=10_000,
                        help="abstracts added to each built index, to time an update")
    parser.add_argument("--note", default="", help="how the run went (shown with its figures): what else ran, resumes")
    parser.add_argument("--results", default="scale",
                        help="name of the results file (benchmarks/results/NAME.json) and of its figures' keys")
    parser.add_argument("--cold", action="store_true",
                        help="drop the page cache before the search step's app start-up (needs root), as after a reboot")
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--step", choices=["build", "add", "search"], default="build", help=argparse.SUPPRESS)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="scale-"))
    work.mkdir(parents=True, exist_ok=True)
    queries = [json.loads(line)["text"] for line in (args.scifact / "queries.jsonl").read_text().splitlines()]
    queries = queries[: args.queries]

    if args.child is not None:
        child(args.step, args.child, work, args.scifact, queries, args.real_up_to, args.add, args.resume,
              args.ingest_budget_s, args.cold)
        return

    sizes = [int(s) for s in args.sizes.split(",")]
    if any(s > args.real_up_to for s in sizes) and not (work / "pool.npy").exists():
        build_pool(args.scifact, work)
    results = []
    for size in sizes:
        print(f"size {size:,}…", file=sys.stderr, flush=True)
        command = [sys.executable, __file__, "--child", str(size), "--work", str(work), "--scifact",
                   str(args.scifact), "--queries", str(args.queries), "--real-up-to", str(args.real_up_to),
                   "--add", str(args.add)]
        command += ["--resume"] * args.resume + ["--cold"] * args.cold
        if args.ingest_budget_s is not None:
            command += ["--ingest-budget-s", str(args.ingest_budget_s)]
        for step in filter(None, args.steps.split(",")):
            finished = subprocess.run(command + ["--step", step], capture_output=True, text=True)
            if finished.returncode != 0:
                sys.exit(f"size {size:,}, {step} failed:\n{finished.stderr[-3000:]}")
        results.append(json.loads((work / f"result-{size}.json").read_text()))
        print(json.dumps(results[-1]), file=sys.stderr, flush=True)
    if unsearched := [f"{r['size']:,}" for r in results if "embedded" not in r]:
        sys.exit(f"built, not yet searched: {', '.join(unsearched)}; measure with --steps search")
    for r in results:  # ingest time less the pauses made by hand, and its rate as the index grew
        timeline, r["paused_s"] = ingest_timeline(work, r["size"])
        r["ingest_s"] -= r["paused_s"]
        r["abstracts_per_s"] = r["indexed"] / r["ingest_s"]
        r["rates_by_tenth"] = rates_by_tenth(timeline, r["size"])

    print("\n| abstracts | vectors | chunks | ingest s | abstracts/s | disk MB | peak RSS MB ingest / search | "
          "dense p50/p95 ms | BM25 p50/p95 | hybrid p50/p95 | server hybrid p50/p95 | server dense p50/p95 | "
          "add N: Chroma s + BM25 update s | app start-up s: page / first search ready / server first search | "
          "dedup ms per batch: new / by id / by DOI |")
    print("|" + "---|" * 15)
    for r in results:
        def pair(side: dict[str, float]) -> str:
            return f"{side['p50_ms']:.0f} / {side['p95_ms']:.0f}"
        e, s, d = r["embedded"], r["server"], r["dedup_ms"]
        reached = f"{r['indexed']:,}" + ("" if r["indexed"] >= r["size"] else f" of {r['size']:,}")
        print(f"| {reached} | {r['vectors']} | {r['chunks']:,} | {r['ingest_s']:.0f} | {r['abstracts_per_s']:.1f} | "
              f"{r['disk_mb']:.0f} | {r['ingest_peak_rss_mb']:.0f} / {r['search_peak_rss_mb']:.0f} | {pair(e['dense'])} | {pair(e['bm25'])} | "
              f"{pair(e['hybrid'])} | {pair(s['hybrid'])} | {pair(s['dense'])} | "
              f"{r['add']['abstracts']:,}: {r['add']['chroma_s']:.1f} + {r['add']['bm25_update_s']:.1f} | "
              f"{r['startup']['page_s']:.1f} / {r['startup']['search_ready_s']:.1f} / "
              f"{r['server_startup']['heartbeat_s'] + r['server_startup']['first_search_s']:.1f} | "
              f"{d['new']:.0f} / {d['known_by_id']:.0f} / {d['known_by_identifier']:.0f} |")
    for r in results:
        if "raw_onnx_chunks_per_s" in r:
            share = r["embed_in_ingest_chunks_per_s"] / r["raw_onnx_chunks_per_s"]
            print(f"\nembedding throughput at {r['size']:,}: inside ingest {r['embed_in_ingest_chunks_per_s']:.1f} "
                  f"chunks/s (tokenizing included), raw onnxruntime {r['raw_onnx_chunks_per_s']:.1f} chunks/s "
                  f"(pre-tokenized): {share:.0%}")
    rows = []
    for r in results:
        e, s, d, up = r["embedded"], r["server"], r["dedup_ms"], r["startup"]
        built = f"{r['indexed']:,} abstracts ({r['vectors']} vectors)"
        searched = r["add"].get("before", r["indexed"] + r["add"]["abstracts"])  # the build added some
        at = f"{searched:,} abstracts ({r['vectors']} vectors)"
        rows += [
            row(f"{args.results}_ingest_{r['size']}", f"{built}: ingest", f"{r['ingest_s']:.0f} s ({r['abstracts_per_s']:.0f} abstracts/s), "
                f"{r['disk_mb']:.0f} MB on disk, peak RSS {r['ingest_peak_rss_mb']:.0f} MB"),
            *([row("", f"{built}: ingest rate over each tenth of the build (abstracts/s)",
                   ", ".join(f"{rate:.0f}" for rate in r["rates_by_tenth"])
                   + (f" ({r['paused_s']:.0f} s paused by hand taken out)" if r["paused_s"] else ""))]
              if len(r["rates_by_tenth"]) > 1 else []),
            row(f"{args.results}_search_{r['size']}", f"{at}: hybrid search p50 / p95, embedded / Chroma server",
                f"{e['hybrid']['p50_ms']:.0f} / {e['hybrid']['p95_ms']:.0f} ms, {s['hybrid']['p50_ms']:.0f} / "
                f"{s['hybrid']['p95_ms']:.0f} ms"),
            row("", f"{at}: dense / BM25 side p95", f"{e['dense']['p95_ms']:.0f} / {e['bm25']['p95_ms']:.0f} ms"),
            row(f"{args.results}_serving_{r['size']}", f"{at}: peak RSS while searching", f"{r['search_peak_rss_mb']:.0f} MB"),
            row("", f"{at}: adding {r['add']['abstracts']:,} abstracts, Chroma + BM25 update",
                f"{r['add']['chroma_s']:.1f} + {r['add']['bm25_update_s']:.1f} s (peak RSS "
                f"{r['add'].get('peak_rss_mb', r['peak_rss_mb']):.0f} MB"
                + (", in a process of its own)" if "peak_rss_mb" in r["add"] else ", in the ingest's process)")),
            row("", f"{at}: app start-up" + (" from a dropped page cache" if up.get("cold") else "")
                + ": page served / first search ready (Chroma's vector index loaded, from start-up on)",
                f"{up['page_s']:.1f} / {up['search_ready_s']:.1f} s"),
            *([row(f"{args.results}_first_question_{r['size']}", f"{at}: a question asked as the page is served: its sources "
                   "and findings, s after the page", f"{up['first_question_s']:.1f} s ("
                   + ("by keywords alone: the vector index was loading)" if up["first_keyword_only"] else "hybrid)"))]
              if "first_question_s" in up else []),
            row("", f"{at}: `chroma run` on the index: answering its heartbeat + the first search",
                f"{r['server_startup']['heartbeat_s']:.1f} + {r['server_startup']['first_search_s']:.1f} s"),
            row("", f"{at}: deduplicating one batch of {d['batch']:.0f}: new / indexed (by id) / indexed under other ids (by DOI, PMID)",
                f"{d['new']:.0f} / {d['known_by_id']:.0f} / {d['known_by_identifier']:.0f} ms"),
        ]
        if "raw_onnx_chunks_per_s" in r:
            rows.append(row("", f"{at}: embedding inside ingest / raw onnxruntime",
                            f"{r['embed_in_ingest_chunks_per_s']:.0f} / {r['raw_onnx_chunks_per_s']:.0f} chunks/s"))
    save(args.results, f"Scale: {', '.join(f'{size:,}' for size in sizes)} synthetic abstracts recombined from SciFact",
         rows, note=args.note)


if __name__ == "__main__":
    main()
