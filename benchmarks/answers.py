"""Answer quality for both kinds of model, side by side, on the dev questions and on held-out ones.

    python benchmarks/answers.py [--data-dir DIR] [--skip-local] [--limit N]
    python benchmarks/answers.py --pubmedqa START:END [--pubmedqa-index DIR] [--shape shipped|pubmed]
                                 [--verdicts on|off|auto]

1. **Local model** (the bundled 1.5B, default settings): citation precision and recall,
   ``must_contain`` facts, abstention accuracy and latency, per question type, on
   ``tests/data/dev.jsonl`` (tuned on), ``tests/data/heldout.jsonl`` (checked against while
   tuning), ``tests/data/heldout2.jsonl`` (written for issue 56 from abstracts no other set
   uses, and never tuned on) and ``tests/data/heldout_yesno.jsonl`` (yes/no questions,
   answerable and not; never tuned on).
2. **Capable model** through the ``openai`` backend: a scripted OpenAI-compatible server
   (``tests/scripted_server.py``) replies with labelled answers written in a capable model's
   style (``tests/data/claims.jsonl`` for the dev questions, ``claims-heldout.jsonl``,
   ``claims-heldout2.jsonl``: terse answers that leave their subject to the question): kept,
   altered numbers caught, wrong source numbers re-attributed, refusals cited.
3. **Separation of the support score** (`assistant.answer.citations.support`) on the same
   labelled claims: ROC AUC of correct claims against their gold abstract versus the same
   claims against the other retrieved abstracts (wrong source) and versus altered claims.
4. **PubMedQA-L** (``--pubmedqa``, `pubmedqa`): the local model on expert-labelled yes/no/maybe
   questions from biomedicine, per label: answered, gold cited, the gold paper's conclusion among
   the findings, the answering sentence in the prompt and cited, the verdicts' confusion matrix,
   wrong verdicts shown, time to findings, first token and total. ``--shape`` picks the abstracts
   as the dataset ships them (no labels, no conclusions) or as a PubMed XML export holds them.
   Tune only on the training questions 0:250; 250:500 are the check.

Writes ``benchmarks/results/answers.json`` (1-3) or ``benchmarks/results/pubmedqa.json`` (4;
``pubmedqa_pubmed.json`` for ``--shape pubmed``; ``pubmedqa_verdicts_on.json`` with ``--verdicts on``: the local model's own verdicts, kept, for
their confusion matrix).
Never part of the test run.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

from assistant import Assistant, evaluation
from assistant.answer import citations, context
from assistant.answer.citations import split_claims
from assistant.answer.questions import analyse
import pubmedqa
from results import row, save

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
sys.path.insert(0, str(ROOT / "tests"))
from scripted_server import MODEL, ScriptedServer  # noqa: E402

SETS = {"dev": ("dev.jsonl", "claims.jsonl"), "held-out": ("heldout.jsonl", "claims-heldout.jsonl"),
        "held-out-2": ("heldout2.jsonl", "claims-heldout2.jsonl"), "held-out-yesno": ("heldout_yesno.jsonl", None)}


def _share(value: float | None) -> str:
    """A share to two places, or a dash where a set has no row of its kind."""
    return "–" if value is None else f"{value:.2f}"


def local_model(assistant: Assistant, limit: int | None) -> tuple[list[dict[str, str]], dict]:
    """Rows of the local model's figures per set and type, and the raw results."""
    rows, raw = [], {}
    for name, (questions, _) in SETS.items():
        result = evaluation.evaluate_answers(assistant, DATA / questions, limit, progress=True)
        raw[name] = result
        for kind, r in result["by_type"].items():
            f = _share
            rows.append(row(
                f"local_{name}_{kind}",
                f"local model, {name} {kind} ({r['questions']}): citation P / R, facts, abstention",
                f"{f(r['citation_precision'])} / {f(r['citation_recall'])}, {f(r['must_contain'])}, "
                f"{f(r['abstention_accuracy'])}",
            ))
        every = result["by_type"]["all"]
        rows.append(row(f"local_{name}_latency", f"local model, {name}: first token / total p50 (p95)",
                        f"{every['first_token']['p50_ms'] / 1000:.1f} / {every['total']['p50_ms'] / 1000:.1f} s "
                        f"({every['first_token']['p95_ms'] / 1000:.1f} / {every['total']['p95_ms'] / 1000:.1f} s)"))
    return rows, raw


