"""The one place an `openai.OpenAI` client is made from settings (both backends use it)."""

from __future__ import annotations

import openai

from assistant.settings import Settings


def make_client(settings: Settings) -> openai.OpenAI:
    """A client for the OpenAI API or the OpenAI-compatible server in settings.

    Servers that need no key (vLLM, Ollama, llama.cpp) still get a placeholder, since the
    client refuses to start without one.
    """
    key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
    return openai.OpenAI(
        base_url=settings.openai_base_url,
        api_key=key or "not-needed",
        timeout=settings.openai_timeout,
        max_retries=settings.openai_max_retries,
    )
