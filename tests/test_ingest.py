"""Ingest into real Chroma (embedded and a `chroma run` server) with the real embedder:
counts, incremental skips, crash recovery after SIGKILL, dedupe, rejected records."""

from __future__ import annotations

import gzip
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from assistant import Assistant, corpus, references
from assistant.index.chunking import chunk
from assistant.index.ingest import ingest as run_ingest
from assistant.index.store import ChromaStore
from assistant.settings import BUNDLED_CORPUS, Settings
from assistant.types import Abstract

from conftest import SAMPLE_UNIQUE


def _expected_chunks(settings) -> int:
    unique = {a.id: a for a in corpus.load([BUNDLED_CORPUS]) if isinstance(a, Abstract)}
    return sum(len(chunk(a, settings.chunk_size, settings.chunk_overlap)) for a in unique.values())


def _assert_consistent(assistant: Assistant, abstracts: int, chunks: int) -> None:
    """Exactly these counts, and every chunk belongs to a committed abstract."""
    store = assistant.store
    assert store.count() == abstracts
    assert store.chunk_count() == chunks
    owners = {m["abstract_id"] for m in store.chunks.get(include=["metadatas"])["metadatas"]}
    assert owners == store.indexed_ids(owners)
    assert len(store.abstracts.get(include=[])["ids"]) == abstracts


@pytest.mark.slow
def test_sample_corpus_ingests_330_abstracts_then_nothing_new(sample_index: Assistant) -> None:
    _assert_consistent(sample_index, SAMPLE_UNIQUE, _expected_chunks(sample_index.settings))
    again = sample_index.ingest([BUNDLED_CORPUS])
    assert (again.added, again.chunks) == (0, 0)
    assert again.duplicates == 337
    stats = sample_index.stats()
    assert stats["abstracts"] == SAMPLE_UNIQUE and sum(stats["by_source"].values()) == SAMPLE_UNIQUE


@pytest.mark.slow
def test_interrupted_batch_is_rolled_back_and_redone(tmp_path: Path) -> None:
    """A crash between writing chunks and committing leaves pending records; the next
    ingest removes them with their chunks and indexes the abstracts once."""
    source = tmp_path / "papers.jsonl"
    rows = [{"id": f"p{i}", "title": f"Paper {i}", "abstract": f"Abstract number {i} studies topic {i} in depth " * 3}
            for i in range(6)]
    source.write_text("\n".join(json.dumps(r) for r in rows))
    assistant = Assistant(data_dir=tmp_path / "index", auto_ingest=False)
    loaded = [a for a in corpus.load([source]) if isinstance(a, Abstract)]
    crashed = loaded[:3]
    pieces = [c for a in crashed for c in chunk(a, 128, 16)]
    vectors = assistant.embedder.embed([c.text for c in pieces])
    assistant.store.begin(crashed, vectors[: len(crashed)])
    assistant.store.add_chunks(pieces, vectors, {a.id: a for a in crashed})
    assert assistant.store.count() == 0 and assistant.store.chunk_count() == len(pieces)
    assert assistant.search("Abstract number 1", k=3) == []

    report = assistant.ingest([source])
    assert (report.added, report.duplicates) == (6, 0)
    _assert_consistent(assistant, 6, 6)


@pytest.mark.slow
def test_sigkilled_ingest_rerun_ends_with_each_abstract_once(tmp_path: Path) -> None:
    env = {**os.environ, "ASSISTANT_DATA_DIR": str(tmp_path / "index"), "ASSISTANT_INGEST_BATCH_SIZE": "8"}
    command = [sys.executable, "-m", "assistant.cli", "ingest", str(BUNDLED_CORPUS)]
    for kill_after_batches in (2, 9):
        process = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        seen = 0
        for line in iter(lambda: process.stderr.read(1), ""):
            if line == "\r" or line == "\n":
                seen += 1
            if seen >= kill_after_batches + 1:
                break
        time.sleep(0.3)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        assert process.returncode == -signal.SIGKILL, "ingest finished before it could be killed"
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assistant = Assistant(data_dir=tmp_path / "index", auto_ingest=False)
    _assert_consistent(assistant, SAMPLE_UNIQUE, _expected_chunks(assistant.settings))


def test_rejected_records_are_reported_and_the_rest_indexed(tmp_path: Path) -> None:
    source = tmp_path / "mixed.jsonl"
    good = {"id": "g1", "title": "Good", "abstract": "A perfectly fine abstract about sparse retrieval models."}
    source.write_text(json.dumps(good) + "\n{broken\n" + json.dumps(good) + "\n")
    assistant = Assistant(data_dir=tmp_path / "index", auto_ingest=False)
    report = assistant.ingest([source, tmp_path / "missing.csv"])
    assert (report.added, report.duplicates, len(report.rejected)) == (1, 1, 2)
    assert "mixed.jsonl:2: invalid JSON" in report.summary()
    assert "missing.csv: no such file" in report.summary()
    (hit,) = assistant.search("sparse retrieval", k=5)
    assert hit.abstract.id == "g1" and hit.abstract.title == "Good"


FORMATS = Path(__file__).parent / "data" / "formats"


