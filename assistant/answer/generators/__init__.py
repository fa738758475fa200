"""Generation backends; `create` picks the one named in settings."""

from __future__ import annotations

from assistant.answer.generators.base import GenerationError, Generator, Message, Priority, Usage
from assistant.settings import Settings


def create(settings: Settings, priority: Priority | None = None) -> Generator:
    """The generator the settings ask for (no fallback to another model). A local model
    gives way to the work ``priority`` marks (the evidence of questions)."""
    if settings.llm_backend == "local":
        try:
            from assistant.answer.generators.local_llama import LocalLlama
        except ImportError as error:
            raise GenerationError(
                "the local LLM backend needs llama-cpp-python; install the project with the "
                "README's command"
            ) from error

        return LocalLlama(
            settings.llm_model, settings.cache_dir, settings.llm_threads, settings.llm_context_tokens, priority
        )
    from assistant.answer.generators.openai_chat import OpenAIChat
    from assistant.openai_client import make_client

    return OpenAIChat(make_client(settings), settings.llm_model, settings.openai_rest_s)


__all__ = ["GenerationError", "Generator", "Message", "Priority", "Usage", "create"]
