"""One question, end to end: retrieve → context → generate (streamed) → verify citations
→ `Answer`, or an honest abstention.

The assistant abstains, with no citations, when
- retrieval finds nothing relevant enough (the top hit's relevance is below
  ``min_relevance``, and it does not contain the question's subject): the model is not
  even asked. A hit that contains the subject is about it, whatever the scores say: the
  small embedder has never seen most paper names, so "What does DReSD compare against?"
  scores low against the DReSD abstract;
- the model says the sources do not answer (``NOT IN SOURCES``);
- no claim of the model's answer is supported by a source;
- the question names its subject (a paper's, method's or dataset's name that few indexed
  abstracts contain) and no cited abstract mentions it: the answer is about another paper.

Sources down to ``source_score_ratio`` of the best hit give the model context; only those
down to ``citation_score_ratio`` may be cited. Claims drawn from the weaker ones (typically
a related paper padding a "which papers …" answer) are left out (`Answer.set_aside`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from assistant import prompts
from assistant.answer import citations, context
from assistant.answer.generators import Generator, Usage
from assistant.retrieval import SearchFilters, subject_terms
from assistant.types import Answer, Hit

if TYPE_CHECKING:
    from assistant.api import Assistant

ABSTAIN_TEXT = "The indexed abstracts do not answer this question."
_NOT_IN_SOURCES = re.compile(r"\bNOT IN (?:THE )?SOURCES\b\.?", re.IGNORECASE)
DECLINE = re.compile(
    r"NOT IN SOURCES|\b(?:do|does|did) not (?:contain|provide|mention|include|specify|state|answer|address|say)"
    r"|\bno (?:information|mention|source)\b|\bcannot (?:be )?(?:answer|determine|find)",
    re.IGNORECASE,
)


def _select(hits: list[Hit], ratio: float) -> list[Hit]:
    """The hits worth showing the model: those scoring at least ``ratio`` of the best."""
    return [h for h in hits if h.score >= ratio * hits[0].score] if hits else []


def _abstention(question: str, hits: list[Hit], reason: str, model: str, **fields: object) -> Answer:
    return Answer(
        text=ABSTAIN_TEXT,
        citations=[],
        sources=hits,
        abstained=True,
        abstain_reason=reason,
        question=question,
        model=model,
        **fields,
    )


def stream_answer(
    assistant: Assistant,
    question: str,
    standalone: str | None = None,
    k: int | None = None,
    filters: SearchFilters | Mapping[str, Any] | None = None,
) -> Iterator[str | Answer]:
    """Yield the model's text deltas as they come, then the verified `Answer`.

    ``k`` (default: the ``top_k`` setting) is how many abstracts are retrieved;
    ``filters`` restrict them as in `Assistant.search`.
    """
    settings = assistant.settings
    started = time.perf_counter()
    query = standalone or question
    hits = assistant.search(query, k=k or settings.top_k, filters=filters)
    timings = {"retrieve": time.perf_counter() - started}
    generator: Generator = assistant.generator
    subject = subject_terms(query, assistant.bm25)
    named = {i for ids in subject.values() for i in ids}
    if not hits or (hits[0].relevance < settings.min_relevance and hits[0].abstract.id not in named):
        timings["total"] = time.perf_counter() - started
        yield _abstention(query, hits, "low_relevance", generator.model_name, timings=timings)
        return

    sources = context.build(query, _select(hits, settings.source_score_ratio), assistant.embedder, settings.context_tokens)
    prompt = prompts.render("answer", sources=context.render(sources), question=query)
    usage = Usage()
    pieces: list[str] = []
    for delta in generator.stream([{"role": "user", "content": prompt}], settings.llm_max_tokens, usage):
        if not pieces:
            timings["first_token"] = time.perf_counter() - started
        pieces.append(delta)
        yield delta
    raw = "".join(pieces).strip()
    timings["total"] = time.perf_counter() - started
    fields = {"timings": timings, "usage": usage, "raw_text": raw}
    shown = [s.hit for s in sources]
    answer_text = _NOT_IN_SOURCES.sub("", raw).strip()  # the model may add it after an answer
    if not answer_text:
        yield _abstention(query, shown, "model_declined", generator.model_name, **fields)
        return
    bare = citations.bare_citations(answer_text) or citations.echoed_citations(answer_text, query)
    if bare:
        answer_text = citations.quote_sources(bare, sources, query) or answer_text
    near_best = {hit.abstract.id for hit in _select(hits, settings.citation_score_ratio)}
    citable = {s.number for s in sources if s.hit.abstract.id in near_best}
    checked = citations.attribute(answer_text, sources, citable, query)
    if checked.supported_claims == 0:
        reason = "model_declined" if DECLINE.search(raw) else "unsupported"
        yield _abstention(query, shown, reason, generator.model_name, **fields)
        return
    cited = " ".join(f"{c.abstract.title} {c.abstract.text}" for c in checked.citations)
    if subject and not any(term in (cited.lower() if term.islower() else cited) for term in subject):
        yield _abstention(query, shown, "subject_not_cited", generator.model_name, **fields)
        return
    yield Answer(
        text=checked.text,
        citations=checked.citations,
        sources=shown,
        abstained=False,
        unsupported=[c for c in checked.unsupported if not DECLINE.search(c)],
        set_aside=checked.set_aside,
        question=query,
        model=generator.model_name,
        **fields,
    )


def condense(generator: Generator, history: list[tuple[str, Answer]], question: str, max_tokens: int) -> str:
    """Rewrite a follow-up into a standalone question, using the conversation so far."""
    turns = "\n".join(f"User: {q}\nAssistant: {a.text}" for q, a in history)
    prompt = prompts.render("condense", history=turns, question=question)
    rewritten = "".join(generator.stream([{"role": "user", "content": prompt}], max_tokens, Usage()))
    rewritten = rewritten.strip().strip('"').splitlines()[0].strip() if rewritten.strip() else ""
    return rewritten or question


class Chat:
    """A multi-turn conversation: follow-ups are rewritten into standalone questions
    (using the last ``max_turns`` turns) before retrieval."""

    def __init__(self, assistant: Assistant, max_turns: int = 3) -> None:
        self.assistant = assistant
        self.max_turns = max_turns
        self.history: list[tuple[str, Answer]] = []

    def ask_stream(self, question: str, **options: Any) -> Iterator[str | Answer]:
        """Like `Assistant.ask_stream` (same options), for the next turn of this conversation."""
        from assistant.api import check_question

        question = check_question(question)
        standalone = None
        if self.history:
            recent = self.history[-self.max_turns :]
            standalone = condense(self.assistant.generator, recent, question, 96)
        for item in stream_answer(self.assistant, question, standalone, **options):
            if isinstance(item, Answer):
                self.history.append((question, item))
            yield item

    def ask(self, question: str, **options: Any) -> Answer:
        """The next turn's `Answer`."""
        return final(self.ask_stream(question, **options))

    def reset(self) -> None:
        """Forget the conversation."""
        self.history.clear()


def final(stream: Iterator[str | Answer], on_delta: Callable[[str], None] | None = None) -> Answer:
    """Drain an answer stream and return its `Answer` (``on_delta`` sees each delta)."""
    for item in stream:
        if isinstance(item, Answer):
            return item
        if on_delta:
            on_delta(item)
    raise RuntimeError("the answer stream ended without an answer")
