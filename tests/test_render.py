"""The app's HTML: escaping, citation links to each answer's own sources, export buttons, the
retrieved and search views, unsupported sentences, upload reports."""

from __future__ import annotations

from assistant import Abstract, Answer, Citation, Finding, Hit, IngestReport, Rejected, Study
import html

from assistant.render import (
    answer_html,
    findings_html,
    ingest_html,
    KEYWORD_ONLY_NOTE,
    retrieved_html,
    search_html,
    sources_html,
    STOPPED,
    stopped_html,
    streaming_html,
)

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
    rendered = sources_html(answer) + answer_html(answer, 1) + streaming_html(answer.text)
    rendered += retrieved_html(answer.sources) + search_html(answer.sources)
    assert "<script>" not in rendered and "<img" not in rendered and "<i>" not in rendered
    assert "<b>" not in rendered and "javascript:" not in rendered
    assert "&lt;script&gt;" in rendered


def test_citation_markers_link_to_their_own_answers_sources() -> None:
    answer = Answer(text="Claim one [1]. Claim two [2].",
                    citations=[Citation(1, PLAIN, evidence=("Supporting sentence here.",)),
                               Citation(2, EVIL, evidence=())],
                    sources=[Hit(PLAIN, 1.0, 1), Hit(EVIL, 0.9, 2)])
    second, third, panel = answer_html(answer, 2), answer_html(answer, 3), sources_html(answer)
    for n in (1, 2):
        assert f'href="#t2-source-{n}"' in second and f'id="t2-source-{n}"' in second
        assert f'href="#t3-source-{n}"' in third and "t2-source" not in third
        assert f'id="source-{n}"' in panel
    for rendered in (second, panel):
        assert '<a href="https://arxiv.org/abs/1234.5678"' in rendered
        assert '<mark class="evidence">Supporting sentence here.</mark>' in rendered
        assert "p.txt · 2024" in rendered
    assert "Retrieved, not cited" not in panel


def test_each_answer_carries_its_markdown_bibtex_and_ris_on_one_line() -> None:
    answer = Answer(text="Claim [1].", citations=[Citation(1, PLAIN)], sources=[Hit(PLAIN, 1.0, 1)])
    rendered = answer_html(answer, 4)
    footer = rendered[rendered.index('<div class="turn-footer" id="t4-footer">'):]
    assert "\n" not in footer
    markdown = footer.split('<pre class="export export-markdown">')[1].split("</pre>")[0]
    bibtex = footer.split('<pre class="export export-bibtex">')[1].split("</pre>")[0]
    assert html.unescape(markdown) == answer.to_markdown()
    assert html.unescape(bibtex) == answer.to_bibtex()
    ris = footer.split('<pre class="export export-ris">')[1].split("</pre>")[0]
    assert html.unescape(ris) == answer.to_ris() and "TY  - " in answer.to_ris()
    assert "<button" in footer and "data-" not in footer  # the chat's sanitizer drops data attributes
    abstained = Answer(text="The indexed abstracts do not answer this question.", abstained=True)
    assert "turn-footer" not in answer_html(abstained, 5)


def test_streamed_markers_are_not_linked_before_verification() -> None:
    assert streaming_html("So [2].") == '<div class="streaming">So <span class="cite">[2]</span>.</div>'


def test_retrieved_and_search_views_list_hits_in_rank_order_with_their_passage() -> None:
    hits = [Hit(PLAIN, 1.0, 1, passage="Supporting sentence here."), Hit(EVIL, 0.5, 2, passage="A claim.")]
    retrieved, results = retrieved_html(hits), search_html(hits)
    assert "Found 2 abstracts" in retrieved and 'id="retrieved-1"' in retrieved and 'id="retrieved-2"' in retrieved
    assert results.index('id="result-1"') < results.index('id="result-2"')
    assert '<mark class="passage">Supporting sentence here.</mark>' in results
    assert "p.txt · 2024" in results and "source" not in results.split('class="')[1]
    assert "No indexed abstract matches" in search_html([]) and "No indexed abstract" in retrieved_html([])


