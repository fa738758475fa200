"""The Chroma store: a real `chroma run` server, replicas sharing one, the embedder-mismatch
error, cosine space."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from assistant import Abstract, Assistant, Chunk, corpus
from assistant.index import store as store_module
from assistant.index.chunking import chunk
from assistant.index.store import ChromaStore, EmbedderMismatchError, StoreError
from assistant.settings import BUNDLED_CORPUS, Settings

from conftest import SAMPLE_UNIQUE, ChromaServer, free_port


@pytest.fixture
def chroma_server(tmp_path: Path) -> Iterator[int]:
    """A real Chroma server on a free localhost port, stopped after the test."""
    server = ChromaServer(tmp_path / "server-data").start()
    yield server.port
    server.stop()


@pytest.mark.slow
def test_ingest_into_a_chroma_server(chroma_server: int, tmp_path: Path) -> None:
    assistant = Assistant(data_dir=tmp_path / "local", chroma_host="127.0.0.1", chroma_port=chroma_server,
                          auto_ingest=False)
    report = assistant.ingest([BUNDLED_CORPUS])
    assert (report.added, report.duplicates) == (SAMPLE_UNIQUE, 7)
    assert assistant.ingest([BUNDLED_CORPUS]).added == 0
    assert assistant.stats()["abstracts"] == SAMPLE_UNIQUE
    assert not (tmp_path / "local" / "chroma").exists(), "server mode must not write embedded Chroma"
    hits = assistant.search("adaptive gradient clipping without batch normalization", k=3)
    assert hits[0].abstract.text.startswith("Batch normalization is a key component")
    formats = Path(__file__).parent / "data" / "formats"
    assistant.ingest([formats / "pubmed.xml"])
    from_zotero = assistant.ingest([formats / "library.ris"])  # the fasting trial, found by DOI on the server
    assert (from_zotero.added, from_zotero.by_identifier) == (1, 1)
    [stored] = assistant.store.get_abstracts(["pmid:99000001"]).values()
    assert (stored.doi, stored.pmid, stored.arxiv_id) == ("10.5555/exmp.2024.001", "99000001", None)


def _papers(path: Path, prefix: str, count: int, topic: str) -> Path:
    rows = [{"id": f"{prefix}{n}", "title": f"{topic.capitalize()} study {n}",
             "abstract": f"We measure how {topic} changes with temperature in sample {n}, across {n + 3} trials."}
            for n in range(count)]
    path.write_text("\n".join(map(json.dumps, rows)))
    return path


@pytest.mark.slow
def test_replicas_with_their_own_data_dirs_find_what_the_other_ingests(
    chroma_server: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two views of one Chroma server with their own data dirs (so their own lexical indexes),
    as two app processes would be: what one ingests the other finds, on both sides, at its next
    look at the index, by adding the new abstracts to its lexical index, not rebuilding it."""
    common = {"chroma_host": "127.0.0.1", "chroma_port": chroma_server, "auto_ingest": False}
    one = Assistant(data_dir=tmp_path / "one", **common)
    other = Assistant(data_dir=tmp_path / "other", **common)
    one.ingest([_papers(tmp_path / "seed.jsonl", "seed", 20, "graphene conductivity")])
    assert len(other.search("graphene conductivity temperature", k=30)) == 20  # its lexical index built here
    rebuilds = []
    monkeypatch.setattr(other.bm25, "build", lambda abstracts: rebuilds.append(list(abstracts)))
    new = tmp_path / "new.jsonl"
    new.write_text(json.dumps({"id": "zorb", "title": "Zorbulite lattices",
                               "abstract": "Zorbulite lattices conduct heat anisotropically below 40 kelvin."}))
    assert one.ingest([new]).added == 1
    deadline, hits = time.monotonic() + 60, []
    while time.monotonic() < deadline and not (hits := [h for h in other.search("zorbulite lattice heat", k=5)
                                                        if h.abstract.id == "zorb" and h.lexical is not None]):
        time.sleep(0.5)
    [hit] = hits
    assert hit.dense is not None, "found by both sides"
    assert rebuilds == [] and len(other.bm25.ids) == 21


