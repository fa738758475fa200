"""Citations enforced in code, whatever the model writes.

1. Parse the model's markers: [1], [1, 3], [1][2], [1-3], [1–3].
2. Split the answer into claims: a sentence, or the part of a sentence before each
   marker group ("X does A [1], while Y does B [2]" is two claims).
3. Take out refusals (`refusals`): a claim that says the sources do not answer is never
   cited; it is dropped from the answer and listed in ``declined``.
4. Verify each remaining claim against every source by meaning (`support`): its *support*
   is the best, over the abstract's sentences and pairs of adjacent sentences, of
   ``COSINE_WEIGHT`` x the embedding cosine of claim and passage plus the rest x the share of
   the claim's content words and numbers the passage contains (words that only frame a
   claim, such as "reports" or "another paper", left out; numbers compared as quantities). Hard constraints come first: every number of the
   claim must be a quantity the abstract states ("2.4B" = "2.4 billion"; `words`), and every
   name (acronym, CamelCase, capitalised word inside a sentence) must occur in it, an
   acronym also when spelled out. They catch spliced facts: a name from one abstract with a
   number from another. A claim is supported at ``SUPPORT_THRESHOLD``; weights and threshold
   were chosen on labelled claims (benchmarks/answers.py).
5. Attribute: the model's own citation is kept when that source supports the claim and no
   other supports it clearly better (``REATTRIBUTE_MARGIN``); otherwise the best supporting
   source is cited, and a claim no source supports is listed as unsupported (and keeps no
   citation; a claim that shares its sentence with a cited one is left out of the text, where
   it would read as cited). Sources that retrieval ranks well below the best (not *citable*)
   are guarded against padding: a claim only they support is set aside (left out of the
   answer), unless the model read them whole and they support it strongly (``STRONG_SUPPORT``; the caller
   says so with ``strong_exempt``). A small model shown one excerpt per source tends to
   write one sentence per source, copied from off-question ones; such copies are strongly
   supported, and only their rank gives them away. A claim that only
   restates the question (no content word of its own, or only words that say where or that
   something is written: "X is described in [1]", "Sources provide specific details on this
   phenomenon [2]") is left as it is, uncited, and does not count as an answer. A yes/no
   verdict about a named thing ("Yes, Time-MoE uses a mixture-of-experts design") is an
   answer, though, and verified like any claim. A claim written without a marker is cited
   to the source that states it, like any other. On a question about one paper
   (`Question.one_paper`), the answer cites one paper, the best-ranked that
   supports any of its claims; claims that paper does not state are set aside (`focus`).
6. Renumber the cited sources by first use: [1] is the first source the answer cites.

An answer of bare markers ("[1] [3]", typical of a small model for "which papers …"
questions), or one that only restates the question around its markers ("The work by [1]
found that …", `echoed_citations`), keeps its citations: each cited source's sentence
closest to the question is quoted instead (`quote_sources`), then verified like any answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

from collections.abc import Callable

import numpy as np

from assistant.answer.context import PromptSource
from assistant.answer.questions import Question, states_proposition
from assistant.answer.refusals import is_refusal
from assistant.corpus.display import sentences
from assistant.types import Citation, Finding
from assistant.words import (
    FRAMING,
    Quantity,
    Statement,
    content_words,
    named_terms,
    quantities,
    quantity_stated,
    share,
    specifics,
)

SUPPORT_THRESHOLD = 0.45
COSINE_WEIGHT = 0.4
REATTRIBUTE_MARGIN = 0.1
STRONG_SUPPORT = 0.6
QUOTE_SPECIFICS_WEIGHT = 0.2
Embed = Callable[[list[str]], np.ndarray]
_MARKER = re.compile(r"\s*\[(\s*\d+\s*(?:(?:[,;–-]|and)\s*\d+\s*)*)\]")
_RANGE = re.compile(r"(\d+)\s*[–-]\s*(\d+)")
_LINKING = {"by", "in", "from", "of", "see", "and"}
_NAMING = _LINKING | {"source", "sources", "study", "work", "paper", "papers"}
# Words that say where or that something is written, not what: "The authors of X are described
# in [1]" adds nothing to "Who are the authors of X?", and "Sources provide specific details on
# this phenomenon [2]" nothing to any question.
_REPORTING = content_words(
    "described mentioned discussed provided stated given listed detailed explained outlined addressed "
    "specific information phenomenon topic"
)
_YES_NO = re.compile(r"\s*(?:yes|no)\b", re.IGNORECASE)
# A verdict word is followed by punctuation: "No significant difference was found" is a finding.
_LEADING_VERDICT = re.compile(r"^\s*(yes|no|mixed)\s*[,.:;!\u2013\u2014-]+\s*", re.IGNORECASE)


def parse_marker(inner: str) -> list[int]:
    """The source numbers in one marker's inside: "1, 3" → [1, 3]; "1-3" → [1, 2, 3]."""
    numbers: list[int] = []
    for part in re.split(r"[,;]|and", inner):
        part = part.strip()
        ranged = _RANGE.fullmatch(part)
        if ranged:
            low, high = int(ranged.group(1)), int(ranged.group(2))
            numbers += list(range(low, high + 1)) if 0 < high - low < 20 else [low, high]
        elif part.isdigit():
            numbers.append(int(part))
    return numbers


