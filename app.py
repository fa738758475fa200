"""The chat app: ``python app.py`` serves the assistant at http://127.0.0.1:7860.

A chat with streamed answers and follow-up questions; beside it the sources of the
latest answer (cited abstracts with their supporting sentences highlighted, the
retrieved but uncited ones collapsed); settings (number of sources, a source filter,
the model in use, a new chat); example questions; and uploads of more papers. The
``/chat`` endpoint takes just the message, so
``gradio_client.Client(url).predict(message, api_name="/chat")`` works.
"""

from __future__ import annotations

import html
import logging
from collections.abc import Iterator
from typing import Any

import gradio as gr

from assistant import Answer, Assistant, Chat, GenerationError, QuestionError, default_assistant, render
from assistant.corpus import LOADERS
from assistant.index.embedders import EmbeddingError
from assistant.index.store import StoreError

log = logging.getLogger("assistant.app")

ALL_SOURCES = "All sources"
Turn = dict[str, str]


def index_view(assistant: Assistant) -> tuple[str, list[str]]:
    """The status line (abstracts indexed, the model that answers) and the source
    filter's options (all sources, then each indexed file), from one read of the index."""
    stats, s = assistant.stats(), assistant.settings
    status = (
        f"**Abstract Assistant** · {stats['abstracts']:,} abstracts indexed · "
        f"answers by `{html.escape(s.llm_model)}` ({s.llm_backend})"
    )
    return status, [ALL_SOURCES, *stats["by_source"]]


def answerable_examples(assistant: Assistant) -> list[str]:
    """The configured example questions that this index has relevant abstracts for."""
    keep = []
    for question in assistant.settings.app_examples:
        hits = assistant.search(question, k=1)
        if hits and hits[0].relevance >= assistant.settings.min_relevance:
            keep.append(question)
    return keep


def _history(chat: Chat) -> list[Turn]:
    return [
        turn
        for question, answer in chat.history
        for turn in (
            {"role": "user", "content": html.escape(question)},
            {"role": "assistant", "content": render.answer_html(answer)},
        )
    ]


def build(assistant: Assistant) -> gr.Blocks:
    """The app's layout and events."""
    s = assistant.settings
    status_text, choices = index_view(assistant)
    with gr.Blocks(title="Abstract Assistant") as demo:
        status = gr.Markdown(status_text, elem_id="status")
        conversation = gr.State(None)
        with gr.Row():
            with gr.Column(scale=3):
                chatbot = gr.Chatbot(
                    height=520, sanitize_html=True, label="Chat", elem_id="chat", buttons=["copy", "copy_all"]
                )
                message = gr.Textbox(
                    placeholder="Ask about the indexed abstracts…", label="Question", elem_id="question"
                )
                examples = answerable_examples(assistant)
                if examples:
                    gr.Examples(examples=[[q] for q in examples], inputs=[message], label="Example questions")
                with gr.Accordion("Settings", open=False):
                    k = gr.Slider(1, 10, value=s.context.top_k, step=1, label="Number of sources")
                    source = gr.Dropdown(choices, value=ALL_SOURCES, label="Search only in")
                    gr.Textbox(f"{s.llm_model} ({s.llm_backend})", label="Model", interactive=False)
                    new_chat = gr.Button("New chat")
                with gr.Accordion("Add papers", open=False):
                    upload = gr.File(
                        label="Upload abstracts (" + ", ".join(sorted(LOADERS)) + ")",
                        file_types=sorted(LOADERS),
                        file_count="multiple",
                        elem_id="upload",
                    )
                    upload_report = gr.HTML(elem_id="upload-report")
            with gr.Column(scale=2):
                sources = gr.HTML(
                    render.sources_html(None), label="Sources", show_label=True, container=True, padding=True,
                    elem_id="sources",
                )

        def respond(
            text: str, chat: Chat | None, k: float = s.context.top_k, source: str = ALL_SOURCES
        ) -> Iterator[tuple[str, list[Turn], Any, Chat]]:
            chat = chat or assistant.chat()
            shown = _history(chat) + [
                {"role": "user", "content": html.escape(text)},
                {"role": "assistant", "content": ""},
            ]
            filters = {"source": source} if source and source != ALL_SOURCES else None
            streamed = ""
            try:
                for item in chat.ask_stream(text, k=int(k), filters=filters):
                    if isinstance(item, Answer):
                        shown[-1]["content"] = render.answer_html(item)
                        yield "", shown, render.sources_html(item), chat
                    else:
                        streamed += item
                        shown[-1]["content"] = render.streaming_html(streamed)
                        yield "", shown, gr.skip(), chat
            except (QuestionError, GenerationError, StoreError, EmbeddingError) as error:  # they say what to do
                shown[-1]["content"] = f"⚠ {html.escape(str(error))}"
                yield "", shown, gr.skip(), chat
            except Exception as error:  # the UI's boundary: a message, never a traceback
                log.exception("answering failed")
                shown[-1]["content"] = f"⚠ Something went wrong while answering: {html.escape(str(error))}"
                yield "", shown, gr.skip(), chat

        def add_papers(
            files: list[str] | None, current: str, progress: gr.Progress = gr.Progress()
        ) -> tuple[str, Any, Any]:
            if not files:
                return "", gr.skip(), gr.skip()
            progress(0, desc="Reading files")
            try:
                report = assistant.ingest(
                    files, on_batch=lambda done, total: progress((done, total), desc="Indexing", unit="abstracts")
                )
            except (StoreError, EmbeddingError) as error:  # they say what to do
                return f"<p>⚠ {html.escape(str(error))}</p>", gr.skip(), gr.skip()
            except Exception as error:  # the UI's boundary: a message, never a traceback
                log.exception("ingest failed")
                return f"<p>⚠ The upload could not be indexed: {html.escape(str(error))}</p>", gr.skip(), gr.skip()
            status_now, choices_now = index_view(assistant)
            return (
                render.ingest_html(report, files),
                status_now,
                gr.Dropdown(choices=choices_now, value=current if current in choices_now else ALL_SOURCES),
            )

        message.submit(
            respond,
            [message, conversation, k, source],
            [message, chatbot, sources, conversation],
            api_name="chat",
            concurrency_limit=s.answers_at_once,
            concurrency_id="model",
        )
        new_chat.click(
            lambda: (None, [], render.sources_html(None)), None, [conversation, chatbot, sources], api_name=False
        )
        upload.upload(
            add_papers, [upload, source], [upload_report, status, source], api_name="add_papers", concurrency_limit=1
        )
    return demo


def launch(assistant: Assistant) -> None:
    """Serve the app with the assistant's settings (host, port, share link, login)."""
    s = assistant.settings
    auth = (s.app_username, s.app_password.get_secret_value()) if s.app_username and s.app_password else None
    theme = gr.themes.Default(font=["ui-sans-serif", "system-ui", "sans-serif"], font_mono=["ui-monospace", "monospace"])
    build(assistant).queue().launch(
        server_name=s.app_host,
        server_port=s.app_port,
        share=s.app_share,
        auth=auth,
        theme=theme,
        css=render.CSS,
        max_file_size=s.app_max_upload_mb * gr.FileSize.MB,
    )


def main() -> None:
    """Open the default assistant (ingesting the bundled corpus if the index is empty) and serve."""
    assistant = default_assistant()
    try:
        report = assistant.ensure_corpus()
    except StoreError as error:  # wrong embedder, older index, unreachable server: say what to do
        raise SystemExit(f"error: {error}") from None
    if report:
        print(report.summary())
    launch(assistant)


if __name__ == "__main__":
    main()
