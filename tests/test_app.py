"""The chat app in a subprocess on a free port, used through gradio_client."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import assistant  # noqa: F401 - sets HF_HUB_OFFLINE before gradio_client is imported
from app import answer_markdown, sources_html
from assistant import Abstract, Answer, Citation, Hit

from conftest import free_port, wait_until_up

ROOT = Path(__file__).resolve().parent.parent


def test_abstract_text_and_model_output_are_escaped() -> None:
    evil = Abstract(id="x", text="<script>alert(1)</script> <img src=x onerror=alert(2)>", title="<b>T</b>",
                    source="s", url="javascript:alert(3)")
    answer = Answer(text="<img src=x onerror=alert(4)> claim [1]",
                    citations=[Citation(1, evil, evidence=("<script>alert(1)</script>",))],
                    sources=[Hit(evil, 1.0, 1)], unsupported=["<i>x</i> made up"])
    panel, chat = sources_html(answer), answer_markdown(answer)
    for rendered in (panel, chat):
        assert "<script>" not in rendered and "<img" not in rendered and "<i>" not in rendered
    assert "javascript:" not in panel and "&lt;script&gt;" in panel


@pytest.fixture(scope="module")
def app_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    env = {**os.environ, "ASSISTANT_DATA_DIR": str(tmp_path_factory.mktemp("app-index")), "ASSISTANT_APP_PORT": str(port)}
    log = (tmp_path_factory.mktemp("app") / "app.log").open("w")
    process = subprocess.Popen([sys.executable, str(ROOT / "app.py")], env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    wait_until_up(url, process, 300)
    yield url
    process.terminate()
    process.wait(timeout=30)


@pytest.mark.slow
def test_chat_endpoint_answers_with_citations(app_url: str) -> None:
    from gradio_client import Client

    message, chat, panel = Client(app_url, verbose=False).predict(
        "What technique did the Pangu Ultra team introduce to eliminate loss spikes?", api_name="/chat")
    assert message == ""
    reply = chat[-1]["content"]
    reply = reply if isinstance(reply, str) else str(reply)
    assert "[1]" in reply and "sandwich" in reply.lower()
    assert 'id="source-1"' in panel and "Pangu Ultra" in panel
