"""A Zotero library, synced incrementally through pyzotero: the desktop's local API (Zotero 7)
or a web library, a user's or a group's.

Each sync asks for the library's version first and stops there when nothing changed. Otherwise
it lists every item's version (one light request) and fetches only the items that are new or
changed since the last sync; items that left the list (deleted or in the trash) leave the
index. What was synced is kept in ``folder``: one JSON record per item with an abstract, and
``state.json`` (each item's version and whether it had an abstract), written only after the
index took the changes, so a sync cut short is simply done again.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
from pyzotero import zotero
from pyzotero.errors import PyZoteroError

from assistant import identifiers
from assistant.remote.http import ServiceError
from assistant.settings import Settings

ITEMS_PER_REQUEST = 50  # the API's most
NOT_PAPERS = {"attachment", "note", "annotation"}
_EXTRA_ID = re.compile(r"^(PMID|arXiv):\s*(\S+)", re.IGNORECASE | re.MULTILINE)


@dataclass
class Changes:
    """One sync's work: the library's new version, the records of new and changed items with an
    abstract, the ids of records to take out first (changed or gone items), the items without
    an abstract (title, identifier or None), how many items were fetched, and the state to
    save once the index holds it (each item's version and whether it had an abstract)."""

    version: int
    files: list[Path] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    without_abstract: list[tuple[str, str | None]] = field(default_factory=list)
    fetched: int = 0
    items: dict[str, dict[str, Any]] = field(default_factory=dict)


def record(item: dict[str, Any], library: str) -> dict[str, Any]:
    """A Zotero item's ``data`` as a record of the generic field names."""
    extra = {kind.lower(): value for kind, value in _EXTRA_ID.findall(item.get("extra") or "")}
    authors = [c.get("name") or ", ".join(p for p in (c.get("lastName"), c.get("firstName")) if p)
               for c in item.get("creators") or [] if c.get("creatorType", "author") == "author"]
    return {
        "id": f"zotero:{library}/{item['key']}", "title": item.get("title"), "abstract": item.get("abstractNote"),
        "authors": [a for a in authors if a], "date": item.get("date"), "doi": item.get("DOI"),
        "pmid": extra.get("pmid"), "journal": item.get("publicationTitle") or None,
        "arxiv_id": identifiers.arxiv_id(item.get("archiveID") or "") or extra.get("arxiv"), "url": item.get("url") or None,
        "publication_type": item.get("itemType"),
    }


def _identifier(item: dict[str, Any]) -> str | None:
    fields = record(item, "")
    return next((f"{label}{value}" for label, value in (("doi:", fields["doi"]), ("arXiv:", fields["arxiv_id"]),
                                                        ("PMID:", fields["pmid"])) if value), None)


class ZoteroLibrary:
    """The configured Zotero library and what was synced of it into ``folder``."""

    def __init__(self, settings: Settings, folder: Path, client: zotero.Zotero | None = None) -> None:
        if settings.zotero_library_id is None and not settings.zotero_local:
            raise ValueError("say which Zotero library to sync: set ASSISTANT_ZOTERO_LIBRARY_ID (and "
                             "ASSISTANT_ZOTERO_API_KEY for a private web library), or ASSISTANT_ZOTERO_LOCAL=true "
                             "for the Zotero desktop app")
        self.kind = settings.zotero_library_type
        library_id = settings.zotero_library_id or "0"
        key = settings.zotero_api_key.get_secret_value() if settings.zotero_api_key else None
        self.client = client or zotero.Zotero(library_id, self.kind, key, local=settings.zotero_local)
        if settings.zotero_url:
            self.client.endpoint = settings.zotero_url.rstrip("/")
        self.name = f"{self.kind}s/{library_id}"
        self.folder = folder / f"{self.kind}s-{library_id}"
        self._state_file = self.folder / "state.json"

    def _state(self) -> dict[str, Any]:
        try:
            return json.loads(self._state_file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {"version": None, "items": {}}

    def _ask(self, call: Any, *args: Any, **kwargs: Any) -> Any:
        """A pyzotero call, its failures as one `ServiceError` that says what to do."""
        try:
            return call(*args, **kwargs)
        except httpx2.TransportError:
            raise ServiceError(f"cannot reach Zotero at {self.client.endpoint}: is Zotero running (for the local API) "
                               "or this machine online? Or set ASSISTANT_ZOTERO_URL") from None
        except PyZoteroError as error:
            fix = ("turn on Zotero's local API (Settings, Advanced: allow other applications on this computer to "
                   "communicate with Zotero)" if self.client.local else "check the library ID and API key")
            raise ServiceError(f"Zotero refused the sync of {self.name} ({type(error).__name__}: "
                               f"{' '.join(str(error).split())[:160]}); {fix}") from None

    def changes(self) -> Changes:
        """What changed since the last sync, with the changed items' records written."""
        state = self._state()
        version = self._ask(self.client.last_modified_version)
        if version == state["version"]:
            return Changes(version, items=state["items"])
        listed: dict[str, int] = self._ask(self.client.item_versions) or {}
        held: dict[str, dict[str, Any]] = state["items"]
        changed = [key for key, v in listed.items() if held.get(key, {}).get("version") != v]
        gone = [key for key in held if key not in listed]
        result = Changes(version, stale=[f"zotero:{self.name}/{key}" for key in changed + gone
                                         if held.get(key, {}).get("abstract")],
                         items={key: value for key, value in held.items() if key in listed})
        self.folder.mkdir(parents=True, exist_ok=True)
        for key in gone:
            (self.folder / f"{key}.json").unlink(missing_ok=True)
        for start in range(0, len(changed), ITEMS_PER_REQUEST):
            batch = changed[start:start + ITEMS_PER_REQUEST]
            for item in self._ask(self.client.items, itemKey=",".join(batch), limit=ITEMS_PER_REQUEST):
                result.fetched += 1
                self._take(item["data"], result)
        return result

    def _take(self, item: dict[str, Any], result: Changes) -> None:
        key = item["key"]
        has_abstract = item.get("itemType") not in NOT_PAPERS and bool((item.get("abstractNote") or "").strip())
        result.items[key] = {"version": item["version"], "abstract": has_abstract}
        path = self.folder / f"{key}.json"
        if has_abstract:
            partial = path.with_name(f".{path.name}.partial")
            partial.write_text(json.dumps(record(item, self.name)), encoding="utf-8")
            os.replace(partial, path)
            result.files.append(path)
        else:
            path.unlink(missing_ok=True)
            if item.get("itemType") not in NOT_PAPERS:
                result.without_abstract.append((item.get("title") or key, _identifier(item)))

    def save(self, changes: Changes) -> None:
        """Record a sync once the index holds its changes."""
        self.folder.mkdir(parents=True, exist_ok=True)
        partial = self._state_file.with_name(".state.json.partial")
        partial.write_text(json.dumps({"version": changes.version, "items": changes.items}), encoding="utf-8")
        os.replace(partial, self._state_file)
