"""Search: question → ranked abstracts.

Dense retrieval over chunk vectors, aggregated to abstracts (an abstract scores as its
best-matching chunk, and that chunk is its passage).
"""

from __future__ import annotations

from assistant.index.embedders import Embedder
from assistant.index.store import ChromaStore
from assistant.types import Hit

CHUNKS_PER_RESULT = 4


def dense_search(question: str, k: int, store: ChromaStore, embedder: Embedder) -> list[Hit]:
    """The ``k`` abstracts whose best chunk is most similar to the question."""
    vector = embedder.embed([question])[0]
    best: dict[str, tuple[float, str]] = {}
    for abstract_id, text, score in store.query_chunks(vector, k * CHUNKS_PER_RESULT):
        if abstract_id not in best or score > best[abstract_id][0]:
            best[abstract_id] = (score, text)
    ranked = sorted(best.items(), key=lambda item: -item[1][0])
    abstracts = store.get_abstracts([abstract_id for abstract_id, _ in ranked])
    hits = [(abstracts[i], score, text) for i, (score, text) in ranked if i in abstracts]
    return [
        Hit(abstract=abstract, score=score, rank=rank, passage=text)
        for rank, (abstract, score, text) in enumerate(hits[:k], start=1)
    ]
