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
    path.write_bytes(b"SQLite format 3\x00" + bytes(range(256)) * 40 + b"\n" * 50)
    abstracts, rejected = _split(corpus.load([path]))
    assert abstracts == [] and len(rejected) == 1
    assert rejected[0].line is None and "binary data" in rejected[0].reason


def test_a_gzipped_file_is_read_whatever_its_name_says(tmp_path: Path) -> None:
    path = tmp_path / "papers.jsonl"  # gzipped, though not named .gz
    path.write_bytes(gzip.compress("\n".join(json.dumps({"id": str(i), "text": TEXT}) for i in range(50)).encode()))
    abstracts, rejected = _split(corpus.load([path]))
    assert rejected == [] and [a.id for a in abstracts] == [str(i) for i in range(50)]


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
    assert first.extra == {"journal": "SIGIR"} and first.doi == "10.1000/xyz"  # a venue is kept as the journal
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


# Reference-manager and database exports (fixtures in tests/data/formats; see its README).
FORMATS = Path(__file__).parent / "data" / "formats"
FASTING_DOI, FASTING_PMID = "10.5555/exmp.2024.001", "99000001"


def test_ris_records_map_every_field_and_broken_ones_are_rejected_with_their_line() -> None:
    abstracts, rejected = _split(corpus.load([FORMATS / "library.ris"]))
    fasting, gait = abstracts
    assert fasting.title.startswith("Intermittent fasting and insulin sensitivity")
    assert (fasting.authors, fasting.year, fasting.doi, fasting.extra["journal"]) == (
        ("Okafor, Ngozi", "Lindqvist, Erik"), 2024, FASTING_DOI, "Journal of Example Metabolism")
    assert fasting.text.startswith("Background: Whether time-restricted eating") and fasting.text.endswith("both arms.")
    # the other tags exporters use: T1, A1, Y1 "2023///", T2 for the journal, N2 for the abstract, AN for the PMID
    assert (gait.authors, gait.year, gait.pmid, gait.extra["journal"]) == (
        ("Moreau, Claire", "Tanaka, Hiroshi"), 2023, "99000004", "Example Movement Disorders Journal")
    assert gait.text.startswith("Gait changes precede") and gait.url == "https://pubmed.ncbi.nlm.nih.gov/99000004/"
    assert [(r.line, r.reason) for r in rejected] == [
        (29, "the record 'Editorial: the year in example metabolism' has no abstract (tag AB or N2)"),
        (36, "the record has no end tag 'ER  -' (a truncated export?)"),
    ]


def test_ris_text_between_records_is_rejected_and_the_records_around_it_kept(tmp_path: Path) -> None:
    record = f"TY  - JOUR\nTI  - Fusion\nAB  - {TEXT}\nER  - \n"
    path = tmp_path / "export.ris"
    path.write_text("1.\n" + record + "\nsome pasted note\nmore of it\n" + record.replace("Fusion", "Again") +
                    "TY  - JOUR\nTI  - Unclosed\nTY  - GEN\nAB  - " + TEXT + "\nER  - \n")
    abstracts, rejected = _split(corpus.load([path]))
    assert [a.title for a in abstracts[:2]] == ["Fusion", "Again"] and not abstracts[2].titled  # "1." is no text
    assert [(r.line, r.reason.split(" (")[0]) for r in rejected] == [
        (7, "text outside a record"), (13, "the record has no end tag 'ER  -' before the next 'TY  -'")]


def test_medline_records_and_a_corrupt_one() -> None:
    abstracts, rejected = _split(corpus.load([FORMATS / "pubmed.nbib"]))
    fasting, sodium = abstracts
    assert (fasting.id, fasting.pmid, fasting.doi, fasting.year) == (f"pmid:{FASTING_PMID}", FASTING_PMID, FASTING_DOI, 2024)
    assert fasting.title == "Intermittent fasting and insulin sensitivity in adults with prediabetes: a randomised trial."
    assert fasting.authors == ("Okafor, Ngozi", "Lindqvist, Erik")  # FAU, the full names
    assert fasting.extra["journal"] == "Journal of Example Metabolism"
    assert fasting.text.startswith("BACKGROUND: Whether time-restricted eating improves insulin sensitivity beyond weight")
    assert (sodium.doi, sodium.year) == ("10.5555/exhyp.2022.017", 2022)
    [broken] = rejected
    assert broken.line == 44 and broken.reason.startswith("not a MEDLINE line")


