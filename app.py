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

Many users at once: every question gets its sources and findings as soon as search returns,
however many wait for the model; only the answer waits, in the model's line
(`waiting_line`: first come, first served, one waiting question per chat, a reader who left
dropped), each user shown their place and the estimated wait.

Accounts (`assistant users add`): when any exists, every route asks for a login (the app's
login page, ``Client(url, auth=(name, password))``, or a trusted proxy's header,
``Settings.app_auth_header``), and every handler works on the logged-in user's view of the
index (`Viewer`): the shared library and their private one. Uploads go to the private one;
no uploaded file is served by URL, to anyone, at any moment (`PrivateUploads`), and each is
deleted once indexed.
"""

from __future__ import annotations

import atexit
import contextvars
import html
import logging
import re
import threading
import time
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr
from gradio.utils import get_upload_folder
from starlette.middleware import Middleware
from starlette.responses import PlainTextResponse

from assistant import (
    Answer,
    Assistant,
    Chat,
    GenerationError,
    Hit,
    QuestionError,
    Retrieved,
    Settings,
    default_assistant,
    render,
)
from assistant.accounts import AccountError, LoginGuard
from assistant.allocator import give_back_freed_memory
from assistant.corpus import COMPRESSED_SUFFIXES, SUFFIXES
from assistant.index.embedders import EmbeddingError
from assistant.index.store import StoreError
from assistant.limits import Allowance
from assistant.remote.http import ServiceError
from assistant.waiting_line import Replaced, WaitingLine

log = logging.getLogger("assistant.app")

ALL_SOURCES = "All sources"
WAITING_UPDATE_S = 1.0  # how often a question waiting for the model is shown its place
WARM_UP_EXIT_S = 10.0  # longest an exit waits for the warm-up (one abstract's sentences take ~0.1 s; a loading
# vector index, up to ~40 s at a million abstracts, is not waited out)
Turn = dict[str, str]


def index_view(assistant: Assistant) -> tuple[str, list[str]]:
    """The status line (abstracts indexed, the model that answers) and the source
    filter's options (all sources, then each indexed file), from one read of the index."""
    sources, s = assistant.sources(), assistant.settings
    status = (
        f"**Abstract Assistant** · {sum(sources.values()):,} abstracts indexed · "
        f"answers by `{html.escape(s.llm_model)}` ({s.llm_backend})"
    )
    return status, [ALL_SOURCES, *sources]


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
    source = gr.Dropdown(  # any value: with accounts, each user's files are listed only on their page
        choices, value=ALL_SOURCES, label="Search only in", elem_id=f"{prefix}-source", allow_custom_value=True
    )
    year_min = gr.Textbox(placeholder="any", label="From year", elem_id=f"{prefix}-year-min")
    year_max = gr.Textbox(placeholder="any", label="To year", elem_id=f"{prefix}-year-max")
    return source, year_min, year_max


class Viewer:
    """Each request's view of the index: the logged-in user's when accounts are on (decided
    when the app starts), else the whole index. Never what the client names."""

    def __init__(self, assistant: Assistant) -> None:
        self.assistant = assistant
        self.accounts_on = assistant.accounts.enabled() or bool(assistant.settings.app_auth_header)

    def __call__(self, request: gr.Request | None) -> Assistant:
        if not self.accounts_on:
            if self.assistant.accounts.enabled():
                raise AccountError("accounts were added since the app started: restart it so that it asks for logins")
            return self.assistant
        name = getattr(request, "username", None)
        if not name:
            raise AccountError("log in first")
        if self.assistant.accounts.get(name) is None:  # removed since logging in
            raise AccountError(f"the account {name} no longer exists; ask whoever runs this server")
        return self.assistant.as_user(name)

    def before_login(self) -> Assistant:
        """What the page is built from: with accounts, the shared library alone."""
        return self.assistant.shared_only() if self.accounts_on else self.assistant


def _not_added(error: Exception, failed: str) -> tuple[Any, ...]:
    """What the add-papers section shows when an upload, an add by ID or a Zotero sync fails:
    an error that says what to do as it is; any other after ``failed``, logged with its
    traceback (call it inside the ``except``). Status and source lists stay as they are."""
    if isinstance(error, (ServiceError, StoreError, EmbeddingError, ValueError)):
        message = html.escape(str(error))
    else:
        log.exception(failed)
        message = f"{failed}: {html.escape(str(error))}"
    return f"<p>⚠ {message}</p>", gr.skip(), gr.skip(), gr.skip()


