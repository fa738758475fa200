"""The lexical index: BM25 (bm25s) over whole abstracts, with stemming and stop words,
and a second BM25 over the abstracts' adjacent word pairs (phrases).

Phrases reward an abstract that says "gene expression" over one that says "gene" and
"expression" far apart: SciFact train nDCG@10 through search() 0.7485 -> 0.7521 at fusion
weight 0.1 (benchmarks/retrieval.py; exact scores 0.749 -> 0.754). Word pairs are hashed
into 4.2 million buckets (`bm25_arrays.PHRASE_BUCKETS`), so the phrase vocabulary stays
bounded at any corpus size (SciFact's 452,000 distinct pairs: the same nDCG as unhashed
pairs, within 0.0005).

Beside them it keeps the acronyms each abstract contains, case-sensitively: BM25 is
case-blind, so "LIMIT" (a benchmark's name) counts as the common word "limit"; the
retriever's subject detection asks this list instead.

It is derived data: built from the abstracts committed in Chroma and saved under the data
directory beside them, with the ids it covers, their token ids (`bm25_arrays`) and a
ledger generation (`ChromaStore.change_stamp`) at which the committed abstracts were
exactly these: an index opened at that generation is known to be in step without listing
the ledger (6 s and 2.7 GB at a million abstracts). Whenever the saved copy does not cover
exactly the committed abstracts, it is brought in step with Chroma: after an ingest only the
new abstracts are read and tokenized; after a reset, a crash, or a Chroma server that another
machine filled, all are, streamed from Chroma a page at a time (only their keys, sources,
libraries, years and acronyms are held).
Abstracts are known by `Abstract.key`; `visible` masks the libraries a user may see.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import pickle
import re
import shutil
import struct
import zipfile
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import bm25s
import numpy as np
import Stemmer
from bm25s.stopwords import STOPWORDS_EN

from assistant.index.bm25_arrays import ArrayBM25, TokenArrays, pair_buckets, word_hash
from assistant.types import SHARED, Abstract

_STEMMER = Stemmer.Stemmer("english")
_MANIFEST = "assistant.json"
_PHRASES = "phrases"  # subfolder of the saved index holding the phrase BM25
_ACRONYMS = "acronyms.npz"
_FORMAT = 2  # since phrase buckets hash word hashes and token ids are saved; older indexes are rebuilt
_TOKENS = "tokens.npz"  # every indexed abstract's token ids, so that an update tokenizes only new ones
_GENERATION = "generation.json"  # {fingerprint, generation}: the ledger at that generation held exactly those ids
ACRONYM = re.compile(r"\b[A-Z][A-Z0-9]{2,}\b")
# What reading a damaged saved index raises (truncated by a crash or a full disk, or
# overwritten): the index is derived data, so it is then rebuilt from Chroma.
_UNREADABLE = (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, pickle.UnpicklingError, struct.error)


def fingerprint(ids: list[str]) -> str:
    """A short digest of a set of ids: equal digests mean the same abstracts."""
    digest = hashlib.sha256()
    for i in sorted(ids):
        digest.update(i.encode("utf-8") + b"\0")
    return digest.hexdigest()[:24]


# Words that shape a question rather than say what it is about; coverage ignores them.
QUESTION_WORDS = (
    "what", "which", "who", "whom", "whose", "why", "how", "when", "where", "many", "much",
    "do", "does", "did", "were", "has", "have", "had", "can", "could", "would", "should",
)


def tokenize(texts: list[str], stopwords: str | list[str] = "en") -> list[list[str]]:
    """BM25 tokens: lower-cased words, English stop words removed, Snowball-stemmed."""
    return bm25s.tokenize(
        texts, stopwords=stopwords, stemmer=_STEMMER, return_ids=False, show_progress=False
    )


def _corpus_tokens(texts: list[str]) -> bm25s.tokenization.Tokenized:
    """`tokenize`, as ids with their vocabulary (what `TokenArrays.extended` takes)."""
    return bm25s.tokenize(texts, stopwords="en", stemmer=_STEMMER, return_ids=True, show_progress=False)


def phrase_terms(tokens: list[str]) -> list[str]:
    """Adjacent pairs of BM25 tokens, each hashed into one of 4.2 million terms (the
    bucket `bm25_arrays.pair_buckets` gives it, as a hexadecimal string)."""
    hashes = word_hash(tokens)
    return [format(int(bucket), "x") for bucket in pair_buckets(hashes[:-1], hashes[1:])]


class _TokensGone(Exception):
    """The saved token ids are missing or belong to another index: build from the records."""


class _AcronymLists:
    """The acronyms listed for the indexed abstracts (name → rows) and those found in new
    ones, kept as compact (name id, row) arrays while the new abstracts stream past."""

    def __init__(self, listed: dict[str, np.ndarray]) -> None:
        self.listed = listed
        self.vocabulary = {name: n for n, name in enumerate(listed)}
        self.names, self.rows = array("q"), array("q")

    def add(self, text: str, row: int) -> None:
        for name in set(ACRONYM.findall(text)):
            self.names.append(self.vocabulary.setdefault(name, len(self.vocabulary)))
            self.rows.append(row)

    def merged(self) -> tuple[list[str], np.ndarray, np.ndarray]:
        """All of them as CSR: ``rows[indptr[n]:indptr[n + 1]]``, sorted, for the n-th name."""
        listed = np.array([len(r) for r in self.listed.values()], dtype=np.int64)
        name_ids = np.concatenate([np.repeat(np.arange(len(self.listed)), listed), np.frombuffer(self.names, dtype=np.int64)])
        row_ids = np.concatenate([*self.listed.values(), np.frombuffer(self.rows, dtype=np.int64)]).astype(np.int64)
        order = np.lexsort((row_ids, name_ids))
        indptr = np.searchsorted(name_ids[order], np.arange(len(self.vocabulary) + 1))
        return list(self.vocabulary), indptr, row_ids[order].astype(np.int32)


def _mapped(folder: Path) -> tuple[bm25s.BM25, bm25s.BM25 | None]:
    """The saved word and phrase BM25s (no phrase one if none was saved), their score
    matrices memory-mapped, not read: a search touches only its terms' postings, so the
    matrices (about 2 GB at a million abstracts) stay in the page cache, shared by every
    process serving the index, instead of in each one's memory. A save replaces the files
    (new inodes), so a process still mapping the old ones reads them until it loads anew."""
    phrases = folder / _PHRASES
    words = bm25s.BM25.load(str(folder), mmap=True)
    return words, bm25s.BM25.load(str(phrases), mmap=True) if phrases.exists() else None


def _holds(postings: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """For each row, whether the sorted ``postings`` hold it (a binary search: np.isin
    sorts the postings, 60 ms per question for common words at a million abstracts)."""
    if not len(postings):
        return np.zeros(len(rows), dtype=bool)
    at = np.minimum(np.searchsorted(postings, rows), len(postings) - 1)
    return postings[at] == rows


class Bm25Index:
    """BM25 over abstracts (title repeated ``title_weight`` times, then the text), with
    ``phrases`` a second BM25 over their `phrase_terms`, and their acronyms."""

    def __init__(self, folder: Path, k1: float, b: float, title_weight: int, phrases: bool = True) -> None:
        self.folder = folder
        self.params = {"k1": k1, "b": b, "title_weight": title_weight, "phrases": phrases, "format": _FORMAT}
        self.ids: list[str] = []
        self._rows: dict[str, int] = {}
        self._keys = np.array([], dtype=object)
        self.sources = np.array([], dtype=object)
        self.libraries = np.array([], dtype=object)
        self.years = np.array([], dtype=np.int32)
        self._visible: dict[tuple[str, tuple[str, ...]], np.ndarray] = {}
        self.model: bm25s.BM25 | None = None
        self.phrase_model: bm25s.BM25 | None = None
        self._acronyms: dict[str, np.ndarray] = {}
        self.fingerprint = ""
        self.generation = ""  # a ledger generation at which exactly these abstracts were committed ("": unknown)
        self._load()

    def _load(self) -> None:
        try:
            manifest = json.loads((self.folder / _MANIFEST).read_text())
            held = self.model is not None and manifest["fingerprint"] == self.fingerprint
            if manifest["params"] != self.params or held:
                return  # not ours, or what is loaded already
            model, phrase_model = _mapped(self.folder)
            with np.load(self.folder / _ACRONYMS) as saved:
                acronyms = self._split(saved["names"].tolist(), saved["indptr"], saved["rows"])
        except _UNREADABLE:
            return
        self.model, self.phrase_model, self._acronyms = model, phrase_model, acronyms
        self._index_ids(manifest["ids"])
        self.fingerprint = manifest["fingerprint"]
        self.generation = self._claimed()
        self.sources = np.array(manifest["sources"], dtype=object)
        self.libraries = np.array(manifest.get("libraries", [SHARED] * len(self.ids)), dtype=object)
        self.years = np.array(manifest["years"], dtype=np.int32)

    def _index_ids(self, ids: list[str]) -> None:
        """The indexed keys in row order, with each key's row and the keys as an array: a
        subject's abstracts are thousands of rows at a million abstracts, 5 ms a question
        to turn into keys one by one."""
        self.ids = ids
        self._rows = {i: row for row, i in enumerate(ids)}
        self._keys = np.array(ids, dtype=object)

    @staticmethod
    def _split(names: list[str], indptr: np.ndarray, rows: np.ndarray) -> dict[str, np.ndarray]:
        """Name → its rows, from CSR arrays (`_AcronymLists.merged`)."""
        return {name: rows[indptr[n] : indptr[n + 1]] for n, name in enumerate(names)}

    def covers(self, ids_fingerprint: str) -> bool:
        """Whether the saved index covers exactly the abstracts with this fingerprint."""
        return self.model is not None and self.fingerprint == ids_fingerprint

    def built_at(self, generation: str) -> bool:
        """Whether this index (or the saved one, which another process may have brought in
        step) is known to cover exactly the abstracts committed at this ledger generation:
        then they need not be listed."""
        if generation and self.generation != generation:
            self._load()
            self.generation = self._claimed()
        return bool(generation) and self.model is not None and self.generation == generation

    def build(self, abstracts: Iterable[Abstract], generation: str = "") -> None:
        """Index these abstracts and save, replacing the previous index. They may be a
        stream (read from Chroma a page at a time): they are not all held at once."""
        self._clear()
        self.generation = generation
        self._add(abstracts)

    def update(self, ids: list[str], read: Callable[[list[str]], Iterable[Abstract]], generation: str = "") -> None:
        """Index exactly the abstracts with these ids, ``read(ids)`` giving their records,
        possibly as a stream (nothing to do when it already does); ``generation`` is the
        ledger's, read before the ids were listed (`built_at`).

        When the saved index holds some of them and no others (abstracts were added), only
        the new ones are read and tokenized; otherwise (a reset, another machine's index) all
        are. Either way the scores are those of a full build over all of them.
        """
        wanted = fingerprint(ids)
        if not self.covers(wanted):
            self._load()  # another process may have brought the saved index in step already
        if self.covers(wanted):
            self.generation = generation
            self._claim(self.folder)
            return
        if self.ids and set(self.ids) <= set(ids):
            try:
                self.generation = generation
                self._add(read([i for i in ids if i not in self._rows]), self._saved_tokens)
                return
            except _TokensGone:
                pass
        self.build(read(ids), generation)

    def _saved_tokens(self) -> TokenArrays:
        """The token ids of the indexed abstracts, saved with this index (`_TokensGone` if
        they are not, or were replaced since it was loaded)."""
        try:
            with np.load(self.folder / _TOKENS) as saved:
                if str(saved["fingerprint"]) != self.fingerprint:
                    raise _TokensGone
                return TokenArrays.from_arrays(saved)
        except _UNREADABLE as error:
            raise _TokensGone from error

    def _clear(self) -> None:
        self._index_ids([])
        self.fingerprint, self.generation = "", ""
        self.sources, self.years = np.array([], dtype=object), np.array([], dtype=np.int32)
        self.libraries = np.array([], dtype=object)
        self.model = self.phrase_model = None
        self._acronyms = {}

    def _add(self, abstracts: Iterable[Abstract], tokens: Callable[[], TokenArrays] = TokenArrays.empty) -> None:
        """Add these abstracts to the indexed ones (whose token ids ``tokens()`` gives) and
        save. If reading them fails, the saved index is left as it was and this one is
        emptied, so that the next update rebuilds it. No frame here holds the token arrays:
        each goes once it is joined or used (~0.5 GB at a million abstracts)."""
        self.model = self.phrase_model = None  # freed before the new matrices are built
        try:
            self._save(self._extended(tokens(), abstracts))
        except BaseException:
            self._clear()
            raise

    def _extended(self, tokens: TokenArrays, abstracts: Iterable[Abstract]) -> TokenArrays:
        """The ``tokens`` of the indexed abstracts followed by those of these ones, which are
        tokenized as they stream past: only their keys, sources, libraries, years and acronyms
        are kept."""
        added, sources, libraries, years, acronyms = [], [], [], [], _AcronymLists(self._acronyms)
        weight = self.params["title_weight"]

        def texts() -> Iterator[str]:
            for row, abstract in enumerate(abstracts, len(self.ids)):
                added.append(abstract.key)
                sources.append(abstract.source)
                libraries.append(abstract.library)
                years.append(abstract.year or 0)
                acronyms.add(f"{abstract.title}\n{abstract.text}", row)
                yield " ".join([abstract.title] * weight * abstract.titled + [abstract.text])

        tokens = tokens.extended(_corpus_tokens, texts())
        self._index_ids(self.ids + added)
        self.sources = np.concatenate([self.sources, np.array(sources, dtype=object)])
        self.libraries = np.concatenate([self.libraries, np.array(libraries, dtype=object)])
        self.years = np.concatenate([self.years, np.array(years, dtype=np.int32)])
        self.fingerprint = fingerprint(self.ids)
        self._acronyms = self._split(*acronyms.merged())
        return tokens

    def _save(self, tokens: TokenArrays) -> None:
        """Build the score matrices from ``tokens`` (this index's) and replace the saved
        index with them, the tokens, the acronyms and the manifest (written aside, then
        renamed into place); then map the saved matrices (`_mapped`). One matrix is held
        at a time, while it is built."""
        if not self.ids:
            shutil.rmtree(self.folder, ignore_errors=True)
            return
        staging = self.folder.with_name(self.folder.name + ".new")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        np.savez(staging / _TOKENS, fingerprint=np.array(self.fingerprint), **tokens.arrays())
        self._built(tokens).save(str(staging))
        pairs = tokens.pairs() if self.params["phrases"] else TokenArrays.empty()
        del tokens
        if pairs.vocabulary:  # bm25s cannot index a corpus without a single term
            self._built(pairs).save(str(staging / _PHRASES))
        del pairs
        lengths = [len(rows) for rows in self._acronyms.values()]
        np.savez(
            staging / _ACRONYMS,
            names=np.array(list(self._acronyms), dtype=str),
            indptr=np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)]),
            rows=np.concatenate([np.zeros(0, dtype=np.int32), *self._acronyms.values()]),
        )
        manifest = {
            "params": self.params,
            "fingerprint": self.fingerprint,
            "ids": self.ids,
            "sources": self.sources.tolist(),
            "libraries": self.libraries.tolist(),
            "years": self.years.tolist(),
        }
        (staging / _MANIFEST).write_text(json.dumps(manifest))
        self._claim(staging)
        shutil.rmtree(self.folder, ignore_errors=True)
        staging.rename(self.folder)
        self.model, self.phrase_model = _mapped(self.folder)

    def _claim(self, folder: Path) -> None:
        """Note in ``folder`` that the ledger at ``self.generation`` held exactly this index's
        abstracts. The note names their fingerprint, so it stays true wherever it lands: in
        a saved index another process has since replaced, it is ignored (`_claimed`)."""
        if not self.generation:
            return
        note = folder / f"{_GENERATION}.{os.getpid()}"
        try:
            note.write_text(json.dumps({"fingerprint": self.fingerprint, "generation": self.generation}))
            note.replace(folder / _GENERATION)
        except OSError:  # the saved index was removed meanwhile: the next check lists the ids
            note.unlink(missing_ok=True)

    def _claimed(self) -> str:
        """The ledger generation noted for the loaded abstracts ("": none)."""
        try:
            note = json.loads((self.folder / _GENERATION).read_text())
        except (OSError, ValueError):
            return ""
        return str(note.get("generation", "")) if note.get("fingerprint") == self.fingerprint else ""

    def _built(self, tokens: TokenArrays) -> ArrayBM25:
        model = ArrayBM25(k1=self.params["k1"], b=self.params["b"])
        model.index_arrays(tokens)
        return model

    def search(self, query: str, n: int, mask: np.ndarray | None = None) -> list[tuple[str, float]]:
        """Up to ``n`` (abstract id, BM25 score) pairs with a positive score, best first.

        ``mask`` (1 = allowed, one entry per indexed abstract) applies filters.
        """
        return self._retrieve(self.model, tokenize([query])[0], n, mask)

    def search_phrases(self, query: str, n: int, mask: np.ndarray | None = None) -> list[tuple[str, float]]:
        """Like `search`, scored on the query's adjacent word pairs (none for a one-word query)."""
        return self._retrieve(self.phrase_model, phrase_terms(tokenize([query])[0]), n, mask)

    def _retrieve(
        self, model: bm25s.BM25 | None, terms: list[str], n: int, mask: np.ndarray | None
    ) -> list[tuple[str, float]]:
        """The top ``n`` positive scores, picked among the positive ones only: bm25s's own
        top-k partitions every abstract's score, most of them zero, which took 40 ms per
        phrase query at a million abstracts (and 11 ms per word query)."""
        if model is None or not self.ids or not terms:
            return []
        scores = model.get_scores(terms, weight_mask=mask)
        positive = np.flatnonzero(scores > 0)
        if len(positive) > n:
            positive = positive[np.argpartition(-scores[positive], n)[:n]]
        best = positive[np.argsort(-scores[positive], kind="stable")]
        return [(self.ids[int(row)], float(scores[row])) for row in best]

    def coverage(self, query: str, ids: list[str]) -> dict[str, float]:
        """For each abstract, the share of the query's term weight (IDF) it contains.

        Question words ("what", "how many") are not terms here. A term that no abstract
        contains still counts, with the highest weight: a question about something the index
        never mentions must not look covered.
        """
        stopwords = [*STOPWORDS_EN, *QUESTION_WORDS]
        terms = set(tokenize([query], stopwords)[0]) if self.model is not None else set()
        if not terms:
            return dict.fromkeys(ids, 0.0)
        count = len(self.ids)
        rows = np.array([self._rows.get(i, -1) for i in ids])
        found, total = np.zeros(len(ids)), 0.0
        for term in terms:
            docs = self._postings(term)
            weight = math.log(1 + (count - len(docs) + 0.5) / (len(docs) + 0.5))
            found += weight * _holds(docs, rows)
            total += weight
        return dict(zip(ids, (found / total).tolist(), strict=True))

    def visible(self, libraries: Iterable[str]) -> np.ndarray:
        """A 0/1 mask over the indexed abstracts: 1 for those in these libraries (kept until
        the index changes: comparing a million library names takes tens of milliseconds)."""
        key = (self.fingerprint, tuple(sorted(libraries)))
        if key not in self._visible:
            if self._visible and next(iter(self._visible))[0] != self.fingerprint:
                self._visible.clear()
            self._visible[key] = np.isin(self.libraries, list(key[1])).astype(np.float32)
        return self._visible[key]

    def counts_by_source(self, mask: np.ndarray | None = None) -> Counter[str]:
        """Indexed abstracts per source file (of those ``mask`` allows): 0.1 s at a million
        abstracts, where reading the ledger's records takes minutes."""
        return Counter((self.sources if mask is None else self.sources[mask > 0]).tolist())

    def library_of(self, key: str) -> str | None:
        """The library of an indexed abstract (None: not indexed here)."""
        row = self._rows.get(key)
        return None if row is None else str(self.libraries[row])

    def containing(self, text: str, limit: int | None = None, mask: np.ndarray | None = None) -> list[str]:
        """The keys of the indexed abstracts (of those ``mask`` allows) that contain every
        token of ``text`` (a name such as "Time-MoE" is two tokens; both must occur); none if
        more than ``limit`` do (a common word is no name, and listing its keys costs more
        than the search)."""
        terms = tokenize([text])[0] if self.model is not None else []
        if not terms:
            return []
        found = self._postings(terms[0])
        for term in terms[1:]:
            found = np.intersect1d(found, self._postings(term), assume_unique=True)
        return self._ids_of(found, limit, mask)

    def with_acronym(self, acronym: str, limit: int | None = None, mask: np.ndarray | None = None) -> list[str]:
        """The keys of the abstracts (of those ``mask`` allows) holding this acronym as
        written ("LIMIT", not "limit"); none if more than ``limit`` do."""
        return self._ids_of(self._acronyms.get(acronym, np.array([], dtype=np.int32)), limit, mask)

    def _ids_of(self, rows: np.ndarray, limit: int | None, mask: np.ndarray | None) -> list[str]:
        if mask is not None:
            rows = rows[mask[rows] > 0]
        return [] if limit is not None and len(rows) > limit else self._keys[rows].tolist()

    def _postings(self, term: str) -> np.ndarray:
        """The sorted rows of the abstracts that contain a (stemmed) term."""
        postings, indptr = self.model.scores["indices"], self.model.scores["indptr"]
        column = self.model.vocab_dict.get(term)
        return postings[indptr[column] : indptr[column + 1]] if column is not None else postings[:0]
