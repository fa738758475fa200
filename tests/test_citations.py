"""Citation parsing, renumbering and attribution on fixed texts (pure logic)."""

from __future__ import annotations

from assistant.answer.citations import (
    attribute,
    bare_citations,
    echoed_citations,
    parse_marker,
    quote_sources,
    split_claims,
    support,
)
from assistant.answer.context import Source
from assistant.types import Abstract, Hit

PANGU = ("We present Pangu Ultra, a Large Language Model with 135 billion parameters trained on Ascend NPUs. "
         "To stabilise training we propose depth-scaled sandwich normalization, which eliminates loss spikes.")
NFNET = ("Batch normalization is a key component of most image classifiers. We develop an adaptive gradient "
         "clipping technique, and our largest NFNets reach 86.5% ImageNet top-1 accuracy.")
CHIMERA = "Chimera is a lightweight draft model for speculative decoding that reaches a 2.7x speedup."


def _sources(*texts: str) -> list[Source]:
    return [
        Source(number=i, hit=Hit(abstract=Abstract(id=f"a{i}", text=t, title=f"T{i}", source="s"), score=1.0, rank=i), excerpt=t)
        for i, t in enumerate(texts, start=1)
    ]


def test_marker_variants() -> None:
    assert parse_marker("1") == [1]
    assert parse_marker("1, 3") == [1, 3]
    assert parse_marker("1-3") == [1, 2, 3]
    assert parse_marker("2–4") == [2, 3, 4]
    assert parse_marker("1; 2 and 5") == [1, 2, 5]
    claims = split_claims("A holds [1][2]. B holds [1-2], while C holds [3]. D.")
    assert [(c.text.strip(" ,"), c.cited) for c in claims] == [
        ("A holds", [1, 2]), ("B holds", [1, 2]), ("while C holds", [3]), ("D.", [])]


def test_correct_citations_are_kept_and_renumbered_by_first_use() -> None:
    sources = _sources(NFNET, PANGU)
    result = attribute("Pangu Ultra uses depth-scaled sandwich normalization [2]. "
                       "NFNets use adaptive gradient clipping and reach 86.5% top-1 [1].", sources)
    assert result.text == ("Pangu Ultra uses depth-scaled sandwich normalization [1]. "
                           "NFNets use adaptive gradient clipping and reach 86.5% top-1 [2].")
    assert [(c.number, c.abstract.id) for c in result.citations] == [(1, "a2"), (2, "a1")]
    assert result.citations[0].evidence == ("To stabilise training we propose depth-scaled sandwich normalization, which eliminates loss spikes.",)
    assert result.unsupported == [] and result.supported_claims == 2


def test_missing_citations_are_added_and_wrong_or_unknown_ones_replaced() -> None:
    sources = _sources(NFNET, PANGU)
    result = attribute("Pangu Ultra has 135 billion parameters. "
                       "Adaptive gradient clipping lets NFNets reach 86.5% accuracy [2][7].", sources)
    assert result.text == ("Pangu Ultra has 135 billion parameters [1]. "
                           "Adaptive gradient clipping lets NFNets reach 86.5% accuracy [2].")
    assert [c.abstract.id for c in result.citations] == ["a2", "a1"]


def test_spliced_and_invented_claims_are_unsupported_and_uncited() -> None:
    sources = _sources(CHIMERA, PANGU)
    spliced = "Chimera reaches 135 billion parameters with a lightweight draft model [1]."
    invented = "The method was later adopted by every major search engine worldwide."
    result = attribute(f"{spliced} {invented}", sources)
    assert result.citations == [] and result.supported_claims == 0
    assert result.unsupported == [spliced.replace(" [1].", ""), invented]
    assert "[" not in result.text


def test_support_requires_numbers_and_named_terms_of_the_claim() -> None:
    assert support("Chimera reaches a 2.7x speedup", CHIMERA) == 1.0
    assert support("Chimera reaches a 3.1x speedup", CHIMERA) == 0.0
    assert support("Medusa reaches a 2.7x speedup", CHIMERA) == 0.0
    assert support("NFNets reach 86.5% ImageNet top-1 accuracy", NFNET) >= 0.5
    assert 0 < support("a lightweight classifier of bird songs and insect calls", CHIMERA) < 0.5


