"""Sentence vectors, computed once: each sentence of an abstract the answer step reads is
embedded once per embedder and kept on disk, so a question about papers read before costs
only its retrieval.

Every question reads its retrieved abstracts sentence by sentence (`context.read`): the
findings, the excerpts and the claim check all rest on the sentences' vectors. Embedding them
is most of what the evidence costs: about 80 sentences, 0.1 to 0.45 s of both cores per
question on the machines we measured, where retrieval takes 15 ms. Sixteen questions at once
then wait seconds for their findings. The vectors depend only on the sentence and the model,
so they are kept (``diskcache``: SQLite, safe across threads and processes, bounded by
``Settings.sentence_cache_mb``, least recently stored evicted first), keyed by the embedder's
``model_id`` and the text. `warm` fills the store ahead of questions for an index's abstracts,
a paper at a time, pausing while any question is being answered; the app runs it in the
background after start-up.

Nothing here is part of the index's state: a lost or evicted vector is computed again, the
same one.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import diskcache
import numpy as np

from assistant.corpus.sections import parts
from assistant.index.embedders.base import Embedder
from assistant.types import Abstract

PAUSE_S = 0.2


class SentenceVectors:
    """An `Embedder` for abstracts' sentences: ``embedder``'s vectors, each computed once and
    kept under ``directory`` (see the module docstring)."""

    def __init__(self, directory: Path, embedder: Embedder, size_mb: int = 1024) -> None:
        self.embedder = embedder
        self.model_id = embedder.model_id
        self.dimension = embedder.dimension
        self.cache = diskcache.Cache(str(directory), size_limit=size_mb * 1024 * 1024)

    def _key(self, text: str) -> str:
        return hashlib.sha1(f"{self.model_id}\n{text}".encode()).hexdigest()

    def embed(self, texts: list[str]) -> np.ndarray:
        """The texts' vectors: those kept, and the others embedded now (in one call) and kept."""
        keys = [self._key(text) for text in texts]
        kept = [self.cache.get(key) for key in keys]
        missing = [i for i, vector in enumerate(kept) if vector is None]
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for i, vector in enumerate(kept):
            if vector is not None:
                out[i] = np.frombuffer(vector, dtype=np.float32)
        if missing:
            fresh = self.embedder.embed([texts[i] for i in missing])
            out[missing] = fresh
            with self.cache.transact():
                for i, vector in zip(missing, fresh, strict=True):
                    self.cache.set(keys[i], np.asarray(vector, dtype=np.float32).tobytes())
        return out

    def warm(self, abstracts: Iterable[Abstract], busy: Callable[[], bool] = lambda: False, most: int | None = None,
             stop: Callable[[], bool] = lambda: False) -> int:
        """Compute the sentence vectors of these abstracts (``most`` of them at most) that are
        not kept yet, one abstract at a time, waiting while ``busy()`` (a question is being
        answered) and ending before the next abstract once ``stop()`` (the app is exiting):
        returns how many abstracts were embedded."""
        embedded = 0
        for number, abstract in enumerate(abstracts):
            if (most is not None and number >= most) or stop():
                break
            sentences = [p.sentence for p in parts(abstract) if p.sentence]
            if all(self._key(s) in self.cache for s in sentences):
                continue
            while busy() and not stop():
                time.sleep(PAUSE_S)
            if stop():
                break
            self.embed(sentences)
            embedded += 1
        return embedded
