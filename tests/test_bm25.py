"""The BM25 index stays in step with Chroma: after ingest, reset, restart and crashes."""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from assistant import Assistant
from assistant.index.bm25 import Bm25Index, phrase_terms, tokenize
from assistant.index.bm25_arrays import PHRASE_BUCKETS
from assistant.index.store import ChromaStore
from assistant.types import Abstract


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in rows))
    return path


def _built(tmp_path: Path, texts: dict[str, str], titles: dict[str, str] | None = None) -> Bm25Index:
    """A BM25 index over abstracts given as id → text (and id → title for titled ones)."""
    titles = titles or {}
    index = Bm25Index(tmp_path / "bm25", k1=0.9, b=0.4, title_weight=1)
    index.build([Abstract(id=i, text=t, title=titles.get(i, ""), source="x", titled=i in titles) for i, t in texts.items()])
    return index


def test_bm25_follows_incremental_ingest_reset_and_restart(tmp_path: Path) -> None:
    first = _write(tmp_path / "a.jsonl", [{"id": "a1", "title": "Zeolite catalysts", "abstract": "Zeolite catalysts crack hydrocarbons at lower temperature than clays."}])
    second = _write(tmp_path / "b.jsonl", [{"id": "b1", "title": "Perovskite cells", "abstract": "Perovskite solar cells degrade under humidity unless encapsulated."}])
    assistant = Assistant(data_dir=tmp_path / "index", auto_ingest=False)
    assistant.ingest([first])
    assert [i for i, _ in assistant.bm25.search("perovskite humidity", 5)] == []
    assistant.ingest([second])
    assert [i for i, _ in assistant.bm25.search("perovskite humidity", 5)] == ["b1"]
    assert sorted(assistant.bm25.ids) == ["a1", "b1"]

    restarted = Assistant(data_dir=tmp_path / "index", auto_ingest=False)
    assert restarted.bm25.ids == assistant.bm25.ids, "loaded from disk"
    assert restarted.search("zeolite", k=1)[0].lexical > 0

    restarted.reset()
    assert restarted.bm25.ids == [] and restarted.search("zeolite", k=1) == []
    assert not (tmp_path / "index" / "bm25" / "abstracts").exists()


def test_bm25_is_rebuilt_when_its_files_are_missing_or_stale(tmp_path: Path) -> None:
    source = _write(tmp_path / "a.jsonl", [{"id": "a1", "abstract": "Graphene membranes filter salt from seawater efficiently."}])
    Assistant(data_dir=tmp_path / "index", auto_ingest=False).ingest([source])
    shutil.rmtree(tmp_path / "index" / "bm25")
    assert Assistant(data_dir=tmp_path / "index", auto_ingest=False).search("graphene seawater", k=1)[0].lexical > 0
    other_params = Assistant(data_dir=tmp_path / "index", auto_ingest=False, bm25_k1=1.5)
    assert other_params.bm25.model is None, "an index saved with other parameters is not used"
    assert other_params.search("graphene seawater", k=1)[0].lexical > 0


def test_another_process_ingesting_is_picked_up(tmp_path: Path) -> None:
    source = _write(tmp_path / "a.jsonl", [{"id": "a1", "abstract": "Tokamak plasma confinement improves with negative triangularity shaping."}])
    reader = Assistant(data_dir=tmp_path / "index", auto_ingest=False, index_check_seconds=0)
    assert reader.search("tokamak", k=1) == []
    Assistant(data_dir=tmp_path / "index", auto_ingest=False).ingest([source])
    assert reader.search("tokamak triangularity", k=1)[0].lexical > 0


