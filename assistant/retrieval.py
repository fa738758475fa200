"""Hybrid search: question → ranked abstracts.

1. Dense: the question is embedded once; Chroma returns the nearest chunks; each
   abstract scores as its best chunk, and that chunk is its passage.
2. Lexical: BM25 over whole abstracts (stemmed, stop words removed), and BM25 over their
   adjacent word pairs (phrases, weight ``phrase_weight``; `assistant.index.bm25`).
3. Fusion: distribution-based score fusion, the formula of llama-index's
   ``QueryFusionRetriever`` in ``dist_based_score`` mode: each side's scores over its top
   ``fusion_depth`` results are scaled linearly so that mean ± 3 standard deviations maps
   to 0..1, weighted, and summed (an abstract one side did not return gets 0 from it).
   It is written out here because both sides work on abstracts rather than llama-index
   nodes (the fusion retriever de-duplicates nodes by content hash) and the raw scores
   must survive fusion: they are the relevance signal the answering step abstains on.
   On SciFact train it scored like min-max and reciprocal-rank fusion or better
   (benchmarks/retrieval.py).

4. Subject bonus: when the question names its subject (a named term few abstracts
   contain, such as "Time-MoE"; see `subject_terms`), the abstracts that contain it gain
   ``subject_weight``, or ``unique_subject_weight`` when at most two abstracts have the
   name. BM25 sees "time" and "moe" as two common words, and in a small index a unique
   name ("What gains does DReSD report?") weighs less than two common words; the bonus
   makes the name count. On SciFact train nDCG@10 went from 0.741 to 0.746 with the
   first (plateau 0.1-0.3; 0.15 chosen) and to 0.749 with both (0.4-1.0 all within 0.001;
   0.5 chosen; the measurements are in docs/experiments.md and benchmarks/retrieval.py).

Filters (source file names, year range) apply on both sides, and so does the restriction to
the libraries a user may see (`HybridRetriever.libraries`), set by the caller's account,
never by what a client sends: nothing outside them is searched, counted as a subject, or
returned. On the dense side, Chroma's metadata filter cost 60 ms per query at 25,000 chunks
(against 1.5 ms unfiltered), so the nearest chunks are fetched unfiltered, enough of them for
the share of the index the user sees, and those outside the user's libraries are dropped; only
when too few remain is Chroma's filter used (`HybridRetriever._visible_nearest`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from assistant.corpus.display import sentences
from assistant.index.bm25 import ACRONYM, Bm25Index
from assistant.index.chunking import chunk, embedding_text
from assistant.index.embedders import Embedder
from assistant.index.store import ChromaStore, nearest_per_abstract, visible
from assistant.settings import Settings
from assistant.types import Abstract, Chunk, Hit
from assistant.words import question_names

CHUNKS_PER_ABSTRACT = 3
# Nearest chunks fetched unfiltered for a user's search: at most this many times what is needed.
MAX_OVERFETCH = 10
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class SearchFilters:
    """Restrict a search to some source files and/or a range of years (inclusive)."""

    sources: tuple[str, ...] = ()
    year_min: int | None = None
    year_max: int | None = None

    @classmethod
    def parse(cls, filters: SearchFilters | Mapping[str, Any] | None) -> SearchFilters | None:
        """Accept a `SearchFilters`, a dict (``source``/``sources``, ``year``,
        ``year_min``, ``year_max``) or None."""
        if filters is None or isinstance(filters, SearchFilters):
            return filters
        unknown = set(filters) - {"source", "sources", "year", "year_min", "year_max"}
        if unknown:
            raise ValueError(f"unknown filter(s) {sorted(unknown)}; use source, year, year_min, year_max")
        sources = filters.get("sources", filters.get("source", ()))
        year = filters.get("year")
        return cls(
            sources=(sources,) if isinstance(sources, str) else tuple(sources),
            year_min=filters.get("year_min", year),
            year_max=filters.get("year_max", year),
        )

    def for_chroma(self) -> dict[str, Any] | None:
        """The same restriction as a Chroma ``where`` clause on chunk metadata."""
        parts: list[dict[str, Any]] = []
        if self.sources:
            parts.append({"source": {"$in": list(self.sources)}})
        if self.year_min is not None:
            parts.append({"year": {"$gte": self.year_min}})
        if self.year_max is not None:
            parts.append({"year": {"$lte": self.year_max}})
        if len(parts) > 1:
            return {"$and": parts}
        return parts[0] if parts else None

    def mask(self, bm25: Bm25Index) -> np.ndarray:
        """The same restriction as a 0/1 mask over the BM25 index's abstracts."""
        keep = np.ones(len(bm25.ids), dtype=bool)
        if self.sources:
            keep &= np.isin(bm25.sources, list(self.sources))
        if self.year_min is not None:
            keep &= bm25.years >= self.year_min
        if self.year_max is not None:
            keep &= (bm25.years <= self.year_max) & (bm25.years > 0)
        return keep.astype(np.float32)


