"""Chat follow-ups: how well they are rewritten, and their latency with the local model's
prompt cache and without it.

    python benchmarks/chat.py [--data-dir DIR] [--skip-latency]

Rewrites: each case of ``benchmarks/followups.jsonl`` (one earlier turn, a follow-up, and
the name the standalone question must contain, or null when the follow-up stands alone)
goes through the ``condense`` prompt. A rewrite is right when it has that name and keeps
every content word of the follow-up other than the words that refer back ("it", "them");
a synonym counts as a miss ("biggest" rewritten "largest"), so the figure is strict. The
prompt's examples were written with these cases in view, so they are a check, not a
held-out measure.

Latency: each follow-up turn first rewrites the question (the ``condense`` prompt), then
answers it (the ``answer`` prompt). Without a prompt cache the rewrite evicts the answer
prompt's fixed instructions from the model's KV cache, and they are read again on every
turn. The scripted conversations run twice, alternating cache on and off per conversation
so that machine noise hits both alike; the table gives medians over the follow-up turns.
Uses the index in DIR (the bundled corpus is indexed into it on the first question if it
is empty). Never part of the test run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from assistant import Answer, Assistant
from assistant.answer.pipeline import condense
from assistant.words import content_words
from results import row, save

FOLLOW_UPS = Path(__file__).with_name("followups.jsonl")
EXAMPLE_NAMES = ("foonet", "barlm", "quxformer")  # the names in prompts/condense.md's examples
REFERRING = content_words("it its they them their this that these those")

CONVERSATIONS = [
    ["How does the Normalizer-Free ResNet train without batch normalization?",
     "What ImageNet accuracy does it reach?",
     "How much faster is it to train than EfficientNet?"],
    ["What is DReSD?",
     "How does it retrieve token sequences?",
     "How much faster is generation with it?"],
    ["What technique did the Pangu Ultra team introduce to eliminate loss spikes?",
     "How many parameters does the model have?",
     "How many NPUs were used to train it?"],
]


def rewrite_check(assistant: Assistant) -> tuple[int, int]:
    """Print each follow-up's rewrite and how many name what they should; return (right, cases)."""
    cases = [json.loads(line) for line in FOLLOW_UPS.read_text().splitlines() if line.strip()]
    right = 0
    started = time.perf_counter()
    for case in cases:
        earlier = Answer(text=case["answer"], citations=[], sources=[], abstained=False, question=case["question"])
        rewrite = condense(assistant.generator, [(case["question"], earlier)], case["follow_up"], 96)
        lowered = rewrite.lower()
        ok = (
            (not case["names"] or case["names"] in lowered)
            and content_words(case["follow_up"]) - REFERRING <= content_words(rewrite)
            and not any(name in lowered for name in EXAMPLE_NAMES)
        )
        right += ok
        print(f"{'ok ' if ok else 'BAD'} {case['follow_up']!r} -> {rewrite!r}")
    seconds = (time.perf_counter() - started) / len(cases)
    print(f"rewrites right: {right}/{len(cases)} ({seconds:.1f} s each)\n")
    return right, len(cases)


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
    parser.add_argument("--skip-latency", action="store_true", help="only check the rewrites")
    args = parser.parse_args()
    assistant = Assistant(data_dir=args.data_dir or tempfile.mkdtemp(prefix="chat-bench-"), auto_ingest=True)
    right, cases = rewrite_check(assistant)
    rows = [row("chat_rewrites", "follow-ups rewritten with their subject named and their words kept", f"{right} of {cases}")]
    if args.skip_latency:
        save("chat", "Chat follow-ups", rows)
        return
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
        rows.append(row("", f"follow-up turn p50 with the prompt cache {mode.split()[1]}: rewrite / first token / total",
                        f"{p50['rewrite']:.1f} / {p50['first_token']:.1f} / {p50['total']:.1f} s"))
    save("chat", "Chat follow-ups: rewrites and latency", rows)


if __name__ == "__main__":
    main()
