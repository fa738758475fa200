"""The records that cross module boundaries."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from assistant import identifiers, references

SHARED = "shared"  # the library everyone sees; each user's own is `private_library(name)`


def stored_key(abstract_id: str, library: str) -> str:
    """The key the index keeps an abstract of this id and library under (`Abstract.key`)."""
    return abstract_id if library == SHARED else f"{abstract_id}@{library}"


def private_library(user: str) -> str:
    """The name of a user's private library."""
    return f"user:{user}"


@dataclass(frozen=True)
class Abstract:
    """One paper abstract, whatever format it came from.

    ``id`` is the record's own id when it has one (BEIR ``_id``, arXiv id, BibTeX key),
    else a hash of its text, so it is stable across runs. ``title`` is the paper's title
    or, for untitled abstracts, a readable title derived from the text (``titled`` tells
    which). ``source`` names the file it was loaded from. ``doi`` (lower case, no resolver
    prefix), ``pmid`` and ``arxiv_id`` (no version) are normalised by `assistant.identifiers`;
    the journal or venue, when known, is ``extra["journal"]``. ``library`` is the library
    that holds it: `SHARED`, or a user's private one (`private_library`).
    """

    id: str
    text: str
    title: str
    source: str
    url: str | None = None
    authors: tuple[str, ...] = ()
    year: int | None = None
    titled: bool = True
    doi: str | None = None
    pmid: str | None = None
    arxiv_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    library: str = SHARED

    @property
    def key(self) -> str:
        """Where the index keeps it: its id in the shared library, its id and library in a
        private one, so that two users can each hold the same paper without either's ingest
        touching, or learning of, the other's copy."""
        return stored_key(self.id, self.library)

    @property
    def identity(self) -> tuple[str, ...]:
        """Its identity keys (``doi:…``, ``pmid:…``, ``arxiv:…``): records that share one
        are the same paper, whichever tool exported them."""
        return identifiers.keys(self.doi, self.pmid, self.arxiv_id)


@dataclass(frozen=True)
class Rejected:
    """A record or file that could not be loaded, with where and why."""

    source: str
    line: int | None
    reason: str

    def __str__(self) -> str:
        where = f"{self.source}:{self.line}" if self.line is not None else self.source
        return f"{where}: {self.reason}"


@dataclass(frozen=True)
class Chunk:
    """A token-bounded piece of an abstract, the unit that is embedded."""

    id: str
    abstract_id: str
    index: int
    text: str


@dataclass(frozen=True)
class Hit:
    """One search result: an abstract, its fused score, its rank (1 = best), and the
    passage that matched best. ``dense`` (cosine of the best chunk) and ``lexical`` (BM25)
    are the raw scores of each side, None where that side did not find the abstract;
    ``relevance`` (0-1) says how likely this abstract answers the question. ``keyword_only``:
    found by the lexical side alone, because Chroma's vector index was still loading (at
    start-up, or after another process's ingest); its dense score was computed from its text."""

    abstract: Abstract
    score: float
    rank: int
    passage: str = ""
    dense: float | None = None
    lexical: float | None = None
    relevance: float = 0.0
    keyword_only: bool = False


@dataclass(frozen=True)
class Study:
    """A study at a glance, read from its record: year, journal, publication type (the
    study's design where the record says it: "Randomized Controlled Trial", "Review") and the
    sample size the abstract states (None where it states none in a form read as one)."""

    year: int | None = None
    journal: str | None = None
    publication_type: str | None = None
    sample_size: int | None = None

    def line(self) -> str:
        """"2000 · J Gen Intern Med · Randomized Controlled Trial · n = 1,099" (what is known)."""
        parts = [str(self.year) if self.year else "", self.journal or "", self.publication_type or "",
                 f"n = {self.sample_size:,}" if self.sample_size else ""]
        return " · ".join(p for p in parts if p)


