"""Memory of reading and ingesting large PubMed XML files: does peak RSS grow with file size?

    python benchmarks/ingest_memory.py [--sizes 5000,20000,50000] [--ingest 50000] [--work DIR]

Writes PubMed XML files of each size (``PubmedArticleSet``; each article a PubMedQA-L
abstract from ``benchmarks/data/pubmedqa`` split into labelled sections, with its own PMID),
then, each in a fresh process so that each peak RSS is its own:

- **read**: every article through `corpus.load` (parse, map, reject nothing), from the plain
  file, gzipped (``.xml.gz``, as the PubMed baseline ships), and the same abstracts as an
  OpenAlex snapshot part (gzipped JSON Lines of works with inverted-index abstracts,
  ``part_000.gz``) and as one JSON document (a list, streamed with ijson);
- **ingest**: ``--ingest`` articles through `Assistant.ingest` into embedded Chroma, once as
  one file and once as ten files of a tenth each. The index is the same size both ways, so
  any difference in peak RSS is the file's. The vectors are random unit vectors of the
  embedder's dimension (stated in the output): embedding 50,000 abstracts with the real
  model takes about half an hour here, and does not touch the file-reading path measured.

Never part of the test run.
"""

from __future__ import annotations

import argparse
import gzip
import json
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


def write_openalex(path: Path, first: int, count: int, document: bool = False) -> None:
    """The same abstracts as OpenAlex works: gzipped JSON Lines (a snapshot part) or, with
    ``document``, one JSON list."""
    texts = [json.loads(line)["text"] for line in PUBMEDQA.read_text().splitlines()]

    def work(n: int) -> dict:
        inverted: dict[str, list[int]] = {}
        for position, word in enumerate(texts[n % len(texts)].split()):
            inverted.setdefault(word, []).append(position)
        return {"id": f"https://openalex.org/W{first + n}", "title": f"Benchmark work {first + n}",
                "publication_year": 2020, "abstract_inverted_index": inverted,
                "authorships": [{"author": {"display_name": "Mark Bench"}}]}

    if document:
        with path.open("w") as out:
            out.write("[" + ",\n".join(json.dumps(work(n)) for n in range(count)) + "]")
        return
    with gzip.open(path, "wt") as out:
        for n in range(count):
            out.write(json.dumps(work(n)) + "\n")


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
    """This process's peak RSS (VmHWM: unlike ru_maxrss, not inherited from the parent that
    started it, which holds the files it wrote)."""
    status = Path("/proc/self/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:"))) / 1024


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
        packed = path.with_suffix(".xml.gz")
        packed.write_bytes(gzip.compress(path.read_bytes()))
        part, listed = work / f"openalex-{size}" / "part_000.gz", work / f"openalex-{size}.json"
        part.parent.mkdir(exist_ok=True)
        write_openalex(part, 30_000_000, size)
        write_openalex(listed, 30_000_000, size, document=True)
        for key, what, file in (("xml", "PubMed XML articles", path), ("xml_gz", "PubMed XML articles, gzipped", packed),
                                ("openalex_gz", "OpenAlex works, a gzipped snapshot part", part),
                                ("json", "OpenAlex works, one JSON list", listed)):
            figures = run_child("read", [file], work)
            megabytes = file.stat().st_size / 2**20
            details[f"read_{key}_{size}"] = {**figures, "file_mb": megabytes}
            rows.append(row(f"{key}_read_{size}", f"read {size:,} {what} ({megabytes:.0f} MB file)",
                            f"peak RSS {figures['peak_mb']:.0f} MB, {figures['seconds']:.1f} s "
                            f"({figures['abstracts'] / figures['seconds']:.0f} records/s)"))
            print(rows[-1]["figure"], rows[-1]["value"], file=sys.stderr)

    total = args.ingest
    whole = work / f"ingest-whole-{total}.xml"
    write_xml(whole, 40_000_000, total)
    parts = []
    for n in range(10):
        part = work / f"ingest-part-{n}.xml.gz"
        write_xml(part.with_suffix(""), 40_000_000 + n * (total // 10), total // 10)
        part.write_bytes(gzip.compress(part.with_suffix("").read_bytes()))
        part.with_suffix("").unlink()
        parts.append(part)
    for key, name, files in (("one_file", "one file", [whole]), ("ten_gz_files", "ten gzipped files", parts)):
        figures = run_child("ingest", files, work / f"index-{key}")
        details[f"ingest_{key}"] = figures
        rows.append(row(f"xml_ingest_{key}", f"ingest {total:,} articles as {name} (random vectors)",
                        f"peak RSS {figures['peak_mb']:.0f} MB (after opening the models {figures['before_mb']:.0f} MB), "
                        f"{figures['seconds']:.0f} s, {figures['abstracts']:,} added"))
        print(rows[-1]["figure"], rows[-1]["value"], file=sys.stderr)
    save("ingest_memory", "Memory of reading and ingesting PubMed XML", rows,
         note="Each figure from its own process. Reading streams the XML (defusedxml iterparse, each article freed), "
              "gzip as it decompresses, JSON Lines a line at a time and a JSON document a record at a time (ijson); "
              "ingest reads a file at a time and a batch at a time and holds one batch's ids and identifiers, so a "
              "file's size does not set the peak. What still grows with the index is the index itself (Chroma's HNSW "
              "graph, BM25).",
         details=details)


if __name__ == "__main__":
    main()
