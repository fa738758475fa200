"""A scripted OpenAI-compatible chat server: replies with given text, as a capable model would.

It listens on a free localhost port and speaks enough of the OpenAI API for the real
``openai`` client (``GET /v1/models``, ``POST /v1/chat/completions``, streamed or not,
with usage), so answers go through the real client and the real pipeline.

A script maps a question to a reply template. Source references in the template are
resolved from the prompt the server receives, as a model reading it would write them:
``[@0]`` becomes the number of the prompt's source whose text starts with the script's
first source prefix, ``[@1]`` the second, and ``[@other]`` the first source that is none of
them (a wrong citation). A referenced source missing from the prompt loses its marker (a
model cannot cite what it was not shown); ``missing`` records which were.

    with ScriptedServer() as server:
        server.script(question, "Pangu Ultra uses sandwich normalization [@0].", [prefix])
        Assistant(llm_backend="openai", openai_base_url=server.base_url, ...).ask(question)
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "scripted-capable-model"
_SOURCE_BLOCK = re.compile(r"^\[(\d+)\]\s+(.*)$", re.MULTILINE)
_REFERENCE = re.compile(r"\[@(\d+|other)\]")
_SPACE = re.compile(r"\s+")


def _squash(text: str) -> str:
    return _SPACE.sub(" ", text).strip().lower()


@dataclass
class Script:
    """What to reply to one question: a template and the source prefixes its [@i] refer to."""

    reply: str
    sources: list[str]
    missing: list[int] = field(default_factory=list)


def resolve(template: str, prompt: str, sources: list[str]) -> tuple[str, list[int]]:
    """The reply with each [@i] replaced by the prompt's number for source i (see module doc),
    and the indexes of the referenced sources the prompt does not show."""
    blocks = {int(n): _squash(text) for n, text in _SOURCE_BLOCK.findall(prompt)}
    wanted = [_squash(prefix)[:50] for prefix in sources]
    numbers = {i: next((n for n, text in blocks.items() if prefix in text), None) for i, prefix in enumerate(wanted)}
    other = next((n for n, text in blocks.items() if not any(p in text for p in wanted)), None)
    missing = sorted({int(ref) for ref in _REFERENCE.findall(template) if ref != "other" and numbers[int(ref)] is None})

    def number(match: re.Match[str]) -> str:
        ref = match.group(1)
        found = other if ref == "other" else numbers[int(ref)]
        return f"[{found}]" if found is not None else ""

    text = _REFERENCE.sub(number, template)
    return re.sub(r"\s+([.,;])", r"\1", text), missing


class ScriptedServer:
    """The server, started in a daemon thread on a free port (use as a context manager)."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.scripts: dict[str, Script] = {}
        self.prompts: list[str] = []
        self.default_reply = "NOT IN SOURCES"
        self.stall_s = 0.0  # set: every chat request waits this long before any reply (a stuck server)
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                if self.path.rstrip("/").endswith("/models"):
                    self._json({"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "tests"}]})
                else:
                    self._json({"error": {"message": f"no route {self.path}"}}, status=404)

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length", 0))
                request = json.loads(self.rfile.read(length) or b"{}")
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._json({"error": {"message": f"no route {self.path}"}}, status=404)
                    return
                time.sleep(server.stall_s)
                prompt = "\n".join(str(m.get("content", "")) for m in request.get("messages", []))
                reply = server.reply_to(prompt)
                if request.get("stream"):
                    self._stream(reply, request)
                else:
                    self._json({
                        "id": "scripted", "object": "chat.completion", "created": int(time.time()), "model": MODEL,
                        "choices": [{"index": 0, "message": {"role": "assistant", "content": reply},
                                     "finish_reason": "stop"}],
                        "usage": _usage(prompt, reply),
                    })

            def _json(self, body: dict[str, Any], status: int = 200) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, reply: str, request: dict[str, Any]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                base = {"id": "scripted", "object": "chat.completion.chunk", "created": int(time.time()), "model": MODEL}
                for piece in re.findall(r"\S+\s*|\s+", reply):
                    chunk = {**base, "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                end = {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
                self.wfile.write(f"data: {json.dumps(end)}\n\n".encode())
                if (request.get("stream_options") or {}).get("include_usage"):
                    usage = {**base, "choices": [], "usage": _usage("\n".join(server.prompts[-1:]), reply)}
                    self.wfile.write(f"data: {json.dumps(usage)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

        self._http = ThreadingHTTPServer((host, 0), Handler)
        self._http.daemon_threads = True
        self.base_url = f"http://{host}:{self._http.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)

    def script(self, question: str, reply: str, sources: list[str] | None = None) -> Script:
        """Reply with ``reply`` (a template, see module doc) to prompts that contain ``question``."""
        self.scripts[question] = Script(reply, list(sources or []))
        return self.scripts[question]

    def reply_to(self, prompt: str) -> str:
        """The scripted reply for a prompt: the longest scripted question it contains."""
        self.prompts.append(prompt)
        matches = [q for q in self.scripts if q in prompt]
        if not matches:
            return self.default_reply
        script = self.scripts[max(matches, key=len)]
        text, script.missing = resolve(script.reply, prompt, script.sources)
        return text

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._http.shutdown()
        self._http.server_close()


def _usage(prompt: str, reply: str) -> dict[str, int]:
    prompt_tokens, completion_tokens = len(prompt.split()), len(reply.split())
    return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens}