@dataclass(frozen=True)
class Finding:
    """A paper's own sentence, quoted verbatim, chosen by code before the model writes: its
    authors' conclusion (``kind`` "conclusion": the section a structured abstract labels as
    one, else closing sentences that conclude) or the result that best answers the question
    ("result"). ``section`` is the label of the section it is in ("RESULTS"), None for an
    unstructured abstract; ``study`` the paper's snapshot; ``rank`` its hit's search rank."""

    abstract: Abstract
    text: str
    kind: str
    section: str | None = None
    study: Study = field(default_factory=Study)
    rank: int = 0


def by_paper(findings: list[Finding]) -> list[list[Finding]]:
    """The findings grouped per paper (result, then conclusion), papers in the order they come."""
    groups: dict[str, list[Finding]] = {}
    for finding in findings:
        groups.setdefault(finding.abstract.id, []).append(finding)
    return list(groups.values())


def findings_lines(findings: list[Finding]) -> list[str]:
    """The findings as text lines, one block per paper: its rank and title, its study snapshot,
    then each finding quoted with its kind and section ("Conclusion (CONCLUSIONS): “…”")."""
    lines = []
    for group in by_paper(findings):
        first = group[0]
        snapshot = first.study.line()
        lines.append(f"{first.rank}. {first.abstract.title}" + (f" ({snapshot})" if snapshot else ""))
        for finding in group:
            where = f" ({finding.section})" if finding.section else ""
            lines.append(f"   {finding.kind.capitalize()}{where}: \u201c{finding.text}\u201d")
    return lines


@dataclass(frozen=True)
class Retrieved:
    """The first event of an answer stream (`Assistant.ask_events`): the abstracts found for
    ``question`` (the standalone question, after a chat follow-up is rewritten), and each
    relevant one's findings (`Finding`), before the model writes anything.

    A chat follow-up asked with ``preview`` yields two: first a ``preview``, found for the
    follow-up read after the previous question, with no model (rewriting needs the model,
    which may be busy with other users' answers), then the rewritten question's."""

    question: str
    hits: list[Hit]
    findings: list[Finding] = field(default_factory=list)
    preview: bool = False


MAX_LISTED_REJECTIONS = 10_000  # a baseline run rejects millions of abstract-less articles: counted, not all kept


@dataclass
class IngestReport:
    """What one ingest did: abstracts added, duplicates skipped (``by_identifier`` of them
    because another record has the same DOI, PMID or arXiv id), records rejected (the first
    `MAX_LISTED_REJECTIONS` listed in ``rejected``, the rest counted in ``more_rejected``),
    and files skipped because an interrupted ingest of the same files had finished them
    (``resumed_files``)."""

    added: int = 0
    duplicates: int = 0
    by_identifier: int = 0
    rejected: list[Rejected] = field(default_factory=list)
    more_rejected: int = 0
    chunks: int = 0
    seconds: float = 0.0
    resumed_files: int = 0

    def reject(self, item: Rejected) -> None:
        """Record a rejection: listed while the list is short, counted always."""
        if len(self.rejected) < MAX_LISTED_REJECTIONS:
            self.rejected.append(item)
        else:
            self.more_rejected += 1

    @property
    def rejected_count(self) -> int:
        return len(self.rejected) + self.more_rejected

    def summary(self) -> str:
        """A human-readable one-paragraph summary."""
        lines = [
            f"added {self.added} abstracts ({self.chunks} chunks) in {self.seconds:.1f} s, "
            f"skipped {self.duplicates} duplicates"
            + (f" ({self.by_identifier} by DOI, PMID or arXiv id)" if self.by_identifier else "")
            + f", rejected {self.rejected_count} records"
        ]
        if self.resumed_files:
            lines.append(f"  resumed an interrupted ingest: {self.resumed_files} files it had finished were skipped")
        lines += [f"  rejected {r}" for r in self.rejected]
        if self.more_rejected:
            lines.append(f"  … and {self.more_rejected} more rejected records (only the first {len(self.rejected)} "
                         "are listed)")
        return "\n".join(lines)


