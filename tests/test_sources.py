"""Compressed input: gzip and zip, told by content, read as they decompress."""

from __future__ import annotations

import gzip
import json
import zipfile
from pathlib import Path

from assistant import corpus
from assistant.corpus import Source
from assistant.types import Abstract, Rejected

FORMATS = Path(__file__).parent / "data" / "formats"
TEXT = "We present a method that improves retrieval of scientific abstracts by fusing lexical and dense signals."


def _split(results):
    results = list(results)
    return [r for r in results if isinstance(r, Abstract)], [r for r in results if isinstance(r, Rejected)]


def test_a_gzipped_pubmed_file_reads_as_the_plain_one_and_keeps_its_name(tmp_path: Path) -> None:
    packed = tmp_path / "pubmed25n0001.xml.gz"
    packed.write_bytes(gzip.compress((FORMATS / "pubmed.xml").read_bytes()))
    plain, plain_rejected = _split(corpus.load([FORMATS / "pubmed.xml"]))
    abstracts, rejected = _split(corpus.load([packed]))
    assert [a.text for a in abstracts] == [a.text for a in plain] and len(abstracts) == 2
    assert {a.source for a in abstracts} == {"pubmed25n0001.xml.gz"}
    assert [r.reason for r in rejected] == [r.reason for r in plain_rejected]


def test_openalex_snapshot_parts_are_told_by_their_content(tmp_path: Path) -> None:
    """OpenAlex ships its works as updated_date=…/part_000.gz: gzipped JSON Lines, no inner suffix."""
    work = json.loads((FORMATS / "openalex-page.json").read_text())["results"][0]
    part = tmp_path / "works" / "updated_date=2024-01-01" / "part_000.gz"
    part.parent.mkdir(parents=True)
    part.write_bytes(gzip.compress((json.dumps(work) + "\n" + json.dumps({**work, "id": "https://openalex.org/W2"})
                                    + "\n").encode()))
    (part.parent.parent / "manifest").write_text("{}")  # no suffix: not read
    abstracts, rejected = _split(corpus.load([tmp_path / "works"]))
    assert [a.id for a in abstracts] == ["W9900000001", "W2"] and rejected == []
    page = tmp_path / "page.gz"  # a pretty-printed API page, gzipped
    page.write_bytes(gzip.compress((FORMATS / "openalex-page.json").read_bytes()))
    assert [a.id for a in _split(corpus.load([page]))[0]] == ["W9900000001"]


def test_a_zip_of_exports_reads_each_member_and_names_it(tmp_path: Path) -> None:
    archive = tmp_path / "exports.zip"
    with zipfile.ZipFile(archive, "w") as packed:
        packed.write(FORMATS / "library.ris", "refs/library.ris")
        packed.writestr("baseline/pubmed25n0002.xml.gz", gzip.compress((FORMATS / "pubmed.xml").read_bytes()))
        packed.writestr("notes.pdf", b"%PDF-1.7")  # not a supported type: skipped, as in a folder
        packed.writestr("empty/", b"")
    abstracts, rejected = _split(corpus.load([archive]))
    assert [a.source for a in abstracts] == ["pubmed25n0002.xml.gz"] * 2 + ["library.ris"] * 2
    assert all(r.source.startswith(f"{archive}/") for r in rejected) and len(rejected) == 3


def test_a_cut_off_archive_keeps_what_came_before_the_cut(tmp_path: Path) -> None:
    lines = "".join(json.dumps({"id": f"p{n}", "text": f"{TEXT} Number {n}."}) + "\n" for n in range(5000))
    data = gzip.compress(lines.encode())
    cut = tmp_path / "papers.jsonl.gz"
    cut.write_bytes(data[: len(data) // 2])
    abstracts, [broken] = _split(corpus.load([cut]))
    assert 0 < len(abstracts) < 5000 and [a.id for a in abstracts] == [f"p{n}" for n in range(len(abstracts))]
    assert broken.reason.startswith("the compressed file is cut off or damaged")
    bad_zip = tmp_path / "broken.zip"
    bad_zip.write_bytes(b"PK\x03\x04" + b"\x00" * 40)
    [refused] = corpus.load([bad_zip])
    assert refused.reason.startswith("not a readable zip archive")


def test_compressed_content_of_no_known_format_is_named(tmp_path: Path) -> None:
    odd = tmp_path / "part_001.gz"
    odd.write_bytes(gzip.compress(b"just some words, no format\n"))
    [refused] = corpus.load([odd])
    assert "the file part_001.gz does not say its format" in refused.reason and ".jsonl" in refused.reason


def test_a_source_names_the_format_inside_its_compression(tmp_path: Path) -> None:
    assert Source(tmp_path / "pubmed25n0001.xml.gz", gzipped=True).suffix == ".xml"
    assert Source(tmp_path / "part_000.gz", gzipped=True).suffix == ""
    member = Source(tmp_path / "a.zip", "x/papers.JSONL")
    assert (member.suffix, member.name, member.location) == (".jsonl", "papers.JSONL", f"{tmp_path}/a.zip/x/papers.JSONL")
