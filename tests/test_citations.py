"""Citation parsing, renumbering and attribution on fixed texts, with the real embedder."""

from __future__ import annotations

import pytest

from assistant.answer import citations
from assistant.answer.citations import (
    STRONG_SUPPORT,
    SUPPORT_THRESHOLD,
    bare_citations,
    echoed_citations,
    parse_marker,
    quote_sources,
    split_claims,
)
from assistant.answer.context import PromptSource, build, read
from assistant.answer.questions import analyse
from assistant.index import embedders
from assistant.settings import Settings
from assistant.types import Abstract, Hit

PANGU = ("We present Pangu Ultra, a Large Language Model with 135 billion parameters trained on Ascend NPUs. "
         "To stabilise training we propose depth-scaled sandwich normalization, which eliminates loss spikes.")
NFNET = ("Batch normalization is a key component of most image classifiers. We develop an adaptive gradient "
         "clipping technique, and our largest NFNets reach 86.5% ImageNet top-1 accuracy.")
CHIMERA = "Chimera is a lightweight draft model for speculative decoding that reaches a 2.7x speedup."
HYPER = ("We present hyper-connections, a simple yet effective method that can serve as an alternative to residual "
         "connections. Theoretically, hyper-connections allow the network to adjust the strength of connections between "
         "features at different depths and dynamically rearrange layers.")


@pytest.fixture(scope="module")
def minilm() -> embedders.Embedder:
    return embedders.create(Settings())


@pytest.fixture(autouse=True)
def _embedder(minilm: embedders.Embedder, monkeypatch: pytest.MonkeyPatch) -> None:
    """The helpers below embed with the real model."""
    global EMBEDDER
    EMBEDDER = minilm


EMBEDDER: embedders.Embedder


def _sources(*texts: str) -> list[PromptSource]:
    hits = [Hit(abstract=Abstract(id=f"a{i}", text=t, title=f"T{i}", source="s", titled=False), score=1.0, rank=i)
            for i, t in enumerate(texts, start=1)]
    return build(read(analyse(""), hits, EMBEDDER), 10_000, "abstracts")[0]


def support(claim: str, text: str) -> float:
    """The support score of a claim by one abstract."""
    return citations.support(claim, EMBEDDER.embed([claim])[0], _sources(text)[0]).score


def attribute(answer: str, sources: list[PromptSource], question: str = "", **options: object) -> citations.Attribution:
    return citations.attribute(answer, sources, EMBEDDER.embed, analyse(question) if question else None, **options)


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
    assert "To stabilise training we propose depth-scaled sandwich normalization, which eliminates loss spikes." in result.citations[0].evidence
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
    assert support("Chimera reaches a 2.7x speedup", CHIMERA) >= STRONG_SUPPORT
    assert support("Chimera reaches a 3.1x speedup", CHIMERA) == 0.0
    assert support("Medusa reaches a 2.7x speedup", CHIMERA) == 0.0
    assert support("NFNets reach 86.5% ImageNet top-1 accuracy", NFNET) >= SUPPORT_THRESHOLD
    assert 0 < support("a lightweight classifier of bird songs and insect calls", CHIMERA) < SUPPORT_THRESHOLD


def test_support_is_by_meaning_and_one_sentence_or_two_adjacent_ones() -> None:
    paraphrase = "Hyper-connections, which let the network adjust connection strengths between features at different depths"
    assert support(paraphrase, HYPER) >= SUPPORT_THRESHOLD
    assert support(paraphrase, PANGU) < SUPPORT_THRESHOLD
    evidence = citations.support("Pangu Ultra has 135 billion parameters and uses depth-scaled sandwich normalization",
                                 EMBEDDER.embed(["Pangu Ultra has 135 billion parameters and uses depth-scaled sandwich "
                                                 "normalization"])[0], _sources(PANGU)[0])
    assert evidence.score >= SUPPORT_THRESHOLD and len(evidence.sentences) == 2  # a fact from each sentence


def test_numbers_are_compared_as_quantities_in_any_common_spelling() -> None:
    source = ("Recall is measured in the top 1, 5 and 10 suggestions; the 2.4 billion parameter model improves it by "
              "21.5 percent, to 8,192 hits, and lowers the loss by −0.3.")
    for claim in ("Recall is measured in the top 1/5/10 suggestions",
                  "The 2.4B-parameter model improves recall by 21.5 %",
                  "The 2,400 million parameter model reaches 8192 hits",
                  "The model lowers the loss by -0.3"):
        assert support(claim, source) >= SUPPORT_THRESHOLD, claim
    assert support("The 2.4M-parameter model improves recall by 21.5%", source) == 0.0
    assert support("The 2.4B-parameter model improves recall by 25.1%", source) == 0.0


