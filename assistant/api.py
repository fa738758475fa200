"""The `Assistant`: one configured index with its embedder, and the operations on it, as one
account sees them.

An `Assistant` made with ``user=NAME`` (or turned into one with `as_user`) searches and
answers from the shared library and NAME's private one, and ingests into the private one;
the restriction is applied here and in retrieval, from the account, never from anything a
client sends. Views of one index made with `as_user` share its models, store and lexical index.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import closing
from dataclasses import replace
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from filelock import FileLock

from assistant.accounts import AccountError, Accounts
from assistant.answer import generators, questions
from assistant.answer.pipeline import Event, Parts, condense, final, gated, read_findings, stream_answer
from assistant.index import embedders
from assistant.index.bm25 import Bm25Index
from assistant.index.ingest import ingest as run_ingest
from assistant.index.sentence_vectors import SentenceVectors
from assistant.index.store import ChromaStore
from assistant.remote.papers import Fetched, PaperFetcher
from assistant.remote.zotero import ZoteroLibrary
from assistant.retrieval import HybridRetriever, SearchFilters
from assistant.settings import Settings
from assistant.types import (
    SHARED,
    Answer,
    Finding,
    Hit,
    IngestProgress,
    IngestReport,
    Retrieved,
    SyncReport,
    private_library,
    stored_key,
)

MAX_QUESTION_CHARS = 4000


class QuestionError(ValueError):
    """The question cannot be searched or answered (empty, too long)."""


def check_question(question: str) -> str:
    """Return the stripped question, or raise a `QuestionError` saying what is wrong."""
    if not isinstance(question, str) or not question.strip():
        raise QuestionError("the question is empty; ask something about the indexed abstracts")
    question = question.strip()
    if len(question) > MAX_QUESTION_CHARS:
        raise QuestionError(
            f"the question is {len(question):,} characters long; the limit is "
            f"{MAX_QUESTION_CHARS:,}. Ask a shorter question."
        )
    return question


def _text_and_answer(events: Iterator[Event]) -> Iterator[str | Answer]:
    """An answer stream without its `Retrieved` event: what `ask_stream` has always yielded."""
    return (item for item in events if not isinstance(item, Retrieved))


class _Shared:
    """What every view of one index shares: its loaded parts and the lexical index's bookkeeping."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.parts: dict[str, Any] = {}
        self.lexical_lock = threading.Lock()
        self.lexical_stamp: str | None = None
        self.lexical_checked = float("-inf")
        self.corpus_checked = False

    def part(self, name: str, make: Callable[[], Any]) -> Any:
        """The part of this name, made once for all views."""
        with self.lock:
            if name not in self.parts:
                self.parts[name] = make()
            return self.parts[name]