def test_unsupported_sentences_are_marked_in_place() -> None:
    answer = Answer(text="Supported [1]. Invented claim.", citations=[Citation(1, PLAIN)],
                    sources=[Hit(PLAIN, 1.0, 1)], unsupported=["Invented claim."])
    assert '<span class="unsupported" title="No source supports this sentence">⚠ Invented claim.</span>' in answer_html(answer, 1)


def test_abstention_says_what_happened_and_shows_the_closest_evidence_expanded() -> None:
    reason = "The model did not find the answer in the abstracts it read."
    answer = Answer(text=reason, abstained=True, sources=[Hit(PLAIN, 0.9, 1, passage="Plain text.")],
                    evidence=[Citation(1, PLAIN, evidence=("Supporting sentence here.",))])
    panel = sources_html(answer)
    assert f"No verified answer.</strong> {reason}" in panel and "Retrieved (1)" not in panel
    evidence = panel[panel.index('class="evidence-found"'):]
    assert "not an answer" in evidence and '<ul><li><mark class="evidence">Supporting sentence here.</mark>' in evidence
    assert evidence.index("<ul>") < evidence.index("<details>"), "the evidence sentences are shown, not collapsed"
    nothing = Answer(text="No indexed abstract is close enough.", abstained=True, sources=[Hit(PLAIN, 0.2, 1)])
    assert "evidence-found" not in sources_html(nothing) and "Retrieved (1)" in sources_html(nothing)


def test_a_verdict_is_a_badge_naming_the_sources_it_rests_on() -> None:
    other = Abstract(id="o", text="Other text.", title="Other", source="o.txt")
    answer = Answer(text="Yes, plain text [1]. No, other text [2].", verdict="mixed",
                    citations=[Citation(1, PLAIN, verdict="yes"), Citation(2, other, verdict="no")])
    rendered = answer_html(answer, 1)
    badge = rendered[: rendered.index("</span>") + len("</span>")]
    assert badge.startswith('<span class="verdict verdict-mixed">Verdict: mixed (yes <a class="cite" href="#t1-source-1"')
    assert rendered[len(badge):].startswith(" Yes,") and "no <a class=\"cite\" href=\"#t1-source-2\"" in badge
    assert "verdict" not in answer_html(Answer(text="Plain text [1].", citations=[Citation(1, PLAIN)]), 1)


def test_withheld_verdicts_are_listed_collapsed_under_the_answer() -> None:
    answer = Answer(text="Plain text [1].", citations=[Citation(1, PLAIN)], withheld=["Plain is <b>good</b>."])
    rendered = answer_html(answer, 1)
    assert "1 verdict left out" in rendered and "<li>Plain is &lt;b&gt;good&lt;/b&gt;.</li>" in rendered


def test_ingest_report_lists_what_was_rejected() -> None:
    report = IngestReport(added=2, duplicates=1, rejected=[
        Rejected("/tmp/up/bad.jsonl", 3, "invalid JSON: <oops>"), Rejected("/tmp/up/x.pdf", None, "unsupported")])
    html = ingest_html(report, ["/tmp/up/bad.jsonl", "/tmp/up/x.pdf"])
    assert "added 2 abstracts, skipped 1 already indexed, rejected 2" in html
    assert "bad.jsonl line 3: invalid JSON: &lt;oops&gt;" in html and "x.pdf: unsupported" in html
    assert "/tmp/up" not in html
    by_identifier = ingest_html(IngestReport(added=1, duplicates=3, by_identifier=2), ["/tmp/up/zotero.ris"])
    assert "skipped 3 already indexed (2 by DOI, PMID or arXiv id), rejected 0" in by_identifier
    fetched = ingest_html(IngestReport(rejected=[Rejected("doi:10.1234/missing", None, "no such DOI")]),
                          ["10.1234/missing", "arXiv:hep-th/9901001"])
    assert "<strong>10.1234/missing, arXiv:hep-th/9901001</strong>" in fetched
    assert "<li>doi:10.1234/missing: no such DOI</li>" in fetched


