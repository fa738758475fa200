"""Ingest: load → deduplicate → chunk → embed in batches → write crash-safely.

Each batch of abstracts goes through the store's commit protocol (pending → chunks →
done), so an ingest killed at any moment and run again ends with every abstract indexed
exactly once. Abstracts already indexed are skipped before anything is embedded.
"""

from __future__ import annotations

import time
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
from assistant.types import Abstract, IngestReport, Rejected


def _batches(items: Iterable[Abstract], size: int) -> Iterator[list[Abstract]]:
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch


def _mean_vectors(vectors: np.ndarray, owners: list[int], count: int) -> np.ndarray:
    """One vector per abstract: the normalised mean of its chunk vectors."""
    sums = np.zeros((count, vectors.shape[1]), dtype=np.float32)
    np.add.at(sums, owners, vectors)
    return sums / np.clip(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12, None)


def ingest(
    paths: Iterable[str | Path],
    store: ChromaStore,
    embedder: Embedder,
    settings: Settings,
    progress: bool = False,
    on_batch: Callable[[int, int], None] | None = None,
) -> IngestReport:
    """Index every new abstract found under ``paths``; return what happened.

    ``on_batch(done, total)`` is called after each committed batch (e.g. for a UI).
    """
    started = time.perf_counter()
    report = IngestReport()
    store.recover()
    unique: dict[str, Abstract] = {}
    limits = corpus.RecordLimits(settings.max_record_tokens, settings.truncate_long_records)
    for item in corpus.load(paths, limits):
        if isinstance(item, Rejected):
            report.rejected.append(item)
        elif item.id in unique:
            report.duplicates += 1
        else:
            unique[item.id] = item
    already = store.indexed_ids(unique)
    report.duplicates += len(already)
    new = [a for a in unique.values() if a.id not in already]

    bar = tqdm(total=len(new), unit="abstract", desc="ingest", disable=not progress)
    for batch in _batches(new, settings.ingest_batch_size):
        chunks, owners = [], []
        for position, abstract in enumerate(batch):
            pieces = chunk(abstract, settings.chunk_size, settings.chunk_overlap)
            chunks += pieces
            owners += [position] * len(pieces)
        by_id = {a.id: a for a in batch}
        vectors = embedder.embed([embedding_text(by_id[c.abstract_id], c) for c in chunks])
        store.begin(batch, _mean_vectors(vectors, owners, len(batch)))
        store.add_chunks(chunks, vectors, by_id)
        store.commit(batch)
        report.added += len(batch)
        report.chunks += len(chunks)
        bar.update(len(batch))
        if on_batch:
            on_batch(report.added, len(new))
    bar.close()
    report.seconds = time.perf_counter() - started
    return report