class Assistant:
    """A question-answering assistant over one index of abstracts.

    Any `Settings` field can be passed as a keyword (``Assistant(data_dir="...")``);
    the rest come from the environment and ``.env``. Models and the store open lazily.
    ``user=NAME`` gives NAME's view (an `AccountError` if there is no such account).
    """

    def __init__(self, settings: Settings | None = None, **overrides: Any) -> None:
        if settings is None:
            self.settings = Settings(**overrides)
        else:
            self.settings = Settings(**{**settings.model_dump(), **overrides}) if overrides else settings
        self.accounts = Accounts(self.settings.data_dir)
        self.libraries = self._libraries(self.settings.user)
        self._shared = _Shared()

    def _libraries(self, user: str | None) -> tuple[str, ...] | None:
        """The libraries this user sees (None: every library, the operator's view)."""
        if user is None:
            return None
        self.accounts.require(user)
        return (SHARED, private_library(user))

    def as_user(self, user: str | None) -> Assistant:
        """This assistant as one account sees it (None: the operator's view), sharing its
        loaded models, store and lexical index."""
        view = copy.copy(self)
        view.libraries = self._libraries(user)
        view.settings = self.settings.model_copy(update={"user": user})
        view.__dict__.pop("retriever", None)
        return view

    def shared_only(self) -> Assistant:
        """A view of the shared library alone (what is safe to show before anyone logs in)."""
        view = self.as_user(None)
        view.libraries = (SHARED,)
        return view

    @cached_property
    def embedder(self) -> embedders.Embedder:
        """The configured embedding model (loaded on first use)."""
        return self._shared.part("embedder", lambda: embedders.create(self.settings))

    @cached_property
    def sentence_vectors(self) -> embedders.Embedder:
        """The embedder of abstracts' sentences as questions read them: each sentence's
        vector computed once and kept (`SentenceVectors`), unless ``sentence_cache_mb`` is 0."""
        size = self.settings.sentence_cache_mb
        return self._shared.part("sentence_vectors", lambda: SentenceVectors(
            self.settings.cache_dir / "sentence-vectors", self.embedder, size) if size else self.embedder)

    @cached_property
    def store(self) -> ChromaStore:
        """The Chroma store, checked against the configured embedder."""
        return self._shared.part("store", lambda: ChromaStore(self.settings, self.embedder.model_id))

    @cached_property
    def generator(self) -> generators.Generator:
        """The configured LLM (loaded on first use; no fallback to another model)."""
        return self._shared.part("generator", lambda: generators.create(self.settings, self.priority))

    @cached_property
    def priority(self) -> generators.Priority:
        """What goes before the model's next token: the evidence of questions (`Priority`)."""
        return self._shared.part("priority", generators.Priority)

    @cached_property
    def bm25(self) -> Bm25Index:
        """The lexical index, saved beside the Chroma data (one per collection)."""
        s = self.settings
        return self._shared.part(
            "bm25",
            lambda: Bm25Index(
                s.data_dir / "bm25" / s.collection, s.bm25_k1, s.bm25_b, s.bm25_title_weight, s.phrase_weight > 0
            ),
        )

    @cached_property
    def retriever(self) -> HybridRetriever:
        """Hybrid dense + BM25 retrieval over what this view sees."""
        return HybridRetriever(self.store, self.embedder, self.bm25, self.settings, self.libraries)

    def refresh_lexical(self, force: bool = False) -> None:
        """Bring BM25 in step when it does not cover exactly the committed abstracts.

        The ledger's generation token tells whether the index changed since the last check
        (here or in another process); only then, and only if the saved BM25 was not built
        at that generation, are the ids listed and compared. Reading it costs a few
        milliseconds, so searches look at most every ``index_check_seconds``; ingest and
        reset (``force``) always do.
        """
        shared = self._shared
        with shared.lexical_lock:
            now = time.monotonic()
            if not force and now - shared.lexical_checked < self.settings.index_check_seconds:
                return
            shared.lexical_checked = now
            stamp = self.store.change_stamp()
            if stamp == shared.lexical_stamp:
                return
            if shared.lexical_stamp is not None:
                self.store.catch_up(stamp)
            if not self.bm25.built_at(stamp):  # the stamp is read first: a later commit is seen next time
                self.bm25.update(self.store.indexed_id_list(), self.store.read_abstracts, stamp)
            shared.lexical_stamp = stamp

    def ingest(
        self,
        paths: Iterable[str | Path] | str | Path,
        progress: bool = False,
        on_progress: Callable[[IngestProgress], None] | None = None,
        library: Literal["private", "shared"] | None = None,
    ) -> IngestReport:
        """Index the abstracts in these files/folders; already indexed ones are skipped.

        ``library``: "private" (the user's own; the default for a user's view) or "shared"
        (the default for the operator's view; for a user, only admins, unless
        ``Settings.shared_uploads`` is "everyone"). A private library holds at most
        ``Settings.library_max_abstracts``. ``progress`` shows a bar (files, records/s, time
        left) on stderr; ``on_progress`` gets the same as an `IngestProgress` after each batch.
        An ingest killed midway, run again with the same paths, resumes at the file it was in.
        """
        if isinstance(paths, str | Path):
            paths = [paths]
        target, limit = self._target(library)
        with self._writing():
            report = run_ingest(
                paths, self.store, self.embedder, self.settings, progress, on_progress, library=target, limit=limit
            )
            self.refresh_lexical(force=True)
        return report

    @cached_property
    def fetcher(self) -> PaperFetcher:
        """Looks papers up at OpenAlex, Crossref, arXiv and PubMed; their records are kept in
        ``data_dir/fetched``."""
        return self._shared.part("fetcher", lambda: PaperFetcher(self.settings, self.settings.data_dir / "fetched"))

    def add(self, ids: Iterable[str] | str, library: Literal["private", "shared"] | None = None) -> IngestReport:
        """Add papers by DOI, arXiv ID or PubMed ID (`remote.papers.parse` lists the forms), their
        records fetched from OpenAlex (Crossref when it has no abstract), arXiv and PubMed.

        Papers the library already holds are counted as duplicates and not fetched; an unknown
        ID, a withdrawn paper or one without an abstract is rejected by name. A service that
        cannot be reached raises `ServiceError` before anything is added. ``library`` as in `ingest`.
        """
        ids = [ids] if isinstance(ids, str) else list(ids)
        return self._add_fetched(lambda known: self.fetcher.by_ids(ids, known), library)

    def add_search(self, where: Literal["arxiv", "pubmed"], query: str, limit: int = 10,
                   library: Literal["private", "shared"] | None = None) -> IngestReport:
        """Add the first ``limit`` papers an arXiv or PubMed search for ``query`` finds, as `add` does."""
        if not query.strip():
            raise ValueError("the search is empty; say what to look for")
        return self._add_fetched(lambda known: self.fetcher.search(where, query, limit, known), library)

    def zotero_sync(self) -> SyncReport:
        """Bring the index in step with the configured Zotero library (``zotero_*`` settings):
        new and changed items are fetched and indexed, deleted and trashed ones taken out. A
        group library goes to the shared library; a user's to this view's private one (the
        shared one for the operator). A `ServiceError` when Zotero cannot be reached."""
        library = ZoteroLibrary(self.settings, self.settings.data_dir / "zotero")
        target: Literal["private", "shared"] = "private" if library.kind == "user" and self.settings.user else "shared"
        name, _ = self._target(target)
        changes = library.changes()
        with self._writing():
            removed = self.store.delete_abstracts([stored_key(i, name) for i in changes.stale])
            if removed and not changes.files:  # else the ingest brings the lexical index in step
                self.refresh_lexical(force=True)
        report = self.ingest(changes.files, library=target) if changes.files else IngestReport()
        library.save(changes)
        return SyncReport(report, changes.fetched, removed, changes.without_abstract)

    def _add_fetched(self, fetch: Callable[[Callable[[list[str]], set[str]]], Fetched],
                     library: Literal["private", "shared"] | None) -> IngestReport:
        """Fetch (told which identity keys the target library or the shared one holds), then
        ingest the fetched files; the fetch's duplicates and rejections join the report."""
        target, _ = self._target(library)
        seen = tuple(dict.fromkeys((target, SHARED)))
        fetched = fetch(lambda keys: self.store.indexed_identity(keys, seen))
        report = self.ingest(fetched.files, library=library) if fetched.files else IngestReport()
        report.duplicates += fetched.known
        report.by_identifier += fetched.known
        for rejected in fetched.rejected:
            report.reject(rejected)
        return report

    def _target(self, library: str | None) -> tuple[str, int | None]:
        """The library an ingest writes to, and its size limit; an `AccountError` if this view
        may not write there."""
        user = self.settings.user
        library = library or ("private" if user else "shared")
        if library not in ("private", "shared"):
            raise ValueError(f"library must be 'private' or 'shared', not {library!r}")
        if library == "private":
            if user is None:
                raise AccountError("a private library belongs to a user: make the Assistant with user=NAME")
            return private_library(user), self.settings.library_max_abstracts
        if user is not None and self.settings.shared_uploads == "admins" and not self.accounts.require(user).admin:
            raise AccountError(
                f"only admins add to the shared library; {user!r} adds to their private one "
                "(or an admin sets ASSISTANT_SHARED_UPLOADS=everyone)"
            )
        return SHARED, None

    def remove_user(self, name: str) -> int:
        """Delete an account and its private library; return how many abstracts that held."""
        self.accounts.require(name)
        with self._writing():
            removed = self.store.delete_library(private_library(name))
            self.refresh_lexical(force=True)
        self.accounts.remove(name)
        return removed

    def _writing(self) -> FileLock:
        """The lock that lets one process at a time write this index: a second ingest waits,
        then skips what the first added, so each report tells the truth. It lives beside the
        index in data_dir (with a Chroma server: one lock per data_dir, not per server)."""
        self.settings.data_dir.mkdir(parents=True, exist_ok=True)
        return FileLock(self.settings.data_dir / f"{self.settings.collection}.write.lock")

    def ensure_corpus(self) -> IngestReport | None:
        """Ingest the bundled corpus if the index is empty and auto_ingest is on
        (checked once per `Assistant`)."""
        if self._shared.corpus_checked:
            return None
        self._shared.corpus_checked = True
        if self.settings.auto_ingest and not self.store.has_abstracts():
            return self.as_user(None).ingest([self.settings.bundled_corpus], library="shared")
        return None

    def search(
        self,
        question: str,
        k: int = 10,
        filters: SearchFilters | Mapping[str, Any] | None = None,
    ) -> list[Hit]:
        """The ``k`` abstracts that best match the question, best first.

        ``filters`` restricts the search, e.g. ``{"source": "papers.jsonl"}`` or
        ``{"year_min": 2020, "year_max": 2023}`` (see `SearchFilters`).
        """
        question = check_question(question)
        if k < 1:
            raise ValueError("k must be at least 1")
        parsed = SearchFilters.parse(filters)
        self.ensure_corpus()
        self.refresh_lexical()
        return self.retriever.search(question, k, parsed)

    def warm_up(self) -> None:
        """Load what a first search waits for: the embedder, the lexical index, and Chroma's
        vector index, which Chroma reads whole at its first query (22-39 s at a million
        abstracts). A server calls it at start, not at its first user's question."""
        self.search("warm up", k=1)

    def warm_sentences(self, busy: Callable[[], bool] = lambda: False, stop: Callable[[], bool] = lambda: False) -> int:
        """Compute the sentence vectors of the index's first ``warm_sentences`` abstracts ahead
        of questions, waiting while ``busy()``, ending once ``stop()`` (`SentenceVectors.warm`);
        returns how many abstracts were embedded (0 when no vectors are kept)."""
        vectors = self.sentence_vectors
        if not isinstance(vectors, SentenceVectors) or not self.settings.warm_sentences:
            return 0
        return vectors.warm(self.store.read_abstracts(), busy, self.settings.warm_sentences, stop)

    def findings(
        self,
        question: str,
        k: int | None = None,
        filters: SearchFilters | Mapping[str, Any] | None = None,
    ) -> list[Finding]:
        """The relevant papers' findings for a question, without the model: each one's result
        and its authors' conclusion, quoted (what `ask_events` shows before the model writes).
        Empty when nothing retrieved is relevant enough to answer from."""
        question = check_question(question)
        hits = self.search(question, k or self.settings.context.top_k, filters)
        if gated(hits, self.retriever.subject_terms(question), self.settings.min_relevance):
            return []
        return read_findings(self.answering(), questions.analyse(question), hits)[1]

    def ask_events(
        self,
        question: str,
        k: int | None = None,
        filters: SearchFilters | Mapping[str, Any] | None = None,
    ) -> Iterator[Event]:
        """Yield the retrieved hits first (`Retrieved`, as soon as search returns), then the
        answer's text as the model writes it, then the verified `Answer`.

        ``k`` abstracts are retrieved (default: ``Settings.context.top_k``), restricted by
        ``filters`` as in `search`.
        """
        return stream_answer(self.answering(), check_question(question), k=k, filters=filters)

    def ask_stream(
        self,
        question: str,
        k: int | None = None,
        filters: SearchFilters | Mapping[str, Any] | None = None,
    ) -> Iterator[str | Answer]:
        """Yield the answer's text as the model writes it, then the verified `Answer`
        (`ask_events` without its first, `Retrieved`, event)."""
        return _text_and_answer(self.ask_events(question, k=k, filters=filters))

    def answering(self) -> Parts:
        """What the answer pipeline uses (the generator loads when it is first needed)."""
        return Parts(self.search, self.embedder, self.sentence_vectors, lambda: self.generator,
                     self.retriever.subject_terms, self.settings, self.priority)

    def ask(
        self,
        question: str,
        k: int | None = None,
        filters: SearchFilters | Mapping[str, Any] | None = None,
    ) -> Answer:
        """Answer a question in a few sentences, each claim citing the abstract that
        supports it, or abstain (``Answer.abstained``) when the abstracts do not answer."""
        return final(self.ask_events(question, k=k, filters=filters))

    def chat(self) -> Chat:
        """A multi-turn conversation over this index."""
        return Chat(self)

    def sources(self) -> dict[str, int]:
        """Abstracts per source file that this view sees, by file name, counted from the
        lexical index once it is in step with the ledger (reading the ledger's records took
        15 s at 100,000 abstracts; this takes 0.1 s at a million)."""
        self.refresh_lexical(force=True)
        mask = None if self.libraries is None else self.bm25.visible(self.libraries)
        return dict(sorted(self.bm25.counts_by_source(mask).items()))

    def stats(self) -> dict[str, Any]:
        """Counts of what this view sees: abstracts, chunks, abstracts per source (the
        chunks of a library view are listed to be counted: seconds on a big index)."""
        by_source = self.sources()
        return {
            "abstracts": sum(by_source.values()),
            "chunks": self.store.chunk_count(self.libraries),
            "by_source": by_source,
            "embedder": self.embedder.model_id,
            "location": (
                f"chroma server {self.settings.chroma_host}:{self.settings.chroma_port}"
                if self.settings.chroma_host
                else str(self.settings.chroma_dir)
            ),
            "collection": self.settings.collection,
        }

    def reset(self) -> None:
        """Delete everything in this index (vectors, abstracts and the BM25 index); a user's
        view deletes only that user's private library."""
        with self._writing():
            if self.settings.user is None:
                self.store.reset()
            else:
                self.store.delete_library(private_library(self.settings.user))
            self.refresh_lexical(force=True)