def test_a_lower_case_suffix_is_not_part_of_a_name() -> None:
    source = "Our experiments with BANs based on DenseNets reach 3.5% validation error on CIFAR-10."
    assert support("DenseNet-based BANs reach a 3.5% validation error on CIFAR-10", source) >= SUPPORT_THRESHOLD
    assert support("ResNet-based BANs reach a 3.5% validation error on CIFAR-10", source) == 0.0
    assert support("GPT-4 reaches a 3.5% validation error on CIFAR-10", source) == 0.0


def test_a_bare_citation_answer_quotes_the_cited_sources() -> None:
    assert bare_citations("Sources: [2], [1]") == [2, 1]
    assert bare_citations("[1] [3].") == [1, 3]
    assert bare_citations("NFNets reach 86.5% [2]") == [] and bare_citations("NOT IN SOURCES") == []
    sources = _sources(PANGU, NFNET, CHIMERA)
    quoted = quote_sources([2, 1, 7], sources, analyse("Which papers remove normalization or its loss spikes?"))
    assert quoted == ("Batch normalization is a key component of most image classifiers [2]. To stabilise training "
                      "we propose depth-scaled sandwich normalization, which eliminates loss spikes [1].")
    result = attribute(quoted, sources)
    assert [c.abstract.id for c in result.citations] == ["a2", "a1"] and not result.unsupported


def test_an_answer_that_only_echoes_the_question_is_treated_as_bare_citations() -> None:
    question = "Which work found that one hidden unit of a character-level recurrent model tracks the tone of the text?"
    echo = "The work by [2] found that one hidden unit in a recurrent model tracks the tone of the text."
    assert echoed_citations(echo, analyse(question)) == [2], "only the marker is new: it says which source answers"
    assert echoed_citations("Yes [1]. The study [3] found this.", analyse(question)) == [1, 3]
    assert echoed_citations("A sentiment unit in an LSTM tracks the tone [2].", analyse(question)) == [], "sentiment, LSTM are its own"
    assert echoed_citations("One hidden unit tracks the tone of the text.", analyse(question)) == [], "no marker, no source"
    assert attribute(echo, _sources(PANGU, NFNET), question=question).supported_claims == 0, "not an answer as it stands"


def test_a_weakly_ranked_source_is_cited_only_for_what_it_supports_strongly() -> None:
    sources = _sources(NFNET, PANGU, CHIMERA)
    weak = "while Chimera drafts tokens quickly"
    assert SUPPORT_THRESHOLD <= support(weak, CHIMERA) < STRONG_SUPPORT
    answer = ("NFNets reach 86.5% ImageNet top-1 accuracy [1], while Chimera reaches a 2.7x speedup [3]. "
              f"Pangu Ultra has 135 billion parameters [2], {weak} [3].")
    result = attribute(answer, sources, citable={1, 2})
    assert result.text == ("NFNets reach 86.5% ImageNet top-1 accuracy [1], while Chimera reaches a 2.7x speedup [2]. "
                           "Pangu Ultra has 135 billion parameters [3].")
    assert result.set_aside == [weak]
    assert [c.abstract.id for c in result.citations] == ["a1", "a3", "a2"] and not result.unsupported
    everything = attribute(answer, sources)
    assert everything.set_aside == [] and [c.abstract.id for c in everything.citations] == ["a1", "a3", "a2"]
    guarded = attribute(answer, sources, citable={1, 2}, strong_exempt=False)
    assert guarded.set_aside == ["while Chimera reaches a 2.7x speedup", weak] and len(guarded.citations) == 2


def test_a_citable_source_that_also_supports_a_weak_claim_is_cited_instead() -> None:
    sources = _sources(CHIMERA, CHIMERA + " It was tested on Vicuna.")
    assert SUPPORT_THRESHOLD <= support("Chimera drafts tokens quickly", CHIMERA) < STRONG_SUPPORT
    result = attribute("Chimera drafts tokens quickly [2].", sources, citable={1})
    assert result.text == "Chimera drafts tokens quickly [1]." and result.set_aside == []
    assert [c.abstract.id for c in result.citations] == ["a1"]
    strong = attribute("Chimera reaches a 2.7x speedup [2].", sources, citable={1})
    assert [c.abstract.id for c in strong.citations] == ["a2"], "read whole, strongly supported: cited whatever its rank"
    excerpt = attribute("Chimera reaches a 2.7x speedup [2].", sources, citable={1}, strong_exempt=False)
    assert [c.abstract.id for c in excerpt.citations] == ["a1"]