def test_a_lower_case_suffix_is_not_part_of_a_name() -> None:
    source = "Our experiments with BANs based on DenseNets reach 3.5% validation error on CIFAR-10."
    assert support("DenseNet-based BANs reach a 3.5% validation error on CIFAR-10", source) >= 0.5
    assert support("ResNet-based BANs reach a 3.5% validation error on CIFAR-10", source) == 0.0
    assert support("GPT-4 reaches a 3.5% validation error on CIFAR-10", source) == 0.0


def test_a_bare_citation_answer_quotes_the_cited_sources() -> None:
    assert bare_citations("Sources: [2], [1]") == [2, 1]
    assert bare_citations("[1] [3].") == [1, 3]
    assert bare_citations("NFNets reach 86.5% [2]") == [] and bare_citations("NOT IN SOURCES") == []
    sources = _sources(PANGU, NFNET, CHIMERA)
    quoted = quote_sources([2, 1, 7], sources, "Which papers remove normalization or its loss spikes?")
    assert quoted == ("Batch normalization is a key component of most image classifiers [2]. To stabilise training "
                      "we propose depth-scaled sandwich normalization, which eliminates loss spikes [1].")
    result = attribute(quoted, sources)
    assert [c.abstract.id for c in result.citations] == ["a2", "a1"] and not result.unsupported


def test_an_answer_that_only_echoes_the_question_is_treated_as_bare_citations() -> None:
    question = "Which work found that one hidden unit of a character-level recurrent model tracks the tone of the text?"
    echo = "The work by [2] found that one hidden unit in a recurrent model tracks the tone of the text."
    assert echoed_citations(echo, question) == [2], "only the marker is new: it says which source answers"
    assert echoed_citations("Yes [1]. The study [3] found this.", question) == [1, 3]
    assert echoed_citations("A sentiment unit in an LSTM tracks the tone [2].", question) == [], "sentiment, LSTM are its own"
    assert echoed_citations("One hidden unit tracks the tone of the text.", question) == [], "no marker, no source"
    assert attribute(echo, _sources(PANGU, NFNET), question=question).supported_claims == 0, "not an answer as it stands"


def test_claims_only_a_weakly_ranked_source_supports_are_set_aside() -> None:
    sources = _sources(NFNET, PANGU, CHIMERA)
    answer = ("NFNets reach 86.5% ImageNet top-1 accuracy [1], while Chimera reaches a 2.7x speedup [3]. "
              "Pangu Ultra has 135 billion parameters [2].")
    result = attribute(answer, sources, citable={1, 2})
    assert result.text == "NFNets reach 86.5% ImageNet top-1 accuracy [1]. Pangu Ultra has 135 billion parameters [2]."
    assert result.set_aside == ["while Chimera reaches a 2.7x speedup"]
    assert [c.abstract.id for c in result.citations] == ["a1", "a2"] and not result.unsupported
    everything = attribute(answer, sources)
    assert everything.set_aside == [] and [c.abstract.id for c in everything.citations] == ["a1", "a3", "a2"]


def test_a_citable_source_that_also_supports_a_claim_is_cited_instead() -> None:
    sources = _sources(CHIMERA, CHIMERA + " It was tested on Vicuna.")
    result = attribute("Chimera reaches a 2.7x speedup [2].", sources, citable={1})
    assert result.text == "Chimera reaches a 2.7x speedup [1]." and result.set_aside == []
    assert [c.abstract.id for c in result.citations] == ["a1"]


def test_a_quote_of_a_weakly_ranked_source_is_not_passed_off_as_another_source() -> None:
    quote = "It is a lightweight draft model for speculative decoding that reaches a speedup"
    sources = _sources("A lightweight draft model speeds up speculative decoding of LLMs.", CHIMERA)
    assert 0.5 <= support(quote, sources[0].excerpt) < support(quote, sources[1].excerpt)
    result = attribute(f"{quote} [2].", sources, citable={1})
    assert result.set_aside == [quote] and result.citations == [] and result.supported_claims == 0
    assert attribute(f"{quote} [1].", sources, citable={1}).text == f"{quote} [1]."