def _distribution_scaled(scores: dict[str, float]) -> dict[str, float]:
    """Scale scores so that mean - 3 sd → 0 and mean + 3 sd → 1 (as llama-index does)."""
    if not scores:
        return {}
    values = np.fromiter(scores.values(), dtype=np.float64)
    mean, spread = values.mean(), 6.0 * values.std()
    if spread == 0.0:
        return dict.fromkeys(scores, 1.0 if mean > 0 else 0.0)
    low = mean - spread / 2.0
    return {key: (value - low) / spread for key, value in scores.items()}


def fuse_weighted(signals: list[tuple[dict[str, float], float]]) -> list[tuple[str, float]]:
    """Distribution-based fusion of any number of (scores, weight) lists, best first
    (ties broken by id)."""
    fused: dict[str, float] = {}
    for scores, weight in signals:
        for key, value in _distribution_scaled(scores).items():
            fused[key] = fused.get(key, 0.0) + weight * value
    return sorted(fused.items(), key=lambda item: (-item[1], item[0]))


def fuse(
    dense: dict[str, float],
    lexical: dict[str, float],
    lexical_weight: float,
    phrases: dict[str, float] | None = None,
    phrase_weight: float = 0.0,
) -> list[tuple[str, float]]:
    """Distribution-based fusion of the dense and the lexical side, and the phrase side
    with ``phrase_weight`` (dense and lexical share the rest by ``lexical_weight``), best
    first."""
    rest = 1.0 - phrase_weight
    signals = [(dense, rest * (1.0 - lexical_weight)), (lexical, rest * lexical_weight)]
    return fuse_weighted([*signals, (phrases or {}, phrase_weight)])


# A named term of the question is its subject when at most this many abstracts contain it
# (or this share of the index, if larger): "Time-MoE" is, "LLM" or "Transformer" is not.
SUBJECT_MAX_ABSTRACTS = 5
SUBJECT_MAX_SHARE = 0.02
# A name at most this many abstracts have is near-unique: "DReSD", not "BRCA1".
UNIQUE_SUBJECT_MAX_ABSTRACTS = 2


def subject_terms(question: str, bm25: Bm25Index, mask: np.ndarray | None = None) -> dict[str, list[str]]:
    """The question's named terms (lower-case) that only a few indexed abstracts (of those
    ``mask`` allows) contain, each with the keys of those abstracts. A name no abstract
    contains is left out: it may be spelled differently in the index. A capital the question had to have (its first word, a
    title's words: `question_names`) names nothing: "Storage of vaccines: weak link?" put to
    an index where "storage" is rare has no subject, and is not let past the relevance gate.

    BM25 is case-blind, so an acronym that is also a word ("LIMIT": 54 of the sample's 330
    abstracts say "limit") looks common. Such an acronym is counted again as written, and
    kept as written when it is rare that way.
    """
    indexed = len(bm25.ids) if mask is None else int(mask.sum())
    limit = int(max(SUBJECT_MAX_ABSTRACTS, SUBJECT_MAX_SHARE * indexed))
    terms = {term: ids for term in question_names(question) if (ids := bm25.containing(term, limit, mask))}
    for acronym in dict.fromkeys(ACRONYM.findall(question)):
        if acronym.lower() not in terms and (ids := bm25.with_acronym(acronym, limit, mask)):
            terms[acronym] = ids
    return terms


