"""Offline by default: environment switches set, and no connection leaves the machine."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

import assistant  # noqa: F401 - importing applies the offline defaults
from assistant import Assistant
from assistant.offline import OFFLINE_DEFAULTS


def test_offline_switches_are_set_and_tiktoken_cache_is_bundled() -> None:
    for key in OFFLINE_DEFAULTS:
        assert key in os.environ
    cache = Path(os.environ["TIKTOKEN_CACHE_DIR"])
    assert cache.is_dir() and any(cache.iterdir())


@pytest.mark.slow
def test_ingest_and_search_make_no_outside_connections(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    attempts: list[object] = []
    real_connect = socket.socket.connect

    def guarded_connect(self: socket.socket, address: object) -> object:
        host = address[0] if isinstance(address, tuple) else str(address)
        if self.family in (socket.AF_INET, socket.AF_INET6) and host not in ("127.0.0.1", "::1", "localhost"):
            attempts.append(address)
            raise OSError("network disabled by test")
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    source = tmp_path / "a.jsonl"
    source.write_text('{"id": "x", "text": "Graph neural networks for molecule property prediction."}\n')
    helper = Assistant(data_dir=tmp_path / "index", auto_ingest=False)
    helper.ingest([source])
    assert helper.search("molecules", k=1)[0].abstract.id == "x"
    assert attempts == []
