"""BM25 matrices built from flat token arrays: the very scores bm25s computes."""

from __future__ import annotations

from pathlib import Path

import bm25s
import numpy as np

from assistant import corpus
from assistant.index.bm25 import _corpus_tokens, tokenize
from assistant.index.bm25_arrays import ArrayBM25, TokenArrays, pair_buckets, word_hash
from assistant.types import Abstract

DATA = Path(__file__).resolve().parent.parent / "data"


def _columns(model: bm25s.BM25) -> dict[str, tuple[list[int], list[float]]]:
    """Term → (rows, scores) of a bm25s index, whatever the order of its columns."""
    data, indices, indptr = model.scores["data"], model.scores["indices"], model.scores["indptr"]
    return {
        term: (indices[indptr[c] : indptr[c + 1]].tolist(), data[indptr[c] : indptr[c + 1]].tolist())
        for term, c in model.vocab_dict.items()
        if term
    }


def test_scores_equal_bm25s_own_build_on_real_abstracts() -> None:
    abstracts = [a for a in corpus.load(sorted(DATA.glob("*.txt"))) if isinstance(a, Abstract)][:120]
    texts = [a.text for a in abstracts] + ["the of and", "Gene gene gene expression."]  # an empty document, repeats
    expected = bm25s.BM25(k1=0.9, b=0.4)
    expected.index(tokenize(texts), show_progress=False)
    built = ArrayBM25(k1=0.9, b=0.4)
    built.index_arrays(TokenArrays.empty().extended(_corpus_tokens, texts))
    assert _columns(built) == _columns(expected), "same rows and bit-identical scores per term"
    assert set(built.vocab_dict) == set(expected.vocab_dict)
    query = tokenize(["protein structure prediction with language models"])[0]
    assert np.array_equal(built.get_scores(query), expected.get_scores(query))


def test_extending_in_steps_equals_one_build_and_survives_saving(tmp_path: Path) -> None:
    texts = ["Zeolite catalysts crack hydrocarbons.", "Perovskite cells degrade.", "Zeolite pores and perovskite films."]
    once = TokenArrays.empty().extended(_corpus_tokens, texts)
    steps = TokenArrays.empty().extended(_corpus_tokens, texts[:1]).extended(_corpus_tokens, texts[1:])
    np.savez(tmp_path / "tokens.npz", **steps.arrays())
    with np.load(tmp_path / "tokens.npz") as saved:
        loaded = TokenArrays.from_arrays(saved)
    assert loaded.vocabulary == steps.vocabulary and np.array_equal(loaded.ids, steps.ids)
    for tokens in (once, loaded):
        assert [[tokens.vocabulary[i] for i in tokens.ids[a:b]] for a, b in zip(tokens.offsets, tokens.offsets[1:])] == tokenize(texts)
    first, second = ArrayBM25(k1=0.9, b=0.4), ArrayBM25(k1=0.9, b=0.4)
    first.index_arrays(once)
    second.index_arrays(loaded)
    assert _columns(first) == _columns(second)


def test_pairs_stay_within_a_document() -> None:
    tokens = TokenArrays.empty().extended(_corpus_tokens, ["gene expression", "yeast", "cell cycle arrest"])
    pairs = tokens.pairs()
    assert pairs.lengths.tolist() == [1, 0, 2], "no pair joins 'expression' to 'yeast' or 'yeast' to 'cell'"
    hashes = word_hash(["gene", "express"])
    assert pairs.vocabulary[pairs.ids[0]] == format(int(pair_buckets(hashes[:1], hashes[1:])[0]), "x")
