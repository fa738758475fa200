"""Offline defaults, applied once at import of the package.

Libraries underneath us phone home or download at run time unless told not to:
tiktoken fetches its encodings, Hugging Face tooling looks for hub updates,
onnxruntime and Chroma send telemetry, Gradio sends analytics. We set each
switch to "offline" unless the user already set it, so nothing leaves the
machine unless a remote service is configured on purpose.

One performance default rides along: numpy's BLAS threads fight onnxruntime's own
threads for the CPU, which made p95 search latency worse on 2 cores; one BLAS thread
avoids that (it only takes effect when numpy is imported after this package).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path


def _llama_index_tiktoken_cache() -> str:
    """The tiktoken encodings that llama-index-core ships inside its wheel."""
    spec = importlib.util.find_spec("llama_index.core")
    return str(Path(spec.origin).parent / "_static" / "tiktoken_cache")


OFFLINE_DEFAULTS: dict[str, str] = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "ORT_DISABLE_TELEMETRY": "1",
    "ANONYMIZED_TELEMETRY": "False",
    "GRADIO_ANALYTICS_ENABLED": "False",
    "OPENBLAS_NUM_THREADS": "1",
}


def apply() -> None:
    """Set offline environment defaults for this process (user values win)."""
    for key, value in OFFLINE_DEFAULTS.items():
        os.environ.setdefault(key, value)
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", _llama_index_tiktoken_cache())