@dataclass
class SyncReport:
    """What a Zotero sync did: the ingest of new and changed items, how many items it fetched,
    how many abstracts left the index (changed or gone items), and the items without an
    abstract (title, identifier or None), which `Assistant.add` may fetch by identifier."""

    ingest: IngestReport
    fetched: int = 0
    removed: int = 0
    without_abstract: list[tuple[str, str | None]] = field(default_factory=list)

    @property
    def addable(self) -> list[str]:
        """The identifiers of the items without an abstract, for `Assistant.add`."""
        return [i for _, i in self.without_abstract if i]

    def summary(self) -> str:
        lines = [f"fetched {self.fetched} changed items; took out {self.removed} changed or removed ones", self.ingest.summary()]
        if self.without_abstract:
            lines.append(f"{len(self.without_abstract)} items have no abstract: "
                         + "; ".join(title[:60] for title, _ in self.without_abstract[:10])
                         + (f". Fetch those with an identifier: assistant add {' '.join(self.addable)}" if self.addable else ""))
        return "\n".join(lines)


@dataclass
class IngestProgress:
    """How far an ingest has got, passed to its ``on_progress`` after each batch and file: files
    done of the total; bytes (as stored: compressed, for a gzip file) read of those this run
    reads (files an interrupted run finished are left out); records read; abstracts added."""

    files_total: int
    bytes_total: int
    files_done: int = 0
    bytes_done: int = 0
    records: int = 0
    added: int = 0
    seconds: float = 0.0

    @property
    def fraction(self) -> float:
        return min(1.0, self.bytes_done / self.bytes_total) if self.bytes_total else 0.0

    @property
    def rate(self) -> float:
        """Records read per second."""
        return self.records / self.seconds if self.seconds > 0 else 0.0

    @property
    def eta_seconds(self) -> float | None:
        """Seconds left at the pace so far (None until there is a pace)."""
        if not self.bytes_done or not self.seconds:
            return None
        return self.seconds * (self.bytes_total - self.bytes_done) / self.bytes_done

    def line(self) -> str:
        """"file 3 of 1,300 · 41,200 added · 850 records/s · about 2 h 10 min left"."""
        done = self.files_done >= self.files_total
        files = f"{self.files_total:,} file{'s' * (self.files_total != 1)}"
        parts = [files if done else f"file {self.files_done + 1:,} of {self.files_total:,}",
                 f"{self.added:,} added", f"{self.rate:,.0f} records/s"]
        if not done and (eta := self.eta_seconds) is not None:
            hours, minutes = divmod(round(eta / 60), 60)
            parts.append(f"about {hours} h {minutes} min left" if hours else
                         f"about {minutes} min left" if minutes else "under a minute left")
        return " · ".join(parts)


@dataclass
class Usage:
    """Tokens one generation used; filled in by the generator as it streams."""

    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass(frozen=True)
class Citation:
    """A numbered reference in an answer: the abstract, the sentence(s) of it that support
    the answer, and how strongly (the best support score of the claims citing it, 0-1).
    ``verdict`` is this paper's answer to a yes/no question (yes, no, mixed), when the
    answering model gives verdicts; the evidence sentences are what it rests on."""

    number: int
    abstract: Abstract
    evidence: tuple[str, ...] = ()
    support: float = 0.0
    verdict: str | None = None