def test_a_txt_file_is_medline_when_it_opens_with_a_pmid_tag(tmp_path: Path) -> None:
    medline = tmp_path / "pubmed-export.txt"
    medline.write_text((FORMATS / "pubmed.nbib").read_text())
    assert corpus.format_of(medline).__name__ == "assistant.corpus.medline"
    assert corpus.format_of(BUNDLED_CORPUS / "000_f4a0e3667c329c35.txt").__name__ == "assistant.corpus.daily_papers"
    assert len(_split(corpus.load([medline]))[0]) == 2


def test_pubmed_xml_keeps_structured_sections_in_order_and_reports_articles_without_abstracts() -> None:
    abstracts, rejected = _split(corpus.load([FORMATS / "pubmed.xml"]))
    fasting, light = abstracts
    assert fasting.text == (
        "BACKGROUND: Whether time-restricted eating improves insulin sensitivity beyond weight loss is unclear. "
        "METHODS: We randomised 120 adults with prediabetes to 16:8 intermittent fasting or usual care for 12 weeks. "
        "RESULTS: HOMA-IR fell by 0.9 units with fasting and by 0.2 with usual care (p = 0.01), with similar "
        "weight loss in both arms.")
    assert (fasting.id, fasting.doi, fasting.year, fasting.authors) == (
        f"pmid:{FASTING_PMID}", FASTING_DOI, 2024, ("Okafor, Ngozi", "Lindqvist, Erik"))
    assert light.year == 2023 and light.authors == ("Silva, Beatriz", "Example Sleep Consortium")  # MedlineDate
    assert [str(r) for r in rejected] == [
        f"{FORMATS / 'pubmed.xml'}: article 3 (PMID 99000006): no abstract (no AbstractText element)"]


def test_pubmed_xml_cut_off_keeps_the_articles_before_the_break() -> None:
    abstracts, rejected = _split(corpus.load([FORMATS / "pubmed-truncated.xml"]))
    assert [a.id for a in abstracts] == ["pmid:99000007"]
    [broken] = rejected
    assert broken.line == 18 and broken.reason.startswith("malformed XML after article 1")


def test_xml_that_is_not_pubmed_or_declares_entities_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "feed.xml"
    other.write_text("<rss><channel><item>x</item></channel></rss>")
    bomb = tmp_path / "bomb.xml"
    bomb.write_text('<?xml version="1.0"?><!DOCTYPE PubmedArticleSet [<!ENTITY a "aaaaaaaaaa">'
                    '<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]><PubmedArticleSet>&b;</PubmedArticleSet>')
    (not_pubmed,), (refused,) = _split(corpus.load([other]))[1], _split(corpus.load([bomb]))[1]
    assert "not a PubMed XML file: its root element is <rss>" in not_pubmed.reason
    assert refused.reason.startswith("refused: the XML declares entities")


def test_pubmed_xml_is_read_as_a_stream(tmp_path: Path) -> None:
    """Articles come out while the file is still being parsed: the loader yields the first
    before it reaches a break at the very end (benchmarks/ingest_memory.py measures memory)."""
    path = tmp_path / "large.xml"
    article = (FORMATS / "pubmed-truncated.xml").read_text().split("<PubmedArticle>")[1]
    path.write_text("<PubmedArticleSet>" + "".join(
        "<PubmedArticle>" + article.replace("99000007", str(99100000 + n)) for n in range(2000)) + "<broken")
    loaded = corpus.load([path])
    assert next(loaded).id == "pmid:99100000"
    rest = list(loaded)
    assert len(rest) == 2000 and isinstance(rest[-1], Rejected) and "after article 2000" in rest[-1].reason


def test_csl_json_items_are_told_from_other_json_by_their_fields() -> None:
    abstracts, rejected = _split(corpus.load([FORMATS / "zotero-csl.json"]))
    gait, moe = abstracts
    assert (gait.authors, gait.year, gait.pmid, gait.extra) == (
        ("Moreau, Claire", "Tanaka, Hiroshi"), 2023, "99000004",
        {"journal": "Example Movement Disorders Journal", "publication_type": "Journal article"})
    assert moe.arxiv_id == "2405.01234" and moe.authors == ("Ivanova, Mira", "Example Lab") and moe.year == 2024
    assert [r.reason for r in rejected] == ["record 3: the item has no abstract (CSL field abstract)"]


