"""Identifier normalisation: one paper's DOI, PMID and arXiv id as different tools write them."""

from __future__ import annotations

from assistant import identifiers


def test_a_doi_compares_equal_whatever_its_case_and_prefix() -> None:
    forms = ["10.5555/EXMP.2024.001", "https://doi.org/10.5555/exmp.2024.001", "doi: 10.5555/Exmp.2024.001",
             "http://dx.doi.org/10.5555/exmp.2024.001", "see https://doi.org/10.5555/exmp.2024.001."]
    assert {identifiers.doi(f) for f in forms} == {"10.5555/exmp.2024.001"}
    assert identifiers.doi("not a doi") is None and identifiers.doi(None) is None and identifiers.doi("") is None


def test_a_pmid_is_its_digits_from_any_form() -> None:
    forms = ["99000001", " PMID: 99000001", "https://pubmed.ncbi.nlm.nih.gov/99000001/",
             "https://www.ncbi.nlm.nih.gov/pubmed/99000001", 99000001]
    assert {identifiers.pmid(f) for f in forms} == {"99000001"}
    assert identifiers.pmid("WOS:000123456700001") is None  # a Web of Science accession number
    assert identifiers.pmid("2-s2.0-85000000000") is None and identifiers.pmid(0) is None


def test_an_arxiv_id_loses_its_version_and_its_wrapping() -> None:
    forms = ["2405.01234", "2405.01234v2", "arXiv:2405.01234v3", "http://arxiv.org/abs/2405.01234v2",
             "https://arxiv.org/pdf/2405.01234", "10.48550/arXiv.2405.01234"]
    assert {identifiers.arxiv_id(f) for f in forms} == {"2405.01234"}
    assert identifiers.arxiv_id("hep-th/9901001v1") == "hep-th/9901001"
    assert identifiers.arxiv_id("10.5555/exmp.2024.001") is None and identifiers.arxiv_id("3") is None


def test_identity_keys_name_their_kind() -> None:
    assert identifiers.keys("10.1/x", None, "2405.01234") == ("doi:10.1/x", "arxiv:2405.01234")
    assert identifiers.keys(None, None, None) == ()
