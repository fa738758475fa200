"""Retrieval evaluation with pytrec_eval (trec_eval's measures), never hand-written metrics.

- QA files (the format of ``eval/dev.jsonl``): gold abstracts are found in the index by
  their 60-character text prefix; recall@1/5/10 and MRR overall and per question type.
  Questions without gold abstracts (unanswerable) measure the abstention signal instead:
  how well the top hit's ``relevance`` separates them from the answerable ones (ROC AUC,
  with the raw dense and BM25 scores beside it), and what the ``min_relevance`` gate does.
- BEIR folders (``corpus.jsonl``, ``queries.jsonl``, ``qrels/*.tsv``): the corpus is
  indexed into its own data directory and collection (never the user's index), and the
  queries that appear in the qrels are scored by nDCG@10 and recall@100.
"""

from __future__ import annotations

import csv
import hashlib
import re
import json
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytrec_eval

from assistant.types import Answer

from assistant.corpus.display import normalize_text, sentences

if TYPE_CHECKING:
    from assistant.api import Assistant
    from assistant.types import Hit

QA_MEASURES = {"recall.1,5,10", "recip_rank"}
BEIR_MEASURES = {"ndcg_cut.10", "recall.100"}


def _mean(values: list[float]) -> float:
    return statistics.fmean(values) if values else 0.0


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


def latency_summary(seconds: list[float]) -> dict[str, float]:
    """p50 and p95 in milliseconds."""
    return {"p50_ms": 1000 * _percentile(seconds, 0.5), "p95_ms": 1000 * _percentile(seconds, 0.95)}


def time_calls(call: Callable[[str], object], inputs: list[str]) -> dict[str, float]:
    """p50/p95 (ms) of ``call`` on each input, warm: one call first that is not timed."""
    call(inputs[0])
    seconds = []
    for text in inputs:
        started = time.perf_counter()
        call(text)
        seconds.append(time.perf_counter() - started)
    return latency_summary(seconds)


def load_qa(path: str | Path) -> list[dict[str, Any]]:
    """The questions of a QA file, one JSON object per line (split at newlines only: a
    string may hold other line separators, such as U+2028)."""
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").split("\n") if line.strip()]


def gold_ids(assistant: Assistant, items: list[dict[str, Any]]) -> dict[str, set[str]]:
    """Question id → ids of its gold abstracts in the index, matched by text prefix."""
    by_prefix: dict[str, set[str]] = defaultdict(set)
    prefixes = {normalize_text(g["prefix"]) for item in items for g in item.get("gold", [])}
    for abstract in assistant.store.read_abstracts():
        for prefix in prefixes:
            if abstract.text.startswith(prefix):
                by_prefix[prefix].add(abstract.id)
    return {
        item["id"]: {i for g in item.get("gold", []) for i in by_prefix[normalize_text(g["prefix"])]}
        for item in items
    }


def _auc(positives: list[float], negatives: list[float]) -> float | None:
    """ROC AUC: the chance that a positive scores above a negative (ties count half)."""
    from scipy.stats import mannwhitneyu  # imported here: scipy.stats adds ~1 s to every CLI start

    if not positives or not negatives:
        return None
    return float(mannwhitneyu(positives, negatives).statistic) / (len(positives) * len(negatives))


def abstention_signal(
    answerable: list[dict[str, float]], unanswerable: list[dict[str, float]], threshold: float
) -> dict[str, Any]:
    """How well the top hit's scores tell answerable from unanswerable questions.

    Each question gives ``relevance`` (the top hit's, which the answering step gates on),
    ``dense`` (best cosine) and ``lexical`` (best BM25 score). ``gated`` is the share of
    each group whose relevance is below ``threshold``: for unanswerable questions the
    abstentions the gate makes, for answerable ones the answers it wrongly withholds.
    """

    def values(group: list[dict[str, float]], signal: str) -> list[float]:
        return [row[signal] for row in group]

    def span(group: list[dict[str, float]]) -> list[float] | None:
        return [min(values(group, "relevance")), max(values(group, "relevance"))] if group else None

    def gated(group: list[dict[str, float]]) -> float | None:
        return _mean([float(row["relevance"] < threshold) for row in group]) if group else None

    return {
        "questions": {"answerable": len(answerable), "unanswerable": len(unanswerable)},
        "auc": {
            signal: _auc(values(answerable, signal), values(unanswerable, signal))
            for signal in ("relevance", "dense", "lexical")
        },
        "relevance_range": {"answerable": span(answerable), "unanswerable": span(unanswerable)},
        "threshold": threshold,
        "gated": {"answerable": gated(answerable), "unanswerable": gated(unanswerable)},
    }