@pytest.mark.slow
def test_two_replicas_starting_together_on_an_empty_server_index_the_corpus_once(
    chroma_server: int, tmp_path: Path
) -> None:
    """Both start on an empty server and ingest the bundled corpus at once (auto_ingest): their
    batches of the same papers interleave, and the index ends with every abstract and chunk
    once, nothing left pending. (The next test pins down the recovery side of such a race.)"""
    common = {"chroma_host": "127.0.0.1", "chroma_port": chroma_server}
    replicas = [Assistant(data_dir=tmp_path / name, **common) for name in ("one", "other")]
    with ThreadPoolExecutor(2) as pool:
        reports = list(pool.map(lambda replica: replica.ensure_corpus(), replicas))
    assert all(r is not None for r in reports)
    store = replicas[0].store
    unique = {a.id: a for a in corpus.load([BUNDLED_CORPUS]) if isinstance(a, Abstract)}
    assert store.count() == len(unique) == SAMPLE_UNIQUE
    assert store.chunk_count() == sum(len(chunk(a, 128, 16)) for a in unique.values())
    assert len(store.abstracts.get(include=[])["ids"]) == SAMPLE_UNIQUE  # nothing left pending
    assert len(replicas[1].search("adaptive gradient clipping without batch normalization", k=3)) == 3


