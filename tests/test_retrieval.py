"""Hybrid retrieval: fusion on fixed inputs, filters on both sides, dense recall without
lexical overlap, abstract-level aggregation (real models, real Chroma, real BM25)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assistant import Assistant, SearchFilters
from assistant.index.bm25 import Bm25Index
from assistant.retrieval import fuse, fuse_weighted, subject_bonuses, subject_terms, with_subject_bonus
from assistant.types import Abstract

from conftest import SAMPLE_UNIQUE


def test_fusion_of_fixed_scores_worked_out_by_hand() -> None:
    dense = {"a": 0.9, "b": 0.5, "c": 0.1}
    lexical = {"b": 10.0, "d": 5.0}
    # dense: mean 0.5, sd 0.3266 → (x - (0.5 - 3 sd)) / 6 sd: a 0.7041, b 0.5, c 0.2959
    # lexical: mean 7.5, sd 2.5 → b 0.6667, d 0.3333; half weight each.
    ranked = fuse(dense, lexical, lexical_weight=0.5)
    assert [key for key, _ in ranked] == ["b", "a", "d", "c"]
    assert dict(ranked) == pytest.approx({"b": 0.5833, "a": 0.3521, "d": 0.1667, "c": 0.1479}, abs=1e-3)


def test_fusion_weights_and_degenerate_inputs() -> None:
    assert [k for k, _ in fuse({"a": 0.9, "b": 0.1}, {"b": 9.0, "a": 1.0}, lexical_weight=1.0)][0] == "b"
    assert [k for k, _ in fuse({"a": 0.9, "b": 0.1}, {"b": 9.0, "a": 1.0}, lexical_weight=0.0)][0] == "a"
    assert fuse({"x": 0.4}, {}, 0.5) == [("x", 0.5)]  # a lone score counts fully
    assert fuse({}, {}, 0.5) == []


def test_fusion_of_three_signals() -> None:
    # Each list scales to a 0.7041 / b 0.5 / c 0.2959 (the dense list of the test above).
    first, second, third = {"a": 0.9, "b": 0.5, "c": 0.1}, {"b": 0.9, "c": 0.5, "a": 0.1}, {"c": 0.9, "a": 0.5, "b": 0.1}
    ranked = dict(fuse_weighted([(first, 0.5), (second, 0.3), (third, 0.2)]))
    assert ranked == pytest.approx({"a": 0.5408, "b": 0.5204, "c": 0.4388}, abs=1e-3)
    assert fuse_weighted([(first, 0.5), (second, 0.5)]) == fuse(first, second, 0.5)
    # phrases take their weight; dense and lexical share the rest by lexical_weight
    expected = dict(fuse_weighted([(first, 0.48), (second, 0.32), (third, 0.2)]))
    assert dict(fuse(first, second, 0.4, third, 0.2)) == pytest.approx(expected)
    assert dict(fuse(first, second, 0.5, {}, 0.1)) == pytest.approx(dict(fuse_weighted([(first, 0.45), (second, 0.45)])))


def test_subject_terms_are_the_names_few_abstracts_contain(tmp_path: Path) -> None:
    texts = [f"Transformer variant {n} improves long-context language modelling." for n in range(7)]
    texts.append("Time-MoE is a Transformer for time series forecasting.")
    index = Bm25Index(tmp_path / "bm25", k1=0.9, b=0.4, title_weight=1)
    index.build([Abstract(id=str(n), text=t, title="", source="x", titled=False) for n, t in enumerate(texts)])
    # "Transformer" is in all 8 abstracts, "Granite" in none (perhaps spelled otherwise): neither is a subject
    assert subject_terms("How many parameters do the Time-MoE Transformer and Granite have?", index) == {"time-moe": ["7"]}
    # a title's capitals name nothing: "Forecasting" is rare here, yet not a subject
    assert subject_terms("Can Time-MoE Improve Forecasting?", index) == {"time-moe": ["7"]}


def test_a_near_unique_name_earns_the_larger_bonus(tmp_path: Path) -> None:
    texts = [f"Transformer variant {n} improves long-context language modelling." for n in range(6)]
    texts += ["HyenaNet and DReSD decode faster.", "HyenaNet is a Transformer.", "HyenaNet scales.", "DReSD again."]
    index = Bm25Index(tmp_path / "bm25", k1=0.9, b=0.4, title_weight=1)
    index.build([Abstract(id=str(n), text=t, title="", source="x", titled=False) for n, t in enumerate(texts)])
    # HyenaNet: 3 abstracts (a subject); DReSD: 2 (near-unique); abstract 6 has both and keeps the larger
    bonuses = subject_bonuses("Is HyenaNet or DReSD faster?", index, 0.15, 0.5)
    assert bonuses == {"6": 0.5, "7": 0.15, "8": 0.15, "9": 0.5}
    assert subject_bonuses("Is HyenaNet or DReSD faster?", index, 0.15, 0.0) == dict.fromkeys("6789", 0.15)
    assert subject_bonuses("Is HyenaNet or DReSD faster?", index, 0.0, 0.0) == {}


def test_subject_bonus_reorders_fused_results() -> None:
    ranked = [("a", 0.9), ("b", 0.8), ("c", 0.7)]
    assert with_subject_bonus(ranked, {"c": 0.15}) == [("a", 0.9), ("c", pytest.approx(0.85)), ("b", 0.8)]
    assert with_subject_bonus(ranked, {}) == ranked


def test_filters_parse_and_translate() -> None:
    parsed = SearchFilters.parse({"source": "a.jsonl", "year": 2020})
    assert parsed == SearchFilters(sources=("a.jsonl",), year_min=2020, year_max=2020)
    assert parsed.for_chroma() == {"$and": [{"source": {"$in": ["a.jsonl"]}}, {"year": {"$gte": 2020}}, {"year": {"$lte": 2020}}]}
    assert SearchFilters.parse({"sources": ["a", "b"]}).for_chroma() == {"source": {"$in": ["a", "b"]}}
    assert SearchFilters().for_chroma() is None
    with pytest.raises(ValueError, match="unknown filter"):
        SearchFilters.parse({"author": "x"})


@pytest.fixture(scope="module")
def small_index(tmp_path_factory: pytest.TempPathFactory) -> Assistant:
    folder = tmp_path_factory.mktemp("small")
    cardio = [
        {"id": "mi", "title": "Myocardial infarction and hypertension", "year": 2018,
         "abstract": "Myocardial infarction incidence rises markedly among patients with chronic hypertension, "
                     "according to a cohort followed for ten years."},
        {"id": "stroke", "title": "Stroke outcomes", "year": 2021,
         "abstract": "We study stroke outcomes after thrombolysis in elderly cohorts across five hospitals."},
    ]
    ml = [
        {"id": "bn", "title": "Batch normalization revisited", "year": 2020,
         "abstract": "Batch normalization stabilises training of deep convolutional networks; we revisit it for transformers."},
        {"id": "kg", "title": "Hyperbolic knowledge graph embeddings", "year": 2022,
         "abstract": "Knowledge graph embeddings in hyperbolic space capture hierarchies with fewer dimensions; "
                     "hypertension is mentioned here only as an example entity."},
    ]
    (folder / "cardio.jsonl").write_text("\n".join(json.dumps(r) for r in cardio))
    (folder / "ml.jsonl").write_text("\n".join(json.dumps(r) for r in ml))
    assistant = Assistant(data_dir=folder / "index", auto_ingest=False)
    assistant.ingest([folder / "cardio.jsonl", folder / "ml.jsonl"])
    return assistant


def test_a_question_with_no_word_in_common_is_found_by_the_dense_side(small_index: Assistant) -> None:
    question = "heart attack danger from high blood pressure"
    assert small_index.bm25.search(question, 10) == []
    top = small_index.search(question, k=2)[0]
    assert top.abstract.id == "mi" and top.lexical is None and top.dense > 0.3


def test_source_and_year_filters_apply_to_both_sides(small_index: Assistant) -> None:
    question = "hypertension"  # a lexical match in both files
    assert {h.abstract.id for h in small_index.search(question, k=4)} == {"mi", "stroke", "bn", "kg"}
    only_ml = small_index.search(question, k=4, filters={"source": "ml.jsonl"})
    assert {h.abstract.id for h in only_ml} == {"bn", "kg"} and only_ml[0].abstract.id == "kg"
    recent = small_index.search(question, k=4, filters={"year_min": 2021})
    assert {h.abstract.id for h in recent} == {"stroke", "kg"}
    assert small_index.search(question, k=4, filters={"source": "cardio.jsonl", "year_max": 2018})[0].abstract.id == "mi"
    assert small_index.search(question, k=4, filters={"source": "none.jsonl"}) == []
    mask = SearchFilters(sources=("ml.jsonl",)).mask(small_index.bm25)
    assert dict(zip(small_index.bm25.ids, mask)) == {"mi": 0, "stroke": 0, "bn": 1, "kg": 1}


def test_hits_are_abstracts_with_their_best_passage(sample_index: Assistant) -> None:
    hits = sample_index.search("What ImageNet top-1 accuracy do normalizer-free networks reach with adaptive gradient clipping?", k=10)
    assert len({h.abstract.id for h in hits}) == len(hits) == 10
    assert [h.rank for h in hits] == list(range(1, 11))
    assert all(a.score >= b.score for a, b in zip(hits, hits[1:]))
    top = hits[0]
    assert top.abstract.text.startswith("Batch normalization is a key component of most image classif")
    assert top.passage in top.abstract.text and "adaptive gradient clipping" in top.abstract.text
    assert top.dense is not None and top.lexical is not None and 0 < top.relevance <= 1
    assert type(top.score) is float, "plain floats, not numpy scalars, in what users print"


def test_a_hit_the_dense_side_did_not_reach_still_gets_its_true_cosine(sample_index: Assistant) -> None:
    """With a shallow dense side most hits come from BM25 alone; their cosine (which the
    relevance gate uses) is computed, not taken as missing, and matches a full dense scan."""
    question = "What acceptance rates does DReSD report?"
    hits = Assistant(sample_index.settings, fusion_depth=2).search(question, k=6)
    full = sample_index.retriever.dense(question, sample_index.stats()["abstracts"], None)
    assert all(h.dense is not None for h in hits)
    assert [round(h.dense, 4) for h in hits] == [round(full[h.abstract.id][0], 4) for h in hits]
    assert all(h.passage in h.abstract.text for h in hits)


@pytest.mark.parametrize("query", ["Time-MoE", "What is Time-MoE?"])
def test_a_terse_query_for_an_indexed_paper_is_relevant(sample_index: Assistant, query: str) -> None:
    top = sample_index.search(query, k=3)[0]
    assert "we introduce Time-MoE" in top.abstract.text
    # BM25 alone gives a one-term query a small score; coverage says the abstract holds all of it
    assert top.relevance >= sample_index.settings.min_relevance
    assert sample_index.search("what", k=1)[0].relevance < sample_index.settings.min_relevance


@pytest.mark.parametrize("helper", [{"phrase_weight": 0.1}, {"subject_weight": 0.15}])
def test_a_paper_named_in_the_question_is_ranked_among_the_sources(sample_index: Assistant, helper: dict) -> None:
    """BM25 sees "time" and "moe" as two common words, so other MoE papers outrank Time-MoE
    (7th) on dense and BM25 alone. The phrase "time moe" and the subject bonus each lift it."""
    question = "How many parameters does the largest Time-MoE model have?"
    off = {"phrase_weight": 0.0, "subject_weight": 0.0, "unique_subject_weight": 0.0}

    def rank(**settings: float) -> int:
        hits = Assistant(sample_index.settings, **settings).search(question, k=10)
        return next(h.rank for h in hits if "we introduce Time-MoE" in h.abstract.text)

    assert rank(**{**off, **helper}) <= sample_index.settings.context.top_k < rank(**off)
    assert rank() <= sample_index.settings.context.top_k


def test_an_acronym_that_is_also_a_word_is_counted_case_sensitively(sample_index: Assistant) -> None:
    question = "What datasets does the LIMIT paper introduce?"
    assert len(sample_index.bm25.containing("limit")) == 54, "case-blind BM25 sees a common word"
    terms = subject_terms(question, sample_index.bm25)
    assert list(terms) == ["LIMIT"] and len(terms["LIMIT"]) == 1
    top = sample_index.search(question, k=1)[0]
    assert top.abstract.id == terms["LIMIT"][0] and "LIMIT" in top.abstract.text


def test_a_question_about_a_near_unique_name_ranks_its_abstract_first(sample_index: Assistant) -> None:
    question = "What gains does DReSD report?"
    # in 330 abstracts "gains" and "report" outweigh the one abstract holding "DReSD" (4th with the 0.15 bonus alone)
    plain = Assistant(sample_index.settings, unique_subject_weight=0.0).search(question, k=10)
    assert "(DReSD)" not in plain[0].abstract.text
    assert "(DReSD)" in sample_index.search(question, k=1)[0].abstract.text


@pytest.mark.slow
def test_chunks_of_one_abstract_are_aggregated(sample_index: Assistant) -> None:
    vector = sample_index.embedder.embed(["Pangu Ultra sandwich normalization Ascend NPUs"])[0]
    chunks = sample_index.store.query_chunks(vector, 50)
    owners = [abstract_id for _, abstract_id, _ in chunks]
    assert len(owners) > len(set(owners)), "several chunks of one abstract are near the question"
    hits = sample_index.search("Pangu Ultra sandwich normalization Ascend NPUs", k=SAMPLE_UNIQUE)
    assert len(hits) == len({h.abstract.id for h in hits})
    best_chunk = {}
    for _, abstract_id, score in chunks:
        best_chunk.setdefault(abstract_id, score)
    assert hits[0].dense == pytest.approx(best_chunk[hits[0].abstract.id], abs=1e-6)


def test_while_the_vector_index_loads_a_search_ranks_by_keywords_and_says_so(sample_index: Assistant) -> None:
    """A search that comes while another loads Chroma's vector index (at start-up: 15-40 s at
    a million abstracts) does not wait for it: it ranks by the lexical side alone, flags its
    hits, and computes their cosines and passages from their chunks' text: the same cosines
    and passages the loaded index gives for those abstracts."""
    question = "What ImageNet top-1 accuracy do normalizer-free networks reach with adaptive gradient clipping?"
    full = {h.abstract.key: h for h in sample_index.search(question, k=10)}
    waiting = Assistant(sample_index.settings, vector_wait_seconds=0.05)
    waiting.store._loader.acquire()  # another search is loading the vector index
    try:
        hits = waiting.search(question, k=10)
    finally:
        waiting.store._loader.release()
    assert len(hits) == 10 and all(h.keyword_only for h in hits)
    assert all(h.lexical is not None for h in hits), "found by the lexical side"
    assert hits[0].abstract.key == next(iter(full)), "the paper the question names still comes first"
    shared = [h for h in hits if h.abstract.key in full]
    assert len(shared) >= 5
    for hit in shared:
        assert hit.dense == pytest.approx(full[hit.abstract.key].dense, abs=1e-4)
        assert hit.passage == full[hit.abstract.key].passage
    assert not any(h.keyword_only for h in waiting.search(question, k=10)), "loaded: hybrid again"
