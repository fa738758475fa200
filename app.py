"""Entry point of the chat app.

The Gradio chat UI is not built yet (it comes with the UI issue). For now this prepares
the assistant exactly as the app will: it opens the index and ingests the bundled corpus
when the index is empty, then says what it holds and how to search it.
"""

from __future__ import annotations

from assistant import default_assistant


def main() -> None:
    """Open the default assistant, ingest the bundled corpus if needed, report."""
    assistant = default_assistant()
    report = assistant.ensure_corpus()
    if report:
        print(report.summary())
    stats = assistant.stats()
    print(f"index ready: {stats['abstracts']} abstracts at {stats['location']}")
    print("The chat UI is not built yet; search from the shell meanwhile:")
    print('  assistant search "your question"')


if __name__ == "__main__":
    main()
