"""References to take away: BibTeX, RIS and CSL JSON that parse and read back as the same
abstracts, and Markdown."""

from __future__ import annotations

import json
from pathlib import Path

import bibtexparser
import rispy

from assistant import Abstract, Answer, Citation, corpus
from assistant.corpus import Source
from assistant.corpus import bibtex as bib_loader
from assistant.references import (
    BIBTEX_FIELD,
    bibtex,
    bibtex_entry,
    csl_json,
    escape,
    markdown_reference,
    ris,
    unescape,
)
from assistant.settings import BUNDLED_CORPUS

TRICKY = Abstract(
    id="smith 2020,gpu", title="A {GPU} study of 50% faster_kernels & $costs$",
    text="We measure 89\\% of peak on C#; see ~/data and x^2. Braces {stay} and a \\\\ backslash.",
    source="papers.jsonl", url="https://doi.org/10.1000/xyz_1", authors=("Smith, John", "Jane Doe"), year=2020,
)
ARXIV = Abstract(id="2401.01234", title="An arXiv paper", text="An abstract long enough to be loaded back in.",
                 source="arxiv.jsonl", url="https://arxiv.org/abs/2401.01234")


def _fields(entry_text: str) -> dict[str, str]:
    library = bibtexparser.parse_string(entry_text)
    assert not library.failed_blocks, library.failed_blocks
    [entry] = library.entries
    return {name.lower(): unescape(str(f.value)) for name, f in entry.fields_dict.items()} | {
        "@type": entry.entry_type, "@key": entry.key}


def test_escape_is_undone_by_unescape() -> None:
    for text in (TRICKY.title, TRICKY.text, "plain", "\\%", "{}{}", "\\textbackslash", "a~b^c", "50\\%"):
        assert unescape(escape(text)) == text, text


def test_unescape_drops_protective_braces_and_keeps_escaped_ones() -> None:
    assert unescape("{The {GPU} Study}") == "The GPU Study"
    assert unescape("50\\% of \\{x\\} \\& y") == "50% of {x} & y"


def test_an_entry_is_built_from_the_record_and_parses() -> None:
    fields = _fields(bibtex_entry(TRICKY))
    assert fields["@type"] == "misc" and fields["@key"] == "smith-2020-gpu"
    assert fields["title"] == TRICKY.title and fields["abstract"] == TRICKY.text
    assert fields["author"] == "Smith, John and Jane Doe" and fields["year"] == "2020"
    assert fields["doi"] == "10.1000/xyz_1" and fields["url"] == TRICKY.url


def test_arxiv_ids_and_journals_are_kept() -> None:
    fields = _fields(bibtex_entry(ARXIV))
    assert fields["eprint"] == "2401.01234" and fields["archiveprefix"] == "arXiv" and fields["@key"] == "2401.01234"
    journal = Abstract(id="j1", title="T", text="x" * 50, source="s", extra={"journal": "Nature"})
    assert _fields(bibtex_entry(journal))["@type"] == "article"


def test_exported_bibtex_reads_back_as_the_same_abstracts(tmp_path: Path) -> None:
    """Every bundled abstract (LaTeX-escaped percent signs included) and two tricky
    records go out as BibTeX and come back through our own .bib loader unchanged."""
    originals = [a for a in corpus.load([BUNDLED_CORPUS]) if isinstance(a, Abstract)]
    originals = list({a.id: a for a in originals}.values()) + [ARXIV]
    path = tmp_path / "export.bib"
    path.write_text(bibtex(originals))
    assert len(bibtexparser.parse_string(path.read_text()).entries) == len(originals)
    loaded = {a.id: a for a in bib_loader.load(Source(path)) if isinstance(a, Abstract)}
    assert set(loaded) == {a.id for a in originals}
    for original in originals:
        back = loaded[original.id]
        assert (back.text, back.title, back.authors, back.year, back.url) == (
            original.text, original.title, original.authors, original.year, original.url), original.id
    tricky_path = tmp_path / "tricky.bib"
    tricky_path.write_text(bibtex([TRICKY]))
    [back] = list(bib_loader.load(Source(tricky_path)))
    assert (back.text, back.title, back.authors, back.year) == (TRICKY.text, TRICKY.title, TRICKY.authors, TRICKY.year)


def test_a_bibtex_record_is_exported_as_its_own_entry(tmp_path: Path) -> None:
    own = "@inproceedings{vaswani2017,\n  title = {Attention Is All You Need},\n  booktitle = {NeurIPS},\n" \
          "  abstract = {The dominant sequence transduction models are based on recurrent networks.}\n}"
    (tmp_path / "mine.bib").write_text(own + "\n")
    [abstract] = list(bib_loader.load(Source(tmp_path / "mine.bib")))
    assert abstract.extra[BIBTEX_FIELD] == own
    assert bibtex_entry(abstract) == own


