"""Findings chosen by code, measured without the model: are they what they claim to be, and how soon?

    python benchmarks/findings.py [--pubmedqa-index DIR] [--data-dir DIR]

1. **Results, unlabelled.** PubMedQA-L's training abstracts as the dataset ships them (plain
   text, no labels, no conclusion): the share whose result finding lies in the abstract's
   RESULTS section (the labels are known from ``structured_train.jsonl``), against the share for
   the sentence closest to the question alone. The same with the authors' conclusion appended,
   unlabelled, as an unstructured abstract would end. Train 0:250 was tuned on; 250:500 is the
   check.
2. **Conclusions, unlabelled.** Whether an abstract's closing sentences read as a conclusion
   (`sections.concludes`): recall on the abstracts with their conclusion appended, and how
   often a conclusion-free abstract's closing result is taken for one.
3. **Conclusions, labelled.** PubMed-shaped (``answers.py --shape pubmed``): for all 500
   training questions, whether the gold paper's conclusion is among the findings (search and
   findings, no model).
4. **Sample sizes.** Precision of `sections.sample_size` on SciFact abstracts labelled by hand
   (``benchmarks/data/sample_size/scifact_check.jsonl``, a sample drawn after the rules were
   fixed on PubMedQA and an earlier SciFact sample); every extraction on that sample must be
   labelled.
5. **Time to findings.** Search, reading and choosing, per question, on the ML dev questions.
6. **What the findings hold, ML questions.** Per question set (dev, held-out, held-out 2) and
   type: the ``must_contain`` facts in the quoted findings, the facts in the gold abstracts the
   table lists, the gold papers among its papers, and its papers that are gold.

Writes ``benchmarks/results/findings.json``. Never part of the test run.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import tempfile
import time
from pathlib import Path

import numpy as np

import pubmedqa
from assistant import Assistant, evaluation
from assistant.answer import context, findings
from assistant.answer.questions import analyse
from assistant.corpus import sections
from assistant.corpus.display import sentences
from assistant.types import Abstract, Hit
from results import row, save

ROOT = Path(__file__).resolve().parent.parent
SCIFACT = ROOT.parent / "shared" / "data" / "scifact" / "corpus.jsonl"
LABELS = Path(__file__).resolve().parent / "data" / "sample_size" / "scifact_check.jsonl"
_RESULTS = re.compile(r"RESULT|FINDING")


def unlabelled(assistant: Assistant, items: list[dict], with_conclusion: bool) -> dict[str, float]:
    """Result findings in the RESULTS section, and closings read as conclusions (see 1-2)."""
    in_results = closest_in_results = concluded = 0
    for item in items:
        parts = list(item["sections"])
        if with_conclusion:
            parts.append({"label": "CONCLUSIONS", "text": item["long_answer"]})
        results = " ".join(s["text"] for s in parts if _RESULTS.search(s["label"]))
        paper = Abstract(id=item["pmid"], text=" ".join(s["text"] for s in parts), title="", source="x", titled=False)
        read = context.read(analyse(item["question"]), [Hit(paper, 1.0, 1, relevance=1.0)], assistant.embedder).hits[0]
        result = next((f for f in findings.of_paper(read) if f.kind == "result"), None)
        in_results += bool(result and result.text in results)
        closest_in_results += read.parts[int(np.argmax(read.closeness))].text in results
        concluded += any(p.category == "CONCLUSIONS" for p in read.parts)
    n = len(items)
    return {"result_in_results": in_results / n, "closest_in_results": closest_in_results / n,
            "closing_read_as_conclusion": concluded / n}


def labelled_conclusions(assistant: Assistant, items: list[dict]) -> dict[str, float]:
    """The gold paper's conclusion among the findings, and the time to findings (see 3)."""
    shown, seconds = 0, []
    for item in items:
        started = time.perf_counter()
        found = assistant.findings(item["question"])
        seconds.append(time.perf_counter() - started)
        gold = [f for f in found if f.abstract.id == f"pmid:{item['pmid']}" and f.kind == "conclusion"]
        shown += any(pubmedqa.quotes_from(f.text, item["long_answer"]) for f in gold)
    return {"conclusion_shown": shown / len(items), **evaluation.latency_summary(seconds)}


def sample_sizes() -> dict[str, float]:
    """Precision of the sample sizes read on the hand-labelled SciFact sample (see 4)."""
    labels = {r["id"]: r for r in map(json.loads, LABELS.read_text().splitlines())}
    rows = [json.loads(line) for line in SCIFACT.read_text().splitlines()]
    used = {d["_id"] for d in random.Random(7).sample(rows, 1500)}  # the sample the rules were fixed on
    checked = random.Random(8).sample([d for d in rows if d["_id"] not in used], 2000)
    read = {d["_id"]: n for d in checked if (n := sections.sample_size(d["text"])) is not None}
    unlabelled_ = [i for i, n in read.items() if i not in labels or labels[i]["extracted"] != n]
    if unlabelled_:
        raise SystemExit(f"label these extractions first: {unlabelled_}")
    correct = sum(labels[i]["correct"] for i in read)
    return {"abstracts": len(checked), "read": len(read), "correct": correct, "precision": correct / len(read)}