def test_statements_left_out_are_listed_under_the_answer() -> None:
    answer = Answer(text="Supported [1]. Not verified here.", citations=[Citation(1, PLAIN)],
                    sources=[Hit(PLAIN, 1.0, 1)], unsupported=["Not verified here.", "while DDP reaches 0.08 REL"],
                    withheld=["Yes, it does."],
                    set_aside=["A related paper does <b>something</b> else", "Another one"])
    rendered = answer_html(answer, 1)
    assert "3 statements left out: no source that answers the question states it." in rendered
    assert ("<li>while DDP reaches 0.08 REL</li><li>A related paper does &lt;b&gt;something&lt;/b&gt; else</li>"
            "<li>Another one</li>") in rendered
    assert "⚠ Not verified here." in rendered and "⚠ marks sentences" in rendered
    assert "left out" not in answer_html(Answer(text="Supported [1].", citations=[Citation(1, PLAIN)]), 1)


def test_findings_are_a_table_above_the_answer_each_quote_highlighted_in_its_abstract_and_escaped() -> None:
    study = Study(year=2021, journal="J <Ex>", publication_type="Randomized Controlled Trial", sample_size=240)
    found = [Finding(PLAIN, "Supporting sentence here.", "result", "RESULTS", study, 1),
             Finding(PLAIN, "Plain text.", "conclusion", None, study, 1),
             Finding(EVIL, "<script>alert(1)</script> A claim.", "result", None, Study(), 2)]
    table = findings_html(found, 3)
    assert table.startswith('<table class="findings" id="t3-findings">') and table.count('id="t3-finding-') == 2
    assert "<script>" not in table and "&lt;script&gt;" in table and "J &lt;Ex&gt;" in table
    assert '<mark class="result">Supporting sentence here.</mark> <span class="meta">(RESULTS)</span>' in table
    assert '<p><mark class="conclusion">Plain text.</mark> <mark class="result">Supporting sentence here.</mark></p>' \
        in table, "both quotes highlighted in the abstract"
    assert "2021 · J &lt;Ex&gt; · Randomized Controlled Trial · n = 240" in table and "<td>–</td>" in table
    answer = Answer(text="The authors of [1] report: \u201cSupporting sentence here.\u201d",
                    citations=[Citation(1, PLAIN, ("Supporting sentence here.",), 1.0)], findings=found)
    shown = answer_html(answer, 3)
    assert shown.startswith('<table class="findings" id="t3-findings">'), "the table, then the answer"
    assert '<tr id="t3-finding-1"><td>' in shown and '<mark class="result">Supporting sentence here.</mark>' in shown
    assert '<tr id="t3-finding-2" class="not-cited">' in shown and "not cited by the answer" in shown
    assert '<mark class="result">&lt;script&gt;' not in shown, "a paper the answer does not cite is not shown as evidence"
    assert findings_html(found, 3, cited=None) == table and findings_html([], 1) == ""


def test_a_stopped_answer_keeps_its_findings_and_loses_its_unverified_text() -> None:
    table = '<table class="findings"><tr><td>quoted</td></tr></table>'
    assert stopped_html(table + streaming_html("Half an answer [1]")) == table + STOPPED
    assert stopped_html(table + '<em class="reading waiting">Waiting for the model: …</em>') == table + STOPPED
    finished = table + '<p>Verified [1].</p>'
    assert stopped_html(finished) == finished, "a verified answer stays as it is"


def test_results_found_by_keywords_alone_say_so_above_them() -> None:
    hybrid = [Hit(PLAIN, 1.0, 1, passage="Supporting sentence here.")]
    keyword = [Hit(PLAIN, 1.0, 1, passage="Supporting sentence here.", keyword_only=True)]
    for view in (retrieved_html, search_html):
        assert KEYWORD_ONLY_NOTE not in view(hybrid)
        assert view(keyword).index(html.escape(KEYWORD_ONLY_NOTE)) < view(keyword).index("<ol")
    answered = Answer(text="It is so [1].", citations=[Citation(1, PLAIN)], sources=keyword)
    assert html.escape(KEYWORD_ONLY_NOTE) in sources_html(answered)
    assert KEYWORD_ONLY_NOTE not in sources_html(Answer(text="It is so [1].", citations=[Citation(1, PLAIN)], sources=hybrid))
