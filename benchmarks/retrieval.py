"""Retrieval benchmark: quality on SciFact (train qrels) and the dev QA file, and latency.

    python benchmarks/retrieval.py [--scifact ../shared/data/scifact] [--qa tests/data/dev.jsonl]

Prints one table: nDCG@10 and recall@100 on SciFact for BM25 alone, dense alone, the
default hybrid and each variant tried (phrase BM25, subject bonus, fusion formula, weights,
depth, BM25 parameters), then recall on the dev questions and search latency p50/p95 on the sample
corpus and on SciFact. SciFact is indexed once into the cache dir (several minutes the
first time).
Writes ``benchmarks/results/retrieval.json`` (rendered into docs/evaluation.md). Never part of
the test run's pass/fail.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytrec_eval

from assistant import Assistant, evaluation
from results import row, save

ROOT = Path(__file__).resolve().parent.parent
Fusion = Callable[[dict[str, float], dict[str, float]], list[tuple[str, float]]]


def min_max_fusion(dense: dict[str, float], lexical: dict[str, float]) -> list[tuple[str, float]]:
    """llama-index's relative_score fusion (min-max per side, equal weights)."""
    fused: dict[str, float] = {}
    for scores in (dense, lexical):
        if scores:
            low, high = min(scores.values()), max(scores.values())
            for key, value in scores.items():
                fused[key] = fused.get(key, 0.0) + 0.5 * ((value - low) / (high - low) if high > low else 1.0)
    return sorted(fused.items(), key=lambda item: -item[1])


def rrf_fusion(dense: dict[str, float], lexical: dict[str, float], k: int = 60) -> list[tuple[str, float]]:
    """Reciprocal-rank fusion (k = 60)."""
    fused: dict[str, float] = {}
    for scores in (dense, lexical):
        for rank, key in enumerate(sorted(scores, key=lambda i: -scores[i]), start=1):
            fused[key] = fused.get(key, 0.0) + 1.0 / (k + rank)
    return sorted(fused.items(), key=lambda item: -item[1])


NO_BONUS = {"subject_weight": 0.0, "unique_subject_weight": 0.0}  # settings of the rows without the subject bonus
ALONE = {**NO_BONUS, "phrase_weight": 0.0}  # one side alone: no phrase BM25, no bonus


def scifact_run(assistant: Assistant, queries: dict[str, str], fusion: Fusion | None) -> dict[str, dict[str, float]]:
    """Top-100 rankings of every query from the retriever's dense and BM25 sides, fused by
    ``fusion`` (without phrases and the subject bonus, whose weights suit the product's
    fusion only) or, when None, the product's own ranking with this assistant's settings
    (what `search` returns, without loading 100 abstracts per query)."""
    assistant.refresh_lexical()  # BM25 with this variant's parameters
    run = {}
    depth = assistant.settings.fusion_depth
    for query_id, text in queries.items():
        if fusion:
            dense = {i: s for i, (s, _) in assistant.retriever.dense(text, depth, None).items()}
            ranked = fusion(dense, assistant.retriever.lexical(text, depth, None))
        else:
            ranked = assistant.retriever.rank(text, depth).ranked
        ranked = ranked[:100]
        run[query_id] = {doc: float(len(ranked) - rank) for rank, (doc, _) in enumerate(ranked)}
    return run


def search_latency(assistant: Assistant, questions: list[str], k: int = 10) -> dict[str, float]:
    """p50/p95 of `Assistant.search` (warm), as a user calls it."""
    return evaluation.time_calls(lambda q: assistant.search(q, k=k), questions)