@pytest.mark.slow
def test_recovery_leaves_another_replicas_batch_being_written_and_clears_a_stale_one(
    chroma_server: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    common = {"chroma_host": "127.0.0.1", "chroma_port": chroma_server, "auto_ingest": False}
    one = Assistant(data_dir=tmp_path / "one", **common)
    other = Assistant(data_dir=tmp_path / "other", **common)
    batch = [a for a in corpus.load([_papers(tmp_path / "b.jsonl", "b", 3, "perovskite stability")])
             if isinstance(a, Abstract)]
    pieces = [c for a in batch for c in chunk(a, 128, 16)]
    vectors = one.embedder.embed([c.text for c in pieces])
    one.store.begin(batch, vectors[: len(batch)])  # one is mid-batch ...
    one.store.add_chunks(pieces, vectors, {a.key: a for a in batch})
    other.ingest([_papers(tmp_path / "c.jsonl", "c", 2, "zeolite adsorption")])  # ... when the other ingests
    one.store.commit(batch)
    assert one.store.indexed_ids(a.key for a in batch) == {"b0", "b1", "b2"}
    assert one.store.chunk_count() == len(pieces) + 2

    one.store.begin(batch[:1], vectors[:1])  # pending again: a writer that died mid-batch ...
    assert other.store.recover() == 0
    monkeypatch.setattr(store_module, "STALE_PENDING_SECONDS", -1)  # ... long enough ago
    assert other.store.recover() == 1 and one.store.indexed_ids(["b0"]) == set()


def test_unreachable_chroma_server_is_a_clear_error(tmp_path: Path) -> None:
    assistant = Assistant(data_dir=tmp_path, chroma_host="127.0.0.1", chroma_port=free_port())
    with pytest.raises(StoreError, match="cannot reach the Chroma server"):
        assistant.stats()


def test_vector_files_chroma_cannot_replay_its_log_into_say_both_causes_and_both_fixes(tmp_path: Path) -> None:
    """Chroma's error when its vector files and write log disagree (the text it raised on a
    1M-abstract index after a killed ingest; a stand-in, as a real one takes a kill at the
    right moment): a full or read-only disk, rerun; else the index must be built again."""
    import chromadb.errors

    from assistant.index.store import _explanation

    error = chromadb.errors.InternalError("Error executing plan: Error sending backfill request to compactor: "
                                          "Failed to apply logs to the hnsw segment writer")
    message = str(_explanation(Settings(data_dir=tmp_path), error))
    assert "disk full or read-only" in message and "run the ingest again" in message
    assert "no longer match its write log" in message and "assistant reset" in message


def test_opening_an_index_with_another_embedder_is_an_error(tmp_path: Path) -> None:
    ChromaStore(Settings(data_dir=tmp_path), embedder_id="openai:text-embedding-3-small")
    with pytest.raises(EmbedderMismatchError, match="built with embedder 'openai:text-embedding-3-small'"):
        Assistant(data_dir=tmp_path).stats()


def test_opening_an_index_with_other_chunk_settings_is_an_error(tmp_path: Path) -> None:
    """New abstracts chunked otherwise would mix with the old ones, and a search rebuilds an
    abstract's chunk ids from the configured settings."""
    ChromaStore(Settings(data_dir=tmp_path), embedder_id="any")
    with pytest.raises(StoreError, match="chunked with 128/16.*64/16 is configured"):
        ChromaStore(Settings(data_dir=tmp_path, chunk_size=64), embedder_id="any")
    assert ChromaStore(Settings(data_dir=tmp_path), embedder_id="any").chunks.metadata["chunking"] == "128/16"


def test_an_index_written_by_an_older_version_is_a_clear_error(tmp_path: Path) -> None:
    """A ledger without the current format marker (text stored as Chroma documents) is
    refused with the command that fixes it, instead of failing later on a missing field."""
    store = ChromaStore(Settings(data_dir=tmp_path), embedder_id="any")
    store.abstracts.modify(metadata={"embedder": "any", "format": 1})
    with pytest.raises(StoreError, match="older version.*assistant reset"):
        ChromaStore(Settings(data_dir=tmp_path), embedder_id="any")


def test_ledger_keeps_abstract_text_out_of_chroma_documents(tmp_path: Path) -> None:
    """Embedded Chroma full-text-indexes every document; the ledger keeps its text in
    metadata so ingest does not pay for an index nothing queries."""
    source = tmp_path / "one.jsonl"
    source.write_text('{"id": "a", "title": "Folding", "text": "An abstract about protein folding with transformers."}\n')
    assistant = Assistant(data_dir=tmp_path / "index", auto_ingest=False)
    assert assistant.ingest([source]).added == 1
    record = assistant.store.abstracts.get(ids=["a"], include=["documents", "metadatas"])
    assert record["documents"] == [None]
    assert record["metadatas"][0]["status"] == "done"
    assert assistant.store.get_abstracts(["a"])["a"].text == "An abstract about protein folding with transformers."


FORMATS = Path(__file__).parent / "data" / "formats"


def test_deduplication_by_identifier_reads_by_id_and_counts_done_abstracts_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finding a DOI or PMID already indexed reads identity records by id: Chroma scans the
    whole collection for any ``where`` (140 ms a batch at 900,000 abstracts). The record a
    killed ingest left, or a deleted library's, matches nothing."""
    assistant = Assistant(data_dir=tmp_path / "index", auto_ingest=False)
    store = assistant.store
    killed = Abstract(id="killed", title="", source="s", text="An abstract a killed ingest left.", doi="10.5555/same")
    store.begin([killed], np.ones((1, 384), dtype=np.float32))
    assert store.indexed_identity(["doi:10.5555/same"], ["shared"]) == set(), "pending: not indexed yet"
    assert store.recover() == 1
    record = {"id": "kept", "title": "Kept", "doi": "10.5555/same", "pmid": "77",
              "abstract": "A perfectly fine abstract about sparse retrieval models."}
    source = tmp_path / "one.jsonl"
    source.write_text(json.dumps(record) + "\n")
    assert assistant.ingest([source]).added == 1, "the killed ingest's identity record did not count"

    wheres: list[Any] = []
    for collection in (store.abstracts, store.identities):
        get = collection.get
        monkeypatch.setattr(collection, "get", lambda get=get, **kw: (wheres.append(kw.get("where")), get(**kw))[1])
    keys = ["doi:10.5555/same", "pmid:77", "pmid:78"]
    assert store.indexed_identity(keys, ["shared", "user:bob"]) == {"doi:10.5555/same", "pmid:77"}
    assert store.indexed_identity(keys, ["user:bob"]) == set(), "another library's copy is not looked at"
    assert wheres and not any(wheres), "read by id only"
    monkeypatch.undo()

    source.write_text(json.dumps({**record, "id": "other-export"}) + "\n")
    report = assistant.ingest([source])
    assert (report.added, report.by_identifier) == (0, 1)
    assert store.delete_library("shared") == 1
    assert store.identities.count() == 0
    assert assistant.ingest([source]).added == 1


def test_an_index_from_before_identity_records_gets_them_when_opened(tmp_path: Path) -> None:
    """An index written before identity records existed is read through once when opened,
    so a paper it holds is still found by its DOI."""
    assistant = Assistant(data_dir=tmp_path / "index", auto_ingest=False)
    assert assistant.ingest([FORMATS / "pubmed.xml"]).added == 2
    store = assistant.store
    store.client.delete_collection(f"{store.settings.collection}_identities")
    store.abstracts.modify(metadata={**store.abstracts.metadata, "identities": 0})
    reopened = Assistant(data_dir=tmp_path / "index", auto_ingest=False)
    held = sum(len(a.identity) for a in reopened.store.read_abstracts())
    assert held and reopened.store.identities.count() == held, "one record per DOI and PMID of each paper"
    from_zotero = reopened.ingest([FORMATS / "library.ris"])  # the fasting trial, found by DOI
    assert (from_zotero.added, from_zotero.by_identifier) == (1, 1)


def test_chunks_use_cosine_distance_and_the_ledger_keeps_no_chunk_vectors(tmp_path: Path) -> None:
    """Chunk vectors are compared by cosine (Chroma's default is L2). The ledger and the
    identity records hold one-number placeholders: Chroma reads a collection's vectors whole
    at its first read, and nothing searches these two."""
    source = tmp_path / "one.jsonl"
    source.write_text('{"id": "a", "doi": "10.5555/a", "text": "An abstract about protein folding with transformers."}\n')
    assistant = Assistant(data_dir=tmp_path / "index", auto_ingest=False)
    assert assistant.ingest([source]).added == 1
    store = assistant.store
    assert store.chunks.configuration_json["hnsw"]["space"] == "cosine"
    assert len(store.chunks.get(limit=1, include=["embeddings"])["embeddings"][0]) == 384
    for collection in (store.abstracts, store.identities):
        assert len(collection.get(include=["embeddings"])["embeddings"][0]) == 1


def test_a_ledger_of_format_2_keeps_its_mean_vectors(tmp_path: Path) -> None:
    """An index whose ledger holds mean chunk vectors (format 2, before placeholders) is
    still written to in its own format: Chroma refuses vectors of another dimension."""
    store = ChromaStore(Settings(data_dir=tmp_path), embedder_id="any")
    store.client.delete_collection(store.abstracts.name)
    store.client.create_collection(store.abstracts.name, configuration={"hnsw": {"space": "cosine"}},
                                   metadata={"embedder": "any", "format": 2, "libraries": 1, "identities": 1})
    store = ChromaStore(Settings(data_dir=tmp_path), embedder_id="any")
    first = Abstract(id="a", title="", source="s", text="An abstract on a topic of its own.")
    store.begin([first], np.ones((1, 16), dtype=np.float32))
    store.commit([first])
    assert store.has_abstracts() and store.abstracts.metadata["format"] == 2
    assert len(store.abstracts.get(include=["embeddings"])["embeddings"][0]) == 16


def test_reset_empties_the_index(tmp_path: Path) -> None:
    source = tmp_path / "one.jsonl"
    source.write_text('{"id": "a", "text": "An abstract about protein folding with transformers."}\n')
    assistant = Assistant(data_dir=tmp_path / "index", auto_ingest=False)
    assert assistant.ingest([source]).added == 1 and assistant.store.has_abstracts()
    assistant.reset()
    assert assistant.stats()["abstracts"] == 0 and assistant.store.chunk_count() == 0
    assert not assistant.store.has_abstracts()
    assert assistant.ingest([source]).added == 1


def test_reset_frees_the_vector_files(tmp_path: Path) -> None:
    """Chroma leaves a deleted collection's vector files on disk (chroma-core/chroma#5259);
    a reset removes them, and only them: another collection in the same folder keeps its own."""
    source = tmp_path / "one.jsonl"
    source.write_text("\n".join(json.dumps({"id": f"a{i}", "doi": f"10.5555/{i}", "text": f"Abstract {i} about protein "
                                                 "folding with transformers, long enough to index."}) for i in range(3)))
    other = Assistant(data_dir=tmp_path / "index", collection="other", auto_ingest=False)
    assert other.ingest([source]).added == 3
    assistant = Assistant(data_dir=tmp_path / "index", auto_ingest=False)
    assert assistant.ingest([source]).added == 3
    chroma_dir = tmp_path / "index" / "chroma"
    before = {d.name for d in chroma_dir.iterdir() if d.is_dir()}
    mine = {d.name for d in assistant.store._vector_dirs(["abstracts", "abstracts_abstracts", "abstracts_identities"])}
    assert len(mine) == 3 and mine < before
    assistant.reset()
    after = {d.name for d in chroma_dir.iterdir() if d.is_dir()}
    assert not mine & after and before - mine <= after
    assert other.store.count() == 3 and other.search("protein folding", k=1)


def test_whether_any_abstract_is_indexed_is_read_past_pending_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The app's first check reads the ledger from its start, not through a ``where`` (43 s
    at 900,000 abstracts on a cold disk); records an ingest left pending are read past."""
    monkeypatch.setattr(store_module, "_FIRST", 1)
    store = ChromaStore(Settings(data_dir=tmp_path), embedder_id="any")
    abstracts = [Abstract(id=f"a{i}", title="", source="s", text=f"Abstract {i} on a topic of its own.") for i in range(3)]
    assert not store.has_abstracts()
    store.begin(abstracts[:2], np.ones((2, 8), dtype=np.float32))
    assert not store.has_abstracts(), "pending records are not indexed"
    store.begin(abstracts[2:], np.ones((1, 8), dtype=np.float32))
    store.commit(abstracts[2:])
    assert store.has_abstracts()


def test_whole_ledger_reads_go_page_by_page(sample_index: Assistant, monkeypatch: pytest.MonkeyPatch) -> None:
    """One Chroma `get` of ~100,000 records with metadata fails (SQLite's variable limit),
    so reading every abstract pages through the ledger; no page may lose or repeat one."""
    import assistant.index.store as store_module

    monkeypatch.setattr(store_module, "_PAGE", 47)
    everything = list(sample_index.store.read_abstracts())
    assert len(everything) == len({a.id for a in everything}) == SAMPLE_UNIQUE
    some = [a.id for a in everything[::3]]
    assert sorted(a.id for a in sample_index.store.read_abstracts(some)) == sorted(some), "by id, in pages of 47"
    assert sample_index.sources() == dict(sorted(Counter(a.source for a in everything).items())), (
        "the lexical index's count per file is the ledger's"
    )


def test_the_generation_token_changes_with_the_indexed_abstracts_only(tmp_path: Path) -> None:
    """Other processes notice a changed index by the ledger's generation token (counting
    the collections took 340 ms per check at a million abstracts); it must change on every
    commit, recovery and reset, and not on reads or on pending writes."""
    source = tmp_path / "one.jsonl"
    source.write_text('{"id": "a", "text": "An abstract about protein folding with transformers."}\n')
    assistant = Assistant(data_dir=tmp_path / "index", auto_ingest=False)
    store = assistant.store
    seen = [store.change_stamp()]
    assistant.ingest([source])
    seen.append(store.change_stamp())
    assistant.search("protein folding", k=1)
    assert store.change_stamp() == seen[-1], "reading does not change the index"
    pending = Abstract(id="b", title="", source="one.jsonl", text="A pending abstract that a killed ingest left behind.")
    store.begin([pending], np.ones((1, 384), dtype=np.float32))
    assert store.change_stamp() == seen[-1], "pending records are not indexed yet"
    assert store.recover() == 1
    seen.append(store.change_stamp())
    assistant.reset()
    seen.append(store.change_stamp())
    assert all(seen) and len(set(seen)) == len(seen), seen


def test_every_write_fits_chromas_max_batch_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch of abstracts whose chunks outnumber Chroma's max batch size (5,461 embedded) is
    written in pieces that fit it: before, one long record made the whole file fail."""
    store = ChromaStore(Settings(data_dir=tmp_path), embedder_id="any")
    monkeypatch.setattr(store.client, "get_max_batch_size", lambda: 3)
    sizes: list[int] = []
    add = store.chunks.add
    monkeypatch.setattr(store.chunks, "add", lambda **kw: (sizes.append(len(kw["ids"])), add(**kw))[1])
    abstracts = [Abstract(id=f"a{i}", title="", source="s", text=f"Abstract {i} on a topic of its own.") for i in range(4)]
    chunks = [Chunk(id=f"a{i}#{n}", abstract_id=f"a{i}", index=n, text=f"piece {n}") for i in range(4) for n in range(2)]
    vectors = np.eye(8, 16, dtype=np.float32)
    store.begin(abstracts, vectors[:4])
    store.add_chunks(chunks, vectors, {a.id: a for a in abstracts})
    store.commit(abstracts)
    assert store.count() == 4 and store.chunk_count() == 8
    assert sizes and max(sizes) <= 3 and sum(sizes) == 8