def ml_table(assistant: Assistant, path: Path) -> dict[str, dict[str, float]]:
    """Section 6 for one QA file: per type, the shares described in the module docstring."""
    items = evaluation.load_qa(path)
    gold = evaluation.gold_ids(assistant, items)
    counts: dict[str, dict[str, float]] = {}
    for item in items:
        wanted = gold[item["id"]]
        if not wanted:
            continue
        found = assistant.findings(item["question"])
        papers = {f.abstract.id for f in found}
        quoted = " ".join(f.text for f in found)
        listed = " ".join({f.abstract.id: f.abstract.text for f in found if f.abstract.id in wanted}.values())
        facts = item["must_contain"]
        for group in (item["type"], "all"):
            c = counts.setdefault(group, dict.fromkeys(("facts", "quoted", "listed", "gold", "gold_listed", "papers"), 0.0))
            c["facts"] += len(facts)
            c["quoted"] += sum(evaluation._contains(quoted, fact) for fact in facts)
            c["listed"] += sum(evaluation._contains(listed, fact) for fact in facts)
            c["gold"] += len(wanted)
            c["gold_listed"] += len(papers & wanted)
            c["papers"] += len(papers)
    return {group: {"facts_in_findings": c["quoted"] / c["facts"], "facts_in_gold_listed": c["listed"] / c["facts"],
                    "gold_among_papers": c["gold_listed"] / c["gold"],
                    "papers_that_are_gold": c["gold_listed"] / c["papers"] if c["papers"] else 0.0}
            for group, c in counts.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pubmedqa-index", type=Path, help="PubMed-shaped PubMedQA-L index (built if missing)")
    parser.add_argument("--data-dir", type=Path, help="index of the bundled corpus (built if missing)")
    args = parser.parse_args()
    pqa = pubmedqa.index(args.pubmedqa_index or Path(tempfile.mkdtemp(prefix="findings-pqa-")), "pubmed")
    items = list(pubmedqa.structured().values())
    splits = {"train 0:250 (tuned)": items[:250], "train 250:500 (check)": items[250:]}
    rows = []
    for name, part in splits.items():
        plain, ended = unlabelled(pqa, part, False), unlabelled(pqa, part, True)
        rows += [
            row("", f"PubMedQA {name}, unlabelled, no conclusion: result finding in RESULTS / closest sentence alone "
                "in RESULTS / closing result read as a conclusion",
                f"{plain['result_in_results']:.2f} / {plain['closest_in_results']:.2f} / "
                f"{plain['closing_read_as_conclusion']:.2f}"),
            row("", f"PubMedQA {name}, unlabelled, conclusion appended: result finding in RESULTS / closest sentence "
                "alone in RESULTS / closing read as a conclusion",
                f"{ended['result_in_results']:.2f} / {ended['closest_in_results']:.2f} / "
                f"{ended['closing_read_as_conclusion']:.2f}"),
        ]
    shown = labelled_conclusions(pqa, items)
    rows.append(row("findings_conclusion", "PubMedQA train 0:500, PubMed XML: gold paper's conclusion among the findings",
                    f"{shown['conclusion_shown']:.3f}"))
    sizes = sample_sizes()
    rows.append(row("findings_sample_size", f"sample size read: precision on {sizes['read']} readings of "
                    f"{sizes['abstracts']} SciFact abstracts (hand-labelled)",
                    f"{sizes['precision']:.2f} ({sizes['correct']}/{sizes['read']})"))
    ml = Assistant(data_dir=args.data_dir or tempfile.mkdtemp(prefix="findings-ml-"), auto_ingest=True)
    ml.ensure_corpus()
    questions = [q["question"] for q in evaluation.load_qa(ROOT / "tests" / "data" / "dev.jsonl")]
    timing = evaluation.time_calls(ml.findings, questions)
    rows += [
        row("findings_time", "question to findings (search, reading, choosing), p50 / p95, 40 ML dev questions",
            f"{timing['p50_ms']:.0f} / {timing['p95_ms']:.0f} ms"),
        row("", "the same, PubMedQA train 0:500 (PubMed XML)",
            f"{shown['p50_ms']:.0f} / {shown['p95_ms']:.0f} ms"),
    ]
    for name, file in (("dev", "dev.jsonl"), ("held-out", "heldout.jsonl"), ("held-out 2", "heldout2.jsonl")):
        for group, t in sorted(ml_table(ml, ROOT / "tests" / "data" / file).items()):
            rows.append(row(f"findings_ml_{name.replace(' ', '')}_{group}",
                            f"ML {name} {group}: facts in the quoted findings / in the gold abstracts listed; gold "
                            "papers among the listed / listed papers that are gold",
                            f"{t['facts_in_findings']:.2f} / {t['facts_in_gold_listed']:.2f}; "
                            f"{t['gold_among_papers']:.2f} / {t['papers_that_are_gold']:.2f}"))
    for r in rows:
        print(f"{r['figure']}: {r['value']}")
    save("findings", "Findings chosen by code: results, conclusions, sample sizes, time (no model)", rows,
         note="PubMedQA-L training abstracts with their upstream section labels; train 0:250 was tuned on, 250:500 "
              "never was. Sample sizes: SciFact abstracts drawn after the rules were fixed, labelled by hand.",
         sample_sizes=sizes)


if __name__ == "__main__":
    main()