def test_openalex_abstracts_are_rebuilt_from_the_inverted_index(tmp_path: Path) -> None:
    abstracts, rejected = _split(corpus.load([FORMATS / "openalex-page.json"]))
    [sodium] = abstracts
    assert sodium.text == ("In a crossover trial of 84 adults aged 65 and over, a low-sodium diet lowered systolic "
                           "blood pressure by 7.2 mmHg compared with a usual diet over four weeks.")
    assert (sodium.id, sodium.doi, sodium.pmid, sodium.year, sodium.authors, sodium.extra["journal"]) == (
        "W9900000001", "10.5555/exhyp.2022.017", "99000002", 2022, ("Tunde Achebe",), "Example Journal of Hypertension")
    assert [r.reason for r in rejected] == [
        "record 2: OpenAlex has no abstract for this work (abstract_inverted_index is empty)"]
    work = json.loads((FORMATS / "openalex-page.json").read_text())["results"][0]
    (tmp_path / "work.json").write_text(json.dumps(work))  # one work, as /works/W… returns it
    (tmp_path / "snapshot.jsonl").write_text(json.dumps(work) + "\n{cut off\n")
    assert [a.id for a in _split(corpus.load([tmp_path / "work.json"]))[0]] == ["W9900000001"]
    single, broken = _split(corpus.load([tmp_path / "snapshot.jsonl"]))
    assert [a.text for a in single] == [sodium.text] and broken[0].line == 2


def test_pubmed_book_chapters_and_books_are_read_with_their_own_date_and_authors() -> None:
    abstracts, rejected = _split(corpus.load([FORMATS / "pubmed-books.xml"]))
    chapter, book = abstracts
    assert (chapter.id, chapter.title, chapter.year, chapter.authors) == (
        "pmid:99000020", "Example Fragile Site Disorders", 1998, ("Hunter, Jessica", "Berry-Kravis, Elizabeth"))
    assert chapter.extra["journal"] == "Example Reviews®"  # the book it is a chapter of; its editors are not authors
    assert chapter.text.startswith("CLINICAL CHARACTERISTICS: Example fragile site disorders include")
    assert (book.title, book.year, book.extra["publication_type"]) == (
        "Screening for Example Vitamin Deficiency in Adults: A Systematic Review", 2021, "Review")
    assert json.loads(book.extra["nlm_categories"])["CONCLUSIONS"] == "CONCLUSIONS"
    assert [r.reason for r in rejected] == ["article 3 (PMID 99000022): no abstract (no AbstractText element)"]


def test_a_json_document_is_streamed_and_a_break_keeps_the_records_before_it(tmp_path: Path) -> None:
    records = [{"id": f"r{n}", "text": f"{TEXT} Record {n}."} for n in range(3)]
    listed, paged, wrapped = tmp_path / "list.json", tmp_path / "page.json", tmp_path / "wrapped.json"
    listed.write_text(json.dumps(records)[:-30])  # cut inside the third record
    paged.write_text(json.dumps({"meta": {"count": 3}, "results": records}, indent=2))
    wrapped.write_text(json.dumps({"version": 2, "papers": records}))
    abstracts, [broken] = _split(corpus.load([listed]))
    assert [a.id for a in abstracts] == ["r0", "r1"]
    assert broken.reason.startswith("invalid JSON after record 2:") and "records before it were read" in broken.reason
    assert [a.id for a in corpus.load([paged])] == ["r0", "r1", "r2"]
    assert [a.id for a in corpus.load([wrapped])] == ["r0", "r1", "r2"]
    latin = tmp_path / "latin.json"
    latin.write_bytes(json.dumps([{"id": "l", "text": f"Café {TEXT}"}], ensure_ascii=False).encode("cp1252"))
    assert [a.text[:4] for a in corpus.load([latin])] == ["Café"]


def test_a_json_file_holding_json_lines_is_read_as_lines_and_a_cut_object_is_named(tmp_path: Path) -> None:
    lines = tmp_path / "works.json"
    lines.write_text("\n".join(json.dumps({"id": f"w{n}", "text": TEXT}) for n in range(3)) + "\n")
    assert [a.id for a in corpus.load([lines])] == ["w0", "w1", "w2"]
    cut = tmp_path / "page.json"
    cut.write_text('{"meta": {"count": 1}, "items": [{"id": "x", "text": "' + TEXT)
    [rejected] = corpus.load([cut])
    assert rejected.reason.startswith("invalid JSON")