def _signal(hits: list[Hit]) -> dict[str, float]:
    """The scores of one search that the abstention signal compares."""
    return {
        "relevance": hits[0].relevance if hits else 0.0,
        "dense": max((h.dense or 0.0 for h in hits), default=0.0),
        "lexical": max((h.lexical or 0.0 for h in hits), default=0.0),
    }


def evaluate_qa(assistant: Assistant, path: str | Path, k: int = 10) -> dict[str, Any]:
    """Recall@1/5/10 and MRR of `Assistant.search` on a QA file, overall and per type, and
    the abstention signal on its answerable vs unanswerable (no gold) questions."""
    items = load_qa(path)
    assistant.ensure_corpus()
    gold = gold_ids(assistant, items)
    missing = [item["id"] for item in items if item.get("gold") and not gold[item["id"]]]
    answerable = [item for item in items if gold[item["id"]]]
    unanswerable = [item for item in items if not item.get("gold")]
    run, seconds = {}, []
    signals: dict[str, dict[str, float]] = {}
    for item in answerable + unanswerable:
        started = time.perf_counter()
        hits = assistant.search(item["question"], k=k)
        seconds.append(time.perf_counter() - started)
        signals[item["id"]] = _signal(hits)
        if gold[item["id"]]:
            run[item["id"]] = {h.abstract.id: float(k - h.rank + 1) for h in hits}
    qrels = {item["id"]: dict.fromkeys(gold[item["id"]], 1) for item in answerable}
    scores = pytrec_eval.RelevanceEvaluator(qrels, QA_MEASURES).evaluate(run) if run else {}
    groups: dict[str, list[str]] = defaultdict(list)
    for item in answerable:
        groups["all"].append(item["id"])
        groups[item.get("type", "untyped")].append(item["id"])

    def summarise(ids: list[str]) -> dict[str, float]:
        return {
            "questions": len(ids),
            "recall@1": _mean([scores[i]["recall_1"] for i in ids]),
            "recall@5": _mean([scores[i]["recall_5"] for i in ids]),
            "recall@10": _mean([scores[i]["recall_10"] for i in ids]),
            "mrr": _mean([scores[i]["recip_rank"] for i in ids]),
        }

    return {
        "file": str(path),
        "by_type": {name: summarise(ids) for name, ids in sorted(groups.items())},
        "skipped_without_gold": len(items) - len(answerable) - len(missing),
        "gold_not_in_index": missing,
        "abstention_signal": abstention_signal(
            [signals[item["id"]] for item in answerable],
            [signals[item["id"]] for item in unanswerable],
            assistant.settings.min_relevance,
        ),
        "latency": latency_summary(seconds),
    }


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    with path.open(newline="") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            qrels[row["query-id"]][row["corpus-id"]] = int(row["score"])
    return dict(qrels)


def beir_data_dir(assistant: Assistant, corpus_dir: Path) -> Path:
    """Where a BEIR corpus is indexed: under the cache dir, one folder per corpus path,
    embedder and chunking (an index refuses to open with another)."""
    settings = assistant.settings
    identity = f"{corpus_dir.resolve()}\0{assistant.embedder.model_id}\0{settings.chunk_size}/{settings.chunk_overlap}"
    key = hashlib.sha256(identity.encode()).hexdigest()[:12]
    return assistant.settings.cache_dir / "beir" / f"{corpus_dir.resolve().name}-{key}"


def beir_index(assistant: Assistant, corpus_dir: Path) -> Assistant:
    """An assistant over a BEIR corpus's own embedded index (`beir_data_dir`), with
    ``assistant``'s retrieval settings; ingest its ``corpus.jsonl`` to build or resume it."""
    from assistant.api import Assistant

    return Assistant(assistant.settings, data_dir=beir_data_dir(assistant, corpus_dir), collection="beir",
                     chroma_host=None, chroma_port=None, auto_ingest=False)