@dataclass
class Claim:
    """A piece of the answer, the sources the model cited for it, and what supports it."""

    text: str
    cited: list[int]
    trailer: str = ""
    support: dict[int, float] | None = None
    source: int | None = None
    set_aside: bool = False
    restates: bool = False
    refusal: bool = False
    verdict: str | None = None
    withheld: bool = False
    proposition: bool = False
    evidence: dict[int, Evidence] | None = None
    sentence: int = 0


def _move_inline_markers(sentence: str) -> str:
    """Markers used as words ("The study by [1] shows X", "Sources [2] and [4] give X")
    move to the end of the sentence, so that dropping one leaves no gap in the text."""
    moved: list[str] = []
    kept: list[str] = []
    position = 0
    for match in _MARKER.finditer(sentence):
        before = sentence[position : match.start()]
        words = before.split()
        follows = re.match(r"\s*,?\s*[A-Za-z(]", sentence[match.end() :])
        if words and words[-1].lower() in _NAMING and follows:
            if words[-1].lower() in _LINKING:
                before = before[: before.rstrip().rfind(" ") + 1] if len(words) > 1 else ""
            moved.append(match.group(0).strip())
            kept.append(before)
        else:
            kept.append(sentence[position : match.end()])
        position = match.end()
    if not moved:
        return sentence
    text = "".join(kept) + sentence[position:]
    text = re.sub(r"\s+([,;.!?])", r"\1", re.sub(r"\s{2,}", " ", text)).strip()
    body, end = (text[:-1], text[-1]) if text[-1:] in ".!?" else (text, "")
    return f"{body} {' '.join(moved)}{end}"


def split_claims(answer: str) -> list[Claim]:
    """Split an answer into claims at sentence ends and after each marker group."""
    claims: list[Claim] = []
    for number, sentence in enumerate(map(_move_inline_markers, sentences(answer))):
        position = 0
        for match in _MARKER.finditer(sentence):
            text = sentence[position : match.start()]
            numbers = parse_marker(match.group(1))
            if text.strip(" ,;.") or not claims:
                claims.append(Claim(text=text, cited=numbers, sentence=number))
            else:
                claims[-1].cited += numbers
            position = match.end()
        rest = sentence[position:]
        if rest.strip(" .,;:!?"):
            claims.append(Claim(text=rest, cited=[], sentence=number))
        elif claims:
            claims[-1].trailer += rest
    return claims


@dataclass(frozen=True)
class Evidence:
    """How well one source supports one claim: the score, the sentence(s) that state it
    best, and the claim's numbers and names the abstract lacks (then the score is 0)."""

    score: float
    sentences: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()


class SourceText:
    """What `support` needs of one source, read when a claim first needs it and then kept
    for the answer's other claims: what the whole abstract states (`Statement`), and each
    sentence's content words and numbers."""

    def __init__(self, source: PromptSource) -> None:
        abstract = source.hit.abstract
        self.statement = Statement(f"{abstract.title}. {abstract.text}" if abstract.titled else abstract.text)
        self._sentences = source.sentences

    @cached_property
    def words(self) -> tuple[frozenset[str], ...]:
        return tuple(frozenset(content_words(s, with_numbers=False)) for s in self._sentences)

    @cached_property
    def numbers(self) -> tuple[frozenset[Quantity], ...]:
        return tuple(quantities(s, words=True) for s in self._sentences)


