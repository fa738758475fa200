"""A learned relevance stage, measured: does a model fitted on public labelled (question, paper)
pairs tell the papers that answer a question from their retrieved neighbours better than the
fused retrieval score does?

    python benchmarks/relevance.py [--work DIR] [--pool 30]

1. **Candidates**: the top ``--pool`` hits of the product's hybrid search for the SciFact
   train claims (5,183 abstracts, train qrels; several gold abstracts for some claims), the
   PubMedQA-L training questions (1,000 abstracts; each question's own abstract is its gold)
   and the ML questions (dev, held-out, held-out 2 and held-out yes/no against the bundled
   corpus; gold by the QA files).
2. **Features** of each (question, paper) pair, from what the answer step already reads
   (`context.read`): the fused score's ratio to the best, rank, relevance, dense cosine, BM25,
   IDF coverage, the best and the two best sentence cosines, the best closeness, the best
   sentence's and the title's share of the question's words; the same as gaps to the
   question's best candidate; whether the question is yes/no.
3. **Model**: a logistic regression (scikit-learn) fitted on SciFact and PubMedQA only, never
   on ML questions; 5-fold cross-validation grouped by each question's first gold abstract
   (SciFact's near-duplicate claims share it), and a threshold chosen there (best F1).

Reports the CV ROC AUC (the stage against the fused-score ratio), SciFact train nDCG@10 of the
top 30 ordered by the CV probabilities, and, on the ML sets, the answering tier's precision
(share of its papers that are gold, per answered question) and recall per question type:
the shipped rule (after the relevance gate, the top 5 scoring at least 0.65 / 0.8 of the best)
against the stage at its training threshold and at 0.2. Writes
``benchmarks/results/relevance.json``. Never part of the test run.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytrec_eval
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import GroupKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import pubmedqa
from assistant import Assistant, evaluation
from assistant.answer import context, questions
from assistant.settings import Settings
from assistant.words import share
from results import row, save

ROOT = Path(__file__).resolve().parent.parent
SCIFACT = ROOT.parent / "shared" / "data" / "scifact"
SCIFACT_QRELS = SCIFACT / "qrels" / "train.tsv"
ML_SETS = {"dev": "dev", "held-out": "heldout", "held-out-2": "heldout2", "held-out-yesno": "heldout_yesno"}
GAPS = ["dense", "coverage", "max_cos", "max_close", "max_share", "title_share"]  # minus the question's best
RATIOS = ["score", "lexical"]  # over the question's best
FEATURES = ["rank", "score_ratio", "relevance", "dense", "lexical", "coverage", "max_cos", "top2_cos", "max_close",
            "max_share", "title_share", "dense_gap", "coverage_gap", "max_cos_gap", "max_close_gap", "max_share_gap",
            "title_share_gap", "lexical_ratio", "yes_no"]
Pair = dict[str, Any]


def pairs(assistant: Assistant, qid: str, text: str, gold: set[str], pool: int) -> list[Pair]:
    """One row per retrieved paper: its features and whether it is gold."""
    hits = assistant.search(text, k=pool)
    if not hits:
        return []
    asked = questions.analyse(text)
    reading = context.read(asked, hits, assistant.embedder, assistant.sentence_vectors)
    coverage = assistant.bm25.coverage(text, [h.abstract.key for h in hits])
    rows = []
    for read in reading.hits:
        hit = read.hit
        cosines = np.sort(read.vectors @ reading.question_vector)[::-1] if len(read.vectors) else np.zeros(1)
        rows.append({
            "qid": qid, "aid": hit.abstract.id, "gold": int(hit.abstract.id in gold), "rank": hit.rank, "score": hit.score,
            "relevance": hit.relevance, "dense": hit.dense or 0.0, "lexical": hit.lexical or 0.0,
            "coverage": coverage.get(hit.abstract.key, 0.0), "max_cos": float(cosines[0]),
            "top2_cos": float(cosines[:2].mean()), "max_close": float(read.closeness.max()),
            "max_share": max(share(asked.words, s) for s in read.sentences),
            "title_share": share(asked.words, hit.abstract.title or ""), "yes_no": int(asked.yes_no),
        })
    best = {key: max(r[key] for r in rows) for key in GAPS + RATIOS}
    for r in rows:
        r.update({f"{key}_gap": r[key] - best[key] for key in GAPS})
        r.update({f"{key}_ratio": r[key] / best[key] if best[key] > 0 else 0.0 for key in RATIOS})
    return rows


def collect(assistant: Assistant, items: list[tuple[str, str, set[str], str]], pool: int) -> list[Pair]:
    """The pairs of every (id, question, gold ids, type) item, each row labelled with its type."""
    return [{**r, "type": kind} for qid, text, gold, kind in items for r in pairs(assistant, qid, text, gold, pool)]


def training_pairs(work: Path, pool: int) -> list[Pair]:
    """SciFact train claims and PubMedQA-L training questions, against their own corpora."""
    scifact = evaluation.beir_index(Assistant(auto_ingest=False), SCIFACT)
    scifact.ingest([SCIFACT / "corpus.jsonl"])
    qrels = evaluation.read_qrels(SCIFACT_QRELS)
    claims = evaluation.beir_queries(SCIFACT, qrels)
    rows = collect(scifact, [(f"sf{i}", text, set(qrels[i]), "scifact") for i, text in claims.items()], pool)
    medical = pubmedqa.index(work / "pubmedqa")
    rows += collect(medical, [(f"pq{q['id']}", q["question"], {str(q["id"])}, "pubmedqa")
                              for q in pubmedqa.load(0, 500)], pool)
    return rows


def ml_pairs(work: Path, pool: int) -> dict[str, list[Pair]]:
    """Each ML question set against the bundled corpus."""
    assistant = Assistant(data_dir=work / "ml", auto_ingest=False)
    assistant.ingest([ROOT / "data"])
    found = {}
    for label, name in ML_SETS.items():
        items = evaluation.load_qa(ROOT / "tests" / "data" / f"{name}.jsonl")
        gold = evaluation.gold_ids(assistant, items)
        found[label] = collect(assistant, [(i["id"], i["question"], gold[i["id"]], i.get("type", "yesno"))
                                           for i in items], pool)
    return found


def features(rows: list[Pair]) -> np.ndarray:
    """The pairs as a matrix, one column per name in ``FEATURES``."""
    return np.array([[r[f] for f in FEATURES] for r in rows], dtype=float)


def model() -> Any:
    """The stage: standardised features, then a logistic regression."""
    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=3000))


def cross_validated(rows: list[Pair]) -> np.ndarray:
    """Each training row's probability from a model fitted on the other folds."""
    first_gold: dict[str, str] = {}
    for r in rows:
        if r["gold"]:
            first_gold.setdefault(r["qid"], r["aid"])
    groups = [first_gold.get(r["qid"], r["qid"]) for r in rows]
    labels = np.array([r["gold"] for r in rows])
    probability = np.zeros(len(rows))
    for fit, held in GroupKFold(5).split(rows, groups=groups):
        fitted = model().fit(features([rows[i] for i in fit]), labels[fit])
        probability[held] = fitted.predict_proba(features([rows[i] for i in held]))[:, 1]
    return probability


