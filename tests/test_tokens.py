"""Token counting, trimming and the record-length check (cl100k_base, as everything counts)."""

from __future__ import annotations

from assistant.tokens import count_tokens, over_limit, trim_to_tokens


def test_trimming_counts_tokens_not_characters() -> None:
    text = "tokenization " * 50
    trimmed = trim_to_tokens(text, 10)
    assert count_tokens(trimmed) <= 10 and text.startswith(trimmed)
    assert trim_to_tokens("short", 10) == "short"


def test_the_limit_check_and_trim_work_on_a_huge_text() -> None:
    huge = "word " * 2_000_000  # 10 MB: judged on its first 128,000 characters
    assert over_limit(huge, 8000) and not over_limit("word " * 100, 8000)
    assert over_limit("word " * 9000, 8000) and not over_limit("word " * 7000, 8000)
    trimmed = trim_to_tokens(huge, 8000)
    assert count_tokens(trimmed) == 8000 and huge.startswith(trimmed)


def test_the_limit_check_agrees_with_the_count_on_either_side_of_the_limit() -> None:
    """Texts of at most ``limit`` bytes skip tokenizing; the answer must not change: words,
    digits (one token per up to 3), and characters of 2-4 bytes that take one token or several."""
    for text in ["word " * 40, "12345678 " * 25, "é" * 150, "数据集" * 60, "🙂" * 80, "x" * 1000]:
        for limit in range(1, 400, 7):
            assert over_limit(text, limit) == (count_tokens(text) > limit), (text[:10], limit)


def test_a_special_tokens_text_is_counted_and_trimmed_as_plain_text() -> None:
    text = "GPT-2 separates documents with <|endoftext|> in its training data."
    assert count_tokens(text) > count_tokens(text.replace("<|endoftext|>", "")) + 1
    assert trim_to_tokens(text, 100) == text