def support(claim: str, claim_vector: np.ndarray, source: PromptSource, text: SourceText | None = None) -> Evidence:
    """How well ``source`` states ``claim`` (see the module docstring, step 4). ``text``:
    the source's `SourceText`, when several claims are checked against it."""
    text = text or SourceText(source)
    missing = tuple(text.statement.unstated_numbers(claim) + text.statement.unstated_names(claim))
    if missing or not source.sentences:
        return Evidence(0.0, (), missing)
    words = content_words(claim, with_numbers=False) - FRAMING
    stated_numbers = quantities(claim)
    size = len(words) + len(stated_numbers)
    best = Evidence(-1.0)
    for first in range(len(source.sentences)):
        for last in range(first, min(first + 2, len(source.sentences))):
            vector = source.vectors[first : last + 1].sum(axis=0)
            cosine = float(vector @ claim_vector) / (float(np.linalg.norm(vector)) or 1.0)
            found = len(words & frozenset().union(*text.words[first : last + 1]))
            if stated_numbers:
                in_unit = frozenset().union(*text.numbers[first : last + 1])
                found += sum(quantity_stated(q, in_unit) for q in stated_numbers)
            lexical = found / size if size else 0.0
            score = COSINE_WEIGHT * cosine + (1.0 - COSINE_WEIGHT) * lexical
            if score > best.score:
                best = Evidence(score, source.sentences[first : last + 1])
    return best


def _claim_core(text: str) -> str:
    """What a claim states, without a leading yes/no verdict."""
    return _LEADING_VERDICT.sub("", text).strip(" ,;:.")


def read_verdicts(claims: list[Claim], question: Question, verdicts: bool) -> None:
    """For an answer to a yes/no question: each claim's verdict word ("Yes, …", "No." before
    the claim it prefaces, "Mixed: …"), and which claims only state the question's
    proposition (`questions.states_proposition`).

    With ``verdicts`` (the answering model's verdicts can be trusted) a claim keeps its
    verdict word, and a proposition is verified like any claim. Without, the verdict words
    are taken out of the text and propositions are withheld (left out of the answer): what
    remains are the findings, which the reader weighs."""
    carried: str | None = None
    for claim in claims:
        match = _LEADING_VERDICT.match(claim.text)
        word = match.group(1).lower() if match else carried
        core = claim.text[match.end():] if match else claim.text
        if match and not content_words(core):  # "No." on its own: the verdict of the next claim
            carried, claim.withheld, claim.restates = word, not verdicts, verdicts
            continue
        carried = None
        if states_proposition(core, question):
            claim.proposition, claim.withheld = verdicts, not verdicts  # withheld as the model wrote it
        elif match and not verdicts:
            lead = claim.text[: len(claim.text) - len(claim.text.lstrip())]
            claim.text = lead + core[:1].upper() + core[1:]
        claim.verdict = word if verdicts else None


def _combined(values: set[str]) -> str | None:
    """One verdict for several: the one they share, else mixed."""
    if not values:
        return None
    return next(iter(values)) if len(values) == 1 else "mixed"


@dataclass
class Attribution:
    """The answer rewritten with verified, renumbered citations. ``verdict`` (yes, no,
    mixed, None) combines the verdicts of the supported claims; ``withheld`` lists the
    verdicts left out of the text (see `read_verdicts`)."""

    text: str
    citations: list[Citation]
    unsupported: list[str]
    supported_claims: int
    set_aside: list[str]
    declined: list[str]
    verdict: str | None = None
    withheld: list[str] = field(default_factory=list)


