"""An abstract's parts: labelled sections (with PubMed's categories), concluding closings, and
the study snapshot (publication type, sample size)."""

from __future__ import annotations

import json
from pathlib import Path

from assistant import corpus
from assistant.corpus import sections
from assistant.types import Abstract

FINDINGS = Path(__file__).parent / "data" / "findings"
FORMATS = Path(__file__).parent / "data" / "formats"


def _abstract(text: str, **extra: str) -> Abstract:
    return Abstract(id="a", text=text, title="T", source="s", extra=dict(extra))


def test_labelled_sections_are_read_with_their_categories() -> None:
    found = sections.parts(_abstract(
        "BACKGROUND: Falls are common. PATIENTS AND METHODS: We followed 80 residents. "
        "PRINCIPAL FINDINGS: Falls fell by 30%. It held at 1 year. INTERPRETATION: Exercise may prevent falls."))
    assert [(p.label, p.category) for p in found] == [
        ("BACKGROUND", "BACKGROUND"), ("PATIENTS AND METHODS", "METHODS"), ("PRINCIPAL FINDINGS", "RESULTS"),
        ("PRINCIPAL FINDINGS", "RESULTS"), ("INTERPRETATION", "CONCLUSIONS")]
    assert found[2].text == "Falls fell by 30%." and found[2].sentence == "PRINCIPAL FINDINGS: Falls fell by 30%."
    assert [p.index for p in found] == [0, 1, 2, 3, 4]


def test_category_of_a_label_reads_its_words() -> None:
    assert sections.category_of("METHODS AND RESULTS") == "RESULTS"
    assert sections.category_of("RESULTS AND CONCLUSIONS") == "CONCLUSIONS"
    assert sections.category_of("MAIN OUTCOME MEASURES") == "METHODS"
    assert sections.category_of("AIMS") == "OBJECTIVE"
    assert sections.category_of("MAIN MESSAGE") is None


def test_a_section_that_ends_without_a_full_stop_is_cut_at_the_next_label() -> None:
    found = sections.parts(_abstract("RESULTS: Risk fell (P<0.05) CONCLUSIONS: The drug may help."))
    assert [(p.text, p.category) for p in found] == [("Risk fell (P<0.05)", "RESULTS"),
                                                     ("The drug may help.", "CONCLUSIONS")]


def test_title_case_labels_count_only_when_they_name_a_section() -> None:
    ris = sections.parts(_abstract("Background: Falls are common. Results: Falls fell by 30%."))
    assert [p.category for p in ris] == ["BACKGROUND", "RESULTS"]
    prose = sections.parts(_abstract("Note: this is prose. We show that it works on 3 tasks."))
    assert [p.label for p in prose] == [None, None]


def test_pubmed_xml_categories_decide_a_label_whose_words_say_nothing() -> None:
    [aspirin] = list(corpus.load([FINDINGS / "pubmed-conclusions.xml"]))
    assert json.loads(aspirin.extra["nlm_categories"])["MAIN MESSAGE"] == "CONCLUSIONS"
    found = sections.parts(aspirin)
    assert [p.category for p in found] == ["OBJECTIVE", "METHODS", "RESULTS", "CONCLUSIONS", "CONCLUSIONS"]
    assert found[3].text == "Low-dose aspirin halves the risk of a second stroke after a minor one."
    without = sections.parts(_abstract(aspirin.text))  # the same text, no categories from the record
    assert "CONCLUSIONS" not in [p.category for p in without]


def test_closing_sentences_conclude_only_when_they_infer_and_state_no_number() -> None:
    concluding = sections.parts(_abstract(
        "Sleep varies. We measured 400 adolescents. Light delayed sleep by 14 minutes. "
        "These findings suggest that evening light matters. Code is available at https://example.org/x."))
    assert [p.category for p in concluding] == [None, None, None, "CONCLUSIONS", None]
    ending_on_a_result = sections.parts(_abstract(
        "Sleep varies. We measured 400 adolescents. Light may delay sleep by 14 minutes."))
    assert all(p.category is None for p in ending_on_a_result)
    assert not sections.concludes("The indications for surgery differed between groups.")


def test_sample_size_is_read_only_from_forms_that_name_the_whole_sample() -> None:
    assert sections.sample_size("A total of 1,099 women were recruited from a health plan.") == 1099
    assert sections.sample_size("Outpatients (N = 247) took part.") == 247
    assert sections.sample_size("In total, 134 women were randomized to metformin or placebo.") == 134
    assert sections.sample_size("Patients with (n = 26) vs without (n = 30) telemonitoring improved.") is None
    assert sections.sample_size("A total of 36 women and 2 men were included.") is None
    assert sections.sample_size("Overall, 44 patients with PID and 44 healthy women were included.") is None
    assert sections.sample_size("A total of 78 men (81.3%) were identified as possible cases.") is None
    assert sections.sample_size("A total of 135 patients with a standard screw (treatment group A) were seen.") is None
    assert sections.sample_size("A total of 1369 patients had a biopsy. A total of 1115 patients were controls.") is None
    assert sections.sample_size("We trained on 1,000,000 images and 12 GPUs.") is None


def test_publication_types_that_describe_the_study_are_kept() -> None:
    [aspirin] = list(corpus.load([FINDINGS / "pubmed-conclusions.xml"]))
    snapshot = sections.study(aspirin)
    assert (snapshot.year, snapshot.journal, snapshot.publication_type, snapshot.sample_size) == (
        2021, "Example Journal of Cardiology", "Randomized Controlled Trial", 240)
    assert snapshot.line() == "2021 · Example Journal of Cardiology · Randomized Controlled Trial · n = 240"
    assert sections.publication_type("Journal Article") == "Journal Article"


def test_every_loader_keeps_the_publication_type() -> None:
    kinds: dict[str, set[str | None]] = {}
    for a in corpus.load([FORMATS]):
        if isinstance(a, Abstract):
            kinds.setdefault(a.source, set()).add(a.extra.get("publication_type"))
    assert "Randomized Controlled Trial" in kinds["pubmed.nbib"]  # MEDLINE PT
    assert "Journal" in kinds["library.ris"]  # RIS TY  - JOUR
    assert "Journal article" in kinds["zotero-csl.json"]  # CSL article-journal
    assert "Article" in kinds["openalex-page.json"]  # OpenAlex type
