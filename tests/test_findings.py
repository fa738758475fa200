"""Findings chosen by code (real embedder): each paper's result and its authors' conclusion,
quoted verbatim, and the answer that opens with them."""

from __future__ import annotations

from pathlib import Path

import pytest

from assistant import corpus
from assistant.answer import citations, context, findings
from assistant.answer.questions import analyse
from assistant.index import embedders
from assistant.settings import Settings
from assistant.types import Abstract, Hit

FINDINGS = Path(__file__).parent / "data" / "findings"
UNSTRUCTURED = (
    "Evening light is thought to delay sleep in adolescents. Whether this holds on school nights is unclear. "
    "We followed 412 adolescents with light sensors for two weeks. "
    "Each additional hour of bright evening light delayed sleep onset by 14 minutes on school nights, but not at "
    "weekends. These findings suggest that evening light should be limited on school nights."
)


@pytest.fixture(scope="module")
def minilm() -> embedders.Embedder:
    return embedders.create(Settings())


def _hit(abstract: Abstract, rank: int = 1, relevance: float = 0.9) -> Hit:
    return Hit(abstract=abstract, score=1.0 / rank, rank=rank, relevance=relevance)


def test_a_structured_abstract_gives_its_labelled_result_and_conclusion(minilm: embedders.Embedder) -> None:
    [aspirin] = list(corpus.load([FINDINGS / "pubmed-conclusions.xml"]))
    reading = context.read(analyse("Does aspirin prevent a second stroke after a minor one?"), [_hit(aspirin)], minilm)
    result, conclusion = findings.choose(reading)
    assert (result.kind, result.section) == ("result", "RESULTS")
    assert result.text.startswith("A second stroke occurred in 9 of 120 patients") and result.text in aspirin.text
    assert (conclusion.kind, conclusion.section) == ("conclusion", "MAIN MESSAGE")
    assert conclusion.text == "Low-dose aspirin halves the risk of a second stroke after a minor one. Bleeding was rare."
    assert result.study.sample_size == 240 and result.study.publication_type == "Randomized Controlled Trial"
    assert result.abstract is aspirin and result.rank == 1


def test_an_unstructured_abstract_gives_a_later_result_not_its_aim(minilm: embedders.Embedder) -> None:
    paper = Abstract(id="light", text=UNSTRUCTURED, title="Evening light and sleep", source="s")
    reading = context.read(analyse("Does evening light delay sleep on school nights in adolescents?"), [_hit(paper)], minilm)
    result, conclusion = findings.choose(reading)
    assert result.text.startswith("Each additional hour of bright evening light delayed sleep onset by 14 minutes")
    assert (result.section, conclusion.section) == (None, None)
    assert conclusion.text == "These findings suggest that evening light should be limited on school nights."


def test_papers_retrieval_found_irrelevant_get_no_row_but_the_best_always_does(minilm: embedders.Embedder) -> None:
    first = Abstract(id="a", text=UNSTRUCTURED, title="A", source="s")
    second = Abstract(id="b", text=UNSTRUCTURED.replace("adolescents", "adults"), title="B", source="s")
    reading = context.read(analyse("evening light"), [_hit(first, 1, 0.2), _hit(second, 2, 0.1)], minilm)
    assert {f.abstract.id for f in findings.choose(reading, min_relevance=0.45)} == {"a"}
    assert {f.abstract.id for f in findings.choose(reading, min_relevance=0.05)} == {"a", "b"}


def test_the_excerpt_holds_each_papers_findings(minilm: embedders.Embedder) -> None:
    [aspirin] = list(corpus.load([FINDINGS / "pubmed-conclusions.xml"]))
    question = "Does aspirin prevent a second stroke?"
    reading = context.read(analyse(question), [_hit(aspirin)], minilm)
    found = findings.choose(reading)
    [source], _ = context.build(reading, 80, first=findings.sentences_of(found, reading))
    assert "9 of 120 patients" in source.excerpt and "halves the risk" in source.excerpt