def test_answer_to_markdown_and_bibtex() -> None:
    answer = Answer(text="GPUs reach 89% [1]. An arXiv paper agrees [2].",
                    citations=[Citation(1, TRICKY), Citation(2, ARXIV)])
    markdown = answer.to_markdown()
    assert markdown.startswith(answer.text + "\n\n**References**\n\n")
    assert "1. [A {GPU} study of 50% faster_kernels & $costs$](<https://doi.org/10.1000/xyz_1>). Smith, John, Jane Doe" \
           " (2020). `papers.jsonl`" in markdown
    assert "2. [An arXiv paper](<https://arxiv.org/abs/2401.01234>). `arxiv.jsonl`" in markdown
    keys = [e.key for e in bibtexparser.parse_string(answer.to_bibtex()).entries]
    assert keys == ["smith-2020-gpu", "2401.01234"]
    abstained = Answer(text="The indexed abstracts do not answer this question.", abstained=True)
    assert abstained.to_bibtex() == "" and abstained.to_markdown() == abstained.text + "\n"
    offered = Answer(text="The model did not find the answer.", abstained=True,
                     evidence=[Citation(1, ARXIV, evidence=("First sentence.", "Second one."))])
    assert offered.to_markdown() == ("The model did not find the answer.\n\n**Closest evidence found** (not an answer)\n\n"
                                     "1. [An arXiv paper](<https://arxiv.org/abs/2401.01234>). `arxiv.jsonl`\n"
                                     "   > First sentence.\n   > Second one.\n")


def test_markdown_link_text_is_escaped() -> None:
    paper = Abstract(id="b", title="Brackets [in] titles", text="x" * 50, source="s.txt", url="https://e.org")
    assert markdown_reference(3, paper) == "3. [Brackets \\[in\\] titles](<https://e.org>). `s.txt`"


def test_only_web_links_reach_a_reference() -> None:
    hostile = Abstract(id="h", title="T", text="x" * 50, source="s.txt", url="javascript:alert(1)")
    assert "javascript" not in markdown_reference(1, hostile) and "javascript" not in bibtex_entry(hostile)


PUBMED = Abstract(id="pmid:99000001", title="Intermittent fasting and insulin sensitivity", text="x" * 60,
                  source="pubmed.xml", url="https://doi.org/10.5555/exmp.2024.001", authors=("Okafor, Ngozi", "Example Lab"),
                  year=2024, doi="10.5555/exmp.2024.001", pmid="99000001", extra={"journal": "J Exmp Metab"})


def test_ris_carries_the_id_identifiers_and_journal_and_parses_with_rispy() -> None:
    text = ris([PUBMED, ARXIV])
    assert not text.startswith("1.")  # rispy's own writer numbers records, which is not RIS
    journal, preprint = rispy.loads(text)
    assert (journal["type_of_reference"], journal["id"], journal["doi"], journal["accession_number"],
            journal["journal_name"], journal["year"], journal["authors"]) == (
        "JOUR", "pmid:99000001", "10.5555/exmp.2024.001", "99000001", "J Exmp Metab", "2024", ["Okafor, Ngozi", "Example Lab"])
    assert preprint["type_of_reference"] == "GEN" and preprint["urls"] == ["https://arxiv.org/abs/2401.01234"]
    assert ris([]) == ""


def test_csl_json_names_types_and_identifiers() -> None:
    journal, preprint = json.loads(csl_json([PUBMED, ARXIV]))
    assert journal["type"] == "article-journal" and journal["container-title"] == "J Exmp Metab"
    assert journal["author"] == [{"family": "Okafor", "given": "Ngozi"}, {"literal": "Example Lab"}]
    assert (journal["DOI"], journal["PMID"], journal["issued"]) == ("10.5555/exmp.2024.001", "99000001", {"date-parts": [[2024]]})
    assert preprint["type"] == "article" and preprint["number"] == "arXiv:2401.01234"
    assert json.loads(csl_json([])) == []


def test_ris_and_csl_json_read_back_as_the_same_abstracts(tmp_path: Path) -> None:
    """Every bundled abstract and the records above go out and come back through our own
    loaders with the same id, text, title, authors, year and identifiers."""
    originals = list({a.id: a for a in corpus.load([BUNDLED_CORPUS]) if isinstance(a, Abstract)}.values())
    originals += [ARXIV, PUBMED, TRICKY]
    answer = Answer(text="x", citations=[Citation(n, a) for n, a in enumerate(originals, start=1)])
    for name, text in (("out.ris", answer.to_ris()), ("out.json", answer.to_csl_json())):
        (tmp_path / name).write_text(text)
        loaded = list(corpus.load([tmp_path / name]))
        assert len(loaded) == len(originals) and all(isinstance(a, Abstract) for a in loaded), name
        for original, back in zip(originals, loaded, strict=True):
            assert (back.id, back.text, back.title, back.authors, back.year, back.pmid) == (
                original.id, original.text, original.title, original.authors, original.year, original.pmid), (
                name, original.id)
        assert [a.doi for a in loaded[-2:]] == [PUBMED.doi, "10.1000/xyz_1"]  # TRICKY's, from its doi.org link
        assert loaded[-3].arxiv_id == "2401.01234" and loaded[-2].extra["journal"] == "J Exmp Metab"
