"""The Chroma store: chunk vectors (through llama-index's ChromaVectorStore) and a ledger
of abstracts.

Three collections per index:
- ``<name>``: one record per chunk, vector + text + the abstract's id and filter fields;
- ``<name>_abstracts``: one record per abstract (full text and metadata). Its vector is a
  one-number placeholder (`_placeholders`): nothing searches the ledger, and Chroma reads a
  collection's vectors whole at its first read of any record (the mean chunk vectors that
  ledgers of format 2 keep take 1.9 GB of memory at 900,000 abstracts). The text is a
  metadata field, not a Chroma document: embedded Chroma gives every document a full-text
  index this project never queries (BM25 is bm25s), and that index made the ledger's writes
  2-3x slower and its files 40% larger. Its ``status`` field is the commit marker that makes
  ingest crash-safe: an abstract is written as ``pending`` before its chunks and flipped to
  ``done`` after.
  `recover` deletes whatever a killed ingest left pending, chunks included: at once when this
  data dir wrote it (its file lock means that writer is gone), after `STALE_PENDING_SECONDS`
  when another replica of a shared Chroma server did (it may still be writing).
  The ledger's collection metadata holds a ``generation`` token that every commit,
  recovery and reset renews: other processes compare it to notice that the index changed
  (counting the collections instead took 340 ms at a million abstracts).
- ``<name>_identities``: one record per identity key of an abstract (``doi:…``, ``pmid:…``,
  ``arxiv:…``, suffixed with a private library like `Abstract.key`), naming the abstract. Chroma
  evaluates any ``where`` by scanning the whole collection (deduplicating a batch by DOI took
  10 ms at 10,000 abstracts, 140 ms at 900,000); read by id, it costs the same at any size.
  A record is written with its abstract's pending one and counts only while that abstract is
  done, so a killed ingest's leftovers or a deleted abstract's records match nothing.

Every record names its ``library`` (the shared one, or a user's private one) and is keyed by
`Abstract.key`, so a private copy of a paper never collides with another user's. Readers
restrict chunks and abstracts to the libraries a user may see with `visible`; indexes
written before libraries existed are labelled shared when first opened.

Embedded (``PersistentClient`` under data_dir) by default, or a Chroma server when host
and port are set. Cosine distance is set explicitly (Chroma's default is L2). Embedded Chroma
keeps its vector index in memory and does not see what another process adds: a filtered query
then fails ("Error finding id") and an unfiltered one misses the new vectors. The store reopens
its files when another process's commit is noticed (`catch_up`) or a query fails so.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import inspect
import json
import shutil
import socket
import sqlite3
import threading
import time
import uuid
import zlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import chromadb
import httpx
import numpy as np
from chromadb.api.shared_system_client import SharedSystemClient
from chromadb.config import Settings as ChromaSettings
from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode
from llama_index.vector_stores.chroma import ChromaVectorStore

from assistant.settings import Settings
from assistant.types import SHARED, Abstract, Chunk

PENDING, DONE = "pending", "done"
LEDGER_FORMAT = 3  # 2: the abstract's text is a metadata field (1 kept it as the document); 3: placeholder vectors
MEAN_VECTORS_FORMAT = 2  # a ledger of this format keeps writing mean chunk vectors, of its dimension
READABLE_FORMATS = (MEAN_VECTORS_FORMAT, LEDGER_FORMAT)
LIBRARIES = 1  # ledger metadata flag: every record carries its library
IDENTITIES = 1  # ledger metadata flag: every abstract's identity keys are in the identities collection
_PAGE = 5000
_PLACEHOLDER_SPACE = {"hnsw": {"space": "l2", "max_neighbors": 4}}  # for collections of `_placeholders`
_FIRST = 100  # records read at a time where one that qualifies is expected among the first
IDENTIFIERS = ("doi", "pmid", "arxiv_id")  # ledger fields that identify a paper across exports
STALE_PENDING_SECONDS = 600  # a batch is pending for the seconds its writes take; older: its writer died


class StoreError(RuntimeError):
    """The index cannot be used as configured (wrong embedder, unreachable server, ...)."""


class EmbedderMismatchError(StoreError):
    """The index was built with a different embedding model than the one configured."""


Method = TypeVar("Method", bound=Callable[..., Any])
_DISK_FULL = ("no space left", "disk is full", "disk full", "file too large")
# Chroma could not replay its write log into the vector index's files. A full or read-only
# disk does it; so does a process killed while Chroma wrote those files (seen once at 515k
# abstracts, and reported by other Chroma users): then no rerun helps, the files must be rebuilt.
_VECTOR_FILES = "failed to apply logs"
_WRITE_FAILED = ("disk i/o error", _VECTOR_FILES, "readonly database", "read-only file system")


def _explanation(settings: Settings, error: Exception) -> StoreError | None:
    """A full disk, a failed write or a lost Chroma server as a `StoreError` that says which
    folder or server, and what to do; None for any other error."""
    s = settings
    text = str(error).lower()
    where = f"the Chroma server at {s.chroma_host}:{s.chroma_port}" if s.chroma_host else str(s.chroma_dir)
    undo = "what was committed is kept, and the unfinished batch is rolled back when you run the ingest again"
    if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EFBIG) or any(m in text for m in _DISK_FULL):
        return StoreError(f"the disk holding the index ({where}) is full: free some space; {undo}")
    failed = next((m for m in _WRITE_FAILED if m in text), None)
    if failed:
        rebuild = ("; if not, and this repeats, Chroma's vector files no longer match its write log (a process "
                   "killed while Chroma wrote them leaves this): the abstracts are kept, but the index must be "
                   "built again (`assistant reset`, then ingest your files)") if failed == _VECTOR_FILES else ""
        return StoreError(f"could not write the index at {where} ({failed}): is its disk full or read-only? {undo}{rebuild}")
    if isinstance(error, httpx.TransportError | ConnectionError) and s.chroma_host:
        reason = "connection refused" if "refused" in text else type(error).__name__
        return StoreError(
            f"lost the Chroma server at {s.chroma_host}:{s.chroma_port} ({reason}); is it still running? Start "
            f"it again with `chroma run --path DIR --host {s.chroma_host} --port {s.chroma_port}`: nothing "
            "committed is lost, and an interrupted ingest, run again, adds what is missing"
        )
    return None


def _explained(method: Method) -> Method:
    """This store method, raising what `_explanation` explains as its `StoreError` (a user
    never sees a bare ``[Errno 111]``)."""

    if inspect.isgeneratorfunction(method):
        @functools.wraps(method)
        def generator(store: ChromaStore, *args: Any, **kwargs: Any) -> Iterator[Any]:
            try:
                yield from method(store, *args, **kwargs)
            except Exception as error:
                if (explained := _explanation(store.settings, error)) is None:
                    raise
                raise explained from error

        return generator  # type: ignore[return-value]

    @functools.wraps(method)
    def call(store: ChromaStore, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(store, *args, **kwargs)
        except Exception as error:
            if isinstance(error, StoreError) or (explained := _explanation(store.settings, error)) is None:
                raise
            raise explained from error

    return call  # type: ignore[return-value]


def _client(settings: Settings) -> Any:
    chroma_settings = ChromaSettings(anonymized_telemetry=False)
    if settings.chroma_host:
        try:
            return chromadb.HttpClient(
                host=settings.chroma_host, port=settings.chroma_port, settings=chroma_settings
            )
        except Exception as error:  # chromadb raises several types for "cannot connect"
            raise StoreError(
                f"cannot reach the Chroma server at {settings.chroma_host}:{settings.chroma_port}"
                f" ({error}); start it with `chroma run --path DIR --host "
                f"{settings.chroma_host} --port {settings.chroma_port}` or unset "
                "ASSISTANT_CHROMA_HOST/PORT to use embedded Chroma"
            ) from error
    settings.chroma_dir.mkdir(parents=True, exist_ok=True)
    return chromadb.PersistentClient(path=str(settings.chroma_dir), settings=chroma_settings)


def _abstract_metadata(abstract: Abstract, pending: dict[str, Any]) -> dict[str, Any]:
    """A ledger record's metadata, as written by `begin`: ``pending`` (`ChromaStore._pending`)
    until `commit`."""
    metadata: dict[str, Any] = {
        "text": abstract.text,
        "title": abstract.title,
        "titled": abstract.titled,
        "source": abstract.source,
        "authors": json.dumps(list(abstract.authors)),
        "extra": json.dumps(abstract.extra),
        **pending,
        "library": abstract.library,
    }
    if abstract.key != abstract.id:
        metadata["id"] = abstract.id
    if abstract.url:
        metadata["url"] = abstract.url
    if abstract.year is not None:
        metadata["year"] = abstract.year
    metadata.update({name: value for name in IDENTIFIERS if (value := getattr(abstract, name))})
    return metadata


def _abstract_from(record_id: str, metadata: dict[str, Any]) -> Abstract:
    return Abstract(
        id=metadata.get("id", record_id),
        text=metadata["text"],
        title=metadata["title"],
        titled=bool(metadata["titled"]),
        source=metadata["source"],
        url=metadata.get("url"),
        authors=tuple(json.loads(metadata["authors"])),
        year=metadata.get("year"),
        doi=metadata.get("doi"),
        pmid=metadata.get("pmid"),
        arxiv_id=metadata.get("arxiv_id"),
        extra=json.loads(metadata["extra"]),
        library=metadata.get("library", SHARED),
    )


def _pages(collection: Any, include: list[str], size: int | None = None) -> Iterator[dict[str, Any]]:
    """A whole collection, page by page (of ``size`` records, `_PAGE` by default): one `get`
    with metadata of ~100,000 records exceeds SQLite's limit on query variables."""
    offset = 0
    while True:
        page = collection.get(include=include, limit=size or _PAGE, offset=offset)
        if not page["ids"]:
            return
        yield page
        offset += len(page["ids"])