def _discard(files: list[str]) -> None:
    """Delete uploaded files once read: no copy of a user's papers outlives their indexing."""
    for name in files:
        Path(name).unlink(missing_ok=True)


class Handlers:
    """The page's event handlers (`build` wires them): each request works on its user's view of
    the index (`Viewer`), and answers wait for the model in one line (`WaitingLine`)."""

    def __init__(self, viewer: Viewer, line: WaitingLine) -> None:
        self.viewer = viewer
        self.line = line
        self.uploads = Allowance(viewer.assistant.settings.app_uploads_per_hour)

    def respond(
        self,
        text: str,
        chat: Chat | None,
        k: float | None = None,
        source: str = ALL_SOURCES,
        year_min: str | None = None,
        year_max: str | None = None,
        request: gr.Request = None,
    ) -> Iterator[tuple[str, list[Turn], Any, Chat | None]]:
        try:
            view = self.viewer(request)
        except AccountError as error:
            yield "", [{"role": "assistant", "content": f"⚠ {html.escape(str(error))}"}], gr.skip(), None
            return
        if chat is None or chat.assistant.settings.user != view.settings.user:
            chat = view.chat()
        turn = len(chat.history) + 1
        shown = _history(chat) + [
            {"role": "user", "content": html.escape(text)},
            {"role": "assistant", "content": ""},
        ]
        streamed, table = "", ""
        # a place in the model's line from now; its turn is waited for once its evidence is
        # shown (a follow-up's is previewed before the model rewrites it: `Retrieved.preview`)
        ticket = self.line.join(request.session_hash if request and request.session_hash else str(id(chat)))

        def wait_turn() -> Generator[Any, None, bool]:
            """Until the ticket's turn: its place when it changes, else (every ``WAITING_UPDATE_S``)
            an update that changes nothing, which costs the server little and lets Gradio notice
            a reader who left; returns whether it waited."""
            said = None
            while (place := self.line.wait(ticket, WAITING_UPDATE_S)) is not None:
                if place.line() == said:
                    yield gr.skip(), gr.skip(), gr.skip(), gr.skip()
                    continue
                said = place.line()
                shown[-1]["content"] = table + f'<em class="reading waiting">Waiting for the model: {said}.</em>'
                yield "", shown, gr.skip(), chat
            return said is not None

        try:
            for item in chat.ask_events(text, preview=True, k=int(k) if k else None,
                                        filters=_filters(source, year_min, year_max)):
                if isinstance(item, Retrieved):
                    table = render.findings_html(item.findings, turn)
                    reading = f'<em class="reading">Reading {len(item.hits)} abstracts…</em>'
                    shown[-1]["content"] = table + reading
                    yield "", shown, render.retrieved_html(item.hits), chat
                    if (yield from wait_turn()):
                        shown[-1]["content"] = table + reading
                        yield "", shown, gr.skip(), chat
                elif isinstance(item, Answer):
                    shown[-1]["content"] = render.answer_html(item, turn)
                    yield "", shown, render.sources_html(item), chat
                else:
                    streamed += item
                    shown[-1]["content"] = table + render.streaming_html(streamed)
                    yield "", shown, gr.skip(), chat
        except Replaced as error:
            shown[-1]["content"] = table + f"<em>{html.escape(str(error).capitalize())}.</em>"
            yield "", shown, gr.skip(), chat
        except (QuestionError, GenerationError, StoreError, EmbeddingError, ValueError) as error:  # say what to do
            shown[-1]["content"] = f"⚠ {html.escape(str(error))}"
            yield "", shown, gr.skip(), chat
        except Exception as error:  # the UI's boundary: a message, never a traceback
            log.exception("answering failed")
            shown[-1]["content"] = f"⚠ Something went wrong while answering: {html.escape(str(error))}"
            yield "", shown, gr.skip(), chat
        finally:
            self.line.leave(ticket)

    def find(
        self,
        text: str,
        k: float = 10,
        source: str = ALL_SOURCES,
        year_min: str | None = None,
        year_max: str | None = None,
        request: gr.Request = None,
    ) -> tuple[str, list[dict[str, Any]]]:
        if not text or not text.strip():
            return "<p><em>Type a query to search the indexed abstracts.</em></p>", []
        try:
            hits = self.viewer(request).search(text, k=int(k), filters=_filters(source, year_min, year_max))
        except (QuestionError, StoreError, EmbeddingError, ValueError) as error:  # they say what to do
            return f"<p>⚠ {html.escape(str(error))}</p>", []
        return render.search_html(hits), [_record(hit) for hit in hits]

    def add_papers(
        self,
        files: list[str] | None,
        shared: bool,
        current: str,
        current_search: str,
        request: gr.Request = None,
        progress: gr.Progress = gr.Progress(),
    ) -> tuple[Any, ...]:
        if not files:
            return "", gr.skip(), gr.skip(), gr.skip()
        try:
            view = self.viewer(request)
            if len(files) > view.settings.app_max_upload_files:
                raise ValueError(f"{len(files)} files at once; upload at most {view.settings.app_max_upload_files} at a time")
            self._take_upload(view, request)
            progress(0, desc="Reading files")
            report = view.ingest(
                files, on_progress=lambda done: progress(done.fraction, desc=f"Indexing: {done.line()}"),
                library="shared" if shared else None,
            )
        except Exception as error:  # noqa: BLE001 - the UI's boundary: a message, never a traceback
            return _not_added(error, "The upload could not be indexed")
        finally:
            _discard(files)
        return self._added(view, render.ingest_html(report, files), current, current_search)

    def add_by_id(
        self, text: str, shared: bool, current: str, current_search: str, request: gr.Request = None
    ) -> tuple[Any, ...]:
        """Add the papers named by DOI, arXiv ID or PubMed ID (separated by spaces, commas or lines)."""
        ids = text.replace(",", " ").split()
        if not ids:
            return "", gr.skip(), gr.skip(), gr.skip()
        try:
            view = self.viewer(request)
            self._take_upload(view, request)
            report = view.add(ids, library="shared" if shared else None)
        except Exception as error:  # noqa: BLE001 - the UI's boundary: a message, never a traceback
            return _not_added(error, "The papers could not be added")
        return self._added(view, render.ingest_html(report, ids), current, current_search)

    def sync_zotero(self, current: str, current_search: str, request: gr.Request = None) -> tuple[Any, ...]:
        """Sync the server's Zotero library (its ``zotero_*`` settings) as the operator: admins
        only when accounts are on, since the library is the server's, not the user's."""
        try:
            view = self.viewer(request)
            if view.settings.user and not view.accounts.require(view.settings.user).admin:
                raise AccountError("only admins sync the server's Zotero library")
            report = self.viewer.assistant.zotero_sync()
        except Exception as error:  # noqa: BLE001 - the UI's boundary: a message, never a traceback
            return _not_added(error, "The Zotero sync failed")
        return self._added(view, render.sync_html(report), current, current_search)

    def _take_upload(self, view: Assistant, request: gr.Request | None) -> None:
        """Count one upload against its user's hourly allowance; a `ValueError` saying when to
        come back once it is spent."""
        owner = view.settings.user or (request.session_hash if request else None) or "anyone"
        if (wait := self.uploads.take(owner)) is not None:
            raise ValueError(f"this server takes {self.uploads.most} uploads an hour from each user; "
                             f"try again in {max(1, round(wait / 60))} min")

    @staticmethod
    def _added(view: Assistant, report_html: str, current: str, current_search: str) -> tuple[Any, ...]:
        """The report, the index's new status, and both source lists with the new sources."""
        status_now, choices_now = index_view(view)
        return (
            report_html,
            status_now,
            gr.Dropdown(choices=choices_now, value=current if current in choices_now else ALL_SOURCES),
            gr.Dropdown(choices=choices_now, value=current_search if current_search in choices_now else ALL_SOURCES),
        )

    @staticmethod
    def stopped(shown: list[Turn]) -> list[Turn]:
        """The chat once its answer is stopped: the unverified rest of the last message goes."""
        if not shown or shown[-1].get("role") != "assistant":
            return shown
        content: Any = shown[-1].get("content", "")
        text = content if isinstance(content, str) else "".join(
            part.get("text", "") for part in content if isinstance(part, dict))
        return [*shown[:-1], {"role": "assistant", "content": render.stopped_html(text)}]

    @staticmethod
    def hand_over(text: str, *filters: Any) -> tuple[Any, ...]:
        """Put the search tab's query and filters into the chat, and show the chat."""
        if not text or not text.strip():
            raise gr.Error("Type a query in the search box first.")
        return (text, *filters, gr.Tabs(selected="chat"))

    def on_load(self, request: gr.Request) -> tuple[Any, ...]:
        """The status line and the source filters of this user's view."""
        try:
            status_now, choices_now = index_view(self.viewer(request))
        except AccountError as error:
            return f"⚠ {html.escape(str(error))}", gr.skip(), gr.skip()
        return status_now, gr.Dropdown(choices=choices_now), gr.Dropdown(choices=choices_now)

    def show_examples(self) -> Any:
        """The example questions this index can answer (searched when the page loads)."""
        shown = answerable_examples(self.viewer.before_login())
        return gr.Dataset(samples=[[q] for q in shown], visible=bool(shown))