def beir_queries(corpus_dir: Path, qrels: dict[str, dict[str, int]]) -> dict[str, str]:
    """Query id → text of the BEIR corpus's queries that ``qrels`` judges."""
    return {
        q["_id"]: q["text"]
        for q in map(json.loads, (corpus_dir / "queries.jsonl").read_text().splitlines())
        if q["_id"] in qrels
    }


def evaluate_beir(
    assistant: Assistant, corpus_dir: str | Path, qrels_path: str | Path, k: int = 100
) -> dict[str, Any]:
    """nDCG@10 and recall@100 on a BEIR-layout folder, indexed apart from the user's index.

    ``assistant`` supplies the retrieval settings; the index itself is a separate
    embedded Chroma under the cache dir (incremental: a second run re-uses it).
    """
    corpus_dir = Path(corpus_dir)
    beir = beir_index(assistant, corpus_dir)
    report = beir.ingest([corpus_dir / "corpus.jsonl"])
    qrels = read_qrels(Path(qrels_path))
    queries = beir_queries(corpus_dir, qrels)
    run, seconds = {}, []
    for query_id, text in queries.items():
        started = time.perf_counter()
        hits = beir.search(text, k=k)
        seconds.append(time.perf_counter() - started)
        run[query_id] = {h.abstract.id: float(k - h.rank + 1) for h in hits}
    scores = pytrec_eval.RelevanceEvaluator(
        {q: qrels[q] for q in queries}, BEIR_MEASURES
    ).evaluate(run)
    return {
        "corpus": str(corpus_dir),
        "qrels": str(qrels_path),
        "queries": len(queries),
        "abstracts": beir.store.count(),
        "ingest_seconds": report.seconds,
        "ndcg@10": _mean([s["ndcg_cut_10"] for s in scores.values()]),
        "recall@100": _mean([s["recall_100"] for s in scores.values()]),
        "latency": latency_summary(seconds),
    }


_NUMBER_FORMS = [
    (re.compile(r"(?<=\d)[,\u2009\u202f](?=\d{3}\b)"), ""),  # 8,192 -> 8192
    (re.compile(r"(?<=\d)\s+(?=%)"), ""),  # 21.5 % -> 21.5%
    (re.compile(r"(?<=\d)\s*(?:percent|per cent)\b"), "%"),
    (re.compile(r"(?<=\d)\s*(?:K|k)\b"), " thousand"),
    (re.compile(r"(?<=\d)\s*M\b"), " million"),
    (re.compile(r"(?<=\d)\s*(?:B|bn)\b"), " billion"),
    (re.compile(r"(?<=\d)\s*T\b"), " trillion"),
    (re.compile(r"(?<=\d)\s*(?:x|×|times)(?![A-Za-z])", re.IGNORECASE), " x"),  # 3.3x, 3.3times -> 3.3 x
    (re.compile(r"[\u2212\u2013]"), "-"),
]


def _number_forms(text: str) -> str:
    """One spelling per number: thousands separators, "%" and scale suffixes normalised."""
    for pattern, replacement in _NUMBER_FORMS:
        text = pattern.sub(replacement, text)
    return text.lower()


