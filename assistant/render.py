"""HTML for the chat app: answers with linked citation markers, the sources panel, and
ingest reports.

Everything that comes from an abstract, an uploaded file or the model is HTML-escaped
here, before any markup of ours is added, so a `<script>` in an abstract is shown as
text and never runs. Links are kept only for http(s) URLs.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from assistant.types import Abstract, Answer, IngestReport

_MARKER = re.compile(r"\[(\d+)\]")
MAX_REJECTED_SHOWN = 20

CSS = """
.source { border-left: 3px solid var(--color-accent); padding-left: .6em; margin-bottom: 1em; }
.source .meta { color: var(--body-text-color-subdued); font-size: .9em; }
mark.evidence { background: #fff3a3; color: inherit; }
.unsupported { text-decoration: underline wavy #c0392b; }
a.cite { text-decoration: none; font-weight: 600; }
"""


def link(url: str | None, text: str) -> str:
    """``text`` escaped, as a link when ``url`` is an http(s) URL."""
    if not url or not url.startswith(("http://", "https://")):
        return html.escape(text)
    return f'<a href="{html.escape(url, quote=True)}" target="_blank" rel="noopener">{html.escape(text)}</a>'


def _cite_links(escaped: str) -> str:
    """Turn each [n] of already-escaped text into a link to source n in the panel."""
    return _MARKER.sub(r'<a class="cite" href="#source-\1" title="Source \1">[\1]</a>', escaped)


def streaming_html(text: str) -> str:
    """The answer while it streams: escaped, with the model's [n] markers linked."""
    return _cite_links(html.escape(text))


def answer_html(answer: Answer) -> str:
    """The verified answer as shown in the chat: escaped, [n] markers linked to the
    sources panel, and each sentence no source supports marked with ⚠."""
    text = html.escape(answer.text)
    for sentence in answer.unsupported:
        escaped = html.escape(sentence)
        text = text.replace(
            escaped, f'<span class="unsupported" title="No source supports this sentence">⚠ {escaped}</span>', 1
        )
    text = _cite_links(text)
    if answer.unsupported:
        text += "\n\n<small>⚠ marks sentences that no retrieved abstract supports.</small>"
    if answer.set_aside:
        count = len(answer.set_aside)
        left_out = "".join(f"<li>{html.escape(claim)}</li>" for claim in answer.set_aside)
        text += (f"\n\n<details><summary><small>{count} statement{'s' if count > 1 else ''} left out: only a "
                 f"source ranked well below the best supports it.</small></summary><ul>{left_out}</ul></details>")
    return text


def _highlight(text: str, evidence: tuple[str, ...]) -> str:
    """The abstract's text, escaped, with its evidence sentences highlighted."""
    escaped = html.escape(text)
    for sentence in evidence:
        marked = html.escape(sentence)
        escaped = escaped.replace(marked, f'<mark class="evidence">{marked}</mark>', 1)
    return escaped


def _meta(abstract: Abstract) -> str:
    parts = [abstract.source]
    if abstract.year:
        parts.append(str(abstract.year))
    if abstract.authors:
        parts.append(", ".join(abstract.authors[:3]) + (" et al." if len(abstract.authors) > 3 else ""))
    return html.escape(" · ".join(parts))


def sources_html(answer: Answer | None) -> str:
    """The sources panel: each cited abstract (number, title, link, supporting sentences
    highlighted), then the retrieved but uncited ones, collapsed."""
    if answer is None:
        return "<p><em>The sources of the latest answer appear here.</em></p>"
    parts = []
    if answer.abstained:
        parts.append(
            '<p class="abstained"><strong>No answer:</strong> the indexed abstracts do not answer this '
            "question. The closest abstracts found are listed below.</p>"
        )
    for citation in answer.citations:
        abstract = citation.abstract
        evidence = "".join(f'<li><mark class="evidence">{html.escape(e)}</mark></li>' for e in citation.evidence)
        parts.append(
            f'<div class="source" id="source-{citation.number}">'
            f"<p><strong>[{citation.number}]</strong> {link(abstract.url, abstract.title)}</p>"
            f'<p class="meta">{_meta(abstract)}</p>'
            f"<ul>{evidence}</ul>"
            f"<details><summary>Full abstract</summary><p>{_highlight(abstract.text, citation.evidence)}</p></details>"
            "</div>"
        )
    cited = {c.abstract.id for c in answer.citations}
    others = [h for h in answer.sources if h.abstract.id not in cited]
    if others:
        items = "".join(
            f"<li>{link(h.abstract.url, h.abstract.title)} <span class=\"meta\">({_meta(h.abstract)})</span>"
            f"<br><small>{html.escape(h.passage)}</small></li>"
            for h in others
        )
        label = "Retrieved" if answer.abstained else "Retrieved, not cited"
        parts.append(f'<details class="uncited"><summary>{label} ({len(others)})</summary><ul>{items}</ul></details>')
    return "\n".join(parts)


def ingest_html(report: IngestReport, files: list[str]) -> str:
    """What an upload did: added, duplicates, and every rejected record with why."""
    names = ", ".join(html.escape(Path(f).name) for f in files)
    lines = [
        f"<p><strong>{names}</strong>: added {report.added} abstracts, skipped {report.duplicates} "
        f"already indexed, rejected {len(report.rejected)}.</p>"
    ]
    if report.rejected:
        shown = report.rejected[: MAX_REJECTED_SHOWN]
        items = "".join(
            f"<li>{html.escape(Path(r.source).name)}{f' line {r.line}' if r.line is not None else ''}: "
            f"{html.escape(r.reason)}</li>"
            for r in shown
        )
        more = len(report.rejected) - len(shown)
        if more:
            items += f"<li>… and {more} more</li>"
        lines.append(f'<p class="rejected">Rejected:</p><ul class="rejected">{items}</ul>')
    return "".join(lines)