def attribute(
    answer: str,
    sources: list[PromptSource],
    embed: Embed,
    question: Question | None = None,
    citable: set[int] | None = None,
    strong_exempt: bool = True,
    verdicts: bool = True,
) -> Attribution:
    """Verify every claim of ``answer`` against ``sources`` and renumber the citations.

    ``embed`` embeds claims as the sources' sentences were embedded. ``citable``: the
    numbers of the sources any supported claim may cite (default: all); the others, with
    ``strong_exempt``, claims they support strongly. With the ``question``, a claim that
    only restates it ("Yes, the size of the chunks matters") is neither cited nor flagged,
    and it does not count as a supported claim; on a yes/no question verdicts are read, and
    kept only with ``verdicts`` (`read_verdicts`); and on a one-paper question the answer
    cites one paper (`focus`).
    """
    by_number = {s.number: s for s in sources}
    citable = set(by_number) if citable is None else citable
    asked = question.words if question else frozenset()
    claims = split_claims(answer)
    if question and question.yes_no:
        read_verdicts(claims, question, verdicts)
    checked = []
    for claim in claims:
        if claim.withheld or claim.restates:
            continue
        if is_refusal(claim.text):
            claim.refusal = True
        elif not claim.proposition and _restates(claim.text, asked):
            claim.restates = True
        else:
            checked.append(claim)
    vectors = embed([_claim_core(c.text) or c.text for c in checked]) if checked else []
    texts = {n: SourceText(s) for n, s in by_number.items()}
    for claim, vector in zip(checked, vectors, strict=True):
        claim.evidence = {n: support(_claim_core(claim.text), vector, s, texts[n]) for n, s in by_number.items()}
        backed = {n: e.score for n, e in claim.evidence.items() if e.score >= SUPPORT_THRESHOLD}
        allowed = {n: v for n, v in backed.items() if n in citable or (strong_exempt and v >= STRONG_SUPPORT)}
        if allowed:
            best = max(allowed, key=lambda n: allowed[n])
            own = [n for n in claim.cited if n in allowed and allowed[n] >= allowed[best] - REATTRIBUTE_MARGIN]
            claim.source = max(own, key=lambda n: allowed[n]) if own else best
        elif backed:  # only sources ranked well below the best support it: padding
            claim.set_aside = True
    if question and question.one_paper:
        focus(checked)

    order: dict[int, int] = {}
    evidence: dict[int, list[str]] = {}
    scores: dict[int, float] = {}
    verdicts_of: dict[int, set[str]] = {}
    pieces, unsupported = [], []
    cited_sentences = {c.sentence for c in claims if c.source is not None}
    for claim in claims:
        text = claim.text.rstrip()
        left_out = claim.set_aside or claim.refusal or claim.withheld
        unverified = not left_out and claim.source is None and not claim.restates and len(content_words(text)) >= 3
        if unverified:
            unsupported.append(text.strip(" ,;") if claim.sentence in cited_sentences else text.strip())
        # an unverified part of a sentence that cites a source would read as cited: left out
        if left_out or unverified and claim.sentence in cited_sentences:  # keep the sentence end it may have carried
            end = claim.trailer.strip() or (text[-1] if text[-1:] in ".!?" else "")
            if pieces and end and not pieces[-1].rstrip().endswith((".", "!", "?")):
                pieces[-1] = pieces[-1].rstrip(" ,;") + end
            continue
        if claim.source is None:
            pieces.append(text + claim.trailer)
            continue
        new = order.setdefault(claim.source, len(order) + 1)
        found = claim.evidence[claim.source]
        kept = evidence.setdefault(claim.source, [])
        kept += [s for s in found.sentences if s not in kept]
        scores[claim.source] = max(scores.get(claim.source, 0.0), found.score)
        verdicts_of.setdefault(claim.source, set()).update([claim.verdict] if claim.verdict else [])
        body, end = (text[:-1], text[-1]) if text[-1:] in ".!?" else (text, "")
        pieces.append(f"{body} [{new}]{end}{claim.trailer}")
    citations = [
        Citation(number=new, abstract=by_number[old].hit.abstract, evidence=tuple(evidence[old]), support=scores[old],
                 verdict=_combined(verdicts_of[old]))
        for old, new in sorted(order.items(), key=lambda item: item[1])
    ]
    text = re.sub(r"\s+([,;:])", r"\1", re.sub(r"\s+", " ", " ".join(p.strip() for p in pieces if p.strip()))).strip()
    return Attribution(
        text,
        citations,
        unsupported,
        supported_claims=sum(c.source is not None for c in claims),
        set_aside=[c.text.strip(" ,;") for c in claims if c.set_aside],
        declined=[c.text.strip(" ,;") for c in claims if c.refusal],
        verdict=_combined({c.verdict for c in citations if c.verdict}),
        withheld=[c.text.strip(" ,;") for c in claims if c.withheld and content_words(c.text)],
    )


def focus(claims: list[Claim]) -> None:
    """Make the verified ``claims`` of an answer to a one-paper question cite one paper: the
    best-ranked source (sources are numbered in rank order) that supports any of them. A claim
    it supports too is cited to it; one it does not is set aside: on such a question the
    paper that answers is retrieval's best far more often than not, and a second paper's
    claim states something the question did not ask (`Question.one_paper`)."""
    supported = [c for c in claims if c.source is not None]
    if not supported:
        return
    paper = min(c.source for c in supported if c.source is not None)
    for claim in supported:
        if claim.source == paper or claim.evidence is None:
            continue
        if claim.evidence[paper].score >= SUPPORT_THRESHOLD:
            claim.source = paper
        else:
            claim.source, claim.set_aside = None, True


def _restates(claim: str, asked: frozenset[str]) -> bool:
    """Whether a claim only repeats the question's content words (besides words that say
    where or that something is written), and is not a yes/no verdict about a name."""
    words = content_words(claim)
    return bool(asked and words and words - _REPORTING <= asked and not _names_a_verdict(claim))


