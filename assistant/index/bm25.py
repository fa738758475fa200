"""The lexical index: BM25 (bm25s) over whole abstracts, with stemming and stop words.

It is derived data: built from the abstracts committed in Chroma and saved under the data
directory beside them, with the ids it covers. Whenever the saved copy does not cover
exactly the committed abstracts (after an ingest, a reset, a crash, or a Chroma server
that another machine filled), it is rebuilt from Chroma.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
from pathlib import Path

import bm25s
import numpy as np
import Stemmer
from bm25s.stopwords import STOPWORDS_EN

from assistant.types import Abstract

_STEMMER = Stemmer.Stemmer("english")
_MANIFEST = "assistant.json"


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


class Bm25Index:
    """BM25 over abstracts (title repeated ``title_weight`` times, then the text)."""

    def __init__(self, folder: Path, k1: float, b: float, title_weight: int) -> None:
        self.folder = folder
        self.params = {"k1": k1, "b": b, "title_weight": title_weight}
        self.ids: list[str] = []
        self._rows: dict[str, int] = {}
        self.sources = np.array([], dtype=object)
        self.years = np.array([], dtype=np.int32)
        self.model: bm25s.BM25 | None = None
        self.fingerprint = ""
        self._load()

    def _load(self) -> None:
        try:
            manifest = json.loads((self.folder / _MANIFEST).read_text())
            if manifest["params"] != self.params:
                return
            model = bm25s.BM25.load(str(self.folder))
        except (OSError, ValueError, KeyError):
            return
        self.model, self.ids, self.fingerprint = model, manifest["ids"], manifest["fingerprint"]
        self._rows = {i: row for row, i in enumerate(self.ids)}
        self.sources = np.array(manifest["sources"], dtype=object)
        self.years = np.array(manifest["years"], dtype=np.int32)

    def covers(self, ids_fingerprint: str) -> bool:
        """Whether the saved index covers exactly the abstracts with this fingerprint."""
        return self.model is not None and self.fingerprint == ids_fingerprint

    def build(self, abstracts: list[Abstract]) -> None:
        """Index these abstracts and save, replacing the previous index."""
        self.ids = [a.id for a in abstracts]
        self._rows = {i: row for row, i in enumerate(self.ids)}
        self.sources = np.array([a.source for a in abstracts], dtype=object)
        self.years = np.array([a.year or 0 for a in abstracts], dtype=np.int32)
        self.fingerprint = fingerprint(self.ids)
        if not abstracts:
            self.model = None
            shutil.rmtree(self.folder, ignore_errors=True)
            return
        weight = self.params["title_weight"]
        texts = [" ".join([a.title] * weight * a.titled + [a.text]) for a in abstracts]
        self.model = bm25s.BM25(k1=self.params["k1"], b=self.params["b"])
        self.model.index(tokenize(texts), show_progress=False)
        staging = self.folder.with_name(self.folder.name + ".new")
        shutil.rmtree(staging, ignore_errors=True)
        self.model.save(str(staging))
        manifest = {
            "params": self.params,
            "fingerprint": self.fingerprint,
            "ids": self.ids,
            "sources": self.sources.tolist(),
            "years": self.years.tolist(),
        }
        (staging / _MANIFEST).write_text(json.dumps(manifest))
        shutil.rmtree(self.folder, ignore_errors=True)
        staging.rename(self.folder)

    def search(self, query: str, n: int, mask: np.ndarray | None = None) -> list[tuple[str, float]]:
        """Up to ``n`` (abstract id, BM25 score) pairs with a positive score, best first.

        ``mask`` (1 = allowed, one entry per indexed abstract) applies filters.
        """
        if self.model is None or not self.ids:
            return []
        tokens = tokenize([query])
        if not tokens[0]:
            return []
        n = min(n, len(self.ids))
        docs, scores = self.model.retrieve(
            tokens, k=n, show_progress=False, weight_mask=mask, n_threads=1
        )
        return [
            (self.ids[int(d)], float(s)) for d, s in zip(docs[0], scores[0], strict=True) if s > 0
        ]

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
            found += weight * np.isin(rows, docs)
            total += weight
        return dict(zip(ids, (found / total).tolist(), strict=True))

    def containing(self, text: str) -> list[str]:
        """The ids of the indexed abstracts that contain every token of ``text`` (a name
        such as "Time-MoE" is two tokens; both must occur)."""
        terms = tokenize([text])[0] if self.model is not None else []
        if not terms:
            return []
        found = self._postings(terms[0])
        for term in terms[1:]:
            found = np.intersect1d(found, self._postings(term))
        return [self.ids[int(row)] for row in found]

    def _postings(self, term: str) -> np.ndarray:
        """The sorted rows of the abstracts that contain a (stemmed) term."""
        postings, indptr = self.model.scores["indices"], self.model.scores["indptr"]
        column = self.model.vocab_dict.get(term)
        return postings[indptr[column] : indptr[column + 1]] if column is not None else postings[:0]
