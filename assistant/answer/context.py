"""Context building: the numbered sources the model reads, within a token budget.

Two styles, one per kind of model (``Settings.context_style``):
- **sentences** (the local model's default): on 2 CPU cores every prompt token costs about
  11 ms before the first answer token, so the model is shown the sentences of each
  retrieved abstract that are closest to the question;
- **abstracts** (the ``openai`` backend's default): a capable model reads whole abstracts,
  best hit first, as many as fit their own budget, so no answering sentence is cut away;
  the hits that no longer fit whole get their sentences closest to the question in what is
  left, so that a long abstract cannot push the next ones out of the prompt.

Either way every sentence of every shown abstract is read once, here (`read`: each with its
section, `sections.parts`, its embedding and its closeness to the question): the findings
(`findings`) are chosen from it, each excerpt opens with its source's best sentence and then its
findings, and the claim check (`citations`) verifies the answer against all of them, not only
the excerpt.

In the sentence style, closeness (`closeness`) mixes embedding similarity (topic) with the
share of the question's content words a sentence contains (embedding similarity alone
prefers a topical sentence over the one that states the asked-for fact), plus a bonus for
specifics: a sentence with numbers or named terms (after its first word) states a finding,
where background sentences only restate the topic. (For a yes/no question, demoting the
sentences that restate it kept its answering sentence out of the prompt more often:
docs/experiments.md.)

When the model declines or its answer cannot be verified, the same closeness picks the
evidence offered to the reader instead (`closest_evidence`).

Abstract text is data, never instructions: besides the prompt saying so, sentences that
read as instructions to an assistant ("ignore previous instructions", "reply only
with …") are left out of the excerpts; they carry no findings. Each source keeps at least its
best sentence; the rest of the budget goes to the next-best sentences across sources.
Sentences stay in their original order. Tokens are counted with tiktoken.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from assistant.answer.questions import Question
from assistant.corpus.sections import Part, parts
from assistant.words import share, specifics
from assistant.index.embedders import Embedder
from assistant.tokens import count_tokens, trim_to_tokens
from assistant.types import Citation, Hit

WORD_OVERLAP_WEIGHT = 0.5
SPECIFICS_WEIGHT = 0.3
_INSTRUCTION = re.compile(  # sentences addressed to the model, not findings: left out of every excerpt
    r"\b(?:ignore|disregard|forget)\b.{0,20}\b(?:instructions|rules|prompt)\b|\b(?:reply|respond|answer) only\b"
    r"|\bdo not (?:cite|answer|follow)\b|\byou are (?:an?|the) (?:assistant|ai|language model|chatbot)\b"
    r"|\bsystem prompt\b"
    # an order at the sentence's start: "Reply with X.", "Output only the label."
    r"|^\W*(?:please\W+)?(?:reply|respond)\b"
    r"|^\W*(?:please\W+)?(?:answer|output|print|say|write|return|repeat|state)\b(?:\W+\w+){0,6}?\W+only\b",
    re.IGNORECASE,
)


@dataclass(frozen=True, eq=False)
class PromptSource:
    """A numbered source as shown to the model: the hit, the excerpt the model reads, and
    every sentence of the abstract with its unit-length embedding (one row each)."""

    number: int
    hit: Hit
    excerpt: str
    sentences: tuple[str, ...] = ()
    vectors: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))

    def render(self) -> str:
        title = f"{self.hit.abstract.title}. " if self.hit.abstract.titled else ""
        return f"[{self.number}] {title}{self.excerpt}"


@dataclass(frozen=True, eq=False)
class Read:
    """One hit read for a question: its sentences (those that read as instructions left out),
    each with its section (`sections.Part`), its unit-length embedding (one row each) and its
    `closeness` to the question."""

    hit: Hit
    parts: tuple[Part, ...]
    vectors: np.ndarray
    closeness: np.ndarray

    @property
    def sentences(self) -> tuple[str, ...]:
        """The sentences as the abstract's text has them (section labels included)."""
        return tuple(p.sentence for p in self.parts)


@dataclass(frozen=True, eq=False)
class Reading:
    """The hits read for a question (`read`), in rank order, and the question's embedding."""

    question: Question
    hits: tuple[Read, ...]
    question_vector: np.ndarray


def closeness(question: Question, question_vector: np.ndarray, texts: list[str], vectors: np.ndarray) -> np.ndarray:
    """How close each sentence is to what the question asks (see the module docstring)."""
    overlap = np.array([share(question.words, text) for text in texts])
    stated = np.array([specifics(text) for text in texts])
    return vectors @ question_vector + WORD_OVERLAP_WEIGHT * overlap + SPECIFICS_WEIGHT * stated


def read(question: Question, hits: list[Hit], embedder: Embedder, sentences: Embedder | None = None) -> Reading:
    """Split every hit into its sentences and sections and embed them (with ``sentences``,
    which may keep the vectors of sentences read before; default ``embedder``), and the
    question: what the findings, the excerpts and the claim check all use."""
    per_hit = [
        [p for p in parts(hit.abstract) if not _INSTRUCTION.search(p.sentence)]
        or [Part("", "", None, None, 0)]
        for hit in hits
    ]
    question_vector = embedder.embed([question.text])[0]
    rows = (sentences or embedder).embed([p.sentence for group in per_hit for p in group])
    read_hits, start = [], 0
    for hit, group in zip(hits, per_hit, strict=True):
        own = rows[start : start + len(group)]
        start += len(group)
        near = closeness(question, question_vector, [p.sentence for p in group], own)
        read_hits.append(Read(hit, tuple(group), own, near))
    return Reading(question, tuple(read_hits), question_vector)


