"""Generation backends; `create` picks the one named in settings."""

from __future__ import annotations

from assistant.answer.generators.base import GenerationError, Generator, Message, Usage
from assistant.settings import Settings


def create(settings: Settings) -> Generator:
    """The generator the settings ask for (no fallback to another model)."""
    if settings.llm_backend == "local":
        from assistant.answer.generators.local_llama import LocalLlama

        return LocalLlama(
            settings.llm_model, settings.cache_dir, settings.llm_threads, settings.llm_context_tokens
        )
    from assistant.answer.generators.openai_chat import OpenAIChat

    key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
    return OpenAIChat(
        settings.llm_model,
        settings.openai_base_url,
        key,
        settings.openai_timeout,
        settings.openai_max_retries,
    )


__all__ = ["GenerationError", "Generator", "Message", "Usage", "create"]
