"""Embeddings from the OpenAI API or any OpenAI-compatible ``/embeddings`` endpoint."""

from __future__ import annotations

import numpy as np
import openai

from assistant.index.embedders.base import EmbeddingError
from assistant.openai_client import explain


class OpenAIEmbedder:
    """Calls ``client.embeddings.create``; the dimension is learned from the first reply."""

    default_batch_size = 64  # texts per request

    def __init__(self, client: openai.OpenAI, model: str, batch_size: int = default_batch_size) -> None:
        self.client = client
        self.model = model
        self.batch_size = batch_size
        self.model_id = f"openai:{model}"
        self.dimension = 0

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed texts in batches through the server; errors name the server and model."""
        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            try:
                reply = self.client.embeddings.create(
                    model=self.model, input=texts[start : start + self.batch_size]
                )
            except openai.APIError as error:
                raise EmbeddingError(explain(error, self.client, self.model, "embedding")) from error
            for item in sorted(reply.data, key=lambda d: d.index):
                if not item.embedding or not isinstance(item.embedding[0], int | float):
                    raise EmbeddingError(
                        f"embedding server {self.client.base_url} returned token-level, not text-level "
                        f"vectors for model {self.model!r}; serve an embedding model (with pooling)"
                    )
                rows.append(item.embedding)
        vectors = np.asarray(rows, dtype=np.float32).reshape(len(rows), -1)
        if len(vectors):
            self.dimension = vectors.shape[1]
            vectors /= np.clip(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12, None)
        return vectors
