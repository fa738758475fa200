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


def count_tokens(text: str) -> int:
    """Tokens in a text."""
    return len(ENCODING.encode(text, disallowed_special=()))


def trim_to_tokens(text: str, limit: int) -> str:
    """The text cut to at most ``limit`` tokens."""
    tokens = ENCODING.encode(text[: limit * _MAX_CHARS_PER_TOKEN], disallowed_special=())
    return text if len(tokens) <= limit and len(text) <= limit * _MAX_CHARS_PER_TOKEN else ENCODING.decode(tokens[:limit])


def over_limit(text: str, limit: int) -> bool:
    """Whether a text has more than ``limit`` tokens, in time bounded by the limit, not by
    the text: a 10 MB record is judged on its first ``limit`` x 16 characters."""
    head = text[: limit * _MAX_CHARS_PER_TOKEN]
    return len(text) > len(head) or count_tokens(head) > limit
