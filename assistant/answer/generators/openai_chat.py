"""The OpenAI API or any OpenAI-compatible server (vLLM, Ollama, llama.cpp's server)."""

from __future__ import annotations

from collections.abc import Iterator

import openai

from assistant.answer.generators.base import GenerationError, Message, Usage
from assistant.openai_client import explain


class OpenAIChat:
    """Streams chat completions with the official client (its own timeouts and retries).

    Any failure is raised as one `GenerationError` naming the server and model; there is
    no fallback to another model.
    """

    def __init__(self, client: openai.OpenAI, model: str) -> None:
        self.client = client
        self.model_name = model

    def stream(self, messages: list[Message], max_tokens: int, usage: Usage) -> Iterator[str]:
        """Yield the reply as it streams from the server."""
        try:
            response = self.client.chat.completions.create(
                model=self.model_name,
                messages=messages,
                temperature=0.0,
                max_tokens=max_tokens,
                stream=True,
                stream_options={"include_usage": True},
            )
            for chunk in response:
                if chunk.usage:
                    usage.prompt_tokens = chunk.usage.prompt_tokens
                    usage.completion_tokens = chunk.usage.completion_tokens
                if chunk.choices and chunk.choices[0].delta.content:
                    if not chunk.usage:
                        usage.completion_tokens += 1
                    yield chunk.choices[0].delta.content
        except openai.APIError as error:
            raise GenerationError(explain(error, self.client, self.model_name, "model")) from error
