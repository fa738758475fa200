"""PubMedQA-L: yes/no/maybe research questions written by others, in another field (biomedicine).

Used by ``benchmarks/answers.py --pubmedqa START:END``. The 1,000 expert-labelled abstracts
(without their conclusions) are indexed; each training question is answered by its own
abstract (``benchmarks/data/pubmedqa/``, MIT, see its SOURCE.md). Per label (yes, no, maybe):

- answered: not abstained; gold cited: the question's own abstract is cited;
- the answering sentence, the abstract's sentence closest (by embedding) to its own
  conclusion (``long_answer``): in the prompt, and among the cited evidence;
- verdicts: ``Answer.verdict`` against the label (the confusion matrix), and the wrong
  verdicts shown: a "yes" on a no-question, a "no" on a yes-question, any verdict on a maybe;
  also the model's own leading word ("Yes,", "No,"), read from its raw text, whether kept
  or not: that is how the verdict setting is decided (`Settings.verdicts`);
- why it abstained, and latency.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from assistant import Assistant, evaluation
from assistant.corpus.display import sentences

DATA = Path(__file__).resolve().parent / "data" / "pubmedqa"
LABELS = ("yes", "no", "maybe")
_LEADING = re.compile(r"\s*(yes|no|mixed|maybe)\b", re.IGNORECASE)


def load(start: int, end: int) -> list[dict[str, Any]]:
    """Training questions ``start``..``end`` (in the file's order)."""
    return evaluation.load_qa(DATA / "train.jsonl")[start:end]


def index(data_dir: Path, **settings: Any) -> Assistant:
    """An assistant over the 1,000 PQA-L abstracts (built once in ``data_dir``)."""
    assistant = Assistant(data_dir=data_dir, auto_ingest=False, **settings)
    if assistant.stats()["abstracts"] < 1000:
        started = time.perf_counter()
        report = assistant.ingest([DATA / "corpus.jsonl"])
        print(f"indexed {report.added} PubMedQA abstracts in {time.perf_counter() - started:.0f} s", flush=True)
    return assistant


def answering_sentence(assistant: Assistant, abstract_text: str, conclusion: str) -> str:
    """The abstract's sentence closest to its own conclusion."""
    found = sentences(abstract_text)
    vectors = assistant.embedder.embed([conclusion, *found])
    return found[int(np.argmax(vectors[1:] @ vectors[0]))]


def leading_word(text: str) -> str | None:
    """The verdict word the model began with, if any."""
    match = _LEADING.match(text)
    return match.group(1).lower() if match else None


def evaluate(assistant: Assistant, items: list[dict[str, Any]]) -> dict[str, Any]:
    """Ask every question; per-question rows and the figures per label."""
    abstracts = {a.id: a for a in assistant.store.read_abstracts()}
    rows = []
    for number, item in enumerate(items, start=1):
        gold = abstracts[item["id"]]
        key = answering_sentence(assistant, gold.text, item["long_answer"])
        answer = assistant.ask(item["question"])
        shown = [e for h, e in zip(answer.sources, answer.excerpts) if h.abstract.id == gold.id]
        cited = [c for c in answer.citations if c.abstract.id == gold.id]
        rows.append({
            "id": item["id"], "label": item["final_decision"], "question": item["question"],
            "answered": not answer.abstained, "reason": answer.abstain_reason,
            "gold_retrieved_rank": next((h.rank for h in answer.sources if h.abstract.id == gold.id), None),
            "gold_cited": bool(cited), "key_in_prompt": any(key in e for e in shown),
            "key_cited": any(key in c.evidence for c in cited),
            "verdict": answer.verdict, "model_leading_word": leading_word(answer.raw_text),
            "evidence_offered": bool(answer.evidence), "total": answer.timings["total"], "answer": answer.text,
            "model_wrote": answer.raw_text,
        })
        print(f"[{number}/{len(items)}] {item['id']} {item['final_decision']}: "
              f"{'answered' if not answer.abstained else answer.abstain_reason} in {answer.timings['total']:.1f} s: "
              f"{answer.text[:90]}", flush=True)
    return {"model": assistant.settings.llm_model, "verdicts": assistant.settings.gives_verdicts,
            "by_label": {label: summarise([r for r in rows if r["label"] == label]) for label in LABELS
                         if any(r["label"] == label for r in rows)} | {"all": summarise(rows)},
            "confusion": confusion(rows, "verdict"), "model_confusion": confusion(rows, "model_leading_word"),
            "questions": rows}


def summarise(group: list[dict[str, Any]]) -> dict[str, Any]:
    """The figures of a group of questions."""
    n = len(group)

    def rate(key: str) -> float:
        return sum(bool(r[key]) for r in group) / n if n else 0.0

    wrong = [r for r in group if wrong_verdict(r["label"], r["verdict"])]
    return {
        "questions": n, "answered": rate("answered"), "gold_cited": rate("gold_cited"),
        "key_in_prompt": rate("key_in_prompt"), "key_cited": rate("key_cited"),
        "evidence_offered_on_abstention": sum(r["evidence_offered"] for r in group if not r["answered"])
        / max(1, sum(not r["answered"] for r in group)),
        "wrong_verdicts_shown": len(wrong) / n if n else 0.0,
        "verdict_accuracy": verdict_accuracy(group, "verdict"),
        "model_word_accuracy": verdict_accuracy(group, "model_leading_word"),
        "reasons": dict(Counter(r["reason"] for r in group if r["reason"])),
        "total": evaluation.latency_summary([r["total"] for r in group]),
    }


def wrong_verdict(label: str, verdict: str | None) -> bool:
    """A verdict shown that the label contradicts (any verdict on a maybe-question)."""
    if verdict is None:
        return False
    return label == "maybe" or (verdict, label) in {("yes", "no"), ("no", "yes")}


def verdict_accuracy(group: list[dict[str, Any]], key: str) -> float | None:
    """Accuracy of a verdict over all questions of the group, counting no verdict as wrong
    (the majority class, always "yes", is the baseline to beat)."""
    return sum(r[key] == r["label"] for r in group) / len(group) if group else None


def confusion(rows: list[dict[str, Any]], key: str) -> dict[str, dict[str, int]]:
    """Label → verdict (or "none") → count."""
    table: dict[str, dict[str, int]] = {}
    for r in rows:
        cell = table.setdefault(r["label"], {})
        cell[r[key] or "none"] = cell.get(r[key] or "none", 0) + 1
    return table