def capable_model(assistant: Assistant, limit: int | None) -> tuple[list[dict[str, str]], dict]:
    """Rows of the scripted capable model's grounding figures per set, and the raw results."""
    rows, raw = [], {}
    with ScriptedServer() as server:
        capable = Assistant(assistant.settings, llm_backend="openai", llm_model=MODEL, openai_base_url=server.base_url)
        for name, (_, claims) in SETS.items():
            if claims is None:
                continue
            result = evaluation.evaluate_scripted(
                capable, DATA / claims, lambda r: server.script(r["question"], r["reply"], r["sources"]), limit, True
            )
            raw[name] = result
            n = result["rows"]
            rows += [
                row(f"capable_{name}_kept", f"capable model, {name}: correct answers kept ({n['correct']})", _share(result['kept'])),
                row(f"capable_{name}_altered", f"capable model, {name}: altered numbers caught ({n['altered']})",
                    _share(result['altered_caught'])),
                row(f"capable_{name}_reattributed", f"capable model, {name}: wrong source numbers re-attributed "
                    f"({n['wrong_source']})", _share(result['reattributed'])),
                row(f"capable_{name}_refusals", f"capable model, {name}: refusals cited ({n['refusal']} refusals, "
                    f"{n['partial']} partial answers)", str(result["refusals_cited"])),
                row("", f"capable model, {name}: partial answers kept without their refusal", _share(result['partial_kept'])),
            ]
    return rows, raw


def separation(assistant: Assistant) -> list[dict[str, str]]:
    """ROC AUC of the support score: correct claims vs wrong-source pairs and altered claims."""
    by_prefix = list(assistant.store.read_abstracts())
    rows = []
    for name, (_, claims) in SETS.items():
        if claims is None:
            continue
        correct, wrong, altered = [], [], []
        for line in (DATA / claims).read_text().splitlines():
            item = json.loads(line)
            if item["kind"] not in ("correct", "altered"):
                continue
            golds = [next(a for a in by_prefix if a.text.startswith(p)) for p in item["sources"]]
            hits = assistant.search(item["question"], k=5)
            gold_hits = [h for h in hits if h.abstract.id in {g.id for g in golds}]
            missing = [g for g in golds if g.id not in {h.abstract.id for h in gold_hits}]
            pool = hits + [type(hits[0])(abstract=g, score=0.0, rank=0) for g in missing]
            sources, _ = context.build(context.read(analyse(item["question"]), pool, assistant.embedder), 100_000, "abstracts")
            number = {s.hit.abstract.id: s for s in sources}
            for claim in split_claims(re.sub(r"\[@(\d+)\]", r"[\1]", item["reply"])):
                if not claim.cited:
                    continue
                text = claim.text.strip()
                gold = golds[claim.cited[0]]
                vector = assistant.embedder.embed([text])[0]
                score = citations.support(text, vector, number[gold.id]).score
                if item["kind"] == "altered":
                    if item["altered"]["to"] in text:
                        altered.append(score)
                    continue
                correct.append(score)
                wrong += [citations.support(text, vector, s).score for s in sources if s.hit.abstract.id not in
                          {g.id for g in golds}]
        auc_wrong = evaluation._auc(correct, wrong)
        auc_altered = evaluation._auc(correct, altered)
        above = sum(s >= citations.SUPPORT_THRESHOLD for s in wrong) / len(wrong)
        kept = sum(s >= citations.SUPPORT_THRESHOLD for s in correct) / len(correct)
        rows += [
            row(f"support_auc_{name}", f"support score, {name} claims: ROC AUC correct ({len(correct)}) vs wrong source "
                f"({len(wrong)}) / vs altered ({len(altered)})", f"{auc_wrong:.3f} / {auc_altered:.3f}"),
            row("", f"support score, {name} claims: share at or above the threshold {citations.SUPPORT_THRESHOLD}, "
                "correct / wrong source", f"{kept:.2f} / {above:.2f}"),
        ]
    return rows


