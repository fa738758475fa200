"""The form of a question, and what an answer to it must do.

A **yes/no question** asks whether something is so: "Is primary angioplasty an acceptable
alternative to thrombolysis?", "Does the size of the text chunks matter?", or a title with a
question mark ("Aripiprazole: a new risk factor for pathological gambling?"). What answers it
is the finding that decides it: what a study measured or compared, and the result. A
sentence that only states the question's proposition, affirmed or denied ("Aripiprazole is a
risk factor for pathological gambling"), is a *verdict*: it carries no finding of its own,
and whether it is right cannot be read off the sources' words.

`is_yes_no` tells the form from the question's first clause that opens with an auxiliary
verb or a question word. `states_proposition` tells a verdict from a finding: it covers most
of the question's content words (``PROPOSITION_SHARE``) and states no quantity or name that
the question does not already have. Both look only at the words, so they hold in any field.
"""

from __future__ import annotations

import re

from assistant.words import FRAMING, content_words, names, quantities, spelled_out

PROPOSITION_SHARE = 0.6
_AUXILIARY = re.compile(
    r"(?:is|are|was|were|am|do|does|did|can|could|should|shall|will|would|has|have|had|may|might|must)(?:n't)?\b",
    re.IGNORECASE,
)
_WH = re.compile(r"(?:what|which|who|whom|whose|when|where|why|how)\b", re.IGNORECASE)
_CLAUSE = re.compile(r"[,:;.?!]\s+|\s+-{1,2}\s*|-{2}|—")


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


def states_proposition(text: str, question: str) -> bool:
    """Whether ``text`` only states the question's proposition, affirmed or denied: it has
    ``PROPOSITION_SHARE`` or more of the question's content words and no number or name of
    its own (a name the question spells out as words is the question's, and stands for those
    words: "DBE" for "double balloon enteroscopy")."""
    asked = content_words(question, with_numbers=False)
    if not asked or quantities(text) - quantities(question):
        return False
    lowered = question.lower()
    words = content_words(text, with_numbers=False) - FRAMING
    for name in names(text):
        if name not in lowered:
            expansion = spelled_out(name, lowered)
            if expansion is None:
                return False
            words |= content_words(expansion)
    return len(asked & words) >= PROPOSITION_SHARE * len(asked)
