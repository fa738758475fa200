"""The ``assistant`` command: ingest, stats, reset, search."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict

from pydantic import ValidationError

from assistant import Assistant, QuestionError
from assistant.index.embedders import EmbeddingError
from assistant.index.store import StoreError


def _ingest(assistant: Assistant, args: argparse.Namespace) -> int:
    report = assistant.ingest(args.paths, progress=not args.quiet)
    print(report.summary())
    print(f"index now holds {assistant.store.count()} abstracts")
    return 0


def _stats(assistant: Assistant, args: argparse.Namespace) -> int:
    stats = assistant.stats()
    if args.json:
        print(json.dumps(stats, indent=2))
        return 0
    print(f"{stats['abstracts']} abstracts, {stats['chunks']} chunks")
    print(f"index: {stats['location']} (collection {stats['collection']})")
    print(f"embedder: {stats['embedder']}")
    for source, count in stats["by_source"].items():
        print(f"  {count:6d}  {source}")
    return 0


def _reset(assistant: Assistant, args: argparse.Namespace) -> int:
    if not args.yes:
        answer = input(f"Delete every abstract in {assistant.stats()['location']}? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            print("nothing deleted")
            return 1
    assistant.reset()
    print("index is empty")
    return 0


def _search(assistant: Assistant, args: argparse.Namespace) -> int:
    hits = assistant.search(args.question, k=args.k)
    if args.json:
        print(json.dumps([asdict(h) for h in hits], indent=2, default=str))
        return 0
    for hit in hits:
        link = f"  {hit.abstract.url}" if hit.abstract.url else ""
        print(f"{hit.rank:2d}. [{hit.score:.3f}] {hit.abstract.title}{link}")
        print(f"    {hit.passage[:200]}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (one sub-command per operation)."""
    parser = argparse.ArgumentParser(prog="assistant", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    ingest = commands.add_parser("ingest", help="index abstracts from files or folders")
    ingest.add_argument("paths", nargs="+", help=".txt (Daily Papers), .jsonl/.json, .csv, .bib")
    ingest.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    ingest.set_defaults(run=_ingest)

    stats = commands.add_parser("stats", help="what the index holds")
    stats.add_argument("--json", action="store_true")
    stats.set_defaults(run=_stats)

    reset = commands.add_parser("reset", help="delete everything in the index")
    reset.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")
    reset.set_defaults(run=_reset)

    search = commands.add_parser("search", help="find the abstracts that match a question")
    search.add_argument("question")
    search.add_argument("-k", type=int, default=10, help="number of abstracts (default 10)")
    search.add_argument("--json", action="store_true")
    search.set_defaults(run=_search)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``assistant`` console script."""
    args = build_parser().parse_args(argv)
    try:
        return args.run(Assistant(), args)
    except (QuestionError, StoreError, EmbeddingError, ValidationError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
