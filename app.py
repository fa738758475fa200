"""The app: ``python app.py`` serves the assistant at http://127.0.0.1:7860.

Two tabs. **Chat**: streamed answers and follow-up questions, each under a table of the relevant
papers' findings (their own result and conclusion, quoted, with a study snapshot), shown as soon
as search returns, before the model writes; beside them the sources panel,
which shows the retrieved abstracts as soon as search returns and, once the answer is
verified, its cited abstracts with the supporting sentences highlighted. Every answer keeps
its own sources (collapsed under it, where its [n] markers point) and offers "Copy as
Markdown", "Download .bib" and "Download .ris". **Search**: the index searched without the model, with the
same filters (file, year range); "Ask about these" hands the query to the chat. Settings,
example questions, and uploads of more papers.

Endpoints for ``gradio_client``: ``predict(message, api_name="/chat")`` (its first streamed
update already carries the retrieved sources) and ``predict(query, k, api_name="/search")``
(the results as HTML and as a list of records).
"""

from __future__ import annotations

import html
import logging
from collections.abc import Iterator
from typing import Any

import gradio as gr

from assistant import Answer, Assistant, Chat, GenerationError, Hit, QuestionError, Retrieved, default_assistant, render
from assistant.corpus import SUFFIXES
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
        for number, (question, answer) in enumerate(chat.history, start=1)
        for turn in (
            {"role": "user", "content": html.escape(question)},
            {"role": "assistant", "content": render.answer_html(answer, number)},
        )
    ]


def _year(text: str | None) -> int | None:
    """A year typed into a filter box (empty: no limit)."""
    text = (text or "").strip()
    if not text:
        return None
    if not text.isdigit() or not 1000 <= int(text) <= 2999:
        raise ValueError(f"'{text}' is not a year: type one such as 2021, or leave the box empty")
    return int(text)


def _filters(source: str | None, year_min: str | None, year_max: str | None) -> dict[str, Any] | None:
    """The search filters the UI's controls ask for (None: search everything)."""
    filters: dict[str, Any] = {"year_min": _year(year_min), "year_max": _year(year_max)}
    if source and source != ALL_SOURCES:
        filters["source"] = source
    return {k: v for k, v in filters.items() if v is not None} or None


def _record(hit: Hit) -> dict[str, Any]:
    """A search result as the /search endpoint returns it."""
    a = hit.abstract
    return {"rank": hit.rank, "score": round(hit.score, 4), "id": a.id, "title": a.title, "url": a.url,
            "source": a.source, "year": a.year, "authors": list(a.authors), "passage": hit.passage}


def _filter_controls(choices: list[str], prefix: str) -> tuple[gr.Dropdown, gr.Textbox, gr.Textbox]:
    """The file and year-range filters, as the chat's settings and the search tab both show them
    (years are text boxes: an empty number box would read as year 0)."""
    source = gr.Dropdown(choices, value=ALL_SOURCES, label="Search only in", elem_id=f"{prefix}-source")
    year_min = gr.Textbox(placeholder="any", label="From year", elem_id=f"{prefix}-year-min")
    year_max = gr.Textbox(placeholder="any", label="To year", elem_id=f"{prefix}-year-max")
    return source, year_min, year_max


