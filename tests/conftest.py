"""Shared fixtures: real models, real Chroma, temporary data directories."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from assistant import Assistant
from assistant.settings import BUNDLED_CORPUS

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_PARAGRAPHS = 337
SAMPLE_UNIQUE = 330


def free_port() -> int:
    """A TCP port on localhost that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_up(url: str, process: subprocess.Popen, seconds: float, headers: dict[str, str] | None = None) -> None:
    """Poll ``url`` (with these headers) until it answers 200; fail if the server process
    exits or time runs out."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            if httpx.get(url, timeout=2, headers=headers).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        assert process.poll() is None, f"the server for {url} exited"
        assert time.monotonic() < deadline, f"{url} did not answer within {seconds} s"
        time.sleep(0.5)


@pytest.fixture(autouse=True)
def _isolated_environment(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Keep tests away from the user's index and .env: every setting comes from the test."""
    for key in list(os.environ):
        if key.startswith("ASSISTANT_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("ASSISTANT_DATA_DIR", str(tmp_path_factory.mktemp("default-data")))
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))


@pytest.fixture(scope="session")
def sample_index(tmp_path_factory: pytest.TempPathFactory) -> Assistant:
    """The bundled corpus ingested once into embedded Chroma; tests must not modify it."""
    assistant = Assistant(data_dir=tmp_path_factory.mktemp("sample-index"), auto_ingest=False)
    assistant.ingest([BUNDLED_CORPUS])
    return assistant


class ChromaServer:
    """A real `chroma run` server on a fixed localhost port and data folder, which a test may
    stop (even with SIGKILL) and start again on the same port and data."""

    def __init__(self, path: Path) -> None:
        chroma = Path(sys.executable).parent / "chroma"
        assert chroma.exists(), "the chroma command is installed with chromadb"
        self.command = [str(chroma), "run", "--path", str(path), "--host", "127.0.0.1"]
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    def start(self) -> ChromaServer:
        self.process = subprocess.Popen([*self.command, "--port", str(self.port)],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_until_up(f"http://127.0.0.1:{self.port}/api/v2/heartbeat", self.process, 60)
        return self

    def kill(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)
