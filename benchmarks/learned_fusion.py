"""Learned fusion of the product's signals on SciFact (train qrels), cross-validated two ways.

    pip install lightgbm==4.7.0   # the `bench` extra; not needed by the product or its tests
    python benchmarks/learned_fusion.py [--scifact ../shared/data/scifact] [--work DIR]

A LightGBM lambdarank model reranks the product's candidates (the union of each side's
top 100) from features of the signals the product already computes: each side's
distribution-scaled score (as fused), the raw cosine and its gap to the query's best, BM25
relative to the query's best, phrase BM25, reciprocal ranks, the subject bonuses, the
product's own fused score, and three query features (best cosine, best BM25, length).

It is scored by 5-fold cross-validation over the queries, three seeds, with folds drawn
two ways:
- **at random**: queries sharing a gold abstract may fall in different folds. SciFact's
  claims come in near-duplicates (a claim and its negation, cited from one sentence), so
  the model can learn a feature pattern of one gold pair from its twin;
- **grouped by gold abstract**: queries linked through a shared gold abstract stay in one
  fold, so no test query has a twin in training. This is the honest estimate.

Exact scores (brute force, as `retrieval_signals.py`, whose vector cache it shares). Never
part of the test run.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import lightgbm
import numpy as np
import pytrec_eval

from assistant.index.bm25 import Bm25Index, tokenize
from assistant.index.embedders import create
from assistant.retrieval import _distribution_scaled, subject_bonuses
from assistant.settings import Settings
from retrieval_signals import (
    DEPTH, best_unit, bm25_matrix, cached_vectors, chunk_units, grouped_folds, load_scifact, phrase_matrix,
    random_folds, vector_cache,
)

ROOT = Path(__file__).resolve().parent.parent
FOLDS, SEEDS = 5, (0, 1, 2)
MODELS = ((7, 200), (15, 300), (31, 300))  # (leaves, rounds), learning rate 0.05


def scaled_top(row: np.ndarray, ids: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A signal's top ``DEPTH`` rows, its scores scaled as the product's fusion scales them
    (0 outside the top) and its ranks (``DEPTH + 1`` outside)."""
    top = np.argpartition(-row, DEPTH)[:DEPTH]
    scaled = np.zeros(len(row))
    scaled[top] = list(_distribution_scaled({ids[i]: float(row[i]) for i in top}).values())
    ranks = np.full(len(row), DEPTH + 1.0)
    ranks[top[np.argsort(-row[top])]] = np.arange(1, DEPTH + 1)
    return top, scaled, ranks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scifact", type=Path, default=ROOT.parent / "shared" / "data" / "scifact")
    parser.add_argument("--work", type=Path, default=None, help="vector cache (default: <cache_dir>/signals)")
    args = parser.parse_args()

    settings = Settings()
    embedder = create(settings)
    work = vector_cache(args.work, settings, embedder)
    qrels, abstracts, queries = load_scifact(args.scifact, "train.tsv")
    ids = [a.id for a in abstracts]
    row_of = {i: n for n, i in enumerate(ids)}
    query_texts = [q["text"] for q in queries]
    rest = 1.0 - settings.phrase_weight  # the product's weights, as `assistant.retrieval.fuse` splits them
    dense_weight, lexical_weight = rest * (1.0 - settings.lexical_weight), rest * settings.lexical_weight

    texts, owners = chunk_units(abstracts, settings.chunk_size, settings.chunk_overlap)
    similarity = cached_vectors(work, "queries", query_texts, embedder) @ cached_vectors(work, "chunks", texts, embedder).T
    dense = best_unit(similarity, np.array(owners), len(ids))
    document_tokens, query_tokens = tokenize([f"{a.title} {a.text}" for a in abstracts]), tokenize(query_texts)
    lexical = bm25_matrix(document_tokens, query_tokens, settings.bm25_k1, settings.bm25_b)
    phrases = phrase_matrix(document_tokens, query_tokens, settings.bm25_k1, settings.bm25_b)
    subject_index = Bm25Index(work / "bm25", settings.bm25_k1, settings.bm25_b, settings.bm25_title_weight,
                              phrases=False)
    subject_index.build(abstracts)

    features, labels, candidates, product = [], [], [], []
    for n, query in enumerate(queries):
        (top_d, dense_scaled, dense_rank), (top_l, lexical_scaled, lexical_rank), (top_p, phrase_scaled, _) = (
            scaled_top(dense[n], ids), scaled_top(lexical[n], ids), scaled_top(phrases[n], ids))
        pool = np.unique(np.concatenate([top_d, top_l, top_p]))
        bonus = np.zeros(len(ids))
        for abstract_id, weight in subject_bonuses(query["text"], subject_index, settings.subject_weight,
                                                   settings.unique_subject_weight).items():
            bonus[row_of[abstract_id]] = weight
        fused = dense_weight * dense_scaled + lexical_weight * lexical_scaled + settings.phrase_weight * phrase_scaled
        fused += bonus  # the product's score
        best_cosine, best_bm25 = dense[n].max(), max(lexical[n].max(), 1e-6)
        constant = np.ones(len(pool))
        features.append(np.stack([
            dense_scaled[pool], lexical_scaled[pool], phrase_scaled[pool], bonus[pool] > 0.2, bonus[pool] > 0,
            dense[n][pool], dense[n][pool] - best_cosine, lexical[n][pool] / best_bm25, phrases[n][pool],
            1 / (60 + dense_rank[pool]), 1 / (60 + lexical_rank[pool]), fused[pool],
            best_cosine * constant, len(query_tokens[n]) * constant, best_bm25 * constant,
        ], axis=1).astype(np.float64))
        labels.append(np.array([qrels[query["_id"]].get(ids[c], 0) for c in pool]))
        candidates.append([ids[c] for c in pool])
        product.append(fused[pool])

    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"})

    def ndcg(scores: list[np.ndarray]) -> float:
        run = {}
        for n, query in enumerate(queries):
            order = np.argsort(-scores[n], kind="stable")[:100]
            run[query["_id"]] = {candidates[n][i]: float(100 - rank) for rank, i in enumerate(order)}
        return float(np.mean([v["ndcg_cut_10"] for v in evaluator.evaluate(run).values()]))

    def cross_validated(fold: np.ndarray, leaves: int, rounds: int, seed: int) -> float:
        predicted: list[np.ndarray] = [np.empty(0)] * len(queries)
        for k in range(FOLDS):
            train = np.flatnonzero(fold != k)
            data = lightgbm.Dataset(np.concatenate([features[n] for n in train]),
                                    np.concatenate([labels[n] for n in train]),
                                    group=[len(candidates[n]) for n in train])
            model = lightgbm.train(dict(
                objective="lambdarank", lambdarank_truncation_level=20, num_leaves=leaves, learning_rate=0.05,
                min_data_in_leaf=50, bagging_fraction=0.8, bagging_freq=1, feature_fraction=0.8, seed=seed,
                num_threads=2, verbose=-1), data, num_boost_round=rounds)
            for n in np.flatnonzero(fold == k):
                predicted[n] = model.predict(features[n])
        return ndcg(predicted)

    print(f"\nSciFact (train.tsv, {len(queries)} queries; exact scores)")
    print(f"product's fused score: nDCG@10 {ndcg(product):.4f}")
    folds = {
        "random folds": lambda seed: random_folds(len(queries), FOLDS, seed),
        "folds grouped by gold abstract": lambda seed: grouped_folds(queries, qrels, FOLDS, seed),
    }
    print(f"{'lambdarank, 5-fold CV':52s} {'seeds ' + ' / '.join(map(str, SEEDS)):>24s} {'mean':>7s}")
    for name, make in folds.items():
        for leaves, rounds in MODELS:
            scores = [cross_validated(make(seed), leaves, rounds, seed) for seed in SEEDS]
            print(f"{name + f', {leaves} leaves, {rounds} rounds':52s} {' / '.join(f'{s:.4f}' for s in scores):>24s}"
                  f" {np.mean(scores):7.4f}", flush=True)


if __name__ == "__main__":
    main()
