"""One question, end to end: retrieve → context → generate (streamed) → verify citations
→ `Answer`, or an honest abstention.

The stream yields the retrieved hits first, with each relevant paper's findings (`Retrieved`,
as soon as search returns and the papers' sentences are read: a UI shows the sources and the
papers' own results and conclusions while the model loads and reads; `findings`), then the
model's text deltas, then the verified `Answer`. The model reads each paper's findings first
(its excerpt opens with them), then what else fits the budget.

Every asker waits for the evidence, and only one reads an answer: retrieval and the reading go
first (`generators.Priority`), and a local model writing another question's answer waits
between tokens while they run.

The pipeline receives what it uses (`Parts`: search, embedder, the sentences' embedder,
generator, the question's subject terms, settings, the priority) from its caller and never
reaches back up into it.

The question is read once (`questions.analyse`): its words, names, numbers and form, which
the findings, the prompt and the claim check all take. A yes/no question is put to the model
as a request for the finding that decides it (``prompts/finding.md``), and its verdict is kept only where the answering
model's verdicts can be trusted (``Settings.verdicts``; `citations.read_verdicts`). For a model
whose verdicts are not trusted, the answer opens with the near-best papers' own conclusions (or,
where a paper states none, its result), quoted and cited (`findings.lead`,
`citations.lead_with_quotes`): an answer in the authors' words, not the model's verdict. The
model then adds the deciding result, reading a leaner excerpt (``quoted_context_tokens``) and
writing a shorter text (``quoted_max_tokens``): the quotes and the findings carry the detail.
Such an answer stands even when the model's own sentences are only verdicts. An answer to any
other question opens, for such a model (``Settings.results_lead``), with the result sentence of
each paper it cites, quoted (`findings.cited_results`): the numbers and comparisons a small
model's summary drops, in the authors' words, and no paper the verified answer does not cite.

The assistant abstains, with no citations, when
- retrieval finds nothing relevant enough (the top hit's relevance is below
  ``min_relevance``, and it does not contain the question's subject): the model is not
  even asked. A hit that contains the subject is about it, whatever the scores say: the
  small embedder has never seen most paper names, so "What does DReSD compare against?"
  scores low against the DReSD abstract;
- the model declines: it says, in any wording, that the sources do not answer
  (`refusals`), and supports no claim besides;
- no claim of the model's answer is supported by a source;
- the question names its subject (a paper's, method's or dataset's name that few indexed
  abstracts contain) and no cited abstract mentions it: the answer is about another paper;
- the model only gave verdicts, for a model whose verdicts are not trusted.
Each reason has its own message (``ABSTAIN_MESSAGES``), and whenever the model was asked, the
reader gets the evidence instead: the relevant abstracts' sentences closest to the question
(`context.closest_evidence`), offered as evidence, not as an answer.

A reply that answers part of the question keeps its supported claims; its refusal
sentences are dropped (`Answer.declined`) and its unsupported sentences are marked.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from assistant import prompts
from assistant.answer import citations, context, findings, questions
from assistant.answer.generators import Generator, Priority, Usage
from assistant.index.embedders import Embedder
from assistant.retrieval import SearchFilters
from assistant.settings import Settings
from assistant.types import Answer, Citation, Finding, Hit, Retrieved
from assistant.words import mentions

ABSTAIN_MESSAGES = {
    "low_relevance": "No indexed abstract is close enough to this question to answer it.",
    "model_declined": "The model did not find the answer in the abstracts it read.",
    "unsupported": "The model's answer is not shown: no sentence of it could be verified against the abstracts.",
    "subject_not_cited": "The model's answer is not shown: it cites no abstract that mentions {subject}.",
    "verdict_only": "The model's answer is not shown: it gave a verdict without the finding that decides it, "
    "and this model's verdicts are not reliable.",
}
EVIDENCE_NOTE = " The closest evidence found is shown with its sources: read it as evidence, not as an answer."
_NOT_IN_SOURCES = re.compile(r"\bNOT IN (?:THE )?SOURCES\b\.?", re.IGNORECASE)
Search = Callable[[str, int, SearchFilters | Mapping[str, Any] | None], list[Hit]]
Event = Retrieved | str | Answer


@dataclass(frozen=True)
class Parts:
    """What answering uses, handed down by the caller (an `Assistant`). The generator comes
    as a loader, called once the sources are known: loading a local model takes seconds, and
    the retrieved sources are handed over before that."""

    search: Search
    embedder: Embedder
    sentences: Embedder  # the abstracts' sentences' embedder: `sentence_vectors.SentenceVectors`, or ``embedder``
    load_generator: Callable[[], Generator]
    subject: Callable[[str], Mapping[str, list[str]]]  # `retrieval.subject_terms` within what search sees
    settings: Settings
    priority: Priority  # the evidence goes before the model's next token (shared with a local generator)


def _select(hits: list[Hit], ratio: float) -> list[Hit]:
    """The hits scoring at least ``ratio`` of the best."""
    return [h for h in hits if h.score >= ratio * hits[0].score] if hits else []


def _abstention(
    question: str, hits: list[Hit], reason: str, model: str, subject: str = "", **fields: Any
) -> Answer:
    text = ABSTAIN_MESSAGES[reason].format(subject=subject)
    return Answer(
        text=text + (EVIDENCE_NOTE if fields.get("evidence") else ""),
        citations=[],
        sources=hits,
        abstained=True,
        abstain_reason=reason,
        question=question,
        model=model,
        **fields,
    )


def read_findings(parts: Parts, question: questions.Question, hits: list[Hit]) -> tuple[context.Reading, list[Finding]]:
    """The hits the model is shown (in the sentences style, those scoring at least
    ``source_score_ratio`` of the best), read, and the findings of the relevant ones."""
    settings = parts.settings
    offered = hits if settings.context.style == "abstracts" else _select(hits, settings.source_score_ratio)
    reading = context.read(question, offered, parts.embedder, parts.sentences)
    return reading, findings.choose(reading, settings.min_relevance)


def gated(hits: list[Hit], subject: Mapping[str, list[str]], min_relevance: float) -> bool:
    """Whether the model is not asked (``low_relevance``): nothing was retrieved, or the top
    hit's relevance is below ``min_relevance`` and it is not one of the abstracts that name
    the question's ``subject`` (`retrieval.subject_terms`)."""
    named = {i for ids in subject.values() for i in ids}
    return not hits or (hits[0].relevance < min_relevance and hits[0].abstract.key not in named)