class Chat:
    """A multi-turn conversation: follow-ups are rewritten into standalone questions
    (using the last ``max_turns`` turns) before retrieval."""

    def __init__(self, assistant: Assistant, max_turns: int = 3) -> None:
        self.assistant = assistant
        self.max_turns = max_turns
        self.history: list[tuple[str, Answer]] = []

    def ask_events(self, question: str, preview: bool = False, **options: Any) -> Iterator[Event]:
        """Like `Assistant.ask_events` (same options), for the next turn of this conversation;
        `Retrieved.question` is the follow-up rewritten as a standalone question. ``preview``:
        a follow-up's evidence comes first without the model (`Retrieved.preview`), for a caller
        whose model may be busy with others (the app); alone, it would be found twice."""
        question = check_question(question)
        standalone = None
        if self.history:
            recent = self.history[-self.max_turns :]
            if preview:
                yield from self._preview(question, recent[-1][0], options)
            standalone = condense(self.assistant.generator, recent, question, 96)
        for item in stream_answer(self.assistant.answering(), question, standalone, **options):
            if isinstance(item, Answer):
                self.history.append((question, item))
            yield item

    def _preview(self, question: str, previous: str, options: dict[str, Any]) -> Iterator[Retrieved]:
        """The follow-up's evidence, found for it read after the previous question: no model."""
        with closing(stream_answer(self.assistant.answering(), question, f"{previous} {question}", **options)) as found:
            yield replace(next(found), preview=True)

    def ask_stream(self, question: str, **options: Any) -> Iterator[str | Answer]:
        """Like `Assistant.ask_stream` (same options), for the next turn of this conversation."""
        return _text_and_answer(self.ask_events(question, **options))

    def ask(self, question: str, **options: Any) -> Answer:
        """The next turn's `Answer`."""
        return final(self.ask_events(question, **options))

    def reset(self) -> None:
        """Forget the conversation."""
        self.history.clear()