def test_a_claim_is_moved_to_the_source_that_supports_it_clearly_better() -> None:
    claim = "Chimera is a lightweight draft model for speculative decoding that reaches a 2.7x speedup"
    sources = _sources("A lightweight draft model speeds up speculative decoding. Chimera reaches 2.7x.", CHIMERA)
    near, best = support(claim, sources[0].excerpt), support(claim, sources[1].excerpt)
    assert SUPPORT_THRESHOLD <= near < best - citations.REATTRIBUTE_MARGIN
    result = attribute(f"{claim} [1].", sources)
    assert result.text == f"{claim} [1]." and result.citations[0].abstract.id == "a2"


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
    for opener in ("Yes, NFNets", "Yes: NFNets", "Specifically, NFNets", "We show that NFNets", "Measured on ImageNet, NFNets"):
        assert support(f"{opener} reach 86.5% ImageNet top-1 accuracy", NFNET) >= SUPPORT_THRESHOLD, opener
    assert support("Moreover, ResNets reach 86.5% ImageNet top-1 accuracy", NFNET) == 0.0


def test_a_refusal_is_never_cited_and_a_partial_answer_keeps_its_supported_part() -> None:
    qa = "Question answering over the provided sources improves when the context contains the answer."
    refusal = "The provided sources do not contain information that answers this question"
    only = attribute(f"{refusal} [1].", _sources(qa))
    assert only.supported_claims == 0 and only.citations == [] and only.declined == [refusal]
    assert only.unsupported == [] and only.text == ""
    partial = attribute("Pangu Ultra has 135 billion parameters [1]. The abstract does not say how long training took.",
                        _sources(PANGU))
    assert partial.text == "Pangu Ultra has 135 billion parameters [1]."
    assert partial.declined == ["The abstract does not say how long training took."] and partial.supported_claims == 1


def test_a_claim_that_only_restates_the_question_is_neither_cited_nor_flagged() -> None:
    question = "Does adaptive gradient clipping let image classifiers train without batch normalization?"
    answer = ("Yes, adaptive gradient clipping lets image classifiers train without batch normalization [1]. "
              "They reach 86.5% top-1 [1].")
    result = attribute(answer, _sources(NFNET), question=question, verdicts=False)
    assert result.text == "They reach 86.5% top-1 [1]."
    assert result.unsupported == [] and result.supported_claims == 1
    assert attribute("Yes, adaptive gradient clipping lets image classifiers train without batch normalization.",
                     _sources(NFNET), question=question, verdicts=False).supported_claims == 0


def test_a_restatement_that_only_says_where_it_is_written_is_no_answer() -> None:
    result = attribute("The authors of Pangu Ultra are described in source [1].", _sources(PANGU),
                       question="Who are the authors of Pangu Ultra?")
    assert result.supported_claims == 0 and result.citations == []


def test_a_sentence_about_the_sources_themselves_gets_no_citation() -> None:
    # every content word of the filler occurs in the second source, so overlap alone would support it
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
    quoted = quote_sources([1], _sources(text), analyse("Which papers combine retrieval with speculative decoding?"))
    assert quoted == "DReSD retrieves draft tokens for speculative decoding, 2.1x faster [1]."


HDL_QUESTION = "Do mutations causing low HDL-C promote increased carotid intima-media thickness?"
HDL = ("We asked whether mutations causing low HDL-C promote increased carotid intima-media thickness. "
       "Carriers of such mutations were compared with their unaffected family members. "
       "Carotid intima-media thickness was 0.66 mm in carriers and 0.65 mm in family controls, with no significant difference.")
STATIN = ("Statin use was studied in 412 patients with low HDL-C. "
          "Carotid intima-media thickness increased by 0.04 mm per year in carriers of the mutations.")
FINDING = "Carotid intima-media thickness was 0.66 mm in carriers and 0.65 mm in family controls."


def test_a_trusted_models_verdict_is_kept_and_rests_on_the_cited_finding() -> None:
    result = attribute(f"No, {FINDING[0].lower()}{FINDING[1:]} [1]", _sources(HDL), question=HDL_QUESTION,
                       verdicts=True)
    assert result.text.startswith("No, carotid intima-media thickness was 0.66 mm") and result.text.endswith("[1].")
    assert result.verdict == "no" and result.citations[0].verdict == "no" and result.withheld == []


def test_a_standalone_verdict_carries_to_the_claim_after_it() -> None:
    result = attribute(f"No. {FINDING} [1]", _sources(HDL), question=HDL_QUESTION, verdicts=True)
    assert result.verdict == "no" and result.text == f"No. {FINDING[:-1]} [1]."
    untrusted = attribute(f"No. {FINDING} [1]", _sources(HDL), question=HDL_QUESTION, verdicts=False)
    assert untrusted.verdict is None and untrusted.text == f"{FINDING[:-1]} [1]." and untrusted.withheld == []


