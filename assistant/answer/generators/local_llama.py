"""The default generator: a GGUF model shipped on PyPI, run in-process by llama.cpp."""

from __future__ import annotations

import ctypes
import os
import queue
import re
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import llama_cpp
import numpy as np
from llama_cpp.llama import LlamaState

from assistant.allocator import give_back_freed_memory
from assistant.answer.generators.base import TEMPLATE_MARKERS, GenerationError, Message, Priority, Usage, as_text_messages
from assistant.answer.model_files import model_path

PROMPT_CACHE_BYTES = 64 << 20
_DONE = object()
_READ_AS_CONTROL = llama_cpp.LLAMA_TOKEN_ATTR_CONTROL | llama_cpp.LLAMA_TOKEN_ATTR_USER_DEFINED


def control_texts(llm: llama_cpp.Llama) -> tuple[str, ...]:
    """The texts llama.cpp reads as the model's control tokens wherever a prompt holds them
    (its chat formatter tokenizes the filled-in template with ``special=True``): in an
    abstract, ``<|im_end|>`` would end the turn, and what follows it would read as another
    speaker's, past the prompt's rule that sources are data. Longest first."""
    vocab = llama_cpp.llama_model_get_vocab(llm.model)
    texts = {llama_cpp.llama_vocab_get_text(vocab, token).decode("utf-8", "replace")
             for token in range(llama_cpp.llama_vocab_n_tokens(vocab))
             if llama_cpp.llama_vocab_get_attr(vocab, token) & _READ_AS_CONTROL}
    return tuple(sorted((t for t in texts if len(t) > 1 and not t.isalnum()), key=len, reverse=True))


class LocalLlama:
    """llama-cpp-python with explicit thread counts; one generation at a time (its thread
    takes them in turn).

    Prompts that start alike are not read twice. The model keeps the last prompt's KV
    cache, and a small RAM cache (``PROMPT_CACHE_BYTES``, a few prompts) keeps earlier
    ones: in a chat, the follow-up's rewriting prompt no longer evicts the answer prompt's
    fixed instructions (~160 tokens, about 2 s on 2 cores). Flash attention reads prompts
    about 7% faster on this CPU. Its saved states are freed back to the system
    (`allocator.give_back_freed_memory`), not kept in the allocator's heaps.

    Messages are read as text: a control token's text inside them (an abstract quoting
    ``<|im_end|>``) is broken so that it cannot end a turn (`control_texts`,
    `as_text_messages`; the model's own control tokens and the usual template markers).

    It gives way to the work ``priority`` marks (`Priority`: the evidence of questions asked
    meanwhile), before its prompt and between tokens.

    llama.cpp runs on a thread of its own, never on the caller's. On a CPU with AMX, its
    matrix kernels set up the thread's tile registers once per thread and rely on them
    afterwards; onnxruntime's int8 kernels (the quantized embedder) reconfigure them on
    whatever thread calls it. On a shared thread the model's next answer was garbage.
    """

    def __init__(
        self, model: str, cache_dir: Path, threads: int, context_tokens: int, priority: Priority | None = None
    ) -> None:
        threads = threads or os.cpu_count() or 1
        give_back_freed_memory()
        self.model_name = model
        self.priority = priority or Priority()
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="llama")
        self.llm = self._thread.submit(
            _KvOnlyStates,
            model_path=str(model_path(model, cache_dir)),
            n_ctx=context_tokens,
            n_threads=threads,
            n_threads_batch=threads,
            flash_attn=True,
            verbose=False,
        ).result()
        self.llm.set_cache(llama_cpp.LlamaRAMCache(PROMPT_CACHE_BYTES))
        self.controls = control_texts(self.llm)
        self.markers = re.compile("|".join([*map(re.escape, self.controls), TEMPLATE_MARKERS.pattern]))

    def stream(self, messages: list[Message], max_tokens: int, usage: Usage) -> Iterator[str]:
        """Yield the reply token by token (temperature 0), generated on the model's thread."""
        deltas: queue.Queue = queue.Queue()
        stop = threading.Event()
        self._thread.submit(self._generate, messages, max_tokens, usage, deltas, stop)
        try:
            while (item := deltas.get()) is not _DONE:
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            stop.set()  # the reader left early: the model stops at its next token
            while item is not _DONE:
                item = deltas.get()

    def _generate(
        self, messages: list[Message], max_tokens: int, usage: Usage, deltas: queue.Queue, stop: threading.Event
    ) -> None:
        try:
            self.priority.waited(stop)  # the evidence of questions that came meanwhile goes first
            messages = as_text_messages(messages, self.markers)
            chunks = self.llm.create_chat_completion(
                messages=messages, stream=True, temperature=0.0, max_tokens=max_tokens
            )
            for chunk in chunks:
                if stop.is_set():
                    break
                self.priority.waited(stop)
                delta = chunk["choices"][0]["delta"].get("content")
                if delta:
                    usage.completion_tokens += 1
                    deltas.put(delta)
            usage.prompt_tokens = self.llm.n_tokens - usage.completion_tokens
        except Exception as error:  # raised again on the reader's thread
            deltas.put(error)
        finally:
            deltas.put(_DONE)


class _KvOnlyStates(llama_cpp.Llama):
    """`llama_cpp.Llama` whose cached states hold the KV cache only.

    The library's states also copy the last batch's logits (n_batch × vocabulary floats,
    about 300 MB for this model) that its cache does not count against its capacity. They
    are never read: a restored state is always evaluated again before sampling.
    """

    def save_state(self) -> LlamaState:
        size = llama_cpp.llama_state_get_size(self.ctx)
        buffer = (ctypes.c_uint8 * size)()
        used = llama_cpp.llama_state_get_data(self.ctx, buffer, size)
        return LlamaState(
            input_ids=self.input_ids.copy(),
            scores=np.empty((0, self.n_vocab()), dtype=np.single),
            n_tokens=self.n_tokens,
            llama_state=ctypes.string_at(buffer, used),
            llama_state_size=used,
            seed=self._seed,
        )

    def load_state(self, state: LlamaState) -> None:
        data = (ctypes.c_uint8 * state.llama_state_size).from_buffer_copy(state.llama_state)
        if llama_cpp.llama_state_set_data(self.ctx, data, state.llama_state_size) != state.llama_state_size:
            raise GenerationError("could not restore a cached prompt state")
        self.input_ids = state.input_ids.copy()
        self.n_tokens = state.n_tokens
        self._requires_eval = True
        self._seed = state.seed
