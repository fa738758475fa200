"""HTML for the app: answers with linked citation markers and their own sources, the sources
panel (retrieved abstracts first, then the verified answer's), search results and ingest
reports.

Everything that comes from an abstract, an uploaded file or the model is HTML-escaped
here, before any markup of ours is added, so a `<script>` in an abstract is shown as
text and never runs. Links are kept only for http(s) URLs. ``SCRIPT`` is the app's one
piece of JavaScript, ours: a citation marker opens and shows its source, and an answer's
"Copy as Markdown", "Download .bib" and "Download .ris" buttons hand over the text of its hidden ``pre.export``
elements (the chat's sanitizer drops data attributes, and keeps text).
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from assistant.remote.papers import parse as parse_identifier
from assistant.types import Abstract, Answer, Citation, Finding, Hit, IngestReport, SyncReport, by_paper

_MARKER = re.compile(r"\[(\d+)\]")
MAX_REJECTED_SHOWN = 20

CSS = """
.source, .hit { border-left: 3px solid var(--color-accent); padding-left: .6em; margin-bottom: 1em; }
.hit { list-style: none; }
.source .meta, .hit .meta { color: var(--body-text-color-subdued); font-size: .9em; }
mark.evidence, mark.passage, mark.result { background: #fff3a3; color: inherit; }
mark.conclusion { background: #d9ecff; color: inherit; }
table.findings { border-collapse: collapse; width: 100%; margin-bottom: .8em; font-size: .92em; table-layout: fixed; }
table.findings th.paper { width: 30%; } table.findings th.result { width: 40%; }
table.findings td { overflow-wrap: break-word; hyphens: auto; }
table.findings tr.not-cited td { color: var(--body-text-color-subdued); }
table.findings th, table.findings td { border: 1px solid var(--border-color-primary); padding: .3em .45em;
  vertical-align: top; text-align: left; }
table.findings .meta { color: var(--body-text-color-subdued); font-size: .9em; }
table.findings tr.finding-abstract td { border-top: none; padding-top: 0; }
.unsupported { text-decoration: underline wavy #c0392b; }
.verdict { display: inline-block; border-radius: 4px; padding: 0 .45em; margin-right: .3em; font-weight: 600;
  border: 1px solid var(--border-color-primary); }
.verdict-yes { background: #e3f4e1; } .verdict-no { background: #fbe3e1; } .verdict-mixed { background: #fdf1d6; }
.evidence-found { margin-bottom: 1em; }
a.cite, span.cite { text-decoration: none; font-weight: 600; }
.flash { outline: 2px solid var(--color-accent); }
.turn-footer { margin-top: .6em; font-size: .9em; }
.turn-footer pre.export { display: none; }
.turn-footer button { border: 1px solid var(--border-color-primary); border-radius: 4px; padding: 0 .5em;
  margin-right: .4em; cursor: pointer; }
"""

SCRIPT = """
<script>
document.addEventListener("click", (event) => {
  const cite = event.target.closest("a.cite");
  if (cite) {
    const target = document.getElementById(cite.getAttribute("href").slice(1));
    if (!target) return;
    event.preventDefault();
    event.stopPropagation();
    const box = target.closest("details");
    if (box) box.open = true;
    target.scrollIntoView({ block: "nearest" });
    target.classList.add("flash");
    setTimeout(() => target.classList.remove("flash"), 2000);
    return;
  }
  const button = event.target.closest(".turn-footer button");
  if (!button) return;
  const footer = button.closest(".turn-footer");
  if (button.classList.contains("copy-markdown")) {
    const markdown = footer.querySelector("pre.export-markdown").textContent;
    const done = () => { button.textContent = "Copied"; setTimeout(() => button.textContent = "Copy as Markdown", 1500); };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(markdown).then(done);
    } else {
      const area = document.createElement("textarea");
      area.value = markdown;
      document.body.appendChild(area);
      area.select();
      document.execCommand("copy");
      area.remove();
      done();
    }
  } else {
    const kind = ["bibtex", "ris"].find(name => button.classList.contains("download-" + name));
    if (!kind) return;
    const [suffix, type] = {bibtex: ["bib", "application/x-bibtex"], ris: ["ris", "application/x-research-info-systems"]}[kind];
    const text = footer.querySelector("pre.export-" + kind).textContent;
    const url = URL.createObjectURL(new Blob([text], { type: type }));
    const anchor = document.createElement("a");
    anchor.href = url;
    anchor.download = footer.id.replace(/^t(\\d+)-footer$/, "answer-$1." + suffix);
    document.body.appendChild(anchor);
    anchor.click();
    anchor.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  }
}, true);
</script>
"""


def link(url: str | None, text: str) -> str:
    """``text`` escaped, as a link when ``url`` is an http(s) URL."""
    if not url or not url.startswith(("http://", "https://")):
        return html.escape(text)
    return f'<a href="{html.escape(url, quote=True)}" target="_blank" rel="noopener">{html.escape(text)}</a>'


def _one_line(value: str) -> str:
    """``value`` escaped as HTML text on one line (the chat's Markdown renderer would end an
    HTML block at a blank line); the browser reads the newlines back."""
    return html.escape(value).replace("\n", "&#10;")


def source_id(turn: int, number: int) -> str:
    """The element id of source ``number`` of the chat's answer number ``turn``."""
    return f"t{turn}-source-{number}"


def streaming_html(text: str) -> str:
    """The answer while it streams: escaped, the model's [n] markers shown but not yet
    linked (they are renumbered when the answer is verified)."""
    return '<div class="streaming">' + _MARKER.sub(r'<span class="cite">[\1]</span>', html.escape(text)) + "</div>"


STOPPED = '<p class="stopped"><em>Stopped: this answer was not finished, and nothing of it was verified.</em></p>'


def stopped_html(message: str) -> str:
    """A chat message whose answer was stopped: its findings kept, what was still being read
    or written (never verified) replaced by a note that it was stopped."""
    cut = min((i for i in (message.find('<div class="streaming">'), message.find('<em class="reading')) if i >= 0),
              default=-1)
    return message if cut < 0 else message[:cut] + STOPPED


def _source_html(element_id: str, citation: Citation) -> str:
    """One cited abstract: number, linked title, file and year, the supporting sentences,
    and the whole abstract with them highlighted."""
    abstract = citation.abstract
    evidence = "".join(f'<li><mark class="evidence">{html.escape(e)}</mark></li>' for e in citation.evidence)
    return (
        f'<div class="source" id="{element_id}">'
        f"<p><strong>[{citation.number}]</strong> {link(abstract.url, abstract.title)}</p>"
        f'<p class="meta">{_meta(abstract)}</p>'
        f"<ul>{evidence}</ul>"
        f"<details><summary>Full abstract</summary><p>{_highlight(abstract.text, citation.evidence)}</p></details>"
        "</div>"
    )


def findings_html(findings: list[Finding], turn: int, cited: set[str] | None = None) -> str:
    """The relevant papers' findings as a table, one row per paper: its rank, linked title and
    study snapshot, then its result and its authors' conclusion, quoted (section label shown),
    and its whole abstract, collapsed, with both sentences highlighted. Once an answer is
    verified, ``cited`` names the papers it cites (abstract ids): the others' rows are shown
    as not cited, their sentences not highlighted as evidence. Empty without findings."""
    if not findings:
        return ""
    rows = []
    for group in by_paper(findings):
        first = group[0]
        evidence = cited is None or first.abstract.id in cited
        cells = {}
        for finding in group:
            section = f' <span class="meta">({html.escape(finding.section)})</span>' if finding.section else ""
            quote = html.escape(finding.text)
            cells[finding.kind] = (f'<mark class="{finding.kind}">{quote}</mark>' if evidence else quote) + section
        quoted = tuple(part for f in group for part in f.text.split(" … ")) if evidence else ()
        abstract = _highlight(first.abstract.text, quoted, {p: f.kind for f in group for p in f.text.split(" … ")})
        note, row = ("", "") if evidence else ('<div class="meta">not cited by the answer</div>', ' class="not-cited"')
        rows.append(
            f'<tr id="t{turn}-finding-{first.rank}"{row}><td>'
            f"<strong>{first.rank}.</strong> {link(first.abstract.url, first.abstract.title)}"
            f'<div class="meta">{html.escape(first.study.line())}</div>{note}</td>'
            f'<td>{cells.get("result", "–")}</td><td>{cells.get("conclusion", "–")}</td></tr>'
            f'<tr class="finding-abstract"><td colspan="3"><details><summary>Abstract of {first.rank}</summary>'
            f"<p>{abstract}</p></details></td></tr>"
        )
    return (
        f'<table class="findings" id="t{turn}-findings"><thead><tr><th class="paper">Paper</th>'
        f'<th class="result">Result</th><th class="conclusion">Authors\' conclusion</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>\n\n"
    )


def answer_html(answer: Answer, turn: int) -> str:
    """The verified answer as turn ``turn`` of the chat: escaped, each sentence no source
    supports marked with ⚠, and each [n] linked to this answer's own source n, listed
    (collapsed) under it with buttons to copy the answer as Markdown and download its
    references as BibTeX or RIS. Earlier answers thus keep their sources when new ones come.
    Above it, the papers' findings (`findings_html`)."""
    text = html.escape(answer.text)
    verdict = answer.verdict_line()
    if verdict:
        text = f'<span class="verdict verdict-{answer.verdict}">{html.escape(verdict)}</span> {text}'
    for sentence in answer.unsupported:
        escaped = html.escape(sentence)
        text = text.replace(
            escaped, f'<span class="unsupported" title="No source supports this sentence">⚠ {escaped}</span>', 1
        )
    text = _MARKER.sub(
        lambda m: f'<a class="cite" href="#{source_id(turn, int(m.group(1)))}" title="Source {m.group(1)}">'
        f"[{m.group(1)}]</a>",
        text,
    )
    marked = [claim for claim in answer.unsupported if html.escape(claim) in text]
    if marked:
        text += "\n\n<small>⚠ marks sentences that no retrieved abstract supports.</small>"
    dropped = [claim for claim in answer.unsupported if claim not in marked] + answer.set_aside
    if answer.withheld:
        count = len(answer.withheld)
        left_out = "".join(f"<li>{html.escape(claim)}</li>" for claim in answer.withheld)
        text += (f"\n\n<details><summary><small>{count} verdict{'s' if count > 1 else ''} left out: this model's "
                 f"yes/no verdicts are not reliable; read the findings.</small></summary><ul>{left_out}</ul></details>")
    if dropped:
        items = "".join(f"<li>{html.escape(claim)}</li>" for claim in dropped)
        text += (f"\n\n<details><summary><small>{len(dropped)} statement{'s' if len(dropped) > 1 else ''} left out: "
                 f"no source that answers the question states it.</small></summary><ul>{items}</ul></details>")
    cited = None if answer.abstained else {c.abstract.id for c in answer.citations}
    text = findings_html(answer.findings, turn, cited) + text
    if answer.citations:
        listed = "".join(_source_html(source_id(turn, c.number), c) for c in answer.citations)
        text += (
            f'\n\n<div class="turn-footer" id="t{turn}-footer">'
            f'<details class="turn-sources"><summary>Sources ({len(answer.citations)})</summary>{listed}</details>'
            '<button class="copy-markdown">Copy as Markdown</button><button class="download-bibtex">Download .bib</button>'
            '<button class="download-ris">Download .ris</button>'
            f'<pre class="export export-markdown">{_one_line(answer.to_markdown())}</pre>'
            f'<pre class="export export-bibtex">{_one_line(answer.to_bibtex())}</pre>'
            f'<pre class="export export-ris">{_one_line(answer.to_ris())}</pre>'
            "</div>"
        )
    return text


def _highlight(text: str, evidence: tuple[str, ...], mark: str | dict[str, str] = "evidence") -> str:
    """The abstract's text, escaped, with its evidence sentences highlighted (``mark``: the
    class of every mark, or each sentence's own)."""
    escaped = html.escape(text)
    for sentence in evidence:
        marked = html.escape(sentence)
        kind = mark if isinstance(mark, str) else mark.get(sentence, "evidence")
        escaped = escaped.replace(marked, f'<mark class="{kind}">{marked}</mark>', 1)
    return escaped


def _meta(abstract: Abstract) -> str:
    parts = [abstract.source]
    if abstract.year:
        parts.append(str(abstract.year))
    if abstract.authors:
        parts.append(", ".join(abstract.authors[:3]) + (" et al." if len(abstract.authors) > 3 else ""))
    return html.escape(" · ".join(parts))


def _hit_html(hit: Hit, element_id: str) -> str:
    """One search result: rank, linked title, file and year, its best passage highlighted,
    and the whole abstract (collapsed) with that passage marked."""
    abstract = hit.abstract
    return (
        f'<li class="hit" id="{element_id}"><p><strong>{hit.rank}.</strong> {link(abstract.url, abstract.title)}</p>'
        f'<p class="meta">{_meta(abstract)}</p>'
        f'<p><mark class="passage">{html.escape(hit.passage)}</mark></p>'
        f"<details><summary>Full abstract</summary><p>{_highlight(abstract.text, (hit.passage,), 'passage')}</p>"
        "</details></li>"
    )


KEYWORD_ONLY_NOTE = (
    "Found by keywords alone: the index's vectors are still loading (at start-up, or after another ingest). "
    "Ask again in a moment for the full search."
)


def keyword_note_html(hits: list[Hit]) -> str:
    """A note above results that the lexical side found alone (`Hit.keyword_only`); else empty."""
    if not any(hit.keyword_only for hit in hits):
        return ""
    return f'<p class="keyword-only"><em>{html.escape(KEYWORD_ONLY_NOTE)}</em></p>'


def retrieved_html(hits: list[Hit]) -> str:
    """The sources panel as soon as search returns, while the model reads: the retrieved
    abstracts in rank order."""
    if not hits:
        return '<p class="retrieved-note"><em>No indexed abstract matches this question.</em></p>'
    items = "".join(_hit_html(hit, f"retrieved-{hit.rank}") for hit in hits)
    return keyword_note_html(hits) + (
        f'<p class="retrieved-note"><em>Found {len(hits)} abstract{"s" if len(hits) > 1 else ""}; '
        f'the answer is being written from them…</em></p><ol class="retrieved">{items}</ol>'
    )


def search_html(hits: list[Hit]) -> str:
    """The search tab's results, best first."""
    if not hits:
        return '<p class="no-results"><em>No indexed abstract matches.</em></p>'
    items = "".join(_hit_html(hit, f"result-{hit.rank}") for hit in hits)
    return f'{keyword_note_html(hits)}<ol class="results">{items}</ol>'


def sources_html(answer: Answer | None) -> str:
    """The sources panel for an answer: each cited abstract (number, title, link, supporting
    sentences highlighted), then the retrieved but uncited ones, collapsed. For an abstention,
    what happened, then the closest evidence found, expanded, each sentence with its source."""
    if answer is None:
        return "<p><em>The sources of the latest answer appear here.</em></p>"
    parts = [note] if (note := keyword_note_html(answer.sources)) else []
    if answer.abstained:
        parts.append(f'<p class="abstained"><strong>No verified answer.</strong> {html.escape(answer.text)}</p>')
        if answer.evidence:
            parts.append('<div class="evidence-found"><p><strong>Closest evidence found</strong> '
                         "(evidence to read, not an answer):</p>"
                         + "".join(_source_html(f"evidence-{c.number}", c) for c in answer.evidence) + "</div>")
    parts += [_source_html(f"source-{c.number}", c) for c in answer.citations]
    shown = {c.abstract.id for c in answer.citations + answer.evidence}
    others = [h for h in answer.sources if h.abstract.id not in shown]
    if others:
        items = "".join(
            f"<li>{link(h.abstract.url, h.abstract.title)} <span class=\"meta\">({_meta(h.abstract)})</span>"
            f"<br><small>{html.escape(h.passage)}</small></li>"
            for h in others
        )
        label = "Retrieved" if answer.abstained else "Retrieved, not cited"
        parts.append(f'<details class="uncited"><summary>{label} ({len(others)})</summary><ul>{items}</ul></details>')
    return "\n".join(parts)


def _place(source: str) -> str:
    """What was added or rejected, as the user named it: a paper by its identifier, a file by
    its name (never the server's folder)."""
    return source if parse_identifier(source) else Path(source).name


def ingest_html(report: IngestReport, given: list[str]) -> str:
    """What an upload or an add by identifier did: added, duplicates, and every rejected record
    with why. ``given``: the uploaded files or the identifiers asked for."""
    names = ", ".join(html.escape(_place(g)) for g in given)
    lines = [
        f"<p><strong>{names}</strong>: added {report.added} abstracts, skipped {report.duplicates} "
        f"already indexed"
        + (f" ({report.by_identifier} by DOI, PMID or arXiv id)" if report.by_identifier else "")
        + f", rejected {report.rejected_count}.</p>"
    ]
    if report.rejected:
        shown = report.rejected[: MAX_REJECTED_SHOWN]
        items = "".join(
            f"<li>{html.escape(_place(r.source))}{f' line {r.line}' if r.line is not None else ''}: "
            f"{html.escape(r.reason)}</li>"
            for r in shown
        )
        more = report.rejected_count - len(shown)
        if more:
            items += f"<li>… and {more} more</li>"
        lines.append(f'<p class="rejected">Rejected:</p><ul class="rejected">{items}</ul>')
    return "".join(lines)


def sync_html(report: SyncReport) -> str:
    """What a Zotero sync did: items fetched and taken out, the ingest, the items without an abstract."""
    head = (f"<p><strong>Zotero</strong>: fetched {report.fetched} changed items, took out {report.removed}; "
            f"added {report.ingest.added} abstracts, rejected {report.ingest.rejected_count}.</p>")
    if not report.without_abstract:
        return head
    ids = " ".join(report.addable)
    return head + (f"<p>{len(report.without_abstract)} items have no abstract"
                   + (f"; add those with an identifier by ID: <code>{html.escape(ids)}</code>" if ids else "")
                   + ".</p>")