def test_one_query_loads_the_vector_index_and_another_waits_at_most_its_patience(sample_index: Assistant) -> None:
    """Chroma reads a collection's whole vector index at a client's first query (15-40 s at a
    million abstracts). The query that finds nobody loading is the loader and waits as long as
    it takes; one that comes while another loads waits at most its patience, then gets None.
    A reopened client (another process's ingest noticed) loads again."""
    store = ChromaStore(sample_index.settings, sample_index.embedder.model_id)
    vector = sample_index.embedder.embed(["sparse attention for long context"])[0]
    store._loader.acquire()  # another search is loading the vector index
    try:
        with ThreadPoolExecutor(1) as pool:
            assert pool.submit(store.query_chunks, vector, 5, None, 0.05).result() is None
    finally:
        store._loader.release()
    nearest = store.query_chunks(vector, 5, None, 0.05)  # nobody loading: this one loads
    assert nearest is not None and len(nearest) == 5
    store._loader.acquire()
    try:  # loaded: the lock is not waited for
        assert store.query_chunks(vector, 5, None, 0.0) == nearest
        store._reopen()
        assert store.query_chunks(vector, 5, None, 0.0) is None, "a new client loads again"
    finally:
        store._loader.release()
    assert store.query_chunks(vector, 5) == nearest
