"""Word-level helpers shared by retrieval (subject terms), context selection and citation checks."""

from __future__ import annotations

import re

import Stemmer
from bm25s.stopwords import STOPWORDS_EN

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9\-]*|\d+(?:\.\d+)?")
_NUMBER = re.compile(r"(?<![\d.])\d+(?:\.\d+)?(?![\d])")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_LOWER_SUFFIX = re.compile(r"(?<=[A-Za-z0-9])(?:-[a-z]+)+$")
_STEMMER = Stemmer.Stemmer("english")
_OPENERS = {
    "we", "our", "its", "both", "each", "however", "overall", "moreover", "furthermore", "thus",
    "therefore", "here", "instead", "while", "when", "where", "although", "since", "because", "all",
    "some", "most", "other", "another", "one", "two", "three", "first", "second", "third", "finally",
}
_STOP = set(STOPWORDS_EN) | {
    "paper", "papers", "source", "sources", "abstract", "study", "work", "also", "use", "uses", "used",
    "what", "which", "who", "whom", "whose", "why", "how", "many", "much", "does", "did", "do", "yes",
}


def content_words(text: str) -> set[str]:
    """Stemmed, lower-cased words that carry content."""
    words = [w.lower() for w in _WORD.findall(text)]
    return set(_STEMMER.stemWords([w for w in words if w not in _STOP and (len(w) > 2 or w.isdigit())]))


def share(asked: set[str], text: str) -> float:
    """The share of the question's content words (``asked``) that a text contains."""
    return len(asked & content_words(text)) / len(asked) if asked else 0.0


def numbers(text: str) -> set[str]:
    """The numbers in a text, thousands separators removed ("8,192" → "8192")."""
    return set(_NUMBER.findall(_THOUSANDS.sub("", text)))


def named_terms(text: str) -> set[str]:
    """Named terms, lower-cased: capitalised words that are not stop words (acronyms,
    CamelCase, names; a capitalised first word counts too, names often start answers).
    A lower-case suffix is not part of the name: "DenseNet-based" → "densenet". Words
    that open sentences without naming anything ("Yes", "We", "Specifically") are not names."""
    return {
        word.lower()
        for word in (
            _LOWER_SUFFIX.sub("", w) for w in re.findall(r"(?<![\d])[A-Za-z][A-Za-z0-9\-]+", text)
        )
        if any(c.isupper() for c in word) and not _opener(word)
    }


def _opener(word: str) -> bool:
    """A stop word, a discourse word, or a capitalised adverb ("Additionally")."""
    lowered = word.lower()
    return lowered in _STOP or lowered in _OPENERS or (word[1:].islower() and lowered.endswith("ly"))


def specifics(sentence: str) -> float:
    """0-1: how many numbers and named terms (not counting the first word) a sentence
    states, two or more being 1. Findings have them; background sentences rarely do."""
    rest = sentence.split(" ", 1)[1] if " " in sentence else ""
    return min(1.0, (len(numbers(sentence)) + len(named_terms(rest))) / 2)
