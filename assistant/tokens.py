"""Tokens as everything here counts them: tiktoken's cl100k_base encoding.

Chunk sizes, the model's source budgets and the limit on a record's length are all in
these tokens. The encoding ships inside llama-index-core (`offline` points tiktoken at it).
"""

from __future__ import annotations

import tiktoken

ENCODING_NAME = "cl100k_base"
ENCODING = tiktoken.get_encoding(ENCODING_NAME)
# No natural text spends more characters than this on one cl100k token on average: a
# text longer than limit x this is over the limit whatever it says.
_MAX_CHARS_PER_TOKEN = 16


def tokenize(text: str) -> list[int]:
    """A text's tokens. A special token's text ("<|endoftext|>", which papers on language
    models quote) is read as the characters it is, not refused as tiktoken's ``encode`` does."""
    return ENCODING.encode_ordinary(text)


def count_tokens(text: str) -> int:
    """Tokens in a text."""
    return len(tokenize(text))


def trim_to_tokens(text: str, limit: int) -> str:
    """The text cut to at most ``limit`` tokens."""
    tokens = tokenize(text[: limit * _MAX_CHARS_PER_TOKEN])
    return text if len(tokens) <= limit and len(text) <= limit * _MAX_CHARS_PER_TOKEN else ENCODING.decode(tokens[:limit])


def over_limit(text: str, limit: int) -> bool:
    """Whether a text has more than ``limit`` tokens, in time bounded by the limit, not by
    the text: a 10 MB record is judged on its first ``limit`` x 16 characters. A text of at
    most ``limit`` UTF-8 bytes is under it without tokenizing (every token is at least one
    byte): most abstracts, which then cost ingest no tokenizing here."""
    head = text[: limit * _MAX_CHARS_PER_TOKEN]
    if len(text) > len(head):
        return True
    return len(head.encode("utf-8", "surrogatepass")) > limit and count_tokens(head) > limit