def _by_type(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Rows grouped by their question ``type``, and all of them under "all", by name."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups["all"].append(row)
        groups[row["type"]].append(row)
    return dict(sorted(groups.items()))


def _contains(text: str, fact: str) -> bool:
    """Whole-word, case-insensitive containment, numbers compared in one spelling
    ("570M" states "570 million", "8192" states "8,192")."""
    return re.search(rf"(?<!\w){re.escape(_number_forms(fact))}(?!\w)", _number_forms(text)) is not None


def cited_text(answer: Answer) -> str:
    """The sentences of an answer that carry a citation marker."""
    return " ".join(s for s in sentences(answer.text) if re.search(r"\[\d+\]", s))


def evaluate_answers(
    assistant: Assistant,
    path: str | Path,
    limit: int | None = None,
    progress: bool = False,
    answer_with: Callable[[str], Answer] | None = None,
) -> dict[str, Any]:
    """Answer quality of `Assistant.ask` (or of ``answer_with``, another pipeline whose
    citations point at abstracts of this assistant's index) on a QA file, overall and
    per question type.

    citation precision: cited abstracts that are gold (an unanswerable question has no
    gold, so any citation there counts against precision); citation recall: gold
    abstracts cited; must_contain: facts found in the answer (whole word, any case);
    abstention accuracy: unanswerable → abstained, answerable → answered. ``failures``
    lists every question that missed, with why (`answer_problems`).
    """
    items = load_qa(path)[:limit]
    assistant.ensure_corpus()
    gold = gold_ids(assistant, items)
    ask = answer_with or assistant.ask
    rows = []
    for number, item in enumerate(items, start=1):
        answer = ask(item["question"])
        cited = {c.abstract.id for c in answer.citations}
        facts = item.get("must_contain", [])
        rows.append({
            "id": item["id"],
            "type": item.get("type", "untyped"),
            "answerable": bool(gold[item["id"]]),
            "abstained": answer.abstained,
            "cited": len(cited),
            "cited_gold": len(cited & gold[item["id"]]),
            "gold": len(gold[item["id"]]),
            "facts": len(facts),
            "facts_found": sum(_contains(answer.text, f) for f in facts),
            "facts_missing": [f for f in facts if not _contains(answer.text, f)],
            "reason": answer.abstain_reason,
            "first_token": answer.timings.get("first_token"),
            "total": answer.timings["total"],
            "answer": answer.text,
            "model": answer.model,
        })
        if progress:
            print(f"[{number}/{len(items)}] {item['id']} {'abstained' if answer.abstained else 'answered'} "
                  f"in {answer.timings['total']:.1f} s: {answer.text[:100]}", flush=True)

    def summarise(group: list[dict[str, Any]]) -> dict[str, Any]:
        cited = sum(r["cited"] for r in group)
        gold_total = sum(r["gold"] for r in group if r["answerable"])
        facts = sum(r["facts"] for r in group if r["answerable"])
        first = [r["first_token"] for r in group if r["first_token"] is not None]
        return {
            "questions": len(group),
            "citation_precision": sum(r["cited_gold"] for r in group) / cited if cited else None,
            "citation_recall": sum(r["cited_gold"] for r in group if r["answerable"]) / gold_total if gold_total else None,
            "must_contain": sum(r["facts_found"] for r in group if r["answerable"]) / facts if facts else None,
            "abstention_accuracy": _mean([float(r["abstained"] != r["answerable"]) for r in group]),
            "first_token": latency_summary(first),
            "total": latency_summary([r["total"] for r in group]),
        }

    return {
        "file": str(path),
        "model": rows[0]["model"] if rows else assistant.settings.llm_model,
        "by_type": {name: summarise(group) for name, group in _by_type(rows).items()},
        "questions": rows,
        "failures": [{"id": r["id"], "type": r["type"], "problems": problems}
                     for r in rows if (problems := answer_problems(r))],
    }


def answer_problems(row: dict[str, Any]) -> list[str]:
    """What went wrong with one answered question of `evaluate_answers` (empty: nothing)."""
    if not row["answerable"]:
        return [] if row["abstained"] else [f"answered an unanswerable question: {row['answer'][:120]}"]
    if row["abstained"]:
        return [f"abstained ({row['reason']})"]
    problems = []
    if row["facts_missing"]:
        problems.append(f"facts missing: {', '.join(row['facts_missing'])}")
    if row["cited_gold"] < row["gold"]:
        problems.append(f"cited {row['cited_gold']} of {row['gold']} gold abstracts")
    if row["cited"] > row["cited_gold"]:
        problems.append(f"cited {row['cited'] - row['cited_gold']} non-gold abstracts")
    return problems


SCRIPTED_KINDS = ("correct", "wrong_source", "altered", "partial", "refusal")


def _scripted_outcome(row: dict[str, Any], answer: Answer, gold: set[str], missing: list[int]) -> dict[str, Any]:
    """What one scripted reply became, and whether that is right for its kind (see
    `evaluate_scripted`), with the reason when it is not."""
    cited = {c.abstract.id for c in answer.citations}
    shown = cited_text(answer)
    facts = [f for f in row.get("must_contain", []) if not _contains(shown, f)]
    outcome: dict[str, Any] = {
        "id": row["id"], "kind": row["kind"], "type": row.get("type", "untyped"),
        "abstained": answer.abstained, "reason": answer.abstain_reason, "answer": answer.text,
    }
    problem = None
    if row["kind"] in ("correct", "wrong_source", "partial"):
        if answer.abstained:
            problem = f"abstained ({answer.abstain_reason})"
        elif cited != gold:
            problem = f"cited {len(cited & gold)} of {len(gold)} gold abstracts and {len(cited - gold)} others"
        elif facts:
            problem = f"not in a cited sentence: {', '.join(facts)}"
        if row["kind"] == "partial" and not answer.abstained and _squash(row["refusal"]) in _squash(answer.text):
            problem = "the refusal sentence was kept"
    elif row["kind"] == "altered":
        if _contains(shown, row["altered"]["to"]):
            problem = f"the altered {row['altered']['to']} is in a cited sentence"
    elif row["kind"] == "refusal":
        if not answer.abstained or answer.citations:
            problem = "a refusal was given as an answer"
        elif answer.abstain_reason not in ("model_declined", "low_relevance"):  # low_relevance: never asked
            problem = f"abstained as {answer.abstain_reason}, not model_declined"
    if problem and missing:
        problem += f" (source {', '.join(map(str, missing))} of the reply was not in the prompt)"
    outcome["ok"] = problem is None
    outcome["problem"] = problem
    outcome["refusal_cited"] = (
        (row["kind"] == "refusal" and (bool(answer.citations) or not answer.abstained))
        or (row["kind"] == "partial" and _squash(row["refusal"]) in _squash(shown))
    )
    return outcome


def _squash(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def evaluate_scripted(
    assistant: Assistant,
    path: str | Path,
    program: Callable[[dict[str, Any]], Any],
    limit: int | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """Grounding on scripted replies (``tests/data/claims.jsonl``): each row's reply comes
    from a scripted model, which ``program(row)`` sets up before the row's question is
    asked; what it returns may say, as ``.missing``, which referenced sources the prompt did
    not show.

    Kinds of rows and what counts as right:
    - correct: a capable model's correct answer. *Kept*: answered, citing exactly the gold
      abstracts, every ``must_contain`` fact in a cited sentence;
    - wrong_source: the same answer citing the wrong source numbers. *Re-attributed*: as kept;
    - altered: the answer with one number changed. *Caught*: the altered number is in no
      cited sentence;
    - partial: a supported sentence and a refusal. Kept, and the refusal dropped;
    - refusal: only a refusal. Abstained as ``model_declined`` (or as ``low_relevance``,
      without asking the model), nothing cited.
    ``refusals_cited`` counts refusal sentences shown as (cited) answers.
    """
    rows = load_qa(path)[:limit]
    assistant.ensure_corpus()
    gold = gold_ids(assistant, [
        {"id": f"{r['id']}#{k}", "gold": [{"prefix": p}]} for r in rows for k, p in enumerate(r["sources"])
    ])
    outcomes = []
    for number, row in enumerate(rows, start=1):
        script = program(row)
        answer = assistant.ask(row["question"])
        referenced = (
            set(range(len(row["sources"]))) if row["kind"] == "wrong_source"
            else {int(i) for i in re.findall(r"\[@(\d+)\]", row["reply"])}
        )
        wanted = {i for k in referenced for i in gold[f"{row['id']}#{k}"]}
        outcome = _scripted_outcome(row, answer, wanted, list(getattr(script, "missing", [])))
        outcomes.append(outcome)
        if progress:
            print(f"[{number}/{len(rows)}] {row['id']}: {'ok' if outcome['ok'] else outcome['problem']}", flush=True)

    def rate(kind: str, group: list[dict[str, Any]] | None = None) -> float | None:
        chosen = [o for o in (group or outcomes) if o["kind"] == kind]
        return _mean([float(o["ok"]) for o in chosen]) if chosen else None

    return {
        "file": str(path),
        "rows": {kind: sum(o["kind"] == kind for o in outcomes) for kind in SCRIPTED_KINDS},
        "kept": rate("correct"),
        "reattributed": rate("wrong_source"),
        "altered_caught": rate("altered"),
        "partial_kept": rate("partial"),
        "declined": rate("refusal"),
        "refusals_cited": sum(o["refusal_cited"] for o in outcomes),
        "kept_by_type": {name: rate("correct", group) for name, group in _by_type(outcomes).items()},
        "failures": [{k: o[k] for k in ("id", "problem", "answer")} for o in outcomes if not o["ok"]],
        "outcomes": outcomes,
    }