@dataclass
class _AddSection:
    """The "Add papers" section's controls, and where what they did is reported."""

    to_shared: gr.Checkbox
    upload: gr.File
    ids: gr.Textbox
    add_ids: gr.Button
    zotero: gr.Button
    report: gr.HTML


def _add_section(s: Settings, accounts_on: bool) -> _AddSection:
    """The "Add papers" accordion: files, identifiers, and the server's Zotero library (its button
    shown only when one is configured)."""
    with gr.Accordion("Add papers", open=False):
        to_shared = gr.Checkbox(
            False, label="Add to the shared library (everyone sees it"
            + ("; admins only)" if s.shared_uploads == "admins" else ")"),
            visible=accounts_on, elem_id="to-shared",
        )
        upload = gr.File(
            label="Upload abstracts (" + ", ".join(SUFFIXES) + "; or gzipped, zipped)"
            + (": they go to your private library" if accounts_on else ""),
            file_types=[*SUFFIXES, *COMPRESSED_SUFFIXES],
            file_count="multiple",
            elem_id="upload",
        )
        with gr.Row():
            ids = gr.Textbox(
                label="Or add by DOI, arXiv ID or PubMed ID", scale=4, elem_id="add-ids",
                placeholder="10.1038/nature14539  arXiv:1706.03762  PMID:31452104",
            )
            add_ids = gr.Button("Add", scale=1, elem_id="add-ids-button")
        zotero = gr.Button("Sync Zotero library", elem_id="zotero-sync", visible=bool(s.zotero_library_id or s.zotero_local))
        report = gr.HTML(elem_id="upload-report")
    return _AddSection(to_shared, upload, ids, add_ids, zotero, report)


