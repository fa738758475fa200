"""The OpenAI API or any OpenAI-compatible server (vLLM, Ollama, llama.cpp's server)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import openai

from assistant.answer.generators.base import GenerationError, Message, Usage, as_text_messages
from assistant.openai_client import explain


class OpenAIChat:
    """Streams chat completions with the official client (its own timeouts and retries).

    Any failure is raised as one `GenerationError` naming the server and model; there is
    no fallback to another model. A server that did not answer (it timed out, or could not
    be reached) is not asked again for ``rest_s`` seconds: the questions waiting behind the
    failed one get its message at once, instead of each waiting out a timeout of its own, so
    a line of users behind a stuck server drains within about one timeout.

    Messages are sent as text: the server's chat template would read a control token's text
    inside them as one (llama.cpp's and vLLM's do), so the usual template markers are broken
    (`as_text_messages`); the server's vocabulary is not known here.
    """

    def __init__(self, client: openai.OpenAI, model: str, rest_s: float = 30.0) -> None:
        self.client = client
        self.model_name = model
        self.rest_s = rest_s
        self._down: tuple[float, str] | None = None  # when the server last failed to answer, and why
        self._lock = threading.Lock()

    def stream(self, messages: list[Message], max_tokens: int, usage: Usage) -> Iterator[str]:
        """Yield the reply as it streams from the server."""
        with self._lock:
            down = self._down
        if down and (left := self.rest_s - (time.monotonic() - down[0])) > 0:
            raise GenerationError(f"{down[1]} (it is asked again in {max(1, round(left))} s; try again then)")
        try:
            response = self.client.chat.completions.create(
                model=self.model_name,
                messages=as_text_messages(messages),
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
            message = explain(error, self.client, self.model_name, "model")
            if isinstance(error, openai.APIConnectionError):  # timeouts included: the server did not answer
                with self._lock:
                    self._down = (time.monotonic(), message)
            raise GenerationError(message) from error
        with self._lock:
            self._down = None
