"""Loaders of every format, malformed input, duplicates, id stability, display fields."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from assistant import corpus
from assistant.corpus.display import content_id, derive_title, find_link
from assistant.settings import BUNDLED_CORPUS
from assistant.types import Abstract, Rejected

from conftest import SAMPLE_PARAGRAPHS, SAMPLE_UNIQUE

TEXT = "We present a method that improves retrieval of scientific abstracts by fusing lexical and dense signals."


def _split(results):
    results = list(results)
    abstracts = [r for r in results if isinstance(r, Abstract)]
    rejected = [r for r in results if isinstance(r, Rejected)]
    return abstracts, rejected


def test_sample_corpus_has_337_paragraphs_and_330_unique_abstracts() -> None:
    abstracts, rejected = _split(corpus.load([BUNDLED_CORPUS]))
    assert rejected == []
    assert len(abstracts) == SAMPLE_PARAGRAPHS
    assert len({a.id for a in abstracts}) == SAMPLE_UNIQUE
    assert all(not a.titled and a.title for a in abstracts)


def test_daily_papers_paragraph_numbers_match_the_eval_files() -> None:
    dev_gold = {"file": "000_f4a0e3667c329c35.txt", "para": 102, "prefix": "We present Pangu Ultra, a Large Language Model (LLM) with 13"}
    abstracts, _ = _split(corpus.load([BUNDLED_CORPUS / dev_gold["file"]]))
    by_para = {a.extra["para"]: a for a in abstracts}
    assert by_para[dev_gold["para"]].text.startswith(dev_gold["prefix"])
    assert by_para[dev_gold["para"]].title.startswith("Pangu Ultra: a Large Language Model")


def test_ids_are_stable_across_runs() -> None:
    first = [a.id for a in corpus.load([BUNDLED_CORPUS])]
    second = [a.id for a in corpus.load([BUNDLED_CORPUS])]
    assert first == second
    assert content_id("a  b\n c") == content_id("a b c")


def test_daily_papers_short_paragraph_is_rejected_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "papers.txt"
    path.write_text(f"Daily Papers\n\n{TEXT}\n\ntoo short\n\n{TEXT} Second.\n")
    abstracts, rejected = _split(corpus.load([path]))
    assert len(abstracts) == 2
    assert len(rejected) == 1 and rejected[0].line == 5 and "paragraph 2" in rejected[0].reason


def test_stray_bytes_in_utf8_do_not_crash_the_loader(tmp_path: Path) -> None:
    path = tmp_path / "bad.txt"
    path.write_bytes(b"Daily Papers\n\n" + TEXT.encode() + " naïve".encode() + b" \xff\xfe end.\n")
    abstracts, rejected = _split(corpus.load([path]))
    assert rejected == [] and len(abstracts) == 1
    assert "naïve" in abstracts[0].text and "\ufffd" in abstracts[0].text


def test_latin1_and_utf16_files_keep_their_accents(tmp_path: Path) -> None:
    latin = tmp_path / "excel.csv"
    latin.write_bytes(f"id,abstract\nl1,Café résumé: {TEXT}\n".encode("cp1252"))
    utf16 = tmp_path / "unicode.tsv"
    utf16.write_bytes(f"id\ttext\nu1\tÅngström {TEXT}\n".encode("utf-16"))
    abstracts, rejected = _split(corpus.load([latin, utf16]))
    assert rejected == []
    assert abstracts[0].text.startswith("Café résumé:") and abstracts[1].text.startswith("Ångström")


def test_binary_file_is_rejected_once_not_line_by_line(tmp_path: Path) -> None:
    path = tmp_path / "papers.jsonl"
    path.write_bytes(gzip.compress("\n".join(json.dumps({"id": str(i), "text": TEXT}) for i in range(50)).encode()))
    abstracts, rejected = _split(corpus.load([path]))
    assert abstracts == [] and len(rejected) == 1
    assert rejected[0].line is None and "binary data" in rejected[0].reason


def test_jsonl_generic_record_and_malformed_lines(tmp_path: Path) -> None:
    path = tmp_path / "papers.jsonl"
    lines = [
        json.dumps({"id": "p1", "title": "Fusion Retrieval", "abstract": TEXT, "authors": ["Ann Lee", "Bo Chen"],
                    "date": "2021-05-04", "doi": "10.1000/xyz", "venue": "SIGIR"}),
        "{not json",
        json.dumps({"id": "p2", "title": "No text"}),
        "",
        json.dumps(["not", "an", "object"]),
        json.dumps({"title": "Summary field", "summary": TEXT + " Summary.", "url": "https://example.org/p3", "year": 2019}),
    ]
    path.write_text("\n".join(lines))
    abstracts, rejected = _split(corpus.load([path]))
    assert [a.id for a in abstracts] == ["p1", content_id(TEXT + " Summary.")]
    first = abstracts[0]
    assert (first.title, first.authors, first.year, first.url) == (
        "Fusion Retrieval", ("Ann Lee", "Bo Chen"), 2021, "https://doi.org/10.1000/xyz")
    assert first.extra == {"venue": "SIGIR"}
    assert abstracts[1].url == "https://example.org/p3" and abstracts[1].year == 2019
    assert [(r.line, r.reason.split(" ")[0]) for r in rejected] == [(2, "invalid"), (3, "no"), (5, "expected")]


def test_beir_corpus_schema_loads_without_options(tmp_path: Path) -> None:
    path = tmp_path / "corpus.jsonl"
    path.write_text(json.dumps({"_id": "4983", "title": "Microstructural development", "text": TEXT, "metadata": {}}) + "\n"
                    + json.dumps({"_id": "5836", "title": "", "text": TEXT + " Untitled."}) + "\n")
    abstracts, rejected = _split(corpus.load([path]))
    assert rejected == []
    assert [a.id for a in abstracts] == ["4983", "5836"]
    assert abstracts[0].titled and abstracts[0].title == "Microstructural development"
    assert not abstracts[1].titled and abstracts[1].title.startswith("We present a method")


def test_arxiv_metadata_snapshot_schema(tmp_path: Path) -> None:
    record = {
        "id": "0704.0001", "submitter": "Pavel Nadolsky",
        "authors": "C. Bal\\'azs, E. L. Berger, P. M. Nadolsky, C.-P. Yuan",
        "title": "Calculation of prompt diphoton production cross sections",
        "comments": "37 pages", "journal-ref": "Phys.Rev.D76:013009,2007", "doi": "10.1103/PhysRevD.76.013009",
        "categories": "hep-ph", "abstract": "  A fully differential calculation in perturbative quantum chromodynamics is\npresented.  ",
        "versions": [{"version": "v1", "created": "Mon, 2 Apr 2007 19:18:42 GMT"}],
        "update_date": "2008-11-13",
        "authors_parsed": [["Balázs", "C.", ""]],
    }
    path = tmp_path / "arxiv.json"
    path.write_text(json.dumps([record]))
    (abstract,) = corpus.load([path])
    assert abstract.id == "0704.0001"
    assert abstract.year == 2007
    assert abstract.authors[:2] == ("C. Bal\\'azs", "E. L. Berger") and len(abstract.authors) == 4
    assert abstract.text == "A fully differential calculation in perturbative quantum chromodynamics is presented."
    assert abstract.extra["categories"] == "hep-ph"


def test_csv_and_tsv(tmp_path: Path) -> None:
    path = tmp_path / "papers.csv"
    path.write_text(f'id,title,abstract,authors,year\nc1,"Title, with comma","{TEXT}",Ann Lee; ,2020\n'
                    f'c2,Missing,,,\nc3,Extra,"{TEXT} More.",x,2021,unexpected\n')
    abstracts, rejected = _split(corpus.load([path]))
    assert [a.id for a in abstracts] == ["c1"] and abstracts[0].title == "Title, with comma"
    assert [r.line for r in rejected] == [3, 4]
    tsv = tmp_path / "papers.tsv"
    tsv.write_text(f"id\ttitle\ttext\nt1\tA title\t{TEXT}\n")
    assert [a.id for a in corpus.load([tsv])] == ["t1"]


def test_bibtex_entries_with_and_without_abstracts(tmp_path: Path) -> None:
    path = tmp_path / "refs.bib"
    path.write_text(
        "@article{lee2020fusion,\n  title = {{Fusion} Retrieval \\& More},\n"
        "  author = {Lee, Ann and Chen, Bo},\n  year = 2020,\n"
        f"  abstract = {{{TEXT}}},\n  doi = {{10.1000/abc}}\n}}\n\n"
        "@misc{noabstract, title = {Nothing here}}\n\n"
        "@article{broken,\n  title = {Unclosed\n"
    )
    abstracts, rejected = _split(corpus.load([path]))
    assert len(abstracts) == 1
    entry = abstracts[0]
    assert (entry.id, entry.title, entry.authors, entry.year) == (
        "lee2020fusion", "Fusion Retrieval & More", ("Lee, Ann", "Chen, Bo"), 2020)
    reasons = sorted(r.reason for r in rejected)
    assert any("noabstract has no abstract" in r for r in reasons)
    assert any("malformed" in r for r in reasons)


def test_missing_and_unsupported_files_are_reported(tmp_path: Path) -> None:
    (tmp_path / "notes.docx").write_bytes(b"PK")
    results = list(corpus.load([tmp_path / "nope.jsonl", tmp_path / "notes.docx"]))
    assert [type(r) for r in results] == [Rejected, Rejected]
    assert "no such file" in results[0].reason and "unsupported" in results[1].reason


def test_folders_are_walked_for_supported_files(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.jsonl").write_text(json.dumps({"id": "x", "text": TEXT}))
    (tmp_path / "ignored.docx").write_bytes(b"PK")
    assert [a.id for a in corpus.load([tmp_path])] == ["x"]


def test_derived_titles_and_links() -> None:
    assert derive_title("We introduce the novel Diffusion Visual Programmer (DVP), a neuro-symbolic image "
                        "translation framework. More text.") == (
        "Diffusion Visual Programmer (DVP): a neuro-symbolic image translation framework")
    long = "Word " * 60
    assert derive_title(long).endswith("…") and len(derive_title(long)) <= 101
    assert find_link("See https://example.org/page and https://github.com/a/b.") == "https://github.com/a/b"
    assert find_link("Code at https://github.com/x/y{here}.") == "https://github.com/x/y"
    assert find_link("Preprint arXiv:2101.00001v2.") == "https://arxiv.org/abs/2101.00001"
    assert find_link("No link.") is None


def test_abstract_source_is_the_file_name_and_rejections_name_the_path(tmp_path: Path) -> None:
    path = tmp_path / "papers.jsonl"
    path.write_text(json.dumps({"id": "a", "text": TEXT}) + "\n{bad\n")
    abstract, rejected = list(corpus.load([path]))
    assert abstract.source == "papers.jsonl"
    assert rejected.source == str(path)


def test_records_longer_than_the_limit_are_rejected_with_their_line_in_every_format(tmp_path: Path) -> None:
    long_text, ok = "token " * 300, "A normal abstract about graphene membranes that filter salt from seawater."
    (tmp_path / "daily.txt").write_text(f"Daily Papers\n\n{ok}\n\n{long_text}\n")
    (tmp_path / "rows.csv").write_text(f"title,abstract\nShort,{ok}\nLong,{long_text}\n")
    (tmp_path / "refs.bib").write_text(f"@article{{a, title={{A}}, abstract={{{ok}}}}}\n\n"
                                       f"@article{{b, title={{B}}, abstract={{{long_text}}}}}\n")
    items = list(corpus.load([tmp_path], corpus.RecordLimits(max_tokens=100)))
    rejected = [i for i in items if isinstance(i, Rejected)]
    assert sum(isinstance(i, Abstract) for i in items) == 3
    assert sorted(Path(r.source).name for r in rejected) == ["daily.txt", "refs.bib", "rows.csv"]
    assert all("longer than 100 tokens" in r.reason and r.line for r in rejected), rejected
    cut = [i for i in corpus.load([tmp_path / "rows.csv"], corpus.RecordLimits(100, truncate=True))]
    assert [len(a.text.split()) for a in cut] == [len(ok.split()), 100]