def best_f1_threshold(labels: np.ndarray, probability: np.ndarray) -> float:
    """The probability threshold with the best F1 over all pairs."""
    scores = [(2 * ((probability >= t) & (labels == 1)).sum() / ((probability >= t).sum() + labels.sum()), t)
              for t in np.arange(0.05, 0.9, 0.025)]
    return round(float(max(scores)[1]), 3)


def scifact_ndcg(rows: list[Pair], key: str) -> float:
    """SciFact train nDCG@10 of each claim's candidates ordered by ``key`` (higher first)."""
    qrels = evaluation.read_qrels(SCIFACT_QRELS)
    run: dict[str, dict[str, float]] = defaultdict(dict)
    for r in rows:
        if r["type"] == "scifact":
            run[r["qid"][2:]][r["aid"]] = float(r[key])
    scores = pytrec_eval.RelevanceEvaluator({q: qrels[q] for q in run}, {"ndcg_cut_10"}).evaluate(dict(run))
    return float(np.mean([s["ndcg_cut_10"] for s in scores.values()]))


Rule = Callable[[list[Pair]], list[Pair]]


def shipped(ratio: float, settings: Settings) -> Rule:
    """Today's citable papers: after the relevance gate (``min_relevance``), the local model's top
    ``top_k`` at ``ratio`` of the best score."""
    gate, top = settings.min_relevance, settings.context.top_k
    return lambda rs: [] if rs[0]["relevance"] < gate else [r for r in rs[:top] if r["score"] >= ratio * rs[0]["score"]]


