"""The tokenized corpus as flat arrays, and BM25 score matrices built from them in numpy.

bm25s cannot add documents to an index, and builds its matrix in a Python loop over
lists of tokens, so every ingest read back and re-tokenized every indexed abstract: 46 s
at 100,000 abstracts (words and word pairs), about 10 minutes at a million. Here every
abstract's token ids sit in one int32 array saved with the index, so an update tokenizes
only the new abstracts, and the matrix takes a few array operations (1.3 s instead of
8 s per BM25 at 100,000 abstracts). The scores are bit for bit those bm25s computes
(Lucene BM25; `tests/test_bm25_arrays.py` compares them), handed to bm25s through the
override point it documents (`BM25.build_index_from_ids`), so bm25s still saves, loads
and scores the index.
"""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import bm25s
import numpy as np
import scipy.sparse

PHRASE_BUCKETS = 1 << 22
_BUCKET_BITS = PHRASE_BUCKETS.bit_length() - 1
_MIX = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing: the top bits of key × 2^64/φ
_PAGE = 50_000  # abstracts tokenized at once: bounds the lists bm25s returns
_BLOCK = 10_000  # abstracts whose tokens are counted at once
_SLICE = 10_000_000  # scores computed at once


def word_hash(words: list[str]) -> np.ndarray:
    """A stable 32-bit hash of each word (its CRC-32), the same in every process and index."""
    return np.array([zlib.crc32(w.encode()) for w in words], dtype=np.uint64)


