"""The form of a question (yes/no or not) and verdicts that only state its proposition."""

from __future__ import annotations

import pytest

from assistant.answer.questions import analyse, is_yes_no, states_proposition


@pytest.mark.parametrize("question", [
    "Is primary angioplasty an acceptable alternative to thrombolysis?",
    "Does the size of the text chunks matter?",
    "Can tailored interventions increase mammography use among HMO women?",
    "Double balloon enteroscopy: is it efficacious and safe in a community setting?",  # a title, then the question
    "A short stay or 23-hour ward in a general and academic children's hospital: are they effective?",
    "Aripiprazole: a new risk factor for pathological gambling?",  # a title put as a question
    "Haven't sparse models been tried on time series?",
])
def test_questions_asking_whether_something_is_so_are_yes_no(question: str) -> None:
    assert is_yes_no(question)


@pytest.mark.parametrize("question", [
    "What MMLU score does the model reach?",
    "After upcycling the dense checkpoint, what MMLU did it reach?",  # the wh-word opens the second clause
    "How many parameters does the largest Time-MoE model have?",
    "In which benchmark does the method set a new state of the art?",
    "Which normalization keeps Pangu Ultra's training stable?",
    "List the datasets used for evaluation.",
])
def test_other_questions_are_not(question: str) -> None:
    assert not is_yes_no(question)


QUESTION = "Do mutations causing low HDL-C promote increased carotid intima-media thickness?"


@pytest.mark.parametrize("text", [
    "Mutations causing low HDL-C do not promote increased carotid intima-media thickness.",
    "Yes, mutations that cause low HDL-C promote increased carotid intima-media thickness.",
    "The study found that mutations causing low HDL-C promote carotid intima-media thickness.",
])
def test_a_sentence_with_only_the_questions_words_states_its_proposition(text: str) -> None:
    assert states_proposition(text, analyse(QUESTION))


@pytest.mark.parametrize("text", [
    # a finding: its own numbers
    "Carriers of the mutations had a carotid intima-media thickness of 0.66 mm against 0.65 mm in controls.",
    # a finding: its own name
    "In the CAPS cohort, mutations causing low HDL-C did not promote increased carotid intima-media thickness.",
    # a different statement, few of the question's words
    "Carriers had lower HDL cholesterol levels than their family members.",
])
def test_a_finding_does_not(text: str) -> None:
    assert not states_proposition(text, analyse(QUESTION))


def test_an_acronym_the_question_spells_out_is_the_questions_own() -> None:
    question = "Is double balloon enteroscopy efficacious and safe in a community setting?"
    assert states_proposition("DBE is efficacious and safe in a community setting.", analyse(question))
    assert not states_proposition("DBE is efficacious and safe in a community setting in 42 patients.", analyse(question))


@pytest.mark.parametrize("question", [
    "Which papers speed up large language model inference with speculative decoding, and by how much?",
    "How do MTMamba and MTMamba++ differ in the datasets they are evaluated on?",
    "What PASCAL VOC mean IU does each version report?",
    "What do recent studies find about statins and dementia?",
    "How does sparse attention compare with linear attention?",
])
def test_questions_about_several_papers(question: str) -> None:
    asked = analyse(question)
    assert asked.several and not asked.one_paper


@pytest.mark.parametrize("question", [
    "How many more problems does a model trained with multi-token prediction solve compared with next-token prediction?",
    "What method represents each entity without storing a separate vector for each one?",
    "Which network learns the shape of the region it looks at around each pixel?",
    "By how much does Jina-ColBERT-v2 cut storage requirements compared to previous models?",
])
def test_questions_about_one_paper(question: str) -> None:
    asked = analyse(question)
    assert not asked.several and asked.one_paper


def test_a_yes_no_question_is_not_answered_from_one_paper_only() -> None:
    assert not analyse("Do mutations causing low HDL-C promote increased carotid intima-media thickness?").one_paper


def test_a_question_is_read_once_into_its_words_names_and_numbers() -> None:
    asked = analyse("Does TokenFormer cut training GPU hours by more than 50%?")
    assert asked.yes_no and asked.names == {"tokenformer", "gpu"} and "hour" in asked.terms
    assert asked.quantities and asked.words > asked.terms