def names_subject(subject: Mapping[str, list[str]], cited: list[Citation]) -> bool:
    """Whether a cited abstract names one of the question's ``subject`` terms, in any
    spelling (`words.mentions`)."""
    text = " ".join(f"{c.abstract.title} {c.abstract.text}" for c in cited)
    return any(mentions(term, text) for term in subject)


def stream_answer(
    parts: Parts,
    question: str,
    standalone: str | None = None,
    k: int | None = None,
    filters: SearchFilters | Mapping[str, Any] | None = None,
) -> Iterator[Event]:
    """Yield the retrieved hits (`Retrieved`), the model's text deltas as they come, then
    the verified `Answer`.

    ``k`` (default: ``Settings.context.top_k``) is how many abstracts are retrieved;
    ``filters`` restrict them as in `Assistant.search`.
    """
    settings = parts.settings
    started = time.perf_counter()
    query = standalone or question
    plan = settings.context
    asked = questions.analyse(query)
    with parts.priority.first():  # every asker waits for the evidence; one reads the answer
        hits = parts.search(query, k or plan.top_k, filters)
        timings = {"retrieve": time.perf_counter() - started}
        subject = parts.subject(query)
        closed = gated(hits, subject, settings.min_relevance)
        reading, found = (None, []) if closed else read_findings(parts, asked, hits)
    if reading is None:
        yield Retrieved(query, hits)
        generator = parts.load_generator()
        timings["total"] = time.perf_counter() - started
        yield _abstention(query, hits, "low_relevance", generator.model_name, timings=timings)
        return
    timings["findings"] = time.perf_counter() - started
    yield Retrieved(query, hits, found)
    generator = parts.load_generator()
    near_best = {hit.abstract.id for hit in _select(hits, settings.citation_score_ratio)}
    # A yes/no question put to a model whose verdicts are not trusted: the answer will open with
    # the papers' own conclusions (or results), quoted; the model, shown each paper's result
    # first in a leaner prompt, adds the deciding result.
    quoting = asked.yes_no and not settings.gives_verdicts and bool(found)
    budget, most = plan.tokens, settings.llm_max_tokens
    if quoting:
        most = min(most, settings.quoted_max_tokens)
        budget = min(budget, settings.quoted_context_tokens) if plan.style == "sentences" else budget
    shown_first = findings.sentences_of([f for f in found if not quoting or f.kind == "result"], reading)
    sources, question_vector = context.build(reading, budget, plan.style, first=shown_first)
    prompt = _prompt(asked, sources, settings.gives_verdicts)
    usage = Usage()
    pieces: list[str] = []
    for delta in generator.stream([{"role": "user", "content": prompt}], most, usage):
        if not pieces:
            timings["first_token"] = time.perf_counter() - started
        pieces.append(delta)
        yield delta
    raw = "".join(pieces).strip()
    if usage.completion_tokens >= most:  # cut off at the token limit: its last sentence is unfinished
        raw = _finished(raw)
    timings["total"] = time.perf_counter() - started
    shown = [s.hit for s in sources]
    evidence = partial(context.closest_evidence, asked, question_vector, sources, settings.min_relevance)  # on abstention only
    fields = {"timings": timings, "usage": usage, "raw_text": raw, "excerpts": [s.excerpt for s in sources],
              "findings": found}
    marked = bool(_NOT_IN_SOURCES.search(raw))
    answer_text = _NOT_IN_SOURCES.sub("", raw).strip()  # the model may add it after an answer
    if not answer_text and not quoting:
        yield _abstention(query, shown, "model_declined", generator.model_name, evidence=evidence(), **fields)
        return
    bare = citations.bare_citations(answer_text) or citations.echoed_citations(answer_text, asked)
    if bare:
        answer_text = citations.quote_sources(bare, sources, asked) or answer_text
    citable = {s.number for s in sources if s.hit.abstract.id in near_best}
    checked = citations.attribute(
        answer_text, sources, parts.embedder.embed, asked, citable, strong_exempt=plan.style == "abstracts",
        verdicts=settings.gives_verdicts,
    )
    declined = checked.supported_claims == 0 and (bool(checked.declined) or marked or not answer_text)
    if quoting:
        quoted = findings.lead(found, asked, near_best, {c.abstract.id for c in checked.citations}, declined)
    elif not asked.yes_no and settings.leads_with_results:
        quoted = findings.cited_results(found, asked, [c.abstract.id for c in checked.citations])
    else:
        quoted = []
    if checked.supported_claims == 0 and not quoted:
        reason = "model_declined" if checked.declined or marked else "verdict_only" if checked.withheld else "unsupported"
        yield _abstention(query, shown, reason, generator.model_name, declined=checked.declined,
                          withheld=checked.withheld, evidence=evidence(), **fields)
        return
    text, cited = citations.lead_with_quotes(quoted, checked) if quoted else (checked.text, checked.citations)
    if subject and not names_subject(subject, cited):
        yield _abstention(query, shown, "subject_not_cited", generator.model_name, subject=_as_written(subject, query),
                          evidence=evidence(), **fields)
        return
    yield Answer(
        text=text,
        citations=cited,
        sources=shown,
        abstained=False,
        unsupported=checked.unsupported,
        set_aside=checked.set_aside,
        declined=checked.declined,
        verdict=checked.verdict,
        withheld=checked.withheld,
        quoted=quoted,
        question=query,
        model=generator.model_name,
        **fields,
    )