def test_one_paper_in_three_formats_is_indexed_once(tmp_path: Path) -> None:
    """The fasting trial is in a Zotero RIS file (DOI only), PubMed XML and MEDLINE (PMID and
    DOI); the sodium trial in MEDLINE and OpenAlex; the gait study in RIS and CSL JSON. Each
    is indexed once, whichever file comes first, in this ingest or a later one. (Two more
    abstracts are books, in pubmed-books.xml.)"""
    assistant = Assistant(data_dir=tmp_path / "index", auto_ingest=False)
    report = assistant.ingest([FORMATS])
    assert (report.added, report.duplicates, report.by_identifier, len(report.rejected)) == (8, 4, 4, 8)
    assert "skipped 4 duplicates (4 by DOI, PMID or arXiv id)" in report.summary()
    assert assistant.store.count() == 8
    [hit] = [h for h in assistant.search("intermittent fasting insulin sensitivity prediabetes", k=10)
             if "fasting" in h.abstract.title.lower()]
    assert hit.abstract.doi == "10.5555/exmp.2024.001"

    again = assistant.ingest([FORMATS])
    assert (again.added, again.duplicates, again.by_identifier) == (0, 12, 4)

    later = Assistant(data_dir=tmp_path / "second", auto_ingest=False)
    assert later.ingest([FORMATS / "pubmed.xml"]).added == 2
    from_zotero = later.ingest([FORMATS / "library.ris"])  # another file, another day: found in the index
    assert (from_zotero.added, from_zotero.duplicates, from_zotero.by_identifier) == (1, 1, 1)


def test_exported_ris_and_csl_json_reingest_as_duplicates(tmp_path: Path) -> None:
    assistant = Assistant(data_dir=tmp_path / "index", auto_ingest=False)
    assistant.ingest([FORMATS, BUNDLED_CORPUS / "000_f4a0e3667c329c35.txt"])
    papers = list(assistant.store.read_abstracts())
    (tmp_path / "out.ris").write_text(references.ris(papers))
    (tmp_path / "out.json").write_text(references.csl_json(papers))
    for exported in ("out.ris", "out.json"):
        report = assistant.ingest([tmp_path / exported])
        assert (report.added, report.duplicates, report.rejected) == (0, len(papers), []), exported


@pytest.mark.slow
def test_a_killed_ingest_of_many_files_resumes_at_the_file_it_was_in(tmp_path: Path) -> None:
    """Four gzipped JSON Lines files; the CLI is killed while its progress says file 3: run
    again, it skips files 1 and 2 without reading them and ends with each abstract once."""
    folder = tmp_path / "parts"
    folder.mkdir()
    words = "retrieval fusion sparse dense ranking corpus citation abstract question".split()
    for part in range(4):
        rows = [{"id": f"p{part}-{n}", "title": f"Paper {part}.{n}",
                 "abstract": f"Part {part} paper {n} studies " + " ".join(words[(n + k) % 9] for k in range(30)) + "."}
                for n in range(60)]
        (folder / f"part_{part}.gz").write_bytes(gzip.compress("\n".join(map(json.dumps, rows)).encode()))
    env = {**os.environ, "ASSISTANT_DATA_DIR": str(tmp_path / "index"), "ASSISTANT_INGEST_BATCH_SIZE": "4"}
    command = [sys.executable, "-m", "assistant.cli", "ingest", str(folder)]
    process = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    shown = ""
    for char in iter(lambda: process.stderr.read(1), ""):
        shown += char
        if "file 3 of 4 · 124 added" in shown:  # a batch into the third file
            break
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL, "ingest finished before it could be killed"
    assert "records/s" in shown and " left" in shown  # the progress line: files, rate, time left

    done = subprocess.run([*command, "-q"], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "resumed an interrupted ingest: 2 files it had finished were skipped" in done.stdout
    added, duplicates = (int(v) for v in re.search(r"added (\d+) abstracts .*skipped (\d+) duplicates", done.stdout).groups())
    assert duplicates >= 4 and added + duplicates == 120  # only files 3 and 4 were read
    assistant = Assistant(data_dir=tmp_path / "index", auto_ingest=False)
    assert assistant.store.count() == 240 and len(set(assistant.store.indexed_id_list())) == 240
    again = assistant.ingest([folder])  # a finished ingest leaves nothing to resume: all read again
    assert (again.resumed_files, again.added, again.duplicates) == (0, 0, 240)


class _RandomVectors:
    """A stand-in embedder (this test is about progress accounting, not vectors)."""

    model_id, dimension = "random:test", 8

    def embed(self, texts: list[str]) -> np.ndarray:
        vectors = np.random.default_rng(0).normal(size=(len(texts), self.dimension)).astype(np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_progress_moves_within_a_file_and_ends_at_the_whole(tmp_path: Path) -> None:
    path = tmp_path / "export.jsonl"
    rows = [{"id": f"r{n}", "abstract": f"Record {n} studies how sparse and dense retrieval combine on corpus {n}."
             if n % 100 == 0 else "too short"} for n in range(3000)]
    path.write_text("\n".join(map(json.dumps, rows)))
    settings = Settings(data_dir=tmp_path / "index", auto_ingest=False, ingest_batch_size=100)
    store = ChromaStore(settings, _RandomVectors.model_id)
    seen: list[tuple[float, str]] = []
    report = run_ingest([path], store, _RandomVectors(), settings,
                        on_progress=lambda p: seen.append((p.fraction, p.line())))
    assert report.added == 30 and report.rejected_count == 2970
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert any(0.2 < f < 0.8 for f in fractions), "the bar moves while the file is read, not only at its end"
    assert seen[-1][1].startswith("1 file · 30 added · ")
    assert not (tmp_path / "index" / f"{settings.collection}.ingest-checkpoint.json").exists()  # finished: no resume
