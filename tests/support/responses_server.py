"""A scripted stand-in for the OpenAI Responses API on 127.0.0.1, for driving the real Codex
binary headless in tests (no network, no credentials): Codex 0.171 reaches it as a custom model
provider (`model_providers.<id>` with `base_url` and `wire_api = "responses"` in
`$CODEX_HOME/config.toml`).

Codex calls `POST <base_url>/responses` (streamed) once per model turn. Its body's `input` holds
the conversation: developer messages first (the skills Codex found are listed in one of them,
inside `<skills_instructions>`), then the user's, then each earlier turn's items (a
`function_call` and its `function_call_output`, whose `output` is the tool's text); `texts()`
(tests/support/model_server.py) makes them searchable. The answer is a stream of events: each
output item in a `response.output_item.done`, then `response.completed`. A `Reply`'s tools
become `function_call` items (Codex 0.171's shell tool is `exec_command`, its argument `cmd`);
its text, an assistant message that ends the session.
"""

from __future__ import annotations

import json
import uuid
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.support.model_server import Reply, ScriptedServer, send_json, start_events, tool


def shell(command: str) -> Reply:
    """A turn that runs `command` through Codex's shell tool (waiting up to 30 s for it)."""
    return tool("exec_command", cmd=command, yield_time_ms=30000)


class ResponsesServer(ScriptedServer):
    """The Responses API (`POST .../responses`, streamed)."""

    def answer(self, handler: BaseHTTPRequestHandler, path: str, body: dict[str, Any]) -> None:
        if not path.endswith("/responses"):
            return send_json(handler, 404, {"error": {"type": "not_found", "message": path}})
        reply = self.directed(body)
        items: list[dict[str, Any]] = [
            {
                "type": "function_call",
                "call_id": f"call_{uuid.uuid4().hex[:24]}",
                "name": name,
                "arguments": json.dumps(arguments),
            }
            for name, arguments in reply.tools
        ]
        if reply.text is not None:
            text = {"type": "output_text", "text": reply.text, "annotations": []}
            items.append({"type": "message", "role": "assistant", "content": [text]})
        response_id = f"resp_{uuid.uuid4().hex[:24]}"
        event = start_events(handler)
        event("response.created", {"type": "response.created", "response": {"id": response_id}})
        for index, item in enumerate(items):
            event(
                "response.output_item.done",
                {"type": "response.output_item.done", "output_index": index, "item": item},
            )
        usage = {"input_tokens": 10, "output_tokens": 10, "total_tokens": 20}
        event(
            "response.completed",
            {"type": "response.completed", "response": {"id": response_id, "usage": usage}},
        )