def _identity_id(key: str, library: str) -> str:
    """An identity record's id: the identity key (`Abstract.identity`), suffixed with a
    private library as `Abstract.key` is."""
    return key if library == SHARED else f"{key}@{library}"


def _identity_records(abstracts: Iterable[Abstract]) -> tuple[list[str], list[dict[str, Any]]]:
    """The identities collection's records for these abstracts: ids and metadata."""
    ids, metadatas = [], []
    for abstract in abstracts:
        for key in abstract.identity:
            ids.append(_identity_id(key, abstract.library))
            metadatas.append({"abstract": abstract.key, "library": abstract.library})
    return ids, metadatas


def _placeholders(ids: list[str]) -> np.ndarray:
    """One-number vectors for records that no query searches (Chroma requires a vector):
    spread by a hash of the id, so that the collection's graph stays well formed."""
    return np.array([[zlib.crc32(i.encode()) / 2**32] for i in ids], dtype=np.float32).reshape(len(ids), 1)


def visible(libraries: Iterable[str]) -> dict[str, Any]:
    """A Chroma ``where`` clause keeping records of these libraries only."""
    return {"library": {"$in": list(libraries)}}


def _abstract_id(chunk_id: str) -> str:
    """The key of the abstract a chunk belongs to: chunk ids are ``<abstract key>#<n>``
    (`chunking.chunk`)."""
    return chunk_id.rsplit("#", 1)[0]


