"""The relevance gate: answerable questions let through, off-topic ones stopped, in two fields.

    python benchmarks/gate.py [--data-dir DIR] [--pubmedqa-index DIR]

The answer step does not ask the model when the top hit's relevance is below
``Settings.min_relevance`` and it names none of the question's subject terms
(`pipeline.gated`). Off-topic questions that hold in any field come from the other field:
the ML questions (``tests/data/dev.jsonl``, ``heldout.jsonl``) against the 1,000 PubMedQA-L
abstracts, and the 500 PubMedQA-L training questions against the bundled ML corpus. Answerable
questions are the same questions against their own corpus; the ML unanswerable questions
(their corpus holds the paper, not the asked value) are reported apart. Only search runs, no
model. Writes ``benchmarks/results/gate.json``. Never part of the test run.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from assistant import Assistant, evaluation
from assistant.answer.pipeline import gated
from assistant.retrieval import subject_terms
import pubmedqa
from results import row, save

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"


def gated_share(assistant: Assistant, questions: list[str]) -> float:
    """The share of the questions the gate stops."""
    k = assistant.settings.context.top_k
    stopped = [gated(assistant.search(q, k=k), subject_terms(q, assistant.bm25), assistant.settings.min_relevance)
               for q in questions]
    return sum(stopped) / len(stopped)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, help="index of the bundled corpus (built if missing)")
    parser.add_argument("--pubmedqa-index", type=Path, help="index of the PubMedQA-L abstracts (built if missing)")
    args = parser.parse_args()
    ml = Assistant(data_dir=args.data_dir or tempfile.mkdtemp(prefix="gate-bench-"), auto_ingest=True)
    ml.ensure_corpus()
    pqa = pubmedqa.index(args.pubmedqa_index or Path(tempfile.mkdtemp(prefix="gate-pubmedqa-")))
    medical = [q["question"] for q in pubmedqa.load(0, 500)]
    rows = []
    for name in ("dev", "heldout"):
        items = evaluation.load_qa(DATA / f"{name}.jsonl")
        answerable = [i["question"] for i in items if i["type"] != "unanswerable"]
        unanswerable = [i["question"] for i in items if i["type"] == "unanswerable"]
        label = "held-out" if name == "heldout" else name
        rows += [
            row(f"gate_{name}_answerable", f"ML {label} answerable ({len(answerable)}), own corpus: stopped",
                f"{gated_share(ml, answerable):.2f}"),
            row("", f"ML {label} unanswerable ({len(unanswerable)}), own corpus: stopped",
                f"{gated_share(ml, unanswerable):.2f}"),
            row(f"gate_{name}_offtopic", f"ML {label}, all ({len(items)}), against PubMedQA-L: stopped",
                f"{gated_share(pqa, [i['question'] for i in items]):.2f}"),
        ]
    rows += [
        row("gate_pubmedqa_answerable", f"PubMedQA-L train ({len(medical)}), own corpus: stopped",
            f"{gated_share(pqa, medical):.2f}"),
        row("gate_pubmedqa_offtopic", f"PubMedQA-L train ({len(medical)}), against the ML corpus: stopped",
            f"{gated_share(ml, medical):.2f}"),
    ]
    for r in rows:
        print(f"{r['figure']}: {r['value']}")
    save("gate", "The relevance gate: answerable questions let through, off-topic questions stopped", rows,
         note=f"min_relevance {ml.settings.min_relevance}. Off-topic questions are each field's questions against the "
              "other field's abstracts. A stopped answerable question is an answer lost; a let-through off-topic "
              "question reaches the model, which may still decline.")


if __name__ == "__main__":
    main()