def stage(threshold: float) -> Rule:
    """The stage's answering tier: every candidate at or above ``threshold``."""
    return lambda rs: [r for r in rs if r["p"] >= threshold]


def tier_quality(rows: list[Pair], rule: Rule) -> dict[str, dict[str, float]]:
    """Per question type: answered (tier not empty), precision, recall; abstained for unanswerable."""
    by_question: dict[str, list[Pair]] = defaultdict(list)
    for r in rows:
        by_question[r["qid"]].append(r)
    measured: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for candidates in by_question.values():
        candidates.sort(key=lambda r: r["rank"])
        kind, tier = candidates[0]["type"], rule(candidates)
        if kind == "unanswerable":
            measured[kind]["abstained"].append(float(not tier))
            continue
        measured[kind]["answered"].append(float(bool(tier)))
        if tier:
            measured[kind]["precision"].append(float(np.mean([r["gold"] for r in tier])))
        measured[kind]["recall"].append(sum(r["gold"] for r in tier) / max(1, sum(r["gold"] for r in candidates)))
    return {kind: {k: round(float(np.mean(v)), 2) for k, v in m.items()} for kind, m in measured.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/relevance-benchmark"), help="indexes built here")
    parser.add_argument("--pool", type=int, default=30, help="candidates per question")
    args = parser.parse_args()
    train = training_pairs(args.work, args.pool)
    labels = np.array([r["gold"] for r in train])
    probability = cross_validated(train)
    for r, p in zip(train, probability, strict=True):
        r["p"] = float(p)
    threshold = best_f1_threshold(labels, probability)
    fitted = model().fit(features(train), labels)
    ml = ml_pairs(args.work, args.pool)
    rows = [
        row("relevance_cv_auc", f"training CV ({len(train):,} pairs): ROC AUC, stage / fused-score ratio",
            f"{roc_auc_score(labels, probability):.3f} / {roc_auc_score(labels, [r['score_ratio'] for r in train]):.3f}"),
        row("relevance_scifact_ndcg", "SciFact train nDCG@10, top 30: fused order / reordered by the stage (CV)",
            f"{scifact_ndcg(train, 'score_ratio'):.4f} / {scifact_ndcg(train, 'p'):.4f}"),
        row("", "threshold chosen on the training CV (best F1)", f"{threshold}"),
    ]
    settings = Settings()
    rules = {f"shipped {settings.citation_score_ratio}": shipped(settings.citation_score_ratio, settings),
             "shipped 0.8": shipped(0.8, settings),
             f"stage {threshold}": stage(threshold), "stage 0.2": stage(0.2)}
    details: dict[str, Any] = {}
    for label, set_rows in ml.items():
        for r, p in zip(set_rows, fitted.predict_proba(features(set_rows))[:, 1], strict=True):
            r["p"] = float(p)
        top10 = [r for r in set_rows if r["rank"] <= 10 and r["type"] != "unanswerable"]
        auc = [roc_auc_score([r["gold"] for r in top10], [r[k] for r in top10]) for k in ("p", "score_ratio")]
        rows.append(row("", f"ML {label}, top 10 gold vs others: ROC AUC, stage / fused-score ratio",
                        f"{auc[0]:.3f} / {auc[1]:.3f}"))
        details[label] = {name: tier_quality(set_rows, rule) for name, rule in rules.items()}
        for name, quality in details[label].items():
            shown = "; ".join(f"{kind} " + ", ".join(f"{k} {v:.2f}" for k, v in m.items())
                              for kind, m in sorted(quality.items()))
            rows.append(row("", f"ML {label}, answering tier by {name}", shown))
    coefficients = dict(zip(FEATURES, np.round(fitted[-1].coef_[0], 3).tolist(), strict=True))
    for r in rows:
        print(f"{r['figure']}: {r['value']}")
    save("relevance", "A learned relevance stage over retrieval's own signals (issue 67)", rows,
         note="Fitted on SciFact train and PubMedQA-L train only; ML questions are never fitted on.",
         coefficients=coefficients, tiers=details)


if __name__ == "__main__":
    main()
