"""Word-level helpers: numbers compared as quantities, names a source must contain."""

from __future__ import annotations

from assistant.words import mentions, names, quantities, question_names, unstated_names, unstated_numbers


def test_numbers_are_read_as_quantities() -> None:
    assert quantities("135 billion parameters on 13.2T tokens with 8,192 NPUs") == {(135.0, 9), (13.2, 12), (8192.0, 0)}
    assert quantities("three datasets and one billion parameters") == set()
    assert quantities("three datasets and one billion parameters", words=True) == {(3.0, 0), (1.0, 9)}


def test_a_number_is_stated_in_any_common_spelling_and_an_altered_one_is_not() -> None:
    source = "a 2.4 billion parameter model, 21.5 percent better at 1, 5 and 10, on 8,192 NPUs, loss −0.3, three tasks"
    assert unstated_numbers("a 2.4B model, 21.5 % better at 1/5/10 on 8192 NPUs, loss -0.3, 3 tasks", source) == []
    assert unstated_numbers("a 2,400 million parameter model", source) == []
    assert unstated_numbers("a 2.4M model", source) == ["2.4e6"]
    assert unstated_numbers("21.6% better", source) == ["21.6"]


def test_powers_of_ten_as_authors_write_them_are_one_value() -> None:
    source = r"a learning rate of $10^{-3}$, $2.5 \times 10^{4}$ steps, a $\sim$3$\times$ speed-up, 89\% recall"
    assert quantities(source) >= {(1.0, -3), (2.5, 4)} and (10.0, 0) not in quantities(source)
    assert unstated_numbers("a learning rate of 0.001 (1e-3) for 25,000 steps, 3x faster, 89% recall", source) == []
    assert unstated_numbers("2.5 x 10^4 steps at 10^-3", source) == []
    assert unstated_numbers("a learning rate of 0.002 for 2.6e4 steps", source) == ["0.002", "2.6e4"]
    assert unstated_numbers("a learning rate of 1", source) == ["1"]  # 10^-3's mantissa is not a number of its own


def test_names_are_acronyms_camel_case_and_capitalised_words_but_not_openers() -> None:
    assert names("Pangu Ultra uses GPT-4's DenseNet-based LLMs") == {"pangu", "ultra", "gpt-4", "densenet", "llms"}
    assert names("Measured by recall, Specifically, Yes: Using it, we show that it works.") == set()
    assert names("Medusa reaches a 2.7x speedup") == {"medusa"}


def test_a_name_is_stated_as_written_or_as_an_acronym_spelled_out() -> None:
    source = "Large language models such as GPT-4 use Transformers."
    assert unstated_names("LLMs like GPT-4 use the Transformer", source) == []
    assert unstated_names("Claude uses the Transformer", source) == ["claude"]


def test_a_subject_is_mentioned_in_its_spelling_variants_and_not_inside_another_name() -> None:
    for text in ("We present Time-MoE, a foundation model", "TimeMoE scales to 2.4B", "the Time MoE family"):
        assert mentions("time-moe", text), text
    assert mentions("nfnets", "our NFNet-F1 model") and mentions("nfnet", "the NFNets family")  # plural, suffix
    assert mentions("llms", "large language models are costly")  # an acronym, spelled out
    assert mentions("colbert", "ColBERTv2 compresses") and mentions("LIMIT", "the LIMIT dataset")
    assert not mentions("time-moe", "the ultimate MoE design")  # word boundaries hold
    assert not mentions("bert", "RoBERTa is robustly optimised") and not mentions("dresd", "a dense retrieval model")
    assert not mentions("LIMIT", "the limit of embeddings")  # an acronym that is also a word keeps its case


def test_a_questions_names_leave_out_the_capitals_its_writer_had_to_write() -> None:
    assert question_names("How does Pangu Ultra keep training stable, and what does DReSD do?") == {"pangu", "ultra", "dresd"}
    # the first word of a question or clause, and every word of a title, is capitalised whatever it is
    assert question_names("Storage of vaccines in the community: weak link in the cold chain?") == set()
    assert question_names('"Would a man smell a rose then throw it away?') == set()
    assert question_names("Is Acupuncture Efficacious for Treating Phonotraumatic Vocal Pathologies?") == set()
    # there a name still shows by its own shape; in all capitals, only by its digits
    assert question_names("Does Time-MoE Beat GPT-4 on Long Horizons?") == {"time-moe", "gpt-4"}
    assert question_names("PREVALENCE OF STREPTOCOCCUS AGALACTIAE IN PREGNANT WOMEN ON DAY 3") == set()
    assert question_names("WHAT SCORE DOES GPT-4 REACH ON MMLU?") == {"gpt-4"}