@dataclass
class Answer:
    """An answer whose [n] markers point at ``citations`` (numbered by first use).

    ``abstained`` is True when no answer could be verified (``abstain_reason``:
    low_relevance, model_declined, unsupported or subject_not_cited; ``text`` says what
    happened in plain words); an abstention carries no citations, but when retrieval found
    relevant abstracts, ``evidence`` holds their sentences closest to the question, each with
    its abstract: evidence to read, not an answer. ``sources`` are the hits the model saw and
    ``excerpts`` what it read of each; ``unsupported`` the answer sentences no source
    supports; ``set_aside`` the claims left out of ``text`` because only a source ranked well
    below the best supports them, and weakly; ``declined`` the model's sentences saying the
    sources do not answer (never cited); ``verdict`` the answer to a yes/no question (yes, no,
    mixed; None for other questions, and for a model whose verdicts are not trusted), each
    paper's in its `Citation`; ``withheld`` the verdicts left out of ``text`` for such a model;
    ``findings`` are the relevant papers' own sentences, chosen before the model wrote
    (`Finding`; the same list as the stream's `Retrieved`); ``quoted`` those the answer opens
    with, in the authors' words (for a yes/no question from a model whose verdicts are not
    trusted). ``timings`` are seconds (retrieve, findings, first_token, total); ``raw_text`` is
    what the model wrote before citations were verified.
    """

    text: str
    citations: list[Citation] = field(default_factory=list)
    sources: list[Hit] = field(default_factory=list)
    abstained: bool = False
    abstain_reason: str | None = None
    unsupported: list[str] = field(default_factory=list)
    set_aside: list[str] = field(default_factory=list)
    declined: list[str] = field(default_factory=list)
    verdict: str | None = None
    withheld: list[str] = field(default_factory=list)
    evidence: list[Citation] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    quoted: list[Finding] = field(default_factory=list)
    excerpts: list[str] = field(default_factory=list)
    question: str = ""
    model: str = ""
    timings: dict[str, float] = field(default_factory=dict)
    usage: Usage | None = None
    raw_text: str = ""

    def references(self) -> list[str]:
        """One line per citation: number, display title, link."""
        return [
            f"[{c.number}] {c.abstract.title}" + (f" — {c.abstract.url}" if c.abstract.url else "")
            for c in self.citations
        ]

    def verdict_line(self) -> str | None:
        """The verdict with the sources it rests on ("Verdict: no [1]"; for a mixed one, each
        paper's: "Verdict: mixed (yes [1]; no [2])"), or None without a verdict."""
        if self.verdict is None:
            return None
        rests = [c for c in self.citations if c.verdict]
        if self.verdict == "mixed" and len(rests) > 1:
            return "Verdict: mixed (" + "; ".join(f"{c.verdict} [{c.number}]" for c in rests) + ")"
        return f"Verdict: {self.verdict} " + "".join(f"[{c.number}]" for c in rests)

    def to_markdown(self) -> str:
        """The relevant papers' findings, the verdict if any, the answer's text, then a numbered
        reference list with links (for notes); for an abstention, the closest evidence found,
        each sentence with its paper."""
        verdict = self.verdict_line()
        lines = ["**Findings** (quoted from each paper)", "", *(f"    {line}" for line in findings_lines(self.findings)),
                 ""] if self.findings else []
        lines += [f"**{verdict}**", "", self.text] if verdict else [self.text]
        if self.evidence:
            lines += ["", "**Closest evidence found** (not an answer)", ""]
            for c in self.evidence:
                lines += [references.markdown_reference(c.number, c.abstract), *(f"   > {e}" for e in c.evidence)]
        if self.citations:
            lines += ["", "**References**", ""]
            lines += [references.markdown_reference(c.number, c.abstract) for c in self.citations]
        return "\n".join(lines) + "\n"

    def to_bibtex(self) -> str:
        """One BibTeX entry per cited abstract, in citation order (empty when none)."""
        return references.bibtex([c.abstract for c in self.citations])

    def to_ris(self) -> str:
        """One RIS record per cited abstract, in citation order (Zotero, EndNote, Mendeley)."""
        return references.ris([c.abstract for c in self.citations])

    def to_csl_json(self) -> str:
        """The cited abstracts as a CSL JSON array, in citation order (Zotero, Pandoc)."""
        return references.csl_json([c.abstract for c in self.citations])

    def __str__(self) -> str:
        return "\n".join([self.text, "", *self.references()]) if self.citations else self.text

    def _repr_markdown_(self) -> str:
        return self.to_markdown()
