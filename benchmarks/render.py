"""Render the benchmarks' JSON results into docs/evaluation.md and the README's results table.

    python benchmarks/render.py

Each benchmark writes ``benchmarks/results/<name>.json`` (`results.save`). This script writes
one section per file, each with the machine, the date and the command that reproduces it,
and fills the README's table (between its ``results`` markers) with the figures named in
``README_FIGURES``. Nothing here is typed by hand: to update a figure, re-run its benchmark,
then this script.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from results import RESULTS, ROOT

ORDER = ["answers", "findings", "pubmedqa_pubmed", "pubmedqa", "pubmedqa_verdicts_on", "gate", "relevance", "claim_check", "retrieval", "side_by_side_index", "side_by_side", "serving", "chat", "libraries", "scale", "scale_1m", "ingest_memory", "ingest_throughput"]
README_FIGURES = [
    ("local_dev_all", "Local 1.5B model, dev questions: citation precision / recall, facts, abstention"),
    ("local_held-out_all", "Local 1.5B model, held-out questions: the same"),
    ("local_held-out_paraphrase", "Local 1.5B model, held-out paraphrased questions: the same"),
    ("local_held-out_multi", "Local 1.5B model, held-out multi-paper questions: the same"),
    ("local_held-out-2_all", "Local 1.5B model, held-out 2 (never tuned on): the same"),
    ("capable_dev_kept", "Capable model (scripted), dev: correct answers kept"),
    ("capable_held-out_kept", "Capable model (scripted), held-out: correct answers kept"),
    ("capable_dev_altered", "Capable model (scripted), dev: altered numbers caught"),
    ("capable_dev_refusals", "Capable model (scripted), dev: refusals cited"),
    ("local_held-out-yesno_all", "Local 1.5B model, held-out yes/no questions: the same"),
    ("local_dev_latency", "Local model answer latency, first token / total p50 (p95)"),
    ("pubmedqa_pubmed_all", "PubMedQA-L (PubMed XML), local model: answered, gold cited, wrong verdicts, gold conclusion shown"),
    ("pubmedqa_all", "PubMedQA-L as shipped (no conclusions), local model: the same"),
    ("pubmedqa_pubmed_latency", "PubMedQA-L, local model: first token / total p50 (p95)"),
    ("findings_sample_size", "Sample sizes shown: precision on hand-labelled abstracts"),
    ("scifact_ndcg10", "SciFact train nDCG@10"),
    ("search_latency_sample", "Search latency p50 / p95, bundled corpus"),
    ("side_by_side_ingest_both", "Ingest, abstracts/s: plain LlamaIndex / this project (ratio)"),
    ("side_by_side_search", "Search k=10 on the bundled corpus, p50 / p95 ms: plain LlamaIndex / this project (ratio)"),
    ("scale_1m_ingest_1000000", "A million abstracts (vectors sampled, not embedded): ingest"),
    ("scale_1m_search_1000000", "A million abstracts: hybrid search p50 / p95, embedded Chroma / Chroma server"),
    ("scale_1m_serving_1000000", "A million abstracts: peak memory while searching"),
    ("scale_1m_first_question_1000000", "A million abstracts, cold start: a question asked as the page appears, to its sources and findings"),
    ("ui_sources", "In the browser: Enter to the retrieved sources on screen, p50 / p95"),
    ("ui_findings", "In the browser: Enter to the papers' findings on screen, p50 / p95"),
]
MARKERS = ("<!-- results:begin -->", "<!-- results:end -->")


def load() -> list[dict]:
    """The result files, in ``ORDER`` (others after, by name)."""
    found = {path.stem: json.loads(path.read_text()) for path in sorted(RESULTS.glob("*.json"))}
    return [found[name] for name in ORDER if name in found] + [r for n, r in found.items() if n not in ORDER]


def where(result: dict) -> str:
    m = result["machine"]
    return f"{result['measured']}, {m['cpu']} ({m['cores']} cores, {m['memory_gib']} GiB)"


def evaluation_md(results: list[dict]) -> str:
    lines = [
        "# Evaluation",
        "",
        "Every figure below comes from a benchmark's own output: each script in `benchmarks/` writes",
        "`benchmarks/results/<name>.json`, and `python benchmarks/render.py` renders this page and the",
        "README's table from those files. Re-run a section's command, then the renderer, to update it.",
        "Figures are today's values only; their history is in git. Timings depend on the machine and on",
        "what else runs on it; the local model's answers depend on the CPU's llama.cpp kernels.",
    ]
    for result in results:
        lines += ["", f"## {result['title']}", "", f"`{result['command']}`: {where(result)}."]
        if result.get("note"):
            lines += ["", result["note"]]
        lines += ["", "| figure | value |", "|---|---|"]
        lines += [f"| {r['figure']} | {r['value']} |" for r in result["rows"]]
    return "\n".join(lines) + "\n"


def readme_table(results: list[dict]) -> str:
    keys = [(r["key"], result["benchmark"]) for result in results for r in result["rows"] if r["key"]]
    if clashes := sorted({f"{key} ({name})" for key, name in keys if [k for k, _ in keys].count(key) > 1}):
        raise SystemExit(f"figure keys used twice, so the README could show the wrong one: {', '.join(clashes)}")
    by_key = {r["key"]: (r, result) for result in results for r in result["rows"] if r["key"]}
    lines = ["| what | measured |", "|---|---|"]
    for key, label in README_FIGURES:
        if key in by_key:
            lines.append(f"| {label} | {by_key[key][0]['value']} |")
    machines = sorted({where(result).split(", ", 1)[1] for result in results})
    lines += ["", f"Measured on {'; '.join(machines)}. Commands and every other figure: "
              "[docs/evaluation.md](docs/evaluation.md)."]
    return "\n".join(lines)


def main() -> None:
    results = load()
    (ROOT / "docs" / "evaluation.md").write_text(evaluation_md(results))
    readme = ROOT / "README.md"
    text = readme.read_text()
    pattern = re.compile(re.escape(MARKERS[0]) + r".*?" + re.escape(MARKERS[1]), re.DOTALL)
    if not pattern.search(text):
        raise SystemExit(f"README.md has no {MARKERS[0]} ... {MARKERS[1]} block")
    readme.write_text(pattern.sub(lambda _: f"{MARKERS[0]}\n{readme_table(results)}\n{MARKERS[1]}", text))
    print(f"wrote docs/evaluation.md ({len(results)} benchmarks) and the README's results table")


if __name__ == "__main__":
    main()
