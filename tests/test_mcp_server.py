"""The MCP server, driven by the MCP SDK's own client: over stdio (a subprocess, as Claude
Desktop starts it) and over streamable HTTP with per-user tokens; answers come from the real
pipeline through the real `openai` client and a scripted OpenAI-compatible server."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from assistant import Assistant
from assistant.mcp_server import ask_result, search_result, serve
from assistant.types import Abstract, Answer, Citation, Hit
from conftest import free_port, wait_until_up
from scholarly_server import ScholarlyServer, arxiv_entry
from scripted_server import MODEL, ScriptedServer

LATTICE = ("We introduce Sparse Lattice Attention, which restricts each token to a lattice of neighbours and "
           "reduces the cost of attention from quadratic to linear in the sequence length with no loss in perplexity.")
CORALS = ("Coral reef fish populations recover within a median of six years after a marine heatwave where fishing "
          "is restricted, across 40 monitored sites in the Pacific.")
QUESTION = "What does Sparse Lattice Attention reduce the cost of attention to?"


@pytest.fixture(scope="module")
def scripted() -> Iterator[ScriptedServer]:
    with ScriptedServer() as server:
        server.script(QUESTION, "Sparse Lattice Attention reduces the cost of attention from quadratic to linear [@0].",
                      [LATTICE[:60]])
        yield server


@pytest.fixture(scope="module")
def scholarly() -> Iterator[ScholarlyServer]:
    with ScholarlyServer() as server:
        server.arxiv["2402.00002"] = arxiv_entry("2402.00002", "Tidal energy arrays", "Arrays of tidal turbines in "
                                                 "narrow straits yield 30 percent more energy when staggered.", ["Io"], 2024)
        yield server


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory, scripted: ScriptedServer,
            scholarly: ScholarlyServer) -> dict[str, str]:
    """An index holding one shared paper and one private paper of ann's, as ASSISTANT_* settings."""
    data = tmp_path_factory.mktemp("mcp-index")
    papers = tmp_path_factory.mktemp("papers")
    (papers / "shared.jsonl").write_text(json.dumps({"id": "lattice", "title": "Sparse Lattice Attention",
                                                     "abstract": LATTICE, "authors": ["Chen Wei"], "year": 2024,
                                                     "arxiv_id": "2401.00001"}) + "\n")
    (papers / "ann.jsonl").write_text(json.dumps({"id": "corals", "title": "Reef fish after heatwaves",
                                                  "abstract": CORALS, "year": 2021}) + "\n")
    settings = {"data_dir": str(data), "auto_ingest": "false", "llm_backend": "openai", "llm_model": MODEL,
                "openai_base_url": scripted.base_url, **scholarly.settings()}
    operator = Assistant(**settings)
    operator.ingest([papers / "shared.jsonl"])
    for name in ("ann", "bob"):
        operator.accounts.add(name, "a long password")
    operator.as_user("ann").ingest([papers / "ann.jsonl"])
    return settings


def _env(settings: dict[str, str]) -> dict[str, str]:
    return {**os.environ, **{f"ASSISTANT_{k.upper()}": v for k, v in settings.items()}}


def test_results_are_capped_and_say_so() -> None:
    abstract = Abstract(id="a", text="word " * 2000, title="Long", source="x.jsonl")
    capped = search_result([Hit(abstract, 1.0, rank) for rank in range(1, 11)], cap=4000)
    assert capped.truncated and len(capped.model_dump_json()) <= 4000 and capped.hits
    answer = Answer(text="An answer [1].", citations=[Citation(1, abstract, ("word " * 900,))] * 3)
    shortened = ask_result(answer, cap=4000)
    assert shortened.truncated and len(shortened.model_dump_json()) <= 4000
    assert not ask_result(Answer(text="Short [1].", citations=[Citation(1, abstract, ("word",))]), 4000).truncated


def test_http_beyond_this_machine_needs_accounts(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="add an account first"):
        serve(Assistant(data_dir=tmp_path, auto_ingest=False), port=free_port(), host="0.0.0.0")


def test_over_stdio_an_agent_lists_the_tools_and_gets_a_cited_quoted_answer(library: dict[str, str]) -> None:
    async def session() -> tuple[list[str], Any, Any]:
        server = StdioServerParameters(command=sys.executable, args=["-m", "assistant.cli", "mcp"],
                                       env=_env(library), cwd=str(Path(__file__).parent.parent))
        async with Client(server) as client:
            tools = sorted(t.name for t in (await client.list_tools()).tools)
            answer = await client.call_tool("ask", {"question": QUESTION})
            found = await client.call_tool("search", {"question": "lattice attention", "k": 3})
            return tools, answer, found

    tools, answer, found = asyncio.run(session())
    assert tools == ["add", "ask", "libraries", "search"]
    result = answer.structured_content
    assert not result["abstained"] and result["text"].endswith("[1].")
    [citation] = result["citations"]
    assert citation["paper"]["title"] == "Sparse Lattice Attention" and citation["paper"]["arxiv_id"] == "2401.00001"
    assert citation["quotes"] and citation["quotes"][0] in LATTICE
    assert found.structured_content["hits"][0]["paper"]["id"] == "lattice"


def _http_server(settings: dict[str, str], port: int) -> subprocess.Popen:
    process = subprocess.Popen([sys.executable, "-m", "assistant.cli", "mcp", "--http", str(port)], env=_env(settings),
                               cwd=Path(__file__).parent.parent, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until_up(f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp", process, 60)
    except AssertionError:
        process.kill()
        raise
    return process


async def _as(url: str, token: str, tool: str, arguments: dict[str, Any]) -> Any:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            return await client.call_tool(tool, arguments)


def test_over_http_each_token_reaches_its_own_and_the_shared_library_only(library: dict[str, str]) -> None:
    accounts = Assistant(**library).accounts
    ann, bob = accounts.new_token("ann"), accounts.new_token("bob")
    port = free_port()
    process = _http_server(library, port)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        assert httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).status_code == 401
        assert httpx.post(url, json={}, headers={"Authorization": "Bearer aa_forged"}).status_code == 401
        query = {"question": "coral reef fish heatwave recovery", "k": 5}
        ann_sees = {h["paper"]["id"] for h in asyncio.run(_as(url, ann, "search", query)).structured_content["hits"]}
        bob_sees = {h["paper"]["id"] for h in asyncio.run(_as(url, bob, "search", query)).structured_content["hits"]}
        assert "corals" in ann_sees and "corals" not in bob_sees and "lattice" in bob_sees
        libraries = asyncio.run(_as(url, bob, "libraries", {})).structured_content
        assert libraries == {"user": "bob", "libraries": [{"name": "shared", "abstracts": 1},
                                                          {"name": "private", "abstracts": 0}]}
        added = asyncio.run(_as(url, bob, "add", {"ids": ["arXiv:2402.00002", "10.1234/missing"]})).structured_content
        assert added["added"] == 1 and added["rejected"][0]["what"] == "doi:10.1234/missing"
        tidal = {"question": "tidal turbine arrays in straits", "k": 5}
        assert "2402.00002" in {h["paper"]["id"] for h in asyncio.run(_as(url, bob, "search", tidal)).structured_content["hits"]}
        assert "2402.00002" not in {h["paper"]["id"] for h in asyncio.run(_as(url, ann, "search", tidal)).structured_content["hits"]}
        accounts.new_token("ann")  # a new token revokes the old one
        assert httpx.post(url, json={}, headers={"Authorization": f"Bearer {ann}"}).status_code == 401
    finally:
        process.terminate()
        process.wait(timeout=30)