def pair_buckets(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """The phrase bucket of each (first word, second word) pair, from their `word_hash`es."""
    key = (first.astype(np.uint64) << np.uint64(32)) | second.astype(np.uint64)
    return (key * _MIX) >> np.uint64(64 - _BUCKET_BITS)


@dataclass
class TokenArrays:
    """Token ids of a list of documents: ``ids[offsets[n]:offsets[n + 1]]`` for the n-th,
    with ``vocabulary`` the terms in id order."""

    vocabulary: list[str]
    ids: np.ndarray
    lengths: np.ndarray

    @classmethod
    def empty(cls) -> TokenArrays:
        return cls([], np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32))

    @property
    def offsets(self) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(self.lengths, dtype=np.int64)])

    def extended(self, tokenize: Callable[[list[str]], Any], texts: Iterable[str]) -> TokenArrays:
        """These documents followed by ``texts``, tokenized by ``tokenize(texts)`` (a
        `bm25s.tokenize` returning ids and its own vocabulary) a page at a time. ``texts``
        may be a stream: only one page of it is held (a million abstracts are 3.7 GB)."""
        vocabulary = list(self.vocabulary)
        index = {term: i for i, term in enumerate(vocabulary)}
        ids, lengths = [self.ids], [self.lengths]
        texts = iter(texts)
        while batch := list(itertools.islice(texts, _PAGE)):
            page = tokenize(batch)
            to_global = np.zeros(len(page.vocab), dtype=np.int32)
            for term, local in page.vocab.items():
                to_global[local] = index.setdefault(term, len(index))
                if to_global[local] == len(vocabulary):
                    vocabulary.append(term)
            sizes = np.fromiter(map(len, page.ids), dtype=np.int32, count=len(page.ids))
            flat = np.fromiter(itertools.chain.from_iterable(page.ids), dtype=np.int32, count=int(sizes.sum()))
            ids.append(to_global[flat])
            lengths.append(sizes)
        return TokenArrays(vocabulary, np.concatenate(ids), np.concatenate(lengths))

    def blocks(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(row of each token, token ids) for up to ``_BLOCK`` documents at a time: a few
        arrays of all tokens at once would take gigabytes at a million abstracts."""
        offsets = self.offsets
        for first in range(0, len(self.lengths), _BLOCK):
            last = min(first + _BLOCK, len(self.lengths))
            rows = np.repeat(np.arange(first, last, dtype=np.int64), self.lengths[first:last])
            yield rows, self.ids[offsets[first] : offsets[last]]

    def pairs(self) -> TokenArrays:
        """The documents' adjacent token pairs, each a phrase bucket (`pair_buckets`); the
        vocabulary holds the buckets that occur, as hexadecimal strings."""
        hashes = word_hash(self.vocabulary)
        buckets = []
        for rows, ids in self.blocks():
            inside = rows[:-1] == rows[1:]  # both words of the pair in the same document
            buckets.append(pair_buckets(hashes[ids[:-1][inside]], hashes[ids[1:][inside]]).astype(np.int32))
        flat = _joined(buckets, np.int32)
        column = np.zeros(PHRASE_BUCKETS, dtype=np.int32)
        column[flat] = 1
        used = np.flatnonzero(column)
        column[used] = np.arange(len(used), dtype=np.int32)
        lengths = np.maximum(self.lengths - 1, 0).astype(np.int32)
        return TokenArrays([format(int(b), "x") for b in used], column[flat], lengths)

    def arrays(self) -> dict[str, np.ndarray]:
        """The arrays to save (`np.savez`); `from_arrays` reads them back."""
        vocabulary = np.frombuffer("\n".join(self.vocabulary).encode(), dtype=np.uint8)
        return {"ids": self.ids, "lengths": self.lengths, "vocabulary": vocabulary}

    @classmethod
    def from_arrays(cls, saved: Any) -> TokenArrays:
        text = saved["vocabulary"].tobytes().decode()
        return cls(text.split("\n") if text else [], saved["ids"], saved["lengths"])


def score_matrix(tokens: TokenArrays, k1: float, b: float) -> dict[str, Any]:
    """Lucene BM25 scores of every (term, document) pair as bm25s stores them: a CSC matrix
    (documents × terms; per term, the rows of the documents holding it, ascending)."""
    count, terms = len(tokens.lengths), len(tokens.vocabulary)
    # each (term, row) pair once, with its count; there are at most as many as tokens
    term, row, tf = (np.empty(len(tokens.ids), dtype=t) for t in (np.int32, np.int32, np.float32))
    filled = 0
    for rows, ids in tokens.blocks():
        pairs, counts = np.unique(rows * terms + ids, return_counts=True)
        at = slice(filled, filled + len(pairs))
        row[at], term[at] = np.divmod(pairs, terms)
        tf[at] = counts
        filled += len(pairs)
    term, row, tf = term[:filled], row[:filled], tf[:filled]
    df = np.bincount(term, minlength=terms)
    idf = np.log(1 + (count - df + 0.5) / (df + 0.5)).astype(np.float32)
    average = tokens.lengths.mean()
    data = np.empty(len(term), dtype=np.float32)
    for start in range(0, len(term), _SLICE):  # float64 like bm25s, a slice at a time
        at = slice(start, start + _SLICE)
        norm = k1 * ((1 - b) + b * tokens.lengths[row[at]].astype(np.float64) / average)
        data[at] = idf[term[at]] * (tf[at] / (norm + tf[at]))
    del tf
    # the entries are in row order: a CSR matrix, turned by term with scipy's counting sort
    # (rows stay ascending within each term; 6x faster than a stable argsort by term)
    row_starts = np.concatenate([[0], np.cumsum(np.bincount(row, minlength=count))])
    by_term = scipy.sparse.csr_matrix((data, term, row_starts), shape=(count, terms)).tocsc()
    return {
        "data": by_term.data,
        "indices": by_term.indices.astype(np.int32),
        "indptr": by_term.indptr.astype(np.int64),
        "num_docs": count,
    }


def _joined(parts: list[np.ndarray], dtype: type) -> np.ndarray:
    return np.concatenate([np.zeros(0, dtype=dtype), *parts])


@dataclass
class _Corpus:
    """What `bm25s.BM25.index` accepts as an object with ``ids`` and ``vocab``."""

    ids: TokenArrays
    vocab: dict[str, int]


class ArrayBM25(bm25s.BM25):
    """bm25s's BM25 (Lucene variant), indexed from `TokenArrays` with `score_matrix`."""

    def build_index_from_ids(self, unique_token_ids: Any, corpus_token_ids: Any, **_: Any) -> dict[str, Any]:
        if self.method != "lucene":
            raise ValueError(f"score_matrix computes Lucene BM25, not {self.method}")
        self.nonoccurrence_array = None  # only BM25L and BM25+ have one
        return score_matrix(corpus_token_ids, self.k1, self.b)

    def index_arrays(self, tokens: TokenArrays) -> None:
        if not tokens.vocabulary:  # only stop words: bm25s needs one term, its own empty one
            tokens = TokenArrays([""], tokens.ids, tokens.lengths)
        vocab = {term: i for i, term in enumerate(tokens.vocabulary)}
        self.index(_Corpus(tokens, vocab), show_progress=False)
