"""Refusal detection: any common wording of "the sources do not answer", and not a negated finding."""

from __future__ import annotations

import pytest

from assistant.answer.refusals import is_refusal

REFUSALS = [
    "The provided sources do not contain information that answers this question.",
    "I cannot answer this question based on the given abstracts.",
    "None of the sources mention this.",
    "There is no information about this in the provided context.",
    "Unfortunately, the abstracts don't specify this, so I can't determine the answer.",
    "This is not stated in any of the sources.",
    "Based on the provided abstracts, this question cannot be answered.",
    "I couldn't find anything about that in the given sources.",
    "The context does not include details on this topic.",
    "Sorry, the abstracts are silent on this point, so I don't know.",
    "The abstract does not say how long training took.",
    "Information about the recording cities is not provided in the sources.",
    "The number of GPUs used is not mentioned.",
    "The other sources do not compare against dense models.",
    "The abstracts provide no information on the GPUs used.",
    "It is not clear from the abstracts how many experts are used.",
    "No source reports this number.",
    "This information isn't available in the sources.",
    "NOT IN SOURCES",
]
FINDINGS = [
    "The method does not require labels [1].",
    "Online Normalization does not use batches, yet it is as accurate as Batch Normalization.",
    "FSQ does not suffer from codebook collapse.",
    "Existing hyperbolic methods do not account for logical patterns.",
    "These models often do not match the accuracy of batch-normalized networks.",
    "Models trained on other domains struggle to adapt to CORE.",
    "The samples are not competitive with GANs in visual quality.",
    "Pangu Ultra keeps training stable with depth-scaled sandwich normalization.",
    "Sparse retrieval is limited by short contexts and exact string matching.",
]


@pytest.mark.parametrize("sentence", REFUSALS)
def test_refusals_in_any_common_wording_are_recognised(sentence: str) -> None:
    assert is_refusal(sentence)


@pytest.mark.parametrize("sentence", FINDINGS)
def test_a_negated_finding_is_not_a_refusal(sentence: str) -> None:
    assert not is_refusal(sentence)
