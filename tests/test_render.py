"""The app's HTML: escaping, citation links, unsupported sentences, upload reports."""

from __future__ import annotations

from assistant import Abstract, Answer, Citation, Hit, IngestReport, Rejected
from assistant.render import answer_html, ingest_html, sources_html, streaming_html

EVIL = Abstract(
    id="x", text="<script>alert(1)</script> A claim. <img src=x onerror=alert(2)>", title="<b>T</b>",
    source="s.jsonl", url="javascript:alert(3)",
)
PLAIN = Abstract(id="p", text="Plain text. Supporting sentence here.", title="Plain", source="p.txt",
                 url="https://arxiv.org/abs/1234.5678", year=2024)


def test_abstract_text_and_model_output_are_escaped() -> None:
    answer = Answer(text="<img src=x onerror=alert(4)> claim [1]",
                    citations=[Citation(1, EVIL, evidence=("<script>alert(1)</script>",))],
                    sources=[Hit(EVIL, 1.0, 1)], unsupported=["<i>x</i> made up"])
    rendered = sources_html(answer) + answer_html(answer) + streaming_html(answer.text)
    assert "<script>" not in rendered and "<img" not in rendered and "<i>" not in rendered
    assert "<b>" not in rendered and "javascript:" not in rendered
    assert "&lt;script&gt;" in rendered


def test_citation_markers_link_to_their_source_in_the_panel() -> None:
    answer = Answer(text="Claim one [1]. Claim two [2].",
                    citations=[Citation(1, PLAIN, evidence=("Supporting sentence here.",)),
                               Citation(2, EVIL, evidence=())],
                    sources=[Hit(PLAIN, 1.0, 1), Hit(EVIL, 0.9, 2)])
    chat, panel = answer_html(answer), sources_html(answer)
    for n in (1, 2):
        assert f'href="#source-{n}"' in chat and f'id="source-{n}"' in panel
    assert '<a href="https://arxiv.org/abs/1234.5678"' in panel
    assert '<mark class="evidence">Supporting sentence here.</mark>' in panel
    assert "p.txt · 2024" in panel
    assert "Retrieved, not cited" not in panel


def test_unsupported_sentences_are_marked_in_place() -> None:
    answer = Answer(text="Supported [1]. Invented claim.", citations=[Citation(1, PLAIN)],
                    sources=[Hit(PLAIN, 1.0, 1)], unsupported=["Invented claim."])
    assert '<span class="unsupported" title="No source supports this sentence">⚠ Invented claim.</span>' in answer_html(answer)


def test_abstention_shows_as_such_with_the_closest_abstracts() -> None:
    answer = Answer(text="The indexed abstracts do not answer this question.", abstained=True,
                    sources=[Hit(PLAIN, 0.2, 1, passage="Plain text.")])
    panel = sources_html(answer)
    assert "No answer" in panel and "Retrieved (1)" in panel and "Plain text." in panel


def test_ingest_report_lists_what_was_rejected() -> None:
    report = IngestReport(added=2, duplicates=1, rejected=[
        Rejected("/tmp/up/bad.jsonl", 3, "invalid JSON: <oops>"), Rejected("/tmp/up/x.pdf", None, "unsupported")])
    html = ingest_html(report, ["/tmp/up/bad.jsonl", "/tmp/up/x.pdf"])
    assert "added 2 abstracts, skipped 1 already indexed, rejected 2" in html
    assert "bad.jsonl line 3: invalid JSON: &lt;oops&gt;" in html and "x.pdf: unsupported" in html
    assert "/tmp/up" not in html


def test_statements_set_aside_are_counted_under_the_answer() -> None:
    answer = Answer(text="Supported [1].", citations=[Citation(1, PLAIN)], sources=[Hit(PLAIN, 1.0, 1)],
                    set_aside=["A related paper does <b>something</b> else", "Another one"])
    rendered = answer_html(answer)
    assert "2 statements left out: only a source ranked well below the best supports it." in rendered
    assert "<li>A related paper does &lt;b&gt;something&lt;/b&gt; else</li><li>Another one</li>" in rendered
    assert "left out" not in answer_html(Answer(text="Supported [1].", citations=[Citation(1, PLAIN)]))
