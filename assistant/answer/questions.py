"""The form of a question, and what an answer to it must do.

A **yes/no question** asks whether something is so: "Is primary angioplasty an acceptable
alternative to thrombolysis?", "Does the size of the text chunks matter?", or a title with a
question mark ("Aripiprazole: a new risk factor for pathological gambling?"). What answers it
is the finding that decides it: what a study measured or compared, and the result. A
sentence that only states the question's proposition, affirmed or denied ("Aripiprazole is a
risk factor for pathological gambling"), is a *verdict*: it carries no finding of its own,
and whether it is right cannot be read off the sources' words.

A question asks about **one paper or several**. "Which papers speed up decoding?", "How do
MTMamba and MTMamba++ differ?" and "What does each change?" ask for several; most questions
ask for what one paper states ("… compared with a dense model?" compares within one paper).
On a one-paper question the paper that answers is retrieval's best for it far more often
than not, and the small model's extra sentences cite its neighbours for things the question
did not ask: an answer to it cites one paper (`Question.one_paper`, `citations.focus`).
`asks_several` reads the form only: the sources named in the plural, subjects compared
("compare", "differ", "versus"), or "each" standing for them; any of them makes a question
several-paper, so a doubtful question loses nothing.

`is_yes_no` tells the form from the question's first clause that opens with an auxiliary
verb or a question word. `states_proposition` tells a verdict from a finding: it covers most
of the question's content words (``PROPOSITION_SHARE``) and states no quantity or name that
the question does not already have. All of them look only at the words, so they hold in any
field. A question is read once (`analyse`) into a `Question`, which the findings, the prompt
and the claim check all take.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from assistant.words import FRAMING, Quantity, content_words, names, quantities, question_names, spelled_out

PROPOSITION_SHARE = 0.6
_AUXILIARY = re.compile(
    r"(?:is|are|was|were|am|do|does|did|can|could|should|shall|will|would|has|have|had|may|might|must)(?:n't)?\b",
    re.IGNORECASE,
)
_WH = re.compile(r"(?:what|which|who|whom|whose|when|where|why|how)\b", re.IGNORECASE)
_CLAUSE = re.compile(r"[,:;.?!]\s+|\s+-{1,2}\s*|-{2}|—")
_SEVERAL = re.compile(
    r"\b(?:papers|studies|articles|publications)\b"
    r"|\b(?:which|what|these|those|other|recent|several|two|three)\s+works\b"
    r"|\beach\b(?=\s*(?:[?.,;:]|$)|\s+(?:paper|study|work|method|approach|model|version|of\s+(?:them|these|those)\b))"
    r"|\b(?:compare|differ|versus|vs)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Question:
    """A question read once (`analyse`): its text, its stemmed content words (``words``; without
    numbers: ``terms``), its numbers as quantities, the names it states (`words.question_names`),
    and its form."""

    text: str
    words: frozenset[str]
    terms: frozenset[str]
    quantities: frozenset[Quantity]
    names: frozenset[str]
    yes_no: bool
    several: bool

    @property
    def one_paper(self) -> bool:
        """Whether an answer to it cites one paper: a question that asks for what one paper
        states. Not a yes/no question: it asks for a judgement that several papers may each
        inform, and disagree on ("mixed")."""
        return not (self.yes_no or self.several)


def analyse(text: str) -> Question:
    """Read a question once (see the module docstring)."""
    return Question(
        text=text,
        words=frozenset(content_words(text)),
        terms=frozenset(content_words(text, with_numbers=False)),
        quantities=quantities(text),
        names=frozenset(question_names(text)),
        yes_no=is_yes_no(text),
        several=asks_several(text),
    )


def asks_several(question: str) -> bool:
    """Whether a question asks about several papers (see the module docstring): it names the
    sources in the plural ("Which papers …", "What do studies find …"), compares subjects ("How do
    X and Y compare", "differ", "versus"), or asks what "each" (paper, method, version, of
    them) does."""
    return bool(_SEVERAL.search(question))


def is_yes_no(question: str) -> bool:
    """Whether the question asks whether something is so (see the module docstring).

    The first clause that opens (within its first three words) with a question word makes
    it a wh-question ("After upcycling X, what MMLU did it reach?"), one that opens with an
    auxiliary verb a yes/no question; a question mark with neither is a title put as a
    question ("Aripiprazole: a new risk factor?")."""
    text = question.strip()
    for clause in _CLAUSE.split(text.rstrip("?!. ")):
        words = clause.split()
        if not words:
            continue
        if _AUXILIARY.fullmatch(words[0].strip("\"'(")):
            return True
        if any(_WH.fullmatch(w.strip("\"'(")) for w in words[:3]):
            return False
    return text.endswith("?")


def states_proposition(text: str, question: Question) -> bool:
    """Whether ``text`` only states the question's proposition, affirmed or denied: it has
    ``PROPOSITION_SHARE`` or more of the question's content words and no number or name of
    its own (a name the question spells out as words is the question's, and stands for those
    words: "DBE" for "double balloon enteroscopy")."""
    asked = question.terms
    if not asked or quantities(text) - question.quantities:
        return False
    lowered = question.text.lower()
    words = content_words(text, with_numbers=False) - FRAMING
    for name in names(text):
        if name not in lowered:
            expansion = spelled_out(name, lowered)
            if expansion is None:
                return False
            words |= content_words(expansion)
    return len(asked & words) >= PROPOSITION_SHARE * len(asked)
