"""Benchmark results as JSON: one file per benchmark in ``benchmarks/results/``.

Each benchmark calls `save` with its figures; `benchmarks/render.py` turns the files into
``docs/evaluation.md`` and the README's results table. A file holds the command that
produced it, the machine it ran on and when, and one row per figure:
``{"key": ..., "figure": ..., "value": ...}`` (``key`` names a figure the README may show).
"""

from __future__ import annotations

import json
import os
import platform
import shlex
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
ROOT = RESULTS.parent.parent


def machine() -> dict[str, Any]:
    """The CPU, cores and memory of this machine (what the figures depend on)."""
    cpu = platform.processor() or platform.machine()
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                   if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    memory = None
    try:
        memory = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30)
    except (OSError, ValueError):
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "memory_gib": memory, "python": platform.python_version()}


def row(key: str, figure: str, value: str) -> dict[str, str]:
    """One figure: a key the README may show it by, what it is, its value as printed."""
    return {"key": key, "figure": figure, "value": value}


def _without_note(args: list[str]) -> list[str]:
    """The command's arguments less ``--note``'s text, which the result shows on its own."""
    if "--note" in args:
        at = args.index("--note")
        return args[:at] + args[at + 2 :]
    return [a for a in args if not a.startswith("--note=")]


def save(name: str, title: str, rows: list[dict[str, str]], note: str = "", **details: Any) -> Path:
    """Write ``benchmarks/results/<name>.json`` and return its path."""
    RESULTS.mkdir(exist_ok=True)
    script = Path(sys.argv[0]).resolve()
    script = script.relative_to(ROOT) if script.is_relative_to(ROOT) else script
    command = shlex.join(["python", script.as_posix(), *_without_note(sys.argv[1:])])
    result = {
        "benchmark": name,
        "title": title,
        "command": command,
        "measured": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine(),
        "note": note,
        "rows": rows,
        **details,
    }
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(f"results written to {path}", file=sys.stderr)
    return path