def pubmedqa_section(args: argparse.Namespace) -> None:
    """Run the local model on PubMedQA-L training questions and write results/pubmedqa.json
    (``pubmedqa_pubmed.json`` for the PubMed-shaped index)."""
    start, end = (int(x) for x in args.pubmedqa.split(":"))
    data_dir = args.pubmedqa_index or Path(tempfile.mkdtemp(prefix="pubmedqa-bench-"))
    assistant = pubmedqa.index(data_dir, args.shape, verdicts=args.verdicts)
    result = pubmedqa.evaluate(assistant, pubmedqa.load(start, end))
    shape = "PubMed XML (conclusions kept)" if args.shape == "pubmed" else "as shipped (no labels, no conclusions)"
    key = "pubmedqa" if args.shape == "shipped" else "pubmedqa_pubmed"
    key = key if args.verdicts == "auto" else f"{key}_verdicts_{args.verdicts}"  # also the file's name: keys stay unique
    rows = []
    for label, r in result["by_label"].items():
        rows.append(row(
            f"{key}_{label}", f"PubMedQA-L train {start}:{end}, {label} ({r['questions']}): answered, gold cited, "
            "wrong verdicts shown, gold paper's conclusion among the findings",
            f"{r['answered']:.2f}, {r['gold_cited']:.2f}, {r['wrong_verdicts_shown']:.2f}, {r['conclusion_shown']:.2f}"))
    every = result["by_label"]["all"]
    labels = [q["label"] for q in result["questions"]]
    majority = max(labels.count(label) for label in set(labels)) / len(labels)

    def seconds(figures: dict[str, float]) -> str:
        return f"{figures['p50_ms'] / 1000:.1f} s ({figures['p95_ms'] / 1000:.1f} s)"

    rows += [
        row("", "PubMedQA-L: the answer's first quote is the gold paper's; the gold paper's result finding lies in "
            "its RESULTS section; a finding called a conclusion that is not the authors'",
            f"{every['quotes_gold'] or 0:.2f}; {every['result_in_results'] or 0:.2f}; "
            f"{every['conclusion_claimed_wrongly']:.2f}"),
        row("", "PubMedQA-L: answering sentence in the prompt / cited",
            f"{every['key_in_prompt']:.2f} / {every['key_cited']:.2f}"),
        row(f"{key}_verdicts", f"PubMedQA-L train {start}:{end}: verdict accuracy shown (verdicts "
            f"{'kept' if result['verdicts'] else 'off'}) / the model's own leading yes-no word / majority class",
            f"{every['verdict_accuracy']:.2f} / {every['model_word_accuracy']:.2f} / {majority:.2f}"),
        row("", "PubMedQA-L: verdicts shown, label → verdict", _table(result["confusion"])),
        row("", "PubMedQA-L: the model's own leading word, label → word", _table(result["model_confusion"])),
        row("", "PubMedQA-L: abstentions by reason; with evidence offered",
            f"{every['reasons']}; {every['evidence_offered_on_abstention']:.2f}"),
        row(f"{key}_findings_time", "PubMedQA-L: findings on hand (question to `Retrieved`) p50 (p95)",
            seconds(every["findings_seconds"])),
        row(f"{key}_latency", "PubMedQA-L: first token / answer total p50 (p95)",
            f"{seconds(every['first_token'])} / {seconds(every['total'])}"),
    ]
    for r in rows:
        print(f"{r['figure']}: {r['value']}")
    title = f"Answers to questions written by others: PubMedQA-L (biomedicine) {shape}, local model"
    save(key, title + ("" if args.verdicts == "auto" else f", verdicts {args.verdicts}"), rows,
         note=f"local model {assistant.settings.llm_model}, verdicts setting {args.verdicts}. Questions 0:250 of the "
              "training split were tuned on; 250:500 never were. The answering sentence is the gold abstract's "
              "sentence closest to its own conclusion (long_answer).",
         by_label=result["by_label"], confusion=result["confusion"], model_confusion=result["model_confusion"],
         questions=result["questions"])


def _table(confusion: dict[str, dict[str, int]]) -> str:
    return "; ".join(f"{label}: " + ", ".join(f"{k} {v}" for k, v in sorted(cells.items()))
                     for label, cells in sorted(confusion.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pubmedqa", metavar="START:END", help="only PubMedQA-L training questions START..END")
    parser.add_argument("--pubmedqa-index", type=Path, help="index of the PubMedQA-L abstracts (built if missing)")
    parser.add_argument("--shape", default="shipped", choices=["shipped", "pubmed"],
                        help="PubMedQA-L abstracts as shipped (no labels, no conclusions) or as a PubMed XML export")
    parser.add_argument("--verdicts", default="auto", choices=["auto", "on", "off"], help="Settings.verdicts")
    parser.add_argument("--data-dir", type=Path, help="index of the bundled corpus (built if missing)")
    parser.add_argument("--skip-local", action="store_true", help="only the scripted capable model and the AUCs")
    parser.add_argument("--limit", type=int, help="only the first N questions / scripted rows of each file")
    args = parser.parse_args()
    if args.pubmedqa:
        pubmedqa_section(args)
        return
    assistant = Assistant(data_dir=args.data_dir or tempfile.mkdtemp(prefix="answers-bench-"), auto_ingest=True)
    assistant.ensure_corpus()
    rows: list[dict[str, str]] = []
    details: dict = {}
    if not args.skip_local:
        local_rows, details["local"] = local_model(assistant, args.limit)
        rows += local_rows
    capable_rows, details["capable"] = capable_model(assistant, args.limit)
    rows += capable_rows + separation(assistant)
    for r in rows:
        print(f"{r['figure']}: {r['value']}")
    for name, result in details.get("capable", {}).items():
        for failure in result["failures"]:
            print(f"  capable {name} {failure['id']}: {failure['problem']}")
    for name, result in details.get("local", {}).items():
        for failure in result["failures"]:
            print(f"  local {name} {failure['id']} ({failure['type']}): {'; '.join(failure['problems'])}")
    failures = {name: [{k: q[k] for k in ("id", "type", "abstained", "reason", "answer")} for q in result["questions"]]
                for name, result in details.get("local", {}).items()}
    save("answers", "Answers: the local model and a capable model (scripted), dev and held-out questions", rows,
         note=f"local model {assistant.settings.llm_model}; capable model: scripted replies through the real openai "
              "client. Dev questions were tuned on; held-out questions never were.",
         capable_failures={n: r["failures"] for n, r in details.get("capable", {}).items()}, local_answers=failures,
         local_failures={n: r["failures"] for n, r in details.get("local", {}).items()})


if __name__ == "__main__":
    main()