def build(assistant: Assistant) -> gr.Blocks:
    """The app's layout and events."""
    s = assistant.settings
    status_text, choices = index_view(assistant)
    with gr.Blocks(title="Abstract Assistant") as demo:
        status = gr.Markdown(status_text, elem_id="status")
        conversation = gr.State(None)
        with gr.Tabs(elem_id="tabs") as tabs:
            with gr.Tab("Chat", id="chat", elem_id="chat-tab"):
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
                            with gr.Row():
                                source, year_min, year_max = _filter_controls(choices, "chat")
                            gr.Textbox(f"{s.llm_model} ({s.llm_backend})", label="Model", interactive=False)
                            new_chat = gr.Button("New chat")
                        with gr.Accordion("Add papers", open=False):
                            upload = gr.File(
                                label="Upload abstracts (" + ", ".join(SUFFIXES) + ")",
                                file_types=list(SUFFIXES),
                                file_count="multiple",
                                elem_id="upload",
                            )
                            upload_report = gr.HTML(elem_id="upload-report")
                    with gr.Column(scale=2):
                        sources = gr.HTML(
                            render.sources_html(None), label="Sources", show_label=True, container=True,
                            padding=True, elem_id="sources",
                        )
            with gr.Tab("Search", id="search", elem_id="search-tab"):
                with gr.Row():
                    query = gr.Textbox(
                        placeholder="Search the indexed abstracts (no model involved)…", label="Search",
                        elem_id="search-query", scale=4,
                    )
                    search_k = gr.Slider(1, 50, value=10, step=1, label="Results", scale=1)
                with gr.Row():
                    search_source, search_year_min, search_year_max = _filter_controls(choices, "search")
                with gr.Row():
                    search_button = gr.Button("Search", variant="primary", elem_id="search-button")
                    ask_about = gr.Button("Ask about these", elem_id="ask-about")
                results = gr.HTML(elem_id="search-results")
                records = gr.JSON(visible=False)

        def respond(
            text: str,
            chat: Chat | None,
            k: float = s.context.top_k,
            source: str = ALL_SOURCES,
            year_min: str | None = None,
            year_max: str | None = None,
        ) -> Iterator[tuple[str, list[Turn], Any, Chat]]:
            chat = chat or assistant.chat()
            turn = len(chat.history) + 1
            shown = _history(chat) + [
                {"role": "user", "content": html.escape(text)},
                {"role": "assistant", "content": ""},
            ]
            streamed, table = "", ""
            try:
                for item in chat.ask_events(text, k=int(k), filters=_filters(source, year_min, year_max)):
                    if isinstance(item, Retrieved):
                        table = render.findings_html(item.findings, turn)
                        shown[-1]["content"] = table + f'<em class="reading">Reading {len(item.hits)} abstracts…</em>'
                        yield "", shown, render.retrieved_html(item.hits), chat
                    elif isinstance(item, Answer):
                        shown[-1]["content"] = render.answer_html(item, turn)
                        yield "", shown, render.sources_html(item), chat
                    else:
                        streamed += item
                        shown[-1]["content"] = table + render.streaming_html(streamed)
                        yield "", shown, gr.skip(), chat
            except (QuestionError, GenerationError, StoreError, EmbeddingError, ValueError) as error:  # say what to do
                shown[-1]["content"] = f"⚠ {html.escape(str(error))}"
                yield "", shown, gr.skip(), chat
            except Exception as error:  # the UI's boundary: a message, never a traceback
                log.exception("answering failed")
                shown[-1]["content"] = f"⚠ Something went wrong while answering: {html.escape(str(error))}"
                yield "", shown, gr.skip(), chat

        def find(
            text: str,
            k: float = 10,
            source: str = ALL_SOURCES,
            year_min: str | None = None,
            year_max: str | None = None,
        ) -> tuple[str, list[dict[str, Any]]]:
            if not text or not text.strip():
                return "<p><em>Type a query to search the indexed abstracts.</em></p>", []
            try:
                hits = assistant.search(text, k=int(k), filters=_filters(source, year_min, year_max))
            except (QuestionError, StoreError, EmbeddingError, ValueError) as error:  # they say what to do
                return f"<p>⚠ {html.escape(str(error))}</p>", []
            return render.search_html(hits), [_record(hit) for hit in hits]

        def add_papers(
            files: list[str] | None, current: str, current_search: str, progress: gr.Progress = gr.Progress()
        ) -> tuple[Any, ...]:
            if not files:
                return "", gr.skip(), gr.skip(), gr.skip()
            progress(0, desc="Reading files")
            try:
                report = assistant.ingest(
                    files, on_batch=lambda done, total: progress((done, total), desc="Indexing", unit="abstracts")
                )
            except (StoreError, EmbeddingError) as error:  # they say what to do
                return f"<p>⚠ {html.escape(str(error))}</p>", gr.skip(), gr.skip(), gr.skip()
            except Exception as error:  # the UI's boundary: a message, never a traceback
                log.exception("ingest failed")
                message = f"<p>⚠ The upload could not be indexed: {html.escape(str(error))}</p>"
                return message, gr.skip(), gr.skip(), gr.skip()
            status_now, choices_now = index_view(assistant)
            return (
                render.ingest_html(report, files),
                status_now,
                gr.Dropdown(choices=choices_now, value=current if current in choices_now else ALL_SOURCES),
                gr.Dropdown(choices=choices_now, value=current_search if current_search in choices_now else ALL_SOURCES),
            )

        chat_inputs = [message, conversation, k, source, year_min, year_max]
        chat_outputs = [message, chatbot, sources, conversation]
        message.submit(
            respond, chat_inputs, chat_outputs, api_name="chat", concurrency_limit=s.answers_at_once,
            concurrency_id="model",
        )
        search_inputs = [query, search_k, search_source, search_year_min, search_year_max]
        searching = {"fn": find, "inputs": search_inputs, "outputs": [results, records], "concurrency_limit": 4,
                     "concurrency_id": "search"}  # one group: searches never wait behind the model
        query.submit(api_name="search", **searching)
        search_button.click(api_name=False, **searching)
        for control in (search_k, search_source, search_year_min, search_year_max):  # a new filter searches again
            control.change(api_name=False, **searching)

        def hand_over(text: str, *filters: Any) -> tuple[Any, ...]:
            """Put the search tab's query and filters into the chat, and show the chat."""
            if not text or not text.strip():
                raise gr.Error("Type a query in the search box first.")
            return (text, *filters, gr.Tabs(selected="chat"))

        ask_about.click(
            hand_over, [query, search_source, search_year_min, search_year_max],
            [message, source, year_min, year_max, tabs], api_name=False,
        ).success(
            respond, chat_inputs, chat_outputs, api_name=False, concurrency_limit=s.answers_at_once,
            concurrency_id="model",
        )
        new_chat.click(
            lambda: (None, [], render.sources_html(None)), None, [conversation, chatbot, sources], api_name=False
        )
        upload.upload(
            add_papers, [upload, source, search_source], [upload_report, status, source, search_source],
            api_name="add_papers", concurrency_limit=1,
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
        head=render.SCRIPT,
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
