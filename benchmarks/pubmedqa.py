"""PubMedQA-L: yes/no/maybe research questions written by others, in another field (biomedicine).

Used by ``benchmarks/answers.py --pubmedqa START:END [--shape shipped|pubmed]``. Each training
question is answered by its own abstract (``benchmarks/data/pubmedqa/``, MIT, see its SOURCE.md),
indexed in one of two shapes:

- ``shipped``: the 1,000 expert-labelled abstracts as the dataset ships them: plain text,
  section labels and the authors' conclusions removed;
- ``pubmed``: as a researcher's PubMed export holds them. The 500 training abstracts are
  written as one PubMed XML file (`write_pubmed_xml`: labelled sections, the authors'
  conclusion as a CONCLUSIONS section, year, MeSH terms) and ingested through the product's
  own loader; the other 500 abstracts, whose sections the dataset does not give, are indexed
  as shipped beside them.

Per label (yes, no, maybe):

- answered: not abstained; gold cited: the question's own abstract is cited;
- the answering sentence, the abstract's sentence closest (by embedding) to its own
  conclusion (``long_answer``): in the prompt, and among the cited evidence;
- verdicts: ``Answer.verdict`` against the label (the confusion matrix), and the wrong
  verdicts shown: a "yes" on a no-question, a "no" on a yes-question, any verdict on a maybe;
  also the model's own leading word ("Yes,", "No,"), read from its raw text, whether kept
  or not: that is how the verdict setting is decided (`Settings.verdicts`);
- the findings (`Answer.findings`): the gold paper's conclusion shown among them (``pubmed``
  shape), any finding shown as a conclusion for a paper that has none (``shipped``), whether
  the gold paper's result finding lies in its RESULTS section (the labels are known here, though
  the ``shipped`` text has none), and what the answer quotes;
- why it abstained, and latency: findings on hand, first token, total.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape, quoteattr

import numpy as np

from assistant import Assistant, evaluation
from assistant.corpus.display import sentences

DATA = Path(__file__).resolve().parent / "data" / "pubmedqa"
LABELS = ("yes", "no", "maybe")
_LEADING = re.compile(r"\s*(yes|no|mixed|maybe)\b", re.IGNORECASE)


def load(start: int, end: int) -> list[dict[str, Any]]:
    """Training questions ``start``..``end`` (in the file's order)."""
    return evaluation.load_qa(DATA / "train.jsonl")[start:end]


def structured() -> dict[str, dict[str, Any]]:
    """The 500 training items with their labelled sections, by PMID."""
    rows = [json.loads(line) for line in (DATA / "structured_train.jsonl").read_text().splitlines() if line.strip()]
    return {row["pmid"]: row for row in rows}


def write_pubmed_xml(items: list[dict[str, Any]], path: Path) -> Path:
    """Write the items as a PubMed XML export would hold them: one ``PubmedArticle`` each,
    its sections as labelled ``AbstractText`` elements, the authors' conclusion last, labelled
    CONCLUSIONS, the year and the MeSH headings (the dataset gives no title or journal)."""
    articles = []
    for item in items:
        sections = [*item["sections"], {"label": "CONCLUSIONS", "text": item["long_answer"]}]
        texts = "".join(f"<AbstractText Label={quoteattr(s['label'])}>{escape(s['text'])}</AbstractText>"
                        for s in sections)
        mesh = "".join(f"<MeshHeading><DescriptorName>{escape(m)}</DescriptorName></MeshHeading>"
                       for m in item.get("mesh", []))
        articles.append(
            f"<PubmedArticle><MedlineCitation><PMID>{escape(item['pmid'])}</PMID><Article><Journal><JournalIssue>"
            f"<PubDate><Year>{escape(str(item.get('year') or ''))}</Year></PubDate></JournalIssue></Journal>"
            f"<ArticleTitle></ArticleTitle><Abstract>{texts}</Abstract></Article>"
            f"<MeshHeadingList>{mesh}</MeshHeadingList></MedlineCitation></PubmedArticle>"
        )
    path.write_text('<?xml version="1.0" encoding="UTF-8"?>\n<PubmedArticleSet>\n' + "\n".join(articles)
                    + "\n</PubmedArticleSet>\n", encoding="utf-8")
    return path


def index(data_dir: Path, shape: str = "shipped", **settings: Any) -> Assistant:
    """An assistant over the 1,000 PQA-L abstracts in this ``shape`` (built once in ``data_dir``)."""
    assistant = Assistant(data_dir=data_dir, auto_ingest=False, **settings)
    if assistant.stats()["abstracts"] < 1000:
        started = time.perf_counter()
        files = [DATA / "corpus.jsonl"]
        if shape == "pubmed":
            xml = write_pubmed_xml(list(structured().values()), Path(data_dir) / "pubmedqa_train.xml")
            others = [line for line in (DATA / "corpus.jsonl").read_text().splitlines()
                      if line.strip() and json.loads(line)["_id"] not in structured()]
            rest = Path(data_dir) / "pubmedqa_others.jsonl"
            rest.write_text("\n".join(others) + "\n")
            files = [xml, rest]
        report = assistant.ingest(files)
        print(f"indexed {report.added} PubMedQA abstracts ({shape}) in {time.perf_counter() - started:.0f} s",
              flush=True)
    return assistant


def gold_id(assistant: Assistant, pmid: str) -> str:
    """The id the gold abstract has in this index: the PubMed loader's "pmid:…", else the PMID."""
    return f"pmid:{pmid}" if assistant.store.get_abstracts([f"pmid:{pmid}"]) else pmid


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
    sections = structured()
    rows = []
    for number, item in enumerate(items, start=1):
        gold = abstracts[gold_id(assistant, item["id"])]
        key = answering_sentence(assistant, gold.text, item["long_answer"])
        answer = assistant.ask(item["question"])
        shown = [e for h, e in zip(answer.sources, answer.excerpts) if h.abstract.id == gold.id]
        cited = [c for c in answer.citations if c.abstract.id == gold.id]
        own = [f for f in answer.findings if f.abstract.id == gold.id]
        results = " ".join(s["text"] for s in sections.get(item["id"], {}).get("sections", [])
                           if re.search(r"RESULT|FINDING", s["label"]))
        rows.append({
            "id": item["id"], "label": item["final_decision"], "question": item["question"],
            "answered": not answer.abstained, "reason": answer.abstain_reason,
            "gold_retrieved_rank": next((h.rank for h in answer.sources if h.abstract.id == gold.id), None),
            "gold_cited": bool(cited), "key_in_prompt": any(key in e for e in shown),
            "key_cited": any(key in c.evidence for c in cited),
            "verdict": answer.verdict, "model_leading_word": leading_word(answer.raw_text),
            "evidence_offered": bool(answer.evidence),
            "conclusion_shown": any(f.kind == "conclusion" and quotes_from(f.text, item["long_answer"]) for f in own),
            "conclusion_claimed": any(f.kind == "conclusion" and not quotes_from(f.text, item["long_answer"])
                                      for f in own),
            "result_in_results": any(f.kind == "result" and f.text in results for f in own) if results else None,
            "quoted": [{"gold": f.abstract.id == gold.id, "kind": f.kind, "text": f.text,
                        "in_results": quotes_from(f.text, results) if results and f.kind == "result" else None}
                       for f in answer.quoted],
            "findings_seconds": answer.timings.get("findings"), "first_token": answer.timings.get("first_token"),
            "total": answer.timings["total"], "answer": answer.text,
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
        "conclusion_shown": rate("conclusion_shown"), "conclusion_claimed_wrongly": rate("conclusion_claimed"),
        "result_in_results": _share([r["result_in_results"] for r in group if r["result_in_results"] is not None]),
        "quotes_gold": _share([q["gold"] for r in group for q in r["quoted"][:1]]),
        "findings_seconds": evaluation.latency_summary([r["findings_seconds"] for r in group
                                                        if r["findings_seconds"] is not None]),
        "first_token": evaluation.latency_summary([r["first_token"] for r in group if r["first_token"] is not None]),
        "verdict_accuracy": verdict_accuracy(group, "verdict"),
        "model_word_accuracy": verdict_accuracy(group, "model_leading_word"),
        "reasons": dict(Counter(r["reason"] for r in group if r["reason"])),
        "total": evaluation.latency_summary([r["total"] for r in group]),
    }


def quotes_from(quote: str, text: str) -> bool:
    """Whether every piece of a quote (pieces joined by " … ") is in ``text``."""
    return all(piece.strip() in text for piece in quote.split(" … "))


def _share(values: list[bool]) -> float | None:
    return sum(values) / len(values) if values else None


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