def test_an_index_opened_at_the_generation_its_bm25_was_built_at_lists_no_ids(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Listing every committed id took 6 s and 2.7 GB at a million abstracts: a process
    opening an unchanged index, or one another process already brought BM25 in step with,
    does not list them."""
    first = _write(tmp_path / "a.jsonl", [{"id": "a1", "abstract": "Tokamak plasma confinement improves with negative triangularity."}])
    second = _write(tmp_path / "b.jsonl", [{"id": "b1", "abstract": "Stellarator coils are optimised for quasi-symmetry."}])
    Assistant(data_dir=tmp_path / "index", auto_ingest=False).ingest([first])
    listed: list[int] = []
    unlisted = ChromaStore.indexed_id_list
    monkeypatch.setattr(ChromaStore, "indexed_id_list", lambda store: listed.append(1) or unlisted(store))

    reader = Assistant(data_dir=tmp_path / "index", auto_ingest=False, index_check_seconds=0)
    assert reader.search("tokamak", k=1)[0].lexical > 0 and listed == []
    Assistant(data_dir=tmp_path / "index", auto_ingest=False).ingest([second])
    assert listed, "the ingest's BM25 update compares the ids"
    listed.clear()
    assert reader.search("stellarator coils", k=1)[0].lexical > 0 and listed == [], "loaded what the writer saved"
    (tmp_path / "index" / "bm25" / "abstracts" / "generation.json").unlink()
    assert Assistant(data_dir=tmp_path / "index", auto_ingest=False).search("stellarator", k=1)[0].lexical > 0
    assert len(listed) == 1, "an index saved without the note: the ids are compared once, and it is noted"
    assert Assistant(data_dir=tmp_path / "index", auto_ingest=False).search("stellarator", k=1)[0].lexical > 0
    assert len(listed) == 1


def test_coverage_is_the_share_of_the_question_terms_idf_an_abstract_contains(tmp_path: Path) -> None:
    texts = {
        "g": "Graph networks predict molecular properties.",
        "s": "Sparse attention scales transformers to long inputs.",
        "m": "Graph attention for molecular graphs.",
    }
    index = _built(tmp_path, texts)

    def idf(containing: int) -> float:  # Lucene's IDF over the 3 abstracts
        return math.log(1 + (3 - containing + 0.5) / (containing + 0.5))

    # "graph" is in 2 abstracts, "sparse" in 1, "unicorns" in none; "how many" and "and" do not count
    coverage = index.coverage("How many graph and sparse unicorns?", ["g", "s", "m", "unknown"])
    total = idf(2) + idf(1) + idf(0)
    assert coverage == pytest.approx({"g": idf(2) / total, "s": idf(1) / total, "m": idf(2) / total, "unknown": 0.0})
    assert index.coverage("what which how", ["g"]) == {"g": 0.0}, "a question of question words covers nothing"


def test_containing_lists_the_abstracts_holding_every_token_of_a_name(tmp_path: Path) -> None:
    texts = {"t": "Time-MoE scales time series models.", "m": "MoE layers route tokens.", "s": "Time series forecasting."}
    index = _built(tmp_path, texts)
    assert index.containing("Time-MoE") == ["t"]  # "time" is in 2, "moe" in 2, both only in "t"
    assert sorted(index.containing("time")) == ["s", "t"] and index.containing("unicorn") == []
    assert index.containing("the") == [], "stop words are no terms"
    assert index.containing("time", limit=1) == [] and index.containing("Time-MoE", limit=1) == ["t"], "over the limit: none"


def test_acronyms_are_kept_as_written_and_reloaded(tmp_path: Path) -> None:
    texts = {
        "b": "LIMIT is a benchmark of retrieval limits.",
        "l": "We limit the context to 512 tokens; the LIMITS of PCR matter.",
        "t": "A DNA test and the DNA repair pathway.",
    }
    index = _built(tmp_path, texts, titles={"t": "BRCA1 in PCR"})
    assert sorted(index.containing("limit")) == ["b", "l"], "BM25 is case-blind and stems"
    assert index.with_acronym("LIMIT") == ["b"], "a whole word, as written"
    assert sorted(index.with_acronym("PCR")) == ["l", "t"] and index.with_acronym("BRCA1") == ["t"], "titles count"
    assert index.with_acronym("PCR", limit=1) == [] and index.with_acronym("RNA") == []
    reloaded = Bm25Index(tmp_path / "bm25", k1=0.9, b=0.4, title_weight=1)
    assert reloaded.with_acronym("DNA") == ["t"] and sorted(reloaded.with_acronym("PCR")) == ["l", "t"]


def test_search_ranks_like_bm25s_and_keeps_only_positive_scores(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    words = [f"w{n}" for n in range(40)]
    texts = {str(n): " ".join(rng.choice(words, size=12)) for n in range(300)}
    index = _built(tmp_path, texts)
    query = "w1 w2 w3"
    docs, scores = index.model.retrieve([tokenize([query])[0]], k=len(texts), show_progress=False)
    expected = [(index.ids[int(d)], float(s)) for d, s in zip(docs[0], scores[0], strict=True) if s > 0]
    got = index.search(query, 20)
    assert [s for _, s in got] == pytest.approx([s for _, s in expected[:20]])
    assert {i for i, _ in got} <= {i for i, s in expected if s >= expected[19][1]}
    assert len(index.search(query, 1000)) == len(expected) < len(texts), "abstracts without a query word are left out"


def test_phrase_terms_are_hashed_ordered_word_pairs() -> None:
    pairs = phrase_terms(["gene", "express", "cell"])
    assert len(pairs) == 2 and pairs[0] != phrase_terms(["express", "gene"])[0], "order matters"
    assert pairs == phrase_terms(["gene", "express", "cell"]), "stable across calls (and processes: word CRC-32s)"
    assert all(int(term, 16) < PHRASE_BUCKETS for term in pairs)
    assert phrase_terms(["gene"]) == [] and phrase_terms([]) == []


def test_phrase_search_ranks_adjacent_words_first_and_follows_filters(tmp_path: Path) -> None:
    texts = {
        "apart": "Expression of a gene under stress, measured in yeast cells.",
        "adjacent": "Gene expression under stress, measured in yeast cells.",
        "other": "Protein folding kinetics in bacteria.",
    }
    abstracts = [Abstract(id=i, text=t, title="", source=f"{i}.jsonl", titled=False) for i, t in texts.items()]
    index = Bm25Index(tmp_path / "bm25", k1=0.9, b=0.4, title_weight=1)
    index.build(abstracts)
    # plain BM25 cannot tell the two apart (same words); the phrase side can
    assert {i for i, _ in index.search("gene expression", 5)} == {"apart", "adjacent"}
    assert [i for i, _ in index.search_phrases("gene expression", 5)] == ["adjacent"]
    assert index.search_phrases("expression", 5) == [], "one word has no pairs"
    assert Bm25Index(tmp_path / "bm25", k1=0.9, b=0.4, title_weight=1).search_phrases("gene expression", 5)[0][0] == "adjacent"
    mask = np.array([a.source != "adjacent.jsonl" for a in abstracts], dtype=np.float32)
    assert index.search_phrases("gene expression", 5, mask) == []


def test_phrases_off_or_absent_build_no_phrase_index(tmp_path: Path) -> None:
    abstracts = [Abstract(id="a", text="Gene expression in yeast.", title="", source="x", titled=False)]
    off = Bm25Index(tmp_path / "off", k1=0.9, b=0.4, title_weight=1, phrases=False)
    off.build(abstracts)
    assert off.search_phrases("gene expression", 5) == [] and not (tmp_path / "off" / "phrases").exists()
    assert off.search("gene expression", 5)[0][0] == "a"
    one_word = Bm25Index(tmp_path / "one", k1=0.9, b=0.4, title_weight=1)
    one_word.build([Abstract(id="w", text="Photosynthesis.", title="", source="x", titled=False)])
    assert one_word.search("photosynthesis", 5)[0][0] == "w" and one_word.search_phrases("photosynthesis rate", 5) == []


def _reader(records: dict[str, Abstract]) -> tuple[Callable[[list[str]], list[Abstract]], list[list[str]]]:
    """A `Bm25Index.update` reader of these records, and the list of the ids it was asked for."""
    asked: list[list[str]] = []

    def read(ids: list[str]) -> list[Abstract]:
        asked.append(sorted(ids))
        return [records[i] for i in ids]

    return read, asked


def test_update_reads_only_new_abstracts_and_scores_like_a_full_build(tmp_path: Path) -> None:
    records = {
        "a": Abstract(id="a", text="Zeolite catalysts crack hydrocarbons; see LIMIT.", title="Zeolites", source="x", titled=True),
        "b": Abstract(id="b", text="Perovskite solar cells degrade under humidity.", title="", source="y", year=2021),
        "c": Abstract(id="c", text="Zeolite pores host perovskite nanocrystals; DNA too.", title="", source="y", year=2023),
    }
    read, asked = _reader(records)
    index = Bm25Index(tmp_path / "bm25", k1=0.9, b=0.4, title_weight=1)
    index.update(["a", "b"], read)
    index = Bm25Index(tmp_path / "bm25", k1=0.9, b=0.4, title_weight=1)  # reloaded from disk
    index.update(["a", "b", "c"], read)
    assert asked == [["a", "b"], ["c"]], "the second update reads and tokenizes only the new abstract"
    full = _built(tmp_path / "full", {i: r.text for i, r in records.items()}, titles={"a": "Zeolites"})
    for query in ("zeolite perovskite", "perovskite nanocrystals", "zeolite catalysts"):
        assert index.search(query, 5) == pytest.approx(full.search(query, 5))
        assert index.search_phrases(query, 5) == pytest.approx(full.search_phrases(query, 5))
    assert index.with_acronym("LIMIT") == ["a"] and index.with_acronym("DNA") == ["c"]
    assert index.years.tolist() == [0, 2021, 2023] and index.sources.tolist() == ["x", "y", "y"]
    index.update(["b", "c"], read)
    assert asked[-1] == ["b", "c"] and sorted(index.ids) == ["b", "c"], "a removed abstract means a full rebuild"
    assert index.search("zeolite catalysts", 5)[0][0] == "c"


def test_update_takes_up_what_another_process_saved(tmp_path: Path) -> None:
    records = {i: Abstract(id=i, text=f"Catalyst number {i} in zeolite pores.", title="", source="x") for i in "abcd"}
    read, asked = _reader(records)
    writer = Bm25Index(tmp_path / "bm25", k1=0.9, b=0.4, title_weight=1)
    writer.update(["a", "b"], read)
    reader = Bm25Index(tmp_path / "bm25", k1=0.9, b=0.4, title_weight=1)
    writer.update(["a", "b", "c"], read)
    reader.update(["a", "b", "c"], read)
    assert asked == [["a", "b"], ["c"]] and sorted(reader.ids) == ["a", "b", "c"], "loaded, not rebuilt"
    for model in (reader.model, reader.phrase_model, writer.model, writer.phrase_model):
        assert isinstance(model.scores["data"], np.memmap) and isinstance(model.scores["indices"], np.memmap)
    writer.update(["a", "b", "c", "d"], read)
    assert asked[-1] == ["d"] and reader.search("zeolite", 10) != writer.search("zeolite", 10), (
        "the reader still maps the files the writer replaced"
    )
    reader.update(["a", "b", "c", "d"], read)
    assert asked[-1] == ["d"] and len(asked) == 3 and reader.search("zeolite", 10) == writer.search("zeolite", 10)


def test_abstracts_of_stop_words_only_are_indexed_without_terms(tmp_path: Path) -> None:
    records = {
        "s": Abstract(id="s", text="It is not that, and if it was, then it will be, as they are, to be, or not to be.", title="", source="x"),
        "r": Abstract(id="r", text="Ribosome profiling of yeast under heat stress.", title="", source="x"),
    }
    read, _ = _reader(records)
    index = Bm25Index(tmp_path / "bm25", k1=0.9, b=0.4, title_weight=1)
    index.update(["s"], read)
    assert index.ids == ["s"] and index.search("ribosome", 5) == [] and index.search("to be", 5) == []
    index.update(["s", "r"], read)
    assert [i for i, _ in index.search("ribosome yeast", 5)] == ["r"]


def test_a_build_reads_a_stream_in_pages_and_a_failed_read_keeps_the_saved_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full build tokenizes the abstracts a page at a time as they are read (a million of
    them are 3.7 GB), and a read that fails half-way (Chroma gone) changes nothing on disk."""
    import assistant.index.bm25 as bm25_module
    import assistant.index.bm25_arrays as arrays_module

    monkeypatch.setattr(arrays_module, "_PAGE", 2)
    records = {i: Abstract(id=i, text=f"Zeolite {word} sample {i} from CERN.", title="", source="x")
               for i, word in zip("abcde", ["pores", "catalysts", "membranes", "films", "cages"])}
    read: list[str] = []
    read_when_tokenized: list[int] = []

    def stream(ids: list[str]) -> Iterator[Abstract]:
        for i in ids:
            read.append(i)
            yield records[i]

    def tokenize_page(texts: list[str]):  # noqa: ANN202 - bm25s's own return type
        read_when_tokenized.append(len(read))
        return tokenize_ids(texts)

    tokenize_ids = bm25_module._corpus_tokens
    monkeypatch.setattr(bm25_module, "_corpus_tokens", tokenize_page)
    index = Bm25Index(tmp_path / "bm25", k1=0.9, b=0.4, title_weight=1)
    index.update(["a", "b", "c"], stream)
    assert read_when_tokenized == [2, 3], "each page is tokenized before the next is read"
    full = _built(tmp_path / "full", {i: r.text for i, r in records.items() if i in "abc"})
    assert index.search("zeolite catalysts", 5) == pytest.approx(full.search("zeolite catalysts", 5))
    assert index.with_acronym("CERN") == ["a", "b", "c"]

    def failing(ids: list[str]) -> Iterator[Abstract]:
        yield records[ids[0]]
        raise ConnectionError("Chroma server went away")

    with pytest.raises(ConnectionError):
        index.build(failing(list(records)))
    assert index.model is None and index.ids == [], "not half-built in memory"
    reloaded = Bm25Index(tmp_path / "bm25", k1=0.9, b=0.4, title_weight=1)
    assert sorted(reloaded.ids) == ["a", "b", "c"], "the saved index is untouched"
    assert reloaded.search("zeolite catalysts", 5) == pytest.approx(full.search("zeolite catalysts", 5))
    index.update(list(records), stream)
    assert sorted(index.ids) == list("abcde") and index.search("cages", 5)[0][0] == "e"


def test_an_index_without_its_saved_tokens_is_rebuilt_from_every_record(tmp_path: Path) -> None:
    """An index saved before token ids were, or whose tokens file is damaged: the update
    cannot add to it, so it reads every abstract and builds anew."""
    records = {i: Abstract(id=i, text=f"Catalyst number {i} in zeolite pores.", title="", source="x") for i in "abc"}
    read, asked = _reader(records)
    index = Bm25Index(tmp_path / "bm25", k1=0.9, b=0.4, title_weight=1)
    index.update(["a", "b"], read)
    (tmp_path / "bm25" / "tokens.npz").write_bytes(b"not a zip file")
    index = Bm25Index(tmp_path / "bm25", k1=0.9, b=0.4, title_weight=1)
    index.update(["a", "b", "c"], read)
    assert asked[-1] == ["a", "b", "c"] and sorted(index.ids) == ["a", "b", "c"]
    full = _built(tmp_path / "full", {i: r.text for i, r in records.items()})
    assert index.search("zeolite catalyst c", 5) == pytest.approx(full.search("zeolite catalyst c", 5))
    records["d"] = Abstract(id="d", text="Catalyst number d in zeolite pores.", title="", source="x")
    index.update(["a", "b", "c", "d"], read)
    assert asked[-1] == ["d"], "its tokens were saved anew: the next update adds to it"
