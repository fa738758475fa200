"""The `assistant` command as a user runs it (real subprocesses, real index)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from assistant.settings import BUNDLED_CORPUS

from conftest import SAMPLE_UNIQUE

ASSISTANT = str(Path(sys.executable).parent / "assistant")


def _run(*args: str, data_dir: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ASSISTANT_DATA_DIR": str(data_dir)}
    return subprocess.run([ASSISTANT, *args], env=env, capture_output=True, text=True, input=stdin, timeout=600)


@pytest.mark.slow
def test_ingest_stats_search_reset(tmp_path: Path) -> None:
    ingest = _run("ingest", str(BUNDLED_CORPUS), data_dir=tmp_path)
    assert ingest.returncode == 0, ingest.stderr
    assert f"added {SAMPLE_UNIQUE} abstracts" in ingest.stdout and "skipped 7 duplicates" in ingest.stdout
    stats = json.loads(_run("stats", "--json", data_dir=tmp_path).stdout)
    assert stats["abstracts"] == SAMPLE_UNIQUE and len(stats["by_source"]) == 2
    assert f"{SAMPLE_UNIQUE} abstracts" in _run("stats", data_dir=tmp_path).stdout
    hits = json.loads(_run("search", "hyperbolic knowledge graph embeddings", "-k", "3", "--json", data_dir=tmp_path).stdout)
    assert len(hits) == 3 and hits[0]["rank"] == 1 and hits[0]["abstract"]["id"].startswith("h")
    kept = _run("reset", data_dir=tmp_path, stdin="n\n")
    assert kept.returncode == 1 and "nothing deleted" in kept.stdout
    assert _run("reset", "--yes", data_dir=tmp_path).returncode == 0
    assert json.loads(_run("stats", "--json", data_dir=tmp_path).stdout)["abstracts"] == 0


def test_bad_question_is_a_clear_error_not_a_traceback(tmp_path: Path) -> None:
    result = _run("search", "   ", data_dir=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith("error: the question is empty") and "Traceback" not in result.stderr


@pytest.mark.slow
def test_ask_formats_an_answer_for_notes_and_manuscripts(tmp_path: Path) -> None:
    """``ask --format markdown|bibtex|json|ris|csljson``: the reference list, the user's own
    BibTeX entry (the abstract came from a .bib file), the whole Answer as JSON, and RIS and
    CSL JSON that ingest again as the same abstract."""
    pangu = next(line for line in BUNDLED_CORPUS.joinpath("000_f4a0e3667c329c35.txt").read_text().splitlines()
                 if "Pangu Ultra" in line)
    entry = f"@article{{yin2025pangu,\n  title = {{Pangu Ultra}},\n  journal = {{arXiv}},\n  abstract = {{{pangu}}}\n}}"
    (tmp_path / "pangu.bib").write_text(entry + "\n")
    data_dir = tmp_path / "index"
    assert _run("ingest", str(tmp_path / "pangu.bib"), data_dir=data_dir).returncode == 0
    question = "What technique did the Pangu Ultra team introduce to eliminate loss spikes?"

    plain = _run("ask", question, data_dir=data_dir)
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.startswith("Findings (quoted from each paper):\n1. Pangu Ultra (arXiv)\n   Result: \u201c"), (
        plain.stdout)

    markdown = _run("ask", question, "--format", "markdown", data_dir=data_dir)
    assert markdown.returncode == 0, markdown.stderr
    text, references = markdown.stdout.split("\n\n**References**\n\n")
    assert "[1]" in text and "sandwich" in text.lower()
    assert references.strip() == "1. Pangu Ultra. `pangu.bib`"

    bib = _run("ask", question, "--format", "bibtex", data_dir=data_dir)
    assert bib.returncode == 0 and bib.stdout.strip() == entry

    answer = json.loads(_run("ask", question, "--format", "json", data_dir=data_dir).stdout)
    assert answer["abstained"] is False and answer["citations"][0]["abstract"]["id"] == "yin2025pangu"
    assert answer["citations"][0]["evidence"] and answer["sources"]

    ris = _run("ask", question, "--format", "ris", data_dir=data_dir)
    assert ris.returncode == 0 and ris.stdout.startswith("TY  - JOUR\nID  - yin2025pangu\nTI  - Pangu Ultra\n")
    csl = json.loads(_run("ask", question, "--format", "csljson", data_dir=data_dir).stdout)
    assert [(item["id"], item["type"], item["container-title"]) for item in csl] == [
        ("yin2025pangu", "article-journal", "arXiv")]
    for name, text in (("answer.ris", ris.stdout), ("answer.json", json.dumps(csl))):
        (tmp_path / name).write_text(text)
        again = _run("ingest", str(tmp_path / name), data_dir=data_dir)
        assert again.returncode == 0 and "added 0 abstracts" in again.stdout and "skipped 1 duplicates" in again.stdout


@pytest.mark.slow
def test_users_and_private_libraries_from_the_command_line(tmp_path: Path) -> None:
    paper = tmp_path / "mine.jsonl"
    paper.write_text(json.dumps({"id": "p1", "title": "Thessalite magnets",
                                 "abstract": "Thessalite magnets keep their field up to 900 kelvin."}) + "\n")
    assert _run("users", "add", "alice", data_dir=tmp_path, stdin="alice's password\n").returncode == 0
    assert _run("users", "add", "bob", "--admin", data_dir=tmp_path, stdin="bob's password\n").returncode == 0
    assert _run("users", "list", data_dir=tmp_path).stdout.splitlines() == ["alice", "bob  (admin)"]
    short = _run("users", "passwd", "alice", data_dir=tmp_path, stdin="short\n")
    assert short.returncode == 2 and "too short" in short.stderr and "Traceback" not in short.stderr
    added = _run("--user", "alice", "ingest", "-q", str(paper), data_dir=tmp_path)
    assert added.returncode == 0 and "added 1 abstracts" in added.stdout, added.stderr
    refused = _run("ingest", "--user", "alice", "--library", "shared", str(paper), data_dir=tmp_path)
    assert refused.returncode == 2 and "only admins add to the shared library" in refused.stderr
    found = json.loads(_run("search", "--user", "alice", "thessalite magnets", "--json", data_dir=tmp_path).stdout)
    assert [h["abstract"]["id"] for h in found] == ["p1"]
    assert json.loads(_run("search", "--user", "bob", "thessalite magnets", "--json", data_dir=tmp_path).stdout) == []
    unknown = _run("--user", "carol", "stats", data_dir=tmp_path)
    assert unknown.returncode == 2 and "add one with `assistant users add carol`" in unknown.stderr
    removed = _run("users", "remove", "alice", data_dir=tmp_path)
    assert removed.returncode == 0 and "the 1 abstracts of their private library" in removed.stdout
    assert json.loads(_run("stats", "--json", data_dir=tmp_path).stdout)["abstracts"] == 0
