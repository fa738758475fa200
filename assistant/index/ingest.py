"""Ingest: load → deduplicate → chunk → embed in batches → write crash-safely.

Each batch of abstracts goes through the store's commit protocol (pending → chunks →
done), so an ingest killed at any moment and run again ends with every abstract indexed
exactly once. Abstracts already indexed, by id or by DOI/PMID/arXiv id, are skipped before
anything is embedded. They go into one library (the shared one, or a user's private one);
duplicates are looked for only where the user can see (that library and the shared one), so
an ingest never tells anyone what another user's private library holds.
"""

from __future__ import annotations

import time
from dataclasses import replace
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from pathlib import Path

import numpy as np
from tqdm import tqdm

from assistant import corpus
from assistant.index.chunking import chunk, embedding_text
from assistant.index.embedders import Embedder
from assistant.index.store import ChromaStore
from assistant.settings import Settings
from assistant.types import SHARED, Abstract, IngestReport, Rejected


def _batches(items: Iterable[Abstract], size: int) -> Iterator[list[Abstract]]:
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch


def _mean_vectors(vectors: np.ndarray, owners: list[int], count: int) -> np.ndarray:
    """One vector per abstract: the normalised mean of its chunk vectors."""
    sums = np.zeros((count, vectors.shape[1]), dtype=np.float32)
    np.add.at(sums, owners, vectors)
    return sums / np.clip(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12, None)


class _Deduplicator:
    """Tells which loaded abstracts are new: not seen earlier in this ingest and not in the
    index, by id (text-equal records without an id share their content-hash id) or by
    identity (a DOI, PMID or arXiv id another record has) in the ``seen`` libraries. Holds
    only ids and keys, so an ingest's memory does not grow with its abstracts' text."""

    def __init__(self, store: ChromaStore, report: IngestReport, seen: tuple[str, ...]) -> None:
        self.store, self.report, self.seen = store, report, seen
        self.ids: set[str] = set()
        self.keys: set[str] = set()

    def new(self, batch: list[Abstract]) -> list[Abstract]:
        """The abstracts of this batch to index (the others are counted as duplicates)."""
        fresh: list[Abstract] = []
        for abstract in batch:
            if abstract.key in self.ids:
                self.report.duplicates += 1
            elif self.keys.intersection(abstract.identity):
                self.report.duplicates += 1
                self.report.by_identifier += 1
            else:
                fresh.append(abstract)
                self.ids.add(abstract.key)
                self.keys.update(abstract.identity)
        held = {a.key: {replace(a, library=library).key for library in self.seen} for a in fresh}
        found = self.store.indexed_ids(key for keys in held.values() for key in keys)
        indexed = {key for key, keys in held.items() if keys & found}
        known = self.store.indexed_identity((k for a in fresh if a.key not in indexed for k in a.identity), self.seen)
        new = [a for a in fresh if a.key not in indexed and not known.intersection(a.identity)]
        self.report.duplicates += len(fresh) - len(new)
        self.report.by_identifier += len(fresh) - len(new) - len(indexed)
        return new


def _loaded(
    paths: Iterable[str | Path], settings: Settings, report: IngestReport, library: str
) -> Iterator[Abstract]:
    """The loaded abstracts, streamed, as records of ``library``; rejected records go into
    the report."""
    limits = corpus.RecordLimits(settings.max_record_tokens, settings.truncate_long_records)
    for item in corpus.load(paths, limits):
        if isinstance(item, Rejected):
            report.rejected.append(item)
        else:
            yield replace(item, library=library)


def _capped(batch: list[Abstract], room: int | None, report: IngestReport) -> list[Abstract]:
    """The first ``room`` abstracts of the batch (all when ``room`` is None); the others are
    rejected because the library is full."""
    if room is None or len(batch) <= room:
        return batch
    report.rejected += [
        Rejected(a.source, None, f"not added: the library is full ({a.title[:60]!r}); remove papers or raise "
                 "ASSISTANT_LIBRARY_MAX_ABSTRACTS")
        for a in batch[room:]
    ]
    return batch[:room]


def ingest(
    paths: Iterable[str | Path],
    store: ChromaStore,
    embedder: Embedder,
    settings: Settings,
    progress: bool = False,
    on_batch: Callable[[int, int | None], None] | None = None,
    library: str = SHARED,
    limit: int | None = None,
) -> IngestReport:
    """Index every new abstract found under ``paths`` into ``library``; return what happened.

    Files are read as a stream, a batch at a time, so a 50,000-record export is never held
    whole. ``on_batch(added, None)`` is called after each committed batch (e.g. for a UI;
    the total is not known until the files have been read). With a ``limit``, the library
    holds at most that many abstracts: those beyond it are rejected.
    """
    started = time.perf_counter()
    report = IngestReport()
    store.recover()
    dedup = _Deduplicator(store, report, tuple(dict.fromkeys((library, SHARED))))
    room = None if limit is None else max(0, limit - store.library_count(library))
    bar = tqdm(unit="abstract", desc="ingest", disable=not progress)
    for loaded in _batches(_loaded(paths, settings, report, library), settings.ingest_batch_size):
        batch = _capped(dedup.new(loaded), room, report)
        if not batch:
            continue
        if room is not None:
            room -= len(batch)
        chunks, owners = [], []
        for position, abstract in enumerate(batch):
            pieces = chunk(abstract, settings.chunk_size, settings.chunk_overlap)
            chunks += pieces
            owners += [position] * len(pieces)
        by_id = {a.key: a for a in batch}
        vectors = embedder.embed([embedding_text(by_id[c.abstract_id], c) for c in chunks])
        store.begin(batch, _mean_vectors(vectors, owners, len(batch)))
        store.add_chunks(chunks, vectors, by_id)
        store.commit(batch)
        report.added += len(batch)
        report.chunks += len(chunks)
        bar.update(len(batch))
        if on_batch:
            on_batch(report.added, None)
    bar.close()
    report.seconds = time.perf_counter() - started
    return report
