"""Chunking: token-bounded pieces on sentence boundaries, without nltk."""

from __future__ import annotations

import subprocess
import sys

import tiktoken

from assistant.corpus.display import sentence_spans
from assistant.index.chunking import chunk
from assistant.types import Abstract

SENTENCES = [
    f"Sentence {n} reports that method M{n} improves recall by {n}.5 points on benchmark B{n} (p < 0.05). "
    for n in range(1, 13)
]


def test_sentence_spans_join_back_to_the_text() -> None:
    text = "First claim holds. Second one (with a [bracket]) too! Third? e.g. a lowercase tail."
    spans = sentence_spans(text)
    assert "".join(spans) == text
    assert spans == ["First claim holds. ", "Second one (with a [bracket]) too! ", "Third? e.g. a lowercase tail."]


def test_chunks_are_token_bounded_and_keep_the_spaces() -> None:
    abstract = Abstract(id="a", text="".join(SENTENCES).strip(), title="", source="x", titled=False)
    pieces = chunk(abstract, chunk_size=64, chunk_overlap=16)
    assert len(pieces) > 2 and [p.id for p in pieces] == [f"a#{n}" for n in range(len(pieces))]
    encoding = tiktoken.get_encoding("cl100k_base")
    assert all(len(encoding.encode(p.text)) <= 64 for p in pieces)
    assert all(p.text in abstract.text for p in pieces), "sentences keep the spaces between them"
    assert all(p.text.startswith("Sentence") and p.text.endswith(").") for p in pieces), "cut at sentence ends"


def test_an_abstract_quoting_a_special_tokens_text_is_chunked_like_any_other() -> None:
    """Papers on language models quote "<|endoftext|>"; tiktoken's default encode refused it,
    which stopped the whole ingest with a traceback."""
    text = "We study how GPT-2 uses <|endoftext|> between documents. " * 12
    pieces = chunk(Abstract(id="a", text=text.strip(), title="", source="x", titled=False), 64, 16)
    assert len(pieces) > 1 and all("<|endoftext|>" in p.text for p in pieces)


def test_chunking_does_not_import_nltk() -> None:
    code = (
        "import sys; from assistant.index.chunking import chunk; from assistant.types import Abstract; "
        "chunk(Abstract(id='a', text='One sentence here. Another one there.', title='', source='x', titled=False), 128, 16); "
        "print('nltk' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
