"""The embedder interface: one main method, `embed(texts) -> vectors`."""

from __future__ import annotations

from typing import Protocol

import numpy as np


class Embedder(Protocol):
    """Turns texts into L2-normalised vectors.

    ``model_id`` names the model and its settings; an index remembers the id it was built
    with, and opening it with another embedder is an error (the vectors would not compare).
    """

    model_id: str
    dimension: int

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed a batch of texts; returns a float32 array of shape (len(texts), dimension)."""
        ...


class EmbeddingError(RuntimeError):
    """The embedding backend failed (model files missing, server unreachable, ...)."""