def subject_bonuses(
    question: str, bm25: Bm25Index, weight: float, unique_weight: float, mask: np.ndarray | None = None
) -> dict[str, float]:
    """Abstract id → its bonus for containing the question's subject: ``weight``, or
    ``unique_weight`` if larger when at most ``UNIQUE_SUBJECT_MAX_ABSTRACTS`` abstracts
    have that name (the question is then almost surely about them)."""
    bonuses: dict[str, float] = {}
    for ids in subject_terms(question, bm25, mask).values():
        bonus = max(weight, unique_weight) if len(ids) <= UNIQUE_SUBJECT_MAX_ABSTRACTS else weight
        for abstract_id in ids:
            bonuses[abstract_id] = max(bonuses.get(abstract_id, 0.0), bonus)
    return {i: bonus for i, bonus in bonuses.items() if bonus}


def with_subject_bonus(ranked: list[tuple[str, float]], bonuses: dict[str, float]) -> list[tuple[str, float]]:
    """Fused results with each abstract's bonus added, best first."""
    if not bonuses:
        return ranked
    boosted = [(i, score + bonuses.get(i, 0.0)) for i, score in ranked]
    return sorted(boosted, key=lambda item: (-item[1], item[0]))


def best_sentence(question: str, abstract: Abstract) -> str:
    """The abstract's sentence sharing the most words with the question."""
    words = set(_WORD.findall(question.lower()))
    return max(sentences(abstract.text), key=lambda s: len(words & set(_WORD.findall(s.lower()))))


def relevance(dense: float | None, lexical: float | None, coverage: float = 0.0) -> float:
    """How likely the indexed abstracts answer the question, from the top hit's raw scores.

    Half the cosine, half the lexical evidence: the stronger of BM25 (saturated) and
    coverage, the share of the question's term weight the abstract contains. A terse query
    ("Time-MoE") has a small BM25 score even when an abstract contains all of it; coverage
    keeps it from being dismissed as irrelevant.
    """
    dense_part = dense if dense is not None else 0.0
    lexical_part = max(1.0 - math.exp(-(lexical or 0.0) / 10.0), coverage)
    return 0.5 * dense_part + 0.5 * lexical_part


@dataclass
class Ranking:
    """One question's fused ranking (subject bonus included) and the sides it came from."""

    ranked: list[tuple[str, float]]  # (abstract id, fused score), best first
    dense: dict[str, tuple[float, str]]  # abstract id -> (best chunk cosine, that chunk's id)
    lexical: dict[str, float]  # abstract id -> BM25 score
    vector: np.ndarray  # the question's embedding
    keyword_only: bool = False  # Chroma's vector index was still loading: no dense side