def _wire_add_section(section: _AddSection, handlers: Handlers, status: Any, source: Any, search_source: Any) -> None:
    """Each way of adding papers reports in the section and renews the status and both source
    lists; they take turns, one at a time (one concurrency group)."""
    outputs = [section.report, status, source, search_source]
    one_at_a_time: dict[str, Any] = {"concurrency_limit": 1, "concurrency_id": "add"}
    section.upload.upload(handlers.add_papers, [section.upload, section.to_shared, source, search_source], outputs,
                          api_name="add_papers", **one_at_a_time)
    gr.on([section.add_ids.click, section.ids.submit], handlers.add_by_id,
          [section.ids, section.to_shared, source, search_source], outputs, api_name="add_by_id", **one_at_a_time)
    section.zotero.click(handlers.sync_zotero, [source, search_source], outputs, api_name="sync_zotero", **one_at_a_time)


def build(assistant: Assistant, line: WaitingLine | None = None) -> gr.Blocks:
    """The app's layout and events; answers wait for the model in ``line`` (a new one by default)."""
    s = assistant.settings
    viewer = Viewer(assistant)
    status_text, choices = index_view(viewer.before_login())
    with gr.Blocks(title="Abstract Assistant") as demo:
        status = gr.Markdown(status_text, elem_id="status")
        conversation = gr.State(None)
        with gr.Tabs(elem_id="tabs") as tabs:
            with gr.Tab("Chat", id="chat", elem_id="chat-tab"):
                with gr.Row():
                    with gr.Column(scale=3):
                        chatbot = gr.Chatbot(
                            height=520, sanitize_html=True, label="Chat", elem_id="chat", buttons=["copy", "copy_all"],
                            layout="panel",
                        )
                        message = gr.Textbox(
                            placeholder="Ask about the indexed abstracts…", label="Question", elem_id="question"
                        )
                        stop = gr.Button("Stop", size="sm", elem_id="stop")
                        examples = gr.Dataset(components=[message], samples=[], label="Example questions",
                                              visible=False, elem_id="examples")
                        with gr.Accordion("Settings", open=False):
                            k = gr.Slider(1, 10, value=s.context.top_k, step=1, label="Number of sources")
                            with gr.Row():
                                source, year_min, year_max = _filter_controls(choices, "chat")
                            gr.Textbox(f"{s.llm_model} ({s.llm_backend})", label="Model", interactive=False)
                            new_chat = gr.Button("New chat")
                        adding = _add_section(s, viewer.accounts_on)
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

        handlers = Handlers(viewer, line or WaitingLine(s.answers_at_once))
        chat_inputs = [message, conversation, k, source, year_min, year_max]
        chat_outputs = [message, chatbot, sources, conversation]
        asked = message.submit(
            handlers.respond, chat_inputs, chat_outputs, api_name="chat", concurrency_limit=s.app_questions_at_once,
            concurrency_id="chat",
        )
        search_inputs = [query, search_k, search_source, search_year_min, search_year_max]
        searching = {"fn": handlers.find, "inputs": search_inputs, "outputs": [results, records],
                     "concurrency_limit": 4, "concurrency_id": "search"}  # one group: searches never wait behind the model
        query.submit(api_name="search", **searching)
        search_button.click(api_name=False, **searching)
        for control in (search_k, search_source, search_year_min, search_year_max):  # a new filter searches again
            control.change(api_name=False, **searching)

        handed = ask_about.click(
            Handlers.hand_over, [query, search_source, search_year_min, search_year_max],
            [message, source, year_min, year_max, tabs], api_name=False,
        ).success(
            handlers.respond, chat_inputs, chat_outputs, api_name=False, concurrency_limit=s.app_questions_at_once,
            concurrency_id="chat",
        )

        # cancelling the question closes its handler: its place in line, or the model's generation, is freed
        stop.click(Handlers.stopped, chatbot, chatbot, cancels=[asked, handed], api_name=False)
        new_chat.click(
            lambda: (None, [], render.sources_html(None)), None, [conversation, chatbot, sources], api_name=False
        )
        _wire_add_section(adding, handlers, status, source, search_source)

        if viewer.accounts_on:
            demo.load(handlers.on_load, None, [status, source, search_source], api_name=False)

        examples.click(lambda sample: sample[0], examples, message, api_name=False)
        demo.load(handlers.show_examples, None, examples, api_name=False)  # searches: not while the page waits
    return demo


