"""Embeddings from the OpenAI API or any OpenAI-compatible ``/embeddings`` endpoint.

A GPU server (TEI, vLLM) embeds a batch in milliseconds and spends the rest of a request
waiting on the network and on our side; several requests in flight keep it busy.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import openai

from assistant.index.embedders.base import EmbeddingError
from assistant.openai_client import explain


class OpenAIEmbedder:
    """Calls ``client.embeddings.create`` with up to ``concurrency`` requests in flight; the
    dimension is learned from the first reply."""

    default_batch_size = 64  # texts per request

    def __init__(
        self, client: openai.OpenAI, model: str, batch_size: int = default_batch_size, concurrency: int = 1
    ) -> None:
        self.client = client
        self.model = model
        self.batch_size = batch_size
        self.concurrency = concurrency
        self.model_id = f"openai:{model}"
        self.dimension = 0

    def _request(self, texts: list[str]) -> list[list[float]]:
        """One request's vectors, in the order of its texts."""
        try:
            reply = self.client.embeddings.create(model=self.model, input=texts)
        except openai.APIError as error:
            raise EmbeddingError(explain(error, self.client, self.model, "embedding")) from error
        rows = []
        for item in sorted(reply.data, key=lambda d: d.index):
            if not item.embedding or not isinstance(item.embedding[0], int | float):
                raise EmbeddingError(
                    f"embedding server {self.client.base_url} returned token-level, not text-level "
                    f"vectors for model {self.model!r}; serve an embedding model (with pooling)"
                )
            rows.append(item.embedding)
        return rows

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed texts in batches through the server; errors name the server and model."""
        batches = [texts[start : start + self.batch_size] for start in range(0, len(texts), self.batch_size)]
        if self.concurrency > 1 and len(batches) > 1:
            with ThreadPoolExecutor(min(self.concurrency, len(batches))) as pool:
                replies = list(pool.map(self._request, batches))
        else:
            replies = [self._request(batch) for batch in batches]
        rows = [row for reply in replies for row in reply]
        vectors = np.asarray(rows, dtype=np.float32).reshape(len(rows), -1)
        if len(vectors):
            self.dimension = vectors.shape[1]
            vectors /= np.clip(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12, None)
        return vectors
