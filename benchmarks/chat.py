"""Follow-up latency in a chat, with the local model's prompt cache and without it.

    python benchmarks/chat.py [--data-dir DIR]

Each follow-up turn first rewrites the question (the ``condense`` prompt), then answers it
(the ``answer`` prompt). Without a prompt cache the rewrite evicts the answer prompt's fixed
instructions from the model's KV cache, and they are read again on every turn. The scripted
conversations run twice, alternating cache on and off per conversation so that machine
noise hits both alike; the table gives medians over the follow-up turns. Uses the index in
DIR (built from the bundled corpus if missing). Never part of the test run.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from assistant import Assistant
from assistant.settings import BUNDLED_CORPUS

CONVERSATIONS = [
    ["How does the Normalizer-Free ResNet train without batch normalization?",
     "What ImageNet accuracy does it reach?",
     "How much faster is it to train than EfficientNet?"],
    ["What is DReSD?",
     "What acceptance rates does it report?",
     "What does it compare against?"],
    ["What technique did the Pangu Ultra team introduce to eliminate loss spikes?",
     "How many parameters does the model have?",
     "On which hardware was it trained?"],
]


def follow_up_timings(assistant: Assistant, questions: list[str]) -> list[dict[str, float]]:
    """Seconds to rewrite, to the first answer token and in all, for each follow-up turn."""
    chat = assistant.chat()
    chat.ask(questions[0])
    turns = []
    for question in questions[1:]:
        started = time.perf_counter()
        answer = chat.ask(question)
        wall = time.perf_counter() - started
        rewrite = wall - answer.timings["total"]
        turns.append({
            "rewrite": rewrite,
            "first_token": rewrite + answer.timings.get("first_token", answer.timings["total"]),
            "total": wall,
        })
    return turns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", help="index of the bundled corpus (built if missing)")
    args = parser.parse_args()
    assistant = Assistant(data_dir=args.data_dir or tempfile.mkdtemp(prefix="chat-bench-"))
    if assistant.stats()["abstracts"] == 0:
        assistant.ingest([BUNDLED_CORPUS], progress=False)
    llm = assistant.generator.llm
    cache = llm.cache
    results: dict[str, list[dict[str, float]]] = {"cache on": [], "cache off": []}
    for number, questions in enumerate(CONVERSATIONS * 2):
        mode = "cache on" if number % 2 == 0 else "cache off"
        llm.set_cache(cache if mode == "cache on" else None)
        results[mode] += follow_up_timings(assistant, questions)
    llm.set_cache(cache)
    print(f"follow-up turns of {len(CONVERSATIONS)} scripted conversations, each run with and without the prompt cache")
    print(f"{'':10s} {'turns':>5s} {'rewrite p50':>12s} {'1st token p50':>14s} {'total p50':>10s}")
    for mode, turns in results.items():
        p50 = {key: statistics.median(t[key] for t in turns) for key in ("rewrite", "first_token", "total")}
        print(f"{mode:10s} {len(turns):5d} {p50['rewrite']:11.2f}s {p50['first_token']:13.2f}s {p50['total']:9.2f}s")


if __name__ == "__main__":
    main()
