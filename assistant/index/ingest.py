"""Ingest: load → deduplicate → chunk → embed in batches → write crash-safely, file by file.

Each batch of abstracts goes through the store's commit protocol (pending → chunks →
done), so an ingest killed at any moment and run again ends with every abstract indexed
exactly once. Abstracts already indexed, by id or by DOI/PMID/arXiv id, are skipped before
anything is embedded. They go into one library (the shared one, or a user's private one);
duplicates are looked for only where the user can see (that library and the shared one), so
an ingest never tells anyone what another user's private library holds.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from itertools import islice
from pathlib import Path

import numpy as np
from tqdm import tqdm

from assistant import corpus
from assistant.corpus import Source
from assistant.index.checkpoint import Checkpoint
from assistant.index.chunking import chunk, embedding_text
from assistant.index.embedders import Embedder
from assistant.index.store import ChromaStore
from assistant.settings import Settings
from assistant.types import SHARED, Abstract, IngestProgress, IngestReport, Rejected


def _mean_vectors(vectors: np.ndarray, owners: list[int], count: int) -> np.ndarray:
    """One vector per abstract: the normalised mean of its chunk vectors."""
    sums = np.zeros((count, vectors.shape[1]), dtype=np.float32)
    np.add.at(sums, owners, vectors)
    return sums / np.clip(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12, None)


class _Deduplicator:
    """Tells which loaded abstracts are new: not earlier in their batch and not in the index, by
    id (text-equal records without an id share their content-hash id) or by identity (a DOI,
    PMID or arXiv id another record has) in the ``seen`` libraries. Earlier batches are
    committed, so the index answers for them: memory does not grow with the ingest, and the
    cost of a batch is that of its lookups, whatever the index holds."""

    def __init__(self, store: ChromaStore, report: IngestReport, seen: tuple[str, ...]) -> None:
        self.store, self.report, self.seen = store, report, seen

    def new(self, batch: list[Abstract]) -> list[Abstract]:
        """The abstracts of this batch to index (the others are counted as duplicates)."""
        fresh: list[Abstract] = []
        ids: set[str] = set()
        keys: set[str] = set()
        for abstract in batch:
            if abstract.key in ids:
                self.report.duplicates += 1
            elif keys.intersection(abstract.identity):
                self.report.duplicates += 1
                self.report.by_identifier += 1
            else:
                fresh.append(abstract)
                ids.add(abstract.key)
                keys.update(abstract.identity)
        held = {a.key: {replace(a, library=library).key for library in self.seen} for a in fresh}
        found = self.store.indexed_ids(key for keys in held.values() for key in keys)
        indexed = {key for key, keys in held.items() if keys & found}
        known = self.store.indexed_identity((k for a in fresh if a.key not in indexed for k in a.identity), self.seen)
        new = [a for a in fresh if a.key not in indexed and not known.intersection(a.identity)]
        self.report.duplicates += len(fresh) - len(new)
        self.report.by_identifier += len(fresh) - len(new) - len(indexed)
        return new


def _capped(batch: list[Abstract], room: int | None, report: IngestReport) -> list[Abstract]:
    """The first ``room`` abstracts of the batch (all when ``room`` is None); the others are
    rejected because the library is full."""
    if room is None or len(batch) <= room:
        return batch
    for a in batch[room:]:
        report.reject(Rejected(a.source, None, f"not added: the library is full ({a.title[:60]!r}); remove papers "
                               "or raise ASSISTANT_LIBRARY_MAX_ABSTRACTS"))
    return batch[:room]


class _Writer:
    """Embeds and commits batches of one library, within its room."""

    def __init__(self, store: ChromaStore, embedder: Embedder, settings: Settings, report: IngestReport,
                 library: str, limit: int | None) -> None:
        self.store, self.embedder, self.settings, self.report = store, embedder, settings, report
        self.dedup = _Deduplicator(store, report, tuple(dict.fromkeys((library, SHARED))))
        self.room = None if limit is None else max(0, limit - store.library_count(library))

    def write(self, loaded: list[Abstract]) -> None:
        batch = _capped(self.dedup.new(loaded), self.room, self.report)
        if not batch:
            return
        if self.room is not None:
            self.room -= len(batch)
        chunks, owners = [], []
        for position, abstract in enumerate(batch):
            pieces = chunk(abstract, self.settings.chunk_size, self.settings.chunk_overlap)
            chunks += pieces
            owners += [position] * len(pieces)
        by_id = {a.key: a for a in batch}
        vectors = self.embedder.embed([embedding_text(by_id[c.abstract_id], c) for c in chunks])
        self.store.begin(batch, _mean_vectors(vectors, owners, len(batch)))
        self.store.add_chunks(chunks, vectors, by_id)
        self.store.commit(batch)
        self.report.added += len(batch)
        self.report.chunks += len(chunks)


def ingest(
    paths: Iterable[str | Path],
    store: ChromaStore,
    embedder: Embedder,
    settings: Settings,
    progress: bool = False,
    on_progress: Callable[[IngestProgress], None] | None = None,
    library: str = SHARED,
    limit: int | None = None,
) -> IngestReport:
    """Index every new abstract found under ``paths`` into ``library``; return what happened.

    Files are read one at a time as a stream, a batch at a time, so a folder of PubMed
    baseline files is never held whole. Each finished file is noted (`Checkpoint`): an ingest
    killed midway and run again with the same paths resumes at the first unfinished file.
    ``on_progress`` gets an `IngestProgress` after each batch and file; ``progress`` shows one
    as a bar on stderr. With a ``limit``, the library holds at most that many abstracts:
    those beyond it are rejected.
    """
    started = time.perf_counter()
    paths, report = list(paths), IngestReport()
    store.recover()
    checkpoint = Checkpoint(settings.data_dir / f"{settings.collection}.ingest-checkpoint.json")
    finished = checkpoint.start(paths, library)
    found = list(corpus.sources(paths))
    files = [item for item in found if isinstance(item, Source)]
    meter = IngestProgress(files_total=len(files), bytes_total=sum(f.size for f in files))
    bar = tqdm(total=meter.bytes_total, unit="B", unit_scale=True, desc="ingest", disable=not progress)
    writer = _Writer(store, embedder, settings, report, library, limit)
    limits = corpus.RecordLimits(settings.max_record_tokens, settings.truncate_long_records)
    current: Source | None = None  # the file being read
    read_bytes = 0  # of the files read to the end

    def tell() -> None:
        meter.added, meter.seconds = report.added, time.perf_counter() - started
        meter.bytes_done = read_bytes + (current.meter.position if current else 0)
        bar.total = meter.bytes_total
        bar.update(meter.bytes_done - bar.n)
        bar.set_postfix_str(meter.line())  # redrawn after every batch: a slow file still shows life
        if on_progress:
            on_progress(meter)

    for item in found:
        if isinstance(item, Rejected):
            report.reject(item)
            continue
        if item.fingerprint in finished:
            report.resumed_files += 1
            meter.bytes_total -= item.size  # the pace and time left are of what this run reads
        else:
            current = item
            records = corpus.read(item, limits)
            while loaded := list(islice(records, settings.ingest_batch_size)):
                meter.records += len(loaded)
                for rejected in (r for r in loaded if isinstance(r, Rejected)):
                    report.reject(rejected)
                writer.write([replace(a, library=library) for a in loaded if isinstance(a, Abstract)])
                tell()
            checkpoint.finished_file(item.fingerprint)
            current, read_bytes = None, read_bytes + item.size
        meter.files_done += 1
        tell()
    checkpoint.finish()
    bar.close()
    report.seconds = time.perf_counter() - started
    return report