class HybridRetriever:
    """Dense + BM25 search over one index, fused and aggregated to abstracts, within
    ``libraries`` (None: all of them)."""

    def __init__(
        self,
        store: ChromaStore,
        embedder: Embedder,
        bm25: Bm25Index,
        settings: Settings,
        libraries: tuple[str, ...] | None = None,
    ) -> None:
        self.store, self.embedder, self.bm25, self.settings = store, embedder, bm25, settings
        self.libraries = libraries

    def _where(self, filters: SearchFilters | None) -> dict[str, Any] | None:
        """The filters and the library restriction as one Chroma ``where`` clause."""
        parts = [filters.for_chroma() if filters else None, visible(self.libraries) if self.libraries else None]
        present = [part for part in parts if part]
        return {"$and": present} if len(present) > 1 else (present[0] if present else None)

    def _mask(self, filters: SearchFilters | None) -> np.ndarray | None:
        """The filters and the library restriction as one mask over the BM25 index."""
        mask = filters.mask(self.bm25) if filters else None
        if self.libraries:
            allowed = self.bm25.visible(self.libraries)
            mask = allowed if mask is None else mask * allowed
        return mask

    def subject_terms(self, question: str) -> dict[str, list[str]]:
        """`subject_terms` among the abstracts this retriever may see."""
        return subject_terms(question, self.bm25, self._mask(None))

    def dense(self, question: str, depth: int, filters: SearchFilters | None) -> dict[str, tuple[float, str]]:
        """Abstract id → (best chunk cosine, best chunk id), for the top ``depth`` abstracts
        (waiting for Chroma's vector index if another search is loading it)."""
        return self._nearest(self.embedder.embed([question])[0], depth, filters, patience=None) or {}

    def _nearest(
        self, vector: np.ndarray, depth: int, filters: SearchFilters | None, patience: float | None
    ) -> dict[str, tuple[float, str]] | None:
        """Abstract id → (best chunk cosine, best chunk id) for the ``depth`` abstracts with
        the nearest chunks; None while another search loads Chroma's vector index for longer
        than ``patience`` seconds (None: as long as it takes)."""
        n = depth * CHUNKS_PER_ABSTRACT
        if self.libraries and filters is None:
            nearest = self._visible_nearest(vector, n, patience)
        else:
            nearest = self.store.query_chunks(vector, n, self._where(filters), patience)
        if nearest is None:
            return None
        best: dict[str, tuple[float, str]] = {}
        for chunk_id, abstract_id, score in nearest:
            if abstract_id not in best:  # results come nearest first
                best[abstract_id] = (score, chunk_id)
        return dict(list(best.items())[:depth])

    def _visible_nearest(
        self, vector: np.ndarray, n: int, patience: float | None
    ) -> list[tuple[str, str, float]] | None:
        """The ``n`` nearest chunks of abstracts in this retriever's libraries: the nearest
        chunks of the whole index, as many as the visible share of it calls for (at most
        ``MAX_OVERFETCH`` times ``n``), less those of other libraries (known from the lexical
        index, which covers the committed abstracts). The same chunks as Chroma's filter
        returns; that filter is used when too few remain, or when a chunk's abstract is not in
        the lexical index (written since it was last brought in step, or not committed).
        None while the vector index is loading (`_nearest`)."""
        share = float(self.bm25.visible(self.libraries).mean()) if self.bm25.ids else 1.0
        asked = int(min(n / max(share, 1e-9), n * MAX_OVERFETCH)) + n
        nearest = self.store.query_chunks(vector, asked, None, patience)
        if nearest is None:
            return None
        libraries = [self.bm25.library_of(abstract_key) for _, abstract_key, _ in nearest]
        kept = [chunk for chunk, library in zip(nearest, libraries, strict=True) if library in self.libraries][:n]
        if None not in libraries and (len(kept) == n or len(nearest) < asked):
            return kept
        return self.store.query_chunks(vector, n, self._where(None))

    def lexical(self, question: str, depth: int, filters: SearchFilters | None) -> dict[str, float]:
        """Abstract id → BM25 score, for the top ``depth`` abstracts."""
        return dict(self.bm25.search(question, depth, self._mask(filters)))

    def _chunks(self, abstract: Abstract) -> list[Chunk]:
        """The abstract's chunks as ingest made them (chunk ids are deterministic)."""
        return chunk(abstract, self.settings.chunk_size, self.settings.chunk_overlap)

    def _nearest_in_text(
        self, vector: np.ndarray, abstracts: list[Abstract]
    ) -> tuple[dict[str, tuple[float, str]], dict[str, str]]:
        """Per abstract, (cosine, chunk id) of its chunk nearest to the question, and the texts
        of those chunks, from its chunks embedded now: what `ChromaStore.best_chunks` and
        `ChromaStore.chunk_texts` read from Chroma, without waiting for a vector index that is
        still loading (the same chunks and embedder, so the same cosines)."""
        pieces = [piece for abstract in abstracts for piece in self._chunks(abstract)]
        if not pieces:
            return {}, {}
        by_key = {abstract.key: abstract for abstract in abstracts}
        vectors = self.embedder.embed([embedding_text(by_key[piece.abstract_id], piece) for piece in pieces])
        best = nearest_per_abstract(vector, [piece.id for piece in pieces], vectors)
        texts = {piece.id: piece.text for piece in pieces}
        return best, {chunk_id: texts[chunk_id] for _, chunk_id in best.values()}

    def rank(self, question: str, depth: int, filters: SearchFilters | None = None) -> Ranking:
        """Every side's top ``depth`` abstracts, fused, with the subject bonus added; the
        lexical side alone (``keyword_only``) while Chroma's vector index is loading."""
        settings = self.settings
        vector = self.embedder.embed([question])[0]
        dense = self._nearest(vector, depth, filters, settings.vector_wait_seconds)
        mask = self._mask(filters)
        lexical = dict(self.bm25.search(question, depth, mask))
        phrases = dict(self.bm25.search_phrases(question, depth, mask)) if settings.phrase_weight else {}
        ranked = fuse(
            {i: s for i, (s, _) in (dense or {}).items()}, lexical, settings.lexical_weight, phrases,
            settings.phrase_weight,
        )
        bonuses = subject_bonuses(
            question, self.bm25, settings.subject_weight, settings.unique_subject_weight, self._mask(None)
        )
        return Ranking(with_subject_bonus(ranked, bonuses), dense or {}, lexical, vector, keyword_only=dense is None)

    def _shown(self, ranked: list[tuple[str, float]], abstracts: dict[str, Abstract]) -> list[tuple[str, float]]:
        """The ranked keys that can be shown: committed, in a visible library (checked again
        on the record itself), and the first of any paper held both shared and privately."""
        shown, ids = [], set()
        for key, score in ranked:
            abstract = abstracts.get(key)
            if abstract is None or (self.libraries and abstract.library not in self.libraries) or abstract.id in ids:
                continue
            shown.append((key, score))
            ids.add(abstract.id)
        return shown

    def search(self, question: str, k: int, filters: SearchFilters | None = None) -> list[Hit]:
        """The ``k`` best abstracts for the question. While Chroma's vector index is loading,
        they are found by keywords alone (`Hit.keyword_only`), and their dense scores and
        passages come from their chunks embedded now (`_nearest_in_text`)."""
        ranking = self.rank(question, max(k, self.settings.fusion_depth), filters)
        dense, lexical, vector = ranking.dense, ranking.lexical, ranking.vector
        top = ranking.ranked[: k + 10]  # a few spare in case some are still pending
        abstracts = self.store.get_abstracts([i for i, _ in top])
        top = self._shown(top, abstracts)[:k]
        if ranking.keyword_only:
            dense, passages = self._nearest_in_text(vector, [abstracts[i] for i, _ in top])
        else:
            unreached = [abstracts[i] for i, _ in top if i not in dense]
            dense.update(self.store.best_chunks(vector, [c.id for a in unreached for c in self._chunks(a)]))
            passages = self.store.chunk_texts([dense[i][1] for i, _ in top if i in dense])
        coverage = self.bm25.coverage(question, [i for i, _ in top])
        hits = []
        for rank, (abstract_id, score) in enumerate(top, start=1):
            cosine, chunk_id = dense.get(abstract_id, (None, ""))
            hits.append(
                Hit(
                    abstract=abstracts[abstract_id],
                    score=float(score),
                    rank=rank,
                    passage=passages.get(chunk_id) or best_sentence(question, abstracts[abstract_id]),
                    dense=cosine,
                    lexical=lexical.get(abstract_id),
                    relevance=relevance(cosine, lexical.get(abstract_id), coverage[abstract_id]),
                    keyword_only=ranking.keyword_only,
                )
            )
        return hits
