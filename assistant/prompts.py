"""Prompt templates, one text file per prompt in ``prompts/``, loaded by name."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from assistant.settings import PROJECT_ROOT

PROMPTS_DIR = PROJECT_ROOT / "prompts"


@lru_cache(maxsize=None)
def load(name: str, folder: Path = PROMPTS_DIR) -> str:
    """The template ``prompts/<name>.md`` (``str.format`` placeholders in braces)."""
    path = folder / f"{name}.md"
    if not path.exists():
        raise FileNotFoundError(f"no prompt named {name!r} in {folder}")
    return path.read_text(encoding="utf-8")


def render(name: str, **values: str) -> str:
    """A template filled in with ``values``."""
    return load(name).format(**values)
