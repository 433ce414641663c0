"""A scripted stand-in for the Anthropic Messages API on 127.0.0.1, for driving the real Claude
Code binary headless in tests (no network, no credentials), and the server it shares with the
other scripted model APIs (tests/support/responses_server.py, for Codex).

Claude Code (2.1.x, with CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC and friends set) calls only
`POST /v1/messages` (streaming): once per model turn. Each request is recorded; the test's
`director` decides the answer from the requests so far: a text (the session ends) or tool uses
(Claude Code runs them and asks again). Diagnostics from LSP servers reach the model inside
those requests, as `<new-diagnostics>` system messages, which `texts()` makes searchable.

Traffic meant for any other host that reaches the server (a client pointed at it as its HTTP
proxy: a CONNECT, or a request for an absolute URL) is refused and listed in `elsewhere`.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


@dataclass
class Reply:
    """One model turn: text ends the session; tool uses make the agent run them and ask again.
    `delay_s` holds the answer back (the session waits, as for a slow model)."""

    text: str | None = None
    tools: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    delay_s: float = 0.0


def tool(name: str, **arguments: Any) -> Reply:
    return Reply(tools=[(name, arguments)])


def texts(body: dict[str, Any]) -> str:
    """Every text a request carries (messages, tool results, system turns; the Responses API's
    input items and function call outputs), joined."""
    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, dict):
            for key in ("text", "content", "output"):
                if key in value:
                    walk(value[key])

    walk(body.get("messages", body.get("input", [])))
    return "\n".join(found)


# Given every request so far, the latest one last (so the first turn sees a list of one).
Director = Callable[[list[dict[str, Any]]], Reply]


def send_json(handler: BaseHTTPRequestHandler, code: int, payload: dict[str, Any]) -> None:
    data = json.dumps(payload).encode()
    handler.send_response(code)
    handler.send_header("content-type", "application/json")
    handler.send_header("content-length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def start_events(handler: BaseHTTPRequestHandler) -> Callable[[str, dict[str, Any]], None]:
    """Opens a server-sent event stream (closed with the connection); returns its writer."""
    handler.send_response(200)
    handler.send_header("content-type", "text/event-stream")
    handler.send_header("connection", "close")
    handler.end_headers()
    handler.close_connection = True

    def event(name: str, data: dict[str, Any]) -> None:
        handler.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
        handler.wfile.flush()

    return event


class ScriptedServer:
    """A scripted model API on a free port of 127.0.0.1, in a thread; `requests` holds every
    main conversation request body (with its arrival time in `times`), `elsewhere` every request
    meant for another host. Subclasses answer a POST to this server in `answer`."""

    def __init__(self, director: Director) -> None:
        self.director = director
        self.requests: list[dict[str, Any]] = []
        self.times: list[float] = []
        self.elsewhere: list[str] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _refused_elsewhere(self) -> bool:
                if self.command != "CONNECT" and self.path.startswith("/"):
                    return False
                with server.lock:
                    server.elsewhere.append(f"{self.command} {self.path}")
                self.send_response(403)
                self.send_header("content-length", "0")
                self.end_headers()
                self.close_connection = True
                return True

            def do_CONNECT(self) -> None:
                self._refused_elsewhere()

            def do_POST(self) -> None:
                if self._refused_elsewhere():
                    return
                length = int(self.headers.get("content-length") or 0)
                server.answer(self, self.path.split("?")[0], json.loads(self.rfile.read(length) or b"{}"))

            def do_GET(self) -> None:
                if not self._refused_elsewhere():
                    send_json(self, 404, {"type": "error", "error": {"type": "not_found_error"}})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True, name="model-server")

    def answer(self, handler: BaseHTTPRequestHandler, path: str, body: dict[str, Any]) -> None:
        raise NotImplementedError

    def directed(self, body: dict[str, Any]) -> Reply:
        """Records a main conversation request and asks the director for its answer (held back
        by the reply's delay)."""
        with self.lock:
            self.requests.append(body)
            self.times.append(time.monotonic())
            seen = list(self.requests)
        reply = self.director(seen)
        if reply.delay_s:
            time.sleep(reply.delay_s)
        return reply

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class ModelServer(ScriptedServer):
    """The Anthropic Messages API (`POST /v1/messages`, streamed or not)."""

    def answer(self, handler: BaseHTTPRequestHandler, path: str, body: dict[str, Any]) -> None:
        if path != "/v1/messages":
            return send_json(handler, 404, {"type": "error", "error": {"type": "not_found_error"}})
        if not body.get("tools"):  # a side request (titles and the like)
            return self._answer(handler, body, Reply(text="ok"))
        self._answer(handler, body, self.directed(body))

    def _answer(self, handler: BaseHTTPRequestHandler, body: dict[str, Any], reply: Reply) -> None:
        blocks: list[dict[str, Any]] = []
        if reply.text is not None:
            blocks.append({"type": "text", "text": reply.text})
        for name, arguments in reply.tools:
            blocks.append(
                {"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:24]}", "name": name, "input": arguments}
            )
        stop = "tool_use" if reply.tools else "end_turn"
        message_id = f"msg_{uuid.uuid4().hex[:24]}"
        usage = {"input_tokens": 10, "output_tokens": 10}
        if not body.get("stream"):
            return send_json(
                handler,
                200,
                {
                    "id": message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": body.get("model", "scripted"),
                    "content": blocks,
                    "stop_reason": stop,
                    "stop_sequence": None,
                    "usage": usage,
                },
            )
        event = start_events(handler)
        start = {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "scripted"),
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": usage,
        }
        event("message_start", {"type": "message_start", "message": start})
        for index, block in enumerate(blocks):
            if block["type"] == "text":
                opening, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": block["text"]}
            else:
                opening = {**block, "input": {}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            event(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": opening},
            )
            event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
            event("content_block_stop", {"type": "content_block_stop", "index": index})
        event(
            "message_delta",
            {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": usage},
        )
        event("message_stop", {"type": "message_stop"})
