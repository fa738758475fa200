"""Private and shared libraries through the Python API, on embedded Chroma and on a `chroma run`
server: each user sees the shared library and their own, and nothing of another user's reaches
their search, findings, prompts, answers, statistics or de-duplication."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from assistant import Assistant
from assistant.accounts import AccountError
from conftest import ChromaServer
from scripted_server import MODEL, ScriptedServer

SHARED_RECORDS = [
    {"id": "shared-1", "title": "Sandwich normalization for deep transformers",
     "abstract": "Depth-scaled sandwich normalization removes loss spikes when training deep transformer "
                 "language models. We train a 135B dense model without a single divergence."},
    {"id": "shared-2", "title": "Linear attention by distillation",
     "abstract": "Pretrained transformers are converted to linear attention by distilling their attention "
                 "maps; the converted models keep 98 percent of their accuracy."},
    {"id": "shared-3", "title": "Protein folding with diffusion",
     "abstract": "A diffusion model generates protein backbones that fold as designed in 62 percent of "
                 "laboratory tests, twice the rate of the previous method."},
]
SECRET = "velmorite"
ALICE_PAPER = {
    "id": "alice-unpublished", "doi": "10.5555/velmorite.2026", "title": "Velmorite proton conductors",
    "abstract": "Velmorite crystals conduct protons at room temperature with 97 percent efficiency. "
                "Doping velmorite with cerium doubles its conductivity in humid air.",
}
BOTH_HOLD = {
    "id": "common-paper", "doi": "10.5555/common.2025", "title": "Graphene membranes sieve hydrogen isotopes",
    "abstract": "Graphene membranes separate deuterium from hydrogen with a selectivity of ten at ambient "
                "conditions, an order of magnitude cheaper than cryogenic distillation.",
}


def _jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture(params=["embedded", "chroma-server"], scope="module")
def lab(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Assistant]:
    """An index with a shared library (the operator's ingest), alice and bob (bob an admin),
    alice's private paper and a paper both hold privately."""
    folder = tmp_path_factory.mktemp(request.param)
    options: dict = {"data_dir": folder / "data", "auto_ingest": False}
    server = None
    if request.param == "chroma-server":
        server = ChromaServer(folder / "server").start()
        options.update(chroma_host="127.0.0.1", chroma_port=server.port)
    operator = Assistant(**options)
    operator.ingest([_jsonl(folder / "shared.jsonl", SHARED_RECORDS)])
    operator.accounts.add("alice", "alice's password")
    operator.accounts.add("bob", "bob's password", admin=True)
    alice = Assistant(**options, user="alice")
    report = alice.ingest([_jsonl(folder / "alice_private.jsonl", [ALICE_PAPER, BOTH_HOLD])])
    assert (report.added, report.duplicates) == (2, 0)
    yield operator
    if server:
        server.stop()


def _texts(hits: list) -> str:
    return " ".join(f"{h.abstract.title} {h.abstract.text} {h.abstract.source}" for h in hits).lower()


def test_a_user_finds_their_private_paper_and_the_shared_ones(lab: Assistant) -> None:
    alice = lab.as_user("alice")
    hits = alice.search("velmorite proton conductivity", k=10)
    assert hits[0].abstract.id == ALICE_PAPER["id"] and hits[0].abstract.library == "user:alice"
    assert {h.abstract.id for h in hits} == {ALICE_PAPER["id"], BOTH_HOLD["id"], *(r["id"] for r in SHARED_RECORDS)}
    assert alice.stats()["abstracts"] == 5 and "alice_private.jsonl" in alice.stats()["by_source"]


def test_another_user_sees_nothing_of_it_anywhere(lab: Assistant) -> None:
    bob = lab.as_user("bob")
    hits = bob.search("velmorite proton conductors with cerium", k=50)
    assert {h.abstract.id for h in hits} == {r["id"] for r in SHARED_RECORDS} and SECRET not in _texts(hits)
    assert bob.search("velmorite", k=5, filters={"source": "alice_private.jsonl"}) == []
    assert bob.findings("How efficiently do velmorite crystals conduct protons?") == []
    assert bob.retriever.subject_terms("What is velmorite?") == {}, "her abstracts count for nothing in his view"
    stats = bob.stats()
    assert stats["abstracts"] == 3 and "alice_private.jsonl" not in stats["by_source"]
    assert stats["chunks"] == 3
    with pytest.raises(ValueError, match="unknown filter"):  # a caller cannot name libraries to search
        bob.search("velmorite", filters={"library": "user:alice"})


def test_answers_never_show_another_users_paper_to_the_model(lab: Assistant) -> None:
    with ScriptedServer() as server:
        question = "How efficiently do velmorite crystals conduct protons?"
        server.script(question, "They conduct protons with 97 percent efficiency [@0].", [ALICE_PAPER["abstract"][:40]])
        settings = {"llm_backend": "openai", "llm_model": MODEL, "openai_base_url": server.base_url}
        alice = Assistant(lab.settings, user="alice", **settings)
        answer = alice.ask(question)
        assert not answer.abstained and answer.citations[0].abstract.id == ALICE_PAPER["id"]
        bob = Assistant(lab.settings, user="bob", **settings)
        answer = bob.ask(question)
        sent = " ".join(server.prompts[1:]).lower()
        assert SECRET not in sent, "nothing of alice's reached the prompt of bob's question"
        assert SECRET not in _texts(answer.sources) and all(c.abstract.id != ALICE_PAPER["id"] for c in answer.citations)
        assert SECRET not in answer.to_markdown().lower() + answer.to_bibtex().lower() + answer.to_ris().lower()


def test_deduplication_tells_no_one_what_another_user_holds(lab: Assistant, tmp_path: Path) -> None:
    bob = lab.as_user("bob")
    report = bob.ingest([_jsonl(tmp_path / "bob.jsonl", [BOTH_HOLD, SHARED_RECORDS[0]])])
    assert (report.added, report.duplicates) == (1, 1), "his copy is added; only the shared paper he sees is a duplicate"
    assert [h.abstract.library for h in bob.search("graphene membranes hydrogen isotopes", k=1)] == ["user:bob"]
    assert [h.abstract.library for h in lab.as_user("alice").search("graphene membranes hydrogen isotopes", k=1)] == [
        "user:alice"]
    both = lab.search("graphene membranes hydrogen isotopes", k=10)  # the operator sees every library
    assert sum(h.abstract.id == BOTH_HOLD["id"] for h in both) == 1, "one paper held twice is listed once"


def test_the_shared_library_takes_admins_only_and_private_libraries_have_a_limit(lab: Assistant, tmp_path: Path) -> None:
    paper = _jsonl(tmp_path / "more.jsonl", [{**SHARED_RECORDS[2], "id": "shared-4", "title": "Another folding paper"}])
    with pytest.raises(AccountError, match="only admins add to the shared library"):
        lab.as_user("alice").ingest([paper], library="shared")
    with pytest.raises(AccountError, match="a private library belongs to a user"):
        lab.ingest([paper], library="private")
    limited = Assistant(lab.settings, user="alice", library_max_abstracts=2)
    report = limited.ingest([paper])
    assert report.added == 0 and "the library is full" in report.rejected[0].reason


def test_a_removed_users_library_is_gone(lab: Assistant, tmp_path: Path) -> None:
    lab.accounts.add("carol", "carol's password")
    carol = lab.as_user("carol")
    assert carol.ingest([_jsonl(tmp_path / "carol.jsonl", [{**ALICE_PAPER, "id": "carol-1", "doi": None}])]).added == 1
    assert lab.remove_user("carol") == 1
    assert all(h.abstract.library != "user:carol" for h in lab.search("velmorite protons", k=50))
    assert lab.store.library_count("user:carol") == 0
    with pytest.raises(AccountError, match="there is no user 'carol'"):
        Assistant(lab.settings, user="carol")


def test_a_users_dense_search_returns_what_chromas_filter_would(lab: Assistant, monkeypatch: pytest.MonkeyPatch) -> None:
    from assistant import retrieval
    from assistant.index.store import visible

    bob = lab.as_user("bob")
    bob.refresh_lexical(force=True)
    where = visible(bob.libraries)
    for question in ("velmorite proton conductors", "graphene membranes", "protein backbones", "attention maps"):
        vector = bob.embedder.embed([question])[0]
        expected = [c[:2] for c in bob.store.query_chunks(vector, 4, where)]
        assert [c[:2] for c in bob.retriever._visible_nearest(vector, 4, None)] == expected
        monkeypatch.setattr(retrieval, "MAX_OVERFETCH", 0)  # too few fetched: Chroma's filter decides
        assert [c[:2] for c in bob.retriever._visible_nearest(vector, 4, None)] == expected
        monkeypatch.undo()