def score(run: dict, qrels: dict) -> tuple[float, float]:
    """Mean nDCG@10 and recall@100 (pytrec_eval)."""
    results = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.100"}).evaluate(run)
    n = len(results)
    return (sum(r["ndcg_cut_10"] for r in results.values()) / n, sum(r["recall_100"] for r in results.values()) / n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scifact", type=Path, default=ROOT.parent / "shared" / "data" / "scifact")
    parser.add_argument("--qrels", default="train.tsv", help="qrels file under <scifact>/qrels")
    parser.add_argument("--qa", type=Path, default=ROOT / "tests" / "data" / "dev.jsonl")
    args = parser.parse_args()

    base = Assistant(auto_ingest=False)
    started = time.perf_counter()
    report = evaluation.evaluate_beir(base, args.scifact, args.scifact / "qrels" / args.qrels, k=100)
    print(f"SciFact index ready ({report['abstracts']} abstracts; ingest this run {report['ingest_seconds']:.0f} s; "
          f"first pass {time.perf_counter() - started:.0f} s); through search(): nDCG@10 {report['ndcg@10']:.4f}, "
          f"recall@100 {report['recall@100']:.4f}")
    rows = [
        row("scifact_ndcg10", f"SciFact ({args.qrels}, {report['queries']} queries) nDCG@10 through `search()`",
            f"{report['ndcg@10']:.3f}"),
        row("scifact_recall100", "SciFact recall@100 through `search()`", f"{report['recall@100']:.3f}"),
    ]
    data_dir = evaluation.beir_data_dir(base, args.scifact)
    qrels = evaluation.read_qrels(args.scifact / "qrels" / args.qrels)
    queries = evaluation.beir_queries(args.scifact, qrels)

    def variant(**settings: object) -> Assistant:
        return Assistant(base.settings, data_dir=data_dir, collection="beir", **settings)

    variants: list[tuple[str, Assistant, Fusion | None]] = [
        ("BM25 alone (k1 0.9, b 0.4, title x1)", variant(lexical_weight=1.0, **ALONE), None),
        ("dense alone (MiniLM, 128-token chunks, best chunk)", variant(lexical_weight=0.0, **ALONE), None),
        ("hybrid, default (distribution-based fusion, w 0.5, phrases 0.1, depth 100, "
         "subject bonus 0.15 / 0.5 unique)", variant(), None),
        ("hybrid, phrase BM25 weight 0.05", variant(phrase_weight=0.05), None),
        ("hybrid, phrase BM25 weight 0.15", variant(phrase_weight=0.15), None),
        ("hybrid, no phrase BM25", variant(phrase_weight=0.0), None),
        ("hybrid, subject bonus 0.15, no unique-name bonus", variant(unique_subject_weight=0.0), None),
        ("hybrid, no subject bonus", variant(**NO_BONUS), None),
        ("hybrid, no phrase BM25, no subject bonus", variant(**ALONE), None),
        ("hybrid, min-max fusion (llama-index relative_score), no phrases, no bonus", variant(), min_max_fusion),
        ("hybrid, reciprocal-rank fusion (k 60), no phrases, no bonus", variant(), rrf_fusion),
        ("hybrid, BM25 weight 0.4", variant(lexical_weight=0.4), None),
        ("hybrid, BM25 weight 0.6", variant(lexical_weight=0.6), None),
        ("hybrid, fusion depth 50", variant(fusion_depth=50), None),
        ("hybrid, fusion depth 200", variant(fusion_depth=200), None),
        ("hybrid, BM25 without title", variant(bm25_title_weight=0), None),
        ("hybrid, BM25 title x2", variant(bm25_title_weight=2), None),
        ("hybrid, BM25 k1 1.2 b 0.75", variant(bm25_k1=1.2, bm25_b=0.75), None),
    ]
    print(f"\nSciFact ({args.qrels}, {len(queries)} queries)")
    print(f"{'method':80s} {'nDCG@10':>8s} {'R@100':>7s}")
    for name, assistant, fusion in variants:
        ndcg, recall = score(scifact_run(assistant, queries, fusion), qrels)
        print(f"{name:80s} {ndcg:8.4f} {recall:7.4f}")
        rows.append(row("", f"SciFact, {name}: nDCG@10 / R@100", f"{ndcg:.3f} / {recall:.3f}"))

    print(f"\nDev questions ({args.qa.name}) on the sample corpus")
    with tempfile.TemporaryDirectory() as tmp:
        sample = Assistant(base.settings, data_dir=Path(tmp), auto_ingest=True)
        result = evaluation.evaluate_qa(sample, args.qa)
        print(f"{'type':14s} {'n':>3s} {'R@1':>6s} {'R@5':>6s} {'R@10':>6s} {'MRR':>6s}")
        for name, by_type in result["by_type"].items():
            print(f"{name:14s} {by_type['questions']:3d} {by_type['recall@1']:6.3f} {by_type['recall@5']:6.3f} "
                  f"{by_type['recall@10']:6.3f} {by_type['mrr']:6.3f}")
            rows.append(row(f"dev_recall_{name}", f"dev questions, {name} ({by_type['questions']}): R@1 / R@5 / R@10 / MRR",
                            f"{by_type['recall@1']:.2f} / {by_type['recall@5']:.2f} / {by_type['recall@10']:.2f} / "
                            f"{by_type['mrr']:.2f}"))
        sample_latency = search_latency(sample, [item["question"] for item in evaluation.load_qa(args.qa)] * 5)
    scifact_latency = search_latency(variant(), list(queries.values())[:300])
    print("\nSearch latency (hybrid, k=10, warm)")
    print(f"  sample corpus: p50 {sample_latency['p50_ms']:.1f} ms, p95 {sample_latency['p95_ms']:.1f} ms")
    print(f"  SciFact:       p50 {scifact_latency['p50_ms']:.1f} ms, p95 {scifact_latency['p95_ms']:.1f} ms")
    rows += [
        row("search_latency_sample", "search latency p50 / p95, sample corpus (hybrid, k=10, warm)",
            f"{sample_latency['p50_ms']:.0f} / {sample_latency['p95_ms']:.0f} ms"),
        row("search_latency_scifact", "search latency p50 / p95, SciFact",
            f"{scifact_latency['p50_ms']:.0f} / {scifact_latency['p95_ms']:.0f} ms"),
    ]
    save("retrieval", "Retrieval: SciFact, dev questions, search latency", rows,
         note=f"SciFact indexed in {report['ingest_seconds']:.0f} s this run (0 when its index already existed).")


if __name__ == "__main__":
    main()