def warm_up(assistant: Assistant, line: WaitingLine, stop: threading.Event) -> None:
    """`Assistant.warm_up`, then `Assistant.warm_sentences` while no question is in ``line``
    until ``stop`` is set, in the background from start-up; a failure is only logged (the
    first question reports it)."""
    try:
        assistant.warm_up()
        started = time.perf_counter()
        embedded = assistant.warm_sentences(busy=line.busy, stop=stop.is_set)
        log.info("sentence vectors of %d abstracts computed ahead of questions in %.1f s", embedded,
                 time.perf_counter() - started)
    except Exception as error:  # noqa: BLE001 - any failure surfaces again at the first search
        log.warning("could not load the index ahead of the first question: %s", error)


def finish_warm_up(stop: threading.Event, warming: threading.Thread) -> None:
    """At exit (Ctrl-C): the warm-up ends at its next abstract, and the exit waits for it (at
    most ``WARM_UP_EXIT_S``). A daemon thread left inside onnxruntime while Python finalizes
    aborts the process ("terminate called without an active exception")."""
    stop.set()
    warming.join(timeout=WARM_UP_EXIT_S)


CLIENT_ADDRESS: contextvars.ContextVar[str | None] = contextvars.ContextVar("client_address", default=None)


class ClientAddress:
    """ASGI middleware: each HTTP request's client address in ``CLIENT_ADDRESS``, for the login
    check (`LoginGuard` counts wrong passwords per address; Gradio's login hands it only a name
    and a password). Behind a reverse proxy on this host, uvicorn takes the address from the
    proxy's X-Forwarded-For."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        token = CLIENT_ADDRESS.set((scope.get("client") or (None,))[0])
        try:
            await self.app(scope, receive, send)
        finally:
            CLIENT_ADDRESS.reset(token)


FILE_ROUTE = re.compile(r"^.*?/file[=/](.+)$")  # Gradio's routes serving a file by its path


class PrivateUploads:
    """ASGI middleware: nothing in Gradio's upload folder is served over HTTP, to anyone, at
    any moment. Gradio serves that folder by URL (``/file=<path>``) to every logged-in user,
    and an upload waits there until `Handlers.add_papers` has indexed and deleted it. The app
    itself puts nothing there to be fetched: its exports are made in the page."""

    def __init__(self, app: Any, folder: Path) -> None:
        self.app = app
        self.folder = folder.resolve()

    def private(self, path: str) -> bool:
        """Whether a request path names a file in the upload folder (by Gradio's file route,
        ``file=<path>``, or its older spelling, ``file/<path>``)."""
        named = FILE_ROUTE.match(path)
        return bool(named) and Path(named[1]).resolve().is_relative_to(self.folder)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and self.private(scope.get("path", "")):
            await PlainTextResponse("Uploaded files are not served: they are read into the index, then deleted.",
                                    status_code=403)(scope, receive, send)
            return
        await self.app(scope, receive, send)


def launch(assistant: Assistant, block: bool = True) -> gr.Blocks:
    """Serve the app with the assistant's settings (host, port, share link, login), then load
    its indexes in the background (`warm_up`): the page does not wait for them, and a cold
    disk serves the page before the vector index's gigabytes. ``block``: serve until
    interrupted (else return the running app)."""
    s = assistant.settings
    auth: Any = None
    if s.app_auth_header:
        auth_dependency = _proxy_login(assistant)
    else:
        auth_dependency = None
        if assistant.accounts.enabled():
            auth = LoginGuard(assistant.accounts, address=CLIENT_ADDRESS.get)
        elif s.app_username and s.app_password:
            auth = (s.app_username, s.app_password.get_secret_value())
    theme = gr.themes.Default(font=["ui-sans-serif", "system-ui", "sans-serif"], font_mono=["ui-monospace", "monospace"])
    line = WaitingLine(s.answers_at_once)
    demo = build(assistant, line).queue()
    demo.launch(
        server_name=s.app_host,
        server_port=s.app_port,
        share=s.app_share,
        auth=auth,
        auth_dependency=auth_dependency,
        theme=theme,
        css=render.CSS,
        head=render.SCRIPT,
        max_file_size=s.app_max_upload_mb * gr.FileSize.MB,
        prevent_thread_lock=True,
        max_threads=max(40, s.app_questions_at_once + 8),  # questions waiting for the model hold a thread each
        app_kwargs={"middleware": [Middleware(ClientAddress), Middleware(PrivateUploads, folder=Path(get_upload_folder()))]},
    )
    stop_warm_up = threading.Event()
    warming = threading.Thread(target=warm_up, args=(assistant, line, stop_warm_up), name="warm-up", daemon=True)
    warming.start()
    atexit.register(finish_warm_up, stop_warm_up, warming)
    if block:
        demo.block_thread()
    return demo


def _proxy_login(assistant: Assistant) -> Any:
    """Gradio's ``auth_dependency``: the account a trusted proxy's header names, or None
    (refused) when there is no header or no such account."""
    header = assistant.settings.app_auth_header

    def user(request: Any) -> str | None:
        name = request.headers.get(header)
        return name if name and assistant.accounts.get(name) else None

    return user


def main() -> None:
    """Open the default assistant (ingesting the bundled corpus if the index is empty) and serve."""
    give_back_freed_memory()  # before any thread starts: freed memory goes back to the system
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
