"""Where an ingest got to, so that one cut short resumes where it stopped.

A PubMed baseline ingest reads ~1,300 files for hours. The files it has finished are noted,
one by one, in a small JSON file beside the index (written aside and renamed, so it is whole
or absent). Run again with the same files and library after a kill, the ingest skips those
(unchanged: same path, size and modification time) and reads on from the first unfinished
one; the records of that file committed before the kill are skipped as duplicates. A
finished ingest removes the file: the next run of the same files reads them all again (and
reports their abstracts as duplicates), as a user re-adding files expects.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path


class Checkpoint:
    """The one unfinished ingest of an index (ingests of one index take turns), if any."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._run: dict | None = None

    def start(self, paths: Iterable[str | Path], library: str) -> set[str]:
        """Begin an ingest of these paths into this library; return the fingerprints of the
        files an interrupted ingest of the same paths and library had finished."""
        run = {"library": library, "paths": sorted(str(Path(p).resolve()) for p in paths), "done": []}
        try:
            saved = json.loads(self.path.read_text())
        except (OSError, ValueError):
            saved = None
        same = isinstance(saved, dict) and saved.get("library") == library and saved.get("paths") == run["paths"]
        if same and isinstance(saved.get("done"), list):
            run["done"] = [str(f) for f in saved["done"]]
        self._run = run
        return set(run["done"])

    def finished_file(self, fingerprint: str) -> None:
        """Note one file as fully ingested (its every abstract committed or skipped)."""
        assert self._run is not None, "start() first"
        self._run["done"].append(fingerprint)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        aside = self.path.with_suffix(".tmp")
        aside.write_text(json.dumps(self._run))
        os.replace(aside, self.path)

    def finish(self) -> None:
        """The ingest ended normally: nothing to resume."""
        self.path.unlink(missing_ok=True)
        self._run = None