def nearest_per_abstract(vector: np.ndarray, chunk_ids: list[str], vectors: np.ndarray) -> dict[str, tuple[float, str]]:
    """Per abstract, (cosine similarity, chunk id) of its chunk (of these, with these
    ``vectors``) nearest to ``vector``."""
    if not chunk_ids:
        return {}
    vectors = np.asarray(vectors, dtype=np.float64)
    cosines = vectors @ vector / np.clip(np.linalg.norm(vectors, axis=1) * np.linalg.norm(vector), 1e-12, None)
    best: dict[str, tuple[float, str]] = {}
    for chunk_id, cosine in zip(chunk_ids, cosines.tolist(), strict=True):
        abstract_id = _abstract_id(chunk_id)
        if cosine > best.get(abstract_id, (-2.0, ""))[0]:
            best[abstract_id] = (cosine, chunk_id)
    return best


class ChromaStore:
    """Chunk vectors and the abstract ledger of one index."""

    def __init__(self, settings: Settings, embedder_id: str) -> None:
        self.settings = settings
        self.embedder_id = embedder_id
        self.client = _client(settings)
        self._max_batch: int | None = None
        self._written = ""  # the last generation token this store wrote
        self._loader = threading.Lock()  # held by the query that makes Chroma load the vector index
        self._vectors_loaded = False
        self.writer = f"{socket.gethostname()}:{settings.data_dir.resolve()}"  # who writes: one data dir at a time
        self._open()

    def _names(self) -> tuple[str, str, str]:
        """The index's collections: chunks, ledger, identities."""
        base = self.settings.collection
        return base, f"{base}_abstracts", f"{base}_identities"

    def _open(self) -> None:
        name, ledger, identities = self._names()
        try:
            self.chunks = self.client.get_or_create_collection(
                name,
                configuration={"hnsw": {"space": "cosine"}},
                metadata={"embedder": self.embedder_id, "chunking": self._chunking},
                embedding_function=None,
            )
            self.abstracts = self.client.get_or_create_collection(
                ledger, configuration=_PLACEHOLDER_SPACE, metadata=self._ledger_metadata(LEDGER_FORMAT),
                embedding_function=None,
            )
            self.identities = self.client.get_or_create_collection(
                identities, configuration=_PLACEHOLDER_SPACE, embedding_function=None,
            )
        except Exception as error:
            if isinstance(error, StoreError):
                raise
            raise StoreError(f"cannot open the Chroma collection {name!r}: {error}") from error
        built_with = (self.chunks.metadata or {}).get("embedder")
        if built_with != self.embedder_id:
            raise EmbedderMismatchError(
                f"the index in collection {name!r} was built with embedder {built_with!r}, "
                f"but {self.embedder_id!r} is configured; use the same embedding settings (ASSISTANT_EMBED_*), "
                "another collection/data_dir, or `assistant reset` and ingest again"
            )
        chunked_with = (self.chunks.metadata or {}).get("chunking", self._chunking)  # unrecorded before 2026-12-01
        if chunked_with != self._chunking:
            raise StoreError(
                f"the index in collection {name!r} was chunked with {chunked_with} (size/overlap "
                f"in tokens), but {self._chunking} is configured: abstracts chunked both ways "
                "would mix in one index; set ASSISTANT_CHUNK_SIZE/ASSISTANT_CHUNK_OVERLAP back, "
                "use another collection/data_dir, or `assistant reset` and ingest again"
            )
        self.format = (self.abstracts.metadata or {}).get("format")
        if self.format not in READABLE_FORMATS:
            raise StoreError(
                f"the index in collection {name!r} was written by an older version of this "
                "project; run `assistant reset` and ingest again (or use another data_dir)"
            )
        if not (self.abstracts.metadata or {}).get("libraries"):
            self._label_libraries()
        if not (self.abstracts.metadata or {}).get("identities"):
            self._record_identities()
        self.vector_store = ChromaVectorStore(chroma_collection=self.chunks)

    def _label_libraries(self) -> None:
        """Label the records of an index written before libraries existed as shared (what
        they were: everyone saw them), then flag the ledger as labelled."""
        for collection in (self.abstracts, self.chunks):
            for page in _pages(collection, ["metadatas"]):
                unlabelled = [i for i, m in zip(page["ids"], page["metadatas"], strict=True) if "library" not in (m or {})]
                if unlabelled:
                    collection.update(ids=unlabelled, metadatas=[{"library": SHARED}] * len(unlabelled))
        self._renew_generation()

    def _record_identities(self) -> None:
        """Write the identity records of an index written before they existed (read through
        the ledger once), then flag the ledger as having them. Its generation stays: the
        indexed abstracts are the same, so other processes need not catch up."""
        for page in _pages(self.abstracts, ["metadatas"]):
            abstracts = [_abstract_from(i, m) for i, m in zip(page["ids"], page["metadatas"], strict=True)]
            self._write_identities(abstracts)
        self.abstracts.modify(metadata={**(self.abstracts.metadata or {}), "identities": IDENTITIES})

    def _write_identities(self, abstracts: list[Abstract]) -> None:
        ids, metadatas = _identity_records(abstracts)
        vectors = _placeholders(ids)
        for part in self._batches(len(ids)):
            self.identities.upsert(ids=ids[part], metadatas=metadatas[part], embeddings=vectors[part])

    @property
    def _chunking(self) -> str:
        """How this index's abstracts are chunked, as recorded with its vectors."""
        return f"{self.settings.chunk_size}/{self.settings.chunk_overlap}"

    def _ledger_metadata(self, ledger_format: int) -> dict[str, Any]:
        """The ledger collection's metadata, with a new generation token."""
        return {
            "embedder": self.embedder_id, "format": ledger_format, "libraries": LIBRARIES, "identities": IDENTITIES,
            "generation": uuid.uuid4().hex,
        }

    def _renew_generation(self) -> None:
        """Tell other processes that the indexed abstracts changed."""
        metadata = self._ledger_metadata(self.format)
        self.abstracts.modify(metadata=metadata)
        self._written = metadata["generation"]

    def _reopen(self) -> None:
        """Open embedded Chroma's files afresh, with what other processes added since (a new
        client: the cached one's in-memory vector index is stale; stores still holding it keep
        working). Nothing to do with a server, which every client shares."""
        if self.settings.chroma_host:
            return
        SharedSystemClient._identifier_to_system.pop(self.client._identifier, None)
        self.client = _client(self.settings)
        self._open()
        self._vectors_loaded = False

    def catch_up(self, stamp: str) -> None:
        """Reopen when the index's generation ``stamp`` (`change_stamp`) is not this store's
        own last write: another process changed the index."""
        if stamp and stamp != self._written:
            self._reopen()
            self._written = stamp

    # Writing (ingest) -----------------------------------------------------------------

    def _batches(self, count: int) -> Iterator[slice]:
        """Slices of ``count`` items that each fit one Chroma write (its max batch size,
        5,461 records for embedded Chroma): no input can exceed it."""
        if self._max_batch is None:
            self._max_batch = max(1, int(self.client.get_max_batch_size()))
        for start in range(0, count, self._max_batch):
            yield slice(start, start + self._max_batch)

    @_explained
    def begin(self, abstracts: list[Abstract], vectors: np.ndarray) -> None:
        """Record abstracts as pending, with their identity records, before any of their
        chunks is written. ``vectors``, the abstracts' mean chunk vectors, are kept by a
        ledger of format 2 only (it has their dimension); others keep placeholders."""
        keys = [a.key for a in abstracts]
        kept = vectors if self.format == MEAN_VECTORS_FORMAT else _placeholders(keys)
        for part in self._batches(len(abstracts)):
            self.abstracts.upsert(
                ids=keys[part],
                metadatas=[_abstract_metadata(a, self._pending()) for a in abstracts[part]],
                embeddings=kept[part],
            )
        self._write_identities(abstracts)

    @_explained
    def add_chunks(
        self, chunks: list[Chunk], vectors: np.ndarray, by_id: dict[str, Abstract]
    ) -> None:
        """Write chunk vectors through llama-index's ChromaVectorStore (``by_id``: the
        abstracts by key)."""
        nodes = []
        for piece, vector in zip(chunks, vectors, strict=True):
            abstract = by_id[piece.abstract_id]
            metadata: dict[str, Any] = {
                "abstract_id": abstract.id,
                "chunk": piece.index,
                "source": abstract.source,
                "library": abstract.library,
            }
            if abstract.year is not None:
                metadata["year"] = abstract.year
            node = TextNode(id_=piece.id, text=piece.text, metadata=metadata, embedding=vector.tolist())
            node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=abstract.key)
            nodes.append(node)
        for part in self._batches(len(nodes)):
            self.vector_store.add(nodes[part])

    @_explained
    def commit(self, abstracts: list[Abstract]) -> None:
        """Mark abstracts done: from now on they count as indexed. Chroma merges the
        given metadata into the record, so only the status is sent."""
        for part in self._batches(len(abstracts)):
            ids = [a.key for a in abstracts[part]]
            self.abstracts.update(ids=ids, metadatas=[{"status": DONE}] * len(ids))
        self._renew_generation()

    def _pending(self) -> dict[str, Any]:
        """The status of a record being written: pending, by this data dir's writer, since now."""
        return {"status": PENDING, "writer": self.writer, "since": int(time.time())}

    @_explained
    def recover(self) -> int:
        """Delete what a killed ingest left behind (pending abstracts and their chunks): this
        data dir's at once, another replica's once stale (`STALE_PENDING_SECONDS`)."""
        found = self.abstracts.get(where={"status": PENDING}, include=["metadatas"])
        stale_before = time.time() - STALE_PENDING_SECONDS
        pending = [
            key for key, metadata in zip(found["ids"], found["metadatas"], strict=True)
            if metadata.get("writer", self.writer) == self.writer or metadata.get("since", 0) < stale_before
        ]
        for start in range(0, len(pending), _PAGE):
            ids = pending[start : start + _PAGE]
            self.chunks.delete(where={"document_id": {"$in": ids}})
            self.abstracts.delete(ids=ids)
        if pending:
            self._renew_generation()
        return len(pending)

    @_explained
    def reset(self) -> None:
        """Drop the collections and create them empty (embedded: their vector files too)."""
        names = self._names()
        dropped = self._vector_dirs(names)
        for name in names:
            try:
                self.client.delete_collection(name)
            except Exception:  # noqa: BLE001 - absent collection: nothing to drop
                pass
        for folder in dropped:
            shutil.rmtree(folder, ignore_errors=True)
        self._open()

    def _vector_dirs(self, names: Iterable[str]) -> list[Path]:
        """Embedded Chroma's folders of these collections' vector indexes. Chroma 1.5 leaves
        them on disk when it deletes a collection (chroma-core/chroma#5259: 4 GB at a million
        abstracts); they are named by segment id, which only Chroma's own SQLite file maps to
        collections. Empty with a server, or if that file's layout is not the one known."""
        database = self.settings.chroma_dir / "chroma.sqlite3"
        if self.settings.chroma_host or not database.exists():
            return []
        names = list(names)
        query = ("SELECT s.id FROM segments s JOIN collections c ON s.collection = c.id "
                 f"WHERE s.scope = 'VECTOR' AND c.name IN ({', '.join('?' * len(names))})")
        try:
            with contextlib.closing(sqlite3.connect(f"{database.as_uri()}?mode=ro", uri=True)) as connection:
                segments = [row[0] for row in connection.execute(query, names)]
        except sqlite3.Error:
            return []
        return [folder for i in segments if (folder := self.settings.chroma_dir / str(i)).is_dir()]

    # Reading ----------------------------------------------------------------------------
    # Reads by id filter the status in Python: Chroma evaluates a `where` over the whole
    # collection even when ids are given (80 ms instead of 1 ms for 20 ids out of 10,000).

    @_explained
    def indexed_ids(self, ids: Iterable[str]) -> set[str]:
        """Which of these abstract keys (`Abstract.key`) are fully indexed."""
        ids = list(dict.fromkeys(ids))
        found: set[str] = set()
        for start in range(0, len(ids), _PAGE):
            got = self.abstracts.get(ids=ids[start : start + _PAGE], include=["metadatas"])
            found.update(i for i, m in zip(got["ids"], got["metadatas"], strict=True) if m["status"] == DONE)
        return found

    @_explained
    def indexed_identity(self, keys: Iterable[str], libraries: Iterable[str]) -> set[str]:
        """Which of these identity keys (`Abstract.identity`: ``doi:…``, ``pmid:…``,
        ``arxiv:…``) a fully indexed abstract of these libraries already has: two reads by
        id, the identity records then their abstracts' status. Other libraries are not looked
        at: what they hold is not the asker's to know."""
        wanted = {_identity_id(key, library): key for key in dict.fromkeys(keys) for library in dict.fromkeys(libraries)}
        holders: list[tuple[str, str]] = []  # (identity key, abstract key)
        ids = list(wanted)
        for start in range(0, len(ids), _PAGE):
            got = self.identities.get(ids=ids[start : start + _PAGE], include=["metadatas"])
            holders.extend((wanted[i], m["abstract"]) for i, m in zip(got["ids"], got["metadatas"], strict=True))
        done = self.indexed_ids(abstract for _, abstract in holders)
        return {key for key, abstract in holders if abstract in done}

    @_explained
    def indexed_id_list(self) -> list[str]:
        """Keys of all fully indexed abstracts."""
        return self.abstracts.get(where={"status": DONE}, include=[])["ids"]

    @_explained
    def change_stamp(self) -> str:
        """The ledger's generation token, read afresh: it changes whenever indexed abstracts
        are committed, recovered or reset, in this process or another."""
        ledger = self.client.get_collection(self._names()[1], embedding_function=None)
        return str((ledger.metadata or {}).get("generation", ""))

    @_explained
    def count(self) -> int:
        """Number of fully indexed abstracts."""
        return len(self.indexed_id_list())

    @_explained
    def has_abstracts(self) -> bool:
        """Whether any abstract is fully indexed: the ledger read from its start until a done
        record, the first one but while an ingest is under way. Asking Chroma for one done
        record (``where``, ``limit=1``) took 3 s, 43 s with a cold disk, at 900,000 abstracts."""
        pages = _pages(self.abstracts, ["metadatas"], _FIRST)
        return any(m["status"] == DONE for page in pages for m in page["metadatas"])

    @_explained
    def chunk_count(self, libraries: Iterable[str] | None = None) -> int:
        """Number of chunk vectors (of these libraries; None: of all)."""
        if libraries is None:
            return self.chunks.count()
        return len(self.chunks.get(where=visible(libraries), include=[])["ids"])

    def _ledger_pages(self, include: list[str]) -> Iterator[dict[str, Any]]:
        """The whole ledger, page by page."""
        return _pages(self.abstracts, include)

    @_explained
    def library_count(self, library: str) -> int:
        """Number of abstracts (pending ones included) one library holds."""
        return len(self.abstracts.get(where={"library": library}, include=[])["ids"])

    @_explained
    def delete_library(self, library: str) -> int:
        """Delete every abstract and chunk of one library; return how many abstracts. Its
        abstracts are marked pending first, so that a delete cut short is finished by the
        next `recover` and never leaves abstracts without their chunks."""
        keys = self.abstracts.get(where={"library": library}, include=[])["ids"]
        for start in range(0, len(keys), _PAGE):
            part = keys[start : start + _PAGE]
            self.abstracts.update(ids=part, metadatas=[self._pending()] * len(part))
        self.chunks.delete(where={"library": library})
        self.identities.delete(where={"library": library})
        for start in range(0, len(keys), _PAGE):
            self.abstracts.delete(ids=keys[start : start + _PAGE])
        self._renew_generation()
        return len(keys)

    @_explained
    def delete_abstracts(self, keys: list[str]) -> int:
        """Delete these abstracts (by key) and their chunks; return how many the index held.
        They are marked pending, then removed by `recover`, as a killed ingest's are: a delete
        cut short is finished by the next one."""
        held = [k for start in range(0, len(keys), _PAGE)
                for k in self.abstracts.get(ids=keys[start : start + _PAGE], include=[])["ids"]]
        for start in range(0, len(held), _PAGE):
            part = held[start : start + _PAGE]
            self.abstracts.update(ids=part, metadatas=[self._pending()] * len(part))
        self.recover()
        return len(held)

    @_explained
    def read_abstracts(self, ids: list[str] | None = None) -> Iterator[Abstract]:
        """Indexed abstracts (all, or these ids), read a page at a time; pending ones are
        left out. A million abstracts take 3.7 GB: the lexical index is built from this
        stream without holding them."""
        pages = self._ledger_pages(["metadatas"]) if ids is None else (
            self.abstracts.get(ids=ids[start : start + _PAGE], include=["metadatas"])
            for start in range(0, len(ids), _PAGE)
        )
        for got in pages:
            for i, metadata in zip(got["ids"], got["metadatas"], strict=True):
                if metadata["status"] == DONE:
                    yield _abstract_from(i, metadata)

    @_explained
    def get_abstracts(self, ids: list[str]) -> dict[str, Abstract]:
        """Indexed abstracts by key (`Abstract.key`)."""
        return {a.key: a for a in self.read_abstracts(ids)} if ids else {}

    @_explained
    def query_chunks(
        self, vector: np.ndarray, n: int, where: dict[str, Any] | None = None, patience: float | None = None
    ) -> list[tuple[str, str, float]] | None:
        """The ``n`` nearest chunks as (chunk id, abstract id, cosine similarity).

        Queries the collection directly, asking for distances only: fetching the texts
        and llama-index node metadata of every candidate tripled search latency, and the
        abstract id is part of the chunk id. `chunk_texts` fetches the few texts needed.

        Chroma reads the collection's whole vector index at the first query of a client
        (15-40 s at a million abstracts; reads of the ledger meanwhile take milliseconds). One
        query at a time is that loader; while it loads, another waits at most ``patience``
        seconds (None: until it is done) and then returns None: the vector index is not
        ready yet, and the caller should not read this collection either.
        """
        if self._vectors_loaded:
            return self._query(vector, n, where)
        if not self._loader.acquire(timeout=-1 if patience is None else patience):
            return None
        try:
            nearest = self._query(vector, n, where)
            self._vectors_loaded = True
            return nearest
        finally:
            self._loader.release()

    def _query(self, vector: np.ndarray, n: int, where: dict[str, Any] | None) -> list[tuple[str, str, float]]:
        try:
            result = self.chunks.query(query_embeddings=[vector], n_results=n, where=where or None, include=["distances"])
        except chromadb.errors.InternalError as error:
            if "error finding id" not in str(error).lower():
                raise
            self._reopen()  # another process added chunks this client's vector index lacks
            result = self.chunks.query(query_embeddings=[vector], n_results=n, where=where or None, include=["distances"])
        return [
            (chunk_id, _abstract_id(chunk_id), 1.0 - float(distance))
            for chunk_id, distance in zip(result["ids"][0], result["distances"][0], strict=True)
        ]

    @_explained
    def best_chunks(self, vector: np.ndarray, chunk_ids: list[str]) -> dict[str, tuple[float, str]]:
        """Per abstract, (cosine similarity, chunk id) of the one of these chunks nearest to
        ``vector``: the dense score of an abstract that a nearest-chunk query did not reach.
        Read by id: a ``where`` on the abstract id scans every chunk (300 ms at 2.7M chunks)."""
        if not chunk_ids:
            return {}
        got = self.chunks.get(ids=chunk_ids, include=["embeddings"])
        return nearest_per_abstract(vector, got["ids"], np.asarray(got["embeddings"]))

    @_explained
    def chunk_texts(self, ids: list[str]) -> dict[str, str]:
        """Chunk texts by chunk id."""
        if not ids:
            return {}
        got = self.chunks.get(ids=ids, include=["documents"])
        return dict(zip(got["ids"], got["documents"], strict=True))
