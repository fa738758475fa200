"""What the claim check costs per answer: verifying a capable model's reply against its sources.

    python benchmarks/claim_check.py [--data-dir DIR] [--repeat 3]

For every scripted reply in ``tests/data/claims.jsonl`` and ``claims-heldout.jsonl`` (correct,
altered, wrong-source, partial and refusal rows), the question is searched and its context
built as the pipeline builds it for the ``openai`` backend (whole abstracts); the reply's
``[@i]`` become the prompt's numbers (as the scripted server does). Then only the claim check
is timed: `citations.attribute` (claims split, embedded with the real MiniLM, scored against
every sentence, re-attributed) and the subject check (`pipeline.names_subject`). Search,
context and the model are not part of it. The median of ``--repeat`` runs per reply, each cold: the
numbers and names that `words` keeps from earlier texts are cleared first. Never part of the test run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from assistant import Assistant, evaluation  # noqa: E402
from assistant.answer import citations, context  # noqa: E402
from assistant.answer.context import render  # noqa: E402
from assistant.answer.questions import analyse  # noqa: E402
from assistant.answer.pipeline import names_subject  # noqa: E402
from assistant.retrieval import subject_terms  # noqa: E402
from assistant.words import names, quantities  # noqa: E402
from results import row, save  # noqa: E402
from scripted_server import resolve  # noqa: E402

DATA = ROOT / "tests" / "data"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, help="index of the bundled corpus (built if missing)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    assistant = Assistant(data_dir=args.data_dir or tempfile.mkdtemp(prefix="claims-bench-"), auto_ingest=True,
                          context_style="abstracts")
    assistant.ensure_corpus()
    plan = assistant.settings.context
    costs, claims = [], []
    for name in ("claims.jsonl", "claims-heldout.jsonl"):
        for item in evaluation.load_qa(DATA / name):
            hits = assistant.search(item["question"], k=plan.top_k)
            sources, _ = context.build(context.read(analyse(item["question"]), hits, assistant.embedder), plan.tokens, plan.style)
            reply, _ = resolve(item["reply"], render(sources), item["sources"])
            subject = subject_terms(item["question"], assistant.bm25)
            runs = []
            for _ in range(args.repeat):
                quantities.cache_clear()  # cold: nothing read by an earlier run is kept
                names.cache_clear()
                started = time.perf_counter()
                checked = citations.attribute(reply, sources, assistant.embedder.embed, analyse(item["question"]))
                names_subject(subject, checked.citations)
                runs.append(time.perf_counter() - started)
            costs.append(statistics.median(runs) * 1000)
            claims.append(len(citations.split_claims(reply)))
    ordered = sorted(costs)
    p50, p95 = ordered[len(ordered) // 2], ordered[int(0.95 * (len(ordered) - 1))]
    rows = [
        row("claim_check_ms", f"claim check per answer, {len(costs)} scripted replies ({sum(claims)} claims): p50 / p95 / max",
            f"{p50:.1f} / {p95:.1f} / {ordered[-1]:.1f} ms"),
        row("", "claim check per claim, mean", f"{sum(costs) / max(1, sum(claims)):.1f} ms"),
    ]
    for r in rows:
        print(f"{r['figure']}: {r['value']}")
    save("claim_check", "Claim check cost per answer (capable model's replies, whole-abstract context)", rows,
         note="Only the check is timed: claims split and embedded with the real MiniLM (onnxruntime), scored against "
              "every sentence of every shown abstract, re-attributed, and the subject check.")


if __name__ == "__main__":
    main()