def _names_a_verdict(claim: str) -> bool:
    """A yes/no answer about a named thing ("Yes, BLaIR outperforms existing methods"): it
    repeats the question's words but is an answer, verified like any claim. Without a name
    it is too generic to attribute ("Yes, chunk size matters" matches many abstracts)."""
    return bool(_YES_NO.match(claim)) and bool(named_terms(claim))


def bare_citations(answer: str) -> list[int]:
    """The source numbers of an answer made of citation markers only ("[1] [3]",
    "Sources: [1], [2]"); empty if the answer says anything else."""
    if re.sub(r"\bsources?\b|[\s:;,.]", "", _MARKER.sub("", answer), flags=re.IGNORECASE):
        return []
    return list(dict.fromkeys(n for m in _MARKER.finditer(answer) for n in parse_marker(m.group(1))))


def echoed_citations(answer: str, question: Question) -> list[int]:
    """The source numbers of an answer that only restates the question around its markers
    ("The work by [1] found that <the question's own words>"): like bare markers, it says
    which source answers and nothing more. Empty if any claim says something of its own."""
    asked = question.words
    claims = split_claims(answer)
    if not claims or not all(_restates(c.text, asked) or not content_words(c.text) for c in claims):
        return []
    return list(dict.fromkeys(n for c in claims for n in c.cited))


def quote_sources(numbers: list[int], sources: list[PromptSource], question: Question) -> str:
    """An answer quoting, for each of these sources, its excerpt's sentence closest to
    the question (sharing most of its words; stating specifics breaks near-ties), cited:
    what a bare-citation answer points at, spelled out."""
    by_number = {s.number: s for s in sources}
    asked = question.words

    def closeness(sentence: str) -> float:
        return share(asked, sentence) + QUOTE_SPECIFICS_WEIGHT * specifics(sentence)

    quotes = []
    for number in numbers:
        if number in by_number:
            candidates = sentences(by_number[number].excerpt) or [by_number[number].excerpt]
            best = max(candidates, key=closeness)
            body = best.rstrip(" .")
            quotes.append(f"{body} [{number}].")
    return " ".join(quotes)


_VERB = {"conclusion": "conclude", "result": "report"}
REPEATS_QUOTE = 0.8


def lead_with_quotes(quoted: list[Finding], checked: Attribution) -> tuple[str, list[Citation]]:
    """An answer that opens with these findings, quoted and cited ("The authors of [1]
    conclude: “…”"), followed by the verified answer ``checked``, its citations renumbered so
    that the quoted papers come first, without its sentences that only repeat a quote (sharing
    ``REPEATS_QUOTE`` of their content words with the quotes). A quote is its paper's own
    sentence, so it is its own evidence."""
    numbers: dict[str, int] = {}
    for finding in quoted:
        numbers.setdefault(finding.abstract.id, len(numbers) + 1)
    lead = " ".join(
        f"The authors of [{numbers[f.abstract.id]}] {_VERB.get(f.kind, 'report')}: \u201c{f.text.rstrip()}\u201d"
        for f in quoted
    )
    quotes = " ".join(f.text for f in quoted)
    kept = " ".join(s for s in sentences(checked.text)
                    if share(content_words(_MARKER.sub("", s)), quotes) < REPEATS_QUOTE)
    old = {str(c.number): c for c in checked.citations}  # `attribute` writes one number per marker

    def backing(marker: re.Match[str]) -> Citation | None:
        return old.get(marker.group(1).strip())

    cited = [c for m in _MARKER.finditer(kept) if (c := backing(m))]
    for citation in cited:
        numbers.setdefault(citation.abstract.id, len(numbers) + 1)
    # a marker no verified citation backs cites nothing
    rest = _MARKER.sub(lambda m: f" [{numbers[c.abstract.id]}]" if (c := backing(m)) else "", kept)
    papers = {f.abstract.id: f.abstract for f in quoted} | {c.abstract.id: c.abstract for c in cited}
    model = {c.abstract.id: c for c in cited}
    citations = []
    for paper, number in numbers.items():
        own = [f.text for f in quoted if f.abstract.id == paper]
        also = model.get(paper)
        evidence = tuple(dict.fromkeys([*own, *(also.evidence if also else ())]))
        support = 1.0 if own else also.support if also else 0.0
        citations.append(Citation(number, papers[paper], evidence, support, also.verdict if also else None))
    return " ".join(part for part in (lead, rest.strip()) if part), citations