def test_markers_used_as_words_leave_no_gap_when_moved_or_dropped() -> None:
    sources = _sources(NFNET, PANGU)
    result = attribute("The study by [2] shows that depth-scaled sandwich normalization eliminates loss spikes. "
                       "Sources [1] and [2] describe adaptive gradient clipping for NFNets.", sources)
    assert result.text == ("The study shows that depth-scaled sandwich normalization eliminates loss spikes [1]. "
                           "Sources describe adaptive gradient clipping for NFNets [2].")
    assert [c.abstract.id for c in result.citations] == ["a2", "a1"]
    kept = split_claims("X does A [1], while Y, as shown in [2], does B.")
    assert [(c.text.strip(" ,"), c.cited) for c in kept] == [("X does A", [1]), ("while Y, as shown, does B", [2])]


def test_a_sentence_opener_is_not_taken_for_a_name() -> None:
    assert support("Yes, NFNets reach 86.5% ImageNet top-1 accuracy", NFNET) >= 0.5
    assert support("Specifically, NFNets reach 86.5% ImageNet top-1 accuracy", NFNET) >= 0.5
    assert support("We show that NFNets reach 86.5% ImageNet top-1 accuracy", NFNET) >= 0.5
    assert support("Moreover, ResNets reach 86.5% ImageNet top-1 accuracy", NFNET) == 0.0


def test_a_claim_that_only_restates_the_question_is_neither_cited_nor_flagged() -> None:
    question = "Does adaptive gradient clipping let image classifiers train without batch normalization?"
    answer = ("Yes, adaptive gradient clipping lets image classifiers train without batch normalization [1]. "
              "They reach 86.5% top-1 [1].")
    result = attribute(answer, _sources(NFNET), question=question)
    assert result.text == ("Yes, adaptive gradient clipping lets image classifiers train without batch normalization. "
                           "They reach 86.5% top-1 [1].")
    assert result.unsupported == [] and result.supported_claims == 1
    assert attribute("Yes, adaptive gradient clipping lets image classifiers train without batch normalization.",
                     _sources(NFNET), question=question).supported_claims == 0


def test_a_restatement_that_only_says_where_it_is_written_is_no_answer() -> None:
    result = attribute("The authors of Pangu Ultra are described in source [1].", _sources(PANGU),
                       question="Who are the authors of Pangu Ultra?")
    assert result.supported_claims == 0 and result.citations == []


def test_a_sentence_about_the_sources_themselves_gets_no_citation() -> None:
    # every content word of the filler occurs in the second source, so overlap alone would cite it
    vague = "This phenomenon is studied, and specific details are provided for each setting."
    answer = "Pangu Ultra has 135 billion parameters [1]. Sources provide specific details on this phenomenon [2]."
    result = attribute(answer, _sources(PANGU, vague), question="How many parameters does Pangu Ultra have?")
    assert [c.abstract.id for c in result.citations] == ["a1"] and result.supported_claims == 1
    assert result.text.endswith("Sources provide specific details on this phenomenon.") and result.unsupported == []


def test_a_yes_or_no_about_a_named_thing_is_an_answer_and_verified() -> None:
    question = "Is Pangu Ultra trained on Ascend NPUs?"
    result = attribute("Yes, Pangu Ultra is trained on Ascend NPUs.", _sources(NFNET, PANGU), question=question)
    assert result.supported_claims == 1 and result.text == "Yes, Pangu Ultra is trained on Ascend NPUs [1]."
    assert result.citations[0].abstract.id == "a2"
    unsupported = attribute("Yes, Pangu Ultra is trained on Ascend NPUs.", _sources(NFNET), question=question)
    assert unsupported.supported_claims == 0 and unsupported.unsupported == ["Yes, Pangu Ultra is trained on Ascend NPUs."]


def test_a_quote_prefers_the_sentence_that_states_a_finding() -> None:
    text = "Speculative decoding with retrieval speeds up generation. DReSD retrieves draft tokens for speculative decoding, 2.1x faster."
    quoted = quote_sources([1], _sources(text), "Which papers combine retrieval with speculative decoding?")
    assert quoted == "DReSD retrieves draft tokens for speculative decoding, 2.1x faster [1]."
