"""Stable ids, readable display titles and links for abstracts."""

from __future__ import annotations

import hashlib
import re

_WS = re.compile(r"\s+")
_URL = re.compile(r"https?://[^\s<>\"'`{}]+")
_ARXIV_ID = re.compile(r"\barXiv:\s*(\d{4}\.\d{4,5})(?:v\d+)?", re.IGNORECASE)
_CODE_HOSTS = ("github.com", "gitlab.com", "huggingface.co", "bitbucket.org")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\[])")
_INTRODUCES = re.compile(
    r"\b[Ww]e (?:present|introduce|propose|release)\s+(?:the\s+)?(?:novel\s+|new\s+)?"
    r"(?P<name>[A-Z0-9][\w\-.+^ ]{0,60}?(?:\s*\([^()]{1,25}\))?),\s+(?P<desc>(?:an?|the)\s.+)"
)
TITLE_MAX_CHARS = 100


def normalize_text(text: str) -> str:
    """Collapse runs of whitespace; the form in which abstracts are compared and stored."""
    return _WS.sub(" ", text).strip()


def content_id(text: str) -> str:
    """A stable id for a record without one: a hash of its normalized text."""
    return "h" + hashlib.sha256(normalize_text(text).encode("utf-8")).hexdigest()[:16]


def _shorten(text: str, limit: int = TITLE_MAX_CHARS) -> str:
    text = text.strip().rstrip(".")
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0].rstrip(",;:")
    return cut + "…"


def sentences(text: str) -> list[str]:
    """A text's sentences (a heuristic split on sentence-ending punctuation)."""
    return _SENTENCE_END.split(normalize_text(text))


def sentence_spans(text: str) -> list[str]:
    """The text cut after each sentence end, as `sentences` finds them, keeping the
    whitespace: the pieces join back to the exact text (what a chunker needs)."""
    cuts = [match.end() for match in _SENTENCE_END.finditer(text)]
    return [text[start:end] for start, end in zip([0, *cuts], [*cuts, len(text)], strict=True)]


def first_sentence(text: str) -> str:
    """The first sentence of a text."""
    return sentences(text)[0]


def derive_title(text: str) -> str:
    """A readable title for an untitled abstract.

    When a sentence introduces a named method ("We present Pangu Ultra, a Large Language
    Model ...") the title is "Pangu Ultra: a Large Language Model ..."; otherwise it is the
    abstract's first sentence, shortened.
    """
    for sentence in sentences(text):
        match = _INTRODUCES.search(sentence)
        if match:
            return _shorten(f"{match['name'].strip()}: {match['desc']}")
    return _shorten(first_sentence(text))


def find_link(text: str) -> str | None:
    """The most useful link a text names: a code repository, else any URL, else arXiv."""
    urls = [url.rstrip(".,;:)]}") for url in _URL.findall(text)]
    for url in urls:
        if any(host in url for host in _CODE_HOSTS):
            return url
    if urls:
        return urls[0]
    arxiv = _ARXIV_ID.search(text)
    return f"https://arxiv.org/abs/{arxiv.group(1)}" if arxiv else None
