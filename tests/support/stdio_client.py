"""A bare JSON-RPC client for `kernelscope serve` over stdio, for tests that need what
pytest-lsp does not give: hostile bytes on the wire, a server killed at a random instant, a
server started inside another command (a private mount namespace).

It reads every message the server sends on a thread, answers the server's own requests with
null (as a minimal editor would), and hands messages out by predicate; a message handed out is
consumed, so a reused request id never matches an old answer."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any


def frame(payload: dict[str, Any]) -> bytes:
    """One JSON-RPC message with its Content-Length header."""
    body = json.dumps(payload).encode()
    return f"Content-Length: {len(body)}\r\n\r\n".encode() + body


class StdioClient:
    def __init__(
        self,
        argv: list[str],
        env: dict[str, str] | None = None,
        log: Path | None = None,
        new_session: bool = False,
    ) -> None:
        self.log = log
        stderr: IO[bytes] | int = log.open("wb") if log is not None else subprocess.DEVNULL
        self.process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=env,
            start_new_session=new_session,
        )
        self.messages: list[dict[str, Any]] = []
        self.arrived = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            if length is None:
                continue
            message = json.loads(stream.read(length))
            if "method" in message and "id" in message:  # a server request: answer it
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            with self.arrived:
                self.messages.append(message)
                self.arrived.notify_all()

    def send_raw(self, body: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def send(self, payload: dict[str, Any]) -> None:
        self.send_raw(json.dumps(payload).encode())

    def wait(self, predicate: Callable[[dict[str, Any]], bool], timeout: float) -> dict[str, Any]:
        """The first message (in arrival order) that satisfies `predicate`, removed from the
        list; AssertionError when none comes in time or the server exits first."""
        deadline = time.monotonic() + timeout
        with self.arrived:
            while True:
                for index, message in enumerate(self.messages):
                    if predicate(message):
                        return self.messages.pop(index)
                left = deadline - time.monotonic()
                if left <= 0 or self.process.poll() is not None:
                    stderr = self.log.read_text(errors="replace")[-3000:] if self.log else ""
                    raise AssertionError(f"no such message; got {self.messages[-5:]}; stderr: {stderr}")
                self.arrived.wait(min(left, 0.5))

    def request(
        self, request_id: object, method: str, params: object, timeout: float = 30.0
    ) -> dict[str, Any]:
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return self.wait(lambda m: m.get("id") == request_id and "method" not in m, timeout)

    def initialize(self, folder: Path, options: dict[str, Any], timeout: float = 60.0) -> dict[str, Any]:
        """initialize with `folder` as the one workspace folder, then initialized."""
        reply = self.request(
            "initialize",
            "initialize",
            {
                "processId": None,
                "rootUri": folder.as_uri(),
                "capabilities": {},
                "workspaceFolders": [{"uri": folder.as_uri(), "name": folder.name}],
                "initializationOptions": {"kernelscope": options},
            },
            timeout,
        )
        self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        return reply
