"""Retrieval evaluation: a tiny BEIR fixture whose metrics are known by hand, and the
dev QA file on the sample corpus."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from assistant import Assistant, evaluation

DEV = Path(__file__).parent / "data" / "dev.jsonl"


def _beir_fixture(folder: Path) -> Path:
    docs = {
        "d1": "Vitamin D supplementation reduces fracture risk in elderly women with osteoporosis.",
        "d2": "Vitamin D supplementation reduces fracture risk in elderly women.",
        "d3": "Deep sea vents host chemosynthetic bacterial communities.",
        "d4": "Quantum dots emit tunable light for display panels.",
    }
    (folder / "corpus.jsonl").write_text("\n".join(json.dumps({"_id": k, "title": "", "text": v}) for k, v in docs.items()))
    queries = {"q1": docs["d3"], "q2": docs["d1"], "q3": "not in the qrels"}
    (folder / "queries.jsonl").write_text("\n".join(json.dumps({"_id": k, "text": v}) for k, v in queries.items()))
    (folder / "qrels").mkdir()
    # q1: its relevant document is ranked first. q2: the relevant d2 is a shortened copy of
    # d1, which the query repeats word for word, so d2 is ranked second.
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td3\t1\nq2\td2\t1\n")
    return folder


def test_beir_metrics_match_a_hand_computation(tmp_path: Path) -> None:
    folder = _beir_fixture(tmp_path)
    user = Assistant(data_dir=tmp_path / "user-index", cache_dir=tmp_path / "cache", auto_ingest=False)
    result = evaluation.evaluate_beir(user, folder, folder / "qrels" / "test.tsv")
    assert result["queries"] == 2 and result["abstracts"] == 4
    assert result["ndcg@10"] == pytest.approx((1.0 + 1.0 / math.log2(3)) / 2, abs=1e-4)
    assert result["recall@100"] == 1.0
    assert user.store.count() == 0, "the user's index is untouched"
    assert evaluation.beir_data_dir(user, folder).is_relative_to(tmp_path / "cache")
    again = evaluation.evaluate_beir(user, folder, folder / "qrels" / "test.tsv")
    assert again["ndcg@10"] == result["ndcg@10"]


def test_dev_questions_find_their_gold_abstracts(sample_index: Assistant) -> None:
    result = evaluation.evaluate_qa(sample_index, DEV)
    by_type = result["by_type"]
    assert result["gold_not_in_index"] == []
    assert by_type["all"]["questions"] + result["skipped_without_gold"] == 40
    assert set(by_type) == {"all", "multi", "paraphrase", "single"}
    assert by_type["single"]["recall@5"] >= 0.9 and by_type["all"]["recall@10"] >= 0.9
    assert 0 < by_type["all"]["mrr"] <= 1
