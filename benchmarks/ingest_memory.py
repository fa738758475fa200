"""Memory of reading and ingesting large PubMed XML files: does peak RSS grow with file size?

    python benchmarks/ingest_memory.py [--sizes 5000,20000,50000] [--ingest 50000] [--work DIR]

Writes PubMed XML files of each size (``PubmedArticleSet``; each article a PubMedQA-L
abstract from ``benchmarks/data/pubmedqa`` split into labelled sections, with its own PMID),
then, each in a fresh process so that each peak RSS is its own:

- **read**: every article through `corpus.load` (parse, map, reject nothing);
- **ingest**: ``--ingest`` articles through `Assistant.ingest` into embedded Chroma, once as
  one file and once as ten files of a tenth each. The index is the same size both ways, so
  any difference in peak RSS is the file's. The vectors are random unit vectors of the
  embedder's dimension (stated in the output): embedding 50,000 abstracts with the real
  model takes about half an hour here, and does not touch the file-reading path measured.

Never part of the test run.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from xml.sax.saxutils import escape

import numpy as np

from assistant import Abstract, Assistant, corpus
from assistant.corpus.display import sentences
from results import row, save

ROOT = Path(__file__).resolve().parent.parent
PUBMEDQA = ROOT / "benchmarks" / "data" / "pubmedqa" / "corpus.jsonl"
LABELS = ("BACKGROUND", "METHODS", "RESULTS")


def _article(pmid: int, text: str) -> str:
    parts = sentences(text)
    third = max(1, len(parts) // 3)
    sections = [parts[:third], parts[third : 2 * third], parts[2 * third :]]
    abstract = "".join(
        f'<AbstractText Label="{label}">{escape(" ".join(body))}</AbstractText>'
        for label, body in zip(LABELS, sections, strict=True) if body
    )
    return (
        f"<PubmedArticle><MedlineCitation Status=\"MEDLINE\" Owner=\"NLM\"><PMID Version=\"1\">{pmid}</PMID>"
        "<Article><Journal><JournalIssue><PubDate><Year>2020</Year></PubDate></JournalIssue>"
        "<Title>Benchmark Journal</Title></Journal>"
        f"<ArticleTitle>Benchmark article {pmid}</ArticleTitle><Abstract>{abstract}</Abstract>"
        "<AuthorList><Author><LastName>Bench</LastName><ForeName>Mark</ForeName></Author></AuthorList>"
        f"</Article></MedlineCitation><PubmedData><ArticleIdList><ArticleId IdType=\"pubmed\">{pmid}</ArticleId>"
        "</ArticleIdList></PubmedData></PubmedArticle>\n"
    )


def write_xml(path: Path, first: int, count: int) -> None:
    """``count`` articles with PMIDs from ``first``, cycling through the PubMedQA abstracts."""
    texts = [json.loads(line)["text"] for line in PUBMEDQA.read_text().splitlines()]
    with path.open("w") as out:
        out.write('<?xml version="1.0" ?>\n<PubmedArticleSet>\n')
        for n in range(count):
            out.write(_article(first + n, texts[n % len(texts)]))
        out.write("</PubmedArticleSet>\n")


class RandomVectors:
    """Random unit vectors in place of the embedder (the reading path is what is measured)."""

    def __init__(self, model_id: str, dimension: int) -> None:
        self.model_id, self.dimension = f"random:{model_id}", dimension
        self.rng = np.random.default_rng(0)

    def embed(self, texts: list[str]) -> np.ndarray:
        vectors = self.rng.normal(size=(len(texts), self.dimension)).astype(np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(step: str, files: list[Path], work: Path) -> dict[str, float]:
    """Run one step in this process and return its figures."""
    started = time.perf_counter()
    if step == "read":
        count = sum(isinstance(item, Abstract) for item in corpus.load(files))
        return {"abstracts": count, "seconds": time.perf_counter() - started, "peak_mb": _peak_mb()}
    assistant = Assistant(data_dir=work, auto_ingest=False, collection="memory")
    assistant.embedder = RandomVectors(assistant.embedder.model_id, assistant.embedder.dimension)
    baseline = _peak_mb()
    report = assistant.ingest(files)
    return {"abstracts": report.added, "rejected": len(report.rejected), "seconds": time.perf_counter() - started,
            "peak_mb": _peak_mb(), "before_mb": baseline}


def run_child(step: str, files: list[Path], work: Path) -> dict[str, float]:
    command = [sys.executable, __file__, "--child", step, "--work", str(work), *map(str, files)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="5000,20000,50000")
    parser.add_argument("--ingest", type=int, default=50000, help="articles ingested (one file, then ten)")
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("files", nargs="*", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.files, args.work)))
        return

    work = args.work or Path(tempfile.mkdtemp(prefix="ingest-memory-"))
    work.mkdir(parents=True, exist_ok=True)
    rows, details = [], {}
    for size in [int(s) for s in args.sizes.split(",")]:
        path = work / f"pubmed-{size}.xml"
        write_xml(path, 30_000_000, size)
        figures = run_child("read", [path], work)
        megabytes = path.stat().st_size / 2**20
        details[f"read_{size}"] = {**figures, "file_mb": megabytes}
        rows.append(row(f"xml_read_{size}", f"read {size:,} PubMed XML articles ({megabytes:.0f} MB file)",
                        f"peak RSS {figures['peak_mb']:.0f} MB, {figures['seconds']:.1f} s "
                        f"({figures['abstracts'] / figures['seconds']:.0f} articles/s)"))
        print(rows[-1]["figure"], rows[-1]["value"], file=sys.stderr)

    total = args.ingest
    whole = work / f"ingest-whole-{total}.xml"
    write_xml(whole, 40_000_000, total)
    parts = []
    for n in range(10):
        part = work / f"ingest-part-{n}.xml"
        write_xml(part, 40_000_000 + n * (total // 10), total // 10)
        parts.append(part)
    for name, files in (("one file", [whole]), ("ten files", parts)):
        index = work / f"index-{name.replace(' ', '-')}"
        figures = run_child("ingest", files, index)
        details[f"ingest_{name.replace(' ', '_')}"] = figures
        rows.append(row(f"xml_ingest_{name.replace(' ', '_')}", f"ingest {total:,} articles as {name} (random vectors)",
                        f"peak RSS {figures['peak_mb']:.0f} MB (after opening the models {figures['before_mb']:.0f} MB), "
                        f"{figures['seconds']:.0f} s, {figures['abstracts']:,} added"))
        print(rows[-1]["figure"], rows[-1]["value"], file=sys.stderr)
    save("ingest_memory", "Memory of reading and ingesting PubMed XML", rows,
         note="Each figure from its own process. Reading streams the XML (defusedxml iterparse, each article freed); "
              "ingest reads a batch at a time and keeps only ids and identifiers, so a file's size does not set "
              "the peak. What still grows with the index is the index itself (Chroma's HNSW graph, BM25).",
         details=details)


if __name__ == "__main__":
    main()