def build(
    reading: Reading,
    budget_tokens: int,
    style: Literal["sentences", "abstracts"] = "sentences",
    first: Mapping[str, list[str]] | None = None,
) -> tuple[list[PromptSource], np.ndarray]:
    """Number the hits `read` and pick their excerpts (in ``style``) so that all of them fit
    ``budget_tokens``; also return the question's embedding. ``first`` names, per abstract id,
    the sentences its excerpt holds after its best one (its findings) in the sentences style,
    before the next-best of any."""
    if not reading.hits:
        return [], reading.question_vector
    per_hit = [list(r.sentences) for r in reading.hits]
    flat = [(h, s) for h, group in enumerate(per_hit) for s in range(len(group))]
    similarity = np.concatenate([r.closeness for r in reading.hits])
    if style == "abstracts":
        picked = _whole_abstracts(similarity, per_hit, flat, budget_tokens)
    else:
        seeds = [[per_hit[h].index(s) for s in (first or {}).get(r.hit.abstract.id, []) if s in per_hit[h]]
                 for h, r in enumerate(reading.hits)]
        picked = _best_sentences(similarity, per_hit, flat, budget_tokens, seeds=seeds)
    sources = []
    for hit_index in sorted(picked):
        excerpt = " ".join(per_hit[hit_index][s] for s in sorted(picked[hit_index]))
        r = reading.hits[hit_index]
        sources.append(PromptSource(len(sources) + 1, r.hit, trim_to_tokens(excerpt, budget_tokens), r.sentences, r.vectors))
    return sources, reading.question_vector


def _whole_abstracts(
    similarity: np.ndarray, per_hit: list[list[str]], flat: list[tuple[int, int]], budget_tokens: int
) -> dict[int, list[int]]:
    """Whole abstracts in rank order while they fit (the first one always, trimmed); once the
    next one does not fit whole, the rest share what is left as their best sentences: one
    long abstract does not crowd the next ones, which may hold the answer, out of the prompt."""
    picked: dict[int, list[int]] = {}
    spent = 0
    for hit_index, group in enumerate(per_hit):
        cost = sum(count_tokens(s) + 1 for s in group)
        if picked and spent + cost > budget_tokens:
            rest = range(hit_index, len(per_hit))
            return picked | _best_sentences(similarity, per_hit, flat, budget_tokens - spent, among=rest)
        picked[hit_index] = list(range(len(group)))
        spent += cost
    return picked


def _best_sentences(
    similarity: np.ndarray,
    per_hit: list[list[str]],
    flat: list[tuple[int, int]],
    budget_tokens: int,
    among: range | None = None,
    seeds: list[list[int]] | None = None,
) -> dict[int, list[int]]:
    """Each hit's opening sentences in rank order (its best sentence, then its ``seeds``), then
    the next-best anywhere, while they fit (of the hits ``among``, all by default)."""
    among = among if among is not None else range(len(per_hit))
    cost = [count_tokens(per_hit[h][s]) + 1 for h, s in flat]
    row = {pair: i for i, pair in enumerate(flat)}
    chosen: set[int] = set()
    spent = 0
    best_first = sorted((i for i in range(len(flat)) if flat[i][0] in among), key=lambda i: -similarity[i])
    for hit_index in among:  # each source's opening sentences, in rank order
        best = next(i for i in best_first if flat[i][0] == hit_index)
        opening = list(dict.fromkeys([best, *(row[hit_index, s] for s in (seeds[hit_index] if seeds else []))]))
        if spent + cost[opening[0]] > budget_tokens and (chosen or among.start > 0):
            break
        for i in opening:
            if i == opening[0] or spent + cost[i] <= budget_tokens:
                chosen.add(i)
                spent += cost[i]
    covered = {flat[i][0] for i in chosen}
    for i in best_first:  # then the next-best sentences anywhere, while they fit
        if i not in chosen and flat[i][0] in covered and spent + cost[i] <= budget_tokens:
            chosen.add(i)
            spent += cost[i]
    picked: dict[int, list[int]] = {}
    for i in chosen:
        picked.setdefault(flat[i][0], []).append(flat[i][1])
    return picked


def closest_evidence(
    question: Question,
    question_vector: np.ndarray,
    sources: list[PromptSource],
    min_relevance: float,
    per_source: int = 2,
    most: int = 3,
) -> list[Citation]:
    """The evidence to offer when no answer could be verified: of the (at most ``most``) best
    sources that retrieval found relevant (``min_relevance``), the ``per_source`` sentences
    closest to the question, in the abstract's order, numbered 1, 2…"""
    offered = []
    for source in sources:
        if len(offered) == most:
            break
        if source.hit.relevance < min_relevance or not any(source.sentences):
            continue
        score = closeness(question, question_vector, list(source.sentences), source.vectors)
        best = sorted(np.argsort(-score)[:per_source])
        offered.append(Citation(len(offered) + 1, source.hit.abstract, tuple(source.sentences[i] for i in best)))
    return offered


def render(sources: list[PromptSource]) -> str:
    """The sources block of the prompt."""
    return "\n\n".join(source.render() for source in sources)