def test_sources_that_disagree_give_a_mixed_verdict_with_each_papers_own() -> None:
    answer = f"No, {FINDING[0].lower()}{FINDING[1:]} [1] Yes, thickness increased by 0.04 mm per year in carriers [2]."
    result = attribute(answer, _sources(HDL, STATIN), question=HDL_QUESTION, verdicts=True)
    assert result.verdict == "mixed" and [c.verdict for c in result.citations] == ["no", "yes"]


def test_an_untrusted_model_states_findings_without_verdict_words_or_propositions() -> None:
    proposition = "Mutations causing low HDL-C do not promote increased carotid intima-media thickness."
    answer = f"Yes, {proposition[0].lower()}{proposition[1:-1]} [1]. {FINDING} [1]"
    result = attribute(answer, _sources(HDL), question=HDL_QUESTION, verdicts=False)
    assert result.text == f"{FINDING[:-1]} [1]." and result.verdict is None and result.citations[0].verdict is None
    assert result.withheld == [f"Yes, {proposition[0].lower()}{proposition[1:-1]}"] and result.supported_claims == 1
    only = attribute(proposition, _sources(HDL), question=HDL_QUESTION, verdicts=False)
    assert only.supported_claims == 0 and only.withheld == [proposition] and only.unsupported == []


def test_a_trusted_models_proposition_is_verified_like_any_claim() -> None:
    proposition = "No, mutations causing low HDL-C do not promote increased carotid intima-media thickness."
    result = attribute(proposition, _sources(HDL), question=HDL_QUESTION, verdicts=True)
    assert result.supported_claims == 1 and result.verdict == "no" and result.citations[0].abstract.id == "a1"


def test_no_as_the_first_word_of_a_finding_is_not_a_verdict() -> None:
    answer = "No significant difference in carotid intima-media thickness was found between carriers and family controls."
    result = attribute(answer, _sources(HDL), question=HDL_QUESTION, verdicts=False)
    assert result.text.startswith("No significant difference") and result.withheld == [] and result.supported_claims == 1


def test_an_answer_to_a_one_paper_question_cites_one_paper_the_best_ranked() -> None:
    answer = "NFNets reach 86.5% ImageNet top-1 accuracy [2]. Pangu Ultra has 135 billion parameters [1]."
    result = attribute(answer, _sources(PANGU, NFNET), question="How many parameters does Pangu Ultra have?")
    assert [c.abstract.id for c in result.citations] == ["a1"], "source 1 ranks best; the answer cites only it"
    assert result.text == "Pangu Ultra has 135 billion parameters [1]."
    assert result.set_aside == ["NFNets reach 86.5% ImageNet top-1 accuracy"] and result.supported_claims == 1
    several = attribute(answer, _sources(PANGU, NFNET), question="Which papers report model sizes or accuracies?")
    assert [c.abstract.id for c in several.citations] == ["a2", "a1"] and several.set_aside == []


def test_a_claim_the_answering_paper_also_states_is_cited_to_it() -> None:
    copy = PANGU.replace("We present", "This report presents")
    result = attribute("Pangu Ultra has 135 billion parameters [1]. It was trained on Ascend NPUs [2].",
                       _sources(PANGU, copy), question="How many parameters does Pangu Ultra have?")
    assert [c.abstract.id for c in result.citations] == ["a1"] and result.set_aside == []
    assert result.text == "Pangu Ultra has 135 billion parameters [1]. It was trained on Ascend NPUs [1]."


def test_an_unverified_part_of_a_cited_sentence_is_left_out_not_shown_as_cited() -> None:
    answer = "Pangu Ultra has 135 billion parameters [1]; NFNets reach 91.2% ImageNet top-1 accuracy."
    result = attribute(answer, _sources(PANGU, NFNET), question="Which papers report model sizes or accuracies?")
    assert result.text == "Pangu Ultra has 135 billion parameters [1]."
    assert result.unsupported == ["NFNets reach 91.2% ImageNet top-1 accuracy."]
    alone = attribute("Pangu Ultra has 135 billion parameters [1]. NFNets reach 91.2% ImageNet top-1 accuracy.",
                      _sources(PANGU, NFNET), question="Which papers report model sizes or accuracies?")
    assert alone.text.endswith("NFNets reach 91.2% ImageNet top-1 accuracy."), "a sentence of its own stays, marked"


def test_a_terse_answer_opening_with_a_preposition_names_nothing_the_source_lacks() -> None:
    result = attribute("Up to a 2.7x speedup [1].", _sources(CHIMERA), question="How fast is Chimera?")
    assert result.supported_claims == 1 and result.unsupported == []