def _finished(text: str) -> str:
    """The text up to the end of its last finished sentence (a full stop, a question or
    exclamation mark, or a citation marker ending it); all of it when none is."""
    ends = [m.end() for m in re.finditer(r"[.!?](?=\s|$)|\](?=\s*$)", text)]
    return text[: ends[-1]].strip() if ends else text


def _as_written(terms: Mapping[str, Any], question: str) -> str:
    """The subject terms as the question spells them ("Time-MoE", not "time-moe")."""
    found = [re.search(re.escape(term), question, re.IGNORECASE) for term in terms]
    return ", ".join(m.group(0) if m else term for m, term in zip(found, terms, strict=True))


def _prompt(question: questions.Question, sources: list[context.PromptSource], verdicts: bool) -> str:
    """The answer prompt: a yes/no question asks for the finding that decides it (with a
    verdict word only from a model whose verdicts are kept), any other for the answer."""
    if not question.yes_no:
        return prompts.render("answer", sources=context.render(sources), question=question.text)
    rule = prompts.load("verdict_rule") if verdicts else ""
    return prompts.render("finding", sources=context.render(sources), question=question.text, verdict_rule=rule)


def condense(generator: Generator, history: list[tuple[str, Answer]], question: str, max_tokens: int) -> str:
    """Rewrite a follow-up into a standalone question, using the conversation so far."""
    turns = "\n".join(f"User: {q}\nAssistant: {a.text}" for q, a in history)
    prompt = prompts.render("condense", history=turns, question=question)
    rewritten = "".join(generator.stream([{"role": "user", "content": prompt}], max_tokens, Usage()))
    rewritten = rewritten.strip().strip('"').splitlines()[0].strip() if rewritten.strip() else ""
    return rewritten or question


def final(stream: Iterator[Event], on_delta: Callable[[str], None] | None = None) -> Answer:
    """Drain an answer stream and return its `Answer` (``on_delta`` sees each text delta)."""
    for item in stream:
        if isinstance(item, Answer):
            return item
        if on_delta and isinstance(item, str):
            on_delta(item)
    raise RuntimeError("the answer stream ended without an answer")