def test_the_lead_quotes_each_papers_conclusion_or_else_its_result() -> None:
    structured = Abstract(id="s", text="Risk of stroke fell by 30%. The drug may help.", title="Aspirin", source="f")
    plain = Abstract(id="p", text="Stroke was delayed by 14 minutes.", title="P", source="f")
    found = [
        findings.Finding(structured, "Risk of stroke fell by 30%.", "result", "RESULTS"),
        findings.Finding(structured, "The drug may help.", "conclusion", "CONCLUSIONS"),
        findings.Finding(plain, "Stroke was delayed by 14 minutes.", "result"),
    ]
    question = "Does aspirin prevent stroke?"
    assert [f.text for f in findings.lead(found, analyse(question), {"s", "p"})] == ["The drug may help."]  # p: not cited
    assert [f.text for f in findings.lead(found, analyse(question), {"s", "p"}, cited={"p"})] == [
        "The drug may help.", "Stroke was delayed by 14 minutes."]
    assert [f.text for f in findings.lead(found, analyse(question), {"p"})] == ["Stroke was delayed by 14 minutes."]
    # the model found no answer: only a labelled conclusion, the authors' own answer, still leads
    assert [f.text for f in findings.lead(found, analyse(question), {"s", "p"}, declined=True)] == ["The drug may help."]
    assert findings.lead(found, analyse(question), {"p"}, declined=True) == []
    # a paper that does not state what the question names or counts is not quoted
    assert findings.lead(found, analyse("Does aspirin prevent stroke in 64 patients?"), {"s", "p"}) == []
    assert findings.lead(found, analyse("Does Clopidogrel prevent stroke?"), {"s"}) == []


def test_an_answer_to_a_wh_question_quotes_the_results_of_the_papers_it_cites_only() -> None:
    first = Abstract(id="a", text="We propose Foo. Foo is 3x faster than Bar. Foo may help.", title="Foo", source="f")
    second = Abstract(id="b", text="Baz cuts memory by 40%.", title="Baz", source="f")
    found = [
        findings.Finding(first, "Foo is 3x faster than Bar.", "result"),
        findings.Finding(first, "Foo may help.", "conclusion"),
        findings.Finding(second, "Baz cuts memory by 40%.", "result"),
    ]
    question = analyse("How much faster is the proposed method?")
    assert [f.text for f in findings.cited_results(found, question, ["a"])] == ["Foo is 3x faster than Bar."]
    assert [f.abstract.id for f in findings.cited_results(found, question, ["b", "a"])] == ["b", "a"]  # citation order
    assert findings.cited_results(found, question, []) == [], "no citation, no quote"
    assert findings.cited_results(found, question, ["a", "b"], most=1)[0].abstract.id == "a"
    # a paper that does not state what the question names is not quoted
    assert findings.cited_results(found, analyse("How much faster is Foo than Qux?"), ["a"]) == []


def test_an_answer_opens_with_the_quotes_and_drops_what_only_repeats_them() -> None:
    paper = Abstract(id="s", text="Risk fell by 30%. The drug may help.", title="S", source="f")
    other = Abstract(id="o", text="Costs rose by 12%.", title="O", source="f")
    quoted = [findings.Finding(paper, "The drug may help.", "conclusion", "CONCLUSIONS")]
    checked = citations.Attribution(
        text="Costs rose by 12% [1]. The drug may help [2].",
        citations=[citations.Citation(1, other, ("Costs rose by 12%.",), 0.8),
                   citations.Citation(2, paper, ("The drug may help.",), 0.9)],
        unsupported=[], supported_claims=2, set_aside=[], declined=[],
    )
    text, cited = citations.lead_with_quotes(quoted, checked)
    assert text == "The authors of [1] conclude: \u201cThe drug may help.\u201d Costs rose by 12% [2]."
    assert [(c.number, c.abstract.id, c.support) for c in cited] == [(1, "s", 1.0), (2, "o", 0.8)]
    assert cited[0].evidence == ("The drug may help.",)
    # a bracketed number that no verified citation backs (a reference list, a range) is not kept
    unbacked = citations.Attribution(text="Costs rose by 12% [1] [3-4].", citations=checked.citations[:1],
                                     unsupported=[], supported_claims=1, set_aside=[], declined=[])
    assert citations.lead_with_quotes(quoted, unbacked)[0].endswith("Costs rose by 12% [2].")
