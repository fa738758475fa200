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


def explain(error: openai.APIError, client: openai.OpenAI, model: str, role: str) -> str:
    """What went wrong with a request to an OpenAI-compatible ``role`` server ("model",
    "embedding"), and what to do: a stalled server, an unreachable one, a rejected key."""
    url = client.base_url
    if isinstance(error, openai.APITimeoutError):
        tries = client.max_retries + 1
        return (
            f"the {role} server at {url} did not answer within {client.timeout} s "
            f"({tries} {'try' if tries == 1 else 'tries'}): is it overloaded or stuck? "
            "ASSISTANT_OPENAI_TIMEOUT sets how long to wait"
        )
    if isinstance(error, openai.APIConnectionError):
        return f"cannot reach the {role} server at {url}; is it running? Check ASSISTANT_OPENAI_BASE_URL."
    if isinstance(error, openai.AuthenticationError):
        return f"the {role} server at {url} rejected the API key; check ASSISTANT_OPENAI_API_KEY."
    return f"the {role} server at {url} failed for model {model!r}: {error}"
