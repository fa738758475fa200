"""The tokenized corpus as flat arrays, and BM25 score matrices built from them in numpy.

bm25s cannot add documents to an index, and builds its matrix in a Python loop over
lists of tokens, so every ingest read back and re-tokenized every indexed abstract: 46 s
at 100,000 abstracts (words and word pairs), about 10 minutes at a million. Here every
abstract's token ids sit in one int32 array saved with the index, so an update tokenizes
only the new abstracts, and each matrix takes a few array operations, written straight
into the order bm25s keeps (`score_matrix`): at 1.03 million abstracts both matrices take
52 s and 2.1 GB besides the tokens (built in row order and turned by scipy: 43 s, 3.6 GB).
The scores are bit for bit those bm25s computes (Lucene BM25; `tests/test_bm25_arrays.py` compares them), handed to bm25s through the
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

PHRASE_BUCKETS = 1 << 22
_BUCKET_BITS = PHRASE_BUCKETS.bit_length() - 1
_MIX = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing: the top bits of key × 2^64/φ
_PAGE = 50_000  # abstracts tokenized at once: bounds the lists bm25s returns
_BLOCK = 10_000  # abstracts whose tokens are counted at once


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
        del buckets
        column = np.zeros(PHRASE_BUCKETS, dtype=np.int32)
        column[flat] = 1
        used = np.flatnonzero(column)
        column[used] = np.arange(len(used), dtype=np.int32)
        np.take(column, flat, out=flat, mode="clip")  # each bucket's column, in place (no buffer in "clip")
        lengths = np.maximum(self.lengths - 1, 0).astype(np.int32)
        return TokenArrays([format(int(b), "x") for b in used], flat, lengths)

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
    (documents × terms; per term, the rows of the documents holding it, ascending).

    Built straight into that order in two passes over the documents (`_term_counts`): the
    first counts each term's documents, which places every term's column; the second scores
    each block's entries and writes them into their columns. No array with an entry per
    (term, document) is held but the matrix's own two: at a million abstracts each is
    ~0.5 GB, and this build is the ingest's memory peak."""
    count, terms = len(tokens.lengths), len(tokens.vocabulary)
    df = np.zeros(terms, dtype=np.int64)
    for _, term, _ in _term_counts(tokens):
        df += np.bincount(term, minlength=terms)
    idf = np.log(1 + (count - df + 0.5) / (df + 0.5)).astype(np.float32)
    average = tokens.lengths.mean()
    indptr = np.concatenate([[0], np.cumsum(df)])
    data, indices = np.empty(indptr[-1], dtype=np.float32), np.empty(indptr[-1], dtype=np.int32)
    filled = indptr[:-1].copy()  # where each term's column is filled to
    for row, term, tf in _term_counts(tokens):  # a block's entries by term, then by row
        norm = k1 * ((1 - b) + b * tokens.lengths[row].astype(np.float64) / average)  # float64 like bm25s
        starts = np.flatnonzero(np.diff(term, prepend=-1))  # where each term's entries begin
        counts = np.diff(starts, append=len(term))
        at = filled[term] + np.arange(len(term)) - np.repeat(starts, counts)
        indices[at], data[at] = row, idf[term] * (tf / (norm + tf))
        filled[term[starts]] += counts
    return {"data": data, "indices": indices, "indptr": indptr, "num_docs": count}


def _term_counts(tokens: TokenArrays) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Each document's terms with their counts, ``_BLOCK`` documents at a time, the blocks
    in document order: (row, term id, count as float32), one entry per (document, term);
    within a block, by term and then by row."""
    count = len(tokens.lengths)
    for rows, ids in tokens.blocks():
        pairs, counts = np.unique(ids.astype(np.int64) * count + rows, return_counts=True)
        term, row = np.divmod(pairs, count)
        yield row.astype(np.int32), term.astype(np.int32), counts.astype(np.float32)


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
