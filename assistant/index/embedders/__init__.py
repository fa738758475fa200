"""Embedding backends; `create` picks the one named in settings."""

from __future__ import annotations

from assistant.index.embedders.base import Embedder, EmbeddingError
from assistant.settings import Settings


def create(settings: Settings) -> Embedder:
    """The embedder the settings ask for (no fallback to another model)."""
    if settings.embed_backend == "onnx":
        from assistant.index.embedders.onnx_minilm import MODEL_NAME, OnnxMiniLM

        if settings.embed_model != MODEL_NAME:
            raise EmbeddingError(
                f"the onnx backend ships only {MODEL_NAME}, not {settings.embed_model!r}"
            )
        return OnnxMiniLM(settings.cache_dir, settings.embed_quantized, settings.embed_max_tokens,
                          settings.embed_threads, settings.embed_batch_size)
    from assistant.index.embedders.openai_embedder import OpenAIEmbedder
    from assistant.openai_client import make_client

    batch_size = settings.embed_batch_size or OpenAIEmbedder.default_batch_size
    return OpenAIEmbedder(make_client(settings), settings.embed_model, batch_size, settings.embed_concurrency)


__all__ = ["Embedder", "EmbeddingError", "create"]
