"""Findings: each relevant paper's own words on the question, chosen by code before the model writes.

For every hit the model is shown, in rank order (`choose`):

- **its result**: the sentence of its results that is closest to the question (`context`'s
  closeness). A structured abstract's results are the sentences of its RESULTS sections. In
  an unstructured abstract, structure stands in for the labels: an abstract states its
  background and aim first, then its method, then what it found, with numbers, then what it
  concludes. So its results are taken from the sentences after the first ``RESULTS_FROM``
  of the abstract that do not conclude, those stating a number first. (The sentence closest
  to the question is most often the aim, which restates it: on PubMedQA training abstracts
  without labels, closeness alone picked a sentence of the RESULTS section for 0.14 of them
  (0.11 on the check split), this rule for 0.77 (0.75); benchmarks/findings.py);
- **its authors' conclusion**: the sentences of the section labelled as one, or the closing
  sentences that conclude (`sections.parts`); of a long one, its opening sentence and those
  closest to the question, ``CONCLUSION_SENTENCES`` in all, in their order;
- **its study snapshot** (`sections.study`): year, journal, publication type, sample size.

Every finding is quoted verbatim (a section label taken off), so it needs no verification: the
reader sees the deciding sentence of each paper, in its authors' words, while the model is
still loading or reading.
"""

from __future__ import annotations

import numpy as np

from assistant.answer.context import Read, Reading
from assistant.answer.questions import Question
from assistant.corpus.sections import Part, states_number, study
from assistant.types import Abstract, Finding
from assistant.words import mentions, unstated_numbers

__all__ = ["Finding", "choose", "cited_results", "lead", "of_paper", "result_parts", "sentences_of"]

RESULTS_FROM = 0.4
CONCLUSION_SENTENCES = 2
QUOTED_PAPERS = 3
_NOT_RESULTS = {"BACKGROUND", "OBJECTIVE", "METHODS", "CONCLUSIONS"}


def result_parts(read: Read) -> list[int]:
    """The positions (in ``read.parts``) of the sentences that can state a result (see the
    module docstring), best kind first: labelled results; else, unlabelled, those in the later
    part of the abstract stating a number, then any there, then any that does not conclude."""
    labelled = [i for i, p in enumerate(read.parts) if p.category == "RESULTS"]
    if labelled:
        return labelled
    open_ = [i for i, p in enumerate(read.parts) if p.category not in _NOT_RESULTS and p.text]
    later = [i for i in open_ if read.parts[i].index >= RESULTS_FROM * len(read.parts)]
    return [i for i in later if states_number(read.parts[i].text)] or later or open_


def _result(read: Read) -> Part | None:
    candidates = result_parts(read)
    if not candidates:
        return None
    return read.parts[candidates[int(np.argmax(read.closeness[candidates]))]]


def _conclusion(read: Read) -> list[Part]:
    """The conclusion's opening sentence (where authors state it), then its sentences closest
    to the question, ``CONCLUSION_SENTENCES`` in all, in their order."""
    rows = [i for i, p in enumerate(read.parts) if p.category == "CONCLUSIONS" and p.text]
    if len(rows) > CONCLUSION_SENTENCES:
        rest = sorted(rows[1:], key=lambda i: -read.closeness[i])[: CONCLUSION_SENTENCES - 1]
        rows = sorted([rows[0], *rest])
    return [read.parts[i] for i in rows]


def _quote(chosen: list[Part]) -> str:
    """The sentences as one quote; a gap between two of them is marked with an ellipsis."""
    text = chosen[0].text
    for before, part in zip(chosen, chosen[1:]):
        text += (" " if part.index == before.index + 1 else " … ") + part.text
    return text


def of_paper(read: Read) -> list[Finding]:
    """One paper's findings: its result, then its authors' conclusion (each when it has one)."""
    snapshot = study(read.hit.abstract)
    found = []
    result = _result(read)
    if result is not None:
        found.append(Finding(read.hit.abstract, result.text, "result", result.label, snapshot, read.hit.rank))
    conclusion = _conclusion(read)
    if conclusion:
        found.append(Finding(read.hit.abstract, _quote(conclusion), "conclusion", conclusion[0].label, snapshot,
                             read.hit.rank))
    return found


def choose(reading: Reading, min_relevance: float = 0.0) -> list[Finding]:
    """The findings of every paper read that retrieval found relevant (the best one always:
    it passed the relevance gate), in rank order (see the module docstring)."""
    return [
        finding
        for number, read in enumerate(reading.hits)
        if number == 0 or read.hit.relevance >= min_relevance
        for finding in of_paper(read)
    ]


def states_asked(question: Question, abstract: Abstract) -> bool:
    """Whether a paper states every name and number the question asks about (the claim
    check's hard constraints, put to the question): "Does Finedeep use more than 64 experts?"
    is not answered by a Finedeep abstract that never says 64."""
    text = f"{abstract.title}. {abstract.text}"
    return all(mentions(name, text) for name in question.names) and not unstated_numbers(question.text, text)


def lead(
    found: list[Finding],
    question: Question,
    papers: set[str],
    cited: set[str] = frozenset(),
    declined: bool = False,
    most: int = QUOTED_PAPERS,
) -> list[Finding]:
    """What an answer to a yes/no ``question`` opens with, in the authors' words: the
    conclusion (or, where it states none, the result) of the best of these papers (abstract
    ids) that has findings, then of those of them the verified answer also cites (``cited``),
    ``most`` papers at most, in rank order. A paper the answer does not draw on is not quoted
    (near the best by score is not enough to be about the question), nor one that does not
    state what the question names (`states_asked`). When the model ``declined`` (it found no
    answer in what it read), only a labelled conclusion is quoted: the authors' own answer to
    their study's question, where an unlabelled sentence is only chosen by its place."""
    chosen: list[Finding] = []
    for paper in dict.fromkeys(f.abstract.id for f in found if f.abstract.id in papers):
        own = [f for f in found if f.abstract.id == paper]
        if chosen and paper not in cited or not states_asked(question, own[0].abstract):
            continue
        quote = next((f for f in own if f.kind == "conclusion"), own[0])
        if declined and not (quote.kind == "conclusion" and quote.section):
            continue
        chosen.append(quote)
        if len(chosen) == most:
            break
    return chosen


def cited_results(found: list[Finding], question: Question, cited: list[str], most: int = QUOTED_PAPERS) -> list[Finding]:
    """What an answer to a question that is not yes/no opens with: the result of each paper
    the verified answer cites (abstract ids, in citation order), quoted, ``most`` at most, of
    those that state what the question names (`states_asked`). The result sentence carries the
    paper's numbers and comparison in its authors' words, which a small model's summary often
    drops; only papers the answer already cites are quoted, so no citation is added."""
    results = {f.abstract.id: f for f in found if f.kind == "result"}
    chosen = [results[paper] for paper in cited if paper in results and states_asked(question, results[paper].abstract)]
    return chosen[:most]


def sentences_of(findings: list[Finding], reading: Reading) -> dict[str, list[str]]:
    """Per abstract id, the sentences (as its text has them, labels included) its findings
    quote: what its excerpt opens with."""
    found: dict[str, list[str]] = {}
    for read in reading.hits:
        quoted = " ".join(f.text for f in findings if f.abstract.id == read.hit.abstract.id)
        found[read.hit.abstract.id] = [p.sentence for p in read.parts if p.text and p.text in quoted]
    return found
